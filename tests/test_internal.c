/* White-box tests of the scheduler's lock-free parts: the local queue
 * (push, pop, overflow, steal, all racing), the task state word (wake
 * during RUNNING, cancel vs complete), the block allocator, and the parking
 * protocol (lost wake-ups show up as hangs because the park timeout is set
 * far beyond the test's own timeout). */
#include <pthread.h>
#include <sched.h>

/* ---- local queue ---------------------------------------------------------- */

/* Fake tasks for queue tests: only `next` and the identity matter. */
typedef struct {
    blitz__task *tasks;
    unsigned char *seen; /* per task: times consumed */
    long n;
} iq_pool;

static void iq_pool_init(iq_pool *p, long n) {
    p->n = n;
    p->tasks = (blitz__task *)calloc((size_t)n, sizeof(blitz__task));
    p->seen = (unsigned char *)calloc((size_t)n, 1);
    CHECK(p->tasks && p->seen);
}
static void iq_pool_free(iq_pool *p) {
    free(p->tasks);
    free(p->seen);
}
static void iq_consume(iq_pool *p, blitz__task *t) {
    long i = (long)(t - p->tasks);
    CHECK(i >= 0 && i < p->n);
    __atomic_fetch_add(&p->seen[i], 1, __ATOMIC_RELAXED);
}

/* A multi-thread runtime that never starts its workers: its rings and
 * global queue are driven by the test threads directly. */
static blitz_runtime *iq_runtime(uint32_t workers) {
    blitz_runtime *rt;
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = workers;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    return rt;
}

static long iq_drain_global(blitz_runtime *rt, iq_pool *p) {
    long n = 0;
    blitz__task *t = blitz__global_queue_take_all(rt->global);
    while (t) {
        blitz__task *next = t->next;
        iq_consume(p, t);
        n++;
        t = next;
    }
    return n;
}

