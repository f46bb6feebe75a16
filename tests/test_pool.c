/* Tests of the pool area (tests/list_pool.h): the blocking pool here, files,
 * DNS, signals and processes in the files included at the end. */

static blitz_runtime *tp_rt_new(tu_flavor f, uint32_t max_threads, uint64_t keep_alive_ns,
                                uint32_t capacity) {
    blitz_config cfg = tu_config(f);
    cfg.max_blocking_threads = max_threads;
    cfg.blocking_keep_alive_ns = keep_alive_ns;
    cfg.blocking_queue_capacity = capacity;
    return tu_rt_config(&cfg);
}

static blitz_pool_stats tp_stats(blitz_runtime *rt) {
    blitz_pool_stats st;
    CHECK_OK(blitz_runtime_pool_stats(rt, &st));
    return st;
}

/* Waits (real time) until the pool has exactly `threads` threads. */
static void tp_wait_threads(blitz_runtime *rt, uint32_t threads, double seconds) {
    TU_WAIT_UNTIL(tp_stats(rt).threads == threads, seconds, 2);
}

/* A job that records where it ran and, with a gate, blocks until the gate
 * opens. */
typedef struct {
    atomic_int ran;
    atomic_int running, max_running;
    atomic_int gate; /* jobs wait while 0 */
    atomic_int on_runtime;
    pthread_t main_thread;
    atomic_int on_main;
} tp_job;

static void tp_job_fn(void *arg) {
    tp_job *j = arg;
    int now = atomic_fetch_add(&j->running, 1) + 1;
    int max = atomic_load(&j->max_running);
    while (now > max && !atomic_compare_exchange_weak(&j->max_running, &max, now)) {
    }
    if (blitz_runtime_current() != NULL)
        atomic_fetch_add(&j->on_runtime, 1);
    if (pthread_equal(pthread_self(), j->main_thread))
        atomic_fetch_add(&j->on_main, 1);
    while (!atomic_load(&j->gate))
        tu_sleep_ms(1);
    atomic_fetch_sub(&j->running, 1);
    atomic_fetch_add(&j->ran, 1);
}

static void tp_job_init(tp_job *j, int gate_open) {
    memset(j, 0, sizeof *j);
    atomic_store(&j->gate, gate_open);
    j->main_thread = pthread_self();
}

BLITZ_TEST(pool_bad_args) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 0, 0, 0);
    blitz_task *h = (blitz_task *)&h;
    CHECK_EQ(blitz_spawn_blocking(NULL, tp_job_fn, NULL, &h), BLITZ_EINVAL);
    CHECK_NULL(h);
    CHECK_EQ(blitz_spawn_blocking(rt, NULL, NULL, &h), BLITZ_EINVAL);
    CHECK_EQ(blitz_spawn_blocking_ex(rt, NULL, &h), BLITZ_EINVAL);
    blitz_blocking_opts o;
    memset(&o, 0, sizeof o);
    o.fn = tp_job_fn;
    CHECK_EQ(blitz_spawn_blocking_ex(rt, &o, &h), BLITZ_EINVAL); /* size 0 */
    o.size = (size_t)BLITZ_MAX_STATE_SIZE + 1;
    CHECK_EQ(blitz_spawn_blocking_ex(rt, &o, &h), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_pool_stats(NULL, NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_pool_stats(rt, NULL), BLITZ_EINVAL);
    blitz_pool_stats st = tp_stats(rt);
    CHECK_EQ(st.max_threads, 512);
    CHECK_EQ(st.threads, 0); /* no thread before the first job */
    CHECK_OK(blitz_runtime_shutdown(rt));
    tp_job j;
    tp_job_init(&j, 1);
    CHECK_EQ(blitz_spawn_blocking(rt, tp_job_fn, &j, &h), BLITZ_ESHUTDOWN);
    CHECK_NULL(h);
    CHECK_OK(blitz_runtime_free(rt));
    blitz_free(NULL);
    return 0;
}

/* Jobs run on pool threads (not the caller's, inside the runtime) and
 * their handles work from plain threads. */
