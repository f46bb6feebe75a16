/* Sockets on the completion port (Windows): the kernel side of the IOCP
 * backend's socket ops.
 *
 * A socket is overlapped (WSA_FLAG_OVERLAPPED), attached to its runtime's
 * port once, and set to FILE_SKIP_COMPLETION_PORT_ON_SUCCESS: a start that
 * succeeds at once gives its result and queues no packet, so only a
 * pending op completes through the port (blitz__iocp_reap, iocp.c, calls
 * its `done`). From a pending start until that packet the kernel owns the
 * op and its buffers, even after a cancel: CancelIoEx only asks, and the
 * cancelled op's packet still comes (BLITZ_ECANCELED, or its result if it
 * finished first) -- the lifetime rule of the io_uring backend.
 *
 * Every start returns 1 when a packet is due, or 0 with *res set: bytes
 * (>= 0; 0 from a receive is the end of the stream) or a code. AcceptEx
 * and ConnectEx are the provider's extension functions, asked of the
 * socket itself (WSAIoctl SIO_GET_EXTENSION_FUNCTION_POINTER; no table
 * kept between calls). Their sockets need blitz__iocp_accept_done or
 * blitz__iocp_connect_done once connected, before shutdown, getpeername
 * and the like work on them.
 *
 * A pipe end (blitz_pipe, an adopted pipe: a blitz_socket of family
 * AF_UNSPEC) is an overlapped HANDLE on the same port: the descriptor ops
 * use ReadFile / WriteFile on it (on a socket, WSARecv / WSASend), and
 * its hang-up is the end of the stream for a read, BLITZ_EPIPE for a
 * write. Readable is a read of nothing, which completes once data or the
 * end is there (POLLIN / POLLHUP); writable is ready at once (POLLOUT):
 * a write that finds the pipe full stays pending in the kernel instead of
 * failing, so there is no full state to wait out. */
/* The IOCP backend's submit and cancel of the driver's ops (driver.c)
 * come last: each pending op has a record of its own on the heap (the
 * overlapped, the accepted socket and its address room), freed after its
 * packet is settled, since the op's scratch holds a connect's address
 * and limit. */
#include "io.h"

#if BLITZ__WIN32

