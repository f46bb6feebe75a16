/* File operations on the io_uring backend: the kernel carries them out
 * (OPENAT, READ, STATX, ...), so a file op costs one SQE and one CQE
 * instead of a trip to a pool thread and back. Which ops the kernel has
 * is probed once, with the ring's other opcodes; the others stay pool
 * jobs (os/fs.c decides, per op).
 *
 * The op's record (a heap block the task's op points at) embeds the
 * blitz__ufile; its buffer and path copies live in that record, so they
 * stay alive until the kernel lets go, whatever the task does. State:
 *   submit:   INFLIGHT (release; the record is the kernel's and the
 *             owner's), counted in io->inflight, so shutdown's drain
 *             waits for it.
 *   complete: (reaping thread) INFLIGHT -> DONE and wake the owner, who
 *             takes the result; or, when the CAS finds ABANDONED, the
 *             owner is gone: `discard` releases the record (closing a
 *             descriptor an OPENAT returned).
 *   cancel:   ASYNC_CANCEL first, while the record is surely alive (the
 *             completion cannot free it before ABANDONED is set), then
 *             INFLIGHT -> INFLIGHT|ABANDONED; a record already DONE is the
 *             caller's to free.
 *
 * Whole-file ops (WRITE_FILE, READ_FILE) are one submission of linked
 * SQEs on a direct descriptor: the ring's sparse registered file table
 * (set up with the ring, when the kernel has direct opens: 5.15) holds
 * the opened file, so no descriptor ever enters the process. The slot
 * is picked here, not by the kernel (IORING_FILE_INDEX_ALLOC tells it
 * only in the OPENAT's CQE, too late for the linked SQEs that use it);
 * `slots` in each ring marks those taken. Every link is a HARDLINK:
 * each step runs whatever the one before returned (a failed open leaves
 * the slot empty, so the steps after it fail with EBADF), hence the
 * CLOSE always runs and every step posts its CQE, even when a cancel
 * cut one short. Each CQE lands in link_res[step]; the last of them
 * (`due`) completes the record as above, after giving the slot back. */
#include "io.h"
#if BLITZ__HAS_IO /* POSIX only until the IOCP backend (platform.h) */

#define BLITZ__UF_INFLIGHT  1u
#define BLITZ__UF_DONE      2u
#define BLITZ__UF_ABANDONED 4u

#if !defined(BLITZ_NO_IO_URING)

/* Opcodes by number: older uapi headers lack the newer names. */
#define BLITZ__IOP_FSYNC     3u
#define BLITZ__IOP_FALLOCATE 17u
#define BLITZ__IOP_OPENAT    18u
#define BLITZ__IOP_CLOSE     19u
#define BLITZ__IOP_STATX     21u
#define BLITZ__IOP_READ      22u
#define BLITZ__IOP_WRITE     23u
#define BLITZ__IOP_RENAMEAT  35u
#define BLITZ__IOP_UNLINKAT  36u
#define BLITZ__IOP_MKDIRAT   37u
#define BLITZ__IOP_SYMLINKAT 38u
#define BLITZ__IOP_LINKAT    39u
#define BLITZ__IOP_FTRUNCATE 55u

#ifndef IOSQE_FIXED_FILE
#define IOSQE_FIXED_FILE (1U << 0)
#endif
#ifndef IOSQE_IO_HARDLINK
#define IOSQE_IO_HARDLINK (1U << 3)
#endif
#define BLITZ__IOREG_FILES        2u
#define BLITZ__IOREG_FILES_UPDATE 6u
#define BLITZ__IOP_LINKAT_MIN     39u /* came with direct descriptors (5.15) */
#define BLITZ__UF_SLOTS           256u

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000 /* Linux's, hidden without _GNU_SOURCE */
#endif
#ifndef IORING_FSYNC_DATASYNC
#define IORING_FSYNC_DATASYNC (1U << 0)
#endif

/* The kernel's struct statx, as far as blitz reads it (the layout is
 * ABI; libc headers may lack it). */
