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
  and a paused (virtual) clock for tests;
- synchronization: semaphore, mutex, rwlock, notify, barrier, once cell and
  cancellation tokens, each usable from tasks (async), from plain threads
  (blocking) and without waiting (try_).

blitz DOES NOT yet have: I/O (sockets, files), channels, a
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

Run-time settings live in blitz_config (zero means default): flavour,
workers (0 = CPU count; more than BLITZ_MAX_WORKERS is BLITZ_EINVAL),
park timeout (0: a parked worker sleeps until work or its next timer),
spin rounds before parking (64), a fixed global-queue interval (0 =
adaptive), and start_paused (virtual time, see TIME).


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


SYNCHRONIZATION
===============
blitz_semaphore, blitz_mutex, blitz_rwlock, blitz_notify, blitz_barrier,
blitz_once_cell and blitz_cancel_token are structs you allocate (embed them
in the data they guard) with _init / _destroy. Every waiting operation has
three forms:

  try_      never waits, needs no runtime: blitz_mutex_try_lock(&m)
  async     a poll function over an op struct kept in the task's state
            (zero-filled; no allocation per wait):
              BLITZ_AWAIT(s, blitz_mutex_lock(cx, &s->lock_op, &sh->mutex));
              ...critical section...
              blitz_mutex_unlock(&sh->mutex);
  blocking  for plain threads: blitz_mutex_lock_blocking(&m); inside a task
            it returns BLITZ_EDEADLK instead of blocking a worker.

Results of async ops are in the op's public fields (result, is_leader,
claimed, value). Waiters are served first come, first served: the
semaphore hands released permits straight to the oldest waiter (filling a
big request a part at a time), so a later, smaller request never overtakes
it. The mutex is a one-permit semaphore; the rwlock a semaphore of
BLITZ_RWLOCK_MAX_READERS permits where a writer takes them all, so a
queued writer holds back later readers and neither side starves. Notify
stores at most one permit (notify_one with nobody waiting); notify_waiters
wakes only the current waiters. A barrier's last arrival is its
generation's leader. A once cell holds a void *: one caller claims it and
initializes (awaiting whatever it needs), the others wait; a claimer that
fails calls blitz_once_cell_abandon and the next waiter gets the claim.
Cancellation tokens form trees: cancelling one cancels its descendants.

Each async op has a cancel function (blitz_mutex_lock_cancel, ...) and a
blitz_op constructor (blitz_op_mutex_lock, ...), so it can be used with
blitz_timeout_op, the combinators and blitz_op_wait:

    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 10 * BLITZ_MSEC,
                                    blitz_mutex_lock(cx, &s->lock_op, &sh->m),
                                    blitz_mutex_lock_cancel, &s->lock_op));
    if (s->timer.expired) ...no lock; nothing is left queued...

Cancel safety: cancelling a waiting op removes it from the queue; what it
had already been handed (permits, a notify_one notification, a once-cell
claim) passes to the next waiter, never lost. An op that already returned
READY keeps what it got. A cancelled barrier wait withdraws its arrival.
A task cancelled while one of its ops waits must cancel the op from its
cancel hook (blitz_spawn_opts.cancel; cx may be NULL there), and unlock
what it holds; otherwise the queued op keeps the task's memory alive and
the permit it is later handed is never returned. Destroying a primitive
while ops wait on it is a bug.


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
    XX(EMFILE, -24, "too many open files")              \
    XX(ENOSPC, -28, "no space left on device")          \
    XX(EPIPE, -32, "broken pipe")                       \
    XX(ERANGE, -34, "result out of range")              \
    XX(EDEADLK, -35, "resource deadlock would occur")   \
    XX(ENOSYS, -38, "function not implemented")         \
    XX(ETIMEDOUT, -110, "operation timed out")          \
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
     * parked thread costs tens of microseconds). 0 = default (64);
     * UINT32_MAX = never spin. */
    uint32_t spin_before_park;
    /* Fixed global-queue check interval in ticks instead of the adaptive one
     * (0 = adaptive, 8..255 from the average poll time). */
    uint32_t global_queue_interval;
    /* Virtual time for tests (Tokio's paused clock): the runtime's clock
     * moves only with blitz_time_advance, or jumps to the next timer when
     * every task is idle, so timeouts run instantly and deterministically. */
    int start_paused;
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
/* ====[ BEGIN src/api_op.h ]=============================================== */
/* >>api_op */
/* Public API: ops as values, the waiter queue that blocking primitives share,
 * and the combinators over ops (join-all, race, select, task groups). */

/* ---------------------------------------------------------------------------
 * Ops as values
 *
 * An op is anything a task can await: a poll function over an object that
 * lives in the task's state, plus a cancel function that withdraws a
 * pending op (removes its waiter, hands back what it was given). Every
 * awaitable in blitz has both; blitz_op bundles them with the object so the
 * combinators below, and blitz_op_wait, can drive any op:
 *
 *   s->ops[0] = blitz_op_join(s->child);
 *   s->ops[1] = blitz_op_sleep_until(&s->timer, deadline);
 *   BLITZ_AWAIT(s, blitz_race(cx, &s->race, s->ops, 2));
 *   if (s->race.winner == 1) { ...timed out; the join was withdrawn... }
 *
 * The poll function has the shape of a task's: it returns BLITZ_READY once
 * the op finished (its result is then in the op's object) and BLITZ_PENDING
 * after registering the waker of `cx`. The cancel function must be safe on
 * an op that is idle, pending or finished.
 * ------------------------------------------------------------------------- */

typedef struct blitz_op {
    blitz_poll_fn poll;
    blitz_cancel_fn cancel; /* may be NULL for ops that hold nothing */
    void *arg;
} blitz_op;

BLITZ_API blitz_op blitz_op_make(blitz_poll_fn poll, blitz_cancel_fn cancel, void *arg);
/* Awaits a task handle (blitz_join / blitz_join_cancel). */
BLITZ_API blitz_op blitz_op_join(blitz_task *t);
/* Sleeps until `deadline_ns` (stored in t->deadline) / for `ns` from the
 * op's first poll (blitz_sleep_until / blitz_sleep; cancel disarms). */
BLITZ_API blitz_op blitz_op_sleep_until(blitz_timer *t, uint64_t deadline_ns);
/* Cancel function for timers, as a blitz_cancel_fn. */
BLITZ_API void blitz_timer_cancel_op(blitz_cx *cx, void *timer);

/* Runs an op to completion on the calling plain thread, sleeping between
 * polls (the blocking form of every awaitable). `rt` is the runtime whose
 * clock timers in the op use; NULL when the op needs no timer.
 * BLITZ_OK when the op finished; BLITZ_EINVAL for an op without a poll
 * function; BLITZ_EDEADLK when called from inside a task or a runtime's
 * thread (it would block the thread the op waits on). */
BLITZ_API int blitz_op_wait(blitz_runtime *rt, blitz_op op);

/* ---------------------------------------------------------------------------
 * Private: an op's place in a primitive's queue of waiters. Primitives and
 * channels embed it in their op structs (one per op, so waiting allocates
 * nothing); the fields belong to the primitive's lock.
 * ------------------------------------------------------------------------- */

typedef struct blitz__waiter {
    struct blitz__waiter *blitz__next, *blitz__prev;
    blitz_waker blitz__waker;
    uint64_t blitz__value; /* what the op still wants, or was handed */
    uint32_t blitz__state; /* idle, queued or done; read without the lock */
    uint32_t blitz__flags; /* the primitive's own */
} blitz__waiter;

typedef struct blitz__waitq {
    blitz__waiter *blitz__head, *blitz__tail;
} blitz__waitq;
/* ====[ END src/api_op.h ]================================================= */
/* ====[ BEGIN src/api_sync.h ]============================================= */
/* >>api_sync */
/* Public API: synchronization primitives: semaphore, mutex, rwlock, notify,
 * barrier, once cell, cancellation token. */

/* ---------------------------------------------------------------------------
 * Synchronization primitives
 *
 * Every primitive is a caller-allocated struct with private fields and an
 * init / destroy pair (pthread style), so it can live inside the data it
 * guards. Every waiting operation comes in an async and a blocking form
 * and, where waiting is optional, a try_ form (the barrier has none: an
 * arrival that does not wait would still count):
 *
 *  - try_:     never waits, needs no runtime (any thread, any time);
 *  - async:    a poll function over an op struct that lives in the task's
 *              state (zero-filled is ready to use; one op per concurrent
 *              wait, no allocation per wait), used with BLITZ_AWAIT:
 *
 *                typedef struct { BLITZ_CORO; blitz_mutex_lock_op lock_op;
 *                                 shared *sh; } my_state;
 *                ...
 *                BLITZ_AWAIT(s, blitz_mutex_lock(cx, &s->lock_op, &s->sh->mutex));
 *                ...critical section...
 *                blitz_mutex_unlock(&s->sh->mutex);
 *
 *              Each async op also has a cancel function (blitz_cancel_fn)
 *              and a blitz_op constructor (blitz_op_mutex_lock, ...), so
 *              blitz_timeout_op, the combinators and blitz_op_wait can drive
 *              and abandon it;
 *  - blocking: for plain threads (built on blitz_op_wait; BLITZ_EDEADLK
 *              when called from inside a task or a runtime's thread).
 *
 * Waiters are served in FIFO order. A waiting op keeps a clone of its
 * task's waker; the party that completes it stores the result in the op,
 * and the next poll returns BLITZ_READY with the result in the op's
 * `result` field (BLITZ_OK, or an error code). Locking a valid mutex or rwlock
 * cannot fail, so their ops have no result field.
 *
 * Cancel safety. An op is abandoned by calling its cancel function (what
 * blitz_timeout_op, race and select do for you). Cancel is safe on an idle,
 * waiting or completed op: a waiting op is removed from the queue, and
 * whatever the primitive had already handed it (permits, a notification, the
 * right to initialize a once cell) is passed on to the next waiter, never
 * lost. An op whose poll already returned BLITZ_READY is not affected: what
 * it acquired stays acquired (unlock / release it as usual).
 *
 * A task that is cancelled (blitz_task_cancel, shutdown) while one of its
 * ops waits must withdraw the op before its state goes away: give the task
 * a cancel hook (blitz_spawn_opts.cancel) that calls the op's cancel
 * function with cx NULL (and releases what the task holds):
 *
 *   static void my_cancel(void *p) {
 *       my_state *s = p;
 *       blitz_mutex_lock_cancel(NULL, &s->lock_op);
 *       if (s->holds_lock) blitz_mutex_unlock(&s->sh->mutex);
 *   }
 *
 * Without it the op stays queued: it keeps the task's memory alive, and the
 * permit it is eventually handed is never given back.
 *
 * Errors: BLITZ_EINVAL for NULL, zero or out-of-range arguments;
 * BLITZ_EAGAIN from a try_ form that would have to wait; BLITZ_ECLOSED once
 * a semaphore is closed; BLITZ_EDEADLK from a blocking form inside a task.
 *
 * Destroying a primitive while an op waits on it is a bug (the op would
 * wait on freed memory); destroy takes nothing and frees nothing.
 * ------------------------------------------------------------------------- */

/* ---- semaphore -------------------------------------------------------------
 * A counting semaphore with FIFO direct handoff: released permits go to the
 * waiters in queue order (a waiter may be filled a part at a time), and only
 * permits nobody waits for go back to the pool. While any op waits, the pool
 * is empty, so a later, smaller request can never overtake an earlier, bigger
 * one (no barging). */

#define BLITZ_SEMAPHORE_MAX_PERMITS (SIZE_MAX >> 3)

typedef struct blitz_semaphore {
    uint64_t blitz__state; /* permits << 2 | waiters bit | closed bit */
    uint32_t blitz__lock;  /* guards the queue */
    uint32_t blitz__pad;
    blitz__waitq blitz__waiters;
} blitz_semaphore;

typedef struct blitz_semaphore_acquire_op {
    blitz__waiter blitz__w;
    blitz_semaphore *blitz__sem;
    size_t blitz__n;
    int result; /* BLITZ_OK, BLITZ_ECLOSED or BLITZ_EINVAL once READY */
} blitz_semaphore_acquire_op;

/* BLITZ_EINVAL for NULL or more than BLITZ_SEMAPHORE_MAX_PERMITS. */
BLITZ_API int blitz_semaphore_init(blitz_semaphore *sem, size_t permits);
BLITZ_API void blitz_semaphore_destroy(blitz_semaphore *sem);
/* Takes n permits now (lock-free): BLITZ_OK, BLITZ_EAGAIN when fewer are
 * available or other ops wait, BLITZ_ECLOSED, BLITZ_EINVAL (n 0 or over the
 * maximum). */
