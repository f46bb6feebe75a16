/* Tests of descriptor ops, pipes, byte streams (buffered reader and
 * writer, copy) and graceful shutdown. Every test runs on every backend
 * and on a two-worker and a current-thread runtime:
 * stream_NAME_{uring,epoll,poll}_{mt2,ct} (tests/list_stream.h). */
#include "test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define ST_TESTS(name)                                    \
    BLITZ_TEST(stream_##name##_uring_mt2) {               \
        return st_##name(BLITZ_BACKEND_IO_URING, TU_MT2); \
    }                                                     \
    BLITZ_TEST(stream_##name##_uring_ct) {                \
        return st_##name(BLITZ_BACKEND_IO_URING, TU_CT);  \
    }                                                     \
    BLITZ_TEST(stream_##name##_epoll_mt2) {               \
        return st_##name(BLITZ_BACKEND_EPOLL, TU_MT2);    \
    }                                                     \
    BLITZ_TEST(stream_##name##_epoll_ct) {                \
        return st_##name(BLITZ_BACKEND_EPOLL, TU_CT);     \
    }                                                     \
    BLITZ_TEST(stream_##name##_poll_mt2) {                \
        return st_##name(BLITZ_BACKEND_POLL, TU_MT2);     \
    }                                                     \
    BLITZ_TEST(stream_##name##_poll_ct) {                 \
        return st_##name(BLITZ_BACKEND_POLL, TU_CT);      \
    }                                                     \
    ST_KQUEUE_TESTS(name)
#if BLITZ__HAS_KQUEUE
#define ST_KQUEUE_TESTS(name)                           \
    BLITZ_TEST(stream_##name##_kqueue_mt2) {            \
        return st_##name(BLITZ_BACKEND_KQUEUE, TU_MT2); \
    }                                                   \
    BLITZ_TEST(stream_##name##_kqueue_ct) {             \
        return st_##name(BLITZ_BACKEND_KQUEUE, TU_CT);  \
    }
#else
#define ST_KQUEUE_TESTS(name)
#endif

static unsigned char st_pattern(uint64_t i) {
    return (unsigned char)(i * 131u + (i >> 13) + (i >> 21));
}

/* ---- a writer that dribbles bytes: 1..3 at a time, yielding between ------------------ */

typedef struct {
    BLITZ_CORO;
    blitz_socket *w;
    blitz_io op;
    const char *data;
    size_t len, off, n;
} st_dribble;

static blitz_poll st_dribble_poll(blitz_cx *cx, void *p) {
    st_dribble *d = p;
    BLITZ_BEGIN(d);
    while (d->off < d->len) {
        d->n = 1 + d->off % 3;
        if (d->n > d->len - d->off)
            d->n = d->len - d->off;
        BLITZ_AWAIT(d, blitz_fd_write_all(cx, &d->op, d->w, d->data + d->off, d->n));
        CHECK_EQ(d->op.result, (long long)d->n);
        d->off += d->n;
        BLITZ_YIELD(d, cx);
    }
    blitz_sock_close(d->w);
    BLITZ_END(d);
}

/* ---- lines across chunk boundaries, split delimiters, over-long lines, EOF -------------- */

static const char st_lines_text[] = "alpha\nbe"
                                    "ta\r\n"
                                    "gamma-a-line-longer-than-the-16-byte-buffer\n"
                                    "\n"
                                    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
                                    "k1=v1;k2=v2;"
                                    "tail";

typedef struct {
    BLITZ_CORO;
    blitz_socket *r, *w;
    blitz_stream st;
    blitz_reader rd;
    unsigned char rbuf[16];
    char line[64];
    blitz_task *writer;
} st_lines_main;

