/* Wakers and yield: wakes from other threads, wakes during a poll,
 * clone/drop reference balance, will_wake, the noop waker, and the
 * fairness of BLITZ_YIELD. */
#include "test_util.h"

static atomic_int waker_drops;

static void waker_count_drop(void *state) {
    (void)state;
    atomic_fetch_add(&waker_drops, 1);
}

/* ---- the noop waker --------------------------------------------------------- */

BLITZ_TEST(waker_noop) {
    blitz_waker w = blitz_waker_noop();
    CHECK_NOT_NULL(w.vtable);
    blitz_waker_wake_by_ref(&w);
    blitz_waker c = blitz_waker_clone(&w);
    CHECK_NOT_NULL(c.vtable);
    blitz_waker_wake_by_ref(&c);
    blitz_waker_wake(c);
    blitz_waker_drop(blitz_waker_clone(&w));
    for (int i = 0; i < 1000; i++)
        blitz_waker_drop(blitz_waker_clone(&w));
    blitz_waker_drop(w);
    blitz_waker_wake(blitz_waker_noop());
    return 0;
}

/* ---- will_wake and clone/drop balance ------------------------------------ */

#define WAKER_CLONES 6
typedef struct {
    int polls;
    int same_as_clone, same_as_self, same_as_noop, same_as_other;
    blitz_waker *clones;      /* WAKER_CLONES slots, filled by the task */
    const blitz_waker *other; /* a waker of a different task, or NULL */
} waker_clone_state;

static blitz_poll waker_clone_poll(blitz_cx *cx, void *p) {
    waker_clone_state *s = p;
    s->polls++;
    blitz_waker mine = blitz_cx_waker(cx);
    blitz_waker noop = blitz_waker_noop();
    s->clones[0] = blitz_waker_clone(&mine);
    for (int i = 1; i < WAKER_CLONES; i++) /* clones of clones */
        s->clones[i] = blitz_waker_clone(&s->clones[i - 1]);
    s->same_as_clone = blitz_waker_will_wake(&mine, &s->clones[WAKER_CLONES - 1]) != 0 &&
                       blitz_waker_will_wake(&s->clones[2], &mine) != 0;
    s->same_as_self = blitz_waker_will_wake(&mine, &mine) != 0;
    s->same_as_noop = blitz_waker_will_wake(&mine, &noop) != 0;
    s->same_as_other = s->other ? blitz_waker_will_wake(&mine, s->other) != 0 : -1;
    return BLITZ_READY;
}

static int waker_clone_balance(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    atomic_store(&waker_drops, 0);
    blitz_waker a_clones[WAKER_CLONES], b_clones[WAKER_CLONES];
    waker_clone_state sa = {0, 0, 0, 0, 0, a_clones, NULL};
    blitz_spawn_opts o = {waker_clone_poll, &sa, sizeof sa, waker_count_drop, NULL, NULL, NULL};
    blitz_task *a = NULL, *b = NULL;
    CHECK_OK(blitz_spawn_ex(rt, &o, &a));
    CHECK_OK(blitz_join_blocking(a));
    waker_clone_state *ra = blitz_task_state(a);
    CHECK_EQ(ra->same_as_clone, 1);
    CHECK_EQ(ra->same_as_self, 1);
    CHECK_EQ(ra->same_as_noop, 0);

    /* A second task compares its waker with one of the first's. */
    waker_clone_state sb = {0, 0, 0, 0, 0, b_clones, &a_clones[0]};
    o.state = &sb;
    CHECK_OK(blitz_spawn_ex(rt, &o, &b));
    CHECK_OK(blitz_join_blocking(b));
    waker_clone_state *rb = blitz_task_state(b);
    CHECK_EQ(rb->same_as_other, 0);
    CHECK(blitz_waker_will_wake(&a_clones[1], &a_clones[4]) != 0);
    CHECK(blitz_waker_will_wake(&a_clones[1], &b_clones[1]) == 0);

    /* Releasing the handles does not free the tasks while wakers refer to
     * them: no drop function yet. */
    CHECK_OK(blitz_task_release(&a));
    CHECK_OK(blitz_task_release(&b));
    tu_sleep_ms(10);
    CHECK_EQ(tu_ldi(&waker_drops), 0);

    /* Waking a finished task does nothing (and does not poll it again). */
    blitz_waker_wake_by_ref(&a_clones[0]);
    blitz_waker_wake_by_ref(&b_clones[3]);
    blitz_waker_wake(a_clones[0]); /* consumes a_clones[0] */
    for (int i = 1; i < WAKER_CLONES - 1; i++)
        blitz_waker_drop(a_clones[i]);
    tu_sleep_ms(10);
    CHECK_EQ(tu_ldi(&waker_drops), 0);
    /* The last reference to A goes: A is freed, exactly once. (The thread
     * that completed a task may hold its own reference a moment longer, so
     * wait for the drop rather than expect it synchronously.) */
    blitz_waker_drop(a_clones[WAKER_CLONES - 1]);
    TU_WAIT_GE(&waker_drops, 1, 5.0);
    for (int i = 0; i < WAKER_CLONES - 1; i++)
        blitz_waker_drop(b_clones[i]);
    tu_sleep_ms(10);
    CHECK_EQ(tu_ldi(&waker_drops), 1);
    blitz_waker_wake(b_clones[WAKER_CLONES - 1]);
    TU_WAIT_GE(&waker_drops, 2, 5.0);

    blitz_stats st;
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.total_polled, 2); /* the wakes after completion polled nothing */
    CHECK_EQ(st.tasks_alive, 0);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(tu_ldi(&waker_drops), 2);
    return 0;
}
TU_FLAVOR_TESTS(waker_clone_balance)

