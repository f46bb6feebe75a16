/* A TCP line server that shuts down gracefully: on SIGINT / SIGTERM, or
 * after SECONDS, it stops accepting at once, lets open connections finish
 * within a grace period, cancels the ones still open after it, reports how
 * many finished and how many were cancelled, and exits 0.
 *
 *   ./graceful_server [ADDR [SECONDS [GRACE_MS]]]   default 127.0.0.1:0 2 500
 *
 * Each connection answers every line with "echo: LINE". Without arguments
 * the server starts two clients of its own so there is something to shut
 * down: a quick one that finishes during the grace period and an idle one
 * that never hangs up and is cancelled. Try it with: nc 127.0.0.1 PORT. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a connection: read lines, answer them -------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_stream st;
    blitz_reader rd;
    blitz_writer wr;
    char line[1024];
    char out[1100];
    int n;
    const void *peek;
    size_t peek_len;
    /* in the task's state: a cancelled read may still land here (io_uring) */
    unsigned char rbuf[4096], wbuf[4096];
} conn;

static blitz_poll conn_poll(blitz_cx *cx, void *p) {
    conn *c = p;
    BLITZ_BEGIN(c);
    blitz_reader_init(&c->rd, &c->st, c->rbuf, sizeof c->rbuf);
    blitz_writer_init(&c->wr, &c->st, c->wbuf, sizeof c->wbuf);
    for (;;) {
        BLITZ_AWAIT(c, blitz_reader_read_line(cx, &c->rd, c->line, sizeof c->line));
        if (c->rd.result == BLITZ_EMSGSIZE)
            continue; /* the rest of an over-long line comes next */
        if (c->rd.result <= 0)
            break; /* 0: the client hung up */
        c->n = snprintf(c->out, sizeof c->out, "echo: %s\n", c->line);
        BLITZ_AWAIT(c, blitz_writer_write_all(cx, &c->wr, c->out, (size_t)c->n));
        /* answer at once unless a further whole line already waits (a
         * part of one may wait for its end for as long as the client likes) */
        c->peek = blitz_reader_peek(&c->rd, &c->peek_len);
        if (!c->peek || !memchr(c->peek, '\n', c->peek_len))
            BLITZ_AWAIT(c, blitz_writer_flush(cx, &c->wr));
        if (c->wr.result < 0)
            break;
    }
    BLITZ_AWAIT(c, blitz_writer_close(cx, &c->wr));
    blitz_stream_close(&c->st);
    BLITZ_END(c);
}

/* Cancelled after the grace period: withdraw what waits, close. */
/* A cancelled connection's pending read or write is withdrawn by the
 * runtime; the hook only hangs up on the peer. */
static void conn_cancel(void *p) {
    conn *c = p;
    blitz_stream_close(&c->st);
}

/* ---- the acceptor: races each accept against the shutdown token ---------------- */

typedef struct {
    BLITZ_CORO;
    blitz_shutdown *sd;
    blitz_socket *listener;
    blitz_io io;
    blitz_cancel_token_wait_op stop;
    blitz_combo race;
    blitz_op ops[2];
    blitz_timer backoff;
    long accepted;
} acceptor;

static blitz_poll acceptor_poll(blitz_cx *cx, void *p) {
    acceptor *a = p;
    BLITZ_BEGIN(a);
    for (;;) {
        a->ops[0] = blitz_op_sock_accept(&a->io, a->listener);
        a->ops[1] = blitz_op_cancel_token_wait(&a->stop, blitz_shutdown_token(a->sd));
        blitz_combo_reset(&a->race);
        BLITZ_AWAIT(a, blitz_race(cx, &a->race, a->ops, 2));
        if (a->race.winner != 0)
            break; /* shutting down: accept no more */
        if (a->io.result < 0) {
            BLITZ_AWAIT(a, blitz_sleep(cx, &a->backoff, 10 * BLITZ_MSEC));
            continue;
        }
        a->accepted++;
        blitz_spawn_opts o;
        memset(&o, 0, sizeof o);
        conn c;
        memset(&c, 0, sizeof c);
        blitz_stream_socket(&c.st, a->io.socket, BLITZ_STREAM_OWN);
        o.poll = conn_poll;
        o.state = &c;
        o.size = sizeof c;
        o.cancel = conn_cancel;
        if (blitz_shutdown_spawn_ex(a->sd, &o) != BLITZ_OK)
            blitz_sock_close(a->io.socket);
    }
    BLITZ_AWAIT(a, blitz_io_settle(cx, &a->io));
    blitz_sock_close(a->listener);
    BLITZ_END(a);
}