BLITZ_TEST(local_queue_fifo_and_overflow) {
    blitz_runtime *rt = iq_runtime(2);
    blitz__worker *w = &rt->workers[0];
    iq_pool p;
    long cap = BLITZ_LOCAL_QUEUE_CAPACITY;
    iq_pool_init(&p, cap * 3);
    /* Fill exactly: nothing spills. */
    for (long i = 0; i < cap; i++)
        blitz__local_queue_push(&w->queue, &p.tasks[i], rt, &w->counters);
    CHECK_EQ(blitz__local_queue_len(&w->queue), cap);
    CHECK_EQ(blitz__global_queue_len(rt->global), 0);
    /* One more: half the ring plus the new task move to the global queue. */
    blitz__local_queue_push(&w->queue, &p.tasks[cap], rt, &w->counters);
    CHECK_EQ(blitz__global_queue_len(rt->global), cap / 2 + 1);
    CHECK_EQ(blitz__local_queue_len(&w->queue), cap / 2);
    CHECK_EQ(blitz__counter(&w->counters.overflows), 1);
    /* The global batch holds the oldest half, in order, then the new task. */
    blitz__task *g = blitz__global_queue_take_all(rt->global);
    for (long i = 0; i < cap / 2; i++, g = g->next)
        CHECK_PTR_EQ(g, &p.tasks[i]);
    CHECK_PTR_EQ(g, &p.tasks[cap]);
    CHECK_NULL(g->next);
    /* The ring pops the rest FIFO. */
    for (long i = cap / 2; i < cap; i++)
        CHECK_PTR_EQ(blitz__local_queue_pop(&w->queue), &p.tasks[i]);
    CHECK_NULL(blitz__local_queue_pop(&w->queue));
    /* Wrap the 16-bit positions many times. */
    for (long round = 0; round < 70000 / cap + 2; round++) {
        for (long i = 0; i < cap; i++)
            blitz__local_queue_push(&w->queue, &p.tasks[i], rt, &w->counters);
        for (long i = 0; i < cap; i++)
            CHECK_PTR_EQ(blitz__local_queue_pop(&w->queue), &p.tasks[i]);
    }
    CHECK_EQ(blitz__global_queue_len(rt->global), 0);
    iq_pool_free(&p);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(local_queue_steal_half) {
    blitz_runtime *rt = iq_runtime(2);
    blitz__worker *a = &rt->workers[0], *b = &rt->workers[1];
    iq_pool p;
    iq_pool_init(&p, 8);
    long n = BLITZ_LOCAL_QUEUE_CAPACITY < 8 ? BLITZ_LOCAL_QUEUE_CAPACITY : 8;
    for (long i = 0; i < n; i++)
        blitz__local_queue_push(&a->queue, &p.tasks[i], rt, &a->counters);
    uint32_t stolen = 0;
    blitz__task *t = blitz__local_queue_steal_into(&a->queue, &b->queue, &stolen);
    /* Half, rounded up; the last stolen one is returned, the rest queued. */
    CHECK_EQ(stolen, n - n / 2);
    CHECK_PTR_EQ(t, &p.tasks[stolen - 1]);
    CHECK_EQ(blitz__local_queue_len(&b->queue), stolen - 1);
    CHECK_EQ(blitz__local_queue_len(&a->queue), n / 2);
    for (long i = 0; i < (long)stolen - 1; i++)
        CHECK_PTR_EQ(blitz__local_queue_pop(&b->queue), &p.tasks[i]);
    for (long i = stolen; i < n; i++)
        CHECK_PTR_EQ(blitz__local_queue_pop(&a->queue), &p.tasks[i]);
    /* Nothing to steal from an empty ring. */
    CHECK_NULL(blitz__local_queue_steal_into(&a->queue, &b->queue, &stolen));
    iq_pool_free(&p);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

typedef struct {
    blitz_runtime *rt;
    iq_pool *pool;
    int index;
    int *stop;
    long consumed;
} iq_thread;

/* A stealer: steals from worker 0 into its own ring and consumes. */
static void *iq_stealer(void *arg) {
    iq_thread *th = (iq_thread *)arg;
    blitz__worker *src = &th->rt->workers[0], *me = &th->rt->workers[th->index];
    for (;;) {
        int stop = __atomic_load_n(th->stop, __ATOMIC_ACQUIRE);
        uint32_t stolen;
        blitz__task *t = blitz__local_queue_steal_into(&src->queue, &me->queue, &stolen);
        if (t) {
            iq_consume(th->pool, t);
            __atomic_fetch_add(&th->consumed, 1, __ATOMIC_RELAXED);
        }
        while ((t = blitz__local_queue_pop(&me->queue)) != NULL) {
            iq_consume(th->pool, t);
            __atomic_fetch_add(&th->consumed, 1, __ATOMIC_RELAXED);
        }
        if (stop && !t && blitz__local_queue_len(&src->queue) == 0)
            break;
        if (!stolen)
            sched_yield();
    }
    return NULL;
}

/* The owner pushes (overflowing to the global queue now and then) and pops
 * while two stealers take halves: every task is consumed exactly once. */
BLITZ_TEST(local_queue_steal_pop_overflow_race) {
    blitz_runtime *rt = iq_runtime(3);
    long n = test_scaled(400000);
    iq_pool p;
    iq_pool_init(&p, n);
    int stop = 0;
    iq_thread th[2];
    pthread_t tid[2];
    for (int i = 0; i < 2; i++) {
        th[i].rt = rt;
        th[i].pool = &p;
        th[i].index = i + 1;
        th[i].stop = &stop;
        th[i].consumed = 0;
        CHECK_EQ(pthread_create(&tid[i], NULL, iq_stealer, &th[i]), 0);
    }
    blitz__worker *w = &rt->workers[0];
    long owner = 0, global = 0;
    for (long i = 0; i < n; i++) {
        blitz__local_queue_push(&w->queue, &p.tasks[i], rt, &w->counters);
        if (i % 3 == 0) {
            blitz__task *t = blitz__local_queue_pop(&w->queue);
            if (t) {
                iq_consume(&p, t);
                owner++;
            }
        }
        if (i % 1000 == 0)
            global += iq_drain_global(rt, &p);
        /* Half way, make sure the stealers got a turn, however loaded the
         * machine: the queue is not empty, so one of them steals. */
        while (i == n / 2 && blitz__local_queue_len(&w->queue) > 0 &&
               __atomic_load_n(&th[0].consumed, __ATOMIC_RELAXED) +
                       __atomic_load_n(&th[1].consumed, __ATOMIC_RELAXED) ==
                   0)
            sched_yield();
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    blitz__task *t;
    while ((t = blitz__local_queue_pop(&w->queue)) != NULL) {
        iq_consume(&p, t);
        owner++;
    }
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(tid[i], NULL), 0);
    global += iq_drain_global(rt, &p);
    CHECK_EQ(owner + global + th[0].consumed + th[1].consumed, n);
    for (long i = 0; i < n; i++)
        CHECK_EQ(p.seen[i], 1);
    CHECK_GT(th[0].consumed + th[1].consumed, 0);
    iq_pool_free(&p);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- task state word ------------------------------------------------------- */

BLITZ_TEST(task_state_wake_during_running) {
    blitz__task t;
    memset(&t, 0, sizeof t);
    blitz__u64_store(&t.state, blitz__state_initial(1, 0, 0), BLITZ__RELAXED);
    CHECK_EQ(blitz__state_to_running(&t), BLITZ__RUN_POLL);
    /* A wake while RUNNING only sets NOTIFIED... */
    CHECK_EQ(blitz__state_wake(&t), BLITZ__WAKE_NOTHING);
    CHECK(blitz__u64_load(&t.state, BLITZ__RELAXED) & BLITZ__TASK_NOTIFIED);
    CHECK_EQ(blitz__state_wake(&t), BLITZ__WAKE_NOTHING);
    /* ...and going idle turns it into a reschedule, clearing the bit. */
    CHECK_EQ(blitz__state_to_idle(&t, 0, NULL), 1);
    uint64_t s = blitz__u64_load(&t.state, BLITZ__RELAXED);
    CHECK_EQ(blitz__lifecycle(s), BLITZ__LC_SCHEDULED);
    CHECK(!(s & BLITZ__TASK_NOTIFIED));
    /* Without a wake it goes idle; the next wake schedules it once. */
    CHECK_EQ(blitz__state_to_running(&t), BLITZ__RUN_POLL);
    CHECK_EQ(blitz__state_to_idle(&t, 0, NULL), 0);
    CHECK_EQ(blitz__state_wake(&t), BLITZ__WAKE_SCHEDULE);
    CHECK_EQ(blitz__state_wake(&t), BLITZ__WAKE_NOTHING);
    /* A yield reschedules without a wake. */
    CHECK_EQ(blitz__state_to_running(&t), BLITZ__RUN_POLL);
    CHECK_EQ(blitz__state_to_idle(&t, 1, NULL), 1);
    /* Shielded cancel is deferred until the shield drops. */
    CHECK_EQ(blitz__state_to_running(&t), BLITZ__RUN_POLL);
    CHECK_OK(blitz__state_shield(&t, 1));
    CHECK_EQ(blitz__state_cancel(&t), 0);
    CHECK_EQ(blitz__state_to_idle(&t, 0, NULL), 0);
    CHECK_EQ(blitz__state_wake(&t), BLITZ__WAKE_SCHEDULE);
    CHECK_EQ(blitz__state_to_running(&t), BLITZ__RUN_POLL);
    CHECK_OK(blitz__state_shield(&t, -1));
    CHECK_EQ(blitz__state_shield(&t, -1), BLITZ_ERANGE);
    CHECK_EQ(blitz__state_to_idle(&t, 0, NULL), 1); /* due now: run again to cancel */
    CHECK_EQ(blitz__state_to_running(&t), BLITZ__RUN_CANCEL);
    int dropped;
    uint64_t prev = blitz__state_complete(&t, 1, &dropped);
    CHECK_EQ(dropped, 0); /* a handle exists: the completer keeps its ref */
    CHECK_EQ(blitz__refs(prev), 2);
    s = blitz__u64_load(&t.state, BLITZ__RELAXED);
    CHECK(s & BLITZ__TASK_OUTCOME_CANCELLED);
    CHECK_EQ(blitz__state_wake(&t), BLITZ__WAKE_NOTHING);
    return 0;
}

/* ---- cancel vs complete, through the public API ---------------------------- */

typedef struct {
    int go;
    blitz_waker waker; /* published by the task before `go` */
} cvc_shared;

typedef struct {
    cvc_shared *shared;
    int polled;
} cvc_state;

/* First poll: hands a clone of its waker to the test and waits; completes
 * on the next poll. */
static blitz_poll cvc_poll(blitz_cx *cx, void *p) {
    cvc_state *s = (cvc_state *)p;
    if (s->polled++)
        return BLITZ_READY;
    blitz_waker w = blitz_cx_waker(cx);
    s->shared->waker = blitz_waker_clone(&w);
    __atomic_store_n(&s->shared->go, 1, __ATOMIC_RELEASE);
    return BLITZ_PENDING;
}

static int cvc_drops;
static void cvc_drop(void *p) {
    (void)p;
    __atomic_fetch_add(&cvc_drops, 1, __ATOMIC_RELAXED);
}

typedef struct {
    blitz_task *t;
    cvc_shared *shared;
} cvc_arg;

static void *cvc_canceller(void *arg) {
    cvc_arg *a = (cvc_arg *)arg;
    while (!__atomic_load_n(&a->shared->go, __ATOMIC_ACQUIRE))
        sched_yield();
    blitz_task_cancel(a->t);
    return NULL;
}

/* One thread wakes the task (it would complete) while another cancels it:
 * the outcome is exactly one of the two, the joiner always wakes, the drop
 * function runs once per task and no block is left behind. */
BLITZ_TEST(task_cancel_vs_complete_race) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = 2;
    blitz_runtime *rt;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    long rounds = test_scaled(3000), ok = 0, cancelled = 0;
    cvc_drops = 0;
    for (long r = 0; r < rounds; r++) {
        cvc_shared shared;
        memset(&shared, 0, sizeof shared);
        cvc_state st = {&shared, 0};
        blitz_spawn_opts o;
        memset(&o, 0, sizeof o);
        o.poll = cvc_poll;
        o.state = &st;
        o.size = sizeof st;
        o.drop = cvc_drop;
        blitz_task *t;
        CHECK_OK(blitz_spawn_ex(rt, &o, &t));
        cvc_arg a = {t, &shared};
        pthread_t tid;
        CHECK_EQ(pthread_create(&tid, NULL, cvc_canceller, &a), 0);
        while (!__atomic_load_n(&shared.go, __ATOMIC_ACQUIRE))
            sched_yield();
        blitz_waker_wake(shared.waker);
        int rc = blitz_join_blocking(t);
        CHECK(rc == BLITZ_OK || rc == BLITZ_ECANCELED);
        ok += rc == BLITZ_OK;
        cancelled += rc == BLITZ_ECANCELED;
        CHECK_EQ(pthread_join(tid, NULL), 0);
        CHECK_EQ(blitz_task_status(t), rc);
        CHECK_OK(blitz_task_release(&t));
    }
    CHECK_EQ(ok + cancelled, rounds);
    /* Freed blocks are counted when the last reference goes, which may be a
     * worker dropping the waker just after the join returned. */
    blitz_stats stats;
    for (int i = 0; i < 2000; i++) {
        CHECK_OK(blitz_runtime_stats(rt, &stats));
        if (stats.tasks_alive == 0)
            break;
        usleep(1000);
    }
    CHECK_EQ(stats.tasks_alive, 0);
    CHECK_EQ(__atomic_load_n(&cvc_drops, __ATOMIC_RELAXED), rounds);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- the block allocator ----------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    long double wide; /* needs 16-byte alignment */
} align_state;

static blitz_poll align_poll(blitz_cx *cx, void *p) {
    (void)cx;
    CHECK_EQ((uintptr_t)p % 16, 0);
    ((align_state *)p)->wide = 1.5L;
    return BLITZ_READY;
}

static blitz_poll small_poll(blitz_cx *cx, void *p) {
    (void)cx;
    CHECK_EQ((uintptr_t)p % 8, 0);
    *(uint64_t *)p = 0x5eed;
    return BLITZ_READY;
}

static int drop_count;
static void count_drop(void *p) {
    (void)p;
    __atomic_fetch_add(&drop_count, 1, __ATOMIC_RELAXED);
}

/* Join wakers of eight kinds, each with its own vtable: more than the
 * runtime's table of join waker vtables holds, so the last kinds are
 * stored as heap copies. counts[i]: clones, wakes, drops of kind i. */
#define JW_KINDS 8
static int jw_counts[JW_KINDS][3];
static blitz_waker jw_clone(const void *d);
static void jw_wake(const void *d) {
    ((int *)(uintptr_t)d)[1]++;
}
static void jw_wake_by_ref(const void *d) {
    (void)d;
}
static void jw_drop(const void *d) {
    ((int *)(uintptr_t)d)[2]++;
}
static const blitz_waker_vtable jw_vtables[JW_KINDS] = {
    {jw_wake, jw_wake_by_ref, jw_clone, jw_drop}, {jw_wake, jw_wake_by_ref, jw_clone, jw_drop},
    {jw_wake, jw_wake_by_ref, jw_clone, jw_drop}, {jw_wake, jw_wake_by_ref, jw_clone, jw_drop},
    {jw_wake, jw_wake_by_ref, jw_clone, jw_drop}, {jw_wake, jw_wake_by_ref, jw_clone, jw_drop},
    {jw_wake, jw_wake_by_ref, jw_clone, jw_drop}, {jw_wake, jw_wake_by_ref, jw_clone, jw_drop}};
static blitz_waker jw_clone(const void *d) {
    int *c = (int *)(uintptr_t)d;
    c[0]++;
    blitz_waker w = {d, &jw_vtables[(c - &jw_counts[0][0]) / 3]};
    return w;
}

BLITZ_TEST(task_join_waker_kinds) {
    blitz_runtime *rt;
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = BLITZ_CURRENT_THREAD;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    memset(jw_counts, 0, sizeof jw_counts);
    uint64_t small = 0;
    blitz_task *t;
    /* Not run until joined below: every join finds it pending. */
    CHECK_OK(blitz_spawn(rt, small_poll, &small, sizeof small, &t));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < JW_KINDS; i++) {
            blitz_cx cx;
            memset(&cx, 0, sizeof cx);
            cx.waker.data = &jw_counts[i][0];
            cx.waker.vtable = &jw_vtables[i];
            CHECK_EQ(blitz_join(&cx, t), BLITZ_PENDING);
            /* The same waker again: stored once (a heap copy is replaced). */
            CHECK_EQ(blitz_join(&cx, t), BLITZ_PENDING);
        }
    }
    CHECK_OK(blitz_join_blocking(t));
    /* The last kind stored is woken once; every other clone was dropped. */
    for (int i = 0; i < JW_KINDS; i++) {
        CHECK(jw_counts[i][0] >= 2);
        CHECK_EQ(jw_counts[i][1], i == JW_KINDS - 1 ? 1 : 0);
        CHECK_EQ(jw_counts[i][0], jw_counts[i][1] + jw_counts[i][2]);
    }
    CHECK_OK(blitz_task_release(&t));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(task_blocks_sizes_alignment_and_reuse) {
    blitz_runtime *rt;
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = BLITZ_CURRENT_THREAD;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    /* Blocks start 8 mod 16, so the state after the 56-byte header is
     * 16-byte aligned; states of at most 8 bytes fit the 64-byte class. */
    CHECK_EQ(BLITZ__FIRST_BLOCK % 16, 8);
    CHECK_EQ(BLITZ__TASK_HEADER_SIZE, 56);
    for (int i = 0; i < 3; i++) {
        uint64_t small = 0;
        blitz_task *t;
        CHECK_OK(blitz_spawn(rt, small_poll, &small, sizeof small, &t));
        blitz__task *b = blitz__handle_in(t, "test");
        CHECK_EQ(blitz__block_size(b), 64);
        CHECK_EQ((uintptr_t)blitz__task_state_ptr(b) % 16, 0);
        CHECK_OK(blitz_join_blocking(t));
        CHECK_EQ(*(uint64_t *)blitz_task_state(t), 0x5eed);
        CHECK_OK(blitz_task_release(&t));
    }
    /* Every size class boundary, plus states larger than any class. */
    size_t sizes[] = {1, 8, 9, 24, 40, 100, 1000, 4000, 8152, 8153, 20000, 300000};
    drop_count = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t size = sizes[i] < sizeof(align_state) ? sizeof(align_state) : sizes[i];
        unsigned char *init = (unsigned char *)malloc(size);
        CHECK(init);
        memset(init, 0, size);
        for (size_t k = sizeof(align_state); k < size; k++)
            init[k] = (unsigned char)(k * 7);
        blitz_spawn_opts o;
        memset(&o, 0, sizeof o);
        o.poll = align_poll;
        o.state = init;
        o.size = size;
        o.drop = count_drop;
        blitz_task *t;
        CHECK_OK(blitz_spawn_ex(rt, &o, &t));
        CHECK_OK(blitz_join_blocking(t));
        unsigned char *st = (unsigned char *)blitz_task_state(t);
        CHECK_NOT_NULL(st);
        CHECK_EQ((uintptr_t)st % 16, 0);
        /* The drop pointer at the end of the block did not clobber the state. */
        for (size_t k = sizeof(align_state); k < size; k++)
            CHECK_EQ(st[k], (unsigned char)(k * 7));
        CHECK_EQ(blitz__chunk_of(blitz__handle_in(t, "test"))->rt, rt);
        CHECK_OK(blitz_task_release(&t));
        free(init);
    }
    CHECK_EQ(drop_count, (int)(sizeof sizes / sizeof sizes[0]));
    /* Steady state reuses blocks: after the first spawn of this size no
     * new chunk is carved. */
    blitz__chunk *chunks_before = NULL;
    for (int i = 0; i < 1000; i++) {
        if (i == 1)
            chunks_before = rt->chunks;
        align_state s;
        memset(&s, 0, sizeof s);
        blitz_task *t;
        CHECK_OK(blitz_spawn(rt, align_poll, &s, sizeof s, &t));
        CHECK_OK(blitz_join_blocking(t));
        CHECK_OK(blitz_task_release(&t));
    }
    CHECK_PTR_EQ(rt->chunks, chunks_before);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- parking: lost wake-ups hang --------------------------------------------- */

/* A waker slot shared by two tasks. */
typedef struct {
    pthread_mutex_t lock;
    blitz_waker waker;
    int has;
} pp_slot;

static void pp_slot_put(pp_slot *s, blitz_cx *cx) {
    blitz_waker w = blitz_cx_waker(cx);
    blitz_waker mine = blitz_waker_clone(&w), old = blitz_waker_noop();
    pthread_mutex_lock(&s->lock);
    if (s->has)
        old = s->waker;
    s->waker = mine;
    s->has = 1;
    pthread_mutex_unlock(&s->lock);
    blitz_waker_drop(old);
}

static void pp_slot_wake(pp_slot *s) {
    blitz_waker w = blitz_waker_noop();
    pthread_mutex_lock(&s->lock);
    if (s->has) {
        w = s->waker;
        s->has = 0;
    }
    pthread_mutex_unlock(&s->lock);
    blitz_waker_wake(w);
}

typedef struct {
    long rounds, i;
    int me;
    int *turn;
    pp_slot *slots; /* slots[k]: where task k waits */
} pp_state;

/* Two tasks hand a turn back and forth. Written as a plain poll function
 * (no coroutine macros): all progress lives in the state. */
static blitz_poll pp_poll(blitz_cx *cx, void *p) {
    pp_state *s = (pp_state *)p;
    while (s->i < s->rounds) {
        if (__atomic_load_n(s->turn, __ATOMIC_ACQUIRE) != s->me) {
            pp_slot_put(&s->slots[s->me], cx);
            /* Re-check: the partner may have passed the turn before it saw
             * the waker. */
            if (__atomic_load_n(s->turn, __ATOMIC_ACQUIRE) != s->me)
                return BLITZ_PENDING;
        }
        s->i++;
        __atomic_store_n(s->turn, 1 - s->me, __ATOMIC_RELEASE);
        pp_slot_wake(&s->slots[1 - s->me]);
    }
    return BLITZ_READY;
}

/* Workers park at once (no spinning) and would sleep far past the test's
 * timeout: a single lost wake-up fails the test. Covers the wake from a
 * worker to a parked worker, the last-searcher hand-off and
 * transitioning_to_park. */
static int pp_run(uint32_t workers, blitz_flavor flavor, long rounds) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = flavor;
    cfg.workers = workers;
    cfg.spin_before_park = UINT32_MAX;
    cfg.park_timeout_ns = 60ull * 1000000000ull;
    blitz_runtime *rt;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    int turn = 0;
    pp_slot slots[2];
    memset(slots, 0, sizeof slots);
    pthread_mutex_init(&slots[0].lock, NULL);
    pthread_mutex_init(&slots[1].lock, NULL);
    pp_state a = {rounds, 0, 0, &turn, slots}, b = {rounds, 0, 1, &turn, slots};
    blitz_task *ta, *tb;
    CHECK_OK(blitz_spawn(rt, pp_poll, &a, sizeof a, &ta));
    CHECK_OK(blitz_spawn(rt, pp_poll, &b, sizeof b, &tb));
    CHECK_OK(blitz_join_blocking(ta));
    CHECK_OK(blitz_join_blocking(tb));
    CHECK_EQ(((pp_state *)blitz_task_state(ta))->i, rounds);
    CHECK_EQ(((pp_state *)blitz_task_state(tb))->i, rounds);
    CHECK_OK(blitz_task_release(&ta));
    CHECK_OK(blitz_task_release(&tb));
    for (int k = 0; k < 2; k++) {
        if (slots[k].has)
            blitz_waker_drop(slots[k].waker);
        pthread_mutex_destroy(&slots[k].lock);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(park_no_lost_wakeup_mt2) {
    return pp_run(2, BLITZ_MULTI_THREAD, test_scaled(20000));
}

BLITZ_TEST(park_no_lost_wakeup_mt4) {
    return pp_run(4, BLITZ_MULTI_THREAD, test_scaled(20000));
}

BLITZ_TEST(park_no_lost_wakeup_ct) {
    return pp_run(1, BLITZ_CURRENT_THREAD, test_scaled(20000));
}

typedef struct {
    long *done;
} leaf_state;

static blitz_poll leaf_poll(blitz_cx *cx, void *p) {
    (void)cx;
    __atomic_fetch_add(((leaf_state *)p)->done, 1, __ATOMIC_RELAXED);
    return BLITZ_READY;
}

/* Bursts of remote spawns into an idle runtime whose workers park at once:
 * the notify / last-searcher chain must get every task run. */
BLITZ_TEST(park_remote_bursts_all_run) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = 4;
    cfg.spin_before_park = UINT32_MAX;
    cfg.park_timeout_ns = 60ull * 1000000000ull;
    blitz_runtime *rt;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    long done = 0, expect = 0;
    leaf_state st = {&done};
    for (long burst = 0; burst < test_scaled(2000); burst++) {
        long n = 1 + burst % 37;
        blitz_task *last = NULL;
        for (long i = 0; i < n; i++)
            CHECK_OK(blitz_spawn(rt, leaf_poll, &st, sizeof st, i == n - 1 ? &last : NULL));
        expect += n;
        /* Wait from a thread that does not help, so only workers run them. */
        while (blitz_task_status(last) == BLITZ_EAGAIN)
            sched_yield();
        CHECK_OK(blitz_task_release(&last));
        while (__atomic_load_n(&done, __ATOMIC_RELAXED) != expect)
            sched_yield();
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

typedef struct {
    pp_slot *slot;
    int *turn;
    long rounds;
} relay_arg;

/* A plain thread plays one side of the game: every wake it sends comes
 * from outside the runtime (global queue + waking a parked worker). */
static void *pp_relay(void *arg) {
    relay_arg *r = (relay_arg *)arg;
    for (long i = 0; i < r->rounds; i++) {
        while (__atomic_load_n(r->turn, __ATOMIC_ACQUIRE) != 1)
            sched_yield();
        __atomic_store_n(r->turn, 0, __ATOMIC_RELEASE);
        pp_slot_wake(r->slot);
    }
    return NULL;
}

static int pp_external(uint32_t workers, blitz_flavor flavor, long rounds) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = flavor;
    cfg.workers = workers;
    cfg.spin_before_park = UINT32_MAX;
    cfg.park_timeout_ns = 60ull * 1000000000ull;
    blitz_runtime *rt;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    int turn = 0;
    pp_slot slots[2];
    memset(slots, 0, sizeof slots);
    pthread_mutex_init(&slots[0].lock, NULL);
    pthread_mutex_init(&slots[1].lock, NULL);
    pp_state a = {rounds, 0, 0, &turn, slots};
    relay_arg r = {&slots[0], &turn, rounds};
    pthread_t tid;
    CHECK_EQ(pthread_create(&tid, NULL, pp_relay, &r), 0);
    blitz_task *ta;
    CHECK_OK(blitz_spawn(rt, pp_poll, &a, sizeof a, &ta));
    CHECK_OK(blitz_join_blocking(ta));
    CHECK_EQ(pthread_join(tid, NULL), 0);
    CHECK_EQ(((pp_state *)blitz_task_state(ta))->i, rounds);
    CHECK_OK(blitz_task_release(&ta));
    for (int k = 0; k < 2; k++) {
        if (slots[k].has)
            blitz_waker_drop(slots[k].waker);
        pthread_mutex_destroy(&slots[k].lock);
    }
    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(park_external_wakes_mt2) {
    return pp_external(2, BLITZ_MULTI_THREAD, test_scaled(5000));
}

BLITZ_TEST(park_external_wakes_ct) {
    return pp_external(1, BLITZ_CURRENT_THREAD, test_scaled(5000));
}

/* ---- shutdown while a poll blocks in blitz_join_blocking ------------------------- */

typedef struct {
    int dummy;
} forever_state;

static blitz_poll forever_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_PENDING; /* never woken */
}

typedef struct {
    int *entered;
    int rc;
} nested_wait_state;

/* Blocks its thread inside the poll until the runtime shuts down. */
static blitz_poll nested_wait_poll(blitz_cx *cx, void *p) {
    nested_wait_state *s = (nested_wait_state *)p;
    forever_state f = {0};
    blitz_task *h;
    CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), forever_poll, &f, sizeof f, &h));
    __atomic_store_n(s->entered, 1, __ATOMIC_RELEASE);
    s->rc = blitz_join_blocking(h);
    CHECK_OK(blitz_task_release(&h));
    return BLITZ_READY;
}

