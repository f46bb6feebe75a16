/* Linux implementations of the calls platform/posix.c implements
 * portably: futex waits, the CPUs this process may run on, flags given at
 * creation instead of fcntl afterwards (no window in which a concurrent
 * exec inherits the descriptor), pidfds, and the kernel's own copies
 * between descriptors. */
#include "base.h"

#if !BLITZ__WIN32

#if BLITZ__HAS_FUTEX && BLITZ__LINUX
/* Sleeps while *word == expected, at most timeout_ns (0 = no limit).
 * Spurious returns are allowed; callers re-check. */
BLITZ_PRIVATE void blitz__futex_wait(blitz__atomic_u32 *word, uint32_t expected,
                                     uint64_t timeout_ns) {
    struct timespec ts, *tsp = NULL;
    if (timeout_ns) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tsp = &ts;
    }
    syscall(SYS_futex, &word->v, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
}
BLITZ_PRIVATE void blitz__futex_wake(blitz__atomic_u32 *word, int n) {
    syscall(SYS_futex, &word->v, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}
#endif

#if BLITZ__LINUX

/* The CPUs the affinity mask allows (a container or taskset may allow
 * fewer than are online), or 0 when unknown. */
BLITZ_PRIVATE uint32_t blitz__affinity_cpu_count(void) {
#if defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return (uint32_t)n;
    }
#endif
    return 0;
}

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
    if (BLITZ__SYS(syscall(SYS_pipe2, fds, O_CLOEXEC | (nonblock ? O_NONBLOCK : 0))) < 0)
        return blitz__from_errno(errno);
    return BLITZ_OK;
}

BLITZ_PRIVATE int blitz__socket_open(int family, int type, int nonblock) {
    int fd = BLITZ__SYS(socket(family, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0));
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

BLITZ_PRIVATE int blitz__open_direct_flag(void) {
#if defined(O_DIRECT)
    return O_DIRECT;
#elif defined(__x86_64__) || defined(__i386__) || defined(__riscv) || defined(__loongarch__)
    return 040000; /* hidden without _GNU_SOURCE; the asm-generic value */
#elif defined(__aarch64__) || defined(__arm__)
    return 0200000;
#else
    return 0;
#endif
}

#ifndef FICLONE
#define FICLONE 0x40049409 /* _IOW(0x94, 9, int) */
#endif

BLITZ_PRIVATE int64_t blitz__file_clone(int in, int out) {
    return ioctl(out, FICLONE, in) == 0 ? 0 : blitz__from_errno(errno);
}

BLITZ_PRIVATE int64_t blitz__file_copy_range(int in, int out, size_t n) {
#if defined(SYS_copy_file_range)
    long r = syscall(SYS_copy_file_range, in, NULL, out, NULL, n, 0u);
    return r < 0 ? blitz__from_errno(errno) : (int64_t)r;
#else
    (void)in;
    (void)out;
    (void)n;
    return BLITZ_ENOSYS;
#endif
}

BLITZ_PRIVATE void blitz__pipe_grow(int fd, int size) {
    fcntl(fd, F_SETPIPE_SZ, size);
}

/* The I/O driver's attempts: -1 with errno (EAGAIN and the like are for
 * the caller to read), never SIGPIPE, never blocking. */
BLITZ_PRIVATE int blitz__accept_nb(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
BLITZ_PRIVATE ssize_t blitz__send_nosig(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}
BLITZ_PRIVATE ssize_t blitz__sendmsg_nosig(int fd, const struct msghdr *m) {
    return sendmsg(fd, m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The events poll(2) watches for a reader: the peer's end of the stream
 * as well. */
BLITZ_PRIVATE short blitz__poll_read_events(void) {
    return (short)(POLLIN | POLLRDHUP);
}

/* poll(2) with a timespec limit (NULL: none). */
BLITZ_PRIVATE int blitz__poll_wait(struct pollfd *fds, nfds_t n, const struct timespec *limit) {
    return BLITZ__SYS(ppoll(fds, n, limit, NULL));
}

/* Takes back a pending SIGPIPE of `set` (blocked in this thread) without
 * waiting. */
BLITZ_PRIVATE void blitz__sigpipe_take(const sigset_t *set) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(set, NULL, &zero) < 0 && errno == EINTR) {
    }
}

/* Reserves len bytes at off, extending the file (mode 0): 0 or a
 * negative blitz code. The system call, as the io_uring ring makes it
 * (glibc's posix_fallocate writes zeros where the file system cannot). */
BLITZ_PRIVATE int blitz__fallocate(int fd, int64_t off, int64_t len) {
    long rc;
    do
        rc = syscall(SYS_fallocate, fd, 0, (off_t)off, (off_t)len);
    while (rc < 0 && errno == EINTR);
    return rc == 0 ? 0 : blitz__from_errno(errno);
}

#endif

#endif /* !BLITZ__WIN32 */
