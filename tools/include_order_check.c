/* Proves that the implementation builds and runs when system headers come
 * before blitz.h (make test-cxx): built with the compilers' GNU dialect,
 * and with strict C11 plus an explicit _POSIX_C_SOURCE, neither of which
 * lets blitz.h ask for _GNU_SOURCE any more. It joins and leaves an IPv4
 * multicast group (the one struct the C library hides then) and echoes a
 * line over a Unix socket pair on the poll backend (POLLRDHUP, ppoll). */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define BLITZ_IMPLEMENTATION
#include "blitz.h"

typedef struct {
    BLITZ_CORO;
    blitz_socket *a, *b;
    blitz_io io;
    char buf[16];
    size_t got;
    int rc;
} pair_echo;

static blitz_poll pair_echo_poll(blitz_cx *cx, void *p) {
    pair_echo *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->io, s->a, "ping", 4));
    if (s->io.result < 0) {
        s->rc = (int)s->io.result;
        BLITZ_RETURN(s);
    }
    BLITZ_AWAIT(s, blitz_sock_recv(cx, &s->io, s->b, s->buf, sizeof s->buf));
    if (s->io.result < 0)
        s->rc = (int)s->io.result;
    else
        s->got = (size_t)s->io.result;
    BLITZ_END(s);
}

int main(void) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = BLITZ_CURRENT_THREAD;
    cfg.backend = BLITZ_BACKEND_POLL;
    blitz_runtime *rt;
    if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK)
        return 1;
    blitz_addr any;
    blitz_socket *udp = NULL;
    int rc = blitz_addr_ip("0.0.0.0", 0, &any);
    if (rc == BLITZ_OK)
        rc = blitz_udp_bind(rt, &any, 0, &udp);
    if (rc == BLITZ_OK) {
        /* A malformed membership request is EINVAL (or EFAULT); a machine
         * without a multicast route answers ENODEV, which is fine here. */
        int join = blitz_udp_join_multicast(udp, "239.1.2.3", NULL);
        if (join == -EINVAL || join == -EFAULT)
            rc = join;
        else if (join == BLITZ_OK)
            rc = blitz_udp_leave_multicast(udp, "239.1.2.3", NULL);
        blitz_sock_close(udp);
    }
    pair_echo s;
    memset(&s, 0, sizeof s);
    if (rc == BLITZ_OK)
        rc = blitz_unix_pair(rt, 1, &s.a, &s.b);
    if (rc == BLITZ_OK) {
        rc = blitz_runtime_run(rt, pair_echo_poll, &s, sizeof s);
        blitz_sock_close(s.a);
        blitz_sock_close(s.b);
    }
    blitz_runtime_free(rt);
    if (rc != BLITZ_OK || s.rc != BLITZ_OK || s.got != 4 || memcmp(s.buf, "ping", 4) != 0) {
        fprintf(stderr, "include_order_check: %s / %s, %zu bytes\n", blitz_err_name(rc),
                blitz_err_name(s.rc), s.got);
        return 1;
    }
    return 0;
}
