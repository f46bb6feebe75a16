/* The completion port's socket ops (src/io/iocp_sock.c), white-box, on
 * 127.0.0.1: accept and connect, a stream in both directions checked byte
 * for byte, a cancel that keeps its buffer until its packet, the end of
 * the stream, a refused connect, datagrams. The test thread reaps the
 * port of a current-thread runtime nothing drives. Windows only: elsewhere
 * each test reports itself skipped. */

#if defined(_WIN32)
typedef struct {
    blitz__iocp_op op;
    int done;
    int64_t res;
} ti_op;

static void ti_done(blitz__iocp_op *op, int64_t res) {
    ti_op *t = (ti_op *)op;
    t->res = res;
    t->done = 1;
}

/* A start's outcome: done at once, or pending until its packet. */
static void ti_started(ti_op *t, int pending, int64_t res) {
    t->op.done = ti_done;
    t->done = !pending;
    t->res = res;
}

/* Reaps until every op named is done. */
static int ti_wait(blitz__io *io, ti_op *a, ti_op *b) {
    double deadline = tu_now() + 20.0 * tu_timeout_mult();
    while (!(a->done && (!b || b->done))) {
        CHECK_BASE(tu_now() < deadline, "timed out waiting for %s", "a completion");
        blitz__iocp_reap(io, 100 * BLITZ_MSEC);
    }
    return 0;
}

static blitz__io *ti_io(blitz_runtime **rt) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = BLITZ_CURRENT_THREAD;
    cfg.backend = BLITZ_BACKEND_IOCP;
    if (blitz_runtime_new(&cfg, rt) != BLITZ_OK)
        return NULL;
    return (*rt)->io;
}

static int ti_loopback(SOCKET s, int family, struct sockaddr_storage *ss, int *len) {
    memset(ss, 0, sizeof *ss);
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        *len = (int)sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len = (int)sizeof *a;
    }
    CHECK_EQ(bind(s, (struct sockaddr *)ss, *len), 0);
    CHECK_EQ(getsockname(s, (struct sockaddr *)ss, len), 0);
    return 0;
}

/* A connected pair through AcceptEx and ConnectEx. */
static int ti_pair(blitz__io *io, SOCKET *server, SOCKET *client) {
    SOCKET ls;
    struct sockaddr_storage at;
    int at_len;
    CHECK_OK(blitz__iocp_socket(io, AF_INET, SOCK_STREAM, &ls));
    CHECK_OK(ti_loopback(ls, AF_INET, &at, &at_len));
    CHECK_EQ(listen(ls, 16), 0);
    CHECK_OK(blitz__iocp_socket(io, AF_INET, SOCK_STREAM, server));
    CHECK_OK(blitz__iocp_socket(io, AF_INET, SOCK_STREAM, client));
    static char addrs[2 * BLITZ__IOCP_ADDR_SLOT];
    ti_op acc, con;
    int64_t res = 0;
    int p = blitz__iocp_accept(&acc.op, ls, *server, addrs, &res);
    ti_started(&acc, p, res);
    CHECK(acc.done == 0 || acc.res == 0);
    p = blitz__iocp_connect(&con.op, *client, (struct sockaddr *)&at, at_len, &res);
    ti_started(&con, p, res);
    CHECK_OK(ti_wait(io, &acc, &con));
    CHECK_EQ(acc.res, 0);
    CHECK_EQ(con.res, 0);
    CHECK_OK(blitz__iocp_accept_done(ls, *server));
    CHECK_OK(blitz__iocp_connect_done(*client));
    /* Each end names the other. */
    struct sockaddr_storage a, b;
    int a_len = (int)sizeof a, b_len = (int)sizeof b;
    CHECK_EQ(getpeername(*server, (struct sockaddr *)&a, &a_len), 0);
    CHECK_EQ(getsockname(*client, (struct sockaddr *)&b, &b_len), 0);
    CHECK_EQ(((struct sockaddr_in *)&a)->sin_port, ((struct sockaddr_in *)&b)->sin_port);
    closesocket(ls);
    return 0;
}
#endif

