/* Public API: descriptor ops and pipes, byte streams (buffered reader and
 * writer, copy), graceful shutdown. */

/* ---------------------------------------------------------------------------
 * Descriptor ops and pipes
 *
 * The socket ops of api_io.h use recv/send, which fail on pipes, ttys and
 * character devices. These ops use read(2)/write(2) on any descriptor a
 * blitz_socket wraps (blitz_pipe, blitz_sock_adopt; sockets too), on every
 * backend: readiness and the system call on epoll and poll, a POLL_ADD
 * followed by the system call on io_uring (so the kernel never holds your
 * buffer). They are blitz_io ops: the result is in op->result (bytes, 0 at
 * end of stream, or a negative code), blitz_io_cancel
 * withdraws them. A write to a pipe whose reader is gone returns
 * BLITZ_EPIPE; SIGPIPE never reaches the process for it.
 *
 * On Windows the completion port performs them: ReadFile / WriteFile on a
 * pipe end, WSARecv / WSASend on a socket.
 *
 * Regular files and /dev/null cannot be waited for (epoll refuses them):
 * use a file stream (blitz_stream_file) or the file ops of api_pool.h.
 * ------------------------------------------------------------------------- */

/* A non-blocking, close-on-exec pipe (Windows: two overlapped ends on the
 * runtime's completion port, not inherited): bytes written to *write_end
 * come out of *read_end. Closing the write end (blitz_sock_close) ends
 * the stream for the reader; closing the read end makes writes fail with
 * BLITZ_EPIPE.
 * BLITZ_EINVAL (NULL), BLITZ_ENOSYS (runtime without I/O), BLITZ_EMFILE. */
BLITZ_API int blitz_pipe(blitz_runtime *rt, blitz_socket **read_end, blitz_socket **write_end);

/* Up to len bytes; result 0 at end of stream. */
BLITZ_API blitz_poll blitz_fd_read(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                   size_t len);
/* At least one byte (or the error); may be partial. */
BLITZ_API blitz_poll blitz_fd_write(blitz_cx *cx, blitz_io *op, blitz_socket *s, const void *buf,
                                    size_t len);
/* All len bytes; result len, or the error that stopped it. */
BLITZ_API blitz_poll blitz_fd_write_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                        const void *buf, size_t len);
/* READY once the descriptor is readable / writable (or at end of stream,
 * or in error): result is the poll(2) event mask (> 0) or a negative
 * code. Windows (POLLIN etc. of winsock2.h): readable is POLLIN, or
 * POLLHUP at a pipe's end; writable is POLLOUT at once, since a write
 * there waits in the kernel for room rather than failing. */
BLITZ_API blitz_poll blitz_fd_readable(blitz_cx *cx, blitz_io *op, blitz_socket *s);
BLITZ_API blitz_poll blitz_fd_writable(blitz_cx *cx, blitz_io *op, blitz_socket *s);
/* The descriptor ops as blitz_ops (cancel: blitz_io_cancel). */
BLITZ_API blitz_op blitz_op_fd_read(blitz_io *io, blitz_socket *s, void *buf, size_t len);
BLITZ_API blitz_op blitz_op_fd_write(blitz_io *io, blitz_socket *s, const void *buf, size_t len);
BLITZ_API blitz_op blitz_op_fd_write_all(blitz_io *io, blitz_socket *s, const void *buf,
                                         size_t len);
BLITZ_API blitz_op blitz_op_fd_readable(blitz_io *io, blitz_socket *s);
BLITZ_API blitz_op blitz_op_fd_writable(blitz_io *io, blitz_socket *s);

/* ---------------------------------------------------------------------------
 * Byte streams
 *
 * A blitz_stream is one read side and one write side over a socket, a pipe
 * (or any descriptor a blitz_socket wraps), a file, or an implementation of
 * your own (a vtable). The buffered reader and writer and blitz_copy work
 * on any of them. A stream holds one pending read and one pending write at
 * a time (one task may read while another writes); it keeps the op structs
 * of both, so it lives where an op lives: in a task's state, or anywhere
 * that outlives the ops polled on it (after a cancel, until
 * blitz_stream_settle is READY).
 *
 * Every awaitable below is an intrusive op: a poll function over an object
 * (the stream, the reader, the writer, the copy), a cancel function (a
 * blitz_cancel_fn, safe with cx NULL and on an idle or finished op), and a
 * blitz_op constructor, so they work with blitz_timeout_op, blitz_race and
 * blitz_op_run_blocking (the blocking form). Results are in the object's `result`:
 * a count >= 0 or a negative code.
 * ------------------------------------------------------------------------- */