BLITZ_API int blitz_semaphore_try_acquire(blitz_semaphore *sem, size_t n);
/* Async: READY once n permits are held (result BLITZ_OK) or the semaphore
 * was closed (BLITZ_ECLOSED; permits taken so far go back). `sem` and `n`
 * are read on the first poll.
 * Cancel safety: cancelling a waiting acquire gives the permits it was
 * handed so far to the next waiters; its place in the queue is lost. */
BLITZ_API blitz_poll blitz_semaphore_acquire(blitz_cx *cx, blitz_semaphore_acquire_op *op,
                                             blitz_semaphore *sem, size_t n);
BLITZ_API void blitz_semaphore_acquire_cancel(blitz_cx *cx, void *op);
BLITZ_API blitz_op blitz_op_semaphore_acquire(blitz_semaphore_acquire_op *op, blitz_semaphore *sem,
                                              size_t n);
/* Blocking: BLITZ_OK, BLITZ_ECLOSED, BLITZ_EINVAL, BLITZ_EDEADLK. */
BLITZ_API int blitz_semaphore_acquire_blocking(blitz_semaphore *sem, size_t n);
/* Adds n permits, handing them to waiters first. Allowed after close (the
 * permits go back to the pool). BLITZ_EINVAL for n 0 or when the pool would
 * exceed BLITZ_SEMAPHORE_MAX_PERMITS. */
BLITZ_API int blitz_semaphore_release(blitz_semaphore *sem, size_t n);
/* Closes: every waiting acquire completes with BLITZ_ECLOSED, and so does
 * every later acquire; release keeps working. Idempotent. */
BLITZ_API void blitz_semaphore_close(blitz_semaphore *sem);
BLITZ_API int blitz_semaphore_is_closed(const blitz_semaphore *sem);
/* Permits in the pool (0 while ops wait). A snapshot. */
BLITZ_API size_t blitz_semaphore_available(const blitz_semaphore *sem);

/* ---- mutex -----------------------------------------------------------------
 * A semaphore with one permit: FIFO, no spinning, no owner tracking (any
 * thread or task may unlock). */

typedef struct blitz_mutex {
    blitz_semaphore blitz__sem;
} blitz_mutex;

typedef struct blitz_mutex_lock_op {
    blitz_semaphore_acquire_op blitz__acq;
} blitz_mutex_lock_op;

BLITZ_API int blitz_mutex_init(blitz_mutex *m);
BLITZ_API void blitz_mutex_destroy(blitz_mutex *m);
/* BLITZ_OK or BLITZ_EAGAIN (held, or ops are queued). */
BLITZ_API int blitz_mutex_try_lock(blitz_mutex *m);
/* Async: READY once the caller holds the lock.
 * Cancel safety: a waiting lock is withdrawn; if the lock had just been
 * handed to it, it goes to the next waiter. */
BLITZ_API blitz_poll blitz_mutex_lock(blitz_cx *cx, blitz_mutex_lock_op *op, blitz_mutex *m);
BLITZ_API void blitz_mutex_lock_cancel(blitz_cx *cx, void *op);
BLITZ_API blitz_op blitz_op_mutex_lock(blitz_mutex_lock_op *op, blitz_mutex *m);
BLITZ_API int blitz_mutex_lock_blocking(blitz_mutex *m);
BLITZ_API void blitz_mutex_unlock(blitz_mutex *m);
BLITZ_API int blitz_mutex_is_locked(const blitz_mutex *m);

/* ---- rwlock ----------------------------------------------------------------
 * Many readers or one writer, in FIFO order: a reader takes one of
 * BLITZ_RWLOCK_MAX_READERS permits, a writer takes them all. A queued writer
 * therefore blocks readers that come after it, and gets the lock when the
 * last earlier reader leaves; readers queued behind a writer get it together
 * when the writer leaves. Neither side starves. */

#define BLITZ_RWLOCK_MAX_READERS ((size_t)(UINT32_MAX >> 3))

typedef struct blitz_rwlock {
    blitz_semaphore blitz__sem;
} blitz_rwlock;

typedef struct blitz_rwlock_op {
    blitz_semaphore_acquire_op blitz__acq;
} blitz_rwlock_op;

BLITZ_API int blitz_rwlock_init(blitz_rwlock *l);
BLITZ_API void blitz_rwlock_destroy(blitz_rwlock *l);
/* BLITZ_OK or BLITZ_EAGAIN (a writer holds it or waits; or, for try_read,
 * BLITZ_RWLOCK_MAX_READERS readers hold it). */
BLITZ_API int blitz_rwlock_try_read(blitz_rwlock *l);
BLITZ_API int blitz_rwlock_try_write(blitz_rwlock *l);
/* Async: READY once the caller holds a read (write) lock.
 * Cancel safety: as blitz_mutex_lock; a cancelled writer that was partly
 * filled gives the read permits it collected to the waiters behind it. */
BLITZ_API blitz_poll blitz_rwlock_read(blitz_cx *cx, blitz_rwlock_op *op, blitz_rwlock *l);
BLITZ_API blitz_poll blitz_rwlock_write(blitz_cx *cx, blitz_rwlock_op *op, blitz_rwlock *l);
/* Cancels either kind. */
BLITZ_API void blitz_rwlock_cancel(blitz_cx *cx, void *op);
BLITZ_API blitz_op blitz_op_rwlock_read(blitz_rwlock_op *op, blitz_rwlock *l);
BLITZ_API blitz_op blitz_op_rwlock_write(blitz_rwlock_op *op, blitz_rwlock *l);
BLITZ_API int blitz_rwlock_read_blocking(blitz_rwlock *l);
BLITZ_API int blitz_rwlock_write_blocking(blitz_rwlock *l);
BLITZ_API void blitz_rwlock_read_unlock(blitz_rwlock *l);
BLITZ_API void blitz_rwlock_write_unlock(blitz_rwlock *l);

/* ---- notify ----------------------------------------------------------------
 * Wakes waiting tasks (Tokio's Notify). notify_one wakes the first waiter,
 * or, when nobody waits, stores one permit that the next wait consumes at
 * once; permits do not accumulate (two notify_one with nobody waiting let
 * one wait through). notify_waiters wakes every op waiting at the time of
 * the call and stores nothing. */

typedef struct blitz_notify {
    uint32_t blitz__state; /* permit bit | waiters bit */
    uint32_t blitz__lock;
    uint64_t blitz__generation; /* notify_waiters calls so far */
    blitz__waitq blitz__waiters;
} blitz_notify;

typedef struct blitz_notify_wait_op {
    blitz__waiter blitz__w;
    blitz_notify *blitz__notify;
    int result; /* BLITZ_OK once READY (BLITZ_EINVAL for NULL) */
} blitz_notify_wait_op;

BLITZ_API int blitz_notify_init(blitz_notify *n);
BLITZ_API void blitz_notify_destroy(blitz_notify *n);
BLITZ_API void blitz_notify_one(blitz_notify *n);
BLITZ_API void blitz_notify_waiters(blitz_notify *n);
/* Consumes a stored permit: BLITZ_OK, or BLITZ_EAGAIN when there is none. */
BLITZ_API int blitz_notify_try_wait(blitz_notify *n);
/* Async: READY once notified (a stored permit counts).
 * Cancel safety: a waiting op is withdrawn; if notify_one had already
 * chosen it, that notification goes to the next waiter (or is stored as the
 * permit). A notify_waiters wake-up is not passed on. */
BLITZ_API blitz_poll blitz_notify_wait(blitz_cx *cx, blitz_notify_wait_op *op, blitz_notify *n);
BLITZ_API void blitz_notify_wait_cancel(blitz_cx *cx, void *op);
BLITZ_API blitz_op blitz_op_notify_wait(blitz_notify_wait_op *op, blitz_notify *n);
BLITZ_API int blitz_notify_wait_blocking(blitz_notify *n);

/* ---- barrier ---------------------------------------------------------------
 * N parties meet: the first N-1 waits wait, the N-th releases them all and is
 * the leader of that generation (exactly one per generation). The barrier is
 * reusable; waits that arrive after a release belong to the next
 * generation. */

typedef struct blitz_barrier {
    uint32_t blitz__lock;
    uint32_t blitz__parties;
    uint32_t blitz__arrived;
    uint32_t blitz__pad;
    uint64_t blitz__generation;
    blitz__waitq blitz__waiters;
} blitz_barrier;

typedef struct blitz_barrier_wait_op {
    blitz__waiter blitz__w;
    blitz_barrier *blitz__barrier;
    int result;    /* BLITZ_OK once READY (BLITZ_EINVAL for NULL) */
    int is_leader; /* 1 for the wait that released its generation */
} blitz_barrier_wait_op;

/* BLITZ_EINVAL for NULL or 0 parties. */
BLITZ_API int blitz_barrier_init(blitz_barrier *b, uint32_t parties);
BLITZ_API void blitz_barrier_destroy(blitz_barrier *b);
/* Async: READY once the generation the op joined is complete.
 * Cancel safety: cancelling a waiting op withdraws its arrival, so the
 * generation still needs N live waits; a wait whose generation already
 * completed stays passed (cancel does nothing). */
BLITZ_API blitz_poll blitz_barrier_wait(blitz_cx *cx, blitz_barrier_wait_op *op, blitz_barrier *b);
BLITZ_API void blitz_barrier_wait_cancel(blitz_cx *cx, void *op);
BLITZ_API blitz_op blitz_op_barrier_wait(blitz_barrier_wait_op *op, blitz_barrier *b);
/* Blocking: BLITZ_OK (and *is_leader if not NULL), BLITZ_EINVAL,
 * BLITZ_EDEADLK. */
BLITZ_API int blitz_barrier_wait_blocking(blitz_barrier *b, int *is_leader);

/* ---- once cell -------------------------------------------------------------
 * A value set once (Tokio's OnceCell). The cell holds a `void *`: point it
 * at memory you own (or store an integer through uintptr_t); the cell never
 * frees it. Initialization can take as long as it needs (awaiting other
 * ops): a caller claims the right to initialize, everybody else waits; the
 * claimer then completes the cell with the value, or abandons the claim (it
 * failed or was cancelled) and the first waiter gets the claim instead.
 *
 *   BLITZ_AWAIT(s, blitz_once_cell_get_or_claim(cx, &s->once_op, &sh->cell));
 *   if (s->once_op.claimed) {
 *       ...compute s->value, awaiting what it takes...
 *       blitz_once_cell_complete(&sh->cell, s->value);  (or _abandon)
 *   }
 *   use blitz_once_cell_get(&sh->cell)
 * ------------------------------------------------------------------------- */

typedef struct blitz_once_cell {
    uint32_t blitz__state; /* empty / initializing / ready, waiters bit */
    uint32_t blitz__lock;
    void *blitz__value;
    blitz__waitq blitz__waiters;
} blitz_once_cell;

typedef struct blitz_once_cell_op {
    blitz__waiter blitz__w;
    blitz_once_cell *blitz__cell;
    int result;  /* BLITZ_OK once READY (BLITZ_EINVAL for NULL) */
    int claimed; /* 1: the caller must complete or abandon the cell */
    void *value; /* the value when not claimed */
} blitz_once_cell_op;

BLITZ_API int blitz_once_cell_init(blitz_once_cell *c);
BLITZ_API void blitz_once_cell_destroy(blitz_once_cell *c);
/* The value, or NULL while not set (never waits). */
BLITZ_API void *blitz_once_cell_get(const blitz_once_cell *c);
BLITZ_API int blitz_once_cell_is_set(const blitz_once_cell *c);
/* Sets the value now: BLITZ_OK, BLITZ_EEXIST when already set, BLITZ_EBUSY
 * while a claimer initializes it. Wakes every waiter. */
BLITZ_API int blitz_once_cell_set(blitz_once_cell *c, void *value);
/* Claims without waiting: BLITZ_OK (claimed: complete or abandon it),
 * BLITZ_EEXIST (already set), BLITZ_EBUSY (someone else holds the claim). */
BLITZ_API int blitz_once_cell_try_claim(blitz_once_cell *c);
/* Async: READY with `value` set, or with `claimed` = 1.
 * Cancel safety: a waiting op is withdrawn; a claim that was handed to it
 * and not yet seen passes to the next waiter (or the cell becomes empty). */
BLITZ_API blitz_poll blitz_once_cell_get_or_claim(blitz_cx *cx, blitz_once_cell_op *op,
                                                  blitz_once_cell *c);
BLITZ_API void blitz_once_cell_get_or_claim_cancel(blitz_cx *cx, void *op);
BLITZ_API blitz_op blitz_op_once_cell_get_or_claim(blitz_once_cell_op *op, blitz_once_cell *c);
/* Blocking: BLITZ_OK with *value set (*claimed 0), or *claimed 1. */
BLITZ_API int blitz_once_cell_get_or_claim_blocking(blitz_once_cell *c, void **value, int *claimed);
/* By the claimer only: stores the value and wakes every waiter
 * (BLITZ_EINVAL when the cell is not being initialized). */