BLITZ_TEST(iocp_stream) {
#if defined(_WIN32)
    blitz_runtime *rt = NULL;
    blitz__io *io = ti_io(&rt);
    CHECK_NOT_NULL(io);
    SOCKET server, client;
    CHECK_OK(ti_pair(io, &server, &client));
    /* More than the socket buffers hold: the send waits for the reader. */
    size_t n = 1u << 20;
    unsigned char *out = (unsigned char *)malloc(n), *in = (unsigned char *)calloc(n, 1);
    CHECK(out && in);
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)(i * 7u + (i >> 11));
    ti_op snd, rcv;
    WSABUF sb = {(ULONG)n, (char *)out};
    int64_t res = 0;
    int p = blitz__iocp_send(&snd.op, client, &sb, 1, &res);
    ti_started(&snd, p, res);
    size_t got = 0;
    while (got < n) {
        /* Two buffers per receive: the vectored form. */
        size_t left = n - got, half = left / 2 ? left / 2 : left;
        WSABUF rb[2] = {{(ULONG)half, (char *)in + got},
                        {(ULONG)(left - half), (char *)in + got + half}};
        p = blitz__iocp_recv(&rcv.op, server, rb, left - half ? 2 : 1, &res);
        ti_started(&rcv, p, res);
        CHECK_OK(ti_wait(io, &rcv, NULL));
        CHECK_GT(rcv.res, 0);
        got += (size_t)rcv.res;
    }
    CHECK_OK(ti_wait(io, &snd, NULL));
    CHECK_EQ(snd.res, (int64_t)n);
    CHECK(memcmp(in, out, n) == 0);

    /* A receive with nothing to read, cancelled: its packet still comes,
     * and only then is its buffer free again. */
    unsigned char spare[64];
    memset(spare, 0xA5, sizeof spare);
    WSABUF cb = {sizeof spare, (char *)spare};
    p = blitz__iocp_recv(&rcv.op, server, &cb, 1, &res);
    ti_started(&rcv, p, res);
    CHECK_EQ(p, 1);
    blitz__iocp_cancel(&rcv.op);
    CHECK_OK(ti_wait(io, &rcv, NULL));
    CHECK_EQ(rcv.res, BLITZ_ECANCELED);
    CHECK_EQ(spare[0], 0xA5);

    /* The stream still works after the cancel; then its end is a 0-byte
     * receive. */
    const char msg[] = "after the cancel";
    WSABUF mb = {sizeof msg, (char *)msg};
    p = blitz__iocp_send(&snd.op, client, &mb, 1, &res);
    ti_started(&snd, p, res);
    CHECK_OK(ti_wait(io, &snd, NULL));
    CHECK_EQ(snd.res, (int64_t)sizeof msg);
    CHECK_EQ(shutdown(client, SD_SEND), 0);
    got = 0;
    for (;;) {
        p = blitz__iocp_recv(&rcv.op, server, &cb, 1, &res);
        ti_started(&rcv, p, res);
        CHECK_OK(ti_wait(io, &rcv, NULL));
        CHECK_GE(rcv.res, 0);
        if (rcv.res == 0)
            break;
        CHECK_LE(got + (size_t)rcv.res, sizeof msg);
        CHECK(memcmp(spare, msg + got, (size_t)rcv.res) == 0);
        got += (size_t)rcv.res;
    }
    CHECK_EQ(got, sizeof msg);
    closesocket(server);
    closesocket(client);
    free(out);
    free(in);
    CHECK_OK(blitz_runtime_free(rt));
#else
    printf("# skipped: Windows only\n");
#endif
    return 0;
}

BLITZ_TEST(iocp_connect_refused) {
#if defined(_WIN32)
    blitz_runtime *rt = NULL;
    blitz__io *io = ti_io(&rt);
    CHECK_NOT_NULL(io);
    /* Bound and not listening: its port is taken, and refuses. */
    SOCKET bound, client;
    struct sockaddr_storage at;
    int at_len;
    CHECK_OK(blitz__iocp_socket(io, AF_INET, SOCK_STREAM, &bound));
    CHECK_OK(ti_loopback(bound, AF_INET, &at, &at_len));
    CHECK_OK(blitz__iocp_socket(io, AF_INET, SOCK_STREAM, &client));
    ti_op con;
    int64_t res = 0;
    int p = blitz__iocp_connect(&con.op, client, (struct sockaddr *)&at, at_len, &res);
    ti_started(&con, p, res);
    CHECK_OK(ti_wait(io, &con, NULL));
    CHECK_EQ(con.res, BLITZ_ECONNREFUSED);
    closesocket(client);
    closesocket(bound);
    CHECK_OK(blitz_runtime_free(rt));
#else
    printf("# skipped: Windows only\n");
#endif
    return 0;
}

