/* Linux implementations of the calls platform/posix.c implements
 * portably: flags given at creation instead of fcntl afterwards (no window
 * in which a concurrent exec inherits the descriptor), pidfds, and the
 * kernel's own copies between descriptors. */
#include "base.h"

#if BLITZ__LINUX

#ifndef SPLICE_F_MOVE
#define SPLICE_F_MOVE 1u
#endif
#ifndef SPLICE_F_NONBLOCK
#define SPLICE_F_NONBLOCK 2u
#endif
#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ 1031
#endif

BLITZ_PRIVATE int blitz__pipe_open(int fds[2], int nonblock) {
    /* By number: glibc hides pipe2 without _GNU_SOURCE. */
    if (syscall(SYS_pipe2, fds, O_CLOEXEC | (nonblock ? O_NONBLOCK : 0)) < 0)
        return blitz__from_errno(errno);
    return BLITZ_OK;
}

BLITZ_PRIVATE int blitz__socket_open(int family, int type, int nonblock) {
    int fd = socket(family, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    return fd < 0 ? blitz__from_errno(errno) : fd;
}

BLITZ_PRIVATE int blitz__socketpair_open(int family, int type, int nonblock, int sv[2]) {
    if (socketpair(family, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0, sv) < 0)
        return blitz__from_errno(errno);
    return BLITZ_OK;
}

BLITZ_PRIVATE int blitz__proc_exit_fd(int pid) {
#if defined(SYS_pidfd_open)
    int fd = blitz__fd_above_stdio((int)syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0)
        return -1;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    return -1;
#endif
}

BLITZ_PRIVATE int blitz__splice_available(void) {
    return 1;
}

BLITZ_PRIVATE int64_t blitz__splice(int in, int out, size_t n) {
    long r = syscall(SYS_splice, in, NULL, out, NULL, n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    return r < 0 ? blitz__from_errno(errno) : (int64_t)r;
}

BLITZ_PRIVATE int64_t blitz__sendfile(int out, int in, size_t n) {
    long r = syscall(SYS_sendfile, out, in, NULL, n);
    return r < 0 ? blitz__from_errno(errno) : (int64_t)r;
}

BLITZ_PRIVATE void blitz__pipe_grow(int fd, int size) {
    fcntl(fd, F_SETPIPE_SZ, size);
}

#endif
