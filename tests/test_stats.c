/* Statistics: the counters agree with what was run. Read after a shutdown,
 * when no thread moves them any more, they are exact. */
#include "test_tasks.h"

static int stats_fresh(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    blitz_stats st;
    memset(&st, 0xff, sizeof st);
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.total_spawned, 0);
    CHECK_EQ(st.total_polled, 0);
    CHECK_EQ(st.total_stolen, 0);
    CHECK_EQ(st.tasks_alive, 0);
    CHECK_EQ(st.global_queue_depth, 0);
    CHECK_EQ(st.num_workers, blitz_runtime_workers(rt));
    if (f.flavor == BLITZ_MULTI_THREAD)
        CHECK_EQ(st.workers_started, 0); /* threads start on the first spawn */
    for (uint32_t i = 0; i < st.num_workers; i++) {
        blitz_worker_stats ws;
        memset(&ws, 0xff, sizeof ws);
        CHECK_OK(blitz_runtime_worker_stats(rt, i, &ws));
        CHECK_EQ(ws.tasks_polled, 0);
        CHECK_EQ(ws.tasks_stolen, 0);
        CHECK_EQ(ws.steals, 0);
        CHECK_EQ(ws.lifo_hits, 0);
        CHECK_EQ(ws.overflows, 0);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(stats_fresh)

/* A main task spawns N children that yield Y times each and joins them:
 * N + 1 spawns, N * (Y + 1) + (the main task's polls) polls. */
typedef struct {
    BLITZ_CORO;
    int yields, k;
} stats_child;

static blitz_poll stats_child_poll(blitz_cx *cx, void *p) {
    stats_child *c = p;
    BLITZ_BEGIN(c);
    for (c->k = 0; c->k < c->yields; c->k++)
        BLITZ_YIELD(c, cx);
    BLITZ_END(c);
}

#define STATS_N 300
typedef struct {
    BLITZ_CORO;
    int i, polls, yields;
    blitz_task *kids[STATS_N];
} stats_main;

static blitz_poll stats_main_poll(blitz_cx *cx, void *p) {
    stats_main *s = p;
    s->polls++;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < STATS_N; s->i++) {
        stats_child c = {0, s->yields, 0};
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), stats_child_poll, &c, sizeof c, &s->kids[s->i]));
    }
    for (s->i = 0; s->i < STATS_N; s->i++) {
        BLITZ_AWAIT(s, blitz_join(cx, s->kids[s->i]));
        CHECK_OK(blitz_task_release(&s->kids[s->i]));
    }
    BLITZ_END(s);
}

static int stats_counts(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    stats_main *s = calloc(1, sizeof *s);
    CHECK_NOT_NULL(s);
    s->yields = 3;
    CHECK_OK(blitz_runtime_run(rt, stats_main_poll, s, sizeof *s));
    CHECK_GE(s->polls, 1);
    CHECK_OK(blitz_runtime_shutdown(rt));

    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.total_spawned, STATS_N + 1);
    CHECK_EQ(st.total_polled, (uint64_t)STATS_N * (s->yields + 1) + (uint64_t)s->polls);
    CHECK_EQ(st.tasks_alive, 0);
    CHECK_EQ(st.global_queue_depth, 0);
    CHECK_EQ(st.num_workers, blitz_runtime_workers(rt));
    if (f.flavor == BLITZ_MULTI_THREAD) {
        CHECK_GE(st.workers_started, 1);
        CHECK_LE(st.workers_started, f.workers);
    }
    uint64_t polled = 0, stolen = 0, parked = 0;
    for (uint32_t i = 0; i < st.num_workers; i++) {
        blitz_worker_stats ws;
        CHECK_OK(blitz_runtime_worker_stats(rt, i, &ws));
        polled += ws.tasks_polled;
        stolen += ws.tasks_stolen;
        parked += ws.times_parked;
        CHECK_LE(ws.steals, ws.tasks_stolen);
        CHECK_LE(ws.lifo_hits, ws.tasks_polled);
        if (f.flavor == BLITZ_MULTI_THREAD && ws.tasks_polled > 0) {
            CHECK_GE(ws.global_queue_interval, 8);
            CHECK_LE(ws.global_queue_interval, 255);
        }
    }
    /* Polls by a thread that waits (not a worker) count in the total only. */
    CHECK_LE(polled, st.total_polled);
    CHECK_EQ(stolen, st.total_stolen);
    CHECK_EQ(parked, st.total_parked);
    CHECK_OK(blitz_runtime_free(rt));
    free(s);
    return 0;
}
TU_FLAVOR_TESTS(stats_counts)

/* Spawns from a plain thread go to the global queue: with every worker
 * busy they wait there, and the depth says how many. */
BLITZ_TEST(stats_queue_depth_mt2) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    tt_blockers bl;
    tt_block(rt, 2, &bl);
    enum { K = 50 };
    tt_probe pr;
    memset(&pr, 0, sizeof pr);
    for (int i = 0; i < K; i++)
        tt_spawn_ex(rt, CM_READY, THEN_READY, NULL, NULL, &pr, 0);
    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.global_queue_depth, K);
    CHECK_EQ(st.total_spawned, K + 2);
    CHECK_EQ(st.tasks_alive, K + 2);
    CHECK_EQ(tu_ldi(&pr.polls), 0);
    tt_unblock(&bl);
    TU_WAIT_GE(&pr.drops, K, 10.0);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.global_queue_depth, 0);
    CHECK_EQ(st.total_polled, K + 2);
    CHECK_EQ(st.tasks_alive, 0);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A fixed global-queue interval is what every worker reports. */
BLITZ_TEST(stats_fixed_interval) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = BLITZ_MULTI_THREAD;
    cfg.workers = 2;
    cfg.global_queue_interval = 31;
    blitz_runtime *rt = NULL;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    stats_main *s = calloc(1, sizeof *s);
    CHECK_NOT_NULL(s);
    s->yields = 1;
    /* Waited for without blitz_join_blocking, so that the workers (not this
     * thread, helping) do the polling. */
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, stats_main_poll, s, sizeof *s, &h));
    TU_WAIT_UNTIL(blitz_task_status(h) != BLITZ_EAGAIN, 10.0, 1);
    CHECK_OK(blitz_task_status(h));
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_shutdown(rt));
    int seen = 0;
    for (uint32_t i = 0; i < 2; i++) {
        blitz_worker_stats ws;
        CHECK_OK(blitz_runtime_worker_stats(rt, i, &ws));
        if (ws.tasks_polled > 0) {
            CHECK_EQ(ws.global_queue_interval, 31);
            seen++;
        }
    }
    CHECK_GE(seen, 1);
    CHECK_OK(blitz_runtime_free(rt));
    free(s);
    return 0;
}

/* Workers with nothing to do park (and count it). */
BLITZ_TEST(stats_idle_workers_park) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    char st8[8] = {0};
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, tu_forever_poll, st8, sizeof st8, &h));
    CHECK_OK(blitz_task_cancel(h));
    CHECK_EQ(blitz_join_blocking(h), BLITZ_ECANCELED);
    CHECK_OK(blitz_task_release(&h));
    blitz_stats st;
    double deadline = tu_now() + 5.0 * tu_timeout_mult();
    do {
        tu_sleep_ms(10);
        CHECK_OK(blitz_runtime_stats(rt, &st));
    } while (st.total_parked == 0 && tu_now() < deadline);
    CHECK_GE(st.total_parked, 1);
    CHECK_GE(st.workers_started, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
