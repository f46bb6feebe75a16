/* Sync primitives under load (included from tests/test_sync.c): tasks on
 * every flavour, plain threads with the blocking forms, cancellation by
 * timeouts, task cancel and raw threads racing cancel against release. */

/* xorshift32: cheap per-task randomness. */
static uint32_t ts_rand(uint32_t *s) {
    uint32_t x = *s ? *s : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *s = x;
    return x;
}

static void ts_wait_all(blitz_task **h, int n) {
    for (int i = 0; i < n; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        CHECK_OK(blitz_task_release(&h[i]));
    }
}

/* ---- mutex: tasks and blocking threads, one holder at a time ------------------------ */

typedef struct {
    blitz_mutex m;
    atomic_int holders;
    long counter; /* guarded by m */
} ts_mutex_shared;

typedef struct {
    BLITZ_CORO;
    ts_mutex_shared *sh;
    blitz_mutex_lock_op lock_op;
    long i, n;
    uint32_t rng;
} ts_mutex_task;

static void ts_mutex_enter(ts_mutex_shared *sh) {
    CHECK_EQ(atomic_fetch_add(&sh->holders, 1), 0);
    sh->counter++;
}
static void ts_mutex_leave(ts_mutex_shared *sh) {
    CHECK_EQ(atomic_fetch_sub(&sh->holders, 1), 1);
    blitz_mutex_unlock(&sh->m);
}

static blitz_poll ts_mutex_task_poll(blitz_cx *cx, void *p) {
    ts_mutex_task *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        BLITZ_AWAIT(s, blitz_mutex_lock(cx, &s->lock_op, &s->sh->m));
        ts_mutex_enter(s->sh);
        if (ts_rand(&s->rng) % 8 == 0)
            BLITZ_YIELD(s, cx); /* hold it across a suspension */
        ts_mutex_leave(s->sh);
    }
    BLITZ_END(s);
}

typedef struct {
    ts_mutex_shared *sh;
    long n;
} ts_mutex_thread_arg;

static void *ts_mutex_thread(void *p) {
    ts_mutex_thread_arg *a = p;
    for (long i = 0; i < a->n; i++) {
        if (i % 3 == 0 && blitz_mutex_try_lock(&a->sh->m) == BLITZ_OK) {
            ts_mutex_enter(a->sh);
            ts_mutex_leave(a->sh);
            continue;
        }
        CHECK_OK(blitz_mutex_lock_blocking(&a->sh->m));
        ts_mutex_enter(a->sh);
        ts_mutex_leave(a->sh);
    }
    return NULL;
}

static int sync_mutex_stress(tu_flavor f) {
    enum { TASKS = 8, THREADS = 2 };
    long per_task = test_scaled(20000), per_thread = test_scaled(5000);
    static ts_mutex_shared sh;
    memset(&sh, 0, sizeof sh);
    CHECK_OK(blitz_mutex_init(&sh.m));
    blitz_runtime *rt = tu_rt_new(f);
    blitz_task *h[TASKS];
    for (int i = 0; i < TASKS; i++) {
        ts_mutex_task s;
        memset(&s, 0, sizeof s);
        s.sh = &sh;
        s.n = per_task;
        s.rng = (uint32_t)i + 1;
        CHECK_OK(blitz_spawn(rt, ts_mutex_task_poll, &s, sizeof s, &h[i]));
    }
    tu_thread th[THREADS];
    ts_mutex_thread_arg ta = {&sh, per_thread};
    for (int i = 0; i < THREADS; i++)
        tu_thread_start(&th[i], ts_mutex_thread, &ta);
    ts_wait_all(h, TASKS);
    for (int i = 0; i < THREADS; i++)
        tu_thread_join(&th[i]);
    CHECK_EQ(sh.counter, TASKS * per_task + THREADS * per_thread);
    CHECK(!blitz_mutex_is_locked(&sh.m));
    CHECK_OK(blitz_runtime_free(rt));
    blitz_mutex_deinit(&sh.m);
    return 0;
}
TU_FLAVOR_TESTS(sync_mutex_stress)

/* ---- semaphore: mixed sizes, timeouts that cancel, blocking threads ------------------ */

#define TS_SEM_PERMITS 5

typedef struct {
    blitz_semaphore sem;
    atomic_int held;
    atomic_long acquired, timed_out;
} ts_sem_shared;

typedef struct {
    BLITZ_CORO;
    ts_sem_shared *sh;
    blitz_semaphore_acquire_op op;
    blitz_timer timer;
    long i, n;
    size_t want;
    uint32_t rng;
} ts_sem_task;

static void ts_sem_hold(ts_sem_shared *sh, size_t n) {
    int now = atomic_fetch_add(&sh->held, (int)n) + (int)n;
    CHECK_LE(now, TS_SEM_PERMITS);
    atomic_fetch_add(&sh->acquired, 1);
}
static void ts_sem_drop(ts_sem_shared *sh, size_t n) {
    atomic_fetch_sub(&sh->held, (int)n);
    CHECK_OK(blitz_semaphore_release(&sh->sem, n));
}

