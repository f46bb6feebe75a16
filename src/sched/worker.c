/* The multi-thread scheduler's workers (seeds 000 and 001).
 *
 * Each worker owns a LIFO slot, a local ring (local_queue.c), a 32-slot
 * buffer of tasks fetched from the global queue, a parker and a PRNG.
 * Finding work, in order:
 *   0. every `global_interval` polls, the global queue first (fairness for
 *      remote spawns and wakes; the interval adapts to the poll time)
 *   1. the global batch buffer
 *   2. the LIFO slot, at most BLITZ_MAX_LIFO_POLLS_PER_TICK times a tick;
 *      after that its task is flushed to the back of the ring
 *   3. the local ring
 *   4. a batch from the global queue
 *   5. as a searcher (at most half the workers): steal half of a random
 *      victim's ring, then the global queue once more
 *   6. spin briefly, then park (lifo.c and idle.c have the protocol)
 * A tick is up to BLITZ_BUDGET_PER_TICK polls; after each the EWMA of the
 * poll time sets the next global-queue interval.
 *
 * Chaos scheduling (BLITZ__CHAOS, a BLITZ_FAULT_INJECT build) turns the
 * LIFO slot off, sends some local wakes through the global queue (a
 * delayed wake, maybe on another worker), steals before looking locally
 * and yields the thread before some polls: orders the fast paths hide. */
#include "sched.h"

/* Pauses between two looks at the queues while spinning before a park:
 * looking reads other workers' ring indices, which they write on every push
 * and pop, so looking too often slows them down. */
#ifndef BLITZ__SPIN_PAUSES
#define BLITZ__SPIN_PAUSES 32
#endif

