/* Shared by the synchronization primitives: the lock word and the atomic
 * words that live in their public structs. */
#ifndef BLITZ__SYNC_INTERNAL_H
#define BLITZ__SYNC_INTERNAL_H

#include "../core/core.h"
#include "../core/waitq.h"

/* The primitives' public structs hold plain integers; these give them the
 * atomics layer's types (same size and layout: a struct of one word). */
static inline blitz__atomic_u32 *blitz__atomic_u32_at(uint32_t *p) {
    return (blitz__atomic_u32 *)(void *)p;
}
static inline blitz__atomic_u64 *blitz__atomic_u64_at(uint64_t *p) {
    return (blitz__atomic_u64 *)(void *)p;
}

/* A lock in one 32-bit word of a public struct (zero = unlocked, so a
 * zero-filled primitive and a static word are ready to use). With futexes it
 * is blitz__mutex itself; elsewhere a test-and-test-and-set lock that yields
 * the thread while it waits. */
#if BLITZ__HAS_FUTEX
typedef char blitz__word_lock_fits[sizeof(blitz__mutex) == sizeof(uint32_t) ? 1 : -1];
static inline void blitz__word_lock(uint32_t *w) {
    blitz__mutex_lock((blitz__mutex *)(void *)w);
}
static inline void blitz__word_unlock(uint32_t *w) {
    blitz__mutex_unlock((blitz__mutex *)(void *)w);
}
#else
static inline void blitz__word_lock(uint32_t *w) {
    blitz__atomic_u32 *a = blitz__atomic_u32_at(w);
    for (;;) {
        uint32_t free_word = 0;
        if (blitz__u32_cas(a, &free_word, 1, BLITZ__ACQUIRE))
            return;
        while (blitz__u32_load(a, BLITZ__RELAXED) != 0)
            blitz__yield();
    }
}
static inline void blitz__word_unlock(uint32_t *w) {
    blitz__u32_store(blitz__atomic_u32_at(w), 0, BLITZ__RELEASE);
}
#endif

/* A queued waiter polled again: under the lock, it takes the polling task's
 * waker if it is still queued. Returns whether it is (the poll stays
 * pending); if not, it completed meanwhile and its result is ready. */
static inline int blitz__waiter_repoll(uint32_t *lock, blitz__waiter *w, blitz_cx *cx) {
    blitz_waker old = blitz_waker_noop();
    blitz_waker mine = blitz_cx_waker(cx);
    blitz__word_lock(lock);
    uint32_t st = blitz__u32_field_load(&w->blitz__state, BLITZ__RELAXED);
    if (st == BLITZ__WAITER_QUEUED)
        old = blitz__waiter_refresh(w, &mine);
    blitz__word_unlock(lock);
    blitz_waker_drop(old);
    return st == BLITZ__WAITER_QUEUED;
}

/* Cancel of a waiter that is not idle: takes the lock and, if `w` is still
 * queued, withdraws it from `q` and returns 1 with the lock still held, for
 * the primitive's own bookkeeping; *mine is its waker, to be dropped after
 * the lock. Otherwise it completed meanwhile: returns 0, lock released. */
static inline int blitz__waiter_withdraw_locked(uint32_t *lock, blitz__waitq *q, blitz__waiter *w,
                                                blitz_waker *mine) {
    *mine = blitz_waker_noop();
    blitz__word_lock(lock);
    if (blitz__u32_field_load(&w->blitz__state, BLITZ__RELAXED) != BLITZ__WAITER_QUEUED) {
        blitz__word_unlock(lock);
        return 0;
    }
    *mine = blitz__waitq_withdraw(q, w);
    return 1;
}

/* The waiter's container: every primitive embeds the waiter first in its
 * op struct. */
#define BLITZ__OP_OF(type, w) ((type *)(void *)(w))

/* The op form of a wait: a NULL op is ready at once, as with the poll call,
 * and the op's target is bound only while the op is idle, so making the op
 * again for a queued waiter cannot move it to another object. */
#define BLITZ__WAIT_OP_ADAPTER(name, type, call) \
    BLITZ__OP_ADAPTER(name, type, op, op ? (call) : BLITZ_READY)
#define BLITZ__WAIT_OP_IDLE(op) ((op) && blitz__waiter_state(&(op)->blitz__w) == BLITZ__WAITER_IDLE)

#endif