/* ---- wake from another thread: ping-pong ----------------------------------- */

typedef struct {
    pthread_mutex_t lock;
    long seq; /* rounds released by the thread */
    int has_waker;
    blitz_waker waker;
    atomic_long ack; /* rounds the task has seen */
    long rounds;
} waker_pingpong;

typedef struct {
    BLITZ_CORO;
    waker_pingpong *pp;
    long round;
    int polls;
} waker_pp_task;

static blitz_poll waker_pp_wait(blitz_cx *cx, waker_pingpong *pp, long want) {
    pthread_mutex_lock(&pp->lock);
    if (pp->seq >= want) {
        pthread_mutex_unlock(&pp->lock);
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    if (pp->has_waker && !blitz_waker_will_wake(&pp->waker, &mine)) {
        blitz_waker_drop(pp->waker);
        pp->has_waker = 0;
    }
    if (!pp->has_waker) {
        pp->waker = blitz_waker_clone(&mine);
        pp->has_waker = 1;
    }
    pthread_mutex_unlock(&pp->lock);
    return BLITZ_PENDING;
}

static blitz_poll waker_pp_poll(blitz_cx *cx, void *p) {
    waker_pp_task *s = p;
    s->polls++;
    BLITZ_BEGIN(s);
    for (s->round = 1; s->round <= s->pp->rounds; s->round++) {
        BLITZ_AWAIT(s, waker_pp_wait(cx, s->pp, s->round));
        atomic_store(&s->pp->ack, s->round);
    }
    BLITZ_END(s);
}

static void *waker_pp_thread(void *p) {
    waker_pingpong *pp = p;
    for (long r = 1; r <= pp->rounds; r++) {
        pthread_mutex_lock(&pp->lock);
        pp->seq = r;
        int had = pp->has_waker;
        blitz_waker w = pp->waker;
        pp->has_waker = 0;
        pthread_mutex_unlock(&pp->lock);
        /* Alternate the two ways to wake. */
        if (had && (r & 1)) {
            blitz_waker_wake(w);
        } else if (had) {
            blitz_waker_wake_by_ref(&w);
            blitz_waker_drop(w);
        }
        TU_WAIT_GE(&pp->ack, r, 10.0);
    }
    return NULL;
}

static int waker_cross_thread(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    waker_pingpong pp;
    memset(&pp, 0, sizeof pp);
    pthread_mutex_init(&pp.lock, NULL);
    pp.rounds = test_scaled(20000);
    waker_pp_task s;
    memset(&s, 0, sizeof s);
    s.pp = &pp;
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, waker_pp_poll, &s, sizeof s, &h));
    tu_thread th;
    tu_thread_start(&th, waker_pp_thread, &pp);
    CHECK_OK(blitz_join_blocking(h));
    tu_thread_join(&th);
    waker_pp_task *r = blitz_task_state(h);
    CHECK_EQ(r->round, pp.rounds + 1);
    CHECK_EQ(tu_ldl(&pp.ack), pp.rounds);
    /* At most one poll per wake plus the first. */
    CHECK_LE(r->polls, pp.rounds + 1);
    CHECK_GE(r->polls, 1);
    CHECK_OK(blitz_task_release(&h));
    if (pp.has_waker)
        blitz_waker_drop(pp.waker);
    CHECK_OK(blitz_runtime_free(rt));
    pthread_mutex_destroy(&pp.lock);
    return 0;
}
TU_FLAVOR_TESTS(waker_cross_thread)