typedef struct {
    blitz_task *t;
    int rc;
} waiter_arg;

static void *wait_thread(void *arg) {
    waiter_arg *a = (waiter_arg *)arg;
    a->rc = blitz_join_blocking(a->t);
    return NULL;
}

static int nested_wait_shutdown(blitz_flavor flavor, uint32_t workers) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = flavor;
    cfg.workers = workers;
    blitz_runtime *rt;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    int entered = 0;
    nested_wait_state st = {&entered, 0};
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, nested_wait_poll, &st, sizeof st, &t));
    /* A plain thread waits on the task (and, on current-thread, drives). */
    waiter_arg wa = {t, 0};
    pthread_t tid;
    CHECK_EQ(pthread_create(&tid, NULL, wait_thread, &wa), 0);
    while (!__atomic_load_n(&entered, __ATOMIC_ACQUIRE))
        sched_yield();
    usleep(20000);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_EQ(pthread_join(tid, NULL), 0);
    /* The nested wait gave up with ESHUTDOWN, so the poll finished and the
     * task completed normally before the sweep. */
    CHECK_EQ(wa.rc, BLITZ_OK);
    CHECK_EQ(((nested_wait_state *)blitz_task_state(t))->rc, BLITZ_ESHUTDOWN);
    CHECK_OK(blitz_task_release(&t));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(shutdown_nested_wait_mt1) {
    return nested_wait_shutdown(BLITZ_MULTI_THREAD, 1);
}
BLITZ_TEST(shutdown_nested_wait_mt2) {
    return nested_wait_shutdown(BLITZ_MULTI_THREAD, 2);
}
BLITZ_TEST(shutdown_nested_wait_ct) {
    return nested_wait_shutdown(BLITZ_CURRENT_THREAD, 1);
}

