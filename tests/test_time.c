/* The time driver: sleeps never wake early, timers fire while a worker is
 * stuck, an idle runtime sleeps, the paused clock, timeouts, intervals,
 * cancelling timers, bad input, shutdown with armed timers. */
#if !defined(_WIN32)
#include <sys/resource.h>
#endif

#include "test_tasks.h"

/* Defines name_mt2 and name_ct from `static int name(tu_flavor)`. */
#define TM_FLAVOR_TESTS(name) \
    BLITZ_TEST(name##_mt2) {  \
        return name(TU_MT2);  \
    }                         \
    BLITZ_TEST(name##_ct) {   \
        return name(TU_CT);   \
    }

/* Process CPU time (user + system) in ms. */
static double tm_cpu_ms(void) {
#if defined(_WIN32)
    FILETIME created, exited, kernel, user;
    CHECK(GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user));
    ULARGE_INTEGER k = {{kernel.dwLowDateTime, kernel.dwHighDateTime}};
    ULARGE_INTEGER u = {{user.dwLowDateTime, user.dwHighDateTime}};
    return (double)(k.QuadPart + u.QuadPart) / 1e4; /* 100 ns units */
#else
    struct rusage ru;
    CHECK_EQ(getrusage(RUSAGE_SELF, &ru), 0);
    return (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3 +
           (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3;
#endif
}

/* Waits until the runtime's live-task count reaches zero. */
static void tm_wait_no_tasks(blitz_runtime *rt) {
    double deadline = tu_now() + 5.0 * tu_timeout_mult();
    for (;;) {
        blitz_stats st;
        CHECK_OK(blitz_runtime_stats(rt, &st));
        if (st.tasks_alive == 0)
            return;
        CHECK_BASE(tu_now() < deadline, "tasks_alive stays %llu",
                   (unsigned long long)st.tasks_alive);
        tu_sleep_ms(1);
    }
}

/* ---- sleeps never wake early ------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    int64_t dur;
    int until;
    uint64_t start, deadline, woke;
    uint64_t armed_deadline;
} tm_sleeper;

static blitz_poll tm_sleeper_poll(blitz_cx *cx, void *p) {
    tm_sleeper *s = p;
    BLITZ_BEGIN(s);
    s->start = blitz_cx_now(cx);
    s->deadline = blitz_deadline_after(s->start, s->dur);
    if (s->until)
        BLITZ_AWAIT(s, blitz_sleep_until(cx, &s->timer, s->deadline));
    else
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, s->dur));
    s->woke = blitz_cx_now(cx);
    s->armed_deadline = s->timer.deadline;
    CHECK(!blitz_timer_armed(&s->timer));
    BLITZ_END(s);
}

static int time_never_early(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    long n = test_scaled(200);
    if (n < 20)
        n = 20;
    blitz_task **h = calloc((size_t)n, sizeof *h);
    CHECK_NOT_NULL(h);
    uint32_t seed = 12345;
    for (long i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        tm_sleeper s;
        memset(&s, 0, sizeof s);
        s.dur = (int64_t)(1 + (seed >> 16) % 30) * BLITZ_MSEC;
        s.until = (int)(i % 2);
        CHECK_OK(blitz_spawn(rt, tm_sleeper_poll, &s, sizeof s, &h[i]));
    }
    uint64_t worst = 0;
    for (long i = 0; i < n; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        tm_sleeper *s = blitz_task_state(h[i]);
        CHECK_NOT_NULL(s);
        CHECK_GE(s->woke, s->deadline);
        CHECK_GE(s->woke, s->start + (uint64_t)s->dur);
        if (!s->until)
            CHECK_GE(s->armed_deadline, s->deadline); /* sleep re-reads the clock */
        else
            CHECK_EQ(s->armed_deadline, s->deadline);
        uint64_t late = s->woke - s->deadline;
        if (late > worst)
            worst = late;
        CHECK_OK(blitz_task_release(&h[i]));
    }
    CHECK_LT(worst, 200 * BLITZ_MSEC);
    free(h);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TM_FLAVOR_TESTS(time_never_early)

/* ---- a timer fires while the other worker is stuck ------------------------- */

typedef struct {
    atomic_int spinning, spin_done, sleeper_done;
    atomic_long sleeper_done_at_us;
} tm_stuck;

static blitz_poll tm_spin300_poll(blitz_cx *cx, void *p) {
    (void)cx;
    tm_stuck *k = *(tm_stuck **)p;
    double end = tu_now() + 0.3;
    atomic_store(&k->spinning, 1);
    while (tu_now() < end)
        tu_spin_pause();
    atomic_store(&k->spin_done, 1);
    return BLITZ_READY;
}

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    tm_stuck *k;
    double t0;
} tm_short_sleep;

static blitz_poll tm_short_sleep_poll(blitz_cx *cx, void *p) {
    tm_short_sleep *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 10 * BLITZ_MSEC));
    atomic_store(&s->k->sleeper_done_at_us, (long)((tu_now() - s->t0) * 1e6));
    /* The spinner must still be spinning: the timer did not wait for it. */
    if (!atomic_load(&s->k->spin_done))
        atomic_store(&s->k->sleeper_done, 1);
    else
        atomic_store(&s->k->sleeper_done, 2);
    BLITZ_END(s);
}

