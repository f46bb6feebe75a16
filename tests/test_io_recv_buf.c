/* Receives into lent buffers (blitz_sock_recv_buf), on every backend:
 *   - many echo connections whose server side borrows its buffers;
 *   - a stream read by a task that holds hundreds of buffers at once (more
 *     than io_uring's provided pool: receives go on from the heap pool),
 *     checks every byte, and releases them out of order;
 *   - a receive cancelled while it waits holds nothing, and the next one
 *     gets the data;
 *   - a buffer outlives its socket's close; end of stream, a listener, a
 *     view still holding a buffer, a Unix stream, the blocking form.
 * Uses the harness of tests/test_io.c. */

/* ---- an echo server that borrows -------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    blitz_buf in;
} rb_echo_conn;

static blitz_poll rb_echo_conn_poll(blitz_cx *cx, void *p) {
    rb_echo_conn *e = p;
    BLITZ_BEGIN(e);
    for (;;) {
        BLITZ_AWAIT(e, blitz_sock_recv_buf(cx, &e->op, e->sock, &e->in));
        if (e->op.result <= 0) {
            CHECK_NULL(e->in.data);
            break;
        }
        CHECK_EQ(e->in.len, e->op.result);
        BLITZ_AWAIT(e, blitz_sock_send_all(cx, &e->op, e->sock, e->in.data, e->in.len));
        blitz_buf_release(&e->in);
        if (e->op.result < 0)
            break;
    }
    blitz_sock_close(e->sock);
    BLITZ_END(e);
}

static void rb_echo_conn_cancel(void *p) {
    rb_echo_conn *e = p;
    blitz_io_cancel(NULL, &e->op);
    blitz_buf_release(&e->in);
    blitz_sock_close(e->sock);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_io op;
    long conns, accepted;
} rb_echo_server;

static blitz_poll rb_echo_server_poll(blitz_cx *cx, void *p) {
    rb_echo_server *s = p;
    BLITZ_BEGIN(s);
    while (s->accepted < s->conns) {
        BLITZ_AWAIT(s, blitz_sock_accept(cx, &s->op, s->listener));
        CHECK_OK((int)s->op.result);
        rb_echo_conn c;
        memset(&c, 0, sizeof c);
        c.sock = s->op.socket;
        blitz_spawn_opts o;
        memset(&o, 0, sizeof o);
        o.poll = rb_echo_conn_poll;
        o.state = &c;
        o.size = sizeof c;
        o.cancel = rb_echo_conn_cancel;
        CHECK_OK(blitz_spawn_ex(blitz_cx_runtime(cx), &o, NULL));
        s->accepted++;
    }
    BLITZ_END(s);
}

static blitz_poll rb_echo_main_poll(blitz_cx *cx, void *p) {
    io_echo_main *m = p;
    BLITZ_BEGIN(m);
    {
        rb_echo_server s;
        memset(&s, 0, sizeof s);
        s.listener = m->listener;
        s.conns = m->conns;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), rb_echo_server_poll, &s, sizeof s, &m->server));
    }
    for (m->i = 0; m->i < m->conns; m->i++) {
        io_client c;
        memset(&c, 0, sizeof c);
        c.addr = m->addr;
        c.id = m->i;
        c.rounds = m->rounds;
        c.done = m->done;
        CHECK_OK(
            blitz_spawn(blitz_cx_runtime(cx), io_client_poll, &c, sizeof c, &m->clients[m->i]));
    }
    for (m->i = 0; m->i < m->conns; m->i++) {
        BLITZ_AWAIT(m, blitz_join(cx, m->clients[m->i]));
        CHECK_OK(blitz_task_status(m->clients[m->i]));
        blitz_task_release(&m->clients[m->i]);
    }
    BLITZ_AWAIT(m, blitz_join(cx, m->server));
    CHECK_OK(blitz_task_status(m->server));
    blitz_task_release(&m->server);
    BLITZ_END(m);
}

static int io_recv_buf_echo(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    io_echo_main *m = calloc(1, sizeof *m);
    atomic_long done;
    atomic_init(&done, 0);
    m->done = &done;
    m->conns = (int)test_scaled(300);
    m->rounds = 5;
    m->clients = calloc((size_t)m->conns, sizeof(blitz_task *));
    m->listener = tu_listen_any(rt, &m->addr);
    CHECK_OK(blitz_runtime_run(rt, rb_echo_main_poll, m, sizeof *m));
    CHECK_EQ(atomic_load(&done), m->conns);
    blitz_sock_close(m->listener);
    CHECK_OK(blitz_runtime_free(rt));
    free(m->clients);
    free(m);
    return 0;
}
IO_BACKEND_TESTS(io_recv_buf_echo)

/* ---- holding many buffers ----------------------------------------------------------------- */

#define RB_HOLD  320 /* more than io_uring's 256 provided buffers per ring */
#define RB_BYTES (3u << 20)

static unsigned char rb_byte(size_t at) {
    return (unsigned char)((at * 131u) ^ (at >> 11));
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    size_t sent;
    unsigned char chunk[8192];
} rb_sender;

