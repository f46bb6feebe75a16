/* The bounded MPMC channel: a Vyukov ring with a sequence stamp per slot
 * (lock-free send and receive), and two waiter queues behind a separate
 * lock that the hot path touches only when a counter says someone waits.
 *
 * Positions encode (lap, index): index in the low bits, then a "closed"
 * mark bit (only ever set in `tail`), then the lap. A slot whose stamp
 * equals the tail is free for that position; stamp tail + 1 means it holds
 * that position's value; after the value is taken the stamp becomes the
 * position one lap later. The capacity is exact (not rounded), and no
 * division is needed to wrap.
 *
 * Waiting ops are woken, not served: whoever moves a value wakes as many
 * queued receivers as there are values (senders as there are free slots),
 * and each woken op then does its own send or receive. An op that was
 * woken has therefore done nothing yet: cancelling it (a race or select
 * it lost, a timeout) takes nothing out of the channel and puts nothing
 * in, so no message can end up in the buffer of an op whose result the
 * program never reads. A woken op that is cancelled passes its wake on. */
#include "../core/core.h"
#include "../core/waitq.h"

/* Another party is between claiming a slot and stamping it: the ring is
 * neither truly full nor truly empty, and that party will look at the
 * waiter counters once it is done. */
#define BLITZ__CHAN_BUSY 1

struct blitz_chan {
    BLITZ__ALIGNED blitz__atomic_u64 tail;
    BLITZ__ALIGNED blitz__atomic_u64 head;
    /* Read on every send and receive, written only by waiters: */
    BLITZ__ALIGNED blitz__atomic_u32 send_waiting;
    blitz__atomic_u32 recv_waiting;
    size_t elem_size, stride, cap;
    uint64_t mark, one_lap;
    unsigned char *slots;
    BLITZ__ALIGNED blitz__mutex lock;
    blitz__waitq senders, receivers;
    /* senders in the low half, receivers in the high half */
    void *raw; /* what blitz__alloc_aligned returned, to free */
    blitz__atomic_u64 refs;
    BLITZ__MAGIC_MEMBER
};

#define BLITZ__CHAN_CHECK(ch) \
    BLITZ__MAGIC_CHECK(ch, BLITZ__MAGIC_CHAN, "channel used after its last release")

static inline blitz__atomic_u64 *blitz__chan_stamp(const blitz_chan *ch, uint64_t idx) {
    return (blitz__atomic_u64 *)(void *)(ch->slots + idx * ch->stride);
}
static inline unsigned char *blitz__chan_data(const blitz_chan *ch, uint64_t idx) {
    return ch->slots + idx * ch->stride + sizeof(uint64_t);
}
static inline uint64_t blitz__chan_next(const blitz_chan *ch, uint64_t pos) {
    uint64_t idx = pos & (ch->mark - 1);
    return idx + 1 < ch->cap ? pos + 1 : (pos & ~(ch->one_lap - 1)) + ch->one_lap;
}
static inline void blitz__chan_copy(void *dst, const void *src, size_t n) {
    /* The common word-sized element gets an inlined move. */
    if (n == sizeof(uint64_t))
        memcpy(dst, src, sizeof(uint64_t));
    else
        memcpy(dst, src, n);
}

/* BLITZ_OK, BLITZ_EFULL, BLITZ_ECLOSED or BLITZ__CHAN_BUSY. */
static int blitz__chan_push(blitz_chan *ch, const void *src) {
    uint64_t tail = blitz__u64_load(&ch->tail, BLITZ__RELAXED);
    for (;;) {
        if (tail & ch->mark)
            return BLITZ_ECLOSED;
        uint64_t idx = tail & (ch->mark - 1);
        blitz__atomic_u64 *stamp = blitz__chan_stamp(ch, idx);
        /* Acquire: the receiver that freed the slot finished reading it
         * before it stored this stamp. */
        uint64_t s = blitz__u64_load(stamp, BLITZ__ACQUIRE);
        int64_t diff = (int64_t)(s - tail);
        if (diff == 0) {
            /* Seq_cst: the claim is ordered before this sender's later
             * seq_cst load of recv_waiting, against a waiting receiver's
             * seq_cst increment of it and its seq_cst load of the tail
             * (see blitz__chan_pop): one of the two sees the other. */
            if (blitz__u64_cas_weak(&ch->tail, &tail, blitz__chan_next(ch, tail), BLITZ__SEQ_CST)) {
                blitz__chan_copy(blitz__chan_data(ch, idx), src, ch->elem_size);
                /* Release: publishes the value to the receiver that
                 * acquires the stamp. */
                blitz__u64_store(stamp, tail + 1, BLITZ__RELEASE);
                return BLITZ_OK;
            }
        } else if (diff < 0) {
            /* The slot still holds the previous lap's value: full, unless a
             * receiver already claimed it and is still copying it out. */
            uint64_t head = blitz__u64_load(&ch->head, BLITZ__SEQ_CST);
            return head + ch->one_lap == tail ? BLITZ_EFULL : BLITZ__CHAN_BUSY;
        } else {
            tail = blitz__u64_load(&ch->tail, BLITZ__RELAXED);
        }
    }
}

