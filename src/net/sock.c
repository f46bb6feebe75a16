/* Sockets: creation (TCP listeners, UDP, Unix stream / datagram), options,
 * addresses, shutdown. The transfers are ops (io_driver.c). */
#include "../io/io.h"

#if BLITZ__HAS_SOCKETS

/* The code of the last socket call's failure. */
static int blitz__errno_rc(void) {
#if BLITZ__WIN32
    return blitz__from_win32((DWORD)WSAGetLastError());
#else
    return blitz__from_errno(errno);
#endif
}

static int blitz__sock_new_fd(blitz_runtime *rt, int family, int type, blitz__sock_t *fd) {
    if (!rt)
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    return blitz__sock_open(family, type, fd);
}

static int blitz__setsockopt(blitz__sock_t fd, int level, int name, const void *v, size_t len) {
    return setsockopt(fd, level, name, (const char *)v, (socklen_t)len) < 0 ? blitz__errno_rc()
                                                                            : BLITZ_OK;
}

#define BLITZ__SOCK_FLAGS_ALL \
    (BLITZ_SOCK_REUSEADDR | BLITZ_SOCK_REUSEPORT | BLITZ_SOCK_V6ONLY | BLITZ_SOCK_NO_REUSEADDR)

static int blitz__apply_flags(blitz__sock_t fd, int family, unsigned flags, int listener) {
    int one = 1, rc = BLITZ_OK;
    if (flags & ~BLITZ__SOCK_FLAGS_ALL)
        return BLITZ_EINVAL;
#if BLITZ__WIN32
    /* SO_REUSEADDR there lets another socket take a bound address, and a
     * listener's restart needs nothing: only asked for is it set. */
    (void)listener;
    if (flags & BLITZ_SOCK_REUSEPORT)
        return BLITZ_ENOSYS;
    if (flags & BLITZ_SOCK_REUSEADDR)
        rc = blitz__setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
#else
    if ((listener && !(flags & BLITZ_SOCK_NO_REUSEADDR)) || (flags & BLITZ_SOCK_REUSEADDR))
        rc = blitz__setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (rc == BLITZ_OK && (flags & BLITZ_SOCK_REUSEPORT))
        rc = blitz__setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
#endif
    if (rc == BLITZ_OK && (flags & BLITZ_SOCK_V6ONLY) && family == AF_INET6)
        rc = blitz__setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    return rc;
}

/* Binds a listener's descriptor. A listener of this runtime closed a
 * moment ago may still hold the address (see listener_closed_ns), so
 * EADDRINUSE is retried for up to 200 ms after such a close. */
static int blitz__bind_listener(blitz_runtime *rt, blitz__sock_t fd, const blitz_addr *addr) {
    for (;;) {
        if (bind(fd, (const struct sockaddr *)(const void *)addr->u.bytes, (socklen_t)addr->len) ==
            0)
            return BLITZ_OK;
        int err = blitz__errno_rc();
        if (err != BLITZ_EADDRINUSE ||
            blitz__now_ns() - blitz__u64_load(&rt->io->listener_closed_ns, BLITZ__RELAXED) >
                200000000u)
            return err;
#if BLITZ__WIN32
        Sleep(1);
#else
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
#endif
    }
}

/* A listening descriptor blitz bound as a socket: its receives fail at
 * once with BLITZ_ENOTCONN on every backend (io_uring would wait for a
 * connection). */
static int blitz__listener_wrap(blitz_runtime *rt, blitz__sock_t fd, int family,
                                blitz_socket **out) {
    int rc = blitz__sock_wrap(rt->io, fd, family, SOCK_STREAM, out);
    if (rc == BLITZ_OK) {
        (*out)->listening = 1;
        (*out)->listen_own = 1;
    }
    return rc;
}

/* Binds and listens `fd` unless `rc` already failed, then wraps it; the
 * descriptor is closed on any failure. */
