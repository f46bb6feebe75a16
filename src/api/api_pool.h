/* Public API: the blocking pool, files, DNS, signals, processes. */

/* ---------------------------------------------------------------------------
 * The blocking pool
 *
 * Work that blocks a thread (a system call without an async form, a long
 * computation, a library that sleeps) runs on the runtime's blocking pool,
 * never on a worker. Threads start on demand, up to
 * blitz_config.max_blocking_threads, and exit after
 * blitz_config.blocking_keep_alive_ns without work. Shutdown cancels the
 * jobs that have not started and waits for the running ones.
 * ------------------------------------------------------------------------- */

/* Private: a job's place in the pool's queue. */
struct blitz__pool_job {
    struct blitz__pool_job *next, *prev;
    /* Runs the job on a pool thread; `cancelled` when it never will run
     * (shutdown), so it only reports that. */
    void (*run)(struct blitz__pool_job *job, int cancelled);
    int linked; /* in a pool list (guarded by the pool's lock) */
};

/* Private: an op carried out by a pool thread. Everything the thread
 * touches lives in a record on the heap that the op points at, so the op
 * (and the task's state around it) can be reused or freed the moment the
 * task stops waiting, whatever the thread is doing. */
typedef struct blitz__pool_rec blitz__pool_rec;
typedef struct blitz__pool_op {
    blitz__pool_rec *rec;
} blitz__pool_op;

/* Runs fn(arg) on a pool thread. The handle is an ordinary task handle:
 * await it with blitz_join, block on it with blitz_join_blocking, read its
 * status, release it. blitz_task_cancel before the job started removes it
 * from the queue at once (it completes as cancelled and fn never runs);
 * a running job cannot be stopped and finishes normally.
 * `handle` may be NULL (detached).
 * Returns BLITZ_OK, BLITZ_EINVAL (NULL rt or fn), BLITZ_ENOMEM,
 * BLITZ_ESHUTDOWN, BLITZ_EFULL (blitz_config.blocking_queue_capacity is set
 * and that many jobs already wait for a thread), or a thread-creation error
 * when no pool thread exists and none could be started. */
BLITZ_API int blitz_spawn_blocking(blitz_runtime *rt, blitz_fn fn, void *arg, blitz_task **handle);

typedef struct blitz_blocking_opts {
    blitz_fn fn;        /* required: called with the job's own copy of state */
    const void *state;  /* copied into the job; NULL = zero-filled */
    size_t size;        /* bytes of state, 1..BLITZ_MAX_STATE_SIZE */
    blitz_drop_fn drop; /* optional: frees what the state owns */
} blitz_blocking_opts;

/* blitz_spawn_blocking with a state block that the job owns (as
 * blitz_spawn copies a task's state): fn gets a pointer to the copy, and
 * blitz_task_state(handle) reads it once the job has finished. Nothing the
 * job writes can outlive the job, so the spawner may give up waiting at any
 * time. Same returns as blitz_spawn_blocking (EINVAL also for a bad size). */
BLITZ_API int blitz_spawn_blocking_ex(blitz_runtime *rt, const blitz_blocking_opts *opts,
                                      blitz_task **handle);

/* An awaitable spawn that waits for room in a bounded queue instead of
 * failing with BLITZ_EFULL:
 *   BLITZ_AWAIT(s, blitz_spawn_blocking_await(cx, &s->sp, &opts));
 *   if (s->sp.result == BLITZ_OK) ... s->sp.task is the handle ...
 * Without a capacity it never waits. Zero-filled is ready to use; READY
 * once the job was queued (result BLITZ_OK, task set) or failed (result
 * < 0, task NULL). Waiters get room first come, first served. `opts` is
 * read at every poll until READY: keep it (and its state) in the task
 * state, not in a block that ends across the await. */
typedef struct blitz_blocking_spawn {
    int result;
    blitz_task *task;
    struct blitz__pool_op blitz__op;
    const blitz_blocking_opts *blitz__opts; /* blitz_op_spawn_blocking_await's */
} blitz_blocking_spawn;
BLITZ_API blitz_poll blitz_spawn_blocking_await(blitz_cx *cx, blitz_blocking_spawn *op,
                                                const blitz_blocking_opts *opts);
/* Stops waiting for room (a blitz_cancel_fn; op is the blitz_blocking_spawn). */
BLITZ_API void blitz_spawn_blocking_cancel(blitz_cx *cx, void *op);
/* blitz_spawn_blocking_await as a blitz_op (cancel:
 * blitz_spawn_blocking_cancel); `opts` is read at every poll, as above. */