/* BLITZ_OK, BLITZ_EEMPTY, BLITZ_ECLOSED or BLITZ__CHAN_BUSY. */
static int blitz__chan_pop(blitz_chan *ch, void *dst) {
    uint64_t head = blitz__u64_load(&ch->head, BLITZ__RELAXED);
    for (;;) {
        uint64_t idx = head & (ch->mark - 1);
        blitz__atomic_u64 *stamp = blitz__chan_stamp(ch, idx);
        /* Acquire: pairs with the sender's release of the stamp. */
        uint64_t s = blitz__u64_load(stamp, BLITZ__ACQUIRE);
        int64_t diff = (int64_t)(s - (head + 1));
        if (diff == 0) {
            /* Seq_cst: ordered before the later load of send_waiting,
             * mirroring blitz__chan_push. */
            if (blitz__u64_cas_weak(&ch->head, &head, blitz__chan_next(ch, head), BLITZ__SEQ_CST)) {
                blitz__chan_copy(dst, blitz__chan_data(ch, idx), ch->elem_size);
                /* Release: the copy is done before a sender reuses it. */
                blitz__u64_store(stamp, head + ch->one_lap, BLITZ__RELEASE);
                return BLITZ_OK;
            }
        } else if (diff < 0) {
            /* Seq_cst: a waiting receiver increments recv_waiting (seq_cst)
             * before it gets here; a sender whose seq_cst load of that
             * counter missed it claimed its slot earlier in the total
             * order, so this load sees the moved tail and reports BUSY
             * instead of sleeping past the value. */
            uint64_t tail = blitz__u64_load(&ch->tail, BLITZ__SEQ_CST);
            if ((tail & ~ch->mark) == head)
                return (tail & ch->mark) ? BLITZ_ECLOSED : BLITZ_EEMPTY;
            return BLITZ__CHAN_BUSY;
        } else {
            head = blitz__u64_load(&ch->head, BLITZ__RELAXED);
        }
    }
}

/* Values buffered right now (claimed positions included), and whether the
 * channel is closed. */
static size_t blitz__chan_count(const blitz_chan *ch, int *closed) {
    uint64_t tail, head;
    /* A consistent pair: the tail did not move while the head was read. */
    do {
        tail = blitz__u64_load(&ch->tail, BLITZ__SEQ_CST);
        head = blitz__u64_load(&ch->head, BLITZ__SEQ_CST);
    } while (blitz__u64_load(&ch->tail, BLITZ__SEQ_CST) != tail);
    *closed = (tail & ch->mark) != 0;
    tail &= ~ch->mark;
    {
        uint64_t hix = head & (ch->mark - 1), tix = tail & (ch->mark - 1);
        if (hix < tix)
            return (size_t)(tix - hix);
        if (hix > tix)
            return (size_t)(ch->cap - hix + tix);
        return tail == head ? 0 : ch->cap;
    }
}

/* Wakes queued ops that can now proceed: as many receivers as values are
 * buffered, as many senders as slots are free; every one once closed (a
 * receiver drains, then sees BLITZ_ECLOSED). A woken op is unlinked and
 * DONE, and does its own push or pop when polled, so a value never sits in
 * a waiter. Waking too many is harmless (the extra ones queue again, at
 * the front); waking too few is not, so the count is taken under the
 * lock, after every enqueue that could have missed the value (see
 * blitz__chan_wait). Wakes after unlocking. */
