/* The watch channel: one value behind a seqlock whose sequence is twice the
 * version (odd while a send writes), so readers never lock and never see a
 * torn value, and senders never wait for readers. The odd sequence is also
 * the senders' lock: a send takes it with one CAS and gives it back with a
 * plain store. The waiters of changed() sit behind a separate lock that a
 * send takes only when a counter says someone waits. */
#include "../core/core.h"
#include "../core/waitq.h"

/* A reader that keeps finding a send in progress yields after this many
 * spins (the sender was preempted mid-copy). */
#define BLITZ__WATCH_SPINS 128

struct blitz_watch {
    BLITZ__ALIGNED blitz__atomic_u64 seq;
    blitz__atomic_u32 closed;
    blitz__atomic_u32 waiting; /* queued changed() waiters */
    size_t elem_size;
    blitz__atomic_u64 *words;
    BLITZ__ALIGNED blitz__mutex lock;
    blitz__waitq waiters;
    void *raw;              /* what blitz__alloc_aligned returned, to free */
    blitz__atomic_u64 refs; /* senders low half, receivers high half */
    BLITZ__MAGIC_MEMBER
};

#define BLITZ__WATCH_CHECK(w) \
    BLITZ__MAGIC_CHECK(w, BLITZ__MAGIC_WATCH, "watch channel used after its last release")

static void blitz__watch_free(blitz_watch *w) {
    blitz__mutex_destroy(&w->lock);
    BLITZ_FREE(w->words);
    BLITZ__MAGIC_SET(w, BLITZ__MAGIC_DEAD);
    blitz__free_handle(w->raw);
}

BLITZ_API int blitz_watch_new(blitz_watch **out, size_t elem_size, const void *initial) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (!initial || elem_size == 0 || elem_size > ((size_t)1 << 30))
        return BLITZ_EINVAL;
    void *raw = NULL;
    /* Aligned: the hot fields sit on their own cache lines. */
    blitz_watch *w = (blitz_watch *)blitz__alloc_aligned(sizeof *w, BLITZ_CACHE_LINE, &raw);
    if (!w)
        return BLITZ_ENOMEM;
    memset(w, 0, sizeof *w);
    w->raw = raw;
    w->words = (blitz__atomic_u64 *)BLITZ_MALLOC((elem_size + 7u) / 8u * sizeof(uint64_t));
    if (!w->words) {
        blitz__free(raw);
        return BLITZ_ENOMEM;
    }
    w->elem_size = elem_size;
    blitz__chan_words_store(w->words, initial, elem_size);
    blitz__u64_store(&w->seq, 2u, BLITZ__RELEASE); /* version 1 */
    blitz__mutex_init(&w->lock);
    blitz__u64_store(&w->refs, 1u, BLITZ__RELAXED);
    BLITZ__MAGIC_SET(w, BLITZ__MAGIC_WATCH);
    *out = w;
    return BLITZ_OK;
}

static inline uint64_t blitz__watch_version(const blitz_watch *w) {
    /* An odd sequence (send in progress) still counts as the old version. */
    return blitz__u64_load(&w->seq, BLITZ__ACQUIRE) >> 1;
}

/* Takes the sequence lock: returns the (even) sequence it found. */
static uint64_t blitz__watch_lock(blitz_watch *w) {
    unsigned spins = 0;
    uint64_t s = blitz__u64_load(&w->seq, BLITZ__RELAXED);
    for (;;) {
        /* Seq_cst: this claim is ordered before the later seq_cst load of
         * `waiting`, against a waiter's seq_cst increment of it and its
         * seq_cst load of the sequence (see blitz__watch_changed_poll). */
        if (!(s & 1u) && blitz__u64_cas_weak(&w->seq, &s, s + 1u, BLITZ__SEQ_CST))
            return s;
        if (s & 1u) {
            if (++spins < BLITZ__WATCH_SPINS) {
                blitz__cpu_relax();
            } else {
                spins = 0;
                blitz__yield();
            }
            s = blitz__u64_load(&w->seq, BLITZ__RELAXED);
        }
    }
}

/* Wakes every changed() waiter, if there is one. */
static void blitz__watch_wake(blitz_watch *w) {
    if (blitz__u32_load(&w->waiting, BLITZ__SEQ_CST) == 0)
        return;
    blitz__mutex_lock(&w->lock);
    blitz__chan_wake_all(&w->lock, &w->waiters, &w->waiting);
    blitz__mutex_unlock(&w->lock);
}