typedef struct {
    int64_t tv_sec;
    uint32_t tv_nsec;
    int32_t reserved;
} blitz__stx_time;
typedef struct {
    uint32_t mask, blksize;
    uint64_t attributes;
    uint32_t nlink, uid, gid;
    uint16_t mode, spare0;
    uint64_t ino, size, blocks, attributes_mask;
    blitz__stx_time atime, btime, ctime, mtime;
    uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
} blitz__statx;
_Static_assert(sizeof(blitz__statx) == 144, "struct statx's layout");
_Static_assert(sizeof(((blitz__ufile *)0)->stx) >= 256, "room for the kernel's struct statx");

static uint8_t blitz__ufile_opcode(int op) {
    switch (op) {
    case BLITZ__UF_OPEN:
        return BLITZ__IOP_OPENAT;
    case BLITZ__UF_CLOSE:
        return BLITZ__IOP_CLOSE;
    case BLITZ__UF_READ:
        return BLITZ__IOP_READ;
    case BLITZ__UF_WRITE:
        return BLITZ__IOP_WRITE;
    case BLITZ__UF_FSYNC:
    case BLITZ__UF_FDATASYNC:
        return BLITZ__IOP_FSYNC;
    case BLITZ__UF_FTRUNCATE:
        return BLITZ__IOP_FTRUNCATE;
    case BLITZ__UF_STAT:
    case BLITZ__UF_LSTAT:
    case BLITZ__UF_FSTAT:
        return BLITZ__IOP_STATX;
    case BLITZ__UF_RENAME:
        return BLITZ__IOP_RENAMEAT;
    case BLITZ__UF_UNLINK:
    case BLITZ__UF_RMDIR:
        return BLITZ__IOP_UNLINKAT;
    case BLITZ__UF_MKDIR:
        return BLITZ__IOP_MKDIRAT;
    case BLITZ__UF_SYMLINK:
        return BLITZ__IOP_SYMLINKAT;
    case BLITZ__UF_LINK:
        return BLITZ__IOP_LINKAT;
    case BLITZ__UF_FALLOCATE:
        return BLITZ__IOP_FALLOCATE;
    default:
        return 0;
    }
}

/* At ring start-up, with the kernel's IORING_REGISTER_PROBE answer. */
BLITZ_PRIVATE void blitz__ufile_probe(blitz__io *io, const void *probe) {
    const struct io_uring_probe *p = (const struct io_uring_probe *)probe;
    io->uf_ops = 0;
    for (int op = BLITZ__UF_OPEN; op <= BLITZ__UF_FALLOCATE; op++) {
        uint8_t code = blitz__ufile_opcode(op);
        if (code <= p->last_op && (p->ops[code].flags & IO_URING_OP_SUPPORTED))
            io->uf_ops |= 1u << op;
    }
    uint32_t need =
        1u << BLITZ__UF_OPEN | 1u << BLITZ__UF_CLOSE | 1u << BLITZ__UF_READ | 1u << BLITZ__UF_WRITE;
    /* Older kernels ignore an OPENAT's file_index and would hand back a
     * plain descriptor: direct opens only from 5.15, which has LINKAT. */
    if ((io->uf_ops & need) == need && (io->uf_ops >> BLITZ__UF_LINK & 1u))
        io->uf_ops |= 1u << BLITZ__UF_WRITE_FILE | 1u << BLITZ__UF_READ_FILE;
}

/* Each new ring: the sparse file table the chains open into. Without
 * it (a kernel refusing the table) the whole-file ops stay pool jobs. */
BLITZ_PRIVATE void blitz__ufile_ring_init(blitz__io *io, int ring_fd, uint32_t sq_entries) {
    uint32_t chains = 1u << BLITZ__UF_WRITE_FILE | 1u << BLITZ__UF_READ_FILE;
    if (!(io->uf_ops & chains))
        return;
    /* A chain reaches the kernel whole: a ring smaller than the longest
     * one (BLITZ_URING_ENTRIES) could never take it. */
    if (sq_entries < BLITZ__UF_LINKS) {
        io->uf_ops &= ~chains;
        return;
    }
    int32_t fds[BLITZ__UF_SLOTS];
    for (uint32_t i = 0; i < BLITZ__UF_SLOTS; i++)
        fds[i] = -1;
    if (syscall(SYS_io_uring_register, ring_fd, BLITZ__IOREG_FILES, fds, BLITZ__UF_SLOTS) < 0)
        io->uf_ops &= ~chains;
}

