/* The interface between the I/O driver's core and its backends.
 *
 * A backend is one of two styles, fixed by `completion`:
 *   completion (uring.c, iocp.c): submit may try the system call once
 *     (a send into a socket with room), else hands the op to the kernel,
 *     which performs it: the op is INFLIGHT and the kernel owns its
 *     buffers until its completion is reaped (blitz__io_complete), even
 *     after a cancel. A cancelled op is CANCELLING, keeps its waker (the
 *     task's memory, where the buffers live) and its socket reference,
 *     and only the reaped completion turns it IDLE; meanwhile nothing may
 *     free the buffers (blitz__io_free_after hands one to the completion).
 *   readiness (poll.c, epoll.c, kqueue.c): submit is
 *     blitz__ready_submit: the task performs the system call itself, in
 *     its own poll; on EAGAIN the op is WAIT in the socket's list and an
 *     event (blitz__io_ready) makes it RETRY, to try again. The kernel
 *     never holds a buffer: a cancel only unlinks the op.
 *
 * Promises, per entry (NULL entries do nothing, or answer 0):
 *   init      sets up the backend and its wake-up object: writing 8 bytes
 *             to io->wake_fd (or to wake_fd(io, index)) ends a park of
 *             that thread; on failure releases all it took, so the next
 *             backend can be tried.
 *   destroy   releases what init took; every socket is gone by then.
 *   submit    starts an op (IDLE or RETRY; the task holds a descriptor
 *             reference): READY with the result set, or PENDING with the
 *             task's waker registered.
 *   cancel    (completion) asks the kernel to withdraw an INFLIGHT op and
 *             returns; the completion is still due and settles the op.
 *             Called under the op's lock (cancel, shutdown: the state is
 *             CANCELLING already) or the socket's (close).
 *   sock_add  a new socket (failure: the socket is not created).
 *   sock_del  the descriptor is about to close: no event may name it after.
 *   sock_free (readiness) a closed socket's memory is about to go, at the
 *             next dispatch cycle (io->lock held).
 *   want      (readiness) an op registered a waiter of direction `bit`
 *             (socket lock held).
 *   close     a socket is closing (its lock held; its waiting ops are
 *             taken off, its in-flight ops' cancels asked for): ends the
 *             backend's own standing work on it. The descriptor closes
 *             with its last reference, after sock_del.
 *   quiesce   shutdown: ends that standing work on every live socket.
 *   poll      reaps without blocking (the start of a tick).
 *   park      waits until an event, a wake-up or the timeout
 *             (BLITZ__IO_FOREVER: none); runs `woke` before dispatching.
 *   wait, dispatch (readiness) one wait of the backend, and the delivery
 *             of its events to blitz__io_ready; io->lock held. */
#ifndef BLITZ__IO_BACKEND_H
#define BLITZ__IO_BACKEND_H

struct blitz__io;
struct blitz_socket;

