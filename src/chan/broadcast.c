/* The broadcast channel: a ring of the last `cap` values, each slot a
 * seqlock (a stamp and the value's words), written by senders one at a time
 * and read by receivers without any lock, each from its own position. A
 * receiver that was lapped notices it from the stamp and is moved to the
 * oldest value still kept. Senders take turns through a lock bit in the
 * tail (one CAS to take, a plain store to give back); the waiters of recv
 * sit behind a separate lock that a send takes only when a counter says
 * someone waits.
 *
 * Stamps: 2p + 2 when the slot holds position p in full, 2p + 1 while p is
 * being written into it. The value words are atomics (stored with release,
 * loaded with acquire, both plain moves on x86), so a read that overlaps a
 * write is no data race: it sees a changed stamp afterwards and is
 * discarded. */
#include "../core/core.h"
#include "../core/waitq.h"

/* Copies n bytes into / out of atomic words. Release stores: a reader whose
 * acquire load sees one of these words also sees the odd stamp stored
 * before it, so its stamp re-check fails. Acquire loads: the stamp re-check
 * after them cannot be done before them. */
static void blitz__chan_words_store(blitz__atomic_u64 *dst, const void *src, size_t n) {
    const unsigned char *p = (const unsigned char *)src;
    size_t i, full = n / 8u;
    for (i = 0; i < full; i++) {
        uint64_t w;
        memcpy(&w, p + 8u * i, 8u);
        blitz__u64_store(&dst[i], w, BLITZ__RELEASE);
    }
    if (n % 8u) {
        uint64_t w = 0;
        memcpy(&w, p + 8u * full, n % 8u);
        blitz__u64_store(&dst[full], w, BLITZ__RELEASE);
    }
}

static void blitz__chan_words_load(void *dst, const blitz__atomic_u64 *src, size_t n) {
    unsigned char *p = (unsigned char *)dst;
    size_t i, full = n / 8u;
    for (i = 0; i < full; i++) {
        uint64_t w = blitz__u64_load(&src[i], BLITZ__ACQUIRE);
        memcpy(p + 8u * i, &w, 8u);
    }
    if (n % 8u) {
        uint64_t w = blitz__u64_load(&src[full], BLITZ__ACQUIRE);
        memcpy(p + 8u * full, &w, n % 8u);
    }
}

/* Wakes every waiter of `q`, in batches, never under `lock` (held on entry
 * and on return); `waiting` (if not NULL) counts the queued waiters. */
static void blitz__chan_wake_all(blitz__mutex *lock, blitz__waitq *q, blitz__atomic_u32 *waiting) {
    blitz__wake_list wl;
    wl.len = 0;
    while (!blitz__waitq_empty(q)) {
        blitz__waiter *w = q->blitz__head;
        blitz__waitq_unlink(q, w);
        if (waiting)
            blitz__u32_fetch_sub(waiting, 1, BLITZ__RELAXED);
        blitz__wake_list_push(&wl, blitz__waiter_finish(w));
        if (blitz__wake_list_full(&wl)) {
            blitz__mutex_unlock(lock);
            blitz__wake_list_wake(&wl);
            blitz__mutex_lock(lock);
        }
    }
    if (wl.len) {
        blitz__mutex_unlock(lock);
        blitz__wake_list_wake(&wl);
        blitz__mutex_lock(lock);
    }
}

struct blitz_broadcast {
    /* (next position << 1) | 1 while a sender writes */
    BLITZ__ALIGNED blitz__atomic_u64 tail;
    blitz__atomic_u32 closed;
    blitz__atomic_u32 waiting; /* queued receivers */
    size_t elem_size, slot_words;
    uint64_t cap, mask;
    blitz__atomic_u64 *slots;
    BLITZ__ALIGNED blitz__mutex lock;
    blitz__waitq waiters;
    void *raw;              /* what blitz__alloc_aligned returned, to free */
    blitz__atomic_u64 refs; /* senders low half, receivers high half */
    BLITZ__MAGIC_MEMBER
};

#define BLITZ__BC_CHECK(bc) \
    BLITZ__MAGIC_CHECK(bc, BLITZ__MAGIC_BROADCAST, "broadcast channel used after its last release")

static inline blitz__atomic_u64 *blitz__bc_slot(const blitz_broadcast *bc, uint64_t pos) {
    return bc->slots + (pos & bc->mask) * bc->slot_words;
}

/* A sender that keeps finding another one writing yields after this many
 * spins (the other was preempted mid-copy). */
#define BLITZ__BC_SPINS 128