static int blitz__listen_finish(blitz_runtime *rt, blitz__sock_t fd, const blitz_addr *addr,
                                int backlog, int rc, blitz_socket **out) {
    if (rc == BLITZ_OK)
        rc = blitz__bind_listener(rt, fd, addr);
    if (rc == BLITZ_OK && listen(fd, backlog ? backlog : SOMAXCONN) < 0)
        rc = blitz__errno_rc();
    if (rc != BLITZ_OK) {
        blitz__sock_close_raw(fd);
        return rc;
    }
    return blitz__listener_wrap(rt, fd, addr->u.family, out);
}

BLITZ_API int blitz_tcp_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                               unsigned flags, blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!blitz__addr_valid(addr) || (addr->u.family != AF_INET && addr->u.family != AF_INET6) ||
        backlog < 0)
        return BLITZ_EINVAL;
    blitz__sock_t fd;
    int rc = blitz__sock_new_fd(rt, addr->u.family, SOCK_STREAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__apply_flags(fd, addr->u.family, flags, 1);
    return blitz__listen_finish(rt, fd, addr, backlog, rc, out);
}

BLITZ_API int blitz_udp_bind(blitz_runtime *rt, const blitz_addr *addr, unsigned flags,
                             blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!blitz__addr_valid(addr) || (addr->u.family != AF_INET && addr->u.family != AF_INET6))
        return BLITZ_EINVAL;
    blitz__sock_t fd;
    int rc = blitz__sock_new_fd(rt, addr->u.family, SOCK_DGRAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__apply_flags(fd, addr->u.family, flags, 0);
    if (rc == BLITZ_OK &&
        bind(fd, (const struct sockaddr *)(const void *)addr->u.bytes, (socklen_t)addr->len) < 0)
        rc = blitz__errno_rc();
#if BLITZ__WIN32
    /* A port-unreachable answer to an earlier send would fail the next
     * receive with WSAECONNRESET: POSIX UDP sockets never see it. */
    BOOL off = FALSE;
    DWORD got = 0;
    if (rc == BLITZ_OK &&
        WSAIoctl(fd, SIO_UDP_CONNRESET, &off, sizeof off, NULL, 0, &got, NULL, NULL) != 0)
        rc = blitz__errno_rc();
#endif
    if (rc != BLITZ_OK) {
        blitz__sock_close_raw(fd);
        return rc;
    }
    return blitz__sock_wrap(rt->io, fd, addr->u.family, SOCK_DGRAM, out);
}

BLITZ_API int blitz_sock_connect_dgram(blitz_socket *s, const blitz_addr *addr) {
    BLITZ__SOCK_CHECK(s);
    if (!s || !blitz__addr_valid(addr))
        return BLITZ_EINVAL;
    if (connect(s->fd, (const struct sockaddr *)(const void *)addr->u.bytes, (socklen_t)addr->len) <
        0)
        return blitz__errno_rc();
    return BLITZ_OK;
}

#if BLITZ__HAS_IO /* Unix sockets and descriptors: POSIX */

BLITZ_API int blitz_unix_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                                blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!blitz__addr_valid(addr) || addr->u.family != AF_UNIX || backlog < 0)
        return BLITZ_EINVAL;
    int fd, rc = blitz__sock_new_fd(rt, AF_UNIX, SOCK_STREAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    const struct sockaddr_un *u = (const struct sockaddr_un *)(const void *)addr->u.bytes;
    /* The path as bind takes it: at most len's bytes, terminated here. */
    char path[sizeof u->sun_path + 1];
    size_t plen = addr->len - offsetof(struct sockaddr_un, sun_path);
    memcpy(path, u->sun_path, plen);
    path[plen] = 0;
    struct stat st;
    if (path[0] && lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        /* A stale socket file from an earlier run: nobody listens on it.
         * Never another kind of file (a connect to a regular file is
         * refused too), which bind then reports as in use. */
        int t = blitz__socket_open(AF_UNIX, SOCK_DGRAM, 0);
        if (t >= 0) {
            /* A datagram probe: only a file no socket is bound to refuses
             * it; a live stream listener answers EPROTOTYPE at once, so the
             * probe neither waits on a full backlog nor hands the listener
             * a connection. */
            if (connect(t, (const struct sockaddr *)u, addr->len) < 0 && errno == ECONNREFUSED)
                unlink(path);
            close(t);
        }
    }
    return blitz__listen_finish(rt, fd, addr, backlog, BLITZ_OK, out);
}

