/* showcase: what `make run` runs, in two parts.
 *
 * Tasks: one task spawns 1,000,000 small tasks and awaits every one of
 * them, first on the multi-thread (work-stealing) runtime, then on the
 * current-thread runtime. For each it prints the throughput and then the
 * scheduler's statistics, with a line saying what each number means.
 *
 * I/O: a TCP echo server and 50 client connections in this process, over
 * loopback (port 0: the kernel picks a free one), on the multi-thread
 * runtime with the default backend. Each client sends 64 bytes and waits
 * for the echo, 1,000 times; it prints round trips per second and the
 * latency percentiles. Every socket op has a deadline, so the part ends
 * within a few seconds even if the network does not answer.
 *
 *   cc -std=c11 -O2 -pthread -I. examples/showcase.c -o showcase && ./showcase
 */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(_WIN32)
#include <windows.h>
#endif

#define TASKS 1000000L
#define BATCH 1024

/* ---- the workload ----------------------------------------------------------- */

/* A leaf task: a few nanoseconds of work on its own index. */
typedef struct {
    uint64_t index, result;
} leaf_state;

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static blitz_poll leaf_poll(blitz_cx *cx, void *p) {
    (void)cx;
    leaf_state *l = p;
    l->result = mix(l->index);
    return BLITZ_READY;
}

/* The spawner: spawns BATCH leaves, awaits each, adds up their results,
 * releases them, and goes on until TASKS leaves have run. */
typedef struct {
    BLITZ_CORO;
    long spawned, i, n;
    int error;
    uint64_t checksum;
    blitz_task *batch[BATCH];
} spawner_state;

static blitz_poll spawner_poll(blitz_cx *cx, void *p) {
    spawner_state *s = p;
    BLITZ_BEGIN(s);
    while (s->spawned < TASKS && !s->error) {
        s->n = TASKS - s->spawned < BATCH ? TASKS - s->spawned : BATCH;
        for (s->i = 0; s->i < s->n; s->i++) {
            leaf_state l = {(uint64_t)(s->spawned + s->i), 0};
            int rc = blitz_spawn(blitz_cx_runtime(cx), leaf_poll, &l, sizeof l, &s->batch[s->i]);
            if (rc != BLITZ_OK) {
                s->error = rc;
                s->n = s->i;
                break;
            }
        }
        for (s->i = 0; s->i < s->n; s->i++) {
            BLITZ_AWAIT(s, blitz_join(cx, s->batch[s->i]));
            s->checksum += ((leaf_state *)blitz_task_state(s->batch[s->i]))->result;
            blitz_task_release(&s->batch[s->i]);
        }
        s->spawned += s->n;
    }
    BLITZ_END(s);
}

/* ---- printing ------------------------------------------------------------------- */

static double now_s(void) {
#if defined(_WIN32) /* no clock_gettime without winpthreads */
    LARGE_INTEGER freq, count;
    QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&count);
    return (double)count.QuadPart / (double)freq.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
}

static void stat_line(const char *name, uint64_t value, const char *meaning) {
    printf("  %-19s %10" PRIu64 "  %s\n", name, value, meaning);
}

