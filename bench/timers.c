/* Timer benchmarks: blitz's mirror of the Tokio anchor's `timers` group
 * (../shared/anchors/tokio/src/timers.rs), workload for workload and constant
 * for constant, on the 2-worker multi-thread runtime (suffix `_mt2`) and on
 * the current-thread runtime (suffix `_ct`).
 *
 *   timers [FILTER...]   run the benchmarks whose name contains a FILTER
 *                        (all without arguments)
 *
 * timers_1m_random: a root task spawns N_TIMERS tasks; task i sleeps
 *   deadline_ms[i] (1 + SplitMix64(TIMER_SEED).next() % 100, generated
 *   before timing), then decrements the countdown. The sleep starts at the
 *   task's first poll. Timed: from before the block_on until the last task
 *   finished. Emits _total (ms) and _per_timer (ns per timer).
 *   A separate pass (own runtime, not part of the total) records per timer
 *   how late it fired: target = now + ms at the first poll, sleep_until
 *   target, late = now - target (saturating, in whole microseconds), and
 *   emits the p50 and p99 in ms (max on stderr).
 * timers_heavy_10k_x100: a root task spawns HEAVY_TASKS tasks, each sleeping
 *   1 ms HEAVY_SLEEPS times in a row. Timed: block_on..last task done. The
 *   ideal total is 100 ms. Emits _total (ms) and _per_sleep (ns per sleep,
 *   the median total over HEAVY_TASKS * HEAVY_SLEEPS, as the anchor).
 *
 * Translation of the anchor's Rust:
 *   rt.block_on(fut)          bench_block_on = blitz_runtime_run
 *   tokio::spawn in task      blitz_spawn(blitz_cx_runtime(cx), ...)
 *   sleep(d).await            BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, d))
 *   sleep_until(t).await      BLITZ_AWAIT(s, blitz_sleep_until(cx, &s->timer, t))
 *   Instant::now() in a task  blitz_cx_now(cx) (the runtime's monotonic clock)
 *   Countdown                 bench_countdown (bench_common.c)
 *
 * Each task keeps its blitz_timer inside its own state (the task's state is
 * copied into the task at spawn), so a sleep allocates nothing; Tokio's
 * Sleep also lives inside the task's future. Tasks hold a plain pointer to
 * the countdown / lateness table instead of an Arc clone.
 * A runtime is built per benchmark (not timed) and reused for its warm-up
 * and measured runs, as the anchor's `flavor.build()` before sample_ns. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include "bench_common.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP 1

#define N_TIMERS       1000000
#define TIMER_SEED     0x00C0FFEE12345678ull
#define HEAVY_TASKS    10000
#define HEAVY_SLEEPS   100
#define HEAVY_SLEEP_NS (1 * BLITZ_MSEC)

/* Under the 300 s `timeout` of bench/run.sh, so the watchdog's note shows. */
#define WATCHDOG_S 280

/* deadline_ms[i] of timer i, 1..=100 (the anchor's deadlines_ms()). */
static uint8_t *deadlines_ms(void) {
    bench_splitmix64 rng = {TIMER_SEED};
    uint8_t *d = malloc(N_TIMERS);
    size_t i;
    if (!d)
        bench_die("out of memory (deadlines)");
    for (i = 0; i < N_TIMERS; i++)
        d[i] = (uint8_t)(1 + bench_splitmix64_next(&rng) % 100);
    return d;
}

/* ---------------------------------------------------------------------------
 * timers_1m_random
 * ------------------------------------------------------------------------- */

/* `async move { sleep(ms).await; c.arrive(); }` */
typedef struct sleeper_state {
    BLITZ_CORO;
    uint8_t ms;
    bench_countdown *cd;
    blitz_timer timer;
} sleeper_state;
static blitz_poll sleeper_poll(blitz_cx *cx, void *p) {
    sleeper_state *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, (int64_t)s->ms * BLITZ_MSEC));
    bench_countdown_arrive(s->cd);
    BLITZ_END(s);
}

