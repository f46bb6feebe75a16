/* An echo client and load generator: C connections, each a task doing
 * ping-pong with M-byte messages for D seconds, every byte of every
 * answer checked; prints requests/s and latency percentiles, and fails
 * when a connection failed or an answer differed.
 *
 *   ./echo_client [ADDR] [CONNS] [MSG_BYTES] [SECONDS]
 *   (defaults 127.0.0.1:7777 50 64 3; run ./echo_server first) */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SAMPLES 4000000

static uint32_t *g_lat;
static size_t g_nlat;
static uint64_t g_end_ns;
static long g_errors;

typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_io io;
    blitz_socket *sock;
    size_t msg, got;
    uint64_t t0;
    unsigned id, n;
    char out[4096], in[4096];
} client;

static blitz_poll client_poll(blitz_cx *cx, void *p) {
    client *c = p;
    BLITZ_BEGIN(c);
    BLITZ_AWAIT(c, blitz_tcp_connect_timeout(cx, &c->io, &c->addr, 5 * BLITZ_SEC));
    if (c->io.result < 0) {
        fprintf(stderr, "connect: %s\n", blitz_strerror((int)c->io.result));
        g_errors++;
        return BLITZ_READY;
    }
    c->sock = c->io.socket;
    blitz_tcp_set_nodelay(c->sock, 1);
    for (c->n = 0; blitz_cx_now(cx) < g_end_ns; c->n++) {
        for (size_t i = 0; i < c->msg; i++) /* differs per connection and request */
            c->out[i] = (char)(c->id * 131u + c->n * 31u + i);
        c->t0 = blitz_cx_now(cx);
        BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, c->out, c->msg));
        if (c->io.result < 0)
            break;
        for (c->got = 0; c->got < c->msg; c->got += (size_t)c->io.result) {
            BLITZ_AWAIT(c, blitz_sock_recv(cx, &c->io, c->sock, c->in + c->got, c->msg - c->got));
            if (c->io.result <= 0)
                break;
        }
        if (c->got < c->msg || memcmp(c->in, c->out, c->msg) != 0) {
            fprintf(stderr, "echo_client: a short or wrong answer\n");
            g_errors++;
            break;
        }
        /* Tasks of this current-thread runtime run one at a time. */
        if (g_nlat < MAX_SAMPLES)
            g_lat[g_nlat++] = (uint32_t)(blitz_cx_now(cx) - c->t0);
    }
    blitz_sock_close(c->sock);
    BLITZ_END(c);
}

typedef struct {
    BLITZ_CORO;
    int conns, i;
    client proto;
    blitz_task **tasks;
} driver;

static blitz_poll driver_poll(blitz_cx *cx, void *p) {
    driver *d = p;
    BLITZ_BEGIN(d);
    for (d->i = 0; d->i < d->conns; d->i++) {
        d->proto.id = (unsigned)d->i;
        if (blitz_spawn(blitz_cx_runtime(cx), client_poll, &d->proto, sizeof d->proto,
                        &d->tasks[d->i]) != BLITZ_OK)
            g_errors++;
    }
    for (d->i = 0; d->i < d->conns; d->i++) {
        if (!d->tasks[d->i])
            continue;
        BLITZ_AWAIT(d, blitz_join(cx, d->tasks[d->i]));
        blitz_task_release(&d->tasks[d->i]);
    }
    BLITZ_END(d);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    driver d;
    memset(&d, 0, sizeof d);
    const char *where = argc > 1 ? argv[1] : "127.0.0.1:7777";
    d.conns = argc > 2 ? atoi(argv[2]) : 50;
    d.proto.msg = argc > 3 ? (size_t)atoi(argv[3]) : 64;
    double secs = argc > 4 ? atof(argv[4]) : 3.0;
    if (d.conns < 1 || d.proto.msg < 1 || d.proto.msg > sizeof d.proto.out || secs <= 0 ||
        blitz_addr_parse(where, &d.proto.addr) != BLITZ_OK) {
        fprintf(stderr, "usage: echo_client [ADDR] [CONNS] [MSG_BYTES<=4096] [SECONDS]\n");
        return 2;
    }
    d.tasks = calloc((size_t)d.conns, sizeof *d.tasks);
    g_lat = malloc(sizeof *g_lat * MAX_SAMPLES);
    blitz_config cfg = {0};
    cfg.flavor = BLITZ_CURRENT_THREAD; /* one thread, like the anchors' clients */
    blitz_runtime *rt;
    if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK)
        return 1;
    uint64_t start = blitz_time_now(rt);
    g_end_ns = start + (uint64_t)(secs * 1e9);
    int rc = blitz_runtime_run(rt, driver_poll, &d, sizeof d);
    double el = (double)(blitz_time_now(rt) - start) / 1e9;
    blitz_runtime_free(rt);
    if (rc != BLITZ_OK || g_nlat == 0 || g_errors) {
        fprintf(stderr, "echo_client: %ld failed connections, %zu requests completed\n", g_errors,
                g_nlat);
        return 1;
    }
    qsort(g_lat, g_nlat, sizeof *g_lat, cmp_u32);
    printf("%zu requests in %.2f s: %.0f req/s, p50 %.3f ms, p99 %.3f ms\n", g_nlat, el,
           (double)g_nlat / el, g_lat[g_nlat / 2] / 1e6,
           g_lat[(size_t)((double)g_nlat * 0.99)] / 1e6);
    free(g_lat);
    free(d.tasks);
    return 0;
}