static void print_stats(blitz_runtime *rt) {
    blitz_stats st;
    if (blitz_runtime_stats(rt, &st) != BLITZ_OK)
        return;
    printf("\nScheduler statistics (blitz_runtime_stats, read after shutdown):\n");
    stat_line("total_spawned", st.total_spawned,
              "tasks created: the 1,000,000 leaves plus the spawner");
    stat_line("total_polled", st.total_polled,
              "poll-function calls: a leaf finishes in one poll; the spawner is");
    printf("  %-19s %10s  polled again each time the leaf it awaits has finished\n", "", "");
    stat_line("total_stolen", st.total_stolen,
              "tasks a worker took from another worker's queue (work stealing)");
    stat_line("total_parked", st.total_parked,
              "times a worker went to sleep because it found nothing to run");
    stat_line("tasks_alive", st.tasks_alive,
              "tasks spawned and not yet freed (all were joined and released)");
    stat_line("global_queue_depth", st.global_queue_depth,
              "tasks waiting in the global (injection) queue");
    stat_line("num_workers", st.num_workers,
              "worker threads (1 for current-thread: the thread that waits)");
    stat_line("workers_started", st.workers_started,
              "worker threads started (they start on the first spawn)");

    printf("\nPer worker (blitz_runtime_worker_stats):\n");
    printf("  %6s %10s %8s %7s %7s %10s %8s %9s %8s\n", "worker", "polled", "stolen", "steals",
           "parked", "lifo_hits", "batches", "overflows", "interval");
    uint64_t polled = 0;
    for (uint32_t i = 0; i < st.num_workers; i++) {
        blitz_worker_stats w;
        if (blitz_runtime_worker_stats(rt, i, &w) != BLITZ_OK)
            continue;
        polled += w.tasks_polled;
        printf("  %6u %10" PRIu64 " %8" PRIu64 " %7" PRIu64 " %7" PRIu64 " %10" PRIu64 " %8" PRIu64
               " %9" PRIu64 " %8u\n",
               i, w.tasks_polled, w.tasks_stolen, w.steals, w.times_parked, w.lifo_hits,
               w.global_batch_fetches, w.overflows, w.global_queue_interval);
    }
    printf("  polled     tasks this worker polled");
    if (polled < st.total_polled)
        printf(" (the other %" PRIu64 " polls ran on the main thread\n"
               "             while it waited in blitz_join_blocking)",
               st.total_polled - polled);
    printf("\n");
    if (blitz_runtime_flavor(rt) == BLITZ_CURRENT_THREAD) {
        printf("  interval   polls between two looks for tasks that other threads spawned\n"
               "             or woke (the rest are zero: one thread, nothing to steal)\n");
        return;
    }
    printf("  stolen     tasks taken from other workers' queues, in `steals` steal\n"
           "             operations (one steal takes half of the victim's queue)\n");
    printf("  parked     times the worker slept (futex) for lack of work\n");
    printf("  lifo_hits  tasks run straight from the LIFO slot: a task spawned from a\n"
           "             worker runs next, on the same core, while its data is in cache\n");
    printf("  batches    batches of tasks fetched from the global queue\n");
    printf("  overflows  times the worker's 256-slot queue was full and half of it\n"
           "             moved to the global queue for the others\n");
    printf("  interval   polls between two looks at the global queue (adapts to the\n"
           "             average poll time, 8..255, so remote tasks wait ~1 ms at most)\n");
}

/* ---- one run per flavour --------------------------------------------------------- */

static int run(const char *title, blitz_flavor flavor, uint64_t expect) {
    blitz_config cfg = {0};
    cfg.flavor = flavor;
    blitz_runtime *rt = NULL;
    int rc = blitz_runtime_new(&cfg, &rt);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "blitz_runtime_new: %s\n", blitz_strerror(rc));
        return 1;
    }
    printf("\n== %s runtime, %u worker thread%s ==\n", title, blitz_runtime_workers(rt),
           blitz_runtime_workers(rt) == 1 ? "" : "s");

    /* The spawner's state is ~8 KiB (its batch of handles); it is copied
     * into the task, so a heap buffer is fine as the source. */
    spawner_state *init = calloc(1, sizeof *init);
    if (!init) {
        blitz_runtime_free(rt);
        return 1;
    }
    double t0 = now_s();
    blitz_task *spawner = NULL;
    rc = blitz_spawn(rt, spawner_poll, init, sizeof *init, &spawner);
    if (rc == BLITZ_OK)
        rc = blitz_join_blocking(spawner);
    double secs = now_s() - t0;
    free(init);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "spawner: %s\n", blitz_strerror(rc));
        blitz_task_release(&spawner);
        blitz_runtime_free(rt);
        return 1;
    }
    spawner_state *done = blitz_task_state(spawner);
    int ok = done->error == BLITZ_OK && done->spawned == TASKS && done->checksum == expect;
    printf("%ld tasks spawned and joined in %.3f s: %.2f M tasks/s (%.0f ns per task), "
           "checksum %s\n",
           done->spawned, secs, (double)done->spawned / secs / 1e6,
           secs * 1e9 / (double)done->spawned, ok ? "ok" : "WRONG");
    if (done->error)
        printf("spawn failed: %s\n", blitz_strerror(done->error));
    blitz_task_release(&spawner);

    /* Stop the workers so the counters hold still, then read them. */
    blitz_runtime_shutdown(rt);
    print_stats(rt);
    blitz_runtime_free(rt);
    return ok ? 0 : 1;
}

