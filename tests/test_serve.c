/* Serving under a graceful shutdown (blitz_serve) and exact-length
 * receives. Every behaviour test runs on every backend
 * (IO_BACKEND_TESTS of test_io.c). */
#include "test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#define SERVE_FRAME 16

/* A connection echoes 16-byte frames until its client hangs up. */
typedef struct {
    BLITZ_CORO;
    atomic_int *drops;
    blitz_socket *sock;
    blitz_io io;
    char frame[SERVE_FRAME];
} serve_conn;

static blitz_poll serve_conn_poll(blitz_cx *cx, void *p) {
    serve_conn *c = p;
    BLITZ_BEGIN(c);
    for (;;) {
        BLITZ_AWAIT(c, blitz_sock_recv_exact(cx, &c->io, c->sock, c->frame, SERVE_FRAME));
        if (c->io.result != SERVE_FRAME)
            break; /* the client hung up */
        BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, c->frame, SERVE_FRAME));
        if (c->io.result < 0)
            break;
    }
    BLITZ_END(c);
}

static void serve_conn_drop(void *p) {
    atomic_fetch_add(((serve_conn *)p)->drops, 1);
}

static int serve_client(const blitz_addr *a) {
    struct sockaddr_in sa;
    memcpy(&sa, a->u.bytes, sizeof sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(fd, 0);
    CHECK_EQ(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void serve_read_all(int fd, char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, buf + got, n - got, 0);
        CHECK_GT(r, 0);
        got += (size_t)r;
    }
}

/* One frame round trip, written in `pieces` parts. */
static void serve_round_trip(int fd, int tag, int pieces) {
    char out[SERVE_FRAME], in[SERVE_FRAME];
    for (int i = 0; i < SERVE_FRAME; i++)
        out[i] = (char)(tag * 31 + i);
    size_t step = SERVE_FRAME / (size_t)pieces;
    for (size_t off = 0; off < SERVE_FRAME; off += step)
        CHECK_EQ(send(fd, out + off, step, MSG_NOSIGNAL), (ssize_t)step);
    serve_read_all(fd, in, SERVE_FRAME);
    CHECK_EQ(memcmp(in, out, SERVE_FRAME), 0);
}

/* A shutdown without signals serving a listener on `a` with echo
 * connections that count their drops; `limit`: each one's time limit. */
static blitz_shutdown *serve_start(blitz_runtime *rt, blitz_addr *a, atomic_int *drops,
                                   int64_t limit) {
    blitz_shutdown_opts none = {.nsignals = -1};
    blitz_shutdown *sd = NULL;
    CHECK_OK(blitz_shutdown_new(rt, &none, &sd));
    static serve_conn tmpl; /* read at each accept: it outlives the loop */
    tmpl.drops = drops;
    blitz_serve_opts o = {.listener = tu_listen_any(rt, a),
                          .poll = serve_conn_poll,
                          .state = &tmpl,
                          .size = sizeof tmpl,
                          .socket_offset = offsetof(serve_conn, sock),
                          .drop = serve_conn_drop,
                          .timeout_ns = limit};
    CHECK_OK(blitz_serve(sd, &o));
    return sd;
}

#define SERVE_CLIENTS 8

static int io_serve(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    blitz_addr a;
    atomic_int drops = 0;
    blitz_shutdown *sd = serve_start(rt, &a, &drops, 0);

    int fds[SERVE_CLIENTS];
    for (int i = 0; i < SERVE_CLIENTS; i++) {
        fds[i] = serve_client(&a);
        serve_round_trip(fds[i], i, 1);
        serve_round_trip(fds[i], i + 100, i % 2 ? 16 : 2); /* a frame in pieces */
    }
    /* Half the clients hang up: their tasks finish and close their
     * sockets; the accept loop is not in flight. */
    for (int i = 0; i < SERVE_CLIENTS / 2; i++)
        close(fds[i]);
    TU_WAIT_UNTIL(blitz_shutdown_in_flight(sd) == SERVE_CLIENTS / 2, 10, 1);

    /* The rest stay silent: cancelled after the grace period, their sockets
     * closed by the runtime, so each client reads end of stream. */
    CHECK_OK(blitz_shutdown_trigger(sd));
    blitz_shutdown_run_op run = {0};
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_shutdown_run(&run, sd, 20 * BLITZ_MSEC)));
    CHECK_OK(run.result);
    CHECK_EQ(run.cancelled, (uint64_t)SERVE_CLIENTS / 2);
    CHECK_EQ(run.finished, 0u);
    char byte;
    for (int i = SERVE_CLIENTS / 2; i < SERVE_CLIENTS; i++) {
        CHECK_EQ(recv(fds[i], &byte, 1, 0), 0);
        close(fds[i]);
    }
    /* The listener is closed: nobody accepts any more. */
    struct sockaddr_in sa;
    memcpy(&sa, a.u.bytes, sizeof sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(connect(fd, (struct sockaddr *)&sa, sizeof sa), -1);
    CHECK_EQ(errno, ECONNREFUSED);
    close(fd);
    CHECK_OK(blitz_shutdown_free(sd));
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(tu_ldi(&drops), SERVE_CLIENTS);
    return 0;
}
IO_BACKEND_TESTS(io_serve)

