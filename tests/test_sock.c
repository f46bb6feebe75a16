/* The socket API on the system's default backend, with nothing but the
 * public calls: TCP echo (many connections, every byte checked, the
 * server on lent buffers), a refused connect, a connect with a limit it
 * meets, the half-close, a cancelled receive whose data goes to the next
 * one, a close with a receive in flight, a runtime freed with ops in
 * flight, options and addresses, UDP (addressed, connected, truncated),
 * blitz_serve. The same file runs on Windows (the completion port) and
 * elsewhere; all traffic is on 127.0.0.1 with port-0 binds. */
#include "test_util.h"

/* A runtime of flavour f on the default backend. */
static blitz_runtime *ts_rt(tu_flavor f) {
    blitz_config cfg = tu_config(f);
    blitz_runtime *rt = tu_rt_config(&cfg);
    CHECK(blitz_runtime_backend(rt) != BLITZ_BACKEND_NONE);
    return rt;
}

/* ---- echo: a server task per connection, clients checking every byte ---- */

/* The server's receives borrow the runtime's buffers (blitz_sock_recv_buf). */
typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    blitz_buf in;
} ts_echo_conn;

static blitz_poll ts_echo_conn_poll(blitz_cx *cx, void *p) {
    ts_echo_conn *e = p;
    BLITZ_BEGIN(e);
    for (;;) {
        BLITZ_AWAIT(e, blitz_sock_recv_buf(cx, &e->op, e->sock, &e->in));
        if (e->op.result <= 0)
            break;
        CHECK_EQ(e->in.len, (size_t)e->op.result);
        BLITZ_AWAIT(e, blitz_sock_send_all(cx, &e->op, e->sock, e->in.data, e->in.len));
        blitz_buf_release(&e->in);
        if (e->op.result < 0)
            break;
    }
    blitz_sock_close(e->sock);
    BLITZ_END(e);
}

static void ts_echo_conn_cancel(void *p) {
    ts_echo_conn *e = p;
    blitz_io_cancel(NULL, &e->op);
    blitz_buf_release(&e->in);
    blitz_sock_close(e->sock);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_io op;
    long conns, accepted;
} ts_server;

static blitz_poll ts_server_poll(blitz_cx *cx, void *p) {
    ts_server *s = p;
    BLITZ_BEGIN(s);
    while (s->accepted < s->conns) {
        BLITZ_AWAIT(s, blitz_sock_accept(cx, &s->op, s->listener));
        CHECK_OK((int)s->op.result);
        CHECK_NOT_NULL(s->op.socket);
        {
            ts_echo_conn c;
            memset(&c, 0, sizeof c);
            c.sock = s->op.socket;
            blitz_spawn_opts o;
            memset(&o, 0, sizeof o);
            o.poll = ts_echo_conn_poll;
            o.state = &c;
            o.size = sizeof c;
            o.cancel = ts_echo_conn_cancel;
            CHECK_OK(blitz_spawn_ex(blitz_cx_runtime(cx), &o, NULL));
        }
        s->accepted++;
    }
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_io op;
    blitz_socket *sock;
    int id, round;
    atomic_long *done;
    char out[700], in[700];
} ts_client;

static blitz_poll ts_client_poll(blitz_cx *cx, void *p) {
    ts_client *c = p;
    BLITZ_BEGIN(c);
    BLITZ_AWAIT(c, blitz_tcp_connect(cx, &c->op, &c->addr));
    CHECK_OK((int)c->op.result);
    c->sock = c->op.socket;
    for (c->round = 0; c->round < 3; c->round++) {
        for (size_t i = 0; i < sizeof c->out; i++)
            c->out[i] = (char)(c->id * 7 + c->round * 13 + (int)i);
        BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->op, c->sock, c->out, sizeof c->out));
        CHECK_EQ(c->op.result, (long long)sizeof c->out);
        BLITZ_AWAIT(c, blitz_sock_recv_exact(cx, &c->op, c->sock, c->in, sizeof c->in));
        CHECK_EQ(c->op.result, (long long)sizeof c->in);
        CHECK(memcmp(c->in, c->out, sizeof c->in) == 0);
    }
    CHECK_OK(blitz_sock_shutdown(c->sock, 1));
    BLITZ_AWAIT(c, blitz_sock_recv(cx, &c->op, c->sock, c->in, sizeof c->in));
    CHECK_EQ(c->op.result, 0); /* the server closed after our FIN */
    blitz_sock_close(c->sock);
    atomic_fetch_add(c->done, 1);
    BLITZ_END(c);
}

