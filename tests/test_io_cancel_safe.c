/* Cancelling I/O loses nothing and holds nothing:
 *   - a receive cancelled (by a timeout) just after the kernel filled it
 *     leaves its data to the next receive: a stream read with 1 ms
 *     timeouts against a writer that pauses at random arrives whole;
 *   - a send cancelled after it sent reports the count through
 *     blitz_io_settle: a writer with 1 ms timeouts that resends only what
 *     was not sent delivers the stream exactly once;
 *   - a send_all cancelled half way reports the part it sent;
 *   - closing a socket closes its descriptor even when a task whose op
 *     waits on it was cancelled without a cancel hook.
 * The peer is a plain descriptor driven by a thread of the test. Uses the
 * harnesses of tests/test_io.c and tests/test_io_multishot.c. */

#include <pthread.h>
#include <poll.h>

/* A connected pair: the runtime's end as a socket (send buffer `sndbuf`
 * when nonzero), the other end as a blocking descriptor. */
static void cs_pair(blitz_runtime *rt, int unix_stream, int sndbuf, blitz_socket **sock,
                    int *peer) {
    int fd;
    if (unix_stream) {
        int sv[2];
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        fd = sv[0];
        *peer = sv[1];
        if (sndbuf)
            CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
        CHECK_OK(blitz_sock_adopt(rt, fd, sock));
        return;
    }
    ms_tcp_pair(rt, sock, peer);
    if (sndbuf) {
        CHECK_EQ(setsockopt(blitz_sock_fd(*sock), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf),
                 0);
        CHECK_EQ(setsockopt(*peer, SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof sndbuf), 0);
    }
}

static uint32_t cs_rand(uint32_t *rng) {
    *rng = *rng * 1103515245u + 12345u;
    return *rng >> 8;
}

/* ---- receives cancelled by timeouts ------------------------------------------------ */

typedef struct {
    int fd;
    uint64_t total;
    size_t chunk;
    uint32_t rng;
} cs_writer_arg;

/* Writes io_pattern in chunks of 1..chunk bytes, pausing 0-2 ms before a
 * quarter of them, so that reads time out at every stage of a receive. */
static void *cs_writer(void *p) {
    cs_writer_arg *a = p;
    unsigned char *buf = malloc(a->chunk);
    CHECK(buf != NULL);
    for (uint64_t sent = 0; sent < a->total;) {
        size_t n = 1 + cs_rand(&a->rng) % a->chunk;
        if (n > a->total - sent)
            n = (size_t)(a->total - sent);
        for (size_t i = 0; i < n; i++)
            buf[i] = io_pattern(sent + i);
        ms_write_all(a->fd, buf, n);
        sent += n;
        uint32_t r = cs_rand(&a->rng);
        if (r % 4 == 0) {
            struct timespec ts = {0, (long)(r % 2000) * 1000L};
            nanosleep(&ts, NULL);
        }
    }
    free(buf);
    return NULL;
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    blitz_timer timer;
    size_t rbuf;
    uint64_t total, got;
    long timeouts, reads;
    int64_t bad_result;
    uint64_t broken_at; /* 1 + offset of the first wrong byte */
    unsigned char buf[16384];
} cs_reader;

static blitz_poll cs_reader_poll(blitz_cx *cx, void *p) {
    cs_reader *r = p;
    BLITZ_BEGIN(r);
    while (r->got < r->total) {
        BLITZ_AWAIT(r, blitz_timeout_op(cx, &r->timer, BLITZ_MSEC,
                                        blitz_sock_recv(cx, &r->op, r->sock, r->buf, r->rbuf),
                                        blitz_io_cancel, &r->op));
        if (r->timer.expired) {
            r->timeouts++;
            BLITZ_AWAIT(r, blitz_io_settle(cx, &r->op));
            if (r->op.result != BLITZ_ECANCELED) {
                r->bad_result = r->op.result;
                break;
            }
            continue;
        }
        r->reads++;
        if (r->op.result <= 0) {
            r->bad_result = r->op.result;
            break;
        }
        for (int64_t i = 0; i < r->op.result; i++)
            if (r->buf[i] != io_pattern(r->got + (uint64_t)i)) {
                r->broken_at = 1 + r->got + (uint64_t)i;
                break;
            }
        if (r->broken_at)
            break;
        r->got += (uint64_t)r->op.result;
    }
    BLITZ_END(r);
}

