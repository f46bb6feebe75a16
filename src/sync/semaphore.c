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
#include "sync_internal.h"

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
