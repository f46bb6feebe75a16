/* The io_uring backend, through raw system calls (no liburing).
 *
 * A ring per worker, plus one shared ring. The kernel finishes a socket
 * op armed on readiness (FAST_POLL) in task work of the thread that
 * submitted it; with one ring shared by all workers that work interrupted
 * whichever worker had submitted, often asleep or busy, and ran at once,
 * while the network stack on the other CPU still held the socket's lock
 * (measured: half the server's CPU time spinning in lock_sock, 46-60k
 * echo req/s with 2 workers). So each worker submits to its own ring,
 * parks in it and reaps it: the completions of its ops come back to it.
 * Its ring is COOP_TASKRUN (with TASKRUN_FLAG) where the kernel has it: the
 * task work waits for the worker's next system call or ring wait instead
 * of an interrupt. Threads that are not workers (the current-thread
 * driver, plain threads) use the shared ring; in a multi-thread runtime
 * the kernel signals an eventfd for its completions that every worker
 * ring polls. A current-thread runtime's shared ring is COOP_TASKRUN too:
 * its driver submits nearly everything and waits in it (measured with the
 * anchors' echo client: 45k req/s at 22 us of server CPU per request with
 * interrupting task work, 168k at 5.7 us without). A thread that submitted
 * to it and sleeps elsewhere is still woken to run its task work (a
 * COOP_TASKRUN notification skips the interrupt of a running thread, not
 * the wake-up of a sleeping one); one that computes without system calls
 * delays its own ops' completions until its next one. A multi-thread
 * runtime's shared ring stays without: its submitters are plain threads
 * and the block_on thread, whose completions the workers reap -- except
 * its file ops: from their submission on the block_on thread mutes the
 * eventfd and waits in the ring itself (blitz__uring_wait_files). The
 * invariant: a thread that mutes reaps the ring after unmuting, and
 * signals the eventfd itself while ops there are unreaped, so a
 * completion posted while muted is never left without a reaper.
 *
 * Submissions take the ring's `sq_lock` (a few stores; a worker leaves the
 * io_uring_enter to the start of its next tick or its park, so one system
 * call carries a batch). A multishot POLL_ADD on each ring's eventfd wakes
 * a thread waiting in it (re-armed when the kernel ends it). Start-up
 * probes the opcodes and features it relies on
 * (EXT_ARG, FAST_POLL, NODROP, RECV/SEND/ACCEPT/CONNECT/SENDMSG/RECVMSG/
 * ASYNC_CANCEL/POLL_ADD) and refuses the ring otherwise, so the driver
 * falls back to epoll. Constants newer than the system's uapi header are
 * defined here. */
#include "io.h"

#if BLITZ__HAS_IO /* POSIX only until the IOCP backend (platform.h) */

/* ---- the private structures (uring_recv_ms.c, after this file, uses them too) ---- */

/* io_uring user_data tags below any pointer. */
#define BLITZ__UD_IGNORE 0u
#define BLITZ__UD_WAKE   1u
/* The other tag of a ring's wake poll: a new current-thread driver arms
 * its own poll under the tag not in use (see blitz__uring_driver_start). */
#define BLITZ__UD_WAKE_ALT 5u
/* A listener's multishot accept: the socket pointer with this bit set. */
#define BLITZ__UD_ACCEPT_MS 2u
/* A worker ring's poll of io->shared_efd. */
#define BLITZ__UD_SHARED 3u
/* A stream socket's multishot receive: the socket pointer with this tag
 * (sockets are at least 8-byte aligned). */
#define BLITZ__UD_RECV_MS 4u
/* A file op (uring_file.c): its record's pointer with this tag (exact 1
 * is the wake poll's). */
#define BLITZ__UD_FILE 1u
#define BLITZ__UD_TAG  7u

#ifndef IORING_CQE_F_MORE
#define IORING_CQE_F_MORE (1U << 1)
#endif
#ifndef IORING_CQE_F_BUFFER
#define IORING_CQE_F_BUFFER (1U << 0)
#endif
#ifndef IORING_CQE_BUFFER_SHIFT
#define IORING_CQE_BUFFER_SHIFT 16
#endif

/* One io_uring instance. A worker's own ring gets submissions only from
 * that worker, which is also the only thread that waits in it or reaps
 * it; cancels may come from any thread. The shared ring takes
 * submissions from every other thread (sq_lock), and any thread reaps it
 * (reap_lock, tried). */
typedef struct blitz__ring {
    int fd;
    int wake_fd; /* an eventfd polled (multishot) by this ring */
    int coop;    /* asked for COOP_TASKRUN: flagged task work is run at a tick */
    /* The poll of wake_fd in use: its tag (BLITZ__UD_WAKE or _ALT) and the
     * blitz__thread_tag of the thread that armed it (the poll's task work
     * runs there). Changed by the thread that reaps the ring. */
    blitz__atomic_u64 wake_armer;
    blitz__atomic_u32 wake_ud;
    uint32_t index; /* in io->rings */
    blitz__mutex sq_lock;
    blitz__mutex reap_lock;
    blitz__atomic_u32 to_submit; /* SQEs written and not yet given to the kernel */
    blitz__atomic_u32 files;     /* file ops in flight here (uring_file.c) */
    /* Direct descriptor slots taken by whole-file chains (uring_file.c). */
    blitz__atomic_u64 slots[4];
    uint32_t sq_tail_local;
    uint32_t sq_entries, cq_entries;
    uint32_t *sq_head, *sq_tail, *sq_mask, *sq_array, *sq_flags;
    uint32_t *cq_head, *cq_tail, *cq_mask, *cq_flags;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    void *sq_map, *cq_map;
    size_t sq_map_len, cq_map_len, sqes_len;
    /* Provided buffers for multishot receives (buffer group 0), set up on
     * first use: the ring of buffer entries shared with the kernel and
     * the buffers. Any thread gives buffers back (pbuf_lock). */
    blitz__atomic_u32 pbuf_state; /* BLITZ__PBUF_* */
    blitz__mutex pbuf_lock;
    void *pbuf_ring;
    char *pbuf_mem;
    uint16_t pbuf_tail;
    char pad[64]; /* rings sit in one array, each written by its own worker */
} blitz__ring;

#define BLITZ__PBUF_NONE  0u
#define BLITZ__PBUF_READY 1u
#define BLITZ__PBUF_FAIL  2u

BLITZ_PRIVATE int blitz__uring_init(blitz__io *io, uint32_t workers);
BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io);
BLITZ_PRIVATE void blitz__uring_worker_start(blitz__io *io, uint32_t index);
BLITZ_PRIVATE void blitz__uring_driver_start(blitz__io *io);
BLITZ_PRIVATE blitz__ring *blitz__uring_mine(blitz__io *io, int *batches);
BLITZ_PRIVATE blitz__ring *blitz__uring_op_ring(blitz__io *io, const blitz_io *op);
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz__ring *r, blitz_io *op, int flush);
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op);
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz__ring *r, blitz_socket *s);
BLITZ_PRIVATE int blitz__uring_queue_n(blitz__ring *r, const struct io_uring_sqe *sqes, uint32_t n,
                                       int flush);
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, blitz__ring *r, uint64_t ud);
BLITZ_PRIVATE void blitz__uring_flush(blitz__ring *r);
BLITZ_PRIVATE int blitz__uring_cq_ready(const blitz__ring *r);
BLITZ_PRIVATE void blitz__uring_poll(blitz__io *io);
BLITZ_PRIVATE int blitz__uring_ready_cheap(blitz__io *io);
BLITZ_PRIVATE void blitz__uring_flush_mine(blitz__io *io);
BLITZ_PRIVATE void blitz__uring_park(blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg);
BLITZ_PRIVATE int blitz__uring_pbuf_ready(blitz__ring *r);
BLITZ_PRIVATE void blitz__uring_pbuf_put(blitz__ring *r, uint32_t bid);
BLITZ_PRIVATE const char *blitz__uring_pbuf_addr(const blitz__ring *r, uint32_t bid);
BLITZ_PRIVATE void blitz__uring_pbuf_free(blitz__ring *r);
BLITZ_PRIVATE int blitz__uring_arm_recv(blitz__io *io, blitz__ring *r, blitz_socket *s, int flush);

BLITZ_PRIVATE void blitz__io_accept_ms(blitz__io *io, blitz__ring *r, blitz_socket *s, int32_t res,
                                       uint32_t flags);

BLITZ_PRIVATE void blitz__io_recv_ms(blitz__io *io, blitz__ring *r, blitz_socket *s, int32_t res,
                                     uint32_t flags);

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
#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#endif
#ifndef IORING_SETUP_TASKRUN_FLAG
#define IORING_SETUP_TASKRUN_FLAG (1U << 9)
#endif
#ifndef IORING_SQ_TASKRUN
#define IORING_SQ_TASKRUN (1U << 2)
#endif
#ifndef IORING_RECVSEND_POLL_FIRST
#define IORING_RECVSEND_POLL_FIRST (1U << 0)
#endif
#ifndef IORING_REGISTER_EVENTFD
#define IORING_REGISTER_EVENTFD 4
#endif
#ifndef IORING_REGISTER_PBUF_RING
#define IORING_REGISTER_PBUF_RING 22
#endif
#ifndef IORING_RECV_MULTISHOT
#define IORING_RECV_MULTISHOT (1U << 1)
#endif
#ifndef IOSQE_BUFFER_SELECT
#define IOSQE_BUFFER_SELECT (1U << 5)
#endif
#ifndef IORING_CQ_EVENTFD_DISABLED
#define IORING_CQ_EVENTFD_DISABLED (1U << 0)
#endif