static inline uint64_t blitz__rng_next(uint64_t s[2]) {
    /* xorshift64+ */
    uint64_t s1 = s[0];
    const uint64_t s0 = s[1];
    s[0] = s0;
    s1 ^= s1 << 23;
    s[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return s[1] + s0;
}

BLITZ_PRIVATE void blitz__worker_init(blitz__worker *w, blitz_runtime *rt, uint32_t index) {
    memset(w, 0, sizeof *w);
    blitz__local_queue_init(&w->queue);
    blitz__parker_init(&w->parker);
    w->rt = rt;
    w->index = index;
    w->avg_poll_ns = BLITZ__INITIAL_AVG_POLL_NS;
    w->global_interval = rt->fixed_interval
                             ? rt->fixed_interval
                             : BLITZ__INTERVAL_TARGET_NS / BLITZ__INITIAL_AVG_POLL_NS;
    blitz__u32_store(&w->interval_shared, w->global_interval, BLITZ__RELAXED);
    uint64_t seed = (uint64_t)(uintptr_t)w ^ ((uint64_t)index * 0x9E3779B97F4A7C15u);
    w->rng[0] = seed | 1;
    w->rng[1] = (seed * 0xBF58476D1CE4E5B9u) | 2;
}

/* ---- scheduling onto a worker ------------------------------------------------ */

/* A task woken or spawned on worker `w` itself: the LIFO slot
 * (lifo.c), unless wakes are being batched. */
static void blitz__worker_schedule_local(blitz__worker *w, blitz__task *t) {
    if (w->wake_batching) {
        /* Many wakes at once (timers firing): collected, then spread in one
         * go by blitz__wake_batch_end instead of churning the LIFO slot. */
        blitz__list_append(&w->wake_head, &w->wake_tail, t);
        w->wake_count++;
        return;
    }
    blitz__lifo_schedule(w, t);
}

/* Wakes issued between begin and end on a worker thread are collected and
 * then queued together: as many as fit into the ring, the rest to the
 * global queue as one batch, and parked workers are told. Other threads
 * schedule as usual. */
BLITZ_PRIVATE void blitz__wake_batch_begin(void) {
    blitz__context *ctx = blitz__context_get();
    if (ctx && ctx->worker)
        ctx->worker->wake_batching = 1;
}

BLITZ_PRIVATE void blitz__wake_batch_end(void) {
    blitz__context *ctx = blitz__context_get();
    if (!ctx || !ctx->worker || !ctx->worker->wake_batching)
        return;
    blitz__worker *w = ctx->worker;
    w->wake_batching = 0;
    blitz__task *t = w->wake_head;
    uint64_t n = w->wake_count, woken = n;
    w->wake_head = w->wake_tail = NULL;
    w->wake_count = 0;
    if (!t)
        return;
    while (t) {
        blitz__task *next = t->next;
        if (!blitz__local_queue_try_push(&w->queue, t))
            break;
        t = next;
        n--;
    }
    if (t) {
        blitz__task *last = t;
        while (last->next)
            last = last->next;
        (void)blitz__global_queue_push_batch(w->rt->global, t, last, n);
    }
    /* This worker runs the first task itself: wake another only when there
     * is more (a futex wake costs tens of microseconds here). */
    if (woken > 1)
        blitz__idle_notify_parked(w->rt);
}

/* A woken pinned task: its thread polls it. Out of line, so that the
 * common wake keeps few registers. */
static BLITZ__NOINLINE void blitz__task_schedule_pinned(blitz_runtime *rt) {
    /* Counted runnable until its thread starts polling it (the paused
     * clock must not jump meanwhile). */
    blitz__u32_fetch_add(&rt->pinned_runnable, 1, BLITZ__SEQ_CST);
    blitz__wake_thread_joiners(rt);
    /* Its thread may wait in the file ring instead (blitz__block_on). */
    blitz__io_poke_files(rt);
}

BLITZ_PRIVATE void blitz__task_schedule(blitz__task *t) {
    blitz_runtime *rt = blitz__task_runtime(t);
    /* Relaxed: PINNED never changes after spawn. */
    if (BLITZ__UNLIKELY(blitz__u64_load(&t->state, BLITZ__RELAXED) & BLITZ__TASK_PINNED)) {
        blitz__task_schedule_pinned(rt);
        return;
    }
    blitz__context *ctx = blitz__context_get();
    if (rt->flavor == BLITZ_CURRENT_THREAD) {
        if (ctx && ctx->rt == rt && ctx->ct_driver)
            blitz__ct_push(rt, t);
        else
            blitz__ct_inject(rt, t);
        return;
    }
    if (ctx && ctx->rt == rt && ctx->worker)
        blitz__worker_schedule_local(ctx->worker, t);
    else
        blitz__idle_schedule_remote(rt, t);
}

/* Yielded tasks of this tick join the back of the ring, as far as it has
 * room; the rest stay deferred (private to this worker) rather than
 * overflow to the global queue: a task that only yields has no reason to
 * change cores, and moving it costs cache misses on every poll. */
static void blitz__worker_flush_deferred(blitz__worker *w) {
    blitz__task *t = w->deferred_head;
    while (t) {
        /* Read the link first: once in the ring the task may be stolen. */
        blitz__task *next = t->next;
        if (!blitz__local_queue_try_push(&w->queue, t))
            break;
        t = next;
    }
    w->deferred_head = t;
    if (!t)
        w->deferred_tail = NULL;
    blitz__idle_notify_parked(w->rt);
}

/* After NOTIFIED: behind everything already runnable here. After a yield:
 * deferred to the end of the tick. Inlined into the task harnesses, its
 * one caller. */
static BLITZ__ALWAYS_INLINE void blitz__task_reschedule(blitz__task *t, blitz__context *ctx,
                                                        int yielded) {
    blitz_runtime *rt = ctx->rt;
    if (rt != blitz__task_runtime(t) ||
        (blitz__u64_load(&t->state, BLITZ__RELAXED) & BLITZ__TASK_PINNED)) {
        blitz__task_schedule(t);
    } else if (ctx->worker) {
        if (yielded) {
            blitz__list_append(&ctx->worker->deferred_head, &ctx->worker->deferred_tail, t);
        } else {
            blitz__local_queue_push(&ctx->worker->queue, t, rt, &ctx->worker->counters);
            blitz__idle_notify_parked(rt);
        }
    } else if (ctx->ct_driver) {
        if (yielded)
            blitz__list_append(&rt->ct->deferred_head, &rt->ct->deferred_tail, t);
        else
            blitz__ct_push(rt, t);
    } else if (rt->flavor == BLITZ_CURRENT_THREAD) {
        blitz__ct_inject(rt, t);
    } else {
        blitz__idle_schedule_remote(rt, t);
    }
}

/* ---- finding work ---------------------------------------------------------------- */

/* Moves a batch from the global queue: the first task is returned, up to 32
 * more go to the batch buffer, the rest to the ring. */
static blitz__task *blitz__worker_fetch_global(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    uint64_t len = blitz__global_queue_len(rt->global);
    if (len == 0)
        return NULL;
    uint64_t want = len / rt->num_workers;
    if (want < BLITZ__GLOBAL_BATCH_MIN)
        want = BLITZ__GLOBAL_BATCH_MIN;
    if (want > BLITZ__GLOBAL_BATCH_MAX)
        want = BLITZ__GLOBAL_BATCH_MAX;
    /* No more than fits in the batch buffer and the ring: a batch that
     * overflowed the ring would go straight back to the global queue. */
    uint64_t room = 1 + (w->batch_head == w->batch_len ? BLITZ__BATCH_BUFFER_SIZE : 0) +
                    (BLITZ_LOCAL_QUEUE_CAPACITY - blitz__local_queue_len(&w->queue));
    if (want > room)
        want = room;
    blitz__task *got[BLITZ__GLOBAL_BATCH_MAX];
    uint32_t n = blitz__global_queue_pop_batch(rt->global, got, (uint32_t)want);
    if (n == 0)
        return NULL;
    BLITZ__STAT(blitz__u64_bump(&w->counters.batch_fetches, 1));
    uint32_t i = 1;
    if (w->batch_head == w->batch_len) {
        w->batch_head = w->batch_len = 0;
        while (i < n && w->batch_len < BLITZ__BATCH_BUFFER_SIZE)
            w->batch[w->batch_len++] = got[i++];
    }
    if (i < n) {
        for (; i < n; i++)
            blitz__local_queue_push(&w->queue, got[i], rt, &w->counters);
        blitz__idle_notify_parked(rt);
    }
    return got[0];
}

static blitz__task *blitz__worker_next_local(blitz__worker *w) {
    blitz__task *t = NULL;
    if (++w->tick % w->global_interval == 0)
        t = blitz__worker_fetch_global(w);
    if (!t && w->batch_head < w->batch_len)
        t = w->batch[w->batch_head++];
    if (!t && (t = blitz__lifo_take(w)) != NULL) {
        /* At most BLITZ_MAX_LIFO_POLLS_PER_TICK LIFO polls in a row: two
         * tasks that keep waking each other would otherwise hold the worker
         * forever. The slot keeps a woken task on this core, next to the
         * data its waker just wrote. */
        if (w->lifo_polls < BLITZ_MAX_LIFO_POLLS_PER_TICK) {
            w->lifo_polls++;
            BLITZ__STAT(blitz__u64_bump(&w->counters.lifo_hits, 1));
            return t;
        }
        /* Cap reached: the slot's task joins the FIFO order, visible to
         * stealers. */
        blitz__local_queue_push(&w->queue, t, w->rt, &w->counters);
        t = NULL;
    }
    if (!t)
        t = blitz__local_queue_pop(&w->queue);
    if (!t)
        t = blitz__worker_fetch_global(w);
    if (t)
        w->lifo_polls = 0;
    return t;
}

static blitz__task *blitz__worker_steal(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    uint32_t n = rt->num_workers;
    uint32_t start = (uint32_t)(blitz__rng_next(w->rng) % n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = (start + i) % n;
        if (v == w->index)
            continue;
        uint32_t stolen = 0;
        blitz__task *t = blitz__local_queue_steal_into(&rt->workers[v].queue, &w->queue, &stolen);
        if (t) {
            BLITZ__STAT(blitz__u64_bump(&w->counters.steals, 1));
            BLITZ__STAT(blitz__u64_bump(&w->counters.stolen, stolen));
            return t;
        }
    }
    return NULL;
}

/* Steps 5: steal as a searcher, then the global queue. */
static blitz__task *blitz__worker_search(blitz__worker *w) {
    if (!w->searching) {
        if (!blitz__idle_try_become_searcher(w->rt))
            return blitz__worker_fetch_global(w);
        w->searching = 1;
    }
    blitz__task *t = blitz__worker_steal(w);
    if (!t)
        t = blitz__worker_fetch_global(w);
    return t;
}

static blitz__task *blitz__worker_find(blitz__worker *w) {
    blitz__task *t = NULL;
    if (w->rt->num_workers > 1 && BLITZ__CHAOS(4))
        t = blitz__worker_steal(w);
    if (!t)
        t = blitz__worker_next_local(w);
    if (!t && w->deferred_head) {
        blitz__worker_flush_deferred(w);
        t = blitz__worker_next_local(w);
    }
    if (!t && w->rt->num_workers > 1)
        t = blitz__worker_search(w);
    if (t && w->searching) {
        w->searching = 0;
        /* The last searcher to find work wakes another worker for work
         * that worker could take (see blitz__idle_leave_searching). With
         * nothing visible the wake only pays off when the woken worker
         * spins before parking again, staying ready for the next task; a
         * runtime that serves sockets does not spin, and there the wake
         * cost a thread sleep and wake per steal (measured on the TCP echo
         * with io_uring: p99 2.2 ms with the unconditional wake, 0.6-0.9 ms
         * without). */
        if (blitz__idle_leave_searching(w->rt, blitz__io_spin_rounds(w->rt) != 0))
            blitz__idle_notify_parked(w->rt);
    }
    return t;
}

/* With a paused clock, the threads polling a task are counted, so the
 * clock never jumps while a poll might be about to arm a timer. */
static inline void blitz__paused_poll_begin(blitz_runtime *rt) {
    if (rt->time->paused)
        blitz__u32_fetch_add(&rt->paused_polling, 1, BLITZ__SEQ_CST);
}
static inline void blitz__paused_poll_end(blitz_runtime *rt) {
    if (rt->time->paused)
        blitz__u32_fetch_sub(&rt->paused_polling, 1, BLITZ__SEQ_CST);
}

static void blitz__worker_poll(blitz__worker *w, blitz__task *t, blitz__context *ctx) {
    if (BLITZ__CHAOS(16))
        blitz__yield();
    blitz__lifo_poll_begin(w);
    blitz__paused_poll_begin(w->rt);
    uint64_t ran = (uint64_t)blitz__task_run(t, ctx); /* 0: completed as cancelled */
    BLITZ__STAT(blitz__u64_bump(&w->counters.polled, ran));
    blitz__paused_poll_end(w->rt);
}

/* ---- parking ------------------------------------------------------------------------ */

/* A timer is due now (the hint has passed). */
static int blitz__time_due(blitz_runtime *rt) {
    uint64_t hint = blitz__u64_load(&rt->time->next_expiry_ns, BLITZ__SEQ_CST);
    return hint != UINT64_MAX && blitz__rt_now(rt) >= hint;
}

/* Paused clock: when this worker is the last to park and nothing else runs,
 * every task is idle, so jump to the next timer. Returns 1 when it did. */
/* Paused clock: every task is idle when every started worker is parked (the
 * caller's own bit may be set), no other thread polls a task, no pinned
 * main task is runnable, and nothing is queued. Seq_cst loads: each counter
 * is raised before its thread starts the work it counts. */
static int blitz__runtime_idle(blitz_runtime *rt) {
    uint64_t parked = blitz__u64_load(&rt->idle->parked_bitmap, BLITZ__SEQ_CST);
    return (uint32_t)blitz__popcount64(parked) >=
               blitz__u32_load(&rt->workers_started, BLITZ__RELAXED) &&
           !blitz__u32_load(&rt->external_running, BLITZ__SEQ_CST) &&
           !blitz__u32_load(&rt->pinned_runnable, BLITZ__SEQ_CST) &&
           !blitz__u32_load(&rt->paused_polling, BLITZ__SEQ_CST) &&
           !blitz__u32_load(&rt->spawning, BLITZ__SEQ_CST) && !blitz__idle_work_available(rt);
}

/* Jumps the paused clock to the next timer when the runtime is idle.
 * Returns 1 when it did. */
static int blitz__worker_auto_advance(blitz_runtime *rt) {
    if (!rt->time->paused || !blitz__runtime_idle(rt))
        return 0;
    return blitz__time_auto_advance(rt, blitz__runtime_idle);
}

/* Reasons other than work for a parking worker to stay up. */
static int blitz__worker_stay_up(blitz_runtime *rt) {
    return blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE) || blitz__time_due(rt) ||
           blitz__worker_auto_advance(rt);
}

