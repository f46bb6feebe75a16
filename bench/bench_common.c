/* Shared helpers of the blitz benchmarks; see bench_common.h. This file
 * includes blitz.h for declarations only (the benchmark program holds the
 * implementation). */
#include "bench_common.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * Failure, time, statistics, output
 * ------------------------------------------------------------------------- */

void bench_die(const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "# fatal: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_stall_ns(uint64_t ns) {
    uint64_t start = bench_now_ns();
    while (bench_now_ns() - start < ns) {
#if defined(__x86_64__) || defined(__i386__)
        __asm__ __volatile__("pause");
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    }
}

void bench_cpu_warmup(void) {
    bench_stall_ns(200u * 1000u * 1000u);
}

void bench_sleep_ns(uint64_t ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(const double *xs, size_t n) {
    double *v;
    double m;
    if (n == 0)
        bench_die("median of nothing");
    v = malloc(n * sizeof *v);
    if (!v)
        bench_die("out of memory");
    memcpy(v, xs, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_double);
    m = (n % 2 == 1) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    free(v);
    return m;
}

void bench_emit(const char *name, double value, const char *unit) {
    printf("bench=%s value=%.4f unit=%s impl=blitz\n", name, value, unit);
    fflush(stdout);
}

void bench_note(const char *name, const char *what, const double *samples, size_t n) {
    size_t i;
    fprintf(stderr, "# %s %s=[", name, what);
    for (i = 0; i < n; i++)
        fprintf(stderr, "%s%.3f", i ? "," : "", samples[i]);
    fprintf(stderr, "]\n");
}

void bench_emit_ns_per_op(const char *name, const double *samples_ns, size_t n, size_t ops) {
    bench_note(name, "run_ns", samples_ns, n);
    bench_emit(name, bench_median(samples_ns, n) / (double)ops, "ns/op");
}

void bench_emit_ms(const char *name, const double *samples_ns, size_t n) {
    bench_note(name, "run_ns", samples_ns, n);
    bench_emit(name, bench_median(samples_ns, n) / 1e6, "ms");
}

void bench_sample_reps(size_t warmup, size_t runs, size_t reps, bench_iter_fn f, void *ctx,
                       double *out) {
    size_t i, r;
    for (i = 0; i < warmup * reps; i++)
        (void)f(ctx);
    for (i = 0; i < runs; i++) {
        uint64_t total = 0;
        for (r = 0; r < reps; r++)
            total += f(ctx);
        out[i] = (double)total;
    }
}

typedef struct watchdog_arg {
    unsigned secs;
    const char *what;
} watchdog_arg;

static void *watchdog_main(void *p) {
    watchdog_arg *a = p;
    bench_sleep_ns((uint64_t)a->secs * 1000000000u);
    fprintf(stderr, "# watchdog: '%s' exceeded %u s, exiting\n", a->what, a->secs);
    fflush(stdout);
    _exit(124);
    return NULL;
}

void bench_watchdog(unsigned secs, const char *what) {
    static watchdog_arg arg;
    pthread_t th;
    pthread_attr_t attr;
    const char *env = getenv("BENCH_WATCHDOG_S");
    if (env && atoi(env) > 0)
        secs = (unsigned)atoi(env);
    arg.secs = secs;
    arg.what = what;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, watchdog_main, &arg) != 0)
        bench_die("cannot start the watchdog thread");
    pthread_attr_destroy(&attr);
}

static int filter_argc;
static char **filter_argv;

void bench_set_filter(int argc, char **argv) {
    filter_argc = argc;
    filter_argv = argv;
}

