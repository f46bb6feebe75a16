/* Connecting by host name: a DNS lookup on the blocking pool, then one
 * connect attempt per address, in the resolver's order. */
#include "../io/io.h"

#if BLITZ__HAS_SOCKETS

#define BLITZ__CONNECT_IDLE       0
#define BLITZ__CONNECT_RESOLVING  1
#define BLITZ__CONNECT_CONNECTING 2

static void blitz__connect_host_release_addrs(blitz_connect_op *op) {
    if (op->blitz__dns.addrs) {
        blitz_free(op->blitz__dns.addrs);
        op->blitz__dns.addrs = NULL;
    }
}

static blitz_poll blitz__connect_host_done(blitz_connect_op *op, int64_t result) {
    blitz__connect_host_release_addrs(op);
    op->result = result;
    op->blitz__stage = BLITZ__CONNECT_IDLE;
    return BLITZ_READY;
}

BLITZ_API blitz_poll blitz_tcp_connect_host(blitz_cx *cx, blitz_connect_op *op, const char *host,
                                            uint16_t port) {
    if (!op)
        return BLITZ_READY;
    if (op->blitz__stage == BLITZ__CONNECT_IDLE) {
        op->socket = NULL;
        op->attempts = 0;
        if (!cx || !host || !*host) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        memset(&op->blitz__dns, 0, sizeof op->blitz__dns);
        op->blitz__stage = BLITZ__CONNECT_RESOLVING;
    }
    if (op->blitz__stage == BLITZ__CONNECT_RESOLVING) {
        if (blitz_dns_resolve(cx, &op->blitz__dns, host, port, 0) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_tcp_connect_host_cancel, op);
        if (op->blitz__dns.result <= 0)
            return blitz__connect_host_done(op, op->blitz__dns.result < 0 ? op->blitz__dns.result
                                                                          : BLITZ_ENOHOST);
        op->blitz__next = 0;
        op->blitz__stage = BLITZ__CONNECT_CONNECTING;
        op->result = BLITZ_ECONNREFUSED;
        goto start_attempt;
    }
    for (;;) {
        /* An attempt is in progress: poll it. */
        if (blitz_tcp_connect_timeout(cx, &op->blitz__io, &op->blitz__addr,
                                      op->attempt_timeout_ns) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_tcp_connect_host_cancel, op);
        if (op->blitz__io.result == 0) {
            op->socket = op->blitz__io.socket;
            op->blitz__io.socket = NULL;
            return blitz__connect_host_done(op, 0);
        } else {
            op->result = op->blitz__io.result;
        }
        op->blitz__next++;
    start_attempt:
        if (op->blitz__next >= op->blitz__dns.result)
            return blitz__connect_host_done(op, op->result);
        {
            const blitz_resolved_addr *ra = &op->blitz__dns.addrs[op->blitz__next];
            memset(&op->blitz__addr, 0, sizeof op->blitz__addr);
            size_t len =
                ra->len < sizeof op->blitz__addr.u.bytes ? ra->len : sizeof op->blitz__addr.u.bytes;
            memcpy(op->blitz__addr.u.bytes, ra->addr.bytes, len);
            op->blitz__addr.len = (uint32_t)len;
        }
        op->attempts++;
    }
}

BLITZ_API void blitz_tcp_connect_host_cancel(blitz_cx *cx, void *opp) {
    blitz_connect_op *op = (blitz_connect_op *)opp;
    if (!op)
        return;
    if (op->blitz__stage == BLITZ__CONNECT_RESOLVING) {
        blitz_dns_cancel(cx, &op->blitz__dns);
    } else if (op->blitz__stage == BLITZ__CONNECT_CONNECTING) {
        blitz_io_cancel(NULL, &op->blitz__io);
    }
    if (op->blitz__stage != BLITZ__CONNECT_IDLE)
        blitz__connect_host_done(op, BLITZ_ECANCELED);
}

static blitz_poll blitz__connect_host_value_poll(blitz_cx *cx, void *arg) {
    blitz_connect_op *op = (blitz_connect_op *)arg;
    return op ? blitz_tcp_connect_host(cx, op, op->blitz__host, op->blitz__port) : BLITZ_READY;
}
BLITZ_API blitz_op blitz_op_tcp_connect_host(blitz_connect_op *op, const char *host,
                                             uint16_t port) {
    if (op) {
        op->blitz__host = host;
        op->blitz__port = port;
    }
    return blitz_op_make(blitz__connect_host_value_poll, blitz_tcp_connect_host_cancel, op);
}

#endif /* BLITZ__HAS_SOCKETS */
