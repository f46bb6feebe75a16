/* Threads, mutexes, the monotonic clock, waits on a word, and the parker
 * that puts an idle thread to sleep (seed 000 "Park state"). The futex
 * calls themselves are in platform/linux.c. */
#include "base.h"

#if BLITZ__HAS_FUTEX
BLITZ_PRIVATE int blitz__mutex_init(blitz__mutex *m) {
    blitz__u32_store(&m->state, 0, BLITZ__RELAXED);
    return 0;
}
BLITZ_PRIVATE void blitz__mutex_destroy(blitz__mutex *m) {
    (void)m;
}
/* Drepper's three-state futex mutex ("Futexes are tricky", mutex 3) with a
 * bounded spin before the first sleep. Acquire on taking the lock, release
 * on giving it back. */
BLITZ_PRIVATE void blitz__mutex_lock(blitz__mutex *m) {
    uint32_t c = 0;
    if (blitz__u32_cas(&m->state, &c, 1, BLITZ__ACQUIRE))
        return;
    for (int spin = 0; spin < 100; spin++) {
        blitz__cpu_relax();
        c = 0;
        if (blitz__u32_load(&m->state, BLITZ__RELAXED) == 0 &&
            blitz__u32_cas(&m->state, &c, 1, BLITZ__ACQUIRE))
            return;
    }
    c = blitz__u32_swap(&m->state, 2, BLITZ__ACQUIRE);
    while (c != 0) {
        blitz__futex_wait(&m->state, 2, 0);
        c = blitz__u32_swap(&m->state, 2, BLITZ__ACQUIRE);
    }
}
BLITZ_PRIVATE int blitz__mutex_trylock(blitz__mutex *m) {
    uint32_t c = 0;
    return blitz__u32_cas(&m->state, &c, 1, BLITZ__ACQUIRE);
}
BLITZ_PRIVATE void blitz__mutex_unlock(blitz__mutex *m) {
    if (blitz__u32_swap(&m->state, 0, BLITZ__RELEASE) == 2)
        blitz__futex_wake(&m->state, 1);
}
#else
BLITZ_PRIVATE int blitz__mutex_init(blitz__mutex *m) {
    int e = pthread_mutex_init(m, NULL);
    return e ? blitz__from_errno(e) : 0;
}
BLITZ_PRIVATE void blitz__mutex_destroy(blitz__mutex *m) {
    pthread_mutex_destroy(m);
}
BLITZ_PRIVATE void blitz__mutex_lock(blitz__mutex *m) {
    pthread_mutex_lock(m);
}
BLITZ_PRIVATE int blitz__mutex_trylock(blitz__mutex *m) {
    return pthread_mutex_trylock(m) == 0;
}
BLITZ_PRIVATE void blitz__mutex_unlock(blitz__mutex *m) {
    pthread_mutex_unlock(m);
}
#endif

#if !BLITZ__WIN32
BLITZ_PRIVATE uint64_t blitz__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

BLITZ_PRIVATE uint32_t blitz__cpu_count(void) {
    uint32_t allowed = blitz__affinity_cpu_count();
    if (allowed > 0)
        return allowed;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1u;
}
#endif

/* ---- futex-style waiting on a 32-bit word --------------------------------- */

#if !BLITZ__HAS_FUTEX
static void blitz__timespec_from_ns(struct timespec *ts, uint64_t ns) {
    ts->tv_sec = (time_t)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
}

/* Without futexes the completion word is polled with short sleeps; only the
 * join-from-a-plain-thread path uses these two. */
BLITZ_PRIVATE void blitz__futex_wait(blitz__atomic_u32 *word, uint32_t expected,
                                     uint64_t timeout_ns) {
    uint64_t slice = 50000, waited = 0;
    while (blitz__u32_load(word, BLITZ__ACQUIRE) == expected &&
           (timeout_ns == 0 || waited < timeout_ns)) {
        struct timespec ts;
        blitz__timespec_from_ns(&ts, slice);
        nanosleep(&ts, NULL);
        waited += slice;
    }
}
BLITZ_PRIVATE void blitz__futex_wake(blitz__atomic_u32 *word, int n) {
    (void)word;
    (void)n;
}
#endif

/* ---- the parker --------------------------------------------------------------
 * unpark() leaves a token (NOTIFIED) that the next park() consumes, so an
 * unpark that runs before the park is not lost:
 *   park:   CAS UNPARKED -> PARKED, sleep while PARKED, then swap UNPARKED
 *   unpark: swap NOTIFIED; wake the sleeper if the old value was PARKED
 * The swap in park is acquire and the one in unpark release, so whatever the
 * unparker wrote before unpark() is visible after park() returns. */

BLITZ_PRIVATE void blitz__parker_init(blitz__parker *p) {
    blitz__u32_store(&p->state, BLITZ__UNPARKED, BLITZ__RELAXED);
    p->wake_fd = BLITZ__WAKE_NONE;
#if !BLITZ__HAS_FUTEX
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
#endif
}

BLITZ_PRIVATE void blitz__parker_destroy(blitz__parker *p) {
#if !BLITZ__HAS_FUTEX
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
#else
    (void)p;
#endif
}

