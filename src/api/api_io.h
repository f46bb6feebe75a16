/* Public API: The I/O driver and sockets.
 *
 * Every runtime owns one I/O driver over one backend: io_uring (completion
 * based: the kernel performs the operation and writes into your buffer),
 * epoll (edge-triggered readiness, Linux), kqueue (the same on Darwin and
 * the BSDs) or poll (the portable fallback). The backend is picked when the
 * runtime is created: blitz_config.backend, else the BLITZ_BACKEND
 * environment variable ("io_uring", "epoll", "kqueue", "poll"), else
 * io_uring when the kernel allows it, then epoll, then kqueue, then poll.
 *
 * Sockets are non-blocking file descriptors wrapped in a blitz_socket
 * handle that belongs to one runtime. Operations are intrusive ops: a
 * blitz_io lives in the task's state (zero-filled is ready to use) and is
 * polled repeatedly until READY; the result is then in the op:
 *
 *   BLITZ_AWAIT(s, blitz_sock_recv(cx, &s->op, s->sock, s->buf, sizeof s->buf));
 *   if (s->op.result <= 0) ...   // 0 = end of stream, < 0 = a BLITZ_E* code
 *
 * Buffers must stay where they are until the op is READY or cancelled and
 * settled: in the task's state they do. A task that is cancelled or
 * finishes with an io_uring op in flight keeps its memory until the kernel
 * has let go of the buffer (the op holds a reference on the task). Every op
 * has a cancel function usable with blitz_timeout_op:
 *
 *   BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, BLITZ_SEC,
 *                                   blitz_sock_recv(cx, &s->op, s->sock, s->buf, n),
 *                                   blitz_io_cancel, &s->op));
 *
 * A limit is not a way to try without waiting: on io_uring a receive goes
 * to the kernel with the task's next pause, so a limit of 0 or a few
 * nanoseconds may expire before it looked, even with data waiting (epoll
 * and poll try first). Nothing is lost (blitz_io_settle, then the next
 * receive gets it); a loop that retries such a limit should yield between
 * tries, or it never pauses and never submits.
 *
 * SIGPIPE never kills the process: sends use MSG_NOSIGNAL and report
 * BLITZ_EPIPE / BLITZ_ECONNRESET. */

/* The backend the runtime's I/O driver uses. */
BLITZ_API blitz_backend blitz_runtime_backend(const blitz_runtime *rt);
/* "io_uring", "epoll", "kqueue", "poll", "iocp", "auto", "none". */
BLITZ_API const char *blitz_backend_name(blitz_backend b);

/* ---------------------------------------------------------------------------
 * Addresses: IPv4, IPv6, Unix (path or Linux abstract name)
 * ------------------------------------------------------------------------- */

typedef struct blitz_addr {
    uint32_t len; /* bytes of the socket address in `u` (0: none) */
    union {
        uint16_t family;
        unsigned char bytes[128]; /* a struct sockaddr_storage */
        uint64_t blitz__align;
    } u;
} blitz_addr;

/* "1.2.3.4:80", "[::1]:8080", "[fe80::1%2]:80" (the IPv6 scope: a
 * number up to 4294967295, digits only, or an interface name such as
 * "lo"). BLITZ_EINVAL for anything else (missing port, port > 65535, bad
 * address, bad scope; on Windows a scope is a number only). */
BLITZ_API int blitz_addr_parse(const char *s, blitz_addr *out);
/* Splits "host:port" or "[host]:port" (the brackets hold an IPv6 address,
 * which has colons of its own) into `host` (NUL-terminated, at most cap - 1
 * bytes) and `port`. The host is not checked: a name or an address.
 * BLITZ_EINVAL for a missing or bad port, an empty or too long host, or
 * an IPv6 address without brackets. */