/* A connection's time limit: a silent client's task is cancelled at its
 * deadline and the client reads end of stream. */
static int io_serve_timeout(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_CT);
    if (!rt)
        return 0;
    blitz_addr a;
    atomic_int drops = 0;
    blitz_shutdown *sd = serve_start(rt, &a, &drops, 30 * BLITZ_MSEC);
    int fd = serve_client(&a);
    /* The current-thread runtime runs while this thread waits in it. */
    blitz_timer t = {0};
    char byte;
    for (;;) {
        uint64_t at = blitz_deadline_after(blitz_time_now(rt), 5 * BLITZ_MSEC);
        CHECK_OK(blitz_op_run_blocking(rt, blitz_op_sleep_until(&t, at)));
        ssize_t r = recv(fd, &byte, 1, MSG_DONTWAIT);
        if (r == 0)
            break;
        CHECK(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
    close(fd);
    CHECK_OK(blitz_shutdown_trigger(sd));
    blitz_shutdown_run_op run = {0};
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_shutdown_run(&run, sd, 0)));
    CHECK_EQ(run.cancelled + run.finished, 0u);
    CHECK_OK(blitz_shutdown_free(sd));
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(tu_ldi(&drops), 1);
    return 0;
}
IO_BACKEND_TESTS(io_serve_timeout)

BLITZ_TEST(serve_bad_input) {
    blitz_runtime *rt = tu_rt_new(TU_CT);
    blitz_shutdown_opts none = {.nsignals = -1};
    blitz_shutdown *sd = NULL;
    CHECK_OK(blitz_shutdown_new(rt, &none, &sd));
    blitz_addr a;
    blitz_serve_opts good = {.listener = tu_listen_any(rt, &a),
                             .poll = serve_conn_poll,
                             .size = sizeof(serve_conn),
                             .socket_offset = offsetof(serve_conn, sock)};
    CHECK_EQ(blitz_serve(NULL, &good), BLITZ_EINVAL);
    CHECK_EQ(blitz_serve(sd, NULL), BLITZ_EINVAL);
    blitz_serve_opts o = good;
    o.listener = NULL;
    CHECK_EQ(blitz_serve(sd, &o), BLITZ_EINVAL);
    o = good;
    o.poll = NULL;
    CHECK_EQ(blitz_serve(sd, &o), BLITZ_EINVAL);
    o = good;
    o.socket_offset = sizeof(serve_conn) - sizeof(blitz_socket *) + 1;
    CHECK_EQ(blitz_serve(sd, &o), BLITZ_EINVAL);
    o.size = sizeof(blitz_socket *) - 1;
    o.socket_offset = 0;
    CHECK_EQ(blitz_serve(sd, &o), BLITZ_EINVAL);
    o = good;
    o.timeout_ns = -1;
    CHECK_EQ(blitz_serve(sd, &o), BLITZ_EINVAL);
    o = good;
    o.size = (size_t)BLITZ_MAX_STATE_SIZE;
    CHECK_EQ(blitz_serve(sd, &o), BLITZ_EINVAL);
    /* After the grace period no serving starts; the listener stays ours. */
    blitz_shutdown_run_op run = {0};
    CHECK_OK(blitz_shutdown_trigger(sd));
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_shutdown_run(&run, sd, 0)));
    CHECK_EQ(blitz_serve(sd, &good), BLITZ_ECLOSED);
    CHECK_OK(blitz_sock_close(good.listener));
    CHECK_OK(blitz_shutdown_free(sd));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- exact-length receives ----------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *a, *b;
    blitz_io io, send;
    blitz_cancel_token stop;
    blitz_cancel_token_wait_op stop_wait;
    blitz_combo race;
    blitz_op ops[2];
    char buf[32];
    int64_t whole, short_read, settled, after;
    char kept[8];
} rx_state;