static int cs_recv_race_run(blitz_backend b, blitz_flavor f, int unix_stream, size_t rbuf,
                            size_t chunk, long *timeouts) {
    blitz_runtime *rt = tu_io_rt_new(b, (tu_flavor){f, 2});
    if (!rt)
        return 0;
    blitz_socket *sock = NULL;
    int peer = -1;
    cs_pair(rt, unix_stream, 0, &sock, &peer);
    cs_reader r;
    memset(&r, 0, sizeof r);
    r.sock = sock;
    r.rbuf = rbuf;
    r.total = 1u << 19;
    blitz_task *t = NULL;
    CHECK_OK(blitz_spawn(rt, cs_reader_poll, &r, sizeof r, &t));
    cs_writer_arg wa = {peer, r.total, chunk, 7u + (uint32_t)rbuf};
    pthread_t w;
    CHECK_EQ(pthread_create(&w, NULL, cs_writer, &wa), 0);
    CHECK_OK(blitz_join_blocking(t));
    const cs_reader *out = blitz_task_state(t);
    printf("# %s %s rbuf %zu chunk %zu: %ld reads, %ld timeouts\n", unix_stream ? "unix" : "tcp",
           f == BLITZ_CURRENT_THREAD ? "ct" : "mt", rbuf, chunk, out->reads, out->timeouts);
    fflush(stdout);
    CHECK_EQ(out->broken_at, 0);
    CHECK_EQ(out->bad_result, 0);
    CHECK_EQ(out->got, r.total);
    *timeouts += out->timeouts;
    blitz_task_release(&t);
    CHECK_EQ(pthread_join(w, NULL), 0);
    ms_close_pair(sock, peer);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

static int io_recv_cancel_race(blitz_backend b) {
    long timeouts = 0;
    for (int unix_stream = 0; unix_stream < 2; unix_stream++) {
        CHECK_OK(cs_recv_race_run(b, BLITZ_MULTI_THREAD, unix_stream, 700, 512, &timeouts));
        CHECK_OK(cs_recv_race_run(b, BLITZ_MULTI_THREAD, unix_stream, 16384, 16384, &timeouts));
        CHECK_OK(cs_recv_race_run(b, BLITZ_CURRENT_THREAD, unix_stream, 700, 512, &timeouts));
    }
    /* The writer's pauses make reads time out at every stage. */
    CHECK_GT(timeouts, 0);
    return 0;
}
IO_BACKEND_TESTS(io_recv_cancel_race)

/* ---- sends cancelled by timeouts ----------------------------------------------------- */

typedef struct {
    int fd;
    uint32_t rng;
    uint64_t got;
    uint64_t broken_at; /* 1 + offset of the first wrong byte */
} cs_slow_reader_arg;

/* Reads to the end of the stream in small pieces with pauses, checking
 * every byte. */
static void *cs_slow_reader(void *p) {
    cs_slow_reader_arg *a = p;
    unsigned char buf[4096];
    for (;;) {
        ssize_t n = read(a->fd, buf, 1 + cs_rand(&a->rng) % sizeof buf);
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n && !a->broken_at; i++)
            if (buf[i] != io_pattern(a->got + (uint64_t)i))
                a->broken_at = 1 + a->got + (uint64_t)i;
        a->got += (uint64_t)n;
        uint32_t r = cs_rand(&a->rng);
        if (r % 8 == 0) {
            struct timespec ts = {0, (long)(r % 1500) * 1000L};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    blitz_timer timer;
    uint32_t rng;
    uint64_t total, sent;
    size_t n;
    long timeouts, counted;
    int64_t bad_result;
    unsigned char buf[65536];
} cs_sender;

/* Sends io_pattern with 1 ms timeouts; after a timeout only the bytes the
 * settled op did not report sent go again. */
static blitz_poll cs_sender_poll(blitz_cx *cx, void *p) {
    cs_sender *s = p;
    BLITZ_BEGIN(s);
    while (s->sent < s->total) {
        s->n = 1 + cs_rand(&s->rng) % sizeof s->buf;
        if (s->n > s->total - s->sent)
            s->n = (size_t)(s->total - s->sent);
        for (size_t i = 0; i < s->n; i++)
            s->buf[i] = io_pattern(s->sent + i);
        BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, BLITZ_MSEC,
                                        blitz_sock_send(cx, &s->op, s->sock, s->buf, s->n),
                                        blitz_io_cancel, &s->op));
        if (s->timer.expired) {
            s->timeouts++;
            BLITZ_AWAIT(s, blitz_io_settle(cx, &s->op));
            if (s->op.result == BLITZ_ECANCELED)
                continue;
            s->counted++;
        }
        if (s->op.result <= 0 || (size_t)s->op.result > s->n) {
            s->bad_result = s->op.result ? s->op.result : -1;
            break;
        }
        s->sent += (uint64_t)s->op.result;
    }
    BLITZ_END(s);
}

