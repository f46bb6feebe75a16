/* Public declarations of blitz. This is the only source of the header half
 * of blitz.h; everything here is visible to every includer. */

/* API conventions (frozen for 1.0)
 *
 * Names: public names are blitz_<object>_<verb>; private ones, including
 * struct fields, have a double underscore (blitz__name). blitz_op_<name>
 * makes a blitz_op value of an op. Each function has one name, no macro
 * alias: calls that work on any socket are blitz_sock_*, and
 * blitz_tcp_ / blitz_udp_ / blitz_unix_ name only what is specific to one
 * kind (listen, bind, connect, options).
 *
 * Waiting ops: an op is awaited in a task with
 * BLITZ_AWAIT(s, blitz_<op>(cx, ...)) and has exactly one cancel,
 * void blitz_<op>_cancel(blitz_cx *cx, void *op), a blitz_cancel_fn: pass
 * it to blitz_op_make and blitz_timeout_op, or call it from a spawn cancel
 * hook or any thread with cx NULL. `op` is the object the op waits in (the
 * blitz_io, blitz_timer, blitz_task handle, channel op, ...). Cancels are
 * safe on an idle, pending or finished op; what became of the op is in its
 * result field where it has one. Actions that are not the
 * cancel of an op keep their own names (blitz_task_cancel,
 * blitz_group_cancel_all, blitz_cancel_token_cancel).
 *
 * Blocking forms: the form of an op that blocks a plain thread until it is
 * done ends in _blocking (blitz_mutex_lock_blocking, blitz_join_blocking,
 * blitz_group_next_blocking; blitz_op_run_blocking for any blitz_op).
 *
 * Lifetimes:
 *   - objects the caller allocates (usually in task state) are set up with
 *     blitz_<object>_init and, when they hold anything, torn down with
 *     blitz_<object>_deinit; zero-filled is often a valid idle state;
 *   - objects blitz allocates come from blitz_<object>_new and go with
 *     blitz_<object>_free (blitz_free for buffers blitz hands out);
 *   - reference-counted handles (blitz_task, blitz_process, channel
 *     endpoints) are given up with _release; a _clone adds a reference. A
 *     channel made by blitz_<kind>_new lives until its last endpoint is
 *     released. Wakers are 16-byte values, not handles: blitz_waker_clone
 *     and blitz_waker_drop, after their vtable.
 *   - OS resources (sockets, files, streams) end with _close.
 *
 * Callbacks: a type is named for its role: blitz_poll_fn (a task's poll),
 * blitz_drop_fn (frees what a task's state owns), blitz_cancel_hook_fn
 * (a spawn's cancel hook), blitz_cancel_fn (an op's cancel).
 *
 * Errors: 0 (BLITZ_OK) or a negative BLITZ_E* code; functions that cannot
 * fail or whose failure means nothing return void. */

/* The implementation needs POSIX and Linux declarations (clock_gettime,
 * futex, CPU affinity); ask for them before the first system header. When
 * another system header came first, the compilers' default GNU dialects
 * (or an explicit _POSIX_C_SOURCE=200809L) are enough; strict -std=c11
 * then needs _GNU_SOURCE defined at the top of that file. */
#if defined(BLITZ_IMPLEMENTATION) && !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _GNU_SOURCE 1
#endif
/* mingw-w64: C99 printf formats (%zu, %lld) rather than msvcrt's. */
#if defined(BLITZ_IMPLEMENTATION) && defined(_WIN32) && !defined(__USE_MINGW_ANSI_STDIO)
#define __USE_MINGW_ANSI_STDIO 1
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BLITZ_VERSION_MAJOR  0
#define BLITZ_VERSION_MINOR  1
#define BLITZ_VERSION_PATCH  0
#define BLITZ_VERSION_STRING "0.1.0"

#ifndef BLITZ_API
#ifdef BLITZ_STATIC
#if defined(__GNUC__)
/* Static functions the program never calls are no -Wunused-function. */
#define BLITZ_API static __attribute__((unused))
#else
#define BLITZ_API static
#endif
#else
#define BLITZ_API extern
#endif
#endif

/* Hard ceiling on worker threads: the parked-worker bitmap is one 64-bit word. */
#ifndef BLITZ_MAX_WORKERS
#define BLITZ_MAX_WORKERS 64
#endif

/* Largest task state blitz_spawn accepts, in bytes. */
#ifndef BLITZ_MAX_STATE_SIZE
#define BLITZ_MAX_STATE_SIZE (64u * 1024u * 1024u)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Error codes
 *
 * Every function that can fail returns 0 (BLITZ_OK) or a negative code.
 * The codes are blitz's own and have the same values on every system: a
 * failed system call's errno is translated through BLITZ_SYS_ERR_MAP (an
 * errno without an entry becomes BLITZ_EUNKNOWN), so compare results with
 * the BLITZ_E* names, never with -errno. The values of the system-derived
 * codes were taken from Linux's numbering once and are now fixed; blitz's
 * own conditions live in the -4000 band. BLITZ_ERRNO_MAP lists both.
 * ------------------------------------------------------------------------- */