BLITZ_API int blitz_watch_send(blitz_watch *w, const void *value) {
    BLITZ__WATCH_CHECK(w);
    if (!w || !value)
        return BLITZ_EINVAL;
    uint64_t s = blitz__watch_lock(w);
    if (blitz__u32_load(&w->closed, BLITZ__RELAXED)) {
        blitz__u64_store(&w->seq, s, BLITZ__RELEASE); /* unchanged version */
        return BLITZ_ECLOSED;
    }
    /* The odd sequence is ordered before the words by their release
     * stores (see blitz__chan_words_store). */
    blitz__chan_words_store(w->words, value, w->elem_size);
    /* Release: the new words are visible to a reader that acquires it. */
    blitz__u64_store(&w->seq, s + 2u, BLITZ__RELEASE);
    blitz__watch_wake(w);
    return BLITZ_OK;
}

BLITZ_API uint64_t blitz_watch_read(const blitz_watch *w, void *out) {
    BLITZ__WATCH_CHECK(w);
    if (!w || !out)
        return 0;
    unsigned spins = 0;
    for (;;) {
        uint64_t s1 = blitz__u64_load(&w->seq, BLITZ__ACQUIRE);
        if (!(s1 & 1u)) {
            blitz__chan_words_load(out, w->words, w->elem_size);
            /* Ordered after the acquire loads of the words. */
            if (blitz__u64_load(&w->seq, BLITZ__RELAXED) == s1)
                return s1 >> 1;
        }
        if (++spins < BLITZ__WATCH_SPINS) {
            blitz__cpu_relax();
        } else {
            spins = 0;
            blitz__yield();
        }
    }
}

BLITZ_API int blitz_watch_close(blitz_watch *w) {
    BLITZ__WATCH_CHECK(w);
    if (!w)
        return BLITZ_EINVAL;
    uint64_t s = blitz__watch_lock(w);
    /* Release: a reader that acquires `closed` sees every send before. */
    blitz__u32_store(&w->closed, 1, BLITZ__RELEASE);
    blitz__u64_store(&w->seq, s, BLITZ__RELEASE);
    blitz__mutex_lock(&w->lock);
    blitz__chan_wake_all(&w->lock, &w->waiters, &w->waiting);
    blitz__mutex_unlock(&w->lock);
    return BLITZ_OK;
}

BLITZ_API int blitz_watch_sender_clone(blitz_watch *w) {
    BLITZ__WATCH_CHECK(w);
    return w ? blitz__chan_refs_add(&w->refs, BLITZ__CHAN_SENDERS) : BLITZ_EINVAL;
}

static void blitz__watch_close_last(void *w) {
    blitz_watch_close((blitz_watch *)w);
}

BLITZ_API int blitz_watch_sender_release(blitz_watch *w) {
    BLITZ__WATCH_CHECK(w);
    if (!w)
        return BLITZ_EINVAL;
    int last = 0;
    int rc =
        blitz__chan_refs_release(&w->refs, BLITZ__CHAN_SENDERS, blitz__watch_close_last, w, &last);
    if (last)
        blitz__watch_free(w);
    return rc;
}

BLITZ_API int blitz_watch_subscribe(blitz_watch *w, blitz_watch_rx *rx) {
    BLITZ__WATCH_CHECK(w);
    if (!w || !rx)
        return BLITZ_EINVAL;
    memset(rx, 0, sizeof *rx);
    rx->blitz__watch = w;
    blitz__u64_fetch_add(&w->refs, (uint64_t)1 << BLITZ__CHAN_RECEIVERS, BLITZ__RELAXED);
    rx->seen = blitz__watch_version(w);
    return BLITZ_OK;
}

BLITZ_API uint64_t blitz_watch_read_update(blitz_watch_rx *rx, void *out) {
    if (!rx || !rx->blitz__watch || !out)
        return 0;
    uint64_t v = blitz_watch_read(rx->blitz__watch, out);
    if (v > rx->seen)
        rx->seen = v;
    return v;
}

BLITZ_API int blitz_watch_has_changed(const blitz_watch_rx *rx) {
    if (!rx || !rx->blitz__watch)
        return BLITZ_EINVAL;
    const blitz_watch *w = rx->blitz__watch;
    if (blitz__watch_version(w) > rx->seen)
        return 1;
    if (blitz__u32_load(&w->closed, BLITZ__ACQUIRE) && blitz__watch_version(w) <= rx->seen)
        return BLITZ_ECLOSED;
    return 0;
}

static blitz_waker blitz__watch_withdraw_locked(blitz_watch_rx *rx) {
    blitz_waker old = blitz_waker_noop();
    if (blitz__u32_field_load(&rx->blitz__w.blitz__state, BLITZ__RELAXED) == BLITZ__WAITER_QUEUED) {
        blitz__u32_fetch_sub(&rx->blitz__watch->waiting, 1, BLITZ__RELAXED);
        old = blitz__waitq_withdraw(&rx->blitz__watch->waiters, &rx->blitz__w);
    }
    blitz__waiter_reset(&rx->blitz__w);
    return old;
}