static blitz_poll ts_sem_task_poll(blitz_cx *cx, void *p) {
    ts_sem_task *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        s->want = 1 + ts_rand(&s->rng) % 3;
        if (ts_rand(&s->rng) % 4 == 0) {
            /* A 0-1 ms deadline: often wins, and its cancel must hand the
             * partial fill on. */
            BLITZ_AWAIT(
                s, blitz_timeout_op(cx, &s->timer, (int64_t)(ts_rand(&s->rng) % 2) * BLITZ_MSEC,
                                    blitz_semaphore_acquire(cx, &s->op, &s->sh->sem, s->want),
                                    blitz_semaphore_acquire_cancel, &s->op));
            if (s->timer.expired) {
                atomic_fetch_add(&s->sh->timed_out, 1);
                continue;
            }
        } else {
            BLITZ_AWAIT(s, blitz_semaphore_acquire(cx, &s->op, &s->sh->sem, s->want));
        }
        CHECK_EQ(s->op.result, BLITZ_OK);
        ts_sem_hold(s->sh, s->want);
        if (ts_rand(&s->rng) % 4 == 0)
            BLITZ_YIELD(s, cx);
        ts_sem_drop(s->sh, s->want);
    }
    BLITZ_END(s);
}

typedef struct {
    ts_sem_shared *sh;
    long n;
} ts_sem_thread_arg;

static void *ts_sem_thread(void *p) {
    ts_sem_thread_arg *a = p;
    for (long i = 0; i < a->n; i++) {
        size_t want = 1 + (size_t)(i % TS_SEM_PERMITS);
        CHECK_OK(blitz_semaphore_acquire_blocking(&a->sh->sem, want));
        ts_sem_hold(a->sh, want);
        ts_sem_drop(a->sh, want);
    }
    return NULL;
}

static int sync_sem_stress(tu_flavor f) {
    enum { TASKS = 8, THREADS = 2 };
    long per_task = test_scaled(10000), per_thread = test_scaled(3000);
    static ts_sem_shared sh;
    memset(&sh, 0, sizeof sh);
    CHECK_OK(blitz_semaphore_init(&sh.sem, TS_SEM_PERMITS));
    blitz_runtime *rt = tu_rt_new(f);
    blitz_task *h[TASKS];
    for (int i = 0; i < TASKS; i++) {
        ts_sem_task s;
        memset(&s, 0, sizeof s);
        s.sh = &sh;
        s.n = per_task;
        s.rng = (uint32_t)i * 7919u + 1;
        CHECK_OK(blitz_spawn(rt, ts_sem_task_poll, &s, sizeof s, &h[i]));
    }
    tu_thread th[THREADS];
    ts_sem_thread_arg ta = {&sh, per_thread};
    for (int i = 0; i < THREADS; i++)
        tu_thread_start(&th[i], ts_sem_thread, &ta);
    ts_wait_all(h, TASKS);
    for (int i = 0; i < THREADS; i++)
        tu_thread_join(&th[i]);
    CHECK_EQ(tu_ldl(&sh.acquired) + tu_ldl(&sh.timed_out), TASKS * per_task + THREADS * per_thread);
    /* Every permit accounted for. */
    CHECK_EQ(blitz_semaphore_available(&sh.sem), TS_SEM_PERMITS);
    CHECK_EQ(tu_ldi(&sh.held), 0);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sync_sem_stress)

/* ---- cancel racing release, from raw threads ---------------------------------------------- */

typedef struct {
    blitz_semaphore sem;
    atomic_int held;
    long iters;
    atomic_long cancels, grants, rounds;
} ts_race_shared;

typedef struct {
    ts_race_shared *sh;
    uint32_t seed;
    ts_task t; /* its waker may still be woken after the op completed */
} ts_race_arg;