typedef struct blitz_stream blitz_stream;

/* A stream implementation. read / write are polled until READY and then
 * store their result in *result (bytes; 0 from read = end of stream; < 0
 * an error); write may be partial but moves at least one byte. cancel
 * withdraws the pending read (dir 0) or write (dir 1); cx may be NULL.
 * shutdown_write (optional) ends the write side: the peer reads end of
 * stream. */
typedef struct blitz_stream_vtable {
    blitz_poll (*read)(blitz_cx *cx, blitz_stream *st, void *buf, size_t len, int64_t *result);
    blitz_poll (*write)(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                        int64_t *result);
    void (*cancel)(blitz_cx *cx, blitz_stream *st, int dir);
    int (*shutdown_write)(blitz_stream *st);
} blitz_stream_vtable;

#define BLITZ_STREAM_SOCKET 1 /* a socket: send/recv */
#define BLITZ_STREAM_PIPE   2 /* any other pollable descriptor: read/write */
#define BLITZ_STREAM_FILE   3 /* a regular file, through the blocking pool */
#define BLITZ_STREAM_CUSTOM 4

/* The stream closes its socket / descriptor in blitz_stream_close. */
#define BLITZ_STREAM_OWN 1u

struct blitz_stream {
    const blitz_stream_vtable *vtable;
    void *user; /* for a custom implementation */
    int kind;   /* BLITZ_STREAM_* */
    int fd;     /* the descriptor, or -1 */
    blitz_socket *sock;
    /* blitz_stream_read / _write: the result after READY. */
    int64_t read_result, write_result;
    unsigned blitz__flags;
    int blitz__wr_shut;
    void *blitz__rbuf;
    const void *blitz__wbuf;
    size_t blitz__rlen, blitz__wlen;
    blitz_io blitz__rio, blitz__wio;
    blitz_fs_op blitz__rfs, blitz__wfs;
};

/* A socket stream (recv/send), or a pipe stream (read/write) for any other
 * descriptor a blitz_socket wraps. flags: BLITZ_STREAM_OWN or 0.
 * BLITZ_EINVAL for NULL. On Windows a socket stream's fd is -1 (a SOCKET
 * is no int). */
BLITZ_API int blitz_stream_socket(blitz_stream *st, blitz_socket *s, unsigned flags);
BLITZ_API int blitz_stream_pipe(blitz_stream *st, blitz_socket *s, unsigned flags);
/* A stream over an open file descriptor: reads and writes at the file
 * position, on the blocking pool (Windows: a C runtime descriptor, as
 * blitz_fs_open gives). */
BLITZ_API int blitz_stream_file(blitz_stream *st, int fd, unsigned flags);
BLITZ_API int blitz_stream_custom(blitz_stream *st, const blitz_stream_vtable *vt, void *user);
/* Ends the write side (socket: shutdown(SHUT_WR); owned pipe end: close;
 * file: nothing). BLITZ_OK, or the system's error. */
BLITZ_API int blitz_stream_shutdown_write(blitz_stream *st);
/* Withdraws pending ops and closes what the stream owns. Idempotent. */
BLITZ_API int blitz_stream_close(blitz_stream *st);

/* One read / one (possibly partial) write: result in st->read_result /
 * st->write_result. */
BLITZ_API blitz_poll blitz_stream_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len);
BLITZ_API blitz_poll blitz_stream_write(blitz_cx *cx, blitz_stream *st, const void *buf,
                                        size_t len);
BLITZ_API void blitz_stream_read_cancel(blitz_cx *cx, void *st);
BLITZ_API void blitz_stream_write_cancel(blitz_cx *cx, void *st);
/* READY once no cancelled op of the stream is still held by the kernel
 * (only io_uring and Windows' completion port have such a wait); then
 * the stream may be freed. */