static void blitz__chan_dispatch(blitz_chan *ch) {
    blitz__wake_list wl;
    wl.len = 0;
    blitz__mutex_lock(&ch->lock);
    int closed;
    /* The seq_cst loads see this thread's own push or pop (program order)
     * and, through the lock, every value an enqueuer looked for and
     * missed before it released the lock. */
    size_t len = blitz__chan_count(ch, &closed);
    size_t vals = closed ? SIZE_MAX : len, room = closed ? SIZE_MAX : ch->cap - len;
    for (;;) {
        while (vals && !blitz__waitq_empty(&ch->receivers) && !blitz__wake_list_full(&wl)) {
            blitz__waiter *w = ch->receivers.blitz__head;
            blitz__waitq_unlink(&ch->receivers, w);
            blitz__u32_fetch_sub(&ch->recv_waiting, 1, BLITZ__SEQ_CST);
            blitz__wake_list_push(&wl, blitz__waiter_finish(w));
            vals--;
        }
        while (room && !blitz__waitq_empty(&ch->senders) && !blitz__wake_list_full(&wl)) {
            blitz__waiter *w = ch->senders.blitz__head;
            blitz__waitq_unlink(&ch->senders, w);
            blitz__u32_fetch_sub(&ch->send_waiting, 1, BLITZ__SEQ_CST);
            blitz__wake_list_push(&wl, blitz__waiter_finish(w));
            room--;
        }
        if (!blitz__wake_list_full(&wl))
            break;
        blitz__mutex_unlock(&ch->lock);
        blitz__wake_list_wake(&wl);
        blitz__mutex_lock(&ch->lock);
    }
    blitz__mutex_unlock(&ch->lock);
    blitz__wake_list_wake(&wl);
}

/* After a successful push or pop: let the other side's waiters move.
 * Seq_cst loads: see blitz__chan_push / blitz__chan_pop. */
static inline void blitz__chan_after_push(blitz_chan *ch) {
    if (blitz__u32_load(&ch->recv_waiting, BLITZ__SEQ_CST) != 0)
        blitz__chan_dispatch(ch);
}
static inline void blitz__chan_after_pop(blitz_chan *ch) {
    if (blitz__u32_load(&ch->send_waiting, BLITZ__SEQ_CST) != 0)
        blitz__chan_dispatch(ch);
}

BLITZ_API int blitz_chan_new(blitz_chan **out, size_t elem_size, size_t capacity) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    if (elem_size == 0 || capacity == 0 || capacity > ((size_t)1 << 40) ||
        elem_size > ((size_t)1 << 30))
        return BLITZ_EINVAL;
    size_t stride = (sizeof(uint64_t) + elem_size + 7u) & ~(size_t)7u;
    if (capacity > SIZE_MAX / stride)
        return BLITZ_EINVAL;
    void *raw = NULL;
    /* Aligned: the hot fields sit on their own cache lines. */
    blitz_chan *ch = (blitz_chan *)blitz__alloc_aligned(sizeof *ch, BLITZ_CACHE_LINE, &raw);
    if (!ch)
        return BLITZ_ENOMEM;
    memset(ch, 0, sizeof *ch);
    ch->raw = raw;
    ch->slots = (unsigned char *)BLITZ_MALLOC(capacity * stride);
    if (!ch->slots) {
        blitz__free(raw);
        return BLITZ_ENOMEM;
    }
    uint64_t mark = 1;
    while (mark < (uint64_t)capacity + 1)
        mark <<= 1;
    ch->mark = mark;
    ch->one_lap = mark << 1;
    ch->elem_size = elem_size;
    ch->stride = stride;
    ch->cap = capacity;
    size_t i;
    for (i = 0; i < capacity; i++)
        blitz__u64_store(blitz__chan_stamp(ch, i), i, BLITZ__RELAXED);
    blitz__mutex_init(&ch->lock);
    blitz__u64_store(&ch->refs, 1u | ((uint64_t)1 << 32), BLITZ__RELAXED);
    BLITZ__MAGIC_SET(ch, BLITZ__MAGIC_CHAN);
    *out = ch;
    return BLITZ_OK;
}

