/* The io_uring backend, through raw system calls (no liburing).
 *
 * One ring per runtime, shared by every thread: submissions take
 * `sq_lock` (a few stores; workers leave the io_uring_enter to the start
 * of their next tick or their park, so one system call carries a batch),
 * reaping takes the driver's lock (io_driver.c). The parked sleeper waits
 * in io_uring_enter(GETEVENTS | EXT_ARG) with the timer deadline; a
 * multishot POLL_ADD on the driver's eventfd wakes it (re-armed when the
 * kernel ends it). Start-up probes the opcodes and features it relies on
 * (EXT_ARG, FAST_POLL, NODROP, RECV/SEND/ACCEPT/CONNECT/SENDMSG/RECVMSG/
 * ASYNC_CANCEL/POLL_ADD) and refuses the ring otherwise, so the driver
 * falls back to epoll. Constants newer than the system's uapi header are
 * defined here. */
#include "internal.h"
#include "io_internal.h"

#if !defined(BLITZ_NO_IO_URING)

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_io_uring_enter
#define SYS_io_uring_enter 426
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register 427
#endif
#ifndef IORING_FEAT_EXT_ARG
#define IORING_FEAT_EXT_ARG (1U << 8)
#endif
#ifndef IORING_ENTER_EXT_ARG
#define IORING_ENTER_EXT_ARG (1U << 3)
#endif
#ifndef IORING_ACCEPT_MULTISHOT
#define IORING_ACCEPT_MULTISHOT (1U << 0)
#endif
#ifndef IORING_POLL_ADD_MULTI
#define IORING_POLL_ADD_MULTI (1U << 0)
#endif
#ifndef IORING_CQE_F_MORE
#define IORING_CQE_F_MORE (1U << 1)
#endif
#ifndef IORING_SETUP_SUBMIT_ALL
#define IORING_SETUP_SUBMIT_ALL (1U << 7)
#endif
#ifndef IORING_FEAT_CQE_SKIP
#define IORING_FEAT_CQE_SKIP (1U << 11)
#endif
#ifndef IOSQE_CQE_SKIP_SUCCESS
#define IOSQE_CQE_SKIP_SUCCESS (1U << 6)
#endif

#ifndef BLITZ_URING_ENTRIES
#define BLITZ_URING_ENTRIES 1024u
#endif
#define BLITZ__URING_CQ_ENTRIES (BLITZ_URING_ENTRIES * 8u)
/* Workers submit a batch once this many SQEs wait. */
#define BLITZ__URING_BATCH 64u

static int blitz__uring_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags,
                              const void *arg, size_t argsz) {
    return (int)syscall(SYS_io_uring_enter, fd, to_submit, min_complete, flags, arg, argsz);
}

static int blitz__uring_probe(blitz__io *io) {
    static const uint8_t need[] = {IORING_OP_RECV,     IORING_OP_SEND,        IORING_OP_ACCEPT,
                                   IORING_OP_CONNECT,  IORING_OP_SENDMSG,     IORING_OP_RECVMSG,
                                   IORING_OP_POLL_ADD, IORING_OP_ASYNC_CANCEL};
    size_t sz = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
    struct io_uring_probe *p = (struct io_uring_probe *)blitz__calloc(sz);
    if (!p)
        return BLITZ_ENOMEM;
    int rc = BLITZ_OK;
    if (syscall(SYS_io_uring_register, io->ring_fd, IORING_REGISTER_PROBE, p, 256) < 0) {
        rc = blitz__from_errno(errno);
    } else {
        for (size_t i = 0; i < sizeof need; i++)
            if (need[i] > p->last_op || !(p->ops[need[i]].flags & IO_URING_OP_SUPPORTED))
                rc = BLITZ_ENOSYS;
        /* Multishot accept came with Linux 5.19, as did IORING_OP_SOCKET. */
        io->ms_accept = p->last_op >= 45 /* IORING_OP_SOCKET */;
    }
    blitz__free(p);
    return rc;
}

static struct io_uring_sqe *blitz__uring_get_sqe(blitz__io *io) {
    uint32_t head = blitz__u32_field_load(io->sq_head, BLITZ__ACQUIRE);
    uint32_t tail = io->sq_tail_local;
    if (tail - head >= io->sq_entries)
        return NULL;
    uint32_t idx = tail & *io->sq_mask;
    struct io_uring_sqe *sqe = &io->sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    io->sq_array[idx] = idx;
    return sqe;
}

/* Publishes the SQE got last. Caller holds sq_lock. */
static void blitz__uring_push(blitz__io *io) {
    io->sq_tail_local++;
    blitz__u32_field_store(io->sq_tail, io->sq_tail_local, BLITZ__RELEASE);
    blitz__u32_fetch_add(&io->to_submit, 1, BLITZ__RELAXED);
}

