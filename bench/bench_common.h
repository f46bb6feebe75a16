/* Shared helpers of the blitz benchmarks: timing, statistics, the output
 * format of the anchors (../shared/anchors/), runtimes of the two flavours,
 * a process watchdog, the RSS probe, SplitMix64, and bench-local stand-ins
 * for the Tokio primitives the anchor uses (Countdown = atomic counter +
 * Notify, oneshot, bounded(1) mpsc) built only on blitz's public waker API.
 *
 * Mirrors ../shared/anchors/tokio/src/common.rs. Output:
 *   stdout: bench=<name> value=<%.4f> unit=<unit> impl=blitz
 *   stderr: # <name> run_ns=[...]   (raw samples and diagnostics)
 *
 * This header includes blitz.h for declarations only; the benchmark program
 * defines BLITZ_IMPLEMENTATION before its own #include "blitz.h". */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include "blitz.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Measured runs per benchmark; the reported value is their median. */
#define BENCH_RUNS 5
/* Worker threads of the multi-thread runtime ("mt2"). */
#define BENCH_MT_WORKERS 2

/* ---------------------------------------------------------------------------
 * Failure, time, statistics, output
 * ------------------------------------------------------------------------- */

#if defined(__GNUC__) || defined(__clang__)
#define BENCH_NORETURN     __attribute__((noreturn))
#define BENCH_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define BENCH_NORETURN
#define BENCH_PRINTF(a, b)
#endif

/* Prints "# fatal: ..." to stderr and exits with status 1. */
BENCH_NORETURN BENCH_PRINTF(1, 2) void bench_die(const char *fmt, ...);
/* Dies with the call's text and blitz_strerror() unless `call` is BLITZ_OK. */
#define BENCH_CHECK(call)                                                          \
    do {                                                                           \
        int bench_rc_ = (call);                                                    \
        if (bench_rc_ != BLITZ_OK)                                                 \
            bench_die("%s:%d: %s = %d (%s)", __FILE__, __LINE__, #call, bench_rc_, \
                      blitz_strerror(bench_rc_));                                  \
    } while (0)

/* CLOCK_MONOTONIC in nanoseconds (what Rust's Instant uses on Linux). */
uint64_t bench_now_ns(void);
/* Busy-waits `ns` without yielding the thread (Tokio anchor's stall()). */
void bench_stall_ns(uint64_t ns);
/* Spins 200 ms so the vCPU is busy before the first measurement. */
void bench_cpu_warmup(void);
/* Sleeps the calling thread (not a busy wait). */
void bench_sleep_ns(uint64_t ns);

double bench_median(const double *xs, size_t n);

/* One result line on stdout (flushed at once, like Rust's println!). */
void bench_emit(const char *name, double value, const char *unit);
/* Raw samples on stderr: "# <name> <what>=[a,b,...]". */
void bench_note(const char *name, const char *what, const double *samples, size_t n);
/* note(name, "run_ns", samples) then emit(name, median / ops, "ns/op"). */
void bench_emit_ns_per_op(const char *name, const double *samples_ns, size_t n, size_t ops);
/* note(name, "run_ns", samples) then emit(name, median / 1e6, "ms"). */
void bench_emit_ms(const char *name, const double *samples_ns, size_t n);

/* One timed iteration: returns the nanoseconds of its measured region. */
typedef uint64_t (*bench_iter_fn)(void *ctx);
/* common.rs sample_reps: `warmup * reps` iterations discarded, then `runs`
 * samples, each the sum of `reps` back-to-back iterations' measured regions.
 * Writes `runs` samples (ns) to `out`. */
void bench_sample_reps(size_t warmup, size_t runs, size_t reps, bench_iter_fn f, void *ctx,
                       double *out);

/* Exits the process with status 124 if it still runs after `secs` seconds
 * (the environment variable BENCH_WATCHDOG_S overrides `secs`). */
void bench_watchdog(unsigned secs, const char *what);

/* Optimisation barrier: a volatile round trip, as the anchor's black_box. */
static inline uint64_t bench_black_box(uint64_t x) {
    volatile uint64_t v = x;
    return v;
}

/* Nonzero when `name` is selected by the program's arguments: no filter
 * arguments select everything, otherwise `name` must contain one of them. */
void bench_set_filter(int argc, char **argv);
int bench_selected(const char *name);

/* ---------------------------------------------------------------------------
 * Runtimes
 * ------------------------------------------------------------------------- */

typedef enum bench_flavor {
    BENCH_MT2 = 0, /* BLITZ_MULTI_THREAD with 2 workers */
    BENCH_CT = 1,  /* BLITZ_CURRENT_THREAD */
} bench_flavor;

const char *bench_flavor_suffix(bench_flavor f); /* "mt2" / "ct" */
uint32_t bench_flavor_workers(bench_flavor f);   /* threads that run tasks: 2 / 1 */
/* A fresh runtime of the flavour, defaults otherwise; dies on error. */
blitz_runtime *bench_runtime_new(bench_flavor f);
void bench_runtime_free(blitz_runtime *rt);
/* blitz_runtime_run (Tokio's block_on); dies unless it returns BLITZ_OK. */
void bench_block_on(blitz_runtime *rt, blitz_poll_fn poll, void *state, size_t size);
/* blitz_spawn; dies on any error. */
void bench_spawn(blitz_runtime *rt, blitz_poll_fn poll, const void *state, size_t size,
                 blitz_task **handle);

