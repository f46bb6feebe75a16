/* The per-worker run queue (seed 000 "WorkStealQueue", Tokio's queue.rs):
 * a fixed ring of BLITZ_LOCAL_QUEUE_CAPACITY task pointers with one producer
 * (the owning worker) and many consumers (the owner's pops and other
 * workers' steals).
 *
 * Positions are 16-bit and wrap. `head` packs two of them: `real` (the next
 * slot to consume) in the low half and `steal` in the high half. They differ
 * only while a stealer copies the slots [steal, real) it has claimed; the
 * owner must not overwrite those, so the free space is measured from
 * `steal`. Steal protocol, three phases:
 *   1. claim:   CAS head (steal, real) -> (steal, real + n), n = half
 *   2. copy:    the claimed slots into the stealer's own ring
 *   3. release: CAS head (steal, r) -> (r, r) for the current real r (the
 *               owner may have popped meanwhile: retry until it sticks)
 * A second stealer sees steal != real and backs off, so at most one steal
 * per victim is in flight. When the ring is full, the owner claims half of
 * it the same way and moves it, with the new task, to the global queue in
 * one batch; while a steal is in flight it pushes just the task there. */
#include "sched.h"

#define BLITZ__LQ_MASK ((uint16_t)(BLITZ_LOCAL_QUEUE_CAPACITY - 1))
#define BLITZ__LQ_HALF ((uint16_t)(BLITZ_LOCAL_QUEUE_CAPACITY / 2))

static inline uint32_t blitz__lq_pack(uint16_t steal, uint16_t real) {
    return ((uint32_t)steal << 16) | real;
}
static inline uint16_t blitz__lq_steal(uint32_t head) {
    return (uint16_t)(head >> 16);
}
static inline uint16_t blitz__lq_real(uint32_t head) {
    return (uint16_t)head;
}

BLITZ_PRIVATE void blitz__local_queue_init(blitz__local_queue *q) {
    blitz__u32_store(&q->head, 0, BLITZ__RELAXED);
    blitz__u32_store(&q->tail, 0, BLITZ__RELAXED);
    for (uint32_t i = 0; i < BLITZ_LOCAL_QUEUE_CAPACITY; i++)
        blitz__ptr_store(&q->buffer[i], NULL, BLITZ__RELAXED);
}

/* Tasks in the queue, as a hint for any thread. */
BLITZ_PRIVATE uint32_t blitz__local_queue_len(blitz__local_queue *q) {
    uint32_t head = blitz__u32_load(&q->head, BLITZ__ACQUIRE);
    uint16_t tail = (uint16_t)blitz__u32_load(&q->tail, BLITZ__ACQUIRE);
    return (uint16_t)(tail - blitz__lq_real(head));
}

/* Owner only: the ring is full; try to move half of it plus `t` to the
 * global queue. Returns 0 when a stealer got in first (the caller retries). */
static int blitz__local_queue_overflow(blitz__local_queue *q, blitz__task *t, uint16_t real,
                                       blitz_runtime *rt, blitz__worker_counters *k) {
    uint32_t prev = blitz__lq_pack(real, real);
    uint32_t next =
        blitz__lq_pack((uint16_t)(real + BLITZ__LQ_HALF), (uint16_t)(real + BLITZ__LQ_HALF));
    /* Release is not needed to publish the slots (the owner wrote them);
     * relaxed would do, but acq_rel keeps this CAS ordered like every other
     * head update for the reader of this code. */
    if (!blitz__u32_cas(&q->head, &prev, next, BLITZ__ACQ_REL))
        return 0;
    blitz__task *first =
        (blitz__task *)blitz__ptr_load(&q->buffer[real & BLITZ__LQ_MASK], BLITZ__RELAXED);
    blitz__task *last = first;
    for (uint16_t i = 1; i < BLITZ__LQ_HALF; i++) {
        blitz__task *n = (blitz__task *)blitz__ptr_load(
            &q->buffer[(uint16_t)(real + i) & BLITZ__LQ_MASK], BLITZ__RELAXED);
        last->next = n;
        last = n;
    }
    last->next = t;
    t->next = NULL;
    BLITZ__STAT(blitz__u64_bump(&k->overflows, 1));
    if (blitz__global_queue_push_batch(rt->global, first, t, (uint64_t)BLITZ__LQ_HALF + 1) != 0) {
        /* Closed by shutdown: the tasks stay SCHEDULED and the shutdown
         * sweep completes them as cancelled. */
    }
    return 1;
}

/* Owner only: appends `t`; spills to the global queue when full. */
BLITZ_PRIVATE void blitz__local_queue_push(blitz__local_queue *q, blitz__task *t, blitz_runtime *rt,
                                           blitz__worker_counters *k) {
    for (;;) {
        /* Acquire pairs with a stealer's release in phase 3: once we see
         * `steal` advanced, its copy of those slots is done. */
        uint32_t head = blitz__u32_load(&q->head, BLITZ__ACQUIRE);
        uint16_t steal = blitz__lq_steal(head), real = blitz__lq_real(head);
        uint16_t tail = (uint16_t)blitz__u32_load(&q->tail, BLITZ__RELAXED);
        if ((uint16_t)(tail - steal) < (uint16_t)BLITZ_LOCAL_QUEUE_CAPACITY) {
            blitz__ptr_store(&q->buffer[tail & BLITZ__LQ_MASK], t, BLITZ__RELAXED);
            /* Release: a consumer that acquires the new tail sees the slot. */
            blitz__u32_store(&q->tail, (uint16_t)(tail + 1), BLITZ__RELEASE);
            return;
        }
        if (steal != real) {
            /* A steal is copying out of the full ring: it will free room, but
             * do not wait for it. */
            t->next = NULL;
            (void)blitz__global_queue_push_batch(rt->global, t, t, 1);
            return;
        }
        if (blitz__local_queue_overflow(q, t, real, rt, k))
            return;
    }
}

