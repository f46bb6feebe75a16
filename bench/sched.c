/* Scheduler benchmarks: blitz's mirror of the Tokio anchor's `sched` group
 * (../shared/anchors/tokio/src/sched.rs), workload for workload and parameter
 * for parameter, on the 2-worker multi-thread runtime (suffix `_mt2`) and on
 * the current-thread runtime (suffix `_ct`).
 *
 *   sched [FILTER...]   run the benchmarks whose name contains a FILTER
 *                       (all without arguments)
 *
 * Translation of the anchor's Rust:
 *   rt.block_on(fut)      bench_block_on = blitz_runtime_run (spawns the main
 *                         task, blocks the calling thread until it is done;
 *                         on current-thread the calling thread drives)
 *   tokio::spawn in task  blitz_spawn(blitz_cx_runtime(cx), ...)
 *   rt.spawn outside      blitz_spawn from the main thread
 *   handle.await          BLITZ_AWAIT(s, blitz_join(cx, h)); blitz_task_release
 *   yield_now().await     BLITZ_YIELD
 *   Countdown, oneshot,   bench_countdown, bench_oneshot, bench_chan
 *   mpsc::channel(1)      (bench_common.c; a wake per message, as in Tokio)
 *
 * Every timed region starts before the first spawn and ends when the code
 * that observes completion has it. A fresh runtime is built for every
 * benchmark and freed afterwards (not timed).
 *
 * Where the C differs from the Rust, and why:
 *   - Tasks hold a plain pointer to the countdown instead of an Arc clone
 *     (the waiter outlives every arrival; a C user would not refcount it).
 *     oneshots and channels are heap blocks shared by their two ends and
 *     freed by the last one, as Tokio's Arc<Inner>/Arc<Chan>, and allocated
 *     in the same places (inside the timed region), from the same glibc
 *     malloc that the anchor's system allocator uses.
 *   - oneshot<()> carries a u64 here; the bench channel has room for one
 *     waiting sender (each channel here has exactly one sender).
 *   - The block_on "future" is a blitz task pinned to the calling thread by
 *     blitz_runtime_run, and that thread also runs queued tasks while it
 *     waits (blitz's design); Tokio's block_on thread only parks. That is
 *     why spawn_await_blockon_mt2 does not cross threads twice per pair in
 *     blitz: it is the same user program, not the same schedule.
 *   - At blitz_runtime_free a ponger that has not yet seen its channel
 *     close is cancelled without a drop function, so the last iteration's
 *     channel blocks (a few hundred bytes) are not freed; Tokio drops them
 *     with the task. Harmless for a benchmark process. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include "bench_common.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WARMUP 2

#define NUM_SPAWN           10000
#define NUM_SPAWN_BUSY2     1000
#define STALL_NS            10000u /* 10 us */
#define YIELD_TASKS         1000
#define YIELDS_PER_TASK     1000
#define PINGS               1000
#define PP_ROUNDS_1PAIR     100000
#define PP_PAIRS            100
#define PP_ROUNDS_PER_PAIR  1000
#define CHAIN_DEPTH         1000
#define SPAWN_AWAIT_IN_TASK 100000
#define SPAWN_AWAIT_BLOCKON 10000

/* Iterations per measured run (common.rs sample_reps). */
#define REPS_SPAWN_MANY 10
#define REPS_PING_PONG  10
#define REPS_CHAIN      50

/* spawn_many_remote_busy2: each run is bounded by this; a guard thread
 * then stops the background chains. (Overridable only to test the
 * starvation path: -DBUSY2_LIMIT_MS=0u.) */
#ifndef BUSY2_LIMIT_MS
#define BUSY2_LIMIT_MS 2000u
#endif

/* ---------------------------------------------------------------------------
 * Small tasks shared by several benchmarks
 * ------------------------------------------------------------------------- */

/* `async {}`: a task that is ready at once. Its state is one byte, like the
 * anchor's empty future. */
static const char empty_state = 0;
static blitz_poll empty_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_READY;
}

/* `async move { c.arrive() }` */
typedef struct arrive_state {
    bench_countdown *cd;
} arrive_state;
static blitz_poll arrive_poll(blitz_cx *cx, void *p) {
    arrive_state *s = p;
    (void)cx;
    bench_countdown_arrive(s->cd);
    return BLITZ_READY;
}