/* Caller holds sq_lock. */
static void blitz__uring_flush_locked(blitz__io *io) {
    uint32_t n = blitz__u32_load(&io->to_submit, BLITZ__RELAXED);
    while (n) {
        int r = blitz__uring_enter(io->ring_fd, n, 0, 0, NULL, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            /* EAGAIN / EBUSY: the kernel is short of room (completions
             * to reap first); the SQEs stay and go with the next flush. */
            return;
        }
        if (r == 0)
            return;
        blitz__u32_fetch_sub(&io->to_submit, (uint32_t)r, BLITZ__RELAXED);
        n -= (uint32_t)r;
    }
}

BLITZ_PRIVATE void blitz__uring_flush(blitz__io *io) {
    blitz__mutex_lock(&io->sq_lock);
    blitz__uring_flush_locked(io);
    blitz__mutex_unlock(&io->sq_lock);
}

/* Caller holds sq_lock. */
static struct io_uring_sqe *blitz__uring_sqe_or_flush(blitz__io *io) {
    struct io_uring_sqe *sqe = blitz__uring_get_sqe(io);
    if (!sqe) {
        blitz__uring_flush_locked(io);
        sqe = blitz__uring_get_sqe(io);
    }
    return sqe;
}

static int blitz__uring_arm_wake(blitz__io *io) {
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (sqe) {
        sqe->opcode = IORING_OP_POLL_ADD;
        sqe->fd = io->wake_fd;
        sqe->poll32_events = POLLIN;
        sqe->len = IORING_POLL_ADD_MULTI;
        sqe->user_data = BLITZ__UD_WAKE;
        blitz__uring_push(io);
        blitz__uring_flush_locked(io);
    }
    blitz__mutex_unlock(&io->sq_lock);
    return sqe ? BLITZ_OK : BLITZ_EBUSY;
}

BLITZ_PRIVATE int blitz__uring_init(blitz__io *io) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
    p.cq_entries = BLITZ__URING_CQ_ENTRIES;
    int fd = (int)syscall(SYS_io_uring_setup, BLITZ_URING_ENTRIES, &p);
    if (fd < 0)
        return blitz__from_errno(errno);
    io->ring_fd = fd;
    int rc = BLITZ_OK;
    uint32_t need = IORING_FEAT_EXT_ARG | IORING_FEAT_FAST_POLL | IORING_FEAT_NODROP;
    if ((p.features & need) != need)
        rc = BLITZ_ENOSYS;
    if (rc == BLITZ_OK)
        rc = blitz__uring_probe(io);
    if (rc == BLITZ_OK) {
        io->features = p.features;
        io->sq_entries = p.sq_entries;
        io->cq_entries = p.cq_entries;
        io->sq_map_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
        io->cq_map_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
        if (p.features & IORING_FEAT_SINGLE_MMAP) {
            if (io->cq_map_len > io->sq_map_len)
                io->sq_map_len = io->cq_map_len;
        }
        io->sq_map = mmap(NULL, io->sq_map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                          fd, IORING_OFF_SQ_RING);
        if (io->sq_map == MAP_FAILED) {
            io->sq_map = NULL;
            rc = blitz__from_errno(errno);
        }
    }
    if (rc == BLITZ_OK) {
        if (p.features & IORING_FEAT_SINGLE_MMAP) {
            io->cq_map = io->sq_map;
        } else {
            io->cq_map = mmap(NULL, io->cq_map_len, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
            if (io->cq_map == MAP_FAILED) {
                io->cq_map = NULL;
                rc = blitz__from_errno(errno);
            }
        }
    }
    if (rc == BLITZ_OK) {
        io->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
        void *m = mmap(NULL, io->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                       IORING_OFF_SQES);
        if (m == MAP_FAILED)
            rc = blitz__from_errno(errno);
        else
            io->sqes = (struct io_uring_sqe *)m;
    }
    if (rc != BLITZ_OK) {
        blitz__uring_destroy(io);
        return rc;
    }
    char *sq = (char *)io->sq_map, *cq = (char *)io->cq_map;
    io->sq_head = (uint32_t *)(void *)(sq + p.sq_off.head);
    io->sq_tail = (uint32_t *)(void *)(sq + p.sq_off.tail);
    io->sq_mask = (uint32_t *)(void *)(sq + p.sq_off.ring_mask);
    io->sq_array = (uint32_t *)(void *)(sq + p.sq_off.array);
    io->cq_head = (uint32_t *)(void *)(cq + p.cq_off.head);
    io->cq_tail = (uint32_t *)(void *)(cq + p.cq_off.tail);
    io->cq_mask = (uint32_t *)(void *)(cq + p.cq_off.ring_mask);
    io->cqes = (struct io_uring_cqe *)(void *)(cq + p.cq_off.cqes);
    io->sq_tail_local = *io->sq_tail;
    io->skip_cancel_cqe = (p.features & IORING_FEAT_CQE_SKIP) != 0;
    rc = blitz__uring_arm_wake(io);
    if (rc != BLITZ_OK) {
        blitz__uring_destroy(io);
        return rc;
    }
    return BLITZ_OK;
}

BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io) {
    if (io->sqes)
        munmap(io->sqes, io->sqes_len);
    if (io->cq_map && io->cq_map != io->sq_map)
        munmap(io->cq_map, io->cq_map_len);
    if (io->sq_map)
        munmap(io->sq_map, io->sq_map_len);
    io->sqes = NULL;
    io->cq_map = io->sq_map = NULL;
    if (io->ring_fd >= 0)
        close(io->ring_fd);
    io->ring_fd = -1;
}

/* Fills and queues the SQE of `op`. Caller holds the op's socket lock. */
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz_io *op, int flush) {
    blitz_socket *s = op->blitz__sock;
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (!sqe) {
        blitz__mutex_unlock(&io->sq_lock);
        return BLITZ_EBUSY;
    }
    sqe->fd = s->fd;
    sqe->user_data = (uint64_t)(uintptr_t)op;
    switch (op->blitz__kind) {
    case BLITZ__OP_RECV:
        sqe->opcode = IORING_OP_RECV;
        sqe->addr = (uint64_t)(uintptr_t)op->blitz__buf;
        sqe->len = (uint32_t)(op->blitz__len > 0x7ffff000u ? 0x7ffff000u : op->blitz__len);
        break;
    case BLITZ__OP_SEND:
    case BLITZ__OP_SEND_ALL: {
        size_t left = op->blitz__len - op->blitz__done;
        sqe->opcode = IORING_OP_SEND;
        sqe->addr = (uint64_t)(uintptr_t)((char *)op->blitz__buf + op->blitz__done);
        sqe->len = (uint32_t)(left > 0x7ffff000u ? 0x7ffff000u : left);
        sqe->msg_flags = MSG_NOSIGNAL;
        break;
    }
    case BLITZ__OP_RECVV:
    case BLITZ__OP_RECV_FROM:
    case BLITZ__OP_SENDV:
    case BLITZ__OP_SEND_TO: {
        _Static_assert(sizeof(((blitz_io *)0)->blitz__scratch) >=
                           sizeof(struct msghdr) + sizeof(struct iovec),
                       "the op holds its msghdr");
        struct msghdr *m = (struct msghdr *)(void *)op->blitz__scratch;
        struct iovec *one = (struct iovec *)(void *)((char *)op->blitz__scratch + sizeof *m);
        blitz__op_msghdr(op, m, one);
        int send = op->blitz__kind == BLITZ__OP_SENDV || op->blitz__kind == BLITZ__OP_SEND_TO;
        sqe->opcode = send ? IORING_OP_SENDMSG : IORING_OP_RECVMSG;
        sqe->addr = (uint64_t)(uintptr_t)m;
        sqe->len = 1;
        sqe->msg_flags = send ? MSG_NOSIGNAL : 0;
        break;
    }
    case BLITZ__OP_ACCEPT:
        sqe->opcode = IORING_OP_ACCEPT;
        sqe->accept_flags = SOCK_NONBLOCK | SOCK_CLOEXEC;
        break;
    case BLITZ__OP_CONNECT: {
        const blitz_addr *a = (const blitz_addr *)(void *)op->blitz__scratch;
        sqe->opcode = IORING_OP_CONNECT;
        sqe->addr = (uint64_t)(uintptr_t)a->u.bytes;
        sqe->off = a->len;
        break;
    }
    case BLITZ__OP_FD_READ:
    case BLITZ__OP_FD_WRITE:
    case BLITZ__OP_FD_WRITE_ALL:
    case BLITZ__OP_FD_POLL:
        sqe->opcode = IORING_OP_POLL_ADD;
        sqe->poll32_events = op->blitz__dir == BLITZ__DIR_WRITE ? POLLOUT : POLLIN;
        break;
    default:
        break;
    }
    blitz__uring_push(io);
    if (flush || blitz__u32_load(&io->to_submit, BLITZ__RELAXED) >= BLITZ__URING_BATCH)
        blitz__uring_flush_locked(io);
    blitz__mutex_unlock(&io->sq_lock);
    return BLITZ_OK;
}

