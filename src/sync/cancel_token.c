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
#include "sync_internal.h"

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