/* ---------------------------------------------------------------------------
 * spawn_many_local: one task (already running on a worker) spawns NUM_SPAWN
 * tasks; each task decrements the countdown.
 * ------------------------------------------------------------------------- */

typedef struct sml_root_state {
    bench_countdown *cd;
} sml_root_state;
static blitz_poll sml_root_poll(blitz_cx *cx, void *p) {
    sml_root_state *s = p;
    blitz_runtime *rt = blitz_cx_runtime(cx);
    arrive_state a;
    int i;
    a.cd = s->cd;
    for (i = 0; i < NUM_SPAWN; i++)
        bench_spawn(rt, arrive_poll, &a, sizeof a, NULL);
    return BLITZ_READY;
}

static uint64_t spawn_many_local_iter(void *ctx) {
    blitz_runtime *rt = ctx;
    bench_countdown cd;
    sml_root_state root;
    uint64_t t0, d;
    bench_countdown_init(&cd, NUM_SPAWN);
    root.cd = &cd;
    t0 = bench_now_ns();
    bench_block_on_countdown(rt, &cd, sml_root_poll, &root, sizeof root);
    d = bench_now_ns() - t0;
    bench_countdown_destroy(&cd);
    return d;
}

static void spawn_many_local(bench_flavor f, double *samples) {
    blitz_runtime *rt = bench_runtime_new(f);
    bench_sample_reps(WARMUP, BENCH_RUNS, REPS_SPAWN_MANY, spawn_many_local_iter, rt, samples);
    bench_runtime_free(rt);
}

/* ---------------------------------------------------------------------------
 * spawn_many_remote_*: spawn n empty tasks from the main thread (outside the
 * runtime), keeping the handles, then join them all, in order, in block_on.
 * ------------------------------------------------------------------------- */

typedef struct join_all_state {
    BLITZ_CORO;
    blitz_task **hs;
    size_t n, i;
} join_all_state;
static blitz_poll join_all_poll(blitz_cx *cx, void *p) {
    join_all_state *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        BLITZ_AWAIT(s, blitz_join(cx, s->hs[s->i]));
        if (blitz_task_status(s->hs[s->i]) != BLITZ_OK) /* h.await.unwrap() */
            bench_die("a remote task did not complete");
        BENCH_CHECK(blitz_task_release(&s->hs[s->i]));
    }
    BLITZ_END(s);
}

/* `hs` has room for n handles (allocated outside the timed region, as the
 * anchor's Vec::with_capacity). */
static uint64_t spawn_remote_and_join(blitz_runtime *rt, size_t n, blitz_task **hs) {
    join_all_state m;
    uint64_t t0;
    size_t i;
    memset(&m, 0, sizeof m);
    m.hs = hs;
    m.n = n;
    t0 = bench_now_ns();
    for (i = 0; i < n; i++)
        bench_spawn(rt, empty_poll, &empty_state, sizeof empty_state, &hs[i]);
    bench_block_on(rt, join_all_poll, &m, sizeof m);
    return bench_now_ns() - t0;
}

typedef struct remote_ctx {
    blitz_runtime *rt;
    blitz_task **hs;
} remote_ctx;
static uint64_t spawn_many_remote_iter(void *ctx) {
    remote_ctx *c = ctx;
    return spawn_remote_and_join(c->rt, NUM_SPAWN, c->hs);
}

static blitz_task **alloc_handles(size_t n) {
    blitz_task **hs = calloc(n, sizeof *hs);
    if (!hs)
        bench_die("out of memory (handles)");
    return hs;
}

/* spawn_many_remote_idle: the runtime has nothing else to do. */
static void spawn_many_remote_idle(bench_flavor f, double *samples) {
    remote_ctx c;
    c.rt = bench_runtime_new(f);
    c.hs = alloc_handles(NUM_SPAWN);
    bench_sample_reps(WARMUP, BENCH_RUNS, REPS_SPAWN_MANY, spawn_many_remote_iter, &c, samples);
    bench_runtime_free(c.rt);
    free(c.hs);
}

/* spawn_many_remote_busy1: 2 x workers background tasks loop
 * { yield_now().await; spin 10 us } for the whole benchmark. */