BLITZ_API int blitz_once_cell_complete(blitz_once_cell *c, void *value);
/* By the claimer only: gives the claim up (to the first waiter, or the cell
 * becomes empty again). */
BLITZ_API int blitz_once_cell_abandon(blitz_once_cell *c);
/* Blocking convenience: the value, running init(arg, &value) on this thread
 * if the claim falls to it; an init error abandons the claim and is
 * returned. */
BLITZ_API int blitz_once_cell_get_or_init_blocking(blitz_once_cell *c,
                                                   int (*init)(void *arg, void **value), void *arg,
                                                   void **value);

/* ---- cancellation token ----------------------------------------------------
 * A flag that goes from "live" to "cancelled" once, with waiting (Tokio's
 * CancellationToken). A child token is cancelled when its parent is (and
 * can be cancelled on its own). Destroying a child unlinks it from its
 * parent; destroying a parent with live children is allowed: they move to
 * the destroyed token's own parent (or become roots). */

typedef struct blitz_cancel_token {
    uint32_t blitz__cancelled;
    uint32_t blitz__lock;
    blitz__waitq blitz__waiters;
    struct blitz_cancel_token *blitz__parent;
    struct blitz_cancel_token *blitz__children;           /* first child */
    struct blitz_cancel_token *blitz__next, *blitz__prev; /* siblings */
} blitz_cancel_token;

typedef struct blitz_cancel_token_wait_op {
    blitz__waiter blitz__w;
    blitz_cancel_token *blitz__token;
    int result; /* BLITZ_OK once READY (BLITZ_EINVAL for NULL) */
} blitz_cancel_token_wait_op;

BLITZ_API int blitz_cancel_token_init(blitz_cancel_token *t);
/* A child of `parent` (cancelled at once if the parent already is). */
BLITZ_API int blitz_cancel_token_init_child(blitz_cancel_token *child, blitz_cancel_token *parent);
BLITZ_API void blitz_cancel_token_destroy(blitz_cancel_token *t);
/* Cancels the token and its descendants and wakes their waiters.
 * Idempotent. */
BLITZ_API void blitz_cancel_token_cancel(blitz_cancel_token *t);
BLITZ_API int blitz_cancel_token_is_cancelled(const blitz_cancel_token *t);
/* Async: READY once the token is cancelled.
 * Cancel safety: withdrawing a waiting op loses nothing. */
BLITZ_API blitz_poll blitz_cancel_token_wait(blitz_cx *cx, blitz_cancel_token_wait_op *op,
                                             blitz_cancel_token *t);
BLITZ_API void blitz_cancel_token_wait_cancel(blitz_cx *cx, void *op);
BLITZ_API blitz_op blitz_op_cancel_token_wait(blitz_cancel_token_wait_op *op,
                                              blitz_cancel_token *t);
BLITZ_API int blitz_cancel_token_wait_blocking(blitz_cancel_token *t);
/* ====[ END src/api_sync.h ]=============================================== */
/* ====[ BEGIN src/api_chan.h ]============================================= */
/* >>api_chan */
/* Public API: Channels: bounded MPMC, oneshot, broadcast, watch; select. */
/* ====[ END src/api_chan.h ]=============================================== */
/* ====[ BEGIN src/api_io.h ]=============================================== */
/* >>api_io */
/* Public API: The I/O driver and sockets. */
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
#else
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