static int pool_runs_jobs(tu_flavor f) {
    blitz_runtime *rt = tp_rt_new(f, 0, 0, 0);
    tp_job j;
    tp_job_init(&j, 1);
    blitz_task *h[16];
    for (int i = 0; i < 16; i++)
        CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &h[i]));
    for (int i = 0; i < 16; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        CHECK_OK(blitz_task_status(h[i]));
        CHECK_OK(blitz_task_release(&h[i]));
    }
    CHECK_EQ(tu_ldi(&j.ran), 16);
    CHECK_EQ(tu_ldi(&j.on_runtime), 16);
    CHECK_EQ(tu_ldi(&j.on_main), 0);
    blitz_pool_stats st = tp_stats(rt);
    CHECK_GE(st.jobs_run, 16);
    CHECK_GE(st.threads_started, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(pool_runs_jobs)

/* The job owns a copy of its state; the handle reads it afterwards and
 * the drop function runs once. */
typedef struct {
    long in, out;
} tp_square;
static atomic_int tp_square_drops;
static void tp_square_fn(void *p) {
    tp_square *s = p;
    s->out = s->in * s->in;
}
static void tp_square_drop(void *p) {
    (void)p;
    atomic_fetch_add(&tp_square_drops, 1);
}

BLITZ_TEST(pool_state_copy) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 0, 0, 0);
    atomic_store(&tp_square_drops, 0);
    tp_square in = {12, 0};
    blitz_blocking_opts o = {tp_square_fn, &in, sizeof in, tp_square_drop};
    blitz_task *h;
    CHECK_OK(blitz_spawn_blocking_ex(rt, &o, &h));
    CHECK_OK(blitz_join_blocking(h));
    tp_square *done = blitz_task_state(h);
    CHECK_NOT_NULL(done);
    CHECK_EQ(done->out, 144);
    CHECK_EQ(in.out, 0); /* the caller's copy is untouched */
    CHECK_EQ(tu_ldi(&tp_square_drops), 0);
    CHECK_OK(blitz_task_release(&h));
    /* The pool thread lets go of the block just after the completion. */
    TU_WAIT_GE(&tp_square_drops, 1, 5.0);
    /* Detached, and the state dropped with the job. */
    CHECK_OK(blitz_spawn_blocking_ex(rt, &o, NULL));
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(tu_ldi(&tp_square_drops), 2);
    return 0;
}

/* Awaiting a blocking job from a task: the worker is free meanwhile. */
typedef struct {
    BLITZ_CORO;
    blitz_task *h;
    tp_square *sq;
    long result;
    int status;
} tp_await_state;

static blitz_poll tp_await_poll(blitz_cx *cx, void *p) {
    tp_await_state *s = p;
    BLITZ_BEGIN(s);
    {
        tp_square in = {s->result, 0};
        blitz_blocking_opts o = {tp_square_fn, &in, sizeof in, NULL};
        s->status = blitz_spawn_blocking_ex(blitz_cx_runtime(cx), &o, &s->h);
        if (s->status != BLITZ_OK)
            BLITZ_RETURN(s);
    }
    BLITZ_AWAIT(s, blitz_join(cx, s->h));
    s->status = blitz_task_status(s->h);
    s->result = ((tp_square *)blitz_task_state(s->h))->out;
    blitz_task_release(&s->h);
    BLITZ_END(s);
}