BLITZ_API blitz_op blitz_op_spawn_blocking_await(blitz_blocking_spawn *op,
                                                 const blitz_blocking_opts *opts);

typedef struct blitz_pool_stats {
    uint32_t threads;     /* alive pool threads */
    uint32_t idle;        /* of which waiting for work */
    uint32_t queued;      /* jobs waiting for a thread */
    uint32_t max_threads; /* the cap */
    uint64_t threads_started;
    uint64_t jobs_run; /* jobs taken by a thread */
    uint64_t rejected; /* BLITZ_EFULL answers */
} blitz_pool_stats;

/* A snapshot of the pool (taken under its lock, so one instant).
 * BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_runtime_pool_stats(blitz_runtime *rt, blitz_pool_stats *out);

/* Frees memory that blitz allocated and handed to the caller (a whole
 * file's contents, a directory listing, resolved addresses); NULL is fine. */
BLITZ_API void blitz_free(void *p);

/* ---------------------------------------------------------------------------
 * Files
 *
 * Every file operation is an op awaited inside a task:
 *   typedef struct { BLITZ_CORO; blitz_fs_op op; int fd; char buf[4096]; } s;
 *   BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, "data.txt", BLITZ_FS_READ, 0));
 *   if (s->op.result < 0) ...error...; s->fd = (int)s->op.result;
 *   BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->fd, s->buf, sizeof s->buf));
 * `result` is >= 0 on success (bytes, a file descriptor, a count) or a
 * negative BLITZ_E* code (BLITZ_ENOENT, BLITZ_EACCES, ...; BLITZ_EFAULT
 * for a NULL buffer with a nonzero length, as the system call would give:
 * socket ops give BLITZ_EINVAL there). On an io_uring runtime the kernel
 * carries out the ops it has (probed once) from the worker's ring; the
 * rest, and every op on the other backends, run on the blocking pool.
 * Both paths give the same results and error codes.
 *
 * One op carries one operation at a time and is polled by one task. A
 * zero-filled op is ready to use; after READY it is ready for the next
 * operation. Paths and the data of writes are copied when the operation
 * starts, and reads land in a buffer of the operation's own that is copied
 * into yours when the op is READY (so at most BLITZ_FS_MAX_READ bytes per
 * read): neither a pool thread nor the kernel ever touches your memory.
 *
 * Cancellation (blitz_fs_cancel, a blitz_cancel_fn; also what
 * blitz_timeout_op calls) returns at once and leaves the op ready for the
 * next operation: one that has not started is dropped; one that is
 * running cannot be stopped, so its thread finishes it and then releases
 * what the result holds (closes a file it opened, frees data); one the
 * kernel holds is asked to stop, and its completion releases it. A task
 * cancelled while an op is pending has it withdrawn the same way, so
 * nothing is leaked.
 * ------------------------------------------------------------------------- */

/* Open flags (at least one of READ and WRITE). */
#define BLITZ_FS_READ     0x01
#define BLITZ_FS_WRITE    0x02
#define BLITZ_FS_APPEND   0x04 /* every write goes to the end (implies WRITE) */
#define BLITZ_FS_CREATE   0x08 /* create if missing (with `mode`) */
#define BLITZ_FS_TRUNCATE 0x10 /* cut to zero length on open */
#define BLITZ_FS_EXCL     0x20 /* with CREATE: fail with BLITZ_EEXIST if it exists */
#define BLITZ_FS_SYNC     0x40 /* every write waits for data and metadata (O_SYNC) */
#define BLITZ_FS_DSYNC    0x80 /* every write waits for the data (O_DSYNC) */
/* Bypass the page cache (O_DIRECT: buffers, offsets and lengths must be
 * aligned as the file system asks, else reads and writes fail with
 * BLITZ_EINVAL); BLITZ_EOPNOTSUPP where the system has no such flag. */
#define BLITZ_FS_DIRECT 0x100
/* Fail with BLITZ_ELOOP when the last component of the path is a symlink. */
#define BLITZ_FS_NOFOLLOW 0x200

typedef enum blitz_file_type {
    BLITZ_FILE_UNKNOWN = 0,
    BLITZ_FILE_REGULAR = 1,
    BLITZ_FILE_DIRECTORY = 2,
    BLITZ_FILE_SYMLINK = 3,
    BLITZ_FILE_OTHER = 4, /* device, FIFO, socket */
} blitz_file_type;

