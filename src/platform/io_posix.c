/* Descriptor helpers of the I/O driver that differ by OS: a socket or pipe
 * that is non-blocking and close-on-exec from the start, an accept whose
 * descriptor is too, and sends that never raise SIGPIPE. Where Linux does
 * it in one system call (SOCK_NONBLOCK, accept4, pipe2, MSG_NOSIGNAL) it
 * is used, so no other thread's fork+exec inherits a descriptor between
 * two calls; elsewhere the flags are set right after. */
#include "platform.h"

#if defined(MSG_NOSIGNAL)
#define BLITZ__SEND_NOSIG MSG_NOSIGNAL
#else
#define BLITZ__SEND_NOSIG 0 /* callers block SIGPIPE where it matters */
#endif

/* poll(2)'s event for the peer's end of the stream, 0 where there is none
 * (a readable end of stream still shows as POLLIN). */
#if defined(POLLRDHUP)
static const short blitz__poll_peer_hup = POLLRDHUP;
#else
static const short blitz__poll_peer_hup = 0;
#endif

#if !defined(__linux__)
static int blitz__fd_nb_cloexec(int fd) {
    if (fd < 0)
        return fd;
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}
#endif

/* A non-blocking, close-on-exec socket, or -1 with errno. */
BLITZ_PRIVATE int blitz__socket_nb(int family, int type) {
#if defined(__linux__)
    return socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
#else
    return blitz__fd_nb_cloexec(socket(family, type, 0));
#endif
}

/* accept(2) without the peer's address; the new descriptor is
 * non-blocking and close-on-exec. -1 with errno. */
BLITZ_PRIVATE int blitz__accept_nb(int fd) {
#if defined(__linux__)
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
#else
    return blitz__fd_nb_cloexec(accept(fd, NULL, NULL));
#endif
}

/* A non-blocking, close-on-exec pipe: 0, or -1 with errno. */
BLITZ_PRIVATE int blitz__pipe_nb(int fds[2]) {
#if defined(__linux__)
    return (int)syscall(SYS_pipe2, fds, O_NONBLOCK | O_CLOEXEC);
#else
    if (pipe(fds) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        if (blitz__fd_nb_cloexec(fds[i]) < 0) {
            int e = errno;
            if (i == 0)
                close(fds[1]);
            errno = e;
            return -1;
        }
    }
    return 0;
#endif
}

/* A send on a socket that never raises SIGPIPE and never blocks. */
BLITZ_PRIVATE ssize_t blitz__send_nosig(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, BLITZ__SEND_NOSIG | MSG_DONTWAIT);
}
BLITZ_PRIVATE ssize_t blitz__sendmsg_nosig(int fd, const struct msghdr *m) {
    return sendmsg(fd, m, BLITZ__SEND_NOSIG | MSG_DONTWAIT);
}

/* The events poll(2) should watch for a reader. */
BLITZ_PRIVATE short blitz__poll_read_events(void) {
    return (short)(POLLIN | blitz__poll_peer_hup);
}