static blitz_poll rb_sender_poll(blitz_cx *cx, void *p) {
    rb_sender *s = p;
    BLITZ_BEGIN(s);
    while (s->sent < RB_BYTES) {
        /* Uneven pieces, so buffers end at odd places. */
        {
            size_t n = 1000 + (s->sent / 7) % 7000;
            if (n > RB_BYTES - s->sent)
                n = RB_BYTES - s->sent;
            for (size_t i = 0; i < n; i++)
                s->chunk[i] = rb_byte(s->sent + i);
            s->op.result = (int64_t)n; /* the length, for the await below */
        }
        BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->op, s->sock, s->chunk, (size_t)s->op.result));
        CHECK_GT(s->op.result, 0);
        s->sent += (size_t)s->op.result;
    }
    blitz_sock_close(s->sock);
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener, *client, *server;
    blitz_addr addr;
    blitz_io op;
    blitz_task *sender;
    blitz_buf held[RB_HOLD];
    int n, max_held;
    size_t got;
} rb_hold_state;

static void rb_release_all(rb_hold_state *h) {
    /* Every other one first, then the rest backwards: out of order. */
    for (int i = 0; i < h->n; i += 2)
        blitz_buf_release(&h->held[i]);
    for (int i = h->n - 1; i >= 0; i--) {
        blitz_buf_release(&h->held[i]);
        CHECK_NULL(h->held[i].data);
    }
    h->n = 0;
}

static blitz_poll rb_hold_poll(blitz_cx *cx, void *p) {
    rb_hold_state *h = p;
    BLITZ_BEGIN(h);
    BLITZ_AWAIT(h, blitz_tcp_connect(cx, &h->op, &h->addr));
    CHECK_OK((int)h->op.result);
    h->client = h->op.socket;
    BLITZ_AWAIT(h, blitz_sock_accept(cx, &h->op, h->listener));
    CHECK_OK((int)h->op.result);
    h->server = h->op.socket;
    {
        rb_sender s;
        memset(&s, 0, sizeof s);
        s.sock = h->client;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), rb_sender_poll, &s, sizeof s, &h->sender));
    }
    for (;;) {
        if (h->n == RB_HOLD)
            rb_release_all(h);
        BLITZ_AWAIT(h, blitz_sock_recv_buf(cx, &h->op, h->server, &h->held[h->n]));
        if (h->op.result == 0)
            break;
        CHECK_GT(h->op.result, 0);
        {
            blitz_buf *b = &h->held[h->n];
            CHECK_EQ(b->len, h->op.result);
            CHECK_LE(b->len, 16384);
            for (size_t i = 0; i < b->len; i++)
                CHECK_BASE((unsigned char)b->data[i] == rb_byte(h->got + i), "byte %zu",
                           h->got + i);
            /* Writable, and nobody else's: scribble over it. */
            memset(b->data, 0xee, b->len);
            h->got += b->len;
        }
        h->n++;
        if (h->n > h->max_held)
            h->max_held = h->n;
    }
    CHECK_NULL(h->held[h->n].data);
    rb_release_all(h);
    CHECK_EQ(h->got, RB_BYTES);
    BLITZ_AWAIT(h, blitz_join(cx, h->sender));
    CHECK_OK(blitz_task_status(h->sender));
    blitz_task_release(&h->sender);
    blitz_sock_close(h->server);
    BLITZ_END(h);
}

static int io_recv_buf_hold(blitz_backend b) {
    IO_RUN_LISTENING(b, rb_hold_state, rb_hold_poll);
}
IO_BACKEND_TESTS(io_recv_buf_hold)

