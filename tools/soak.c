/* A soak: a mixed load for SOAK_SECONDS (default 600), sampled every
 * SOAK_INTERVAL seconds (default 10).
 *
 *   echo      a served echo (blitz_serve) and client tasks that reconnect
 *             every 64 messages; every echoed byte is checked
 *   channel   producers send sequence numbers through a bounded channel
 *             to consumers, which sum them: nothing lost or doubled
 *   timers    sleepers with varied periods, and timeouts around a wait
 *             that is never notified (each must expire)
 *   spawn     a task that spawns and joins short children, in bursts
 *   pool      blocking-pool jobs
 *
 * Each sample prints the resident memory and what every load did since
 * the last one. It fails (exit 1) when a load made no progress in an
 * interval (a stuck task), when the resident memory of the last sample
 * exceeds the first sample after warm-up by more than 10% + 4 MiB, or
 * when anything was lost. `make soak` builds and runs it. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ECHO_CLIENTS   32
#define ECHO_PER_CONN  64
#define PRODUCERS      4
#define CONSUMERS      4
#define SLEEPERS       64
#define TIMEOUTS       16
#define SPAWN_BURST    256
#define POOL_FEEDERS   2
#define ECHO_MAX       4096
#define WARMUP_SAMPLES 2

enum { L_ECHO, L_CHAN, L_SLEEP, L_TIMEOUT, L_SPAWN, L_POOL, L_COUNT };
static const char *const load_names[L_COUNT] = {"echo",    "chan",  "sleep",
                                                "timeout", "spawn", "pool"};

typedef struct {
    atomic_int stop;
    atomic_ullong done[L_COUNT];
    atomic_ullong echo_bad, chan_sent, chan_sum_sent, chan_got, chan_sum_got;
    blitz_addr addr;
    blitz_chan *chan;
    blitz_notify never;
} soak;

static int stopping(const soak *k) {
    return atomic_load_explicit(&k->stop, memory_order_relaxed);
}

static void count(soak *k, int load) {
    atomic_fetch_add_explicit(&k->done[load], 1, memory_order_relaxed);
}

/* ---- echo ------------------------------------------------------------------------ */

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io io;
    char buf[ECHO_MAX];
} echo_conn;

static blitz_poll echo_conn_poll(blitz_cx *cx, void *p) {
    echo_conn *c = p;
    BLITZ_BEGIN(c);
    for (;;) {
        BLITZ_AWAIT(c, blitz_sock_recv(cx, &c->io, c->sock, c->buf, sizeof c->buf));
        if (c->io.result <= 0)
            break;
        BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, c->buf, (size_t)c->io.result));
        if (c->io.result < 0)
            break;
    }
    BLITZ_END(c);
}

typedef struct {
    BLITZ_CORO;
    soak *k;
    uint32_t seed;
    int n;
    size_t len;
    blitz_io io;
    blitz_socket *sock;
    char out[ECHO_MAX], in[ECHO_MAX];
} echo_client;

static uint32_t next_rand(uint32_t *seed) {
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 8;
}

static blitz_poll echo_client_poll(blitz_cx *cx, void *p) {
    echo_client *c = p;
    BLITZ_BEGIN(c);
    while (!stopping(c->k)) {
        BLITZ_AWAIT(c, blitz_tcp_connect(cx, &c->io, &c->k->addr));
        if (c->io.result < 0) {
            atomic_fetch_add(&c->k->echo_bad, 1);
            break;
        }
        c->sock = c->io.socket;
        for (c->n = 0; c->n < ECHO_PER_CONN && !stopping(c->k); c->n++) {
            c->len = 1 + next_rand(&c->seed) % ECHO_MAX;
            for (size_t i = 0; i < c->len; i++)
                c->out[i] = (char)next_rand(&c->seed);
            BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, c->out, c->len));
            if (c->io.result >= 0)
                BLITZ_AWAIT(c, blitz_sock_recv_exact(cx, &c->io, c->sock, c->in, c->len));
            if (c->io.result != (int64_t)c->len || memcmp(c->in, c->out, c->len) != 0) {
                atomic_fetch_add(&c->k->echo_bad, 1);
                break;
            }
            count(c->k, L_ECHO);
        }
        blitz_sock_close(c->sock);
        c->sock = NULL;
    }
    BLITZ_END(c);
}

