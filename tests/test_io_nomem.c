/* Allocation failures on the I/O paths, injected at the library's
 * BLITZ__FAULT sites: a connection the runtime cannot keep, or data it
 * cannot queue, is reported (BLITZ_ENOMEM), never dropped without a word.
 * The peers are plain descriptors driven by the test thread. Uses the
 * harnesses of tests/test_io.c and tests/test_io_multishot.c. */
#include <netinet/tcp.h>
#include <poll.h>

/* Per site: failures still to inject (-1: every time), failures injected,
 * and a delay in ms taken at each pass instead. */
static atomic_int test_fault_left[TEST_FAULT_SITES];
static atomic_int test_fault_hits[TEST_FAULT_SITES];
static atomic_int test_fault_delay_ms[TEST_FAULT_SITES];

static int test_fault(int site) {
    int delay = atomic_load(&test_fault_delay_ms[site]);
    if (delay > 0)
        tu_sleep_ms(delay);
    int n = atomic_load(&test_fault_left[site]);
    while (n != 0) {
        if (n < 0 || atomic_compare_exchange_weak(&test_fault_left[site], &n, n - 1)) {
            atomic_fetch_add(&test_fault_hits[site], 1);
            return 1;
        }
    }
    return 0;
}

static void nm_fault(int site, int n) {
    atomic_store(&test_fault_left[site], n);
}

/* A plain client connected to `a` (the kernel completes the handshake
 * without an accept). */
static int nm_connect(const blitz_addr *a) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(fd, 0);
    CHECK_EQ(connect(fd, (const struct sockaddr *)(const void *)a->u.bytes, a->len), 0);
    return fd;
}

/* One byte from the server: 1 for 'x', 0 for the end of the stream or a
 * reset (the server closed the connection without serving it). */
static int nm_served(int fd) {
    struct pollfd pfd = {fd, POLLIN, 0};
    CHECK_EQ(poll(&pfd, 1, (int)(5000 * tu_timeout_mult())), 1);
    char c = 0;
    ssize_t n = read(fd, &c, 1);
    if (n == 1) {
        CHECK_EQ(c, 'x');
        return 1;
    }
    CHECK(n == 0 || (n < 0 && errno == ECONNRESET));
    return 0;
}

/* What a server did, read by the test thread while it runs. */
typedef struct {
    atomic_int served, nomem;
} nm_counts;

/* Accepts until `n` connections were served ('x', then closed) or
 * reported lost (BLITZ_ENOMEM). */
typedef struct {
    BLITZ_CORO;
    blitz_socket *listener, *conn;
    blitz_io op;
    int n;
    nm_counts *c;
} nm_server;

static blitz_poll nm_server_poll(blitz_cx *cx, void *p) {
    nm_server *s = p;
    BLITZ_BEGIN(s);
    while (atomic_load(&s->c->served) + atomic_load(&s->c->nomem) < s->n) {
        BLITZ_AWAIT(s, blitz_sock_accept(cx, &s->op, s->listener));
        if (s->op.result == BLITZ_ENOMEM) {
            CHECK_NULL(s->op.socket);
            atomic_fetch_add(&s->c->nomem, 1);
            continue;
        }
        CHECK_OK((int)s->op.result);
        s->conn = s->op.socket;
        BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->op, s->conn, "x", 1));
        CHECK_EQ((int)s->op.result, 1);
        blitz_sock_close(s->conn);
        atomic_fetch_add(&s->c->served, 1);
    }
    BLITZ_END(s);
}

static blitz_task *nm_spawn_server(blitz_runtime *rt, blitz_socket *l, int n, nm_counts *c) {
    nm_server s;
    memset(&s, 0, sizeof s);
    s.listener = l;
    s.n = n;
    s.c = c;
    blitz_task *t = NULL;
    CHECK_OK(blitz_spawn(rt, nm_server_poll, &s, sizeof s, &t));
    return t;
}

/* The accepted connection cannot become a socket (and, on io_uring, the
 * multishot accept cannot queue it either): the accept that waits for it
 * gets BLITZ_ENOMEM and the client sees the connection closed, on every
 * backend. Once memory is back the next connection is accepted. */