BLITZ_API int blitz_host_port_split(const char *s, char *host, size_t cap, uint16_t *port);
/* An IP literal ("127.0.0.1", "::1") and a port. */
BLITZ_API int blitz_addr_ip(const char *ip, uint16_t port, blitz_addr *out);
/* A Unix socket path; a leading '@' makes a Linux abstract name.
 * BLITZ_EINVAL when empty or too long: a path has at most 107 bytes (its
 * terminator fills the 108 of sun_path), an abstract name at most 107
 * after the '@'. */
BLITZ_API int blitz_addr_unix(const char *path, blitz_addr *out);
/* "1.2.3.4:80", "[::1]:80", the path, "@name", or "(unnamed)" for a Unix
 * socket with no name (an unbound one's local address, the sender of a
 * datagram from one). Returns the length, or BLITZ_ERANGE (buffer too
 * small; it is still terminated), or BLITZ_EINVAL (NULL argument, size 0,
 * an address of no known family, or a `len` that does not fit it). */
BLITZ_API int blitz_addr_format(const blitz_addr *a, char *buf, size_t size);
/* The port of an IP address, or -1. */
BLITZ_API int blitz_addr_port(const blitz_addr *a);
/* AF_INET, AF_INET6, AF_UNIX, or 0. */
BLITZ_API int blitz_addr_family(const blitz_addr *a);

/* ---------------------------------------------------------------------------
 * Sockets and ops
 * ------------------------------------------------------------------------- */

typedef struct blitz_socket blitz_socket;

/* A buffer for vectored I/O (same layout as struct iovec). */
typedef struct blitz_iovec {
    void *base;
    size_t len;
} blitz_iovec;

/* An I/O op. Fields other than `result` and `socket` are private. It
 * lives in the task's state (zero-filled is ready) and is reused once
 * READY. Every op function wants a non-NULL op (with NULL it is READY at
 * once and does nothing: there is nowhere to put an error). BLITZ_EINVAL
 * as the result for a NULL socket or task context, a NULL buffer with a
 * length, a vectored array that is NULL, empty, longer than 16 or has a
 * NULL base with a length. */
typedef struct blitz_io {
    /* After READY: bytes transferred (0 = end of stream for a receive), 0
     * for accept/connect, or a negative BLITZ_E* code (BLITZ_ECLOSED when
     * the socket was closed, BLITZ_ECANCELED when cancelled). */
    int64_t result;
    /* accept / connect: the new socket (the caller owns it and closes it). */
    blitz_socket *socket;
    struct blitz_io *blitz__next, *blitz__prev;
    blitz_waker blitz__waker;
    blitz_socket *blitz__sock;
    void *blitz__buf;
    size_t blitz__len, blitz__done;
    blitz_addr *blitz__addr;
    int64_t blitz__res;
    uint32_t blitz__state, blitz__kind, blitz__dir, blitz__flags;
    uint32_t blitz__lock;
    uint32_t blitz__sockref; /* the task's reference on blitz__sock (task only) */
    void *blitz__free_after; /* freed by the completion of a cancelled op */
    uint64_t blitz__scratch[18];
    size_t blitz__got; /* recv_exact: bytes already in the buffer */
    /* The call and arguments a blitz_op_sock_* / blitz_op_fd_* constructor
     * recorded: kept apart from the fields above, which a cancelled op's
     * completion may still need while the new op is made. */
    blitz_socket *blitz__arg_sock;
    const void *blitz__arg_buf;
    size_t blitz__arg_len;
    const blitz_addr *blitz__arg_addr;
    int64_t blitz__arg_limit;
    uint32_t blitz__arg_call;
} blitz_io;

/* Options of the listen / bind calls (other bits: BLITZ_EINVAL). */
#define BLITZ_SOCK_REUSEADDR    1u /* SO_REUSEADDR (listeners set it by default) */
#define BLITZ_SOCK_REUSEPORT    2u /* SO_REUSEPORT */
#define BLITZ_SOCK_V6ONLY       4u /* IPV6_V6ONLY */
#define BLITZ_SOCK_NO_REUSEADDR 8u