typedef struct {
    BLITZ_CORO;
    int conns, i;
    blitz_addr addr;
    atomic_long *done;
    blitz_task **tasks;
} ts_clients;

/* Starts every client, then waits for each. */
static blitz_poll ts_clients_poll(blitz_cx *cx, void *p) {
    ts_clients *m = p;
    BLITZ_BEGIN(m);
    for (m->i = 0; m->i < m->conns; m->i++) {
        ts_client c;
        memset(&c, 0, sizeof c);
        c.addr = m->addr;
        c.id = m->i;
        c.done = m->done;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), ts_client_poll, &c, sizeof c, &m->tasks[m->i]));
    }
    for (m->i = 0; m->i < m->conns; m->i++) {
        BLITZ_AWAIT(m, blitz_join(cx, m->tasks[m->i]));
        CHECK_OK(blitz_task_status(m->tasks[m->i]));
        blitz_task_release(&m->tasks[m->i]);
    }
    BLITZ_END(m);
}

/* `conns` clients at once against one listener's echo tasks. */
static int ts_echo_run(tu_flavor f, int conns) {
    blitz_runtime *rt = ts_rt(f);
    blitz_addr at;
    blitz_socket *l = tu_listen_any(rt, &at);
    atomic_long done;
    atomic_init(&done, 0);
    ts_server s;
    memset(&s, 0, sizeof s);
    s.listener = l;
    s.conns = conns;
    blitz_task *server = NULL;
    CHECK_OK(blitz_spawn(rt, ts_server_poll, &s, sizeof s, &server));
    ts_clients m;
    memset(&m, 0, sizeof m);
    m.conns = conns;
    m.addr = at;
    m.done = &done;
    m.tasks = calloc((size_t)conns, sizeof *m.tasks);
    CHECK_NOT_NULL(m.tasks);
    CHECK_OK(blitz_runtime_run(rt, ts_clients_poll, &m, sizeof m));
    CHECK_EQ(tu_ldl(&done), conns);
    CHECK_OK(blitz_join_blocking(server));
    CHECK_OK(blitz_task_status(server));
    blitz_task_release(&server);
    free(m.tasks);
    blitz_sock_close(l);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

static int sock_echo(tu_flavor f) {
    return ts_echo_run(f, (int)test_scaled(100));
}
TU_FLAVOR_TESTS(sock_echo)

/* A thousand connections open at once on one thread, every byte checked. */
BLITZ_TEST(sock_echo_1000) {
    return ts_echo_run(TU_CT, 1000);
}

/* ---- connect ----------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_io op;
    int64_t limit_ns;
} ts_connect;

static blitz_poll ts_connect_poll(blitz_cx *cx, void *p) {
    ts_connect *c = p;
    BLITZ_BEGIN(c);
    if (c->limit_ns)
        BLITZ_AWAIT(c, blitz_tcp_connect_timeout(cx, &c->op, &c->addr, c->limit_ns));
    else
        BLITZ_AWAIT(c, blitz_tcp_connect(cx, &c->op, &c->addr));
    BLITZ_END(c);
}

/* A port nobody listens on any more: refused. */
static int sock_connect_refused(tu_flavor f) {
    blitz_runtime *rt = ts_rt(f);
    ts_connect c;
    memset(&c, 0, sizeof c);
    blitz_socket *l = tu_listen_any(rt, &c.addr);
    CHECK_OK(blitz_sock_close(l));
    CHECK_OK(blitz_runtime_run(rt, ts_connect_poll, &c, sizeof c));
    CHECK_EQ(c.op.result, BLITZ_ECONNREFUSED);
    CHECK_NULL(c.op.socket);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sock_connect_refused)

/* A limit the connect meets: connected, the peer's address the listener's. */
static int sock_connect_limit_ok(tu_flavor f) {
    blitz_runtime *rt = ts_rt(f);
    ts_connect c;
    memset(&c, 0, sizeof c);
    c.limit_ns = 30 * BLITZ_SEC;
    blitz_socket *l = tu_listen_any(rt, &c.addr);
    CHECK_OK(blitz_runtime_run(rt, ts_connect_poll, &c, sizeof c));
    CHECK_OK((int)c.op.result);
    CHECK_NOT_NULL(c.op.socket);
    blitz_addr peer;
    CHECK_OK(blitz_sock_peer_addr(c.op.socket, &peer));
    CHECK_EQ(blitz_addr_port(&peer), blitz_addr_port(&c.addr));
    blitz_addr local;
    CHECK_OK(blitz_sock_local_addr(c.op.socket, &local));
    CHECK_GT(blitz_addr_port(&local), 0);
    CHECK_OK(blitz_sock_close(c.op.socket));
    CHECK_OK(blitz_sock_close(l));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sock_connect_limit_ok)

/* ---- one connection's behaviours ------------------------------------------------ */

typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_socket *listener, *a, *b; /* a: connected, b: accepted */
    blitz_io op, op2;
    blitz_timer t;
    blitz_task *closer;
    blitz_iovec v[2];
    char buf[64];
    int step;
} ts_pair;