/* ---------------------------------------------------------------------------
 * Machine probes
 * ------------------------------------------------------------------------- */

/* Resident set size from /proc/self/status (VmRSS), in bytes. */
uint64_t bench_vm_rss_bytes(void);

/* SplitMix64 (Steele, Lea, Flood 2014), the sequence the anchors use. */
typedef struct bench_splitmix64 {
    uint64_t state;
} bench_splitmix64;
static inline uint64_t bench_splitmix64_next(bench_splitmix64 *r) {
    uint64_t z;
    r->state += 0x9E3779B97F4A7C15ull;
    z = r->state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* CPU accounting of common.rs CpuSnapshot: prints on stdout
 * "# group=<what> wall_s=.. foreign_cpu_pct=.. steal_pct=.." for the time
 * since the snapshot (other processes' CPU share while the group ran). */
typedef struct bench_cpu_snapshot {
    uint64_t at_ns;
    uint64_t machine_busy;
    uint64_t steal;
    uint64_t own;
} bench_cpu_snapshot;
void bench_cpu_snapshot_take(bench_cpu_snapshot *s);
void bench_cpu_report_since(const bench_cpu_snapshot *s, const char *what);

/* ---------------------------------------------------------------------------
 * Bench-local synchronisation (stand-ins until blitz ships its own)
 *
 * Each is a few words guarded by a tiny spinlock. A waiter registers its
 * waker and re-checks under the same lock that the waking side takes, so no
 * wake-up can be lost; wakers are woken after the lock is released. Every
 * message costs one wake of the waiting task, as in Tokio.
 * ------------------------------------------------------------------------- */

typedef struct bench_lock {
    atomic_int locked;
} bench_lock;

void bench_lock_contended(bench_lock *l);
static inline void bench_lock_acquire(bench_lock *l) {
    if (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) != 0)
        bench_lock_contended(l);
}
static inline void bench_lock_release(bench_lock *l) {
    atomic_store_explicit(&l->locked, 0, memory_order_release);
}

/* Countdown (common.rs): `n` tasks call arrive, the one that brings the
 * counter to zero signals the single waiter. Like Notify::notify_one, the
 * signal is stored as a permit when nobody waits yet. */
typedef struct bench_countdown {
    atomic_size_t remaining;
    bench_lock lock;
    int notified;       /* the permit */
    blitz_waker waiter; /* vtable == NULL: none */
} bench_countdown;

void bench_countdown_init(bench_countdown *cd, size_t n);
void bench_countdown_arrive(bench_countdown *cd);
/* Use with BLITZ_AWAIT: READY once the countdown reached zero. */
blitz_poll bench_countdown_wait(blitz_cx *cx, bench_countdown *cd);
/* Drops a waker still registered (a wait that never completed). */
void bench_countdown_destroy(bench_countdown *cd);

/* oneshot (tokio::sync::oneshot): heap block shared by one sender and one
 * receiver, freed by whichever lets go last (Tokio's Arc<Inner>). */
typedef struct bench_oneshot bench_oneshot;
/* A new channel; dies on allocation failure. */
bench_oneshot *bench_oneshot_new(void);
/* Sends and gives up the sender. 0, or -1 if the receiver is gone. */
int bench_oneshot_send(bench_oneshot *o, uint64_t value);
/* Use with BLITZ_AWAIT. READY with *ok = 1 and *out set, or *ok = 0 if the
 * sender was dropped without sending. */
blitz_poll bench_oneshot_recv(blitz_cx *cx, bench_oneshot *o, uint64_t *out, int *ok);
/* Gives up the receiver. */
void bench_oneshot_rx_drop(bench_oneshot *o);
/* Gives up the sender without sending (wakes the receiver). */
void bench_oneshot_tx_drop(bench_oneshot *o);

/* bounded(1) channel (tokio::sync::mpsc::channel(1)) with one sender and one
 * receiver: send waits while the slot is full, recv waits while it is empty;
 * recv returns *ok = 0 once the slot is empty and the sender is gone. */
typedef struct bench_chan bench_chan;
bench_chan *bench_chan_new(void);
/* Use with BLITZ_AWAIT. READY with *rc = 0 (sent) or *rc = -1 (receiver gone). */
blitz_poll bench_chan_send(blitz_cx *cx, bench_chan *c, uint64_t value, int *rc);
/* Use with BLITZ_AWAIT. READY with *ok = 1 and *out, or *ok = 0 (closed). */
blitz_poll bench_chan_recv(blitz_cx *cx, bench_chan *c, uint64_t *out, int *ok);
void bench_chan_tx_drop(bench_chan *c);
void bench_chan_rx_drop(bench_chan *c);

/* The block_on future of most benchmarks: optionally `tokio::spawn(root)`
 * (detached; root NULL: none), then `cd.wait().await`, run with
 * blitz_runtime_run. */
void bench_block_on_countdown(blitz_runtime *rt, bench_countdown *cd, blitz_poll_fn root,
                              const void *root_state, size_t root_size);

#endif /* BENCH_COMMON_H */
