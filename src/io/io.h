/* The I/O driver's private structures (driver.c and the backends).
 *
 * One driver per runtime, over one backend (backend.h). A socket is a
 * descriptor plus a small lock-protected record: for a readiness backend
 * a pair of event sequence numbers and the list of ops waiting for
 * readiness (Tokio's ScheduledIo); for a completion backend the list of
 * ops the kernel holds. Ops are the caller's blitz_io structs, linked
 * intrusively. */
#ifndef BLITZ__IO_H
#define BLITZ__IO_H
#include "../time/time.h"
#include "backend.h"

/* Op states (blitz_io.blitz__state). */
#define BLITZ__IO_IDLE       0u /* not started, or finished and consumed */
#define BLITZ__IO_WAIT       1u /* readiness: in the socket's waiter list */
#define BLITZ__IO_RETRY      2u /* readiness: woken by an event, try again */
#define BLITZ__IO_INFLIGHT   3u /* completion: submitted, the kernel owns the buffer */
#define BLITZ__IO_CANCELLING 4u /* completion: cancelled, completion still due */
#define BLITZ__IO_DONE       5u /* completed; the result is in blitz__res */

/* Op kinds. */
#define BLITZ__OP_RECV      1u
#define BLITZ__OP_SEND      2u
#define BLITZ__OP_SEND_ALL  3u
#define BLITZ__OP_RECVV     4u
#define BLITZ__OP_SENDV     5u
#define BLITZ__OP_RECV_FROM 6u
#define BLITZ__OP_SEND_TO   7u
#define BLITZ__OP_ACCEPT    8u
#define BLITZ__OP_CONNECT   9u
/* Descriptor ops (io_fd.c): read(2)/write(2) on pipes, ttys, devices and
 * sockets, and a plain readiness wait. A completion backend carries them as a kernel readiness wait
 * followed by the system call, which works whatever the descriptor's
 * O_NONBLOCK flag. */
#define BLITZ__OP_FD_READ      10u
#define BLITZ__OP_FD_WRITE     11u
#define BLITZ__OP_FD_WRITE_ALL 12u
#define BLITZ__OP_FD_POLL      13u
/* A receive into a buffer the runtime lends (recv_buf.c): carried as a
 * descriptor op, so it waits without a buffer (readiness, or a kernel
 * readiness wait) and takes one only for the system call. */
#define BLITZ__OP_RECV_BUF 14u
#define BLITZ__OP_IS_FD(k) ((k) >= BLITZ__OP_FD_READ && (k) <= BLITZ__OP_RECV_BUF)

#define BLITZ__DIR_READ  0u
#define BLITZ__DIR_WRITE 1u

/* blitz_io.blitz__flags */
#define BLITZ__OPF_CONNECTING 1u /* connect(2) returned EINPROGRESS */
#define BLITZ__OPF_URING      2u /* submitted to the completion backend (its msghdr is in the op) */
/* A TCP connect with a time limit, timed by the kernel (a linked timeout
 * behind the CONNECT, see limit_connect) or by the runtime's timer. */
#define BLITZ__OPF_LIMIT_KERNEL 4u
#define BLITZ__OPF_LIMIT_TIMER  8u
#define BLITZ__OPF_COUNTED      16u /* started; counted completed when it ends (metrics) */

/* A TCP connect keeps its address at the start of the op's scratch (an
 * IPv6 socket address takes 28 of blitz_addr's 128 bytes), then the timer
 * and the kernel's timespec of its time limit. */
#define BLITZ__CONNECT_ADDR_MAX 32u
#define BLITZ__CONNECT_TIMER_AT 40u
#define BLITZ__CONNECT_TS_AT    (BLITZ__CONNECT_TIMER_AT + sizeof(blitz_timer))

/* Bits from here up: 1 + the index of the ring the op was submitted to. */
#define BLITZ__OPF_RING_SHIFT 8u

#define BLITZ__IO_FOREVER UINT64_MAX
#define BLITZ__IO_MAX_IOV 16
#define BLITZ__IO_EVENTS  256