BLITZ_TEST(time_fires_during_long_poll_mt2) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    tm_stuck k;
    memset(&k, 0, sizeof k);
    tm_stuck *kp = &k;
    blitz_task *spin = NULL, *sl = NULL;
    CHECK_OK(blitz_spawn(rt, tm_spin300_poll, &kp, sizeof kp, &spin));
    TU_WAIT_GE(&k.spinning, 1, 5.0);
    tm_short_sleep s;
    memset(&s, 0, sizeof s);
    s.k = &k;
    s.t0 = tu_now();
    CHECK_OK(blitz_spawn(rt, tm_short_sleep_poll, &s, sizeof s, &sl));
    TU_WAIT_GE(&k.sleeper_done, 1, 5.0);
    CHECK_EQ(tu_ldi(&k.sleeper_done), 1);
    CHECK_GE(tu_ldl(&k.sleeper_done_at_us), 10000);
    CHECK_LT(tu_ldl(&k.sleeper_done_at_us), 200000);
    CHECK_OK(blitz_join_blocking(sl));
    CHECK_OK(blitz_join_blocking(spin));
    CHECK_OK(blitz_task_release(&sl));
    CHECK_OK(blitz_task_release(&spin));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- an idle runtime uses no CPU ------------------------------------------- */

static blitz_poll tm_trivial_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_READY;
}

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    atomic_int *done;
    uint64_t start, woke;
} tm_long_sleep;

static blitz_poll tm_long_sleep_poll(blitz_cx *cx, void *p) {
    tm_long_sleep *s = p;
    BLITZ_BEGIN(s);
    s->start = blitz_cx_now(cx);
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, BLITZ_SEC));
    s->woke = blitz_cx_now(cx);
    atomic_store(s->done, 1);
    BLITZ_END(s);
}

BLITZ_TEST(time_idle_no_cpu_mt2) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, tm_trivial_poll, NULL, 1, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_OK(blitz_task_release(&h));
    tu_sleep_ms(50); /* let the workers spin out and park */
    double c0 = tm_cpu_ms();
    tu_sleep_ms(300);
    double idle = tm_cpu_ms() - c0;
    fprintf(stderr, "# idle 300 ms: %.2f ms cpu\n", idle);
    CHECK_LT(idle, 30.0);

    /* One 1-second timer: the workers sleep until it, then it fires. */
    atomic_int done;
    atomic_store(&done, 0);
    tm_long_sleep s;
    memset(&s, 0, sizeof s);
    s.done = &done;
    double t0 = tu_now();
    CHECK_OK(blitz_spawn(rt, tm_long_sleep_poll, &s, sizeof s, &h));
    tu_sleep_ms(50);
    c0 = tm_cpu_ms();
    while (!atomic_load(&done)) {
        CHECK_LT(tu_now() - t0, 5.0 * tu_timeout_mult());
        tu_sleep_ms(10);
    }
    double waited = tm_cpu_ms() - c0;
    double wall = tu_now() - t0;
    fprintf(stderr, "# 1 s timer: %.2f ms cpu, fired after %.3f s\n", waited, wall);
    CHECK_GE(wall, 1.0);
    CHECK_LT(waited, 50.0);
    CHECK_OK(blitz_join_blocking(h));
    tm_long_sleep *r = blitz_task_state(h);
    CHECK_NOT_NULL(r);
    CHECK_GE(r->woke, r->start + (uint64_t)BLITZ_SEC);
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- virtual time ------------------------------------------------------------ */

static int time_paused_hour(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    uint64_t v0 = blitz_time_now(rt);
    tm_sleeper h1;
    memset(&h1, 0, sizeof h1);
    h1.dur = 3600 * BLITZ_SEC;
    double t0 = tu_now();
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, tm_sleeper_poll, &h1, sizeof h1, &h));
    CHECK_OK(blitz_join_blocking(h));
    double wall = tu_now() - t0;
    CHECK_LT(wall, 1.0);
    tm_sleeper *r = blitz_task_state(h);
    CHECK_NOT_NULL(r);
    CHECK_GE(r->woke, r->start + (uint64_t)(3600 * BLITZ_SEC));
    CHECK_GE(blitz_time_now(rt) - v0, (uint64_t)(3600 * BLITZ_SEC));
    /* The virtual clock does not run by itself. */
    uint64_t v1 = blitz_time_now(rt);
    tu_sleep_ms(20);
    CHECK_EQ(blitz_time_now(rt), v1);
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TM_FLAVOR_TESTS(time_paused_hour)

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    int64_t dur;
    atomic_int *seq;
    int order;
    uint64_t start, woke;
} tm_ordered;

static blitz_poll tm_ordered_poll(blitz_cx *cx, void *p) {
    tm_ordered *s = p;
    BLITZ_BEGIN(s);
    s->start = blitz_cx_now(cx);
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, s->dur));
    s->woke = blitz_cx_now(cx);
    s->order = atomic_fetch_add(s->seq, 1);
    BLITZ_END(s);
}

/* Spawns the three sleepers from inside a task, so the runtime is never
 * idle (and the clock never jumps) before all three are armed. */
typedef struct {
    BLITZ_CORO;
    atomic_int *seq;
    blitz_task *kids[3];
    int i;
    int order[3];
    uint64_t start[3], woke[3];
} tm_order_parent;

static blitz_poll tm_order_parent_poll(blitz_cx *cx, void *p) {
    tm_order_parent *s = p;
    static const int secs[3] = {3, 1, 2};
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < 3; s->i++) {
        tm_ordered o;
        memset(&o, 0, sizeof o);
        o.dur = secs[s->i] * BLITZ_SEC;
        o.seq = s->seq;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), tm_ordered_poll, &o, sizeof o, &s->kids[s->i]));
    }
    for (s->i = 0; s->i < 3; s->i++) {
        BLITZ_AWAIT(s, blitz_join(cx, s->kids[s->i]));
        CHECK_EQ(blitz_task_status(s->kids[s->i]), BLITZ_OK);
        tm_ordered *o = blitz_task_state(s->kids[s->i]);
        CHECK_NOT_NULL(o);
        s->order[s->i] = o->order;
        s->start[s->i] = o->start;
        s->woke[s->i] = o->woke;
        CHECK_OK(blitz_task_release(&s->kids[s->i]));
    }
    BLITZ_END(s);
}