/* ---- LIFO slot: eviction, and no LIFO push while a worker parks ------------- */

BLITZ_TEST(lifo_eviction_and_transitioning_to_park) {
    blitz_runtime *rt = iq_runtime(2);
    blitz__worker *w = &rt->workers[0];
    iq_pool p;
    iq_pool_init(&p, 4);
    blitz__context ctx;
    blitz__context_init(&ctx, rt);
    ctx.worker = w;
    ctx.cache = &w->cache;
    ctx.counters = &w->counters;
    ctx.worker_index = 0;
    blitz__context *outer = blitz__context_set(&ctx);
    /* The newest task takes the slot; the one it displaces joins the ring. */
    blitz__worker_schedule_local(w, &p.tasks[0]);
    CHECK_PTR_EQ(blitz__ptr_load(&w->lifo_slot, BLITZ__RELAXED), &p.tasks[0]);
    CHECK_EQ(blitz__local_queue_len(&w->queue), 0);
    blitz__worker_schedule_local(w, &p.tasks[1]);
    CHECK_PTR_EQ(blitz__ptr_load(&w->lifo_slot, BLITZ__RELAXED), &p.tasks[1]);
    CHECK_EQ(blitz__local_queue_len(&w->queue), 1);
    CHECK_PTR_EQ(blitz__local_queue_pop(&w->queue), &p.tasks[0]);
    /* While the worker is on its way to park, a task scheduled from it
     * goes to the global queue, where a notified worker will find it. */
    blitz__u32_store(&w->transitioning_to_park, 1, BLITZ__SEQ_CST);
    blitz__worker_schedule_local(w, &p.tasks[2]);
    CHECK_PTR_EQ(blitz__ptr_load(&w->lifo_slot, BLITZ__RELAXED), &p.tasks[1]);
    CHECK_EQ(blitz__global_queue_len(rt->global), 1);
    blitz__u32_store(&w->transitioning_to_park, 0, BLITZ__SEQ_CST);
    CHECK_EQ(iq_drain_global(rt, &p), 1);
    CHECK_EQ(p.seen[2], 1);
    /* The LIFO cap: after BLITZ_MAX_LIFO_POLLS_PER_TICK hits in a tick the
     * slot's task goes through the ring. */
    blitz__ptr_store(&w->lifo_slot, NULL, BLITZ__RELAXED);
    w->lifo_polls = 0;
    w->global_interval = 255;
    for (int i = 0; i < BLITZ_MAX_LIFO_POLLS_PER_TICK; i++) {
        blitz__worker_schedule_local(w, &p.tasks[3]);
        CHECK_PTR_EQ(blitz__worker_next_local(w), &p.tasks[3]);
    }
    blitz__worker_schedule_local(w, &p.tasks[3]);
    CHECK_PTR_EQ(blitz__worker_next_local(w), &p.tasks[3]);
    CHECK_NULL(blitz__ptr_load(&w->lifo_slot, BLITZ__RELAXED));
    CHECK_EQ(blitz__counter(&w->counters.lifo_hits), BLITZ_MAX_LIFO_POLLS_PER_TICK);
    blitz__context_set(outer);
    iq_pool_free(&p);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- an idle runtime gives task memory back ------------------------------- */

static blitz_poll trim_noop_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_READY;
}