typedef struct busy1_state {
    BLITZ_CORO;
    atomic_bool *flag;
} busy1_state;
static blitz_poll busy1_poll(blitz_cx *cx, void *p) {
    busy1_state *s = p;
    BLITZ_BEGIN(s);
    while (atomic_load_explicit(s->flag, memory_order_relaxed)) {
        BLITZ_YIELD(s, cx);
        bench_stall_ns(STALL_NS);
    }
    BLITZ_END(s);
}

static void spawn_many_remote_busy1(bench_flavor f, double *samples) {
    remote_ctx c;
    atomic_bool flag;
    busy1_state b;
    uint32_t i;
    atomic_init(&flag, true);
    c.rt = bench_runtime_new(f);
    c.hs = alloc_handles(NUM_SPAWN);
    memset(&b, 0, sizeof b);
    b.flag = &flag;
    for (i = 0; i < 2 * bench_flavor_workers(f); i++)
        bench_spawn(c.rt, busy1_poll, &b, sizeof b, NULL);
    bench_sample_reps(WARMUP, BENCH_RUNS, REPS_SPAWN_MANY, spawn_many_remote_iter, &c, samples);
    atomic_store_explicit(&flag, false, memory_order_relaxed);
    bench_runtime_free(c.rt);
    free(c.hs);
}

/* spawn_many_remote_busy2: `workers` background chains, each task spins
 * 10 us then spawns its successor; NUM_SPAWN_BUSY2 remote spawns per run.
 * Each run is bounded by BUSY2_LIMIT_MS: a guard thread then stops the
 * chains (Tokio 1.24 starves here on mt2; blitz must not). */
typedef struct busy2_state {
    atomic_bool *flag;
} busy2_state;
static blitz_poll busy_chain_link_poll(blitz_cx *cx, void *p);
static void busy_chain(blitz_cx *cx, atomic_bool *flag) {
    busy2_state st;
    int rc;
    st.flag = flag;
    rc = blitz_spawn(blitz_cx_runtime(cx), busy_chain_link_poll, &st, sizeof st, NULL);
    if (rc != BLITZ_OK && rc != BLITZ_ESHUTDOWN)
        bench_die("busy chain spawn: %s", blitz_strerror(rc));
}
static blitz_poll busy_chain_link_poll(blitz_cx *cx, void *p) {
    busy2_state *s = p;
    if (atomic_load_explicit(s->flag, memory_order_relaxed)) {
        bench_stall_ns(STALL_NS);
        busy_chain(cx, s->flag);
    }
    return BLITZ_READY;
}
/* `rt.spawn(async move { busy_chain(f) })` */
static blitz_poll busy_chain_start_poll(blitz_cx *cx, void *p) {
    busy2_state *s = p;
    busy_chain(cx, s->flag);
    return BLITZ_READY;
}

typedef struct busy2_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int starved;
    atomic_bool *flag;
} busy2_guard;

