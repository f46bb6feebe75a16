/* Multishot receives on io_uring stream sockets.
 *
 * A receive on a socket whose last receive came back short (a request /
 * response stream, most likely empty now) arms one multishot RECV with
 * provided buffers instead of a single-shot RECV. It stays armed for the
 * connection: each arrival of data completes into a buffer of the ring's
 * pool with no new submission and no new poll arming. The completions
 * queue the buffers on the socket in order (`rq`), and a receive copies
 * from there. While one is armed no receive may use the system call (it
 * could overtake data in completions not yet reaped), so it is ended:
 *   - by a receive that fills a buffer of at least a pool buffer's size
 *     (a bulk reader): bulk data goes straight into the reader's buffer
 *     again, without the copy;
 *   - when the socket holds BLITZ__RECV_MS_HOLD buffers (its reader lags):
 *     the socket's own receive buffer and TCP's window hold the rest, as
 *     they would without it, and the next receive that finds the queue
 *     empty arms it again;
 *   - by the kernel with ENOBUFS when the pool runs dry: the receive that
 *     waits then goes single-shot into its own buffer, the next one arms
 *     again.
 * The ring's owner reaps the completions; a receive that waits is woken
 * to retry and copies by itself, so only its task touches its buffer. */
#include "io.h" /* and uring.c's structures, which come before this file */

#if BLITZ__HAS_IO /* POSIX only until the IOCP backend (platform.h) */

/* Asks the kernel to end the multishot receive. Caller holds the
 * socket's lock. */
static void blitz__recv_ms_cancel(blitz_socket *s) {
    if (!s->rms_armed || s->rms_cancelling)
        return;
    s->rms_cancelling = 1;
    blitz__uring_cancel_ud(s->io, &s->io->rings[s->rms_ring],
                           (uint64_t)(uintptr_t)s | BLITZ__UD_RECV_MS);
}

/* Whether a receive op of `kind` / `dir` on `s` takes the multishot path:
 * receives on TCP sockets, and descriptor reads of a socket that has
 * multishot state (they hand out what it queued first). Unix sockets stay
 * single-shot: a multishot receive there can miss the peer's end of
 * stream (seen on Linux 6.18: the last data arrives, the EOF never does;
 * reported upstream as liburing issue 1549). */
BLITZ_PRIVATE int blitz__recv_ms_wants(const blitz_socket *s, uint32_t kind, uint32_t dir) {
    if (s->type != SOCK_STREAM || (s->family != AF_INET && s->family != AF_INET6) ||
        !blitz__u32_load(&s->io->ms_recv, BLITZ__RELAXED))
        return 0;
    if (kind == BLITZ__OP_RECV || kind == BLITZ__OP_RECVV || kind == BLITZ__OP_RECV_BUF)
        return 1;
    if (kind == BLITZ__OP_FD_READ || (kind == BLITZ__OP_FD_POLL && dir == BLITZ__DIR_READ))
        return !blitz__recv_ms_direct((blitz_socket *)(uintptr_t)s);
    return 0;
}

/* The descriptor is about to be read directly (a descriptor op, a splice):
 * no multishot receive is armed on the socket from now on. Returns 1 when
 * the direct read is safe at once (nothing armed, nothing queued). */
BLITZ_PRIVATE int blitz__recv_ms_direct(blitz_socket *s) {
    blitz__mutex_lock(&s->lock);
    s->rms_off = 1;
    blitz__recv_ms_cancel(s);
    int safe = !s->rms_armed && !s->rq_count && !s->rms_lost;
    blitz__mutex_unlock(&s->lock);
    return safe;
}

/* Bytes the op asks for. */
static size_t blitz__recv_room(const blitz_io *op) {
    struct iovec one;
    size_t n, room = 0;
    const struct iovec *iov = blitz__op_iov(op, &one, &n);
    for (size_t i = 0; i < n; i++)
        room += iov[i].iov_len;
    return room;
}

/* Gives the head buffer of the queue back to its ring's pool. Caller
 * holds the socket's lock. */
static void blitz__rq_pop(blitz_socket *s) {
    blitz__rbuf *b = &s->rq[s->rq_head];
    blitz__uring_pbuf_put(&s->io->rings[b->ring], b->bid);
    s->rq_head = (s->rq_head + 1) % s->rq_cap;
    s->rq_count--;
}

/* Copies queued data into the op's buffers, in order. Caller holds the
 * socket's lock. */
