/* The kqueue backend (macOS 11+, FreeBSD 13+), a readiness backend
 * (backend.h): every socket is registered once, for both directions
 * (EVFILT_READ and EVFILT_WRITE, each EV_CLEAR, so each fires once per
 * change of state, like an edge), with the socket as the knote's udata; an
 * event bumps the socket's sequence numbers and wakes the waiters of its
 * direction (blitz__io_ready). EV_EOF on the read filter (the peer's end
 * of stream) or with an error in fflags means no further event comes:
 * receives try again from then on (rd_final), and the retried call
 * reports the error itself.
 *
 * Its wake-up object is the kqueue's own EVFILT_USER knote (EV_CLEAR; a
 * parker's wake_fd is BLITZ__WAKE_KQ(kq), platform/bsd.c triggers it);
 * where the system has no EVFILT_USER (older NetBSD and OpenBSD) it is a
 * self-pipe whose read end is a level-triggered EVFILT_READ knote with no
 * udata.
 *
 * The timer wheel's next deadline arrives as the wait's timeout, which is
 * kevent's own. A socket's registration and removal are applied at once
 * rather than batched into the next wait: a thread may be blocked in
 * kevent when a socket is added (a deferred add would leave it deaf), and
 * a removal must precede the close (a deferred one could remove the knote
 * of a new socket given the same descriptor number). The two filters of
 * a socket go in one call, with EV_RECEIPT, so each change's error comes
 * back in its own EV_ERROR entry (data: the system's errno).
 *
 * The kqueue is io->epfd, its event array io->events. */
#include "io.h"

#if BLITZ__HAS_IO /* POSIX only until the IOCP backend (platform.h) */

#if BLITZ__HAS_KQUEUE && !defined(BLITZ_NO_KQUEUE)

/* The event list of the changes of one socket: its two receipts. */
#define BLITZ__KQ_CHANGES 2

static void blitz__kq_destroy(blitz__io *io);

/* The self-pipe wake-up, where EVFILT_USER is missing. */
static int blitz__kq_wake_pipe(blitz__io *io) {
    int fds[2];
    int rc = blitz__pipe_open(fds, 1);
    if (rc != BLITZ_OK)
        return rc;
    io->wake_rd = blitz__fd_above_stdio(fds[0]);
    io->wake_fd = blitz__fd_above_stdio(fds[1]);
    if (io->wake_rd < 0 || io->wake_fd < 0)
        return blitz__from_errno(errno);
    struct kevent ch;
    EV_SET(&ch, (uintptr_t)io->wake_rd, EVFILT_READ, EV_ADD, 0, 0, NULL);
    return kevent(io->epfd, &ch, 1, NULL, 0, NULL) < 0 ? blitz__from_errno(errno) : BLITZ_OK;
}