/* The kernel's provided-buffer ring layouts (struct io_uring_buf and
 * io_uring_buf_reg), spelled out for older uapi headers. The ring's tail
 * is the 16-bit word at offset 14, over the first entry's unused field. */
typedef struct {
    uint64_t addr;
    uint32_t len;
    uint16_t bid;
    uint16_t tail_or_unused;
} blitz__pbuf_entry;
typedef struct {
    uint64_t ring_addr;
    uint32_t ring_entries;
    uint16_t bgid;
    uint16_t flags;
    uint64_t resv[3];
} blitz__pbuf_reg;
_Static_assert(sizeof(blitz__pbuf_entry) == 16 && sizeof(blitz__pbuf_reg) == 40,
               "the kernel's provided-buffer layouts");
_Static_assert((BLITZ_URING_RECV_BUFS & (BLITZ_URING_RECV_BUFS - 1)) == 0 &&
                   BLITZ_URING_RECV_BUFS <= 32768,
               "BLITZ_URING_RECV_BUFS is a power of two, at most 32768");

#ifndef BLITZ_URING_ENTRIES
#define BLITZ_URING_ENTRIES 1024u
#endif
_Static_assert(BLITZ_URING_ENTRIES >= 1 && BLITZ_URING_ENTRIES <= 32768,
               "BLITZ_URING_ENTRIES must be 1..32768 (the kernel's limit)");
_Static_assert(BLITZ_URING_RECV_BUF_SIZE >= 64 && BLITZ_URING_RECV_BUF_SIZE <= (1u << 20),
               "BLITZ_URING_RECV_BUF_SIZE must be 64..1048576 bytes");
#define BLITZ__URING_CQ_ENTRIES (BLITZ_URING_ENTRIES * 8u)
/* Workers submit a batch once this many SQEs wait. */
#define BLITZ__URING_BATCH 64u

static int blitz__uring_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags,
                              const void *arg, size_t argsz) {
    return BLITZ__SYS(
        (int)syscall(SYS_io_uring_enter, fd, to_submit, min_complete, flags, arg, argsz));
}

static int blitz__uring_probe(blitz__io *io, int fd) {
    static const uint8_t need[] = {IORING_OP_RECV,     IORING_OP_SEND,        IORING_OP_ACCEPT,
                                   IORING_OP_CONNECT,  IORING_OP_SENDMSG,     IORING_OP_RECVMSG,
                                   IORING_OP_POLL_ADD, IORING_OP_ASYNC_CANCEL};
    size_t sz = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
    struct io_uring_probe *p = (struct io_uring_probe *)blitz__calloc(sz);
    if (!p)
        return BLITZ_ENOMEM;
    int rc = BLITZ_OK;
    if (syscall(SYS_io_uring_register, fd, IORING_REGISTER_PROBE, p, 256) < 0) {
        rc = blitz__from_errno(errno);
    } else {
        for (size_t i = 0; i < sizeof need; i++)
            if (need[i] > p->last_op || !(p->ops[need[i]].flags & IO_URING_OP_SUPPORTED))
                rc = BLITZ_ENOSYS;
        /* Multishot accept came with Linux 5.19, as did IORING_OP_SOCKET;
         * multishot receive with 6.0, as did IORING_OP_SEND_ZC. */
        io->ms_accept = p->last_op >= 45 /* IORING_OP_SOCKET */;
        io->link_timeout = IORING_OP_LINK_TIMEOUT <= p->last_op &&
                           (p->ops[IORING_OP_LINK_TIMEOUT].flags & IO_URING_OP_SUPPORTED);
        blitz__u32_store(&io->ms_recv,
                         p->last_op >= 47 /* IORING_OP_SEND_ZC */ && BLITZ_URING_RECV_BUFS > 0,
                         BLITZ__RELAXED);
        blitz__ufile_probe(io, p);
    }
    blitz__free(p);
    return rc;
}

static struct io_uring_sqe *blitz__uring_get_sqe(blitz__ring *r) {
    uint32_t head = blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
    uint32_t tail = r->sq_tail_local;
    if (tail - head >= r->sq_entries)
        return NULL;
    uint32_t idx = tail & *r->sq_mask;
    struct io_uring_sqe *sqe = &r->sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    r->sq_array[idx] = idx;
    return sqe;
}

/* Takes the SQE got last without showing it to the kernel yet (the head
 * of a linked pair). Caller holds sq_lock. */
static void blitz__uring_stage(blitz__ring *r) {
    r->sq_tail_local++;
    blitz__u32_fetch_add(&r->to_submit, 1, BLITZ__RELAXED);
}

/* Publishes the SQEs got so far. Caller holds sq_lock. */
static void blitz__uring_push(blitz__ring *r) {
    blitz__uring_stage(r);
    blitz__u32_field_store(r->sq_tail, r->sq_tail_local, BLITZ__RELEASE);
}

/* Gives `n` claimed SQEs to the kernel, optionally waiting for a
 * completion in the same system call; what the kernel did not take goes
 * back to `to_submit`. The count is only a hint for whoever submits next:
 * the kernel takes SQEs in order up to the published tail, so a thread
 * may submit another's, and every thread subtracts what it submitted. */
static void blitz__uring_submit_n(blitz__ring *r, uint32_t n) {
    while (n) {
        int got = blitz__uring_enter(r->fd, n, 0, 0, NULL, 0);
        if (got < 0 && errno == EINTR)
            continue;
        /* EAGAIN / EBUSY: the kernel is short of room (completions to
         * reap first); the SQEs stay and go with the next flush. */
        if (got <= 0)
            break;
        if ((uint32_t)got >= n) {
            n = 0;
            break;
        }
        n -= (uint32_t)got;
    }
    if (n)
        blitz__u32_fetch_add(&r->to_submit, n, BLITZ__RELAXED);
}

/* Claims the pending SQEs (sq_lock held). */
static uint32_t blitz__uring_claim(blitz__ring *r) {
    return blitz__u32_swap(&r->to_submit, 0, BLITZ__RELAXED);
}

/* Submits every published SQE, not only the claimed count: another
 * thread's claim may have been overtaken by this submission's, and a
 * count short of the tail could end between the two SQEs of a linked
 * pair (a CONNECT and its LINK_TIMEOUT), which the kernel would run
 * apart. Pairs are queued only by the thread that parks in the ring, so
 * a parked thread's own submission never meets half a pair either.
 * Caller holds sq_lock. */
static void blitz__uring_flush_locked(blitz__ring *r) {
    (void)blitz__uring_claim(r);
    /* Acquire: the kernel's consumption of the SQEs before its head. */
    uint32_t n = r->sq_tail_local - blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
    if (n)
        blitz__uring_submit_n(r, n);
}

/* Takes every published SQE for a submission outside sq_lock (a park's,
 * which also waits): the count of SQEs in the ring now, not the claimed
 * hint, which may be short or, after an overtaken claim, high. */
static uint32_t blitz__uring_claim_all(blitz__ring *r) {
    blitz__mutex_lock(&r->sq_lock);
    (void)blitz__uring_claim(r);
    uint32_t n = r->sq_tail_local - blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
    blitz__mutex_unlock(&r->sq_lock);
    return n;
}

/* After a submission outside sq_lock of `n` SQEs took `done`. The rest
 * were either submitted meanwhile by a flush under the lock (it takes
 * every published SQE) or refused by the kernel (EBUSY): only SQEs still
 * in the ring are owed, and their count re-arms the next flush. Owing the
 * claim itself would leave a count that no SQE backs: a park asking to
 * submit more SQEs than the ring holds returns at once without waiting,
 * so the idle thread would spin. */
static void blitz__uring_settle_claim(blitz__ring *r, uint32_t n, uint32_t done) {
    if (done >= n)
        return;
    blitz__mutex_lock(&r->sq_lock);
    uint32_t left = r->sq_tail_local - blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
    uint32_t hint = blitz__u32_load(&r->to_submit, BLITZ__RELAXED);
    if (left > hint)
        blitz__u32_fetch_add(&r->to_submit, left - hint, BLITZ__RELAXED);
    blitz__mutex_unlock(&r->sq_lock);
}

BLITZ_PRIVATE void blitz__uring_flush(blitz__ring *r) {
    if (!blitz__u32_load(&r->to_submit, BLITZ__RELAXED))
        return;
    blitz__mutex_lock(&r->sq_lock);
    blitz__uring_flush_locked(r);
    blitz__mutex_unlock(&r->sq_lock);
}

/* Caller holds sq_lock. */
static struct io_uring_sqe *blitz__uring_sqe_or_flush(blitz__ring *r) {
    struct io_uring_sqe *sqe = blitz__uring_get_sqe(r);
    if (!sqe) {
        blitz__uring_flush_locked(r);
        sqe = blitz__uring_get_sqe(r);
    }
    return sqe;
}