static int cs_send_race_run(blitz_backend b, int unix_stream) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    blitz_socket *sock = NULL;
    int peer = -1;
    cs_pair(rt, unix_stream, 8192, &sock, &peer);
    cs_sender s;
    memset(&s, 0, sizeof s);
    s.sock = sock;
    s.rng = 99;
    s.total = 128u << 10;
    cs_slow_reader_arg ra = {peer, 3, 0, 0};
    pthread_t rd;
    CHECK_EQ(pthread_create(&rd, NULL, cs_slow_reader, &ra), 0);
    blitz_task *t = NULL;
    CHECK_OK(blitz_spawn(rt, cs_sender_poll, &s, sizeof s, &t));
    CHECK_OK(blitz_join_blocking(t));
    const cs_sender *out = blitz_task_state(t);
    int64_t bad = out->bad_result;
    uint64_t sent = out->sent;
    printf("# %s: %ld timeouts, %ld of them had sent\n", unix_stream ? "unix" : "tcp",
           out->timeouts, out->counted);
    fflush(stdout);
    blitz_task_release(&t);
    CHECK_OK(blitz_sock_close(sock));
    CHECK_EQ(pthread_join(rd, NULL), 0);
    close(peer);
    CHECK_EQ(bad, 0);
    CHECK_EQ(ra.broken_at, 0);
    CHECK_EQ(ra.got, sent);
    CHECK_EQ(sent, s.total);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

static int io_send_cancel_race(blitz_backend b) {
    CHECK_OK(cs_send_race_run(b, 0));
    CHECK_OK(cs_send_race_run(b, 1));
    return 0;
}
IO_BACKEND_TESTS(io_send_cancel_race)

/* ---- a send_all cancelled half way --------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    blitz_timer timer;
    int64_t before_settle;
    int expired;
    unsigned char *buf;
    size_t len;
} cs_send_all;

static blitz_poll cs_send_all_poll(blitz_cx *cx, void *p) {
    cs_send_all *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 50 * BLITZ_MSEC,
                                    blitz_sock_send_all(cx, &s->op, s->sock, s->buf, s->len),
                                    blitz_io_cancel, &s->op));
    s->expired = s->timer.expired;
    s->before_settle = s->op.result;
    BLITZ_AWAIT(s, blitz_io_settle(cx, &s->op));
    BLITZ_END(s);
}

static int io_send_all_cancel_count(blitz_backend b) {
    for (int unix_stream = 0; unix_stream < 2; unix_stream++) {
        blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
        if (!rt)
            return 0;
        blitz_socket *sock = NULL;
        int peer = -1;
        cs_pair(rt, unix_stream, 0, &sock, &peer);
        size_t len = 16u << 20; /* more than any socket buffer holds */
        unsigned char *buf = malloc(len);
        CHECK(buf != NULL);
        for (size_t i = 0; i < len; i++)
            buf[i] = io_pattern(i);
        cs_send_all s;
        memset(&s, 0, sizeof s);
        s.sock = sock;
        s.buf = buf;
        s.len = len;
        blitz_task *t = NULL;
        CHECK_OK(blitz_spawn(rt, cs_send_all_poll, &s, sizeof s, &t));
        CHECK_OK(blitz_join_blocking(t));
        const cs_send_all *out = blitz_task_state(t);
        CHECK(out->expired);
        CHECK_EQ(out->before_settle, BLITZ_ECANCELED);
        int64_t sent = out->op.result;
        blitz_task_release(&t);
        CHECK_OK(blitz_sock_close(sock));
        /* The peer gets exactly the bytes the settled op reported. */
        cs_slow_reader_arg ra = {peer, 5, 0, 0};
        cs_slow_reader(&ra);
        close(peer);
        printf("# %s: %lld of %zu bytes sent before the timeout\n", unix_stream ? "unix" : "tcp",
               (long long)sent, len);
        fflush(stdout);
        CHECK_GT(sent, 0);
        CHECK_LT(sent, (int64_t)len);
        CHECK_EQ(ra.broken_at, 0);
        CHECK_EQ(ra.got, (uint64_t)sent);
        free(buf);
        CHECK_OK(blitz_runtime_free(rt));
    }
    return 0;
}
IO_BACKEND_TESTS(io_send_all_cancel_count)