/* An overlapped socket, not inherited by child processes: 0 or a code. */
BLITZ_PRIVATE int blitz__iocp_open(int family, int type, SOCKET *out) {
    int rc = blitz__winsock_start();
    if (rc)
        return rc;
    SOCKET s =
        WSASocketW(family, type, 0, NULL, 0, WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
    if (s == INVALID_SOCKET)
        return blitz__from_win32((DWORD)WSAGetLastError());
    *out = s;
    return 0;
}

/* Attaches s to io's port, its successes queueing no packet: 0 or a code.
 * Non-blocking too: a lent-buffer receive's own recv must not wait (the
 * overlapped calls are not affected). */
BLITZ_PRIVATE int blitz__iocp_attach(blitz__io *io, SOCKET s) {
    u_long on = 1;
    if (ioctlsocket(s, FIONBIO, &on) != 0)
        return blitz__from_win32((DWORD)WSAGetLastError());
    if (!CreateIoCompletionPort((HANDLE)s, (HANDLE)io->port, 0, 0) ||
        !SetFileCompletionNotificationModes((HANDLE)s, FILE_SKIP_COMPLETION_PORT_ON_SUCCESS |
                                                           FILE_SKIP_SET_EVENT_ON_HANDLE))
        return blitz__from_win32(GetLastError());
    return 0;
}

/* Attaches a pipe end to io's port, as blitz__iocp_attach does a socket. */
BLITZ_PRIVATE int blitz__iocp_attach_handle(blitz__io *io, HANDLE h) {
    if (!CreateIoCompletionPort(h, (HANDLE)io->port, 0, 0) ||
        !SetFileCompletionNotificationModes(h, FILE_SKIP_COMPLETION_PORT_ON_SUCCESS |
                                                   FILE_SKIP_SET_EVENT_ON_HANDLE))
        return blitz__from_win32(GetLastError());
    return 0;
}

/* Both: 0 or a code (the socket closed). */
BLITZ_PRIVATE int blitz__iocp_socket(blitz__io *io, int family, int type, SOCKET *out) {
    int rc = blitz__iocp_open(family, type, out);
    if (rc)
        return rc;
    rc = blitz__iocp_attach(io, *out);
    if (rc)
        closesocket(*out);
    return rc;
}

/* The op's start: pending (1) or done at once (0, *res set). */
static int blitz__iocp_started(int failed, DWORD bytes, int64_t *res) {
    if (!failed) {
        *res = (int64_t)bytes;
        return 0;
    }
    int e = WSAGetLastError();
    if (e == WSA_IO_PENDING)
        return 1;
    *res = blitz__from_win32((DWORD)e);
    return 0;
}

static void blitz__iocp_prepare(blitz__iocp_op *op, SOCKET s) {
    memset(&op->ov, 0, sizeof op->ov);
    op->sock = s;
    op->flags = 0;
    op->handle = 0;
}

/* A pipe end's ReadFile or WriteFile: pending (1) or done at once (0). */
static int blitz__iocp_file(blitz__iocp_op *op, HANDLE h, char *buf, DWORD len, int writing,
                            int64_t *res) {
    blitz__iocp_prepare(op, (SOCKET)h);
    op->handle = 1;
    DWORD n = 0;
    BOOL ok = writing ? WriteFile(h, buf, len, &n, &op->ov) : ReadFile(h, buf, len, &n, &op->ov);
    if (ok) {
        *res = (int64_t)n;
        return 0;
    }
    DWORD e = GetLastError();
    if (e == ERROR_IO_PENDING)
        return 1;
    *res = e == ERROR_HANDLE_EOF ? BLITZ_EPIPE : blitz__from_win32(e);
    return 0;
}

/* Receives into n buffers (the array itself may go once this returns:
 * the provider copies it). */
BLITZ_PRIVATE int blitz__iocp_recv(blitz__iocp_op *op, SOCKET s, WSABUF *bufs, DWORD n,
                                   int64_t *res) {
    blitz__iocp_prepare(op, s);
    DWORD got = 0;
    int r = WSARecv(s, bufs, n, &got, &op->flags, &op->ov, NULL);
    return blitz__iocp_started(r != 0, got, res);
}

BLITZ_PRIVATE int blitz__iocp_send(blitz__iocp_op *op, SOCKET s, WSABUF *bufs, DWORD n,
                                   int64_t *res) {
    blitz__iocp_prepare(op, s);
    DWORD sent = 0;
    int r = WSASend(s, bufs, n, &sent, 0, &op->ov, NULL);
    return blitz__iocp_started(r != 0, sent, res);
}

/* A datagram and its sender's address into `from` (`cap` bytes), which
 * stays the kernel's until the packet, like op->from_len. */
BLITZ_PRIVATE int blitz__iocp_recv_from(blitz__iocp_op *op, SOCKET s, WSABUF *buf,
                                        struct sockaddr *from, int cap, int64_t *res) {
    blitz__iocp_prepare(op, s);
    op->from_len = cap;
    DWORD got = 0;
    int r = WSARecvFrom(s, buf, 1, &got, &op->flags, from, &op->from_len, &op->ov, NULL);
    return blitz__iocp_started(r != 0, got, res);
}

BLITZ_PRIVATE int blitz__iocp_send_to(blitz__iocp_op *op, SOCKET s, WSABUF *buf,
                                      const struct sockaddr *to, int to_len, int64_t *res) {
    blitz__iocp_prepare(op, s);
    DWORD sent = 0;
    int r = WSASendTo(s, buf, 1, &sent, 0, to, to_len, &op->ov, NULL);
    return blitz__iocp_started(r != 0, sent, res);
}

/* The provider's extension function `id` for socket s, or NULL. */
static void *blitz__iocp_ext(SOCKET s, GUID id) {
    void *fn = NULL;
    DWORD bytes = 0;
    if (WSAIoctl(s, SIO_GET_EXTENSION_FUNCTION_POINTER, &id, sizeof id, &fn, sizeof fn, &bytes,
                 NULL, NULL) != 0)
        return NULL;
    return fn;
}

/* Accepts a connection of `listener` into `accepted` (a new socket of
 * the same family): `addrs` receives both ends' addresses and stays the
 * kernel's until the packet. */
BLITZ_PRIVATE int blitz__iocp_accept(blitz__iocp_op *op, SOCKET listener, SOCKET accepted,
                                     void *addrs, int64_t *res) {
    GUID id = WSAID_ACCEPTEX;
    LPFN_ACCEPTEX accept_ex;
    void *fn = blitz__iocp_ext(listener, id);
    if (!fn) {
        *res = blitz__from_win32((DWORD)WSAGetLastError());
        return 0;
    }
    memcpy(&accept_ex, &fn, sizeof fn);
    blitz__iocp_prepare(op, listener);
    DWORD bytes = 0;
    BOOL ok = accept_ex(listener, accepted, addrs, 0, BLITZ__IOCP_ADDR_SLOT, BLITZ__IOCP_ADDR_SLOT,
                        &bytes, &op->ov);
    return blitz__iocp_started(!ok, bytes, res);
}

/* After an accept: the socket takes the listener's properties. */
BLITZ_PRIVATE int blitz__iocp_accept_done(SOCKET listener, SOCKET accepted) {
    if (setsockopt(accepted, SOL_SOCKET, SO_UPDATE_ACCEPT_CONTEXT, (const char *)&listener,
                   sizeof listener) != 0)
        return blitz__from_win32((DWORD)WSAGetLastError());
    return 0;
}

/* Connects s to `to`; ConnectEx wants a bound socket, so an unbound one
 * is bound to the family's any-address first. */
BLITZ_PRIVATE int blitz__iocp_connect(blitz__iocp_op *op, SOCKET s, const struct sockaddr *to,
                                      int to_len, int64_t *res) {
    struct sockaddr_storage any;
    int any_len = (int)sizeof any;
    if (getsockname(s, (struct sockaddr *)&any, &any_len) != 0) {
        memset(&any, 0, sizeof any);
        any.ss_family = to->sa_family;
        any_len = to->sa_family == AF_INET6 ? (int)sizeof(struct sockaddr_in6)
                                            : (int)sizeof(struct sockaddr_in);
        if (bind(s, (struct sockaddr *)&any, any_len) != 0) {
            *res = blitz__from_win32((DWORD)WSAGetLastError());
            return 0;
        }
    }
    GUID id = WSAID_CONNECTEX;
    LPFN_CONNECTEX connect_ex;
    void *fn = blitz__iocp_ext(s, id);
    if (!fn) {
        *res = blitz__from_win32((DWORD)WSAGetLastError());
        return 0;
    }
    memcpy(&connect_ex, &fn, sizeof fn);
    blitz__iocp_prepare(op, s);
    DWORD bytes = 0;
    BOOL ok = connect_ex(s, to, to_len, NULL, 0, &bytes, &op->ov);
    return blitz__iocp_started(!ok, 0, res);
}

/* After a connect: shutdown, getpeername and the like work from here. */
BLITZ_PRIVATE int blitz__iocp_connect_done(SOCKET s) {
    if (setsockopt(s, SOL_SOCKET, SO_UPDATE_CONNECT_CONTEXT, NULL, 0) != 0)
        return blitz__from_win32((DWORD)WSAGetLastError());
    return 0;
}

/* Asks the kernel to withdraw a pending op. Its packet still comes: the
 * buffers stay alive until then. Not found: it completed already, and
 * its packet is queued. */
BLITZ_PRIVATE void blitz__iocp_cancel(blitz__iocp_op *op) {
    CancelIoEx((HANDLE)op->sock, &op->ov);
}

/* ---- the driver's ops ------------------------------------------------------------- */

typedef struct blitz__iocp_rec {
    blitz__iocp_op op; /* first: the packet names the record */
    blitz_io *owner;
    blitz__io *io;
    size_t want;     /* a datagram receive's room (a longer one is truncated) */
    SOCKET accepted; /* accept: the new socket, INVALID_SOCKET once handed on */
    char addrs[2 * BLITZ__IOCP_ADDR_SLOT];
} blitz__iocp_rec;

/* Where the op keeps its record: a connect's scratch holds its address
 * and limit, and it has no buffer. */
static blitz__iocp_rec **blitz__iocp_slot(blitz_io *op) {
    _Static_assert(sizeof(blitz_addr) <= 17 * sizeof(uint64_t) &&
                       sizeof(((blitz_io *)0)->blitz__scratch) >= 18 * sizeof(uint64_t),
                   "an op's last scratch word is free but for a connect");
    if (op->blitz__kind == BLITZ__OP_CONNECT)
        return (blitz__iocp_rec **)(void *)&op->blitz__buf;
    return (blitz__iocp_rec **)(void *)&op->blitz__scratch[17];
}

/* A buffer's length as Winsock counts it (a longer one is a partial
 * transfer, as POSIX allows). */
static ULONG blitz__iocp_len(size_t len) {
    return len > (size_t)1 << 30 ? (ULONG)1 << 30 : (ULONG)len;
}

/* The op's buffers as WSABUFs (at most BLITZ__IO_MAX_IOV): the count. */
static DWORD blitz__iocp_bufs(const blitz_io *op, WSABUF *b, size_t *total) {
    *total = 0;
    if (op->blitz__kind == BLITZ__OP_RECVV || op->blitz__kind == BLITZ__OP_SENDV) {
        const blitz_iovec *v = (const blitz_iovec *)op->blitz__buf;
        for (size_t i = 0; i < op->blitz__len; i++) {
            b[i].buf = (char *)v[i].base;
            b[i].len = blitz__iocp_len(v[i].len);
            *total += b[i].len;
        }
        return (DWORD)op->blitz__len;
    }
    size_t off = op->blitz__done; /* send_all: what went out already */
    b[0].buf = (char *)op->blitz__buf + off;
    b[0].len = blitz__iocp_len(op->blitz__len - off);
    *total = b[0].len;
    return 1;
}

/* A descriptor op's start: the pipe end's file call or the socket's. */
static int blitz__iocp_fd_start(blitz__iocp_rec *rec, blitz_io *op, int64_t *res) {
    blitz_socket *s = op->blitz__sock;
    WSABUF b[1];
    int writing = op->blitz__kind != BLITZ__OP_FD_READ;
    if (op->blitz__kind == BLITZ__OP_FD_POLL) {
        if (op->blitz__dir == BLITZ__DIR_WRITE) {
            *res = POLLOUT;
            return 0;
        }
        /* A read of nothing: done once there is something to read. */
        writing = 0;
        b[0].buf = NULL;
        b[0].len = 0;
        rec->want = 0;
    } else {
        (void)blitz__iocp_bufs(op, b, &rec->want);
    }
    if (s->family == AF_UNSPEC)
        return blitz__iocp_file(&rec->op, (HANDLE)s->fd, b[0].buf, b[0].len, writing, res);
    if (writing)
        return blitz__iocp_send(&rec->op, s->fd, b, 1, res);
    return blitz__iocp_recv(&rec->op, s->fd, b, 1, res);
}

/* Starts the op's Winsock call: 1 pending, 0 done at once (*res set). */
static int blitz__iocp_start(blitz__iocp_rec *rec, blitz_io *op, int64_t *res) {
    blitz_socket *s = op->blitz__sock;
    WSABUF b[BLITZ__IO_MAX_IOV];
    DWORD n = 0;
    switch (op->blitz__kind) {
    case BLITZ__OP_RECV:
    case BLITZ__OP_RECVV:
        n = blitz__iocp_bufs(op, b, &rec->want);
        return blitz__iocp_recv(&rec->op, s->fd, b, n, res);
    case BLITZ__OP_RECV_FROM:
        n = blitz__iocp_bufs(op, b, &rec->want);
        return blitz__iocp_recv_from(&rec->op, s->fd, b,
                                     (struct sockaddr *)(void *)op->blitz__addr->u.bytes,
                                     (int)sizeof op->blitz__addr->u.bytes, res);
    case BLITZ__OP_SEND:
    case BLITZ__OP_SEND_ALL:
    case BLITZ__OP_SENDV:
        n = blitz__iocp_bufs(op, b, &rec->want);
        return blitz__iocp_send(&rec->op, s->fd, b, n, res);
    case BLITZ__OP_SEND_TO:
        n = blitz__iocp_bufs(op, b, &rec->want);
        return blitz__iocp_send_to(&rec->op, s->fd, b,
                                   (const struct sockaddr *)(const void *)op->blitz__addr->u.bytes,
                                   (int)op->blitz__addr->len, res);
    case BLITZ__OP_RECV_BUF:
        /* A receive of nothing: its packet says data (or the end) is
         * there, and the lent buffer is taken only then. */
        b[0].buf = NULL;
        b[0].len = 0;
        return blitz__iocp_recv(&rec->op, s->fd, b, 1, res);
    case BLITZ__OP_ACCEPT:
        return blitz__iocp_accept(&rec->op, s->fd, rec->accepted, rec->addrs, res);
    case BLITZ__OP_CONNECT: {
        const blitz_addr *a = (const blitz_addr *)(const void *)op->blitz__scratch;
        return blitz__iocp_connect(
            &rec->op, s->fd, (const struct sockaddr *)(const void *)a->u.bytes, (int)a->len, res);
    }
    case BLITZ__OP_FD_READ:
    case BLITZ__OP_FD_WRITE:
    case BLITZ__OP_FD_WRITE_ALL:
    case BLITZ__OP_FD_POLL:
        return blitz__iocp_fd_start(rec, op, res);
    default:
        *res = BLITZ_EOPNOTSUPP;
        return 0;
    }
}

/* The op's outcome (at once or from its packet) as the driver takes it:
 * a connected socket's context updated, an accepted one handed on in the
 * op (scratch[2]), a datagram longer than the buffer truncated, as on
 * POSIX, and the sender's address length noted (scratch[0]). */
static int64_t blitz__iocp_finish(blitz__iocp_rec *rec, blitz_io *op, int64_t res) {
    blitz_socket *s = op->blitz__sock;
    switch (op->blitz__kind) {
    case BLITZ__OP_ACCEPT:
        if (res >= 0)
            res = blitz__iocp_accept_done(s->fd, rec->accepted);
        if (res >= 0) {
            op->blitz__scratch[2] = (uint64_t)rec->accepted;
            rec->accepted = INVALID_SOCKET;
        }
        break;
    case BLITZ__OP_CONNECT:
        if (res >= 0)
            res = blitz__iocp_connect_done(s->fd);
        break;
    case BLITZ__OP_RECV:
    case BLITZ__OP_RECVV:
    case BLITZ__OP_RECV_FROM:
        if (res == BLITZ_EMSGSIZE && s->type == SOCK_DGRAM)
            res = (int64_t)rec->want;
        if (op->blitz__kind == BLITZ__OP_RECV_FROM)
            op->blitz__scratch[0] = (uint64_t)rec->op.from_len;
        break;
    case BLITZ__OP_FD_READ:
        if (res == BLITZ_EPIPE && s->family == AF_UNSPEC)
            res = 0; /* the writer is gone: the end of the stream */
        break;
    case BLITZ__OP_FD_POLL:
        if (op->blitz__dir == BLITZ__DIR_READ && res >= 0)
            res = POLLIN;
        else if (op->blitz__dir == BLITZ__DIR_READ && res == BLITZ_EPIPE)
            res = POLLHUP;
        break;
    default:
        break;
    }
    return res;
}

static void blitz__iocp_rec_free(blitz__iocp_rec *rec) {
    if (rec->accepted != INVALID_SOCKET)
        closesocket(rec->accepted);
    blitz__free(rec);
}

/* An op's packet: settled on the reaping thread. */
static void blitz__iocp_done(blitz__iocp_op *iop, int64_t res) {
    blitz__iocp_rec *rec = (blitz__iocp_rec *)iop;
    blitz_io *op = rec->owner;
    res = blitz__iocp_finish(rec, op, res);
    blitz__io_complete(rec->io, op, (int32_t)res, 0);
    blitz__iocp_rec_free(rec);
}

/* The backend's submit: the Winsock call, which either finishes at once
 * (no packet comes) or leaves the op in flight until its packet. */
BLITZ_PRIVATE blitz_poll blitz__iocp_submit(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__io *io = s->io;
    for (;;) {
        int64_t kept;
        if (blitz__salvage_kind(op->blitz__kind) && blitz__salvage_take(s, op, &kept)) {
            blitz__op_result(op, kept);
            return BLITZ_READY;
        }
        if (op->blitz__kind == BLITZ__OP_RECV_BUF) {
            if (blitz__recv_buf_salvage(s, op, &kept)) {
                blitz__op_result(op, kept);
                return BLITZ_READY;
            }
            kept = blitz__recv_buf_attempt(op);
            if (kept != BLITZ_EAGAIN) {
                blitz__op_result(op, kept);
                return BLITZ_READY;
            }
        }
        blitz__iocp_rec *rec = (blitz__iocp_rec *)blitz__calloc(sizeof *rec);
        if (!rec) {
            blitz__op_result(op, BLITZ_ENOMEM);
            return BLITZ_READY;
        }
        rec->op.done = blitz__iocp_done;
        rec->owner = op;
        rec->io = io;
        rec->accepted = INVALID_SOCKET;
        if (op->blitz__kind == BLITZ__OP_ACCEPT) {
            int rc = blitz__iocp_open(s->family, SOCK_STREAM, &rec->accepted);
            if (rc) {
                blitz__iocp_rec_free(rec);
                blitz__op_result(op, rc);
                return BLITZ_READY;
            }
        }
        blitz__mutex_lock(&s->lock);
        if (s->closed) {
            blitz__mutex_unlock(&s->lock);
            blitz__iocp_rec_free(rec);
            blitz__op_result(op, BLITZ_ECLOSED);
            return BLITZ_READY;
        }
        blitz_waker mine = blitz_cx_waker(cx);
        op->blitz__waker = blitz_waker_clone(&mine);
        *blitz__iocp_slot(op) = rec;
        blitz__op_set_state(op, BLITZ__IO_INFLIGHT);
        blitz__op_link(s, op);
        blitz__sock_ref(s);
        blitz__u64_fetch_add(&io->inflight, 1, BLITZ__RELAXED);
        /* Under the socket's lock, so a close's cancel comes after it. */
        int64_t res = 0;
        if (blitz__iocp_start(rec, op, &res)) {
            blitz__mutex_unlock(&s->lock);
            return BLITZ_PENDING;
        }
        /* Done at once: no packet comes. */
        blitz__op_unlink(s, op);
        blitz_waker w = op->blitz__waker;
        op->blitz__waker = blitz_waker_noop();
        blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELAXED);
        blitz__mutex_unlock(&s->lock);
        blitz_waker_drop(w);
        blitz__sock_unref(s); /* not the last: the task holds one */
        res = blitz__iocp_finish(rec, op, res);
        blitz__iocp_rec_free(rec);
        if (op->blitz__kind == BLITZ__OP_ACCEPT && res >= 0) {
            blitz_socket *ns = NULL;
            res = blitz__sock_wrap(io, (SOCKET)op->blitz__scratch[2], s->family, SOCK_STREAM, &ns);
            op->socket = ns;
        }
        if (op->blitz__kind == BLITZ__OP_RECV_FROM && res >= 0)
            blitz__addr_set_from(op->blitz__addr, (uint32_t)op->blitz__scratch[0], s->family);
        /* A lent-buffer receive whose wait ended at once: its recv now. */
        if (op->blitz__kind == BLITZ__OP_RECV_BUF && res >= 0)
            continue;
        if (blitz__op_result(op, res))
            return BLITZ_READY;
        /* send_all: the rest */
    }
}

/* Asks the kernel to withdraw an op in flight (under the op's lock or
 * its socket's: its record lives until its packet is settled, which
 * takes both). */
BLITZ_PRIVATE void blitz__iocp_op_cancel(blitz__io *io, blitz_io *op) {
    (void)io;
    blitz__iocp_cancel(&(*blitz__iocp_slot(op))->op);
}

#endif /* BLITZ__WIN32 */