BLITZ_TEST(iocp_datagrams) {
#if defined(_WIN32)
    blitz_runtime *rt = NULL;
    blitz__io *io = ti_io(&rt);
    CHECK_NOT_NULL(io);
    SOCKET a, b;
    struct sockaddr_storage a_at, b_at;
    int a_len, b_len;
    CHECK_OK(blitz__iocp_socket(io, AF_INET, SOCK_DGRAM, &a));
    CHECK_OK(blitz__iocp_socket(io, AF_INET, SOCK_DGRAM, &b));
    CHECK_OK(ti_loopback(a, AF_INET, &a_at, &a_len));
    CHECK_OK(ti_loopback(b, AF_INET, &b_at, &b_len));
    for (int i = 0; i < 8; i++) {
        char buf[256], msg[200];
        for (size_t j = 0; j < sizeof msg; j++)
            msg[j] = (char)(i * 31 + (int)j);
        struct sockaddr_storage from;
        memset(&from, 0, sizeof from);
        ti_op rcv, snd;
        WSABUF rb = {sizeof buf, buf};
        int64_t res = 0;
        /* The receive first: pending until the datagram comes. */
        int p = blitz__iocp_recv_from(&rcv.op, b, &rb, (struct sockaddr *)&from, sizeof from, &res);
        ti_started(&rcv, p, res);
        WSABUF sb = {(ULONG)(100 + i), msg};
        p = blitz__iocp_send_to(&snd.op, a, &sb, (struct sockaddr *)&b_at, b_len, &res);
        ti_started(&snd, p, res);
        CHECK_OK(ti_wait(io, &rcv, &snd));
        CHECK_EQ(snd.res, 100 + i);
        CHECK_EQ(rcv.res, 100 + i);
        CHECK(memcmp(buf, msg, (size_t)(100 + i)) == 0);
        CHECK_EQ(rcv.op.from_len, a_len);
        CHECK_EQ(((struct sockaddr_in *)&from)->sin_port, ((struct sockaddr_in *)&a_at)->sin_port);
    }
    closesocket(a);
    closesocket(b);
    CHECK_OK(blitz_runtime_free(rt));
#else
    printf("# skipped: Windows only\n");
#endif
    return 0;
}

/* The platform's pipe pair: bytes written at one end come out of the
 * other through an overlapped read, and closing the write end ends the
 * stream (ERROR_BROKEN_PIPE). */
BLITZ_TEST(iocp_pipe_pair) {
#if defined(_WIN32)
    void *r = NULL, *w = NULL;
    CHECK_OK(blitz__win_pipe_pair(&r, &w, BLITZ__WPIPE_READ_OVERLAPPED, 0));
    CHECK(r != NULL && w != NULL);
    CHECK_EQ(blitz__win_pipe_pair(NULL, &w, 0, 0), BLITZ_EINVAL);
    char msg[3000], buf[4096];
    for (size_t j = 0; j < sizeof msg; j++)
        msg[j] = (char)(j * 7 + 3);
    DWORD n = 0;
    CHECK(WriteFile((HANDLE)w, msg, sizeof msg, &n, NULL));
    CHECK_EQ(n, sizeof msg);
    size_t got = 0;
    while (got < sizeof msg) {
        OVERLAPPED ov;
        memset(&ov, 0, sizeof ov);
        ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
        CHECK(ov.hEvent != NULL);
        if (!ReadFile((HANDLE)r, buf + got, (DWORD)(sizeof buf - got), NULL, &ov))
            CHECK_EQ(GetLastError(), ERROR_IO_PENDING);
        CHECK(GetOverlappedResult((HANDLE)r, &ov, &n, TRUE));
        CloseHandle(ov.hEvent);
        CHECK(n > 0);
        got += n;
    }
    CHECK_EQ(got, sizeof msg);
    CHECK(memcmp(buf, msg, sizeof msg) == 0);
    CloseHandle((HANDLE)w);
    OVERLAPPED ov;
    memset(&ov, 0, sizeof ov);
    ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
    BOOL ok = ReadFile((HANDLE)r, buf, sizeof buf, NULL, &ov);
    if (!ok && GetLastError() == ERROR_IO_PENDING)
        ok = GetOverlappedResult((HANDLE)r, &ov, &n, TRUE);
    CHECK(!ok);
    CHECK_EQ(GetLastError(), ERROR_BROKEN_PIPE);
    CloseHandle(ov.hEvent);
    CloseHandle((HANDLE)r);
#else
    printf("# skipped: Windows only\n");
#endif
    return 0;
}
