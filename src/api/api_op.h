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