typedef struct blitz__parker {
    blitz__atomic_u32 state; /* UNPARKED / PARKED / NOTIFIED; the futex word */
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

/* The poll context handed to poll functions. A context with no task polls
 * an op for a plain thread (blitz_op_wait) or for a runtime-internal
 * waiter: its waker is `waker` instead of the task's. */
struct blitz_cx {
    blitz__task *task;
    blitz__context *ctx;
    int yielded;
    blitz_waker waker;
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

BLITZ_PRIVATE void blitz__parker_unpark(blitz__parker *p) {
    if (blitz__u32_swap(&p->state, BLITZ__NOTIFIED, BLITZ__RELEASE) == BLITZ__PARKED) {
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
    if (BLITZ__UNLIKELY(!cx->task))
        return cx->waker;
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
    if (!cx || !cx->task)
        return 0;
    return (blitz__u64_load(&cx->task->state, BLITZ__ACQUIRE) & BLITZ__TASK_CANCELLED) != 0;
}
BLITZ_API int blitz_cx_shield(blitz_cx *cx) {
    return cx && cx->task ? blitz__state_shield(cx->task, 1) : BLITZ_EINVAL;
}
BLITZ_API int blitz_cx_unshield(blitz_cx *cx) {
    return cx && cx->task ? blitz__state_shield(cx->task, -1) : BLITZ_EINVAL;
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
    /* A timer needs a runtime's wheel: blitz_op_wait without a runtime
     * cannot sleep. */
    BLITZ_ASSERT(rt && "a timer polled outside any runtime");
    if (!rt)
        return BLITZ_READY;
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
    return blitz_sleep_until(cx, t, blitz_deadline_after(blitz_cx_now(cx), ns));
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
    return cx && blitz__cx_rt(cx) ? blitz__rt_now(blitz__cx_rt(cx)) : blitz__now_ns();
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
/* ====[ BEGIN src/op.c ]=================================================== */
/* >>op */
/* Ops as values (blitz_op) and the blocking form of any op: blitz_op_wait
 * polls it on the calling thread and sleeps on a per-thread parker between
 * polls. */
/* internal.h already included */
/* ====[ BEGIN src/waitq.h ]================================================ */
/* >>waitq */
/* The queue of waiting ops a primitive keeps: an intrusive FIFO of
 * blitz__waiter, guarded by the primitive's lock.
 *
 * The protocol every primitive follows:
 *  - an op that must wait enqueues its waiter (under the lock) with a clone
 *    of its task's waker: state QUEUED;
 *  - the party that satisfies it (under the lock) unlinks the waiter, stores
 *    the result in it, takes its waker out, and only then publishes DONE
 *    with a release store; the waker is woken after the lock is dropped.
 *    From the DONE store on, the waiter's memory is the owner's again: the
 *    owner may see DONE without taking the lock, return, and reuse or free
 *    the task state, so nothing touches the waiter after that store;
 *  - the owner polls: DONE (acquire) means the result is there; QUEUED
 *    means refresh the waker (under the lock) and stay pending;
 *  - cancel takes the lock: a QUEUED waiter is unlinked and its waker
 *    dropped; a DONE one keeps its result, which the primitive then hands
 *    on (permits to the next waiter, a message back to the channel). */
#ifndef BLITZ__WAITQ_H
#define BLITZ__WAITQ_H

#define BLITZ__WAITER_IDLE   0u
#define BLITZ__WAITER_QUEUED 1u
#define BLITZ__WAITER_DONE   2u

static inline uint32_t blitz__waiter_state(const blitz__waiter *w) {
    return blitz__u32_field_load(&w->blitz__state, BLITZ__ACQUIRE);
}

/* Appends `w` (idle) with a clone of `waker`. Under the lock. */
static inline void blitz__waitq_push(blitz__waitq *q, blitz__waiter *w, const blitz_waker *waker) {
    w->blitz__waker = blitz_waker_clone(waker);
    w->blitz__next = NULL;
    w->blitz__prev = q->blitz__tail;
    if (q->blitz__tail)
        q->blitz__tail->blitz__next = w;
    else
        q->blitz__head = w;
    q->blitz__tail = w;
    blitz__u32_field_store(&w->blitz__state, BLITZ__WAITER_QUEUED, BLITZ__RELAXED);
}

/* Puts `w` (idle) first: a waiter that was handed something it must give
 * back keeps its place. Under the lock. */
static inline void blitz__waitq_push_front(blitz__waitq *q, blitz__waiter *w,
                                           const blitz_waker *waker) {
    w->blitz__waker = blitz_waker_clone(waker);
    w->blitz__prev = NULL;
    w->blitz__next = q->blitz__head;
    if (q->blitz__head)
        q->blitz__head->blitz__prev = w;
    else
        q->blitz__tail = w;
    q->blitz__head = w;
    blitz__u32_field_store(&w->blitz__state, BLITZ__WAITER_QUEUED, BLITZ__RELAXED);
}

/* Unlinks a queued `w` without changing its state. Under the lock. */
static inline void blitz__waitq_unlink(blitz__waitq *q, blitz__waiter *w) {
    if (w->blitz__prev)
        w->blitz__prev->blitz__next = w->blitz__next;
    else
        q->blitz__head = w->blitz__next;
    if (w->blitz__next)
        w->blitz__next->blitz__prev = w->blitz__prev;
    else
        q->blitz__tail = w->blitz__prev;
    w->blitz__next = w->blitz__prev = NULL;
}

static inline int blitz__waitq_empty(const blitz__waitq *q) {
    return q->blitz__head == NULL;
}

/* Replaces the stored waker when the op is now polled by another task (or
 * a combinator's waker). Under the lock; the old waker is returned to be
 * dropped after the lock is released (noop when unchanged). */
static inline blitz_waker blitz__waiter_refresh(blitz__waiter *w, const blitz_waker *waker) {
    if (blitz_waker_will_wake(&w->blitz__waker, waker))
        return blitz_waker_noop();
    blitz_waker old = w->blitz__waker;
    w->blitz__waker = blitz_waker_clone(waker);
    return old;
}

/* Completes an unlinked waiter: returns its waker (wake it after the
 * lock) and publishes DONE. Nothing may touch `w` afterwards. */
static inline blitz_waker blitz__waiter_finish(blitz__waiter *w) {
    blitz_waker waker = w->blitz__waker;
    w->blitz__waker = blitz_waker_noop();
    /* Release: the result written into the waiter before this store is
     * visible to the owner that reads DONE with acquire. */
    blitz__u32_field_store(&w->blitz__state, BLITZ__WAITER_DONE, BLITZ__RELEASE);
    return waker;
}

/* Owner side, after it consumed a DONE result: ready for the next wait. */
static inline void blitz__waiter_reset(blitz__waiter *w) {
    blitz__u32_field_store(&w->blitz__state, BLITZ__WAITER_IDLE, BLITZ__RELAXED);
}

/* Wakers collected under a lock and woken after it is dropped, in batches
 * so a broadcast to many waiters never wakes under the lock. */
#define BLITZ__WAKE_LIST_CAP 32
typedef struct blitz__wake_list {
    blitz_waker wakers[BLITZ__WAKE_LIST_CAP];
    uint32_t len;
} blitz__wake_list;

static inline int blitz__wake_list_full(const blitz__wake_list *l) {
    return l->len == BLITZ__WAKE_LIST_CAP;
}
static inline void blitz__wake_list_push(blitz__wake_list *l, blitz_waker w) {
    BLITZ_ASSERT(l->len < BLITZ__WAKE_LIST_CAP);
    l->wakers[l->len++] = w;
}
/* Wakes and empties the list. Call without the lock held. */
static inline void blitz__wake_list_wake(blitz__wake_list *l) {
    uint32_t i;
    for (i = 0; i < l->len; i++)
        blitz_waker_wake(l->wakers[i]);
    l->len = 0;
}

#endif
/* ====[ END src/waitq.h ]================================================== */

BLITZ_API blitz_op blitz_op_make(blitz_poll_fn poll, blitz_cancel_fn cancel, void *arg) {
    blitz_op op;
    op.poll = poll;
    op.cancel = cancel;
    op.arg = arg;
    return op;
}

static blitz_poll blitz__join_op_poll(blitz_cx *cx, void *handle) {
    return blitz_join(cx, (blitz_task *)handle);
}
BLITZ_API blitz_op blitz_op_join(blitz_task *t) {
    return blitz_op_make(blitz__join_op_poll, blitz_join_cancel_op, t);
}

static blitz_poll blitz__sleep_op_poll(blitz_cx *cx, void *timer) {
    blitz_timer *t = (blitz_timer *)timer;
    return blitz_sleep_until(cx, t, t->deadline);
}
BLITZ_API void blitz_timer_cancel_op(blitz_cx *cx, void *timer) {
    (void)cx;
    blitz_timer_cancel((blitz_timer *)timer);
}
BLITZ_API blitz_op blitz_op_sleep_until(blitz_timer *t, uint64_t deadline_ns) {
    if (t)
        t->deadline = deadline_ns;
    return blitz_op_make(blitz__sleep_op_poll, blitz_timer_cancel_op, t);
}

/* ---- the thread waker ---------------------------------------------------------- */

/* A parker that wakers can reach after the thread stopped waiting: a
 * waker may be woken after the op it was registered with completed (wakes
 * happen outside the primitives' locks), so the parker is reference
 * counted. Each thread keeps one for its whole life (released when the
 * thread exits) and hands out references. */
typedef struct blitz__thread_parker {
    blitz__atomic_u32 refs;
    blitz__parker parker;
} blitz__thread_parker;

static void blitz__thread_parker_unref(blitz__thread_parker *tp) {
    /* Acq_rel: the last owner sees every other owner's unpark finished
     * before it destroys the parker. */
    if (blitz__u32_fetch_sub(&tp->refs, 1, BLITZ__ACQ_REL) == 1) {
        blitz__parker_destroy(&tp->parker);
        BLITZ_FREE(tp);
    }
}

static void blitz__thread_waker_wake_by_ref(const void *data) {
    blitz__parker_unpark(&((blitz__thread_parker *)data)->parker);
}
static void blitz__thread_waker_wake(const void *data) {
    blitz__thread_waker_wake_by_ref(data);
    blitz__thread_parker_unref((blitz__thread_parker *)data);
}
static void blitz__thread_waker_drop(const void *data) {
    blitz__thread_parker_unref((blitz__thread_parker *)data);
}
static blitz_waker blitz__thread_waker_clone(const void *data);
static const blitz_waker_vtable blitz__thread_waker_vtable = {
    blitz__thread_waker_wake, blitz__thread_waker_wake_by_ref, blitz__thread_waker_clone,
    blitz__thread_waker_drop};
static blitz_waker blitz__thread_waker_clone(const void *data) {
    blitz__u32_fetch_add(&((blitz__thread_parker *)data)->refs, 1, BLITZ__RELAXED);
    blitz_waker w = {data, &blitz__thread_waker_vtable};
    return w;
}

static pthread_key_t blitz__thread_parker_key;
static pthread_once_t blitz__thread_parker_once = PTHREAD_ONCE_INIT;
static _Thread_local blitz__thread_parker *blitz__thread_parker_cached;

static void blitz__thread_parker_release(void *p) {
    blitz__thread_parker_unref((blitz__thread_parker *)p);
}
static void blitz__thread_parker_key_init(void) {
    pthread_key_create(&blitz__thread_parker_key, blitz__thread_parker_release);
}

/* The calling thread's parker, created on first use; NULL when out of
 * memory. */
static blitz__thread_parker *blitz__thread_parker_get(void) {
    blitz__thread_parker *tp = blitz__thread_parker_cached;
    if (BLITZ__LIKELY(tp != NULL))
        return tp;
    pthread_once(&blitz__thread_parker_once, blitz__thread_parker_key_init);
    tp = (blitz__thread_parker *)BLITZ_MALLOC(sizeof *tp);
    if (!tp)
        return NULL;
    blitz__u32_store(&tp->refs, 1, BLITZ__RELAXED);
    blitz__parker_init(&tp->parker);
    if (pthread_setspecific(blitz__thread_parker_key, tp) != 0) {
        blitz__parker_destroy(&tp->parker);
        BLITZ_FREE(tp);
        return NULL;
    }
    blitz__thread_parker_cached = tp;
    return tp;
}

/* A poll context whose waker is `waker` (no task). */
BLITZ_PRIVATE void blitz__cx_init_waker(blitz_cx *cx, blitz__context *ctx, blitz_waker waker) {
    cx->task = NULL;
    cx->ctx = ctx;
    cx->yielded = 0;
    cx->waker = waker;
}

BLITZ_API int blitz_op_wait(blitz_runtime *rt, blitz_op op) {
    if (!op.poll)
        return BLITZ_EINVAL;
    blitz__context *outer = blitz__context_get();
    if (outer && (outer->current || outer->worker || outer->ct_driver))
        return BLITZ_EDEADLK;
    blitz__thread_parker *tp = blitz__thread_parker_get();
    if (!tp)
        return BLITZ_ENOMEM;
    blitz__context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.rt = rt;
    blitz_cx cx;
    blitz_waker borrowed = {tp, &blitz__thread_waker_vtable};
    blitz__cx_init_waker(&cx, &ctx, borrowed);
    while (op.poll(&cx, op.arg) == BLITZ_PENDING)
        blitz__parker_park(&tp->parker, 0);
    return BLITZ_OK;
}
/* ====[ END src/op.c ]===================================================== */
/* ====[ BEGIN src/semaphore.c ]============================================ */
/* >>semaphore */
/* The counting semaphore with FIFO direct handoff that Mutex and RwLock
 * are built on.
 *
 * State word: permits << 2 | WAITERS | CLOSED. The invariant that makes the
 * queue fair: while WAITERS is set the word holds no permits, so a
 * lock-free try_acquire can never take a permit a queued op is owed.
 * WAITERS is set and cleared only under the lock, together with the queue
 * becoming non-empty / empty, and always by a CAS on the same word that
 * releases add permits to. A release therefore either adds its permits while
 * WAITERS is clear (then the enqueuer's CAS fails and it takes them) or sees
 * WAITERS and takes the lock to hand the permits over: no permit can slip
 * into the pool between a waiter's check and its enqueue. */
/* ====[ BEGIN src/sync_internal.h ]======================================== */
/* >>sync_internal */
/* Shared by the synchronization primitives: the lock word and the atomic
 * words that live in their public structs. */
#ifndef BLITZ__SYNC_INTERNAL_H
#define BLITZ__SYNC_INTERNAL_H

/* internal.h already included */
/* waitq.h already included */

/* The primitives' public structs hold plain integers; these give them the
 * atomics layer's types (same size and layout: a struct of one word). */
static inline blitz__atomic_u32 *blitz__atomic_u32_at(uint32_t *p) {
    return (blitz__atomic_u32 *)(void *)p;
}
static inline blitz__atomic_u64 *blitz__atomic_u64_at(uint64_t *p) {
    return (blitz__atomic_u64 *)(void *)p;
}

/* A lock in one 32-bit word of a public struct (zero = unlocked, so a
 * zero-filled primitive and a static word are ready to use). With futexes it
 * is blitz__mutex itself; elsewhere a test-and-test-and-set lock that yields
 * the thread while it waits. */
#if BLITZ__HAS_FUTEX
typedef char blitz__word_lock_fits[sizeof(blitz__mutex) == sizeof(uint32_t) ? 1 : -1];
static inline void blitz__word_lock(uint32_t *w) {
    blitz__mutex_lock((blitz__mutex *)(void *)w);
}
static inline void blitz__word_unlock(uint32_t *w) {
    blitz__mutex_unlock((blitz__mutex *)(void *)w);
}
#else
static inline void blitz__word_lock(uint32_t *w) {
    blitz__atomic_u32 *a = blitz__atomic_u32_at(w);
    for (;;) {
        uint32_t free_word = 0;
        if (blitz__u32_cas(a, &free_word, 1, BLITZ__ACQUIRE))
            return;
        while (blitz__u32_load(a, BLITZ__RELAXED) != 0)
            sched_yield();
    }
}
static inline void blitz__word_unlock(uint32_t *w) {
    blitz__u32_store(blitz__atomic_u32_at(w), 0, BLITZ__RELEASE);
}
#endif

/* The waiter's container: every primitive embeds the waiter first in its
 * op struct. */
#define BLITZ__OP_OF(type, w) ((type *)(void *)(w))

#endif
/* ====[ END src/sync_internal.h ]========================================== */

#define BLITZ__SEM_CLOSED  1u
#define BLITZ__SEM_WAITERS 2u
#define BLITZ__SEM_SHIFT   2

static inline blitz__atomic_u64 *blitz__sem_word(blitz_semaphore *sem) {
    return blitz__atomic_u64_at(&sem->blitz__state);
}

static inline uint64_t blitz__sem_permits(uint64_t s) {
    return s >> BLITZ__SEM_SHIFT;
}

BLITZ_API int blitz_semaphore_init(blitz_semaphore *sem, size_t permits) {
    if (!sem || permits > BLITZ_SEMAPHORE_MAX_PERMITS)
        return BLITZ_EINVAL;
    memset(sem, 0, sizeof *sem);
    sem->blitz__state = (uint64_t)permits << BLITZ__SEM_SHIFT;
    return BLITZ_OK;
}

BLITZ_API void blitz_semaphore_destroy(blitz_semaphore *sem) {
    if (sem)
        BLITZ_ASSERT(blitz__waitq_empty(&sem->blitz__waiters));
}

BLITZ_API int blitz_semaphore_try_acquire(blitz_semaphore *sem, size_t n) {
    if (BLITZ__UNLIKELY(!sem || n == 0 || n > BLITZ_SEMAPHORE_MAX_PERMITS))
        return BLITZ_EINVAL;
    blitz__atomic_u64 *word = blitz__sem_word(sem);
    uint64_t s = blitz__u64_load(word, BLITZ__RELAXED);
    for (;;) {
        if (s & BLITZ__SEM_CLOSED)
            return BLITZ_ECLOSED;
        if (blitz__sem_permits(s) < n)
            return BLITZ_EAGAIN;
        /* Acquire: pairs with the release that put these permits back, so
         * what the previous holder did is visible to the new one. */
        if (blitz__u64_cas_weak(word, &s, s - ((uint64_t)n << BLITZ__SEM_SHIFT), BLITZ__ACQUIRE))
            return BLITZ_OK;
    }
}

/* Hands `n` permits to the queue head first, the rest to the pool.
 * Called with the lock held; returns with it released. Waiters are woken
 * after unlocking, in batches (the lock is retaken for the next batch while
 * the undistributed permits stay in hand, out of the pool). */
static void blitz__sem_hand_out(blitz_semaphore *sem, uint64_t n) {
    blitz__wake_list wl;
    wl.len = 0;
    for (;;) {
        blitz__waiter *w;
        while (n > 0 && (w = sem->blitz__waiters.blitz__head) != NULL) {
            uint64_t take = n < w->blitz__value ? n : w->blitz__value;
            w->blitz__value -= take;
            n -= take;
            if (w->blitz__value == 0) {
                blitz__waitq_unlink(&sem->blitz__waiters, w);
                w->blitz__flags = (uint32_t)BLITZ_OK;
                blitz__wake_list_push(&wl, blitz__waiter_finish(w));
                if (blitz__wake_list_full(&wl))
                    break;
            }
        }
        if (blitz__waitq_empty(&sem->blitz__waiters)) {
            blitz__atomic_u64 *word = blitz__sem_word(sem);
            uint64_t s = blitz__u64_load(word, BLITZ__RELAXED);
            uint64_t add = n << BLITZ__SEM_SHIFT;
            /* Release: a later acquirer of these permits sees this
             * releaser's writes. A CAS because try_acquire may take permits
             * concurrently once WAITERS is clear. */
            while (!blitz__u64_cas_weak(word, &s, (s & ~(uint64_t)BLITZ__SEM_WAITERS) + add,
                                        BLITZ__RELEASE)) {
            }
            n = 0;
        }
        blitz__word_unlock(&sem->blitz__lock);
        blitz__wake_list_wake(&wl);
        if (n == 0)
            return;
        blitz__word_lock(&sem->blitz__lock);
    }
}

BLITZ_API int blitz_semaphore_release(blitz_semaphore *sem, size_t n) {
    if (BLITZ__UNLIKELY(!sem || n == 0 || n > BLITZ_SEMAPHORE_MAX_PERMITS))
        return BLITZ_EINVAL;
    blitz__atomic_u64 *word = blitz__sem_word(sem);
    uint64_t s = blitz__u64_load(word, BLITZ__RELAXED);
    while (!(s & BLITZ__SEM_WAITERS)) {
        if (blitz__sem_permits(s) + n > BLITZ_SEMAPHORE_MAX_PERMITS)
            return BLITZ_EINVAL;
        /* Release: pairs with the acquiring CAS of the next holder. Fails
         * (and falls to the locked path) if an op queued meanwhile. */
        if (blitz__u64_cas_weak(word, &s, s + ((uint64_t)n << BLITZ__SEM_SHIFT), BLITZ__RELEASE))
            return BLITZ_OK;
    }
    blitz__word_lock(&sem->blitz__lock);
    blitz__sem_hand_out(sem, n);
    return BLITZ_OK;
}

BLITZ_API void blitz_semaphore_close(blitz_semaphore *sem) {
    if (!sem)
        return;
    blitz__wake_list wl;
    wl.len = 0;
    uint64_t returned = 0;
    blitz__word_lock(&sem->blitz__lock);
    /* Set under the lock, so an acquire that checks CLOSED under the lock
     * before queueing cannot queue after the drain below. Release: a
     * lock-free try_acquire that sees CLOSED sees what came before close. */
    blitz__u64_fetch_or(blitz__sem_word(sem), BLITZ__SEM_CLOSED, BLITZ__RELEASE);
    for (;;) {
        blitz__waiter *w;
        while (!blitz__wake_list_full(&wl) && (w = sem->blitz__waiters.blitz__head) != NULL) {
            blitz_semaphore_acquire_op *op = BLITZ__OP_OF(blitz_semaphore_acquire_op, w);
            returned += op->blitz__n - w->blitz__value;
            blitz__waitq_unlink(&sem->blitz__waiters, w);
            w->blitz__flags = (uint32_t)BLITZ_ECLOSED;
            blitz__wake_list_push(&wl, blitz__waiter_finish(w));
        }
        if (blitz__waitq_empty(&sem->blitz__waiters))
            break;
        blitz__word_unlock(&sem->blitz__lock);
        blitz__wake_list_wake(&wl);
        blitz__word_lock(&sem->blitz__lock);
    }
    /* The partial fills of the closed-out waiters go back to the pool (no
     * op can queue any more, so the pool may hold them). */
    blitz__atomic_u64 *word = blitz__sem_word(sem);
    uint64_t s = blitz__u64_load(word, BLITZ__RELAXED);
    while (!blitz__u64_cas_weak(
        word, &s, (s & ~(uint64_t)BLITZ__SEM_WAITERS) + (returned << BLITZ__SEM_SHIFT),
        BLITZ__RELEASE)) {
    }
    blitz__word_unlock(&sem->blitz__lock);
    blitz__wake_list_wake(&wl);
}

BLITZ_API int blitz_semaphore_is_closed(const blitz_semaphore *sem) {
    if (!sem)
        return 0;
    return (blitz__u64_load(blitz__sem_word((blitz_semaphore *)sem), BLITZ__ACQUIRE) &
            BLITZ__SEM_CLOSED) != 0;
}

BLITZ_API size_t blitz_semaphore_available(const blitz_semaphore *sem) {
    if (!sem)
        return 0;
    return (size_t)blitz__sem_permits(
        blitz__u64_load(blitz__sem_word((blitz_semaphore *)sem), BLITZ__ACQUIRE));
}

/* First poll of an acquire: the lock-free attempt, then, under the lock,
 * take what the pool has and queue for the rest. */
static blitz_poll blitz__sem_acquire_start(blitz_cx *cx, blitz_semaphore_acquire_op *op) {
    blitz_semaphore *sem = op->blitz__sem;
    uint64_t n = op->blitz__n;
    int rc = blitz_semaphore_try_acquire(sem, (size_t)n);
    if (rc != BLITZ_EAGAIN) {
        op->result = rc;
        return BLITZ_READY;
    }
    blitz__atomic_u64 *word = blitz__sem_word(sem);
    blitz__word_lock(&sem->blitz__lock);
    uint64_t s = blitz__u64_load(word, BLITZ__RELAXED);
    for (;;) {
        if (s & BLITZ__SEM_CLOSED) {
            blitz__word_unlock(&sem->blitz__lock);
            op->result = BLITZ_ECLOSED;
            return BLITZ_READY;
        }
        uint64_t have = blitz__sem_permits(s);
        if (have >= n) {
            if (blitz__u64_cas_weak(word, &s, s - (n << BLITZ__SEM_SHIFT), BLITZ__ACQUIRE)) {
                blitz__word_unlock(&sem->blitz__lock);
                op->result = BLITZ_OK;
                return BLITZ_READY;
            }
            continue;
        }
        /* Take the whole pool and raise WAITERS in one step: from here
         * releases hand permits over under the lock. Acquire: the permits
         * taken were put back by releases whose writes we must see. */
        if (blitz__u64_cas_weak(word, &s, BLITZ__SEM_WAITERS, BLITZ__ACQUIRE)) {
            op->blitz__w.blitz__value = n - have;
            blitz_waker mine = blitz_cx_waker(cx);
            blitz__waitq_push(&sem->blitz__waiters, &op->blitz__w, &mine);
            blitz__word_unlock(&sem->blitz__lock);
            return BLITZ_PENDING;
        }
    }
}

BLITZ_API blitz_poll blitz_semaphore_acquire(blitz_cx *cx, blitz_semaphore_acquire_op *op,
                                             blitz_semaphore *sem, size_t n) {
    if (BLITZ__UNLIKELY(!op))
        return BLITZ_READY;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE) {
        if (BLITZ__UNLIKELY(!cx || !sem || n == 0 || n > BLITZ_SEMAPHORE_MAX_PERMITS)) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        op->blitz__sem = sem;
        op->blitz__n = n;
        return blitz__sem_acquire_start(cx, op);
    }
    sem = op->blitz__sem;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker old = blitz_waker_noop();
        blitz_waker mine = blitz_cx_waker(cx);
        blitz__word_lock(&sem->blitz__lock);
        st = blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED);
        if (st == BLITZ__WAITER_QUEUED)
            old = blitz__waiter_refresh(&op->blitz__w, &mine);
        blitz__word_unlock(&sem->blitz__lock);
        blitz_waker_drop(old);
        if (st == BLITZ__WAITER_QUEUED)
            return BLITZ_PENDING;
    }
    /* DONE: the lock (or the acquire load above) orders the handed-over
     * result before this read. */
    op->result = (int)op->blitz__w.blitz__flags;
    blitz__waiter_reset(&op->blitz__w);
    return BLITZ_READY;
}

BLITZ_API void blitz_semaphore_acquire_cancel(blitz_cx *cx, void *arg) {
    blitz_semaphore_acquire_op *op = (blitz_semaphore_acquire_op *)arg;
    (void)cx;
    if (!op)
        return;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE)
        return;
    blitz_semaphore *sem = op->blitz__sem;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz__word_lock(&sem->blitz__lock);
        st = blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED);
        if (st == BLITZ__WAITER_QUEUED) {
            blitz__waitq_unlink(&sem->blitz__waiters, &op->blitz__w);
            blitz_waker mine = op->blitz__w.blitz__waker;
            op->blitz__w.blitz__waker = blitz_waker_noop();
            blitz__waiter_reset(&op->blitz__w);
            /* The partial fill goes to the next waiters; with none left (or
             * nothing to give) this also clears WAITERS. */
            blitz__sem_hand_out(sem, op->blitz__n - op->blitz__w.blitz__value);
            blitz_waker_drop(mine);
            return;
        }
        blitz__word_unlock(&sem->blitz__lock);
    }
    /* Completed but never seen by its owner: what it was given goes back. */
    int result = (int)op->blitz__w.blitz__flags;
    blitz__waiter_reset(&op->blitz__w);
    if (result == BLITZ_OK)
        blitz_semaphore_release(sem, op->blitz__n);
}