/* A free slot of `r`'s table, or -1. Acquire pairs with the release of
 * the slot's previous user, after its CLOSE's CQE. */
static int blitz__ufile_slot_get(blitz__ring *r) {
    for (int w = 0; w < 4; w++) {
        uint64_t v = blitz__u64_load(&r->slots[w], BLITZ__RELAXED);
        while (~v) {
            int bit = __builtin_ctzll(~v);
            if (blitz__u64_cas(&r->slots[w], &v, v | (uint64_t)1 << bit, BLITZ__ACQUIRE))
                return w * 64 + bit;
        }
    }
    return -1;
}

static void blitz__ufile_slot_put(blitz__ring *r, int slot) {
    blitz__u64_fetch_and(&r->slots[slot / 64], ~((uint64_t)1 << (slot % 64)), BLITZ__RELEASE);
}

/* Direct descriptor `slot` (+1: 0 is "none") in the SQE's file_index,
 * which older uapi headers do not name. */
static void blitz__ufile_set_index(struct io_uring_sqe *sqe, int slot) {
    uint32_t v = (uint32_t)slot + 1u;
    _Static_assert(sizeof(struct io_uring_sqe) == 64, "the SQE's layout");
    memcpy((char *)sqe + 44, &v, sizeof v);
}

/* The SQEs of a whole-file chain in slot u->slot; returns their count. */
static uint32_t blitz__ufile_fill_chain(struct io_uring_sqe *q, blitz__ufile *u) {
    uint32_t n = 0;
    memset(q, 0, sizeof(struct io_uring_sqe) * BLITZ__UF_LINKS);
    q[n].opcode = BLITZ__IOP_OPENAT;
    q[n].fd = AT_FDCWD;
    q[n].addr = (uint64_t)(uintptr_t)u->path;
    q[n].len = u->mode;
    q[n].rw_flags = u->flags; /* O_CLOEXEC is EINVAL for a direct open */
    blitz__ufile_set_index(&q[n++], u->slot);
    q[n].opcode = u->op == BLITZ__UF_READ_FILE ? BLITZ__IOP_READ : BLITZ__IOP_WRITE;
    q[n].fd = u->slot;
    q[n].flags = IOSQE_FIXED_FILE;
    q[n].addr = (uint64_t)(uintptr_t)u->buf;
    q[n].len = (uint32_t)(u->len > 0x7ffff000u ? 0x7ffff000u : u->len);
    q[n++].off = (uint64_t)u->off;
    if (u->op == BLITZ__UF_READ_FILE) {
        /* At the file position the first read left: 0 says the end was
         * reached, as a read loop learns it (a stat's size would not do
         * for /proc's files, and STATX always waits for a kernel worker). */
        q[n].opcode = BLITZ__IOP_READ;
        q[n].fd = u->slot;
        q[n].flags = IOSQE_FIXED_FILE;
        q[n].addr = (uint64_t)(uintptr_t)u->stx;
        q[n].len = (uint32_t)sizeof u->stx;
        q[n++].off = (uint64_t)-1;
    }
    q[n].opcode = BLITZ__IOP_CLOSE;
    blitz__ufile_set_index(&q[n++], u->slot);
    for (uint32_t i = 0; i < n; i++) {
        if (i + 1 < n)
            q[i].flags |= IOSQE_IO_HARDLINK;
        q[i].user_data = (uint64_t)(uintptr_t)&u->link[i] | BLITZ__UD_FILE;
    }
    return n;
}