static int time_paused_order(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    uint64_t v0 = blitz_time_now(rt);
    atomic_int seq;
    atomic_store(&seq, 0);
    tm_order_parent s;
    memset(&s, 0, sizeof s);
    s.seq = &seq;
    double t0 = tu_now();
    CHECK_OK(blitz_runtime_run(rt, tm_order_parent_poll, &s, sizeof s));
    CHECK_LT(tu_now() - t0, 1.0);
    if (getenv("TM_DEBUG"))
        for (int i = 0; i < 3; i++)
            fprintf(stderr, "# child %d: order %d start %+lld woke %+lld\n", i, s.order[i],
                    (long long)(s.start[i] - v0), (long long)(s.woke[i] - v0));
    /* Sleeping 3, 1, 2 s: they wake 3rd, 1st, 2nd, each exactly on time. */
    CHECK_EQ(s.order[0], 2);
    CHECK_EQ(s.order[1], 0);
    CHECK_EQ(s.order[2], 1);
    static const int secs[3] = {3, 1, 2};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(s.start[i], v0);
        CHECK_EQ(s.woke[i], v0 + (uint64_t)(secs[i] * BLITZ_SEC));
    }
    CHECK_EQ(blitz_time_now(rt), v0 + (uint64_t)(3 * BLITZ_SEC));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TM_FLAVOR_TESTS(time_paused_order)

/* blitz_time_advance fires exactly the due timers. The runtime is kept
 * busy (a yield loop on one worker, or not driven at all on current-thread)
 * so that it never jumps the clock by itself. */
typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    atomic_int *armed, *woke_flag;
    uint64_t start, woke;
} tm_adv_sleeper;

static blitz_poll tm_adv_sleeper_poll(blitz_cx *cx, void *p) {
    tm_adv_sleeper *s = p;
    BLITZ_BEGIN(s);
    s->start = blitz_cx_now(cx);
    BLITZ_AWAIT(s, (atomic_store(s->armed, 1), blitz_sleep(cx, &s->timer, 10 * BLITZ_MSEC)));
    s->woke = blitz_cx_now(cx);
    atomic_store(s->woke_flag, 1);
    BLITZ_END(s);
}

typedef struct {
    atomic_int running, stop;
} tm_keeper;

static blitz_poll tm_keeper_poll(blitz_cx *cx, void *p) {
    tm_keeper *k = *(tm_keeper **)p;
    atomic_store(&k->running, 1);
    if (atomic_load(&k->stop))
        return BLITZ_READY;
    blitz_cx_yield(cx);
    return BLITZ_PENDING;
}