static void *ts_race_thread(void *p) {
    ts_race_arg *a = p;
    ts_race_shared *sh = a->sh;
    ts_task *t = &a->t;
    blitz_semaphore_acquire_op op;
    memset(&op, 0, sizeof op);
    uint32_t rng = a->seed;
    /* Past `iters`, go on until some acquire was cancelled while it
     * waited: a scaled-down run on a loaded machine may see no overlap. */
    for (long i = 0; i < sh->iters || tu_ldl(&sh->cancels) == 0; i++) {
        atomic_fetch_add(&sh->rounds, 1);
        size_t want = 1 + ts_rand(&rng) % 2;
        blitz_poll r = blitz_semaphore_acquire(&t->cx, &op, &sh->sem, want);
        if (r == BLITZ_PENDING) {
            /* Give a releaser a moment, then either cancel (racing the
             * handoff) or keep polling until it is ours. */
            int spins = (int)(ts_rand(&rng) % 64);
            for (int k = 0; k < spins; k++)
                tu_spin_pause();
            if (ts_rand(&rng) % 2 == 0) {
                blitz_semaphore_acquire_cancel(NULL, &op);
                atomic_fetch_add(&sh->cancels, 1);
                continue;
            }
            while ((r = blitz_semaphore_acquire(&t->cx, &op, &sh->sem, want)) == BLITZ_PENDING)
                sched_yield(); /* the holder may be preempted (2 vCPUs) */
        }
        CHECK_EQ(op.result, BLITZ_OK);
        int now = atomic_fetch_add(&sh->held, (int)want) + (int)want;
        CHECK_LE(now, 2);
        atomic_fetch_add(&sh->grants, 1);
        atomic_fetch_sub(&sh->held, (int)want);
        CHECK_OK(blitz_semaphore_release(&sh->sem, want));
    }
    return NULL;
}

BLITZ_TEST(sync_sem_cancel_release_race) {
    enum { THREADS = 4 };
    static ts_race_shared sh;
    memset(&sh, 0, sizeof sh);
    CHECK_OK(blitz_semaphore_init(&sh.sem, 2));
    sh.iters = test_scaled(100000);
    tu_thread th[THREADS];
    static ts_race_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ts_task_init(&args[i].t);
        args[i].sh = &sh;
        args[i].seed = (uint32_t)(i + 1) * 2654435761u;
        tu_thread_start(&th[i], ts_race_thread, &args[i]);
    }
    for (int i = 0; i < THREADS; i++)
        tu_thread_join(&th[i]);
    CHECK_EQ(tu_ldl(&sh.grants) + tu_ldl(&sh.cancels), tu_ldl(&sh.rounds));
    CHECK_GE(tu_ldl(&sh.rounds), THREADS * sh.iters);
    CHECK_GT(tu_ldl(&sh.cancels), 0);
    CHECK_EQ(blitz_semaphore_available(&sh.sem), 2);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(ts_refs(&args[i].t), 0);
    blitz_semaphore_deinit(&sh.sem);
    return 0;
}

/* Notify: every notify_one is consumed exactly once even when the waiter
 * it chose abandons it: the producer waits for each one to be consumed, so
 * a lost notification hangs the test. */
typedef struct {
    blitz_notify n;
    atomic_long consumed;
    atomic_int stop;
} ts_nrace_shared;

static void *ts_nrace_consumer(void *p) {
    ts_race_arg *a = p;
    ts_nrace_shared *sh = (ts_nrace_shared *)(void *)a->sh;
    ts_task *t = &a->t;
    blitz_notify_wait_op op;
    memset(&op, 0, sizeof op);
    uint32_t rng = a->seed;
    while (!atomic_load(&sh->stop)) {
        if (blitz_notify_wait(&t->cx, &op, &sh->n) == BLITZ_READY) {
            atomic_fetch_add(&sh->consumed, 1);
            continue;
        }
        int spins = (int)(ts_rand(&rng) % 8);
        int got = 0;
        for (int k = 0; k < spins && !got; k++) {
            sched_yield();
            got = blitz_notify_wait(&t->cx, &op, &sh->n) == BLITZ_READY;
        }
        if (got)
            atomic_fetch_add(&sh->consumed, 1);
        else
            blitz_notify_wait_cancel(NULL, &op);
    }
    return NULL;
}

BLITZ_TEST(sync_notify_cancel_race) {
    enum { THREADS = 3 };
    static ts_nrace_shared sh;
    memset(&sh, 0, sizeof sh);
    CHECK_OK(blitz_notify_init(&sh.n));
    long rounds = test_scaled(30000);
    tu_thread th[THREADS];
    static ts_race_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ts_task_init(&args[i].t);
        args[i].sh = (ts_race_shared *)(void *)&sh;
        args[i].seed = (uint32_t)(i + 3) * 2246822519u;
        tu_thread_start(&th[i], ts_nrace_consumer, &args[i]);
    }
    /* Each round is a hand-off between threads: on a loaded machine it
     * can take a millisecond, so the rounds stop after 10 s (at least
     * 1,000 of them have run by then). */
    double until = tu_now() + 10.0;
    for (long r = 0; r < rounds; r++) {
        if (r >= 1000 && r % 256 == 0 && tu_now() > until) {
            rounds = r;
            break;
        }
        blitz_notify_one(&sh.n);
        TU_WAIT_GE(&sh.consumed, r + 1, 10.0);
    }
    atomic_store(&sh.stop, 1);
    for (int i = 0; i < THREADS; i++)
        tu_thread_join(&th[i]);
    CHECK_EQ(tu_ldl(&sh.consumed), rounds);
    CHECK_EQ(blitz_notify_try_wait(&sh.n), BLITZ_EAGAIN);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(ts_refs(&args[i].t), 0);
    blitz_notify_deinit(&sh.n);
    return 0;
}