/* Connects a to the listener and accepts b. */
static blitz_poll ts_pair_open(blitz_cx *cx, ts_pair *m) {
    if (!m->a) {
        blitz_poll p = blitz_tcp_connect(cx, &m->op, &m->addr);
        if (p == BLITZ_PENDING)
            return p;
        CHECK_OK((int)m->op.result);
        m->a = m->op.socket;
    }
    blitz_poll p = blitz_sock_accept(cx, &m->op2, m->listener);
    if (p == BLITZ_PENDING)
        return p;
    CHECK_OK((int)m->op2.result);
    m->b = m->op2.socket;
    return BLITZ_READY;
}

static int ts_pair_run(tu_flavor f, blitz_poll_fn body) {
    blitz_runtime *rt = ts_rt(f);
    ts_pair *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    m->listener = tu_listen_any(rt, &m->addr);
    CHECK_OK(blitz_runtime_run(rt, body, m, sizeof *m));
    CHECK_EQ(m->step, 100);
    blitz_sock_close(m->listener);
    CHECK_OK(blitz_runtime_free(rt));
    free(m);
    return 0;
}

/* a half-closes: b reads the data then the end, and still sends. */
static blitz_poll ts_half_close_poll(blitz_cx *cx, void *p) {
    ts_pair *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, ts_pair_open(cx, m));
    BLITZ_AWAIT(m, blitz_sock_send_all(cx, &m->op, m->a, "hello", 5));
    CHECK_EQ(m->op.result, 5);
    CHECK_OK(blitz_sock_shutdown(m->a, 1));
    BLITZ_AWAIT(m, blitz_sock_recv_exact(cx, &m->op2, m->b, m->buf, 5));
    CHECK_EQ(m->op2.result, 5);
    CHECK(memcmp(m->buf, "hello", 5) == 0);
    BLITZ_AWAIT(m, blitz_sock_recv(cx, &m->op2, m->b, m->buf, sizeof m->buf));
    CHECK_EQ(m->op2.result, 0);
    BLITZ_AWAIT(m, blitz_sock_send_all(cx, &m->op2, m->b, "back", 4));
    CHECK_EQ(m->op2.result, 4);
    BLITZ_AWAIT(m, blitz_sock_recv_exact(cx, &m->op, m->a, m->buf, 4));
    CHECK_EQ(m->op.result, 4);
    CHECK(memcmp(m->buf, "back", 4) == 0);
    blitz_sock_close(m->a);
    blitz_sock_close(m->b);
    m->step = 100;
    BLITZ_END(m);
}
static int sock_half_close(tu_flavor f) {
    return ts_pair_run(f, ts_half_close_poll);
}
TU_FLAVOR_TESTS(sock_half_close)

/* A receive withdrawn by a time limit: BLITZ_ETIMEDOUT once settled, the
 * socket usable, and data sent afterwards reaches the next receive whole
 * (none of it lost to the withdrawn one). Then vectored transfers. */
