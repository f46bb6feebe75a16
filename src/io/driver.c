/* The I/O driver: one completion-style interface over the backends (seed
 * 002 "I/O Driver"; DESIGN.md "I/O").
 *
 * An op is submitted by the task that polls it, waits, and completes with
 * a result stored in the op:
 *   io_uring   the kernel performs the operation (submit an SQE; the CQE
 *              carries the result); sends try the system call first, since
 *              a send into a socket with room completes at once;
 *   epoll/poll the task performs the system call; on EAGAIN the op joins
 *              the socket's waiter list and an event of its direction
 *              wakes it to try again. Each event bumps the direction's
 *              sequence number under the socket's lock, and a waiter
 *              registers only if the number did not move since its
 *              attempt, so no event between the attempt and the
 *              registration is lost (the edge-triggered contract).
 *
 * Waiting and dispatching: any thread holding `io->lock` (a try-lock at the
 * start of each worker tick, so it never blocks a busy worker) reaps
 * without blocking; the one parked worker that is the runtime's "sleeper"
 * blocks in the backend with the next timer's deadline as timeout (the
 * current-thread driver always does), so an idle runtime sees I/O at once.
 * Its parker is then PARKED_DRIVER, and an unpark writes the driver's
 * eventfd, which is part of every backend wait.
 *
 * Buffer lifetime: an op the kernel holds (io_uring) keeps a reference on
 * its task through its waker, so the task's block, where the buffer lives,
 * is not freed before the completion arrives, even when the task was
 * cancelled (its cancel hook submits ASYNC_CANCEL) or finished. */
#include "io.h"

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
    char *q = (char *)blitz__calloc(elem * ncap);
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

/* ---- the socket list and lifetimes ------------------------------------------- */

BLITZ_PRIVATE void blitz__op_link(blitz_socket *s, blitz_io *op) {
    op->blitz__prev = NULL;
    op->blitz__next = s->ops;
    if (s->ops)
        s->ops->blitz__prev = op;
    s->ops = op;
}

BLITZ_PRIVATE void blitz__op_unlink(blitz_socket *s, blitz_io *op) {
    if (op->blitz__prev)
        op->blitz__prev->blitz__next = op->blitz__next;
    else if (s->ops == op)
        s->ops = op->blitz__next;
    if (op->blitz__next)
        op->blitz__next->blitz__prev = op->blitz__prev;
    op->blitz__next = op->blitz__prev = NULL;
}

static void blitz__sock_free_mem(blitz_socket *s) {
    for (uint32_t i = 0; i < s->ms_count; i++)
        close(s->ms_fds[(s->ms_head + i) % s->ms_cap]);
    blitz__free(s->ms_fds);
    blitz__recv_ms_release(s);
    blitz__salvage_release(s);
    blitz__mutex_destroy(&s->lock);
    blitz__free(s);
}

/* Frees readiness sockets closed before this dispatch cycle. Caller holds
 * io->lock, so no event fetched earlier still names them. */
static void blitz__io_free_deferred(blitz__io *io) {
    if (!blitz__u32_load(&io->has_free, BLITZ__RELAXED))
        return;
    blitz__mutex_lock(&io->socks_lock);
    blitz_socket *s = io->free_list;
    io->free_list = NULL;
    blitz__u32_store(&io->has_free, 0, BLITZ__RELAXED);
    blitz__mutex_unlock(&io->socks_lock);
    while (s) {
        blitz_socket *next = s->free_next;
        if (io->kind == BLITZ_BACKEND_POLL)
            blitz__pollb_forget(io, s);
        blitz__sock_free_mem(s);
        s = next;
    }
}

/* A receive of `len` bytes got `r`: whether it filled its buffer (the next
 * one finds data waiting) and whether it took a pool buffer's worth (a
 * bulk reader: no multishot receive). */
static void blitz__recv_note(blitz_socket *s, int64_t r, size_t len) {
    blitz__u32_store(&s->rd_hot, r > 0 && (size_t)r == len, BLITZ__RELAXED);
    blitz__u32_store(&s->rd_bulk, r >= (int64_t)BLITZ_URING_RECV_BUF_SIZE, BLITZ__RELAXED);
}

#define BLITZ__SOCK_FD_REF     ((uint64_t)1)
#define BLITZ__SOCK_MEM_REF    ((uint64_t)1 << 32)
#define BLITZ__SOCK_FD_REFS(v) ((uint32_t)(v))

BLITZ_PRIVATE void blitz__sock_ref(blitz_socket *s) {
    blitz__u64_fetch_add(&s->refs, BLITZ__SOCK_FD_REF, BLITZ__RELAXED);
}

/* The socket's memory: off the driver's list, then freed now (io_uring)
 * or at the next dispatch cycle (readiness backends: an event fetched
 * before the close may still name it). */
static void blitz__sock_release_mem(blitz_socket *s) {
    blitz__io *io = s->io;
    blitz__mutex_lock(&io->socks_lock);
    if (s->all_prev)
        s->all_prev->all_next = s->all_next;
    else
        io->all = s->all_next;
    if (s->all_next)
        s->all_next->all_prev = s->all_prev;
    if (io->kind == BLITZ_BACKEND_IO_URING) {
        blitz__mutex_unlock(&io->socks_lock);
        blitz__sock_free_mem(s);
        return;
    }
    s->free_next = io->free_list;
    io->free_list = s;
    blitz__u32_store(&io->has_free, 1, BLITZ__RELAXED);
    blitz__mutex_unlock(&io->socks_lock);
}

/* Drops a memory-only reference. Acquire-release: the last one orders
 * every holder's use of the socket before the free. */
static void blitz__sock_unref_mem(blitz_socket *s) {
    if (blitz__u64_fetch_sub(&s->refs, BLITZ__SOCK_MEM_REF, BLITZ__ACQ_REL) == BLITZ__SOCK_MEM_REF)
        blitz__sock_release_mem(s);
}

