/* The current-thread scheduler (seed 004): one run queue, driven by
 * whichever thread waits on the runtime (blitz_join_blocking /
 * blitz_runtime_run). Tasks scheduled on the driving thread go straight to
 * the local list; other threads push to the global (injection) queue and
 * unpark the driver. Only one thread drives at a time (`driving`); other
 * waiters sleep on the completion word and take over when the driver
 * leaves. */
#include "sched.h"

/* Driving thread only. */
BLITZ_PRIVATE void blitz__ct_push(blitz_runtime *rt, blitz__task *t) {
    blitz__list_append(&rt->ct->head, &rt->ct->tail, t);
}

/* Any thread. The parker's token makes an unpark that lands before the
 * driver parks count. */
BLITZ_PRIVATE int blitz__ct_inject(blitz_runtime *rt, blitz__task *t) {
    int rc = blitz__global_queue_push(rt->global, t);
    if (rc == BLITZ_OK)
        blitz__parker_unpark(&rt->ct->parker);
    return rc;
}

static blitz__task *blitz__ct_pop(blitz__ct_core *ct) {
    blitz__task *t = ct->head;
    if (t) {
        ct->head = t->next;
        if (!ct->head)
            ct->tail = NULL;
    }
    return t;
}

/* Moves everything injected by other threads to the back of the list. */
static void blitz__ct_drain_inject(blitz_runtime *rt) {
    blitz__task *t = blitz__global_queue_take_all(rt->global);
    while (t) {
        blitz__task *next = t->next;
        blitz__ct_push(rt, t);
        t = next;
    }
}

/* Yielded tasks of this tick join the back of the list. */
static void blitz__ct_flush_deferred(blitz__ct_core *ct) {
    if (!ct->deferred_head)
        return;
    if (ct->tail)
        ct->tail->next = ct->deferred_head;
    else
        ct->head = ct->deferred_head;
    ct->tail = ct->deferred_tail;
    ct->deferred_head = ct->deferred_tail = NULL;
}

/* Metrics: busy time is the time a thread drives the runtime and is not
 * parked; only the driving thread touches awake_since. */
static void blitz__ct_add_busy(blitz__ct_core *ct) {
    uint64_t now = blitz__now_ns();
    if (now > ct->awake_since)
        blitz__u64_bump(&ct->counters.busy_ns, now - ct->awake_since);
    ct->awake_since = now;
}

/* Runs tasks on the calling (driving) thread until `target` completes or
 * the runtime shuts down. */