BLITZ_API blitz_poll blitz_stream_settle(blitz_cx *cx, blitz_stream *st);
/* The arguments are kept in the stream until the op is polled. */
BLITZ_API blitz_op blitz_op_stream_read(blitz_stream *st, void *buf, size_t len);
BLITZ_API blitz_op blitz_op_stream_write(blitz_stream *st, const void *buf, size_t len);

/* ---- the buffered reader --------------------------------------------------
 *
 *   blitz_reader_init(&s->rd, &s->stream, NULL, 0);        (8 KiB, allocated)
 *   for (;;) {
 *       BLITZ_AWAIT(s, blitz_reader_read_line(cx, &s->rd, s->line, sizeof s->line));
 *       if (s->rd.result <= 0) break;      0: end of stream; < 0: error
 *       ... s->line (NUL-terminated, without "\n" or "\r\n"), s->rd.len bytes ...
 *   }
 *   blitz_reader_deinit(&s->rd);
 *
 * read_until / read_line take a record that fits the reader's buffer only
 * once the delimiter is in it, so a cancelled one loses nothing; a longer
 * record is moved into the destination as it comes (a cancel then leaves
 * the part moved in dst, `len` bytes of it). A last record without a
 * delimiter at the end of the stream is returned as it is.
 *
 * The reader's buffer is where the stream reads into: with io_uring a
 * socket read that was cancelled may still land there until
 * blitz_stream_settle is READY. A reader whose task can be cancelled
 * therefore gets a buffer inside the task's state (which the runtime keeps
 * until the kernel lets go), not an allocated one it would free in the
 * cancel hook.
 * ------------------------------------------------------------------------- */

typedef struct blitz_reader {
    /* After READY: bytes consumed from the stream (> 0), 0 at end of
     * stream with nothing read, or a negative code: BLITZ_EMSGSIZE (the
     * record is longer than the destination), BLITZ_EEOF (read_exact: the
     * stream ended first), or the stream's error. */
    int64_t result;
    /* read_line: the line's length without its ending; read_until /
     * read_exact / EMSGSIZE: the bytes stored in the destination. */
    size_t len;
    blitz_stream *stream;
    unsigned char *blitz__buf;
    size_t blitz__cap, blitz__start, blitz__end, blitz__scanned;
    int blitz__owns, blitz__eof, blitz__op, blitz__reading;
    int64_t blitz__err;
    unsigned char *blitz__dst;
    size_t blitz__max, blitz__got;
    int blitz__delim; /* blitz_op_reader_read_until's */
} blitz_reader;

/* buf NULL: the reader allocates cap bytes (0 = 8 KiB). BLITZ_EINVAL (NULL
 * reader or stream, cap 0 with a buffer), BLITZ_ENOMEM. */
BLITZ_API int blitz_reader_init(blitz_reader *r, blitz_stream *st, void *buf, size_t cap);
/* Frees an allocated buffer. */
BLITZ_API void blitz_reader_deinit(blitz_reader *r);
/* Bytes buffered and not yet consumed. */
BLITZ_API size_t blitz_reader_buffered(const blitz_reader *r);
/* The buffered bytes themselves, without consuming them (*len of them;
 * NULL when there are none), valid until the reader's next op: e.g. to
 * see whether a whole line already waits (memchr for '\n'). */
BLITZ_API const void *blitz_reader_peek(const blitz_reader *r, size_t *len);
/* Up to len bytes (from the buffer, else one read of the stream). */
BLITZ_API blitz_poll blitz_reader_read(blitz_cx *cx, blitz_reader *r, void *dst, size_t len);
/* Exactly len bytes, or BLITZ_EEOF (len: what arrived). */
BLITZ_API blitz_poll blitz_reader_read_exact(blitz_cx *cx, blitz_reader *r, void *dst, size_t len);
/* Bytes up to and including `delim` (0..255) into dst, at most max; result
 * and len: bytes stored. BLITZ_EMSGSIZE when max bytes came without the
 * delimiter: they are in dst and consumed, the rest of the record is
 * next. */
BLITZ_API blitz_poll blitz_reader_read_until(blitz_cx *cx, blitz_reader *r, int delim, void *dst,
                                             size_t max);
