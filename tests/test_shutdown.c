/* Shutdown and free: every unfinished task is cancelled and freed (drop
 * functions run, LSan sees no leak), waiters wake with ECANCELED, spawning
 * fails with ESHUTDOWN, and no poll runs once shutdown has returned. */
#include "test_tasks.h"

/* Spawns detached tasks until the runtime refuses with ESHUTDOWN (or two
 * seconds pass), then lets the blocked workers go: so the workers finish
 * their polls only after the shutdown flag is up. */
typedef struct {
    blitz_runtime *rt;
    atomic_int *release; /* set once spawning failed */
    tt_probe *pr;        /* shared by every task it spawned */
    long spawned;
    int saw_shutdown;
    int last_rc;
} shut_spawner;

static void *shut_spawner_main(void *p) {
    shut_spawner *a = p;
    double deadline = tu_now() + 2.0 * tu_timeout_mult();
    while (tu_now() < deadline) {
        tt_task s = {CM_READY, THEN_READY, 7, NULL, NULL, a->pr};
        blitz_spawn_opts o = {tt_task_poll, &s, sizeof s, tt_task_drop, NULL, NULL, NULL};
        int rc = blitz_spawn_ex(a->rt, &o, NULL);
        a->last_rc = rc;
        if (rc == BLITZ_ESHUTDOWN) {
            a->saw_shutdown = 1;
            break;
        }
        CHECK_OK(rc);
        a->spawned++;
        tu_sleep_ms(1);
    }
    if (a->release)
        atomic_store(a->release, 1);
    return NULL;
}

static blitz_poll shut_nop_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_READY;
}

static void shut_nop_fn(void *p) {
    (void)p;
}

/* Everything a shut-down runtime refuses, and what it still answers. */
static void shut_check_refuses(blitz_runtime *rt) {
    char st[8] = {0};
    blitz_task *h = NULL;
    CHECK_EQ(blitz_spawn(rt, shut_nop_poll, st, sizeof st, &h), BLITZ_ESHUTDOWN);
    CHECK_EQ(blitz_spawn(rt, shut_nop_poll, st, sizeof st, NULL), BLITZ_ESHUTDOWN);
    blitz_spawn_opts o = {shut_nop_poll, st, sizeof st, NULL, NULL, NULL, NULL};
    CHECK_EQ(blitz_spawn_ex(rt, &o, &h), BLITZ_ESHUTDOWN);
    CHECK_EQ(blitz_spawn_fn(rt, shut_nop_fn, NULL, &h), BLITZ_ESHUTDOWN);
    CHECK_EQ(blitz_runtime_run(rt, shut_nop_poll, st, sizeof st), BLITZ_ESHUTDOWN);
    CHECK_OK(blitz_runtime_shutdown(rt)); /* idempotent */
    CHECK_OK(blitz_runtime_shutdown(rt));
}

/* Idle, runnable (yielding forever), queued and joining tasks, with and
 * without handles, and a plain thread blocked on one of them. */
