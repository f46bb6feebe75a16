/* OnceCell: EMPTY -> INITIALIZING (one claimer) -> READY, or back to EMPTY
 * (or to the first waiter) when the claimer abandons.
 *
 * State word: phase | WAITERS. WAITERS is raised under the lock, by a CAS
 * that fails if the phase changed, when an op queues (only while
 * INITIALIZING) and cleared under the lock when the queue empties. Complete
 * and abandon look at the word first and take the lock only when WAITERS
 * is set, so set / get with nobody waiting are lock-free; an enqueue that
 * races a completion either sees READY (its CAS fails) or is seen by it. */
#include "sync_internal.h"

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