/* Codes that stand for an errno value of the same name. */
#define BLITZ_SYS_ERR_MAP(XX)                                   \
    XX(EPERM, -1, "operation not permitted")                    \
    XX(ENOENT, -2, "no such file or directory")                 \
    XX(ESRCH, -3, "no such process")                            \
    XX(EINTR, -4, "interrupted system call")                    \
    XX(EIO, -5, "i/o error")                                    \
    XX(ENXIO, -6, "no such device or address")                  \
    XX(E2BIG, -7, "argument list too long")                     \
    XX(ENOEXEC, -8, "exec format error")                        \
    XX(EBADF, -9, "bad file descriptor")                        \
    XX(ECHILD, -10, "no child processes")                       \
    XX(EAGAIN, -11, "resource temporarily unavailable")         \
    XX(ENOMEM, -12, "not enough memory")                        \
    XX(EACCES, -13, "permission denied")                        \
    XX(EFAULT, -14, "bad address")                              \
    XX(EBUSY, -16, "resource busy")                             \
    XX(EEXIST, -17, "file already exists")                      \
    XX(EXDEV, -18, "cross-device link")                         \
    XX(ENODEV, -19, "no such device")                           \
    XX(ENOTDIR, -20, "not a directory")                         \
    XX(EISDIR, -21, "is a directory")                           \
    XX(EINVAL, -22, "invalid argument")                         \
    XX(ENFILE, -23, "too many open files in system")            \
    XX(EMFILE, -24, "too many open files")                      \
    XX(ENOTTY, -25, "inappropriate ioctl for device")           \
    XX(ETXTBSY, -26, "text file busy")                          \
    XX(EFBIG, -27, "file too large")                            \
    XX(ENOSPC, -28, "no space left on device")                  \
    XX(ESPIPE, -29, "illegal seek")                             \
    XX(EROFS, -30, "read-only file system")                     \
    XX(EMLINK, -31, "too many links")                           \
    XX(EPIPE, -32, "broken pipe")                               \
    XX(ERANGE, -34, "result out of range")                      \
    XX(EDEADLK, -35, "resource deadlock would occur")           \
    XX(ENAMETOOLONG, -36, "file name too long")                 \
    XX(ENOSYS, -38, "function not implemented")                 \
    XX(ENOTEMPTY, -39, "directory not empty")                   \
    XX(ELOOP, -40, "too many symbolic links")                   \
    XX(EPROTO, -71, "protocol error")                           \
    XX(EOVERFLOW, -75, "value too large for defined data type") \
    XX(ENOTSOCK, -88, "not a socket")                           \
    XX(EDESTADDRREQ, -89, "destination address required")       \
    XX(EMSGSIZE, -90, "message too long")                       \
    XX(EPROTOTYPE, -91, "protocol wrong type for socket")       \
    XX(ENOPROTOOPT, -92, "protocol not available")              \
    XX(EPROTONOSUPPORT, -93, "protocol not supported")          \
    XX(EOPNOTSUPP, -95, "operation not supported")              \
    XX(EAFNOSUPPORT, -97, "address family not supported")       \
    XX(EADDRINUSE, -98, "address already in use")               \
    XX(EADDRNOTAVAIL, -99, "address not available")             \
    XX(ENETDOWN, -100, "network is down")                       \
    XX(ENETUNREACH, -101, "network is unreachable")             \
    XX(ENETRESET, -102, "network dropped connection on reset")  \
    XX(ECONNABORTED, -103, "connection aborted")                \
    XX(ECONNRESET, -104, "connection reset by peer")            \
    XX(ENOBUFS, -105, "no buffer space available")              \
    XX(EISCONN, -106, "socket is already connected")            \
    XX(ENOTCONN, -107, "socket is not connected")               \
    XX(ETIMEDOUT, -110, "operation timed out")                  \
    XX(ECONNREFUSED, -111, "connection refused")                \
    XX(EHOSTDOWN, -112, "host is down")                         \
    XX(EHOSTUNREACH, -113, "host is unreachable")               \
    XX(EALREADY, -114, "operation already in progress")         \
    XX(EINPROGRESS, -115, "operation in progress")              \
    XX(ESTALE, -116, "stale file handle")                       \
    XX(EDQUOT, -122, "disk quota exceeded")                     \
    XX(ECANCELED, -125, "operation canceled")

/* blitz's own conditions, and the code of an errno blitz has no name for. */
#define BLITZ_OWN_ERR_MAP(XX)                            \
    XX(ESHUTDOWN, -4001, "runtime is shut down")         \
    XX(ECLOSED, -4002, "closed")                         \
    XX(EFULL, -4003, "queue is full")                    \
    XX(EEMPTY, -4004, "queue is empty")                  \
    XX(ELAGGED, -4005, "receiver lagged behind")         \
    XX(ERELEASED, -4006, "handle already released")      \
    XX(ENOHOST, -4010, "host name not found")            \
    XX(EDNSTEMP, -4011, "temporary name server failure") \
    XX(EDNS, -4012, "name resolution failed")            \
    XX(EEOF, -4020, "unexpected end of stream")          \
    XX(EUNKNOWN, -4099, "unknown system error")

/* Every code: XX(name, value, text), BLITZ_##name == value. */
#define BLITZ_ERRNO_MAP(XX) BLITZ_SYS_ERR_MAP(XX) BLITZ_OWN_ERR_MAP(XX)

#define BLITZ_OK                             0
#define BLITZ__ERRNO_ENUM(name, value, text) BLITZ_##name = (value),
enum { BLITZ_ERRNO_MAP(BLITZ__ERRNO_ENUM) BLITZ__ERRNO_ENUM_END = 0 };
#undef BLITZ__ERRNO_ENUM

/* Human-readable text for a code; never NULL ("unknown error" for strangers). */
BLITZ_API const char *blitz_strerror(int err);
/* The code's name without the prefix, e.g. "EINVAL"; never NULL. */
BLITZ_API const char *blitz_err_name(int err);
/* BLITZ_VERSION_STRING of the implementation that was linked. */
BLITZ_API const char *blitz_version(void);

/* Defined only where BLITZ_IMPLEMENTATION is, and never called. Every file
 * that includes blitz.h refers to it first thing, so a program without the
 * implementation fails to link with "undefined reference to
 * `blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file'" and one with two
 * fails with "multiple definition of" it: the error says what to do. A
 * BLITZ_STATIC file holds its own copy and needs no check. */
BLITZ_API void blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file(void);
#if !defined(BLITZ_STATIC) && defined(__GNUC__)
/* no_reorder keeps gcc from moving it behind the file's own functions, so
 * its reference is the first the linker meets; clang keeps source order. */
#if defined(__has_attribute)
#if __has_attribute(no_reorder)
#define BLITZ__FIRST_IN_FILE __attribute__((no_reorder))
#endif
#endif
#ifndef BLITZ__FIRST_IN_FILE
#define BLITZ__FIRST_IN_FILE
#endif
__attribute__((used))
BLITZ__FIRST_IN_FILE static void (*blitz__implementation_link_check(void))(void) {
    return blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file;
}
#endif

/* ---------------------------------------------------------------------------
 * Tasks, poll functions and the poll context
 * ------------------------------------------------------------------------- */

