/* Darwin and the BSDs: waits on a word (Darwin's __ulock calls, FreeBSD's
 * _umtx_op; the other BSDs park on a condition variable, thread.c), the
 * kqueue wake-up of a thread blocked in kevent, and a child's exit as a
 * descriptor (a kqueue holding the child's EVFILT_PROC NOTE_EXIT: it polls
 * readable once the child has exited).
 *
 * The kqueue parts also build on Linux in the test suite, over its kqueue
 * emulation; the rest needs the real systems. */
#include "base.h"

#if !BLITZ__WIN32

#if defined(__APPLE__)
/* <sys/ulock.h>'s values (xnu), stable since macOS 10.12. */
#define BLITZ__UL_COMPARE_AND_WAIT 1u
#define BLITZ__ULF_WAKE_ALL        0x00000100u
#define BLITZ__ULF_NO_ERRNO        0x01000000u

/* Sleeps while *word == expected, at most timeout_ns (0 = no limit);
 * spurious returns are allowed. The limit is in microseconds, rounded up
 * (a zero would mean no limit). */
BLITZ_PRIVATE void blitz__futex_wait(blitz__atomic_u32 *word, uint32_t expected,
                                     uint64_t timeout_ns) {
    uint64_t us = timeout_ns ? (timeout_ns + 999u) / 1000u : 0;
    if (us > UINT32_MAX)
        us = UINT32_MAX;
    __ulock_wait(BLITZ__UL_COMPARE_AND_WAIT | BLITZ__ULF_NO_ERRNO, &word->v, expected,
                 (uint32_t)us);
}
BLITZ_PRIVATE void blitz__futex_wake(blitz__atomic_u32 *word, int n) {
    __ulock_wake(BLITZ__UL_COMPARE_AND_WAIT | BLITZ__ULF_NO_ERRNO |
                     (n > 1 ? BLITZ__ULF_WAKE_ALL : 0u),
                 &word->v, 0);
}
#elif defined(__FreeBSD__)
/* FreeBSD: not compiled on the project's machines (no FreeBSD headers
 * there); _umtx_op(2) as documented for FreeBSD 13. */
BLITZ_PRIVATE void blitz__futex_wait(blitz__atomic_u32 *word, uint32_t expected,
                                     uint64_t timeout_ns) {
    struct _umtx_time t;
    memset(&t, 0, sizeof t);
    t._timeout.tv_sec = (time_t)(timeout_ns / 1000000000u);
    t._timeout.tv_nsec = (long)(timeout_ns % 1000000000u);
    t._flags = 0; /* relative */
    t._clockid = CLOCK_MONOTONIC;
    _umtx_op(&word->v, UMTX_OP_WAIT_UINT_PRIVATE, expected,
             timeout_ns ? (void *)(uintptr_t)sizeof t : NULL, timeout_ns ? &t : NULL);
}
BLITZ_PRIVATE void blitz__futex_wake(blitz__atomic_u32 *word, int n) {
    _umtx_op(&word->v, UMTX_OP_WAKE_PRIVATE, n, NULL, NULL);
}
#endif

#if BLITZ__HAS_KQUEUE

/* Ends the wait of a thread blocked in kevent on `kq`: triggers its
 * EVFILT_USER knote (registered with EV_CLEAR, so one delivery resets it;
 * a trigger before the wait is kept until then). */
BLITZ_PRIVATE void blitz__kqueue_trigger(int kq) {
    struct kevent ev;
    EV_SET(&ev, BLITZ__KQ_WAKE_IDENT, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
    while (kevent(kq, &ev, 1, NULL, 0, NULL) < 0 && errno == EINTR) {
    }
}

#if !BLITZ__LINUX
/* A kqueue that turns readable once child `pid` has exited (it closes on
 * exec and sits above stdio), or -1: the waiter then naps and retries.
 * Registering a child that has already exited fails on some systems,
 * which the retrying waiter covers. */
BLITZ_PRIVATE int blitz__proc_exit_fd(int pid) {
    int kq = blitz__fd_above_stdio(kqueue());
    if (kq < 0)
        return -1;
    struct kevent ev;
    EV_SET(&ev, (uintptr_t)pid, EVFILT_PROC, EV_ADD | EV_ONESHOT, NOTE_EXIT, 0, NULL);
    if (fcntl(kq, F_SETFD, FD_CLOEXEC) < 0 || kevent(kq, &ev, 1, NULL, 0, NULL) < 0) {
        close(kq);
        return -1;
    }
    return kq;
}
#endif

#endif

#endif /* !BLITZ__WIN32 */
