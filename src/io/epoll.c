/* The epoll backend, a readiness backend (backend.h): every socket is
 * registered once, edge-triggered, for both directions (EPOLLIN | EPOLLOUT
 * | EPOLLRDHUP | EPOLLET), with the socket as the event's data; an event
 * bumps the socket's sequence numbers and wakes the waiters of its
 * directions (blitz__io_ready). Its wake-up object, an eventfd, is
 * registered level-triggered with NULL data; so is the eventfd of its
 * file ring, when it has one, with that ring as data. */
#include "io.h"

#if BLITZ__HAS_IO /* POSIX only until the IOCP backend (platform.h) */

#if !defined(BLITZ_NO_EPOLL)

static void blitz__epoll_destroy(blitz__io *io);

static int blitz__epoll_init(blitz__io *io) {
    io->wake_fd = io->wake_rd = blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (io->wake_fd < 0)
        return blitz__from_errno(errno);
    io->epfd = blitz__fd_above_stdio(epoll_create1(EPOLL_CLOEXEC));
    if (io->epfd < 0) {
        int rc = blitz__from_errno(errno);
        blitz__epoll_destroy(io);
        return rc;
    }
    io->events = blitz__calloc(sizeof(struct epoll_event) * BLITZ__IO_EVENTS);
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = NULL;
    /* The wait is tried once: a seccomp filter may refuse epoll_wait
     * alone, and workers would retry it forever. */
    if (!io->events || epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->wake_fd, &ev) < 0 ||
        (epoll_wait(io->epfd, (struct epoll_event *)io->events, 1, 0) < 0 && errno != EINTR)) {
        int rc = io->events ? blitz__from_errno(errno) : BLITZ_ENOMEM;
        blitz__epoll_destroy(io);
        return rc;
    }
    /* Files on a ring of their own where the kernel has io_uring; the
     * blocking pool otherwise. Its eventfd's event has io->shared as
     * data. */
    if (io->files_wanted && blitz__uring_files_init(io) == BLITZ_OK) {
        ev.data.ptr = io->shared;
        if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->shared_efd, &ev) == 0)
            io->files_ring = 1;
        else
            blitz__uring_files_destroy(io);
    }
    return BLITZ_OK;
}

static void blitz__epoll_destroy(blitz__io *io) {
    blitz__uring_files_destroy(io);
    io->files_ring = 0;
    if (io->epfd >= 0)
        close(io->epfd);
    io->epfd = -1;
    blitz__free(io->events);
    io->events = NULL;
    if (io->wake_fd >= 0)
        close(io->wake_fd);
    io->wake_fd = io->wake_rd = -1;
}

static int blitz__epoll_add(blitz__io *io, blitz_socket *s) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = s;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0)
        return blitz__from_errno(errno);
    return BLITZ_OK;
}

static void blitz__epoll_del(blitz__io *io, blitz_socket *s) {
    if (s->fd >= 0)
        epoll_ctl(io->epfd, EPOLL_CTL_DEL, s->fd, NULL);
}

/* Caller holds io->lock. timeout_ns: 0 = do not block, BLITZ__IO_FOREVER. */
static void blitz__epoll_wait(blitz__io *io, uint64_t timeout_ns) {
    int ms;
    if (timeout_ns == BLITZ__IO_FOREVER)
        ms = -1;
    else if (timeout_ns == 0)
        ms = 0;
    else {
        /* Round up: waking early only to sleep again costs a wake-up. */
        uint64_t m = (timeout_ns + 999999u) / 1000000u;
        ms = m > INT_MAX ? INT_MAX : (int)m;
    }
    int n =
        BLITZ__SYS(epoll_wait(io->epfd, (struct epoll_event *)io->events, BLITZ__IO_EVENTS, ms));
    io->nevents = n < 0 ? 0 : n;
}

static void blitz__epoll_dispatch(blitz__io *io) {
    int n = io->nevents;
    io->nevents = 0;
    for (int i = 0; i < n; i++) {
        struct epoll_event *e = &((struct epoll_event *)io->events)[i];
        blitz_socket *s = (blitz_socket *)e->data.ptr;
        if (!s) {
            blitz__io_drain_fd(io->wake_rd);
            continue;
        }
        if ((void *)s == (void *)io->shared) {
            blitz__uring_files_reap(io);
            continue;
        }
        uint32_t ev = e->events;
        int rd = (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI)) != 0;
        int wr = (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
        /* The end of the stream or an error stays readable with no further
         * edge: receives try again from now on (published by the
         * sequence bump's release in blitz__io_ready). */
        if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            blitz__u32_store(&s->rd_final, 1, BLITZ__RELAXED);
        blitz__io_ready(s, rd, wr);
    }
}

static const blitz__io_backend blitz__epoll_vtable = {
    .kind = BLITZ_BACKEND_EPOLL,
    .name = "epoll",
    .completion = 0,
    .look_interval = BLITZ__IO_EVENT_INTERVAL, /* a look is a system call */
    .init = blitz__epoll_init,
    .destroy = blitz__epoll_destroy,
    .submit = blitz__ready_submit,
    .sock_add = blitz__epoll_add,
    .sock_del = blitz__epoll_del,
    .poll = blitz__ready_poll,
    .park = blitz__ready_park,
    .wait = blitz__epoll_wait,
    .dispatch = blitz__epoll_dispatch,
};

#else

static int blitz__epoll_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}

static const blitz__io_backend blitz__epoll_vtable = {
    .kind = BLITZ_BACKEND_EPOLL,
    .name = "epoll",
    .init = blitz__epoll_init,
};

#endif

BLITZ_PRIVATE const blitz__io_backend *blitz__backend_edge(void) {
    return &blitz__epoll_vtable;
}

#endif /* BLITZ__HAS_IO */
