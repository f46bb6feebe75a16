/* When a socket's resources go, the same on every backend:
 *   - a closed listener's address is free again at once (io_uring's
 *     accept held the socket, and with it an abstract Unix name or a port
 *     bound without SO_REUSEADDR, until its cancel was reaped);
 *   - a socket closed in a current-thread run is closed when the run
 *     returns (io_uring kept the descriptor until the runtime was driven
 *     again, and the peer never saw the end of the stream);
 *   - the stale-file check of a Unix path listener never waits on a live
 *     listener's full backlog, nor hands it a connection;
 *   - a runtime that never spawned reaps the I/O of its sockets that
 *     another runtime's tasks use (its workers start with the first
 *     socket);
 *   - an empty datagram a cancelled io_uring receive got goes to the next
 *     receive, as any other datagram;
 *   - a stream recvv of only empty entries is READY at once with 0, as a
 *     recv of len 0.
 * Uses the harness of tests/test_io.c. */

#include <pthread.h>

/* ---- relisten at once --------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_addr unix_addr, tcp_addr;
    blitz_socket *listener, *client, *server;
    blitz_io op;
    blitz_timer limit;
    int round, rounds, unix_failed, tcp_failed;
} io_relisten_state;

static int io_relisten_unix(blitz_runtime *rt, io_relisten_state *r) {
    return blitz_unix_listen(rt, &r->unix_addr, 0, &r->listener);
}
static int io_relisten_tcp(blitz_runtime *rt, io_relisten_state *r) {
    return blitz_tcp_listen(rt, &r->tcp_addr, 0, BLITZ_SOCK_NO_REUSEADDR, &r->listener);
}

/* One connection accepted, so the accept (multishot on io_uring) stays
 * armed; then everything is closed and the address taken again. */
static blitz_poll io_relisten_poll(blitz_cx *cx, void *p) {
    io_relisten_state *r = p;
    blitz_runtime *rt = blitz_cx_runtime(cx);
    BLITZ_BEGIN(r);
    for (r->round = 0; r->round < r->rounds; r->round++) {
        CHECK_OK(io_relisten_unix(rt, r));
        BLITZ_AWAIT(r, blitz_unix_connect(cx, &r->op, &r->unix_addr));
        CHECK_OK(r->op.result);
        r->client = r->op.socket;
        BLITZ_AWAIT(r, blitz_sock_accept(cx, &r->op, r->listener));
        CHECK_OK(r->op.result);
        r->server = r->op.socket;
        blitz_sock_close(r->server);
        blitz_sock_close(r->client);
        blitz_sock_close(r->listener);
        if (io_relisten_unix(rt, r) == BLITZ_OK)
            blitz_sock_close(r->listener);
        else
            r->unix_failed++;

        /* TCP without SO_REUSEADDR: an accept that waits in vain (a
         * connection would leave its own socket on the port). */
        CHECK_OK(io_relisten_tcp(rt, r));
        BLITZ_AWAIT(r, blitz_timeout_op(cx, &r->limit, 2 * BLITZ_MSEC,
                                        blitz_sock_accept(cx, &r->op, r->listener), blitz_io_cancel,
                                        &r->op));
        CHECK_BASE(r->limit.expired, "accept: %lld", (long long)r->op.result);
        BLITZ_AWAIT(r, blitz_io_settle(cx, &r->op));
        blitz_sock_close(r->listener);
        if (io_relisten_tcp(rt, r) == BLITZ_OK)
            blitz_sock_close(r->listener);
        else
            r->tcp_failed++;
    }
    BLITZ_END(r);
}

static int io_relisten(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    io_relisten_state r;
    memset(&r, 0, sizeof r);
    r.rounds = (int)test_scaled(20);
    char name[64];
    snprintf(name, sizeof name, "@blitz-relisten-%d-%d", (int)getpid(), (int)b);
    CHECK_OK(blitz_addr_unix(name, &r.unix_addr));
    /* A port of our own: listen on port 0 once and keep the number. */
    blitz_socket *probe = tu_listen_any(rt, &r.tcp_addr);
    blitz_sock_close(probe);
    CHECK_OK(blitz_runtime_run(rt, io_relisten_poll, &r, sizeof r));
    CHECK_EQ(r.unix_failed, 0);
    CHECK_EQ(r.tcp_failed, 0);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_relisten)

/* ---- a current-thread run closes what it closed --------------------------------------- */