static size_t blitz__rq_copy(blitz_socket *s, blitz_io *op) {
    struct iovec one;
    size_t n;
    const struct iovec *iov = blitz__op_iov(op, &one, &n);
    size_t total = 0;
    for (size_t i = 0; i < n && s->rq_count; i++) {
        char *dst = (char *)iov[i].iov_base;
        size_t room = iov[i].iov_len;
        while (room && s->rq_count) {
            blitz__rbuf *b = &s->rq[s->rq_head];
            size_t take = b->len - b->off;
            if (take > room)
                take = room;
            memcpy(dst, blitz__uring_pbuf_addr(&s->io->rings[b->ring], b->bid) + b->off, take);
            dst += take;
            room -= take;
            total += take;
            b->off += (uint32_t)take;
            if (b->off == b->len)
                blitz__rq_pop(s);
        }
    }
    return total;
}

/* Appends a filled buffer to the queue; 0 when out of memory. Caller
 * holds the socket's lock. */
static int blitz__rq_push(blitz_socket *s, uint32_t ring, uint32_t bid, uint32_t len) {
    void *q = s->rq;
    if (s->rq_count == s->rq_cap &&
        !blitz__fifo_grow(&q, &s->rq_head, s->rq_count, &s->rq_cap, sizeof(blitz__rbuf), 8))
        return 0;
    s->rq = (blitz__rbuf *)q;
    blitz__rbuf *b = &s->rq[(s->rq_head + s->rq_count) % s->rq_cap];
    b->ring = ring;
    b->bid = bid;
    b->off = 0;
    b->len = len;
    s->rq_count++;
    return 1;
}

/* Lends the head buffer of the queue to a borrowing receive (recv_buf.c):
 * its view gets the unread part, and the buffer goes back to the ring's
 * pool when the task releases it. Caller holds the socket's lock. */
static int64_t blitz__rq_lend(blitz_socket *s, blitz_io *op) {
    blitz__rbuf *q = &s->rq[s->rq_head];
    blitz__ring *r = &s->io->rings[q->ring];
    blitz_buf *b = (blitz_buf *)op->blitz__buf;
    b->data = (char *)(uintptr_t)blitz__uring_pbuf_addr(r, q->bid) + q->off;
    b->len = q->len - q->off;
    b->blitz__owner = r;
    b->blitz__id = q->bid;
    b->blitz__kind = BLITZ__BUF_RING;
    s->rq_head = (s->rq_head + 1) % s->rq_cap;
    s->rq_count--;
    return (int64_t)b->len;
}

/* A released lent buffer goes back to its ring's pool. Any thread. */
BLITZ_PRIVATE void blitz__recv_ms_give_back(void *ring, uint32_t bid) {
    blitz__uring_pbuf_put((blitz__ring *)ring, bid);
}

/* A receive on a stream socket (io_uring). Serves it from the queue, or
 * waits on the armed multishot receive, or arms one. `*single_shot` set:
 * the caller goes on with the system call / single-shot path. */
BLITZ_PRIVATE blitz_poll blitz__recv_ms_start(blitz_cx *cx, blitz_io *op, int *single_shot) {
    blitz_socket *s = op->blitz__sock;
    blitz__io *io = s->io;
    *single_shot = 0;
    blitz__mutex_lock(&s->lock);
    int64_t r = 0;
    int done = 1;
    int lend = op->blitz__kind == BLITZ__OP_RECV_BUF;
    size_t room = lend ? 1 : blitz__recv_room(op);
    if (s->closed) {
        r = BLITZ_ECLOSED;
    } else if (op->blitz__kind == BLITZ__OP_FD_POLL) {
        /* Readable: queued data, the end of the stream, or an error. */
        if (s->rq_count || s->rms_eof || s->rms_err || s->rms_lost)
            r = POLLIN;
        else
            done = 0;
    } else if (lend && s->rq_count) {
        r = blitz__rq_lend(s, op);
    } else if (s->rq_count || !room) {
        r = (int64_t)blitz__rq_copy(s, op);
        /* A bulk reader (a pool buffer's worth at once): its data goes
         * straight into its own buffers again once the multishot receive
         * has ended. */
        if (r >= BLITZ_URING_RECV_BUF_SIZE)
            blitz__recv_ms_cancel(s);
    } else if (s->rms_lost) {
        r = BLITZ_ENOMEM; /* for good: what came after the gap is no longer this stream */
    } else if (s->rms_err) {
        r = s->rms_err;
        s->rms_err = 0;
    } else if (!s->rms_eof) {
        done = 0; /* nothing to hand out: wait */
    }
    if (done) {
        blitz__mutex_unlock(&s->lock);
        blitz__op_result(op, r);
        return BLITZ_READY;
    }
    if (!s->rms_armed) {
        /* Nothing queued and nothing armed: the system call is safe. A
         * bulk reader (its last receive filled its buffer, or got a pool
         * buffer's worth), a socket the pool could not serve last time, or
         * one the kernel refused, goes single-shot (a borrowing receive:
         * a readiness wait, then the system call into a heap buffer). */
        int batches = 0;
        blitz__ring *ring = blitz__uring_mine(io, &batches);
        blitz__u32_store(&s->rms_published, 1, BLITZ__RELEASE);
        if ((!lend && (blitz__u32_load(&s->rd_hot, BLITZ__RELAXED) ||
                       blitz__u32_load(&s->rd_bulk, BLITZ__RELAXED))) ||
            s->rms_nobufs || s->rms_off || !blitz__uring_pbuf_ready(ring) ||
            blitz__uring_arm_recv(io, ring, s, !batches)) {
            s->rms_nobufs = 0;
            blitz__mutex_unlock(&s->lock);
            *single_shot = 1;
            return BLITZ_PENDING;
        }
        s->rms_armed = 1;
        s->rms_ring = ring->index;
        blitz__sock_ref(s);
        blitz__u64_fetch_add(&io->inflight, 1, BLITZ__RELAXED);
        blitz__u64_fetch_add(&io->rms_armed_count, 1, BLITZ__RELAXED);
    }
    blitz_waker mine = blitz_cx_waker(cx);
    op->blitz__waker = blitz_waker_clone(&mine);
    blitz__op_set_state(op, BLITZ__IO_WAIT);
    blitz__op_link(s, op);
    blitz__mutex_unlock(&s->lock);
    return BLITZ_PENDING;
}