static blitz_poll ts_cancel_recv_poll(blitz_cx *cx, void *p) {
    ts_pair *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, ts_pair_open(cx, m));
    BLITZ_AWAIT(m, blitz_timeout(cx, &m->t, 20 * BLITZ_MSEC,
                                 blitz_sock_recv(cx, &m->op2, m->b, m->buf, sizeof m->buf)));
    CHECK(m->t.expired);
    BLITZ_AWAIT(m, blitz_io_settle(cx, &m->op2));
    BLITZ_AWAIT(m, blitz_sock_send_all(cx, &m->op, m->a, "abcdef", 6));
    CHECK_EQ(m->op.result, 6);
    BLITZ_AWAIT(m, blitz_sock_recv_exact(cx, &m->op2, m->b, m->buf, 6));
    CHECK_EQ(m->op2.result, 6);
    CHECK(memcmp(m->buf, "abcdef", 6) == 0);
    /* The arrays stay valid until READY: in the state. */
    m->v[0].base = (void *)(uintptr_t) "12";
    m->v[0].len = 2;
    m->v[1].base = (void *)(uintptr_t) "345";
    m->v[1].len = 3;
    BLITZ_AWAIT(m, blitz_sock_sendv(cx, &m->op, m->a, m->v, 2));
    CHECK_EQ(m->op.result, 5);
    memset(m->buf, 0, sizeof m->buf);
    m->v[0].base = m->buf;
    m->v[0].len = 1;
    m->v[1].base = m->buf + 10;
    m->v[1].len = 4;
    BLITZ_AWAIT(m, blitz_sock_recvv(cx, &m->op2, m->b, m->v, 2));
    CHECK_GT(m->op2.result, 0);
    CHECK_EQ(m->buf[0], '1');
    blitz_sock_close(m->a);
    blitz_sock_close(m->b);
    m->step = 100;
    BLITZ_END(m);
}
static int sock_cancel_recv(tu_flavor f) {
    return ts_pair_run(f, ts_cancel_recv_poll);
}
TU_FLAVOR_TESTS(sock_cancel_recv)

/* Closes the socket in its state (another task, so the receive waits). */
typedef struct {
    BLITZ_CORO;
    ts_pair *m;
    blitz_timer t;
} ts_closer;

static blitz_poll ts_closer_poll(blitz_cx *cx, void *p) {
    ts_closer *c = p;
    BLITZ_BEGIN(c);
    /* Until the receive waits: the close then withdraws it. */
    while (!blitz_io_pending(&c->m->op2))
        BLITZ_AWAIT(c, blitz_sleep(cx, &c->t, BLITZ_MSEC));
    CHECK_OK(blitz_sock_close(c->m->b));
    BLITZ_END(c);
}

/* A close from another task ends a receive in flight with BLITZ_ECLOSED;
 * the peer sees the end of the stream. */
static blitz_poll ts_close_inflight_poll(blitz_cx *cx, void *p) {
    ts_pair *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, ts_pair_open(cx, m));
    {
        ts_closer c;
        memset(&c, 0, sizeof c);
        c.m = m;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), ts_closer_poll, &c, sizeof c, &m->closer));
    }
    BLITZ_AWAIT(m, blitz_sock_recv(cx, &m->op2, m->b, m->buf, sizeof m->buf));
    CHECK_EQ(m->op2.result, BLITZ_ECLOSED);
    BLITZ_AWAIT(m, blitz_join(cx, m->closer));
    CHECK_OK(blitz_task_status(m->closer));
    blitz_task_release(&m->closer);
    BLITZ_AWAIT(m, blitz_sock_recv(cx, &m->op, m->a, m->buf, sizeof m->buf));
    CHECK(m->op.result == 0 || m->op.result == BLITZ_ECONNRESET);
    blitz_sock_close(m->a);
    m->step = 100;
    BLITZ_END(m);
}
static int sock_close_inflight(tu_flavor f) {
    return ts_pair_run(f, ts_close_inflight_poll);
}
TU_FLAVOR_TESTS(sock_close_inflight)