/* ---- I/O: an echo server and its clients in one process ---------------------------- */

#define IO_CONNS  50
#define IO_ROUNDS 1000
#define IO_MSG    64
/* Generous: on an idle machine the part takes well under a second. */
#define IO_LIMIT (5 * BLITZ_SEC)

/* Each client writes its own slice: [conn * IO_ROUNDS, (conn + 1) * IO_ROUNDS). */
static uint32_t io_lat[IO_CONNS * IO_ROUNDS];
static uint64_t io_deadline; /* runtime clock; every socket op ends by then */

/* The time left until the deadline (<= 0: the op's timeout fires at once). */
static int64_t io_left(blitz_cx *cx) {
    return (int64_t)(io_deadline - blitz_cx_now(cx));
}

/* A server connection: echoes what it receives until the client closes. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io io;
    blitz_timer timer;
    int64_t left;
    char buf[16384];
} echo_conn;

static blitz_poll echo_conn_poll(blitz_cx *cx, void *p) {
    echo_conn *e = p;
    BLITZ_BEGIN(e);
    for (;;) {
        e->left = io_left(cx);
        BLITZ_AWAIT(e, blitz_timeout_op(cx, &e->timer, e->left,
                                        blitz_sock_recv(cx, &e->io, e->sock, e->buf, sizeof e->buf),
                                        blitz_io_cancel, &e->io));
        if (e->timer.expired || e->io.result <= 0) /* 0: the client closed */
            break;
        e->left = io_left(cx);
        BLITZ_AWAIT(e, blitz_timeout_op(
                           cx, &e->timer, e->left,
                           blitz_sock_send_all(cx, &e->io, e->sock, e->buf, (size_t)e->io.result),
                           blitz_io_cancel, &e->io));
        if (e->timer.expired || e->io.result < 0)
            break;
    }
    /* A cancelled io_uring op may still hold the buffer: wait for it. */
    BLITZ_AWAIT(e, blitz_io_settle(cx, &e->io));
    blitz_sock_close(e->sock);
    BLITZ_END(e);
}

/* The server: accepts IO_CONNS connections, one task each, then closes the
 * listener and waits for its connections to end. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_io io;
    blitz_timer timer;
    int64_t left;
    int accepted, i;
    blitz_task *conns[IO_CONNS];
} server_state;

static blitz_poll server_poll(blitz_cx *cx, void *p) {
    server_state *s = p;
    BLITZ_BEGIN(s);
    while (s->accepted < IO_CONNS) {
        s->left = io_left(cx);
        BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, s->left,
                                        blitz_sock_accept(cx, &s->io, s->listener), blitz_io_cancel,
                                        &s->io));
        if (s->timer.expired || s->io.result < 0)
            break;
        blitz_tcp_set_nodelay(s->io.socket, 1);
        echo_conn c;
        memset(&c, 0, sizeof c);
        c.sock = s->io.socket;
        if (blitz_spawn(blitz_cx_runtime(cx), echo_conn_poll, &c, sizeof c,
                        &s->conns[s->accepted]) != BLITZ_OK) {
            blitz_sock_close(c.sock);
            break;
        }
        s->accepted++;
    }
    BLITZ_AWAIT(s, blitz_io_settle(cx, &s->io));
    blitz_sock_close(s->listener);
    for (s->i = 0; s->i < s->accepted; s->i++) {
        BLITZ_AWAIT(s, blitz_join(cx, s->conns[s->i]));
        blitz_task_release(&s->conns[s->i]);
    }
    BLITZ_END(s);
}

/* A client: connects, then IO_ROUNDS times sends IO_MSG bytes and receives
 * them back, recording each round trip's time. */
typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_socket *sock;
    blitz_io io;
    blitz_timer timer;
    int64_t left;
    int conn, rounds, error;
    size_t got;
    uint64_t t0;
    char out[IO_MSG], in[IO_MSG];
} client_state;