static int shutdown_everything(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    int ct = f.flavor == BLITZ_CURRENT_THREAD;
    enum { I = 6, R = 4, Q = 8 };
    tt_probe idle_pr[I], run_pr[R], q_pr[Q], extra_pr;
    memset(idle_pr, 0, sizeof idle_pr);
    memset(run_pr, 0, sizeof run_pr);
    memset(q_pr, 0, sizeof q_pr);
    memset(&extra_pr, 0, sizeof extra_pr);
    blitz_task *idle[I], *run[R], *q[Q];
    for (int i = 0; i < I; i++)
        idle[i] = tt_spawn_ex(rt, CM_FOREVER, THEN_READY, NULL, NULL, &idle_pr[i], i % 2 == 0);
    for (int i = 0; i < R; i++)
        run[i] = tt_spawn_ex(rt, CM_YIELD_LOOP, THEN_READY, NULL, NULL, &run_pr[i], i % 2 == 0);
    blitz_task *joiner = tt_spawn_joiner(rt, idle[0]);
    if (ct)
        tt_drive_ct(rt);
    for (int i = 0; i < I; i++)
        TU_WAIT_GE(&idle_pr[i].polls, 1, 10.0);
    for (int i = 0; i < R; i++)
        TU_WAIT_GE(&run_pr[i].polls, 2, 10.0);

    /* Queued tasks: on a multi-thread runtime the workers are first kept
     * busy, and let go only once the runtime refuses spawns. */
    tt_blockers bl;
    if (!ct)
        tt_block(rt, f.workers, &bl);
    for (int i = 0; i < Q; i++)
        q[i] = tt_spawn_ex(rt, CM_READY, THEN_READY, NULL, NULL, &q_pr[i], i % 2 == 0);
    shut_spawner sp = {rt, ct ? NULL : &bl.release, &extra_pr, 0, 0, 0};
    tu_thread spt;
    tu_thread_start(&spt, shut_spawner_main, &sp);
    tu_sleep_ms(20);

    CHECK_OK(blitz_runtime_shutdown(rt));
    tu_thread_join(&spt);
    CHECK_BASE(sp.saw_shutdown, "spawning never failed with ESHUTDOWN (last rc %d)", sp.last_rc);
    if (!ct)
        TU_WAIT_GE(&bl.finished, f.workers, 5.0);

    /* No poll runs after shutdown returned. */
    int run_polls[R];
    for (int i = 0; i < R; i++)
        run_polls[i] = atomic_load(&run_pr[i].polls);
    tu_sleep_ms(20);
    for (int i = 0; i < R; i++)
        CHECK_EQ(tu_ldi(&run_pr[i].polls), run_polls[i]);
    for (int i = 0; i < I; i++)
        CHECK_EQ(tu_ldi(&idle_pr[i].polls), 1);
    /* The workers finished the poll they were in and ran nothing more:
     * the queued tasks were never polled. */
    for (int i = 0; i < Q; i++)
        CHECK_EQ(tu_ldi(&q_pr[i].polls), 0);
    CHECK_EQ(tu_ldi(&extra_pr.polls), 0);

    /* Every handle reads cancelled, at once, with its state readable. */
    blitz_task *all[I + R + Q];
    int n = 0;
    for (int i = 0; i < I; i++)
        if (idle[i])
            all[n++] = idle[i];
    for (int i = 0; i < R; i++)
        if (run[i])
            all[n++] = run[i];
    for (int i = 0; i < Q; i++)
        if (q[i])
            all[n++] = q[i];
    for (int i = 0; i < n; i++) {
        CHECK_EQ(blitz_task_status(all[i]), BLITZ_ECANCELED);
        CHECK_EQ(blitz_join_blocking(all[i]), BLITZ_ECANCELED);
        CHECK_OK(blitz_task_cancel(all[i]));
        tt_task *s = tt_state(all[i]);
        CHECK_EQ(s->value, 7);
    }
    /* The joiner waited on an idle task: it was idle too, so it was
     * cancelled itself (no poll runs after shutdown to let it finish). */
    CHECK_EQ(blitz_join_blocking(joiner), BLITZ_ECANCELED);
    CHECK_OK(blitz_task_release(&joiner));
    shut_check_refuses(rt);

    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.tasks_alive, n); /* the detached ones are already freed */

    /* A thread that waits now returns at once. (A thread blocked across
     * the shutdown is shutdown_wakes_waiter: here it would help run the
     * queued tasks.) */
    tt_waiter_arg w = {idle[2], 1, 0};
    tu_thread wt;
    tu_thread_start(&wt, tt_waiter_main, &w);
    tu_thread_join(&wt);
    CHECK_EQ(w.rc, BLITZ_ECANCELED);
    for (int i = 0; i < n; i++)
        CHECK_OK(blitz_task_release(&all[i]));
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.tasks_alive, 0);
    CHECK_OK(blitz_runtime_free(rt));

    for (int i = 0; i < I; i++)
        CHECK_EQ(tu_ldi(&idle_pr[i].drops), 1);
    for (int i = 0; i < R; i++)
        CHECK_EQ(tu_ldi(&run_pr[i].drops), 1);
    for (int i = 0; i < Q; i++)
        CHECK_EQ(tu_ldi(&q_pr[i].drops), 1);
    CHECK_EQ(tu_ldi(&extra_pr.drops), sp.spawned);
    return 0;
}
TU_FLAVOR_TESTS(shutdown_everything)

/* A thread blocked in blitz_join_blocking while the runtime has runnable work
 * (on a current-thread runtime that thread is the one polling it): the
 * shutdown stops the polling and wakes the waiter with ECANCELED. */
