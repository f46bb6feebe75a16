/* Idle workers (seed 000 "IdleState", "Last searcher must notify").
 *
 * parked_bitmap has bit i set while worker i is parked. Only worker i sets
 * its bit; the bit is cleared either by a notifier that claims the worker
 * (a CAS, so two notifiers never claim the same one) or by the worker itself
 * when it stops parking without being claimed (fetch_and, whose old value
 * tells it which happened). A claimed worker wakes up as a searcher: the
 * notifier counts it in num_searching before unparking it.
 *
 * Lost-wakeup argument (a store-buffer pattern, so both sides use seq_cst):
 *   producer: publish task (queue) ; fence ; read num_searching, bitmap
 *   parker:   set bit / decrement num_searching (seq_cst RMW) ; fence ;
 *             re-check every queue
 * At least one side sees the other's write: either the producer sees the
 * parker (and wakes it or a searcher), or the parker sees the task (and
 * does not sleep). */
#include "sched.h"

BLITZ_PRIVATE void blitz__idle_init(blitz__idle *idle) {
    blitz__u32_store(&idle->num_searching, 0, BLITZ__RELAXED);
    blitz__u64_store(&idle->parked_bitmap, 0, BLITZ__RELAXED);
    blitz__u32_store(&idle->lifo_armed, 0, BLITZ__RELAXED);
    blitz__u32_store(&idle->lifo_watcher, 0, BLITZ__RELAXED);
    blitz__u32_store(&idle->lifo_quiet, 0, BLITZ__RELAXED);
    blitz__u32_store(&idle->lifo_backoff, 0, BLITZ__RELAXED);
}

/* Searcher cap: at most half the workers steal at once (thundering herd). */
BLITZ_PRIVATE int blitz__idle_try_become_searcher(blitz_runtime *rt) {
    uint32_t n = blitz__u32_load(&rt->idle->num_searching, BLITZ__RELAXED);
    for (;;) {
        if (2 * n >= rt->num_workers)
            return 0;
        if (blitz__u32_cas_weak(&rt->idle->num_searching, &n, n + 1, BLITZ__SEQ_CST))
            return 1;
    }
}

/* Wakes one parked worker, as a searcher, unless someone already searches.
 * Called after making work visible to other workers. */
BLITZ_PRIVATE void blitz__idle_notify_parked(blitz_runtime *rt) {
    blitz__fence_seq_cst();
    if (blitz__u32_load(&rt->idle->num_searching, BLITZ__RELAXED) != 0)
        return;
    uint64_t bm = blitz__u64_load(&rt->idle->parked_bitmap, BLITZ__RELAXED);
    while (bm) {
        uint32_t i = (uint32_t)blitz__ctz64(bm);
        if (blitz__u64_cas_weak(&rt->idle->parked_bitmap, &bm, bm & ~((uint64_t)1 << i),
                                BLITZ__ACQ_REL)) {
            blitz__u32_fetch_add(&rt->idle->num_searching, 1, BLITZ__SEQ_CST);
            blitz__parker_unpark(&rt->workers[i].parker);
            return;
        }
    }
}

/* Queues a task where every worker looks (a thread that is not one of
 * the runtime's workers schedules this way) and wakes a parked worker. */
BLITZ_PRIVATE void blitz__idle_schedule_remote(blitz_runtime *rt, blitz__task *t) {
    if (blitz__global_queue_push(rt->global, t) == BLITZ_OK)
        blitz__idle_notify_parked(rt);
    /* else: closed by shutdown; the task stays SCHEDULED and the sweep
     * completes it as cancelled. */
}

/* A searcher found work. Returns 1 when it was the last one: then it must
 * wake another worker, because more work may be waiting (the chain that
 * keeps every queued task moving). */
BLITZ_PRIVATE int blitz__idle_transition_from_searching(blitz_runtime *rt) {
    return blitz__u32_fetch_sub(&rt->idle->num_searching, 1, BLITZ__SEQ_CST) == 1;
}

BLITZ_PRIVATE void blitz__idle_set_parked(blitz_runtime *rt, uint32_t index) {
    blitz__u64_fetch_or(&rt->idle->parked_bitmap, (uint64_t)1 << index, BLITZ__SEQ_CST);
}

/* Whether worker `index` is still parked: no notifier claimed it. A
 * notifier clears the bit before it unparks, so a bit read clear here
 * means a token is on its way. */
BLITZ_PRIVATE int blitz__idle_is_parked(blitz_runtime *rt, uint32_t index) {
    return (blitz__u64_load(&rt->idle->parked_bitmap, BLITZ__ACQUIRE) >> index) & 1;
}

/* Clears our own bit. Returns 1 when it was still set (nobody claimed us),
 * 0 when a notifier had claimed us (we are now counted as a searcher). */
BLITZ_PRIVATE int blitz__idle_unset_parked(blitz_runtime *rt, uint32_t index) {
    uint64_t bit = (uint64_t)1 << index;
    return (blitz__u64_fetch_and(&rt->idle->parked_bitmap, ~bit, BLITZ__ACQ_REL) & bit) != 0;
}

/* Work another worker could take or this one could find: the global queue
 * or any ring. */
BLITZ_PRIVATE int blitz__idle_work_available(blitz_runtime *rt) {
    if (blitz__global_queue_len(rt->global))
        return 1;
    for (uint32_t i = 0; i < rt->num_workers; i++)
        if (blitz__local_queue_len(&rt->workers[i].queue))
            return 1;
    return 0;
}

/* A searcher stops searching (it found work, or it is about to park).
 * Returns 1 when it was the last searcher and `wake_anyway` is set or work
 * is visible: producers skipped their wake while it searched, so another
 * worker must be woken (or this one must not sleep). Their work is visible
 * here: their push, fence, read of num_searching against our decrement,
 * fence, read of the queues. */
BLITZ_PRIVATE int blitz__idle_leave_searching(blitz_runtime *rt, int wake_anyway) {
    if (!blitz__idle_transition_from_searching(rt))
        return 0;
    blitz__fence_seq_cst();
    return wake_anyway || blitz__idle_work_available(rt);
}

/* Worker `index`, its own queues empty and its transitioning_to_park flag
 * set, joins the parked set: a searcher leaves searching first, then the
 * bit is published and, after the fence, every queue and `stay_up`
 * (shutdown, timers) are checked again. Returns 1 when it may sleep; 0
 * when it must not, with *searching set when a notifier claimed it
 * meanwhile. */
BLITZ_PRIVATE int blitz__idle_commit_park(blitz_runtime *rt, uint32_t index, int *searching,
                                          int (*stay_up)(blitz_runtime *rt)) {
    if (*searching) {
        *searching = 0;
        if (blitz__idle_leave_searching(rt, 0))
            return 0;
    }
    blitz__idle_set_parked(rt, index);
    blitz__fence_seq_cst();
    if (blitz__idle_work_available(rt) || stay_up(rt)) {
        if (!blitz__idle_unset_parked(rt, index))
            *searching = 1; /* a notifier claimed us meanwhile */
        return 0;
    }
    return 1;
}

/* Wakes every parked worker (shutdown). */
BLITZ_PRIVATE void blitz__idle_unpark_all(blitz_runtime *rt) {
    for (uint32_t i = 0; i < rt->num_workers; i++)
        blitz__parker_unpark(&rt->workers[i].parker);
}