static void blitz__ct_drive_until(blitz_runtime *rt, blitz__task *target, blitz__context *ctx) {
    blitz__ct_core *ct = rt->ct;
    uint32_t interval = rt->fixed_interval ? rt->fixed_interval : 31;
    uint64_t polls_since_io = BLITZ__IO_EVENT_INTERVAL; /* look first */
    /* Polls until the next look at injected tasks, kept across drives: a
     * program that drives in short spells still takes them in time. */
    uint32_t inject_in = ct->inject_in ? ct->inject_in : interval;
    for (;;) {
        if (blitz__task_is_complete(target) || blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            goto out;
        uint32_t polls = 0;
        blitz__time_process(rt, 1);
        blitz__io_between_ticks(rt, &polls_since_io);
        ctx->clock_ns = blitz__now_ns();
        while (polls < BLITZ_BUDGET_PER_TICK) {
            /* Take injected tasks now and then even when the list is busy,
             * so remote spawns and wakes are not starved. */
            if (BLITZ__UNLIKELY(--inject_in == 0)) {
                inject_in = interval;
                blitz__ct_drain_inject(rt);
            }
            blitz__task *t = blitz__ct_pop(ct);
            if (!t) {
                blitz__ct_drain_inject(rt);
                blitz__ct_flush_deferred(ct);
                if (!(t = blitz__ct_pop(ct)))
                    break;
            }
            /* Counted without a branch: 0 for a task completed as cancelled. */
            uint64_t ran = (uint64_t)blitz__task_run(t, ctx);
            BLITZ__STAT(blitz__u64_bump(&ct->counters.polled, ran));
            polls++;
            if (blitz__task_is_complete(target) || blitz__u32_load(&rt->shutdown, BLITZ__RELAXED)) {
                blitz__ct_flush_deferred(ct);
                goto out;
            }
        }
        blitz__ct_flush_deferred(ct);
        polls_since_io += polls;
        if (polls == 0) {
            /* Idle. A completion on another thread (a cancel) wakes the
             * joiners and unparks us; so does any inject. */
            if (!blitz__task_set_thread_joiner(target))
                goto out;
            if (blitz__global_queue_len(rt->global))
                continue;
            /* Idle with a paused clock: jump to the next timer, unless a
             * blocking-pool job may still wake a task (it counts in
             * paused_polling; seq_cst as it is raised) or another thread
             * is between arming a spawn's deadline and queueing it. */
            if (!blitz__u32_load(&rt->paused_polling, BLITZ__SEQ_CST) &&
                !blitz__u32_load(&rt->spawning, BLITZ__SEQ_CST) &&
                blitz__time_auto_advance(rt, NULL))
                continue;
            /* Idle: give memory back after a burst of tasks, or wake up
             * to do it once its delay is over. */
            uint64_t trim_ns = blitz__block_trim_idle(rt, &ct->cache);
            uint64_t timeout = rt->park_timeout_ns, timer_ns = blitz__time_sleep_ns(rt);
            if (timer_ns && (timeout == 0 || timer_ns < timeout))
                timeout = timer_ns;
            if (trim_ns && (timeout == 0 || trim_ns < timeout))
                timeout = trim_ns;
            BLITZ__STAT(blitz__u64_bump(&ct->counters.parked, 1));
            if (rt->metrics)
                blitz__ct_add_busy(ct);
            if (rt->hooks.worker_park)
                rt->hooks.worker_park(rt->hooks.arg, 0);
            /* The driver waits in the I/O backend, with the timer deadline. */
            if (rt->io) {
                blitz__io_park(rt, &ct->parker, timeout, NULL, NULL);
                polls_since_io = 0;
            } else {
                blitz__parker_park(&ct->parker, timeout);
            }
            if (rt->hooks.worker_unpark)
                rt->hooks.worker_unpark(rt->hooks.arg, 0);
            if (rt->metrics)
                ct->awake_since = blitz__now_ns();
        }
    }
out:
    ct->inject_in = inject_in;
}

BLITZ_PRIVATE void blitz__ct_wait(blitz_runtime *rt, blitz__task *t, blitz__context *ctx) {
    if (ctx && ctx->rt == rt && ctx->ct_driver) {
        /* Waiting inside one of our own tasks: keep driving, nested. It
         * returns unfinished only at shutdown, which waits for this poll. */
        blitz__ct_drive_until(rt, t, ctx);
        return;
    }
    while (!blitz__task_is_complete(t)) {
        /* A pool thread of this runtime: shutdown waits for its job, so
         * the job must not wait for the sweep. */
        if (ctx && ctx->rt == rt && blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            return;
        uint32_t idle = 0;
        if (!blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE) &&
            blitz__u32_cas(&rt->ct->driving, &idle, 1, BLITZ__ACQUIRE)) {
            blitz__context dctx;
            blitz__context_init(&dctx, rt);
            dctx.ct_driver = 1;
            dctx.cache = &rt->ct->cache;
            dctx.counters = &rt->ct->counters;
            blitz__context_set_stall(&dctx, rt->stall_slots); /* the driver's slot, or NULL */
            blitz__context *outer = blitz__context_set(&dctx);
            blitz__io_driver_start(rt);
            if (rt->metrics)
                rt->ct->awake_since = blitz__now_ns();
            blitz__ct_drive_until(rt, t, &dctx);
            /* Nobody drives until the next wait: as idle as it gets. A
             * trim still in its delay waits for a later drive. */
            (void)blitz__block_trim_idle(rt, &rt->ct->cache);
            if (rt->metrics)
                blitz__ct_add_busy(rt->ct);
            blitz__io_after_drive(rt);
            blitz__context_set(outer);
            /* Release: the next driver sees the run queue as we left it. */
            blitz__u32_store(&rt->ct->driving, 0, BLITZ__RELEASE);
            /* Another waiter may now take over driving. */
            blitz__wake_thread_joiners(rt);
            continue;
        }
        blitz__wait_completion(rt, t, rt->park_timeout_ns);
    }
}
