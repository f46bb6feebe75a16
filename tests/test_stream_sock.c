/* Streams over sockets and files on the default backend of every system,
 * Windows included: the reader and writer, blitz_copy between sockets and
 * between a file and a socket, cancelled stream ops that lose nothing, and
 * a stream of one's own (included by blitz_tests.c after test_fs.c, whose
 * temporary folder it uses). */

#define SS_LINES 5000

typedef struct {
    blitz_stream up_w, up_r, down_w, down_r; /* producer -> relay -> consumer */
    blitz_writer w;
    blitz_reader r;
    blitz_copy c;
} ss_relay;

typedef struct {
    BLITZ_CORO;
    ss_relay *m;
    int i;
    char line[64];
} ss_producer;

static blitz_poll ss_producer_poll(blitz_cx *cx, void *p) {
    ss_producer *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < SS_LINES; s->i++) {
        snprintf(s->line, sizeof s->line, "line %d of the relay\n", s->i);
        BLITZ_AWAIT(s, blitz_writer_write_all(cx, &s->m->w, s->line, strlen(s->line)));
        CHECK_EQ(s->m->w.result, (long long)strlen(s->line));
    }
    BLITZ_AWAIT(s, blitz_writer_close(cx, &s->m->w));
    CHECK_EQ(s->m->w.result, 0);
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    ss_relay *m;
} ss_relayer;

static blitz_poll ss_relayer_poll(blitz_cx *cx, void *p) {
    ss_relayer *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_copy_run(cx, &s->m->c));
    CHECK_OK(blitz_stream_shutdown_write(&s->m->down_w));
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    ss_relay *m;
    int i;
    uint64_t bytes;
    char line[64], want[64];
} ss_consumer;

static blitz_poll ss_consumer_poll(blitz_cx *cx, void *p) {
    ss_consumer *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0;; s->i++) {
        BLITZ_AWAIT(s, blitz_reader_read_line(cx, &s->m->r, s->line, sizeof s->line));
        if (s->m->r.result <= 0)
            break;
        s->bytes += (uint64_t)s->m->r.result;
        snprintf(s->want, sizeof s->want, "line %d of the relay", s->i);
        CHECK(strcmp(s->line, s->want) == 0);
    }
    CHECK_EQ(s->m->r.result, 0);
    CHECK_EQ(s->i, SS_LINES);
    BLITZ_END(s);
}

/* Lines written through a writer, relayed by a copy from one connection
 * to another, read back by a reader: every line, in order, then the end
 * of the stream once the producer closed its side. */
