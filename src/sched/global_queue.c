/* The global injection queue (seed 000): a mutex-protected intrusive list
 * of tasks with an atomic length, so that "is it empty?" costs no lock. It
 * takes spawns and wakes from threads that are not workers, local-queue
 * overflow, and is closed at shutdown (pushes then fail). */
#include "sched.h"

BLITZ_PRIVATE int blitz__global_queue_init(blitz__global_queue *q) {
    q->head = q->tail = NULL;
    q->closed = 0;
    blitz__u64_store(&q->len, 0, BLITZ__RELAXED);
    return blitz__mutex_init(&q->lock);
}

BLITZ_PRIVATE void blitz__global_queue_destroy(blitz__global_queue *q) {
    blitz__mutex_destroy(&q->lock);
}

/* Length hint. Relaxed: callers that need ordering against their own
 * earlier store (the parking protocol) put a seq_cst fence before it. */
BLITZ_PRIVATE uint64_t blitz__global_queue_len(blitz__global_queue *q) {
    return blitz__u64_load(&q->len, BLITZ__RELAXED);
}

/* Appends the chain first..last (n tasks, last->next == NULL). Returns
 * BLITZ_ESHUTDOWN when the queue is closed (nothing is queued then). */
BLITZ_PRIVATE int blitz__global_queue_push_batch(blitz__global_queue *q, blitz__task *first,
                                                 blitz__task *last, uint64_t n) {
    blitz__mutex_lock(&q->lock);
    if (q->closed) {
        blitz__mutex_unlock(&q->lock);
        return BLITZ_ESHUTDOWN;
    }
    last->next = NULL;
    if (q->tail)
        q->tail->next = first;
    else
        q->head = first;
    q->tail = last;
    /* Written only under the lock, read anywhere. */
    blitz__u64_store(&q->len, blitz__u64_load(&q->len, BLITZ__RELAXED) + n, BLITZ__RELAXED);
    blitz__mutex_unlock(&q->lock);
    return BLITZ_OK;
}

BLITZ_PRIVATE int blitz__global_queue_push(blitz__global_queue *q, blitz__task *t) {
    return blitz__global_queue_push_batch(q, t, t, 1);
}

/* Takes up to `max` tasks into out[]; returns how many. */
BLITZ_PRIVATE uint32_t blitz__global_queue_pop_batch(blitz__global_queue *q, blitz__task **out,
                                                     uint32_t max) {
    if (blitz__u64_load(&q->len, BLITZ__RELAXED) == 0)
        return 0;
    uint32_t n = 0;
    blitz__mutex_lock(&q->lock);
    while (n < max && q->head) {
        blitz__task *t = q->head;
        q->head = t->next;
        out[n++] = t;
    }
    if (!q->head)
        q->tail = NULL;
    blitz__u64_store(&q->len, blitz__u64_load(&q->len, BLITZ__RELAXED) - n, BLITZ__RELAXED);
    blitz__mutex_unlock(&q->lock);
    return n;
}

/* Takes the whole list (current-thread driver, shutdown). */
BLITZ_PRIVATE blitz__task *blitz__global_queue_take_all(blitz__global_queue *q) {
    if (blitz__u64_load(&q->len, BLITZ__RELAXED) == 0)
        return NULL;
    blitz__mutex_lock(&q->lock);
    blitz__task *h = q->head;
    q->head = q->tail = NULL;
    blitz__u64_store(&q->len, 0, BLITZ__RELAXED);
    blitz__mutex_unlock(&q->lock);
    return h;
}

BLITZ_PRIVATE void blitz__global_queue_close(blitz__global_queue *q) {
    blitz__mutex_lock(&q->lock);
    q->closed = 1;
    blitz__mutex_unlock(&q->lock);
}
