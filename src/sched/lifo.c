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
 * From step 2 on the slot stays empty until the worker is awake again.
 *
 * Rescue. A task left in the slot by a worker that then polls one task for
 * long (a spawner that computes) would wait for the end of that poll while
 * the others sleep. So one parked worker, the watcher, sleeps at most
 * BLITZ__LIFO_RESCUE_NS while the rescue is armed (up to 8 times that
 * after rounds that rescued nothing: each wake takes a core from the busy
 * workers). Before its sleep it notes a task in another worker's slot and
 * that worker's polls_begun; if the owner has begun no poll when it wakes,
 * the task is stranded and the watcher takes it (tasks left in that
 * worker's ring are noted the same way, and stolen by the search that
 * follows). Otherwise, when nobody claimed it meanwhile, the watcher
 * sleeps again without leaving the parked set: an awake worker steals
 * from the busy ones, and would split two tasks that wake each other on
 * one worker.
 *   - Only the owner puts a task in its slot; the watcher only empties it.
 *     So an empty slot the owner reads stays empty until the owner fills
 *     it (a plain release store), and the owner empties a full one with a
 *     swap, against the watcher's CAS: exactly one of them gets the task.
 *   - The owner's release (store or swap) pairs with the watcher's acquire
 *     CAS: the rescuer sees the task's contents.
 *   - A worker filling its empty slot arms the rescue when it is off (a
 *     relaxed load on that path, a wake only then); the watcher turns it
 *     off after BLITZ__LIFO_QUIET_ROUNDS wakes in a row with every other
 *     worker parked, so an idle runtime sleeps without a timeout again.
 *     That hint may race with the turning off (the filler's store is not
 *     fenced against the watcher's last look): the next fill re-arms it.
 * tests/model/check_lifo.cpp runs both halves. */
#include "sched.h"

#ifndef BLITZ__LIFO_RESCUE_NS
#define BLITZ__LIFO_RESCUE_NS 1000000u
#endif
#define BLITZ__LIFO_QUIET_ROUNDS 64u
#define BLITZ__LIFO_MAX_BACKOFF  3u /* the watch sleeps up to 8x longer */

static void blitz__lifo_arm_rescue(blitz_runtime *rt) {
    uint32_t off = 0;
    if (!blitz__u32_cas(&rt->idle->lifo_armed, &off, 1, BLITZ__SEQ_CST) || rt->num_workers < 2)
        return; /* one worker: nobody to rescue to, and armed for good */
    blitz__u32_store(&rt->idle->lifo_quiet, 0, BLITZ__RELAXED);
    blitz__u32_store(&rt->idle->lifo_backoff, 0, BLITZ__RELAXED);
    /* A worker woken here finds nothing and parks again, as the watcher;
     * a searcher already up becomes it the same way. */
    blitz__idle_notify_parked(rt);
}

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
    /* Relaxed: only this thread fills the slot, so an empty one stays
     * empty; a full one may be emptied by a rescuer meanwhile: swap. */
    blitz__task *prev = (blitz__task *)blitz__ptr_load(&w->lifo_slot, BLITZ__RELAXED);
    if (!prev) {
        /* Release: the task's contents, for a rescuer's acquire CAS. */
        blitz__ptr_store(&w->lifo_slot, t, BLITZ__RELEASE);
        /* Relaxed: a hint (see the top of the file). */
        if (BLITZ__UNLIKELY(!blitz__u32_load(&w->rt->idle->lifo_armed, BLITZ__RELAXED)))
            blitz__lifo_arm_rescue(w->rt);
        return;
    }
    /* Release as above; no acquire: a rescuer only stores NULL, and a
     * task taken back was this thread's own. */
    prev = (blitz__task *)blitz__ptr_swap(&w->lifo_slot, t, BLITZ__RELEASE);
    if (prev) {
        blitz__local_queue_push(&w->queue, prev, w->rt, &w->counters);
        blitz__idle_notify_parked(w->rt);
    }
}

/* The owner takes its slot's task, or NULL (empty, or rescued). */
BLITZ_PRIVATE blitz__task *blitz__lifo_take(blitz__worker *w) {
    blitz__task *t = (blitz__task *)blitz__ptr_load(&w->lifo_slot, BLITZ__RELAXED);
    /* A swap, not a store: a rescuer's CAS may empty the slot meanwhile.
     * Relaxed: the task is this thread's own (see blitz__lifo_schedule). */
    if (t)
        t = (blitz__task *)blitz__ptr_swap(&w->lifo_slot, NULL, BLITZ__RELAXED);
    return t;
}

/* The owner is about to poll a task: a rescuer that noted a task in the
 * slot before this leaves it (the owner is not stuck). Relaxed: rescuers
 * only compare it; the slot's CAS decides who gets a task. */
static inline void blitz__lifo_poll_begin(blitz__worker *w) {
    blitz__u64_store(&w->polls_begun, blitz__u64_load(&w->polls_begun, BLITZ__RELAXED) + 1,
                     BLITZ__RELAXED);
}

/* Steps 1-3: returns 1 when the worker may sleep, 0 when work turned up
 * (or a notifier claimed it) and it must not. `stay_up` as for
 * blitz__idle_commit_park. */
BLITZ_PRIVATE int blitz__lifo_begin_park(blitz__worker *w, int (*stay_up)(blitz_runtime *rt)) {
    blitz_runtime *rt = w->rt;
    blitz__u32_store(&w->transitioning_to_park, 1, BLITZ__SEQ_CST);
    blitz__task *slot = blitz__lifo_take(w);
    if (slot)
        blitz__local_queue_push(&w->queue, slot, rt, &w->counters);
    if (blitz__local_queue_len(&w->queue) || w->batch_head < w->batch_len)
        return 0;
    return blitz__idle_commit_park(rt, w->index, &w->searching, stay_up);
}