static int shutdown_wakes_waiter(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    tt_probe a_pr, r_pr[2];
    memset(&a_pr, 0, sizeof a_pr);
    memset(r_pr, 0, sizeof r_pr);
    blitz_task *a = tt_spawn(rt, CM_FOREVER, NULL, &a_pr);
    for (int i = 0; i < 2; i++)
        tt_spawn_ex(rt, CM_YIELD_LOOP, THEN_READY, NULL, NULL, &r_pr[i], 0);
    tt_waiter_arg w = {a, 1, 0};
    tu_thread th;
    tu_thread_start(&th, tt_waiter_main, &w);
    TU_WAIT_GE(&a_pr.polls, 1, 10.0);
    TU_WAIT_GE(&r_pr[0].polls, 10, 10.0);
    TU_WAIT_GE(&r_pr[1].polls, 10, 10.0);
    CHECK_OK(blitz_runtime_shutdown(rt));
    tu_thread_join(&th);
    CHECK_EQ(w.rc, BLITZ_ECANCELED);
    int p0 = atomic_load(&r_pr[0].polls), p1 = atomic_load(&r_pr[1].polls);
    tu_sleep_ms(20);
    CHECK_EQ(tu_ldi(&r_pr[0].polls), p0);
    CHECK_EQ(tu_ldi(&r_pr[1].polls), p1);
    CHECK_EQ(blitz_task_status(a), BLITZ_ECANCELED);
    tt_release_dropped(&a, &a_pr);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(tu_ldi(&r_pr[0].drops), 1);
    CHECK_EQ(tu_ldi(&r_pr[1].drops), 1);
    return 0;
}
TU_FLAVOR_TESTS(shutdown_wakes_waiter)

/* Shutdown waits for a poll in progress: the task's poll is still running
 * when shutdown starts, and has returned when shutdown returns; it is not
 * polled again although it woke itself. */
static int shutdown_waits_for_poll(uint32_t workers) {
    blitz_runtime *rt = tu_rt_new((tu_flavor){BLITZ_MULTI_THREAD, workers});
    tt_probe pr, extra;
    memset(&pr, 0, sizeof pr);
    memset(&extra, 0, sizeof extra);
    blitz_task *a = tt_spawn_ex(rt, CM_SPIN, THEN_WAKE, NULL, NULL, &pr, 1);
    TU_WAIT_GE(&pr.in_poll, 1, 10.0);
    /* The spawner lets the poll go once spawning fails. */
    shut_spawner sp = {rt, &pr.go, &extra, 0, 0, 0};
    tu_thread th;
    tu_thread_start(&th, shut_spawner_main, &sp);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_EQ(tu_ldi(&pr.spin_exited), 1);
    tu_thread_join(&th);
    CHECK_BASE(sp.saw_shutdown, "spawning never failed with ESHUTDOWN (last rc %d)", sp.last_rc);
    CHECK_EQ(tu_ldi(&pr.polls), 1);
    CHECK_EQ(tu_ldl(&pr.done), 0);
    CHECK_EQ(blitz_task_status(a), BLITZ_ECANCELED);
    shut_check_refuses(rt);
    tt_release_dropped(&a, &pr);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(tu_ldi(&extra.drops), sp.spawned);
    return 0;
}
BLITZ_TEST(shutdown_waits_for_poll_mt1) {
    return shutdown_waits_for_poll(1);
}
BLITZ_TEST(shutdown_waits_for_poll_mt2) {
    return shutdown_waits_for_poll(2);
}

/* A task of runtime A joins an idle task of runtime B; shutting B down
 * wakes it with ECANCELED while A runs on. */
static int shutdown_wakes_other_runtime(tu_flavor fa, tu_flavor fb) {
    blitz_runtime *a = tu_rt_new(fa), *b = tu_rt_new(fb);
    tt_probe pr;
    memset(&pr, 0, sizeof pr);
    blitz_task *t = tt_spawn(b, CM_FOREVER, NULL, &pr);
    if (fb.flavor == BLITZ_CURRENT_THREAD)
        tt_drive_ct(b);
    TU_WAIT_GE(&pr.polls, 1, 10.0);
    blitz_task *j = tt_spawn_joiner(a, t);
    if (fa.flavor == BLITZ_CURRENT_THREAD)
        tt_drive_ct(a); /* the joiner waits now */
    CHECK_OK(blitz_runtime_shutdown(b));
    CHECK_EQ(tt_joiner_result(&j), BLITZ_ECANCELED);
    tt_release_dropped(&t, &pr);
    CHECK_OK(blitz_runtime_free(b));
    /* A is untouched. */
    char st[8] = {0};
    CHECK_OK(blitz_runtime_run(a, shut_nop_poll, st, sizeof st));
    CHECK_OK(blitz_runtime_free(a));
    return 0;
}
BLITZ_TEST(shutdown_wakes_other_runtime_mt) {
    return shutdown_wakes_other_runtime(TU_MT2, TU_MT2);
}
BLITZ_TEST(shutdown_wakes_other_runtime_ct) {
    return shutdown_wakes_other_runtime(TU_CT, TU_CT);
}