static int pool_await_in_task(tu_flavor f) {
    blitz_runtime *rt = tp_rt_new(f, 0, 0, 0);
    for (long i = 0; i < 50; i++) {
        tp_await_state s;
        memset(&s, 0, sizeof s);
        s.result = i;
        CHECK_OK(blitz_runtime_run(rt, tp_await_poll, &s, sizeof s));
        CHECK_OK(s.status);
        CHECK_EQ(s.result, i * i);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(pool_await_in_task)

/* The pool grows to as many threads as jobs block at once, never past the
 * cap. */
BLITZ_TEST(pool_grows_to_demand) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 0, 0, 0);
    tp_job j;
    tp_job_init(&j, 0);
    blitz_task *h[8];
    for (int i = 0; i < 8; i++)
        CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &h[i]));
    /* All eight block at once: only eight threads make that possible. */
    TU_WAIT_GE(&j.running, 8, 5.0);
    blitz_pool_stats st = tp_stats(rt);
    CHECK_EQ(st.threads, 8);
    CHECK_EQ(st.idle, 0);
    CHECK_EQ(st.queued, 0);
    atomic_store(&j.gate, 1);
    for (int i = 0; i < 8; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        blitz_task_release(&h[i]);
    }
    TU_WAIT_GE(&j.ran, 8, 5.0);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(pool_respects_cap) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 3, 0, 0);
    tp_job j;
    tp_job_init(&j, 0);
    blitz_task *h[10];
    for (int i = 0; i < 10; i++)
        CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &h[i]));
    TU_WAIT_GE(&j.running, 3, 5.0);
    tu_sleep_ms(20);
    blitz_pool_stats st = tp_stats(rt);
    CHECK_EQ(st.threads, 3);
    CHECK_EQ(st.max_threads, 3);
    CHECK_EQ(st.queued, 7);
    CHECK_EQ(tu_ldi(&j.running), 3);
    atomic_store(&j.gate, 1);
    for (int i = 0; i < 10; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        blitz_task_release(&h[i]);
    }
    CHECK_EQ(tu_ldi(&j.max_running), 3);
    CHECK_EQ(tp_stats(rt).threads_started, 3);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Idle threads exit after the keep-alive; a later job starts a new one;
 * sequential jobs reuse one warm thread. */
BLITZ_TEST(pool_shrinks_after_keep_alive) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 0, 60 * BLITZ_MSEC, 0);
    tp_job j;
    tp_job_init(&j, 0);
    blitz_task *h[4];
    for (int i = 0; i < 4; i++)
        CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &h[i]));
    TU_WAIT_GE(&j.running, 4, 5.0);
    double idle_since = tu_now(); /* no thread can be idle before the gate opens */
    atomic_store(&j.gate, 1);
    for (int i = 0; i < 4; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        blitz_task_release(&h[i]);
    }
    tp_wait_threads(rt, 0, 5.0);
    /* Not before the keep-alive (the threads went idle after idle_since). */
    CHECK_GE(tu_now() - idle_since, 0.060);
    CHECK_EQ(tp_stats(rt).idle, 0);
    /* Back from zero, and one thread serves jobs one after another (each
     * spawned once the thread is idle again). */
    for (int i = 0; i < 20; i++) {
        blitz_task *t;
        CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &t));
        CHECK_OK(blitz_join_blocking(t));
        blitz_task_release(&t);
        while (tp_stats(rt).idle != 1)
            tu_sleep_ms(1);
    }
    blitz_pool_stats st = tp_stats(rt);
    CHECK_EQ(st.threads_started, 5);
    CHECK_EQ(st.threads, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Wake-ups that carry no work (spurious, or unpark tokens) neither make an
 * idle thread run a phantom job nor end its keep-alive early. */
BLITZ_TEST(pool_spurious_wakeups) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 0, 300 * BLITZ_MSEC, 0);
    tp_job j;
    tp_job_init(&j, 1);
    blitz_task *t;
    double start = tu_now(); /* the thread goes idle after this */
    CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &t));
    CHECK_OK(blitz_join_blocking(t));
    blitz_task_release(&t);
    while (tp_stats(rt).idle != 1)
        tu_sleep_ms(1);
    int pokes = 0;
    while (tu_now() - start < 0.15) {
        blitz__mutex_lock(&rt->pool->lock);
        if (rt->pool->idle_head)
            blitz__parker_unpark(&rt->pool->idle_head->parker);
        blitz__mutex_unlock(&rt->pool->lock);
        pokes++;
        tu_sleep_ms(1);
    }
    CHECK_GT(pokes, 10);
    blitz_pool_stats st = tp_stats(rt);
    if (tu_now() - start < 0.25) { /* still inside the keep-alive */
        CHECK_EQ(st.threads, 1);
        CHECK_EQ(st.idle, 1);
    }
    CHECK_EQ(st.jobs_run, 1);
    tp_wait_threads(rt, 0, 5.0);
    CHECK_GE(tu_now() - start, 0.30);
    CHECK_EQ(tp_stats(rt).jobs_run, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Cancelling a queued job completes it at once and it never runs; a
 * running one cannot be stopped and finishes. */
BLITZ_TEST(pool_cancel_before_start) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 1, 0, 0);
    tp_job j;
    tp_job_init(&j, 0);
    blitz_task *first, *second;
    CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &first));
    CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &second));
    TU_WAIT_GE(&j.running, 1, 5.0);
    CHECK_EQ(tp_stats(rt).queued, 1);
    CHECK_OK(blitz_task_cancel(second));
    CHECK_EQ(blitz_task_status(second), BLITZ_ECANCELED);
    CHECK_EQ(tp_stats(rt).queued, 0);
    CHECK_OK(blitz_task_cancel(first)); /* running: too late */
    CHECK_EQ(blitz_task_status(first), BLITZ_EAGAIN);
    atomic_store(&j.gate, 1);
    CHECK_OK(blitz_join_blocking(first));
    CHECK_EQ(blitz_join_blocking(second), BLITZ_ECANCELED);
    tu_sleep_ms(20);
    CHECK_EQ(tu_ldi(&j.ran), 1);
    blitz_task_release(&first);
    blitz_task_release(&second);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A bounded queue pushes back: BLITZ_EFULL from the plain spawn, a wait
 * from the awaitable one, which gets room once a thread takes a job. */
