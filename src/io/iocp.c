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
 * A packet with an overlapped is a socket op's completion (iocp_sock.c):
 * the reaping thread settles it (blitz__iocp_op.done). The sockets API
 * is POSIX code, left out here (BLITZ__HAS_IO 0), so no public socket
 * exists yet and these entry points answer as driver.c does for a
 * runtime without sockets. */
#include "io.h"

#if BLITZ__WIN32

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
/* No file ring here: block_on sleeps its own way. */
BLITZ_PRIVATE int blitz__io_wait_files(blitz_runtime *rt, const blitz__atomic_u32 *word,
                                       uint32_t seq, uint64_t timeout_ns) {
    (void)rt;
    (void)word;
    (void)seq;
    (void)timeout_ns;
    return 0;
}
BLITZ_PRIVATE int blitz__io_files_pending(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
BLITZ_PRIVATE int blitz__io_files_mine(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
BLITZ_PRIVATE void blitz__io_files_unmute(blitz_runtime *rt) {
    (void)rt;
}
BLITZ_PRIVATE void blitz__io_poke_files(blitz_runtime *rt) {
    (void)rt;
}

/* The result of an op's packet: bytes, or the code of its failure, which
 * WSAGetOverlappedResult translates from the kernel's NTSTATUS. */
static int64_t blitz__iocp_result(blitz__iocp_op *op) {
    DWORD bytes = 0, flags = 0;
    if (WSAGetOverlappedResult(op->sock, &op->ov, &bytes, FALSE, &flags))
        return (int64_t)bytes;
    return blitz__from_win32((DWORD)WSAGetLastError());
}

/* One wait on the port, at most timeout_ns (0: a look, UINT64_MAX: no
 * limit): the packets taken, wake-ups included. */
static ULONG blitz__iocp_wait(blitz__io *io, OVERLAPPED_ENTRY *got, uint64_t timeout_ns) {
    ULONG n = 0;
    DWORD ms = timeout_ns ? blitz__win32_ms(timeout_ns) : 0;
    /* A failure is the limit passing (WAIT_TIMEOUT) or the port closing,
     * which only the runtime's end does. */
    if (!GetQueuedCompletionStatusEx((HANDLE)io->port, got, BLITZ__IOCP_BATCH, &n, ms, FALSE))
        return 0;
    return n;
}

/* Settles the ops whose packets a wait took. */
static void blitz__iocp_settle(const OVERLAPPED_ENTRY *got, ULONG n) {
    for (ULONG i = 0; i < n; i++) {
        /* Wake-up packets carry no overlapped: taking them is all. */
        if (!got[i].lpOverlapped)
            continue;
        blitz__iocp_op *op = (blitz__iocp_op *)got[i].lpOverlapped;
        op->done(op, blitz__iocp_result(op));
    }
}

/* A wait and the settling of what it took: the packets taken. */
BLITZ_PRIVATE uint32_t blitz__iocp_reap(blitz__io *io, uint64_t timeout_ns) {
    OVERLAPPED_ENTRY got[BLITZ__IOCP_BATCH];
    ULONG n = blitz__iocp_wait(io, got, timeout_ns);
    blitz__iocp_settle(got, n);
    return (uint32_t)n;
}

/* Parks the calling thread on the port until a packet, an unpark of `p`
 * or timeout_ns (0: none). `woke(arg)` runs after the wait and before
 * the ops are settled (a worker leaves the parked set there, so the
 * tasks they wake go to other workers). */
BLITZ_PRIVATE void blitz__io_park(blitz_runtime *rt, blitz__parker *p, uint64_t timeout_ns,
                                  void (*woke)(void *), void *arg) {
    blitz__io *io = rt->io;
    OVERLAPPED_ENTRY got[BLITZ__IOCP_BATCH];
    ULONG n = 0;
    blitz__mutex_lock(&io->lock);
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED_DRIVER, BLITZ__ACQ_REL))
        n = blitz__iocp_wait(io, got, timeout_ns ? timeout_ns : UINT64_MAX);
    /* Acquire: pairs with the unparker's release swap to NOTIFIED. */
    blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE);
    if (woke)
        woke(arg);
    blitz__iocp_settle(got, n);
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