static void *busy2_guard_main(void *p) {
    busy2_guard *g = p;
    struct timespec dl;
    int rc = 0;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += BUSY2_LIMIT_MS / 1000u;
    dl.tv_nsec += (long)(BUSY2_LIMIT_MS % 1000u) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g->mu);
    while (!g->done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&g->cv, &g->mu, &dl);
    if (!g->done) {
        atomic_store_explicit(g->flag, false, memory_order_relaxed);
        g->starved = 1;
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Returns the number of samples written, or -1 - completed_runs if a run
 * starved. */
static int spawn_many_remote_busy2(bench_flavor f, double *samples) {
    blitz_runtime *rt = bench_runtime_new(f);
    blitz_task **hs = alloc_handles(NUM_SPAWN_BUSY2);
    atomic_bool flag;
    busy2_state st;
    int i, n = 0, starved = 0;
    uint32_t w;
    atomic_init(&flag, true);
    st.flag = &flag;
    for (w = 0; w < bench_flavor_workers(f); w++)
        bench_spawn(rt, busy_chain_start_poll, &st, sizeof st, NULL);
    for (i = 0; i < WARMUP + BENCH_RUNS; i++) {
        busy2_guard g;
        pthread_condattr_t ca;
        pthread_t th;
        uint64_t d;
        memset(&g, 0, sizeof g);
        g.flag = &flag;
        pthread_mutex_init(&g.mu, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g.cv, &ca);
        pthread_condattr_destroy(&ca);
        if (pthread_create(&th, NULL, busy2_guard_main, &g) != 0)
            bench_die("cannot start the busy2 guard thread");
        d = spawn_remote_and_join(rt, NUM_SPAWN_BUSY2, hs);
        pthread_mutex_lock(&g.mu);
        g.done = 1;
        pthread_cond_signal(&g.cv);
        pthread_mutex_unlock(&g.mu);
        pthread_join(th, NULL);
        pthread_cond_destroy(&g.cv);
        pthread_mutex_destroy(&g.mu);
        if (g.starved) {
            starved = 1;
            fprintf(stderr,
                    "# spawn_many_remote_busy2_%s: run %d not done after %u ms (starved), "
                    "elapsed incl. drain %.3f ms\n",
                    bench_flavor_suffix(f), i, BUSY2_LIMIT_MS, (double)d / 1e6);
            break;
        }
        if (i >= WARMUP)
            samples[n++] = (double)d;
    }
    atomic_store_explicit(&flag, false, memory_order_relaxed);
    bench_runtime_free(rt);
    free(hs);
    return starved ? -1 - n : n;
}

/* ---------------------------------------------------------------------------
 * yield_many: YIELD_TASKS tasks spawned from outside, each yields
 * YIELDS_PER_TASK times then arrives. Reported per yield.
 * ------------------------------------------------------------------------- */

typedef struct yield_state {
    BLITZ_CORO;
    bench_countdown *cd;
    int i;
} yield_state;
static blitz_poll yield_poll(blitz_cx *cx, void *p) {
    yield_state *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < YIELDS_PER_TASK; s->i++)
        BLITZ_YIELD(s, cx);
    bench_countdown_arrive(s->cd);
    BLITZ_END(s);
}

static uint64_t yield_many_iter(void *ctx) {
    blitz_runtime *rt = ctx;
    bench_countdown cd;
    yield_state y;
    uint64_t t0, d;
    int i;
    bench_countdown_init(&cd, YIELD_TASKS);
    memset(&y, 0, sizeof y);
    y.cd = &cd;
    t0 = bench_now_ns();
    for (i = 0; i < YIELD_TASKS; i++)
        bench_spawn(rt, yield_poll, &y, sizeof y, NULL);
    bench_block_on_countdown(rt, &cd, NULL, NULL, 0);
    d = bench_now_ns() - t0;
    bench_countdown_destroy(&cd);
    return d;
}

static void yield_many(bench_flavor f, double *samples) {
    blitz_runtime *rt = bench_runtime_new(f);
    bench_sample_reps(WARMUP, BENCH_RUNS, 1, yield_many_iter, rt, samples);
    bench_runtime_free(rt);
}

/* ---------------------------------------------------------------------------
 * ping_pong (Tokio's shape): a root task spawns PINGS tasks; each creates two
 * oneshots, spawns a partner that waits on the first and answers on the
 * second, sends, awaits the answer. Per ping = 2 spawns + 2 oneshots.
 * ------------------------------------------------------------------------- */

typedef struct pp_partner_state {
    BLITZ_CORO;
    bench_oneshot *rx1;
    bench_oneshot *tx2;
    uint64_t v;
    int ok;
} pp_partner_state;
static blitz_poll pp_partner_poll(blitz_cx *cx, void *p) {
    pp_partner_state *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, bench_oneshot_recv(cx, s->rx1, &s->v, &s->ok));
    if (!s->ok) /* rx1.await.unwrap() */
        bench_die("ping_pong: ping sender dropped");
    bench_oneshot_rx_drop(s->rx1);
    if (bench_oneshot_send(s->tx2, 0) != 0) /* tx2.send(()).unwrap() */
        bench_die("ping_pong: pong receiver dropped");
    BLITZ_END(s);
}