typedef struct {
    BLITZ_CORO;
    blitz_blocking_spawn sp;
    blitz_blocking_opts opts;
    atomic_int *pending_seen;
    int result;
    blitz_task *task;
} tp_room_state;

static blitz_poll tp_room_poll(blitz_cx *cx, void *p) {
    tp_room_state *s = p;
    BLITZ_BEGIN(s);
    for (;;) {
        if (blitz_spawn_blocking_await(cx, &s->sp, &s->opts) == BLITZ_READY)
            break;
        atomic_fetch_add(s->pending_seen, 1);
        return BLITZ_PENDING;
    }
    s->result = s->sp.result;
    s->task = s->sp.task;
    BLITZ_AWAIT(s, blitz_join(cx, s->task));
    BLITZ_END(s);
}

static void tp_job_state_fn(void *state) {
    tp_job_fn(*(tp_job **)state);
}

BLITZ_TEST(pool_bounded_queue) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 1, 0, 2);
    tp_job j;
    tp_job_init(&j, 0);
    blitz_task *h[3];
    for (int i = 0; i < 3; i++)
        CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &h[i]));
    TU_WAIT_GE(&j.running, 1, 5.0);
    blitz_task *extra = NULL;
    CHECK_EQ(blitz_spawn_blocking(rt, tp_job_fn, &j, &extra), BLITZ_EFULL);
    CHECK_NULL(extra);
    blitz_pool_stats st = tp_stats(rt);
    CHECK_EQ(st.queued, 2);
    CHECK_EQ(st.rejected, 1);

    atomic_int pending_seen;
    atomic_store(&pending_seen, 0);
    tp_room_state rs;
    memset(&rs, 0, sizeof rs);
    tp_job *jp = &j;
    rs.opts.fn = tp_job_state_fn;
    rs.opts.state = &jp;
    rs.opts.size = sizeof jp;
    rs.pending_seen = &pending_seen;
    blitz_task *waiter;
    CHECK_OK(blitz_spawn(rt, tp_room_poll, &rs, sizeof rs, &waiter));
    TU_WAIT_GE(&pending_seen, 1, 5.0);
    tu_sleep_ms(10);
    CHECK_EQ(blitz_task_status(waiter), BLITZ_EAGAIN);
    atomic_store(&j.gate, 1);
    CHECK_OK(blitz_join_blocking(waiter));
    tp_room_state *done = blitz_task_state(waiter);
    CHECK_OK(done->result);
    CHECK_NOT_NULL(done->task);
    CHECK_OK(blitz_task_status(done->task));
    blitz_task_release(&done->task);
    blitz_task_release(&waiter);
    for (int i = 0; i < 3; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        blitz_task_release(&h[i]);
    }
    CHECK_EQ(tu_ldi(&j.ran), 4);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A room waiter that gives up leaves no registration behind, and one
 * still waiting at shutdown is told BLITZ_ESHUTDOWN. */
typedef struct {
    BLITZ_CORO;
    blitz_blocking_spawn sp;
    blitz_blocking_opts opts;
    blitz_timer timer;
    int expired, result;
    int64_t wait_ns;
} tp_room_timeout_state;

