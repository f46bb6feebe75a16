/* Notify: one stored permit plus a FIFO of waiters.
 *
 * State word: PERMIT | WAITERS. WAITERS is set and cleared under the lock
 * together with the queue becoming non-empty / empty; PERMIT is set without
 * the lock only while WAITERS is clear, by a CAS on the same word. So a
 * notify_one either stores the permit before a waiter's enqueue CAS (which
 * then fails and consumes it) or sees WAITERS and wakes a queued op under
 * the lock: a notification is never lost between a waiter's check and its
 * enqueue. */
#include "sync_internal.h"

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