static int time_advance_fires_due(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    int ct = f.flavor == BLITZ_CURRENT_THREAD;
    tm_keeper k;
    memset(&k, 0, sizeof k);
    tm_keeper *kp = &k;
    blitz_task *keeper = NULL;
    if (!ct) {
        CHECK_OK(blitz_spawn(rt, tm_keeper_poll, &kp, sizeof kp, &keeper));
        TU_WAIT_GE(&k.running, 1, 5.0);
    }
    atomic_int armed, woke;
    atomic_store(&armed, 0);
    atomic_store(&woke, 0);
    tm_adv_sleeper s;
    memset(&s, 0, sizeof s);
    s.armed = &armed;
    s.woke_flag = &woke;
    uint64_t v0 = blitz_time_now(rt);
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, tm_adv_sleeper_poll, &s, sizeof s, &h));
    if (ct)
        tt_drive_ct(rt);
    TU_WAIT_GE(&armed, 1, 5.0);
    tu_sleep_ms(20);
    CHECK_EQ(blitz_time_now(rt), v0);
    CHECK_EQ(tu_ldi(&woke), 0);

    CHECK_OK(blitz_time_advance(rt, 9 * BLITZ_MSEC));
    CHECK_EQ(blitz_time_now(rt), v0 + (uint64_t)(9 * BLITZ_MSEC));
    if (ct)
        tt_drive_ct(rt);
    tu_sleep_ms(20);
    CHECK_EQ(tu_ldi(&woke), 0);
    CHECK_EQ(blitz_task_status(h), BLITZ_EAGAIN);

    CHECK_OK(blitz_time_advance(rt, 1 * BLITZ_MSEC));
    CHECK_EQ(blitz_time_now(rt), v0 + (uint64_t)(10 * BLITZ_MSEC));
    if (ct)
        tt_drive_ct(rt);
    TU_WAIT_GE(&woke, 1, 5.0);
    CHECK_OK(blitz_join_blocking(h));
    tm_adv_sleeper *r = blitz_task_state(h);
    CHECK_NOT_NULL(r);
    CHECK_EQ(r->start, v0);
    CHECK_EQ(r->woke, v0 + (uint64_t)(10 * BLITZ_MSEC));
    CHECK_OK(blitz_task_release(&h));
    /* advance(0) is fine and changes nothing. */
    CHECK_OK(blitz_time_advance(rt, 0));
    CHECK_EQ(blitz_time_now(rt), v0 + (uint64_t)(10 * BLITZ_MSEC));
    if (!ct) {
        atomic_store(&k.stop, 1);
        CHECK_OK(blitz_join_blocking(keeper));
        CHECK_OK(blitz_task_release(&keeper));
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TM_FLAVOR_TESTS(time_advance_fires_due)

BLITZ_TEST(time_advance_einval) {
    blitz_runtime *real = tu_rt_new(TU_MT2);
    blitz_runtime *paused = tu_rt_paused(TU_CT, 1);
    CHECK_EQ(blitz_time_advance(real, BLITZ_MSEC), BLITZ_EINVAL);
    CHECK_EQ(blitz_time_advance(real, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_time_advance(NULL, BLITZ_MSEC), BLITZ_EINVAL);
    uint64_t v0 = blitz_time_now(paused);
    CHECK_EQ(blitz_time_advance(paused, -1), BLITZ_EINVAL);
    CHECK_EQ(blitz_time_advance(paused, INT64_MIN), BLITZ_EINVAL);
    CHECK_EQ(blitz_time_now(paused), v0);
    CHECK_OK(blitz_time_advance(paused, 5 * BLITZ_SEC));
    CHECK_EQ(blitz_time_now(paused), v0 + (uint64_t)(5 * BLITZ_SEC));
    /* A huge advance saturates instead of wrapping. */
    CHECK_OK(blitz_time_advance(paused, INT64_MAX));
    CHECK_OK(blitz_time_advance(paused, INT64_MAX));
    CHECK_OK(blitz_time_advance(paused, INT64_MAX));
    CHECK(blitz_time_now(paused) == BLITZ_TIME_NEVER);
    CHECK_OK(blitz_runtime_free(real));
    CHECK_OK(blitz_runtime_free(paused));
    return 0;
}

/* ---- timeouts -------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    int64_t child_ns; /* < 0: the child never finishes */
    tt_probe *pr;
    blitz_task *child;
    uint64_t start, end;
    int expired, armed_after;
} tm_timeout_parent;

static blitz_poll tm_timeout_parent_poll(blitz_cx *cx, void *p) {
    tm_timeout_parent *s = p;
    BLITZ_BEGIN(s);
    s->start = blitz_cx_now(cx);
    if (s->child_ns >= 0) {
        tm_sleeper c;
        memset(&c, 0, sizeof c);
        c.dur = s->child_ns;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), tm_sleeper_poll, &c, sizeof c, &s->child));
    } else {
        s->child = tt_spawn(blitz_cx_runtime(cx), CM_FOREVER, NULL, s->pr);
    }
    s->timer.expired = -1;
    BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, 50 * BLITZ_MSEC, blitz_join(cx, s->child)));
    s->end = blitz_cx_now(cx);
    s->expired = s->timer.expired;
    s->armed_after = blitz_timer_armed(&s->timer);
    if (s->expired) {
        blitz_join_cancel(cx, s->child);
        CHECK_OK(blitz_task_cancel(s->child));
    } else {
        CHECK_EQ(blitz_task_status(s->child), BLITZ_OK);
    }
    CHECK_OK(blitz_task_release(&s->child));
    BLITZ_END(s);
}