/* 1 when `n` SQEs can be claimed back to back (after a flush if need be):
 * a linked pair must reach the kernel in one submission, or the link is
 * cut. Caller holds sq_lock. */
static int blitz__uring_room(blitz__ring *r, uint32_t n) {
    for (int round = 0; round < 2; round++) {
        uint32_t head = blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
        if (r->sq_entries - (r->sq_tail_local - head) >= n)
            return 1;
        if (round == 0)
            blitz__uring_flush_locked(r);
    }
    return 0;
}

/* Queues copies of the `n` linked SQEs in `r` back to back, so they
 * reach the kernel in one submission. BLITZ_EBUSY when there is no
 * room even after a flush. */
BLITZ_PRIVATE int blitz__uring_queue_n(blitz__ring *r, const struct io_uring_sqe *sqes, uint32_t n,
                                       int flush) {
    blitz__mutex_lock(&r->sq_lock);
    int ok = blitz__uring_room(r, n);
    if (ok) {
        for (uint32_t i = 0; i < n; i++) {
            *blitz__uring_get_sqe(r) = sqes[i];
            if (i + 1 < n)
                blitz__uring_stage(r);
        }
        blitz__uring_push(r);
        if (flush || blitz__u32_load(&r->to_submit, BLITZ__RELAXED) >= BLITZ__URING_BATCH)
            blitz__uring_flush_locked(r);
    }
    blitz__mutex_unlock(&r->sq_lock);
    return ok ? BLITZ_OK : BLITZ_EBUSY;
}

/* Queues a copy of `sqe` in `r`; submits at once when `flush` is set or a
 * batch is full. BLITZ_EBUSY when the ring has no room even after a
 * flush. */
BLITZ_PRIVATE int blitz__uring_queue(blitz__ring *r, const struct io_uring_sqe *sqe, int flush) {
    blitz__mutex_lock(&r->sq_lock);
    struct io_uring_sqe *slot = blitz__uring_sqe_or_flush(r);
    if (slot) {
        *slot = *sqe;
        blitz__uring_push(r);
        if (flush || blitz__u32_load(&r->to_submit, BLITZ__RELAXED) >= BLITZ__URING_BATCH)
            blitz__uring_flush_locked(r);
    }
    blitz__mutex_unlock(&r->sq_lock);
    return slot ? BLITZ_OK : BLITZ_EBUSY;
}

/* A multishot POLL_ADD of `fd` (POLLIN) tagged `ud`. */
static int blitz__uring_arm_poll(blitz__ring *r, int fd, uint64_t ud) {
    if (ud == BLITZ__UD_WAKE || ud == BLITZ__UD_WAKE_ALT) {
        blitz__u64_store(&r->wake_armer, blitz__thread_tag(), BLITZ__RELAXED);
        blitz__u32_store(&r->wake_ud, (uint32_t)ud, BLITZ__RELAXED);
    }
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_POLL_ADD;
    sqe.fd = fd;
    sqe.poll32_events = POLLIN;
    sqe.len = IORING_POLL_ADD_MULTI;
    sqe.user_data = ud;
    return blitz__uring_queue(r, &sqe, 1);
}

static void blitz__ring_unmap(blitz__ring *r) {
    if (r->sqes)
        munmap(r->sqes, r->sqes_len);
    if (r->cq_map && r->cq_map != r->sq_map)
        munmap(r->cq_map, r->cq_map_len);
    if (r->sq_map)
        munmap(r->sq_map, r->sq_map_len);
    r->sqes = NULL;
    r->cq_map = r->sq_map = NULL;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

static void *blitz__ring_mmap(int fd, size_t len, off_t off) {
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off);
    return m == MAP_FAILED ? NULL : m;
}

/* Creates one ring; `coop`: try COOP_TASKRUN | TASKRUN_FLAG first. */
static int blitz__ring_init(blitz__io *io, blitz__ring *r, int coop) {
    struct io_uring_params p;
    int fd = -1;
    for (int attempt = coop ? 0 : 1; attempt < 2 && fd < 0; attempt++) {
        memset(&p, 0, sizeof p);
        p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
        if (attempt == 0)
            p.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
        p.cq_entries = BLITZ__URING_CQ_ENTRIES;
        fd = blitz__fd_above_stdio((int)syscall(SYS_io_uring_setup, BLITZ_URING_ENTRIES, &p));
        /* Before Linux 5.19 the flags are EINVAL: a plain ring instead. */
        if (fd < 0 && (attempt == 1 || errno != EINVAL))
            return blitz__from_errno(errno);
    }
    r->fd = fd;
    int rc = BLITZ_OK;
    uint32_t need = IORING_FEAT_EXT_ARG | IORING_FEAT_FAST_POLL | IORING_FEAT_NODROP;
    if ((p.features & need) != need)
        rc = BLITZ_ENOSYS;
    /* A seccomp filter may let io_uring_setup through and refuse
     * io_uring_enter, without which the ring never moves (workers would
     * retry it forever): the backend is only taken once an enter worked. */
    if (rc == BLITZ_OK && blitz__uring_enter(fd, 0, 0, 0, NULL, 0) < 0)
        rc = blitz__from_errno(errno);
    if (rc == BLITZ_OK && r->index == 0)
        rc = blitz__uring_probe(io, fd);
    if (rc == BLITZ_OK)
        blitz__ufile_ring_init(io, fd, p.sq_entries);
    if (rc == BLITZ_OK) {
        io->skip_cancel_cqe = (p.features & IORING_FEAT_CQE_SKIP) != 0;
        r->sq_entries = p.sq_entries;
        r->cq_entries = p.cq_entries;
        r->sq_map_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
        r->cq_map_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
        if ((p.features & IORING_FEAT_SINGLE_MMAP) && r->cq_map_len > r->sq_map_len)
            r->sq_map_len = r->cq_map_len;
        r->sq_map = blitz__ring_mmap(fd, r->sq_map_len, IORING_OFF_SQ_RING);
        if (!r->sq_map)
            rc = blitz__from_errno(errno);
    }
    if (rc == BLITZ_OK) {
        if (p.features & IORING_FEAT_SINGLE_MMAP) {
            r->cq_map = r->sq_map;
        } else {
            r->cq_map = blitz__ring_mmap(fd, r->cq_map_len, IORING_OFF_CQ_RING);
            if (!r->cq_map)
                rc = blitz__from_errno(errno);
        }
    }
    if (rc == BLITZ_OK) {
        r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
        r->sqes = (struct io_uring_sqe *)blitz__ring_mmap(fd, r->sqes_len, IORING_OFF_SQES);
        if (!r->sqes)
            rc = blitz__from_errno(errno);
    }
    if (rc != BLITZ_OK) {
        blitz__ring_unmap(r);
        return rc;
    }
    char *sq = (char *)r->sq_map, *cq = (char *)r->cq_map;
    r->sq_head = (uint32_t *)(void *)(sq + p.sq_off.head);
    r->sq_tail = (uint32_t *)(void *)(sq + p.sq_off.tail);
    r->sq_mask = (uint32_t *)(void *)(sq + p.sq_off.ring_mask);
    r->sq_array = (uint32_t *)(void *)(sq + p.sq_off.array);
    r->sq_flags = (uint32_t *)(void *)(sq + p.sq_off.flags);
    r->cq_head = (uint32_t *)(void *)(cq + p.cq_off.head);
    r->cq_tail = (uint32_t *)(void *)(cq + p.cq_off.tail);
    r->cq_mask = (uint32_t *)(void *)(cq + p.cq_off.ring_mask);
    r->cq_flags = (uint32_t *)(void *)(cq + p.cq_off.flags);
    r->cqes = (struct io_uring_cqe *)(void *)(cq + p.cq_off.cqes);
    r->sq_tail_local = *r->sq_tail;
    return BLITZ_OK;
}

static void blitz__rings_free(blitz__io *io) {
    for (uint32_t i = 0; i < io->nrings; i++) {
        blitz__ring *r = &io->rings[i];
        blitz__ring_unmap(r);
        blitz__uring_pbuf_free(r);
        if (r->wake_fd >= 0 && r->wake_fd != io->wake_fd)
            close(r->wake_fd);
        blitz__mutex_destroy(&r->sq_lock);
        blitz__mutex_destroy(&r->reap_lock);
        blitz__mutex_destroy(&r->pbuf_lock);
    }
    blitz__free(io->rings);
    io->rings = NULL;
    io->nrings = 0;
    io->shared = NULL;
    if (io->shared_efd >= 0)
        close(io->shared_efd);
    io->shared_efd = -1;
}

