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
 * the trailer), TIMED_OUT (the cancel came from that deadline), HAS_NAME (a name pointer sits
 * before the hooks), TRACED (task hooks are set). ref_count: one reference for the
 * task's life until completion (the runtime's own, standing in for Tokio's owned-task list), one
 * for the handle, one per cloned waker. The block is freed when it reaches zero.
 *
 * Every transition is one CAS (or one RMW) on the word, so two parties never
 * both believe they own a step. Transitions that publish the user's state
 * (RUNNING -> COMPLETE) are release; the matching readers are acquire. */
#include "core.h"

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
#define BLITZ__TASK_HAS_NAME          ((uint64_t)1 << 8)
/* The stored join waker's vtable (join.c): 0 the task waker's, 1-6 the
 * runtime's table, BOXED a heap copy of the whole waker in join_data.
 * Meaningful only while JOIN_WAKER is set. */
#define BLITZ__JOIN_VT_SHIFT 9
#define BLITZ__JOIN_VT_MASK  ((uint64_t)7 << BLITZ__JOIN_VT_SHIFT)
#define BLITZ__JOIN_VT_BOXED 7u
/* The runtime has task hooks: completion reports the end without looking
 * the runtime up otherwise. */
#define BLITZ__TASK_TRACED ((uint64_t)1 << 15)

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
 * due). Returns 1 when the caller must reschedule the task. Going IDLE, the
 * task is stamped with *clock (the dump's idle time) unless `clock` is
 * NULL: before the transition, as from IDLE on a waker may link it through
 * the same slot. Acq_rel: the release publishes the poll's writes to
 * whoever wakes the task next; the acquire pairs with a waker's release
 * when NOTIFIED was set. */
static inline int blitz__state_to_idle(blitz__task *t, int yielded, const uint64_t *clock) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        BLITZ_ASSERT(blitz__lifecycle(s) == BLITZ__LC_RUNNING);
        int again = yielded || (s & BLITZ__TASK_NOTIFIED) || blitz__cancel_due(s);
        if (!again && clock)
            t->idle_since = *clock;
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
 * cleared: from here the completer owns join_data. Release publishes the
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