/* 1 when changed() is done (rx->result set). */
static int blitz__watch_check(blitz_watch_rx *rx) {
    blitz_watch *w = rx->blitz__watch;
    uint64_t v = blitz__watch_version(w);
    if (v > rx->seen) {
        rx->seen = v;
        rx->result = BLITZ_OK;
        return 1;
    }
    /* Acquire: pairs with the release in close; a send before the close
     * is then visible in the version re-read. */
    if (blitz__u32_load(&w->closed, BLITZ__ACQUIRE)) {
        v = blitz__watch_version(w);
        if (v > rx->seen) {
            rx->seen = v;
            rx->result = BLITZ_OK;
        } else {
            rx->result = BLITZ_ECLOSED;
        }
        return 1;
    }
    return 0;
}

static blitz_poll blitz__watch_changed_poll(blitz_cx *cx, void *p) {
    blitz_watch_rx *rx = (blitz_watch_rx *)p;
    blitz_watch *w = rx->blitz__watch;
    if (!w) {
        rx->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if (blitz__waiter_state(&rx->blitz__w) == BLITZ__WAITER_IDLE && blitz__watch_check(rx))
        return BLITZ_READY;
    blitz_waker mine = blitz_cx_waker(cx), old;
    blitz__mutex_lock(&w->lock);
    if (blitz__u32_field_load(&rx->blitz__w.blitz__state, BLITZ__RELAXED) == BLITZ__WAITER_QUEUED) {
        if (blitz__watch_check(rx)) {
            old = blitz__watch_withdraw_locked(rx);
            blitz__mutex_unlock(&w->lock);
            blitz_waker_drop(old);
            return BLITZ_READY;
        }
        old = blitz__waiter_refresh(&rx->blitz__w, &mine);
        blitz__mutex_unlock(&w->lock);
        blitz_waker_drop(old);
        return BLITZ_PENDING;
    }
    blitz__waiter_reset(&rx->blitz__w);
    blitz__waitq_push(&w->waiters, &rx->blitz__w, &mine);
    /* Seq_cst: a sender whose seq_cst load of `waiting` misses this took
     * the sequence lock earlier in the total order, so the load of the
     * sequence below sees its odd or newer sequence. */
    blitz__u32_fetch_add(&w->waiting, 1, BLITZ__SEQ_CST);
    uint64_t seq = blitz__u64_load(&w->seq, BLITZ__SEQ_CST);
    int ready = blitz__watch_check(rx);
    if (!ready && !(seq & 1u)) {
        blitz__mutex_unlock(&w->lock);
        return BLITZ_PENDING;
    }
    old = blitz__watch_withdraw_locked(rx);
    blitz__mutex_unlock(&w->lock);
    blitz_waker_drop(old);
    if (ready)
        return BLITZ_READY;
    /* A send is half done: look again once it had time to finish. */
    blitz_waker_wake_by_ref(&mine);
    return BLITZ_PENDING;
}

BLITZ_API blitz_poll blitz_watch_changed(blitz_cx *cx, blitz_watch_rx *rx) {
    if (!rx)
        return BLITZ_READY;
    return blitz__record(cx, blitz__watch_changed_poll(cx, rx), blitz_watch_cancel, rx);
}

BLITZ_API blitz_op blitz_op_watch_changed(blitz_watch_rx *rx) {
    return blitz_op_make(rx ? blitz__watch_changed_poll : NULL, blitz_watch_cancel, rx);
}

BLITZ_API void blitz_watch_cancel(blitz_cx *cx, void *op) {
    blitz_watch_rx *rx = (blitz_watch_rx *)op;
    (void)cx;
    if (!rx || !rx->blitz__watch || blitz__waiter_state(&rx->blitz__w) == BLITZ__WAITER_IDLE)
        return;
    blitz__mutex_lock(&rx->blitz__watch->lock);
    blitz_waker old = blitz__watch_withdraw_locked(rx);
    blitz__mutex_unlock(&rx->blitz__watch->lock);
    blitz_waker_drop(old);
}

BLITZ_API int blitz_watch_unsubscribe(blitz_watch_rx *rx) {
    if (!rx)
        return BLITZ_EINVAL;
    if (!rx->blitz__watch)
        return BLITZ_ERELEASED;
    blitz_watch_cancel(NULL, rx);
    blitz_watch *w = rx->blitz__watch;
    rx->blitz__watch = NULL;
    if (blitz__chan_refs_drop(&w->refs, BLITZ__CHAN_RECEIVERS))
        blitz__watch_free(w);
    return BLITZ_OK;
}

BLITZ_API int blitz_watch_changed_blocking(blitz_watch_rx *rx) {
    if (!rx || !rx->blitz__watch)
        return BLITZ_EINVAL;
    int rc = blitz_op_run_blocking(NULL, blitz_op_watch_changed(rx));
    return rc ? rc : rx->result;
}