static void blitz__ufile_fill(struct io_uring_sqe *sqe, blitz__ufile *u) {
    static const char empty[] = "";
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = blitz__ufile_opcode(u->op);
    sqe->fd = AT_FDCWD;
    sqe->addr = (uint64_t)(uintptr_t)u->path;
    sqe->user_data = (uint64_t)(uintptr_t)u | BLITZ__UD_FILE;
    switch (u->op) {
    case BLITZ__UF_OPEN:
        sqe->len = u->mode;
        sqe->rw_flags = u->flags;
        break;
    case BLITZ__UF_READ:
    case BLITZ__UF_WRITE:
        sqe->fd = u->fd;
        sqe->addr = (uint64_t)(uintptr_t)u->buf;
        sqe->len = (uint32_t)(u->len > 0x7ffff000u ? 0x7ffff000u : u->len);
        sqe->off = (uint64_t)u->off; /* -1: the file position */
        break;
    case BLITZ__UF_CLOSE:
    case BLITZ__UF_FSYNC:
    case BLITZ__UF_FDATASYNC:
        sqe->fd = u->fd;
        sqe->addr = 0;
        sqe->rw_flags = u->op == BLITZ__UF_FDATASYNC ? IORING_FSYNC_DATASYNC : 0;
        break;
    case BLITZ__UF_FTRUNCATE:
        sqe->fd = u->fd;
        sqe->addr = 0;
        sqe->off = (uint64_t)u->off;
        break;
    case BLITZ__UF_FALLOCATE:
        sqe->fd = u->fd;
        sqe->off = (uint64_t)u->off;
        sqe->addr = (uint64_t)u->len;
        sqe->len = 0; /* mode: allocate, extending the size */
        break;
    case BLITZ__UF_STAT:
    case BLITZ__UF_LSTAT:
    case BLITZ__UF_FSTAT:
        if (u->op == BLITZ__UF_FSTAT) {
            sqe->fd = u->fd;
            sqe->addr = (uint64_t)(uintptr_t)empty;
            sqe->rw_flags = AT_EMPTY_PATH;
        } else if (u->op == BLITZ__UF_LSTAT) {
            sqe->rw_flags = AT_SYMLINK_NOFOLLOW;
        }
        sqe->len = 0x7ffu;                      /* STATX_BASIC_STATS */
        sqe->off = (uint64_t)(uintptr_t)u->stx; /* addr2 */
        break;
    case BLITZ__UF_RENAME:
    case BLITZ__UF_LINK:
        sqe->len = (uint32_t)AT_FDCWD;
        sqe->off = (uint64_t)(uintptr_t)u->path2;
        break;
    case BLITZ__UF_RMDIR:
        sqe->rw_flags = AT_REMOVEDIR;
        break;
    case BLITZ__UF_MKDIR:
        sqe->len = u->mode;
        break;
    case BLITZ__UF_SYMLINK:
        sqe->off = (uint64_t)(uintptr_t)u->path2;
        break;
    default:
        break;
    }
}

/* Whether `rt` carries file op `op` on its ring. */
BLITZ_PRIVATE int blitz__ufile_can(blitz_runtime *rt, int op) {
    blitz__io *io = rt ? rt->io : NULL;
    return io && (io->be->kind == BLITZ_BACKEND_IO_URING || io->files_ring) &&
           (io->uf_ops >> op & 1u);
}

/* Hands the filled-in request to the kernel, on the calling thread's
 * ring. BLITZ_OK: INFLIGHT, the task is woken by the completion;
 * otherwise nothing was started (EBUSY: the ring is full; ESHUTDOWN). */