BLITZ_API int blitz_unix_dgram(blitz_runtime *rt, const blitz_addr *addr, blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (addr && (!blitz__addr_valid(addr) || addr->u.family != AF_UNIX))
        return BLITZ_EINVAL;
    int fd, rc = blitz__sock_new_fd(rt, AF_UNIX, SOCK_DGRAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    if (addr && bind(fd, (const struct sockaddr *)(const void *)addr->u.bytes, addr->len) < 0) {
        rc = blitz__errno_rc();
        close(fd);
        return rc;
    }
    return blitz__sock_wrap(rt->io, fd, AF_UNIX, SOCK_DGRAM, out);
}

BLITZ_API int blitz_unix_pair(blitz_runtime *rt, int type, blitz_socket **a, blitz_socket **b) {
    if (!a || !b)
        return BLITZ_EINVAL;
    *a = *b = NULL;
    if (!rt || (type != 1 && type != 2))
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    int sv[2];
    int st = type == 1 ? SOCK_STREAM : SOCK_DGRAM;
    int prc = blitz__socketpair_open(AF_UNIX, st, 1, sv);
    if (prc != BLITZ_OK)
        return prc;
    int rc = blitz__sock_wrap(rt->io, sv[0], AF_UNIX, st, a);
    if (rc != BLITZ_OK) {
        close(sv[1]);
        return rc;
    }
    rc = blitz__sock_wrap(rt->io, sv[1], AF_UNIX, st, b);
    if (rc != BLITZ_OK) {
        blitz_sock_close(*a);
        *a = NULL;
    }
    return rc;
}

BLITZ_API int blitz_sock_adopt(blitz_runtime *rt, int fd, blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!rt || fd < 0)
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return blitz__errno_rc();
    /* Always "ready": nothing to wait for (epoll refuses them). */
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
        return BLITZ_EPERM;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return blitz__errno_rc();
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int family = AF_UNSPEC, type = SOCK_STREAM, listening = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        family = ss.ss_family;
    socklen_t ol = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ol);
    ol = sizeof listening;
    if (family != AF_UNSPEC && getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ol) < 0)
        listening = 0;
    int rc = blitz__sock_wrap_keep(rt->io, fd, family, type, out);
    if (rc != BLITZ_OK) {
        fcntl(fd, F_SETFL, fl); /* still the caller's, as it was */
        return rc;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    (*out)->listening = listening != 0;
    return BLITZ_OK;
}

BLITZ_API int blitz_sock_fd(const blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return s ? s->fd : -1;
}
#endif /* BLITZ__HAS_IO */

#if BLITZ__WIN32
/* Whether h was opened for overlapped I/O: FileModeInformation (16)
 * without FILE_SYNCHRONOUS_IO_ALERT / _NONALERT (0x30). Taken for yes
 * when ntdll does not answer. */
typedef LONG(NTAPI *blitz__nt_query_file)(HANDLE, void *, void *, ULONG, ULONG);
static int blitz__handle_overlapped(HANDLE h) {
    HMODULE nt = GetModuleHandleW(L"ntdll.dll");
    FARPROC fp = nt ? GetProcAddress(nt, "NtQueryInformationFile") : NULL;
    if (!fp)
        return 1;
    blitz__nt_query_file query;
    memcpy(&query, &fp, sizeof query);
    ULONG_PTR status_block[2] = {0, 0};
    ULONG mode = 0;
    if (query(h, status_block, &mode, sizeof mode, 16) < 0)
        return 1;
    return (mode & 0x30) == 0;
}

/* The descriptor's handle is duplicated and wrapped, and only once that
 * worked is the descriptor closed: on failure it stays the caller's. */
