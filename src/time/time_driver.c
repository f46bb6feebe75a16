/* The time driver: the runtime's clock and its timer wheel, wired to
 * tasks.
 *
 * The clock is CLOCK_MONOTONIC in nanoseconds, or, for a runtime created
 * with a paused clock, a virtual time that moves only when told
 * (blitz_time_advance) or, when every worker is idle, jumps to the next
 * deadline. Ticks are whole milliseconds since the runtime's origin; a
 * deadline is rounded up to a tick and a timer fires once the current tick
 * reaches it, so no timer fires before its deadline.
 *
 * The wheel and every armed timer's waker are guarded by `lock`. Firing
 * moves the due entries out under the lock, marks them FIRED (release) and
 * wakes their wakers after unlocking. `next_expiry_ns` is a lock-free hint
 * for the earliest deadline (never later than the truth): workers compare
 * the clock with it at each tick and only then take the lock (a try-lock,
 * so that one worker stuck in a long poll never stops timers: any other
 * worker fires them). One parked worker at a time (the "timer sleeper")
 * sleeps with a timeout to the next deadline; the others sleep without one,
 * so an idle runtime without timers wakes nobody. Arming a timer earlier
 * than the hint wakes the sleeper (or a parked worker) to re-plan. */
#include "time.h"

#define BLITZ__TICK_NS     1000000u
#define BLITZ__TIMER_IDLE  0u
#define BLITZ__TIMER_ARMED 1u
#define BLITZ__TIMER_FIRED 2u

BLITZ_PRIVATE void blitz__time_init(blitz_runtime *rt, int paused) {
    blitz__time_driver *td = rt->time;
    blitz__mutex_init(&td->lock);
    td->origin_ns = blitz__now_ns();
    td->paused = paused;
    blitz__u64_store(&td->virtual_ns, td->origin_ns, BLITZ__RELAXED);
    blitz__wheel_init(&td->wheel, 0);
    blitz__u64_store(&td->next_expiry_ns, UINT64_MAX, BLITZ__RELAXED);
    blitz__u32_store(&td->sleeper, 0, BLITZ__RELAXED);
}

BLITZ_PRIVATE void blitz__time_destroy(blitz_runtime *rt) {
    blitz__mutex_destroy(&rt->time->lock);
}

/* The runtime's current time in nanoseconds. */
BLITZ_PRIVATE uint64_t blitz__rt_now(const blitz_runtime *rt) {
    if (rt->time->paused)
        return blitz__u64_load(&rt->time->virtual_ns, BLITZ__ACQUIRE);
    return blitz__now_ns();
}

/* Ticks since the origin that `ns` has fully reached (floor), and the tick
 * at which a deadline is due (ceiling). */
static uint64_t blitz__tick_floor(const blitz_runtime *rt, uint64_t ns) {
    return ns <= rt->time->origin_ns ? 0 : (ns - rt->time->origin_ns) / BLITZ__TICK_NS;
}
static uint64_t blitz__tick_ceil(const blitz_runtime *rt, uint64_t ns) {
    if (ns <= rt->time->origin_ns)
        return 0;
    uint64_t d = ns - rt->time->origin_ns;
    return d / BLITZ__TICK_NS + (d % BLITZ__TICK_NS != 0);
}
/* The nanosecond at which tick `t` begins (saturating). */
static uint64_t blitz__tick_start_ns(const blitz_runtime *rt, uint64_t t) {
    if (t >= (UINT64_MAX - rt->time->origin_ns) / BLITZ__TICK_NS)
        return UINT64_MAX;
    return rt->time->origin_ns + t * BLITZ__TICK_NS;
}

/* Publishes the wheel's earliest expiry as the hint. Caller holds lock.
 * Seq_cst: pairs with a parking worker's seq_cst re-check (worker.c). */
static void blitz__time_update_hint(blitz_runtime *rt) {
    uint64_t t = blitz__wheel_next_expiry(&rt->time->wheel);
    blitz__u64_store(&rt->time->next_expiry_ns,
                     t == UINT64_MAX ? UINT64_MAX : blitz__tick_start_ns(rt, t), BLITZ__SEQ_CST);
}

#define BLITZ__WHERE_FIRING (BLITZ__WHEEL_NOT_IN_WHEEL - 1)
/* Timers fired per hold of the lock (the model check makes it 1, so that
 * a cancel meets a timer still in the firing list). */
#ifndef BLITZ__WAKE_BATCH
#define BLITZ__WAKE_BATCH 64
#endif

static blitz_timer *blitz__timer_of(blitz__timer_entry *e) {
    return (blitz_timer *)(void *)((char *)e - offsetof(blitz_timer, blitz__entry));
}

