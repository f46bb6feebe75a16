/* Pipes and the descriptor ops on the system's default backend, with the
 * public calls (and the system's own to make what is adopted): a 1 MiB
 * round trip checked byte by byte and the end of the stream after the
 * writer's close, BLITZ_EPIPE after the reader's, a cancelled read whose
 * data goes to the next one, a close with a read in flight, a runtime
 * freed with ops in flight, readable and writable, the op forms, the
 * descriptor ops on a TCP socket, adoption of a pipe end (a listening
 * socket too on Windows) and of a bad descriptor. The same file runs on
 * Windows (the completion port) and elsewhere. */
#include "test_util.h"

#define TP_BYTES (1u << 20)

static blitz_runtime *tp_rt(tu_flavor f) {
    blitz_config cfg = tu_config(f);
    blitz_runtime *rt = tu_rt_config(&cfg);
    CHECK(blitz_runtime_backend(rt) != BLITZ_BACKEND_NONE);
    return rt;
}

static unsigned char tp_byte(size_t i) {
    return (unsigned char)((i * 131u + (i >> 12)) & 0xff);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *rd, *wr;
    blitz_io op, op2;
    blitz_timer t;
    blitz_task *other;
    unsigned char *data;
    void *stream; /* a blitz_stream (pipe_stream) */
    size_t got;
    char buf[4096];
    int step;
} tp_pair;

static int tp_run(tu_flavor f, blitz_poll_fn body) {
    blitz_runtime *rt = tp_rt(f);
    tp_pair *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    CHECK_OK(blitz_pipe(rt, &m->rd, &m->wr));
    CHECK_OK(blitz_runtime_run(rt, body, m, sizeof *m));
    CHECK_EQ(m->step, 100);
    CHECK_OK(blitz_runtime_free(rt));
    free(m);
    return 0;
}

/* ---- 1 MiB through, then the end ------------------------------------------------ */

typedef struct {
    BLITZ_CORO;
    blitz_socket *wr;
    blitz_io op;
    const unsigned char *data;
} tp_writer;

static blitz_poll tp_writer_poll(blitz_cx *cx, void *p) {
    tp_writer *w = p;
    BLITZ_BEGIN(w);
    BLITZ_AWAIT(w, blitz_fd_write_all(cx, &w->op, w->wr, w->data, TP_BYTES));
    CHECK_EQ(w->op.result, (int64_t)TP_BYTES);
    CHECK_OK(blitz_sock_close(w->wr));
    BLITZ_END(w);
}

static blitz_poll tp_round_trip_poll(blitz_cx *cx, void *p) {
    tp_pair *m = p;
    BLITZ_BEGIN(m);
    {
        tp_writer w;
        memset(&w, 0, sizeof w);
        w.wr = m->wr;
        w.data = m->data;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), tp_writer_poll, &w, sizeof w, &m->other));
    }
    for (;;) {
        BLITZ_AWAIT(m, blitz_fd_read(cx, &m->op, m->rd, m->buf, sizeof m->buf));
        CHECK_GE(m->op.result, 0);
        if (m->op.result == 0)
            break;
        for (size_t i = 0; i < (size_t)m->op.result; i++)
            CHECK_EQ(m->buf[i], (char)tp_byte(m->got + i));
        m->got += (size_t)m->op.result;
        CHECK(m->got <= TP_BYTES);
    }
    CHECK_EQ(m->got, (size_t)TP_BYTES);
    BLITZ_AWAIT(m, blitz_join(cx, m->other));
    CHECK_OK(blitz_task_status(m->other));
    blitz_task_release(&m->other);
    /* The end stays the end. */
    BLITZ_AWAIT(m, blitz_fd_read(cx, &m->op, m->rd, m->buf, sizeof m->buf));
    CHECK_EQ(m->op.result, 0);
    blitz_sock_close(m->rd);
    m->step = 100;
    BLITZ_END(m);
}