BLITZ_PRIVATE int blitz__ufile_submit(blitz_cx *cx, blitz__ufile *u) {
    blitz__io *io = blitz_cx_runtime(cx)->io;
    /* Shut down: nobody reaps the ring any more. */
    if (blitz__u32_load(&io->shutdown, BLITZ__ACQUIRE))
        return BLITZ_ESHUTDOWN;
    int batches = 0;
    blitz__ring *r = blitz__uring_mine(io, &batches);
    struct io_uring_sqe sqe[BLITZ__UF_LINKS];
    uint32_t n = 1;
    u->slot = -1;
    if (u->op == BLITZ__UF_WRITE_FILE || u->op == BLITZ__UF_READ_FILE) {
        if ((u->slot = blitz__ufile_slot_get(r)) < 0)
            return BLITZ_EBUSY;
        n = blitz__ufile_fill_chain(sqe, u);
    } else {
        blitz__ufile_fill(sqe, u);
    }
    /* Release, with the completion's acquire of the entry: its thread
     * finds the record through it before it can read `state`. */
    for (uint32_t i = 0; i < n; i++)
        blitz__u64_store(&u->link[i], (uint64_t)(uintptr_t)u, BLITZ__RELEASE);
    blitz__u32_store(&u->due, n, BLITZ__RELAXED);
    blitz_waker mine = blitz_cx_waker(cx);
    u->io = io;
    u->ring = r->index;
    u->waker = blitz_waker_clone(&mine);
    /* Release: the completion's acquire sees the request and the waker
     * (the kernel orders the CQE after the SQE; a race detector cannot
     * see that). */
    blitz__u32_store(&u->state, BLITZ__UF_INFLIGHT, BLITZ__RELEASE);
    blitz__u64_fetch_add(&io->inflight, 1, BLITZ__RELAXED);
    /* Counted before the kernel has it, so its completion's decrement
     * cannot come first. */
    if (r == io->shared)
        blitz__u32_fetch_add(&io->shared_files, 1, BLITZ__RELAXED);
    blitz__u32_fetch_add(&r->files, 1, BLITZ__RELAXED);
    blitz__context *ctx = blitz__context_get();
    if (r == io->shared && ctx && ctx->files_reaper && ctx->rt == io->rt)
        blitz__uring_files_mute(io);
    int rc =
        n == 1 ? blitz__uring_queue(r, sqe, !batches) : blitz__uring_queue_n(r, sqe, n, !batches);
    if (rc != BLITZ_OK) {
        if (u->slot >= 0)
            blitz__ufile_slot_put(r, u->slot);
        if (r == io->shared)
            blitz__u32_fetch_sub(&io->shared_files, 1, BLITZ__RELAXED);
        blitz__u32_fetch_sub(&r->files, 1, BLITZ__RELAXED);
        blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELAXED);
        blitz__u32_store(&u->state, BLITZ__UF_DONE, BLITZ__RELAXED);
        blitz_waker_drop(u->waker);
    }
    return rc;
}

/* The completion of `u`, on the reaping thread. */
BLITZ_PRIVATE void blitz__ufile_complete(blitz__io *io, blitz__ufile *at, int32_t res) {
    blitz__atomic_u64 *lp = (blitz__atomic_u64 *)(void *)at;
    blitz__ufile *u = (blitz__ufile *)(uintptr_t)blitz__u64_load(lp, BLITZ__ACQUIRE);
    (void)blitz__u32_load(&u->state, BLITZ__ACQUIRE);
    u->link_res[lp - u->link] = res;
    /* Acq_rel: the last CQE of a chain sees the others' link_res. */
    if (blitz__u32_fetch_sub(&u->due, 1, BLITZ__ACQ_REL) != 1)
        return;
    if (u->slot >= 0) {
        blitz__ring *r = &io->rings[u->ring];
        int32_t closed = u->link_res[u->op == BLITZ__UF_READ_FILE ? 3 : 2];
        /* An opened file whose CLOSE failed: empty its slot here. */
        if (u->link_res[0] >= 0 && closed < 0) {
            int32_t none = -1;
            struct {
                uint32_t offset, resv;
                uint64_t fds;
            } up = {(uint32_t)u->slot, 0, (uint64_t)(uintptr_t)&none};
            (void)syscall(SYS_io_uring_register, r->fd, BLITZ__IOREG_FILES_UPDATE, &up, 1);
        }
        blitz__ufile_slot_put(r, u->slot);
    }
    blitz_waker w = u->waker;
    u->res = res;
    if (u->ring == io->shared->index)
        blitz__u32_fetch_sub(&io->shared_files, 1, BLITZ__RELAXED);
    blitz__u32_fetch_sub(&io->rings[u->ring].files, 1, BLITZ__RELAXED);
    uint32_t expected = BLITZ__UF_INFLIGHT;
    /* Release publishes res to the owner's acquire of DONE (after which
     * the owner may free the record: nothing of it is touched below);
     * acquire on failure pairs with the canceller's ABANDONED. */
    if (blitz__u32_cas(&u->state, &expected, BLITZ__UF_DONE, BLITZ__ACQ_REL)) {
        blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELEASE);
        blitz__io_wake(io, w);
        return;
    }
    u->discard(u);
    blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELEASE);
    blitz_waker_drop(w);
}