/* Data a multishot receive put in a provided buffer, not yet read. */
typedef struct blitz__rbuf {
    uint32_t ring; /* index of the ring whose pool holds the buffer */
    uint32_t bid;
    uint32_t off, len;
} blitz__rbuf;

struct blitz_socket {
    blitz__sock_t fd;
    int family;
    int type;
    int closed;    /* under lock */
    int listening; /* set before the socket is handed out */
    /* A listener blitz bound itself (not adopted, so no other process
     * shares it): its close stops the listening at once. */
    int listen_own;
    struct blitz__io *io;
    blitz__mutex lock;
    /* References. Low 32 bits: holders that may use the descriptor (the
     * handle, an op in the kernel, a task between its start of an op and
     * the end of its system call); the descriptor is closed when they
     * are gone. High 32 bits: holders of the memory only (a task whose op
     * waits for readiness or a completion: it will look at the socket's
     * lock and state, never its descriptor, before it takes a descriptor
     * reference again). The memory goes when both are gone. */
    blitz__atomic_u64 refs;
    int fd_closed;      /* set once the descriptor is closed (see refs) */
    int fd_placeholder; /* the descriptor now names a placeholder (release_early) */
    /* Readiness: bumped under lock by every event of that direction. */
    blitz__atomic_u32 rd_seq, wr_seq;
    /* poll backend: directions that have waiters (bit per direction). */
    blitz__atomic_u32 want;
    blitz__atomic_u32 rd_hot;  /* the last receive filled its buffer */
    blitz__atomic_u32 rd_bulk; /* the last receive got a pool buffer's worth or more */
    /* Readiness, TCP sockets: 1 + the read sequence number at which a
     * receive came back short (the socket was drained then), 0 for none.
     * Until the next read event a receive waits without a system call. */
    blitz__atomic_u32 rd_drained;
    blitz__atomic_u32 rd_final; /* the backend saw the peer's FIN, a hang-up or an error */
    int poll_slot;              /* index in the poll set, -1 when not in it (poll_lock) */
    blitz_io *ops;              /* waiting (readiness) or in flight (completion); under lock */
    /* Multishot accept (completion backend; listeners; under lock): armed in the
     * kernel, a cancel of it is due (the queue is full), connections
     * accepted before anyone asked, a pending error. */
    int ms_armed, ms_cancelling;
    int ms_err;
    uint32_t ms_ring; /* index of the ring the multishot accept is armed in */
    int *ms_fds;
    uint32_t ms_head, ms_count, ms_cap;
    int ms_spare;      /* a connection the queue had no memory for, -1 for none */
    uint32_t ms_nomem; /* connections closed for want of memory, not yet reported */
    /* Multishot receive (completion backend; stream sockets; under lock): armed in
     * the kernel (in ring rms_ring), a cancel of it is due, how the last
     * one ended, and the data received and not yet read, in order. */
    int rms_armed, rms_cancelling;
    /* Released before each arming (of this multishot receive, or of a
     * listener's multishot accept), acquired by each completion: the
     * kernel orders the CQE after the SQE, but a race detector cannot see
     * it (the socket may be new to the reaping thread). */
    blitz__atomic_u32 rms_published;
    uint32_t rms_ring;
    int rms_nobufs; /* ended for want of buffers: the next receive is single-shot */
    int rms_off;    /* the kernel refused it (EINVAL): single-shot receives only */
    int rms_eof;
    int32_t rms_err;
    int rms_lost; /* data was dropped for want of memory: every receive fails */
    blitz__rbuf *rq;
    uint32_t rq_head, rq_count, rq_cap;
    /* Data of receives cancelled after the kernel had filled them
     * (io_salvage.c; under lock), in order, and an error in keeping it.
     * salvage_n: nonzero while either is there (read without the lock). */
    struct blitz__salvage *salvage_head, *salvage_tail;
    int32_t salvage_err;
    blitz__atomic_u32 salvage_n;
    struct blitz_socket *all_next, *all_prev; /* every live socket (socks_lock) */
    struct blitz_socket *free_next;
    BLITZ__MAGIC_MEMBER
};