static blitz_poll client_poll(blitz_cx *cx, void *p) {
    client_state *c = p;
    BLITZ_BEGIN(c);
    /* A limit of 0 would mean none: keep at least 1 ns. */
    c->left = io_left(cx) > 0 ? io_left(cx) : 1;
    BLITZ_AWAIT(c, blitz_tcp_connect_timeout(cx, &c->io, &c->addr, c->left));
    if (c->io.result < 0) {
        c->error = (int)c->io.result;
        BLITZ_RETURN(c);
    }
    c->sock = c->io.socket;
    blitz_tcp_set_nodelay(c->sock, 1);
    memset(c->out, 'a' + c->conn % 26, sizeof c->out);
    for (c->rounds = 0; c->rounds < IO_ROUNDS; c->rounds++) {
        c->t0 = blitz_cx_now(cx);
        c->left = io_left(cx);
        BLITZ_AWAIT(c, blitz_timeout_op(cx, &c->timer, c->left,
                                        blitz_sock_send_all(cx, &c->io, c->sock, c->out, IO_MSG),
                                        blitz_io_cancel, &c->io));
        if (c->timer.expired || c->io.result < 0)
            break;
        /* TCP is a byte stream: the echo may come back in pieces. */
        for (c->got = 0; c->got < IO_MSG; c->got += (size_t)c->io.result) {
            c->left = io_left(cx);
            BLITZ_AWAIT(c, blitz_timeout_op(cx, &c->timer, c->left,
                                            blitz_sock_recv(cx, &c->io, c->sock, c->in + c->got,
                                                            IO_MSG - c->got),
                                            blitz_io_cancel, &c->io));
            if (c->timer.expired || c->io.result <= 0)
                break;
        }
        if (c->got < IO_MSG || memcmp(c->in, c->out, IO_MSG) != 0)
            break;
        uint64_t ns = blitz_cx_now(cx) - c->t0;
        io_lat[c->conn * IO_ROUNDS + c->rounds] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
    }
    if (c->rounds < IO_ROUNDS)
        c->error = c->timer.expired ? BLITZ_ETIMEDOUT : c->io.result < 0 ? (int)c->io.result : -1;
    BLITZ_AWAIT(c, blitz_io_settle(cx, &c->io));
    blitz_sock_close(c->sock);
    BLITZ_END(c);
}