/* ---- rwlock: readers share, writers exclude, counts add up ----------------------------------- */

typedef struct {
    blitz_rwlock l;
    atomic_int readers, writers;
    atomic_long reads;
    long value; /* written under the write lock */
} ts_rw_shared;

typedef struct {
    BLITZ_CORO;
    ts_rw_shared *sh;
    blitz_rwlock_op op;
    long i, n;
    int writer;
    uint32_t rng;
} ts_rw_task;

static blitz_poll ts_rw_task_poll(blitz_cx *cx, void *p) {
    ts_rw_task *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        if (s->writer) {
            BLITZ_AWAIT(s, blitz_rwlock_write(cx, &s->op, &s->sh->l));
            CHECK_EQ(atomic_fetch_add(&s->sh->writers, 1), 0);
            CHECK_EQ(tu_ldi(&s->sh->readers), 0);
            s->sh->value++;
            if (ts_rand(&s->rng) % 8 == 0)
                BLITZ_YIELD(s, cx);
            atomic_fetch_sub(&s->sh->writers, 1);
            blitz_rwlock_write_unlock(&s->sh->l);
        } else {
            BLITZ_AWAIT(s, blitz_rwlock_read(cx, &s->op, &s->sh->l));
            atomic_fetch_add(&s->sh->readers, 1);
            CHECK_EQ(tu_ldi(&s->sh->writers), 0);
            atomic_fetch_add(&s->sh->reads, 1);
            if (ts_rand(&s->rng) % 8 == 0)
                BLITZ_YIELD(s, cx);
            atomic_fetch_sub(&s->sh->readers, 1);
            blitz_rwlock_read_unlock(&s->sh->l);
        }
    }
    BLITZ_END(s);
}

static void *ts_rw_thread(void *p) {
    ts_rw_shared *sh = p;
    long n = test_scaled(1000);
    for (long i = 0; i < n; i++) {
        CHECK_OK(blitz_rwlock_write_blocking(&sh->l));
        CHECK_EQ(atomic_fetch_add(&sh->writers, 1), 0);
        CHECK_EQ(tu_ldi(&sh->readers), 0);
        sh->value++;
        atomic_fetch_sub(&sh->writers, 1);
        blitz_rwlock_write_unlock(&sh->l);
    }
    return NULL;
}

static int sync_rwlock_stress(tu_flavor f) {
    enum { READERS = 4, WRITERS = 2 };
    long per_task = test_scaled(3000);
    static ts_rw_shared sh;
    memset(&sh, 0, sizeof sh);
    CHECK_OK(blitz_rwlock_init(&sh.l));
    blitz_runtime *rt = tu_rt_new(f);
    blitz_task *h[READERS + WRITERS];
    for (int i = 0; i < READERS + WRITERS; i++) {
        ts_rw_task s;
        memset(&s, 0, sizeof s);
        s.sh = &sh;
        s.n = per_task;
        s.writer = i >= READERS;
        s.rng = (uint32_t)i + 11;
        CHECK_OK(blitz_spawn(rt, ts_rw_task_poll, &s, sizeof s, &h[i]));
    }
    tu_thread th;
    tu_thread_start(&th, ts_rw_thread, &sh);
    ts_wait_all(h, READERS + WRITERS);
    tu_thread_join(&th);
    CHECK_EQ(sh.value, WRITERS * per_task + test_scaled(1000));
    CHECK_EQ(tu_ldl(&sh.reads), READERS * per_task);
    CHECK_OK(blitz_rwlock_try_write(&sh.l));
    blitz_rwlock_write_unlock(&sh.l);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sync_rwlock_stress)

/* ---- barrier: one leader per generation, nobody passes early ------------------------------- */

#define TS_BAR_PARTIES 6
#define TS_BAR_GENS    200

typedef struct {
    blitz_barrier b;
    atomic_int arrived[TS_BAR_GENS];
    atomic_int leaders[TS_BAR_GENS];
} ts_bar_shared;

typedef struct {
    BLITZ_CORO;
    ts_bar_shared *sh;
    blitz_barrier_wait_op op;
    int g;
} ts_bar_task;

static blitz_poll ts_bar_task_poll(blitz_cx *cx, void *p) {
    ts_bar_task *s = p;
    BLITZ_BEGIN(s);
    for (s->g = 0; s->g < TS_BAR_GENS; s->g++) {
        atomic_fetch_add(&s->sh->arrived[s->g], 1);
        BLITZ_AWAIT(s, blitz_barrier_wait(cx, &s->op, &s->sh->b));
        CHECK_EQ(tu_ldi(&s->sh->arrived[s->g]), TS_BAR_PARTIES);
        if (s->op.is_leader)
            atomic_fetch_add(&s->sh->leaders[s->g], 1);
    }
    BLITZ_END(s);
}