typedef struct blitz_fs_metadata {
    blitz_file_type type;
    uint32_t mode; /* permission bits (0777 and setuid/setgid/sticky) */
    uint64_t size;
    uint64_t mtime_ns, atime_ns, ctime_ns; /* since the epoch */
    uint64_t dev, ino, nlink;
    uint32_t uid, gid;
} blitz_fs_metadata;

/* One entry of blitz_fs_read_dir ("." and ".." are left out). */
typedef struct blitz_fs_dirent {
    const char *name;
    blitz_file_type type; /* BLITZ_FILE_UNKNOWN when the file system does not say */
} blitz_fs_dirent;

/* Most bytes one read returns (larger reads return this much). */
#define BLITZ_FS_MAX_READ ((size_t)2 * 1024 * 1024)

typedef struct blitz_fs_op {
    int64_t result; /* see above */
    /* blitz_fs_read_file: the contents (NUL-terminated, not counted);
     * blitz_fs_read_dir: an array of `result` entries, names sorted. The
     * caller owns it after READY and frees it with blitz_free. */
    void *data;
    struct blitz__pool_op blitz__op;
    /* Where the results go when READY (the caller's buffers). */
    void *blitz__out;
    const blitz_iovec *blitz__iov;
    int blitz__iovcnt;
    /* The call a blitz_op_fs_* constructor recorded, and its arguments. */
    int blitz__call, blitz__fd, blitz__flags;
    uint32_t blitz__mode;
    const char *blitz__path, *blitz__path2;
    const void *blitz__buf;
    size_t blitz__len;
    uint64_t blitz__off;
    const blitz_iovec *blitz__vec;
    int blitz__nvec;
    blitz_fs_metadata *blitz__md;
    int64_t blitz__off2;
} blitz_fs_op;

/* Opens `path` with BLITZ_FS_* flags (close-on-exec); `mode` is used when
 * a file is created (e.g. 0644, less the umask). Result: the file
 * descriptor. EINVAL for no READ/WRITE or unknown flags, EOPNOTSUPP for
 * BLITZ_FS_DIRECT where the system has no such flag. */
BLITZ_API blitz_poll blitz_fs_open(blitz_cx *cx, blitz_fs_op *op, const char *path, int flags,
                                   uint32_t mode);
/* Closes fd. Result 0. The descriptor is closed whatever the result, as
 * with close(2), even when the op cannot be started. */
BLITZ_API blitz_poll blitz_fs_close(blitz_cx *cx, blitz_fs_op *op, int fd);
/* Reads up to len bytes at the file position; result 0 at end of file. */
BLITZ_API blitz_poll blitz_fs_read(blitz_cx *cx, blitz_fs_op *op, int fd, void *buf, size_t len);
/* Writes all len bytes at the file position (partial writes are
 * continued); result len, or the error that stopped it. */
BLITZ_API blitz_poll blitz_fs_write(blitz_cx *cx, blitz_fs_op *op, int fd, const void *buf,
                                    size_t len);
/* The same at an offset, leaving the file position alone. */
BLITZ_API blitz_poll blitz_fs_pread(blitz_cx *cx, blitz_fs_op *op, int fd, void *buf, size_t len,
                                    uint64_t offset);
BLITZ_API blitz_poll blitz_fs_pwrite(blitz_cx *cx, blitz_fs_op *op, int fd, const void *buf,
                                     size_t len, uint64_t offset);
/* Vectored read and write (one system call each; the result may be short)
 * at `offset`, or at the file position when offset is -1. */
BLITZ_API blitz_poll blitz_fs_readv(blitz_cx *cx, blitz_fs_op *op, int fd, const blitz_iovec *iov,
                                    int iovcnt, int64_t offset);
BLITZ_API blitz_poll blitz_fs_writev(blitz_cx *cx, blitz_fs_op *op, int fd, const blitz_iovec *iov,
                                     int iovcnt, int64_t offset);
/* fsync / fdatasync. Result 0. */
BLITZ_API blitz_poll blitz_fs_fsync(blitz_cx *cx, blitz_fs_op *op, int fd);
BLITZ_API blitz_poll blitz_fs_fdatasync(blitz_cx *cx, blitz_fs_op *op, int fd);
/* Sets the file's length (ftruncate). Result 0. */
BLITZ_API blitz_poll blitz_fs_truncate(blitz_cx *cx, blitz_fs_op *op, int fd, uint64_t length);
/* Metadata of a path (following symlinks), of a path itself (lstat), or of
 * an open file, into *out. Result 0. */
