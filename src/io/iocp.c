/* The I/O driver on Windows: one I/O completion port per runtime
 * (BLITZ_BACKEND_IOCP), the only object a thread with nothing to run
 * waits on. It waits in GetQueuedCompletionStatusEx, a batch at a time,
 * with the next timer's deadline as its limit; an unpark posts a packet
 * without an overlapped (blitz__port_post: the port is the parkers'
 * wake-up object), which the driver takes for a wake-up. As on the other
 * systems one thread at a time waits in the driver (io->lock): the
 * current-thread driver or the multi-thread runtime's sleeper; the other
 * workers park on their parkers.
 *
 * A park: the parker goes UNPARKED -> PARKED_DRIVER before the wait, so
 * an unpark from then on posts and the wait ends; one before it left
 * NOTIFIED and the wait is skipped. A post that arrives after its wait
 * ended (on the limit) stays queued and ends the next park early: a
 * spurious wake-up, which every caller allows.
 *
 * The sockets layers are POSIX code, left out here (BLITZ__HAS_IO 0):
 * the port carries wake-ups and time only, and the runtime has no
 * socket, so these entry points answer as driver.c does for one without
 * sockets. */
#include "io.h"

#if BLITZ__WIN32

/* Packets taken per wait. */
#define BLITZ__IOCP_BATCH 64

BLITZ_PRIVATE void blitz__io_poll(blitz_runtime *rt) {
    (void)rt;
}
BLITZ_PRIVATE void blitz__io_after_drive(blitz_runtime *rt) {
    (void)rt;
}
BLITZ_PRIVATE void blitz__io_between_ticks(blitz_runtime *rt, uint64_t *polls_since) {
    (void)rt;
    (void)polls_since;
}
BLITZ_PRIVATE uint32_t blitz__io_spin_rounds(blitz_runtime *rt) {
    return rt->spin_before_park;
}
BLITZ_PRIVATE int blitz__io_serving(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
BLITZ_PRIVATE int blitz__io_ready_cheap(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
/* Only the sleeper waits on the port: it is the one with a deadline. */
BLITZ_PRIVATE int blitz__io_parks_workers(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
BLITZ_PRIVATE void blitz__io_worker_start(blitz_runtime *rt, uint32_t index) {
    (void)rt;
    (void)index;
}
BLITZ_PRIVATE void blitz__io_driver_start(blitz_runtime *rt) {
    (void)rt;
}
BLITZ_PRIVATE void blitz__io_flush(blitz_runtime *rt) {
    (void)rt;
}

/* Parks the calling thread on the port until a packet, an unpark of `p`
 * or timeout_ns (0: none). `woke(arg)` runs after the wait. */
BLITZ_PRIVATE void blitz__io_park(blitz_runtime *rt, blitz__parker *p, uint64_t timeout_ns,
                                  void (*woke)(void *), void *arg) {
    blitz__io *io = rt->io;
    blitz__mutex_lock(&io->lock);
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED_DRIVER, BLITZ__ACQ_REL)) {
        OVERLAPPED_ENTRY got[BLITZ__IOCP_BATCH];
        ULONG n = 0;
        /* Wake-up packets carry nothing: taking them is all there is to
         * do with them. A failure is the limit passing (WAIT_TIMEOUT) or
         * the port closing, which only the runtime's end does. */
        GetQueuedCompletionStatusEx((HANDLE)io->port, got, BLITZ__IOCP_BATCH, &n,
                                    blitz__win32_ms(timeout_ns), FALSE);
    }
    /* Acquire: pairs with the unparker's release swap to NOTIFIED. */
    blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE);
    if (woke)
        woke(arg);
    blitz__mutex_unlock(&io->lock);
}

BLITZ_API const char *blitz_backend_name(blitz_backend b) {
    switch (b) {
    case BLITZ_BACKEND_AUTO:
        return "auto";
    case BLITZ_BACKEND_IOCP:
        return "iocp";
    default:
        return "none";
    }
}
BLITZ_API blitz_backend blitz_runtime_backend(const blitz_runtime *rt) {
    return rt && rt->io ? BLITZ_BACKEND_IOCP : BLITZ_BACKEND_NONE;
}

/* AUTO and IOCP give a runtime with a port (AUTO: without one if the
 * system refuses it); NONE one without I/O; the other systems' backends
 * are not here (BLITZ_ENOSYS, as a compiled-out one elsewhere). */
BLITZ_PRIVATE int blitz__io_create(blitz_runtime *rt, blitz_backend forced) {
    if (forced > BLITZ_BACKEND_IOCP)
        return BLITZ_EINVAL;
    if (forced == BLITZ_BACKEND_NONE)
        return BLITZ_OK;
    if (forced != BLITZ_BACKEND_AUTO && forced != BLITZ_BACKEND_IOCP)
        return BLITZ_ENOSYS;
    blitz__io *io = (blitz__io *)blitz__calloc(sizeof *io);
    if (!io)
        return forced == BLITZ_BACKEND_AUTO ? BLITZ_OK : BLITZ_ENOMEM;
    /* No concurrency limit: a thread that waited on the port counts as one
     * of its running threads until it waits on it again, so any limit
     * could hold back the next sleeper's wake-up while earlier sleepers
     * run tasks. */
    HANDLE port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0x7fffffff);
    if (!port) {
        int rc = blitz__from_win32(GetLastError());
        blitz__free(io);
        return forced == BLITZ_BACKEND_AUTO ? BLITZ_OK : rc;
    }
    io->rt = rt;
    io->port = port;
    io->wake_fd = io->wake_rd = io->epfd = io->shared_efd = -1;
    blitz__mutex_init(&io->lock);
    blitz__mutex_init(&io->socks_lock);
    blitz__mutex_init(&io->poll_lock);
    rt->io = io;
    return BLITZ_OK;
}
/* The port wakes every parker: one thread at a time waits on it. */
BLITZ_PRIVATE blitz__wake_t blitz__io_wake_fd(const blitz__io *io, uint32_t index) {
    (void)index;
    return io->port;
}
BLITZ_PRIVATE void blitz__io_shutdown(blitz_runtime *rt) {
    (void)rt;
}
/* After the workers are gone: nothing waits on the port any more. */
BLITZ_PRIVATE void blitz__io_destroy(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io)
        return;
    CloseHandle((HANDLE)io->port);
    blitz__mutex_destroy(&io->lock);
    blitz__mutex_destroy(&io->socks_lock);
    blitz__mutex_destroy(&io->poll_lock);
    blitz__free(io);
    rt->io = NULL;
}

#endif /* BLITZ__WIN32 */