static void *ts_bar_thread(void *p) {
    ts_bar_shared *sh = p;
    for (int g = 0; g < TS_BAR_GENS; g++) {
        atomic_fetch_add(&sh->arrived[g], 1);
        int leader = 0;
        CHECK_OK(blitz_barrier_wait_blocking(&sh->b, &leader));
        CHECK_EQ(tu_ldi(&sh->arrived[g]), TS_BAR_PARTIES);
        if (leader)
            atomic_fetch_add(&sh->leaders[g], 1);
    }
    return NULL;
}

static int sync_barrier_stress(tu_flavor f) {
    static ts_bar_shared sh;
    memset(&sh, 0, sizeof sh);
    CHECK_OK(blitz_barrier_init(&sh.b, TS_BAR_PARTIES));
    blitz_runtime *rt = tu_rt_new(f);
    blitz_task *h[TS_BAR_PARTIES - 1];
    for (int i = 0; i < TS_BAR_PARTIES - 1; i++) {
        ts_bar_task s;
        memset(&s, 0, sizeof s);
        s.sh = &sh;
        CHECK_OK(blitz_spawn(rt, ts_bar_task_poll, &s, sizeof s, &h[i]));
    }
    tu_thread th;
    tu_thread_start(&th, ts_bar_thread, &sh);
    ts_wait_all(h, TS_BAR_PARTIES - 1);
    tu_thread_join(&th);
    for (int g = 0; g < TS_BAR_GENS; g++)
        CHECK_EQ(tu_ldi(&sh.leaders[g]), 1);
    CHECK_EQ(sh.b.blitz__generation, TS_BAR_GENS);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sync_barrier_stress)

/* ---- once cell: one initializer, failures retried, everyone sees the value ---------------- */

typedef struct {
    blitz_once_cell c;
    atomic_int inits, failures;
    int value;
} ts_once_shared;

typedef struct {
    BLITZ_CORO;
    ts_once_shared *sh;
    blitz_once_cell_op op;
    blitz_timer timer;
} ts_once_task;

static blitz_poll ts_once_task_poll(blitz_cx *cx, void *p) {
    ts_once_task *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_once_cell_get_or_claim(cx, &s->op, &s->sh->c));
    if (s->op.claimed) {
        /* Initialization takes a while (other tasks queue), and the first
         * two attempts fail. */
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, BLITZ_MSEC));
        if (atomic_fetch_add(&s->sh->failures, 1) < 2) {
            CHECK_OK(blitz_once_cell_abandon(&s->sh->c));
            BLITZ_AWAIT(s, blitz_once_cell_get_or_claim(cx, &s->op, &s->sh->c));
            if (s->op.claimed) {
                atomic_fetch_add(&s->sh->inits, 1);
                CHECK_OK(blitz_once_cell_complete(&s->sh->c, &s->sh->value));
            }
        } else {
            atomic_fetch_add(&s->sh->inits, 1);
            CHECK_OK(blitz_once_cell_complete(&s->sh->c, &s->sh->value));
        }
    }
    CHECK_PTR_EQ(blitz_once_cell_get(&s->sh->c), &s->sh->value);
    BLITZ_END(s);
}

