/* Descriptor ops: read(2)/write(2) and readiness waits on any descriptor a
 * blitz_socket wraps (pipes, ttys, character devices, sockets), and
 * blitz_pipe.
 *
 * They are op kinds of the I/O driver (driver.c runs them like the socket
 * ops): on a readiness backend the system call is tried and, on EAGAIN,
 * the op waits for the direction's event; on a completion backend the same
 * system call is tried first and the wait is a readiness wait in the
 * kernel. The kernel's own reads and writes are not used: on a descriptor
 * with O_NONBLOCK they complete with BLITZ_EAGAIN instead of waiting, and the
 * kernel would own the caller's buffer. On Windows the completion port
 * performs them (iocp_sock.c) and a pipe is an overlapped handle pair. */
#include "io.h"

#if BLITZ__HAS_IO

/* ---- writes without SIGPIPE ---------------------------------------------------- */

/* A write into a pipe (or a zero-copy transfer into a socket) whose reader
 * is gone raises SIGPIPE at the calling thread, which kills the process by
 * default. The signal is blocked around the call, and one that the call
 * raised is taken back before the mask is restored, so the caller sees
 * BLITZ_EPIPE only. */
typedef struct blitz__nosig {
    sigset_t old;
    int was_pending; /* a SIGPIPE that was not ours */
    int changed;
} blitz__nosig;

BLITZ_PRIVATE void blitz__nosig_begin(blitz__nosig *g) {
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    g->changed = pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old) == 0;
}

BLITZ_PRIVATE void blitz__nosig_end(blitz__nosig *g, int epipe) {
    int saved = errno;
    if (epipe && !g->was_pending) {
        sigset_t pipe_set, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
            blitz__sigpipe_take(&pipe_set);
    }
    if (g->changed)
        pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = saved;
}

/* Whether the wrapped descriptor is a socket (blitz__send_nosig needs no
 * signal mask). */
static int blitz__fd_is_socket(const blitz_socket *s) {
    return s->family != AF_UNSPEC;
}

/* ---- the system calls of the descriptor kinds --------------------------------------- */

BLITZ_PRIVATE int64_t blitz__fd_attempt(blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    ssize_t r;
    errno = 0;
    switch (op->blitz__kind) {
    case BLITZ__OP_FD_READ:
        r = BLITZ__SYS(read(s->fd, op->blitz__buf, BLITZ__SYS_LEN(op->blitz__len)));
        break;
    case BLITZ__OP_FD_WRITE:
    case BLITZ__OP_FD_WRITE_ALL: {
        const char *p = (const char *)op->blitz__buf + op->blitz__done;
        size_t n = op->blitz__len - op->blitz__done;
        if (blitz__fd_is_socket(s)) {
            r = BLITZ__SYS(blitz__send_nosig(s->fd, p, BLITZ__SYS_LEN(n)));
            if (r < 0 && errno == ENOTSOCK) {
                /* adopted descriptor with a family but not a socket */
                blitz__nosig g;
                blitz__nosig_begin(&g);
                r = BLITZ__SYS(write(s->fd, p, BLITZ__SYS_LEN(n)));
                blitz__nosig_end(&g, r < 0 && errno == EPIPE);
            }
        } else {
            blitz__nosig g;
            blitz__nosig_begin(&g);
            r = BLITZ__SYS(write(s->fd, p, BLITZ__SYS_LEN(n)));
            blitz__nosig_end(&g, r < 0 && errno == EPIPE);
        }
        break;
    }
    case BLITZ__OP_FD_POLL: {
        struct pollfd pfd;
        pfd.fd = s->fd;
        pfd.events = op->blitz__dir == BLITZ__DIR_WRITE ? POLLOUT : POLLIN;
        pfd.revents = 0;
        r = poll(&pfd, 1, 0);
        if (r > 0)
            return pfd.revents;
        if (r == 0)
            return BLITZ_EAGAIN;
        break;
    }
    case BLITZ__OP_RECV_BUF:
        return blitz__recv_buf_attempt(op);
    default:
        return BLITZ_EINVAL;
    }
    if (r < 0) {
        if (errno == EWOULDBLOCK || errno == EAGAIN)
            return BLITZ_EAGAIN;
        return blitz__from_errno(errno);
    }
    return (int64_t)r;
}

#endif /* BLITZ__HAS_IO */

#if BLITZ__HAS_SOCKETS

/* ---- public ops --------------------------------------------------------------------------- */

BLITZ_API blitz_poll blitz_fd_read(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                   size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_READ, buf, len, BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_fd_write(blitz_cx *cx, blitz_io *op, blitz_socket *s, const void *buf,
                                    size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_WRITE, buf, len, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_fd_write_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                        const void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_WRITE_ALL, buf, len, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_fd_readable(blitz_cx *cx, blitz_io *op, blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_POLL, NULL, 0, BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_fd_writable(blitz_cx *cx, blitz_io *op, blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_POLL, NULL, 0, BLITZ__DIR_WRITE);
}

/* ---- pipes ---------------------------------------------------------------------------------- */

#if BLITZ__WIN32
/* Both ends overlapped and not inherited, wrapped as AF_UNSPEC (handles)
 * streams. */
static int blitz__pipe_pair(blitz__io *io, blitz_socket **r, blitz_socket **w) {
    void *rh = NULL, *wh = NULL;
    int rc = blitz__win_pipe_pair(&rh, &wh,
                                  BLITZ__WPIPE_READ_OVERLAPPED | BLITZ__WPIPE_WRITE_OVERLAPPED, 0);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__sock_wrap(io, (blitz__sock_t)(uintptr_t)rh, AF_UNSPEC, SOCK_STREAM, r);
    if (rc != BLITZ_OK) {
        CloseHandle((HANDLE)wh);
        return rc;
    }
    rc = blitz__sock_wrap(io, (blitz__sock_t)(uintptr_t)wh, AF_UNSPEC, SOCK_STREAM, w);
    if (rc != BLITZ_OK) {
        blitz_sock_close(*r);
        *r = NULL;
    }
    return rc;
}
#else
BLITZ_PRIVATE int blitz__pipe_fds(int fds[2]) {
    return blitz__pipe_open(fds, 1);
}

static int blitz__pipe_pair(blitz__io *io, blitz_socket **r, blitz_socket **w) {
    int fds[2];
    int rc = blitz__pipe_fds(fds);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__sock_wrap(io, fds[0], AF_UNSPEC, 0, r);
    if (rc != BLITZ_OK) {
        close(fds[1]);
        return rc;
    }
    rc = blitz__sock_wrap(io, fds[1], AF_UNSPEC, 0, w);
    if (rc != BLITZ_OK) {
        blitz_sock_close(*r);
        *r = NULL;
    }
    return rc;
}
#endif

BLITZ_API int blitz_pipe(blitz_runtime *rt, blitz_socket **read_end, blitz_socket **write_end) {
    if (read_end)
        *read_end = NULL;
    if (write_end)
        *write_end = NULL;
    if (!rt || !read_end || !write_end)
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    blitz_socket *r = NULL, *w = NULL;
    int rc = blitz__pipe_pair(rt->io, &r, &w);
    if (rc != BLITZ_OK)
        return rc;
    *read_end = r;
    *write_end = w;
    return BLITZ_OK;
}

#endif /* BLITZ__HAS_SOCKETS */