typedef struct {
    int listener;
    int saw_eof; /* 1: end of stream within 2 s after the rounds */
} io_ct_peer;

static void *io_ct_peer_main(void *arg) {
    io_ct_peer *peer = arg;
    int c = accept(peer->listener, NULL, NULL);
    if (c < 0)
        return NULL;
    char buf[16];
    struct pollfd pfd = {c, POLLIN, 0};
    for (int i = 0; i < 3; i++) {
        if (recv(c, buf, 1, MSG_WAITALL) != 1 || send(c, buf, 1, MSG_NOSIGNAL) != 1)
            goto out;
    }
    if (poll(&pfd, 1, 2000) == 1 && recv(c, buf, sizeof buf, MSG_DONTWAIT) == 0)
        peer->saw_eof = 1;
out:
    close(c);
    return NULL;
}

typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_socket *sock;
    blitz_io op;
    int round;
    char byte;
} io_ct_close_state;

static blitz_poll io_ct_close_poll(blitz_cx *cx, void *p) {
    io_ct_close_state *c = p;
    BLITZ_BEGIN(c);
    BLITZ_AWAIT(c, blitz_tcp_connect(cx, &c->op, &c->addr));
    CHECK_OK(c->op.result);
    c->sock = c->op.socket;
    for (c->round = 0; c->round < 3; c->round++) {
        c->byte = (char)('a' + c->round);
        BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->op, c->sock, &c->byte, 1));
        CHECK_EQ(c->op.result, 1);
        BLITZ_AWAIT(c, blitz_sock_recv(cx, &c->op, c->sock, &c->byte, 1));
        CHECK_EQ(c->op.result, 1);
    }
    blitz_sock_close(c->sock);
    BLITZ_END(c);
}

static int io_ct_close_eof(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_CT);
    if (!rt)
        return 0;
    struct sockaddr_in sin;
    io_ct_peer peer = {tu_plain_listener(4, SOCK_CLOEXEC, &sin), 0};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, io_ct_peer_main, &peer), 0);
    io_ct_close_state c;
    memset(&c, 0, sizeof c);
    CHECK_OK(blitz_addr_ip("127.0.0.1", ntohs(sin.sin_port), &c.addr));
    CHECK_OK(blitz_runtime_run(rt, io_ct_close_poll, &c, sizeof c));
    /* The run returned; the runtime is neither driven nor freed. */
    pthread_join(th, NULL);
    close(peer.listener);
    CHECK_BASE(peer.saw_eof, "%s", "the peer saw no end of stream after the run returned");
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_ct_close_eof)

/* ---- the stale-file check against a live listener ------------------------------------- */

typedef struct {
    blitz_runtime *rt;
    blitz_addr addr;
    atomic_int done;
    int rc;
} io_unix_live_call;

static void *io_unix_live_listen(void *arg) {
    io_unix_live_call *call = arg;
    blitz_socket *l = NULL;
    call->rc = blitz_unix_listen(call->rt, &call->addr, 0, &l);
    if (l)
        blitz_sock_close(l);
    atomic_store(&call->done, 1);
    return NULL;
}

static int io_unix_listen_live(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/tmp/blitz-live-%d-%d", (int)getpid(), (int)b);
    unlink(path);
    io_unix_live_call call;
    memset(&call, 0, sizeof call);
    call.rt = rt;
    CHECK_OK(blitz_addr_unix(path, &call.addr));
    /* A live listener that accepts nothing, its backlog full. */
    int live = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    CHECK_GE(live, 0);
    CHECK_EQ(bind(live, (struct sockaddr *)(void *)call.addr.u.bytes, call.addr.len), 0);
    CHECK_EQ(listen(live, 1), 0);
    int clients[64], nclients = 0;
    while (nclients < 64) {
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        CHECK_GE(c, 0);
        clients[nclients++] = c;
        if (connect(c, (struct sockaddr *)(void *)call.addr.u.bytes, call.addr.len) < 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
    }
    /* The listen must answer at once, not wait for room in the backlog. */
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, io_unix_live_listen, &call), 0);
    for (int i = 0; i < 2000 && !atomic_load(&call.done); i++)
        usleep(1000);
    CHECK_BASE(atomic_load(&call.done), "%s", "blitz_unix_listen waits on a live listener backlog");
    pthread_join(th, NULL);
    CHECK_EQ(call.rc, BLITZ_EADDRINUSE);
    /* Drain the backlog: every connection there is one of ours, none from
     * the check. */
    int accepted = 0;
    for (;;) {
        int a = accept(live, NULL, NULL);
        if (a < 0)
            break;
        accepted++;
        close(a);
    }
    CHECK_EQ(errno, EAGAIN);
    CHECK_LE(accepted, nclients);
    /* With room in the backlog: still in use, and no connection made. */
    atomic_store(&call.done, 0);
    io_unix_live_listen(&call);
    CHECK_EQ(call.rc, BLITZ_EADDRINUSE);
    CHECK_LT(accept(live, NULL, NULL), 0);
    CHECK_EQ(errno, EAGAIN);
    for (int i = 0; i < nclients; i++)
        close(clients[i]);
    close(live);
    /* Nobody listens now: the stale file is replaced. */
    blitz_socket *l = NULL;
    CHECK_OK(blitz_unix_listen(rt, &call.addr, 0, &l));
    blitz_sock_close(l);
    unlink(path);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_unix_listen_live)

