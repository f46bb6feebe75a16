/* Signals: a counting handler, a self-pipe, and one thread per process
 * that turns counts into wake-ups; on Windows, console control events.
 *
 * Why a handler and not sigwait/signalfd: those need the signal blocked in
 * every thread of the process, and a thread blitz did not create (main,
 * or the program's own) may leave it unblocked; a process-directed signal
 * that lands there takes its default action and kills the process. A
 * handler works in whichever thread the kernel picks. It only does what
 * is async-signal-safe: an atomic add to the signal's counter and a
 * one-byte write to the pipe (non-blocking: when the pipe is full, a wake-
 * up is already pending and the counter carries the count).
 *
 * The signal thread blocks every signal, sleeps in read() on the pipe,
 * and, under `lock`, moves each counter into the listeners of that signal
 * and wakes their waiting tasks. `lock` also guards the listener list and
 * the per-signal handler reference counts.
 *
 * Windows has no signals from outside the process but the console's
 * control events, which it delivers by calling a handler (registered with
 * SetConsoleCtrlHandler) on a thread it starts for the event: an ordinary
 * thread, which takes `lock` and wakes the listeners itself. */
#include "../io/io.h"

#if BLITZ__HAS_IO || BLITZ__WIN32

#define BLITZ__SIG_MAX 64

static struct {
    blitz__once once;
    int init_rc;
    blitz__mutex lock;
    blitz_signal *head;
#if !BLITZ__WIN32
    uint32_t refs[BLITZ__SIG_MAX + 1];
    struct sigaction saved[BLITZ__SIG_MAX + 1];
    blitz__atomic_u32 counts[BLITZ__SIG_MAX + 1];
    int pipe_r, pipe_w;
#endif
} blitz__sig = {.once = BLITZ__ONCE_STATIC};

/* Caller holds the lock: `count` deliveries of signal n to its listeners.
 * Returns whether any listens to it. */
static int blitz__sig_deliver(int n, uint32_t count) {
    int found = 0;
    uint64_t bit = (uint64_t)1 << (n - 1);
    for (blitz_signal *s = blitz__sig.head; s; s = s->blitz__next) {
        if (!(s->blitz__mask & bit))
            continue;
        found = 1;
        s->blitz__arrived |= bit;
        s->blitz__pending += count;
        if (s->blitz__has_waker) {
            s->blitz__has_waker = 0;
            blitz_waker_wake(s->blitz__waker);
        }
    }
    return found;
}

#if BLITZ__WIN32

/* The signal number of a console control event (0: none). */
static int blitz__sig_of_event(DWORD event) {
    switch (event) {
    case CTRL_C_EVENT:
        return SIGINT;
    case CTRL_BREAK_EVENT:
        return BLITZ_SIGBREAK;
    case CTRL_CLOSE_EVENT:
        return BLITZ_SIGHUP;
    case CTRL_LOGOFF_EVENT:
        return BLITZ_SIGLOGOFF;
    case CTRL_SHUTDOWN_EVENT:
        return BLITZ_SIGSHUTDOWN;
    default:
        return 0;
    }
}

/* Runs on the thread Windows starts for the event. FALSE when nobody
 * listens: the next handler, in the end the default (ending the
 * process), takes the event. */
static BOOL WINAPI blitz__sig_console(DWORD event) {
    int n = blitz__sig_of_event(event);
    if (n == 0)
        return FALSE;
    blitz__mutex_lock(&blitz__sig.lock);
    int found = blitz__sig_deliver(n, 1);
    blitz__mutex_unlock(&blitz__sig.lock);
    if (found &&
        (event == CTRL_CLOSE_EVENT || event == CTRL_LOGOFF_EVENT || event == CTRL_SHUTDOWN_EVENT)) {
        /* Windows ends the process as soon as this returns: holding on
         * gives the program the time Windows allows to shut down. */
        Sleep(INFINITE);
    }
    return found ? TRUE : FALSE;
}

static void blitz__sig_init_once(void) {
    int rc = blitz__mutex_init(&blitz__sig.lock);
    /* Installed once for good: it declines the events nobody listens to. */
    if (rc == 0 && !SetConsoleCtrlHandler(blitz__sig_console, TRUE))
        rc = blitz__from_win32(GetLastError());
    blitz__sig.init_rc = rc;
}

static int blitz__sig_valid(int signo) {
    return signo == SIGINT || signo == BLITZ_SIGBREAK || signo == BLITZ_SIGHUP ||
           signo == BLITZ_SIGLOGOFF || signo == BLITZ_SIGSHUTDOWN;
}

/* The console handler is always there. Caller holds the lock. */
static int blitz__sig_ref(int signo) {
    (void)signo;
    return 0;
}

static void blitz__sig_unref(int signo) {
    (void)signo;
}

#else /* POSIX */