BLITZ_API blitz_poll blitz_fs_stat(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                   blitz_fs_metadata *out);
BLITZ_API blitz_poll blitz_fs_lstat(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                    blitz_fs_metadata *out);
BLITZ_API blitz_poll blitz_fs_fstat(blitz_cx *cx, blitz_fs_op *op, int fd, blitz_fs_metadata *out);
/* rename, unlink, rmdir, mkdir. Result 0. */
BLITZ_API blitz_poll blitz_fs_rename(blitz_cx *cx, blitz_fs_op *op, const char *from,
                                     const char *to);
BLITZ_API blitz_poll blitz_fs_unlink(blitz_cx *cx, blitz_fs_op *op, const char *path);
BLITZ_API blitz_poll blitz_fs_rmdir(blitz_cx *cx, blitz_fs_op *op, const char *path);
BLITZ_API blitz_poll blitz_fs_mkdir(blitz_cx *cx, blitz_fs_op *op, const char *path, uint32_t mode);
/* mkdir -p: creates the missing parents too; an existing directory is not
 * an error (an existing non-directory is BLITZ_EEXIST). */
BLITZ_API blitz_poll blitz_fs_mkdir_all(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                        uint32_t mode);
/* Lists a directory into op->data (blitz_fs_dirent array); result: the
 * number of entries. */
BLITZ_API blitz_poll blitz_fs_read_dir(blitz_cx *cx, blitz_fs_op *op, const char *path);
/* Reads a whole file into op->data; result: its length. Unbounded: for a
 * path from untrusted input use blitz_fs_read_file_limit. */
BLITZ_API blitz_poll blitz_fs_read_file(blitz_cx *cx, blitz_fs_op *op, const char *path);
/* Creates or truncates `path` (mode 0666 before the umask) and writes
 * len bytes; result len. */
BLITZ_API blitz_poll blitz_fs_write_file(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                         const void *data, size_t len);
/* Creates `linkpath` as a symbolic link to `target`. Result 0. */
BLITZ_API blitz_poll blitz_fs_symlink(blitz_cx *cx, blitz_fs_op *op, const char *target,
                                      const char *linkpath);
/* Creates `to` as another name (a hard link) of the file `from`. Result 0. */
BLITZ_API blitz_poll blitz_fs_link(blitz_cx *cx, blitz_fs_op *op, const char *from, const char *to);
/* Reserves disk space for len bytes at offset, extending the file when
 * that reaches past its end (fallocate mode 0). Result 0; BLITZ_ENOSPC
 * when the space is not there, BLITZ_EINVAL for len 0. */
BLITZ_API blitz_poll blitz_fs_fallocate(blitz_cx *cx, blitz_fs_op *op, int fd, uint64_t offset,
                                        uint64_t len);
/* The op's cancel (a blitz_cancel_fn; op is the blitz_fs_op). */
BLITZ_API void blitz_fs_cancel(blitz_cx *cx, void *op);
/* The file ops as blitz_ops (cancel: blitz_fs_cancel), taking the same
 * arguments as the calls above; the arguments (paths, buffers, iovec
 * arrays, the metadata out pointer) must stay valid until the op is READY
 * or cancelled. */
BLITZ_API blitz_op blitz_op_fs_open(blitz_fs_op *op, const char *path, int flags, uint32_t mode);
BLITZ_API blitz_op blitz_op_fs_close(blitz_fs_op *op, int fd);
BLITZ_API blitz_op blitz_op_fs_read(blitz_fs_op *op, int fd, void *buf, size_t len);
BLITZ_API blitz_op blitz_op_fs_write(blitz_fs_op *op, int fd, const void *buf, size_t len);
BLITZ_API blitz_op blitz_op_fs_pread(blitz_fs_op *op, int fd, void *buf, size_t len,
                                     uint64_t offset);
BLITZ_API blitz_op blitz_op_fs_pwrite(blitz_fs_op *op, int fd, const void *buf, size_t len,
                                      uint64_t offset);
BLITZ_API blitz_op blitz_op_fs_fsync(blitz_fs_op *op, int fd);
BLITZ_API blitz_op blitz_op_fs_read_file(blitz_fs_op *op, const char *path);
BLITZ_API blitz_op blitz_op_fs_write_file(blitz_fs_op *op, const char *path, const void *data,
                                          size_t len);
/* Vectored I/O, syncing and sizing an open file. */
BLITZ_API blitz_op blitz_op_fs_readv(blitz_fs_op *op, int fd, const blitz_iovec *iov, int iovcnt,
                                     int64_t offset);
BLITZ_API blitz_op blitz_op_fs_writev(blitz_fs_op *op, int fd, const blitz_iovec *iov, int iovcnt,
                                      int64_t offset);
