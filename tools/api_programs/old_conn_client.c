/* Opens 100 connections to an echo server, written against the API of
 * commit 9529cb2. Each sends a line and reads its echo within 5 s; a
 * connection that takes longer is cancelled and counted as timed out.
 *
 *   old_conn_client HOST:PORT   (HOST a name or an address; prints the counts)
 *
 * Exits 0 when every connection got its echo. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCONN    100
#define LIMIT_NS (5 * BLITZ_SEC)

static const char msg[] = "hello, echo server\n";
#define MSG_LEN (sizeof msg - 1)

typedef struct {
    BLITZ_CORO;
    const char *host;
    uint16_t port;
    blitz_connect_op connect;
    blitz_socket *sock;
    blitz_io io;
    size_t got;
    char echo[MSG_LEN];
    int ok;
} conn;

static blitz_poll conn_poll(blitz_cx *cx, void *p) {
    conn *c = p;
    BLITZ_BEGIN(c);
    BLITZ_AWAIT(c, blitz_tcp_connect_host(cx, &c->connect, c->host, c->port));
    if (c->connect.result < 0)
        BLITZ_RETURN(c);
    c->sock = c->connect.socket;
    BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, msg, MSG_LEN));
    while (c->io.result >= 0 && c->got < MSG_LEN) {
        BLITZ_AWAIT(c, blitz_sock_recv(cx, &c->io, c->sock, c->echo + c->got, MSG_LEN - c->got));
        if (c->io.result == 0)
            break; /* the server hung up early */
        if (c->io.result > 0)
            c->got += (size_t)c->io.result;
    }
    c->ok = c->got == MSG_LEN && memcmp(c->echo, msg, MSG_LEN) == 0;
    blitz_sock_close(c->sock);
    BLITZ_END(c);
}

/* Cancelled at the deadline: withdraw the op it waits in (or it keeps the
 * task's memory), then close a connected socket. */
static void conn_cancel(void *p) {
    conn *c = p;
    blitz_tcp_connect_host_cancel(NULL, &c->connect);
    blitz_io_cancel(NULL, &c->io);
    if (c->sock)
        blitz_sock_close(c->sock);
}

typedef struct {
    BLITZ_CORO;
    const char *host;
    uint16_t port;
    blitz_group *group;
    blitz_task *done;
    uint64_t deadline;
    blitz_timer timer;
    blitz_combo race;
    blitz_op ops[2];
    int i, ok, timed_out, failed;
} client;

/* Counts a finished connection and gives its handle up. */
static void count(client *m) {
    int status = blitz_task_status(m->done);
    if (status == BLITZ_ECANCELED)
        m->timed_out++;
    else if (status == BLITZ_OK && ((conn *)blitz_task_state(m->done))->ok)
        m->ok++;
    else
        m->failed++;
    blitz_task_release(&m->done);
}

static blitz_poll client_poll(blitz_cx *cx, void *p) {
    client *m = p;
    BLITZ_BEGIN(m);
    if (blitz_group_new(blitz_cx_runtime(cx), &m->group) != BLITZ_OK) {
        m->failed = NCONN;
        BLITZ_RETURN(m);
    }
    /* every connection starts now, so one deadline serves them all */
    m->deadline = blitz_cx_now(cx) + LIMIT_NS;
    for (m->i = 0; m->i < NCONN; m->i++) {
        conn c = {0};
        c.host = m->host;
        c.port = m->port;
        blitz_spawn_opts o = {
            .poll = conn_poll, .state = &c, .size = sizeof c, .cancel = conn_cancel};
        if (blitz_group_spawn_ex(m->group, &o) != BLITZ_OK)
            m->failed++;
    }
    /* collect connections as they finish, until the deadline */
    for (;;) {
        m->ops[0] = blitz_op_group_next(m->group, &m->done);
        m->ops[1] = blitz_op_sleep_until(&m->timer, m->deadline);
        blitz_combo_reset(&m->race);
        BLITZ_AWAIT(m, blitz_race(cx, &m->race, m->ops, 2));
        if (m->race.winner != 0 || !m->done)
            break; /* the deadline passed, or every connection finished */
        count(m);
    }
    /* cancel those still running and collect them too */
    blitz_group_cancel_all(m->group);
    for (;;) {
        BLITZ_AWAIT(m, blitz_group_next(cx, m->group, &m->done));
        if (!m->done)
            break;
        count(m);
    }
    blitz_group_free(m->group);
    BLITZ_END(m);
}

int main(int argc, char **argv) {
    char *colon = argc == 2 ? strrchr(argv[1], ':') : NULL;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!end || *end || port <= 0 || port > 65535 || colon == argv[1]) {
        fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
        return 2;
    }
    *colon = '\0';
    client m = {0};
    m.host = argv[1];
    m.port = (uint16_t)port;
    int rc = blitz_run(client_poll, &m, sizeof m);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "conn_client: %s\n", blitz_strerror(rc));
        return 1;
    }
    printf("ok %d, timed out %d, failed %d\n", m.ok, m.timed_out, m.failed);
    return m.ok == NCONN ? 0 : 1;
}