BLITZ_API int blitz_sock_adopt(blitz_runtime *rt, int fd, blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!rt || fd < 0)
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    if (h == INVALID_HANDLE_VALUE || !h)
        return BLITZ_EBADF;
    /* Files and consoles: nothing to wait for, as regular files on POSIX. */
    if (GetFileType(h) != FILE_TYPE_PIPE)
        return BLITZ_EPERM;
    int rc = blitz__winsock_start();
    if (rc)
        return rc;
    int type = 0, len = (int)sizeof type;
    if (getsockopt((SOCKET)h, SOL_SOCKET, SO_TYPE, (char *)&type, &len) != 0) {
        /* A pipe end. */
        if (!blitz__handle_overlapped(h))
            return BLITZ_EINVAL;
        HANDLE d = NULL;
        if (!DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &d, 0, FALSE,
                             DUPLICATE_SAME_ACCESS))
            return blitz__from_win32(GetLastError());
        rc = blitz__sock_wrap_keep(rt->io, (blitz__sock_t)d, AF_UNSPEC, SOCK_STREAM, out);
        if (rc != BLITZ_OK) {
            CloseHandle(d);
            return rc;
        }
        _close(fd);
        return BLITZ_OK;
    }
    WSAPROTOCOL_INFOW info;
    if (WSADuplicateSocketW((SOCKET)h, GetCurrentProcessId(), &info) != 0)
        return blitz__errno_rc();
    SOCKET ns = WSASocketW(FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO, &info, 0,
                           WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
    if (ns == INVALID_SOCKET)
        return blitz__errno_rc();
    int listening = 0;
    len = (int)sizeof listening;
    if (getsockopt(ns, SOL_SOCKET, SO_ACCEPTCONN, (char *)&listening, &len) != 0)
        listening = 0;
    rc = blitz__sock_wrap_keep(rt->io, ns, info.iAddressFamily, info.iSocketType, out);
    if (rc != BLITZ_OK) {
        closesocket(ns);
        return rc;
    }
    (*out)->listening = listening != 0;
    _close(fd);
    return BLITZ_OK;
}
#endif

BLITZ_API int blitz_sock_shutdown(blitz_socket *s, int how) {
    BLITZ__SOCK_CHECK(s);
    if (!s || how < 0 || how > 2)
        return BLITZ_EINVAL;
    int h = how == 0 ? SHUT_RD : how == 1 ? SHUT_WR : SHUT_RDWR;
    return shutdown(s->fd, h) < 0 ? blitz__errno_rc() : BLITZ_OK;
}