/* ---- a runtime that never spawned ----------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    blitz_timer limit;
    char buf[16];
} io_unstarted_recv;

static blitz_poll io_unstarted_recv_poll(blitz_cx *cx, void *p) {
    io_unstarted_recv *u = p;
    BLITZ_BEGIN(u);
    BLITZ_AWAIT(u, blitz_timeout_op(cx, &u->limit, 5 * BLITZ_SEC,
                                    blitz_sock_recv(cx, &u->op, u->sock, u->buf, sizeof u->buf),
                                    blitz_io_cancel, &u->op));
    if (u->limit.expired)
        BLITZ_AWAIT(u, blitz_io_settle(cx, &u->op));
    BLITZ_END(u);
}

typedef struct {
    int fd;
} io_unstarted_writer;

static void *io_unstarted_write(void *arg) {
    io_unstarted_writer *w = arg;
    usleep(100 * 1000);
    ssize_t n = write(w->fd, "hello", 5);
    (void)n;
    return NULL;
}

static int io_foreign_unstarted(blitz_backend b) {
    blitz_runtime *owner = tu_io_rt_new(b, TU_MT2);
    if (!owner)
        return 0;
    blitz_runtime *user = tu_io_rt_new(b, TU_CT);
    blitz_socket *mine = NULL, *theirs = NULL;
    CHECK_OK(blitz_unix_pair(owner, 1, &mine, &theirs));
    io_unstarted_recv u;
    memset(&u, 0, sizeof u);
    u.sock = mine;
    io_unstarted_writer w = {blitz_sock_fd(theirs)};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, io_unstarted_write, &w), 0);
    CHECK_OK(blitz_runtime_run(user, io_unstarted_recv_poll, &u, sizeof u));
    pthread_join(th, NULL);
    CHECK_EQ(u.limit.expired, 0);
    CHECK_EQ(u.op.result, 5);
    CHECK(memcmp(u.buf, "hello", 5) == 0);
    blitz_sock_close(mine);
    blitz_sock_close(theirs);
    CHECK_OK(blitz_runtime_free(user));
    CHECK_OK(blitz_runtime_free(owner));
    return 0;
}
IO_BACKEND_TESTS(io_foreign_unstarted)

/* ---- an empty datagram under a cancelled receive -------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *tx, *rx;
    blitz_io op;
    blitz_timer limit;
    int round, rounds, lost, got;
    char buf[64];
} io_dgram_empty;

static blitz_poll io_dgram_empty_poll(blitz_cx *cx, void *p) {
    io_dgram_empty *d = p;
    BLITZ_BEGIN(d);
    for (d->round = 0; d->round < d->rounds; d->round++) {
        BLITZ_AWAIT(d, blitz_sock_send(cx, &d->op, d->tx, d->buf, 0));
        CHECK_EQ(d->op.result, 0);
        /* A limit that fires at once: on io_uring the receive is in the
         * kernel, which fills it with the datagram as the cancel comes. */
        BLITZ_AWAIT(d, blitz_timeout_op(cx, &d->limit, 1,
                                        blitz_sock_recv(cx, &d->op, d->rx, d->buf, sizeof d->buf),
                                        blitz_io_cancel, &d->op));
        if (!d->limit.expired) {
            CHECK_EQ(d->op.result, 0);
            d->got++;
            continue;
        }
        BLITZ_AWAIT(d, blitz_io_settle(cx, &d->op));
        BLITZ_AWAIT(d, blitz_timeout_op(cx, &d->limit, 2 * BLITZ_SEC,
                                        blitz_sock_recv(cx, &d->op, d->rx, d->buf, sizeof d->buf),
                                        blitz_io_cancel, &d->op));
        if (d->limit.expired) {
            d->lost++;
            BLITZ_AWAIT(d, blitz_io_settle(cx, &d->op));
        } else {
            CHECK_EQ(d->op.result, 0);
            d->got++;
        }
    }
    BLITZ_END(d);
}

