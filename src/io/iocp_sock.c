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
 * and the like work on them. */
#include "io.h"

#if BLITZ__WIN32

/* An overlapped socket attached to io's port, not inherited by child
 * processes: 0 or a code. */
BLITZ_PRIVATE int blitz__iocp_socket(blitz__io *io, int family, int type, SOCKET *out) {
    int rc = blitz__winsock_start();
    if (rc)
        return rc;
    SOCKET s =
        WSASocketW(family, type, 0, NULL, 0, WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
    if (s == INVALID_SOCKET)
        return blitz__from_win32((DWORD)WSAGetLastError());
    if (!CreateIoCompletionPort((HANDLE)s, (HANDLE)io->port, 0, 0) ||
        !SetFileCompletionNotificationModes((HANDLE)s, FILE_SKIP_COMPLETION_PORT_ON_SUCCESS |
                                                           FILE_SKIP_SET_EVENT_ON_HANDLE)) {
        rc = blitz__from_win32(GetLastError());
        closesocket(s);
        return rc;
    }
    *out = s;
    return 0;
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

#endif /* BLITZ__WIN32 */
