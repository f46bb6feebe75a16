/* The I/O driver's core: ops, their states and results, close, waiting
 * and creation, over one backend (backend.h; seed 002 "I/O Driver";
 * DESIGN.md "I/O").
 *
 * An op is submitted by the task that polls it, waits, and completes with
 * a result stored in the op:
 *   completion backend  the kernel performs the operation; the completion
 *              carries the result; sends try the system call first, since
 *              a send into a socket with room completes at once;
 *   readiness backend   the task performs the system call; on EAGAIN the
 *              op joins the socket's waiter list and an event of its
 *              direction wakes it to try again. Each event bumps the
 *              direction's sequence number under the socket's lock, and a
 *              waiter registers only if the number did not move since its
 *              attempt, so no event between the attempt and the
 *              registration is lost (the edge-triggered contract).
 *
 * Waiting and dispatching: any thread may reap without blocking (the start
 * of each worker tick, never blocking a busy worker); the one parked
 * worker that is the runtime's "sleeper" blocks in the backend with the
 * next timer's deadline as timeout (the current-thread driver always
 * does), so an idle runtime sees I/O at once. Its parker is then
 * PARKED_DRIVER, and an unpark writes the backend's wake-up object
 * (io->wake_fd), which is part of every backend wait.
 *
 * Buffer lifetime: an op the kernel holds (a completion backend) keeps a
 * reference on its task through its waker, so the task's block, where the
 * buffer lives, is not freed before the completion arrives, even when the
 * task was cancelled (its cancel hook asks the backend to cancel) or
 * finished. */
#include "io.h"

#if BLITZ__HAS_SOCKETS

/* The owner's view of an op's state. A completion publishes the final
 * state while it still holds the op's lock (blitz__op_lock below), so an
 * owner that sees a final state also waits for that lock's release
 * (acquire): only then is the completer done with the op, and the task may
 * reuse the op or let its memory go. Never called with the op lock held. */
static inline uint32_t blitz__op_state(const blitz_io *op) {
    uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__ACQUIRE);
    if (st != BLITZ__IO_INFLIGHT && st != BLITZ__IO_CANCELLING)
        while (blitz__u32_field_load(&op->blitz__lock, BLITZ__ACQUIRE))
            blitz__cpu_relax();
    return st;
}
BLITZ_PRIVATE void blitz__op_set_state(blitz_io *op, uint32_t st) {
    blitz__u32_field_store(&op->blitz__state, st, BLITZ__RELEASE);
}

/* Wakes an op's task; after shutdown only drops the reference (no task
 * runs any more). */
BLITZ_PRIVATE void blitz__io_wake(blitz__io *io, blitz_waker w) {
    if (blitz__u32_load(&io->shutdown, BLITZ__ACQUIRE))
        blitz_waker_drop(w);
    else
        blitz_waker_wake(w);
}

/* Doubles a circular queue of `elem`-byte entries (at least `first`),
 * laying its `count` entries out from index 0. Returns 0 when out of
 * memory (the queue is unchanged). */
BLITZ_PRIVATE int blitz__fifo_grow(void **buf, uint32_t *head, uint32_t count, uint32_t *cap,
                                   size_t elem, uint32_t first) {
    uint32_t ncap = *cap ? *cap * 2 : first;
    char *q = BLITZ__FAULT(queue_grow) ? NULL : (char *)blitz__calloc(elem * ncap);
    if (!q)
        return 0;
    for (uint32_t i = 0; i < count; i++)
        memcpy(q + (size_t)i * elem, (char *)*buf + (size_t)((*head + i) % *cap) * elem, elem);
    blitz__free(*buf);
    *buf = q;
    *head = 0;
    *cap = ncap;
    return 1;
}

/* A receive of `len` bytes got `r`: whether it filled its buffer (the next
 * one finds data waiting) and whether it took a pool buffer's worth (a
 * bulk reader: no multishot receive). */
static void blitz__recv_note(blitz_socket *s, int64_t r, size_t len) {
    blitz__u32_store(&s->rd_hot, r > 0 && (size_t)r == len, BLITZ__RELAXED);
    blitz__u32_store(&s->rd_bulk, r >= (int64_t)BLITZ_URING_RECV_BUF_SIZE, BLITZ__RELAXED);
}

/* ---- an op's own system call (readiness, and the tries before a submission) ---- */

#if BLITZ__HAS_IO /* Windows: the completion port performs every op (iocp_sock.c) */

static int64_t blitz__last_error(void) {
    return blitz__from_errno(errno);
}

/* The op's buffers as an iovec array: its own for the vectored kinds,
 * else `one` describing its single buffer. */
BLITZ_PRIVATE struct iovec *blitz__op_iov(const blitz_io *op, struct iovec *one, size_t *n) {
    if (op->blitz__kind == BLITZ__OP_RECVV || op->blitz__kind == BLITZ__OP_SENDV) {
        *n = op->blitz__len;
        return (struct iovec *)op->blitz__buf;
    }
    one->iov_base = op->blitz__buf;
    one->iov_len = op->blitz__len;
    *n = 1;
    return one;
}

static void blitz__op_msghdr(blitz_io *op, struct msghdr *m, struct iovec *one) {
    memset(m, 0, sizeof *m);
    size_t n;
    m->msg_iov = blitz__op_iov(op, one, &n);
    m->msg_iovlen = n;
    if (op->blitz__addr) {
        m->msg_name = op->blitz__addr->u.bytes;
        m->msg_namelen = op->blitz__kind == BLITZ__OP_SEND_TO ? op->blitz__addr->len
                                                              : sizeof op->blitz__addr->u.bytes;
    }
}

/* The sender's address length a completion backend's RECV_FROM got (its
 * msghdr is in the op). */
static uint32_t blitz__op_from_len(const blitz_io *op) {
    if (op->blitz__kind != BLITZ__OP_RECV_FROM || !(op->blitz__flags & BLITZ__OPF_URING))
        return 0;
    return (uint32_t)((const struct msghdr *)(const void *)op->blitz__scratch)->msg_namelen;
}

/* One non-blocking attempt: bytes, a new descriptor (accept), 0 (connect),
 * or -errno. */
BLITZ_PRIVATE int64_t blitz__op_attempt(blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    ssize_t r;
    errno = 0;
    switch (op->blitz__kind) {
    case BLITZ__OP_RECV:
        r = BLITZ__SYS(recv(s->fd, op->blitz__buf, BLITZ__SYS_LEN(op->blitz__len), 0));
        break;
    case BLITZ__OP_SEND:
    case BLITZ__OP_SEND_ALL:
        r = BLITZ__SYS(blitz__send_nosig(s->fd, (char *)op->blitz__buf + op->blitz__done,
                                         BLITZ__SYS_LEN(op->blitz__len - op->blitz__done)));
        break;
    case BLITZ__OP_RECVV:
    case BLITZ__OP_RECV_FROM: {
        struct msghdr m;
        struct iovec one;
        blitz__op_msghdr(op, &m, &one);
        r = BLITZ__SYS(recvmsg(s->fd, &m, MSG_DONTWAIT));
        if (r >= 0 && op->blitz__addr)
            blitz__addr_set_from(op->blitz__addr, m.msg_namelen, s->family);
        break;
    }
    case BLITZ__OP_SENDV:
    case BLITZ__OP_SEND_TO: {
        struct msghdr m;
        struct iovec one;
        blitz__op_msghdr(op, &m, &one);
        r = BLITZ__SYS(blitz__sendmsg_nosig(s->fd, &m));
        break;
    }
    case BLITZ__OP_ACCEPT:
        r = BLITZ__SYS(blitz__accept_nb(s->fd));
        break;
    case BLITZ__OP_CONNECT: {
        const blitz_addr *a = (const blitz_addr *)(void *)op->blitz__scratch;
        if (!(op->blitz__flags & BLITZ__OPF_CONNECTING)) {
            r = BLITZ__SYS(
                connect(s->fd, (const struct sockaddr *)(const void *)a->u.bytes, a->len));
            if (r < 0 && errno == EINPROGRESS) {
                op->blitz__flags |= BLITZ__OPF_CONNECTING;
                return BLITZ_EAGAIN;
            }
            break;
        }
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
            return blitz__last_error();
        if (err)
            return -(int64_t)err;
        struct sockaddr_storage peer;
        socklen_t pl = sizeof peer;
        if (getpeername(s->fd, (struct sockaddr *)&peer, &pl) < 0)
            return errno == ENOTCONN ? BLITZ_EAGAIN : blitz__last_error();
        return 0;
    }
    default:
        if (BLITZ__OP_IS_FD(op->blitz__kind))
            return blitz__fd_attempt(op);
        return BLITZ_EINVAL;
    }
    if (r < 0) {
        if (errno == EWOULDBLOCK)
            return BLITZ_EAGAIN;
        return blitz__last_error();
    }
    return (int64_t)r;
}