static uint32_t trim_chunks(blitz_runtime *rt) {
    return blitz__u32_load(&rt->chunks_held, BLITZ__RELAXED);
}

/* Runs one task to its end (on a current-thread runtime this drives it,
 * which is when its trims run), then returns the chunks held. */
static uint32_t trim_chunks_after_task(blitz_runtime *rt) {
    int z = 0;
    blitz_task *h = NULL;
    if (blitz_spawn(rt, trim_noop_poll, &z, sizeof z, &h) == 0) {
        (void)blitz_join_blocking(h);
        (void)blitz_task_release(&h);
    }
    return trim_chunks(rt);
}

/* Chunks held while N join handles keep their blocks, then after the
 * handles are released and the runtime has been idle for the trim's
 * delay: back to a few (the frees since the last trim may keep some),
 * not the burst's peak of over 50. */
static int trim_after_burst(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    enum { N = 50000 };
    blitz_task **h = (blitz_task **)calloc(N, sizeof *h);
    CHECK_NOT_NULL(h);
    int z = 0;
    for (int i = 0; i < N; i++)
        CHECK_OK(blitz_spawn(rt, trim_noop_poll, &z, sizeof z, &h[i]));
    /* A chunk holds under 1000 of the smallest blocks. */
    CHECK_GE(trim_chunks(rt), N / 1000);
    for (int i = 0; i < N; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        CHECK_OK(blitz_task_release(&h[i]));
    }
    free(h);
    /* Workers wake up on their own once the delay is over; a
     * current-thread runtime trims when it is driven again. */
    TU_WAIT_UNTIL(trim_chunks_after_task(rt) <= 8, 30.0, 20);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(trim_after_burst)

static uint32_t trim_groups(blitz_runtime *rt) {
    blitz__mutex_lock(&rt->alloc_lock);
    uint32_t n = rt->chunk_groups;
    blitz__mutex_unlock(&rt->alloc_lock);
    return n;
}

/* A burst whose n blocks are all alive at once (their join handles keep
 * them), then released; then one more task, so every owner has gone idle
 * after the frees. */
static int trim_burst(blitz_runtime *rt, blitz_task **h, int n) {
    int z = 0;
    for (int i = 0; i < n; i++)
        CHECK_OK(blitz_spawn(rt, trim_noop_poll, &z, sizeof z, &h[i]));
    for (int i = 0; i < n; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        CHECK_OK(blitz_task_release(&h[i]));
    }
    (void)trim_chunks_after_task(rt);
    return 0;
}

/* Bursts of tasks that come within the trim's delay reuse their blocks:
 * the chunks are not freed and allocated again after each burst (page
 * faults every time). The delay is made longer than the test may run, so
 * only the trims that follow the first burst may free anything. */
static int trim_waits_between_bursts(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    rt->trim_delay_ns = 120ull * 1000000000ull;
    enum { N = 4000, BURSTS = 12 };
    blitz_task **h = (blitz_task **)calloc(N, sizeof *h);
    CHECK_NOT_NULL(h);
    for (int i = 0; i < 2; i++)
        CHECK_OK(trim_burst(rt, h, N));
    uint32_t first = trim_groups(rt);
    CHECK_GE(first, 1);
    for (int i = 0; i < BURSTS; i++)
        CHECK_OK(trim_burst(rt, h, N));
    /* Trimming after every burst allocates about as many groups per burst
     * as the first ones did. */
    CHECK_LE(trim_groups(rt) - first, first);
    free(h);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(trim_waits_between_bursts)

/* ---- a cancelled task's pending op is withdrawn ---------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    int *hook_runs;
} hooked_sleeper;

static blitz_poll hooked_sleeper_poll(blitz_cx *cx, void *p) {
    hooked_sleeper *s = (hooked_sleeper *)p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 3600 * BLITZ_SEC));
    BLITZ_END(s);
}

static void hooked_sleeper_cancel(void *p) {
    hooked_sleeper *s = (hooked_sleeper *)p;
    /* The sleep was withdrawn before the hook runs. */
    CHECK(!blitz_timer_armed(&s->timer));
    __atomic_fetch_add(s->hook_runs, 1, __ATOMIC_RELAXED);
}

/* A task cancelled while sleeping an hour: the sleep it recorded is
 * withdrawn, so the block is freed as soon as the handle goes, not in an
 * hour, with or without a cancel hook (which runs after the withdrawal). */
static int cancel_hook_frees(blitz_flavor flavor) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = flavor;
    cfg.workers = 2;
    blitz_runtime *rt;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    int hook_runs = 0;
    for (int with_hook = 1; with_hook >= 0; with_hook--) {
        hooked_sleeper st;
        memset(&st, 0, sizeof st);
        st.hook_runs = &hook_runs;
        blitz_spawn_opts o;
        memset(&o, 0, sizeof o);
        o.poll = hooked_sleeper_poll;
        o.state = &st;
        o.size = sizeof st;
        o.cancel = with_hook ? hooked_sleeper_cancel : NULL;
        blitz_task *t;
        CHECK_OK(blitz_spawn_ex(rt, &o, &t));
        /* Let it arm its timer (a current-thread runtime needs driving). */
        forever_state f = {0};
        blitz_task *d;
        for (int i = 0; i < 200 && !blitz_timer_armed(
                                       &((hooked_sleeper *)((char *)blitz__handle_in(t, "test") +
                                                            BLITZ__TASK_HEADER_SIZE))
                                            ->timer);
             i++) {
            CHECK_OK(blitz_spawn(rt, forever_poll, &f, sizeof f, &d));
            CHECK_OK(blitz_task_cancel(d));
            CHECK_EQ(blitz_join_blocking(d), BLITZ_ECANCELED);
            CHECK_OK(blitz_task_release(&d));
            usleep(1000);
        }
        CHECK_OK(blitz_task_cancel(t));
        CHECK_EQ(blitz_join_blocking(t), BLITZ_ECANCELED);
        CHECK_OK(blitz_task_release(&t));
        blitz_stats s;
        CHECK_OK(blitz_runtime_stats(rt, &s));
        CHECK_EQ(s.tasks_alive, 0);
    }
    CHECK_EQ(hook_runs, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(cancel_hook_frees_mt) {
    return cancel_hook_frees(BLITZ_MULTI_THREAD);
}
BLITZ_TEST(cancel_hook_frees_ct) {
    return cancel_hook_frees(BLITZ_CURRENT_THREAD);
}

/* ---- blitz_timeout_op cancels the inner op when the deadline wins ---------------- */

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    blitz_task *child;
    int expired;
    uint64_t join_bits_after; /* the child's JOIN_WAKER bit after the timeout */
} timeout_op_parent;

static blitz_poll timeout_op_parent_poll(blitz_cx *cx, void *p) {
    timeout_op_parent *s = (timeout_op_parent *)p;
    BLITZ_BEGIN(s);
    {
        forever_state f = {0};
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), forever_poll, &f, sizeof f, &s->child));
    }
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 50 * BLITZ_MSEC, blitz_join(cx, s->child),
                                    blitz_join_cancel, s->child));
    s->expired = s->timer.expired;
    s->join_bits_after =
        blitz__u64_load(&blitz__handle_in(s->child, "test")->state, BLITZ__ACQUIRE) &
        BLITZ__TASK_JOIN_WAKER;
    CHECK(!blitz_timer_armed(&s->timer));
    CHECK_OK(blitz_task_cancel(s->child));
    CHECK_OK(blitz_task_release(&s->child));
    BLITZ_END(s);
}