/* ---- channel --------------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    soak *k;
    uint64_t seq;
    blitz_chan_op op;
} producer;

static blitz_poll producer_poll(blitz_cx *cx, void *p) {
    producer *s = p;
    BLITZ_BEGIN(s);
    while (!stopping(s->k)) {
        s->seq++;
        BLITZ_AWAIT(s, blitz_chan_send(cx, &s->op, s->k->chan, &s->seq));
        if (s->op.result != BLITZ_OK)
            break;
        atomic_fetch_add(&s->k->chan_sent, 1);
        atomic_fetch_add(&s->k->chan_sum_sent, s->seq);
    }
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    soak *k;
    uint64_t value;
    blitz_chan_op op;
} consumer;

static blitz_poll consumer_poll(blitz_cx *cx, void *p) {
    consumer *s = p;
    BLITZ_BEGIN(s);
    for (;;) {
        BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->op, s->k->chan, &s->value));
        if (s->op.result != BLITZ_OK)
            break; /* closed and drained */
        atomic_fetch_add(&s->k->chan_got, 1);
        atomic_fetch_add(&s->k->chan_sum_got, s->value);
        count(s->k, L_CHAN);
    }
    BLITZ_END(s);
}

/* ---- timers ------------------------------------------------------------------------ */

typedef struct {
    BLITZ_CORO;
    soak *k;
    int64_t period;
    blitz_timer timer;
    blitz_notify_wait_op wait;
} sleeper;

static blitz_poll sleeper_poll(blitz_cx *cx, void *p) {
    sleeper *s = p;
    BLITZ_BEGIN(s);
    while (!stopping(s->k)) {
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, s->period));
        count(s->k, L_SLEEP);
    }
    BLITZ_END(s);
}

static blitz_poll timeout_poll(blitz_cx *cx, void *p) {
    sleeper *s = p;
    BLITZ_BEGIN(s);
    while (!stopping(s->k)) {
        BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, s->period,
                                     blitz_notify_wait(cx, &s->wait, &s->k->never)));
        if (!s->timer.expired) {
            atomic_fetch_add(&s->k->echo_bad, 1); /* nobody notifies */
            break;
        }
        count(s->k, L_TIMEOUT);
    }
    BLITZ_END(s);
}

/* ---- spawn churn and the pool ------------------------------------------------------ */

static blitz_poll child_poll(blitz_cx *cx, void *p) {
    (void)cx;
    count(*(soak **)p, L_SPAWN);
    return BLITZ_READY;
}

typedef struct {
    BLITZ_CORO;
    soak *k;
    int i;
    blitz_task *kids[SPAWN_BURST];
    blitz_timer pause;
} spawner;

static blitz_poll spawner_poll(blitz_cx *cx, void *p) {
    spawner *s = p;
    BLITZ_BEGIN(s);
    while (!stopping(s->k)) {
        for (s->i = 0; s->i < SPAWN_BURST; s->i++)
            if (blitz_spawn(blitz_cx_runtime(cx), child_poll, &s->k, sizeof s->k, &s->kids[s->i]) !=
                BLITZ_OK)
                s->kids[s->i] = NULL;
        for (s->i = 0; s->i < SPAWN_BURST; s->i++) {
            if (!s->kids[s->i])
                continue;
            BLITZ_AWAIT(s, blitz_join(cx, s->kids[s->i]));
            blitz_task_release(&s->kids[s->i]);
        }
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->pause, BLITZ_MSEC));
    }
    BLITZ_END(s);
}