/* The socket's own address, or its peer's. */
static int blitz__sock_name(const blitz_socket *s, blitz_addr *out, int peer) {
    if (!s || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    socklen_t l = sizeof out->u.bytes;
    struct sockaddr *sa = (struct sockaddr *)(void *)out->u.bytes;
    if ((peer ? getpeername(s->fd, sa, &l) : getsockname(s->fd, sa, &l)) < 0)
        return blitz__errno_rc();
    out->len = l;
    return BLITZ_OK;
}

BLITZ_API int blitz_sock_local_addr(const blitz_socket *s, blitz_addr *out) {
    BLITZ__SOCK_CHECK(s);
    return blitz__sock_name(s, out, 0);
}

BLITZ_API int blitz_sock_peer_addr(const blitz_socket *s, blitz_addr *out) {
    BLITZ__SOCK_CHECK(s);
    return blitz__sock_name(s, out, 1);
}

static int blitz__setopt(blitz_socket *s, int level, int name, int v) {
    if (!s)
        return BLITZ_EINVAL;
    return blitz__setsockopt(s->fd, level, name, &v, sizeof v);
}

static int blitz__getopt(const blitz_socket *s, int level, int name) {
    if (!s)
        return BLITZ_EINVAL;
    int v = 0;
    socklen_t l = sizeof v;
    return getsockopt(s->fd, level, name, (char *)&v, &l) < 0 ? blitz__errno_rc() : v;
}

BLITZ_API int blitz_tcp_set_nodelay(blitz_socket *s, int on) {
    BLITZ__SOCK_CHECK(s);
    return blitz__setopt(s, IPPROTO_TCP, TCP_NODELAY, on != 0);
}
BLITZ_API int blitz_tcp_nodelay(const blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    int v = blitz__getopt(s, IPPROTO_TCP, TCP_NODELAY);
    return v < 0 ? v : v != 0;
}
BLITZ_API int blitz_tcp_set_keepalive(blitz_socket *s, int on, int idle_secs) {
    BLITZ__SOCK_CHECK(s);
    /* The idle time first: on a socket that is not TCP it fails, and then
     * keep-alive stays as it was. */
    if (s && on && idle_secs > 0) {
        int rc = blitz__setopt(s, IPPROTO_TCP, BLITZ__TCP_KEEPIDLE, idle_secs);
        if (rc != BLITZ_OK)
            return rc;
    }
    return blitz__setopt(s, SOL_SOCKET, SO_KEEPALIVE, on != 0);
}
BLITZ_API int blitz_sock_set_linger(blitz_socket *s, int on, int secs) {
    BLITZ__SOCK_CHECK(s);
    if (!s || secs < 0)
        return BLITZ_EINVAL;
    struct linger l;
    l.l_onoff = on != 0;
    l.l_linger = secs;
    return blitz__setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}
BLITZ_API int blitz_sock_set_recv_buffer(blitz_socket *s, int bytes) {
    BLITZ__SOCK_CHECK(s);
    return bytes <= 0 ? BLITZ_EINVAL : blitz__setopt(s, SOL_SOCKET, SO_RCVBUF, bytes);
}
BLITZ_API int blitz_sock_set_send_buffer(blitz_socket *s, int bytes) {
    BLITZ__SOCK_CHECK(s);
    return bytes <= 0 ? BLITZ_EINVAL : blitz__setopt(s, SOL_SOCKET, SO_SNDBUF, bytes);
}
BLITZ_API int blitz_sock_recv_buffer(const blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__getopt(s, SOL_SOCKET, SO_RCVBUF);
}
BLITZ_API int blitz_sock_send_buffer(const blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__getopt(s, SOL_SOCKET, SO_SNDBUF);
}

static int blitz__multicast(blitz_socket *s, const char *group, const char *iface, int join) {
    if (!s || !group)
        return BLITZ_EINVAL;
    struct in_addr g4;
    struct in6_addr g6;
    if (inet_pton(AF_INET, group, &g4) == 1) {
        struct blitz__ip_mreq m;
        memset(&m, 0, sizeof m);
        m.multiaddr = g4;
        m.interface_addr.s_addr = htonl(INADDR_ANY);
        if (iface && inet_pton(AF_INET, iface, &m.interface_addr) != 1)
            return BLITZ_EINVAL;
        return blitz__setsockopt(s->fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP,
                                 &m, sizeof m);
    }
    if (inet_pton(AF_INET6, group, &g6) == 1) {
        struct ipv6_mreq m;
        memset(&m, 0, sizeof m);
        m.ipv6mr_multiaddr = g6;
        uint32_t idx = 0;
        if (iface && !blitz__parse_index(iface, &idx))
            return BLITZ_EINVAL;
        m.ipv6mr_interface = idx;
        return blitz__setsockopt(s->fd, IPPROTO_IPV6,
                                 join ? BLITZ__IPV6_JOIN_GROUP : BLITZ__IPV6_LEAVE_GROUP, &m,
                                 sizeof m);
    }
    return BLITZ_EINVAL;
}

BLITZ_API int blitz_udp_join_multicast(blitz_socket *s, const char *group, const char *iface) {
    BLITZ__SOCK_CHECK(s);
    return blitz__multicast(s, group, iface, 1);
}
BLITZ_API int blitz_udp_leave_multicast(blitz_socket *s, const char *group, const char *iface) {
    BLITZ__SOCK_CHECK(s);
    return blitz__multicast(s, group, iface, 0);
}
BLITZ_API int blitz_udp_set_multicast_loop(blitz_socket *s, int on) {
    BLITZ__SOCK_CHECK(s);
    if (!s)
        return BLITZ_EINVAL;
    if (s->family == AF_INET6)
        return blitz__setopt(s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, on != 0);
    return blitz__setopt(s, IPPROTO_IP, IP_MULTICAST_LOOP, on != 0);
}
BLITZ_API int blitz_udp_set_broadcast(blitz_socket *s, int on) {
    BLITZ__SOCK_CHECK(s);
    return blitz__setopt(s, SOL_SOCKET, SO_BROADCAST, on != 0);
}

/* ---- socket and descriptor ops as values ------------------------------------------------- */

/* What a constructor recorded; the op's poll makes that call on every poll
 * (each call ignores its arguments once the op has started). */
enum {
    BLITZ__OPC_ACCEPT = 1,
    BLITZ__OPC_TCP_CONNECT,
    BLITZ__OPC_TCP_CONNECT_TIMEOUT,
    BLITZ__OPC_UNIX_CONNECT,
    BLITZ__OPC_RECV,
    BLITZ__OPC_SEND,
    BLITZ__OPC_SEND_ALL,
    BLITZ__OPC_RECV_EXACT,
    BLITZ__OPC_RECVV,
    BLITZ__OPC_SENDV,
    BLITZ__OPC_SEND_TO,
    BLITZ__OPC_RECV_FROM,
    BLITZ__OPC_FD_READ,
    BLITZ__OPC_FD_WRITE,
    BLITZ__OPC_FD_WRITE_ALL,
    BLITZ__OPC_FD_READABLE,
    BLITZ__OPC_FD_WRITABLE,
    BLITZ__OPC_RECV_BUF
};

static blitz_poll blitz__io_value_poll(blitz_cx *cx, void *arg) {
    blitz_io *op = (blitz_io *)arg;
    if (!op)
        return BLITZ_READY;
    blitz_socket *s = op->blitz__arg_sock;
    void *buf = (void *)(uintptr_t)op->blitz__arg_buf;
    size_t len = op->blitz__arg_len;
    const blitz_iovec *iov = (const blitz_iovec *)op->blitz__arg_buf;
    switch (op->blitz__arg_call) {
    case BLITZ__OPC_ACCEPT:
        return blitz_sock_accept(cx, op, s);
    case BLITZ__OPC_TCP_CONNECT:
        return blitz_tcp_connect(cx, op, op->blitz__arg_addr);
    case BLITZ__OPC_TCP_CONNECT_TIMEOUT:
        return blitz_tcp_connect_timeout(cx, op, op->blitz__arg_addr, op->blitz__arg_limit);
#if BLITZ__HAS_IO
    case BLITZ__OPC_UNIX_CONNECT:
        return blitz_unix_connect(cx, op, op->blitz__arg_addr);
#endif
    case BLITZ__OPC_RECV:
        return blitz_sock_recv(cx, op, s, buf, len);
    case BLITZ__OPC_SEND:
        return blitz_sock_send(cx, op, s, buf, len);
    case BLITZ__OPC_SEND_ALL:
        return blitz_sock_send_all(cx, op, s, buf, len);
    case BLITZ__OPC_RECV_EXACT:
        return blitz_sock_recv_exact(cx, op, s, buf, len);
    case BLITZ__OPC_RECVV:
        return blitz_sock_recvv(cx, op, s, iov, (int)len);
    case BLITZ__OPC_SENDV:
        return blitz_sock_sendv(cx, op, s, iov, (int)len);
    case BLITZ__OPC_SEND_TO:
        return blitz_sock_send_to(cx, op, s, buf, len, op->blitz__arg_addr);
    case BLITZ__OPC_RECV_FROM:
        return blitz_sock_recv_from(cx, op, s, buf, len,
                                    (blitz_addr *)(uintptr_t)op->blitz__arg_addr);
    case BLITZ__OPC_FD_READ:
        return blitz_fd_read(cx, op, s, buf, len);
    case BLITZ__OPC_FD_WRITE:
        return blitz_fd_write(cx, op, s, buf, len);
    case BLITZ__OPC_FD_WRITE_ALL:
        return blitz_fd_write_all(cx, op, s, buf, len);
    case BLITZ__OPC_FD_READABLE:
        return blitz_fd_readable(cx, op, s);
    case BLITZ__OPC_FD_WRITABLE:
        return blitz_fd_writable(cx, op, s);
    case BLITZ__OPC_RECV_BUF:
        return blitz_sock_recv_buf(cx, op, s, (blitz_buf *)buf);
    default:
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
}

/* Records the call in the op (its own fields: no allocation). A NULL op
 * gives an op that is READY at once, as the calls are with a NULL op. */
static blitz_op blitz__io_value(blitz_io *op, uint32_t call, blitz_socket *s, const void *buf,
                                size_t len, const blitz_addr *addr, int64_t limit) {
    if (op) {
        op->blitz__arg_call = call;
        op->blitz__arg_sock = s;
        op->blitz__arg_buf = buf;
        op->blitz__arg_len = len;
        op->blitz__arg_addr = addr;
        op->blitz__arg_limit = limit;
    }
    return blitz_op_make(blitz__io_value_poll, blitz_io_cancel, op);
}

BLITZ_API blitz_op blitz_op_sock_accept(blitz_io *io, blitz_socket *listener) {
    BLITZ__SOCK_CHECK(listener);
    return blitz__io_value(io, BLITZ__OPC_ACCEPT, listener, NULL, 0, NULL, 0);
}
BLITZ_API blitz_op blitz_op_tcp_connect(blitz_io *io, const blitz_addr *addr) {
    return blitz__io_value(io, BLITZ__OPC_TCP_CONNECT, NULL, NULL, 0, addr, 0);
}
BLITZ_API blitz_op blitz_op_tcp_connect_timeout(blitz_io *io, const blitz_addr *addr,
                                                int64_t timeout_ns) {
    return blitz__io_value(io, BLITZ__OPC_TCP_CONNECT_TIMEOUT, NULL, NULL, 0, addr, timeout_ns);
}
#if BLITZ__HAS_IO
BLITZ_API blitz_op blitz_op_unix_connect(blitz_io *io, const blitz_addr *addr) {
    return blitz__io_value(io, BLITZ__OPC_UNIX_CONNECT, NULL, NULL, 0, addr, 0);
}
#endif
BLITZ_API blitz_op blitz_op_sock_recv(blitz_io *io, blitz_socket *s, void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_RECV, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_recv_buf(blitz_io *io, blitz_socket *s, blitz_buf *out) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_RECV_BUF, s, out, 0, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_send(blitz_io *io, blitz_socket *s, const void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_SEND, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_send_all(blitz_io *io, blitz_socket *s, const void *buf,
                                          size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_SEND_ALL, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_recv_exact(blitz_io *io, blitz_socket *s, void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_RECV_EXACT, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_recvv(blitz_io *io, blitz_socket *s, const blitz_iovec *iov,
                                       int iovcnt) {
    BLITZ__SOCK_CHECK(s);
    /* A negative count stays invalid through the size_t field. */
    return blitz__io_value(io, BLITZ__OPC_RECVV, s, iov, iovcnt < 0 ? 0 : (size_t)iovcnt, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_sendv(blitz_io *io, blitz_socket *s, const blitz_iovec *iov,
                                       int iovcnt) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_SENDV, s, iov, iovcnt < 0 ? 0 : (size_t)iovcnt, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_send_to(blitz_io *io, blitz_socket *s, const void *buf, size_t len,
                                         const blitz_addr *to) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_SEND_TO, s, buf, len, to, 0);
}
BLITZ_API blitz_op blitz_op_sock_recv_from(blitz_io *io, blitz_socket *s, void *buf, size_t len,
                                           blitz_addr *from) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_RECV_FROM, s, buf, len, from, 0);
}
BLITZ_API blitz_op blitz_op_fd_read(blitz_io *io, blitz_socket *s, void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_READ, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_fd_write(blitz_io *io, blitz_socket *s, const void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_WRITE, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_fd_write_all(blitz_io *io, blitz_socket *s, const void *buf,
                                         size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_WRITE_ALL, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_fd_readable(blitz_io *io, blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_READABLE, s, NULL, 0, NULL, 0);
}
BLITZ_API blitz_op blitz_op_fd_writable(blitz_io *io, blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_WRITABLE, s, NULL, 0, NULL, 0);
}

#endif /* BLITZ__HAS_SOCKETS */