/* ---- the demo clients ------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_io io;
    blitz_socket *sock;
    blitz_stream st;
    blitz_reader rd;
    blitz_timer pause;
    int idle, i;
    int64_t start_ns;
    char line[256];
    unsigned char rbuf[512];
} client;

static blitz_poll client_poll(blitz_cx *cx, void *p) {
    client *c = p;
    BLITZ_BEGIN(c);
    BLITZ_AWAIT(c, blitz_tcp_connect(cx, &c->io, &c->addr));
    if (c->io.result < 0)
        BLITZ_RETURN(c);
    c->sock = c->io.socket;
    blitz_stream_socket(&c->st, c->sock, BLITZ_STREAM_OWN);
    blitz_reader_init(&c->rd, &c->st, c->rbuf, sizeof c->rbuf);
    if (c->idle) {
        /* an idle client: never says anything, never hangs up */
        BLITZ_AWAIT(c, blitz_reader_read_line(cx, &c->rd, c->line, sizeof c->line));
    } else {
        /* busy from shortly before the shutdown until within its grace */
        BLITZ_AWAIT(c, blitz_sleep(cx, &c->pause, c->start_ns));
        for (c->i = 0; c->i < 3; c->i++) {
            BLITZ_AWAIT(c, blitz_sleep(cx, &c->pause, 100 * BLITZ_MSEC));
            BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, "hello\n", 6));
            BLITZ_AWAIT(c, blitz_reader_read_line(cx, &c->rd, c->line, sizeof c->line));
            if (c->rd.result > 0)
                printf("quick client got \"%s\"\n", c->line);
        }
    }
    blitz_stream_close(&c->st);
    BLITZ_END(c);
}

static void client_cancel(void *p) {
    client *c = p;
    if (c->sock)
        blitz_stream_close(&c->st);
}

/* ---- main -------------------------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_shutdown *sd;
    blitz_shutdown_run_op run;
    blitz_timer after;
    blitz_combo race;
    blitz_op ops[2];
    int64_t seconds, grace_ms;
} supervisor;

/* After SECONDS the server shuts itself down, as if signalled. */
static blitz_poll supervisor_poll(blitz_cx *cx, void *p) {
    supervisor *s = p;
    BLITZ_BEGIN(s);
    s->ops[0] =
        blitz_op_sleep_until(&s->after, blitz_cx_now(cx) + (uint64_t)s->seconds * BLITZ_SEC);
    s->ops[1] = blitz_op_shutdown_run(&s->run, s->sd, s->grace_ms * BLITZ_MSEC);
    for (;;) {
        BLITZ_AWAIT(s, blitz_select(cx, &s->race, s->ops, 2));
        if (s->race.winner == 0) {
            printf("%lld s passed: shutting down\n", (long long)s->seconds);
            blitz_shutdown_trigger(s->sd);
            continue;
        }
        break;
    }
    blitz_combo_cancel(cx, &s->race, s->ops, 2);
    BLITZ_END(s);
}

int main(int argc, char **argv) {
    const char *addr_text = argc > 1 ? argv[1] : "127.0.0.1:0";
    supervisor sv;
    memset(&sv, 0, sizeof sv);
    sv.seconds = argc > 2 ? atoll(argv[2]) : 2;
    sv.grace_ms = argc > 3 ? atoll(argv[3]) : 500;
    if (sv.seconds <= 0 || sv.seconds > 86400 * 365)
        sv.seconds = 2;
    if (sv.grace_ms < 0)
        sv.grace_ms = 0; /* cancel the open connections at once */
    if (sv.grace_ms > 3600 * 1000)
        sv.grace_ms = 3600 * 1000;

    blitz_runtime *rt = NULL;
    blitz_addr addr;
    acceptor a;
    memset(&a, 0, sizeof a);
    int rc = blitz_runtime_new(NULL, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_addr_parse(addr_text, &addr);
    if (rc == BLITZ_OK)
        rc = blitz_shutdown_new(rt, NULL, &sv.sd); /* SIGINT and SIGTERM */
    if (rc == BLITZ_OK)
        rc = blitz_tcp_listen(rt, &addr, 128, 0, &a.listener);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "graceful_server: %s\n", blitz_strerror(rc));
        if (sv.sd)
            blitz_shutdown_free(sv.sd);
        if (rt)
            blitz_runtime_free(rt);
        return 1;
    }
    blitz_sock_local_addr(a.listener, &addr);
    char text[64];
    blitz_addr_format(&addr, text, sizeof text);
    printf("listening on %s for %lld s (grace %lld ms); Ctrl-C to stop sooner\n", text,
           (long long)sv.seconds, (long long)sv.grace_ms);
    fflush(stdout);
    a.sd = sv.sd;
    blitz_task *acc;
    blitz_spawn(rt, acceptor_poll, &a, sizeof a, &acc);
    if (argc <= 1) {
        for (int idle = 0; idle < 2; idle++) {
            client c;
            memset(&c, 0, sizeof c);
            c.addr = addr;
            c.idle = idle;
            c.start_ns = sv.seconds * BLITZ_SEC - 250 * BLITZ_MSEC;
            blitz_spawn_opts o;
            memset(&o, 0, sizeof o);
            o.poll = client_poll;
            o.state = &c;
            o.size = sizeof c;
            o.cancel = client_cancel;
            blitz_spawn_ex(rt, &o, NULL);
        }
    }
    rc = blitz_runtime_run(rt, supervisor_poll, &sv, sizeof sv);
    blitz_join_blocking(acc);
    long accepted = ((acceptor *)blitz_task_state(acc))->accepted;
    blitz_task_release(&acc);
    printf("stopped%s%s: %ld connections accepted; at shutdown %llu finished, %llu cancelled\n",
           sv.run.signo ? " by " : "",
           sv.run.signo == SIGINT    ? "SIGINT"
           : sv.run.signo == SIGTERM ? "SIGTERM"
                                     : "",
           accepted, (unsigned long long)sv.run.finished, (unsigned long long)sv.run.cancelled);
    blitz_shutdown_free(sv.sd);
    blitz_runtime_free(rt);
    return rc == BLITZ_OK && sv.run.result == BLITZ_OK ? 0 : 1;
}