static void pool_job(void *p) {
    soak *k = p;
    volatile uint64_t x = 0;
    for (int i = 0; i < 1000; i++)
        x += (uint64_t)i;
    count(k, L_POOL);
}

typedef struct {
    BLITZ_CORO;
    soak *k;
    blitz_task *job;
} pool_feeder;

static blitz_poll pool_feeder_poll(blitz_cx *cx, void *p) {
    pool_feeder *s = p;
    BLITZ_BEGIN(s);
    while (!stopping(s->k)) {
        if (blitz_spawn_blocking(blitz_cx_runtime(cx), pool_job, s->k, &s->job) != BLITZ_OK)
            break;
        BLITZ_AWAIT(s, blitz_join(cx, s->job));
        blitz_task_release(&s->job);
    }
    BLITZ_END(s);
}

/* ---- sampling ------------------------------------------------------------------------ */

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

#define MAX_TASKS (ECHO_CLIENTS + PRODUCERS + CONSUMERS + SLEEPERS + TIMEOUTS + 1 + POOL_FEEDERS)

static int spawn_all(blitz_runtime *rt, soak *k, blitz_task **tasks, int *n) {
    int rc = BLITZ_OK;
    for (int i = 0; i < ECHO_CLIENTS && rc == BLITZ_OK; i++) {
        echo_client c = {.k = k, .seed = (uint32_t)i * 7919u + 1u};
        blitz_spawn_opts o = {.poll = echo_client_poll, .state = &c, .size = sizeof c};
        rc = blitz_spawn_ex(rt, &o, &tasks[(*n)++]);
    }
    for (int i = 0; i < PRODUCERS && rc == BLITZ_OK; i++) {
        producer s = {.k = k, .seq = (uint64_t)i << 40};
        rc = blitz_spawn(rt, producer_poll, &s, sizeof s, &tasks[(*n)++]);
    }
    for (int i = 0; i < CONSUMERS && rc == BLITZ_OK; i++) {
        consumer s = {.k = k};
        rc = blitz_spawn(rt, consumer_poll, &s, sizeof s, &tasks[(*n)++]);
    }
    for (int i = 0; i < SLEEPERS + TIMEOUTS && rc == BLITZ_OK; i++) {
        sleeper s = {.k = k, .period = (1 + i % 16) * BLITZ_MSEC};
        rc = blitz_spawn(rt, i < SLEEPERS ? sleeper_poll : timeout_poll, &s, sizeof s,
                         &tasks[(*n)++]);
    }
    if (rc == BLITZ_OK) {
        spawner s = {.k = k};
        blitz_spawn_opts o = {.poll = spawner_poll, .state = &s, .size = sizeof s};
        rc = blitz_spawn_ex(rt, &o, &tasks[(*n)++]);
    }
    for (int i = 0; i < POOL_FEEDERS && rc == BLITZ_OK; i++) {
        pool_feeder s = {.k = k};
        rc = blitz_spawn(rt, pool_feeder_poll, &s, sizeof s, &tasks[(*n)++]);
    }
    return rc;
}

