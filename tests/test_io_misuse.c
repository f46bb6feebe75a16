/* A misused socket fails at once with the same clear code on every
 * backend, never waits forever:
 *   - a receive on a TCP or Unix listener (blitz's or an adopted one):
 *     BLITZ_ENOTCONN (io_uring waited for a connection);
 *   - a vectored op with a NULL base and a length: BLITZ_EINVAL before it
 *     starts (it failed with EFAULT only once data came);
 *   - unknown BLITZ_SOCK_* flags: BLITZ_EINVAL;
 *   - adopting a regular file or a directory: BLITZ_EPERM (nothing to
 *     wait for), and the descriptor stays the caller's as it was.
 * Uses the harness of tests/test_io.c. */

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener, *conn;
    blitz_io op;
    blitz_addr from;
    char buf[16];
    blitz_iovec iov[2];
    int64_t recv_rc, recvv_rc, recv_from_rc, null_base_rc;
} io_misuse_listener;

static blitz_poll io_misuse_listener_poll(blitz_cx *cx, void *p) {
    io_misuse_listener *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, blitz_sock_recv(cx, &m->op, m->listener, m->buf, sizeof m->buf));
    m->recv_rc = m->op.result;
    m->iov[0].base = m->buf;
    m->iov[0].len = sizeof m->buf;
    BLITZ_AWAIT(m, blitz_sock_recvv(cx, &m->op, m->listener, m->iov, 1));
    m->recvv_rc = m->op.result;
    BLITZ_AWAIT(m, blitz_sock_recv_from(cx, &m->op, m->listener, m->buf, sizeof m->buf, &m->from));
    m->recv_from_rc = m->op.result;
    if (m->conn) {
        m->iov[1].base = NULL;
        m->iov[1].len = 8;
        BLITZ_AWAIT(m, blitz_sock_recvv(cx, &m->op, m->conn, m->iov, 2));
        m->null_base_rc = m->op.result;
    }
    BLITZ_END(m);
}

static void io_misuse_check_listener(blitz_runtime *rt, blitz_socket *l, blitz_socket *conn) {
    io_misuse_listener m;
    memset(&m, 0, sizeof m);
    m.listener = l;
    m.conn = conn;
    CHECK_OK(blitz_runtime_run(rt, io_misuse_listener_poll, &m, sizeof m));
    CHECK_EQ(m.recv_rc, BLITZ_ENOTCONN);
    CHECK_EQ(m.recvv_rc, BLITZ_ENOTCONN);
    CHECK_EQ(m.recv_from_rc, BLITZ_ENOTCONN);
    if (conn)
        CHECK_EQ(m.null_base_rc, BLITZ_EINVAL);
}

static int io_misuse(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    /* A TCP listener, with a connection for the vectored check. */
    blitz_addr bound;
    blitz_socket *l = tu_listen_any(rt, &bound);
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(cfd, 0);
    CHECK_EQ(connect(cfd, (struct sockaddr *)(void *)bound.u.bytes, bound.len), 0);
    blitz_socket *conn = NULL;
    CHECK_OK(blitz_sock_adopt(rt, cfd, &conn));
    io_misuse_check_listener(rt, l, conn);
    blitz_sock_close(conn);
    blitz_sock_close(l);

    /* A Unix listener (abstract name). */
    char name[64];
    snprintf(name, sizeof name, "@blitz-misuse-%d-%d", (int)getpid(), (int)b);
    blitz_addr ua;
    CHECK_OK(blitz_addr_unix(name, &ua));
    CHECK_OK(blitz_unix_listen(rt, &ua, 0, &l));
    io_misuse_check_listener(rt, l, NULL);
    blitz_sock_close(l);

    /* A listener made with plain calls, then adopted. */
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(lfd, 0);
    struct sockaddr_in any4;
    memset(&any4, 0, sizeof any4);
    any4.sin_family = AF_INET;
    any4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(lfd, (struct sockaddr *)&any4, sizeof any4), 0); /* port 0: any free one */
    CHECK_EQ(listen(lfd, 4), 0);
    CHECK_OK(blitz_sock_adopt(rt, lfd, &l));
    io_misuse_check_listener(rt, l, NULL);
    blitz_sock_close(l);

    /* Flags no version of blitz defines. */
    blitz_addr any;
    CHECK_OK(blitz_addr_parse("127.0.0.1:0", &any));
    blitz_socket *s = NULL;
    CHECK_EQ(blitz_tcp_listen(rt, &any, 0, 0x100u, &s), BLITZ_EINVAL);
    CHECK(s == NULL);
    CHECK_EQ(blitz_udp_bind(rt, &any, BLITZ_SOCK_REUSEPORT | 0x80000000u, &s), BLITZ_EINVAL);
    CHECK(s == NULL);
    CHECK_OK(blitz_udp_bind(rt, &any, BLITZ_SOCK_REUSEPORT, &s));
    blitz_sock_close(s);

    /* A regular file and a directory: refused, left open and blocking. */
    char path[] = "/tmp/blitz-misuse-XXXXXX";
    int ffd = mkstemp(path);
    CHECK_GE(ffd, 0);
    unlink(path);
    int dfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK_GE(dfd, 0);
    int fds[2] = {ffd, dfd};
    for (int i = 0; i < 2; i++) {
        int fl = fcntl(fds[i], F_GETFL);
        s = (blitz_socket *)(uintptr_t)1;
        CHECK_EQ(blitz_sock_adopt(rt, fds[i], &s), BLITZ_EPERM);
        CHECK(s == NULL);
        CHECK_EQ(fcntl(fds[i], F_GETFL), fl);
        CHECK_EQ(close(fds[i]), 0);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_misuse)