BLITZ_API blitz_op blitz_op_fs_fdatasync(blitz_fs_op *op, int fd);
BLITZ_API blitz_op blitz_op_fs_truncate(blitz_fs_op *op, int fd, uint64_t length);
/* Metadata into *out. */
BLITZ_API blitz_op blitz_op_fs_stat(blitz_fs_op *op, const char *path, blitz_fs_metadata *out);
BLITZ_API blitz_op blitz_op_fs_lstat(blitz_fs_op *op, const char *path, blitz_fs_metadata *out);
BLITZ_API blitz_op blitz_op_fs_fstat(blitz_fs_op *op, int fd, blitz_fs_metadata *out);
/* Names and directories (read_dir's listing lands in op->data). */
BLITZ_API blitz_op blitz_op_fs_rename(blitz_fs_op *op, const char *from, const char *to);
BLITZ_API blitz_op blitz_op_fs_unlink(blitz_fs_op *op, const char *path);
BLITZ_API blitz_op blitz_op_fs_rmdir(blitz_fs_op *op, const char *path);
BLITZ_API blitz_op blitz_op_fs_mkdir(blitz_fs_op *op, const char *path, uint32_t mode);
BLITZ_API blitz_op blitz_op_fs_mkdir_all(blitz_fs_op *op, const char *path, uint32_t mode);
BLITZ_API blitz_op blitz_op_fs_read_dir(blitz_fs_op *op, const char *path);
BLITZ_API blitz_op blitz_op_fs_symlink(blitz_fs_op *op, const char *target, const char *linkpath);
BLITZ_API blitz_op blitz_op_fs_link(blitz_fs_op *op, const char *from, const char *to);
BLITZ_API blitz_op blitz_op_fs_fallocate(blitz_fs_op *op, int fd, uint64_t offset, uint64_t len);

/* ---------------------------------------------------------------------------
 * DNS: name resolution on the blocking pool (getaddrinfo), cancellable
 *
 *   BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "example.com", 443, 0));
 *   for (int i = 0; i < s->dns.result; i++) ... s->dns.addrs[i] ...
 *   blitz_free(s->dns.addrs);
 *
 * Cancelling (blitz_dns_cancel, or blitz_timeout_op) never waits for the
 * resolver: a lookup still queued is dropped, a running one finishes on its
 * thread, which frees the answer nobody will read. The host name is copied.
 * ------------------------------------------------------------------------- */

/* One resolved address: `addr` holds a struct sockaddr_in or sockaddr_in6
 * of `len` bytes, with the port filled in. */
typedef struct blitz_resolved_addr {
    int family; /* AF_INET or AF_INET6 */
    uint32_t len;
    union {
        unsigned char bytes[112];
        uint64_t align;
    } addr;
} blitz_resolved_addr;

typedef struct blitz_dns_op {
    /* Number of addresses (at least one), or BLITZ_ENOHOST (no such
     * name, or none of the asked family), BLITZ_EDNSTEMP (try again
     * later), BLITZ_EDNS, BLITZ_EINVAL, BLITZ_ENOMEM, BLITZ_ECANCELED. */
    int result;
    /* The addresses, in the resolver's order of preference; the caller
     * owns them after READY and frees them with blitz_free. */
    blitz_resolved_addr *addrs;
    struct blitz__pool_op blitz__op;
    /* blitz_op_dns_resolve's arguments. */
    const char *blitz__host;
    uint16_t blitz__port;
    int blitz__family;
} blitz_dns_op;

/* Resolves `host` (a name or a numeric address) for TCP. With port 0,
 * `host` may carry the port: "example.com:443", "[::1]:8080" (see
 * blitz_host_port_split). family: 0 for any, 4 for IPv4 only, 6 for IPv6
 * only. A zero-filled op is ready to use;
 * the same rules as for file ops apply. */
BLITZ_API blitz_poll blitz_dns_resolve(blitz_cx *cx, blitz_dns_op *op, const char *host,
                                       uint16_t port, int family);
/* The op's cancel (a blitz_cancel_fn; op is the blitz_dns_op). */
BLITZ_API void blitz_dns_cancel(blitz_cx *cx, void *op);
/* blitz_dns_resolve as a blitz_op (cancel: blitz_dns_cancel); `host`
 * must stay valid until the op's first poll. */
BLITZ_API blitz_op blitz_op_dns_resolve(blitz_dns_op *op, const char *host, uint16_t port,
                                        int family);