/* Leaving the parked state after a sleep; for the I/O sleeper this runs
 * before the backend's events are dispatched, so the tasks they wake are
 * offered to the other parked workers rather than to this one. */
typedef struct {
    blitz__worker *w;
    int done;
    int sleeper;
    int again;            /* the watch goes on: sleep again, still parked */
    uint64_t watch_until; /* the watch's deadline, when only it limits the sleep */
    uint64_t watch_ns;    /* the next watch's limit, when `again` */
} blitz__worker_unpark_state;

/* A watcher that slept its whole limit and that nobody claimed stays in
 * the parked set while the backend dispatches what it got (lifo.c says
 * why it does not wake). */
static int blitz__worker_may_watch_on(blitz__worker_unpark_state *st) {
    blitz_runtime *rt = st->w->rt;
    return blitz__now_ns() >= st->watch_until && !blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE) &&
           blitz__idle_is_parked(rt, st->w->index) &&
           !(st->sleeper && blitz__time_sleep_ns(rt) == 1);
}

static void blitz__worker_leave_parked(blitz__worker_unpark_state *st) {
    blitz_runtime *rt = st->w->rt;
    if (st->sleeper)
        blitz__u32_store(&rt->time->sleeper, 0, BLITZ__SEQ_CST);
    if (!blitz__idle_unset_parked(rt, st->w->index))
        st->w->searching = 1; /* a notifier claimed us meanwhile */
}