/* ---- wake during the poll ------------------------------------------------- */

enum { WAKE_BY_CLONE, WAKE_BY_REF, WAKE_BY_REF_CLONE, WAKE_FROM_THREAD };

typedef struct {
    int how;
    int polls;
    atomic_int *in_poll;  /* WAKE_FROM_THREAD: the task is inside its poll */
    atomic_int *woken;    /* WAKE_FROM_THREAD: the thread has woken it */
    blitz_waker *handoff; /* WAKE_FROM_THREAD: the waker for the thread */
} waker_self;

static blitz_poll waker_self_poll(blitz_cx *cx, void *p) {
    waker_self *s = p;
    if (++s->polls > 1)
        return BLITZ_READY;
    blitz_waker mine = blitz_cx_waker(cx);
    switch (s->how) {
    case WAKE_BY_CLONE:
        blitz_waker_wake(blitz_waker_clone(&mine));
        break;
    case WAKE_BY_REF:
        blitz_waker_wake_by_ref(&mine);
        break;
    case WAKE_BY_REF_CLONE: {
        blitz_waker c = blitz_waker_clone(&mine);
        blitz_waker_wake_by_ref(&c);
        blitz_waker_wake_by_ref(&c); /* twice: still one more poll */
        blitz_waker_drop(c);
        break;
    }
    default:
        *s->handoff = blitz_waker_clone(&mine);
        atomic_store(s->in_poll, 1);
        while (!atomic_load(s->woken))
            tu_spin_pause();
        break;
    }
    return BLITZ_PENDING;
}

static void *waker_self_thread(void *p) {
    waker_self *s = p;
    TU_WAIT_GE(s->in_poll, 1, 10.0);
    blitz_waker_wake(*s->handoff);
    atomic_store(s->woken, 1);
    return NULL;
}