/* Moves every timer due at `now_ns` from the wheel to the firing list.
 * Caller holds the lock. Entries in the firing list are still ARMED (a
 * cancel unlinks them from there) until fired in batches. */
static void blitz__time_collect(blitz_runtime *rt, uint64_t now_ns) {
    blitz__time_driver *td = rt->time;
    blitz__timer_entry *due = NULL;
    blitz__wheel_advance(&td->wheel, blitz__tick_floor(rt, now_ns), &due);
    while (due) {
        blitz__timer_entry *next = due->next;
        due->where = BLITZ__WHERE_FIRING;
        due->prev = NULL;
        due->next = td->firing;
        if (td->firing)
            td->firing->prev = due;
        td->firing = due;
        due = next;
    }
    blitz__time_update_hint(rt);
}

/* Empties the firing list a batch at a time, each timer's waker taken
 * under the lock and used after unlocking it (a woken task may run, re-arm
 * and take the lock at once; a dropped waker may free the task and its
 * timer). `fire`: mark FIRED and wake; else (shutdown) mark IDLE and drop.
 * Called and returns with the lock held. Returns how many. */
static size_t blitz__time_fire(blitz_runtime *rt, int fire) {
    blitz__time_driver *td = rt->time;
    size_t fired = 0;
    while (td->firing) {
        blitz_waker batch[BLITZ__WAKE_BATCH];
        int n = 0;
        while (td->firing && n < BLITZ__WAKE_BATCH) {
            blitz__timer_entry *e = td->firing;
            td->firing = e->next;
            if (td->firing)
                td->firing->prev = NULL;
            e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
            blitz_timer *t = blitz__timer_of(e);
            batch[n++] = t->blitz__waker;
            t->blitz__waker = blitz_waker_noop();
            /* Release: the task that sees FIRED sees the timer out of every
             * list; from here its owner may reuse the memory. */
            blitz__u32_field_store(&t->blitz__state, fire ? BLITZ__TIMER_FIRED : BLITZ__TIMER_IDLE,
                                   BLITZ__RELEASE);
        }
        fired += (size_t)n;
        if (fire)
            BLITZ__STAT(blitz__u64_bump(&td->fired, (uint64_t)n));
        blitz__mutex_unlock(&td->lock);
        if (fire) {
            blitz__wake_batch_begin();
            for (int i = 0; i < n; i++)
                blitz_waker_wake(batch[i]);
            blitz__wake_batch_end();
        } else {
            for (int i = 0; i < n; i++)
                blitz_waker_drop(batch[i]);
        }
        blitz__mutex_lock(&td->lock);
    }
    return fired;
}

/* Fires due timers if the hint says some are due. `block`: wait for the
 * lock rather than try it. Returns 1 when it fired at least one. */
BLITZ_PRIVATE int blitz__time_process(blitz_runtime *rt, int block) {
    uint64_t hint = blitz__u64_load(&rt->time->next_expiry_ns, BLITZ__ACQUIRE);
    if (hint == UINT64_MAX)
        return 0;
    if (blitz__rt_now(rt) < hint)
        return 0;
    if (block)
        blitz__mutex_lock(&rt->time->lock);
    else if (!blitz__mutex_trylock(&rt->time->lock))
        return 0;
    blitz__time_collect(rt, blitz__rt_now(rt));
    size_t fired = blitz__time_fire(rt, 1);
    blitz__mutex_unlock(&rt->time->lock);
    return fired != 0;
}

/* Shutdown: disarms every timer and drops its waker, so the references the
 * timers hold on their (now cancelled) tasks go away. No task runs any more;
 * a later blitz_timer_cancel finds the timer idle. */
BLITZ_PRIVATE void blitz__time_shutdown(blitz_runtime *rt) {
    blitz__time_driver *td = rt->time;
    blitz__mutex_lock(&td->lock);
    /* Everything moves to the firing list, where a concurrent cancel can
     * still unlink it. */
    blitz__time_collect(rt, UINT64_MAX);
    blitz__time_fire(rt, 0);
    blitz__mutex_unlock(&td->lock);
}

/* Nanoseconds a parked thread should sleep for the next timer: 0 for "no
 * timer" (sleep until woken). */
BLITZ_PRIVATE uint64_t blitz__time_sleep_ns(blitz_runtime *rt) {
    uint64_t hint = blitz__u64_load(&rt->time->next_expiry_ns, BLITZ__SEQ_CST);
    if (hint == UINT64_MAX || rt->time->paused)
        return 0;
    uint64_t now = blitz__now_ns();
    return hint > now ? hint - now : 1;
}