typedef struct pp_ping_state {
    BLITZ_CORO;
    bench_countdown *cd;
    bench_oneshot *tx1; /* o1 */
    bench_oneshot *rx2; /* o2 */
    uint64_t v;
    int ok;
} pp_ping_state;
static void pp_spawn_partner(blitz_cx *cx, bench_oneshot *rx1, bench_oneshot *tx2) {
    pp_partner_state ps;
    memset(&ps, 0, sizeof ps);
    ps.rx1 = rx1;
    ps.tx2 = tx2;
    bench_spawn(blitz_cx_runtime(cx), pp_partner_poll, &ps, sizeof ps, NULL);
}
static blitz_poll pp_ping_poll(blitz_cx *cx, void *p) {
    pp_ping_state *s = p;
    BLITZ_BEGIN(s);
    s->tx1 = bench_oneshot_new();
    s->rx2 = bench_oneshot_new();
    pp_spawn_partner(cx, s->tx1, s->rx2);
    if (bench_oneshot_send(s->tx1, 0) != 0) /* tx1.send(()).unwrap() */
        bench_die("ping_pong: ping receiver dropped");
    BLITZ_AWAIT(s, bench_oneshot_recv(cx, s->rx2, &s->v, &s->ok));
    if (!s->ok) /* rx2.await.unwrap() */
        bench_die("ping_pong: pong sender dropped");
    bench_oneshot_rx_drop(s->rx2);
    bench_countdown_arrive(s->cd);
    BLITZ_END(s);
}

typedef struct pp_root_state {
    bench_countdown *cd;
} pp_root_state;
static blitz_poll pp_root_poll(blitz_cx *cx, void *p) {
    pp_root_state *s = p;
    blitz_runtime *rt = blitz_cx_runtime(cx);
    pp_ping_state ping;
    int i;
    memset(&ping, 0, sizeof ping);
    ping.cd = s->cd;
    for (i = 0; i < PINGS; i++)
        bench_spawn(rt, pp_ping_poll, &ping, sizeof ping, NULL);
    return BLITZ_READY;
}

static uint64_t ping_pong_iter(void *ctx) {
    blitz_runtime *rt = ctx;
    bench_countdown cd;
    pp_root_state root;
    uint64_t t0, d;
    bench_countdown_init(&cd, PINGS);
    root.cd = &cd;
    t0 = bench_now_ns();
    bench_block_on_countdown(rt, &cd, pp_root_poll, &root, sizeof root);
    d = bench_now_ns() - t0;
    bench_countdown_destroy(&cd);
    return d;
}

static void ping_pong(bench_flavor f, double *samples) {
    blitz_runtime *rt = bench_runtime_new(f);
    bench_sample_reps(WARMUP, BENCH_RUNS, REPS_PING_PONG, ping_pong_iter, rt, samples);
    bench_runtime_free(rt);
}

/* ---------------------------------------------------------------------------
 * ping_pong_mpsc_*: persistent pairs bouncing a counter through two
 * bounded(1) channels. Reported per round trip (pairs * rounds).
 * ------------------------------------------------------------------------- */

/* while let Some(v) = ping_rx.recv().await { pong_tx.send(v + 1).await? } */
typedef struct ponger_state {
    BLITZ_CORO;
    bench_chan *ping_rx;
    bench_chan *pong_tx;
    uint64_t v;
    int ok, rc;
} ponger_state;
static blitz_poll ponger_poll(blitz_cx *cx, void *p) {
    ponger_state *s = p;
    BLITZ_BEGIN(s);
    for (;;) {
        BLITZ_AWAIT(s, bench_chan_recv(cx, s->ping_rx, &s->v, &s->ok));
        if (!s->ok)
            break;
        BLITZ_AWAIT(s, bench_chan_send(cx, s->pong_tx, s->v + 1, &s->rc));
        if (s->rc != 0)
            break;
    }
    bench_chan_rx_drop(s->ping_rx);
    bench_chan_tx_drop(s->pong_tx);
    BLITZ_END(s);
}