static int wake_during_poll(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    for (int how = WAKE_BY_CLONE; how <= WAKE_FROM_THREAD; how++) {
        for (int rep = 0; rep < 50; rep++) {
            atomic_int in_poll = 0, woken = 0;
            blitz_waker handoff;
            waker_self s = {how, 0, &in_poll, &woken, &handoff};
            blitz_task *h = NULL;
            tu_thread th;
            CHECK_OK(blitz_spawn(rt, waker_self_poll, &s, sizeof s, &h));
            if (how == WAKE_FROM_THREAD)
                tu_thread_start(&th, waker_self_thread, &s);
            CHECK_OK(blitz_join_blocking(h));
            if (how == WAKE_FROM_THREAD)
                tu_thread_join(&th);
            CHECK_BASE(((waker_self *)blitz_task_state(h))->polls == 2,
                       "wake kind %d: polled %d times, want 2", how,
                       ((waker_self *)blitz_task_state(h))->polls);
            CHECK_OK(blitz_task_release(&h));
        }
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(wake_during_poll)

/* ---- many threads wake one task at once -------------------------------------- */

#define WAKER_THREADS 4
typedef struct {
    atomic_long wakes; /* increments done by the threads */
    long target;
    atomic_int in_poll, overlap, published;
    blitz_waker clones[WAKER_THREADS];
} waker_storm;

typedef struct {
    waker_storm *st;
    long polls;
} waker_storm_task;

static blitz_poll waker_storm_poll(blitz_cx *cx, void *p) {
    waker_storm_task *s = p;
    waker_storm *st = s->st;
    if (atomic_exchange(&st->in_poll, 1) != 0)
        atomic_store(&st->overlap, 1); /* two threads poll one task */
    s->polls++;
    if (s->polls == 1) {
        blitz_waker mine = blitz_cx_waker(cx);
        for (int i = 0; i < WAKER_THREADS; i++)
            st->clones[i] = blitz_waker_clone(&mine);
        atomic_store(&st->published, 1);
    }
    blitz_poll r = atomic_load(&st->wakes) >= st->target ? BLITZ_READY : BLITZ_PENDING;
    atomic_store(&st->in_poll, 0);
    return r;
}

typedef struct {
    waker_storm *st;
    int index;
    long count;
} waker_storm_arg;

static void *waker_storm_thread(void *p) {
    waker_storm_arg *a = p;
    TU_WAIT_GE(&a->st->published, 1, 10.0);
    blitz_waker w = a->st->clones[a->index];
    for (long i = 0; i < a->count; i++) {
        atomic_fetch_add(&a->st->wakes, 1);
        blitz_waker_wake_by_ref(&w);
        if ((i & 63) == 0)
            sched_yield();
    }
    blitz_waker_drop(w);
    return NULL;
}

static int waker_storm_test(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    atomic_store(&waker_drops, 0);
    for (int rep = 0; rep < 5; rep++) {
        waker_storm st;
        memset(&st, 0, sizeof st);
        long per = test_scaled(20000);
        st.target = per * WAKER_THREADS;
        waker_storm_task s = {&st, 0};
        blitz_spawn_opts o = {waker_storm_poll, &s, sizeof s, waker_count_drop, NULL, NULL, NULL};
        blitz_task *h = NULL;
        CHECK_OK(blitz_spawn_ex(rt, &o, &h));
        tu_thread th[WAKER_THREADS];
        waker_storm_arg args[WAKER_THREADS];
        for (int i = 0; i < WAKER_THREADS; i++) {
            args[i] = (waker_storm_arg){&st, i, per};
            tu_thread_start(&th[i], waker_storm_thread, &args[i]);
        }
        CHECK_OK(blitz_join_blocking(h));
        for (int i = 0; i < WAKER_THREADS; i++)
            tu_thread_join(&th[i]);
        waker_storm_task *r = blitz_task_state(h);
        CHECK_EQ(tu_ldi(&st.overlap), 0);
        CHECK_GE(r->polls, 2);
        CHECK_LE(r->polls, st.target + 1);
        CHECK_OK(blitz_task_release(&h));
        /* Every clone was dropped by its thread: the task goes, once. */
        TU_WAIT_GE(&waker_drops, rep + 1, 5.0);
        CHECK_EQ(tu_ldi(&waker_drops), rep + 1);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
BLITZ_TEST(waker_storm_mt2) {
    return waker_storm_test(TU_MT2);
}
BLITZ_TEST(waker_storm_mt4) {
    return waker_storm_test(TU_MT4);
}
BLITZ_TEST(waker_storm_ct) {
    return waker_storm_test(TU_CT);
}

/* ---- yield --------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    char id;
    int i, n;
    char *log;
    int *len;
} waker_yielder;

static blitz_poll waker_yielder_poll(blitz_cx *cx, void *p) {
    waker_yielder *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        s->log[(*s->len)++] = s->id;
        BLITZ_YIELD(s, cx);
    }
    BLITZ_END(s);
}

/* Two yielding tasks on a current-thread runtime take strict turns; a third
 * spawned later gets its turn before either finishes. */
BLITZ_TEST(yield_alternates_ct) {
    blitz_runtime *rt = tu_rt_new(TU_CT);
    char log[64];
    int len = 0;
    waker_yielder a = {0, 'A', 0, 10, log, &len};
    waker_yielder b = {0, 'B', 0, 10, log, &len};
    blitz_task *ha = NULL, *hb = NULL;
    CHECK_OK(blitz_spawn(rt, waker_yielder_poll, &a, sizeof a, &ha));
    CHECK_OK(blitz_spawn(rt, waker_yielder_poll, &b, sizeof b, &hb));
    CHECK_OK(blitz_join_blocking(ha));
    CHECK_OK(blitz_join_blocking(hb));
    CHECK_EQ(len, 20);
    log[len] = 0;
    for (int i = 0; i + 1 < len; i++)
        CHECK_BASE(log[i] != log[i + 1], "no alternation: %s", log);
    CHECK_EQ(((waker_yielder *)blitz_task_state(ha))->i, 10);
    CHECK_OK(blitz_task_release(&ha));
    CHECK_OK(blitz_task_release(&hb));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A task that yields lets every other runnable task run first: a yielder
 * spins until a task spawned after it has run. */
typedef struct {
    BLITZ_CORO;
    int spins;
    blitz_task *other;
} waker_yield_wait;

static blitz_poll waker_mark_poll(blitz_cx *cx, void *p) {
    (void)cx;
    *(int *)p = 1;
    return BLITZ_READY;
}

static blitz_poll waker_yield_wait_poll(blitz_cx *cx, void *p) {
    waker_yield_wait *s = p;
    BLITZ_BEGIN(s);
    {
        int mark = 0;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), waker_mark_poll, &mark, sizeof mark, &s->other));
    }
    BLITZ_YIELD(s, cx);
    /* One yield was enough for the other task to run. */
    s->spins = blitz_task_status(s->other) == BLITZ_OK ? 1 : 0;
    CHECK_OK(blitz_task_release(&s->other));
    BLITZ_END(s);
}

BLITZ_TEST(yield_lets_others_run_ct) {
    blitz_runtime *rt = tu_rt_new(TU_CT);
    waker_yield_wait s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, waker_yield_wait_poll, &s, sizeof s));
    CHECK_EQ(s.spins, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* One worker: two yielding tasks spawned from a task both make progress;
 * when the first finishes, the other is at least half way. */
typedef struct {
    BLITZ_CORO;
    atomic_long *mine, *theirs;
    long n;
    long theirs_at_end;
} waker_fair;

static blitz_poll waker_fair_poll(blitz_cx *cx, void *p) {
    waker_fair *s = p;
    BLITZ_BEGIN(s);
    while (atomic_load(s->mine) < s->n) {
        atomic_fetch_add(s->mine, 1);
        BLITZ_YIELD(s, cx);
    }
    s->theirs_at_end = atomic_load(s->theirs);
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    atomic_long a, b;
    long n;
    blitz_task *ha, *hb;
    long a_end, b_end;
} waker_fair_parent;

static blitz_poll waker_fair_parent_poll(blitz_cx *cx, void *p) {
    waker_fair_parent *s = p;
    BLITZ_BEGIN(s);
    {
        waker_fair fa = {0, &s->a, &s->b, s->n, 0};
        waker_fair fb = {0, &s->b, &s->a, s->n, 0};
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), waker_fair_poll, &fa, sizeof fa, &s->ha));
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), waker_fair_poll, &fb, sizeof fb, &s->hb));
    }
    BLITZ_AWAIT(s, blitz_join(cx, s->ha));
    BLITZ_AWAIT(s, blitz_join(cx, s->hb));
    s->a_end = ((waker_fair *)blitz_task_state(s->ha))->theirs_at_end;
    s->b_end = ((waker_fair *)blitz_task_state(s->hb))->theirs_at_end;
    CHECK_OK(blitz_task_release(&s->ha));
    CHECK_OK(blitz_task_release(&s->hb));
    BLITZ_END(s);
}