/* The socket's memory goes only after its last reference, so a check
 * while an op of it is pending is safe. */
#define BLITZ__SOCK_CHECK(s) \
    BLITZ__MAGIC_CHECK(s, BLITZ__MAGIC_SOCKET, "socket used after blitz_sock_close")

typedef struct blitz__io {
    blitz_runtime *rt;
    const blitz__io_backend *be;
    int wake_fd; /* writing 8 bytes to it wakes a thread blocked in the backend */
    int wake_rd; /* the end of the wake-up object the backend waits on */
    void *port;  /* Windows: the completion port, the only wait and wake-up object */
    /* One thread at a time waits in the backend or dispatches its events. */
    blitz__mutex lock;
    blitz__atomic_u32 shutdown;
    /* Every live socket, and readiness sockets whose descriptor is closed
     * but whose memory waits for the next dispatch cycle (an event fetched
     * before the close may still name them). */
    blitz__mutex socks_lock;
    blitz_socket *all;
    blitz_socket *free_list;
    blitz__atomic_u32 nsocks; /* live sockets */
    /* When a listener was last closed (blitz__now_ns): its socket may
     * outlive the close for a moment (a completion backend: until the kernel lets go
     * of its accept; poll: until a blocked ppoll, which holds the file,
     * returns), and a listen on its address meanwhile retries. */
    blitz__atomic_u64 listener_closed_ns;
    blitz__atomic_u32 has_free; /* free_list is not empty */

    /* The Linux edge-triggered backend. */
    int epfd;
    int nevents;
    void *events; /* its event array */

    /* poll */
    blitz__mutex poll_lock;
    blitz_socket **pset;
    uint32_t pcount, pcap;
    struct pollfd *pfds;
    blitz_socket **psocks;
    uint32_t pfd_cap;
    int npfds;
    blitz__atomic_u32 poll_blocked;

    /* The completion backend: a ring per worker, then the shared ring (the only one of
     * a current-thread runtime). */
    struct blitz__ring *rings;
    uint32_t nrings;
    struct blitz__ring *shared;
    /* Multi-thread: the kernel signals it for every CQE of the shared
     * ring, and every worker ring polls it, so a parked worker reaps
     * completions of ops submitted by threads that are not workers. */
    int shared_efd;
    blitz__atomic_u64 inflight; /* ops the kernel holds */
    int skip_cancel_cqe;
    int ms_accept;    /* multishot accept and RECVSEND_POLL_FIRST are available (Linux 5.19+) */
    int link_timeout; /* linked timeouts are available (Linux 5.5+) */
    /* Multishot receive with provided buffers is available (Linux 6.0+)
     * and wanted (BLITZ_URING_RECV_BUFS > 0); cleared if the kernel
     * refuses it. */
    blitz__atomic_u32 ms_recv;
    /* Counters for tests and diagnosis. */
    blitz__atomic_u64 rms_armed_count, rms_nobufs_count, rms_held_cancels;
    blitz__atomic_u64 link_timeout_count; /* connects queued with a LINK_TIMEOUT */
    /* File ops the ring carries out itself (bit per BLITZ__UF_*, from the
     * start-up probe; uring_file.c). */
    uint32_t uf_ops;
    /* A readiness backend asked for (files_wanted) and got (files_ring) a
     * ring of its own for file ops: the shared ring alone, whose eventfd
     * the backend watches (blitz__uring_files_init). */
    int files_wanted, files_ring;
    /* File ops in flight on the shared ring, and whether a thread waits
     * for them in it (blitz__uring_wait_files). */
    blitz__atomic_u32 shared_files, shared_waiter;
    /* Idle lent-receive buffers (recv_buf.c): a list through their first
     * word, at most BLITZ__BUF_POOL_KEEP of them. */
    blitz__mutex bpool_lock;
    void *bpool;
    uint32_t bpool_n;
    blitz__atomic_u64 bpool_out; /* heap buffers lent and not yet given back */
} blitz__io;