static void blitz__worker_io_woke(void *arg) {
    blitz__worker_unpark_state *st = (blitz__worker_unpark_state *)arg;
    if (st->done)
        return;
    st->done = 1;
    if (st->watch_until && blitz__worker_may_watch_on(st))
        st->again = 1;
    else
        blitz__worker_leave_parked(st);
}

/* Sleeps a worker that blitz__lifo_begin_park published as parked. */
static void blitz__worker_sleep(blitz__worker *w, uint64_t trim_ns) {
    blitz_runtime *rt = w->rt;
    /* One parked worker sleeps until the next timer (the sleeper); the
     * others until woken. Timer arming reads `sleeper` after publishing
     * the new deadline (seq_cst both sides), and wakes the sleeper or, if
     * there is none, a parked worker: this one, whose bit is already set. */
    /* With an I/O driver the sleeper waits in the backend, with the timer
     * deadline as its timeout, so I/O reaches an idle runtime at once. */
    uint64_t timeout = rt->park_timeout_ns, timer_ns = blitz__time_sleep_ns(rt);
    uint32_t none = 0;
    int io = rt->io != NULL;
    int sleeper =
        (timer_ns || io) && blitz__u32_cas(&rt->time->sleeper, &none, w->index + 1, BLITZ__SEQ_CST);
    if (sleeper) {
        /* Re-read after becoming the sleeper: an earlier timer armed in
         * between saw no sleeper and woke a parked worker, maybe not us. */
        timer_ns = blitz__time_sleep_ns(rt);
        if (timer_ns && (timeout == 0 || timer_ns < timeout))
            timeout = timer_ns;
    }
    /* The rescue's watcher wakes on its own to look at the slots again. */
    uint64_t watch_ns = blitz__lifo_watch(w);
    if (watch_ns && (timeout == 0 || timeout > watch_ns))
        timeout = watch_ns;
    /* So does a worker whose memory trim waits for its delay. */
    if (trim_ns && (timeout == 0 || timeout > trim_ns))
        timeout = trim_ns;
    BLITZ__STAT(blitz__u64_bump(&w->counters.parked, 1));
    blitz__worker_unpark_state st = {w, 0, sleeper, 0, 0, 0};
    int watching = watch_ns && timeout == watch_ns && !trim_ns && !rt->park_timeout_ns;
    for (;;) {
        st.done = st.again = 0;
        st.watch_until = watching ? blitz__now_ns() + timeout : 0;
        /* A worker with its own io_uring ring parks in it, sleeper or
         * not: the completions of the ops it submitted come back to it. */
        if (io && (sleeper || blitz__io_parks_workers(rt))) {
            blitz__io_park(rt, &w->parker, timeout, blitz__worker_io_woke, &st);
        } else {
            /* Submissions must not wait for this worker. */
            blitz__io_flush(rt);
            if (!sleeper || timer_ns)
                blitz__parker_park(&w->parker, timeout);
        }
        blitz__worker_io_woke(&st);
        if (!st.again)
            break;
        /* The dispatch queued tasks here (this worker runs what it wakes),
         * or the noted worker is stuck: wake after all. */
        if (blitz__local_queue_len(&w->queue) || blitz__lifo_watch_again(w, &st.watch_ns)) {
            blitz__worker_leave_parked(&st);
            break;
        }
        timer_ns = sleeper ? blitz__time_sleep_ns(rt) : 0;
        timeout = st.watch_ns;
        if (timer_ns && (timeout == 0 || timer_ns < timeout))
            timeout = timer_ns;
        watching = st.watch_ns && timeout == st.watch_ns;
    }
}