typedef enum blitz_poll { BLITZ_PENDING = 0, BLITZ_READY = 1 } blitz_poll;

typedef struct blitz_runtime blitz_runtime;
/* A join handle: refers to a spawned task until blitz_task_release. */
typedef struct blitz_task blitz_task;
/* The poll context: which task is running, on which thread, for which
 * runtime. Valid only for the duration of one call of a poll function. */
typedef struct blitz_cx blitz_cx;

/* A task's poll function. It runs the task until it must wait (returns
 * BLITZ_PENDING after arranging for its waker to be woken) or is finished
 * (returns BLITZ_READY). `state` is the task's own copy of the state given
 * to blitz_spawn; it stays at the same address for the task's whole life. */
typedef blitz_poll (*blitz_poll_fn)(blitz_cx *cx, void *state);
/* Called once when a task's memory is reclaimed (after it finished or was
 * cancelled, and its handle was released), to free what the state owns. */
typedef void (*blitz_drop_fn)(void *state);
/* An op's cancel: withdraws the op `op` waits in (removes its waiter,
 * hands back what it was given). Safe on an idle, pending or finished op,
 * from any thread, with cx NULL. */
typedef void (*blitz_cancel_fn)(blitz_cx *cx, void *op);
/* A spawn's cancel hook (blitz_spawn_opts.cancel): called once when the
 * task is completed as cancelled, after the op it waited in was withdrawn,
 * to release the task's own resources. */
typedef void (*blitz_cancel_hook_fn)(void *state);
/* A plain function run as a task by blitz_spawn_fn. */
typedef void (*blitz_fn)(void *arg);

/* ---------------------------------------------------------------------------
 * Wakers: 16-byte values that make a waiting task runnable again.
 * ------------------------------------------------------------------------- */

typedef struct blitz_waker blitz_waker;
typedef struct blitz_waker_vtable {
    void (*wake)(const void *data);         /* wake and consume */
    void (*wake_by_ref)(const void *data);  /* wake, keep the waker */
    blitz_waker (*clone)(const void *data); /* new reference */
    void (*drop)(const void *data);         /* give the reference up */
} blitz_waker_vtable;
struct blitz_waker {
    const void *data;
    const blitz_waker_vtable *vtable;
};

/* The running task's waker, borrowed: valid during this poll only. Clone it
 * to keep it. */
BLITZ_API blitz_waker blitz_cx_waker(blitz_cx *cx);
BLITZ_API blitz_waker blitz_waker_clone(const blitz_waker *w);
/* Wake and drop in one step; the waker is consumed. */
BLITZ_API void blitz_waker_wake(blitz_waker w);
BLITZ_API void blitz_waker_wake_by_ref(const blitz_waker *w);
BLITZ_API void blitz_waker_drop(blitz_waker w);
/* Nonzero when both wake the same task (lets an op skip a re-clone). */
BLITZ_API int blitz_waker_will_wake(const blitz_waker *a, const blitz_waker *b);
/* A waker that does nothing; clone/drop are free. */
BLITZ_API blitz_waker blitz_waker_noop(void);

/* ---------------------------------------------------------------------------
 * Coroutine macros: stackless tasks written as straight-line C
 *
 *   typedef struct { BLITZ_CORO; blitz_task *child; int n; } my_state;
 *
 *   static blitz_poll my_poll(blitz_cx *cx, void *p) {
 *       my_state *s = p;
 *       BLITZ_BEGIN(s);
 *       for (s->n = 0; s->n < 10; s->n++)
 *           BLITZ_YIELD(s, cx);
 *       BLITZ_AWAIT(s, blitz_join(cx, s->child));
 *       BLITZ_END(s);
 *   }
 *
 * The resume point lives in the state (BLITZ_CORO declares it), so a local
 * variable of the poll function does not survive an await or a yield: keep
 * such values in the state. Use at most one BLITZ_AWAIT / BLITZ_YIELD per
 * source line, and no `switch` of your own around one.
 * ------------------------------------------------------------------------- */

#define BLITZ_CORO int blitz__resume
/* Where a coroutine's first BLITZ_BEGIN in a poll leaves its resume int
 * and file for the runtime, which takes them after the poll: once per
 * poll function, blitz_runtime_dump then prints the file:line each of its
 * tasks waits at. The note is the first member of the calling thread's
 * runtime context (blitz__tls_context, NULL on a thread that runs no
 * blitz code). A few loads and two stores, no call: a call would make
 * every poll function keep its arguments in saved registers on every
 * poll. The outermost BEGIN of a poll counts (a nested one finds the note
 * taken). */
struct blitz__coro_site {
    const int *resume;
    const char *file;
};
struct blitz__context;
#if defined(_MSC_VER)
#define BLITZ__TLS __declspec(thread)
#elif defined(__cplusplus)
/* Not thread_local: C++ reaches an extern one through a wrapper call. */
#define BLITZ__TLS __thread
#else
#define BLITZ__TLS _Thread_local
#endif
/* Declared with BLITZ_API, so a shared library that exports blitz's
 * functions exports it too. */
BLITZ_API BLITZ__TLS struct blitz__context *blitz__tls_context;
#define BLITZ__CORO_NOTE ((struct blitz__coro_site *)(void *)blitz__tls_context)
/* BLITZ_BEGIN declares the names the other macros use, so one used outside
 * BLITZ_BEGIN ... BLITZ_END fails with "blitz_AWAIT_needs_BLITZ_BEGIN
 * undeclared" rather than with a stray case label. Enumerators are no
 * variables: resume points may jump past them, in C++ too. */
