/* The worker's LIFO slot and how it is emptied for a park (seed 000 "LIFO
 * slot", "Lost wakeup prevention").
 *
 * A task woken or spawned on a worker goes to its slot and runs next, on
 * the core whose caches hold what its waker just wrote. Only the owner
 * touches the slot, so no other worker can see or steal its task: the
 * slot must be empty whenever its owner may sleep, or the task is
 * stranded while every other worker is parked.
 *
 * A worker going to park:
 *   1. sets transitioning_to_park: from here on a task scheduled from
 *      this thread (a timer fired or an I/O completion run while parking)
 *      goes to the global queue, and a parked worker is told, instead of
 *      into the slot;
 *   2. flushes the slot to the ring, where stealers see it, and stays up
 *      when its ring or batch buffer holds anything;
 *   3. joins the parked set (blitz__idle_commit_park), which re-checks
 *      every shared queue after publishing its bit;
 *   4. after the sleep, or when it did not sleep, clears the flag.
 * From step 2 on the slot stays empty until the worker is awake again. */
#include "sched.h"

/* A task woken or spawned on worker `w` itself. The task it displaces
 * goes to the back of the ring, where others may steal it, so a parked
 * worker is told. */
BLITZ_PRIVATE void blitz__lifo_schedule(blitz__worker *w, blitz__task *t) {
    /* Acquire: the flag is set by this same thread today, but maintenance
     * that runs while parking (timers, I/O) may schedule from here too;
     * then the task must not sit in the slot of a sleeping worker. */
    if (blitz__u32_load(&w->transitioning_to_park, BLITZ__ACQUIRE)) {
        blitz__idle_schedule_remote(w->rt, t);
        return;
    }
    if (BLITZ__CHAOS(8)) {
        blitz__idle_schedule_remote(w->rt, t);
        return;
    }
    if (BLITZ__CHAOS(1)) {
        blitz__local_queue_push(&w->queue, t, w->rt, &w->counters);
        blitz__idle_notify_parked(w->rt);
        return;
    }
    blitz__task *prev = w->lifo_slot;
    w->lifo_slot = t;
    if (prev) {
        blitz__local_queue_push(&w->queue, prev, w->rt, &w->counters);
        blitz__idle_notify_parked(w->rt);
    }
}

/* Steps 1-3: returns 1 when the worker may sleep, 0 when work turned up
 * (or a notifier claimed it) and it must not. `stay_up` as for
 * blitz__idle_commit_park. */
BLITZ_PRIVATE int blitz__lifo_begin_park(blitz__worker *w, int (*stay_up)(blitz_runtime *rt)) {
    blitz_runtime *rt = w->rt;
    blitz__u32_store(&w->transitioning_to_park, 1, BLITZ__SEQ_CST);
    if (w->lifo_slot) {
        blitz__local_queue_push(&w->queue, w->lifo_slot, rt, &w->counters);
        w->lifo_slot = NULL;
    }
    if (blitz__local_queue_len(&w->queue) || w->batch_head < w->batch_len)
        return 0;
    return blitz__idle_commit_park(rt, w->index, &w->searching, stay_up);
}

/* Step 4: the worker is awake; local wakes use the slot again. */
BLITZ_PRIVATE void blitz__lifo_end_park(blitz__worker *w) {
    blitz__u32_store(&w->transitioning_to_park, 0, BLITZ__RELEASE);
}
