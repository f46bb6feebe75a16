/* io_uring multishot receives (src/io_recv_ms.c): data arrives in order
 * through the provided buffers, the buffers go back to the pool, a lagging
 * reader holds a bounded number of them, an empty pool falls back to
 * single-shot receives, a bulk reader leaves the multishot path, the end
 * of the stream comes after the data, and a descriptor read after
 * multishot receives gets the queued data first. The peer is a plain
 * descriptor driven by the test thread. Uses the harness of
 * tests/test_io.c. */

/* A runtime on io_uring with multishot receives, or NULL (skipped). */
static blitz_runtime *ms_rt_new(void) {
    blitz_runtime *rt = tu_io_rt_new(BLITZ_BACKEND_IO_URING, TU_MT2);
    if (rt && !blitz__u32_load(&rt->io->ms_recv, BLITZ__RELAXED)) {
        printf("# skipped: this kernel has no multishot receive\n");
        CHECK_OK(blitz_runtime_free(rt));
        return NULL;
    }
    return rt;
}

/* A loopback TCP connection: the runtime's end as a socket, the other as
 * a plain blocking descriptor. */
static void ms_tcp_pair(blitz_runtime *rt, blitz_socket **sock, int *peer) {
    struct sockaddr_in a;
    int l = tu_plain_listener(4, 0, &a);
    *peer = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(*peer, 0);
    CHECK_EQ(connect(*peer, (struct sockaddr *)&a, sizeof a), 0);
    int fd = accept(l, NULL, NULL);
    CHECK_GE(fd, 0);
    close(l);
    int one = 1;
    setsockopt(*peer, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    CHECK_OK(blitz_sock_adopt(rt, fd, sock));
}

static void ms_write_all(int fd, const unsigned char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        CHECK_GT(w, 0);
        p += w;
        n -= (size_t)w;
    }
}

/* Writes the first `head` bytes, waits for the reader's first receive,
 * then writes the rest. */
static void ms_feed(int peer, const unsigned char *all, size_t head, size_t total,
                    atomic_int *first) {
    ms_write_all(peer, all, head);
    TU_WAIT_GE(first, 1, 5);
    ms_write_all(peer, all + head, total - head);
}

static void ms_close_pair(blitz_socket *s, int peer) {
    close(peer);
    blitz_sock_close(s);
}

/* Reads `total` bytes of io_pattern in receives of at most `chunk` bytes,
 * pausing `pause_ms` after the first one; then expects the end of the
 * stream (twice) when `eof` is set. From `fd_read_at` bytes on it reads
 * with blitz_fd_read instead. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    blitz_timer timer;
    size_t chunk;
    uint64_t total, got, fd_read_at;
    int pause_ms, eof, i;
    atomic_int *first;
    unsigned char *buf;
} ms_reader;

static blitz_poll ms_reader_poll(blitz_cx *cx, void *p) {
    ms_reader *r = p;
    BLITZ_BEGIN(r);
    while (r->got < r->total) {
        if (r->got >= r->fd_read_at)
            BLITZ_AWAIT(r, blitz_fd_read(cx, &r->op, r->sock, r->buf, r->chunk));
        else
            BLITZ_AWAIT(r, blitz_sock_recv(cx, &r->op, r->sock, r->buf, r->chunk));
        CHECK_GT(r->op.result, 0);
        for (long long k = 0; k < r->op.result; k++)
            CHECK_EQ(r->buf[k], io_pattern(r->got + (uint64_t)k));
        r->got += (uint64_t)r->op.result;
        if (r->first && !atomic_load(r->first)) {
            atomic_store(r->first, 1);
            if (r->pause_ms)
                BLITZ_AWAIT(r, blitz_sleep(cx, &r->timer, r->pause_ms * BLITZ_MSEC));
        }
    }
    for (r->i = 0; r->eof && r->i < 2; r->i++) {
        BLITZ_AWAIT(r, blitz_sock_recv(cx, &r->op, r->sock, r->buf, r->chunk));
        CHECK_EQ(r->op.result, 0);
    }
    BLITZ_END(r);
}

static blitz_task *ms_spawn_reader_ex(blitz_runtime *rt, blitz_socket *s, size_t chunk,
                                      uint64_t total, int pause_ms, atomic_int *first, int eof,
                                      uint64_t fd_read_at) {
    ms_reader r;
    memset(&r, 0, sizeof r);
    r.sock = s;
    r.chunk = chunk;
    r.total = total;
    r.pause_ms = pause_ms;
    r.first = first;
    r.eof = eof;
    r.fd_read_at = fd_read_at;
    r.buf = malloc(chunk);
    CHECK_NOT_NULL(r.buf);
    blitz_task *t = NULL;
    CHECK_OK(blitz_spawn(rt, ms_reader_poll, &r, sizeof r, &t));
    return t;
}

static blitz_task *ms_spawn_reader(blitz_runtime *rt, blitz_socket *s, size_t chunk, uint64_t total,
                                   int pause_ms, atomic_int *first) {
    return ms_spawn_reader_ex(rt, s, chunk, total, pause_ms, first, 0, UINT64_MAX);
}

static void ms_reader_done(blitz_task **t) {
    CHECK_OK(blitz_join_blocking(*t));
    CHECK_OK(blitz_task_status(*t));
    ms_reader *r = blitz_task_state(*t);
    CHECK_EQ(r->got, r->total);
    free(r->buf);
    blitz_task_release(t);
}

static unsigned char *ms_pattern_buf(uint64_t from, size_t n) {
    unsigned char *b = malloc(n);
    CHECK_NOT_NULL(b);
    for (size_t i = 0; i < n; i++)
        b[i] = io_pattern(from + i);
    return b;
}

/* Many small messages, each read as it comes: one multishot receive
 * carries them all, and the pool never runs dry although the messages
 * outnumber its buffers (each buffer went back). */