typedef struct pinger_state {
    BLITZ_CORO;
    bench_chan *ping_tx;
    bench_chan *pong_rx;
    bench_countdown *cd;
    size_t rounds, i;
    uint64_t v;
    int ok, rc;
} pinger_state;
static blitz_poll pinger_poll(blitz_cx *cx, void *p) {
    pinger_state *s = p;
    BLITZ_BEGIN(s);
    s->v = 0;
    for (s->i = 0; s->i < s->rounds; s->i++) {
        BLITZ_AWAIT(s, bench_chan_send(cx, s->ping_tx, s->v, &s->rc));
        if (s->rc != 0) /* ping_tx.send(v).await.unwrap() */
            bench_die("ping_pong_mpsc: ponger gone");
        BLITZ_AWAIT(s, bench_chan_recv(cx, s->pong_rx, &s->v, &s->ok));
        if (!s->ok) /* pong_rx.recv().await.unwrap() */
            bench_die("ping_pong_mpsc: pong channel closed");
    }
    if (s->v != (uint64_t)s->rounds)
        bench_die("ping_pong_mpsc: v = %llu, expected %llu", (unsigned long long)s->v,
                  (unsigned long long)s->rounds);
    bench_countdown_arrive(s->cd);
    /* The async block's captures are dropped once it completes. */
    bench_chan_tx_drop(s->ping_tx);
    bench_chan_rx_drop(s->pong_rx);
    BLITZ_END(s);
}

/* The block_on future: creates the countdown, starts the clock, spawns the
 * pairs, awaits the countdown, returns the elapsed time. */
typedef struct pairs_main_state {
    BLITZ_CORO;
    bench_countdown *cd;
    size_t pairs, rounds;
    uint64_t t0, elapsed;
} pairs_main_state;
static void pairs_spawn_one(blitz_cx *cx, bench_countdown *cd, size_t rounds) {
    blitz_runtime *rt = blitz_cx_runtime(cx);
    bench_chan *ping = bench_chan_new();
    bench_chan *pong = bench_chan_new();
    ponger_state po;
    pinger_state pi;
    memset(&po, 0, sizeof po);
    po.ping_rx = ping;
    po.pong_tx = pong;
    bench_spawn(rt, ponger_poll, &po, sizeof po, NULL);
    memset(&pi, 0, sizeof pi);
    pi.ping_tx = ping;
    pi.pong_rx = pong;
    pi.cd = cd;
    pi.rounds = rounds;
    bench_spawn(rt, pinger_poll, &pi, sizeof pi, NULL);
}
static blitz_poll pairs_main_poll(blitz_cx *cx, void *p) {
    pairs_main_state *s = p;
    BLITZ_BEGIN(s);
    bench_countdown_init(s->cd, s->pairs);
    s->t0 = bench_now_ns();
    for (size_t i = 0; i < s->pairs; i++)
        pairs_spawn_one(cx, s->cd, s->rounds);
    BLITZ_AWAIT(s, bench_countdown_wait(cx, s->cd));
    s->elapsed = bench_now_ns() - s->t0;
    BLITZ_END(s);
}

typedef struct pairs_ctx {
    blitz_runtime *rt;
    size_t pairs, rounds;
} pairs_ctx;
static uint64_t ping_pong_pairs_iter(void *ctx) {
    pairs_ctx *c = ctx;
    bench_countdown cd;
    pairs_main_state m;
    memset(&m, 0, sizeof m);
    m.cd = &cd;
    m.pairs = c->pairs;
    m.rounds = c->rounds;
    bench_block_on(c->rt, pairs_main_poll, &m, sizeof m);
    bench_countdown_destroy(&cd);
    return m.elapsed;
}

static void ping_pong_pairs(bench_flavor f, size_t pairs, size_t rounds, double *samples) {
    pairs_ctx c;
    c.rt = bench_runtime_new(f);
    c.pairs = pairs;
    c.rounds = rounds;
    bench_sample_reps(WARMUP, BENCH_RUNS, 1, ping_pong_pairs_iter, &c, samples);
    bench_runtime_free(c.rt);
}

/* ---------------------------------------------------------------------------
 * chained_spawn: each task spawns the next one, CHAIN_DEPTH spawns per run.
 * ------------------------------------------------------------------------- */

typedef struct chain_state {
    bench_countdown *cd;
    size_t left;
} chain_state;
static blitz_poll chain_poll(blitz_cx *cx, void *p) {
    chain_state *s = p;
    if (s->left == 0) {
        bench_countdown_arrive(s->cd);
    } else {
        chain_state next;
        next.cd = s->cd;
        next.left = s->left - 1;
        bench_spawn(blitz_cx_runtime(cx), chain_poll, &next, sizeof next, NULL);
    }
    return BLITZ_READY;
}