#define BLITZ_BEGIN(s)                                         \
    switch ((s)->blitz__resume) {                              \
    case 0:;                                                   \
        if (blitz__tls_context && !BLITZ__CORO_NOTE->resume) { \
            BLITZ__CORO_NOTE->resume = &(s)->blitz__resume;    \
            BLITZ__CORO_NOTE->file = __FILE__;                 \
        }                                                      \
        enum {                                                 \
            blitz_AWAIT_needs_BLITZ_BEGIN = 0,                 \
            blitz_YIELD_needs_BLITZ_BEGIN = 0,                 \
            blitz_RETURN_needs_BLITZ_BEGIN = 0,                \
            blitz_END_needs_BLITZ_BEGIN = 0                    \
        }
/* Re-evaluates `expr` (a blitz_poll expression) on every resumption until it
 * is BLITZ_READY. */
#define BLITZ_AWAIT(s, expr)                 \
    do {                                     \
        (void)blitz_AWAIT_needs_BLITZ_BEGIN; \
        (s)->blitz__resume = __LINE__;       \
        if (0) {                             \
        case __LINE__:;                      \
        }                                    \
        if ((expr) == BLITZ_PENDING)         \
            return BLITZ_PENDING;            \
    } while (0)
/* Lets every other runnable task run first, then continues here. */
#define BLITZ_YIELD(s, cx)                   \
    do {                                     \
        (void)blitz_YIELD_needs_BLITZ_BEGIN; \
        (s)->blitz__resume = __LINE__;       \
        blitz_cx_yield(cx);                  \
        return BLITZ_PENDING;                \
    case __LINE__:;                          \
    } while (0)
/* Returns BLITZ_READY from the poll function (also on later polls). */
#define BLITZ_RETURN(s)                       \
    do {                                      \
        (void)blitz_RETURN_needs_BLITZ_BEGIN; \
        (s)->blitz__resume = -1;              \
        return BLITZ_READY;                   \
    } while (0)
/* A resume point that is neither 0, -1 nor a line of this function comes
 * from a state that was not zero-filled. Debug builds (no NDEBUG, or
 * BLITZ_DEBUG=1) stop there with a message naming this BLITZ_END; release
 * builds (NDEBUG, or BLITZ_DEBUG=0) finish the task as before, at no cost. */
#ifndef BLITZ_DEBUG
#ifdef NDEBUG
#define BLITZ__CORO_DEFAULT(s) default:;
#else
#define BLITZ__CORO_DEFAULT(s) BLITZ__CORO_CHECKED_DEFAULT(s)
#endif
#elif BLITZ_DEBUG
#define BLITZ__CORO_DEFAULT(s) BLITZ__CORO_CHECKED_DEFAULT(s)
#else
#define BLITZ__CORO_DEFAULT(s) default:;
#endif
#define BLITZ__CORO_CHECKED_DEFAULT(s) \
    default:                           \
        if ((s)->blitz__resume != -1)  \
            blitz_coro_bad_resume(__FILE__, __LINE__, __func__, (s)->blitz__resume);
#define BLITZ_END(s)                   \
    (void)blitz_END_needs_BLITZ_BEGIN; \
    if (0) {                           \
        BLITZ__CORO_DEFAULT(s)         \
    }                                  \
    }                                  \
    (s)->blitz__resume = -1;           \
    return BLITZ_READY
/* What BLITZ_END calls in a debug build on a bad resume point: prints it
 * with the poll function's file, line and name to stderr and aborts. */
BLITZ_API void blitz_coro_bad_resume(const char *file, int line, const char *func, int resume);

/* ---------------------------------------------------------------------------
 * Runtime
 * ------------------------------------------------------------------------- */

typedef enum blitz_flavor {
    BLITZ_MULTI_THREAD = 0,   /* work-stealing pool of worker threads */
    BLITZ_CURRENT_THREAD = 1, /* one queue, driven by the thread that waits on it */
} blitz_flavor;

/* The I/O backend of a runtime (see api_io.h). */
typedef enum blitz_backend {
    BLITZ_BACKEND_AUTO = 0,
    BLITZ_BACKEND_IO_URING = 1,
    BLITZ_BACKEND_EPOLL = 2,
    BLITZ_BACKEND_POLL = 3,
    BLITZ_BACKEND_NONE = 4,   /* the runtime has no I/O driver (none could start) */
    BLITZ_BACKEND_KQUEUE = 5, /* Darwin and the BSDs */
    BLITZ_BACKEND_IOCP = 6,   /* Windows: an I/O completion port */
} blitz_backend;

/* ---- tracing hooks -----------------------------------------------------
 * Callbacks for tracing integrations, set in blitz_config.hooks. Any may be
 * NULL; with none set (and metrics off) they cost a predictable branch at
 * a task's spawn, at each poll and at its end. They run on the thread
 * where the event happens, inside the runtime: they must be quick, must
 * not block, and must not shut down or free the runtime. `task` identifies
 * a task while it lives (its block is reused after it is freed); it is not
 * a handle: do not join, release or cancel it. `worker` is the index of a
 * multi-thread worker. */
typedef struct blitz_hooks {
    void *arg; /* passed to every hook */
    /* A task was made and is about to be queued (before its first poll). */
    void (*task_spawn)(void *arg, blitz_task *task);
    /* A task completed, cancelled or not (after its last poll); also when
     * a spawn that called task_spawn failed to queue it. */
    void (*task_terminate)(void *arg, blitz_task *task);
    /* Around each call of a task's poll function, on the polling thread;
     * `result` is what the poll returned. */
    void (*poll_start)(void *arg, blitz_task *task);
    void (*poll_end)(void *arg, blitz_task *task, blitz_poll result);
    /* A worker thread began / is about to exit (on that thread). */
    void (*worker_start)(void *arg, uint32_t worker);
    void (*worker_stop)(void *arg, uint32_t worker);
    /* A worker is about to sleep for want of work / woke up again. */
    void (*worker_park)(void *arg, uint32_t worker);
    void (*worker_unpark)(void *arg, uint32_t worker);
} blitz_hooks;
/* A poll that has run too long, as the stall watchdog reports it. */
typedef struct blitz_stall_info {
    uint32_t worker;     /* worker index (0 for the current-thread driver) */
    uint64_t task_id;    /* blitz_task_id */
    const char *name;    /* blitz_spawn_opts.name, or NULL */
    blitz_poll_fn poll;  /* the task's poll function */
    const char *file;    /* its coroutine's file (BLITZ_BEGIN), or NULL */
    int line;            /* the resume point the poll started from (0: first) */
    uint64_t running_ns; /* how long the poll has run so far */
} blitz_stall_info;
/* Called on the watchdog's own thread; must not block for long. */
typedef void (*blitz_stall_fn)(const blitz_stall_info *info, void *arg);