static int time_timeout(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    /* In time: the child sleeps 5 ms of the 50. */
    tm_timeout_parent s;
    memset(&s, 0, sizeof s);
    s.child_ns = 5 * BLITZ_MSEC;
    CHECK_OK(blitz_runtime_run(rt, tm_timeout_parent_poll, &s, sizeof s));
    CHECK_EQ(s.expired, 0);
    CHECK_EQ(s.armed_after, 0);
    CHECK_EQ(s.end - s.start, (uint64_t)(5 * BLITZ_MSEC));
    /* The disarmed timer does not fire later: the clock does not jump to
     * the stale 50 ms deadline (a spurious jump would show at the next
     * run's start). */
    uint64_t after = blitz_time_now(rt);
    CHECK_EQ(after, s.end);

    /* Never: the timeout wins after exactly 50 ms; the child is cancelled. */
    tt_probe pr;
    memset(&pr, 0, sizeof pr);
    memset(&s, 0, sizeof s);
    s.child_ns = -1;
    s.pr = &pr;
    CHECK_OK(blitz_runtime_run(rt, tm_timeout_parent_poll, &s, sizeof s));
    CHECK_EQ(s.expired, 1);
    CHECK_EQ(s.armed_after, 0);
    CHECK_EQ(s.end - s.start, (uint64_t)(50 * BLITZ_MSEC));
    CHECK_EQ(s.start, after);
    TU_WAIT_GE(&pr.drops, 1, 5.0);
    CHECK_EQ(tu_ldi(&pr.drops), 1);
    CHECK_EQ(tu_ldi(&pr.polls), 1);
    CHECK_EQ(tu_ldl(&pr.done), 0);
    tm_wait_no_tasks(rt);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TM_FLAVOR_TESTS(time_timeout)

/* ---- intervals ---------------------------------------------------------------- */

#define TM_TICKS 8

typedef struct {
    BLITZ_CORO;
    blitz_interval iv;
    blitz_timer nap;
    blitz_missed_tick policy;
    int i;
    uint64_t t0;
    uint64_t at[TM_TICKS], due[TM_TICKS];
} tm_ticker;

static blitz_poll tm_ticker_poll(blitz_cx *cx, void *p) {
    tm_ticker *s = p;
    BLITZ_BEGIN(s);
    s->t0 = blitz_cx_now(cx);
    CHECK_OK(blitz_interval_init(&s->iv, s->t0, 10 * BLITZ_MSEC, s->policy));
    for (s->i = 0; s->i < TM_TICKS; s->i++) {
        BLITZ_AWAIT(s, blitz_interval_tick(cx, &s->iv));
        s->at[s->i] = blitz_cx_now(cx) - s->t0;
        s->due[s->i] = s->iv.last_tick - s->t0;
        /* Miss ticks: longer than the period after tick 0 and tick 3. */
        if (s->i == 0)
            BLITZ_AWAIT(s, blitz_sleep(cx, &s->nap, 35 * BLITZ_MSEC));
        if (s->i == 3)
            BLITZ_AWAIT(s, blitz_sleep(cx, &s->nap, 25 * BLITZ_MSEC));
    }
    BLITZ_END(s);
}

static int time_interval(tu_flavor f) {
    static const uint64_t at[3][TM_TICKS] = {
        {0, 35, 35, 35, 60, 60, 60, 70},   /* burst */
        {0, 35, 45, 55, 80, 90, 100, 110}, /* delay */
        {0, 35, 40, 50, 75, 80, 90, 100},  /* skip */
    };
    static const uint64_t due[3][TM_TICKS] = {
        {0, 10, 20, 30, 40, 50, 60, 70},
        {0, 10, 45, 55, 65, 90, 100, 110},
        {0, 10, 40, 50, 60, 80, 90, 100},
    };
    static const blitz_missed_tick pol[3] = {BLITZ_MISSED_BURST, BLITZ_MISSED_DELAY,
                                             BLITZ_MISSED_SKIP};
    for (int p = 0; p < 3; p++) {
        blitz_runtime *rt = tu_rt_paused(f, 1);
        tm_ticker s;
        memset(&s, 0, sizeof s);
        s.policy = pol[p];
        CHECK_OK(blitz_runtime_run(rt, tm_ticker_poll, &s, sizeof s));
        for (int i = 0; i < TM_TICKS; i++) {
            if (s.at[i] != (uint64_t)at[p][i] * BLITZ_MSEC ||
                s.due[i] != (uint64_t)due[p][i] * BLITZ_MSEC)
                fprintf(stderr, "# policy %d tick %d: at %.3f ms (want %d), due %.3f (want %d)\n",
                        p, i, (double)s.at[i] / 1e6, (int)at[p][i], (double)s.due[i] / 1e6,
                        (int)due[p][i]);
            CHECK_EQ(s.at[i], (uint64_t)at[p][i] * BLITZ_MSEC);
            CHECK_EQ(s.due[i], (uint64_t)due[p][i] * BLITZ_MSEC);
        }
        CHECK(!blitz_timer_armed(&s.iv.timer));
        CHECK_OK(blitz_runtime_free(rt));
    }
    return 0;
}
TM_FLAVOR_TESTS(time_interval)

/* MISSED_DELAY: a tick less than 5 ms late is on time (the grid is kept),
 * one 5 ms or more late restarts the schedule. */
typedef struct {
    BLITZ_CORO;
    blitz_interval iv;
    blitz_timer nap;
    int i;
    uint64_t t0;
    uint64_t at[5], due[5];
} tm_delay_ticker;

static blitz_poll tm_delay_ticker_poll(blitz_cx *cx, void *p) {
    tm_delay_ticker *s = p;
    BLITZ_BEGIN(s);
    s->t0 = blitz_cx_now(cx);
    CHECK_OK(blitz_interval_init(&s->iv, s->t0, 10 * BLITZ_MSEC, BLITZ_MISSED_DELAY));
    for (s->i = 0; s->i < 5; s->i++) {
        BLITZ_AWAIT(s, blitz_interval_tick(cx, &s->iv));
        s->at[s->i] = blitz_cx_now(cx) - s->t0;
        s->due[s->i] = s->iv.last_tick - s->t0;
        if (s->i == 0)
            BLITZ_AWAIT(s, blitz_sleep(cx, &s->nap, 13 * BLITZ_MSEC));
        if (s->i == 2)
            BLITZ_AWAIT(s, blitz_sleep(cx, &s->nap, 16 * BLITZ_MSEC));
    }
    BLITZ_END(s);
}

static int time_interval_delay_grace(tu_flavor f) {
    static const uint64_t at[5] = {0, 13, 20, 36, 46}, due[5] = {0, 10, 20, 30, 46};
    blitz_runtime *rt = tu_rt_paused(f, 1);
    tm_delay_ticker s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, tm_delay_ticker_poll, &s, sizeof s));
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(s.at[i], at[i] * BLITZ_MSEC);
        CHECK_EQ(s.due[i], due[i] * BLITZ_MSEC);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TM_FLAVOR_TESTS(time_interval_delay_grace)

/* ---- cancelling timers ------------------------------------------------------- */

typedef struct {
    int step;
    blitz_timer a, b, never;
    tu_gate *gate;
    atomic_int *polls;
    int errors;
} tm_cancel_task;

#define TM_EXPECT(s, cond)                                               \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "# %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            (s)->errors++;                                               \
        }                                                                \
    } while (0)