/* `workers`: the runtime's worker count (0 for a current-thread runtime). */
BLITZ_PRIVATE int blitz__uring_init(blitz__io *io, uint32_t workers) {
    io->shared_efd = -1;
    io->nrings = workers + 1;
    io->rings = (blitz__ring *)blitz__calloc(sizeof(blitz__ring) * io->nrings);
    if (!io->rings) {
        io->nrings = 0;
        return BLITZ_ENOMEM;
    }
    io->shared = &io->rings[workers];
    for (uint32_t i = 0; i < io->nrings; i++) {
        blitz__ring *r = &io->rings[i];
        r->fd = -1;
        r->wake_fd = -1;
        r->index = i;
        blitz__mutex_init(&r->sq_lock);
        blitz__mutex_init(&r->reap_lock);
        blitz__mutex_init(&r->pbuf_lock);
    }
    int rc = BLITZ_OK;
    if (workers) {
        io->shared_efd = blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
        if (io->shared_efd < 0)
            rc = blitz__from_errno(errno);
    }
    /* Ring 0 first: it probes the opcodes. */
    for (uint32_t i = 0; i < io->nrings && rc == BLITZ_OK; i++) {
        blitz__ring *r = &io->rings[i];
        int worker = i < workers;
        int coop = worker || !workers;
        rc = blitz__ring_init(io, r, coop);
        if (rc != BLITZ_OK)
            break;
        r->coop = coop;
        r->wake_fd =
            worker ? blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) : io->wake_fd;
        if (r->wake_fd < 0)
            rc = blitz__from_errno(errno);
        /* A worker ring's polls are armed by its worker when it starts
         * (blitz__uring_worker_start): the kernel runs a poll's task work
         * on the thread that submitted it, and this thread may sleep
         * elsewhere for good (measured: the thread that created the
         * runtime, blocked in block_on, was woken by signal-like task
         * work for every worker wake-up, 80-100k times per echo run). */
        if (rc == BLITZ_OK && !worker)
            rc = blitz__uring_arm_poll(r, r->wake_fd, BLITZ__UD_WAKE);
        if (rc == BLITZ_OK && !worker && workers &&
            syscall(SYS_io_uring_register, r->fd, IORING_REGISTER_EVENTFD, &io->shared_efd, 1) < 0)
            rc = blitz__from_errno(errno);
    }
    if (rc != BLITZ_OK)
        blitz__rings_free(io);
    return rc;
}

BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io) {
    blitz__rings_free(io);
}

/* The ring of a readiness backend that carries file ops only. Not
 * COOP_TASKRUN: its submitters sleep in the other backend's wait, and
 * any thread reaps it (reap_lock, tried). */
BLITZ_PRIVATE int blitz__uring_files_init(blitz__io *io) {
    io->nrings = 1;
    io->rings = (blitz__ring *)blitz__calloc(sizeof(blitz__ring));
    if (!io->rings) {
        io->nrings = 0;
        return BLITZ_ENOMEM;
    }
    blitz__ring *r = io->shared = &io->rings[0];
    r->fd = r->wake_fd = -1;
    blitz__mutex_init(&r->sq_lock);
    blitz__mutex_init(&r->reap_lock);
    blitz__mutex_init(&r->pbuf_lock);
    io->shared_efd = blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    int rc = io->shared_efd < 0 ? blitz__from_errno(errno) : blitz__ring_init(io, r, 0);
    if (rc == BLITZ_OK &&
        syscall(SYS_io_uring_register, r->fd, IORING_REGISTER_EVENTFD, &io->shared_efd, 1) < 0)
        rc = blitz__from_errno(errno);
    if (rc != BLITZ_OK) {
        blitz__rings_free(io);
        io->uf_ops = 0;
    }
    return rc;
}

BLITZ_PRIVATE void blitz__uring_files_destroy(blitz__io *io) {
    if (io->rings)
        blitz__rings_free(io);
}

/* On worker `index`'s thread, before it runs anything: arms its ring's
 * polls of its eventfd and of the shared ring's eventfd (an eventfd that
 * was written before is readable at once, so no wake is lost). */
BLITZ_PRIVATE void blitz__uring_worker_start(blitz__io *io, uint32_t index) {
    if (index + 1 >= io->nrings)
        return;
    blitz__ring *r = &io->rings[index];
    /* EBUSY (no room even after a flush) cannot happen on a fresh ring. */
    (void)blitz__uring_arm_poll(r, r->wake_fd, BLITZ__UD_WAKE);
    (void)blitz__uring_arm_poll(r, io->shared_efd, BLITZ__UD_SHARED);
}

/* The ring the calling thread submits to: a worker of this runtime its
 * own (`batches`: it submits at its next tick or park), the current-thread
 * driver the shared one (batched too), any other thread the shared one at
 * once. */
BLITZ_PRIVATE blitz__ring *blitz__uring_mine(blitz__io *io, int *batches) {
    blitz__context *ctx = blitz__context_get();
    /* A readiness backend's file ring has nobody to flush a batch. */
    if (ctx && ctx->rt == io->rt && (ctx->worker || ctx->ct_driver) && io->be->completion) {
        if (batches)
            *batches = 1;
        if (ctx->worker && (uint32_t)ctx->worker_index < io->nrings - 1)
            return &io->rings[ctx->worker_index];
        return io->shared;
    }
    if (batches)
        *batches = 0;
    return io->shared;
}

BLITZ_PRIVATE blitz__ring *blitz__uring_op_ring(blitz__io *io, const blitz_io *op) {
    uint32_t i = op->blitz__flags >> BLITZ__OPF_RING_SHIFT;
    return i && i <= io->nrings ? &io->rings[i - 1] : io->shared;
}

/* Fills and queues the SQE of `op` in `r`. Caller holds the op's socket
 * lock. */
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz__ring *r, blitz_io *op, int flush) {
    blitz_socket *s = op->blitz__sock;
    int linked =
        op->blitz__kind == BLITZ__OP_CONNECT && (op->blitz__flags & BLITZ__OPF_LIMIT_KERNEL);
    blitz__mutex_lock(&r->sq_lock);
    struct io_uring_sqe *sqe =
        (!linked || blitz__uring_room(r, 2)) ? blitz__uring_sqe_or_flush(r) : NULL;
    if (!sqe) {
        blitz__mutex_unlock(&r->sq_lock);
        return BLITZ_EBUSY;
    }
    sqe->fd = s->fd;
    sqe->user_data = (uint64_t)(uintptr_t)op;
    switch (op->blitz__kind) {
    case BLITZ__OP_RECV:
        sqe->opcode = IORING_OP_RECV;
        sqe->addr = (uint64_t)(uintptr_t)op->blitz__buf;
        sqe->len = (uint32_t)(op->blitz__len > 0x7ffff000u ? 0x7ffff000u : op->blitz__len);
        /* A stream receive is submitted when the socket is most likely
         * empty (the last one came back short, or the system call just
         * said EAGAIN): wait for data at once instead of the kernel's
         * failing first attempt. */
        if (io->ms_accept && s->type == SOCK_STREAM)
            sqe->ioprio = IORING_RECVSEND_POLL_FIRST;
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
        if (linked) {
            /* The time limit: a LINK_TIMEOUT right behind the CONNECT
             * cancels it (BLITZ_ECANCELED) when it fires first. The kernel
             * copies the timespec when it takes the SQEs; the op keeps it
             * until then. Its own completion is of no interest. */
            sqe->flags |= IOSQE_IO_LINK;
            blitz__uring_stage(r);
            sqe = blitz__uring_get_sqe(r);
            sqe->opcode = IORING_OP_LINK_TIMEOUT;
            sqe->fd = -1;
            sqe->addr = (uint64_t)(uintptr_t)((char *)op->blitz__scratch + BLITZ__CONNECT_TS_AT);
            sqe->len = 1;
            sqe->user_data = BLITZ__UD_IGNORE;
            blitz__u64_fetch_add(&io->link_timeout_count, 1, BLITZ__RELAXED);
        }
        break;
    }
    case BLITZ__OP_FD_READ:
    case BLITZ__OP_FD_WRITE:
    case BLITZ__OP_FD_WRITE_ALL:
    case BLITZ__OP_FD_POLL:
    case BLITZ__OP_RECV_BUF:
        sqe->opcode = IORING_OP_POLL_ADD;
        sqe->poll32_events = op->blitz__dir == BLITZ__DIR_WRITE ? POLLOUT : POLLIN;
        break;
    default:
        break;
    }
    blitz__uring_push(r);
    if (flush || blitz__u32_load(&r->to_submit, BLITZ__RELAXED) >= BLITZ__URING_BATCH)
        blitz__uring_flush_locked(r);
    blitz__mutex_unlock(&r->sq_lock);
    return BLITZ_OK;
}