static void blitz__chan_free(blitz_chan *ch) {
    blitz__mutex_destroy(&ch->lock);
    BLITZ_FREE(ch->slots);
    BLITZ__MAGIC_SET(ch, BLITZ__MAGIC_DEAD);
    blitz__free_handle(ch->raw);
}

/* The holders of a channel (mpmc, broadcast, watch) are counted in one
 * word: senders in the low 32 bits (shift 0), receivers in the high ones
 * (shift 32). A side that reached zero stays closed. */
#define BLITZ__CHAN_SENDERS   0
#define BLITZ__CHAN_RECEIVERS 32

static inline int blitz__chan_refs_add(blitz__atomic_u64 *refs, int shift) {
    uint64_t cur = blitz__u64_load(refs, BLITZ__RELAXED);
    for (;;) {
        if (((cur >> shift) & 0xffffffffu) == 0)
            return BLITZ_ECLOSED;
        if (blitz__u64_cas_weak(refs, &cur, cur + ((uint64_t)1 << shift), BLITZ__RELAXED))
            return BLITZ_OK;
    }
}

/* Drops a holder of one side; BLITZ_ERELEASED when that side holds none.
 * Sets *last when this was the channel's last reference: the caller frees. */
static inline int blitz__chan_refs_release(blitz__atomic_u64 *refs, int shift,
                                           void (*close)(void *), void *ch, int *last) {
    uint64_t unit = (uint64_t)1 << shift;
    uint64_t cur = blitz__u64_load(refs, BLITZ__RELAXED);
    int closed = 0;
    for (;;) {
        uint64_t side = (cur >> shift) & 0xffffffffu;
        if (side == 0)
            return BLITZ_ERELEASED;
        /* The last of a side closes before its reference goes, so the
         * channel is still alive while it does (the other side may free it
         * right after). */
        if (side == 1 && !closed) {
            close(ch);
            closed = 1;
        }
        /* Acq_rel: the releaser that frees sees every other holder's use. */
        if (blitz__u64_cas_weak(refs, &cur, cur - unit, BLITZ__ACQ_REL))
            break;
    }
    *last = cur == unit;
    return BLITZ_OK;
}

/* Drops a holder known to be held (a receiver unsubscribing); returns
 * whether it was the channel's last reference. */
static inline int blitz__chan_refs_drop(blitz__atomic_u64 *refs, int shift) {
    uint64_t unit = (uint64_t)1 << shift;
    /* Acq_rel: whoever frees sees the other holders' use. */
    return blitz__u64_fetch_sub(refs, unit, BLITZ__ACQ_REL) == unit;
}

static int blitz__chan_ref_add(blitz_chan *ch, int shift) {
    return ch ? blitz__chan_refs_add(&ch->refs, shift) : BLITZ_EINVAL;
}

static void blitz__chan_close_last(void *ch) {
    blitz_chan_close((blitz_chan *)ch);
}

static int blitz__chan_ref_release(blitz_chan *ch, int shift) {
    if (!ch)
        return BLITZ_EINVAL;
    int last = 0;
    int rc = blitz__chan_refs_release(&ch->refs, shift, blitz__chan_close_last, ch, &last);
    if (last)
        blitz__chan_free(ch);
    return rc;
}

BLITZ_API int blitz_chan_sender_clone(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return blitz__chan_ref_add(ch, BLITZ__CHAN_SENDERS);
}
BLITZ_API int blitz_chan_sender_release(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return blitz__chan_ref_release(ch, BLITZ__CHAN_SENDERS);
}
BLITZ_API int blitz_chan_receiver_clone(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return blitz__chan_ref_add(ch, BLITZ__CHAN_RECEIVERS);
}
BLITZ_API int blitz_chan_receiver_release(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return blitz__chan_ref_release(ch, BLITZ__CHAN_RECEIVERS);
}

BLITZ_API int blitz_chan_close(blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch)
        return BLITZ_EINVAL;
    /* Seq_cst: a sender's claim CAS either lands before the mark (its
     * value is in the ring and will be drained) or fails on it. */
    uint64_t prev = blitz__u64_fetch_or(&ch->tail, ch->mark, BLITZ__SEQ_CST);
    if (!(prev & ch->mark))
        blitz__chan_dispatch(ch);
    return BLITZ_OK;
}