/* ---- cancel while waiting, close while held, edges ---------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener, *client, *server, *ua, *ub;
    blitz_addr addr;
    blitz_io op, op2;
    blitz_timer limit;
    blitz_buf in, other;
    blitz_op val;
    char two[2];
} rb_edges_state;

static blitz_poll rb_edges_poll(blitz_cx *cx, void *p) {
    rb_edges_state *e = p;
    BLITZ_BEGIN(e);
    BLITZ_AWAIT(e, blitz_tcp_connect(cx, &e->op, &e->addr));
    CHECK_OK((int)e->op.result);
    e->client = e->op.socket;
    BLITZ_AWAIT(e, blitz_sock_accept(cx, &e->op, e->listener));
    CHECK_OK((int)e->op.result);
    e->server = e->op.socket;

    /* A listener has nothing to receive. */
    BLITZ_AWAIT(e, blitz_sock_recv_buf(cx, &e->op, e->listener, &e->in));
    CHECK_EQ(e->op.result, BLITZ_ENOTCONN);
    BLITZ_AWAIT(e, blitz_sock_recv_buf(cx, &e->op, e->server, NULL));
    CHECK_EQ(e->op.result, BLITZ_EINVAL);

    /* Cancelled while it waits: nothing held, and the data that comes
     * afterwards goes to the next receive. */
    BLITZ_AWAIT(e, blitz_timeout_op(cx, &e->limit, 2 * BLITZ_MSEC,
                                    blitz_sock_recv_buf(cx, &e->op, e->server, &e->in),
                                    blitz_io_cancel, &e->op));
    CHECK(e->limit.expired);
    BLITZ_AWAIT(e, blitz_io_settle(cx, &e->op));
    CHECK_EQ(e->op.result, BLITZ_ECANCELED);
    CHECK_NULL(e->in.data);
    CHECK_EQ(e->in.len, 0);
    blitz_buf_release(&e->in); /* empty: nothing happens */
    BLITZ_AWAIT(e, blitz_sock_send_all(cx, &e->op, e->client, "hello", 5));
    CHECK_EQ(e->op.result, 5);
    BLITZ_AWAIT(e, blitz_sock_recv_buf(cx, &e->op, e->server, &e->in));
    CHECK_EQ(e->op.result, 5);
    CHECK(memcmp(e->in.data, "hello", 5) == 0);

    /* A view that still holds a buffer is refused, and keeps it. */
    BLITZ_AWAIT(e, blitz_sock_recv_buf(cx, &e->op, e->server, &e->in));
    CHECK_EQ(e->op.result, BLITZ_EINVAL);
    CHECK(memcmp(e->in.data, "hello", 5) == 0);

    /* The op-value form, mixed with a plain receive: order kept. */
    BLITZ_AWAIT(e, blitz_sock_send_all(cx, &e->op, e->client, "world!", 6));
    CHECK_EQ(e->op.result, 6);
    BLITZ_AWAIT(e, blitz_sock_recv_exact(cx, &e->op, e->server, e->two, 2));
    CHECK_EQ(e->op.result, 2);
    CHECK(memcmp(e->two, "wo", 2) == 0);
    e->val = blitz_op_sock_recv_buf(&e->op2, e->server, &e->other);
    BLITZ_AWAIT(e, e->val.poll(cx, e->val.arg));
    CHECK_EQ(e->op2.result, 4);
    CHECK(memcmp(e->other.data, "rld!", 4) == 0);

    /* Close while held: the buffers stay the task's until released. */
    blitz_sock_close(e->server);
    CHECK(memcmp(e->in.data, "hello", 5) == 0);
    CHECK(memcmp(e->other.data, "rld!", 4) == 0);
    blitz_buf_release(&e->other);
    blitz_buf_release(&e->in);
    CHECK_NULL(e->in.data);
    blitz_sock_close(e->client);

    /* End of stream: 0 and nothing held. A Unix stream too. */
    CHECK_OK(blitz_unix_pair(blitz_cx_runtime(cx), 1, &e->ua, &e->ub));
    BLITZ_AWAIT(e, blitz_sock_send_all(cx, &e->op, e->ua, "unix", 4));
    CHECK_EQ(e->op.result, 4);
    blitz_sock_close(e->ua);
    BLITZ_AWAIT(e, blitz_sock_recv_buf(cx, &e->op, e->ub, &e->in));
    CHECK_EQ(e->op.result, 4);
    CHECK(memcmp(e->in.data, "unix", 4) == 0);
    blitz_buf_release(&e->in);
    BLITZ_AWAIT(e, blitz_sock_recv_buf(cx, &e->op, e->ub, &e->in));
    CHECK_EQ(e->op.result, 0);
    CHECK_NULL(e->in.data);
    blitz_sock_close(e->ub);
    BLITZ_END(e);
}

static int io_recv_buf_edges(blitz_backend b) {
    IO_RUN_LISTENING(b, rb_edges_state, rb_edges_poll);
}
IO_BACKEND_TESTS(io_recv_buf_edges)

/* ---- the blocking form -------------------------------------------------------------------- */

static int io_recv_buf_blocking(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    blitz_addr addr;
    blitz_socket *l = tu_listen_any(rt, &addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(fd, 0);
    CHECK_OK(connect(fd, (const struct sockaddr *)(const void *)addr.u.bytes, addr.len));
    blitz_io op;
    memset(&op, 0, sizeof op);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_sock_accept(&op, l)));
    blitz_socket *s = op.socket;
    CHECK_NOT_NULL(s);
    CHECK_EQ(send(fd, "blocking", 8, MSG_NOSIGNAL), 8);
    blitz_buf in;
    memset(&in, 0, sizeof in);
    size_t got = 0;
    char all[8];
    while (got < 8) {
        CHECK_OK(blitz_op_run_blocking(rt, blitz_op_sock_recv_buf(&op, s, &in)));
        CHECK_GT(op.result, 0);
        memcpy(all + got, in.data, in.len);
        got += in.len;
        blitz_buf_release(&in);
    }
    CHECK(memcmp(all, "blocking", 8) == 0);
    close(fd);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_sock_recv_buf(&op, s, &in)));
    CHECK_EQ(op.result, 0);
    blitz_sock_close(s);
    blitz_sock_close(l);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_recv_buf_blocking)