static uint64_t chained_spawn_iter(void *ctx) {
    blitz_runtime *rt = ctx;
    bench_countdown cd;
    chain_state first;
    uint64_t t0, d;
    bench_countdown_init(&cd, 1);
    first.cd = &cd;
    first.left = CHAIN_DEPTH - 1;
    t0 = bench_now_ns();
    bench_block_on_countdown(rt, &cd, chain_poll, &first, sizeof first);
    d = bench_now_ns() - t0;
    bench_countdown_destroy(&cd);
    return d;
}

static void chained_spawn(bench_flavor f, double *samples) {
    blitz_runtime *rt = bench_runtime_new(f);
    bench_sample_reps(WARMUP, BENCH_RUNS, REPS_CHAIN, chained_spawn_iter, rt, samples);
    bench_runtime_free(rt);
}

/* ---------------------------------------------------------------------------
 * spawn_await_*: n x `tokio::spawn(async move { black_box(i) }).await`,
 * inside one spawned task (_task) or in the block_on future (_blockon).
 * ------------------------------------------------------------------------- */

typedef struct value_state {
    uint64_t in, out;
} value_state;
static blitz_poll value_poll(blitz_cx *cx, void *p) {
    value_state *s = p;
    (void)cx;
    s->out = bench_black_box(s->in);
    return BLITZ_READY;
}

typedef struct spawn_await_state {
    BLITZ_CORO;
    uint64_t n, i;
    uint64_t t0, elapsed;
    blitz_task *h;
} spawn_await_state;
static void spawn_value(blitz_cx *cx, uint64_t i, blitz_task **h) {
    value_state v;
    v.in = i;
    v.out = 0;
    bench_spawn(blitz_cx_runtime(cx), value_poll, &v, sizeof v, h);
}
static void take_value(blitz_task **h) {
    value_state *v = blitz_task_state(*h);
    if (!v || blitz_task_status(*h) != BLITZ_OK) /* .await.unwrap() */
        bench_die("spawn_await: task did not complete");
    (void)bench_black_box(v->out);
    BENCH_CHECK(blitz_task_release(h));
}
static blitz_poll spawn_await_poll(blitz_cx *cx, void *p) {
    spawn_await_state *s = p;
    BLITZ_BEGIN(s);
    s->t0 = bench_now_ns();
    for (s->i = 0; s->i < s->n; s->i++) {
        spawn_value(cx, s->i, &s->h);
        BLITZ_AWAIT(s, blitz_join(cx, s->h));
        take_value(&s->h);
    }
    s->elapsed = bench_now_ns() - s->t0;
    BLITZ_END(s);
}

/* block_on(async { tokio::spawn(loop).await.unwrap() }) */
typedef struct spawn_await_outer_state {
    BLITZ_CORO;
    blitz_task *h;
    uint64_t elapsed;
} spawn_await_outer_state;
static blitz_poll spawn_await_outer_poll(blitz_cx *cx, void *p) {
    spawn_await_outer_state *s = p;
    BLITZ_BEGIN(s);
    {
        spawn_await_state in;
        memset(&in, 0, sizeof in);
        in.n = SPAWN_AWAIT_IN_TASK;
        bench_spawn(blitz_cx_runtime(cx), spawn_await_poll, &in, sizeof in, &s->h);
    }
    BLITZ_AWAIT(s, blitz_join(cx, s->h));
    {
        spawn_await_state *in = blitz_task_state(s->h);
        if (!in || blitz_task_status(s->h) != BLITZ_OK)
            bench_die("spawn_await_task: the looping task did not complete");
        s->elapsed = in->elapsed;
    }
    BENCH_CHECK(blitz_task_release(&s->h));
    BLITZ_END(s);
}

static uint64_t spawn_await_task_iter(void *ctx) {
    blitz_runtime *rt = ctx;
    spawn_await_outer_state m;
    memset(&m, 0, sizeof m);
    bench_block_on(rt, spawn_await_outer_poll, &m, sizeof m);
    return m.elapsed;
}

static uint64_t spawn_await_blockon_iter(void *ctx) {
    blitz_runtime *rt = ctx;
    spawn_await_state m;
    memset(&m, 0, sizeof m);
    m.n = SPAWN_AWAIT_BLOCKON;
    bench_block_on(rt, spawn_await_poll, &m, sizeof m);
    return m.elapsed;
}