static int pipe_round_trip(tu_flavor f) {
    blitz_runtime *rt = tp_rt(f);
    tp_pair *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    m->data = malloc(TP_BYTES);
    CHECK_NOT_NULL(m->data);
    for (size_t i = 0; i < TP_BYTES; i++)
        m->data[i] = tp_byte(i);
    CHECK_OK(blitz_pipe(rt, &m->rd, &m->wr));
    CHECK_OK(blitz_runtime_run(rt, tp_round_trip_poll, m, sizeof *m));
    CHECK_EQ(m->step, 100);
    CHECK_OK(blitz_runtime_free(rt));
    free(m->data);
    free(m);
    return 0;
}
TU_FLAVOR_TESTS(pipe_round_trip)

/* ---- the reader gone: BLITZ_EPIPE ------------------------------------------------ */

static blitz_poll tp_epipe_poll(blitz_cx *cx, void *p) {
    tp_pair *m = p;
    BLITZ_BEGIN(m);
    CHECK_OK(blitz_sock_close(m->rd));
    BLITZ_AWAIT(m, blitz_fd_write(cx, &m->op, m->wr, "x", 1));
    CHECK_EQ(m->op.result, BLITZ_EPIPE);
    BLITZ_AWAIT(m, blitz_fd_write_all(cx, &m->op, m->wr, "xyz", 3));
    CHECK_EQ(m->op.result, BLITZ_EPIPE);
    blitz_sock_close(m->wr);
    m->step = 100;
    BLITZ_END(m);
}
static int pipe_epipe(tu_flavor f) {
    return tp_run(f, tp_epipe_poll);
}
TU_FLAVOR_TESTS(pipe_epipe)

/* ---- a read withdrawn by a time limit: its data goes to the next ------------------ */

static blitz_poll tp_cancel_read_poll(blitz_cx *cx, void *p) {
    tp_pair *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, blitz_timeout(cx, &m->t, 20 * BLITZ_MSEC,
                                 blitz_fd_read(cx, &m->op2, m->rd, m->buf, sizeof m->buf)));
    CHECK(m->t.expired);
    BLITZ_AWAIT(m, blitz_io_settle(cx, &m->op2));
    BLITZ_AWAIT(m, blitz_fd_write_all(cx, &m->op, m->wr, "abcdef", 6));
    CHECK_EQ(m->op.result, 6);
    while (m->got < 6) {
        BLITZ_AWAIT(m, blitz_fd_read(cx, &m->op2, m->rd, m->buf + m->got, 6 - m->got));
        CHECK_GT(m->op2.result, 0);
        m->got += (size_t)m->op2.result;
    }
    CHECK(memcmp(m->buf, "abcdef", 6) == 0);
    blitz_sock_close(m->rd);
    blitz_sock_close(m->wr);
    m->step = 100;
    BLITZ_END(m);
}
static int pipe_cancel_read(tu_flavor f) {
    return tp_run(f, tp_cancel_read_poll);
}
TU_FLAVOR_TESTS(pipe_cancel_read)

/* ---- a close from another task ends a read in flight ------------------------------- */

typedef struct {
    BLITZ_CORO;
    tp_pair *m;
    blitz_timer t;
} tp_closer;

static blitz_poll tp_closer_poll(blitz_cx *cx, void *p) {
    tp_closer *c = p;
    BLITZ_BEGIN(c);
    while (!blitz_io_pending(&c->m->op))
        BLITZ_AWAIT(c, blitz_sleep(cx, &c->t, BLITZ_MSEC));
    CHECK_OK(blitz_sock_close(c->m->rd));
    BLITZ_END(c);
}

static blitz_poll tp_close_inflight_poll(blitz_cx *cx, void *p) {
    tp_pair *m = p;
    BLITZ_BEGIN(m);
    {
        tp_closer c;
        memset(&c, 0, sizeof c);
        c.m = m;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), tp_closer_poll, &c, sizeof c, &m->other));
    }
    BLITZ_AWAIT(m, blitz_fd_read(cx, &m->op, m->rd, m->buf, sizeof m->buf));
    CHECK_EQ(m->op.result, BLITZ_ECLOSED);
    BLITZ_AWAIT(m, blitz_join(cx, m->other));
    CHECK_OK(blitz_task_status(m->other));
    blitz_task_release(&m->other);
    BLITZ_AWAIT(m, blitz_fd_write(cx, &m->op, m->wr, "x", 1));
    CHECK_EQ(m->op.result, BLITZ_EPIPE);
    blitz_sock_close(m->wr);
    m->step = 100;
    BLITZ_END(m);
}
static int pipe_close_inflight(tu_flavor f) {
    return tp_run(f, tp_close_inflight_poll);
}
TU_FLAVOR_TESTS(pipe_close_inflight)