BLITZ_API int blitz_chan_is_closed(const blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return ch ? (blitz__u64_load(&ch->tail, BLITZ__ACQUIRE) & ch->mark) != 0 : 1;
}

BLITZ_API size_t blitz_chan_len(const blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    int closed;
    return ch ? blitz__chan_count(ch, &closed) : 0;
}

BLITZ_API size_t blitz_chan_capacity(const blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return ch ? ch->cap : 0;
}
BLITZ_API size_t blitz_chan_elem_size(const blitz_chan *ch) {
    BLITZ__CHAN_CHECK(ch);
    return ch ? ch->elem_size : 0;
}

BLITZ_API int blitz_chan_try_send(blitz_chan *ch, const void *value) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch || !value)
        return BLITZ_EINVAL;
    int r = blitz__chan_push(ch, value);
    if (BLITZ__LIKELY(r == BLITZ_OK)) {
        blitz__chan_after_push(ch);
        return BLITZ_OK;
    }
    return r == BLITZ__CHAN_BUSY ? BLITZ_EFULL : r;
}

BLITZ_API int blitz_chan_try_recv(blitz_chan *ch, void *out) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch || !out)
        return BLITZ_EINVAL;
    int r = blitz__chan_pop(ch, out);
    if (BLITZ__LIKELY(r == BLITZ_OK)) {
        blitz__chan_after_pop(ch);
        return BLITZ_OK;
    }
    return r == BLITZ__CHAN_BUSY ? BLITZ_EEMPTY : r;
}

/* ---- async ops ------------------------------------------------------------------ */

#define BLITZ__CHAN_OP_SEND 1u
#define BLITZ__CHAN_OP_RECV 2u
/* A party in flight is given this many re-tries before the op yields. */
#define BLITZ__CHAN_BUSY_SPINS 64
/* ...and then this many gives of its thread's CPU. */
#define BLITZ__CHAN_BUSY_YIELDS 2

static inline int blitz__chan_try(blitz_chan *ch, blitz_chan_op *op, int send) {
    return send ? blitz__chan_push(ch, op->blitz__buf) : blitz__chan_pop(ch, op->blitz__buf);
}

/* The slow path of an idle op: queue it, then look again (under the lock,
 * so a dispatch either runs before the look, which then sees its value or
 * slot, or after it, and counts this waiter). An op that was woken and
 * found nothing (another op took it first) queues at the front: it keeps
 * its turn. */
static blitz_poll blitz__chan_wait(blitz_cx *cx, blitz_chan_op *op, int send, int front) {
    blitz_chan *ch = op->blitz__ch;
    blitz__waitq *q = send ? &ch->senders : &ch->receivers;
    blitz__atomic_u32 *waiting = send ? &ch->send_waiting : &ch->recv_waiting;
    blitz_waker waker = blitz_cx_waker(cx);
    int spins = 0, r;
    blitz__mutex_lock(&ch->lock);
    op->blitz__w.blitz__flags = send ? BLITZ__CHAN_OP_SEND : BLITZ__CHAN_OP_RECV;
    if (front)
        blitz__waitq_push_front(q, &op->blitz__w, &waker);
    else
        blitz__waitq_push(q, &op->blitz__w, &waker);
    /* Seq_cst: see blitz__chan_pop / blitz__chan_push. */
    blitz__u32_fetch_add(waiting, 1, BLITZ__SEQ_CST);
    for (;;) {
        r = blitz__chan_try(ch, op, send);
        if (r != BLITZ__CHAN_BUSY || ++spins > BLITZ__CHAN_BUSY_SPINS)
            break;
        blitz__cpu_relax();
    }
    if (r == BLITZ_EFULL || r == BLITZ_EEMPTY) {
        blitz__mutex_unlock(&ch->lock);
        return BLITZ_PENDING;
    }
    blitz__u32_fetch_sub(waiting, 1, BLITZ__SEQ_CST);
    blitz_waker mine = blitz__waitq_withdraw(q, &op->blitz__w);
    blitz__waiter_reset(&op->blitz__w);
    blitz__mutex_unlock(&ch->lock);
    blitz_waker_drop(mine);
    if (r == BLITZ__CHAN_BUSY) {
        /* The party in flight is slow (preempted): poll again later rather
         * than spin here. */
        blitz_waker_wake_by_ref(&waker);
        return BLITZ_PENDING;
    }
    op->result = r;
    if (r == BLITZ_OK) {
        if (send)
            blitz__chan_after_push(ch);
        else
            blitz__chan_after_pop(ch);
    }
    return BLITZ_READY;
}