/* Busy time is the time awake: the interval since the worker last woke
 * is added when it goes to sleep, after a full tick and when it stops. */
static void blitz__worker_add_busy(blitz__worker *w, uint64_t now) {
    if (now > w->awake_since)
        blitz__u64_bump(&w->counters.busy_ns, now - w->awake_since);
    w->awake_since = now;
}

/* The park hooks and busy time around a sleep (`parking`) and after it. */
static void blitz__worker_observe_park(blitz__worker *w, int parking) {
    blitz_runtime *rt = w->rt;
    if (parking) {
        if (rt->metrics)
            blitz__worker_add_busy(w, blitz__now_ns());
        if (rt->hooks.worker_park)
            rt->hooks.worker_park(rt->hooks.arg, w->index);
    } else {
        if (rt->hooks.worker_unpark)
            rt->hooks.worker_unpark(rt->hooks.arg, w->index);
        if (rt->metrics)
            w->awake_since = blitz__now_ns();
    }
}

/* Returns 1 when the worker slept in the kernel. */
static int blitz__worker_park(blitz__worker *w) {
    blitz_runtime *rt = w->rt;
    /* Yielded tasks are this worker's work, invisible to everyone else: a
     * worker must never sleep on them. */
    if (w->deferred_head) {
        blitz__worker_flush_deferred(w);
        return 0;
    }
    /* Spin first: a parked vCPU takes tens of microseconds to wake, far
     * longer than the gap between bursts of work in a busy program. With
     * this worker's file ops in flight on its ring, their batch is
     * submitted first and the spin yields instead of pausing: the
     * kernel's file worker may need this CPU (measured: 26 us per stat
     * from a worker with a plain spin on a loaded machine, 8-12 us now).
     * On a readiness backend's file ring it does not spin: the spin
     * cannot see their completions. */
    int files = blitz__io_files_mine(rt);
    uint32_t spin = files == 1 ? rt->spin_before_park : files ? 0 : blitz__io_spin_rounds(rt);
    if (files == 1)
        blitz__io_flush(rt);
    for (uint32_t i = 0; i < spin; i++) {
        if (blitz__u32_load(&rt->shutdown, BLITZ__RELAXED) || blitz__idle_work_available(rt) ||
            blitz__io_ready_cheap(rt))
            return 0;
        if (files)
            blitz__yield();
        else
            for (int k = 0; k < BLITZ__SPIN_PAUSES; k++)
                blitz__cpu_relax();
    }
    /* Idle: give memory back after a burst of tasks (or, in its delay,
     * wake up to do it). */
    uint64_t trim_ns = blitz__block_trim_idle(rt, &w->cache);
    /* From here on tasks scheduled from this thread go to the global queue
     * (lifo.c). */
    int slept = blitz__lifo_begin_park(w, blitz__worker_stay_up);
    if (slept) {
        if (BLITZ__UNLIKELY(rt->observe_workers))
            blitz__worker_observe_park(w, 1);
        blitz__worker_sleep(w, trim_ns);
        if (BLITZ__UNLIKELY(rt->observe_workers))
            blitz__worker_observe_park(w, 0);
        if (blitz__lifo_rescue(w)) {
            BLITZ__STAT(blitz__u64_bump(&w->counters.steals, 1));
            BLITZ__STAT(blitz__u64_bump(&w->counters.stolen, 1));
        }
    }
    blitz__lifo_end_park(w);
    return slept;
}

/* ---- the run loop ------------------------------------------------------------------- */

/* The adaptive global-queue interval. The clock is read only after a full
 * tick (BLITZ_BUDGET_PER_TICK polls) and after a sleep, so its cost is
 * spread over at least a tick's worth of polls; the average covers every
 * poll since the last reading. */