/* Arms a listener's multishot accept in `r`. Caller holds the socket's
 * lock. */
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz__ring *r, blitz_socket *s) {
    (void)io;
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_ACCEPT;
    sqe.fd = s->fd;
    sqe.accept_flags = SOCK_NONBLOCK | SOCK_CLOEXEC;
    sqe.ioprio = IORING_ACCEPT_MULTISHOT;
    sqe.user_data = (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS;
    int rc = blitz__uring_queue(r, &sqe, 1);
    if (rc == BLITZ_OK)
        s->ms_ring = r->index;
    return rc;
}

/* Arms a stream socket's multishot receive in `r`, with the ring's
 * provided buffers. Caller holds the socket's lock. */
BLITZ_PRIVATE int blitz__uring_arm_recv(blitz__io *io, blitz__ring *r, blitz_socket *s, int flush) {
    (void)io;
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_RECV;
    sqe.fd = s->fd;
    /* Armed when the socket is most likely empty: wait for data first. */
    sqe.ioprio = IORING_RECV_MULTISHOT | IORING_RECVSEND_POLL_FIRST;
    sqe.flags = IOSQE_BUFFER_SELECT;
    sqe.buf_group = 0;
    sqe.user_data = (uint64_t)(uintptr_t)s | BLITZ__UD_RECV_MS;
    return blitz__uring_queue(r, &sqe, flush);
}

/* ---- provided buffers of multishot receives ---------------------------------------------- */

static size_t blitz__pbuf_ring_len(void) {
    size_t len = BLITZ_URING_RECV_BUFS * sizeof(blitz__pbuf_entry);
    return (len + 4095u) & ~(size_t)4095u;
}

static uint16_t *blitz__pbuf_tail_word(blitz__ring *r) {
    return (uint16_t *)(void *)((char *)r->pbuf_ring + 14);
}

/* Sets up the ring's buffer pool on first use; 1 when it is ready. A
 * kernel that refuses it leaves the ring without one (single-shot
 * receives). */
BLITZ_PRIVATE int blitz__uring_pbuf_ready(blitz__ring *r) {
    /* Acquire: pairs with the release below, so the pool's pointers are
     * seen set up. */
    uint32_t st = blitz__u32_load(&r->pbuf_state, BLITZ__ACQUIRE);
    if (st != BLITZ__PBUF_NONE)
        return st == BLITZ__PBUF_READY;
    blitz__mutex_lock(&r->pbuf_lock);
    st = blitz__u32_load(&r->pbuf_state, BLITZ__RELAXED);
    if (st == BLITZ__PBUF_NONE) {
        size_t mem_len = (size_t)BLITZ_URING_RECV_BUFS * BLITZ_URING_RECV_BUF_SIZE;
        void *ring = mmap(NULL, blitz__pbuf_ring_len(), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        void *mem = mmap(NULL, mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int ok = ring != MAP_FAILED && mem != MAP_FAILED;
        if (ok) {
            r->pbuf_ring = ring;
            r->pbuf_mem = (char *)mem;
            blitz__pbuf_entry *e = (blitz__pbuf_entry *)ring;
            /* A variable: with the pool configured to 0 a constant bound
             * would be a comparison that is always false (-Wtype-limits). */
            uint32_t nbufs = BLITZ_URING_RECV_BUFS;
            for (uint32_t i = 0; i < nbufs; i++) {
                e[i].addr =
                    (uint64_t)(uintptr_t)(r->pbuf_mem + (size_t)i * BLITZ_URING_RECV_BUF_SIZE);
                e[i].len = BLITZ_URING_RECV_BUF_SIZE;
                e[i].bid = (uint16_t)i;
            }
            r->pbuf_tail = (uint16_t)BLITZ_URING_RECV_BUFS;
            blitz__u16_field_store(blitz__pbuf_tail_word(r), r->pbuf_tail, BLITZ__RELEASE);
            blitz__pbuf_reg reg;
            memset(&reg, 0, sizeof reg);
            reg.ring_addr = (uint64_t)(uintptr_t)ring;
            reg.ring_entries = BLITZ_URING_RECV_BUFS;
            reg.bgid = 0;
            ok = syscall(SYS_io_uring_register, r->fd, IORING_REGISTER_PBUF_RING, &reg, 1) == 0;
        }
        if (!ok) {
            if (ring != MAP_FAILED)
                munmap(ring, blitz__pbuf_ring_len());
            if (mem != MAP_FAILED)
                munmap(mem, mem_len);
            r->pbuf_ring = NULL;
            r->pbuf_mem = NULL;
        }
        st = ok ? BLITZ__PBUF_READY : BLITZ__PBUF_FAIL;
        blitz__u32_store(&r->pbuf_state, st, BLITZ__RELEASE);
    }
    blitz__mutex_unlock(&r->pbuf_lock);
    return st == BLITZ__PBUF_READY;
}

BLITZ_PRIVATE const char *blitz__uring_pbuf_addr(const blitz__ring *r, uint32_t bid) {
    return r->pbuf_mem + (size_t)bid * BLITZ_URING_RECV_BUF_SIZE;
}

/* Gives buffer `bid` back to the kernel. Any thread. */
BLITZ_PRIVATE void blitz__uring_pbuf_put(blitz__ring *r, uint32_t bid) {
    blitz__mutex_lock(&r->pbuf_lock);
    blitz__pbuf_entry *e =
        &((blitz__pbuf_entry *)r->pbuf_ring)[r->pbuf_tail & (BLITZ_URING_RECV_BUFS - 1u)];
    /* Field by field: the first entry's last field is the tail. */
    e->addr = (uint64_t)(uintptr_t)blitz__uring_pbuf_addr(r, bid);
    e->len = BLITZ_URING_RECV_BUF_SIZE;
    e->bid = (uint16_t)bid;
    r->pbuf_tail++;
    /* Release: the kernel reads the tail with acquire, then the entry. */
    blitz__u16_field_store(blitz__pbuf_tail_word(r), r->pbuf_tail, BLITZ__RELEASE);
    blitz__mutex_unlock(&r->pbuf_lock);
}

/* After the ring's descriptor is closed. */
BLITZ_PRIVATE void blitz__uring_pbuf_free(blitz__ring *r) {
    if (r->pbuf_ring)
        munmap(r->pbuf_ring, blitz__pbuf_ring_len());
    if (r->pbuf_mem)
        munmap(r->pbuf_mem, (size_t)BLITZ_URING_RECV_BUFS * BLITZ_URING_RECV_BUF_SIZE);
    r->pbuf_ring = NULL;
    r->pbuf_mem = NULL;
}

static void blitz__uring_flush_kick(void *r) {
    blitz__uring_flush((blitz__ring *)r);
}

/* ASYNC_CANCEL by user_data in `r`, submitted at once (whoever cancels may
 * wait for the result), or at the end of the caller's deferral span
 * (core/defer.c): the submission wakes the ring's owner, whose reaping of
 * the cancelled op needs the op's lock the caller may hold. A late
 * submission cannot hit a newer op at the same address: that op's SQE
 * goes to this ring after this one. Any thread: the cancel runs in the
 * submitting thread, the cancelled op's completion goes to the ring's
 * owner. */
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, blitz__ring *r, uint64_t ud) {
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_ASYNC_CANCEL;
    sqe.fd = -1;
    sqe.addr = ud;
    sqe.user_data = BLITZ__UD_IGNORE;
    if (io->skip_cancel_cqe)
        sqe.flags = IOSQE_CQE_SKIP_SUCCESS;
    if (blitz__uring_queue(r, &sqe, 0) == BLITZ_OK)
        blitz__defer_kick(blitz__uring_flush_kick, r);
}

/* A thread starts driving a current-thread runtime. Its ring is
 * COOP_TASKRUN: the task work of the poll that wakes the driver runs on
 * the thread that armed that poll, and without interrupting it, so a poll
 * armed by a previous driver (or the runtime's creator) now computing
 * elsewhere would hold this driver's wake-ups back until its next system
 * call. This thread arms its own poll under the other tag and cancels the
 * old one (whose end, when it comes, is not re-armed). */
BLITZ_PRIVATE void blitz__uring_driver_start(blitz__io *io) {
    blitz__ring *r = io->shared;
    uint64_t me = blitz__thread_tag();
    if (!r || !r->coop || blitz__u64_load(&r->wake_armer, BLITZ__RELAXED) == me)
        return;
    /* The driver is the only thread that reaps and re-arms this ring's
     * polls, so the tag cannot change under us. */
    blitz__mutex_lock(&r->reap_lock);
    uint32_t old = blitz__u32_load(&r->wake_ud, BLITZ__RELAXED);
    uint32_t tag = old == BLITZ__UD_WAKE ? BLITZ__UD_WAKE_ALT : BLITZ__UD_WAKE;
    if (blitz__uring_arm_poll(r, r->wake_fd, tag) == BLITZ_OK)
        blitz__uring_cancel_ud(io, r, old);
    blitz__mutex_unlock(&r->reap_lock);
}

/* ASYNC_CANCEL of an op in flight. Caller holds the op's lock. */
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op) {
    blitz__uring_cancel_ud(io, blitz__uring_op_ring(io, op), (uint64_t)(uintptr_t)op);
}

/* Completions the kernel holds back because the CQ ring was full: NODROP
 * keeps them and says so in the SQ flags, and they reach the ring only
 * when someone enters the kernel for events. Nobody parks in the shared
 * ring, so its reaper must ask. */
static int blitz__uring_cq_overflow(const blitz__ring *r) {
    return (blitz__u32_field_load(r->sq_flags, BLITZ__RELAXED) & IORING_SQ_CQ_OVERFLOW) != 0;
}

BLITZ_PRIVATE int blitz__uring_cq_ready(const blitz__ring *r) {
    return blitz__u32_field_load(r->cq_head, BLITZ__RELAXED) !=
               blitz__u32_field_load(r->cq_tail, BLITZ__ACQUIRE) ||
           blitz__uring_cq_overflow(r);
}

/* Dispatches the completions in `r`. Caller holds r->reap_lock. Returns 1
 * when the shared ring signalled completions. */
static int blitz__uring_dispatch(blitz__io *io, blitz__ring *r) {
    int shared = 0, flushed = 0;
    for (;;) {
        struct {
            uint64_t user_data;
            int32_t res;
            uint32_t flags;
        } batch[64];
        uint32_t head = *r->cq_head;
        uint32_t tail = blitz__u32_field_load(r->cq_tail, BLITZ__ACQUIRE);
        uint32_t n = 0;
        while (head != tail && n < 64) {
            const struct io_uring_cqe *c = &r->cqes[head & *r->cq_mask];
            batch[n].user_data = c->user_data;
            /* The kernel's -errno becomes blitz's code here, once. */
            batch[n].res = c->res < 0 ? blitz__from_errno(-c->res) : c->res;
            batch[n].flags = c->flags;
            n++;
            head++;
        }
        if (n == 0 && !flushed && blitz__uring_cq_overflow(r)) {
            /* The ring is empty now: the held-back completions fit. */
            flushed = 1;
            blitz__uring_enter(r->fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
            continue;
        }
        if (n == 0)
            return shared;
        blitz__u32_field_store(r->cq_head, head, BLITZ__RELEASE);
        int rearm_wake = 0, rearm_shared = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t ud = batch[i].user_data;
            int more = (batch[i].flags & IORING_CQE_F_MORE) != 0;
            if (ud == BLITZ__UD_IGNORE)
                continue;
            if (ud == BLITZ__UD_WAKE || ud == BLITZ__UD_WAKE_ALT) {
                blitz__io_drain_fd(r->wake_fd);
                /* A replaced poll's end is not re-armed. */
                rearm_wake |= !more && ud == blitz__u32_load(&r->wake_ud, BLITZ__RELAXED);
                continue;
            }
            if (ud == BLITZ__UD_SHARED) {
                shared = 1;
                rearm_shared |= !more;
                continue;
            }
            if ((ud & BLITZ__UD_TAG) == BLITZ__UD_FILE) {
                blitz__ufile_complete(
                    io, (blitz__ufile *)(uintptr_t)(ud & ~(uint64_t)BLITZ__UD_TAG), batch[i].res);
                continue;
            }
            if ((ud & BLITZ__UD_TAG) == BLITZ__UD_RECV_MS) {
                blitz__io_recv_ms(io, r, (blitz_socket *)(uintptr_t)(ud & ~(uint64_t)BLITZ__UD_TAG),
                                  batch[i].res, batch[i].flags);
                continue;
            }
            if (ud & BLITZ__UD_ACCEPT_MS) {
                blitz__io_accept_ms(io, r, (blitz_socket *)(uintptr_t)(ud & ~(uint64_t)7),
                                    batch[i].res, batch[i].flags);
                continue;
            }
            blitz__io_complete(io, (blitz_io *)(uintptr_t)ud, batch[i].res, batch[i].flags);
        }
        if (rearm_wake)
            blitz__uring_arm_poll(r, r->wake_fd, blitz__u32_load(&r->wake_ud, BLITZ__RELAXED));
        if (rearm_shared)
            blitz__uring_arm_poll(r, io->shared_efd, BLITZ__UD_SHARED);
    }
}

/* Reaps the shared ring if nobody else is at it. */
static void blitz__uring_reap_shared(blitz__io *io) {
    blitz__ring *r = io->shared;
    do {
        if (!blitz__mutex_trylock(&r->reap_lock))
            return;
        /* Drained first: a completion posted after this signals again. */
        if (io->shared_efd >= 0)
            blitz__io_drain_fd(io->shared_efd);
        blitz__uring_dispatch(io, r);
        blitz__mutex_unlock(&r->reap_lock);
        /* A reaper that found the lock held gave up on its signal: the
         * fence orders this unlock before the look at the tail, so either
         * it retries after the unlock or this sees its completion. */
        blitz__fence_seq_cst();
    } while (blitz__uring_cq_ready(r));
}

/* Called after the eventfd is unmuted and the ring reaped. A completion
 * posted while muted signalled nobody; the reap saw it unless the
 * kernel's tail store and its read of IORING_CQ_EVENTFD_DISABLED can
 * pass each other. Kernel source: 6.18's io_cq_unlock_post and
 * __io_cq_unlock_post publish the tail (io_commit_cqring), then
 * io_cqring_wake (a full barrier in wq_has_sleeper), then read the flag
 * (io_commit_cqring_flush, io_eventfd_signal); 6.1 has the flush before
 * the wake-up, but io_eventfd_flush_signal takes completion_lock (an
 * atomic) before io_eventfd_signal reads the flag. Neither is a
 * documented promise, so while ops of the ring are still unreaped this
 * signals the eventfd itself: a worker wakes and reaps (a wasted wake-up
 * at worst). */
static void blitz__uring_files_unmuted(blitz__io *io) {
    if (io->shared_efd < 0 || !blitz__u32_load(&io->shared_files, BLITZ__SEQ_CST))
        return;
    uint64_t one = 1;
    ssize_t w = write(io->shared_efd, &one, sizeof one);
    (void)w; /* EAGAIN: the count is already huge, a wake-up is due */
}

/* A thread that is not a worker (block_on) waits for the file ops it
 * submitted to the shared ring in that ring, not on its futex: the
 * kernel's file worker then wakes it directly, instead of the eventfd
 * waking every parked worker (whose rings poll it, or epoll), one of
 * which reaps and wakes the task's thread (measured: four thread wake-ups
 * and ~90 us per op, against ~15 us for a blocking-pool job). While it
 * waits it holds reap_lock and mutes the eventfd (IORING_CQ_EVENTFD_
 * DISABLED), so workers are not woken for completions it reaps; it reaps
 * everything the ring holds, whoever submitted it. `word` still holding
 * `seq` is the caller's condition to sleep; a waker that changes it
 * pokes the ring (blitz__uring_poke_files). Returns 0 when it did not
 * wait (no file op in flight there, or another thread reaps). */
BLITZ_PRIVATE int blitz__uring_wait_files(blitz__io *io, const blitz__atomic_u32 *word,
                                          uint32_t seq, uint64_t timeout_ns, uint32_t spin) {
    blitz__ring *r = io->shared;
    if (!r || !blitz__u32_load(&io->shared_files, BLITZ__RELAXED))
        return 0;
    /* Held only for a dispatch, or by another such waiter until a
     * completion or a poke (the word moved) wakes it. */
    blitz__mutex_lock(&r->reap_lock);
    /* Seq_cst: either this load of `word` sees the waker's change, or the
     * waker sees `shared_waiter` and pokes. */
    blitz__u32_store(&io->shared_waiter, 1, BLITZ__SEQ_CST);
    uint32_t f = blitz__u32_field_load(r->cq_flags, BLITZ__RELAXED);
    blitz__u32_field_store(r->cq_flags, f | IORING_CQ_EVENTFD_DISABLED, BLITZ__RELAXED);
    blitz__fence_seq_cst();
    /* Yield a while before sleeping: on an idle machine the kernel's
     * worker runs on another CPU and completes within microseconds, and
     * waking this thread from a halted vCPU would cost tens of them; on a
     * busy one the yield lets that worker run here. */
    for (uint32_t i = 0;
         i < spin && blitz__u32_load(word, BLITZ__SEQ_CST) == seq && !blitz__uring_cq_ready(r); i++)
        blitz__yield();
    if (blitz__u32_load(word, BLITZ__SEQ_CST) == seq && !blitz__uring_cq_ready(r)) {
        struct __kernel_timespec ts;
        struct io_uring_getevents_arg ea;
        memset(&ea, 0, sizeof ea);
        ts.tv_sec = (long long)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long long)(timeout_ns % 1000000000u);
        ea.ts = (uint64_t)(uintptr_t)&ts;
        (void)blitz__uring_enter(r->fd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ea,
                                 sizeof ea);
    }
    blitz__u32_field_store(r->cq_flags, f & ~IORING_CQ_EVENTFD_DISABLED, BLITZ__RELAXED);
    blitz__u32_store(&io->shared_waiter, 0, BLITZ__RELAXED);
    /* The flag's store before the dispatch's read of the tail: a CQE the
     * kernel posted after seeing the mute is reaped here (see
     * blitz__uring_files_unmuted for the kernel's side). The wait itself
     * loses nothing: the kernel re-checks the CQ after queueing the
     * waiter (io_cqring_wait), and a missed wake-up would still end at
     * timeout_ns. */
    blitz__fence_seq_cst();
    (void)blitz__uring_dispatch(io, r);
    blitz__mutex_unlock(&r->reap_lock);
    blitz__fence_seq_cst();
    if (blitz__uring_cq_ready(r))
        blitz__uring_reap_shared(io);
    blitz__uring_files_unmuted(io);
    return 1;
}