static blitz_poll tm_cancel_task_poll(blitz_cx *cx, void *p) {
    tm_cancel_task *s = p;
    atomic_fetch_add(s->polls, 1);
    switch (s->step) {
    case 0:
        /* Armed, cancelled twice; never armed again by itself. */
        TM_EXPECT(s, blitz_sleep(cx, &s->a, 5 * BLITZ_MSEC) == BLITZ_PENDING);
        TM_EXPECT(s, blitz_timer_armed(&s->a));
        blitz_timer_cancel(NULL, &s->a);
        TM_EXPECT(s, !blitz_timer_armed(&s->a));
        blitz_timer_cancel(NULL, &s->a);
        TM_EXPECT(s, !blitz_timer_armed(&s->a));
        /* Sleeping "forever" pends (the deadline saturates, no wrap). */
        TM_EXPECT(s, blitz_sleep(cx, &s->never, INT64_MAX) == BLITZ_PENDING);
        TM_EXPECT(s, blitz_timer_armed(&s->never));
        TM_EXPECT(s, s->never.deadline >= blitz_cx_now(cx));
        /* Wait on a gate only: the cancelled timer must not wake us. */
        s->step = 1;
        if (tu_gate_wait(cx, s->gate) == BLITZ_PENDING)
            return BLITZ_PENDING;
        TEST_FALLTHROUGH;
    case 1:
        if (tu_gate_wait(cx, s->gate) == BLITZ_PENDING)
            return BLITZ_PENDING;
        TM_EXPECT(s, blitz_timer_armed(&s->never));
        blitz_timer_cancel(NULL, &s->never);
        TM_EXPECT(s, !blitz_timer_armed(&s->never));
        s->step = 2;
        TEST_FALLTHROUGH;
    case 2:
        /* A timer that fires, then is cancelled after firing. */
        if (blitz_sleep(cx, &s->b, 1 * BLITZ_MSEC) == BLITZ_PENDING)
            return BLITZ_PENDING;
        TM_EXPECT(s, !blitz_timer_armed(&s->b));
        blitz_timer_cancel(NULL, &s->b);
        blitz_timer_cancel(NULL, &s->b);
        TM_EXPECT(s, !blitz_timer_armed(&s->b));
        /* The timer is reusable after a cancel. */
        s->step = 3;
        TEST_FALLTHROUGH;
    default:
        if (blitz_sleep(cx, &s->a, 1 * BLITZ_MSEC) == BLITZ_PENDING)
            return BLITZ_PENDING;
        TM_EXPECT(s, !blitz_timer_armed(&s->a));
        return BLITZ_READY;
    }
}

static int time_cancel(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    int ct = f.flavor == BLITZ_CURRENT_THREAD;
    tu_gate g;
    tu_gate_init(&g);
    atomic_int polls;
    atomic_store(&polls, 0);
    tm_cancel_task s;
    memset(&s, 0, sizeof s);
    s.gate = &g;
    s.polls = &polls;
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, tm_cancel_task_poll, &s, sizeof s, &h));
    if (ct)
        tt_drive_ct(rt);
    TU_WAIT_GE(&g.waits, 1, 5.0);
    /* Well past the cancelled 5 ms deadline: still not woken. */
    tu_sleep_ms(50);
    if (ct)
        tt_drive_ct(rt);
    tu_sleep_ms(10);
    CHECK_EQ(tu_ldi(&polls), 1);
    CHECK_EQ(blitz_task_status(h), BLITZ_EAGAIN);
    tu_gate_open(&g);
    CHECK_OK(blitz_join_blocking(h));
    tm_cancel_task *r = blitz_task_state(h);
    CHECK_NOT_NULL(r);
    CHECK_EQ(r->errors, 0);
    CHECK_EQ(r->step, 3);
    CHECK_OK(blitz_task_release(&h));
    /* No timer kept a reference to the task. */
    tm_wait_no_tasks(rt);
    tu_gate_destroy(&g);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TM_FLAVOR_TESTS(time_cancel)

/* Cancel from another thread racing with the timer firing. The task sleeps
 * 1 ms, publishes its timer and a waker; the test thread cancels the timer
 * and then wakes the task, which finishes either way. */
typedef struct {
    pthread_mutex_t lock;
    int published, cancelled, has_waker;
    blitz_waker waker;
    blitz_timer *timer;
} tm_race_shared;

typedef struct {
    blitz_timer timer;
    tm_race_shared *sh;
    int step, fired, polls;
} tm_race_task;

static blitz_poll tm_race_task_poll(blitz_cx *cx, void *p) {
    tm_race_task *s = p;
    s->polls++;
    if (s->step == 0) {
        s->step = 1;
        if (blitz_sleep(cx, &s->timer, 1 * BLITZ_MSEC) == BLITZ_READY) {
            s->fired = 1;
            return BLITZ_READY;
        }
        blitz_waker w = blitz_cx_waker(cx);
        pthread_mutex_lock(&s->sh->lock);
        s->sh->waker = blitz_waker_clone(&w);
        s->sh->has_waker = 1;
        s->sh->timer = &s->timer;
        s->sh->published = 1;
        pthread_mutex_unlock(&s->sh->lock);
        return BLITZ_PENDING;
    }
    pthread_mutex_lock(&s->sh->lock);
    int cancelled = s->sh->cancelled;
    pthread_mutex_unlock(&s->sh->lock);
    if (cancelled) {
        /* A poll that ran between the main thread's cancel and its flag may
         * have re-armed the sleep: a finishing task disarms its timer. */
        blitz_timer_cancel(NULL, &s->timer);
        return BLITZ_READY;
    }
    /* Not cancelled yet: woken by the timer (or spuriously). */
    if (blitz_sleep(cx, &s->timer, 1 * BLITZ_MSEC) == BLITZ_READY) {
        s->fired = 1;
        return BLITZ_READY;
    }
    return BLITZ_PENDING;
}