static void spawn_await_task(bench_flavor f, double *samples) {
    blitz_runtime *rt = bench_runtime_new(f);
    bench_sample_reps(WARMUP, BENCH_RUNS, 1, spawn_await_task_iter, rt, samples);
    bench_runtime_free(rt);
}

static void spawn_await_blockon(bench_flavor f, double *samples) {
    blitz_runtime *rt = bench_runtime_new(f);
    bench_sample_reps(WARMUP, BENCH_RUNS, 1, spawn_await_blockon_iter, rt, samples);
    bench_runtime_free(rt);
}

/* ---------------------------------------------------------------------------
 * Driver
 * ------------------------------------------------------------------------- */

typedef void (*bench_fn)(bench_flavor f, double *samples);

static void run_one(bench_flavor f, const char *base, bench_fn fn, size_t ops) {
    char name[128];
    double samples[BENCH_RUNS];
    snprintf(name, sizeof name, "%s_%s", base, bench_flavor_suffix(f));
    if (!bench_selected(name))
        return;
    fn(f, samples);
    bench_emit_ns_per_op(name, samples, BENCH_RUNS, ops);
}

static void ping_pong_mpsc_1pair(bench_flavor f, double *samples) {
    ping_pong_pairs(f, 1, PP_ROUNDS_1PAIR, samples);
}

static void ping_pong_mpsc_100pairs(bench_flavor f, double *samples) {
    ping_pong_pairs(f, PP_PAIRS, PP_ROUNDS_PER_PAIR, samples);
}

static void run_busy2(bench_flavor f) {
    char name[128];
    double samples[BENCH_RUNS];
    int n;
    snprintf(name, sizeof name, "spawn_many_remote_busy2_%s", bench_flavor_suffix(f));
    if (!bench_selected(name))
        return;
    n = spawn_many_remote_busy2(f, samples);
    if (n >= 0) {
        bench_emit_ns_per_op(name, samples, (size_t)n, NUM_SPAWN_BUSY2);
    } else {
        printf("# bench=%s status=starved limit_ms=%u completed_runs=%d impl=blitz\n", name,
               BUSY2_LIMIT_MS, -1 - n);
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    static const bench_flavor flavors[2] = {BENCH_MT2, BENCH_CT};
    bench_cpu_snapshot cpu0;
    int k;
    bench_cpu_snapshot_take(&cpu0);
    bench_set_filter(argc - 1, argv + 1);
    bench_watchdog(120, "sched");
    bench_cpu_warmup();
    for (k = 0; k < 2; k++) {
        bench_flavor f = flavors[k];
        run_one(f, "spawn_many_local", spawn_many_local, (size_t)NUM_SPAWN * REPS_SPAWN_MANY);
        run_one(f, "spawn_many_remote_idle", spawn_many_remote_idle,
                (size_t)NUM_SPAWN * REPS_SPAWN_MANY);
        run_one(f, "spawn_many_remote_busy1", spawn_many_remote_busy1,
                (size_t)NUM_SPAWN * REPS_SPAWN_MANY);
        run_busy2(f);
        run_one(f, "yield_many", yield_many, (size_t)YIELD_TASKS * YIELDS_PER_TASK);
        run_one(f, "ping_pong", ping_pong, (size_t)PINGS * REPS_PING_PONG);
        run_one(f, "ping_pong_mpsc_1pair", ping_pong_mpsc_1pair, PP_ROUNDS_1PAIR);
        run_one(f, "ping_pong_mpsc_100pairs", ping_pong_mpsc_100pairs,
                (size_t)PP_PAIRS * PP_ROUNDS_PER_PAIR);
        run_one(f, "chained_spawn", chained_spawn, (size_t)CHAIN_DEPTH * REPS_CHAIN);
        run_one(f, "spawn_await_task", spawn_await_task, SPAWN_AWAIT_IN_TASK);
        run_one(f, "spawn_await_blockon", spawn_await_blockon, SPAWN_AWAIT_BLOCKON);
    }
    bench_cpu_report_since(&cpu0, "sched");
    return 0;
}