#else
static uint32_t blitz__op_from_len(const blitz_io *op) {
    return op->blitz__kind == BLITZ__OP_RECV_FROM ? (uint32_t)op->blitz__scratch[0] : 0;
}
#endif /* BLITZ__HAS_IO */

static blitz_timer *blitz__connect_timer(blitz_io *op) {
    _Static_assert(offsetof(blitz_addr, u) + BLITZ__CONNECT_ADDR_MAX <= BLITZ__CONNECT_TIMER_AT,
                   "the timer comes after the address");
    return (blitz_timer *)(void *)((char *)op->blitz__scratch + BLITZ__CONNECT_TIMER_AT);
}

/* ---- finishing an op ------------------------------------------------------------- */

static void blitz__connect_sock_drop(blitz_io *op) {
    if (op->blitz__kind == BLITZ__OP_CONNECT && op->blitz__sock) {
        blitz_socket *s = op->blitz__sock;
        op->blitz__sock = NULL;
        blitz_sock_close(s);
    }
}

/* A result for `op` (attempt or completion). Returns 1 when the op is
 * finished (result set, op idle), 0 when it must go on (send_all). */
static int blitz__op_result_ex(blitz_io *op, int64_t r, int live);
/* A result of an attempt by the task itself (the socket is in use). */
BLITZ_PRIVATE int blitz__op_result(blitz_io *op, int64_t r) {
    return blitz__op_result_ex(op, r, 1);
}

/* `live`: the caller is using the socket. A completion delivered by the
 * driver (DONE) is consumed without touching the socket, which may be
 * closed and freed by now. */
static int blitz__op_result_ex(blitz_io *op, int64_t r, int live) {
    switch (op->blitz__kind) {
    case BLITZ__OP_SEND_ALL:
    case BLITZ__OP_FD_WRITE_ALL:
        if (r > 0) {
            op->blitz__done += (size_t)r;
            if (op->blitz__done < op->blitz__len)
                return 0;
            r = (int64_t)op->blitz__done;
        } else if (r == 0 && op->blitz__done < op->blitz__len) {
            return 0;
        }
        break;
    case BLITZ__OP_ACCEPT:
        /* A completion's descriptor is a socket already. */
#if BLITZ__HAS_IO
        if (r >= 0 && !op->socket) {
            /* The listener's driver and family were noted at the start. */
            blitz_socket *ns = NULL;
            int rc = blitz__sock_wrap((blitz__io *)(uintptr_t)op->blitz__scratch[0], (int)r,
                                      (int)op->blitz__scratch[1], SOCK_STREAM, &ns);
            op->socket = ns;
            r = rc;
        }
#endif
        break;
    case BLITZ__OP_CONNECT:
        if (r == 0) {
            op->socket = op->blitz__sock;
            op->blitz__sock = NULL;
        } else {
            blitz__connect_sock_drop(op);
        }
        break;
    case BLITZ__OP_RECV:
        if (live)
            blitz__recv_note(op->blitz__sock, r, op->blitz__len);
        break;
    default:
        break;
    }
    op->result = r;
    blitz__op_set_state(op, BLITZ__IO_IDLE);
    return 1;
}

/* The op's own lock (a spin bit) guards the waker and state of a
 * completion backend's op between submission and completion, so the task,
 * a cancel and the completing thread never need the socket, which may be
 * closed and freed as soon as the completion is delivered. Order: socket
 * lock, then op lock, then the backend's submission lock. */
static void blitz__op_lock(blitz_io *op) {
    for (;;) {
        uint32_t v = 0;
        if (blitz__u32_field_cas(&op->blitz__lock, &v, 1u, BLITZ__ACQUIRE))
            return;
        while (blitz__u32_field_load(&op->blitz__lock, BLITZ__RELAXED))
            blitz__cpu_relax();
    }
}
static void blitz__op_unlock(blitz_io *op) {
    blitz__u32_field_store(&op->blitz__lock, 0u, BLITZ__RELEASE);
}

/* Polled again while registered: keep (or refresh) the waker. */
static blitz_poll blitz__op_rewait(blitz_cx *cx, blitz_io *op) {
    blitz_waker mine = blitz_cx_waker(cx), old = blitz_waker_noop();
    uint32_t st0 = blitz__op_state(op);
    if (st0 == BLITZ__IO_INFLIGHT || st0 == BLITZ__IO_CANCELLING) {
        blitz__op_lock(op);
        uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
        int waiting = st == BLITZ__IO_INFLIGHT || st == BLITZ__IO_CANCELLING;
        if (waiting && !blitz_waker_will_wake(&op->blitz__waker, &mine)) {
            old = op->blitz__waker;
            op->blitz__waker = blitz_waker_clone(&mine);
        }
        blitz__op_unlock(op);
        blitz_waker_drop(old);
        return waiting ? BLITZ_PENDING : BLITZ_READY;
    }
    if (st0 != BLITZ__IO_WAIT)
        return BLITZ_READY;
    blitz_socket *s = op->blitz__sock;
    blitz__mutex_lock(&s->lock);
    uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
    int waiting = st == BLITZ__IO_WAIT || st == BLITZ__IO_INFLIGHT || st == BLITZ__IO_CANCELLING;
    if (waiting && !blitz_waker_will_wake(&op->blitz__waker, &mine)) {
        old = op->blitz__waker;
        op->blitz__waker = blitz_waker_clone(&mine);
    }
    blitz__mutex_unlock(&s->lock);
    blitz_waker_drop(old);
    return waiting ? BLITZ_PENDING : BLITZ_READY;
}

/* ---- the completion path -------------------------------------------------------------- */

