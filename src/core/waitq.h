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