/* A block_on thread submits a file op to the shared ring (or the file
 * ring) of a multi-thread runtime: the eventfd is muted from now on, not
 * only from its wait, or the kernel's worker, preempting it on its CPU,
 * would complete the op and wake the parked workers first. It waits next
 * (and reaps), or unmutes before it does anything else
 * (blitz__uring_files_unmute);
 * the completions of others' ops on the ring (the workers' on a readiness
 * backend's file ring) wait at most that long, and it reaps them too. */
BLITZ_PRIVATE void blitz__uring_files_mute(blitz__io *io) {
    blitz__ring *r = io->shared;
    if (!r || !io->rt->workers)
        return;
    uint32_t f = blitz__u32_field_load(r->cq_flags, BLITZ__RELAXED);
    if (!(f & IORING_CQ_EVENTFD_DISABLED))
        blitz__u32_field_store(r->cq_flags, f | IORING_CQ_EVENTFD_DISABLED, BLITZ__RELAXED);
}

/* Undoes blitz__uring_files_mute; completions that came meanwhile
 * signalled nobody, so they are reaped here. */
BLITZ_PRIVATE void blitz__uring_files_unmute(blitz__io *io) {
    blitz__ring *r = io->shared;
    if (!r || !r->cq_flags)
        return;
    uint32_t f = blitz__u32_field_load(r->cq_flags, BLITZ__RELAXED);
    if (!(f & IORING_CQ_EVENTFD_DISABLED))
        return;
    blitz__u32_field_store(r->cq_flags, f & ~IORING_CQ_EVENTFD_DISABLED, BLITZ__RELAXED);
    /* As at the end of blitz__uring_wait_files. */
    blitz__fence_seq_cst();
    if (blitz__uring_cq_ready(r))
        blitz__uring_reap_shared(io);
    blitz__uring_files_unmuted(io);
}

