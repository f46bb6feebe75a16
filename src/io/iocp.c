/* The I/O driver on Windows: one I/O completion port per runtime
 * (BLITZ_BACKEND_IOCP), the only object a thread with nothing to run
 * waits on: the completion backend of driver.c (backend.h), whose
 * socket ops are iocp_sock.c's. It waits in GetQueuedCompletionStatusEx,
 * a batch at a time, with the next timer's deadline as its limit; an
 * unpark posts a packet without an overlapped (blitz__port_post: the port
 * is the parkers' wake-up object), which the driver takes for a wake-up.
 * As on the other systems one thread at a time waits in the driver
 * (io->lock): the current-thread driver or the multi-thread runtime's
 * sleeper; the other workers park on their parkers.
 *
 * A park: the parker goes UNPARKED -> PARKED_DRIVER before the wait, so
 * an unpark from then on posts and the wait ends; one before it left
 * NOTIFIED and the wait is skipped. A post that arrives after its wait
 * ended (on the limit) stays queued and ends the next park early: a
 * spurious wake-up, which every caller allows. A busy thread's look
 * (poll) that takes a wake-up posts it again, since it may be a parked
 * driver's.
 *
 * A packet with an overlapped is an op's completion: the reaping thread
 * settles it (blitz__iocp_op.done). */
#include "io.h"

#if BLITZ__WIN32

/* The result of an op's packet: bytes, or the code of its failure, which
 * (WSA)GetOverlappedResult translates from the kernel's NTSTATUS. A pipe
 * end's end of stream is BLITZ_EPIPE here, as its hang-up is. */
static int64_t blitz__iocp_result(blitz__iocp_op *op) {
    DWORD bytes = 0, flags = 0;
    if (op->handle) {
        if (GetOverlappedResult((HANDLE)op->sock, &op->ov, &bytes, FALSE))
            return (int64_t)bytes;
        DWORD e = GetLastError();
        return e == ERROR_HANDLE_EOF ? BLITZ_EPIPE : blitz__from_win32(e);
    }
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
 * or timeout_ns (BLITZ__IO_FOREVER: none). `woke(arg)` runs after the
 * wait and before the ops are settled (a worker leaves the parked set
 * there, so the tasks they wake go to other workers). */
static void blitz__iocp_park(blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                             void (*woke)(void *), void *arg) {
    OVERLAPPED_ENTRY got[BLITZ__IOCP_BATCH];
    ULONG n = 0;
    blitz__mutex_lock(&io->lock);
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED_DRIVER, BLITZ__ACQ_REL))
        n = blitz__iocp_wait(io, got, timeout_ns);
    /* Acquire: pairs with the unparker's release swap to NOTIFIED. */
    blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE);
    if (woke)
        woke(arg);
    blitz__iocp_settle(got, n);
    blitz__mutex_unlock(&io->lock);
}

/* A busy thread's look: completions are settled; a wake-up it took may
 * be a parked driver's, so it goes back on the port. */
static void blitz__iocp_poll(blitz__io *io) {
    OVERLAPPED_ENTRY got[BLITZ__IOCP_BATCH];
    ULONG n = blitz__iocp_wait(io, got, 0);
    for (ULONG i = 0; i < n; i++)
        if (!got[i].lpOverlapped)
            blitz__port_post(io->port);
    blitz__iocp_settle(got, n);
}

/* Shutdown: the kernel lets go of every op (their cancels are asked). */
static void blitz__iocp_drain(blitz__io *io) {
    blitz__mutex_lock(&io->lock);
    while (blitz__u64_load(&io->inflight, BLITZ__ACQUIRE))
        (void)blitz__iocp_reap(io, 10 * BLITZ_MSEC);
    blitz__mutex_unlock(&io->lock);
}

/* No concurrency limit: a thread that waited on the port counts as one
 * of its running threads until it waits on it again, so any limit could
 * hold back the next sleeper's wake-up while earlier sleepers run tasks. */
static int blitz__iocp_init(blitz__io *io) {
    HANDLE port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0x7fffffff);
    if (!port)
        return blitz__from_win32(GetLastError());
    io->port = port;
    return BLITZ_OK;
}

/* After the workers are gone: nothing waits on the port any more. */
static void blitz__iocp_destroy(blitz__io *io) {
    CloseHandle((HANDLE)io->port);
    io->port = NULL;
}

/* Each socket (or pipe end: family AF_UNSPEC) is attached to the port
 * once, as it is wrapped. */
static int blitz__iocp_sock_add(blitz__io *io, blitz_socket *s) {
    if (s->family == AF_UNSPEC)
        return blitz__iocp_attach_handle(io, (HANDLE)s->fd);
    return blitz__iocp_attach(io, s->fd);
}

static const blitz__io_backend blitz__iocp_vtable = {
    .kind = BLITZ_BACKEND_IOCP,
    .name = "iocp",
    .alias = NULL,
    .completion = 1,
    /* A look is a system call: busy threads look now and then. */
    .look_interval = 61,
    .init = blitz__iocp_init,
    .destroy = blitz__iocp_destroy,
    .submit = blitz__iocp_submit,
    .cancel = blitz__iocp_op_cancel,
    .sock_add = blitz__iocp_sock_add,
    .poll = blitz__iocp_poll,
    .park = blitz__iocp_park,
    .after_drive = blitz__iocp_poll,
    .drain = blitz__iocp_drain,
};

BLITZ_PRIVATE const blitz__io_backend *blitz__backend_iocp(void) {
    return &blitz__iocp_vtable;
}

#endif /* BLITZ__WIN32 */
