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