static int io_dgram_empty_cancel(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    for (int kind = 0; kind < 2; kind++) {
        io_dgram_empty d;
        memset(&d, 0, sizeof d);
        d.rounds = 5;
        if (kind == 0) {
            CHECK_OK(blitz_unix_pair(rt, 2, &d.tx, &d.rx));
        } else {
            blitz_addr any, ta, ra;
            CHECK_OK(blitz_addr_parse("127.0.0.1:0", &any));
            CHECK_OK(blitz_udp_bind(rt, &any, 0, &d.tx));
            CHECK_OK(blitz_udp_bind(rt, &any, 0, &d.rx));
            CHECK_OK(blitz_sock_local_addr(d.tx, &ta));
            CHECK_OK(blitz_sock_local_addr(d.rx, &ra));
            CHECK_OK(blitz_sock_connect_dgram(d.tx, &ra));
            CHECK_OK(blitz_sock_connect_dgram(d.rx, &ta));
        }
        CHECK_OK(blitz_runtime_run(rt, io_dgram_empty_poll, &d, sizeof d));
        CHECK_EQ(d.lost, 0);
        CHECK_EQ(d.got, d.rounds);
        blitz_sock_close(d.tx);
        blitz_sock_close(d.rx);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_dgram_empty_cancel)

/* ---- recvv of nothing ----------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener, *sock;
    blitz_io op;
    blitz_timer limit;
    blitz_iovec iov[2];
    char buf[4];
} io_recvv_nothing;

static blitz_poll io_recvv_nothing_poll(blitz_cx *cx, void *p) {
    io_recvv_nothing *r = p;
    BLITZ_BEGIN(r);
    if (r->listener) {
        BLITZ_AWAIT(r, blitz_sock_accept(cx, &r->op, r->listener));
        CHECK_OK(r->op.result);
        r->sock = r->op.socket;
    }
    r->iov[0].base = r->buf;
    r->iov[0].len = 0;
    r->iov[1].base = NULL;
    r->iov[1].len = 0;
    BLITZ_AWAIT(r, blitz_timeout_op(cx, &r->limit, 2 * BLITZ_SEC,
                                    blitz_sock_recvv(cx, &r->op, r->sock, r->iov, 2),
                                    blitz_io_cancel, &r->op));
    if (r->limit.expired)
        BLITZ_AWAIT(r, blitz_io_settle(cx, &r->op));
    BLITZ_END(r);
}

static int io_recvv_zero(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    blitz_socket *pair[2];
    CHECK_OK(blitz_unix_pair(rt, 1, &pair[0], &pair[1]));
    io_recvv_nothing r;
    memset(&r, 0, sizeof r);
    r.sock = pair[0];
    CHECK_OK(blitz_runtime_run(rt, io_recvv_nothing_poll, &r, sizeof r));
    CHECK_EQ(r.limit.expired, 0);
    CHECK_EQ(r.op.result, 0);
    blitz_sock_close(pair[0]);
    blitz_sock_close(pair[1]);
    /* TCP too (io_uring's receives there are multishot). */
    blitz_addr addr;
    blitz_socket *l = tu_listen_any(rt, &addr);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(c, 0);
    CHECK_EQ(connect(c, (struct sockaddr *)(void *)addr.u.bytes, addr.len), 0);
    io_recvv_nothing t;
    memset(&t, 0, sizeof t);
    t.listener = l;
    CHECK_OK(blitz_runtime_run(rt, io_recvv_nothing_poll, &t, sizeof t));
    CHECK_EQ(t.limit.expired, 0);
    CHECK_EQ(t.op.result, 0);
    blitz_sock_close(t.sock);
    blitz_sock_close(l);
    close(c);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_recvv_zero)