BLITZ_TEST(io_ms_messages) {
    blitz_runtime *rt = ms_rt_new();
    if (!rt)
        return 0;
    blitz_socket *s;
    int peer;
    ms_tcp_pair(rt, &s, &peer);
    const int msgs = (int)test_scaled(3 * BLITZ_URING_RECV_BUFS);
    const size_t size = 100;
    atomic_int first = 0;
    blitz_task *t = ms_spawn_reader(rt, s, 1000, (uint64_t)msgs * size, 0, &first);
    unsigned char *all = ms_pattern_buf(0, (size_t)msgs * size);
    for (int i = 0; i < msgs; i++) {
        ms_write_all(peer, all + (size_t)i * size, size);
        if (i % 64 == 0)
            tu_sleep_ms(1); /* let the reader catch up: short receives */
    }
    ms_reader_done(&t);
    blitz__io *io = rt->io;
    printf("# %d messages: %llu multishot arms, %llu pool exhaustions\n", msgs,
           (unsigned long long)blitz__u64_load(&io->rms_armed_count, BLITZ__RELAXED),
           (unsigned long long)blitz__u64_load(&io->rms_nobufs_count, BLITZ__RELAXED));
    CHECK_GE(blitz__u64_load(&io->rms_armed_count, BLITZ__RELAXED), 1);
    CHECK_EQ(blitz__u64_load(&io->rms_nobufs_count, BLITZ__RELAXED), 0);
    free(all);
    ms_close_pair(s, peer);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A reader that stops reading while 4 MiB arrive: its multishot receive
 * is cancelled at BLITZ__RECV_MS_HOLD buffers, the rest waits in the
 * kernel, and every byte comes out in order afterwards. */
BLITZ_TEST(io_ms_lagging_reader) {
    blitz_runtime *rt = ms_rt_new();
    if (!rt)
        return 0;
    blitz_socket *s;
    int peer;
    ms_tcp_pair(rt, &s, &peer);
    const size_t total = (size_t)test_scaled(4) << 20;
    atomic_int first = 0;
    blitz_task *t = ms_spawn_reader(rt, s, 1000, total, 100, &first);
    unsigned char *all = ms_pattern_buf(0, total);
    ms_feed(peer, all, 10, total, &first); /* the first receive, then the pause */
    ms_reader_done(&t);
    CHECK_GE(blitz__u64_load(&rt->io->rms_held_cancels, BLITZ__RELAXED), 1);
    free(all);
    ms_close_pair(s, peer);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* More lagging readers than the pool can hold (each may hold
 * BLITZ__RECV_MS_HOLD buffers): the kernel ends their multishot receives
 * with ENOBUFS, they go on single-shot, and no byte is lost. */
BLITZ_TEST(io_ms_pool_exhausted) {
    blitz_runtime *rt = ms_rt_new();
    if (!rt)
        return 0;
    enum { CONNS = 3 * BLITZ_URING_RECV_BUFS / BLITZ__RECV_MS_HOLD };
    const size_t each = (size_t)BLITZ__RECV_MS_HOLD * BLITZ_URING_RECV_BUF_SIZE * 2;
    blitz_socket *s[CONNS];
    int peer[CONNS];
    blitz_task *t[CONNS];
    atomic_int first[CONNS];
    unsigned char *all = ms_pattern_buf(0, each);
    for (int i = 0; i < CONNS; i++) {
        atomic_init(&first[i], 0);
        ms_tcp_pair(rt, &s[i], &peer[i]);
        t[i] = ms_spawn_reader(rt, s[i], 1000, each, 300, &first[i]);
        ms_write_all(peer[i], all, 10);
    }
    for (int i = 0; i < CONNS; i++) {
        TU_WAIT_GE(&first[i], 1, 5);
        ms_write_all(peer[i], all + 10, each - 10);
    }
    for (int i = 0; i < CONNS; i++)
        ms_reader_done(&t[i]);
    printf("# %d readers: %llu pool exhaustions\n", CONNS,
           (unsigned long long)blitz__u64_load(&rt->io->rms_nobufs_count, BLITZ__RELAXED));
    CHECK_GE(blitz__u64_load(&rt->io->rms_nobufs_count, BLITZ__RELAXED), 1);
    for (int i = 0; i < CONNS; i++) {
        ms_close_pair(s[i], peer[i]);
    }
    free(all);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A bulk reader (64 KiB receives that come back full) leaves the
 * multishot path after a few arms instead of paying a copy per byte. */
BLITZ_TEST(io_ms_bulk_reader) {
    blitz_runtime *rt = ms_rt_new();
    if (!rt)
        return 0;
    blitz_socket *s;
    int peer;
    ms_tcp_pair(rt, &s, &peer);
    const size_t total = (size_t)test_scaled(32) << 20;
    atomic_int first = 0;
    blitz_task *t = ms_spawn_reader(rt, s, 64 << 10, total, 0, &first);
    unsigned char *all = ms_pattern_buf(0, total);
    ms_write_all(peer, all, total);
    ms_reader_done(&t);
    uint64_t arms = blitz__u64_load(&rt->io->rms_armed_count, BLITZ__RELAXED);
    printf("# %zu MiB in 64 KiB receives: %llu multishot arms\n", total >> 20,
           (unsigned long long)arms);
    /* Usually one arm; more where the reader catches up with the writer
     * (a short receive is not a bulk one), which depends on scheduling.
     * The fault this guards against re-arms for every receive. */
    CHECK_LT(arms, (uint64_t)(total / (64 << 10)) / 4);
    free(all);
    ms_close_pair(s, peer);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* The end of the stream after data already queued: the data first, then
 * 0, and 0 again. */
BLITZ_TEST(io_ms_eof_after_data) {
    blitz_runtime *rt = ms_rt_new();
    if (!rt)
        return 0;
    for (int round = 0; round < (int)test_scaled(20); round++) {
        blitz_socket *s;
        int peer;
        ms_tcp_pair(rt, &s, &peer);
        atomic_int first = 0;
        const size_t total = 3000;
        blitz_task *t =
            ms_spawn_reader_ex(rt, s, 700, total, round % 2 ? 20 : 0, &first, 1, UINT64_MAX);
        unsigned char *all = ms_pattern_buf(0, total);
        ms_feed(peer, all, 100, total, &first);
        CHECK_EQ(shutdown(peer, SHUT_WR), 0);
        ms_reader_done(&t);
        free(all);
        ms_close_pair(s, peer);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Descriptor reads after multishot receives: the data the multishot
 * receive queued comes first, then the descriptor's, in order. */
BLITZ_TEST(io_ms_then_fd_read) {
    blitz_runtime *rt = ms_rt_new();
    if (!rt)
        return 0;
    blitz_socket *s;
    int peer;
    ms_tcp_pair(rt, &s, &peer);
    const size_t total = 256 << 10;
    atomic_int first = 0;
    blitz_task *t = ms_spawn_reader_ex(rt, s, 500, total, 50, &first, 0, 100);
    unsigned char *all = ms_pattern_buf(0, total);
    ms_feed(peer, all, 100, total, &first);
    ms_reader_done(&t);
    free(all);
    ms_close_pair(s, peer);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Accepts `n` connections; sends one byte on each, then closes it. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *listener, *conn;
    blitz_io op;
    int n, i;
} ms_acceptor;

static blitz_poll ms_acceptor_poll(blitz_cx *cx, void *p) {
    ms_acceptor *a = p;
    BLITZ_BEGIN(a);
    for (a->i = 0; a->i < a->n; a->i++) {
        BLITZ_AWAIT(a, blitz_sock_accept(cx, &a->op, a->listener));
        CHECK_OK((int)a->op.result);
        a->conn = a->op.socket;
        BLITZ_AWAIT(a, blitz_sock_send_all(cx, &a->op, a->conn, "x", 1));
        CHECK_EQ((int)a->op.result, 1);
        blitz_sock_close(a->conn);
    }
    BLITZ_END(a);
}

/* An io_uring runtime whose listeners arm a multishot accept, or NULL
 * (the test reports itself skipped) where the kernel has neither. */
static blitz_runtime *ms_accept_rt(tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(BLITZ_BACKEND_IO_URING, f);
    if (rt && !rt->io->ms_accept) {
        printf("# skipped: this kernel has no multishot accept\n");
        CHECK_OK(blitz_runtime_free(rt));
        rt = NULL;
    }
    return rt;
}

static void ms_accept_n(blitz_runtime *rt, blitz_socket *l, int n) {
    ms_acceptor a;
    memset(&a, 0, sizeof a);
    a.listener = l;
    a.n = n;
    blitz_task *t = NULL;
    CHECK_OK(blitz_spawn(rt, ms_acceptor_poll, &a, sizeof a, &t));
    CHECK_OK(blitz_join_blocking(t));
    blitz_task_release(&t);
}

/* A listener's multishot accept stays armed after an accept, and the
 * kernel accepts for it while nobody asks. Clients arriving while the
 * program does not accept must wait in the backlog, not become open
 * descriptors without bound: past BLITZ__ACCEPT_QUEUE_MAX, only those the
 * kernel accepted before the cancel landed are taken. Then every one of them,
 * queued or in the backlog, is still accepted and served. */
BLITZ_TEST(io_ms_accept_bounded) {
    blitz_runtime *rt = ms_accept_rt((tu_flavor){BLITZ_MULTI_THREAD, 1});
    if (!rt)
        return 0;
    enum { CLIENTS = 200 };
    blitz_addr a;
    blitz_socket *l = tu_listen_any(rt, &a);
    int cli[CLIENTS];
    cli[0] = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(cli[0], 0);
    CHECK_EQ(connect(cli[0], (struct sockaddr *)(void *)a.u.bytes, a.len), 0);
    ms_accept_n(rt, l, 1); /* arms the multishot accept */
    int base = tu_open_fds();
    /* Clients arrive in groups of 10. Until the bound, the kernel accepts
     * each group for the multishot accept; wait for that before the next
     * group (and, once past the bound, for the cancel to land), so what
     * is measured is the bound, not this machine's speed: a group that
     * arrives at once is accepted at once. */
    int taken = 0;
    for (int i = 1; i < CLIENTS; i++) {
        cli[i] = socket(AF_INET, SOCK_STREAM, 0);
        CHECK_GE(cli[i], 0);
        CHECK_EQ(connect(cli[i], (struct sockaddr *)(void *)a.u.bytes, a.len), 0);
        if (i % 10 != 0 && i != CLIENTS - 1)
            continue;
        int want = i < (int)BLITZ__ACCEPT_QUEUE_MAX ? i : (int)BLITZ__ACCEPT_QUEUE_MAX;
        double deadline = tu_now() + 5 * tu_timeout_mult();
        while ((taken = tu_open_fds() - base - i) < want) {
            CHECK_BASE(tu_now() < deadline, "%d of %d clients accepted ahead", taken, i);
            tu_sleep_ms(1);
        }
        if (taken >= (int)BLITZ__ACCEPT_QUEUE_MAX)
            tu_sleep_ms(30);
    }
    taken = tu_open_fds() - base - (CLIENTS - 1);
    printf("# %d of %d waiting clients were accepted ahead (queue bound %u)\n", taken, CLIENTS - 1,
           BLITZ__ACCEPT_QUEUE_MAX);
    fflush(stdout);
    CHECK_GE(taken, (int)BLITZ__ACCEPT_QUEUE_MAX);
    CHECK_LE(taken, (int)BLITZ__ACCEPT_QUEUE_MAX + 20);
    /* Every client, the queued ones and those left in the backlog, is
     * accepted and gets its byte. */
    ms_accept_n(rt, l, CLIENTS - 1);
    for (int i = 0; i < CLIENTS; i++) {
        char c = 0;
        struct timeval tv = {5, 0};
        setsockopt(cli[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        CHECK_EQ(read(cli[i], &c, 1), 1);
        CHECK_EQ(c, 'x');
        close(cli[i]);
    }
    blitz_sock_close(l);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A connection the kernel accepted for a task that never takes it (the
 * task ended or was dropped between the completion and its next poll) is
 * the runtime's to close: no descriptor is left behind, and the client
 * sees its connection end. Both io_uring accept paths: the listener's
 * multishot accept, and one accept per op (kernels before 5.19). */
typedef struct {
    blitz_socket *listener;
    blitz_addr addr;
    blitz_io op;
    int client, dispatched;
} ms_unclaimed;

/* Submits what `r` holds and waits up to `ms` milliseconds for a
 * completion to show in it (running the ring's task work); nonzero when
 * one did. */
static int ms_uring_wait_cq(blitz__ring *r, double ms) {
    blitz__uring_flush(r);
    double deadline = tu_now() + ms / 1e3;
    while (!blitz__uring_cq_ready(r) && tu_now() < deadline) {
#if BLITZ__LINUX
        blitz__uring_enter(r->fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
#endif
        if (!blitz__uring_cq_ready(r))
            tu_sleep_ms(1);
    }
    return blitz__uring_cq_ready(r);
}

static blitz_poll ms_unclaimed_poll(blitz_cx *cx, void *p) {
    ms_unclaimed *u = p;
    if (blitz_sock_accept(cx, &u->op, u->listener) == BLITZ_READY)
        return BLITZ_READY; /* dispatched stays 0: the check below fails */
    u->client = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(u->client, 0);
    CHECK_EQ(connect(u->client, (struct sockaddr *)(void *)u->addr.u.bytes, u->addr.len), 0);
    /* The completion is taken from the ring here, in the task: the op is
     * over, and the task ends without polling it again. */
    blitz__io *io = blitz_cx_runtime(cx)->io;
    ms_uring_wait_cq(blitz__uring_mine(io, NULL), 5000 * tu_timeout_mult());
    blitz__uring_poll(io);
    u->dispatched = blitz__op_state(&u->op) != BLITZ__IO_WAIT;
    return BLITZ_READY;
}

BLITZ_TEST(io_uring_accept_unclaimed) {
    for (int multishot = 1; multishot >= 0; multishot--) {
        int fds = tu_open_fds();
        blitz_runtime *rt = tu_io_rt_new(BLITZ_BACKEND_IO_URING, TU_CT);
        if (!rt)
            return 0;
        if (multishot && !rt->io->ms_accept) {
            printf("# this kernel has no multishot accept\n");
            CHECK_OK(blitz_runtime_free(rt));
            continue;
        }
        rt->io->ms_accept = multishot;
        ms_unclaimed *u = calloc(1, sizeof *u);
        CHECK(u != NULL);
        u->listener = tu_listen_any(rt, &u->addr);
        CHECK_OK(blitz_runtime_run(rt, ms_unclaimed_poll, u, sizeof *u));
        CHECK(u->dispatched);
        blitz_sock_close(u->listener);
        CHECK_OK(blitz_runtime_free(rt));
        /* The server's end is closed: end of stream (or a reset, for a
         * connection still in the backlog). */
        struct pollfd pfd = {u->client, POLLIN, 0};
        CHECK_EQ(poll(&pfd, 1, (int)(5000 * tu_timeout_mult())), 1);
        char c;
        ssize_t n = read(u->client, &c, 1);
        CHECK(n == 0 || (n < 0 && errno == ECONNRESET));
        close(u->client);
        CHECK_EQ(tu_open_fds(), fds);
        free(u);
    }
    return 0;
}