/* Takes the senders' lock bit; returns the tail it found (unlocked). */
static uint64_t blitz__bc_lock(blitz_broadcast *bc) {
    unsigned spins = 0;
    uint64_t t = blitz__u64_load(&bc->tail, BLITZ__RELAXED);
    for (;;) {
        /* Seq_cst: this claim is ordered before the later seq_cst load of
         * `waiting`, against a receiver's seq_cst increment of it and its
         * seq_cst load of the tail (see blitz__bc_recv_poll). */
        if (!(t & 1u) && blitz__u64_cas_weak(&bc->tail, &t, t | 1u, BLITZ__SEQ_CST))
            return t;
        if (t & 1u) {
            if (++spins < BLITZ__BC_SPINS) {
                blitz__cpu_relax();
            } else {
                spins = 0;
                blitz__yield();
            }
            t = blitz__u64_load(&bc->tail, BLITZ__RELAXED);
        }
    }
}

static void blitz__bc_wake(blitz_broadcast *bc) {
    blitz__mutex_lock(&bc->lock);
    blitz__chan_wake_all(&bc->lock, &bc->waiters, &bc->waiting);
    blitz__mutex_unlock(&bc->lock);
}

BLITZ_API int blitz_broadcast_new(blitz_broadcast **out, size_t elem_size, size_t capacity) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (elem_size == 0 || capacity == 0 || capacity > ((size_t)1 << 32) ||
        elem_size > ((size_t)1 << 30))
        return BLITZ_EINVAL;
    uint64_t cap = 1;
    while (cap < capacity)
        cap <<= 1;
    size_t slot_words = 1u + (elem_size + 7u) / 8u;
    if (cap > SIZE_MAX / (slot_words * sizeof(uint64_t)))
        return BLITZ_EINVAL;
    void *raw = NULL;
    /* Aligned: the hot fields sit on their own cache lines. */
    blitz_broadcast *bc =
        (blitz_broadcast *)blitz__alloc_aligned(sizeof *bc, BLITZ_CACHE_LINE, &raw);
    if (!bc)
        return BLITZ_ENOMEM;
    memset(bc, 0, sizeof *bc);
    bc->raw = raw;
    size_t bytes = (size_t)cap * slot_words * sizeof(uint64_t);
    bc->slots = (blitz__atomic_u64 *)BLITZ_MALLOC(bytes);
    if (!bc->slots) {
        blitz__free(raw);
        return BLITZ_ENOMEM;
    }
    memset(bc->slots, 0, bytes); /* stamp 0: no position yet */
    bc->elem_size = elem_size;
    bc->slot_words = slot_words;
    bc->cap = cap;
    bc->mask = cap - 1;
    blitz__mutex_init(&bc->lock);
    blitz__u64_store(&bc->refs, 1u, BLITZ__RELAXED);
    BLITZ__MAGIC_SET(bc, BLITZ__MAGIC_BROADCAST);
    *out = bc;
    return BLITZ_OK;
}

static void blitz__bc_free(blitz_broadcast *bc) {
    blitz__mutex_destroy(&bc->lock);
    BLITZ_FREE(bc->slots);
    BLITZ__MAGIC_SET(bc, BLITZ__MAGIC_DEAD);
    blitz__free_handle(bc->raw);
}

BLITZ_API int blitz_broadcast_close(blitz_broadcast *bc) {
    BLITZ__BC_CHECK(bc);
    if (!bc)
        return BLITZ_EINVAL;
    uint64_t t = blitz__bc_lock(bc);
    /* Release (and the unlock's): a receiver that acquires `closed` sees
     * every value sent before. */
    blitz__u32_store(&bc->closed, 1, BLITZ__RELEASE);
    blitz__u64_store(&bc->tail, t, BLITZ__RELEASE);
    blitz__bc_wake(bc);
    return BLITZ_OK;
}

BLITZ_API int blitz_broadcast_sender_clone(blitz_broadcast *bc) {
    BLITZ__BC_CHECK(bc);
    return bc ? blitz__chan_refs_add(&bc->refs, BLITZ__CHAN_SENDERS) : BLITZ_EINVAL;
}

static void blitz__bc_close_last(void *bc) {
    blitz_broadcast_close((blitz_broadcast *)bc);
}

BLITZ_API int blitz_broadcast_sender_release(blitz_broadcast *bc) {
    BLITZ__BC_CHECK(bc);
    if (!bc)
        return BLITZ_EINVAL;
    int last = 0;
    int rc =
        blitz__chan_refs_release(&bc->refs, BLITZ__CHAN_SENDERS, blitz__bc_close_last, bc, &last);
    if (last)
        blitz__bc_free(bc);
    return rc;
}

BLITZ_API uint32_t blitz_broadcast_receiver_count(const blitz_broadcast *bc) {
    BLITZ__BC_CHECK(bc);
    return bc ? (uint32_t)(blitz__u64_load(&bc->refs, BLITZ__ACQUIRE) >> 32) : 0u;
}

