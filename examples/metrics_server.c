/* Serves the runtime's own metrics over HTTP, in the Prometheus text
 * format, from a task on that runtime. Some background tasks keep the
 * numbers moving.
 *
 *   ./metrics_server [ADDR]     default 127.0.0.1:9464
 *
 * Try it: curl http://127.0.0.1:9464/metrics, or point a Prometheus
 * scrape job at it. Any other path answers 404. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One HTTP connection: read the request head, answer, close. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io io;
    size_t got;
    char req[2048];
    char *resp;
    size_t resp_len;
} http_conn;

/* The response to `req` (malloc'd), or NULL when out of memory. */
static char *respond(blitz_runtime *rt, const char *req, size_t *len) {
    static const char not_found[] =
        "HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n";
    if (strncmp(req, "GET /metrics", 12) != 0 || (req[12] != ' ' && req[12] != '?')) {
        char *r = malloc(sizeof not_found);
        if (r)
            memcpy(r, not_found, sizeof not_found);
        *len = sizeof not_found - 1;
        return r;
    }
    /* Measure, then write: the text may grow a little in between (counters
     * gain digits), so leave room and write again if it did not fit. */
    int64_t n = blitz_metrics_format(rt, NULL, 0);
    for (;;) {
        size_t cap = (size_t)n + 1024;
        char *r = malloc(cap + 256);
        if (!r)
            return NULL;
        char *body = r + 256;
        n = blitz_metrics_format(rt, body, cap);
        if (n < 0 || (size_t)n >= cap) {
            free(r);
            if (n < 0)
                return NULL;
            continue;
        }
        char head[256];
        int h = snprintf(head, sizeof head,
                         "HTTP/1.1 200 OK\r\n"
                         "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                         "Content-Length: %lld\r\nConnection: close\r\n\r\n",
                         (long long)n);
        memmove(r + h, body, (size_t)n);
        memcpy(r, head, (size_t)h);
        *len = (size_t)h + (size_t)n;
        return r;
    }
}

static blitz_poll http_conn_poll(blitz_cx *cx, void *p) {
    http_conn *c = p;
    BLITZ_BEGIN(c);
    while (c->got < sizeof c->req - 1) {
        BLITZ_AWAIT(
            c, blitz_sock_recv(cx, &c->io, c->sock, c->req + c->got, sizeof c->req - 1 - c->got));
        if (c->io.result <= 0)
            break;
        c->got += (size_t)c->io.result;
        c->req[c->got] = '\0';
        if (strstr(c->req, "\r\n\r\n"))
            break;
    }
    if (c->got && (c->resp = respond(blitz_cx_runtime(cx), c->req, &c->resp_len)) != NULL) {
        BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, c->resp, c->resp_len));
        free(c->resp);
    }
    blitz_sock_close(c->sock);
    BLITZ_END(c);
}

/* Background load: wakes every 10 ms and spawns a few short tasks. */
typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
} ticker;

static blitz_poll short_task(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_READY;
}

static blitz_poll ticker_poll(blitz_cx *cx, void *p) {
    ticker *t = p;
    BLITZ_BEGIN(t);
    for (;;) {
        BLITZ_AWAIT(t, blitz_sleep(cx, &t->timer, 10 * BLITZ_MSEC));
        for (int i = 0; i < 8; i++) {
            char unused = 0;
            blitz_spawn(blitz_cx_runtime(cx), short_task, &unused, sizeof unused, NULL);
        }
    }
    BLITZ_END(t);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_io io;
    blitz_timer backoff;
} acceptor;

static blitz_poll acceptor_poll(blitz_cx *cx, void *p) {
    acceptor *a = p;
    BLITZ_BEGIN(a);
    {
        ticker t = {0};
        blitz_spawn(blitz_cx_runtime(cx), ticker_poll, &t, sizeof t, NULL);
    }
    for (;;) {
        BLITZ_AWAIT(a, blitz_sock_accept(cx, &a->io, a->listener));
        if (a->io.result < 0) { /* e.g. BLITZ_EMFILE: back off, keep listening */
            fprintf(stderr, "accept: %s\n", blitz_strerror((int)a->io.result));
            BLITZ_AWAIT(a, blitz_sleep(cx, &a->backoff, 10 * BLITZ_MSEC));
            continue;
        }
        http_conn c;
        memset(&c, 0, sizeof c);
        c.sock = a->io.socket;
        if (blitz_spawn(blitz_cx_runtime(cx), http_conn_poll, &c, sizeof c, NULL) != BLITZ_OK)
            blitz_sock_close(c.sock);
    }
    BLITZ_END(a);
}

int main(int argc, char **argv) {
    blitz_runtime *rt = NULL;
    blitz_addr addr;
    acceptor a = {0};
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.metrics = 1; /* busy time and the poll duration histogram */
    int rc = blitz_addr_parse(argc > 1 ? argv[1] : "127.0.0.1:9464", &addr);
    if (rc == BLITZ_OK)
        rc = blitz_runtime_new(&cfg, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_tcp_listen(rt, &addr, 0, 0, &a.listener);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "metrics_server: %s\n", blitz_strerror(rc));
        if (rt)
            blitz_runtime_free(rt);
        return 1;
    }
    char where[64];
    blitz_sock_local_addr(a.listener, &addr);
    blitz_addr_format(&addr, where, sizeof where);
    printf("metrics on http://%s/metrics\n", where);
    fflush(stdout);
    rc = blitz_runtime_run(rt, acceptor_poll, &a, sizeof a);
    blitz_runtime_free(rt);
    return rc == BLITZ_OK ? 0 : 1;
}