/* Zero means default for every field. */
typedef struct blitz_config {
    blitz_flavor flavor;
    /* Worker threads (multi-thread flavour). 0 = number of CPUs (at most
     * BLITZ_MAX_WORKERS); more than BLITZ_MAX_WORKERS is BLITZ_EINVAL. */
    uint32_t workers;
    /* Longest a parked worker sleeps before it looks again. 0 = until woken
     * (a worker sleeps until work or the next timer arrives; an idle runtime
     * without timers uses no CPU). */
    uint64_t park_timeout_ns;
    /* Rounds an idle worker spins looking for work before it parks (waking a
     * parked thread costs tens of microseconds). 0 = default (64, or no
     * spinning while the runtime has open sockets: their wake-ups come from
     * the kernel into the worker parked in the I/O backend, and spinning
     * would only take CPU time from the peers); UINT32_MAX = never spin. */
    uint32_t spin_before_park;
    /* Fixed global-queue check interval in ticks instead of the adaptive one
     * (0 = adaptive, 8..255 from the average poll time). */
    uint32_t global_queue_interval;
    /* Virtual time for tests (Tokio's paused clock): the runtime's clock
     * moves only with blitz_time_advance, or jumps to the next timer when
     * every task is idle, so timeouts run instantly and deterministically. */
    int start_paused;
    /* The I/O backend. BLITZ_BACKEND_AUTO (0): the BLITZ_BACKEND environment
     * variable ("io_uring", "epoll", "kqueue", "poll", in any case; any
     * other value is ignored) if set, else io_uring when the kernel allows
     * it (its setup and first enter work) and the runtime has one thread
     * or one worker, else epoll (Linux; with a ring for files), else kqueue
     * (Darwin, the BSDs), else poll; an unavailable choice
     * falls back the same way. When none can start (no eventfd, say) the
     * runtime still runs tasks and timers, blitz_runtime_backend says
     * BLITZ_BACKEND_NONE and socket calls fail with BLITZ_ENOSYS. Any other
     * value forces that backend:
     * blitz_runtime_new fails (BLITZ_ENOSYS, ...) when it cannot start.
     * Windows has one backend, BLITZ_BACKEND_IOCP (the variable is
     * ignored there).
     * Compile-time exclusions: BLITZ_NO_IO_URING, BLITZ_NO_EPOLL,
     * BLITZ_NO_KQUEUE, BLITZ_NO_POLL. */
    blitz_backend backend;
    /* Blocking pool: most threads at once (0 = 512). */
    uint32_t max_blocking_threads;
    /* Blocking pool: how long a thread waits for work before it exits
     * (0 = 10 s). */
    uint64_t blocking_keep_alive_ns;
    /* Blocking pool: most jobs that may wait for a thread once every thread
     * is busy and no more may start; a spawn beyond that fails with
     * BLITZ_EFULL (or waits, with blitz_spawn_blocking_await). 0 = no
     * limit. */
    uint32_t blocking_queue_capacity;
    /* ---- observability: tracing hooks and metrics ---- */
    /* Tracing hooks (see blitz_hooks); all NULL = none. */
    blitz_hooks hooks;
    /* Timed metrics (blitz_metrics_get): worker busy time and the poll
     * duration histogram. Counters are kept either way. */
    int metrics;
    /* With metrics on, one poll in this many is timed for the histogram
     * (reading the clock costs about as much as a short poll). Rounded up
     * to a power of two; 0 = 64; 1 = every poll. */
    uint32_t metrics_poll_sample;
    /* ---- observation ----
     * Stall watchdog: when nonzero, a thread of the runtime reports every
     * poll that has run longer than this (a blocking call inside a task),
     * once per poll, within 1.25x the threshold, through stall_fn (NULL:
     * one line on stderr). Off (0, the default) it costs nothing; on, a
     * clock reading per poll. Watches worker threads and the
     * current-thread driver. */
    uint64_t stall_threshold_ns;
    blitz_stall_fn stall_fn;
    void *stall_arg;
    /* Leak report: nonzero (or the environment variable BLITZ_LEAK_REPORT
     * set to a nonzero number) writes to stderr, when the runtime shuts
     * down (blitz_runtime_shutdown or blitz_runtime_free), every task still
     * alive with its await site, and how many sockets, armed timers and
     * blocking-pool jobs are still open. */
    int leak_report;
} blitz_config;

/* Creates a runtime. Several runtimes may be alive at once. Worker threads
 * start lazily, on the first spawn or the first socket made on it.
 * Returns BLITZ_OK, BLITZ_EINVAL (NULL out, workers > BLITZ_MAX_WORKERS,
 * unknown flavour), BLITZ_ENOMEM, or a thread-creation error. */
BLITZ_API int blitz_runtime_new(const blitz_config *cfg, blitz_runtime **out);

/* Stops the runtime: spawning fails with BLITZ_ESHUTDOWN from now on, worker
 * threads finish the poll they are in and exit, and every task that has not
 * finished is completed as cancelled (its joiners wake with BLITZ_ECANCELED).
 * Idempotent. Must not be called from inside one of this runtime's tasks
 * (BLITZ_EDEADLK). Sockets and pipes can still be created and closed on a
 * runtime that is shut down, but no task runs any more to use them. */
BLITZ_API int blitz_runtime_shutdown(blitz_runtime *rt);

/* Shuts down (if not yet) and frees the runtime and every task block,
 * calling each task's drop function. Task handles and wakers of this runtime
 * are invalid afterwards. After fork(2) the child has a copy of each
 * runtime without its threads (whose locks may be held for good): it must
 * neither use nor free it; it may exec, _exit, or create runtimes of its
 * own. BLITZ_EINVAL for NULL, BLITZ_EDEADLK from inside a
 * task of this runtime. */
BLITZ_API int blitz_runtime_free(blitz_runtime *rt);

/* Spawns `poll` with a copy of `state` and waits for it on the calling
 * thread (which drives a current-thread runtime), then copies the final
 * state back into `state`. Returns BLITZ_OK, BLITZ_ECANCELED if the task was
 * cancelled, or a spawn error. */