/* Options and addresses of a connected pair. */
static blitz_poll ts_options_poll(blitz_cx *cx, void *p) {
    ts_pair *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, ts_pair_open(cx, m));
    CHECK_OK(blitz_tcp_set_nodelay(m->a, 1));
    CHECK_EQ(blitz_tcp_nodelay(m->a), 1);
    CHECK_OK(blitz_tcp_set_nodelay(m->a, 0));
    CHECK_EQ(blitz_tcp_nodelay(m->a), 0);
    CHECK_OK(blitz_tcp_set_keepalive(m->a, 1, 0));
    CHECK_OK(blitz_sock_set_recv_buffer(m->a, 65536));
    CHECK_OK(blitz_sock_set_send_buffer(m->a, 65536));
    CHECK_GT(blitz_sock_recv_buffer(m->a), 0);
    CHECK_GT(blitz_sock_send_buffer(m->a), 0);
    CHECK_OK(blitz_sock_set_linger(m->a, 1, 1));
    CHECK_EQ(blitz_sock_set_linger(m->a, 1, -1), BLITZ_EINVAL);
    {
        blitz_addr la, pb;
        CHECK_OK(blitz_sock_local_addr(m->a, &la));
        CHECK_OK(blitz_sock_peer_addr(m->b, &pb));
        CHECK_EQ(blitz_addr_port(&la), blitz_addr_port(&pb));
        CHECK_EQ(blitz_addr_family(&la), AF_INET);
    }
    CHECK_EQ(blitz_sock_shutdown(m->a, 3), BLITZ_EINVAL);
    blitz_sock_close(m->a);
    blitz_sock_close(m->b);
    m->step = 100;
    BLITZ_END(m);
}
static int sock_options(tu_flavor f) {
    return ts_pair_run(f, ts_options_poll);
}
TU_FLAVOR_TESTS(sock_options)

/* A receive and an accept in flight when the runtime is freed: the free
 * withdraws them and returns (their buffers are the kernel's until then). */
typedef struct {
    BLITZ_CORO;
    blitz_socket *s;
    blitz_io op;
    char buf[256];
} ts_waiter;

static blitz_poll ts_waiter_recv_poll(blitz_cx *cx, void *p) {
    ts_waiter *w = p;
    BLITZ_BEGIN(w);
    BLITZ_AWAIT(w, blitz_sock_recv(cx, &w->op, w->s, w->buf, sizeof w->buf));
    BLITZ_END(w);
}
static blitz_poll ts_waiter_accept_poll(blitz_cx *cx, void *p) {
    ts_waiter *w = p;
    BLITZ_BEGIN(w);
    BLITZ_AWAIT(w, blitz_sock_accept(cx, &w->op, w->s));
    BLITZ_END(w);
}

static blitz_poll ts_sleep_poll(blitz_cx *cx, void *p) {
    ts_closer *c = p;
    BLITZ_BEGIN(c);
    BLITZ_AWAIT(c, blitz_sleep(cx, &c->t, 20 * BLITZ_MSEC));
    BLITZ_END(c);
}

static int sock_free_inflight(tu_flavor f) {
    blitz_runtime *rt = ts_rt(f);
    ts_pair *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    m->listener = tu_listen_any(rt, &m->addr);
    /* A connection, then a receive waiting on it and an accept waiting on
     * the listener. */
    ts_connect c;
    memset(&c, 0, sizeof c);
    c.addr = m->addr;
    CHECK_OK(blitz_runtime_run(rt, ts_connect_poll, &c, sizeof c));
    CHECK_OK((int)c.op.result);
    ts_waiter w;
    memset(&w, 0, sizeof w);
    w.s = c.op.socket;
    blitz_task *t1 = NULL, *t2 = NULL;
    CHECK_OK(blitz_spawn(rt, ts_waiter_recv_poll, &w, sizeof w, &t1));
    ts_waiter a;
    memset(&a, 0, sizeof a);
    a.s = m->listener;
    CHECK_OK(blitz_spawn(rt, ts_waiter_accept_poll, &a, sizeof a, &t2));
    /* Drive it a little so both start (a current-thread runtime runs its
     * tasks only while driven). */
    {
        ts_closer idle; /* with no pair: only sleeps */
        memset(&idle, 0, sizeof idle);
        CHECK_OK(blitz_runtime_run(rt, ts_sleep_poll, &idle, sizeof idle));
    }
    blitz_task_release(&t1);
    blitz_task_release(&t2);
    CHECK_OK(blitz_runtime_free(rt));
    free(m);
    return 0;
}
TU_FLAVOR_TESTS(sock_free_inflight)