static blitz_poll blitz__sem_acquire_op_poll(blitz_cx *cx, void *arg) {
    blitz_semaphore_acquire_op *op = (blitz_semaphore_acquire_op *)arg;
    if (!op)
        return BLITZ_READY;
    return blitz_semaphore_acquire(cx, op, op->blitz__sem, op->blitz__n);
}

BLITZ_API blitz_op blitz_op_semaphore_acquire(blitz_semaphore_acquire_op *op, blitz_semaphore *sem,
                                              size_t n) {
    if (op && blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE) {
        op->blitz__sem = sem;
        op->blitz__n = n;
    }
    return blitz_op_make(blitz__sem_acquire_op_poll, blitz_semaphore_acquire_cancel, op);
}

BLITZ_API int blitz_semaphore_acquire_blocking(blitz_semaphore *sem, size_t n) {
    blitz_semaphore_acquire_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_wait(NULL, blitz_op_semaphore_acquire(&op, sem, n));
    return rc != BLITZ_OK ? rc : op.result;
}
/* ====[ END src/semaphore.c ]============================================== */
/* ====[ BEGIN src/mutex.c ]================================================ */
/* >>mutex */
/* The async mutex: a semaphore with one permit (FIFO, no spinning). */
/* sync_internal.h already included */

BLITZ_API int blitz_mutex_init(blitz_mutex *m) {
    return m ? blitz_semaphore_init(&m->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API void blitz_mutex_destroy(blitz_mutex *m) {
    if (m)
        blitz_semaphore_destroy(&m->blitz__sem);
}

BLITZ_API int blitz_mutex_try_lock(blitz_mutex *m) {
    return m ? blitz_semaphore_try_acquire(&m->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API blitz_poll blitz_mutex_lock(blitz_cx *cx, blitz_mutex_lock_op *op, blitz_mutex *m) {
    if (!op)
        return BLITZ_READY;
    return blitz_semaphore_acquire(cx, &op->blitz__acq, m ? &m->blitz__sem : NULL, 1);
}

BLITZ_API void blitz_mutex_lock_cancel(blitz_cx *cx, void *op) {
    blitz_semaphore_acquire_cancel(cx, op ? &((blitz_mutex_lock_op *)op)->blitz__acq : NULL);
}

BLITZ_API blitz_op blitz_op_mutex_lock(blitz_mutex_lock_op *op, blitz_mutex *m) {
    blitz_op o =
        blitz_op_semaphore_acquire(op ? &op->blitz__acq : NULL, m ? &m->blitz__sem : NULL, 1);
    o.cancel = blitz_mutex_lock_cancel;
    return o;
}

BLITZ_API int blitz_mutex_lock_blocking(blitz_mutex *m) {
    return m ? blitz_semaphore_acquire_blocking(&m->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API void blitz_mutex_unlock(blitz_mutex *m) {
    if (m)
        blitz_semaphore_release(&m->blitz__sem, 1);
}

BLITZ_API int blitz_mutex_is_locked(const blitz_mutex *m) {
    return m && blitz_semaphore_available(&m->blitz__sem) == 0;
}
/* ====[ END src/mutex.c ]================================================== */
/* ====[ BEGIN src/rwlock.c ]=============================================== */
/* >>rwlock */
/* The async reader-writer lock: a semaphore with BLITZ_RWLOCK_MAX_READERS
 * permits; a reader takes one, a writer all of them. FIFO handoff makes a
 * queued writer block later readers (the pool stays empty while it waits)
 * and hands the readers queued behind a writer the lock together. */
/* sync_internal.h already included */

#define BLITZ__RW_ALL BLITZ_RWLOCK_MAX_READERS

BLITZ_API int blitz_rwlock_init(blitz_rwlock *l) {
    return l ? blitz_semaphore_init(&l->blitz__sem, BLITZ__RW_ALL) : BLITZ_EINVAL;
}

BLITZ_API void blitz_rwlock_destroy(blitz_rwlock *l) {
    if (l)
        blitz_semaphore_destroy(&l->blitz__sem);
}

BLITZ_API int blitz_rwlock_try_read(blitz_rwlock *l) {
    return l ? blitz_semaphore_try_acquire(&l->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API int blitz_rwlock_try_write(blitz_rwlock *l) {
    return l ? blitz_semaphore_try_acquire(&l->blitz__sem, BLITZ__RW_ALL) : BLITZ_EINVAL;
}

BLITZ_API blitz_poll blitz_rwlock_read(blitz_cx *cx, blitz_rwlock_op *op, blitz_rwlock *l) {
    if (!op)
        return BLITZ_READY;
    return blitz_semaphore_acquire(cx, &op->blitz__acq, l ? &l->blitz__sem : NULL, 1);
}

BLITZ_API blitz_poll blitz_rwlock_write(blitz_cx *cx, blitz_rwlock_op *op, blitz_rwlock *l) {
    if (!op)
        return BLITZ_READY;
    return blitz_semaphore_acquire(cx, &op->blitz__acq, l ? &l->blitz__sem : NULL, BLITZ__RW_ALL);
}

BLITZ_API void blitz_rwlock_cancel(blitz_cx *cx, void *op) {
    blitz_semaphore_acquire_cancel(cx, op ? &((blitz_rwlock_op *)op)->blitz__acq : NULL);
}

static blitz_op blitz__rwlock_op(blitz_rwlock_op *op, blitz_rwlock *l, size_t n) {
    blitz_op o =
        blitz_op_semaphore_acquire(op ? &op->blitz__acq : NULL, l ? &l->blitz__sem : NULL, n);
    o.cancel = blitz_rwlock_cancel;
    return o;
}

BLITZ_API blitz_op blitz_op_rwlock_read(blitz_rwlock_op *op, blitz_rwlock *l) {
    return blitz__rwlock_op(op, l, 1);
}

BLITZ_API blitz_op blitz_op_rwlock_write(blitz_rwlock_op *op, blitz_rwlock *l) {
    return blitz__rwlock_op(op, l, BLITZ__RW_ALL);
}

BLITZ_API int blitz_rwlock_read_blocking(blitz_rwlock *l) {
    return l ? blitz_semaphore_acquire_blocking(&l->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API int blitz_rwlock_write_blocking(blitz_rwlock *l) {
    return l ? blitz_semaphore_acquire_blocking(&l->blitz__sem, BLITZ__RW_ALL) : BLITZ_EINVAL;
}

BLITZ_API void blitz_rwlock_read_unlock(blitz_rwlock *l) {
    if (l)
        blitz_semaphore_release(&l->blitz__sem, 1);
}

BLITZ_API void blitz_rwlock_write_unlock(blitz_rwlock *l) {
    if (l)
        blitz_semaphore_release(&l->blitz__sem, BLITZ__RW_ALL);
}
/* ====[ END src/rwlock.c ]================================================= */
/* ====[ BEGIN src/notify.c ]=============================================== */
/* >>notify */
/* Notify: one stored permit plus a FIFO of waiters.
 *
 * State word: PERMIT | WAITERS. WAITERS is set and cleared under the lock
 * together with the queue becoming non-empty / empty; PERMIT is set without
 * the lock only while WAITERS is clear, by a CAS on the same word. So a
 * notify_one either stores the permit before a waiter's enqueue CAS (which
 * then fails and consumes it) or sees WAITERS and wakes a queued op under
 * the lock: a notification is never lost between a waiter's check and its
 * enqueue. */
/* sync_internal.h already included */

#define BLITZ__NOTIFY_PERMIT  1u
#define BLITZ__NOTIFY_WAITERS 2u

/* How a waiter was completed (its flags): by notify_one (a notification that
 * must be passed on if the op is abandoned unseen) or by notify_waiters. */
#define BLITZ__NOTIFIED_ONE 1u
#define BLITZ__NOTIFIED_ALL 2u

static inline blitz__atomic_u32 *blitz__notify_word(blitz_notify *n) {
    return blitz__atomic_u32_at(&n->blitz__state);
}

BLITZ_API int blitz_notify_init(blitz_notify *n) {
    if (!n)
        return BLITZ_EINVAL;
    memset(n, 0, sizeof *n);
    return BLITZ_OK;
}

BLITZ_API void blitz_notify_destroy(blitz_notify *n) {
    if (n)
        BLITZ_ASSERT(blitz__waitq_empty(&n->blitz__waiters));
}

/* Clears WAITERS once the queue is empty. Under the lock. Relaxed: every
 * other change of WAITERS is made under the same lock, and a lock-free
 * notify_one that then sees it clear publishes its permit with a CAS on
 * this word, which orders itself. */
static void blitz__notify_settle(blitz_notify *n) {
    if (blitz__waitq_empty(&n->blitz__waiters))
        blitz__u32_fetch_and(blitz__notify_word(n), ~BLITZ__NOTIFY_WAITERS, BLITZ__RELAXED);
}

BLITZ_API void blitz_notify_one(blitz_notify *n) {
    if (!n)
        return;
    blitz__atomic_u32 *word = blitz__notify_word(n);
    uint32_t s = blitz__u32_load(word, BLITZ__RELAXED);
    while (!(s & BLITZ__NOTIFY_WAITERS)) {
        if (s & BLITZ__NOTIFY_PERMIT)
            return; /* permits do not accumulate */
        /* Release: the waiter that consumes the permit (acquire) sees what
         * the notifier did before notifying. */
        if (blitz__u32_cas_weak(word, &s, s | BLITZ__NOTIFY_PERMIT, BLITZ__RELEASE))
            return;
    }
    blitz_waker waker = blitz_waker_noop();
    blitz__word_lock(&n->blitz__lock);
    blitz__waiter *w = n->blitz__waiters.blitz__head;
    if (w) {
        blitz__waitq_unlink(&n->blitz__waiters, w);
        w->blitz__flags = BLITZ__NOTIFIED_ONE;
        waker = blitz__waiter_finish(w);
        blitz__notify_settle(n);
    } else {
        /* The waiters went (cancelled) after we looked: store the permit.
         * Release, as on the fast path: the consumer's acquire sees what
         * the notifier did. */
        blitz__u32_fetch_or(word, BLITZ__NOTIFY_PERMIT, BLITZ__RELEASE);
    }
    blitz__word_unlock(&n->blitz__lock);
    blitz_waker_wake(waker);
}

BLITZ_API void blitz_notify_waiters(blitz_notify *n) {
    if (!n)
        return;
    blitz__wake_list wl;
    wl.len = 0;
    blitz__word_lock(&n->blitz__lock);
    /* Ops that queue while a batch is being woken carry the new generation
     * and stay queued: only those waiting at the call are woken. */
    uint64_t gen = ++n->blitz__generation;
    for (;;) {
        blitz__waiter *w;
        while (!blitz__wake_list_full(&wl) && (w = n->blitz__waiters.blitz__head) != NULL &&
               w->blitz__value < gen) {
            blitz__waitq_unlink(&n->blitz__waiters, w);
            w->blitz__flags = BLITZ__NOTIFIED_ALL;
            blitz__wake_list_push(&wl, blitz__waiter_finish(w));
        }
        blitz__notify_settle(n);
        w = n->blitz__waiters.blitz__head;
        int more = w != NULL && w->blitz__value < gen;
        blitz__word_unlock(&n->blitz__lock);
        blitz__wake_list_wake(&wl);
        if (!more)
            return;
        blitz__word_lock(&n->blitz__lock);
    }
}

BLITZ_API int blitz_notify_try_wait(blitz_notify *n) {
    if (!n)
        return BLITZ_EINVAL;
    blitz__atomic_u32 *word = blitz__notify_word(n);
    uint32_t s = blitz__u32_load(word, BLITZ__RELAXED);
    while (s & BLITZ__NOTIFY_PERMIT) {
        /* Acquire: pairs with the notifier's release. */
        if (blitz__u32_cas_weak(word, &s, s & ~BLITZ__NOTIFY_PERMIT, BLITZ__ACQUIRE))
            return BLITZ_OK;
    }
    return BLITZ_EAGAIN;
}

BLITZ_API blitz_poll blitz_notify_wait(blitz_cx *cx, blitz_notify_wait_op *op, blitz_notify *n) {
    if (!op)
        return BLITZ_READY;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE) {
        if (!cx || !n) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        /* The permit first: the op's fields are written after the locked
         * instruction rather than queued in front of it. */
        blitz__atomic_u32 *word = blitz__notify_word(n);
        uint32_t s = blitz__u32_load(word, BLITZ__RELAXED);
        while (s & BLITZ__NOTIFY_PERMIT) {
            /* Acquire: pairs with the notifier's release. */
            if (blitz__u32_cas_weak(word, &s, s & ~BLITZ__NOTIFY_PERMIT, BLITZ__ACQUIRE)) {
                op->result = BLITZ_OK;
                return BLITZ_READY;
            }
        }
        op->blitz__notify = n;
        op->result = BLITZ_OK;
        blitz__word_lock(&n->blitz__lock);
        s = blitz__u32_load(word, BLITZ__RELAXED);
        for (;;) {
            if (s & BLITZ__NOTIFY_PERMIT) {
                if (blitz__u32_cas_weak(word, &s, s & ~BLITZ__NOTIFY_PERMIT, BLITZ__ACQUIRE)) {
                    blitz__word_unlock(&n->blitz__lock);
                    return BLITZ_READY;
                }
                continue;
            }
            /* Fails if notify_one stores the permit meanwhile. */
            if (blitz__u32_cas_weak(word, &s, s | BLITZ__NOTIFY_WAITERS, BLITZ__ACQUIRE))
                break;
        }
        op->blitz__w.blitz__value = n->blitz__generation;
        blitz_waker mine = blitz_cx_waker(cx);
        blitz__waitq_push(&n->blitz__waiters, &op->blitz__w, &mine);
        blitz__word_unlock(&n->blitz__lock);
        return BLITZ_PENDING;
    }
    n = op->blitz__notify;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker old = blitz_waker_noop();
        blitz_waker mine = blitz_cx_waker(cx);
        blitz__word_lock(&n->blitz__lock);
        st = blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED);
        if (st == BLITZ__WAITER_QUEUED)
            old = blitz__waiter_refresh(&op->blitz__w, &mine);
        blitz__word_unlock(&n->blitz__lock);
        blitz_waker_drop(old);
        if (st == BLITZ__WAITER_QUEUED)
            return BLITZ_PENDING;
    }
    blitz__waiter_reset(&op->blitz__w);
    op->result = BLITZ_OK;
    return BLITZ_READY;
}

BLITZ_API void blitz_notify_wait_cancel(blitz_cx *cx, void *arg) {
    blitz_notify_wait_op *op = (blitz_notify_wait_op *)arg;
    (void)cx;
    if (!op)
        return;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE)
        return;
    blitz_notify *n = op->blitz__notify;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker mine = blitz_waker_noop();
        blitz__word_lock(&n->blitz__lock);
        st = blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED);
        if (st == BLITZ__WAITER_QUEUED) {
            blitz__waitq_unlink(&n->blitz__waiters, &op->blitz__w);
            mine = op->blitz__w.blitz__waker;
            op->blitz__w.blitz__waker = blitz_waker_noop();
            blitz__notify_settle(n);
        }
        blitz__word_unlock(&n->blitz__lock);
        blitz_waker_drop(mine);
        if (st == BLITZ__WAITER_QUEUED) {
            blitz__waiter_reset(&op->blitz__w);
            return;
        }
    }
    uint32_t how = op->blitz__w.blitz__flags;
    blitz__waiter_reset(&op->blitz__w);
    if (how == BLITZ__NOTIFIED_ONE)
        blitz_notify_one(n);
}

static blitz_poll blitz__notify_wait_op_poll(blitz_cx *cx, void *arg) {
    blitz_notify_wait_op *op = (blitz_notify_wait_op *)arg;
    if (!op)
        return BLITZ_READY;
    return blitz_notify_wait(cx, op, op->blitz__notify);
}

BLITZ_API blitz_op blitz_op_notify_wait(blitz_notify_wait_op *op, blitz_notify *n) {
    if (op && blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE)
        op->blitz__notify = n;
    return blitz_op_make(blitz__notify_wait_op_poll, blitz_notify_wait_cancel, op);
}

BLITZ_API int blitz_notify_wait_blocking(blitz_notify *n) {
    blitz_notify_wait_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_wait(NULL, blitz_op_notify_wait(&op, n));
    return rc != BLITZ_OK ? rc : op.result;
}
/* ====[ END src/notify.c ]================================================= */
/* ====[ BEGIN src/barrier.c ]============================================== */
/* >>barrier */
/* Barrier: an arrival count and a generation under one lock. The wait
 * that completes a generation is its leader: it bumps the generation,
 * resets the count and wakes the waiters of its generation (each waiter
 * remembers the generation it joined, so ops of the next one that queue
 * while a batch is being woken stay queued). */
/* sync_internal.h already included */

BLITZ_API int blitz_barrier_init(blitz_barrier *b, uint32_t parties) {
    if (!b || parties == 0)
        return BLITZ_EINVAL;
    memset(b, 0, sizeof *b);
    b->blitz__parties = parties;
    return BLITZ_OK;
}

BLITZ_API void blitz_barrier_destroy(blitz_barrier *b) {
    if (b)
        BLITZ_ASSERT(blitz__waitq_empty(&b->blitz__waiters));
}

/* Completes generation `gen`'s waiters. Called with the lock held; returns
 * with it released. */
static void blitz__barrier_release(blitz_barrier *b, uint64_t gen) {
    blitz__wake_list wl;
    wl.len = 0;
    for (;;) {
        blitz__waiter *w;
        while (!blitz__wake_list_full(&wl) && (w = b->blitz__waiters.blitz__head) != NULL &&
               w->blitz__value <= gen) {
            blitz__waitq_unlink(&b->blitz__waiters, w);
            blitz__wake_list_push(&wl, blitz__waiter_finish(w));
        }
        w = b->blitz__waiters.blitz__head;
        int more = w != NULL && w->blitz__value <= gen;
        blitz__word_unlock(&b->blitz__lock);
        blitz__wake_list_wake(&wl);
        if (!more)
            return;
        blitz__word_lock(&b->blitz__lock);
    }
}

BLITZ_API blitz_poll blitz_barrier_wait(blitz_cx *cx, blitz_barrier_wait_op *op, blitz_barrier *b) {
    if (!op)
        return BLITZ_READY;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE) {
        if (!cx || !b) {
            op->result = BLITZ_EINVAL;
            op->is_leader = 0;
            return BLITZ_READY;
        }
        op->blitz__barrier = b;
        op->result = BLITZ_OK;
        blitz__word_lock(&b->blitz__lock);
        uint64_t gen = b->blitz__generation;
        if (++b->blitz__arrived == b->blitz__parties) {
            b->blitz__arrived = 0;
            b->blitz__generation = gen + 1;
            op->is_leader = 1;
            if (blitz__waitq_empty(&b->blitz__waiters))
                blitz__word_unlock(&b->blitz__lock);
            else
                blitz__barrier_release(b, gen);
            return BLITZ_READY;
        }
        op->is_leader = 0;
        op->blitz__w.blitz__value = gen;
        blitz_waker mine = blitz_cx_waker(cx);
        blitz__waitq_push(&b->blitz__waiters, &op->blitz__w, &mine);
        blitz__word_unlock(&b->blitz__lock);
        return BLITZ_PENDING;
    }
    b = op->blitz__barrier;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker old = blitz_waker_noop();
        blitz_waker mine = blitz_cx_waker(cx);
        blitz__word_lock(&b->blitz__lock);
        st = blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED);
        if (st == BLITZ__WAITER_QUEUED)
            old = blitz__waiter_refresh(&op->blitz__w, &mine);
        blitz__word_unlock(&b->blitz__lock);
        blitz_waker_drop(old);
        if (st == BLITZ__WAITER_QUEUED)
            return BLITZ_PENDING;
    }
    blitz__waiter_reset(&op->blitz__w);
    return BLITZ_READY;
}

BLITZ_API void blitz_barrier_wait_cancel(blitz_cx *cx, void *arg) {
    blitz_barrier_wait_op *op = (blitz_barrier_wait_op *)arg;
    (void)cx;
    if (!op || blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE)
        return;
    blitz_barrier *b = op->blitz__barrier;
    blitz_waker mine = blitz_waker_noop();
    blitz__word_lock(&b->blitz__lock);
    if (blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED) == BLITZ__WAITER_QUEUED) {
        blitz__waitq_unlink(&b->blitz__waiters, &op->blitz__w);
        mine = op->blitz__w.blitz__waker;
        op->blitz__w.blitz__waker = blitz_waker_noop();
        /* Withdraw the arrival, unless its generation was already released
         * (a leader still waking an earlier batch). */
        if (op->blitz__w.blitz__value == b->blitz__generation)
            b->blitz__arrived--;
    }
    blitz__word_unlock(&b->blitz__lock);
    blitz_waker_drop(mine);
    blitz__waiter_reset(&op->blitz__w);
}

