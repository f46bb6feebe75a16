/* A UDP echo server and a client in one program: the server task answers
 * every datagram to its sender; the client sends a few and checks them.
 *
 *   ./udp_echo            self-test on 127.0.0.1 (port 0)
 *   ./udp_echo ADDR       serve on ADDR until killed */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io io;
    blitz_addr from;
    long served, limit; /* limit 0 = forever */
    char buf[65536];
} server;

static blitz_poll server_poll(blitz_cx *cx, void *p) {
    server *s = p;
    BLITZ_BEGIN(s);
    while (!s->limit || s->served < s->limit) {
        BLITZ_AWAIT(s, blitz_sock_recv_from(cx, &s->io, s->sock, s->buf, sizeof s->buf, &s->from));
        if (s->io.result < 0)
            break;
        BLITZ_AWAIT(
            s, blitz_sock_send_to(cx, &s->io, s->sock, s->buf, (size_t)s->io.result, &s->from));
        s->served++;
    }
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_addr to;
    blitz_io io;
    blitz_timer timer;
    int i, ok;
    char msg[64], reply[64];
} client;

static blitz_poll client_poll(blitz_cx *cx, void *p) {
    client *c = p;
    BLITZ_BEGIN(c);
    for (c->i = 0; c->i < 10; c->i++) {
        snprintf(c->msg, sizeof c->msg, "hello %d", c->i);
        BLITZ_AWAIT(c, blitz_sock_send_to(cx, &c->io, c->sock, c->msg, strlen(c->msg), &c->to));
        /* UDP may drop: wait at most a second for the answer. */
        BLITZ_AWAIT(
            c, blitz_timeout_op(cx, &c->timer, BLITZ_SEC,
                                blitz_sock_recv(cx, &c->io, c->sock, c->reply, sizeof c->reply - 1),
                                blitz_io_cancel, &c->io));
        if (!c->timer.expired && c->io.result == (int64_t)strlen(c->msg) &&
            memcmp(c->reply, c->msg, strlen(c->msg)) == 0)
            c->ok++;
    }
    BLITZ_END(c);
}

int main(int argc, char **argv) {
    blitz_runtime *rt = NULL;
    blitz_addr addr;
    server s;
    memset(&s, 0, sizeof s);
    int rc = blitz_addr_parse(argc > 1 ? argv[1] : "127.0.0.1:0", &addr);
    if (rc == BLITZ_OK)
        rc = blitz_runtime_new(NULL, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_udp_bind(rt, &addr, 0, &s.sock);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "udp_echo: cannot bind: %s\n", blitz_strerror(rc));
        if (rt)
            blitz_runtime_free(rt);
        return 1;
    }
    blitz_sock_local_addr(s.sock, &addr);
    if (argc > 1) {
        char where[64];
        blitz_addr_format(&addr, where, sizeof where);
        printf("udp echo on %s\n", where);
        fflush(stdout);
        return blitz_runtime_run(rt, server_poll, &s, sizeof s) == BLITZ_OK ? 0 : 1;
    }
    s.limit = 10;
    blitz_task *srv;
    blitz_spawn(rt, server_poll, &s, sizeof s, &srv);
    client c;
    memset(&c, 0, sizeof c);
    c.to = addr;
    blitz_addr any;
    blitz_addr_parse("127.0.0.1:0", &any);
    blitz_udp_bind(rt, &any, 0, &c.sock);
    blitz_runtime_run(rt, client_poll, &c, sizeof c);
    printf("%d of 10 datagrams echoed\n", c.ok);
    blitz_sock_close(c.sock);
    blitz_task_cancel(srv);
    blitz_task_release(&srv);
    blitz_runtime_free(rt);
    return c.ok == 10 ? 0 : 1;
}