/* A completion for `op` (a completion backend's). Dispatching thread. */
BLITZ_PRIVATE void blitz__io_complete(blitz__io *io, blitz_io *op, int32_t res, uint32_t flags) {
    (void)flags;
    /* Acquire: pairs with the submitter's release of INFLIGHT (the kernel
     * orders the CQE after the SQE, but a race detector cannot see it). */
    (void)blitz__op_state(op);
    blitz_socket *s = op->blitz__sock;
    int is_connect = op->blitz__kind == BLITZ__OP_CONNECT;
    /* An accepted descriptor becomes a socket here, not when the task
     * runs: the runtime then closes it with the rest even if the task
     * never runs again. (Before the listener's lock: the socket list's
     * lock comes first.) */
    blitz_socket *accepted = NULL;
#if BLITZ__WIN32
    /* The backend handed the accepted socket on in the op. */
    blitz__sock_t got = (blitz__sock_t)op->blitz__scratch[2];
#else
    blitz__sock_t got = res;
#endif
    if (op->blitz__kind == BLITZ__OP_ACCEPT && res >= 0)
        res = blitz__sock_wrap((blitz__io *)(uintptr_t)op->blitz__scratch[0], got,
                               (int)op->blitz__scratch[1], SOCK_STREAM, &accepted);
    blitz__mutex_lock(&s->lock);
    blitz__op_unlink(s, op);
    int closed = s->closed;
    if (op->blitz__kind == BLITZ__OP_RECV && res >= 0)
        blitz__recv_note(s, res, op->blitz__len);
    blitz__op_lock(op);
    blitz_waker w = op->blitz__waker;
    op->blitz__waker = blitz_waker_noop();
    uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
    void *free_after = op->blitz__free_after; /* after the salvage below */
    op->blitz__free_after = NULL;
    if (st == BLITZ__IO_CANCELLING) {
        /* Nobody waits for the result. Data it received stays the
         * stream's; a send's count is reported by blitz_io_settle. */
        if (blitz__salvage_kind(op->blitz__kind) && blitz__salvage_worth(s, res) && !closed)
            blitz__salvage_keep(s, op, (size_t)res, blitz__op_from_len(op));
        op->blitz__res = res;
        if (op->blitz__kind == BLITZ__OP_CONNECT)
            op->blitz__sock = NULL; /* closed below */
        blitz__op_set_state(op, BLITZ__IO_IDLE);
    } else {
        /* ENOTSOCK: submitted after the close put its placeholder in. */
        if ((res == BLITZ_ECANCELED || (res == BLITZ_ENOTSOCK && s->fd_placeholder)) && closed)
            res = BLITZ_ECLOSED;
        else if (res == BLITZ_ECANCELED && is_connect &&
                 (op->blitz__flags & BLITZ__OPF_LIMIT_KERNEL))
            res = BLITZ_ETIMEDOUT; /* its linked timeout fired */
        op->blitz__res = res;
        op->socket = accepted;
        accepted = NULL;
        blitz__op_set_state(op, BLITZ__IO_DONE);
    }
    blitz__op_unlock(op);
    blitz__mutex_unlock(&s->lock);
    if (free_after)
        blitz__free(free_after);
    if (accepted)
        blitz_sock_close(accepted); /* the op was cancelled */
    /* From here on the op belongs to its task again: no more access. */
    if (is_connect && st == BLITZ__IO_CANCELLING)
        blitz_sock_close(s); /* the op's own reference */
    blitz__sock_unref(s);
    blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELEASE);
    blitz__io_wake(io, w);
}

/* ---- ops ------------------------------------------------------------------------------------ */

/* A buffer of the runtime's own (blitz__malloc) that `op` was using, now
 * given up by its owner: when the kernel still holds the op (a completion
 * backend, in flight or cancelled and not yet completed) the op's completion frees it
 * (1: the caller must not); otherwise the caller frees it (0). Under the
 * op's lock, which the completion holds as it turns the op idle. */
BLITZ_PRIVATE int blitz__io_free_after(blitz_io *op, void *buf) {
    blitz__op_lock(op);
    uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
    int kept = st == BLITZ__IO_INFLIGHT || st == BLITZ__IO_CANCELLING;
    if (kept)
        op->blitz__free_after = buf;
    blitz__op_unlock(op);
    return kept;
}

static blitz_poll blitz__op_go(blitz_cx *cx, blitz_io *op) {
    return op->blitz__sock->io->be->submit(cx, op);
}

/* An op holds a reference on its socket from its start until its task
 * has the result (or cancels it): a close from another thread then never
 * frees the socket, or closes its descriptor, under the task's system
 * call or lock, or under a re-poll of a waiting op. While the op waits
 * the reference is to the memory only (blitz__sockref 2), so a close
 * closes the descriptor even if the op's task never runs again (it was
 * cancelled without a cancel hook); before another system call it is a
 * descriptor reference again (blitz__sockref 1). Connect ops own their
 * socket and take none. */
static void blitz__op_drop_sock(blitz_io *op) {
    uint32_t held = op->blitz__sockref;
    op->blitz__sockref = 0;
    if (held == 1)
        blitz__sock_unref(op->blitz__sock);
    else if (held == 2)
        blitz__sock_unref_mem(op->blitz__sock);
}

/* The task is about to use the descriptor again (a retry after
 * readiness, the system call after a kernel readiness wait, the rest of a
 * send_all): 0 when the socket's descriptor is closed by now. */
static int blitz__op_hold_fd(blitz_io *op) {
    if (op->blitz__sockref != 2)
        return 1;
    if (!blitz__sock_mem_to_fd(op->blitz__sock))
        return 0;
    op->blitz__sockref = 1;
    return 1;
}

/* The op continues with its own system calls (see blitz__op_hold_fd). */
static blitz_poll blitz__op_go_on(blitz_cx *cx, blitz_io *op) {
    if (!blitz__op_hold_fd(op)) {
        blitz__op_result_ex(op, BLITZ_ECLOSED, 0);
        return BLITZ_READY;
    }
    return blitz__op_go(cx, op);
}

static blitz_poll blitz__op_poll_state(blitz_cx *cx, blitz_io *op, blitz_socket *s, uint32_t kind,
                                       const void *buf, size_t len, const blitz_addr *addr,
                                       uint32_t dir);

/* The common poll of every op kind. */
static blitz_poll blitz__op_poll(blitz_cx *cx, blitz_io *op, blitz_socket *s, uint32_t kind,
                                 const void *buf, size_t len, const blitz_addr *addr,
                                 uint32_t dir) {
    if (!op)
        return BLITZ_READY;
    blitz_poll p = blitz__op_poll_state(cx, op, s, kind, buf, len, addr, dir);
    if (p == BLITZ_READY) {
        if (op->blitz__flags & BLITZ__OPF_COUNTED) {
            op->blitz__flags &= ~BLITZ__OPF_COUNTED;
            BLITZ__COUNT(cx->ctx->rt, io_completed, 1);
        }
        blitz__op_drop_sock(op);
    } else if (op->blitz__sockref == 1) {
        op->blitz__sockref = 2;
        blitz__sock_fd_to_mem(op->blitz__sock);
    }
    return blitz__record(cx, p, blitz_io_cancel, op);
}