/* Paused clock, every worker idle: jump to the next deadline and fire.
 * Returns 1 when it moved the clock. */
/* `idle` is checked under the lock, after any earlier jump has finished
 * waking its tasks (they are queued before `advancing` is cleared under the
 * lock), so a jump never overtakes the tasks the previous one woke. */
BLITZ_PRIVATE int blitz__time_auto_advance(blitz_runtime *rt, int (*idle)(blitz_runtime *rt)) {
    if (!rt->time->paused)
        return 0;
    blitz__mutex_lock(&rt->time->lock);
    if (rt->time->advancing || (idle && !idle(rt))) {
        blitz__mutex_unlock(&rt->time->lock);
        return 0;
    }
    uint64_t t = blitz__wheel_next_expiry(&rt->time->wheel);
    if (t != UINT64_MAX) {
        uint64_t target = blitz__tick_start_ns(rt, t);
        if (target > blitz__u64_load(&rt->time->virtual_ns, BLITZ__RELAXED))
            blitz__u64_store(&rt->time->virtual_ns, target, BLITZ__RELEASE);
        rt->time->advancing = 1;
        blitz__time_collect(rt, blitz__u64_load(&rt->time->virtual_ns, BLITZ__RELAXED));
        blitz__time_fire(rt, 1);
        rt->time->advancing = 0;
    }
    blitz__mutex_unlock(&rt->time->lock);
    return t != UINT64_MAX;
}

/* Someone must notice a timer that is now the earliest: the sleeping
 * driver re-plans, or a parked worker wakes up to become it. */
static void blitz__time_kick(blitz_runtime *rt) {
    if (rt->flavor == BLITZ_CURRENT_THREAD) {
        blitz__parker_unpark(rt->ct_parker);
        return;
    }
    blitz__sched_kick_timers(rt, blitz__u32_load(&rt->time->sleeper, BLITZ__SEQ_CST));
}

/* ---- the public timer ------------------------------------------------------- */

static blitz_runtime *blitz__cx_rt(blitz_cx *cx) {
    return cx->ctx->rt;
}

/* Arms `t` for `deadline_ns` with the task's waker. */
static void blitz__timer_arm(blitz_runtime *rt, blitz_timer *t, uint64_t deadline_ns,
                             const blitz_waker *w) {
    t->deadline = deadline_ns;
    t->blitz__rt = rt;
    t->blitz__entry.where = BLITZ__WHEEL_NOT_IN_WHEEL;
    t->blitz__entry.deadline = blitz__tick_ceil(rt, deadline_ns);
    /* Outside the lock: the clone is an atomic increment on the task. */
    blitz_waker mine = blitz_waker_clone(w);
    uint64_t due_ns = blitz__tick_start_ns(rt, t->blitz__entry.deadline);
    blitz__mutex_lock(&rt->time->lock);
    BLITZ__STAT(blitz__u64_bump(&rt->time->armed, 1));
    t->blitz__waker = mine;
    blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_ARMED, BLITZ__RELAXED);
    blitz__wheel_insert(&rt->time->wheel, &t->blitz__entry);
    /* Inserting can only move the earliest expiry earlier. Seq_cst pairs
     * with a parking worker's seq_cst read of the hint (worker.c). */
    int earlier = due_ns < blitz__u64_load(&rt->time->next_expiry_ns, BLITZ__RELAXED);
    if (earlier)
        blitz__u64_store(&rt->time->next_expiry_ns, due_ns, BLITZ__SEQ_CST);
    blitz__mutex_unlock(&rt->time->lock);
    if (earlier)
        blitz__time_kick(rt);
}