BLITZ_API int blitz_broadcast_subscribe(blitz_broadcast *bc, blitz_broadcast_rx *rx) {
    BLITZ__BC_CHECK(bc);
    if (!bc || !rx)
        return BLITZ_EINVAL;
    memset(rx, 0, sizeof *rx);
    rx->blitz__bc = bc;
    blitz__u64_fetch_add(&bc->refs, (uint64_t)1 << BLITZ__CHAN_RECEIVERS, BLITZ__RELAXED);
    /* A send in progress is for this position: the new receiver gets it. */
    rx->blitz__pos = blitz__u64_load(&bc->tail, BLITZ__ACQUIRE) >> 1;
    return BLITZ_OK;
}

BLITZ_API int blitz_broadcast_send(blitz_broadcast *bc, const void *value) {
    BLITZ__BC_CHECK(bc);
    if (!bc || !value)
        return BLITZ_EINVAL;
    uint64_t t = blitz__bc_lock(bc);
    uint32_t receivers = (uint32_t)(blitz__u64_load(&bc->refs, BLITZ__RELAXED) >> 32);
    if (blitz__u32_load(&bc->closed, BLITZ__RELAXED) || receivers == 0) {
        blitz__u64_store(&bc->tail, t, BLITZ__RELEASE);
        return BLITZ_ECLOSED;
    }
    uint64_t pos = t >> 1;
    blitz__atomic_u64 *slot = blitz__bc_slot(bc, pos);
    blitz__u64_store(&slot[0], 2u * pos + 1u, BLITZ__RELAXED);
    blitz__chan_words_store(slot + 1, value, bc->elem_size);
    /* Release: the value's words are visible to a reader that acquires
     * this stamp. */
    blitz__u64_store(&slot[0], 2u * pos + 2u, BLITZ__RELEASE);
    blitz__u64_store(&bc->tail, t + 2u, BLITZ__RELEASE);
    if (blitz__u32_load(&bc->waiting, BLITZ__SEQ_CST) != 0)
        blitz__bc_wake(bc);
    return receivers > (uint32_t)INT32_MAX ? INT32_MAX : (int)receivers;
}

BLITZ_API int blitz_broadcast_try_recv(blitz_broadcast_rx *rx, void *out) {
    if (!rx || !rx->blitz__bc || !out)
        return BLITZ_EINVAL;
    blitz_broadcast *bc = rx->blitz__bc;
    for (;;) {
        uint64_t pos = rx->blitz__pos;
        blitz__atomic_u64 *slot = blitz__bc_slot(bc, pos);
        uint64_t want = 2u * pos + 2u;
        uint64_t s = blitz__u64_load(&slot[0], BLITZ__ACQUIRE);
        if (s == want) {
            blitz__chan_words_load(out, slot + 1, bc->elem_size);
            /* Ordered after the acquire loads of the words. */
            if (blitz__u64_load(&slot[0], BLITZ__RELAXED) == want) {
                rx->blitz__pos = pos + 1u;
                return BLITZ_OK;
            }
            continue; /* overwritten while copying: lagged */
        }
        if (s < want) {
            /* Acquire: pairs with the release in close, after which every
             * value sent is visible. */
            if (!blitz__u32_load(&bc->closed, BLITZ__ACQUIRE))
                return BLITZ_EEMPTY;
            if (blitz__u64_load(&slot[0], BLITZ__ACQUIRE) < want)
                return BLITZ_ECLOSED;
            continue;
        }
        /* Lapped: the slot holds (or is being filled with) position q, so
         * positions before q - cap + 1 are gone; the tail may say more. */
        uint64_t q = (s - 1u) / 2u;
        uint64_t tail = blitz__u64_load(&bc->tail, BLITZ__ACQUIRE) >> 1;
        uint64_t oldest = q + 1u - bc->cap;
        if (tail > bc->cap && tail - bc->cap > oldest)
            oldest = tail - bc->cap;
        rx->lagged = oldest - pos;
        rx->blitz__pos = oldest;
        return BLITZ_ELAGGED;
    }
}

/* Takes a queued or woken waiter out. Under the lock; returns the waker to
 * drop after it. */
static blitz_waker blitz__bc_withdraw_locked(blitz_broadcast_rx *rx) {
    blitz_waker old = blitz_waker_noop();
    uint32_t st = blitz__u32_field_load(&rx->blitz__w.blitz__state, BLITZ__RELAXED);
    if (st == BLITZ__WAITER_QUEUED) {
        blitz__u32_fetch_sub(&rx->blitz__bc->waiting, 1, BLITZ__RELAXED);
        old = blitz__waitq_withdraw(&rx->blitz__bc->waiters, &rx->blitz__w);
    }
    blitz__waiter_reset(&rx->blitz__w);
    return old;
}