/* ---- UDP ---------------------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *a, *b;
    blitz_addr at_a, at_b, from;
    blitz_io op, op2;
    char buf[256];
    int done;
} ts_udp;

static blitz_poll ts_udp_poll(blitz_cx *cx, void *p) {
    ts_udp *u = p;
    BLITZ_BEGIN(u);
    /* Addressed: the receiver learns the sender's address. */
    BLITZ_AWAIT(u, blitz_sock_send_to(cx, &u->op, u->a, "ping", 4, &u->at_b));
    CHECK_EQ(u->op.result, 4);
    BLITZ_AWAIT(u, blitz_sock_recv_from(cx, &u->op2, u->b, u->buf, sizeof u->buf, &u->from));
    CHECK_EQ(u->op2.result, 4);
    CHECK(memcmp(u->buf, "ping", 4) == 0);
    CHECK_EQ(blitz_addr_port(&u->from), blitz_addr_port(&u->at_a));
    /* A receive waiting before the datagram comes. */
    CHECK_EQ(blitz_sock_recv_from(cx, &u->op2, u->b, u->buf, sizeof u->buf, &u->from),
             BLITZ_PENDING);
    BLITZ_AWAIT(u, blitz_sock_send_to(cx, &u->op, u->a, "second", 6, &u->at_b));
    CHECK_EQ(u->op.result, 6);
    BLITZ_AWAIT(u, blitz_sock_recv_from(cx, &u->op2, u->b, u->buf, sizeof u->buf, &u->from));
    CHECK_EQ(u->op2.result, 6);
    CHECK(memcmp(u->buf, "second", 6) == 0);
    /* Connected: plain send and receive; a longer datagram is truncated. */
    CHECK_OK(blitz_sock_connect_dgram(u->a, &u->at_b));
    CHECK_OK(blitz_sock_connect_dgram(u->b, &u->at_a));
    BLITZ_AWAIT(u, blitz_sock_send(cx, &u->op, u->a, "0123456789", 10));
    CHECK_EQ(u->op.result, 10);
    BLITZ_AWAIT(u, blitz_sock_recv(cx, &u->op2, u->b, u->buf, 4));
    CHECK_EQ(u->op2.result, 4);
    CHECK(memcmp(u->buf, "0123", 4) == 0);
    BLITZ_AWAIT(u, blitz_sock_send(cx, &u->op, u->b, "pong", 4));
    CHECK_EQ(u->op.result, 4);
    BLITZ_AWAIT(u, blitz_sock_recv(cx, &u->op2, u->a, u->buf, sizeof u->buf));
    CHECK_EQ(u->op2.result, 4);
    CHECK(memcmp(u->buf, "pong", 4) == 0);
    u->done = 1;
    BLITZ_END(u);
}

static int sock_udp(tu_flavor f) {
    blitz_runtime *rt = ts_rt(f);
    ts_udp *u = calloc(1, sizeof *u);
    CHECK_NOT_NULL(u);
    blitz_addr any;
    CHECK_OK(blitz_addr_parse("127.0.0.1:0", &any));
    CHECK_OK(blitz_udp_bind(rt, &any, 0, &u->a));
    CHECK_OK(blitz_udp_bind(rt, &any, 0, &u->b));
    CHECK_OK(blitz_sock_local_addr(u->a, &u->at_a));
    CHECK_OK(blitz_sock_local_addr(u->b, &u->at_b));
    CHECK_OK(blitz_udp_set_broadcast(u->a, 1));
    CHECK_OK(blitz_runtime_run(rt, ts_udp_poll, u, sizeof *u));
    CHECK(u->done);
    CHECK_OK(blitz_sock_close(u->a));
    CHECK_OK(blitz_sock_close(u->b));
    CHECK_OK(blitz_runtime_free(rt));
    free(u);
    return 0;
}
TU_FLAVOR_TESTS(sock_udp)