/* Connecting by host name: resolves `host` (on the blocking pool), then
 * tries each address in the resolver's order until one connects:
 *
 *   BLITZ_AWAIT(s, blitz_tcp_connect_host(cx, &s->conn, "example.com", 443));
 *   if (s->conn.result == 0) ...s->conn.socket is yours (close it)...
 *
 * With port 0, `host` carries the port ("example.com:443", "[::1]:8080"),
 * so a "HOST:PORT" from a command line needs no splitting.
 * `host` must stay valid until the op is READY. attempt_timeout_ns (set it
 * before the first poll; 0 = none) bounds each attempt, so one address that
 * never answers does not hold back the next. result: 0 with `socket`, a DNS
 * error (BLITZ_ENOHOST, ...), or the error of the last attempt
 * (BLITZ_ECONNREFUSED, BLITZ_ETIMEDOUT, ...). `attempts` counts the
 * addresses tried. A zero-filled op is ready to use and reusable after
 * READY. Cancel with blitz_tcp_connect_host_cancel (also from a spawn
 * cancel hook): a lookup is abandoned, a connect in progress withdrawn, and
 * a socket connected meanwhile closed. */
typedef struct blitz_connect_op {
    int64_t result;
    blitz_socket *socket;
    int64_t attempt_timeout_ns;
    int attempts;
    int blitz__stage, blitz__next;
    blitz_dns_op blitz__dns;
    blitz_io blitz__io;
    blitz_addr blitz__addr;
    /* blitz_op_tcp_connect_host's arguments. */
    const char *blitz__host;
    uint16_t blitz__port;
} blitz_connect_op;

BLITZ_API blitz_poll blitz_tcp_connect_host(blitz_cx *cx, blitz_connect_op *op, const char *host,
                                            uint16_t port);
BLITZ_API void blitz_tcp_connect_host_cancel(blitz_cx *cx, void *op);
/* blitz_tcp_connect_host as a blitz_op (cancel: blitz_tcp_connect_host_cancel);
 * `host` must stay valid until the op is READY or cancelled. */
BLITZ_API blitz_op blitz_op_tcp_connect_host(blitz_connect_op *op, const char *host, uint16_t port);

/* ---------------------------------------------------------------------------
 * Signals
 *
 *   typedef struct { BLITZ_CORO; blitz_signal sig; } s;
 *   blitz_signal_init(&s->sig, SIGINT);   (then blitz_signal_add for more)
 *   BLITZ_AWAIT(s, blitz_signal_recv(cx, &s->sig));
 *   ... s->sig.signo arrived (s->sig.count times since the last recv) ...
 *   blitz_signal_deinit(&s->sig);
 *
 * A listener counts every delivery of its signals from the moment it is
 * initialised, whether or not a task awaits it at that moment; any number
 * of listeners may listen to the same signal and each sees every delivery
 * (the kernel merges deliveries of one standard signal that arrive before
 * blitz sees the first). While at least one listener exists for a signal,
 * its default action (terminating the process, for SIGINT or SIGTERM) is
 * replaced by a small handler that works in whichever thread the kernel
 * picks, runtime thread or not, so no signal mask needs setting anywhere;
 * the previous disposition comes back when the last listener goes. One
 * internal thread per process (started with the first listener) turns the
 * handler's counts into wake-ups. Listeners do not belong to a runtime.
 * ------------------------------------------------------------------------- */

typedef struct blitz_signal {
    int signo;      /* after a recv: the (lowest numbered) signal that arrived */
    uint64_t count; /* after a recv: deliveries since the previous recv */
    struct blitz_signal *blitz__next, *blitz__prev;
    uint64_t blitz__mask;    /* bit n-1 for signal n */
    uint64_t blitz__arrived; /* bits of signals arrived and not yet received */
    uint64_t blitz__pending; /* deliveries not yet received */
    blitz_waker blitz__waker;
    int blitz__has_waker;
} blitz_signal;

/* Starts listening to `signo`. BLITZ_EINVAL for NULL, a number outside
 * 1..64, SIGKILL, SIGSTOP, and the fault signals (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL) that a handler cannot meaningfully return from; BLITZ_EBUSY when
 * already initialised; an error from setting up the signal thread. The
 * listener must stay at its address until blitz_signal_deinit. */
#if defined(_WIN32)
/* Windows: the console's control events are the signals there are.
 * Ctrl-C is SIGINT, Ctrl-Break SIGBREAK; the console window closing, the
 * user logging off and the system shutting down have numbers of their
 * own (the last two reach services only). Windows ends the process soon
 * after one of those three, listened to or not: a listener gets the time
 * it allows (the handler does not return while the program runs on).
 * While nobody listens to an event its default action (ending the
 * process) stays. blitz_signal_init takes these and SIGINT only
 * (BLITZ_EINVAL for another number). */