/* Cancels a pending op: afterwards it holds no reference on the task and
 * the task is not woken for it. With io_uring and IOCP an op already in
 * the kernel is cancelled asynchronously: its buffer stays the kernel's
 * until the cancellation completes, so reuse the buffer only after
 * blitz_io_settle is READY (polling the same op again also waits for it).
 * Safe to call on an idle or finished op, and with op or cx NULL. A
 * blitz_cancel_fn (op is the blitz_io): pass it to blitz_timeout_op and
 * blitz_op_make, call it from spawn cancel hooks. */
BLITZ_API void blitz_io_cancel(blitz_cx *cx, void *op);
/* READY once the kernel holds nothing of the op (always READY except
 * after a cancel of an io_uring op whose completion has not arrived).
 * Then a cancelled send that had sent bytes (the kernel performed it
 * before the cancel reached it, or part of a send_all went out) has that
 * count in `result` instead of BLITZ_ECANCELED. A cancelled receive's
 * result stays BLITZ_ECANCELED; bytes it had received go to the next
 * receive on the socket. */
BLITZ_API blitz_poll blitz_io_settle(blitz_cx *cx, blitz_io *op);
/* Nonzero while the op waits (registered or in flight). */
BLITZ_API int blitz_io_pending(const blitz_io *op);

/* TCP listener: socket, SO_REUSEADDR (unless BLITZ_SOCK_NO_REUSEADDR),
 * bind, listen(backlog; 0 = SOMAXCONN). `flags`: BLITZ_SOCK_* bits.
 * BLITZ_EINVAL for a NULL argument, a negative backlog, unknown flags or a
 * Unix address (use blitz_unix_listen); bind errors as BLITZ_E* codes
 * (BLITZ_EADDRINUSE, ...). A receive on a listener (TCP or Unix) is
 * READY at once with BLITZ_ENOTCONN. */
BLITZ_API int blitz_tcp_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                               unsigned flags, blitz_socket **out);
/* Await a connection: op->socket is the new socket (result 0), or result
 * < 0 (BLITZ_EMFILE when out of descriptors: the listener stays usable;
 * sleep a little and accept again; BLITZ_ENOMEM: a connection arrived but
 * could not be kept, and its client sees it closed). On io_uring the listener's multishot
 * accept counts against the descriptor limit that held when it was armed
 * (the first accept): lower RLIMIT_NOFILE before listening. */
BLITZ_API blitz_poll blitz_sock_accept(blitz_cx *cx, blitz_io *op, blitz_socket *listener);
/* blitz_sock_accept as a blitz_op (cancel: blitz_io_cancel). */
BLITZ_API blitz_op blitz_op_sock_accept(blitz_io *io, blitz_socket *listener);
/* Await a connection to `addr` (copied): op->socket (result 0) or an error
 * (BLITZ_ECONNREFUSED, ...). */
BLITZ_API blitz_poll blitz_tcp_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr);
/* blitz_tcp_connect with a time limit: result BLITZ_ETIMEDOUT (and the
 * half-open socket closed) when the connection is not made within
 * timeout_ns; timeout_ns <= 0 is no limit. On io_uring the kernel times it
 * (a LINK_TIMEOUT linked to the CONNECT: no timer, one submission) when
 * the op starts on a worker or the current-thread driver; otherwise, and
 * while the runtime's clock is paused, the runtime's timer does. Cancel
 * with blitz_io_cancel as any op. */
BLITZ_API blitz_poll blitz_tcp_connect_timeout(blitz_cx *cx, blitz_io *op, const blitz_addr *addr,
                                               int64_t timeout_ns);
/* The connects as blitz_ops (cancel: blitz_io_cancel); `addr` must stay
 * valid until the op's first poll. */
BLITZ_API blitz_op blitz_op_tcp_connect(blitz_io *io, const blitz_addr *addr);
BLITZ_API blitz_op blitz_op_tcp_connect_timeout(blitz_io *io, const blitz_addr *addr,
                                                int64_t timeout_ns);