static blitz_poll blitz__op_poll_state(blitz_cx *cx, blitz_io *op, blitz_socket *s, uint32_t kind,
                                       const void *buf, size_t len, const blitz_addr *addr,
                                       uint32_t dir) {
    switch (blitz__op_state(op)) {
    case BLITZ__IO_IDLE:
        if (!cx || !s || (!buf && len)) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        /* The same code on every backend (the kernel says EINVAL for a
         * Unix listener, and a completion backend's receive waits for a
         * connection first). */
        if (s->listening && (kind == BLITZ__OP_RECV || kind == BLITZ__OP_RECVV ||
                             kind == BLITZ__OP_RECV_FROM || kind == BLITZ__OP_RECV_BUF)) {
            op->result = BLITZ_ENOTCONN;
            return BLITZ_READY;
        }
        op->blitz__sock = s;
        op->blitz__kind = kind;
        op->blitz__buf = (void *)(uintptr_t)buf;
        op->blitz__len = len;
        op->blitz__addr = (blitz_addr *)(uintptr_t)addr;
        op->blitz__dir = dir;
        op->blitz__done = 0;
        op->blitz__got = 0;
        op->blitz__flags = BLITZ__OPF_COUNTED;
        BLITZ__COUNT(cx->ctx->rt, io_submitted, 1);
        op->blitz__free_after = NULL;
        op->socket = NULL;
        op->result = 0;
        if (kind == BLITZ__OP_ACCEPT) {
            op->blitz__scratch[0] = (uint64_t)(uintptr_t)s->io;
            op->blitz__scratch[1] = (uint64_t)s->family;
        }
        blitz__sock_ref(s);
        op->blitz__sockref = 1;
        return blitz__op_go(cx, op);
    case BLITZ__IO_RETRY:
        return blitz__op_go_on(cx, op);
    case BLITZ__IO_DONE:
        /* A descriptor op's completion is readiness (a kernel readiness
         * wait): the system call comes now. On Windows only a lent-buffer
         * receive's is: a descriptor read's or write's is the transfer. */
        if (BLITZ__OP_IS_FD(op->blitz__kind) && op->blitz__kind != BLITZ__OP_FD_POLL &&
            op->blitz__res >= 0 && (!BLITZ__WIN32 || op->blitz__kind == BLITZ__OP_RECV_BUF))
            return blitz__op_go_on(cx, op);
#if BLITZ__HAS_IO
        if (op->blitz__kind == BLITZ__OP_RECV_FROM && op->blitz__addr && op->blitz__res >= 0 &&
            (op->blitz__flags & BLITZ__OPF_URING))
            blitz__addr_set_from(op->blitz__addr,
                                 ((struct msghdr *)(void *)op->blitz__scratch)->msg_namelen,
                                 op->blitz__sock ? op->blitz__sock->family : 0);
#else
        if (op->blitz__kind == BLITZ__OP_RECV_FROM && op->blitz__addr && op->blitz__res >= 0)
            blitz__addr_set_from(op->blitz__addr, blitz__op_from_len(op),
                                 op->blitz__sock ? op->blitz__sock->family : 0);
#endif
        if (blitz__op_result_ex(op, op->blitz__res, 0))
            return BLITZ_READY;
        return blitz__op_go_on(cx, op); /* send_all: the rest */
    case BLITZ__IO_CANCELLING:
        /* A cancelled op's completion is still due: wait for it, then
         * start the new one. */
        if (blitz__op_rewait(cx, op) == BLITZ_PENDING)
            return BLITZ_PENDING;
        return blitz__op_poll(cx, op, s, kind, buf, len, addr, dir);
    default: /* WAIT, INFLIGHT */
        if (blitz__op_rewait(cx, op) == BLITZ_PENDING)
            return BLITZ_PENDING;
        return blitz__op_poll(cx, op, s, kind, buf, len, addr, dir);
    }
}

BLITZ_PRIVATE blitz_poll blitz__io_op_poll(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                           uint32_t kind, const void *buf, size_t len,
                                           uint32_t dir) {
    return blitz__op_poll(cx, op, s, kind, buf, len, NULL, dir);
}

static int blitz__io_cancel_state(blitz_io *op);

static int blitz__io_cancel(blitz_io *op) {
    if (!op)
        return BLITZ_EINVAL;
    if (op->blitz__kind == BLITZ__OP_CONNECT && (op->blitz__flags & BLITZ__OPF_LIMIT_TIMER)) {
        blitz_timer_cancel(NULL, blitz__connect_timer(op));
        blitz__connect_timer(op)->expired = 0;
    }
    int rc = blitz__io_cancel_state(op);
    blitz__op_drop_sock(op);
    return rc;
}

static int blitz__io_cancel_state(blitz_io *op) {
    uint32_t st = blitz__op_state(op);
    if (st == BLITZ__IO_IDLE || st == BLITZ__IO_CANCELLING)
        return BLITZ_OK;
    if (st == BLITZ__IO_RETRY || st == BLITZ__IO_DONE) {
        if (st == BLITZ__IO_DONE && op->blitz__kind == BLITZ__OP_ACCEPT && op->socket) {
            blitz_sock_close(op->socket);
            op->socket = NULL;
        }
        if (st == BLITZ__IO_DONE && blitz__salvage_kind(op->blitz__kind) &&
            blitz__salvage_worth(op->blitz__sock, op->blitz__res)) {
            /* Received and not handed out: it stays the stream's. */
            blitz_socket *s = op->blitz__sock;
            blitz__mutex_lock(&s->lock);
            if (!s->closed)
                blitz__salvage_keep(s, op, (size_t)op->blitz__res, blitz__op_from_len(op));
            blitz__mutex_unlock(&s->lock);
        }
        if (st == BLITZ__IO_RETRY)
            op->blitz__res = 0; /* nothing sent since the last attempt */
        if (st == BLITZ__IO_DONE && op->blitz__kind == BLITZ__OP_CONNECT)
            op->blitz__res = BLITZ_ECANCELED; /* drop below closes the socket */
        if (op->blitz__kind == BLITZ__OP_CONNECT)
            blitz__connect_sock_drop(op);
        op->result = BLITZ_ECANCELED;
        blitz__op_set_state(op, BLITZ__IO_IDLE);
        return BLITZ_OK;
    }
    if (st == BLITZ__IO_INFLIGHT) {
        /* Under the op's lock: while it is INFLIGHT the completion has not
         * been taken, so the socket (and its driver) are still alive. The
         * kernel keeps the buffer until the completion: the op keeps its
         * waker (the task's memory) until then. The backend's kick goes
         * after the unlock: it wakes the thread whose reaping needs the
         * lock. */
        blitz__defer_begin();
        blitz__op_lock(op);
        if (blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_INFLIGHT) {
            op->blitz__res = 0; /* the completion's count replaces it */
            blitz__op_set_state(op, BLITZ__IO_CANCELLING);
            op->blitz__sock->io->be->cancel(op->blitz__sock->io, op);
            blitz__op_unlock(op);
            blitz__defer_end();
            op->result = BLITZ_ECANCELED;
            return BLITZ_OK;
        }
        blitz__op_unlock(op);
        blitz__defer_end();
        /* Completed meanwhile: consume the result as for DONE below. */
        return blitz__io_cancel_state(op);
    }
    blitz_socket *s = op->blitz__sock;
    blitz_waker old = blitz_waker_noop();
    int drop_connect = 0;
    blitz__mutex_lock(&s->lock);
    st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
    if (st == BLITZ__IO_WAIT) {
        blitz__op_unlink(s, op);
        old = op->blitz__waker;
        op->blitz__waker = blitz_waker_noop();
        op->blitz__res = 0;
        blitz__op_set_state(op, BLITZ__IO_IDLE);
        drop_connect = op->blitz__kind == BLITZ__OP_CONNECT;
    }
    blitz__mutex_unlock(&s->lock);
    blitz_waker_drop(old);
    if (drop_connect)
        blitz__connect_sock_drop(op);
    else if (st == BLITZ__IO_RETRY || st == BLITZ__IO_DONE)
        blitz__op_set_state(op, BLITZ__IO_IDLE);
    op->result = BLITZ_ECANCELED;
    return BLITZ_OK;
}

BLITZ_API void blitz_io_cancel(blitz_cx *cx, void *op) {
    (void)cx;
    (void)blitz__io_cancel((blitz_io *)op);
}

static int blitz__op_sends(uint32_t kind) {
    return kind == BLITZ__OP_SEND || kind == BLITZ__OP_SEND_ALL || kind == BLITZ__OP_SENDV ||
           kind == BLITZ__OP_SEND_TO || kind == BLITZ__OP_FD_WRITE ||
           kind == BLITZ__OP_FD_WRITE_ALL;
}

/* A cancelled op that had sent bytes (a send_all part of its data; a send
 * the kernel performed before the cancel reached it): `result` becomes
 * that count. */
static void blitz__op_settled(blitz_io *op) {
    if (op->result == BLITZ_ECANCELED && op->blitz__got) {
        op->result = (int64_t)op->blitz__got; /* a recv_exact's part */
        op->blitz__got = 0;
        return;
    }
    if (op->result != BLITZ_ECANCELED || !blitz__op_sends(op->blitz__kind))
        return;
    uint64_t sent = op->blitz__done;
    /* A descriptor op's completion is readiness, not a count. */
    if (!BLITZ__OP_IS_FD(op->blitz__kind) && op->blitz__res > 0)
        sent += (uint64_t)op->blitz__res;
    if (sent)
        op->result = (int64_t)sent;
}