/* ---- readable, writable -------------------------------------------------------------- */

static blitz_poll tp_ready_poll(blitz_cx *cx, void *p) {
    tp_pair *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, blitz_fd_writable(cx, &m->op, m->wr));
    CHECK(m->op.result > 0 && (m->op.result & POLLOUT));
    /* Nothing to read yet: the wait is still on when its limit comes. */
    BLITZ_AWAIT(m,
                blitz_timeout(cx, &m->t, 20 * BLITZ_MSEC, blitz_fd_readable(cx, &m->op2, m->rd)));
    CHECK(m->t.expired);
    BLITZ_AWAIT(m, blitz_io_settle(cx, &m->op2));
    BLITZ_AWAIT(m, blitz_fd_write_all(cx, &m->op, m->wr, "r", 1));
    CHECK_EQ(m->op.result, 1);
    BLITZ_AWAIT(m, blitz_fd_readable(cx, &m->op2, m->rd));
    CHECK(m->op2.result > 0 && (m->op2.result & POLLIN));
    /* The wait took nothing: the byte is still there. */
    BLITZ_AWAIT(m, blitz_fd_read(cx, &m->op2, m->rd, m->buf, sizeof m->buf));
    CHECK_EQ(m->op2.result, 1);
    CHECK_EQ(m->buf[0], 'r');
    CHECK_OK(blitz_sock_close(m->wr));
    BLITZ_AWAIT(m, blitz_fd_readable(cx, &m->op2, m->rd));
    CHECK(m->op2.result > 0 && (m->op2.result & (POLLIN | POLLHUP)));
    blitz_sock_close(m->rd);
    m->step = 100;
    BLITZ_END(m);
}
static int pipe_ready(tu_flavor f) {
    return tp_run(f, tp_ready_poll);
}
TU_FLAVOR_TESTS(pipe_ready)

/* ---- a runtime freed with reads in flight ---------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_socket *s;
    blitz_io op;
    blitz_timer t;
    char buf[64];
} tp_waiter;

static blitz_poll tp_waiter_poll(blitz_cx *cx, void *p) {
    tp_waiter *w = p;
    BLITZ_BEGIN(w);
    BLITZ_AWAIT(w, blitz_fd_read(cx, &w->op, w->s, w->buf, sizeof w->buf));
    BLITZ_END(w);
}

static blitz_poll tp_sleep_poll(blitz_cx *cx, void *p) {
    tp_waiter *w = p;
    BLITZ_BEGIN(w);
    BLITZ_AWAIT(w, blitz_sleep(cx, &w->t, 20 * BLITZ_MSEC));
    BLITZ_END(w);
}

static int pipe_free_inflight(tu_flavor f) {
    blitz_runtime *rt = tp_rt(f);
    blitz_socket *rd = NULL, *wr = NULL, *rd2 = NULL, *wr2 = NULL;
    CHECK_OK(blitz_pipe(rt, &rd, &wr));
    CHECK_OK(blitz_pipe(rt, &rd2, &wr2));
    tp_waiter w;
    memset(&w, 0, sizeof w);
    w.s = rd;
    blitz_task *t1 = NULL, *t2 = NULL;
    CHECK_OK(blitz_spawn(rt, tp_waiter_poll, &w, sizeof w, &t1));
    w.s = rd2;
    CHECK_OK(blitz_spawn(rt, tp_waiter_poll, &w, sizeof w, &t2));
    tp_waiter idle;
    memset(&idle, 0, sizeof idle);
    CHECK_OK(blitz_runtime_run(rt, tp_sleep_poll, &idle, sizeof idle));
    blitz_task_release(&t1);
    blitz_task_release(&t2);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(pipe_free_inflight)

/* ---- the op forms (blocking), bad input --------------------------------------------------- */

