/* The socket table: every live socket of a driver, the ops linked to
 * each, and the references that decide when a socket's descriptor closes
 * and when its memory goes.
 *
 * References (blitz_socket.refs): the low 32 bits count holders that may
 * use the descriptor, the high 32 bits holders of the memory only. The
 * last descriptor reference closes the descriptor (after the backend's
 * sock_del) and turns into a memory reference in the same step; the last
 * memory reference takes the socket off the list and frees it, at once on
 * a completion backend, at the next dispatch cycle on a readiness one (an
 * event fetched before the close may still name it). Lock order: a
 * socket's lock, then socks_lock. */
#include "io.h"

#if BLITZ__HAS_SOCKETS

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

BLITZ_PRIVATE void blitz__sock_free_mem(blitz_socket *s) {
#if BLITZ__HAS_IO
    for (uint32_t i = 0; i < s->ms_count; i++)
        close(s->ms_fds[(s->ms_head + i) % s->ms_cap]);
    if (s->ms_spare >= 0)
        close(s->ms_spare);
    blitz__free(s->ms_fds);
    blitz__recv_ms_release(s);
#endif
    blitz__salvage_release(s);
    blitz__mutex_destroy(&s->lock);
    BLITZ__MAGIC_SET(s, BLITZ__MAGIC_DEAD);
    blitz__free_handle(s);
}

/* Frees readiness sockets closed before this dispatch cycle. Caller holds
 * io->lock, so no event fetched earlier still names them. */
BLITZ_PRIVATE void blitz__io_free_deferred(blitz__io *io) {
    if (!blitz__u32_load(&io->has_free, BLITZ__RELAXED))
        return;
    blitz__mutex_lock(&io->socks_lock);
    blitz_socket *s = io->free_list;
    io->free_list = NULL;
    blitz__u32_store(&io->has_free, 0, BLITZ__RELAXED);
    blitz__mutex_unlock(&io->socks_lock);
    while (s) {
        blitz_socket *next = s->free_next;
        if (io->be->sock_free)
            io->be->sock_free(io, s);
        blitz__sock_free_mem(s);
        s = next;
    }
}

#define BLITZ__SOCK_FD_REF     ((uint64_t)1)
#define BLITZ__SOCK_MEM_REF    ((uint64_t)1 << 32)
#define BLITZ__SOCK_FD_REFS(v) ((uint32_t)(v))

BLITZ_PRIVATE void blitz__sock_ref(blitz_socket *s) {
    blitz__u64_fetch_add(&s->refs, BLITZ__SOCK_FD_REF, BLITZ__RELAXED);
}

/* The socket's memory: off the driver's list, then freed now (a
 * completion backend) or at the next dispatch cycle (a readiness backend:
 * an event fetched before the close may still name it). */
static void blitz__sock_release_mem(blitz_socket *s) {
    blitz__io *io = s->io;
    blitz__mutex_lock(&io->socks_lock);
    if (s->all_prev)
        s->all_prev->all_next = s->all_next;
    else
        io->all = s->all_next;
    if (s->all_next)
        s->all_next->all_prev = s->all_prev;
    if (io->be->completion) {
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
BLITZ_PRIVATE void blitz__sock_unref_mem(blitz_socket *s) {
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
    if (io->be->sock_del)
        io->be->sock_del(io, s);
    /* The number may be reused at once; an event already fetched for it
     * only bumps this (closed) socket's sequence numbers. */
    blitz__sock_close_fd(s->fd, s->family);
    s->fd_closed = 1;
    blitz__u32_fetch_sub(&io->nsocks, 1, BLITZ__RELAXED);
    blitz__sock_unref_mem(s);
}

/* A task's descriptor reference becomes a memory reference: its op now
 * waits, and the descriptor may close under it (a close of the socket
 * completes the op without the descriptor). */
BLITZ_PRIVATE void blitz__sock_fd_to_mem(blitz_socket *s) {
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
BLITZ_PRIVATE int blitz__sock_mem_to_fd(blitz_socket *s) {
    uint64_t cur = blitz__u64_load(&s->refs, BLITZ__RELAXED);
    do {
        if (!BLITZ__SOCK_FD_REFS(cur))
            return 0;
    } while (!blitz__u64_cas_weak(&s->refs, &cur, cur + BLITZ__SOCK_FD_REF - BLITZ__SOCK_MEM_REF,
                                  BLITZ__ACQUIRE));
    return 1;
}

/* Closes a wrapped descriptor: on Windows one of family AF_UNSPEC is a
 * pipe end's HANDLE, not a SOCKET. */
BLITZ_PRIVATE void blitz__sock_close_fd(blitz__sock_t fd, int family) {
#if BLITZ__WIN32
    if (family == AF_UNSPEC) {
        CloseHandle((HANDLE)fd);
        return;
    }
#else
    (void)family;
#endif
    blitz__sock_close_raw(fd);
}

/* A socket of the platform's: non-blocking and close-on-exec (POSIX),
 * overlapped and not inherited (Windows). */
BLITZ_PRIVATE int blitz__sock_open(int family, int type, blitz__sock_t *out) {
#if BLITZ__WIN32
    return blitz__iocp_open(family, type, out);
#else
    int fd = blitz__socket_open(family, type, 1);
    if (fd < 0)
        return fd;
    *out = fd;
    return BLITZ_OK;
#endif
}

/* Wraps a non-blocking descriptor (left open on failure). */
BLITZ_PRIVATE int blitz__sock_wrap_keep(blitz__io *io, blitz__sock_t fd, int family, int type,
                                        blitz_socket **out) {
    *out = NULL;
    if (!io)
        return BLITZ_ENOSYS;
    blitz_socket *s = BLITZ__FAULT(sock_alloc) ? NULL : (blitz_socket *)blitz__calloc(sizeof *s);
    if (!s)
        return BLITZ_ENOMEM;
    s->fd = fd;
    s->family = family;
    s->type = type;
    s->io = io;
    s->poll_slot = -1;
    s->ms_spare = -1;
    blitz__mutex_init(&s->lock);
    blitz__u64_store(&s->refs, BLITZ__SOCK_FD_REF, BLITZ__RELAXED);
    BLITZ__MAGIC_SET(s, BLITZ__MAGIC_SOCKET);
    if (io->be->sock_add) {
        int rc = io->be->sock_add(io, s);
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
BLITZ_PRIVATE int blitz__sock_wrap(blitz__io *io, blitz__sock_t fd, int family, int type,
                                   blitz_socket **out) {
    int rc = blitz__sock_wrap_keep(io, fd, family, type, out);
    if (rc != BLITZ_OK)
        blitz__sock_close_fd(fd, family);
    return rc;
}

#endif /* BLITZ__HAS_SOCKETS */