static int time_cancel_race(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    long n = test_scaled(2000);
    long fired = 0;
    uint32_t seed = 777;
    for (long i = 0; i < n; i++) {
        tm_race_shared sh;
        memset(&sh, 0, sizeof sh);
        pthread_mutex_init(&sh.lock, NULL);
        tm_race_task t;
        memset(&t, 0, sizeof t);
        t.sh = &sh;
        blitz_task *h = NULL;
        CHECK_OK(blitz_spawn(rt, tm_race_task_poll, &t, sizeof t, &h));
        double deadline = tu_now() + 5.0 * tu_timeout_mult();
        for (;;) {
            pthread_mutex_lock(&sh.lock);
            int pub = sh.published;
            pthread_mutex_unlock(&sh.lock);
            if (pub || blitz_task_status(h) != BLITZ_EAGAIN)
                break;
            CHECK_LT(tu_now(), deadline);
            sched_yield();
        }
        /* Land around the 1 ms deadline. */
        seed = seed * 1103515245u + 12345u;
        double until = tu_now() + (double)((seed >> 16) % 1500) * 1e-6;
        while (tu_now() < until)
            tu_spin_pause();
        /* Flag first: a poll from here on finishes instead of sleeping
         * again. A poll already past the flag may re-arm after the cancel
         * below; that task disarms on finishing. */
        pthread_mutex_lock(&sh.lock);
        sh.cancelled = 1;
        blitz_timer *tm = sh.timer;
        pthread_mutex_unlock(&sh.lock);
        if (tm) {
            blitz_timer_cancel(NULL, tm);
            blitz_timer_cancel(NULL, tm);
        }
        pthread_mutex_lock(&sh.lock);
        int had = sh.has_waker;
        blitz_waker w = sh.waker;
        sh.has_waker = 0;
        pthread_mutex_unlock(&sh.lock);
        if (had)
            blitz_waker_wake(w);
        CHECK_OK(blitz_join_blocking(h));
        tm_race_task *r = blitz_task_state(h);
        CHECK_NOT_NULL(r);
        fired += r->fired;
        CHECK_LE(r->polls, 3);
        CHECK(!blitz_timer_armed(&r->timer));
        CHECK_OK(blitz_task_release(&h));
        pthread_mutex_destroy(&sh.lock);
    }
    fprintf(stderr, "# %ld of %ld fired before the cancel\n", fired, n);
    tm_wait_no_tasks(rt);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(time_cancel_race_mt2) {
    return time_cancel_race(TU_MT2);
}
BLITZ_TEST(time_cancel_race_mt4) {
    return time_cancel_race(TU_MT4);
}

/* ---- bad input ------------------------------------------------------------------ */

typedef struct {
    int errors;
} tm_bad_task;

static blitz_poll tm_bad_task_poll(blitz_cx *cx, void *p) {
    tm_bad_task *s = p;
    blitz_timer t;
    memset(&t, 0, sizeof t);
    TM_EXPECT(s, blitz_sleep(cx, NULL, 5 * BLITZ_MSEC) == BLITZ_READY);
    TM_EXPECT(s, blitz_sleep_until(cx, NULL, BLITZ_TIME_NEVER) == BLITZ_READY);
    TM_EXPECT(s, blitz_timeout(cx, NULL, 5 * BLITZ_MSEC, BLITZ_PENDING) == BLITZ_READY);
    /* Zero and negative durations are "now". */
    TM_EXPECT(s, blitz_sleep(cx, &t, 0) == BLITZ_READY);
    TM_EXPECT(s, !blitz_timer_armed(&t));
    TM_EXPECT(s, blitz_sleep(cx, &t, -5 * BLITZ_SEC) == BLITZ_READY);
    TM_EXPECT(s, blitz_sleep(cx, &t, INT64_MIN) == BLITZ_READY);
    TM_EXPECT(s, !blitz_timer_armed(&t));
    TM_EXPECT(s, blitz_sleep_until(cx, &t, 0) == BLITZ_READY);
    TM_EXPECT(s, blitz_sleep_until(cx, &t, blitz_cx_now(cx)) == BLITZ_READY);
    TM_EXPECT(s, !blitz_timer_armed(&t));
    /* A timeout already past: the deadline wins at once. */
    t.expired = -1;
    TM_EXPECT(s, blitz_timeout(cx, &t, -1, BLITZ_PENDING) == BLITZ_READY);
    TM_EXPECT(s, t.expired == 1);
    TM_EXPECT(s, !blitz_timer_armed(&t));
    /* A ready op wins even with a past deadline. */
    t.expired = -1;
    TM_EXPECT(s, blitz_timeout(cx, &t, 0, BLITZ_READY) == BLITZ_READY);
    TM_EXPECT(s, t.expired == 0);
    /* An interval whose start is past ticks at once. */
    blitz_interval iv;
    TM_EXPECT(s, blitz_interval_init(&iv, 0, BLITZ_MSEC, BLITZ_MISSED_SKIP) == BLITZ_OK);
    TM_EXPECT(s, blitz_interval_tick(cx, &iv) == BLITZ_READY);
    TM_EXPECT(s, iv.last_tick == 0);
    TM_EXPECT(s, iv.next > blitz_cx_now(cx) - 1);
    TM_EXPECT(s, blitz_interval_tick(cx, NULL) == BLITZ_READY);
    blitz_timer_cancel(NULL, &iv.timer);
    /* The clock is the runtime's. */
    uint64_t a = blitz_cx_now(cx), b = blitz_time_now(blitz_cx_runtime(cx));
    TM_EXPECT(s, b >= a);
    return BLITZ_READY;
}

static int time_bad_input(tu_flavor f) {
    blitz_timer t;
    memset(&t, 0, sizeof t);
    CHECK_EQ(blitz_sleep(NULL, &t, 5 * BLITZ_MSEC), BLITZ_READY);
    CHECK_EQ(blitz_sleep_until(NULL, &t, BLITZ_TIME_NEVER), BLITZ_READY);
    CHECK_EQ(blitz_timeout(NULL, &t, 5 * BLITZ_MSEC, BLITZ_PENDING), BLITZ_READY);
    CHECK(!blitz_timer_armed(&t));
    CHECK(!blitz_timer_armed(NULL));
    blitz_timer_cancel(NULL, NULL); /* does nothing */
    blitz_timer_cancel(NULL, &t);   /* never armed */
    CHECK_EQ(blitz_interval_tick(NULL, NULL), BLITZ_READY);

    blitz_interval iv;
    CHECK_EQ(blitz_interval_init(NULL, 0, BLITZ_MSEC, BLITZ_MISSED_BURST), BLITZ_EINVAL);
    CHECK_EQ(blitz_interval_init(&iv, 0, 0, BLITZ_MISSED_BURST), BLITZ_EINVAL);
    CHECK_EQ(blitz_interval_init(&iv, 0, -1, BLITZ_MISSED_BURST), BLITZ_EINVAL);
    CHECK_EQ(blitz_interval_init(&iv, 0, INT64_MIN, BLITZ_MISSED_DELAY), BLITZ_EINVAL);
    CHECK_EQ(blitz_interval_init(&iv, 0, BLITZ_MSEC, (blitz_missed_tick)3), BLITZ_EINVAL);
    CHECK_EQ(blitz_interval_init(&iv, 0, BLITZ_MSEC, (blitz_missed_tick)-1), BLITZ_EINVAL);
    CHECK_OK(blitz_interval_init(&iv, 42, BLITZ_MSEC, BLITZ_MISSED_SKIP));
    CHECK_EQ(iv.next, 42);
    CHECK_EQ(iv.period, (uint64_t)BLITZ_MSEC);

    /* Deadlines saturate, never wrap. */
    CHECK_EQ(blitz_deadline_after(100, 0), 100);
    CHECK_EQ(blitz_deadline_after(100, -7), 100);
    CHECK_EQ(blitz_deadline_after(100, INT64_MIN), 100);
    CHECK_EQ(blitz_deadline_after(100, 5), 105);
    CHECK(blitz_deadline_after(100, INT64_MAX) == 100 + (uint64_t)INT64_MAX);
    CHECK(blitz_deadline_after(UINT64_MAX - 5, 10) == BLITZ_TIME_NEVER);
    CHECK(blitz_deadline_after(UINT64_MAX - 10, 10) == BLITZ_TIME_NEVER);
    CHECK(blitz_deadline_after(UINT64_MAX - 11, 10) == UINT64_MAX - 1);
    CHECK(blitz_deadline_after(UINT64_MAX, 1) == BLITZ_TIME_NEVER);
    CHECK(blitz_deadline_after(UINT64_MAX / 2 + 10, INT64_MAX) == BLITZ_TIME_NEVER);
    CHECK(blitz_deadline_after(UINT64_MAX, INT64_MAX) == BLITZ_TIME_NEVER);

    /* Without a runtime: the real monotonic clock. */
    uint64_t r0 = blitz_time_now(NULL);
    tu_sleep_ms(2);
    uint64_t r1 = blitz_cx_now(NULL);
    CHECK_GE(r1 - r0, (uint64_t)(2 * BLITZ_MSEC));

    blitz_runtime *rt = tu_rt_new(f);
    tm_bad_task s = {0};
    CHECK_OK(blitz_runtime_run(rt, tm_bad_task_poll, &s, sizeof s));
    CHECK_EQ(s.errors, 0);
    tm_wait_no_tasks(rt);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TM_FLAVOR_TESTS(time_bad_input)

/* ---- shutdown with armed timers --------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    atomic_int *armed, *drops;
} tm_hour_task;

static blitz_poll tm_hour_task_poll(blitz_cx *cx, void *p) {
    tm_hour_task *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, (atomic_fetch_add(s->armed, 1), blitz_sleep(cx, &s->timer, 3600 * BLITZ_SEC)));
    BLITZ_END(s);
}

static void tm_hour_task_drop(void *p) {
    tm_hour_task *s = p;
    atomic_fetch_add(s->drops, 1);
}

static int time_shutdown_armed(tu_flavor f) {
    for (int variant = 0; variant < 2; variant++) {
        blitz_runtime *rt = tu_rt_new(f);
        enum { N = 50, KEEP = 10 };
        atomic_int armed, drops;
        atomic_store(&armed, 0);
        atomic_store(&drops, 0);
        blitz_task *h[KEEP];
        for (int i = 0; i < N; i++) {
            tm_hour_task s;
            memset(&s, 0, sizeof s);
            s.armed = &armed;
            s.drops = &drops;
            blitz_spawn_opts o;
            memset(&o, 0, sizeof o);
            o.poll = tm_hour_task_poll;
            o.state = &s;
            o.size = sizeof s;
            o.drop = tm_hour_task_drop;
            CHECK_OK(blitz_spawn_ex(rt, &o, i < KEEP ? &h[i] : NULL));
        }
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        TU_WAIT_GE(&armed, N, 5.0);
        double t0 = tu_now();
        if (variant == 0) {
            /* Handles released first: the tasks run on, detached. */
            for (int i = 0; i < KEEP; i++)
                CHECK_OK(blitz_task_release(&h[i]));
            CHECK_OK(blitz_runtime_free(rt));
        } else {
            /* Shut down while the handles are held: each is cancelled. */
            CHECK_OK(blitz_runtime_shutdown(rt));
            for (int i = 0; i < KEEP; i++) {
                CHECK_EQ(blitz_task_status(h[i]), BLITZ_ECANCELED);
                CHECK_EQ(blitz_join_blocking(h[i]), BLITZ_ECANCELED);
                CHECK_OK(blitz_task_release(&h[i]));
            }
            CHECK_OK(blitz_runtime_free(rt));
        }
        double took = tu_now() - t0;
        fprintf(stderr, "# variant %d: shutdown + free took %.3f s\n", variant, took);
        CHECK_LT(took, 1.0);
        CHECK_EQ(tu_ldi(&drops), N);
    }
    return 0;
}
TM_FLAVOR_TESTS(time_shutdown_armed)