/* A completion of a socket's multishot receive. The ring's reaping
 * thread. */
BLITZ_PRIVATE void blitz__io_recv_ms(blitz__io *io, blitz__ring *r, blitz_socket *s, int32_t res,
                                     uint32_t flags) {
    int ended = !(flags & IORING_CQE_F_MORE);
    (void)blitz__u32_load(&s->rms_published, BLITZ__ACQUIRE);
    blitz__mutex_lock(&s->lock);
    if (flags & IORING_CQE_F_BUFFER) {
        uint32_t bid = flags >> IORING_CQE_BUFFER_SHIFT;
        if (res <= 0 || s->closed || s->rms_lost) {
            blitz__uring_pbuf_put(r, bid);
        } else if (!blitz__rq_push(s, r->index, bid, (uint32_t)res)) {
            /* Out of memory for the queue: the stream lost this data. Its
             * reader gets what came before, then BLITZ_ENOMEM from every
             * receive: handing out later data (queued once memory is back,
             * or read by a single-shot receive) would join the two sides
             * of the gap without a word. */
            blitz__uring_pbuf_put(r, bid);
            s->rms_lost = 1;
            blitz__recv_ms_cancel(s);
        }
    }
    if (res == 0) {
        s->rms_eof = 1;
    } else if (res == BLITZ_ENOBUFS) {
        s->rms_nobufs = 1;
        blitz__u64_fetch_add(&io->rms_nobufs_count, 1, BLITZ__RELAXED);
    } else if (res == BLITZ_EINVAL) {
        s->rms_off = 1;
    } else if (res < 0 && res != BLITZ_ECANCELED && !s->rms_err) {
        s->rms_err = res;
    }
    if (ended) {
        s->rms_armed = 0;
        s->rms_cancelling = 0;
    } else if (s->rq_count >= BLITZ__RECV_MS_HOLD && !s->rms_cancelling) {
        blitz__recv_ms_cancel(s);
        blitz__u64_fetch_add(&io->rms_held_cancels, 1, BLITZ__RELAXED);
    }
    blitz__mutex_unlock(&s->lock);
    /* Every read waiting on the socket tries again (normally one), as for
     * a readiness event. */
    blitz__io_ready(s, 1, 0);
    if (ended) {
        blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELEASE);
        blitz__sock_unref(s);
    }
}

/* The socket closes (or the runtime shuts down): end the multishot
 * receive, give the queued buffers back. Caller holds the socket's
 * lock. */
BLITZ_PRIVATE void blitz__recv_ms_close(blitz_socket *s) {
    blitz__recv_ms_cancel(s);
    while (s->rq_count)
        blitz__rq_pop(s);
}

/* The socket's memory goes (its rings may be gone already). */
BLITZ_PRIVATE void blitz__recv_ms_release(blitz_socket *s) {
    blitz__free(s->rq);
    s->rq = NULL;
    s->rq_count = s->rq_cap = 0;
}

#endif /* BLITZ__HAS_IO */