typedef struct blitz__io_backend {
    blitz_backend kind;
    const char *name;
    const char *alias; /* another spelling accepted by BLITZ_BACKEND, or NULL */
    int completion;    /* 1: the kernel performs ops; 0: readiness */
    /* Task polls between non-blocking looks when busy (0: every tick). */
    uint64_t look_interval;
    int (*init)(struct blitz__io *io);
    void (*destroy)(struct blitz__io *io);
    blitz_poll (*submit)(blitz_cx *cx, blitz_io *op);
    void (*cancel)(struct blitz__io *io, blitz_io *op);
    int (*sock_add)(struct blitz__io *io, struct blitz_socket *s);
    void (*sock_del)(struct blitz__io *io, struct blitz_socket *s);
    void (*sock_free)(struct blitz__io *io, struct blitz_socket *s);
    int (*want)(struct blitz__io *io, struct blitz_socket *s, uint32_t bit);
    void (*close)(struct blitz__io *io, struct blitz_socket *s);
    void (*quiesce)(struct blitz__io *io, struct blitz_socket *s);
    /* A TCP connect's time limit the kernel can keep itself: 1 when it
     * will (the op's timespec is set), 0 for the runtime's timer. */
    int (*limit_connect)(struct blitz__io *io, blitz_io *op, int64_t limit_ns);
    void (*poll)(struct blitz__io *io);
    void (*park)(struct blitz__io *io, blitz__parker *p, uint64_t timeout_ns, void (*woke)(void *),
                 void *arg);
    void (*wait)(struct blitz__io *io, uint64_t timeout_ns);
    void (*dispatch)(struct blitz__io *io);
    /* Completions known to wait without a system call. */
    int (*ready_cheap)(struct blitz__io *io);
    /* Every parked worker waits in the backend, not only the sleeper. */
    int (*parks_workers)(struct blitz__io *io);
    void (*worker_start)(struct blitz__io *io, uint32_t index);
    void (*driver_start)(struct blitz__io *io);
    /* A current-thread driver stops driving. */
    void (*after_drive)(struct blitz__io *io);
    /* Gives queued submissions to the kernel. */
    void (*flush)(struct blitz__io *io);
    /* Shutdown: waits until the kernel holds no op. */
    void (*drain)(struct blitz__io *io);
    /* The descriptor that wakes worker `index` (UINT32_MAX: the
     * current-thread driver); NULL: io->wake_fd for all. */
    int (*wake_fd)(const struct blitz__io *io, uint32_t index);
} blitz__io_backend;

/* The backends, in the order tried without a preference: the completion
 * ring (uring.c), the Linux edge-triggered readiness one, kqueue
 * (kqueue.c, Darwin and the BSDs), poll (poll.c). Each is always there;
 * one compiled out fails its init with BLITZ_ENOSYS. */
#if BLITZ__HAS_IO
BLITZ_PRIVATE const blitz__io_backend *blitz__backend_ring(void);
BLITZ_PRIVATE const blitz__io_backend *blitz__backend_edge(void);
BLITZ_PRIVATE const blitz__io_backend *blitz__backend_kqueue(void);
BLITZ_PRIVATE const blitz__io_backend *blitz__backend_poll(void);

/* The readiness backends' shared parts (readiness.c). */
BLITZ_PRIVATE blitz_poll blitz__ready_submit(blitz_cx *cx, blitz_io *op);
BLITZ_PRIVATE void blitz__ready_poll(struct blitz__io *io);
BLITZ_PRIVATE void blitz__ready_park(struct blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg);

/* A readiness backend's ring for file ops (uring.c): one ring, no wake
 * poll, its completions signalled on io->shared_efd, which the backend
 * watches and answers with blitz__uring_files_reap. init fails (and
 * takes nothing) where io_uring cannot start; destroy and drain are
 * no-ops without a ring. */
BLITZ_PRIVATE int blitz__uring_files_init(struct blitz__io *io);
BLITZ_PRIVATE void blitz__uring_files_reap(struct blitz__io *io);
BLITZ_PRIVATE int blitz__uring_wait_files(struct blitz__io *io, const blitz__atomic_u32 *word,
                                          uint32_t seq, uint64_t timeout_ns, uint32_t spin);
BLITZ_PRIVATE void blitz__uring_poke_files(struct blitz__io *io);
BLITZ_PRIVATE void blitz__uring_files_mute(struct blitz__io *io);
BLITZ_PRIVATE int blitz__uring_files_mine(struct blitz__io *io);
BLITZ_PRIVATE void blitz__uring_files_unmute(struct blitz__io *io);
BLITZ_PRIVATE void blitz__uring_files_destroy(struct blitz__io *io);
/* Shutdown: reaps the rings until the kernel holds no op. */
BLITZ_PRIVATE void blitz__uring_drain(struct blitz__io *io);
#endif /* BLITZ__HAS_IO */
#endif