static blitz_poll rx_poll(blitz_cx *cx, void *p) {
    rx_state *s = p;
    BLITZ_BEGIN(s);
    /* 12 bytes in three sends, received as one. */
    BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->send, s->b, "abcd", 4));
    CHECK_EQ(s->send.result, 4);
    BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->send, s->b, "efgh", 4));
    CHECK_EQ(s->send.result, 4);
    BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->send, s->b, "ijkl", 4));
    CHECK_EQ(s->send.result, 4);
    s->ops[0] = blitz_op_sock_recv_exact(&s->io, s->a, s->buf, 12); /* the op form */
    BLITZ_AWAIT(s, blitz_join_all(cx, &s->race, s->ops, 1));
    s->whole = s->io.result;
    CHECK_EQ(memcmp(s->buf, "abcdefghijkl", 12), 0);

    /* A cancel after 4 of 8 bytes: what came is reported by the settle or,
     * if it was still in flight, given to the next receive. */
    BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->send, s->b, "MNOP", 4));
    CHECK_EQ(s->send.result, 4);
    s->io.result = 0; /* the race may end before the receive starts */
    blitz_combo_reset(&s->race);
    s->ops[0] = blitz_op_sock_recv_exact(&s->io, s->a, s->buf, 8);
    s->ops[1] = blitz_op_cancel_token_wait(&s->stop_wait, &s->stop);
    blitz_cancel_token_cancel(&s->stop);
    BLITZ_AWAIT(s, blitz_race(cx, &s->race, s->ops, 2));
    BLITZ_AWAIT(s, blitz_io_settle(cx, &s->io));
    s->settled = s->io.result > 0 ? s->io.result : 0;
    CHECK(s->io.result >= 0 || s->io.result == BLITZ_ECANCELED);
    CHECK_LE(s->settled, 4);
    memcpy(s->kept, s->buf, (size_t)s->settled);
    BLITZ_AWAIT(
        s, blitz_sock_recv_exact(cx, &s->io, s->a, s->kept + s->settled, (size_t)(4 - s->settled)));
    s->after = s->io.result;
    CHECK_EQ(s->settled + s->after, 4);
    CHECK_EQ(memcmp(s->kept, "MNOP", 4), 0);

    /* End of stream first: the bytes that came. */
    BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->send, s->b, "xyz", 3));
    CHECK_EQ(s->send.result, 3);
    blitz_sock_shutdown(s->b, 1);
    BLITZ_AWAIT(s, blitz_sock_recv_exact(cx, &s->io, s->a, s->buf, 10));
    s->short_read = s->io.result;
    CHECK_EQ(memcmp(s->buf, "xyz", 3), 0);
    BLITZ_END(s);
}

static int io_recv_exact(blitz_backend b) {
    const tu_flavor flavors[2] = {TU_CT, TU_MT2};
    for (int f = 0; f < 2; f++) {
        blitz_runtime *rt = tu_io_rt_new(b, flavors[f]);
        if (!rt)
            return 0;
        rx_state s;
        memset(&s, 0, sizeof s);
        blitz_cancel_token_init(&s.stop);
        CHECK_OK(blitz_unix_pair(rt, 1, &s.a, &s.b));
        CHECK_OK(blitz_runtime_run(rt, rx_poll, &s, sizeof s));
        CHECK_EQ(s.whole, 12);
        CHECK_EQ(s.settled + s.after, 4);
        CHECK_EQ(s.short_read, 3);
        blitz_cancel_token_deinit(&s.stop);
        blitz_sock_close(s.a);
        blitz_sock_close(s.b);
        CHECK_OK(blitz_runtime_free(rt));
    }
    return 0;
}
IO_BACKEND_TESTS(io_recv_exact)