static blitz_poll tp_room_timeout_poll(blitz_cx *cx, void *p) {
    tp_room_timeout_state *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, s->wait_ns,
                                    blitz_spawn_blocking_await(cx, &s->sp, &s->opts),
                                    blitz_spawn_blocking_cancel, &s->sp));
    s->expired = s->timer.expired;
    s->result = s->sp.result;
    if (!s->expired && s->sp.task)
        blitz_task_release(&s->sp.task);
    BLITZ_END(s);
}

static int tp_room_waiters(blitz_runtime *rt) {
    blitz__mutex_lock(&rt->pool->lock);
    int n = 0;
    for (struct blitz__pool_job *j = rt->pool->space_head; j; j = j->next)
        n++;
    blitz__mutex_unlock(&rt->pool->lock);
    return n;
}

BLITZ_TEST(pool_room_wait_cancel_and_shutdown) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 1, 0, 1);
    tp_job j;
    tp_job_init(&j, 0);
    blitz_task *h[2];
    for (int i = 0; i < 2; i++)
        CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &j, &h[i]));
    TU_WAIT_GE(&j.running, 1, 5.0);
    tp_job *jp = &j;
    tp_room_timeout_state s;
    memset(&s, 0, sizeof s);
    s.opts.fn = tp_job_state_fn;
    s.opts.state = &jp;
    s.opts.size = sizeof jp;
    s.wait_ns = 20 * BLITZ_MSEC;
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, tp_room_timeout_poll, &s, sizeof s, &t));
    CHECK_OK(blitz_join_blocking(t));
    CHECK_EQ(((tp_room_timeout_state *)blitz_task_state(t))->expired, 1);
    blitz_task_release(&t);
    CHECK_EQ(tp_room_waiters(rt), 0);
    /* Now one that is still waiting when the runtime shuts down. */
    s.wait_ns = 60 * BLITZ_SEC;
    CHECK_OK(blitz_spawn(rt, tp_room_timeout_poll, &s, sizeof s, &t));
    while (tp_room_waiters(rt) == 0)
        tu_sleep_ms(1);
    atomic_store(&j.gate, 1); /* lets the running job finish during shutdown */
    CHECK_OK(blitz_runtime_shutdown(rt));
    int st = blitz_task_status(t);
    CHECK(st == BLITZ_ECANCELED || st == BLITZ_OK);
    blitz_task_release(&t);
    for (int i = 0; i < 2; i++)
        blitz_task_release(&h[i]);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Shutdown with work in flight: the running job finishes, queued ones are
 * cancelled without running, their states dropped. */
typedef struct {
    tp_job *j;
    int index;
} tp_inflight;
static atomic_int tp_inflight_drops;
static void tp_inflight_fn(void *p) {
    tp_job_fn(((tp_inflight *)p)->j);
}
static void tp_inflight_drop(void *p) {
    (void)p;
    atomic_fetch_add(&tp_inflight_drops, 1);
}
static void *tp_open_gate_later(void *arg) {
    tu_sleep_ms(50);
    atomic_store(&((tp_job *)arg)->gate, 1);
    return NULL;
}

