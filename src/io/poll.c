/* The poll backend, the portable fallback, a readiness backend
 * (backend.h). Level-triggered, so only the directions that have waiters
 * are polled: a socket joins the poll set when an op registers a waiter
 * (its `want` bits) and leaves it when a wait cycle finds it without
 * waiters. Its wake-up object is a self-pipe (io->wake_fd writes, its
 * read end io->wake_rd is always in the set); a thread blocked in ppoll
 * is kicked through it when a socket joins or leaves the set. */
#include "io.h"

#if BLITZ__HAS_IO /* POSIX only until the IOCP backend (platform.h) */

#if !defined(BLITZ_NO_POLL)

static void blitz__pollb_destroy(blitz__io *io);

static int blitz__pollb_init(blitz__io *io) {
    int fds[2];
    int opened = blitz__pipe_open(fds, 1);
    if (opened != BLITZ_OK)
        return opened;
    io->wake_rd = blitz__fd_above_stdio(fds[0]);
    io->wake_fd = blitz__fd_above_stdio(fds[1]);
    io->pcap = 64;
    io->pset = (blitz_socket **)blitz__calloc(sizeof(blitz_socket *) * io->pcap);
    io->pfd_cap = 65;
    io->pfds = (struct pollfd *)blitz__calloc(sizeof(struct pollfd) * io->pfd_cap);
    io->psocks = (blitz_socket **)blitz__calloc(sizeof(blitz_socket *) * io->pfd_cap);
    if (!io->pset || !io->pfds || !io->psocks) {
        blitz__pollb_destroy(io); /* frees what was allocated */
        return BLITZ_ENOMEM;
    }
    /* The wait is tried once: a seccomp filter may refuse ppoll, and
     * workers would retry it forever. */
    struct timespec zero = {0, 0};
    if (blitz__poll_wait(NULL, 0, &zero) < 0 && errno != EINTR) {
        int rc = blitz__from_errno(errno);
        blitz__pollb_destroy(io);
        return rc;
    }
    return BLITZ_OK;
}

static void blitz__pollb_destroy(blitz__io *io) {
    blitz__free(io->pset);
    blitz__free(io->pfds);
    blitz__free(io->psocks);
    io->pset = NULL;
    io->pfds = NULL;
    io->psocks = NULL;
    if (io->wake_fd >= 0)
        close(io->wake_fd);
    if (io->wake_rd >= 0)
        close(io->wake_rd);
    io->wake_fd = io->wake_rd = -1;
}

/* Empties the self-pipe (every wake-up wrote 8 bytes). */
static void blitz__pollb_drain(int fd) {
    char buf[256];
    ssize_t r;
    do
        r = read(fd, buf, sizeof buf);
    while (r == (ssize_t)sizeof buf || (r < 0 && errno == EINTR));
}

static int blitz__pollb_grow(void **p, uint32_t *cap, size_t elem, uint32_t need) {
    if (need <= *cap)
        return 1;
    uint32_t n = *cap * 2;
    while (n < need)
        n *= 2;
    void *q = blitz__calloc(elem * n);
    if (!q)
        return 0;
    memcpy(q, *p, elem * *cap);
    blitz__free(*p);
    *p = q;
    *cap = n;
    return 1;
}

/* A socket gets a waiter of direction `bit` (caller holds its lock).
 * BLITZ_ENOMEM when the set cannot take it: the bit is taken back, so the
 * next waiter tries again. */
static int blitz__pollb_want(blitz__io *io, blitz_socket *s, uint32_t bit) {
    if (blitz__u32_load(&s->want, BLITZ__RELAXED) & bit)
        return BLITZ_OK;
    blitz__u32_fetch_or(&s->want, bit, BLITZ__SEQ_CST);
    blitz__mutex_lock(&io->poll_lock);
    int kept = s->poll_slot >= 0 || (!BLITZ__FAULT(poll_want) &&
                                     blitz__pollb_grow((void **)&io->pset, &io->pcap,
                                                       sizeof(blitz_socket *), io->pcount + 1));
    if (s->poll_slot < 0 && kept) {
        s->poll_slot = (int)io->pcount;
        io->pset[io->pcount++] = s;
    }
    blitz__mutex_unlock(&io->poll_lock);
    if (!kept) {
        /* Not in the set: no poller reads the bit. */
        blitz__u32_fetch_and(&s->want, ~bit, BLITZ__RELAXED);
        return BLITZ_ENOMEM;
    }
    /* Seq_cst pairs with the poller's announcement before it builds its
     * set: either it sees this socket or this side sees it blocked. */
    if (blitz__u32_load(&io->poll_blocked, BLITZ__SEQ_CST)) {
        uint64_t one = 1;
        ssize_t r = write(io->wake_fd, &one, sizeof one);
        (void)r;
    }
    return BLITZ_OK;
}