/* blitz_runtime_free without a shutdown first and without releasing the
 * handles, with a waker still held: every block is freed, every drop
 * function runs once (LSan checks the rest). */
static int free_without_shutdown(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    int ct = f.flavor == BLITZ_CURRENT_THREAD;
    enum { N = 12 };
    tt_probe pr[N];
    memset(pr, 0, sizeof pr);
    tu_gate gate;
    tu_gate_init(&gate);
    blitz_task *h[N];
    for (int i = 0; i < N; i++) {
        int mode = i % 4 == 0   ? CM_FOREVER
                   : i % 4 == 1 ? CM_YIELD_LOOP
                   : i % 4 == 2 ? CM_READY
                                : CM_FOREVER;
        h[i] = tt_spawn_ex(rt, mode, THEN_READY, NULL, NULL, &pr[i], i % 3 != 0);
    }
    tt_probe gpr;
    memset(&gpr, 0, sizeof gpr);
    blitz_task *g = tt_spawn(rt, CM_GATE, &gate, &gpr);
    if (ct)
        tt_drive_ct(rt);
    TU_WAIT_GE(&gate.waits, 1, 10.0);
    CHECK_OK(blitz_runtime_free(rt));
    (void)h;
    (void)g;
    for (int i = 0; i < N; i++)
        CHECK_BASE(tu_ldi(&pr[i].drops) == 1, "task %d: drop ran %d times", i,
                   tu_ldi(&pr[i].drops));
    CHECK_EQ(tu_ldi(&gpr.drops), 1);
    /* The gate's waker died with the runtime: forget it, do not drop it. */
    gate.has_waker = 0;
    tu_gate_destroy(&gate);
    return 0;
}
TU_FLAVOR_TESTS(free_without_shutdown)

/* Many tasks in every state at once. */
static void shut_count_drop(void *p) {
    atomic_fetch_add(*(atomic_long **)p, 1);
}

static int shutdown_many(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    long n = test_scaled(40000);
    atomic_long drops = 0;
    atomic_long *dp = &drops;
    blitz_spawn_opts o = {tu_forever_poll, &dp, sizeof dp, shut_count_drop, NULL, NULL, NULL};
    for (long i = 0; i < n; i++) {
        CHECK_OK(blitz_spawn_ex(rt, &o, NULL));
        if (f.flavor == BLITZ_CURRENT_THREAD && i == n / 2)
            tt_drive_ct(rt); /* half idle, half queued */
    }
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(tu_ldl(&drops), n);
    return 0;
}
TU_FLAVOR_TESTS(shutdown_many)

/* Plain threads spawn tasks with cancel hooks and drop functions (and
 * blocking tasks) without pause while another thread shuts the runtime
 * down: every spawn either fails with nothing run, or its task completes
 * or is cancelled with its state intact when the hooks see it, and its
 * drop runs exactly once. */
#define SHUT_RACE_MAGIC 0x5eed5eed5eed5eedull

typedef struct {
    uint64_t magic;
    char pad[200];
    uint64_t magic2;
    atomic_long *bad;
    atomic_long *drops;
    blitz_timer timer;
    BLITZ_CORO;
} shut_race_task;

static blitz_poll shut_race_poll(blitz_cx *cx, void *p) {
    shut_race_task *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, BLITZ_MSEC));
    BLITZ_END(s);
}

static void shut_race_check(shut_race_task *s) {
    if (s->magic != SHUT_RACE_MAGIC || s->magic2 != SHUT_RACE_MAGIC)
        atomic_fetch_add(s->bad, 1);
}

static void shut_race_cancel(void *p) {
    shut_race_task *s = p;
    shut_race_check(s);
    blitz_timer_cancel(NULL, &s->timer);
}

static void shut_race_drop(void *p) {
    shut_race_task *s = p;
    shut_race_check(s);
    atomic_fetch_add(s->drops, 1);
    s->magic = 0;
}