/* The owner's poll: 1 once res is there. */
BLITZ_PRIVATE int blitz__ufile_done(blitz__ufile *u) {
    /* Acquire pairs with the completion's release of DONE. */
    return blitz__u32_load(&u->state, BLITZ__ACQUIRE) == BLITZ__UF_DONE;
}

/* The owner gives up. Returns 1 when the record is the caller's to free
 * (it completed), 0 when the completion will free it. */
BLITZ_PRIVATE int blitz__ufile_cancel(blitz__ufile *u) {
    uint32_t s = blitz__u32_load(&u->state, BLITZ__ACQUIRE);
    if (s != BLITZ__UF_INFLIGHT)
        return 1;
    blitz__uring_cancel_ud(u->io, &u->io->rings[u->ring], (uint64_t)(uintptr_t)u | BLITZ__UD_FILE);
    /* Acq_rel: the completion's failed CAS sees ABANDONED, or this CAS
     * fails because the completion stored DONE first. */
    return !blitz__u32_cas(&u->state, &s, BLITZ__UF_INFLIGHT | BLITZ__UF_ABANDONED, BLITZ__ACQ_REL);
}

/* A finished STAT kind's statx, as a struct stat. */
BLITZ_PRIVATE void blitz__ufile_stat(const blitz__ufile *u, struct stat *st) {
    const blitz__statx *x = (const blitz__statx *)(const void *)u->stx;
    memset(st, 0, sizeof *st);
    st->st_mode = (mode_t)x->mode;
    st->st_size = (off_t)x->size;
    st->st_ino = (ino_t)x->ino;
    st->st_nlink = (nlink_t)x->nlink;
    st->st_uid = (uid_t)x->uid;
    st->st_gid = (gid_t)x->gid;
    /* glibc's makedev. */
    uint64_t ma = x->dev_major, mi = x->dev_minor;
    st->st_dev = (dev_t)(((ma & 0xfffff000u) << 32) | ((ma & 0xfffu) << 8) |
                         ((mi & 0xffffff00u) << 12) | (mi & 0xffu));
    st->st_mtim.tv_sec = (time_t)x->mtime.tv_sec;
    st->st_mtim.tv_nsec = (long)x->mtime.tv_nsec;
    st->st_atim.tv_sec = (time_t)x->atime.tv_sec;
    st->st_atim.tv_nsec = (long)x->atime.tv_nsec;
    st->st_ctim.tv_sec = (time_t)x->ctime.tv_sec;
    st->st_ctim.tv_nsec = (long)x->ctime.tv_nsec;
}

#else

BLITZ_PRIVATE void blitz__ufile_probe(blitz__io *io, const void *probe) {
    (void)probe;
    io->uf_ops = 0;
}
BLITZ_PRIVATE void blitz__ufile_ring_init(blitz__io *io, int ring_fd, uint32_t sq_entries) {
    (void)io;
    (void)ring_fd;
    (void)sq_entries;
}
BLITZ_PRIVATE int blitz__ufile_can(blitz_runtime *rt, int op) {
    (void)rt;
    (void)op;
    return 0;
}
BLITZ_PRIVATE int blitz__ufile_submit(blitz_cx *cx, blitz__ufile *u) {
    (void)cx;
    (void)u;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__ufile_complete(blitz__io *io, blitz__ufile *u, int32_t res) {
    (void)io;
    (void)u;
    (void)res;
}
BLITZ_PRIVATE int blitz__ufile_done(blitz__ufile *u) {
    (void)u;
    return 1;
}
BLITZ_PRIVATE int blitz__ufile_cancel(blitz__ufile *u) {
    (void)u;
    return 1;
}
BLITZ_PRIVATE void blitz__ufile_stat(const blitz__ufile *u, struct stat *st) {
    (void)u;
    memset(st, 0, sizeof *st);
}

#endif

#endif /* BLITZ__HAS_IO */