/* ---- closing under a task cancelled without a cancel hook ---------------------------- */

/* A task blocked in a receive is cancelled without a cancel hook (its op
 * stays registered); `late`: the peer then sends, so the dead task's op
 * is woken (readiness) or completed (io_uring) before the close. Closing
 * the socket must close the descriptor: the peer sees the end of the
 * stream (or a reset, when the late data was never read). */
static int io_close_dead_task(blitz_backend b) {
    for (int unix_stream = 0; unix_stream < 2; unix_stream++)
        for (int late = 0; late < 2; late++) {
            blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
            if (!rt)
                return 0;
            blitz_socket *sock = NULL;
            int peer = -1;
            cs_pair(rt, unix_stream, 0, &sock, &peer);
            atomic_int started = 0;
            io_waiter w;
            memset(&w, 0, sizeof w);
            w.sock = sock;
            w.started = &started;
            blitz_task *t = NULL;
            CHECK_OK(blitz_spawn(rt, io_waiter_poll, &w, sizeof w, &t));
            TU_WAIT_GE(&started, 1, 5);
            tu_sleep_ms(20);
            CHECK_OK(blitz_task_cancel(t));
            CHECK_EQ(blitz_join_blocking(t), BLITZ_ECANCELED);
            blitz_task_release(&t);
            if (late) {
                CHECK_EQ(write(peer, "late", 4), 4);
                tu_sleep_ms(20);
            }
            printf("# %s, late %d\n", unix_stream ? "unix" : "tcp", late);
            fflush(stdout);
            int fds = tu_open_fds();
            CHECK_OK(blitz_sock_close(sock));
            struct pollfd pf = {peer, POLLIN, 0};
            int ready = poll(&pf, 1, (int)(2000 * tu_timeout_mult()));
            CHECK_EQ(ready, 1);
            char c;
            ssize_t n = read(peer, &c, 1);
            CHECK(n == 0 || (n < 0 && errno == ECONNRESET));
            TU_WAIT_UNTIL(tu_open_fds() == fds - 1, 2, 1);
            close(peer);
            CHECK_OK(blitz_runtime_free(rt));
        }
    return 0;
}
IO_BACKEND_TESTS(io_close_dead_task)

/* ---- io_uring: the cancel comes after the kernel completed the op --------------------- */