static blitz_poll st_lines_poll(blitz_cx *cx, void *p) {
    st_lines_main *m = p;
    BLITZ_BEGIN(m);
    {
        st_dribble d;
        memset(&d, 0, sizeof d);
        d.w = m->w;
        d.data = st_lines_text;
        d.len = sizeof st_lines_text - 1;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), st_dribble_poll, &d, sizeof d, &m->writer));
    }
    CHECK_OK(blitz_stream_pipe(&m->st, m->r, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_reader_init(&m->rd, &m->st, m->rbuf, sizeof m->rbuf));

    BLITZ_AWAIT(m, blitz_reader_read_line(cx, &m->rd, m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, 6);
    CHECK(strcmp(m->line, "alpha") == 0);
    BLITZ_AWAIT(m, blitz_reader_read_line(cx, &m->rd, m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, 6); /* "\r\n" split between writes */
    CHECK(strcmp(m->line, "beta") == 0);
    BLITZ_AWAIT(m, blitz_reader_read_line(cx, &m->rd, m->line, sizeof m->line));
    CHECK(strcmp(m->line, "gamma-a-line-longer-than-the-16-byte-buffer") == 0);
    CHECK_EQ(m->rd.len, strlen("gamma-a-line-longer-than-the-16-byte-buffer"));
    BLITZ_AWAIT(m, blitz_reader_read_line(cx, &m->rd, m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, 1); /* an empty line is not the end */
    CHECK_EQ(m->rd.len, 0);
    /* 100 x's do not fit 63 bytes: the first 63 come with EMSGSIZE, the
     * rest is the next record */
    BLITZ_AWAIT(m, blitz_reader_read_line(cx, &m->rd, m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, BLITZ_EMSGSIZE);
    CHECK_EQ(m->rd.len, 63);
    CHECK_EQ(strspn(m->line, "x"), 63);
    BLITZ_AWAIT(m, blitz_reader_read_line(cx, &m->rd, m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, 38);
    CHECK_EQ(m->rd.len, 37);
    /* records with another delimiter */
    BLITZ_AWAIT(m, blitz_reader_read_until(cx, &m->rd, ';', m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, 6);
    CHECK(memcmp(m->line, "k1=v1;", 6) == 0);
    {
        /* what waits in the buffer, unconsumed: a prefix of the rest */
        size_t plen = 12345;
        const char *pk = (const char *)blitz_reader_peek(&m->rd, &plen);
        CHECK_EQ(plen, blitz_reader_buffered(&m->rd));
        CHECK_LE(plen, strlen("k2=v2;tail"));
        CHECK(plen == 0 ? pk == NULL : memcmp(pk, "k2=v2;tail", plen) == 0);
        plen = 12345;
        CHECK(blitz_reader_peek(NULL, &plen) == NULL);
        CHECK_EQ(plen, 0);
    }
    BLITZ_AWAIT(m, blitz_reader_read_until(cx, &m->rd, ';', m->line, 4));
    CHECK_EQ(m->rd.result, BLITZ_EMSGSIZE);
    CHECK(memcmp(m->line, "k2=v", 4) == 0);
    BLITZ_AWAIT(m, blitz_reader_read_until(cx, &m->rd, ';', m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, 2);
    /* the last line has no delimiter: it comes as it is, then the end */
    BLITZ_AWAIT(m, blitz_reader_read_line(cx, &m->rd, m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, 4);
    CHECK(strcmp(m->line, "tail") == 0);
    BLITZ_AWAIT(m, blitz_reader_read_line(cx, &m->rd, m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, 0);
    BLITZ_AWAIT(m, blitz_join(cx, m->writer));
    blitz_task_release(&m->writer);
    blitz_reader_deinit(&m->rd);
    blitz_stream_close(&m->st);
    BLITZ_END(m);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *r, *w;
    blitz_stream st;
    blitz_reader rd;
    char buf[32];
    blitz_task *writer;
} st_exact_main;

static blitz_poll st_exact_poll(blitz_cx *cx, void *p) {
    st_exact_main *m = p;
    BLITZ_BEGIN(m);
    {
        st_dribble d;
        memset(&d, 0, sizeof d);
        d.w = m->w;
        d.data = "0123456789";
        d.len = 10;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), st_dribble_poll, &d, sizeof d, &m->writer));
    }
    CHECK_OK(blitz_stream_pipe(&m->st, m->r, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_reader_init(&m->rd, &m->st, NULL, 4));
    BLITZ_AWAIT(m, blitz_reader_read_exact(cx, &m->rd, m->buf, 4));
    CHECK_EQ(m->rd.result, 4);
    CHECK(memcmp(m->buf, "0123", 4) == 0);
    BLITZ_AWAIT(m, blitz_reader_read_exact(cx, &m->rd, m->buf, 10));
    CHECK_EQ(m->rd.result, BLITZ_EEOF);
    CHECK_EQ(m->rd.len, 6);
    CHECK(memcmp(m->buf, "456789", 6) == 0);
    BLITZ_AWAIT(m, blitz_reader_read(cx, &m->rd, m->buf, sizeof m->buf));
    CHECK_EQ(m->rd.result, 0);
    BLITZ_AWAIT(m, blitz_join(cx, m->writer));
    blitz_task_release(&m->writer);
    blitz_reader_deinit(&m->rd);
    blitz_stream_close(&m->st);
    BLITZ_END(m);
}

static int st_lines(blitz_backend b, tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(b, f);
    if (!rt)
        return 0;
    st_lines_main m;
    memset(&m, 0, sizeof m);
    CHECK_OK(blitz_pipe(rt, &m.r, &m.w));
    CHECK_OK(blitz_runtime_run(rt, st_lines_poll, &m, sizeof m));
    st_exact_main e;
    memset(&e, 0, sizeof e);
    CHECK_OK(blitz_pipe(rt, &e.r, &e.w));
    CHECK_OK(blitz_runtime_run(rt, st_exact_poll, &e, sizeof e));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
ST_TESTS(lines)

/* ---- copy: producer -> copy -> consumer, byte for byte ----------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_stream st;
    blitz_writer wr;
    uint64_t total, off;
    size_t n;
    unsigned char chunk[7000];
} st_producer;

static blitz_poll st_producer_poll(blitz_cx *cx, void *p) {
    st_producer *s = p;
    BLITZ_BEGIN(s);
    CHECK_OK(blitz_writer_init(&s->wr, &s->st, NULL, 4096));
    while (s->off < s->total) {
        s->n = 1 + (size_t)(s->off % 6999);
        if (s->n > s->total - s->off)
            s->n = (size_t)(s->total - s->off);
        for (size_t i = 0; i < s->n; i++)
            s->chunk[i] = st_pattern(s->off + i);
        BLITZ_AWAIT(s, blitz_writer_write_all(cx, &s->wr, s->chunk, s->n));
        CHECK_EQ(s->wr.result, (long long)s->n);
        s->off += s->n;
    }
    BLITZ_AWAIT(s, blitz_writer_close(cx, &s->wr));
    CHECK_OK((int)s->wr.result);
    blitz_writer_deinit(&s->wr);
    blitz_stream_close(&s->st);
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    blitz_stream st;
    blitz_reader rd;
    uint64_t got;
    unsigned char buf[5000];
} st_consumer;

static blitz_poll st_consumer_poll(blitz_cx *cx, void *p) {
    st_consumer *s = p;
    BLITZ_BEGIN(s);
    CHECK_OK(blitz_reader_init(&s->rd, &s->st, NULL, 0));
    for (;;) {
        BLITZ_AWAIT(s, blitz_reader_read(cx, &s->rd, s->buf, sizeof s->buf));
        CHECK_GE(s->rd.result, 0);
        if (s->rd.result == 0)
            break;
        for (int64_t i = 0; i < s->rd.result; i++)
            if (s->buf[i] != st_pattern(s->got + (uint64_t)i))
                CHECK_EQ(s->buf[i], st_pattern(s->got + (uint64_t)i));
        s->got += (uint64_t)s->rd.result;
    }
    blitz_reader_deinit(&s->rd);
    blitz_stream_close(&s->st);
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    blitz_stream src, dst;
    blitz_copy c;
    unsigned flags;
} st_copier;

static blitz_poll st_copier_poll(blitz_cx *cx, void *p) {
    st_copier *s = p;
    BLITZ_BEGIN(s);
    CHECK_OK(blitz_copy_init(&s->c, &s->src, &s->dst, s->flags));
    BLITZ_AWAIT(s, blitz_copy_run(cx, &s->c));
    blitz_stream_shutdown_write(&s->dst);
    blitz_stream_close(&s->src);
    blitz_stream_close(&s->dst);
    BLITZ_END(s);
}

/* kind: 0 pipes, 1 Unix socket pairs. Returns the copier's final state. */
static void st_run_pipeline(blitz_runtime *rt, int kind, unsigned flags, uint64_t total,
                            st_copier *out) {
    blitz_socket *a_in, *a_out, *b_in, *b_out; /* a: producer -> copier, b: copier -> consumer */
    st_producer *pr = calloc(1, sizeof *pr);
    st_consumer *co = calloc(1, sizeof *co);
    st_copier cp;
    memset(&cp, 0, sizeof cp);
    CHECK_NOT_NULL(pr);
    CHECK_NOT_NULL(co);
    if (kind == 0) {
        CHECK_OK(blitz_pipe(rt, &a_out, &a_in));
        CHECK_OK(blitz_pipe(rt, &b_out, &b_in));
        CHECK_OK(blitz_stream_pipe(&pr->st, a_in, BLITZ_STREAM_OWN));
        CHECK_OK(blitz_stream_pipe(&cp.src, a_out, BLITZ_STREAM_OWN));
        CHECK_OK(blitz_stream_pipe(&cp.dst, b_in, BLITZ_STREAM_OWN));
        CHECK_OK(blitz_stream_pipe(&co->st, b_out, BLITZ_STREAM_OWN));
    } else {
        CHECK_OK(blitz_unix_pair(rt, 1, &a_in, &a_out));
        CHECK_OK(blitz_unix_pair(rt, 1, &b_in, &b_out));
        CHECK_OK(blitz_stream_socket(&pr->st, a_in, BLITZ_STREAM_OWN));
        CHECK_OK(blitz_stream_socket(&cp.src, a_out, BLITZ_STREAM_OWN));
        CHECK_OK(blitz_stream_socket(&cp.dst, b_in, BLITZ_STREAM_OWN));
        CHECK_OK(blitz_stream_socket(&co->st, b_out, BLITZ_STREAM_OWN));
    }
    pr->total = total;
    cp.flags = flags;
    blitz_task *tp, *tc, *tk;
    CHECK_OK(blitz_spawn(rt, st_consumer_poll, co, sizeof *co, &tc));
    CHECK_OK(blitz_spawn(rt, st_copier_poll, &cp, sizeof cp, &tk));
    CHECK_OK(blitz_spawn(rt, st_producer_poll, pr, sizeof *pr, &tp));
    CHECK_OK(blitz_join_blocking(tp));
    CHECK_OK(blitz_join_blocking(tk));
    CHECK_OK(blitz_join_blocking(tc));
    *out = *(st_copier *)blitz_task_state(tk);
    CHECK_EQ(((st_consumer *)blitz_task_state(tc))->got, total);
    CHECK_EQ(out->c.result, (long long)total);
    CHECK_EQ(out->c.bytes, total);
    blitz_task_release(&tp);
    blitz_task_release(&tk);
    blitz_task_release(&tc);
    free(pr);
    free(co);
}

static int st_copy(blitz_backend b, tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(b, f);
    if (!rt)
        return 0;
    uint64_t total = (uint64_t)test_scaled(6) << 20;
    st_copier cp;
    for (int kind = 0; kind < 2; kind++) {
        st_run_pipeline(rt, kind, 0, total, &cp);
        CHECK_EQ(cp.c.kernel, total); /* splice moved every byte */
        st_run_pipeline(rt, kind, BLITZ_COPY_NO_SPLICE, total, &cp);
        CHECK_EQ(cp.c.kernel, 0);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
ST_TESTS(copy)

/* ---- sendfile: a file into a pipe, and the same through a buffer -------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_stream src, dst;
    blitz_copy c;
    unsigned flags;
} st_file_copier;

static int st_sendfile(blitz_backend b, tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(b, f);
    if (!rt)
        return 0;
    char path[] = "/tmp/blitz_st_XXXXXX";
    int fd = mkstemp(path);
    CHECK_GE(fd, 0);
    unlink(path);
    uint64_t total = (uint64_t)test_scaled(3) << 20;
    unsigned char *data = malloc((size_t)total);
    CHECK_NOT_NULL(data);
    for (uint64_t i = 0; i < total; i++)
        data[i] = st_pattern(i);
    CHECK_EQ(write(fd, data, (size_t)total), (long long)total);
    free(data);
    for (int mode = 0; mode < 2; mode++) {
        CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
        blitz_socket *r, *w;
        CHECK_OK(blitz_pipe(rt, &r, &w));
        st_consumer *co = calloc(1, sizeof *co);
        CHECK_NOT_NULL(co);
        CHECK_OK(blitz_stream_pipe(&co->st, r, BLITZ_STREAM_OWN));
        st_copier cp;
        memset(&cp, 0, sizeof cp);
        CHECK_OK(blitz_stream_file(&cp.src, fd, 0));
        CHECK_OK(blitz_stream_pipe(&cp.dst, w, BLITZ_STREAM_OWN));
        cp.flags = mode ? BLITZ_COPY_NO_SPLICE : 0;
        blitz_task *tc, *tk;
        CHECK_OK(blitz_spawn(rt, st_consumer_poll, co, sizeof *co, &tc));
        CHECK_OK(blitz_spawn(rt, st_copier_poll, &cp, sizeof cp, &tk));
        CHECK_OK(blitz_join_blocking(tk));
        CHECK_OK(blitz_join_blocking(tc));
        st_copier *done = blitz_task_state(tk);
        CHECK_EQ(done->c.result, (long long)total);
        CHECK_EQ(done->c.kernel, mode ? 0 : total);
        CHECK_EQ(((st_consumer *)blitz_task_state(tc))->got, total);
        blitz_task_release(&tk);
        blitz_task_release(&tc);
        free(co);
    }
    close(fd);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
ST_TESTS(sendfile)

/* ---- broken pipe: EPIPE, no SIGPIPE ---------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *r, *w;
    blitz_io op;
    blitz_stream st, src;
    blitz_writer wr;
    blitz_copy c;
    char big[100000];
} st_broken_main;

static blitz_poll st_broken_poll(blitz_cx *cx, void *p) {
    st_broken_main *m = p;
    BLITZ_BEGIN(m);
    CHECK_OK(blitz_sock_close(m->r));
    BLITZ_AWAIT(m, blitz_fd_write(cx, &m->op, m->w, "x", 1));
    CHECK_EQ(m->op.result, BLITZ_EPIPE);
    BLITZ_AWAIT(m, blitz_fd_write_all(cx, &m->op, m->w, m->big, sizeof m->big));
    CHECK_EQ(m->op.result, BLITZ_EPIPE);
    /* through a writer: the error sticks */
    CHECK_OK(blitz_stream_pipe(&m->st, m->w, 0));
    CHECK_OK(blitz_writer_init(&m->wr, &m->st, NULL, 64));
    BLITZ_AWAIT(m, blitz_writer_write_all(cx, &m->wr, m->big, 10));
    CHECK_EQ(m->wr.result, 10); /* buffered */
    BLITZ_AWAIT(m, blitz_writer_flush(cx, &m->wr));
    CHECK_EQ(m->wr.result, BLITZ_EPIPE);
    BLITZ_AWAIT(m, blitz_writer_write_all(cx, &m->wr, m->big, 10));
    CHECK_EQ(m->wr.result, BLITZ_EPIPE);
    blitz_writer_deinit(&m->wr);
    BLITZ_END(m);
}

static int st_broken(blitz_backend b, tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(b, f);
    if (!rt)
        return 0;
    /* the default disposition: a stray SIGPIPE would end the test */
    signal(SIGPIPE, SIG_DFL);
    st_broken_main *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    CHECK_OK(blitz_pipe(rt, &m->r, &m->w));
    CHECK_OK(blitz_runtime_run(rt, st_broken_poll, m, sizeof *m));
    /* a splice into a pipe without a reader */
    blitz_socket *r1, *w1, *r2, *w2;
    CHECK_OK(blitz_pipe(rt, &r1, &w1));
    CHECK_OK(blitz_pipe(rt, &r2, &w2));
    CHECK_EQ(write(blitz_sock_fd(w1), "data", 4), 4);
    CHECK_OK(blitz_sock_close(r2));
    st_copier cp;
    memset(&cp, 0, sizeof cp);
    CHECK_OK(blitz_stream_pipe(&cp.src, r1, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_pipe(&cp.dst, w2, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_runtime_run(rt, st_copier_poll, &cp, sizeof cp));
    CHECK_EQ(cp.c.result, BLITZ_EPIPE);
    CHECK_OK(blitz_sock_close(w1));
    /* the descriptor ops refuse a missing socket and bad buffers */
    blitz_io op;
    memset(&op, 0, sizeof op);
    CHECK_EQ(blitz_fd_read(NULL, &op, NULL, NULL, 0), BLITZ_READY);
    CHECK_EQ(op.result, BLITZ_EINVAL);
    CHECK_EQ(blitz_pipe(NULL, &r1, &w1), BLITZ_EINVAL);
    CHECK_EQ(blitz_pipe(rt, NULL, &w1), BLITZ_EINVAL);
    free(m);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
ST_TESTS(broken)

/* ---- cancel: a pending pipe read, a pending read_line, blocking form --------------------------
 */

typedef struct {
    BLITZ_CORO;
    blitz_socket *r, *w;
    blitz_io op;
    blitz_timer timer;
    blitz_stream st;
    blitz_reader rd;
    blitz_combo combo;
    blitz_op ops[2];
    char buf[64];
    char line[64];
} st_cancel_main;

static blitz_poll st_cancel_poll(blitz_cx *cx, void *p) {
    st_cancel_main *m = p;
    BLITZ_BEGIN(m);
    /* nothing to read: the timeout wins and withdraws the read */
    BLITZ_AWAIT(m, blitz_timeout_op(cx, &m->timer, 20 * BLITZ_MSEC,
                                    blitz_fd_read(cx, &m->op, m->r, m->buf, sizeof m->buf),
                                    blitz_io_cancel, &m->op));
    CHECK_EQ(m->timer.expired, 1);
    CHECK(!blitz_io_pending(&m->op) ||
          blitz_runtime_backend(blitz_cx_runtime(cx)) == BLITZ_BACKEND_IO_URING);
    BLITZ_AWAIT(m, blitz_io_settle(cx, &m->op));
    CHECK_EQ(write(blitz_sock_fd(m->w), "hello", 5), 5);
    BLITZ_AWAIT(m, blitz_fd_read(cx, &m->op, m->r, m->buf, sizeof m->buf));
    CHECK_EQ(m->op.result, 5);
    CHECK(memcmp(m->buf, "hello", 5) == 0);

    /* a half line is buffered when the race is lost; nothing is lost */
    CHECK_OK(blitz_stream_pipe(&m->st, m->r, 0));
    CHECK_OK(blitz_reader_init(&m->rd, &m->st, NULL, 0));
    CHECK_EQ(write(blitz_sock_fd(m->w), "half ", 5), 5);
    m->ops[0] = blitz_op_reader_read_line(&m->rd, m->line, sizeof m->line);
    m->ops[1] = blitz_op_sleep_until(&m->timer, blitz_cx_now(cx) + 20 * BLITZ_MSEC);
    BLITZ_AWAIT(m, blitz_race(cx, &m->combo, m->ops, 2));
    CHECK_EQ(m->combo.winner, 1);
    BLITZ_AWAIT(m, blitz_stream_settle(cx, &m->st));
    CHECK_EQ(write(blitz_sock_fd(m->w), "and half\n", 9), 9);
    BLITZ_AWAIT(m, blitz_reader_read_line(cx, &m->rd, m->line, sizeof m->line));
    CHECK_EQ(m->rd.result, 14);
    CHECK(strcmp(m->line, "half and half") == 0);
    blitz_reader_deinit(&m->rd);
    BLITZ_END(m);
}

/* A task cancelled while its read waits. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *r;
    blitz_io op;
    char buf[16];
} st_stuck;

static blitz_poll st_stuck_poll(blitz_cx *cx, void *p) {
    st_stuck *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_fd_read(cx, &s->op, s->r, s->buf, sizeof s->buf));
    CHECK(0); /* never readable */
    BLITZ_END(s);
}
static void st_stuck_cancel(void *p) {
    blitz_io_cancel(NULL, &((st_stuck *)p)->op);
}

static int st_cancel(blitz_backend b, tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(b, f);
    if (!rt)
        return 0;
    st_cancel_main m;
    memset(&m, 0, sizeof m);
    CHECK_OK(blitz_pipe(rt, &m.r, &m.w));
    CHECK_OK(blitz_runtime_run(rt, st_cancel_poll, &m, sizeof m));

    st_stuck s;
    memset(&s, 0, sizeof s);
    s.r = m.r;
    blitz_spawn_opts o;
    memset(&o, 0, sizeof o);
    o.poll = st_stuck_poll;
    o.state = &s;
    o.size = sizeof s;
    o.cancel = st_stuck_cancel;
    blitz_task *t;
    CHECK_OK(blitz_spawn_ex(rt, &o, &t));
    tu_sleep_ms(20);
    CHECK_OK(blitz_task_cancel(t));
    CHECK_EQ(blitz_join_blocking(t), BLITZ_ECANCELED);
    blitz_task_release(&t);

    /* the blocking form: blitz_op_run_blocking from this thread */
    blitz_stream st;
    CHECK_OK(blitz_stream_pipe(&st, m.r, 0));
    CHECK_EQ(write(blitz_sock_fd(m.w), "blocking", 8), 8);
    char buf[16];
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_stream_read(&st, buf, sizeof buf)));
    CHECK_EQ(st.read_result, 8);
    CHECK(memcmp(buf, "blocking", 8) == 0);
    CHECK_OK(blitz_sock_close(m.w));
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_stream_read(&st, buf, sizeof buf)));
    CHECK_EQ(st.read_result, 0);
    CHECK_OK(blitz_sock_close(m.r));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
ST_TESTS(cancel)

/* ---- graceful shutdown ------------------------------------------------------------------------
 */

/* In-flight work: it starts its last stretch (ns) when the shutdown
 * begins, so it is in flight at the trigger whatever the timing. */
typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    blitz_cancel_token *token;
    blitz_cancel_token_wait_op tw;
    int64_t ns;
    atomic_int *finished;
} st_work;

static blitz_poll st_work_poll(blitz_cx *cx, void *p) {
    st_work *w = p;
    BLITZ_BEGIN(w);
    if (w->token)
        BLITZ_AWAIT(w, blitz_cancel_token_wait(cx, &w->tw, w->token));
    BLITZ_AWAIT(w, blitz_sleep(cx, &w->timer, w->ns));
    atomic_fetch_add(w->finished, 1);
    BLITZ_END(w);
}
static void st_work_cancel(void *p) {
    st_work *w = p;
    blitz_cancel_token_wait_cancel(NULL, &w->tw);
    blitz_timer_cancel(NULL, &w->timer);
}

typedef struct {
    BLITZ_CORO;
    blitz_shutdown *sd;
    blitz_socket *listener;
    blitz_io op;
    blitz_cancel_token_wait_op tw;
    blitz_combo combo;
    blitz_op ops[2];
    uint64_t stopped_at;
    int accepted;
} st_acceptor;

static blitz_poll st_accept_op(blitz_cx *cx, void *p) {
    st_acceptor *a = (st_acceptor *)((char *)p - offsetof(st_acceptor, op));
    return blitz_sock_accept(cx, &a->op, a->listener);
}

static blitz_poll st_acceptor_poll(blitz_cx *cx, void *p) {
    st_acceptor *a = p;
    BLITZ_BEGIN(a);
    for (;;) {
        a->ops[0] = blitz_op_make(st_accept_op, blitz_io_cancel, &a->op);
        a->ops[1] = blitz_op_cancel_token_wait(&a->tw, blitz_shutdown_token(a->sd));
        blitz_combo_reset(&a->combo);
        BLITZ_AWAIT(a, blitz_race(cx, &a->combo, a->ops, 2));
        if (a->combo.winner != 0)
            break;
        if (a->op.result == 0) {
            a->accepted++;
            blitz_sock_close(a->op.socket);
        }
    }
    BLITZ_AWAIT(a, blitz_io_settle(cx, &a->op));
    a->stopped_at = blitz_cx_now(cx);
    BLITZ_END(a);
}

typedef struct {
    BLITZ_CORO;
    blitz_shutdown *sd;
    blitz_shutdown_run_op run;
    int64_t grace;
    uint64_t started, ended;
} st_supervisor;

static blitz_poll st_supervisor_poll(blitz_cx *cx, void *p) {
    st_supervisor *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_shutdown_run(cx, &s->run, s->sd, s->grace));
    s->ended = blitz_cx_now(cx);
    BLITZ_END(s);
}

static int st_shutdown(blitz_backend b, tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(b, f);
    if (!rt)
        return 0;
    for (int round = 0; round < 2; round++) {
        /* round 0: triggered by SIGUSR2, a grace of 300 ms; round 1: by a
         * call, no grace */
        static const int sigs[1] = {SIGUSR2};
        blitz_shutdown_opts so = {sigs, round == 0 ? 1 : -1};
        blitz_shutdown *sd;
        CHECK_OK(blitz_shutdown_new(rt, &so, &sd));
        atomic_int finished;
        atomic_init(&finished, 0);
        for (int i = 0; i < 5; i++) {
            st_work w;
            memset(&w, 0, sizeof w);
            w.ns = round == 0 && i < 3 ? 30 * BLITZ_MSEC : 20 * BLITZ_SEC;
            w.token = blitz_shutdown_token(sd);
            w.finished = &finished;
            blitz_spawn_opts o;
            memset(&o, 0, sizeof o);
            o.poll = st_work_poll;
            o.state = &w;
            o.size = sizeof w;
            o.cancel = st_work_cancel;
            CHECK_OK(blitz_shutdown_spawn_ex(sd, &o));
        }
        CHECK_EQ(blitz_shutdown_in_flight(sd), 5);
        blitz_addr a;
        CHECK_OK(blitz_addr_parse("127.0.0.1:0", &a));
        st_acceptor ac;
        memset(&ac, 0, sizeof ac);
        ac.sd = sd;
        CHECK_OK(blitz_tcp_listen(rt, &a, 16, 0, &ac.listener));
        blitz_task *ta, *ts;
        CHECK_OK(blitz_spawn(rt, st_acceptor_poll, &ac, sizeof ac, &ta));
        st_supervisor sv;
        memset(&sv, 0, sizeof sv);
        sv.sd = sd;
        sv.grace = round == 0 ? 300 * BLITZ_MSEC : 0;
        CHECK_OK(blitz_spawn(rt, st_supervisor_poll, &sv, sizeof sv, &ts));
        tu_sleep_ms(10);
        CHECK(!blitz_shutdown_triggered(sd));
        uint64_t trig = blitz_time_now(rt);
        if (round == 0)
            CHECK_EQ(kill(getpid(), SIGUSR2), 0);
        else
            CHECK_OK(blitz_shutdown_trigger(sd));
        CHECK_OK(blitz_join_blocking(ta));
        CHECK_OK(blitz_join_blocking(ts));
        st_acceptor *adone = blitz_task_state(ta);
        st_supervisor *sdone = blitz_task_state(ts);
        CHECK(blitz_shutdown_triggered(sd));
        CHECK_OK(sdone->run.result);
        /* the acceptor stopped at once: before the grace period ended */
        CHECK_LT(adone->stopped_at - trig, 2 * BLITZ_SEC * (uint64_t)tu_timeout_mult());
        if (round == 0)
            CHECK_LT(adone->stopped_at, sdone->ended);
        if (round == 0) {
            CHECK_EQ(sdone->run.signo, SIGUSR2);
            CHECK_EQ(sdone->run.finished, 3);
            CHECK_EQ(sdone->run.cancelled, 2);
            CHECK_EQ(tu_ldi(&finished), 3);
            CHECK_GE(sdone->ended - trig, 250 * BLITZ_MSEC);
        } else {
            CHECK_EQ(sdone->run.signo, 0);
            CHECK_EQ(sdone->run.finished + sdone->run.cancelled, 5);
            CHECK_EQ(sdone->run.cancelled, 5);
        }
        /* after the run no tracked spawn is accepted */
        st_work w;
        memset(&w, 0, sizeof w);
        w.finished = &finished;
        CHECK_EQ(blitz_shutdown_spawn(sd, st_work_poll, &w, sizeof w), BLITZ_ECLOSED);
        CHECK_EQ(blitz_shutdown_in_flight(sd), 0);
        blitz_sock_close(adone->listener);
        blitz_task_release(&ta);
        blitz_task_release(&ts);
        CHECK_OK(blitz_shutdown_free(sd));
    }
    blitz_shutdown_opts bad = {NULL, 2};
    blitz_shutdown *sd = NULL;
    CHECK_EQ(blitz_shutdown_new(rt, &bad, &sd), BLITZ_EINVAL);
    CHECK_NULL(sd);
    CHECK_EQ(blitz_shutdown_new(NULL, NULL, &sd), BLITZ_EINVAL);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
ST_TESTS(shutdown)

/* ---- a copy cancelled again and again while data keeps coming ---------------------------- */

/* The copy's buffer stays until the kernel lets go of a cancelled io_uring
 * receive or send into it (it was freed at once: ASan use after free in
 * the receive's completion), and after blitz_copy_settle the same struct
 * can be initialised again (the cancelled waits' completions landed in
 * the new copy). What each copy says it wrote is what reached dst. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *w;
    blitz_io op;
    blitz_timer pause;
    int i;
    unsigned char chunk[50000];
} st_copy_feeder;

static blitz_poll st_copy_feeder_poll(blitz_cx *cx, void *p) {
    st_copy_feeder *f = p;
    BLITZ_BEGIN(f);
    for (f->i = 0; f->i < 40; f->i++) {
        BLITZ_AWAIT(f, blitz_sock_send_all(cx, &f->op, f->w, f->chunk, sizeof f->chunk));
        CHECK_EQ(f->op.result, (long long)sizeof f->chunk);
        BLITZ_AWAIT(f, blitz_sleep(cx, &f->pause, 2 * BLITZ_MSEC));
    }
    blitz_sock_close(f->w);
    BLITZ_END(f);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *r;
    blitz_io op;
    long long total;
    unsigned char buf[65536];
} st_copy_drain;

static blitz_poll st_copy_drain_poll(blitz_cx *cx, void *p) {
    st_copy_drain *d = p;
    BLITZ_BEGIN(d);
    for (;;) {
        BLITZ_AWAIT(d, blitz_sock_recv(cx, &d->op, d->r, d->buf, sizeof d->buf));
        if (d->op.result <= 0)
            break;
        d->total += d->op.result;
    }
    CHECK_EQ(d->op.result, 0);
    blitz_sock_close(d->r);
    BLITZ_END(d);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *in_w, *in_r, *out_w, *out_r;
    blitz_stream src, dst;
    blitz_copy copy;
    blitz_timer limit;
    blitz_task *drain;
    int round, cancelled;
    long long copied;
} st_copy_again_main;

static blitz_poll st_copy_again_poll(blitz_cx *cx, void *p) {
    st_copy_again_main *m = p;
    blitz_runtime *rt = blitz_cx_runtime(cx);
    BLITZ_BEGIN(m);
    {
        st_copy_feeder f;
        memset(&f, 0, sizeof f);
        f.w = m->in_w;
        CHECK_OK(blitz_spawn(rt, st_copy_feeder_poll, &f, sizeof f, NULL));
        st_copy_drain d;
        memset(&d, 0, sizeof d);
        d.r = m->out_r;
        CHECK_OK(blitz_spawn(rt, st_copy_drain_poll, &d, sizeof d, &m->drain));
    }
    CHECK_OK(blitz_stream_socket(&m->src, m->in_r, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_socket(&m->dst, m->out_w, BLITZ_STREAM_OWN));
    for (m->round = 0;; m->round++) {
        CHECK_OK(
            blitz_copy_init(&m->copy, &m->src, &m->dst, m->round % 2 ? 0 : BLITZ_COPY_NO_SPLICE));
        BLITZ_AWAIT(m, blitz_timeout_op(cx, &m->limit, 5 * BLITZ_MSEC, blitz_copy_run(cx, &m->copy),
                                        blitz_copy_cancel, &m->copy));
        m->copied += (long long)m->copy.bytes;
        BLITZ_AWAIT(m, blitz_copy_settle(cx, &m->copy));
        if (!m->limit.expired)
            break;
        CHECK_EQ(m->copy.result, BLITZ_ECANCELED);
        m->cancelled++;
    }
    CHECK_GE(m->copy.result, 0);
    blitz_stream_close(&m->dst);
    BLITZ_AWAIT(m, blitz_join(cx, m->drain));
    CHECK_EQ(((st_copy_drain *)blitz_task_state(m->drain))->total, m->copied);
    blitz_task_release(&m->drain);
    blitz_stream_close(&m->src);
    BLITZ_END(m);
}

static int st_copy_again(blitz_backend b, tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(b, f);
    if (!rt)
        return 0;
    st_copy_again_main m;
    memset(&m, 0, sizeof m);
    CHECK_OK(blitz_unix_pair(rt, 1, &m.in_w, &m.in_r));
    CHECK_OK(blitz_unix_pair(rt, 1, &m.out_w, &m.out_r));
    CHECK_OK(blitz_runtime_run(rt, st_copy_again_poll, &m, sizeof m));
    CHECK_GT(m.cancelled, 0);
    CHECK_LE(m.copied, 40 * 50000);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
ST_TESTS(copy_again)