static int pipe_op_forms(tu_flavor f) {
    blitz_runtime *rt = tp_rt(f);
    blitz_socket *rd = NULL, *wr = NULL;
    CHECK_OK(blitz_pipe(rt, &rd, &wr));
    blitz_io a, b;
    char buf[16];
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fd_writable(&a, wr)));
    CHECK(a.result > 0 && (a.result & POLLOUT));
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fd_write(&a, wr, "hi", 2)));
    CHECK_GT(a.result, 0);
    if (a.result == 1) {
        CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fd_write(&a, wr, "i", 1)));
        CHECK_EQ(a.result, 1);
    }
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fd_write_all(&a, wr, "there", 5)));
    CHECK_EQ(a.result, 5);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fd_readable(&b, rd)));
    CHECK(b.result > 0 && (b.result & POLLIN));
    size_t got = 0;
    while (got < 7) {
        CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fd_read(&b, rd, buf + got, 7 - got)));
        CHECK_GT(b.result, 0);
        got += (size_t)b.result;
    }
    CHECK(memcmp(buf, "hithere", 7) == 0);
    CHECK_OK(blitz_sock_close(wr));
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fd_read(&b, rd, buf, sizeof buf)));
    CHECK_EQ(b.result, 0);
    CHECK_OK(blitz_sock_close(rd));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(pipe_op_forms)

BLITZ_TEST(pipe_bad_input) {
    blitz_runtime *rt = tp_rt(TU_CT);
    blitz_socket *a = (blitz_socket *)&a, *b = (blitz_socket *)&b;
    CHECK_EQ(blitz_pipe(NULL, &a, &b), BLITZ_EINVAL);
    CHECK(a == NULL && b == NULL);
    CHECK_EQ(blitz_pipe(rt, NULL, &b), BLITZ_EINVAL);
    CHECK_EQ(blitz_sock_adopt(rt, -1, &a), BLITZ_EINVAL);
    CHECK(a == NULL);
    CHECK_EQ(blitz_sock_adopt(NULL, 0, &a), BLITZ_EINVAL);
    CHECK_EQ(blitz_sock_adopt(rt, 0, NULL), BLITZ_EINVAL);
    /* A descriptor number nothing has open. */
    CHECK_EQ(blitz_sock_adopt(rt, 1000000, &a), BLITZ_EBADF);
    CHECK(a == NULL);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- the descriptor ops on a TCP socket: its own transfers ------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_socket *listener, *a, *b;
    blitz_io op, op2;
    char buf[16];
    size_t got;
    int step;
} tp_tcp;

static blitz_poll tp_tcp_poll(blitz_cx *cx, void *p) {
    tp_tcp *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, blitz_tcp_connect(cx, &m->op, &m->addr));
    CHECK_OK((int)m->op.result);
    m->a = m->op.socket;
    BLITZ_AWAIT(m, blitz_sock_accept(cx, &m->op2, m->listener));
    CHECK_OK((int)m->op2.result);
    m->b = m->op2.socket;
    BLITZ_AWAIT(m, blitz_fd_writable(cx, &m->op, m->a));
    CHECK(m->op.result > 0 && (m->op.result & POLLOUT));
    BLITZ_AWAIT(m, blitz_fd_write_all(cx, &m->op, m->a, "hello", 5));
    CHECK_EQ(m->op.result, 5);
    BLITZ_AWAIT(m, blitz_fd_readable(cx, &m->op2, m->b));
    CHECK(m->op2.result > 0 && (m->op2.result & POLLIN));
    while (m->got < 5) {
        BLITZ_AWAIT(m, blitz_fd_read(cx, &m->op2, m->b, m->buf + m->got, 5 - m->got));
        CHECK_GT(m->op2.result, 0);
        m->got += (size_t)m->op2.result;
    }
    CHECK(memcmp(m->buf, "hello", 5) == 0);
    CHECK_OK(blitz_sock_close(m->a));
    BLITZ_AWAIT(m, blitz_fd_read(cx, &m->op2, m->b, m->buf, sizeof m->buf));
    CHECK(m->op2.result == 0 || m->op2.result == BLITZ_ECONNRESET);
    blitz_sock_close(m->b);
    m->step = 100;
    BLITZ_END(m);
}