static int pool_shutdown_in_flight(tu_flavor f) {
    blitz_runtime *rt = tp_rt_new(f, 1, 0, 0);
    atomic_store(&tp_inflight_drops, 0);
    tp_job j;
    tp_job_init(&j, 0);
    blitz_task *h[5];
    for (int i = 0; i < 5; i++) {
        tp_inflight st = {&j, i};
        blitz_blocking_opts o = {tp_inflight_fn, &st, sizeof st, tp_inflight_drop};
        CHECK_OK(blitz_spawn_blocking_ex(rt, &o, &h[i]));
    }
    TU_WAIT_GE(&j.running, 1, 5.0);
    double t0 = tu_now();
    tu_thread opener;
    tu_thread_start(&opener, tp_open_gate_later, &j);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_GE(tu_now() - t0, 0.049); /* it waited for the running job */
    tu_thread_join(&opener);
    CHECK_EQ(tu_ldi(&j.ran), 1);
    CHECK_OK(blitz_task_status(h[0]));
    for (int i = 1; i < 5; i++)
        CHECK_EQ(blitz_task_status(h[i]), BLITZ_ECANCELED);
    blitz_pool_stats st = tp_stats(rt);
    CHECK_EQ(st.threads, 0);
    CHECK_EQ(st.queued, 0);
    for (int i = 0; i < 5; i++)
        blitz_task_release(&h[i]);
    CHECK_EQ(tu_ldi(&tp_inflight_drops), 5);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(pool_shutdown_in_flight)

/* A job that waits for a task of its own runtime gives up when the runtime
 * shuts down (shutdown waits for the job, so the job must not wait for
 * shutdown), and one calling shutdown gets BLITZ_EDEADLK. */
typedef struct {
    blitz_runtime *rt;
    blitz_task *forever;
    atomic_int started;
    int wait_rc, shutdown_rc;
} tp_nested;
static void tp_nested_fn(void *p) {
    tp_nested *n = p;
    n->shutdown_rc = blitz_runtime_shutdown(n->rt);
    atomic_store(&n->started, 1);
    n->wait_rc = blitz_join_blocking(n->forever);
}

static int pool_job_waits_at_shutdown(tu_flavor f) {
    blitz_runtime *rt = tp_rt_new(f, 0, 0, 0);
    tp_nested n;
    memset(&n, 0, sizeof n);
    n.rt = rt;
    CHECK_OK(blitz_spawn(rt, tu_forever_poll, NULL, 1, &n.forever));
    blitz_task *h;
    CHECK_OK(blitz_spawn_blocking(rt, tp_nested_fn, &n, &h));
    TU_WAIT_GE(&n.started, 1, 5.0);
    tu_sleep_ms(10);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_EQ(n.shutdown_rc, BLITZ_EDEADLK);
    CHECK_EQ(n.wait_rc, BLITZ_ESHUTDOWN);
    CHECK_OK(blitz_task_status(h));
    blitz_task_release(&h);
    blitz_task_release(&n.forever);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(pool_job_waits_at_shutdown)

/* Many threads spawning at once into a small pool: every job runs exactly
 * once and the counts add up. */
typedef struct {
    blitz_runtime *rt;
    atomic_long *sum;
    long n;
} tp_hammer;
static void tp_hammer_fn(void *p) {
    atomic_fetch_add((atomic_long *)p, 1);
}
static void *tp_hammer_thread(void *p) {
    tp_hammer *h = p;
    for (long i = 0; i < h->n; i++) {
        blitz_task *t = NULL;
        int detach = i % 3 == 0;
        CHECK_OK(blitz_spawn_blocking(h->rt, tp_hammer_fn, h->sum, detach ? NULL : &t));
        if (i % 7 == 0 && t)
            blitz_task_cancel(t);
        if (t) {
            int rc = blitz_join_blocking(t);
            CHECK(rc == BLITZ_OK || rc == BLITZ_ECANCELED);
            blitz_task_release(&t);
        }
    }
    return NULL;
}

BLITZ_TEST(pool_hammer) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 4, 5 * BLITZ_MSEC, 0);
    atomic_long sum;
    atomic_store(&sum, 0);
    long n = test_scaled(3000);
    tp_hammer h = {rt, &sum, n};
    tu_thread th[4];
    for (int i = 0; i < 4; i++)
        tu_thread_start(&th[i], tp_hammer_thread, &h);
    for (int i = 0; i < 4; i++)
        tu_thread_join(&th[i]);
    CHECK_OK(blitz_runtime_shutdown(rt));
    blitz_pool_stats st = tp_stats(rt);
    /* Cancelled jobs never ran; every other job ran exactly once. */
    CHECK_LE(tu_ldl(&sum), 4 * n);
    CHECK_GE(tu_ldl(&sum), 4 * n - 4 * (n / 7 + 1));
    CHECK_GE((long)st.jobs_run, tu_ldl(&sum)); /* a job taken after its cancel does not run */
    CHECK_LE(st.threads_started, 4 * n);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* With a paused clock, a job in flight keeps the clock from jumping: a
 * timeout of a virtual second around a job of real milliseconds does not
 * fire. */
static void tp_slow_fn(void *p) {
    (void)p;
    tu_sleep_ms(30);
}
typedef struct {
    BLITZ_CORO;
    blitz_task *h;
    blitz_timer timer;
    int expired;
} tp_paused_state;
static blitz_poll tp_paused_poll(blitz_cx *cx, void *p) {
    tp_paused_state *s = p;
    BLITZ_BEGIN(s);
    if (blitz_spawn_blocking(blitz_cx_runtime(cx), tp_slow_fn, NULL, &s->h) != BLITZ_OK)
        BLITZ_RETURN(s);
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, BLITZ_SEC, blitz_join(cx, s->h),
                                    blitz_join_cancel, s->h));
    s->expired = s->timer.expired;
    blitz_task_release(&s->h);
    BLITZ_END(s);
}