/* The main task: starts the server and the clients, waits for all. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_addr addr;
    blitz_task *server, *clients[IO_CONNS];
    int i, spawned;
    long rounds;
    int errors, first_error;
} io_main_state;

static blitz_poll io_main_poll(blitz_cx *cx, void *p) {
    io_main_state *m = p;
    BLITZ_BEGIN(m);
    server_state srv;
    memset(&srv, 0, sizeof srv);
    srv.listener = m->listener;
    if (blitz_spawn(blitz_cx_runtime(cx), server_poll, &srv, sizeof srv, &m->server) != BLITZ_OK) {
        blitz_sock_close(m->listener);
        m->errors = 1;
        BLITZ_RETURN(m);
    }
    for (m->i = 0; m->i < IO_CONNS; m->i++) {
        client_state c;
        memset(&c, 0, sizeof c);
        c.addr = m->addr;
        c.conn = m->i;
        if (blitz_spawn(blitz_cx_runtime(cx), client_poll, &c, sizeof c, &m->clients[m->i]) !=
            BLITZ_OK)
            break;
    }
    m->spawned = m->i;
    for (m->i = 0; m->i < m->spawned; m->i++) {
        BLITZ_AWAIT(m, blitz_join(cx, m->clients[m->i]));
        client_state *c = blitz_task_state(m->clients[m->i]);
        m->rounds += c->rounds;
        if (c->error && !m->errors++)
            m->first_error = c->error;
        blitz_task_release(&m->clients[m->i]);
    }
    m->errors += IO_CONNS - m->spawned;
    BLITZ_AWAIT(m, blitz_join(cx, m->server));
    blitz_task_release(&m->server);
    BLITZ_END(m);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int run_io(void) {
    blitz_config cfg = {0};
    cfg.flavor = BLITZ_MULTI_THREAD;
    blitz_runtime *rt = NULL;
    io_main_state m;
    memset(&m, 0, sizeof m);
    int rc = blitz_runtime_new(&cfg, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_addr_ip("127.0.0.1", 0, &m.addr);
    if (rc == BLITZ_OK)
        rc = blitz_tcp_listen(rt, &m.addr, 0, 0, &m.listener);
    if (rc == BLITZ_OK)
        rc = blitz_sock_local_addr(m.listener, &m.addr);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "I/O setup: %s\n", blitz_strerror(rc));
        if (rt)
            blitz_runtime_free(rt);
        return 1;
    }
    char where[64];
    blitz_addr_format(&m.addr, where, sizeof where);
    printf("\n== I/O: TCP echo on %s, multi-thread runtime, %u worker thread%s, %s backend ==\n",
           where, blitz_runtime_workers(rt), blitz_runtime_workers(rt) == 1 ? "" : "s",
           blitz_backend_name(blitz_runtime_backend(rt)));
    printf("An echo server (one task per connection) and %d clients (one task each) share\n"
           "this runtime. Each client sends %d bytes and waits for all of them to come back,\n"
           "%d times.\n",
           IO_CONNS, IO_MSG, IO_ROUNDS);

    double t0 = now_s();
    io_deadline = blitz_deadline_after(blitz_time_now(rt), IO_LIMIT);
    rc = blitz_runtime_run(rt, io_main_poll, &m, sizeof m);
    double secs = now_s() - t0;
    blitz_runtime_free(rt);
    if (rc != BLITZ_OK || m.rounds == 0) {
        fprintf(stderr, "I/O part: %s\n", rc != BLITZ_OK ? blitz_strerror(rc) : "no round trip");
        return 1;
    }

    /* Gather the round trips that completed (each client's first `rounds`). */
    size_t n = 0;
    for (int c = 0; c < IO_CONNS; c++)
        for (int r = 0; r < IO_ROUNDS && io_lat[c * IO_ROUNDS + r]; r++)
            io_lat[n++] = io_lat[c * IO_ROUNDS + r];
    qsort(io_lat, n, sizeof *io_lat, cmp_u32);
    double p50 = io_lat[n / 2] / 1e3, p99 = io_lat[(size_t)((double)(n - 1) * 0.99)] / 1e3;

    printf("  %-12s %10ld  of %d (%d connections x %d), every byte checked\n", "round trips",
           m.rounds, IO_CONNS * IO_ROUNDS, IO_CONNS, IO_ROUNDS);
    printf("  %-12s %10.3f  s, from the first connect to the last echo and close\n", "time", secs);
    printf("  %-12s %10.0f  round trips per second; each is a send and a receive on both\n"
           "  %-12s %10s  sides, so four socket operations, and the wake-ups between them\n",
           "throughput", (double)m.rounds / secs, "", "");
    printf("  %-12s %10.1f  us: half of the round trips took less, from the send to the\n"
           "  %-12s %10s  last byte of the echo (%d connections queue for the workers)\n",
           "p50 latency", p50, "", "", IO_CONNS);
    printf("  %-12s %10.1f  us: 1 in 100 took longer (a worker busy elsewhere, the host\n"
           "  %-12s %10s  scheduling other threads)\n",
           "p99 latency", p99, "", "");
    printf("Client and server share the same runtime and cores here; `make bench` measures\n"
           "the server alone against a separate load client.\n");
    if (m.errors) {
        printf("%d client%s did not finish: %s\n", m.errors, m.errors == 1 ? "" : "s",
               m.first_error == BLITZ_ETIMEDOUT ? "the time limit was reached"
               : m.first_error < 0              ? blitz_strerror(m.first_error)
                                                : "wrong or missing echo");
        return 1;
    }
    return 0;
}

int main(void) {
    uint64_t expect = 0;
    for (long i = 0; i < TASKS; i++)
        expect += mix((uint64_t)i);

    printf("blitz %s showcase: one task spawns %ld tasks, %d at a time, and awaits\n"
           "each one (blitz_join): every task is spawned, queued, polled, completed,\n"
           "joined and freed.\n",
           blitz_version(), TASKS, BATCH);
    int failed = run("multi-thread", BLITZ_MULTI_THREAD, expect);
    printf("\nThe current-thread runtime has no worker threads: the thread that waits\n"
           "(here main, in blitz_join_blocking) runs the tasks, with no stealing and no\n"
           "cross-thread wake-ups.\n");
    failed |= run("current-thread", BLITZ_CURRENT_THREAD, expect);
    failed |= run_io();
    return failed;
}