static blitz_poll blitz__chan_poll(blitz_cx *cx, blitz_chan_op *op, int send) {
    blitz_chan *ch = op->blitz__ch;
    /* Acquire: a DONE op was unlinked by the dispatch that published it;
     * from then on the waiter is this op's alone. */
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    int woken = 0;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker waker = blitz_cx_waker(cx);
        blitz__mutex_lock(&ch->lock);
        if (blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED) ==
            BLITZ__WAITER_QUEUED) {
            blitz_waker old = blitz__waiter_refresh(&op->blitz__w, &waker);
            blitz__mutex_unlock(&ch->lock);
            blitz_waker_drop(old);
            return BLITZ_PENDING;
        }
        blitz__mutex_unlock(&ch->lock);
        st = BLITZ__WAITER_DONE;
    }
    if (st == BLITZ__WAITER_DONE) {
        /* Woken: a value or a slot was there a moment ago; go for it. */
        blitz__waiter_reset(&op->blitz__w);
        woken = 1;
    }
    if (!ch || !op->blitz__buf) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    /* Not finished until a branch below says otherwise: a cancel of an
     * idle op that returned PENDING (a party in flight) must not report
     * the result of the op's previous use. */
    op->result = BLITZ_EAGAIN;
    /* A full or empty channel is not looked at again before queueing: a
     * spin here reads the lines the other side is writing while it moves
     * values, and under load burns the CPU that side needs (channel_mpmc
     * was faster without it in 14 of 16 alternating runs). */
    int r = blitz__chan_try(ch, op, send);
    if (r == BLITZ__CHAN_BUSY) {
        /* The other party is a few stores from done; its stores usually
         * arrive sooner than a trip through the waiter lock. */
        int spins;
        for (spins = 0; r == BLITZ__CHAN_BUSY && spins < BLITZ__CHAN_BUSY_SPINS; spins++) {
            blitz__cpu_relax();
            r = blitz__chan_try(ch, op, send);
        }
        /* Still there: its thread probably lost its CPU; offer ours. */
        for (spins = 0; r == BLITZ__CHAN_BUSY && spins < BLITZ__CHAN_BUSY_YIELDS; spins++) {
            blitz__yield();
            r = blitz__chan_try(ch, op, send);
        }
    }
    if (BLITZ__LIKELY(r == BLITZ_OK)) {
        op->result = BLITZ_OK;
        if (send)
            blitz__chan_after_push(ch);
        else
            blitz__chan_after_pop(ch);
        return BLITZ_READY;
    }
    if (r == BLITZ_ECLOSED) {
        op->result = r;
        return BLITZ_READY;
    }
    if (r == BLITZ__CHAN_BUSY) {
        /* The other party was preempted between its claim and its stamp:
         * let this worker run something else and look again. */
        blitz_waker self = blitz_cx_waker(cx);
        blitz_waker_wake_by_ref(&self);
        return BLITZ_PENDING;
    }
    return blitz__chan_wait(cx, op, send, woken);
}

static blitz_poll blitz__chan_send_poll(blitz_cx *cx, void *op) {
    return blitz__chan_poll(cx, (blitz_chan_op *)op, 1);
}
static blitz_poll blitz__chan_recv_poll(blitz_cx *cx, void *op) {
    return blitz__chan_poll(cx, (blitz_chan_op *)op, 0);
}

static inline void blitz__chan_op_bind(blitz_chan_op *op, blitz_chan *ch, const void *buf) {
    if (blitz__waiter_state(&op->blitz__w) == BLITZ__WAITER_IDLE) {
        op->blitz__ch = ch;
        op->blitz__buf = (void *)(uintptr_t)buf;
        /* Armed: a cancel before the op finishes reports ECANCELED, not a
         * result left from an earlier use of the op. */
        op->result = BLITZ_EAGAIN;
    }
}

