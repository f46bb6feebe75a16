/* blitz_tcp_connect_timeout on every backend: the limit ends a connect
 * that hangs with BLITZ_ETIMEDOUT, a connect made in time keeps its socket
 * and leaves no timer behind, a cancel withdraws both the connect and its
 * limit and the op can connect again, a paused clock times it on the
 * runtime's clock, and blitz_tcp_connect_host's attempt limit goes through
 * it. On io_uring a worker or the current-thread driver has the kernel
 * time it (a LINK_TIMEOUT linked to the CONNECT), counted by the driver.
 * Uses the harness of tests/test_io.c. */

typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_io op;
    int64_t limit_ns;
    int64_t result;
    double t0, seconds;
    int timer_left_armed;
    int64_t *out; /* spawned copies report here */
    atomic_int *done;
} lim_connect;

static blitz_poll lim_connect_poll(blitz_cx *cx, void *p) {
    lim_connect *c = p;
    BLITZ_BEGIN(c);
    c->t0 = tu_now();
    BLITZ_AWAIT(c, blitz_tcp_connect_timeout(cx, &c->op, &c->addr, c->limit_ns));
    c->seconds = tu_now() - c->t0;
    c->result = c->op.result;
    c->timer_left_armed = blitz_timer_armed(blitz__connect_timer(&c->op));
    if (c->result == 0)
        blitz_sock_close(c->op.socket);
    BLITZ_AWAIT(c, blitz_io_settle(cx, &c->op));
    if (c->out)
        *c->out = c->result;
    if (c->done)
        atomic_fetch_add(c->done, 1);
    BLITZ_END(c);
}

static uint64_t lim_kernel_count(blitz_runtime *rt) {
    return blitz__u64_load(&rt->io->link_timeout_count, BLITZ__RELAXED);
}

/* The kernel times the connect: io_uring with LINK_TIMEOUT. */
static int lim_kernel_timed(blitz_runtime *rt) {
    return blitz_runtime_backend(rt) == BLITZ_BACKEND_IO_URING && rt->io->link_timeout;
}

/* One limited connect as the root task; 1 when it timed out, 0 when the
 * kernel completed it after all (SYN cookies), which skips the rest. */
static int lim_run_hanging(blitz_runtime *rt, const blitz_addr *addr, int64_t limit_ns,
                           lim_connect *c) {
    memset(c, 0, sizeof *c);
    c->addr = *addr;
    c->limit_ns = limit_ns;
    CHECK_OK(blitz_runtime_run(rt, lim_connect_poll, c, sizeof *c));
    if (c->result == 0) {
        printf("# skipped: the kernel completed the connect\n");
        return 0;
    }
    CHECK_EQ(c->result, BLITZ_ETIMEDOUT);
    CHECK(!c->timer_left_armed);
    return 1;
}

static int io_connect_limit(blitz_backend b) {
    int fill[8];
    blitz_addr addr;
    int lfd = io_full_listener(&addr, fill);
    lim_connect c;

    /* Current-thread runtime: the driver submits, so on io_uring the
     * kernel times it. */
    blitz_runtime *rt = tu_io_rt_new(b, TU_CT);
    if (!rt) {
        io_full_listener_close(lfd, fill);
        return 0;
    }
    if (lim_run_hanging(rt, &addr, 100 * BLITZ_MSEC, &c)) {
        CHECK(c.seconds >= 0.09);
        CHECK(c.seconds < 2.0 * tu_timeout_mult());
        CHECK_EQ(lim_kernel_count(rt), lim_kernel_timed(rt) ? 1u : 0u);
    }
    CHECK_OK(blitz_runtime_free(rt));

    /* Multi-thread runtime: the root task runs on the calling thread (the
     * runtime's timer on every backend), 8 spawned ones on the workers. */
    rt = tu_io_rt_new(b, TU_MT2);
    if (lim_run_hanging(rt, &addr, 100 * BLITZ_MSEC, &c)) {
        CHECK(c.seconds >= 0.09);
        CHECK(c.seconds < 2.0 * tu_timeout_mult());
    }
    atomic_int done = 0;
    int64_t results[8];
    for (int i = 0; i < 8; i++) {
        memset(&c, 0, sizeof c);
        c.addr = addr;
        c.limit_ns = 80 * BLITZ_MSEC;
        c.out = &results[i];
        c.done = &done;
        CHECK_OK(blitz_spawn(rt, lim_connect_poll, &c, sizeof c, NULL));
    }
    TU_WAIT_GE(&done, 8, 10);
    int timed_out = 0;
    for (int i = 0; i < 8; i++) {
        CHECK(results[i] == BLITZ_ETIMEDOUT || results[i] == 0);
        timed_out += results[i] == BLITZ_ETIMEDOUT;
    }
    printf("# %d of 8 spawned connects timed out; %llu timed by the kernel\n", timed_out,
           (unsigned long long)lim_kernel_count(rt));
    CHECK_OK(blitz_runtime_free(rt));
    io_full_listener_close(lfd, fill);
    return 0;
}
IO_BACKEND_TESTS(io_connect_limit)