BLITZ_API blitz_poll blitz_sleep_until(blitz_cx *cx, blitz_timer *t, uint64_t deadline_ns) {
    if (!cx || !t)
        return BLITZ_READY;
    uint32_t s = blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE);
    if (s == BLITZ__TIMER_FIRED) {
        blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_IDLE, BLITZ__RELAXED);
        return BLITZ_READY;
    }
    blitz_runtime *rt = blitz__cx_rt(cx);
    /* A timer needs a runtime's wheel: blitz_op_run_blocking without a runtime
     * cannot sleep. */
    BLITZ_ASSERT(rt && "a timer polled outside any runtime");
    if (!rt)
        return BLITZ_READY;
    blitz_waker mine = blitz_cx_waker(cx);
    if (s == BLITZ__TIMER_IDLE) {
        if (deadline_ns <= blitz__rt_now(rt))
            return BLITZ_READY;
        blitz__timer_arm(rt, t, deadline_ns, &mine);
        return blitz__pending(cx, blitz_timer_cancel, t);
    }
    /* Armed: polled again (a spurious wake, or another op of the task).
     * Keep the registered waker if it still wakes this task; the driver
     * takes it under the lock, so look at it under the lock too. */
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&rt->time->lock);
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__RELAXED) == BLITZ__TIMER_ARMED &&
        !blitz_waker_will_wake(&t->blitz__waker, &mine)) {
        old = t->blitz__waker;
        t->blitz__waker = blitz_waker_clone(&mine);
    }
    blitz__mutex_unlock(&rt->time->lock);
    blitz_waker_drop(old);
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE) == BLITZ__TIMER_FIRED) {
        blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_IDLE, BLITZ__RELAXED);
        return BLITZ_READY;
    }
    return blitz__pending(cx, blitz_timer_cancel, t);
}

BLITZ_API blitz_poll blitz_sleep(blitz_cx *cx, blitz_timer *t, int64_t ns) {
    if (!cx || !t)
        return BLITZ_READY;
    /* Only the first poll computes the deadline; later polls keep it. */
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE) != BLITZ__TIMER_IDLE)
        return blitz_sleep_until(cx, t, t->deadline);
    return blitz_sleep_until(cx, t, blitz_deadline_after(blitz_cx_now(cx), ns));
}

BLITZ_API void blitz_timer_cancel(blitz_cx *cx, void *timer) {
    blitz_timer *t = (blitz_timer *)timer;
    (void)cx;
    if (!t)
        return;
    uint32_t s = blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE);
    if (s == BLITZ__TIMER_IDLE)
        return;
    blitz_runtime *rt = t->blitz__rt;
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&rt->time->lock);
    if (blitz__u32_field_load(&t->blitz__state, BLITZ__RELAXED) == BLITZ__TIMER_ARMED) {
        blitz__timer_entry *e = &t->blitz__entry;
        if (e->where == BLITZ__WHERE_FIRING) {
            if (e->prev)
                e->prev->next = e->next;
            else
                rt->time->firing = e->next;
            if (e->next)
                e->next->prev = e->prev;
            e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
        } else {
            blitz__wheel_remove(&rt->time->wheel, e);
        }
        old = t->blitz__waker;
        t->blitz__waker = blitz_waker_noop();
    }
    blitz__u32_field_store(&t->blitz__state, BLITZ__TIMER_IDLE, BLITZ__RELAXED);
    blitz__mutex_unlock(&rt->time->lock);
    blitz_waker_drop(old);
}

BLITZ_PRIVATE void blitz__deadline_arm(blitz_runtime *rt, blitz_timer *timer, int64_t timeout_ns,
                                       const blitz_waker *w) {
    blitz__timer_arm(rt, timer, blitz_deadline_after(blitz__rt_now(rt), timeout_ns), w);
}
BLITZ_PRIVATE void blitz__deadline_disarm(blitz_timer *timer) {
    blitz_timer_cancel(NULL, timer);
}

BLITZ_API int blitz_timer_armed(const blitz_timer *t) {
    return t && blitz__u32_field_load(&t->blitz__state, BLITZ__ACQUIRE) == BLITZ__TIMER_ARMED;
}

/* Withdraws a timeout: its timer and the op it waited on. */
static void blitz__timeout_withdraw(blitz_cx *cx, void *timer) {
    blitz_timer *t = (blitz_timer *)timer;
    blitz_cancel_fn inner = t->blitz__inner_cancel;
    t->blitz__inner_cancel = NULL;
    blitz_timer_cancel(cx, t);
    if (inner)
        inner(cx, t->blitz__inner_op);
}

static blitz_poll blitz__timeout(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner,
                                 blitz_cancel_fn cancel, void *op) {
    if (!cx || !t)
        return BLITZ_READY;
    t->blitz__inner_cancel = NULL;
    if (inner == BLITZ_READY) {
        blitz_timer_cancel(NULL, t);
        t->expired = 0;
        return BLITZ_READY;
    }
    if (blitz_sleep(cx, t, ns) == BLITZ_READY) {
        t->expired = 1;
        blitz_cx_pending(cx, NULL, NULL);
        if (cancel)
            cancel(cx, op);
        return BLITZ_READY;
    }
    t->blitz__inner_cancel = cancel;
    t->blitz__inner_op = op;
    blitz_cx_pending(cx, blitz__timeout_withdraw, t);
    return BLITZ_PENDING;
}