BLITZ_API blitz_poll blitz_chan_send(blitz_cx *cx, blitz_chan_op *op, blitz_chan *ch,
                                     const void *value) {
    BLITZ__CHAN_CHECK(ch);
    if (!op)
        return BLITZ_READY;
    blitz__chan_op_bind(op, ch, value);
    return blitz__record(cx, blitz__chan_poll(cx, op, 1), blitz_chan_cancel, op);
}

BLITZ_API blitz_poll blitz_chan_recv(blitz_cx *cx, blitz_chan_op *op, blitz_chan *ch, void *out) {
    BLITZ__CHAN_CHECK(ch);
    if (!op)
        return BLITZ_READY;
    blitz__chan_op_bind(op, ch, out);
    return blitz__record(cx, blitz__chan_poll(cx, op, 0), blitz_chan_cancel, op);
}

BLITZ_API blitz_op blitz_op_chan_send(blitz_chan_op *op, blitz_chan *ch, const void *value) {
    BLITZ__CHAN_CHECK(ch);
    if (op)
        blitz__chan_op_bind(op, ch, value);
    return blitz_op_make(op ? blitz__chan_send_poll : NULL, blitz_chan_cancel, op);
}

BLITZ_API blitz_op blitz_op_chan_recv(blitz_chan_op *op, blitz_chan *ch, void *out) {
    BLITZ__CHAN_CHECK(ch);
    if (op)
        blitz__chan_op_bind(op, ch, out);
    return blitz_op_make(op ? blitz__chan_recv_poll : NULL, blitz_chan_cancel, op);
}

BLITZ_API void blitz_chan_cancel(blitz_cx *cx, void *vop) {
    blitz_chan_op *op = (blitz_chan_op *)vop;
    (void)cx;
    if (!op)
        return;
    uint32_t st = blitz__waiter_state(&op->blitz__w);
    if (st == BLITZ__WAITER_IDLE) {
        /* Nothing queued. A result already reported stays; an attempt
         * that returned PENDING without queueing, or an op never polled,
         * is withdrawn. */
        if (op->result == BLITZ_EAGAIN || !op->blitz__ch)
            op->result = BLITZ_ECANCELED;
        return;
    }
    blitz_chan *ch = op->blitz__ch;
    if (st == BLITZ__WAITER_QUEUED) {
        blitz_waker old = blitz_waker_noop();
        blitz__mutex_lock(&ch->lock);
        if (blitz__u32_field_load(&op->blitz__w.blitz__state, BLITZ__RELAXED) ==
            BLITZ__WAITER_QUEUED) {
            int send = op->blitz__w.blitz__flags == BLITZ__CHAN_OP_SEND;
            blitz__u32_fetch_sub(send ? &ch->send_waiting : &ch->recv_waiting, 1, BLITZ__SEQ_CST);
            old = blitz__waitq_withdraw(send ? &ch->senders : &ch->receivers, &op->blitz__w);
            blitz__waiter_reset(&op->blitz__w);
            op->result = BLITZ_ECANCELED;
            blitz__mutex_unlock(&ch->lock);
            blitz_waker_drop(old);
            return;
        }
        blitz__mutex_unlock(&ch->lock);
    }
    /* Woken but not yet polled: it moved nothing, so it is withdrawn like a
     * queued op, and the wake it used up goes to the next waiter, which
     * may now be the only one that can take the value or the slot. */
    blitz__waiter_reset(&op->blitz__w);
    op->result = BLITZ_ECANCELED;
    blitz__chan_dispatch(ch);
}

BLITZ_API int blitz_chan_send_blocking(blitz_chan *ch, const void *value) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch || !value)
        return BLITZ_EINVAL;
    blitz_chan_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_run_blocking(NULL, blitz_op_chan_send(&op, ch, value));
    return rc ? rc : op.result;
}

BLITZ_API int blitz_chan_recv_blocking(blitz_chan *ch, void *out) {
    BLITZ__CHAN_CHECK(ch);
    if (!ch || !out)
        return BLITZ_EINVAL;
    blitz_chan_op op;
    memset(&op, 0, sizeof op);
    int rc = blitz_op_run_blocking(NULL, blitz_op_chan_recv(&op, ch, out));
    return rc ? rc : op.result;
}