/* A '\n'-terminated line into dst (size max >= 2), NUL-terminated, without
 * "\n" / "\r\n"; len is its length. The line with its '\n' must fit in
 * max - 1 bytes (dst holds it before the ending is cut off): otherwise
 * BLITZ_EMSGSIZE, with max - 1 bytes of it in dst and consumed and the
 * rest of the line next. So dst of 1024 bytes takes lines of up to 1022
 * characters (1021 with "\r\n"). */
BLITZ_API blitz_poll blitz_reader_read_line(blitz_cx *cx, blitz_reader *r, char *dst, size_t max);
/* Withdraws a pending reader op (a blitz_cancel_fn; op = the reader). */
BLITZ_API void blitz_reader_cancel(blitz_cx *cx, void *reader);
BLITZ_API blitz_op blitz_op_reader_read_line(blitz_reader *r, char *dst, size_t max);
BLITZ_API blitz_op blitz_op_reader_read_exact(blitz_reader *r, void *dst, size_t len);
BLITZ_API blitz_op blitz_op_reader_read(blitz_reader *r, void *dst, size_t len);
BLITZ_API blitz_op blitz_op_reader_read_until(blitz_reader *r, int delim, void *dst, size_t max);

/* ---- the buffered writer --------------------------------------------------
 *
 * Bytes collect in the buffer and go out when it is full, on flush, and on
 * close. After an error every later op reports it. */

typedef struct blitz_writer {
    int64_t result; /* after READY: bytes accepted / 0 (flush, close) / < 0 */
    blitz_stream *stream;
    unsigned char *blitz__buf;
    size_t blitz__cap, blitz__len, blitz__sent;
    int blitz__owns, blitz__op, blitz__writing;
    int64_t blitz__err;
    const unsigned char *blitz__src;
    size_t blitz__srclen, blitz__taken;
} blitz_writer;

BLITZ_API int blitz_writer_init(blitz_writer *w, blitz_stream *st, void *buf, size_t cap);
/* Frees an allocated buffer; bytes not flushed are dropped. */
BLITZ_API void blitz_writer_deinit(blitz_writer *w);
BLITZ_API size_t blitz_writer_buffered(const blitz_writer *w);
/* Accepts at least one byte (waits for room only when the buffer is
 * full); result: bytes accepted. */
BLITZ_API blitz_poll blitz_writer_write(blitz_cx *cx, blitz_writer *w, const void *src, size_t len);
/* Accepts all len bytes (writes larger than the buffer go straight out). */
BLITZ_API blitz_poll blitz_writer_write_all(blitz_cx *cx, blitz_writer *w, const void *src,
                                            size_t len);
/* Writes out what is buffered; result 0. */
BLITZ_API blitz_poll blitz_writer_flush(blitz_cx *cx, blitz_writer *w);
/* Flushes, then ends the stream's write side; result 0. */
BLITZ_API blitz_poll blitz_writer_close(blitz_cx *cx, blitz_writer *w);
BLITZ_API void blitz_writer_cancel(blitz_cx *cx, void *writer);
BLITZ_API blitz_op blitz_op_writer_write_all(blitz_writer *w, const void *src, size_t len);
BLITZ_API blitz_op blitz_op_writer_flush(blitz_writer *w);
BLITZ_API blitz_op blitz_op_writer_write(blitz_writer *w, const void *src, size_t len);
BLITZ_API blitz_op blitz_op_writer_close(blitz_writer *w);

/* ---- copy -----------------------------------------------------------------
 *
 * Everything from src until its end into dst. The kernel moves the bytes
 * where it can: splice(2) between a pipe and a pipe or socket (through a
 * pipe of the op's own between two sockets), sendfile(2) from a file to a
 * socket or pipe; otherwise (a copy into a file, say), or when the kernel
 * refuses, read and write through a buffer (always, on Windows). dst's
 * write side is left open. */

#define BLITZ_COPY_NO_SPLICE 1u /* always read and write through a buffer */

typedef struct blitz_copy {
    int64_t result;  /* after READY: bytes copied, or a negative code */
    uint64_t bytes;  /* copied so far */
    uint64_t kernel; /* of which moved by splice / sendfile */
    blitz_stream *src, *dst;
    unsigned flags;
    int blitz__mode, blitz__wait, blitz__eof;
    int blitz__pipe[2];
    size_t blitz__inpipe;
    unsigned char *blitz__buf;
    size_t blitz__len, blitz__off;
    blitz_io blitz__src_io, blitz__dst_io;
} blitz_copy;