int bench_selected(const char *name) {
    int i;
    if (filter_argc <= 0)
        return 1;
    for (i = 0; i < filter_argc; i++)
        if (strstr(name, filter_argv[i]))
            return 1;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Runtimes
 * ------------------------------------------------------------------------- */

const char *bench_flavor_suffix(bench_flavor f) {
    return f == BENCH_MT2 ? "mt2" : "ct";
}

uint32_t bench_flavor_workers(bench_flavor f) {
    return f == BENCH_MT2 ? BENCH_MT_WORKERS : 1;
}

blitz_runtime *bench_runtime_new(bench_flavor f) {
    blitz_config cfg;
    blitz_runtime *rt = NULL;
    memset(&cfg, 0, sizeof cfg);
    if (f == BENCH_MT2) {
        cfg.flavor = BLITZ_MULTI_THREAD;
        cfg.workers =
            getenv("BENCH_WORKERS") ? (uint32_t)atoi(getenv("BENCH_WORKERS")) : BENCH_MT_WORKERS;
    } else {
        cfg.flavor = BLITZ_CURRENT_THREAD;
    }
    /* BENCH_METRICS=1 measures with metrics on (busy time, sampled poll
     * durations). */
    const char *metrics = getenv("BENCH_METRICS");
    cfg.metrics = metrics && *metrics == '1';
    BENCH_CHECK(blitz_runtime_new(&cfg, &rt));
    return rt;
}

void bench_runtime_free(blitz_runtime *rt) {
    /* BENCH_STATS=1 prints each runtime's scheduler counters (stderr). */
    const char *show = getenv("BENCH_STATS");
    if (show && *show == '1') {
        uint32_t n = blitz_runtime_workers(rt);
        for (uint32_t i = 0; i < n; i++) {
            blitz_worker_stats ws;
            if (blitz_runtime_worker_stats(rt, i, &ws) == 0)
                fprintf(stderr,
                        "# worker %u: polled %llu stolen %llu steals %llu parked %llu lifo %llu "
                        "batches %llu overflows %llu interval %u\n",
                        i, (unsigned long long)ws.tasks_polled, (unsigned long long)ws.tasks_stolen,
                        (unsigned long long)ws.steals, (unsigned long long)ws.times_parked,
                        (unsigned long long)ws.lifo_hits,
                        (unsigned long long)ws.global_batch_fetches,
                        (unsigned long long)ws.overflows, ws.global_queue_interval);
        }
    }
    BENCH_CHECK(blitz_runtime_free(rt));
}

void bench_block_on(blitz_runtime *rt, blitz_poll_fn poll, void *state, size_t size) {
    BENCH_CHECK(blitz_runtime_run(rt, poll, state, size));
}

void bench_spawn(blitz_runtime *rt, blitz_poll_fn poll, const void *state, size_t size,
                 blitz_task **handle) {
    BENCH_CHECK(blitz_spawn(rt, poll, state, size, handle));
}

/* ---------------------------------------------------------------------------
 * Machine probes
 * ------------------------------------------------------------------------- */

uint64_t bench_vm_rss_bytes(void) {
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        bench_die("open /proc/self/status: %s", strerror(errno));
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            unsigned long long kb = strtoull(line + 6, NULL, 10);
            fclose(f);
            return (uint64_t)kb * 1024u;
        }
    }
    fclose(f);
    bench_die("VmRSS not found in /proc/self/status");
}

void bench_cpu_snapshot_take(bench_cpu_snapshot *s) {
    unsigned long long f[10] = {0};
    unsigned long long v[16] = {0};
    char buf[4096];
    size_t n;
    FILE *fp;
    memset(s, 0, sizeof *s);
    s->at_ns = bench_now_ns();
    fp = fopen("/proc/stat", "r");
    if (fp) {
        /* cpu user nice system idle iowait irq softirq steal ... */
        if (fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3],
                   &f[4], &f[5], &f[6], &f[7]) != 8)
            memset(f, 0, sizeof f);
        fclose(fp);
    }
    /* irq/softirq left out, as in common.rs. */
    s->machine_busy = f[0] + f[1] + f[2];
    s->steal = f[7];
    fp = fopen("/proc/self/stat", "r");
    if (fp) {
        n = fread(buf, 1, sizeof buf - 1, fp);
        buf[n] = 0;
        fclose(fp);
        {
            /* Fields after the ")" of the command name: state is field 3,
             * utime 14, stime 15, cutime 16, cstime 17. */
            char *p = strrchr(buf, ')');
            int i = 0;
            if (p) {
                p++;
                while (*p == ' ')
                    p++;
                /* skip the state field */
                while (*p && *p != ' ')
                    p++;
                for (i = 0; i < 16 && *p; i++)
                    v[i] = strtoull(p, &p, 10);
            }
            /* v[0] is field 4, so field N is v[N - 4]. */
            s->own = v[10] + v[11] + v[12] + v[13];
        }
    }
}

void bench_cpu_report_since(const bench_cpu_snapshot *s, const char *what) {
    bench_cpu_snapshot now;
    double hz = 100.0, ncpu, secs, cap, foreign, steal;
    long np = sysconf(_SC_NPROCESSORS_ONLN);
    bench_cpu_snapshot_take(&now);
    ncpu = np > 0 ? (double)np : 1.0;
    secs = (double)(now.at_ns - s->at_ns) / 1e9;
    if (secs < 1e-3)
        secs = 1e-3;
    cap = secs * hz * ncpu;
    foreign =
        (now.machine_busy > s->machine_busy ? (double)(now.machine_busy - s->machine_busy) : 0.0) -
        (now.own > s->own ? (double)(now.own - s->own) : 0.0);
    steal = now.steal > s->steal ? (double)(now.steal - s->steal) : 0.0;
    if (foreign < 0)
        foreign = 0;
    printf("# group=%s wall_s=%.1f foreign_cpu_pct=%.1f steal_pct=%.1f\n", what, secs,
           100.0 * foreign / cap, 100.0 * steal / cap);
    fflush(stdout);
}