static void shut_race_blocking(void *p) {
    shut_race_check(p);
}

typedef struct {
    blitz_runtime *rt;
    atomic_long bad, drops;
    long spawned, finished;
} shut_race_spawner;

static void *shut_race_spawner_main(void *p) {
    shut_race_spawner *a = p;
    blitz_task *handles[32];
    int n = 0;
    for (long i = 0;; i++) {
        shut_race_task s;
        memset(&s, 0, sizeof s);
        s.magic = s.magic2 = SHUT_RACE_MAGIC;
        s.bad = &a->bad;
        s.drops = &a->drops;
        int rc;
        if (i % 4 == 3) {
            blitz_blocking_opts bo = {shut_race_blocking, &s, sizeof s, shut_race_drop};
            rc = blitz_spawn_blocking_ex(a->rt, &bo, &handles[n]);
        } else {
            blitz_spawn_opts o = {shut_race_poll,   &s,   sizeof s, shut_race_drop,
                                  shut_race_cancel, NULL, NULL};
            rc = blitz_spawn_ex(a->rt, &o, &handles[n]);
        }
        if (rc != BLITZ_OK) {
            CHECK_EQ(rc, BLITZ_ESHUTDOWN);
            break;
        }
        a->spawned++;
        if (++n == 32 || i % 7 == 0) {
            for (int k = 0; k < n; k++) {
                int w = blitz_join_blocking(handles[k]);
                CHECK(w == BLITZ_OK || w == BLITZ_ECANCELED);
                blitz_task_release(&handles[k]);
                a->finished++;
            }
            n = 0;
        }
    }
    for (int k = 0; k < n; k++) {
        int w = blitz_join_blocking(handles[k]);
        CHECK(w == BLITZ_OK || w == BLITZ_ECANCELED);
        blitz_task_release(&handles[k]);
        a->finished++;
    }
    return NULL;
}

static int shutdown_spawn_race(tu_flavor f) {
    int rounds = (int)test_scaled(100);
    for (int r = 0; r < rounds; r++) {
        blitz_runtime *rt = tu_rt_new(f);
        shut_race_spawner sp[3];
        pthread_t th[3];
        for (int i = 0; i < 3; i++) {
            memset(&sp[i], 0, sizeof sp[i]);
            sp[i].rt = rt;
            CHECK_EQ(pthread_create(&th[i], NULL, shut_race_spawner_main, &sp[i]), 0);
        }
        tu_sleep_ms(1 + r % 5);
        CHECK_OK(blitz_runtime_shutdown(rt));
        for (int i = 0; i < 3; i++)
            CHECK_EQ(pthread_join(th[i], NULL), 0);
        CHECK_OK(blitz_runtime_free(rt));
        for (int i = 0; i < 3; i++) {
            CHECK_EQ(tu_ldl(&sp[i].bad), 0);
            CHECK_EQ(sp[i].finished, sp[i].spawned);
            CHECK_EQ(tu_ldl(&sp[i].drops), sp[i].spawned);
        }
    }
    return 0;
}
TU_FLAVOR_TESTS(shutdown_spawn_race)

/* Freeing a runtime while the program still holds join handles (of a
 * finished task and of one that was asleep) does not wait for them: their
 * blocks stay until the handle goes, which never happens. It waited a
 * fixed 200 ms grace before. */
typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
} shut_sleeper;

static blitz_poll shut_sleeper_poll(blitz_cx *cx, void *p) {
    shut_sleeper *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 60 * BLITZ_SEC));
    BLITZ_END(s);
}

static blitz_poll shut_done_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_READY;
}

static int free_with_handles_held(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    blitz_task *done = NULL, *asleep = NULL;
    shut_sleeper s;
    memset(&s, 0, sizeof s);
    char unused = 0;
    CHECK_OK(blitz_spawn(rt, shut_done_poll, &unused, sizeof unused, &done));
    CHECK_OK(blitz_spawn(rt, shut_sleeper_poll, &s, sizeof s, &asleep));
    CHECK_OK(blitz_join_blocking(done));
    double t0 = tu_now();
    CHECK_OK(blitz_runtime_free(rt));
    double took = tu_now() - t0;
    printf("# blitz_runtime_free with 2 handles held: %.1f ms\n", took * 1e3);
    CHECK(took < 0.1 * tu_timeout_mult());
    return 0;
}
TU_FLAVOR_TESTS(free_with_handles_held)