BLITZ_TEST(timeout_op_cancels_join) {
    for (int flavor = 0; flavor < 2; flavor++) {
        blitz_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.flavor = flavor ? BLITZ_CURRENT_THREAD : BLITZ_MULTI_THREAD;
        cfg.workers = 2;
        cfg.start_paused = 1;
        blitz_runtime *rt;
        CHECK_OK(blitz_runtime_new(&cfg, &rt));
        uint64_t t0 = blitz_time_now(rt);
        timeout_op_parent st;
        memset(&st, 0, sizeof st);
        CHECK_OK(blitz_runtime_run(rt, timeout_op_parent_poll, &st, sizeof st));
        CHECK_EQ(st.expired, 1);
        /* The join registration was taken back: the child holds no waker of
         * the parent any more. */
        CHECK_EQ(st.join_bits_after, 0);
        CHECK_EQ(blitz_time_now(rt) - t0, 50 * BLITZ_MSEC);
        /* The worker that fired the timer may drop its waker (the last
         * reference to the parent) an instant after the run returned. */
        blitz_stats stats;
        for (int i = 0; i < 2000; i++) {
            CHECK_OK(blitz_runtime_stats(rt, &stats));
            if (stats.tasks_alive == 0)
                break;
            usleep(1000);
        }
        CHECK_EQ(stats.tasks_alive, 0);
        CHECK_OK(blitz_runtime_free(rt));
    }
    return 0;
}