/* Drops a descriptor reference. The last one closes the descriptor; it
 * turns into a memory reference in the same step, so a memory holder
 * letting go meanwhile cannot free the socket under the close. */
BLITZ_PRIVATE void blitz__sock_unref(blitz_socket *s) {
    uint64_t cur = blitz__u64_load(&s->refs, BLITZ__RELAXED);
    for (;;) {
        uint64_t next = cur - BLITZ__SOCK_FD_REF;
        if (BLITZ__SOCK_FD_REFS(cur) == 1)
            next += BLITZ__SOCK_MEM_REF;
        /* Acquire-release: as for any last reference. */
        if (blitz__u64_cas_weak(&s->refs, &cur, next, BLITZ__ACQ_REL))
            break;
    }
    if (BLITZ__SOCK_FD_REFS(cur) != 1)
        return;
    blitz__io *io = s->io;
    if (io->kind == BLITZ_BACKEND_EPOLL)
        blitz__epoll_del(io, s);
    if (io->kind == BLITZ_BACKEND_POLL)
        blitz__pollb_forget(io, s);
    /* The number may be reused at once; an event already fetched for it
     * only bumps this (closed) socket's sequence numbers. */
    close(s->fd);
    s->fd_closed = 1;
    blitz__u32_fetch_sub(&io->nsocks, 1, BLITZ__RELAXED);
    blitz__sock_unref_mem(s);
}

/* A task's descriptor reference becomes a memory reference: its op now
 * waits, and the descriptor may close under it (a close of the socket
 * completes the op without the descriptor). */
static void blitz__sock_fd_to_mem(blitz_socket *s) {
    uint64_t cur = blitz__u64_load(&s->refs, BLITZ__RELAXED);
    if (BLITZ__SOCK_FD_REFS(cur) > 1) {
        /* Not the last descriptor reference: one step. Relaxed: the
         * memory reference keeps the socket, nothing is published. */
        if (blitz__u64_cas_weak(&s->refs, &cur, cur - BLITZ__SOCK_FD_REF + BLITZ__SOCK_MEM_REF,
                                BLITZ__RELAXED))
            return;
    }
    blitz__u64_fetch_add(&s->refs, BLITZ__SOCK_MEM_REF, BLITZ__RELAXED);
    blitz__sock_unref(s);
}

/* A memory reference becomes a descriptor reference again, unless the
 * descriptor is closed (or closing): returns 0 then and keeps the memory
 * reference. Acquire: the holder's use of the descriptor comes after. */
static int blitz__sock_mem_to_fd(blitz_socket *s) {
    uint64_t cur = blitz__u64_load(&s->refs, BLITZ__RELAXED);
    do {
        if (!BLITZ__SOCK_FD_REFS(cur))
            return 0;
    } while (!blitz__u64_cas_weak(&s->refs, &cur, cur + BLITZ__SOCK_FD_REF - BLITZ__SOCK_MEM_REF,
                                  BLITZ__ACQUIRE));
    return 1;
}

/* Wraps a non-blocking descriptor (left open on failure). */
BLITZ_PRIVATE int blitz__sock_wrap_keep(blitz__io *io, int fd, int family, int type,
                                        blitz_socket **out) {
    *out = NULL;
    if (!io)
        return BLITZ_ENOSYS;
    blitz_socket *s = (blitz_socket *)blitz__calloc(sizeof *s);
    if (!s)
        return BLITZ_ENOMEM;
    s->fd = fd;
    s->family = family;
    s->type = type;
    s->io = io;
    s->poll_slot = -1;
    blitz__mutex_init(&s->lock);
    blitz__u64_store(&s->refs, BLITZ__SOCK_FD_REF, BLITZ__RELAXED);
    if (io->kind == BLITZ_BACKEND_EPOLL) {
        int rc = blitz__epoll_add(io, s);
        if (rc != BLITZ_OK) {
            blitz__sock_free_mem(s);
            return rc;
        }
    }
    /* The workers reap this socket's I/O even when only another runtime's
     * tasks or plain threads use it: they start with the first socket as
     * with the first spawn (after a shutdown they do not, and the socket
     * only closes). */
    if (io->rt->flavor != BLITZ_CURRENT_THREAD)
        (void)blitz__workers_start(io->rt);
    blitz__u32_fetch_add(&io->nsocks, 1, BLITZ__RELAXED);
    blitz__mutex_lock(&io->socks_lock);
    s->all_next = io->all;
    if (io->all)
        io->all->all_prev = s;
    io->all = s;
    blitz__mutex_unlock(&io->socks_lock);
    *out = s;
    return BLITZ_OK;
}

/* Wraps a non-blocking descriptor (closed on failure). */
BLITZ_PRIVATE int blitz__sock_wrap(blitz__io *io, int fd, int family, int type,
                                   blitz_socket **out) {
    int rc = blitz__sock_wrap_keep(io, fd, family, type, out);
    if (rc != BLITZ_OK)
        close(fd);
    return rc;
}

/* ---- system calls of the readiness path --------------------------------------- */