/* The buffers blitz_sock_recv_buf lends where no provided buffer serves. */
#ifndef BLITZ_RECV_BUF_SIZE
#define BLITZ_RECV_BUF_SIZE 16384u
#endif
#define BLITZ__BUF_POOL_KEEP 64u

/* Provided buffers of multishot receives, per ring. A power of two;
 * 0 turns multishot receives off. */
#ifndef BLITZ_URING_RECV_BUFS
#define BLITZ_URING_RECV_BUFS 256u
#endif
#ifndef BLITZ_URING_RECV_BUF_SIZE
#define BLITZ_URING_RECV_BUF_SIZE 4096u
#endif
/* A socket whose reader lags holds at most this many buffers: then its
 * multishot receive is cancelled until the reader catches up. */
#define BLITZ__RECV_MS_HOLD (BLITZ_URING_RECV_BUFS / 8u > 2u ? BLITZ_URING_RECV_BUFS / 8u : 2u)

#if BLITZ__WIN32
/* One overlapped operation on a socket attached to the completion port
 * (iocp_sock.c). From a start that returned pending until its packet is
 * reaped the kernel owns the op and its buffers, even after a cancel. */
typedef struct blitz__iocp_op {
    OVERLAPPED ov; /* first: a packet's lpOverlapped names the op */
    SOCKET sock;
    DWORD flags;  /* WSARecv's in/out flags */
    INT from_len; /* WSARecvFrom's address length */
    int handle;   /* sock is a pipe end's HANDLE: ReadFile / WriteFile */
    /* Runs on the reaping thread with bytes (>= 0) or a code. */
    void (*done)(struct blitz__iocp_op *op, int64_t res);
    void *arg;
} blitz__iocp_op;

/* Packets taken per wait. */
#define BLITZ__IOCP_BATCH 64
/* AcceptEx's room per address: the largest socket address, plus the 16
 * bytes it asks for; an accept's buffer holds two. */
#define BLITZ__IOCP_ADDR_SLOT ((DWORD)sizeof(struct sockaddr_storage) + 16u)
#endif

#if BLITZ__HAS_SOCKETS
/* Backends (each in its own file, stubs when compiled out). */
BLITZ_PRIVATE int blitz__parse_index(const char *s, uint32_t *out);
BLITZ_PRIVATE int blitz__addr_valid(const blitz_addr *a);
BLITZ_PRIVATE void blitz__addr_set_from(blitz_addr *a, uint32_t namelen, int family);

/* Shared by the backends (io_driver.c). */
BLITZ_PRIVATE void blitz__op_set_state(blitz_io *op, uint32_t st);
BLITZ_PRIVATE void blitz__io_wake(blitz__io *io, blitz_waker w);
BLITZ_PRIVATE void blitz__op_link(blitz_socket *s, blitz_io *op);
BLITZ_PRIVATE void blitz__op_unlink(blitz_socket *s, blitz_io *op);
BLITZ_PRIVATE void blitz__sock_ref(blitz_socket *s);
BLITZ_PRIVATE void blitz__sock_unref(blitz_socket *s);
/* The socket table (sock_table.c). */
BLITZ_PRIVATE void blitz__sock_free_mem(blitz_socket *s);
BLITZ_PRIVATE void blitz__io_free_deferred(blitz__io *io);
BLITZ_PRIVATE void blitz__sock_unref_mem(blitz_socket *s);
BLITZ_PRIVATE void blitz__sock_fd_to_mem(blitz_socket *s);
BLITZ_PRIVATE int blitz__sock_mem_to_fd(blitz_socket *s);
BLITZ_PRIVATE void blitz__sock_close_fd(blitz__sock_t fd, int family);
BLITZ_PRIVATE int blitz__sock_wrap(blitz__io *io, blitz__sock_t fd, int family, int type,
                                   blitz_socket **out);
