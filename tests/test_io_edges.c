/* Sockets at their edges, the same on every backend:
 *   - a closed listener refuses connections at once (io_uring's accept
 *     held it open until its cancel completed, and it took connections
 *     only to reset them);
 *   - a Unix listener replaces a stale socket file, never a file of
 *     another kind (bind reports it in use);
 *   - a datagram from a Unix sender that never bound comes from the
 *     unnamed Unix address, which formats as "(unnamed)";
 *   - keep-alive with an idle time on a socket that is not TCP fails and
 *     leaves keep-alive off.
 * Uses the harness of tests/test_io.c. */

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_addr addr;
    blitz_io connect, accept;
    blitz_socket *client, *server;
    int round, rounds, refused, wrong;
} io_edges_close;

static blitz_poll io_edges_close_poll(blitz_cx *cx, void *p) {
    io_edges_close *e = p;
    BLITZ_BEGIN(e);
    for (e->round = 0; e->round < e->rounds; e->round++) {
        e->listener = tu_listen_any(blitz_cx_runtime(cx), &e->addr);
        /* One connection accepted: the accept (multishot on io_uring)
         * stays armed on the listener. */
        BLITZ_AWAIT(e, blitz_tcp_connect(cx, &e->connect, &e->addr));
        CHECK_OK(e->connect.result);
        e->client = e->connect.socket;
        BLITZ_AWAIT(e, blitz_sock_accept(cx, &e->accept, e->listener));
        CHECK_OK(e->accept.result);
        e->server = e->accept.socket;
        CHECK_OK(blitz_sock_close(e->listener));
        BLITZ_AWAIT(e, blitz_tcp_connect(cx, &e->connect, &e->addr));
        if (e->connect.result == BLITZ_ECONNREFUSED) {
            e->refused++;
        } else {
            e->wrong++;
            if (e->connect.result == BLITZ_OK)
                blitz_sock_close(e->connect.socket);
        }
        blitz_sock_close(e->client);
        blitz_sock_close(e->server);
    }
    BLITZ_END(e);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *bound, *unbound;
    blitz_addr to, from;
    blitz_io op;
    char buf[8];
} io_edges_unnamed;

static blitz_poll io_edges_unnamed_poll(blitz_cx *cx, void *p) {
    io_edges_unnamed *u = p;
    BLITZ_BEGIN(u);
    BLITZ_AWAIT(u, blitz_sock_send_to(cx, &u->op, u->unbound, "hi", 2, &u->to));
    CHECK_EQ(u->op.result, 2);
    memset(&u->from, 0x5a, sizeof u->from);
    BLITZ_AWAIT(u, blitz_sock_recv_from(cx, &u->op, u->bound, u->buf, sizeof u->buf, &u->from));
    CHECK_EQ(u->op.result, 2);
    BLITZ_END(u);
}