/* A connect made within its limit: the socket is the caller's, the timer
 * (or the kernel's linked timeout) is gone. */
static int io_connect_limit_ok(blitz_backend b) {
    const tu_flavor flavors[2] = {TU_CT, TU_MT2};
    for (int f = 0; f < 2; f++) {
        blitz_runtime *rt = tu_io_rt_new(b, flavors[f]);
        if (!rt)
            return 0;
        blitz_addr addr;
        blitz_socket *l = tu_listen_any(rt, &addr);
        for (int round = 0; round < 20; round++) {
            lim_connect c;
            memset(&c, 0, sizeof c);
            c.addr = addr;
            c.limit_ns = 5 * BLITZ_SEC;
            CHECK_OK(blitz_runtime_run(rt, lim_connect_poll, &c, sizeof c));
            CHECK_EQ(c.result, 0);
            CHECK(!c.timer_left_armed);
            CHECK(c.seconds < 1.0 * tu_timeout_mult());
        }
        if (f == 0)
            CHECK_EQ(lim_kernel_count(rt), lim_kernel_timed(rt) ? 20u : 0u);
        CHECK_OK(blitz_sock_close(l));
        CHECK_OK(blitz_runtime_free(rt));
    }
    return 0;
}
IO_BACKEND_TESTS(io_connect_limit_ok)

/* A limited connect cancelled from outside (an enclosing blitz_timeout_op
 * fires first): the result is BLITZ_ECANCELED, the limit's timer is
 * disarmed, and the same op then connects elsewhere. */
typedef struct {
    BLITZ_CORO;
    blitz_addr hanging, live;
    blitz_io op;
    blitz_timer outer;
    int expired, timer_left_armed;
    int64_t cancelled, second;
} lim_cancel;

static blitz_poll lim_cancel_poll(blitz_cx *cx, void *p) {
    lim_cancel *c = p;
    BLITZ_BEGIN(c);
    BLITZ_AWAIT(c,
                blitz_timeout_op(cx, &c->outer, 50 * BLITZ_MSEC,
                                 blitz_tcp_connect_timeout(cx, &c->op, &c->hanging, 10 * BLITZ_SEC),
                                 blitz_io_cancel, &c->op));
    c->expired = c->outer.expired;
    c->cancelled = c->op.result;
    c->timer_left_armed = blitz_timer_armed(blitz__connect_timer(&c->op));
    if (!c->expired && c->op.result == 0)
        blitz_sock_close(c->op.socket);
    /* The same op again, at once (its cancelled connect may still be in the
     * kernel: the op waits for it first). */
    BLITZ_AWAIT(c, blitz_tcp_connect_timeout(cx, &c->op, &c->live, 5 * BLITZ_SEC));
    c->second = c->op.result;
    if (c->op.result == 0)
        blitz_sock_close(c->op.socket);
    BLITZ_END(c);
}

static int io_connect_limit_cancel(blitz_backend b) {
    int fill[8];
    blitz_addr hanging;
    int lfd = io_full_listener(&hanging, fill);
    const tu_flavor flavors[2] = {TU_CT, TU_MT2};
    for (int f = 0; f < 2; f++) {
        blitz_runtime *rt = tu_io_rt_new(b, flavors[f]);
        if (!rt)
            break;
        blitz_addr live;
        blitz_socket *l = tu_listen_any(rt, &live);
        lim_cancel c;
        memset(&c, 0, sizeof c);
        c.hanging = hanging;
        c.live = live;
        CHECK_OK(blitz_runtime_run(rt, lim_cancel_poll, &c, sizeof c));
        if (!c.expired) {
            printf("# skipped: the kernel completed the connect\n");
        } else {
            CHECK_EQ(c.cancelled, BLITZ_ECANCELED);
            CHECK(!c.timer_left_armed);
        }
        CHECK_EQ(c.second, 0);
        CHECK_OK(blitz_sock_close(l));
        CHECK_OK(blitz_runtime_free(rt));
    }
    io_full_listener_close(lfd, fill);
    return 0;
}
IO_BACKEND_TESTS(io_connect_limit_cancel)