/* Prepares a copy (flags: BLITZ_COPY_* or 0). BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_copy_init(blitz_copy *c, blitz_stream *src, blitz_stream *dst, unsigned flags);
BLITZ_API blitz_poll blitz_copy_run(blitz_cx *cx, blitz_copy *c);
/* Withdraws the copy and frees what it holds (the bytes in flight are
 * lost). On io_uring and on Windows a receive or send of the copy may
 * still be in the kernel: its buffer goes when the kernel lets go, and
 * the copy's own waits finish later too, so before the copy is
 * initialised again (or its memory reused) wait for blitz_copy_settle. */
BLITZ_API void blitz_copy_cancel(blitz_cx *cx, void *copy);
/* READY once nothing of a cancelled copy is in the kernel any more (its
 * waits, and the streams' receive and send): the struct may then be
 * initialised again and the streams used by other ops. READY at once on
 * every backend but io_uring and Windows' completion port, and for a copy
 * that finished. */
BLITZ_API blitz_poll blitz_copy_settle(blitz_cx *cx, blitz_copy *c);
BLITZ_API blitz_op blitz_op_copy(blitz_copy *c);

/* ---------------------------------------------------------------------------
 * Graceful shutdown
 *
 *   blitz_shutdown *sd;
 *   blitz_shutdown_new(rt, NULL, &sd);                (SIGINT and SIGTERM)
 *   ... the accept loop races its accept against the token:
 *   s->ops[0] = blitz_op_sock_accept(&s->acc, s->listener);
 *   s->ops[1] = blitz_op_cancel_token_wait(&s->tw, blitz_shutdown_token(sd));
 *   ... connections: blitz_shutdown_spawn(sd, conn_poll, &c, sizeof c);
 *   (a connection cancelled after the grace period closes its socket in
 *   its drop function: blitz_shutdown_spawn_ex with a drop that calls
 *   blitz_sock_close; its pending op is withdrawn for it)
 *   ... a supervising task:
 *   BLITZ_AWAIT(s, blitz_shutdown_run(cx, &s->run, sd, 5 * BLITZ_SEC));
 *   s->run.finished, s->run.cancelled
 *
 * blitz_shutdown_run waits for the trigger (blitz_shutdown_trigger from any
 * thread, or one of the signals), cancels the token at once (acceptors
 * stop), lets the tasks spawned with blitz_shutdown_spawn finish until the
 * grace period ends, cancels those still running, and reports how many
 * finished and how many were cancelled.
 * ------------------------------------------------------------------------- */

typedef struct blitz_shutdown blitz_shutdown;

typedef struct blitz_shutdown_opts {
    /* Signals that trigger the shutdown; nsignals 0 = SIGINT and SIGTERM
     * (Windows: SIGINT, BLITZ_SIGBREAK and BLITZ_SIGHUP), nsignals < 0 =
     * none. */
    const int *signals;
    int nsignals;
} blitz_shutdown_opts;

/* BLITZ_EINVAL, BLITZ_ENOMEM, or a signal set-up error. */
BLITZ_API int blitz_shutdown_new(blitz_runtime *rt, const blitz_shutdown_opts *opts,
                                 blitz_shutdown **out);
/* Starts the shutdown (any thread, idempotent). */
BLITZ_API int blitz_shutdown_trigger(blitz_shutdown *sd);
/* Nonzero once triggered. */
BLITZ_API int blitz_shutdown_triggered(const blitz_shutdown *sd);
/* Cancelled the moment the shutdown starts. */
BLITZ_API blitz_cancel_token *blitz_shutdown_token(blitz_shutdown *sd);
/* Spawns in-flight work the shutdown waits for (BLITZ_ECLOSED once the
 * grace period is over, BLITZ_ESHUTDOWN / BLITZ_ENOMEM as blitz_spawn). */
BLITZ_API int blitz_shutdown_spawn(blitz_shutdown *sd, blitz_poll_fn poll, const void *state,
                                   size_t size);