BLITZ_PRIVATE int blitz__op_result(blitz_io *op, int64_t r);
BLITZ_PRIVATE int blitz__fifo_grow(void **buf, uint32_t *head, uint32_t count, uint32_t *cap,
                                   size_t elem, uint32_t first);
BLITZ_PRIVATE void blitz__io_complete(blitz__io *io, blitz_io *op, int32_t res, uint32_t flags);
/* A socket of the platform's (sock_table.c; POSIX: non-blocking). */
BLITZ_PRIVATE int blitz__sock_open(int family, int type, blitz__sock_t *out);
/* blitz_buf.blitz__kind: whose buffer the view holds. */
#define BLITZ__BUF_RING 1u /* a provided buffer of io_uring ring blitz__owner */
#define BLITZ__BUF_HEAP 2u /* a buffer of driver blitz__owner's pool */
/* Lent receive buffers (recv_buf.c). */
BLITZ_PRIVATE int64_t blitz__recv_buf_attempt(blitz_io *op);
BLITZ_PRIVATE int blitz__recv_buf_salvage(blitz_socket *s, blitz_io *op, int64_t *r);
BLITZ_PRIVATE void blitz__recv_buf_pool_free(blitz__io *io);
/* Data of receives cancelled too late (io_salvage.c). */
BLITZ_PRIVATE int blitz__salvage_kind(uint32_t kind);
BLITZ_PRIVATE int blitz__salvage_worth(const blitz_socket *s, int64_t res);
BLITZ_PRIVATE void blitz__salvage_keep(blitz_socket *s, const blitz_io *op, size_t n,
                                       uint32_t from_len);
BLITZ_PRIVATE int blitz__salvage_take(blitz_socket *s, blitz_io *op, int64_t *r);
BLITZ_PRIVATE int blitz__salvage_waiting(const blitz_socket *s);
BLITZ_PRIVATE void blitz__salvage_release(blitz_socket *s);
#endif /* BLITZ__HAS_SOCKETS */

#if BLITZ__WIN32
/* The completion port backend (iocp.c) and its socket ops (iocp_sock.c). */
BLITZ_PRIVATE const blitz__io_backend *blitz__backend_iocp(void);
BLITZ_PRIVATE int blitz__iocp_open(int family, int type, SOCKET *out);
BLITZ_PRIVATE int blitz__iocp_attach(blitz__io *io, SOCKET s);
BLITZ_PRIVATE int blitz__iocp_attach_handle(blitz__io *io, HANDLE h);
BLITZ_PRIVATE int blitz__iocp_socket(blitz__io *io, int family, int type, SOCKET *out);
BLITZ_PRIVATE uint32_t blitz__iocp_reap(blitz__io *io, uint64_t timeout_ns);
BLITZ_PRIVATE blitz_poll blitz__iocp_submit(blitz_cx *cx, blitz_io *op);
BLITZ_PRIVATE void blitz__iocp_op_cancel(blitz__io *io, blitz_io *op);
#endif

#if BLITZ__HAS_IO
/* One non-blocking attempt of the op's system call: bytes, a new
 * descriptor (accept), 0 (connect), or -errno. */
BLITZ_PRIVATE int64_t blitz__op_attempt(blitz_io *op);
BLITZ_PRIVATE struct iovec *blitz__op_iov(const blitz_io *op, struct iovec *one, size_t *n);
BLITZ_PRIVATE void blitz__io_ready(blitz_socket *s, int rd, int wr);
BLITZ_PRIVATE void blitz__io_drain_fd(int fd);
/* Multishot receive (io_recv_ms.c). */
BLITZ_PRIVATE blitz_poll blitz__recv_ms_start(blitz_cx *cx, blitz_io *op, int *single_shot);
BLITZ_PRIVATE void blitz__recv_ms_close(blitz_socket *s);
BLITZ_PRIVATE void blitz__recv_ms_release(blitz_socket *s);
BLITZ_PRIVATE int blitz__recv_ms_wants(const blitz_socket *s, uint32_t kind, uint32_t dir);
BLITZ_PRIVATE int blitz__recv_ms_direct(blitz_socket *s);
BLITZ_PRIVATE void blitz__recv_ms_give_back(void *ring, uint32_t bid);
/* The common poll of every op kind (io_driver.c), and the system call of
 * the descriptor kinds (io_fd.c). */