static blitz_poll blitz__bc_recv_poll(blitz_cx *cx, void *p) {
    blitz_broadcast_rx *rx = (blitz_broadcast_rx *)p;
    blitz_broadcast *bc = rx->blitz__bc;
    if (!bc || !rx->blitz__buf) {
        rx->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    int r = blitz_broadcast_try_recv(rx, rx->blitz__buf);
    uint32_t st = blitz__waiter_state(&rx->blitz__w);
    if (r != BLITZ_EEMPTY && st == BLITZ__WAITER_IDLE) {
        rx->result = r;
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx), old;
    blitz__mutex_lock(&bc->lock);
    if (blitz__u32_field_load(&rx->blitz__w.blitz__state, BLITZ__RELAXED) == BLITZ__WAITER_QUEUED) {
        if (r != BLITZ_EEMPTY) {
            old = blitz__bc_withdraw_locked(rx);
            blitz__mutex_unlock(&bc->lock);
            blitz_waker_drop(old);
            rx->result = r;
            return BLITZ_READY;
        }
        old = blitz__waiter_refresh(&rx->blitz__w, &mine);
        blitz__mutex_unlock(&bc->lock);
        blitz_waker_drop(old);
        return BLITZ_PENDING;
    }
    if (r == BLITZ_EEMPTY) {
        blitz__waiter_reset(&rx->blitz__w);
        blitz__waitq_push(&bc->waiters, &rx->blitz__w, &mine);
        /* Seq_cst: a sender whose seq_cst load of `waiting` misses this took
         * the lock bit earlier in the total order, so this load of the tail
         * sees it taken, or the tail past the position. */
        blitz__u32_fetch_add(&bc->waiting, 1, BLITZ__SEQ_CST);
        uint64_t t = blitz__u64_load(&bc->tail, BLITZ__SEQ_CST);
        r = blitz_broadcast_try_recv(rx, rx->blitz__buf);
        if (r == BLITZ_EEMPTY && !(t & 1u) && (t >> 1) <= rx->blitz__pos) {
            blitz__mutex_unlock(&bc->lock);
            return BLITZ_PENDING;
        }
    }
    old = blitz__bc_withdraw_locked(rx);
    blitz__mutex_unlock(&bc->lock);
    blitz_waker_drop(old);
    if (r == BLITZ_EEMPTY) {
        /* A send is half done: look again once it had time to finish. */
        blitz_waker_wake_by_ref(&mine);
        return BLITZ_PENDING;
    }
    rx->result = r;
    return BLITZ_READY;
}

BLITZ_API blitz_poll blitz_broadcast_recv(blitz_cx *cx, blitz_broadcast_rx *rx, void *out) {
    if (!rx)
        return BLITZ_READY;
    rx->blitz__buf = out;
    return blitz__record(cx, blitz__bc_recv_poll(cx, rx), blitz_broadcast_cancel, rx);
}

BLITZ_API blitz_op blitz_op_broadcast_recv(blitz_broadcast_rx *rx, void *out) {
    if (rx)
        rx->blitz__buf = out;
    return blitz_op_make(rx ? blitz__bc_recv_poll : NULL, blitz_broadcast_cancel, rx);
}

BLITZ_API void blitz_broadcast_cancel(blitz_cx *cx, void *op) {
    blitz_broadcast_rx *rx = (blitz_broadcast_rx *)op;
    (void)cx;
    if (!rx || !rx->blitz__bc || blitz__waiter_state(&rx->blitz__w) == BLITZ__WAITER_IDLE)
        return;
    blitz__mutex_lock(&rx->blitz__bc->lock);
    blitz_waker old = blitz__bc_withdraw_locked(rx);
    blitz__mutex_unlock(&rx->blitz__bc->lock);
    blitz_waker_drop(old);
}

BLITZ_API int blitz_broadcast_unsubscribe(blitz_broadcast_rx *rx) {
    if (!rx)
        return BLITZ_EINVAL;
    if (!rx->blitz__bc)
        return BLITZ_ERELEASED;
    blitz_broadcast_cancel(NULL, rx);
    blitz_broadcast *bc = rx->blitz__bc;
    rx->blitz__bc = NULL;
    if (blitz__chan_refs_drop(&bc->refs, BLITZ__CHAN_RECEIVERS))
        blitz__bc_free(bc);
    return BLITZ_OK;
}

BLITZ_API int blitz_broadcast_recv_blocking(blitz_broadcast_rx *rx, void *out) {
    if (!rx || !rx->blitz__bc || !out)
        return BLITZ_EINVAL;
    int rc = blitz_op_run_blocking(NULL, blitz_op_broadcast_recv(rx, out));
    return rc ? rc : rx->result;
}