BLITZ_API int blitz_runtime_run(blitz_runtime *rt, blitz_poll_fn poll, void *state, size_t size);

/* Creates a default multi-thread runtime, runs one main task on it as
 * blitz_runtime_run does, and frees the runtime. */
BLITZ_API int blitz_run(blitz_poll_fn poll, void *state, size_t size);

/* ---- observation: the task dump ----
 * Writes every live task of `rt`, one per line:
 *
 *   task 42 "conn" idle poll=0x55d0c1a2b3c4 (conn_poll) at server.c:87
 *       waited 1250 ms on socket fd 9 read
 *
 * id, name (if given at spawn), state (idle, scheduled, running,
 * blocking: a pool job), poll function (with its symbol where dladdr can
 * name it: a global function of a program linked with -rdynamic, or of a
 * shared library), the file:line of the BLITZ_AWAIT / BLITZ_YIELD an idle
 * task is suspended at (tasks whose poll function uses BLITZ_BEGIN), how
 * long it has waited (from the start of the scheduler tick of its last
 * poll), and what it waits on where the op says: a timer or timeout and
 * when it is due, a socket and direction, a channel, a mutex, the join of
 * task N, or the kind of any other runtime op. A scheduled or running task
 * is listed without site. Then "N live tasks".
 * With BLITZ_DUMP_JSON the same as one JSON object {"workers": W,
 * "tasks": [{"id", "name", "state", "cancelled", "poll", "symbol", "file",
 * "line", "waited_ns", "wait_kind", "wait"}...], "count": N} (null where
 * unknown).
 * Safe from any thread, including one of rt's tasks, while the runtime
 * runs: each idle task is taken over for the instant it is read, as a
 * scheduler would (a wake meanwhile is kept; a task whose last reference
 * goes meanwhile is freed by the dump, its drop function running on the
 * dumping thread). Costs nothing until called;
 * 100,000 tasks take tens of milliseconds. Tasks spawned during the dump
 * may be left out. Returns BLITZ_OK, BLITZ_EINVAL, BLITZ_ENOMEM, or
 * BLITZ_EIO when writing failed. */
#define BLITZ_DUMP_JSON 1u
BLITZ_API int blitz_runtime_dump(blitz_runtime *rt, FILE *out, unsigned flags);
/* The same through a writer: write(arg, data, len) returns 0, or nonzero
 * to report a failure (the dump then writes no more). */
typedef int (*blitz_dump_write_fn)(void *arg, const char *data, size_t len);
BLITZ_API int blitz_runtime_dump_to(blitz_runtime *rt, blitz_dump_write_fn write, void *arg,
                                    unsigned flags);

/* The runtime whose task is running on this thread, or NULL. */
BLITZ_API blitz_runtime *blitz_runtime_current(void);
/* The flavour and the number of worker threads (1 for current-thread). */
BLITZ_API blitz_flavor blitz_runtime_flavor(const blitz_runtime *rt);
BLITZ_API uint32_t blitz_runtime_workers(const blitz_runtime *rt);

/* ---------------------------------------------------------------------------
 * Spawning
 * ------------------------------------------------------------------------- */

/* Spawn options. Fill them by name, so fields added later start zero:
 *   blitz_spawn_opts o = {.poll = conn_poll, .state = &c, .size = sizeof c};
 * (in C++, value-initialise with {} and assign). */
typedef struct blitz_spawn_opts {
    blitz_poll_fn poll; /* required */
    const void *state;  /* copied into the task; NULL = zero-filled */
    size_t size;        /* bytes of state, 1..BLITZ_MAX_STATE_SIZE */
    blitz_drop_fn drop; /* optional, see blitz_drop_fn */
    /* Optional: called once when the task is completed as cancelled
     * (blitz_task_cancel, a deadline, a race, a group, shutdown), on the
     * thread that does it, before any joiner sees the task finished. The op
     * the task was suspended in has been withdrawn already (see
     * blitz_cx_pending); the hook is for what else the state holds: a
     * second op the poll function registered by hand, a buffer, a lock.
     * Not called when the task completes. */
    blitz_cancel_hook_fn cancel;
    /* Optional: when the task has not finished `timeout_ns` after the spawn
     * (runtime clock), it is cancelled as above and its status is
     * BLITZ_ETIMEDOUT. 0 for no limit; negative is BLITZ_EINVAL. */
    int64_t timeout_ns;
    /* Optional: builds the state in place instead of copying it, so a large
     * state never sits on the caller's stack. The runtime allocates `size`
     * zero-filled bytes and calls init(state, init_arg) on the spawning
     * thread, at the state's final address, before the task can run (a
     * broadcast or watch receiver subscribed here stays where it is).
     * `state` must then be NULL (else BLITZ_EINVAL). */
    void (*init)(void *state, void *arg);
    void *init_arg;
    /* ---- observation ----
     * Optional: the task's name in blitz_runtime_dump and stall reports.
     * Kept by pointer, not copied (a spawn stays free of allocation and the
     * block grows by one pointer only): it must outlive the task; a string
     * literal is the usual choice. */
    const char *name;
} blitz_spawn_opts;

/* Spawns a task running `poll` over a private copy of `size` bytes of
 * `state`. From a worker thread of `rt` the task goes to that worker's LIFO
 * slot (it runs next, on the same core); from any other thread it goes to
 * the global queue and a parked worker is woken.
 * `handle` receives a join handle, or pass NULL to detach at once.
 * Returns BLITZ_OK, BLITZ_EINVAL (NULL rt/poll, size 0 or larger than
 * BLITZ_MAX_STATE_SIZE, both state and init), BLITZ_ENOMEM,
 * BLITZ_ESHUTDOWN. */
BLITZ_API int blitz_spawn(blitz_runtime *rt, blitz_poll_fn poll, const void *state, size_t size,
                          blitz_task **handle);
BLITZ_API int blitz_spawn_ex(blitz_runtime *rt, const blitz_spawn_opts *opts, blitz_task **handle);
/* Runs fn(arg) once as a task (it must not block for long: see the blocking
 * pool for that). */
BLITZ_API int blitz_spawn_fn(blitz_runtime *rt, blitz_fn fn, void *arg, blitz_task **handle);