/* The root task: spawns the N_TIMERS sleepers in one poll. */
typedef struct random_root_state {
    bench_countdown *cd;
    const uint8_t *d;
} random_root_state;
static blitz_poll random_root_poll(blitz_cx *cx, void *p) {
    random_root_state *s = p;
    blitz_runtime *rt = blitz_cx_runtime(cx);
    sleeper_state t;
    size_t i;
    memset(&t, 0, sizeof t);
    t.cd = s->cd;
    for (i = 0; i < N_TIMERS; i++) {
        t.ms = s->d[i];
        bench_spawn(rt, sleeper_poll, &t, sizeof t, NULL);
    }
    return BLITZ_READY;
}

typedef struct random_ctx {
    blitz_runtime *rt;
    const uint8_t *d;
} random_ctx;
static uint64_t timers_1m_random_iter(void *ctx) {
    random_ctx *c = ctx;
    bench_countdown cd;
    random_root_state root;
    uint64_t t0, dt;
    bench_countdown_init(&cd, N_TIMERS);
    root.cd = &cd;
    root.d = c->d;
    t0 = bench_now_ns();
    bench_block_on_countdown(c->rt, &cd, random_root_poll, &root, sizeof root);
    dt = bench_now_ns() - t0;
    bench_countdown_destroy(&cd);
    return dt;
}

static void timers_1m_random(bench_flavor f, const uint8_t *d, double *samples) {
    random_ctx c;
    c.rt = bench_runtime_new(f);
    c.d = d;
    bench_sample_reps(WARMUP, BENCH_RUNS, 1, timers_1m_random_iter, &c, samples);
    bench_runtime_free(c.rt);
}

/* ---------------------------------------------------------------------------
 * timers_1m_random lateness pass
 * ------------------------------------------------------------------------- */

typedef struct lateness {
    bench_countdown cd;
    uint32_t *late_us;   /* UINT32_MAX: not recorded */
    atomic_size_t early; /* woke before the target (must stay 0) */
    atomic_uint_least64_t early_max_ns;
} lateness;

/* `async move { target = now + ms; sleep_until(target).await;
 *               late_us[i] = (now - target) in us; cd.arrive(); }` */
typedef struct late_state {
    BLITZ_CORO;
    uint8_t ms;
    uint32_t i;
    lateness *sh;
    uint64_t target;
    blitz_timer timer;
} late_state;
static blitz_poll late_poll(blitz_cx *cx, void *p) {
    late_state *s = p;
    uint64_t now, late;
    BLITZ_BEGIN(s);
    s->target = blitz_deadline_after(blitz_cx_now(cx), (int64_t)s->ms * BLITZ_MSEC);
    BLITZ_AWAIT(s, blitz_sleep_until(cx, &s->timer, s->target));
    now = blitz_cx_now(cx);
    if (now < s->target) { /* saturating_duration_since gives 0; count it */
        uint64_t e = s->target - now;
        uint64_t m = atomic_load_explicit(&s->sh->early_max_ns, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->sh->early, 1, memory_order_relaxed);
        while (e > m &&
               !atomic_compare_exchange_weak_explicit(&s->sh->early_max_ns, &m, e,
                                                      memory_order_relaxed, memory_order_relaxed)) {
        }
        late = 0;
    } else {
        late = (now - s->target) / 1000u; /* as_micros() truncates */
    }
    s->sh->late_us[s->i] = late < UINT32_MAX - 1u ? (uint32_t)late : UINT32_MAX - 1u;
    bench_countdown_arrive(&s->sh->cd);
    BLITZ_END(s);
}