static int pipe_fd_ops_tcp(tu_flavor f) {
    blitz_runtime *rt = tp_rt(f);
    tp_tcp *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    m->listener = tu_listen_any(rt, &m->addr);
    CHECK_OK(blitz_runtime_run(rt, tp_tcp_poll, m, sizeof *m));
    CHECK_EQ(m->step, 100);
    blitz_sock_close(m->listener);
    CHECK_OK(blitz_runtime_free(rt));
    free(m);
    return 0;
}
TU_FLAVOR_TESTS(pipe_fd_ops_tcp)

/* ---- adoption of a pipe's read end ------------------------------------------------------------
 */

#if defined(_WIN32)
/* An overlapped read end as a C runtime descriptor, and its writer's
 * handle (synchronous). */
static int tp_os_pipe(int *fd, HANDLE *writer) {
    wchar_t name[64];
    swprintf(name, 64, L"\\\\.\\pipe\\blitz-test-%lu-%p", (unsigned long)GetCurrentProcessId(),
             (void *)fd);
    HANDLE r = CreateNamedPipeW(name, PIPE_ACCESS_INBOUND | FILE_FLAG_OVERLAPPED,
                                PIPE_TYPE_BYTE | PIPE_WAIT, 1, 4096, 4096, 0, NULL);
    CHECK(r != INVALID_HANDLE_VALUE);
    *writer = CreateFileW(name, GENERIC_WRITE, 0, NULL, OPEN_EXISTING, 0, NULL);
    CHECK(*writer != INVALID_HANDLE_VALUE);
    *fd = _open_osfhandle((intptr_t)r, _O_RDONLY);
    CHECK_GE(*fd, 0);
    return 0;
}
static void tp_os_write(HANDLE w, const char *s, DWORD n) {
    DWORD put = 0;
    CHECK(WriteFile(w, s, n, &put, NULL) && put == n);
}
static void tp_os_close(HANDLE w) {
    CloseHandle(w);
}
#else
static int tp_os_pipe(int *fd, int *writer) {
    int fds[2];
    CHECK_OK(pipe(fds));
    *fd = fds[0];
    *writer = fds[1];
    return 0;
}
static void tp_os_write(int w, const char *s, size_t n) {
    CHECK_EQ(write(w, s, n), (ssize_t)n);
}
static void tp_os_close(int w) {
    close(w);
}
#endif

BLITZ_TEST(pipe_adopt) {
    blitz_runtime *rt = tp_rt(TU_MT2);
    int fd = -1;
#if defined(_WIN32)
    HANDLE w;
#else
    int w;
#endif
    tp_os_pipe(&fd, &w);
    blitz_socket *s = NULL;
    CHECK_OK(blitz_sock_adopt(rt, fd, &s));
    blitz_io op;
    memset(&op, 0, sizeof op);
    char buf[8];
    tp_os_write(w, "hey", 3);
    size_t got = 0;
    while (got < 3) {
        CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fd_read(&op, s, buf + got, 3 - got)));
        CHECK_GT(op.result, 0);
        got += (size_t)op.result;
    }
    CHECK(memcmp(buf, "hey", 3) == 0);
    tp_os_close(w);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fd_read(&op, s, buf, sizeof buf)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_sock_close(s));
#if defined(_WIN32)
    /* A synchronous pipe end: refused, and still the caller's. */
    HANDLE r2, w2;
    CHECK(CreatePipe(&r2, &w2, NULL, 0));
    fd = _open_osfhandle((intptr_t)r2, _O_RDONLY);
    CHECK_GE(fd, 0);
    CHECK_EQ(blitz_sock_adopt(rt, fd, &s), BLITZ_EINVAL);
    CHECK(s == NULL);
    CHECK_EQ(_close(fd), 0);
    CloseHandle(w2);
    /* A listening socket: adopted, its address and listening kept. */
    {
        SOCKET ls = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
        CHECK(ls != INVALID_SOCKET);
        struct sockaddr_in sin;
        memset(&sin, 0, sizeof sin);
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK_EQ(bind(ls, (struct sockaddr *)&sin, sizeof sin), 0);
        CHECK_EQ(listen(ls, 4), 0);
        int sl = (int)sizeof sin;
        CHECK_EQ(getsockname(ls, (struct sockaddr *)&sin, &sl), 0);
        fd = _open_osfhandle((intptr_t)ls, 0);
        CHECK_GE(fd, 0);
        CHECK_OK(blitz_sock_adopt(rt, fd, &s));
        blitz_addr la;
        CHECK_OK(blitz_sock_local_addr(s, &la));
        CHECK_EQ(blitz_addr_port(&la), ntohs(sin.sin_port));
        blitz_addr to = la;
        CHECK_OK(blitz_op_run_blocking(rt, blitz_op_tcp_connect(&op, &to)));
        CHECK_OK((int)op.result);
        blitz_socket *c = op.socket;
        CHECK_OK(blitz_op_run_blocking(rt, blitz_op_sock_accept(&op, s)));
        CHECK_OK((int)op.result);
        CHECK_OK(blitz_sock_close(op.socket));
        CHECK_OK(blitz_sock_close(c));
        CHECK_OK(blitz_sock_close(s));
    }