/* After a change of the word a thread may wait on in the shared ring
 * (blitz__uring_wait_files): wakes that thread with a NOP. */
BLITZ_PRIVATE void blitz__uring_poke_files(blitz__io *io) {
    if (!io->shared || !blitz__u32_load(&io->shared_waiter, BLITZ__SEQ_CST))
        return;
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_NOP;
    sqe.user_data = BLITZ__UD_IGNORE;
    (void)blitz__uring_queue(io->shared, &sqe, 1);
}

/* The calling thread's ring carries file ops in flight: 1 when it is its
 * own ring (a spin sees their completions, blitz__uring_ready_cheap), 2
 * when it is a readiness backend's file ring (a spin does not: their
 * completions wake the thread waiting in the backend). */
BLITZ_PRIVATE int blitz__uring_files_mine(blitz__io *io) {
    if (!io->shared || !blitz__u32_load(&blitz__uring_mine(io, NULL)->files, BLITZ__RELAXED))
        return 0;
    return io->be->completion ? 1 : 2;
}

/* A readiness backend's file ring signalled completions. */
BLITZ_PRIVATE void blitz__uring_files_reap(blitz__io *io) {
    blitz__uring_reap_shared(io);
}

/* Reaps without blocking (the start of a worker tick or a current-thread
 * driver round): the caller's own ring, then the shared one. */
BLITZ_PRIVATE void blitz__uring_poll(blitz__io *io) {
    blitz__ring *r = blitz__uring_mine(io, NULL);
    blitz__uring_flush(r);
    /* COOP_TASKRUN: task work of this thread's ops waits for a system
     * call; a worker or driver busy with tasks that make none runs it
     * here. */
    if (r->coop && (blitz__u32_field_load(r->sq_flags, BLITZ__RELAXED) & IORING_SQ_TASKRUN))
        blitz__uring_enter(r->fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
    int shared = 0;
    if (blitz__uring_cq_ready(r) && blitz__mutex_trylock(&r->reap_lock)) {
        blitz__wake_batch_begin();
        shared = blitz__uring_dispatch(io, r);
        blitz__wake_batch_end();
        blitz__mutex_unlock(&r->reap_lock);
    }
    if (r != io->shared && (shared || blitz__uring_cq_ready(io->shared))) {
        blitz__wake_batch_begin();
        blitz__uring_reap_shared(io);
        blitz__wake_batch_end();
    }
}

/* Completions wait in the caller's rings (no system call). */
BLITZ_PRIVATE int blitz__uring_ready_cheap(blitz__io *io) {
    blitz__ring *r = blitz__uring_mine(io, NULL);
    /* Not the shared ring's while a thread waits in it: that thread reaps
     * them, and a worker spinning on them would take its CPU. */
    return blitz__uring_cq_ready(r) ||
           (blitz__uring_cq_ready(io->shared) &&
            !blitz__u32_load(&io->shared_waiter, BLITZ__RELAXED)) ||
           (r->coop && (blitz__u32_field_load(r->sq_flags, BLITZ__RELAXED) & IORING_SQ_TASKRUN));
}

BLITZ_PRIVATE void blitz__uring_flush_mine(blitz__io *io) {
    blitz__uring_flush(blitz__uring_mine(io, NULL));
}

/* Parks the calling thread in its ring until a completion, an unpark of
 * `p` (its eventfd is this ring's wake_fd) or timeout_ns; pending SQEs go
 * to the kernel in the same system call. */
BLITZ_PRIVATE void blitz__uring_park(blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg) {
    blitz__ring *r = blitz__uring_mine(io, NULL);
    blitz__mutex_lock(&r->reap_lock);
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED_DRIVER, BLITZ__ACQ_REL) &&
        !blitz__uring_cq_ready(r)) {
        uint32_t n = blitz__uring_claim_all(r);
        struct __kernel_timespec ts;
        struct io_uring_getevents_arg ea;
        memset(&ea, 0, sizeof ea);
        if (timeout_ns != BLITZ__IO_FOREVER) {
            ts.tv_sec = (long long)(timeout_ns / 1000000000u);
            ts.tv_nsec = (long long)(timeout_ns % 1000000000u);
            ea.ts = (uint64_t)(uintptr_t)&ts;
        }
        int got = blitz__uring_enter(r->fd, n, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
                                     &ea, sizeof ea);
        /* The kernel returns how many it submitted, or an error when it
         * submitted none (then the wait may not have happened: EBUSY;
         * the caller's loop comes back). */
        blitz__uring_settle_claim(r, n, got > 0 ? (uint32_t)got : 0);
    }
    blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE);
    if (woke)
        woke(arg);
    blitz__wake_batch_begin();
    int shared = blitz__uring_dispatch(io, r);
    blitz__mutex_unlock(&r->reap_lock);
    if (r != io->shared && (shared || blitz__uring_cq_ready(io->shared)))
        blitz__uring_reap_shared(io);
    blitz__wake_batch_end();
}

/* Shutdown (the workers are gone): reaps every ring until the kernel
 * holds no op, for at most 5 s. */
BLITZ_PRIVATE void blitz__uring_drain(blitz__io *io) {
    uint64_t start = blitz__now_ns();
    for (;;) {
        for (uint32_t i = 0; i < io->nrings; i++) {
            blitz__ring *r = &io->rings[i];
            blitz__uring_flush(r);
            blitz__mutex_lock(&r->reap_lock);
            blitz__uring_dispatch(io, r);
            blitz__mutex_unlock(&r->reap_lock);
        }
        if (!blitz__u64_load(&io->inflight, BLITZ__ACQUIRE) ||
            blitz__now_ns() - start >= 5000000000ull)
            return;
        /* Wait in the rings in turn, briefly each. */
        for (uint32_t i = 0; i < io->nrings; i++) {
            blitz__ring *r = &io->rings[i];
            struct __kernel_timespec ts = {0, 2000000};
            struct io_uring_getevents_arg ea;
            memset(&ea, 0, sizeof ea);
            ea.ts = (uint64_t)(uintptr_t)&ts;
            if (!blitz__uring_cq_ready(r))
                blitz__uring_enter(r->fd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ea,
                                   sizeof ea);
        }
    }
}

#else

