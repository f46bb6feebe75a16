/* The path shared by the readiness backends (backend.h): the task tries
 * the system call, and on EAGAIN its op waits in the socket's list until
 * an event of its direction.
 *
 * Each event bumps the direction's sequence number under the socket's
 * lock, and a waiter registers only if the number did not move since its
 * attempt, so no event between the attempt and the registration is lost
 * (the edge-triggered contract). One thread at a time waits in the
 * backend or dispatches its events (io->lock); the others look with a
 * try-lock, so a busy worker never blocks on it. */
#include "io.h"

#if BLITZ__HAS_IO /* POSIX only until the IOCP backend (platform.h) */

BLITZ_PRIVATE blitz_poll blitz__ready_submit(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__atomic_u32 *seqp = op->blitz__dir == BLITZ__DIR_WRITE ? &s->wr_seq : &s->rd_seq;
    /* A TCP receive after a short one waits for the next read event
     * without trying: TCP copies until the buffer is full or its queues are
     * empty, so a short receive drained the socket. The registration below
     * re-checks the sequence number, so an event since then still leads to
     * an attempt; once the end of the stream was seen (no further edge
     * comes) every receive tries. (A Unix stream receive may stop short of queued data: it
     * does not join segments of different senders.) */
    int stream_recv = s->type == SOCK_STREAM && (s->family == AF_INET || s->family == AF_INET6) &&
                      (op->blitz__kind == BLITZ__OP_RECV || op->blitz__kind == BLITZ__OP_RECVV ||
                       op->blitz__kind == BLITZ__OP_RECV_BUF);
    size_t room = op->blitz__kind == BLITZ__OP_RECV_BUF ? BLITZ_RECV_BUF_SIZE : op->blitz__len;
    for (;;) {
        uint32_t seq0 = blitz__u32_load(seqp, BLITZ__ACQUIRE);
        int64_t r = BLITZ_EAGAIN;
        if (!stream_recv || blitz__u32_load(&s->rd_drained, BLITZ__RELAXED) != seq0 + 1u ||
            blitz__u32_load(&s->rd_final, BLITZ__RELAXED))
            r = blitz__op_attempt(op);
        if (r == BLITZ_EINTR)
            continue;
        if (stream_recv && r > 0 && op->blitz__kind != BLITZ__OP_RECVV && (size_t)r < room)
            blitz__u32_store(&s->rd_drained, seq0 + 1u, BLITZ__RELAXED);
        if (r != BLITZ_EAGAIN) {
            if (blitz__op_result(op, r))
                return BLITZ_READY;
            continue;
        }
        blitz__mutex_lock(&s->lock);
        if (s->closed) {
            blitz__mutex_unlock(&s->lock);
            blitz__op_result(op, BLITZ_ECLOSED);
            return BLITZ_READY;
        }
        if (blitz__u32_load(seqp, BLITZ__RELAXED) != seq0) {
            blitz__mutex_unlock(&s->lock);
            continue;
        }
        /* Before the op waits: a socket the backend cannot watch would
         * leave it waiting for an event that never comes. */
        if (s->io->be->want && s->io->be->want(s->io, s, 1u << op->blitz__dir) != BLITZ_OK) {
            blitz__mutex_unlock(&s->lock);
            blitz__op_result(op, BLITZ_ENOMEM);
            return BLITZ_READY;
        }
        blitz_waker mine = blitz_cx_waker(cx);
        op->blitz__waker = blitz_waker_clone(&mine);
        blitz__op_set_state(op, BLITZ__IO_WAIT);
        blitz__op_link(s, op);
        blitz__mutex_unlock(&s->lock);
        return BLITZ_PENDING;
    }
}

/* An event on `s`: bump the sequence numbers, wake the waiters of those
 * directions (ops in WAIT; on a completion backend the list also holds ops
 * the kernel owns, which are left alone). `want` becomes the directions
 * still waited for (only the poll backend reads it). Any thread. */
BLITZ_PRIVATE void blitz__io_ready(blitz_socket *s, int rd, int wr) {
    uint32_t mask = (rd ? 1u : 0u) | (wr ? 2u : 0u);
    if (!mask)
        return;
    int bumped = 0;
    for (;;) {
        blitz_waker batch[16];
        int n = 0, more = 0;
        blitz__mutex_lock(&s->lock);
        if (!bumped) {
            if (mask & 1u)
                blitz__u32_store(&s->rd_seq, blitz__u32_load(&s->rd_seq, BLITZ__RELAXED) + 1,
                                 BLITZ__RELEASE);
            if (mask & 2u)
                blitz__u32_store(&s->wr_seq, blitz__u32_load(&s->wr_seq, BLITZ__RELAXED) + 1,
                                 BLITZ__RELEASE);
            bumped = 1;
        }
        uint32_t want = 0;
        blitz_io *op = s->ops;
        while (op) {
            blitz_io *next = op->blitz__next;
            uint32_t bit = 1u << op->blitz__dir;
            if (blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) != BLITZ__IO_WAIT) {
                op = next;
                continue;
            }
            if ((mask & bit) && !more) {
                if (n == 16) {
                    more = 1;
                    want |= bit;
                } else {
                    blitz__op_unlink(s, op);
                    batch[n++] = op->blitz__waker;
                    op->blitz__waker = blitz_waker_noop();
                    blitz__op_set_state(op, BLITZ__IO_RETRY);
                }
            } else {
                want |= bit;
            }
            op = next;
        }
        blitz__u32_store(&s->want, want, BLITZ__RELAXED);
        blitz__mutex_unlock(&s->lock);
        for (int i = 0; i < n; i++)
            blitz__io_wake(s->io, batch[i]);
        if (!more)
            return;
    }
}

/* Delivers the events of the last wait (io->lock held). */
static void blitz__ready_dispatch(blitz__io *io) {
    blitz__wake_batch_begin();
    io->be->dispatch(io);
    blitz__wake_batch_end();
}

/* The readiness backends' look: a try-lock, so a thread already waiting in
 * or dispatching the backend does the work. */
BLITZ_PRIVATE void blitz__ready_poll(blitz__io *io) {
    if (!blitz__mutex_trylock(&io->lock))
        return;
    blitz__io_free_deferred(io);
    io->be->wait(io, 0);
    blitz__ready_dispatch(io);
    blitz__mutex_unlock(&io->lock);
}

/* The readiness backends' park: one thread at a time waits in the backend
 * (io->lock) and dispatches what it got. */
BLITZ_PRIVATE void blitz__ready_park(blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg) {
    blitz__mutex_lock(&io->lock);
    blitz__io_free_deferred(io);
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED_DRIVER, BLITZ__ACQ_REL))
        io->be->wait(io, timeout_ns);
    blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE);
    if (woke)
        woke(arg);
    blitz__ready_dispatch(io);
    blitz__mutex_unlock(&io->lock);
}

#endif /* BLITZ__HAS_IO */