static void blitz__sig_handler(int signo) {
    int saved = errno;
    if (signo > 0 && signo <= BLITZ__SIG_MAX) {
        /* Release: the signal thread's swap (acq_rel) sees the count
         * whenever it sees the byte written after it. */
        blitz__u32_fetch_add(&blitz__sig.counts[signo], 1, BLITZ__RELEASE);
        char b = (char)signo;
        ssize_t n = write(blitz__sig.pipe_w, &b, 1);
        (void)n;
    }
    errno = saved;
}

/* Caller holds the lock. */
static void blitz__sig_dispatch(void) {
    for (int n = 1; n <= BLITZ__SIG_MAX; n++) {
        uint32_t c = blitz__u32_swap(&blitz__sig.counts[n], 0, BLITZ__ACQ_REL);
        if (c)
            blitz__sig_deliver(n, c);
    }
}

static void *blitz__sig_thread(void *arg) {
    (void)arg;
    for (;;) {
        char buf[64];
        ssize_t n = read(blitz__sig.pipe_r, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL; /* the pipe is never closed: cannot happen */
        blitz__mutex_lock(&blitz__sig.lock);
        blitz__sig_dispatch();
        blitz__mutex_unlock(&blitz__sig.lock);
    }
}

static int blitz__sig_cloexec(int fd, int nonblock) {
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
        return -1;
    if (nonblock) {
        fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
            return -1;
    }
    return 0;
}

static void blitz__sig_init_once(void) {
    int rc = blitz__mutex_init(&blitz__sig.lock);
    int fds[2];
    if (rc == 0 && pipe(fds) != 0)
        rc = blitz__from_errno(errno);
    if (rc == 0) {
        if (blitz__sig_cloexec(fds[0], 0) != 0 || blitz__sig_cloexec(fds[1], 1) != 0) {
            rc = blitz__from_errno(errno);
            close(fds[0]);
            close(fds[1]);
        }
    }
    if (rc == 0) {
        blitz__sig.pipe_r = blitz__fd_above_stdio(fds[0]);
        blitz__sig.pipe_w = blitz__fd_above_stdio(fds[1]);
        /* The thread starts with every signal blocked (it inherits the
         * mask), so no handler ever runs on it. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t th;
        rc = blitz__thread_start(&th, blitz__sig_thread, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc == 0)
            pthread_detach(th);
    }
    blitz__sig.init_rc = rc;
}

static int blitz__sig_valid(int signo) {
    if (signo < 1 || signo > BLITZ__SIG_MAX)
        return 0;
#ifdef NSIG
    if (signo >= NSIG)
        return 0;
#endif
    switch (signo) {
    case SIGKILL:
    case SIGSTOP:
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
        return 0;
    default:
        return 1;
    }
}

/* Caller holds the lock. */
static int blitz__sig_ref(int signo) {
    if (blitz__sig.refs[signo]++ > 0)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = blitz__sig_handler;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(signo, &sa, &blitz__sig.saved[signo]) != 0) {
        blitz__sig.refs[signo]--;
        return blitz__from_errno(errno);
    }
    return 0;
}

static void blitz__sig_unref(int signo) {
    if (--blitz__sig.refs[signo] == 0)
        sigaction(signo, &blitz__sig.saved[signo], NULL);
}

#endif /* POSIX */

/* Nonzero when `s` is a registered listener (caller holds the lock). The
 * list is searched rather than trusting s's own fields, which may be
 * garbage for a listener never initialised. */
static int blitz__sig_registered(const blitz_signal *s) {
    for (blitz_signal *x = blitz__sig.head; x; x = x->blitz__next)
        if (x == s)
            return 1;
    return 0;
}

BLITZ_API int blitz_signal_init(blitz_signal *s, int signo) {
    if (!s || !blitz__sig_valid(signo))
        return BLITZ_EINVAL;
    blitz__once_run(&blitz__sig.once, blitz__sig_init_once);
    if (blitz__sig.init_rc != 0)
        return blitz__sig.init_rc;
    blitz__mutex_lock(&blitz__sig.lock);
    int rc = BLITZ_OK;
    for (blitz_signal *x = blitz__sig.head; x; x = x->blitz__next)
        if (x == s)
            rc = BLITZ_EBUSY;
    if (rc == BLITZ_OK)
        rc = blitz__sig_ref(signo);
    if (rc == BLITZ_OK) {
        memset(s, 0, sizeof *s);
        s->blitz__mask = (uint64_t)1 << (signo - 1);
        s->blitz__next = blitz__sig.head;
        if (blitz__sig.head)
            blitz__sig.head->blitz__prev = s;
        blitz__sig.head = s;
    }
    blitz__mutex_unlock(&blitz__sig.lock);
    return rc;
}

static int blitz__sig_ready(void) {
    blitz__once_run(&blitz__sig.once, blitz__sig_init_once);
    return blitz__sig.init_rc == 0;
}

BLITZ_API int blitz_signal_add(blitz_signal *s, int signo) {
    if (!s || !blitz__sig_valid(signo) || !blitz__sig_ready())
        return BLITZ_EINVAL;
    blitz__mutex_lock(&blitz__sig.lock);
    int rc = BLITZ_EINVAL;
    if (blitz__sig_registered(s)) {
        uint64_t bit = (uint64_t)1 << (signo - 1);
        rc = (s->blitz__mask & bit) ? BLITZ_OK : blitz__sig_ref(signo);
        if (rc == BLITZ_OK)
            s->blitz__mask |= bit;
    }
    blitz__mutex_unlock(&blitz__sig.lock);
    return rc;
}

/* Caller holds the lock; something arrived. */
static void blitz__sig_take(blitz_signal *s) {
    int n = 1;
    while (!(s->blitz__arrived & ((uint64_t)1 << (n - 1))))
        n++;
    s->signo = n;
    s->count = s->blitz__pending;
    s->blitz__arrived = 0;
    s->blitz__pending = 0;
}

BLITZ_API blitz_poll blitz_signal_recv(blitz_cx *cx, blitz_signal *s) {
    if (!s || !cx || !blitz__sig_ready())
        return BLITZ_READY;
    blitz__mutex_lock(&blitz__sig.lock);
    int live = blitz__sig_registered(s);
    if (!live || s->blitz__arrived) {
        if (live) {
            blitz__sig_take(s);
        } else {
            s->signo = 0; /* not listening: nothing will come */
            s->count = 0;
        }
        if (s->blitz__has_waker) {
            s->blitz__has_waker = 0;
            blitz_waker_drop(s->blitz__waker);
        }
        blitz__mutex_unlock(&blitz__sig.lock);
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    if (s->blitz__has_waker && !blitz_waker_will_wake(&s->blitz__waker, &mine)) {
        blitz_waker_drop(s->blitz__waker);
        s->blitz__has_waker = 0;
    }
    if (!s->blitz__has_waker) {
        s->blitz__waker = blitz_waker_clone(&mine);
        s->blitz__has_waker = 1;
    }
    blitz__mutex_unlock(&blitz__sig.lock);
    return blitz__pending(cx, blitz_signal_cancel, s);
}

BLITZ_API int blitz_signal_try_recv(blitz_signal *s) {
    if (!s || !blitz__sig_ready())
        return BLITZ_EINVAL;
    blitz__mutex_lock(&blitz__sig.lock);
    int rc = blitz__sig_registered(s) ? 0 : BLITZ_EINVAL;
    if (rc == 0 && s->blitz__arrived) {
        blitz__sig_take(s);
        rc = 1;
    }
    blitz__mutex_unlock(&blitz__sig.lock);
    return rc;
}

BLITZ_API void blitz_signal_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_signal *s = (blitz_signal *)p;
    if (!s || !blitz__sig_ready())
        return;
    blitz__mutex_lock(&blitz__sig.lock);
    if (blitz__sig_registered(s) && s->blitz__has_waker) {
        s->blitz__has_waker = 0;
        blitz_waker_drop(s->blitz__waker);
    }
    blitz__mutex_unlock(&blitz__sig.lock);
}

BLITZ_API int blitz_signal_deinit(blitz_signal *s) {
    if (!s || !blitz__sig_ready())
        return BLITZ_EINVAL;
    blitz__mutex_lock(&blitz__sig.lock);
    if (!blitz__sig_registered(s)) {
        blitz__mutex_unlock(&blitz__sig.lock);
        return BLITZ_EINVAL;
    }
    if (s->blitz__prev)
        s->blitz__prev->blitz__next = s->blitz__next;
    else
        blitz__sig.head = s->blitz__next;
    if (s->blitz__next)
        s->blitz__next->blitz__prev = s->blitz__prev;
    for (int n = 1; n <= BLITZ__SIG_MAX; n++)
        if (s->blitz__mask & ((uint64_t)1 << (n - 1)))
            blitz__sig_unref(n);
    if (s->blitz__has_waker)
        blitz_waker_drop(s->blitz__waker);
    s->blitz__has_waker = 0;
    s->blitz__next = s->blitz__prev = NULL;
    blitz__mutex_unlock(&blitz__sig.lock);
    return BLITZ_OK;
}

BLITZ__OP_ADAPTER(blitz__signal_value_poll, blitz_signal, s, blitz_signal_recv(cx, s))
BLITZ_API blitz_op blitz_op_signal_recv(blitz_signal *s) {
    return blitz_op_make(blitz__signal_value_poll, blitz_signal_cancel, s);
}

#endif /* BLITZ__HAS_IO || BLITZ__WIN32 */
