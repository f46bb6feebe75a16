/* A TCP echo server with graceful shutdown (tools/api_programs compares
 * it with old_echo_server.c).
 *
 *   echo_graceful PORT          (0: a free port; the port is printed)
 *
 * On SIGINT or SIGTERM it stops accepting, lets open connections finish
 * for up to 5 s, cancels those still open, and exits 0. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define GRACE_NS (5 * BLITZ_SEC)

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock; /* the runtime closes it when the task ends */
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
    BLITZ_END(c);
}

int main(int argc, char **argv) {
    char *end = NULL;
    long port = argc == 2 ? strtol(argv[1], &end, 10) : -1;
    if (!end || *end || port < 0 || port > 65535) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    blitz_runtime *rt = NULL;
    blitz_shutdown *sd = NULL;
    blitz_addr addr;
    blitz_serve_opts o = {
        .poll = conn_poll, .size = sizeof(conn), .socket_offset = offsetof(conn, sock)};
    int rc = blitz_addr_ip("0.0.0.0", (uint16_t)port, &addr);
    if (rc == BLITZ_OK)
        rc = blitz_runtime_new(NULL, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_shutdown_new(rt, NULL, &sd); /* SIGINT and SIGTERM */
    if (rc == BLITZ_OK)
        rc = blitz_tcp_listen(rt, &addr, 0, 0, &o.listener);
    if (rc == BLITZ_OK && blitz_sock_local_addr(o.listener, &addr) == BLITZ_OK)
        printf("listening on port %d\n", blitz_addr_port(&addr));
    if (rc == BLITZ_OK)
        rc = blitz_serve(sd, &o);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "echo_graceful: %s\n", blitz_strerror(rc));
        return 1;
    }
    fflush(stdout);
    blitz_shutdown_run_op run = {0};
    rc = blitz_op_run_blocking(rt, blitz_op_shutdown_run(&run, sd, GRACE_NS));
    printf("shut down: %llu connections finished, %llu cancelled\n",
           (unsigned long long)run.finished, (unsigned long long)run.cancelled);
    blitz_shutdown_free(sd);
    blitz_runtime_free(rt);
    return rc == BLITZ_OK && run.result == BLITZ_OK ? 0 : 1;
}