typedef struct late_root_state {
    lateness *sh;
    const uint8_t *d;
} late_root_state;
static blitz_poll late_root_poll(blitz_cx *cx, void *p) {
    late_root_state *s = p;
    blitz_runtime *rt = blitz_cx_runtime(cx);
    late_state t;
    size_t i;
    memset(&t, 0, sizeof t);
    t.sh = s->sh;
    for (i = 0; i < N_TIMERS; i++) {
        t.ms = s->d[i];
        t.i = (uint32_t)i;
        bench_spawn(rt, late_poll, &t, sizeof t, NULL);
    }
    return BLITZ_READY;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* One pass; returns the sorted lateness table (us), N_TIMERS entries. */
static uint32_t *timers_1m_lateness(bench_flavor f, const uint8_t *d) {
    blitz_runtime *rt = bench_runtime_new(f);
    lateness sh;
    late_root_state root;
    size_t i, early;
    memset(&sh, 0, sizeof sh);
    bench_countdown_init(&sh.cd, N_TIMERS);
    atomic_init(&sh.early, 0);
    atomic_init(&sh.early_max_ns, 0);
    sh.late_us = malloc((size_t)N_TIMERS * sizeof *sh.late_us);
    if (!sh.late_us)
        bench_die("out of memory (lateness)");
    for (i = 0; i < N_TIMERS; i++)
        sh.late_us[i] = UINT32_MAX;
    root.sh = &sh;
    root.d = d;
    bench_block_on_countdown(rt, &sh.cd, late_root_poll, &root, sizeof root);
    bench_countdown_destroy(&sh.cd);
    bench_runtime_free(rt);
    for (i = 0; i < N_TIMERS; i++)
        if (sh.late_us[i] == UINT32_MAX)
            bench_die("timer %zu recorded no lateness", i);
    early = atomic_load(&sh.early);
    if (early)
        fprintf(stderr, "# timers_1m_random_late_%s EARLY wakes=%zu max_early_ns=%llu\n",
                bench_flavor_suffix(f), early, (unsigned long long)atomic_load(&sh.early_max_ns));
    qsort(sh.late_us, N_TIMERS, sizeof *sh.late_us, cmp_u32);
    return sh.late_us;
}

/* The anchor's percentile(): index round((len - 1) * p). */
static uint32_t percentile(const uint32_t *sorted, size_t n, double p) {
    size_t idx = (size_t)((double)(n - 1) * p + 0.5);
    return sorted[idx];
}

/* ---------------------------------------------------------------------------
 * timers_heavy_10k_x100
 * ------------------------------------------------------------------------- */

/* `async move { for _ in 0..100 { sleep(1 ms).await } c.arrive(); }` */
typedef struct heavy_state {
    BLITZ_CORO;
    int k;
    bench_countdown *cd;
    blitz_timer timer;
} heavy_state;
static blitz_poll heavy_poll(blitz_cx *cx, void *p) {
    heavy_state *s = p;
    BLITZ_BEGIN(s);
    for (s->k = 0; s->k < HEAVY_SLEEPS; s->k++)
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, HEAVY_SLEEP_NS));
    bench_countdown_arrive(s->cd);
    BLITZ_END(s);
}

typedef struct heavy_root_state {
    bench_countdown *cd;
} heavy_root_state;
static blitz_poll heavy_root_poll(blitz_cx *cx, void *p) {
    heavy_root_state *s = p;
    blitz_runtime *rt = blitz_cx_runtime(cx);
    heavy_state t;
    size_t i;
    memset(&t, 0, sizeof t);
    t.cd = s->cd;
    for (i = 0; i < HEAVY_TASKS; i++)
        bench_spawn(rt, heavy_poll, &t, sizeof t, NULL);
    return BLITZ_READY;
}

static uint64_t timers_heavy_iter(void *ctx) {
    blitz_runtime *rt = ctx;
    bench_countdown cd;
    heavy_root_state root;
    uint64_t t0, dt;
    bench_countdown_init(&cd, HEAVY_TASKS);
    root.cd = &cd;
    t0 = bench_now_ns();
    bench_block_on_countdown(rt, &cd, heavy_root_poll, &root, sizeof root);
    dt = bench_now_ns() - t0;
    bench_countdown_destroy(&cd);
    return dt;
}