static void blitz__pollb_remove_locked(blitz__io *io, blitz_socket *s) {
    int i = s->poll_slot;
    if (i < 0)
        return;
    blitz_socket *last = io->pset[--io->pcount];
    io->pset[i] = last;
    last->poll_slot = i;
    s->poll_slot = -1;
}

/* A socket's descriptor is closed (or its memory is about to go). A
 * poller blocked with it in its set is woken: its ppoll holds the file
 * open (a TCP peer would not see the end of the stream until it
 * returns). */
static void blitz__pollb_forget(blitz__io *io, blitz_socket *s) {
    blitz__mutex_lock(&io->poll_lock);
    int was_in_set = s->poll_slot >= 0;
    blitz__pollb_remove_locked(io, s);
    blitz__mutex_unlock(&io->poll_lock);
    if (was_in_set && blitz__u32_load(&io->poll_blocked, BLITZ__SEQ_CST)) {
        uint64_t one = 1;
        ssize_t r = write(io->wake_fd, &one, sizeof one);
        (void)r;
    }
}

static void blitz__pollb_wait(blitz__io *io, uint64_t timeout_ns) {
    if (timeout_ns)
        blitz__u32_store(&io->poll_blocked, 1, BLITZ__SEQ_CST);
    blitz__mutex_lock(&io->poll_lock);
    int n = 0;
    if (io->pfd_cap < io->pcount + 1) {
        uint32_t cap = io->pfd_cap;
        uint32_t cap2 = io->pfd_cap;
        if (!blitz__pollb_grow((void **)&io->pfds, &cap, sizeof(struct pollfd), io->pcount + 1) ||
            !blitz__pollb_grow((void **)&io->psocks, &cap2, sizeof(blitz_socket *),
                               io->pcount + 1)) {
            /* Out of memory: poll what fits. */
        }
        io->pfd_cap = cap < cap2 ? cap : cap2;
    }
    short rd_events = blitz__poll_read_events();
    io->pfds[n].fd = io->wake_rd;
    io->pfds[n].events = POLLIN;
    io->pfds[n].revents = 0;
    io->psocks[n++] = NULL;
    for (uint32_t i = 0; i < io->pcount && (uint32_t)n < io->pfd_cap;) {
        blitz_socket *s = io->pset[i];
        uint32_t want = blitz__u32_load(&s->want, BLITZ__SEQ_CST);
        if (!want) {
            blitz__pollb_remove_locked(io, s);
            continue;
        }
        io->pfds[n].fd = s->fd;
        io->pfds[n].events = (short)(((want & 1u) ? rd_events : 0) | ((want & 2u) ? POLLOUT : 0));
        io->pfds[n].revents = 0;
        io->psocks[n++] = s;
        i++;
    }
    blitz__mutex_unlock(&io->poll_lock);
    struct timespec ts, *tsp = NULL;
    if (timeout_ns != BLITZ__IO_FOREVER) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tsp = &ts;
    }
    int r = blitz__poll_wait(io->pfds, (nfds_t)n, tsp);
    blitz__u32_store(&io->poll_blocked, 0, BLITZ__RELAXED);
    io->npfds = r > 0 ? n : 0;
}

static void blitz__pollb_dispatch(blitz__io *io) {
    short rd_events = blitz__poll_read_events();
    int n = io->npfds;
    io->npfds = 0;
    for (int i = 0; i < n; i++) {
        short ev = io->pfds[i].revents;
        if (!ev)
            continue;
        blitz_socket *s = io->psocks[i];
        if (!s) {
            blitz__pollb_drain(io->wake_rd);
            continue;
        }
        int rd = (ev & (rd_events | POLLHUP | POLLERR | POLLNVAL | POLLPRI)) != 0;
        int wr = (ev & (POLLOUT | POLLHUP | POLLERR | POLLNVAL)) != 0;
        blitz__io_ready(s, rd, wr);
    }
}

static const blitz__io_backend blitz__pollb_vtable = {
    .kind = BLITZ_BACKEND_POLL,
    .name = "poll",
    .completion = 0,
    .look_interval = 0,
    .init = blitz__pollb_init,
    .destroy = blitz__pollb_destroy,
    .submit = blitz__ready_submit,
    .sock_del = blitz__pollb_forget,
    .sock_free = blitz__pollb_forget,
    .want = blitz__pollb_want,
    .poll = blitz__ready_poll,
    .park = blitz__ready_park,
    .wait = blitz__pollb_wait,
    .dispatch = blitz__pollb_dispatch,
};

#else

static int blitz__pollb_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}

static const blitz__io_backend blitz__pollb_vtable = {
    .kind = BLITZ_BACKEND_POLL,
    .name = "poll",
    .init = blitz__pollb_init,
};

#endif

BLITZ_PRIVATE const blitz__io_backend *blitz__backend_poll(void) {
    return &blitz__pollb_vtable;
}

#endif /* BLITZ__HAS_IO */