/* Bad input is refused the same way everywhere. */
BLITZ_TEST(sock_bad_input) {
    blitz_runtime *rt = ts_rt(TU_CT);
    blitz_addr a;
    CHECK_OK(blitz_addr_parse("127.0.0.1:0", &a));
    blitz_socket *s = NULL;
    CHECK_EQ(blitz_tcp_listen(rt, &a, -1, 0, &s), BLITZ_EINVAL);
    CHECK_EQ(blitz_tcp_listen(rt, &a, 0, 0x100u, &s), BLITZ_EINVAL);
    CHECK_EQ(blitz_tcp_listen(rt, NULL, 0, 0, &s), BLITZ_EINVAL);
    CHECK_EQ(blitz_udp_bind(rt, NULL, 0, &s), BLITZ_EINVAL);
    CHECK_NULL(s);
    /* Two listeners on one port: in use. */
    blitz_addr at;
    blitz_socket *l = tu_listen_any(rt, &at);
    CHECK_EQ(blitz_tcp_listen(rt, &at, 0, 0, &s), BLITZ_EADDRINUSE);
    CHECK_OK(blitz_sock_close(l));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- blitz_serve ------------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock; /* set by blitz_serve; closed by it too */
    blitz_io op;
    char buf[512];
} ts_served;

static blitz_poll ts_served_poll(blitz_cx *cx, void *p) {
    ts_served *c = p;
    BLITZ_BEGIN(c);
    for (;;) {
        BLITZ_AWAIT(c, blitz_sock_recv(cx, &c->op, c->sock, c->buf, sizeof c->buf));
        if (c->op.result <= 0)
            break;
        BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->op, c->sock, c->buf, (size_t)c->op.result));
        if (c->op.result < 0)
            break;
    }
    BLITZ_END(c);
}

typedef struct {
    BLITZ_CORO;
    blitz_shutdown *sd;
    blitz_shutdown_run_op run;
    ts_clients clients;
} ts_serve_main;

/* Serves `conns` echo clients, then shuts down: every client done, the
 * run reports the accept loop gone and nothing cancelled. */
static blitz_poll ts_serve_main_poll(blitz_cx *cx, void *p) {
    ts_serve_main *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, ts_clients_poll(cx, &m->clients));
    CHECK_OK(blitz_shutdown_trigger(m->sd));
    BLITZ_AWAIT(m, blitz_shutdown_run(cx, &m->run, m->sd, 5 * BLITZ_SEC));
    CHECK_OK(m->run.result);
    CHECK_EQ(m->run.cancelled, 0);
    BLITZ_END(m);
}

static int sock_serve(tu_flavor f) {
    blitz_runtime *rt = ts_rt(f);
    ts_serve_main *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    blitz_shutdown_opts so;
    memset(&so, 0, sizeof so);
    so.nsignals = -1;
    CHECK_OK(blitz_shutdown_new(rt, &so, &m->sd));
    blitz_socket *l = tu_listen_any(rt, &m->clients.addr);
    blitz_serve_opts o;
    memset(&o, 0, sizeof o);
    o.listener = l;
    o.poll = ts_served_poll;
    o.size = sizeof(ts_served);
    o.socket_offset = offsetof(ts_served, sock);
    CHECK_OK(blitz_serve(m->sd, &o));
    atomic_long done;
    atomic_init(&done, 0);
    m->clients.conns = (int)test_scaled(50);
    m->clients.done = &done;
    m->clients.tasks = calloc((size_t)m->clients.conns, sizeof *m->clients.tasks);
    CHECK_NOT_NULL(m->clients.tasks);
    CHECK_OK(blitz_runtime_run(rt, ts_serve_main_poll, m, sizeof *m));
    CHECK_EQ(tu_ldl(&done), m->clients.conns);
    CHECK_OK(blitz_shutdown_free(m->sd));
    CHECK_OK(blitz_runtime_free(rt));
    free(m->clients.tasks);
    free(m);
    return 0;
}
TU_FLAVOR_TESTS(sock_serve)