#define BLITZ_SIGBREAK    21 /* CTRL_BREAK_EVENT (the C runtime's SIGBREAK) */
#define BLITZ_SIGHUP      1  /* CTRL_CLOSE_EVENT (SIGHUP's number elsewhere) */
#define BLITZ_SIGLOGOFF   32 /* CTRL_LOGOFF_EVENT */
#define BLITZ_SIGSHUTDOWN 33 /* CTRL_SHUTDOWN_EVENT */
#endif
BLITZ_API int blitz_signal_init(blitz_signal *s, int signo);
/* Listens to one more signal. Same errors (EINVAL when not initialised). */
BLITZ_API int blitz_signal_add(blitz_signal *s, int signo);
/* READY once a listened signal arrived since the previous recv (at once
 * when one arrived while nobody waited): fills signo and count and starts
 * counting afresh. Polled by one task at a time. On a listener that is not
 * initialised (or already deinitialised) it is READY at once with signo 0
 * and count 0, since nothing would ever arrive: check signo. */
BLITZ_API blitz_poll blitz_signal_recv(blitz_cx *cx, blitz_signal *s);
/* Without waiting: 1 when something arrived (signo and count filled), 0
 * when not, BLITZ_EINVAL for a listener not initialised. */
BLITZ_API int blitz_signal_try_recv(blitz_signal *s);
/* Stops waiting (a blitz_cancel_fn; op is the blitz_signal): drops the
 * registered waker; deliveries keep being counted. */
BLITZ_API void blitz_signal_cancel(blitz_cx *cx, void *s);
/* blitz_signal_recv as a blitz_op (cancel: blitz_signal_cancel). */
BLITZ_API blitz_op blitz_op_signal_recv(blitz_signal *s);
/* Stops listening and drops any registered waker. BLITZ_EINVAL when not
 * initialised. */
BLITZ_API int blitz_signal_deinit(blitz_signal *s);

/* ---------------------------------------------------------------------------
 * Processes
 *
 *   const char *argv[] = {"ls", "-l", NULL};
 *   blitz_command cmd = {argv, NULL, NULL, BLITZ_STDIO_NULL, BLITZ_STDIO_PIPE,
 *                        BLITZ_STDIO_INHERIT};
 *   int rc = blitz_process_spawn(rt, &cmd, &s->child); (BLITZ_ENOENT: no program)
 *   ... read s->child.stdout_fd: blitz_fs_read works on it, or adopt it
 *   with blitz_sock_adopt (then set s->child.stdout_fd = -1: the socket
 *   closes it) ...
 *   BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
 *   s->wait.exited ? s->wait.code : s->wait.signal
 *   blitz_process_release(&s->child);
 *
 * Waiting runs on a pool thread, which sleeps on the child's pidfd (Linux),
 * its process handle (Windows) or polls with a short sleep elsewhere, and notices within 50 ms that
 * its op was cancelled or the runtime is shutting down: a wait never holds up shutdown. A child is
 * reaped exactly once, and kill never signals a process id that was reaped and may have been
 * reused.
 *
 * The exit status needs the child to be reaped by blitz: with SIGCHLD set
 * to SIG_IGN (also when inherited from the parent across exec) the kernel
 * discards it at exit, and a waitpid(-1) elsewhere in the program takes
 * it. Such a wait ends with BLITZ_ECHILD. Listening to SIGCHLD with
 * blitz_signal, or a handler that does not reap, is fine.
 * ------------------------------------------------------------------------- */

typedef enum blitz_stdio {
    BLITZ_STDIO_INHERIT = 0, /* the parent's descriptor */
    BLITZ_STDIO_NULL = 1,    /* /dev/null */
    BLITZ_STDIO_PIPE = 2,    /* a pipe; the parent's end is in blitz_child */
} blitz_stdio;

typedef struct blitz_command {
    /* argv[0] is the program: a path (with a '/') or a name looked up in
     * PATH (Windows: as CreateProcessW looks it up, see the manual).
     * NULL-terminated. */
    const char *const *argv;
    /* The whole environment ("NAME=value", NULL-terminated), or NULL to
     * inherit this process's. */
    const char *const *env;
    const char *cwd; /* working directory, or NULL to inherit */
    blitz_stdio stdin_mode, stdout_mode, stderr_mode;
} blitz_command;

typedef struct blitz__proc blitz__proc;