/* Steps an io_uring op through the race deterministically, on the
 * current-thread runtime's ring (COOP_TASKRUN: the kernel finishes a send
 * or receive that waited for the socket in task work run at this
 * thread's next io_uring_enter): the op goes to the kernel, the peer
 * makes it possible, the task work runs (the completion is in the ring,
 * not reaped: `reaped` 0; or reaped and not yet seen by the task:
 * `reaped` 1), then the op is cancelled. A send's count comes out of
 * blitz_io_settle; a receive's data out of the next receive. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    int peer, reaped, is_send;
    blitz_io op;
    int64_t settled, next, queued_at_peer;
    int in_kernel, completed_early;
    unsigned char buf[4096], got[4096];
} cs_late;

static void cs_run_task_work(blitz_cx *cx, cs_late *l) {
    blitz__io *io = blitz_cx_runtime(cx)->io;
    l->completed_early = ms_uring_wait_cq(blitz__uring_mine(io, NULL), 200);
    if (l->reaped)
        blitz__uring_poll(io);
}

static blitz_poll cs_late_poll(blitz_cx *cx, void *p) {
    cs_late *l = p;
    BLITZ_BEGIN(l);
    if (l->is_send) {
        /* Fill the socket, so that the send waits in the kernel. */
        memset(l->buf, 'x', sizeof l->buf);
        while (write(blitz_sock_fd(l->sock), l->buf, sizeof l->buf) > 0) {
        }
        if (blitz_sock_send(cx, &l->op, l->sock, l->buf, sizeof l->buf) == BLITZ_READY)
            BLITZ_RETURN(l);
        l->in_kernel = blitz_io_pending(&l->op);
        unsigned char sink[65536];
        ssize_t n;
        while ((n = read(l->peer, sink, sizeof sink)) > 0) {
        }
    } else {
        if (blitz_sock_recv(cx, &l->op, l->sock, l->buf, sizeof l->buf) == BLITZ_READY)
            BLITZ_RETURN(l);
        l->in_kernel = blitz_io_pending(&l->op);
        memset(l->got, 'y', sizeof l->got);
        CHECK_EQ(write(l->peer, l->got, 100), 100);
    }
    cs_run_task_work(cx, l);
    blitz_io_cancel(NULL, &l->op);
    BLITZ_AWAIT(l, blitz_io_settle(cx, &l->op));
    l->settled = l->op.result;
    if (l->is_send) {
        unsigned char sink[65536];
        ssize_t n;
        while ((n = read(l->peer, sink, sizeof sink)) > 0)
            l->queued_at_peer += n;
    } else {
        BLITZ_AWAIT(l, blitz_sock_recv(cx, &l->op, l->sock, l->got, sizeof l->got));
        l->next = l->op.result;
    }
    BLITZ_END(l);
}

BLITZ_TEST(io_uring_cancel_after_completion) {
    for (int is_send = 0; is_send < 2; is_send++)
        for (int reaped = 0; reaped < 2; reaped++) {
            blitz_runtime *rt = tu_io_rt_new(BLITZ_BACKEND_IO_URING, TU_CT);
            if (!rt)
                return 0;
            blitz_socket *sock = NULL;
            int peer = -1;
            cs_pair(rt, 1, 8192, &sock, &peer);
            CHECK_EQ(fcntl(peer, F_SETFL, O_NONBLOCK), 0);
            cs_late *l = calloc(1, sizeof *l);
            CHECK(l != NULL);
            l->sock = sock;
            l->peer = peer;
            l->reaped = reaped;
            l->is_send = is_send;
            /* blitz_runtime_run copies the final state back. */
            CHECK_OK(blitz_runtime_run(rt, cs_late_poll, l, sizeof *l));
            printf("# %s, completion %s: in kernel %d, completed before the cancel %d, "
                   "settled %lld, next %lld, at the peer %lld\n",
                   is_send ? "send" : "recv", reaped ? "reaped" : "in the ring", l->in_kernel,
                   l->completed_early, (long long)l->settled, (long long)l->next,
                   (long long)l->queued_at_peer);
            fflush(stdout);
            CHECK(l->in_kernel);
            CHECK(l->completed_early);
            if (is_send) {
                CHECK_EQ(l->settled, (int64_t)sizeof l->buf);
                CHECK_EQ(l->queued_at_peer, (int64_t)sizeof l->buf);
            } else {
                CHECK_EQ(l->settled, BLITZ_ECANCELED);
                CHECK_EQ(l->next, 100);
                CHECK_EQ(l->got[0], 'y');
                CHECK_EQ(l->got[99], 'y');
            }
            free(l);
            ms_close_pair(sock, peer);
            CHECK_OK(blitz_runtime_free(rt));
        }
    return 0;
}