static void timers_heavy(bench_flavor f, double *samples) {
    blitz_runtime *rt = bench_runtime_new(f);
    bench_sample_reps(WARMUP, BENCH_RUNS, 1, timers_heavy_iter, rt, samples);
    bench_runtime_free(rt);
}

/* ---------------------------------------------------------------------------
 * main (the anchor's timers::run)
 * ------------------------------------------------------------------------- */

/* Runs a benchmark when the filter selects any of the names it emits. */
static int selected2(const char *a, const char *b, const char *sfx) {
    char n[128];
    snprintf(n, sizeof n, "%s_%s", a, sfx);
    if (bench_selected(n))
        return 1;
    snprintf(n, sizeof n, "%s_%s", b, sfx);
    return bench_selected(n);
}

int main(int argc, char **argv) {
    static const bench_flavor flavors[2] = {BENCH_MT2, BENCH_CT};
    bench_cpu_snapshot cpu0;
    uint8_t *d;
    uint64_t sum = 0;
    size_t i;
    int k;
    char name[128];

    bench_cpu_snapshot_take(&cpu0);
    bench_set_filter(argc - 1, argv + 1);
    bench_watchdog(WATCHDOG_S, "timers");
    d = deadlines_ms();
    bench_cpu_warmup();
    for (i = 0; i < N_TIMERS; i++)
        sum += d[i];
    fprintf(
        stderr,
        "# timer deadlines: n=%d seed=0x%llx first8=[%u, %u, %u, %u, %u, %u, %u, %u] sum_ms=%llu\n",
        N_TIMERS, (unsigned long long)TIMER_SEED, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7],
        (unsigned long long)sum);

    for (k = 0; k < 2; k++) {
        bench_flavor f = flavors[k];
        const char *sfx = bench_flavor_suffix(f);
        double s[BENCH_RUNS];

        if (selected2("timers_1m_random_total", "timers_1m_random_per_timer", sfx)) {
            snprintf(name, sizeof name, "timers_1m_random_total_%s", sfx);
            timers_1m_random(f, d, s);
            bench_emit_ms(name, s, BENCH_RUNS);
            snprintf(name, sizeof name, "timers_1m_random_per_timer_%s", sfx);
            bench_emit_ns_per_op(name, s, BENCH_RUNS, N_TIMERS);
        }

        if (selected2("timers_1m_random_late_p50", "timers_1m_random_late_p99", sfx)) {
            snprintf(name, sizeof name, "timers_1m_random_late_%s", sfx);
            uint32_t *late = timers_1m_lateness(f, d);
            double v[3];
            v[0] = percentile(late, N_TIMERS, 0.50) / 1000.0;
            v[1] = percentile(late, N_TIMERS, 0.99) / 1000.0;
            v[2] = late[N_TIMERS - 1] / 1000.0;
            free(late);
            bench_note(name, "p50_p99_max_ms", v, 3);
            snprintf(name, sizeof name, "timers_1m_random_late_p50_%s", sfx);
            bench_emit(name, v[0], "ms");
            snprintf(name, sizeof name, "timers_1m_random_late_p99_%s", sfx);
            bench_emit(name, v[1], "ms");
        }

        if (selected2("timers_heavy_10k_x100_total", "timers_heavy_10k_x100_per_sleep", sfx)) {
            snprintf(name, sizeof name, "timers_heavy_10k_x100_total_%s", sfx);
            timers_heavy(f, s);
            bench_emit_ms(name, s, BENCH_RUNS);
            snprintf(name, sizeof name, "timers_heavy_10k_x100_per_sleep_%s", sfx);
            bench_emit_ns_per_op(name, s, BENCH_RUNS, (size_t)HEAVY_TASKS * HEAVY_SLEEPS);
        }
    }
    free(d);
    bench_cpu_report_since(&cpu0, "timers");
    return 0;
}