BLITZ_PRIVATE blitz_poll blitz__io_op_poll(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                           uint32_t kind, const void *buf, size_t len,
                                           uint32_t dir);
BLITZ_PRIVATE int64_t blitz__fd_attempt(blitz_io *op);

/* File operations the ring carries out itself (uring_file.c). */
enum {
    BLITZ__UF_OPEN = 1,
    BLITZ__UF_CLOSE,
    BLITZ__UF_READ,  /* off -1: at the file position */
    BLITZ__UF_WRITE, /* off -1: at the file position */
    BLITZ__UF_FSYNC,
    BLITZ__UF_FDATASYNC,
    BLITZ__UF_FTRUNCATE, /* to length off */
    BLITZ__UF_STAT,
    BLITZ__UF_LSTAT,
    BLITZ__UF_FSTAT,
    BLITZ__UF_RENAME,
    BLITZ__UF_UNLINK,
    BLITZ__UF_RMDIR,
    BLITZ__UF_MKDIR,
    BLITZ__UF_SYMLINK, /* path: the target, path2: the new link */
    BLITZ__UF_LINK,
    BLITZ__UF_FALLOCATE, /* len bytes at off */
    /* Whole files, one submission of linked SQEs on a direct descriptor:
     * OPENAT (flags, mode) + WRITE of len at off + CLOSE; OPENAT + READ
     * of up to len + READ of what follows (into stx) + CLOSE. link_res
     * holds each step's result. */
    BLITZ__UF_WRITE_FILE,
    BLITZ__UF_READ_FILE
};
#define BLITZ__UF_LINKS 4

/* One file op in the kernel. Its owner (the op's heap record, which
 * embeds it) fills the request; the buffer and paths stay alive until
 * the completion. state: INFLIGHT while the kernel holds it, then DONE
 * (the owner's poll takes res), or INFLIGHT|ABANDONED when the owner gave
 * up: the completion then calls `discard`, which releases the record. */
typedef struct blitz__ufile {
    /* Each SQE's user_data is &link[step] (tagged); every entry points
     * back to the record, so link[0] must come first. */
    blitz__atomic_u64 link[BLITZ__UF_LINKS];
    blitz__atomic_u32 due; /* CQEs still to come */
    int32_t link_res[BLITZ__UF_LINKS];
    int slot; /* the direct descriptor of a chain, or -1 */
    blitz__atomic_u32 state;
    int32_t res;
    blitz_waker waker;
    struct blitz__io *io;
    uint32_t ring;
    void (*discard)(struct blitz__ufile *u);
    int op, fd, flags;
    uint32_t mode;
    void *buf;
    size_t len;
    int64_t off;
    const char *path, *path2;
    /* STAT kinds: the kernel's struct statx (256 bytes). */
    uint64_t stx[32];
} blitz__ufile;

BLITZ_PRIVATE int blitz__ufile_can(blitz_runtime *rt, int op);
BLITZ_PRIVATE int blitz__ufile_submit(blitz_cx *cx, blitz__ufile *u);
BLITZ_PRIVATE int blitz__ufile_done(blitz__ufile *u);
BLITZ_PRIVATE int blitz__ufile_cancel(blitz__ufile *u);
BLITZ_PRIVATE void blitz__ufile_complete(blitz__io *io, blitz__ufile *u, int32_t res);
BLITZ_PRIVATE void blitz__ufile_probe(blitz__io *io, const void *probe);
BLITZ_PRIVATE void blitz__ufile_stat(const blitz__ufile *u, struct stat *st);
BLITZ_PRIVATE void blitz__ufile_ring_init(blitz__io *io, int ring_fd, uint32_t sq_entries);
#endif /* BLITZ__HAS_IO */
#endif