/* ---------------------------------------------------------------------------
 * Join handles
 * ------------------------------------------------------------------------- */

/* Inside a task: BLITZ_READY once `t` has finished (completed or cancelled),
 * else registers the caller's waker and returns BLITZ_PENDING. Use with
 * BLITZ_AWAIT, then blitz_task_status / blitz_task_state. A handle has one
 * owner: one task awaits it at a time (a second awaiting task would replace
 * the first one's registration). */
BLITZ_API blitz_poll blitz_join(blitz_cx *cx, blitz_task *t);

/* Blocks the calling thread until `t` has finished. A worker thread keeps
 * running other tasks meanwhile; any other thread runs queued tasks of the
 * runtime while it waits (and drives a current-thread runtime).
 * Returns blitz_task_status once finished: BLITZ_OK (completed),
 * BLITZ_ECANCELED, BLITZ_ETIMEDOUT; BLITZ_EINVAL (NULL). */
BLITZ_API int blitz_join_blocking(blitz_task *t);

/* ---- observation ----
 * The task's id: unique among the runtime's tasks for its whole life, never
 * 0, roughly in spawn order. It is what blitz_runtime_dump and stall
 * reports print. 0 for NULL. */
BLITZ_API uint64_t blitz_task_id(const blitz_task *t);
/* The id of the task being polled, or 0 for a context that is no task. */
BLITZ_API uint64_t blitz_cx_task_id(blitz_cx *cx);
/* The name given at spawn (blitz_spawn_opts.name), or NULL. */
BLITZ_API const char *blitz_task_name(const blitz_task *t);

/* BLITZ_OK when completed, BLITZ_ECANCELED when cancelled, BLITZ_ETIMEDOUT
 * when cancelled by its spawn timeout, BLITZ_EAGAIN while not finished,
 * BLITZ_EINVAL for NULL. Never blocks. */
BLITZ_API int blitz_task_status(const blitz_task *t);

/* The task's state, once it has finished; NULL before that (reading state
 * that a running task writes would be a data race). Valid until the handle
 * is released. */
BLITZ_API void *blitz_task_state(blitz_task *t);

/* Requests cancellation. A task that waits (idle) is completed as cancelled
 * at once and its joiner woken; a queued or running one is completed as
 * cancelled when it would next be polled. A shielded task (see
 * blitz_cx_shield) is cancelled only once the shield is lowered.
 * BLITZ_OK, or BLITZ_EINVAL for NULL. Cancelling a finished task does
 * nothing. */
BLITZ_API int blitz_task_cancel(blitz_task *t);

/* Gives up the handle and sets *t to NULL. A task that has not finished
 * keeps running, detached; a finished one is freed. BLITZ_EINVAL for NULL,
 * BLITZ_ERELEASED when *t is already NULL (released twice). */
BLITZ_API int blitz_task_release(blitz_task **t);

/* ---------------------------------------------------------------------------
 * Inside a task
 * ------------------------------------------------------------------------- */

BLITZ_API blitz_runtime *blitz_cx_runtime(blitz_cx *cx);
/* Asks to be polled again after the other runnable tasks (BLITZ_YIELD uses
 * it); the poll function must return BLITZ_PENDING right after. */
BLITZ_API void blitz_cx_yield(blitz_cx *cx);
/* Nonzero once cancellation of the running task was requested. */
BLITZ_API int blitz_cx_cancelled(blitz_cx *cx);
/* Records that the running task is suspended in `op`: when the task is
 * cancelled before its next poll, cancel(cx, op) withdraws the op first,
 * so nothing it registered keeps the task's memory or a value (cx is NULL
 * when the cancel runs on a thread that is not polling). Every blitz op
 * records itself when it returns BLITZ_PENDING, and the combinators and
 * blitz_timeout record themselves in place of what they poll, so a task
 * needs no cancel hook for them. An op written by hand calls this before
 * returning BLITZ_PENDING. The record lasts until the task is polled
 * again; a poll function that leaves two ops of its own registered at once
 * withdraws the other in its spawn cancel hook. No effect outside a task. */
BLITZ_API void blitz_cx_pending(blitz_cx *cx, blitz_cancel_fn cancel, void *op);
/* Raise and lower the cancellation shield (nestable, up to 255 deep): while
 * raised, a cancel request is remembered but not carried out.
 * BLITZ_ERANGE when nesting too deep or lowering an unraised shield. */
BLITZ_API int blitz_cx_shield(blitz_cx *cx);
BLITZ_API int blitz_cx_unshield(blitz_cx *cx);
/* Index of the worker running this task (0 for current-thread), or -1 when
 * a non-worker thread runs it while it waits in blitz_join_blocking. */
BLITZ_API int blitz_cx_worker(blitz_cx *cx);

/* ---------------------------------------------------------------------------
 * Time: the clock, sleeps, timeouts, intervals
 *
 * Times are nanoseconds on the runtime's monotonic clock; durations are
 * signed nanoseconds (a negative or zero duration means "now"; a deadline
 * past the end of time saturates to BLITZ_TIME_NEVER, never wraps). Timers
 * have the wheel's resolution of 1 ms: a timer fires at the first
 * millisecond tick at or after its deadline, never before it, plus
 * scheduling delay.
 * ------------------------------------------------------------------------- */

#define BLITZ_TIME_NEVER UINT64_MAX
#define BLITZ_USEC       INT64_C(1000)
#define BLITZ_MSEC       INT64_C(1000000)
#define BLITZ_SEC        INT64_C(1000000000)

/* Private: a timer's place in the runtime's wheel. */
struct blitz__timer_entry {
    uint64_t deadline; /* in ticks */
    struct blitz__timer_entry *next, *prev;
    uint32_t where;
};

/* A timer: an intrusive op that lives in the task's state (zero-filled is
 * ready to use; no allocation per sleep). Its fields other than `deadline`
 * and `expired` are private. */
typedef struct blitz_timer {
    struct blitz__timer_entry blitz__entry;
    blitz_waker blitz__waker;
    blitz_runtime *blitz__rt;
    uint32_t blitz__state;
    int expired;       /* set by blitz_timeout: 1 when the deadline won */
    uint64_t deadline; /* the armed deadline, in ns */
    /* The op blitz_timeout waits on with the timer: withdrawn with it. */
    blitz_cancel_fn blitz__inner_cancel;
    void *blitz__inner_op;
} blitz_timer;

