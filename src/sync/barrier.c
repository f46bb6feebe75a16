/* Barrier: an arrival count and a generation under one lock. The wait
 * that completes a generation is its leader: it bumps the generation,
 * resets the count and wakes the waiters of its generation (each waiter
 * remembers the generation it joined, so ops of the next one that queue
 * while a batch is being woken stay queued). */
#include "sync_internal.h"

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