static int blitz__kq_init(blitz__io *io) {
    io->epfd = blitz__fd_above_stdio(kqueue());
    if (io->epfd < 0)
        return blitz__from_errno(errno);
    int rc = BLITZ_OK;
    if (fcntl(io->epfd, F_SETFD, FD_CLOEXEC) < 0)
        rc = blitz__from_errno(errno);
    io->events = blitz__calloc(sizeof(struct kevent) * BLITZ__IO_EVENTS);
    if (rc == BLITZ_OK && !io->events)
        rc = BLITZ_ENOMEM;
    if (rc == BLITZ_OK) {
        struct kevent ch;
        EV_SET(&ch, BLITZ__KQ_WAKE_IDENT, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
        if (kevent(io->epfd, &ch, 1, NULL, 0, NULL) == 0)
            io->wake_fd = BLITZ__WAKE_KQ(io->epfd);
        else
            rc = blitz__kq_wake_pipe(io);
    }
    /* The wait is tried once: a sandbox may refuse it, and workers would
     * retry it forever. */
    struct timespec zero = {0, 0};
    if (rc == BLITZ_OK && kevent(io->epfd, NULL, 0, (struct kevent *)io->events, 1, &zero) < 0 &&
        errno != EINTR)
        rc = blitz__from_errno(errno);
    if (rc != BLITZ_OK)
        blitz__kq_destroy(io);
    return rc;
}

static void blitz__kq_destroy(blitz__io *io) {
    if (io->epfd >= 0)
        close(io->epfd);
    io->epfd = -1;
    blitz__free(io->events);
    io->events = NULL;
    if (io->wake_fd >= 0)
        close(io->wake_fd);
    if (io->wake_rd >= 0)
        close(io->wake_rd);
    io->wake_fd = io->wake_rd = -1;
}

/* Applies one socket's changes: BLITZ_OK or the first change's error. */
static int blitz__kq_change(blitz__io *io, struct kevent *ch, int n) {
    struct kevent got[BLITZ__KQ_CHANGES];
    for (int i = 0; i < n; i++)
        ch[i].flags |= EV_RECEIPT;
    int r;
    while ((r = kevent(io->epfd, ch, n, got, n, NULL)) < 0 && errno == EINTR) {
    }
    if (r < 0)
        return blitz__from_errno(errno);
    for (int i = 0; i < r; i++)
        if ((got[i].flags & EV_ERROR) && got[i].data != 0)
            return blitz__from_errno((int)got[i].data);
    return BLITZ_OK;
}

static int blitz__kq_add(blitz__io *io, blitz_socket *s) {
    struct kevent ch[BLITZ__KQ_CHANGES];
    EV_SET(&ch[0], (uintptr_t)s->fd, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, s);
    EV_SET(&ch[1], (uintptr_t)s->fd, EVFILT_WRITE, EV_ADD | EV_CLEAR, 0, 0, s);
    int rc = blitz__kq_change(io, ch, BLITZ__KQ_CHANGES);
    if (rc != BLITZ_OK) {
        /* One filter may have been added. */
        EV_SET(&ch[0], (uintptr_t)s->fd, EVFILT_READ, EV_DELETE, 0, 0, NULL);
        EV_SET(&ch[1], (uintptr_t)s->fd, EVFILT_WRITE, EV_DELETE, 0, 0, NULL);
        (void)blitz__kq_change(io, ch, BLITZ__KQ_CHANGES);
    }
    return rc;
}

/* Before the close: the kernel would drop the knotes with the last close
 * of the file, but the descriptor may be shared (an adopted one) and
 * events must stop naming the socket now. ENOENT is fine. */
static void blitz__kq_del(blitz__io *io, blitz_socket *s) {
    if (s->fd < 0)
        return;
    struct kevent ch[BLITZ__KQ_CHANGES];
    EV_SET(&ch[0], (uintptr_t)s->fd, EVFILT_READ, EV_DELETE, 0, 0, NULL);
    EV_SET(&ch[1], (uintptr_t)s->fd, EVFILT_WRITE, EV_DELETE, 0, 0, NULL);
    (void)blitz__kq_change(io, ch, BLITZ__KQ_CHANGES);
}

/* Caller holds io->lock. timeout_ns: 0 = do not block, BLITZ__IO_FOREVER. */
static void blitz__kq_wait(blitz__io *io, uint64_t timeout_ns) {
    struct timespec ts, *tsp = NULL;
    if (timeout_ns != BLITZ__IO_FOREVER) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tsp = &ts;
    }
    int n = kevent(io->epfd, NULL, 0, (struct kevent *)io->events, BLITZ__IO_EVENTS, tsp);
    io->nevents = n < 0 ? 0 : n;
}

/* Empties the self-pipe (level-triggered: what is left fires again). */
static void blitz__kq_drain_pipe(int fd) {
    char buf[64];
    while (read(fd, buf, sizeof buf) == (ssize_t)sizeof buf) {
    }
}

static void blitz__kq_dispatch(blitz__io *io) {
    int n = io->nevents;
    io->nevents = 0;
    for (int i = 0; i < n; i++) {
        struct kevent *e = &((struct kevent *)io->events)[i];
        blitz_socket *s = (blitz_socket *)e->udata;
        if (!s) {
            if (e->filter == EVFILT_READ)
                blitz__kq_drain_pipe(io->wake_rd);
            continue; /* EVFILT_USER: EV_CLEAR reset it */
        }
        if (e->flags & EV_ERROR)
            continue; /* a change's receipt; none is asked for here */
        int rd = e->filter == EVFILT_READ;
        int wr = e->filter == EVFILT_WRITE;
        /* The end of the stream, or an error (fflags), stays with no
         * further event: receives try again from now on (published by the
         * sequence bump's release in blitz__io_ready). */
        if ((e->flags & EV_EOF) && (rd || e->fflags != 0))
            blitz__u32_store(&s->rd_final, 1, BLITZ__RELAXED);
        if (e->fflags != 0 && (e->flags & EV_EOF))
            rd = wr = 1;
        blitz__io_ready(s, rd, wr);
    }
}

static const blitz__io_backend blitz__kq_vtable = {
    .kind = BLITZ_BACKEND_KQUEUE,
    .name = "kqueue",
    .completion = 0,
    .look_interval = BLITZ__IO_EVENT_INTERVAL, /* a look is a system call */
    .init = blitz__kq_init,
    .destroy = blitz__kq_destroy,
    .submit = blitz__ready_submit,
    .sock_add = blitz__kq_add,
    .sock_del = blitz__kq_del,
    .poll = blitz__ready_poll,
    .park = blitz__ready_park,
    .wait = blitz__kq_wait,
    .dispatch = blitz__kq_dispatch,
};

#else

static int blitz__kq_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}

static const blitz__io_backend blitz__kq_vtable = {
    .kind = BLITZ_BACKEND_KQUEUE,
    .name = "kqueue",
    .init = blitz__kq_init,
};

#endif

BLITZ_PRIVATE const blitz__io_backend *blitz__backend_kqueue(void) {
    return &blitz__kq_vtable;
}

#endif /* BLITZ__HAS_IO */