static int sync_once_cell_race(tu_flavor f) {
    enum { TASKS = 16 };
    int rounds = (int)test_scaled(20);
    blitz_runtime *rt = tu_rt_new(f);
    for (int r = 0; r < rounds; r++) {
        static ts_once_shared sh;
        memset(&sh, 0, sizeof sh);
        CHECK_OK(blitz_once_cell_init(&sh.c));
        blitz_task *h[TASKS];
        for (int i = 0; i < TASKS; i++) {
            ts_once_task s;
            memset(&s, 0, sizeof s);
            s.sh = &sh;
            CHECK_OK(blitz_spawn(rt, ts_once_task_poll, &s, sizeof s, &h[i]));
        }
        ts_wait_all(h, TASKS);
        CHECK_EQ(tu_ldi(&sh.inits), 1);
        CHECK_PTR_EQ(blitz_once_cell_get(&sh.c), &sh.value);
        blitz_once_cell_deinit(&sh.c);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sync_once_cell_race)

/* ---- cancellation tokens: waiters on a tree, cancelled from another thread ---------------- */

typedef struct {
    BLITZ_CORO;
    blitz_cancel_token *parent;
    blitz_cancel_token child;
    blitz_cancel_token_wait_op op;
    atomic_int *ready, *done;
} ts_tok_task;

static blitz_poll ts_tok_task_poll(blitz_cx *cx, void *p) {
    ts_tok_task *s = p;
    BLITZ_BEGIN(s);
    CHECK_OK(blitz_cancel_token_init_child(&s->child, s->parent));
    atomic_fetch_add(s->ready, 1);
    BLITZ_AWAIT(s, blitz_cancel_token_wait(cx, &s->op, &s->child));
    CHECK(blitz_cancel_token_is_cancelled(&s->child));
    blitz_cancel_token_deinit(&s->child);
    atomic_fetch_add(s->done, 1);
    BLITZ_END(s);
}

static int sync_cancel_token_stress(tu_flavor f) {
    enum { TASKS = 64 };
    int rounds = (int)test_scaled(20);
    blitz_runtime *rt = tu_rt_new(f);
    for (int r = 0; r < rounds; r++) {
        blitz_cancel_token root, mid;
        CHECK_OK(blitz_cancel_token_init(&root));
        CHECK_OK(blitz_cancel_token_init_child(&mid, &root));
        atomic_int ready, done;
        atomic_store(&ready, 0);
        atomic_store(&done, 0);
        blitz_task *h[TASKS];
        for (int i = 0; i < TASKS; i++) {
            ts_tok_task s;
            memset(&s, 0, sizeof s);
            s.parent = i % 2 ? &mid : &root;
            s.ready = &ready;
            s.done = &done;
            CHECK_OK(blitz_spawn(rt, ts_tok_task_poll, &s, sizeof s, &h[i]));
        }
        if (f.flavor == BLITZ_MULTI_THREAD && r % 2)
            TU_WAIT_GE(&ready, TASKS / 2, 5.0); /* cancel while they register */
        blitz_cancel_token_cancel(&root);
        ts_wait_all(h, TASKS);
        CHECK_EQ(tu_ldi(&done), TASKS);
        blitz_cancel_token_deinit(&mid);
        blitz_cancel_token_deinit(&root);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sync_cancel_token_stress)

/* ---- a task cancelled while its op waits: the cancel hook withdraws it -------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_mutex *m;
    blitz_mutex_lock_op lock_op;
    atomic_int *queued;
    int holds;
} ts_hook_task;

static blitz_poll ts_hook_task_poll(blitz_cx *cx, void *p) {
    ts_hook_task *s = p;
    BLITZ_BEGIN(s);
    atomic_fetch_add(s->queued, 1);
    BLITZ_AWAIT(s, blitz_mutex_lock(cx, &s->lock_op, s->m));
    s->holds = 1;
    /* Holds the lock until cancelled. */
    BLITZ_AWAIT(s, tu_forever_poll(cx, NULL));
    BLITZ_END(s);
}

static void ts_hook_task_cancel(void *p) {
    ts_hook_task *s = p;
    blitz_mutex_lock_cancel(NULL, &s->lock_op);
    if (s->holds)
        blitz_mutex_unlock(s->m);
}

/* Runs a runtime (drives a current-thread one) until *count >= want. */
typedef struct {
    BLITZ_CORO;
    atomic_int *count;
    int want;
} ts_drive;

static blitz_poll ts_drive_poll(blitz_cx *cx, void *p) {
    ts_drive *s = p;
    BLITZ_BEGIN(s);
    while (atomic_load(s->count) < s->want)
        BLITZ_YIELD(s, cx);
    BLITZ_END(s);
}

static int sync_task_cancel_hook(tu_flavor f) {
    enum { TASKS = 6 };
    blitz_runtime *rt = tu_rt_new(f);
    static blitz_mutex m;
    CHECK_OK(blitz_mutex_init(&m));
    CHECK_OK(blitz_mutex_try_lock(&m));
    atomic_int queued;
    atomic_store(&queued, 0);
    blitz_task *h[TASKS];
    for (int i = 0; i < TASKS; i++) {
        ts_hook_task s;
        memset(&s, 0, sizeof s);
        s.m = &m;
        s.queued = &queued;
        blitz_spawn_opts o;
        memset(&o, 0, sizeof o);
        o.poll = ts_hook_task_poll;
        o.state = &s;
        o.size = sizeof s;
        o.cancel = ts_hook_task_cancel;
        CHECK_OK(blitz_spawn_ex(rt, &o, &h[i]));
    }
    if (f.flavor == BLITZ_CURRENT_THREAD) {
        ts_drive s;
        memset(&s, 0, sizeof s);
        s.count = &queued;
        s.want = TASKS;
        CHECK_OK(blitz_runtime_run(rt, ts_drive_poll, &s, sizeof s));
    }
    TU_WAIT_GE(&queued, TASKS, 5.0);
    /* Cancel the waiting tasks; the first also after the lock was handed
     * to it (unseen), the others while queued. */
    blitz_mutex_unlock(&m);
    for (int i = 0; i < TASKS; i++)
        CHECK_OK(blitz_task_cancel(h[i]));
    for (int i = 0; i < TASKS; i++) {
        CHECK_EQ(blitz_join_blocking(h[i]), BLITZ_ECANCELED);
        CHECK_OK(blitz_task_release(&h[i]));
    }
    /* Nobody holds the lock, and the cancelled tasks are gone. */
    CHECK_OK(blitz_mutex_try_lock(&m));
    blitz_mutex_unlock(&m);
    CHECK(!blitz_mutex_is_locked(&m));
    blitz_stats st;
    for (int tries = 0;; tries++) {
        CHECK_OK(blitz_runtime_stats(rt, &st));
        if (st.tasks_alive == 0)
            break;
        CHECK_LT(tries, 5000);
        tu_sleep_ms(1);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sync_task_cancel_hook)

/* ---- FIFO on a runtime: tasks get the lock in the order they queued ----------------------- */

static int ts_queue_len(blitz_semaphore *sem) {
    int n = 0;
    blitz__word_lock(&sem->blitz__lock);
    for (blitz__waiter *w = sem->blitz__waiters.blitz__head; w; w = w->blitz__next)
        n++;
    blitz__word_unlock(&sem->blitz__lock);
    return n;
}

typedef struct {
    blitz_mutex m;
    atomic_int next;
    int order[64];
} ts_fifo_shared;

typedef struct {
    BLITZ_CORO;
    ts_fifo_shared *sh;
    blitz_mutex_lock_op lock_op;
    int id;
} ts_fifo_task;

static blitz_poll ts_fifo_task_poll(blitz_cx *cx, void *p) {
    ts_fifo_task *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_mutex_lock(cx, &s->lock_op, &s->sh->m));
    s->sh->order[atomic_fetch_add(&s->sh->next, 1)] = s->id;
    BLITZ_YIELD(s, cx); /* hold it across a suspension */
    blitz_mutex_unlock(&s->sh->m);
    BLITZ_END(s);
}

static int sync_mutex_fifo(tu_flavor f) {
    enum { TASKS = 32 };
    static ts_fifo_shared sh;
    memset(&sh, 0, sizeof sh);
    CHECK_OK(blitz_mutex_init(&sh.m));
    CHECK_OK(blitz_mutex_try_lock(&sh.m));
    blitz_runtime *rt = tu_rt_new(f);
    blitz_task *h[TASKS];
    for (int i = 0; i < TASKS; i++) {
        ts_fifo_task s;
        memset(&s, 0, sizeof s);
        s.sh = &sh;
        s.id = i;
        CHECK_OK(blitz_spawn(rt, ts_fifo_task_poll, &s, sizeof s, &h[i]));
        /* Let task i queue before task i + 1 is spawned. */
        double deadline = tu_now() + 5.0 * tu_timeout_mult();
        while (ts_queue_len(&sh.m.blitz__sem) < i + 1) {
            CHECK(tu_now() < deadline);
            if (f.flavor == BLITZ_CURRENT_THREAD) {
                atomic_int zero;
                atomic_store(&zero, 1);
                ts_drive d;
                memset(&d, 0, sizeof d);
                d.count = &zero;
                d.want = 1;
                CHECK_OK(blitz_runtime_run(rt, ts_drive_poll, &d, sizeof d));
            } else {
                sched_yield();
            }
        }
    }
    blitz_mutex_unlock(&sh.m);
    ts_wait_all(h, TASKS);
    CHECK_EQ(tu_ldi(&sh.next), TASKS);
    for (int i = 0; i < TASKS; i++)
        CHECK_EQ(sh.order[i], i);
    CHECK(!blitz_mutex_is_locked(&sh.m));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sync_mutex_fifo)

/* ---- many tasks on one mutex (upstream once hung with 100+) ------------------------------ */

static int sync_mutex_many_tasks(tu_flavor f) {
    enum { TASKS = 256 };
    long per_task = test_scaled(40);
    static ts_mutex_shared sh;
    memset(&sh, 0, sizeof sh);
    CHECK_OK(blitz_mutex_init(&sh.m));
    blitz_runtime *rt = tu_rt_new(f);
    static blitz_task *h[TASKS];
    for (int i = 0; i < TASKS; i++) {
        ts_mutex_task s;
        memset(&s, 0, sizeof s);
        s.sh = &sh;
        s.n = per_task;
        s.rng = (uint32_t)i * 31u + 7u;
        CHECK_OK(blitz_spawn(rt, ts_mutex_task_poll, &s, sizeof s, &h[i]));
    }
    ts_wait_all(h, TASKS);
    CHECK_EQ(sh.counter, TASKS * per_task);
    CHECK(!blitz_mutex_is_locked(&sh.m));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sync_mutex_many_tasks)

/* ---- the owner frees its op the moment it sees it complete -------------------------------- */

/* Each wait uses a freshly allocated op that is freed as soon as it is
 * READY or cancelled, while releasers on other threads complete ops and
 * wake their wakers: any touch of a waiter after its completion is
 * published shows up under ASan as a use after free. */
static void *ts_free_thread(void *p) {
    ts_race_arg *a = p;
    ts_race_shared *sh = a->sh;
    uint32_t rng = a->seed;
    for (long i = 0; i < sh->iters; i++) {
        blitz_semaphore_acquire_op *op = calloc(1, sizeof *op);
        CHECK_NOT_NULL(op);
        blitz_poll r = blitz_semaphore_acquire(&a->t.cx, op, &sh->sem, 1);
        if (r == BLITZ_PENDING && ts_rand(&rng) % 2 == 0) {
            sched_yield();
            blitz_semaphore_acquire_cancel(NULL, op);
            free(op);
            atomic_fetch_add(&sh->cancels, 1);
            continue;
        }
        while (r == BLITZ_PENDING) {
            sched_yield();
            r = blitz_semaphore_acquire(&a->t.cx, op, &sh->sem, 1);
        }
        CHECK_EQ(op->result, BLITZ_OK);
        free(op);
        atomic_fetch_add(&sh->grants, 1);
        CHECK_OK(blitz_semaphore_release(&sh->sem, 1));
    }
    return NULL;
}

BLITZ_TEST(sync_op_freed_after_done) {
    enum { THREADS = 3 };
    static ts_race_shared sh;
    memset(&sh, 0, sizeof sh);
    CHECK_OK(blitz_semaphore_init(&sh.sem, 1));
    sh.iters = test_scaled(20000);
    tu_thread th[THREADS];
    static ts_race_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ts_task_init(&args[i].t);
        args[i].sh = &sh;
        args[i].seed = (uint32_t)(i + 5) * 3266489917u;
        tu_thread_start(&th[i], ts_free_thread, &args[i]);
    }
    for (int i = 0; i < THREADS; i++)
        tu_thread_join(&th[i]);
    CHECK_EQ(tu_ldl(&sh.grants) + tu_ldl(&sh.cancels), THREADS * sh.iters);
    CHECK_EQ(blitz_semaphore_available(&sh.sem), 1);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(ts_refs(&args[i].t), 0);
    return 0;
}