/* Stream and datagram transfers (TCP, Unix stream, connected UDP / Unix
 * datagram). recv: result 0 at end of stream (a stream receive of len 0
 * is READY at once with 0); on a datagram socket it takes one datagram,
 * truncated to len without notice, and 0 may be an empty datagram.
 * BLITZ_ENOMEM from a stream receive: received data could not be kept
 * (io_uring), and every later receive fails so; close the connection.
 * send: may be partial.
 * send_all: READY when all `len` bytes went out, or with the error (the
 * bytes sent so far are lost to the caller; result is the error).
 * recv_exact (stream sockets): READY when `len` bytes are in buf (result
 * len), at end of stream (result: the bytes that came, fewer than len),
 * or with an error. A cancelled one keeps what it had received: after
 * blitz_io_settle its result is that count (at the start of buf) if any,
 * and bytes in flight go to the next receive, as for recv. */
BLITZ_API blitz_poll blitz_sock_recv(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                     size_t len);
BLITZ_API blitz_poll blitz_sock_send(blitz_cx *cx, blitz_io *op, blitz_socket *s, const void *buf,
                                     size_t len);
BLITZ_API blitz_poll blitz_sock_send_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                         const void *buf, size_t len);
BLITZ_API blitz_poll blitz_sock_recv_exact(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                           size_t len);
/* A receive into a buffer the runtime lends, so a connection waiting for
 * data holds no receive buffer of its own:
 *
 *   BLITZ_AWAIT(s, blitz_sock_recv_buf(cx, &s->op, s->sock, &s->in));
 *   if (s->op.result <= 0) ...          // as blitz_sock_recv: nothing held
 *   ... s->in.data, s->in.len ...       // the task's until it releases it
 *   blitz_buf_release(&s->in);
 *
 * READY with `result` > 0: `out` views that many bytes (at most
 * BLITZ_RECV_BUF_SIZE, 16 KiB; BLITZ_URING_RECV_BUF_SIZE, 4 KiB, for a
 * provided buffer on io_uring TCP sockets), writable, owned by the task
 * until blitz_buf_release. With 0
 * (end of stream) or an error nothing is held. The op waits with no
 * buffer; it takes one only when data is there. On io_uring TCP sockets
 * the buffer is the one the kernel received into (no copy); elsewhere the
 * runtime's pool serves it. Buffers never run out: when the io_uring pool
 * is empty (tasks hold its buffers) receives go on from the heap pool.
 * `out` (zero-filled, or released) stays in place until READY; starting
 * one with a view that still holds a buffer is BLITZ_EINVAL. Cancel with
 * blitz_io_cancel: nothing is held then. A datagram longer than the
 * buffer is truncated. Mixing it with other receives on one socket keeps
 * the order of the bytes. */
typedef struct blitz_buf {
    char *data;
    size_t len;
    void *blitz__owner;
    uint32_t blitz__id, blitz__kind;
} blitz_buf;
BLITZ_API blitz_poll blitz_sock_recv_buf(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                         blitz_buf *out);
BLITZ_API blitz_op blitz_op_sock_recv_buf(blitz_io *io, blitz_socket *s, blitz_buf *out);
/* Gives a lent buffer back (any thread; the socket may be closed by
 * then, the runtime must not be freed yet) and empties the view. Nothing
 * happens for an empty view or NULL. */
BLITZ_API void blitz_buf_release(blitz_buf *b);
/* Vectored: `iov` (at most 16 entries) must stay valid until READY. */
BLITZ_API blitz_poll blitz_sock_recvv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt);
BLITZ_API blitz_poll blitz_sock_sendv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt);
/* The transfers above as blitz_ops (cancel: blitz_io_cancel). */
BLITZ_API blitz_op blitz_op_sock_recv(blitz_io *io, blitz_socket *s, void *buf, size_t len);
BLITZ_API blitz_op blitz_op_sock_send(blitz_io *io, blitz_socket *s, const void *buf, size_t len);
BLITZ_API blitz_op blitz_op_sock_send_all(blitz_io *io, blitz_socket *s, const void *buf,
                                          size_t len);