BLITZ_PRIVATE int blitz__uring_init(blitz__io *io, uint32_t workers) {
    (void)io;
    (void)workers;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE int blitz__uring_files_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_files_reap(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_wait_files(blitz__io *io, const blitz__atomic_u32 *word,
                                          uint32_t seq, uint64_t timeout_ns, uint32_t spin) {
    (void)spin;
    (void)io;
    (void)word;
    (void)seq;
    (void)timeout_ns;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_poke_files(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__uring_files_mute(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_files_mine(blitz__io *io) {
    (void)io;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_files_unmute(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__uring_files_destroy(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__uring_driver_start(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__uring_worker_start(blitz__io *io, uint32_t index) {
    (void)io;
    (void)index;
}
BLITZ_PRIVATE blitz__ring *blitz__uring_mine(blitz__io *io, int *batches) {
    (void)batches;
    return io->shared;
}
BLITZ_PRIVATE blitz__ring *blitz__uring_op_ring(blitz__io *io, const blitz_io *op) {
    (void)op;
    return io->shared;
}
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz__ring *r, blitz_io *op, int flush) {
    (void)io;
    (void)r;
    (void)op;
    (void)flush;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op) {
    (void)io;
    (void)op;
}
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz__ring *r, blitz_socket *s) {
    (void)io;
    (void)r;
    (void)s;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, blitz__ring *r, uint64_t ud) {
    (void)io;
    (void)r;
    (void)ud;
}
BLITZ_PRIVATE void blitz__uring_flush(blitz__ring *r) {
    (void)r;
}
BLITZ_PRIVATE int blitz__uring_cq_ready(const blitz__ring *r) {
    (void)r;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_poll(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_ready_cheap(blitz__io *io) {
    (void)io;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_flush_mine(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__uring_park(blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg) {
    (void)io;
    (void)p;
    (void)timeout_ns;
    (void)woke;
    (void)arg;
}
BLITZ_PRIVATE void blitz__uring_drain(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_pbuf_ready(blitz__ring *r) {
    (void)r;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_pbuf_put(blitz__ring *r, uint32_t bid) {
    (void)r;
    (void)bid;
}
BLITZ_PRIVATE const char *blitz__uring_pbuf_addr(const blitz__ring *r, uint32_t bid) {
    (void)r;
    (void)bid;
    return NULL;
}
BLITZ_PRIVATE void blitz__uring_pbuf_free(blitz__ring *r) {
    (void)r;
}
BLITZ_PRIVATE int blitz__uring_arm_recv(blitz__io *io, blitz__ring *r, blitz_socket *s, int flush) {
    (void)io;
    (void)r;
    (void)s;
    (void)flush;
    return BLITZ_ENOSYS;
}

#endif

/* ---- the driver's side of this backend ------------------------------------------------- */

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
    } else if (s->ms_spare >= 0) {
        r = s->ms_spare;
        s->ms_spare = -1;
    } else if (s->ms_nomem) {
        r = BLITZ_ENOMEM;
        s->ms_nomem--;
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
    if (res == BLITZ_ECANCELED && !s->closed && !blitz__u32_load(&io->shutdown, BLITZ__RELAXED))
        res = BLITZ_EAGAIN; /* not ours: re-armed by the next accept */
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
                (void)blitz__fifo_grow(&fds, &s->ms_head, s->ms_count, &s->ms_cap, sizeof(int), 16);
            s->ms_fds = (int *)fds;
            int kept = 1;
            if (s->ms_count < s->ms_cap) {
                s->ms_fds[(s->ms_head + s->ms_count) % s->ms_cap] = res;
                s->ms_count++;
            } else if (s->ms_spare < 0) {
                /* No memory to queue it: the connection is not lost but
                 * waits in the spare slot, and the multishot accept stops
                 * (below) so that later ones wait in the kernel's backlog
                 * until an accept asks again. */
                s->ms_spare = res;
            } else {
                /* Accepted in the same batch as the spare's: it cannot be
                 * kept, and an accept reports it, as the readiness
                 * backends do when they cannot make it a socket. */
                close(res);
                kept = 0;
            }
            if (waiter) {
                blitz__op_unlink(s, waiter);
                w = waiter->blitz__waker;
                waiter->blitz__waker = blitz_waker_noop();
                if (kept) {
                    blitz__op_set_state(waiter, BLITZ__IO_RETRY);
                } else {
                    waiter->blitz__res = BLITZ_ENOMEM;
                    blitz__op_set_state(waiter, BLITZ__IO_DONE);
                }
            } else if (!kept) {
                s->ms_nomem++;
            }
            if ((s->ms_count >= BLITZ__ACCEPT_QUEUE_MAX || s->ms_spare >= 0) && !ended &&
                !s->ms_cancelling) {
                s->ms_cancelling = 1;
                blitz__uring_cancel_ud(io, r, (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS);
            }
        }
    } else if (waiter && res != BLITZ_EAGAIN) {
        blitz__op_unlink(s, waiter);
        w = waiter->blitz__waker;
        waiter->blitz__waker = blitz_waker_noop();
        waiter->blitz__res = (res == BLITZ_ECANCELED && s->closed) ? BLITZ_ECLOSED : res;
        blitz__op_set_state(waiter, BLITZ__IO_DONE);
    } else if (res != BLITZ_EAGAIN && res != BLITZ_ECANCELED) {
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

/* The backend's submit: salvaged data, the multishot paths, a system call
 * that may finish at once, else an SQE. */
static blitz_poll blitz__uring_start(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__io *io = s->io;
    uint32_t k = op->blitz__kind;
    int64_t kept;
    if ((blitz__salvage_kind(k) || k == BLITZ__OP_FD_READ) && blitz__salvage_take(s, op, &kept)) {
        blitz__op_result(op, kept);
        return BLITZ_READY;
    }
    if (k == BLITZ__OP_RECV_BUF && blitz__recv_buf_salvage(s, op, &kept)) {
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
            int64_t r = blitz__op_attempt(op);
            if (r == BLITZ_EINTR)
                continue;
            if (r == BLITZ_EAGAIN) {
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

#if !defined(BLITZ_NO_IO_URING)
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
#else
static void blitz__sock_release_early(blitz_socket *s) {
    (void)s;
}
#endif

/* Under the socket's lock: the listener's multishot accept and the
 * socket's multishot receive end. */
static void blitz__uring_quiesce(blitz__io *io, blitz_socket *s) {
    if (s->ms_armed)
        blitz__uring_cancel_ud(io, &io->rings[s->ms_ring],
                               (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS);
    blitz__recv_ms_close(s);
}

/* A closing socket (its lock held; its in-flight ops' cancels are
 * submitted). The descriptor is closed when the last op lets go of it;
 * the kernel's accepts hold the listening socket until their cancels
 * complete, and meanwhile it would take connections only to reset them.
 * Shut down, it refuses new ones at once, as after a close on the other
 * backends. (Not an adopted listener: another process may share it.) */
static void blitz__uring_close(blitz__io *io, blitz_socket *s) {
    int armed = s->ms_armed;
    blitz__uring_quiesce(io, s);
    if (s->listening) {
        if (s->listen_own)
            (void)shutdown(s->fd, SHUT_RD);
        if (armed || s->ops)
            blitz__sock_release_early(s);
    }
}

/* The kernel times a connect with a LINK_TIMEOUT behind the CONNECT when
 * it has it and this thread parks in the ring it submits to (a worker,
 * the current-thread driver): a linked pair must reach the kernel in one
 * piece, and only the ring's parker submits outside the ring's lock. */
static int blitz__uring_limit_connect(blitz__io *io, blitz_io *op, int64_t limit_ns) {
#if !BLITZ__LINUX
    /* The ring never starts here (no kernel timespec type either). */
    (void)io;
    (void)op;
    (void)limit_ns;
    return 0;
#else
    _Static_assert(BLITZ__CONNECT_TS_AT + sizeof(struct __kernel_timespec) <=
                       sizeof(((blitz_io *)0)->blitz__scratch),
                   "a limited connect keeps its address, timer and timespec in the op");
    int parker = 0;
    (void)blitz__uring_mine(io, &parker);
    if (!parker || !io->link_timeout)
        return 0;
    struct __kernel_timespec *ts =
        (struct __kernel_timespec *)(void *)((char *)op->blitz__scratch + BLITZ__CONNECT_TS_AT);
    ts->tv_sec = (long long)(limit_ns / 1000000000);
    ts->tv_nsec = (long long)(limit_ns % 1000000000);
    return 1;
#endif
}

/* The shared ring polls io->wake_fd, an eventfd; each worker ring has its
 * own. */
static int blitz__uring_be_init(blitz__io *io) {
#if !defined(BLITZ_NO_IO_URING)
    io->wake_fd = io->wake_rd = blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (io->wake_fd < 0)
        return blitz__from_errno(errno);
    int rc = blitz__uring_init(io, io->rt->workers ? io->rt->num_workers : 0);
    if (rc != BLITZ_OK) {
        close(io->wake_fd);
        io->wake_fd = io->wake_rd = -1;
    }
    return rc;
#else
    (void)io;
    return BLITZ_ENOSYS;
#endif
}

static void blitz__uring_be_destroy(blitz__io *io) {
    blitz__uring_destroy(io);
    close(io->wake_fd);
}

static int blitz__uring_parks_workers(blitz__io *io) {
    return io->nrings > 1;
}

static int blitz__uring_wake_fd(const blitz__io *io, uint32_t index) {
    return index != UINT32_MAX ? io->rings[index].wake_fd : io->wake_fd;
}

static const blitz__io_backend blitz__uring_vtable = {
    .kind = BLITZ_BACKEND_IO_URING,
    .name = "io_uring",
    .alias = "uring",
    .completion = 1,
    .look_interval = 0,
    .init = blitz__uring_be_init,
    .destroy = blitz__uring_be_destroy,
    .submit = blitz__uring_start,
    .cancel = blitz__uring_submit_cancel,
    .close = blitz__uring_close,
    .quiesce = blitz__uring_quiesce,
    .limit_connect = blitz__uring_limit_connect,
    .poll = blitz__uring_poll,
    .park = blitz__uring_park,
    .ready_cheap = blitz__uring_ready_cheap,
    .parks_workers = blitz__uring_parks_workers,
    .worker_start = blitz__uring_worker_start,
    .driver_start = blitz__uring_driver_start,
    .after_drive = blitz__uring_poll,
    .flush = blitz__uring_flush_mine,
    .drain = blitz__uring_drain,
    .wake_fd = blitz__uring_wake_fd,
};

BLITZ_PRIVATE const blitz__io_backend *blitz__backend_ring(void) {
    return &blitz__uring_vtable;
}

#endif /* BLITZ__HAS_IO */