/* ---- once cell: claims, abandons and cancels racing from raw threads ---------------------- */

typedef struct {
    blitz_once_cell c;
    atomic_int completes, claims;
    long rounds;
    int value;
} ts_orace_shared;

typedef struct {
    ts_orace_shared *sh;
    uint32_t seed;
    ts_task t;
} ts_orace_arg;

static void *ts_orace_thread(void *p) {
    ts_orace_arg *a = p;
    ts_orace_shared *sh = a->sh;
    uint32_t rng = a->seed;
    blitz_once_cell_op op;
    memset(&op, 0, sizeof op);
    for (;;) {
        blitz_poll r = blitz_once_cell_get_or_claim(&a->t.cx, &op, &sh->c);
        int spins = (int)(ts_rand(&rng) % 4);
        while (r == BLITZ_PENDING && spins-- > 0) {
            sched_yield();
            r = blitz_once_cell_get_or_claim(&a->t.cx, &op, &sh->c);
        }
        if (r == BLITZ_PENDING) {
            /* Withdraw; a claim handed over meanwhile passes on. */
            blitz_once_cell_get_or_claim_cancel(NULL, &op);
            continue;
        }
        CHECK_OK(op.result);
        if (!op.claimed) {
            CHECK_PTR_EQ(op.value, &sh->value);
            return NULL;
        }
        /* Most claimers fail, so the claim travels. */
        if (atomic_fetch_add(&sh->claims, 1) < 50 && ts_rand(&rng) % 8 != 0) {
            CHECK_OK(blitz_once_cell_abandon(&sh->c));
            continue;
        }
        atomic_fetch_add(&sh->completes, 1);
        CHECK_OK(blitz_once_cell_complete(&sh->c, &sh->value));
    }
}

BLITZ_TEST(sync_once_cell_cancel_race) {
    enum { THREADS = 4 };
    long rounds = test_scaled(200);
    for (long r = 0; r < rounds; r++) {
        static ts_orace_shared sh;
        memset(&sh, 0, sizeof sh);
        CHECK_OK(blitz_once_cell_init(&sh.c));
        tu_thread th[THREADS];
        static ts_orace_arg args[THREADS];
        for (int i = 0; i < THREADS; i++) {
            ts_task_init(&args[i].t);
            args[i].sh = &sh;
            args[i].seed = (uint32_t)(r * THREADS + i + 1) * 2654435761u;
            tu_thread_start(&th[i], ts_orace_thread, &args[i]);
        }
        for (int i = 0; i < THREADS; i++)
            tu_thread_join(&th[i]);
        CHECK_EQ(tu_ldi(&sh.completes), 1);
        CHECK_PTR_EQ(blitz_once_cell_get(&sh.c), &sh.value);
        CHECK(blitz__waitq_empty(&sh.c.blitz__waiters));
        for (int i = 0; i < THREADS; i++)
            CHECK_EQ(ts_refs(&args[i].t), 0);
    }
    return 0;
}