BLITZ_API blitz_op blitz_op_sock_recv_exact(blitz_io *io, blitz_socket *s, void *buf, size_t len);
BLITZ_API blitz_op blitz_op_sock_recvv(blitz_io *io, blitz_socket *s, const blitz_iovec *iov,
                                       int iovcnt);
BLITZ_API blitz_op blitz_op_sock_sendv(blitz_io *io, blitz_socket *s, const blitz_iovec *iov,
                                       int iovcnt);

/* Shuts down reading (0), writing (1, sends FIN: half-close) or both (2). */
BLITZ_API int blitz_sock_shutdown(blitz_socket *s, int how);
/* Closes: pending ops complete with BLITZ_ECLOSED; the descriptor is
 * closed once no op uses it any more (the kernel's, or a task's in the
 * middle of its system call), whether or not the ops' tasks ever run
 * again. A listener made by blitz_tcp_listen or blitz_unix_listen refuses
 * new connections from the return on every backend but IOCP (Windows:
 * once its accept's withdrawal is reaped); an adopted one on io_uring may
 * still take (and reset) some until its accept's cancel completes. Any thread may close while
 * tasks' ops are in progress. The handle may be freed by the call: using it after (a new op, a
 * second close) is a use after free, as with free(3). So a connection whose task loops over ops is
 * closed by that task. To end it from elsewhere, cancel the task (its pending op is withdrawn;
 * close the socket when the task ends, e.g. in its drop function), race its ops against a
 * cancellation token, or call blitz_sock_shutdown(s, 2) while the handle
 * is known to be open (e.g. under the lock of a table the task leaves
 * before it closes): the task's receive sees end of stream, its sends
 * fail, and it closes. On a current-thread runtime, completions are only
 * collected while a thread drives it (blitz_runtime_run, blitz_join_blocking;
 * once more as the drive returns) or at blitz_runtime_free: a socket
 * closed from elsewhere with an op in the kernel keeps its descriptor
 * until then. A listener's address is free for a new listen of the same
 * runtime as soon as the close returns (a listen retries for up to 200 ms
 * while a socket just closed still holds it); another process may find
 * it taken for a moment. */
BLITZ_API int blitz_sock_close(blitz_socket *s);
#if !defined(_WIN32) /* a SOCKET does not fit an int */
/* The descriptor (for options blitz does not wrap), or -1. */
BLITZ_API int blitz_sock_fd(const blitz_socket *s);
#endif
BLITZ_API int blitz_sock_local_addr(const blitz_socket *s, blitz_addr *out);
BLITZ_API int blitz_sock_peer_addr(const blitz_socket *s, blitz_addr *out);

/* Options (BLITZ_OK or a BLITZ_E* code). */
BLITZ_API int blitz_tcp_set_nodelay(blitz_socket *s, int on);
BLITZ_API int blitz_tcp_nodelay(const blitz_socket *s); /* 1, 0, or < 0 */
/* Keepalive on/off; idle_secs > 0 also sets TCP_KEEPIDLE (TCP only: on
 * another socket that fails with a BLITZ_E* code and nothing is changed). */
BLITZ_API int blitz_tcp_set_keepalive(blitz_socket *s, int on, int idle_secs);
/* SO_LINGER: on with 0 seconds makes close send a reset. */
BLITZ_API int blitz_sock_set_linger(blitz_socket *s, int on, int secs);
BLITZ_API int blitz_sock_set_recv_buffer(blitz_socket *s, int bytes);
BLITZ_API int blitz_sock_set_send_buffer(blitz_socket *s, int bytes);
BLITZ_API int blitz_sock_recv_buffer(const blitz_socket *s); /* bytes or < 0 */
BLITZ_API int blitz_sock_send_buffer(const blitz_socket *s);

/* UDP: bind (port 0 = any). The datagram calls below work on Unix datagram
 * sockets too; blitz_sock_connect_dgram sets the default peer (sync). */
