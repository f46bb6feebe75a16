/* The file, descriptor, socket, process and kernel-copy calls that differ
 * by system, in portable POSIX: the implementation on systems without one
 * of their own (platform/linux.c). */
#include "base.h"

#if !BLITZ__WIN32

/* ---- portable with per-system spellings --------------------------------- */

/* A file's modification, access and status-change times (struct stat
 * names its timespecs differently on Apple systems). */
BLITZ_PRIVATE void blitz__stat_times(const struct stat *st, struct timespec *modified,
                                     struct timespec *accessed, struct timespec *changed) {
#if defined(__APPLE__)
    *modified = st->st_mtimespec;
    *accessed = st->st_atimespec;
    *changed = st->st_ctimespec;
#else
    *modified = st->st_mtim;
    *accessed = st->st_atim;
    *changed = st->st_ctim;
#endif
}

/* Flushes a file's data (and the metadata needed to read it back): 0 or
 * -1 with errno. Apple systems have no fdatasync. */
BLITZ_PRIVATE int blitz__fdatasync(int fd) {
#if defined(__APPLE__)
    return fsync(fd);
#else
    return fdatasync(fd);
#endif
}

/* ---- the portable versions of platform/linux.c ---------------------------- */

/* Each returns a descriptor, a count or BLITZ_OK, or a negative blitz
 * code; none leaves errno for the caller. */

#if !BLITZ__LINUX

/* The CPUs this process may run on when the system says, else 0 (the
 * caller then counts the online ones). */
BLITZ_PRIVATE uint32_t blitz__affinity_cpu_count(void) {
    return 0;
}

/* Close-on-exec and, when asked, O_NONBLOCK on a fresh descriptor; closes
 * it and returns the code on failure. */
static int blitz__fd_set_flags(int fd, int nonblock) {
    int fl = 0;
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 &&
        (!nonblock || ((fl = fcntl(fd, F_GETFL)) >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0)))
        return fd;
    int e = errno;
    close(fd);
    return blitz__from_errno(e);
}

/* A pipe whose ends close on exec and, when `nonblock`, do not block.
 * BLITZ_OK or a code. */
BLITZ_PRIVATE int blitz__pipe_open(int fds[2], int nonblock) {
    if (pipe(fds) < 0)
        return blitz__from_errno(errno);
    for (int i = 0; i < 2; i++) {
        int rc = blitz__fd_set_flags(fds[i], nonblock);
        if (rc < 0) {
            close(fds[1 - i]);
            return rc;
        }
    }
    return BLITZ_OK;
}

/* A socket's writes to a closed peer fail with EPIPE instead of raising
 * SIGPIPE where the system has the option (MSG_NOSIGNAL is Linux's). */
static int blitz__sock_no_sigpipe(int fd) {
#if defined(SO_NOSIGPIPE)
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one) < 0) {
        int e = errno;
        close(fd);
        return blitz__from_errno(e);
    }
#endif
    return fd;
}

/* A socket that closes on exec and, when `nonblock`, does not block: the
 * descriptor or a code. */
BLITZ_PRIVATE int blitz__socket_open(int family, int type, int nonblock) {
    int fd = socket(family, type, 0);
    if (fd < 0)
        return blitz__from_errno(errno);
    fd = blitz__fd_set_flags(fd, nonblock);
    return fd < 0 ? fd : blitz__sock_no_sigpipe(fd);
}

/* A connected pair of `type` sockets, flags as blitz__socket_open. */
BLITZ_PRIVATE int blitz__socketpair_open(int family, int type, int nonblock, int sv[2]) {
    if (socketpair(family, type, 0, sv) < 0)
        return blitz__from_errno(errno);
    for (int i = 0; i < 2; i++) {
        int rc = blitz__fd_set_flags(sv[i], nonblock);
        if (rc >= 0)
            rc = blitz__sock_no_sigpipe(sv[i]);
        if (rc < 0) {
            close(sv[1 - i]);
            return rc;
        }
    }
    return BLITZ_OK;
}

#if !BLITZ__HAS_KQUEUE
/* A descriptor that polls readable once child `pid` has exited (it closes
 * on exec and sits above stdio), or -1: the waiter then naps and retries.
 * The kqueue systems have one (platform/bsd.c). */
BLITZ_PRIVATE int blitz__proc_exit_fd(int pid) {
    (void)pid;
    return -1;
}
#endif

/* Whether the kernel can move bytes between descriptors itself
 * (blitz__splice and blitz__sendfile do more than fail). */
BLITZ_PRIVATE int blitz__splice_available(void) {
    return 0;
}