static void blitz__worker_update_interval(blitz__worker *w, uint64_t now) {
    uint64_t polls = w->stamp_polls, elapsed = now - w->stamp_ns;
    w->stamp_ns = now;
    w->stamp_polls = 0;
    if (w->rt->fixed_interval || polls == 0)
        return;
    uint64_t avg = elapsed / polls;
    /* EWMA with alpha = 0.1. */
    w->avg_poll_ns = (avg + 9 * w->avg_poll_ns) / 10;
    uint64_t interval = BLITZ__INTERVAL_TARGET_NS / (w->avg_poll_ns ? w->avg_poll_ns : 1);
    if (interval < BLITZ__INTERVAL_MIN)
        interval = BLITZ__INTERVAL_MIN;
    if (interval > BLITZ__INTERVAL_MAX)
        interval = BLITZ__INTERVAL_MAX;
    w->global_interval = (uint32_t)interval;
    blitz__u32_store(&w->interval_shared, (uint32_t)interval, BLITZ__RELAXED);
}

static void *blitz__worker_main(void *arg) {
    blitz__worker *w = (blitz__worker *)arg;
    blitz_runtime *rt = w->rt;
    blitz__context ctx;
    blitz__context_init(&ctx, rt);
    ctx.worker = w;
    ctx.cache = &w->cache;
    ctx.counters = &w->counters;
    ctx.worker_index = (int)w->index;
    blitz__context_set_stall(&ctx, rt->stall_slots ? &rt->stall_slots[w->index] : NULL);
    blitz__context_set(&ctx);
    /* Linux keeps 15 characters of a thread's name: "blitz-worker-63"
     * fits (the modulo only bounds the number for the compiler). */
    char name[24];
    snprintf(name, sizeof name, "blitz-worker-%u", (unsigned)(w->index % 100));
    blitz__thread_name(name);
    blitz__io_worker_start(rt, w->index);
    w->stamp_ns = blitz__now_ns();
    w->awake_since = w->stamp_ns;
    if (rt->hooks.worker_start)
        rt->hooks.worker_start(rt->hooks.arg, w->index);
    uint64_t polls_since_io = BLITZ__IO_EVENT_INTERVAL; /* look first */
    while (!blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE)) {
        uint32_t polls = 0;
        /* Any worker fires due timers (a try-lock: one is enough), so a
         * worker stuck in a long poll does not hold them back. */
        blitz__time_process(rt, 0);
        /* And reaps I/O completions the same way. */
        blitz__io_between_ticks(rt, &polls_since_io);
        ctx.clock_ns = blitz__now_ns();
        while (polls < BLITZ_BUDGET_PER_TICK) {
            blitz__task *t = blitz__worker_find(w);
            /* Shutdown: finish the poll in progress, start no other. A
             * task taken now stays SCHEDULED, and the shutdown's sweep
             * completes it. Checked after the find: a task that another
             * worker queued after seeing the flag is seen with it (the
             * queue's release and acquire), so relaxed suffices. */
            if (!t || blitz__u32_load(&rt->shutdown, BLITZ__RELAXED))
                break;
            blitz__worker_poll(w, t, &ctx);
            polls++;
        }
        w->lifo_polls = 0;
        if (w->deferred_head)
            blitz__worker_flush_deferred(w);
        w->stamp_polls += polls;
        polls_since_io += polls;
        if (polls == BLITZ_BUDGET_PER_TICK) {
            uint64_t now = blitz__now_ns();
            blitz__worker_update_interval(w, now);
            if (rt->metrics)
                blitz__worker_add_busy(w, now);
        } else if (polls == 0) {
            if (blitz__worker_park(w)) {
                /* Time asleep is not poll time. */
                w->stamp_ns = blitz__now_ns();
                w->stamp_polls = 0;
                /* The backend was waited in, or another worker waits
                 * in it. */
                polls_since_io = 0;
            } else {
                polls_since_io = BLITZ__IO_EVENT_INTERVAL;
            }
        }
    }
    if (w->searching) {
        w->searching = 0;
        blitz__idle_transition_from_searching(rt);
    }
    if (rt->metrics)
        blitz__worker_add_busy(w, blitz__now_ns());
    if (rt->hooks.worker_stop)
        rt->hooks.worker_stop(rt->hooks.arg, w->index);
    blitz__context_set(NULL);
    return NULL;
}

/* Starts the worker threads on first use (seed 002 "lazy start"). Returns
 * an error only when not a single thread could be started. */
