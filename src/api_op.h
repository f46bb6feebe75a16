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
