/* Connecting by host name: every address is tried in turn; DNS errors,
 * refusals and cancellation are reported; nothing leaks. The op form is
 * raced against a timer and withdrawn during its lookup. Per POSIX
 * backend by name, and on the default one (Windows: the completion
 * port). */

typedef struct {
    BLITZ_CORO;
    const char *host;
    uint16_t port;
    int cancel_at_once;
    blitz_connect_op conn;
    int64_t result;
    int attempts;
} ch_connector;

static blitz_poll ch_connector_poll(blitz_cx *cx, void *p) {
    ch_connector *c = p;
    BLITZ_BEGIN(c);
    if (c->cancel_at_once) {
        if (blitz_tcp_connect_host(cx, &c->conn, c->host, c->port) == BLITZ_PENDING)
            blitz_tcp_connect_host_cancel(cx, &c->conn);
    } else {
        BLITZ_AWAIT(c, blitz_tcp_connect_host(cx, &c->conn, c->host, c->port));
    }
    c->result = c->conn.result;
    c->attempts = c->conn.attempts;
    if (c->conn.result == 0)
        blitz_sock_close(c->conn.socket);
    BLITZ_END(c);
}

static ch_connector ch_connect(blitz_runtime *rt, const char *host, uint16_t port, int cancel) {
    ch_connector c;
    memset(&c, 0, sizeof c);
    c.host = host;
    c.port = port;
    c.cancel_at_once = cancel;
    CHECK_OK(blitz_runtime_run(rt, ch_connector_poll, &c, sizeof c));
    return c;
}

static int ch_run(blitz_runtime *rt) {
    blitz_addr a;
    blitz_socket *l = tu_listen_any(rt, &a);
    uint16_t port = (uint16_t)blitz_addr_port(&a);

    /* "localhost" may resolve to ::1 first, where nobody listens: the
     * connect then moves on to 127.0.0.1. */
    ch_connector c = ch_connect(rt, "localhost", port, 0);
    CHECK_EQ(c.result, 0);
    CHECK_GE(c.attempts, 1);
    c = ch_connect(rt, "127.0.0.1", port, 0);
    CHECK_EQ(c.result, 0);
    CHECK_EQ(c.attempts, 1);
    /* Port 0: the name carries the port. */
    char hostport[64];
    snprintf(hostport, sizeof hostport, "127.0.0.1:%u", (unsigned)port);
    c = ch_connect(rt, hostport, 0, 0);
    CHECK_EQ(c.result, 0);
    CHECK_EQ(c.attempts, 1);
    snprintf(hostport, sizeof hostport, "localhost:%u", (unsigned)port);
    c = ch_connect(rt, hostport, 0, 0);
    CHECK_EQ(c.result, 0);

    /* Nobody listens any more: every address is tried and refused. */
    blitz_sock_close(l);
    c = ch_connect(rt, "localhost", port, 0);
    CHECK_EQ(c.result, BLITZ_ECONNREFUSED);
    CHECK_GE(c.attempts, 1);

    /* Names that do not resolve, bad input, a cancel during the lookup. */
    c = ch_connect(rt, "no-such-host.invalid", port, 0);
    CHECK(c.result == BLITZ_ENOHOST || c.result == BLITZ_EDNSTEMP || c.result == BLITZ_EDNS);
    CHECK_EQ(c.attempts, 0);
    c = ch_connect(rt, "", port, 0);
    CHECK_EQ(c.result, BLITZ_EINVAL);
    c = ch_connect(rt, "localhost", port, 1);
    CHECK_EQ(c.result, BLITZ_ECANCELED);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
/* ---- connecting by host name ------------------------------------------------------------ */

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_addr addr;
    uint16_t port;
    blitz_connect_op conn;
    blitz_io acc;
    blitz_timer timer, due;
    blitz_combo combo;
    blitz_op ops[2];
} opio_host;

static blitz_poll opio_host_poll(blitz_cx *cx, void *p) {
    opio_host *s = p;
    BLITZ_BEGIN(s);
    /* "localhost" may resolve to ::1 first, where nobody listens: the
     * connect then moves on to 127.0.0.1. */
    OPIO_RACE(s, blitz_op_tcp_connect_host(&s->conn, "localhost", s->port), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->conn.result, 0);
    CHECK_NOT_NULL(s->conn.socket);
    OPIO_RACE(s, blitz_op_sock_accept(&s->acc, s->listener), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_OK((int)s->acc.result);
    blitz_sock_close(s->acc.socket);
    blitz_sock_close(s->conn.socket);

    /* Withdrawn during its lookup, then reused. */
    OPIO_LOSE(s, blitz_op_tcp_connect_host(&s->conn, "localhost", s->port));
    CHECK_NULL(s->conn.socket);
    OPIO_RACE(s, blitz_op_tcp_connect_host(&s->conn, "127.0.0.1", s->port), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->conn.result, 0);
    CHECK_EQ(s->conn.attempts, 1);
    blitz_sock_close(s->conn.socket);

    OPIO_RACE(s, blitz_op_tcp_connect_host(&s->conn, "no-such-host.invalid", 80), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK(s->conn.result == BLITZ_ENOHOST || s->conn.result == BLITZ_EDNSTEMP ||
          s->conn.result == BLITZ_EDNS);
    CHECK_NULL(s->conn.socket);
    BLITZ_END(s);
}

static int op_connect_host_on(blitz_runtime *rt) {
    opio_host *s = calloc(1, sizeof *s);
    s->listener = tu_listen_any(rt, &s->addr);
    s->port = (uint16_t)blitz_addr_port(&s->addr);
    /* From a plain thread. */
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_tcp_connect_host(&s->conn, "localhost", s->port)));
    CHECK_EQ(s->conn.result, 0);
    blitz_sock_close(s->conn.socket);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_tcp_connect_host(&s->conn, "", s->port)));
    CHECK_EQ(s->conn.result, BLITZ_EINVAL);
    CHECK_OK(blitz_runtime_run(rt, opio_host_poll, s, sizeof *s));
    blitz_sock_close(s->listener);
    CHECK_OK(blitz_runtime_free(rt));
    free(s);
    return 0;
}

#if !defined(_WIN32)
static int op_connect_host(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    return rt ? op_connect_host_on(rt) : 0;
}
IO_BACKEND_TESTS(op_connect_host)

static int io_connect_host(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    return rt ? ch_run(rt) : 0;
}
IO_BACKEND_TESTS(io_connect_host)
#endif

/* The default backend (Windows: the completion port). */
BLITZ_TEST(sock_connect_host) {
    if (ch_run(tu_rt_new(TU_MT2)))
        return 1;
    return op_connect_host_on(tu_rt_new(TU_MT2));
}