/* ---------------------------------------------------------------------------
 * Synchronisation
 * ------------------------------------------------------------------------- */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void bench_lock_contended(bench_lock *l) {
    unsigned spins = 0;
    for (;;) {
        while (atomic_load_explicit(&l->locked, memory_order_relaxed) != 0) {
            /* The holder may have been descheduled (2 vCPUs, more threads):
             * give the CPU away after a short spin. */
            if (++spins < 128)
                cpu_relax();
            else
                sched_yield();
        }
        if (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0)
            return;
    }
}

#define WAKER_NONE ((blitz_waker){NULL, NULL})

/* Stores the running task's waker in `slot` (caller holds the lock); keeps
 * the stored one when it wakes the same task. */
static void waker_register(blitz_waker *slot, blitz_cx *cx) {
    blitz_waker cur = blitz_cx_waker(cx);
    if (slot->vtable) {
        if (blitz_waker_will_wake(slot, &cur))
            return;
        blitz_waker_drop(*slot);
    }
    *slot = blitz_waker_clone(&cur);
}

/* Takes the waker out of `slot` (caller holds the lock). */
static blitz_waker waker_take(blitz_waker *slot) {
    blitz_waker w = *slot;
    *slot = WAKER_NONE;
    return w;
}

static void waker_wake_if(blitz_waker w) {
    if (w.vtable)
        blitz_waker_wake(w);
}

static void waker_drop_if(blitz_waker w) {
    if (w.vtable)
        blitz_waker_drop(w);
}

/* --- countdown ----------------------------------------------------------- */

void bench_countdown_init(bench_countdown *cd, size_t n) {
    if (n == 0)
        bench_die("countdown of 0");
    atomic_init(&cd->remaining, n);
    atomic_init(&cd->lock.locked, 0);
    cd->notified = 0;
    cd->waiter = WAKER_NONE;
}

void bench_countdown_arrive(bench_countdown *cd) {
    blitz_waker w;
    if (atomic_fetch_sub_explicit(&cd->remaining, 1, memory_order_acq_rel) != 1)
        return;
    /* notify_one: wake the waiter, or store the permit. After the unlock
     * nothing here touches *cd, which the woken waiter may free. */
    bench_lock_acquire(&cd->lock);
    cd->notified = 1;
    w = waker_take(&cd->waiter);
    bench_lock_release(&cd->lock);
    waker_wake_if(w);
}

blitz_poll bench_countdown_wait(blitz_cx *cx, bench_countdown *cd) {
    blitz_poll r = BLITZ_PENDING;
    bench_lock_acquire(&cd->lock);
    if (cd->notified) {
        cd->notified = 0;
        r = BLITZ_READY;
    } else {
        waker_register(&cd->waiter, cx);
    }
    bench_lock_release(&cd->lock);
    return r;
}

void bench_countdown_destroy(bench_countdown *cd) {
    waker_drop_if(waker_take(&cd->waiter));
}

/* --- oneshot ------------------------------------------------------------- */

struct bench_oneshot {
    bench_lock lock;
    int refs; /* sender + receiver still held */
    int has_value;
    int tx_gone;
    int rx_gone;
    uint64_t value;
    blitz_waker rx_waker;
};

bench_oneshot *bench_oneshot_new(void) {
    bench_oneshot *o = malloc(sizeof *o);
    if (!o)
        bench_die("out of memory (oneshot)");
    atomic_init(&o->lock.locked, 0);
    o->refs = 2;
    o->has_value = 0;
    o->tx_gone = 0;
    o->rx_gone = 0;
    o->value = 0;
    o->rx_waker = WAKER_NONE;
    return o;
}

static void oneshot_free(bench_oneshot *o) {
    waker_drop_if(o->rx_waker);
    free(o);
}

/* Gives up the sender; with `send`, the value is stored first. */
static int oneshot_tx_release(bench_oneshot *o, int send, uint64_t value) {
    blitz_waker w;
    int rc = 0, last;
    bench_lock_acquire(&o->lock);
    if (send) {
        if (o->rx_gone) {
            rc = -1;
        } else {
            o->value = value;
            o->has_value = 1;
        }
    }
    o->tx_gone = 1;
    w = waker_take(&o->rx_waker);
    last = --o->refs == 0;
    bench_lock_release(&o->lock);
    waker_wake_if(w);
    if (last)
        oneshot_free(o);
    return rc;
}

int bench_oneshot_send(bench_oneshot *o, uint64_t value) {
    return oneshot_tx_release(o, 1, value);
}

void bench_oneshot_tx_drop(bench_oneshot *o) {
    (void)oneshot_tx_release(o, 0, 0);
}