BLITZ_API int blitz_shutdown_spawn_ex(blitz_shutdown *sd, const blitz_spawn_opts *opts);
/* Tracked tasks spawned and not yet finished (blitz_serve's accept loops
 * are not counted). */
BLITZ_API size_t blitz_shutdown_in_flight(blitz_shutdown *sd);

typedef struct blitz_shutdown_run_op {
    int result; /* BLITZ_OK, BLITZ_EINVAL, BLITZ_EBUSY (another run) */
    int signo;  /* the signal that triggered it, 0 for a call */
    /* Of the tracked tasks still running at the trigger: */
    uint64_t finished;  /* completed by themselves */
    uint64_t cancelled; /* tracked tasks cancelled after the grace period */
    uint64_t blitz__deadline;
    size_t blitz__idx;
    int blitz__phase;
    blitz_shutdown *blitz__sd;
    blitz_timer blitz__timer;
    blitz_cancel_token_wait_op blitz__tw;
    blitz_combo blitz__combo;
    blitz_op blitz__ops[2];
    /* blitz_op_shutdown_run's arguments (kept when the run starts). */
    blitz_shutdown *blitz__arg_sd;
    int64_t blitz__arg_grace;
} blitz_shutdown_run_op;

/* Awaits the whole shutdown (see above); grace_ns <= 0 cancels the
 * tracked tasks at once. One run per coordinator. */
BLITZ_API blitz_poll blitz_shutdown_run(blitz_cx *cx, blitz_shutdown_run_op *op, blitz_shutdown *sd,
                                        int64_t grace_ns);
/* Withdraws a run (cancels every tracked task still running). */
BLITZ_API void blitz_shutdown_run_cancel(blitz_cx *cx, void *op);
/* blitz_shutdown_run as a blitz_op (cancel: blitz_shutdown_run_cancel). */
BLITZ_API blitz_op blitz_op_shutdown_run(blitz_shutdown_run_op *op, blitz_shutdown *sd,
                                         int64_t grace_ns);
/* Frees the coordinator (tracked tasks still running are cancelled). */
BLITZ_API int blitz_shutdown_free(blitz_shutdown *sd);

/* ---------------------------------------------------------------------------
 * Serving: an accept loop that ends with the shutdown, a task per connection
 *
 *   typedef struct { BLITZ_CORO; blitz_socket *sock; blitz_io io; char buf[4096]; } conn;
 *   blitz_serve_opts o = {.listener = l, .poll = conn_poll, .size = sizeof(conn),
 *                         .socket_offset = offsetof(conn, sock)};
 *   blitz_serve(sd, &o);
 *   ... then blitz_shutdown_run(sd, grace) as above.
 *
 * Each accepted connection gets a task of the shutdown (tracked: the run
 * lets it finish within the grace period, then cancels it) whose state is
 * `size` bytes, a copy of `state` (zero-filled when NULL) with the socket
 * stored at `socket_offset`. The runtime closes that socket when the task
 * ends, however it ends (completed, cancelled, timed out): the task never
 * closes it (blitz_sock_shutdown is fine). An accept error (out of
 * descriptors, say) is retried 10 ms later. At the trigger the accept loop
 * stops and closes the listener; the run waits for that, and does not
 * count the loop as a connection.
 * ------------------------------------------------------------------------- */

typedef struct blitz_serve_opts {
    blitz_socket *listener; /* required; closed by the loop (after BLITZ_OK) */
    blitz_poll_fn poll;     /* required: runs each connection */
    const void *state;      /* optional template, read at each accept */
    size_t size;            /* bytes of a connection's state */
    size_t socket_offset;   /* where its socket goes: offsetof(your_state, sock) */
    blitz_drop_fn drop;     /* optional: frees what a connection's state owns */
    int64_t timeout_ns;     /* optional: each connection's limit (0: none) */
} blitz_serve_opts;

/* Starts serving `listener` on the shutdown's runtime. BLITZ_EINVAL (a
 * NULL argument, the socket field outside `size`, a negative timeout),
 * BLITZ_ECLOSED (the grace period is over), BLITZ_ENOMEM, BLITZ_ESHUTDOWN;
 * on an error the listener is still the caller's. Several listeners may
 * be served under one shutdown. */
BLITZ_API int blitz_serve(blitz_shutdown *sd, const blitz_serve_opts *opts);