typedef struct blitz_child {
    int pid;
    /* Parent ends of the pipes asked for (close-on-exec), else -1. The
     * caller may read and write them and close them; blitz_process_release
     * closes those that are not -1. A caller that closes one, or hands it
     * to blitz_sock_adopt (the socket then closes it), sets the field to
     * -1 first: release would otherwise close whatever descriptor has
     * that number by then. */
    int stdin_fd, stdout_fd, stderr_fd;
    blitz__proc *blitz__handle;
} blitz_child;

/* Starts a child process. Returns BLITZ_OK, BLITZ_EINVAL (NULL, empty
 * argv, unknown stdio mode), BLITZ_ENOENT (no such program, or no such
 * cwd), BLITZ_EACCES (not executable), BLITZ_ENOEXEC, BLITZ_ENOMEM, or
 * another exec or fork error: errors of the exec in the child are
 * reported here, not as an exit code. */
BLITZ_API int blitz_process_spawn(blitz_runtime *rt, const blitz_command *cmd, blitz_child *child);

typedef struct blitz_wait_op {
    /* BLITZ_OK, or BLITZ_ECANCELED, BLITZ_EINVAL, BLITZ_ECHILD (the status
     * was lost: see above; the other fields are 0) */
    int result;
    int exited; /* 1: exited with `code`; 0: killed by `signal` */
    int code;
    int signal;
    int core_dumped;
    struct blitz__pool_op blitz__op;
    blitz_child *blitz__child; /* blitz_op_process_wait's */
} blitz_wait_op;

/* READY once the child has ended (also if it had already ended and was
 * reaped by an earlier wait: the status is remembered). Several ops may
 * wait for one child. */
BLITZ_API blitz_poll blitz_process_wait(blitz_cx *cx, blitz_wait_op *op, blitz_child *child);
/* The wait op's cancel (a blitz_cancel_fn). */
BLITZ_API void blitz_process_wait_cancel(blitz_cx *cx, void *op);
/* blitz_process_wait as a blitz_op (cancel: blitz_process_wait_cancel). */
BLITZ_API blitz_op blitz_op_process_wait(blitz_wait_op *op, blitz_child *child);
/* Without waiting: 1 when the child has ended (the op's status fields
 * filled), 0 while it runs, BLITZ_EINVAL. */
BLITZ_API int blitz_process_try_wait(blitz_child *child, blitz_wait_op *status);
/* Sends a signal; BLITZ_ESRCH once the child has been reaped. */
BLITZ_API int blitz_process_kill(blitz_child *child, int signo);
/* SIGTERM. */
BLITZ_API int blitz_process_terminate(blitz_child *child);
/* Closes the pipe ends that are not -1 and lets go of the child; one not
 * yet reaped is reaped by a pool job when it ends (no zombie is left,
 * unless the runtime is shut down by then). BLITZ_EINVAL for NULL or a
 * child already released. A child is the caller's to release, also when
 * the runtime is freed first (a task that may be dropped releases it in
 * its drop function). */
BLITZ_API int blitz_process_release(blitz_child *child);

/* Runs a command to its end, feeding it a copy of `input` (stdin is
 * /dev/null when input is NULL) and collecting what it writes to stdout and stderr (the
 * command's stdio modes are not used). The pipes are read by a pool
 * thread. Cancelling kills the child (SIGKILL) and frees everything. */
typedef struct blitz_output_op {
    /* BLITZ_OK (see exited/code/signal), a spawn error, BLITZ_ECANCELED,
     * BLITZ_ECHILD (the output is there, the status was lost) */
    int result;
    int exited, code, signal;
    /* The output, NUL-terminated (not counted), or NULL; the caller owns
     * both after READY, whatever the result, and frees them with
     * blitz_free. */
    char *out, *err;
    size_t out_len, err_len;
    struct blitz__pool_op blitz__op;
    /* blitz_op_process_output's arguments. */
    const blitz_command *blitz__cmd;
    const void *blitz__input;
    size_t blitz__input_len;
} blitz_output_op;
BLITZ_API blitz_poll blitz_process_output(blitz_cx *cx, blitz_output_op *op,
                                          const blitz_command *cmd, const void *input,
                                          size_t input_len);
BLITZ_API void blitz_process_output_cancel(blitz_cx *cx, void *op);
/* blitz_process_output as a blitz_op (cancel: blitz_process_output_cancel);
 * `cmd` and `input` must stay valid until the op's first poll. */
BLITZ_API blitz_op blitz_op_process_output(blitz_output_op *op, const blitz_command *cmd,
                                           const void *input, size_t input_len);