blitz_poll bench_oneshot_recv(blitz_cx *cx, bench_oneshot *o, uint64_t *out, int *ok) {
    blitz_poll r = BLITZ_READY;
    bench_lock_acquire(&o->lock);
    if (o->has_value) {
        *out = o->value;
        *ok = 1;
    } else if (o->tx_gone) {
        *ok = 0;
    } else {
        waker_register(&o->rx_waker, cx);
        r = BLITZ_PENDING;
    }
    bench_lock_release(&o->lock);
    return r;
}

void bench_oneshot_rx_drop(bench_oneshot *o) {
    int last;
    bench_lock_acquire(&o->lock);
    o->rx_gone = 1;
    last = --o->refs == 0;
    bench_lock_release(&o->lock);
    if (last)
        oneshot_free(o);
}

/* --- bounded(1) channel -------------------------------------------------- */

struct bench_chan {
    bench_lock lock;
    int refs; /* sender + receiver still held */
    int full;
    int tx_gone;
    int rx_gone;
    uint64_t value;
    blitz_waker rx_waker; /* receiver waiting for a value */
    blitz_waker tx_waker; /* sender waiting for the slot */
};

bench_chan *bench_chan_new(void) {
    bench_chan *c = malloc(sizeof *c);
    if (!c)
        bench_die("out of memory (channel)");
    atomic_init(&c->lock.locked, 0);
    c->refs = 2;
    c->full = 0;
    c->tx_gone = 0;
    c->rx_gone = 0;
    c->value = 0;
    c->rx_waker = WAKER_NONE;
    c->tx_waker = WAKER_NONE;
    return c;
}

static void chan_free(bench_chan *c) {
    waker_drop_if(c->rx_waker);
    waker_drop_if(c->tx_waker);
    free(c);
}

blitz_poll bench_chan_send(blitz_cx *cx, bench_chan *c, uint64_t value, int *rc) {
    blitz_waker w = WAKER_NONE;
    blitz_poll r = BLITZ_READY;
    bench_lock_acquire(&c->lock);
    if (c->rx_gone) {
        *rc = -1;
    } else if (!c->full) {
        c->value = value;
        c->full = 1;
        w = waker_take(&c->rx_waker);
        *rc = 0;
    } else {
        waker_register(&c->tx_waker, cx);
        r = BLITZ_PENDING;
    }
    bench_lock_release(&c->lock);
    waker_wake_if(w);
    return r;
}

blitz_poll bench_chan_recv(blitz_cx *cx, bench_chan *c, uint64_t *out, int *ok) {
    blitz_waker w = WAKER_NONE;
    blitz_poll r = BLITZ_READY;
    bench_lock_acquire(&c->lock);
    if (c->full) {
        *out = c->value;
        c->full = 0;
        w = waker_take(&c->tx_waker); /* the slot is free again */
        *ok = 1;
    } else if (c->tx_gone) {
        *ok = 0;
    } else {
        waker_register(&c->rx_waker, cx);
        r = BLITZ_PENDING;
    }
    bench_lock_release(&c->lock);
    waker_wake_if(w);
    return r;
}

void bench_chan_tx_drop(bench_chan *c) {
    blitz_waker w;
    int last;
    bench_lock_acquire(&c->lock);
    c->tx_gone = 1;
    w = waker_take(&c->rx_waker);
    last = --c->refs == 0;
    bench_lock_release(&c->lock);
    waker_wake_if(w);
    if (last)
        chan_free(c);
}

void bench_chan_rx_drop(bench_chan *c) {
    blitz_waker w;
    int last;
    bench_lock_acquire(&c->lock);
    c->rx_gone = 1;
    w = waker_take(&c->tx_waker);
    last = --c->refs == 0;
    bench_lock_release(&c->lock);
    waker_wake_if(w);
    if (last)
        chan_free(c);
}

/* The block_on future of most benchmarks: optionally `tokio::spawn(root)`
 * (detached), then `cd.wait().await`. */
typedef struct spawn_wait_state {
    BLITZ_CORO;
    bench_countdown *cd;
    blitz_poll_fn root; /* NULL: only wait */
    const void *root_state;
    size_t root_size;
} spawn_wait_state;
static blitz_poll spawn_wait_poll(blitz_cx *cx, void *p) {
    spawn_wait_state *s = p;
    BLITZ_BEGIN(s);
    if (s->root)
        bench_spawn(blitz_cx_runtime(cx), s->root, s->root_state, s->root_size, NULL);
    BLITZ_AWAIT(s, bench_countdown_wait(cx, s->cd));
    BLITZ_END(s);
}

void bench_block_on_countdown(blitz_runtime *rt, bench_countdown *cd, blitz_poll_fn root,
                              const void *root_state, size_t root_size) {
    spawn_wait_state m;
    memset(&m, 0, sizeof m);
    m.cd = cd;
    m.root = root;
    m.root_state = root_state;
    m.root_size = root_size;
    bench_block_on(rt, spawn_wait_poll, &m, sizeof m);
}