BLITZ_API int blitz_udp_bind(blitz_runtime *rt, const blitz_addr *addr, unsigned flags,
                             blitz_socket **out);
BLITZ_API int blitz_sock_connect_dgram(blitz_socket *s, const blitz_addr *addr);
/* Datagram to `to` (must stay valid until READY); from: the sender
 * (optional; must stay valid until READY). A datagram longer than `len`
 * is truncated to `len` without notice (the rest is dropped), as with
 * blitz_sock_recv. */
BLITZ_API blitz_poll blitz_sock_send_to(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                        const void *buf, size_t len, const blitz_addr *to);
BLITZ_API blitz_poll blitz_sock_recv_from(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                          size_t len, blitz_addr *from);
/* The datagram calls as blitz_ops (cancel: blitz_io_cancel). */
BLITZ_API blitz_op blitz_op_sock_send_to(blitz_io *io, blitz_socket *s, const void *buf, size_t len,
                                         const blitz_addr *to);
BLITZ_API blitz_op blitz_op_sock_recv_from(blitz_io *io, blitz_socket *s, void *buf, size_t len,
                                           blitz_addr *from);
/* Multicast group membership (IPv4 or IPv6 group; interface: an IPv4
 * address literal or NULL for any / an IPv6 interface index as text,
 * digits only, or NULL for any). BLITZ_EINVAL for a bad group or
 * interface. */
BLITZ_API int blitz_udp_join_multicast(blitz_socket *s, const char *group, const char *iface);
BLITZ_API int blitz_udp_leave_multicast(blitz_socket *s, const char *group, const char *iface);
BLITZ_API int blitz_udp_set_multicast_loop(blitz_socket *s, int on);
BLITZ_API int blitz_udp_set_broadcast(blitz_socket *s, int on);

#if !defined(_WIN32) /* not on Windows yet: see PLATFORMS in the manual */
/* Unix sockets: stream listener (accept with blitz_sock_accept) and
 * connect (the op form, like TCP), datagram sockets (bound to addr, or
 * unbound with addr NULL). A path listener unlinks a stale socket file
 * first (a socket nobody has bound: tested with a datagram connect, which
 * neither waits nor reaches a live listener's accept); any other file at
 * the path, or a live socket, stays and the listen fails with
 * BLITZ_EADDRINUSE. A bound datagram socket unlinks nothing (remove its
 * path yourself: a second bind while the file exists is
 * BLITZ_EADDRINUSE). */
BLITZ_API int blitz_unix_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                                blitz_socket **out);
BLITZ_API blitz_poll blitz_unix_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr);
/* blitz_unix_connect as a blitz_op (as blitz_op_tcp_connect). */
BLITZ_API blitz_op blitz_op_unix_connect(blitz_io *io, const blitz_addr *addr);
BLITZ_API int blitz_unix_dgram(blitz_runtime *rt, const blitz_addr *addr, blitz_socket **out);
/* A connected pair of Unix stream (type 1) or datagram (type 2) sockets. */
BLITZ_API int blitz_unix_pair(blitz_runtime *rt, int type, blitz_socket **a, blitz_socket **b);
#endif

/* Adopts an existing descriptor (made non-blocking and close-on-exec);
 * blitz closes it with the socket. On failure the descriptor stays the
 * caller's, its flags as they were: BLITZ_EPERM for a regular file or a
 * directory (never anything to wait for; use the file ops of api_pool.h),
 * and on epoll for other descriptors it cannot watch (/dev/null).
 * Windows: fd is a C runtime descriptor (_open_osfhandle) of a socket or
 * of a pipe end opened for overlapped I/O (else BLITZ_EINVAL); its handle
 * is duplicated, then the descriptor closed. BLITZ_EBADF for a descriptor
 * that is not open, BLITZ_EPERM for files and consoles. */
BLITZ_API int blitz_sock_adopt(blitz_runtime *rt, int fd, blitz_socket **out);
