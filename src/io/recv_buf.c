/* Receives into buffers the runtime lends (blitz_sock_recv_buf).
 *
 * The op waits for data without a buffer, so an idle connection holds
 * none; a buffer is taken only once data is there, and the task gives it
 * back with blitz_buf_release (any thread). On io_uring TCP sockets it is
 * the provided buffer the socket's multishot receive filled
 * (uring_recv_ms.c), lent as it is, without a copy. Everywhere else (the
 * readiness backends, Unix sockets, a kernel without multishot receives,
 * a provided-buffer pool that ran dry) the op is carried as a descriptor
 * op: a readiness wait, then recv(2) into a heap buffer of the driver's
 * pool, which goes straight back to the pool when nothing came. The pool
 * keeps at most BLITZ__BUF_POOL_KEEP idle buffers; a busy moment beyond
 * that allocates, so receives never wait for a buffer. */
#include "io.h"

#if BLITZ__HAS_SOCKETS

_Static_assert(BLITZ_RECV_BUF_SIZE >= 64u && BLITZ_RECV_BUF_SIZE <= (16u << 20),
               "BLITZ_RECV_BUF_SIZE: 64 bytes to 16 MiB");

static char *blitz__bpool_get(blitz__io *io) {
    blitz__mutex_lock(&io->bpool_lock);
    void *b = io->bpool;
    if (b) {
        io->bpool = *(void **)b;
        io->bpool_n--;
    }
    blitz__mutex_unlock(&io->bpool_lock);
    return b ? (char *)b : (char *)blitz__malloc(BLITZ_RECV_BUF_SIZE);
}

static void blitz__bpool_put(blitz__io *io, void *b) {
    blitz__mutex_lock(&io->bpool_lock);
    if (io->bpool_n < BLITZ__BUF_POOL_KEEP) {
        *(void **)b = io->bpool;
        io->bpool = b;
        io->bpool_n++;
        b = NULL;
    }
    blitz__mutex_unlock(&io->bpool_lock);
    blitz__free(b);
}

/* The driver goes: its idle buffers with it. */
BLITZ_PRIVATE void blitz__recv_buf_pool_free(blitz__io *io) {
    while (io->bpool) {
        void *b = io->bpool;
        io->bpool = *(void **)b;
        blitz__free(b);
    }
    io->bpool_n = 0;
}

static void blitz__buf_lend_heap(blitz_io *op, char *mem, size_t n) {
    blitz_buf *b = (blitz_buf *)op->blitz__buf;
    b->data = mem;
    b->len = n;
    b->blitz__owner = op->blitz__sock->io;
    b->blitz__id = 0;
    b->blitz__kind = BLITZ__BUF_HEAP;
}

/* The op's system call (its blitz__buf is the caller's view): bytes lent,
 * 0 at end of stream, or a BLITZ_E* code; no buffer is kept unless data
 * came. */
BLITZ_PRIVATE int64_t blitz__recv_buf_attempt(blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    char *mem = blitz__bpool_get(s->io);
    if (!mem)
        return BLITZ_ENOMEM;
#if BLITZ__WIN32
    /* The socket is non-blocking (iocp_sock.c) for this call. */
    int r = recv(s->fd, mem, (int)BLITZ_RECV_BUF_SIZE, 0);
    int err = r < 0 ? blitz__from_win32((DWORD)WSAGetLastError()) : 0;
#else
    errno = 0;
    ssize_t r = BLITZ__SYS(recv(s->fd, mem, BLITZ__SYS_LEN(BLITZ_RECV_BUF_SIZE), 0));
    int err = r < 0 ? (errno == EWOULDBLOCK ? BLITZ_EAGAIN : blitz__from_errno(errno)) : 0;
#endif
    if (r > 0) {
        blitz__buf_lend_heap(op, mem, (size_t)r);
        return (int64_t)r;
    }
    blitz__bpool_put(s->io, mem);
    return r == 0 ? 0 : err;
}

/* Data a cancelled plain receive left on the socket (salvage.c) comes
 * first, in a heap buffer. 1 with `*r` set when there was some. */
BLITZ_PRIVATE int blitz__recv_buf_salvage(blitz_socket *s, blitz_io *op, int64_t *r) {
    if (!blitz__u32_load(&s->salvage_n, BLITZ__RELAXED))
        return 0;
    char *mem = blitz__bpool_get(s->io);
    if (!mem) {
        *r = BLITZ_ENOMEM;
        return 1;
    }
    void *view = op->blitz__buf;
    size_t len = op->blitz__len;
    op->blitz__buf = mem;
    op->blitz__len = BLITZ_RECV_BUF_SIZE;
    int got = blitz__salvage_take(s, op, r);
    op->blitz__buf = view;
    op->blitz__len = len;
    if (got && *r > 0)
        blitz__buf_lend_heap(op, mem, (size_t)*r);
    else
        blitz__bpool_put(s->io, mem);
    return got;
}

BLITZ_API void blitz_buf_release(blitz_buf *b) {
    if (!b || !b->blitz__owner)
        return;
#if BLITZ__HAS_IO
    if (b->blitz__kind == BLITZ__BUF_RING)
        blitz__recv_ms_give_back(b->blitz__owner, b->blitz__id);
    else
#endif
        blitz__bpool_put((blitz__io *)b->blitz__owner, b->data);
    b->data = NULL;
    b->len = 0;
    b->blitz__owner = NULL;
    b->blitz__id = 0;
    b->blitz__kind = 0;
}

#endif /* BLITZ__HAS_SOCKETS */