static int io_accept_nomem(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    blitz_addr a;
    blitz_socket *l = tu_listen_any(rt, &a);
    nm_fault(TEST_FAULT_sock_alloc, -1);
    nm_fault(TEST_FAULT_queue_grow, -1);
    nm_counts cs = {0, 0}, *s = &cs;
    blitz_task *t = nm_spawn_server(rt, l, 2, s);
    int c1 = nm_connect(&a);
    TU_WAIT_GE(&s->nomem, 1, 5);
    CHECK_EQ(nm_served(c1), 0);
    nm_fault(TEST_FAULT_sock_alloc, 0);
    nm_fault(TEST_FAULT_queue_grow, 0);
    int c2 = nm_connect(&a);
    CHECK_EQ(nm_served(c2), 1);
    CHECK_OK(blitz_join_blocking(t));
    CHECK_OK(blitz_task_status(t));
    CHECK_EQ(tu_ldi(&s->nomem), 1);
    CHECK_EQ(tu_ldi(&s->served), 1);
    CHECK_GE(tu_ldi(&test_fault_hits[TEST_FAULT_sock_alloc]), 1);
    if (b == BLITZ_BACKEND_IO_URING && rt->io->ms_accept)
        CHECK_GE(tu_ldi(&test_fault_hits[TEST_FAULT_queue_grow]), 1);
    blitz_task_release(&t);
    close(c1);
    close(c2);
    blitz_sock_close(l);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_accept_nomem)

/* Connections waiting in a listener's backlog (the kernel's count of
 * them, TCP_INFO's tcpi_unacked on a listening socket). */
