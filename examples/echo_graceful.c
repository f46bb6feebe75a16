/* A TCP echo server with graceful shutdown (tools/api_programs compares
 * it with old_echo_server.c).
 *
 *   echo_graceful PORT          (0: a free port; the port is printed)
 *
 * On SIGINT or SIGTERM it stops accepting, lets open connections finish
 * for up to 5 s, cancels those still open, and exits 0. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>
#include <stdlib.h>

#define GRACE_NS (5 * BLITZ_SEC)

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io io;
    char buf[16384];
} conn;

static blitz_poll conn_poll(blitz_cx *cx, void *p) {
    conn *c = p;
    BLITZ_BEGIN(c);
    for (;;) {
        BLITZ_AWAIT(c, blitz_sock_recv(cx, &c->io, c->sock, c->buf, sizeof c->buf));
        if (c->io.result <= 0) /* 0: the client hung up */
            break;
        BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, c->buf, (size_t)c->io.result));
        if (c->io.result < 0)
            break;
    }
    blitz_sock_close(c->sock);
    BLITZ_END(c);
}

/* Cancelled when the grace period ended: the receive or send it waited
 * in was withdrawn with it; its socket is ours to close. */
static void conn_cancel(void *p) {
    blitz_sock_close(((conn *)p)->sock);
}

typedef struct {
    BLITZ_CORO;
    blitz_shutdown *sd;
    blitz_socket *listener;
    blitz_io io;
    blitz_cancel_token_wait_op stop;
    blitz_combo race;
    blitz_op ops[2];
    blitz_timer backoff;
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
            break;              /* shutting down: the accept was withdrawn */
        if (a->io.result < 0) { /* out of descriptors, say: back off */
            BLITZ_AWAIT(a, blitz_sleep(cx, &a->backoff, 10 * BLITZ_MSEC));
            continue;
        }
        conn c = {0};
        c.sock = a->io.socket;
        blitz_spawn_opts o = {
            .poll = conn_poll, .state = &c, .size = sizeof c, .cancel = conn_cancel};
        if (blitz_shutdown_spawn_ex(a->sd, &o) != BLITZ_OK)
            blitz_sock_close(c.sock); /* the grace period is over */
    }
    BLITZ_AWAIT(a, blitz_io_settle(cx, &a->io));
    blitz_sock_close(a->listener);
    BLITZ_END(a);
}

int main(int argc, char **argv) {
    char *end = NULL;
    long port = argc == 2 ? strtol(argv[1], &end, 10) : -1;
    if (!end || *end || port < 0 || port > 65535) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    blitz_runtime *rt = NULL;
    blitz_addr addr;
    acceptor a = {0};
    int rc = blitz_addr_ip("0.0.0.0", (uint16_t)port, &addr);
    if (rc == BLITZ_OK)
        rc = blitz_runtime_new(NULL, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_shutdown_new(rt, NULL, &a.sd); /* SIGINT and SIGTERM */
    if (rc == BLITZ_OK)
        rc = blitz_tcp_listen(rt, &addr, 0, 0, &a.listener);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "echo_graceful: %s\n", blitz_strerror(rc));
        return 1;
    }
    blitz_sock_local_addr(a.listener, &addr);
    printf("listening on port %d\n", blitz_addr_port(&addr));
    fflush(stdout);

    blitz_task *acc;
    blitz_spawn(rt, acceptor_poll, &a, sizeof a, &acc);
    blitz_shutdown_run_op run = {0};
    rc = blitz_op_run_blocking(rt, blitz_op_shutdown_run(&run, a.sd, GRACE_NS));
    blitz_join_blocking(acc);
    blitz_task_release(&acc);
    printf("shut down: %llu connections finished, %llu cancelled\n",
           (unsigned long long)run.finished, (unsigned long long)run.cancelled);
    blitz_shutdown_free(a.sd);
    blitz_runtime_free(rt);
    return rc == BLITZ_OK && run.result == BLITZ_OK ? 0 : 1;
}