/* Moves up to n bytes from `in` to `out`, one of which is a pipe, without
 * blocking: the count, 0 at end of input, or a code. */
BLITZ_PRIVATE int64_t blitz__splice(int in, int out, size_t n) {
    (void)in;
    (void)out;
    (void)n;
    return BLITZ_ENOSYS;
}

/* Moves up to n bytes from the file `in` (at its offset) to `out`: the
 * count, 0 at end of file, or a code. */
BLITZ_PRIVATE int64_t blitz__sendfile(int out, int in, size_t n) {
    (void)out;
    (void)in;
    (void)n;
    return BLITZ_ENOSYS;
}

/* The open flag that bypasses the page cache, or 0 where the system has
 * none. */
BLITZ_PRIVATE int blitz__open_direct_flag(void) {
    return 0;
}

/* Makes `out` share the blocks of `in` (a reflink): 0 or a code. */
BLITZ_PRIVATE int64_t blitz__file_clone(int in, int out) {
    (void)in;
    (void)out;
    return BLITZ_EOPNOTSUPP;
}

/* Copies up to n bytes from file to file inside the kernel, at both files'
 * positions: the count, 0 at end of input, or a code. */
BLITZ_PRIVATE int64_t blitz__file_copy_range(int in, int out, size_t n) {
    (void)in;
    (void)out;
    (void)n;
    return BLITZ_ENOSYS;
}

/* Asks for a pipe buffer of `size` bytes; a hint, ignored where pipes
 * have a fixed size. */
BLITZ_PRIVATE void blitz__pipe_grow(int fd, int size) {
    (void)fd;
    (void)size;
}

/* The I/O driver's attempts: -1 with errno, never blocking. The accepted
 * socket gets its flags right after (a fork+exec in between may inherit
 * it, which Linux's accept4 avoids); sockets made here carry SO_NOSIGPIPE
 * where it exists, and elsewhere callers block SIGPIPE around writes. */
BLITZ_PRIVATE int blitz__accept_nb(int fd) {
    int s = accept(fd, NULL, NULL);
    if (s < 0)
        return -1;
    int fl = fcntl(s, F_GETFL);
    int ok =
        fl >= 0 && fcntl(s, F_SETFL, fl | O_NONBLOCK) == 0 && fcntl(s, F_SETFD, FD_CLOEXEC) == 0;
#if defined(SO_NOSIGPIPE)
    int one = 1;
    ok = ok && setsockopt(s, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one) == 0;
#endif
    if (!ok) {
        int e = errno;
        close(s);
        errno = e;
        return -1;
    }
    return s;
}
BLITZ_PRIVATE ssize_t blitz__send_nosig(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_DONTWAIT);
}
BLITZ_PRIVATE ssize_t blitz__sendmsg_nosig(int fd, const struct msghdr *m) {
    return sendmsg(fd, m, MSG_DONTWAIT);
}

/* The events poll(2) watches for a reader (a readable end of stream shows
 * as POLLIN). */
BLITZ_PRIVATE short blitz__poll_read_events(void) {
    return POLLIN;
}

/* poll(2) with a timespec limit (NULL: none), rounded up to milliseconds
 * (Darwin has no ppoll). */
BLITZ_PRIVATE int blitz__poll_wait(struct pollfd *fds, nfds_t n, const struct timespec *limit) {
    int ms = -1;
    if (limit) {
        uint64_t m =
            ((uint64_t)limit->tv_sec * 1000000000u + (uint64_t)limit->tv_nsec + 999999u) / 1000000u;
        ms = m > INT_MAX ? INT_MAX : (int)m;
    }
    return poll(fds, n, ms);
}

/* Takes back a SIGPIPE of `set` that sigpending showed pending while it
 * is blocked in this thread (no sigtimedwait on Darwin: sigwait returns
 * at once for a pending signal; a write's SIGPIPE is the writing
 * thread's own, so no other thread takes it first). */
BLITZ_PRIVATE void blitz__sigpipe_take(const sigset_t *set) {
    int sig;
    while (sigwait(set, &sig) == EINTR) {
    }
}

/* Reserves len bytes at off, extending the file (mode 0): 0 or a
 * negative blitz code. Apple systems have no such call. */
BLITZ_PRIVATE int blitz__fallocate(int fd, int64_t off, int64_t len) {
#if defined(__APPLE__)
    (void)fd;
    (void)off;
    (void)len;
    return blitz__from_errno(EOPNOTSUPP);
#else
    int rc = posix_fallocate(fd, (off_t)off, (off_t)len);
    return rc == 0 ? 0 : blitz__from_errno(rc);
#endif
}

#endif

#endif /* !BLITZ__WIN32 */