static int nm_backlog(int fd) {
#if BLITZ__LINUX
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    CHECK_EQ(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
    return (int)ti.tcpi_unacked;
#else
    (void)fd; /* only io_uring's tests ask */
    return -1;
#endif
}

/* io_uring's multishot accept has no memory to queue the connections it
 * accepts. The first of each batch the kernel accepts waits in the
 * listener's spare slot and is served; the rest of a batch cannot be
 * kept, and as many accepts get BLITZ_ENOMEM as clients see their
 * connection closed. The clients all wait in the backlog first, so the
 * kernel accepts them together when the multishot accept is armed. */
BLITZ_TEST(io_uring_accept_queue_nomem) {
    blitz_runtime *rt = ms_accept_rt(TU_MT2);
    if (!rt)
        return 0;
    enum { CLIENTS = 4 };
    blitz_addr a;
    blitz_socket *l = tu_listen_any(rt, &a);
    int cli[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        cli[i] = nm_connect(&a);
    TU_WAIT_UNTIL(nm_backlog(blitz_sock_fd(l)) == CLIENTS, 5, 1);
    nm_fault(TEST_FAULT_queue_grow, -1);
    nm_counts cs = {0, 0}, *s = &cs;
    blitz_task *t = nm_spawn_server(rt, l, CLIENTS, s);
    int served = 0;
    for (int i = 0; i < CLIENTS; i++)
        served += nm_served(cli[i]);
    /* Every connection is accounted for: served, or reported. */
    TU_WAIT_GE(&s->served, served, 5);
    TU_WAIT_GE(&s->nomem, CLIENTS - served, 5);
    CHECK_OK(blitz_join_blocking(t));
    CHECK_OK(blitz_task_status(t));
    printf("# %d clients: %d served, %d reported lost\n", CLIENTS, served, tu_ldi(&s->nomem));
    CHECK_EQ(tu_ldi(&s->served), served);
    CHECK_EQ(tu_ldi(&s->nomem), CLIENTS - served);
    CHECK_GE(served, 1);
    CHECK_GE(tu_ldi(&test_fault_hits[TEST_FAULT_queue_grow]), CLIENTS);
    blitz_task_release(&t);
    for (int i = 0; i < CLIENTS; i++)
        close(cli[i]);
    blitz_sock_close(l);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Two receives; between them the test thread writes the second message. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    char buf[16];
    int64_t first, second;
    atomic_int *step;
} nm_reader;

static blitz_poll nm_reader_poll(blitz_cx *cx, void *p) {
    nm_reader *r = p;
    BLITZ_BEGIN(r);
    BLITZ_AWAIT(r, blitz_sock_recv(cx, &r->op, r->sock, r->buf, sizeof r->buf));
    r->first = r->op.result;
    if (r->first > 0)
        CHECK_EQ(r->buf[0], 'a');
    atomic_store(r->step, 1);
    BLITZ_AWAIT(r, blitz_sock_recv(cx, &r->op, r->sock, r->buf, sizeof r->buf));
    r->second = r->op.result;
    if (r->second > 0)
        CHECK_EQ(r->buf[0], 'b');
    BLITZ_END(r);
}

/* Data arrives while there is no memory to queue it (io_uring's multishot
 * receive; the readiness backends receive into the reader's buffer and
 * need none): the reader gets BLITZ_ENOMEM, and from then on every
 * receive does, so data sent after the gap never reads as if it followed
 * on. Elsewhere both messages arrive. */
static int io_recv_nomem(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    blitz_socket *sock;
    int peer;
    ms_tcp_pair(rt, &sock, &peer);
    int ms = b == BLITZ_BACKEND_IO_URING && blitz__u32_load(&rt->io->ms_recv, BLITZ__RELAXED);
    nm_fault(TEST_FAULT_queue_grow, -1);
    nm_reader init;
    memset(&init, 0, sizeof init);
    atomic_int step = 0;
    init.sock = sock;
    init.step = &step;
    blitz_task *t = NULL;
    CHECK_OK(blitz_spawn(rt, nm_reader_poll, &init, sizeof init, &t));
    if (ms) /* the receive waits in the kernel: the data comes through the queue */
        TU_WAIT_UNTIL(blitz__u64_load(&rt->io->rms_armed_count, BLITZ__RELAXED) >= 1, 5, 1);
    ms_write_all(peer, (const unsigned char *)"a", 1);
    TU_WAIT_GE(&step, 1, 5);
    nm_fault(TEST_FAULT_queue_grow, 0);
    ms_write_all(peer, (const unsigned char *)"b", 1);
    CHECK_OK(blitz_join_blocking(t));
    CHECK_OK(blitz_task_status(t));
    nm_reader *r = blitz_task_state(t);
    if (ms) {
        CHECK_GE(tu_ldi(&test_fault_hits[TEST_FAULT_queue_grow]), 1);
        CHECK_EQ(r->first, BLITZ_ENOMEM);
        CHECK_EQ(r->second, BLITZ_ENOMEM);
    } else {
        CHECK_EQ(r->first, 1);
        CHECK_EQ(r->second, 1);
    }
    blitz_task_release(&t);
    ms_close_pair(sock, peer);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_recv_nomem)

/* The poll backend's set cannot take a socket whose receive must wait:
 * the receive gets BLITZ_ENOMEM at once (it would otherwise wait for
 * events no poller looks for), and the next receive, with memory back,
 * enters the set and gets its data. */
BLITZ_TEST(io_poll_want_nomem) {
    blitz_runtime *rt = tu_io_rt_new(BLITZ_BACKEND_POLL, TU_MT2);
    if (!rt)
        return 0;
    blitz_socket *sock;
    int peer;
    ms_tcp_pair(rt, &sock, &peer);
    nm_fault(TEST_FAULT_poll_want, 1);
    nm_reader init;
    memset(&init, 0, sizeof init);
    atomic_int step = 0;
    init.sock = sock;
    init.step = &step;
    blitz_task *t = NULL;
    CHECK_OK(blitz_spawn(rt, nm_reader_poll, &init, sizeof init, &t));
    TU_WAIT_GE(&step, 1, 5);
    /* The second receive waits in the set before the data comes. */
    int in_set = 0;
    for (double end = tu_now() + 5 * tu_timeout_mult(); !in_set && tu_now() < end;) {
        blitz__mutex_lock(&rt->io->poll_lock);
        in_set = sock->poll_slot >= 0;
        blitz__mutex_unlock(&rt->io->poll_lock);
        if (!in_set)
            tu_sleep_ms(1);
    }
    CHECK(in_set);
    ms_write_all(peer, (const unsigned char *)"b", 1);
    CHECK_OK(blitz_join_blocking(t));
    CHECK_OK(blitz_task_status(t));
    nm_reader *r = blitz_task_state(t);
    CHECK_EQ(tu_ldi(&test_fault_hits[TEST_FAULT_poll_want]), 1);
    CHECK_EQ(r->first, BLITZ_ENOMEM);
    CHECK_EQ(r->second, 1);
    blitz_task_release(&t);
    ms_close_pair(sock, peer);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A close whose op cannot be made (no memory for its record) still
 * closes: the caller has given the descriptor up. */
typedef struct {
    BLITZ_CORO;
    int fd;
    blitz_fs_op op;
} nm_closer;

static blitz_poll nm_closer_poll(blitz_cx *cx, void *p) {
    nm_closer *c = p;
    BLITZ_BEGIN(c);
    nm_fault(TEST_FAULT_pool_rec, 1);
    BLITZ_AWAIT(c, blitz_fs_close(cx, &c->op, c->fd));
    BLITZ_END(c);
}

BLITZ_TEST(fs_close_nomem) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    int p[2];
    CHECK_EQ(pipe(p), 0);
    nm_closer c;
    memset(&c, 0, sizeof c);
    c.fd = p[1];
    CHECK_OK(blitz_runtime_run(rt, nm_closer_poll, &c, sizeof c));
    CHECK_EQ(tu_ldi(&test_fault_hits[TEST_FAULT_pool_rec]), 1);
    CHECK_EQ(c.op.result, 0);
    /* The write end is gone: the read end sees the end of the stream. */
    char b;
    CHECK_EQ(read(p[0], &b, 1), 0);
    close(p[0]);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