/* Arms a listener's multishot accept. Caller holds the socket's lock. */
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz_socket *s) {
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (sqe) {
        sqe->opcode = IORING_OP_ACCEPT;
        sqe->fd = s->fd;
        sqe->accept_flags = SOCK_NONBLOCK | SOCK_CLOEXEC;
        sqe->ioprio = IORING_ACCEPT_MULTISHOT;
        sqe->user_data = (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS;
        blitz__uring_push(io);
        blitz__uring_flush_locked(io);
    }
    blitz__mutex_unlock(&io->sq_lock);
    return sqe ? BLITZ_OK : BLITZ_EBUSY;
}

/* ASYNC_CANCEL by user_data. */
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, uint64_t ud) {
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (sqe) {
        sqe->opcode = IORING_OP_ASYNC_CANCEL;
        sqe->fd = -1;
        sqe->addr = ud;
        sqe->user_data = BLITZ__UD_IGNORE;
        if (io->skip_cancel_cqe)
            sqe->flags = IOSQE_CQE_SKIP_SUCCESS;
        blitz__uring_push(io);
    }
    blitz__uring_flush_locked(io);
    blitz__mutex_unlock(&io->sq_lock);
}

/* ASYNC_CANCEL of an op in flight. Caller holds the op's socket lock. */
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op) {
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (sqe) {
        sqe->opcode = IORING_OP_ASYNC_CANCEL;
        sqe->fd = -1;
        sqe->addr = (uint64_t)(uintptr_t)op;
        sqe->user_data = BLITZ__UD_IGNORE;
        if (io->skip_cancel_cqe)
            sqe->flags = IOSQE_CQE_SKIP_SUCCESS;
        blitz__uring_push(io);
    }
    /* Cancels go out at once: whoever cancels may wait for the result. */
    blitz__uring_flush_locked(io);
    blitz__mutex_unlock(&io->sq_lock);
}

BLITZ_PRIVATE int blitz__uring_cq_ready(blitz__io *io) {
    return blitz__u32_field_load(io->cq_head, BLITZ__RELAXED) !=
           blitz__u32_field_load(io->cq_tail, BLITZ__ACQUIRE);
}

/* Caller holds io->lock. Blocks unless completions are ready. */
BLITZ_PRIVATE void blitz__uring_wait(blitz__io *io, uint64_t timeout_ns) {
    if (blitz__u32_load(&io->to_submit, BLITZ__RELAXED))
        blitz__uring_flush(io);
    if (timeout_ns == 0 || blitz__uring_cq_ready(io))
        return;
    struct __kernel_timespec ts;
    struct io_uring_getevents_arg arg;
    memset(&arg, 0, sizeof arg);
    if (timeout_ns != BLITZ__IO_FOREVER) {
        ts.tv_sec = (long long)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long long)(timeout_ns % 1000000000u);
        arg.ts = (uint64_t)(uintptr_t)&ts;
    }
    blitz__uring_enter(io->ring_fd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg,
                       sizeof arg);
}

/* Caller holds io->lock. */
BLITZ_PRIVATE void blitz__uring_dispatch(blitz__io *io) {
    for (;;) {
        struct {
            uint64_t user_data;
            int32_t res;
            uint32_t flags;
        } batch[64];
        uint32_t head = *io->cq_head;
        uint32_t tail = blitz__u32_field_load(io->cq_tail, BLITZ__ACQUIRE);
        uint32_t n = 0;
        while (head != tail && n < 64) {
            const struct io_uring_cqe *c = &io->cqes[head & *io->cq_mask];
            batch[n].user_data = c->user_data;
            batch[n].res = c->res;
            batch[n].flags = c->flags;
            n++;
            head++;
        }
        if (n == 0)
            return;
        blitz__u32_field_store(io->cq_head, head, BLITZ__RELEASE);
        int rearm = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t ud = batch[i].user_data;
            if (ud == BLITZ__UD_IGNORE)
                continue;
            if (ud == BLITZ__UD_WAKE) {
                blitz__io_drain_wake_fd(io);
                if (!(batch[i].flags & IORING_CQE_F_MORE))
                    rearm = 1;
                continue;
            }
            if (ud & BLITZ__UD_ACCEPT_MS) {
                blitz__io_accept_ms(io, (blitz_socket *)(uintptr_t)(ud & ~(uint64_t)7),
                                    batch[i].res, batch[i].flags);
                continue;
            }
            blitz__io_complete(io, (blitz_io *)(uintptr_t)ud, batch[i].res, batch[i].flags);
        }
        if (rearm)
            blitz__uring_arm_wake(io);
    }
}

#else

BLITZ_PRIVATE int blitz__uring_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz_io *op, int flush) {
    (void)io;
    (void)op;
    (void)flush;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op) {
    (void)io;
    (void)op;
}
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz_socket *s) {
    (void)io;
    (void)s;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, uint64_t ud) {
    (void)io;
    (void)ud;
}
BLITZ_PRIVATE void blitz__uring_flush(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_cq_ready(blitz__io *io) {
    (void)io;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_wait(blitz__io *io, uint64_t timeout_ns) {
    (void)io;
    (void)timeout_ns;
}
BLITZ_PRIVATE void blitz__uring_dispatch(blitz__io *io) {
    (void)io;
}

#endif
