/*
blitz.h - a work-stealing async runtime for C, in one header.   v0.1.0
No warranty implied; use at your own risk. LICENSE: see end of file.

Do this:
    #define BLITZ_IMPLEMENTATION
    #include "blitz.h"
in exactly ONE C file (C11, gcc or clang) that includes blitz.h; every
other file just does #include "blitz.h". Link with -pthread.

A minimal program:

    #define BLITZ_IMPLEMENTATION
    #include "blitz.h"
    #include <stdio.h>

    typedef struct { BLITZ_CORO; long n; } square;      // a child task
    static blitz_poll square_poll(blitz_cx *cx, void *p) {
        (void)cx;
        square *s = p;
        s->n *= s->n;
        return BLITZ_READY;                             // done in one poll
    }

    typedef struct { BLITZ_CORO; blitz_task *child; long result; } main_task;
    static blitz_poll main_poll(blitz_cx *cx, void *p) {
        main_task *m = p;
        BLITZ_BEGIN(m);
        square sq = {0, 12};
        blitz_spawn(blitz_cx_runtime(cx), square_poll, &sq, sizeof sq, &m->child);
        BLITZ_AWAIT(m, blitz_join(cx, m->child));      // suspends, no thread blocks
        m->result = ((square *)blitz_task_state(m->child))->n;
        blitz_task_release(&m->child);
        BLITZ_END(m);
    }

    int main(void) {
        main_task m = {0};
        int rc = blitz_run(main_poll, &m, sizeof m);   // default runtime
        printf("%d %ld\n", rc, m.result);              // 0 144
        return rc;
    }

Build: cc -std=c11 -O2 -pthread main.c


WHAT IS IN THIS VERSION
=======================
- a multi-thread work-stealing scheduler (per-worker LIFO slot and
  256-slot ring, global injection queue, stealing half, adaptive fairness,
  parking that never loses a wake-up) and a current-thread scheduler;
- stackless tasks: a poll function plus a state block, written with the
  BLITZ_BEGIN / BLITZ_AWAIT / BLITZ_YIELD / BLITZ_END macros;
- join handles (await inside tasks, block on them from plain threads),
  detach, cancellation with shields, drop functions, statistics;
- time: a hierarchical timer wheel driving sleeps, timeouts and intervals,
  and a paused (virtual) clock for tests.

- I/O: one driver per runtime over io_uring, epoll or poll; TCP, UDP and
  Unix sockets as intrusive ops (see I/O below).

blitz DOES NOT yet have: file I/O, channels and async locks, a
blocking pool, signals or processes. A task that must wait for something
else today keeps a waker (blitz_cx_waker + blitz_waker_clone) and whoever
completes the wait calls blitz_waker_wake.


CONFIGURATION MACROS
====================
Define before including blitz.h (in the implementation file; the ones
marked * in every file that includes it).

  BLITZ_IMPLEMENTATION        emit the implementation in this file
  BLITZ_STATIC                make every public function static (several
                              copies in one program do not collide)
  BLITZ_API *                 prefix of public declarations (default extern)
  BLITZ_MALLOC(size),         the allocator; define both or neither
  BLITZ_FREE(ptr)             (default malloc / free)
  BLITZ_ASSERT(cond)          assertion used for API misuse and invariants
                              (default assert; off with NDEBUG)
  BLITZ_MAX_WORKERS *         upper bound of workers, 1..64 (default 64)
  BLITZ_MAX_STATE_SIZE *      largest task state in bytes (default 64 MiB)
  BLITZ_LOCAL_QUEUE_CAPACITY  per-worker ring, power of two (default 256)
  BLITZ_BUDGET_PER_TICK       polls per scheduler tick (default 128)
  BLITZ_MAX_LIFO_POLLS_PER_TICK  LIFO-slot runs per tick (default 3)
  BLITZ_CACHE_LINE            alignment against false sharing (default by
                              architecture: 128 on x86-64 and aarch64)
  BLITZ_NO_STATS              compile the statistics counters out
  BLITZ_NO_IO_URING, BLITZ_NO_EPOLL, BLITZ_NO_POLL
                              leave an I/O backend out (see I/O)
  BLITZ_URING_ENTRIES         io_uring submission queue size (1024; the
                              completion queue is 8 times larger)

Run-time settings live in blitz_config (zero means default): flavour,
workers (0 = CPU count; more than BLITZ_MAX_WORKERS is BLITZ_EINVAL),
park timeout (0: a parked worker sleeps until work or its next timer),
spin rounds before parking (64), a fixed global-queue interval (0 =
adaptive), start_paused (virtual time, see TIME), and backend (the I/O
backend: see I/O).


I/O
===
Each runtime has one I/O driver over one backend, chosen at creation:
blitz_config.backend forces one (creation fails when it cannot start);
otherwise the BLITZ_BACKEND environment variable ("io_uring", "epoll",
"poll") is a preference, then io_uring if the kernel allows it (probed:
EXT_ARG, FAST_POLL, the socket opcodes), then epoll, then poll.
blitz_runtime_backend tells which one runs.

  io_uring  completion-based, raw system calls: the kernel does the
            recv/send/accept/connect and writes into your buffer; sends try
            the system call first. Workers batch their submissions into one
            io_uring_enter per tick.
  epoll     edge-triggered, every socket registered once; the task does the
            system call and waits for the next edge of its direction.
  poll      the portable fallback (level-triggered, only sockets with
            waiters are polled).

A parked runtime waits in the backend with the next timer's deadline (one
parked worker, the "sleeper"; the current-thread driver always), so I/O
reaches an idle runtime at once; busy workers reap completions without
blocking at the start of each tick (a try-lock). Wakes reach a thread
blocked in the backend through an eventfd.

Ops are blitz_io structs in the task state, awaited like timers:
    BLITZ_AWAIT(s, blitz_tcp_recv(cx, &s->io, s->sock, s->buf, sizeof s->buf));
    if (s->io.result <= 0) ...        // 0 = end of stream, < 0 = error
Results: bytes, 0 for accept/connect (the new socket in io.socket), or a
negative code: BLITZ_ECONNRESET, BLITZ_EPIPE (SIGPIPE never fires),
BLITZ_ECLOSED (the socket was closed while the op waited), BLITZ_EMFILE
(accept: back off and accept again; the listener stays usable), ...
Every op cancels with blitz_io_cancel / blitz_io_cancel_op, e.g. in a
timeout: blitz_timeout_op(cx, &s->timer, ns, blitz_tcp_recv(...),
blitz_io_cancel_op, &s->io). An io_uring op already in the kernel is
cancelled asynchronously: it keeps a reference on its task, so the task's
memory (the buffer) stays until the kernel has let go, even if the task
is cancelled or finishes; blitz_io_settle waits for that before you reuse
the buffer. Give tasks with pending ops a spawn cancel hook that calls
blitz_io_cancel so cancelling them releases the op at once.

Sockets: blitz_tcp_listen / blitz_tcp_accept / blitz_tcp_connect,
blitz_sock_recv / send / send_all / recvv / sendv (also named blitz_tcp_*,
blitz_unix_*, blitz_udp_*), blitz_sock_shutdown (half-close),
blitz_sock_close, options (nodelay, keepalive, linger, buffer sizes),
local and peer addresses; UDP bind / connect / send_to / recv_from /
multicast; Unix stream listeners, datagram sockets, pairs, abstract names
("@name"). Addresses: blitz_addr_parse("127.0.0.1:80" / "[::1]:80"),
blitz_addr_unix, blitz_addr_format.


TASKS AND POLL FUNCTIONS
========================
A task is a poll function plus a block of state. blitz_spawn copies the
state into the task's own block (header + state, one allocation reused
from a per-worker cache, no malloc in steady state) and the block stays at
the same address until the task is freed. The runtime calls the poll
function whenever the task may make progress; it returns BLITZ_READY when
the task is finished, or BLITZ_PENDING after arranging to be woken:
either it stored a clone of its waker where the event source will wake it,
or it awaited a blitz operation (blitz_join) that did so.

Coroutine macros turn a poll function into straight-line code. The state
struct starts with BLITZ_CORO (the resume point); BLITZ_BEGIN(s) opens the
body, BLITZ_AWAIT(s, op) re-evaluates op on each resumption until it is
BLITZ_READY, BLITZ_YIELD(s, cx) lets every other runnable task run first,
BLITZ_END(s) closes the body (the poll function returns BLITZ_READY there
and on any later call). Rules:
  - local variables do not survive an await or a yield: keep everything
    that must in the state struct;
  - at most one BLITZ_AWAIT / BLITZ_YIELD per source line (the line number
    is the resume point), and no switch statement of your own around one;
  - a plain poll function without the macros is fine too.

Spawning from inside a task (a worker thread) puts the new task in that
worker's LIFO slot: it runs next, on the same core, which makes
spawn-then-join nearly a function call. Spawning from any other thread
goes through the global queue and wakes a parked worker.


JOINING, DETACHING, CANCELLING
==============================
blitz_spawn gives a handle unless you pass NULL (detached at once).
  blitz_join(cx, h)       inside a task: BLITZ_READY once h has finished
  blitz_task_wait(h)      from any thread: blocks until h has finished. A
                          worker runs other tasks meanwhile; another thread
                          runs queued tasks of the runtime while it waits,
                          and drives a current-thread runtime.
  blitz_task_status(h)    BLITZ_OK, BLITZ_ECANCELED, or BLITZ_EAGAIN
  blitz_task_state(h)     the finished task's state (NULL before)
  blitz_task_cancel(h)    see CANCELLATION
  blitz_task_release(&h)  gives the handle up (sets h to NULL); an
                          unfinished task keeps running, detached.
                          Releasing twice is BLITZ_ERELEASED.
Every handle must be released; a finished task's memory is reused only
after that.


CANCELLATION
============
blitz_task_cancel marks a task cancelled. A task waiting for a wake-up is
completed as cancelled at once (its joiner wakes with BLITZ_ECANCELED); a
queued or running task is completed as cancelled when it would next be
polled: its poll function is simply not called again. A task can defer
cancellation over a critical section with blitz_cx_shield(cx) ...
blitz_cx_unshield(cx) (nestable); blitz_cx_cancelled(cx) tells a shielded
task that a cancel is pending. What the state owns is released by the drop
function given to blitz_spawn_ex, which runs exactly once, when the task's
block is freed (after it finished and its handle was released), whether
it completed or was cancelled. A wait that the task had registered (a
cloned waker somewhere: an armed timer, a join) holds a reference to the
task until that waker is woken or dropped, and the task being cancelled
makes the wake a no-op. To release such waits at once, give blitz_spawn_ex
a cancel hook (blitz_spawn_opts.cancel): it runs once, when the task is
completed as cancelled, before its joiners wake, and typically calls
blitz_timer_cancel / blitz_join_cancel on the ops in the state.


TIME
====
Times are nanoseconds on the runtime's monotonic clock (blitz_time_now,
blitz_cx_now); durations are signed nanoseconds (BLITZ_MSEC, BLITZ_SEC):
zero or negative means "now", and a deadline beyond the end of time
saturates to BLITZ_TIME_NEVER instead of wrapping. A blitz_timer lives in
the task's state (zero-filled is ready; no allocation):

    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 20 * BLITZ_MSEC));
    BLITZ_AWAIT(s, blitz_sleep_until(cx, &s->timer, deadline));
    BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, BLITZ_SEC,
                                 blitz_join(cx, s->child)));
    if (s->timer.expired)  // the join did not finish in a second
        blitz_join_cancel(cx, s->child);
    // or let the timeout cancel the op itself when the deadline wins:
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, BLITZ_SEC,
                                    blitz_join(cx, s->child),
                                    blitz_join_cancel_op, s->child));

Intervals tick on a grid (blitz_interval_init + blitz_interval_tick) with a
policy for missed ticks: BLITZ_MISSED_BURST (catch up back to back),
BLITZ_MISSED_DELAY (restart a period after the late tick) or
BLITZ_MISSED_SKIP (drop them, keep the grid).

Resolution is the wheel's 1 ms tick: a timer fires at the first tick at or
after its deadline, never before it. The wheel has 5 levels of 64 slots
(1 ms, 64 ms, 4 s, 4.4 min, 4.7 h per slot) and an overflow list beyond
~12 days. Any worker fires due timers at the start of its tick (so one
worker stuck in a long poll does not hold them back); when all are parked,
one of them sleeps until the next deadline and the others until woken.

blitz_timer_cancel disarms a timer; it is safe twice, after firing and
from any thread. An armed timer holds a reference to its task: cancel it
before abandoning it, or the task's memory is kept until it fires.

With blitz_config.start_paused the clock is virtual: it moves only with
blitz_time_advance(rt, ns), or jumps to the next deadline when every worker
is idle, so tests of long timeouts run instantly and deterministically.


SHUTDOWN
========
blitz_runtime_shutdown: spawns fail with BLITZ_ESHUTDOWN, workers finish
the poll they are in and exit, and every unfinished task is completed as
cancelled (threads in blitz_task_wait return BLITZ_ECANCELED).
blitz_runtime_free shuts down if needed, runs the drop function of every
task block still alive and frees all memory; handles and wakers of that
runtime are invalid afterwards. Neither may be called from inside a task
of the same runtime (BLITZ_EDEADLK). Several runtimes may live in one
process; a task of one may await a task of another.


THREAD SAFETY
=============
Any thread: spawn, join-wait, cancel, release (each handle by one owner),
wakers (wake, clone, drop), stats, shutdown and free (not from inside the
runtime's own tasks). Inside a poll function only: the blitz_cx_*
functions and blitz_join; the cx pointer is valid for that call only.


THE SCHEDULER
=============
Each worker looks for work in this order: every N polls the global queue
(N adapts between 8 and 255 so that a remote task waits about 1 ms at
most: N = 1 ms / average poll time); its batch buffer of tasks fetched
from the global queue; its LIFO slot (at most 3 times a tick, then the
slot's task joins the ring); its ring; a batch from the global queue
(min(64, max(4, queued / workers)) tasks); then, as one of at most half
the workers that search, half of a random victim's ring; then it spins
briefly and parks. A tick is 128 polls. Parking uses a futex; the last
searcher to find work wakes another, so queued tasks never wait for a
timeout, and an idle runtime without timers sleeps until woken.


ERROR CODES
===========
Functions return BLITZ_OK (0) or a negative code: -errno values on POSIX
(BLITZ_EINVAL, BLITZ_ENOMEM, ...) and blitz's own in the -4000 band
(BLITZ_ESHUTDOWN, BLITZ_ERELEASED, ...). blitz_strerror(code) and
blitz_err_name(code) describe any code.


PLATFORMS
=========
Linux (futex parking) and other POSIX systems with pthreads (condition
variable parking); gcc or clang (the atomics use __atomic builtins). The
declarations also compile as C++; the implementation is C11.
*/
#ifndef BLITZ_H
#define BLITZ_H
/* ====[ BEGIN src/blitz_api.h ]============================================ */
/* >>blitz_api */
/* Public declarations of blitz. This is the only source of the header half
 * of blitz.h; everything here is visible to every includer. */

/* The implementation needs POSIX and Linux declarations (clock_gettime,
 * futex, CPU affinity); ask for them before the first system header. This
 * works when blitz.h comes before any system header in the implementation
 * file; otherwise define _GNU_SOURCE (or _POSIX_C_SOURCE=200809L) yourself. */
#if defined(BLITZ_IMPLEMENTATION) && !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _GNU_SOURCE 1
#endif

#include <stddef.h>
#include <stdint.h>

#define BLITZ_VERSION_MAJOR  0
#define BLITZ_VERSION_MINOR  1
#define BLITZ_VERSION_PATCH  0
#define BLITZ_VERSION_STRING "0.1.0"

#ifndef BLITZ_API
#ifdef BLITZ_STATIC
#define BLITZ_API static
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
 * Every function that can fail returns 0 (BLITZ_OK) or a negative code. On
 * POSIX the errno-derived codes are -errno; blitz's own codes live in the
 * -4000 band so they never collide with an errno value.
 * ------------------------------------------------------------------------- */

#define BLITZ_ERRNO_MAP(XX)                             \
    XX(EPERM, -1, "operation not permitted")            \
    XX(ENOENT, -2, "no such file or directory")         \
    XX(EINTR, -4, "interrupted system call")            \
    XX(EIO, -5, "i/o error")                            \
    XX(EBADF, -9, "bad file descriptor")                \
    XX(EAGAIN, -11, "resource temporarily unavailable") \
    XX(ENOMEM, -12, "not enough memory")                \
    XX(EACCES, -13, "permission denied")                \
    XX(EFAULT, -14, "bad address")                      \
    XX(EBUSY, -16, "resource busy")                     \
    XX(EEXIST, -17, "file already exists")              \
    XX(EINVAL, -22, "invalid argument")                 \
    XX(ENFILE, -23, "too many open files in system")    \
    XX(EMFILE, -24, "too many open files")              \
    XX(ENOSPC, -28, "no space left on device")          \
    XX(EPIPE, -32, "broken pipe")                       \
    XX(ERANGE, -34, "result out of range")              \
    XX(EDEADLK, -35, "resource deadlock would occur")   \
    XX(ENOSYS, -38, "function not implemented")         \
    XX(ENOTSOCK, -88, "not a socket")                   \
    XX(EMSGSIZE, -90, "message too long")               \
    XX(EOPNOTSUPP, -95, "operation not supported")      \
    XX(EAFNOSUPPORT, -97, "address family not supported") \
    XX(EADDRINUSE, -98, "address already in use")       \
    XX(EADDRNOTAVAIL, -99, "address not available")     \
    XX(ENETUNREACH, -101, "network is unreachable")     \
    XX(ECONNABORTED, -103, "connection aborted")        \
    XX(ECONNRESET, -104, "connection reset by peer")    \
    XX(ENOBUFS, -105, "no buffer space available")      \
    XX(EISCONN, -106, "socket is already connected")    \
    XX(ENOTCONN, -107, "socket is not connected")       \
    XX(ETIMEDOUT, -110, "operation timed out")          \
    XX(ECONNREFUSED, -111, "connection refused")        \
    XX(EHOSTUNREACH, -113, "host is unreachable")       \
    XX(EALREADY, -114, "operation already in progress") \
    XX(EINPROGRESS, -115, "operation in progress")      \
    XX(ECANCELED, -125, "operation canceled")           \
    XX(ESHUTDOWN, -4001, "runtime is shut down")        \
    XX(ECLOSED, -4002, "closed")                        \
    XX(EFULL, -4003, "queue is full")                   \
    XX(EEMPTY, -4004, "queue is empty")                 \
    XX(ELAGGED, -4005, "receiver lagged behind")        \
    XX(ERELEASED, -4006, "handle already released")

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
#define BLITZ_BEGIN(s)            \
    switch ((s)->blitz__resume) { \
    case 0:
/* Re-evaluates `expr` (a blitz_poll expression) on every resumption until it
 * is BLITZ_READY. */
#define BLITZ_AWAIT(s, expr)           \
    do {                               \
        (s)->blitz__resume = __LINE__; \
        if (0) {                       \
        case __LINE__:;                \
        }                              \
        if ((expr) == BLITZ_PENDING)   \
            return BLITZ_PENDING;      \
    } while (0)
/* Lets every other runnable task run first, then continues here. */
#define BLITZ_YIELD(s, cx)             \
    do {                               \
        (s)->blitz__resume = __LINE__; \
        blitz_cx_yield(cx);            \
        return BLITZ_PENDING;          \
    case __LINE__:;                    \
    } while (0)
/* Returns BLITZ_READY from the poll function (also on later polls). */
#define BLITZ_RETURN(s)          \
    do {                         \
        (s)->blitz__resume = -1; \
        return BLITZ_READY;      \
    } while (0)
#define BLITZ_END(s)         \
    if (0) {                 \
    default:;                \
    }                        \
    }                        \
    (s)->blitz__resume = -1; \
    return BLITZ_READY

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
    BLITZ_BACKEND_NONE = 4, /* the runtime has no I/O driver (none could start) */
} blitz_backend;

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
     * variable ("io_uring", "epoll", "poll") if set, else io_uring when the
     * kernel allows it, else epoll, else poll; an unavailable choice falls
     * back the same way. Any other value forces that backend:
     * blitz_runtime_new fails (BLITZ_ENOSYS, ...) when it cannot start.
     * Compile-time exclusions: BLITZ_NO_IO_URING, BLITZ_NO_EPOLL,
     * BLITZ_NO_POLL. */
    blitz_backend backend;
} blitz_config;

/* Creates a runtime. Several runtimes may be alive at once. Worker threads
 * start lazily, on the first spawn.
 * Returns BLITZ_OK, BLITZ_EINVAL (NULL out, workers > BLITZ_MAX_WORKERS,
 * unknown flavour), BLITZ_ENOMEM, or a thread-creation error. */
BLITZ_API int blitz_runtime_new(const blitz_config *cfg, blitz_runtime **out);

/* Stops the runtime: spawning fails with BLITZ_ESHUTDOWN from now on, worker
 * threads finish the poll they are in and exit, and every task that has not
 * finished is completed as cancelled (its joiners wake with BLITZ_ECANCELED).
 * Idempotent. Must not be called from inside one of this runtime's tasks
 * (BLITZ_EDEADLK). */
BLITZ_API int blitz_runtime_shutdown(blitz_runtime *rt);

/* Shuts down (if not yet) and frees the runtime and every task block,
 * calling each task's drop function. Task handles and wakers of this runtime
 * are invalid afterwards. BLITZ_EINVAL for NULL, BLITZ_EDEADLK from inside a
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

/* The runtime whose task is running on this thread, or NULL. */
BLITZ_API blitz_runtime *blitz_runtime_current(void);
/* The flavour and the number of worker threads (1 for current-thread). */
BLITZ_API blitz_flavor blitz_runtime_flavor(const blitz_runtime *rt);
BLITZ_API uint32_t blitz_runtime_workers(const blitz_runtime *rt);

/* ---------------------------------------------------------------------------
 * Spawning
 * ------------------------------------------------------------------------- */

typedef struct blitz_spawn_opts {
    blitz_poll_fn poll; /* required */
    const void *state;  /* copied into the task; NULL = zero-filled */
    size_t size;        /* bytes of state, 1..BLITZ_MAX_STATE_SIZE */
    blitz_drop_fn drop; /* optional, see blitz_drop_fn */
    /* Optional: called once when the task is completed as cancelled
     * (blitz_task_cancel, a cancel that became due, or shutdown), on the
     * thread that does it, before any joiner sees the task finished. It
     * releases what the task's pending ops hold (blitz_timer_cancel,
     * blitz_join_cancel), so the task's memory goes at once rather than when
     * those ops would have fired. Not called when the task completes. */
    blitz_drop_fn cancel;
} blitz_spawn_opts;

/* Spawns a task running `poll` over a private copy of `size` bytes of
 * `state`. From a worker thread of `rt` the task goes to that worker's LIFO
 * slot (it runs next, on the same core); from any other thread it goes to
 * the global queue and a parked worker is woken.
 * `handle` receives a join handle, or pass NULL to detach at once.
 * Returns BLITZ_OK, BLITZ_EINVAL (NULL rt/poll, size 0 or larger than
 * BLITZ_MAX_STATE_SIZE), BLITZ_ENOMEM, BLITZ_ESHUTDOWN. */
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
 * Returns BLITZ_OK (completed), BLITZ_ECANCELED, BLITZ_EINVAL (NULL). */
BLITZ_API int blitz_task_wait(blitz_task *t);

/* BLITZ_OK when completed, BLITZ_ECANCELED when cancelled, BLITZ_EAGAIN while
 * not finished, BLITZ_EINVAL for NULL. Never blocks. */
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
#define blitz_task_detach(t) blitz_task_release(t)

/* ---------------------------------------------------------------------------
 * Inside a task
 * ------------------------------------------------------------------------- */

BLITZ_API blitz_runtime *blitz_cx_runtime(blitz_cx *cx);
/* Asks to be polled again after the other runnable tasks (BLITZ_YIELD uses
 * it); the poll function must return BLITZ_PENDING right after. */
BLITZ_API void blitz_cx_yield(blitz_cx *cx);
/* Nonzero once cancellation of the running task was requested. */
BLITZ_API int blitz_cx_cancelled(blitz_cx *cx);
/* Raise and lower the cancellation shield (nestable, up to 255 deep): while
 * raised, a cancel request is remembered but not carried out.
 * BLITZ_ERANGE when nesting too deep or lowering an unraised shield. */
BLITZ_API int blitz_cx_shield(blitz_cx *cx);
BLITZ_API int blitz_cx_unshield(blitz_cx *cx);
/* Index of the worker running this task (0 for current-thread), or -1 when
 * a non-worker thread runs it while it waits in blitz_task_wait. */
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
#define BLITZ_USEC       ((int64_t)1000)
#define BLITZ_MSEC       ((int64_t)1000000)
#define BLITZ_SEC        ((int64_t)1000000000)

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

/* Disarms: afterwards the timer never fires and holds no reference to its
 * task. Safe to call twice, after it fired, and from any thread while it
 * fires. BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_timer_cancel(blitz_timer *t);
/* Nonzero while armed and not yet fired. */
BLITZ_API int blitz_timer_armed(const blitz_timer *t);

/* A deadline around another op:
 *   BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, 50 * BLITZ_MSEC,
 *                                blitz_join(cx, s->child)));
 *   if (s->timer.expired) { ...the op did not finish in time: cancel it... }
 * `inner` is the op's poll result, evaluated on every resumption. READY when
 * the op is READY (timer disarmed, expired = 0) or when the deadline passed
 * first (expired = 1); the op is then still registered, and the caller
 * cancels it with the op's own cancel function (blitz_join_cancel,
 * blitz_timer_cancel). */
BLITZ_API blitz_poll blitz_timeout(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner);

/* Cancels an op's registration (the op's own cancel, adapted). */
typedef void (*blitz_cancel_fn)(blitz_cx *cx, void *op);
/* blitz_timeout that also cancels the inner op when the deadline wins, so
 * nothing is left registered when it returns READY with expired = 1:
 *   BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, BLITZ_SEC,
 *                                   blitz_join(cx, s->child),
 *                                   blitz_join_cancel_op, s->child)); */
BLITZ_API blitz_poll blitz_timeout_op(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner,
                                      blitz_cancel_fn cancel, void *op);

typedef enum blitz_missed_tick {
    BLITZ_MISSED_BURST = 0, /* ticks that were missed fire back to back */
    BLITZ_MISSED_DELAY = 1, /* the schedule restarts a period after the late tick */
    BLITZ_MISSED_SKIP = 2,  /* missed ticks are dropped; the grid is kept */
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

/* Removes the caller's registration from `t`'s join (after a timeout won):
 * the handle is not awaited any more and keeps no reference to the caller. */
BLITZ_API void blitz_join_cancel(blitz_cx *cx, blitz_task *t);
/* blitz_join_cancel as a blitz_cancel_fn (op is the blitz_task handle). */
BLITZ_API void blitz_join_cancel_op(blitz_cx *cx, void *handle);

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
    uint64_t tasks_alive; /* spawned and not yet freed */
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
/* ====[ BEGIN src/api_sync.h ]============================================= */
/* >>api_sync */
/* Public API: Synchronization primitives: semaphore, mutex, rwlock, notify, barrier,
 * once cell, cancellation token; and the generic op interface. */
/* ====[ END src/api_sync.h ]=============================================== */
/* ====[ BEGIN src/api_chan.h ]============================================= */
/* >>api_chan */
/* Public API: Channels: bounded MPMC, oneshot, broadcast, watch; select. */
/* ====[ END src/api_chan.h ]=============================================== */
/* ====[ BEGIN src/api_io.h ]=============================================== */
/* >>api_io */
/* Public API: The I/O driver and sockets.
 *
 * Every runtime owns one I/O driver over one backend: io_uring (completion
 * based: the kernel performs the operation and writes into your buffer),
 * epoll (edge-triggered readiness) or poll (the portable fallback). The
 * backend is picked when the runtime is created: blitz_config.backend, else
 * the BLITZ_BACKEND environment variable ("io_uring", "epoll", "poll"),
 * else io_uring when the kernel allows it, then epoll, then poll.
 *
 * Sockets are non-blocking file descriptors wrapped in a blitz_socket
 * handle that belongs to one runtime. Operations are intrusive ops: a
 * blitz_io lives in the task's state (zero-filled is ready to use) and is
 * polled repeatedly until READY; the result is then in the op:
 *
 *   BLITZ_AWAIT(s, blitz_tcp_recv(cx, &s->op, s->sock, s->buf, sizeof s->buf));
 *   if (s->op.result <= 0) ...   // 0 = end of stream, < 0 = -errno / BLITZ_E*
 *
 * Buffers must stay where they are until the op is READY or cancelled and
 * settled: in the task's state they do. A task that is cancelled or
 * finishes with an io_uring op in flight keeps its memory until the kernel
 * has let go of the buffer (the op holds a reference on the task). Every op
 * has a cancel function usable with blitz_timeout_op:
 *
 *   BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, BLITZ_SEC,
 *                                   blitz_tcp_recv(cx, &s->op, s->sock, s->buf, n),
 *                                   blitz_io_cancel_op, &s->op));
 *
 * SIGPIPE never kills the process: sends use MSG_NOSIGNAL and report
 * BLITZ_EPIPE / BLITZ_ECONNRESET. */


/* The backend the runtime's I/O driver uses. */
BLITZ_API blitz_backend blitz_runtime_backend(const blitz_runtime *rt);
/* "io_uring", "epoll", "poll", "auto", "none". */
BLITZ_API const char *blitz_backend_name(blitz_backend b);

/* ---------------------------------------------------------------------------
 * Addresses: IPv4, IPv6, Unix (path or Linux abstract name)
 * ------------------------------------------------------------------------- */

typedef struct blitz_addr {
    uint32_t len; /* bytes of the socket address in `u` (0: none) */
    union {
        uint16_t family;
        unsigned char bytes[128]; /* a struct sockaddr_storage */
        uint64_t blitz__align;
    } u;
} blitz_addr;

/* "1.2.3.4:80", "[::1]:8080", "[fe80::1%2]:80". BLITZ_EINVAL for anything
 * else (missing port, port > 65535, bad address). */
BLITZ_API int blitz_addr_parse(const char *s, blitz_addr *out);
/* An IP literal ("127.0.0.1", "::1") and a port. */
BLITZ_API int blitz_addr_ip(const char *ip, uint16_t port, blitz_addr *out);
/* A Unix socket path; a leading '@' makes a Linux abstract name.
 * BLITZ_EINVAL when too long (108 bytes) or empty. */
BLITZ_API int blitz_addr_unix(const char *path, blitz_addr *out);
/* "1.2.3.4:80", "[::1]:80", the path, or "@name". Returns the length, or
 * BLITZ_EINVAL / BLITZ_ERANGE (buffer too small; it is still terminated). */
BLITZ_API int blitz_addr_format(const blitz_addr *a, char *buf, size_t size);
/* The port of an IP address, or -1. */
BLITZ_API int blitz_addr_port(const blitz_addr *a);
/* AF_INET, AF_INET6, AF_UNIX, or 0. */
BLITZ_API int blitz_addr_family(const blitz_addr *a);

/* ---------------------------------------------------------------------------
 * Sockets and ops
 * ------------------------------------------------------------------------- */

typedef struct blitz_socket blitz_socket;

/* A buffer for vectored I/O (same layout as struct iovec). */
typedef struct blitz_iovec {
    void *base;
    size_t len;
} blitz_iovec;

/* An I/O op. Fields other than `result` and `socket` are private. */
typedef struct blitz_io {
    /* After READY: bytes transferred (0 = end of stream for a receive), 0
     * for accept/connect, or a negative error (-errno, BLITZ_ECLOSED when
     * the socket was closed, BLITZ_ECANCELED when cancelled). */
    int64_t result;
    /* accept / connect: the new socket (the caller owns it and closes it). */
    blitz_socket *socket;
    struct blitz_io *blitz__next, *blitz__prev;
    blitz_waker blitz__waker;
    blitz_socket *blitz__sock;
    void *blitz__buf;
    size_t blitz__len, blitz__done;
    blitz_addr *blitz__addr;
    int64_t blitz__res;
    uint32_t blitz__state, blitz__kind, blitz__dir, blitz__flags;
    uint32_t blitz__lock;
    uint64_t blitz__scratch[18];
} blitz_io;

/* Options of the listen / bind calls. */
#define BLITZ_SOCK_REUSEADDR 1u /* SO_REUSEADDR (listeners set it by default) */
#define BLITZ_SOCK_REUSEPORT 2u /* SO_REUSEPORT */
#define BLITZ_SOCK_V6ONLY    4u /* IPV6_V6ONLY */
#define BLITZ_SOCK_NO_REUSEADDR 8u

/* Cancels a pending op: afterwards it holds no reference on the task and
 * the task is not woken for it. With io_uring an op already in the kernel
 * is cancelled asynchronously: its buffer stays the kernel's until the
 * cancellation completes, so reuse the buffer only after
 * blitz_io_settle is READY (polling the same op again also waits for it).
 * Safe to call on an idle or finished op. BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_io_cancel(blitz_io *op);
/* blitz_io_cancel as a blitz_cancel_fn (for blitz_timeout_op and spawn
 * cancel hooks). */
BLITZ_API void blitz_io_cancel_op(blitz_cx *cx, void *op);
/* READY once the kernel holds nothing of the op (always READY except
 * after a cancel of an io_uring op whose completion has not arrived). */
BLITZ_API blitz_poll blitz_io_settle(blitz_cx *cx, blitz_io *op);
/* Nonzero while the op waits (registered or in flight). */
BLITZ_API int blitz_io_pending(const blitz_io *op);

/* TCP listener: socket, SO_REUSEADDR (unless BLITZ_SOCK_NO_REUSEADDR),
 * bind, listen(backlog; 0 = SOMAXCONN). */
BLITZ_API int blitz_tcp_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                               unsigned flags, blitz_socket **out);
/* Await a connection: op->socket is the new socket (result 0), or result
 * < 0 (BLITZ_EMFILE when out of descriptors: the listener stays usable;
 * sleep a little and accept again). */
BLITZ_API blitz_poll blitz_tcp_accept(blitz_cx *cx, blitz_io *op, blitz_socket *listener);
/* Await a connection to `addr` (copied): op->socket (result 0) or an error
 * (BLITZ_ECONNREFUSED, ...). Use blitz_timeout_op for a connect timeout. */
BLITZ_API blitz_poll blitz_tcp_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr);

/* Stream and datagram transfers (TCP, Unix stream, connected UDP / Unix
 * datagram). recv: result 0 at end of stream. send: may be partial.
 * send_all: READY when all `len` bytes went out, or with the error (the
 * bytes sent so far are lost to the caller; result is the error). */
BLITZ_API blitz_poll blitz_sock_recv(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                     size_t len);
BLITZ_API blitz_poll blitz_sock_send(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                     const void *buf, size_t len);
BLITZ_API blitz_poll blitz_sock_send_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                         const void *buf, size_t len);
/* Vectored: `iov` (at most 16 entries) must stay valid until READY. */
BLITZ_API blitz_poll blitz_sock_recvv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt);
BLITZ_API blitz_poll blitz_sock_sendv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt);
#define blitz_tcp_recv      blitz_sock_recv
#define blitz_tcp_send      blitz_sock_send
#define blitz_tcp_send_all  blitz_sock_send_all
#define blitz_tcp_recvv     blitz_sock_recvv
#define blitz_tcp_sendv     blitz_sock_sendv
#define blitz_unix_recv     blitz_sock_recv
#define blitz_unix_send     blitz_sock_send
#define blitz_unix_send_all blitz_sock_send_all
#define blitz_udp_recv      blitz_sock_recv
#define blitz_udp_send      blitz_sock_send

/* Shuts down reading (0), writing (1, sends FIN: half-close) or both (2). */
BLITZ_API int blitz_sock_shutdown(blitz_socket *s, int how);
/* Closes: pending ops complete with BLITZ_ECLOSED; the descriptor is
 * closed once the kernel holds no op of it. The handle is invalid after. */
BLITZ_API int blitz_sock_close(blitz_socket *s);
#define blitz_tcp_close(s) blitz_sock_close(s)
/* The descriptor (for options blitz does not wrap), or -1. */
BLITZ_API int blitz_sock_fd(const blitz_socket *s);
BLITZ_API int blitz_sock_local_addr(const blitz_socket *s, blitz_addr *out);
BLITZ_API int blitz_sock_peer_addr(const blitz_socket *s, blitz_addr *out);

/* Options (BLITZ_OK or -errno). */
BLITZ_API int blitz_tcp_set_nodelay(blitz_socket *s, int on);
BLITZ_API int blitz_tcp_nodelay(const blitz_socket *s); /* 1, 0, or < 0 */
/* Keepalive on/off; idle_secs > 0 also sets TCP_KEEPIDLE. */
BLITZ_API int blitz_tcp_set_keepalive(blitz_socket *s, int on, int idle_secs);
/* SO_LINGER: on with 0 seconds makes close send a reset. */
BLITZ_API int blitz_sock_set_linger(blitz_socket *s, int on, int secs);
BLITZ_API int blitz_sock_set_recv_buffer(blitz_socket *s, int bytes);
BLITZ_API int blitz_sock_set_send_buffer(blitz_socket *s, int bytes);
BLITZ_API int blitz_sock_recv_buffer(const blitz_socket *s); /* bytes or < 0 */
BLITZ_API int blitz_sock_send_buffer(const blitz_socket *s);

/* UDP: bind (port 0 = any), connect (sets the default peer, sync). */
BLITZ_API int blitz_udp_bind(blitz_runtime *rt, const blitz_addr *addr, unsigned flags,
                             blitz_socket **out);
BLITZ_API int blitz_udp_connect(blitz_socket *s, const blitz_addr *addr);
/* Datagram to `to` (must stay valid until READY); from: the sender
 * (optional; must stay valid until READY). */
BLITZ_API blitz_poll blitz_udp_send_to(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                       const void *buf, size_t len, const blitz_addr *to);
BLITZ_API blitz_poll blitz_udp_recv_from(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                         size_t len, blitz_addr *from);
/* Multicast group membership (IPv4 or IPv6 group; interface: an IPv4
 * address literal or NULL for any / an IPv6 interface index as text). */
BLITZ_API int blitz_udp_join_multicast(blitz_socket *s, const char *group, const char *iface);
BLITZ_API int blitz_udp_leave_multicast(blitz_socket *s, const char *group, const char *iface);
BLITZ_API int blitz_udp_set_multicast_loop(blitz_socket *s, int on);
BLITZ_API int blitz_udp_set_broadcast(blitz_socket *s, int on);

/* Unix sockets: stream listener and connect (the op form, like TCP),
 * datagram sockets (bound to addr, or unbound with addr NULL). A path
 * listener unlinks a stale socket file first. */
BLITZ_API int blitz_unix_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                                blitz_socket **out);
#define blitz_unix_accept blitz_tcp_accept
BLITZ_API blitz_poll blitz_unix_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr);
BLITZ_API int blitz_unix_dgram(blitz_runtime *rt, const blitz_addr *addr, blitz_socket **out);
/* A connected pair of Unix stream (type 1) or datagram (type 2) sockets. */
BLITZ_API int blitz_unix_pair(blitz_runtime *rt, int type, blitz_socket **a, blitz_socket **b);
#define blitz_unix_send_to   blitz_udp_send_to
#define blitz_unix_recv_from blitz_udp_recv_from
#define blitz_unix_connect_dgram blitz_udp_connect

/* Adopts an existing descriptor (made non-blocking and close-on-exec);
 * blitz closes it with the socket. */
BLITZ_API int blitz_sock_adopt(blitz_runtime *rt, int fd, blitz_socket **out);
/* ====[ END src/api_io.h ]================================================= */
/* ====[ BEGIN src/api_pool.h ]============================================= */
/* >>api_pool */
/* Public API: The blocking pool, files, DNS, signals, processes, streams. */
/* ====[ END src/api_pool.h ]=============================================== */

#ifdef __cplusplus
}
#endif
/* ====[ END src/blitz_api.h ]============================================== */
#endif /* BLITZ_H */

#if defined(BLITZ_IMPLEMENTATION) && !defined(BLITZ__IMPLEMENTATION_INCLUDED)
#define BLITZ__IMPLEMENTATION_INCLUDED 1
#define BLITZ__AMALGAMATION 1
/* ====[ BEGIN src/error.c ]================================================ */
/* >>error */
/* Error codes: blitz_strerror and blitz_err_name, both generated from
 * BLITZ_ERRNO_MAP, and the mapping from errno values. */
/* ====[ BEGIN src/internal.h ]============================================= */
/* >>internal */
/* Internal definitions shared by every module: configuration defaults,
 * linkage, and the layout of the runtime's structures. Everything below is
 * private (blitz__ prefix) and may change at any time. */

/* ====[ BEGIN src/platform.h ]============================================= */
/* >>platform */
/* The only place that includes system headers, grouped by OS. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#if !defined(CLOCK_MONOTONIC)
#error \
    "blitz.h: POSIX declarations are hidden (strict -std=c11?). Include blitz.h before any system header in the file that defines BLITZ_IMPLEMENTATION, or define _POSIX_C_SOURCE=200809L or _GNU_SOURCE."
#endif

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
/* Hidden under strict _POSIX_C_SOURCE; the redeclaration is compatible. */
long syscall(long number, ...);
#define BLITZ__HAS_FUTEX 1
#endif

/* Sockets and the I/O backends. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#if defined(__linux__)
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <linux/io_uring.h>
#define BLITZ__LINUX 1
#else
#define BLITZ__LINUX 0
#define BLITZ_NO_IO_URING 1
#define BLITZ_NO_EPOLL 1
#endif

#if !defined(__linux__)
#define BLITZ__HAS_FUTEX 0
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
/* ====[ END src/platform.h ]=============================================== */
/* ====[ BEGIN src/atomic.h ]=============================================== */
/* >>atomic */
/* The one atomics layer. Nothing else in blitz names a raw atomic: every
 * shared word is one of the wrapper types below and is touched only through
 * these functions, so a test build can swap the layer for an instrumented
 * one. GCC/Clang __atomic builtins work in C and C++ alike and are seen by
 * ThreadSanitizer.
 *
 * Orders: BLITZ__RELAXED, BLITZ__ACQUIRE, BLITZ__RELEASE, BLITZ__ACQ_REL,
 * BLITZ__SEQ_CST. The ordering of every non-obvious use is argued at the
 * call site. */

#if !defined(__GNUC__) && !defined(__clang__)
#error "blitz needs GCC or Clang __atomic builtins (MSVC support is not built yet)"
#endif

#define BLITZ__RELAXED __ATOMIC_RELAXED
#define BLITZ__ACQUIRE __ATOMIC_ACQUIRE
#define BLITZ__RELEASE __ATOMIC_RELEASE
#define BLITZ__ACQ_REL __ATOMIC_ACQ_REL
#define BLITZ__SEQ_CST __ATOMIC_SEQ_CST

typedef struct {
    uint32_t v;
} blitz__atomic_u32;
typedef struct {
    uint64_t v;
} blitz__atomic_u64;
typedef struct {
    void *v;
} blitz__atomic_ptr;

/* Failure order of a CAS may not be stronger than success nor a release. */
#define BLITZ__CAS_FAIL_ORDER(o) \
    ((o) == BLITZ__ACQ_REL ? BLITZ__ACQUIRE : (o) == BLITZ__RELEASE ? BLITZ__RELAXED : (o))

#define BLITZ__DEFINE_ATOMIC(T, name)                                                           \
    static inline T blitz__##name##_load(const blitz__atomic_##name *a, int o) {                \
        return __atomic_load_n(&a->v, o);                                                       \
    }                                                                                           \
    static inline void blitz__##name##_store(blitz__atomic_##name *a, T x, int o) {             \
        __atomic_store_n(&a->v, x, o);                                                          \
    }                                                                                           \
    static inline T blitz__##name##_swap(blitz__atomic_##name *a, T x, int o) {                 \
        return __atomic_exchange_n(&a->v, x, o);                                                \
    }                                                                                           \
    /* On failure *expected receives the current value. */                                      \
    static inline int blitz__##name##_cas(blitz__atomic_##name *a, T *expected, T desired,      \
                                          int o) {                                              \
        return __atomic_compare_exchange_n(&a->v, expected, desired, 0, o,                      \
                                           BLITZ__CAS_FAIL_ORDER(o));                           \
    }                                                                                           \
    static inline int blitz__##name##_cas_weak(blitz__atomic_##name *a, T *expected, T desired, \
                                               int o) {                                         \
        return __atomic_compare_exchange_n(&a->v, expected, desired, 1, o,                      \
                                           BLITZ__CAS_FAIL_ORDER(o));                           \
    }

BLITZ__DEFINE_ATOMIC(uint32_t, u32)
BLITZ__DEFINE_ATOMIC(uint64_t, u64)
BLITZ__DEFINE_ATOMIC(void *, ptr)

#define BLITZ__DEFINE_ATOMIC_ARITH(T, name)                                          \
    static inline T blitz__##name##_fetch_add(blitz__atomic_##name *a, T x, int o) { \
        return __atomic_fetch_add(&a->v, x, o);                                      \
    }                                                                                \
    static inline T blitz__##name##_fetch_sub(blitz__atomic_##name *a, T x, int o) { \
        return __atomic_fetch_sub(&a->v, x, o);                                      \
    }                                                                                \
    static inline T blitz__##name##_fetch_or(blitz__atomic_##name *a, T x, int o) {  \
        return __atomic_fetch_or(&a->v, x, o);                                       \
    }                                                                                \
    static inline T blitz__##name##_fetch_and(blitz__atomic_##name *a, T x, int o) { \
        return __atomic_fetch_and(&a->v, x, o);                                      \
    }

BLITZ__DEFINE_ATOMIC_ARITH(uint32_t, u32)
BLITZ__DEFINE_ATOMIC_ARITH(uint64_t, u64)

/* A 32-bit word inside a public struct (the types above are private). */
static inline uint32_t blitz__u32_field_load(const uint32_t *p, int o) {
    return __atomic_load_n(p, o);
}
static inline void blitz__u32_field_store(uint32_t *p, uint32_t x, int o) {
    __atomic_store_n(p, x, o);
}
static inline int blitz__u32_field_cas(uint32_t *p, uint32_t *expected, uint32_t desired, int o) {
    return __atomic_compare_exchange_n(p, expected, desired, 0, o, BLITZ__CAS_FAIL_ORDER(o));
}

/* A counter written by one thread and read by others: a plain load+store
 * (no locked RMW) is enough because there is a single writer. The store is
 * release (free on x86 and cheap elsewhere) so that a reader that acquires
 * the count also sees what the writer did before (see blitz__count_freed). */
static inline void blitz__u64_bump(blitz__atomic_u64 *a, uint64_t n) {
    __atomic_store_n(&a->v, __atomic_load_n(&a->v, BLITZ__RELAXED) + n, BLITZ__RELEASE);
}

static inline void blitz__fence_seq_cst(void) {
    __atomic_thread_fence(BLITZ__SEQ_CST);
}

static inline void blitz__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
/* ====[ END src/atomic.h ]================================================= */

/* blitz_api.h already included */

/* ---- configuration ------------------------------------------------------ */

#ifndef BLITZ_PRIVATE
#define BLITZ_PRIVATE static __attribute__((unused))
#endif

#ifndef BLITZ_ASSERT
#define BLITZ_ASSERT(c) assert(c)
#endif

#if defined(BLITZ_MALLOC) != defined(BLITZ_FREE)
#error "define both BLITZ_MALLOC and BLITZ_FREE, or neither"
#endif
#ifndef BLITZ_MALLOC
#define BLITZ_MALLOC(size)       malloc(size)
#define BLITZ_FREE(ptr)          free(ptr)
#define BLITZ__DEFAULT_ALLOCATOR 1
#endif

#ifndef BLITZ_LOCAL_QUEUE_CAPACITY
#define BLITZ_LOCAL_QUEUE_CAPACITY 256
#endif
#ifndef BLITZ_BUDGET_PER_TICK
#define BLITZ_BUDGET_PER_TICK 128
#endif
#ifndef BLITZ_MAX_LIFO_POLLS_PER_TICK
#define BLITZ_MAX_LIFO_POLLS_PER_TICK 3
#endif

#ifndef BLITZ_CACHE_LINE
#if defined(__x86_64__) || defined(__aarch64__) || defined(__powerpc64__)
/* Adjacent-line prefetchers pull pairs of 64-byte lines (seed 002 table). */
#define BLITZ_CACHE_LINE 128
#elif defined(__s390x__)
#define BLITZ_CACHE_LINE 256
#elif defined(__arm__) || defined(__mips__) || defined(__sparc__)
#define BLITZ_CACHE_LINE 32
#else
#define BLITZ_CACHE_LINE 64
#endif
#endif

_Static_assert(BLITZ_MAX_WORKERS >= 1 && BLITZ_MAX_WORKERS <= 64,
               "BLITZ_MAX_WORKERS must be 1..64: the parked-worker bitmap is one 64-bit word");
_Static_assert(BLITZ_LOCAL_QUEUE_CAPACITY >= 2 && BLITZ_LOCAL_QUEUE_CAPACITY <= 16384 &&
                   (BLITZ_LOCAL_QUEUE_CAPACITY & (BLITZ_LOCAL_QUEUE_CAPACITY - 1)) == 0,
               "BLITZ_LOCAL_QUEUE_CAPACITY must be a power of two in 2..16384");
_Static_assert(BLITZ_BUDGET_PER_TICK >= 1, "BLITZ_BUDGET_PER_TICK must be positive");

/* Global-queue batches (seed 000): min(64, max(4, len / workers)). */
#define BLITZ__GLOBAL_BATCH_MIN  4
#define BLITZ__GLOBAL_BATCH_MAX  64
#define BLITZ__BATCH_BUFFER_SIZE 32
/* Adaptive global-queue interval: clamp(1 ms / EWMA(poll ns), 8, 255). */
#define BLITZ__INTERVAL_MIN        8
#define BLITZ__INTERVAL_MAX        255
#define BLITZ__INTERVAL_TARGET_NS  1000000u
#define BLITZ__INITIAL_AVG_POLL_NS 50000u
#define BLITZ__HELP_WAIT_MAX_NS    10000000u
#define BLITZ__DEFAULT_SPIN        64u

#define BLITZ__ALIGNED     __attribute__((aligned(BLITZ_CACHE_LINE)))
#define BLITZ__LIKELY(x)   __builtin_expect(!!(x), 1)
#define BLITZ__UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifdef BLITZ_NO_STATS
#define BLITZ__STAT(expr) ((void)0)
#else
#define BLITZ__STAT(expr) (expr)
#endif

/* ---- threads and parking (thread.c) -------------------------------------- */

#if BLITZ__HAS_FUTEX
/* A futex lock that spins briefly first: the critical sections it guards
 * are a few pointer moves, far shorter than a sleep and a wake. */
typedef struct {
    blitz__atomic_u32 state; /* 0 free, 1 held, 2 held with sleepers */
} blitz__mutex;
#else
typedef pthread_mutex_t blitz__mutex;
#endif

/* ---- tasks (task_state.c, task.c, task_alloc.c) -------------------------- */

/* The task header. A task is one block: this header, then the user's state
 * (16-byte aligned), and, when the task has a drop function, that pointer in
 * the block's last 8 bytes. The runtime a task belongs to is found from the
 * 64 KiB-aligned chunk that holds the block, so the header carries no
 * runtime pointer: 40 bytes in all. */
struct blitz_task {
    /* ref_count 24 | shield 8 | flags 8 | lifecycle 8 | low flags 16; see
     * task_state.c. Zero means the block is free. */
    blitz__atomic_u64 state;
    blitz_poll_fn poll;
    /* Intrusive link: global queue, current-thread queue, or a free list. A
     * task is in at most one of them, guarded by the SCHEDULED lifecycle. */
    struct blitz_task *next;
    /* The waker of the task awaiting this one; owned by whoever the
     * JOIN_WAKER protocol says (join.c). */
    blitz_waker join_waker;
};
typedef struct blitz_task blitz__task;

#define BLITZ__TASK_HEADER_SIZE 40u
_Static_assert(sizeof(struct blitz_task) == BLITZ__TASK_HEADER_SIZE || sizeof(void *) != 8,
               "task header layout");

/* ---- the block allocator (task_alloc.c) ---------------------------------- */

#define BLITZ__CHUNK_SIZE  ((size_t)64 * 1024)
#define BLITZ__NUM_CLASSES 30
#define BLITZ__CLASS_LARGE 0xffffu

typedef struct blitz__chunk {
    blitz_runtime *rt;
    struct blitz__chunk *next;
    void *raw; /* what to hand back to the allocator */
    uint32_t block_size;
    uint32_t class_index;
    uint32_t capacity; /* blocks that fit */
    uint32_t carved;   /* blocks handed out so far (by the chunk's carver) */
} blitz__chunk;

/* Free blocks by size class, moved between caches in whole batches of
 * BLITZ__FREE_BATCH blocks. Each worker has one (no locking); threads that
 * are not workers share one behind alloc_lock. */
typedef struct blitz__block_cache {
    blitz__task *active[BLITZ__NUM_CLASSES]; /* free blocks, LIFO */
    uint32_t active_count[BLITZ__NUM_CLASSES];
    blitz__task *full[BLITZ__NUM_CLASSES]; /* one full batch held back, or NULL */
    blitz__chunk *carving[BLITZ__NUM_CLASSES];
} blitz__block_cache;

/* ====[ BEGIN src/timer_wheel.h ]========================================== */
/* >>timer_wheel */
/* The hierarchical timer wheel's types and interface (timer_wheel.c).
 *
 * Deadlines are in ticks (the runtime's tick is 1 ms). The wheel is a plain
 * data structure: no locking (the caller serializes), no allocation (entries
 * are intrusive), no clock (the caller says what time it is). */

#define BLITZ__WHEEL_LEVELS    5
#define BLITZ__WHEEL_SLOT_BITS 6
#define BLITZ__WHEEL_SLOTS     64
/* The levels reach 64^5 = 2^30 ticks (~12 days at 1 ms); later deadlines
 * wait in the overflow list. */
#define BLITZ__WHEEL_SPAN_BITS (BLITZ__WHEEL_LEVELS * BLITZ__WHEEL_SLOT_BITS)

/* entry->where: level * 64 + slot for an entry in a slot, or one of these. */
#define BLITZ__WHEEL_WHERE_OVERFLOW (BLITZ__WHEEL_LEVELS * BLITZ__WHEEL_SLOTS)
#define BLITZ__WHEEL_WHERE_DUE      (BLITZ__WHEEL_WHERE_OVERFLOW + 1)
#define BLITZ__WHEEL_NOT_IN_WHEEL   0xffffffffu

/* The entry, struct blitz__timer_entry, is defined in blitz_api.h because
 * blitz_timer embeds it and users keep timers in their task state:
 *   uint64_t deadline;  in ticks; set before insert, left alone while in
 *   next, prev;         the wheel's links
 *   uint32_t where;     level * 64 + slot, or one of the values above */
typedef struct blitz__timer_entry blitz__timer_entry;

/* An entry that is in no wheel. Zeroed memory is NOT a valid idle entry
 * (where 0 means level 0, slot 0): initialize with this or
 * blitz__timer_entry_init before the first insert or remove. */
#define BLITZ__TIMER_ENTRY_INIT \
    { .deadline = 0, .next = NULL, .prev = NULL, .where = BLITZ__WHEEL_NOT_IN_WHEEL }

typedef struct blitz__timer_wheel {
    uint64_t elapsed; /* every entry still in a slot or the overflow is due after this */
    uint64_t occupied[BLITZ__WHEEL_LEVELS]; /* bit s of level l: slots[l][s] is not empty */
    /* Lower bounds, UINT64_MAX when their list is empty: the earliest
     * deadline in `due`, and the earliest 2^30-aligned start of a deadline
     * in `overflow`. Removal may leave them lower than the truth. */
    uint64_t due_min;
    uint64_t overflow_start;
    size_t count;
    blitz__timer_entry *due;      /* inserted at or before elapsed */
    blitz__timer_entry *overflow; /* beyond the levels' reach */
    /* Doubly linked lists, NULL-terminated; the head's prev is NULL. */
    blitz__timer_entry *slots[BLITZ__WHEEL_LEVELS][BLITZ__WHEEL_SLOTS];
} blitz__timer_wheel;

BLITZ_PRIVATE void blitz__timer_entry_init(blitz__timer_entry *e);
BLITZ_PRIVATE void blitz__wheel_init(blitz__timer_wheel *w, uint64_t now_tick);
/* Inserts e with e->deadline already set. A deadline <= w->elapsed is due
 * at once: it goes to a "due" list that the next advance returns first. An
 * entry already in the wheel is moved (removed, then inserted). */
BLITZ_PRIVATE void blitz__wheel_insert(blitz__timer_wheel *w, blitz__timer_entry *e);
/* O(1). Safe on an entry not in the wheel (no-op, returns 0); returns 1 if
 * it was removed. */
BLITZ_PRIVATE int blitz__wheel_remove(blitz__timer_wheel *w, blitz__timer_entry *e);
/* The earliest tick at which some entry is due: exact for level-0 entries,
 * a lower bound (the slot's start) for higher levels and the overflow, never
 * later than the earliest deadline. UINT64_MAX when empty (and when every
 * deadline left is UINT64_MAX: tell them apart by the count). O(levels). */
BLITZ_PRIVATE uint64_t blitz__wheel_next_expiry(const blitz__timer_wheel *w);
/* Advances elapsed to now_tick (never backwards) and sets *out to a list of
 * every entry with deadline <= now_tick (linked through next, the first's
 * prev NULL, order unspecified; NULL if none). Those entries are out of the
 * wheel (where = NOT_IN_WHEEL) and may be re-inserted at once, but read
 * e->next before re-inserting e. Returns the number moved. */
BLITZ_PRIVATE size_t blitz__wheel_advance(blitz__timer_wheel *w, uint64_t now_tick,
                                          blitz__timer_entry **out);
BLITZ_PRIVATE size_t blitz__wheel_count(const blitz__timer_wheel *w);
/* ====[ END src/timer_wheel.h ]============================================ */

/* ---- queues ---------------------------------------------------------------- */

/* The per-worker ring (local_queue.c): one producer (the owner), many
 * consumers. head packs (steal << 16) | real as two 16-bit positions. */
typedef struct blitz__local_queue {
    BLITZ__ALIGNED blitz__atomic_u32 head;
    BLITZ__ALIGNED blitz__atomic_u32 tail;
    BLITZ__ALIGNED blitz__atomic_ptr buffer[BLITZ_LOCAL_QUEUE_CAPACITY];
} blitz__local_queue;

/* The injection queue (global_queue.c): mutex + intrusive list + atomic
 * length for lock-free emptiness checks. */
typedef struct blitz__global_queue {
    blitz__mutex lock;
    blitz__task *head;
    blitz__task *tail;
    int closed;
    BLITZ__ALIGNED blitz__atomic_u64 len;
} blitz__global_queue;

/* ---- parking and idle workers (thread.c, idle.c) -------------------------- */

#define BLITZ__UNPARKED 0u
#define BLITZ__PARKED   1u
#define BLITZ__NOTIFIED 2u
/* Parked inside the I/O backend: unpark writes the driver's wake fd. */
#define BLITZ__PARKED_DRIVER 3u

typedef struct blitz__parker {
    blitz__atomic_u32 state; /* UNPARKED / PARKED / NOTIFIED / PARKED_DRIVER; the futex word */
    int wake_fd;             /* the I/O driver's eventfd, or -1 */
#if !BLITZ__HAS_FUTEX
    pthread_mutex_t lock;
    pthread_cond_t cond;
#endif
} blitz__parker;

typedef struct blitz__idle {
    BLITZ__ALIGNED blitz__atomic_u32 num_searching;
    BLITZ__ALIGNED blitz__atomic_u64 parked_bitmap; /* bit i set: worker i parked */
} blitz__idle;

/* ---- workers (worker.c) ----------------------------------------------------- */

typedef struct blitz__worker_counters {
    blitz__atomic_u64 polled, stolen, steals, parked, lifo_hits, batch_fetches, overflows;
    blitz__atomic_u64 spawned, freed;
} blitz__worker_counters;

typedef struct blitz__worker {
    blitz__local_queue queue;
    /* Owner-only fields. */
    BLITZ__ALIGNED blitz_runtime *rt;
    blitz__task *lifo_slot;
    blitz__task *batch[BLITZ__BATCH_BUFFER_SIZE];
    uint32_t batch_head, batch_len;
    uint32_t index;
    uint32_t tick;       /* polls, for the periodic global-queue check */
    uint32_t lifo_polls; /* consecutive LIFO polls */
    uint32_t global_interval;
    uint64_t avg_poll_ns; /* EWMA of the time per poll */
    uint64_t stamp_ns;    /* clock at the last interval update */
    uint64_t stamp_polls; /* polls since then */
    uint64_t rng[2];      /* xorshift64+ for victim choice */
    int searching;
    int started;
    blitz__task *deferred_head, *deferred_tail; /* yielded this tick */
    int wake_batching;                          /* between blitz__wake_batch_begin and _end */
    blitz__task *wake_head, *wake_tail;
    uint64_t wake_count;
    pthread_t thread;
    blitz__block_cache cache;
    /* Read by producers on other threads (lost-wakeup guard, seed 000). */
    BLITZ__ALIGNED blitz__atomic_u32 transitioning_to_park;
    blitz__atomic_u32 interval_shared; /* for stats readers */
    blitz__parker parker;
    blitz__worker_counters counters;
} blitz__worker;

/* ---- the current-thread core (current_thread.c) ---------------------------- */

typedef struct blitz__ct_core {
    blitz__task *head, *tail;                   /* run queue, touched only by the driving thread */
    blitz__task *deferred_head, *deferred_tail; /* yielded this tick */
    blitz__atomic_u32 driving;                  /* 1 while a thread drives the runtime */
    blitz__parker parker;                       /* the driver sleeps here */
    uint32_t tick;
    blitz__worker_counters counters;
    blitz__block_cache cache;
} blitz__ct_core;

/* ---- thread context (seed 002 "Thread-Local Context") ---------------------- */

typedef struct blitz__context {
    blitz_runtime *rt;
    blitz__worker *worker; /* NULL on the current-thread driver and on helpers */
    int ct_driver;         /* this thread drives rt (current-thread flavour) */
    blitz__task *current;  /* the task being polled, or NULL */
} blitz__context;

/* The poll context handed to poll functions. */
struct blitz_cx {
    blitz__task *task;
    blitz__context *ctx;
    int yielded;
};

/* ---- the time driver (time_driver.c) ---------------------------------------- */

typedef struct blitz__time_driver {
    blitz__mutex lock; /* guards wheel, firing and armed timers' wakers */
    blitz__timer_wheel wheel;
    blitz__timer_entry *firing; /* due, being fired in batches */
    uint64_t origin_ns;         /* tick 0 */
    int paused;                 /* virtual clock */
    int advancing;              /* a paused-clock jump is firing its timers */
    blitz__atomic_u64 virtual_ns;
    /* Earliest deadline in ns (never later than the truth), UINT64_MAX
     * when no timer is armed. */
    BLITZ__ALIGNED blitz__atomic_u64 next_expiry_ns;
    /* 1 + index of the parked worker that sleeps until the next deadline,
     * or 0. */
    blitz__atomic_u32 sleeper;
} blitz__time_driver;

/* ---- the runtime (runtime.c) ------------------------------------------------ */

struct blitz_runtime {
    blitz_flavor flavor;
    uint32_t num_workers;
    uint64_t park_timeout_ns;
    uint32_t spin_before_park;
    int spin_explicit; /* spin_before_park was set in the config */
    uint32_t fixed_interval;

    BLITZ__ALIGNED blitz__global_queue global;
    blitz__idle idle;
    blitz__worker *workers;
    blitz__ct_core *ct;

    BLITZ__ALIGNED blitz__atomic_u32 shutdown;
    blitz__atomic_u32 started;
    blitz__atomic_u32 workers_started;
    blitz__mutex start_lock;
    int shutdown_done;
    blitz__atomic_u32 sweeping; /* the shutdown sweep walks the chunk list */
    /* Threads waiting in blitz_task_wait sleep on this futex word; a task
     * whose joiner is such a thread bumps it on completion. */
    BLITZ__ALIGNED blitz__atomic_u32 completion_seq;
    blitz__atomic_u32 completion_sleepers;
    /* Non-worker threads currently polling a task (blockOnComplete). */
    blitz__atomic_u32 external_running;
    /* Pinned main tasks woken and not yet picked up by their thread. */
    blitz__atomic_u32 pinned_runnable;
    /* Paused clock only: threads polling a task of this runtime. */
    blitz__atomic_u32 paused_polling;

    /* Block allocator: every chunk, and the cache shared by non-worker
     * threads. */
    blitz__mutex alloc_lock;
    blitz__chunk *chunks;
    blitz__block_cache shared_cache;
    /* Full batches given up by caches, linked through each batch's first
     * block (join_waker.data). */
    blitz__atomic_ptr spare_batches[BLITZ__NUM_CLASSES];
    blitz__worker_counters remote_counters; /* updated under alloc_lock */
    blitz__time_driver time;
    void *workers_raw;
    /* The I/O driver (io_driver.c), or NULL when no backend could start. */
    struct blitz__io *io;
    blitz_backend backend_choice;
};

/* Appends `t` to an intrusive FIFO (head, tail) linked through `next`. A
 * task is in at most one such list: it is SCHEDULED and in no queue. */
static inline void blitz__list_append(blitz__task **head, blitz__task **tail, blitz__task *t) {
    t->next = NULL;
    if (*tail)
        (*tail)->next = t;
    else
        *head = t;
    *tail = t;
}

/* ---- forward declarations used across modules ------------------------------ */

BLITZ_PRIVATE void blitz__task_schedule(blitz__task *t);
BLITZ_PRIVATE void blitz__task_reschedule(blitz__task *t, blitz__context *ctx, int yielded);
BLITZ_PRIVATE int blitz__task_spawn_schedule(blitz_runtime *rt, blitz__task *t);
BLITZ_PRIVATE void blitz__ct_push(blitz_runtime *rt, blitz__task *t);
BLITZ_PRIVATE int blitz__ct_inject(blitz_runtime *rt, blitz__task *t);
BLITZ_PRIVATE void blitz__ct_wait(blitz_runtime *rt, blitz__task *t, blitz__context *ctx);
BLITZ_PRIVATE void blitz__worker_help_until(blitz__context *ctx, blitz__task *t);
BLITZ_PRIVATE void blitz__external_help_until(blitz_runtime *rt, blitz__task *t, int nested);
BLITZ_PRIVATE void blitz__block_on(blitz_runtime *rt, blitz__task *t);
BLITZ_PRIVATE void blitz__wake_batch_begin(void);
BLITZ_PRIVATE void blitz__wake_batch_end(void);
BLITZ_PRIVATE void blitz__task_free(blitz__task *t);
static inline blitz_runtime *blitz__task_runtime(const blitz__task *t);
/* ====[ END src/internal.h ]=============================================== */

BLITZ_API const char *blitz_strerror(int err) {
    switch (err) {
    case BLITZ_OK:
        return "success";
#define BLITZ__ERR_TEXT(name, value, text) \
    case value:                            \
        return text;
        BLITZ_ERRNO_MAP(BLITZ__ERR_TEXT)
#undef BLITZ__ERR_TEXT
    default:
        return "unknown error";
    }
}

BLITZ_API const char *blitz_err_name(int err) {
    switch (err) {
    case BLITZ_OK:
        return "OK";
#define BLITZ__ERR_NAME(name, value, text) \
    case value:                            \
        return #name;
        BLITZ_ERRNO_MAP(BLITZ__ERR_NAME)
#undef BLITZ__ERR_NAME
    default:
        return "UNKNOWN";
    }
}

BLITZ_API const char *blitz_version(void) {
    return BLITZ_VERSION_STRING;
}

/* -errno for a failed system call. The map's values are Linux's; on other
 * systems the codes blitz returns itself are the map's, and raw errno values
 * are passed through negated. */
BLITZ_PRIVATE int blitz__from_errno(int e) {
    return e > 0 ? -e : BLITZ_EIO;
}
/* ====[ END src/error.c ]================================================== */
/* ====[ BEGIN src/alloc.c ]================================================ */
/* >>alloc */
/* Memory: every allocation blitz makes goes through BLITZ_MALLOC/BLITZ_FREE
 * (malloc/free unless the user defines both). */
/* internal.h already included */

BLITZ_PRIVATE void *blitz__malloc(size_t size) {
    return BLITZ_MALLOC(size);
}

BLITZ_PRIVATE void *blitz__calloc(size_t size) {
    void *p = BLITZ_MALLOC(size);
    if (p)
        memset(p, 0, size);
    return p;
}

BLITZ_PRIVATE void blitz__free(void *p) {
    if (p)
        BLITZ_FREE(p);
}

/* `size` bytes aligned to `align` (a power of two). *raw receives what must
 * be passed to blitz__free. The default allocator uses posix_memalign, which
 * gives the unused head back; a user allocator is over-asked and trimmed
 * here. */
BLITZ_PRIVATE void *blitz__alloc_aligned(size_t size, size_t align, void **raw) {
#ifdef BLITZ__DEFAULT_ALLOCATOR
    void *p = NULL;
    if (posix_memalign(&p, align, size) != 0)
        return NULL;
    *raw = p;
    return p;
#else
    if (size > SIZE_MAX - align)
        return NULL;
    char *p = (char *)BLITZ_MALLOC(size + align);
    if (!p)
        return NULL;
    *raw = p;
    return (void *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
#endif
}
/* ====[ END src/alloc.c ]================================================== */
/* ====[ BEGIN src/thread.c ]=============================================== */
/* >>thread */
/* Threads, mutexes, the monotonic clock, futex waits, and the parker that
 * puts an idle thread to sleep (seed 000 "Park state"). */
/* internal.h already included */

#if BLITZ__HAS_FUTEX
static void blitz__futex_wait_forever(blitz__atomic_u32 *word, uint32_t expected) {
    syscall(SYS_futex, &word->v, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}
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
        blitz__futex_wait_forever(&m->state, 2);
        c = blitz__u32_swap(&m->state, 2, BLITZ__ACQUIRE);
    }
}
BLITZ_PRIVATE int blitz__mutex_trylock(blitz__mutex *m) {
    uint32_t c = 0;
    return blitz__u32_cas(&m->state, &c, 1, BLITZ__ACQUIRE);
}
BLITZ_PRIVATE void blitz__mutex_unlock(blitz__mutex *m) {
    if (blitz__u32_swap(&m->state, 0, BLITZ__RELEASE) == 2)
        syscall(SYS_futex, &m->state.v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#else
BLITZ_PRIVATE int blitz__mutex_init(blitz__mutex *m) {
    return -pthread_mutex_init(m, NULL);
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

BLITZ_PRIVATE uint64_t blitz__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

BLITZ_PRIVATE uint32_t blitz__cpu_count(void) {
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return (uint32_t)n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1u;
}

static void blitz__timespec_from_ns(struct timespec *ts, uint64_t ns) {
    ts->tv_sec = (time_t)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
}

/* ---- futex-style waiting on a 32-bit word --------------------------------- */

#if BLITZ__HAS_FUTEX
/* Sleeps while *word == expected, at most timeout_ns (0 = no limit).
 * Spurious returns are allowed; callers re-check. */
BLITZ_PRIVATE void blitz__futex_wait(blitz__atomic_u32 *word, uint32_t expected,
                                     uint64_t timeout_ns) {
    struct timespec ts, *tsp = NULL;
    if (timeout_ns) {
        blitz__timespec_from_ns(&ts, timeout_ns);
        tsp = &ts;
    }
    syscall(SYS_futex, &word->v, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
}
BLITZ_PRIVATE void blitz__futex_wake(blitz__atomic_u32 *word, int n) {
    syscall(SYS_futex, &word->v, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}
#else
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
    p->wake_fd = -1;
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
 * io_uring_enter): the driver's eventfd is part of every wait. */
static void blitz__wake_fd_signal(int fd) {
    uint64_t one = 1;
    ssize_t r;
    do
        r = write(fd, &one, sizeof one);
    while (r < 0 && errno == EINTR);
    /* EAGAIN: the counter is already nonzero, the waiter wakes anyway. */
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

static _Thread_local blitz__context *blitz__tls_context;

BLITZ_PRIVATE blitz__context *blitz__context_get(void) {
    return blitz__tls_context;
}
BLITZ_PRIVATE blitz__context *blitz__context_set(blitz__context *c) {
    blitz__context *old = blitz__tls_context;
    blitz__tls_context = c;
    return old;
}

BLITZ_PRIVATE int blitz__thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
    return -pthread_create(t, NULL, fn, arg);
}
/* ====[ END src/thread.c ]================================================= */
/* ====[ BEGIN src/task_state.c ]=========================================== */
/* >>task_state */
/* The task state word (seed 002, "Task State Machine") and its transitions.
 *
 *   63        40 39    32 31    24 23       16 15          0
 *  +------------+--------+--------+-----------+-------------+
 *  | ref_count  | shield | flags  | lifecycle | low flags   |
 *  +------------+--------+--------+-----------+-------------+
 *
 * lifecycle: IDLE (waiting for a wake), SCHEDULED (in a queue), RUNNING
 * (being polled), COMPLETE (finished; the state stays readable).
 * flags: NOTIFIED (woken while RUNNING: poll again), CANCELLED (cancel
 * requested), JOIN_INTEREST (a handle exists), DETACHED (the handle was
 * released before completion), JOIN_WAKER (join_waker holds a waker).
 * low flags: OUTCOME_CANCELLED (completed by cancellation), HAS_DROP (the
 * block ends with a drop function), HAS_CANCEL (and with a cancel hook), THREAD_JOINER (a thread
 * sleeps on the runtime's completion word waiting for this task), PINNED (the task is polled only
 * by the thread blocked in blitz_runtime_run on it, never queued: a wake just rouses that thread,
 * as Tokio's block_on does). ref_count: one reference for the task's life until completion (the
 * runtime's own, standing in for Tokio's owned-task list), one for the
 * handle, one per cloned waker. The block is freed when it reaches zero.
 *
 * Every transition is one CAS (or one RMW) on the word, so two parties never
 * both believe they own a step. Transitions that publish the user's state
 * (RUNNING -> COMPLETE) are release; the matching readers are acquire. */
/* internal.h already included */

#define BLITZ__LC_SHIFT     16
#define BLITZ__LC_MASK      ((uint64_t)0xff << BLITZ__LC_SHIFT)
#define BLITZ__LC_IDLE      ((uint64_t)0 << BLITZ__LC_SHIFT)
#define BLITZ__LC_SCHEDULED ((uint64_t)1 << BLITZ__LC_SHIFT)
#define BLITZ__LC_RUNNING   ((uint64_t)2 << BLITZ__LC_SHIFT)
#define BLITZ__LC_COMPLETE  ((uint64_t)3 << BLITZ__LC_SHIFT)

#define BLITZ__TASK_OUTCOME_CANCELLED ((uint64_t)1 << 0)
#define BLITZ__TASK_HAS_DROP          ((uint64_t)1 << 1)
#define BLITZ__TASK_THREAD_JOINER     ((uint64_t)1 << 2)
#define BLITZ__TASK_PINNED            ((uint64_t)1 << 3)
#define BLITZ__TASK_HAS_CANCEL        ((uint64_t)1 << 4)

#define BLITZ__TASK_NOTIFIED      ((uint64_t)1 << 24)
#define BLITZ__TASK_CANCELLED     ((uint64_t)1 << 25)
#define BLITZ__TASK_JOIN_INTEREST ((uint64_t)1 << 26)
#define BLITZ__TASK_DETACHED      ((uint64_t)1 << 27)
#define BLITZ__TASK_JOIN_WAKER    ((uint64_t)1 << 28)

#define BLITZ__SHIFT_SHIELD    32
#define BLITZ__TASK_SHIELD_ONE ((uint64_t)1 << BLITZ__SHIFT_SHIELD)
#define BLITZ__SHIELD_MASK     ((uint64_t)0xff << BLITZ__SHIFT_SHIELD)
#define BLITZ__SHIFT_REF       40
#define BLITZ__TASK_REF_ONE    ((uint64_t)1 << BLITZ__SHIFT_REF)
#define BLITZ__REF_MAX         (((uint64_t)1 << 24) - 1)

static inline uint64_t blitz__lifecycle(uint64_t s) {
    return s & BLITZ__LC_MASK;
}
static inline uint64_t blitz__refs(uint64_t s) {
    return s >> BLITZ__SHIFT_REF;
}
static inline uint64_t blitz__shield(uint64_t s) {
    return (s & BLITZ__SHIELD_MASK) >> BLITZ__SHIFT_SHIELD;
}
static inline int blitz__cancel_due(uint64_t s) {
    return (s & BLITZ__TASK_CANCELLED) && blitz__shield(s) == 0;
}

/* The word of a freshly spawned task: scheduled, holding the lifecycle
 * reference and, with a handle, the handle's. */
BLITZ_PRIVATE uint64_t blitz__state_initial(int with_handle, int with_drop, int with_cancel) {
    uint64_t s = BLITZ__LC_SCHEDULED | BLITZ__TASK_REF_ONE;
    if (with_handle)
        s += BLITZ__TASK_REF_ONE | BLITZ__TASK_JOIN_INTEREST;
    if (with_drop)
        s |= BLITZ__TASK_HAS_DROP;
    if (with_cancel)
        s |= BLITZ__TASK_HAS_CANCEL;
    return s;
}

typedef enum { BLITZ__RUN_POLL, BLITZ__RUN_CANCEL } blitz__run_transition;

/* SCHEDULED -> RUNNING, clearing NOTIFIED. A due cancellation is also taken
 * to RUNNING (so the caller owns the task) and reported; the caller then
 * completes it as cancelled without polling. Acquire: the poll must see what
 * the waker published before waking. */
BLITZ_PRIVATE blitz__run_transition blitz__state_to_running(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        BLITZ_ASSERT(blitz__lifecycle(s) == BLITZ__LC_SCHEDULED);
        uint64_t next = (s & ~(BLITZ__LC_MASK | BLITZ__TASK_NOTIFIED)) | BLITZ__LC_RUNNING;
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQUIRE))
            return blitz__cancel_due(s) ? BLITZ__RUN_CANCEL : BLITZ__RUN_POLL;
    }
}

/* After a poll returned PENDING: RUNNING -> IDLE, or RUNNING -> SCHEDULED
 * when it must run again (woken during the poll, yielded, or a cancel became
 * due). Returns 1 when the caller must reschedule the task. Acq_rel: the
 * release publishes the poll's writes to whoever wakes the task next; the
 * acquire pairs with a waker's release when NOTIFIED was set. */
BLITZ_PRIVATE int blitz__state_to_idle(blitz__task *t, int yielded) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        BLITZ_ASSERT(blitz__lifecycle(s) == BLITZ__LC_RUNNING);
        int again = yielded || (s & BLITZ__TASK_NOTIFIED) || blitz__cancel_due(s);
        uint64_t next = (s & ~(BLITZ__LC_MASK | BLITZ__TASK_NOTIFIED)) |
                        (again ? BLITZ__LC_SCHEDULED : BLITZ__LC_IDLE);
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQ_REL))
            return again;
    }
}

/* What a wake must do. */
typedef enum { BLITZ__WAKE_NOTHING, BLITZ__WAKE_SCHEDULE } blitz__wake_transition;

/* IDLE -> SCHEDULED (the caller enqueues); RUNNING: set NOTIFIED;
 * SCHEDULED or COMPLETE: nothing. Acq_rel: the release half makes the
 * waker's writes happen before the poll that its wake causes; the acquire
 * half makes the last poll's writes (and the queue link the previous owner
 * wrote) happen before the enqueue this wake performs. */
BLITZ_PRIVATE blitz__wake_transition blitz__state_wake(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        uint64_t lc = blitz__lifecycle(s), next;
        if (lc == BLITZ__LC_COMPLETE || lc == BLITZ__LC_SCHEDULED)
            return BLITZ__WAKE_NOTHING;
        if (lc == BLITZ__LC_RUNNING) {
            if (s & BLITZ__TASK_NOTIFIED)
                return BLITZ__WAKE_NOTHING;
            next = s | BLITZ__TASK_NOTIFIED;
        } else {
            next = (s & ~BLITZ__LC_MASK) | BLITZ__LC_SCHEDULED;
        }
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQ_REL))
            return lc == BLITZ__LC_IDLE ? BLITZ__WAKE_SCHEDULE : BLITZ__WAKE_NOTHING;
    }
}

/* RUNNING -> COMPLETE. When no handle exists the lifecycle reference is
 * dropped in the same step (*freed_ref = 1); otherwise the caller still holds
 * it, because the handle's owner may free the block the moment it sees
 * COMPLETE, while the caller must still wake the joiner. JOIN_WAKER is
 * cleared: from here the completer owns join_waker. Release publishes the
 * final state to joiners, which read the word with acquire. Returns the
 * previous word. */
BLITZ_PRIVATE uint64_t blitz__state_complete(blitz__task *t, int cancelled, int *dropped_ref) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        BLITZ_ASSERT(blitz__lifecycle(s) == BLITZ__LC_RUNNING);
        uint64_t next = (s & ~(BLITZ__LC_MASK | BLITZ__TASK_NOTIFIED | BLITZ__TASK_JOIN_WAKER)) |
                        BLITZ__LC_COMPLETE;
        if (cancelled)
            next |= BLITZ__TASK_OUTCOME_CANCELLED;
        int drop_now = !(s & BLITZ__TASK_JOIN_INTEREST);
        if (drop_now)
            next -= BLITZ__TASK_REF_ONE;
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQ_REL)) {
            *dropped_ref = drop_now;
            return s;
        }
    }
}

/* A cancel request. Sets CANCELLED; an IDLE unshielded task is taken to
 * RUNNING so that the caller completes it as cancelled right away. Returns 1
 * in that case. */
BLITZ_PRIVATE int blitz__state_cancel(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        uint64_t lc = blitz__lifecycle(s);
        if (lc == BLITZ__LC_COMPLETE || (s & BLITZ__TASK_CANCELLED))
            return 0;
        uint64_t next = s | BLITZ__TASK_CANCELLED;
        int claim = lc == BLITZ__LC_IDLE && blitz__shield(s) == 0;
        if (claim)
            next = (next & ~BLITZ__LC_MASK) | BLITZ__LC_RUNNING;
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQ_REL))
            return claim;
    }
}

/* Any unfinished task -> RUNNING + CANCELLED for the shutdown sweep, which
 * runs when no thread polls tasks of the runtime any more. Returns 1 when the
 * caller now owns the task (it was not complete and the block is live). */
BLITZ_PRIVATE int blitz__state_claim_for_shutdown(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    for (;;) {
        if (s == 0 || blitz__lifecycle(s) == BLITZ__LC_COMPLETE)
            return 0;
        BLITZ_ASSERT(blitz__lifecycle(s) != BLITZ__LC_RUNNING);
        uint64_t next = (s & ~BLITZ__LC_MASK) | BLITZ__LC_RUNNING | BLITZ__TASK_CANCELLED;
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQ_REL))
            return 1;
    }
}

/* Raise (+1) or lower (-1) the shield of the running task. */
BLITZ_PRIVATE int blitz__state_shield(blitz__task *t, int delta) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        uint64_t depth = blitz__shield(s);
        if ((delta > 0 && depth == 255) || (delta < 0 && depth == 0))
            return BLITZ_ERANGE;
        uint64_t next = delta > 0 ? s + BLITZ__TASK_SHIELD_ONE : s - BLITZ__TASK_SHIELD_ONE;
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__RELAXED))
            return BLITZ_OK;
    }
}

/* A new reference (waker clone). Relaxed: the caller already holds one, so
 * the block cannot go away meanwhile (the Arc argument). */
BLITZ_PRIVATE void blitz__task_ref(blitz__task *t) {
    uint64_t prev = blitz__u64_fetch_add(&t->state, BLITZ__TASK_REF_ONE, BLITZ__RELAXED);
    BLITZ_ASSERT(blitz__refs(prev) < BLITZ__REF_MAX);
    (void)prev;
}

/* Drops a reference; frees the block on the last one. Acq_rel: this
 * thread's uses of the task happen before the free, which the last
 * decrement's acquire orders after everyone else's. */
BLITZ_PRIVATE void blitz__task_unref(blitz__task *t) {
    uint64_t prev = blitz__u64_fetch_sub(&t->state, BLITZ__TASK_REF_ONE, BLITZ__ACQ_REL);
    BLITZ_ASSERT(blitz__refs(prev) >= 1);
    if (blitz__refs(prev) == 1)
        blitz__task_free(t);
}

static inline int blitz__state_is_complete(uint64_t s) {
    return blitz__lifecycle(s) == BLITZ__LC_COMPLETE;
}
/* ====[ END src/task_state.c ]============================================= */
/* ====[ BEGIN src/task_alloc.c ]=========================================== */
/* >>task_alloc */
/* Task blocks: size-classed slabs in 64 KiB-aligned chunks.
 *
 * Why: a task is one block (header + state), spawned and freed at high rates
 * from every thread. Per-worker free lists make steady-state spawn free of
 * malloc and of locks; the chunk header at the 64 KiB boundary below a block
 * names the runtime, so the task header needs no runtime pointer; and the
 * runtime can walk every live block at shutdown (a free block's state word
 * is zero) instead of keeping an owned-task list in every task.
 *
 * Blocks start at an address that is 8 mod 16, so the state after the
 * 40-byte header is 16-byte aligned. States too big for the largest class get
 * a chunk of their own. Caches: one per worker and one for the
 * current-thread driver (no locking: only their thread touches them), and a
 * shared one behind alloc_lock for every other thread. Free blocks travel in
 * batches of BLITZ__FREE_BATCH: a cache keeps an active list and at most
 * one full batch; a second full batch goes to the runtime's spare batches,
 * where a cache that runs dry takes one. Every move is O(1) (no walking of
 * cold blocks), and memory freed on one worker is reused by the others. */
/* internal.h already included */

static const uint32_t blitz__class_size[BLITZ__NUM_CLASSES] = {
    48,  64,  80,   96,   112,  128,  160,  192,  224,  256,  320,  384,  448,  512,  640,
    768, 896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192};

/* First block offset: the smallest offset past the chunk header that is
 * 8 mod 16. */
#define BLITZ__FIRST_BLOCK ((sizeof(blitz__chunk) + 8 + 15) / 16 * 16 - 8)
#define BLITZ__FREE_BATCH  64u

/* A free block's header is unused: a batch's first block links to the next
 * batch through join_waker.data. */
static inline blitz__task *blitz__batch_next(blitz__task *first) {
    return (blitz__task *)(uintptr_t)first->join_waker.data;
}
static inline void blitz__batch_set_next(blitz__task *first, blitz__task *next) {
    first->join_waker.data = next;
}

static inline blitz__chunk *blitz__chunk_of(const void *block) {
    return (blitz__chunk *)((uintptr_t)block & ~(uintptr_t)(BLITZ__CHUNK_SIZE - 1));
}

static inline blitz_runtime *blitz__task_runtime(const blitz__task *t) {
    return blitz__chunk_of(t)->rt;
}

/* Bytes of the block holding `t` (for the drop pointer at its end). */
static inline size_t blitz__block_size(const blitz__task *t) {
    return blitz__chunk_of(t)->block_size;
}

BLITZ_PRIVATE uint32_t blitz__size_class(size_t need) {
    for (uint32_t c = 0; c < BLITZ__NUM_CLASSES; c++)
        if (need <= blitz__class_size[c])
            return c;
    return BLITZ__CLASS_LARGE;
}

/* The cache and counters this thread may use without a lock for runtime
 * `rt` (a worker's, or the current-thread driver's); NULL for any other
 * thread, which uses the shared cache under alloc_lock and the shared
 * counters. One thread-local lookup serves both. */
static blitz__block_cache *blitz__local_owner(blitz_runtime *rt, blitz__worker_counters **k) {
    blitz__context *c = blitz__context_get();
    *k = NULL;
    if (!c || c->rt != rt)
        return NULL;
    if (c->worker) {
        *k = &c->worker->counters;
        return &c->worker->cache;
    }
    if (c->ct_driver) {
        *k = &rt->ct->counters;
        return &rt->ct->cache;
    }
    return NULL;
}

/* Adds a chunk of class `c` to the runtime's list. Caller holds nothing. */
static blitz__chunk *blitz__chunk_new(blitz_runtime *rt, uint32_t c) {
    void *raw;
    blitz__chunk *ch =
        (blitz__chunk *)blitz__alloc_aligned(BLITZ__CHUNK_SIZE, BLITZ__CHUNK_SIZE, &raw);
    if (!ch)
        return NULL;
    ch->rt = rt;
    ch->raw = raw;
    ch->block_size = blitz__class_size[c];
    ch->class_index = c;
    ch->capacity = (uint32_t)((BLITZ__CHUNK_SIZE - BLITZ__FIRST_BLOCK) / ch->block_size);
    ch->carved = 0;
    blitz__mutex_lock(&rt->alloc_lock);
    ch->next = rt->chunks;
    rt->chunks = ch;
    blitz__mutex_unlock(&rt->alloc_lock);
    return ch;
}

static inline blitz__task *blitz__chunk_block(blitz__chunk *ch, uint32_t i) {
    return (blitz__task *)((char *)ch + BLITZ__FIRST_BLOCK + (size_t)i * ch->block_size);
}

/* Takes a block of class c from `cache`: its active list, its held-back
 * batch, a spare batch of the runtime, or a fresh carve. `locked`: the
 * caller holds alloc_lock (and `cache` is the shared one). */
static blitz__task *blitz__cache_take(blitz_runtime *rt, blitz__block_cache *cache, uint32_t c,
                                      int locked) {
    if (!cache->active[c]) {
        if (cache->full[c]) {
            cache->active[c] = cache->full[c];
            cache->full[c] = NULL;
        } else if (blitz__ptr_load(&rt->spare_batches[c], BLITZ__RELAXED)) {
            /* The unlocked peek above only saves a lock when there is
             * nothing; the list itself is read and written under it. */
            if (!locked)
                blitz__mutex_lock(&rt->alloc_lock);
            blitz__task *b = (blitz__task *)blitz__ptr_load(&rt->spare_batches[c], BLITZ__RELAXED);
            if (b)
                blitz__ptr_store(&rt->spare_batches[c], blitz__batch_next(b), BLITZ__RELAXED);
            if (!locked)
                blitz__mutex_unlock(&rt->alloc_lock);
            cache->active[c] = b;
        }
        if (cache->active[c])
            cache->active_count[c] = BLITZ__FREE_BATCH;
    }
    blitz__task *t = cache->active[c];
    if (t) {
        cache->active[c] = t->next;
        cache->active_count[c]--;
        return t;
    }
    blitz__chunk *ch = cache->carving[c];
    if (!ch || ch->carved == ch->capacity) {
        if (locked)
            blitz__mutex_unlock(&rt->alloc_lock);
        ch = blitz__chunk_new(rt, c);
        if (locked)
            blitz__mutex_lock(&rt->alloc_lock);
        if (!ch)
            return NULL;
        /* With the lock dropped another thread may have installed a chunk;
         * the older one is full or nearly so and stays on the list. */
        cache->carving[c] = ch;
    }
    return blitz__chunk_block(ch, ch->carved++);
}

/* Puts a free block into `cache`; a second full batch goes to the spares.
 * `locked` as for blitz__cache_take. */
static void blitz__cache_put(blitz_runtime *rt, blitz__block_cache *cache, uint32_t c,
                             blitz__task *t, int locked) {
    t->next = cache->active[c];
    cache->active[c] = t;
    if (++cache->active_count[c] < BLITZ__FREE_BATCH)
        return;
    blitz__task *spill = cache->full[c];
    cache->full[c] = cache->active[c];
    cache->active[c] = NULL;
    cache->active_count[c] = 0;
    if (spill) {
        if (!locked)
            blitz__mutex_lock(&rt->alloc_lock);
        blitz__batch_set_next(
            spill, (blitz__task *)blitz__ptr_load(&rt->spare_batches[c], BLITZ__RELAXED));
        blitz__ptr_store(&rt->spare_batches[c], spill, BLITZ__RELAXED);
        if (!locked)
            blitz__mutex_unlock(&rt->alloc_lock);
    }
}

/* A block for a task whose header + state (+ drop pointer) need `need`
 * bytes; NULL when out of memory. Counts the spawn. */
BLITZ_PRIVATE blitz__task *blitz__block_alloc(blitz_runtime *rt, size_t need) {
    uint32_t c = blitz__size_class(need);
    blitz__task *t;
    blitz__worker_counters *k;
    blitz__block_cache *cache = blitz__local_owner(rt, &k);
    if (c == BLITZ__CLASS_LARGE) {
        size_t total = BLITZ__FIRST_BLOCK + ((need + 15) & ~(size_t)15);
        void *raw;
        blitz__chunk *ch = (blitz__chunk *)blitz__alloc_aligned(
            total < BLITZ__CHUNK_SIZE ? BLITZ__CHUNK_SIZE : total, BLITZ__CHUNK_SIZE, &raw);
        if (!ch)
            return NULL;
        ch->rt = rt;
        ch->raw = raw;
        ch->block_size = (uint32_t)(total - BLITZ__FIRST_BLOCK);
        ch->class_index = BLITZ__CLASS_LARGE;
        ch->capacity = 1;
        ch->carved = 1;
        blitz__mutex_lock(&rt->alloc_lock);
        ch->next = rt->chunks;
        rt->chunks = ch;
        blitz__mutex_unlock(&rt->alloc_lock);
        t = blitz__chunk_block(ch, 0);
    } else {
        if (cache) {
            t = blitz__cache_take(rt, cache, c, 0);
        } else {
            blitz__mutex_lock(&rt->alloc_lock);
            t = blitz__cache_take(rt, &rt->shared_cache, c, 1);
            blitz__mutex_unlock(&rt->alloc_lock);
        }
        if (!t)
            return NULL;
    }
    if (k) {
        BLITZ__STAT(blitz__u64_bump(&k->spawned, 1));
    } else {
        BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.spawned, 1, BLITZ__RELAXED));
    }
    return t;
}

/* Counts a freed block. It is the freeing thread's last access to the
 * runtime: blitz_runtime_free waits for the count (acquire, pairing with the
 * release here) before it frees the memory this thread was using. */
static void blitz__count_freed(blitz_runtime *rt, blitz__worker_counters *k) {
    if (k)
        blitz__u64_bump(&k->freed, 1);
    else
        blitz__u64_fetch_add(&rt->remote_counters.freed, 1, BLITZ__RELEASE);
}

/* Returns the block of a task whose state word has already been zeroed. */
BLITZ_PRIVATE void blitz__block_release(blitz__task *t) {
    blitz__chunk *ch = blitz__chunk_of(t);
    blitz_runtime *rt = ch->rt;
    blitz__worker_counters *k;
    blitz__block_cache *cache = blitz__local_owner(rt, &k);
    uint32_t c = ch->class_index;
    if (c == BLITZ__CLASS_LARGE) {
        /* During the shutdown sweep the chunk list is being walked: leave the
         * (now free) chunk on it for blitz__block_free_all. */
        if (!blitz__u32_load(&rt->sweeping, BLITZ__ACQUIRE)) {
            blitz__mutex_lock(&rt->alloc_lock);
            blitz__chunk **p = &rt->chunks;
            while (*p != ch)
                p = &(*p)->next;
            *p = ch->next;
            blitz__mutex_unlock(&rt->alloc_lock);
            blitz__free(ch->raw);
        }
    } else {
        if (cache) {
            blitz__cache_put(rt, cache, c, t, 0);
        } else {
            blitz__mutex_lock(&rt->alloc_lock);
            blitz__cache_put(rt, &rt->shared_cache, c, t, 1);
            blitz__mutex_unlock(&rt->alloc_lock);
        }
    }
    blitz__count_freed(rt, k);
}

/* Calls fn on every live block of the runtime. Only for shutdown and free:
 * no thread may be carving from a private cache meanwhile. Blocks carved
 * after the walk started are not visited. */
BLITZ_PRIVATE void blitz__block_walk(blitz_runtime *rt, void (*fn)(blitz__task *t)) {
    blitz__mutex_lock(&rt->alloc_lock);
    blitz__chunk *first = rt->chunks;
    blitz__mutex_unlock(&rt->alloc_lock);
    /* Chunks are only ever prepended (and large ones removed when their task
     * is freed, which fn may do), so read each chunk's successor before fn. */
    for (blitz__chunk *ch = first, *next; ch; ch = next) {
        blitz__mutex_lock(&rt->alloc_lock);
        next = ch->next;
        uint32_t carved = ch->carved;
        blitz__mutex_unlock(&rt->alloc_lock);
        for (uint32_t i = 0; i < carved; i++) {
            blitz__task *t = blitz__chunk_block(ch, i);
            if (blitz__u64_load(&t->state, BLITZ__ACQUIRE) != 0)
                fn(t);
        }
    }
}

/* Frees every chunk (runtime teardown). */
BLITZ_PRIVATE void blitz__block_free_all(blitz_runtime *rt) {
    blitz__chunk *ch = rt->chunks;
    rt->chunks = NULL;
    while (ch) {
        blitz__chunk *next = ch->next;
        blitz__free(ch->raw);
        ch = next;
    }
}
/* ====[ END src/task_alloc.c ]============================================= */
/* ====[ BEGIN src/global_queue.c ]========================================= */
/* >>global_queue */
/* The global injection queue (seed 000): a mutex-protected intrusive list
 * of tasks with an atomic length, so that "is it empty?" costs no lock. It
 * takes spawns and wakes from threads that are not workers, local-queue
 * overflow, and is closed at shutdown (pushes then fail). */
/* internal.h already included */

BLITZ_PRIVATE int blitz__global_queue_init(blitz__global_queue *q) {
    q->head = q->tail = NULL;
    q->closed = 0;
    blitz__u64_store(&q->len, 0, BLITZ__RELAXED);
    return blitz__mutex_init(&q->lock);
}

BLITZ_PRIVATE void blitz__global_queue_destroy(blitz__global_queue *q) {
    blitz__mutex_destroy(&q->lock);
}

/* Length hint. Relaxed: callers that need ordering against their own
 * earlier store (the parking protocol) put a seq_cst fence before it. */
BLITZ_PRIVATE uint64_t blitz__global_queue_len(blitz__global_queue *q) {
    return blitz__u64_load(&q->len, BLITZ__RELAXED);
}

/* Appends the chain first..last (n tasks, last->next == NULL). Returns
 * BLITZ_ESHUTDOWN when the queue is closed (nothing is queued then). */
BLITZ_PRIVATE int blitz__global_queue_push_batch(blitz__global_queue *q, blitz__task *first,
                                                 blitz__task *last, uint64_t n) {
    blitz__mutex_lock(&q->lock);
    if (q->closed) {
        blitz__mutex_unlock(&q->lock);
        return BLITZ_ESHUTDOWN;
    }
    last->next = NULL;
    if (q->tail)
        q->tail->next = first;
    else
        q->head = first;
    q->tail = last;
    /* Written only under the lock, read anywhere. */
    blitz__u64_store(&q->len, blitz__u64_load(&q->len, BLITZ__RELAXED) + n, BLITZ__RELAXED);
    blitz__mutex_unlock(&q->lock);
    return BLITZ_OK;
}

BLITZ_PRIVATE int blitz__global_queue_push(blitz__global_queue *q, blitz__task *t) {
    return blitz__global_queue_push_batch(q, t, t, 1);
}

/* Takes up to `max` tasks into out[]; returns how many. */
BLITZ_PRIVATE uint32_t blitz__global_queue_pop_batch(blitz__global_queue *q, blitz__task **out,
                                                     uint32_t max) {
    if (blitz__u64_load(&q->len, BLITZ__RELAXED) == 0)
        return 0;
    uint32_t n = 0;
    blitz__mutex_lock(&q->lock);
    while (n < max && q->head) {
        blitz__task *t = q->head;
        q->head = t->next;
        out[n++] = t;
    }
    if (!q->head)
        q->tail = NULL;
    blitz__u64_store(&q->len, blitz__u64_load(&q->len, BLITZ__RELAXED) - n, BLITZ__RELAXED);
    blitz__mutex_unlock(&q->lock);
    return n;
}

/* Takes the whole list (current-thread driver, shutdown). */
BLITZ_PRIVATE blitz__task *blitz__global_queue_take_all(blitz__global_queue *q) {
    if (blitz__u64_load(&q->len, BLITZ__RELAXED) == 0)
        return NULL;
    blitz__mutex_lock(&q->lock);
    blitz__task *h = q->head;
    q->head = q->tail = NULL;
    blitz__u64_store(&q->len, 0, BLITZ__RELAXED);
    blitz__mutex_unlock(&q->lock);
    return h;
}

BLITZ_PRIVATE void blitz__global_queue_close(blitz__global_queue *q) {
    blitz__mutex_lock(&q->lock);
    q->closed = 1;
    blitz__mutex_unlock(&q->lock);
}
/* ====[ END src/global_queue.c ]=========================================== */
/* ====[ BEGIN src/local_queue.c ]========================================== */
/* >>local_queue */
/* The per-worker run queue (seed 000 "WorkStealQueue", Tokio's queue.rs):
 * a fixed ring of BLITZ_LOCAL_QUEUE_CAPACITY task pointers with one producer
 * (the owning worker) and many consumers (the owner's pops and other
 * workers' steals).
 *
 * Positions are 16-bit and wrap. `head` packs two of them: `real` (the next
 * slot to consume) in the low half and `steal` in the high half. They differ
 * only while a stealer copies the slots [steal, real) it has claimed; the
 * owner must not overwrite those, so the free space is measured from
 * `steal`. Steal protocol, three phases:
 *   1. claim:   CAS head (steal, real) -> (steal, real + n), n = half
 *   2. copy:    the claimed slots into the stealer's own ring
 *   3. release: CAS head (steal, r) -> (r, r) for the current real r (the
 *               owner may have popped meanwhile: retry until it sticks)
 * A second stealer sees steal != real and backs off, so at most one steal
 * per victim is in flight. When the ring is full, the owner claims half of
 * it the same way and moves it, with the new task, to the global queue in
 * one batch; while a steal is in flight it pushes just the task there. */
/* internal.h already included */

#define BLITZ__LQ_MASK ((uint16_t)(BLITZ_LOCAL_QUEUE_CAPACITY - 1))
#define BLITZ__LQ_HALF ((uint16_t)(BLITZ_LOCAL_QUEUE_CAPACITY / 2))

static inline uint32_t blitz__lq_pack(uint16_t steal, uint16_t real) {
    return ((uint32_t)steal << 16) | real;
}
static inline uint16_t blitz__lq_steal(uint32_t head) {
    return (uint16_t)(head >> 16);
}
static inline uint16_t blitz__lq_real(uint32_t head) {
    return (uint16_t)head;
}

BLITZ_PRIVATE void blitz__local_queue_init(blitz__local_queue *q) {
    blitz__u32_store(&q->head, 0, BLITZ__RELAXED);
    blitz__u32_store(&q->tail, 0, BLITZ__RELAXED);
    for (uint32_t i = 0; i < BLITZ_LOCAL_QUEUE_CAPACITY; i++)
        blitz__ptr_store(&q->buffer[i], NULL, BLITZ__RELAXED);
}

/* Tasks in the queue, as a hint for any thread. */
BLITZ_PRIVATE uint32_t blitz__local_queue_len(blitz__local_queue *q) {
    uint32_t head = blitz__u32_load(&q->head, BLITZ__ACQUIRE);
    uint16_t tail = (uint16_t)blitz__u32_load(&q->tail, BLITZ__ACQUIRE);
    return (uint16_t)(tail - blitz__lq_real(head));
}

/* Owner only: the ring is full; try to move half of it plus `t` to the
 * global queue. Returns 0 when a stealer got in first (the caller retries). */
static int blitz__local_queue_overflow(blitz__local_queue *q, blitz__task *t, uint16_t real,
                                       blitz_runtime *rt, blitz__worker_counters *k) {
    uint32_t prev = blitz__lq_pack(real, real);
    uint32_t next =
        blitz__lq_pack((uint16_t)(real + BLITZ__LQ_HALF), (uint16_t)(real + BLITZ__LQ_HALF));
    /* Release is not needed to publish the slots (the owner wrote them);
     * relaxed would do, but acq_rel keeps this CAS ordered like every other
     * head update for the reader of this code. */
    if (!blitz__u32_cas(&q->head, &prev, next, BLITZ__ACQ_REL))
        return 0;
    blitz__task *first =
        (blitz__task *)blitz__ptr_load(&q->buffer[real & BLITZ__LQ_MASK], BLITZ__RELAXED);
    blitz__task *last = first;
    for (uint16_t i = 1; i < BLITZ__LQ_HALF; i++) {
        blitz__task *n = (blitz__task *)blitz__ptr_load(
            &q->buffer[(uint16_t)(real + i) & BLITZ__LQ_MASK], BLITZ__RELAXED);
        last->next = n;
        last = n;
    }
    last->next = t;
    t->next = NULL;
    BLITZ__STAT(blitz__u64_bump(&k->overflows, 1));
    if (blitz__global_queue_push_batch(&rt->global, first, t, (uint64_t)BLITZ__LQ_HALF + 1) != 0) {
        /* Closed by shutdown: the tasks stay SCHEDULED and the shutdown
         * sweep completes them as cancelled. */
    }
    return 1;
}

/* Owner only: appends `t`; spills to the global queue when full. */
BLITZ_PRIVATE void blitz__local_queue_push(blitz__local_queue *q, blitz__task *t, blitz_runtime *rt,
                                           blitz__worker_counters *k) {
    for (;;) {
        /* Acquire pairs with a stealer's release in phase 3: once we see
         * `steal` advanced, its copy of those slots is done. */
        uint32_t head = blitz__u32_load(&q->head, BLITZ__ACQUIRE);
        uint16_t steal = blitz__lq_steal(head), real = blitz__lq_real(head);
        uint16_t tail = (uint16_t)blitz__u32_load(&q->tail, BLITZ__RELAXED);
        if ((uint16_t)(tail - steal) < (uint16_t)BLITZ_LOCAL_QUEUE_CAPACITY) {
            blitz__ptr_store(&q->buffer[tail & BLITZ__LQ_MASK], t, BLITZ__RELAXED);
            /* Release: a consumer that acquires the new tail sees the slot. */
            blitz__u32_store(&q->tail, (uint16_t)(tail + 1), BLITZ__RELEASE);
            return;
        }
        if (steal != real) {
            /* A steal is copying out of the full ring: it will free room, but
             * do not wait for it. */
            t->next = NULL;
            (void)blitz__global_queue_push_batch(&rt->global, t, t, 1);
            return;
        }
        if (blitz__local_queue_overflow(q, t, real, rt, k))
            return;
    }
}

/* Owner only: appends `t` if the ring has room; returns 0 when full. */
BLITZ_PRIVATE int blitz__local_queue_try_push(blitz__local_queue *q, blitz__task *t) {
    uint32_t head = blitz__u32_load(&q->head, BLITZ__ACQUIRE);
    uint16_t tail = (uint16_t)blitz__u32_load(&q->tail, BLITZ__RELAXED);
    if ((uint16_t)(tail - blitz__lq_steal(head)) >= (uint16_t)BLITZ_LOCAL_QUEUE_CAPACITY)
        return 0;
    blitz__ptr_store(&q->buffer[tail & BLITZ__LQ_MASK], t, BLITZ__RELAXED);
    blitz__u32_store(&q->tail, (uint16_t)(tail + 1), BLITZ__RELEASE);
    return 1;
}

/* Owner only: takes the oldest task, or NULL. */
BLITZ_PRIVATE blitz__task *blitz__local_queue_pop(blitz__local_queue *q) {
    uint32_t head = blitz__u32_load(&q->head, BLITZ__ACQUIRE);
    for (;;) {
        uint16_t steal = blitz__lq_steal(head), real = blitz__lq_real(head);
        uint16_t tail = (uint16_t)blitz__u32_load(&q->tail, BLITZ__RELAXED);
        if (real == tail)
            return NULL;
        uint16_t next_real = (uint16_t)(real + 1);
        /* With no steal in flight both halves move together. */
        uint32_t next =
            steal == real ? blitz__lq_pack(next_real, next_real) : blitz__lq_pack(steal, next_real);
        /* Acq_rel: the CAS is what decides between the owner and a stealer
         * for this slot; the owner wrote the slot itself, so the acquire
         * only matters for the stealer's earlier release of `steal`. */
        if (blitz__u32_cas_weak(&q->head, &head, next, BLITZ__ACQ_REL))
            return (blitz__task *)blitz__ptr_load(&q->buffer[real & BLITZ__LQ_MASK],
                                                  BLITZ__RELAXED);
    }
}

/* Phases 1-3 of a steal from `src` into `dst` starting at dst position
 * dst_tail. Returns the number of tasks copied (0: nothing or contended). */
static uint16_t blitz__local_queue_steal_phases(blitz__local_queue *src, blitz__local_queue *dst,
                                                uint16_t dst_tail) {
    uint32_t prev = blitz__u32_load(&src->head, BLITZ__ACQUIRE), next;
    uint16_t n, first;
    for (;;) {
        uint16_t steal = blitz__lq_steal(prev), real = blitz__lq_real(prev);
        if (steal != real)
            return 0; /* another stealer is copying */
        /* Acquire pairs with the owner's release store of tail: the slots
         * below it are written. */
        uint16_t tail = (uint16_t)blitz__u32_load(&src->tail, BLITZ__ACQUIRE);
        n = (uint16_t)(tail - real);
        n = (uint16_t)(n - n / 2);
        if (n == 0)
            return 0;
        /* The claim (phase 1). */
        next = blitz__lq_pack(steal, (uint16_t)(real + n));
        if (blitz__u32_cas_weak(&src->head, &prev, next, BLITZ__ACQ_REL)) {
            first = real;
            break;
        }
    }
    BLITZ_ASSERT(n <= BLITZ__LQ_HALF);
    /* The copy (phase 2): the owner will not reuse these slots until
     * `steal` moves past them. */
    for (uint16_t i = 0; i < n; i++) {
        void *t =
            blitz__ptr_load(&src->buffer[(uint16_t)(first + i) & BLITZ__LQ_MASK], BLITZ__RELAXED);
        blitz__ptr_store(&dst->buffer[(uint16_t)(dst_tail + i) & BLITZ__LQ_MASK], t,
                         BLITZ__RELAXED);
    }
    /* The release (phase 3): steal catches up with real. Acq_rel: the
     * release half tells the owner (its acquire load of head in push) that
     * our reads of the slots are done. */
    prev = next;
    for (;;) {
        uint16_t real = blitz__lq_real(prev);
        BLITZ_ASSERT(blitz__lq_steal(prev) == first);
        if (blitz__u32_cas_weak(&src->head, &prev, blitz__lq_pack(real, real), BLITZ__ACQ_REL))
            return n;
    }
}

/* Owner of `dst` only: steals half of `src` into `dst` and returns one of
 * the stolen tasks to run now, or NULL. */
BLITZ_PRIVATE blitz__task *
blitz__local_queue_steal_into(blitz__local_queue *src, blitz__local_queue *dst, uint32_t *stolen) {
    uint16_t dst_tail = (uint16_t)blitz__u32_load(&dst->tail, BLITZ__RELAXED);
    uint16_t dst_steal = blitz__lq_steal(blitz__u32_load(&dst->head, BLITZ__ACQUIRE));
    /* Only steal when half the ring is free, so the copy cannot overflow. */
    if ((uint16_t)(dst_tail - dst_steal) > BLITZ__LQ_HALF)
        return NULL;
    uint16_t n = blitz__local_queue_steal_phases(src, dst, dst_tail);
    *stolen = n;
    if (n == 0)
        return NULL;
    n--;
    blitz__task *ret = (blitz__task *)blitz__ptr_load(
        &dst->buffer[(uint16_t)(dst_tail + n) & BLITZ__LQ_MASK], BLITZ__RELAXED);
    if (n)
        blitz__u32_store(&dst->tail, (uint16_t)(dst_tail + n), BLITZ__RELEASE);
    return ret;
}
/* ====[ END src/local_queue.c ]============================================ */
/* ====[ BEGIN src/timer_wheel.c ]========================================== */
/* >>timer_wheel */
/* The hierarchical timer wheel (seed 002 "Timer Wheel", Tokio's
 * time/wheel): 5 levels of 64 slots, a level-l slot spanning 64^l ticks,
 * one occupancy word per level, an overflow list beyond 64^5 ticks, and a
 * due list for deadlines that had already passed when inserted.
 *
 * Placement. An entry with deadline d goes to the level of the highest bit
 * in which d differs from `elapsed` (six bits per level: Tokio's level_for),
 * in slot (d >> 6l) & 63. So d and elapsed agree on every bit above level l,
 * and d's slot is after elapsed's own slot at that level. A difference at
 * bit 30 or above means the overflow list.
 *
 * Invariants, relative to the current `elapsed`:
 *   I1. an entry at level l slot s has (d >> 6(l+1)) == (elapsed >> 6(l+1))
 *       and s > (elapsed >> 6l) & 63: the slot starts after elapsed and
 *       within elapsed's current 64^(l+1)-tick span. So a lower non-empty
 *       level always holds an earlier slot start than any higher level, and
 *       the slots of a level never wrap around.
 *   I2. an overflow entry has d >> 30 > elapsed >> 30, and overflow_start
 *       (a lower bound of their 2^30-aligned starts) is > elapsed.
 *   I3. occupied bit (l, s) is set iff slots[l][s] is non-empty; count is
 *       the number of entries in slots, overflow and due.
 *
 * Advancing. elapsed only moves to the start of the earliest non-empty slot
 * (or overflow start) or to a tick before all of them, which keeps I1 and
 * I2. advance(now) repeatedly takes the earliest slot; if it starts at or
 * before now, elapsed moves to its start, its entries with deadline <= now
 * fire, and the rest are re-inserted relative to the new elapsed: they land
 * at a lower level, in a more precise slot (the cascade). Entries never move
 * up, so each is handled at most once per level (and the overflow list is
 * walked at most twice per advance): a jump of any size costs the entries
 * it touches, never the ticks it crosses. Empty stretches are skipped by
 * the occupancy words (count-trailing-zeros after rotating to the current
 * slot). All arithmetic stays within aligned spans below 2^64, so deadlines
 * up to UINT64_MAX are fine. */
/* internal.h already included */

#define BLITZ__WHEEL_SLOT_MASK ((uint64_t)BLITZ__WHEEL_SLOTS - 1)

BLITZ_PRIVATE void blitz__timer_entry_init(blitz__timer_entry *e) {
    e->deadline = 0;
    e->next = e->prev = NULL;
    e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
}

BLITZ_PRIVATE void blitz__wheel_init(blitz__timer_wheel *w, uint64_t now_tick) {
    memset(w, 0, sizeof *w);
    w->elapsed = now_tick;
    w->due_min = UINT64_MAX;
    w->overflow_start = UINT64_MAX;
}

BLITZ_PRIVATE size_t blitz__wheel_count(const blitz__timer_wheel *w) {
    return w->count;
}

static inline uint64_t blitz__rotr64(uint64_t x, unsigned r) {
    return (x >> r) | (x << ((64u - r) & 63u));
}

/* Tokio's level_for: the level of the highest bit where elapsed and when
 * differ; the low six bits are or-ed in so the answer is 0, not undefined,
 * when they are equal. >= BLITZ__WHEEL_LEVELS means the overflow. */
static inline unsigned blitz__wheel_level_for(uint64_t elapsed, uint64_t when) {
    uint64_t masked = (elapsed ^ when) | BLITZ__WHEEL_SLOT_MASK;
    unsigned significant = 63u - (unsigned)__builtin_clzll(masked);
    return significant / BLITZ__WHEEL_SLOT_BITS;
}

static inline void blitz__wheel_push(blitz__timer_entry **head, blitz__timer_entry *e) {
    e->prev = NULL;
    e->next = *head;
    if (*head)
        (*head)->prev = e;
    *head = e;
}

/* Puts e where its deadline belongs relative to elapsed. Leaves count alone
 * (the callers account for it). */
static void blitz__wheel_place(blitz__timer_wheel *w, blitz__timer_entry *e) {
    uint64_t d = e->deadline;
    if (d <= w->elapsed) {
        e->where = BLITZ__WHEEL_WHERE_DUE;
        blitz__wheel_push(&w->due, e);
        if (d < w->due_min)
            w->due_min = d;
        return;
    }
    unsigned level = blitz__wheel_level_for(w->elapsed, d);
    if (level >= BLITZ__WHEEL_LEVELS) {
        uint64_t start = d & ~(((uint64_t)1 << BLITZ__WHEEL_SPAN_BITS) - 1);
        e->where = BLITZ__WHEEL_WHERE_OVERFLOW;
        blitz__wheel_push(&w->overflow, e);
        if (start < w->overflow_start)
            w->overflow_start = start;
        return;
    }
    unsigned slot = (unsigned)(d >> (level * BLITZ__WHEEL_SLOT_BITS)) & BLITZ__WHEEL_SLOT_MASK;
    e->where = level * BLITZ__WHEEL_SLOTS + slot;
    blitz__wheel_push(&w->slots[level][slot], e);
    w->occupied[level] |= (uint64_t)1 << slot;
}

BLITZ_PRIVATE int blitz__wheel_remove(blitz__timer_wheel *w, blitz__timer_entry *e) {
    uint32_t where = e->where;
    if (where == BLITZ__WHEEL_NOT_IN_WHEEL)
        return 0;
    blitz__timer_entry **head;
    if (where == BLITZ__WHEEL_WHERE_DUE)
        head = &w->due;
    else if (where == BLITZ__WHEEL_WHERE_OVERFLOW)
        head = &w->overflow;
    else {
        BLITZ_ASSERT(where < BLITZ__WHEEL_WHERE_OVERFLOW);
        head = &w->slots[where / BLITZ__WHEEL_SLOTS][where % BLITZ__WHEEL_SLOTS];
    }
    if (e->prev)
        e->prev->next = e->next;
    else
        *head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->next = e->prev = NULL;
    e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
    w->count--;
    if (!*head) {
        /* The cached minimums are only lower bounds, but an empty list must
         * not keep one alive: next_expiry would report a phantom timer. */
        if (where == BLITZ__WHEEL_WHERE_DUE)
            w->due_min = UINT64_MAX;
        else if (where == BLITZ__WHEEL_WHERE_OVERFLOW)
            w->overflow_start = UINT64_MAX;
        else
            w->occupied[where / BLITZ__WHEEL_SLOTS] &=
                ~((uint64_t)1 << (where % BLITZ__WHEEL_SLOTS));
    }
    return 1;
}

BLITZ_PRIVATE void blitz__wheel_insert(blitz__timer_wheel *w, blitz__timer_entry *e) {
    blitz__wheel_remove(w, e);
    blitz__wheel_place(w, e);
    w->count++;
}

/* The start of the earliest non-empty slot in the levels, with its level and
 * slot; 0 when the levels are empty. By I1 the lowest non-empty level holds
 * it, and within a level the next occupied slot after elapsed's own. */
static int blitz__wheel_next_slot(const blitz__timer_wheel *w, uint64_t *start, unsigned *level,
                                  unsigned *slot) {
    for (unsigned l = 0; l < BLITZ__WHEEL_LEVELS; l++) {
        uint64_t occ = w->occupied[l];
        if (!occ)
            continue;
        unsigned shift = l * BLITZ__WHEEL_SLOT_BITS;
        unsigned cur = (unsigned)(w->elapsed >> shift) & BLITZ__WHEEL_SLOT_MASK;
        unsigned s = cur + (unsigned)__builtin_ctzll(blitz__rotr64(occ, cur));
        /* I1: never elapsed's own slot, never wrapped past slot 63. */
        BLITZ_ASSERT(s > cur && s < BLITZ__WHEEL_SLOTS);
        uint64_t level_start = w->elapsed & ~(((uint64_t)BLITZ__WHEEL_SLOTS << shift) - 1);
        *start = level_start + ((uint64_t)s << shift);
        *level = l;
        *slot = s;
        return 1;
    }
    return 0;
}

BLITZ_PRIVATE uint64_t blitz__wheel_next_expiry(const blitz__timer_wheel *w) {
    uint64_t t = w->overflow_start; /* by I1 and I2, later than any slot */
    uint64_t start;
    unsigned level, slot;
    if (blitz__wheel_next_slot(w, &start, &level, &slot))
        t = start;
    return w->due_min < t ? w->due_min : t;
}

BLITZ_PRIVATE size_t blitz__wheel_advance(blitz__timer_wheel *w, uint64_t now_tick,
                                          blitz__timer_entry **out) {
    blitz__timer_entry *fired = NULL, *e, *next;
    size_t n = 0;
    if (now_tick < w->elapsed)
        now_tick = w->elapsed;
    for (e = w->due; e; e = next, n++) {
        next = e->next;
        e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
        blitz__wheel_push(&fired, e);
    }
    w->due = NULL;
    w->due_min = UINT64_MAX;
    for (;;) {
        uint64_t start;
        unsigned level, slot;
        blitz__timer_entry *list;
        if (blitz__wheel_next_slot(w, &start, &level, &slot)) {
            if (start > now_tick)
                break;
            list = w->slots[level][slot];
            w->slots[level][slot] = NULL;
            w->occupied[level] &= ~((uint64_t)1 << slot);
        } else if (w->overflow && w->overflow_start <= now_tick) {
            /* The levels are empty, so nothing is lost by jumping to the
             * overflow's start; entries that come within the levels' reach
             * of it are placed there, the rest stay (and set a fresh
             * lower bound). */
            start = w->overflow_start;
            list = w->overflow;
            w->overflow = NULL;
            w->overflow_start = UINT64_MAX;
        } else {
            break;
        }
        BLITZ_ASSERT(start >= w->elapsed);
        w->elapsed = start;
        for (e = list; e; e = next) {
            next = e->next;
            if (e->deadline <= now_tick) {
                /* Due by the end of this advance: no point cascading it. */
                e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
                blitz__wheel_push(&fired, e);
                n++;
            } else {
                /* deadline > now_tick >= elapsed: lands in a slot that
                 * starts after elapsed, at a lower level than before (or
                 * back in the overflow, further along). */
                blitz__wheel_place(w, e);
            }
        }
    }
    /* Every slot and the overflow start after now_tick: I1 and I2 hold. */
    w->elapsed = now_tick;
    w->count -= n;
    *out = fired;
    return n;
}
/* ====[ END src/timer_wheel.c ]============================================ */
/* ====[ BEGIN src/idle.c ]================================================= */
/* >>idle */
/* Idle workers (seed 000 "IdleState", "Last searcher must notify").
 *
 * parked_bitmap has bit i set while worker i is parked. Only worker i sets
 * its bit; the bit is cleared either by a notifier that claims the worker
 * (a CAS, so two notifiers never claim the same one) or by the worker itself
 * when it stops parking without being claimed (fetch_and, whose old value
 * tells it which happened). A claimed worker wakes up as a searcher: the
 * notifier counts it in num_searching before unparking it.
 *
 * Lost-wakeup argument (a store-buffer pattern, so both sides use seq_cst):
 *   producer: publish task (queue) ; fence ; read num_searching, bitmap
 *   parker:   set bit / decrement num_searching (seq_cst RMW) ; fence ;
 *             re-check every queue
 * At least one side sees the other's write: either the producer sees the
 * parker (and wakes it or a searcher), or the parker sees the task (and
 * does not sleep). */
/* internal.h already included */

BLITZ_PRIVATE void blitz__idle_init(blitz__idle *idle) {
    blitz__u32_store(&idle->num_searching, 0, BLITZ__RELAXED);
    blitz__u64_store(&idle->parked_bitmap, 0, BLITZ__RELAXED);
}

/* Searcher cap: at most half the workers steal at once (thundering herd). */
BLITZ_PRIVATE int blitz__idle_try_become_searcher(blitz_runtime *rt) {
    uint32_t n = blitz__u32_load(&rt->idle.num_searching, BLITZ__RELAXED);
    for (;;) {
        if (2 * n >= rt->num_workers)
            return 0;
        if (blitz__u32_cas_weak(&rt->idle.num_searching, &n, n + 1, BLITZ__SEQ_CST))
            return 1;
    }
}

/* Wakes one parked worker, as a searcher, unless someone already searches.
 * Called after making work visible to other workers. */
BLITZ_PRIVATE void blitz__idle_notify_parked(blitz_runtime *rt) {
    blitz__fence_seq_cst();
    if (blitz__u32_load(&rt->idle.num_searching, BLITZ__RELAXED) != 0)
        return;
    uint64_t bm = blitz__u64_load(&rt->idle.parked_bitmap, BLITZ__RELAXED);
    while (bm) {
        uint32_t i = (uint32_t)__builtin_ctzll(bm);
        if (blitz__u64_cas_weak(&rt->idle.parked_bitmap, &bm, bm & ~((uint64_t)1 << i),
                                BLITZ__ACQ_REL)) {
            blitz__u32_fetch_add(&rt->idle.num_searching, 1, BLITZ__SEQ_CST);
            blitz__parker_unpark(&rt->workers[i].parker);
            return;
        }
    }
}

/* A searcher found work. Returns 1 when it was the last one: then it must
 * wake another worker, because more work may be waiting (the chain that
 * keeps every queued task moving). */
BLITZ_PRIVATE int blitz__idle_transition_from_searching(blitz_runtime *rt) {
    return blitz__u32_fetch_sub(&rt->idle.num_searching, 1, BLITZ__SEQ_CST) == 1;
}

BLITZ_PRIVATE void blitz__idle_set_parked(blitz_runtime *rt, uint32_t index) {
    blitz__u64_fetch_or(&rt->idle.parked_bitmap, (uint64_t)1 << index, BLITZ__SEQ_CST);
}

/* Clears our own bit. Returns 1 when it was still set (nobody claimed us),
 * 0 when a notifier had claimed us (we are now counted as a searcher). */
BLITZ_PRIVATE int blitz__idle_unset_parked(blitz_runtime *rt, uint32_t index) {
    uint64_t bit = (uint64_t)1 << index;
    return (blitz__u64_fetch_and(&rt->idle.parked_bitmap, ~bit, BLITZ__ACQ_REL) & bit) != 0;
}

/* Wakes every parked worker (shutdown). */
BLITZ_PRIVATE void blitz__idle_unpark_all(blitz_runtime *rt) {
    for (uint32_t i = 0; i < rt->num_workers; i++)
        blitz__parker_unpark(&rt->workers[i].parker);
}
/* ====[ END src/idle.c ]=================================================== */
/* ====[ BEGIN src/task.c ]================================================= */
/* >>task */
/* The poll harness (run, complete, free), task wakers, and spawning.
 *
 * The seed's vtable {poll, drop, schedule, reschedule} maps onto C as:
 * poll = the user's poll function in the header, driven by blitz__task_run;
 * drop = blitz__task_free (the user's drop function, if any, then the block
 * goes back to its cache); schedule = blitz__task_schedule (a wake: the LIFO
 * slot when the waker runs on a worker of the task's runtime, else the
 * global queue); reschedule = blitz__task_reschedule (after NOTIFIED: the
 * back of the local queue; after a yield: the thread's deferred list, which
 * joins the queue at the end of the tick, so everything runnable, remote
 * tasks included, runs first, as Tokio defers yield_now). */
/* internal.h already included */

static inline void *blitz__task_state_ptr(blitz__task *t) {
    return (char *)t + BLITZ__TASK_HEADER_SIZE;
}

/* The hooks sit at the end of the block: the drop function last, the
 * cancel hook before it. */
static inline blitz_drop_fn *blitz__task_drop_slot(blitz__task *t) {
    return (blitz_drop_fn *)((char *)t + blitz__block_size(t) - sizeof(blitz_drop_fn));
}
static inline blitz_drop_fn *blitz__task_cancel_slot(blitz__task *t, uint64_t s) {
    size_t back = sizeof(blitz_drop_fn) * ((s & BLITZ__TASK_HAS_DROP) ? 2 : 1);
    return (blitz_drop_fn *)((char *)t + blitz__block_size(t) - back);
}

/* Last reference gone: run the drop function and recycle the block. */
BLITZ_PRIVATE void blitz__task_free(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (s & BLITZ__TASK_HAS_DROP)
        (*blitz__task_drop_slot(t))(blitz__task_state_ptr(t));
    blitz__u64_store(&t->state, 0, BLITZ__RELEASE);
    blitz__block_release(t);
}

/* Wakes threads sleeping on the runtime's completion word. The bump is
 * seq_cst and so is a sleeper's announcement (blitz__sleep_on_completion):
 * either the sleeper's futex compare sees the new value, or this side sees
 * the sleeper and makes the system call; a wake nobody needs costs none. */
BLITZ_PRIVATE void blitz__wake_thread_joiners(blitz_runtime *rt) {
    blitz__u32_fetch_add(&rt->completion_seq, 1, BLITZ__SEQ_CST);
    if (blitz__u32_load(&rt->completion_sleepers, BLITZ__SEQ_CST))
        blitz__futex_wake(&rt->completion_seq, INT_MAX);
    /* A current-thread driver waiting for this task sleeps in its parker. */
    if (rt->ct)
        blitz__parker_unpark(&rt->ct->parker);
}

/* Sleeps while the completion word still holds `seq` (read by the caller
 * before it checked its condition), at most timeout_ns. */
BLITZ_PRIVATE void blitz__sleep_on_completion(blitz_runtime *rt, uint32_t seq,
                                              uint64_t timeout_ns) {
    blitz__u32_fetch_add(&rt->completion_sleepers, 1, BLITZ__SEQ_CST);
    blitz__futex_wait(&rt->completion_seq, seq, timeout_ns);
    blitz__u32_fetch_sub(&rt->completion_sleepers, 1, BLITZ__RELAXED);
}

/* RUNNING -> COMPLETE and everything completion owes: the joiner's waker,
 * sleeping joiner threads, and the lifecycle reference. */
BLITZ_PRIVATE void blitz__task_finish(blitz__task *t, int cancelled) {
    int dropped;
    if (cancelled) {
        /* The task is ours (RUNNING): its cancel hook releases what its
         * pending ops hold, before any joiner sees it complete. */
        uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
        if (s & BLITZ__TASK_HAS_CANCEL)
            (*blitz__task_cancel_slot(t, s))(blitz__task_state_ptr(t));
    }
    uint64_t prev = blitz__state_complete(t, cancelled, &dropped);
    if (dropped) {
        if (blitz__refs(prev) == 1)
            blitz__task_free(t);
        return;
    }
    if (prev & BLITZ__TASK_JOIN_WAKER) {
        /* The completer only reads the slot (the handle owner may be reading
         * it too, in blitz_join's will_wake check); the copy carries the
         * waker's reference. */
        blitz_waker w = t->join_waker;
        w.vtable->wake(w.data);
    }
    if (prev & BLITZ__TASK_THREAD_JOINER)
        blitz__wake_thread_joiners(blitz__task_runtime(t));
    blitz__task_unref(t);
}

/* ---- wakers ----------------------------------------------------------------- */

static void blitz__waker_wake_by_ref_fn(const void *data) {
    blitz__task *t = (blitz__task *)data;
    if (blitz__state_wake(t) == BLITZ__WAKE_SCHEDULE)
        blitz__task_schedule(t);
}
static void blitz__waker_wake_fn(const void *data) {
    blitz__waker_wake_by_ref_fn(data);
    blitz__task_unref((blitz__task *)data);
}
static blitz_waker blitz__waker_clone_fn(const void *data);
static void blitz__waker_drop_fn(const void *data) {
    blitz__task_unref((blitz__task *)data);
}
static const blitz_waker_vtable blitz__task_waker_vtable = {
    blitz__waker_wake_fn, blitz__waker_wake_by_ref_fn, blitz__waker_clone_fn, blitz__waker_drop_fn};
static blitz_waker blitz__waker_clone_fn(const void *data) {
    blitz__task_ref((blitz__task *)data);
    blitz_waker w = {data, &blitz__task_waker_vtable};
    return w;
}

static void blitz__noop_fn(const void *data) {
    (void)data;
}
static blitz_waker blitz__noop_clone_fn(const void *data);
static const blitz_waker_vtable blitz__noop_waker_vtable = {blitz__noop_fn, blitz__noop_fn,
                                                            blitz__noop_clone_fn, blitz__noop_fn};
static blitz_waker blitz__noop_clone_fn(const void *data) {
    blitz_waker w = {data, &blitz__noop_waker_vtable};
    return w;
}

BLITZ_API blitz_waker blitz_waker_noop(void) {
    blitz_waker w = {NULL, &blitz__noop_waker_vtable};
    return w;
}

BLITZ_API blitz_waker blitz_cx_waker(blitz_cx *cx) {
    BLITZ_ASSERT(cx);
    if (!cx)
        return blitz_waker_noop();
    blitz_waker w = {cx->task, &blitz__task_waker_vtable};
    return w;
}

BLITZ_API blitz_waker blitz_waker_clone(const blitz_waker *w) {
    if (!w || !w->vtable)
        return blitz_waker_noop();
    return w->vtable->clone(w->data);
}
BLITZ_API void blitz_waker_wake(blitz_waker w) {
    if (w.vtable)
        w.vtable->wake(w.data);
}
BLITZ_API void blitz_waker_wake_by_ref(const blitz_waker *w) {
    if (w && w->vtable)
        w->vtable->wake_by_ref(w->data);
}
BLITZ_API void blitz_waker_drop(blitz_waker w) {
    if (w.vtable)
        w.vtable->drop(w.data);
}
BLITZ_API int blitz_waker_will_wake(const blitz_waker *a, const blitz_waker *b) {
    return a && b && a->data == b->data && a->vtable == b->vtable;
}

/* ---- the poll harness ------------------------------------------------------------ */

/* Runs a SCHEDULED task once on the calling thread (context `ctx`): polls
 * it, or completes it as cancelled. Returns 1 when the poll function ran. */
BLITZ_PRIVATE int blitz__task_run(blitz__task *t, blitz__context *ctx) {
    if (blitz__state_to_running(t) == BLITZ__RUN_CANCEL) {
        blitz__task_finish(t, 1);
        return 0;
    }
    blitz_cx cx;
    cx.task = t;
    cx.ctx = ctx;
    cx.yielded = 0;
    blitz__task *outer = ctx->current;
    ctx->current = t;
    blitz_poll r = t->poll(&cx, blitz__task_state_ptr(t));
    ctx->current = outer;
    if (r == BLITZ_READY)
        blitz__task_finish(t, 0);
    else if (blitz__state_to_idle(t, cx.yielded))
        blitz__task_reschedule(t, ctx, cx.yielded);
    return 1;
}

/* ---- poll-context accessors ---------------------------------------------------- */

BLITZ_API blitz_runtime *blitz_cx_runtime(blitz_cx *cx) {
    return cx ? cx->ctx->rt : NULL;
}
BLITZ_API void blitz_cx_yield(blitz_cx *cx) {
    if (cx)
        cx->yielded = 1;
}
BLITZ_API int blitz_cx_cancelled(blitz_cx *cx) {
    if (!cx)
        return 0;
    return (blitz__u64_load(&cx->task->state, BLITZ__ACQUIRE) & BLITZ__TASK_CANCELLED) != 0;
}
BLITZ_API int blitz_cx_shield(blitz_cx *cx) {
    return cx ? blitz__state_shield(cx->task, 1) : BLITZ_EINVAL;
}
BLITZ_API int blitz_cx_unshield(blitz_cx *cx) {
    return cx ? blitz__state_shield(cx->task, -1) : BLITZ_EINVAL;
}
BLITZ_API int blitz_cx_worker(blitz_cx *cx) {
    if (!cx)
        return -1;
    if (cx->ctx->worker)
        return (int)cx->ctx->worker->index;
    return cx->ctx->ct_driver ? 0 : -1;
}

/* ---- spawning ------------------------------------------------------------------- */

/* Spawns; a PINNED task is not queued (blitz__block_on polls it). */
BLITZ_PRIVATE int blitz__spawn(blitz_runtime *rt, const blitz_spawn_opts *o, blitz_task **handle,
                               int pinned) {
    if (handle)
        *handle = NULL;
    if (!rt || !o || !o->poll || o->size == 0 || o->size > BLITZ_MAX_STATE_SIZE)
        return BLITZ_EINVAL;
    if (blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
        return BLITZ_ESHUTDOWN;
    size_t need = BLITZ__TASK_HEADER_SIZE + o->size;
    size_t hooks = (o->drop != NULL) + (o->cancel != NULL);
    if (hooks)
        need = ((need + 7) & ~(size_t)7) + hooks * sizeof(blitz_drop_fn);
    blitz__task *t = blitz__block_alloc(rt, need);
    if (!t)
        return BLITZ_ENOMEM;
    t->poll = o->poll;
    t->next = NULL;
    t->join_waker.data = NULL;
    t->join_waker.vtable = NULL;
    if (o->state)
        memcpy(blitz__task_state_ptr(t), o->state, o->size);
    else
        memset(blitz__task_state_ptr(t), 0, o->size);
    uint64_t initial = blitz__state_initial(handle != NULL, o->drop != NULL, o->cancel != NULL);
    if (o->drop)
        *blitz__task_drop_slot(t) = o->drop;
    if (o->cancel)
        *blitz__task_cancel_slot(t, initial) = o->cancel;
    /* Relaxed: the enqueue below publishes the block (queue release or the
     * global queue's mutex). */
    if (pinned) {
        initial |= BLITZ__TASK_PINNED;
        blitz__u32_fetch_add(&rt->pinned_runnable, 1, BLITZ__SEQ_CST);
    }
    blitz__u64_store(&t->state, initial, BLITZ__RELAXED);
    int rc = pinned ? BLITZ_OK : blitz__task_spawn_schedule(rt, t);
    if (rc != BLITZ_OK) {
        /* Nobody else has seen the task: recycle it without its drop
         * function (the caller still owns what its state refers to). */
        blitz__u64_store(&t->state, 0, BLITZ__RELAXED);
        blitz__block_release(t);
        return rc;
    }
    if (handle)
        *handle = t;
    return BLITZ_OK;
}

BLITZ_API int blitz_spawn_ex(blitz_runtime *rt, const blitz_spawn_opts *o, blitz_task **handle) {
    return blitz__spawn(rt, o, handle, 0);
}

/* Options for a task without hooks. */
BLITZ_PRIVATE blitz_spawn_opts blitz__plain_opts(blitz_poll_fn poll, const void *state,
                                                 size_t size) {
    blitz_spawn_opts o;
    memset(&o, 0, sizeof o);
    o.poll = poll;
    o.state = state;
    o.size = size;
    return o;
}

BLITZ_API int blitz_spawn(blitz_runtime *rt, blitz_poll_fn poll, const void *state, size_t size,
                          blitz_task **handle) {
    blitz_spawn_opts o = blitz__plain_opts(poll, state, size);
    return blitz_spawn_ex(rt, &o, handle);
}

typedef struct {
    blitz_fn fn;
    void *arg;
} blitz__fn_state;

static blitz_poll blitz__fn_poll(blitz_cx *cx, void *p) {
    (void)cx;
    blitz__fn_state *s = (blitz__fn_state *)p;
    s->fn(s->arg);
    return BLITZ_READY;
}

BLITZ_API int blitz_spawn_fn(blitz_runtime *rt, blitz_fn fn, void *arg, blitz_task **handle) {
    if (handle)
        *handle = NULL;
    if (!fn)
        return BLITZ_EINVAL;
    blitz__fn_state s;
    s.fn = fn;
    s.arg = arg;
    return blitz_spawn(rt, blitz__fn_poll, &s, sizeof s, handle);
}
/* ====[ END src/task.c ]=================================================== */
/* ====[ BEGIN src/join.c ]================================================= */
/* >>join */
/* Join handles: await, wait, status, state, cancel, release.
 *
 * The join waker protocol (Tokio's JOIN_WAKER): the handle's owner writes
 * join_waker only while JOIN_WAKER is clear, then sets the bit with a
 * release CAS that fails once the task is COMPLETE. The completer clears the
 * bit in its COMPLETE transition and then only reads the slot. To replace a
 * stored waker the owner first clears the bit (a CAS that also fails on
 * COMPLETE). So the slot is never written while another thread may read it. */
/* internal.h already included */

BLITZ_API blitz_poll blitz_join(blitz_cx *cx, blitz_task *t) {
    BLITZ_ASSERT(cx && t);
    if (!cx || !t)
        return BLITZ_READY; /* blitz_task_status reports the misuse */
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (blitz__state_is_complete(s))
        return BLITZ_READY;
    blitz_waker mine = blitz_cx_waker(cx);
    if (s & BLITZ__TASK_JOIN_WAKER) {
        if (blitz_waker_will_wake(&t->join_waker, &mine))
            return BLITZ_PENDING;
        /* A different waker is stored (the handle moved to another task):
         * take the slot back before overwriting it. */
        for (;;) {
            if (blitz__state_is_complete(s))
                return BLITZ_READY;
            if (blitz__u64_cas_weak(&t->state, &s, s & ~BLITZ__TASK_JOIN_WAKER, BLITZ__ACQ_REL))
                break;
        }
        blitz_waker_drop(t->join_waker);
    }
    t->join_waker = blitz_waker_clone(&mine);
    s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        if (blitz__state_is_complete(s)) {
            blitz_waker_drop(t->join_waker);
            return BLITZ_READY;
        }
        if (blitz__u64_cas_weak(&t->state, &s, s | BLITZ__TASK_JOIN_WAKER, BLITZ__ACQ_REL))
            return BLITZ_PENDING;
    }
}

BLITZ_API void blitz_join_cancel(blitz_cx *cx, blitz_task *t) {
    (void)cx;
    if (!t)
        return;
    /* Take the stored waker back unless the task completed (then the
     * completer owns and consumes it). */
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    for (;;) {
        if (blitz__state_is_complete(s) || !(s & BLITZ__TASK_JOIN_WAKER))
            return;
        if (blitz__u64_cas_weak(&t->state, &s, s & ~BLITZ__TASK_JOIN_WAKER, BLITZ__ACQ_REL))
            break;
    }
    blitz_waker_drop(t->join_waker);
}

BLITZ_API void blitz_join_cancel_op(blitz_cx *cx, void *handle) {
    blitz_join_cancel(cx, (blitz_task *)handle);
}

BLITZ_API int blitz_task_status(const blitz_task *t) {
    if (!t)
        return BLITZ_EINVAL;
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (!blitz__state_is_complete(s))
        return BLITZ_EAGAIN;
    return (s & BLITZ__TASK_OUTCOME_CANCELLED) ? BLITZ_ECANCELED : BLITZ_OK;
}

BLITZ_API void *blitz_task_state(blitz_task *t) {
    if (!t || !blitz__state_is_complete(blitz__u64_load(&t->state, BLITZ__ACQUIRE)))
        return NULL;
    return blitz__task_state_ptr(t);
}

BLITZ_API int blitz_task_cancel(blitz_task *t) {
    if (!t)
        return BLITZ_EINVAL;
    /* An idle task is claimed (taken to RUNNING) and completed here. */
    if (blitz__state_cancel(t))
        blitz__task_finish(t, 1);
    return BLITZ_OK;
}

BLITZ_API int blitz_task_release(blitz_task **tp) {
    if (!tp)
        return BLITZ_EINVAL;
    blitz__task *t = *tp;
    if (!t)
        return BLITZ_ERELEASED;
    *tp = NULL;
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED), next;
    for (;;) {
        BLITZ_ASSERT((s & BLITZ__TASK_JOIN_INTEREST) && "task handle released twice");
        if (!(s & BLITZ__TASK_JOIN_INTEREST))
            return BLITZ_ERELEASED;
        next = (s & ~(BLITZ__TASK_JOIN_INTEREST | BLITZ__TASK_JOIN_WAKER)) - BLITZ__TASK_REF_ONE;
        if (!blitz__state_is_complete(s))
            next |= BLITZ__TASK_DETACHED;
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQ_REL))
            break;
    }
    /* Before completion a stored join waker is ours again to drop. */
    if (!blitz__state_is_complete(s) && (s & BLITZ__TASK_JOIN_WAKER))
        blitz_waker_drop(t->join_waker);
    if (blitz__refs(next) == 0)
        blitz__task_free(t);
    return BLITZ_OK;
}

/* Marks that a thread will sleep on the completion word for `t`. Returns 0
 * when `t` is already complete. */
BLITZ_PRIVATE int blitz__task_set_thread_joiner(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    for (;;) {
        if (blitz__state_is_complete(s))
            return 0;
        if (s & BLITZ__TASK_THREAD_JOINER)
            return 1;
        if (blitz__u64_cas_weak(&t->state, &s, s | BLITZ__TASK_THREAD_JOINER, BLITZ__ACQ_REL))
            return 1;
    }
}

BLITZ_PRIVATE int blitz__task_is_complete(const blitz__task *t) {
    return blitz__state_is_complete(blitz__u64_load(&t->state, BLITZ__ACQUIRE));
}

/* Sleeps until `t` completes, the runtime's completion word changes, or
 * timeout_ns passes. Returns 1 once `t` is complete. */
BLITZ_PRIVATE int blitz__wait_completion(blitz_runtime *rt, blitz__task *t, uint64_t timeout_ns) {
    /* Read the word before announcing ourselves: a completion after the
     * announcement bumps it, so the futex wait cannot miss it. */
    uint32_t seq = blitz__u32_load(&rt->completion_seq, BLITZ__ACQUIRE);
    if (!blitz__task_set_thread_joiner(t))
        return 1;
    blitz__sleep_on_completion(rt, seq, timeout_ns);
    return blitz__task_is_complete(t);
}

BLITZ_API int blitz_task_wait(blitz_task *t) {
    if (!t)
        return BLITZ_EINVAL;
    if (!blitz__task_is_complete(t)) {
        blitz_runtime *rt = blitz__task_runtime(t);
        blitz__context *ctx = blitz__context_get();
        if (rt->flavor == BLITZ_CURRENT_THREAD)
            blitz__ct_wait(rt, t, ctx);
        else if (ctx && ctx->rt == rt && ctx->worker)
            blitz__worker_help_until(ctx, t);
        else
            blitz__external_help_until(rt, t, ctx && ctx->rt == rt);
    }
    int rc = blitz_task_status(t);
    /* Only a wait inside one of the runtime's own polls returns unfinished:
     * the runtime is shutting down and waits for that poll to end. */
    return rc == BLITZ_EAGAIN ? BLITZ_ESHUTDOWN : rc;
}
/* ====[ END src/join.c ]=================================================== */
/* ====[ BEGIN src/time_driver.c ]========================================== */
/* >>time_driver */
/* The time driver: the runtime's clock and its timer wheel, wired to
 * tasks.
 *
 * The clock is CLOCK_MONOTONIC in nanoseconds, or, for a runtime created
 * with a paused clock, a virtual time that moves only when told
 * (blitz_time_advance) or, when every worker is idle, jumps to the next
 * deadline. Ticks are whole milliseconds since the runtime's origin; a
 * deadline is rounded up to a tick and a timer fires once the current tick
 * reaches it, so no timer fires before its deadline.
 *
 * The wheel and every armed timer's waker are guarded by `lock`. Firing
 * moves the due entries out under the lock, marks them FIRED (release) and
 * wakes their wakers after unlocking. `next_expiry_ns` is a lock-free hint
 * for the earliest deadline (never later than the truth): workers compare
 * the clock with it at each tick and only then take the lock (a try-lock,
 * so that one worker stuck in a long poll never stops timers: any other
 * worker fires them). One parked worker at a time (the "timer sleeper")
 * sleeps with a timeout to the next deadline; the others sleep without one,
 * so an idle runtime without timers wakes nobody. Arming a timer earlier
 * than the hint wakes the sleeper (or a parked worker) to re-plan. */
/* internal.h already included */

#define BLITZ__TICK_NS     1000000u
#define BLITZ__TIMER_IDLE  0u
#define BLITZ__TIMER_ARMED 1u
#define BLITZ__TIMER_FIRED 2u

BLITZ_PRIVATE void blitz__time_init(blitz_runtime *rt, int paused) {
    blitz__time_driver *td = &rt->time;
    blitz__mutex_init(&td->lock);
    td->origin_ns = blitz__now_ns();
    td->paused = paused;
    blitz__u64_store(&td->virtual_ns, td->origin_ns, BLITZ__RELAXED);
    blitz__wheel_init(&td->wheel, 0);
    blitz__u64_store(&td->next_expiry_ns, UINT64_MAX, BLITZ__RELAXED);
    blitz__u32_store(&td->sleeper, 0, BLITZ__RELAXED);
}

BLITZ_PRIVATE void blitz__time_destroy(blitz_runtime *rt) {
    blitz__mutex_destroy(&rt->time.lock);
}

/* The runtime's current time in nanoseconds. */
BLITZ_PRIVATE uint64_t blitz__rt_now(const blitz_runtime *rt) {
    if (rt->time.paused)
        return blitz__u64_load(&rt->time.virtual_ns, BLITZ__ACQUIRE);
    return blitz__now_ns();
}

/* Ticks since the origin that `ns` has fully reached (floor), and the tick
 * at which a deadline is due (ceiling). */
static uint64_t blitz__tick_floor(const blitz_runtime *rt, uint64_t ns) {
    return ns <= rt->time.origin_ns ? 0 : (ns - rt->time.origin_ns) / BLITZ__TICK_NS;
}
static uint64_t blitz__tick_ceil(const blitz_runtime *rt, uint64_t ns) {
    if (ns <= rt->time.origin_ns)
        return 0;
    uint64_t d = ns - rt->time.origin_ns;
    return d / BLITZ__TICK_NS + (d % BLITZ__TICK_NS != 0);
}
/* The nanosecond at which tick `t` begins (saturating). */
static uint64_t blitz__tick_start_ns(const blitz_runtime *rt, uint64_t t) {
    if (t >= (UINT64_MAX - rt->time.origin_ns) / BLITZ__TICK_NS)
        return UINT64_MAX;
    return rt->time.origin_ns + t * BLITZ__TICK_NS;
}

/* Publishes the wheel's earliest expiry as the hint. Caller holds lock.
 * Seq_cst: pairs with a parking worker's seq_cst re-check (worker.c). */
static void blitz__time_update_hint(blitz_runtime *rt) {
    uint64_t t = blitz__wheel_next_expiry(&rt->time.wheel);
    blitz__u64_store(&rt->time.next_expiry_ns,
                     t == UINT64_MAX ? UINT64_MAX : blitz__tick_start_ns(rt, t), BLITZ__SEQ_CST);
}

#define BLITZ__WHERE_FIRING (BLITZ__WHEEL_NOT_IN_WHEEL - 1)
#define BLITZ__WAKE_BATCH   64

static blitz_timer *blitz__timer_of(blitz__timer_entry *e) {
    return (blitz_timer *)(void *)((char *)e - offsetof(blitz_timer, blitz__entry));
}

/* Moves every timer due at `now_ns` from the wheel to the firing list.
 * Caller holds the lock. Entries in the firing list are still ARMED (a
 * cancel unlinks them from there) until fired in batches. */
static void blitz__time_collect(blitz_runtime *rt, uint64_t now_ns) {
    blitz__time_driver *td = &rt->time;
    blitz__timer_entry *due = NULL;
    blitz__wheel_advance(&td->wheel, blitz__tick_floor(rt, now_ns), &due);
    while (due) {
        blitz__timer_entry *next = due->next;
        due->where = BLITZ__WHERE_FIRING;
        due->prev = NULL;
        due->next = td->firing;
        if (td->firing)
            td->firing->prev = due;
        td->firing = due;
        due = next;
    }
    blitz__time_update_hint(rt);
}

/* Empties the firing list a batch at a time, each timer's waker taken
 * under the lock and used after unlocking it (a woken task may run, re-arm
 * and take the lock at once; a dropped waker may free the task and its
 * timer). `fire`: mark FIRED and wake; else (shutdown) mark IDLE and drop.
 * Called and returns with the lock held. Returns how many. */
static size_t blitz__time_fire(blitz_runtime *rt, int fire) {
    blitz__time_driver *td = &rt->time;
    size_t fired = 0;
    while (td->firing) {
        blitz_waker batch[BLITZ__WAKE_BATCH];
        int n = 0;
        while (td->firing && n < BLITZ__WAKE_BATCH) {
            blitz__timer_entry *e = td->firing;
            td->firing = e->next;
            if (td->firing)
                td->firing->prev = NULL;
            e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
            blitz_timer *t = blitz__timer_of(e);
            batch[n++] = t->blitz__waker;
            t->blitz__waker = blitz_waker_noop();
            /* Release: the task that sees FIRED sees the timer out of every
             * list; from here its owner may reuse the memory. */
            blitz__u32_field_store(&t->blitz__state, fire ? BLITZ__TIMER_FIRED : BLITZ__TIMER_IDLE,
                                   BLITZ__RELEASE);
        }
        fired += (size_t)n;
        blitz__mutex_unlock(&td->lock);
        if (fire) {
            blitz__wake_batch_begin();
            for (int i = 0; i < n; i++)
                blitz_waker_wake(batch[i]);
            blitz__wake_batch_end();
        } else {
            for (int i = 0; i < n; i++)
                blitz_waker_drop(batch[i]);
        }
        blitz__mutex_lock(&td->lock);
    }
    return fired;
}

/* Fires due timers if the hint says some are due. `block`: wait for the
 * lock rather than try it. Returns 1 when it fired at least one. */
BLITZ_PRIVATE int blitz__time_process(blitz_runtime *rt, int block) {
    uint64_t hint = blitz__u64_load(&rt->time.next_expiry_ns, BLITZ__ACQUIRE);
    if (hint == UINT64_MAX)
        return 0;
    if (blitz__rt_now(rt) < hint)
        return 0;
    if (block)
        blitz__mutex_lock(&rt->time.lock);
    else if (!blitz__mutex_trylock(&rt->time.lock))
        return 0;
    blitz__time_collect(rt, blitz__rt_now(rt));
    size_t fired = blitz__time_fire(rt, 1);
    blitz__mutex_unlock(&rt->time.lock);
    return fired != 0;
}

/* Shutdown: disarms every timer and drops its waker, so the references the
 * timers hold on their (now cancelled) tasks go away. No task runs any more;
 * a later blitz_timer_cancel finds the timer idle. */
BLITZ_PRIVATE void blitz__time_shutdown(blitz_runtime *rt) {
    blitz__time_driver *td = &rt->time;
    blitz__mutex_lock(&td->lock);
    /* Everything moves to the firing list, where a concurrent cancel can
     * still unlink it. */
    blitz__time_collect(rt, UINT64_MAX);
    blitz__time_fire(rt, 0);
    blitz__mutex_unlock(&td->lock);
}

/* Nanoseconds a parked thread should sleep for the next timer: 0 for "no
 * timer" (sleep until woken). */
BLITZ_PRIVATE uint64_t blitz__time_sleep_ns(blitz_runtime *rt) {
    uint64_t hint = blitz__u64_load(&rt->time.next_expiry_ns, BLITZ__SEQ_CST);
    if (hint == UINT64_MAX || rt->time.paused)
        return 0;
    uint64_t now = blitz__now_ns();
    return hint > now ? hint - now : 1;
}

/* Paused clock, every worker idle: jump to the next deadline and fire.
 * Returns 1 when it moved the clock. */
/* `idle` is checked under the lock, after any earlier jump has finished
 * waking its tasks (they are queued before `advancing` is cleared under the
 * lock), so a jump never overtakes the tasks the previous one woke. */
BLITZ_PRIVATE int blitz__time_auto_advance(blitz_runtime *rt, int (*idle)(blitz_runtime *rt)) {
    if (!rt->time.paused)
        return 0;
    blitz__mutex_lock(&rt->time.lock);
    if (rt->time.advancing || (idle && !idle(rt))) {
        blitz__mutex_unlock(&rt->time.lock);
        return 0;
    }
    uint64_t t = blitz__wheel_next_expiry(&rt->time.wheel);
    if (t != UINT64_MAX) {
        uint64_t target = blitz__tick_start_ns(rt, t);
        if (target > blitz__u64_load(&rt->time.virtual_ns, BLITZ__RELAXED))
            blitz__u64_store(&rt->time.virtual_ns, target, BLITZ__RELEASE);
        rt->time.advancing = 1;
        blitz__time_collect(rt, blitz__u64_load(&rt->time.virtual_ns, BLITZ__RELAXED));
        blitz__time_fire(rt, 1);
        rt->time.advancing = 0;
    }
    blitz__mutex_unlock(&rt->time.lock);
    return t != UINT64_MAX;
}

/* Someone must notice a timer that is now the earliest: the sleeping
 * driver re-plans, or a parked worker wakes up to become it. */
static void blitz__time_kick(blitz_runtime *rt) {
    if (rt->flavor == BLITZ_CURRENT_THREAD) {
        blitz__parker_unpark(&rt->ct->parker);
        return;
    }
    uint32_t s = blitz__u32_load(&rt->time.sleeper, BLITZ__SEQ_CST);
    if (s)
        blitz__parker_unpark(&rt->workers[s - 1].parker);
    else
        blitz__idle_notify_parked(rt);
}

/* ---- the public timer ------------------------------------------------------- */

static blitz_runtime *blitz__cx_rt(blitz_cx *cx) {
    return cx->ctx->rt;
}

/* Arms `t` for `deadline_ns` with the task's waker. */
static void blitz__timer_arm(blitz_runtime *rt, blitz_timer *t, uint64_t deadline_ns,
                             const blitz_waker *w) {
    t->deadline = deadline_ns;
    t->blitz__rt = rt;
    t->blitz__entry.where = BLITZ__WHEEL_NOT_IN_WHEEL;
    t->blitz__entry.deadline = blitz__tick_ceil(rt, deadline_ns);
    /* Outside the lock: the clone is an atomic increment on the task. */
    blitz_waker mine = blitz_waker_clone(w);
    uint64_t due_ns = blitz__tick_start_ns(rt, t->blitz__entry.deadline);
    blitz__mutex_lock(&rt->time.lock);
    t->blitz__waker = mine;
    blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_ARMED, BLITZ__RELAXED);
    blitz__wheel_insert(&rt->time.wheel, &t->blitz__entry);
    /* Inserting can only move the earliest expiry earlier. Seq_cst pairs
     * with a parking worker's seq_cst read of the hint (worker.c). */
    int earlier = due_ns < blitz__u64_load(&rt->time.next_expiry_ns, BLITZ__RELAXED);
    if (earlier)
        blitz__u64_store(&rt->time.next_expiry_ns, due_ns, BLITZ__SEQ_CST);
    blitz__mutex_unlock(&rt->time.lock);
    if (earlier)
        blitz__time_kick(rt);
}

BLITZ_API blitz_poll blitz_sleep_until(blitz_cx *cx, blitz_timer *t, uint64_t deadline_ns) {
    if (!cx || !t)
        return BLITZ_READY;
    uint32_t s = blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE);
    if (s == BLITZ__TIMER_FIRED) {
        blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_IDLE, BLITZ__RELAXED);
        return BLITZ_READY;
    }
    blitz_runtime *rt = blitz__cx_rt(cx);
    blitz_waker mine = blitz_cx_waker(cx);
    if (s == BLITZ__TIMER_IDLE) {
        if (deadline_ns <= blitz__rt_now(rt))
            return BLITZ_READY;
        blitz__timer_arm(rt, t, deadline_ns, &mine);
        return BLITZ_PENDING;
    }
    /* Armed: polled again (a spurious wake, or another op of the task).
     * Keep the registered waker if it still wakes this task; the driver
     * takes it under the lock, so look at it under the lock too. */
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&rt->time.lock);
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__RELAXED) == BLITZ__TIMER_ARMED &&
        !blitz_waker_will_wake(&t->blitz__waker, &mine)) {
        old = t->blitz__waker;
        t->blitz__waker = blitz_waker_clone(&mine);
    }
    blitz__mutex_unlock(&rt->time.lock);
    blitz_waker_drop(old);
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE) == BLITZ__TIMER_FIRED) {
        blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_IDLE, BLITZ__RELAXED);
        return BLITZ_READY;
    }
    return BLITZ_PENDING;
}

BLITZ_API blitz_poll blitz_sleep(blitz_cx *cx, blitz_timer *t, int64_t ns) {
    if (!cx || !t)
        return BLITZ_READY;
    /* Only the first poll computes the deadline; later polls keep it. */
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE) != BLITZ__TIMER_IDLE)
        return blitz_sleep_until(cx, t, t->deadline);
    return blitz_sleep_until(cx, t, blitz_deadline_after(blitz__rt_now(blitz__cx_rt(cx)), ns));
}

BLITZ_API int blitz_timer_cancel(blitz_timer *t) {
    if (!t)
        return BLITZ_EINVAL;
    uint32_t s = blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE);
    if (s == BLITZ__TIMER_IDLE)
        return BLITZ_OK;
    blitz_runtime *rt = t->blitz__rt;
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&rt->time.lock);
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__RELAXED) == BLITZ__TIMER_ARMED) {
        blitz__timer_entry *e = &t->blitz__entry;
        if (e->where == BLITZ__WHERE_FIRING) {
            if (e->prev)
                e->prev->next = e->next;
            else
                rt->time.firing = e->next;
            if (e->next)
                e->next->prev = e->prev;
            e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
        } else {
            blitz__wheel_remove(&rt->time.wheel, e);
        }
        old = t->blitz__waker;
        t->blitz__waker = blitz_waker_noop();
    }
    blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_IDLE, BLITZ__RELAXED);
    blitz__mutex_unlock(&rt->time.lock);
    blitz_waker_drop(old);
    return BLITZ_OK;
}

BLITZ_API int blitz_timer_armed(const blitz_timer *t) {
    return t && blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE) == BLITZ__TIMER_ARMED;
}

BLITZ_API blitz_poll blitz_timeout(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner) {
    if (!cx || !t)
        return BLITZ_READY;
    if (inner == BLITZ_READY) {
        blitz_timer_cancel(t);
        t->expired = 0;
        return BLITZ_READY;
    }
    if (blitz_sleep(cx, t, ns) == BLITZ_READY) {
        t->expired = 1;
        return BLITZ_READY;
    }
    return BLITZ_PENDING;
}

BLITZ_API blitz_poll blitz_timeout_op(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner,
                                      blitz_cancel_fn cancel, void *op) {
    blitz_poll r = blitz_timeout(cx, t, ns, inner);
    if (r == BLITZ_READY && t && t->expired && cancel)
        cancel(cx, op);
    return r;
}

/* ---- clock and deadlines ------------------------------------------------------ */

BLITZ_API uint64_t blitz_time_now(const blitz_runtime *rt) {
    return rt ? blitz__rt_now(rt) : blitz__now_ns();
}

BLITZ_API uint64_t blitz_cx_now(blitz_cx *cx) {
    return cx ? blitz__rt_now(blitz__cx_rt(cx)) : blitz__now_ns();
}

BLITZ_API uint64_t blitz_deadline_after(uint64_t now_ns, int64_t ns) {
    if (ns <= 0)
        return now_ns;
    uint64_t d = (uint64_t)ns;
    return now_ns > UINT64_MAX - d ? BLITZ_TIME_NEVER : now_ns + d;
}

BLITZ_API int blitz_time_advance(blitz_runtime *rt, int64_t ns) {
    if (!rt || ns < 0)
        return BLITZ_EINVAL;
    if (!rt->time.paused)
        return BLITZ_EINVAL;
    blitz__mutex_lock(&rt->time.lock);
    uint64_t now = blitz__u64_load(&rt->time.virtual_ns, BLITZ__RELAXED);
    now = blitz_deadline_after(now, ns);
    blitz__u64_store(&rt->time.virtual_ns, now, BLITZ__RELEASE);
    blitz__time_collect(rt, now);
    blitz__time_fire(rt, 1);
    blitz__mutex_unlock(&rt->time.lock);
    return BLITZ_OK;
}

/* ---- intervals ------------------------------------------------------------------ */

BLITZ_API int blitz_interval_init(blitz_interval *iv, uint64_t start_ns, int64_t period_ns,
                                  blitz_missed_tick missed) {
    if (!iv || period_ns <= 0 ||
        (missed != BLITZ_MISSED_BURST && missed != BLITZ_MISSED_DELAY &&
         missed != BLITZ_MISSED_SKIP))
        return BLITZ_EINVAL;
    memset(iv, 0, sizeof *iv);
    iv->period = (uint64_t)period_ns;
    iv->next = start_ns;
    iv->missed = missed;
    return BLITZ_OK;
}

BLITZ_API blitz_poll blitz_interval_tick(blitz_cx *cx, blitz_interval *iv) {
    if (!cx || !iv || iv->period == 0)
        return BLITZ_READY;
    if (blitz_sleep_until(cx, &iv->timer, iv->next) == BLITZ_PENDING)
        return BLITZ_PENDING;
    uint64_t now = blitz_cx_now(cx), due = iv->next;
    iv->last_tick = due;
    switch (iv->missed) {
    case BLITZ_MISSED_BURST:
        /* Catch up: the missed ticks come back to back. */
        iv->next = blitz_deadline_after(due, (int64_t)iv->period);
        break;
    case BLITZ_MISSED_DELAY:
        /* The schedule restarts one period after this (late) tick. */
        iv->next = blitz_deadline_after(now > due ? now : due, (int64_t)iv->period);
        break;
    case BLITZ_MISSED_SKIP: {
        /* The next tick on the original grid that is after now. */
        uint64_t next = blitz_deadline_after(due, (int64_t)iv->period);
        if (next <= now && next != BLITZ_TIME_NEVER) {
            uint64_t behind = (now - next) / iv->period + 1;
            next = behind > (BLITZ_TIME_NEVER - next) / iv->period ? BLITZ_TIME_NEVER
                                                                   : next + behind * iv->period;
        }
        iv->next = next;
        break;
    }
    }
    return BLITZ_READY;
}
/* ====[ END src/time_driver.c ]============================================ */
/* ====[ BEGIN src/io_driver.c ]============================================ */
/* >>io_driver */
/* The I/O driver: one completion-style interface over the backends (seed
 * 002 "I/O Driver"; DESIGN.md "I/O").
 *
 * An op is submitted by the task that polls it, waits, and completes with
 * a result stored in the op:
 *   io_uring   the kernel performs the operation (submit an SQE; the CQE
 *              carries the result); sends try the system call first, since
 *              a send into a socket with room completes at once;
 *   epoll/poll the task performs the system call; on EAGAIN the op joins
 *              the socket's waiter list and an event of its direction
 *              wakes it to try again. Each event bumps the direction's
 *              sequence number under the socket's lock, and a waiter
 *              registers only if the number did not move since its
 *              attempt, so no event between the attempt and the
 *              registration is lost (the edge-triggered contract).
 *
 * Waiting and dispatching: any thread holding `io->lock` (a try-lock at the
 * start of each worker tick, so it never blocks a busy worker) reaps
 * without blocking; the one parked worker that is the runtime's "sleeper"
 * blocks in the backend with the next timer's deadline as timeout (the
 * current-thread driver always does), so an idle runtime sees I/O at once.
 * Its parker is then PARKED_DRIVER, and an unpark writes the driver's
 * eventfd, which is part of every backend wait.
 *
 * Buffer lifetime: an op the kernel holds (io_uring) keeps a reference on
 * its task through its waker, so the task's block, where the buffer lives,
 * is not freed before the completion arrives, even when the task was
 * cancelled (its cancel hook submits ASYNC_CANCEL) or finished. */
/* internal.h already included */
/* ====[ BEGIN src/io_internal.h ]========================================== */
/* >>io_internal */
/* The I/O driver's private structures (io_driver.c and the backends).
 *
 * One driver per runtime, over one backend. A socket is a descriptor plus
 * a small lock-protected record: for the readiness backends (epoll, poll)
 * a pair of event sequence numbers and the list of ops waiting for
 * readiness (Tokio's ScheduledIo); for io_uring the list of ops the kernel
 * holds. Ops are the caller's blitz_io structs, linked intrusively. */

/* Op states (blitz_io.blitz__state). */
#define BLITZ__IO_IDLE       0u /* not started, or finished and consumed */
#define BLITZ__IO_WAIT       1u /* readiness: in the socket's waiter list */
#define BLITZ__IO_RETRY      2u /* readiness: woken by an event, try again */
#define BLITZ__IO_INFLIGHT   3u /* io_uring: submitted, the kernel owns the buffer */
#define BLITZ__IO_CANCELLING 4u /* io_uring: cancelled, completion still due */
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

#define BLITZ__DIR_READ  0u
#define BLITZ__DIR_WRITE 1u

/* blitz_io.blitz__flags */
#define BLITZ__OPF_CONNECTING 1u /* connect(2) returned EINPROGRESS */
#define BLITZ__OPF_URING      2u /* submitted to io_uring (its msghdr is in the op) */

/* io_uring user_data tags below any pointer. */
#define BLITZ__UD_IGNORE 0u
#define BLITZ__UD_WAKE   1u
/* A listener's multishot accept: the socket pointer with this bit set. */
#define BLITZ__UD_ACCEPT_MS 2u

#ifndef IORING_CQE_F_MORE
#define IORING_CQE_F_MORE (1U << 1)
#endif

#define BLITZ__IO_FOREVER  UINT64_MAX
#define BLITZ__IO_MAX_IOV  16
#define BLITZ__IO_EVENTS   256

struct blitz_socket {
    int fd;
    int family;
    int type;
    int closed; /* under lock */
    struct blitz__io *io;
    blitz__mutex lock;
    blitz__atomic_u32 refs; /* the handle, plus one per op in the kernel */
    /* Readiness: bumped under lock by every event of that direction. */
    blitz__atomic_u32 rd_seq, wr_seq;
    /* poll backend: directions that have waiters (bit per direction). */
    blitz__atomic_u32 want;
    blitz__atomic_u32 rd_hot; /* the last receive filled its buffer */
    int poll_slot; /* index in the poll set, -1 when not in it (poll_lock) */
    blitz_io *ops; /* waiting (readiness) or in flight (io_uring); under lock */
    /* io_uring multishot accept (listeners; under lock): armed in the
     * kernel, connections accepted before anyone asked, a pending error. */
    int ms_armed;
    int ms_err;
    int *ms_fds;
    uint32_t ms_head, ms_count, ms_cap;
    struct blitz_socket *all_next, *all_prev; /* every live socket (socks_lock) */
    struct blitz_socket *free_next;
};

typedef struct blitz__io {
    blitz_runtime *rt;
    blitz_backend kind;
    int wake_fd; /* eventfd: writing it wakes a thread blocked in the backend */
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
    blitz__atomic_u32 has_free; /* free_list is not empty */

    /* epoll */
    int epfd;
    int nevents;
    struct epoll_event *events;

    /* poll */
    blitz__mutex poll_lock;
    blitz_socket **pset;
    uint32_t pcount, pcap;
    struct pollfd *pfds;
    blitz_socket **psocks;
    uint32_t pfd_cap;
    int npfds;
    blitz__atomic_u32 poll_blocked;

    /* io_uring */
    int ring_fd;
    blitz__mutex sq_lock;
    blitz__atomic_u32 to_submit; /* SQEs written and not yet given to the kernel */
    uint32_t sq_tail_local;
    uint32_t sq_entries, cq_entries, features;
    uint32_t *sq_head, *sq_tail, *sq_mask, *sq_array;
    uint32_t *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    void *sq_map, *cq_map;
    size_t sq_map_len, cq_map_len, sqes_len;
    int ncqes; /* reaped into cqe_buf, not yet dispatched */
    struct io_uring_cqe *cqe_buf;
    blitz__atomic_u64 inflight; /* ops the kernel holds */
    int skip_cancel_cqe;
    int ms_accept; /* multishot accept is available (Linux 5.19+) */
} blitz__io;

/* Backends (each in its own file, stubs when compiled out). */
BLITZ_PRIVATE int blitz__epoll_init(blitz__io *io);
BLITZ_PRIVATE void blitz__epoll_destroy(blitz__io *io);
BLITZ_PRIVATE int blitz__epoll_add(blitz__io *io, blitz_socket *s);
BLITZ_PRIVATE void blitz__epoll_del(blitz__io *io, blitz_socket *s);
BLITZ_PRIVATE void blitz__epoll_wait(blitz__io *io, uint64_t timeout_ns);
BLITZ_PRIVATE void blitz__epoll_dispatch(blitz__io *io);

BLITZ_PRIVATE int blitz__pollb_init(blitz__io *io);
BLITZ_PRIVATE void blitz__pollb_destroy(blitz__io *io);
BLITZ_PRIVATE void blitz__pollb_want(blitz__io *io, blitz_socket *s);
BLITZ_PRIVATE void blitz__pollb_forget(blitz__io *io, blitz_socket *s);
BLITZ_PRIVATE void blitz__pollb_wait(blitz__io *io, uint64_t timeout_ns);
BLITZ_PRIVATE void blitz__pollb_dispatch(blitz__io *io);

BLITZ_PRIVATE int blitz__uring_init(blitz__io *io);
BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io);
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz_io *op, int flush);
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op);
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz_socket *s);
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, uint64_t ud);
BLITZ_PRIVATE void blitz__uring_flush(blitz__io *io);
BLITZ_PRIVATE int blitz__uring_cq_ready(blitz__io *io);
BLITZ_PRIVATE void blitz__uring_wait(blitz__io *io, uint64_t timeout_ns);
BLITZ_PRIVATE void blitz__uring_dispatch(blitz__io *io);

/* Shared by the backends (io_driver.c). */
BLITZ_PRIVATE void blitz__io_ready(blitz_socket *s, int rd, int wr);
BLITZ_PRIVATE void blitz__io_complete(blitz__io *io, blitz_io *op, int32_t res, uint32_t flags);
BLITZ_PRIVATE void blitz__io_drain_wake_fd(blitz__io *io);
BLITZ_PRIVATE void blitz__io_accept_ms(blitz__io *io, blitz_socket *s, int32_t res, uint32_t flags);
/* ====[ END src/io_internal.h ]============================================ */

static inline uint32_t blitz__op_state(const blitz_io *op) {
    return blitz__u32_field_load(&op->blitz__state, BLITZ__ACQUIRE);
}
static inline void blitz__op_set_state(blitz_io *op, uint32_t st) {
    blitz__u32_field_store(&op->blitz__state, st, BLITZ__RELEASE);
}

/* Wakes an op's task; after shutdown only drops the reference (no task
 * runs any more). */
static void blitz__io_wake(blitz__io *io, blitz_waker w) {
    if (blitz__u32_load(&io->shutdown, BLITZ__ACQUIRE))
        blitz_waker_drop(w);
    else
        blitz_waker_wake(w);
}

/* ---- the socket list and lifetimes ------------------------------------------- */

static void blitz__op_link(blitz_socket *s, blitz_io *op) {
    op->blitz__prev = NULL;
    op->blitz__next = s->ops;
    if (s->ops)
        s->ops->blitz__prev = op;
    s->ops = op;
}

static void blitz__op_unlink(blitz_socket *s, blitz_io *op) {
    if (op->blitz__prev)
        op->blitz__prev->blitz__next = op->blitz__next;
    else if (s->ops == op)
        s->ops = op->blitz__next;
    if (op->blitz__next)
        op->blitz__next->blitz__prev = op->blitz__prev;
    op->blitz__next = op->blitz__prev = NULL;
}

static void blitz__sock_free_mem(blitz_socket *s) {
    for (uint32_t i = 0; i < s->ms_count; i++)
        close(s->ms_fds[(s->ms_head + i) % s->ms_cap]);
    blitz__free(s->ms_fds);
    blitz__mutex_destroy(&s->lock);
    blitz__free(s);
}

/* Frees readiness sockets closed before this dispatch cycle. Caller holds
 * io->lock, so no event fetched earlier still names them. */
static void blitz__io_free_deferred(blitz__io *io) {
    if (!blitz__u32_load(&io->has_free, BLITZ__RELAXED))
        return;
    blitz__mutex_lock(&io->socks_lock);
    blitz_socket *s = io->free_list;
    io->free_list = NULL;
    blitz__u32_store(&io->has_free, 0, BLITZ__RELAXED);
    blitz__mutex_unlock(&io->socks_lock);
    while (s) {
        blitz_socket *next = s->free_next;
        if (io->kind == BLITZ_BACKEND_POLL)
            blitz__pollb_forget(io, s);
        blitz__sock_free_mem(s);
        s = next;
    }
}

static void blitz__sock_ref(blitz_socket *s) {
    blitz__u32_fetch_add(&s->refs, 1, BLITZ__RELAXED);
}

/* The last reference: close the descriptor; the memory goes now
 * (io_uring) or at the next dispatch cycle (readiness backends). */
static void blitz__sock_unref(blitz_socket *s) {
    if (blitz__u32_fetch_sub(&s->refs, 1, BLITZ__ACQ_REL) != 1)
        return;
    blitz__io *io = s->io;
    if (io->kind == BLITZ_BACKEND_EPOLL)
        blitz__epoll_del(io, s);
    if (io->kind == BLITZ_BACKEND_POLL)
        blitz__pollb_forget(io, s);
    /* The number may be reused at once; an event already fetched for it
     * only bumps this (closed) socket's sequence numbers. */
    close(s->fd);
    blitz__u32_fetch_sub(&io->nsocks, 1, BLITZ__RELAXED);
    blitz__mutex_lock(&io->socks_lock);
    if (s->all_prev)
        s->all_prev->all_next = s->all_next;
    else
        io->all = s->all_next;
    if (s->all_next)
        s->all_next->all_prev = s->all_prev;
    if (io->kind == BLITZ_BACKEND_IO_URING) {
        blitz__mutex_unlock(&io->socks_lock);
        blitz__sock_free_mem(s);
        return;
    }
    s->free_next = io->free_list;
    io->free_list = s;
    blitz__u32_store(&io->has_free, 1, BLITZ__RELAXED);
    blitz__mutex_unlock(&io->socks_lock);
}

/* Wraps a non-blocking descriptor (closed on failure). */
BLITZ_PRIVATE int blitz__sock_wrap(blitz__io *io, int fd, int family, int type,
                                   blitz_socket **out) {
    *out = NULL;
    if (!io) {
        close(fd);
        return BLITZ_ENOSYS;
    }
    blitz_socket *s = (blitz_socket *)blitz__calloc(sizeof *s);
    if (!s) {
        close(fd);
        return BLITZ_ENOMEM;
    }
    s->fd = fd;
    s->family = family;
    s->type = type;
    s->io = io;
    s->poll_slot = -1;
    blitz__mutex_init(&s->lock);
    blitz__u32_store(&s->refs, 1, BLITZ__RELAXED);
    if (io->kind == BLITZ_BACKEND_EPOLL) {
        int rc = blitz__epoll_add(io, s);
        if (rc != BLITZ_OK) {
            close(fd);
            blitz__sock_free_mem(s);
            return rc;
        }
    }
    blitz__u32_fetch_add(&io->nsocks, 1, BLITZ__RELAXED);
    blitz__mutex_lock(&io->socks_lock);
    s->all_next = io->all;
    if (io->all)
        io->all->all_prev = s;
    io->all = s;
    blitz__mutex_unlock(&io->socks_lock);
    *out = s;
    return BLITZ_OK;
}

/* ---- system calls of the readiness path --------------------------------------- */

static int64_t blitz__neg_errno(void) {
    return errno ? -(int64_t)errno : BLITZ_EIO;
}

static void blitz__op_msghdr(blitz_io *op, struct msghdr *m, struct iovec *one) {
    memset(m, 0, sizeof *m);
    if (op->blitz__kind == BLITZ__OP_RECVV || op->blitz__kind == BLITZ__OP_SENDV) {
        m->msg_iov = (struct iovec *)op->blitz__buf;
        m->msg_iovlen = op->blitz__len;
    } else {
        one->iov_base = op->blitz__buf;
        one->iov_len = op->blitz__len;
        m->msg_iov = one;
        m->msg_iovlen = 1;
    }
    if (op->blitz__addr) {
        m->msg_name = op->blitz__addr->u.bytes;
        m->msg_namelen = op->blitz__kind == BLITZ__OP_SEND_TO ? op->blitz__addr->len
                                                               : sizeof op->blitz__addr->u.bytes;
    }
}

/* One non-blocking attempt: bytes, a new descriptor (accept), 0 (connect),
 * or -errno. */
static int64_t blitz__op_syscall(blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    ssize_t r;
    errno = 0;
    switch (op->blitz__kind) {
    case BLITZ__OP_RECV:
        r = recv(s->fd, op->blitz__buf, op->blitz__len, 0);
        break;
    case BLITZ__OP_SEND:
    case BLITZ__OP_SEND_ALL:
        r = send(s->fd, (char *)op->blitz__buf + op->blitz__done,
                 op->blitz__len - op->blitz__done, MSG_NOSIGNAL | MSG_DONTWAIT);
        break;
    case BLITZ__OP_RECVV:
    case BLITZ__OP_RECV_FROM: {
        struct msghdr m;
        struct iovec one;
        blitz__op_msghdr(op, &m, &one);
        r = recvmsg(s->fd, &m, MSG_DONTWAIT);
        if (r >= 0 && op->blitz__addr)
            op->blitz__addr->len = m.msg_namelen;
        break;
    }
    case BLITZ__OP_SENDV:
    case BLITZ__OP_SEND_TO: {
        struct msghdr m;
        struct iovec one;
        blitz__op_msghdr(op, &m, &one);
        r = sendmsg(s->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        break;
    }
    case BLITZ__OP_ACCEPT:
        r = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        break;
    case BLITZ__OP_CONNECT: {
        const blitz_addr *a = (const blitz_addr *)(void *)op->blitz__scratch;
        if (!(op->blitz__flags & BLITZ__OPF_CONNECTING)) {
            r = connect(s->fd, (const struct sockaddr *)(const void *)a->u.bytes, a->len);
            if (r < 0 && errno == EINPROGRESS) {
                op->blitz__flags |= BLITZ__OPF_CONNECTING;
                return -EAGAIN;
            }
            break;
        }
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
            return blitz__neg_errno();
        if (err)
            return -(int64_t)err;
        struct sockaddr_storage peer;
        socklen_t pl = sizeof peer;
        if (getpeername(s->fd, (struct sockaddr *)&peer, &pl) < 0)
            return errno == ENOTCONN ? -EAGAIN : blitz__neg_errno();
        return 0;
    }
    default:
        return BLITZ_EINVAL;
    }
    if (r < 0) {
        if (errno == EWOULDBLOCK)
            return -EAGAIN;
        return blitz__neg_errno();
    }
    return (int64_t)r;
}

/* ---- finishing an op ------------------------------------------------------------- */

static void blitz__connect_sock_drop(blitz_io *op) {
    if (op->blitz__kind == BLITZ__OP_CONNECT && op->blitz__sock) {
        blitz_socket *s = op->blitz__sock;
        op->blitz__sock = NULL;
        blitz_sock_close(s);
    }
}

/* A result for `op` (attempt or completion). Returns 1 when the op is
 * finished (result set, op idle), 0 when it must go on (send_all). */
static int blitz__op_result_ex(blitz_io *op, int64_t r, int live);
/* A result of an attempt by the task itself (the socket is in use). */
static int blitz__op_result(blitz_io *op, int64_t r) {
    return blitz__op_result_ex(op, r, 1);
}

/* `live`: the caller is using the socket. A completion delivered by the
 * driver (DONE) is consumed without touching the socket, which may be
 * closed and freed by now. */
static int blitz__op_result_ex(blitz_io *op, int64_t r, int live) {
    switch (op->blitz__kind) {
    case BLITZ__OP_SEND_ALL:
        if (r > 0) {
            op->blitz__done += (size_t)r;
            if (op->blitz__done < op->blitz__len)
                return 0;
            r = (int64_t)op->blitz__done;
        } else if (r == 0 && op->blitz__done < op->blitz__len) {
            return 0;
        }
        break;
    case BLITZ__OP_ACCEPT:
        if (r >= 0) {
            /* The listener's driver and family were noted at the start. */
            blitz_socket *ns = NULL;
            int rc = blitz__sock_wrap((blitz__io *)(uintptr_t)op->blitz__scratch[0], (int)r,
                                      (int)op->blitz__scratch[1], SOCK_STREAM, &ns);
            op->socket = ns;
            r = rc;
        }
        break;
    case BLITZ__OP_CONNECT:
        if (r == 0) {
            op->socket = op->blitz__sock;
            op->blitz__sock = NULL;
        } else {
            blitz__connect_sock_drop(op);
        }
        break;
    case BLITZ__OP_RECV:
        if (live)
            blitz__u32_store(&op->blitz__sock->rd_hot, r > 0 && (size_t)r == op->blitz__len,
                             BLITZ__RELAXED);
        break;
    default:
        break;
    }
    op->result = r;
    blitz__op_set_state(op, BLITZ__IO_IDLE);
    return 1;
}

/* ---- the readiness path ------------------------------------------------------------- */

static blitz_poll blitz__ready_attempt(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__atomic_u32 *seqp = op->blitz__dir == BLITZ__DIR_WRITE ? &s->wr_seq : &s->rd_seq;
    for (;;) {
        uint32_t seq0 = blitz__u32_load(seqp, BLITZ__ACQUIRE);
        int64_t r = blitz__op_syscall(op);
        if (r == -EINTR)
            continue;
        if (r != -EAGAIN) {
            if (blitz__op_result(op, r))
                return BLITZ_READY;
            continue;
        }
        blitz__mutex_lock(&s->lock);
        if (s->closed) {
            blitz__mutex_unlock(&s->lock);
            blitz__op_result(op, BLITZ_ECLOSED);
            return BLITZ_READY;
        }
        if (blitz__u32_load(seqp, BLITZ__RELAXED) != seq0) {
            blitz__mutex_unlock(&s->lock);
            continue;
        }
        blitz_waker mine = blitz_cx_waker(cx);
        op->blitz__waker = blitz_waker_clone(&mine);
        blitz__op_set_state(op, BLITZ__IO_WAIT);
        blitz__op_link(s, op);
        if (s->io->kind == BLITZ_BACKEND_POLL) {
            uint32_t bit = 1u << op->blitz__dir;
            if (!(blitz__u32_load(&s->want, BLITZ__RELAXED) & bit)) {
                blitz__u32_fetch_or(&s->want, bit, BLITZ__SEQ_CST);
                blitz__pollb_want(s->io, s);
            }
        }
        blitz__mutex_unlock(&s->lock);
        return BLITZ_PENDING;
    }
}

/* Polled again while registered: keep (or refresh) the waker. */
/* The op's own lock (a spin bit) guards the waker and state of an
 * io_uring op between submission and completion, so the task, a cancel
 * and the completing thread never need the socket, which may be closed
 * and freed as soon as the completion is delivered. Order: socket lock,
 * then op lock, then sq_lock. */
static void blitz__op_lock(blitz_io *op) {
    for (;;) {
        uint32_t v = 0;
        if (blitz__u32_field_cas(&op->blitz__lock, &v, 1u, BLITZ__ACQUIRE))
            return;
        while (blitz__u32_field_load(&op->blitz__lock, BLITZ__RELAXED))
            blitz__cpu_relax();
    }
}
static void blitz__op_unlock(blitz_io *op) {
    blitz__u32_field_store(&op->blitz__lock, 0u, BLITZ__RELEASE);
}

static blitz_poll blitz__op_rewait(blitz_cx *cx, blitz_io *op) {
    blitz_waker mine = blitz_cx_waker(cx), old = blitz_waker_noop();
    uint32_t st0 = blitz__op_state(op);
    if (st0 == BLITZ__IO_INFLIGHT || st0 == BLITZ__IO_CANCELLING) {
        blitz__op_lock(op);
        uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
        int waiting = st == BLITZ__IO_INFLIGHT || st == BLITZ__IO_CANCELLING;
        if (waiting && !blitz_waker_will_wake(&op->blitz__waker, &mine)) {
            old = op->blitz__waker;
            op->blitz__waker = blitz_waker_clone(&mine);
        }
        blitz__op_unlock(op);
        blitz_waker_drop(old);
        return waiting ? BLITZ_PENDING : BLITZ_READY;
    }
    if (st0 != BLITZ__IO_WAIT)
        return BLITZ_READY;
    blitz_socket *s = op->blitz__sock;
    blitz__mutex_lock(&s->lock);
    uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
    int waiting = st == BLITZ__IO_WAIT || st == BLITZ__IO_INFLIGHT || st == BLITZ__IO_CANCELLING;
    if (waiting && !blitz_waker_will_wake(&op->blitz__waker, &mine)) {
        old = op->blitz__waker;
        op->blitz__waker = blitz_waker_clone(&mine);
    }
    blitz__mutex_unlock(&s->lock);
    blitz_waker_drop(old);
    return waiting ? BLITZ_PENDING : BLITZ_READY;
}

/* An event on `s`: bump the sequence numbers, wake the waiters of those
 * directions. Any thread. */
BLITZ_PRIVATE void blitz__io_ready(blitz_socket *s, int rd, int wr) {
    uint32_t mask = (rd ? 1u : 0u) | (wr ? 2u : 0u);
    if (!mask)
        return;
    int bumped = 0;
    for (;;) {
        blitz_waker batch[16];
        int n = 0, more = 0;
        blitz__mutex_lock(&s->lock);
        if (!bumped) {
            if (mask & 1u)
                blitz__u32_store(&s->rd_seq, blitz__u32_load(&s->rd_seq, BLITZ__RELAXED) + 1,
                                 BLITZ__RELEASE);
            if (mask & 2u)
                blitz__u32_store(&s->wr_seq, blitz__u32_load(&s->wr_seq, BLITZ__RELAXED) + 1,
                                 BLITZ__RELEASE);
            bumped = 1;
        }
        uint32_t want = 0;
        blitz_io *op = s->ops;
        while (op) {
            blitz_io *next = op->blitz__next;
            uint32_t bit = 1u << op->blitz__dir;
            if ((mask & bit) && !more) {
                if (n == 16) {
                    more = 1;
                    want |= bit;
                } else {
                    blitz__op_unlink(s, op);
                    batch[n++] = op->blitz__waker;
                    op->blitz__waker = blitz_waker_noop();
                    blitz__op_set_state(op, BLITZ__IO_RETRY);
                }
            } else {
                want |= bit;
            }
            op = next;
        }
        if (s->io->kind == BLITZ_BACKEND_POLL)
            blitz__u32_store(&s->want, want, BLITZ__RELAXED);
        blitz__mutex_unlock(&s->lock);
        for (int i = 0; i < n; i++)
            blitz__io_wake(s->io, batch[i]);
        if (!more)
            return;
    }
}

/* ---- the io_uring path ------------------------------------------------------------------ */

/* Whether the calling thread will give pending SQEs to the kernel soon (a
 * worker or the current-thread driver does at its next tick or park);
 * other threads submit at once. */
static int blitz__io_batches(blitz_runtime *rt) {
#ifdef BLITZ_URING_NO_BATCH
    /* Measurement knob: one io_uring_enter per submission. */
    (void)rt;
    return 0;
#endif
    blitz__context *ctx = blitz__context_get();
    return ctx && ctx->rt == rt && (ctx->worker || ctx->ct_driver);
}

/* Accept through the listener's multishot accept: take a connection the
 * kernel already accepted, or wait for the next one (arming it first). */
static blitz_poll blitz__uring_accept_ms(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__io *io = s->io;
    blitz__mutex_lock(&s->lock);
    int64_t r = 1;
    if (s->closed) {
        r = BLITZ_ECLOSED;
    } else if (s->ms_count) {
        r = s->ms_fds[s->ms_head];
        s->ms_head = (s->ms_head + 1) % s->ms_cap;
        s->ms_count--;
    } else if (s->ms_err) {
        r = s->ms_err;
        s->ms_err = 0;
    }
    if (r != 1) {
        blitz__mutex_unlock(&s->lock);
        blitz__op_result(op, r);
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    op->blitz__waker = blitz_waker_clone(&mine);
    blitz__op_set_state(op, BLITZ__IO_WAIT);
    blitz__op_link(s, op);
    if (!s->ms_armed) {
        if (blitz__uring_arm_accept(io, s) == BLITZ_OK) {
            s->ms_armed = 1;
            blitz__sock_ref(s);
            blitz__u64_fetch_add(&io->inflight, 1, BLITZ__RELAXED);
        } else {
            blitz__op_unlink(s, op);
            blitz_waker w = op->blitz__waker;
            op->blitz__waker = blitz_waker_noop();
            blitz__mutex_unlock(&s->lock);
            blitz_waker_drop(w);
            blitz__op_result(op, BLITZ_EBUSY);
            return BLITZ_READY;
        }
    }
    blitz__mutex_unlock(&s->lock);
    return BLITZ_PENDING;
}

/* A CQE of a listener's multishot accept. Dispatching thread. */
BLITZ_PRIVATE void blitz__io_accept_ms(blitz__io *io, blitz_socket *s, int32_t res,
                                       uint32_t flags) {
    blitz_waker w = blitz_waker_noop();
    int ended = !(flags & IORING_CQE_F_MORE);
    blitz__mutex_lock(&s->lock);
    if (ended)
        s->ms_armed = 0;
    blitz_io *waiter = NULL;
    for (blitz_io *op = s->ops; op; op = op->blitz__next)
        if (op->blitz__kind == BLITZ__OP_ACCEPT &&
            blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_WAIT) {
            waiter = op;
            break;
        }
    if (res == -ECANCELED && !s->closed && !blitz__u32_load(&io->shutdown, BLITZ__RELAXED))
        res = -EAGAIN; /* not ours: re-armed by the next accept */
    if (waiter && res != -EAGAIN) {
        blitz__op_unlink(s, waiter);
        w = waiter->blitz__waker;
        waiter->blitz__waker = blitz_waker_noop();
        waiter->blitz__res = (res == -ECANCELED && s->closed) ? BLITZ_ECLOSED : res;
        blitz__op_set_state(waiter, BLITZ__IO_DONE);
    } else if (res >= 0) {
        if (s->closed) {
            close(res);
        } else {
            if (s->ms_count == s->ms_cap) {
                uint32_t cap = s->ms_cap ? s->ms_cap * 2 : 16;
                int *q = (int *)blitz__calloc(sizeof(int) * cap);
                if (q) {
                    for (uint32_t i = 0; i < s->ms_count; i++)
                        q[i] = s->ms_fds[(s->ms_head + i) % s->ms_cap];
                    blitz__free(s->ms_fds);
                    s->ms_fds = q;
                    s->ms_head = 0;
                    s->ms_cap = cap;
                }
            }
            if (s->ms_count < s->ms_cap) {
                s->ms_fds[(s->ms_head + s->ms_count) % s->ms_cap] = res;
                s->ms_count++;
            } else {
                close(res);
            }
        }
    } else if (res != -EAGAIN && res != -ECANCELED) {
        s->ms_err = res;
    }
    /* Ended with someone still waiting (an error ended it, or the kernel
     * stopped it): arm again, unless closing. */
    int rearm = 0;
    if (ended && !s->closed && !blitz__u32_load(&io->shutdown, BLITZ__RELAXED)) {
        for (blitz_io *op = s->ops; op; op = op->blitz__next)
            if (op->blitz__kind == BLITZ__OP_ACCEPT)
                rearm = 1;
        if (rearm && blitz__uring_arm_accept(io, s) == BLITZ_OK)
            s->ms_armed = 1;
        else
            rearm = 0;
    }
    blitz__mutex_unlock(&s->lock);
    if (ended && !rearm) {
        blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELEASE);
        blitz__sock_unref(s);
    }
    blitz__io_wake(io, w);
}

static blitz_poll blitz__uring_start(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__io *io = s->io;
    uint32_t k = op->blitz__kind;
    if (k == BLITZ__OP_ACCEPT && io->ms_accept)
        return blitz__uring_accept_ms(cx, op);
    /* A send into a socket with room completes at once: one system call,
     * no completion to wait for. */
    /* A receive right after one that filled its buffer (a bulk stream)
     * finds data waiting: the system call beats a submission round trip. */
    int hot = (k == BLITZ__OP_RECV || k == BLITZ__OP_RECVV || k == BLITZ__OP_RECV_FROM) &&
              blitz__u32_load(&s->rd_hot, BLITZ__RELAXED);
    if (hot || k == BLITZ__OP_SEND || k == BLITZ__OP_SEND_ALL || k == BLITZ__OP_SENDV ||
        k == BLITZ__OP_SEND_TO) {
        for (;;) {
            int64_t r = blitz__op_syscall(op);
            if (r == -EINTR)
                continue;
            if (r == -EAGAIN) {
                if (hot)
                    blitz__u32_store(&s->rd_hot, 0, BLITZ__RELAXED);
                break;
            }
            if (blitz__op_result(op, r))
                return BLITZ_READY;
        }
    }
    blitz__mutex_lock(&s->lock);
    if (s->closed) {
        blitz__mutex_unlock(&s->lock);
        blitz__op_result(op, BLITZ_ECLOSED);
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    op->blitz__waker = blitz_waker_clone(&mine);
    op->blitz__flags |= BLITZ__OPF_URING;
    blitz__op_set_state(op, BLITZ__IO_INFLIGHT);
    blitz__op_link(s, op);
    blitz__sock_ref(s);
    blitz__u64_fetch_add(&io->inflight, 1, BLITZ__RELAXED);
    /* Under the socket's lock, so a close's ASYNC_CANCEL comes after it. */
    int rc = blitz__uring_submit_op(io, op, !blitz__io_batches(io->rt));
    if (rc != BLITZ_OK) {
        blitz__op_unlink(s, op);
        blitz_waker w = op->blitz__waker;
        op->blitz__waker = blitz_waker_noop();
        blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELAXED);
        blitz__mutex_unlock(&s->lock);
        blitz_waker_drop(w);
        blitz__sock_unref(s);
        blitz__op_result(op, rc);
        return BLITZ_READY;
    }
    blitz__mutex_unlock(&s->lock);
    return BLITZ_PENDING;
}

/* A completion (io_uring CQE) for `op`. Dispatching thread. */
BLITZ_PRIVATE void blitz__io_complete(blitz__io *io, blitz_io *op, int32_t res, uint32_t flags) {
    (void)flags;
    /* Acquire: pairs with the submitter's release of INFLIGHT (the kernel
     * orders the CQE after the SQE, but a race detector cannot see it). */
    (void)blitz__op_state(op);
    blitz_socket *s = op->blitz__sock;
    int is_connect = op->blitz__kind == BLITZ__OP_CONNECT;
    blitz__mutex_lock(&s->lock);
    blitz__op_unlink(s, op);
    int closed = s->closed;
    if (op->blitz__kind == BLITZ__OP_RECV && res >= 0)
        blitz__u32_store(&s->rd_hot, res > 0 && (size_t)res == op->blitz__len, BLITZ__RELAXED);
    blitz__op_lock(op);
    blitz_waker w = op->blitz__waker;
    op->blitz__waker = blitz_waker_noop();
    uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
    if (st == BLITZ__IO_CANCELLING) {
        /* Nobody waits for the result. */
        if (op->blitz__kind == BLITZ__OP_ACCEPT && res >= 0)
            close(res);
        op->blitz__res = res;
        if (op->blitz__kind == BLITZ__OP_CONNECT)
            op->blitz__sock = NULL; /* closed below */
        blitz__op_set_state(op, BLITZ__IO_IDLE);
    } else {
        op->blitz__res = (res == -ECANCELED && closed) ? BLITZ_ECLOSED : res;
        blitz__op_set_state(op, BLITZ__IO_DONE);
    }
    blitz__op_unlock(op);
    blitz__mutex_unlock(&s->lock);
    /* From here on the op belongs to its task again: no more access. */
    if (is_connect && st == BLITZ__IO_CANCELLING)
        blitz_sock_close(s); /* the op's own reference */
    blitz__sock_unref(s);
    blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELEASE);
    blitz__io_wake(io, w);
}

/* ---- ops ------------------------------------------------------------------------------------ */

static blitz_poll blitz__op_go(blitz_cx *cx, blitz_io *op) {
    if (op->blitz__sock->io->kind == BLITZ_BACKEND_IO_URING)
        return blitz__uring_start(cx, op);
    return blitz__ready_attempt(cx, op);
}

/* The common poll of every op kind. */
static blitz_poll blitz__op_poll(blitz_cx *cx, blitz_io *op, blitz_socket *s, uint32_t kind,
                                 const void *buf, size_t len, const blitz_addr *addr,
                                 uint32_t dir) {
    if (!op)
        return BLITZ_READY;
    switch (blitz__op_state(op)) {
    case BLITZ__IO_IDLE:
        if (!cx || !s || (!buf && len)) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        op->blitz__sock = s;
        op->blitz__kind = kind;
        op->blitz__buf = (void *)(uintptr_t)buf;
        op->blitz__len = len;
        op->blitz__addr = (blitz_addr *)(uintptr_t)addr;
        op->blitz__dir = dir;
        op->blitz__done = 0;
        op->blitz__flags = 0;
        op->socket = NULL;
        op->result = 0;
        if (kind == BLITZ__OP_ACCEPT) {
            op->blitz__scratch[0] = (uint64_t)(uintptr_t)s->io;
            op->blitz__scratch[1] = (uint64_t)s->family;
        }
        return blitz__op_go(cx, op);
    case BLITZ__IO_RETRY:
        return blitz__ready_attempt(cx, op);
    case BLITZ__IO_DONE:
        if (op->blitz__kind == BLITZ__OP_RECV_FROM && op->blitz__addr && op->blitz__res >= 0 &&
            (op->blitz__flags & BLITZ__OPF_URING))
            op->blitz__addr->len = ((struct msghdr *)(void *)op->blitz__scratch)->msg_namelen;
        if (blitz__op_result_ex(op, op->blitz__res, 0))
            return BLITZ_READY;
        return blitz__op_go(cx, op); /* send_all: the rest */
    case BLITZ__IO_CANCELLING:
        /* A cancelled op's completion is still due: wait for it, then
         * start the new one. */
        if (blitz__op_rewait(cx, op) == BLITZ_PENDING)
            return BLITZ_PENDING;
        return blitz__op_poll(cx, op, s, kind, buf, len, addr, dir);
    default: /* WAIT, INFLIGHT */
        if (blitz__op_rewait(cx, op) == BLITZ_PENDING)
            return BLITZ_PENDING;
        return blitz__op_poll(cx, op, s, kind, buf, len, addr, dir);
    }
}

BLITZ_API int blitz_io_cancel(blitz_io *op) {
    if (!op)
        return BLITZ_EINVAL;
    uint32_t st = blitz__op_state(op);
    if (st == BLITZ__IO_IDLE || st == BLITZ__IO_CANCELLING)
        return BLITZ_OK;
    if (st == BLITZ__IO_RETRY || st == BLITZ__IO_DONE) {
        if (st == BLITZ__IO_DONE && op->blitz__kind == BLITZ__OP_ACCEPT && op->blitz__res >= 0)
            close((int)op->blitz__res);
        if (st == BLITZ__IO_DONE && op->blitz__kind == BLITZ__OP_CONNECT)
            op->blitz__res = BLITZ_ECANCELED; /* drop below closes the socket */
        if (op->blitz__kind == BLITZ__OP_CONNECT)
            blitz__connect_sock_drop(op);
        op->result = BLITZ_ECANCELED;
        blitz__op_set_state(op, BLITZ__IO_IDLE);
        return BLITZ_OK;
    }
    if (st == BLITZ__IO_INFLIGHT) {
        /* Under the op's lock: while it is INFLIGHT the completion has not
         * been taken, so the socket (and its driver) are still alive. The
         * kernel keeps the buffer until the completion: the op keeps its
         * waker (the task's memory) until then. */
        blitz__op_lock(op);
        if (blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_INFLIGHT) {
            blitz__op_set_state(op, BLITZ__IO_CANCELLING);
            blitz__uring_submit_cancel(op->blitz__sock->io, op);
            blitz__op_unlock(op);
            op->result = BLITZ_ECANCELED;
            return BLITZ_OK;
        }
        blitz__op_unlock(op);
        /* Completed meanwhile: consume the result as for DONE below. */
        return blitz_io_cancel(op);
    }
    blitz_socket *s = op->blitz__sock;
    blitz_waker old = blitz_waker_noop();
    int drop_connect = 0;
    blitz__mutex_lock(&s->lock);
    st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
    if (st == BLITZ__IO_WAIT) {
        blitz__op_unlink(s, op);
        old = op->blitz__waker;
        op->blitz__waker = blitz_waker_noop();
        blitz__op_set_state(op, BLITZ__IO_IDLE);
        drop_connect = op->blitz__kind == BLITZ__OP_CONNECT;
    }
    blitz__mutex_unlock(&s->lock);
    blitz_waker_drop(old);
    if (drop_connect)
        blitz__connect_sock_drop(op);
    else if (st == BLITZ__IO_RETRY || st == BLITZ__IO_DONE)
        blitz__op_set_state(op, BLITZ__IO_IDLE);
    op->result = BLITZ_ECANCELED;
    return BLITZ_OK;
}

BLITZ_API void blitz_io_cancel_op(blitz_cx *cx, void *op) {
    (void)cx;
    blitz_io_cancel((blitz_io *)op);
}

BLITZ_API blitz_poll blitz_io_settle(blitz_cx *cx, blitz_io *op) {
    if (!op || blitz__op_state(op) != BLITZ__IO_CANCELLING)
        return BLITZ_READY;
    if (!cx)
        return BLITZ_PENDING;
    return blitz__op_rewait(cx, op);
}

BLITZ_API int blitz_io_pending(const blitz_io *op) {
    if (!op)
        return 0;
    uint32_t st = blitz__op_state(op);
    return st == BLITZ__IO_WAIT || st == BLITZ__IO_INFLIGHT || st == BLITZ__IO_CANCELLING;
}

BLITZ_API blitz_poll blitz_sock_recv(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                     size_t len) {
    return blitz__op_poll(cx, op, s, BLITZ__OP_RECV, buf, len, NULL, BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_sock_send(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                     const void *buf, size_t len) {
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND, buf, len, NULL, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_send_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                         const void *buf, size_t len) {
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND_ALL, buf, len, NULL, BLITZ__DIR_WRITE);
}
static int blitz__iov_ok(const blitz_iovec *iov, int n) {
    return iov && n > 0 && n <= BLITZ__IO_MAX_IOV;
}
BLITZ_API blitz_poll blitz_sock_recvv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt) {
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__iov_ok(iov, iovcnt)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_RECVV, iov, (size_t)iovcnt, NULL,
                          BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_sock_sendv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt) {
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__iov_ok(iov, iovcnt)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_SENDV, iov, (size_t)iovcnt, NULL,
                          BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_udp_send_to(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                       const void *buf, size_t len, const blitz_addr *to) {
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && (!to || !to->len)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND_TO, buf, len, to, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_udp_recv_from(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                         size_t len, blitz_addr *from) {
    return blitz__op_poll(cx, op, s, from ? BLITZ__OP_RECV_FROM : BLITZ__OP_RECV, buf, len, from,
                          BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_tcp_accept(blitz_cx *cx, blitz_io *op, blitz_socket *listener) {
    return blitz__op_poll(cx, op, listener, BLITZ__OP_ACCEPT, NULL, 0, NULL, BLITZ__DIR_READ);
}

/* Connect: the op owns a fresh socket until it is connected. */
static blitz_poll blitz__connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr, int family) {
    if (!op)
        return BLITZ_READY;
    if (blitz__op_state(op) != BLITZ__IO_IDLE)
        return blitz__op_poll(cx, op, op->blitz__sock, BLITZ__OP_CONNECT, NULL, 0, NULL,
                              BLITZ__DIR_WRITE);
    op->socket = NULL;
    if (!cx || !addr || addr->len == 0 || addr->len > sizeof addr->u.bytes ||
        (family && addr->u.family != family) ||
        (!family && addr->u.family != AF_INET && addr->u.family != AF_INET6)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__io *io = cx->ctx->rt->io;
    int fd = socket(addr->u.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        op->result = blitz__neg_errno();
        return BLITZ_READY;
    }
    blitz_socket *s = NULL;
    int rc = blitz__sock_wrap(io, fd, addr->u.family, SOCK_STREAM, &s);
    if (rc != BLITZ_OK) {
        op->result = rc;
        return BLITZ_READY;
    }
    _Static_assert(sizeof(((blitz_io *)0)->blitz__scratch) >= sizeof(blitz_addr),
                   "connect keeps the address in the op");
    memcpy(op->blitz__scratch, addr, sizeof *addr);
    op->blitz__sock = s;
    op->blitz__kind = BLITZ__OP_CONNECT;
    op->blitz__buf = NULL;
    op->blitz__len = 0;
    op->blitz__addr = NULL;
    op->blitz__dir = BLITZ__DIR_WRITE;
    op->blitz__done = 0;
    op->blitz__flags = 0;
    op->result = 0;
    return blitz__op_go(cx, op);
}

BLITZ_API blitz_poll blitz_tcp_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr) {
    return blitz__connect(cx, op, addr, 0);
}
BLITZ_API blitz_poll blitz_unix_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr) {
    return blitz__connect(cx, op, addr, AF_UNIX);
}

/* ---- close ------------------------------------------------------------------------------------ */

BLITZ_API int blitz_sock_close(blitz_socket *s) {
    if (!s)
        return BLITZ_EINVAL;
    blitz__io *io = s->io;
    blitz__mutex_lock(&s->lock);
    if (s->closed) {
        blitz__mutex_unlock(&s->lock);
        return BLITZ_ECLOSED;
    }
    s->closed = 1;
    blitz_io *op = s->ops;
    blitz_io *woken = NULL;
    while (op) {
        blitz_io *next = op->blitz__next;
        if (blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_WAIT) {
            blitz__op_unlink(s, op);
            op->blitz__res = BLITZ_ECLOSED;
            /* Chain through blitz__next (the op is out of every list). */
            op->blitz__next = woken;
            woken = op;
        } else if (io->kind == BLITZ_BACKEND_IO_URING &&
                   blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) ==
                       BLITZ__IO_INFLIGHT) {
            blitz__uring_submit_cancel(io, op);
        }
        op = next;
    }
    if (s->ms_armed)
        blitz__uring_cancel_ud(io, (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS);
    if (io->kind == BLITZ_BACKEND_IO_URING && s->ops && !blitz__io_batches(io->rt))
        blitz__uring_flush(io);
    blitz_waker batch[32];
    int n = 0;
    while (woken) {
        blitz_io *next = woken->blitz__next;
        woken->blitz__next = NULL;
        if (n == 32) {
            blitz__mutex_unlock(&s->lock);
            for (int i = 0; i < n; i++)
                blitz__io_wake(io, batch[i]);
            n = 0;
            blitz__mutex_lock(&s->lock);
        }
        batch[n++] = woken->blitz__waker;
        woken->blitz__waker = blitz_waker_noop();
        blitz__op_set_state(woken, BLITZ__IO_DONE);
        woken = next;
    }
    blitz__u32_store(&s->want, 0, BLITZ__RELAXED);
    blitz__mutex_unlock(&s->lock);
    for (int i = 0; i < n; i++)
        blitz__io_wake(io, batch[i]);
    blitz__sock_unref(s);
    return BLITZ_OK;
}

/* ---- waiting in the backend -------------------------------------------------------------- */

BLITZ_PRIVATE void blitz__io_drain_wake_fd(blitz__io *io) {
    uint64_t v;
    while (read(io->wake_fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
}

static void blitz__io_backend_wait(blitz__io *io, uint64_t timeout_ns) {
    switch (io->kind) {
    case BLITZ_BACKEND_IO_URING:
        blitz__uring_wait(io, timeout_ns);
        break;
    case BLITZ_BACKEND_EPOLL:
        blitz__epoll_wait(io, timeout_ns);
        break;
    default:
        blitz__pollb_wait(io, timeout_ns);
        break;
    }
}

static void blitz__io_backend_dispatch(blitz__io *io) {
    blitz__wake_batch_begin();
    switch (io->kind) {
    case BLITZ_BACKEND_IO_URING:
        blitz__uring_dispatch(io);
        break;
    case BLITZ_BACKEND_EPOLL:
        blitz__epoll_dispatch(io);
        break;
    default:
        blitz__pollb_dispatch(io);
        break;
    }
    blitz__wake_batch_end();
}

/* Reaps without blocking (start of a tick). A try-lock: when another
 * thread waits in or dispatches the backend, it does the work. */
BLITZ_PRIVATE void blitz__io_poll(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io)
        return;
    if (io->kind == BLITZ_BACKEND_IO_URING) {
        if (blitz__u32_load(&io->to_submit, BLITZ__RELAXED))
            blitz__uring_flush(io);
        if (!blitz__uring_cq_ready(io))
            return;
    }
    if (!blitz__mutex_trylock(&io->lock))
        return;
    blitz__io_free_deferred(io);
    blitz__io_backend_wait(io, 0);
    blitz__io_backend_dispatch(io);
    blitz__mutex_unlock(&io->lock);
}

/* Spin rounds before a worker parks. A runtime that serves sockets does
 * not spin by default: its wake-ups come from the kernel, which reaches a
 * worker parked in the backend directly, and spinning only takes CPU time
 * from the peers (measured: 10-13 us of server CPU per echo request with
 * spinning, 6-7 without, on io_uring). An explicit spin_before_park is
 * kept. */
BLITZ_PRIVATE uint32_t blitz__io_spin_rounds(blitz_runtime *rt) {
    if (!rt->spin_explicit && rt->io && blitz__u32_load(&rt->io->nsocks, BLITZ__RELAXED))
        return 0;
    return rt->spin_before_park;
}

/* Completions are waiting, known without a system call (io_uring's CQ
 * ring): a spinning worker stops spinning and reaps them. */
BLITZ_PRIVATE int blitz__io_ready_cheap(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    return io && io->kind == BLITZ_BACKEND_IO_URING && blitz__uring_cq_ready(io);
}

/* Gives pending io_uring submissions to the kernel (before a thread sleeps
 * anywhere but in the backend). */
BLITZ_PRIVATE void blitz__io_flush(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (io && io->kind == BLITZ_BACKEND_IO_URING && blitz__u32_load(&io->to_submit, BLITZ__RELAXED))
        blitz__uring_flush(io);
}

/* Parks the calling thread in the backend until an event, an unpark of
 * `p`, or timeout_ns (0: no timeout). `woke(arg)` runs after the wait and
 * before the events are dispatched (a worker leaves the parked set there,
 * so the tasks it wakes go to other workers). */
BLITZ_PRIVATE void blitz__io_park(blitz_runtime *rt, blitz__parker *p, uint64_t timeout_ns,
                                  void (*woke)(void *), void *arg) {
    blitz__io *io = rt->io;
    blitz__mutex_lock(&io->lock);
    blitz__io_free_deferred(io);
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED_DRIVER, BLITZ__ACQ_REL))
        blitz__io_backend_wait(io, timeout_ns ? timeout_ns : BLITZ__IO_FOREVER);
    blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE);
    if (woke)
        woke(arg);
    blitz__io_backend_dispatch(io);
    blitz__mutex_unlock(&io->lock);
}

/* ---- creation, shutdown ------------------------------------------------------------------- */

BLITZ_API const char *blitz_backend_name(blitz_backend b) {
    switch (b) {
    case BLITZ_BACKEND_AUTO:
        return "auto";
    case BLITZ_BACKEND_IO_URING:
        return "io_uring";
    case BLITZ_BACKEND_EPOLL:
        return "epoll";
    case BLITZ_BACKEND_POLL:
        return "poll";
    default:
        return "none";
    }
}

BLITZ_API blitz_backend blitz_runtime_backend(const blitz_runtime *rt) {
    return rt && rt->io ? rt->io->kind : BLITZ_BACKEND_NONE;
}

static int blitz__io_try(blitz__io *io, blitz_backend b) {
    io->kind = b;
    switch (b) {
    case BLITZ_BACKEND_IO_URING:
        return blitz__uring_init(io);
    case BLITZ_BACKEND_EPOLL:
        return blitz__epoll_init(io);
    case BLITZ_BACKEND_POLL:
        return blitz__pollb_init(io);
    default:
        return BLITZ_EINVAL;
    }
}

static blitz_backend blitz__backend_from_env(void) {
    const char *e = getenv("BLITZ_BACKEND");
    if (!e || !*e)
        return BLITZ_BACKEND_AUTO;
    if (!strcmp(e, "io_uring") || !strcmp(e, "uring"))
        return BLITZ_BACKEND_IO_URING;
    if (!strcmp(e, "epoll"))
        return BLITZ_BACKEND_EPOLL;
    if (!strcmp(e, "poll"))
        return BLITZ_BACKEND_POLL;
    return BLITZ_BACKEND_AUTO;
}

/* Creates rt->io. `forced`: a backend from the config that must start.
 * Without one: the environment's preference, then io_uring, epoll, poll. */
BLITZ_PRIVATE int blitz__io_create(blitz_runtime *rt, blitz_backend forced) {
    if (forced > BLITZ_BACKEND_NONE)
        return BLITZ_EINVAL;
    if (forced == BLITZ_BACKEND_NONE)
        return BLITZ_OK;
    blitz__io *io = (blitz__io *)blitz__calloc(sizeof *io);
    if (!io)
        return BLITZ_ENOMEM;
    io->rt = rt;
    io->epfd = -1;
    io->ring_fd = -1;
    blitz__mutex_init(&io->lock);
    blitz__mutex_init(&io->socks_lock);
    blitz__mutex_init(&io->poll_lock);
    blitz__mutex_init(&io->sq_lock);
    io->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int rc = io->wake_fd < 0 ? (int)blitz__neg_errno() : BLITZ_EINVAL;
    if (io->wake_fd >= 0) {
        if (forced != BLITZ_BACKEND_AUTO) {
            rc = blitz__io_try(io, forced);
        } else {
            blitz_backend order[4] = {blitz__backend_from_env(), BLITZ_BACKEND_IO_URING,
                                      BLITZ_BACKEND_EPOLL, BLITZ_BACKEND_POLL};
            for (int i = 0; i < 4 && rc != BLITZ_OK; i++)
                if (order[i] != BLITZ_BACKEND_AUTO)
                    rc = blitz__io_try(io, order[i]);
        }
    }
    if (rc != BLITZ_OK) {
        if (io->wake_fd >= 0)
            close(io->wake_fd);
        blitz__mutex_destroy(&io->lock);
        blitz__mutex_destroy(&io->socks_lock);
        blitz__mutex_destroy(&io->poll_lock);
        blitz__mutex_destroy(&io->sq_lock);
        blitz__free(io);
        /* Without a forced choice a runtime still works, without I/O. */
        return forced == BLITZ_BACKEND_AUTO ? BLITZ_OK : rc;
    }
    rt->io = io;
    if (rt->workers)
        for (uint32_t i = 0; i < rt->num_workers; i++)
            rt->workers[i].parker.wake_fd = io->wake_fd;
    if (rt->ct)
        rt->ct->parker.wake_fd = io->wake_fd;
    return BLITZ_OK;
}

/* Shutdown (no task runs any more): every op is cancelled and its waker
 * dropped; io_uring completions are awaited so the kernel holds no buffer
 * when the task blocks are freed. */
BLITZ_PRIVATE void blitz__io_shutdown(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io || blitz__u32_load(&io->shutdown, BLITZ__RELAXED))
        return;
    blitz__u32_store(&io->shutdown, 1, BLITZ__SEQ_CST);
    blitz__mutex_lock(&io->socks_lock);
    for (blitz_socket *s = io->all; s; s = s->all_next) {
        blitz__mutex_lock(&s->lock);
        blitz_io *op = s->ops;
        while (op) {
            blitz_io *next = op->blitz__next;
            uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
            if (st == BLITZ__IO_WAIT) {
                blitz__op_unlink(s, op);
                blitz_waker w = op->blitz__waker;
                op->blitz__waker = blitz_waker_noop();
                op->blitz__res = BLITZ_ESHUTDOWN;
                blitz__op_set_state(op, BLITZ__IO_DONE);
                blitz_waker_drop(w);
            } else if (st == BLITZ__IO_INFLIGHT) {
                blitz__op_lock(op);
                blitz__op_set_state(op, BLITZ__IO_CANCELLING);
                blitz__op_unlock(op);
                blitz__uring_submit_cancel(io, op);
            }
            op = next;
        }
        if (s->ms_armed)
            blitz__uring_cancel_ud(io, (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS);
        blitz__mutex_unlock(&s->lock);
    }
    blitz__mutex_unlock(&io->socks_lock);
    if (io->kind == BLITZ_BACKEND_IO_URING) {
        blitz__uring_flush(io);
        uint64_t start = blitz__now_ns();
        blitz__mutex_lock(&io->lock);
        while (blitz__u64_load(&io->inflight, BLITZ__ACQUIRE) &&
               blitz__now_ns() - start < 5000000000ull) {
            blitz__uring_wait(io, 10000000u);
            blitz__uring_dispatch(io);
            blitz__uring_flush(io);
        }
        blitz__mutex_unlock(&io->lock);
    }
}

/* Frees the driver and every socket still open. */
BLITZ_PRIVATE void blitz__io_destroy(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io)
        return;
    blitz__io_shutdown(rt);
    blitz__io_free_deferred(io);
    blitz_socket *s = io->all;
    while (s) {
        blitz_socket *next = s->all_next;
        close(s->fd);
        blitz__sock_free_mem(s);
        s = next;
    }
    io->all = NULL;
    switch (io->kind) {
    case BLITZ_BACKEND_IO_URING:
        blitz__uring_destroy(io);
        break;
    case BLITZ_BACKEND_EPOLL:
        blitz__epoll_destroy(io);
        break;
    default:
        blitz__pollb_destroy(io);
        break;
    }
    close(io->wake_fd);
    blitz__mutex_destroy(&io->lock);
    blitz__mutex_destroy(&io->socks_lock);
    blitz__mutex_destroy(&io->poll_lock);
    blitz__mutex_destroy(&io->sq_lock);
    blitz__free(io);
    rt->io = NULL;
}
/* ====[ END src/io_driver.c ]============================================== */
/* ====[ BEGIN src/io_epoll.c ]============================================= */
/* >>io_epoll */
/* The epoll backend: every socket is registered once, edge-triggered, for
 * both directions (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET), with the
 * socket as the event's data; an event bumps the socket's sequence numbers
 * and wakes the waiters of its directions (io_driver.c). The driver's
 * eventfd is registered level-triggered with NULL data. */
/* internal.h already included */
/* io_internal.h already included */

#if !defined(BLITZ_NO_EPOLL)

BLITZ_PRIVATE int blitz__epoll_init(blitz__io *io) {
    io->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (io->epfd < 0)
        return blitz__from_errno(errno);
    io->events = (struct epoll_event *)blitz__calloc(sizeof(struct epoll_event) * BLITZ__IO_EVENTS);
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = NULL;
    if (!io->events || epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->wake_fd, &ev) < 0) {
        int rc = io->events ? blitz__from_errno(errno) : BLITZ_ENOMEM;
        blitz__free(io->events);
        io->events = NULL;
        close(io->epfd);
        io->epfd = -1;
        return rc;
    }
    return BLITZ_OK;
}

BLITZ_PRIVATE void blitz__epoll_destroy(blitz__io *io) {
    if (io->epfd >= 0)
        close(io->epfd);
    io->epfd = -1;
    blitz__free(io->events);
    io->events = NULL;
}

BLITZ_PRIVATE int blitz__epoll_add(blitz__io *io, blitz_socket *s) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = s;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0)
        return blitz__from_errno(errno);
    return BLITZ_OK;
}

BLITZ_PRIVATE void blitz__epoll_del(blitz__io *io, blitz_socket *s) {
    if (s->fd >= 0)
        epoll_ctl(io->epfd, EPOLL_CTL_DEL, s->fd, NULL);
}

/* Caller holds io->lock. timeout_ns: 0 = do not block, BLITZ__IO_FOREVER. */
BLITZ_PRIVATE void blitz__epoll_wait(blitz__io *io, uint64_t timeout_ns) {
    int ms;
    if (timeout_ns == BLITZ__IO_FOREVER)
        ms = -1;
    else if (timeout_ns == 0)
        ms = 0;
    else {
        /* Round up: waking early only to sleep again costs a wake-up. */
        uint64_t m = (timeout_ns + 999999u) / 1000000u;
        ms = m > INT_MAX ? INT_MAX : (int)m;
    }
    int n = epoll_wait(io->epfd, io->events, BLITZ__IO_EVENTS, ms);
    io->nevents = n < 0 ? 0 : n;
}

BLITZ_PRIVATE void blitz__epoll_dispatch(blitz__io *io) {
    int n = io->nevents;
    io->nevents = 0;
    for (int i = 0; i < n; i++) {
        struct epoll_event *e = &io->events[i];
        blitz_socket *s = (blitz_socket *)e->data.ptr;
        if (!s) {
            blitz__io_drain_wake_fd(io);
            continue;
        }
        uint32_t ev = e->events;
        int rd = (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI)) != 0;
        int wr = (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
        blitz__io_ready(s, rd, wr);
    }
}

#else

BLITZ_PRIVATE int blitz__epoll_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__epoll_destroy(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__epoll_add(blitz__io *io, blitz_socket *s) {
    (void)io;
    (void)s;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__epoll_del(blitz__io *io, blitz_socket *s) {
    (void)io;
    (void)s;
}
BLITZ_PRIVATE void blitz__epoll_wait(blitz__io *io, uint64_t timeout_ns) {
    (void)io;
    (void)timeout_ns;
}
BLITZ_PRIVATE void blitz__epoll_dispatch(blitz__io *io) {
    (void)io;
}

#endif
/* ====[ END src/io_epoll.c ]=============================================== */
/* ====[ BEGIN src/io_poll.c ]============================================== */
/* >>io_poll */
/* The poll backend, the portable fallback. Level-triggered, so only the
 * directions that have waiters are polled: a socket joins the poll set
 * when an op registers a waiter (its `want` bits) and leaves it when a
 * wait cycle finds it without waiters. A thread blocked in poll() is
 * kicked through the eventfd when a socket joins. */
/* internal.h already included */
/* io_internal.h already included */

#if !defined(BLITZ_NO_POLL)

BLITZ_PRIVATE int blitz__pollb_init(blitz__io *io) {
    io->pcap = 64;
    io->pset = (blitz_socket **)blitz__calloc(sizeof(blitz_socket *) * io->pcap);
    io->pfd_cap = 65;
    io->pfds = (struct pollfd *)blitz__calloc(sizeof(struct pollfd) * io->pfd_cap);
    io->psocks = (blitz_socket **)blitz__calloc(sizeof(blitz_socket *) * io->pfd_cap);
    if (!io->pset || !io->pfds || !io->psocks) {
        blitz__free(io->pset);
        blitz__free(io->pfds);
        blitz__free(io->psocks);
        io->pset = NULL;
        io->pfds = NULL;
        io->psocks = NULL;
        return BLITZ_ENOMEM;
    }
    return BLITZ_OK;
}

BLITZ_PRIVATE void blitz__pollb_destroy(blitz__io *io) {
    blitz__free(io->pset);
    blitz__free(io->pfds);
    blitz__free(io->psocks);
    io->pset = NULL;
    io->pfds = NULL;
    io->psocks = NULL;
}

static int blitz__pollb_grow(void **p, uint32_t *cap, size_t elem, uint32_t need) {
    if (need <= *cap)
        return 1;
    uint32_t n = *cap * 2;
    while (n < need)
        n *= 2;
    void *q = blitz__calloc(elem * n);
    if (!q)
        return 0;
    memcpy(q, *p, elem * *cap);
    blitz__free(*p);
    *p = q;
    *cap = n;
    return 1;
}

/* A socket got a waiter (caller holds its lock, `want` already set). */
BLITZ_PRIVATE void blitz__pollb_want(blitz__io *io, blitz_socket *s) {
    blitz__mutex_lock(&io->poll_lock);
    if (s->poll_slot < 0) {
        if (blitz__pollb_grow((void **)&io->pset, &io->pcap, sizeof(blitz_socket *),
                              io->pcount + 1)) {
            s->poll_slot = (int)io->pcount;
            io->pset[io->pcount++] = s;
        }
    }
    blitz__mutex_unlock(&io->poll_lock);
    /* Seq_cst pairs with the poller's announcement before it builds its
     * set: either it sees this socket or this side sees it blocked. */
    if (blitz__u32_load(&io->poll_blocked, BLITZ__SEQ_CST)) {
        uint64_t one = 1;
        ssize_t r = write(io->wake_fd, &one, sizeof one);
        (void)r;
    }
}

static void blitz__pollb_remove_locked(blitz__io *io, blitz_socket *s) {
    int i = s->poll_slot;
    if (i < 0)
        return;
    blitz_socket *last = io->pset[--io->pcount];
    io->pset[i] = last;
    last->poll_slot = i;
    s->poll_slot = -1;
}

/* A socket's memory is about to go. */
BLITZ_PRIVATE void blitz__pollb_forget(blitz__io *io, blitz_socket *s) {
    blitz__mutex_lock(&io->poll_lock);
    blitz__pollb_remove_locked(io, s);
    blitz__mutex_unlock(&io->poll_lock);
}

BLITZ_PRIVATE void blitz__pollb_wait(blitz__io *io, uint64_t timeout_ns) {
    if (timeout_ns)
        blitz__u32_store(&io->poll_blocked, 1, BLITZ__SEQ_CST);
    blitz__mutex_lock(&io->poll_lock);
    int n = 0;
    if (io->pfd_cap < io->pcount + 1) {
        uint32_t cap = io->pfd_cap;
        uint32_t cap2 = io->pfd_cap;
        if (!blitz__pollb_grow((void **)&io->pfds, &cap, sizeof(struct pollfd), io->pcount + 1) ||
            !blitz__pollb_grow((void **)&io->psocks, &cap2, sizeof(blitz_socket *),
                               io->pcount + 1)) {
            /* Out of memory: poll what fits. */
        }
        io->pfd_cap = cap < cap2 ? cap : cap2;
    }
    io->pfds[n].fd = io->wake_fd;
    io->pfds[n].events = POLLIN;
    io->pfds[n].revents = 0;
    io->psocks[n++] = NULL;
    for (uint32_t i = 0; i < io->pcount && (uint32_t)n < io->pfd_cap;) {
        blitz_socket *s = io->pset[i];
        uint32_t want = blitz__u32_load(&s->want, BLITZ__SEQ_CST);
        if (!want) {
            blitz__pollb_remove_locked(io, s);
            continue;
        }
        io->pfds[n].fd = s->fd;
        io->pfds[n].events = (short)(((want & 1u) ? (POLLIN | POLLRDHUP) : 0) |
                                     ((want & 2u) ? POLLOUT : 0));
        io->pfds[n].revents = 0;
        io->psocks[n++] = s;
        i++;
    }
    blitz__mutex_unlock(&io->poll_lock);
    struct timespec ts, *tsp = NULL;
    if (timeout_ns != BLITZ__IO_FOREVER) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tsp = &ts;
    }
    int r = ppoll(io->pfds, (nfds_t)n, tsp, NULL);
    blitz__u32_store(&io->poll_blocked, 0, BLITZ__RELAXED);
    io->npfds = r > 0 ? n : 0;
}

BLITZ_PRIVATE void blitz__pollb_dispatch(blitz__io *io) {
    int n = io->npfds;
    io->npfds = 0;
    for (int i = 0; i < n; i++) {
        short ev = io->pfds[i].revents;
        if (!ev)
            continue;
        blitz_socket *s = io->psocks[i];
        if (!s) {
            blitz__io_drain_wake_fd(io);
            continue;
        }
        int rd = (ev & (POLLIN | POLLRDHUP | POLLHUP | POLLERR | POLLNVAL | POLLPRI)) != 0;
        int wr = (ev & (POLLOUT | POLLHUP | POLLERR | POLLNVAL)) != 0;
        blitz__io_ready(s, rd, wr);
    }
}

#else

BLITZ_PRIVATE int blitz__pollb_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__pollb_destroy(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__pollb_want(blitz__io *io, blitz_socket *s) {
    (void)io;
    (void)s;
}
BLITZ_PRIVATE void blitz__pollb_forget(blitz__io *io, blitz_socket *s) {
    (void)io;
    (void)s;
}
BLITZ_PRIVATE void blitz__pollb_wait(blitz__io *io, uint64_t timeout_ns) {
    (void)io;
    (void)timeout_ns;
}
BLITZ_PRIVATE void blitz__pollb_dispatch(blitz__io *io) {
    (void)io;
}

#endif
/* ====[ END src/io_poll.c ]================================================ */
/* ====[ BEGIN src/io_uring.c ]============================================= */
/* >>io_uring */
/* The io_uring backend, through raw system calls (no liburing).
 *
 * One ring per runtime, shared by every thread: submissions take
 * `sq_lock` (a few stores; workers leave the io_uring_enter to the start
 * of their next tick or their park, so one system call carries a batch),
 * reaping takes the driver's lock (io_driver.c). The parked sleeper waits
 * in io_uring_enter(GETEVENTS | EXT_ARG) with the timer deadline; a
 * multishot POLL_ADD on the driver's eventfd wakes it (re-armed when the
 * kernel ends it). Start-up probes the opcodes and features it relies on
 * (EXT_ARG, FAST_POLL, NODROP, RECV/SEND/ACCEPT/CONNECT/SENDMSG/RECVMSG/
 * ASYNC_CANCEL/POLL_ADD) and refuses the ring otherwise, so the driver
 * falls back to epoll. Constants newer than the system's uapi header are
 * defined here. */
/* internal.h already included */
/* io_internal.h already included */

#if !defined(BLITZ_NO_IO_URING)

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_io_uring_enter
#define SYS_io_uring_enter 426
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register 427
#endif
#ifndef IORING_FEAT_EXT_ARG
#define IORING_FEAT_EXT_ARG (1U << 8)
#endif
#ifndef IORING_ENTER_EXT_ARG
#define IORING_ENTER_EXT_ARG (1U << 3)
#endif
#ifndef IORING_ACCEPT_MULTISHOT
#define IORING_ACCEPT_MULTISHOT (1U << 0)
#endif
#ifndef IORING_POLL_ADD_MULTI
#define IORING_POLL_ADD_MULTI (1U << 0)
#endif
#ifndef IORING_CQE_F_MORE
#define IORING_CQE_F_MORE (1U << 1)
#endif
#ifndef IORING_SETUP_SUBMIT_ALL
#define IORING_SETUP_SUBMIT_ALL (1U << 7)
#endif
#ifndef IORING_FEAT_CQE_SKIP
#define IORING_FEAT_CQE_SKIP (1U << 11)
#endif
#ifndef IOSQE_CQE_SKIP_SUCCESS
#define IOSQE_CQE_SKIP_SUCCESS (1U << 6)
#endif

#ifndef BLITZ_URING_ENTRIES
#define BLITZ_URING_ENTRIES 1024u
#endif
#define BLITZ__URING_CQ_ENTRIES (BLITZ_URING_ENTRIES * 8u)
/* Workers submit a batch once this many SQEs wait. */
#define BLITZ__URING_BATCH 64u

static int blitz__uring_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags,
                              const void *arg, size_t argsz) {
    return (int)syscall(SYS_io_uring_enter, fd, to_submit, min_complete, flags, arg, argsz);
}

static int blitz__uring_probe(blitz__io *io) {
    static const uint8_t need[] = {IORING_OP_RECV,    IORING_OP_SEND,         IORING_OP_ACCEPT,
                                   IORING_OP_CONNECT, IORING_OP_SENDMSG,      IORING_OP_RECVMSG,
                                   IORING_OP_POLL_ADD, IORING_OP_ASYNC_CANCEL};
    size_t sz = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
    struct io_uring_probe *p = (struct io_uring_probe *)blitz__calloc(sz);
    if (!p)
        return BLITZ_ENOMEM;
    int rc = BLITZ_OK;
    if (syscall(SYS_io_uring_register, io->ring_fd, IORING_REGISTER_PROBE, p, 256) < 0) {
        rc = blitz__from_errno(errno);
    } else {
        for (size_t i = 0; i < sizeof need; i++)
            if (need[i] > p->last_op || !(p->ops[need[i]].flags & IO_URING_OP_SUPPORTED))
                rc = BLITZ_ENOSYS;
        /* Multishot accept came with Linux 5.19, as did IORING_OP_SOCKET. */
        io->ms_accept = p->last_op >= 45 /* IORING_OP_SOCKET */;
    }
    blitz__free(p);
    return rc;
}

static struct io_uring_sqe *blitz__uring_get_sqe(blitz__io *io) {
    uint32_t head = blitz__u32_field_load(io->sq_head, BLITZ__ACQUIRE);
    uint32_t tail = io->sq_tail_local;
    if (tail - head >= io->sq_entries)
        return NULL;
    uint32_t idx = tail & *io->sq_mask;
    struct io_uring_sqe *sqe = &io->sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    io->sq_array[idx] = idx;
    return sqe;
}

/* Publishes the SQE got last. Caller holds sq_lock. */
static void blitz__uring_push(blitz__io *io) {
    io->sq_tail_local++;
    blitz__u32_field_store(io->sq_tail, io->sq_tail_local, BLITZ__RELEASE);
    blitz__u32_fetch_add(&io->to_submit, 1, BLITZ__RELAXED);
}

/* Caller holds sq_lock. */
static void blitz__uring_flush_locked(blitz__io *io) {
    uint32_t n = blitz__u32_load(&io->to_submit, BLITZ__RELAXED);
    while (n) {
        int r = blitz__uring_enter(io->ring_fd, n, 0, 0, NULL, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            /* EAGAIN / EBUSY: the kernel is short of room (completions
             * to reap first); the SQEs stay and go with the next flush. */
            return;
        }
        if (r == 0)
            return;
        blitz__u32_fetch_sub(&io->to_submit, (uint32_t)r, BLITZ__RELAXED);
        n -= (uint32_t)r;
    }
}

BLITZ_PRIVATE void blitz__uring_flush(blitz__io *io) {
    blitz__mutex_lock(&io->sq_lock);
    blitz__uring_flush_locked(io);
    blitz__mutex_unlock(&io->sq_lock);
}

/* Caller holds sq_lock. */
static struct io_uring_sqe *blitz__uring_sqe_or_flush(blitz__io *io) {
    struct io_uring_sqe *sqe = blitz__uring_get_sqe(io);
    if (!sqe) {
        blitz__uring_flush_locked(io);
        sqe = blitz__uring_get_sqe(io);
    }
    return sqe;
}

static int blitz__uring_arm_wake(blitz__io *io) {
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (sqe) {
        sqe->opcode = IORING_OP_POLL_ADD;
        sqe->fd = io->wake_fd;
        sqe->poll32_events = POLLIN;
        sqe->len = IORING_POLL_ADD_MULTI;
        sqe->user_data = BLITZ__UD_WAKE;
        blitz__uring_push(io);
        blitz__uring_flush_locked(io);
    }
    blitz__mutex_unlock(&io->sq_lock);
    return sqe ? BLITZ_OK : BLITZ_EBUSY;
}

BLITZ_PRIVATE int blitz__uring_init(blitz__io *io) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
    p.cq_entries = BLITZ__URING_CQ_ENTRIES;
    int fd = (int)syscall(SYS_io_uring_setup, BLITZ_URING_ENTRIES, &p);
    if (fd < 0)
        return blitz__from_errno(errno);
    io->ring_fd = fd;
    int rc = BLITZ_OK;
    uint32_t need = IORING_FEAT_EXT_ARG | IORING_FEAT_FAST_POLL | IORING_FEAT_NODROP;
    if ((p.features & need) != need)
        rc = BLITZ_ENOSYS;
    if (rc == BLITZ_OK)
        rc = blitz__uring_probe(io);
    if (rc == BLITZ_OK) {
        io->features = p.features;
        io->sq_entries = p.sq_entries;
        io->cq_entries = p.cq_entries;
        io->sq_map_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
        io->cq_map_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
        if (p.features & IORING_FEAT_SINGLE_MMAP) {
            if (io->cq_map_len > io->sq_map_len)
                io->sq_map_len = io->cq_map_len;
        }
        io->sq_map = mmap(NULL, io->sq_map_len, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
        if (io->sq_map == MAP_FAILED) {
            io->sq_map = NULL;
            rc = blitz__from_errno(errno);
        }
    }
    if (rc == BLITZ_OK) {
        if (p.features & IORING_FEAT_SINGLE_MMAP) {
            io->cq_map = io->sq_map;
        } else {
            io->cq_map = mmap(NULL, io->cq_map_len, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
            if (io->cq_map == MAP_FAILED) {
                io->cq_map = NULL;
                rc = blitz__from_errno(errno);
            }
        }
    }
    if (rc == BLITZ_OK) {
        io->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
        void *m = mmap(NULL, io->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                       IORING_OFF_SQES);
        if (m == MAP_FAILED)
            rc = blitz__from_errno(errno);
        else
            io->sqes = (struct io_uring_sqe *)m;
    }
    if (rc != BLITZ_OK) {
        blitz__uring_destroy(io);
        return rc;
    }
    char *sq = (char *)io->sq_map, *cq = (char *)io->cq_map;
    io->sq_head = (uint32_t *)(void *)(sq + p.sq_off.head);
    io->sq_tail = (uint32_t *)(void *)(sq + p.sq_off.tail);
    io->sq_mask = (uint32_t *)(void *)(sq + p.sq_off.ring_mask);
    io->sq_array = (uint32_t *)(void *)(sq + p.sq_off.array);
    io->cq_head = (uint32_t *)(void *)(cq + p.cq_off.head);
    io->cq_tail = (uint32_t *)(void *)(cq + p.cq_off.tail);
    io->cq_mask = (uint32_t *)(void *)(cq + p.cq_off.ring_mask);
    io->cqes = (struct io_uring_cqe *)(void *)(cq + p.cq_off.cqes);
    io->sq_tail_local = *io->sq_tail;
    io->skip_cancel_cqe = (p.features & IORING_FEAT_CQE_SKIP) != 0;
    rc = blitz__uring_arm_wake(io);
    if (rc != BLITZ_OK) {
        blitz__uring_destroy(io);
        return rc;
    }
    return BLITZ_OK;
}

BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io) {
    if (io->sqes)
        munmap(io->sqes, io->sqes_len);
    if (io->cq_map && io->cq_map != io->sq_map)
        munmap(io->cq_map, io->cq_map_len);
    if (io->sq_map)
        munmap(io->sq_map, io->sq_map_len);
    io->sqes = NULL;
    io->cq_map = io->sq_map = NULL;
    if (io->ring_fd >= 0)
        close(io->ring_fd);
    io->ring_fd = -1;
}

/* Fills and queues the SQE of `op`. Caller holds the op's socket lock. */
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz_io *op, int flush) {
    blitz_socket *s = op->blitz__sock;
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (!sqe) {
        blitz__mutex_unlock(&io->sq_lock);
        return BLITZ_EBUSY;
    }
    sqe->fd = s->fd;
    sqe->user_data = (uint64_t)(uintptr_t)op;
    switch (op->blitz__kind) {
    case BLITZ__OP_RECV:
        sqe->opcode = IORING_OP_RECV;
        sqe->addr = (uint64_t)(uintptr_t)op->blitz__buf;
        sqe->len = (uint32_t)(op->blitz__len > 0x7ffff000u ? 0x7ffff000u : op->blitz__len);
        break;
    case BLITZ__OP_SEND:
    case BLITZ__OP_SEND_ALL: {
        size_t left = op->blitz__len - op->blitz__done;
        sqe->opcode = IORING_OP_SEND;
        sqe->addr = (uint64_t)(uintptr_t)((char *)op->blitz__buf + op->blitz__done);
        sqe->len = (uint32_t)(left > 0x7ffff000u ? 0x7ffff000u : left);
        sqe->msg_flags = MSG_NOSIGNAL;
        break;
    }
    case BLITZ__OP_RECVV:
    case BLITZ__OP_RECV_FROM:
    case BLITZ__OP_SENDV:
    case BLITZ__OP_SEND_TO: {
        _Static_assert(sizeof(((blitz_io *)0)->blitz__scratch) >=
                           sizeof(struct msghdr) + sizeof(struct iovec),
                       "the op holds its msghdr");
        struct msghdr *m = (struct msghdr *)(void *)op->blitz__scratch;
        struct iovec *one = (struct iovec *)(void *)((char *)op->blitz__scratch + sizeof *m);
        blitz__op_msghdr(op, m, one);
        int send = op->blitz__kind == BLITZ__OP_SENDV || op->blitz__kind == BLITZ__OP_SEND_TO;
        sqe->opcode = send ? IORING_OP_SENDMSG : IORING_OP_RECVMSG;
        sqe->addr = (uint64_t)(uintptr_t)m;
        sqe->len = 1;
        sqe->msg_flags = send ? MSG_NOSIGNAL : 0;
        break;
    }
    case BLITZ__OP_ACCEPT:
        sqe->opcode = IORING_OP_ACCEPT;
        sqe->accept_flags = SOCK_NONBLOCK | SOCK_CLOEXEC;
        break;
    case BLITZ__OP_CONNECT: {
        const blitz_addr *a = (const blitz_addr *)(void *)op->blitz__scratch;
        sqe->opcode = IORING_OP_CONNECT;
        sqe->addr = (uint64_t)(uintptr_t)a->u.bytes;
        sqe->off = a->len;
        break;
    }
    default:
        break;
    }
    blitz__uring_push(io);
    if (flush || blitz__u32_load(&io->to_submit, BLITZ__RELAXED) >= BLITZ__URING_BATCH)
        blitz__uring_flush_locked(io);
    blitz__mutex_unlock(&io->sq_lock);
    return BLITZ_OK;
}

/* Arms a listener's multishot accept. Caller holds the socket's lock. */
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz_socket *s) {
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (sqe) {
        sqe->opcode = IORING_OP_ACCEPT;
        sqe->fd = s->fd;
        sqe->accept_flags = SOCK_NONBLOCK | SOCK_CLOEXEC;
        sqe->ioprio = IORING_ACCEPT_MULTISHOT;
        sqe->user_data = (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS;
        blitz__uring_push(io);
        blitz__uring_flush_locked(io);
    }
    blitz__mutex_unlock(&io->sq_lock);
    return sqe ? BLITZ_OK : BLITZ_EBUSY;
}

/* ASYNC_CANCEL by user_data. */
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, uint64_t ud) {
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (sqe) {
        sqe->opcode = IORING_OP_ASYNC_CANCEL;
        sqe->fd = -1;
        sqe->addr = ud;
        sqe->user_data = BLITZ__UD_IGNORE;
        if (io->skip_cancel_cqe)
            sqe->flags = IOSQE_CQE_SKIP_SUCCESS;
        blitz__uring_push(io);
    }
    blitz__uring_flush_locked(io);
    blitz__mutex_unlock(&io->sq_lock);
}

/* ASYNC_CANCEL of an op in flight. Caller holds the op's socket lock. */
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op) {
    blitz__mutex_lock(&io->sq_lock);
    struct io_uring_sqe *sqe = blitz__uring_sqe_or_flush(io);
    if (sqe) {
        sqe->opcode = IORING_OP_ASYNC_CANCEL;
        sqe->fd = -1;
        sqe->addr = (uint64_t)(uintptr_t)op;
        sqe->user_data = BLITZ__UD_IGNORE;
        if (io->skip_cancel_cqe)
            sqe->flags = IOSQE_CQE_SKIP_SUCCESS;
        blitz__uring_push(io);
    }
    /* Cancels go out at once: whoever cancels may wait for the result. */
    blitz__uring_flush_locked(io);
    blitz__mutex_unlock(&io->sq_lock);
}

BLITZ_PRIVATE int blitz__uring_cq_ready(blitz__io *io) {
    return blitz__u32_field_load(io->cq_head, BLITZ__RELAXED) !=
           blitz__u32_field_load(io->cq_tail, BLITZ__ACQUIRE);
}

/* Caller holds io->lock. Blocks unless completions are ready. */
BLITZ_PRIVATE void blitz__uring_wait(blitz__io *io, uint64_t timeout_ns) {
    if (blitz__u32_load(&io->to_submit, BLITZ__RELAXED))
        blitz__uring_flush(io);
    if (timeout_ns == 0 || blitz__uring_cq_ready(io))
        return;
    struct __kernel_timespec ts;
    struct io_uring_getevents_arg arg;
    memset(&arg, 0, sizeof arg);
    if (timeout_ns != BLITZ__IO_FOREVER) {
        ts.tv_sec = (long long)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long long)(timeout_ns % 1000000000u);
        arg.ts = (uint64_t)(uintptr_t)&ts;
    }
    blitz__uring_enter(io->ring_fd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg,
                       sizeof arg);
}

/* Caller holds io->lock. */
BLITZ_PRIVATE void blitz__uring_dispatch(blitz__io *io) {
    for (;;) {
        struct {
            uint64_t user_data;
            int32_t res;
            uint32_t flags;
        } batch[64];
        uint32_t head = *io->cq_head;
        uint32_t tail = blitz__u32_field_load(io->cq_tail, BLITZ__ACQUIRE);
        uint32_t n = 0;
        while (head != tail && n < 64) {
            const struct io_uring_cqe *c = &io->cqes[head & *io->cq_mask];
            batch[n].user_data = c->user_data;
            batch[n].res = c->res;
            batch[n].flags = c->flags;
            n++;
            head++;
        }
        if (n == 0)
            return;
        blitz__u32_field_store(io->cq_head, head, BLITZ__RELEASE);
        int rearm = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t ud = batch[i].user_data;
            if (ud == BLITZ__UD_IGNORE)
                continue;
            if (ud == BLITZ__UD_WAKE) {
                blitz__io_drain_wake_fd(io);
                if (!(batch[i].flags & IORING_CQE_F_MORE))
                    rearm = 1;
                continue;
            }
            if (ud & BLITZ__UD_ACCEPT_MS) {
                blitz__io_accept_ms(io, (blitz_socket *)(uintptr_t)(ud & ~(uint64_t)7),
                                    batch[i].res, batch[i].flags);
                continue;
            }
            blitz__io_complete(io, (blitz_io *)(uintptr_t)ud, batch[i].res, batch[i].flags);
        }
        if (rearm)
            blitz__uring_arm_wake(io);
    }
}

#else

BLITZ_PRIVATE int blitz__uring_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz_io *op, int flush) {
    (void)io;
    (void)op;
    (void)flush;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op) {
    (void)io;
    (void)op;
}
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz_socket *s) {
    (void)io;
    (void)s;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, uint64_t ud) {
    (void)io;
    (void)ud;
}
BLITZ_PRIVATE void blitz__uring_flush(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_cq_ready(blitz__io *io) {
    (void)io;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_wait(blitz__io *io, uint64_t timeout_ns) {
    (void)io;
    (void)timeout_ns;
}
BLITZ_PRIVATE void blitz__uring_dispatch(blitz__io *io) {
    (void)io;
}

#endif
/* ====[ END src/io_uring.c ]=============================================== */
/* ====[ BEGIN src/net_addr.c ]============================================= */
/* >>net_addr */
/* Socket addresses: parsing and formatting of IPv4, IPv6 and Unix
 * addresses into blitz_addr (a sockaddr_storage with its length). */
/* internal.h already included */

_Static_assert(sizeof(((blitz_addr *)0)->u.bytes) >= sizeof(struct sockaddr_storage),
               "blitz_addr holds any socket address");

BLITZ_API int blitz_addr_ip(const char *ip, uint16_t port, blitz_addr *out) {
    if (!ip || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    struct sockaddr_in *a4 = (struct sockaddr_in *)(void *)out->u.bytes;
    if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        out->len = sizeof *a4;
        return BLITZ_OK;
    }
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)(void *)out->u.bytes;
    char tmp[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
    const char *pct = strchr(ip, '%');
    size_t n = pct ? (size_t)(pct - ip) : strlen(ip);
    if (n == 0 || n >= INET6_ADDRSTRLEN)
        goto bad;
    memcpy(tmp, ip, n);
    tmp[n] = 0;
    if (inet_pton(AF_INET6, tmp, &a6->sin6_addr) != 1)
        goto bad;
    if (pct) {
        const char *z = pct + 1;
        if (!*z)
            goto bad;
        char *end = NULL;
        unsigned long id = strtoul(z, &end, 10);
        if (end && *end == 0 && end != z) {
            a6->sin6_scope_id = (uint32_t)id;
        } else {
            unsigned idx = if_nametoindex(z);
            if (!idx)
                goto bad;
            a6->sin6_scope_id = idx;
        }
    }
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    out->len = sizeof *a6;
    return BLITZ_OK;
bad:
    memset(out, 0, sizeof *out);
    return BLITZ_EINVAL;
}

static int blitz__parse_port(const char *p, uint16_t *port) {
    if (!*p)
        return 0;
    unsigned long v = 0;
    for (const char *c = p; *c; c++) {
        if (*c < '0' || *c > '9')
            return 0;
        v = v * 10 + (unsigned long)(*c - '0');
        if (v > 65535)
            return 0;
    }
    *port = (uint16_t)v;
    return 1;
}

BLITZ_API int blitz_addr_parse(const char *s, blitz_addr *out) {
    if (!s || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
    const char *port;
    size_t n;
    if (s[0] == '[') {
        const char *close_br = strchr(s, ']');
        if (!close_br || close_br[1] != ':')
            return BLITZ_EINVAL;
        n = (size_t)(close_br - s - 1);
        if (n == 0 || n >= sizeof host)
            return BLITZ_EINVAL;
        memcpy(host, s + 1, n);
        host[n] = 0;
        port = close_br + 2;
        if (!strchr(host, ':'))
            return BLITZ_EINVAL; /* brackets are for IPv6 only */
    } else {
        const char *colon = strrchr(s, ':');
        if (!colon || strchr(s, ':') != colon)
            return BLITZ_EINVAL; /* no port, or an IPv6 address without brackets */
        n = (size_t)(colon - s);
        if (n == 0 || n >= sizeof host)
            return BLITZ_EINVAL;
        memcpy(host, s, n);
        host[n] = 0;
        port = colon + 1;
    }
    uint16_t p;
    if (!blitz__parse_port(port, &p))
        return BLITZ_EINVAL;
    return blitz_addr_ip(host, p, out);
}

BLITZ_API int blitz_addr_unix(const char *path, blitz_addr *out) {
    if (!path || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    struct sockaddr_un *u = (struct sockaddr_un *)(void *)out->u.bytes;
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof u->sun_path || (path[0] == '@' && n == 1))
        return BLITZ_EINVAL;
    u->sun_family = AF_UNIX;
    if (path[0] == '@') {
        /* Abstract: a leading NUL, the name, no terminator counted. */
        u->sun_path[0] = 0;
        memcpy(u->sun_path + 1, path + 1, n - 1);
        out->len = (uint32_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        memcpy(u->sun_path, path, n + 1);
        out->len = (uint32_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    return BLITZ_OK;
}

BLITZ_API int blitz_addr_family(const blitz_addr *a) {
    return a && a->len ? a->u.family : 0;
}

BLITZ_API int blitz_addr_port(const blitz_addr *a) {
    if (!a || !a->len)
        return -1;
    if (a->u.family == AF_INET)
        return ntohs(((const struct sockaddr_in *)(const void *)a->u.bytes)->sin_port);
    if (a->u.family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)(const void *)a->u.bytes)->sin6_port);
    return -1;
}

BLITZ_API int blitz_addr_format(const blitz_addr *a, char *buf, size_t size) {
    if (!a || !buf || size == 0)
        return BLITZ_EINVAL;
    buf[0] = 0;
    char tmp[160];
    int n;
    if (a->len && a->u.family == AF_INET) {
        const struct sockaddr_in *a4 = (const struct sockaddr_in *)(const void *)a->u.bytes;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof ip);
        n = snprintf(tmp, sizeof tmp, "%s:%u", ip, (unsigned)ntohs(a4->sin_port));
    } else if (a->len && a->u.family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)(const void *)a->u.bytes;
        char ip[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof ip);
        if (a6->sin6_scope_id)
            n = snprintf(tmp, sizeof tmp, "[%s%%%u]:%u", ip, (unsigned)a6->sin6_scope_id,
                         (unsigned)ntohs(a6->sin6_port));
        else
            n = snprintf(tmp, sizeof tmp, "[%s]:%u", ip, (unsigned)ntohs(a6->sin6_port));
    } else if (a->len && a->u.family == AF_UNIX) {
        const struct sockaddr_un *u = (const struct sockaddr_un *)(const void *)a->u.bytes;
        size_t plen = a->len > offsetof(struct sockaddr_un, sun_path)
                          ? a->len - offsetof(struct sockaddr_un, sun_path)
                          : 0;
        if (plen == 0) {
            n = snprintf(tmp, sizeof tmp, "(unnamed)");
        } else if (u->sun_path[0] == 0) {
            n = snprintf(tmp, sizeof tmp, "@%.*s", (int)(plen - 1), u->sun_path + 1);
        } else {
            n = snprintf(tmp, sizeof tmp, "%.*s", (int)strnlen(u->sun_path, plen), u->sun_path);
        }
    } else {
        return BLITZ_EINVAL;
    }
    if (n < 0)
        return BLITZ_EINVAL;
    if ((size_t)n >= size) {
        memcpy(buf, tmp, size - 1);
        buf[size - 1] = 0;
        return BLITZ_ERANGE;
    }
    memcpy(buf, tmp, (size_t)n + 1);
    return n;
}
/* ====[ END src/net_addr.c ]=============================================== */
/* ====[ BEGIN src/net_sock.c ]============================================= */
/* >>net_sock */
/* Sockets: creation (TCP listeners, UDP, Unix stream / datagram), options,
 * addresses, shutdown. The transfers are ops (io_driver.c). */
/* internal.h already included */
/* io_internal.h already included */

static int blitz__errno_rc(void) {
    return blitz__from_errno(errno);
}

static int blitz__sock_new_fd(blitz_runtime *rt, int family, int type, int *fd) {
    if (!rt)
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    *fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    return *fd < 0 ? blitz__errno_rc() : BLITZ_OK;
}

static int blitz__apply_flags(int fd, int family, unsigned flags, int listener) {
    int one = 1;
    if ((listener && !(flags & BLITZ_SOCK_NO_REUSEADDR)) || (flags & BLITZ_SOCK_REUSEADDR))
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
            return blitz__errno_rc();
    if (flags & BLITZ_SOCK_REUSEPORT)
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
            return blitz__errno_rc();
    if ((flags & BLITZ_SOCK_V6ONLY) && family == AF_INET6)
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0)
            return blitz__errno_rc();
    return BLITZ_OK;
}

static int blitz__addr_ok(const blitz_addr *a) {
    return a && a->len > 0 && a->len <= sizeof a->u.bytes;
}

BLITZ_API int blitz_tcp_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                               unsigned flags, blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!blitz__addr_ok(addr) || (addr->u.family != AF_INET && addr->u.family != AF_INET6) ||
        backlog < 0)
        return BLITZ_EINVAL;
    int fd, rc = blitz__sock_new_fd(rt, addr->u.family, SOCK_STREAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__apply_flags(fd, addr->u.family, flags, 1);
    if (rc == BLITZ_OK && bind(fd, (const struct sockaddr *)(const void *)addr->u.bytes,
                               addr->len) < 0)
        rc = blitz__errno_rc();
    if (rc == BLITZ_OK && listen(fd, backlog ? backlog : SOMAXCONN) < 0)
        rc = blitz__errno_rc();
    if (rc != BLITZ_OK) {
        close(fd);
        return rc;
    }
    return blitz__sock_wrap(rt->io, fd, addr->u.family, SOCK_STREAM, out);
}

BLITZ_API int blitz_udp_bind(blitz_runtime *rt, const blitz_addr *addr, unsigned flags,
                             blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!blitz__addr_ok(addr) || (addr->u.family != AF_INET && addr->u.family != AF_INET6))
        return BLITZ_EINVAL;
    int fd, rc = blitz__sock_new_fd(rt, addr->u.family, SOCK_DGRAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__apply_flags(fd, addr->u.family, flags, 0);
    if (rc == BLITZ_OK && bind(fd, (const struct sockaddr *)(const void *)addr->u.bytes,
                               addr->len) < 0)
        rc = blitz__errno_rc();
    if (rc != BLITZ_OK) {
        close(fd);
        return rc;
    }
    return blitz__sock_wrap(rt->io, fd, addr->u.family, SOCK_DGRAM, out);
}

BLITZ_API int blitz_udp_connect(blitz_socket *s, const blitz_addr *addr) {
    if (!s || !blitz__addr_ok(addr))
        return BLITZ_EINVAL;
    if (connect(s->fd, (const struct sockaddr *)(const void *)addr->u.bytes, addr->len) < 0)
        return blitz__errno_rc();
    return BLITZ_OK;
}

BLITZ_API int blitz_unix_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                                blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!blitz__addr_ok(addr) || addr->u.family != AF_UNIX || backlog < 0)
        return BLITZ_EINVAL;
    int fd, rc = blitz__sock_new_fd(rt, AF_UNIX, SOCK_STREAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    const struct sockaddr_un *u = (const struct sockaddr_un *)(const void *)addr->u.bytes;
    if (u->sun_path[0]) {
        /* A stale socket file from an earlier run; never another kind of file. */
        struct sockaddr_un probe;
        (void)probe;
        int t = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (t >= 0) {
            if (connect(t, (const struct sockaddr *)u, addr->len) < 0 && errno == ECONNREFUSED)
                unlink(u->sun_path);
            close(t);
        }
    }
    if (bind(fd, (const struct sockaddr *)u, addr->len) < 0)
        rc = blitz__errno_rc();
    if (rc == BLITZ_OK && listen(fd, backlog ? backlog : SOMAXCONN) < 0)
        rc = blitz__errno_rc();
    if (rc != BLITZ_OK) {
        close(fd);
        return rc;
    }
    return blitz__sock_wrap(rt->io, fd, AF_UNIX, SOCK_STREAM, out);
}

BLITZ_API int blitz_unix_dgram(blitz_runtime *rt, const blitz_addr *addr, blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (addr && (!blitz__addr_ok(addr) || addr->u.family != AF_UNIX))
        return BLITZ_EINVAL;
    int fd, rc = blitz__sock_new_fd(rt, AF_UNIX, SOCK_DGRAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    if (addr && bind(fd, (const struct sockaddr *)(const void *)addr->u.bytes, addr->len) < 0) {
        rc = blitz__errno_rc();
        close(fd);
        return rc;
    }
    return blitz__sock_wrap(rt->io, fd, AF_UNIX, SOCK_DGRAM, out);
}

BLITZ_API int blitz_unix_pair(blitz_runtime *rt, int type, blitz_socket **a, blitz_socket **b) {
    if (!a || !b)
        return BLITZ_EINVAL;
    *a = *b = NULL;
    if (!rt || (type != 1 && type != 2))
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    int sv[2];
    int st = type == 1 ? SOCK_STREAM : SOCK_DGRAM;
    if (socketpair(AF_UNIX, st | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        return blitz__errno_rc();
    int rc = blitz__sock_wrap(rt->io, sv[0], AF_UNIX, st, a);
    if (rc != BLITZ_OK) {
        close(sv[1]);
        return rc;
    }
    rc = blitz__sock_wrap(rt->io, sv[1], AF_UNIX, st, b);
    if (rc != BLITZ_OK) {
        blitz_sock_close(*a);
        *a = NULL;
    }
    return rc;
}

BLITZ_API int blitz_sock_adopt(blitz_runtime *rt, int fd, blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!rt || fd < 0)
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return blitz__errno_rc();
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int family = AF_UNSPEC, type = SOCK_STREAM;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        family = ss.ss_family;
    socklen_t tl = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl);
    return blitz__sock_wrap(rt->io, fd, family, type, out);
}

BLITZ_API int blitz_sock_shutdown(blitz_socket *s, int how) {
    if (!s || how < 0 || how > 2)
        return BLITZ_EINVAL;
    int h = how == 0 ? SHUT_RD : how == 1 ? SHUT_WR : SHUT_RDWR;
    return shutdown(s->fd, h) < 0 ? blitz__errno_rc() : BLITZ_OK;
}

BLITZ_API int blitz_sock_fd(const blitz_socket *s) {
    return s ? s->fd : -1;
}

BLITZ_API int blitz_sock_local_addr(const blitz_socket *s, blitz_addr *out) {
    if (!s || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    socklen_t l = sizeof out->u.bytes;
    if (getsockname(s->fd, (struct sockaddr *)(void *)out->u.bytes, &l) < 0)
        return blitz__errno_rc();
    out->len = l;
    return BLITZ_OK;
}

BLITZ_API int blitz_sock_peer_addr(const blitz_socket *s, blitz_addr *out) {
    if (!s || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    socklen_t l = sizeof out->u.bytes;
    if (getpeername(s->fd, (struct sockaddr *)(void *)out->u.bytes, &l) < 0)
        return blitz__errno_rc();
    out->len = l;
    return BLITZ_OK;
}

static int blitz__setopt(blitz_socket *s, int level, int name, int v) {
    if (!s)
        return BLITZ_EINVAL;
    return setsockopt(s->fd, level, name, &v, sizeof v) < 0 ? blitz__errno_rc() : BLITZ_OK;
}

static int blitz__getopt(const blitz_socket *s, int level, int name) {
    if (!s)
        return BLITZ_EINVAL;
    int v = 0;
    socklen_t l = sizeof v;
    return getsockopt(s->fd, level, name, &v, &l) < 0 ? blitz__errno_rc() : v;
}

BLITZ_API int blitz_tcp_set_nodelay(blitz_socket *s, int on) {
    return blitz__setopt(s, IPPROTO_TCP, TCP_NODELAY, on != 0);
}
BLITZ_API int blitz_tcp_nodelay(const blitz_socket *s) {
    int v = blitz__getopt(s, IPPROTO_TCP, TCP_NODELAY);
    return v < 0 ? v : v != 0;
}
BLITZ_API int blitz_tcp_set_keepalive(blitz_socket *s, int on, int idle_secs) {
    int rc = blitz__setopt(s, SOL_SOCKET, SO_KEEPALIVE, on != 0);
    if (rc == BLITZ_OK && on && idle_secs > 0)
        rc = blitz__setopt(s, IPPROTO_TCP, TCP_KEEPIDLE, idle_secs);
    return rc;
}
BLITZ_API int blitz_sock_set_linger(blitz_socket *s, int on, int secs) {
    if (!s || secs < 0)
        return BLITZ_EINVAL;
    struct linger l;
    l.l_onoff = on != 0;
    l.l_linger = secs;
    return setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l) < 0 ? blitz__errno_rc()
                                                                        : BLITZ_OK;
}
BLITZ_API int blitz_sock_set_recv_buffer(blitz_socket *s, int bytes) {
    return bytes <= 0 ? BLITZ_EINVAL : blitz__setopt(s, SOL_SOCKET, SO_RCVBUF, bytes);
}
BLITZ_API int blitz_sock_set_send_buffer(blitz_socket *s, int bytes) {
    return bytes <= 0 ? BLITZ_EINVAL : blitz__setopt(s, SOL_SOCKET, SO_SNDBUF, bytes);
}
BLITZ_API int blitz_sock_recv_buffer(const blitz_socket *s) {
    return blitz__getopt(s, SOL_SOCKET, SO_RCVBUF);
}
BLITZ_API int blitz_sock_send_buffer(const blitz_socket *s) {
    return blitz__getopt(s, SOL_SOCKET, SO_SNDBUF);
}

static int blitz__multicast(blitz_socket *s, const char *group, const char *iface, int join) {
    if (!s || !group)
        return BLITZ_EINVAL;
    struct in_addr g4;
    struct in6_addr g6;
    if (inet_pton(AF_INET, group, &g4) == 1) {
        struct ip_mreq m;
        memset(&m, 0, sizeof m);
        m.imr_multiaddr = g4;
        m.imr_interface.s_addr = htonl(INADDR_ANY);
        if (iface && inet_pton(AF_INET, iface, &m.imr_interface) != 1)
            return BLITZ_EINVAL;
        if (setsockopt(s->fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m,
                       sizeof m) < 0)
            return blitz__errno_rc();
        return BLITZ_OK;
    }
    if (inet_pton(AF_INET6, group, &g6) == 1) {
        struct ipv6_mreq m;
        memset(&m, 0, sizeof m);
        m.ipv6mr_multiaddr = g6;
        m.ipv6mr_interface = iface ? (unsigned)atoi(iface) : 0;
        if (setsockopt(s->fd, IPPROTO_IPV6, join ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP, &m,
                       sizeof m) < 0)
            return blitz__errno_rc();
        return BLITZ_OK;
    }
    return BLITZ_EINVAL;
}

BLITZ_API int blitz_udp_join_multicast(blitz_socket *s, const char *group, const char *iface) {
    return blitz__multicast(s, group, iface, 1);
}
BLITZ_API int blitz_udp_leave_multicast(blitz_socket *s, const char *group, const char *iface) {
    return blitz__multicast(s, group, iface, 0);
}
BLITZ_API int blitz_udp_set_multicast_loop(blitz_socket *s, int on) {
    if (!s)
        return BLITZ_EINVAL;
    if (s->family == AF_INET6)
        return blitz__setopt(s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, on != 0);
    return blitz__setopt(s, IPPROTO_IP, IP_MULTICAST_LOOP, on != 0);
}
BLITZ_API int blitz_udp_set_broadcast(blitz_socket *s, int on) {
    return blitz__setopt(s, SOL_SOCKET, SO_BROADCAST, on != 0);
}
/* ====[ END src/net_sock.c ]=============================================== */
/* ====[ BEGIN src/worker.c ]=============================================== */
/* >>worker */
/* The multi-thread scheduler's workers (seeds 000 and 001).
 *
 * Each worker owns a LIFO slot, a local ring (local_queue.c), a 32-slot
 * buffer of tasks fetched from the global queue, a parker and a PRNG.
 * Finding work, in order:
 *   0. every `global_interval` polls, the global queue first (fairness for
 *      remote spawns and wakes; the interval adapts to the poll time)
 *   1. the global batch buffer
 *   2. the LIFO slot, at most BLITZ_MAX_LIFO_POLLS_PER_TICK times a tick;
 *      after that its task is flushed to the back of the ring
 *   3. the local ring
 *   4. a batch from the global queue
 *   5. as a searcher (at most half the workers): steal half of a random
 *      victim's ring, then the global queue once more
 *   6. spin briefly, then park (idle.c has the protocol)
 * A tick is up to BLITZ_BUDGET_PER_TICK polls; after each the EWMA of the
 * poll time sets the next global-queue interval. */
/* internal.h already included */

/* Pauses between two looks at the queues while spinning before a park:
 * looking reads other workers' ring indices, which they write on every push
 * and pop, so looking too often slows them down. */
#ifndef BLITZ__SPIN_PAUSES
#define BLITZ__SPIN_PAUSES 32
#endif

static inline uint64_t blitz__rng_next(uint64_t s[2]) {
    /* xorshift64+ */
    uint64_t s1 = s[0];
    const uint64_t s0 = s[1];
    s[0] = s0;
    s1 ^= s1 << 23;
    s[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return s[1] + s0;
}

BLITZ_PRIVATE void blitz__worker_init(blitz__worker *w, blitz_runtime *rt, uint32_t index) {
    memset(w, 0, sizeof *w);
    blitz__local_queue_init(&w->queue);
    blitz__parker_init(&w->parker);
    w->rt = rt;
    w->index = index;
    w->avg_poll_ns = BLITZ__INITIAL_AVG_POLL_NS;
    w->global_interval = rt->fixed_interval
                             ? rt->fixed_interval
                             : BLITZ__INTERVAL_TARGET_NS / BLITZ__INITIAL_AVG_POLL_NS;
    blitz__u32_store(&w->interval_shared, w->global_interval, BLITZ__RELAXED);
    uint64_t seed = (uint64_t)(uintptr_t)w ^ ((uint64_t)index * 0x9E3779B97F4A7C15u);
    w->rng[0] = seed | 1;
    w->rng[1] = (seed * 0xBF58476D1CE4E5B9u) | 2;
}

/* ---- scheduling onto a worker ------------------------------------------------ */

static void blitz__remote_schedule(blitz_runtime *rt, blitz__task *t) {
    if (blitz__global_queue_push(&rt->global, t) == BLITZ_OK)
        blitz__idle_notify_parked(rt);
    /* else: closed by shutdown; the task stays SCHEDULED and the sweep
     * completes it as cancelled. */
}

/* A task woken or spawned on worker `w` itself goes to the LIFO slot; the
 * task it displaces goes to the back of the ring, where others may steal
 * it, so a parked worker is told. */
static void blitz__worker_schedule_local(blitz__worker *w, blitz__task *t) {
    if (w->wake_batching) {
        /* Many wakes at once (timers firing): collected, then spread in one
         * go by blitz__wake_batch_end instead of churning the LIFO slot. */
        blitz__list_append(&w->wake_head, &w->wake_tail, t);
        w->wake_count++;
        return;
    }
    /* Acquire: the flag is set by this same thread today, but maintenance
     * that runs while parking (timers, I/O) may schedule from here too;
     * then the task must not sit in the slot of a sleeping worker. */
    if (blitz__u32_load(&w->transitioning_to_park, BLITZ__ACQUIRE)) {
        blitz__remote_schedule(w->rt, t);
        return;
    }
    blitz__task *prev = w->lifo_slot;
    w->lifo_slot = t;
    if (prev) {
        blitz__local_queue_push(&w->queue, prev, w->rt, &w->counters);
        blitz__idle_notify_parked(w->rt);
    }
}

/* Wakes issued between begin and end on a worker thread are collected and
 * then queued together: as many as fit into the ring, the rest to the
 * global queue as one batch, and parked workers are told. Other threads
 * schedule as usual. */
BLITZ_PRIVATE void blitz__wake_batch_begin(void) {
    blitz__context *ctx = blitz__context_get();
    if (ctx && ctx->worker)
        ctx->worker->wake_batching = 1;
}

BLITZ_PRIVATE void blitz__wake_batch_end(void) {
    blitz__context *ctx = blitz__context_get();
    if (!ctx || !ctx->worker || !ctx->worker->wake_batching)
        return;
    blitz__worker *w = ctx->worker;
    w->wake_batching = 0;
    blitz__task *t = w->wake_head;
    uint64_t n = w->wake_count, woken = n;
    w->wake_head = w->wake_tail = NULL;
    w->wake_count = 0;
    if (!t)
        return;
    while (t) {
        blitz__task *next = t->next;
        if (!blitz__local_queue_try_push(&w->queue, t))
            break;
        t = next;
        n--;
    }
    if (t) {
        blitz__task *last = t;
        while (last->next)
            last = last->next;
        (void)blitz__global_queue_push_batch(&w->rt->global, t, last, n);
    }
    /* This worker runs the first task itself: wake another only when there
     * is more (a futex wake costs tens of microseconds here). */
    if (woken > 1)
        blitz__idle_notify_parked(w->rt);
}

BLITZ_PRIVATE void blitz__task_schedule(blitz__task *t) {
    blitz_runtime *rt = blitz__task_runtime(t);
    /* Relaxed: PINNED never changes after spawn. */
    if (BLITZ__UNLIKELY(blitz__u64_load(&t->state, BLITZ__RELAXED) & BLITZ__TASK_PINNED)) {
        /* Counted runnable until its thread starts polling it (the paused
         * clock must not jump meanwhile). */
        blitz__u32_fetch_add(&rt->pinned_runnable, 1, BLITZ__SEQ_CST);
        blitz__wake_thread_joiners(rt);
        return;
    }
    blitz__context *ctx = blitz__context_get();
    if (rt->flavor == BLITZ_CURRENT_THREAD) {
        if (ctx && ctx->rt == rt && ctx->ct_driver)
            blitz__ct_push(rt, t);
        else
            blitz__ct_inject(rt, t);
        return;
    }
    if (ctx && ctx->rt == rt && ctx->worker)
        blitz__worker_schedule_local(ctx->worker, t);
    else
        blitz__remote_schedule(rt, t);
}

/* Yielded tasks of this tick join the back of the ring, as far as it has
 * room; the rest stay deferred (private to this worker) rather than
 * overflow to the global queue: a task that only yields has no reason to
 * change cores, and moving it costs cache misses on every poll. */
static void blitz__worker_flush_deferred(blitz__worker *w) {
    blitz__task *t = w->deferred_head;
    while (t) {
        /* Read the link first: once in the ring the task may be stolen. */
        blitz__task *next = t->next;
        if (!blitz__local_queue_try_push(&w->queue, t))
            break;
        t = next;
    }
    w->deferred_head = t;
    if (!t)
        w->deferred_tail = NULL;
    blitz__idle_notify_parked(w->rt);
}

/* After NOTIFIED: behind everything already runnable here. After a yield:
 * deferred to the end of the tick. */
BLITZ_PRIVATE void blitz__task_reschedule(blitz__task *t, blitz__context *ctx, int yielded) {
    blitz_runtime *rt = ctx->rt;
    if (rt != blitz__task_runtime(t) ||
        (blitz__u64_load(&t->state, BLITZ__RELAXED) & BLITZ__TASK_PINNED)) {
        blitz__task_schedule(t);
    } else if (ctx->worker) {
        if (yielded) {
            blitz__list_append(&ctx->worker->deferred_head, &ctx->worker->deferred_tail, t);
        } else {
            blitz__local_queue_push(&ctx->worker->queue, t, rt, &ctx->worker->counters);
            blitz__idle_notify_parked(rt);
        }
    } else if (ctx->ct_driver) {
        if (yielded)
            blitz__list_append(&rt->ct->deferred_head, &rt->ct->deferred_tail, t);
        else
            blitz__ct_push(rt, t);
    } else if (rt->flavor == BLITZ_CURRENT_THREAD) {
        blitz__ct_inject(rt, t);
    } else {
        blitz__remote_schedule(rt, t);
    }
}

/* ---- finding work ---------------------------------------------------------------- */

/* Moves a batch from the global queue: the first task is returned, up to 32
 * more go to the batch buffer, the rest to the ring. */
static blitz__task *blitz__worker_fetch_global(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    uint64_t len = blitz__global_queue_len(&rt->global);
    if (len == 0)
        return NULL;
    uint64_t want = len / rt->num_workers;
    if (want < BLITZ__GLOBAL_BATCH_MIN)
        want = BLITZ__GLOBAL_BATCH_MIN;
    if (want > BLITZ__GLOBAL_BATCH_MAX)
        want = BLITZ__GLOBAL_BATCH_MAX;
    /* No more than fits in the batch buffer and the ring: a batch that
     * overflowed the ring would go straight back to the global queue. */
    uint64_t room = 1 + (w->batch_head == w->batch_len ? BLITZ__BATCH_BUFFER_SIZE : 0) +
                    (BLITZ_LOCAL_QUEUE_CAPACITY - blitz__local_queue_len(&w->queue));
    if (want > room)
        want = room;
    blitz__task *got[BLITZ__GLOBAL_BATCH_MAX];
    uint32_t n = blitz__global_queue_pop_batch(&rt->global, got, (uint32_t)want);
    if (n == 0)
        return NULL;
    BLITZ__STAT(blitz__u64_bump(&w->counters.batch_fetches, 1));
    uint32_t i = 1;
    if (w->batch_head == w->batch_len) {
        w->batch_head = w->batch_len = 0;
        while (i < n && w->batch_len < BLITZ__BATCH_BUFFER_SIZE)
            w->batch[w->batch_len++] = got[i++];
    }
    if (i < n) {
        for (; i < n; i++)
            blitz__local_queue_push(&w->queue, got[i], rt, &w->counters);
        blitz__idle_notify_parked(rt);
    }
    return got[0];
}

static blitz__task *blitz__worker_next_local(blitz__worker *w) {
    blitz__task *t = NULL;
    if (++w->tick % w->global_interval == 0)
        t = blitz__worker_fetch_global(w);
    if (!t && w->batch_head < w->batch_len)
        t = w->batch[w->batch_head++];
    if (!t && w->lifo_slot) {
        t = w->lifo_slot;
        w->lifo_slot = NULL;
        /* At most BLITZ_MAX_LIFO_POLLS_PER_TICK LIFO polls in a row: two
         * tasks that keep waking each other would otherwise hold the worker
         * forever. The slot keeps a woken task on this core, next to the
         * data its waker just wrote. */
        if (w->lifo_polls < BLITZ_MAX_LIFO_POLLS_PER_TICK) {
            w->lifo_polls++;
            BLITZ__STAT(blitz__u64_bump(&w->counters.lifo_hits, 1));
            return t;
        }
        /* Cap reached: the slot's task joins the FIFO order, visible to
         * stealers. */
        blitz__local_queue_push(&w->queue, t, w->rt, &w->counters);
        t = NULL;
    }
    if (!t)
        t = blitz__local_queue_pop(&w->queue);
    if (!t)
        t = blitz__worker_fetch_global(w);
    if (t)
        w->lifo_polls = 0;
    return t;
}

static blitz__task *blitz__worker_steal(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    uint32_t n = rt->num_workers;
    uint32_t start = (uint32_t)(blitz__rng_next(w->rng) % n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = (start + i) % n;
        if (v == w->index)
            continue;
        uint32_t stolen = 0;
        blitz__task *t = blitz__local_queue_steal_into(&rt->workers[v].queue, &w->queue, &stolen);
        if (t) {
            BLITZ__STAT(blitz__u64_bump(&w->counters.steals, 1));
            BLITZ__STAT(blitz__u64_bump(&w->counters.stolen, stolen));
            return t;
        }
    }
    return NULL;
}

/* Steps 5: steal as a searcher, then the global queue. */
static blitz__task *blitz__worker_search(blitz__worker *w) {
    if (!w->searching) {
        if (!blitz__idle_try_become_searcher(w->rt))
            return blitz__worker_fetch_global(w);
        w->searching = 1;
    }
    blitz__task *t = blitz__worker_steal(w);
    if (!t)
        t = blitz__worker_fetch_global(w);
    return t;
}

static blitz__task *blitz__worker_find(blitz__worker *w) {
    blitz__task *t = blitz__worker_next_local(w);
    if (!t && w->deferred_head) {
        blitz__worker_flush_deferred(w);
        t = blitz__worker_next_local(w);
    }
    if (!t && w->rt->num_workers > 1)
        t = blitz__worker_search(w);
    if (t && w->searching) {
        w->searching = 0;
        if (blitz__idle_transition_from_searching(w->rt))
            blitz__idle_notify_parked(w->rt);
    }
    return t;
}

/* Work another worker could take or this one could find: the global queue
 * or any ring. */
static int blitz__work_available(blitz_runtime *rt) {
    if (blitz__global_queue_len(&rt->global))
        return 1;
    for (uint32_t i = 0; i < rt->num_workers; i++)
        if (blitz__local_queue_len(&rt->workers[i].queue))
            return 1;
    return 0;
}

/* With a paused clock, the threads polling a task are counted, so the
 * clock never jumps while a poll might be about to arm a timer. */
static inline void blitz__paused_poll_begin(blitz_runtime *rt) {
    if (rt->time.paused)
        blitz__u32_fetch_add(&rt->paused_polling, 1, BLITZ__SEQ_CST);
}
static inline void blitz__paused_poll_end(blitz_runtime *rt) {
    if (rt->time.paused)
        blitz__u32_fetch_sub(&rt->paused_polling, 1, BLITZ__SEQ_CST);
}

static void blitz__worker_poll(blitz__worker *w, blitz__task *t, blitz__context *ctx) {
    blitz__paused_poll_begin(w->rt);
    if (blitz__task_run(t, ctx))
        BLITZ__STAT(blitz__u64_bump(&w->counters.polled, 1));
    blitz__paused_poll_end(w->rt);
}

/* ---- parking ------------------------------------------------------------------------ */

/* A timer is due now (the hint has passed). */
static int blitz__time_due(blitz_runtime *rt) {
    uint64_t hint = blitz__u64_load(&rt->time.next_expiry_ns, BLITZ__SEQ_CST);
    return hint != UINT64_MAX && blitz__rt_now(rt) >= hint;
}

/* Paused clock: when this worker is the last to park and nothing else runs,
 * every task is idle, so jump to the next timer. Returns 1 when it did. */
/* Paused clock: every task is idle when every started worker is parked (the
 * caller's own bit may be set), no other thread polls a task, no pinned
 * main task is runnable, and nothing is queued. Seq_cst loads: each counter
 * is raised before its thread starts the work it counts. */
static int blitz__runtime_idle(blitz_runtime *rt) {
    uint64_t parked = blitz__u64_load(&rt->idle.parked_bitmap, BLITZ__SEQ_CST);
    return (uint32_t)__builtin_popcountll(parked) >=
               blitz__u32_load(&rt->workers_started, BLITZ__RELAXED) &&
           !blitz__u32_load(&rt->external_running, BLITZ__SEQ_CST) &&
           !blitz__u32_load(&rt->pinned_runnable, BLITZ__SEQ_CST) &&
           !blitz__u32_load(&rt->paused_polling, BLITZ__SEQ_CST) && !blitz__work_available(rt);
}

/* Jumps the paused clock to the next timer when the runtime is idle.
 * Returns 1 when it did. */
static int blitz__worker_auto_advance(blitz_runtime *rt) {
    if (!rt->time.paused || !blitz__runtime_idle(rt))
        return 0;
    return blitz__time_auto_advance(rt, blitz__runtime_idle);
}

/* Leaving the parked state after a sleep; for the I/O sleeper this runs
 * before the backend's events are dispatched, so the tasks they wake are
 * offered to the other parked workers rather than to this one. */
typedef struct {
    blitz__worker *w;
    int done;
    int sleeper;
} blitz__worker_unpark_state;

static void blitz__worker_io_woke(void *arg) {
    blitz__worker_unpark_state *st = (blitz__worker_unpark_state *)arg;
    if (st->done)
        return;
    st->done = 1;
    blitz_runtime *rt = st->w->rt;
    if (st->sleeper)
        blitz__u32_store(&rt->time.sleeper, 0, BLITZ__SEQ_CST);
    if (!blitz__idle_unset_parked(rt, st->w->index))
        st->w->searching = 1; /* a notifier claimed us meanwhile */
}

/* Returns 1 when the worker slept in the kernel. */
static int blitz__worker_park(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    /* Spin first: a parked vCPU takes tens of microseconds to wake, far
     * longer than the gap between bursts of work in a busy program. */
    int slept = 0;
    /* Yielded tasks are this worker's work, invisible to everyone else: a
     * worker must never sleep on them. */
    if (w->deferred_head) {
        blitz__worker_flush_deferred(w);
        return 0;
    }
    uint32_t spin = blitz__io_spin_rounds(rt);
    for (uint32_t i = 0; i < spin; i++) {
        if (blitz__u32_load(&rt->shutdown, BLITZ__RELAXED) || blitz__work_available(rt) ||
            blitz__io_ready_cheap(rt))
            return 0;
        for (int k = 0; k < BLITZ__SPIN_PAUSES; k++)
            blitz__cpu_relax();
    }
    /* From here on tasks scheduled from this thread go to the global queue
     * (seed 000 "Lost wakeup prevention"). */
    blitz__u32_store(&w->transitioning_to_park, 1, BLITZ__SEQ_CST);
    if (w->lifo_slot) {
        blitz__local_queue_push(&w->queue, w->lifo_slot, rt, &w->counters);
        w->lifo_slot = NULL;
    }
    if (blitz__local_queue_len(&w->queue) || w->batch_head < w->batch_len)
        goto out;
    if (w->searching) {
        w->searching = 0;
        /* The last searcher to leave re-checks every queue: a producer that
         * saw it searching did not wake anyone. */
        if (blitz__idle_transition_from_searching(rt)) {
            blitz__fence_seq_cst();
            if (blitz__work_available(rt))
                goto out;
        }
    }
    blitz__idle_set_parked(rt, w->index);
    blitz__fence_seq_cst();
    if (blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE) || blitz__work_available(rt) ||
        blitz__time_due(rt) || blitz__worker_auto_advance(rt)) {
        if (!blitz__idle_unset_parked(rt, w->index))
            w->searching = 1; /* a notifier claimed us meanwhile */
        goto out;
    }
    /* One parked worker sleeps until the next timer (the sleeper); the
     * others until woken. Timer arming reads `sleeper` after publishing
     * the new deadline (seq_cst both sides), and wakes the sleeper or, if
     * there is none, a parked worker: this one, whose bit is already set. */
    /* With an I/O driver the sleeper waits in the backend, with the timer
     * deadline as its timeout, so I/O reaches an idle runtime at once. */
    uint64_t timeout = rt->park_timeout_ns, timer_ns = blitz__time_sleep_ns(rt);
    uint32_t none = 0;
    int io = rt->io != NULL;
    int sleeper = (timer_ns || io) &&
                  blitz__u32_cas(&rt->time.sleeper, &none, w->index + 1, BLITZ__SEQ_CST);
    if (sleeper) {
        /* Re-read after becoming the sleeper: an earlier timer armed in
         * between saw no sleeper and woke a parked worker, maybe not us. */
        timer_ns = blitz__time_sleep_ns(rt);
        if (timer_ns && (timeout == 0 || timer_ns < timeout))
            timeout = timer_ns;
    }
    BLITZ__STAT(blitz__u64_bump(&w->counters.parked, 1));
    blitz__worker_unpark_state st = {w, 0, sleeper};
    if (sleeper && io) {
        blitz__io_park(rt, &w->parker, timeout, blitz__worker_io_woke, &st);
    } else {
        /* Submissions must not wait for this worker. */
        blitz__io_flush(rt);
        if (!sleeper || timer_ns)
            blitz__parker_park(&w->parker, timeout);
    }
    slept = 1;
    blitz__worker_io_woke(&st);
out:
    blitz__u32_store(&w->transitioning_to_park, 0, BLITZ__RELEASE);
    return slept;
}

/* ---- the run loop ------------------------------------------------------------------- */

/* The adaptive global-queue interval. The clock is read only after a full
 * tick (BLITZ_BUDGET_PER_TICK polls) and after a sleep, so its cost is
 * spread over at least a tick's worth of polls; the average covers every
 * poll since the last reading. */
static void blitz__worker_update_interval(blitz__worker *w, uint64_t now) {
    uint64_t polls = w->stamp_polls, elapsed = now - w->stamp_ns;
    w->stamp_ns = now;
    w->stamp_polls = 0;
    if (w->rt->fixed_interval || polls == 0)
        return;
    uint64_t avg = elapsed / polls;
    /* EWMA with alpha = 0.1. */
    w->avg_poll_ns = (avg + 9 * w->avg_poll_ns) / 10;
    uint64_t interval = BLITZ__INTERVAL_TARGET_NS / (w->avg_poll_ns ? w->avg_poll_ns : 1);
    if (interval < BLITZ__INTERVAL_MIN)
        interval = BLITZ__INTERVAL_MIN;
    if (interval > BLITZ__INTERVAL_MAX)
        interval = BLITZ__INTERVAL_MAX;
    w->global_interval = (uint32_t)interval;
    blitz__u32_store(&w->interval_shared, (uint32_t)interval, BLITZ__RELAXED);
}

static void *blitz__worker_main(void *arg) {
    blitz__worker *w = (blitz__worker *)arg;
    blitz_runtime *rt = w->rt;
    blitz__context ctx;
    ctx.rt = rt;
    ctx.worker = w;
    ctx.ct_driver = 0;
    ctx.current = NULL;
    blitz__context_set(&ctx);
    w->stamp_ns = blitz__now_ns();
    while (!blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE)) {
        uint32_t polls = 0;
        /* Any worker fires due timers (a try-lock: one is enough), so a
         * worker stuck in a long poll does not hold them back. */
        blitz__time_process(rt, 0);
        /* And reaps I/O completions the same way. */
        blitz__io_poll(rt);
        while (polls < BLITZ_BUDGET_PER_TICK) {
            blitz__task *t = blitz__worker_find(w);
            if (!t)
                break;
            blitz__worker_poll(w, t, &ctx);
            polls++;
            /* Shutdown: finish the poll in progress, start no other. */
            if (blitz__u32_load(&rt->shutdown, BLITZ__RELAXED))
                break;
        }
        w->lifo_polls = 0;
        if (w->deferred_head)
            blitz__worker_flush_deferred(w);
        w->stamp_polls += polls;
        if (polls == BLITZ_BUDGET_PER_TICK) {
            blitz__worker_update_interval(w, blitz__now_ns());
        } else if (polls == 0 && blitz__worker_park(w)) {
            /* Time asleep is not poll time. */
            w->stamp_ns = blitz__now_ns();
            w->stamp_polls = 0;
        }
    }
    if (w->searching) {
        w->searching = 0;
        blitz__idle_transition_from_searching(rt);
    }
    blitz__context_set(NULL);
    return NULL;
}

/* Starts the worker threads on first use (seed 002 "lazy start"). Returns
 * an error only when not a single thread could be started. */
BLITZ_PRIVATE int blitz__workers_start(blitz_runtime *rt) {
    if (blitz__u32_load(&rt->started, BLITZ__ACQUIRE))
        return BLITZ_OK;
    int rc = BLITZ_OK;
    blitz__mutex_lock(&rt->start_lock);
    if (!blitz__u32_load(&rt->started, BLITZ__RELAXED)) {
        uint32_t ok = 0;
        for (uint32_t i = 0; i < rt->num_workers; i++) {
            blitz__worker *w = &rt->workers[i];
            int e = blitz__thread_start(&w->thread, blitz__worker_main, w);
            if (e == 0) {
                w->started = 1;
                ok++;
            } else {
                rc = e;
            }
        }
        blitz__u32_store(&rt->workers_started, ok, BLITZ__RELAXED);
        if (ok)
            rc = BLITZ_OK;
        /* Release: a caller that sees `started` sees the threads' handles. */
        if (ok)
            blitz__u32_store(&rt->started, 1, BLITZ__RELEASE);
    }
    blitz__mutex_unlock(&rt->start_lock);
    return rc;
}

BLITZ_PRIVATE int blitz__task_spawn_schedule(blitz_runtime *rt, blitz__task *t) {
    blitz__context *ctx = blitz__context_get();
    if (rt->flavor == BLITZ_CURRENT_THREAD) {
        if (ctx && ctx->rt == rt && ctx->ct_driver) {
            blitz__ct_push(rt, t);
            return BLITZ_OK;
        }
        return blitz__ct_inject(rt, t);
    }
    if (ctx && ctx->rt == rt && ctx->worker) {
        /* spawnFromWorker: the LIFO slot, so a join right after finds it. */
        blitz__worker_schedule_local(ctx->worker, t);
        return BLITZ_OK;
    }
    int rc = blitz__workers_start(rt);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__global_queue_push(&rt->global, t);
    if (rc == BLITZ_OK)
        blitz__idle_notify_parked(rt);
    return rc;
}

/* ---- joins that keep the thread busy (seed 001 "Work-stealing join") ---- */

#define BLITZ__HELP_WAIT_MIN_NS 50000u

/* helpUntilComplete: a worker waiting for `t` runs other work meanwhile. */
BLITZ_PRIVATE void blitz__worker_help_until(blitz__context *ctx, blitz__task *t) {
    blitz__worker *w = ctx->worker;
    blitz_runtime *rt = ctx->rt;
    uint64_t wait_ns = BLITZ__HELP_WAIT_MIN_NS;
    while (!blitz__task_is_complete(t)) {
        /* Shutdown waits for this worker's poll to end: give up (the task
         * is completed as cancelled by the sweep). */
        if (blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            return;
        blitz__task *next = blitz__worker_find(w);
        if (next) {
            blitz__worker_poll(w, next, ctx);
            wait_ns = BLITZ__HELP_WAIT_MIN_NS;
            continue;
        }
        /* Nothing to run: sleep until `t` completes, looking again now and
         * then because this worker is not in the parked set. */
        blitz__io_flush(rt);
        blitz__io_poll(rt);
        if (blitz__wait_completion(rt, t, wait_ns))
            break;
        if (wait_ns < BLITZ__HELP_WAIT_MAX_NS)
            wait_ns *= 2;
    }
}

#define BLITZ__HELP_BATCH 8

/* Runs a few tasks of the global queue on a thread that is not a worker
 * (blockOnComplete), but only when the workers are not keeping up: the
 * queue is no shorter than when this thread last looked (`*seen`). When
 * they keep up, this thread stays out of their way: on a machine with as
 * many workers as cores it would only take CPU time from them. Returns 1
 * when it ran a task. */
static int blitz__external_help(blitz_runtime *rt, blitz__context *hctx, uint64_t *seen) {
    uint64_t len = blitz__global_queue_len(&rt->global);
    uint64_t before = *seen;
    *seen = len;
    if (len == 0 || len < before || blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
        return 0;
    /* Announce before checking shutdown again (seq_cst both ways): shutdown
     * sets its flag, then waits for external_running == 0 before it sweeps
     * the tasks. */
    blitz__u32_fetch_add(&rt->external_running, 1, BLITZ__SEQ_CST);
    blitz__task *batch[BLITZ__HELP_BATCH];
    uint32_t n = 0;
    if (!blitz__u32_load(&rt->shutdown, BLITZ__SEQ_CST))
        n = blitz__global_queue_pop_batch(&rt->global, batch, BLITZ__HELP_BATCH);
    if (n) {
        blitz__context *outer = blitz__context_set(hctx);
        uint64_t polled = 0;
        /* Tasks left unrun at shutdown stay SCHEDULED; the sweep takes
         * them. */
        for (uint32_t i = 0; i < n && !blitz__u32_load(&rt->shutdown, BLITZ__RELAXED); i++)
            polled += (uint64_t)blitz__task_run(batch[i], hctx);
        blitz__context_set(outer);
        BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.polled, polled, BLITZ__RELAXED));
    }
    blitz__u32_fetch_sub(&rt->external_running, 1, BLITZ__RELEASE);
    *seen = blitz__global_queue_len(&rt->global);
    return n != 0;
}

static void blitz__helper_context(blitz__context *c, blitz_runtime *rt) {
    c->rt = rt;
    c->worker = NULL;
    c->ct_driver = 0;
    c->current = NULL;
}

/* blockOnComplete: a thread that is not a worker runs tasks from the global
 * queue while it waits, so progress does not depend on a free worker.
 * `nested`: the thread is inside a poll of one of rt's tasks, which a
 * shutdown waits for, so it gives up then. */
BLITZ_PRIVATE void blitz__external_help_until(blitz_runtime *rt, blitz__task *t, int nested) {
    blitz__context hctx;
    blitz__helper_context(&hctx, rt);
    uint64_t wait_ns = BLITZ__HELP_WAIT_MIN_NS, seen = UINT64_MAX;
    while (!blitz__task_is_complete(t)) {
        if (nested && blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            return;
        if (blitz__external_help(rt, &hctx, &seen)) {
            wait_ns = BLITZ__HELP_WAIT_MIN_NS;
            continue;
        }
        if (!nested && blitz__worker_auto_advance(rt))
            continue;
        if (blitz__wait_completion(rt, t, wait_ns))
            break;
        if (wait_ns < BLITZ__HELP_WAIT_MAX_NS)
            wait_ns *= 2;
    }
}

/* Spins (spin_before_park rounds) until `t` is runnable or complete.
 * Returns 1 if it became so. */
static int blitz__spin_until_runnable(blitz_runtime *rt, blitz__task *t) {
    for (uint32_t i = 0; i < rt->spin_before_park; i++) {
        uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
        if (blitz__lifecycle(s) != BLITZ__LC_IDLE || blitz__u32_load(&rt->shutdown, BLITZ__RELAXED))
            return 1;
        for (int k = 0; k < BLITZ__SPIN_PAUSES; k++)
            blitz__cpu_relax();
    }
    return 0;
}

/* block_on: the calling thread polls the PINNED task `t` itself whenever it
 * is woken, and runs global-queue tasks in between. */
BLITZ_PRIVATE void blitz__block_on(blitz_runtime *rt, blitz__task *t) {
    blitz__context hctx;
    blitz__helper_context(&hctx, rt);
    uint64_t wait_ns = BLITZ__HELP_WAIT_MIN_NS, seen = UINT64_MAX;
    for (;;) {
        uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
        if (blitz__state_is_complete(s))
            return;
        if (blitz__lifecycle(s) == BLITZ__LC_SCHEDULED) {
            blitz__u32_fetch_add(&rt->external_running, 1, BLITZ__SEQ_CST);
            if (!blitz__u32_load(&rt->shutdown, BLITZ__SEQ_CST)) {
                blitz__u32_fetch_sub(&rt->pinned_runnable, 1, BLITZ__SEQ_CST);
                blitz__context *outer = blitz__context_set(&hctx);
                int polled = blitz__task_run(t, &hctx);
                blitz__context_set(outer);
                BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.polled, (uint64_t)polled,
                                                 BLITZ__RELAXED));
            }
            blitz__u32_fetch_sub(&rt->external_running, 1, BLITZ__RELEASE);
            wait_ns = BLITZ__HELP_WAIT_MIN_NS;
            if (!blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
                continue;
        }
        if (blitz__external_help(rt, &hctx, &seen)) {
            wait_ns = BLITZ__HELP_WAIT_MIN_NS;
            continue;
        }
        /* Spin a little first, as workers do before parking: the wake often
         * comes within microseconds, and sleeping would add a kernel wake-up
         * on both sides. */
        if (wait_ns == BLITZ__HELP_WAIT_MIN_NS && blitz__spin_until_runnable(rt, t))
            continue;
        /* Sleep until a wake (PINNED: it bumps the completion word), the
         * completion, or the timeout. The word is read before the re-check. */
        uint32_t seq = blitz__u32_load(&rt->completion_seq, BLITZ__ACQUIRE);
        s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
        if (blitz__lifecycle(s) == BLITZ__LC_SCHEDULED &&
            !blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            continue;
        if (!blitz__task_set_thread_joiner(t))
            return;
        /* Paused clock with every worker asleep: this thread is the last
         * one awake, so it moves the clock. */
        if (blitz__worker_auto_advance(rt))
            continue;
        blitz__sleep_on_completion(rt, seq, wait_ns);
        if (wait_ns < BLITZ__HELP_WAIT_MAX_NS)
            wait_ns *= 2;
    }
}
/* ====[ END src/worker.c ]================================================= */
/* ====[ BEGIN src/current_thread.c ]======================================= */
/* >>current_thread */
/* The current-thread scheduler (seed 004): one run queue, driven by
 * whichever thread waits on the runtime (blitz_task_wait /
 * blitz_runtime_run). Tasks scheduled on the driving thread go straight to
 * the local list; other threads push to the global (injection) queue and
 * unpark the driver. Only one thread drives at a time (`driving`); other
 * waiters sleep on the completion word and take over when the driver
 * leaves. */
/* internal.h already included */

/* Driving thread only. */
BLITZ_PRIVATE void blitz__ct_push(blitz_runtime *rt, blitz__task *t) {
    blitz__list_append(&rt->ct->head, &rt->ct->tail, t);
}

/* Any thread. The parker's token makes an unpark that lands before the
 * driver parks count. */
BLITZ_PRIVATE int blitz__ct_inject(blitz_runtime *rt, blitz__task *t) {
    int rc = blitz__global_queue_push(&rt->global, t);
    if (rc == BLITZ_OK)
        blitz__parker_unpark(&rt->ct->parker);
    return rc;
}

static blitz__task *blitz__ct_pop(blitz__ct_core *ct) {
    blitz__task *t = ct->head;
    if (t) {
        ct->head = t->next;
        if (!ct->head)
            ct->tail = NULL;
    }
    return t;
}

/* Moves everything injected by other threads to the back of the list. */
static void blitz__ct_drain_inject(blitz_runtime *rt) {
    blitz__task *t = blitz__global_queue_take_all(&rt->global);
    while (t) {
        blitz__task *next = t->next;
        blitz__ct_push(rt, t);
        t = next;
    }
}

/* Yielded tasks of this tick join the back of the list. */
static void blitz__ct_flush_deferred(blitz__ct_core *ct) {
    if (!ct->deferred_head)
        return;
    if (ct->tail)
        ct->tail->next = ct->deferred_head;
    else
        ct->head = ct->deferred_head;
    ct->tail = ct->deferred_tail;
    ct->deferred_head = ct->deferred_tail = NULL;
}

/* Runs tasks on the calling (driving) thread until `target` completes or
 * the runtime shuts down. */
static void blitz__ct_drive_until(blitz_runtime *rt, blitz__task *target, blitz__context *ctx) {
    blitz__ct_core *ct = rt->ct;
    uint32_t interval = rt->fixed_interval ? rt->fixed_interval : 31;
    for (;;) {
        if (blitz__task_is_complete(target) || blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            return;
        uint32_t polls = 0;
        blitz__time_process(rt, 1);
        blitz__io_poll(rt);
        while (polls < BLITZ_BUDGET_PER_TICK) {
            /* Take injected tasks now and then even when the list is busy,
             * so remote spawns and wakes are not starved. */
            if (++ct->tick % interval == 0)
                blitz__ct_drain_inject(rt);
            blitz__task *t = blitz__ct_pop(ct);
            if (!t) {
                blitz__ct_drain_inject(rt);
                blitz__ct_flush_deferred(ct);
                if (!(t = blitz__ct_pop(ct)))
                    break;
            }
            if (blitz__task_run(t, ctx))
                BLITZ__STAT(blitz__u64_bump(&ct->counters.polled, 1));
            polls++;
            if (blitz__task_is_complete(target) || blitz__u32_load(&rt->shutdown, BLITZ__RELAXED)) {
                blitz__ct_flush_deferred(ct);
                return;
            }
        }
        blitz__ct_flush_deferred(ct);
        if (polls == 0) {
            /* Idle. A completion on another thread (a cancel) wakes the
             * joiners and unparks us; so does any inject. */
            if (!blitz__task_set_thread_joiner(target))
                return;
            if (blitz__global_queue_len(&rt->global))
                continue;
            /* Idle with a paused clock: jump to the next timer. */
            if (blitz__time_auto_advance(rt, NULL))
                continue;
            uint64_t timeout = rt->park_timeout_ns, timer_ns = blitz__time_sleep_ns(rt);
            if (timer_ns && (timeout == 0 || timer_ns < timeout))
                timeout = timer_ns;
            BLITZ__STAT(blitz__u64_bump(&ct->counters.parked, 1));
            /* The driver waits in the I/O backend, with the timer deadline. */
            if (rt->io)
                blitz__io_park(rt, &ct->parker, timeout, NULL, NULL);
            else
                blitz__parker_park(&ct->parker, timeout);
        }
    }
}

BLITZ_PRIVATE void blitz__ct_wait(blitz_runtime *rt, blitz__task *t, blitz__context *ctx) {
    if (ctx && ctx->rt == rt && ctx->ct_driver) {
        /* Waiting inside one of our own tasks: keep driving, nested. It
         * returns unfinished only at shutdown, which waits for this poll. */
        blitz__ct_drive_until(rt, t, ctx);
        return;
    }
    while (!blitz__task_is_complete(t)) {
        uint32_t idle = 0;
        if (!blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE) &&
            blitz__u32_cas(&rt->ct->driving, &idle, 1, BLITZ__ACQUIRE)) {
            blitz__context dctx;
            dctx.rt = rt;
            dctx.worker = NULL;
            dctx.ct_driver = 1;
            dctx.current = NULL;
            blitz__context *outer = blitz__context_set(&dctx);
            blitz__ct_drive_until(rt, t, &dctx);
            blitz__context_set(outer);
            /* Release: the next driver sees the run queue as we left it. */
            blitz__u32_store(&rt->ct->driving, 0, BLITZ__RELEASE);
            /* Another waiter may now take over driving. */
            blitz__wake_thread_joiners(rt);
            continue;
        }
        blitz__wait_completion(rt, t, rt->park_timeout_ns);
    }
}
/* ====[ END src/current_thread.c ]========================================= */
/* ====[ BEGIN src/runtime.c ]============================================== */
/* >>runtime */
/* The runtime's public face: create, run, shut down, free, statistics.
 *
 * Shutdown protocol:
 *   1. set `shutdown` (spawns now fail) and close the global queue (pushes
 *      fail; a task that cannot be queued stays SCHEDULED);
 *   2. wake every worker / the current-thread driver and wait until no
 *      thread polls a task of this runtime: join the workers, wait for the
 *      driver to leave and for helping joiners (external_running) to finish;
 *   3. sweep: walk every live task block and complete each unfinished task
 *      as cancelled (joiners wake with BLITZ_ECANCELED; tasks nobody holds
 *      are freed, running their drop functions);
 * and blitz_runtime_free then runs the drop functions of the blocks still
 * held (handles, wakers) and frees all memory. */
/* internal.h already included */

static void blitz__runtime_release_memory(blitz_runtime *rt) {
    blitz__io_destroy(rt);
    if (rt->workers) {
        for (uint32_t i = 0; i < rt->num_workers; i++)
            blitz__parker_destroy(&rt->workers[i].parker);
        blitz__free(rt->workers_raw);
    }
    if (rt->ct) {
        blitz__parker_destroy(&rt->ct->parker);
        blitz__free(rt->ct);
    }
    blitz__global_queue_destroy(&rt->global);
    blitz__time_destroy(rt);
    blitz__mutex_destroy(&rt->start_lock);
    blitz__mutex_destroy(&rt->alloc_lock);
    blitz__free(rt);
}

BLITZ_API int blitz_runtime_new(const blitz_config *cfg, blitz_runtime **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    blitz_config c;
    memset(&c, 0, sizeof c);
    if (cfg)
        c = *cfg;
    if (c.flavor != BLITZ_MULTI_THREAD && c.flavor != BLITZ_CURRENT_THREAD)
        return BLITZ_EINVAL;
    if (c.workers > BLITZ_MAX_WORKERS)
        return BLITZ_EINVAL;
    if (c.global_queue_interval > BLITZ__INTERVAL_MAX)
        return BLITZ_EINVAL;
    blitz_runtime *rt = (blitz_runtime *)blitz__calloc(sizeof *rt);
    if (!rt)
        return BLITZ_ENOMEM;
    rt->flavor = c.flavor;
    rt->park_timeout_ns = c.park_timeout_ns;
    rt->spin_before_park = c.spin_before_park == UINT32_MAX ? 0
                           : c.spin_before_park             ? c.spin_before_park
                                                            : BLITZ__DEFAULT_SPIN;
    rt->spin_explicit = c.spin_before_park != 0;
    rt->fixed_interval = c.global_queue_interval;
    if (rt->fixed_interval && rt->fixed_interval < 1)
        rt->fixed_interval = 1;
    int rc = blitz__global_queue_init(&rt->global);
    if (rc == 0)
        rc = blitz__mutex_init(&rt->start_lock);
    if (rc == 0)
        rc = blitz__mutex_init(&rt->alloc_lock);
    if (rc != 0) {
        blitz__free(rt);
        return rc;
    }
    blitz__idle_init(&rt->idle);
    blitz__time_init(rt, c.start_paused != 0);
    if (c.flavor == BLITZ_MULTI_THREAD) {
        uint32_t n = c.workers;
        if (n == 0) {
            n = blitz__cpu_count();
            if (n > BLITZ_MAX_WORKERS)
                n = BLITZ_MAX_WORKERS;
        }
        rt->num_workers = n;
        rt->workers = (blitz__worker *)blitz__alloc_aligned(sizeof(blitz__worker) * n,
                                                            BLITZ_CACHE_LINE, &rt->workers_raw);
        if (!rt->workers) {
            blitz__runtime_release_memory(rt);
            return BLITZ_ENOMEM;
        }
        for (uint32_t i = 0; i < n; i++)
            blitz__worker_init(&rt->workers[i], rt, i);
    } else {
        rt->num_workers = 1;
        rt->ct = (blitz__ct_core *)blitz__calloc(sizeof *rt->ct);
        if (!rt->ct) {
            blitz__runtime_release_memory(rt);
            return BLITZ_ENOMEM;
        }
        blitz__parker_init(&rt->ct->parker);
    }
    rc = blitz__io_create(rt, c.backend);
    if (rc != BLITZ_OK) {
        blitz__runtime_release_memory(rt);
        return rc;
    }
    *out = rt;
    return BLITZ_OK;
}

/* A thread that is polling one of rt's tasks cannot wait for rt to stop. */
static int blitz__inside(blitz_runtime *rt) {
    blitz__context *ctx = blitz__context_get();
    return ctx && ctx->rt == rt;
}

static void blitz__sweep_cancel(blitz__task *t) {
    if (blitz__state_claim_for_shutdown(t))
        blitz__task_finish(t, 1);
}

BLITZ_API int blitz_runtime_shutdown(blitz_runtime *rt) {
    if (!rt)
        return BLITZ_EINVAL;
    if (blitz__inside(rt))
        return BLITZ_EDEADLK;
    blitz__mutex_lock(&rt->start_lock);
    if (rt->shutdown_done) {
        blitz__mutex_unlock(&rt->start_lock);
        return BLITZ_OK;
    }
    /* Seq_cst pairs with the helpers' announce-then-check (worker.c). */
    blitz__u32_store(&rt->shutdown, 1, BLITZ__SEQ_CST);
    blitz__global_queue_close(&rt->global);
    /* Waits nested in polls notice at once. */
    blitz__wake_thread_joiners(rt);
    if (rt->workers) {
        blitz__idle_unpark_all(rt);
        for (uint32_t i = 0; i < rt->num_workers; i++)
            if (rt->workers[i].started)
                pthread_join(rt->workers[i].thread, NULL);
    }
    if (rt->ct) {
        while (blitz__u32_load(&rt->ct->driving, BLITZ__ACQUIRE)) {
            blitz__parker_unpark(&rt->ct->parker);
            sched_yield();
        }
    }
    while (blitz__u32_load(&rt->external_running, BLITZ__ACQUIRE))
        sched_yield();
    blitz__u32_store(&rt->sweeping, 1, BLITZ__RELEASE);
    blitz__block_walk(rt, blitz__sweep_cancel);
    blitz__time_shutdown(rt);
    /* Cancels every op; waits until the kernel holds no buffer. */
    blitz__io_shutdown(rt);
    rt->shutdown_done = 1;
    blitz__mutex_unlock(&rt->start_lock);
    blitz__wake_thread_joiners(rt);
    return BLITZ_OK;
}

static void blitz__final_drop(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (s & BLITZ__TASK_HAS_DROP)
        (*blitz__task_drop_slot(t))(blitz__task_state_ptr(t));
    blitz__u64_store(&t->state, 0, BLITZ__RELEASE);
}

/* Blocks not yet freed. Acquire pairs with blitz__count_freed. */
static uint64_t blitz__live_blocks(blitz_runtime *rt) {
    uint64_t spawned = blitz__u64_load(&rt->remote_counters.spawned, BLITZ__ACQUIRE);
    uint64_t freed = blitz__u64_load(&rt->remote_counters.freed, BLITZ__ACQUIRE);
    for (uint32_t i = 0; i < rt->num_workers; i++) {
        const blitz__worker_counters *k =
            rt->workers ? &rt->workers[i].counters : &rt->ct->counters;
        spawned += blitz__u64_load(&k->spawned, BLITZ__ACQUIRE);
        freed += blitz__u64_load(&k->freed, BLITZ__ACQUIRE);
    }
    return spawned - freed;
}

#define BLITZ__FREE_GRACE_NS 200000000u

BLITZ_API int blitz_runtime_free(blitz_runtime *rt) {
    if (!rt)
        return BLITZ_EINVAL;
    int rc = blitz_runtime_shutdown(rt);
    if (rc != BLITZ_OK)
        return rc;
    /* Every task is complete now, but a thread of another runtime may still
     * hold one of ours for an instant: a completer that copied our task's
     * join waker wakes and drops it after our task already saw the
     * completion. Give such references a moment to go; handles and wakers
     * the program still holds will not, and stay invalid after this. */
    uint64_t start = blitz__now_ns();
    while (blitz__live_blocks(rt) && blitz__now_ns() - start < BLITZ__FREE_GRACE_NS)
        sched_yield();
    blitz__io_destroy(rt);
    blitz__block_walk(rt, blitz__final_drop);
    blitz__block_free_all(rt);
    blitz__runtime_release_memory(rt);
    return BLITZ_OK;
}

BLITZ_API int blitz_runtime_run(blitz_runtime *rt, blitz_poll_fn poll, void *state, size_t size) {
    blitz_task *h;
    blitz_spawn_opts o = blitz__plain_opts(poll, state, size);
    /* Multi-thread: the calling thread polls the main task itself (it is
     * pinned to this thread, like Tokio's block_on), so waking it costs no
     * queue trip. Not when called from inside one of rt's tasks: then it is
     * an ordinary spawn and join. */
    blitz__context *ctx = blitz__context_get();
    int pin = rt && rt->flavor == BLITZ_MULTI_THREAD && !(ctx && ctx->rt == rt);
    int rc = blitz__spawn(rt, &o, &h, pin);
    if (rc != BLITZ_OK)
        return rc;
    if (pin) {
        /* The workers also drive the timers of the pinned task. */
        rc = blitz__workers_start(rt);
        if (rc != BLITZ_OK) {
            /* Never polled; the shutdown sweep reclaims it. */
            blitz_task_release(&h);
            return rc;
        }
        blitz__block_on(rt, h);
    }
    rc = blitz_task_wait(h);
    if (rc == BLITZ_OK && state)
        memcpy(state, blitz_task_state(h), size);
    blitz_task_release(&h);
    return rc;
}

BLITZ_API int blitz_run(blitz_poll_fn poll, void *state, size_t size) {
    blitz_runtime *rt;
    int rc = blitz_runtime_new(NULL, &rt);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz_runtime_run(rt, poll, state, size);
    blitz_runtime_free(rt);
    return rc;
}

BLITZ_API blitz_runtime *blitz_runtime_current(void) {
    blitz__context *ctx = blitz__context_get();
    return ctx ? ctx->rt : NULL;
}

BLITZ_API blitz_flavor blitz_runtime_flavor(const blitz_runtime *rt) {
    return rt ? rt->flavor : BLITZ_MULTI_THREAD;
}

BLITZ_API uint32_t blitz_runtime_workers(const blitz_runtime *rt) {
    return rt ? rt->num_workers : 0;
}

/* ---- statistics ---------------------------------------------------------------- */

static uint64_t blitz__counter(const blitz__atomic_u64 *c) {
    return blitz__u64_load(c, BLITZ__RELAXED);
}

BLITZ_API int blitz_runtime_worker_stats(const blitz_runtime *rt, uint32_t worker,
                                         blitz_worker_stats *out) {
    if (!rt || !out || worker >= rt->num_workers)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    const blitz__worker_counters *k =
        rt->workers ? &rt->workers[worker].counters : &rt->ct->counters;
    out->tasks_polled = blitz__counter(&k->polled);
    out->tasks_stolen = blitz__counter(&k->stolen);
    out->steals = blitz__counter(&k->steals);
    out->times_parked = blitz__counter(&k->parked);
    out->lifo_hits = blitz__counter(&k->lifo_hits);
    out->global_batch_fetches = blitz__counter(&k->batch_fetches);
    out->overflows = blitz__counter(&k->overflows);
    out->global_queue_interval =
        rt->workers          ? blitz__u32_load(&rt->workers[worker].interval_shared, BLITZ__RELAXED)
        : rt->fixed_interval ? rt->fixed_interval
                             : 31;
    return BLITZ_OK;
}

BLITZ_API int blitz_runtime_stats(const blitz_runtime *rt, blitz_stats *out) {
    if (!rt || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    uint64_t spawned = blitz__counter(&rt->remote_counters.spawned);
    uint64_t freed = blitz__counter(&rt->remote_counters.freed);
    for (uint32_t i = 0; i < rt->num_workers; i++) {
        const blitz__worker_counters *k =
            rt->workers ? &rt->workers[i].counters : &rt->ct->counters;
        spawned += blitz__counter(&k->spawned);
        freed += blitz__counter(&k->freed);
        out->total_polled += blitz__counter(&k->polled);
        out->total_stolen += blitz__counter(&k->stolen);
        out->total_parked += blitz__counter(&k->parked);
    }
    out->total_polled += blitz__counter(&rt->remote_counters.polled);
    out->total_spawned = spawned;
    out->tasks_alive = spawned >= freed ? spawned - freed : 0;
    out->global_queue_depth = blitz__u64_load(&rt->global.len, BLITZ__RELAXED);
    out->num_workers = rt->num_workers;
    out->workers_started = rt->workers
                               ? blitz__u32_load(&rt->workers_started, BLITZ__RELAXED)
                               : (uint32_t)(blitz__u32_load(&rt->ct->driving, BLITZ__RELAXED) != 0);
    return BLITZ_OK;
}
/* ====[ END src/runtime.c ]================================================ */
#endif /* BLITZ_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
blitz is available under either of two licences; choose whichever you like.
------------------------------------------------------------------------------
ALTERNATIVE A - MIT License
Copyright (c) 2026 the blitz authors
Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
ALTERNATIVE B - Public Domain (www.unlicense.org)
This is free and unencumbered software released into the public domain.
Anyone is free to copy, modify, publish, use, compile, sell, or distribute this
software, either in source code form or as a compiled binary, for any purpose,
commercial or non-commercial, and by any means.
------------------------------------------------------------------------------
*/