static int io_edges(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    io_edges_close c;
    memset(&c, 0, sizeof c);
    c.rounds = (int)test_scaled(40);
    CHECK_OK(blitz_runtime_run(rt, io_edges_close_poll, &c, sizeof c));
    CHECK_EQ(c.wrong, 0);
    CHECK_EQ(c.refused, c.rounds);

    /* A regular file where the listener's path points: left alone. */
    char path[64];
    snprintf(path, sizeof path, "/tmp/blitz-edges-%d-%d", (int)getpid(), (int)b);
    int ffd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK_GE(ffd, 0);
    CHECK_EQ(write(ffd, "keep", 4), 4);
    close(ffd);
    blitz_addr ua;
    CHECK_OK(blitz_addr_unix(path, &ua));
    blitz_socket *l = NULL;
    CHECK_EQ(blitz_unix_listen(rt, &ua, 0, &l), BLITZ_EADDRINUSE);
    CHECK(l == NULL);
    struct stat st;
    CHECK_EQ(lstat(path, &st), 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_size, 4);
    CHECK_EQ(unlink(path), 0);
    /* A stale socket file (its listener closed without unlinking): reused. */
    int sfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(sfd, 0);
    CHECK_EQ(bind(sfd, (struct sockaddr *)(void *)ua.u.bytes, ua.len), 0);
    close(sfd);
    CHECK_OK(blitz_unix_listen(rt, &ua, 0, &l));
    blitz_sock_close(l);
    /* A live one: in use. */
    CHECK_OK(blitz_unix_listen(rt, &ua, 0, &l));
    blitz_socket *l2 = NULL;
    CHECK_EQ(blitz_unix_listen(rt, &ua, 0, &l2), BLITZ_EADDRINUSE);
    blitz_sock_close(l);
    unlink(path);

    /* A datagram from a sender with no name. */
    io_edges_unnamed u;
    memset(&u, 0, sizeof u);
    snprintf(path, sizeof path, "@blitz-edges-dgram-%d-%d", (int)getpid(), (int)b);
    CHECK_OK(blitz_addr_unix(path, &u.to));
    CHECK_OK(blitz_unix_dgram(rt, &u.to, &u.bound));
    CHECK_OK(blitz_unix_dgram(rt, NULL, &u.unbound));
    CHECK_OK(blitz_runtime_run(rt, io_edges_unnamed_poll, &u, sizeof u));
    CHECK_EQ(blitz_addr_family(&u.from), AF_UNIX);
    char text[32];
    CHECK_EQ(blitz_addr_format(&u.from, text, sizeof text), (int)strlen("(unnamed)"));
    CHECK(strcmp(text, "(unnamed)") == 0);
    blitz_addr peer;
    CHECK_OK(blitz_sock_local_addr(u.unbound, &peer));
    CHECK_EQ(blitz_addr_format(&peer, text, sizeof text), (int)strlen("(unnamed)"));

    /* Keep-alive with an idle time on a datagram socket: refused, off. */
    CHECK_LT(blitz_tcp_set_keepalive(u.bound, 1, 30), 0);
    int on = -1;
    socklen_t ol = sizeof on;
    CHECK_EQ(getsockopt(blitz_sock_fd(u.bound), SOL_SOCKET, SO_KEEPALIVE, &on, &ol), 0);
    CHECK_EQ(on, 0);
    blitz_sock_close(u.bound);
    blitz_sock_close(u.unbound);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_edges)

/* A program started with stdin, stdout and stderr closed: the runtime's
 * own descriptors (rings, epoll, eventfds, the signal thread's pipe) stay
 * off 0..2, so what the program takes for stdio is never one of them. */
static int io_stdio_closed(blitz_backend b) {
    int saved[3];
    for (int i = 0; i < 3; i++) {
        saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 10);
        CHECK_GE(saved[i], 0);
    }
    for (int i = 0; i < 3; i++)
        close(i);
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = 2;
    cfg.backend = b;
    blitz_runtime *rt = NULL;
    int rc = blitz_runtime_new(&cfg, &rt);
    blitz_signal sig;
    memset(&sig, 0, sizeof sig);
    int sig_rc = rc == BLITZ_OK ? blitz_signal_init(&sig, SIGUSR2) : BLITZ_OK;
    int low[3];
    for (int i = 0; i < 3; i++)
        low[i] = fcntl(i, F_GETFD) >= 0;
    if (sig_rc == BLITZ_OK && rc == BLITZ_OK)
        blitz_signal_deinit(&sig);
    if (rc == BLITZ_OK)
        blitz_runtime_free(rt);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(dup2(saved[i], i), i);
        close(saved[i]);
    }
    if (rc != BLITZ_OK && b == BLITZ_BACKEND_IO_URING) {
        printf("# skipped: io_uring unavailable (%s)\n", blitz_strerror(rc));
        return 0;
    }
    CHECK_OK(rc);
    CHECK_OK(sig_rc);
    for (int i = 0; i < 3; i++)
        CHECK_BASE(!low[i], "descriptor %d was taken by the runtime", i);
    return 0;
}
IO_BACKEND_TESTS(io_stdio_closed)