/* Step 4: the worker is awake; local wakes use the slot again. */
BLITZ_PRIVATE void blitz__lifo_end_park(blitz__worker *w) {
    blitz__u32_store(&w->transitioning_to_park, 0, BLITZ__RELEASE);
}

/* Parked worker `w` before its sleep: the longest it may sleep, as the
 * watcher, having noted another worker with a task in its slot or ring
 * (if any) and that worker's polls_begun; 0 when it is not the watcher
 * (the rescue is off, or another worker watches). */
BLITZ_PRIVATE uint64_t blitz__lifo_watch(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    w->watch_task = NULL;
    w->watch_queued = 0;
    uint32_t none = 0;
    if (rt->num_workers < 2 || !blitz__u32_load(&rt->idle->lifo_armed, BLITZ__ACQUIRE) ||
        !blitz__u32_cas(&rt->idle->lifo_watcher, &none, w->index + 1, BLITZ__ACQ_REL))
        return 0;
    for (uint32_t i = 1; i < rt->num_workers; i++) {
        uint32_t v = (w->index + i) % rt->num_workers;
        blitz__worker *o = &rt->workers[v];
        /* Relaxed: only noted; the CAS in blitz__lifo_rescue acquires. */
        blitz__task *t = (blitz__task *)blitz__ptr_load(&o->lifo_slot, BLITZ__RELAXED);
        int queued = blitz__local_queue_len(&o->queue) != 0;
        if (t || queued) {
            w->watch_task = t;
            w->watch_queued = queued;
            w->watch_victim = v;
            w->watch_polls = blitz__u64_load(&o->polls_begun, BLITZ__RELAXED);
            break;
        }
    }
    return (uint64_t)BLITZ__LIFO_RESCUE_NS
           << blitz__u32_load(&rt->idle->lifo_backoff, BLITZ__RELAXED);
}

/* The worker noted by blitz__lifo_watch has begun no poll since: what it
 * holds waits for the end of a long poll. */
static int blitz__lifo_stranded(blitz__worker *w) {
    if (!w->watch_task && !w->watch_queued)
        return 0;
    blitz__worker *o = &w->rt->workers[w->watch_victim];
    return blitz__u64_load(&o->polls_begun, BLITZ__RELAXED) == w->watch_polls;
}

/* Ends a watch round: the sleep backs off after a round that rescued
 * nothing, the rescue turns off after enough quiet rounds, and the
 * watcher gives the role up. */
static void blitz__lifo_end_round(blitz__worker *w, int rescued) {
    blitz_runtime *rt = w->rt;
    uint32_t backoff = blitz__u32_load(&rt->idle->lifo_backoff, BLITZ__RELAXED);
    if (rescued)
        backoff = 0;
    else if (backoff < BLITZ__LIFO_MAX_BACKOFF)
        backoff++;
    blitz__u32_store(&rt->idle->lifo_backoff, backoff, BLITZ__RELAXED);
    uint64_t others = ~((uint64_t)1 << w->index);
    if (rt->num_workers < 64)
        others &= ((uint64_t)1 << rt->num_workers) - 1;
    uint64_t parked = blitz__u64_load(&rt->idle->parked_bitmap, BLITZ__SEQ_CST);
    if ((parked & others) != others)
        blitz__u32_store(&rt->idle->lifo_quiet, 0, BLITZ__RELAXED);
    else if (blitz__u32_fetch_add(&rt->idle->lifo_quiet, 1, BLITZ__RELAXED) + 1 >=
             BLITZ__LIFO_QUIET_ROUNDS)
        blitz__u32_store(&rt->idle->lifo_armed, 0, BLITZ__SEQ_CST);
    /* Release: the next watcher's CAS sees this round's words. */
    blitz__u32_store(&rt->idle->lifo_watcher, 0, BLITZ__RELEASE);
}

/* The watcher whose sleep timed out, still parked (no notifier claimed
 * it): returns 1 when it must wake to rescue, or 0 with the next sleep's
 * limit in *sleep_ns (0: none, the watch is over). */
BLITZ_PRIVATE int blitz__lifo_watch_again(blitz__worker *w, uint64_t *sleep_ns) {
    *sleep_ns = 0;
    if (blitz__u32_load(&w->rt->idle->lifo_watcher, BLITZ__RELAXED) != w->index + 1)
        return 0;
    if (blitz__lifo_stranded(w))
        return 1;
    blitz__lifo_end_round(w, 0);
    *sleep_ns = blitz__lifo_watch(w);
    return 0;
}

/* The watcher after its sleep: takes the noted task into its own ring when
 * the owner has begun no poll since (a task stranded in the owner's ring
 * is left to the search that follows), and ends the round. Returns 1 when
 * it took a task. */
BLITZ_PRIVATE int blitz__lifo_rescue(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    if (blitz__u32_load(&rt->idle->lifo_watcher, BLITZ__RELAXED) != w->index + 1)
        return 0;
    blitz__task *t = w->watch_task;
    blitz__worker *o = &rt->workers[w->watch_victim];
    int stranded = blitz__lifo_stranded(w), rescued = 0;
    /* Acquire: pairs with the owner's release store or swap, for the
     * task's contents. The pointer may name a later task in the same
     * memory; any task in the slot is runnable, and the CAS gives it to
     * one thread only. */
    if (t && stranded && blitz__ptr_cas(&o->lifo_slot, (void **)&t, NULL, BLITZ__ACQUIRE)) {
        blitz__local_queue_push(&w->queue, t, rt, &w->counters);
        rescued = 1;
    }
    w->watch_task = NULL;
    w->watch_queued = 0;
    blitz__lifo_end_round(w, stranded);
    return rescued;
}