static blitz_poll blitz__barrier_wait_op_poll(blitz_cx *cx, void *arg) {
    blitz_barrier_wait_op *op = (blitz_barrier_wait_op *)arg;
    if (!op)
        return BLITZ_READY;
    return blitz_barrier_wait(cx, op, op->blitz__barrier);
}

BLITZ_API blitz_op blitz_op_barrier_wait(blitz_barrier_wait_op *op, blitz_barrier *b) {
    if (op && blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE)
        op->blitz__barrier = b;
    return blitz_op_make(blitz__barrier_wait_op_poll, blitz_barrier_wait_cancel, op);
}

BLITZ_API int blitz_barrier_wait_blocking(blitz_barrier *b, int *is_leader) {
    blitz_barrier_wait_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_wait(NULL, blitz_op_barrier_wait(&op, b));
    if (rc == BLITZ_OK)
        rc = op.result;
    if (is_leader)
        *is_leader = rc == BLITZ_OK && op.is_leader;
    return rc;
}
/* ====[ END src/barrier.c ]================================================ */
/* ====[ BEGIN src/once_cell.c ]============================================ */
/* >>once_cell */
/* OnceCell: EMPTY -> INITIALIZING (one claimer) -> READY, or back to EMPTY
 * (or to the first waiter) when the claimer abandons.
 *
 * State word: phase | WAITERS. WAITERS is raised under the lock, by a CAS
 * that fails if the phase changed, when an op queues (only while
 * INITIALIZING) and cleared under the lock when the queue empties. Complete
 * and abandon look at the word first and take the lock only when WAITERS
 * is set, so set / get with nobody waiting are lock-free; an enqueue that
 * races a completion either sees READY (its CAS fails) or is seen by it. */