static int sock_stream_relay(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    blitz_socket *a1, *b1, *a2, *b2;
    tu_tcp_pair(rt, &a1, &b1);
    tu_tcp_pair(rt, &a2, &b2);
    ss_relay *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    CHECK_OK(blitz_stream_socket(&m->up_w, a1, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_socket(&m->up_r, b1, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_socket(&m->down_w, a2, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_socket(&m->down_r, b2, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_writer_init(&m->w, &m->up_w, NULL, 512));
    CHECK_OK(blitz_reader_init(&m->r, &m->down_r, NULL, 0));
    CHECK_OK(blitz_copy_init(&m->c, &m->up_r, &m->down_w, 0));

    ss_producer pr = {0};
    ss_relayer rl = {0};
    ss_consumer co = {0};
    pr.m = rl.m = co.m = m;
    blitz_task *tp, *tr, *tc;
    CHECK_OK(blitz_spawn(rt, ss_consumer_poll, &co, sizeof co, &tc));
    CHECK_OK(blitz_spawn(rt, ss_relayer_poll, &rl, sizeof rl, &tr));
    CHECK_OK(blitz_spawn(rt, ss_producer_poll, &pr, sizeof pr, &tp));
    CHECK_OK(blitz_join_blocking(tp));
    CHECK_OK(blitz_join_blocking(tr));
    CHECK_OK(blitz_join_blocking(tc));
    uint64_t bytes = ((ss_consumer *)blitz_task_state(tc))->bytes;
    CHECK_GT(bytes, 0);
    CHECK_EQ(m->c.result, (long long)m->c.bytes);
    CHECK_EQ(m->c.bytes, bytes); /* read_line counts the '\n's it consumed */
    CHECK_OK(blitz_task_release(&tp));
    CHECK_OK(blitz_task_release(&tr));
    CHECK_OK(blitz_task_release(&tc));
    blitz_writer_deinit(&m->w);
    blitz_reader_deinit(&m->r);
    CHECK_OK(blitz_stream_close(&m->up_w));
    CHECK_OK(blitz_stream_close(&m->up_r));
    CHECK_OK(blitz_stream_close(&m->down_w));
    CHECK_OK(blitz_stream_close(&m->down_r));
    free(m);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sock_stream_relay)

/* ---- a stream of one's own (a vtable over memory), driven by blitz_op_run_blocking ---- */

typedef struct {
    const char *in;
    size_t in_len, in_off;
    char out[256];
    size_t out_len;
    int pending_once; /* every other read is PENDING first, to exercise re-polls */
} st_mem;

static blitz_poll st_mem_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len,
                              int64_t *result) {
    st_mem *m = st->user;
    if ((m->pending_once ^= 1) != 0) {
        blitz_waker w = blitz_cx_waker(cx);
        blitz_waker_wake_by_ref(&w);
        return BLITZ_PENDING;
    }
    size_t n = m->in_len - m->in_off;
    if (n > 3)
        n = 3;
    if (n > len)
        n = len;
    memcpy(buf, m->in + m->in_off, n);
    m->in_off += n;
    *result = (int64_t)n;
    return BLITZ_READY;
}
static blitz_poll st_mem_write(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                               int64_t *result) {
    (void)cx;
    st_mem *m = st->user;
    size_t n = len > 5 ? 5 : len; /* partial writes */
    if (n > sizeof m->out - m->out_len)
        n = sizeof m->out - m->out_len;
    memcpy(m->out + m->out_len, buf, n);
    m->out_len += n;
    *result = n ? (int64_t)n : BLITZ_ENOSPC;
    return BLITZ_READY;
}
static void st_mem_cancel(blitz_cx *cx, blitz_stream *st, int dir) {
    (void)cx;
    (void)st;
    (void)dir;
}
static const blitz_stream_vtable st_mem_vt = {st_mem_read, st_mem_write, st_mem_cancel, NULL};

BLITZ_TEST(stream_custom_and_bad_args) {
    st_mem m;
    memset(&m, 0, sizeof m);
    m.in = "one\r\ntwo\nthree";
    m.in_len = strlen(m.in);
    blitz_stream st;
    CHECK_OK(blitz_stream_custom(&st, &st_mem_vt, &m));
    blitz_reader rd;
    CHECK_OK(blitz_reader_init(&rd, &st, NULL, 0));
    char line[16];
    const char *want[] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(blitz_op_run_blocking(NULL, blitz_op_reader_read_line(&rd, line, sizeof line)));
        CHECK_GT(rd.result, 0);
        CHECK(strcmp(line, want[i]) == 0);
    }
    CHECK_OK(blitz_op_run_blocking(NULL, blitz_op_reader_read_line(&rd, line, sizeof line)));
    CHECK_EQ(rd.result, 0);
    blitz_reader_deinit(&rd);

    blitz_writer wr;
    unsigned char wbuf[8];
    CHECK_OK(blitz_writer_init(&wr, &st, wbuf, sizeof wbuf));
    CHECK_OK(blitz_op_run_blocking(NULL, blitz_op_writer_write_all(&wr, "hello, ", 7)));
    CHECK_EQ(wr.result, 7);
    CHECK_EQ(blitz_writer_buffered(&wr), 7);
    CHECK_OK(blitz_op_run_blocking(NULL, blitz_op_writer_write_all(&wr, "buffered world", 14)));
    CHECK_OK(blitz_op_run_blocking(NULL, blitz_op_writer_flush(&wr)));
    CHECK_EQ(wr.result, 0);
    CHECK_EQ(m.out_len, 21);
    CHECK(memcmp(m.out, "hello, buffered world", 21) == 0);
    blitz_writer_deinit(&wr);

    /* bad arguments are errors, not crashes */
    CHECK_EQ(blitz_stream_custom(&st, NULL, NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_stream_socket(&st, NULL, 0), BLITZ_EINVAL);
#if !defined(_WIN32)
    CHECK_EQ(blitz_stream_pipe(NULL, NULL, 0), BLITZ_EINVAL);
#endif
    CHECK_EQ(blitz_stream_file(&st, -1, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_reader_init(&rd, NULL, NULL, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_reader_init(&rd, &st, wbuf, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_writer_init(&wr, NULL, NULL, 0), BLITZ_EINVAL);
    blitz_copy c;
    CHECK_EQ(blitz_copy_init(&c, NULL, &st, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_copy_init(&c, &st, &st, 99), BLITZ_EINVAL);
    CHECK_OK(blitz_stream_custom(&st, &st_mem_vt, &m));
    CHECK_OK(blitz_reader_init(&rd, &st, NULL, 0));
    CHECK_EQ(blitz_reader_read_line(NULL, &rd, line, 1), BLITZ_READY);
    CHECK_EQ(rd.result, BLITZ_EINVAL);
    CHECK_EQ(blitz_reader_read_until(NULL, &rd, 300, line, sizeof line), BLITZ_READY);
    CHECK_EQ(rd.result, BLITZ_EINVAL);
    blitz_reader_deinit(&rd);
    CHECK_EQ(blitz_shutdown_trigger(NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_shutdown_free(NULL), BLITZ_EINVAL);
    CHECK_NULL(blitz_shutdown_token(NULL));
    CHECK(strcmp(blitz_err_name(BLITZ_EEOF), "EEOF") == 0);
    return 0;
}

/* ---- a file into a socket and the socket into another file ---------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_stream *src, *dst;
    int shut; /* end dst's write side after the copy */
    blitz_copy c;
} ss_copier;

static blitz_poll ss_copier_poll(blitz_cx *cx, void *p) {
    ss_copier *s = p;
    BLITZ_BEGIN(s);
    CHECK_OK(blitz_copy_init(&s->c, s->src, s->dst, 0));
    BLITZ_AWAIT(s, blitz_copy_run(cx, &s->c));
    if (s->shut)
        CHECK_OK(blitz_stream_shutdown_write(s->dst));
    BLITZ_END(s);
}

static unsigned char ss_pattern(uint64_t i) {
    return (unsigned char)(i * 131 + (i >> 9));
}

static int ss_open(blitz_runtime *rt, const char *path, int flags) {
    blitz_fs_op op;
    memset(&op, 0, sizeof op);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_open(&op, path, flags, 0644)));
    CHECK_GE(op.result, 0);
    return (int)op.result;
}

static int sock_stream_file(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    char dir[512], in_path[600], out_path[600];
    tf_tmpdir(dir, sizeof dir);
    snprintf(in_path, sizeof in_path, "%s/in", dir);
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    size_t total = ((size_t)1 << 20) + 12345;
    unsigned char *data = malloc(total);
    CHECK_NOT_NULL(data);
    for (size_t i = 0; i < total; i++)
        data[i] = ss_pattern(i);
    blitz_fs_op op;
    memset(&op, 0, sizeof op);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_write_file(&op, in_path, data, total)));
    CHECK_EQ(op.result, (long long)total);

    int in = ss_open(rt, in_path, BLITZ_FS_READ);
    int out = ss_open(rt, out_path, BLITZ_FS_WRITE | BLITZ_FS_CREATE | BLITZ_FS_TRUNCATE);
    blitz_socket *x, *y;
    tu_tcp_pair(rt, &x, &y);
    blitz_stream *st = calloc(4, sizeof *st);
    CHECK_NOT_NULL(st);
    CHECK_OK(blitz_stream_file(&st[0], in, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_socket(&st[1], x, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_socket(&st[2], y, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_file(&st[3], out, BLITZ_STREAM_OWN));
    ss_copier up = {0}, down = {0};
    up.src = &st[0];
    up.dst = &st[1];
    up.shut = 1;
    down.src = &st[2];
    down.dst = &st[3];
    blitz_task *tu, *td;
    CHECK_OK(blitz_spawn(rt, ss_copier_poll, &down, sizeof down, &td));
    CHECK_OK(blitz_spawn(rt, ss_copier_poll, &up, sizeof up, &tu));
    CHECK_OK(blitz_join_blocking(tu));
    CHECK_OK(blitz_join_blocking(td));
    CHECK_EQ(((ss_copier *)blitz_task_state(tu))->c.result, (long long)total);
    CHECK_EQ(((ss_copier *)blitz_task_state(td))->c.result, (long long)total);
    CHECK_OK(blitz_task_release(&tu));
    CHECK_OK(blitz_task_release(&td));
    for (int i = 0; i < 4; i++)
        CHECK_OK(blitz_stream_close(&st[i])); /* closes both files too */
    free(st);

    /* What reached the second file is the first, byte for byte. */
    memset(&op, 0, sizeof op);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_read_file(&op, out_path)));
    CHECK_EQ(op.result, (long long)total);
    CHECK(memcmp(op.data, data, total) == 0);
    blitz_free(op.data);
    free(data);
    tf_rm_rf(dir);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sock_stream_file)

/* ---- cancelled reads and copies lose nothing ------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_stream a, b;
    blitz_reader r;
    blitz_copy c;
    blitz_stream sink;
    blitz_timer timer;
    blitz_io io;
    int read_expired, copy_expired;
    int64_t copy_result;
    unsigned char rbuf[256];
    char line[64];
} ss_cancel;

/* A sink that must never be written: the copy is cancelled first. */
static blitz_poll ss_sink_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len,
                               int64_t *result) {
    (void)cx;
    (void)st;
    (void)buf;
    (void)len;
    *result = 0;
    return BLITZ_READY;
}
static blitz_poll ss_sink_write(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                                int64_t *result) {
    (void)cx;
    (void)st;
    (void)buf;
    (void)len;
    *result = BLITZ_EIO;
    return BLITZ_READY;
}
static void ss_sink_cancel(blitz_cx *cx, blitz_stream *st, int dir) {
    (void)cx;
    (void)st;
    (void)dir;
}
static const blitz_stream_vtable ss_sink_vt = {ss_sink_read, ss_sink_write, ss_sink_cancel, NULL};

static blitz_poll ss_cancel_poll(blitz_cx *cx, void *p) {
    ss_cancel *s = p;
    BLITZ_BEGIN(s);
    CHECK_OK(blitz_reader_init(&s->r, &s->b, s->rbuf, sizeof s->rbuf));
    /* Nothing is sent yet: the read and the copy both wait until their
     * deadlines withdraw them. */
    BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, 20 * BLITZ_MSEC,
                                 blitz_reader_read_line(cx, &s->r, s->line, sizeof s->line)));
    s->read_expired = s->timer.expired;
    BLITZ_AWAIT(s, blitz_stream_settle(cx, &s->b));
    CHECK_OK(blitz_stream_custom(&s->sink, &ss_sink_vt, NULL));
    CHECK_OK(blitz_copy_init(&s->c, &s->b, &s->sink, 0));
    BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, 20 * BLITZ_MSEC, blitz_copy_run(cx, &s->c)));
    s->copy_expired = s->timer.expired;
    s->copy_result = s->c.result;
    BLITZ_AWAIT(s, blitz_copy_settle(cx, &s->c));
    /* The connection still works: the next line arrives whole. */
    BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->io, s->a.sock, "after\n", 6));
    CHECK_EQ(s->io.result, 6);
    BLITZ_AWAIT(s, blitz_reader_read_line(cx, &s->r, s->line, sizeof s->line));
    CHECK_EQ(s->r.result, 6);
    CHECK(strcmp(s->line, "after") == 0);
    blitz_reader_deinit(&s->r);
    BLITZ_END(s);
}

static int sock_stream_cancel(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    blitz_socket *a, *b;
    tu_tcp_pair(rt, &a, &b);
    ss_cancel *s = calloc(1, sizeof *s);
    CHECK_NOT_NULL(s);
    CHECK_OK(blitz_stream_socket(&s->a, a, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_socket(&s->b, b, BLITZ_STREAM_OWN));
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, ss_cancel_poll, s, sizeof *s, &t));
    CHECK_OK(blitz_join_blocking(t));
    ss_cancel *done = blitz_task_state(t);
    CHECK_EQ(done->read_expired, 1);
    CHECK_EQ(done->copy_expired, 1);
    CHECK_EQ(done->copy_result, BLITZ_ECANCELED);
    CHECK_OK(blitz_stream_close(&done->a));
    CHECK_OK(blitz_stream_close(&done->b));
    CHECK_OK(blitz_task_release(&t));
    free(s);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sock_stream_cancel)