int main(void) {
    long seconds = env_long("SOAK_SECONDS", 600), interval = env_long("SOAK_INTERVAL", 10);
    if (seconds <= 0 || interval <= 0) {
        fprintf(stderr, "soak: SOAK_SECONDS and SOAK_INTERVAL must be positive\n");
        return 2;
    }
    static soak k;
    blitz_runtime *rt = NULL;
    blitz_shutdown *sd = NULL;
    blitz_shutdown_opts no_signals = {.nsignals = -1};
    blitz_serve_opts serve = {.poll = echo_conn_poll,
                              .size = sizeof(echo_conn),
                              .socket_offset = offsetof(echo_conn, sock)};
    blitz_notify_init(&k.never);
    int rc = blitz_addr_parse("127.0.0.1:0", &k.addr);
    if (rc == BLITZ_OK)
        rc = blitz_runtime_new(NULL, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_shutdown_new(rt, &no_signals, &sd);
    if (rc == BLITZ_OK)
        rc = blitz_tcp_listen(rt, &k.addr, 0, 0, &serve.listener);
    if (rc == BLITZ_OK)
        rc = blitz_sock_local_addr(serve.listener, &k.addr);
    if (rc == BLITZ_OK)
        rc = blitz_serve(sd, &serve);
    if (rc == BLITZ_OK)
        rc = blitz_chan_new(&k.chan, sizeof(uint64_t), 256);
    blitz_task *tasks[MAX_TASKS] = {0};
    int ntasks = 0;
    if (rc == BLITZ_OK)
        rc = spawn_all(rt, &k, tasks, &ntasks);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "soak: %s\n", blitz_strerror(rc));
        return 1;
    }
    printf("soak: %ld s, a sample every %ld s, backend %s\n", seconds, interval,
           blitz_backend_name(blitz_runtime_backend(rt)));
    printf("%6s %9s", "t_s", "rss_kib");
    for (int l = 0; l < L_COUNT; l++)
        printf(" %10s", load_names[l]);
    printf("\n");
    int failed = 0;
    long base_rss = 0, last_rss = 0;
    unsigned long long prev[L_COUNT] = {0};
    for (long t = interval, sample = 1; t <= seconds; t += interval, sample++) {
        struct timespec ts = {interval, 0};
        while (nanosleep(&ts, &ts) != 0)
            ;
        last_rss = rss_kib();
        if (sample == WARMUP_SAMPLES)
            base_rss = last_rss;
        printf("%6ld %9ld", t, last_rss);
        for (int l = 0; l < L_COUNT; l++) {
            unsigned long long now = atomic_load(&k.done[l]);
            printf(" %10llu", now - prev[l]);
            if (now == prev[l]) {
                fprintf(stderr, "soak: %s made no progress in %ld s\n", load_names[l], interval);
                failed = 1;
            }
            prev[l] = now;
        }
        printf("\n");
        fflush(stdout);
    }

    /* Stop: the loops see the flag; the consumers drain the channel once
     * the producers are done and it is closed. */
    atomic_store(&k.stop, 1);
    for (int i = 0; i < ntasks; i++) {
        if (i == ECHO_CLIENTS + PRODUCERS)
            blitz_chan_sender_release(k.chan); /* producers done: close */
        blitz_join_blocking(tasks[i]);
        blitz_task_release(&tasks[i]);
    }
    blitz_shutdown_run_op run = {0};
    rc = blitz_shutdown_trigger(sd);
    if (rc == BLITZ_OK)
        rc = blitz_op_run_blocking(rt, blitz_op_shutdown_run(&run, sd, BLITZ_SEC));
    blitz_chan_receiver_release(k.chan);
    blitz_shutdown_free(sd);
    blitz_runtime_free(rt);
    blitz_notify_deinit(&k.never);

    unsigned long long sent = atomic_load(&k.chan_sent), got = atomic_load(&k.chan_got);
    unsigned long long bad = atomic_load(&k.echo_bad);
    printf("channel: %llu sent, %llu received; echo/timeout errors: %llu\n", sent, got, bad);
    if (sent != got || atomic_load(&k.chan_sum_sent) != atomic_load(&k.chan_sum_got)) {
        fprintf(stderr, "soak: channel messages lost or doubled\n");
        failed = 1;
    }
    if (bad) {
        fprintf(stderr, "soak: %llu echo or timeout errors\n", bad);
        failed = 1;
    }
    if (base_rss && last_rss > base_rss + base_rss / 10 + 4096) {
        fprintf(stderr, "soak: resident memory grew from %ld to %ld KiB\n", base_rss, last_rss);
        failed = 1;
    }
    if (rc != BLITZ_OK || run.result != BLITZ_OK) {
        fprintf(stderr, "soak: shutdown: %s\n", blitz_strerror(rc != BLITZ_OK ? rc : run.result));
        failed = 1;
    }
    printf("soak: %s\n", failed ? "FAILED" : "ok");
    return failed;
}
