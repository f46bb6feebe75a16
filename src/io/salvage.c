/* Data of a receive that was cancelled too late (a completion backend).
 *
 * A cancel of a receive the kernel holds races with its completion: the
 * kernel may have copied data into the op's buffer already, and then the
 * cancel finds nothing to stop. The op's task gave the receive up, so the
 * data would be lost to the stream; instead the completion keeps a copy
 * on the socket, and the next receive on the socket hands it out before
 * anything newer. A stream's copy is read in as many pieces as the
 * readers ask for; a datagram's goes whole to one reader (what does not
 * fit is dropped, as the system call would), with its sender's
 * address. */
#include "io.h"

#if BLITZ__HAS_SOCKETS

/* The op's buffers (a receive's, or a descriptor read's) as an array. */
static const blitz_iovec *blitz__salvage_bufs(const blitz_io *op, blitz_iovec *one, size_t *n) {
    if (op->blitz__kind == BLITZ__OP_RECVV) {
        *n = op->blitz__len;
        return (const blitz_iovec *)op->blitz__buf;
    }
    one->base = op->blitz__buf;
    one->len = op->blitz__len;
    *n = 1;
    return one;
}

typedef struct blitz__salvage {
    struct blitz__salvage *next;
    size_t len, off;
    blitz_addr from; /* RECV_FROM: the sender (len 0 for none) */
    unsigned char data[];
} blitz__salvage;

/* Whether an op of this kind consumes data from the socket. */
BLITZ_PRIVATE int blitz__salvage_kind(uint32_t kind) {
#if BLITZ__WIN32
    /* There a descriptor read's completion is its data, not readiness. */
    if (kind == BLITZ__OP_FD_READ)
        return 1;
#endif
    return kind == BLITZ__OP_RECV || kind == BLITZ__OP_RECVV || kind == BLITZ__OP_RECV_FROM;
}

/* Whether a receive's result `res` is data to keep: bytes, or on a
 * datagram socket an empty datagram too (a stream's 0 is its end, which
 * the next receive sees again). */
BLITZ_PRIVATE int blitz__salvage_worth(const blitz_socket *s, int64_t res) {
    return res > 0 || (res == 0 && s->type != SOCK_STREAM);
}

/* Keeps the `n` bytes the cancelled op received (still in its buffers,
 * which stay the caller's until the op settles). Caller holds the
 * socket's lock. Out of memory: the stream lost the data, and its next
 * reader learns it (BLITZ_ENOMEM). */
BLITZ_PRIVATE void blitz__salvage_keep(blitz_socket *s, const blitz_io *op, size_t n,
                                       uint32_t from_len) {
    blitz__salvage *c = (blitz__salvage *)blitz__malloc(sizeof *c + n);
    if (!c) {
        s->salvage_err = BLITZ_ENOMEM;
        blitz__u32_store(&s->salvage_n, 1, BLITZ__RELAXED);
        return;
    }
    c->next = NULL;
    c->len = n;
    c->off = 0;
    memset(&c->from, 0, sizeof c->from);
    if (op->blitz__kind == BLITZ__OP_RECV_FROM && op->blitz__addr) {
        c->from.len = from_len <= sizeof c->from.u.bytes ? from_len : sizeof c->from.u.bytes;
        memcpy(c->from.u.bytes, op->blitz__addr->u.bytes, c->from.len);
    }
    blitz_iovec one;
    size_t iovn, at = 0;
    const blitz_iovec *iov = blitz__salvage_bufs(op, &one, &iovn);
    for (size_t i = 0; i < iovn && at < n; i++) {
        size_t take = iov[i].len < n - at ? iov[i].len : n - at;
        memcpy(c->data + at, iov[i].base, take);
        at += take;
    }
    c->len = at;
    if (s->salvage_tail)
        s->salvage_tail->next = c;
    else
        s->salvage_head = c;
    s->salvage_tail = c;
    blitz__u32_store(&s->salvage_n, 1, BLITZ__RELAXED);
}

/* Serves a receive from kept data: 1 with the result in *r, or 0 when
 * there is none. The op's task; a receive that settled its cancelled one
 * sees the data (the completion kept it before the op's state turned
 * idle, a release the settle acquired). */
BLITZ_PRIVATE int blitz__salvage_take(blitz_socket *s, blitz_io *op, int64_t *r) {
    if (!blitz__u32_load(&s->salvage_n, BLITZ__RELAXED))
        return 0;
    blitz__mutex_lock(&s->lock);
    blitz__salvage *c = s->salvage_head;
    if (!c && !s->salvage_err) {
        blitz__mutex_unlock(&s->lock);
        return 0;
    }
    if (!c) {
        *r = s->salvage_err;
        s->salvage_err = 0;
    } else {
        blitz_iovec one;
        size_t iovn, got = 0;
        const blitz_iovec *iov = blitz__salvage_bufs(op, &one, &iovn);
        for (size_t i = 0; i < iovn && c->off + got < c->len; i++) {
            size_t left = c->len - c->off - got;
            size_t take = iov[i].len < left ? iov[i].len : left;
            memcpy(iov[i].base, c->data + c->off + got, take);
            got += take;
        }
        c->off += got;
        if (op->blitz__kind == BLITZ__OP_RECV_FROM && op->blitz__addr) {
            *op->blitz__addr = c->from;
            blitz__addr_set_from(op->blitz__addr, c->from.len, s->family);
        }
        if (c->off == c->len || s->type != SOCK_STREAM) {
            s->salvage_head = c->next;
            if (!s->salvage_head)
                s->salvage_tail = NULL;
            blitz__free(c);
        }
        *r = (int64_t)got;
    }
    blitz__u32_store(&s->salvage_n, s->salvage_head || s->salvage_err, BLITZ__RELAXED);
    blitz__mutex_unlock(&s->lock);
    return 1;
}

/* Whether kept data (or its loss) waits: the socket reads as readable.
 * Caller holds the socket's lock. */
BLITZ_PRIVATE int blitz__salvage_waiting(const blitz_socket *s) {
    return s->salvage_head || s->salvage_err;
}

/* The socket's memory goes. */
BLITZ_PRIVATE void blitz__salvage_release(blitz_socket *s) {
    while (s->salvage_head) {
        blitz__salvage *next = s->salvage_head->next;
        blitz__free(s->salvage_head);
        s->salvage_head = next;
    }
    s->salvage_tail = NULL;
}

#endif /* BLITZ__HAS_SOCKETS */