static int pool_paused_clock_waits(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    for (int i = 0; i < 3; i++) {
        tp_paused_state s;
        memset(&s, 0, sizeof s);
        uint64_t v0 = blitz_time_now(rt);
        CHECK_OK(blitz_runtime_run(rt, tp_paused_poll, &s, sizeof s));
        CHECK_EQ(s.expired, 0);
        CHECK_LT(blitz_time_now(rt) - v0, BLITZ_SEC);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(pool_paused_clock_waits)

#include "test_fs.c"
#include "test_dns.c"
#include "test_signal.c"
#include "test_process_self.c"
#include "test_fs_ext.c"
#if !defined(_WIN32) /* POSIX children (Windows: test_process_self.c) */
#include "test_process.c"
#endif

/* A blocking job may use the blocking forms: it feeds a bounded channel
 * with back-pressure while a task drains it, and takes an async mutex
 * that a task holds for a while. */
typedef struct {
    blitz_chan *ch;
    blitz_mutex *mutex;
    int sent_rc, lock_rc, n;
} tp_feeder;

static void tp_feeder_fn(void *p) {
    tp_feeder *f = p;
    f->lock_rc = blitz_mutex_lock_blocking(f->mutex);
    if (f->lock_rc == BLITZ_OK)
        blitz_mutex_unlock(f->mutex);
    f->sent_rc = BLITZ_OK;
    for (int i = 0; i < f->n && f->sent_rc == BLITZ_OK; i++)
        f->sent_rc = blitz_chan_send_blocking(f->ch, &i);
    blitz_chan_close(f->ch);
}

typedef struct {
    BLITZ_CORO;
    blitz_chan *ch;
    blitz_mutex *mutex;
    blitz_mutex_lock_op lock;
    blitz_timer nap;
    blitz_chan_op op;
    blitz_task *job;
    int value, got, in_order;
} tp_drain;

static blitz_poll tp_drain_poll(blitz_cx *cx, void *p) {
    tp_drain *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_mutex_lock(cx, &s->lock, s->mutex));
    {
        tp_feeder f = {s->ch, s->mutex, -1, -1, 200};
        blitz_blocking_opts bo = {tp_feeder_fn, &f, sizeof f, NULL};
        CHECK_OK(blitz_spawn_blocking_ex(blitz_cx_runtime(cx), &bo, &s->job));
    }
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->nap, 5 * BLITZ_MSEC));
    blitz_mutex_unlock(s->mutex);
    s->in_order = 1;
    for (;;) {
        BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->op, s->ch, &s->value));
        if (s->op.result != BLITZ_OK)
            break;
        s->in_order &= s->value == s->got;
        s->got++;
    }
    CHECK_EQ(s->op.result, BLITZ_ECLOSED);
    BLITZ_AWAIT(s, blitz_join(cx, s->job));
    {
        tp_feeder *f = blitz_task_state(s->job);
        CHECK_OK(f->lock_rc);
        CHECK_OK(f->sent_rc);
    }
    blitz_task_release(&s->job);
    BLITZ_END(s);
}

static int pool_job_blocking_forms(tu_flavor f) {
    blitz_runtime *rt = tp_rt_new(f, 0, 0, 0);
    blitz_mutex mutex;
    CHECK_OK(blitz_mutex_init(&mutex));
    tp_drain s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_chan_new(&s.ch, sizeof(int), 1));
    s.mutex = &mutex;
    CHECK_OK(blitz_runtime_run(rt, tp_drain_poll, &s, sizeof s));
    CHECK_EQ(s.got, 200);
    CHECK_EQ(s.in_order, 1);
    blitz_chan_sender_release(s.ch);
    blitz_chan_receiver_release(s.ch);
    blitz_mutex_deinit(&mutex);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(pool_job_blocking_forms)