/* A paused clock: the limit runs on the runtime's clock, which jumps to
 * the deadline once every task is idle; the kernel's clock is not used. */
static int io_connect_limit_paused(blitz_backend b) {
    blitz_config cfg = tu_config(TU_CT);
    cfg.backend = b;
    cfg.start_paused = 1;
    blitz_runtime *rt = tu_io_rt_config(&cfg);
    if (!rt)
        return 0;
    int fill[8];
    blitz_addr addr;
    int lfd = io_full_listener(&addr, fill);
    lim_connect c;
    uint64_t v0 = blitz_time_now(rt);
    if (lim_run_hanging(rt, &addr, 30 * BLITZ_SEC, &c)) {
        CHECK(c.seconds < 5.0 * tu_timeout_mult());
        CHECK_GE(blitz_time_now(rt) - v0, (uint64_t)(30 * BLITZ_SEC));
        CHECK_EQ(lim_kernel_count(rt), 0u);
    }
    io_full_listener_close(lfd, fill);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_connect_limit_paused)

/* blitz_tcp_connect_host's attempt limit ends an attempt that hangs. */
typedef struct {
    BLITZ_CORO;
    blitz_connect_op conn;
    char host[16];
    uint16_t port;
} lim_host;

static blitz_poll lim_host_poll(blitz_cx *cx, void *p) {
    lim_host *h = p;
    BLITZ_BEGIN(h);
    h->conn.attempt_timeout_ns = 100 * BLITZ_MSEC;
    BLITZ_AWAIT(h, blitz_tcp_connect_host(cx, &h->conn, h->host, h->port));
    if (h->conn.result == 0)
        blitz_sock_close(h->conn.socket);
    BLITZ_END(h);
}

static int io_connect_limit_host(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    int fill[8];
    blitz_addr addr;
    int lfd = io_full_listener(&addr, fill);
    lim_host h;
    memset(&h, 0, sizeof h);
    strcpy(h.host, "127.0.0.1");
    h.port = (uint16_t)blitz_addr_port(&addr);
    double t0 = tu_now();
    CHECK_OK(blitz_runtime_run(rt, lim_host_poll, &h, sizeof h));
    double dt = tu_now() - t0;
    CHECK_EQ(h.conn.attempts, 1);
    if (h.conn.result == 0) {
        printf("# skipped: the kernel completed the connect\n");
    } else {
        CHECK_EQ(h.conn.result, BLITZ_ETIMEDOUT);
        CHECK(dt >= 0.09);
        CHECK(dt < 2.0 * tu_timeout_mult());
    }
    io_full_listener_close(lfd, fill);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_connect_limit_host)

/* Bad input: no runtime context, a Unix address, no address. */
typedef struct {
    BLITZ_CORO;
    blitz_io op;
    int64_t unix_addr, no_addr;
} lim_bad;

static blitz_poll lim_bad_poll(blitz_cx *cx, void *p) {
    lim_bad *l = p;
    BLITZ_BEGIN(l);
    {
        blitz_addr u;
        CHECK_OK(blitz_addr_unix("/tmp/blitz-none", &u));
        CHECK_EQ(blitz_tcp_connect_timeout(cx, &l->op, &u, BLITZ_SEC), BLITZ_READY);
        l->unix_addr = l->op.result;
        CHECK_EQ(blitz_tcp_connect_timeout(cx, &l->op, NULL, BLITZ_SEC), BLITZ_READY);
        l->no_addr = l->op.result;
        CHECK_EQ(blitz_tcp_connect_timeout(cx, NULL, &u, BLITZ_SEC), BLITZ_READY);
    }
    BLITZ_END(l);
}

BLITZ_TEST(io_connect_limit_bad_input) {
    blitz_runtime *rt = tu_io_rt_new(BLITZ_BACKEND_EPOLL, TU_CT);
    lim_bad l;
    memset(&l, 0, sizeof l);
    CHECK_OK(blitz_runtime_run(rt, lim_bad_poll, &l, sizeof l));
    CHECK_EQ(l.unix_addr, BLITZ_EINVAL);
    CHECK_EQ(l.no_addr, BLITZ_EINVAL);
    blitz_io op;
    memset(&op, 0, sizeof op);
    blitz_addr a;
    CHECK_OK(blitz_addr_parse("127.0.0.1:1", &a));
    CHECK_EQ(blitz_tcp_connect_timeout(NULL, &op, &a, BLITZ_SEC), BLITZ_READY);
    CHECK_EQ(op.result, BLITZ_EINVAL);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