BLITZ_API blitz_poll blitz_timeout(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner) {
    /* `inner` was polled just before this call: if it is pending, the op
     * recorded itself then. */
    blitz_cancel_fn cancel = NULL;
    void *op = NULL;
    if (inner == BLITZ_PENDING)
        blitz__cx_pending_get(cx, &cancel, &op);
    return blitz__timeout(cx, t, ns, inner, cancel, op);
}

BLITZ_API blitz_poll blitz_timeout_op(blitz_cx *cx, blitz_timer *t, int64_t ns, blitz_poll inner,
                                      blitz_cancel_fn cancel, void *op) {
    return blitz__timeout(cx, t, ns, inner, cancel, op);
}

/* ---- clock and deadlines ------------------------------------------------------ */

BLITZ_API uint64_t blitz_time_now(const blitz_runtime *rt) {
    return rt ? blitz__rt_now(rt) : blitz__now_ns();
}

BLITZ_API uint64_t blitz_cx_now(blitz_cx *cx) {
    return cx && blitz__cx_rt(cx) ? blitz__rt_now(blitz__cx_rt(cx)) : blitz__now_ns();
}

BLITZ_API uint64_t blitz_deadline_after(uint64_t now_ns, int64_t ns) {
    if (ns <= 0)
        return now_ns;
    uint64_t d = (uint64_t)ns;
    return now_ns > UINT64_MAX - d ? BLITZ_TIME_NEVER : now_ns + d;
}

BLITZ_API int blitz_time_advance(blitz_runtime *rt, int64_t ns) {
    if (!rt || ns < 0)
        return BLITZ_EINVAL;
    if (!rt->time->paused)
        return BLITZ_EINVAL;
    blitz__mutex_lock(&rt->time->lock);
    uint64_t now = blitz__u64_load(&rt->time->virtual_ns, BLITZ__RELAXED);
    now = blitz_deadline_after(now, ns);
    blitz__u64_store(&rt->time->virtual_ns, now, BLITZ__RELEASE);
    blitz__time_collect(rt, now);
    blitz__time_fire(rt, 1);
    blitz__mutex_unlock(&rt->time->lock);
    return BLITZ_OK;
}

/* ---- intervals ------------------------------------------------------------------ */

/* Lateness below which an interval's tick counts as on time (Tokio's
 * bound too). */
#define BLITZ__INTERVAL_ON_TIME_NS (5 * BLITZ_MSEC)

BLITZ_API int blitz_interval_init(blitz_interval *iv, uint64_t start_ns, int64_t period_ns,
                                  blitz_missed_tick missed) {
    if (!iv || period_ns <= 0 ||
        (missed != BLITZ_MISSED_BURST && missed != BLITZ_MISSED_DELAY &&
         missed != BLITZ_MISSED_SKIP))
        return BLITZ_EINVAL;
    memset(iv, 0, sizeof *iv);
    iv->period = (uint64_t)period_ns;
    iv->next = start_ns;
    iv->missed = missed;
    return BLITZ_OK;
}

BLITZ_API blitz_poll blitz_interval_tick(blitz_cx *cx, blitz_interval *iv) {
    if (!cx || !iv || iv->period == 0)
        return BLITZ_READY;
    if (blitz_sleep_until(cx, &iv->timer, iv->next) == BLITZ_PENDING)
        return BLITZ_PENDING;
    uint64_t now = blitz_cx_now(cx), due = iv->next;
    iv->last_tick = due;
    switch (iv->missed) {
    case BLITZ_MISSED_BURST:
        /* Catch up: the missed ticks come back to back. */
        iv->next = blitz_deadline_after(due, (int64_t)iv->period);
        break;
    case BLITZ_MISSED_DELAY:
        /* The schedule restarts one period after this tick when it is
         * late; a timer fires on the wheel's next millisecond, so a tick a
         * little late is on time (else every tick would be late and the
         * period would stretch by the wheel's delay each time). */
        iv->next = blitz_deadline_after(
            now > due && now - due >= BLITZ__INTERVAL_ON_TIME_NS ? now : due, (int64_t)iv->period);
        break;
    case BLITZ_MISSED_SKIP: {
        /* The next tick on the original grid that is after now. */
        uint64_t next = blitz_deadline_after(due, (int64_t)iv->period);
        if (next <= now && next != BLITZ_TIME_NEVER) {
            uint64_t behind = (now - next) / iv->period + 1;
            next = behind > (BLITZ_TIME_NEVER - next) / iv->period ? BLITZ_TIME_NEVER
                                                                   : next + behind * iv->period;
        }
        iv->next = next;
        break;
    }
    }
    return BLITZ_READY;
}