BLITZ_API blitz_poll blitz_io_settle(blitz_cx *cx, blitz_io *op) {
    if (!op)
        return BLITZ_READY;
    if (blitz__op_state(op) == BLITZ__IO_CANCELLING) {
        if (!cx || blitz__op_rewait(cx, op) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_io_cancel, op);
    }
    blitz__op_settled(op);
    return BLITZ_READY;
}

BLITZ_API int blitz_io_pending(const blitz_io *op) {
    if (!op)
        return 0;
    uint32_t st = blitz__op_state(op);
    return st == BLITZ__IO_WAIT || st == BLITZ__IO_INFLIGHT || st == BLITZ__IO_CANCELLING;
}

/* A stream receive of nothing has nothing to wait for (recv(2) says 0 at
 * once): READY with 0. A datagram one still takes the next datagram. */
static int blitz__recv_nothing(blitz_io *op, const blitz_socket *s, size_t len) {
    if (op && s && len == 0 && s->type == SOCK_STREAM && blitz__op_state(op) == BLITZ__IO_IDLE) {
        op->result = 0;
        return 1;
    }
    return 0;
}

BLITZ_API blitz_poll blitz_sock_recv(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                     size_t len) {
    BLITZ__SOCK_CHECK(s);
    if (blitz__recv_nothing(op, s, len))
        return BLITZ_READY;
    return blitz__op_poll(cx, op, s, BLITZ__OP_RECV, buf, len, NULL, BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_sock_recv_buf(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                         blitz_buf *out) {
    BLITZ__SOCK_CHECK(s);
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE) {
        /* A view still holding a lent buffer would lose it. */
        if (!out || out->blitz__owner) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        out->data = NULL;
        out->len = 0;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_RECV_BUF, out, 0, NULL, BLITZ__DIR_READ);
}
/* Plain receives into the rest of the buffer, so the backends and the
 * salvage of a cancelled receive see nothing new. blitz__got counts what
 * came; every op start clears it, so each receive puts it back. An op
 * that is idle (or still settling a cancel) starts afresh. */
BLITZ_API blitz_poll blitz_sock_recv_exact(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                           size_t len) {
    BLITZ__SOCK_CHECK(s);
    if (!op)
        return BLITZ_READY;
    uint32_t st = blitz__op_state(op);
    size_t got = st == BLITZ__IO_IDLE || st == BLITZ__IO_CANCELLING ? 0 : op->blitz__got;
    while (got < len) {
        blitz_poll p = blitz_sock_recv(cx, op, s, (char *)buf + got, len - got);
        op->blitz__got = got;
        if (p == BLITZ_PENDING)
            return BLITZ_PENDING;
        if (op->result <= 0) {
            if (op->result == 0)
                op->result = (int64_t)got; /* end of stream first */
            op->blitz__got = 0;
            return BLITZ_READY;
        }
        got += (size_t)op->result;
    }
    op->blitz__got = 0;
    op->result = (int64_t)len;
    return BLITZ_READY;
}
BLITZ_API blitz_poll blitz_sock_send(blitz_cx *cx, blitz_io *op, blitz_socket *s, const void *buf,
                                     size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND, buf, len, NULL, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_send_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                         const void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND_ALL, buf, len, NULL, BLITZ__DIR_WRITE);
}
/* Also each entry: a NULL base with a length would fail with EFAULT only
 * once data came. `*lens`: nonzero when an entry has a length. */