/* Returns 1 when woken by a token, 0 on timeout or spurious wake-up. */
BLITZ_PRIVATE int blitz__parker_park(blitz__parker *p, uint64_t timeout_ns) {
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED, BLITZ__ACQ_REL)) {
#if BLITZ__HAS_FUTEX
        blitz__futex_wait(&p->state, BLITZ__PARKED, timeout_ns);
#else
        pthread_mutex_lock(&p->lock);
        if (blitz__u32_load(&p->state, BLITZ__ACQUIRE) == BLITZ__PARKED) {
            if (timeout_ns) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                uint64_t ns = (uint64_t)ts.tv_nsec + timeout_ns;
                ts.tv_sec += (time_t)(ns / 1000000000u);
                ts.tv_nsec = (long)(ns % 1000000000u);
                pthread_cond_timedwait(&p->cond, &p->lock, &ts);
            } else {
                pthread_cond_wait(&p->cond, &p->lock);
            }
        }
        pthread_mutex_unlock(&p->lock);
#endif
    }
    return blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE) == BLITZ__NOTIFIED;
}

/* Wakes a thread blocked in the I/O backend (epoll_wait, poll,
 * io_uring_enter, kevent, GetQueuedCompletionStatusEx): the driver's
 * wake-up object is part of every wait. */
static void blitz__wake_fd_signal(blitz__wake_t fd) {
#if BLITZ__WIN32
    blitz__port_post(fd);
#else
#if BLITZ__HAS_KQUEUE
    if (fd < -1) {
        blitz__kqueue_trigger(BLITZ__WAKE_KQ(0) - fd);
        return;
    }
#endif
    uint64_t one = 1;
    ssize_t r;
    do
        r = write(fd, &one, sizeof one);
    while (r < 0 && errno == EINTR);
    /* EAGAIN: the counter is already nonzero, the waiter wakes anyway. */
#endif
}

BLITZ_PRIVATE void blitz__parker_unpark(blitz__parker *p) {
    uint32_t old = blitz__u32_swap(&p->state, BLITZ__NOTIFIED, BLITZ__RELEASE);
    if (old == BLITZ__PARKED_DRIVER) {
        blitz__wake_fd_signal(p->wake_fd);
        return;
    }
    if (old == BLITZ__PARKED) {
#if BLITZ__HAS_FUTEX
        blitz__futex_wake(&p->state, 1);
#else
        pthread_mutex_lock(&p->lock);
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->lock);
#endif
    }
}

/* ---- thread-local context ---------------------------------------------------- */

/* Declared in the public header: BLITZ_BEGIN leaves its site note in the
 * context (blitz__coro_site). */
#ifndef BLITZ_STATIC
BLITZ__THREAD_LOCAL blitz__context *blitz__tls_context;
#endif

BLITZ_PRIVATE blitz__context *blitz__context_get(void) {
    return blitz__tls_context;
}
/* A value unique to the calling thread while it lives. */
BLITZ_PRIVATE uintptr_t blitz__thread_tag(void) {
    return (uintptr_t)&blitz__tls_context;
}
BLITZ_PRIVATE blitz__context *blitz__context_set(blitz__context *c) {
    blitz__context *old = blitz__tls_context;
    blitz__tls_context = c;
    return old;
}

#if !BLITZ__WIN32
/* ---- POSIX threads (platform/win32.c has the Win32 ones) ------------------ */

BLITZ_PRIVATE int blitz__thread_start(blitz__thread *t, void *(*fn)(void *), void *arg) {
    int e = pthread_create(t, NULL, fn, arg);
    return e ? blitz__from_errno(e) : 0;
}
BLITZ_PRIVATE void blitz__thread_join(blitz__thread t) {
    pthread_join(t, NULL);
}
/* The calling thread, for another thread to join once it has exited. */
BLITZ_PRIVATE blitz__thread blitz__thread_self(void) {
    return pthread_self();
}
/* The starter's handle of a thread that blitz__thread_self will name for
 * its join: nothing to release here. */
BLITZ_PRIVATE void blitz__thread_forget(blitz__thread t) {
    (void)t;
}
BLITZ_PRIVATE void blitz__yield(void) {
    sched_yield();
}
BLITZ_PRIVATE void blitz__once_run(blitz__once *once, void (*fn)(void)) {
    pthread_once(once, fn);
}
/* A per-thread value; `dtor` runs on a thread's non-NULL value when the
 * thread exits. 0 or a code. */
BLITZ_PRIVATE int blitz__tls_key_create(blitz__tls_key *key, blitz__tls_dtor dtor) {
    int e = pthread_key_create(key, dtor);
    return e ? blitz__from_errno(e) : 0;
}
BLITZ_PRIVATE int blitz__tls_set(blitz__tls_key key, void *value) {
    int e = pthread_setspecific(key, value);
    return e ? blitz__from_errno(e) : 0;
}
/* A write to a closed socket or pipe fails with EPIPE in this thread
 * instead of raising SIGPIPE. */
BLITZ_PRIVATE void blitz__thread_block_sigpipe(void) {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
}
#endif