/* Owner only: appends `t` if the ring has room; returns 0 when full. */
BLITZ_PRIVATE int blitz__local_queue_try_push(blitz__local_queue *q, blitz__task *t) {
    uint32_t head = blitz__u32_load(&q->head, BLITZ__ACQUIRE);
    uint16_t tail = (uint16_t)blitz__u32_load(&q->tail, BLITZ__RELAXED);
    if ((uint16_t)(tail - blitz__lq_steal(head)) >= (uint16_t)BLITZ_LOCAL_QUEUE_CAPACITY)
        return 0;
    blitz__ptr_store(&q->buffer[tail & BLITZ__LQ_MASK], t, BLITZ__RELAXED);
    blitz__u32_store(&q->tail, (uint16_t)(tail + 1), BLITZ__RELEASE);
    return 1;
}

/* Owner only: takes the oldest task, or NULL. */
BLITZ_PRIVATE blitz__task *blitz__local_queue_pop(blitz__local_queue *q) {
    uint32_t head = blitz__u32_load(&q->head, BLITZ__ACQUIRE);
    for (;;) {
        uint16_t steal = blitz__lq_steal(head), real = blitz__lq_real(head);
        uint16_t tail = (uint16_t)blitz__u32_load(&q->tail, BLITZ__RELAXED);
        if (real == tail)
            return NULL;
        uint16_t next_real = (uint16_t)(real + 1);
        /* With no steal in flight both halves move together. */
        uint32_t next =
            steal == real ? blitz__lq_pack(next_real, next_real) : blitz__lq_pack(steal, next_real);
        /* Acq_rel: the CAS is what decides between the owner and a stealer
         * for this slot; the owner wrote the slot itself, so the acquire
         * only matters for the stealer's earlier release of `steal`. */
        if (blitz__u32_cas_weak(&q->head, &head, next, BLITZ__ACQ_REL))
            return (blitz__task *)blitz__ptr_load(&q->buffer[real & BLITZ__LQ_MASK],
                                                  BLITZ__RELAXED);
    }
}

/* Phases 1-3 of a steal from `src` into `dst` starting at dst position
 * dst_tail. Returns the number of tasks copied (0: nothing or contended). */
static uint16_t blitz__local_queue_steal_phases(blitz__local_queue *src, blitz__local_queue *dst,
                                                uint16_t dst_tail) {
    uint32_t prev = blitz__u32_load(&src->head, BLITZ__ACQUIRE), next;
    uint16_t n, first;
    for (;;) {
        uint16_t steal = blitz__lq_steal(prev), real = blitz__lq_real(prev);
        if (steal != real)
            return 0; /* another stealer is copying */
        /* Acquire pairs with the owner's release store of tail: the slots
         * below it are written. */
        uint16_t tail = (uint16_t)blitz__u32_load(&src->tail, BLITZ__ACQUIRE);
        n = (uint16_t)(tail - real);
        n = (uint16_t)(n - n / 2);
        if (n == 0)
            return 0;
        /* The claim (phase 1). */
        next = blitz__lq_pack(steal, (uint16_t)(real + n));
        if (blitz__u32_cas_weak(&src->head, &prev, next, BLITZ__ACQ_REL)) {
            first = real;
            break;
        }
    }
    BLITZ_ASSERT(n <= BLITZ__LQ_HALF);
    /* The copy (phase 2): the owner will not reuse these slots until
     * `steal` moves past them. */
    for (uint16_t i = 0; i < n; i++) {
        void *t =
            blitz__ptr_load(&src->buffer[(uint16_t)(first + i) & BLITZ__LQ_MASK], BLITZ__RELAXED);
        blitz__ptr_store(&dst->buffer[(uint16_t)(dst_tail + i) & BLITZ__LQ_MASK], t,
                         BLITZ__RELAXED);
    }
    /* The release (phase 3): steal catches up with real. Acq_rel: the
     * release half tells the owner (its acquire load of head in push) that
     * our reads of the slots are done. */
    prev = next;
    for (;;) {
        uint16_t real = blitz__lq_real(prev);
        BLITZ_ASSERT(blitz__lq_steal(prev) == first);
        if (blitz__u32_cas_weak(&src->head, &prev, blitz__lq_pack(real, real), BLITZ__ACQ_REL))
            return n;
    }
}

/* Owner of `dst` only: steals half of `src` into `dst` and returns one of
 * the stolen tasks to run now, or NULL. */
BLITZ_PRIVATE blitz__task *
blitz__local_queue_steal_into(blitz__local_queue *src, blitz__local_queue *dst, uint32_t *stolen) {
    uint16_t dst_tail = (uint16_t)blitz__u32_load(&dst->tail, BLITZ__RELAXED);
    uint16_t dst_steal = blitz__lq_steal(blitz__u32_load(&dst->head, BLITZ__ACQUIRE));
    /* Only steal when half the ring is free, so the copy cannot overflow. */
    if ((uint16_t)(dst_tail - dst_steal) > BLITZ__LQ_HALF)
        return NULL;
    uint16_t n = blitz__local_queue_steal_phases(src, dst, dst_tail);
    *stolen = n;
    if (n == 0)
        return NULL;
    n--;
    blitz__task *ret = (blitz__task *)blitz__ptr_load(
        &dst->buffer[(uint16_t)(dst_tail + n) & BLITZ__LQ_MASK], BLITZ__RELAXED);
    if (n)
        blitz__u32_store(&dst->tail, (uint16_t)(dst_tail + n), BLITZ__RELEASE);
    return ret;
}