static int blitz__iov_ok(const blitz_iovec *iov, int n, size_t *lens) {
    *lens = 0;
    if (!iov || n <= 0 || n > BLITZ__IO_MAX_IOV)
        return 0;
    for (int i = 0; i < n; i++) {
        if (!iov[i].base && iov[i].len)
            return 0;
        *lens |= iov[i].len;
    }
    return 1;
}
BLITZ_API blitz_poll blitz_sock_recvv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt) {
    BLITZ__SOCK_CHECK(s);
    size_t lens = 1;
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__iov_ok(iov, iovcnt, &lens)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if (blitz__recv_nothing(op, s, lens))
        return BLITZ_READY;
    return blitz__op_poll(cx, op, s, BLITZ__OP_RECVV, iov, (size_t)iovcnt, NULL, BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_sock_sendv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt) {
    BLITZ__SOCK_CHECK(s);
    size_t lens;
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__iov_ok(iov, iovcnt, &lens)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_SENDV, iov, (size_t)iovcnt, NULL, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_send_to(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                        const void *buf, size_t len, const blitz_addr *to) {
    BLITZ__SOCK_CHECK(s);
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__addr_valid(to)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND_TO, buf, len, to, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_recv_from(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                          size_t len, blitz_addr *from) {
    BLITZ__SOCK_CHECK(s);
    return blitz__op_poll(cx, op, s, from ? BLITZ__OP_RECV_FROM : BLITZ__OP_RECV, buf, len, from,
                          BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_sock_accept(blitz_cx *cx, blitz_io *op, blitz_socket *listener) {
    BLITZ__SOCK_CHECK(listener);
    return blitz__op_poll(cx, op, listener, BLITZ__OP_ACCEPT, NULL, 0, NULL, BLITZ__DIR_READ);
}

static int blitz__connect_expired(blitz_io *op) {
    return op->blitz__kind == BLITZ__OP_CONNECT && (op->blitz__flags & BLITZ__OPF_LIMIT_TIMER) &&
           blitz__connect_timer(op)->expired;
}

/* A connect whose limit fired: READY with BLITZ_ETIMEDOUT once its
 * withdrawal has settled. */
static blitz_poll blitz__connect_timed_out(blitz_cx *cx, blitz_io *op) {
    if (blitz_io_settle(cx, op) == BLITZ_PENDING)
        return BLITZ_PENDING;
    blitz__connect_timer(op)->expired = 0;
    op->result = BLITZ_ETIMEDOUT;
    return BLITZ_READY;
}

/* A connect timed by the runtime's timer: the timer runs while the op
 * waits; when it fires first the op is withdrawn (its socket closed) and,
 * once the kernel has let go of it (a completion backend), the result is
 * BLITZ_ETIMEDOUT. The timer's `expired` marks that wait. */
static blitz_poll blitz__connect_timed(blitz_cx *cx, blitz_io *op, blitz_poll p) {
    if (!cx || !(op->blitz__flags & BLITZ__OPF_LIMIT_TIMER))
        return p;
    blitz_timer *t = blitz__connect_timer(op);
    if (p == BLITZ_READY) {
        blitz_timer_cancel(NULL, t);
        return BLITZ_READY;
    }
    if (blitz_sleep_until(cx, t, t->deadline) == BLITZ_PENDING)
        return BLITZ_PENDING;
    blitz_io_cancel(NULL, op);
    t->expired = 1;
    return blitz__connect_timed_out(cx, op);
}

/* Connect: the op owns a fresh socket until it is connected. limit_ns > 0:
 * a TCP connect's time limit. */
static blitz_poll blitz__connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr, int family,
                                 int64_t limit_ns) {
    if (!op)
        return BLITZ_READY;
    if (blitz__connect_expired(op))
        return blitz__connect_timed_out(cx, op);
    uint32_t st = blitz__op_state(op);
    if (st == BLITZ__IO_CANCELLING && cx) {
        /* A cancelled connect: its completion is still due and closes the
         * socket; wait for it, then start the new one. */
        if (blitz__op_rewait(cx, op) == BLITZ_PENDING)
            return BLITZ_PENDING;
        st = blitz__op_state(op);
    }
    if (st != BLITZ__IO_IDLE)
        return blitz__connect_timed(cx, op,
                                    blitz__op_poll(cx, op, op->blitz__sock, BLITZ__OP_CONNECT, NULL,
                                                   0, NULL, BLITZ__DIR_WRITE));
    op->socket = NULL;
    if (!cx || !blitz__addr_valid(addr) || (family && addr->u.family != family) ||
        (!family && addr->u.family != AF_INET && addr->u.family != AF_INET6) ||
        (limit_ns > 0 && addr->len > BLITZ__CONNECT_ADDR_MAX)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz_runtime *rt = cx->ctx->rt;
    blitz__io *io = rt->io;
    blitz__sock_t fd;
    int orc = blitz__sock_open(addr->u.family, SOCK_STREAM, &fd);
    if (orc != BLITZ_OK) {
        op->result = orc;
        return BLITZ_READY;
    }
    blitz_socket *s = NULL;
    int rc = blitz__sock_wrap(io, fd, addr->u.family, SOCK_STREAM, &s);
    if (rc != BLITZ_OK) {
        op->result = rc;
        return BLITZ_READY;
    }
    _Static_assert(sizeof(((blitz_io *)0)->blitz__scratch) >= sizeof(blitz_addr),
                   "connect keeps the address in the op");
    op->blitz__flags = 0;
    if (limit_ns > 0) {
        /* The address fits before the limit's timer and timespec. */
        memcpy(op->blitz__scratch, addr, offsetof(blitz_addr, u) + addr->len);
        blitz_timer *t = blitz__connect_timer(op);
        memset(t, 0, sizeof *t);
        t->deadline = blitz_deadline_after(blitz_cx_now(cx), limit_ns);
        /* The kernel times it when the backend can and the runtime's
         * clock runs (the kernel's clock is not a paused one). */
        if (!rt->time->paused && io->be->limit_connect && io->be->limit_connect(io, op, limit_ns)) {
            op->blitz__flags = BLITZ__OPF_LIMIT_KERNEL;
        } else {
            op->blitz__flags = BLITZ__OPF_LIMIT_TIMER;
        }
    } else {
        memcpy(op->blitz__scratch, addr, sizeof *addr);
    }
    op->blitz__sock = s;
    op->blitz__kind = BLITZ__OP_CONNECT;
    op->blitz__free_after = NULL;
    op->blitz__buf = NULL;
    op->blitz__len = 0;
    op->blitz__addr = NULL;
    op->blitz__dir = BLITZ__DIR_WRITE;
    op->blitz__done = 0;
    op->result = 0;
    op->blitz__flags |= BLITZ__OPF_COUNTED;
    BLITZ__COUNT(rt, io_submitted, 1);
    blitz_poll p = blitz__op_go(cx, op);
    if (p == BLITZ_READY) {
        /* Done at once (a Unix connect); later completions are counted by
         * blitz__op_poll. */
        op->blitz__flags &= ~BLITZ__OPF_COUNTED;
        BLITZ__COUNT(rt, io_completed, 1);
    }
    return blitz__connect_timed(cx, op, p);
}

BLITZ_API blitz_poll blitz_tcp_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr) {
    return blitz__record(cx, blitz__connect(cx, op, addr, 0, 0), blitz_io_cancel, op);
}
BLITZ_API blitz_poll blitz_tcp_connect_timeout(blitz_cx *cx, blitz_io *op, const blitz_addr *addr,
                                               int64_t timeout_ns) {
    return blitz__record(cx, blitz__connect(cx, op, addr, 0, timeout_ns), blitz_io_cancel, op);
}
BLITZ_API blitz_poll blitz_unix_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr) {
    return blitz__record(cx, blitz__connect(cx, op, addr, AF_UNIX, 0), blitz_io_cancel, op);
}

/* ---- close ------------------------------------------------------------------------------------
 */

BLITZ_API int blitz_sock_close(blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    if (!s)
        return BLITZ_EINVAL;
    blitz__io *io = s->io;
    blitz__mutex_lock(&s->lock);
    if (s->closed) {
        blitz__mutex_unlock(&s->lock);
        return BLITZ_ECLOSED;
    }
    s->closed = 1;
    /* The backend's cancels kick the ring owners after the unlock: their
     * reaping needs the socket's lock. */
    blitz__defer_begin();
    blitz_io *op = s->ops;
    blitz_io *woken = NULL;
    while (op) {
        blitz_io *next = op->blitz__next;
        if (blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_WAIT) {
            blitz__op_unlink(s, op);
            op->blitz__res = BLITZ_ECLOSED;
            /* Chain through blitz__next (the op is out of every list). */
            op->blitz__next = woken;
            woken = op;
        } else if (blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_INFLIGHT) {
            io->be->cancel(io, op); /* only a completion backend has INFLIGHT ops */
        }
        op = next;
    }
    if (io->be->close)
        io->be->close(io, s);
    if (s->listening)
        blitz__u64_store(&io->listener_closed_ns, blitz__now_ns(), BLITZ__RELAXED);
    blitz_waker batch[32];
    int n = 0;
    while (woken) {
        blitz_io *next = woken->blitz__next;
        woken->blitz__next = NULL;
        if (n == 32) {
            blitz__mutex_unlock(&s->lock);
            for (int i = 0; i < n; i++)
                blitz__io_wake(io, batch[i]);
            n = 0;
            blitz__mutex_lock(&s->lock);
        }
        batch[n++] = woken->blitz__waker;
        woken->blitz__waker = blitz_waker_noop();
        blitz__op_set_state(woken, BLITZ__IO_DONE);
        woken = next;
    }
    blitz__u32_store(&s->want, 0, BLITZ__RELAXED);
    blitz__mutex_unlock(&s->lock);
    blitz__defer_end();
    for (int i = 0; i < n; i++)
        blitz__io_wake(io, batch[i]);
    blitz__sock_unref(s);
    return BLITZ_OK;
}

/* ---- waiting in the backend -------------------------------------------------------------- */

#if BLITZ__HAS_IO
BLITZ_PRIVATE void blitz__io_drain_fd(int fd) {
    uint64_t v;
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
}
#endif

/* Reaps without blocking (start of a tick). */
BLITZ_PRIVATE void blitz__io_poll(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io)
        return;
    io->be->poll(io);
}

/* A current-thread driver stops driving (its run returns). On a
 * completion backend a socket closed in that run keeps its descriptor until its ops' cancels
 * are reaped; the cancels ran when they were submitted, so one look now
 * closes it, rather than at the next drive or the free, which may be much
 * later (a peer waits for the end of the stream meanwhile). */
BLITZ_PRIVATE void blitz__io_after_drive(blitz_runtime *rt) {
    if (rt->io && rt->io->be->after_drive)
        rt->io->be->after_drive(rt->io);
}

/* Before a tick of a thread that runs tasks: a non-blocking look at the
 * backend when one is due. `*polls_since` counts the thread's task polls
 * since it last looked or parked in the backend (the caller adds each
 * tick's and clears it after a park); reset here after a look.
 * A backend whose look is a system call (look_interval) looks only after
 * an interval of polls, enough to keep a busy thread's I/O flowing: one
 * right after a park or after a tick that ran its queue dry mostly finds
 * nothing (the thread parks in the backend next anyway when it has
 * nothing to run). Every tick for the others: a completion ring's look
 * costs no system call and flushes the tick's submissions; poll's picks
 * up the interest the tick
 * registered, which would otherwise interrupt a blocked poller to rebuild
 * its set (measured with 3,000 idle connections: 0.33 ms echo latency
 * instead of 0.64). */
BLITZ_PRIVATE void blitz__io_between_ticks(blitz_runtime *rt, uint64_t *polls_since) {
    blitz__io *io = rt->io;
    if (!io || *polls_since < io->be->look_interval)
        return;
    blitz__io_poll(rt);
    *polls_since = 0;
}

/* Spin rounds before a worker parks. A runtime that serves sockets does
 * not spin by default: its wake-ups come from the kernel, which reaches a
 * worker parked in the backend directly, and spinning only takes CPU time
 * from the peers (measured: 10-13 us of server CPU per echo request with
 * spinning, 6-7 without, on the completion backend). An explicit spin_before_park is
 * kept. */
BLITZ_PRIVATE uint32_t blitz__io_spin_rounds(blitz_runtime *rt) {
    if (!rt->spin_explicit && rt->io && blitz__u32_load(&rt->io->nsocks, BLITZ__RELAXED))
        return 0;
    return rt->spin_before_park;
}

/* Whether the runtime serves sockets. A thread that is not a worker then
 * leaves the global queue to the workers: the tasks there do I/O, which
 * belongs on the workers' rings, and the workers are the CPU budget the
 * program chose. */
BLITZ_PRIVATE int blitz__io_serving(blitz_runtime *rt) {
    return rt->io && blitz__u32_load(&rt->io->nsocks, BLITZ__RELAXED) != 0;
}

/* Completions are waiting, known without a system call (a completion
 * backend's rings): a spinning worker stops spinning and reaps them. */
BLITZ_PRIVATE int blitz__io_ready_cheap(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    return io && io->be->ready_cheap && io->be->ready_cheap(io);
}

/* Every parked worker waits in the backend (its own ring), not only the
 * timer sleeper. */
BLITZ_PRIVATE int blitz__io_parks_workers(blitz_runtime *rt) {
    return rt->io && rt->io->be->parks_workers && rt->io->be->parks_workers(rt->io);
}

/* A worker thread starts (a completion backend arms its own ring's polls). */
BLITZ_PRIVATE void blitz__io_worker_start(blitz_runtime *rt, uint32_t index) {
    blitz__io *io = rt->io;
    if (io && io->be->worker_start)
        io->be->worker_start(io, index);
}

/* The calling thread starts driving a current-thread runtime. */
BLITZ_PRIVATE void blitz__io_driver_start(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (io && io->be->driver_start)
        io->be->driver_start(io);
}

/* Gives pending submissions to the kernel (before a thread sleeps
 * anywhere but in the backend). */
BLITZ_PRIVATE void blitz__io_flush(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (io && io->be->flush)
        io->be->flush(io);
}

#if BLITZ__HAS_IO
/* A thread that is not a worker sleeps until `word` moves from `seq` or
 * timeout_ns: in the file ring when file ops are in flight there (their
 * completions then wake it directly). 0: it did not wait, the caller
 * sleeps its own way. */
BLITZ_PRIVATE int blitz__io_wait_files(blitz_runtime *rt, const blitz__atomic_u32 *word,
                                       uint32_t seq, uint64_t timeout_ns) {
    return rt->io ? blitz__uring_wait_files(rt->io, word, seq, timeout_ns, rt->spin_before_park)
                  : 0;
}

/* File ops are in flight on the file ring: a thread waiting for them
 * should not spin, the kernel's file worker may need its CPU. */
BLITZ_PRIVATE int blitz__io_files_pending(blitz_runtime *rt) {
    return rt->io && blitz__u32_load(&rt->io->shared_files, BLITZ__RELAXED) != 0;
}

/* The calling worker's file ops are in flight: 1 on its own ring, 2 on
 * a readiness backend's file ring (blitz__uring_files_mine). */
BLITZ_PRIVATE int blitz__io_files_mine(blitz_runtime *rt) {
    return rt->io ? blitz__uring_files_mine(rt->io) : 0;
}

/* A block_on thread is about to do something other than wait (run other
 * tasks, return): completions of its file ops signal the workers again. */
BLITZ_PRIVATE void blitz__io_files_unmute(blitz_runtime *rt) {
    if (rt->io)
        blitz__uring_files_unmute(rt->io);
}

/* `word` of blitz__io_wait_files moved: wakes a thread waiting there. */
BLITZ_PRIVATE void blitz__io_poke_files(blitz_runtime *rt) {
    if (rt->io)
        blitz__uring_poke_files(rt->io);
}
#else
/* No file ring on Windows: a block_on thread sleeps its own way. */
BLITZ_PRIVATE int blitz__io_wait_files(blitz_runtime *rt, const blitz__atomic_u32 *word,
                                       uint32_t seq, uint64_t timeout_ns) {
    (void)rt;
    (void)word;
    (void)seq;
    (void)timeout_ns;
    return 0;
}
BLITZ_PRIVATE int blitz__io_files_pending(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
BLITZ_PRIVATE int blitz__io_files_mine(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
BLITZ_PRIVATE void blitz__io_files_unmute(blitz_runtime *rt) {
    (void)rt;
}
BLITZ_PRIVATE void blitz__io_poke_files(blitz_runtime *rt) {
    (void)rt;
}
#endif /* BLITZ__HAS_IO */

/* Parks the calling thread in the backend until an event, an unpark of
 * `p`, or timeout_ns (0: no timeout). `woke(arg)` runs after the wait and
 * before the events are dispatched (a worker leaves the parked set there,
 * so the tasks it wakes go to other workers). */
BLITZ_PRIVATE void blitz__io_park(blitz_runtime *rt, blitz__parker *p, uint64_t timeout_ns,
                                  void (*woke)(void *), void *arg) {
    blitz__io *io = rt->io;
    io->be->park(io, p, timeout_ns ? timeout_ns : BLITZ__IO_FOREVER, woke, arg);
}

/* ---- creation, shutdown ------------------------------------------------------------------- */

/* The backends, in the order tried without a preference. */
static const blitz__io_backend *blitz__io_backend_of(int i) {
#if BLITZ__WIN32
    return i == 0 ? blitz__backend_iocp() : NULL;
#else
    switch (i) {
    case 0:
        return blitz__backend_ring();
    case 1:
        return blitz__backend_edge();
    case 2:
        return blitz__backend_kqueue();
    case 3:
        return blitz__backend_poll();
    default:
        return NULL;
    }
#endif
}

BLITZ_API const char *blitz_backend_name(blitz_backend b) {
    if (b == BLITZ_BACKEND_AUTO)
        return "auto";
    if (b == BLITZ_BACKEND_IOCP)
        return "iocp";
    for (int i = 0; blitz__io_backend_of(i); i++)
        if (blitz__io_backend_of(i)->kind == b)
            return blitz__io_backend_of(i)->name;
    return "none";
}

BLITZ_API blitz_backend blitz_runtime_backend(const blitz_runtime *rt) {
    return rt && rt->io ? rt->io->be->kind : BLITZ_BACKEND_NONE;
}

static int blitz__io_try(blitz__io *io, const blitz__io_backend *be) {
    if (!be)
        return BLITZ_EINVAL;
    io->be = be;
    int rc = be->init(io);
    if (rc != BLITZ_OK)
        io->be = NULL;
    return rc;
}

/* Whether `e` spells `name`, in any case. */
static int blitz__name_is(const char *e, const char *name) {
    for (; *e && *name; e++, name++) {
        char a = *e >= 'A' && *e <= 'Z' ? (char)(*e - 'A' + 'a') : *e;
        if (a != *name)
            return 0;
    }
    return !*e && !*name;
}

/* The backend the BLITZ_BACKEND environment variable names, or NULL. */
static const blitz__io_backend *blitz__backend_from_env(void) {
    const char *e = getenv("BLITZ_BACKEND");
    if (!e || !*e)
        return NULL;
    for (int i = 0; blitz__io_backend_of(i); i++) {
        const blitz__io_backend *be = blitz__io_backend_of(i);
        if (blitz__name_is(e, be->name) || (be->alias && blitz__name_is(e, be->alias)))
            return be;
    }
    return NULL;
}

/* Creates rt->io. `forced`: a backend from the config that must start.
 * Without one: the environment's preference, then the backends in order
 * (the completion one, then the readiness ones). */
BLITZ_PRIVATE int blitz__io_create(blitz_runtime *rt, blitz_backend forced) {
    if (forced > BLITZ_BACKEND_IOCP)
        return BLITZ_EINVAL;
    if (forced == BLITZ_BACKEND_NONE)
        return BLITZ_OK;
#if !BLITZ__WIN32
    if (forced == BLITZ_BACKEND_IOCP)
        return BLITZ_ENOSYS; /* Windows only (iocp.c) */
#endif
    blitz__io *io = (blitz__io *)blitz__calloc(sizeof *io);
    if (!io)
        return BLITZ_ENOMEM;
    io->rt = rt;
    io->wake_fd = io->wake_rd = -1;
    io->epfd = -1;
    io->shared_efd = -1;
    blitz__mutex_init(&io->lock);
    blitz__mutex_init(&io->socks_lock);
    blitz__mutex_init(&io->poll_lock);
    blitz__mutex_init(&io->bpool_lock);
    /* A backend this system does not have: ENOSYS. */
    int rc = BLITZ_ENOSYS;
    if (forced != BLITZ_BACKEND_AUTO) {
        for (int i = 0; blitz__io_backend_of(i); i++)
            if (blitz__io_backend_of(i)->kind == forced)
                rc = blitz__io_try(io, blitz__io_backend_of(i));
    } else {
        const blitz__io_backend *env = blitz__backend_from_env();
        if (env)
            rc = blitz__io_try(io, env);
            /* With two workers or more, sockets go to epoll and files to a
             * ring: the kernel finishes a ring's socket op in task work of the
             * thread that submitted it, so a worker preempted by another
             * process holds every completion of its sockets until it runs
             * again, while with epoll any awake worker takes the events
             * (measured with the anchors' echo client, 2 workers: p99 2.41 ms
             * on the rings against 0.92 ms on epoll). A file op mostly
             * completes at its submission or on the kernel's own threads. */
#if BLITZ__HAS_IO
        if (rc != BLITZ_OK && rt->workers && rt->num_workers > 1) {
            io->files_wanted = 1;
            rc = blitz__io_try(io, blitz__backend_edge());
            io->files_wanted = 0;
        }
#endif
        for (int i = 0; rc != BLITZ_OK && blitz__io_backend_of(i); i++)
            rc = blitz__io_try(io, blitz__io_backend_of(i));
    }
    if (rc != BLITZ_OK) {
        blitz__mutex_destroy(&io->lock);
        blitz__mutex_destroy(&io->socks_lock);
        blitz__mutex_destroy(&io->poll_lock);
        blitz__mutex_destroy(&io->bpool_lock);
        blitz__free(io);
        /* Without a forced choice a runtime still works, without I/O. */
        return forced == BLITZ_BACKEND_AUTO ? BLITZ_OK : rc;
    }
    rt->io = io;
    return BLITZ_OK;
}

/* The descriptor that wakes worker `index` (UINT32_MAX: the current-thread
 * driver) when it is parked in the backend. */
BLITZ_PRIVATE blitz__wake_t blitz__io_wake_fd(const blitz__io *io, uint32_t index) {
#if BLITZ__WIN32
    (void)index;
    return io->port; /* one thread at a time waits on it */
#else
    return io->be->wake_fd ? io->be->wake_fd(io, index) : io->wake_fd;
#endif
}

/* Wakers taken from ops while the sockets' locks are held, dropped after:
 * dropping the last reference to a task runs its drop function, which may
 * close a socket (its lock) or free one (the socket list's lock). */
typedef struct {
    blitz_waker *items;
    size_t len, cap;
    blitz_waker inline_items[64];
} blitz__waker_list;

/* 0 when full and no more memory: the caller stops collecting. */
static int blitz__waker_list_push(blitz__waker_list *l, blitz_waker w) {
    if (l->len == l->cap) {
        size_t cap = l->cap * 2;
        blitz_waker *items = blitz__calloc(cap * sizeof *items);
        if (!items)
            return 0;
        memcpy(items, l->items, l->len * sizeof *items);
        if (l->items != l->inline_items)
            blitz__free(l->items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->len++] = w;
    return 1;
}

/* One pass over the sockets: waiting ops end with BLITZ_ESHUTDOWN (their
 * wakers go to `dropped`), ops in the kernel are cancelled. Returns 0 when
 * `dropped` ran out of memory before the pass ended; a further pass
 * finishes the job (what this one did is not done again). */
static int blitz__io_shutdown_pass(blitz__io *io, blitz__waker_list *dropped) {
    int complete = 1;
    blitz__mutex_lock(&io->socks_lock);
    for (blitz_socket *s = io->all; s && complete; s = s->all_next) {
        blitz__mutex_lock(&s->lock);
        blitz_io *op = s->ops;
        while (op) {
            blitz_io *next = op->blitz__next;
            uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
            if (st == BLITZ__IO_WAIT) {
                if (!blitz__waker_list_push(dropped, op->blitz__waker)) {
                    complete = 0;
                    break;
                }
                blitz__op_unlink(s, op);
                op->blitz__waker = blitz_waker_noop();
                op->blitz__res = BLITZ_ESHUTDOWN;
                blitz__op_set_state(op, BLITZ__IO_DONE);
            } else if (st == BLITZ__IO_INFLIGHT) {
                blitz__op_lock(op);
                blitz__op_set_state(op, BLITZ__IO_CANCELLING);
                blitz__op_unlock(op);
                io->be->cancel(io, op);
            }
            op = next;
        }
        if (complete && io->be->quiesce)
            io->be->quiesce(io, s);
        blitz__mutex_unlock(&s->lock);
    }
    blitz__mutex_unlock(&io->socks_lock);
    return complete;
}

/* Shutdown (no task runs any more): every op is cancelled and its waker
 * dropped; a completion backend's completions are awaited so the kernel holds no buffer
 * when the task blocks are freed. */
BLITZ_PRIVATE void blitz__io_shutdown(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io || blitz__u32_load(&io->shutdown, BLITZ__RELAXED))
        return;
    blitz__u32_store(&io->shutdown, 1, BLITZ__SEQ_CST);
    blitz__waker_list dropped;
    dropped.items = dropped.inline_items;
    dropped.len = 0;
    dropped.cap = sizeof dropped.inline_items / sizeof dropped.inline_items[0];
    int complete;
    do {
        complete = blitz__io_shutdown_pass(io, &dropped);
        for (size_t i = 0; i < dropped.len; i++)
            blitz_waker_drop(dropped.items[i]);
        dropped.len = 0;
    } while (!complete);
    if (dropped.items != dropped.inline_items)
        blitz__free(dropped.items);
    if (io->be->drain)
        io->be->drain(io);
#if BLITZ__HAS_IO
    if (io->files_ring)
        blitz__uring_drain(io);
#endif
}

/* Frees the driver and every socket still open. */
BLITZ_PRIVATE void blitz__io_destroy(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io)
        return;
    blitz__io_shutdown(rt);
    blitz__io_free_deferred(io);
    blitz_socket *s = io->all;
    while (s) {
        blitz_socket *next = s->all_next;
        if (!s->fd_closed)
            blitz__sock_close_fd(s->fd, s->family);
        blitz__sock_free_mem(s);
        s = next;
    }
    io->all = NULL;
    io->be->destroy(io);
    blitz__recv_buf_pool_free(io);
    blitz__mutex_destroy(&io->bpool_lock);
    blitz__mutex_destroy(&io->lock);
    blitz__mutex_destroy(&io->socks_lock);
    blitz__mutex_destroy(&io->poll_lock);
    blitz__free(io);
    rt->io = NULL;
}

#endif /* BLITZ__HAS_SOCKETS */