static int64_t blitz__neg_errno(void) {
    return errno ? -(int64_t)errno : BLITZ_EIO;
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

/* The sender's address length an io_uring RECV_FROM got (its msghdr is in
 * the op). */
static uint32_t blitz__op_from_len(const blitz_io *op) {
    if (op->blitz__kind != BLITZ__OP_RECV_FROM || !(op->blitz__flags & BLITZ__OPF_URING))
        return 0;
    return (uint32_t)((const struct msghdr *)(const void *)op->blitz__scratch)->msg_namelen;
}

/* One non-blocking attempt: bytes, a new descriptor (accept), 0 (connect),
 * or -errno. */
static int64_t blitz__op_syscall(blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    ssize_t r;
    errno = 0;
    switch (op->blitz__kind) {
    case BLITZ__OP_RECV:
        r = recv(s->fd, op->blitz__buf, op->blitz__len, 0);
        break;
    case BLITZ__OP_SEND:
    case BLITZ__OP_SEND_ALL:
        r = send(s->fd, (char *)op->blitz__buf + op->blitz__done, op->blitz__len - op->blitz__done,
                 MSG_NOSIGNAL | MSG_DONTWAIT);
        break;
    case BLITZ__OP_RECVV:
    case BLITZ__OP_RECV_FROM: {
        struct msghdr m;
        struct iovec one;
        blitz__op_msghdr(op, &m, &one);
        r = recvmsg(s->fd, &m, MSG_DONTWAIT);
        if (r >= 0 && op->blitz__addr)
            blitz__addr_set_from(op->blitz__addr, m.msg_namelen, s->family);
        break;
    }
    case BLITZ__OP_SENDV:
    case BLITZ__OP_SEND_TO: {
        struct msghdr m;
        struct iovec one;
        blitz__op_msghdr(op, &m, &one);
        r = sendmsg(s->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        break;
    }
    case BLITZ__OP_ACCEPT:
        r = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        break;
    case BLITZ__OP_CONNECT: {
        const blitz_addr *a = (const blitz_addr *)(void *)op->blitz__scratch;
        if (!(op->blitz__flags & BLITZ__OPF_CONNECTING)) {
            r = connect(s->fd, (const struct sockaddr *)(const void *)a->u.bytes, a->len);
            if (r < 0 && errno == EINPROGRESS) {
                op->blitz__flags |= BLITZ__OPF_CONNECTING;
                return -EAGAIN;
            }
            break;
        }
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
            return blitz__neg_errno();
        if (err)
            return -(int64_t)err;
        struct sockaddr_storage peer;
        socklen_t pl = sizeof peer;
        if (getpeername(s->fd, (struct sockaddr *)&peer, &pl) < 0)
            return errno == ENOTCONN ? -EAGAIN : blitz__neg_errno();
        return 0;
    }
    default:
        if (BLITZ__OP_IS_FD(op->blitz__kind))
            return blitz__fd_syscall(op);
        return BLITZ_EINVAL;
    }
    if (r < 0) {
        if (errno == EWOULDBLOCK)
            return -EAGAIN;
        return blitz__neg_errno();
    }
    return (int64_t)r;
}

static blitz_timer *blitz__connect_timer(blitz_io *op) {
    _Static_assert(BLITZ__CONNECT_TS_AT + sizeof(struct __kernel_timespec) <=
                       sizeof(((blitz_io *)0)->blitz__scratch),
                   "a limited connect keeps its address, timer and timespec in the op");
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
        if (r >= 0 && !op->socket) {
            /* The listener's driver and family were noted at the start. */
            blitz_socket *ns = NULL;
            int rc = blitz__sock_wrap((blitz__io *)(uintptr_t)op->blitz__scratch[0], (int)r,
                                      (int)op->blitz__scratch[1], SOCK_STREAM, &ns);
            op->socket = ns;
            r = rc;
        }
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

/* ---- the readiness path ------------------------------------------------------------- */

static blitz_poll blitz__ready_attempt(blitz_cx *cx, blitz_io *op) {
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
                      (op->blitz__kind == BLITZ__OP_RECV || op->blitz__kind == BLITZ__OP_RECVV);
    for (;;) {
        uint32_t seq0 = blitz__u32_load(seqp, BLITZ__ACQUIRE);
        int64_t r = -EAGAIN;
        if (!stream_recv || blitz__u32_load(&s->rd_drained, BLITZ__RELAXED) != seq0 + 1u ||
            blitz__u32_load(&s->rd_final, BLITZ__RELAXED))
            r = blitz__op_syscall(op);
        if (r == -EINTR)
            continue;
        if (stream_recv && r > 0 && op->blitz__kind == BLITZ__OP_RECV && (size_t)r < op->blitz__len)
            blitz__u32_store(&s->rd_drained, seq0 + 1u, BLITZ__RELAXED);
        if (r != -EAGAIN) {
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
        blitz_waker mine = blitz_cx_waker(cx);
        op->blitz__waker = blitz_waker_clone(&mine);
        blitz__op_set_state(op, BLITZ__IO_WAIT);
        blitz__op_link(s, op);
        if (s->io->kind == BLITZ_BACKEND_POLL) {
            uint32_t bit = 1u << op->blitz__dir;
            if (!(blitz__u32_load(&s->want, BLITZ__RELAXED) & bit)) {
                blitz__u32_fetch_or(&s->want, bit, BLITZ__SEQ_CST);
                blitz__pollb_want(s->io, s);
            }
        }
        blitz__mutex_unlock(&s->lock);
        return BLITZ_PENDING;
    }
}

/* Polled again while registered: keep (or refresh) the waker. */
/* The op's own lock (a spin bit) guards the waker and state of an
 * io_uring op between submission and completion, so the task, a cancel
 * and the completing thread never need the socket, which may be closed
 * and freed as soon as the completion is delivered. Order: socket lock,
 * then op lock, then sq_lock. */
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

/* An event on `s`: bump the sequence numbers, wake the waiters of those
 * directions (ops in WAIT; on io_uring the list also holds ops the kernel
 * owns, which are left alone). Any thread. */
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
        if (s->io->kind == BLITZ_BACKEND_POLL)
            blitz__u32_store(&s->want, want, BLITZ__RELAXED);
        blitz__mutex_unlock(&s->lock);
        for (int i = 0; i < n; i++)
            blitz__io_wake(s->io, batch[i]);
        if (!more)
            return;
    }
}

/* ---- the io_uring path ------------------------------------------------------------------ */

/* Accept through the listener's multishot accept: take a connection the
 * kernel already accepted, or wait for the next one (arming it first). */
static blitz_poll blitz__uring_accept_ms(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__io *io = s->io;
    blitz__mutex_lock(&s->lock);
    int64_t r = 1;
    if (s->closed) {
        r = BLITZ_ECLOSED;
    } else if (s->ms_count) {
        r = s->ms_fds[s->ms_head];
        s->ms_head = (s->ms_head + 1) % s->ms_cap;
        s->ms_count--;
    } else if (s->ms_err) {
        r = s->ms_err;
        s->ms_err = 0;
    }
    if (r != 1) {
        blitz__mutex_unlock(&s->lock);
        blitz__op_result(op, r);
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    op->blitz__waker = blitz_waker_clone(&mine);
    blitz__op_set_state(op, BLITZ__IO_WAIT);
    blitz__op_link(s, op);
    if (!s->ms_armed) {
        blitz__u32_store(&s->rms_published, 1, BLITZ__RELEASE);
        if (blitz__uring_arm_accept(io, blitz__uring_mine(io, NULL), s) == BLITZ_OK) {
            s->ms_armed = 1;
            blitz__sock_ref(s);
            blitz__u64_fetch_add(&io->inflight, 1, BLITZ__RELAXED);
        } else {
            blitz__op_unlink(s, op);
            blitz_waker w = op->blitz__waker;
            op->blitz__waker = blitz_waker_noop();
            blitz__mutex_unlock(&s->lock);
            blitz_waker_drop(w);
            blitz__op_result(op, BLITZ_EBUSY);
            return BLITZ_READY;
        }
    }
    blitz__mutex_unlock(&s->lock);
    return BLITZ_PENDING;
}

/* Connections a listener's multishot accept may hold for tasks that have
 * not asked yet. Past it the multishot accept is cancelled and the rest
 * wait in the kernel's backlog, as with a plain accept: a program that
 * stops accepting (a concurrency limit, a graceful stop) must not have
 * the kernel take descriptors for it without bound. The next accept that
 * finds the queue empty arms it again. */
#define BLITZ__ACCEPT_QUEUE_MAX 64u

/* A CQE of a listener's multishot accept. Dispatching thread. */
BLITZ_PRIVATE void blitz__io_accept_ms(blitz__io *io, blitz__ring *r, blitz_socket *s, int32_t res,
                                       uint32_t flags) {
    blitz_waker w = blitz_waker_noop();
    int ended = !(flags & IORING_CQE_F_MORE);
    (void)blitz__u32_load(&s->rms_published, BLITZ__ACQUIRE);
    blitz__mutex_lock(&s->lock);
    if (ended)
        s->ms_armed = s->ms_cancelling = 0;
    blitz_io *waiter = NULL;
    for (blitz_io *op = s->ops; op; op = op->blitz__next)
        if (op->blitz__kind == BLITZ__OP_ACCEPT &&
            blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_WAIT) {
            waiter = op;
            break;
        }
    if (res == -ECANCELED && !s->closed && !blitz__u32_load(&io->shutdown, BLITZ__RELAXED))
        res = -EAGAIN; /* not ours: re-armed by the next accept */
    if (res >= 0) {
        /* Queued even with a task waiting, which is woken to take it: a
         * descriptor stays the listener's (closed with it, or with the
         * runtime) until a task holds it as a socket, so a waiting task
         * that never runs again cannot leak it. */
        if (s->closed) {
            close(res);
        } else {
            void *fds = s->ms_fds;
            if (s->ms_count == s->ms_cap)
                blitz__fifo_grow(&fds, &s->ms_head, s->ms_count, &s->ms_cap, sizeof(int), 16);
            s->ms_fds = (int *)fds;
            if (s->ms_count < s->ms_cap) {
                s->ms_fds[(s->ms_head + s->ms_count) % s->ms_cap] = res;
                s->ms_count++;
                if (waiter) {
                    blitz__op_unlink(s, waiter);
                    w = waiter->blitz__waker;
                    waiter->blitz__waker = blitz_waker_noop();
                    blitz__op_set_state(waiter, BLITZ__IO_RETRY);
                }
            } else {
                close(res);
            }
            if (s->ms_count >= BLITZ__ACCEPT_QUEUE_MAX && !ended && !s->ms_cancelling) {
                s->ms_cancelling = 1;
                blitz__uring_cancel_ud(io, r, (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS);
            }
        }
    } else if (waiter && res != -EAGAIN) {
        blitz__op_unlink(s, waiter);
        w = waiter->blitz__waker;
        waiter->blitz__waker = blitz_waker_noop();
        waiter->blitz__res = (res == -ECANCELED && s->closed) ? BLITZ_ECLOSED : res;
        blitz__op_set_state(waiter, BLITZ__IO_DONE);
    } else if (res != -EAGAIN && res != -ECANCELED) {
        s->ms_err = res;
    }
    /* Ended with someone still waiting (an error ended it, or the kernel
     * stopped it): arm again, unless closing. */
    int rearm = 0;
    if (ended && !s->closed && !blitz__u32_load(&io->shutdown, BLITZ__RELAXED)) {
        for (blitz_io *op = s->ops; op; op = op->blitz__next)
            if (op->blitz__kind == BLITZ__OP_ACCEPT)
                rearm = 1;
        if (rearm)
            blitz__u32_store(&s->rms_published, 1, BLITZ__RELEASE);
        if (rearm && blitz__uring_arm_accept(io, r, s) == BLITZ_OK)
            s->ms_armed = 1;
        else
            rearm = 0;
    }
    blitz__mutex_unlock(&s->lock);
    if (ended && !rearm) {
        blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELEASE);
        blitz__sock_unref(s);
    }
    blitz__io_wake(io, w);
}

static blitz_poll blitz__uring_start(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__io *io = s->io;
    uint32_t k = op->blitz__kind;
    int64_t kept;
    if ((blitz__salvage_kind(k) || k == BLITZ__OP_FD_READ) && blitz__salvage_take(s, op, &kept)) {
        blitz__op_result(op, kept);
        return BLITZ_READY;
    }
    if (k == BLITZ__OP_ACCEPT && io->ms_accept)
        return blitz__uring_accept_ms(cx, op);
    if (blitz__recv_ms_wants(s, k, op->blitz__dir)) {
        int single_shot = 0;
        blitz_poll p = blitz__recv_ms_start(cx, op, &single_shot);
        if (!single_shot)
            return p;
    }
    /* A send into a socket with room completes at once: one system call,
     * no completion to wait for. */
    /* A receive right after one that filled its buffer (a bulk stream)
     * finds data waiting: the system call beats a submission round trip. */
    int hot = (k == BLITZ__OP_RECV || k == BLITZ__OP_RECVV || k == BLITZ__OP_RECV_FROM) &&
              blitz__u32_load(&s->rd_hot, BLITZ__RELAXED);
    if (hot || k == BLITZ__OP_SEND || k == BLITZ__OP_SEND_ALL || k == BLITZ__OP_SENDV ||
        k == BLITZ__OP_SEND_TO || BLITZ__OP_IS_FD(k)) {
        for (;;) {
            int64_t r = blitz__op_syscall(op);
            if (r == -EINTR)
                continue;
            if (r == -EAGAIN) {
                if (hot)
                    blitz__u32_store(&s->rd_hot, 0, BLITZ__RELAXED);
                break;
            }
            if (blitz__op_result(op, r))
                return BLITZ_READY;
        }
    }
    blitz__mutex_lock(&s->lock);
    if (s->closed) {
        blitz__mutex_unlock(&s->lock);
        blitz__op_result(op, BLITZ_ECLOSED);
        return BLITZ_READY;
    }
    int batches = 0;
    blitz__ring *ring = blitz__uring_mine(io, &batches);
    blitz_waker mine = blitz_cx_waker(cx);
    op->blitz__waker = blitz_waker_clone(&mine);
    /* The ring goes with the op: its cancel must reach the same ring. */
    op->blitz__flags = (op->blitz__flags & ((1u << BLITZ__OPF_RING_SHIFT) - 1u)) |
                       BLITZ__OPF_URING | ((ring->index + 1u) << BLITZ__OPF_RING_SHIFT);
    blitz__op_set_state(op, BLITZ__IO_INFLIGHT);
    blitz__op_link(s, op);
    blitz__sock_ref(s);
    blitz__u64_fetch_add(&io->inflight, 1, BLITZ__RELAXED);
    /* Under the socket's lock, so a close's ASYNC_CANCEL comes after it. */
    int rc = blitz__uring_submit_op(io, ring, op, !batches);
    if (rc != BLITZ_OK) {
        blitz__op_unlink(s, op);
        blitz_waker w = op->blitz__waker;
        op->blitz__waker = blitz_waker_noop();
        blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELAXED);
        blitz__mutex_unlock(&s->lock);
        blitz_waker_drop(w);
        blitz__sock_unref(s);
        blitz__op_result(op, rc);
        return BLITZ_READY;
    }
    blitz__mutex_unlock(&s->lock);
    return BLITZ_PENDING;
}

/* A completion (io_uring CQE) for `op`. Dispatching thread. */
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
    if (op->blitz__kind == BLITZ__OP_ACCEPT && res >= 0)
        res = blitz__sock_wrap((blitz__io *)(uintptr_t)op->blitz__scratch[0], res,
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
        if ((res == -ECANCELED || (res == -ENOTSOCK && s->fd_placeholder)) && closed)
            res = BLITZ_ECLOSED;
        else if (res == -ECANCELED && is_connect && (op->blitz__flags & BLITZ__OPF_LIMIT_KERNEL))
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
 * given up by its owner: when the kernel still holds the op (io_uring, in
 * flight or cancelled and not yet completed) the op's completion frees it
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
    if (op->blitz__sock->io->kind == BLITZ_BACKEND_IO_URING)
        return blitz__uring_start(cx, op);
    return blitz__ready_attempt(cx, op);
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
 * readiness, the system call after an io_uring poll, the rest of a
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
        blitz__op_drop_sock(op);
    } else if (op->blitz__sockref == 1) {
        op->blitz__sockref = 2;
        blitz__sock_fd_to_mem(op->blitz__sock);
    }
    return p;
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
         * Unix listener, and io_uring waits for a connection first). */
        if (s->listening &&
            (kind == BLITZ__OP_RECV || kind == BLITZ__OP_RECVV || kind == BLITZ__OP_RECV_FROM)) {
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
        op->blitz__flags = 0;
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
        /* A descriptor op's io_uring completion is readiness (POLL_ADD):
         * the system call comes now. */
        if (BLITZ__OP_IS_FD(op->blitz__kind) && op->blitz__kind != BLITZ__OP_FD_POLL &&
            op->blitz__res >= 0)
            return blitz__op_go_on(cx, op);
        if (op->blitz__kind == BLITZ__OP_RECV_FROM && op->blitz__addr && op->blitz__res >= 0 &&
            (op->blitz__flags & BLITZ__OPF_URING))
            blitz__addr_set_from(op->blitz__addr,
                                 ((struct msghdr *)(void *)op->blitz__scratch)->msg_namelen,
                                 op->blitz__sock ? op->blitz__sock->family : 0);
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
         * waker (the task's memory) until then. */
        blitz__op_lock(op);
        if (blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_INFLIGHT) {
            op->blitz__res = 0; /* the completion's count replaces it */
            blitz__op_set_state(op, BLITZ__IO_CANCELLING);
            blitz__uring_submit_cancel(op->blitz__sock->io, op);
            blitz__op_unlock(op);
            op->result = BLITZ_ECANCELED;
            return BLITZ_OK;
        }
        blitz__op_unlock(op);
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

/* A cancelled op that had sent bytes (a send_all part of its data; an
 * io_uring send the kernel performed before the cancel reached it):
 * `result` becomes that count. */
static void blitz__op_settled(blitz_io *op) {
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
            return BLITZ_PENDING;
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
    if (blitz__recv_nothing(op, s, len))
        return BLITZ_READY;
    return blitz__op_poll(cx, op, s, BLITZ__OP_RECV, buf, len, NULL, BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_sock_send(blitz_cx *cx, blitz_io *op, blitz_socket *s, const void *buf,
                                     size_t len) {
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND, buf, len, NULL, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_send_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                         const void *buf, size_t len) {
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
    size_t lens;
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__iov_ok(iov, iovcnt, &lens)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_SENDV, iov, (size_t)iovcnt, NULL, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_send_to(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                        const void *buf, size_t len, const blitz_addr *to) {
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__addr_valid(to)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND_TO, buf, len, to, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_recv_from(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                          size_t len, blitz_addr *from) {
    return blitz__op_poll(cx, op, s, from ? BLITZ__OP_RECV_FROM : BLITZ__OP_RECV, buf, len, from,
                          BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_sock_accept(blitz_cx *cx, blitz_io *op, blitz_socket *listener) {
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
 * once the kernel has let go of a withdrawn io_uring op, the result is
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
    int fd = socket(addr->u.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        op->result = blitz__neg_errno();
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
        /* The kernel times it with a LINK_TIMEOUT behind the CONNECT, when
         * the kernel has it, the runtime's clock runs (the kernel's clock
         * is not a paused one) and this thread parks in the ring it
         * submits to (a worker, the current-thread driver): a linked pair
         * must reach the kernel in one piece, and only the ring's parker
         * submits outside the ring's lock. */
        int parker = 0;
        if (io->kind == BLITZ_BACKEND_IO_URING)
            (void)blitz__uring_mine(io, &parker);
        if (parker && io->link_timeout && !rt->time->paused) {
            struct __kernel_timespec *ts =
                (struct __kernel_timespec *)(void *)((char *)op->blitz__scratch +
                                                     BLITZ__CONNECT_TS_AT);
            ts->tv_sec = (long long)(limit_ns / 1000000000);
            ts->tv_nsec = (long long)(limit_ns % 1000000000);
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
    return blitz__connect_timed(cx, op, blitz__op_go(cx, op));
}

BLITZ_API blitz_poll blitz_tcp_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr) {
    return blitz__connect(cx, op, addr, 0, 0);
}
BLITZ_API blitz_poll blitz_tcp_connect_timeout(blitz_cx *cx, blitz_io *op, const blitz_addr *addr,
                                               int64_t timeout_ns) {
    return blitz__connect(cx, op, addr, 0, timeout_ns);
}
BLITZ_API blitz_poll blitz_unix_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr) {
    return blitz__connect(cx, op, addr, AF_UNIX, 0);
}

/* ---- close ------------------------------------------------------------------------------------
 */

/* io_uring: a listener's accept in the kernel holds the socket until its
 * cancel completes, and the handle's descriptor holds it until that
 * completion is reaped, by a worker or the driver, which may be later
 * still; until then its address stays taken (an abstract Unix name, a port
 * bound without SO_REUSEADDR). An eventfd takes the descriptor's number
 * (which stays reserved while ops may name it, and any op on it fails),
 * so the socket goes as soon as the kernel lets go: at once when the
 * closing thread armed the accept (the cancel's task work runs as its
 * submission returns), a moment later otherwise. The caller holds the
 * socket's lock; listeners make no system calls on their descriptor
 * outside it. Without a descriptor to spare nothing changes. */
static void blitz__sock_release_early(blitz_socket *s) {
    int ph = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ph < 0)
        return;
    if (syscall(SYS_dup3, ph, s->fd, O_CLOEXEC) >= 0)
        s->fd_placeholder = 1;
    close(ph);
}

BLITZ_API int blitz_sock_close(blitz_socket *s) {
    if (!s)
        return BLITZ_EINVAL;
    blitz__io *io = s->io;
    blitz__mutex_lock(&s->lock);
    if (s->closed) {
        blitz__mutex_unlock(&s->lock);
        return BLITZ_ECLOSED;
    }
    s->closed = 1;
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
        } else if (io->kind == BLITZ_BACKEND_IO_URING &&
                   blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_INFLIGHT) {
            blitz__uring_submit_cancel(io, op);
        }
        op = next;
    }
    if (s->ms_armed)
        blitz__uring_cancel_ud(io, &io->rings[s->ms_ring],
                               (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS);
    /* The descriptor is closed when the last op lets go of it; io_uring's
     * accepts hold the listening socket until their cancels complete, and
     * meanwhile it would take connections only to reset them. Shut down,
     * it refuses new ones at once, as after a close on the other
     * backends. (Not an adopted listener: another process may share it.) */
    if (s->listening && io->kind == BLITZ_BACKEND_IO_URING) {
        if (s->listen_own)
            (void)shutdown(s->fd, SHUT_RD);
        if (s->ms_armed || s->ops)
            blitz__sock_release_early(s);
    }
    if (s->listening)
        blitz__u64_store(&io->listener_closed_ns, blitz__now_ns(), BLITZ__RELAXED);
    blitz__recv_ms_close(s);
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
    for (int i = 0; i < n; i++)
        blitz__io_wake(io, batch[i]);
    blitz__sock_unref(s);
    return BLITZ_OK;
}

/* ---- waiting in the backend -------------------------------------------------------------- */

BLITZ_PRIVATE void blitz__io_drain_fd(int fd) {
    uint64_t v;
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
}

static void blitz__io_backend_wait(blitz__io *io, uint64_t timeout_ns) {
    switch (io->kind) {
    case BLITZ_BACKEND_EPOLL:
        blitz__epoll_wait(io, timeout_ns);
        break;
    default:
        blitz__pollb_wait(io, timeout_ns);
        break;
    }
}

static void blitz__io_backend_dispatch(blitz__io *io) {
    blitz__wake_batch_begin();
    switch (io->kind) {
    case BLITZ_BACKEND_EPOLL:
        blitz__epoll_dispatch(io);
        break;
    default:
        blitz__pollb_dispatch(io);
        break;
    }
    blitz__wake_batch_end();
}

/* Reaps without blocking (start of a tick). A try-lock: when another
 * thread waits in or dispatches the backend, it does the work. */
BLITZ_PRIVATE void blitz__io_poll(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io)
        return;
    if (io->kind == BLITZ_BACKEND_IO_URING) {
        blitz__uring_poll(io);
        return;
    }
    if (!blitz__mutex_trylock(&io->lock))
        return;
    blitz__io_free_deferred(io);
    blitz__io_backend_wait(io, 0);
    blitz__io_backend_dispatch(io);
    blitz__mutex_unlock(&io->lock);
}

/* A current-thread driver stops driving (its run returns). On io_uring a
 * socket closed in that run keeps its descriptor until its ops' cancels
 * are reaped; the cancels ran when they were submitted, so one look now
 * closes it, rather than at the next drive or the free, which may be much
 * later (a peer waits for the end of the stream meanwhile). */
BLITZ_PRIVATE void blitz__io_after_drive(blitz_runtime *rt) {
    if (rt->io && rt->io->kind == BLITZ_BACKEND_IO_URING)
        blitz__uring_poll(rt->io);
}

/* Before a tick of a thread that runs tasks: a non-blocking look at the
 * backend when one is due. `*polls_since` counts the thread's task polls
 * since it last looked or parked in the backend (the caller adds each
 * tick's and clears it after a park); reset here after a look.
 * epoll: a look is a system call, and one right after a park or after a
 * tick that ran its queue dry mostly finds nothing (the thread parks in
 * the backend next anyway when it has nothing to run), so it looks only
 * after an interval of polls, enough to keep a busy thread's I/O flowing.
 * Every tick for the others: io_uring's look costs no system call and
 * flushes the tick's submissions; poll's picks up the interest the tick
 * registered, which would otherwise interrupt a blocked poller to rebuild
 * its set (measured with 3,000 idle connections: 0.33 ms echo latency
 * instead of 0.64). */
BLITZ_PRIVATE void blitz__io_between_ticks(blitz_runtime *rt, uint64_t *polls_since) {
    blitz__io *io = rt->io;
    if (!io || (io->kind == BLITZ_BACKEND_EPOLL && *polls_since < BLITZ__IO_EVENT_INTERVAL))
        return;
    blitz__io_poll(rt);
    *polls_since = 0;
}

/* Spin rounds before a worker parks. A runtime that serves sockets does
 * not spin by default: its wake-ups come from the kernel, which reaches a
 * worker parked in the backend directly, and spinning only takes CPU time
 * from the peers (measured: 10-13 us of server CPU per echo request with
 * spinning, 6-7 without, on io_uring). An explicit spin_before_park is
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

/* Completions are waiting, known without a system call (io_uring's CQ
 * rings): a spinning worker stops spinning and reaps them. */
BLITZ_PRIVATE int blitz__io_ready_cheap(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    return io && io->kind == BLITZ_BACKEND_IO_URING && blitz__uring_ready_cheap(io);
}

/* Every parked worker waits in the backend (its own io_uring ring), not
 * only the timer sleeper. */
BLITZ_PRIVATE int blitz__io_parks_workers(blitz_runtime *rt) {
    return rt->io && rt->io->kind == BLITZ_BACKEND_IO_URING && rt->io->nrings > 1;
}

/* A worker thread starts: with io_uring it arms its own ring's polls. */
BLITZ_PRIVATE void blitz__io_worker_start(blitz_runtime *rt, uint32_t index) {
    blitz__io *io = rt->io;
    if (io && io->kind == BLITZ_BACKEND_IO_URING)
        blitz__uring_worker_start(io, index);
}

/* The calling thread starts driving a current-thread runtime. */
BLITZ_PRIVATE void blitz__io_driver_start(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (io && io->kind == BLITZ_BACKEND_IO_URING)
        blitz__uring_driver_start(io);
}

/* Gives pending io_uring submissions to the kernel (before a thread sleeps
 * anywhere but in the backend). */
BLITZ_PRIVATE void blitz__io_flush(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (io && io->kind == BLITZ_BACKEND_IO_URING)
        blitz__uring_flush_mine(io);
}

/* Parks the calling thread in the backend until an event, an unpark of
 * `p`, or timeout_ns (0: no timeout). `woke(arg)` runs after the wait and
 * before the events are dispatched (a worker leaves the parked set there,
 * so the tasks it wakes go to other workers). */
BLITZ_PRIVATE void blitz__io_park(blitz_runtime *rt, blitz__parker *p, uint64_t timeout_ns,
                                  void (*woke)(void *), void *arg) {
    blitz__io *io = rt->io;
    if (io->kind == BLITZ_BACKEND_IO_URING) {
        blitz__uring_park(io, p, timeout_ns ? timeout_ns : BLITZ__IO_FOREVER, woke, arg);
        return;
    }
    blitz__mutex_lock(&io->lock);
    blitz__io_free_deferred(io);
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED_DRIVER, BLITZ__ACQ_REL))
        blitz__io_backend_wait(io, timeout_ns ? timeout_ns : BLITZ__IO_FOREVER);
    blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE);
    if (woke)
        woke(arg);
    blitz__io_backend_dispatch(io);
    blitz__mutex_unlock(&io->lock);
}

/* ---- creation, shutdown ------------------------------------------------------------------- */

BLITZ_API const char *blitz_backend_name(blitz_backend b) {
    switch (b) {
    case BLITZ_BACKEND_AUTO:
        return "auto";
    case BLITZ_BACKEND_IO_URING:
        return "io_uring";
    case BLITZ_BACKEND_EPOLL:
        return "epoll";
    case BLITZ_BACKEND_POLL:
        return "poll";
    default:
        return "none";
    }
}

BLITZ_API blitz_backend blitz_runtime_backend(const blitz_runtime *rt) {
    return rt && rt->io ? rt->io->kind : BLITZ_BACKEND_NONE;
}

static int blitz__io_try(blitz__io *io, blitz_backend b) {
    io->kind = b;
    switch (b) {
    case BLITZ_BACKEND_IO_URING:
        return blitz__uring_init(io, io->rt->workers ? io->rt->num_workers : 0);
    case BLITZ_BACKEND_EPOLL:
        return blitz__epoll_init(io);
    case BLITZ_BACKEND_POLL:
        return blitz__pollb_init(io);
    default:
        return BLITZ_EINVAL;
    }
}

static blitz_backend blitz__backend_from_env(void) {
    const char *e = getenv("BLITZ_BACKEND");
    if (!e || !*e)
        return BLITZ_BACKEND_AUTO;
    if (!strcasecmp(e, "io_uring") || !strcasecmp(e, "uring"))
        return BLITZ_BACKEND_IO_URING;
    if (!strcasecmp(e, "epoll"))
        return BLITZ_BACKEND_EPOLL;
    if (!strcasecmp(e, "poll"))
        return BLITZ_BACKEND_POLL;
    return BLITZ_BACKEND_AUTO;
}

/* Creates rt->io. `forced`: a backend from the config that must start.
 * Without one: the environment's preference, then io_uring, epoll, poll. */
BLITZ_PRIVATE int blitz__io_create(blitz_runtime *rt, blitz_backend forced) {
    if (forced > BLITZ_BACKEND_NONE)
        return BLITZ_EINVAL;
    if (forced == BLITZ_BACKEND_NONE)
        return BLITZ_OK;
    blitz__io *io = (blitz__io *)blitz__calloc(sizeof *io);
    if (!io)
        return BLITZ_ENOMEM;
    io->rt = rt;
    io->epfd = -1;
    io->shared_efd = -1;
    blitz__mutex_init(&io->lock);
    blitz__mutex_init(&io->socks_lock);
    blitz__mutex_init(&io->poll_lock);
    io->wake_fd = blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    int rc = io->wake_fd < 0 ? (int)blitz__neg_errno() : BLITZ_EINVAL;
    if (io->wake_fd >= 0) {
        if (forced != BLITZ_BACKEND_AUTO) {
            rc = blitz__io_try(io, forced);
        } else {
            blitz_backend order[4] = {blitz__backend_from_env(), BLITZ_BACKEND_IO_URING,
                                      BLITZ_BACKEND_EPOLL, BLITZ_BACKEND_POLL};
            for (int i = 0; i < 4 && rc != BLITZ_OK; i++)
                if (order[i] != BLITZ_BACKEND_AUTO)
                    rc = blitz__io_try(io, order[i]);
        }
    }
    if (rc != BLITZ_OK) {
        if (io->wake_fd >= 0)
            close(io->wake_fd);
        blitz__mutex_destroy(&io->lock);
        blitz__mutex_destroy(&io->socks_lock);
        blitz__mutex_destroy(&io->poll_lock);
        blitz__free(io);
        /* Without a forced choice a runtime still works, without I/O. */
        return forced == BLITZ_BACKEND_AUTO ? BLITZ_OK : rc;
    }
    rt->io = io;
    return BLITZ_OK;
}

/* The descriptor that wakes worker `index` (UINT32_MAX: the current-thread
 * driver) when it is parked in the backend. */
BLITZ_PRIVATE int blitz__io_wake_fd(const blitz__io *io, uint32_t index) {
    return io->kind == BLITZ_BACKEND_IO_URING && index != UINT32_MAX ? io->rings[index].wake_fd
                                                                     : io->wake_fd;
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
                blitz__uring_submit_cancel(io, op);
            }
            op = next;
        }
        if (complete) {
            if (s->ms_armed)
                blitz__uring_cancel_ud(io, &io->rings[s->ms_ring],
                                       (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS);
            blitz__recv_ms_close(s);
        }
        blitz__mutex_unlock(&s->lock);
    }
    blitz__mutex_unlock(&io->socks_lock);
    return complete;
}

/* Shutdown (no task runs any more): every op is cancelled and its waker
 * dropped; io_uring completions are awaited so the kernel holds no buffer
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
    if (io->kind == BLITZ_BACKEND_IO_URING)
        blitz__uring_drain(io);
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
            close(s->fd);
        blitz__sock_free_mem(s);
        s = next;
    }
    io->all = NULL;
    switch (io->kind) {
    case BLITZ_BACKEND_IO_URING:
        blitz__uring_destroy(io);
        break;
    case BLITZ_BACKEND_EPOLL:
        blitz__epoll_destroy(io);
        break;
    default:
        blitz__pollb_destroy(io);
        break;
    }
    close(io->wake_fd);
    blitz__mutex_destroy(&io->lock);
    blitz__mutex_destroy(&io->socks_lock);
    blitz__mutex_destroy(&io->poll_lock);
    blitz__free(io);
    rt->io = NULL;
}