/* sync_internal.h already included */

#define BLITZ__ONCE_EMPTY   0u
#define BLITZ__ONCE_INIT    1u
#define BLITZ__ONCE_READY   2u
#define BLITZ__ONCE_PHASE   3u
#define BLITZ__ONCE_WAITERS 4u

/* A completed waiter's flags: the value is there, or the claim is its. */
#define BLITZ__ONCE_GOT_VALUE 1u
#define BLITZ__ONCE_GOT_CLAIM 2u

static inline blitz__atomic_u32 *blitz__once_word(const blitz_once_cell *c) {
    return blitz__atomic_u32_at((uint32_t *)&c->blitz__state);
}

BLITZ_API int blitz_once_cell_init(blitz_once_cell *c) {
    if (!c)
        return BLITZ_EINVAL;
    memset(c, 0, sizeof *c);
    return BLITZ_OK;
}

BLITZ_API void blitz_once_cell_destroy(blitz_once_cell *c) {
    if (c)
        BLITZ_ASSERT(blitz__waitq_empty(&c->blitz__waiters));
}

static inline blitz__atomic_ptr *blitz__once_value(const blitz_once_cell *c) {
    return (blitz__atomic_ptr *)(void *)&((blitz_once_cell *)c)->blitz__value;
}

BLITZ_API void *blitz_once_cell_get(const blitz_once_cell *c) {
    if (BLITZ__UNLIKELY(c == NULL))
        return NULL;
    /* The value is written once, by complete, with release, and is NULL
     * until then: one acquire load answers, and pairs with that store so
     * what the initializer wrote before completing is visible. (A NULL
     * value reads as "not set", which it also is to the caller.) */
    return blitz__ptr_load(blitz__once_value(c), BLITZ__ACQUIRE);
}

BLITZ_API int blitz_once_cell_is_set(const blitz_once_cell *c) {
    return c && blitz__u32_load(blitz__once_word(c), BLITZ__ACQUIRE) == BLITZ__ONCE_READY;
}

BLITZ_API int blitz_once_cell_try_claim(blitz_once_cell *c) {
    if (!c)
        return BLITZ_EINVAL;
    uint32_t s = BLITZ__ONCE_EMPTY;
    /* Acquire: a claim after an abandon sees what the abandoner left. */
    if (blitz__u32_cas(blitz__once_word(c), &s, BLITZ__ONCE_INIT, BLITZ__ACQUIRE))
        return BLITZ_OK;
    return (s & BLITZ__ONCE_PHASE) == BLITZ__ONCE_READY ? BLITZ_EEXIST : BLITZ_EBUSY;
}

BLITZ_API int blitz_once_cell_complete(blitz_once_cell *c, void *value) {
    if (!c)
        return BLITZ_EINVAL;
    blitz__atomic_u32 *word = blitz__once_word(c);
    if ((blitz__u32_load(word, BLITZ__RELAXED) & BLITZ__ONCE_PHASE) != BLITZ__ONCE_INIT)
        return BLITZ_EINVAL;
    blitz__ptr_store(blitz__once_value(c), value, BLITZ__RELEASE);
    /* Release: publishes the value with READY. Acq_rel: when WAITERS was
     * set we go on to take the queue. */
    uint32_t old = blitz__u32_swap(word, BLITZ__ONCE_READY, BLITZ__ACQ_REL);
    if (!(old & BLITZ__ONCE_WAITERS))
        return BLITZ_OK;
    blitz__wake_list wl;
    wl.len = 0;
    blitz__word_lock(&c->blitz__lock);
    for (;;) {
        blitz__waiter *w;
        while (!blitz__wake_list_full(&wl) && (w = c->blitz__waiters.blitz__head) != NULL) {
            blitz__waitq_unlink(&c->blitz__waiters, w);
            w->blitz__flags = BLITZ__ONCE_GOT_VALUE;
            blitz__wake_list_push(&wl, blitz__waiter_finish(w));
        }
        int more = !blitz__waitq_empty(&c->blitz__waiters);
        blitz__word_unlock(&c->blitz__lock);
        blitz__wake_list_wake(&wl);
        if (!more)
            return BLITZ_OK;
        blitz__word_lock(&c->blitz__lock);
    }
}

BLITZ_API int blitz_once_cell_set(blitz_once_cell *c, void *value) {
    int rc = blitz_once_cell_try_claim(c);
    return rc == BLITZ_OK ? blitz_once_cell_complete(c, value) : rc;
}

BLITZ_API int blitz_once_cell_abandon(blitz_once_cell *c) {
    if (!c)
        return BLITZ_EINVAL;
    blitz__atomic_u32 *word = blitz__once_word(c);
    uint32_t s = blitz__u32_load(word, BLITZ__RELAXED);
    for (;;) {
        if ((s & BLITZ__ONCE_PHASE) != BLITZ__ONCE_INIT)
            return BLITZ_EINVAL;
        if (s & BLITZ__ONCE_WAITERS)
            break;
        /* Release: the next claimer sees what this one did. */
        if (blitz__u32_cas_weak(word, &s, BLITZ__ONCE_EMPTY, BLITZ__RELEASE))
            return BLITZ_OK;
    }
    blitz_waker waker = blitz_waker_noop();
    blitz__word_lock(&c->blitz__lock);
    blitz__waiter *w = c->blitz__waiters.blitz__head;
    if (w) {
        /* The claim passes to the first waiter; the phase stays INIT. */
        blitz__waitq_unlink(&c->blitz__waiters, w);
        w->blitz__flags = BLITZ__ONCE_GOT_CLAIM;
        waker = blitz__waiter_finish(w);
        /* Relaxed: WAITERS only changes under the lock; the claimer reads
         * it before its own CAS or swap on this word. */
        if (blitz__waitq_empty(&c->blitz__waiters))
            blitz__u32_fetch_and(word, ~BLITZ__ONCE_WAITERS, BLITZ__RELAXED);
    } else {
        blitz__u32_store(word, BLITZ__ONCE_EMPTY, BLITZ__RELEASE);
    }
    blitz__word_unlock(&c->blitz__lock);
    blitz_waker_wake(waker);
    return BLITZ_OK;
}

static blitz_poll blitz__once_ready(blitz_once_cell_op *op, int claimed) {
    op->result = BLITZ_OK;
    op->claimed = claimed;
    op->value =
        claimed ? NULL : blitz__ptr_load(blitz__once_value(op->blitz__cell), BLITZ__RELAXED);
    return BLITZ_READY;
}

BLITZ_API blitz_poll blitz_once_cell_get_or_claim(blitz_cx *cx, blitz_once_cell_op *op,
                                                  blitz_once_cell *c) {
    if (!op)
        return BLITZ_READY;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE) {
        if (!cx || !c) {
            op->result = BLITZ_EINVAL;
            op->claimed = 0;
            op->value = NULL;
            return BLITZ_READY;
        }
        op->blitz__cell = c;
        blitz__atomic_u32 *word = blitz__once_word(c);
        uint32_t s = blitz__u32_load(word, BLITZ__ACQUIRE);
        if ((s & BLITZ__ONCE_PHASE) == BLITZ__ONCE_READY)
            return blitz__once_ready(op, 0);
        blitz__word_lock(&c->blitz__lock);
        for (;;) {
            uint32_t phase = s & BLITZ__ONCE_PHASE;
            if (phase == BLITZ__ONCE_READY) {
                blitz__word_unlock(&c->blitz__lock);
                return blitz__once_ready(op, 0);
            }
            if (phase == BLITZ__ONCE_EMPTY) {
                if (blitz__u32_cas_weak(word, &s, BLITZ__ONCE_INIT, BLITZ__ACQUIRE)) {
                    blitz__word_unlock(&c->blitz__lock);
                    return blitz__once_ready(op, 1);
                }
                continue;
            }
            /* Acquire: if this fails because the value was published, the
             * reload sees it. */
            if (blitz__u32_cas_weak(word, &s, s | BLITZ__ONCE_WAITERS, BLITZ__ACQUIRE))
                break;
        }
        blitz_waker mine = blitz_cx_waker(cx);
        blitz__waitq_push(&c->blitz__waiters, &op->blitz__w, &mine);
        blitz__word_unlock(&c->blitz__lock);
        return BLITZ_PENDING;
    }
    c = op->blitz__cell;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker old = blitz_waker_noop();
        blitz_waker mine = blitz_cx_waker(cx);
        blitz__word_lock(&c->blitz__lock);
        st = blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED);
        if (st == BLITZ__WAITER_QUEUED)
            old = blitz__waiter_refresh(&op->blitz__w, &mine);
        blitz__word_unlock(&c->blitz__lock);
        blitz_waker_drop(old);
        if (st == BLITZ__WAITER_QUEUED)
            return BLITZ_PENDING;
    }
    uint32_t how = op->blitz__w.blitz__flags;
    blitz__waiter_reset(&op->blitz__w);
    return blitz__once_ready(op, how == BLITZ__ONCE_GOT_CLAIM);
}