#endif
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- a stream over each end ---------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_stream st;
    const unsigned char *data;
    size_t sent;
} tp_stream_writer;

static blitz_poll tp_stream_writer_poll(blitz_cx *cx, void *p) {
    tp_stream_writer *w = p;
    BLITZ_BEGIN(w);
    while (w->sent < TP_BYTES) {
        BLITZ_AWAIT(w, blitz_stream_write(cx, &w->st, w->data + w->sent,
                                          TP_BYTES - w->sent < 50000 ? TP_BYTES - w->sent : 50000));
        CHECK_GT(w->st.write_result, 0);
        w->sent += (size_t)w->st.write_result;
    }
    /* The owned write end closes: the reader sees the end. */
    CHECK_OK(blitz_stream_shutdown_write(&w->st));
    CHECK_OK(blitz_stream_close(&w->st));
    BLITZ_END(w);
}

static blitz_poll tp_stream_poll(blitz_cx *cx, void *p) {
    tp_pair *m = p;
    BLITZ_BEGIN(m);
    {
        tp_stream_writer w;
        memset(&w, 0, sizeof w);
        CHECK_OK(blitz_stream_pipe(&w.st, m->wr, BLITZ_STREAM_OWN));
        w.data = m->data;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), tp_stream_writer_poll, &w, sizeof w, &m->other));
    }
    m->step = 1;
    CHECK_OK(blitz_stream_pipe((blitz_stream *)m->stream, m->rd, BLITZ_STREAM_OWN));
    for (;;) {
        BLITZ_AWAIT(m, blitz_stream_read(cx, (blitz_stream *)m->stream, m->buf, sizeof m->buf));
        CHECK_GE(((blitz_stream *)m->stream)->read_result, 0);
        if (((blitz_stream *)m->stream)->read_result == 0)
            break;
        for (size_t i = 0; i < (size_t)((blitz_stream *)m->stream)->read_result; i++)
            CHECK_EQ(m->buf[i], (char)tp_byte(m->got + i));
        m->got += (size_t)((blitz_stream *)m->stream)->read_result;
        CHECK(m->got <= TP_BYTES);
    }
    CHECK_EQ(m->got, (size_t)TP_BYTES);
    BLITZ_AWAIT(m, blitz_join(cx, m->other));
    CHECK_OK(blitz_task_status(m->other));
    blitz_task_release(&m->other);
    CHECK_OK(blitz_stream_close((blitz_stream *)m->stream));
    m->step = 100;
    BLITZ_END(m);
}

/* Streams over both ends of a pipe: 1 MiB through, checked byte by byte,
 * and the end of the stream once the owned write end is closed. */
static int pipe_stream(tu_flavor f) {
    blitz_runtime *rt = tp_rt(f);
    tp_pair *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    m->data = malloc(TP_BYTES);
    m->stream = malloc(sizeof(blitz_stream));
    CHECK_NOT_NULL(m->data);
    CHECK_NOT_NULL(m->stream);
    for (size_t i = 0; i < TP_BYTES; i++)
        m->data[i] = tp_byte(i);
    CHECK_OK(blitz_pipe(rt, &m->rd, &m->wr));
    CHECK_OK(blitz_runtime_run(rt, tp_stream_poll, m, sizeof *m));
    CHECK_EQ(m->step, 100);
    CHECK_OK(blitz_runtime_free(rt));
    free(m->stream);
    free(m->data);
    free(m);
    return 0;
}
TU_FLAVOR_TESTS(pipe_stream)