/* ---- the platform layer ---- */

/* System errors become the same blitz codes on every system, and a wait
 * on a word returns after its limit (and at once when the word differs). */
BLITZ_TEST(platform_errors_and_waits) {
#if defined(_WIN32)
    CHECK_EQ(blitz__from_win32(ERROR_FILE_NOT_FOUND), BLITZ_ENOENT);
    CHECK_EQ(blitz__from_win32(ERROR_ACCESS_DENIED), BLITZ_EACCES);
    CHECK_EQ(blitz__from_win32(ERROR_OPERATION_ABORTED), BLITZ_ECANCELED);
    CHECK_EQ(blitz__from_win32(WSAECONNRESET), BLITZ_ECONNRESET);
    CHECK_EQ(blitz__from_win32(WSAEWOULDBLOCK), BLITZ_EAGAIN);
    CHECK_EQ(blitz__from_win32(ERROR_SUCCESS), BLITZ_EIO);
    CHECK_EQ(blitz__from_win32(0x7fffffffu), BLITZ_EUNKNOWN);
    /* Winsock starts once; a socket can be made after. */
    CHECK_OK(blitz__winsock_start());
    CHECK_OK(blitz__winsock_start());
    SOCKET sk = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    CHECK(sk != INVALID_SOCKET);
    closesocket(sk);
#else
    CHECK_EQ(blitz__from_errno(ENOENT), BLITZ_ENOENT);
    CHECK_EQ(blitz__from_errno(ECONNRESET), BLITZ_ECONNRESET);
    CHECK_EQ(blitz__from_errno(EWOULDBLOCK), BLITZ_EAGAIN);
#endif
    blitz__atomic_u32 word;
    blitz__u32_store(&word, 7, BLITZ__RELAXED);
    blitz__futex_wait(&word, 8, 0); /* differs: returns at once */
    uint64_t t0 = blitz__now_ns();
    for (int i = 0; i < 3; i++)
        blitz__futex_wait(&word, 7, 20000000u); /* 20 ms each (spurious returns allowed) */
    uint64_t t1 = blitz__now_ns();
    CHECK_GE(t1, t0); /* the clock never goes back */
    blitz__futex_wake(&word, 1);
    CHECK_GE(blitz__cpu_count(), 1);
    return 0;
}
