/*
blitz.h - a work-stealing async runtime for C, in one header.   v0.1.0
No warranty implied; use at your own risk. LICENSE: see end of file.


TABLE OF CONTENTS
=================
 1. SET-UP AND A MINIMAL PROGRAM
 2. RUNTIMES
 3. TASKS AND POLL FUNCTIONS
 4. JOINING, DETACHING, CANCELLING
 5. TIME
 6. OPS, COMBINATORS AND TASK GROUPS
 7. SYNCHRONIZATION
 8. CHANNELS
 9. I/O (SOCKETS)
10. STREAMS, PIPES AND COPY
11. OS SERVICES
      11.1 BLOCKING WORK
      11.2 FILES
      11.3 DNS
      11.4 SIGNALS
      11.5 PROCESSES
      11.6 GRACEFUL SHUTDOWN
12. CONFIGURATION
13. PERFORMANCE NOTES
14. COMMON MISTAKES
Search for a section's number and name ("5. TIME") to jump to it.


1. SET-UP AND A MINIMAL PROGRAM
===============================
Do this:
    #define BLITZ_IMPLEMENTATION
    #include "blitz.h"
in exactly ONE C file (C11, gcc or clang) that includes blitz.h; every
other file just does #include "blitz.h". Link with -pthread. Other system
headers may come before it, except under strict -std=c11 (which hides
POSIX): there include blitz.h first in that file or define _GNU_SOURCE at
its top; blitz.h stops with an #error saying so otherwise.

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
        {
            square sq = {0, 12};                        // copied by the spawn
            blitz_spawn(blitz_cx_runtime(cx), square_poll, &sq, sizeof sq,
                        &m->child);
        }
        BLITZ_AWAIT(m, blitz_join(cx, m->child));  // suspends; no thread blocks
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
With gcc, add -Wjump-misses-init: it catches a local variable used across
an await (see COMMON MISTAKES), and blitz.h compiles clean under it.

Errors: functions return BLITZ_OK (0) or a negative BLITZ_E* code unless
they say otherwise. The codes are blitz's own, the same numbers on every
system: those standing for a system error (BLITZ_EINVAL, BLITZ_ENOMEM,
BLITZ_EAGAIN, BLITZ_ECANCELED, ...) are translated from errno by name, an
errno blitz has no name for becomes BLITZ_EUNKNOWN, and blitz's own
conditions live in the -4000 band (BLITZ_ESHUTDOWN, BLITZ_ERELEASED, ...).
Compare with the BLITZ_E* names, never with -errno; the full list is
BLITZ_ERRNO_MAP. blitz_strerror(code) gives the text and
blitz_err_name(code) the name ("EINVAL") of any code; neither returns NULL
(blitz_strerror says "unknown error" for a code it does not know).
API shape: every waiting op has one cancel, void blitz_<op>_cancel(
blitz_cx *cx, void *op): a blitz_cancel_fn for blitz_op_make and
blitz_timeout_op, and callable with cx NULL from a cancel hook or another
thread; and a constructor blitz_op_<op>(...) that makes it a blitz_op. Every blocking form for plain threads ends in _blocking
(blitz_join_blocking, blitz_mutex_lock_blocking, blitz_op_run_blocking for
any op). Objects the caller allocates pair _init with _deinit; objects
blitz allocates pair _new with _free; reference-counted handles (tasks,
processes, channel endpoints) end with _release. The "API conventions"
comment at the top of the declarations has the details.
blitz_version() is the linked implementation's version
(BLITZ_VERSION_STRING).

What is in this version
-----------------------
- a multi-thread work-stealing scheduler (per-worker LIFO slot and
  256-slot ring, global injection queue, stealing half, adaptive fairness,
  parking that never loses a wake-up) and a current-thread scheduler;
- stackless tasks: a poll function plus a state block, written with the
  BLITZ_BEGIN / BLITZ_AWAIT / BLITZ_YIELD / BLITZ_END macros;
- join handles (await inside tasks, block on them from plain threads),
  detach, cancellation with shields, drop functions, statistics;
- time: a hierarchical timer wheel driving sleeps, timeouts and intervals,
  and a paused (virtual) clock for tests;
- ops as values (blitz_op) with join-all, race, select and task groups;
- synchronization: semaphore, mutex, rwlock, notify, barrier, once cell and
  cancellation tokens, each usable from tasks (async), from plain threads
  (blocking) and without waiting (try_);
- channels: bounded MPMC, oneshot, broadcast and watch;
- I/O: one driver per runtime over io_uring, epoll, kqueue or poll; TCP, UDP and
  Unix sockets as intrusive ops (see 9. I/O (SOCKETS));
- a blocking pool (blitz_spawn_blocking), and on it files, DNS lookups and
  child processes; signal listeners;
- pipes and descriptor ops, byte streams (buffered reader and writer,
  copy with splice / sendfile) and a graceful-shutdown coordinator (see
  10. STREAMS, PIPES AND COPY and 11.6 GRACEFUL SHUTDOWN).

blitz DOES NOT yet have: an IOCP (Windows) backend, TLS, or native
io_uring file operations (files use the blocking pool).


2. RUNTIMES
===========
blitz_run(poll, &state, sizeof state) creates a default multi-thread
runtime, runs one task to its end on it, copies the task's final state
back into state and frees the runtime. For more control, create one:

    blitz_config cfg = {0};             // zero means default, every field
    cfg.flavor = BLITZ_MULTI_THREAD;    // or BLITZ_CURRENT_THREAD
    cfg.workers = 4;                    // 0 = number of CPUs
    blitz_runtime *rt;
    int rc = blitz_runtime_new(&cfg, &rt);
    rc = blitz_runtime_run(rt, poll, &state, sizeof state);
    blitz_runtime_free(rt);

blitz_runtime_run spawns one task, waits for it on the calling thread and
copies its final state back.
  BLITZ_MULTI_THREAD    a work-stealing pool of worker threads, started
                        lazily on the first spawn or the first socket (its
                        I/O needs them even when only other runtimes'
                        tasks use it)
  BLITZ_CURRENT_THREAD  one queue and no threads of its own: tasks run
                        while some thread waits on the runtime
                        (blitz_join_blocking, blitz_runtime_run)
The other blitz_config fields are listed under CONFIGURATION.
blitz_runtime_current() is the runtime whose task runs on this thread (or
NULL); blitz_runtime_flavor(rt) and blitz_runtime_workers(rt) describe one.

Shutdown and free
-----------------
blitz_runtime_shutdown: spawns fail with BLITZ_ESHUTDOWN, workers finish
the poll they are in and exit, blocking jobs that have not started are
cancelled and running ones are waited for, and every unfinished task is
completed as cancelled (threads in blitz_join_blocking return
BLITZ_ECANCELED).
blitz_runtime_free shuts down if needed, runs the drop function of every
task block still alive and frees all memory, at once even when the program
still holds join handles; handles and wakers of that runtime are invalid
afterwards. Neither may be called from inside a task
of the same runtime (BLITZ_EDEADLK). Several runtimes may live in one
process; a task of one may await a task of another. blitz_runtime_shutdown
is idempotent.

Thread safety
-------------
Any thread: spawn, join-wait, cancel, release (each handle by one owner),
wakers (wake, clone, drop), stats, shutdown and free (not from inside the
runtime's own tasks). Inside a poll function only: the blitz_cx_*
functions and blitz_join; the cx pointer is valid for that call only.


3. TASKS AND POLL FUNCTIONS
===========================
A task is a poll function plus a block of state. blitz_spawn copies the
state into the task's own block (header + state, one allocation reused
from a per-worker cache, no malloc in steady state) and the block stays at
the same address until the task is freed. The runtime calls the poll
function whenever the task may make progress; it returns BLITZ_READY when
the task is finished, or BLITZ_PENDING after arranging to be woken:
either it stored a clone of its waker where the event source will wake it,
or it awaited a blitz operation (blitz_join) that did so.

    blitz_task *h;
    rc = blitz_spawn(rt, poll, &state, sizeof state, &h);  // NULL: detached
    blitz_spawn_opts o = {.poll = poll, .state = &state,
                          .size = sizeof state, .drop = drop};
    rc = blitz_spawn_ex(rt, &o, &h);        // with a drop (and cancel) hook
    rc = blitz_spawn_fn(rt, fn, arg, &h);   // runs fn(arg) once as a task

The state is 1 byte to BLITZ_MAX_STATE_SIZE; a NULL state means a
zero-filled one. Errors: BLITZ_EINVAL (NULL runtime or poll, size 0 or too
large), BLITZ_ENOMEM, BLITZ_ESHUTDOWN. A large state need not be built on
the caller's stack and copied: with blitz_spawn_opts.init (and .state
NULL) the runtime allocates it zero-filled and calls init(state,
init_arg) in place, on the spawning thread, before the task can run.

Spawning from inside a task (a worker thread) puts the new task in that
worker's LIFO slot: it runs next, on the same core, which makes
spawn-then-join nearly a function call. Spawning from any other thread
goes through the global queue and wakes a parked worker.

Coroutine macros turn a poll function into straight-line code. The state
struct starts with BLITZ_CORO (the resume point); BLITZ_BEGIN(s) opens the
body, BLITZ_AWAIT(s, op) re-evaluates op on each resumption until it is
BLITZ_READY, BLITZ_YIELD(s, cx) lets every other runnable task run first,
BLITZ_END(s) closes the body (the poll function returns BLITZ_READY there
and on any later call). Rules:
  - local variables do not survive an await or a yield: keep everything
    that must in the state struct (gcc -Wjump-misses-init catches a local
    initialised before one);
  - at most one BLITZ_AWAIT / BLITZ_YIELD per source line (the line number
    is the resume point), and no switch statement of your own around one;
  - the state must start zero-filled: BLITZ_CORO's resume point starts
    at 0 (a debug build stops at BLITZ_END otherwise; see COMMON
    MISTAKES);
  - BLITZ_AWAIT, BLITZ_YIELD, BLITZ_RETURN and BLITZ_END go between
    BLITZ_BEGIN and BLITZ_END (a compile error names BLITZ_BEGIN
    otherwise);
  - BLITZ_RETURN(s) finishes early;
  - a plain poll function without the macros is fine too.

    typedef struct { BLITZ_CORO; int i; blitz_task *child; } my_state;
    static blitz_poll my_poll(blitz_cx *cx, void *p) {
        my_state *s = p;
        BLITZ_BEGIN(s);
        for (s->i = 0; s->i < 10; s->i++)
            BLITZ_YIELD(s, cx);                 // every other task runs
        BLITZ_AWAIT(s, blitz_join(cx, s->child));  // until BLITZ_READY
        BLITZ_END(s);                           // BLITZ_READY, now and later
    }

Inside a poll function: blitz_cx_runtime(cx), blitz_cx_worker(cx) (the
index of the worker running the task, 0 on a current-thread runtime, -1 on
a thread that runs it while waiting in blitz_join_blocking), blitz_cx_yield(cx)
(what BLITZ_YIELD uses; return BLITZ_PENDING right after: the task goes
behind every other runnable task, so two tasks that yield in a loop take
turns) and the calls of the sections below. cx is valid for that one call
only.

Wakers
------
A waker is a 16-byte value that makes a waiting task runnable again; it is
how anything outside blitz (another thread, a callback) wakes a task. An
event that another thread fires, awaited with
BLITZ_AWAIT(s, event_wait(cx, s->ev)):

    typedef struct {
        pthread_mutex_t lock;
        int fired, has_waker;
        blitz_waker waker;
    } event;

    static blitz_poll event_wait(blitz_cx *cx, event *ev) {
        pthread_mutex_lock(&ev->lock);
        if (ev->fired) {
            pthread_mutex_unlock(&ev->lock);
            return BLITZ_READY;
        }
        blitz_waker mine = blitz_cx_waker(cx);    // borrowed for this poll
        if (!ev->has_waker || !blitz_waker_will_wake(&ev->waker, &mine)) {
            if (ev->has_waker)
                blitz_waker_drop(ev->waker);
            ev->waker = blitz_waker_clone(&mine); // owned: kept after it
            ev->has_waker = 1;
        }
        pthread_mutex_unlock(&ev->lock);
        return BLITZ_PENDING;
    }

    static void event_fire(event *ev) {           // any thread
        pthread_mutex_lock(&ev->lock);
        ev->fired = 1;
        int had = ev->has_waker;
        blitz_waker w = ev->waker;
        ev->has_waker = 0;
        pthread_mutex_unlock(&ev->lock);
        if (had)
            blitz_waker_wake(w);                  // consumes the clone
    }

  blitz_cx_waker(cx)          the running task's waker, borrowed for this
                              poll; blitz_waker_clone(&w) makes an owned
                              copy to keep
  blitz_waker_wake(w)         wake and drop (consumes the waker)
  blitz_waker_wake_by_ref(&w) wake and keep it
  blitz_waker_drop(w)         give it up without waking
  blitz_waker_will_wake(&a, &b)  nonzero when both wake the same task
                              (keep the stored one instead of cloning)
  blitz_waker_noop()          a waker that does nothing
Every clone must be woken or dropped once (before blitz_runtime_free). A
wake while the task is being polled is not lost: the task is polled again.
Waking a finished (or cancelled) task does nothing. A waker keeps its
task's memory alive, so a clone may outlive the task's handle.


4. JOINING, DETACHING, CANCELLING
=================================
blitz_spawn gives a handle unless you pass NULL (detached at once).
  blitz_join(cx, h)       inside a task: BLITZ_READY once h has finished
  blitz_join_blocking(h)      from any thread: blocks until h has finished. A
                          worker runs other tasks meanwhile; another thread
                          runs queued tasks of the runtime while it waits,
                          and drives a current-thread runtime.
  blitz_task_status(h)    BLITZ_OK, BLITZ_ECANCELED, or BLITZ_EAGAIN
  blitz_task_state(h)     the finished task's state (NULL before)
  blitz_task_cancel(h)    see Cancellation below
  blitz_task_release(&h)  gives the handle up (sets h to NULL); an
                          unfinished task keeps running, detached.
                          Releasing twice is BLITZ_ERELEASED.
Release every handle while the runtime lives; a finished task's memory is
reused only after that (blitz_runtime_free frees what handles still hold).

Handles and ownership
---------------------
Each handle is given up exactly once, by its one holder, and not used
after that (copies of it included):
  blitz_task *    the spawner, or whoever blitz_group_next handed it to:
                  blitz_task_release.
  blitz_group *   its creator: blitz_group_free (which releases the handles
                  the group still holds).
  blitz_chan *    each sender and each receiver reference (the creator
                  holds one of each; _clone adds one): one
                  blitz_chan_sender_release or _receiver_release per
                  reference; blitz_chan_close needs a reference and
                  releases none.
  blitz_broadcast *, blitz_watch *
                  each sender reference (one from _new, _sender_clone):
                  _sender_release; each receiver: _unsubscribe. Subscribe
                  while holding a sender reference; _close releases none.
  blitz_oneshot   the caller's cell: freed by the caller once
                  blitz_oneshot_done says neither side touches it.
  blitz_socket *  its owner: blitz_sock_close, once (it may free it).
  blitz_process   blitz_process_release.
  blitz_runtime * blitz_runtime_free, after every other handle of it.
A debug build (NDEBUG not defined, or BLITZ_DEBUG=1) stops at a join
handle, channel, broadcast, watch, group or socket used after its release
with one line naming the function and the handle, e.g.
    blitz: blitz_task_status: join handle used after blitz_task_release
then abort(). Join handles carry a generation, so a stale one is caught
even when its memory already holds another task; the other handles are
caught while their memory waits in a quarantine of the last 64 frees. A
release build checks nothing and costs nothing.

blitz_join registers the task's waker and returns BLITZ_PENDING until h has
finished (completed or cancelled). blitz_join_blocking returns BLITZ_OK or
BLITZ_ECANCELED; blitz_task_status never blocks (BLITZ_EAGAIN: not
finished yet); blitz_task_state stays valid until the handle is released.

Cancellation
------------
blitz_task_cancel marks a task cancelled. A task waiting for a wake-up is
completed as cancelled at once (its joiner wakes with BLITZ_ECANCELED); a
queued or running task is completed as cancelled when it would next be
polled: its poll function is simply not called again. A task can defer
cancellation over a critical section with blitz_cx_shield(cx) ...
blitz_cx_unshield(cx) (nestable); blitz_cx_cancelled(cx) tells a shielded
task that a cancel is pending. What the state owns is released by the drop
function given to blitz_spawn_ex, which runs exactly once, when the task's
block is freed (after it finished and its handle was released), whether
it completed or was cancelled.

The op a cancelled task was waiting in is withdrawn with it, whoever
cancels (blitz_task_cancel, a spawn timeout, a race, a group, shutdown):
every op records itself in its task when it returns BLITZ_PENDING
(blitz_cx_pending), and so do the combinators and blitz_timeout in place
of the ops they poll. Withdrawn means what the op's cancel does: a lock or
permit it was handed goes to the next waiter, a channel value stays in the
channel, a timer is disarmed, and nothing keeps the task's memory. No
cancel hook is needed for that. A cancel hook (blitz_spawn_opts.cancel, a
blitz_cancel_hook_fn) runs once after the withdrawal, before the joiners
wake, for what else the state holds: a lock it owns, a second op a
hand-written poll function left registered.

A whole task gets a time limit with blitz_spawn_opts.timeout_ns: when it
has not finished in time it is cancelled as above, and blitz_task_status
(and the join) says BLITZ_ETIMEDOUT instead of BLITZ_ECANCELED:

    blitz_spawn_opts o = {.poll = conn_poll, .state = &c, .size = sizeof c,
                          .timeout_ns = 5 * BLITZ_SEC};
    blitz_spawn_ex(rt, &o, &s->conn);

Cancelling a finished task does nothing. Shields nest up to 255 deep
(BLITZ_ERANGE beyond, or when lowering a shield that is not raised); a
cancel requested under a shield is remembered and carried out once the
last shield is lowered. The drop function also waits for any waker clones
to be dropped, and runs at blitz_runtime_free for tasks still alive.


5. TIME
=======
Times are nanoseconds on the runtime's monotonic clock (blitz_time_now,
blitz_cx_now); durations are signed nanoseconds (BLITZ_MSEC, BLITZ_SEC):
zero or negative means "now", and a deadline beyond the end of time
saturates to BLITZ_TIME_NEVER instead of wrapping. A blitz_timer lives in
the task's state (zero-filled is ready; no allocation):

    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 20 * BLITZ_MSEC));
    BLITZ_AWAIT(s, blitz_sleep_until(cx, &s->timer, deadline));
    BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, BLITZ_SEC,
                                 blitz_join(cx, s->child)));
    if (s->timer.expired)  // not in a second: the join was withdrawn
        blitz_task_cancel(s->child);

blitz_timeout withdraws the op it limits when the deadline wins, through
the op's own cancel (the op recorded itself); blitz_timeout_op names the
cancel for an op written by hand that does not record itself.

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

blitz_deadline_after(now, ns) adds a duration to a time, saturating.


6. OPS, COMBINATORS AND TASK GROUPS
===================================
An op is anything a task can await: an object in the task's state, a poll
function and a cancel function (which withdraws a pending op and gives
back whatever it was already handed). blitz_op bundles the three so any op can
be driven generically:

    blitz_op_join(handle)               blitz_op_sleep_until(&timer, when)
    blitz_op_interval_tick(&iv)         blitz_op_make(poll, cancel, obj)
    blitz_op_race(&combo, ops, n)       blitz_op_select, blitz_op_join_all

Every waiting op has a blitz_op_<name> constructor next to it in the
headers. It records the arguments in the op's own struct (nothing is
allocated), and the op's cancel is the op's one public cancel:

    primitives   blitz_op_semaphore_acquire, _mutex_lock, _rwlock_read,
                 _rwlock_write, _notify_wait, _barrier_wait,
                 _once_cell_get_or_claim, _cancel_token_wait
    channels     blitz_op_chan_send, _chan_recv, _oneshot_recv,
                 _broadcast_recv, _watch_changed
    sockets      blitz_op_sock_accept, _tcp_connect, _tcp_connect_timeout,
                 _unix_connect, _sock_recv, _sock_recv_exact, _sock_send,
                 _sock_send_all, _sock_recvv, _sock_sendv, _sock_recv_from,
                 _sock_send_to
                 (blitz_io; cancel blitz_io_cancel)
    descriptors  blitz_op_fd_read, _fd_write, _fd_write_all, _fd_readable,
                 _fd_writable (blitz_io)
    streams      blitz_op_stream_read, _stream_write, _reader_read,
                 _reader_read_line, _reader_read_exact, _reader_read_until,
                 _writer_write, _writer_write_all, _writer_flush,
                 _writer_close, blitz_op_copy
    files        blitz_op_fs_open, _fs_close, _fs_read, _fs_write, _fs_pread,
                 _fs_pwrite, _fs_readv, _fs_writev, _fs_fsync, _fs_fdatasync,
                 _fs_truncate, _fs_stat, _fs_lstat, _fs_fstat, _fs_rename,
                 _fs_unlink, _fs_rmdir, _fs_mkdir, _fs_mkdir_all, _fs_read_dir,
                 _fs_read_file, _fs_write_file (blitz_fs_op)
    pool         blitz_op_dns_resolve, blitz_op_tcp_connect_host,
                 blitz_op_spawn_blocking_await, blitz_op_process_wait,
                 blitz_op_process_output
    others       blitz_op_signal_recv, blitz_op_group_next,
                 blitz_op_shutdown_run
    combinators  blitz_op_race, _select, _join_all (nest one in another,
                 or put one under blitz_timeout)

Buffers and addresses passed to a constructor stay where they are until
the op is READY or cancelled, as with the call itself; read the result in
the op's struct. An accept raced against a shutdown token
(examples/graceful_server.c):

    s->ops[0] = blitz_op_sock_accept(&s->acc, s->listener);
    s->ops[1] = blitz_op_cancel_token_wait(&s->tw, token);
    BLITZ_AWAIT(s, blitz_race(cx, &s->combo, s->ops, 2));
    if (s->combo.winner == 1) ...   // shutting down: the accept was withdrawn

A plain thread runs any op to completion with blitz_op_run_blocking(rt, op): the
blocking form of everything (BLITZ_EDEADLK inside a task). In a task, the
combinators take an array of ops that stays in the state and a
blitz_combo (zero-filled or blitz_combo_reset):

    s->ops[0] = blitz_op_join(s->child);
    s->ops[1] = blitz_op_sleep_until(&s->timer, deadline);
    BLITZ_AWAIT(s, blitz_race(cx, &s->combo, s->ops, 2));
    // s->combo.winner: 0 = the child finished, 1 = timed out (the join
    // was withdrawn before blitz_race returned)

blitz_join_all waits for every op; blitz_race for the first, cancelling
the rest; blitz_select for the first, keeping the rest registered (await it
again for the next; winner -1 when all finished; blitz_combo_cancel
withdraws what is left). Polling starts at a rotating position, so an op
that is always ready cannot starve the others. Up to BLITZ_COMBO_MAX (64)
ops; bad arguments give combo.error = BLITZ_EINVAL at once. After
blitz_race read only the winner's result: a loser may never have been
polled, and a blitz_io loser's result is then still 0, which is not end of
stream. That is safe because no loser keeps anything: a cancel gives back
what its op had been handed or leaves it where it was (a message stays in
its channel or oneshot cell, permits and locks pass to the next waiter, a
once-cell claim is abandoned, a notify_one passes on, bytes a socket
receive took go to the next receive). Only an effect that cannot be undone
may have happened in a loser: a socket send or a file operation already
performed (blitz_io_settle, and the pool ops' cancel, say what became of
it). In a loop, blitz_combo_reset the combo between rounds.

A task group owns the tasks spawned into it and hands them out as they
finish (Tokio's JoinSet): blitz_group_new, blitz_group_spawn(_ex),
blitz_group_next (await; NULL when empty), blitz_group_next_blocking (plain
threads), blitz_group_cancel_all, blitz_group_close (cancels the running
members and refuses new ones) and blitz_group_free (also releases every
handle; members still running finish in the background). Free groups
before their runtime.

    blitz_group_new(rt, &g);
    blitz_group_spawn(g, child_poll, &st, sizeof st);      // n times
    BLITZ_AWAIT(s, blitz_group_next(cx, s->g, &s->done));  // finishing order


7. SYNCHRONIZATION
==================
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
blitz_timeout, the combinators and blitz_op_run_blocking:

    BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, 10 * BLITZ_MSEC,
                                 blitz_mutex_lock(cx, &s->lock_op, &sh->m)));
    if (s->timer.expired) ...no lock; nothing is left queued...

Cancel safety: cancelling a waiting op removes it from the queue; what it
had already been handed (permits, a notify_one notification, a once-cell
claim) passes to the next waiter, never lost. An op that already returned
READY keeps what it got. A cancelled barrier wait withdraws its arrival.
A task cancelled while one of its ops waits has the op withdrawn for it
(see Cancellation); what it already holds (a lock it acquired) it
releases in its cancel hook (blitz_spawn_opts.cancel). Destroying a
primitive while ops wait on it is a bug.

The _blocking forms also serve blitz_spawn_blocking jobs. The operations
of each primitive (each name begins with its type, e.g.
blitz_semaphore_try_acquire):
  semaphore     try_acquire(n), acquire (async; op.result BLITZ_OK or
                BLITZ_ECLOSED), release(n), close, available
  rwlock        read / write, try_read / try_write, read_blocking /
                write_blocking, read_unlock / write_unlock
  notify        notify_one, notify_waiters, wait, try_wait (permits do not
                accumulate)
  barrier       wait (op.is_leader for exactly one wait per generation)
  once cell     get, set, get_or_claim (op.claimed = 1 for the one that
                initializes; it calls blitz_once_cell_complete, or
                blitz_once_cell_abandon on failure)
  cancel token  cancel, is_cancelled, wait; init_child makes a token that
                is cancelled with its parent


8. CHANNELS
===========
Four kinds, each with try_ forms (never wait; no runtime needed), async
forms (an op struct in the task state with the waiter inside it: waiting
allocates nothing) and blocking forms for plain threads (BLITZ_EDEADLK
inside a task). Values are fixed-size byte blobs copied in and out; send
a pointer to pass ownership of heap data.

  blitz_chan       bounded MPMC FIFO (blitz_chan_new(&ch, elem_size, cap));
                   lock-free ring with a sequence stamp per slot, waiters
                   behind a separate lock touched only when someone waits
  blitz_oneshot    one 64-bit value, in a cell the caller provides
  blitz_broadcast  every receiver gets every value; a receiver that falls
                   more than the capacity behind gets BLITZ_ELAGGED with
                   rx.lagged = how many it missed, then the oldest kept
  blitz_watch      one value with a version; changed() waits for a newer
                   one; reads are a seqlock (never torn, never blocking)

    typedef struct { BLITZ_CORO; blitz_chan *ch; blitz_chan_op op;
                     uint64_t v; } consumer;
    ...
    for (;;) {
        BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->op, s->ch, &s->v));
        if (s->op.result == BLITZ_ECLOSED)
            break;                    // closed and drained
        use(s->v);
    }
    blitz_chan_receiver_release(s->ch);

A producer, with ch from blitz_chan_new(&ch, sizeof(uint64_t), 64):

    typedef struct { BLITZ_CORO; blitz_chan *ch; blitz_chan_op op;
                     uint64_t v; } producer;
    ...
    for (s->v = 0; s->v < 1000; s->v++) {
        BLITZ_AWAIT(s, blitz_chan_send(cx, &s->op, s->ch, &s->v));
        if (s->op.result == BLITZ_ECLOSED)
            break;                    // s->v was not sent: still ours
    }
    blitz_chan_sender_release(s->ch); // the last sender closes it

A channel starts with one sender and one receiver reference; every holder
clones one (blitz_chan_sender_clone / _receiver_clone) and releases it
when done. When the last sender goes, the channel closes and receivers
drain what is buffered, then see BLITZ_ECLOSED; when the last receiver
goes, sends fail with BLITZ_ECLOSED. blitz_chan_close closes at once.
Nothing is lost on close: every value is either received, or returned to
its sender (a pending send finishes with BLITZ_ECLOSED, the value still in
the sender's buffer). A waiting op is woken when a value or a slot turns
up and does its receive or send itself when polled, so a pending op holds
nothing: the value stays in the channel (or the sender's buffer) until an
op returns READY with it.
Capacity 0 is BLITZ_EINVAL (there is no rendezvous channel).

Every async op is also a blitz_op (blitz_op_chan_send, blitz_op_chan_recv,
blitz_op_oneshot_recv, blitz_op_broadcast_recv, blitz_op_watch_changed)
for blitz_op_run_blocking and the combinators, with a cancel function. Cancel
safety, per operation:
  chan recv       cancel of a pending op: BLITZ_ECANCELED, nothing taken
                  (even if it had been woken for a message: that message
                  stays at its place in the channel for the next
                  receiver).
  chan send       cancel of a pending op: BLITZ_ECANCELED, not sent, the
                  value still only in the caller's buffer.
  oneshot recv    withdraws the waker; a value that arrived stays in the
                  cell (blitz_oneshot_try_recv takes it).
  broadcast recv  nothing is consumed (each receiver has its position).
  watch changed   nothing is consumed (a newer version stays newer).
A task cancelled while it waits on a channel op has the op withdrawn the
same way before its state is freed.

The oneshot cell is shared memory: keep it valid until both sides are done
(blitz_oneshot_done). A receiver that got its value or BLITZ_ECLOSED knows
the sender is done.

A plain thread receives with blitz_chan_recv_blocking(ch, &v). The channel
is freed with its last reference.
  oneshot    blitz_oneshot_send, BLITZ_AWAIT(s, blitz_oneshot_recv(cx,
             &cell)) then blitz_oneshot_try_recv, blitz_oneshot_close_tx /
             _close_rx
  broadcast  blitz_broadcast_subscribe(bc, &rx), blitz_broadcast_send
             (never waits), blitz_broadcast_recv / _try_recv
  watch      blitz_watch_send, blitz_watch_read, blitz_watch_changed,
             blitz_watch_read_update


9. I/O (SOCKETS)
================
The echo server of examples/echo_server.c, one task per connection:

    typedef struct { BLITZ_CORO; blitz_socket *sock; blitz_io io;
                     char buf[16384]; } echo_conn;
    static blitz_poll echo_conn_poll(blitz_cx *cx, void *p) {
        echo_conn *e = p;
        BLITZ_BEGIN(e);
        for (;;) {
            BLITZ_AWAIT(e, blitz_sock_recv(cx, &e->io, e->sock, e->buf,
                                          sizeof e->buf));
            if (e->io.result <= 0)              // 0 = EOF, < 0 = error
                break;
            BLITZ_AWAIT(e, blitz_sock_send_all(cx, &e->io, e->sock, e->buf,
                                              (size_t)e->io.result));
            if (e->io.result < 0)
                break;
        }
        blitz_sock_close(e->sock);
        BLITZ_END(e);
    }
    // accept loop: BLITZ_AWAIT(a, blitz_sock_accept(cx, &a->io, a->listener))
    // then spawn echo_conn_poll with .sock = a->io.socket

The calls with their arguments:

    blitz_addr a;
    blitz_addr_parse("127.0.0.1:8080", &a); // or blitz_addr_ip("::1", 8080, &a)
    blitz_socket *l;
    blitz_tcp_listen(rt, &a, 1024, BLITZ_SOCK_REUSEPORT, &l);
                                   // backlog 0 = SOMAXCONN; flags or 0
                                   // (listeners set SO_REUSEADDR)
    BLITZ_AWAIT(s, blitz_sock_accept(cx, &s->io, l));   // s->io.socket
    BLITZ_AWAIT(s, blitz_tcp_connect(cx, &s->io, &a)); // s->io.socket
    BLITZ_AWAIT(s, blitz_sock_recv(cx, &s->io, sock, buf, len));
    BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->io, sock, buf, len));
    BLITZ_AWAIT(s, blitz_sock_recv_exact(cx, &s->io, sock, buf, len));
                                     // len, or fewer at end of stream
    BLITZ_AWAIT(s, blitz_tcp_connect_host(cx, &s->conn, "example.com:80", 0));
                                     // port 0: the name carries it
    blitz_sock_shutdown(sock, 1);    // 0 = read, 1 = write (FIN), 2 = both
    blitz_sock_close(sock);
    blitz_socket *u;
    blitz_udp_bind(rt, &a, 0, &u);   // BLITZ_SOCK_* flags
    BLITZ_AWAIT(s, blitz_sock_recv_from(cx, &s->io, u, buf, len, &s->from));
    BLITZ_AWAIT(s, blitz_sock_send_to(cx, &s->io, u, buf, n, &s->from));
    blitz_socket *x, *y;
    blitz_unix_pair(rt, 1, &x, &y);  // 1 = stream, 2 = datagram

Multicast: blitz_udp_join_multicast / blitz_udp_leave_multicast. Any op
without a limit of its own takes one with blitz_timeout(cx, &s->timer,
ns, blitz_sock_recv(...)). Examples: examples/echo_server.c,
examples/echo_client.c (a load generator), examples/udp_echo.c.

Ops and sockets
---------------
Ops are blitz_io structs in the task state, awaited like timers:
    BLITZ_AWAIT(s, blitz_sock_recv(cx, &s->io, s->sock, s->buf, sizeof s->buf));
    if (s->io.result <= 0) ...        // 0 = end of stream, < 0 = error
Results: bytes, 0 for accept/connect (the new socket in io.socket), or a
negative code: BLITZ_ECONNRESET, BLITZ_EPIPE (SIGPIPE never fires),
BLITZ_ECLOSED (the socket was closed while the op waited), BLITZ_EMFILE
(accept: back off and accept again; the listener stays usable), ...
Every op cancels with blitz_io_cancel(cx, op); blitz_timeout(cx,
&s->timer, ns, blitz_sock_recv(...)) and a cancelled task call it for
you. An io_uring op already in the kernel is cancelled asynchronously: it
keeps a reference on its task, so the task's memory (the buffer) stays
until the kernel has let go, even if the task is cancelled or finishes;
blitz_io_settle waits for that before you reuse the buffer.
A cancel loses no data. A receive the kernel filled before the cancel
reached it keeps its result BLITZ_ECANCELED, and its bytes go to the next
receive on the socket (call blitz_io_settle first, or poll the same op
again, so the next one comes after it). A cancelled send that had sent
bytes (an io_uring send the kernel performed first, or part of a
send_all) reports them: after blitz_io_settle, result is the count sent
instead of BLITZ_ECANCELED. Send only the rest again:
    BLITZ_AWAIT(s, blitz_timeout(cx, &s->t, ns, blitz_sock_send(...)));
    if (s->t.expired)
        BLITZ_AWAIT(s, blitz_io_settle(cx, &s->io)); // sent or ECANCELED

Sockets: blitz_tcp_listen / blitz_sock_accept / blitz_tcp_connect
(blitz_tcp_connect_timeout: BLITZ_ETIMEDOUT after a limit; on io_uring the
kernel times it with a linked LINK_TIMEOUT, elsewhere the runtime's timer),
blitz_sock_recv / send / send_all / recvv / sendv (also named blitz_tcp_*,
blitz_unix_*, blitz_udp_*), blitz_sock_shutdown (half-close),
blitz_sock_close (from any thread, also while ops are in progress: they
end with BLITZ_ECLOSED and the descriptor closes when the last system
call on it ends; the handle may be freed by the close, so using it after
is a use after free, as with free(3): a connection whose task loops over
ops is closed by that task. To end it from elsewhere, cancel the task
(closing the socket when it ends, e.g. in its drop function), race its
ops against a cancellation token, or call blitz_sock_shutdown(s, 2) while
the handle is known to be open, e.g. under the lock of a table the task
leaves before it closes: its receive then sees end of stream and its
sends fail), options (nodelay, keepalive, linger, buffer sizes), local and
peer addresses; UDP bind / connect / send_to / recv_from /
multicast; Unix stream listeners, datagram sockets, pairs, abstract names
("@name"). Addresses: blitz_addr_parse("127.0.0.1:80" / "[::1]:80"),
blitz_addr_unix, blitz_addr_format.

Backends
--------
Each runtime has one I/O driver over one backend, chosen at creation:
blitz_config.backend forces one (creation fails when it cannot start);
otherwise the BLITZ_BACKEND environment variable ("io_uring", "epoll",
"kqueue", "poll") is a preference, then io_uring if the kernel allows it
(probed: EXT_ARG, FAST_POLL, the socket opcodes), then epoll, then kqueue,
then poll (each one the system lacks fails with BLITZ_ENOSYS).
The BLITZ_BACKEND value is read in any case; other values are ignored.
blitz_runtime_backend tells which one runs.

  io_uring  completion-based, raw system calls: the kernel does the
            recv/send/accept/connect and writes into your buffer; sends try
            the system call first. Each worker has its own ring (with
            COOP_TASKRUN where the kernel has it, Linux 5.19+): it submits
            its tasks' ops there, batched into one io_uring_enter per tick
            or park, parks in it and reaps it, so the kernel finishes an
            op on the thread that will run its task. Other threads (the
            current-thread driver, plain threads, another runtime's tasks
            using this runtime's sockets) use one shared ring; a
            current-thread runtime's is COOP_TASKRUN too, and the thread
            that drives it arms its own wake-up poll there.
            A TCP receive after a short one (request/response traffic)
            arms a multishot receive (Linux 6.0+): it stays armed for the
            connection and the kernel receives each arrival of data into
            a buffer of the ring's pool (BLITZ_URING_RECV_BUFS buffers set
            up on first use), with no new submission; your receive copies
            from there, in order. A reader that receives a pool buffer's
            worth at once (bulk) goes back to receives straight into its
            own buffer; a reader that lags holds at most 1/8 of the pool
            (then the rest waits in the kernel's socket buffer, as without
            it); when the pool runs dry the kernel ends the multishot
            receive and the next receive is single-shot. Unix sockets
            always use single-shot receives.
            A listener's first accept arms a multishot accept (Linux
            5.19+): the kernel accepts each new connection ahead and the
            next blitz_sock_accept takes it without a system call. At most
            64 wait so (plus those that arrived together with the 64th);
            then the multishot accept is cancelled and further clients
            wait in the listen backlog until the program accepts again, so
            a program that stops accepting does not hold descriptors for
            them. Closing the listener closes the connections it held.
            Out of memory for that queue, a connection waits in a spare
            slot (the multishot accept stops meanwhile); one accepted in
            the same batch is closed and an accept gets BLITZ_ENOMEM for
            it, as on the other backends. Out of memory for a multishot
            receive's queue, the data is dropped: the reader gets what
            came before, then BLITZ_ENOMEM from every receive.
  epoll     edge-triggered, every socket registered once; the task does the
            system call and waits for the next edge of its direction. A
            TCP receive after a short one waits for the next edge without
            trying (the short one drained the socket).
  kqueue    Darwin and the BSDs: as epoll, with EVFILT_READ and
            EVFILT_WRITE registered once per socket with EV_CLEAR; EV_EOF
            on the read side marks the end of the stream. Wake-ups trigger
            the kqueue's EVFILT_USER knote (a self-pipe where the system
            has none). What is tested where: macOS compiles and links
            (make test-macos) but runs nowhere here; the backend's code
            runs on Linux over a test-only emulation on epoll
            (tests/kqueue_emulation.h, make test-kqueue), which cannot
            model: knotes dropped when a descriptor closes (the backend
            deletes its knotes before every close, so it does not rely on
            it), `data` (FIONREAD for reads, nothing for writes, no listen
            backlog), the socket error in EV_EOF's fflags, the BSD
            kernels' EV_CLEAR event counts (epoll's edges stand in),
            EVFILT_PROC (child exits, which Linux serves with pidfds) and
            EVFILT_SIGNAL (unused: signals come through a self-pipe), the
            self-pipe wake-up fallback, and the BSDs' differing constants
            and struct kevent layouts. FreeBSD, NetBSD and OpenBSD are
            written but not compiled here (no headers for them).
  poll      the portable fallback (level-triggered, only sockets with
            waiters are polled).

A parked runtime waits in the backend with the next timer's deadline (with
epoll, kqueue and poll one parked worker, the "sleeper"; with io_uring
every parked worker in its own ring; the current-thread driver always), so I/O reaches
an idle runtime at once; busy workers reap completions without blocking at
the start of each tick. Wakes reach a thread blocked in the backend
through an eventfd (kqueue: its EVFILT_USER knote; poll: a self-pipe).
See 13. PERFORMANCE NOTES for what this means for
the number of workers.


10. STREAMS, PIPES AND COPY
===========================
Descriptor ops work on any descriptor a blitz_socket wraps (blitz_pipe
makes a non-blocking pipe pair, blitz_sock_adopt wraps a tty, a device or
a child's pipe end): blitz_fd_read / blitz_fd_write / blitz_fd_write_all
use read(2)/write(2), which work on pipes where recv/send do not, and
blitz_fd_readable / blitz_fd_writable wait for readiness. They are
blitz_io ops on every backend (on io_uring a POLL_ADD followed by the
system call, so the kernel never holds the buffer). A write into a pipe
without a reader returns BLITZ_EPIPE: SIGPIPE is held back around the
call and never reaches the process.

A blitz_stream is a read side and a write side over a socket
(blitz_stream_socket), a pipe or other pollable descriptor
(blitz_stream_pipe), a regular file (blitz_stream_file: reads and writes
at the file position on the blocking pool) or your own vtable
(blitz_stream_custom). Buffered reader: blitz_reader_read, read_exact
(BLITZ_EEOF when the stream ends first), read_until(delim, max) and
read_line (BLITZ_EMSGSIZE when the record does not fit: its first bytes
are returned, the rest comes next; a last line without "\n" is returned
as it is; 0 at the end of the stream). Buffered writer: write,
write_all, flush, close (flushes, then ends the write side); an error
sticks. blitz_copy_run copies until src ends: splice(2) when a side is a
pipe (through a pipe of its own between two sockets), sendfile(2) from a
file, else read and write through a 64 KiB buffer (also when the kernel
refuses, or with BLITZ_COPY_NO_SPLICE); c.kernel counts the bytes the
kernel moved. Every op has a cancel function and a blitz_op constructor
(blitz_op_reader_read_line, blitz_op_copy, ...), so timeouts, races and
blitz_op_run_blocking work on them. Keep a reader's buffer in the task's state
when the task can be cancelled: a cancelled io_uring socket read may
still land in it until blitz_stream_settle.

    BLITZ_AWAIT(s, blitz_reader_read_line(cx, &s->rd, s->line,
                                          sizeof s->line));
    if (s->rd.result <= 0) ...   // 0 = end of stream; BLITZ_EMSGSIZE: long
    BLITZ_AWAIT(s, blitz_writer_write_all(cx, &s->wr, s->line, s->rd.len));
    blitz_copy_init(&s->copy, &src, &dst, 0);
    BLITZ_AWAIT(s, blitz_copy_run(cx, &s->copy));

blitz_reader_buffered and blitz_reader_peek show what waits in the
buffer unconsumed (flush replies unless a whole next request is already
there, as examples/graceful_server.c does). A cancelled copy
(blitz_copy_cancel) is initialised again only after blitz_copy_settle.
Example: examples/process_pipeline.c (seq | grep, blitz splicing between
the two children).


11. OS SERVICES
===============
11.1 BLOCKING WORK
------------------
Work that blocks a thread (a system call without an async form, a long
computation, a library that sleeps) belongs on the blocking pool, never
in a poll function:

    blitz_spawn_blocking(rt, fn, arg, &h);      // fn(arg) on a pool thread
    blitz_blocking_opts o = {fn, &in, sizeof in, drop_fn};
    blitz_spawn_blocking_ex(rt, &o, &h);        // fn gets the job's own copy
    BLITZ_AWAIT(s, blitz_join(cx, h));          // or blitz_join_blocking(h)
    result = blitz_task_state(h);               // the copy, after fn ran

The handle is an ordinary task handle. Threads start on demand up to
max_blocking_threads and exit after blocking_keep_alive_ns idle; new work
goes to the most recently idle thread, so a pool shrinks when load drops.
blitz_task_cancel of a job that has not started takes it out of the queue
at once (fn never runs); a running job cannot be stopped. With
blocking_queue_capacity set, a spawn that finds every thread busy, none
left to start and that many jobs waiting fails with BLITZ_EFULL, and
blitz_spawn_blocking_await(cx, &op, &opts) waits for room instead (first
come, first served). blitz_runtime_pool_stats reports threads, idle
threads, queued jobs and totals. A job runs as part of its runtime:
blitz_runtime_current() is set, and blitz_join_blocking inside a job returns
BLITZ_ESHUTDOWN when the runtime shuts down. Pool threads block SIGPIPE
(a write to a closed pipe is BLITZ_EPIPE, not the end of the process).

Files, DNS lookups and process waits are pool ops: an op struct in the
task's state (zero-filled is ready), awaited with BLITZ_AWAIT, its result
in op.result. Each operation keeps what its thread works on in a record
of its own (with copies of paths and of data to write; reads are copied
into your buffer when the op is READY), so cancelling (the op's cancel
function, blitz_timeout, or the task's cancellation) returns at once and
the op and your memory are free again: a queued operation is dropped, a
running one finishes on its thread, which then releases its result
(closes a file it opened, frees an answer).

The _blocking forms of the synchronization primitives may be used inside
a job.

11.2 FILES
----------
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, path, BLITZ_FS_READ, 0));
    if (s->op.result < 0) ... BLITZ_ENOENT, BLITZ_EACCES ...
    s->fd = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->fd, s->buf, sizeof s->buf));

open (BLITZ_FS_READ / WRITE / APPEND / CREATE / TRUNCATE / EXCL, always
close-on-exec), close, read / write (at the file position; write writes
everything), pread / pwrite, readv / writev (one call, may be short),
fsync, fdatasync, truncate, stat / lstat / fstat (blitz_fs_metadata),
rename, unlink, rmdir, mkdir, mkdir_all (-p), read_dir (sorted
blitz_fs_dirent array in op.data), read_file (op.data, NUL-terminated),
write_file. Memory blitz hands you (op.data) is freed with blitz_free. A
read returns at most BLITZ_FS_MAX_READ (2 MiB). Cancel: blitz_fs_cancel.
The work runs on the blocking pool; the calls are shaped so that native
kernel operations (io_uring) can serve them later.

11.3 DNS
--------
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "example.com", 443, 0));
    for (i = 0; i < s->dns.result; i++) use(s->dns.addrs[i]);  // sockaddr
    blitz_free(s->dns.addrs);

getaddrinfo on the blocking pool; family 0 (any), 4 or 6. Errors:
BLITZ_ENOHOST (no such name, or no address of that family),
BLITZ_EDNSTEMP (try later), BLITZ_EDNS. Cancel: blitz_dns_cancel; a lookup
already running finishes on its thread, which frees the answer.

blitz_tcp_connect_host(cx, &s->conn, "example.com", 443) resolves and then
tries each address in turn until one connects (conn.attempt_timeout_ns
bounds each try); conn.result is 0 with conn.socket, the DNS error, or the
last attempt's error. Cancel: blitz_tcp_connect_host_cancel.

11.4 SIGNALS
------------
    blitz_signal_init(&s->sig, SIGTERM);  blitz_signal_add(&s->sig, SIGINT);
    BLITZ_AWAIT(s, blitz_signal_recv(cx, &s->sig));   // s->sig.signo, .count
    blitz_signal_deinit(&s->sig);

A listener counts deliveries from its init on, whether or not a task
awaits it; several listeners of one signal each see every delivery. While
a signal has listeners its default action is replaced by a small counting
handler (restored after the last one), which works in whichever thread
the kernel picks, so no signal mask is needed anywhere; one internal
thread per process wakes the listeners. SIGKILL, SIGSTOP and the fault
signals (SEGV, BUS, FPE, ILL) are BLITZ_EINVAL. Listeners belong to no
runtime; one must stay at its address until deinit.

11.5 PROCESSES
--------------
    const char *argv[] = {"sort", NULL};
    blitz_command cmd = {argv, env_or_NULL, cwd_or_NULL, BLITZ_STDIO_PIPE,
                         BLITZ_STDIO_PIPE, BLITZ_STDIO_INHERIT};
    rc = blitz_process_spawn(rt, &cmd, &s->child);  // BLITZ_ENOENT, ...
    ... s->child.stdin_fd / stdout_fd with the file ops ...
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
    s->wait.exited ? s->wait.code : s->wait.signal
    blitz_process_release(&s->child);

posix_spawn where glibc has everything needed (fork + exec elsewhere);
a failed exec (missing program or cwd, not executable) is the spawn's
error, not an exit code. The spawn itself runs on the calling thread
until the child has exec'd. A wait sleeps on a pool thread (on a
pidfd on Linux) and gives up within 50 ms when cancelled or at shutdown;
the child is reaped once and its status remembered for later waits;
blitz_process_kill never signals a reaped pid; a child released before it
ended is reaped by a pool job. blitz_process_output runs a command to its
end with optional input and collects stdout and stderr (read by a pool
thread); cancelling it kills the child.

blitz_process_terminate and blitz_process_kill signal a running child;
blitz_process_wait_cancel and blitz_process_output_cancel withdraw the
ops. A spawned child's pipe ends (stdout_fd, ...) can be wrapped with
blitz_sock_adopt for the descriptor ops and streams (see STREAMS, PIPES
AND COPY); then set the field to -1: the socket closes the descriptor, and
blitz_process_release closes only fields that are not -1.

    static const char *const argv[] = {"sh", "-c", "echo hi; exit 3", NULL};
    BLITZ_AWAIT(s, blitz_process_output(cx, &s->out, &s->cmd, NULL, 0));
    // with s->cmd = {argv}: s->out.out is "hi\n", s->out.exited 1, .code 3

Examples: examples/file_copy.c, examples/process_pipeline.c.

11.6 GRACEFUL SHUTDOWN
----------------------
A server in full: blitz_serve runs the accept loop under the shutdown and
gives each connection a task whose socket the runtime closes however the
task ends (completed, cancelled after the grace period, timed out):

    typedef struct { BLITZ_CORO; blitz_socket *sock; blitz_io io; char buf[4096]; } conn;
    blitz_serve_opts o = {.listener = l, .poll = conn_poll, .size = sizeof(conn),
                          .socket_offset = offsetof(conn, sock)};
    blitz_serve(sd, &o);          // .state: a template; .timeout_ns: a limit
    blitz_shutdown_run_op run = {0};
    blitz_op_run_blocking(rt, blitz_op_shutdown_run(&run, sd, 5 * BLITZ_SEC));

See examples/echo_graceful.c. By hand, for other loops:
blitz_shutdown_new(rt, opts, &sd) listens to SIGINT and SIGTERM (or the
signals in opts). Accept loops race their accept against
blitz_shutdown_token(sd) (blitz_op_cancel_token_wait); connections are
spawned with blitz_shutdown_spawn. A supervising task awaits
blitz_shutdown_run(cx, &run, sd, grace_ns): on the trigger (a signal, or
blitz_shutdown_trigger from any thread) the token is cancelled at once,
the tasks in flight may finish until the grace period ends, the rest are
cancelled; run.finished and run.cancelled count them and run.signo tells
the signal. See examples/graceful_server.c.

blitz_op_sock_accept(&s->acc, listener) makes the accept an op (see
OPS, COMBINATORS AND TASK GROUPS), and blitz_op_shutdown_run the run. A
cancelled connection's task never
runs again (its pending op is withdrawn): spawn connections with
blitz_shutdown_spawn_ex and a drop function that closes the socket, or
their peers see the end only when the runtime is freed.


12. CONFIGURATION
=================
Macros
------
Define before including blitz.h (in the implementation file; the ones
marked * in every file that includes it).

  BLITZ_IMPLEMENTATION        emit the implementation in this file
  BLITZ_STATIC                make every public function static: use
                              blitz from this one file only (several
                              copies in one program do not collide)
  BLITZ_API *                 prefix of public declarations (default
                              extern; static with BLITZ_STATIC)
  BLITZ_MALLOC(size),         the allocator; define both or neither (an
  BLITZ_FREE(ptr)             #error otherwise; default malloc / free)
  BLITZ_ASSERT(cond)          assertion used for API misuse and invariants
                              (default assert; off with NDEBUG)
  BLITZ_DEBUG *               1: BLITZ_END checks the resume point and
                              stops a task whose state was not
                              zero-filled, and handles used after their
                              release stop the program (see "Handles and
                              ownership"); 0: no check, no cost (default
                              1, or 0 when NDEBUG is defined)
  BLITZ_MAX_WORKERS *         upper bound of workers, 1..64 (default 64;
                              the parked-worker bitmap is one 64-bit word)
  BLITZ_MAX_STATE_SIZE *      largest task state in bytes, up to 1 GiB
                              (default 64 MiB)
  BLITZ_LOCAL_QUEUE_CAPACITY  per-worker ring, power of two in 2..16384
                              (default 256)
  BLITZ_BUDGET_PER_TICK       polls per scheduler tick (default 128)
  BLITZ_MAX_LIFO_POLLS_PER_TICK  LIFO-slot runs per tick, 1..1024 (default 3)
  BLITZ_CACHE_LINE            alignment against false sharing, a power of
                              two in 8..4096 (default by architecture: 128
                              on x86-64 and aarch64)
  BLITZ_NO_STATS              compile the statistics counters out (the
                              stats calls then report zeros)
  BLITZ_NO_IO_URING, BLITZ_NO_EPOLL, BLITZ_NO_KQUEUE, BLITZ_NO_POLL
                              leave an I/O backend out (see 9. I/O)
  BLITZ_URING_ENTRIES         io_uring submission queue size, 1..32768
                              (1024; the completion queue is 8 times larger)
  BLITZ_URING_RECV_BUFS       provided buffers per io_uring ring for
                              multishot receives (256, a power of two up
                              to 32768; 0 turns multishot receives off)
  BLITZ_URING_RECV_BUF_SIZE   bytes per provided buffer, 64..1048576 (4096)

Run-time settings
-----------------
Run-time settings live in blitz_config (zero means default):
  flavor                  BLITZ_MULTI_THREAD or BLITZ_CURRENT_THREAD
                          (see RUNTIMES)
  workers                 0 = CPU count; more than BLITZ_MAX_WORKERS is
                          BLITZ_EINVAL
  park_timeout_ns         the longest a parked worker sleeps (0: until
                          work or its next timer arrives, so an idle
                          runtime uses no CPU)
  spin_before_park        spin rounds before parking (64; UINT32_MAX =
                          never spin)
  global_queue_interval   0 = adaptive, or a fixed number of polls between
                          looks at the global queue
  start_paused            virtual time (see TIME)
  backend                 the I/O backend (see I/O (SOCKETS))
  max_blocking_threads    blocking pool threads (512)
  blocking_keep_alive_ns  idle time before a pool thread exits (10 s)
  blocking_queue_capacity 0 = unbounded (see BLOCKING WORK)

Platforms and C++
-----------------
Linux (futex parking), macOS 11 and later (__ulock_wait parking, kqueue),
FreeBSD 13 and later (_umtx_op parking, kqueue; not compiled by the
project's tests), the other BSDs (condition variable parking, kqueue) and
other POSIX systems with pthreads (condition variable parking, poll); gcc
or clang (the atomics use __atomic builtins). The
implementation is C11: define BLITZ_IMPLEMENTATION in a .c file (a C++
compiler stops with an #error there). The declarations compile as C++11
and later, for C++ code using blitz:
  - locals declared between BLITZ_BEGIN and BLITZ_END go in a { } block of
    their own (C++ forbids jumping past an initialisation to a resume
    point);
  - poll functions, drop and cancel hooks and blocking jobs must not let an
    exception escape: blitz's frames are C, and the runtime would be left
    in the middle of an update (catch inside, return an error in the
    state);
  - BLITZ_STATIC is for C files.
Shared libraries built with -fvisibility=hidden export blitz's functions
when BLITZ_API is defined as extern __attribute__((visibility("default")))
in every file that includes blitz.h.


13. PERFORMANCE NOTES
=====================
The scheduler
-------------
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

Spawning from inside a task puts the child in the LIFO slot (see TASKS AND
POLL FUNCTIONS), so spawn-then-join costs about a function call.

I/O workers
-----------
A task that computes for long without yielding delays the completions of the ops
its worker submitted (io_uring runs them at the worker's next system call or
tick), as it delays every task queued behind it. For the same reason, on
io_uring a worker that the operating system has descheduled delays its
connections: the kernel finishes an op on the thread that submitted it, and no
other worker can take its completions (epoll and poll hand readiness to
whichever worker waits). So give an io_uring runtime no more workers than the
CPUs it has to itself. Measured (make bench-ceiling) on 2 vCPUs shared with a
one-thread load generator, 50 connections of request/response: 2 workers p99 4.3
ms at 122k req/s, 1 worker 0.34 ms at 187k.

Statistics
----------
blitz_runtime_stats(rt, &st) fills a blitz_stats: total_spawned,
total_polled, total_stolen, total_parked, tasks_alive (spawned and not yet
freed), global_queue_depth, num_workers, workers_started.
blitz_runtime_worker_stats(rt, i, &ws) gives one worker's tasks_polled,
tasks_stolen, steals, times_parked, lifo_hits, global_batch_fetches,
overflows and current global_queue_interval (BLITZ_EINVAL for an index out
of range). Each counter is read atomically; the set is not one instant.
examples/showcase.c prints them all with an explanation of each.
blitz_runtime_pool_stats covers the blocking pool (see BLOCKING WORK).


14. COMMON MISTAKES
===================
Each mistake with what the compiler or the program shows.

A local variable used across an await or a yield
    long n = 42;  BLITZ_AWAIT(s, ...);  use(n);
  After the await the poll function was called again and n is whatever
  the stack holds: garbage, or a loop that never ends. gcc says "may be
  used uninitialized" at best and clang nothing, but gcc with
  -Wjump-misses-init (and -Werror) stops at the await with
    error: switch jumps over variable initialization
    [-Werror=jump-misses-init]
  It sees locals declared with an initialiser only (long n; n = 42;
  passes). Keep the value in the state struct, or declare the local in a
  { } block that ends before the await.

A state that is not zero-filled
    main_task m;  blitz_run(main_poll, &m, sizeof m);
  Compiles. The resume point is garbage. A debug build (NDEBUG not
  defined, or BLITZ_DEBUG=1) stops at BLITZ_END, naming its file and line
  and the poll function, with
    blitz: main.c:31: main_poll: resume point 1515870810 is no
    BLITZ_AWAIT or BLITZ_YIELD of this poll function: the task state
    must start zero-filled
  (one line) on stderr, then abort(). A release build skips the body: the
  task finishes at once as if it had reached BLITZ_END (its fields are
  left as they were). Neither notices garbage that equals a resume line.
  Write main_task m = {0}, or pass a NULL state to blitz_spawn.

BLITZ_AWAIT, BLITZ_YIELD, BLITZ_RETURN or BLITZ_END outside BLITZ_BEGIN
... BLITZ_END
  error: 'blitz_AWAIT_needs_BLITZ_BEGIN' undeclared (gcc; clang: use of
  undeclared identifier 'blitz_AWAIT_needs_BLITZ_BEGIN'), and
  blitz_YIELD_needs_BLITZ_BEGIN, blitz_RETURN_needs_BLITZ_BEGIN or
  blitz_END_needs_BLITZ_BEGIN for the others: BLITZ_BEGIN declares those
  names, for its body only.

BLITZ_END missing
  error: expected declaration or statement at end of input (BLITZ_BEGIN
  opens a brace that BLITZ_END closes).

Two awaits or yields on one source line (or in one macro)
  error: duplicate case value.

No file defines BLITZ_IMPLEMENTATION
  The link fails, and the first error names the fix:
    undefined reference to
    `blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file'
  (ld.lld: undefined symbol: ...), then the blitz functions called. Every
  file that includes blitz.h refers to that symbol; only the
  implementation defines it.

Two files define BLITZ_IMPLEMENTATION
  The link fails, first with
    multiple definition of
    `blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file'
  (ld.lld: duplicate symbol: ...), then one for every blitz function.
  (BLITZ_STATIC is the way to have one private copy per file.)

A system header included before blitz.h under strict -std=c11
  #error "blitz.h: POSIX 2008 declarations are hidden ..." in the file that
  defines BLITZ_IMPLEMENTATION. Include blitz.h first there, define
  _GNU_SOURCE at its top, or compile with -std=gnu11.

A blocking call (sleep, read on a blocking descriptor, a lock held long)
in a poll function
  No error: the worker thread stops, and with it every task queued behind
  it and, on io_uring, the completions of its ops. Use blitz_sleep, the
  async ops, or blitz_spawn_blocking. The _blocking forms of blitz's own
  operations return BLITZ_EDEADLK inside a task instead of blocking.

A handle never released
  No error: the finished task's memory is not reused (tasks_alive in
  blitz_runtime_stats keeps growing) until blitz_runtime_free. Releasing a
  handle twice is BLITZ_ERELEASED.

A handle used after its release (a copy of a released join handle, a
channel after its last reference, a closed socket)
  Use after free. A debug build stops at the use with
    blitz: blitz_task_status: join handle used after blitz_task_release
  (or "channel used after its last release", "task group used after
  blitz_group_free", "socket used after blitz_sock_close", ...), then
  abort(); see "Handles and ownership".

A poll function that leaves two ops of its own registered at once
  No error: a cancelled task withdraws only the op it recorded last (the
  combinators and blitz_timeout record themselves for all they poll). The
  other keeps the task's memory alive until it fires (a lock wait until it
  is handed the lock, whose permit is then never returned). Await the two
  with blitz_join_all / blitz_select, or withdraw the other in the spawn's
  cancel hook.
*/
#ifndef BLITZ_H
#define BLITZ_H
/* ====[ BEGIN src/api/blitz_api.h ]======================================== */
/* >>api/blitz_api */
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

#include <stddef.h>
#include <stdint.h>

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
/* BLITZ_BEGIN declares the names the other macros use, so one used outside
 * BLITZ_BEGIN ... BLITZ_END fails with "blitz_AWAIT_needs_BLITZ_BEGIN
 * undeclared" rather than with a stray case label. Enumerators are no
 * variables: resume points may jump past them, in C++ too. */
#define BLITZ_BEGIN(s)                          \
    switch ((s)->blitz__resume) {               \
    case 0:;                                    \
        enum {                                  \
            blitz_AWAIT_needs_BLITZ_BEGIN = 0,  \
            blitz_YIELD_needs_BLITZ_BEGIN = 0,  \
            blitz_RETURN_needs_BLITZ_BEGIN = 0, \
            blitz_END_needs_BLITZ_BEGIN = 0     \
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
     * variable ("io_uring", "epoll", "kqueue", "poll", in any case; any
     * other value is ignored) if set, else io_uring when the kernel allows
     * it (its setup and first enter work), else epoll (Linux), else kqueue
     * (Darwin, the BSDs), else poll; an unavailable choice
     * falls back the same way. When none can start (no eventfd, say) the
     * runtime still runs tasks and timers, blitz_runtime_backend says
     * BLITZ_BACKEND_NONE and socket calls fail with BLITZ_ENOSYS. Any other
     * value forces that backend:
     * blitz_runtime_new fails (BLITZ_ENOSYS, ...) when it cannot start.
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
/* ====[ BEGIN src/api/api_op.h ]=========================================== */
/* >>api/api_op */
/* Public API: ops as values, the waiter queue that blocking primitives share,
 * and the combinators over ops (join-all, race, select, task groups). */

/* ---------------------------------------------------------------------------
 * Ops as values
 *
 * An op is anything a task can await: a poll function over an object that
 * lives in the task's state, plus a cancel function that withdraws a
 * pending op (removes its waiter, hands back what it was given). Every
 * awaitable in blitz has both; blitz_op bundles them with the object so the
 * combinators below, and blitz_op_run_blocking, can drive any op:
 *
 *   s->ops[0] = blitz_op_join(s->child);
 *   s->ops[1] = blitz_op_sleep_until(&s->timer, deadline);
 *   BLITZ_AWAIT(s, blitz_race(cx, &s->race, s->ops, 2));
 *   if (s->race.winner == 1) { ...timed out; the join was withdrawn... }
 *
 * The poll function has the shape of a task's: it returns BLITZ_READY once
 * the op finished (its result is then in the op's object) and BLITZ_PENDING
 * after registering the waker of `cx`. The cancel function must be safe on
 * an op that is idle, pending or finished, and with `cx` NULL (an op
 * withdrawn from a task's cancel hook has no poll context).
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
/* The next tick of an interval (blitz_interval_tick; cancel disarms). */
BLITZ_API blitz_op blitz_op_interval_tick(blitz_interval *iv);

/* Runs an op to completion from a plain thread (the blocking form of every
 * awaitable). With `rt` NULL the op is polled on the calling thread, which
 * sleeps between polls: enough for ops that need no runtime (primitives,
 * channels). With a runtime the op is polled by a task of `rt` while the
 * thread waits for it (driving a current-thread runtime meanwhile); needed
 * for timers and I/O.
 * BLITZ_OK when the op finished; BLITZ_EINVAL for an op without a poll
 * function; BLITZ_EDEADLK when called from inside a task or a runtime's
 * thread (it would block the thread the op waits on; a blitz_spawn_blocking
 * job may wait, its pool thread runs nothing else); with a runtime,
 * BLITZ_ESHUTDOWN / BLITZ_ECANCELED when the runtime shut down first (the
 * op was withdrawn with its cancel function). */
BLITZ_API int blitz_op_run_blocking(blitz_runtime *rt, blitz_op op);

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

/* ---------------------------------------------------------------------------
 * Combinators over ops
 *
 * Each takes an array of up to BLITZ_COMBO_MAX ops that stays in the task's
 * state for the whole await, and a blitz_combo (zero-filled or
 * blitz_combo_reset) that remembers which ops finished:
 *
 *   blitz_join_all  READY when every op finished.
 *   blitz_race      READY when the first op finishes (`winner`); every
 *                   other op is cancelled before it returns.
 *   blitz_select    READY when the first op finishes (`winner`); the others
 *                   stay registered and keep what they hold, so awaiting
 *                   blitz_select again (same combo) continues with them;
 *                   winner is -1 once every op has finished. A loop that
 *                   re-arms the same ops each round calls blitz_combo_reset
 *                   between rounds (not memset: the reset keeps the
 *                   rotating start). blitz_combo_cancel withdraws the rest.
 *
 * Ops are polled from a position that moves on each poll, so an op that is
 * always ready cannot starve the others. A finished op is never polled
 * again by the same combo. With n == 0 or n > BLITZ_COMBO_MAX, a NULL
 * argument or an op without a poll function the combinator is READY at once
 * with `error` = BLITZ_EINVAL and winner -1.
 *
 * A task cancelled while it waits in a combinator has every unfinished op
 * withdrawn (the combinator records itself, blitz_cx_pending); so does a
 * task cancelled after blitz_select returned while the others stay
 * registered, until it waits in something else: a task that waits
 * elsewhere between selects withdraws them in its cancel hook
 * (blitz_combo_cancel).
 *
 * Cancel safety is the ops' own: a combinator withdraws an op only through
 * the op's cancel function, and no cancel leaves a result behind in a
 * loser: a channel or oneshot receive takes nothing (the message stays in
 * the channel or cell), permits and locks already handed to the op go to
 * the next waiter, a once-cell claim is abandoned. So after blitz_race
 * read only the winner's result. Only an effect that cannot be undone
 * (bytes a socket send already sent, a file operation already run) may
 * have happened in a loser; its own object says so (blitz_io_settle).
 * ------------------------------------------------------------------------- */

#define BLITZ_COMBO_MAX 64

typedef struct blitz_combo {
    uint64_t blitz__done;  /* bit i: op i finished or was withdrawn */
    uint32_t blitz__start; /* where the next poll begins */
    uint32_t blitz__n;     /* the ops last polled, for a task's cancel */
    const blitz_op *blitz__ops;
    int winner; /* race/select: the op that finished, or -1 */
    int error;  /* BLITZ_EINVAL on bad arguments, else 0 */
} blitz_combo;

BLITZ_API void blitz_combo_reset(blitz_combo *c);
BLITZ_API blitz_poll blitz_join_all(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n);
BLITZ_API blitz_poll blitz_race(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n);
BLITZ_API blitz_poll blitz_select(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n);
/* Withdraws (cancels) every op of `ops` that has not finished. */
BLITZ_API void blitz_combo_cancel(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n);
/* The combinators as ops themselves, to nest them (a race inside a
 * join-all, a select under blitz_timeout); the combo and the array stay
 * in the task's state meanwhile. Cancel: every op not finished. */
BLITZ_API blitz_op blitz_op_join_all(blitz_combo *c, const blitz_op *ops, size_t n);
BLITZ_API blitz_op blitz_op_race(blitz_combo *c, const blitz_op *ops, size_t n);
BLITZ_API blitz_op blitz_op_select(blitz_combo *c, const blitz_op *ops, size_t n);

/* ---------------------------------------------------------------------------
 * Task groups: spawn tasks into a group, await them in the order they
 * finish, cancel them all at once (Tokio's JoinSet).
 *
 *   blitz_group *g;
 *   blitz_group_new(rt, &g);
 *   for (i = 0; i < n; i++) blitz_group_spawn(g, child_poll, &st, sizeof st);
 *   ...in a task:
 *   BLITZ_AWAIT(s, blitz_group_next(cx, s->g, &s->done));
 *   if (s->done) { ...blitz_task_state(s->done)...; blitz_task_release(&s->done); }
 *   else         { ...the group is empty... }
 *
 * blitz_group_next hands over the handle of a finished member (the caller
 * owns it: read its state or status, then release it). One task awaits a
 * group at a time. blitz_group_close cancels every member still running and
 * refuses new spawns (BLITZ_ECLOSED); their completions are still handed out
 * by blitz_group_next. blitz_group_free closes the group and releases every
 * handle it still holds; members still running finish in the background.
 * ------------------------------------------------------------------------- */

typedef struct blitz_group blitz_group;

BLITZ_API int blitz_group_new(blitz_runtime *rt, blitz_group **out);
BLITZ_API int blitz_group_spawn(blitz_group *g, blitz_poll_fn poll, const void *state, size_t size);
BLITZ_API int blitz_group_spawn_ex(blitz_group *g, const blitz_spawn_opts *opts);
/* READY with *out = a finished member's handle, or *out = NULL when the
 * group has no member left. */
BLITZ_API blitz_poll blitz_group_next(blitz_cx *cx, blitz_group *g, blitz_task **out);
/* Withdraws a pending blitz_group_next (a blitz_cancel_fn; op = the group). */
BLITZ_API void blitz_group_next_cancel(blitz_cx *cx, void *group);
/* blitz_group_next as a blitz_op (cancel: blitz_group_next_cancel); `out`
 * stays in the task's state until the op is READY. */
BLITZ_API blitz_op blitz_op_group_next(blitz_group *g, blitz_task **out);
/* Blocking form for plain threads: BLITZ_OK with *out as above. */
BLITZ_API int blitz_group_next_blocking(blitz_group *g, blitz_task **out);
/* Members spawned and not yet handed out by blitz_group_next. */
BLITZ_API size_t blitz_group_len(blitz_group *g);
BLITZ_API int blitz_group_cancel_all(blitz_group *g);
BLITZ_API int blitz_group_close(blitz_group *g);
BLITZ_API int blitz_group_free(blitz_group *g);
/* ====[ END src/api/api_op.h ]============================================= */
/* ----[ RESUME src/api/blitz_api.h ] */
/* ====[ BEGIN src/api/api_sync.h ]========================================= */
/* >>api/api_sync */
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
 *              blitz_timeout_op, the combinators and blitz_op_run_blocking can drive
 *              and abandon it;
 *  - blocking: for plain threads and blocking-pool jobs (built on
 *              blitz_op_run_blocking; BLITZ_EDEADLK when called from inside a task
 *              or a runtime's thread).
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
 * A task that is cancelled (blitz_task_cancel, a timeout, shutdown) while
 * one of its ops waits has the op withdrawn for it (blitz_cx_pending):
 * nothing stays queued. What the task already holds it releases in a
 * cancel hook (blitz_spawn_opts.cancel):
 *
 *   static void my_cancel(void *p) {
 *       my_state *s = p;
 *       if (s->holds_lock) blitz_mutex_unlock(&s->sh->mutex);
 *   }
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
BLITZ_API void blitz_semaphore_deinit(blitz_semaphore *sem);
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
BLITZ_API void blitz_mutex_deinit(blitz_mutex *m);
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
BLITZ_API void blitz_rwlock_deinit(blitz_rwlock *l);
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
BLITZ_API void blitz_notify_deinit(blitz_notify *n);
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
BLITZ_API void blitz_barrier_deinit(blitz_barrier *b);
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
BLITZ_API void blitz_once_cell_deinit(blitz_once_cell *c);
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
BLITZ_API void blitz_cancel_token_deinit(blitz_cancel_token *t);
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
/* ====[ END src/api/api_sync.h ]=========================================== */
/* ----[ RESUME src/api/blitz_api.h ] */
/* ====[ BEGIN src/api/api_chan.h ]========================================= */
/* >>api/api_chan */
/* Public API: Channels: bounded MPMC, oneshot, broadcast, watch; select. */

/* ---------------------------------------------------------------------------
 * Channels
 *
 * Values are fixed-size byte blobs: the element size is given when a
 * channel is created, a send copies `elem_size` bytes in, a receive copies
 * them out. To pass ownership of heap data, send a pointer.
 *
 * Every operation has three forms:
 *   try_    never waits (BLITZ_EFULL / BLITZ_EEMPTY when it would);
 *   async   an op struct in the task state (it embeds the waiter, so
 *           waiting allocates nothing), used with BLITZ_AWAIT, or wrapped
 *           as a blitz_op (blitz_op_chan_send, ...) for blitz_op_run_blocking and
 *           the combinators (race, select, timeout);
 *   blocking for plain threads and blocking-pool jobs (returns
 *   BLITZ_EDEADLK inside a task).
 *
 * Cancel safety. An async op is withdrawn with its cancel function (the
 * combinators and blitz_timeout call it, and so does the runtime for the
 * op a cancelled task waits in).
 * A pending op has done nothing yet: a waiting op is only woken when a
 * value or a slot turns up, and does its receive or send itself on its
 * next poll. So cancelling a pending op always leaves it BLITZ_ECANCELED:
 *   recv    nothing was taken; the message stays in the channel, at its
 *           place, for the next receiver. A receive that loses a race or
 *           select therefore never swallows a message: read only the
 *           winner's result.
 *   send    nothing was sent; the value is still only in the caller's
 *           buffer.
 * ------------------------------------------------------------------------- */

/* ---- bounded MPMC channel ------------------------------------------------- */

/* A bounded multi-producer multi-consumer FIFO. Opaque, on the heap. */
typedef struct blitz_chan blitz_chan;

/* Creates a channel of `capacity` values of `elem_size` bytes, with one
 * sender and one receiver reference (the creator holds both).
 * BLITZ_EINVAL for NULL out, elem_size 0, capacity 0 (there is no
 * rendezvous channel: use capacity 1) or a size that overflows;
 * BLITZ_ENOMEM. */
BLITZ_API int blitz_chan_new(blitz_chan **out, size_t elem_size, size_t capacity);

/* Reference counts of the two sides. A clone adds a reference for a new
 * holder (call it while holding one of that side); a release gives one up.
 * When the last sender is released the channel closes (receivers drain
 * what is buffered, then see BLITZ_ECLOSED); when the last receiver is
 * released it closes too (senders see BLITZ_ECLOSED; values still buffered
 * stay in it for anyone still holding a reference to take out with
 * blitz_chan_try_recv). The channel is freed with the last reference of
 * either side. Clone: BLITZ_ECLOSED when that side has no reference left;
 * release: BLITZ_ERELEASED when it has none. A holder must not release
 * while one of its own ops is pending. */
BLITZ_API int blitz_chan_sender_clone(blitz_chan *ch);
BLITZ_API int blitz_chan_sender_release(blitz_chan *ch);
BLITZ_API int blitz_chan_receiver_clone(blitz_chan *ch);
BLITZ_API int blitz_chan_receiver_release(blitz_chan *ch);

/* Closes the channel: sends fail with BLITZ_ECLOSED from now on (a waiting
 * send returns BLITZ_ECLOSED with its value still in the caller's buffer);
 * receivers first drain what was sent before, then see BLITZ_ECLOSED.
 * The caller must hold a sender or receiver reference, and still holds it
 * afterwards (a close releases nothing). Idempotent. BLITZ_EINVAL for
 * NULL; a debug build stops at a close after the channel's last release. */
BLITZ_API int blitz_chan_close(blitz_chan *ch);
BLITZ_API int blitz_chan_is_closed(const blitz_chan *ch);
/* Values buffered right now (a snapshot), and the capacity. */
BLITZ_API size_t blitz_chan_len(const blitz_chan *ch);
BLITZ_API size_t blitz_chan_capacity(const blitz_chan *ch);
BLITZ_API size_t blitz_chan_elem_size(const blitz_chan *ch);

/* BLITZ_OK, BLITZ_EFULL, BLITZ_ECLOSED (the value was not taken),
 * BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_chan_try_send(blitz_chan *ch, const void *value);
/* BLITZ_OK (a value was copied to `out`), BLITZ_EEMPTY, BLITZ_ECLOSED
 * (closed and drained), BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_chan_try_recv(blitz_chan *ch, void *out);

/* An async send or receive. Zero-filled is idle; the fields other than
 * `result` are private. One op does one send or receive at a time; after
 * it returned BLITZ_READY it is idle again and can be reused. */
typedef struct blitz_chan_op {
    blitz__waiter blitz__w;
    blitz_chan *blitz__ch;
    void *blitz__buf;
    /* BLITZ_EAGAIN from when the op is armed (blitz_op_chan_send/recv or
     * the await form) until it finishes; then BLITZ_OK, BLITZ_ECLOSED,
     * BLITZ_EINVAL (NULL channel or buffer) or BLITZ_ECANCELED (withdrawn
     * by its cancel function). */
    int result;
} blitz_chan_op;

/* Await: BLITZ_AWAIT(s, blitz_chan_send(cx, &s->op, s->ch, &s->value)).
 * READY once the value is in the channel (result BLITZ_OK) or the channel
 * closed first (BLITZ_ECLOSED: the value was not taken). `value` must stay
 * valid and unchanged until then. FIFO among the values of one sender. */
BLITZ_API blitz_poll blitz_chan_send(blitz_cx *cx, blitz_chan_op *op, blitz_chan *ch,
                                     const void *value);
/* Await: BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->op, s->ch, &s->value)).
 * READY with a value in `out` (result BLITZ_OK) or with BLITZ_ECLOSED once
 * the channel is closed and drained. `out` must stay valid until then. */
BLITZ_API blitz_poll blitz_chan_recv(blitz_cx *cx, blitz_chan_op *op, blitz_chan *ch, void *out);

/* The same ops as blitz_op values (for blitz_op_run_blocking, race, select). */
BLITZ_API blitz_op blitz_op_chan_send(blitz_chan_op *op, blitz_chan *ch, const void *value);
BLITZ_API blitz_op blitz_op_chan_recv(blitz_chan_op *op, blitz_chan *ch, void *out);

/* Withdraws a pending op (a blitz_chan_op; see "Cancel safety" above).
 * Afterwards op->result is BLITZ_ECANCELED when the op was pending (woken
 * or not: it received or sent nothing), was never polled or nothing was
 * pending; an op whose last poll returned READY keeps the result it
 * reported (while an op is unfinished its result is BLITZ_EAGAIN). The
 * same whether a combinator, a timeout or the caller cancels. Safe on an
 * idle, pending or completed op, with cx NULL, and from a task's cancel
 * hook. */
BLITZ_API void blitz_chan_cancel(blitz_cx *cx, void *op);

/* Blocking forms for plain threads: wait until sent / received.
 * BLITZ_OK, BLITZ_ECLOSED, BLITZ_EINVAL, BLITZ_EDEADLK inside a task. */
BLITZ_API int blitz_chan_send_blocking(blitz_chan *ch, const void *value);
BLITZ_API int blitz_chan_recv_blocking(blitz_chan *ch, void *out);

/* ---- oneshot ------------------------------------------------------------------- */

/* One value (64 bits: an integer or a pointer cast to uintptr_t) from one
 * sender to one receiver, through a cell the caller provides: nothing is
 * allocated. Zero-filled (or blitz_oneshot_init) is empty.
 *
 * The cell is shared memory: keep it where both sides reach it until both
 * are done with it (blitz_oneshot_done). A receiver that got the value or
 * BLITZ_ECLOSED knows the sender is done, so a receiver that is never
 * cancelled while it waits may keep the cell in its own task state. */
typedef struct blitz_oneshot {
    uint32_t blitz__state;
    uint32_t blitz__pad;
    uint64_t blitz__value;
    blitz_waker blitz__waker;
} blitz_oneshot;

BLITZ_API void blitz_oneshot_init(blitz_oneshot *os);
/* Sends `value` and finishes the sender side. BLITZ_OK; BLITZ_ECLOSED when
 * the receiver closed first (the value was not delivered: it is still the
 * caller's); BLITZ_EINVAL for NULL, or when the sender side already sent or
 * closed. Wakes a waiting receiver. */
BLITZ_API int blitz_oneshot_send(blitz_oneshot *os, uint64_t value);
/* Finishes the sender side without a value: the receiver sees
 * BLITZ_ECLOSED. Idempotent; does nothing after a send. */
BLITZ_API void blitz_oneshot_close_tx(blitz_oneshot *os);
/* Finishes the receiver side: a later send fails with BLITZ_ECLOSED. A
 * value sent before stays readable with blitz_oneshot_try_recv. */
BLITZ_API void blitz_oneshot_close_rx(blitz_oneshot *os);
/* Nonzero once the receiver closed (for a sender that wants to stop). */
BLITZ_API int blitz_oneshot_rx_closed(const blitz_oneshot *os);
/* BLITZ_OK (value in *out; the value is then consumed), BLITZ_EEMPTY,
 * BLITZ_ECLOSED (the sender closed without sending, or the value was
 * already taken), BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_oneshot_try_recv(blitz_oneshot *os, uint64_t *out);
/* Await: BLITZ_AWAIT(s, blitz_oneshot_recv(cx, &s->cell)); then
 * blitz_oneshot_try_recv gives the value or BLITZ_ECLOSED. READY once a
 * value is there or the sender closed. One receiver at a time. */
BLITZ_API blitz_poll blitz_oneshot_recv(blitz_cx *cx, blitz_oneshot *os);
/* As a blitz_op; the cancel withdraws the receiver's waker and keeps a
 * value that already arrived in the cell (take it with try_recv). */
BLITZ_API blitz_op blitz_op_oneshot_recv(blitz_oneshot *os);
/* Withdraws a pending receive (op is the blitz_oneshot; cx may be NULL). */
BLITZ_API void blitz_oneshot_cancel(blitz_cx *cx, void *os);
/* Blocking receive for plain threads: BLITZ_OK with *out, BLITZ_ECLOSED,
 * BLITZ_EINVAL, BLITZ_EDEADLK inside a task. */
BLITZ_API int blitz_oneshot_recv_blocking(blitz_oneshot *os, uint64_t *out);
/* Nonzero once neither side will touch the cell again: the sender closed,
 * or it sent and the receiver took the value or closed. */
BLITZ_API int blitz_oneshot_done(const blitz_oneshot *os);

/* ---- broadcast ----------------------------------------------------------------- */

/* Every receiver gets every value sent after it subscribed. The channel
 * keeps the last `capacity` values (rounded up to a power of two); senders
 * never wait, so a receiver that falls further behind misses the oldest:
 * its next receive returns BLITZ_ELAGGED with the number it missed in
 * `lagged`, and the one after resumes at the oldest value still kept. */
typedef struct blitz_broadcast blitz_broadcast;

/* A receiver: caller-provided (in the task state), filled by subscribe.
 * Fields other than `lagged` and `result` are private. */
typedef struct blitz_broadcast_rx {
    blitz__waiter blitz__w;
    blitz_broadcast *blitz__bc;
    void *blitz__buf;
    uint64_t blitz__pos;
    uint64_t lagged; /* values missed, set with BLITZ_ELAGGED */
    int result;      /* of the last async receive */
} blitz_broadcast_rx;

/* Creates a channel with one sender reference and no receiver.
 * BLITZ_EINVAL for NULL out, elem_size 0, capacity 0 or too large;
 * BLITZ_ENOMEM. */
BLITZ_API int blitz_broadcast_new(blitz_broadcast **out, size_t elem_size, size_t capacity);
/* Sender references; the last release closes the channel (receivers read
 * what is kept, then see BLITZ_ECLOSED). The channel is freed when no
 * sender and no receiver is left. blitz_broadcast_close, like
 * blitz_chan_close, needs a reference and releases none. */
BLITZ_API int blitz_broadcast_sender_clone(blitz_broadcast *bc);
BLITZ_API int blitz_broadcast_sender_release(blitz_broadcast *bc);
BLITZ_API int blitz_broadcast_close(blitz_broadcast *bc);
/* Starts a receiver at the next value sent; the receiver is a reference
 * until blitz_broadcast_unsubscribe. BLITZ_EINVAL for NULL. A receiver
 * subscribed to a closed channel sees BLITZ_ECLOSED. The caller must hold
 * a sender reference at the call (until the receiver exists only those
 * keep the channel), so subscribe before it may be released: in the
 * spawner, either in the state it then passes to blitz_spawn (a receiver
 * with no receive waiting is plain data: the task's copy is the receiver
 * and the original must not be used) or in the spawn's init
 * (blitz_spawn_opts.init, in place). A receiver stays at its address only
 * while a receive of it waits. */
BLITZ_API int blitz_broadcast_subscribe(blitz_broadcast *bc, blitz_broadcast_rx *rx);
/* Gives the receiver up (withdrawing a pending receive). */
BLITZ_API int blitz_broadcast_unsubscribe(blitz_broadcast_rx *rx);
/* Sends to every current receiver: returns how many (>= 1), or
 * BLITZ_ECLOSED when the channel is closed or has no receiver (the value is
 * not kept). BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_broadcast_send(blitz_broadcast *bc, const void *value);
BLITZ_API uint32_t blitz_broadcast_receiver_count(const blitz_broadcast *bc);
/* BLITZ_OK (value in out), BLITZ_EEMPTY, BLITZ_ELAGGED (rx->lagged set;
 * `out` holds no value), BLITZ_ECLOSED (closed and everything kept was
 * read), BLITZ_EINVAL. */
BLITZ_API int blitz_broadcast_try_recv(blitz_broadcast_rx *rx, void *out);
/* Await: BLITZ_AWAIT(s, blitz_broadcast_recv(cx, &s->rx, &s->value)); then
 * rx.result is BLITZ_OK, BLITZ_ELAGGED or BLITZ_ECLOSED. Cancel: nothing
 * is consumed by a withdrawn receive (each receiver has its own position),
 * so the next receive gets the same value. */
BLITZ_API blitz_poll blitz_broadcast_recv(blitz_cx *cx, blitz_broadcast_rx *rx, void *out);
BLITZ_API blitz_op blitz_op_broadcast_recv(blitz_broadcast_rx *rx, void *out);
/* Withdraws a pending receive (op is the blitz_broadcast_rx; cx may be
 * NULL). */
BLITZ_API void blitz_broadcast_cancel(blitz_cx *cx, void *rx);
BLITZ_API int blitz_broadcast_recv_blocking(blitz_broadcast_rx *rx, void *out);

/* ---- watch ------------------------------------------------------------------------ */

/* One value with a version that every send increments (the initial value
 * is version 1). Receivers read the latest value and wait for a newer
 * version. Reading is a seqlock: a read that overlaps a send retries, so
 * a reader always copies one whole value, never a torn mix, and senders
 * never wait for readers. */
typedef struct blitz_watch blitz_watch;

typedef struct blitz_watch_rx {
    blitz__waiter blitz__w;
    blitz_watch *blitz__watch;
    uint64_t seen; /* the version this receiver saw last */
    int result;    /* of the last blitz_watch_changed */
} blitz_watch_rx;

/* Creates a watch holding a copy of `initial` (elem_size bytes), with one
 * sender reference. BLITZ_EINVAL for NULL arguments or elem_size 0;
 * BLITZ_ENOMEM. */
BLITZ_API int blitz_watch_new(blitz_watch **out, size_t elem_size, const void *initial);
/* Replaces the value and wakes every receiver waiting in changed.
 * BLITZ_OK, BLITZ_ECLOSED after close, BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_watch_send(blitz_watch *w, const void *value);
/* Sender references; the last release closes the watch. The watch is freed
 * when no sender and no receiver is left. blitz_watch_close needs a
 * reference and releases none. */
BLITZ_API int blitz_watch_sender_clone(blitz_watch *w);
BLITZ_API int blitz_watch_sender_release(blitz_watch *w);
BLITZ_API int blitz_watch_close(blitz_watch *w);
/* Copies the current value to `out` and returns its version (0 for NULL
 * arguments). Safe against concurrent sends. */
BLITZ_API uint64_t blitz_watch_read(const blitz_watch *w, void *out);
/* A receiver that has seen the current version; a reference until
 * blitz_watch_unsubscribe. As for broadcast, the caller must hold a sender
 * reference at the call (subscribe in the spawner, in the state it passes
 * or in the spawn's init), and the receiver stays at its address only
 * while a blitz_watch_changed of it waits. */
BLITZ_API int blitz_watch_subscribe(blitz_watch *w, blitz_watch_rx *rx);
BLITZ_API int blitz_watch_unsubscribe(blitz_watch_rx *rx);
/* Reads and marks the version read as seen. Returns the version. */
BLITZ_API uint64_t blitz_watch_read_update(blitz_watch_rx *rx, void *out);
/* 1 when a version newer than rx->seen exists, 0 when not, BLITZ_ECLOSED
 * when not and the watch is closed. */
BLITZ_API int blitz_watch_has_changed(const blitz_watch_rx *rx);
/* Await: READY once a version newer than rx->seen exists (result BLITZ_OK,
 * and rx->seen becomes the newest version: read it with
 * blitz_watch_read) or the watch closed without one (BLITZ_ECLOSED).
 * Cancel consumes nothing: a newer version stays newer. */
BLITZ_API blitz_poll blitz_watch_changed(blitz_cx *cx, blitz_watch_rx *rx);
BLITZ_API blitz_op blitz_op_watch_changed(blitz_watch_rx *rx);
/* Withdraws a pending blitz_watch_changed (op is the blitz_watch_rx; cx
 * may be NULL). */
BLITZ_API void blitz_watch_cancel(blitz_cx *cx, void *rx);
BLITZ_API int blitz_watch_changed_blocking(blitz_watch_rx *rx);
/* ====[ END src/api/api_chan.h ]=========================================== */
/* ----[ RESUME src/api/blitz_api.h ] */
/* ====[ BEGIN src/api/api_io.h ]=========================================== */
/* >>api/api_io */
/* Public API: The I/O driver and sockets.
 *
 * Every runtime owns one I/O driver over one backend: io_uring (completion
 * based: the kernel performs the operation and writes into your buffer),
 * epoll (edge-triggered readiness, Linux), kqueue (the same on Darwin and
 * the BSDs) or poll (the portable fallback). The backend is picked when the
 * runtime is created: blitz_config.backend, else the BLITZ_BACKEND
 * environment variable ("io_uring", "epoll", "kqueue", "poll"), else
 * io_uring when the kernel allows it, then epoll, then kqueue, then poll.
 *
 * Sockets are non-blocking file descriptors wrapped in a blitz_socket
 * handle that belongs to one runtime. Operations are intrusive ops: a
 * blitz_io lives in the task's state (zero-filled is ready to use) and is
 * polled repeatedly until READY; the result is then in the op:
 *
 *   BLITZ_AWAIT(s, blitz_sock_recv(cx, &s->op, s->sock, s->buf, sizeof s->buf));
 *   if (s->op.result <= 0) ...   // 0 = end of stream, < 0 = a BLITZ_E* code
 *
 * Buffers must stay where they are until the op is READY or cancelled and
 * settled: in the task's state they do. A task that is cancelled or
 * finishes with an io_uring op in flight keeps its memory until the kernel
 * has let go of the buffer (the op holds a reference on the task). Every op
 * has a cancel function usable with blitz_timeout_op:
 *
 *   BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, BLITZ_SEC,
 *                                   blitz_sock_recv(cx, &s->op, s->sock, s->buf, n),
 *                                   blitz_io_cancel, &s->op));
 *
 * A limit is not a way to try without waiting: on io_uring a receive goes
 * to the kernel with the task's next pause, so a limit of 0 or a few
 * nanoseconds may expire before it looked, even with data waiting (epoll
 * and poll try first). Nothing is lost (blitz_io_settle, then the next
 * receive gets it); a loop that retries such a limit should yield between
 * tries, or it never pauses and never submits.
 *
 * SIGPIPE never kills the process: sends use MSG_NOSIGNAL and report
 * BLITZ_EPIPE / BLITZ_ECONNRESET. */

/* The backend the runtime's I/O driver uses. */
BLITZ_API blitz_backend blitz_runtime_backend(const blitz_runtime *rt);
/* "io_uring", "epoll", "kqueue", "poll", "auto", "none". */
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

/* "1.2.3.4:80", "[::1]:8080", "[fe80::1%2]:80" (the IPv6 scope: a
 * number up to 4294967295, digits only, or an interface name such as
 * "lo"). BLITZ_EINVAL for anything else (missing port, port > 65535, bad
 * address, bad scope). */
BLITZ_API int blitz_addr_parse(const char *s, blitz_addr *out);
/* Splits "host:port" or "[host]:port" (the brackets hold an IPv6 address,
 * which has colons of its own) into `host` (NUL-terminated, at most cap - 1
 * bytes) and `port`. The host is not checked: a name or an address.
 * BLITZ_EINVAL for a missing or bad port, an empty or too long host, or
 * an IPv6 address without brackets. */
BLITZ_API int blitz_host_port_split(const char *s, char *host, size_t cap, uint16_t *port);
/* An IP literal ("127.0.0.1", "::1") and a port. */
BLITZ_API int blitz_addr_ip(const char *ip, uint16_t port, blitz_addr *out);
/* A Unix socket path; a leading '@' makes a Linux abstract name.
 * BLITZ_EINVAL when empty or too long: a path has at most 107 bytes (its
 * terminator fills the 108 of sun_path), an abstract name at most 107
 * after the '@'. */
BLITZ_API int blitz_addr_unix(const char *path, blitz_addr *out);
/* "1.2.3.4:80", "[::1]:80", the path, "@name", or "(unnamed)" for a Unix
 * socket with no name (an unbound one's local address, the sender of a
 * datagram from one). Returns the length, or BLITZ_ERANGE (buffer too
 * small; it is still terminated), or BLITZ_EINVAL (NULL argument, size 0,
 * an address of no known family, or a `len` that does not fit it). */
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

/* An I/O op. Fields other than `result` and `socket` are private. It
 * lives in the task's state (zero-filled is ready) and is reused once
 * READY. Every op function wants a non-NULL op (with NULL it is READY at
 * once and does nothing: there is nowhere to put an error). BLITZ_EINVAL
 * as the result for a NULL socket or task context, a NULL buffer with a
 * length, a vectored array that is NULL, empty, longer than 16 or has a
 * NULL base with a length. */
typedef struct blitz_io {
    /* After READY: bytes transferred (0 = end of stream for a receive), 0
     * for accept/connect, or a negative BLITZ_E* code (BLITZ_ECLOSED when
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
    uint32_t blitz__sockref; /* the task's reference on blitz__sock (task only) */
    void *blitz__free_after; /* freed by the completion of a cancelled op */
    uint64_t blitz__scratch[18];
    size_t blitz__got; /* recv_exact: bytes already in the buffer */
    /* The call and arguments a blitz_op_sock_* / blitz_op_fd_* constructor
     * recorded: kept apart from the fields above, which a cancelled op's
     * completion may still need while the new op is made. */
    blitz_socket *blitz__arg_sock;
    const void *blitz__arg_buf;
    size_t blitz__arg_len;
    const blitz_addr *blitz__arg_addr;
    int64_t blitz__arg_limit;
    uint32_t blitz__arg_call;
} blitz_io;

/* Options of the listen / bind calls (other bits: BLITZ_EINVAL). */
#define BLITZ_SOCK_REUSEADDR    1u /* SO_REUSEADDR (listeners set it by default) */
#define BLITZ_SOCK_REUSEPORT    2u /* SO_REUSEPORT */
#define BLITZ_SOCK_V6ONLY       4u /* IPV6_V6ONLY */
#define BLITZ_SOCK_NO_REUSEADDR 8u

/* Cancels a pending op: afterwards it holds no reference on the task and
 * the task is not woken for it. With io_uring an op already in the kernel
 * is cancelled asynchronously: its buffer stays the kernel's until the
 * cancellation completes, so reuse the buffer only after
 * blitz_io_settle is READY (polling the same op again also waits for it).
 * Safe to call on an idle or finished op, and with op or cx NULL. A
 * blitz_cancel_fn (op is the blitz_io): pass it to blitz_timeout_op and
 * blitz_op_make, call it from spawn cancel hooks. */
BLITZ_API void blitz_io_cancel(blitz_cx *cx, void *op);
/* READY once the kernel holds nothing of the op (always READY except
 * after a cancel of an io_uring op whose completion has not arrived).
 * Then a cancelled send that had sent bytes (the kernel performed it
 * before the cancel reached it, or part of a send_all went out) has that
 * count in `result` instead of BLITZ_ECANCELED. A cancelled receive's
 * result stays BLITZ_ECANCELED; bytes it had received go to the next
 * receive on the socket. */
BLITZ_API blitz_poll blitz_io_settle(blitz_cx *cx, blitz_io *op);
/* Nonzero while the op waits (registered or in flight). */
BLITZ_API int blitz_io_pending(const blitz_io *op);

/* TCP listener: socket, SO_REUSEADDR (unless BLITZ_SOCK_NO_REUSEADDR),
 * bind, listen(backlog; 0 = SOMAXCONN). `flags`: BLITZ_SOCK_* bits.
 * BLITZ_EINVAL for a NULL argument, a negative backlog, unknown flags or a
 * Unix address (use blitz_unix_listen); bind errors as BLITZ_E* codes
 * (BLITZ_EADDRINUSE, ...). A receive on a listener (TCP or Unix) is
 * READY at once with BLITZ_ENOTCONN. */
BLITZ_API int blitz_tcp_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                               unsigned flags, blitz_socket **out);
/* Await a connection: op->socket is the new socket (result 0), or result
 * < 0 (BLITZ_EMFILE when out of descriptors: the listener stays usable;
 * sleep a little and accept again; BLITZ_ENOMEM: a connection arrived but
 * could not be kept, and its client sees it closed). On io_uring the listener's multishot
 * accept counts against the descriptor limit that held when it was armed
 * (the first accept): lower RLIMIT_NOFILE before listening. */
BLITZ_API blitz_poll blitz_sock_accept(blitz_cx *cx, blitz_io *op, blitz_socket *listener);
/* blitz_sock_accept as a blitz_op (cancel: blitz_io_cancel). */
BLITZ_API blitz_op blitz_op_sock_accept(blitz_io *io, blitz_socket *listener);
/* Await a connection to `addr` (copied): op->socket (result 0) or an error
 * (BLITZ_ECONNREFUSED, ...). */
BLITZ_API blitz_poll blitz_tcp_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr);
/* blitz_tcp_connect with a time limit: result BLITZ_ETIMEDOUT (and the
 * half-open socket closed) when the connection is not made within
 * timeout_ns; timeout_ns <= 0 is no limit. On io_uring the kernel times it
 * (a LINK_TIMEOUT linked to the CONNECT: no timer, one submission) when
 * the op starts on a worker or the current-thread driver; otherwise, and
 * while the runtime's clock is paused, the runtime's timer does. Cancel
 * with blitz_io_cancel as any op. */
BLITZ_API blitz_poll blitz_tcp_connect_timeout(blitz_cx *cx, blitz_io *op, const blitz_addr *addr,
                                               int64_t timeout_ns);
/* The connects as blitz_ops (cancel: blitz_io_cancel); `addr` must stay
 * valid until the op's first poll. */
BLITZ_API blitz_op blitz_op_tcp_connect(blitz_io *io, const blitz_addr *addr);
BLITZ_API blitz_op blitz_op_tcp_connect_timeout(blitz_io *io, const blitz_addr *addr,
                                                int64_t timeout_ns);

/* Stream and datagram transfers (TCP, Unix stream, connected UDP / Unix
 * datagram). recv: result 0 at end of stream (a stream receive of len 0
 * is READY at once with 0); on a datagram socket it takes one datagram,
 * truncated to len without notice, and 0 may be an empty datagram.
 * BLITZ_ENOMEM from a stream receive: received data could not be kept
 * (io_uring), and every later receive fails so; close the connection.
 * send: may be partial.
 * send_all: READY when all `len` bytes went out, or with the error (the
 * bytes sent so far are lost to the caller; result is the error).
 * recv_exact (stream sockets): READY when `len` bytes are in buf (result
 * len), at end of stream (result: the bytes that came, fewer than len),
 * or with an error. A cancelled one keeps what it had received: after
 * blitz_io_settle its result is that count (at the start of buf) if any,
 * and bytes in flight go to the next receive, as for recv. */
BLITZ_API blitz_poll blitz_sock_recv(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                     size_t len);
BLITZ_API blitz_poll blitz_sock_send(blitz_cx *cx, blitz_io *op, blitz_socket *s, const void *buf,
                                     size_t len);
BLITZ_API blitz_poll blitz_sock_send_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                         const void *buf, size_t len);
BLITZ_API blitz_poll blitz_sock_recv_exact(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                           size_t len);
/* Vectored: `iov` (at most 16 entries) must stay valid until READY. */
BLITZ_API blitz_poll blitz_sock_recvv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt);
BLITZ_API blitz_poll blitz_sock_sendv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt);
/* The transfers above as blitz_ops (cancel: blitz_io_cancel). */
BLITZ_API blitz_op blitz_op_sock_recv(blitz_io *io, blitz_socket *s, void *buf, size_t len);
BLITZ_API blitz_op blitz_op_sock_send(blitz_io *io, blitz_socket *s, const void *buf, size_t len);
BLITZ_API blitz_op blitz_op_sock_send_all(blitz_io *io, blitz_socket *s, const void *buf,
                                          size_t len);
BLITZ_API blitz_op blitz_op_sock_recv_exact(blitz_io *io, blitz_socket *s, void *buf, size_t len);
BLITZ_API blitz_op blitz_op_sock_recvv(blitz_io *io, blitz_socket *s, const blitz_iovec *iov,
                                       int iovcnt);
BLITZ_API blitz_op blitz_op_sock_sendv(blitz_io *io, blitz_socket *s, const blitz_iovec *iov,
                                       int iovcnt);

/* Shuts down reading (0), writing (1, sends FIN: half-close) or both (2). */
BLITZ_API int blitz_sock_shutdown(blitz_socket *s, int how);
/* Closes: pending ops complete with BLITZ_ECLOSED; the descriptor is
 * closed once no op uses it any more (the kernel's, or a task's in the
 * middle of its system call), whether or not the ops' tasks ever run
 * again. A listener made by blitz_tcp_listen or blitz_unix_listen refuses
 * new connections from the return on every backend; an adopted one on
 * io_uring may still take (and reset) some until its accept's cancel
 * completes. Any thread may close while tasks' ops are in progress. The
 * handle may be freed by the call: using it after (a new op, a second
 * close) is a use after free, as with free(3). So a connection whose task
 * loops over ops is closed by that task. To end it from elsewhere, cancel
 * the task (its pending op is withdrawn; close the socket when the task
 * ends, e.g. in its drop function), race its ops against a
 * cancellation token, or call blitz_sock_shutdown(s, 2) while the handle
 * is known to be open (e.g. under the lock of a table the task leaves
 * before it closes): the task's receive sees end of stream, its sends
 * fail, and it closes. On a current-thread runtime, completions are only
 * collected while a thread drives it (blitz_runtime_run, blitz_join_blocking;
 * once more as the drive returns) or at blitz_runtime_free: a socket
 * closed from elsewhere with an op in the kernel keeps its descriptor
 * until then. A listener's address is free for a new listen of the same
 * runtime as soon as the close returns (a listen retries for up to 200 ms
 * while a socket just closed still holds it); another process may find
 * it taken for a moment. */
BLITZ_API int blitz_sock_close(blitz_socket *s);
/* The descriptor (for options blitz does not wrap), or -1. */
BLITZ_API int blitz_sock_fd(const blitz_socket *s);
BLITZ_API int blitz_sock_local_addr(const blitz_socket *s, blitz_addr *out);
BLITZ_API int blitz_sock_peer_addr(const blitz_socket *s, blitz_addr *out);

/* Options (BLITZ_OK or a BLITZ_E* code). */
BLITZ_API int blitz_tcp_set_nodelay(blitz_socket *s, int on);
BLITZ_API int blitz_tcp_nodelay(const blitz_socket *s); /* 1, 0, or < 0 */
/* Keepalive on/off; idle_secs > 0 also sets TCP_KEEPIDLE (TCP only: on
 * another socket that fails with a BLITZ_E* code and nothing is changed). */
BLITZ_API int blitz_tcp_set_keepalive(blitz_socket *s, int on, int idle_secs);
/* SO_LINGER: on with 0 seconds makes close send a reset. */
BLITZ_API int blitz_sock_set_linger(blitz_socket *s, int on, int secs);
BLITZ_API int blitz_sock_set_recv_buffer(blitz_socket *s, int bytes);
BLITZ_API int blitz_sock_set_send_buffer(blitz_socket *s, int bytes);
BLITZ_API int blitz_sock_recv_buffer(const blitz_socket *s); /* bytes or < 0 */
BLITZ_API int blitz_sock_send_buffer(const blitz_socket *s);

/* UDP: bind (port 0 = any). The datagram calls below work on Unix datagram
 * sockets too; blitz_sock_connect_dgram sets the default peer (sync). */
BLITZ_API int blitz_udp_bind(blitz_runtime *rt, const blitz_addr *addr, unsigned flags,
                             blitz_socket **out);
BLITZ_API int blitz_sock_connect_dgram(blitz_socket *s, const blitz_addr *addr);
/* Datagram to `to` (must stay valid until READY); from: the sender
 * (optional; must stay valid until READY). A datagram longer than `len`
 * is truncated to `len` without notice (the rest is dropped), as with
 * blitz_sock_recv. */
BLITZ_API blitz_poll blitz_sock_send_to(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                        const void *buf, size_t len, const blitz_addr *to);
BLITZ_API blitz_poll blitz_sock_recv_from(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                          size_t len, blitz_addr *from);
/* The datagram calls as blitz_ops (cancel: blitz_io_cancel). */
BLITZ_API blitz_op blitz_op_sock_send_to(blitz_io *io, blitz_socket *s, const void *buf, size_t len,
                                         const blitz_addr *to);
BLITZ_API blitz_op blitz_op_sock_recv_from(blitz_io *io, blitz_socket *s, void *buf, size_t len,
                                           blitz_addr *from);
/* Multicast group membership (IPv4 or IPv6 group; interface: an IPv4
 * address literal or NULL for any / an IPv6 interface index as text). */
BLITZ_API int blitz_udp_join_multicast(blitz_socket *s, const char *group, const char *iface);
BLITZ_API int blitz_udp_leave_multicast(blitz_socket *s, const char *group, const char *iface);
BLITZ_API int blitz_udp_set_multicast_loop(blitz_socket *s, int on);
BLITZ_API int blitz_udp_set_broadcast(blitz_socket *s, int on);

/* Unix sockets: stream listener (accept with blitz_sock_accept) and
 * connect (the op form, like TCP), datagram sockets (bound to addr, or
 * unbound with addr NULL). A path listener unlinks a stale socket file
 * first (a socket nobody has bound: tested with a datagram connect, which
 * neither waits nor reaches a live listener's accept); any other file at
 * the path, or a live socket, stays and the listen fails with
 * BLITZ_EADDRINUSE. A bound datagram socket unlinks nothing (remove its
 * path yourself: a second bind while the file exists is
 * BLITZ_EADDRINUSE). */
BLITZ_API int blitz_unix_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                                blitz_socket **out);
BLITZ_API blitz_poll blitz_unix_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr);
/* blitz_unix_connect as a blitz_op (as blitz_op_tcp_connect). */
BLITZ_API blitz_op blitz_op_unix_connect(blitz_io *io, const blitz_addr *addr);
BLITZ_API int blitz_unix_dgram(blitz_runtime *rt, const blitz_addr *addr, blitz_socket **out);
/* A connected pair of Unix stream (type 1) or datagram (type 2) sockets. */
BLITZ_API int blitz_unix_pair(blitz_runtime *rt, int type, blitz_socket **a, blitz_socket **b);

/* Adopts an existing descriptor (made non-blocking and close-on-exec);
 * blitz closes it with the socket. On failure the descriptor stays the
 * caller's, its flags as they were: BLITZ_EPERM for a regular file or a
 * directory (never anything to wait for; use the file ops of api_pool.h),
 * and on epoll for other descriptors it cannot watch (/dev/null). */
BLITZ_API int blitz_sock_adopt(blitz_runtime *rt, int fd, blitz_socket **out);
/* ====[ END src/api/api_io.h ]============================================= */
/* ----[ RESUME src/api/blitz_api.h ] */
/* ====[ BEGIN src/api/api_pool.h ]========================================= */
/* >>api/api_pool */
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
 * socket ops give BLITZ_EINVAL there). The work runs
 * on the blocking pool today; the same calls are meant to map onto native
 * kernel operations (io_uring) where the kernel has them.
 *
 * One op carries one operation at a time and is polled by one task. A
 * zero-filled op is ready to use; after READY it is ready for the next
 * operation. Paths and the data of writes are copied when the operation
 * starts, and reads land in a buffer of the operation's own that is copied
 * into yours when the op is READY (so at most BLITZ_FS_MAX_READ bytes per
 * read): no pool thread ever touches your memory.
 *
 * Cancellation (blitz_fs_cancel, a blitz_cancel_fn; also what
 * blitz_timeout_op calls) returns at once and leaves the op ready for the
 * next operation: one that has not started is dropped; one that is
 * running cannot be stopped, so its thread finishes it and then releases
 * what the result holds (closes a file it opened, frees data). A task
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
} blitz_fs_op;

/* Opens `path` with BLITZ_FS_* flags (close-on-exec); `mode` is used when
 * a file is created (e.g. 0644). Result: the file descriptor. EINVAL for
 * no READ/WRITE or unknown flags. */
BLITZ_API blitz_poll blitz_fs_open(blitz_cx *cx, blitz_fs_op *op, const char *path, int flags,
                                   uint32_t mode);
/* Closes fd. Result 0. */
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
/* Reads a whole file into op->data; result: its length. */
BLITZ_API blitz_poll blitz_fs_read_file(blitz_cx *cx, blitz_fs_op *op, const char *path);
/* Creates or truncates `path` (mode 0666 before the umask) and writes
 * len bytes; result len. */
BLITZ_API blitz_poll blitz_fs_write_file(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                         const void *data, size_t len);
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
 * Waiting runs on a pool thread, which sleeps on the child's pidfd (Linux)
 * or polls with a short sleep elsewhere, and notices within 50 ms that its
 * op was cancelled or the runtime is shutting down: a wait never holds up
 * shutdown. A child is reaped exactly once, and kill never signals a
 * process id that was reaped and may have been reused.
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
     * PATH. NULL-terminated. */
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
/* ====[ END src/api/api_pool.h ]=========================================== */
/* ----[ RESUME src/api/blitz_api.h ] */
/* ====[ BEGIN src/api/api_stream.h ]======================================= */
/* >>api/api_stream */
/* Public API: descriptor ops and pipes, byte streams (buffered reader and
 * writer, copy), graceful shutdown. */

/* ---------------------------------------------------------------------------
 * Descriptor ops and pipes
 *
 * The socket ops of api_io.h use recv/send, which fail on pipes, ttys and
 * character devices. These ops use read(2)/write(2) on any descriptor a
 * blitz_socket wraps (blitz_pipe, blitz_sock_adopt; sockets too), on every
 * backend: readiness and the system call on epoll and poll, a POLL_ADD
 * followed by the system call on io_uring (so the kernel never holds your
 * buffer). They are blitz_io ops: the result is in op->result (bytes, 0 at
 * end of stream, or a negative code), blitz_io_cancel
 * withdraws them. A write to a pipe whose reader is gone returns
 * BLITZ_EPIPE; SIGPIPE never reaches the process for it.
 *
 * Regular files and /dev/null cannot be waited for (epoll refuses them):
 * use a file stream (blitz_stream_file) or the file ops of api_pool.h.
 * ------------------------------------------------------------------------- */

/* A non-blocking, close-on-exec pipe: bytes written to *write_end come out
 * of *read_end. Closing the write end (blitz_sock_close) ends the stream
 * for the reader; closing the read end makes writes fail with BLITZ_EPIPE.
 * BLITZ_EINVAL (NULL), BLITZ_ENOSYS (runtime without I/O), BLITZ_EMFILE. */
BLITZ_API int blitz_pipe(blitz_runtime *rt, blitz_socket **read_end, blitz_socket **write_end);

/* Up to len bytes; result 0 at end of stream. */
BLITZ_API blitz_poll blitz_fd_read(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                   size_t len);
/* At least one byte (or the error); may be partial. */
BLITZ_API blitz_poll blitz_fd_write(blitz_cx *cx, blitz_io *op, blitz_socket *s, const void *buf,
                                    size_t len);
/* All len bytes; result len, or the error that stopped it. */
BLITZ_API blitz_poll blitz_fd_write_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                        const void *buf, size_t len);
/* READY once the descriptor is readable / writable (or at end of stream,
 * or in error): result is the poll(2) event mask (> 0) or a negative
 * code. */
BLITZ_API blitz_poll blitz_fd_readable(blitz_cx *cx, blitz_io *op, blitz_socket *s);
BLITZ_API blitz_poll blitz_fd_writable(blitz_cx *cx, blitz_io *op, blitz_socket *s);
/* The descriptor ops as blitz_ops (cancel: blitz_io_cancel). */
BLITZ_API blitz_op blitz_op_fd_read(blitz_io *io, blitz_socket *s, void *buf, size_t len);
BLITZ_API blitz_op blitz_op_fd_write(blitz_io *io, blitz_socket *s, const void *buf, size_t len);
BLITZ_API blitz_op blitz_op_fd_write_all(blitz_io *io, blitz_socket *s, const void *buf,
                                         size_t len);
BLITZ_API blitz_op blitz_op_fd_readable(blitz_io *io, blitz_socket *s);
BLITZ_API blitz_op blitz_op_fd_writable(blitz_io *io, blitz_socket *s);

/* ---------------------------------------------------------------------------
 * Byte streams
 *
 * A blitz_stream is one read side and one write side over a socket, a pipe
 * (or any descriptor a blitz_socket wraps), a file, or an implementation of
 * your own (a vtable). The buffered reader and writer and blitz_copy work
 * on any of them. A stream holds one pending read and one pending write at
 * a time (one task may read while another writes); it keeps the op structs
 * of both, so it lives where an op lives: in a task's state, or anywhere
 * that outlives the ops polled on it (after a cancel, until
 * blitz_stream_settle is READY).
 *
 * Every awaitable below is an intrusive op: a poll function over an object
 * (the stream, the reader, the writer, the copy), a cancel function (a
 * blitz_cancel_fn, safe with cx NULL and on an idle or finished op), and a
 * blitz_op constructor, so they work with blitz_timeout_op, blitz_race and
 * blitz_op_run_blocking (the blocking form). Results are in the object's `result`:
 * a count >= 0 or a negative code.
 * ------------------------------------------------------------------------- */

typedef struct blitz_stream blitz_stream;

/* A stream implementation. read / write are polled until READY and then
 * store their result in *result (bytes; 0 from read = end of stream; < 0
 * an error); write may be partial but moves at least one byte. cancel
 * withdraws the pending read (dir 0) or write (dir 1); cx may be NULL.
 * shutdown_write (optional) ends the write side: the peer reads end of
 * stream. */
typedef struct blitz_stream_vtable {
    blitz_poll (*read)(blitz_cx *cx, blitz_stream *st, void *buf, size_t len, int64_t *result);
    blitz_poll (*write)(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                        int64_t *result);
    void (*cancel)(blitz_cx *cx, blitz_stream *st, int dir);
    int (*shutdown_write)(blitz_stream *st);
} blitz_stream_vtable;

#define BLITZ_STREAM_SOCKET 1 /* a socket: send/recv */
#define BLITZ_STREAM_PIPE   2 /* any other pollable descriptor: read/write */
#define BLITZ_STREAM_FILE   3 /* a regular file, through the blocking pool */
#define BLITZ_STREAM_CUSTOM 4

/* The stream closes its socket / descriptor in blitz_stream_close. */
#define BLITZ_STREAM_OWN 1u

struct blitz_stream {
    const blitz_stream_vtable *vtable;
    void *user; /* for a custom implementation */
    int kind;   /* BLITZ_STREAM_* */
    int fd;     /* the descriptor, or -1 */
    blitz_socket *sock;
    /* blitz_stream_read / _write: the result after READY. */
    int64_t read_result, write_result;
    unsigned blitz__flags;
    int blitz__wr_shut;
    void *blitz__rbuf;
    const void *blitz__wbuf;
    size_t blitz__rlen, blitz__wlen;
    blitz_io blitz__rio, blitz__wio;
    blitz_fs_op blitz__rfs, blitz__wfs;
};

/* A socket stream (recv/send), or a pipe stream (read/write) for any other
 * descriptor a blitz_socket wraps. flags: BLITZ_STREAM_OWN or 0.
 * BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_stream_socket(blitz_stream *st, blitz_socket *s, unsigned flags);
BLITZ_API int blitz_stream_pipe(blitz_stream *st, blitz_socket *s, unsigned flags);
/* A stream over an open file descriptor: reads and writes at the file
 * position, on the blocking pool. */
BLITZ_API int blitz_stream_file(blitz_stream *st, int fd, unsigned flags);
BLITZ_API int blitz_stream_custom(blitz_stream *st, const blitz_stream_vtable *vt, void *user);
/* Ends the write side (socket: shutdown(SHUT_WR); owned pipe end: close;
 * file: nothing). BLITZ_OK, or the system's error. */
BLITZ_API int blitz_stream_shutdown_write(blitz_stream *st);
/* Withdraws pending ops and closes what the stream owns. Idempotent. */
BLITZ_API int blitz_stream_close(blitz_stream *st);

/* One read / one (possibly partial) write: result in st->read_result /
 * st->write_result. */
BLITZ_API blitz_poll blitz_stream_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len);
BLITZ_API blitz_poll blitz_stream_write(blitz_cx *cx, blitz_stream *st, const void *buf,
                                        size_t len);
BLITZ_API void blitz_stream_read_cancel(blitz_cx *cx, void *st);
BLITZ_API void blitz_stream_write_cancel(blitz_cx *cx, void *st);
/* READY once no cancelled op of the stream is still held by the kernel
 * (only io_uring has such a wait); then the stream may be freed. */
BLITZ_API blitz_poll blitz_stream_settle(blitz_cx *cx, blitz_stream *st);
/* The arguments are kept in the stream until the op is polled. */
BLITZ_API blitz_op blitz_op_stream_read(blitz_stream *st, void *buf, size_t len);
BLITZ_API blitz_op blitz_op_stream_write(blitz_stream *st, const void *buf, size_t len);

/* ---- the buffered reader --------------------------------------------------
 *
 *   blitz_reader_init(&s->rd, &s->stream, NULL, 0);        (8 KiB, allocated)
 *   for (;;) {
 *       BLITZ_AWAIT(s, blitz_reader_read_line(cx, &s->rd, s->line, sizeof s->line));
 *       if (s->rd.result <= 0) break;      0: end of stream; < 0: error
 *       ... s->line (NUL-terminated, without "\n" or "\r\n"), s->rd.len bytes ...
 *   }
 *   blitz_reader_deinit(&s->rd);
 *
 * read_until / read_line take a record that fits the reader's buffer only
 * once the delimiter is in it, so a cancelled one loses nothing; a longer
 * record is moved into the destination as it comes (a cancel then leaves
 * the part moved in dst, `len` bytes of it). A last record without a
 * delimiter at the end of the stream is returned as it is.
 *
 * The reader's buffer is where the stream reads into: with io_uring a
 * socket read that was cancelled may still land there until
 * blitz_stream_settle is READY. A reader whose task can be cancelled
 * therefore gets a buffer inside the task's state (which the runtime keeps
 * until the kernel lets go), not an allocated one it would free in the
 * cancel hook.
 * ------------------------------------------------------------------------- */

typedef struct blitz_reader {
    /* After READY: bytes consumed from the stream (> 0), 0 at end of
     * stream with nothing read, or a negative code: BLITZ_EMSGSIZE (the
     * record is longer than the destination), BLITZ_EEOF (read_exact: the
     * stream ended first), or the stream's error. */
    int64_t result;
    /* read_line: the line's length without its ending; read_until /
     * read_exact / EMSGSIZE: the bytes stored in the destination. */
    size_t len;
    blitz_stream *stream;
    unsigned char *blitz__buf;
    size_t blitz__cap, blitz__start, blitz__end, blitz__scanned;
    int blitz__owns, blitz__eof, blitz__op, blitz__reading;
    int64_t blitz__err;
    unsigned char *blitz__dst;
    size_t blitz__max, blitz__got;
    int blitz__delim; /* blitz_op_reader_read_until's */
} blitz_reader;

/* buf NULL: the reader allocates cap bytes (0 = 8 KiB). BLITZ_EINVAL (NULL
 * reader or stream, cap 0 with a buffer), BLITZ_ENOMEM. */
BLITZ_API int blitz_reader_init(blitz_reader *r, blitz_stream *st, void *buf, size_t cap);
/* Frees an allocated buffer. */
BLITZ_API void blitz_reader_deinit(blitz_reader *r);
/* Bytes buffered and not yet consumed. */
BLITZ_API size_t blitz_reader_buffered(const blitz_reader *r);
/* The buffered bytes themselves, without consuming them (*len of them;
 * NULL when there are none), valid until the reader's next op: e.g. to
 * see whether a whole line already waits (memchr for '\n'). */
BLITZ_API const void *blitz_reader_peek(const blitz_reader *r, size_t *len);
/* Up to len bytes (from the buffer, else one read of the stream). */
BLITZ_API blitz_poll blitz_reader_read(blitz_cx *cx, blitz_reader *r, void *dst, size_t len);
/* Exactly len bytes, or BLITZ_EEOF (len: what arrived). */
BLITZ_API blitz_poll blitz_reader_read_exact(blitz_cx *cx, blitz_reader *r, void *dst, size_t len);
/* Bytes up to and including `delim` (0..255) into dst, at most max; result
 * and len: bytes stored. BLITZ_EMSGSIZE when max bytes came without the
 * delimiter: they are in dst and consumed, the rest of the record is
 * next. */
BLITZ_API blitz_poll blitz_reader_read_until(blitz_cx *cx, blitz_reader *r, int delim, void *dst,
                                             size_t max);
/* A '\n'-terminated line into dst (size max >= 2), NUL-terminated, without
 * "\n" / "\r\n"; len is its length. The line with its '\n' must fit in
 * max - 1 bytes (dst holds it before the ending is cut off): otherwise
 * BLITZ_EMSGSIZE, with max - 1 bytes of it in dst and consumed and the
 * rest of the line next. So dst of 1024 bytes takes lines of up to 1022
 * characters (1021 with "\r\n"). */
BLITZ_API blitz_poll blitz_reader_read_line(blitz_cx *cx, blitz_reader *r, char *dst, size_t max);
/* Withdraws a pending reader op (a blitz_cancel_fn; op = the reader). */
BLITZ_API void blitz_reader_cancel(blitz_cx *cx, void *reader);
BLITZ_API blitz_op blitz_op_reader_read_line(blitz_reader *r, char *dst, size_t max);
BLITZ_API blitz_op blitz_op_reader_read_exact(blitz_reader *r, void *dst, size_t len);
BLITZ_API blitz_op blitz_op_reader_read(blitz_reader *r, void *dst, size_t len);
BLITZ_API blitz_op blitz_op_reader_read_until(blitz_reader *r, int delim, void *dst, size_t max);

/* ---- the buffered writer --------------------------------------------------
 *
 * Bytes collect in the buffer and go out when it is full, on flush, and on
 * close. After an error every later op reports it. */

typedef struct blitz_writer {
    int64_t result; /* after READY: bytes accepted / 0 (flush, close) / < 0 */
    blitz_stream *stream;
    unsigned char *blitz__buf;
    size_t blitz__cap, blitz__len, blitz__sent;
    int blitz__owns, blitz__op, blitz__writing;
    int64_t blitz__err;
    const unsigned char *blitz__src;
    size_t blitz__srclen, blitz__taken;
} blitz_writer;

BLITZ_API int blitz_writer_init(blitz_writer *w, blitz_stream *st, void *buf, size_t cap);
/* Frees an allocated buffer; bytes not flushed are dropped. */
BLITZ_API void blitz_writer_deinit(blitz_writer *w);
BLITZ_API size_t blitz_writer_buffered(const blitz_writer *w);
/* Accepts at least one byte (waits for room only when the buffer is
 * full); result: bytes accepted. */
BLITZ_API blitz_poll blitz_writer_write(blitz_cx *cx, blitz_writer *w, const void *src, size_t len);
/* Accepts all len bytes (writes larger than the buffer go straight out). */
BLITZ_API blitz_poll blitz_writer_write_all(blitz_cx *cx, blitz_writer *w, const void *src,
                                            size_t len);
/* Writes out what is buffered; result 0. */
BLITZ_API blitz_poll blitz_writer_flush(blitz_cx *cx, blitz_writer *w);
/* Flushes, then ends the stream's write side; result 0. */
BLITZ_API blitz_poll blitz_writer_close(blitz_cx *cx, blitz_writer *w);
BLITZ_API void blitz_writer_cancel(blitz_cx *cx, void *writer);
BLITZ_API blitz_op blitz_op_writer_write_all(blitz_writer *w, const void *src, size_t len);
BLITZ_API blitz_op blitz_op_writer_flush(blitz_writer *w);
BLITZ_API blitz_op blitz_op_writer_write(blitz_writer *w, const void *src, size_t len);
BLITZ_API blitz_op blitz_op_writer_close(blitz_writer *w);

/* ---- copy -----------------------------------------------------------------
 *
 * Everything from src until its end into dst. The kernel moves the bytes
 * where it can: splice(2) between a pipe and a pipe or socket (through a
 * pipe of the op's own between two sockets), sendfile(2) from a file to a
 * socket or pipe; otherwise (a copy into a file, say), or when the kernel
 * refuses, read and write through a buffer. dst's write side is left
 * open. */

#define BLITZ_COPY_NO_SPLICE 1u /* always read and write through a buffer */

typedef struct blitz_copy {
    int64_t result;  /* after READY: bytes copied, or a negative code */
    uint64_t bytes;  /* copied so far */
    uint64_t kernel; /* of which moved by splice / sendfile */
    blitz_stream *src, *dst;
    unsigned flags;
    int blitz__mode, blitz__wait, blitz__eof;
    int blitz__pipe[2];
    size_t blitz__inpipe;
    unsigned char *blitz__buf;
    size_t blitz__len, blitz__off;
    blitz_io blitz__src_io, blitz__dst_io;
} blitz_copy;

/* Prepares a copy (flags: BLITZ_COPY_* or 0). BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_copy_init(blitz_copy *c, blitz_stream *src, blitz_stream *dst, unsigned flags);
BLITZ_API blitz_poll blitz_copy_run(blitz_cx *cx, blitz_copy *c);
/* Withdraws the copy and frees what it holds (the bytes in flight are
 * lost). On io_uring a receive or send of the copy may still be in the
 * kernel: its buffer goes when the kernel lets go, and the copy's own
 * waits finish later too, so before the copy is initialised again (or
 * its memory reused) wait for blitz_copy_settle. */
BLITZ_API void blitz_copy_cancel(blitz_cx *cx, void *copy);
/* READY once nothing of a cancelled copy is in the kernel any more (its
 * waits, and the streams' receive and send): the struct may then be
 * initialised again and the streams used by other ops. READY at once on
 * every backend but io_uring, and for a copy that finished. */
BLITZ_API blitz_poll blitz_copy_settle(blitz_cx *cx, blitz_copy *c);
BLITZ_API blitz_op blitz_op_copy(blitz_copy *c);

/* ---------------------------------------------------------------------------
 * Graceful shutdown
 *
 *   blitz_shutdown *sd;
 *   blitz_shutdown_new(rt, NULL, &sd);                (SIGINT and SIGTERM)
 *   ... the accept loop races its accept against the token:
 *   s->ops[0] = blitz_op_sock_accept(&s->acc, s->listener);
 *   s->ops[1] = blitz_op_cancel_token_wait(&s->tw, blitz_shutdown_token(sd));
 *   ... connections: blitz_shutdown_spawn(sd, conn_poll, &c, sizeof c);
 *   (a connection cancelled after the grace period closes its socket in
 *   its drop function: blitz_shutdown_spawn_ex with a drop that calls
 *   blitz_sock_close; its pending op is withdrawn for it)
 *   ... a supervising task:
 *   BLITZ_AWAIT(s, blitz_shutdown_run(cx, &s->run, sd, 5 * BLITZ_SEC));
 *   s->run.finished, s->run.cancelled
 *
 * blitz_shutdown_run waits for the trigger (blitz_shutdown_trigger from any
 * thread, or one of the signals), cancels the token at once (acceptors
 * stop), lets the tasks spawned with blitz_shutdown_spawn finish until the
 * grace period ends, cancels those still running, and reports how many
 * finished and how many were cancelled.
 * ------------------------------------------------------------------------- */

typedef struct blitz_shutdown blitz_shutdown;

typedef struct blitz_shutdown_opts {
    /* Signals that trigger the shutdown; nsignals 0 = SIGINT and SIGTERM,
     * nsignals < 0 = none. */
    const int *signals;
    int nsignals;
} blitz_shutdown_opts;

/* BLITZ_EINVAL, BLITZ_ENOMEM, or a signal set-up error. */
BLITZ_API int blitz_shutdown_new(blitz_runtime *rt, const blitz_shutdown_opts *opts,
                                 blitz_shutdown **out);
/* Starts the shutdown (any thread, idempotent). */
BLITZ_API int blitz_shutdown_trigger(blitz_shutdown *sd);
/* Nonzero once triggered. */
BLITZ_API int blitz_shutdown_triggered(const blitz_shutdown *sd);
/* Cancelled the moment the shutdown starts. */
BLITZ_API blitz_cancel_token *blitz_shutdown_token(blitz_shutdown *sd);
/* Spawns in-flight work the shutdown waits for (BLITZ_ECLOSED once the
 * grace period is over, BLITZ_ESHUTDOWN / BLITZ_ENOMEM as blitz_spawn). */
BLITZ_API int blitz_shutdown_spawn(blitz_shutdown *sd, blitz_poll_fn poll, const void *state,
                                   size_t size);
BLITZ_API int blitz_shutdown_spawn_ex(blitz_shutdown *sd, const blitz_spawn_opts *opts);
/* Tracked tasks spawned and not yet finished (blitz_serve's accept loops
 * are not counted). */
BLITZ_API size_t blitz_shutdown_in_flight(blitz_shutdown *sd);

typedef struct blitz_shutdown_run_op {
    int result; /* BLITZ_OK, BLITZ_EINVAL, BLITZ_EBUSY (another run) */
    int signo;  /* the signal that triggered it, 0 for a call */
    /* Of the tracked tasks still running at the trigger: */
    uint64_t finished;  /* completed by themselves */
    uint64_t cancelled; /* tracked tasks cancelled after the grace period */
    uint64_t blitz__deadline;
    size_t blitz__idx;
    int blitz__phase;
    blitz_shutdown *blitz__sd;
    blitz_timer blitz__timer;
    blitz_cancel_token_wait_op blitz__tw;
    blitz_combo blitz__combo;
    blitz_op blitz__ops[2];
    /* blitz_op_shutdown_run's arguments (kept when the run starts). */
    blitz_shutdown *blitz__arg_sd;
    int64_t blitz__arg_grace;
} blitz_shutdown_run_op;

/* Awaits the whole shutdown (see above); grace_ns <= 0 cancels the
 * tracked tasks at once. One run per coordinator. */
BLITZ_API blitz_poll blitz_shutdown_run(blitz_cx *cx, blitz_shutdown_run_op *op, blitz_shutdown *sd,
                                        int64_t grace_ns);
/* Withdraws a run (cancels every tracked task still running). */
BLITZ_API void blitz_shutdown_run_cancel(blitz_cx *cx, void *op);
/* blitz_shutdown_run as a blitz_op (cancel: blitz_shutdown_run_cancel). */
BLITZ_API blitz_op blitz_op_shutdown_run(blitz_shutdown_run_op *op, blitz_shutdown *sd,
                                         int64_t grace_ns);
/* Frees the coordinator (tracked tasks still running are cancelled). */
BLITZ_API int blitz_shutdown_free(blitz_shutdown *sd);

/* ---------------------------------------------------------------------------
 * Serving: an accept loop that ends with the shutdown, a task per connection
 *
 *   typedef struct { BLITZ_CORO; blitz_socket *sock; blitz_io io; char buf[4096]; } conn;
 *   blitz_serve_opts o = {.listener = l, .poll = conn_poll, .size = sizeof(conn),
 *                         .socket_offset = offsetof(conn, sock)};
 *   blitz_serve(sd, &o);
 *   ... then blitz_shutdown_run(sd, grace) as above.
 *
 * Each accepted connection gets a task of the shutdown (tracked: the run
 * lets it finish within the grace period, then cancels it) whose state is
 * `size` bytes, a copy of `state` (zero-filled when NULL) with the socket
 * stored at `socket_offset`. The runtime closes that socket when the task
 * ends, however it ends (completed, cancelled, timed out): the task never
 * closes it (blitz_sock_shutdown is fine). An accept error (out of
 * descriptors, say) is retried 10 ms later. At the trigger the accept loop
 * stops and closes the listener; the run waits for that, and does not
 * count the loop as a connection.
 * ------------------------------------------------------------------------- */

typedef struct blitz_serve_opts {
    blitz_socket *listener; /* required; closed by the loop (after BLITZ_OK) */
    blitz_poll_fn poll;     /* required: runs each connection */
    const void *state;      /* optional template, read at each accept */
    size_t size;            /* bytes of a connection's state */
    size_t socket_offset;   /* where its socket goes: offsetof(your_state, sock) */
    blitz_drop_fn drop;     /* optional: frees what a connection's state owns */
    int64_t timeout_ns;     /* optional: each connection's limit (0: none) */
} blitz_serve_opts;

/* Starts serving `listener` on the shutdown's runtime. BLITZ_EINVAL (a
 * NULL argument, the socket field outside `size`, a negative timeout),
 * BLITZ_ECLOSED (the grace period is over), BLITZ_ENOMEM, BLITZ_ESHUTDOWN;
 * on an error the listener is still the caller's. Several listeners may
 * be served under one shutdown. */
BLITZ_API int blitz_serve(blitz_shutdown *sd, const blitz_serve_opts *opts);
/* ====[ END src/api/api_stream.h ]========================================= */
/* ----[ RESUME src/api/blitz_api.h ] */

#ifdef __cplusplus
}
#endif
/* ====[ END src/api/blitz_api.h ]========================================== */
#endif /* BLITZ_H */

#if defined(BLITZ_IMPLEMENTATION) && !defined(BLITZ__IMPLEMENTATION_INCLUDED)
#define BLITZ__IMPLEMENTATION_INCLUDED 1
#define BLITZ__AMALGAMATION 1
/* ########################################################################## */
/* LAYER platform: atomics, threads, parking, clock, memory, errors, syscalls */
/* ########################################################################## */
/* ====[ BEGIN src/platform/error.c ]======================================= */
/* >>platform/error */
/* Error codes: blitz_strerror and blitz_err_name, both generated from
 * BLITZ_ERRNO_MAP, and the mapping from errno values. */
/* ====[ BEGIN src/platform/base.h ]======================================== */
/* >>platform/base */
/* The platform layer's internal API for every layer above it:
 * configuration defaults and limits, linkage, locks and parkers. The only
 * system includes are in platform.h; everything here is private (blitz__
 * prefix) and may change at any time. */
#ifndef BLITZ__PLATFORM_BASE_H
#define BLITZ__PLATFORM_BASE_H
#ifdef __cplusplus
#error \
    "blitz.h: the implementation is C11. Define BLITZ_IMPLEMENTATION in a .c file compiled as C; the declarations compile as C++ in every other file."
#endif

/* ====[ BEGIN src/platform/platform.h ]==================================== */
/* >>platform/platform */
/* The only place that includes system headers, grouped by OS. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

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
#define BLITZ__LINUX      0
#define BLITZ_NO_IO_URING 1
#define BLITZ_NO_EPOLL    1
#endif

/* Darwin and the BSDs: kqueue, and a wait on an address where the system
 * has one (Darwin's __ulock calls, FreeBSD's _umtx_op); the others park
 * on a condition variable. */
#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__) || \
    defined(__DragonFly__)
#include <sys/event.h>
#include <sys/time.h>
#define BLITZ__HAS_KQUEUE 1
#if defined(__APPLE__)
#include <sys/uio.h>
/* libSystem's wait on an address (macOS 10.12 and later); the headers do
 * not declare it. */
int __ulock_wait(uint32_t operation, void *addr, uint64_t value, uint32_t timeout_us);
int __ulock_wake(uint32_t operation, void *addr, uint64_t wake_value);
#define BLITZ__HAS_FUTEX 1
#elif defined(__FreeBSD__)
#include <sys/types.h>
#include <sys/umtx.h>
#define BLITZ__HAS_FUTEX 1
#endif
#elif defined(BLITZ__KQUEUE_EMULATION)
/* The test suite's kqueue over epoll (a header path): the kqueue backend's
 * own code runs on Linux. Never defined outside the test build. */
#include BLITZ__KQUEUE_EMULATION
#define BLITZ__HAS_KQUEUE 1
#else
#define BLITZ__HAS_KQUEUE 0
#endif

#if !defined(BLITZ__HAS_FUTEX)
#define BLITZ__HAS_FUTEX 0
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* Files, DNS, signals and processes. */
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>

/* A system header included before blitz.h in the implementation file fixes
 * the C library's feature set before blitz.h can ask for _GNU_SOURCE. Plain
 * POSIX 2008 (the compilers' default GNU dialects, or an explicit
 * _POSIX_C_SOURCE) is enough: the few Linux extensions used here are
 * declared below when the C library hid them. Strict ISO C hides POSIX
 * itself, which no declaration here can make up for. */
#if !defined(CLOCK_MONOTONIC) || !defined(O_CLOEXEC)
#error \
    "blitz.h: POSIX 2008 declarations are hidden (strict -std=c11 with a system header included first, or _POSIX_C_SOURCE below 200809L?). In the file that defines BLITZ_IMPLEMENTATION, include blitz.h before any system header, or define _GNU_SOURCE (or _POSIX_C_SOURCE=200809L) at its top, or compile with -std=gnu11."
#endif
#if defined(__linux__)
#ifndef POLLRDHUP
#define POLLRDHUP 0x2000
#endif
#ifndef IOV_MAX
#define IOV_MAX 1024 /* the kernel's UIO_MAXIOV */
#endif
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || \
    defined(__riscv) || defined(__loongarch__)
/* The asm-generic values these architectures share. */
#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS 0x20
#endif
#ifndef MAP_POPULATE
#define MAP_POPULATE 0x8000
#endif
#ifndef SO_REUSEPORT
#define SO_REUSEPORT 15
#endif
#endif
/* Two GNU extensions, declared when the C library hid them (glibc's own
 * declaration of accept4 takes a transparent union, not this type). */
#if (defined(__GLIBC__) && !defined(__USE_GNU)) || (!defined(__GLIBC__) && !defined(_GNU_SOURCE))
int accept4(int fd, struct sockaddr *addr, socklen_t *addr_len, int flags);
int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *mask);
#endif
#endif

/* Socket options some systems spell differently. */
#if defined(TCP_KEEPIDLE)
#define BLITZ__TCP_KEEPIDLE TCP_KEEPIDLE
#else
#define BLITZ__TCP_KEEPIDLE TCP_KEEPALIVE /* Apple's name */
#endif
#if defined(IPV6_ADD_MEMBERSHIP)
#define BLITZ__IPV6_JOIN_GROUP  IPV6_ADD_MEMBERSHIP
#define BLITZ__IPV6_LEAVE_GROUP IPV6_DROP_MEMBERSHIP
#else
#define BLITZ__IPV6_JOIN_GROUP  IPV6_JOIN_GROUP /* the BSDs' and Apple's names */
#define BLITZ__IPV6_LEAVE_GROUP IPV6_LEAVE_GROUP
#endif

/* struct ip_mreq's layout, which the kernel reads (the C library hides the
 * struct without _DEFAULT_SOURCE). */
struct blitz__ip_mreq {
    struct in_addr multiaddr;
    struct in_addr interface_addr;
};
/* ====[ END src/platform/platform.h ]====================================== */
/* ----[ RESUME src/platform/base.h ] */
/* ====[ BEGIN src/platform/atomic.h ]====================================== */
/* >>platform/atomic */
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

/* A 16-bit word shared with the kernel (io_uring's buffer ring tail). */
static inline void blitz__u16_field_store(uint16_t *p, uint16_t x, int o) {
    __atomic_store_n(p, x, o);
}

/* A counter written by one thread and read by others: a plain load+store
 * (no locked RMW) is enough because there is a single writer. The store is
 * release (free on x86 and cheap elsewhere) so that a reader that acquires
 * the count also sees what the writer did before (see blitz__count_freed). */
static inline void blitz__u64_bump(blitz__atomic_u64 *a, uint64_t n) {
    __atomic_store_n(&a->v, __atomic_load_n(&a->v, BLITZ__RELAXED) + n, BLITZ__RELEASE);
}

/* gcc's ThreadSanitizer does not model fences and says so (-Wtsan) at
 * every use; the header must build warning-free there too. */
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define BLITZ__TSAN_FENCE_QUIET 1
#endif
static inline void blitz__fence_seq_cst(void) {
#ifdef BLITZ__TSAN_FENCE_QUIET
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
    __atomic_thread_fence(BLITZ__SEQ_CST);
#ifdef BLITZ__TSAN_FENCE_QUIET
#pragma GCC diagnostic pop
#endif
}

static inline void blitz__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
/* ====[ END src/platform/atomic.h ]======================================== */
/* ----[ RESUME src/platform/base.h ] */

/* src/api/blitz_api.h already included */

/* ---- configuration ------------------------------------------------------ */

#ifndef BLITZ_PRIVATE
#define BLITZ_PRIVATE static __attribute__((unused))
#endif

#ifndef BLITZ_ASSERT
#define BLITZ_ASSERT(c) assert(c)
#endif

/* Debug builds check handles (handle_check.c). The rule of the checked
 * BLITZ_END in blitz_api.h, applied in the implementation's file. */
#ifndef BLITZ_DEBUG
#ifdef NDEBUG
#define BLITZ__CHECK_HANDLES 0
#else
#define BLITZ__CHECK_HANDLES 1
#endif
#elif BLITZ_DEBUG
#define BLITZ__CHECK_HANDLES 1
#else
#define BLITZ__CHECK_HANDLES 0
#endif

#if defined(BLITZ_MALLOC) != defined(BLITZ_FREE)
#error "define both BLITZ_MALLOC and BLITZ_FREE, or neither"
#endif
#ifndef BLITZ_MALLOC
#define BLITZ_MALLOC(size)       malloc(size)
#define BLITZ_FREE(ptr)          free(ptr)
#define BLITZ__DEFAULT_ALLOCATOR 1
#endif

/* Where a test makes an allocation fail: the test program defines it (to
 * nonzero for a failure at `site`) before including blitz. */
#ifndef BLITZ__FAULT
#define BLITZ__FAULT(site) 0
#endif

#ifndef BLITZ_LOCAL_QUEUE_CAPACITY
#define BLITZ_LOCAL_QUEUE_CAPACITY 256
#endif
#ifndef BLITZ_BUDGET_PER_TICK
#define BLITZ_BUDGET_PER_TICK 128
#endif
/* Task polls between two non-blocking looks at epoll by a thread that
 * runs tasks (Tokio's event interval; see blitz__io_between_ticks). A
 * count at least this large makes the next look due. */
#define BLITZ__IO_EVENT_INTERVAL 61u
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
_Static_assert(BLITZ_MAX_LIFO_POLLS_PER_TICK >= 1 && BLITZ_MAX_LIFO_POLLS_PER_TICK <= 1024,
               "BLITZ_MAX_LIFO_POLLS_PER_TICK must be 1..1024");
_Static_assert(BLITZ_CACHE_LINE >= 8 && BLITZ_CACHE_LINE <= 4096 &&
                   (BLITZ_CACHE_LINE & (BLITZ_CACHE_LINE - 1)) == 0,
               "BLITZ_CACHE_LINE must be a power of two in 8..4096");
_Static_assert(BLITZ_MAX_STATE_SIZE >= 1 && BLITZ_MAX_STATE_SIZE <= (1u << 30),
               "BLITZ_MAX_STATE_SIZE must be 1..2^30 bytes");

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
/* Not evaluated, but what it names counts as used (no unused warnings). */
#define BLITZ__STAT(expr) ((void)sizeof((expr), 0))
#else
#define BLITZ__STAT(expr) (expr)
#endif

/* ---- threads and parking (thread.c) -------------------------------------- */

/* The per-thread context (core/core.h) that thread.c keeps in the one
 * thread-local the runtime has. */
typedef struct blitz__context blitz__context;

#if BLITZ__HAS_FUTEX
/* A futex lock that spins briefly first: the critical sections it guards
 * are a few pointer moves, far shorter than a sleep and a wake. */
typedef struct {
    blitz__atomic_u32 state; /* 0 free, 1 held, 2 held with sleepers */
} blitz__mutex;
#else
typedef pthread_mutex_t blitz__mutex;
#endif
/* ---- parking and idle workers (thread.c, idle.c) -------------------------- */

#define BLITZ__UNPARKED 0u
#define BLITZ__PARKED   1u
#define BLITZ__NOTIFIED 2u
/* Parked inside the I/O backend: unpark writes the driver's wake fd. */
#define BLITZ__PARKED_DRIVER 3u

#if BLITZ__HAS_KQUEUE
/* A parker's wake_fd that names a kqueue to trigger (its EVFILT_USER
 * knote, ident BLITZ__KQ_WAKE_IDENT) instead of a descriptor to write:
 * below -1, so it is never a descriptor. */
#define BLITZ__WAKE_KQ(kq)   (-2 - (kq))
#define BLITZ__KQ_WAKE_IDENT 1u
#endif

typedef struct blitz__parker {
    blitz__atomic_u32 state; /* UNPARKED / PARKED / NOTIFIED / PARKED_DRIVER; the futex word */
    int wake_fd;             /* the I/O driver's eventfd or pipe, BLITZ__WAKE_KQ(kq), or -1 */
#if !BLITZ__HAS_FUTEX
    pthread_mutex_t lock;
    pthread_cond_t cond;
#endif
} blitz__parker;

/* ---- handle checks (handle_check.c) --------------------------------------- */

/* Magic words of live heap handles; their last release overwrites them. */
#define BLITZ__MAGIC_CHAN      0x6368616eu
#define BLITZ__MAGIC_BROADCAST 0x62636173u
#define BLITZ__MAGIC_WATCH     0x77617463u
#define BLITZ__MAGIC_GROUP     0x67727570u
#define BLITZ__MAGIC_SOCKET    0x736f636bu
#define BLITZ__MAGIC_DEAD      0xdeadbeefu

BLITZ_PRIVATE void blitz__handle_misuse(const char *func, const char *what);
/* Frees `raw`, in a debug build after the quarantine (see handle_check.c). */
BLITZ_PRIVATE void blitz__free_handle(void *raw);

#if BLITZ__CHECK_HANDLES
/* A struct member (no semicolon after it): the magic word. */
#define BLITZ__MAGIC_MEMBER      uint32_t blitz__magic;
#define BLITZ__MAGIC_SET(obj, m) ((obj)->blitz__magic = (m))
/* Stops the program when `obj` (not NULL) is no live handle of its kind;
 * `what` names the kind and the release ("channel used after its last
 * release"). */
#define BLITZ__MAGIC_CHECK(obj, m, what)                          \
    do {                                                          \
        if ((obj) && BLITZ__UNLIKELY((obj)->blitz__magic != (m))) \
            blitz__handle_misuse(__func__, what);                 \
    } while (0)
#else
#define BLITZ__MAGIC_MEMBER
#define BLITZ__MAGIC_SET(obj, m)         ((void)0)
#define BLITZ__MAGIC_CHECK(obj, m, what) ((void)0)
#endif

#endif
/* ====[ END src/platform/base.h ]========================================== */
/* ----[ RESUME src/platform/error.c ] */

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

/* The symbol the declarations refer to (see its declaration). */
BLITZ_API void blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file(void) {}

/* Called by BLITZ_END in a debug build; a poll function's state that was
 * not zero-filled is a bug to stop at, not a task to finish quietly. */
BLITZ_API void blitz_coro_bad_resume(const char *file, int line, const char *func, int resume) {
    fprintf(stderr,
            "blitz: %s:%d: %s: resume point %d is no BLITZ_AWAIT or BLITZ_YIELD "
            "of this poll function: the task state must start zero-filled\n",
            file, line, func, resume);
    abort();
}

/* The code for a system errno value: the one place where errno values
 * become blitz codes, so that the codes mean the same on every system.
 * Names that share a value on one system (EAGAIN / EWOULDBLOCK,
 * EOPNOTSUPP / ENOTSUP, EDEADLK / EDEADLOCK) are separate on another. */
BLITZ_PRIVATE int blitz__from_errno(int e) {
    switch (e) {
#define BLITZ__ERR_FROM_ERRNO(name, value, text) \
    case name:                                   \
        return value;
        BLITZ_SYS_ERR_MAP(BLITZ__ERR_FROM_ERRNO)
#undef BLITZ__ERR_FROM_ERRNO
#if defined(EWOULDBLOCK) && EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
        return BLITZ_EAGAIN;
#endif
#if defined(ENOTSUP) && ENOTSUP != EOPNOTSUPP
    case ENOTSUP:
        return BLITZ_EOPNOTSUPP;
#endif
#if defined(EDEADLOCK) && EDEADLOCK != EDEADLK
    case EDEADLOCK:
        return BLITZ_EDEADLK;
#endif
    case 0:
        /* A call that failed without saying why. */
        return BLITZ_EIO;
    default:
        return BLITZ_EUNKNOWN;
    }
}
/* ====[ END src/platform/error.c ]========================================= */
/* ====[ BEGIN src/platform/fd_guard.c ]==================================== */
/* >>platform/fd_guard */
/* The runtime's own descriptors (rings, epoll, eventfds, the signal
 * thread's pipe) are kept above stdin, stdout and stderr. A program
 * started with one of those closed would otherwise find a runtime
 * descriptor at 0, 1 or 2: reading "stdin" (or adopting it as a socket)
 * would consume the runtime's wake-ups, and closing it would close the
 * runtime's descriptor under it. */
/* src/platform/base.h already included */

/* Returns `fd`, or a close-on-exec duplicate at 3 or above (and closes
 * `fd`) when it is 0, 1 or 2. Keeps `fd` when the duplicate cannot be made:
 * a low number is a hazard only for a program that misuses stdio, running
 * out of descriptors is one for every program. */
BLITZ_PRIVATE int blitz__fd_above_stdio(int fd) {
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (moved < 0)
        return fd;
    close(fd);
    return moved;
}
/* ====[ END src/platform/fd_guard.c ]====================================== */
/* ====[ BEGIN src/platform/alloc.c ]======================================= */
/* >>platform/alloc */
/* Memory: every allocation blitz makes goes through BLITZ_MALLOC/BLITZ_FREE
 * (malloc/free unless the user defines both). */
/* src/platform/base.h already included */

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
/* ====[ END src/platform/alloc.c ]========================================= */
/* ====[ BEGIN src/platform/handle_check.c ]================================ */
/* >>platform/handle_check */
/* Debug checks of handles used after their release (BLITZ__CHECK_HANDLES:
 * on unless NDEBUG, or as BLITZ_DEBUG says; none of it in a release
 * build).
 *
 * A check must not read memory that may already belong to something else,
 * so poisoning alone is not enough:
 * - Heap handles (channels, task groups, sockets) carry a magic word that
 *   their last release overwrites, and their memory goes through a
 *   quarantine: the last BLITZ__QUARANTINE frees of the process wait here,
 *   so a stale pointer still reads the poisoned word instead of a new
 *   object's.
 * - Join handles point into task blocks that the slab allocator gives to
 *   the next task at once. A handle carries its block's generation in the
 *   pointer's unused top 16 bits; blitz_task_release bumps the generation,
 *   so a stale handle no longer matches even when its block holds a live
 *   task again (core/task_alloc.c keeps the generations, core/join.c
 *   compares). */
/* src/platform/base.h already included */

BLITZ_PRIVATE void blitz__handle_misuse(const char *func, const char *what) {
    fprintf(stderr, "blitz: %s: %s\n", func, what);
    abort();
}

#if BLITZ__CHECK_HANDLES
#define BLITZ__QUARANTINE 64u

static struct {
    blitz__atomic_u32 lock;
    uint32_t next;
    void *held[BLITZ__QUARANTINE];
} blitz__quarantine;

BLITZ_PRIVATE void blitz__free_handle(void *raw) {
    if (!raw)
        return;
    uint32_t free = 0;
    while (!blitz__u32_cas_weak(&blitz__quarantine.lock, &free, 1, BLITZ__ACQUIRE)) {
        free = 0;
        sched_yield();
    }
    void *old = blitz__quarantine.held[blitz__quarantine.next];
    blitz__quarantine.held[blitz__quarantine.next] = raw;
    blitz__quarantine.next = (blitz__quarantine.next + 1) % BLITZ__QUARANTINE;
    blitz__u32_store(&blitz__quarantine.lock, 0, BLITZ__RELEASE);
    blitz__free(old);
}
#else
BLITZ_PRIVATE void blitz__free_handle(void *raw) {
    blitz__free(raw);
}
#endif
/* ====[ END src/platform/handle_check.c ]================================== */
/* ====[ BEGIN src/platform/linux.c ]======================================= */
/* >>platform/linux */
/* Linux implementations of the calls platform/posix.c implements
 * portably: futex waits, the CPUs this process may run on, flags given at
 * creation instead of fcntl afterwards (no window in which a concurrent
 * exec inherits the descriptor), pidfds, and the kernel's own copies
 * between descriptors. */
/* src/platform/base.h already included */

#if BLITZ__HAS_FUTEX && BLITZ__LINUX
/* Sleeps while *word == expected, at most timeout_ns (0 = no limit).
 * Spurious returns are allowed; callers re-check. */
BLITZ_PRIVATE void blitz__futex_wait(blitz__atomic_u32 *word, uint32_t expected,
                                     uint64_t timeout_ns) {
    struct timespec ts, *tsp = NULL;
    if (timeout_ns) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tsp = &ts;
    }
    syscall(SYS_futex, &word->v, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
}
BLITZ_PRIVATE void blitz__futex_wake(blitz__atomic_u32 *word, int n) {
    syscall(SYS_futex, &word->v, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}
#endif

#if BLITZ__LINUX

/* The CPUs the affinity mask allows (a container or taskset may allow
 * fewer than are online), or 0 when unknown. */
BLITZ_PRIVATE uint32_t blitz__affinity_cpu_count(void) {
#if defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return (uint32_t)n;
    }
#endif
    return 0;
}

#ifndef SPLICE_F_MOVE
#define SPLICE_F_MOVE 1u
#endif
#ifndef SPLICE_F_NONBLOCK
#define SPLICE_F_NONBLOCK 2u
#endif
#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ 1031
#endif

BLITZ_PRIVATE int blitz__pipe_open(int fds[2], int nonblock) {
    /* By number: glibc hides pipe2 without _GNU_SOURCE. */
    if (syscall(SYS_pipe2, fds, O_CLOEXEC | (nonblock ? O_NONBLOCK : 0)) < 0)
        return blitz__from_errno(errno);
    return BLITZ_OK;
}

BLITZ_PRIVATE int blitz__socket_open(int family, int type, int nonblock) {
    int fd = socket(family, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    return fd < 0 ? blitz__from_errno(errno) : fd;
}

BLITZ_PRIVATE int blitz__socketpair_open(int family, int type, int nonblock, int sv[2]) {
    if (socketpair(family, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0, sv) < 0)
        return blitz__from_errno(errno);
    return BLITZ_OK;
}

BLITZ_PRIVATE int blitz__proc_exit_fd(int pid) {
#if defined(SYS_pidfd_open)
    int fd = blitz__fd_above_stdio((int)syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0)
        return -1;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    return -1;
#endif
}

BLITZ_PRIVATE int blitz__splice_available(void) {
    return 1;
}

BLITZ_PRIVATE int64_t blitz__splice(int in, int out, size_t n) {
    long r = syscall(SYS_splice, in, NULL, out, NULL, n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    return r < 0 ? blitz__from_errno(errno) : (int64_t)r;
}

BLITZ_PRIVATE int64_t blitz__sendfile(int out, int in, size_t n) {
    long r = syscall(SYS_sendfile, out, in, NULL, n);
    return r < 0 ? blitz__from_errno(errno) : (int64_t)r;
}

BLITZ_PRIVATE void blitz__pipe_grow(int fd, int size) {
    fcntl(fd, F_SETPIPE_SZ, size);
}

/* The I/O driver's attempts: -1 with errno (EAGAIN and the like are for
 * the caller to read), never SIGPIPE, never blocking. */
BLITZ_PRIVATE int blitz__accept_nb(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
BLITZ_PRIVATE ssize_t blitz__send_nosig(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}
BLITZ_PRIVATE ssize_t blitz__sendmsg_nosig(int fd, const struct msghdr *m) {
    return sendmsg(fd, m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The events poll(2) watches for a reader: the peer's end of the stream
 * as well. */
BLITZ_PRIVATE short blitz__poll_read_events(void) {
    return (short)(POLLIN | POLLRDHUP);
}

/* poll(2) with a timespec limit (NULL: none). */
BLITZ_PRIVATE int blitz__poll_wait(struct pollfd *fds, nfds_t n, const struct timespec *limit) {
    return ppoll(fds, n, limit, NULL);
}

/* Takes back a pending SIGPIPE of `set` (blocked in this thread) without
 * waiting. */
BLITZ_PRIVATE void blitz__sigpipe_take(const sigset_t *set) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(set, NULL, &zero) < 0 && errno == EINTR) {
    }
}

#endif
/* ====[ END src/platform/linux.c ]========================================= */
/* ====[ BEGIN src/platform/posix.c ]======================================= */
/* >>platform/posix */
/* The file, descriptor, socket, process and kernel-copy calls that differ
 * by system, in portable POSIX: the implementation on systems without one
 * of their own (platform/linux.c). */
/* src/platform/base.h already included */

/* ---- portable with per-system spellings --------------------------------- */

/* A file's modification, access and status-change times (struct stat
 * names its timespecs differently on Apple systems). */
BLITZ_PRIVATE void blitz__stat_times(const struct stat *st, struct timespec *modified,
                                     struct timespec *accessed, struct timespec *changed) {
#if defined(__APPLE__)
    *modified = st->st_mtimespec;
    *accessed = st->st_atimespec;
    *changed = st->st_ctimespec;
#else
    *modified = st->st_mtim;
    *accessed = st->st_atim;
    *changed = st->st_ctim;
#endif
}

/* Flushes a file's data (and the metadata needed to read it back): 0 or
 * -1 with errno. Apple systems have no fdatasync. */
BLITZ_PRIVATE int blitz__fdatasync(int fd) {
#if defined(__APPLE__)
    return fsync(fd);
#else
    return fdatasync(fd);
#endif
}

/* ---- the portable versions of platform/linux.c ---------------------------- */

/* Each returns a descriptor, a count or BLITZ_OK, or a negative blitz
 * code; none leaves errno for the caller. */

#if !BLITZ__LINUX

/* The CPUs this process may run on when the system says, else 0 (the
 * caller then counts the online ones). */
BLITZ_PRIVATE uint32_t blitz__affinity_cpu_count(void) {
    return 0;
}

/* Close-on-exec and, when asked, O_NONBLOCK on a fresh descriptor; closes
 * it and returns the code on failure. */
static int blitz__fd_set_flags(int fd, int nonblock) {
    int fl = 0;
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 &&
        (!nonblock || ((fl = fcntl(fd, F_GETFL)) >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0)))
        return fd;
    int e = errno;
    close(fd);
    return blitz__from_errno(e);
}

/* A pipe whose ends close on exec and, when `nonblock`, do not block.
 * BLITZ_OK or a code. */
BLITZ_PRIVATE int blitz__pipe_open(int fds[2], int nonblock) {
    if (pipe(fds) < 0)
        return blitz__from_errno(errno);
    for (int i = 0; i < 2; i++) {
        int rc = blitz__fd_set_flags(fds[i], nonblock);
        if (rc < 0) {
            close(fds[1 - i]);
            return rc;
        }
    }
    return BLITZ_OK;
}

/* A socket's writes to a closed peer fail with EPIPE instead of raising
 * SIGPIPE where the system has the option (MSG_NOSIGNAL is Linux's). */
static int blitz__sock_no_sigpipe(int fd) {
#if defined(SO_NOSIGPIPE)
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one) < 0) {
        int e = errno;
        close(fd);
        return blitz__from_errno(e);
    }
#endif
    return fd;
}

/* A socket that closes on exec and, when `nonblock`, does not block: the
 * descriptor or a code. */
BLITZ_PRIVATE int blitz__socket_open(int family, int type, int nonblock) {
    int fd = socket(family, type, 0);
    if (fd < 0)
        return blitz__from_errno(errno);
    fd = blitz__fd_set_flags(fd, nonblock);
    return fd < 0 ? fd : blitz__sock_no_sigpipe(fd);
}

/* A connected pair of `type` sockets, flags as blitz__socket_open. */
BLITZ_PRIVATE int blitz__socketpair_open(int family, int type, int nonblock, int sv[2]) {
    if (socketpair(family, type, 0, sv) < 0)
        return blitz__from_errno(errno);
    for (int i = 0; i < 2; i++) {
        int rc = blitz__fd_set_flags(sv[i], nonblock);
        if (rc >= 0)
            rc = blitz__sock_no_sigpipe(sv[i]);
        if (rc < 0) {
            close(sv[1 - i]);
            return rc;
        }
    }
    return BLITZ_OK;
}

#if !BLITZ__HAS_KQUEUE
/* A descriptor that polls readable once child `pid` has exited (it closes
 * on exec and sits above stdio), or -1: the waiter then naps and retries.
 * The kqueue systems have one (platform/bsd.c). */
BLITZ_PRIVATE int blitz__proc_exit_fd(int pid) {
    (void)pid;
    return -1;
}
#endif

/* Whether the kernel can move bytes between descriptors itself
 * (blitz__splice and blitz__sendfile do more than fail). */
BLITZ_PRIVATE int blitz__splice_available(void) {
    return 0;
}

/* Moves up to n bytes from `in` to `out`, one of which is a pipe, without
 * blocking: the count, 0 at end of input, or a code. */
BLITZ_PRIVATE int64_t blitz__splice(int in, int out, size_t n) {
    (void)in;
    (void)out;
    (void)n;
    return BLITZ_ENOSYS;
}

/* Moves up to n bytes from the file `in` (at its offset) to `out`: the
 * count, 0 at end of file, or a code. */
BLITZ_PRIVATE int64_t blitz__sendfile(int out, int in, size_t n) {
    (void)out;
    (void)in;
    (void)n;
    return BLITZ_ENOSYS;
}

/* Asks for a pipe buffer of `size` bytes; a hint, ignored where pipes
 * have a fixed size. */
BLITZ_PRIVATE void blitz__pipe_grow(int fd, int size) {
    (void)fd;
    (void)size;
}

/* The I/O driver's attempts: -1 with errno, never blocking. The accepted
 * socket gets its flags right after (a fork+exec in between may inherit
 * it, which Linux's accept4 avoids); sockets made here carry SO_NOSIGPIPE
 * where it exists, and elsewhere callers block SIGPIPE around writes. */
BLITZ_PRIVATE int blitz__accept_nb(int fd) {
    int s = accept(fd, NULL, NULL);
    if (s < 0)
        return -1;
    int fl = fcntl(s, F_GETFL);
    int ok =
        fl >= 0 && fcntl(s, F_SETFL, fl | O_NONBLOCK) == 0 && fcntl(s, F_SETFD, FD_CLOEXEC) == 0;
#if defined(SO_NOSIGPIPE)
    int one = 1;
    ok = ok && setsockopt(s, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one) == 0;
#endif
    if (!ok) {
        int e = errno;
        close(s);
        errno = e;
        return -1;
    }
    return s;
}
BLITZ_PRIVATE ssize_t blitz__send_nosig(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_DONTWAIT);
}
BLITZ_PRIVATE ssize_t blitz__sendmsg_nosig(int fd, const struct msghdr *m) {
    return sendmsg(fd, m, MSG_DONTWAIT);
}

/* The events poll(2) watches for a reader (a readable end of stream shows
 * as POLLIN). */
BLITZ_PRIVATE short blitz__poll_read_events(void) {
    return POLLIN;
}

/* poll(2) with a timespec limit (NULL: none), rounded up to milliseconds
 * (Darwin has no ppoll). */
BLITZ_PRIVATE int blitz__poll_wait(struct pollfd *fds, nfds_t n, const struct timespec *limit) {
    int ms = -1;
    if (limit) {
        uint64_t m =
            ((uint64_t)limit->tv_sec * 1000000000u + (uint64_t)limit->tv_nsec + 999999u) / 1000000u;
        ms = m > INT_MAX ? INT_MAX : (int)m;
    }
    return poll(fds, n, ms);
}

/* Takes back a SIGPIPE of `set` that sigpending showed pending while it
 * is blocked in this thread (no sigtimedwait on Darwin: sigwait returns
 * at once for a pending signal; a write's SIGPIPE is the writing
 * thread's own, so no other thread takes it first). */
BLITZ_PRIVATE void blitz__sigpipe_take(const sigset_t *set) {
    int sig;
    while (sigwait(set, &sig) == EINTR) {
    }
}

#endif
/* ====[ END src/platform/posix.c ]========================================= */
/* ====[ BEGIN src/platform/bsd.c ]========================================= */
/* >>platform/bsd */
/* Darwin and the BSDs: waits on a word (Darwin's __ulock calls, FreeBSD's
 * _umtx_op; the other BSDs park on a condition variable, thread.c), the
 * kqueue wake-up of a thread blocked in kevent, and a child's exit as a
 * descriptor (a kqueue holding the child's EVFILT_PROC NOTE_EXIT: it polls
 * readable once the child has exited).
 *
 * The kqueue parts also build on Linux in the test suite, over its kqueue
 * emulation; the rest needs the real systems. */
/* src/platform/base.h already included */

#if defined(__APPLE__)
/* <sys/ulock.h>'s values (xnu), stable since macOS 10.12. */
#define BLITZ__UL_COMPARE_AND_WAIT 1u
#define BLITZ__ULF_WAKE_ALL        0x00000100u
#define BLITZ__ULF_NO_ERRNO        0x01000000u

/* Sleeps while *word == expected, at most timeout_ns (0 = no limit);
 * spurious returns are allowed. The limit is in microseconds, rounded up
 * (a zero would mean no limit). */
BLITZ_PRIVATE void blitz__futex_wait(blitz__atomic_u32 *word, uint32_t expected,
                                     uint64_t timeout_ns) {
    uint64_t us = timeout_ns ? (timeout_ns + 999u) / 1000u : 0;
    if (us > UINT32_MAX)
        us = UINT32_MAX;
    __ulock_wait(BLITZ__UL_COMPARE_AND_WAIT | BLITZ__ULF_NO_ERRNO, &word->v, expected,
                 (uint32_t)us);
}
BLITZ_PRIVATE void blitz__futex_wake(blitz__atomic_u32 *word, int n) {
    __ulock_wake(BLITZ__UL_COMPARE_AND_WAIT | BLITZ__ULF_NO_ERRNO |
                     (n > 1 ? BLITZ__ULF_WAKE_ALL : 0u),
                 &word->v, 0);
}
#elif defined(__FreeBSD__)
/* FreeBSD: not compiled on the project's machines (no FreeBSD headers
 * there); _umtx_op(2) as documented for FreeBSD 13. */
BLITZ_PRIVATE void blitz__futex_wait(blitz__atomic_u32 *word, uint32_t expected,
                                     uint64_t timeout_ns) {
    struct _umtx_time t;
    memset(&t, 0, sizeof t);
    t._timeout.tv_sec = (time_t)(timeout_ns / 1000000000u);
    t._timeout.tv_nsec = (long)(timeout_ns % 1000000000u);
    t._flags = 0; /* relative */
    t._clockid = CLOCK_MONOTONIC;
    _umtx_op(&word->v, UMTX_OP_WAIT_UINT_PRIVATE, expected,
             timeout_ns ? (void *)(uintptr_t)sizeof t : NULL, timeout_ns ? &t : NULL);
}
BLITZ_PRIVATE void blitz__futex_wake(blitz__atomic_u32 *word, int n) {
    _umtx_op(&word->v, UMTX_OP_WAKE_PRIVATE, n, NULL, NULL);
}
#endif

#if BLITZ__HAS_KQUEUE

/* Ends the wait of a thread blocked in kevent on `kq`: triggers its
 * EVFILT_USER knote (registered with EV_CLEAR, so one delivery resets it;
 * a trigger before the wait is kept until then). */
BLITZ_PRIVATE void blitz__kqueue_trigger(int kq) {
    struct kevent ev;
    EV_SET(&ev, BLITZ__KQ_WAKE_IDENT, EVFILT_USER, 0, NOTE_TRIGGER, 0, NULL);
    while (kevent(kq, &ev, 1, NULL, 0, NULL) < 0 && errno == EINTR) {
    }
}

#if !BLITZ__LINUX
/* A kqueue that turns readable once child `pid` has exited (it closes on
 * exec and sits above stdio), or -1: the waiter then naps and retries.
 * Registering a child that has already exited fails on some systems,
 * which the retrying waiter covers. */
BLITZ_PRIVATE int blitz__proc_exit_fd(int pid) {
    int kq = blitz__fd_above_stdio(kqueue());
    if (kq < 0)
        return -1;
    struct kevent ev;
    EV_SET(&ev, (uintptr_t)pid, EVFILT_PROC, EV_ADD | EV_ONESHOT, NOTE_EXIT, 0, NULL);
    if (fcntl(kq, F_SETFD, FD_CLOEXEC) < 0 || kevent(kq, &ev, 1, NULL, 0, NULL) < 0) {
        close(kq);
        return -1;
    }
    return kq;
}
#endif

#endif
/* ====[ END src/platform/bsd.c ]=========================================== */
/* ====[ BEGIN src/platform/thread.c ]====================================== */
/* >>platform/thread */
/* Threads, mutexes, the monotonic clock, waits on a word, and the parker
 * that puts an idle thread to sleep (seed 000 "Park state"). The futex
 * calls themselves are in platform/linux.c. */
/* src/platform/base.h already included */

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
 * io_uring_enter, kevent): the driver's wake-up object is part of every
 * wait. */
static void blitz__wake_fd_signal(int fd) {
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
/* A value unique to the calling thread while it lives. */
BLITZ_PRIVATE uintptr_t blitz__thread_tag(void) {
    return (uintptr_t)&blitz__tls_context;
}
BLITZ_PRIVATE blitz__context *blitz__context_set(blitz__context *c) {
    blitz__context *old = blitz__tls_context;
    blitz__tls_context = c;
    return old;
}

BLITZ_PRIVATE int blitz__thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
    int e = pthread_create(t, NULL, fn, arg);
    return e ? blitz__from_errno(e) : 0;
}
/* ====[ END src/platform/thread.c ]======================================== */
/* ########################################################################## */
/* LAYER core: the task block and its state word, wakers, join, allocator    */
/* ########################################################################## */
/* ====[ BEGIN src/core/task_state.c ]====================================== */
/* >>core/task_state */
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
 * as Tokio's block_on does), BLOCKING (a blocking-pool job: queued on the pool, run there, with
 * a trailer before the hooks; see blocking_pool.c), HAS_DEADLINE (a spawn deadline: its timer is
 * the trailer), TIMED_OUT (the cancel came from that deadline). ref_count: one reference for the
 * task's life until completion (the runtime's own, standing in for Tokio's owned-task list), one
 * for the handle, one per cloned waker. The block is freed when it reaches zero.
 *
 * Every transition is one CAS (or one RMW) on the word, so two parties never
 * both believe they own a step. Transitions that publish the user's state
 * (RUNNING -> COMPLETE) are release; the matching readers are acquire. */
/* ====[ BEGIN src/core/core.h ]============================================ */
/* >>core/core */
/* The task core's internal API: the task block, the block allocator, the
 * thread context, and the runtime every task belongs to.
 *
 * The runtime struct lives here because every layer reads it; the parts
 * owned by higher layers (run queues, idle set, workers, the time driver,
 * the blocking pool, the I/O driver) are behind pointers to types those
 * layers define, and runtime.c allocates them in one block with it. */
#ifndef BLITZ__CORE_H
#define BLITZ__CORE_H
/* src/platform/base.h already included */

/* ---- tasks (task_state.c, task.c, task_alloc.c) -------------------------- */

/* The task header. A task is one block: this header, then the user's state
 * (16-byte aligned), and, when the task has a drop function, that pointer in
 * the block's last 8 bytes. The runtime a task belongs to is found from the
 * 64 KiB-aligned chunk that holds the block, so the header carries no
 * runtime pointer: 56 bytes in all. */
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
    /* The op the task is suspended in, recorded by the op during the poll
     * that returned PENDING (blitz_cx_pending; cleared before every poll),
     * and withdrawn with it when the task is cancelled. Only the thread
     * that owns the task (RUNNING) touches them; the state word's
     * transitions order one owner's writes before the next one's reads. */
    blitz_cancel_fn pending_cancel;
    void *pending_op;
};
typedef struct blitz_task blitz__task;

#define BLITZ__TASK_HEADER_SIZE 56u
_Static_assert(sizeof(struct blitz_task) == BLITZ__TASK_HEADER_SIZE || sizeof(void *) != 8,
               "task header layout");

/* ---- the block allocator (task_alloc.c) ---------------------------------- */

#define BLITZ__CHUNK_SIZE  ((size_t)64 * 1024)
#define BLITZ__NUM_CLASSES 30
#define BLITZ__CLASS_LARGE 0xffffu

/* Join handles carry their block's generation in a debug build with room
 * for it in a pointer (platform/handle_check.c). */
#if BLITZ__CHECK_HANDLES && UINTPTR_MAX > 0xffffffffu
#define BLITZ__TAG_HANDLES 1
#else
#define BLITZ__TAG_HANDLES 0
#endif

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

typedef struct blitz__worker_counters {
    blitz__atomic_u64 polled, stolen, steals, parked, lifo_hits, batch_fetches, overflows;
    blitz__atomic_u64 spawned, freed;
    /* Join handles given out and released: blitz_runtime_free does not
     * wait for blocks that only a handle the program holds keeps alive. */
    blitz__atomic_u64 handles, handles_released;
} blitz__worker_counters;

/* Defined by the layers above (sched, time, io). */
typedef struct blitz__worker blitz__worker;
typedef struct blitz__ct_core blitz__ct_core;
typedef struct blitz__global_queue blitz__global_queue;
typedef struct blitz__idle blitz__idle;
typedef struct blitz__time_driver blitz__time_driver;
typedef struct blitz__pool blitz__pool;

/* ---- thread context (seed 002 "Thread-Local Context") ---------------------- */

struct blitz__context {
    blitz_runtime *rt;
    blitz__worker *worker; /* NULL on the current-thread driver and on helpers */
    int ct_driver;         /* this thread drives rt (current-thread flavour) */
    blitz__task *current;  /* the task being polled, or NULL */
    /* Filled in by the scheduler that owns the thread, so the layers below
     * it need not know its types: the thread's block cache and counters
     * (NULL: the shared ones), and its worker index (-1: not a worker). */
    blitz__block_cache *cache;
    blitz__worker_counters *counters;
    int worker_index;
};

/* A context for `rt` that owns no cache and is no worker. */
static inline void blitz__context_init(blitz__context *c, blitz_runtime *rt) {
    c->rt = rt;
    c->worker = NULL;
    c->ct_driver = 0;
    c->current = NULL;
    c->cache = NULL;
    c->counters = NULL;
    c->worker_index = -1;
}

/* The poll context handed to poll functions. A context with no task polls
 * an op for a plain thread (blitz_op_run_blocking) or for a runtime-internal
 * waiter: its waker is `waker` instead of the task's. */
struct blitz_cx {
    blitz__task *task;
    blitz__context *ctx;
    int yielded;
    blitz_waker waker;
};

/* Records the op the running task is suspended in (blitz_cx_pending) and
 * returns BLITZ_PENDING: what an op's poll returns when it must wait. */
static inline blitz_poll blitz__pending(blitz_cx *cx, blitz_cancel_fn cancel, void *op) {
    if (cx && cx->task) {
        cx->task->pending_cancel = cancel;
        cx->task->pending_op = op;
    }
    return BLITZ_PENDING;
}
/* `r`, recording the op when it is PENDING. */
static inline blitz_poll blitz__record(blitz_cx *cx, blitz_poll r, blitz_cancel_fn cancel,
                                       void *op) {
    return r == BLITZ_PENDING ? blitz__pending(cx, cancel, op) : r;
}
/* What the running task recorded so far in this poll. */
static inline void blitz__cx_pending_get(blitz_cx *cx, blitz_cancel_fn *cancel, void **op) {
    *cancel = NULL;
    *op = NULL;
    if (cx && cx->task) {
        *cancel = cx->task->pending_cancel;
        *op = cx->task->pending_op;
    }
}

/* ---- the runtime (runtime.c) ------------------------------------------------ */

struct blitz_runtime {
    blitz_flavor flavor;
    uint32_t num_workers;
    uint64_t park_timeout_ns;
    uint32_t spin_before_park;
    int spin_explicit; /* spin_before_park was set in the config */
    uint32_t fixed_interval;

    blitz__global_queue *global;
    blitz__idle *idle;
    blitz__worker *workers;
    blitz__ct_core *ct;

    BLITZ__ALIGNED blitz__atomic_u32 shutdown;
    blitz__atomic_u32 started;
    blitz__atomic_u32 workers_started;
    blitz__mutex start_lock;
    int shutdown_done;
    blitz__atomic_u32 sweeping; /* the shutdown sweep walks the chunk list */
    /* Threads waiting in blitz_join_blocking sleep on this futex word; a task
     * whose joiner is such a thread bumps it on completion. */
    BLITZ__ALIGNED blitz__atomic_u32 completion_seq;
    blitz__atomic_u32 completion_sleepers;
    /* Non-worker threads currently polling a task (blockOnComplete). */
    blitz__atomic_u32 external_running;
    /* Spawns in progress on threads that shutdown does not otherwise wait
     * for (blitz__spawn_enter). */
    blitz__atomic_u32 spawning;
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
    blitz__time_driver *time;
    blitz__pool *pool;
    void *workers_raw;
    /* The I/O driver (io_driver.c), or NULL when no backend could start. */
    struct blitz__io *io;
    /* The current-thread driver's parker (&ct->parker), or NULL. */
    blitz__parker *ct_parker;
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

/* ---- op adapters -----------------------------------------------------------
 * A blitz_op carries one void pointer, so its poll is an adapter: it casts
 * the pointer back to `type *obj` and returns `call`, the real poll written
 * with `cx`, `obj` and what the op's constructor stored in `obj`. */
#define BLITZ__OP_ADAPTER(name, type, obj, call)            \
    static blitz_poll name(blitz_cx *cx, void *obj##_arg) { \
        type *obj = (type *)obj##_arg;                      \
        return call;                                        \
    }

/* ---- hooks into the scheduler and the time driver ----------------------------
 * The only calls from the task core up the layers: a woken task goes to
 * its scheduler, a thread that waits for a task helps run it, and a spawn
 * deadline is a timer. */
BLITZ_PRIVATE void blitz__task_schedule(blitz__task *t);
BLITZ_PRIVATE void blitz__task_reschedule(blitz__task *t, blitz__context *ctx, int yielded);
BLITZ_PRIVATE int blitz__task_spawn_schedule(blitz_runtime *rt, blitz__task *t);
BLITZ_PRIVATE int blitz__workers_start(blitz_runtime *rt);
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
BLITZ_PRIVATE void blitz__pool_cancel_task(blitz__task *t);
/* A timer became the earliest: wake the worker sleeping for timers (1 +
 * its index in `sleeper`), or any parked worker when there is none. */
BLITZ_PRIVATE void blitz__sched_kick_timers(blitz_runtime *rt, uint32_t sleeper);
/* A spawn deadline: arms `timer` to wake `w` timeout_ns from now on the
 * runtime's clock (the timer keeps a clone of `w`), and disarms it. */
BLITZ_PRIVATE void blitz__deadline_arm(blitz_runtime *rt, blitz_timer *timer, int64_t timeout_ns,
                                       const blitz_waker *w);
BLITZ_PRIVATE void blitz__deadline_disarm(blitz_timer *timer);
/* The first socket of a runtime starts its workers. */

#endif
/* ====[ END src/core/core.h ]============================================== */
/* ----[ RESUME src/core/task_state.c ] */

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
#define BLITZ__TASK_BLOCKING          ((uint64_t)1 << 5)
#define BLITZ__TASK_HAS_DEADLINE      ((uint64_t)1 << 6)
#define BLITZ__TASK_TIMED_OUT         ((uint64_t)1 << 7)

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

/* A cancel from a thread that must not complete the task itself (the time
 * driver firing a spawn deadline): sets CANCELLED with `reason`, and
 * IDLE -> SCHEDULED so the task's scheduler completes it. Returns
 * BLITZ__WAKE_SCHEDULE when the caller must enqueue the task. Acq_rel as a
 * wake. */
BLITZ_PRIVATE int blitz__state_cancel_wake(blitz__task *t, uint64_t reason) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        uint64_t lc = blitz__lifecycle(s);
        if (lc == BLITZ__LC_COMPLETE || (s & BLITZ__TASK_CANCELLED))
            return BLITZ__WAKE_NOTHING;
        uint64_t next = s | BLITZ__TASK_CANCELLED | reason;
        if (lc == BLITZ__LC_IDLE)
            next = (next & ~BLITZ__LC_MASK) | BLITZ__LC_SCHEDULED;
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQ_REL))
            return lc == BLITZ__LC_IDLE ? BLITZ__WAKE_SCHEDULE : BLITZ__WAKE_NOTHING;
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
/* ====[ END src/core/task_state.c ]======================================== */
/* ====[ BEGIN src/core/task_alloc.c ]====================================== */
/* >>core/task_alloc */
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
 * 56-byte header is 16-byte aligned. States too big for the largest class get
 * a chunk of their own. Caches: one per worker and one for the
 * current-thread driver (no locking: only their thread touches them), and a
 * shared one behind alloc_lock for every other thread. Free blocks travel in
 * batches of BLITZ__FREE_BATCH: a cache keeps an active list and at most
 * one full batch; a second full batch goes to the runtime's spare batches,
 * where a cache that runs dry takes one. Every move is O(1) (no walking of
 * cold blocks), and memory freed on one worker is reused by the others. */
/* src/core/core.h already included */

static const uint32_t blitz__class_size[BLITZ__NUM_CLASSES] = {
    64,  80,   96,   112,  128,  160,  192,  224,  256,  320,  384,  448,  512,  640,  768,
    896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240};

/* First block offset: the smallest offset past the chunk header that is
 * 8 mod 16. */
#define BLITZ__FIRST_BLOCK ((sizeof(blitz__chunk) + 8 + 15) / 16 * 16 - 8)
#define BLITZ__FREE_BATCH  64u

/* Join handle generations (BLITZ__TAG_HANDLES): a 32-bit word per block
 * that outlives the block's tasks, at the chunk's end for a size class
 * (one per block, last block first) and right after the block of a large
 * chunk. */
#if BLITZ__TAG_HANDLES
#define BLITZ__GEN_BYTES       sizeof(blitz__atomic_u32)
#define BLITZ__GEN_LARGE_BYTES 16u
#else
#define BLITZ__GEN_BYTES       0u
#define BLITZ__GEN_LARGE_BYTES 0u
#endif

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
    *k = c->counters;
    return c->cache;
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
    ch->capacity =
        (uint32_t)((BLITZ__CHUNK_SIZE - BLITZ__FIRST_BLOCK) / (ch->block_size + BLITZ__GEN_BYTES));
    ch->carved = 0;
#if BLITZ__TAG_HANDLES
    memset((char *)ch + BLITZ__CHUNK_SIZE - ch->capacity * BLITZ__GEN_BYTES, 0,
           ch->capacity * BLITZ__GEN_BYTES);
#endif
    blitz__mutex_lock(&rt->alloc_lock);
    ch->next = rt->chunks;
    rt->chunks = ch;
    blitz__mutex_unlock(&rt->alloc_lock);
    return ch;
}

static inline blitz__task *blitz__chunk_block(blitz__chunk *ch, uint32_t i) {
    return (blitz__task *)((char *)ch + BLITZ__FIRST_BLOCK + (size_t)i * ch->block_size);
}

#if BLITZ__TAG_HANDLES
static blitz__atomic_u32 *blitz__block_gen(const blitz__task *t) {
    blitz__chunk *ch = blitz__chunk_of(t);
    if (ch->class_index == BLITZ__CLASS_LARGE)
        return (blitz__atomic_u32 *)(void *)((char *)t + ch->block_size);
    size_t i = ((size_t)((const char *)t - (const char *)ch) - BLITZ__FIRST_BLOCK) / ch->block_size;
    return (blitz__atomic_u32 *)(void *)((char *)ch + BLITZ__CHUNK_SIZE) - 1 - i;
}

#define BLITZ__TAG_SHIFT 48
#define BLITZ__TAG_OF(g) (((g)&0x7fffu) | 0x8000u)

/* The handle the program gets for `t`: tagged with the block's generation
 * (an address with no room for it goes unchecked). */
BLITZ_PRIVATE blitz_task *blitz__handle_out(blitz__task *t) {
    uintptr_t p = (uintptr_t)t;
    if (!t || p >> BLITZ__TAG_SHIFT)
        return t;
    uint32_t g = blitz__u32_load(blitz__block_gen(t), BLITZ__RELAXED);
    return (blitz_task *)(p | (uintptr_t)BLITZ__TAG_OF(g) << BLITZ__TAG_SHIFT);
}

/* The task of handle `h`; stops the program, naming `func`, when the
 * handle was released. The runtime's own untagged pointers pass as they
 * are. */
BLITZ_PRIVATE blitz__task *blitz__handle_in(const blitz_task *h, const char *func) {
    uintptr_t p = (uintptr_t)h;
    uint32_t tag = (uint32_t)(p >> BLITZ__TAG_SHIFT);
    if (!tag)
        return (blitz__task *)(uintptr_t)h;
    blitz__task *t = (blitz__task *)(p & (((uintptr_t)1 << BLITZ__TAG_SHIFT) - 1));
    if (BLITZ__TAG_OF(blitz__u32_load(blitz__block_gen(t), BLITZ__ACQUIRE)) != tag)
        blitz__handle_misuse(func, "join handle used after blitz_task_release");
    return t;
}

/* Makes every copy of `h` stale. Called while the handle still keeps the
 * block. */
BLITZ_PRIVATE void blitz__handle_retire(const blitz_task *h, blitz__task *t) {
    if ((uintptr_t)h >> BLITZ__TAG_SHIFT)
        blitz__u32_fetch_add(blitz__block_gen(t), 1, BLITZ__RELEASE);
}
#else
#define blitz__handle_out(t)       (t)
#define blitz__handle_in(h, func)  ((void)(func), (blitz__task *)(uintptr_t)(h))
#define blitz__handle_retire(h, t) ((void)(h), (void)(t))
#endif

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
 * bytes; NULL when out of memory. Counts the spawn, and the join handle
 * given out with it when `with_handle`, on the counters its one look-up
 * of the thread's owner found. */
BLITZ_PRIVATE blitz__task *blitz__block_alloc(blitz_runtime *rt, size_t need, int with_handle) {
    uint32_t c = blitz__size_class(need);
    blitz__task *t;
    blitz__worker_counters *k;
    blitz__block_cache *cache = blitz__local_owner(rt, &k);
    if (c == BLITZ__CLASS_LARGE) {
        size_t total = BLITZ__FIRST_BLOCK + ((need + 15) & ~(size_t)15) + BLITZ__GEN_LARGE_BYTES;
        void *raw;
        blitz__chunk *ch = (blitz__chunk *)blitz__alloc_aligned(
            total < BLITZ__CHUNK_SIZE ? BLITZ__CHUNK_SIZE : total, BLITZ__CHUNK_SIZE, &raw);
        if (!ch)
            return NULL;
        ch->rt = rt;
        ch->raw = raw;
        ch->block_size = (uint32_t)(total - BLITZ__FIRST_BLOCK - BLITZ__GEN_LARGE_BYTES);
        ch->class_index = BLITZ__CLASS_LARGE;
        ch->capacity = 1;
        ch->carved = 1;
#if BLITZ__TAG_HANDLES
        /* Memory a stale handle's block had may come back here: start
         * from a generation no earlier chunk used. */
        static blitz__atomic_u32 large_gen;
        blitz__u32_store(blitz__block_gen(blitz__chunk_block(ch, 0)),
                         blitz__u32_fetch_add(&large_gen, 1u << 8, BLITZ__RELAXED), BLITZ__RELAXED);
#endif
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
        if (with_handle)
            BLITZ__STAT(blitz__u64_bump(&k->handles, 1));
    } else {
        BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.spawned, 1, BLITZ__RELAXED));
        if (with_handle)
            BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.handles, 1, BLITZ__RELAXED));
    }
    return t;
}

/* Counts a released join handle (blitz__block_alloc counts them given). */
BLITZ_PRIVATE void blitz__count_handle_released(blitz_runtime *rt) {
    blitz__worker_counters *k;
    (void)blitz__local_owner(rt, &k);
    if (k) {
        BLITZ__STAT(blitz__u64_bump(&k->handles_released, 1));
    } else {
        BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.handles_released, 1, BLITZ__RELAXED));
    }
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
#if BLITZ__TAG_HANDLES
            blitz__free_handle(ch->raw); /* a stale handle may still look */
#else
            blitz__free(ch->raw);
#endif
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
/* ====[ END src/core/task_alloc.c ]======================================== */
/* ====[ BEGIN src/core/task.c ]============================================ */
/* >>core/task */
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
/* src/core/core.h already included */

static inline void *blitz__task_state_ptr(blitz__task *t) {
    return (char *)t + BLITZ__TASK_HEADER_SIZE;
}

/* The hooks sit at the end of the block: the drop function last, the
 * cancel hook before it. */
static inline blitz_drop_fn *blitz__task_drop_slot(blitz__task *t) {
    return (blitz_drop_fn *)((char *)t + blitz__block_size(t) - sizeof(blitz_drop_fn));
}
static inline blitz_cancel_hook_fn *blitz__task_cancel_slot(blitz__task *t, uint64_t s) {
    size_t back = sizeof(blitz_drop_fn) * ((s & BLITZ__TASK_HAS_DROP) ? 2 : 1);
    return (blitz_cancel_hook_fn *)((char *)t + blitz__block_size(t) - back);
}

/* `size` bytes (a multiple of 8) reserved in front of the hooks at the end
 * of the block of a task spawned with a trailer. */
static inline void *blitz__task_trailer_of(blitz__task *t, uint64_t s, size_t size) {
    size_t hooks = ((s & BLITZ__TASK_HAS_DROP) != 0) + ((s & BLITZ__TASK_HAS_CANCEL) != 0);
    return (char *)t + blitz__block_size(t) - hooks * sizeof(blitz_drop_fn) - size;
}
static inline void *blitz__task_trailer(blitz__task *t, size_t size) {
    return blitz__task_trailer_of(t, blitz__u64_load(&t->state, BLITZ__RELAXED), size);
}

/* ---- spawn deadlines ---------------------------------------------------------
 * A task spawned with a timeout carries a timer in its trailer, armed with a
 * waker whose wake cancels the task instead of polling it. The time driver
 * fires it on whatever thread drives the timers, so the wake only marks the
 * task cancelled (and timed out) and schedules it; its own scheduler then
 * completes it, withdrawing the op it waits in. Completion disarms the
 * timer, so a task that finishes in time holds nothing until its deadline. */

static inline blitz_timer *blitz__task_deadline_timer(blitz__task *t, uint64_t s) {
    return (blitz_timer *)blitz__task_trailer_of(t, s, sizeof(blitz_timer));
}

static void blitz__deadline_wake_by_ref(const void *data) {
    blitz__task *t = (blitz__task *)data;
    if (blitz__state_cancel_wake(t, BLITZ__TASK_TIMED_OUT) == BLITZ__WAKE_SCHEDULE)
        blitz__task_schedule(t);
}
static void blitz__deadline_wake(const void *data) {
    blitz__deadline_wake_by_ref(data);
    blitz__task_unref((blitz__task *)data);
}
static void blitz__deadline_drop(const void *data) {
    blitz__task_unref((blitz__task *)data);
}
static blitz_waker blitz__deadline_clone(const void *data);
static const blitz_waker_vtable blitz__deadline_vtable = {
    blitz__deadline_wake, blitz__deadline_wake_by_ref, blitz__deadline_clone, blitz__deadline_drop};
static blitz_waker blitz__deadline_clone(const void *data) {
    blitz__task_ref((blitz__task *)data);
    blitz_waker w = {data, &blitz__deadline_vtable};
    return w;
}

/* Arms the deadline of a task not queued yet, so its time counts from the
 * spawn even if the task runs and waits at once (a paused clock jumps
 * then). The caller holds a reference across the spawn. */
static void blitz__task_deadline_start(blitz_runtime *rt, blitz__task *t, int64_t timeout_ns) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    blitz_waker w = {t, &blitz__deadline_vtable};
    blitz__deadline_arm(rt, blitz__task_deadline_timer(t, s), timeout_ns, &w);
}

/* The spawn failed after arming: disarm, and wait out a firing timer's
 * reference (held only until its wake returns) before the block goes. */
static void blitz__task_deadline_abandon(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    blitz__deadline_disarm(blitz__task_deadline_timer(t, s));
    uint64_t mine = 2 + ((s & BLITZ__TASK_JOIN_INTEREST) != 0); /* lifecycle, spawner, handle */
    while (blitz__refs(blitz__u64_load(&t->state, BLITZ__ACQUIRE)) > mine)
        blitz__cpu_relax();
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
    if (rt->ct_parker)
        blitz__parker_unpark(rt->ct_parker);
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
    /* The hook bits are fixed at spawn: one look serves both below. */
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    if (cancelled) {
        /* The task is ours (RUNNING): the op it waits in is withdrawn, then
         * its cancel hook releases the rest, before any joiner sees it
         * complete. */
        blitz_cancel_fn withdraw = t->pending_cancel;
        if (withdraw) {
            t->pending_cancel = NULL;
            withdraw(NULL, t->pending_op);
        }
        if (s & BLITZ__TASK_HAS_CANCEL)
            (*blitz__task_cancel_slot(t, s))(blitz__task_state_ptr(t));
    }
    if (s & BLITZ__TASK_HAS_DEADLINE)
        blitz__deadline_disarm(blitz__task_deadline_timer(t, s));
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
    t->pending_cancel = NULL;
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
BLITZ_API void blitz_cx_pending(blitz_cx *cx, blitz_cancel_fn cancel, void *op) {
    (void)blitz__pending(cx, cancel, op);
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
        return cx->ctx->worker_index;
    return cx->ctx->ct_driver ? 0 : -1;
}

/* ---- spawning ------------------------------------------------------------------- */

/* A spawn on a thread that shutdown does not wait for (a plain thread,
 * or one polling another runtime's task) announces itself in `spawning`
 * until its block is queued or given back; shutdown waits for the count
 * to reach 0 before it sweeps the blocks, so it never finishes a block
 * its spawner is still filling in or discarding. Threads polling rt's
 * tasks need no announcement: shutdown waits for all of them first.
 * Returns whether the caller announced itself (pass it to leave). */
BLITZ_PRIVATE int blitz__spawn_enter(blitz_runtime *rt) {
    blitz__context *ctx = blitz__context_get();
    if (!rt || (ctx && ctx->rt == rt))
        return 0;
    /* Seq_cst, with the seq_cst shutdown check in blitz__task_create:
     * shutdown stores its flag (seq_cst) and then reads this count, so
     * either the spawn sees the flag or shutdown sees the count. */
    blitz__u32_fetch_add(&rt->spawning, 1, BLITZ__SEQ_CST);
    return 1;
}

BLITZ_PRIVATE void blitz__spawn_leave(blitz_runtime *rt, int entered) {
    /* Release: the block's contents (or its discard) happen before the
     * sweep, which reads the count with acquire. */
    if (entered)
        blitz__u32_fetch_sub(&rt->spawning, 1, BLITZ__RELEASE);
}

/* A new task block in the SCHEDULED state that nobody has seen yet, with
 * `trailer` bytes before the hooks and `flags` added to its state word.
 * The caller queues it, or gives it back with blitz__task_discard. */
BLITZ_PRIVATE int blitz__task_create(blitz_runtime *rt, const blitz_spawn_opts *o, int with_handle,
                                     size_t trailer, uint64_t flags, blitz__task **out) {
    *out = NULL;
    if (!rt || !o || !o->poll || o->size == 0 || o->size > BLITZ_MAX_STATE_SIZE ||
        (o->init && o->state))
        return BLITZ_EINVAL;
    if (blitz__u32_load(&rt->shutdown, BLITZ__SEQ_CST))
        return BLITZ_ESHUTDOWN;
    if (o->timeout_ns < 0)
        return BLITZ_EINVAL;
    if (o->timeout_ns > 0) {
        /* The deadline's timer is the trailer (blocking-pool jobs have
         * their own trailer and no deadline). */
        BLITZ_ASSERT(trailer == 0);
        trailer = sizeof(blitz_timer);
        flags |= BLITZ__TASK_HAS_DEADLINE;
    }
    size_t need = BLITZ__TASK_HEADER_SIZE + o->size;
    size_t hooks = (o->drop != NULL) + (o->cancel != NULL);
    if (hooks || trailer)
        need = ((need + 7) & ~(size_t)7) + trailer + hooks * sizeof(blitz_drop_fn);
    blitz__task *t = blitz__block_alloc(rt, need, with_handle);
    if (!t)
        return BLITZ_ENOMEM;
    t->poll = o->poll;
    t->next = NULL;
    t->join_waker.data = NULL;
    t->join_waker.vtable = NULL;
    t->pending_cancel = NULL;
    t->pending_op = NULL;
    if (o->state)
        memcpy(blitz__task_state_ptr(t), o->state, o->size);
    else
        memset(blitz__task_state_ptr(t), 0, o->size);
    /* In place: a large state never needs a copy on the caller's stack. No
     * one sees the block before it is queued, so the task cannot run yet. */
    if (o->init)
        o->init(blitz__task_state_ptr(t), o->init_arg);
    uint64_t initial =
        blitz__state_initial(with_handle, o->drop != NULL, o->cancel != NULL) | flags;
    if (o->drop)
        *blitz__task_drop_slot(t) = o->drop;
    if (o->cancel)
        *blitz__task_cancel_slot(t, initial) = o->cancel;
    if (flags & BLITZ__TASK_HAS_DEADLINE)
        memset(blitz__task_deadline_timer(t, initial), 0, sizeof(blitz_timer));
    /* Relaxed: the enqueue publishes the block (queue release or a
     * mutex). */
    blitz__u64_store(&t->state, initial, BLITZ__RELAXED);
    *out = t;
    return BLITZ_OK;
}

/* Gives back a block from blitz__task_create that was never queued,
 * without its drop function (the caller still owns what its state refers
 * to). */
BLITZ_PRIVATE void blitz__task_discard(blitz__task *t) {
    if (blitz__u64_load(&t->state, BLITZ__RELAXED) & BLITZ__TASK_JOIN_INTEREST)
        blitz__count_handle_released(blitz__task_runtime(t));
    blitz__u64_store(&t->state, 0, BLITZ__RELAXED);
    blitz__block_release(t);
}

/* Spawns; a PINNED task is not queued (blitz__block_on polls it). */
BLITZ_PRIVATE int blitz__spawn(blitz_runtime *rt, const blitz_spawn_opts *o, blitz_task **handle,
                               int pinned) {
    if (handle)
        *handle = NULL;
    blitz__task *t;
    int entered = blitz__spawn_enter(rt);
    int rc = blitz__task_create(rt, o, handle != NULL, 0, pinned ? BLITZ__TASK_PINNED : 0, &t);
    if (rc == BLITZ_OK) {
        int deadline = o->timeout_ns > 0;
        if (deadline) {
            blitz__task_ref(t); /* kept until the spawn is decided */
            blitz__task_deadline_start(rt, t, o->timeout_ns);
        }
        if (pinned)
            blitz__u32_fetch_add(&rt->pinned_runnable, 1, BLITZ__SEQ_CST);
        rc = pinned ? BLITZ_OK : blitz__task_spawn_schedule(rt, t);
        if (rc != BLITZ_OK) {
            if (deadline)
                blitz__task_deadline_abandon(t);
            blitz__task_discard(t);
        } else {
            if (deadline)
                blitz__task_unref(t);
            if (handle)
                *handle = blitz__handle_out(t);
        }
    }
    blitz__spawn_leave(rt, entered);
    return rc;
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
/* ====[ END src/core/task.c ]============================================== */
/* ====[ BEGIN src/core/join.c ]============================================ */
/* >>core/join */
/* Join handles: await, wait, status, state, cancel, release.
 *
 * The join waker protocol (Tokio's JOIN_WAKER): the handle's owner writes
 * join_waker only while JOIN_WAKER is clear, then sets the bit with a
 * release CAS that fails once the task is COMPLETE. The completer clears the
 * bit in its COMPLETE transition and then only reads the slot. To replace a
 * stored waker the owner first clears the bit (a CAS that also fails on
 * COMPLETE). So the slot is never written while another thread may read it. */
/* src/core/core.h already included */

BLITZ_API blitz_poll blitz_join(blitz_cx *cx, blitz_task *h) {
    BLITZ_ASSERT(cx && h);
    if (!cx || !h)
        return BLITZ_READY; /* blitz_task_status reports the misuse */
    blitz__task *t = blitz__handle_in(h, __func__);
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (blitz__state_is_complete(s))
        return BLITZ_READY;
    blitz_waker mine = blitz_cx_waker(cx);
    if (s & BLITZ__TASK_JOIN_WAKER) {
        if (blitz_waker_will_wake(&t->join_waker, &mine))
            return blitz__pending(cx, blitz_join_cancel, t);
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
            return blitz__pending(cx, blitz_join_cancel, t);
    }
}

BLITZ_API void blitz_join_cancel(blitz_cx *cx, void *handle) {
    (void)cx;
    if (!handle)
        return;
    blitz__task *t = blitz__handle_in((blitz_task *)handle, __func__);
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

BLITZ_API int blitz_task_status(const blitz_task *h) {
    if (!h)
        return BLITZ_EINVAL;
    const blitz__task *t = blitz__handle_in(h, __func__);
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (!blitz__state_is_complete(s))
        return BLITZ_EAGAIN;
    if (!(s & BLITZ__TASK_OUTCOME_CANCELLED))
        return BLITZ_OK;
    return (s & BLITZ__TASK_TIMED_OUT) ? BLITZ_ETIMEDOUT : BLITZ_ECANCELED;
}

BLITZ_API void *blitz_task_state(blitz_task *h) {
    if (!h)
        return NULL;
    blitz__task *t = blitz__handle_in(h, __func__);
    if (!blitz__state_is_complete(blitz__u64_load(&t->state, BLITZ__ACQUIRE)))
        return NULL;
    return blitz__task_state_ptr(t);
}

BLITZ_API int blitz_task_cancel(blitz_task *h) {
    if (!h)
        return BLITZ_EINVAL;
    blitz__task *t = blitz__handle_in(h, __func__);
    /* An idle task is claimed (taken to RUNNING) and completed here. */
    if (blitz__state_cancel(t))
        blitz__task_finish(t, 1);
    else if (blitz__u64_load(&t->state, BLITZ__RELAXED) & BLITZ__TASK_BLOCKING)
        blitz__pool_cancel_task(t); /* not started: out of the pool's queue now */
    return BLITZ_OK;
}

BLITZ_API int blitz_task_release(blitz_task **tp) {
    if (!tp)
        return BLITZ_EINVAL;
    blitz_task *h = *tp;
    if (!h)
        return BLITZ_ERELEASED;
    blitz__task *t = blitz__handle_in(h, __func__);
    *tp = NULL;
    blitz__handle_retire(h, t);
    blitz_runtime *rt = blitz__task_runtime(t);
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
    blitz__count_handle_released(rt);
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

BLITZ_API int blitz_join_blocking(blitz_task *h) {
    if (!h)
        return BLITZ_EINVAL;
    blitz__task *t = blitz__handle_in(h, __func__);
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
    int rc = blitz_task_status(h);
    /* Only a wait inside one of the runtime's own polls returns unfinished:
     * the runtime is shutting down and waits for that poll to end. */
    return rc == BLITZ_EAGAIN ? BLITZ_ESHUTDOWN : rc;
}
/* ====[ END src/core/join.c ]============================================== */
/* ########################################################################## */
/* LAYER time: the timer wheel and the time driver                           */
/* ########################################################################## */
/* ====[ BEGIN src/time/timer_wheel.c ]===================================== */
/* >>time/timer_wheel */
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
/* ====[ BEGIN src/time/time.h ]============================================ */
/* >>time/time */
/* The time layer's internal API: the time driver every runtime owns. */
#ifndef BLITZ__TIME_H
#define BLITZ__TIME_H
/* src/core/core.h already included */
/* ====[ BEGIN src/time/timer_wheel.h ]===================================== */
/* >>time/timer_wheel */
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
/* ====[ END src/time/timer_wheel.h ]======================================= */
/* ----[ RESUME src/time/time.h ] */

/* ---- the time driver (time_driver.c) ---------------------------------------- */

struct blitz__time_driver {
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
};

#endif
/* ====[ END src/time/time.h ]============================================== */
/* ----[ RESUME src/time/timer_wheel.c ] */

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
/* ====[ END src/time/timer_wheel.c ]======================================= */
/* ====[ BEGIN src/time/time_driver.c ]===================================== */
/* >>time/time_driver */
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
/* src/time/time.h already included */

#define BLITZ__TICK_NS     1000000u
#define BLITZ__TIMER_IDLE  0u
#define BLITZ__TIMER_ARMED 1u
#define BLITZ__TIMER_FIRED 2u

BLITZ_PRIVATE void blitz__time_init(blitz_runtime *rt, int paused) {
    blitz__time_driver *td = rt->time;
    blitz__mutex_init(&td->lock);
    td->origin_ns = blitz__now_ns();
    td->paused = paused;
    blitz__u64_store(&td->virtual_ns, td->origin_ns, BLITZ__RELAXED);
    blitz__wheel_init(&td->wheel, 0);
    blitz__u64_store(&td->next_expiry_ns, UINT64_MAX, BLITZ__RELAXED);
    blitz__u32_store(&td->sleeper, 0, BLITZ__RELAXED);
}

BLITZ_PRIVATE void blitz__time_destroy(blitz_runtime *rt) {
    blitz__mutex_destroy(&rt->time->lock);
}

/* The runtime's current time in nanoseconds. */
BLITZ_PRIVATE uint64_t blitz__rt_now(const blitz_runtime *rt) {
    if (rt->time->paused)
        return blitz__u64_load(&rt->time->virtual_ns, BLITZ__ACQUIRE);
    return blitz__now_ns();
}

/* Ticks since the origin that `ns` has fully reached (floor), and the tick
 * at which a deadline is due (ceiling). */
static uint64_t blitz__tick_floor(const blitz_runtime *rt, uint64_t ns) {
    return ns <= rt->time->origin_ns ? 0 : (ns - rt->time->origin_ns) / BLITZ__TICK_NS;
}
static uint64_t blitz__tick_ceil(const blitz_runtime *rt, uint64_t ns) {
    if (ns <= rt->time->origin_ns)
        return 0;
    uint64_t d = ns - rt->time->origin_ns;
    return d / BLITZ__TICK_NS + (d % BLITZ__TICK_NS != 0);
}
/* The nanosecond at which tick `t` begins (saturating). */
static uint64_t blitz__tick_start_ns(const blitz_runtime *rt, uint64_t t) {
    if (t >= (UINT64_MAX - rt->time->origin_ns) / BLITZ__TICK_NS)
        return UINT64_MAX;
    return rt->time->origin_ns + t * BLITZ__TICK_NS;
}

/* Publishes the wheel's earliest expiry as the hint. Caller holds lock.
 * Seq_cst: pairs with a parking worker's seq_cst re-check (worker.c). */
static void blitz__time_update_hint(blitz_runtime *rt) {
    uint64_t t = blitz__wheel_next_expiry(&rt->time->wheel);
    blitz__u64_store(&rt->time->next_expiry_ns,
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
    blitz__time_driver *td = rt->time;
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
    blitz__time_driver *td = rt->time;
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
    uint64_t hint = blitz__u64_load(&rt->time->next_expiry_ns, BLITZ__ACQUIRE);
    if (hint == UINT64_MAX)
        return 0;
    if (blitz__rt_now(rt) < hint)
        return 0;
    if (block)
        blitz__mutex_lock(&rt->time->lock);
    else if (!blitz__mutex_trylock(&rt->time->lock))
        return 0;
    blitz__time_collect(rt, blitz__rt_now(rt));
    size_t fired = blitz__time_fire(rt, 1);
    blitz__mutex_unlock(&rt->time->lock);
    return fired != 0;
}

/* Shutdown: disarms every timer and drops its waker, so the references the
 * timers hold on their (now cancelled) tasks go away. No task runs any more;
 * a later blitz_timer_cancel finds the timer idle. */
BLITZ_PRIVATE void blitz__time_shutdown(blitz_runtime *rt) {
    blitz__time_driver *td = rt->time;
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
    uint64_t hint = blitz__u64_load(&rt->time->next_expiry_ns, BLITZ__SEQ_CST);
    if (hint == UINT64_MAX || rt->time->paused)
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
    if (!rt->time->paused)
        return 0;
    blitz__mutex_lock(&rt->time->lock);
    if (rt->time->advancing || (idle && !idle(rt))) {
        blitz__mutex_unlock(&rt->time->lock);
        return 0;
    }
    uint64_t t = blitz__wheel_next_expiry(&rt->time->wheel);
    if (t != UINT64_MAX) {
        uint64_t target = blitz__tick_start_ns(rt, t);
        if (target > blitz__u64_load(&rt->time->virtual_ns, BLITZ__RELAXED))
            blitz__u64_store(&rt->time->virtual_ns, target, BLITZ__RELEASE);
        rt->time->advancing = 1;
        blitz__time_collect(rt, blitz__u64_load(&rt->time->virtual_ns, BLITZ__RELAXED));
        blitz__time_fire(rt, 1);
        rt->time->advancing = 0;
    }
    blitz__mutex_unlock(&rt->time->lock);
    return t != UINT64_MAX;
}

/* Someone must notice a timer that is now the earliest: the sleeping
 * driver re-plans, or a parked worker wakes up to become it. */
static void blitz__time_kick(blitz_runtime *rt) {
    if (rt->flavor == BLITZ_CURRENT_THREAD) {
        blitz__parker_unpark(rt->ct_parker);
        return;
    }
    blitz__sched_kick_timers(rt, blitz__u32_load(&rt->time->sleeper, BLITZ__SEQ_CST));
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
    blitz__mutex_lock(&rt->time->lock);
    t->blitz__waker = mine;
    blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_ARMED, BLITZ__RELAXED);
    blitz__wheel_insert(&rt->time->wheel, &t->blitz__entry);
    /* Inserting can only move the earliest expiry earlier. Seq_cst pairs
     * with a parking worker's seq_cst read of the hint (worker.c). */
    int earlier = due_ns < blitz__u64_load(&rt->time->next_expiry_ns, BLITZ__RELAXED);
    if (earlier)
        blitz__u64_store(&rt->time->next_expiry_ns, due_ns, BLITZ__SEQ_CST);
    blitz__mutex_unlock(&rt->time->lock);
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
    /* A timer needs a runtime's wheel: blitz_op_run_blocking without a runtime
     * cannot sleep. */
    BLITZ_ASSERT(rt && "a timer polled outside any runtime");
    if (!rt)
        return BLITZ_READY;
    blitz_waker mine = blitz_cx_waker(cx);
    if (s == BLITZ__TIMER_IDLE) {
        if (deadline_ns <= blitz__rt_now(rt))
            return BLITZ_READY;
        blitz__timer_arm(rt, t, deadline_ns, &mine);
        return blitz__pending(cx, blitz_timer_cancel, t);
    }
    /* Armed: polled again (a spurious wake, or another op of the task).
     * Keep the registered waker if it still wakes this task; the driver
     * takes it under the lock, so look at it under the lock too. */
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&rt->time->lock);
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__RELAXED) == BLITZ__TIMER_ARMED &&
        !blitz_waker_will_wake(&t->blitz__waker, &mine)) {
        old = t->blitz__waker;
        t->blitz__waker = blitz_waker_clone(&mine);
    }
    blitz__mutex_unlock(&rt->time->lock);
    blitz_waker_drop(old);
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE) == BLITZ__TIMER_FIRED) {
        blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_IDLE, BLITZ__RELAXED);
        return BLITZ_READY;
    }
    return blitz__pending(cx, blitz_timer_cancel, t);
}

BLITZ_API blitz_poll blitz_sleep(blitz_cx *cx, blitz_timer *t, int64_t ns) {
    if (!cx || !t)
        return BLITZ_READY;
    /* Only the first poll computes the deadline; later polls keep it. */
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE) != BLITZ__TIMER_IDLE)
        return blitz_sleep_until(cx, t, t->deadline);
    return blitz_sleep_until(cx, t, blitz_deadline_after(blitz_cx_now(cx), ns));
}

BLITZ_API void blitz_timer_cancel(blitz_cx *cx, void *timer) {
    blitz_timer *t = (blitz_timer *)timer;
    (void)cx;
    if (!t)
        return;
    uint32_t s = blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE);
    if (s == BLITZ__TIMER_IDLE)
        return;
    blitz_runtime *rt = t->blitz__rt;
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&rt->time->lock);
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__RELAXED) == BLITZ__TIMER_ARMED) {
        blitz__timer_entry *e = &t->blitz__entry;
        if (e->where == BLITZ__WHERE_FIRING) {
            if (e->prev)
                e->prev->next = e->next;
            else
                rt->time->firing = e->next;
            if (e->next)
                e->next->prev = e->prev;
            e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
        } else {
            blitz__wheel_remove(&rt->time->wheel, e);
        }
        old = t->blitz__waker;
        t->blitz__waker = blitz_waker_noop();
    }
    blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_IDLE, BLITZ__RELAXED);
    blitz__mutex_unlock(&rt->time->lock);
    blitz_waker_drop(old);
}

BLITZ_PRIVATE void blitz__deadline_arm(blitz_runtime *rt, blitz_timer *timer, int64_t timeout_ns,
                                       const blitz_waker *w) {
    blitz__timer_arm(rt, timer, blitz_deadline_after(blitz__rt_now(rt), timeout_ns), w);
}
BLITZ_PRIVATE void blitz__deadline_disarm(blitz_timer *timer) {
    blitz_timer_cancel(NULL, timer);
}

BLITZ_API int blitz_timer_armed(const blitz_timer *t) {
    return t && blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE) == BLITZ__TIMER_ARMED;
}

/* Withdraws a timeout: its timer and the op it waited on. */
static void blitz__timeout_withdraw(blitz_cx *cx, void *timer) {
    blitz_timer *t = (blitz_timer *)timer;
    blitz_cancel_fn inner = t->blitz__inner_cancel;
    t->blitz__inner_cancel = NULL;
    blitz_timer_cancel(cx, t);
    if (inner)
        inner(cx, t->blitz__inner_op);
}

static blitz_poll blitz__timeout(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner,
                                 blitz_cancel_fn cancel, void *op) {
    if (!cx || !t)
        return BLITZ_READY;
    t->blitz__inner_cancel = NULL;
    if (inner == BLITZ_READY) {
        blitz_timer_cancel(NULL, t);
        t->expired = 0;
        return BLITZ_READY;
    }
    if (blitz_sleep(cx, t, ns) == BLITZ_READY) {
        t->expired = 1;
        blitz_cx_pending(cx, NULL, NULL);
        if (cancel)
            cancel(cx, op);
        return BLITZ_READY;
    }
    t->blitz__inner_cancel = cancel;
    t->blitz__inner_op = op;
    blitz_cx_pending(cx, blitz__timeout_withdraw, t);
    return BLITZ_PENDING;
}

BLITZ_API blitz_poll blitz_timeout(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner) {
    /* `inner` was polled just before this call: if it is pending, the op
     * recorded itself then. */
    blitz_cancel_fn cancel = NULL;
    void *op = NULL;
    if (inner == BLITZ_PENDING)
        blitz__cx_pending_get(cx, &cancel, &op);
    return blitz__timeout(cx, t, ns, inner, cancel, op);
}

BLITZ_API blitz_poll blitz_timeout_op(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner,
                                      blitz_cancel_fn cancel, void *op) {
    return blitz__timeout(cx, t, ns, inner, cancel, op);
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
    if (!rt->time->paused)
        return BLITZ_EINVAL;
    blitz__mutex_lock(&rt->time->lock);
    uint64_t now = blitz__u64_load(&rt->time->virtual_ns, BLITZ__RELAXED);
    now = blitz_deadline_after(now, ns);
    blitz__u64_store(&rt->time->virtual_ns, now, BLITZ__RELEASE);
    blitz__time_collect(rt, now);
    blitz__time_fire(rt, 1);
    blitz__mutex_unlock(&rt->time->lock);
    return BLITZ_OK;
}

/* ---- intervals ------------------------------------------------------------------ */

/* Lateness below which an interval's tick counts as on time (Tokio's
 * bound too). */
#define BLITZ__INTERVAL_ON_TIME_NS (5 * BLITZ_MSEC)

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
        /* The schedule restarts one period after this tick when it is
         * late; a timer fires on the wheel's next millisecond, so a tick a
         * little late is on time (else every tick would be late and the
         * period would stretch by the wheel's delay each time). */
        iv->next = blitz_deadline_after(
            now > due && now - due >= BLITZ__INTERVAL_ON_TIME_NS ? now : due, (int64_t)iv->period);
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
/* ====[ END src/time/time_driver.c ]======================================= */
/* ########################################################################## */
/* LAYER io: the I/O driver core, its backends, addresses, descriptors       */
/* ########################################################################## */
/* ====[ BEGIN src/io/addr.c ]============================================== */
/* >>io/addr */
/* Socket addresses: parsing and formatting of IPv4, IPv6 and Unix
 * addresses into blitz_addr (a sockaddr_storage with its length). */
/* ====[ BEGIN src/io/io.h ]================================================ */
/* >>io/io */
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
/* src/time/time.h already included */
/* ====[ BEGIN src/io/backend.h ]=========================================== */
/* >>io/backend */
/* The interface between the I/O driver's core and its backends.
 *
 * A backend is one of two styles, fixed by `completion`:
 *   completion (uring.c; IOCP next): submit may try the system call once
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
    void (*want)(struct blitz__io *io, struct blitz_socket *s, uint32_t bit);
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
BLITZ_PRIVATE const blitz__io_backend *blitz__backend_ring(void);
BLITZ_PRIVATE const blitz__io_backend *blitz__backend_edge(void);
BLITZ_PRIVATE const blitz__io_backend *blitz__backend_kqueue(void);
BLITZ_PRIVATE const blitz__io_backend *blitz__backend_poll(void);

/* The readiness backends' shared parts (readiness.c). */
BLITZ_PRIVATE blitz_poll blitz__ready_submit(blitz_cx *cx, blitz_io *op);
BLITZ_PRIVATE void blitz__ready_poll(struct blitz__io *io);
BLITZ_PRIVATE void blitz__ready_park(struct blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg);
#endif
/* ====[ END src/io/backend.h ]============================================= */
/* ----[ RESUME src/io/io.h ] */

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
#define BLITZ__OP_IS_FD(k)     ((k) >= BLITZ__OP_FD_READ && (k) <= BLITZ__OP_FD_POLL)

#define BLITZ__DIR_READ  0u
#define BLITZ__DIR_WRITE 1u

/* blitz_io.blitz__flags */
#define BLITZ__OPF_CONNECTING 1u /* connect(2) returned EINPROGRESS */
#define BLITZ__OPF_URING      2u /* submitted to the completion backend (its msghdr is in the op) */
/* A TCP connect with a time limit, timed by the kernel (a linked timeout
 * behind the CONNECT, see limit_connect) or by the runtime's timer. */
#define BLITZ__OPF_LIMIT_KERNEL 4u
#define BLITZ__OPF_LIMIT_TIMER  8u

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
    int fd;
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
} blitz__io;

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

/* Backends (each in its own file, stubs when compiled out). */
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
BLITZ_PRIVATE int blitz__sock_wrap(blitz__io *io, int fd, int family, int type, blitz_socket **out);
BLITZ_PRIVATE int blitz__op_result(blitz_io *op, int64_t r);
/* One non-blocking attempt of the op's system call: bytes, a new
 * descriptor (accept), 0 (connect), or -errno. */
BLITZ_PRIVATE int64_t blitz__op_attempt(blitz_io *op);
BLITZ_PRIVATE struct iovec *blitz__op_iov(const blitz_io *op, struct iovec *one, size_t *n);
BLITZ_PRIVATE int blitz__fifo_grow(void **buf, uint32_t *head, uint32_t count, uint32_t *cap,
                                   size_t elem, uint32_t first);
BLITZ_PRIVATE void blitz__io_ready(blitz_socket *s, int rd, int wr);
BLITZ_PRIVATE void blitz__io_complete(blitz__io *io, blitz_io *op, int32_t res, uint32_t flags);
BLITZ_PRIVATE void blitz__io_drain_fd(int fd);
/* Multishot receive (io_recv_ms.c). */
BLITZ_PRIVATE blitz_poll blitz__recv_ms_start(blitz_cx *cx, blitz_io *op, int *single_shot);
BLITZ_PRIVATE void blitz__recv_ms_close(blitz_socket *s);
BLITZ_PRIVATE void blitz__recv_ms_release(blitz_socket *s);
BLITZ_PRIVATE int blitz__recv_ms_wants(const blitz_socket *s, uint32_t kind, uint32_t dir);
BLITZ_PRIVATE int blitz__recv_ms_direct(blitz_socket *s);
/* Data of receives cancelled too late (io_salvage.c). */
BLITZ_PRIVATE int blitz__salvage_kind(uint32_t kind);
BLITZ_PRIVATE int blitz__salvage_worth(const blitz_socket *s, int64_t res);
BLITZ_PRIVATE void blitz__salvage_keep(blitz_socket *s, const blitz_io *op, size_t n,
                                       uint32_t from_len);
BLITZ_PRIVATE int blitz__salvage_take(blitz_socket *s, blitz_io *op, int64_t *r);
BLITZ_PRIVATE int blitz__salvage_waiting(const blitz_socket *s);
BLITZ_PRIVATE void blitz__salvage_release(blitz_socket *s);
/* The common poll of every op kind (io_driver.c), and the system call of
 * the descriptor kinds (io_fd.c). */
BLITZ_PRIVATE blitz_poll blitz__io_op_poll(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                           uint32_t kind, const void *buf, size_t len,
                                           uint32_t dir);
BLITZ_PRIVATE int64_t blitz__fd_attempt(blitz_io *op);
#endif
/* ====[ END src/io/io.h ]================================================== */
/* ----[ RESUME src/io/addr.c ] */

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
        if (*z >= '0' && *z <= '9') {
            /* A numeric scope: digits only, within 32 bits (strtoul would
             * take a sign and spaces and wrap). */
            uint64_t id = 0;
            for (; *z; z++) {
                if (*z < '0' || *z > '9')
                    goto bad;
                id = id * 10u + (uint64_t)(*z - '0');
                if (id > UINT32_MAX)
                    goto bad;
            }
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

BLITZ_API int blitz_host_port_split(const char *s, char *host, size_t cap, uint16_t *port) {
    if (!s || !host || cap == 0 || !port)
        return BLITZ_EINVAL;
    host[0] = 0;
    *port = 0;
    const char *start = s, *colon;
    size_t n;
    if (s[0] == '[') {
        const char *close_br = strchr(s, ']');
        if (!close_br || close_br[1] != ':')
            return BLITZ_EINVAL;
        start = s + 1;
        n = (size_t)(close_br - start);
        colon = close_br + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || strchr(s, ':') != colon)
            return BLITZ_EINVAL; /* no port, or an IPv6 address without brackets */
        n = (size_t)(colon - s);
    }
    if (n == 0 || n >= cap || memchr(start, ']', n) || !blitz__parse_port(colon + 1, port))
        return BLITZ_EINVAL;
    memcpy(host, start, n);
    host[n] = 0;
    return BLITZ_OK;
}

BLITZ_API int blitz_addr_parse(const char *s, blitz_addr *out) {
    if (!s || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
    uint16_t port;
    if (blitz_host_port_split(s, host, sizeof host, &port) != BLITZ_OK)
        return BLITZ_EINVAL;
    if (s[0] == '[' && !strchr(host, ':'))
        return BLITZ_EINVAL; /* brackets are for IPv6 only */
    return blitz_addr_ip(host, port, out);
}

BLITZ_API int blitz_addr_unix(const char *path, blitz_addr *out) {
    if (!path || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    struct sockaddr_un *u = (struct sockaddr_un *)(void *)out->u.bytes;
    size_t n = strlen(path);
    /* A path needs its terminator inside sun_path; an abstract name ("@"
     * then up to 107 bytes) has none and may fill it. */
    if (n == 0 || (path[0] == '@' ? n == 1 || n > sizeof u->sun_path : n >= sizeof u->sun_path))
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

/* Whether `a` holds a whole socket address of its family, as the kernel
 * would take it: for IPv4 and IPv6 at least their sockaddr (a length up to
 * the whole storage is fine), for Unix at least the family and at most a
 * struct sockaddr_un (an unnamed Unix address is the family alone). */
BLITZ_PRIVATE int blitz__addr_valid(const blitz_addr *a) {
    if (!a)
        return 0;
    switch (a->u.family) {
    case AF_INET:
        return a->len >= sizeof(struct sockaddr_in) && a->len <= sizeof a->u.bytes;
    case AF_INET6:
        return a->len >= sizeof(struct sockaddr_in6) && a->len <= sizeof a->u.bytes;
    case AF_UNIX:
        return a->len >= offsetof(struct sockaddr_un, sun_path) &&
               a->len <= sizeof(struct sockaddr_un);
    default:
        return 0;
    }
}

/* Stores a received datagram's source of `namelen` bytes (already in
 * a->u) as `a`'s length. A Unix sender that never bound has no name: the
 * kernel gives none, and it becomes the unnamed Unix address (the family
 * alone), the one blitz_sock_peer_addr gives for such a peer. */
BLITZ_PRIVATE void blitz__addr_set_from(blitz_addr *a, uint32_t namelen, int family) {
    if (family == AF_UNIX && namelen < offsetof(struct sockaddr_un, sun_path)) {
        a->u.family = AF_UNIX;
        namelen = (uint32_t)offsetof(struct sockaddr_un, sun_path);
    }
    a->len = namelen <= sizeof a->u.bytes ? namelen : (uint32_t)sizeof a->u.bytes;
}

BLITZ_API int blitz_addr_format(const blitz_addr *a, char *buf, size_t size) {
    if (!buf || size == 0)
        return BLITZ_EINVAL;
    buf[0] = 0;
    if (!blitz__addr_valid(a))
        return BLITZ_EINVAL;
    char tmp[160];
    int n;
    if (a->u.family == AF_INET) {
        const struct sockaddr_in *a4 = (const struct sockaddr_in *)(const void *)a->u.bytes;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof ip);
        n = snprintf(tmp, sizeof tmp, "%s:%u", ip, (unsigned)ntohs(a4->sin_port));
    } else if (a->u.family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)(const void *)a->u.bytes;
        char ip[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof ip);
        if (a6->sin6_scope_id)
            n = snprintf(tmp, sizeof tmp, "[%s%%%u]:%u", ip, (unsigned)a6->sin6_scope_id,
                         (unsigned)ntohs(a6->sin6_port));
        else
            n = snprintf(tmp, sizeof tmp, "[%s]:%u", ip, (unsigned)ntohs(a6->sin6_port));
    } else {
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
/* ====[ END src/io/addr.c ]================================================ */
/* ====[ BEGIN src/io/sock_table.c ]======================================== */
/* >>io/sock_table */
/* The socket table: every live socket of a driver, the ops linked to
 * each, and the references that decide when a socket's descriptor closes
 * and when its memory goes.
 *
 * References (blitz_socket.refs): the low 32 bits count holders that may
 * use the descriptor, the high 32 bits holders of the memory only. The
 * last descriptor reference closes the descriptor (after the backend's
 * sock_del) and turns into a memory reference in the same step; the last
 * memory reference takes the socket off the list and frees it, at once on
 * a completion backend, at the next dispatch cycle on a readiness one (an
 * event fetched before the close may still name it). Lock order: a
 * socket's lock, then socks_lock. */
/* src/io/io.h already included */

BLITZ_PRIVATE void blitz__op_link(blitz_socket *s, blitz_io *op) {
    op->blitz__prev = NULL;
    op->blitz__next = s->ops;
    if (s->ops)
        s->ops->blitz__prev = op;
    s->ops = op;
}

BLITZ_PRIVATE void blitz__op_unlink(blitz_socket *s, blitz_io *op) {
    if (op->blitz__prev)
        op->blitz__prev->blitz__next = op->blitz__next;
    else if (s->ops == op)
        s->ops = op->blitz__next;
    if (op->blitz__next)
        op->blitz__next->blitz__prev = op->blitz__prev;
    op->blitz__next = op->blitz__prev = NULL;
}

BLITZ_PRIVATE void blitz__sock_free_mem(blitz_socket *s) {
    for (uint32_t i = 0; i < s->ms_count; i++)
        close(s->ms_fds[(s->ms_head + i) % s->ms_cap]);
    if (s->ms_spare >= 0)
        close(s->ms_spare);
    blitz__free(s->ms_fds);
    blitz__recv_ms_release(s);
    blitz__salvage_release(s);
    blitz__mutex_destroy(&s->lock);
    BLITZ__MAGIC_SET(s, BLITZ__MAGIC_DEAD);
    blitz__free_handle(s);
}

/* Frees readiness sockets closed before this dispatch cycle. Caller holds
 * io->lock, so no event fetched earlier still names them. */
BLITZ_PRIVATE void blitz__io_free_deferred(blitz__io *io) {
    if (!blitz__u32_load(&io->has_free, BLITZ__RELAXED))
        return;
    blitz__mutex_lock(&io->socks_lock);
    blitz_socket *s = io->free_list;
    io->free_list = NULL;
    blitz__u32_store(&io->has_free, 0, BLITZ__RELAXED);
    blitz__mutex_unlock(&io->socks_lock);
    while (s) {
        blitz_socket *next = s->free_next;
        if (io->be->sock_free)
            io->be->sock_free(io, s);
        blitz__sock_free_mem(s);
        s = next;
    }
}

#define BLITZ__SOCK_FD_REF     ((uint64_t)1)
#define BLITZ__SOCK_MEM_REF    ((uint64_t)1 << 32)
#define BLITZ__SOCK_FD_REFS(v) ((uint32_t)(v))

BLITZ_PRIVATE void blitz__sock_ref(blitz_socket *s) {
    blitz__u64_fetch_add(&s->refs, BLITZ__SOCK_FD_REF, BLITZ__RELAXED);
}

/* The socket's memory: off the driver's list, then freed now (a
 * completion backend) or at the next dispatch cycle (a readiness backend:
 * an event fetched before the close may still name it). */
static void blitz__sock_release_mem(blitz_socket *s) {
    blitz__io *io = s->io;
    blitz__mutex_lock(&io->socks_lock);
    if (s->all_prev)
        s->all_prev->all_next = s->all_next;
    else
        io->all = s->all_next;
    if (s->all_next)
        s->all_next->all_prev = s->all_prev;
    if (io->be->completion) {
        blitz__mutex_unlock(&io->socks_lock);
        blitz__sock_free_mem(s);
        return;
    }
    s->free_next = io->free_list;
    io->free_list = s;
    blitz__u32_store(&io->has_free, 1, BLITZ__RELAXED);
    blitz__mutex_unlock(&io->socks_lock);
}

/* Drops a memory-only reference. Acquire-release: the last one orders
 * every holder's use of the socket before the free. */
BLITZ_PRIVATE void blitz__sock_unref_mem(blitz_socket *s) {
    if (blitz__u64_fetch_sub(&s->refs, BLITZ__SOCK_MEM_REF, BLITZ__ACQ_REL) == BLITZ__SOCK_MEM_REF)
        blitz__sock_release_mem(s);
}

/* Drops a descriptor reference. The last one closes the descriptor; it
 * turns into a memory reference in the same step, so a memory holder
 * letting go meanwhile cannot free the socket under the close. */
BLITZ_PRIVATE void blitz__sock_unref(blitz_socket *s) {
    uint64_t cur = blitz__u64_load(&s->refs, BLITZ__RELAXED);
    for (;;) {
        uint64_t next = cur - BLITZ__SOCK_FD_REF;
        if (BLITZ__SOCK_FD_REFS(cur) == 1)
            next += BLITZ__SOCK_MEM_REF;
        /* Acquire-release: as for any last reference. */
        if (blitz__u64_cas_weak(&s->refs, &cur, next, BLITZ__ACQ_REL))
            break;
    }
    if (BLITZ__SOCK_FD_REFS(cur) != 1)
        return;
    blitz__io *io = s->io;
    if (io->be->sock_del)
        io->be->sock_del(io, s);
    /* The number may be reused at once; an event already fetched for it
     * only bumps this (closed) socket's sequence numbers. */
    close(s->fd);
    s->fd_closed = 1;
    blitz__u32_fetch_sub(&io->nsocks, 1, BLITZ__RELAXED);
    blitz__sock_unref_mem(s);
}

/* A task's descriptor reference becomes a memory reference: its op now
 * waits, and the descriptor may close under it (a close of the socket
 * completes the op without the descriptor). */
BLITZ_PRIVATE void blitz__sock_fd_to_mem(blitz_socket *s) {
    uint64_t cur = blitz__u64_load(&s->refs, BLITZ__RELAXED);
    if (BLITZ__SOCK_FD_REFS(cur) > 1) {
        /* Not the last descriptor reference: one step. Relaxed: the
         * memory reference keeps the socket, nothing is published. */
        if (blitz__u64_cas_weak(&s->refs, &cur, cur - BLITZ__SOCK_FD_REF + BLITZ__SOCK_MEM_REF,
                                BLITZ__RELAXED))
            return;
    }
    blitz__u64_fetch_add(&s->refs, BLITZ__SOCK_MEM_REF, BLITZ__RELAXED);
    blitz__sock_unref(s);
}

/* A memory reference becomes a descriptor reference again, unless the
 * descriptor is closed (or closing): returns 0 then and keeps the memory
 * reference. Acquire: the holder's use of the descriptor comes after. */
BLITZ_PRIVATE int blitz__sock_mem_to_fd(blitz_socket *s) {
    uint64_t cur = blitz__u64_load(&s->refs, BLITZ__RELAXED);
    do {
        if (!BLITZ__SOCK_FD_REFS(cur))
            return 0;
    } while (!blitz__u64_cas_weak(&s->refs, &cur, cur + BLITZ__SOCK_FD_REF - BLITZ__SOCK_MEM_REF,
                                  BLITZ__ACQUIRE));
    return 1;
}

/* Wraps a non-blocking descriptor (left open on failure). */
BLITZ_PRIVATE int blitz__sock_wrap_keep(blitz__io *io, int fd, int family, int type,
                                        blitz_socket **out) {
    *out = NULL;
    if (!io)
        return BLITZ_ENOSYS;
    blitz_socket *s = BLITZ__FAULT(sock_alloc) ? NULL : (blitz_socket *)blitz__calloc(sizeof *s);
    if (!s)
        return BLITZ_ENOMEM;
    s->fd = fd;
    s->family = family;
    s->type = type;
    s->io = io;
    s->poll_slot = -1;
    s->ms_spare = -1;
    blitz__mutex_init(&s->lock);
    blitz__u64_store(&s->refs, BLITZ__SOCK_FD_REF, BLITZ__RELAXED);
    BLITZ__MAGIC_SET(s, BLITZ__MAGIC_SOCKET);
    if (io->be->sock_add) {
        int rc = io->be->sock_add(io, s);
        if (rc != BLITZ_OK) {
            blitz__sock_free_mem(s);
            return rc;
        }
    }
    /* The workers reap this socket's I/O even when only another runtime's
     * tasks or plain threads use it: they start with the first socket as
     * with the first spawn (after a shutdown they do not, and the socket
     * only closes). */
    if (io->rt->flavor != BLITZ_CURRENT_THREAD)
        (void)blitz__workers_start(io->rt);
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

/* Wraps a non-blocking descriptor (closed on failure). */
BLITZ_PRIVATE int blitz__sock_wrap(blitz__io *io, int fd, int family, int type,
                                   blitz_socket **out) {
    int rc = blitz__sock_wrap_keep(io, fd, family, type, out);
    if (rc != BLITZ_OK)
        close(fd);
    return rc;
}
/* ====[ END src/io/sock_table.c ]========================================== */
/* ====[ BEGIN src/io/driver.c ]============================================ */
/* >>io/driver */
/* The I/O driver's core: ops, their states and results, close, waiting
 * and creation, over one backend (backend.h; seed 002 "I/O Driver";
 * DESIGN.md "I/O").
 *
 * An op is submitted by the task that polls it, waits, and completes with
 * a result stored in the op:
 *   completion backend  the kernel performs the operation; the completion
 *              carries the result; sends try the system call first, since
 *              a send into a socket with room completes at once;
 *   readiness backend   the task performs the system call; on EAGAIN the
 *              op joins the socket's waiter list and an event of its
 *              direction wakes it to try again. Each event bumps the
 *              direction's sequence number under the socket's lock, and a
 *              waiter registers only if the number did not move since its
 *              attempt, so no event between the attempt and the
 *              registration is lost (the edge-triggered contract).
 *
 * Waiting and dispatching: any thread may reap without blocking (the start
 * of each worker tick, never blocking a busy worker); the one parked
 * worker that is the runtime's "sleeper" blocks in the backend with the
 * next timer's deadline as timeout (the current-thread driver always
 * does), so an idle runtime sees I/O at once. Its parker is then
 * PARKED_DRIVER, and an unpark writes the backend's wake-up object
 * (io->wake_fd), which is part of every backend wait.
 *
 * Buffer lifetime: an op the kernel holds (a completion backend) keeps a
 * reference on its task through its waker, so the task's block, where the
 * buffer lives, is not freed before the completion arrives, even when the
 * task was cancelled (its cancel hook asks the backend to cancel) or
 * finished. */
/* src/io/io.h already included */

/* The owner's view of an op's state. A completion publishes the final
 * state while it still holds the op's lock (blitz__op_lock below), so an
 * owner that sees a final state also waits for that lock's release
 * (acquire): only then is the completer done with the op, and the task may
 * reuse the op or let its memory go. Never called with the op lock held. */
static inline uint32_t blitz__op_state(const blitz_io *op) {
    uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__ACQUIRE);
    if (st != BLITZ__IO_INFLIGHT && st != BLITZ__IO_CANCELLING)
        while (blitz__u32_field_load(&op->blitz__lock, BLITZ__ACQUIRE))
            blitz__cpu_relax();
    return st;
}
BLITZ_PRIVATE void blitz__op_set_state(blitz_io *op, uint32_t st) {
    blitz__u32_field_store(&op->blitz__state, st, BLITZ__RELEASE);
}

/* Wakes an op's task; after shutdown only drops the reference (no task
 * runs any more). */
BLITZ_PRIVATE void blitz__io_wake(blitz__io *io, blitz_waker w) {
    if (blitz__u32_load(&io->shutdown, BLITZ__ACQUIRE))
        blitz_waker_drop(w);
    else
        blitz_waker_wake(w);
}

/* Doubles a circular queue of `elem`-byte entries (at least `first`),
 * laying its `count` entries out from index 0. Returns 0 when out of
 * memory (the queue is unchanged). */
BLITZ_PRIVATE int blitz__fifo_grow(void **buf, uint32_t *head, uint32_t count, uint32_t *cap,
                                   size_t elem, uint32_t first) {
    uint32_t ncap = *cap ? *cap * 2 : first;
    char *q = BLITZ__FAULT(queue_grow) ? NULL : (char *)blitz__calloc(elem * ncap);
    if (!q)
        return 0;
    for (uint32_t i = 0; i < count; i++)
        memcpy(q + (size_t)i * elem, (char *)*buf + (size_t)((*head + i) % *cap) * elem, elem);
    blitz__free(*buf);
    *buf = q;
    *head = 0;
    *cap = ncap;
    return 1;
}

/* A receive of `len` bytes got `r`: whether it filled its buffer (the next
 * one finds data waiting) and whether it took a pool buffer's worth (a
 * bulk reader: no multishot receive). */
static void blitz__recv_note(blitz_socket *s, int64_t r, size_t len) {
    blitz__u32_store(&s->rd_hot, r > 0 && (size_t)r == len, BLITZ__RELAXED);
    blitz__u32_store(&s->rd_bulk, r >= (int64_t)BLITZ_URING_RECV_BUF_SIZE, BLITZ__RELAXED);
}

/* ---- an op's own system call (readiness, and the tries before a submission) ---- */

static int64_t blitz__last_error(void) {
    return blitz__from_errno(errno);
}

/* The op's buffers as an iovec array: its own for the vectored kinds,
 * else `one` describing its single buffer. */
BLITZ_PRIVATE struct iovec *blitz__op_iov(const blitz_io *op, struct iovec *one, size_t *n) {
    if (op->blitz__kind == BLITZ__OP_RECVV || op->blitz__kind == BLITZ__OP_SENDV) {
        *n = op->blitz__len;
        return (struct iovec *)op->blitz__buf;
    }
    one->iov_base = op->blitz__buf;
    one->iov_len = op->blitz__len;
    *n = 1;
    return one;
}

static void blitz__op_msghdr(blitz_io *op, struct msghdr *m, struct iovec *one) {
    memset(m, 0, sizeof *m);
    size_t n;
    m->msg_iov = blitz__op_iov(op, one, &n);
    m->msg_iovlen = n;
    if (op->blitz__addr) {
        m->msg_name = op->blitz__addr->u.bytes;
        m->msg_namelen = op->blitz__kind == BLITZ__OP_SEND_TO ? op->blitz__addr->len
                                                              : sizeof op->blitz__addr->u.bytes;
    }
}

/* The sender's address length a completion backend's RECV_FROM got (its
 * msghdr is in the op). */
static uint32_t blitz__op_from_len(const blitz_io *op) {
    if (op->blitz__kind != BLITZ__OP_RECV_FROM || !(op->blitz__flags & BLITZ__OPF_URING))
        return 0;
    return (uint32_t)((const struct msghdr *)(const void *)op->blitz__scratch)->msg_namelen;
}

/* One non-blocking attempt: bytes, a new descriptor (accept), 0 (connect),
 * or -errno. */
BLITZ_PRIVATE int64_t blitz__op_attempt(blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    ssize_t r;
    errno = 0;
    switch (op->blitz__kind) {
    case BLITZ__OP_RECV:
        r = recv(s->fd, op->blitz__buf, op->blitz__len, 0);
        break;
    case BLITZ__OP_SEND:
    case BLITZ__OP_SEND_ALL:
        r = blitz__send_nosig(s->fd, (char *)op->blitz__buf + op->blitz__done,
                              op->blitz__len - op->blitz__done);
        break;
    case BLITZ__OP_RECVV:
    case BLITZ__OP_RECV_FROM: {
        struct msghdr m;
        struct iovec one;
        blitz__op_msghdr(op, &m, &one);
        r = recvmsg(s->fd, &m, MSG_DONTWAIT);
        if (r >= 0 && op->blitz__addr)
            blitz__addr_set_from(op->blitz__addr, m.msg_namelen, s->family);
        break;
    }
    case BLITZ__OP_SENDV:
    case BLITZ__OP_SEND_TO: {
        struct msghdr m;
        struct iovec one;
        blitz__op_msghdr(op, &m, &one);
        r = blitz__sendmsg_nosig(s->fd, &m);
        break;
    }
    case BLITZ__OP_ACCEPT:
        r = blitz__accept_nb(s->fd);
        break;
    case BLITZ__OP_CONNECT: {
        const blitz_addr *a = (const blitz_addr *)(void *)op->blitz__scratch;
        if (!(op->blitz__flags & BLITZ__OPF_CONNECTING)) {
            r = connect(s->fd, (const struct sockaddr *)(const void *)a->u.bytes, a->len);
            if (r < 0 && errno == EINPROGRESS) {
                op->blitz__flags |= BLITZ__OPF_CONNECTING;
                return BLITZ_EAGAIN;
            }
            break;
        }
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
            return blitz__last_error();
        if (err)
            return -(int64_t)err;
        struct sockaddr_storage peer;
        socklen_t pl = sizeof peer;
        if (getpeername(s->fd, (struct sockaddr *)&peer, &pl) < 0)
            return errno == ENOTCONN ? BLITZ_EAGAIN : blitz__last_error();
        return 0;
    }
    default:
        if (BLITZ__OP_IS_FD(op->blitz__kind))
            return blitz__fd_attempt(op);
        return BLITZ_EINVAL;
    }
    if (r < 0) {
        if (errno == EWOULDBLOCK)
            return BLITZ_EAGAIN;
        return blitz__last_error();
    }
    return (int64_t)r;
}

static blitz_timer *blitz__connect_timer(blitz_io *op) {
    _Static_assert(offsetof(blitz_addr, u) + BLITZ__CONNECT_ADDR_MAX <= BLITZ__CONNECT_TIMER_AT,
                   "the timer comes after the address");
    return (blitz_timer *)(void *)((char *)op->blitz__scratch + BLITZ__CONNECT_TIMER_AT);
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
BLITZ_PRIVATE int blitz__op_result(blitz_io *op, int64_t r) {
    return blitz__op_result_ex(op, r, 1);
}

/* `live`: the caller is using the socket. A completion delivered by the
 * driver (DONE) is consumed without touching the socket, which may be
 * closed and freed by now. */
static int blitz__op_result_ex(blitz_io *op, int64_t r, int live) {
    switch (op->blitz__kind) {
    case BLITZ__OP_SEND_ALL:
    case BLITZ__OP_FD_WRITE_ALL:
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
        /* A completion's descriptor is a socket already. */
        if (r >= 0 && !op->socket) {
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
            blitz__recv_note(op->blitz__sock, r, op->blitz__len);
        break;
    default:
        break;
    }
    op->result = r;
    blitz__op_set_state(op, BLITZ__IO_IDLE);
    return 1;
}

/* The op's own lock (a spin bit) guards the waker and state of a
 * completion backend's op between submission and completion, so the task,
 * a cancel and the completing thread never need the socket, which may be
 * closed and freed as soon as the completion is delivered. Order: socket
 * lock, then op lock, then the backend's submission lock. */
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

/* Polled again while registered: keep (or refresh) the waker. */
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

/* ---- the completion path -------------------------------------------------------------- */

/* A completion for `op` (a completion backend's). Dispatching thread. */
BLITZ_PRIVATE void blitz__io_complete(blitz__io *io, blitz_io *op, int32_t res, uint32_t flags) {
    (void)flags;
    /* Acquire: pairs with the submitter's release of INFLIGHT (the kernel
     * orders the CQE after the SQE, but a race detector cannot see it). */
    (void)blitz__op_state(op);
    blitz_socket *s = op->blitz__sock;
    int is_connect = op->blitz__kind == BLITZ__OP_CONNECT;
    /* An accepted descriptor becomes a socket here, not when the task
     * runs: the runtime then closes it with the rest even if the task
     * never runs again. (Before the listener's lock: the socket list's
     * lock comes first.) */
    blitz_socket *accepted = NULL;
    if (op->blitz__kind == BLITZ__OP_ACCEPT && res >= 0)
        res = blitz__sock_wrap((blitz__io *)(uintptr_t)op->blitz__scratch[0], res,
                               (int)op->blitz__scratch[1], SOCK_STREAM, &accepted);
    blitz__mutex_lock(&s->lock);
    blitz__op_unlink(s, op);
    int closed = s->closed;
    if (op->blitz__kind == BLITZ__OP_RECV && res >= 0)
        blitz__recv_note(s, res, op->blitz__len);
    blitz__op_lock(op);
    blitz_waker w = op->blitz__waker;
    op->blitz__waker = blitz_waker_noop();
    uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
    void *free_after = op->blitz__free_after; /* after the salvage below */
    op->blitz__free_after = NULL;
    if (st == BLITZ__IO_CANCELLING) {
        /* Nobody waits for the result. Data it received stays the
         * stream's; a send's count is reported by blitz_io_settle. */
        if (blitz__salvage_kind(op->blitz__kind) && blitz__salvage_worth(s, res) && !closed)
            blitz__salvage_keep(s, op, (size_t)res, blitz__op_from_len(op));
        op->blitz__res = res;
        if (op->blitz__kind == BLITZ__OP_CONNECT)
            op->blitz__sock = NULL; /* closed below */
        blitz__op_set_state(op, BLITZ__IO_IDLE);
    } else {
        /* ENOTSOCK: submitted after the close put its placeholder in. */
        if ((res == BLITZ_ECANCELED || (res == BLITZ_ENOTSOCK && s->fd_placeholder)) && closed)
            res = BLITZ_ECLOSED;
        else if (res == BLITZ_ECANCELED && is_connect &&
                 (op->blitz__flags & BLITZ__OPF_LIMIT_KERNEL))
            res = BLITZ_ETIMEDOUT; /* its linked timeout fired */
        op->blitz__res = res;
        op->socket = accepted;
        accepted = NULL;
        blitz__op_set_state(op, BLITZ__IO_DONE);
    }
    blitz__op_unlock(op);
    blitz__mutex_unlock(&s->lock);
    if (free_after)
        blitz__free(free_after);
    if (accepted)
        blitz_sock_close(accepted); /* the op was cancelled */
    /* From here on the op belongs to its task again: no more access. */
    if (is_connect && st == BLITZ__IO_CANCELLING)
        blitz_sock_close(s); /* the op's own reference */
    blitz__sock_unref(s);
    blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELEASE);
    blitz__io_wake(io, w);
}

/* ---- ops ------------------------------------------------------------------------------------ */

/* A buffer of the runtime's own (blitz__malloc) that `op` was using, now
 * given up by its owner: when the kernel still holds the op (a completion
 * backend, in flight or cancelled and not yet completed) the op's completion frees it
 * (1: the caller must not); otherwise the caller frees it (0). Under the
 * op's lock, which the completion holds as it turns the op idle. */
BLITZ_PRIVATE int blitz__io_free_after(blitz_io *op, void *buf) {
    blitz__op_lock(op);
    uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
    int kept = st == BLITZ__IO_INFLIGHT || st == BLITZ__IO_CANCELLING;
    if (kept)
        op->blitz__free_after = buf;
    blitz__op_unlock(op);
    return kept;
}

static blitz_poll blitz__op_go(blitz_cx *cx, blitz_io *op) {
    return op->blitz__sock->io->be->submit(cx, op);
}

/* An op holds a reference on its socket from its start until its task
 * has the result (or cancels it): a close from another thread then never
 * frees the socket, or closes its descriptor, under the task's system
 * call or lock, or under a re-poll of a waiting op. While the op waits
 * the reference is to the memory only (blitz__sockref 2), so a close
 * closes the descriptor even if the op's task never runs again (it was
 * cancelled without a cancel hook); before another system call it is a
 * descriptor reference again (blitz__sockref 1). Connect ops own their
 * socket and take none. */
static void blitz__op_drop_sock(blitz_io *op) {
    uint32_t held = op->blitz__sockref;
    op->blitz__sockref = 0;
    if (held == 1)
        blitz__sock_unref(op->blitz__sock);
    else if (held == 2)
        blitz__sock_unref_mem(op->blitz__sock);
}

/* The task is about to use the descriptor again (a retry after
 * readiness, the system call after a kernel readiness wait, the rest of a
 * send_all): 0 when the socket's descriptor is closed by now. */
static int blitz__op_hold_fd(blitz_io *op) {
    if (op->blitz__sockref != 2)
        return 1;
    if (!blitz__sock_mem_to_fd(op->blitz__sock))
        return 0;
    op->blitz__sockref = 1;
    return 1;
}

/* The op continues with its own system calls (see blitz__op_hold_fd). */
static blitz_poll blitz__op_go_on(blitz_cx *cx, blitz_io *op) {
    if (!blitz__op_hold_fd(op)) {
        blitz__op_result_ex(op, BLITZ_ECLOSED, 0);
        return BLITZ_READY;
    }
    return blitz__op_go(cx, op);
}

static blitz_poll blitz__op_poll_state(blitz_cx *cx, blitz_io *op, blitz_socket *s, uint32_t kind,
                                       const void *buf, size_t len, const blitz_addr *addr,
                                       uint32_t dir);

/* The common poll of every op kind. */
static blitz_poll blitz__op_poll(blitz_cx *cx, blitz_io *op, blitz_socket *s, uint32_t kind,
                                 const void *buf, size_t len, const blitz_addr *addr,
                                 uint32_t dir) {
    if (!op)
        return BLITZ_READY;
    blitz_poll p = blitz__op_poll_state(cx, op, s, kind, buf, len, addr, dir);
    if (p == BLITZ_READY) {
        blitz__op_drop_sock(op);
    } else if (op->blitz__sockref == 1) {
        op->blitz__sockref = 2;
        blitz__sock_fd_to_mem(op->blitz__sock);
    }
    return blitz__record(cx, p, blitz_io_cancel, op);
}

static blitz_poll blitz__op_poll_state(blitz_cx *cx, blitz_io *op, blitz_socket *s, uint32_t kind,
                                       const void *buf, size_t len, const blitz_addr *addr,
                                       uint32_t dir) {
    switch (blitz__op_state(op)) {
    case BLITZ__IO_IDLE:
        if (!cx || !s || (!buf && len)) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        /* The same code on every backend (the kernel says EINVAL for a
         * Unix listener, and a completion backend's receive waits for a
         * connection first). */
        if (s->listening &&
            (kind == BLITZ__OP_RECV || kind == BLITZ__OP_RECVV || kind == BLITZ__OP_RECV_FROM)) {
            op->result = BLITZ_ENOTCONN;
            return BLITZ_READY;
        }
        op->blitz__sock = s;
        op->blitz__kind = kind;
        op->blitz__buf = (void *)(uintptr_t)buf;
        op->blitz__len = len;
        op->blitz__addr = (blitz_addr *)(uintptr_t)addr;
        op->blitz__dir = dir;
        op->blitz__done = 0;
        op->blitz__got = 0;
        op->blitz__flags = 0;
        op->blitz__free_after = NULL;
        op->socket = NULL;
        op->result = 0;
        if (kind == BLITZ__OP_ACCEPT) {
            op->blitz__scratch[0] = (uint64_t)(uintptr_t)s->io;
            op->blitz__scratch[1] = (uint64_t)s->family;
        }
        blitz__sock_ref(s);
        op->blitz__sockref = 1;
        return blitz__op_go(cx, op);
    case BLITZ__IO_RETRY:
        return blitz__op_go_on(cx, op);
    case BLITZ__IO_DONE:
        /* A descriptor op's completion is readiness (a kernel readiness
         * wait): the system call comes now. */
        if (BLITZ__OP_IS_FD(op->blitz__kind) && op->blitz__kind != BLITZ__OP_FD_POLL &&
            op->blitz__res >= 0)
            return blitz__op_go_on(cx, op);
        if (op->blitz__kind == BLITZ__OP_RECV_FROM && op->blitz__addr && op->blitz__res >= 0 &&
            (op->blitz__flags & BLITZ__OPF_URING))
            blitz__addr_set_from(op->blitz__addr,
                                 ((struct msghdr *)(void *)op->blitz__scratch)->msg_namelen,
                                 op->blitz__sock ? op->blitz__sock->family : 0);
        if (blitz__op_result_ex(op, op->blitz__res, 0))
            return BLITZ_READY;
        return blitz__op_go_on(cx, op); /* send_all: the rest */
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

BLITZ_PRIVATE blitz_poll blitz__io_op_poll(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                           uint32_t kind, const void *buf, size_t len,
                                           uint32_t dir) {
    return blitz__op_poll(cx, op, s, kind, buf, len, NULL, dir);
}

static int blitz__io_cancel_state(blitz_io *op);

static int blitz__io_cancel(blitz_io *op) {
    if (!op)
        return BLITZ_EINVAL;
    if (op->blitz__kind == BLITZ__OP_CONNECT && (op->blitz__flags & BLITZ__OPF_LIMIT_TIMER)) {
        blitz_timer_cancel(NULL, blitz__connect_timer(op));
        blitz__connect_timer(op)->expired = 0;
    }
    int rc = blitz__io_cancel_state(op);
    blitz__op_drop_sock(op);
    return rc;
}

static int blitz__io_cancel_state(blitz_io *op) {
    uint32_t st = blitz__op_state(op);
    if (st == BLITZ__IO_IDLE || st == BLITZ__IO_CANCELLING)
        return BLITZ_OK;
    if (st == BLITZ__IO_RETRY || st == BLITZ__IO_DONE) {
        if (st == BLITZ__IO_DONE && op->blitz__kind == BLITZ__OP_ACCEPT && op->socket) {
            blitz_sock_close(op->socket);
            op->socket = NULL;
        }
        if (st == BLITZ__IO_DONE && blitz__salvage_kind(op->blitz__kind) &&
            blitz__salvage_worth(op->blitz__sock, op->blitz__res)) {
            /* Received and not handed out: it stays the stream's. */
            blitz_socket *s = op->blitz__sock;
            blitz__mutex_lock(&s->lock);
            if (!s->closed)
                blitz__salvage_keep(s, op, (size_t)op->blitz__res, blitz__op_from_len(op));
            blitz__mutex_unlock(&s->lock);
        }
        if (st == BLITZ__IO_RETRY)
            op->blitz__res = 0; /* nothing sent since the last attempt */
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
            op->blitz__res = 0; /* the completion's count replaces it */
            blitz__op_set_state(op, BLITZ__IO_CANCELLING);
            op->blitz__sock->io->be->cancel(op->blitz__sock->io, op);
            blitz__op_unlock(op);
            op->result = BLITZ_ECANCELED;
            return BLITZ_OK;
        }
        blitz__op_unlock(op);
        /* Completed meanwhile: consume the result as for DONE below. */
        return blitz__io_cancel_state(op);
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
        op->blitz__res = 0;
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

BLITZ_API void blitz_io_cancel(blitz_cx *cx, void *op) {
    (void)cx;
    (void)blitz__io_cancel((blitz_io *)op);
}

static int blitz__op_sends(uint32_t kind) {
    return kind == BLITZ__OP_SEND || kind == BLITZ__OP_SEND_ALL || kind == BLITZ__OP_SENDV ||
           kind == BLITZ__OP_SEND_TO || kind == BLITZ__OP_FD_WRITE ||
           kind == BLITZ__OP_FD_WRITE_ALL;
}

/* A cancelled op that had sent bytes (a send_all part of its data; a send
 * the kernel performed before the cancel reached it): `result` becomes
 * that count. */
static void blitz__op_settled(blitz_io *op) {
    if (op->result == BLITZ_ECANCELED && op->blitz__got) {
        op->result = (int64_t)op->blitz__got; /* a recv_exact's part */
        op->blitz__got = 0;
        return;
    }
    if (op->result != BLITZ_ECANCELED || !blitz__op_sends(op->blitz__kind))
        return;
    uint64_t sent = op->blitz__done;
    /* A descriptor op's completion is readiness, not a count. */
    if (!BLITZ__OP_IS_FD(op->blitz__kind) && op->blitz__res > 0)
        sent += (uint64_t)op->blitz__res;
    if (sent)
        op->result = (int64_t)sent;
}

BLITZ_API blitz_poll blitz_io_settle(blitz_cx *cx, blitz_io *op) {
    if (!op)
        return BLITZ_READY;
    if (blitz__op_state(op) == BLITZ__IO_CANCELLING) {
        if (!cx || blitz__op_rewait(cx, op) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_io_cancel, op);
    }
    blitz__op_settled(op);
    return BLITZ_READY;
}

BLITZ_API int blitz_io_pending(const blitz_io *op) {
    if (!op)
        return 0;
    uint32_t st = blitz__op_state(op);
    return st == BLITZ__IO_WAIT || st == BLITZ__IO_INFLIGHT || st == BLITZ__IO_CANCELLING;
}

/* A stream receive of nothing has nothing to wait for (recv(2) says 0 at
 * once): READY with 0. A datagram one still takes the next datagram. */
static int blitz__recv_nothing(blitz_io *op, const blitz_socket *s, size_t len) {
    if (op && s && len == 0 && s->type == SOCK_STREAM && blitz__op_state(op) == BLITZ__IO_IDLE) {
        op->result = 0;
        return 1;
    }
    return 0;
}

BLITZ_API blitz_poll blitz_sock_recv(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                     size_t len) {
    BLITZ__SOCK_CHECK(s);
    if (blitz__recv_nothing(op, s, len))
        return BLITZ_READY;
    return blitz__op_poll(cx, op, s, BLITZ__OP_RECV, buf, len, NULL, BLITZ__DIR_READ);
}
/* Plain receives into the rest of the buffer, so the backends and the
 * salvage of a cancelled receive see nothing new. blitz__got counts what
 * came; every op start clears it, so each receive puts it back. An op
 * that is idle (or still settling a cancel) starts afresh. */
BLITZ_API blitz_poll blitz_sock_recv_exact(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                           size_t len) {
    BLITZ__SOCK_CHECK(s);
    if (!op)
        return BLITZ_READY;
    uint32_t st = blitz__op_state(op);
    size_t got = st == BLITZ__IO_IDLE || st == BLITZ__IO_CANCELLING ? 0 : op->blitz__got;
    while (got < len) {
        blitz_poll p = blitz_sock_recv(cx, op, s, (char *)buf + got, len - got);
        op->blitz__got = got;
        if (p == BLITZ_PENDING)
            return BLITZ_PENDING;
        if (op->result <= 0) {
            if (op->result == 0)
                op->result = (int64_t)got; /* end of stream first */
            op->blitz__got = 0;
            return BLITZ_READY;
        }
        got += (size_t)op->result;
    }
    op->blitz__got = 0;
    op->result = (int64_t)len;
    return BLITZ_READY;
}
BLITZ_API blitz_poll blitz_sock_send(blitz_cx *cx, blitz_io *op, blitz_socket *s, const void *buf,
                                     size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND, buf, len, NULL, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_send_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                         const void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND_ALL, buf, len, NULL, BLITZ__DIR_WRITE);
}
/* Also each entry: a NULL base with a length would fail with EFAULT only
 * once data came. `*lens`: nonzero when an entry has a length. */
static int blitz__iov_ok(const blitz_iovec *iov, int n, size_t *lens) {
    *lens = 0;
    if (!iov || n <= 0 || n > BLITZ__IO_MAX_IOV)
        return 0;
    for (int i = 0; i < n; i++) {
        if (!iov[i].base && iov[i].len)
            return 0;
        *lens |= iov[i].len;
    }
    return 1;
}
BLITZ_API blitz_poll blitz_sock_recvv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt) {
    BLITZ__SOCK_CHECK(s);
    size_t lens = 1;
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__iov_ok(iov, iovcnt, &lens)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if (blitz__recv_nothing(op, s, lens))
        return BLITZ_READY;
    return blitz__op_poll(cx, op, s, BLITZ__OP_RECVV, iov, (size_t)iovcnt, NULL, BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_sock_sendv(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                      const blitz_iovec *iov, int iovcnt) {
    BLITZ__SOCK_CHECK(s);
    size_t lens;
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__iov_ok(iov, iovcnt, &lens)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_SENDV, iov, (size_t)iovcnt, NULL, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_send_to(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                        const void *buf, size_t len, const blitz_addr *to) {
    BLITZ__SOCK_CHECK(s);
    if (op && blitz__op_state(op) == BLITZ__IO_IDLE && !blitz__addr_valid(to)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    return blitz__op_poll(cx, op, s, BLITZ__OP_SEND_TO, buf, len, to, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_sock_recv_from(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                          size_t len, blitz_addr *from) {
    BLITZ__SOCK_CHECK(s);
    return blitz__op_poll(cx, op, s, from ? BLITZ__OP_RECV_FROM : BLITZ__OP_RECV, buf, len, from,
                          BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_sock_accept(blitz_cx *cx, blitz_io *op, blitz_socket *listener) {
    BLITZ__SOCK_CHECK(listener);
    return blitz__op_poll(cx, op, listener, BLITZ__OP_ACCEPT, NULL, 0, NULL, BLITZ__DIR_READ);
}

static int blitz__connect_expired(blitz_io *op) {
    return op->blitz__kind == BLITZ__OP_CONNECT && (op->blitz__flags & BLITZ__OPF_LIMIT_TIMER) &&
           blitz__connect_timer(op)->expired;
}

/* A connect whose limit fired: READY with BLITZ_ETIMEDOUT once its
 * withdrawal has settled. */
static blitz_poll blitz__connect_timed_out(blitz_cx *cx, blitz_io *op) {
    if (blitz_io_settle(cx, op) == BLITZ_PENDING)
        return BLITZ_PENDING;
    blitz__connect_timer(op)->expired = 0;
    op->result = BLITZ_ETIMEDOUT;
    return BLITZ_READY;
}

/* A connect timed by the runtime's timer: the timer runs while the op
 * waits; when it fires first the op is withdrawn (its socket closed) and,
 * once the kernel has let go of it (a completion backend), the result is
 * BLITZ_ETIMEDOUT. The timer's `expired` marks that wait. */
static blitz_poll blitz__connect_timed(blitz_cx *cx, blitz_io *op, blitz_poll p) {
    if (!cx || !(op->blitz__flags & BLITZ__OPF_LIMIT_TIMER))
        return p;
    blitz_timer *t = blitz__connect_timer(op);
    if (p == BLITZ_READY) {
        blitz_timer_cancel(NULL, t);
        return BLITZ_READY;
    }
    if (blitz_sleep_until(cx, t, t->deadline) == BLITZ_PENDING)
        return BLITZ_PENDING;
    blitz_io_cancel(NULL, op);
    t->expired = 1;
    return blitz__connect_timed_out(cx, op);
}

/* Connect: the op owns a fresh socket until it is connected. limit_ns > 0:
 * a TCP connect's time limit. */
static blitz_poll blitz__connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr, int family,
                                 int64_t limit_ns) {
    if (!op)
        return BLITZ_READY;
    if (blitz__connect_expired(op))
        return blitz__connect_timed_out(cx, op);
    uint32_t st = blitz__op_state(op);
    if (st == BLITZ__IO_CANCELLING && cx) {
        /* A cancelled connect: its completion is still due and closes the
         * socket; wait for it, then start the new one. */
        if (blitz__op_rewait(cx, op) == BLITZ_PENDING)
            return BLITZ_PENDING;
        st = blitz__op_state(op);
    }
    if (st != BLITZ__IO_IDLE)
        return blitz__connect_timed(cx, op,
                                    blitz__op_poll(cx, op, op->blitz__sock, BLITZ__OP_CONNECT, NULL,
                                                   0, NULL, BLITZ__DIR_WRITE));
    op->socket = NULL;
    if (!cx || !blitz__addr_valid(addr) || (family && addr->u.family != family) ||
        (!family && addr->u.family != AF_INET && addr->u.family != AF_INET6) ||
        (limit_ns > 0 && addr->len > BLITZ__CONNECT_ADDR_MAX)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz_runtime *rt = cx->ctx->rt;
    blitz__io *io = rt->io;
    int fd = blitz__socket_open(addr->u.family, SOCK_STREAM, 1);
    if (fd < 0) {
        op->result = fd;
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
    op->blitz__flags = 0;
    if (limit_ns > 0) {
        /* The address fits before the limit's timer and timespec. */
        memcpy(op->blitz__scratch, addr, offsetof(blitz_addr, u) + addr->len);
        blitz_timer *t = blitz__connect_timer(op);
        memset(t, 0, sizeof *t);
        t->deadline = blitz_deadline_after(blitz_cx_now(cx), limit_ns);
        /* The kernel times it when the backend can and the runtime's
         * clock runs (the kernel's clock is not a paused one). */
        if (!rt->time->paused && io->be->limit_connect && io->be->limit_connect(io, op, limit_ns)) {
            op->blitz__flags = BLITZ__OPF_LIMIT_KERNEL;
        } else {
            op->blitz__flags = BLITZ__OPF_LIMIT_TIMER;
        }
    } else {
        memcpy(op->blitz__scratch, addr, sizeof *addr);
    }
    op->blitz__sock = s;
    op->blitz__kind = BLITZ__OP_CONNECT;
    op->blitz__free_after = NULL;
    op->blitz__buf = NULL;
    op->blitz__len = 0;
    op->blitz__addr = NULL;
    op->blitz__dir = BLITZ__DIR_WRITE;
    op->blitz__done = 0;
    op->result = 0;
    return blitz__connect_timed(cx, op, blitz__op_go(cx, op));
}

BLITZ_API blitz_poll blitz_tcp_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr) {
    return blitz__record(cx, blitz__connect(cx, op, addr, 0, 0), blitz_io_cancel, op);
}
BLITZ_API blitz_poll blitz_tcp_connect_timeout(blitz_cx *cx, blitz_io *op, const blitz_addr *addr,
                                               int64_t timeout_ns) {
    return blitz__record(cx, blitz__connect(cx, op, addr, 0, timeout_ns), blitz_io_cancel, op);
}
BLITZ_API blitz_poll blitz_unix_connect(blitz_cx *cx, blitz_io *op, const blitz_addr *addr) {
    return blitz__record(cx, blitz__connect(cx, op, addr, AF_UNIX, 0), blitz_io_cancel, op);
}

/* ---- close ------------------------------------------------------------------------------------
 */

BLITZ_API int blitz_sock_close(blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
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
        } else if (blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_INFLIGHT) {
            io->be->cancel(io, op); /* only a completion backend has INFLIGHT ops */
        }
        op = next;
    }
    if (io->be->close)
        io->be->close(io, s);
    if (s->listening)
        blitz__u64_store(&io->listener_closed_ns, blitz__now_ns(), BLITZ__RELAXED);
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

BLITZ_PRIVATE void blitz__io_drain_fd(int fd) {
    uint64_t v;
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
}

/* Reaps without blocking (start of a tick). */
BLITZ_PRIVATE void blitz__io_poll(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io)
        return;
    io->be->poll(io);
}

/* A current-thread driver stops driving (its run returns). On a
 * completion backend a socket closed in that run keeps its descriptor until its ops' cancels
 * are reaped; the cancels ran when they were submitted, so one look now
 * closes it, rather than at the next drive or the free, which may be much
 * later (a peer waits for the end of the stream meanwhile). */
BLITZ_PRIVATE void blitz__io_after_drive(blitz_runtime *rt) {
    if (rt->io && rt->io->be->after_drive)
        rt->io->be->after_drive(rt->io);
}

/* Before a tick of a thread that runs tasks: a non-blocking look at the
 * backend when one is due. `*polls_since` counts the thread's task polls
 * since it last looked or parked in the backend (the caller adds each
 * tick's and clears it after a park); reset here after a look.
 * A backend whose look is a system call (look_interval) looks only after
 * an interval of polls, enough to keep a busy thread's I/O flowing: one
 * right after a park or after a tick that ran its queue dry mostly finds
 * nothing (the thread parks in the backend next anyway when it has
 * nothing to run). Every tick for the others: a completion ring's look
 * costs no system call and flushes the tick's submissions; poll's picks
 * up the interest the tick
 * registered, which would otherwise interrupt a blocked poller to rebuild
 * its set (measured with 3,000 idle connections: 0.33 ms echo latency
 * instead of 0.64). */
BLITZ_PRIVATE void blitz__io_between_ticks(blitz_runtime *rt, uint64_t *polls_since) {
    blitz__io *io = rt->io;
    if (!io || *polls_since < io->be->look_interval)
        return;
    blitz__io_poll(rt);
    *polls_since = 0;
}

/* Spin rounds before a worker parks. A runtime that serves sockets does
 * not spin by default: its wake-ups come from the kernel, which reaches a
 * worker parked in the backend directly, and spinning only takes CPU time
 * from the peers (measured: 10-13 us of server CPU per echo request with
 * spinning, 6-7 without, on the completion backend). An explicit spin_before_park is
 * kept. */
BLITZ_PRIVATE uint32_t blitz__io_spin_rounds(blitz_runtime *rt) {
    if (!rt->spin_explicit && rt->io && blitz__u32_load(&rt->io->nsocks, BLITZ__RELAXED))
        return 0;
    return rt->spin_before_park;
}

/* Whether the runtime serves sockets. A thread that is not a worker then
 * leaves the global queue to the workers: the tasks there do I/O, which
 * belongs on the workers' rings, and the workers are the CPU budget the
 * program chose. */
BLITZ_PRIVATE int blitz__io_serving(blitz_runtime *rt) {
    return rt->io && blitz__u32_load(&rt->io->nsocks, BLITZ__RELAXED) != 0;
}

/* Completions are waiting, known without a system call (a completion
 * backend's rings): a spinning worker stops spinning and reaps them. */
BLITZ_PRIVATE int blitz__io_ready_cheap(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    return io && io->be->ready_cheap && io->be->ready_cheap(io);
}

/* Every parked worker waits in the backend (its own ring), not only the
 * timer sleeper. */
BLITZ_PRIVATE int blitz__io_parks_workers(blitz_runtime *rt) {
    return rt->io && rt->io->be->parks_workers && rt->io->be->parks_workers(rt->io);
}

/* A worker thread starts (a completion backend arms its own ring's polls). */
BLITZ_PRIVATE void blitz__io_worker_start(blitz_runtime *rt, uint32_t index) {
    blitz__io *io = rt->io;
    if (io && io->be->worker_start)
        io->be->worker_start(io, index);
}

/* The calling thread starts driving a current-thread runtime. */
BLITZ_PRIVATE void blitz__io_driver_start(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (io && io->be->driver_start)
        io->be->driver_start(io);
}

/* Gives pending submissions to the kernel (before a thread sleeps
 * anywhere but in the backend). */
BLITZ_PRIVATE void blitz__io_flush(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (io && io->be->flush)
        io->be->flush(io);
}

/* Parks the calling thread in the backend until an event, an unpark of
 * `p`, or timeout_ns (0: no timeout). `woke(arg)` runs after the wait and
 * before the events are dispatched (a worker leaves the parked set there,
 * so the tasks it wakes go to other workers). */
BLITZ_PRIVATE void blitz__io_park(blitz_runtime *rt, blitz__parker *p, uint64_t timeout_ns,
                                  void (*woke)(void *), void *arg) {
    blitz__io *io = rt->io;
    io->be->park(io, p, timeout_ns ? timeout_ns : BLITZ__IO_FOREVER, woke, arg);
}

/* ---- creation, shutdown ------------------------------------------------------------------- */

/* The backends, in the order tried without a preference. */
static const blitz__io_backend *blitz__io_backend_of(int i) {
    switch (i) {
    case 0:
        return blitz__backend_ring();
    case 1:
        return blitz__backend_edge();
    case 2:
        return blitz__backend_kqueue();
    case 3:
        return blitz__backend_poll();
    default:
        return NULL;
    }
}

BLITZ_API const char *blitz_backend_name(blitz_backend b) {
    if (b == BLITZ_BACKEND_AUTO)
        return "auto";
    for (int i = 0; blitz__io_backend_of(i); i++)
        if (blitz__io_backend_of(i)->kind == b)
            return blitz__io_backend_of(i)->name;
    return "none";
}

BLITZ_API blitz_backend blitz_runtime_backend(const blitz_runtime *rt) {
    return rt && rt->io ? rt->io->be->kind : BLITZ_BACKEND_NONE;
}

static int blitz__io_try(blitz__io *io, const blitz__io_backend *be) {
    if (!be)
        return BLITZ_EINVAL;
    io->be = be;
    int rc = be->init(io);
    if (rc != BLITZ_OK)
        io->be = NULL;
    return rc;
}

/* The backend the BLITZ_BACKEND environment variable names, or NULL. */
static const blitz__io_backend *blitz__backend_from_env(void) {
    const char *e = getenv("BLITZ_BACKEND");
    if (!e || !*e)
        return NULL;
    for (int i = 0; blitz__io_backend_of(i); i++) {
        const blitz__io_backend *be = blitz__io_backend_of(i);
        if (!strcasecmp(e, be->name) || (be->alias && !strcasecmp(e, be->alias)))
            return be;
    }
    return NULL;
}

/* Creates rt->io. `forced`: a backend from the config that must start.
 * Without one: the environment's preference, then the backends in order
 * (the completion one, then the readiness ones). */
BLITZ_PRIVATE int blitz__io_create(blitz_runtime *rt, blitz_backend forced) {
    if (forced > BLITZ_BACKEND_KQUEUE)
        return BLITZ_EINVAL;
    if (forced == BLITZ_BACKEND_NONE)
        return BLITZ_OK;
    blitz__io *io = (blitz__io *)blitz__calloc(sizeof *io);
    if (!io)
        return BLITZ_ENOMEM;
    io->rt = rt;
    io->wake_fd = io->wake_rd = -1;
    io->epfd = -1;
    io->shared_efd = -1;
    blitz__mutex_init(&io->lock);
    blitz__mutex_init(&io->socks_lock);
    blitz__mutex_init(&io->poll_lock);
    int rc = BLITZ_EINVAL;
    if (forced != BLITZ_BACKEND_AUTO) {
        for (int i = 0; blitz__io_backend_of(i); i++)
            if (blitz__io_backend_of(i)->kind == forced)
                rc = blitz__io_try(io, blitz__io_backend_of(i));
    } else {
        const blitz__io_backend *env = blitz__backend_from_env();
        if (env)
            rc = blitz__io_try(io, env);
        for (int i = 0; rc != BLITZ_OK && blitz__io_backend_of(i); i++)
            rc = blitz__io_try(io, blitz__io_backend_of(i));
    }
    if (rc != BLITZ_OK) {
        blitz__mutex_destroy(&io->lock);
        blitz__mutex_destroy(&io->socks_lock);
        blitz__mutex_destroy(&io->poll_lock);
        blitz__free(io);
        /* Without a forced choice a runtime still works, without I/O. */
        return forced == BLITZ_BACKEND_AUTO ? BLITZ_OK : rc;
    }
    rt->io = io;
    return BLITZ_OK;
}

/* The descriptor that wakes worker `index` (UINT32_MAX: the current-thread
 * driver) when it is parked in the backend. */
BLITZ_PRIVATE int blitz__io_wake_fd(const blitz__io *io, uint32_t index) {
    return io->be->wake_fd ? io->be->wake_fd(io, index) : io->wake_fd;
}

/* Wakers taken from ops while the sockets' locks are held, dropped after:
 * dropping the last reference to a task runs its drop function, which may
 * close a socket (its lock) or free one (the socket list's lock). */
typedef struct {
    blitz_waker *items;
    size_t len, cap;
    blitz_waker inline_items[64];
} blitz__waker_list;

/* 0 when full and no more memory: the caller stops collecting. */
static int blitz__waker_list_push(blitz__waker_list *l, blitz_waker w) {
    if (l->len == l->cap) {
        size_t cap = l->cap * 2;
        blitz_waker *items = blitz__calloc(cap * sizeof *items);
        if (!items)
            return 0;
        memcpy(items, l->items, l->len * sizeof *items);
        if (l->items != l->inline_items)
            blitz__free(l->items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->len++] = w;
    return 1;
}

/* One pass over the sockets: waiting ops end with BLITZ_ESHUTDOWN (their
 * wakers go to `dropped`), ops in the kernel are cancelled. Returns 0 when
 * `dropped` ran out of memory before the pass ended; a further pass
 * finishes the job (what this one did is not done again). */
static int blitz__io_shutdown_pass(blitz__io *io, blitz__waker_list *dropped) {
    int complete = 1;
    blitz__mutex_lock(&io->socks_lock);
    for (blitz_socket *s = io->all; s && complete; s = s->all_next) {
        blitz__mutex_lock(&s->lock);
        blitz_io *op = s->ops;
        while (op) {
            blitz_io *next = op->blitz__next;
            uint32_t st = blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED);
            if (st == BLITZ__IO_WAIT) {
                if (!blitz__waker_list_push(dropped, op->blitz__waker)) {
                    complete = 0;
                    break;
                }
                blitz__op_unlink(s, op);
                op->blitz__waker = blitz_waker_noop();
                op->blitz__res = BLITZ_ESHUTDOWN;
                blitz__op_set_state(op, BLITZ__IO_DONE);
            } else if (st == BLITZ__IO_INFLIGHT) {
                blitz__op_lock(op);
                blitz__op_set_state(op, BLITZ__IO_CANCELLING);
                blitz__op_unlock(op);
                io->be->cancel(io, op);
            }
            op = next;
        }
        if (complete && io->be->quiesce)
            io->be->quiesce(io, s);
        blitz__mutex_unlock(&s->lock);
    }
    blitz__mutex_unlock(&io->socks_lock);
    return complete;
}

/* Shutdown (no task runs any more): every op is cancelled and its waker
 * dropped; a completion backend's completions are awaited so the kernel holds no buffer
 * when the task blocks are freed. */
BLITZ_PRIVATE void blitz__io_shutdown(blitz_runtime *rt) {
    blitz__io *io = rt->io;
    if (!io || blitz__u32_load(&io->shutdown, BLITZ__RELAXED))
        return;
    blitz__u32_store(&io->shutdown, 1, BLITZ__SEQ_CST);
    blitz__waker_list dropped;
    dropped.items = dropped.inline_items;
    dropped.len = 0;
    dropped.cap = sizeof dropped.inline_items / sizeof dropped.inline_items[0];
    int complete;
    do {
        complete = blitz__io_shutdown_pass(io, &dropped);
        for (size_t i = 0; i < dropped.len; i++)
            blitz_waker_drop(dropped.items[i]);
        dropped.len = 0;
    } while (!complete);
    if (dropped.items != dropped.inline_items)
        blitz__free(dropped.items);
    if (io->be->drain)
        io->be->drain(io);
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
        if (!s->fd_closed)
            close(s->fd);
        blitz__sock_free_mem(s);
        s = next;
    }
    io->all = NULL;
    io->be->destroy(io);
    blitz__mutex_destroy(&io->lock);
    blitz__mutex_destroy(&io->socks_lock);
    blitz__mutex_destroy(&io->poll_lock);
    blitz__free(io);
    rt->io = NULL;
}
/* ====[ END src/io/driver.c ]============================================== */
/* ====[ BEGIN src/io/readiness.c ]========================================= */
/* >>io/readiness */
/* The path shared by the readiness backends (backend.h): the task tries
 * the system call, and on EAGAIN its op waits in the socket's list until
 * an event of its direction.
 *
 * Each event bumps the direction's sequence number under the socket's
 * lock, and a waiter registers only if the number did not move since its
 * attempt, so no event between the attempt and the registration is lost
 * (the edge-triggered contract). One thread at a time waits in the
 * backend or dispatches its events (io->lock); the others look with a
 * try-lock, so a busy worker never blocks on it. */
/* src/io/io.h already included */

BLITZ_PRIVATE blitz_poll blitz__ready_submit(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__atomic_u32 *seqp = op->blitz__dir == BLITZ__DIR_WRITE ? &s->wr_seq : &s->rd_seq;
    /* A TCP receive after a short one waits for the next read event
     * without trying: TCP copies until the buffer is full or its queues are
     * empty, so a short receive drained the socket. The registration below
     * re-checks the sequence number, so an event since then still leads to
     * an attempt; once the end of the stream was seen (no further edge
     * comes) every receive tries. (A Unix stream receive may stop short of queued data: it
     * does not join segments of different senders.) */
    int stream_recv = s->type == SOCK_STREAM && (s->family == AF_INET || s->family == AF_INET6) &&
                      (op->blitz__kind == BLITZ__OP_RECV || op->blitz__kind == BLITZ__OP_RECVV);
    for (;;) {
        uint32_t seq0 = blitz__u32_load(seqp, BLITZ__ACQUIRE);
        int64_t r = BLITZ_EAGAIN;
        if (!stream_recv || blitz__u32_load(&s->rd_drained, BLITZ__RELAXED) != seq0 + 1u ||
            blitz__u32_load(&s->rd_final, BLITZ__RELAXED))
            r = blitz__op_attempt(op);
        if (r == BLITZ_EINTR)
            continue;
        if (stream_recv && r > 0 && op->blitz__kind == BLITZ__OP_RECV && (size_t)r < op->blitz__len)
            blitz__u32_store(&s->rd_drained, seq0 + 1u, BLITZ__RELAXED);
        if (r != BLITZ_EAGAIN) {
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
        if (s->io->be->want)
            s->io->be->want(s->io, s, 1u << op->blitz__dir);
        blitz__mutex_unlock(&s->lock);
        return BLITZ_PENDING;
    }
}

/* An event on `s`: bump the sequence numbers, wake the waiters of those
 * directions (ops in WAIT; on a completion backend the list also holds ops
 * the kernel owns, which are left alone). `want` becomes the directions
 * still waited for (only the poll backend reads it). Any thread. */
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
            if (blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) != BLITZ__IO_WAIT) {
                op = next;
                continue;
            }
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
        blitz__u32_store(&s->want, want, BLITZ__RELAXED);
        blitz__mutex_unlock(&s->lock);
        for (int i = 0; i < n; i++)
            blitz__io_wake(s->io, batch[i]);
        if (!more)
            return;
    }
}

/* Delivers the events of the last wait (io->lock held). */
static void blitz__ready_dispatch(blitz__io *io) {
    blitz__wake_batch_begin();
    io->be->dispatch(io);
    blitz__wake_batch_end();
}

/* The readiness backends' look: a try-lock, so a thread already waiting in
 * or dispatching the backend does the work. */
BLITZ_PRIVATE void blitz__ready_poll(blitz__io *io) {
    if (!blitz__mutex_trylock(&io->lock))
        return;
    blitz__io_free_deferred(io);
    io->be->wait(io, 0);
    blitz__ready_dispatch(io);
    blitz__mutex_unlock(&io->lock);
}

/* The readiness backends' park: one thread at a time waits in the backend
 * (io->lock) and dispatches what it got. */
BLITZ_PRIVATE void blitz__ready_park(blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg) {
    blitz__mutex_lock(&io->lock);
    blitz__io_free_deferred(io);
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED_DRIVER, BLITZ__ACQ_REL))
        io->be->wait(io, timeout_ns);
    blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE);
    if (woke)
        woke(arg);
    blitz__ready_dispatch(io);
    blitz__mutex_unlock(&io->lock);
}
/* ====[ END src/io/readiness.c ]=========================================== */
/* ====[ BEGIN src/io/salvage.c ]=========================================== */
/* >>io/salvage */
/* Data of a receive that was cancelled too late (a completion backend).
 *
 * A cancel of a receive the kernel holds races with its completion: the
 * kernel may have copied data into the op's buffer already, and then the
 * cancel finds nothing to stop. The op's task gave the receive up, so the
 * data would be lost to the stream; instead the completion keeps a copy
 * on the socket, and the next receive on the socket hands it out before
 * anything newer. A stream's copy is read in as many pieces as the
 * readers ask for; a datagram's goes whole to one reader (what does not
 * fit is dropped, as the system call would), with its sender's
 * address. */
/* src/io/io.h already included */

typedef struct blitz__salvage {
    struct blitz__salvage *next;
    size_t len, off;
    blitz_addr from; /* RECV_FROM: the sender (len 0 for none) */
    unsigned char data[];
} blitz__salvage;

/* Whether an op of this kind consumes data from the socket. */
BLITZ_PRIVATE int blitz__salvage_kind(uint32_t kind) {
    return kind == BLITZ__OP_RECV || kind == BLITZ__OP_RECVV || kind == BLITZ__OP_RECV_FROM;
}

/* Whether a receive's result `res` is data to keep: bytes, or on a
 * datagram socket an empty datagram too (a stream's 0 is its end, which
 * the next receive sees again). */
BLITZ_PRIVATE int blitz__salvage_worth(const blitz_socket *s, int64_t res) {
    return res > 0 || (res == 0 && s->type != SOCK_STREAM);
}

/* Keeps the `n` bytes the cancelled op received (still in its buffers,
 * which stay the caller's until the op settles). Caller holds the
 * socket's lock. Out of memory: the stream lost the data, and its next
 * reader learns it (BLITZ_ENOMEM). */
BLITZ_PRIVATE void blitz__salvage_keep(blitz_socket *s, const blitz_io *op, size_t n,
                                       uint32_t from_len) {
    blitz__salvage *c = (blitz__salvage *)blitz__malloc(sizeof *c + n);
    if (!c) {
        s->salvage_err = BLITZ_ENOMEM;
        blitz__u32_store(&s->salvage_n, 1, BLITZ__RELAXED);
        return;
    }
    c->next = NULL;
    c->len = n;
    c->off = 0;
    memset(&c->from, 0, sizeof c->from);
    if (op->blitz__kind == BLITZ__OP_RECV_FROM && op->blitz__addr) {
        c->from.len = from_len <= sizeof c->from.u.bytes ? from_len : sizeof c->from.u.bytes;
        memcpy(c->from.u.bytes, op->blitz__addr->u.bytes, c->from.len);
    }
    struct iovec one;
    size_t iovn, at = 0;
    const struct iovec *iov = blitz__op_iov(op, &one, &iovn);
    for (size_t i = 0; i < iovn && at < n; i++) {
        size_t take = iov[i].iov_len < n - at ? iov[i].iov_len : n - at;
        memcpy(c->data + at, iov[i].iov_base, take);
        at += take;
    }
    c->len = at;
    if (s->salvage_tail)
        s->salvage_tail->next = c;
    else
        s->salvage_head = c;
    s->salvage_tail = c;
    blitz__u32_store(&s->salvage_n, 1, BLITZ__RELAXED);
}

/* Serves a receive from kept data: 1 with the result in *r, or 0 when
 * there is none. The op's task; a receive that settled its cancelled one
 * sees the data (the completion kept it before the op's state turned
 * idle, a release the settle acquired). */
BLITZ_PRIVATE int blitz__salvage_take(blitz_socket *s, blitz_io *op, int64_t *r) {
    if (!blitz__u32_load(&s->salvage_n, BLITZ__RELAXED))
        return 0;
    blitz__mutex_lock(&s->lock);
    blitz__salvage *c = s->salvage_head;
    if (!c && !s->salvage_err) {
        blitz__mutex_unlock(&s->lock);
        return 0;
    }
    if (!c) {
        *r = s->salvage_err;
        s->salvage_err = 0;
    } else {
        struct iovec one;
        size_t iovn, got = 0;
        const struct iovec *iov = blitz__op_iov(op, &one, &iovn);
        for (size_t i = 0; i < iovn && c->off + got < c->len; i++) {
            size_t left = c->len - c->off - got;
            size_t take = iov[i].iov_len < left ? iov[i].iov_len : left;
            memcpy(iov[i].iov_base, c->data + c->off + got, take);
            got += take;
        }
        c->off += got;
        if (op->blitz__kind == BLITZ__OP_RECV_FROM && op->blitz__addr) {
            *op->blitz__addr = c->from;
            blitz__addr_set_from(op->blitz__addr, c->from.len, s->family);
        }
        if (c->off == c->len || s->type != SOCK_STREAM) {
            s->salvage_head = c->next;
            if (!s->salvage_head)
                s->salvage_tail = NULL;
            blitz__free(c);
        }
        *r = (int64_t)got;
    }
    blitz__u32_store(&s->salvage_n, s->salvage_head || s->salvage_err, BLITZ__RELAXED);
    blitz__mutex_unlock(&s->lock);
    return 1;
}

/* Whether kept data (or its loss) waits: the socket reads as readable.
 * Caller holds the socket's lock. */
BLITZ_PRIVATE int blitz__salvage_waiting(const blitz_socket *s) {
    return s->salvage_head || s->salvage_err;
}

/* The socket's memory goes. */
BLITZ_PRIVATE void blitz__salvage_release(blitz_socket *s) {
    while (s->salvage_head) {
        blitz__salvage *next = s->salvage_head->next;
        blitz__free(s->salvage_head);
        s->salvage_head = next;
    }
    s->salvage_tail = NULL;
}
/* ====[ END src/io/salvage.c ]============================================= */
/* ====[ BEGIN src/io/epoll.c ]============================================= */
/* >>io/epoll */
/* The epoll backend, a readiness backend (backend.h): every socket is
 * registered once, edge-triggered, for both directions (EPOLLIN | EPOLLOUT
 * | EPOLLRDHUP | EPOLLET), with the socket as the event's data; an event
 * bumps the socket's sequence numbers and wakes the waiters of its
 * directions (blitz__io_ready). Its wake-up object, an eventfd, is
 * registered level-triggered with NULL data. */
/* src/io/io.h already included */

#if !defined(BLITZ_NO_EPOLL)

static void blitz__epoll_destroy(blitz__io *io);

static int blitz__epoll_init(blitz__io *io) {
    io->wake_fd = io->wake_rd = blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (io->wake_fd < 0)
        return blitz__from_errno(errno);
    io->epfd = blitz__fd_above_stdio(epoll_create1(EPOLL_CLOEXEC));
    if (io->epfd < 0) {
        int rc = blitz__from_errno(errno);
        blitz__epoll_destroy(io);
        return rc;
    }
    io->events = blitz__calloc(sizeof(struct epoll_event) * BLITZ__IO_EVENTS);
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = NULL;
    /* The wait is tried once: a seccomp filter may refuse epoll_wait
     * alone, and workers would retry it forever. */
    if (!io->events || epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->wake_fd, &ev) < 0 ||
        (epoll_wait(io->epfd, (struct epoll_event *)io->events, 1, 0) < 0 && errno != EINTR)) {
        int rc = io->events ? blitz__from_errno(errno) : BLITZ_ENOMEM;
        blitz__epoll_destroy(io);
        return rc;
    }
    return BLITZ_OK;
}

static void blitz__epoll_destroy(blitz__io *io) {
    if (io->epfd >= 0)
        close(io->epfd);
    io->epfd = -1;
    blitz__free(io->events);
    io->events = NULL;
    if (io->wake_fd >= 0)
        close(io->wake_fd);
    io->wake_fd = io->wake_rd = -1;
}

static int blitz__epoll_add(blitz__io *io, blitz_socket *s) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = s;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0)
        return blitz__from_errno(errno);
    return BLITZ_OK;
}

static void blitz__epoll_del(blitz__io *io, blitz_socket *s) {
    if (s->fd >= 0)
        epoll_ctl(io->epfd, EPOLL_CTL_DEL, s->fd, NULL);
}

/* Caller holds io->lock. timeout_ns: 0 = do not block, BLITZ__IO_FOREVER. */
static void blitz__epoll_wait(blitz__io *io, uint64_t timeout_ns) {
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
    int n = epoll_wait(io->epfd, (struct epoll_event *)io->events, BLITZ__IO_EVENTS, ms);
    io->nevents = n < 0 ? 0 : n;
}

static void blitz__epoll_dispatch(blitz__io *io) {
    int n = io->nevents;
    io->nevents = 0;
    for (int i = 0; i < n; i++) {
        struct epoll_event *e = &((struct epoll_event *)io->events)[i];
        blitz_socket *s = (blitz_socket *)e->data.ptr;
        if (!s) {
            blitz__io_drain_fd(io->wake_rd);
            continue;
        }
        uint32_t ev = e->events;
        int rd = (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI)) != 0;
        int wr = (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
        /* The end of the stream or an error stays readable with no further
         * edge: receives try again from now on (published by the
         * sequence bump's release in blitz__io_ready). */
        if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            blitz__u32_store(&s->rd_final, 1, BLITZ__RELAXED);
        blitz__io_ready(s, rd, wr);
    }
}

static const blitz__io_backend blitz__epoll_vtable = {
    .kind = BLITZ_BACKEND_EPOLL,
    .name = "epoll",
    .completion = 0,
    .look_interval = BLITZ__IO_EVENT_INTERVAL, /* a look is a system call */
    .init = blitz__epoll_init,
    .destroy = blitz__epoll_destroy,
    .submit = blitz__ready_submit,
    .sock_add = blitz__epoll_add,
    .sock_del = blitz__epoll_del,
    .poll = blitz__ready_poll,
    .park = blitz__ready_park,
    .wait = blitz__epoll_wait,
    .dispatch = blitz__epoll_dispatch,
};

#else

static int blitz__epoll_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}

static const blitz__io_backend blitz__epoll_vtable = {
    .kind = BLITZ_BACKEND_EPOLL,
    .name = "epoll",
    .init = blitz__epoll_init,
};

#endif

BLITZ_PRIVATE const blitz__io_backend *blitz__backend_edge(void) {
    return &blitz__epoll_vtable;
}
/* ====[ END src/io/epoll.c ]=============================================== */
/* ====[ BEGIN src/io/kqueue.c ]============================================ */
/* >>io/kqueue */
/* The kqueue backend (macOS 11+, FreeBSD 13+), a readiness backend
 * (backend.h): every socket is registered once, for both directions
 * (EVFILT_READ and EVFILT_WRITE, each EV_CLEAR, so each fires once per
 * change of state, like an edge), with the socket as the knote's udata; an
 * event bumps the socket's sequence numbers and wakes the waiters of its
 * direction (blitz__io_ready). EV_EOF on the read filter (the peer's end
 * of stream) or with an error in fflags means no further event comes:
 * receives try again from then on (rd_final), and the retried call
 * reports the error itself.
 *
 * Its wake-up object is the kqueue's own EVFILT_USER knote (EV_CLEAR; a
 * parker's wake_fd is BLITZ__WAKE_KQ(kq), platform/bsd.c triggers it);
 * where the system has no EVFILT_USER (older NetBSD and OpenBSD) it is a
 * self-pipe whose read end is a level-triggered EVFILT_READ knote with no
 * udata.
 *
 * The timer wheel's next deadline arrives as the wait's timeout, which is
 * kevent's own. A socket's registration and removal are applied at once
 * rather than batched into the next wait: a thread may be blocked in
 * kevent when a socket is added (a deferred add would leave it deaf), and
 * a removal must precede the close (a deferred one could remove the knote
 * of a new socket given the same descriptor number). The two filters of
 * a socket go in one call, with EV_RECEIPT, so each change's error comes
 * back in its own EV_ERROR entry (data: the system's errno).
 *
 * The kqueue is io->epfd, its event array io->events. */
/* src/io/io.h already included */

#if BLITZ__HAS_KQUEUE && !defined(BLITZ_NO_KQUEUE)

/* The event list of the changes of one socket: its two receipts. */
#define BLITZ__KQ_CHANGES 2

static void blitz__kq_destroy(blitz__io *io);

/* The self-pipe wake-up, where EVFILT_USER is missing. */
static int blitz__kq_wake_pipe(blitz__io *io) {
    int fds[2];
    int rc = blitz__pipe_open(fds, 1);
    if (rc != BLITZ_OK)
        return rc;
    io->wake_rd = blitz__fd_above_stdio(fds[0]);
    io->wake_fd = blitz__fd_above_stdio(fds[1]);
    if (io->wake_rd < 0 || io->wake_fd < 0)
        return blitz__from_errno(errno);
    struct kevent ch;
    EV_SET(&ch, (uintptr_t)io->wake_rd, EVFILT_READ, EV_ADD, 0, 0, NULL);
    return kevent(io->epfd, &ch, 1, NULL, 0, NULL) < 0 ? blitz__from_errno(errno) : BLITZ_OK;
}

static int blitz__kq_init(blitz__io *io) {
    io->epfd = blitz__fd_above_stdio(kqueue());
    if (io->epfd < 0)
        return blitz__from_errno(errno);
    int rc = BLITZ_OK;
    if (fcntl(io->epfd, F_SETFD, FD_CLOEXEC) < 0)
        rc = blitz__from_errno(errno);
    io->events = blitz__calloc(sizeof(struct kevent) * BLITZ__IO_EVENTS);
    if (rc == BLITZ_OK && !io->events)
        rc = BLITZ_ENOMEM;
    if (rc == BLITZ_OK) {
        struct kevent ch;
        EV_SET(&ch, BLITZ__KQ_WAKE_IDENT, EVFILT_USER, EV_ADD | EV_CLEAR, 0, 0, NULL);
        if (kevent(io->epfd, &ch, 1, NULL, 0, NULL) == 0)
            io->wake_fd = BLITZ__WAKE_KQ(io->epfd);
        else
            rc = blitz__kq_wake_pipe(io);
    }
    /* The wait is tried once: a sandbox may refuse it, and workers would
     * retry it forever. */
    struct timespec zero = {0, 0};
    if (rc == BLITZ_OK && kevent(io->epfd, NULL, 0, (struct kevent *)io->events, 1, &zero) < 0 &&
        errno != EINTR)
        rc = blitz__from_errno(errno);
    if (rc != BLITZ_OK)
        blitz__kq_destroy(io);
    return rc;
}

static void blitz__kq_destroy(blitz__io *io) {
    if (io->epfd >= 0)
        close(io->epfd);
    io->epfd = -1;
    blitz__free(io->events);
    io->events = NULL;
    if (io->wake_fd >= 0)
        close(io->wake_fd);
    if (io->wake_rd >= 0)
        close(io->wake_rd);
    io->wake_fd = io->wake_rd = -1;
}

/* Applies one socket's changes: BLITZ_OK or the first change's error. */
static int blitz__kq_change(blitz__io *io, struct kevent *ch, int n) {
    struct kevent got[BLITZ__KQ_CHANGES];
    for (int i = 0; i < n; i++)
        ch[i].flags |= EV_RECEIPT;
    int r;
    while ((r = kevent(io->epfd, ch, n, got, n, NULL)) < 0 && errno == EINTR) {
    }
    if (r < 0)
        return blitz__from_errno(errno);
    for (int i = 0; i < r; i++)
        if ((got[i].flags & EV_ERROR) && got[i].data != 0)
            return blitz__from_errno((int)got[i].data);
    return BLITZ_OK;
}

static int blitz__kq_add(blitz__io *io, blitz_socket *s) {
    struct kevent ch[BLITZ__KQ_CHANGES];
    EV_SET(&ch[0], (uintptr_t)s->fd, EVFILT_READ, EV_ADD | EV_CLEAR, 0, 0, s);
    EV_SET(&ch[1], (uintptr_t)s->fd, EVFILT_WRITE, EV_ADD | EV_CLEAR, 0, 0, s);
    int rc = blitz__kq_change(io, ch, BLITZ__KQ_CHANGES);
    if (rc != BLITZ_OK) {
        /* One filter may have been added. */
        EV_SET(&ch[0], (uintptr_t)s->fd, EVFILT_READ, EV_DELETE, 0, 0, NULL);
        EV_SET(&ch[1], (uintptr_t)s->fd, EVFILT_WRITE, EV_DELETE, 0, 0, NULL);
        (void)blitz__kq_change(io, ch, BLITZ__KQ_CHANGES);
    }
    return rc;
}

/* Before the close: the kernel would drop the knotes with the last close
 * of the file, but the descriptor may be shared (an adopted one) and
 * events must stop naming the socket now. ENOENT is fine. */
static void blitz__kq_del(blitz__io *io, blitz_socket *s) {
    if (s->fd < 0)
        return;
    struct kevent ch[BLITZ__KQ_CHANGES];
    EV_SET(&ch[0], (uintptr_t)s->fd, EVFILT_READ, EV_DELETE, 0, 0, NULL);
    EV_SET(&ch[1], (uintptr_t)s->fd, EVFILT_WRITE, EV_DELETE, 0, 0, NULL);
    (void)blitz__kq_change(io, ch, BLITZ__KQ_CHANGES);
}

/* Caller holds io->lock. timeout_ns: 0 = do not block, BLITZ__IO_FOREVER. */
static void blitz__kq_wait(blitz__io *io, uint64_t timeout_ns) {
    struct timespec ts, *tsp = NULL;
    if (timeout_ns != BLITZ__IO_FOREVER) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tsp = &ts;
    }
    int n = kevent(io->epfd, NULL, 0, (struct kevent *)io->events, BLITZ__IO_EVENTS, tsp);
    io->nevents = n < 0 ? 0 : n;
}

/* Empties the self-pipe (level-triggered: what is left fires again). */
static void blitz__kq_drain_pipe(int fd) {
    char buf[64];
    while (read(fd, buf, sizeof buf) == (ssize_t)sizeof buf) {
    }
}

static void blitz__kq_dispatch(blitz__io *io) {
    int n = io->nevents;
    io->nevents = 0;
    for (int i = 0; i < n; i++) {
        struct kevent *e = &((struct kevent *)io->events)[i];
        blitz_socket *s = (blitz_socket *)e->udata;
        if (!s) {
            if (e->filter == EVFILT_READ)
                blitz__kq_drain_pipe(io->wake_rd);
            continue; /* EVFILT_USER: EV_CLEAR reset it */
        }
        if (e->flags & EV_ERROR)
            continue; /* a change's receipt; none is asked for here */
        int rd = e->filter == EVFILT_READ;
        int wr = e->filter == EVFILT_WRITE;
        /* The end of the stream, or an error (fflags), stays with no
         * further event: receives try again from now on (published by the
         * sequence bump's release in blitz__io_ready). */
        if ((e->flags & EV_EOF) && (rd || e->fflags != 0))
            blitz__u32_store(&s->rd_final, 1, BLITZ__RELAXED);
        if (e->fflags != 0 && (e->flags & EV_EOF))
            rd = wr = 1;
        blitz__io_ready(s, rd, wr);
    }
}

static const blitz__io_backend blitz__kq_vtable = {
    .kind = BLITZ_BACKEND_KQUEUE,
    .name = "kqueue",
    .completion = 0,
    .look_interval = BLITZ__IO_EVENT_INTERVAL, /* a look is a system call */
    .init = blitz__kq_init,
    .destroy = blitz__kq_destroy,
    .submit = blitz__ready_submit,
    .sock_add = blitz__kq_add,
    .sock_del = blitz__kq_del,
    .poll = blitz__ready_poll,
    .park = blitz__ready_park,
    .wait = blitz__kq_wait,
    .dispatch = blitz__kq_dispatch,
};

#else

static int blitz__kq_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}

static const blitz__io_backend blitz__kq_vtable = {
    .kind = BLITZ_BACKEND_KQUEUE,
    .name = "kqueue",
    .init = blitz__kq_init,
};

#endif

BLITZ_PRIVATE const blitz__io_backend *blitz__backend_kqueue(void) {
    return &blitz__kq_vtable;
}
/* ====[ END src/io/kqueue.c ]============================================== */
/* ====[ BEGIN src/io/poll.c ]============================================== */
/* >>io/poll */
/* The poll backend, the portable fallback, a readiness backend
 * (backend.h). Level-triggered, so only the directions that have waiters
 * are polled: a socket joins the poll set when an op registers a waiter
 * (its `want` bits) and leaves it when a wait cycle finds it without
 * waiters. Its wake-up object is a self-pipe (io->wake_fd writes, its
 * read end io->wake_rd is always in the set); a thread blocked in ppoll
 * is kicked through it when a socket joins or leaves the set. */
/* src/io/io.h already included */

#if !defined(BLITZ_NO_POLL)

static void blitz__pollb_destroy(blitz__io *io);

static int blitz__pollb_init(blitz__io *io) {
    int fds[2];
    int opened = blitz__pipe_open(fds, 1);
    if (opened != BLITZ_OK)
        return opened;
    io->wake_rd = blitz__fd_above_stdio(fds[0]);
    io->wake_fd = blitz__fd_above_stdio(fds[1]);
    io->pcap = 64;
    io->pset = (blitz_socket **)blitz__calloc(sizeof(blitz_socket *) * io->pcap);
    io->pfd_cap = 65;
    io->pfds = (struct pollfd *)blitz__calloc(sizeof(struct pollfd) * io->pfd_cap);
    io->psocks = (blitz_socket **)blitz__calloc(sizeof(blitz_socket *) * io->pfd_cap);
    if (!io->pset || !io->pfds || !io->psocks) {
        blitz__pollb_destroy(io); /* frees what was allocated */
        return BLITZ_ENOMEM;
    }
    /* The wait is tried once: a seccomp filter may refuse ppoll, and
     * workers would retry it forever. */
    struct timespec zero = {0, 0};
    if (blitz__poll_wait(NULL, 0, &zero) < 0 && errno != EINTR) {
        int rc = blitz__from_errno(errno);
        blitz__pollb_destroy(io);
        return rc;
    }
    return BLITZ_OK;
}

static void blitz__pollb_destroy(blitz__io *io) {
    blitz__free(io->pset);
    blitz__free(io->pfds);
    blitz__free(io->psocks);
    io->pset = NULL;
    io->pfds = NULL;
    io->psocks = NULL;
    if (io->wake_fd >= 0)
        close(io->wake_fd);
    if (io->wake_rd >= 0)
        close(io->wake_rd);
    io->wake_fd = io->wake_rd = -1;
}

/* Empties the self-pipe (every wake-up wrote 8 bytes). */
static void blitz__pollb_drain(int fd) {
    char buf[256];
    ssize_t r;
    do
        r = read(fd, buf, sizeof buf);
    while (r == (ssize_t)sizeof buf || (r < 0 && errno == EINTR));
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

/* A socket got a waiter of direction `bit` (caller holds its lock). */
static void blitz__pollb_want(blitz__io *io, blitz_socket *s, uint32_t bit) {
    if (blitz__u32_load(&s->want, BLITZ__RELAXED) & bit)
        return;
    blitz__u32_fetch_or(&s->want, bit, BLITZ__SEQ_CST);
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

/* A socket's descriptor is closed (or its memory is about to go). A
 * poller blocked with it in its set is woken: its ppoll holds the file
 * open (a TCP peer would not see the end of the stream until it
 * returns). */
static void blitz__pollb_forget(blitz__io *io, blitz_socket *s) {
    blitz__mutex_lock(&io->poll_lock);
    int was_in_set = s->poll_slot >= 0;
    blitz__pollb_remove_locked(io, s);
    blitz__mutex_unlock(&io->poll_lock);
    if (was_in_set && blitz__u32_load(&io->poll_blocked, BLITZ__SEQ_CST)) {
        uint64_t one = 1;
        ssize_t r = write(io->wake_fd, &one, sizeof one);
        (void)r;
    }
}

static void blitz__pollb_wait(blitz__io *io, uint64_t timeout_ns) {
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
    short rd_events = blitz__poll_read_events();
    io->pfds[n].fd = io->wake_rd;
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
        io->pfds[n].events = (short)(((want & 1u) ? rd_events : 0) | ((want & 2u) ? POLLOUT : 0));
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
    int r = blitz__poll_wait(io->pfds, (nfds_t)n, tsp);
    blitz__u32_store(&io->poll_blocked, 0, BLITZ__RELAXED);
    io->npfds = r > 0 ? n : 0;
}

static void blitz__pollb_dispatch(blitz__io *io) {
    short rd_events = blitz__poll_read_events();
    int n = io->npfds;
    io->npfds = 0;
    for (int i = 0; i < n; i++) {
        short ev = io->pfds[i].revents;
        if (!ev)
            continue;
        blitz_socket *s = io->psocks[i];
        if (!s) {
            blitz__pollb_drain(io->wake_rd);
            continue;
        }
        int rd = (ev & (rd_events | POLLHUP | POLLERR | POLLNVAL | POLLPRI)) != 0;
        int wr = (ev & (POLLOUT | POLLHUP | POLLERR | POLLNVAL)) != 0;
        blitz__io_ready(s, rd, wr);
    }
}

static const blitz__io_backend blitz__pollb_vtable = {
    .kind = BLITZ_BACKEND_POLL,
    .name = "poll",
    .completion = 0,
    .look_interval = 0,
    .init = blitz__pollb_init,
    .destroy = blitz__pollb_destroy,
    .submit = blitz__ready_submit,
    .sock_del = blitz__pollb_forget,
    .sock_free = blitz__pollb_forget,
    .want = blitz__pollb_want,
    .poll = blitz__ready_poll,
    .park = blitz__ready_park,
    .wait = blitz__pollb_wait,
    .dispatch = blitz__pollb_dispatch,
};

#else

static int blitz__pollb_init(blitz__io *io) {
    (void)io;
    return BLITZ_ENOSYS;
}

static const blitz__io_backend blitz__pollb_vtable = {
    .kind = BLITZ_BACKEND_POLL,
    .name = "poll",
    .init = blitz__pollb_init,
};

#endif

BLITZ_PRIVATE const blitz__io_backend *blitz__backend_poll(void) {
    return &blitz__pollb_vtable;
}
/* ====[ END src/io/poll.c ]================================================ */
/* ====[ BEGIN src/io/uring.c ]============================================= */
/* >>io/uring */
/* The io_uring backend, through raw system calls (no liburing).
 *
 * A ring per worker, plus one shared ring. The kernel finishes a socket
 * op armed on readiness (FAST_POLL) in task work of the thread that
 * submitted it; with one ring shared by all workers that work interrupted
 * whichever worker had submitted, often asleep or busy, and ran at once,
 * while the network stack on the other CPU still held the socket's lock
 * (measured: half the server's CPU time spinning in lock_sock, 46-60k
 * echo req/s with 2 workers). So each worker submits to its own ring,
 * parks in it and reaps it: the completions of its ops come back to it.
 * Its ring is COOP_TASKRUN (with TASKRUN_FLAG) where the kernel has it: the
 * task work waits for the worker's next system call or ring wait instead
 * of an interrupt. Threads that are not workers (the current-thread
 * driver, plain threads) use the shared ring; in a multi-thread runtime
 * the kernel signals an eventfd for its completions that every worker
 * ring polls. A current-thread runtime's shared ring is COOP_TASKRUN too:
 * its driver submits nearly everything and waits in it (measured with the
 * anchors' echo client: 45k req/s at 22 us of server CPU per request with
 * interrupting task work, 168k at 5.7 us without). A thread that submitted
 * to it and sleeps elsewhere is still woken to run its task work (a
 * COOP_TASKRUN notification skips the interrupt of a running thread, not
 * the wake-up of a sleeping one); one that computes without system calls
 * delays its own ops' completions until its next one. A multi-thread
 * runtime's shared ring stays without: its submitters are plain threads
 * and the block_on thread, whose completions the workers reap.
 *
 * Submissions take the ring's `sq_lock` (a few stores; a worker leaves the
 * io_uring_enter to the start of its next tick or its park, so one system
 * call carries a batch). A multishot POLL_ADD on each ring's eventfd wakes
 * a thread waiting in it (re-armed when the kernel ends it). Start-up
 * probes the opcodes and features it relies on
 * (EXT_ARG, FAST_POLL, NODROP, RECV/SEND/ACCEPT/CONNECT/SENDMSG/RECVMSG/
 * ASYNC_CANCEL/POLL_ADD) and refuses the ring otherwise, so the driver
 * falls back to epoll. Constants newer than the system's uapi header are
 * defined here. */
/* src/io/io.h already included */

/* ---- the private structures (uring_recv_ms.c, after this file, uses them too) ---- */

/* io_uring user_data tags below any pointer. */
#define BLITZ__UD_IGNORE 0u
#define BLITZ__UD_WAKE   1u
/* The other tag of a ring's wake poll: a new current-thread driver arms
 * its own poll under the tag not in use (see blitz__uring_driver_start). */
#define BLITZ__UD_WAKE_ALT 5u
/* A listener's multishot accept: the socket pointer with this bit set. */
#define BLITZ__UD_ACCEPT_MS 2u
/* A worker ring's poll of io->shared_efd. */
#define BLITZ__UD_SHARED 3u
/* A stream socket's multishot receive: the socket pointer with this tag
 * (sockets are at least 8-byte aligned). */
#define BLITZ__UD_RECV_MS 4u
#define BLITZ__UD_TAG     7u

#ifndef IORING_CQE_F_MORE
#define IORING_CQE_F_MORE (1U << 1)
#endif
#ifndef IORING_CQE_F_BUFFER
#define IORING_CQE_F_BUFFER (1U << 0)
#endif
#ifndef IORING_CQE_BUFFER_SHIFT
#define IORING_CQE_BUFFER_SHIFT 16
#endif

/* One io_uring instance. A worker's own ring gets submissions only from
 * that worker, which is also the only thread that waits in it or reaps
 * it; cancels may come from any thread. The shared ring takes
 * submissions from every other thread (sq_lock), and any thread reaps it
 * (reap_lock, tried). */
typedef struct blitz__ring {
    int fd;
    int wake_fd; /* an eventfd polled (multishot) by this ring */
    int coop;    /* asked for COOP_TASKRUN: flagged task work is run at a tick */
    /* The poll of wake_fd in use: its tag (BLITZ__UD_WAKE or _ALT) and the
     * blitz__thread_tag of the thread that armed it (the poll's task work
     * runs there). Changed by the thread that reaps the ring. */
    blitz__atomic_u64 wake_armer;
    blitz__atomic_u32 wake_ud;
    uint32_t index; /* in io->rings */
    blitz__mutex sq_lock;
    blitz__mutex reap_lock;
    blitz__atomic_u32 to_submit; /* SQEs written and not yet given to the kernel */
    uint32_t sq_tail_local;
    uint32_t sq_entries, cq_entries;
    uint32_t *sq_head, *sq_tail, *sq_mask, *sq_array, *sq_flags;
    uint32_t *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    void *sq_map, *cq_map;
    size_t sq_map_len, cq_map_len, sqes_len;
    /* Provided buffers for multishot receives (buffer group 0), set up on
     * first use: the ring of buffer entries shared with the kernel and
     * the buffers. Any thread gives buffers back (pbuf_lock). */
    blitz__atomic_u32 pbuf_state; /* BLITZ__PBUF_* */
    blitz__mutex pbuf_lock;
    void *pbuf_ring;
    char *pbuf_mem;
    uint16_t pbuf_tail;
    char pad[64]; /* rings sit in one array, each written by its own worker */
} blitz__ring;

#define BLITZ__PBUF_NONE  0u
#define BLITZ__PBUF_READY 1u
#define BLITZ__PBUF_FAIL  2u

BLITZ_PRIVATE int blitz__uring_init(blitz__io *io, uint32_t workers);
BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io);
BLITZ_PRIVATE void blitz__uring_worker_start(blitz__io *io, uint32_t index);
BLITZ_PRIVATE void blitz__uring_driver_start(blitz__io *io);
BLITZ_PRIVATE blitz__ring *blitz__uring_mine(blitz__io *io, int *batches);
BLITZ_PRIVATE blitz__ring *blitz__uring_op_ring(blitz__io *io, const blitz_io *op);
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz__ring *r, blitz_io *op, int flush);
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op);
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz__ring *r, blitz_socket *s);
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, blitz__ring *r, uint64_t ud);
BLITZ_PRIVATE void blitz__uring_flush(blitz__ring *r);
BLITZ_PRIVATE int blitz__uring_cq_ready(const blitz__ring *r);
BLITZ_PRIVATE void blitz__uring_poll(blitz__io *io);
BLITZ_PRIVATE int blitz__uring_ready_cheap(blitz__io *io);
BLITZ_PRIVATE void blitz__uring_flush_mine(blitz__io *io);
BLITZ_PRIVATE void blitz__uring_park(blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg);
BLITZ_PRIVATE void blitz__uring_drain(blitz__io *io);
BLITZ_PRIVATE int blitz__uring_pbuf_ready(blitz__ring *r);
BLITZ_PRIVATE void blitz__uring_pbuf_put(blitz__ring *r, uint32_t bid);
BLITZ_PRIVATE const char *blitz__uring_pbuf_addr(const blitz__ring *r, uint32_t bid);
BLITZ_PRIVATE void blitz__uring_pbuf_free(blitz__ring *r);
BLITZ_PRIVATE int blitz__uring_arm_recv(blitz__io *io, blitz__ring *r, blitz_socket *s, int flush);

BLITZ_PRIVATE void blitz__io_accept_ms(blitz__io *io, blitz__ring *r, blitz_socket *s, int32_t res,
                                       uint32_t flags);

BLITZ_PRIVATE void blitz__io_recv_ms(blitz__io *io, blitz__ring *r, blitz_socket *s, int32_t res,
                                     uint32_t flags);

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
#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#endif
#ifndef IORING_SETUP_TASKRUN_FLAG
#define IORING_SETUP_TASKRUN_FLAG (1U << 9)
#endif
#ifndef IORING_SQ_TASKRUN
#define IORING_SQ_TASKRUN (1U << 2)
#endif
#ifndef IORING_RECVSEND_POLL_FIRST
#define IORING_RECVSEND_POLL_FIRST (1U << 0)
#endif
#ifndef IORING_REGISTER_EVENTFD
#define IORING_REGISTER_EVENTFD 4
#endif
#ifndef IORING_REGISTER_PBUF_RING
#define IORING_REGISTER_PBUF_RING 22
#endif
#ifndef IORING_RECV_MULTISHOT
#define IORING_RECV_MULTISHOT (1U << 1)
#endif
#ifndef IOSQE_BUFFER_SELECT
#define IOSQE_BUFFER_SELECT (1U << 5)
#endif

/* The kernel's provided-buffer ring layouts (struct io_uring_buf and
 * io_uring_buf_reg), spelled out for older uapi headers. The ring's tail
 * is the 16-bit word at offset 14, over the first entry's unused field. */
typedef struct {
    uint64_t addr;
    uint32_t len;
    uint16_t bid;
    uint16_t tail_or_unused;
} blitz__pbuf_entry;
typedef struct {
    uint64_t ring_addr;
    uint32_t ring_entries;
    uint16_t bgid;
    uint16_t flags;
    uint64_t resv[3];
} blitz__pbuf_reg;
_Static_assert(sizeof(blitz__pbuf_entry) == 16 && sizeof(blitz__pbuf_reg) == 40,
               "the kernel's provided-buffer layouts");
_Static_assert((BLITZ_URING_RECV_BUFS & (BLITZ_URING_RECV_BUFS - 1)) == 0 &&
                   BLITZ_URING_RECV_BUFS <= 32768,
               "BLITZ_URING_RECV_BUFS is a power of two, at most 32768");

#ifndef BLITZ_URING_ENTRIES
#define BLITZ_URING_ENTRIES 1024u
#endif
_Static_assert(BLITZ_URING_ENTRIES >= 1 && BLITZ_URING_ENTRIES <= 32768,
               "BLITZ_URING_ENTRIES must be 1..32768 (the kernel's limit)");
_Static_assert(BLITZ_URING_RECV_BUF_SIZE >= 64 && BLITZ_URING_RECV_BUF_SIZE <= (1u << 20),
               "BLITZ_URING_RECV_BUF_SIZE must be 64..1048576 bytes");
#define BLITZ__URING_CQ_ENTRIES (BLITZ_URING_ENTRIES * 8u)
/* Workers submit a batch once this many SQEs wait. */
#define BLITZ__URING_BATCH 64u

static int blitz__uring_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags,
                              const void *arg, size_t argsz) {
    return (int)syscall(SYS_io_uring_enter, fd, to_submit, min_complete, flags, arg, argsz);
}

static int blitz__uring_probe(blitz__io *io, int fd) {
    static const uint8_t need[] = {IORING_OP_RECV,     IORING_OP_SEND,        IORING_OP_ACCEPT,
                                   IORING_OP_CONNECT,  IORING_OP_SENDMSG,     IORING_OP_RECVMSG,
                                   IORING_OP_POLL_ADD, IORING_OP_ASYNC_CANCEL};
    size_t sz = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
    struct io_uring_probe *p = (struct io_uring_probe *)blitz__calloc(sz);
    if (!p)
        return BLITZ_ENOMEM;
    int rc = BLITZ_OK;
    if (syscall(SYS_io_uring_register, fd, IORING_REGISTER_PROBE, p, 256) < 0) {
        rc = blitz__from_errno(errno);
    } else {
        for (size_t i = 0; i < sizeof need; i++)
            if (need[i] > p->last_op || !(p->ops[need[i]].flags & IO_URING_OP_SUPPORTED))
                rc = BLITZ_ENOSYS;
        /* Multishot accept came with Linux 5.19, as did IORING_OP_SOCKET;
         * multishot receive with 6.0, as did IORING_OP_SEND_ZC. */
        io->ms_accept = p->last_op >= 45 /* IORING_OP_SOCKET */;
        io->link_timeout = IORING_OP_LINK_TIMEOUT <= p->last_op &&
                           (p->ops[IORING_OP_LINK_TIMEOUT].flags & IO_URING_OP_SUPPORTED);
        blitz__u32_store(&io->ms_recv,
                         p->last_op >= 47 /* IORING_OP_SEND_ZC */ && BLITZ_URING_RECV_BUFS > 0,
                         BLITZ__RELAXED);
    }
    blitz__free(p);
    return rc;
}

static struct io_uring_sqe *blitz__uring_get_sqe(blitz__ring *r) {
    uint32_t head = blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
    uint32_t tail = r->sq_tail_local;
    if (tail - head >= r->sq_entries)
        return NULL;
    uint32_t idx = tail & *r->sq_mask;
    struct io_uring_sqe *sqe = &r->sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    r->sq_array[idx] = idx;
    return sqe;
}

/* Takes the SQE got last without showing it to the kernel yet (the head
 * of a linked pair). Caller holds sq_lock. */
static void blitz__uring_stage(blitz__ring *r) {
    r->sq_tail_local++;
    blitz__u32_fetch_add(&r->to_submit, 1, BLITZ__RELAXED);
}

/* Publishes the SQEs got so far. Caller holds sq_lock. */
static void blitz__uring_push(blitz__ring *r) {
    blitz__uring_stage(r);
    blitz__u32_field_store(r->sq_tail, r->sq_tail_local, BLITZ__RELEASE);
}

/* Gives `n` claimed SQEs to the kernel, optionally waiting for a
 * completion in the same system call; what the kernel did not take goes
 * back to `to_submit`. The count is only a hint for whoever submits next:
 * the kernel takes SQEs in order up to the published tail, so a thread
 * may submit another's, and every thread subtracts what it submitted. */
static void blitz__uring_submit_n(blitz__ring *r, uint32_t n) {
    while (n) {
        int got = blitz__uring_enter(r->fd, n, 0, 0, NULL, 0);
        if (got < 0 && errno == EINTR)
            continue;
        /* EAGAIN / EBUSY: the kernel is short of room (completions to
         * reap first); the SQEs stay and go with the next flush. */
        if (got <= 0)
            break;
        if ((uint32_t)got >= n) {
            n = 0;
            break;
        }
        n -= (uint32_t)got;
    }
    if (n)
        blitz__u32_fetch_add(&r->to_submit, n, BLITZ__RELAXED);
}

/* Claims the pending SQEs (sq_lock held). */
static uint32_t blitz__uring_claim(blitz__ring *r) {
    return blitz__u32_swap(&r->to_submit, 0, BLITZ__RELAXED);
}

/* Submits every published SQE, not only the claimed count: another
 * thread's claim may have been overtaken by this submission's, and a
 * count short of the tail could end between the two SQEs of a linked
 * pair (a CONNECT and its LINK_TIMEOUT), which the kernel would run
 * apart. Pairs are queued only by the thread that parks in the ring, so
 * a parked thread's own submission never meets half a pair either.
 * Caller holds sq_lock. */
static void blitz__uring_flush_locked(blitz__ring *r) {
    (void)blitz__uring_claim(r);
    /* Acquire: the kernel's consumption of the SQEs before its head. */
    uint32_t n = r->sq_tail_local - blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
    if (n)
        blitz__uring_submit_n(r, n);
}

/* Takes every published SQE for a submission outside sq_lock (a park's,
 * which also waits): the count of SQEs in the ring now, not the claimed
 * hint, which may be short or, after an overtaken claim, high. */
static uint32_t blitz__uring_claim_all(blitz__ring *r) {
    blitz__mutex_lock(&r->sq_lock);
    (void)blitz__uring_claim(r);
    uint32_t n = r->sq_tail_local - blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
    blitz__mutex_unlock(&r->sq_lock);
    return n;
}

/* After a submission outside sq_lock of `n` SQEs took `done`. The rest
 * were either submitted meanwhile by a flush under the lock (it takes
 * every published SQE) or refused by the kernel (EBUSY): only SQEs still
 * in the ring are owed, and their count re-arms the next flush. Owing the
 * claim itself would leave a count that no SQE backs: a park asking to
 * submit more SQEs than the ring holds returns at once without waiting,
 * so the idle thread would spin. */
static void blitz__uring_settle_claim(blitz__ring *r, uint32_t n, uint32_t done) {
    if (done >= n)
        return;
    blitz__mutex_lock(&r->sq_lock);
    uint32_t left = r->sq_tail_local - blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
    uint32_t hint = blitz__u32_load(&r->to_submit, BLITZ__RELAXED);
    if (left > hint)
        blitz__u32_fetch_add(&r->to_submit, left - hint, BLITZ__RELAXED);
    blitz__mutex_unlock(&r->sq_lock);
}

BLITZ_PRIVATE void blitz__uring_flush(blitz__ring *r) {
    if (!blitz__u32_load(&r->to_submit, BLITZ__RELAXED))
        return;
    blitz__mutex_lock(&r->sq_lock);
    blitz__uring_flush_locked(r);
    blitz__mutex_unlock(&r->sq_lock);
}

/* Caller holds sq_lock. */
static struct io_uring_sqe *blitz__uring_sqe_or_flush(blitz__ring *r) {
    struct io_uring_sqe *sqe = blitz__uring_get_sqe(r);
    if (!sqe) {
        blitz__uring_flush_locked(r);
        sqe = blitz__uring_get_sqe(r);
    }
    return sqe;
}

/* 1 when `n` SQEs can be claimed back to back (after a flush if need be):
 * a linked pair must reach the kernel in one submission, or the link is
 * cut. Caller holds sq_lock. */
static int blitz__uring_room(blitz__ring *r, uint32_t n) {
    for (int round = 0; round < 2; round++) {
        uint32_t head = blitz__u32_field_load(r->sq_head, BLITZ__ACQUIRE);
        if (r->sq_entries - (r->sq_tail_local - head) >= n)
            return 1;
        if (round == 0)
            blitz__uring_flush_locked(r);
    }
    return 0;
}

/* Queues a copy of `sqe` in `r`; submits at once when `flush` is set or a
 * batch is full. BLITZ_EBUSY when the ring has no room even after a
 * flush. */
static int blitz__uring_queue(blitz__ring *r, const struct io_uring_sqe *sqe, int flush) {
    blitz__mutex_lock(&r->sq_lock);
    struct io_uring_sqe *slot = blitz__uring_sqe_or_flush(r);
    if (slot) {
        *slot = *sqe;
        blitz__uring_push(r);
        if (flush || blitz__u32_load(&r->to_submit, BLITZ__RELAXED) >= BLITZ__URING_BATCH)
            blitz__uring_flush_locked(r);
    }
    blitz__mutex_unlock(&r->sq_lock);
    return slot ? BLITZ_OK : BLITZ_EBUSY;
}

/* A multishot POLL_ADD of `fd` (POLLIN) tagged `ud`. */
static int blitz__uring_arm_poll(blitz__ring *r, int fd, uint64_t ud) {
    if (ud == BLITZ__UD_WAKE || ud == BLITZ__UD_WAKE_ALT) {
        blitz__u64_store(&r->wake_armer, blitz__thread_tag(), BLITZ__RELAXED);
        blitz__u32_store(&r->wake_ud, (uint32_t)ud, BLITZ__RELAXED);
    }
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_POLL_ADD;
    sqe.fd = fd;
    sqe.poll32_events = POLLIN;
    sqe.len = IORING_POLL_ADD_MULTI;
    sqe.user_data = ud;
    return blitz__uring_queue(r, &sqe, 1);
}

static void blitz__ring_unmap(blitz__ring *r) {
    if (r->sqes)
        munmap(r->sqes, r->sqes_len);
    if (r->cq_map && r->cq_map != r->sq_map)
        munmap(r->cq_map, r->cq_map_len);
    if (r->sq_map)
        munmap(r->sq_map, r->sq_map_len);
    r->sqes = NULL;
    r->cq_map = r->sq_map = NULL;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

static void *blitz__ring_mmap(int fd, size_t len, off_t off) {
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off);
    return m == MAP_FAILED ? NULL : m;
}

/* Creates one ring; `coop`: try COOP_TASKRUN | TASKRUN_FLAG first. */
static int blitz__ring_init(blitz__io *io, blitz__ring *r, int coop) {
    struct io_uring_params p;
    int fd = -1;
    for (int attempt = coop ? 0 : 1; attempt < 2 && fd < 0; attempt++) {
        memset(&p, 0, sizeof p);
        p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
        if (attempt == 0)
            p.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
        p.cq_entries = BLITZ__URING_CQ_ENTRIES;
        fd = blitz__fd_above_stdio((int)syscall(SYS_io_uring_setup, BLITZ_URING_ENTRIES, &p));
        /* Before Linux 5.19 the flags are EINVAL: a plain ring instead. */
        if (fd < 0 && (attempt == 1 || errno != EINVAL))
            return blitz__from_errno(errno);
    }
    r->fd = fd;
    int rc = BLITZ_OK;
    uint32_t need = IORING_FEAT_EXT_ARG | IORING_FEAT_FAST_POLL | IORING_FEAT_NODROP;
    if ((p.features & need) != need)
        rc = BLITZ_ENOSYS;
    /* A seccomp filter may let io_uring_setup through and refuse
     * io_uring_enter, without which the ring never moves (workers would
     * retry it forever): the backend is only taken once an enter worked. */
    if (rc == BLITZ_OK && blitz__uring_enter(fd, 0, 0, 0, NULL, 0) < 0)
        rc = blitz__from_errno(errno);
    if (rc == BLITZ_OK && r->index == 0)
        rc = blitz__uring_probe(io, fd);
    if (rc == BLITZ_OK) {
        io->skip_cancel_cqe = (p.features & IORING_FEAT_CQE_SKIP) != 0;
        r->sq_entries = p.sq_entries;
        r->cq_entries = p.cq_entries;
        r->sq_map_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
        r->cq_map_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
        if ((p.features & IORING_FEAT_SINGLE_MMAP) && r->cq_map_len > r->sq_map_len)
            r->sq_map_len = r->cq_map_len;
        r->sq_map = blitz__ring_mmap(fd, r->sq_map_len, IORING_OFF_SQ_RING);
        if (!r->sq_map)
            rc = blitz__from_errno(errno);
    }
    if (rc == BLITZ_OK) {
        if (p.features & IORING_FEAT_SINGLE_MMAP) {
            r->cq_map = r->sq_map;
        } else {
            r->cq_map = blitz__ring_mmap(fd, r->cq_map_len, IORING_OFF_CQ_RING);
            if (!r->cq_map)
                rc = blitz__from_errno(errno);
        }
    }
    if (rc == BLITZ_OK) {
        r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
        r->sqes = (struct io_uring_sqe *)blitz__ring_mmap(fd, r->sqes_len, IORING_OFF_SQES);
        if (!r->sqes)
            rc = blitz__from_errno(errno);
    }
    if (rc != BLITZ_OK) {
        blitz__ring_unmap(r);
        return rc;
    }
    char *sq = (char *)r->sq_map, *cq = (char *)r->cq_map;
    r->sq_head = (uint32_t *)(void *)(sq + p.sq_off.head);
    r->sq_tail = (uint32_t *)(void *)(sq + p.sq_off.tail);
    r->sq_mask = (uint32_t *)(void *)(sq + p.sq_off.ring_mask);
    r->sq_array = (uint32_t *)(void *)(sq + p.sq_off.array);
    r->sq_flags = (uint32_t *)(void *)(sq + p.sq_off.flags);
    r->cq_head = (uint32_t *)(void *)(cq + p.cq_off.head);
    r->cq_tail = (uint32_t *)(void *)(cq + p.cq_off.tail);
    r->cq_mask = (uint32_t *)(void *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(void *)(cq + p.cq_off.cqes);
    r->sq_tail_local = *r->sq_tail;
    return BLITZ_OK;
}

static void blitz__rings_free(blitz__io *io) {
    for (uint32_t i = 0; i < io->nrings; i++) {
        blitz__ring *r = &io->rings[i];
        blitz__ring_unmap(r);
        blitz__uring_pbuf_free(r);
        if (r->wake_fd >= 0 && r->wake_fd != io->wake_fd)
            close(r->wake_fd);
        blitz__mutex_destroy(&r->sq_lock);
        blitz__mutex_destroy(&r->reap_lock);
        blitz__mutex_destroy(&r->pbuf_lock);
    }
    blitz__free(io->rings);
    io->rings = NULL;
    io->nrings = 0;
    io->shared = NULL;
    if (io->shared_efd >= 0)
        close(io->shared_efd);
    io->shared_efd = -1;
}

/* `workers`: the runtime's worker count (0 for a current-thread runtime). */
BLITZ_PRIVATE int blitz__uring_init(blitz__io *io, uint32_t workers) {
    io->shared_efd = -1;
    io->nrings = workers + 1;
    io->rings = (blitz__ring *)blitz__calloc(sizeof(blitz__ring) * io->nrings);
    if (!io->rings) {
        io->nrings = 0;
        return BLITZ_ENOMEM;
    }
    io->shared = &io->rings[workers];
    for (uint32_t i = 0; i < io->nrings; i++) {
        blitz__ring *r = &io->rings[i];
        r->fd = -1;
        r->wake_fd = -1;
        r->index = i;
        blitz__mutex_init(&r->sq_lock);
        blitz__mutex_init(&r->reap_lock);
        blitz__mutex_init(&r->pbuf_lock);
    }
    int rc = BLITZ_OK;
    if (workers) {
        io->shared_efd = blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
        if (io->shared_efd < 0)
            rc = blitz__from_errno(errno);
    }
    /* Ring 0 first: it probes the opcodes. */
    for (uint32_t i = 0; i < io->nrings && rc == BLITZ_OK; i++) {
        blitz__ring *r = &io->rings[i];
        int worker = i < workers;
        int coop = worker || !workers;
        rc = blitz__ring_init(io, r, coop);
        if (rc != BLITZ_OK)
            break;
        r->coop = coop;
        r->wake_fd =
            worker ? blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) : io->wake_fd;
        if (r->wake_fd < 0)
            rc = blitz__from_errno(errno);
        /* A worker ring's polls are armed by its worker when it starts
         * (blitz__uring_worker_start): the kernel runs a poll's task work
         * on the thread that submitted it, and this thread may sleep
         * elsewhere for good (measured: the thread that created the
         * runtime, blocked in block_on, was woken by signal-like task
         * work for every worker wake-up, 80-100k times per echo run). */
        if (rc == BLITZ_OK && !worker)
            rc = blitz__uring_arm_poll(r, r->wake_fd, BLITZ__UD_WAKE);
        if (rc == BLITZ_OK && !worker && workers &&
            syscall(SYS_io_uring_register, r->fd, IORING_REGISTER_EVENTFD, &io->shared_efd, 1) < 0)
            rc = blitz__from_errno(errno);
    }
    if (rc != BLITZ_OK)
        blitz__rings_free(io);
    return rc;
}

BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io) {
    blitz__rings_free(io);
}

/* On worker `index`'s thread, before it runs anything: arms its ring's
 * polls of its eventfd and of the shared ring's eventfd (an eventfd that
 * was written before is readable at once, so no wake is lost). */
BLITZ_PRIVATE void blitz__uring_worker_start(blitz__io *io, uint32_t index) {
    if (index + 1 >= io->nrings)
        return;
    blitz__ring *r = &io->rings[index];
    /* EBUSY (no room even after a flush) cannot happen on a fresh ring. */
    (void)blitz__uring_arm_poll(r, r->wake_fd, BLITZ__UD_WAKE);
    (void)blitz__uring_arm_poll(r, io->shared_efd, BLITZ__UD_SHARED);
}

/* The ring the calling thread submits to: a worker of this runtime its
 * own (`batches`: it submits at its next tick or park), the current-thread
 * driver the shared one (batched too), any other thread the shared one at
 * once. */
BLITZ_PRIVATE blitz__ring *blitz__uring_mine(blitz__io *io, int *batches) {
    blitz__context *ctx = blitz__context_get();
    if (ctx && ctx->rt == io->rt && (ctx->worker || ctx->ct_driver)) {
        if (batches)
            *batches = 1;
        if (ctx->worker && (uint32_t)ctx->worker_index < io->nrings - 1)
            return &io->rings[ctx->worker_index];
        return io->shared;
    }
    if (batches)
        *batches = 0;
    return io->shared;
}

BLITZ_PRIVATE blitz__ring *blitz__uring_op_ring(blitz__io *io, const blitz_io *op) {
    uint32_t i = op->blitz__flags >> BLITZ__OPF_RING_SHIFT;
    return i && i <= io->nrings ? &io->rings[i - 1] : io->shared;
}

/* Fills and queues the SQE of `op` in `r`. Caller holds the op's socket
 * lock. */
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz__ring *r, blitz_io *op, int flush) {
    blitz_socket *s = op->blitz__sock;
    int linked =
        op->blitz__kind == BLITZ__OP_CONNECT && (op->blitz__flags & BLITZ__OPF_LIMIT_KERNEL);
    blitz__mutex_lock(&r->sq_lock);
    struct io_uring_sqe *sqe =
        (!linked || blitz__uring_room(r, 2)) ? blitz__uring_sqe_or_flush(r) : NULL;
    if (!sqe) {
        blitz__mutex_unlock(&r->sq_lock);
        return BLITZ_EBUSY;
    }
    sqe->fd = s->fd;
    sqe->user_data = (uint64_t)(uintptr_t)op;
    switch (op->blitz__kind) {
    case BLITZ__OP_RECV:
        sqe->opcode = IORING_OP_RECV;
        sqe->addr = (uint64_t)(uintptr_t)op->blitz__buf;
        sqe->len = (uint32_t)(op->blitz__len > 0x7ffff000u ? 0x7ffff000u : op->blitz__len);
        /* A stream receive is submitted when the socket is most likely
         * empty (the last one came back short, or the system call just
         * said EAGAIN): wait for data at once instead of the kernel's
         * failing first attempt. */
        if (io->ms_accept && s->type == SOCK_STREAM)
            sqe->ioprio = IORING_RECVSEND_POLL_FIRST;
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
        if (linked) {
            /* The time limit: a LINK_TIMEOUT right behind the CONNECT
             * cancels it (BLITZ_ECANCELED) when it fires first. The kernel
             * copies the timespec when it takes the SQEs; the op keeps it
             * until then. Its own completion is of no interest. */
            sqe->flags |= IOSQE_IO_LINK;
            blitz__uring_stage(r);
            sqe = blitz__uring_get_sqe(r);
            sqe->opcode = IORING_OP_LINK_TIMEOUT;
            sqe->fd = -1;
            sqe->addr = (uint64_t)(uintptr_t)((char *)op->blitz__scratch + BLITZ__CONNECT_TS_AT);
            sqe->len = 1;
            sqe->user_data = BLITZ__UD_IGNORE;
            blitz__u64_fetch_add(&io->link_timeout_count, 1, BLITZ__RELAXED);
        }
        break;
    }
    case BLITZ__OP_FD_READ:
    case BLITZ__OP_FD_WRITE:
    case BLITZ__OP_FD_WRITE_ALL:
    case BLITZ__OP_FD_POLL:
        sqe->opcode = IORING_OP_POLL_ADD;
        sqe->poll32_events = op->blitz__dir == BLITZ__DIR_WRITE ? POLLOUT : POLLIN;
        break;
    default:
        break;
    }
    blitz__uring_push(r);
    if (flush || blitz__u32_load(&r->to_submit, BLITZ__RELAXED) >= BLITZ__URING_BATCH)
        blitz__uring_flush_locked(r);
    blitz__mutex_unlock(&r->sq_lock);
    return BLITZ_OK;
}

/* Arms a listener's multishot accept in `r`. Caller holds the socket's
 * lock. */
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz__ring *r, blitz_socket *s) {
    (void)io;
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_ACCEPT;
    sqe.fd = s->fd;
    sqe.accept_flags = SOCK_NONBLOCK | SOCK_CLOEXEC;
    sqe.ioprio = IORING_ACCEPT_MULTISHOT;
    sqe.user_data = (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS;
    int rc = blitz__uring_queue(r, &sqe, 1);
    if (rc == BLITZ_OK)
        s->ms_ring = r->index;
    return rc;
}

/* Arms a stream socket's multishot receive in `r`, with the ring's
 * provided buffers. Caller holds the socket's lock. */
BLITZ_PRIVATE int blitz__uring_arm_recv(blitz__io *io, blitz__ring *r, blitz_socket *s, int flush) {
    (void)io;
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_RECV;
    sqe.fd = s->fd;
    /* Armed when the socket is most likely empty: wait for data first. */
    sqe.ioprio = IORING_RECV_MULTISHOT | IORING_RECVSEND_POLL_FIRST;
    sqe.flags = IOSQE_BUFFER_SELECT;
    sqe.buf_group = 0;
    sqe.user_data = (uint64_t)(uintptr_t)s | BLITZ__UD_RECV_MS;
    return blitz__uring_queue(r, &sqe, flush);
}

/* ---- provided buffers of multishot receives ---------------------------------------------- */

static size_t blitz__pbuf_ring_len(void) {
    size_t len = BLITZ_URING_RECV_BUFS * sizeof(blitz__pbuf_entry);
    return (len + 4095u) & ~(size_t)4095u;
}

static uint16_t *blitz__pbuf_tail_word(blitz__ring *r) {
    return (uint16_t *)(void *)((char *)r->pbuf_ring + 14);
}

/* Sets up the ring's buffer pool on first use; 1 when it is ready. A
 * kernel that refuses it leaves the ring without one (single-shot
 * receives). */
BLITZ_PRIVATE int blitz__uring_pbuf_ready(blitz__ring *r) {
    /* Acquire: pairs with the release below, so the pool's pointers are
     * seen set up. */
    uint32_t st = blitz__u32_load(&r->pbuf_state, BLITZ__ACQUIRE);
    if (st != BLITZ__PBUF_NONE)
        return st == BLITZ__PBUF_READY;
    blitz__mutex_lock(&r->pbuf_lock);
    st = blitz__u32_load(&r->pbuf_state, BLITZ__RELAXED);
    if (st == BLITZ__PBUF_NONE) {
        size_t mem_len = (size_t)BLITZ_URING_RECV_BUFS * BLITZ_URING_RECV_BUF_SIZE;
        void *ring = mmap(NULL, blitz__pbuf_ring_len(), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        void *mem = mmap(NULL, mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int ok = ring != MAP_FAILED && mem != MAP_FAILED;
        if (ok) {
            r->pbuf_ring = ring;
            r->pbuf_mem = (char *)mem;
            blitz__pbuf_entry *e = (blitz__pbuf_entry *)ring;
            /* A variable: with the pool configured to 0 a constant bound
             * would be a comparison that is always false (-Wtype-limits). */
            uint32_t nbufs = BLITZ_URING_RECV_BUFS;
            for (uint32_t i = 0; i < nbufs; i++) {
                e[i].addr =
                    (uint64_t)(uintptr_t)(r->pbuf_mem + (size_t)i * BLITZ_URING_RECV_BUF_SIZE);
                e[i].len = BLITZ_URING_RECV_BUF_SIZE;
                e[i].bid = (uint16_t)i;
            }
            r->pbuf_tail = (uint16_t)BLITZ_URING_RECV_BUFS;
            blitz__u16_field_store(blitz__pbuf_tail_word(r), r->pbuf_tail, BLITZ__RELEASE);
            blitz__pbuf_reg reg;
            memset(&reg, 0, sizeof reg);
            reg.ring_addr = (uint64_t)(uintptr_t)ring;
            reg.ring_entries = BLITZ_URING_RECV_BUFS;
            reg.bgid = 0;
            ok = syscall(SYS_io_uring_register, r->fd, IORING_REGISTER_PBUF_RING, &reg, 1) == 0;
        }
        if (!ok) {
            if (ring != MAP_FAILED)
                munmap(ring, blitz__pbuf_ring_len());
            if (mem != MAP_FAILED)
                munmap(mem, mem_len);
            r->pbuf_ring = NULL;
            r->pbuf_mem = NULL;
        }
        st = ok ? BLITZ__PBUF_READY : BLITZ__PBUF_FAIL;
        blitz__u32_store(&r->pbuf_state, st, BLITZ__RELEASE);
    }
    blitz__mutex_unlock(&r->pbuf_lock);
    return st == BLITZ__PBUF_READY;
}

BLITZ_PRIVATE const char *blitz__uring_pbuf_addr(const blitz__ring *r, uint32_t bid) {
    return r->pbuf_mem + (size_t)bid * BLITZ_URING_RECV_BUF_SIZE;
}

/* Gives buffer `bid` back to the kernel. Any thread. */
BLITZ_PRIVATE void blitz__uring_pbuf_put(blitz__ring *r, uint32_t bid) {
    blitz__mutex_lock(&r->pbuf_lock);
    blitz__pbuf_entry *e =
        &((blitz__pbuf_entry *)r->pbuf_ring)[r->pbuf_tail & (BLITZ_URING_RECV_BUFS - 1u)];
    /* Field by field: the first entry's last field is the tail. */
    e->addr = (uint64_t)(uintptr_t)blitz__uring_pbuf_addr(r, bid);
    e->len = BLITZ_URING_RECV_BUF_SIZE;
    e->bid = (uint16_t)bid;
    r->pbuf_tail++;
    /* Release: the kernel reads the tail with acquire, then the entry. */
    blitz__u16_field_store(blitz__pbuf_tail_word(r), r->pbuf_tail, BLITZ__RELEASE);
    blitz__mutex_unlock(&r->pbuf_lock);
}

/* After the ring's descriptor is closed. */
BLITZ_PRIVATE void blitz__uring_pbuf_free(blitz__ring *r) {
    if (r->pbuf_ring)
        munmap(r->pbuf_ring, blitz__pbuf_ring_len());
    if (r->pbuf_mem)
        munmap(r->pbuf_mem, (size_t)BLITZ_URING_RECV_BUFS * BLITZ_URING_RECV_BUF_SIZE);
    r->pbuf_ring = NULL;
    r->pbuf_mem = NULL;
}

/* ASYNC_CANCEL by user_data in `r`, submitted at once: whoever cancels may
 * wait for the result. Any thread: the cancel runs in the submitting
 * thread, the cancelled op's completion goes to the ring's owner. */
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, blitz__ring *r, uint64_t ud) {
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_ASYNC_CANCEL;
    sqe.fd = -1;
    sqe.addr = ud;
    sqe.user_data = BLITZ__UD_IGNORE;
    if (io->skip_cancel_cqe)
        sqe.flags = IOSQE_CQE_SKIP_SUCCESS;
    (void)blitz__uring_queue(r, &sqe, 1);
}

/* A thread starts driving a current-thread runtime. Its ring is
 * COOP_TASKRUN: the task work of the poll that wakes the driver runs on
 * the thread that armed that poll, and without interrupting it, so a poll
 * armed by a previous driver (or the runtime's creator) now computing
 * elsewhere would hold this driver's wake-ups back until its next system
 * call. This thread arms its own poll under the other tag and cancels the
 * old one (whose end, when it comes, is not re-armed). */
BLITZ_PRIVATE void blitz__uring_driver_start(blitz__io *io) {
    blitz__ring *r = io->shared;
    uint64_t me = blitz__thread_tag();
    if (!r || !r->coop || blitz__u64_load(&r->wake_armer, BLITZ__RELAXED) == me)
        return;
    /* The driver is the only thread that reaps and re-arms this ring's
     * polls, so the tag cannot change under us. */
    blitz__mutex_lock(&r->reap_lock);
    uint32_t old = blitz__u32_load(&r->wake_ud, BLITZ__RELAXED);
    uint32_t tag = old == BLITZ__UD_WAKE ? BLITZ__UD_WAKE_ALT : BLITZ__UD_WAKE;
    if (blitz__uring_arm_poll(r, r->wake_fd, tag) == BLITZ_OK)
        blitz__uring_cancel_ud(io, r, old);
    blitz__mutex_unlock(&r->reap_lock);
}

/* ASYNC_CANCEL of an op in flight. Caller holds the op's lock. */
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op) {
    blitz__uring_cancel_ud(io, blitz__uring_op_ring(io, op), (uint64_t)(uintptr_t)op);
}

BLITZ_PRIVATE int blitz__uring_cq_ready(const blitz__ring *r) {
    return blitz__u32_field_load(r->cq_head, BLITZ__RELAXED) !=
           blitz__u32_field_load(r->cq_tail, BLITZ__ACQUIRE);
}

/* Dispatches the completions in `r`. Caller holds r->reap_lock. Returns 1
 * when the shared ring signalled completions. */
static int blitz__uring_dispatch(blitz__io *io, blitz__ring *r) {
    int shared = 0;
    for (;;) {
        struct {
            uint64_t user_data;
            int32_t res;
            uint32_t flags;
        } batch[64];
        uint32_t head = *r->cq_head;
        uint32_t tail = blitz__u32_field_load(r->cq_tail, BLITZ__ACQUIRE);
        uint32_t n = 0;
        while (head != tail && n < 64) {
            const struct io_uring_cqe *c = &r->cqes[head & *r->cq_mask];
            batch[n].user_data = c->user_data;
            /* The kernel's -errno becomes blitz's code here, once. */
            batch[n].res = c->res < 0 ? blitz__from_errno(-c->res) : c->res;
            batch[n].flags = c->flags;
            n++;
            head++;
        }
        if (n == 0)
            return shared;
        blitz__u32_field_store(r->cq_head, head, BLITZ__RELEASE);
        int rearm_wake = 0, rearm_shared = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t ud = batch[i].user_data;
            int more = (batch[i].flags & IORING_CQE_F_MORE) != 0;
            if (ud == BLITZ__UD_IGNORE)
                continue;
            if (ud == BLITZ__UD_WAKE || ud == BLITZ__UD_WAKE_ALT) {
                blitz__io_drain_fd(r->wake_fd);
                /* A replaced poll's end is not re-armed. */
                rearm_wake |= !more && ud == blitz__u32_load(&r->wake_ud, BLITZ__RELAXED);
                continue;
            }
            if (ud == BLITZ__UD_SHARED) {
                shared = 1;
                rearm_shared |= !more;
                continue;
            }
            if ((ud & BLITZ__UD_TAG) == BLITZ__UD_RECV_MS) {
                blitz__io_recv_ms(io, r, (blitz_socket *)(uintptr_t)(ud & ~(uint64_t)BLITZ__UD_TAG),
                                  batch[i].res, batch[i].flags);
                continue;
            }
            if (ud & BLITZ__UD_ACCEPT_MS) {
                blitz__io_accept_ms(io, r, (blitz_socket *)(uintptr_t)(ud & ~(uint64_t)7),
                                    batch[i].res, batch[i].flags);
                continue;
            }
            blitz__io_complete(io, (blitz_io *)(uintptr_t)ud, batch[i].res, batch[i].flags);
        }
        if (rearm_wake)
            blitz__uring_arm_poll(r, r->wake_fd, blitz__u32_load(&r->wake_ud, BLITZ__RELAXED));
        if (rearm_shared)
            blitz__uring_arm_poll(r, io->shared_efd, BLITZ__UD_SHARED);
    }
}

/* Reaps the shared ring if nobody else is at it. */
static void blitz__uring_reap_shared(blitz__io *io) {
    blitz__ring *r = io->shared;
    if (!blitz__mutex_trylock(&r->reap_lock))
        return;
    /* Drained first: a completion posted after this signals again. */
    if (io->shared_efd >= 0)
        blitz__io_drain_fd(io->shared_efd);
    blitz__uring_dispatch(io, r);
    blitz__mutex_unlock(&r->reap_lock);
}

/* Reaps without blocking (the start of a worker tick or a current-thread
 * driver round): the caller's own ring, then the shared one. */
BLITZ_PRIVATE void blitz__uring_poll(blitz__io *io) {
    blitz__ring *r = blitz__uring_mine(io, NULL);
    blitz__uring_flush(r);
    /* COOP_TASKRUN: task work of this thread's ops waits for a system
     * call; a worker or driver busy with tasks that make none runs it
     * here. */
    if (r->coop && (blitz__u32_field_load(r->sq_flags, BLITZ__RELAXED) & IORING_SQ_TASKRUN))
        blitz__uring_enter(r->fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
    int shared = 0;
    if (blitz__uring_cq_ready(r) && blitz__mutex_trylock(&r->reap_lock)) {
        blitz__wake_batch_begin();
        shared = blitz__uring_dispatch(io, r);
        blitz__wake_batch_end();
        blitz__mutex_unlock(&r->reap_lock);
    }
    if (r != io->shared && (shared || blitz__uring_cq_ready(io->shared))) {
        blitz__wake_batch_begin();
        blitz__uring_reap_shared(io);
        blitz__wake_batch_end();
    }
}

/* Completions wait in the caller's rings (no system call). */
BLITZ_PRIVATE int blitz__uring_ready_cheap(blitz__io *io) {
    blitz__ring *r = blitz__uring_mine(io, NULL);
    return blitz__uring_cq_ready(r) || blitz__uring_cq_ready(io->shared) ||
           (r->coop && (blitz__u32_field_load(r->sq_flags, BLITZ__RELAXED) & IORING_SQ_TASKRUN));
}

BLITZ_PRIVATE void blitz__uring_flush_mine(blitz__io *io) {
    blitz__uring_flush(blitz__uring_mine(io, NULL));
}

/* Parks the calling thread in its ring until a completion, an unpark of
 * `p` (its eventfd is this ring's wake_fd) or timeout_ns; pending SQEs go
 * to the kernel in the same system call. */
BLITZ_PRIVATE void blitz__uring_park(blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg) {
    blitz__ring *r = blitz__uring_mine(io, NULL);
    blitz__mutex_lock(&r->reap_lock);
    uint32_t expected = BLITZ__UNPARKED;
    if (blitz__u32_cas(&p->state, &expected, BLITZ__PARKED_DRIVER, BLITZ__ACQ_REL) &&
        !blitz__uring_cq_ready(r)) {
        uint32_t n = blitz__uring_claim_all(r);
        struct __kernel_timespec ts;
        struct io_uring_getevents_arg ea;
        memset(&ea, 0, sizeof ea);
        if (timeout_ns != BLITZ__IO_FOREVER) {
            ts.tv_sec = (long long)(timeout_ns / 1000000000u);
            ts.tv_nsec = (long long)(timeout_ns % 1000000000u);
            ea.ts = (uint64_t)(uintptr_t)&ts;
        }
        int got = blitz__uring_enter(r->fd, n, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
                                     &ea, sizeof ea);
        /* The kernel returns how many it submitted, or an error when it
         * submitted none (then the wait may not have happened: EBUSY;
         * the caller's loop comes back). */
        blitz__uring_settle_claim(r, n, got > 0 ? (uint32_t)got : 0);
    }
    blitz__u32_swap(&p->state, BLITZ__UNPARKED, BLITZ__ACQUIRE);
    if (woke)
        woke(arg);
    blitz__wake_batch_begin();
    int shared = blitz__uring_dispatch(io, r);
    blitz__mutex_unlock(&r->reap_lock);
    if (r != io->shared && (shared || blitz__uring_cq_ready(io->shared)))
        blitz__uring_reap_shared(io);
    blitz__wake_batch_end();
}

/* Shutdown (the workers are gone): reaps every ring until the kernel
 * holds no op, for at most 5 s. */
BLITZ_PRIVATE void blitz__uring_drain(blitz__io *io) {
    uint64_t start = blitz__now_ns();
    for (;;) {
        for (uint32_t i = 0; i < io->nrings; i++) {
            blitz__ring *r = &io->rings[i];
            blitz__uring_flush(r);
            blitz__mutex_lock(&r->reap_lock);
            blitz__uring_dispatch(io, r);
            blitz__mutex_unlock(&r->reap_lock);
        }
        if (!blitz__u64_load(&io->inflight, BLITZ__ACQUIRE) ||
            blitz__now_ns() - start >= 5000000000ull)
            return;
        /* Wait in the rings in turn, briefly each. */
        for (uint32_t i = 0; i < io->nrings; i++) {
            blitz__ring *r = &io->rings[i];
            struct __kernel_timespec ts = {0, 2000000};
            struct io_uring_getevents_arg ea;
            memset(&ea, 0, sizeof ea);
            ea.ts = (uint64_t)(uintptr_t)&ts;
            if (!blitz__uring_cq_ready(r))
                blitz__uring_enter(r->fd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ea,
                                   sizeof ea);
        }
    }
}

#else

BLITZ_PRIVATE int blitz__uring_init(blitz__io *io, uint32_t workers) {
    (void)io;
    (void)workers;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_destroy(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__uring_driver_start(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__uring_worker_start(blitz__io *io, uint32_t index) {
    (void)io;
    (void)index;
}
BLITZ_PRIVATE blitz__ring *blitz__uring_mine(blitz__io *io, int *batches) {
    (void)batches;
    return io->shared;
}
BLITZ_PRIVATE blitz__ring *blitz__uring_op_ring(blitz__io *io, const blitz_io *op) {
    (void)op;
    return io->shared;
}
BLITZ_PRIVATE int blitz__uring_submit_op(blitz__io *io, blitz__ring *r, blitz_io *op, int flush) {
    (void)io;
    (void)r;
    (void)op;
    (void)flush;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_submit_cancel(blitz__io *io, blitz_io *op) {
    (void)io;
    (void)op;
}
BLITZ_PRIVATE int blitz__uring_arm_accept(blitz__io *io, blitz__ring *r, blitz_socket *s) {
    (void)io;
    (void)r;
    (void)s;
    return BLITZ_ENOSYS;
}
BLITZ_PRIVATE void blitz__uring_cancel_ud(blitz__io *io, blitz__ring *r, uint64_t ud) {
    (void)io;
    (void)r;
    (void)ud;
}
BLITZ_PRIVATE void blitz__uring_flush(blitz__ring *r) {
    (void)r;
}
BLITZ_PRIVATE int blitz__uring_cq_ready(const blitz__ring *r) {
    (void)r;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_poll(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_ready_cheap(blitz__io *io) {
    (void)io;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_flush_mine(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE void blitz__uring_park(blitz__io *io, blitz__parker *p, uint64_t timeout_ns,
                                     void (*woke)(void *), void *arg) {
    (void)io;
    (void)p;
    (void)timeout_ns;
    (void)woke;
    (void)arg;
}
BLITZ_PRIVATE void blitz__uring_drain(blitz__io *io) {
    (void)io;
}
BLITZ_PRIVATE int blitz__uring_pbuf_ready(blitz__ring *r) {
    (void)r;
    return 0;
}
BLITZ_PRIVATE void blitz__uring_pbuf_put(blitz__ring *r, uint32_t bid) {
    (void)r;
    (void)bid;
}
BLITZ_PRIVATE const char *blitz__uring_pbuf_addr(const blitz__ring *r, uint32_t bid) {
    (void)r;
    (void)bid;
    return NULL;
}
BLITZ_PRIVATE void blitz__uring_pbuf_free(blitz__ring *r) {
    (void)r;
}
BLITZ_PRIVATE int blitz__uring_arm_recv(blitz__io *io, blitz__ring *r, blitz_socket *s, int flush) {
    (void)io;
    (void)r;
    (void)s;
    (void)flush;
    return BLITZ_ENOSYS;
}

#endif

/* ---- the driver's side of this backend ------------------------------------------------- */

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
    } else if (s->ms_spare >= 0) {
        r = s->ms_spare;
        s->ms_spare = -1;
    } else if (s->ms_nomem) {
        r = BLITZ_ENOMEM;
        s->ms_nomem--;
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
        blitz__u32_store(&s->rms_published, 1, BLITZ__RELEASE);
        if (blitz__uring_arm_accept(io, blitz__uring_mine(io, NULL), s) == BLITZ_OK) {
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

/* Connections a listener's multishot accept may hold for tasks that have
 * not asked yet. Past it the multishot accept is cancelled and the rest
 * wait in the kernel's backlog, as with a plain accept: a program that
 * stops accepting (a concurrency limit, a graceful stop) must not have
 * the kernel take descriptors for it without bound. The next accept that
 * finds the queue empty arms it again. */
#define BLITZ__ACCEPT_QUEUE_MAX 64u

/* A CQE of a listener's multishot accept. Dispatching thread. */
BLITZ_PRIVATE void blitz__io_accept_ms(blitz__io *io, blitz__ring *r, blitz_socket *s, int32_t res,
                                       uint32_t flags) {
    blitz_waker w = blitz_waker_noop();
    int ended = !(flags & IORING_CQE_F_MORE);
    (void)blitz__u32_load(&s->rms_published, BLITZ__ACQUIRE);
    blitz__mutex_lock(&s->lock);
    if (ended)
        s->ms_armed = s->ms_cancelling = 0;
    blitz_io *waiter = NULL;
    for (blitz_io *op = s->ops; op; op = op->blitz__next)
        if (op->blitz__kind == BLITZ__OP_ACCEPT &&
            blitz__u32_field_load(&op->blitz__state, BLITZ__RELAXED) == BLITZ__IO_WAIT) {
            waiter = op;
            break;
        }
    if (res == BLITZ_ECANCELED && !s->closed && !blitz__u32_load(&io->shutdown, BLITZ__RELAXED))
        res = BLITZ_EAGAIN; /* not ours: re-armed by the next accept */
    if (res >= 0) {
        /* Queued even with a task waiting, which is woken to take it: a
         * descriptor stays the listener's (closed with it, or with the
         * runtime) until a task holds it as a socket, so a waiting task
         * that never runs again cannot leak it. */
        if (s->closed) {
            close(res);
        } else {
            void *fds = s->ms_fds;
            if (s->ms_count == s->ms_cap)
                (void)blitz__fifo_grow(&fds, &s->ms_head, s->ms_count, &s->ms_cap, sizeof(int), 16);
            s->ms_fds = (int *)fds;
            int kept = 1;
            if (s->ms_count < s->ms_cap) {
                s->ms_fds[(s->ms_head + s->ms_count) % s->ms_cap] = res;
                s->ms_count++;
            } else if (s->ms_spare < 0) {
                /* No memory to queue it: the connection is not lost but
                 * waits in the spare slot, and the multishot accept stops
                 * (below) so that later ones wait in the kernel's backlog
                 * until an accept asks again. */
                s->ms_spare = res;
            } else {
                /* Accepted in the same batch as the spare's: it cannot be
                 * kept, and an accept reports it, as the readiness
                 * backends do when they cannot make it a socket. */
                close(res);
                kept = 0;
            }
            if (waiter) {
                blitz__op_unlink(s, waiter);
                w = waiter->blitz__waker;
                waiter->blitz__waker = blitz_waker_noop();
                if (kept) {
                    blitz__op_set_state(waiter, BLITZ__IO_RETRY);
                } else {
                    waiter->blitz__res = BLITZ_ENOMEM;
                    blitz__op_set_state(waiter, BLITZ__IO_DONE);
                }
            } else if (!kept) {
                s->ms_nomem++;
            }
            if ((s->ms_count >= BLITZ__ACCEPT_QUEUE_MAX || s->ms_spare >= 0) && !ended &&
                !s->ms_cancelling) {
                s->ms_cancelling = 1;
                blitz__uring_cancel_ud(io, r, (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS);
            }
        }
    } else if (waiter && res != BLITZ_EAGAIN) {
        blitz__op_unlink(s, waiter);
        w = waiter->blitz__waker;
        waiter->blitz__waker = blitz_waker_noop();
        waiter->blitz__res = (res == BLITZ_ECANCELED && s->closed) ? BLITZ_ECLOSED : res;
        blitz__op_set_state(waiter, BLITZ__IO_DONE);
    } else if (res != BLITZ_EAGAIN && res != BLITZ_ECANCELED) {
        s->ms_err = res;
    }
    /* Ended with someone still waiting (an error ended it, or the kernel
     * stopped it): arm again, unless closing. */
    int rearm = 0;
    if (ended && !s->closed && !blitz__u32_load(&io->shutdown, BLITZ__RELAXED)) {
        for (blitz_io *op = s->ops; op; op = op->blitz__next)
            if (op->blitz__kind == BLITZ__OP_ACCEPT)
                rearm = 1;
        if (rearm)
            blitz__u32_store(&s->rms_published, 1, BLITZ__RELEASE);
        if (rearm && blitz__uring_arm_accept(io, r, s) == BLITZ_OK)
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

/* The backend's submit: salvaged data, the multishot paths, a system call
 * that may finish at once, else an SQE. */
static blitz_poll blitz__uring_start(blitz_cx *cx, blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    blitz__io *io = s->io;
    uint32_t k = op->blitz__kind;
    int64_t kept;
    if ((blitz__salvage_kind(k) || k == BLITZ__OP_FD_READ) && blitz__salvage_take(s, op, &kept)) {
        blitz__op_result(op, kept);
        return BLITZ_READY;
    }
    if (k == BLITZ__OP_ACCEPT && io->ms_accept)
        return blitz__uring_accept_ms(cx, op);
    if (blitz__recv_ms_wants(s, k, op->blitz__dir)) {
        int single_shot = 0;
        blitz_poll p = blitz__recv_ms_start(cx, op, &single_shot);
        if (!single_shot)
            return p;
    }
    /* A send into a socket with room completes at once: one system call,
     * no completion to wait for. */
    /* A receive right after one that filled its buffer (a bulk stream)
     * finds data waiting: the system call beats a submission round trip. */
    int hot = (k == BLITZ__OP_RECV || k == BLITZ__OP_RECVV || k == BLITZ__OP_RECV_FROM) &&
              blitz__u32_load(&s->rd_hot, BLITZ__RELAXED);
    if (hot || k == BLITZ__OP_SEND || k == BLITZ__OP_SEND_ALL || k == BLITZ__OP_SENDV ||
        k == BLITZ__OP_SEND_TO || BLITZ__OP_IS_FD(k)) {
        for (;;) {
            int64_t r = blitz__op_attempt(op);
            if (r == BLITZ_EINTR)
                continue;
            if (r == BLITZ_EAGAIN) {
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
    int batches = 0;
    blitz__ring *ring = blitz__uring_mine(io, &batches);
    blitz_waker mine = blitz_cx_waker(cx);
    op->blitz__waker = blitz_waker_clone(&mine);
    /* The ring goes with the op: its cancel must reach the same ring. */
    op->blitz__flags = (op->blitz__flags & ((1u << BLITZ__OPF_RING_SHIFT) - 1u)) |
                       BLITZ__OPF_URING | ((ring->index + 1u) << BLITZ__OPF_RING_SHIFT);
    blitz__op_set_state(op, BLITZ__IO_INFLIGHT);
    blitz__op_link(s, op);
    blitz__sock_ref(s);
    blitz__u64_fetch_add(&io->inflight, 1, BLITZ__RELAXED);
    /* Under the socket's lock, so a close's ASYNC_CANCEL comes after it. */
    int rc = blitz__uring_submit_op(io, ring, op, !batches);
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

#if !defined(BLITZ_NO_IO_URING)
/* io_uring: a listener's accept in the kernel holds the socket until its
 * cancel completes, and the handle's descriptor holds it until that
 * completion is reaped, by a worker or the driver, which may be later
 * still; until then its address stays taken (an abstract Unix name, a port
 * bound without SO_REUSEADDR). An eventfd takes the descriptor's number
 * (which stays reserved while ops may name it, and any op on it fails),
 * so the socket goes as soon as the kernel lets go: at once when the
 * closing thread armed the accept (the cancel's task work runs as its
 * submission returns), a moment later otherwise. The caller holds the
 * socket's lock; listeners make no system calls on their descriptor
 * outside it. Without a descriptor to spare nothing changes. */
static void blitz__sock_release_early(blitz_socket *s) {
    int ph = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ph < 0)
        return;
    if (syscall(SYS_dup3, ph, s->fd, O_CLOEXEC) >= 0)
        s->fd_placeholder = 1;
    close(ph);
}
#else
static void blitz__sock_release_early(blitz_socket *s) {
    (void)s;
}
#endif

/* Under the socket's lock: the listener's multishot accept and the
 * socket's multishot receive end. */
static void blitz__uring_quiesce(blitz__io *io, blitz_socket *s) {
    if (s->ms_armed)
        blitz__uring_cancel_ud(io, &io->rings[s->ms_ring],
                               (uint64_t)(uintptr_t)s | BLITZ__UD_ACCEPT_MS);
    blitz__recv_ms_close(s);
}

/* A closing socket (its lock held; its in-flight ops' cancels are
 * submitted). The descriptor is closed when the last op lets go of it;
 * the kernel's accepts hold the listening socket until their cancels
 * complete, and meanwhile it would take connections only to reset them.
 * Shut down, it refuses new ones at once, as after a close on the other
 * backends. (Not an adopted listener: another process may share it.) */
static void blitz__uring_close(blitz__io *io, blitz_socket *s) {
    int armed = s->ms_armed;
    blitz__uring_quiesce(io, s);
    if (s->listening) {
        if (s->listen_own)
            (void)shutdown(s->fd, SHUT_RD);
        if (armed || s->ops)
            blitz__sock_release_early(s);
    }
}

/* The kernel times a connect with a LINK_TIMEOUT behind the CONNECT when
 * it has it and this thread parks in the ring it submits to (a worker,
 * the current-thread driver): a linked pair must reach the kernel in one
 * piece, and only the ring's parker submits outside the ring's lock. */
static int blitz__uring_limit_connect(blitz__io *io, blitz_io *op, int64_t limit_ns) {
#if !BLITZ__LINUX
    /* The ring never starts here (no kernel timespec type either). */
    (void)io;
    (void)op;
    (void)limit_ns;
    return 0;
#else
    _Static_assert(BLITZ__CONNECT_TS_AT + sizeof(struct __kernel_timespec) <=
                       sizeof(((blitz_io *)0)->blitz__scratch),
                   "a limited connect keeps its address, timer and timespec in the op");
    int parker = 0;
    (void)blitz__uring_mine(io, &parker);
    if (!parker || !io->link_timeout)
        return 0;
    struct __kernel_timespec *ts =
        (struct __kernel_timespec *)(void *)((char *)op->blitz__scratch + BLITZ__CONNECT_TS_AT);
    ts->tv_sec = (long long)(limit_ns / 1000000000);
    ts->tv_nsec = (long long)(limit_ns % 1000000000);
    return 1;
#endif
}

/* The shared ring polls io->wake_fd, an eventfd; each worker ring has its
 * own. */
static int blitz__uring_be_init(blitz__io *io) {
#if !defined(BLITZ_NO_IO_URING)
    io->wake_fd = io->wake_rd = blitz__fd_above_stdio(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (io->wake_fd < 0)
        return blitz__from_errno(errno);
    int rc = blitz__uring_init(io, io->rt->workers ? io->rt->num_workers : 0);
    if (rc != BLITZ_OK) {
        close(io->wake_fd);
        io->wake_fd = io->wake_rd = -1;
    }
    return rc;
#else
    (void)io;
    return BLITZ_ENOSYS;
#endif
}

static void blitz__uring_be_destroy(blitz__io *io) {
    blitz__uring_destroy(io);
    close(io->wake_fd);
}

static int blitz__uring_parks_workers(blitz__io *io) {
    return io->nrings > 1;
}

static int blitz__uring_wake_fd(const blitz__io *io, uint32_t index) {
    return index != UINT32_MAX ? io->rings[index].wake_fd : io->wake_fd;
}

static const blitz__io_backend blitz__uring_vtable = {
    .kind = BLITZ_BACKEND_IO_URING,
    .name = "io_uring",
    .alias = "uring",
    .completion = 1,
    .look_interval = 0,
    .init = blitz__uring_be_init,
    .destroy = blitz__uring_be_destroy,
    .submit = blitz__uring_start,
    .cancel = blitz__uring_submit_cancel,
    .close = blitz__uring_close,
    .quiesce = blitz__uring_quiesce,
    .limit_connect = blitz__uring_limit_connect,
    .poll = blitz__uring_poll,
    .park = blitz__uring_park,
    .ready_cheap = blitz__uring_ready_cheap,
    .parks_workers = blitz__uring_parks_workers,
    .worker_start = blitz__uring_worker_start,
    .driver_start = blitz__uring_driver_start,
    .after_drive = blitz__uring_poll,
    .flush = blitz__uring_flush_mine,
    .drain = blitz__uring_drain,
    .wake_fd = blitz__uring_wake_fd,
};

BLITZ_PRIVATE const blitz__io_backend *blitz__backend_ring(void) {
    return &blitz__uring_vtable;
}
/* ====[ END src/io/uring.c ]=============================================== */
/* ====[ BEGIN src/io/uring_recv_ms.c ]===================================== */
/* >>io/uring_recv_ms */
/* Multishot receives on io_uring stream sockets.
 *
 * A receive on a socket whose last receive came back short (a request /
 * response stream, most likely empty now) arms one multishot RECV with
 * provided buffers instead of a single-shot RECV. It stays armed for the
 * connection: each arrival of data completes into a buffer of the ring's
 * pool with no new submission and no new poll arming. The completions
 * queue the buffers on the socket in order (`rq`), and a receive copies
 * from there. While one is armed no receive may use the system call (it
 * could overtake data in completions not yet reaped), so it is ended:
 *   - by a receive that fills a buffer of at least a pool buffer's size
 *     (a bulk reader): bulk data goes straight into the reader's buffer
 *     again, without the copy;
 *   - when the socket holds BLITZ__RECV_MS_HOLD buffers (its reader lags):
 *     the socket's own receive buffer and TCP's window hold the rest, as
 *     they would without it, and the next receive that finds the queue
 *     empty arms it again;
 *   - by the kernel with ENOBUFS when the pool runs dry: the receive that
 *     waits then goes single-shot into its own buffer, the next one arms
 *     again.
 * The ring's owner reaps the completions; a receive that waits is woken
 * to retry and copies by itself, so only its task touches its buffer. */
/* src/io/io.h already included */

/* Asks the kernel to end the multishot receive. Caller holds the
 * socket's lock. */
static void blitz__recv_ms_cancel(blitz_socket *s) {
    if (!s->rms_armed || s->rms_cancelling)
        return;
    s->rms_cancelling = 1;
    blitz__uring_cancel_ud(s->io, &s->io->rings[s->rms_ring],
                           (uint64_t)(uintptr_t)s | BLITZ__UD_RECV_MS);
}

/* Whether a receive op of `kind` / `dir` on `s` takes the multishot path:
 * receives on TCP sockets, and descriptor reads of a socket that has
 * multishot state (they hand out what it queued first). Unix sockets stay
 * single-shot: a multishot receive there can miss the peer's end of
 * stream (seen on Linux 6.18: the last data arrives, the EOF never does;
 * reported upstream as liburing issue 1549). */
BLITZ_PRIVATE int blitz__recv_ms_wants(const blitz_socket *s, uint32_t kind, uint32_t dir) {
    if (s->type != SOCK_STREAM || (s->family != AF_INET && s->family != AF_INET6) ||
        !blitz__u32_load(&s->io->ms_recv, BLITZ__RELAXED))
        return 0;
    if (kind == BLITZ__OP_RECV || kind == BLITZ__OP_RECVV)
        return 1;
    if (kind == BLITZ__OP_FD_READ || (kind == BLITZ__OP_FD_POLL && dir == BLITZ__DIR_READ))
        return !blitz__recv_ms_direct((blitz_socket *)(uintptr_t)s);
    return 0;
}

/* The descriptor is about to be read directly (a descriptor op, a splice):
 * no multishot receive is armed on the socket from now on. Returns 1 when
 * the direct read is safe at once (nothing armed, nothing queued). */
BLITZ_PRIVATE int blitz__recv_ms_direct(blitz_socket *s) {
    blitz__mutex_lock(&s->lock);
    s->rms_off = 1;
    blitz__recv_ms_cancel(s);
    int safe = !s->rms_armed && !s->rq_count && !s->rms_lost;
    blitz__mutex_unlock(&s->lock);
    return safe;
}

/* Bytes the op asks for. */
static size_t blitz__recv_room(const blitz_io *op) {
    struct iovec one;
    size_t n, room = 0;
    const struct iovec *iov = blitz__op_iov(op, &one, &n);
    for (size_t i = 0; i < n; i++)
        room += iov[i].iov_len;
    return room;
}

/* Gives the head buffer of the queue back to its ring's pool. Caller
 * holds the socket's lock. */
static void blitz__rq_pop(blitz_socket *s) {
    blitz__rbuf *b = &s->rq[s->rq_head];
    blitz__uring_pbuf_put(&s->io->rings[b->ring], b->bid);
    s->rq_head = (s->rq_head + 1) % s->rq_cap;
    s->rq_count--;
}

/* Copies queued data into the op's buffers, in order. Caller holds the
 * socket's lock. */
static size_t blitz__rq_copy(blitz_socket *s, blitz_io *op) {
    struct iovec one;
    size_t n;
    const struct iovec *iov = blitz__op_iov(op, &one, &n);
    size_t total = 0;
    for (size_t i = 0; i < n && s->rq_count; i++) {
        char *dst = (char *)iov[i].iov_base;
        size_t room = iov[i].iov_len;
        while (room && s->rq_count) {
            blitz__rbuf *b = &s->rq[s->rq_head];
            size_t take = b->len - b->off;
            if (take > room)
                take = room;
            memcpy(dst, blitz__uring_pbuf_addr(&s->io->rings[b->ring], b->bid) + b->off, take);
            dst += take;
            room -= take;
            total += take;
            b->off += (uint32_t)take;
            if (b->off == b->len)
                blitz__rq_pop(s);
        }
    }
    return total;
}

/* Appends a filled buffer to the queue; 0 when out of memory. Caller
 * holds the socket's lock. */
static int blitz__rq_push(blitz_socket *s, uint32_t ring, uint32_t bid, uint32_t len) {
    void *q = s->rq;
    if (s->rq_count == s->rq_cap &&
        !blitz__fifo_grow(&q, &s->rq_head, s->rq_count, &s->rq_cap, sizeof(blitz__rbuf), 8))
        return 0;
    s->rq = (blitz__rbuf *)q;
    blitz__rbuf *b = &s->rq[(s->rq_head + s->rq_count) % s->rq_cap];
    b->ring = ring;
    b->bid = bid;
    b->off = 0;
    b->len = len;
    s->rq_count++;
    return 1;
}

/* A receive on a stream socket (io_uring). Serves it from the queue, or
 * waits on the armed multishot receive, or arms one. `*single_shot` set:
 * the caller goes on with the system call / single-shot path. */
BLITZ_PRIVATE blitz_poll blitz__recv_ms_start(blitz_cx *cx, blitz_io *op, int *single_shot) {
    blitz_socket *s = op->blitz__sock;
    blitz__io *io = s->io;
    *single_shot = 0;
    blitz__mutex_lock(&s->lock);
    int64_t r = 0;
    int done = 1;
    size_t room = blitz__recv_room(op);
    if (s->closed) {
        r = BLITZ_ECLOSED;
    } else if (op->blitz__kind == BLITZ__OP_FD_POLL) {
        /* Readable: queued data, the end of the stream, or an error. */
        if (s->rq_count || s->rms_eof || s->rms_err || s->rms_lost)
            r = POLLIN;
        else
            done = 0;
    } else if (s->rq_count || !room) {
        r = (int64_t)blitz__rq_copy(s, op);
        /* A bulk reader (a pool buffer's worth at once): its data goes
         * straight into its own buffers again once the multishot receive
         * has ended. */
        if (r >= BLITZ_URING_RECV_BUF_SIZE)
            blitz__recv_ms_cancel(s);
    } else if (s->rms_lost) {
        r = BLITZ_ENOMEM; /* for good: what came after the gap is no longer this stream */
    } else if (s->rms_err) {
        r = s->rms_err;
        s->rms_err = 0;
    } else if (!s->rms_eof) {
        done = 0; /* nothing to hand out: wait */
    }
    if (done) {
        blitz__mutex_unlock(&s->lock);
        blitz__op_result(op, r);
        return BLITZ_READY;
    }
    if (!s->rms_armed) {
        /* Nothing queued and nothing armed: the system call is safe. A
         * bulk reader (its last receive filled its buffer, or got a pool
         * buffer's worth), a socket the pool could not serve last time, or
         * one the kernel refused, goes single-shot. */
        int batches = 0;
        blitz__ring *ring = blitz__uring_mine(io, &batches);
        blitz__u32_store(&s->rms_published, 1, BLITZ__RELEASE);
        if (blitz__u32_load(&s->rd_hot, BLITZ__RELAXED) ||
            blitz__u32_load(&s->rd_bulk, BLITZ__RELAXED) || s->rms_nobufs || s->rms_off ||
            !blitz__uring_pbuf_ready(ring) || blitz__uring_arm_recv(io, ring, s, !batches)) {
            s->rms_nobufs = 0;
            blitz__mutex_unlock(&s->lock);
            *single_shot = 1;
            return BLITZ_PENDING;
        }
        s->rms_armed = 1;
        s->rms_ring = ring->index;
        blitz__sock_ref(s);
        blitz__u64_fetch_add(&io->inflight, 1, BLITZ__RELAXED);
        blitz__u64_fetch_add(&io->rms_armed_count, 1, BLITZ__RELAXED);
    }
    blitz_waker mine = blitz_cx_waker(cx);
    op->blitz__waker = blitz_waker_clone(&mine);
    blitz__op_set_state(op, BLITZ__IO_WAIT);
    blitz__op_link(s, op);
    blitz__mutex_unlock(&s->lock);
    return BLITZ_PENDING;
}

/* A completion of a socket's multishot receive. The ring's reaping
 * thread. */
BLITZ_PRIVATE void blitz__io_recv_ms(blitz__io *io, blitz__ring *r, blitz_socket *s, int32_t res,
                                     uint32_t flags) {
    int ended = !(flags & IORING_CQE_F_MORE);
    (void)blitz__u32_load(&s->rms_published, BLITZ__ACQUIRE);
    blitz__mutex_lock(&s->lock);
    if (flags & IORING_CQE_F_BUFFER) {
        uint32_t bid = flags >> IORING_CQE_BUFFER_SHIFT;
        if (res <= 0 || s->closed || s->rms_lost) {
            blitz__uring_pbuf_put(r, bid);
        } else if (!blitz__rq_push(s, r->index, bid, (uint32_t)res)) {
            /* Out of memory for the queue: the stream lost this data. Its
             * reader gets what came before, then BLITZ_ENOMEM from every
             * receive: handing out later data (queued once memory is back,
             * or read by a single-shot receive) would join the two sides
             * of the gap without a word. */
            blitz__uring_pbuf_put(r, bid);
            s->rms_lost = 1;
            blitz__recv_ms_cancel(s);
        }
    }
    if (res == 0) {
        s->rms_eof = 1;
    } else if (res == BLITZ_ENOBUFS) {
        s->rms_nobufs = 1;
        blitz__u64_fetch_add(&io->rms_nobufs_count, 1, BLITZ__RELAXED);
    } else if (res == BLITZ_EINVAL) {
        s->rms_off = 1;
    } else if (res < 0 && res != BLITZ_ECANCELED && !s->rms_err) {
        s->rms_err = res;
    }
    if (ended) {
        s->rms_armed = 0;
        s->rms_cancelling = 0;
    } else if (s->rq_count >= BLITZ__RECV_MS_HOLD && !s->rms_cancelling) {
        blitz__recv_ms_cancel(s);
        blitz__u64_fetch_add(&io->rms_held_cancels, 1, BLITZ__RELAXED);
    }
    blitz__mutex_unlock(&s->lock);
    /* Every read waiting on the socket tries again (normally one), as for
     * a readiness event. */
    blitz__io_ready(s, 1, 0);
    if (ended) {
        blitz__u64_fetch_sub(&io->inflight, 1, BLITZ__RELEASE);
        blitz__sock_unref(s);
    }
}

/* The socket closes (or the runtime shuts down): end the multishot
 * receive, give the queued buffers back. Caller holds the socket's
 * lock. */
BLITZ_PRIVATE void blitz__recv_ms_close(blitz_socket *s) {
    blitz__recv_ms_cancel(s);
    while (s->rq_count)
        blitz__rq_pop(s);
}

/* The socket's memory goes (its rings may be gone already). */
BLITZ_PRIVATE void blitz__recv_ms_release(blitz_socket *s) {
    blitz__free(s->rq);
    s->rq = NULL;
    s->rq_count = s->rq_cap = 0;
}
/* ====[ END src/io/uring_recv_ms.c ]======================================= */
/* ====[ BEGIN src/io/fd.c ]================================================ */
/* >>io/fd */
/* Descriptor ops: read(2)/write(2) and readiness waits on any descriptor a
 * blitz_socket wraps (pipes, ttys, character devices, sockets), and
 * blitz_pipe.
 *
 * They are op kinds of the I/O driver (driver.c runs them like the socket
 * ops): on a readiness backend the system call is tried and, on EAGAIN,
 * the op waits for the direction's event; on a completion backend the same
 * system call is tried first and the wait is a readiness wait in the
 * kernel. The kernel's own reads and writes are not used: on a descriptor
 * with O_NONBLOCK they complete with BLITZ_EAGAIN instead of waiting, and the
 * kernel would own the caller's buffer. */
/* src/io/io.h already included */

/* ---- writes without SIGPIPE ---------------------------------------------------- */

/* A write into a pipe (or a zero-copy transfer into a socket) whose reader
 * is gone raises SIGPIPE at the calling thread, which kills the process by
 * default. The signal is blocked around the call, and one that the call
 * raised is taken back before the mask is restored, so the caller sees
 * BLITZ_EPIPE only. */
typedef struct blitz__nosig {
    sigset_t old;
    int was_pending; /* a SIGPIPE that was not ours */
    int changed;
} blitz__nosig;

BLITZ_PRIVATE void blitz__nosig_begin(blitz__nosig *g) {
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    g->changed = pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old) == 0;
}

BLITZ_PRIVATE void blitz__nosig_end(blitz__nosig *g, int epipe) {
    int saved = errno;
    if (epipe && !g->was_pending) {
        sigset_t pipe_set, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
            blitz__sigpipe_take(&pipe_set);
    }
    if (g->changed)
        pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = saved;
}

/* Whether the wrapped descriptor is a socket (blitz__send_nosig needs no
 * signal mask). */
static int blitz__fd_is_socket(const blitz_socket *s) {
    return s->family != AF_UNSPEC;
}

/* ---- the system calls of the descriptor kinds --------------------------------------- */

BLITZ_PRIVATE int64_t blitz__fd_attempt(blitz_io *op) {
    blitz_socket *s = op->blitz__sock;
    ssize_t r;
    errno = 0;
    switch (op->blitz__kind) {
    case BLITZ__OP_FD_READ:
        r = read(s->fd, op->blitz__buf, op->blitz__len);
        break;
    case BLITZ__OP_FD_WRITE:
    case BLITZ__OP_FD_WRITE_ALL: {
        const char *p = (const char *)op->blitz__buf + op->blitz__done;
        size_t n = op->blitz__len - op->blitz__done;
        if (blitz__fd_is_socket(s)) {
            r = blitz__send_nosig(s->fd, p, n);
            if (r < 0 && errno == ENOTSOCK) {
                /* adopted descriptor with a family but not a socket */
                blitz__nosig g;
                blitz__nosig_begin(&g);
                r = write(s->fd, p, n);
                blitz__nosig_end(&g, r < 0 && errno == EPIPE);
            }
        } else {
            blitz__nosig g;
            blitz__nosig_begin(&g);
            r = write(s->fd, p, n);
            blitz__nosig_end(&g, r < 0 && errno == EPIPE);
        }
        break;
    }
    case BLITZ__OP_FD_POLL: {
        struct pollfd pfd;
        pfd.fd = s->fd;
        pfd.events = op->blitz__dir == BLITZ__DIR_WRITE ? POLLOUT : POLLIN;
        pfd.revents = 0;
        r = poll(&pfd, 1, 0);
        if (r > 0)
            return pfd.revents;
        if (r == 0)
            return BLITZ_EAGAIN;
        break;
    }
    default:
        return BLITZ_EINVAL;
    }
    if (r < 0) {
        if (errno == EWOULDBLOCK || errno == EAGAIN)
            return BLITZ_EAGAIN;
        return blitz__from_errno(errno);
    }
    return (int64_t)r;
}

/* ---- public ops --------------------------------------------------------------------------- */

BLITZ_API blitz_poll blitz_fd_read(blitz_cx *cx, blitz_io *op, blitz_socket *s, void *buf,
                                   size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_READ, buf, len, BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_fd_write(blitz_cx *cx, blitz_io *op, blitz_socket *s, const void *buf,
                                    size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_WRITE, buf, len, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_fd_write_all(blitz_cx *cx, blitz_io *op, blitz_socket *s,
                                        const void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_WRITE_ALL, buf, len, BLITZ__DIR_WRITE);
}
BLITZ_API blitz_poll blitz_fd_readable(blitz_cx *cx, blitz_io *op, blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_POLL, NULL, 0, BLITZ__DIR_READ);
}
BLITZ_API blitz_poll blitz_fd_writable(blitz_cx *cx, blitz_io *op, blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_op_poll(cx, op, s, BLITZ__OP_FD_POLL, NULL, 0, BLITZ__DIR_WRITE);
}

/* ---- pipes ---------------------------------------------------------------------------------- */

BLITZ_PRIVATE int blitz__pipe_fds(int fds[2]) {
    return blitz__pipe_open(fds, 1);
}

BLITZ_API int blitz_pipe(blitz_runtime *rt, blitz_socket **read_end, blitz_socket **write_end) {
    if (read_end)
        *read_end = NULL;
    if (write_end)
        *write_end = NULL;
    if (!rt || !read_end || !write_end)
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    int fds[2];
    int rc = blitz__pipe_fds(fds);
    if (rc != BLITZ_OK)
        return rc;
    blitz_socket *r = NULL, *w = NULL;
    rc = blitz__sock_wrap(rt->io, fds[0], AF_UNSPEC, 0, &r);
    if (rc != BLITZ_OK) {
        close(fds[1]);
        return rc;
    }
    rc = blitz__sock_wrap(rt->io, fds[1], AF_UNSPEC, 0, &w);
    if (rc != BLITZ_OK) {
        blitz_sock_close(r);
        return rc;
    }
    *read_end = r;
    *write_end = w;
    return BLITZ_OK;
}
/* ====[ END src/io/fd.c ]================================================== */
/* ########################################################################## */
/* LAYER sched: run queues, idle workers, both schedulers, the blocking pool */
/* ########################################################################## */
/* ====[ BEGIN src/sched/global_queue.c ]=================================== */
/* >>sched/global_queue */
/* The global injection queue (seed 000): a mutex-protected intrusive list
 * of tasks with an atomic length, so that "is it empty?" costs no lock. It
 * takes spawns and wakes from threads that are not workers, local-queue
 * overflow, and is closed at shutdown (pushes then fail). */
/* ====[ BEGIN src/sched/sched.h ]========================================== */
/* >>sched/sched */
/* The schedulers' internal API: run queues, idle workers, the worker and
 * current-thread cores, and the blocking pool. */
#ifndef BLITZ__SCHED_H
#define BLITZ__SCHED_H
/* src/io/io.h already included */

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
struct blitz__global_queue {
    blitz__mutex lock;
    blitz__task *head;
    blitz__task *tail;
    int closed;
    BLITZ__ALIGNED blitz__atomic_u64 len;
};

struct blitz__idle {
    BLITZ__ALIGNED blitz__atomic_u32 num_searching;
    BLITZ__ALIGNED blitz__atomic_u64 parked_bitmap; /* bit i set: worker i parked */
};

/* ---- workers (worker.c) ----------------------------------------------------- */

struct blitz__worker {
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
};

/* ---- the current-thread core (current_thread.c) ---------------------------- */

struct blitz__ct_core {
    blitz__task *head, *tail;                   /* run queue, touched only by the driving thread */
    blitz__task *deferred_head, *deferred_tail; /* yielded this tick */
    blitz__atomic_u32 driving;                  /* 1 while a thread drives the runtime */
    blitz__parker parker;                       /* the driver sleeps here */
    uint32_t tick;
    blitz__worker_counters counters;
    blitz__block_cache cache;
};

/* ---- the blocking pool (blocking_pool.c) ------------------------------------ */

/* A pool thread's record, on its own stack. */
typedef struct blitz__pool_thread {
    struct blitz__pool_thread *next, *prev; /* the idle list */
    blitz__parker parker;
    int notified; /* handed work while idle; guarded by the pool's lock */
} blitz__pool_thread;

/* Everything below is guarded by `lock`. */
struct blitz__pool {
    blitz__mutex lock;
    struct blitz__pool_job *head, *tail;             /* jobs waiting for a thread */
    struct blitz__pool_job *space_head, *space_tail; /* ops waiting for queue room */
    blitz__pool_thread *idle_head;                   /* most recently idle first */
    uint32_t queued, threads, idle;
    /* Threads woken or started for queued jobs that have not yet taken
     * the lock: jobs they are about to take do not count as a backlog. */
    uint32_t inbound;
    uint32_t max_threads, capacity;
    uint64_t keep_alive_ns;
    int closed;
    int have_last_exiting;
    pthread_t last_exiting; /* joined by the next thread to exit, or shutdown */
    blitz__parker *shutdown_waiter;
    struct blitz__pool_rec *records; /* see blitz__pool_rec.all_next */
    uint64_t threads_started, jobs_run, rejected;
};

/* An op's record on the blocking pool (blocking_pool.c); each kind of op
 * puts its request and results after it. */
struct blitz__pool_rec {
    struct blitz__pool_job job; /* first: the pool hands back this pointer */
    blitz_waker waker;
    blitz_runtime *rt;
    uint32_t state;
    void (*exec)(blitz__pool_rec *rec, int cancelled); /* the work; ECANCELED when cancelled */
    void (*discard)(blitz__pool_rec *rec);             /* frees what the record still holds */
    /* Every record the pool has seen, so that blitz_runtime_free can free
     * those whose task was cancelled without cancelling its op. */
    blitz__pool_rec *all_next, *all_prev;
    int tracked;
};
typedef struct blitz__pool_job blitz__pool_job;

#endif
/* ====[ END src/sched/sched.h ]============================================ */
/* ----[ RESUME src/sched/global_queue.c ] */

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
/* ====[ END src/sched/global_queue.c ]===================================== */
/* ====[ BEGIN src/sched/local_queue.c ]==================================== */
/* >>sched/local_queue */
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
/* src/sched/sched.h already included */

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
    if (blitz__global_queue_push_batch(rt->global, first, t, (uint64_t)BLITZ__LQ_HALF + 1) != 0) {
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
            (void)blitz__global_queue_push_batch(rt->global, t, t, 1);
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
/* ====[ END src/sched/local_queue.c ]====================================== */
/* ====[ BEGIN src/sched/idle.c ]=========================================== */
/* >>sched/idle */
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
/* src/sched/sched.h already included */

BLITZ_PRIVATE void blitz__idle_init(blitz__idle *idle) {
    blitz__u32_store(&idle->num_searching, 0, BLITZ__RELAXED);
    blitz__u64_store(&idle->parked_bitmap, 0, BLITZ__RELAXED);
}

/* Searcher cap: at most half the workers steal at once (thundering herd). */
BLITZ_PRIVATE int blitz__idle_try_become_searcher(blitz_runtime *rt) {
    uint32_t n = blitz__u32_load(&rt->idle->num_searching, BLITZ__RELAXED);
    for (;;) {
        if (2 * n >= rt->num_workers)
            return 0;
        if (blitz__u32_cas_weak(&rt->idle->num_searching, &n, n + 1, BLITZ__SEQ_CST))
            return 1;
    }
}

/* Wakes one parked worker, as a searcher, unless someone already searches.
 * Called after making work visible to other workers. */
BLITZ_PRIVATE void blitz__idle_notify_parked(blitz_runtime *rt) {
    blitz__fence_seq_cst();
    if (blitz__u32_load(&rt->idle->num_searching, BLITZ__RELAXED) != 0)
        return;
    uint64_t bm = blitz__u64_load(&rt->idle->parked_bitmap, BLITZ__RELAXED);
    while (bm) {
        uint32_t i = (uint32_t)__builtin_ctzll(bm);
        if (blitz__u64_cas_weak(&rt->idle->parked_bitmap, &bm, bm & ~((uint64_t)1 << i),
                                BLITZ__ACQ_REL)) {
            blitz__u32_fetch_add(&rt->idle->num_searching, 1, BLITZ__SEQ_CST);
            blitz__parker_unpark(&rt->workers[i].parker);
            return;
        }
    }
}

/* A searcher found work. Returns 1 when it was the last one: then it must
 * wake another worker, because more work may be waiting (the chain that
 * keeps every queued task moving). */
BLITZ_PRIVATE int blitz__idle_transition_from_searching(blitz_runtime *rt) {
    return blitz__u32_fetch_sub(&rt->idle->num_searching, 1, BLITZ__SEQ_CST) == 1;
}

BLITZ_PRIVATE void blitz__idle_set_parked(blitz_runtime *rt, uint32_t index) {
    blitz__u64_fetch_or(&rt->idle->parked_bitmap, (uint64_t)1 << index, BLITZ__SEQ_CST);
}

/* Clears our own bit. Returns 1 when it was still set (nobody claimed us),
 * 0 when a notifier had claimed us (we are now counted as a searcher). */
BLITZ_PRIVATE int blitz__idle_unset_parked(blitz_runtime *rt, uint32_t index) {
    uint64_t bit = (uint64_t)1 << index;
    return (blitz__u64_fetch_and(&rt->idle->parked_bitmap, ~bit, BLITZ__ACQ_REL) & bit) != 0;
}

/* Wakes every parked worker (shutdown). */
BLITZ_PRIVATE void blitz__idle_unpark_all(blitz_runtime *rt) {
    for (uint32_t i = 0; i < rt->num_workers; i++)
        blitz__parker_unpark(&rt->workers[i].parker);
}
/* ====[ END src/sched/idle.c ]============================================= */
/* ====[ BEGIN src/sched/worker.c ]========================================= */
/* >>sched/worker */
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
/* src/sched/sched.h already included */

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
    if (blitz__global_queue_push(rt->global, t) == BLITZ_OK)
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
        (void)blitz__global_queue_push_batch(w->rt->global, t, last, n);
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
    uint64_t len = blitz__global_queue_len(rt->global);
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
    uint32_t n = blitz__global_queue_pop_batch(rt->global, got, (uint32_t)want);
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

/* Work another worker could take or this one could find: the global queue
 * or any ring. */
static int blitz__work_available(blitz_runtime *rt) {
    if (blitz__global_queue_len(rt->global))
        return 1;
    for (uint32_t i = 0; i < rt->num_workers; i++)
        if (blitz__local_queue_len(&rt->workers[i].queue))
            return 1;
    return 0;
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
        /* The last searcher to find work wakes another worker for work
         * that worker could take: producers skipped their wake while we
         * searched, and their work is visible here (their push, fence,
         * read of the searcher count against our decrement, fence, read
         * of the queues). With nothing visible the wake only pays off
         * when the woken worker spins before parking again, staying ready
         * for the next task; a runtime that serves sockets does not spin,
         * and there the wake cost a thread sleep and wake per steal
         * (measured on the TCP echo with io_uring: p99 2.2 ms with the
         * unconditional wake, 0.6-0.9 ms without). */
        if (blitz__idle_transition_from_searching(w->rt)) {
            blitz__fence_seq_cst();
            if (blitz__io_spin_rounds(w->rt) || blitz__work_available(w->rt))
                blitz__idle_notify_parked(w->rt);
        }
    }
    return t;
}

/* With a paused clock, the threads polling a task are counted, so the
 * clock never jumps while a poll might be about to arm a timer. */
static inline void blitz__paused_poll_begin(blitz_runtime *rt) {
    if (rt->time->paused)
        blitz__u32_fetch_add(&rt->paused_polling, 1, BLITZ__SEQ_CST);
}
static inline void blitz__paused_poll_end(blitz_runtime *rt) {
    if (rt->time->paused)
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
    uint64_t hint = blitz__u64_load(&rt->time->next_expiry_ns, BLITZ__SEQ_CST);
    return hint != UINT64_MAX && blitz__rt_now(rt) >= hint;
}

/* Paused clock: when this worker is the last to park and nothing else runs,
 * every task is idle, so jump to the next timer. Returns 1 when it did. */
/* Paused clock: every task is idle when every started worker is parked (the
 * caller's own bit may be set), no other thread polls a task, no pinned
 * main task is runnable, and nothing is queued. Seq_cst loads: each counter
 * is raised before its thread starts the work it counts. */
static int blitz__runtime_idle(blitz_runtime *rt) {
    uint64_t parked = blitz__u64_load(&rt->idle->parked_bitmap, BLITZ__SEQ_CST);
    return (uint32_t)__builtin_popcountll(parked) >=
               blitz__u32_load(&rt->workers_started, BLITZ__RELAXED) &&
           !blitz__u32_load(&rt->external_running, BLITZ__SEQ_CST) &&
           !blitz__u32_load(&rt->pinned_runnable, BLITZ__SEQ_CST) &&
           !blitz__u32_load(&rt->paused_polling, BLITZ__SEQ_CST) && !blitz__work_available(rt);
}

/* Jumps the paused clock to the next timer when the runtime is idle.
 * Returns 1 when it did. */
static int blitz__worker_auto_advance(blitz_runtime *rt) {
    if (!rt->time->paused || !blitz__runtime_idle(rt))
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
        blitz__u32_store(&rt->time->sleeper, 0, BLITZ__SEQ_CST);
    if (!blitz__idle_unset_parked(rt, st->w->index))
        st->w->searching = 1; /* a notifier claimed us meanwhile */
}

/* With transitioning_to_park set: publishes this worker as parked and
 * returns 1, or returns 0 when work turned up (or it is claimed) and it
 * must not sleep. */
static int blitz__worker_commit_park(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    if (w->lifo_slot) {
        blitz__local_queue_push(&w->queue, w->lifo_slot, rt, &w->counters);
        w->lifo_slot = NULL;
    }
    if (blitz__local_queue_len(&w->queue) || w->batch_head < w->batch_len)
        return 0;
    if (w->searching) {
        w->searching = 0;
        /* The last searcher to leave re-checks every queue: a producer that
         * saw it searching did not wake anyone. */
        if (blitz__idle_transition_from_searching(rt)) {
            blitz__fence_seq_cst();
            if (blitz__work_available(rt))
                return 0;
        }
    }
    blitz__idle_set_parked(rt, w->index);
    blitz__fence_seq_cst();
    if (blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE) || blitz__work_available(rt) ||
        blitz__time_due(rt) || blitz__worker_auto_advance(rt)) {
        if (!blitz__idle_unset_parked(rt, w->index))
            w->searching = 1; /* a notifier claimed us meanwhile */
        return 0;
    }
    return 1;
}

/* Sleeps a worker that blitz__worker_commit_park published as parked. */
static void blitz__worker_sleep(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    /* One parked worker sleeps until the next timer (the sleeper); the
     * others until woken. Timer arming reads `sleeper` after publishing
     * the new deadline (seq_cst both sides), and wakes the sleeper or, if
     * there is none, a parked worker: this one, whose bit is already set. */
    /* With an I/O driver the sleeper waits in the backend, with the timer
     * deadline as its timeout, so I/O reaches an idle runtime at once. */
    uint64_t timeout = rt->park_timeout_ns, timer_ns = blitz__time_sleep_ns(rt);
    uint32_t none = 0;
    int io = rt->io != NULL;
    int sleeper =
        (timer_ns || io) && blitz__u32_cas(&rt->time->sleeper, &none, w->index + 1, BLITZ__SEQ_CST);
    if (sleeper) {
        /* Re-read after becoming the sleeper: an earlier timer armed in
         * between saw no sleeper and woke a parked worker, maybe not us. */
        timer_ns = blitz__time_sleep_ns(rt);
        if (timer_ns && (timeout == 0 || timer_ns < timeout))
            timeout = timer_ns;
    }
    BLITZ__STAT(blitz__u64_bump(&w->counters.parked, 1));
    blitz__worker_unpark_state st = {w, 0, sleeper};
    /* A worker with its own io_uring ring parks in it, sleeper or not: the
     * completions of the ops it submitted come back to it. */
    if (io && (sleeper || blitz__io_parks_workers(rt))) {
        blitz__io_park(rt, &w->parker, timeout, blitz__worker_io_woke, &st);
    } else {
        /* Submissions must not wait for this worker. */
        blitz__io_flush(rt);
        if (!sleeper || timer_ns)
            blitz__parker_park(&w->parker, timeout);
    }
    blitz__worker_io_woke(&st);
}

/* Returns 1 when the worker slept in the kernel. */
static int blitz__worker_park(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    /* Yielded tasks are this worker's work, invisible to everyone else: a
     * worker must never sleep on them. */
    if (w->deferred_head) {
        blitz__worker_flush_deferred(w);
        return 0;
    }
    /* Spin first: a parked vCPU takes tens of microseconds to wake, far
     * longer than the gap between bursts of work in a busy program. */
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
    int slept = blitz__worker_commit_park(w);
    if (slept)
        blitz__worker_sleep(w);
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
    blitz__context_init(&ctx, rt);
    ctx.worker = w;
    ctx.cache = &w->cache;
    ctx.counters = &w->counters;
    ctx.worker_index = (int)w->index;
    blitz__context_set(&ctx);
    blitz__io_worker_start(rt, w->index);
    w->stamp_ns = blitz__now_ns();
    uint64_t polls_since_io = BLITZ__IO_EVENT_INTERVAL; /* look first */
    while (!blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE)) {
        uint32_t polls = 0;
        /* Any worker fires due timers (a try-lock: one is enough), so a
         * worker stuck in a long poll does not hold them back. */
        blitz__time_process(rt, 0);
        /* And reaps I/O completions the same way. */
        blitz__io_between_ticks(rt, &polls_since_io);
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
        polls_since_io += polls;
        if (polls == BLITZ_BUDGET_PER_TICK) {
            blitz__worker_update_interval(w, blitz__now_ns());
        } else if (polls == 0) {
            if (blitz__worker_park(w)) {
                /* Time asleep is not poll time. */
                w->stamp_ns = blitz__now_ns();
                w->stamp_polls = 0;
                /* The backend was waited in, or another worker waits
                 * in it. */
                polls_since_io = 0;
            } else {
                polls_since_io = BLITZ__IO_EVENT_INTERVAL;
            }
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
    /* Threads started after shutdown joined the workers would never be
     * joined. */
    if (rt->shutdown_done)
        rc = BLITZ_ESHUTDOWN;
    else if (!blitz__u32_load(&rt->started, BLITZ__RELAXED)) {
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
    rc = blitz__global_queue_push(rt->global, t);
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
    uint64_t len = blitz__global_queue_len(rt->global);
    uint64_t before = *seen;
    *seen = len;
    if (len == 0 || len < before || blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE) ||
        blitz__io_serving(rt))
        return 0;
    /* Announce before checking shutdown again (seq_cst both ways): shutdown
     * sets its flag, then waits for external_running == 0 before it sweeps
     * the tasks. */
    blitz__u32_fetch_add(&rt->external_running, 1, BLITZ__SEQ_CST);
    blitz__task *batch[BLITZ__HELP_BATCH];
    uint32_t n = 0;
    if (!blitz__u32_load(&rt->shutdown, BLITZ__SEQ_CST))
        n = blitz__global_queue_pop_batch(rt->global, batch, BLITZ__HELP_BATCH);
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
    *seen = blitz__global_queue_len(rt->global);
    return n != 0;
}

/* blockOnComplete: a thread that is not a worker runs tasks from the global
 * queue while it waits, so progress does not depend on a free worker.
 * `nested`: the thread is inside a poll of one of rt's tasks, which a
 * shutdown waits for, so it gives up then. */
BLITZ_PRIVATE void blitz__external_help_until(blitz_runtime *rt, blitz__task *t, int nested) {
    blitz__context hctx;
    blitz__context_init(&hctx, rt);
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
    blitz__context_init(&hctx, rt);
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

BLITZ_PRIVATE void blitz__sched_kick_timers(blitz_runtime *rt, uint32_t sleeper) {
    if (sleeper)
        blitz__parker_unpark(&rt->workers[sleeper - 1].parker);
    else
        blitz__idle_notify_parked(rt);
}
/* ====[ END src/sched/worker.c ]=========================================== */
/* ====[ BEGIN src/sched/current_thread.c ]================================= */
/* >>sched/current_thread */
/* The current-thread scheduler (seed 004): one run queue, driven by
 * whichever thread waits on the runtime (blitz_join_blocking /
 * blitz_runtime_run). Tasks scheduled on the driving thread go straight to
 * the local list; other threads push to the global (injection) queue and
 * unpark the driver. Only one thread drives at a time (`driving`); other
 * waiters sleep on the completion word and take over when the driver
 * leaves. */
/* src/sched/sched.h already included */

/* Driving thread only. */
BLITZ_PRIVATE void blitz__ct_push(blitz_runtime *rt, blitz__task *t) {
    blitz__list_append(&rt->ct->head, &rt->ct->tail, t);
}

/* Any thread. The parker's token makes an unpark that lands before the
 * driver parks count. */
BLITZ_PRIVATE int blitz__ct_inject(blitz_runtime *rt, blitz__task *t) {
    int rc = blitz__global_queue_push(rt->global, t);
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
    blitz__task *t = blitz__global_queue_take_all(rt->global);
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
    uint64_t polls_since_io = BLITZ__IO_EVENT_INTERVAL; /* look first */
    for (;;) {
        if (blitz__task_is_complete(target) || blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            return;
        uint32_t polls = 0;
        blitz__time_process(rt, 1);
        blitz__io_between_ticks(rt, &polls_since_io);
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
        polls_since_io += polls;
        if (polls == 0) {
            /* Idle. A completion on another thread (a cancel) wakes the
             * joiners and unparks us; so does any inject. */
            if (!blitz__task_set_thread_joiner(target))
                return;
            if (blitz__global_queue_len(rt->global))
                continue;
            /* Idle with a paused clock: jump to the next timer, unless a
             * blocking-pool job may still wake a task (it counts in
             * paused_polling; seq_cst as it is raised). */
            if (!blitz__u32_load(&rt->paused_polling, BLITZ__SEQ_CST) &&
                blitz__time_auto_advance(rt, NULL))
                continue;
            uint64_t timeout = rt->park_timeout_ns, timer_ns = blitz__time_sleep_ns(rt);
            if (timer_ns && (timeout == 0 || timer_ns < timeout))
                timeout = timer_ns;
            BLITZ__STAT(blitz__u64_bump(&ct->counters.parked, 1));
            /* The driver waits in the I/O backend, with the timer deadline. */
            if (rt->io) {
                blitz__io_park(rt, &ct->parker, timeout, NULL, NULL);
                polls_since_io = 0;
            } else {
                blitz__parker_park(&ct->parker, timeout);
            }
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
        /* A pool thread of this runtime: shutdown waits for its job, so
         * the job must not wait for the sweep. */
        if (ctx && ctx->rt == rt && blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            return;
        uint32_t idle = 0;
        if (!blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE) &&
            blitz__u32_cas(&rt->ct->driving, &idle, 1, BLITZ__ACQUIRE)) {
            blitz__context dctx;
            blitz__context_init(&dctx, rt);
            dctx.ct_driver = 1;
            dctx.cache = &rt->ct->cache;
            dctx.counters = &rt->ct->counters;
            blitz__context *outer = blitz__context_set(&dctx);
            blitz__io_driver_start(rt);
            blitz__ct_drive_until(rt, t, &dctx);
            blitz__io_after_drive(rt);
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
/* ====[ END src/sched/current_thread.c ]=================================== */
/* ====[ BEGIN src/sched/blocking_pool.c ]================================== */
/* >>sched/blocking_pool */
/* The blocking pool (seed 002 "Blocking Pool"; Tokio's runtime/blocking):
 * threads that run work which would block a worker.
 *
 * Threads start on demand, up to max_threads, and exit after keep_alive_ns
 * without work. An idle thread waits on its own parker in the idle list,
 * most recently idle first, and new work goes to the head of that list: a
 * busy pool reuses its warm threads while the ones at the tail age out, so
 * the pool shrinks when the load drops. The queue is intrusive (the job
 * lives in the task block or in the op), so queueing never allocates.
 *
 * Protocols, all under `lock`:
 *   submit:   closed: ESHUTDOWN. An idle thread: take it off the list, mark
 *             it notified, inbound++, unpark it. Else below the cap: start
 *             a thread (threads++, inbound++). Else, with a capacity, when
 *             the jobs no thread is coming for (queued - inbound) reach it:
 *             BLITZ_EFULL, or, for an op that may wait, join the room
 *             waiters. Then append the job.
 *   a thread: takes jobs until the queue is empty (each one taken frees
 *             room: the first room waiter is woken), then goes idle until
 *             it is notified, the pool closes, or keep_alive passes. Any
 *             other wake-up (spurious, or a token left over from a notify
 *             that raced its time-out) parks it again for the time left.
 *   exit:     threads--, record itself as last_exiting and join the thread
 *             recorded before it, so at most one exited thread is ever
 *             unjoined; shutdown joins that one.
 *   shutdown: closed = 1, take the queue and complete every job in it as
 *             cancelled, wake the room waiters and every idle thread, wait
 *             until threads == 0 (running jobs finish first), join
 *             last_exiting.
 *
 * Pool ops (files, DNS, processes) keep everything a thread touches in a
 * heap record (blitz__pool_rec and the op's request and results after
 * it); the op in the task's state only points at it. rec->state:
 *   INFLIGHT (queued or running; `job.linked` under the lock tells which)
 *   -> DONE, when the task's next poll takes the results and frees it;
 *   ROOM while waiting for queue room, RETRY once woken for it (the
 *   task's poll queues it again); ABANDONED (a flag) when the task gave
 *   up while a thread ran it: the thread then frees it. Whoever owns the
 *   record frees it, so a task that gives up never waits, and no thread
 *   writes into a task's state after the task stopped caring. */
/* src/sched/sched.h already included */

#define BLITZ__POOL_DEFAULT_MAX       512u
#define BLITZ__POOL_DEFAULT_KEEPALIVE ((uint64_t)10 * 1000000000u)

#define BLITZ__OP_IDLE      0u
#define BLITZ__OP_INFLIGHT  1u
#define BLITZ__OP_DONE      2u
#define BLITZ__OP_ROOM      3u
#define BLITZ__OP_RETRY     5u /* woken for room: the task queues it again */
#define BLITZ__OP_ABANDONED 4u

/* ---- intrusive lists ------------------------------------------------------- */

static void blitz__jl_append(blitz__pool_job **head, blitz__pool_job **tail, blitz__pool_job *j) {
    j->next = NULL;
    j->prev = *tail;
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
    j->linked = 1;
}

static void blitz__jl_unlink(blitz__pool_job **head, blitz__pool_job **tail, blitz__pool_job *j) {
    if (j->prev)
        j->prev->next = j->next;
    else
        *head = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        *tail = j->prev;
    j->next = j->prev = NULL;
    j->linked = 0;
}

static blitz__pool_job *blitz__jl_pop(blitz__pool_job **head, blitz__pool_job **tail) {
    blitz__pool_job *j = *head;
    if (j)
        blitz__jl_unlink(head, tail, j);
    return j;
}

static void blitz__idle_push(blitz__pool *p, blitz__pool_thread *th) {
    th->prev = NULL;
    th->next = p->idle_head;
    if (p->idle_head)
        p->idle_head->prev = th;
    p->idle_head = th;
    p->idle++;
}

static void blitz__idle_remove(blitz__pool *p, blitz__pool_thread *th) {
    if (th->prev)
        th->prev->next = th->next;
    else
        p->idle_head = th->next;
    if (th->next)
        th->next->prev = th->prev;
    th->next = th->prev = NULL;
    p->idle--;
}

/* ---- set-up ------------------------------------------------------------------ */

BLITZ_PRIVATE int blitz__pool_init(blitz__pool *p, const blitz_config *c) {
    memset(p, 0, sizeof *p);
    p->max_threads = c->max_blocking_threads ? c->max_blocking_threads : BLITZ__POOL_DEFAULT_MAX;
    p->keep_alive_ns =
        c->blocking_keep_alive_ns ? c->blocking_keep_alive_ns : BLITZ__POOL_DEFAULT_KEEPALIVE;
    p->capacity = c->blocking_queue_capacity;
    return blitz__mutex_init(&p->lock);
}

BLITZ_PRIVATE void blitz__pool_destroy(blitz__pool *p) {
    blitz__mutex_destroy(&p->lock);
}

/* With a paused clock, a job in flight counts as a thread polling a task:
 * the clock must not jump to the next timer while a job may still wake its
 * task (Tokio inhibits auto-advance during spawn_blocking, too). */
static void blitz__pool_busy(blitz_runtime *rt, int delta) {
    if (!rt->time->paused)
        return;
    if (delta > 0)
        blitz__u32_fetch_add(&rt->paused_polling, 1, BLITZ__SEQ_CST);
    else
        blitz__u32_fetch_sub(&rt->paused_polling, 1, BLITZ__SEQ_CST);
}

/* Takes the first room waiter off its list (caller holds the lock) and
 * returns its waker for the caller to wake after unlocking; a noop waker
 * when nobody waits. */
static blitz_waker blitz__pool_take_room_waiter(blitz__pool *p) {
    blitz__pool_job *j = blitz__jl_pop(&p->space_head, &p->space_tail);
    if (!j)
        return blitz_waker_noop();
    blitz__pool_rec *rec = (blitz__pool_rec *)j;
    blitz_waker w = rec->waker;
    /* Release: the waiter's next poll sees RETRY and tries again. From
     * here the record is the task's; only the copied waker is used. */
    blitz__u32_field_store(&rec->state, BLITZ__OP_RETRY, BLITZ__RELEASE);
    return w;
}

static int blitz__waker_is_noop(const blitz_waker *w) {
    blitz_waker noop = blitz_waker_noop();
    return w->vtable == noop.vtable;
}

/* ---- threads ------------------------------------------------------------------- */

/* A write to a pipe whose reader is gone raises SIGPIPE at the writing
 * thread; pool threads block it, and whoever gets EPIPE takes it back here,
 * so a broken pipe is an error code rather than the end of the process. */
BLITZ_PRIVATE void blitz__consume_sigpipe(void) {
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
        blitz__sigpipe_take(&pipe_set);
}

static void *blitz__pool_thread_main(void *arg) {
    blitz_runtime *rt = (blitz_runtime *)arg;
    blitz__pool *p = rt->pool;
    blitz__pool_thread self;
    memset(&self, 0, sizeof self);
    blitz__parker_init(&self.parker);
    /* Jobs run as the runtime's code: spawns from them reach it, and a
     * blitz_join_blocking inside one gives up when the runtime shuts down
     * (which waits for this thread). */
    blitz__context ctx;
    blitz__context_init(&ctx, rt);
    blitz__context_set(&ctx);
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);

    blitz__mutex_lock(&p->lock);
    p->inbound--;
    for (;;) {
        blitz__pool_job *j;
        while ((j = blitz__jl_pop(&p->head, &p->tail)) != NULL) {
            p->queued--;
            p->jobs_run++;
            blitz_waker room = blitz__pool_take_room_waiter(p);
            blitz__mutex_unlock(&p->lock);
            blitz_waker_wake(room);
            j->run(j, 0);
            blitz__mutex_lock(&p->lock);
        }
        if (p->closed)
            break;
        self.notified = 0;
        blitz__idle_push(p, &self);
        uint64_t deadline = blitz__now_ns() + p->keep_alive_ns;
        int leave = 0;
        for (;;) {
            blitz__mutex_unlock(&p->lock);
            uint64_t now = blitz__now_ns();
            blitz__parker_park(&self.parker, deadline > now ? deadline - now : 1);
            blitz__mutex_lock(&p->lock);
            if (self.notified) {
                /* The notifier took us off the idle list. */
                p->inbound--;
                break;
            }
            if (p->closed || blitz__now_ns() >= deadline) {
                blitz__idle_remove(p, &self);
                leave = 1;
                break;
            }
        }
        if (leave)
            break;
    }
    p->threads--;
    int had_prev = p->have_last_exiting;
    pthread_t prev = p->last_exiting;
    p->last_exiting = pthread_self();
    p->have_last_exiting = 1;
    if (p->threads == 0 && p->shutdown_waiter)
        blitz__parker_unpark(p->shutdown_waiter);
    blitz__mutex_unlock(&p->lock);
    if (had_prev)
        pthread_join(prev, NULL);
    blitz__context_set(NULL);
    blitz__parker_destroy(&self.parker);
    return NULL;
}

/* Queues job `j` (see the submit protocol). When the queue is full and
 * `room` is given, `room` (whose waker the caller has cloned) joins the
 * room waiters and BLITZ_EFULL is returned; the caller then waits for its
 * waker. */
static int blitz__pool_submit(blitz_runtime *rt, blitz__pool_job *j, blitz__pool_rec *room) {
    blitz__pool *p = rt->pool;
    blitz__mutex_lock(&p->lock);
    if (room && !room->tracked) {
        room->tracked = 1;
        room->all_prev = NULL;
        room->all_next = p->records;
        if (p->records)
            p->records->all_prev = room;
        p->records = room;
    }
    if (p->closed) {
        blitz__mutex_unlock(&p->lock);
        return BLITZ_ESHUTDOWN;
    }
    if (p->idle_head) {
        blitz__pool_thread *th = p->idle_head;
        blitz__idle_remove(p, th);
        th->notified = 1;
        p->inbound++;
        blitz__parker_unpark(&th->parker);
    } else {
        int have_thread = 0;
        if (p->threads < p->max_threads) {
            pthread_t tid;
            int rc = blitz__thread_start(&tid, blitz__pool_thread_main, rt);
            if (rc == 0) {
                p->threads++;
                p->inbound++;
                p->threads_started++;
                have_thread = 1;
            } else if (p->threads == 0) {
                /* Nobody would ever run the job. */
                blitz__mutex_unlock(&p->lock);
                return rc;
            }
        }
        uint32_t backlog = p->queued > p->inbound ? p->queued - p->inbound : 0;
        if (!have_thread && p->capacity && backlog >= p->capacity) {
            p->rejected++;
            if (room) {
                blitz__jl_append(&p->space_head, &p->space_tail, &room->job);
                blitz__u32_field_store(&room->state, BLITZ__OP_ROOM, BLITZ__RELAXED);
            }
            blitz__mutex_unlock(&p->lock);
            return BLITZ_EFULL;
        }
    }
    blitz__jl_append(&p->head, &p->tail, j);
    p->queued++;
    blitz__pool_busy(rt, 1);
    blitz__mutex_unlock(&p->lock);
    return BLITZ_OK;
}

/* Runtime shutdown, after the workers stopped and before the sweep: no job
 * is left queued or running when it returns, and every thread is joined. */
BLITZ_PRIVATE void blitz__pool_shutdown(blitz_runtime *rt) {
    blitz__pool *p = rt->pool;
    blitz__parker waiter;
    blitz__parker_init(&waiter);
    blitz__mutex_lock(&p->lock);
    p->closed = 1;
    blitz__pool_job *jobs = p->head;
    for (blitz__pool_job *j = jobs; j; j = j->next)
        j->linked = 0;
    p->head = p->tail = NULL;
    p->queued = 0;
    for (blitz__pool_thread *th = p->idle_head; th; th = th->next)
        blitz__parker_unpark(&th->parker);
    p->shutdown_waiter = &waiter;
    blitz__mutex_unlock(&p->lock);

    while (jobs) {
        blitz__pool_job *next = jobs->next; /* the job may be gone after run */
        jobs->run(jobs, 1);
        jobs = next;
    }
    for (;;) {
        blitz__mutex_lock(&p->lock);
        blitz_waker w = blitz__pool_take_room_waiter(p);
        blitz__mutex_unlock(&p->lock);
        if (blitz__waker_is_noop(&w))
            break;
        blitz_waker_wake(w);
    }
    blitz__mutex_lock(&p->lock);
    while (p->threads > 0) {
        blitz__mutex_unlock(&p->lock);
        blitz__parker_park(&waiter, 0);
        blitz__mutex_lock(&p->lock);
    }
    p->shutdown_waiter = NULL;
    int had = p->have_last_exiting;
    pthread_t last = p->last_exiting;
    p->have_last_exiting = 0;
    blitz__mutex_unlock(&p->lock);
    if (had)
        pthread_join(last, NULL);
    blitz__parker_destroy(&waiter);
}

BLITZ_API int blitz_runtime_pool_stats(blitz_runtime *rt, blitz_pool_stats *out) {
    if (!rt || !out)
        return BLITZ_EINVAL;
    blitz__pool *p = rt->pool;
    memset(out, 0, sizeof *out);
    blitz__mutex_lock(&p->lock);
    out->threads = p->threads;
    out->idle = p->idle;
    out->queued = p->queued;
    out->max_threads = p->max_threads;
    out->threads_started = p->threads_started;
    out->jobs_run = p->jobs_run;
    out->rejected = p->rejected;
    blitz__mutex_unlock(&p->lock);
    return BLITZ_OK;
}

BLITZ_API void blitz_free(void *p) {
    blitz__free(p);
}

/* ---- blocking tasks ---------------------------------------------------------------
 * A blocking job is a task (so its handle is a task handle) that is queued
 * on the pool instead of the scheduler and polled once, by a pool thread.
 * Its job record sits in a trailer at the end of the block, so the user's
 * state comes first and blitz_task_state finds it as for any task. */

typedef struct blitz__blocking_trailer {
    blitz__pool_job job; /* first: the pool hands back this pointer */
    blitz__task *task;
    blitz_fn fn;
} blitz__blocking_trailer;

_Static_assert(sizeof(blitz__blocking_trailer) % 8 == 0, "trailer keeps the hooks aligned");

static blitz__blocking_trailer *blitz__blocking_of(blitz__task *t) {
    return (blitz__blocking_trailer *)blitz__task_trailer(t, sizeof(blitz__blocking_trailer));
}

static blitz_poll blitz__blocking_poll(blitz_cx *cx, void *state) {
    blitz__blocking_of(cx->task)->fn(state);
    return BLITZ_READY;
}

static void blitz__blocking_run(blitz__pool_job *j, int cancelled) {
    blitz__task *t = ((blitz__blocking_trailer *)j)->task;
    blitz_runtime *rt = blitz__task_runtime(t); /* the block may be freed below */
    if (!cancelled)
        blitz__task_run(t, blitz__context_get());
    else if (blitz__state_claim_for_shutdown(t))
        blitz__task_finish(t, 1);
    blitz__pool_busy(rt, -1);
}

/* blitz_task_cancel of a blocking task that is still queued: complete it
 * as cancelled now rather than when a thread reaches it. */
BLITZ_PRIVATE void blitz__pool_cancel_task(blitz__task *t) {
    blitz_runtime *rt = blitz__task_runtime(t);
    blitz__pool *p = rt->pool;
    blitz__pool_job *j = &blitz__blocking_of(t)->job;
    blitz__mutex_lock(&p->lock);
    int queued = j->linked;
    blitz_waker room = blitz_waker_noop();
    if (queued) {
        blitz__jl_unlink(&p->head, &p->tail, j);
        p->queued--;
        room = blitz__pool_take_room_waiter(p);
    }
    blitz__mutex_unlock(&p->lock);
    if (!queued)
        return;
    blitz_waker_wake(room);
    /* CANCELLED is set and a blocking task has no shield, so this is the
     * cancel transition; either way the task is ours to complete. */
    (void)blitz__state_to_running(t);
    blitz__task_finish(t, 1);
    blitz__pool_busy(rt, -1);
}

typedef struct {
    blitz_fn fn;
    void *arg;
} blitz__blocking_fn_state;

static void blitz__blocking_call(void *state) {
    blitz__blocking_fn_state *s = (blitz__blocking_fn_state *)state;
    s->fn(s->arg);
}

static int blitz__spawn_blocking(blitz_runtime *rt, const blitz_blocking_opts *bo,
                                 blitz_task **handle, blitz__pool_rec *room) {
    if (handle)
        *handle = NULL;
    if (!rt || !bo || !bo->fn)
        return BLITZ_EINVAL;
    blitz_spawn_opts o = blitz__plain_opts(blitz__blocking_poll, bo->state, bo->size);
    o.drop = bo->drop;
    blitz__task *t;
    int entered = blitz__spawn_enter(rt);
    int rc = blitz__task_create(rt, &o, handle != NULL, sizeof(blitz__blocking_trailer),
                                BLITZ__TASK_BLOCKING, &t);
    if (rc == BLITZ_OK) {
        blitz__blocking_trailer *b = blitz__blocking_of(t);
        memset(&b->job, 0, sizeof b->job);
        b->job.run = blitz__blocking_run;
        b->task = t;
        b->fn = bo->fn;
        rc = blitz__pool_submit(rt, &b->job, room);
        if (rc != BLITZ_OK)
            blitz__task_discard(t);
        else if (handle)
            *handle = blitz__handle_out(t);
    }
    blitz__spawn_leave(rt, entered);
    return rc;
}

BLITZ_API int blitz_spawn_blocking_ex(blitz_runtime *rt, const blitz_blocking_opts *opts,
                                      blitz_task **handle) {
    return blitz__spawn_blocking(rt, opts, handle, NULL);
}

BLITZ_API int blitz_spawn_blocking(blitz_runtime *rt, blitz_fn fn, void *arg, blitz_task **handle) {
    if (handle)
        *handle = NULL;
    if (!fn)
        return BLITZ_EINVAL;
    blitz__blocking_fn_state s;
    s.fn = fn;
    s.arg = arg;
    blitz_blocking_opts o;
    memset(&o, 0, sizeof o);
    o.fn = blitz__blocking_call;
    o.state = &s;
    o.size = sizeof s;
    return blitz__spawn_blocking(rt, &o, handle, NULL);
}

/* ---- pool ops ---------------------------------------------------------------------- */

BLITZ_PRIVATE void blitz__pool_rec_free(blitz__pool_rec *rec) {
    if (rec->tracked) {
        blitz__pool *p = rec->rt->pool;
        blitz__mutex_lock(&p->lock);
        if (rec->all_prev)
            rec->all_prev->all_next = rec->all_next;
        else
            p->records = rec->all_next;
        if (rec->all_next)
            rec->all_next->all_prev = rec->all_prev;
        blitz__mutex_unlock(&p->lock);
    }
    if (rec->discard)
        rec->discard(rec);
    blitz__free(rec);
}

/* blitz_runtime_free, after the pool stopped and the tasks' drop
 * functions ran: records still alive belong to tasks that were cancelled
 * without cancelling their ops (no cancel hook); nobody will take their
 * results, so release those (close files, free data). */
BLITZ_PRIVATE void blitz__pool_free_records(blitz_runtime *rt) {
    blitz__pool_rec *rec = rt->pool->records;
    rt->pool->records = NULL;
    while (rec) {
        blitz__pool_rec *next = rec->all_next;
        rec->tracked = 0;
        if (rec->discard)
            rec->discard(rec);
        blitz__free(rec);
        rec = next;
    }
}

/* The thread is done: hand the record over, or, when the task gave up on
 * it, release what it holds and free it. The task never sees an
 * abandoned record again, so nothing of the task is touched here but its
 * waker, whose reference keeps the block alive until the wake. */
static void blitz__pool_rec_run(blitz__pool_job *j, int cancelled) {
    blitz__pool_rec *rec = (blitz__pool_rec *)j;
    blitz_runtime *rt = rec->rt;
    rec->exec(rec, cancelled);
    blitz_waker w = rec->waker;
    uint32_t expected = BLITZ__OP_INFLIGHT;
    /* Release publishes the results to the task's acquire load of DONE;
     * acquire on failure pairs with the canceller's ABANDONED. */
    if (blitz__u32_field_cas(&rec->state, &expected, BLITZ__OP_DONE, BLITZ__ACQ_REL)) {
        blitz_waker_wake(w);
    } else {
        blitz__pool_rec_free(rec);
        blitz_waker_drop(w);
    }
    blitz__pool_busy(rt, -1);
}

/* A record for an op: `size` bytes (at least a blitz__pool_rec, which it
 * starts with), zero-filled. NULL when out of memory. */
BLITZ_PRIVATE void *blitz__pool_rec_new(size_t size, void (*exec)(blitz__pool_rec *, int),
                                        void (*discard)(blitz__pool_rec *)) {
    blitz__pool_rec *rec = (blitz__pool_rec *)blitz__calloc(size);
    if (rec) {
        rec->job.run = blitz__pool_rec_run;
        rec->exec = exec;
        rec->discard = discard;
    }
    return rec;
}

static int blitz__pool_rec_submit(blitz_cx *cx, blitz__pool_rec *rec) {
    blitz_waker mine = blitz_cx_waker(cx);
    rec->rt = blitz_cx_runtime(cx);
    rec->waker = blitz_waker_clone(&mine);
    /* Relaxed: the pool's lock publishes the record to the thread. */
    blitz__u32_field_store(&rec->state, BLITZ__OP_INFLIGHT, BLITZ__RELAXED);
    int rc = blitz__pool_submit(rec->rt, &rec->job, rec);
    if (rc == BLITZ_OK || rc == BLITZ_EFULL)
        return BLITZ_OK; /* queued, or waiting for room with the clone */
    blitz_waker_drop(rec->waker);
    return rc;
}

/* Starts an op with its filled-in record. PENDING once queued (or waiting
 * for room); READY with *err when it could not be, the record freed. */
BLITZ_PRIVATE blitz_poll blitz__pool_op_start(blitz_cx *cx, blitz__pool_op *op,
                                              blitz__pool_rec *rec, int *err) {
    int rc = blitz__pool_rec_submit(cx, rec);
    if (rc == BLITZ_OK) {
        op->rec = rec;
        return BLITZ_PENDING;
    }
    blitz__pool_rec_free(rec);
    *err = rc;
    return BLITZ_READY;
}

/* Nonzero when the op carries no operation (its poll starts a new one). */
BLITZ_PRIVATE int blitz__pool_op_idle(const blitz__pool_op *op) {
    return op->rec == NULL;
}

/* A started op: READY with the finished record in *done (the caller takes
 * its results and frees it with blitz__pool_rec_free); the op is idle
 * again. A record woken for queue room is queued again here; if that
 * fails its exec reports the cancellation. */
BLITZ_PRIVATE blitz_poll blitz__pool_op_poll(blitz_cx *cx, blitz__pool_op *op,
                                             blitz__pool_rec **done) {
    blitz__pool_rec *rec = op->rec;
    /* Acquire pairs with the thread's release of DONE (or the room
     * wake's of RETRY). */
    uint32_t s = blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE);
    if (s == BLITZ__OP_RETRY) {
        if (blitz__pool_rec_submit(cx, rec) == BLITZ_OK)
            return BLITZ_PENDING;
        rec->exec(rec, 1);
        s = BLITZ__OP_DONE;
    }
    if (s != BLITZ__OP_DONE)
        return BLITZ_PENDING;
    op->rec = NULL;
    *done = rec;
    return BLITZ_READY;
}

/* Takes a record off the room waiters or out of the queue. Returns 1 when
 * it was in one of them (its waker then dropped). */
static int blitz__pool_rec_unlink(blitz__pool_rec *rec, uint32_t s) {
    blitz__pool *p = rec->rt->pool;
    blitz_waker room = blitz_waker_noop();
    blitz__mutex_lock(&p->lock);
    int was = rec->job.linked;
    if (was) {
        if (s == BLITZ__OP_ROOM) {
            blitz__jl_unlink(&p->space_head, &p->space_tail, &rec->job);
        } else {
            blitz__jl_unlink(&p->head, &p->tail, &rec->job);
            p->queued--;
            room = blitz__pool_take_room_waiter(p);
        }
    }
    blitz__mutex_unlock(&p->lock);
    if (was) {
        blitz_waker_drop(rec->waker);
        blitz_waker_wake(room);
        if (s == BLITZ__OP_INFLIGHT)
            blitz__pool_busy(rec->rt, -1);
    }
    return was;
}

/* The op's cancel. The op is idle afterwards in every case: a record that
 * is queued, waits for room, is finished or was woken for room is freed
 * here (with what it holds); a running one is marked ABANDONED and its
 * thread frees it when done. */
BLITZ_PRIVATE void blitz__pool_op_cancel(blitz__pool_op *op) {
    blitz__pool_rec *rec = op->rec;
    if (!rec)
        return;
    op->rec = NULL;
    uint32_t s = blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE);
    if (s == BLITZ__OP_ROOM || s == BLITZ__OP_INFLIGHT) {
        if (blitz__pool_rec_unlink(rec, s)) {
            blitz__pool_rec_free(rec);
            return;
        }
        /* Taken by a thread, or woken for room (RETRY, stored under the
         * lock, so this load sees it). */
        s = blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE);
    }
    for (;;) {
        if (s == BLITZ__OP_INFLIGHT) {
            /* Acq_rel: the thread's failed CAS sees ABANDONED, or this CAS
             * fails because the thread already stored DONE. */
            if (blitz__u32_field_cas(&rec->state, &s, BLITZ__OP_INFLIGHT | BLITZ__OP_ABANDONED,
                                     BLITZ__ACQ_REL))
                return;
            continue;
        }
        /* DONE or RETRY: the record is the task's alone. */
        blitz__pool_rec_free(rec);
        return;
    }
}

/* Nonzero when the thread working for `rec` should stop early: its task
 * gave up on it, or the runtime is shutting down. */
BLITZ_PRIVATE int blitz__pool_rec_give_up(blitz__pool_rec *rec) {
    return (blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE) & BLITZ__OP_ABANDONED) ||
           blitz__u32_load(&rec->rt->shutdown, BLITZ__ACQUIRE);
}

/* ---- the awaitable spawn ------------------------------------------------------------ */

BLITZ_API blitz_poll blitz_spawn_blocking_await(blitz_cx *cx, blitz_blocking_spawn *op,
                                                const blitz_blocking_opts *opts) {
    if (!op)
        return BLITZ_READY;
    if (!cx) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__pool_rec *rec = op->blitz__op.rec;
    if (rec) {
        /* Acquire pairs with the release of the room wake. */
        if (blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE) == BLITZ__OP_ROOM)
            return blitz__pending(cx, blitz_spawn_blocking_cancel, op);
        op->blitz__op.rec = NULL; /* woken: the wake consumed its waker */
        blitz__pool_rec_free(rec);
    }
    /* A room waiter's record: only its links, state and waker are used. */
    rec = (blitz__pool_rec *)blitz__pool_rec_new(sizeof *rec, NULL, NULL);
    if (!rec) {
        op->task = NULL;
        op->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    rec->rt = blitz_cx_runtime(cx);
    rec->waker = blitz_waker_clone(&mine);
    int rc = blitz__spawn_blocking(rec->rt, opts, &op->task, rec);
    if (rc == BLITZ_EFULL && opts && opts->fn) {
        op->blitz__op.rec = rec; /* a room waiter now: the clone is the pool's */
        return blitz__pending(cx, blitz_spawn_blocking_cancel, op);
    }
    blitz_waker_drop(rec->waker);
    blitz__pool_rec_free(rec);
    op->result = rc;
    return BLITZ_READY;
}

BLITZ_API void blitz_spawn_blocking_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_blocking_spawn *op = (blitz_blocking_spawn *)p;
    if (!op || !op->blitz__op.rec)
        return;
    blitz__pool_rec *rec = op->blitz__op.rec;
    op->blitz__op.rec = NULL;
    if (blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE) == BLITZ__OP_ROOM)
        (void)blitz__pool_rec_unlink(rec, BLITZ__OP_ROOM);
    blitz__pool_rec_free(rec);
}
/* ====[ END src/sched/blocking_pool.c ]==================================== */
/* ########################################################################## */
/* LAYER op: ops as values, combinators, task groups                         */
/* ########################################################################## */
/* ====[ BEGIN src/op/op.c ]================================================ */
/* >>op/op */
/* Ops as values (blitz_op) and the blocking form of any op: blitz_op_run_blocking
 * polls it on the calling thread and sleeps on a per-thread parker between
 * polls. */
/* src/time/time.h already included */
/* ====[ BEGIN src/core/waitq.h ]=========================================== */
/* >>core/waitq */
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
 *    dropped; a DONE one gives back what it was handed (permits to the
 *    next waiter) or, when it was only woken (a channel op), passes the
 *    wake on, so a cancelled op never holds a result nobody reads. */
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

/* Withdraws a queued `w` (its op is being cancelled): unlinks it and
 * returns its waker, to be dropped after the lock. Under the lock. */
static inline blitz_waker blitz__waitq_withdraw(blitz__waitq *q, blitz__waiter *w) {
    blitz__waitq_unlink(q, w);
    blitz_waker waker = w->blitz__waker;
    w->blitz__waker = blitz_waker_noop();
    return waker;
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
/* ====[ END src/core/waitq.h ]============================================= */
/* ----[ RESUME src/op/op.c ] */

BLITZ_API blitz_op blitz_op_make(blitz_poll_fn poll, blitz_cancel_fn cancel, void *arg) {
    blitz_op op;
    op.poll = poll;
    op.cancel = cancel;
    op.arg = arg;
    return op;
}

BLITZ__OP_ADAPTER(blitz__join_op_poll, blitz_task, t, blitz_join(cx, t))
BLITZ_API blitz_op blitz_op_join(blitz_task *t) {
    return blitz_op_make(blitz__join_op_poll, blitz_join_cancel, t);
}

BLITZ__OP_ADAPTER(blitz__sleep_op_poll, blitz_timer, t, blitz_sleep_until(cx, t, t->deadline))
BLITZ_API blitz_op blitz_op_sleep_until(blitz_timer *t, uint64_t deadline_ns) {
    if (t)
        t->deadline = deadline_ns;
    return blitz_op_make(blitz__sleep_op_poll, blitz_timer_cancel, t);
}

BLITZ__OP_ADAPTER(blitz__interval_op_poll, blitz_interval, iv, blitz_interval_tick(cx, iv))
static void blitz__interval_op_cancel(blitz_cx *cx, void *iv) {
    if (iv)
        blitz_timer_cancel(cx, &((blitz_interval *)iv)->timer);
}
BLITZ_API blitz_op blitz_op_interval_tick(blitz_interval *iv) {
    return blitz_op_make(blitz__interval_op_poll, blitz__interval_op_cancel, iv);
}

BLITZ__OP_ADAPTER(blitz__spawn_blocking_op_poll, blitz_blocking_spawn, sp,
                  sp ? blitz_spawn_blocking_await(cx, sp, sp->blitz__opts) : BLITZ_READY)
BLITZ_API blitz_op blitz_op_spawn_blocking_await(blitz_blocking_spawn *op,
                                                 const blitz_blocking_opts *opts) {
    if (op)
        op->blitz__opts = opts;
    return blitz_op_make(blitz__spawn_blocking_op_poll, blitz_spawn_blocking_cancel, op);
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

/* With a runtime, the op runs inside a task of that runtime: a
 * current-thread runtime is then driven by this thread while it waits, and
 * a shutdown cancels the wait (and withdraws the op) instead of leaving the
 * thread asleep on a timer that will never fire. A withdrawn op may still
 * be in the kernel (an io_uring receive): it holds the task until its
 * completion, as it does any task's memory, so the wait returns only once
 * the task is freed, and the op is the caller's again. */
typedef struct blitz__op_task {
    blitz_op op;
    blitz__atomic_u32 *freed; /* on the waiting thread's stack */
    blitz__thread_parker *tp; /* the waiting thread's; a reference of its own */
} blitz__op_task;

static blitz_poll blitz__op_task_poll(blitz_cx *cx, void *state) {
    blitz__op_task *s = (blitz__op_task *)state;
    return s->op.poll(cx, s->op.arg);
}
static void blitz__op_task_cancel(void *state) {
    blitz__op_task *s = (blitz__op_task *)state;
    if (s->op.cancel)
        s->op.cancel(NULL, s->op.arg);
}
/* The task's last reference is gone: nothing uses the op any more. */
static void blitz__op_task_drop(void *state) {
    blitz__op_task *s = (blitz__op_task *)state;
    blitz__thread_parker *tp = s->tp;
    /* Release: the waiter that sees the flag sees every use of the op
     * before it. After the store the waiter may return (its stack, the
     * flag, is gone): only the parker, kept by our reference, is used. */
    blitz__u32_store(s->freed, 1, BLITZ__RELEASE);
    blitz__parker_unpark(&tp->parker);
    blitz__thread_parker_unref(tp);
}

static int blitz__op_wait_in_task(blitz_runtime *rt, blitz_op op) {
    blitz__thread_parker *tp = blitz__thread_parker_get();
    if (!tp)
        return BLITZ_ENOMEM;
    blitz__atomic_u32 freed;
    blitz__u32_store(&freed, 0, BLITZ__RELAXED);
    blitz__u32_fetch_add(&tp->refs, 1, BLITZ__RELAXED);
    blitz__op_task st = {op, &freed, tp};
    blitz_spawn_opts opts = blitz__plain_opts(blitz__op_task_poll, &st, sizeof st);
    opts.cancel = blitz__op_task_cancel;
    opts.drop = blitz__op_task_drop;
    blitz_task *t = NULL;
    int rc = blitz_spawn_ex(rt, &opts, &t);
    if (rc != BLITZ_OK) {
        blitz__thread_parker_unref(tp); /* a task never queued runs no drop */
        return rc;
    }
    rc = blitz_join_blocking(t);
    blitz_task_release(&t);
    while (!blitz__u32_load(&freed, BLITZ__ACQUIRE))
        blitz__parker_park(&tp->parker, 0);
    return rc;
}

/* Whether the calling thread may block: not a worker or a current-thread
 * driver, and not polling a task, unless that task is a blocking-pool job
 * (a pool thread runs nothing else, so blocking it holds up nobody). */
static int blitz__thread_may_block(const blitz__context *c) {
    if (!c)
        return 1;
    if (c->worker || c->ct_driver)
        return 0;
    return !c->current ||
           (blitz__u64_load(&c->current->state, BLITZ__RELAXED) & BLITZ__TASK_BLOCKING) != 0;
}

BLITZ_API int blitz_op_run_blocking(blitz_runtime *rt, blitz_op op) {
    if (!op.poll)
        return BLITZ_EINVAL;
    if (!blitz__thread_may_block(blitz__context_get()))
        return BLITZ_EDEADLK;
    if (rt)
        return blitz__op_wait_in_task(rt, op);
    blitz__thread_parker *tp = blitz__thread_parker_get();
    if (!tp)
        return BLITZ_ENOMEM;
    blitz__context ctx;
    blitz__context_init(&ctx, NULL);
    blitz_cx cx;
    blitz_waker borrowed = {tp, &blitz__thread_waker_vtable};
    blitz__cx_init_waker(&cx, &ctx, borrowed);
    while (op.poll(&cx, op.arg) == BLITZ_PENDING)
        blitz__parker_park(&tp->parker, 0);
    return BLITZ_OK;
}
/* ====[ END src/op/op.c ]================================================== */
/* ====[ BEGIN src/op/combinators.c ]======================================= */
/* >>op/combinators */
/* Combinators over ops: join-all, race, select. */
/* src/time/time.h already included */

BLITZ_API void blitz_combo_reset(blitz_combo *c) {
    if (!c)
        return;
    /* The starting position survives, so a select loop that resets its
     * combo each round still rotates through its ops. */
    uint32_t start = c->blitz__start, n = c->blitz__n;
    const blitz_op *ops = c->blitz__ops;
    memset(c, 0, sizeof *c);
    c->blitz__start = start;
    /* What blitz_op_race and the others were given. */
    c->blitz__ops = ops;
    c->blitz__n = n;
}

static uint64_t blitz__combo_all(size_t n) {
    return n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1);
}

/* Checks the arguments; on misuse the combinator is READY with an error. */
static int blitz__combo_valid(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    size_t i;
    if (!c)
        return 0;
    c->error = BLITZ_EINVAL;
    c->winner = -1;
    if (!cx || !ops || n == 0 || n > BLITZ_COMBO_MAX)
        return 0;
    for (i = 0; i < n; i++)
        if (!ops[i].poll)
            return 0;
    c->error = 0;
    c->blitz__ops = ops;
    c->blitz__n = (uint32_t)n;
    return 1;
}

/* The task's cancel of a combinator: every op still registered. */
static void blitz__combo_withdraw(blitz_cx *cx, void *combo) {
    blitz_combo *c = (blitz_combo *)combo;
    if (c->blitz__ops)
        blitz_combo_cancel(cx, c, c->blitz__ops, c->blitz__n);
}

/* After polling its ops, the combinator is what the task waits in, in
 * place of the op that polled last; once READY, what the task recorded
 * before it (select: itself while ops stay registered). */
static blitz_poll blitz__combo_result(blitz_cx *cx, blitz_combo *c, blitz_poll r, int keep,
                                      blitz_cancel_fn prev_cancel, void *prev_op) {
    if (r == BLITZ_PENDING || keep)
        blitz_cx_pending(cx, blitz__combo_withdraw, c);
    else
        blitz_cx_pending(cx, prev_cancel, prev_op);
    return r;
}

/* Polls the unfinished ops once, from the rotating start. With `first`,
 * stops at the first op that finishes and returns its index; otherwise
 * polls them all. Returns -1 when none finished (or `first` is 0). */
static int blitz__combo_poll(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n,
                             int first) {
    size_t k, start = c->blitz__start % n;
    c->blitz__start = (uint32_t)((start + 1) % n);
    for (k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        uint64_t bit = (uint64_t)1 << i;
        if (c->blitz__done & bit)
            continue;
        if (ops[i].poll(cx, ops[i].arg) == BLITZ_READY) {
            c->blitz__done |= bit;
            if (first)
                return (int)i;
        }
    }
    return -1;
}

BLITZ_API blitz_poll blitz_join_all(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    if (!blitz__combo_valid(cx, c, ops, n))
        return BLITZ_READY;
    blitz_cancel_fn prev_cancel;
    void *prev_op;
    blitz__cx_pending_get(cx, &prev_cancel, &prev_op);
    blitz__combo_poll(cx, c, ops, n, 0);
    blitz_poll r = c->blitz__done == blitz__combo_all(n) ? BLITZ_READY : BLITZ_PENDING;
    return blitz__combo_result(cx, c, r, 0, prev_cancel, prev_op);
}

BLITZ_API void blitz_combo_cancel(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    size_t i;
    if (!c || !ops || n > BLITZ_COMBO_MAX)
        return;
    for (i = 0; i < n; i++) {
        uint64_t bit = (uint64_t)1 << i;
        if (c->blitz__done & bit)
            continue;
        if (ops[i].cancel)
            ops[i].cancel(cx, ops[i].arg);
        c->blitz__done |= bit;
    }
}

/* select and race: the first op that finishes wins. */
static blitz_poll blitz__combo_first(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n,
                                     int race) {
    if (!blitz__combo_valid(cx, c, ops, n))
        return BLITZ_READY;
    if (c->blitz__done == blitz__combo_all(n))
        return BLITZ_READY; /* nothing left: winner -1 */
    blitz_cancel_fn prev_cancel;
    void *prev_op;
    blitz__cx_pending_get(cx, &prev_cancel, &prev_op);
    int won = blitz__combo_poll(cx, c, ops, n, 1);
    if (won < 0)
        return blitz__combo_result(cx, c, BLITZ_PENDING, 0, prev_cancel, prev_op);
    c->winner = won;
    if (race)
        blitz_combo_cancel(cx, c, ops, n);
    int rest = !race && c->blitz__done != blitz__combo_all(n);
    return blitz__combo_result(cx, c, BLITZ_READY, rest, prev_cancel, prev_op);
}

BLITZ_API blitz_poll blitz_select(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_first(cx, c, ops, n, 0);
}

BLITZ_API blitz_poll blitz_race(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_first(cx, c, ops, n, 1);
}

/* ---- the combinators as ops ---- */

static blitz_op blitz__combo_op(blitz_poll_fn poll, blitz_combo *c, const blitz_op *ops, size_t n) {
    if (c) {
        c->blitz__ops = ops;
        /* Too many stays too many (the poll reports BLITZ_EINVAL). */
        c->blitz__n = n > BLITZ_COMBO_MAX ? BLITZ_COMBO_MAX + 1 : (uint32_t)n;
    }
    return blitz_op_make(poll, blitz__combo_withdraw, c);
}
static blitz_poll blitz__join_all_op_poll(blitz_cx *cx, void *c) {
    blitz_combo *combo = (blitz_combo *)c;
    return blitz_join_all(cx, combo, combo ? combo->blitz__ops : NULL, combo ? combo->blitz__n : 0);
}
static blitz_poll blitz__race_op_poll(blitz_cx *cx, void *c) {
    blitz_combo *combo = (blitz_combo *)c;
    return blitz_race(cx, combo, combo ? combo->blitz__ops : NULL, combo ? combo->blitz__n : 0);
}
static blitz_poll blitz__select_op_poll(blitz_cx *cx, void *c) {
    blitz_combo *combo = (blitz_combo *)c;
    return blitz_select(cx, combo, combo ? combo->blitz__ops : NULL, combo ? combo->blitz__n : 0);
}
BLITZ_API blitz_op blitz_op_join_all(blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_op(blitz__join_all_op_poll, c, ops, n);
}
BLITZ_API blitz_op blitz_op_race(blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_op(blitz__race_op_poll, c, ops, n);
}
BLITZ_API blitz_op blitz_op_select(blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_op(blitz__select_op_poll, c, ops, n);
}
/* ====[ END src/op/combinators.c ]========================================= */
/* ====[ BEGIN src/op/task_group.c ]======================================== */
/* >>op/task_group */
/* Task groups: members report their completion through their join waker,
 * which moves them to the group's list of finished members.
 *
 * Every member is in exactly one of three lists, under the group's lock:
 * `running` (not yet asked to cancel), `cancelling` (blitz_task_cancel sent
 * or being sent) or `finished` (complete, handle not yet handed out). The
 * group is reference counted: its owner holds one reference and every
 * member another, so a member finishing after blitz_group_free still finds
 * the group. */
/* src/time/time.h already included */

#define BLITZ__MEMBER_RUNNING    0
#define BLITZ__MEMBER_CANCELLING 1
#define BLITZ__MEMBER_FINISHED   2

typedef struct blitz__group_member {
    blitz_group *group;
    blitz_task *task;
    struct blitz__group_member *next, *prev;
    int list;
} blitz__group_member;

typedef struct blitz__member_list {
    blitz__group_member *head, *tail;
} blitz__member_list;

struct blitz_group {
    blitz_runtime *rt;
    blitz__mutex lock;
    blitz__atomic_u32 refs;
    blitz__member_list lists[3]; /* running, cancelling, finished */
    size_t len;                  /* members not yet handed out */
    blitz_waker waiter;          /* the task awaiting blitz_group_next */
    int has_waiter;
    int closed;
    int freed;
    blitz_task **op_out; /* where blitz_op_group_next's poll puts the handle */
    BLITZ__MAGIC_MEMBER
};

#define BLITZ__GROUP_CHECK(g) \
    BLITZ__MAGIC_CHECK(g, BLITZ__MAGIC_GROUP, "task group used after blitz_group_free")

static void blitz__member_push(blitz__member_list *l, blitz__group_member *m) {
    m->next = NULL;
    m->prev = l->tail;
    if (l->tail)
        l->tail->next = m;
    else
        l->head = m;
    l->tail = m;
}

static void blitz__member_unlink(blitz__member_list *l, blitz__group_member *m) {
    if (m->prev)
        m->prev->next = m->next;
    else
        l->head = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        l->tail = m->prev;
    m->next = m->prev = NULL;
}

static void blitz__group_unref(blitz_group *g) {
    /* Acq_rel: the last reference sees every other holder's last use of
     * the group before it frees it. */
    if (blitz__u32_fetch_sub(&g->refs, 1, BLITZ__ACQ_REL) == 1) {
        blitz__mutex_destroy(&g->lock);
        blitz__free_handle(g);
    }
}

/* A member's task completed (its join waker fired, or it was already
 * complete when the group registered). */
static void blitz__member_finished(blitz__group_member *m) {
    blitz_group *g = m->group;
    blitz_waker waiter = blitz_waker_noop();
    blitz__mutex_lock(&g->lock);
    blitz__member_unlink(&g->lists[m->list], m);
    if (g->freed) {
        blitz__mutex_unlock(&g->lock);
        blitz_task_release(&m->task);
        BLITZ_FREE(m);
        blitz__group_unref(g);
        return;
    }
    m->list = BLITZ__MEMBER_FINISHED;
    blitz__member_push(&g->lists[BLITZ__MEMBER_FINISHED], m);
    if (g->has_waiter) {
        waiter = g->waiter;
        g->has_waiter = 0;
    }
    blitz__mutex_unlock(&g->lock);
    blitz_waker_wake(waiter);
}

/* The member's join waker. A join waker is woken once or dropped once, so
 * the member needs no count of its own. */
static void blitz__member_wake(const void *data) {
    blitz__member_finished((blitz__group_member *)data);
}
static void blitz__member_drop(const void *data) {
    (void)data;
}
static blitz_waker blitz__member_clone(const void *data);
static const blitz_waker_vtable blitz__member_waker_vtable = {
    blitz__member_wake, blitz__member_wake, blitz__member_clone, blitz__member_drop};
static blitz_waker blitz__member_clone(const void *data) {
    blitz_waker w = {data, &blitz__member_waker_vtable};
    return w;
}

BLITZ_API int blitz_group_new(blitz_runtime *rt, blitz_group **out) {
    if (!rt || !out)
        return BLITZ_EINVAL;
    blitz_group *g = (blitz_group *)BLITZ_MALLOC(sizeof *g);
    if (!g)
        return BLITZ_ENOMEM;
    memset(g, 0, sizeof *g);
    g->rt = rt;
    blitz__mutex_init(&g->lock);
    blitz__u32_store(&g->refs, 1, BLITZ__RELAXED);
    BLITZ__MAGIC_SET(g, BLITZ__MAGIC_GROUP);
    *out = g;
    return BLITZ_OK;
}

BLITZ_API int blitz_group_spawn_ex(blitz_group *g, const blitz_spawn_opts *opts) {
    BLITZ__GROUP_CHECK(g);
    if (!g || !opts)
        return BLITZ_EINVAL;
    blitz__group_member *m = (blitz__group_member *)BLITZ_MALLOC(sizeof *m);
    if (!m)
        return BLITZ_ENOMEM;
    blitz__mutex_lock(&g->lock);
    int closed = g->closed;
    blitz__mutex_unlock(&g->lock);
    if (closed) {
        BLITZ_FREE(m);
        return BLITZ_ECLOSED;
    }
    blitz_task *t = NULL;
    int rc = blitz_spawn_ex(g->rt, opts, &t);
    if (rc != BLITZ_OK) {
        BLITZ_FREE(m);
        return rc;
    }
    m->group = g;
    m->task = t;
    blitz__u32_fetch_add(&g->refs, 1, BLITZ__RELAXED);
    /* Listed before the join waker is registered: the task may finish at
     * once, and its completion unlinks the member. */
    blitz__mutex_lock(&g->lock);
    m->list = BLITZ__MEMBER_RUNNING;
    blitz__member_push(&g->lists[BLITZ__MEMBER_RUNNING], m);
    g->len++;
    int cancel_now = g->closed; /* closed while we spawned */
    if (cancel_now) {
        blitz__member_unlink(&g->lists[BLITZ__MEMBER_RUNNING], m);
        m->list = BLITZ__MEMBER_CANCELLING;
        blitz__member_push(&g->lists[BLITZ__MEMBER_CANCELLING], m);
    }
    blitz__mutex_unlock(&g->lock);
    if (cancel_now)
        blitz_task_cancel(t);
    blitz_cx cx;
    blitz_waker member = {m, &blitz__member_waker_vtable};
    blitz__cx_init_waker(&cx, NULL, member);
    if (blitz_join(&cx, t) == BLITZ_READY)
        blitz__member_finished(m);
    return BLITZ_OK;
}

BLITZ_API int blitz_group_spawn(blitz_group *g, blitz_poll_fn poll, const void *state,
                                size_t size) {
    blitz_spawn_opts opts = blitz__plain_opts(poll, state, size);
    return blitz_group_spawn_ex(g, &opts);
}

BLITZ_API blitz_poll blitz_group_next(blitz_cx *cx, blitz_group *g, blitz_task **out) {
    BLITZ__GROUP_CHECK(g);
    if (!cx || !g || !out) {
        if (out)
            *out = NULL;
        return BLITZ_READY;
    }
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&g->lock);
    blitz__group_member *m = g->lists[BLITZ__MEMBER_FINISHED].head;
    if (m) {
        blitz__member_unlink(&g->lists[BLITZ__MEMBER_FINISHED], m);
        g->len--;
        if (g->has_waiter) {
            old = g->waiter;
            g->has_waiter = 0;
        }
        blitz__mutex_unlock(&g->lock);
        blitz_waker_drop(old);
        *out = m->task;
        BLITZ_FREE(m);
        blitz__group_unref(g);
        return BLITZ_READY;
    }
    if (g->len == 0) {
        blitz__mutex_unlock(&g->lock);
        *out = NULL;
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    if (!g->has_waiter) {
        g->waiter = blitz_waker_clone(&mine);
        g->has_waiter = 1;
    } else if (!blitz_waker_will_wake(&g->waiter, &mine)) {
        old = g->waiter;
        g->waiter = blitz_waker_clone(&mine);
    }
    blitz__mutex_unlock(&g->lock);
    blitz_waker_drop(old);
    return blitz__pending(cx, blitz_group_next_cancel, g);
}

BLITZ_API void blitz_group_next_cancel(blitz_cx *cx, void *group) {
    blitz_group *g = (blitz_group *)group;
    blitz_waker old = blitz_waker_noop();
    (void)cx;
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return;
    blitz__mutex_lock(&g->lock);
    if (g->has_waiter) {
        old = g->waiter;
        g->has_waiter = 0;
    }
    blitz__mutex_unlock(&g->lock);
    blitz_waker_drop(old);
}

typedef struct blitz__group_wait {
    blitz_group *group;
    blitz_task *task;
} blitz__group_wait;

static blitz_poll blitz__group_wait_poll(blitz_cx *cx, void *arg) {
    blitz__group_wait *w = (blitz__group_wait *)arg;
    return blitz_group_next(cx, w->group, &w->task);
}

BLITZ_API int blitz_group_next_blocking(blitz_group *g, blitz_task **out) {
    BLITZ__GROUP_CHECK(g);
    if (!g || !out)
        return BLITZ_EINVAL;
    blitz__group_wait w = {g, NULL};
    int rc = blitz_op_run_blocking(g->rt, blitz_op_make(blitz__group_wait_poll, NULL, &w));
    *out = rc == BLITZ_OK ? w.task : NULL;
    return rc;
}

BLITZ_API size_t blitz_group_len(blitz_group *g) {
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return 0;
    blitz__mutex_lock(&g->lock);
    size_t n = g->len;
    blitz__mutex_unlock(&g->lock);
    return n;
}

/* Sends a cancel to every running member. Each task is pinned with a
 * reference while the lock is dropped for blitz_task_cancel (which may
 * complete the task at once, and that completion takes the lock). */
static void blitz__group_cancel_running(blitz_group *g) {
    for (;;) {
        blitz__mutex_lock(&g->lock);
        blitz__group_member *m = g->lists[BLITZ__MEMBER_RUNNING].head;
        if (!m) {
            blitz__mutex_unlock(&g->lock);
            return;
        }
        blitz__member_unlink(&g->lists[BLITZ__MEMBER_RUNNING], m);
        m->list = BLITZ__MEMBER_CANCELLING;
        blitz__member_push(&g->lists[BLITZ__MEMBER_CANCELLING], m);
        blitz__task *t = blitz__handle_in(m->task, __func__);
        blitz__task_ref(t);
        blitz__mutex_unlock(&g->lock);
        blitz_task_cancel(t);
        blitz__task_unref(t);
    }
}

BLITZ_API int blitz_group_cancel_all(blitz_group *g) {
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return BLITZ_EINVAL;
    blitz__group_cancel_running(g);
    return BLITZ_OK;
}

BLITZ_API int blitz_group_close(blitz_group *g) {
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return BLITZ_EINVAL;
    blitz__mutex_lock(&g->lock);
    g->closed = 1;
    blitz__mutex_unlock(&g->lock);
    blitz__group_cancel_running(g);
    return BLITZ_OK;
}

BLITZ_API int blitz_group_free(blitz_group *g) {
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return BLITZ_EINVAL;
    /* Members still running keep the memory: the handle ends here. */
    BLITZ__MAGIC_SET(g, BLITZ__MAGIC_DEAD);
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&g->lock);
    g->closed = 1;
    g->freed = 1;
    blitz__group_member *finished = g->lists[BLITZ__MEMBER_FINISHED].head;
    g->lists[BLITZ__MEMBER_FINISHED].head = g->lists[BLITZ__MEMBER_FINISHED].tail = NULL;
    if (g->has_waiter) {
        old = g->waiter;
        g->has_waiter = 0;
    }
    blitz__mutex_unlock(&g->lock);
    blitz_waker_drop(old);
    blitz__group_cancel_running(g);
    while (finished) {
        blitz__group_member *next = finished->next;
        blitz_task_release(&finished->task);
        BLITZ_FREE(finished);
        blitz__group_unref(g);
        finished = next;
    }
    blitz__group_unref(g);
    return BLITZ_OK;
}

BLITZ__OP_ADAPTER(blitz__group_next_op_poll, blitz_group, g,
                  g ? blitz_group_next(cx, g, g->op_out) : BLITZ_READY)
BLITZ_API blitz_op blitz_op_group_next(blitz_group *g, blitz_task **out) {
    BLITZ__GROUP_CHECK(g);
    if (g)
        g->op_out = out;
    return blitz_op_make(blitz__group_next_op_poll, blitz_group_next_cancel, g);
}
/* ====[ END src/op/task_group.c ]========================================== */
/* ########################################################################## */
/* LAYER sync: semaphore, mutex, rwlock, notify, barrier, once cell, token   */
/* ########################################################################## */
/* ====[ BEGIN src/sync/semaphore.c ]======================================= */
/* >>sync/semaphore */
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
/* ====[ BEGIN src/sync/sync_internal.h ]=================================== */
/* >>sync/sync_internal */
/* Shared by the synchronization primitives: the lock word and the atomic
 * words that live in their public structs. */
#ifndef BLITZ__SYNC_INTERNAL_H
#define BLITZ__SYNC_INTERNAL_H

/* src/core/core.h already included */
/* src/core/waitq.h already included */

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

/* A queued waiter polled again: under the lock, it takes the polling task's
 * waker if it is still queued. Returns whether it is (the poll stays
 * pending); if not, it completed meanwhile and its result is ready. */
static inline int blitz__waiter_repoll(uint32_t *lock, blitz__waiter *w, blitz_cx *cx) {
    blitz_waker old = blitz_waker_noop();
    blitz_waker mine = blitz_cx_waker(cx);
    blitz__word_lock(lock);
    uint32_t st = blitz__u32_field_load(&w->blitz__state, BLITZ__RELAXED);
    if (st == BLITZ__WAITER_QUEUED)
        old = blitz__waiter_refresh(w, &mine);
    blitz__word_unlock(lock);
    blitz_waker_drop(old);
    return st == BLITZ__WAITER_QUEUED;
}

/* Cancel of a waiter that is not idle: takes the lock and, if `w` is still
 * queued, withdraws it from `q` and returns 1 with the lock still held, for
 * the primitive's own bookkeeping; *mine is its waker, to be dropped after
 * the lock. Otherwise it completed meanwhile: returns 0, lock released. */
static inline int blitz__waiter_withdraw_locked(uint32_t *lock, blitz__waitq *q, blitz__waiter *w,
                                                blitz_waker *mine) {
    *mine = blitz_waker_noop();
    blitz__word_lock(lock);
    if (blitz__u32_field_load(&w->blitz__state, BLITZ__RELAXED) != BLITZ__WAITER_QUEUED) {
        blitz__word_unlock(lock);
        return 0;
    }
    *mine = blitz__waitq_withdraw(q, w);
    return 1;
}

/* The waiter's container: every primitive embeds the waiter first in its
 * op struct. */
#define BLITZ__OP_OF(type, w) ((type *)(void *)(w))

/* The op form of a wait: a NULL op is ready at once, as with the poll call,
 * and the op's target is bound only while the op is idle, so making the op
 * again for a queued waiter cannot move it to another object. */
#define BLITZ__WAIT_OP_ADAPTER(name, type, call) \
    BLITZ__OP_ADAPTER(name, type, op, op ? (call) : BLITZ_READY)
#define BLITZ__WAIT_OP_IDLE(op) ((op) && blitz__waiter_state(&(op)->blitz__w) == BLITZ__WAITER_IDLE)

#endif
/* ====[ END src/sync/sync_internal.h ]===================================== */
/* ----[ RESUME src/sync/semaphore.c ] */

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

BLITZ_API void blitz_semaphore_deinit(blitz_semaphore *sem) {
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
        return blitz__record(cx, blitz__sem_acquire_start(cx, op), blitz_semaphore_acquire_cancel,
                             op);
    }
    sem = op->blitz__sem;
    if (st == BLITZ__WAITER_QUEUED && blitz__waiter_repoll(&sem->blitz__lock, &op->blitz__w, cx))
        return blitz__pending(cx, blitz_semaphore_acquire_cancel, op);
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
    blitz_waker mine;
    if (st == BLITZ__WAITER_QUEUED &&
        blitz__waiter_withdraw_locked(&sem->blitz__lock, &sem->blitz__waiters, &op->blitz__w,
                                      &mine)) {
        blitz__waiter_reset(&op->blitz__w);
        /* The partial fill goes to the next waiters; with none left (or
         * nothing to give) this also clears WAITERS. */
        blitz__sem_hand_out(sem, op->blitz__n - op->blitz__w.blitz__value);
        blitz_waker_drop(mine);
        return;
    }
    /* Completed but never seen by its owner: what it was given goes back. */
    int result = (int)op->blitz__w.blitz__flags;
    blitz__waiter_reset(&op->blitz__w);
    if (result == BLITZ_OK)
        blitz_semaphore_release(sem, op->blitz__n);
}

BLITZ__WAIT_OP_ADAPTER(blitz__sem_acquire_op_poll, blitz_semaphore_acquire_op,
                       blitz_semaphore_acquire(cx, op, op->blitz__sem, op->blitz__n))

BLITZ_API blitz_op blitz_op_semaphore_acquire(blitz_semaphore_acquire_op *op, blitz_semaphore *sem,
                                              size_t n) {
    if (BLITZ__WAIT_OP_IDLE(op)) {
        op->blitz__sem = sem;
        op->blitz__n = n;
    }
    return blitz_op_make(blitz__sem_acquire_op_poll, blitz_semaphore_acquire_cancel, op);
}

BLITZ_API int blitz_semaphore_acquire_blocking(blitz_semaphore *sem, size_t n) {
    blitz_semaphore_acquire_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_run_blocking(NULL, blitz_op_semaphore_acquire(&op, sem, n));
    return rc != BLITZ_OK ? rc : op.result;
}
/* ====[ END src/sync/semaphore.c ]========================================= */
/* ====[ BEGIN src/sync/mutex.c ]=========================================== */
/* >>sync/mutex */
/* The async mutex: a semaphore with one permit (FIFO, no spinning). */
/* src/sync/sync_internal.h already included */

BLITZ_API int blitz_mutex_init(blitz_mutex *m) {
    return m ? blitz_semaphore_init(&m->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API void blitz_mutex_deinit(blitz_mutex *m) {
    if (m)
        blitz_semaphore_deinit(&m->blitz__sem);
}

BLITZ_API int blitz_mutex_try_lock(blitz_mutex *m) {
    return m ? blitz_semaphore_try_acquire(&m->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API blitz_poll blitz_mutex_lock(blitz_cx *cx, blitz_mutex_lock_op *op, blitz_mutex *m) {
    if (!op)
        return BLITZ_READY;
    return blitz__record(cx,
                         blitz_semaphore_acquire(cx, &op->blitz__acq, m ? &m->blitz__sem : NULL, 1),
                         blitz_mutex_lock_cancel, op);
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
/* ====[ END src/sync/mutex.c ]============================================= */
/* ====[ BEGIN src/sync/rwlock.c ]========================================== */
/* >>sync/rwlock */
/* The async reader-writer lock: a semaphore with BLITZ_RWLOCK_MAX_READERS
 * permits; a reader takes one, a writer all of them. FIFO handoff makes a
 * queued writer block later readers (the pool stays empty while it waits)
 * and hands the readers queued behind a writer the lock together. */
/* src/sync/sync_internal.h already included */

#define BLITZ__RW_ALL BLITZ_RWLOCK_MAX_READERS

BLITZ_API int blitz_rwlock_init(blitz_rwlock *l) {
    return l ? blitz_semaphore_init(&l->blitz__sem, BLITZ__RW_ALL) : BLITZ_EINVAL;
}

BLITZ_API void blitz_rwlock_deinit(blitz_rwlock *l) {
    if (l)
        blitz_semaphore_deinit(&l->blitz__sem);
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
    return blitz__record(cx,
                         blitz_semaphore_acquire(cx, &op->blitz__acq, l ? &l->blitz__sem : NULL, 1),
                         blitz_rwlock_cancel, op);
}

BLITZ_API blitz_poll blitz_rwlock_write(blitz_cx *cx, blitz_rwlock_op *op, blitz_rwlock *l) {
    if (!op)
        return BLITZ_READY;
    return blitz__record(
        cx, blitz_semaphore_acquire(cx, &op->blitz__acq, l ? &l->blitz__sem : NULL, BLITZ__RW_ALL),
        blitz_rwlock_cancel, op);
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
/* ====[ END src/sync/rwlock.c ]============================================ */
/* ====[ BEGIN src/sync/notify.c ]========================================== */
/* >>sync/notify */
/* Notify: one stored permit plus a FIFO of waiters.
 *
 * State word: PERMIT | WAITERS. WAITERS is set and cleared under the lock
 * together with the queue becoming non-empty / empty; PERMIT is set without
 * the lock only while WAITERS is clear, by a CAS on the same word. So a
 * notify_one either stores the permit before a waiter's enqueue CAS (which
 * then fails and consumes it) or sees WAITERS and wakes a queued op under
 * the lock: a notification is never lost between a waiter's check and its
 * enqueue. */
/* src/sync/sync_internal.h already included */

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

BLITZ_API void blitz_notify_deinit(blitz_notify *n) {
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
        return blitz__pending(cx, blitz_notify_wait_cancel, op);
    }
    n = op->blitz__notify;
    if (st == BLITZ__WAITER_QUEUED && blitz__waiter_repoll(&n->blitz__lock, &op->blitz__w, cx))
        return blitz__pending(cx, blitz_notify_wait_cancel, op);
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
    blitz_waker mine;
    if (st == BLITZ__WAITER_QUEUED &&
        blitz__waiter_withdraw_locked(&n->blitz__lock, &n->blitz__waiters, &op->blitz__w, &mine)) {
        blitz__notify_settle(n);
        blitz__word_unlock(&n->blitz__lock);
        blitz_waker_drop(mine);
        blitz__waiter_reset(&op->blitz__w);
        return;
    }
    uint32_t how = op->blitz__w.blitz__flags;
    blitz__waiter_reset(&op->blitz__w);
    if (how == BLITZ__NOTIFIED_ONE)
        blitz_notify_one(n);
}

BLITZ__WAIT_OP_ADAPTER(blitz__notify_wait_op_poll, blitz_notify_wait_op,
                       blitz_notify_wait(cx, op, op->blitz__notify))

BLITZ_API blitz_op blitz_op_notify_wait(blitz_notify_wait_op *op, blitz_notify *n) {
    if (BLITZ__WAIT_OP_IDLE(op))
        op->blitz__notify = n;
    return blitz_op_make(blitz__notify_wait_op_poll, blitz_notify_wait_cancel, op);
}

BLITZ_API int blitz_notify_wait_blocking(blitz_notify *n) {
    blitz_notify_wait_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_run_blocking(NULL, blitz_op_notify_wait(&op, n));
    return rc != BLITZ_OK ? rc : op.result;
}
/* ====[ END src/sync/notify.c ]============================================ */
/* ====[ BEGIN src/sync/barrier.c ]========================================= */
/* >>sync/barrier */
/* Barrier: an arrival count and a generation under one lock. The wait
 * that completes a generation is its leader: it bumps the generation,
 * resets the count and wakes the waiters of its generation (each waiter
 * remembers the generation it joined, so ops of the next one that queue
 * while a batch is being woken stay queued). */
/* src/sync/sync_internal.h already included */

BLITZ_API int blitz_barrier_init(blitz_barrier *b, uint32_t parties) {
    if (!b || parties == 0)
        return BLITZ_EINVAL;
    memset(b, 0, sizeof *b);
    b->blitz__parties = parties;
    return BLITZ_OK;
}

BLITZ_API void blitz_barrier_deinit(blitz_barrier *b) {
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
        return blitz__pending(cx, blitz_barrier_wait_cancel, op);
    }
    b = op->blitz__barrier;
    if (st == BLITZ__WAITER_QUEUED && blitz__waiter_repoll(&b->blitz__lock, &op->blitz__w, cx))
        return blitz__pending(cx, blitz_barrier_wait_cancel, op);
    blitz__waiter_reset(&op->blitz__w);
    return BLITZ_READY;
}

BLITZ_API void blitz_barrier_wait_cancel(blitz_cx *cx, void *arg) {
    blitz_barrier_wait_op *op = (blitz_barrier_wait_op *)arg;
    (void)cx;
    if (!op || blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE)
        return;
    blitz_barrier *b = op->blitz__barrier;
    blitz_waker mine;
    if (blitz__waiter_withdraw_locked(&b->blitz__lock, &b->blitz__waiters, &op->blitz__w, &mine)) {
        /* Withdraw the arrival, unless its generation was already released
         * (a leader still waking an earlier batch). */
        if (op->blitz__w.blitz__value == b->blitz__generation)
            b->blitz__arrived--;
        blitz__word_unlock(&b->blitz__lock);
    }
    blitz_waker_drop(mine);
    blitz__waiter_reset(&op->blitz__w);
}

BLITZ__WAIT_OP_ADAPTER(blitz__barrier_wait_op_poll, blitz_barrier_wait_op,
                       blitz_barrier_wait(cx, op, op->blitz__barrier))

BLITZ_API blitz_op blitz_op_barrier_wait(blitz_barrier_wait_op *op, blitz_barrier *b) {
    if (BLITZ__WAIT_OP_IDLE(op))
        op->blitz__barrier = b;
    return blitz_op_make(blitz__barrier_wait_op_poll, blitz_barrier_wait_cancel, op);
}

BLITZ_API int blitz_barrier_wait_blocking(blitz_barrier *b, int *is_leader) {
    blitz_barrier_wait_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_run_blocking(NULL, blitz_op_barrier_wait(&op, b));
    if (rc == BLITZ_OK)
        rc = op.result;
    if (is_leader)
        *is_leader = rc == BLITZ_OK && op.is_leader;
    return rc;
}
/* ====[ END src/sync/barrier.c ]=========================================== */
/* ====[ BEGIN src/sync/once_cell.c ]======================================= */
/* >>sync/once_cell */
/* OnceCell: EMPTY -> INITIALIZING (one claimer) -> READY, or back to EMPTY
 * (or to the first waiter) when the claimer abandons.
 *
 * State word: phase | WAITERS. WAITERS is raised under the lock, by a CAS
 * that fails if the phase changed, when an op queues (only while
 * INITIALIZING) and cleared under the lock when the queue empties. Complete
 * and abandon look at the word first and take the lock only when WAITERS
 * is set, so set / get with nobody waiting are lock-free; an enqueue that
 * races a completion either sees READY (its CAS fails) or is seen by it. */
/* src/sync/sync_internal.h already included */

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

BLITZ_API void blitz_once_cell_deinit(blitz_once_cell *c) {
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
        return blitz__pending(cx, blitz_once_cell_get_or_claim_cancel, op);
    }
    c = op->blitz__cell;
    if (st == BLITZ__WAITER_QUEUED && blitz__waiter_repoll(&c->blitz__lock, &op->blitz__w, cx))
        return blitz__pending(cx, blitz_once_cell_get_or_claim_cancel, op);
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
    blitz_waker mine;
    if (st == BLITZ__WAITER_QUEUED &&
        blitz__waiter_withdraw_locked(&c->blitz__lock, &c->blitz__waiters, &op->blitz__w, &mine)) {
        if (blitz__waitq_empty(&c->blitz__waiters))
            blitz__u32_fetch_and(blitz__once_word(c), ~BLITZ__ONCE_WAITERS, BLITZ__RELAXED);
        blitz__word_unlock(&c->blitz__lock);
        blitz_waker_drop(mine);
        blitz__waiter_reset(&op->blitz__w);
        return;
    }
    uint32_t how = op->blitz__w.blitz__flags;
    blitz__waiter_reset(&op->blitz__w);
    if (how == BLITZ__ONCE_GOT_CLAIM)
        blitz_once_cell_abandon(c);
}

BLITZ__WAIT_OP_ADAPTER(blitz__once_op_poll, blitz_once_cell_op,
                       blitz_once_cell_get_or_claim(cx, op, op->blitz__cell))

BLITZ_API blitz_op blitz_op_once_cell_get_or_claim(blitz_once_cell_op *op, blitz_once_cell *c) {
    if (BLITZ__WAIT_OP_IDLE(op))
        op->blitz__cell = c;
    return blitz_op_make(blitz__once_op_poll, blitz_once_cell_get_or_claim_cancel, op);
}

BLITZ_API int blitz_once_cell_get_or_claim_blocking(blitz_once_cell *c, void **value,
                                                    int *claimed) {
    blitz_once_cell_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_run_blocking(NULL, blitz_op_once_cell_get_or_claim(&op, c));
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
/* ====[ END src/sync/once_cell.c ]========================================= */
/* ====[ BEGIN src/sync/cancel_token.c ]==================================== */
/* >>sync/cancel_token */
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
/* src/sync/sync_internal.h already included */

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

BLITZ_API void blitz_cancel_token_deinit(blitz_cancel_token *t) {
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
        return blitz__pending(cx, blitz_cancel_token_wait_cancel, op);
    }
    t = op->blitz__token;
    if (st == BLITZ__WAITER_QUEUED && blitz__waiter_repoll(&t->blitz__lock, &op->blitz__w, cx))
        return blitz__pending(cx, blitz_cancel_token_wait_cancel, op);
    blitz__waiter_reset(&op->blitz__w);
    return BLITZ_READY;
}

BLITZ_API void blitz_cancel_token_wait_cancel(blitz_cx *cx, void *arg) {
    blitz_cancel_token_wait_op *op = (blitz_cancel_token_wait_op *)arg;
    (void)cx;
    if (!op || blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE)
        return;
    blitz_cancel_token *t = op->blitz__token;
    blitz_waker mine;
    if (blitz__waiter_withdraw_locked(&t->blitz__lock, &t->blitz__waiters, &op->blitz__w, &mine))
        blitz__word_unlock(&t->blitz__lock);
    blitz_waker_drop(mine);
    blitz__waiter_reset(&op->blitz__w);
}

BLITZ__WAIT_OP_ADAPTER(blitz__token_wait_op_poll, blitz_cancel_token_wait_op,
                       blitz_cancel_token_wait(cx, op, op->blitz__token))

BLITZ_API blitz_op blitz_op_cancel_token_wait(blitz_cancel_token_wait_op *op,
                                              blitz_cancel_token *t) {
    if (BLITZ__WAIT_OP_IDLE(op))
        op->blitz__token = t;
    return blitz_op_make(blitz__token_wait_op_poll, blitz_cancel_token_wait_cancel, op);
}

BLITZ_API int blitz_cancel_token_wait_blocking(blitz_cancel_token *t) {
    blitz_cancel_token_wait_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_run_blocking(NULL, blitz_op_cancel_token_wait(&op, t));
    return rc != BLITZ_OK ? rc : op.result;
}
/* ====[ END src/sync/cancel_token.c ]====================================== */
/* ########################################################################## */
/* LAYER chan: mpmc, oneshot, broadcast and watch channels                   */
/* ########################################################################## */
/* ====[ BEGIN src/chan/mpmc.c ]============================================ */
/* >>chan/mpmc */
/* The bounded MPMC channel: a Vyukov ring with a sequence stamp per slot
 * (lock-free send and receive), and two waiter queues behind a separate
 * lock that the hot path touches only when a counter says someone waits.
 *
 * Positions encode (lap, index): index in the low bits, then a "closed"
 * mark bit (only ever set in `tail`), then the lap. A slot whose stamp
 * equals the tail is free for that position; stamp tail + 1 means it holds
 * that position's value; after the value is taken the stamp becomes the
 * position one lap later. The capacity is exact (not rounded), and no
 * division is needed to wrap.
 *
 * Waiting ops are woken, not served: whoever moves a value wakes as many
 * queued receivers as there are values (senders as there are free slots),
 * and each woken op then does its own send or receive. An op that was
 * woken has therefore done nothing yet: cancelling it (a race or select
 * it lost, a timeout) takes nothing out of the channel and puts nothing
 * in, so no message can end up in the buffer of an op whose result the
 * program never reads. A woken op that is cancelled passes its wake on. */
/* src/core/core.h already included */
/* src/core/waitq.h already included */

/* Another party is between claiming a slot and stamping it: the ring is
 * neither truly full nor truly empty, and that party will look at the
 * waiter counters once it is done. */
#define BLITZ__CHAN_BUSY 1

struct blitz_chan {
    BLITZ__ALIGNED blitz__atomic_u64 tail;
    BLITZ__ALIGNED blitz__atomic_u64 head;
    /* Read on every send and receive, written only by waiters: */
    BLITZ__ALIGNED blitz__atomic_u32 send_waiting;
    blitz__atomic_u32 recv_waiting;
    size_t elem_size, stride, cap;
    uint64_t mark, one_lap;
    unsigned char *slots;
    BLITZ__ALIGNED blitz__mutex lock;
    blitz__waitq senders, receivers;
    /* senders in the low half, receivers in the high half */
    void *raw; /* what blitz__alloc_aligned returned, to free */
    blitz__atomic_u64 refs;
    BLITZ__MAGIC_MEMBER
};

#define BLITZ__CHAN_CHECK(ch) \
    BLITZ__MAGIC_CHECK(ch, BLITZ__MAGIC_CHAN, "channel used after its last release")

static inline blitz__atomic_u64 *blitz__chan_stamp(const blitz_chan *ch, uint64_t idx) {
    return (blitz__atomic_u64 *)(void *)(ch->slots + idx * ch->stride);
}
static inline unsigned char *blitz__chan_data(const blitz_chan *ch, uint64_t idx) {
    return ch->slots + idx * ch->stride + sizeof(uint64_t);
}
static inline uint64_t blitz__chan_next(const blitz_chan *ch, uint64_t pos) {
    uint64_t idx = pos & (ch->mark - 1);
    return idx + 1 < ch->cap ? pos + 1 : (pos & ~(ch->one_lap - 1)) + ch->one_lap;
}
static inline void blitz__chan_copy(void *dst, const void *src, size_t n) {
    /* The common word-sized element gets an inlined move. */
    if (n == sizeof(uint64_t))
        memcpy(dst, src, sizeof(uint64_t));
    else
        memcpy(dst, src, n);
}

/* BLITZ_OK, BLITZ_EFULL, BLITZ_ECLOSED or BLITZ__CHAN_BUSY. */
static int blitz__chan_push(blitz_chan *ch, const void *src) {
    uint64_t tail = blitz__u64_load(&ch->tail, BLITZ__RELAXED);
    for (;;) {
        if (tail & ch->mark)
            return BLITZ_ECLOSED;
        uint64_t idx = tail & (ch->mark - 1);
        blitz__atomic_u64 *stamp = blitz__chan_stamp(ch, idx);
        /* Acquire: the receiver that freed the slot finished reading it
         * before it stored this stamp. */
        uint64_t s = blitz__u64_load(stamp, BLITZ__ACQUIRE);
        int64_t diff = (int64_t)(s - tail);
        if (diff == 0) {
            /* Seq_cst: the claim is ordered before this sender's later
             * seq_cst load of recv_waiting, against a waiting receiver's
             * seq_cst increment of it and its seq_cst load of the tail
             * (see blitz__chan_pop): one of the two sees the other. */
            if (blitz__u64_cas_weak(&ch->tail, &tail, blitz__chan_next(ch, tail), BLITZ__SEQ_CST)) {
                blitz__chan_copy(blitz__chan_data(ch, idx), src, ch->elem_size);
                /* Release: publishes the value to the receiver that
                 * acquires the stamp. */
                blitz__u64_store(stamp, tail + 1, BLITZ__RELEASE);
                return BLITZ_OK;
            }
        } else if (diff < 0) {
            /* The slot still holds the previous lap's value: full, unless a
             * receiver already claimed it and is still copying it out. */
            uint64_t head = blitz__u64_load(&ch->head, BLITZ__SEQ_CST);
            return head + ch->one_lap == tail ? BLITZ_EFULL : BLITZ__CHAN_BUSY;
        } else {
            tail = blitz__u64_load(&ch->tail, BLITZ__RELAXED);
        }
    }
}

/* BLITZ_OK, BLITZ_EEMPTY, BLITZ_ECLOSED or BLITZ__CHAN_BUSY. */
static int blitz__chan_pop(blitz_chan *ch, void *dst) {
    uint64_t head = blitz__u64_load(&ch->head, BLITZ__RELAXED);
    for (;;) {
        uint64_t idx = head & (ch->mark - 1);
        blitz__atomic_u64 *stamp = blitz__chan_stamp(ch, idx);
        /* Acquire: pairs with the sender's release of the stamp. */
        uint64_t s = blitz__u64_load(stamp, BLITZ__ACQUIRE);
        int64_t diff = (int64_t)(s - (head + 1));
        if (diff == 0) {
            /* Seq_cst: ordered before the later load of send_waiting,
             * mirroring blitz__chan_push. */
            if (blitz__u64_cas_weak(&ch->head, &head, blitz__chan_next(ch, head), BLITZ__SEQ_CST)) {
                blitz__chan_copy(dst, blitz__chan_data(ch, idx), ch->elem_size);
                /* Release: the copy is done before a sender reuses it. */
                blitz__u64_store(stamp, head + ch->one_lap, BLITZ__RELEASE);
                return BLITZ_OK;
            }
        } else if (diff < 0) {
            /* Seq_cst: a waiting receiver increments recv_waiting (seq_cst)
             * before it gets here; a sender whose seq_cst load of that
             * counter missed it claimed its slot earlier in the total
             * order, so this load sees the moved tail and reports BUSY
             * instead of sleeping past the value. */
            uint64_t tail = blitz__u64_load(&ch->tail, BLITZ__SEQ_CST);
            if ((tail & ~ch->mark) == head)
                return (tail & ch->mark) ? BLITZ_ECLOSED : BLITZ_EEMPTY;
            return BLITZ__CHAN_BUSY;
        } else {
            head = blitz__u64_load(&ch->head, BLITZ__RELAXED);
        }
    }
}

/* Values buffered right now (claimed positions included), and whether the
 * channel is closed. */
static size_t blitz__chan_count(const blitz_chan *ch, int *closed) {
    uint64_t tail, head;
    /* A consistent pair: the tail did not move while the head was read. */
    do {
        tail = blitz__u64_load(&ch->tail, BLITZ__SEQ_CST);
        head = blitz__u64_load(&ch->head, BLITZ__SEQ_CST);
    } while (blitz__u64_load(&ch->tail, BLITZ__SEQ_CST) != tail);
    *closed = (tail & ch->mark) != 0;
    tail &= ~ch->mark;
    {
        uint64_t hix = head & (ch->mark - 1), tix = tail & (ch->mark - 1);
        if (hix < tix)
            return (size_t)(tix - hix);
        if (hix > tix)
            return (size_t)(ch->cap - hix + tix);
        return tail == head ? 0 : ch->cap;
    }
}

/* Wakes queued ops that can now proceed: as many receivers as values are
 * buffered, as many senders as slots are free; every one once closed (a
 * receiver drains, then sees BLITZ_ECLOSED). A woken op is unlinked and
 * DONE, and does its own push or pop when polled, so a value never sits in
 * a waiter. Waking too many is harmless (the extra ones queue again, at
 * the front); waking too few is not, so the count is taken under the
 * lock, after every enqueue that could have missed the value (see
 * blitz__chan_wait). Wakes after unlocking. */
static void blitz__chan_dispatch(blitz_chan *ch) {
    blitz__wake_list wl;
    wl.len = 0;
    blitz__mutex_lock(&ch->lock);
    int closed;
    /* The seq_cst loads see this thread's own push or pop (program order)
     * and, through the lock, every value an enqueuer looked for and
     * missed before it released the lock. */
    size_t len = blitz__chan_count(ch, &closed);
    size_t vals = closed ? SIZE_MAX : len, room = closed ? SIZE_MAX : ch->cap - len;
    for (;;) {
        while (vals && !blitz__waitq_empty(&ch->receivers) && !blitz__wake_list_full(&wl)) {
            blitz__waiter *w = ch->receivers.blitz__head;
            blitz__waitq_unlink(&ch->receivers, w);
            blitz__u32_fetch_sub(&ch->recv_waiting, 1, BLITZ__SEQ_CST);
            blitz__wake_list_push(&wl, blitz__waiter_finish(w));
            vals--;
        }
        while (room && !blitz__waitq_empty(&ch->senders) && !blitz__wake_list_full(&wl)) {
            blitz__waiter *w = ch->senders.blitz__head;
            blitz__waitq_unlink(&ch->senders, w);
            blitz__u32_fetch_sub(&ch->send_waiting, 1, BLITZ__SEQ_CST);
            blitz__wake_list_push(&wl, blitz__waiter_finish(w));
            room--;
        }
        if (!blitz__wake_list_full(&wl))
            break;
        blitz__mutex_unlock(&ch->lock);
        blitz__wake_list_wake(&wl);
        blitz__mutex_lock(&ch->lock);
    }
    blitz__mutex_unlock(&ch->lock);
    blitz__wake_list_wake(&wl);
}

/* After a successful push or pop: let the other side's waiters move.
 * Seq_cst loads: see blitz__chan_push / blitz__chan_pop. */
static inline void blitz__chan_after_push(blitz_chan *ch) {
    if (blitz__u32_load(&ch->recv_waiting, BLITZ__SEQ_CST) != 0)
        blitz__chan_dispatch(ch);
}
static inline void blitz__chan_after_pop(blitz_chan *ch) {
    if (blitz__u32_load(&ch->send_waiting, BLITZ__SEQ_CST) != 0)
        blitz__chan_dispatch(ch);
}

BLITZ_API int blitz_chan_new(blitz_chan **out, size_t elem_size, size_t capacity) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (elem_size == 0 || capacity == 0 || capacity > ((size_t)1 << 40) ||
        elem_size > ((size_t)1 << 30))
        return BLITZ_EINVAL;
    size_t stride = (sizeof(uint64_t) + elem_size + 7u) & ~(size_t)7u;
    if (capacity > SIZE_MAX / stride)
        return BLITZ_EINVAL;
    void *raw = NULL;
    /* Aligned: the hot fields sit on their own cache lines. */
    blitz_chan *ch = (blitz_chan *)blitz__alloc_aligned(sizeof *ch, BLITZ_CACHE_LINE, &raw);
    if (!ch)
        return BLITZ_ENOMEM;
    memset(ch, 0, sizeof *ch);
    ch->raw = raw;
    ch->slots = (unsigned char *)BLITZ_MALLOC(capacity * stride);
    if (!ch->slots) {
        blitz__free(raw);
        return BLITZ_ENOMEM;
    }
    uint64_t mark = 1;
    while (mark < (uint64_t)capacity + 1)
        mark <<= 1;
    ch->mark = mark;
    ch->one_lap = mark << 1;
    ch->elem_size = elem_size;
    ch->stride = stride;
    ch->cap = capacity;
    size_t i;
    for (i = 0; i < capacity; i++)
        blitz__u64_store(blitz__chan_stamp(ch, i), i, BLITZ__RELAXED);
    blitz__mutex_init(&ch->lock);
    blitz__u64_store(&ch->refs, 1u | ((uint64_t)1 << 32), BLITZ__RELAXED);
    BLITZ__MAGIC_SET(ch, BLITZ__MAGIC_CHAN);
    *out = ch;
    return BLITZ_OK;
}

static void blitz__chan_free(blitz_chan *ch) {
    blitz__mutex_destroy(&ch->lock);
    BLITZ_FREE(ch->slots);
    BLITZ__MAGIC_SET(ch, BLITZ__MAGIC_DEAD);
    blitz__free_handle(ch->raw);
}

/* The holders of a channel (mpmc, broadcast, watch) are counted in one
 * word: senders in the low 32 bits (shift 0), receivers in the high ones
 * (shift 32). A side that reached zero stays closed. */
#define BLITZ__CHAN_SENDERS   0
#define BLITZ__CHAN_RECEIVERS 32

static inline int blitz__chan_refs_add(blitz__atomic_u64 *refs, int shift) {
    uint64_t cur = blitz__u64_load(refs, BLITZ__RELAXED);
    for (;;) {
        if (((cur >> shift) & 0xffffffffu) == 0)
            return BLITZ_ECLOSED;
        if (blitz__u64_cas_weak(refs, &cur, cur + ((uint64_t)1 << shift), BLITZ__RELAXED))
            return BLITZ_OK;
    }
}

/* Drops a holder of one side; BLITZ_ERELEASED when that side holds none.
 * Sets *last when this was the channel's last reference: the caller frees. */
static inline int blitz__chan_refs_release(blitz__atomic_u64 *refs, int shift,
                                           void (*close)(void *), void *ch, int *last) {
    uint64_t unit = (uint64_t)1 << shift;
    uint64_t cur = blitz__u64_load(refs, BLITZ__RELAXED);
    int closed = 0;
    for (;;) {
        uint64_t side = (cur >> shift) & 0xffffffffu;
        if (side == 0)
            return BLITZ_ERELEASED;
        /* The last of a side closes before its reference goes, so the
         * channel is still alive while it does (the other side may free it
         * right after). */
        if (side == 1 && !closed) {
            close(ch);
            closed = 1;
        }
        /* Acq_rel: the releaser that frees sees every other holder's use. */
        if (blitz__u64_cas_weak(refs, &cur, cur - unit, BLITZ__ACQ_REL))
            break;
    }
    *last = cur == unit;
    return BLITZ_OK;
}

/* Drops a holder known to be held (a receiver unsubscribing); returns
 * whether it was the channel's last reference. */
static inline int blitz__chan_refs_drop(blitz__atomic_u64 *refs, int shift) {
    uint64_t unit = (uint64_t)1 << shift;
    /* Acq_rel: whoever frees sees the other holders' use. */
    return blitz__u64_fetch_sub(refs, unit, BLITZ__ACQ_REL) == unit;
}

static int blitz__chan_ref_add(blitz_chan *ch, int shift) {
    return ch ? blitz__chan_refs_add(&ch->refs, shift) : BLITZ_EINVAL;
}

static void blitz__chan_close_last(void *ch) {
    blitz_chan_close((blitz_chan *)ch);
}

static int blitz__chan_ref_release(blitz_chan *ch, int shift) {
    if (!ch)
        return BLITZ_EINVAL;
    int last = 0;
    int rc = blitz__chan_refs_release(&ch->refs, shift, blitz__chan_close_last, ch, &last);
    if (last)
        blitz__chan_free(ch);
    return rc;
}

BLITZ_API int blitz_chan_sender_clone(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return blitz__chan_ref_add(ch, BLITZ__CHAN_SENDERS);
}
BLITZ_API int blitz_chan_sender_release(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return blitz__chan_ref_release(ch, BLITZ__CHAN_SENDERS);
}
BLITZ_API int blitz_chan_receiver_clone(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return blitz__chan_ref_add(ch, BLITZ__CHAN_RECEIVERS);
}
BLITZ_API int blitz_chan_receiver_release(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return blitz__chan_ref_release(ch, BLITZ__CHAN_RECEIVERS);
}

BLITZ_API int blitz_chan_close(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch)
        return BLITZ_EINVAL;
    /* Seq_cst: a sender's claim CAS either lands before the mark (its
     * value is in the ring and will be drained) or fails on it. */
    uint64_t prev = blitz__u64_fetch_or(&ch->tail, ch->mark, BLITZ__SEQ_CST);
    if (!(prev & ch->mark))
        blitz__chan_dispatch(ch);
    return BLITZ_OK;
}

BLITZ_API int blitz_chan_is_closed(const blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return ch ? (blitz__u64_load(&ch->tail, BLITZ__ACQUIRE) & ch->mark) != 0 : 1;
}

BLITZ_API size_t blitz_chan_len(const blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    int closed;
    return ch ? blitz__chan_count(ch, &closed) : 0;
}

BLITZ_API size_t blitz_chan_capacity(const blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return ch ? ch->cap : 0;
}
BLITZ_API size_t blitz_chan_elem_size(const blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return ch ? ch->elem_size : 0;
}

BLITZ_API int blitz_chan_try_send(blitz_chan *ch, const void *value) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch || !value)
        return BLITZ_EINVAL;
    int r = blitz__chan_push(ch, value);
    if (BLITZ__LIKELY(r == BLITZ_OK)) {
        blitz__chan_after_push(ch);
        return BLITZ_OK;
    }
    return r == BLITZ__CHAN_BUSY ? BLITZ_EFULL : r;
}

BLITZ_API int blitz_chan_try_recv(blitz_chan *ch, void *out) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch || !out)
        return BLITZ_EINVAL;
    int r = blitz__chan_pop(ch, out);
    if (BLITZ__LIKELY(r == BLITZ_OK)) {
        blitz__chan_after_pop(ch);
        return BLITZ_OK;
    }
    return r == BLITZ__CHAN_BUSY ? BLITZ_EEMPTY : r;
}

/* ---- async ops ------------------------------------------------------------------ */

#define BLITZ__CHAN_OP_SEND 1u
#define BLITZ__CHAN_OP_RECV 2u
/* A party in flight is given this many re-tries before the op yields. */
#define BLITZ__CHAN_BUSY_SPINS 64
/* ...and then this many gives of its thread's CPU. */
#define BLITZ__CHAN_BUSY_YIELDS 2
/* Looks an op takes at a full or empty channel before it queues. */
#define BLITZ__CHAN_WAIT_SPINS 16

static inline int blitz__chan_try(blitz_chan *ch, blitz_chan_op *op, int send) {
    return send ? blitz__chan_push(ch, op->blitz__buf) : blitz__chan_pop(ch, op->blitz__buf);
}

/* The slow path of an idle op: queue it, then look again (under the lock,
 * so a dispatch either runs before the look, which then sees its value or
 * slot, or after it, and counts this waiter). An op that was woken and
 * found nothing (another op took it first) queues at the front: it keeps
 * its turn. */
static blitz_poll blitz__chan_wait(blitz_cx *cx, blitz_chan_op *op, int send, int front) {
    blitz_chan *ch = op->blitz__ch;
    blitz__waitq *q = send ? &ch->senders : &ch->receivers;
    blitz__atomic_u32 *waiting = send ? &ch->send_waiting : &ch->recv_waiting;
    blitz_waker waker = blitz_cx_waker(cx);
    int spins = 0, r;
    blitz__mutex_lock(&ch->lock);
    op->blitz__w.blitz__flags = send ? BLITZ__CHAN_OP_SEND : BLITZ__CHAN_OP_RECV;
    if (front)
        blitz__waitq_push_front(q, &op->blitz__w, &waker);
    else
        blitz__waitq_push(q, &op->blitz__w, &waker);
    /* Seq_cst: see blitz__chan_pop / blitz__chan_push. */
    blitz__u32_fetch_add(waiting, 1, BLITZ__SEQ_CST);
    for (;;) {
        r = blitz__chan_try(ch, op, send);
        if (r != BLITZ__CHAN_BUSY || ++spins > BLITZ__CHAN_BUSY_SPINS)
            break;
        blitz__cpu_relax();
    }
    if (r == BLITZ_EFULL || r == BLITZ_EEMPTY) {
        blitz__mutex_unlock(&ch->lock);
        return BLITZ_PENDING;
    }
    blitz__u32_fetch_sub(waiting, 1, BLITZ__SEQ_CST);
    blitz_waker mine = blitz__waitq_withdraw(q, &op->blitz__w);
    blitz__waiter_reset(&op->blitz__w);
    blitz__mutex_unlock(&ch->lock);
    blitz_waker_drop(mine);
    if (r == BLITZ__CHAN_BUSY) {
        /* The party in flight is slow (preempted): poll again later rather
         * than spin here. */
        blitz_waker_wake_by_ref(&waker);
        return BLITZ_PENDING;
    }
    op->result = r;
    if (r == BLITZ_OK) {
        if (send)
            blitz__chan_after_push(ch);
        else
            blitz__chan_after_pop(ch);
    }
    return BLITZ_READY;
}

static blitz_poll blitz__chan_poll(blitz_cx *cx, blitz_chan_op *op, int send) {
    blitz_chan *ch = op->blitz__ch;
    /* Acquire: a DONE op was unlinked by the dispatch that published it;
     * from then on the waiter is this op's alone. */
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    int woken = 0;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker waker = blitz_cx_waker(cx);
        blitz__mutex_lock(&ch->lock);
        if (blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED) ==
            BLITZ__WAITER_QUEUED) {
            blitz_waker old = blitz__waiter_refresh(&op->blitz__w, &waker);
            blitz__mutex_unlock(&ch->lock);
            blitz_waker_drop(old);
            return BLITZ_PENDING;
        }
        blitz__mutex_unlock(&ch->lock);
        st = BLITZ__WAITER_DONE;
    }
    if (st == BLITZ__WAITER_DONE) {
        /* Woken: a value or a slot was there a moment ago; go for it. */
        blitz__waiter_reset(&op->blitz__w);
        woken = 1;
    }
    if (!ch || !op->blitz__buf) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    /* Not finished until a branch below says otherwise: a cancel of an
     * idle op that returned PENDING (a party in flight) must not report
     * the result of the op's previous use. */
    op->result = BLITZ_EAGAIN;
    int r = blitz__chan_try(ch, op, send);
    if (r == BLITZ_EEMPTY || r == BLITZ_EFULL) {
        /* With the other side active, a value or a slot often turns up
         * within a few hundred cycles: cheaper than queueing and being
         * woken. */
        int spins;
        for (spins = 0; (r == BLITZ_EEMPTY || r == BLITZ_EFULL) && spins < BLITZ__CHAN_WAIT_SPINS;
             spins++) {
            blitz__cpu_relax();
            r = blitz__chan_try(ch, op, send);
        }
    }
    if (r == BLITZ__CHAN_BUSY) {
        /* The other party is a few stores from done; its stores usually
         * arrive sooner than a trip through the waiter lock. */
        int spins;
        for (spins = 0; r == BLITZ__CHAN_BUSY && spins < BLITZ__CHAN_BUSY_SPINS; spins++) {
            blitz__cpu_relax();
            r = blitz__chan_try(ch, op, send);
        }
        /* Still there: its thread probably lost its CPU; offer ours. */
        for (spins = 0; r == BLITZ__CHAN_BUSY && spins < BLITZ__CHAN_BUSY_YIELDS; spins++) {
            sched_yield();
            r = blitz__chan_try(ch, op, send);
        }
    }
    if (BLITZ__LIKELY(r == BLITZ_OK)) {
        op->result = BLITZ_OK;
        if (send)
            blitz__chan_after_push(ch);
        else
            blitz__chan_after_pop(ch);
        return BLITZ_READY;
    }
    if (r == BLITZ_ECLOSED) {
        op->result = r;
        return BLITZ_READY;
    }
    if (r == BLITZ__CHAN_BUSY) {
        /* The other party was preempted between its claim and its stamp:
         * let this worker run something else and look again. */
        blitz_waker self = blitz_cx_waker(cx);
        blitz_waker_wake_by_ref(&self);
        return BLITZ_PENDING;
    }
    return blitz__chan_wait(cx, op, send, woken);
}

static blitz_poll blitz__chan_send_poll(blitz_cx *cx, void *op) {
    return blitz__chan_poll(cx, (blitz_chan_op *)op, 1);
}
static blitz_poll blitz__chan_recv_poll(blitz_cx *cx, void *op) {
    return blitz__chan_poll(cx, (blitz_chan_op *)op, 0);
}

static inline void blitz__chan_op_bind(blitz_chan_op *op, blitz_chan *ch, const void *buf) {
    if (blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE) {
        op->blitz__ch = ch;
        op->blitz__buf = (void *)(uintptr_t)buf;
        /* Armed: a cancel before the op finishes reports ECANCELED, not a
         * result left from an earlier use of the op. */
        op->result = BLITZ_EAGAIN;
    }
}

BLITZ_API blitz_poll blitz_chan_send(blitz_cx *cx, blitz_chan_op *op, blitz_chan *ch,
                                     const void *value) {
    BLITZ__CHAN_CHECK(ch);
    if (!op)
        return BLITZ_READY;
    blitz__chan_op_bind(op, ch, value);
    return blitz__record(cx, blitz__chan_poll(cx, op, 1), blitz_chan_cancel, op);
}

BLITZ_API blitz_poll blitz_chan_recv(blitz_cx *cx, blitz_chan_op *op, blitz_chan *ch, void *out) {
    BLITZ__CHAN_CHECK(ch);
    if (!op)
        return BLITZ_READY;
    blitz__chan_op_bind(op, ch, out);
    return blitz__record(cx, blitz__chan_poll(cx, op, 0), blitz_chan_cancel, op);
}

BLITZ_API blitz_op blitz_op_chan_send(blitz_chan_op *op, blitz_chan *ch, const void *value) {
    BLITZ__CHAN_CHECK(ch);
    if (op)
        blitz__chan_op_bind(op, ch, value);
    return blitz_op_make(op ? blitz__chan_send_poll : NULL, blitz_chan_cancel, op);
}

BLITZ_API blitz_op blitz_op_chan_recv(blitz_chan_op *op, blitz_chan *ch, void *out) {
    BLITZ__CHAN_CHECK(ch);
    if (op)
        blitz__chan_op_bind(op, ch, out);
    return blitz_op_make(op ? blitz__chan_recv_poll : NULL, blitz_chan_cancel, op);
}

BLITZ_API void blitz_chan_cancel(blitz_cx *cx, void *vop) {
    blitz_chan_op *op = (blitz_chan_op *)vop;
    (void)cx;
    if (!op)
        return;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE) {
        /* Nothing queued. A result already reported stays; an attempt
         * that returned PENDING without queueing, or an op never polled,
         * is withdrawn. */
        if (op->result == BLITZ_EAGAIN || !op->blitz__ch)
            op->result = BLITZ_ECANCELED;
        return;
    }
    blitz_chan *ch = op->blitz__ch;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker old = blitz_waker_noop();
        blitz__mutex_lock(&ch->lock);
        if (blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED) ==
            BLITZ__WAITER_QUEUED) {
            int send = op->blitz__w.blitz__flags == BLITZ__CHAN_OP_SEND;
            blitz__u32_fetch_sub(send ? &ch->send_waiting : &ch->recv_waiting, 1, BLITZ__SEQ_CST);
            old = blitz__waitq_withdraw(send ? &ch->senders : &ch->receivers, &op->blitz__w);
            blitz__waiter_reset(&op->blitz__w);
            op->result = BLITZ_ECANCELED;
            blitz__mutex_unlock(&ch->lock);
            blitz_waker_drop(old);
            return;
        }
        blitz__mutex_unlock(&ch->lock);
    }
    /* Woken but not yet polled: it moved nothing, so it is withdrawn like a
     * queued op, and the wake it used up goes to the next waiter, which
     * may now be the only one that can take the value or the slot. */
    blitz__waiter_reset(&op->blitz__w);
    op->result = BLITZ_ECANCELED;
    blitz__chan_dispatch(ch);
}

BLITZ_API int blitz_chan_send_blocking(blitz_chan *ch, const void *value) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch || !value)
        return BLITZ_EINVAL;
    blitz_chan_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_run_blocking(NULL, blitz_op_chan_send(&op, ch, value));
    return rc ? rc : op.result;
}

BLITZ_API int blitz_chan_recv_blocking(blitz_chan *ch, void *out) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch || !out)
        return BLITZ_EINVAL;
    blitz_chan_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_run_blocking(NULL, blitz_op_chan_recv(&op, ch, out));
    return rc ? rc : op.result;
}
/* ====[ END src/chan/mpmc.c ]============================================== */
/* ====[ BEGIN src/chan/oneshot.c ]========================================= */
/* >>chan/oneshot */
/* The oneshot channel: one 64-bit value in a caller-provided cell, handed
 * over through one atomic state word; no lock, no allocation.
 *
 * The receiver's waker lives in the cell. Only the receiver writes it, and
 * only while it holds REGISTERING; the sender reads it only while it holds
 * TAKING, and the two exclude each other through the state word. The sender
 * copies the waker out before the store that publishes the value, so it
 * never touches the cell after the receiver can see the value (and free the
 * cell). */
/* src/core/core.h already included */

#define BLITZ__OS_VALUE       0x01u /* the sender stored a value */
#define BLITZ__OS_TX_CLOSED   0x02u /* the sender finished without a value */
#define BLITZ__OS_RX_CLOSED   0x04u /* the receiver gave up */
#define BLITZ__OS_HAS_WAKER   0x08u /* the cell holds the receiver's waker */
#define BLITZ__OS_REGISTERING 0x10u /* the receiver is writing the waker */
#define BLITZ__OS_TAKING      0x20u /* the sender is copying the waker out */
#define BLITZ__OS_TAKEN       0x40u /* the receiver took the value */

static inline blitz__atomic_u32 *blitz__os_state(blitz_oneshot *os) {
    /* blitz__atomic_u32 is a struct around one uint32_t: same layout. */
    return (blitz__atomic_u32 *)(void *)&os->blitz__state;
}

BLITZ_API void blitz_oneshot_init(blitz_oneshot *os) {
    if (!os)
        return;
    /* The waker field is read only while HAS_WAKER is set: zero is fine. */
    memset(os, 0, sizeof *os);
}

/* Finishes the sender side with `done` (VALUE or TX_CLOSED). */
static int blitz__oneshot_finish_tx(blitz_oneshot *os, uint32_t done) {
    blitz__atomic_u32 *a = blitz__os_state(os);
    uint32_t s = blitz__u32_load(a, BLITZ__ACQUIRE);
    for (;;) {
        if (s & (BLITZ__OS_VALUE | BLITZ__OS_TX_CLOSED))
            return BLITZ_EINVAL;
        if (s & BLITZ__OS_RX_CLOSED)
            done = BLITZ__OS_TX_CLOSED;
        if ((s & BLITZ__OS_HAS_WAKER) && !(s & BLITZ__OS_REGISTERING)) {
            /* Acquire: the waker the receiver published with release. */
            if (!blitz__u32_cas_weak(a, &s, s | BLITZ__OS_TAKING, BLITZ__ACQUIRE))
                continue;
            blitz_waker w = os->blitz__waker;
            s |= BLITZ__OS_TAKING;
            uint32_t target;
            /* Only the receiver's close can change the word meanwhile. */
            do {
                if (s & BLITZ__OS_RX_CLOSED)
                    done = BLITZ__OS_TX_CLOSED;
                target = (s & ~(BLITZ__OS_TAKING | BLITZ__OS_HAS_WAKER)) | done;
                /* Release: the value is visible to the receiver that
                 * acquires VALUE. From here on the cell is not touched. */
            } while (!blitz__u32_cas_weak(a, &s, target, BLITZ__RELEASE));
            if (s & BLITZ__OS_RX_CLOSED) {
                blitz_waker_drop(w); /* nobody listens any more */
                return BLITZ_ECLOSED;
            }
            blitz_waker_wake(w);
            return done == BLITZ__OS_VALUE ? BLITZ_OK : BLITZ_ECLOSED;
        }
        /* No waker, or the receiver is registering one: it sees the new
         * state when it tries to finish and handles it. */
        if (blitz__u32_cas_weak(a, &s, s | done, BLITZ__RELEASE))
            return done == BLITZ__OS_VALUE ? BLITZ_OK : BLITZ_ECLOSED;
    }
}

BLITZ_API int blitz_oneshot_send(blitz_oneshot *os, uint64_t value) {
    if (!os)
        return BLITZ_EINVAL;
    uint32_t s = blitz__u32_load(blitz__os_state(os), BLITZ__ACQUIRE);
    if (s & (BLITZ__OS_VALUE | BLITZ__OS_TX_CLOSED))
        return BLITZ_EINVAL;
    if (!(s & BLITZ__OS_RX_CLOSED))
        os->blitz__value = value; /* read only after VALUE is acquired */
    return blitz__oneshot_finish_tx(os, BLITZ__OS_VALUE);
}

BLITZ_API void blitz_oneshot_close_tx(blitz_oneshot *os) {
    if (os)
        blitz__oneshot_finish_tx(os, BLITZ__OS_TX_CLOSED);
}

/* Drops the receiver's waker if the cell still holds it and the sender is
 * not copying it; with `close`, also marks the receiver gone. */
static void blitz__oneshot_withdraw(blitz_oneshot *os, int close) {
    blitz__atomic_u32 *a = blitz__os_state(os);
    uint32_t s = blitz__u32_load(a, BLITZ__ACQUIRE);
    uint32_t add = close ? BLITZ__OS_RX_CLOSED : 0u;
    for (;;) {
        uint32_t target = s | add;
        /* While TAKING the sender owns the waker and wakes or drops it. */
        int drop = (s & BLITZ__OS_HAS_WAKER) && !(s & BLITZ__OS_TAKING);
        if (drop)
            target &= ~BLITZ__OS_HAS_WAKER;
        if (target == s)
            return;
        if (blitz__u32_cas_weak(a, &s, target, BLITZ__ACQ_REL)) {
            if (drop) {
                blitz_waker w = os->blitz__waker;
                os->blitz__waker = blitz_waker_noop();
                blitz_waker_drop(w);
            }
            return;
        }
    }
}

BLITZ_API void blitz_oneshot_close_rx(blitz_oneshot *os) {
    if (os)
        blitz__oneshot_withdraw(os, 1);
}

BLITZ_API int blitz_oneshot_rx_closed(const blitz_oneshot *os) {
    return os ? (blitz__u32_field_load(&os->blitz__state, BLITZ__ACQUIRE) & BLITZ__OS_RX_CLOSED) !=
                    0
              : 1;
}

BLITZ_API int blitz_oneshot_try_recv(blitz_oneshot *os, uint64_t *out) {
    if (!os || !out)
        return BLITZ_EINVAL;
    blitz__atomic_u32 *a = blitz__os_state(os);
    /* Acquire: pairs with the sender's release of VALUE. */
    uint32_t s = blitz__u32_load(a, BLITZ__ACQUIRE);
    if ((s & (BLITZ__OS_VALUE | BLITZ__OS_TAKEN)) == BLITZ__OS_VALUE) {
        *out = os->blitz__value;
        /* After VALUE the sender never writes the word again, and the
         * receiver is the only other writer: a plain store suffices. */
        blitz__u32_store(a, s | BLITZ__OS_TAKEN, BLITZ__RELAXED);
        return BLITZ_OK;
    }
    return (s & (BLITZ__OS_VALUE | BLITZ__OS_TX_CLOSED)) ? BLITZ_ECLOSED : BLITZ_EEMPTY;
}

BLITZ_API blitz_poll blitz_oneshot_recv(blitz_cx *cx, blitz_oneshot *os) {
    if (!os)
        return BLITZ_READY;
    blitz__atomic_u32 *a = blitz__os_state(os);
    blitz_waker mine = blitz_cx_waker(cx);
    uint32_t s = blitz__u32_load(a, BLITZ__ACQUIRE);
    for (;;) {
        if (s & (BLITZ__OS_VALUE | BLITZ__OS_TX_CLOSED))
            return BLITZ_READY;
        if (s & BLITZ__OS_TAKING) {
            /* The sender is waking the stored waker right now; poll again
             * in case this poll comes from another waker. */
            blitz_waker_wake_by_ref(&mine);
            return blitz__pending(cx, blitz_oneshot_cancel, os);
        }
        if ((s & BLITZ__OS_HAS_WAKER) && blitz_waker_will_wake(&os->blitz__waker, &mine))
            return blitz__pending(cx, blitz_oneshot_cancel, os);
        if (blitz__u32_cas_weak(a, &s, s | BLITZ__OS_REGISTERING, BLITZ__ACQUIRE))
            break;
    }
    /* REGISTERING: the waker field is ours until we clear it. */
    blitz_waker old = (s & BLITZ__OS_HAS_WAKER) ? os->blitz__waker : blitz_waker_noop();
    os->blitz__waker = blitz_waker_clone(&mine);
    uint32_t expected = s | BLITZ__OS_REGISTERING;
    uint32_t target = (s & ~BLITZ__OS_REGISTERING) | BLITZ__OS_HAS_WAKER;
    /* Release: publishes the waker to a sender that acquires HAS_WAKER. */
    if (blitz__u32_cas(a, &expected, target, BLITZ__ACQ_REL)) {
        blitz_waker_drop(old);
        return blitz__pending(cx, blitz_oneshot_cancel, os);
    }
    /* The sender finished meanwhile (it does not take a waker while we
     * register): the waker is still ours to drop. */
    blitz_waker again = os->blitz__waker;
    os->blitz__waker = blitz_waker_noop();
    blitz__u32_fetch_and(a, ~(BLITZ__OS_REGISTERING | BLITZ__OS_HAS_WAKER), BLITZ__ACQ_REL);
    blitz_waker_drop(old);
    blitz_waker_drop(again);
    return BLITZ_READY;
}

BLITZ__OP_ADAPTER(blitz__oneshot_recv_poll, blitz_oneshot, os, blitz_oneshot_recv(cx, os))

BLITZ_API void blitz_oneshot_cancel(blitz_cx *cx, void *os) {
    (void)cx;
    if (os)
        blitz__oneshot_withdraw((blitz_oneshot *)os, 0);
}

BLITZ_API blitz_op blitz_op_oneshot_recv(blitz_oneshot *os) {
    return blitz_op_make(os ? blitz__oneshot_recv_poll : NULL, blitz_oneshot_cancel, os);
}

BLITZ_API int blitz_oneshot_recv_blocking(blitz_oneshot *os, uint64_t *out) {
    if (!os || !out)
        return BLITZ_EINVAL;
    int rc = blitz_op_run_blocking(NULL, blitz_op_oneshot_recv(os));
    if (rc != BLITZ_OK)
        return rc;
    return blitz_oneshot_try_recv(os, out);
}

BLITZ_API int blitz_oneshot_done(const blitz_oneshot *os) {
    if (!os)
        return 1;
    uint32_t s = blitz__u32_field_load(&os->blitz__state, BLITZ__ACQUIRE);
    /* Without a value there is nothing left for the receiver to take. */
    int finished = (s & BLITZ__OS_TX_CLOSED) ||
                   ((s & BLITZ__OS_VALUE) && (s & (BLITZ__OS_TAKEN | BLITZ__OS_RX_CLOSED)));
    return finished && !(s & (BLITZ__OS_HAS_WAKER | BLITZ__OS_REGISTERING | BLITZ__OS_TAKING));
}
/* ====[ END src/chan/oneshot.c ]=========================================== */
/* ====[ BEGIN src/chan/broadcast.c ]======================================= */
/* >>chan/broadcast */
/* The broadcast channel: a ring of the last `cap` values, each slot a
 * seqlock (a stamp and the value's words), written by senders one at a time
 * and read by receivers without any lock, each from its own position. A
 * receiver that was lapped notices it from the stamp and is moved to the
 * oldest value still kept. Senders take turns through a lock bit in the
 * tail (one CAS to take, a plain store to give back); the waiters of recv
 * sit behind a separate lock that a send takes only when a counter says
 * someone waits.
 *
 * Stamps: 2p + 2 when the slot holds position p in full, 2p + 1 while p is
 * being written into it. The value words are atomics (stored with release,
 * loaded with acquire, both plain moves on x86), so a read that overlaps a
 * write is no data race: it sees a changed stamp afterwards and is
 * discarded. */
/* src/core/core.h already included */
/* src/core/waitq.h already included */

/* Copies n bytes into / out of atomic words. Release stores: a reader whose
 * acquire load sees one of these words also sees the odd stamp stored
 * before it, so its stamp re-check fails. Acquire loads: the stamp re-check
 * after them cannot be done before them. */
static void blitz__chan_words_store(blitz__atomic_u64 *dst, const void *src, size_t n) {
    const unsigned char *p = (const unsigned char *)src;
    size_t i, full = n / 8u;
    for (i = 0; i < full; i++) {
        uint64_t w;
        memcpy(&w, p + 8u * i, 8u);
        blitz__u64_store(&dst[i], w, BLITZ__RELEASE);
    }
    if (n % 8u) {
        uint64_t w = 0;
        memcpy(&w, p + 8u * full, n % 8u);
        blitz__u64_store(&dst[full], w, BLITZ__RELEASE);
    }
}

static void blitz__chan_words_load(void *dst, const blitz__atomic_u64 *src, size_t n) {
    unsigned char *p = (unsigned char *)dst;
    size_t i, full = n / 8u;
    for (i = 0; i < full; i++) {
        uint64_t w = blitz__u64_load(&src[i], BLITZ__ACQUIRE);
        memcpy(p + 8u * i, &w, 8u);
    }
    if (n % 8u) {
        uint64_t w = blitz__u64_load(&src[full], BLITZ__ACQUIRE);
        memcpy(p + 8u * full, &w, n % 8u);
    }
}

/* Wakes every waiter of `q`, in batches, never under `lock` (held on entry
 * and on return); `waiting` (if not NULL) counts the queued waiters. */
static void blitz__chan_wake_all(blitz__mutex *lock, blitz__waitq *q, blitz__atomic_u32 *waiting) {
    blitz__wake_list wl;
    wl.len = 0;
    while (!blitz__waitq_empty(q)) {
        blitz__waiter *w = q->blitz__head;
        blitz__waitq_unlink(q, w);
        if (waiting)
            blitz__u32_fetch_sub(waiting, 1, BLITZ__RELAXED);
        blitz__wake_list_push(&wl, blitz__waiter_finish(w));
        if (blitz__wake_list_full(&wl)) {
            blitz__mutex_unlock(lock);
            blitz__wake_list_wake(&wl);
            blitz__mutex_lock(lock);
        }
    }
    if (wl.len) {
        blitz__mutex_unlock(lock);
        blitz__wake_list_wake(&wl);
        blitz__mutex_lock(lock);
    }
}

struct blitz_broadcast {
    /* (next position << 1) | 1 while a sender writes */
    BLITZ__ALIGNED blitz__atomic_u64 tail;
    blitz__atomic_u32 closed;
    blitz__atomic_u32 waiting; /* queued receivers */
    size_t elem_size, slot_words;
    uint64_t cap, mask;
    blitz__atomic_u64 *slots;
    BLITZ__ALIGNED blitz__mutex lock;
    blitz__waitq waiters;
    void *raw;              /* what blitz__alloc_aligned returned, to free */
    blitz__atomic_u64 refs; /* senders low half, receivers high half */
    BLITZ__MAGIC_MEMBER
};

#define BLITZ__BC_CHECK(bc) \
    BLITZ__MAGIC_CHECK(bc, BLITZ__MAGIC_BROADCAST, "broadcast channel used after its last release")

static inline blitz__atomic_u64 *blitz__bc_slot(const blitz_broadcast *bc, uint64_t pos) {
    return bc->slots + (pos & bc->mask) * bc->slot_words;
}

/* A sender that keeps finding another one writing yields after this many
 * spins (the other was preempted mid-copy). */
#define BLITZ__BC_SPINS 128

/* Takes the senders' lock bit; returns the tail it found (unlocked). */
static uint64_t blitz__bc_lock(blitz_broadcast *bc) {
    unsigned spins = 0;
    uint64_t t = blitz__u64_load(&bc->tail, BLITZ__RELAXED);
    for (;;) {
        /* Seq_cst: this claim is ordered before the later seq_cst load of
         * `waiting`, against a receiver's seq_cst increment of it and its
         * seq_cst load of the tail (see blitz__bc_recv_poll). */
        if (!(t & 1u) && blitz__u64_cas_weak(&bc->tail, &t, t | 1u, BLITZ__SEQ_CST))
            return t;
        if (t & 1u) {
            if (++spins < BLITZ__BC_SPINS) {
                blitz__cpu_relax();
            } else {
                spins = 0;
                sched_yield();
            }
            t = blitz__u64_load(&bc->tail, BLITZ__RELAXED);
        }
    }
}

static void blitz__bc_wake(blitz_broadcast *bc) {
    blitz__mutex_lock(&bc->lock);
    blitz__chan_wake_all(&bc->lock, &bc->waiters, &bc->waiting);
    blitz__mutex_unlock(&bc->lock);
}

BLITZ_API int blitz_broadcast_new(blitz_broadcast **out, size_t elem_size, size_t capacity) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (elem_size == 0 || capacity == 0 || capacity > ((size_t)1 << 32) ||
        elem_size > ((size_t)1 << 30))
        return BLITZ_EINVAL;
    uint64_t cap = 1;
    while (cap < capacity)
        cap <<= 1;
    size_t slot_words = 1u + (elem_size + 7u) / 8u;
    if (cap > SIZE_MAX / (slot_words * sizeof(uint64_t)))
        return BLITZ_EINVAL;
    void *raw = NULL;
    /* Aligned: the hot fields sit on their own cache lines. */
    blitz_broadcast *bc =
        (blitz_broadcast *)blitz__alloc_aligned(sizeof *bc, BLITZ_CACHE_LINE, &raw);
    if (!bc)
        return BLITZ_ENOMEM;
    memset(bc, 0, sizeof *bc);
    bc->raw = raw;
    size_t bytes = (size_t)cap * slot_words * sizeof(uint64_t);
    bc->slots = (blitz__atomic_u64 *)BLITZ_MALLOC(bytes);
    if (!bc->slots) {
        blitz__free(raw);
        return BLITZ_ENOMEM;
    }
    memset(bc->slots, 0, bytes); /* stamp 0: no position yet */
    bc->elem_size = elem_size;
    bc->slot_words = slot_words;
    bc->cap = cap;
    bc->mask = cap - 1;
    blitz__mutex_init(&bc->lock);
    blitz__u64_store(&bc->refs, 1u, BLITZ__RELAXED);
    BLITZ__MAGIC_SET(bc, BLITZ__MAGIC_BROADCAST);
    *out = bc;
    return BLITZ_OK;
}

static void blitz__bc_free(blitz_broadcast *bc) {
    blitz__mutex_destroy(&bc->lock);
    BLITZ_FREE(bc->slots);
    BLITZ__MAGIC_SET(bc, BLITZ__MAGIC_DEAD);
    blitz__free_handle(bc->raw);
}

BLITZ_API int blitz_broadcast_close(blitz_broadcast *bc) {
    BLITZ__BC_CHECK(bc);
    if (!bc)
        return BLITZ_EINVAL;
    uint64_t t = blitz__bc_lock(bc);
    /* Release (and the unlock's): a receiver that acquires `closed` sees
     * every value sent before. */
    blitz__u32_store(&bc->closed, 1, BLITZ__RELEASE);
    blitz__u64_store(&bc->tail, t, BLITZ__RELEASE);
    blitz__bc_wake(bc);
    return BLITZ_OK;
}

BLITZ_API int blitz_broadcast_sender_clone(blitz_broadcast *bc) {
    BLITZ__BC_CHECK(bc);
    return bc ? blitz__chan_refs_add(&bc->refs, BLITZ__CHAN_SENDERS) : BLITZ_EINVAL;
}

static void blitz__bc_close_last(void *bc) {
    blitz_broadcast_close((blitz_broadcast *)bc);
}

BLITZ_API int blitz_broadcast_sender_release(blitz_broadcast *bc) {
    BLITZ__BC_CHECK(bc);
    if (!bc)
        return BLITZ_EINVAL;
    int last = 0;
    int rc =
        blitz__chan_refs_release(&bc->refs, BLITZ__CHAN_SENDERS, blitz__bc_close_last, bc, &last);
    if (last)
        blitz__bc_free(bc);
    return rc;
}

BLITZ_API uint32_t blitz_broadcast_receiver_count(const blitz_broadcast *bc) {
    BLITZ__BC_CHECK(bc);
    return bc ? (uint32_t)(blitz__u64_load(&bc->refs, BLITZ__ACQUIRE) >> 32) : 0u;
}

BLITZ_API int blitz_broadcast_subscribe(blitz_broadcast *bc, blitz_broadcast_rx *rx) {
    BLITZ__BC_CHECK(bc);
    if (!bc || !rx)
        return BLITZ_EINVAL;
    memset(rx, 0, sizeof *rx);
    rx->blitz__bc = bc;
    blitz__u64_fetch_add(&bc->refs, (uint64_t)1 << BLITZ__CHAN_RECEIVERS, BLITZ__RELAXED);
    /* A send in progress is for this position: the new receiver gets it. */
    rx->blitz__pos = blitz__u64_load(&bc->tail, BLITZ__ACQUIRE) >> 1;
    return BLITZ_OK;
}

BLITZ_API int blitz_broadcast_send(blitz_broadcast *bc, const void *value) {
    BLITZ__BC_CHECK(bc);
    if (!bc || !value)
        return BLITZ_EINVAL;
    uint64_t t = blitz__bc_lock(bc);
    uint32_t receivers = (uint32_t)(blitz__u64_load(&bc->refs, BLITZ__RELAXED) >> 32);
    if (blitz__u32_load(&bc->closed, BLITZ__RELAXED) || receivers == 0) {
        blitz__u64_store(&bc->tail, t, BLITZ__RELEASE);
        return BLITZ_ECLOSED;
    }
    uint64_t pos = t >> 1;
    blitz__atomic_u64 *slot = blitz__bc_slot(bc, pos);
    blitz__u64_store(&slot[0], 2u * pos + 1u, BLITZ__RELAXED);
    blitz__chan_words_store(slot + 1, value, bc->elem_size);
    /* Release: the value's words are visible to a reader that acquires
     * this stamp. */
    blitz__u64_store(&slot[0], 2u * pos + 2u, BLITZ__RELEASE);
    blitz__u64_store(&bc->tail, t + 2u, BLITZ__RELEASE);
    if (blitz__u32_load(&bc->waiting, BLITZ__SEQ_CST) != 0)
        blitz__bc_wake(bc);
    return receivers > (uint32_t)INT32_MAX ? INT32_MAX : (int)receivers;
}

BLITZ_API int blitz_broadcast_try_recv(blitz_broadcast_rx *rx, void *out) {
    if (!rx || !rx->blitz__bc || !out)
        return BLITZ_EINVAL;
    blitz_broadcast *bc = rx->blitz__bc;
    for (;;) {
        uint64_t pos = rx->blitz__pos;
        blitz__atomic_u64 *slot = blitz__bc_slot(bc, pos);
        uint64_t want = 2u * pos + 2u;
        uint64_t s = blitz__u64_load(&slot[0], BLITZ__ACQUIRE);
        if (s == want) {
            blitz__chan_words_load(out, slot + 1, bc->elem_size);
            /* Ordered after the acquire loads of the words. */
            if (blitz__u64_load(&slot[0], BLITZ__RELAXED) == want) {
                rx->blitz__pos = pos + 1u;
                return BLITZ_OK;
            }
            continue; /* overwritten while copying: lagged */
        }
        if (s < want) {
            /* Acquire: pairs with the release in close, after which every
             * value sent is visible. */
            if (!blitz__u32_load(&bc->closed, BLITZ__ACQUIRE))
                return BLITZ_EEMPTY;
            if (blitz__u64_load(&slot[0], BLITZ__ACQUIRE) < want)
                return BLITZ_ECLOSED;
            continue;
        }
        /* Lapped: the slot holds (or is being filled with) position q, so
         * positions before q - cap + 1 are gone; the tail may say more. */
        uint64_t q = (s - 1u) / 2u;
        uint64_t tail = blitz__u64_load(&bc->tail, BLITZ__ACQUIRE) >> 1;
        uint64_t oldest = q + 1u - bc->cap;
        if (tail > bc->cap && tail - bc->cap > oldest)
            oldest = tail - bc->cap;
        rx->lagged = oldest - pos;
        rx->blitz__pos = oldest;
        return BLITZ_ELAGGED;
    }
}

/* Takes a queued or woken waiter out. Under the lock; returns the waker to
 * drop after it. */
static blitz_waker blitz__bc_withdraw_locked(blitz_broadcast_rx *rx) {
    blitz_waker old = blitz_waker_noop();
    uint32_t st = blitz__u32_field_load(&rx->blitz__w.blitz__state, BLITZ__RELAXED);
    if (st == BLITZ__WAITER_QUEUED) {
        blitz__u32_fetch_sub(&rx->blitz__bc->waiting, 1, BLITZ__RELAXED);
        old = blitz__waitq_withdraw(&rx->blitz__bc->waiters, &rx->blitz__w);
    }
    blitz__waiter_reset(&rx->blitz__w);
    return old;
}

static blitz_poll blitz__bc_recv_poll(blitz_cx *cx, void *p) {
    blitz_broadcast_rx *rx = (blitz_broadcast_rx *)p;
    blitz_broadcast *bc = rx->blitz__bc;
    if (!bc || !rx->blitz__buf) {
        rx->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    int r = blitz_broadcast_try_recv(rx, rx->blitz__buf);
    uint32_t st = blitz__waiter_state(&rx->blitz__w);
    if (r != BLITZ_EEMPTY && st == BLITZ__WAITER_IDLE) {
        rx->result = r;
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx), old;
    blitz__mutex_lock(&bc->lock);
    if (blitz__u32_field_load(&rx->blitz__w.blitz__state, BLITZ__RELAXED) == BLITZ__WAITER_QUEUED) {
        if (r != BLITZ_EEMPTY) {
            old = blitz__bc_withdraw_locked(rx);
            blitz__mutex_unlock(&bc->lock);
            blitz_waker_drop(old);
            rx->result = r;
            return BLITZ_READY;
        }
        old = blitz__waiter_refresh(&rx->blitz__w, &mine);
        blitz__mutex_unlock(&bc->lock);
        blitz_waker_drop(old);
        return BLITZ_PENDING;
    }
    if (r == BLITZ_EEMPTY) {
        blitz__waiter_reset(&rx->blitz__w);
        blitz__waitq_push(&bc->waiters, &rx->blitz__w, &mine);
        /* Seq_cst: a sender whose seq_cst load of `waiting` misses this took
         * the lock bit earlier in the total order, so this load of the tail
         * sees it taken, or the tail past the position. */
        blitz__u32_fetch_add(&bc->waiting, 1, BLITZ__SEQ_CST);
        uint64_t t = blitz__u64_load(&bc->tail, BLITZ__SEQ_CST);
        r = blitz_broadcast_try_recv(rx, rx->blitz__buf);
        if (r == BLITZ_EEMPTY && !(t & 1u) && (t >> 1) <= rx->blitz__pos) {
            blitz__mutex_unlock(&bc->lock);
            return BLITZ_PENDING;
        }
    }
    old = blitz__bc_withdraw_locked(rx);
    blitz__mutex_unlock(&bc->lock);
    blitz_waker_drop(old);
    if (r == BLITZ_EEMPTY) {
        /* A send is half done: look again once it had time to finish. */
        blitz_waker_wake_by_ref(&mine);
        return BLITZ_PENDING;
    }
    rx->result = r;
    return BLITZ_READY;
}

BLITZ_API blitz_poll blitz_broadcast_recv(blitz_cx *cx, blitz_broadcast_rx *rx, void *out) {
    if (!rx)
        return BLITZ_READY;
    rx->blitz__buf = out;
    return blitz__record(cx, blitz__bc_recv_poll(cx, rx), blitz_broadcast_cancel, rx);
}

BLITZ_API blitz_op blitz_op_broadcast_recv(blitz_broadcast_rx *rx, void *out) {
    if (rx)
        rx->blitz__buf = out;
    return blitz_op_make(rx ? blitz__bc_recv_poll : NULL, blitz_broadcast_cancel, rx);
}

BLITZ_API void blitz_broadcast_cancel(blitz_cx *cx, void *op) {
    blitz_broadcast_rx *rx = (blitz_broadcast_rx *)op;
    (void)cx;
    if (!rx || !rx->blitz__bc || blitz__waiter_state(&rx->blitz__w) == BLITZ__WAITER_IDLE)
        return;
    blitz__mutex_lock(&rx->blitz__bc->lock);
    blitz_waker old = blitz__bc_withdraw_locked(rx);
    blitz__mutex_unlock(&rx->blitz__bc->lock);
    blitz_waker_drop(old);
}

BLITZ_API int blitz_broadcast_unsubscribe(blitz_broadcast_rx *rx) {
    if (!rx)
        return BLITZ_EINVAL;
    if (!rx->blitz__bc)
        return BLITZ_ERELEASED;
    blitz_broadcast_cancel(NULL, rx);
    blitz_broadcast *bc = rx->blitz__bc;
    rx->blitz__bc = NULL;
    if (blitz__chan_refs_drop(&bc->refs, BLITZ__CHAN_RECEIVERS))
        blitz__bc_free(bc);
    return BLITZ_OK;
}

BLITZ_API int blitz_broadcast_recv_blocking(blitz_broadcast_rx *rx, void *out) {
    if (!rx || !rx->blitz__bc || !out)
        return BLITZ_EINVAL;
    int rc = blitz_op_run_blocking(NULL, blitz_op_broadcast_recv(rx, out));
    return rc ? rc : rx->result;
}
/* ====[ END src/chan/broadcast.c ]========================================= */
/* ====[ BEGIN src/chan/watch.c ]=========================================== */
/* >>chan/watch */
/* The watch channel: one value behind a seqlock whose sequence is twice the
 * version (odd while a send writes), so readers never lock and never see a
 * torn value, and senders never wait for readers. The odd sequence is also
 * the senders' lock: a send takes it with one CAS and gives it back with a
 * plain store. The waiters of changed() sit behind a separate lock that a
 * send takes only when a counter says someone waits. */
/* src/core/core.h already included */
/* src/core/waitq.h already included */

/* A reader that keeps finding a send in progress yields after this many
 * spins (the sender was preempted mid-copy). */
#define BLITZ__WATCH_SPINS 128

struct blitz_watch {
    BLITZ__ALIGNED blitz__atomic_u64 seq;
    blitz__atomic_u32 closed;
    blitz__atomic_u32 waiting; /* queued changed() waiters */
    size_t elem_size;
    blitz__atomic_u64 *words;
    BLITZ__ALIGNED blitz__mutex lock;
    blitz__waitq waiters;
    void *raw;              /* what blitz__alloc_aligned returned, to free */
    blitz__atomic_u64 refs; /* senders low half, receivers high half */
    BLITZ__MAGIC_MEMBER
};

#define BLITZ__WATCH_CHECK(w) \
    BLITZ__MAGIC_CHECK(w, BLITZ__MAGIC_WATCH, "watch channel used after its last release")

static void blitz__watch_free(blitz_watch *w) {
    blitz__mutex_destroy(&w->lock);
    BLITZ_FREE(w->words);
    BLITZ__MAGIC_SET(w, BLITZ__MAGIC_DEAD);
    blitz__free_handle(w->raw);
}

BLITZ_API int blitz_watch_new(blitz_watch **out, size_t elem_size, const void *initial) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!initial || elem_size == 0 || elem_size > ((size_t)1 << 30))
        return BLITZ_EINVAL;
    void *raw = NULL;
    /* Aligned: the hot fields sit on their own cache lines. */
    blitz_watch *w = (blitz_watch *)blitz__alloc_aligned(sizeof *w, BLITZ_CACHE_LINE, &raw);
    if (!w)
        return BLITZ_ENOMEM;
    memset(w, 0, sizeof *w);
    w->raw = raw;
    w->words = (blitz__atomic_u64 *)BLITZ_MALLOC((elem_size + 7u) / 8u * sizeof(uint64_t));
    if (!w->words) {
        blitz__free(raw);
        return BLITZ_ENOMEM;
    }
    w->elem_size = elem_size;
    blitz__chan_words_store(w->words, initial, elem_size);
    blitz__u64_store(&w->seq, 2u, BLITZ__RELEASE); /* version 1 */
    blitz__mutex_init(&w->lock);
    blitz__u64_store(&w->refs, 1u, BLITZ__RELAXED);
    BLITZ__MAGIC_SET(w, BLITZ__MAGIC_WATCH);
    *out = w;
    return BLITZ_OK;
}

static inline uint64_t blitz__watch_version(const blitz_watch *w) {
    /* An odd sequence (send in progress) still counts as the old version. */
    return blitz__u64_load(&w->seq, BLITZ__ACQUIRE) >> 1;
}

/* Takes the sequence lock: returns the (even) sequence it found. */
static uint64_t blitz__watch_lock(blitz_watch *w) {
    unsigned spins = 0;
    uint64_t s = blitz__u64_load(&w->seq, BLITZ__RELAXED);
    for (;;) {
        /* Seq_cst: this claim is ordered before the later seq_cst load of
         * `waiting`, against a waiter's seq_cst increment of it and its
         * seq_cst load of the sequence (see blitz__watch_changed_poll). */
        if (!(s & 1u) && blitz__u64_cas_weak(&w->seq, &s, s + 1u, BLITZ__SEQ_CST))
            return s;
        if (s & 1u) {
            if (++spins < BLITZ__WATCH_SPINS) {
                blitz__cpu_relax();
            } else {
                spins = 0;
                sched_yield();
            }
            s = blitz__u64_load(&w->seq, BLITZ__RELAXED);
        }
    }
}

/* Wakes every changed() waiter, if there is one. */
static void blitz__watch_wake(blitz_watch *w) {
    if (blitz__u32_load(&w->waiting, BLITZ__SEQ_CST) == 0)
        return;
    blitz__mutex_lock(&w->lock);
    blitz__chan_wake_all(&w->lock, &w->waiters, &w->waiting);
    blitz__mutex_unlock(&w->lock);
}

BLITZ_API int blitz_watch_send(blitz_watch *w, const void *value) {
    BLITZ__WATCH_CHECK(w);
    if (!w || !value)
        return BLITZ_EINVAL;
    uint64_t s = blitz__watch_lock(w);
    if (blitz__u32_load(&w->closed, BLITZ__RELAXED)) {
        blitz__u64_store(&w->seq, s, BLITZ__RELEASE); /* unchanged version */
        return BLITZ_ECLOSED;
    }
    /* The odd sequence is ordered before the words by their release
     * stores (see blitz__chan_words_store). */
    blitz__chan_words_store(w->words, value, w->elem_size);
    /* Release: the new words are visible to a reader that acquires it. */
    blitz__u64_store(&w->seq, s + 2u, BLITZ__RELEASE);
    blitz__watch_wake(w);
    return BLITZ_OK;
}

BLITZ_API uint64_t blitz_watch_read(const blitz_watch *w, void *out) {
    BLITZ__WATCH_CHECK(w);
    if (!w || !out)
        return 0;
    unsigned spins = 0;
    for (;;) {
        uint64_t s1 = blitz__u64_load(&w->seq, BLITZ__ACQUIRE);
        if (!(s1 & 1u)) {
            blitz__chan_words_load(out, w->words, w->elem_size);
            /* Ordered after the acquire loads of the words. */
            if (blitz__u64_load(&w->seq, BLITZ__RELAXED) == s1)
                return s1 >> 1;
        }
        if (++spins < BLITZ__WATCH_SPINS) {
            blitz__cpu_relax();
        } else {
            spins = 0;
            sched_yield();
        }
    }
}

BLITZ_API int blitz_watch_close(blitz_watch *w) {
    BLITZ__WATCH_CHECK(w);
    if (!w)
        return BLITZ_EINVAL;
    uint64_t s = blitz__watch_lock(w);
    /* Release: a reader that acquires `closed` sees every send before. */
    blitz__u32_store(&w->closed, 1, BLITZ__RELEASE);
    blitz__u64_store(&w->seq, s, BLITZ__RELEASE);
    blitz__mutex_lock(&w->lock);
    blitz__chan_wake_all(&w->lock, &w->waiters, &w->waiting);
    blitz__mutex_unlock(&w->lock);
    return BLITZ_OK;
}

BLITZ_API int blitz_watch_sender_clone(blitz_watch *w) {
    BLITZ__WATCH_CHECK(w);
    return w ? blitz__chan_refs_add(&w->refs, BLITZ__CHAN_SENDERS) : BLITZ_EINVAL;
}

static void blitz__watch_close_last(void *w) {
    blitz_watch_close((blitz_watch *)w);
}

BLITZ_API int blitz_watch_sender_release(blitz_watch *w) {
    BLITZ__WATCH_CHECK(w);
    if (!w)
        return BLITZ_EINVAL;
    int last = 0;
    int rc =
        blitz__chan_refs_release(&w->refs, BLITZ__CHAN_SENDERS, blitz__watch_close_last, w, &last);
    if (last)
        blitz__watch_free(w);
    return rc;
}

BLITZ_API int blitz_watch_subscribe(blitz_watch *w, blitz_watch_rx *rx) {
    BLITZ__WATCH_CHECK(w);
    if (!w || !rx)
        return BLITZ_EINVAL;
    memset(rx, 0, sizeof *rx);
    rx->blitz__watch = w;
    blitz__u64_fetch_add(&w->refs, (uint64_t)1 << BLITZ__CHAN_RECEIVERS, BLITZ__RELAXED);
    rx->seen = blitz__watch_version(w);
    return BLITZ_OK;
}

BLITZ_API uint64_t blitz_watch_read_update(blitz_watch_rx *rx, void *out) {
    if (!rx || !rx->blitz__watch || !out)
        return 0;
    uint64_t v = blitz_watch_read(rx->blitz__watch, out);
    if (v > rx->seen)
        rx->seen = v;
    return v;
}

BLITZ_API int blitz_watch_has_changed(const blitz_watch_rx *rx) {
    if (!rx || !rx->blitz__watch)
        return BLITZ_EINVAL;
    const blitz_watch *w = rx->blitz__watch;
    if (blitz__watch_version(w) > rx->seen)
        return 1;
    if (blitz__u32_load(&w->closed, BLITZ__ACQUIRE) && blitz__watch_version(w) <= rx->seen)
        return BLITZ_ECLOSED;
    return 0;
}

static blitz_waker blitz__watch_withdraw_locked(blitz_watch_rx *rx) {
    blitz_waker old = blitz_waker_noop();
    if (blitz__u32_field_load(&rx->blitz__w.blitz__state, BLITZ__RELAXED) == BLITZ__WAITER_QUEUED) {
        blitz__u32_fetch_sub(&rx->blitz__watch->waiting, 1, BLITZ__RELAXED);
        old = blitz__waitq_withdraw(&rx->blitz__watch->waiters, &rx->blitz__w);
    }
    blitz__waiter_reset(&rx->blitz__w);
    return old;
}

/* 1 when changed() is done (rx->result set). */
static int blitz__watch_check(blitz_watch_rx *rx) {
    blitz_watch *w = rx->blitz__watch;
    uint64_t v = blitz__watch_version(w);
    if (v > rx->seen) {
        rx->seen = v;
        rx->result = BLITZ_OK;
        return 1;
    }
    /* Acquire: pairs with the release in close; a send before the close
     * is then visible in the version re-read. */
    if (blitz__u32_load(&w->closed, BLITZ__ACQUIRE)) {
        v = blitz__watch_version(w);
        if (v > rx->seen) {
            rx->seen = v;
            rx->result = BLITZ_OK;
        } else {
            rx->result = BLITZ_ECLOSED;
        }
        return 1;
    }
    return 0;
}

static blitz_poll blitz__watch_changed_poll(blitz_cx *cx, void *p) {
    blitz_watch_rx *rx = (blitz_watch_rx *)p;
    blitz_watch *w = rx->blitz__watch;
    if (!w) {
        rx->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if (blitz__waiter_state(&rx->blitz__w) == BLITZ__WAITER_IDLE && blitz__watch_check(rx))
        return BLITZ_READY;
    blitz_waker mine = blitz_cx_waker(cx), old;
    blitz__mutex_lock(&w->lock);
    if (blitz__u32_field_load(&rx->blitz__w.blitz__state, BLITZ__RELAXED) == BLITZ__WAITER_QUEUED) {
        if (blitz__watch_check(rx)) {
            old = blitz__watch_withdraw_locked(rx);
            blitz__mutex_unlock(&w->lock);
            blitz_waker_drop(old);
            return BLITZ_READY;
        }
        old = blitz__waiter_refresh(&rx->blitz__w, &mine);
        blitz__mutex_unlock(&w->lock);
        blitz_waker_drop(old);
        return BLITZ_PENDING;
    }
    blitz__waiter_reset(&rx->blitz__w);
    blitz__waitq_push(&w->waiters, &rx->blitz__w, &mine);
    /* Seq_cst: a sender whose seq_cst load of `waiting` misses this took
     * the sequence lock earlier in the total order, so the load of the
     * sequence below sees its odd or newer sequence. */
    blitz__u32_fetch_add(&w->waiting, 1, BLITZ__SEQ_CST);
    uint64_t seq = blitz__u64_load(&w->seq, BLITZ__SEQ_CST);
    int ready = blitz__watch_check(rx);
    if (!ready && !(seq & 1u)) {
        blitz__mutex_unlock(&w->lock);
        return BLITZ_PENDING;
    }
    old = blitz__watch_withdraw_locked(rx);
    blitz__mutex_unlock(&w->lock);
    blitz_waker_drop(old);
    if (ready)
        return BLITZ_READY;
    /* A send is half done: look again once it had time to finish. */
    blitz_waker_wake_by_ref(&mine);
    return BLITZ_PENDING;
}

BLITZ_API blitz_poll blitz_watch_changed(blitz_cx *cx, blitz_watch_rx *rx) {
    if (!rx)
        return BLITZ_READY;
    return blitz__record(cx, blitz__watch_changed_poll(cx, rx), blitz_watch_cancel, rx);
}

BLITZ_API blitz_op blitz_op_watch_changed(blitz_watch_rx *rx) {
    return blitz_op_make(rx ? blitz__watch_changed_poll : NULL, blitz_watch_cancel, rx);
}

BLITZ_API void blitz_watch_cancel(blitz_cx *cx, void *op) {
    blitz_watch_rx *rx = (blitz_watch_rx *)op;
    (void)cx;
    if (!rx || !rx->blitz__watch || blitz__waiter_state(&rx->blitz__w) == BLITZ__WAITER_IDLE)
        return;
    blitz__mutex_lock(&rx->blitz__watch->lock);
    blitz_waker old = blitz__watch_withdraw_locked(rx);
    blitz__mutex_unlock(&rx->blitz__watch->lock);
    blitz_waker_drop(old);
}

BLITZ_API int blitz_watch_unsubscribe(blitz_watch_rx *rx) {
    if (!rx)
        return BLITZ_EINVAL;
    if (!rx->blitz__watch)
        return BLITZ_ERELEASED;
    blitz_watch_cancel(NULL, rx);
    blitz_watch *w = rx->blitz__watch;
    rx->blitz__watch = NULL;
    if (blitz__chan_refs_drop(&w->refs, BLITZ__CHAN_RECEIVERS))
        blitz__watch_free(w);
    return BLITZ_OK;
}

BLITZ_API int blitz_watch_changed_blocking(blitz_watch_rx *rx) {
    if (!rx || !rx->blitz__watch)
        return BLITZ_EINVAL;
    int rc = blitz_op_run_blocking(NULL, blitz_op_watch_changed(rx));
    return rc ? rc : rx->result;
}
/* ====[ END src/chan/watch.c ]============================================= */
/* ########################################################################## */
/* LAYER net: sockets, DNS, connect by name                                  */
/* ########################################################################## */
/* ====[ BEGIN src/net/sock.c ]============================================= */
/* >>net/sock */
/* Sockets: creation (TCP listeners, UDP, Unix stream / datagram), options,
 * addresses, shutdown. The transfers are ops (io_driver.c). */
/* src/io/io.h already included */

static int blitz__errno_rc(void) {
    return blitz__from_errno(errno);
}

static int blitz__sock_new_fd(blitz_runtime *rt, int family, int type, int *fd) {
    if (!rt)
        return BLITZ_EINVAL;
    if (!rt->io)
        return BLITZ_ENOSYS;
    int r = blitz__socket_open(family, type, 1);
    if (r < 0)
        return r;
    *fd = r;
    return BLITZ_OK;
}

#define BLITZ__SOCK_FLAGS_ALL \
    (BLITZ_SOCK_REUSEADDR | BLITZ_SOCK_REUSEPORT | BLITZ_SOCK_V6ONLY | BLITZ_SOCK_NO_REUSEADDR)

static int blitz__apply_flags(int fd, int family, unsigned flags, int listener) {
    int one = 1;
    if (flags & ~BLITZ__SOCK_FLAGS_ALL)
        return BLITZ_EINVAL;
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

/* Binds a listener's descriptor. A listener of this runtime closed a
 * moment ago may still hold the address (see listener_closed_ns), so
 * EADDRINUSE is retried for up to 200 ms after such a close. */
static int blitz__bind_listener(blitz_runtime *rt, int fd, const blitz_addr *addr) {
    for (;;) {
        if (bind(fd, (const struct sockaddr *)(const void *)addr->u.bytes, addr->len) == 0)
            return BLITZ_OK;
        int err = errno;
        if (err != EADDRINUSE ||
            blitz__now_ns() - blitz__u64_load(&rt->io->listener_closed_ns, BLITZ__RELAXED) >
                200000000u)
            return blitz__from_errno(err);
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
}

/* A listening descriptor blitz bound as a socket: its receives fail at
 * once with BLITZ_ENOTCONN on every backend (io_uring would wait for a
 * connection). */
static int blitz__listener_wrap(blitz_runtime *rt, int fd, int family, blitz_socket **out) {
    int rc = blitz__sock_wrap(rt->io, fd, family, SOCK_STREAM, out);
    if (rc == BLITZ_OK) {
        (*out)->listening = 1;
        (*out)->listen_own = 1;
    }
    return rc;
}

/* Binds and listens `fd` unless `rc` already failed, then wraps it; the
 * descriptor is closed on any failure. */
static int blitz__listen_finish(blitz_runtime *rt, int fd, const blitz_addr *addr, int backlog,
                                int rc, blitz_socket **out) {
    if (rc == BLITZ_OK)
        rc = blitz__bind_listener(rt, fd, addr);
    if (rc == BLITZ_OK && listen(fd, backlog ? backlog : SOMAXCONN) < 0)
        rc = blitz__errno_rc();
    if (rc != BLITZ_OK) {
        close(fd);
        return rc;
    }
    return blitz__listener_wrap(rt, fd, addr->u.family, out);
}

BLITZ_API int blitz_tcp_listen(blitz_runtime *rt, const blitz_addr *addr, int backlog,
                               unsigned flags, blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!blitz__addr_valid(addr) || (addr->u.family != AF_INET && addr->u.family != AF_INET6) ||
        backlog < 0)
        return BLITZ_EINVAL;
    int fd, rc = blitz__sock_new_fd(rt, addr->u.family, SOCK_STREAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__apply_flags(fd, addr->u.family, flags, 1);
    return blitz__listen_finish(rt, fd, addr, backlog, rc, out);
}

BLITZ_API int blitz_udp_bind(blitz_runtime *rt, const blitz_addr *addr, unsigned flags,
                             blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!blitz__addr_valid(addr) || (addr->u.family != AF_INET && addr->u.family != AF_INET6))
        return BLITZ_EINVAL;
    int fd, rc = blitz__sock_new_fd(rt, addr->u.family, SOCK_DGRAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__apply_flags(fd, addr->u.family, flags, 0);
    if (rc == BLITZ_OK &&
        bind(fd, (const struct sockaddr *)(const void *)addr->u.bytes, addr->len) < 0)
        rc = blitz__errno_rc();
    if (rc != BLITZ_OK) {
        close(fd);
        return rc;
    }
    return blitz__sock_wrap(rt->io, fd, addr->u.family, SOCK_DGRAM, out);
}

BLITZ_API int blitz_sock_connect_dgram(blitz_socket *s, const blitz_addr *addr) {
    BLITZ__SOCK_CHECK(s);
    if (!s || !blitz__addr_valid(addr))
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
    if (!blitz__addr_valid(addr) || addr->u.family != AF_UNIX || backlog < 0)
        return BLITZ_EINVAL;
    int fd, rc = blitz__sock_new_fd(rt, AF_UNIX, SOCK_STREAM, &fd);
    if (rc != BLITZ_OK)
        return rc;
    const struct sockaddr_un *u = (const struct sockaddr_un *)(const void *)addr->u.bytes;
    /* The path as bind takes it: at most len's bytes, terminated here. */
    char path[sizeof u->sun_path + 1];
    size_t plen = addr->len - offsetof(struct sockaddr_un, sun_path);
    memcpy(path, u->sun_path, plen);
    path[plen] = 0;
    struct stat st;
    if (path[0] && lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        /* A stale socket file from an earlier run: nobody listens on it.
         * Never another kind of file (a connect to a regular file is
         * refused too), which bind then reports as in use. */
        int t = blitz__socket_open(AF_UNIX, SOCK_DGRAM, 0);
        if (t >= 0) {
            /* A datagram probe: only a file no socket is bound to refuses
             * it; a live stream listener answers EPROTOTYPE at once, so the
             * probe neither waits on a full backlog nor hands the listener
             * a connection. */
            if (connect(t, (const struct sockaddr *)u, addr->len) < 0 && errno == ECONNREFUSED)
                unlink(path);
            close(t);
        }
    }
    return blitz__listen_finish(rt, fd, addr, backlog, BLITZ_OK, out);
}

BLITZ_API int blitz_unix_dgram(blitz_runtime *rt, const blitz_addr *addr, blitz_socket **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (addr && (!blitz__addr_valid(addr) || addr->u.family != AF_UNIX))
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
    int prc = blitz__socketpair_open(AF_UNIX, st, 1, sv);
    if (prc != BLITZ_OK)
        return prc;
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
    struct stat st;
    if (fstat(fd, &st) < 0)
        return blitz__errno_rc();
    /* Always "ready": nothing to wait for (epoll refuses them). */
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
        return BLITZ_EPERM;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return blitz__errno_rc();
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int family = AF_UNSPEC, type = SOCK_STREAM, listening = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        family = ss.ss_family;
    socklen_t ol = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ol);
    ol = sizeof listening;
    if (family != AF_UNSPEC && getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ol) < 0)
        listening = 0;
    int rc = blitz__sock_wrap_keep(rt->io, fd, family, type, out);
    if (rc != BLITZ_OK) {
        fcntl(fd, F_SETFL, fl); /* still the caller's, as it was */
        return rc;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    (*out)->listening = listening != 0;
    return BLITZ_OK;
}

BLITZ_API int blitz_sock_shutdown(blitz_socket *s, int how) {
    BLITZ__SOCK_CHECK(s);
    if (!s || how < 0 || how > 2)
        return BLITZ_EINVAL;
    int h = how == 0 ? SHUT_RD : how == 1 ? SHUT_WR : SHUT_RDWR;
    return shutdown(s->fd, h) < 0 ? blitz__errno_rc() : BLITZ_OK;
}

BLITZ_API int blitz_sock_fd(const blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return s ? s->fd : -1;
}

/* The socket's own address, or its peer's. */
static int blitz__sock_name(const blitz_socket *s, blitz_addr *out, int peer) {
    if (!s || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    socklen_t l = sizeof out->u.bytes;
    struct sockaddr *sa = (struct sockaddr *)(void *)out->u.bytes;
    if ((peer ? getpeername(s->fd, sa, &l) : getsockname(s->fd, sa, &l)) < 0)
        return blitz__errno_rc();
    out->len = l;
    return BLITZ_OK;
}

BLITZ_API int blitz_sock_local_addr(const blitz_socket *s, blitz_addr *out) {
    BLITZ__SOCK_CHECK(s);
    return blitz__sock_name(s, out, 0);
}

BLITZ_API int blitz_sock_peer_addr(const blitz_socket *s, blitz_addr *out) {
    BLITZ__SOCK_CHECK(s);
    return blitz__sock_name(s, out, 1);
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
    BLITZ__SOCK_CHECK(s);
    return blitz__setopt(s, IPPROTO_TCP, TCP_NODELAY, on != 0);
}
BLITZ_API int blitz_tcp_nodelay(const blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    int v = blitz__getopt(s, IPPROTO_TCP, TCP_NODELAY);
    return v < 0 ? v : v != 0;
}
BLITZ_API int blitz_tcp_set_keepalive(blitz_socket *s, int on, int idle_secs) {
    BLITZ__SOCK_CHECK(s);
    /* The idle time first: on a socket that is not TCP it fails, and then
     * keep-alive stays as it was. */
    if (s && on && idle_secs > 0) {
        int rc = blitz__setopt(s, IPPROTO_TCP, BLITZ__TCP_KEEPIDLE, idle_secs);
        if (rc != BLITZ_OK)
            return rc;
    }
    return blitz__setopt(s, SOL_SOCKET, SO_KEEPALIVE, on != 0);
}
BLITZ_API int blitz_sock_set_linger(blitz_socket *s, int on, int secs) {
    BLITZ__SOCK_CHECK(s);
    if (!s || secs < 0)
        return BLITZ_EINVAL;
    struct linger l;
    l.l_onoff = on != 0;
    l.l_linger = secs;
    return setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l) < 0 ? blitz__errno_rc()
                                                                      : BLITZ_OK;
}
BLITZ_API int blitz_sock_set_recv_buffer(blitz_socket *s, int bytes) {
    BLITZ__SOCK_CHECK(s);
    return bytes <= 0 ? BLITZ_EINVAL : blitz__setopt(s, SOL_SOCKET, SO_RCVBUF, bytes);
}
BLITZ_API int blitz_sock_set_send_buffer(blitz_socket *s, int bytes) {
    BLITZ__SOCK_CHECK(s);
    return bytes <= 0 ? BLITZ_EINVAL : blitz__setopt(s, SOL_SOCKET, SO_SNDBUF, bytes);
}
BLITZ_API int blitz_sock_recv_buffer(const blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__getopt(s, SOL_SOCKET, SO_RCVBUF);
}
BLITZ_API int blitz_sock_send_buffer(const blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__getopt(s, SOL_SOCKET, SO_SNDBUF);
}

static int blitz__multicast(blitz_socket *s, const char *group, const char *iface, int join) {
    if (!s || !group)
        return BLITZ_EINVAL;
    struct in_addr g4;
    struct in6_addr g6;
    if (inet_pton(AF_INET, group, &g4) == 1) {
        struct blitz__ip_mreq m;
        memset(&m, 0, sizeof m);
        m.multiaddr = g4;
        m.interface_addr.s_addr = htonl(INADDR_ANY);
        if (iface && inet_pton(AF_INET, iface, &m.interface_addr) != 1)
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
        if (setsockopt(s->fd, IPPROTO_IPV6, join ? BLITZ__IPV6_JOIN_GROUP : BLITZ__IPV6_LEAVE_GROUP,
                       &m, sizeof m) < 0)
            return blitz__errno_rc();
        return BLITZ_OK;
    }
    return BLITZ_EINVAL;
}

BLITZ_API int blitz_udp_join_multicast(blitz_socket *s, const char *group, const char *iface) {
    BLITZ__SOCK_CHECK(s);
    return blitz__multicast(s, group, iface, 1);
}
BLITZ_API int blitz_udp_leave_multicast(blitz_socket *s, const char *group, const char *iface) {
    BLITZ__SOCK_CHECK(s);
    return blitz__multicast(s, group, iface, 0);
}
BLITZ_API int blitz_udp_set_multicast_loop(blitz_socket *s, int on) {
    BLITZ__SOCK_CHECK(s);
    if (!s)
        return BLITZ_EINVAL;
    if (s->family == AF_INET6)
        return blitz__setopt(s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, on != 0);
    return blitz__setopt(s, IPPROTO_IP, IP_MULTICAST_LOOP, on != 0);
}
BLITZ_API int blitz_udp_set_broadcast(blitz_socket *s, int on) {
    BLITZ__SOCK_CHECK(s);
    return blitz__setopt(s, SOL_SOCKET, SO_BROADCAST, on != 0);
}

/* ---- socket and descriptor ops as values ------------------------------------------------- */

/* What a constructor recorded; the op's poll makes that call on every poll
 * (each call ignores its arguments once the op has started). */
enum {
    BLITZ__OPC_ACCEPT = 1,
    BLITZ__OPC_TCP_CONNECT,
    BLITZ__OPC_TCP_CONNECT_TIMEOUT,
    BLITZ__OPC_UNIX_CONNECT,
    BLITZ__OPC_RECV,
    BLITZ__OPC_SEND,
    BLITZ__OPC_SEND_ALL,
    BLITZ__OPC_RECV_EXACT,
    BLITZ__OPC_RECVV,
    BLITZ__OPC_SENDV,
    BLITZ__OPC_SEND_TO,
    BLITZ__OPC_RECV_FROM,
    BLITZ__OPC_FD_READ,
    BLITZ__OPC_FD_WRITE,
    BLITZ__OPC_FD_WRITE_ALL,
    BLITZ__OPC_FD_READABLE,
    BLITZ__OPC_FD_WRITABLE
};

static blitz_poll blitz__io_value_poll(blitz_cx *cx, void *arg) {
    blitz_io *op = (blitz_io *)arg;
    if (!op)
        return BLITZ_READY;
    blitz_socket *s = op->blitz__arg_sock;
    void *buf = (void *)(uintptr_t)op->blitz__arg_buf;
    size_t len = op->blitz__arg_len;
    const blitz_iovec *iov = (const blitz_iovec *)op->blitz__arg_buf;
    switch (op->blitz__arg_call) {
    case BLITZ__OPC_ACCEPT:
        return blitz_sock_accept(cx, op, s);
    case BLITZ__OPC_TCP_CONNECT:
        return blitz_tcp_connect(cx, op, op->blitz__arg_addr);
    case BLITZ__OPC_TCP_CONNECT_TIMEOUT:
        return blitz_tcp_connect_timeout(cx, op, op->blitz__arg_addr, op->blitz__arg_limit);
    case BLITZ__OPC_UNIX_CONNECT:
        return blitz_unix_connect(cx, op, op->blitz__arg_addr);
    case BLITZ__OPC_RECV:
        return blitz_sock_recv(cx, op, s, buf, len);
    case BLITZ__OPC_SEND:
        return blitz_sock_send(cx, op, s, buf, len);
    case BLITZ__OPC_SEND_ALL:
        return blitz_sock_send_all(cx, op, s, buf, len);
    case BLITZ__OPC_RECV_EXACT:
        return blitz_sock_recv_exact(cx, op, s, buf, len);
    case BLITZ__OPC_RECVV:
        return blitz_sock_recvv(cx, op, s, iov, (int)len);
    case BLITZ__OPC_SENDV:
        return blitz_sock_sendv(cx, op, s, iov, (int)len);
    case BLITZ__OPC_SEND_TO:
        return blitz_sock_send_to(cx, op, s, buf, len, op->blitz__arg_addr);
    case BLITZ__OPC_RECV_FROM:
        return blitz_sock_recv_from(cx, op, s, buf, len,
                                    (blitz_addr *)(uintptr_t)op->blitz__arg_addr);
    case BLITZ__OPC_FD_READ:
        return blitz_fd_read(cx, op, s, buf, len);
    case BLITZ__OPC_FD_WRITE:
        return blitz_fd_write(cx, op, s, buf, len);
    case BLITZ__OPC_FD_WRITE_ALL:
        return blitz_fd_write_all(cx, op, s, buf, len);
    case BLITZ__OPC_FD_READABLE:
        return blitz_fd_readable(cx, op, s);
    case BLITZ__OPC_FD_WRITABLE:
        return blitz_fd_writable(cx, op, s);
    default:
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
}

/* Records the call in the op (its own fields: no allocation). A NULL op
 * gives an op that is READY at once, as the calls are with a NULL op. */
static blitz_op blitz__io_value(blitz_io *op, uint32_t call, blitz_socket *s, const void *buf,
                                size_t len, const blitz_addr *addr, int64_t limit) {
    if (op) {
        op->blitz__arg_call = call;
        op->blitz__arg_sock = s;
        op->blitz__arg_buf = buf;
        op->blitz__arg_len = len;
        op->blitz__arg_addr = addr;
        op->blitz__arg_limit = limit;
    }
    return blitz_op_make(blitz__io_value_poll, blitz_io_cancel, op);
}

BLITZ_API blitz_op blitz_op_sock_accept(blitz_io *io, blitz_socket *listener) {
    BLITZ__SOCK_CHECK(listener);
    return blitz__io_value(io, BLITZ__OPC_ACCEPT, listener, NULL, 0, NULL, 0);
}
BLITZ_API blitz_op blitz_op_tcp_connect(blitz_io *io, const blitz_addr *addr) {
    return blitz__io_value(io, BLITZ__OPC_TCP_CONNECT, NULL, NULL, 0, addr, 0);
}
BLITZ_API blitz_op blitz_op_tcp_connect_timeout(blitz_io *io, const blitz_addr *addr,
                                                int64_t timeout_ns) {
    return blitz__io_value(io, BLITZ__OPC_TCP_CONNECT_TIMEOUT, NULL, NULL, 0, addr, timeout_ns);
}
BLITZ_API blitz_op blitz_op_unix_connect(blitz_io *io, const blitz_addr *addr) {
    return blitz__io_value(io, BLITZ__OPC_UNIX_CONNECT, NULL, NULL, 0, addr, 0);
}
BLITZ_API blitz_op blitz_op_sock_recv(blitz_io *io, blitz_socket *s, void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_RECV, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_send(blitz_io *io, blitz_socket *s, const void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_SEND, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_send_all(blitz_io *io, blitz_socket *s, const void *buf,
                                          size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_SEND_ALL, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_recv_exact(blitz_io *io, blitz_socket *s, void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_RECV_EXACT, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_recvv(blitz_io *io, blitz_socket *s, const blitz_iovec *iov,
                                       int iovcnt) {
    BLITZ__SOCK_CHECK(s);
    /* A negative count stays invalid through the size_t field. */
    return blitz__io_value(io, BLITZ__OPC_RECVV, s, iov, iovcnt < 0 ? 0 : (size_t)iovcnt, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_sendv(blitz_io *io, blitz_socket *s, const blitz_iovec *iov,
                                       int iovcnt) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_SENDV, s, iov, iovcnt < 0 ? 0 : (size_t)iovcnt, NULL, 0);
}
BLITZ_API blitz_op blitz_op_sock_send_to(blitz_io *io, blitz_socket *s, const void *buf, size_t len,
                                         const blitz_addr *to) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_SEND_TO, s, buf, len, to, 0);
}
BLITZ_API blitz_op blitz_op_sock_recv_from(blitz_io *io, blitz_socket *s, void *buf, size_t len,
                                           blitz_addr *from) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_RECV_FROM, s, buf, len, from, 0);
}
BLITZ_API blitz_op blitz_op_fd_read(blitz_io *io, blitz_socket *s, void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_READ, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_fd_write(blitz_io *io, blitz_socket *s, const void *buf, size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_WRITE, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_fd_write_all(blitz_io *io, blitz_socket *s, const void *buf,
                                         size_t len) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_WRITE_ALL, s, buf, len, NULL, 0);
}
BLITZ_API blitz_op blitz_op_fd_readable(blitz_io *io, blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_READABLE, s, NULL, 0, NULL, 0);
}
BLITZ_API blitz_op blitz_op_fd_writable(blitz_io *io, blitz_socket *s) {
    BLITZ__SOCK_CHECK(s);
    return blitz__io_value(io, BLITZ__OPC_FD_WRITABLE, s, NULL, 0, NULL, 0);
}
/* ====[ END src/net/sock.c ]=============================================== */
/* ====[ BEGIN src/net/dns.c ]============================================== */
/* >>net/dns */
/* DNS: getaddrinfo on the blocking pool (blocking_pool.c ops). The answer
 * is copied into one array of fixed-size addresses, so the caller frees
 * one block and a lookup abandoned by its task is freed by the thread that
 * finishes it (the op's discard). */
/* src/io/io.h already included */

_Static_assert(sizeof(struct sockaddr_in6) <= sizeof(((blitz_resolved_addr *)0)->addr.bytes),
               "a resolved address holds an IPv6 socket address");

static int blitz__dns_error(int gai) {
    switch (gai) {
    case EAI_NONAME:
#ifdef EAI_NODATA
    case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY:
#endif
        return BLITZ_ENOHOST;
    case EAI_AGAIN:
        return BLITZ_EDNSTEMP;
    case EAI_MEMORY:
        return BLITZ_ENOMEM;
    case EAI_FAMILY:
    case EAI_SERVICE:
    case EAI_BADFLAGS:
        return BLITZ_EINVAL;
    case EAI_SYSTEM:
        return blitz__from_errno(errno);
    default:
        return BLITZ_EDNS;
    }
}

static int blitz__dns_lookup(const char *host, uint16_t port, int family,
                             blitz_resolved_addr **out) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = family == 4 ? AF_INET : family == 6 ? AF_INET6 : AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0)
        return blitz__dns_error(rc);
    size_t n = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next)
        if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
            a->ai_addrlen <= sizeof(((blitz_resolved_addr *)0)->addr.bytes))
            n++;
    if (n == 0) {
        freeaddrinfo(res);
        return BLITZ_ENOHOST;
    }
    blitz_resolved_addr *list = (blitz_resolved_addr *)blitz__calloc(n * sizeof *list);
    if (!list) {
        freeaddrinfo(res);
        return BLITZ_ENOMEM;
    }
    size_t i = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
            a->ai_addrlen > sizeof list[i].addr.bytes)
            continue;
        list[i].family = a->ai_family;
        list[i].len = (uint32_t)a->ai_addrlen;
        memcpy(list[i].addr.bytes, a->ai_addr, a->ai_addrlen);
        i++;
    }
    freeaddrinfo(res);
    *out = list;
    return (int)n;
}

typedef struct {
    blitz__pool_rec base;
    char *host;
    uint16_t port;
    int family;
    int result;
    blitz_resolved_addr *addrs;
} blitz__dns_rec;

static void blitz__dns_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__dns_rec *d = (blitz__dns_rec *)rec;
    d->result =
        cancelled ? BLITZ_ECANCELED : blitz__dns_lookup(d->host, d->port, d->family, &d->addrs);
}

static void blitz__dns_discard(blitz__pool_rec *rec) {
    blitz__dns_rec *d = (blitz__dns_rec *)rec;
    blitz__free(d->addrs);
    blitz__free(d->host);
}

BLITZ_API blitz_poll blitz_dns_resolve(blitz_cx *cx, blitz_dns_op *op, const char *host,
                                       uint16_t port, int family) {
    if (!op)
        return BLITZ_READY;
    blitz__pool_rec *done;
    if (!blitz__pool_op_idle(&op->blitz__op)) {
        if (blitz__pool_op_poll(cx, &op->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_dns_cancel, op);
        blitz__dns_rec *d = (blitz__dns_rec *)done;
        op->result = d->result;
        op->addrs = d->addrs;
        d->addrs = NULL;
        blitz__pool_rec_free(done);
        return BLITZ_READY;
    }
    op->addrs = NULL;
    size_t len = host ? strlen(host) + 1 : 0;
    if (!cx || len <= 1 || len > 1025 /* NI_MAXHOST */ ||
        (family != 0 && family != 4 && family != 6)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__dns_rec *d =
        (blitz__dns_rec *)blitz__pool_rec_new(sizeof *d, blitz__dns_exec, blitz__dns_discard);
    if (d)
        d->host = (char *)blitz__malloc(len);
    if (!d || !d->host) {
        if (d)
            blitz__pool_rec_free(&d->base);
        op->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    /* Port 0 with "name:port": the port comes from the name. */
    if (port != 0 || blitz_host_port_split(host, d->host, len, &d->port) != BLITZ_OK) {
        memcpy(d->host, host, len);
        d->port = port;
    }
    d->family = family;
    int err = 0;
    if (blitz__pool_op_start(cx, &op->blitz__op, &d->base, &err) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_dns_cancel, op);
    op->result = err;
    return BLITZ_READY;
}

BLITZ_API void blitz_dns_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_dns_op *d = (blitz_dns_op *)p;
    if (d)
        blitz__pool_op_cancel(&d->blitz__op);
}

static blitz_poll blitz__dns_value_poll(blitz_cx *cx, void *arg) {
    blitz_dns_op *op = (blitz_dns_op *)arg;
    return op ? blitz_dns_resolve(cx, op, op->blitz__host, op->blitz__port, op->blitz__family)
              : BLITZ_READY;
}
BLITZ_API blitz_op blitz_op_dns_resolve(blitz_dns_op *op, const char *host, uint16_t port,
                                        int family) {
    if (op) {
        op->blitz__host = host;
        op->blitz__port = port;
        op->blitz__family = family;
    }
    return blitz_op_make(blitz__dns_value_poll, blitz_dns_cancel, op);
}
/* ====[ END src/net/dns.c ]================================================ */
/* ====[ BEGIN src/net/connect_host.c ]===================================== */
/* >>net/connect_host */
/* Connecting by host name: a DNS lookup on the blocking pool, then one
 * connect attempt per address, in the resolver's order. */
/* src/io/io.h already included */

#define BLITZ__CONNECT_IDLE       0
#define BLITZ__CONNECT_RESOLVING  1
#define BLITZ__CONNECT_CONNECTING 2

static void blitz__connect_host_release_addrs(blitz_connect_op *op) {
    if (op->blitz__dns.addrs) {
        blitz_free(op->blitz__dns.addrs);
        op->blitz__dns.addrs = NULL;
    }
}

static blitz_poll blitz__connect_host_done(blitz_connect_op *op, int64_t result) {
    blitz__connect_host_release_addrs(op);
    op->result = result;
    op->blitz__stage = BLITZ__CONNECT_IDLE;
    return BLITZ_READY;
}

BLITZ_API blitz_poll blitz_tcp_connect_host(blitz_cx *cx, blitz_connect_op *op, const char *host,
                                            uint16_t port) {
    if (!op)
        return BLITZ_READY;
    if (op->blitz__stage == BLITZ__CONNECT_IDLE) {
        op->socket = NULL;
        op->attempts = 0;
        if (!cx || !host || !*host) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        memset(&op->blitz__dns, 0, sizeof op->blitz__dns);
        op->blitz__stage = BLITZ__CONNECT_RESOLVING;
    }
    if (op->blitz__stage == BLITZ__CONNECT_RESOLVING) {
        if (blitz_dns_resolve(cx, &op->blitz__dns, host, port, 0) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_tcp_connect_host_cancel, op);
        if (op->blitz__dns.result <= 0)
            return blitz__connect_host_done(op, op->blitz__dns.result < 0 ? op->blitz__dns.result
                                                                          : BLITZ_ENOHOST);
        op->blitz__next = 0;
        op->blitz__stage = BLITZ__CONNECT_CONNECTING;
        op->result = BLITZ_ECONNREFUSED;
        goto start_attempt;
    }
    for (;;) {
        /* An attempt is in progress: poll it. */
        if (blitz_tcp_connect_timeout(cx, &op->blitz__io, &op->blitz__addr,
                                      op->attempt_timeout_ns) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_tcp_connect_host_cancel, op);
        if (op->blitz__io.result == 0) {
            op->socket = op->blitz__io.socket;
            op->blitz__io.socket = NULL;
            return blitz__connect_host_done(op, 0);
        } else {
            op->result = op->blitz__io.result;
        }
        op->blitz__next++;
    start_attempt:
        if (op->blitz__next >= op->blitz__dns.result)
            return blitz__connect_host_done(op, op->result);
        {
            const blitz_resolved_addr *ra = &op->blitz__dns.addrs[op->blitz__next];
            memset(&op->blitz__addr, 0, sizeof op->blitz__addr);
            size_t len =
                ra->len < sizeof op->blitz__addr.u.bytes ? ra->len : sizeof op->blitz__addr.u.bytes;
            memcpy(op->blitz__addr.u.bytes, ra->addr.bytes, len);
            op->blitz__addr.len = (uint32_t)len;
        }
        op->attempts++;
    }
}

BLITZ_API void blitz_tcp_connect_host_cancel(blitz_cx *cx, void *opp) {
    blitz_connect_op *op = (blitz_connect_op *)opp;
    if (!op)
        return;
    if (op->blitz__stage == BLITZ__CONNECT_RESOLVING) {
        blitz_dns_cancel(cx, &op->blitz__dns);
    } else if (op->blitz__stage == BLITZ__CONNECT_CONNECTING) {
        blitz_io_cancel(NULL, &op->blitz__io);
    }
    if (op->blitz__stage != BLITZ__CONNECT_IDLE)
        blitz__connect_host_done(op, BLITZ_ECANCELED);
}

static blitz_poll blitz__connect_host_value_poll(blitz_cx *cx, void *arg) {
    blitz_connect_op *op = (blitz_connect_op *)arg;
    return op ? blitz_tcp_connect_host(cx, op, op->blitz__host, op->blitz__port) : BLITZ_READY;
}
BLITZ_API blitz_op blitz_op_tcp_connect_host(blitz_connect_op *op, const char *host,
                                             uint16_t port) {
    if (op) {
        op->blitz__host = host;
        op->blitz__port = port;
    }
    return blitz_op_make(blitz__connect_host_value_poll, blitz_tcp_connect_host_cancel, op);
}
/* ====[ END src/net/connect_host.c ]======================================= */
/* ########################################################################## */
/* LAYER os: files, signals, processes, streams                              */
/* ########################################################################## */
/* ====[ BEGIN src/os/fs.c ]================================================ */
/* >>os/fs */
/* Files: every operation is a pool op (blocking_pool.c) whose thread makes
 * the system calls. The public calls take the request, the op struct keeps
 * it, and one exec function carries it out, so a backend with native file
 * operations (io_uring) can take the same request from the op instead.
 *
 * Paths are copied (one allocation for both paths of a rename) when the
 * operation starts: a cancelled operation whose thread is still running
 * must not read the caller's string after the caller moved on. The thread
 * frees the copy when it is done; a cancel that takes the op out of the
 * queue frees it instead. */
/* src/io/io.h already included */

enum {
    BLITZ__FS_OPEN = 1,
    BLITZ__FS_CLOSE,
    BLITZ__FS_READ,
    BLITZ__FS_WRITE,
    BLITZ__FS_PREAD,
    BLITZ__FS_PWRITE,
    BLITZ__FS_READV,
    BLITZ__FS_WRITEV,
    BLITZ__FS_FSYNC,
    BLITZ__FS_FDATASYNC,
    BLITZ__FS_TRUNCATE,
    BLITZ__FS_STAT,
    BLITZ__FS_LSTAT,
    BLITZ__FS_FSTAT,
    BLITZ__FS_RENAME,
    BLITZ__FS_UNLINK,
    BLITZ__FS_RMDIR,
    BLITZ__FS_MKDIR,
    BLITZ__FS_MKDIR_ALL,
    BLITZ__FS_READ_DIR,
    BLITZ__FS_READ_FILE,
    BLITZ__FS_WRITE_FILE,
};

/* What a pool thread works on: the request, with copies of the paths
 * and of the data to write, and the results, reads landing in `buf`. */
typedef struct {
    blitz__pool_rec base;
    int kind, fd, flags;
    uint32_t mode;
    void *buf; /* owned: data to write, or room for what is read */
    size_t len;
    int64_t off;
    char *path, *path2; /* one allocation */
    blitz_fs_metadata md;
    int64_t result;
    void *data;
} blitz__fs_rec;

static int64_t blitz__fs_err(void) {
    return blitz__from_errno(errno);
}

static blitz_file_type blitz__fs_type_of_mode(mode_t m) {
    if (S_ISREG(m))
        return BLITZ_FILE_REGULAR;
    if (S_ISDIR(m))
        return BLITZ_FILE_DIRECTORY;
    if (S_ISLNK(m))
        return BLITZ_FILE_SYMLINK;
    return BLITZ_FILE_OTHER;
}

static uint64_t blitz__fs_ns(struct timespec ts) {
    return ts.tv_sec < 0 ? 0 : (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void blitz__fs_fill_metadata(blitz_fs_metadata *m, const struct stat *st) {
    memset(m, 0, sizeof *m);
    m->type = blitz__fs_type_of_mode(st->st_mode);
    m->mode = (uint32_t)(st->st_mode & 07777);
    m->size = st->st_size < 0 ? 0 : (uint64_t)st->st_size;
    struct timespec modified, accessed, changed;
    blitz__stat_times(st, &modified, &accessed, &changed);
    m->mtime_ns = blitz__fs_ns(modified);
    m->atime_ns = blitz__fs_ns(accessed);
    m->ctime_ns = blitz__fs_ns(changed);
    m->dev = (uint64_t)st->st_dev;
    m->ino = (uint64_t)st->st_ino;
    m->nlink = (uint64_t)st->st_nlink;
    m->uid = (uint32_t)st->st_uid;
    m->gid = (uint32_t)st->st_gid;
}

/* Writes everything, continuing after short writes and EINTR. */
static int64_t blitz__fs_write_all(int fd, const char *p, size_t len, int64_t off) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = off >= 0 ? pwrite(fd, p + done, len - done, (off_t)(off + (int64_t)done))
                             : write(fd, p + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE)
                blitz__consume_sigpipe();
            return blitz__fs_err();
        }
        if (n == 0)
            return BLITZ_EIO;
        done += (size_t)n;
    }
    return (int64_t)done;
}

static int64_t blitz__fs_read_some(int fd, void *buf, size_t len, int64_t off) {
    for (;;) {
        ssize_t n = off >= 0 ? pread(fd, buf, len, (off_t)off) : read(fd, buf, len);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return blitz__fs_err();
    }
}

static int64_t blitz__fs_mkdir_all(char *path, mode_t mode) {
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        path[--len] = '\0';
    for (char *p = path + 1;; p++) {
        int last = *p == '\0';
        if (*p != '/' && !last)
            continue;
        if (!last && p[-1] == '/')
            continue; /* doubled slash */
        char saved = *p;
        *p = '\0';
        if (mkdir(path, mode) != 0) {
            /* An existing directory is fine whatever mkdir said (it may
             * say EACCES for a parent we cannot write). */
            int e = errno;
            struct stat st;
            int exists = stat(path, &st) == 0;
            if (!exists || !S_ISDIR(st.st_mode)) {
                *p = saved;
                return blitz__from_errno(!exists ? e : last ? EEXIST : ENOTDIR);
            }
        }
        *p = saved;
        if (last)
            return 0;
    }
}

/* Growable buffer on BLITZ_MALLOC/BLITZ_FREE (there is no realloc hook). */
BLITZ_PRIVATE int blitz__grow_buffer(char **buf, size_t *cap, size_t used, size_t need) {
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return BLITZ_ENOMEM;
        ncap *= 2;
    }
    char *n = (char *)blitz__malloc(ncap);
    if (!n)
        return BLITZ_ENOMEM;
    if (used)
        memcpy(n, *buf, used);
    blitz__free(*buf);
    *buf = n;
    *cap = ncap;
    return 0;
}

static int64_t blitz__fs_read_file(const char *path, void **out) {
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return blitz__fs_err();
    struct stat st;
    size_t cap = 0, used = 0;
    char *buf = NULL;
    size_t hint = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    int64_t rc = blitz__grow_buffer(&buf, &cap, 0, hint);
    while (rc == 0) {
        if (used + 1 >= cap && (rc = blitz__grow_buffer(&buf, &cap, used, cap * 2)) != 0)
            break;
        int64_t n = blitz__fs_read_some(fd, buf + used, cap - used - 1, -1);
        if (n < 0)
            rc = n;
        else if (n == 0)
            break;
        else
            used += (size_t)n;
    }
    close(fd);
    if (rc != 0) {
        blitz__free(buf);
        return rc;
    }
    buf[used] = '\0';
    *out = buf;
    return (int64_t)used;
}

static int64_t blitz__fs_write_file(const char *path, const void *data, size_t len) {
    int fd;
    do
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return blitz__fs_err();
    int64_t rc = blitz__fs_write_all(fd, (const char *)data, len, -1);
    if (close(fd) != 0 && rc >= 0 && errno != EINTR)
        rc = blitz__fs_err();
    return rc;
}

static int blitz__fs_dirent_cmp(const void *a, const void *b) {
    return strcmp(((const blitz_fs_dirent *)a)->name, ((const blitz_fs_dirent *)b)->name);
}

/* One block: the entry array, then the names it points into. */
static int64_t blitz__fs_read_dir(const char *path, void **out) {
    DIR *d = opendir(path);
    if (!d)
        return blitz__fs_err();
    char *names = NULL, *types = NULL;
    size_t names_cap = 0, names_used = 0, types_cap = 0, count = 0;
    int64_t rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno)
                rc = blitz__fs_err();
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        size_t n = strlen(e->d_name) + 1;
        if ((rc = blitz__grow_buffer(&names, &names_cap, names_used, names_used + n)) != 0 ||
            (rc = blitz__grow_buffer(&types, &types_cap, count, count + 1)) != 0)
            break;
        memcpy(names + names_used, e->d_name, n);
        names_used += n;
        blitz_file_type t = BLITZ_FILE_UNKNOWN;
#ifdef DT_UNKNOWN
        switch (e->d_type) {
        case DT_REG:
            t = BLITZ_FILE_REGULAR;
            break;
        case DT_DIR:
            t = BLITZ_FILE_DIRECTORY;
            break;
        case DT_LNK:
            t = BLITZ_FILE_SYMLINK;
            break;
        case DT_UNKNOWN:
            break;
        default:
            t = BLITZ_FILE_OTHER;
        }
#endif
        types[count++] = (char)t;
    }
    closedir(d);
    blitz_fs_dirent *list = NULL;
    if (rc == 0) {
        size_t head = (count ? count : 1) * sizeof(blitz_fs_dirent);
        list = (blitz_fs_dirent *)blitz__malloc(head + names_used);
        if (!list) {
            rc = BLITZ_ENOMEM;
        } else {
            char *copy = (char *)list + head;
            if (names_used)
                memcpy(copy, names, names_used);
            for (size_t i = 0; i < count; i++) {
                list[i].name = copy;
                list[i].type = (blitz_file_type)types[i];
                copy += strlen(copy) + 1;
            }
            qsort(list, count, sizeof *list, blitz__fs_dirent_cmp);
        }
    }
    blitz__free(names);
    blitz__free(types);
    if (rc != 0)
        return rc;
    *out = list;
    return (int64_t)count;
}

static int blitz__fs_open_flags(int flags, int *out) {
    if (flags & ~(BLITZ_FS_READ | BLITZ_FS_WRITE | BLITZ_FS_APPEND | BLITZ_FS_CREATE |
                  BLITZ_FS_TRUNCATE | BLITZ_FS_EXCL))
        return BLITZ_EINVAL;
    int w = (flags & (BLITZ_FS_WRITE | BLITZ_FS_APPEND)) != 0, r = (flags & BLITZ_FS_READ) != 0;
    if (!w && !r)
        return BLITZ_EINVAL;
    int o = (r && w) ? O_RDWR : w ? O_WRONLY : O_RDONLY;
    if (flags & BLITZ_FS_APPEND)
        o |= O_APPEND;
    if (flags & BLITZ_FS_CREATE)
        o |= O_CREAT;
    if (flags & BLITZ_FS_TRUNCATE)
        o |= O_TRUNC;
    if (flags & BLITZ_FS_EXCL)
        o |= O_EXCL;
    *out = o | O_CLOEXEC;
    return 0;
}

static int64_t blitz__fs_stat_result(int rc, blitz_fs_metadata *out, const struct stat *st) {
    if (rc != 0)
        return blitz__fs_err();
    blitz__fs_fill_metadata(out, st);
    return 0;
}

static int64_t blitz__fs_do(blitz__fs_rec *f) {
    struct stat st;
    int rc;
    switch (f->kind) {
    case BLITZ__FS_OPEN:
        do
            rc = open(f->path, f->flags, (mode_t)f->mode);
        while (rc < 0 && errno == EINTR);
        return rc < 0 ? blitz__fs_err() : rc;
    case BLITZ__FS_CLOSE:
        /* Linux releases the descriptor even when close reports EINTR. */
        return close(f->fd) == 0 || errno == EINTR ? 0 : blitz__fs_err();
    case BLITZ__FS_READ:
    case BLITZ__FS_PREAD:
    case BLITZ__FS_READV:
        return blitz__fs_read_some(f->fd, f->buf, f->len, f->off);
    case BLITZ__FS_WRITE:
    case BLITZ__FS_PWRITE:
    case BLITZ__FS_WRITEV:
        return blitz__fs_write_all(f->fd, (const char *)f->buf, f->len, f->off);
    case BLITZ__FS_FSYNC:
        return fsync(f->fd) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_FDATASYNC:
        return blitz__fdatasync(f->fd) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_TRUNCATE:
        return ftruncate(f->fd, (off_t)f->off) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_STAT:
        return blitz__fs_stat_result(stat(f->path, &st), &f->md, &st);
    case BLITZ__FS_LSTAT:
        return blitz__fs_stat_result(lstat(f->path, &st), &f->md, &st);
    case BLITZ__FS_FSTAT:
        return blitz__fs_stat_result(fstat(f->fd, &st), &f->md, &st);
    case BLITZ__FS_RENAME:
        return rename(f->path, f->path2) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_UNLINK:
        return unlink(f->path) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_RMDIR:
        return rmdir(f->path) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_MKDIR:
        return mkdir(f->path, (mode_t)f->mode) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_MKDIR_ALL:
        return blitz__fs_mkdir_all(f->path, (mode_t)f->mode);
    case BLITZ__FS_READ_DIR:
        return blitz__fs_read_dir(f->path, &f->data);
    case BLITZ__FS_READ_FILE:
        return blitz__fs_read_file(f->path, &f->data);
    case BLITZ__FS_WRITE_FILE:
        return blitz__fs_write_file(f->path, f->buf, f->len);
    default:
        return BLITZ_EINVAL;
    }
}

static void blitz__fs_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__fs_rec *f = (blitz__fs_rec *)rec;
    f->result = cancelled ? BLITZ_ECANCELED : blitz__fs_do(f);
}

/* Frees what the record still holds; an opened file nobody took is
 * closed. */
static void blitz__fs_discard(blitz__pool_rec *rec) {
    blitz__fs_rec *f = (blitz__fs_rec *)rec;
    if (f->kind == BLITZ__FS_OPEN && f->result >= 0)
        close((int)f->result);
    blitz__free(f->data);
    blitz__free(f->buf);
    blitz__free(f->path);
}

/* Copies the path(s) into the record. */
static int blitz__fs_set_paths(blitz__fs_rec *f, const char *a, const char *b) {
    size_t la = strlen(a) + 1, lb = b ? strlen(b) + 1 : 0;
    char *p = (char *)blitz__malloc(la + lb);
    if (!p)
        return BLITZ_ENOMEM;
    memcpy(p, a, la);
    if (b)
        memcpy(p + la, b, lb);
    f->path = p;
    f->path2 = b ? p + la : NULL;
    return 0;
}

/* A request, as the public calls describe it. */
typedef struct {
    int kind, fd, flags;
    uint32_t mode;
    const void *buf; /* data to write; where a read goes */
    size_t len;
    int64_t off;
    const char *path, *path2;
    const blitz_iovec *iov;
    int iovcnt;
    blitz_fs_metadata *md;
} blitz__fs_req;

static int blitz__fs_is_read(int kind) {
    return kind == BLITZ__FS_READ || kind == BLITZ__FS_PREAD || kind == BLITZ__FS_READV;
}

/* Builds the record: copies of paths and of data to write, room for a
 * read. */
static int blitz__fs_rec_fill(blitz__fs_rec *f, const blitz__fs_req *r) {
    f->kind = r->kind;
    f->fd = r->fd;
    f->flags = r->flags;
    f->mode = r->mode;
    f->off = r->off;
    f->result = -1;
    if (r->path && blitz__fs_set_paths(f, r->path, r->path2) != 0)
        return BLITZ_ENOMEM;
    size_t len = r->len;
    if (r->iov) {
        len = 0;
        for (int i = 0; i < r->iovcnt; i++) {
            if (!r->iov[i].base && r->iov[i].len)
                return BLITZ_EFAULT;
            if (r->iov[i].len > SIZE_MAX - len)
                return BLITZ_EINVAL;
            len += r->iov[i].len;
        }
    }
    if (blitz__fs_is_read(r->kind) && len > BLITZ_FS_MAX_READ)
        len = BLITZ_FS_MAX_READ;
    f->len = len;
    if (len && (blitz__fs_is_read(r->kind) || r->buf || r->iov)) {
        f->buf = blitz__malloc(len);
        if (!f->buf)
            return BLITZ_ENOMEM;
        if (!blitz__fs_is_read(r->kind)) {
            if (r->iov) {
                size_t at = 0;
                for (int i = 0; i < r->iovcnt; i++) {
                    if (r->iov[i].len)
                        memcpy((char *)f->buf + at, r->iov[i].base, r->iov[i].len);
                    at += r->iov[i].len;
                }
            } else {
                memcpy(f->buf, r->buf, len);
            }
        }
    }
    return 0;
}

/* Moves the results of a finished record into the op and the caller's
 * buffers. */
static void blitz__fs_take(blitz_fs_op *op, blitz__fs_rec *f) {
    op->result = f->result;
    if (f->result > 0 && blitz__fs_is_read(f->kind)) {
        if (op->blitz__iov) {
            size_t at = 0, left = (size_t)f->result;
            for (int i = 0; i < op->blitz__iovcnt && left; i++) {
                size_t n = op->blitz__iov[i].len < left ? op->blitz__iov[i].len : left;
                if (n)
                    memcpy(op->blitz__iov[i].base, (char *)f->buf + at, n);
                at += n;
                left -= n;
            }
        } else {
            memcpy(op->blitz__out, f->buf, (size_t)f->result);
        }
    }
    if (f->result == 0 &&
        (f->kind == BLITZ__FS_STAT || f->kind == BLITZ__FS_LSTAT || f->kind == BLITZ__FS_FSTAT))
        *(blitz_fs_metadata *)op->blitz__out = f->md;
    op->data = f->data;
    f->data = NULL;
    f->result = -1; /* an opened file is the caller's now */
    blitz__pool_rec_free(&f->base);
}

/* The shared body of every public call: a new request starts the op, an
 * op in flight is polled. */
static blitz_poll blitz__fs_call(blitz_cx *cx, blitz_fs_op *f, const blitz__fs_req *r) {
    if (!f)
        return BLITZ_READY;
    blitz__pool_rec *done;
    if (!blitz__pool_op_idle(&f->blitz__op)) {
        if (blitz__pool_op_poll(cx, &f->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_fs_cancel, f);
        blitz__fs_take(f, (blitz__fs_rec *)done);
        return BLITZ_READY;
    }
    f->data = NULL;
    if (!cx) {
        f->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__fs_rec *rec =
        (blitz__fs_rec *)blitz__pool_rec_new(sizeof *rec, blitz__fs_exec, blitz__fs_discard);
    if (!rec) {
        f->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    int rc = blitz__fs_rec_fill(rec, r);
    if (rc != 0) {
        blitz__pool_rec_free(&rec->base);
        f->result = rc;
        return BLITZ_READY;
    }
    f->blitz__out = r->md ? (void *)r->md : (void *)(uintptr_t)r->buf;
    f->blitz__iov = r->iov;
    f->blitz__iovcnt = r->iovcnt;
    if (blitz__pool_op_start(cx, &f->blitz__op, &rec->base, &rc) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_fs_cancel, f);
    f->result = rc;
    return BLITZ_READY;
}

static blitz__fs_req blitz__fs_req_new(int kind) {
    blitz__fs_req r;
    memset(&r, 0, sizeof r);
    r.kind = kind;
    r.fd = -1;
    r.off = -1;
    return r;
}

/* An argument error known before anything starts. */
static blitz_poll blitz__fs_fail(blitz_cx *cx, blitz_fs_op *f, int err) {
    if (f && blitz__pool_op_idle(&f->blitz__op)) {
        f->data = NULL;
        f->result = err;
        return BLITZ_READY;
    }
    blitz__fs_req none = blitz__fs_req_new(0);
    return blitz__fs_call(cx, f, &none);
}
BLITZ_API blitz_poll blitz_fs_open(blitz_cx *cx, blitz_fs_op *op, const char *path, int flags,
                                   uint32_t mode) {
    blitz__fs_req r = blitz__fs_req_new(BLITZ__FS_OPEN);
    if (blitz__fs_open_flags(flags, &r.flags) != 0 || !path)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    r.mode = mode;
    r.path = path;
    return blitz__fs_call(cx, op, &r);
}

static blitz_poll blitz__fs_fd_call(blitz_cx *cx, blitz_fs_op *op, int kind, int fd) {
    if (fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.fd = fd;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_close(blitz_cx *cx, blitz_fs_op *op, int fd) {
    return blitz__fs_fd_call(cx, op, BLITZ__FS_CLOSE, fd);
}
BLITZ_API blitz_poll blitz_fs_fsync(blitz_cx *cx, blitz_fs_op *op, int fd) {
    return blitz__fs_fd_call(cx, op, BLITZ__FS_FSYNC, fd);
}
BLITZ_API blitz_poll blitz_fs_fdatasync(blitz_cx *cx, blitz_fs_op *op, int fd) {
    return blitz__fs_fd_call(cx, op, BLITZ__FS_FDATASYNC, fd);
}

static blitz_poll blitz__fs_io(blitz_cx *cx, blitz_fs_op *op, int kind, int fd, const void *buf,
                               size_t len, int64_t off) {
    if (fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    if (!buf && len)
        return blitz__fs_fail(cx, op, BLITZ_EFAULT);
    if (off < -1 || (len > (size_t)INT64_MAX))
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.fd = fd;
    r.buf = buf;
    r.len = len;
    r.off = off;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_read(blitz_cx *cx, blitz_fs_op *op, int fd, void *buf, size_t len) {
    return blitz__fs_io(cx, op, BLITZ__FS_READ, fd, buf, len, -1);
}
BLITZ_API blitz_poll blitz_fs_write(blitz_cx *cx, blitz_fs_op *op, int fd, const void *buf,
                                    size_t len) {
    return blitz__fs_io(cx, op, BLITZ__FS_WRITE, fd, buf, len, -1);
}
BLITZ_API blitz_poll blitz_fs_pread(blitz_cx *cx, blitz_fs_op *op, int fd, void *buf, size_t len,
                                    uint64_t offset) {
    if (offset > (uint64_t)INT64_MAX)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    return blitz__fs_io(cx, op, BLITZ__FS_PREAD, fd, buf, len, (int64_t)offset);
}
BLITZ_API blitz_poll blitz_fs_pwrite(blitz_cx *cx, blitz_fs_op *op, int fd, const void *buf,
                                     size_t len, uint64_t offset) {
    if (offset > (uint64_t)INT64_MAX)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    return blitz__fs_io(cx, op, BLITZ__FS_PWRITE, fd, buf, len, (int64_t)offset);
}

static blitz_poll blitz__fs_vec(blitz_cx *cx, blitz_fs_op *op, int kind, int fd,
                                const blitz_iovec *iov, int iovcnt, int64_t offset) {
    if (!iov || iovcnt <= 0 || iovcnt > IOV_MAX || offset < -1)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    if (fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.fd = fd;
    r.iov = iov;
    r.iovcnt = iovcnt;
    r.off = offset;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_readv(blitz_cx *cx, blitz_fs_op *op, int fd, const blitz_iovec *iov,
                                    int iovcnt, int64_t offset) {
    return blitz__fs_vec(cx, op, BLITZ__FS_READV, fd, iov, iovcnt, offset);
}
BLITZ_API blitz_poll blitz_fs_writev(blitz_cx *cx, blitz_fs_op *op, int fd, const blitz_iovec *iov,
                                     int iovcnt, int64_t offset) {
    return blitz__fs_vec(cx, op, BLITZ__FS_WRITEV, fd, iov, iovcnt, offset);
}

BLITZ_API blitz_poll blitz_fs_truncate(blitz_cx *cx, blitz_fs_op *op, int fd, uint64_t length) {
    if (length > (uint64_t)INT64_MAX)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    if (fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    blitz__fs_req r = blitz__fs_req_new(BLITZ__FS_TRUNCATE);
    r.fd = fd;
    r.off = (int64_t)length;
    return blitz__fs_call(cx, op, &r);
}

static blitz_poll blitz__fs_stat_call(blitz_cx *cx, blitz_fs_op *op, int kind, const char *path,
                                      int fd, blitz_fs_metadata *out) {
    if (!out || (kind != BLITZ__FS_FSTAT && !path))
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    if (kind == BLITZ__FS_FSTAT && fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.fd = fd;
    r.md = out;
    r.path = path;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_stat(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                   blitz_fs_metadata *out) {
    return blitz__fs_stat_call(cx, op, BLITZ__FS_STAT, path, -1, out);
}
BLITZ_API blitz_poll blitz_fs_lstat(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                    blitz_fs_metadata *out) {
    return blitz__fs_stat_call(cx, op, BLITZ__FS_LSTAT, path, -1, out);
}
BLITZ_API blitz_poll blitz_fs_fstat(blitz_cx *cx, blitz_fs_op *op, int fd, blitz_fs_metadata *out) {
    return blitz__fs_stat_call(cx, op, BLITZ__FS_FSTAT, NULL, fd, out);
}

static blitz_poll blitz__fs_path_call(blitz_cx *cx, blitz_fs_op *op, int kind, const char *path,
                                      const char *path2, uint32_t mode) {
    if (!path || (kind == BLITZ__FS_RENAME && !path2))
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.path = path;
    r.path2 = path2;
    r.mode = mode;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_rename(blitz_cx *cx, blitz_fs_op *op, const char *from,
                                     const char *to) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_RENAME, from, to, 0);
}
BLITZ_API blitz_poll blitz_fs_unlink(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_UNLINK, path, NULL, 0);
}
BLITZ_API blitz_poll blitz_fs_rmdir(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_RMDIR, path, NULL, 0);
}
BLITZ_API blitz_poll blitz_fs_mkdir(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                    uint32_t mode) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_MKDIR, path, NULL, mode);
}
BLITZ_API blitz_poll blitz_fs_mkdir_all(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                        uint32_t mode) {
    if (path && !*path)
        return blitz__fs_fail(cx, op, BLITZ_ENOENT);
    return blitz__fs_path_call(cx, op, BLITZ__FS_MKDIR_ALL, path, NULL, mode);
}
BLITZ_API blitz_poll blitz_fs_read_dir(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_READ_DIR, path, NULL, 0);
}
BLITZ_API blitz_poll blitz_fs_read_file(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_READ_FILE, path, NULL, 0);
}
BLITZ_API blitz_poll blitz_fs_write_file(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                         const void *data, size_t len) {
    if (!path)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    if (!data && len)
        return blitz__fs_fail(cx, op, BLITZ_EFAULT);
    blitz__fs_req r = blitz__fs_req_new(BLITZ__FS_WRITE_FILE);
    r.path = path;
    r.buf = data;
    r.len = len;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API void blitz_fs_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_fs_op *f = (blitz_fs_op *)p;
    if (f)
        blitz__pool_op_cancel(&f->blitz__op);
}

/* ---- file ops as values ------------------------------------------------------------------- */

/* The call a constructor recorded (the public calls read their arguments
 * at the first poll only). */
enum {
    BLITZ__FSC_OPEN = 1,
    BLITZ__FSC_CLOSE,
    BLITZ__FSC_READ,
    BLITZ__FSC_WRITE,
    BLITZ__FSC_PREAD,
    BLITZ__FSC_PWRITE,
    BLITZ__FSC_FSYNC,
    BLITZ__FSC_READ_FILE,
    BLITZ__FSC_WRITE_FILE,
    BLITZ__FSC_READV,
    BLITZ__FSC_WRITEV,
    BLITZ__FSC_FDATASYNC,
    BLITZ__FSC_TRUNCATE,
    BLITZ__FSC_STAT,
    BLITZ__FSC_LSTAT,
    BLITZ__FSC_FSTAT,
    BLITZ__FSC_RENAME,
    BLITZ__FSC_UNLINK,
    BLITZ__FSC_RMDIR,
    BLITZ__FSC_MKDIR,
    BLITZ__FSC_MKDIR_ALL,
    BLITZ__FSC_READ_DIR
};

/* The vectored calls' signed offset (-1: the file position), kept in the
 * unsigned offset field. */
static int64_t blitz__fs_signed(uint64_t v) {
    return v <= (uint64_t)INT64_MAX ? (int64_t)v : -(int64_t)~v - 1;
}

static blitz_poll blitz__fs_value_poll(blitz_cx *cx, void *arg) {
    blitz_fs_op *op = (blitz_fs_op *)arg;
    if (!op)
        return BLITZ_READY;
    void *buf = (void *)(uintptr_t)op->blitz__buf;
    switch (op->blitz__call) {
    case BLITZ__FSC_OPEN:
        return blitz_fs_open(cx, op, op->blitz__path, op->blitz__flags, op->blitz__mode);
    case BLITZ__FSC_CLOSE:
        return blitz_fs_close(cx, op, op->blitz__fd);
    case BLITZ__FSC_READ:
        return blitz_fs_read(cx, op, op->blitz__fd, buf, op->blitz__len);
    case BLITZ__FSC_WRITE:
        return blitz_fs_write(cx, op, op->blitz__fd, buf, op->blitz__len);
    case BLITZ__FSC_PREAD:
        return blitz_fs_pread(cx, op, op->blitz__fd, buf, op->blitz__len, op->blitz__off);
    case BLITZ__FSC_PWRITE:
        return blitz_fs_pwrite(cx, op, op->blitz__fd, buf, op->blitz__len, op->blitz__off);
    case BLITZ__FSC_FSYNC:
        return blitz_fs_fsync(cx, op, op->blitz__fd);
    case BLITZ__FSC_READ_FILE:
        return blitz_fs_read_file(cx, op, op->blitz__path);
    case BLITZ__FSC_WRITE_FILE:
        return blitz_fs_write_file(cx, op, op->blitz__path, buf, op->blitz__len);
    case BLITZ__FSC_READV:
        return blitz_fs_readv(cx, op, op->blitz__fd, op->blitz__vec, op->blitz__nvec,
                              blitz__fs_signed(op->blitz__off));
    case BLITZ__FSC_WRITEV:
        return blitz_fs_writev(cx, op, op->blitz__fd, op->blitz__vec, op->blitz__nvec,
                               blitz__fs_signed(op->blitz__off));
    case BLITZ__FSC_FDATASYNC:
        return blitz_fs_fdatasync(cx, op, op->blitz__fd);
    case BLITZ__FSC_TRUNCATE:
        return blitz_fs_truncate(cx, op, op->blitz__fd, op->blitz__off);
    case BLITZ__FSC_STAT:
        return blitz_fs_stat(cx, op, op->blitz__path, op->blitz__md);
    case BLITZ__FSC_LSTAT:
        return blitz_fs_lstat(cx, op, op->blitz__path, op->blitz__md);
    case BLITZ__FSC_FSTAT:
        return blitz_fs_fstat(cx, op, op->blitz__fd, op->blitz__md);
    case BLITZ__FSC_RENAME:
        return blitz_fs_rename(cx, op, op->blitz__path, op->blitz__path2);
    case BLITZ__FSC_UNLINK:
        return blitz_fs_unlink(cx, op, op->blitz__path);
    case BLITZ__FSC_RMDIR:
        return blitz_fs_rmdir(cx, op, op->blitz__path);
    case BLITZ__FSC_MKDIR:
        return blitz_fs_mkdir(cx, op, op->blitz__path, op->blitz__mode);
    case BLITZ__FSC_MKDIR_ALL:
        return blitz_fs_mkdir_all(cx, op, op->blitz__path, op->blitz__mode);
    case BLITZ__FSC_READ_DIR:
        return blitz_fs_read_dir(cx, op, op->blitz__path);
    default:
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    }
}

static blitz_op blitz__fs_value(blitz_fs_op *op, int call, int fd, const char *path,
                                const void *buf, size_t len, uint64_t off) {
    if (op) {
        op->blitz__call = call;
        op->blitz__fd = fd;
        op->blitz__path = path;
        op->blitz__buf = buf;
        op->blitz__len = len;
        op->blitz__off = off;
        op->blitz__path2 = NULL;
        op->blitz__vec = NULL;
        op->blitz__nvec = 0;
        op->blitz__md = NULL;
    }
    return blitz_op_make(blitz__fs_value_poll, blitz_fs_cancel, op);
}

BLITZ_API blitz_op blitz_op_fs_open(blitz_fs_op *op, const char *path, int flags, uint32_t mode) {
    if (op) {
        op->blitz__flags = flags;
        op->blitz__mode = mode;
    }
    return blitz__fs_value(op, BLITZ__FSC_OPEN, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_close(blitz_fs_op *op, int fd) {
    return blitz__fs_value(op, BLITZ__FSC_CLOSE, fd, NULL, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_read(blitz_fs_op *op, int fd, void *buf, size_t len) {
    return blitz__fs_value(op, BLITZ__FSC_READ, fd, NULL, buf, len, 0);
}
BLITZ_API blitz_op blitz_op_fs_write(blitz_fs_op *op, int fd, const void *buf, size_t len) {
    return blitz__fs_value(op, BLITZ__FSC_WRITE, fd, NULL, buf, len, 0);
}
BLITZ_API blitz_op blitz_op_fs_pread(blitz_fs_op *op, int fd, void *buf, size_t len,
                                     uint64_t offset) {
    return blitz__fs_value(op, BLITZ__FSC_PREAD, fd, NULL, buf, len, offset);
}
BLITZ_API blitz_op blitz_op_fs_pwrite(blitz_fs_op *op, int fd, const void *buf, size_t len,
                                      uint64_t offset) {
    return blitz__fs_value(op, BLITZ__FSC_PWRITE, fd, NULL, buf, len, offset);
}
BLITZ_API blitz_op blitz_op_fs_fsync(blitz_fs_op *op, int fd) {
    return blitz__fs_value(op, BLITZ__FSC_FSYNC, fd, NULL, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_read_file(blitz_fs_op *op, const char *path) {
    return blitz__fs_value(op, BLITZ__FSC_READ_FILE, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_write_file(blitz_fs_op *op, const char *path, const void *data,
                                          size_t len) {
    return blitz__fs_value(op, BLITZ__FSC_WRITE_FILE, -1, path, data, len, 0);
}

static blitz_op blitz__fs_vec_value(blitz_fs_op *op, int call, int fd, const blitz_iovec *iov,
                                    int iovcnt, int64_t offset) {
    blitz_op v = blitz__fs_value(op, call, fd, NULL, NULL, 0, (uint64_t)offset);
    if (op) {
        op->blitz__vec = iov;
        op->blitz__nvec = iovcnt;
    }
    return v;
}
BLITZ_API blitz_op blitz_op_fs_readv(blitz_fs_op *op, int fd, const blitz_iovec *iov, int iovcnt,
                                     int64_t offset) {
    return blitz__fs_vec_value(op, BLITZ__FSC_READV, fd, iov, iovcnt, offset);
}
BLITZ_API blitz_op blitz_op_fs_writev(blitz_fs_op *op, int fd, const blitz_iovec *iov, int iovcnt,
                                      int64_t offset) {
    return blitz__fs_vec_value(op, BLITZ__FSC_WRITEV, fd, iov, iovcnt, offset);
}
BLITZ_API blitz_op blitz_op_fs_fdatasync(blitz_fs_op *op, int fd) {
    return blitz__fs_value(op, BLITZ__FSC_FDATASYNC, fd, NULL, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_truncate(blitz_fs_op *op, int fd, uint64_t length) {
    return blitz__fs_value(op, BLITZ__FSC_TRUNCATE, fd, NULL, NULL, 0, length);
}

static blitz_op blitz__fs_stat_value(blitz_fs_op *op, int call, int fd, const char *path,
                                     blitz_fs_metadata *out) {
    blitz_op v = blitz__fs_value(op, call, fd, path, NULL, 0, 0);
    if (op)
        op->blitz__md = out;
    return v;
}
BLITZ_API blitz_op blitz_op_fs_stat(blitz_fs_op *op, const char *path, blitz_fs_metadata *out) {
    return blitz__fs_stat_value(op, BLITZ__FSC_STAT, -1, path, out);
}
BLITZ_API blitz_op blitz_op_fs_lstat(blitz_fs_op *op, const char *path, blitz_fs_metadata *out) {
    return blitz__fs_stat_value(op, BLITZ__FSC_LSTAT, -1, path, out);
}
BLITZ_API blitz_op blitz_op_fs_fstat(blitz_fs_op *op, int fd, blitz_fs_metadata *out) {
    return blitz__fs_stat_value(op, BLITZ__FSC_FSTAT, fd, NULL, out);
}

BLITZ_API blitz_op blitz_op_fs_rename(blitz_fs_op *op, const char *from, const char *to) {
    blitz_op v = blitz__fs_value(op, BLITZ__FSC_RENAME, -1, from, NULL, 0, 0);
    if (op)
        op->blitz__path2 = to;
    return v;
}
BLITZ_API blitz_op blitz_op_fs_unlink(blitz_fs_op *op, const char *path) {
    return blitz__fs_value(op, BLITZ__FSC_UNLINK, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_rmdir(blitz_fs_op *op, const char *path) {
    return blitz__fs_value(op, BLITZ__FSC_RMDIR, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_mkdir(blitz_fs_op *op, const char *path, uint32_t mode) {
    if (op)
        op->blitz__mode = mode;
    return blitz__fs_value(op, BLITZ__FSC_MKDIR, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_mkdir_all(blitz_fs_op *op, const char *path, uint32_t mode) {
    if (op)
        op->blitz__mode = mode;
    return blitz__fs_value(op, BLITZ__FSC_MKDIR_ALL, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_read_dir(blitz_fs_op *op, const char *path) {
    return blitz__fs_value(op, BLITZ__FSC_READ_DIR, -1, path, NULL, 0, 0);
}
/* ====[ END src/os/fs.c ]================================================== */
/* ====[ BEGIN src/os/signal.c ]============================================ */
/* >>os/signal */
/* Signals: a counting handler, a self-pipe, and one thread per process
 * that turns counts into wake-ups.
 *
 * Why a handler and not sigwait/signalfd: those need the signal blocked in
 * every thread of the process, and a thread blitz did not create (main,
 * or the program's own) may leave it unblocked; a process-directed signal
 * that lands there takes its default action and kills the process. A
 * handler works in whichever thread the kernel picks. It only does what
 * is async-signal-safe: an atomic add to the signal's counter and a
 * one-byte write to the pipe (non-blocking: when the pipe is full, a wake-
 * up is already pending and the counter carries the count).
 *
 * The signal thread blocks every signal, sleeps in read() on the pipe,
 * and, under `lock`, moves each counter into the listeners of that signal
 * and wakes their waiting tasks. `lock` also guards the listener list and
 * the per-signal handler reference counts. */
/* src/io/io.h already included */

#define BLITZ__SIG_MAX 64

static struct {
    pthread_once_t once;
    int init_rc;
    blitz__mutex lock;
    blitz_signal *head;
    uint32_t refs[BLITZ__SIG_MAX + 1];
    struct sigaction saved[BLITZ__SIG_MAX + 1];
    blitz__atomic_u32 counts[BLITZ__SIG_MAX + 1];
    int pipe_r, pipe_w;
} blitz__sig = {.once = PTHREAD_ONCE_INIT};

static void blitz__sig_handler(int signo) {
    int saved = errno;
    if (signo > 0 && signo <= BLITZ__SIG_MAX) {
        /* Release: the signal thread's swap (acq_rel) sees the count
         * whenever it sees the byte written after it. */
        blitz__u32_fetch_add(&blitz__sig.counts[signo], 1, BLITZ__RELEASE);
        char b = (char)signo;
        ssize_t n = write(blitz__sig.pipe_w, &b, 1);
        (void)n;
    }
    errno = saved;
}

/* Caller holds the lock. */
static void blitz__sig_dispatch(void) {
    for (int n = 1; n <= BLITZ__SIG_MAX; n++) {
        uint32_t c = blitz__u32_swap(&blitz__sig.counts[n], 0, BLITZ__ACQ_REL);
        if (!c)
            continue;
        uint64_t bit = (uint64_t)1 << (n - 1);
        for (blitz_signal *s = blitz__sig.head; s; s = s->blitz__next) {
            if (!(s->blitz__mask & bit))
                continue;
            s->blitz__arrived |= bit;
            s->blitz__pending += c;
            if (s->blitz__has_waker) {
                s->blitz__has_waker = 0;
                blitz_waker_wake(s->blitz__waker);
            }
        }
    }
}

static void *blitz__sig_thread(void *arg) {
    (void)arg;
    for (;;) {
        char buf[64];
        ssize_t n = read(blitz__sig.pipe_r, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL; /* the pipe is never closed: cannot happen */
        blitz__mutex_lock(&blitz__sig.lock);
        blitz__sig_dispatch();
        blitz__mutex_unlock(&blitz__sig.lock);
    }
}

static int blitz__sig_cloexec(int fd, int nonblock) {
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
        return -1;
    if (nonblock) {
        fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
            return -1;
    }
    return 0;
}

static void blitz__sig_init_once(void) {
    int rc = blitz__mutex_init(&blitz__sig.lock);
    int fds[2];
    if (rc == 0 && pipe(fds) != 0)
        rc = blitz__from_errno(errno);
    if (rc == 0) {
        if (blitz__sig_cloexec(fds[0], 0) != 0 || blitz__sig_cloexec(fds[1], 1) != 0) {
            rc = blitz__from_errno(errno);
            close(fds[0]);
            close(fds[1]);
        }
    }
    if (rc == 0) {
        blitz__sig.pipe_r = blitz__fd_above_stdio(fds[0]);
        blitz__sig.pipe_w = blitz__fd_above_stdio(fds[1]);
        /* The thread starts with every signal blocked (it inherits the
         * mask), so no handler ever runs on it. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t th;
        rc = blitz__thread_start(&th, blitz__sig_thread, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc == 0)
            pthread_detach(th);
    }
    blitz__sig.init_rc = rc;
}

static int blitz__sig_valid(int signo) {
    if (signo < 1 || signo > BLITZ__SIG_MAX)
        return 0;
#ifdef NSIG
    if (signo >= NSIG)
        return 0;
#endif
    switch (signo) {
    case SIGKILL:
    case SIGSTOP:
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
        return 0;
    default:
        return 1;
    }
}

/* Caller holds the lock. */
static int blitz__sig_ref(int signo) {
    if (blitz__sig.refs[signo]++ > 0)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = blitz__sig_handler;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(signo, &sa, &blitz__sig.saved[signo]) != 0) {
        blitz__sig.refs[signo]--;
        return blitz__from_errno(errno);
    }
    return 0;
}

static void blitz__sig_unref(int signo) {
    if (--blitz__sig.refs[signo] == 0)
        sigaction(signo, &blitz__sig.saved[signo], NULL);
}

/* Nonzero when `s` is a registered listener (caller holds the lock). The
 * list is searched rather than trusting s's own fields, which may be
 * garbage for a listener never initialised. */
static int blitz__sig_registered(const blitz_signal *s) {
    for (blitz_signal *x = blitz__sig.head; x; x = x->blitz__next)
        if (x == s)
            return 1;
    return 0;
}

BLITZ_API int blitz_signal_init(blitz_signal *s, int signo) {
    if (!s || !blitz__sig_valid(signo))
        return BLITZ_EINVAL;
    pthread_once(&blitz__sig.once, blitz__sig_init_once);
    if (blitz__sig.init_rc != 0)
        return blitz__sig.init_rc;
    blitz__mutex_lock(&blitz__sig.lock);
    int rc = BLITZ_OK;
    for (blitz_signal *x = blitz__sig.head; x; x = x->blitz__next)
        if (x == s)
            rc = BLITZ_EBUSY;
    if (rc == BLITZ_OK)
        rc = blitz__sig_ref(signo);
    if (rc == BLITZ_OK) {
        memset(s, 0, sizeof *s);
        s->blitz__mask = (uint64_t)1 << (signo - 1);
        s->blitz__next = blitz__sig.head;
        if (blitz__sig.head)
            blitz__sig.head->blitz__prev = s;
        blitz__sig.head = s;
    }
    blitz__mutex_unlock(&blitz__sig.lock);
    return rc;
}

static int blitz__sig_ready(void) {
    pthread_once(&blitz__sig.once, blitz__sig_init_once);
    return blitz__sig.init_rc == 0;
}

BLITZ_API int blitz_signal_add(blitz_signal *s, int signo) {
    if (!s || !blitz__sig_valid(signo) || !blitz__sig_ready())
        return BLITZ_EINVAL;
    blitz__mutex_lock(&blitz__sig.lock);
    int rc = BLITZ_EINVAL;
    if (blitz__sig_registered(s)) {
        uint64_t bit = (uint64_t)1 << (signo - 1);
        rc = (s->blitz__mask & bit) ? BLITZ_OK : blitz__sig_ref(signo);
        if (rc == BLITZ_OK)
            s->blitz__mask |= bit;
    }
    blitz__mutex_unlock(&blitz__sig.lock);
    return rc;
}

/* Caller holds the lock; something arrived. */
static void blitz__sig_take(blitz_signal *s) {
    s->signo = __builtin_ctzll(s->blitz__arrived) + 1;
    s->count = s->blitz__pending;
    s->blitz__arrived = 0;
    s->blitz__pending = 0;
}

BLITZ_API blitz_poll blitz_signal_recv(blitz_cx *cx, blitz_signal *s) {
    if (!s || !cx || !blitz__sig_ready())
        return BLITZ_READY;
    blitz__mutex_lock(&blitz__sig.lock);
    int live = blitz__sig_registered(s);
    if (!live || s->blitz__arrived) {
        if (live) {
            blitz__sig_take(s);
        } else {
            s->signo = 0; /* not listening: nothing will come */
            s->count = 0;
        }
        if (s->blitz__has_waker) {
            s->blitz__has_waker = 0;
            blitz_waker_drop(s->blitz__waker);
        }
        blitz__mutex_unlock(&blitz__sig.lock);
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    if (s->blitz__has_waker && !blitz_waker_will_wake(&s->blitz__waker, &mine)) {
        blitz_waker_drop(s->blitz__waker);
        s->blitz__has_waker = 0;
    }
    if (!s->blitz__has_waker) {
        s->blitz__waker = blitz_waker_clone(&mine);
        s->blitz__has_waker = 1;
    }
    blitz__mutex_unlock(&blitz__sig.lock);
    return blitz__pending(cx, blitz_signal_cancel, s);
}

BLITZ_API int blitz_signal_try_recv(blitz_signal *s) {
    if (!s || !blitz__sig_ready())
        return BLITZ_EINVAL;
    blitz__mutex_lock(&blitz__sig.lock);
    int rc = blitz__sig_registered(s) ? 0 : BLITZ_EINVAL;
    if (rc == 0 && s->blitz__arrived) {
        blitz__sig_take(s);
        rc = 1;
    }
    blitz__mutex_unlock(&blitz__sig.lock);
    return rc;
}

BLITZ_API void blitz_signal_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_signal *s = (blitz_signal *)p;
    if (!s || !blitz__sig_ready())
        return;
    blitz__mutex_lock(&blitz__sig.lock);
    if (blitz__sig_registered(s) && s->blitz__has_waker) {
        s->blitz__has_waker = 0;
        blitz_waker_drop(s->blitz__waker);
    }
    blitz__mutex_unlock(&blitz__sig.lock);
}

BLITZ_API int blitz_signal_deinit(blitz_signal *s) {
    if (!s || !blitz__sig_ready())
        return BLITZ_EINVAL;
    blitz__mutex_lock(&blitz__sig.lock);
    if (!blitz__sig_registered(s)) {
        blitz__mutex_unlock(&blitz__sig.lock);
        return BLITZ_EINVAL;
    }
    if (s->blitz__prev)
        s->blitz__prev->blitz__next = s->blitz__next;
    else
        blitz__sig.head = s->blitz__next;
    if (s->blitz__next)
        s->blitz__next->blitz__prev = s->blitz__prev;
    for (int n = 1; n <= BLITZ__SIG_MAX; n++)
        if (s->blitz__mask & ((uint64_t)1 << (n - 1)))
            blitz__sig_unref(n);
    if (s->blitz__has_waker)
        blitz_waker_drop(s->blitz__waker);
    s->blitz__has_waker = 0;
    s->blitz__next = s->blitz__prev = NULL;
    blitz__mutex_unlock(&blitz__sig.lock);
    return BLITZ_OK;
}

BLITZ__OP_ADAPTER(blitz__signal_value_poll, blitz_signal, s, blitz_signal_recv(cx, s))
BLITZ_API blitz_op blitz_op_signal_recv(blitz_signal *s) {
    return blitz_op_make(blitz__signal_value_poll, blitz_signal_cancel, s);
}
/* ====[ END src/os/signal.c ]============================================== */
/* ====[ BEGIN src/os/process.c ]=========================================== */
/* >>os/process */
/* Processes: posix_spawn (glibc, Darwin) or fork + exec with an error pipe, waits
 * on pool threads, and a shared record per child so that reaping happens
 * exactly once.
 *
 * The record (blitz__proc) is reference counted: the child handle holds
 * one reference, every wait in flight another, so a wait abandoned by its
 * task, or a child released while a wait still runs, never touches freed
 * memory. `lock` orders reaping against kill: kill signals the pid only
 * while the record says "not reaped", and reaping sets that under the
 * same lock, so a reaped (and perhaps reused) pid is never signalled.
 *
 * Waiting: the pool thread sleeps on the child's pidfd (poll) or, without
 * pidfds, in short sleeps, and reaps with waitpid(WNOHANG). It wakes at
 * least every 50 ms to see whether its op was abandoned or the runtime is
 * shutting down, so a wait never pins a pool thread or holds up shutdown.
 *
 * Spawning, when fork is used: everything the child needs (resolved
 * path, descriptors) is prepared before fork; between fork and exec the child calls only
 * async-signal-safe functions. Signals are blocked across fork so that no
 * handler (blitz's counting one included) runs in the child before it has
 * reset them. exec failures travel back through a close-on-exec pipe. */
/* src/io/io.h already included */

extern char **environ;

#define BLITZ__PROC_TICK_MS 50
/* The status of a child that something else reaped: lost. */
#define BLITZ__PROC_STATUS_LOST (-1)

struct blitz__proc {
    blitz__atomic_u32 refs;
    blitz__mutex lock;
    int pid;
    int exit_fd; /* readable once the child exits; -1 when the system has none */
    int reaped;
    int status;        /* waitpid status, once reaped */
    blitz_runtime *rt; /* whose pool reaps a released child */
};

static void blitz__proc_unref(blitz__proc *p) {
    /* Acq_rel: every user's accesses happen before the free. */
    if (blitz__u32_fetch_sub(&p->refs, 1, BLITZ__ACQ_REL) != 1)
        return;
    if (p->exit_fd >= 0)
        close(p->exit_fd);
    blitz__mutex_destroy(&p->lock);
    blitz__free(p);
}

static void blitz__proc_ref(blitz__proc *p) {
    blitz__u32_fetch_add(&p->refs, 1, BLITZ__RELAXED);
}

/* Reaps without blocking. Returns 1 once reaped (now or before). */
static int blitz__proc_try_reap(blitz__proc *p, int *status) {
    blitz__mutex_lock(&p->lock);
    if (!p->reaped) {
        int st;
        pid_t r;
        do
            r = waitpid(p->pid, &st, WNOHANG);
        while (r < 0 && errno == EINTR);
        if (r == p->pid) {
            p->reaped = 1;
            p->status = st;
        } else if (r < 0) {
            /* Reaped behind our back (SIGCHLD ignored, so the kernel
             * reaped it, or a waitpid(-1) elsewhere): the status is lost. */
            p->reaped = 1;
            p->status = BLITZ__PROC_STATUS_LOST;
        }
    }
    int done = p->reaped;
    if (done)
        *status = p->status;
    blitz__mutex_unlock(&p->lock);
    return done;
}

/* Sleeps until the child may have changed state, at most one tick. */
static void blitz__proc_nap(blitz__proc *p, uint32_t *backoff_ms) {
    if (p->exit_fd >= 0) {
        struct pollfd pfd = {p->exit_fd, POLLIN, 0};
        poll(&pfd, 1, BLITZ__PROC_TICK_MS);
        return;
    }
    struct timespec ts = {0, (long)*backoff_ms * 1000000L};
    nanosleep(&ts, NULL);
    if (*backoff_ms < BLITZ__PROC_TICK_MS)
        *backoff_ms *= 2;
}

/* BLITZ_ECHILD (every field 0) when the status was lost, else BLITZ_OK
 * and the fields. */
static int blitz__decode_status(int st, int *exited, int *code, int *sig, int *core) {
    if (st == BLITZ__PROC_STATUS_LOST) {
        *exited = *code = *sig = 0;
        if (core)
            *core = 0;
        return BLITZ_ECHILD;
    }
    *exited = WIFEXITED(st) ? 1 : 0;
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    if (core) {
#ifdef WCOREDUMP
        *core = WIFSIGNALED(st) && WCOREDUMP(st) ? 1 : 0;
#else
        *core = 0;
#endif
    }
    return BLITZ_OK;
}

/* ---- spawning ------------------------------------------------------------------ */

/* The program's path: argv0 itself when it has a '/', else the first
 * executable match in PATH. *out is allocated when not argv0. */
static int blitz__resolve_program(const char *argv0, char **out) {
    *out = NULL;
    if (strchr(argv0, '/'))
        return 0;
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    size_t nlen = strlen(argv0);
    int err = BLITZ_ENOENT;
    for (const char *dir = path;;) {
        const char *end = strchr(dir, ':');
        size_t dlen = end ? (size_t)(end - dir) : strlen(dir);
        char *cand = (char *)blitz__malloc(dlen + nlen + 3);
        if (!cand)
            return BLITZ_ENOMEM;
        if (dlen == 0)
            memcpy(cand, ".", 2), dlen = 1;
        else
            memcpy(cand, dir, dlen);
        cand[dlen] = '/';
        memcpy(cand + dlen + 1, argv0, nlen + 1);
        struct stat st;
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(cand, X_OK) == 0) {
                *out = cand;
                return 0;
            }
            err = BLITZ_EACCES;
        }
        blitz__free(cand);
        if (!end)
            return err;
        dir = end + 1;
    }
}

static void blitz__close_fd(int *fd) {
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* In the child: tells the parent why exec did not happen, and ends. */
static void blitz__report_errno(int err_fd) {
    int e = errno;
    ssize_t n = write(err_fd, &e, sizeof e);
    (void)n;
    _exit(127);
}

/* In the child, after fork: async-signal-safe calls only. */
static void blitz__child_exec(const char *path, const blitz_command *cmd, char *const *env,
                              const int child_fds[3], int err_fd) {
    for (int sig = 1; sig < 65; sig++) {
        struct sigaction cur;
        if (sigaction(sig, NULL, &cur) != 0)
            continue;
        /* The counting handler belongs to the parent; a SIGPIPE ignored by
         * the parent should not be ignored by a program that expects it. */
        if ((cur.sa_handler == blitz__sig_handler) || (sig == SIGPIPE && cur.sa_handler == SIG_IGN))
            signal(sig, SIG_DFL);
    }
    for (int i = 0; i < 3; i++) {
        if (child_fds[i] < 0)
            continue;
        if (child_fds[i] == i) {
            /* Already in place: only the close-on-exec flag must go. */
            int fl = fcntl(i, F_GETFD);
            if (fl >= 0)
                fcntl(i, F_SETFD, fl & ~FD_CLOEXEC);
        } else if (dup2(child_fds[i], i) < 0) {
            goto fail;
        }
    }
    if (cmd->cwd && chdir(cmd->cwd) != 0)
        goto fail;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, (char *const *)(uintptr_t)cmd->argv, env);
fail:
    blitz__report_errno(err_fd);
}

#if (defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))) || \
    defined(__APPLE__)
#define BLITZ__SPAWN_FALLBACK 1
#if defined(__GLIBC__)
/* Hidden under strict feature macros; the redeclaration is compatible. */
int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *actions, const char *path);
#endif
#if defined(__APPLE__)
/* Darwin closes every descriptor the actions do not name, whatever its
 * close-on-exec flag (no window in which a descriptor another thread just
 * opened leaks into the child); inherited stdio is named explicitly. */
#define BLITZ__SPAWN_FLAGS POSIX_SPAWN_CLOEXEC_DEFAULT
#else
#define BLITZ__SPAWN_FLAGS 0
#endif

/* posix_spawn shares the parent's memory until the exec (no page tables
 * to copy and tear down), which makes it several times faster than fork
 * here; glibc reports exec errors and resets the parent's handlers in the
 * child. Returns BLITZ__SPAWN_FALLBACK when fork must do it (a standard
 * descriptor that is already in place keeps its close-on-exec flag
 * through a self-dup2 in older libcs). */
static int blitz__spawn_posix(const char *path, const blitz_command *cmd, char *const *env,
                              const int child_fds[3], pid_t *pid) {
    for (int i = 0; i < 3; i++)
        if (child_fds[i] == i)
            return BLITZ__SPAWN_FALLBACK;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return BLITZ_ENOMEM;
    if (posix_spawnattr_init(&attr) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return BLITZ_ENOMEM;
    }
    int e = 0;
    for (int i = 0; i < 3 && e == 0; i++) {
        if (child_fds[i] >= 0)
            e = posix_spawn_file_actions_adddup2(&fa, child_fds[i], i);
#if defined(__APPLE__)
        else if (fcntl(i, F_GETFD) >= 0)
            e = posix_spawn_file_actions_addinherit_np(&fa, i);
#endif
    }
    if (e == 0 && cmd->cwd)
        e = posix_spawn_file_actions_addchdir_np(&fa, cmd->cwd);
    /* The child starts with no signal blocked and SIGPIPE at its default
     * even when this process ignores it. */
    sigset_t none, deflt;
    sigemptyset(&none);
    sigemptyset(&deflt);
    struct sigaction cur;
    if (sigaction(SIGPIPE, NULL, &cur) == 0 && cur.sa_handler == SIG_IGN)
        sigaddset(&deflt, SIGPIPE);
    if (e == 0)
        e = posix_spawnattr_setsigmask(&attr, &none);
    if (e == 0)
        e = posix_spawnattr_setsigdefault(&attr, &deflt);
    if (e == 0)
        e = posix_spawnattr_setflags(
            &attr, (short)(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | BLITZ__SPAWN_FLAGS));
    if (e == 0)
        e = posix_spawn(pid, path, &fa, &attr, (char *const *)(uintptr_t)cmd->argv, env);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return e == 0 ? 0 : blitz__from_errno(e);
}
#endif

static int blitz__stdio_valid(blitz_stdio m) {
    return m == BLITZ_STDIO_INHERIT || m == BLITZ_STDIO_NULL || m == BLITZ_STDIO_PIPE;
}

static int blitz__spawn_process(blitz_runtime *rt, const blitz_command *cmd, blitz_child *child) {
    if (child) {
        memset(child, 0, sizeof *child);
        child->stdin_fd = child->stdout_fd = child->stderr_fd = -1;
    }
    if (!rt || !cmd || !child || !cmd->argv || !cmd->argv[0] || !*cmd->argv[0] ||
        !blitz__stdio_valid(cmd->stdin_mode) || !blitz__stdio_valid(cmd->stdout_mode) ||
        !blitz__stdio_valid(cmd->stderr_mode))
        return BLITZ_EINVAL;
    if (blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
        return BLITZ_ESHUTDOWN;
    char *resolved = NULL;
    int rc = blitz__resolve_program(cmd->argv[0], &resolved);
    if (rc != 0)
        return rc;
    const char *path = resolved ? resolved : cmd->argv[0];
    const blitz_stdio modes[3] = {cmd->stdin_mode, cmd->stdout_mode, cmd->stderr_mode};
    int parent_fds[3] = {-1, -1, -1}, child_fds[3] = {-1, -1, -1}, err_pipe[2] = {-1, -1};
    int devnull = -1;
    blitz__proc *p = NULL;
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (modes[i] == BLITZ_STDIO_PIPE) {
            int fds[2];
            rc = blitz__pipe_open(fds, 0);
            if (rc == 0) {
                /* stdin: the child reads fds[0]; stdout/stderr: it writes fds[1]. */
                child_fds[i] = i == 0 ? fds[0] : fds[1];
                parent_fds[i] = i == 0 ? fds[1] : fds[0];
            }
        } else if (modes[i] == BLITZ_STDIO_NULL) {
            if (devnull < 0 && (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
                rc = blitz__from_errno(errno);
            child_fds[i] = devnull;
        }
    }
    if (rc == 0)
        rc = blitz__pipe_open(err_pipe, 0);
    if (rc == 0) {
        p = (blitz__proc *)blitz__calloc(sizeof *p);
        if (!p || blitz__mutex_init(&p->lock) != 0)
            rc = BLITZ_ENOMEM;
    }
    pid_t pid = -1;
    int forked = 0;
    char *const *env = cmd->env ? (char *const *)(uintptr_t)cmd->env : environ;
#ifdef BLITZ__SPAWN_FALLBACK
    if (rc == 0) {
        rc = blitz__spawn_posix(path, cmd, env, child_fds, &pid);
        forked = rc == BLITZ__SPAWN_FALLBACK;
        if (forked)
            rc = 0;
    }
#else
    forked = 1;
#endif
    if (rc == 0 && forked) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid = fork();
        if (pid == 0)
            blitz__child_exec(path, cmd, env, child_fds, err_pipe[1]);
        int fork_errno = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (pid < 0)
            rc = blitz__from_errno(fork_errno);
    }
    blitz__close_fd(&err_pipe[1]);
    for (int i = 0; i < 3; i++)
        if (child_fds[i] >= 0 && child_fds[i] != devnull)
            blitz__close_fd(&child_fds[i]);
    blitz__close_fd(&devnull);
    if (rc == 0 && forked) {
        int e = 0;
        ssize_t n;
        do
            n = read(err_pipe[0], &e, sizeof e);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof e) {
            /* exec failed: the child is already on its way out. */
            int st;
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
            }
            rc = blitz__from_errno(e);
        }
    }
    blitz__close_fd(&err_pipe[0]);
    blitz__free(resolved);
    if (rc != 0) {
        for (int i = 0; i < 3; i++)
            blitz__close_fd(&parent_fds[i]);
        if (p) {
            blitz__mutex_destroy(&p->lock);
            blitz__free(p);
        }
        return rc;
    }
    blitz__u32_store(&p->refs, 1, BLITZ__RELAXED);
    p->pid = (int)pid;
    p->rt = rt;
    p->exit_fd = blitz__proc_exit_fd((int)pid);
    child->pid = (int)pid;
    child->stdin_fd = parent_fds[0];
    child->stdout_fd = parent_fds[1];
    child->stderr_fd = parent_fds[2];
    child->blitz__handle = p;
    return BLITZ_OK;
}

BLITZ_API int blitz_process_spawn(blitz_runtime *rt, const blitz_command *cmd, blitz_child *child) {
    return blitz__spawn_process(rt, cmd, child);
}

/* ---- waiting ------------------------------------------------------------------ */

typedef struct {
    blitz__pool_rec base;
    blitz__proc *proc;
    int status, reaped;
} blitz__wait_rec;

/* Waits for the child on a pool thread; 1 when reaped, 0 when it gave up. */
static int blitz__proc_wait_blocking(blitz__pool_rec *rec, blitz__proc *p, int *status) {
    uint32_t backoff = 1;
    while (!blitz__proc_try_reap(p, status)) {
        if (blitz__pool_rec_give_up(rec))
            return 0;
        blitz__proc_nap(p, &backoff);
    }
    return 1;
}

static void blitz__wait_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__wait_rec *w = (blitz__wait_rec *)rec;
    w->reaped = !cancelled && blitz__proc_wait_blocking(rec, w->proc, &w->status);
}

static void blitz__wait_discard(blitz__pool_rec *rec) {
    blitz__proc_unref(((blitz__wait_rec *)rec)->proc);
}

static void blitz__wait_fill(blitz_wait_op *op, int st) {
    op->result = blitz__decode_status(st, &op->exited, &op->code, &op->signal, &op->core_dumped);
}

BLITZ_API blitz_poll blitz_process_wait(blitz_cx *cx, blitz_wait_op *op, blitz_child *child) {
    if (!op)
        return BLITZ_READY;
    blitz__pool_rec *done;
    if (!blitz__pool_op_idle(&op->blitz__op)) {
        if (blitz__pool_op_poll(cx, &op->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_process_wait_cancel, op);
        blitz__wait_rec *w = (blitz__wait_rec *)done;
        if (w->reaped)
            blitz__wait_fill(op, w->status);
        else
            op->result = BLITZ_ECANCELED;
        blitz__pool_rec_free(done);
        return BLITZ_READY;
    }
    if (!cx || !child || !child->blitz__handle) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    /* Already reaped: no thread needed. */
    int st;
    if (blitz__proc_try_reap(child->blitz__handle, &st)) {
        blitz__wait_fill(op, st);
        return BLITZ_READY;
    }
    blitz__wait_rec *w =
        (blitz__wait_rec *)blitz__pool_rec_new(sizeof *w, blitz__wait_exec, blitz__wait_discard);
    if (!w) {
        op->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    blitz__proc_ref(child->blitz__handle);
    w->proc = child->blitz__handle;
    int err = 0;
    if (blitz__pool_op_start(cx, &op->blitz__op, &w->base, &err) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_process_wait_cancel, op);
    op->result = err;
    return BLITZ_READY;
}

BLITZ_API void blitz_process_wait_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_wait_op *w = (blitz_wait_op *)p;
    if (w)
        blitz__pool_op_cancel(&w->blitz__op);
}

BLITZ_API int blitz_process_try_wait(blitz_child *child, blitz_wait_op *status) {
    if (!child || !child->blitz__handle || !status)
        return BLITZ_EINVAL;
    int st;
    if (!blitz__proc_try_reap(child->blitz__handle, &st))
        return 0;
    status->result = blitz__decode_status(st, &status->exited, &status->code, &status->signal,
                                          &status->core_dumped);
    return 1;
}

BLITZ_API int blitz_process_kill(blitz_child *child, int signo) {
    if (!child || !child->blitz__handle || signo < 0 || signo > 64)
        return BLITZ_EINVAL;
    blitz__proc *p = child->blitz__handle;
    blitz__mutex_lock(&p->lock);
    int rc = p->reaped                  ? BLITZ_ESRCH
             : kill(p->pid, signo) == 0 ? BLITZ_OK
                                        : blitz__from_errno(errno);
    blitz__mutex_unlock(&p->lock);
    return rc;
}

BLITZ_API int blitz_process_terminate(blitz_child *child) {
    return blitz_process_kill(child, SIGTERM);
}

/* A released child that was still running: a detached pool job reaps it. */
typedef struct {
    blitz__proc *p;
} blitz__reaper_state;

static void blitz__reaper_fn(void *state) {
    blitz__proc *p = ((blitz__reaper_state *)state)->p;
    blitz_runtime *rt = p->rt;
    uint32_t backoff = 1;
    int st;
    while (!blitz__proc_try_reap(p, &st) && !(rt && blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE)))
        blitz__proc_nap(p, &backoff);
}

static void blitz__reaper_drop(void *state) {
    blitz__proc_unref(((blitz__reaper_state *)state)->p);
}

static int blitz__release_child(blitz_runtime *rt, blitz_child *child) {
    if (!child || !child->blitz__handle)
        return BLITZ_EINVAL;
    blitz__close_fd(&child->stdin_fd);
    blitz__close_fd(&child->stdout_fd);
    blitz__close_fd(&child->stderr_fd);
    blitz__proc *p = child->blitz__handle;
    child->blitz__handle = NULL;
    int st;
    if (!blitz__proc_try_reap(p, &st) && rt) {
        blitz__reaper_state rs = {p};
        blitz_blocking_opts o = {blitz__reaper_fn, &rs, sizeof rs, blitz__reaper_drop};
        if (blitz_spawn_blocking_ex(rt, &o, NULL) == BLITZ_OK)
            return BLITZ_OK; /* the job's state holds our reference now */
    }
    blitz__proc_unref(p);
    return BLITZ_OK;
}

BLITZ_API int blitz_process_release(blitz_child *child) {
    return blitz__release_child(child && child->blitz__handle ? child->blitz__handle->rt : NULL,
                                child);
}

/* ---- collecting output ------------------------------------------------------------ */

typedef struct {
    blitz__pool_rec base;
    blitz_child child;
    char *input; /* a copy */
    size_t input_len;
    int result, exited, code, signal;
    char *out, *err;
    size_t out_len, err_len;
} blitz__output_rec;

typedef struct {
    char *buf;
    size_t len, cap;
} blitz__outbuf;

static int blitz__output_pump(blitz__output_rec *o) {
    blitz_child *c = &o->child;
    blitz__outbuf bufs[2];
    memset(bufs, 0, sizeof bufs);
    size_t written = 0;
    int rc = 0;
    if (c->stdin_fd >= 0 && o->input_len == 0)
        blitz__close_fd(&c->stdin_fd);
    /* A blocking write of the whole input would wait for the child to
     * read while the child waits for us to drain its output. */
    if (c->stdin_fd >= 0) {
        int fl = fcntl(c->stdin_fd, F_GETFL);
        if (fl >= 0)
            fcntl(c->stdin_fd, F_SETFL, fl | O_NONBLOCK);
    }
    while (rc == 0 && (c->stdout_fd >= 0 || c->stderr_fd >= 0 || c->stdin_fd >= 0)) {
        if (blitz__pool_rec_give_up(&o->base)) {
            rc = BLITZ_ECANCELED;
            break;
        }
        struct pollfd pfd[3];
        int *fds[3] = {&c->stdout_fd, &c->stderr_fd, &c->stdin_fd};
        nfds_t n = 0;
        int which[3];
        for (int i = 0; i < 3; i++) {
            if (*fds[i] < 0)
                continue;
            pfd[n].fd = *fds[i];
            pfd[n].events = i == 2 ? POLLOUT : POLLIN;
            pfd[n].revents = 0;
            which[n++] = i;
        }
        int r = poll(pfd, n, BLITZ__PROC_TICK_MS);
        if (r < 0 && errno != EINTR) {
            rc = blitz__from_errno(errno);
            break;
        }
        for (nfds_t k = 0; k < (nfds_t)(r > 0 ? n : 0); k++) {
            if (!pfd[k].revents)
                continue;
            int i = which[k];
            if (i == 2) {
                const char *in = (const char *)o->input + written;
                ssize_t w = write(c->stdin_fd, in, o->input_len - written);
                if (w > 0)
                    written += (size_t)w;
                if (w < 0 && errno == EPIPE)
                    blitz__consume_sigpipe();
                /* Done, or the child stopped reading: it gets EOF. */
                if (written == o->input_len || (w < 0 && errno != EINTR && errno != EAGAIN))
                    blitz__close_fd(&c->stdin_fd);
                continue;
            }
            blitz__outbuf *b = &bufs[i];
            if (b->len + 4096 + 1 > b->cap &&
                (rc = blitz__grow_buffer(&b->buf, &b->cap, b->len, b->len + 4096 + 1)) != 0)
                break;
            ssize_t got = read(*fds[i], b->buf + b->len, b->cap - b->len - 1);
            if (got > 0)
                b->len += (size_t)got;
            else if (got == 0 || (errno != EINTR && errno != EAGAIN))
                blitz__close_fd(fds[i]);
        }
    }
    for (int i = 0; i < 2 && rc == 0; i++)
        if (!bufs[i].buf && (rc = blitz__grow_buffer(&bufs[i].buf, &bufs[i].cap, 0, 1)) != 0)
            break;
    if (rc != 0) {
        blitz__free(bufs[0].buf);
        blitz__free(bufs[1].buf);
        return rc;
    }
    bufs[0].buf[bufs[0].len] = '\0';
    bufs[1].buf[bufs[1].len] = '\0';
    o->out = bufs[0].buf;
    o->out_len = bufs[0].len;
    o->err = bufs[1].buf;
    o->err_len = bufs[1].len;
    return 0;
}

/* Ends a child nobody will read from (SIGKILL) and reaps it. */
static void blitz__output_end_child(blitz_child *c) {
    blitz_process_kill(c, SIGKILL);
    int st;
    uint32_t backoff = 1;
    while (!blitz__proc_try_reap(c->blitz__handle, &st))
        blitz__proc_nap(c->blitz__handle, &backoff);
}

static void blitz__output_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__output_rec *o = (blitz__output_rec *)rec;
    int rc = cancelled ? BLITZ_ECANCELED : blitz__output_pump(o);
    int st = 0;
    if (rc == 0 && !blitz__proc_wait_blocking(rec, o->child.blitz__handle, &st))
        rc = BLITZ_ECANCELED;
    if (rc != 0) {
        blitz__output_end_child(&o->child);
        blitz__free(o->out);
        blitz__free(o->err);
        o->out = o->err = NULL;
        o->out_len = o->err_len = 0;
    } else {
        rc = blitz__decode_status(st, &o->exited, &o->code, &o->signal, NULL);
    }
    o->result = rc;
    blitz__release_child(NULL, &o->child);
}

static void blitz__output_discard(blitz__pool_rec *rec) {
    blitz__output_rec *o = (blitz__output_rec *)rec;
    if (o->child.blitz__handle) {
        /* Never ran: the child is still ours to end. */
        blitz__output_end_child(&o->child);
        blitz__release_child(NULL, &o->child);
    }
    blitz__free(o->out);
    blitz__free(o->err);
    blitz__free(o->input);
}

BLITZ_API blitz_poll blitz_process_output(blitz_cx *cx, blitz_output_op *op,
                                          const blitz_command *cmd, const void *input,
                                          size_t input_len) {
    if (!op)
        return BLITZ_READY;
    blitz__pool_rec *done;
    if (!blitz__pool_op_idle(&op->blitz__op)) {
        if (blitz__pool_op_poll(cx, &op->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_process_output_cancel, op);
        blitz__output_rec *o = (blitz__output_rec *)done;
        op->result = o->result;
        op->exited = o->exited;
        op->code = o->code;
        op->signal = o->signal;
        op->out = o->out;
        op->err = o->err;
        op->out_len = o->out_len;
        op->err_len = o->err_len;
        o->out = o->err = NULL;
        blitz__pool_rec_free(done);
        return BLITZ_READY;
    }
    op->out = op->err = NULL;
    op->out_len = op->err_len = 0;
    if (!cx || !cmd || (!input && input_len)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__output_rec *o = (blitz__output_rec *)blitz__pool_rec_new(sizeof *o, blitz__output_exec,
                                                                    blitz__output_discard);
    if (o && input_len) {
        o->input = (char *)blitz__malloc(input_len);
        if (o->input)
            memcpy(o->input, input, input_len);
    }
    if (!o || (input_len && !o->input)) {
        if (o)
            blitz__pool_rec_free(&o->base);
        op->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    o->input_len = input_len;
    blitz_command c = *cmd;
    c.stdin_mode = input ? BLITZ_STDIO_PIPE : BLITZ_STDIO_NULL;
    c.stdout_mode = BLITZ_STDIO_PIPE;
    c.stderr_mode = BLITZ_STDIO_PIPE;
    int rc = blitz__spawn_process(blitz_cx_runtime(cx), &c, &o->child);
    if (rc != 0) {
        blitz__pool_rec_free(&o->base);
        op->result = rc;
        return BLITZ_READY;
    }
    if (blitz__pool_op_start(cx, &op->blitz__op, &o->base, &rc) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_process_output_cancel, op);
    op->result = rc;
    return BLITZ_READY;
}

BLITZ_API void blitz_process_output_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_output_op *o = (blitz_output_op *)p;
    if (o)
        blitz__pool_op_cancel(&o->blitz__op);
}

BLITZ__OP_ADAPTER(blitz__wait_value_poll, blitz_wait_op, op,
                  op ? blitz_process_wait(cx, op, op->blitz__child) : BLITZ_READY)
BLITZ_API blitz_op blitz_op_process_wait(blitz_wait_op *op, blitz_child *child) {
    if (op)
        op->blitz__child = child;
    return blitz_op_make(blitz__wait_value_poll, blitz_process_wait_cancel, op);
}

BLITZ__OP_ADAPTER(blitz__output_value_poll, blitz_output_op, op,
                  op ? blitz_process_output(cx, op, op->blitz__cmd, op->blitz__input,
                                            op->blitz__input_len)
                     : BLITZ_READY)
BLITZ_API blitz_op blitz_op_process_output(blitz_output_op *op, const blitz_command *cmd,
                                           const void *input, size_t input_len) {
    if (op) {
        op->blitz__cmd = cmd;
        op->blitz__input = input;
        op->blitz__input_len = input_len;
    }
    return blitz_op_make(blitz__output_value_poll, blitz_process_output_cancel, op);
}
/* ====[ END src/os/process.c ]============================================= */
/* ====[ BEGIN src/os/stream.c ]============================================ */
/* >>os/stream */
/* Byte streams: the stream vtables over sockets, descriptors and files;
 * the buffered reader and writer; copy with splice / sendfile. */
/* src/io/io.h already included */

#define BLITZ__READER_DEFAULT ((size_t)8192)
#define BLITZ__COPY_BUF       ((size_t)64 * 1024)
#define BLITZ__COPY_CHUNK     ((size_t)1 << 20)
/* Transfers one poll of a copy makes before it lets other tasks run. */
#define BLITZ__COPY_BUDGET 16

/* ---- stream implementations ------------------------------------------------------- */

static blitz_poll blitz__sock_st_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len,
                                      int64_t *res) {
    if (blitz_sock_recv(cx, &st->blitz__rio, st->sock, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__rio.result;
    return BLITZ_READY;
}
static blitz_poll blitz__sock_st_write(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                                       int64_t *res) {
    if (blitz_sock_send(cx, &st->blitz__wio, st->sock, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__wio.result;
    return BLITZ_READY;
}
static void blitz__io_st_cancel(blitz_cx *cx, blitz_stream *st, int dir) {
    (void)cx;
    blitz_io_cancel(NULL, dir ? &st->blitz__wio : &st->blitz__rio);
}
static int blitz__sock_st_shutdown(blitz_stream *st) {
    return blitz_sock_shutdown(st->sock, 1);
}
static const blitz_stream_vtable blitz__sock_vt = {blitz__sock_st_read, blitz__sock_st_write,
                                                   blitz__io_st_cancel, blitz__sock_st_shutdown};

static blitz_poll blitz__fd_st_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len,
                                    int64_t *res) {
    if (blitz_fd_read(cx, &st->blitz__rio, st->sock, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__rio.result;
    return BLITZ_READY;
}
static blitz_poll blitz__fd_st_write(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                                     int64_t *res) {
    if (blitz_fd_write(cx, &st->blitz__wio, st->sock, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__wio.result;
    return BLITZ_READY;
}
/* A pipe's write side ends only when its descriptor closes. */
static int blitz__fd_st_shutdown(blitz_stream *st) {
    if (st->sock->family != AF_UNSPEC)
        return blitz_sock_shutdown(st->sock, 1);
    if (!(st->blitz__flags & BLITZ_STREAM_OWN))
        return BLITZ_OK;
    blitz_socket *s = st->sock;
    st->sock = NULL;
    st->fd = -1;
    return blitz_sock_close(s);
}
static const blitz_stream_vtable blitz__fd_vt = {blitz__fd_st_read, blitz__fd_st_write,
                                                 blitz__io_st_cancel, blitz__fd_st_shutdown};

static blitz_poll blitz__file_st_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len,
                                      int64_t *res) {
    if (blitz_fs_read(cx, &st->blitz__rfs, st->fd, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__rfs.result;
    return BLITZ_READY;
}
static blitz_poll blitz__file_st_write(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                                       int64_t *res) {
    if (blitz_fs_write(cx, &st->blitz__wfs, st->fd, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__wfs.result;
    return BLITZ_READY;
}
static void blitz__file_st_cancel(blitz_cx *cx, blitz_stream *st, int dir) {
    blitz_fs_cancel(cx, dir ? &st->blitz__wfs : &st->blitz__rfs);
}
static int blitz__file_st_shutdown(blitz_stream *st) {
    (void)st;
    return BLITZ_OK;
}
static const blitz_stream_vtable blitz__file_vt = {blitz__file_st_read, blitz__file_st_write,
                                                   blitz__file_st_cancel, blitz__file_st_shutdown};

static void blitz__stream_base(blitz_stream *st, int kind, unsigned flags) {
    memset(st, 0, sizeof *st);
    st->kind = kind;
    st->fd = -1;
    st->blitz__flags = flags;
}

BLITZ_API int blitz_stream_socket(blitz_stream *st, blitz_socket *s, unsigned flags) {
    if (!st || !s || (flags & ~BLITZ_STREAM_OWN))
        return BLITZ_EINVAL;
    blitz__stream_base(st, BLITZ_STREAM_SOCKET, flags);
    st->vtable = &blitz__sock_vt;
    st->sock = s;
    st->fd = s->fd;
    return BLITZ_OK;
}

BLITZ_API int blitz_stream_pipe(blitz_stream *st, blitz_socket *s, unsigned flags) {
    if (!st || !s || (flags & ~BLITZ_STREAM_OWN))
        return BLITZ_EINVAL;
    blitz__stream_base(st, BLITZ_STREAM_PIPE, flags);
    st->vtable = &blitz__fd_vt;
    st->sock = s;
    st->fd = s->fd;
    return BLITZ_OK;
}

BLITZ_API int blitz_stream_file(blitz_stream *st, int fd, unsigned flags) {
    if (!st || fd < 0 || (flags & ~BLITZ_STREAM_OWN))
        return BLITZ_EINVAL;
    blitz__stream_base(st, BLITZ_STREAM_FILE, flags);
    st->vtable = &blitz__file_vt;
    st->fd = fd;
    return BLITZ_OK;
}

BLITZ_API int blitz_stream_custom(blitz_stream *st, const blitz_stream_vtable *vt, void *user) {
    if (!st || !vt || !vt->read || !vt->write || !vt->cancel)
        return BLITZ_EINVAL;
    blitz__stream_base(st, BLITZ_STREAM_CUSTOM, 0);
    st->vtable = vt;
    st->user = user;
    return BLITZ_OK;
}

BLITZ_API int blitz_stream_shutdown_write(blitz_stream *st) {
    if (!st || !st->vtable)
        return BLITZ_EINVAL;
    if (st->blitz__wr_shut)
        return BLITZ_OK;
    st->blitz__wr_shut = 1;
    return st->vtable->shutdown_write ? st->vtable->shutdown_write(st) : BLITZ_OK;
}

BLITZ_API int blitz_stream_close(blitz_stream *st) {
    if (!st || !st->vtable)
        return BLITZ_EINVAL;
    st->vtable->cancel(NULL, st, 0);
    st->vtable->cancel(NULL, st, 1);
    if (st->blitz__flags & BLITZ_STREAM_OWN) {
        st->blitz__flags &= ~BLITZ_STREAM_OWN;
        if (st->sock)
            blitz_sock_close(st->sock);
        else if (st->kind == BLITZ_STREAM_FILE && st->fd >= 0)
            close(st->fd);
        st->sock = NULL;
        st->fd = -1;
    }
    return BLITZ_OK;
}

BLITZ_API blitz_poll blitz_stream_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len) {
    if (!st)
        return BLITZ_READY;
    if (!st->vtable || (!buf && len)) {
        st->read_result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if ((st->kind == BLITZ_STREAM_SOCKET || st->kind == BLITZ_STREAM_PIPE) && !st->sock) {
        st->read_result = BLITZ_ECLOSED;
        return BLITZ_READY;
    }
    return blitz__record(cx, st->vtable->read(cx, st, buf, len, &st->read_result),
                         blitz_stream_read_cancel, st);
}

BLITZ_API blitz_poll blitz_stream_write(blitz_cx *cx, blitz_stream *st, const void *buf,
                                        size_t len) {
    if (!st)
        return BLITZ_READY;
    if (!st->vtable || (!buf && len)) {
        st->write_result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if (st->blitz__wr_shut ||
        ((st->kind == BLITZ_STREAM_SOCKET || st->kind == BLITZ_STREAM_PIPE) && !st->sock)) {
        st->write_result = BLITZ_ECLOSED;
        return BLITZ_READY;
    }
    return blitz__record(cx, st->vtable->write(cx, st, buf, len, &st->write_result),
                         blitz_stream_write_cancel, st);
}

BLITZ_API void blitz_stream_read_cancel(blitz_cx *cx, void *p) {
    blitz_stream *st = (blitz_stream *)p;
    if (st && st->vtable)
        st->vtable->cancel(cx, st, 0);
}
BLITZ_API void blitz_stream_write_cancel(blitz_cx *cx, void *p) {
    blitz_stream *st = (blitz_stream *)p;
    if (st && st->vtable)
        st->vtable->cancel(cx, st, 1);
}

BLITZ_API blitz_poll blitz_stream_settle(blitz_cx *cx, blitz_stream *st) {
    if (!st)
        return BLITZ_READY;
    if (blitz_io_settle(cx, &st->blitz__rio) == BLITZ_PENDING)
        return BLITZ_PENDING;
    return blitz_io_settle(cx, &st->blitz__wio);
}

BLITZ__OP_ADAPTER(blitz__op_stream_read_poll, blitz_stream, st,
                  blitz_stream_read(cx, st, st->blitz__rbuf, st->blitz__rlen))
BLITZ__OP_ADAPTER(blitz__op_stream_write_poll, blitz_stream, st,
                  blitz_stream_write(cx, st, st->blitz__wbuf, st->blitz__wlen))
BLITZ_API blitz_op blitz_op_stream_read(blitz_stream *st, void *buf, size_t len) {
    if (st) {
        st->blitz__rbuf = buf;
        st->blitz__rlen = len;
    }
    return blitz_op_make(blitz__op_stream_read_poll, blitz_stream_read_cancel, st);
}
BLITZ_API blitz_op blitz_op_stream_write(blitz_stream *st, const void *buf, size_t len) {
    if (st) {
        st->blitz__wbuf = buf;
        st->blitz__wlen = len;
    }
    return blitz_op_make(blitz__op_stream_write_poll, blitz_stream_write_cancel, st);
}

/* ---- the buffered reader ------------------------------------------------------------------ */

#define BLITZ__RD_READ  1
#define BLITZ__RD_EXACT 2
#define BLITZ__RD_UNTIL 3

/* The buffer of a zeroed reader or writer over `st`: the caller's, or one
 * of `cap` bytes (default BLITZ__READER_DEFAULT) that it owns. */
static int blitz__stream_buffer(const blitz_stream *st, void *buf, size_t cap, unsigned char **out,
                                size_t *out_cap, int *owns) {
    if (!st || (buf && !cap))
        return BLITZ_EINVAL;
    if (!buf) {
        if (!cap)
            cap = BLITZ__READER_DEFAULT;
        buf = blitz__malloc(cap);
        if (!buf)
            return BLITZ_ENOMEM;
        *owns = 1;
    }
    *out = (unsigned char *)buf;
    *out_cap = cap;
    return BLITZ_OK;
}

/* Frees the buffer if the reader or writer owns it. */
static void blitz__stream_buffer_free(unsigned char **buf, int *owns) {
    if (*owns)
        blitz__free(*buf);
    *owns = 0;
    *buf = NULL;
}

BLITZ_API int blitz_reader_init(blitz_reader *r, blitz_stream *st, void *buf, size_t cap) {
    if (!r)
        return BLITZ_EINVAL;
    memset(r, 0, sizeof *r);
    int rc = blitz__stream_buffer(st, buf, cap, &r->blitz__buf, &r->blitz__cap, &r->blitz__owns);
    if (rc == BLITZ_OK)
        r->stream = st;
    return rc;
}

BLITZ_API void blitz_reader_deinit(blitz_reader *r) {
    if (!r)
        return;
    blitz__stream_buffer_free(&r->blitz__buf, &r->blitz__owns);
    r->blitz__cap = r->blitz__start = r->blitz__end = r->blitz__scanned = 0;
}

BLITZ_API size_t blitz_reader_buffered(const blitz_reader *r) {
    return r ? r->blitz__end - r->blitz__start : 0;
}

BLITZ_API const void *blitz_reader_peek(const blitz_reader *r, size_t *len) {
    size_t n = blitz_reader_buffered(r);
    if (len)
        *len = n;
    return n ? r->blitz__buf + r->blitz__start : NULL;
}

/* One read of the stream into the free end of the buffer (compacted first
 * when full). READY with the buffer grown, eof or err set. The buffer's
 * layout does not change while the read is pending: the stream may own
 * that memory until it completes. */
static blitz_poll blitz__reader_fill(blitz_cx *cx, blitz_reader *r) {
    if (!r->blitz__reading) {
        if (r->blitz__start == r->blitz__end) {
            r->blitz__start = r->blitz__end = r->blitz__scanned = 0;
        } else if (r->blitz__end == r->blitz__cap && r->blitz__start > 0) {
            size_t n = r->blitz__end - r->blitz__start;
            memmove(r->blitz__buf, r->blitz__buf + r->blitz__start, n);
            r->blitz__scanned -= r->blitz__start;
            r->blitz__start = 0;
            r->blitz__end = n;
        }
        if (r->blitz__end == r->blitz__cap)
            return BLITZ_READY;
        r->blitz__reading = 1;
    }
    blitz_stream *st = r->stream;
    if (blitz_stream_read(cx, st, r->blitz__buf + r->blitz__end, r->blitz__cap - r->blitz__end) ==
        BLITZ_PENDING)
        return BLITZ_PENDING;
    r->blitz__reading = 0;
    int64_t res = st->read_result;
    if (res > 0)
        r->blitz__end += (size_t)res;
    else if (res == 0)
        r->blitz__eof = 1;
    else
        r->blitz__err = res;
    return BLITZ_READY;
}

static blitz_poll blitz__reader_done(blitz_reader *r, int64_t result) {
    r->result = result;
    r->blitz__op = 0;
    return BLITZ_READY;
}

static size_t blitz__reader_take(blitz_reader *r, void *dst, size_t n) {
    size_t avail = r->blitz__end - r->blitz__start;
    if (n > avail)
        n = avail;
    if (n)
        memcpy(dst, r->blitz__buf + r->blitz__start, n);
    r->blitz__start += n;
    if (r->blitz__scanned < r->blitz__start)
        r->blitz__scanned = r->blitz__start;
    return n;
}

static int blitz__reader_bad(blitz_reader *r) {
    return !r->stream || !r->blitz__buf;
}

BLITZ_API blitz_poll blitz_reader_read(blitz_cx *cx, blitz_reader *r, void *dst, size_t len) {
    if (!r)
        return BLITZ_READY;
    if (blitz__reader_bad(r) || (!dst && len))
        return blitz__reader_done(r, BLITZ_EINVAL);
    r->blitz__op = BLITZ__RD_READ;
    for (;;) {
        if (r->blitz__end > r->blitz__start || !len) {
            r->len = blitz__reader_take(r, dst, len);
            return blitz__reader_done(r, (int64_t)r->len);
        }
        r->len = 0;
        if (r->blitz__err)
            return blitz__reader_done(r, r->blitz__err);
        if (r->blitz__eof)
            return blitz__reader_done(r, 0);
        if (blitz__reader_fill(cx, r) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_reader_cancel, r);
    }
}

BLITZ_API blitz_poll blitz_reader_read_exact(blitz_cx *cx, blitz_reader *r, void *dst, size_t len) {
    if (!r)
        return BLITZ_READY;
    if (blitz__reader_bad(r) || (!dst && len))
        return blitz__reader_done(r, BLITZ_EINVAL);
    if (r->blitz__op != BLITZ__RD_EXACT) {
        r->blitz__op = BLITZ__RD_EXACT;
        r->blitz__got = 0;
    }
    for (;;) {
        r->blitz__got +=
            blitz__reader_take(r, (unsigned char *)dst + r->blitz__got, len - r->blitz__got);
        r->len = r->blitz__got;
        if (r->blitz__got == len)
            return blitz__reader_done(r, (int64_t)len);
        if (r->blitz__err)
            return blitz__reader_done(r, r->blitz__err);
        if (r->blitz__eof)
            return blitz__reader_done(r, BLITZ_EEOF);
        if (blitz__reader_fill(cx, r) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_reader_cancel, r);
    }
}

/* The record scan shared by read_until and read_line. */
static blitz_poll blitz__reader_until(blitz_cx *cx, blitz_reader *r, int delim, unsigned char *dst,
                                      size_t max) {
    if (r->blitz__op != BLITZ__RD_UNTIL) {
        r->blitz__op = BLITZ__RD_UNTIL;
        r->blitz__got = 0;
        r->blitz__scanned = r->blitz__start;
    }
    for (;;) {
        unsigned char *base = r->blitz__buf;
        size_t from = r->blitz__scanned, end = r->blitz__end;
        unsigned char *hit =
            end > from ? (unsigned char *)memchr(base + from, delim, end - from) : NULL;
        if (hit) {
            size_t n = (size_t)(hit - (base + r->blitz__start)) + 1;
            if (r->blitz__got + n > max) {
                r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, max - r->blitz__got);
                r->len = r->blitz__got;
                return blitz__reader_done(r, BLITZ_EMSGSIZE);
            }
            r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, n);
            r->len = r->blitz__got;
            return blitz__reader_done(r, (int64_t)r->blitz__got);
        }
        r->blitz__scanned = end;
        size_t avail = end - r->blitz__start;
        if (r->blitz__got + avail > max) {
            /* more than max bytes and no delimiter among them */
            r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, max - r->blitz__got);
            r->len = r->blitz__got;
            return blitz__reader_done(r, BLITZ_EMSGSIZE);
        }
        if (r->blitz__err) {
            r->len = r->blitz__got;
            return blitz__reader_done(r, r->blitz__err);
        }
        if (r->blitz__eof) {
            r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, avail);
            r->len = r->blitz__got;
            return blitz__reader_done(r, (int64_t)r->blitz__got);
        }
        if (!r->blitz__reading && r->blitz__end == r->blitz__cap && r->blitz__start == 0) {
            /* A record longer than the buffer moves into dst as it comes. */
            r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, avail);
            r->len = r->blitz__got;
        }
        if (blitz__reader_fill(cx, r) == BLITZ_PENDING)
            return BLITZ_PENDING;
    }
}

BLITZ_API blitz_poll blitz_reader_read_until(blitz_cx *cx, blitz_reader *r, int delim, void *dst,
                                             size_t max) {
    if (!r)
        return BLITZ_READY;
    if (blitz__reader_bad(r) || !dst || !max || delim < 0 || delim > 255)
        return blitz__reader_done(r, BLITZ_EINVAL);
    return blitz__record(cx, blitz__reader_until(cx, r, delim, (unsigned char *)dst, max),
                         blitz_reader_cancel, r);
}

BLITZ_API blitz_poll blitz_reader_read_line(blitz_cx *cx, blitz_reader *r, char *dst, size_t max) {
    if (!r)
        return BLITZ_READY;
    if (blitz__reader_bad(r) || !dst || max < 2)
        return blitz__reader_done(r, BLITZ_EINVAL);
    if (blitz__reader_until(cx, r, '\n', (unsigned char *)dst, max - 1) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_reader_cancel, r);
    size_t n = r->len;
    if (r->result > 0 && n > 0 && dst[n - 1] == '\n') {
        n--;
        if (n > 0 && dst[n - 1] == '\r')
            n--;
    }
    dst[n] = '\0';
    r->len = n;
    return BLITZ_READY;
}

BLITZ_API void blitz_reader_cancel(blitz_cx *cx, void *p) {
    blitz_reader *r = (blitz_reader *)p;
    if (!r)
        return;
    if (r->blitz__reading && r->stream)
        blitz_stream_read_cancel(cx, r->stream);
    r->blitz__reading = 0;
    if (r->blitz__op)
        r->result = BLITZ_ECANCELED;
    r->blitz__op = 0;
}

BLITZ__OP_ADAPTER(blitz__op_read_line_poll, blitz_reader, r,
                  blitz_reader_read_line(cx, r, (char *)r->blitz__dst, r->blitz__max))
BLITZ__OP_ADAPTER(blitz__op_read_exact_poll, blitz_reader, r,
                  blitz_reader_read_exact(cx, r, r->blitz__dst, r->blitz__max))
BLITZ_API blitz_op blitz_op_reader_read_line(blitz_reader *r, char *dst, size_t max) {
    if (r) {
        r->blitz__dst = (unsigned char *)dst;
        r->blitz__max = max;
    }
    return blitz_op_make(blitz__op_read_line_poll, blitz_reader_cancel, r);
}
BLITZ_API blitz_op blitz_op_reader_read_exact(blitz_reader *r, void *dst, size_t len) {
    if (r) {
        r->blitz__dst = (unsigned char *)dst;
        r->blitz__max = len;
    }
    return blitz_op_make(blitz__op_read_exact_poll, blitz_reader_cancel, r);
}
BLITZ__OP_ADAPTER(blitz__op_read_poll, blitz_reader, r,
                  blitz_reader_read(cx, r, r->blitz__dst, r->blitz__max))
BLITZ__OP_ADAPTER(blitz__op_read_until_poll, blitz_reader, r,
                  blitz_reader_read_until(cx, r, r->blitz__delim, r->blitz__dst, r->blitz__max))
BLITZ_API blitz_op blitz_op_reader_read(blitz_reader *r, void *dst, size_t len) {
    if (r) {
        r->blitz__dst = (unsigned char *)dst;
        r->blitz__max = len;
    }
    return blitz_op_make(blitz__op_read_poll, blitz_reader_cancel, r);
}
BLITZ_API blitz_op blitz_op_reader_read_until(blitz_reader *r, int delim, void *dst, size_t max) {
    if (r) {
        r->blitz__dst = (unsigned char *)dst;
        r->blitz__max = max;
        r->blitz__delim = delim;
    }
    return blitz_op_make(blitz__op_read_until_poll, blitz_reader_cancel, r);
}

/* ---- the buffered writer ------------------------------------------------------------------ */

#define BLITZ__WR_WRITE 1
#define BLITZ__WR_ALL   2
#define BLITZ__WR_FLUSH 3
#define BLITZ__WR_CLOSE 4
/* blitz__writing: what the pending stream write carries */
#define BLITZ__WRITING_BUF    1
#define BLITZ__WRITING_DIRECT 2

BLITZ_API int blitz_writer_init(blitz_writer *w, blitz_stream *st, void *buf, size_t cap) {
    if (!w)
        return BLITZ_EINVAL;
    memset(w, 0, sizeof *w);
    int rc = blitz__stream_buffer(st, buf, cap, &w->blitz__buf, &w->blitz__cap, &w->blitz__owns);
    if (rc == BLITZ_OK)
        w->stream = st;
    return rc;
}

BLITZ_API void blitz_writer_deinit(blitz_writer *w) {
    if (!w)
        return;
    blitz__stream_buffer_free(&w->blitz__buf, &w->blitz__owns);
    w->blitz__cap = w->blitz__len = w->blitz__sent = 0;
}

BLITZ_API size_t blitz_writer_buffered(const blitz_writer *w) {
    return w ? w->blitz__len - w->blitz__sent : 0;
}

static blitz_poll blitz__writer_done(blitz_writer *w, int64_t result) {
    w->result = result;
    w->blitz__op = 0;
    return BLITZ_READY;
}

/* One stream write of the buffered bytes. READY with progress made or
 * blitz__err set. */
static blitz_poll blitz__writer_push(blitz_cx *cx, blitz_writer *w) {
    blitz_stream *st = w->stream;
    w->blitz__writing = BLITZ__WRITING_BUF;
    if (blitz_stream_write(cx, st, w->blitz__buf + w->blitz__sent,
                           w->blitz__len - w->blitz__sent) == BLITZ_PENDING)
        return BLITZ_PENDING;
    w->blitz__writing = 0;
    int64_t res = st->write_result;
    if (res < 0) {
        w->blitz__err = res;
    } else if (res == 0) {
        w->blitz__err = BLITZ_EIO; /* a stream that takes nothing */
    } else {
        w->blitz__sent += (size_t)res;
        if (w->blitz__sent == w->blitz__len)
            w->blitz__sent = w->blitz__len = 0;
    }
    return BLITZ_READY;
}

static size_t blitz__writer_put(blitz_writer *w, const unsigned char *src, size_t len) {
    if (w->blitz__sent > 0 && w->blitz__len == w->blitz__cap) {
        /* nothing pending here: the push is finished when we get here */
        memmove(w->blitz__buf, w->blitz__buf + w->blitz__sent, w->blitz__len - w->blitz__sent);
        w->blitz__len -= w->blitz__sent;
        w->blitz__sent = 0;
    }
    size_t room = w->blitz__cap - w->blitz__len;
    if (len > room)
        len = room;
    memcpy(w->blitz__buf + w->blitz__len, src, len);
    w->blitz__len += len;
    return len;
}

static int blitz__writer_bad(blitz_writer *w) {
    return !w->stream || !w->blitz__buf;
}

BLITZ_API blitz_poll blitz_writer_write(blitz_cx *cx, blitz_writer *w, const void *src,
                                        size_t len) {
    if (!w)
        return BLITZ_READY;
    if (blitz__writer_bad(w) || (!src && len))
        return blitz__writer_done(w, BLITZ_EINVAL);
    w->blitz__op = BLITZ__WR_WRITE;
    for (;;) {
        if (w->blitz__err)
            return blitz__writer_done(w, w->blitz__err);
        if (!len)
            return blitz__writer_done(w, 0);
        if (w->blitz__writing == 0) {
            size_t n = blitz__writer_put(w, (const unsigned char *)src, len);
            if (n)
                return blitz__writer_done(w, (int64_t)n);
        }
        if (blitz__writer_push(cx, w) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_writer_cancel, w);
    }
}

BLITZ_API blitz_poll blitz_writer_write_all(blitz_cx *cx, blitz_writer *w, const void *src,
                                            size_t len) {
    if (!w)
        return BLITZ_READY;
    if (blitz__writer_bad(w) || (!src && len))
        return blitz__writer_done(w, BLITZ_EINVAL);
    if (w->blitz__op != BLITZ__WR_ALL) {
        w->blitz__op = BLITZ__WR_ALL;
        w->blitz__taken = 0;
    }
    const unsigned char *p = (const unsigned char *)src;
    blitz_stream *st = w->stream;
    for (;;) {
        if (w->blitz__err)
            return blitz__writer_done(w, w->blitz__err);
        if (w->blitz__taken == len)
            return blitz__writer_done(w, (int64_t)len);
        size_t left = len - w->blitz__taken;
        if (w->blitz__writing == BLITZ__WRITING_DIRECT ||
            (w->blitz__writing == 0 && w->blitz__len == 0 && left >= w->blitz__cap)) {
            /* Larger than the buffer: straight from the caller's memory. */
            w->blitz__writing = BLITZ__WRITING_DIRECT;
            if (blitz_stream_write(cx, st, p + w->blitz__taken, left) == BLITZ_PENDING)
                return blitz__pending(cx, blitz_writer_cancel, w);
            w->blitz__writing = 0;
            if (st->write_result <= 0)
                w->blitz__err = st->write_result < 0 ? st->write_result : BLITZ_EIO;
            else
                w->blitz__taken += (size_t)st->write_result;
            continue;
        }
        if (w->blitz__writing == 0) {
            size_t n = blitz__writer_put(w, p + w->blitz__taken, left);
            w->blitz__taken += n;
            if (n)
                continue;
        }
        if (blitz__writer_push(cx, w) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_writer_cancel, w);
    }
}

BLITZ_API blitz_poll blitz_writer_flush(blitz_cx *cx, blitz_writer *w) {
    if (!w)
        return BLITZ_READY;
    if (blitz__writer_bad(w))
        return blitz__writer_done(w, BLITZ_EINVAL);
    w->blitz__op = BLITZ__WR_FLUSH;
    for (;;) {
        if (w->blitz__err)
            return blitz__writer_done(w, w->blitz__err);
        if (w->blitz__len == 0)
            return blitz__writer_done(w, 0);
        if (blitz__writer_push(cx, w) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_writer_cancel, w);
    }
}

BLITZ_API blitz_poll blitz_writer_close(blitz_cx *cx, blitz_writer *w) {
    if (!w)
        return BLITZ_READY;
    if (blitz_writer_flush(cx, w) == BLITZ_PENDING) {
        w->blitz__op = BLITZ__WR_CLOSE;
        return blitz__pending(cx, blitz_writer_cancel, w);
    }
    if (w->result < 0)
        return BLITZ_READY;
    return blitz__writer_done(w, blitz_stream_shutdown_write(w->stream));
}

BLITZ_API void blitz_writer_cancel(blitz_cx *cx, void *p) {
    blitz_writer *w = (blitz_writer *)p;
    if (!w)
        return;
    if (w->blitz__writing && w->stream) {
        blitz_stream_write_cancel(cx, w->stream);
        /* How much of the withdrawn write reached the stream is unknown:
         * the writer stays failed rather than resend or drop bytes. */
        if (!w->blitz__err)
            w->blitz__err = BLITZ_ECANCELED;
    }
    w->blitz__writing = 0;
    if (w->blitz__op)
        w->result = BLITZ_ECANCELED;
    w->blitz__op = 0;
}

BLITZ__OP_ADAPTER(blitz__op_write_all_poll, blitz_writer, w,
                  blitz_writer_write_all(cx, w, w->blitz__src, w->blitz__srclen))
BLITZ__OP_ADAPTER(blitz__op_flush_poll, blitz_writer, w, blitz_writer_flush(cx, w))
BLITZ_API blitz_op blitz_op_writer_write_all(blitz_writer *w, const void *src, size_t len) {
    if (w) {
        w->blitz__src = (const unsigned char *)src;
        w->blitz__srclen = len;
    }
    return blitz_op_make(blitz__op_write_all_poll, blitz_writer_cancel, w);
}
BLITZ_API blitz_op blitz_op_writer_flush(blitz_writer *w) {
    return blitz_op_make(blitz__op_flush_poll, blitz_writer_cancel, w);
}
BLITZ__OP_ADAPTER(blitz__op_write_poll, blitz_writer, w,
                  blitz_writer_write(cx, w, w->blitz__src, w->blitz__srclen))
BLITZ__OP_ADAPTER(blitz__op_close_poll, blitz_writer, w, blitz_writer_close(cx, w))
BLITZ_API blitz_op blitz_op_writer_write(blitz_writer *w, const void *src, size_t len) {
    if (w) {
        w->blitz__src = (const unsigned char *)src;
        w->blitz__srclen = len;
    }
    return blitz_op_make(blitz__op_write_poll, blitz_writer_cancel, w);
}
BLITZ_API blitz_op blitz_op_writer_close(blitz_writer *w) {
    return blitz_op_make(blitz__op_close_poll, blitz_writer_cancel, w);
}

/* ---- copy ------------------------------------------------------------------------------------ */

#define BLITZ__CP_UNSET    0
#define BLITZ__CP_BUF      1
#define BLITZ__CP_SPLICE   2 /* one side is a pipe */
#define BLITZ__CP_SPLICE2  3 /* socket to socket through a pipe of the copy's own */
#define BLITZ__CP_SENDFILE 4
#define BLITZ__CP_DONE     5

#define BLITZ__CPW_NONE  0
#define BLITZ__CPW_SRC   1 /* readiness of src */
#define BLITZ__CPW_DST   2 /* readiness of dst */
#define BLITZ__CPW_READ  3 /* a stream read */
#define BLITZ__CPW_WRITE 4 /* a stream write */

BLITZ_API int blitz_copy_init(blitz_copy *c, blitz_stream *src, blitz_stream *dst, unsigned flags) {
    if (!c)
        return BLITZ_EINVAL;
    memset(c, 0, sizeof *c);
    c->blitz__pipe[0] = c->blitz__pipe[1] = -1;
    if (!src || !dst || !src->vtable || !dst->vtable || (flags & ~BLITZ_COPY_NO_SPLICE))
        return BLITZ_EINVAL;
    c->src = src;
    c->dst = dst;
    c->flags = flags;
    return BLITZ_OK;
}

static void blitz__copy_release(blitz_copy *c) {
    if (c->blitz__pipe[0] >= 0)
        close(c->blitz__pipe[0]);
    if (c->blitz__pipe[1] >= 0)
        close(c->blitz__pipe[1]);
    c->blitz__pipe[0] = c->blitz__pipe[1] = -1;
    c->blitz__inpipe = 0;
    blitz__free(c->blitz__buf);
    c->blitz__buf = NULL;
    c->blitz__len = c->blitz__off = 0;
}

static blitz_poll blitz__copy_finish(blitz_copy *c, int64_t result) {
    blitz__copy_release(c);
    c->result = result;
    c->blitz__mode = BLITZ__CP_DONE;
    c->blitz__wait = BLITZ__CPW_NONE;
    return BLITZ_READY;
}

static int blitz__is_fifo(int fd) {
    struct stat sb;
    return fd >= 0 && fstat(fd, &sb) == 0 && S_ISFIFO(sb.st_mode);
}
static int blitz__is_sock(const blitz_stream *st) {
    struct stat sb;
    return st->sock && st->fd >= 0 && fstat(st->fd, &sb) == 0 && S_ISSOCK(sb.st_mode);
}
static int blitz__pollable(const blitz_stream *st) {
    return (st->kind == BLITZ_STREAM_SOCKET || st->kind == BLITZ_STREAM_PIPE) && st->sock;
}

static int blitz__copy_pick(blitz_copy *c) {
    blitz_stream *src = c->src, *dst = c->dst;
    if ((c->flags & BLITZ_COPY_NO_SPLICE) || !blitz__splice_available())
        return BLITZ__CP_BUF;
    if (src->kind == BLITZ_STREAM_FILE && blitz__pollable(dst))
        return BLITZ__CP_SENDFILE;
    if (blitz__pollable(src) && blitz__pollable(dst)) {
        /* A splice reads a source socket directly: not while data its
         * multishot receive queued waits (the buffered copy hands it out). */
        int src_sock = blitz__is_sock(src);
        if (src_sock && !blitz__recv_ms_direct(src->sock))
            return BLITZ__CP_BUF;
        if (blitz__is_fifo(src->fd) || blitz__is_fifo(dst->fd))
            return BLITZ__CP_SPLICE;
        if (src_sock && blitz__is_sock(dst))
            return BLITZ__CP_SPLICE2;
    }
    return BLITZ__CP_BUF;
}

/* A kernel transfer; a code on failure. SIGPIPE is held back. */
static int64_t blitz__copy_splice(int in, int out, size_t n) {
    blitz__nosig g;
    blitz__nosig_begin(&g);
    int64_t r = blitz__splice(in, out, n);
    blitz__nosig_end(&g, r == BLITZ_EPIPE);
    return r;
}
static int64_t blitz__copy_sendfile(int in, int out, size_t n) {
    blitz__nosig g;
    blitz__nosig_begin(&g);
    int64_t r = blitz__sendfile(out, in, n);
    blitz__nosig_end(&g, r == BLITZ_EPIPE);
    return r;
}

/* The kernel refused this pair of descriptors: read and write instead. */
static int blitz__copy_refused(int64_t r) {
    return r == BLITZ_EINVAL || r == BLITZ_ENOSYS || r == BLITZ_EOPNOTSUPP || r == BLITZ_EBADF;
}

/* Which side held up a transfer that would block. */
static int blitz__copy_blocker(blitz_copy *c, int src_fd, int dst_fd) {
    struct pollfd p[2];
    p[0].fd = src_fd;
    p[0].events = POLLIN;
    p[1].fd = dst_fd;
    p[1].events = POLLOUT;
    p[0].revents = p[1].revents = 0;
    int n = src_fd >= 0 ? 2 : 1;
    if (poll(src_fd >= 0 ? p : p + 1, (nfds_t)n, 0) < 0)
        return BLITZ__CPW_DST;
    if (src_fd >= 0 && !p[0].revents)
        return BLITZ__CPW_SRC;
    if (!p[1].revents)
        return BLITZ__CPW_DST;
    (void)c;
    return BLITZ__CPW_NONE;
}

/* READY when the wait the copy is in is over (or it is in none); an
 * error of the wait ends the copy. */
static blitz_poll blitz__copy_wait(blitz_cx *cx, blitz_copy *c, int *failed) {
    blitz_io *op;
    blitz_poll p;
    *failed = 0;
    switch (c->blitz__wait) {
    case BLITZ__CPW_SRC:
        op = &c->blitz__src_io;
        p = blitz_fd_readable(cx, op, c->src->sock);
        break;
    case BLITZ__CPW_DST:
        op = &c->blitz__dst_io;
        p = blitz_fd_writable(cx, op, c->dst->sock);
        break;
    default:
        return BLITZ_READY;
    }
    if (p == BLITZ_PENDING)
        return BLITZ_PENDING;
    c->blitz__wait = BLITZ__CPW_NONE;
    if (op->result < 0) {
        *failed = 1;
        blitz__copy_finish(c, op->result);
    }
    return BLITZ_READY;
}

static blitz_poll blitz__copy_buf(blitz_cx *cx, blitz_copy *c) {
    if (!c->blitz__buf) {
        c->blitz__buf = (unsigned char *)blitz__malloc(BLITZ__COPY_BUF);
        if (!c->blitz__buf)
            return blitz__copy_finish(c, BLITZ_ENOMEM);
    }
    for (int budget = 0;; budget++) {
        if (budget == BLITZ__COPY_BUDGET) {
            blitz_cx_yield(cx);
            return BLITZ_PENDING;
        }
        if (c->blitz__off < c->blitz__len) {
            c->blitz__wait = BLITZ__CPW_WRITE;
            if (blitz_stream_write(cx, c->dst, c->blitz__buf + c->blitz__off,
                                   c->blitz__len - c->blitz__off) == BLITZ_PENDING)
                return BLITZ_PENDING;
            c->blitz__wait = BLITZ__CPW_NONE;
            int64_t r = c->dst->write_result;
            if (r <= 0)
                return blitz__copy_finish(c, r < 0 ? r : BLITZ_EIO);
            c->blitz__off += (size_t)r;
            c->bytes += (uint64_t)r;
            continue;
        }
        c->blitz__wait = BLITZ__CPW_READ;
        if (blitz_stream_read(cx, c->src, c->blitz__buf, BLITZ__COPY_BUF) == BLITZ_PENDING)
            return BLITZ_PENDING;
        c->blitz__wait = BLITZ__CPW_NONE;
        int64_t r = c->src->read_result;
        if (r < 0)
            return blitz__copy_finish(c, r);
        if (r == 0)
            return blitz__copy_finish(c, (int64_t)c->bytes);
        c->blitz__len = (size_t)r;
        c->blitz__off = 0;
    }
}

BLITZ_API blitz_poll blitz_copy_run(blitz_cx *cx, blitz_copy *c) {
    if (!c)
        return BLITZ_READY;
    if (!c->src || !c->dst || !cx) {
        c->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if (c->blitz__mode == BLITZ__CP_DONE) {
        /* a finished copy polled again (BLITZ_AWAIT's re-check) */
        return BLITZ_READY;
    }
    if (c->blitz__mode == BLITZ__CP_UNSET) {
        c->bytes = c->kernel = 0;
        c->blitz__eof = 0;
        c->blitz__mode = blitz__copy_pick(c);
        if (c->blitz__mode == BLITZ__CP_SPLICE2) {
            if (blitz__pipe_fds(c->blitz__pipe) != BLITZ_OK) {
                c->blitz__pipe[0] = c->blitz__pipe[1] = -1;
                c->blitz__mode = BLITZ__CP_BUF;
            } else {
                /* fewer, larger transfers; the default size is fine too */
                blitz__pipe_grow(c->blitz__pipe[1], 1 << 20);
            }
        }
    }
    for (int budget = 0;; budget++) {
        if (c->blitz__mode == BLITZ__CP_BUF)
            return blitz__record(cx, blitz__copy_buf(cx, c), blitz_copy_cancel, c);
        int failed;
        if (blitz__copy_wait(cx, c, &failed) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_copy_cancel, c);
        if (failed)
            return BLITZ_READY;
        if (budget == BLITZ__COPY_BUDGET) {
            blitz_cx_yield(cx);
            return blitz__pending(cx, blitz_copy_cancel, c);
        }
        int src_fd = c->src->fd, dst_fd = c->dst->fd;
        int64_t r;
        int src_side = 1; /* whether src could be the side that blocks */
        if (c->blitz__mode == BLITZ__CP_SENDFILE) {
            r = blitz__copy_sendfile(src_fd, dst_fd, BLITZ__COPY_CHUNK);
            src_side = 0;
        } else if (c->blitz__mode == BLITZ__CP_SPLICE) {
            r = blitz__copy_splice(src_fd, dst_fd, BLITZ__COPY_CHUNK);
        } else if (c->blitz__inpipe > 0) {
            r = blitz__copy_splice(c->blitz__pipe[0], dst_fd, c->blitz__inpipe);
            src_side = 0;
        } else {
            if (c->blitz__eof)
                return blitz__copy_finish(c, (int64_t)c->bytes);
            r = blitz__copy_splice(src_fd, c->blitz__pipe[1], BLITZ__COPY_CHUNK);
            if (r > 0) {
                c->blitz__inpipe = (size_t)r;
                continue;
            }
            if (r == BLITZ_EAGAIN) {
                c->blitz__wait = BLITZ__CPW_SRC;
                continue;
            }
            if (r == 0) {
                c->blitz__eof = 1;
                continue;
            }
        }
        if (r > 0) {
            c->bytes += (uint64_t)r;
            c->kernel += (uint64_t)r;
            if (c->blitz__mode == BLITZ__CP_SPLICE2)
                c->blitz__inpipe -= (size_t)r;
            continue;
        }
        if (r == 0)
            return blitz__copy_finish(c, (int64_t)c->bytes);
        if (r == BLITZ_EAGAIN) {
            c->blitz__wait = blitz__copy_blocker(c, src_side ? src_fd : -1, dst_fd);
            if (c->blitz__wait == BLITZ__CPW_NONE) {
                blitz_cx_yield(cx);
                return blitz__pending(cx, blitz_copy_cancel, c);
            }
            continue;
        }
        if (r == BLITZ_EINTR)
            continue;
        if (blitz__copy_refused(r) && c->blitz__inpipe == 0) {
            /* nothing is held in a pipe of ours: the rest goes through a
             * buffer */
            blitz__copy_release(c);
            c->blitz__mode = BLITZ__CP_BUF;
            continue;
        }
        return blitz__copy_finish(c, r);
    }
}

BLITZ_API void blitz_copy_cancel(blitz_cx *cx, void *p) {
    blitz_copy *c = (blitz_copy *)p;
    if (!c)
        return;
    if (c->blitz__mode == BLITZ__CP_UNSET || c->blitz__mode == BLITZ__CP_DONE)
        return;
    blitz_io_cancel(NULL, &c->blitz__src_io);
    blitz_io_cancel(NULL, &c->blitz__dst_io);
    /* The stream op the copy waits in; a cancelled io_uring receive or
     * send may still use the buffer, and then its completion frees it. */
    blitz_io *held = NULL;
    if (c->blitz__wait == BLITZ__CPW_READ) {
        blitz_stream_read_cancel(cx, c->src);
        held = c->src->sock ? &c->src->blitz__rio : NULL;
    }
    if (c->blitz__wait == BLITZ__CPW_WRITE) {
        blitz_stream_write_cancel(cx, c->dst);
        held = c->dst->sock ? &c->dst->blitz__wio : NULL;
    }
    if (c->blitz__buf && held && blitz__io_free_after(held, c->blitz__buf))
        c->blitz__buf = NULL;
    blitz__copy_finish(c, BLITZ_ECANCELED);
}

BLITZ_API blitz_poll blitz_copy_settle(blitz_cx *cx, blitz_copy *c) {
    if (!c)
        return BLITZ_READY;
    if (blitz_io_settle(cx, &c->blitz__src_io) == BLITZ_PENDING ||
        blitz_io_settle(cx, &c->blitz__dst_io) == BLITZ_PENDING)
        return BLITZ_PENDING;
    if (c->src && blitz_stream_settle(cx, c->src) == BLITZ_PENDING)
        return BLITZ_PENDING;
    if (c->dst && blitz_stream_settle(cx, c->dst) == BLITZ_PENDING)
        return BLITZ_PENDING;
    return BLITZ_READY;
}

BLITZ__OP_ADAPTER(blitz__op_copy_poll, blitz_copy, c, blitz_copy_run(cx, c))
BLITZ_API blitz_op blitz_op_copy(blitz_copy *c) {
    return blitz_op_make(blitz__op_copy_poll, blitz_copy_cancel, c);
}
/* ====[ END src/os/stream.c ]============================================== */
/* ########################################################################## */
/* LAYER runtime: the runtime's life: creation, run, graceful shutdown       */
/* ########################################################################## */
/* ====[ BEGIN src/runtime/serve.c ]======================================== */
/* >>runtime/serve */
/* Serving: an accept loop bound to a graceful shutdown, one task per
 * connection.
 *
 * The acceptor is a tracked task of the shutdown, so the run waits for it
 * and the coordinator outlives its wait on the token; the run does not
 * count it among the connections. It races each accept against the
 * shutdown's token; at the trigger the accept is withdrawn and settled
 * and the listener closed.
 *
 * A connection's state is the user's, behind a small head that holds the
 * user's poll and drop and the socket. The head closes the socket however
 * the task ends: its poll when the user's returns READY, its cancel hook
 * when the task is cancelled (the op it waited in is withdrawn first),
 * its drop when the task never ran, and the acceptor when the spawn
 * fails. So the user never closes a served socket. */
/* src/io/io.h already included */

#define BLITZ__SERVE_ACCEPT  0
#define BLITZ__SERVE_BACKOFF 1
#define BLITZ__SERVE_SETTLE  2
#define BLITZ__SERVE_DONE    3

/* An accept error (out of descriptors, say) is retried after this. */
#define BLITZ__SERVE_BACKOFF_NS (10 * BLITZ_MSEC)

typedef struct {
    blitz_poll_fn poll;
    blitz_drop_fn drop;
    blitz_socket *sock;
} blitz__serve_head;

/* The user's state keeps the alignment a task's state has. */
#define BLITZ__SERVE_HEAD ((sizeof(blitz__serve_head) + 7u) & ~(size_t)7u)

typedef struct {
    blitz_shutdown *sd;
    blitz_serve_opts opts;
    int phase, armed;
    blitz_io io;
    blitz_cancel_token_wait_op stop;
    blitz_combo race;
    blitz_op ops[2];
    blitz_timer backoff;
} blitz__serve;

static void *blitz__serve_user(void *head) {
    return (char *)head + BLITZ__SERVE_HEAD;
}

static void blitz__serve_conn_close(blitz__serve_head *h) {
    if (h->sock) {
        blitz_sock_close(h->sock);
        h->sock = NULL;
    }
}

static blitz_poll blitz__serve_conn_poll(blitz_cx *cx, void *p) {
    blitz__serve_head *h = (blitz__serve_head *)p;
    if (h->poll(cx, blitz__serve_user(h)) == BLITZ_PENDING)
        return BLITZ_PENDING;
    blitz__serve_conn_close(h);
    return BLITZ_READY;
}

static void blitz__serve_conn_cancel(void *p) {
    blitz__serve_conn_close((blitz__serve_head *)p);
}

static void blitz__serve_conn_drop(void *p) {
    blitz__serve_head *h = (blitz__serve_head *)p;
    blitz__serve_conn_close(h);
    if (h->drop)
        h->drop(blitz__serve_user(h));
}

typedef struct {
    const blitz_serve_opts *opts;
    blitz_socket *sock;
} blitz__serve_conn_arg;

/* Builds the state in place: a large one is never copied twice. */
static void blitz__serve_conn_init(void *p, void *arg) {
    const blitz__serve_conn_arg *a = (const blitz__serve_conn_arg *)arg;
    blitz__serve_head *h = (blitz__serve_head *)p;
    h->poll = a->opts->poll;
    h->drop = a->opts->drop;
    h->sock = a->sock;
    char *user = (char *)blitz__serve_user(h);
    if (a->opts->state)
        memcpy(user, a->opts->state, a->opts->size);
    memcpy(user + a->opts->socket_offset, &a->sock, sizeof a->sock);
}

static void blitz__serve_conn_spawn(blitz__serve *s, blitz_socket *sock) {
    blitz__serve_conn_arg a = {&s->opts, sock};
    blitz_spawn_opts o;
    memset(&o, 0, sizeof o);
    o.poll = blitz__serve_conn_poll;
    o.size = BLITZ__SERVE_HEAD + s->opts.size;
    o.drop = blitz__serve_conn_drop;
    o.cancel = blitz__serve_conn_cancel;
    o.timeout_ns = s->opts.timeout_ns;
    o.init = blitz__serve_conn_init;
    o.init_arg = &a;
    /* A failed spawn discards the block without its hooks: the socket is
     * still ours (the grace period is over, or memory ran out). */
    if (blitz_shutdown_spawn_ex(s->sd, &o) != BLITZ_OK)
        blitz_sock_close(sock);
}

static void blitz__serve_close_listener(blitz__serve *s) {
    if (s->opts.listener) {
        blitz_sock_close(s->opts.listener);
        s->opts.listener = NULL;
    }
}

BLITZ_PRIVATE blitz_poll blitz__serve_poll(blitz_cx *cx, void *p) {
    blitz__serve *s = (blitz__serve *)p;
    for (;;) {
        switch (s->phase) {
        case BLITZ__SERVE_ACCEPT:
            if (!s->armed) {
                s->ops[0] = blitz_op_sock_accept(&s->io, s->opts.listener);
                s->ops[1] = blitz_op_cancel_token_wait(&s->stop, blitz_shutdown_token(s->sd));
                blitz_combo_reset(&s->race);
                s->armed = 1;
            }
            if (blitz_race(cx, &s->race, s->ops, 2) == BLITZ_PENDING)
                return BLITZ_PENDING;
            s->armed = 0;
            if (s->race.winner != 0)
                s->phase = BLITZ__SERVE_SETTLE; /* the accept was withdrawn */
            else if (s->io.result < 0)
                s->phase = BLITZ__SERVE_BACKOFF;
            else
                blitz__serve_conn_spawn(s, s->io.socket);
            break;
        case BLITZ__SERVE_BACKOFF:
            if (blitz_sleep(cx, &s->backoff, BLITZ__SERVE_BACKOFF_NS) == BLITZ_PENDING)
                return BLITZ_PENDING;
            s->phase = BLITZ__SERVE_ACCEPT;
            break;
        case BLITZ__SERVE_SETTLE:
            if (blitz_io_settle(cx, &s->io) == BLITZ_PENDING)
                return BLITZ_PENDING;
            blitz__serve_close_listener(s);
            s->phase = BLITZ__SERVE_DONE;
            return BLITZ_READY;
        default:
            return BLITZ_READY;
        }
    }
}

/* Cancelled (a grace period of 0, the coordinator freed, the runtime
 * freed): the race or sleep was withdrawn already. */
static void blitz__serve_cancel(void *p) {
    blitz__serve_close_listener((blitz__serve *)p);
}

BLITZ_PRIVATE int blitz__serve_is_acceptor(blitz_task *h) {
    return blitz__handle_in(h, __func__)->poll == blitz__serve_poll;
}

BLITZ_API int blitz_serve(blitz_shutdown *sd, const blitz_serve_opts *opts) {
    if (!sd || !opts || !opts->listener || !opts->poll || opts->timeout_ns < 0 ||
        opts->size < sizeof(blitz_socket *) ||
        opts->socket_offset > opts->size - sizeof(blitz_socket *) ||
        opts->size > BLITZ_MAX_STATE_SIZE - BLITZ__SERVE_HEAD)
        return BLITZ_EINVAL;
    BLITZ__SOCK_CHECK(opts->listener);
    blitz__serve s;
    memset(&s, 0, sizeof s);
    s.sd = sd;
    s.opts = *opts;
    blitz_spawn_opts o;
    memset(&o, 0, sizeof o);
    o.poll = blitz__serve_poll;
    o.state = &s;
    o.size = sizeof s;
    o.cancel = blitz__serve_cancel;
    return blitz_shutdown_spawn_ex(sd, &o);
}
/* ====[ END src/runtime/serve.c ]========================================== */
/* ====[ BEGIN src/runtime/shutdown.c ]===================================== */
/* >>runtime/shutdown */
/* Graceful shutdown: a trigger (a call or a signal), a cancellation token
 * the acceptors race against, and the handles of the tracked in-flight
 * tasks, which the run awaits until the grace period ends and then
 * cancels. */
/* src/io/io.h already included */

struct blitz_shutdown {
    blitz_runtime *rt;
    blitz_cancel_token token;
    blitz_signal sig;
    int has_sig;
    blitz__mutex lock;
    /* Tracked tasks not yet known to be finished (under lock). */
    blitz_task **tasks;
    size_t ntasks, cap;
    int closed;   /* the grace period is over: no more tracked spawns */
    int running;  /* a run has started */
    int draining; /* triggered: the run now holds indexes into `tasks` */
    blitz__atomic_u32 triggered;
};

BLITZ_API int blitz_shutdown_new(blitz_runtime *rt, const blitz_shutdown_opts *opts,
                                 blitz_shutdown **out) {
    if (out)
        *out = NULL;
    if (!rt || !out)
        return BLITZ_EINVAL;
    blitz_shutdown *sd = (blitz_shutdown *)blitz__calloc(sizeof *sd);
    if (!sd)
        return BLITZ_ENOMEM;
    sd->rt = rt;
    blitz_cancel_token_init(&sd->token);
    blitz__mutex_init(&sd->lock);
    static const int defaults[2] = {SIGINT, SIGTERM};
    const int *sigs = defaults;
    int n = 2;
    if (opts && opts->nsignals != 0) {
        sigs = opts->signals;
        n = opts->nsignals < 0 ? 0 : opts->nsignals;
        if (n > 0 && !sigs) {
            blitz_shutdown_free(sd);
            return BLITZ_EINVAL;
        }
    }
    for (int i = 0; i < n; i++) {
        int rc = sd->has_sig ? blitz_signal_add(&sd->sig, sigs[i])
                             : blitz_signal_init(&sd->sig, sigs[i]);
        if (rc != BLITZ_OK) {
            blitz_shutdown_free(sd);
            return rc;
        }
        sd->has_sig = 1;
    }
    *out = sd;
    return BLITZ_OK;
}

BLITZ_API int blitz_shutdown_trigger(blitz_shutdown *sd) {
    if (!sd)
        return BLITZ_EINVAL;
    blitz__u32_store(&sd->triggered, 1, BLITZ__RELEASE);
    blitz_cancel_token_cancel(&sd->token);
    return BLITZ_OK;
}

BLITZ_API int blitz_shutdown_triggered(const blitz_shutdown *sd) {
    return sd ? (int)blitz__u32_load(&sd->triggered, BLITZ__ACQUIRE) : 0;
}

BLITZ_API blitz_cancel_token *blitz_shutdown_token(blitz_shutdown *sd) {
    return sd ? &sd->token : NULL;
}

/* Releases the handles of tasks that finished (under lock): a server
 * that runs for days keeps only its live connections here. */
static void blitz__shutdown_prune(blitz_shutdown *sd) {
    size_t keep = 0;
    for (size_t i = 0; i < sd->ntasks; i++) {
        if (blitz_task_status(sd->tasks[i]) == BLITZ_EAGAIN)
            sd->tasks[keep++] = sd->tasks[i];
        else
            blitz_task_release(&sd->tasks[i]);
    }
    sd->ntasks = keep;
}

BLITZ_API int blitz_shutdown_spawn_ex(blitz_shutdown *sd, const blitz_spawn_opts *opts) {
    if (!sd || !opts)
        return BLITZ_EINVAL;
    blitz__mutex_lock(&sd->lock);
    if (sd->closed) {
        blitz__mutex_unlock(&sd->lock);
        return BLITZ_ECLOSED;
    }
    if (sd->ntasks == sd->cap && !sd->draining)
        blitz__shutdown_prune(sd);
    if (sd->ntasks == sd->cap) {
        size_t cap = sd->cap ? sd->cap * 2 : 16;
        blitz_task **t = (blitz_task **)blitz__malloc(cap * sizeof *t);
        if (!t) {
            blitz__mutex_unlock(&sd->lock);
            return BLITZ_ENOMEM;
        }
        if (sd->ntasks)
            memcpy(t, sd->tasks, sd->ntasks * sizeof *t);
        blitz__free(sd->tasks);
        sd->tasks = t;
        sd->cap = cap;
    }
    blitz_task *h = NULL;
    int rc = blitz_spawn_ex(sd->rt, opts, &h);
    if (rc == BLITZ_OK)
        sd->tasks[sd->ntasks++] = h;
    blitz__mutex_unlock(&sd->lock);
    return rc;
}

BLITZ_API int blitz_shutdown_spawn(blitz_shutdown *sd, blitz_poll_fn poll, const void *state,
                                   size_t size) {
    blitz_spawn_opts o = blitz__plain_opts(poll, state, size);
    return blitz_shutdown_spawn_ex(sd, &o);
}

BLITZ_API size_t blitz_shutdown_in_flight(blitz_shutdown *sd) {
    if (!sd)
        return 0;
    size_t n = 0;
    blitz__mutex_lock(&sd->lock);
    for (size_t i = 0; i < sd->ntasks; i++)
        n += blitz_task_status(sd->tasks[i]) == BLITZ_EAGAIN &&
             !blitz__serve_is_acceptor(sd->tasks[i]);
    blitz__mutex_unlock(&sd->lock);
    return n;
}

/* The handle at index i, or NULL past the end; closes the coordinator
 * when asked to at the end, so no spawn slips in after the last look. */
static blitz_task *blitz__shutdown_at(blitz_shutdown *sd, size_t i, int close_at_end) {
    blitz__mutex_lock(&sd->lock);
    blitz_task *t = i < sd->ntasks ? sd->tasks[i] : NULL;
    if (!t && close_at_end)
        sd->closed = 1;
    blitz__mutex_unlock(&sd->lock);
    return t;
}

#define BLITZ__SD_WAIT   0 /* for the trigger */
#define BLITZ__SD_GRACE  1 /* tracked tasks may finish */
#define BLITZ__SD_CANCEL 2 /* cancel and join the rest */
#define BLITZ__SD_DONE   3

BLITZ_API blitz_poll blitz_shutdown_run(blitz_cx *cx, blitz_shutdown_run_op *op, blitz_shutdown *sd,
                                        int64_t grace_ns) {
    if (!op)
        return BLITZ_READY;
    if (op->blitz__sd != sd || !sd) {
        if (!sd || !cx) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        blitz__mutex_lock(&sd->lock);
        int busy = sd->running;
        sd->running = 1;
        blitz__mutex_unlock(&sd->lock);
        if (busy) {
            op->result = BLITZ_EBUSY;
            return BLITZ_READY;
        }
        blitz_shutdown *arg_sd = op->blitz__arg_sd;
        int64_t arg_grace = op->blitz__arg_grace;
        memset(op, 0, sizeof *op);
        op->blitz__arg_sd = arg_sd;
        op->blitz__arg_grace = arg_grace;
        op->blitz__sd = sd;
        op->blitz__phase = BLITZ__SD_WAIT;
        blitz_combo_reset(&op->blitz__combo);
    }
    for (;;) {
        switch (op->blitz__phase) {
        case BLITZ__SD_WAIT: {
            size_t n = 1;
            op->blitz__ops[0] = blitz_op_cancel_token_wait(&op->blitz__tw, &sd->token);
            if (sd->has_sig)
                op->blitz__ops[n++] = blitz_op_signal_recv(&sd->sig);
            if (blitz_race(cx, &op->blitz__combo, op->blitz__ops, n) == BLITZ_PENDING)
                return blitz__pending(cx, blitz_shutdown_run_cancel, op);
            if (op->blitz__combo.winner == 1)
                op->signo = sd->sig.signo;
            blitz_shutdown_trigger(sd);
            /* What finished before the trigger was not in flight. */
            blitz__mutex_lock(&sd->lock);
            blitz__shutdown_prune(sd);
            sd->draining = 1;
            blitz__mutex_unlock(&sd->lock);
            op->blitz__deadline = blitz_deadline_after(blitz_cx_now(cx), grace_ns);
            op->blitz__phase = grace_ns > 0 ? BLITZ__SD_GRACE : BLITZ__SD_CANCEL;
            op->blitz__idx = 0;
            blitz_combo_reset(&op->blitz__combo);
            break;
        }
        case BLITZ__SD_GRACE: {
            blitz_task *t = blitz__shutdown_at(sd, op->blitz__idx, 0);
            if (!t) {
                /* every tracked task finished in time; close, then look
                 * once more for one spawned meanwhile */
                if (!blitz__shutdown_at(sd, op->blitz__idx, 1)) {
                    op->blitz__phase = BLITZ__SD_CANCEL;
                    break;
                }
                continue;
            }
            op->blitz__ops[0] = blitz_op_join(t);
            op->blitz__ops[1] = blitz_op_sleep_until(&op->blitz__timer, op->blitz__deadline);
            if (blitz_race(cx, &op->blitz__combo, op->blitz__ops, 2) == BLITZ_PENDING)
                return blitz__pending(cx, blitz_shutdown_run_cancel, op);
            int won = op->blitz__combo.winner;
            blitz_combo_reset(&op->blitz__combo);
            if (won == 0) {
                op->blitz__idx++;
                break;
            }
            op->blitz__phase = BLITZ__SD_CANCEL;
            break;
        }
        case BLITZ__SD_CANCEL: {
            blitz__mutex_lock(&sd->lock);
            sd->closed = 1;
            for (size_t i = op->blitz__idx; i < sd->ntasks; i++)
                blitz_task_cancel(sd->tasks[i]);
            blitz_task *t = op->blitz__idx < sd->ntasks ? sd->tasks[op->blitz__idx] : NULL;
            blitz__mutex_unlock(&sd->lock);
            if (t) {
                if (blitz_join(cx, t) == BLITZ_PENDING)
                    return blitz__pending(cx, blitz_shutdown_run_cancel, op);
                op->blitz__idx++;
                break;
            }
            /* Every handle is finished: count and release them. */
            blitz__mutex_lock(&sd->lock);
            for (size_t i = 0; i < sd->ntasks; i++) {
                if (blitz__serve_is_acceptor(sd->tasks[i]))
                    ; /* a listener, not in flight */
                else if (blitz_task_status(sd->tasks[i]) == BLITZ_OK)
                    op->finished++;
                else
                    op->cancelled++;
                blitz_task_release(&sd->tasks[i]);
            }
            sd->ntasks = 0;
            blitz__mutex_unlock(&sd->lock);
            op->result = BLITZ_OK;
            op->blitz__phase = BLITZ__SD_DONE;
            return BLITZ_READY;
        }
        default:
            return BLITZ_READY;
        }
    }
}

BLITZ__OP_ADAPTER(blitz__shutdown_run_op_poll, blitz_shutdown_run_op, op,
                  op ? blitz_shutdown_run(cx, op, op->blitz__arg_sd, op->blitz__arg_grace)
                     : BLITZ_READY)
BLITZ_API blitz_op blitz_op_shutdown_run(blitz_shutdown_run_op *op, blitz_shutdown *sd,
                                         int64_t grace_ns) {
    if (op) {
        op->blitz__arg_sd = sd;
        op->blitz__arg_grace = grace_ns;
    }
    return blitz_op_make(blitz__shutdown_run_op_poll, blitz_shutdown_run_cancel, op);
}

BLITZ_API void blitz_shutdown_run_cancel(blitz_cx *cx, void *p) {
    blitz_shutdown_run_op *op = (blitz_shutdown_run_op *)p;
    if (!op || !op->blitz__sd || op->blitz__phase == BLITZ__SD_DONE)
        return;
    blitz_shutdown *sd = op->blitz__sd;
    if (op->blitz__phase == BLITZ__SD_WAIT || op->blitz__phase == BLITZ__SD_GRACE)
        blitz_combo_cancel(cx, &op->blitz__combo, op->blitz__ops,
                           op->blitz__phase == BLITZ__SD_WAIT ? (size_t)(1 + sd->has_sig) : 2);
    if (op->blitz__phase == BLITZ__SD_CANCEL) {
        blitz__mutex_lock(&sd->lock);
        if (op->blitz__idx < sd->ntasks)
            blitz_join_cancel(cx, sd->tasks[op->blitz__idx]);
        blitz__mutex_unlock(&sd->lock);
    }
    blitz__mutex_lock(&sd->lock);
    sd->closed = 1;
    sd->running = 0;
    for (size_t i = 0; i < sd->ntasks; i++)
        blitz_task_cancel(sd->tasks[i]);
    blitz__mutex_unlock(&sd->lock);
    op->result = BLITZ_ECANCELED;
    op->blitz__phase = BLITZ__SD_DONE;
}

BLITZ_API int blitz_shutdown_free(blitz_shutdown *sd) {
    if (!sd)
        return BLITZ_EINVAL;
    if (sd->has_sig)
        blitz_signal_deinit(&sd->sig);
    for (size_t i = 0; i < sd->ntasks; i++) {
        blitz_task_cancel(sd->tasks[i]);
        blitz_task_release(&sd->tasks[i]);
    }
    blitz__free(sd->tasks);
    blitz_cancel_token_deinit(&sd->token);
    blitz__mutex_destroy(&sd->lock);
    blitz__free(sd);
    return BLITZ_OK;
}
/* ====[ END src/runtime/shutdown.c ]======================================= */
/* ====[ BEGIN src/runtime/runtime.c ]====================================== */
/* >>runtime/runtime */
/* The runtime's public face: create, run, shut down, free, statistics.
 *
 * Shutdown protocol:
 *   1. set `shutdown` (spawns now fail), wait for spawns on other threads
 *      that passed the check to queue their blocks (`spawning`), and close
 *      the global queue (pushes fail; a task that cannot be queued stays
 *      SCHEDULED);
 *   2. wake every worker / the current-thread driver and wait until no
 *      thread polls a task of this runtime: join the workers, wait for the
 *      driver to leave and for helping joiners (external_running) to finish;
 *   3. stop the blocking pool (blitz__pool_shutdown): queued jobs complete
 *      as cancelled, running ones are waited for;
 *   4. sweep: walk every live task block and complete each unfinished task
 *      as cancelled (joiners wake with BLITZ_ECANCELED; tasks nobody holds
 *      are freed, running their drop functions);
 * and blitz_runtime_free then runs the drop functions of the blocks still
 * held (handles, wakers) and frees all memory. */
/* src/io/io.h already included */

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
    blitz__global_queue_destroy(rt->global);
    blitz__time_destroy(rt);
    blitz__pool_destroy(rt->pool);
    blitz__mutex_destroy(&rt->start_lock);
    blitz__mutex_destroy(&rt->alloc_lock);
    blitz__free(rt);
}

/* The runtime and the parts of it the layers above the task core own, in
 * one allocation (the runtime first, so freeing it frees them all). */
typedef struct blitz__runtime_block {
    blitz_runtime rt;
    BLITZ__ALIGNED blitz__global_queue global;
    blitz__idle idle;
    blitz__time_driver time;
    blitz__pool pool;
} blitz__runtime_block;

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
    blitz__runtime_block *block = (blitz__runtime_block *)blitz__calloc(sizeof *block);
    if (!block)
        return BLITZ_ENOMEM;
    blitz_runtime *rt = &block->rt;
    rt->global = &block->global;
    rt->idle = &block->idle;
    rt->time = &block->time;
    rt->pool = &block->pool;
    rt->flavor = c.flavor;
    rt->park_timeout_ns = c.park_timeout_ns;
    rt->spin_before_park = c.spin_before_park == UINT32_MAX ? 0
                           : c.spin_before_park             ? c.spin_before_park
                                                            : BLITZ__DEFAULT_SPIN;
    rt->spin_explicit = c.spin_before_park != 0;
    rt->fixed_interval = c.global_queue_interval;
    if (rt->fixed_interval && rt->fixed_interval < 1)
        rt->fixed_interval = 1;
    int rc = blitz__global_queue_init(rt->global);
    if (rc == 0)
        rc = blitz__mutex_init(&rt->start_lock);
    if (rc == 0)
        rc = blitz__mutex_init(&rt->alloc_lock);
    if (rc == 0)
        rc = blitz__pool_init(rt->pool, &c);
    if (rc != 0) {
        blitz__free(rt);
        return rc;
    }
    blitz__idle_init(rt->idle);
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
        rt->ct_parker = &rt->ct->parker;
    }
    rc = blitz__io_create(rt, c.backend);
    if (rc == BLITZ_OK && rt->io) {
        for (uint32_t i = 0; rt->workers && i < rt->num_workers; i++)
            rt->workers[i].parker.wake_fd = blitz__io_wake_fd(rt->io, i);
        if (rt->ct)
            rt->ct->parker.wake_fd = blitz__io_wake_fd(rt->io, UINT32_MAX);
    }
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
    /* Seq_cst pairs with the helpers' announce-then-check (worker.c) and
     * with spawns' (blitz__spawn_enter). */
    blitz__u32_store(&rt->shutdown, 1, BLITZ__SEQ_CST);
    /* Spawns on other threads that passed the check finish queueing their
     * blocks, before the queue closes: no block is left half made or
     * being given back when the sweep comes. They may need start_lock. */
    while (blitz__u32_load(&rt->spawning, BLITZ__ACQUIRE))
        sched_yield();
    blitz__mutex_lock(&rt->start_lock);
    if (rt->shutdown_done) {
        blitz__mutex_unlock(&rt->start_lock);
        return BLITZ_OK;
    }
    blitz__global_queue_close(rt->global);
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
    /* Jobs that never started are cancelled, running ones finish: after
     * this no pool thread touches a task, so the sweep may. */
    blitz__pool_shutdown(rt);
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

/* Blocks not yet freed that no join handle keeps: those a thread may
 * still be about to let go of. A block a handle keeps stays until the
 * handle is released, so waiting for it would only stall. Acquire pairs
 * with blitz__count_freed. */
static int blitz__blocks_in_flight(blitz_runtime *rt) {
    const blitz__worker_counters *k = &rt->remote_counters;
    uint64_t spawned = blitz__u64_load(&k->spawned, BLITZ__ACQUIRE);
    uint64_t freed = blitz__u64_load(&k->freed, BLITZ__ACQUIRE);
    uint64_t handles = blitz__u64_load(&k->handles, BLITZ__ACQUIRE);
    uint64_t released = blitz__u64_load(&k->handles_released, BLITZ__ACQUIRE);
    for (uint32_t i = 0; i < rt->num_workers; i++) {
        k = rt->workers ? &rt->workers[i].counters : &rt->ct->counters;
        spawned += blitz__u64_load(&k->spawned, BLITZ__ACQUIRE);
        freed += blitz__u64_load(&k->freed, BLITZ__ACQUIRE);
        handles += blitz__u64_load(&k->handles, BLITZ__ACQUIRE);
        released += blitz__u64_load(&k->handles_released, BLITZ__ACQUIRE);
    }
    return spawned - freed > handles - released;
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
     * completion. Give such references a moment to go; handles the program
     * still holds will not (their blocks are not waited for), nor will
     * wakers it holds, and both stay invalid after this. */
    uint64_t start = blitz__now_ns();
    while (blitz__blocks_in_flight(rt) && blitz__now_ns() - start < BLITZ__FREE_GRACE_NS)
        sched_yield();
    blitz__io_destroy(rt);
    blitz__block_walk(rt, blitz__final_drop);
    blitz__pool_free_records(rt);
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
        blitz__block_on(rt, blitz__handle_in(h, __func__));
    }
    rc = blitz_join_blocking(h);
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
    out->global_queue_depth = blitz__u64_load(&rt->global->len, BLITZ__RELAXED);
    out->num_workers = rt->num_workers;
    out->workers_started = rt->workers
                               ? blitz__u32_load(&rt->workers_started, BLITZ__RELAXED)
                               : (uint32_t)(blitz__u32_load(&rt->ct->driving, BLITZ__RELAXED) != 0);
    return BLITZ_OK;
}
/* ====[ END src/runtime/runtime.c ]======================================== */
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