/* One round: the smaller of the two counts each yielder saw the other at
 * when it finished. */
static long yield_fair_round(tu_flavor f, long *n) {
    blitz_runtime *rt = tu_rt_new(f);
    waker_fair_parent *s = calloc(1, sizeof *s);
    CHECK_NOT_NULL(s);
    s->n = *n = test_scaled(4000);
    blitz_task *h = NULL;
    /* The parent's state holds the counters, so it is read through the
     * handle; spawn copies it, and the copy is what the children use. */
    CHECK_OK(blitz_spawn(rt, waker_fair_parent_poll, s, sizeof *s, &h));
    CHECK_OK(blitz_join_blocking(h));
    waker_fair_parent *r = blitz_task_state(h);
    long first_other = r->a_end < r->b_end ? r->a_end : r->b_end;
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_free(rt));
    free(s);
    return first_other;
}

/* Two yielders on one worker alternate: the first to finish saw the other
 * at least halfway. The waiting thread may run one of them (it helps
 * while it waits), and the OS may preempt it for as long as the other
 * needs to finish, so a round may fail on a loaded machine; three in a
 * row do not. */
static int yield_fair(tu_flavor f) {
    long n = 0, first_other = 0;
    for (int round = 0; round < 3; round++) {
        first_other = yield_fair_round(f, &n);
        if (first_other >= n / 2)
            break;
    }
    CHECK_BASE(first_other >= n / 2, "the first yielder to finish saw the other at %ld of %ld",
               first_other, n);
    return 0;
}
BLITZ_TEST(yield_fair_mt1) {
    return yield_fair((tu_flavor){BLITZ_MULTI_THREAD, 1});
}
BLITZ_TEST(yield_fair_ct) {
    return yield_fair(TU_CT);
}