BLITZ_PRIVATE int blitz__workers_start(blitz_runtime *rt) {
    if (blitz__u32_load(&rt->started, BLITZ__ACQUIRE))
        return BLITZ_OK;
    int rc = BLITZ_OK;
    blitz__mutex_lock(&rt->start_lock);
    /* Threads started after shutdown joined the workers would never be
     * joined. */
    if (rt->shutdown_done)
        rc = BLITZ_ESHUTDOWN;
    else if (!blitz__u32_load(&rt->started, BLITZ__RELAXED)) {
        uint32_t ok = 0;
        for (uint32_t i = 0; i < rt->num_workers; i++) {
            blitz__worker *w = &rt->workers[i];
            int e = blitz__thread_start(&w->thread, blitz__worker_main, w);
            if (e == 0) {
                w->started = 1;
                ok++;
            } else {
                rc = e;
            }
        }
        blitz__u32_store(&rt->workers_started, ok, BLITZ__RELAXED);
        if (ok)
            rc = BLITZ_OK;
        /* Release: a caller that sees `started` sees the threads' handles. */
        if (ok)
            blitz__u32_store(&rt->started, 1, BLITZ__RELEASE);
    }
    blitz__mutex_unlock(&rt->start_lock);
    return rc;
}

BLITZ_PRIVATE int blitz__task_spawn_schedule(blitz_runtime *rt, blitz__task *t) {
    blitz__context *ctx = blitz__context_get();
    if (rt->flavor == BLITZ_CURRENT_THREAD) {
        if (ctx && ctx->rt == rt && ctx->ct_driver) {
            blitz__ct_push(rt, t);
            return BLITZ_OK;
        }
        return blitz__ct_inject(rt, t);
    }
    if (ctx && ctx->rt == rt && ctx->worker) {
        /* spawnFromWorker: the LIFO slot, so a join right after finds it. */
        blitz__worker_schedule_local(ctx->worker, t);
        return BLITZ_OK;
    }
    int rc = blitz__workers_start(rt);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz__global_queue_push(rt->global, t);
    if (rc == BLITZ_OK)
        blitz__idle_notify_parked(rt);
    return rc;
}

/* ---- joins that keep the thread busy (seed 001 "Work-stealing join") ---- */

#define BLITZ__HELP_WAIT_MIN_NS 50000u

/* helpUntilComplete: a worker waiting for `t` runs other work meanwhile. */
BLITZ_PRIVATE void blitz__worker_help_until(blitz__context *ctx, blitz__task *t) {
    blitz__worker *w = ctx->worker;
    blitz_runtime *rt = ctx->rt;
    uint64_t wait_ns = BLITZ__HELP_WAIT_MIN_NS;
    while (!blitz__task_is_complete(t)) {
        /* Shutdown waits for this worker's poll to end: give up (the task
         * is completed as cancelled by the sweep). */
        if (blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            return;
        blitz__task *next = blitz__worker_find(w);
        if (next) {
            blitz__worker_poll(w, next, ctx);
            wait_ns = BLITZ__HELP_WAIT_MIN_NS;
            continue;
        }
        /* Nothing to run: sleep until `t` completes, looking again now and
         * then because this worker is not in the parked set. */
        blitz__io_flush(rt);
        blitz__io_poll(rt);
        if (blitz__wait_completion(rt, t, wait_ns))
            break;
        if (wait_ns < BLITZ__HELP_WAIT_MAX_NS)
            wait_ns *= 2;
    }
}

#define BLITZ__HELP_BATCH 8

/* Runs a few tasks of the global queue on a thread that is not a worker
 * (blockOnComplete), but only when the workers are not keeping up: the
 * queue is no shorter than when this thread last looked (`*seen`). When
 * they keep up, this thread stays out of their way: on a machine with as
 * many workers as cores it would only take CPU time from them. Returns 1
 * when it ran a task. */
static int blitz__external_help(blitz_runtime *rt, blitz__context *hctx, uint64_t *seen) {
    uint64_t len = blitz__global_queue_len(rt->global);
    uint64_t before = *seen;
    *seen = len;
    if (len == 0 || len < before || blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE) ||
        blitz__io_serving(rt))
        return 0;
    /* Announce before checking shutdown again (seq_cst both ways): shutdown
     * sets its flag, then waits for external_running == 0 before it sweeps
     * the tasks. */
    blitz__u32_fetch_add(&rt->external_running, 1, BLITZ__SEQ_CST);
    blitz__task *batch[BLITZ__HELP_BATCH];
    uint32_t n = 0;
    if (!blitz__u32_load(&rt->shutdown, BLITZ__SEQ_CST))
        n = blitz__global_queue_pop_batch(rt->global, batch, BLITZ__HELP_BATCH);
    if (n) {
        blitz__io_files_unmute(rt);
        blitz__context *outer = blitz__context_set(hctx);
        uint64_t polled = 0;
        /* Tasks left unrun at shutdown stay SCHEDULED; the sweep takes
         * them. */
        for (uint32_t i = 0; i < n && !blitz__u32_load(&rt->shutdown, BLITZ__RELAXED); i++)
            polled += (uint64_t)blitz__task_run(batch[i], hctx);
        blitz__context_set(outer);
        BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.polled, polled, BLITZ__RELAXED));
    }
    blitz__u32_fetch_sub(&rt->external_running, 1, BLITZ__RELEASE);
    *seen = blitz__global_queue_len(rt->global);
    return n != 0;
}

/* blockOnComplete: a thread that is not a worker runs tasks from the global
 * queue while it waits, so progress does not depend on a free worker.
 * `nested`: the thread is inside a poll of one of rt's tasks, which a
 * shutdown waits for, so it gives up then. */