/* The runtime's clock in ns (virtual when the runtime's clock is paused);
 * with rt NULL the real monotonic clock. */
BLITZ_API uint64_t blitz_time_now(const blitz_runtime *rt);
BLITZ_API uint64_t blitz_cx_now(blitz_cx *cx);
/* now + ns, saturating at BLITZ_TIME_NEVER; ns <= 0 gives now. */
BLITZ_API uint64_t blitz_deadline_after(uint64_t now_ns, int64_t ns);

/* Await: BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 5 * BLITZ_MSEC)).
 * The first poll arms the timer; READY once the deadline has passed, and
 * the timer is then ready for the next sleep. A deadline already reached is
 * READY at once. */
BLITZ_API blitz_poll blitz_sleep(blitz_cx *cx, blitz_timer *t, int64_t ns);
BLITZ_API blitz_poll blitz_sleep_until(blitz_cx *cx, blitz_timer *t, uint64_t deadline_ns);

/* Disarms the timer (op is the blitz_timer): afterwards it never fires and
 * holds no reference to its task. Safe to call twice, after it fired, from
 * any thread while it fires, and with op or cx NULL. */
BLITZ_API void blitz_timer_cancel(blitz_cx *cx, void *timer);
/* Nonzero while armed and not yet fired. */
BLITZ_API int blitz_timer_armed(const blitz_timer *t);

/* A deadline around another op:
 *   BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, 5 * BLITZ_SEC,
 *                                blitz_sock_recv(cx, &s->io, s->sock, s->buf, n)));
 *   if (s->timer.expired) { ...no data in 5 s: the receive was withdrawn... }
 * `inner` is the op's poll result, evaluated on every resumption. READY when
 * the op is READY (timer disarmed, expired = 0) or when the deadline passed
 * first (expired = 1): the op was then withdrawn with its own cancel, as
 * it recorded itself (blitz_cx_pending), and what it was handed is kept
 * (its result says BLITZ_ECANCELED, or what it did get). Cancelling the
 * task withdraws both the op and the timer. To bound a whole task instead
 * of one op, spawn it with blitz_spawn_opts.timeout_ns. */
BLITZ_API blitz_poll blitz_timeout(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner);

/* blitz_timeout for an op that does not record itself (one written by hand
 * without blitz_cx_pending): `cancel(cx, op)` withdraws it when the
 * deadline wins. */
BLITZ_API blitz_poll blitz_timeout_op(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner,
                                      blitz_cancel_fn cancel, void *op);

typedef enum blitz_missed_tick {
    BLITZ_MISSED_BURST = 0, /* ticks that were missed fire back to back */
    /* the schedule restarts a period after a tick that came 5 ms or more
     * late (less is on time: timers fire on whole milliseconds) */
    BLITZ_MISSED_DELAY = 1,
    BLITZ_MISSED_SKIP = 2, /* missed ticks are dropped; the grid is kept */
} blitz_missed_tick;

typedef struct blitz_interval {
    blitz_timer timer;
    uint64_t period;    /* ns */
    uint64_t next;      /* the next tick's deadline */
    uint64_t last_tick; /* the deadline of the tick just returned */
    blitz_missed_tick missed;
} blitz_interval;

/* First tick at start_ns (at once if already past), then every period_ns.
 * BLITZ_EINVAL for NULL, period <= 0 or an unknown policy. */
BLITZ_API int blitz_interval_init(blitz_interval *iv, uint64_t start_ns, int64_t period_ns,
                                  blitz_missed_tick missed);
/* Await the next tick: BLITZ_AWAIT(s, blitz_interval_tick(cx, &s->iv)). */
BLITZ_API blitz_poll blitz_interval_tick(blitz_cx *cx, blitz_interval *iv);

/* Paused clock only (blitz_config.start_paused): moves the runtime's clock
 * forward by ns and fires what is due. BLITZ_EINVAL otherwise or for
 * ns < 0. */
BLITZ_API int blitz_time_advance(blitz_runtime *rt, int64_t ns);

/* Removes the caller's registration from a join (op is the blitz_task
 * handle; after a timeout won): the handle is not awaited any more and
 * keeps no reference to the caller. cx may be NULL. */
BLITZ_API void blitz_join_cancel(blitz_cx *cx, void *handle);

/* ---------------------------------------------------------------------------
 * Statistics
 * ------------------------------------------------------------------------- */

typedef struct blitz_worker_stats {
    uint64_t tasks_polled;
    uint64_t tasks_stolen; /* tasks taken from other workers */
    uint64_t steals;       /* successful steal operations */
    uint64_t times_parked;
    uint64_t lifo_hits;
    uint64_t global_batch_fetches;
    uint64_t overflows; /* local queue full: half moved to the global queue */
    uint32_t global_queue_interval;
} blitz_worker_stats;

typedef struct blitz_stats {
    uint64_t total_spawned;
    uint64_t total_polled;
    uint64_t total_stolen;
    uint64_t total_parked;
    /* spawned and not yet freed: a finished task's block is freed by the
     * thread that ran it, which may be just after a joiner saw it finish */
    uint64_t tasks_alive;
    uint64_t global_queue_depth;
    uint32_t num_workers;
    uint32_t workers_started;
} blitz_stats;

/* Snapshot of counters (each read atomically; the set is not one instant).
 * BLITZ_EINVAL for NULL arguments or a worker index out of range. All zero
 * when compiled with BLITZ_NO_STATS. */
BLITZ_API int blitz_runtime_stats(const blitz_runtime *rt, blitz_stats *out);
BLITZ_API int blitz_runtime_worker_stats(const blitz_runtime *rt, uint32_t worker,
                                         blitz_worker_stats *out);

/* The rest of the API, one concern a file. */
#include "api_op.h"
#include "api_sync.h"
#include "api_chan.h"
#include "api_io.h"
#include "api_pool.h"
#include "api_fs.h"
#include "api_stream.h"
#include "api_metrics.h"

#ifdef __cplusplus
}
#endif