BLITZ_API void blitz_once_cell_get_or_claim_cancel(blitz_cx *cx, void *arg) {
    blitz_once_cell_op *op = (blitz_once_cell_op *)arg;
    (void)cx;
    if (!op)
        return;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE)
        return;
    blitz_once_cell *c = op->blitz__cell;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker mine = blitz_waker_noop();
        blitz__word_lock(&c->blitz__lock);
        st = blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED);
        if (st == BLITZ__WAITER_QUEUED) {
            blitz__waitq_unlink(&c->blitz__waiters, &op->blitz__w);
            mine = op->blitz__w.blitz__waker;
            op->blitz__w.blitz__waker = blitz_waker_noop();
            if (blitz__waitq_empty(&c->blitz__waiters))
                blitz__u32_fetch_and(blitz__once_word(c), ~BLITZ__ONCE_WAITERS, BLITZ__RELAXED);
        }
        blitz__word_unlock(&c->blitz__lock);
        blitz_waker_drop(mine);
        if (st == BLITZ__WAITER_QUEUED) {
            blitz__waiter_reset(&op->blitz__w);
            return;
        }
    }
    uint32_t how = op->blitz__w.blitz__flags;
    blitz__waiter_reset(&op->blitz__w);
    if (how == BLITZ__ONCE_GOT_CLAIM)
        blitz_once_cell_abandon(c);
}

static blitz_poll blitz__once_op_poll(blitz_cx *cx, void *arg) {
    blitz_once_cell_op *op = (blitz_once_cell_op *)arg;
    if (!op)
        return BLITZ_READY;
    return blitz_once_cell_get_or_claim(cx, op, op->blitz__cell);
}

BLITZ_API blitz_op blitz_op_once_cell_get_or_claim(blitz_once_cell_op *op, blitz_once_cell *c) {
    if (op && blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE)
        op->blitz__cell = c;
    return blitz_op_make(blitz__once_op_poll, blitz_once_cell_get_or_claim_cancel, op);
}

BLITZ_API int blitz_once_cell_get_or_claim_blocking(blitz_once_cell *c, void **value,
                                                    int *claimed) {
    blitz_once_cell_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_wait(NULL, blitz_op_once_cell_get_or_claim(&op, c));
    if (rc == BLITZ_OK)
        rc = op.result;
    if (value)
        *value = rc == BLITZ_OK ? op.value : NULL;
    if (claimed)
        *claimed = rc == BLITZ_OK && op.claimed;
    return rc;
}

BLITZ_API int blitz_once_cell_get_or_init_blocking(blitz_once_cell *c,
                                                   int (*init)(void *arg, void **value), void *arg,
                                                   void **value) {
    if (!c || !init)
        return BLITZ_EINVAL;
    void *v = NULL;
    int claimed = 0;
    int rc = blitz_once_cell_get_or_claim_blocking(c, &v, &claimed);
    if (rc == BLITZ_OK && claimed) {
        rc = init(arg, &v);
        if (rc == BLITZ_OK)
            blitz_once_cell_complete(c, v);
        else
            blitz_once_cell_abandon(c);
    }
    if (value)
        *value = rc == BLITZ_OK ? v : NULL;
    return rc;
}
/* ====[ END src/once_cell.c ]============================================== */
/* ====[ BEGIN src/cancel_token.c ]========================================= */
/* >>cancel_token */
/* Cancellation tokens: a flag, a waiter queue, and a place in a tree.
 *
 * Locks: one process-wide lock guards the tree links of every token (tokens
 * are linked and unlinked rarely, and a parent and its children may be
 * destroyed concurrently, which per-token locks could only order with a
 * lock-order dance); each token's own lock guards its waiters. Order: tree
 * lock, then a token's lock. Wakers are woken with neither held (a woken or
 * dropped waker may free a task whose drop function destroys a token).
 *
 * Cancel marks the whole subtree under the tree lock, then drains the
 * waiters node by node. A wait checks the flag under the token's lock and
 * queues only if it is clear; the canceller sets the flag before it takes
 * that lock to drain, so every waiter is either drained or sees the flag. */
/* sync_internal.h already included */

static uint32_t blitz__token_tree_lock;

static inline blitz__atomic_u32 *blitz__token_flag(const blitz_cancel_token *t) {
    return blitz__atomic_u32_at((uint32_t *)&t->blitz__cancelled);
}

BLITZ_API int blitz_cancel_token_init(blitz_cancel_token *t) {
    if (!t)
        return BLITZ_EINVAL;
    memset(t, 0, sizeof *t);
    return BLITZ_OK;
}

BLITZ_API int blitz_cancel_token_init_child(blitz_cancel_token *child, blitz_cancel_token *parent) {
    if (!child || !parent || child == parent)
        return BLITZ_EINVAL;
    memset(child, 0, sizeof *child);
    blitz__word_lock(&blitz__token_tree_lock);
    child->blitz__parent = parent;
    child->blitz__next = parent->blitz__children;
    if (parent->blitz__children)
        parent->blitz__children->blitz__prev = child;
    parent->blitz__children = child;
    if (blitz__u32_load(blitz__token_flag(parent), BLITZ__RELAXED))
        blitz__u32_store(blitz__token_flag(child), 1, BLITZ__RELEASE);
    blitz__word_unlock(&blitz__token_tree_lock);
    return BLITZ_OK;
}

/* Unlinks `t` from its parent's list of children. Under the tree lock. */
static void blitz__token_unlink(blitz_cancel_token *t) {
    if (t->blitz__prev)
        t->blitz__prev->blitz__next = t->blitz__next;
    else if (t->blitz__parent)
        t->blitz__parent->blitz__children = t->blitz__next;
    if (t->blitz__next)
        t->blitz__next->blitz__prev = t->blitz__prev;
    t->blitz__next = t->blitz__prev = NULL;
    t->blitz__parent = NULL;
}

BLITZ_API void blitz_cancel_token_destroy(blitz_cancel_token *t) {
    if (!t)
        return;
    BLITZ_ASSERT(blitz__waitq_empty(&t->blitz__waiters));
    blitz__word_lock(&blitz__token_tree_lock);
    blitz_cancel_token *up = t->blitz__parent;
    /* The children move up, so cancelling an ancestor still reaches them. */
    while (t->blitz__children) {
        blitz_cancel_token *c = t->blitz__children;
        blitz__token_unlink(c);
        if (up) {
            c->blitz__parent = up;
            c->blitz__next = up->blitz__children;
            if (up->blitz__children)
                up->blitz__children->blitz__prev = c;
            up->blitz__children = c;
        }
    }
    blitz__token_unlink(t);
    blitz__word_unlock(&blitz__token_tree_lock);
}

/* The next node of `root`'s subtree after `n` in depth-first order, or NULL.
 * Under the tree lock. */
static blitz_cancel_token *blitz__token_next(blitz_cancel_token *root, blitz_cancel_token *n) {
    if (n->blitz__children)
        return n->blitz__children;
    while (n != root && !n->blitz__next)
        n = n->blitz__parent;
    return n == root ? NULL : n->blitz__next;
}

BLITZ_API void blitz_cancel_token_cancel(blitz_cancel_token *t) {
    if (!t)
        return;
    blitz__word_lock(&blitz__token_tree_lock);
    if (blitz__u32_load(blitz__token_flag(t), BLITZ__RELAXED)) {
        blitz__word_unlock(&blitz__token_tree_lock);
        return;
    }
    blitz_cancel_token *n;
    for (n = t; n; n = blitz__token_next(t, n))
        /* Release: a task that sees the flag sees what the canceller did
         * before cancelling. */
        blitz__u32_store(blitz__token_flag(n), 1, BLITZ__RELEASE);
    /* Drain a batch of waiters at a time; between batches the tree may
     * change (nodes destroyed), so each batch walks it again. Cancelled
     * tokens take no new waiters, so this ends. */
    for (;;) {
        blitz__wake_list wl;
        wl.len = 0;
        for (n = t; n && !blitz__wake_list_full(&wl); n = blitz__token_next(t, n)) {
            blitz__word_lock(&n->blitz__lock);
            blitz__waiter *w;
            while (!blitz__wake_list_full(&wl) && (w = n->blitz__waiters.blitz__head) != NULL) {
                blitz__waitq_unlink(&n->blitz__waiters, w);
                blitz__wake_list_push(&wl, blitz__waiter_finish(w));
            }
            blitz__word_unlock(&n->blitz__lock);
        }
        int full = blitz__wake_list_full(&wl);
        blitz__word_unlock(&blitz__token_tree_lock);
        blitz__wake_list_wake(&wl);
        if (!full)
            return;
        blitz__word_lock(&blitz__token_tree_lock);
    }
}

BLITZ_API int blitz_cancel_token_is_cancelled(const blitz_cancel_token *t) {
    return t && blitz__u32_load(blitz__token_flag(t), BLITZ__ACQUIRE) != 0;
}

BLITZ_API blitz_poll blitz_cancel_token_wait(blitz_cx *cx, blitz_cancel_token_wait_op *op,
                                             blitz_cancel_token *t) {
    if (!op)
        return BLITZ_READY;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE) {
        if (!cx || !t) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        op->blitz__token = t;
        op->result = BLITZ_OK;
        if (blitz_cancel_token_is_cancelled(t))
            return BLITZ_READY;
        blitz__word_lock(&t->blitz__lock);
        if (blitz_cancel_token_is_cancelled(t)) {
            blitz__word_unlock(&t->blitz__lock);
            return BLITZ_READY;
        }
        blitz_waker mine = blitz_cx_waker(cx);
        blitz__waitq_push(&t->blitz__waiters, &op->blitz__w, &mine);
        blitz__word_unlock(&t->blitz__lock);
        return BLITZ_PENDING;
    }
    t = op->blitz__token;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker old = blitz_waker_noop();
        blitz_waker mine = blitz_cx_waker(cx);
        blitz__word_lock(&t->blitz__lock);
        st = blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED);
        if (st == BLITZ__WAITER_QUEUED)
            old = blitz__waiter_refresh(&op->blitz__w, &mine);
        blitz__word_unlock(&t->blitz__lock);
        blitz_waker_drop(old);
        if (st == BLITZ__WAITER_QUEUED)
            return BLITZ_PENDING;
    }
    blitz__waiter_reset(&op->blitz__w);
    return BLITZ_READY;
}

BLITZ_API void blitz_cancel_token_wait_cancel(blitz_cx *cx, void *arg) {
    blitz_cancel_token_wait_op *op = (blitz_cancel_token_wait_op *)arg;
    (void)cx;
    if (!op || blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE)
        return;
    blitz_cancel_token *t = op->blitz__token;
    blitz_waker mine = blitz_waker_noop();
    blitz__word_lock(&t->blitz__lock);
    if (blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED) == BLITZ__WAITER_QUEUED) {
        blitz__waitq_unlink(&t->blitz__waiters, &op->blitz__w);
        mine = op->blitz__w.blitz__waker;
        op->blitz__w.blitz__waker = blitz_waker_noop();
    }
    blitz__word_unlock(&t->blitz__lock);
    blitz_waker_drop(mine);
    blitz__waiter_reset(&op->blitz__w);
}

static blitz_poll blitz__token_wait_op_poll(blitz_cx *cx, void *arg) {
    blitz_cancel_token_wait_op *op = (blitz_cancel_token_wait_op *)arg;
    if (!op)
        return BLITZ_READY;
    return blitz_cancel_token_wait(cx, op, op->blitz__token);
}

BLITZ_API blitz_op blitz_op_cancel_token_wait(blitz_cancel_token_wait_op *op,
                                              blitz_cancel_token *t) {
    if (op && blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE)
        op->blitz__token = t;
    return blitz_op_make(blitz__token_wait_op_poll, blitz_cancel_token_wait_cancel, op);
}

BLITZ_API int blitz_cancel_token_wait_blocking(blitz_cancel_token *t) {
    blitz_cancel_token_wait_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_wait(NULL, blitz_op_cancel_token_wait(&op, t));
    return rc != BLITZ_OK ? rc : op.result;
}
/* ====[ END src/cancel_token.c ]=========================================== */
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
    uint64_t n = w->wake_count;
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
    for (uint32_t i = 0; i < rt->spin_before_park; i++) {
        if (blitz__u32_load(&rt->shutdown, BLITZ__RELAXED) || blitz__work_available(rt))
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
    uint64_t timeout = rt->park_timeout_ns, timer_ns = blitz__time_sleep_ns(rt);
    uint32_t none = 0;
    int sleeper =
        timer_ns && blitz__u32_cas(&rt->time.sleeper, &none, w->index + 1, BLITZ__SEQ_CST);
    if (sleeper) {
        /* Re-read after becoming the sleeper: an earlier timer armed in
         * between saw no sleeper and woke a parked worker, maybe not us. */
        timer_ns = blitz__time_sleep_ns(rt);
        if (timer_ns && (timeout == 0 || timer_ns < timeout))
            timeout = timer_ns;
    }
    BLITZ__STAT(blitz__u64_bump(&w->counters.parked, 1));
    if (!sleeper || timer_ns)
        blitz__parker_park(&w->parker, timeout);
    slept = 1;
    if (sleeper)
        blitz__u32_store(&rt->time.sleeper, 0, BLITZ__SEQ_CST);
    if (!blitz__idle_unset_parked(rt, w->index))
        w->searching = 1;
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