BLITZ_PRIVATE void blitz__external_help_until(blitz_runtime *rt, blitz__task *t, int nested) {
    blitz__context hctx;
    blitz__context_init(&hctx, rt);
    uint64_t wait_ns = BLITZ__HELP_WAIT_MIN_NS, seen = UINT64_MAX;
    while (!blitz__task_is_complete(t)) {
        if (nested && blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            return;
        if (blitz__external_help(rt, &hctx, &seen)) {
            wait_ns = BLITZ__HELP_WAIT_MIN_NS;
            continue;
        }
        if (!nested && blitz__worker_auto_advance(rt))
            continue;
        if (blitz__wait_completion(rt, t, wait_ns))
            break;
        if (wait_ns < BLITZ__HELP_WAIT_MAX_NS)
            wait_ns *= 2;
    }
}

/* Spins (spin_before_park rounds) until `t` is runnable or complete.
 * Returns 1 if it became so. Only while a worker is parked: with every
 * worker awake the spin competes with them for CPUs (those of a shared
 * machine too), and the wake this thread waits for is theirs to give. */
static int blitz__spin_until_runnable(blitz_runtime *rt, blitz__task *t) {
    for (uint32_t i = 0; i < rt->spin_before_park; i++) {
        uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
        if (blitz__lifecycle(s) != BLITZ__LC_IDLE || blitz__u32_load(&rt->shutdown, BLITZ__RELAXED))
            return 1;
        if (!blitz__u64_load(&rt->idle->parked_bitmap, BLITZ__RELAXED))
            return 0;
        for (int k = 0; k < BLITZ__SPIN_PAUSES; k++)
            blitz__cpu_relax();
    }
    return 0;
}

/* block_on: the calling thread polls the PINNED task `t` itself whenever it
 * is woken, and runs global-queue tasks in between. */
BLITZ_PRIVATE void blitz__block_on(blitz_runtime *rt, blitz__task *t) {
    blitz__context hctx;
    blitz__context_init(&hctx, rt);
    uint64_t wait_ns = BLITZ__HELP_WAIT_MIN_NS, seen = UINT64_MAX;
    for (;;) {
        uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
        if (blitz__state_is_complete(s)) {
            blitz__io_files_unmute(rt);
            return;
        }
        if (blitz__lifecycle(s) == BLITZ__LC_SCHEDULED) {
            blitz__u32_fetch_add(&rt->external_running, 1, BLITZ__SEQ_CST);
            if (!blitz__u32_load(&rt->shutdown, BLITZ__SEQ_CST)) {
                blitz__u32_fetch_sub(&rt->pinned_runnable, 1, BLITZ__SEQ_CST);
                blitz__context *outer = blitz__context_set(&hctx);
                hctx.clock_ns = blitz__now_ns();
                hctx.files_reaper = 1;
                int polled = blitz__task_run(t, &hctx);
                hctx.files_reaper = 0;
                blitz__context_set(outer);
                BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.polled, (uint64_t)polled,
                                                 BLITZ__RELAXED));
            }
            blitz__u32_fetch_sub(&rt->external_running, 1, BLITZ__RELEASE);
            wait_ns = BLITZ__HELP_WAIT_MIN_NS;
            if (!blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
                continue;
        }
        if (blitz__external_help(rt, &hctx, &seen)) {
            wait_ns = BLITZ__HELP_WAIT_MIN_NS;
            continue;
        }
        /* Spin a little first, as workers do before parking: the wake often
         * comes within microseconds, and sleeping would add a kernel wake-up
         * on both sides. Not for a file op on the ring: the kernel's worker
         * doing it may be queued behind the spin on this CPU; the ring wait
         * yields instead (blitz__io_wait_files). */
        if (wait_ns == BLITZ__HELP_WAIT_MIN_NS && !blitz__io_files_pending(rt) &&
            blitz__spin_until_runnable(rt, t))
            continue;
        /* Sleep until a wake (PINNED: it bumps the completion word), the
         * completion, or the timeout. The word is read before the re-check. */
        uint32_t seq = blitz__u32_load(&rt->completion_seq, BLITZ__ACQUIRE);
        s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
        if (blitz__lifecycle(s) == BLITZ__LC_SCHEDULED &&
            !blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
            continue;
        if (!blitz__task_set_thread_joiner(t)) {
            blitz__io_files_unmute(rt);
            return;
        }
        /* Paused clock with every worker asleep: this thread is the last
         * one awake, so it moves the clock. */
        if (blitz__worker_auto_advance(rt))
            continue;
        if (!blitz__io_wait_files(rt, &rt->completion_seq, seq, wait_ns)) {
            blitz__io_files_unmute(rt);
            blitz__sleep_on_completion(rt, seq, wait_ns);
        }
        if (wait_ns < BLITZ__HELP_WAIT_MAX_NS)
            wait_ns *= 2;
    }
}

BLITZ_PRIVATE void blitz__sched_kick_timers(blitz_runtime *rt, uint32_t sleeper) {
    if (sleeper)
        blitz__parker_unpark(&rt->workers[sleeper - 1].parker);
    else
        blitz__idle_notify_parked(rt);
}
