/* A TCP echo server: one task per connection, each an intrusive-op loop.
 * Its receives borrow the runtime's buffers (blitz_sock_recv_buf), so a
 * connection waiting for data holds no buffer: a task is a few hundred
 * bytes, and 10,000 idle connections cost what their sockets cost.
 *
 *   ./echo_server [ADDR]        default 127.0.0.1:7777
 *   BLITZ_BACKEND=epoll ./echo_server   (io_uring, epoll or poll)
 *
 * Try it: ./echo_client 127.0.0.1:7777, or nc 127.0.0.1 7777. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io io;
    blitz_buf in; /* lent by the runtime from receive to release */
} echo_conn;

static blitz_poll echo_conn_poll(blitz_cx *cx, void *p) {
    echo_conn *e = p;
    BLITZ_BEGIN(e);
    for (;;) {
        BLITZ_AWAIT(e, blitz_sock_recv_buf(cx, &e->io, e->sock, &e->in));
        if (e->io.result <= 0) /* 0 = the peer closed, < 0 = error; nothing held */
            break;
        BLITZ_AWAIT(e, blitz_sock_send_all(cx, &e->io, e->sock, e->in.data, e->in.len));
        blitz_buf_release(&e->in);
        if (e->io.result < 0)
            break;
    }
    blitz_sock_close(e->sock);
    BLITZ_END(e);
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
    for (;;) {
        BLITZ_AWAIT(a, blitz_sock_accept(cx, &a->io, a->listener));
        if (a->io.result < 0) { /* e.g. BLITZ_EMFILE: back off, keep listening */
            fprintf(stderr, "accept: %s\n", blitz_strerror((int)a->io.result));
            BLITZ_AWAIT(a, blitz_sleep(cx, &a->backoff, 10 * BLITZ_MSEC));
            continue;
        }
        blitz_tcp_set_nodelay(a->io.socket, 1);
        echo_conn c = {0};
        c.sock = a->io.socket;
        if (blitz_spawn(blitz_cx_runtime(cx), echo_conn_poll, &c, sizeof c, NULL) != BLITZ_OK)
            blitz_sock_close(c.sock);
    }
    BLITZ_END(a);
}

int main(int argc, char **argv) {
    blitz_runtime *rt = NULL;
    blitz_addr addr;
    acceptor a = {0};
    int rc = blitz_addr_parse(argc > 1 ? argv[1] : "127.0.0.1:7777", &addr);
    if (rc == BLITZ_OK)
        rc = blitz_runtime_new(NULL, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_tcp_listen(rt, &addr, 0, 0, &a.listener);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "echo_server: %s\n", blitz_strerror(rc));
        if (rt)
            blitz_runtime_free(rt);
        return 1;
    }
    char where[64];
    blitz_sock_local_addr(a.listener, &addr);
    blitz_addr_format(&addr, where, sizeof where);
    printf("echo server on %s (%s backend)\n", where,
           blitz_backend_name(blitz_runtime_backend(rt)));
    fflush(stdout);
    rc = blitz_runtime_run(rt, acceptor_poll, &a, sizeof a);
    blitz_runtime_free(rt);
    return rc == BLITZ_OK ? 0 : 1;
}
