/* The runtime's public face: create, run, shut down, free, statistics.
 *
 * Shutdown protocol:
 *   1. set `shutdown` (spawns now fail), wait for spawns on other threads
 *      that passed the check to queue their blocks (`spawning`), and close
 *      the global queue (pushes fail; a task that cannot be queued stays
 *      SCHEDULED);
 *   2. wake every worker / the current-thread driver and wait until no
 *      thread polls a task of this runtime: join the workers, wait for the
 *      driver to leave and for helping joiners and task dumps
 *      (external_running) to finish; stop the stall watchdog and write the
 *      leak report if asked;
 *   3. stop the blocking pool (blitz__pool_shutdown): queued jobs complete
 *      as cancelled, running ones are waited for;
 *   4. sweep: walk every live task block and complete each unfinished task
 *      as cancelled (joiners wake with BLITZ_ECANCELED; tasks nobody holds
 *      are freed, running their drop functions);
 * and blitz_runtime_free then runs the drop functions of the blocks still
 * held (handles, wakers) and frees all memory. */
#include "../io/io.h"

static void blitz__runtime_release_memory(blitz_runtime *rt) {
    blitz__stall_free(rt);
    blitz__io_destroy(rt);
    if (rt->workers) {
        for (uint32_t i = 0; i < rt->num_workers; i++)
            blitz__parker_destroy(&rt->workers[i].parker);
        blitz__free(rt->workers_raw);
    }
    if (rt->ct) {
        blitz__parker_destroy(&rt->ct->parker);
        blitz__free(rt->ct);
    }
    blitz__global_queue_destroy(rt->global);
    blitz__time_destroy(rt);
    blitz__pool_destroy(rt->pool);
    blitz__mutex_destroy(&rt->start_lock);
    blitz__mutex_destroy(&rt->alloc_lock);
    blitz__free(rt);
}

/* The runtime and the parts of it the layers above the task core own, in
 * one allocation (the runtime first, so freeing it frees them all). */
typedef struct blitz__runtime_block {
    blitz_runtime rt;
    BLITZ__ALIGNED blitz__global_queue global;
    blitz__idle idle;
    blitz__time_driver time;
    blitz__pool pool;
} blitz__runtime_block;

BLITZ_API int blitz_runtime_new(const blitz_config *cfg, blitz_runtime **out) {
    if (!out)
        return BLITZ_EINVAL;
    *out = NULL;
    blitz_config c;
    memset(&c, 0, sizeof c);
    if (cfg)
        c = *cfg;
    if (c.flavor != BLITZ_MULTI_THREAD && c.flavor != BLITZ_CURRENT_THREAD)
        return BLITZ_EINVAL;
    if (c.workers > BLITZ_MAX_WORKERS)
        return BLITZ_EINVAL;
    if (c.global_queue_interval > BLITZ__INTERVAL_MAX)
        return BLITZ_EINVAL;
    blitz__runtime_block *block = (blitz__runtime_block *)blitz__calloc(sizeof *block);
    if (!block)
        return BLITZ_ENOMEM;
    blitz_runtime *rt = &block->rt;
    rt->global = &block->global;
    rt->idle = &block->idle;
    rt->time = &block->time;
    rt->pool = &block->pool;
    rt->flavor = c.flavor;
    rt->park_timeout_ns = c.park_timeout_ns;
    rt->spin_before_park = c.spin_before_park == UINT32_MAX ? 0
                           : c.spin_before_park             ? c.spin_before_park
                                                            : BLITZ__DEFAULT_SPIN;
    rt->spin_explicit = c.spin_before_park != 0;
    rt->fixed_interval = c.global_queue_interval;
    rt->hooks = c.hooks;
    rt->metrics = c.metrics != 0;
    rt->poll_hooks = c.hooks.poll_start || c.hooks.poll_end;
    rt->task_hooks = c.hooks.task_spawn || c.hooks.task_terminate;
    rt->observe = rt->metrics || rt->poll_hooks;
    rt->observe_workers = rt->metrics || c.hooks.worker_park || c.hooks.worker_unpark;
    uint32_t sample = c.metrics_poll_sample ? c.metrics_poll_sample : 64;
    uint32_t pow2 = 1;
    while (pow2 < sample && pow2 < (1u << 30))
        pow2 <<= 1;
    rt->poll_sample_mask = pow2 - 1;
    rt->trim_delay_ns = BLITZ__TRIM_DELAY_NS;
    if (rt->fixed_interval && rt->fixed_interval < 1)
        rt->fixed_interval = 1;
    int rc = blitz__global_queue_init(rt->global);
    if (rc == 0)
        rc = blitz__mutex_init(&rt->start_lock);
    if (rc == 0)
        rc = blitz__mutex_init(&rt->alloc_lock);
    if (rc == 0)
        rc = blitz__pool_init(rt->pool, &c);
    if (rc != 0) {
        blitz__free(rt);
        return rc;
    }
    blitz__idle_init(rt->idle);
    blitz__time_init(rt, c.start_paused != 0);
    if (c.flavor == BLITZ_MULTI_THREAD) {
        uint32_t n = c.workers;
        if (n == 0) {
            n = blitz__cpu_count();
            if (n > BLITZ_MAX_WORKERS)
                n = BLITZ_MAX_WORKERS;
        }
        rt->num_workers = n;
        rt->workers = (blitz__worker *)blitz__alloc_aligned(sizeof(blitz__worker) * n,
                                                            BLITZ_CACHE_LINE, &rt->workers_raw);
        if (!rt->workers) {
            blitz__runtime_release_memory(rt);
            return BLITZ_ENOMEM;
        }
        for (uint32_t i = 0; i < n; i++)
            blitz__worker_init(&rt->workers[i], rt, i);
    } else {
        rt->num_workers = 1;
        rt->ct = (blitz__ct_core *)blitz__calloc(sizeof *rt->ct);
        if (!rt->ct) {
            blitz__runtime_release_memory(rt);
            return BLITZ_ENOMEM;
        }
        blitz__parker_init(&rt->ct->parker);
        rt->ct_parker = &rt->ct->parker;
    }
    rc = blitz__io_create(rt, c.backend);
    if (rc == BLITZ_OK && rt->io) {
        for (uint32_t i = 0; rt->workers && i < rt->num_workers; i++)
            rt->workers[i].parker.wake_fd = blitz__io_wake_fd(rt->io, i);
        if (rt->ct)
            rt->ct->parker.wake_fd = blitz__io_wake_fd(rt->io, UINT32_MAX);
    }
    if (rc == BLITZ_OK)
        rc = blitz__stall_start(rt, &c);
    if (rc != BLITZ_OK) {
        blitz__runtime_release_memory(rt);
        return rc;
    }
    rt->leak_report = blitz__leak_report_wanted(&c);
    *out = rt;
    return BLITZ_OK;
}

/* A thread that is polling one of rt's tasks cannot wait for rt to stop. */
static int blitz__inside(blitz_runtime *rt) {
    blitz__context *ctx = blitz__context_get();
    return ctx && ctx->rt == rt;
}

static void blitz__sweep_cancel(blitz__task *t) {
    if (blitz__state_claim_for_shutdown(t))
        blitz__task_finish(t, 1);
}

BLITZ_API int blitz_runtime_shutdown(blitz_runtime *rt) {
    if (!rt)
        return BLITZ_EINVAL;
    if (blitz__inside(rt))
        return BLITZ_EDEADLK;
    /* Seq_cst pairs with the helpers' announce-then-check (worker.c) and
     * with spawns' (blitz__spawn_enter). */
    blitz__u32_store(&rt->shutdown, 1, BLITZ__SEQ_CST);
    /* Spawns on other threads that passed the check finish queueing their
     * blocks, before the queue closes: no block is left half made or
     * being given back when the sweep comes. They may need start_lock. */
    while (blitz__u32_load(&rt->spawning, BLITZ__ACQUIRE))
        blitz__yield();
    blitz__mutex_lock(&rt->start_lock);
    if (rt->shutdown_done) {
        blitz__mutex_unlock(&rt->start_lock);
        return BLITZ_OK;
    }
    blitz__global_queue_close(rt->global);
    /* Waits nested in polls notice at once. */
    blitz__wake_thread_joiners(rt);
    if (rt->workers) {
        blitz__idle_unpark_all(rt);
        for (uint32_t i = 0; i < rt->num_workers; i++)
            if (rt->workers[i].started)
                blitz__thread_join(rt->workers[i].thread);
    }
    if (rt->ct) {
        while (blitz__u32_load(&rt->ct->driving, BLITZ__ACQUIRE)) {
            blitz__parker_unpark(&rt->ct->parker);
            blitz__yield();
        }
    }
    while (blitz__u32_load(&rt->external_running, BLITZ__ACQUIRE))
        blitz__yield();
    /* No poll runs any more: nothing left to watch, and every task is
     * where it stopped, for the leak report. */
    blitz__stall_stop(rt);
    if (rt->leak_report)
        blitz__leak_report(rt);
    /* Jobs that never started are cancelled, running ones finish: after
     * this no pool thread touches a task, so the sweep may. */
    blitz__pool_shutdown(rt);
    blitz__u32_store(&rt->sweeping, 1, BLITZ__RELEASE);
    blitz__block_walk(rt, blitz__sweep_cancel);
    blitz__time_shutdown(rt);
    /* Cancels every op; waits until the kernel holds no buffer. */
    blitz__io_shutdown(rt);
    rt->shutdown_done = 1;
    blitz__mutex_unlock(&rt->start_lock);
    blitz__wake_thread_joiners(rt);
    return BLITZ_OK;
}

static void blitz__final_drop(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (s & BLITZ__TASK_HAS_DROP)
        (*blitz__task_drop_slot(t))(blitz__task_state_ptr(t));
    blitz__u64_store(&t->state, 0, BLITZ__RELEASE);
}

/* Blocks not yet freed that no join handle keeps: those a thread may
 * still be about to let go of. A block a handle keeps stays until the
 * handle is released, so waiting for it would only stall. Acquire pairs
 * with blitz__count_freed. */
static int blitz__blocks_in_flight(blitz_runtime *rt) {
    const blitz__worker_counters *k = &rt->remote_counters;
    uint64_t spawned = blitz__u64_load(&k->spawned, BLITZ__ACQUIRE);
    uint64_t freed = blitz__u64_load(&k->freed, BLITZ__ACQUIRE);
    uint64_t handles = blitz__u64_load(&k->handles, BLITZ__ACQUIRE);
    uint64_t released = blitz__u64_load(&k->handles_released, BLITZ__ACQUIRE);
    for (uint32_t i = 0; i < rt->num_workers; i++) {
        k = rt->workers ? &rt->workers[i].counters : &rt->ct->counters;
        spawned += blitz__u64_load(&k->spawned, BLITZ__ACQUIRE);
        freed += blitz__u64_load(&k->freed, BLITZ__ACQUIRE);
        handles += blitz__u64_load(&k->handles, BLITZ__ACQUIRE);
        released += blitz__u64_load(&k->handles_released, BLITZ__ACQUIRE);
    }
    return spawned - freed > handles - released;
}

#define BLITZ__FREE_GRACE_NS 200000000u

BLITZ_API int blitz_runtime_free(blitz_runtime *rt) {
    if (!rt)
        return BLITZ_EINVAL;
    int rc = blitz_runtime_shutdown(rt);
    if (rc != BLITZ_OK)
        return rc;
    /* Every task is complete now, but a thread of another runtime may still
     * hold one of ours for an instant: a completer that copied our task's
     * join waker wakes and drops it after our task already saw the
     * completion. Give such references a moment to go; handles the program
     * still holds will not (their blocks are not waited for), nor will
     * wakers it holds, and both stay invalid after this. */
    uint64_t start = blitz__now_ns();
    while (blitz__blocks_in_flight(rt) && blitz__now_ns() - start < BLITZ__FREE_GRACE_NS)
        blitz__yield();
    blitz__io_destroy(rt);
    blitz__block_walk(rt, blitz__final_drop);
    blitz__pool_free_records(rt);
    blitz__block_free_all(rt);
    blitz__runtime_release_memory(rt);
    return BLITZ_OK;
}

BLITZ_API int blitz_runtime_run(blitz_runtime *rt, blitz_poll_fn poll, void *state, size_t size) {
    blitz_task *h;
    blitz_spawn_opts o;
    blitz__plain_opts(&o, poll, state, size);
    /* Multi-thread: the calling thread polls the main task itself (it is
     * pinned to this thread, like Tokio's block_on), so waking it costs no
     * queue trip. Not when called from inside one of rt's tasks: then it is
     * an ordinary spawn and join. */
    blitz__context *ctx = blitz__context_get();
    int pin = rt && rt->flavor == BLITZ_MULTI_THREAD && !(ctx && ctx->rt == rt);
    int rc = blitz__spawn(rt, &o, &h, pin);
    if (rc != BLITZ_OK)
        return rc;
    if (pin) {
        /* The workers also drive the timers of the pinned task. */
        rc = blitz__workers_start(rt);
        if (rc != BLITZ_OK) {
            /* Never polled; the shutdown sweep reclaims it. */
            blitz_task_release(&h);
            return rc;
        }
        blitz__block_on(rt, blitz__handle_in(h, __func__));
    }
    rc = blitz_join_blocking(h);
    if (rc == BLITZ_OK && state)
        memcpy(state, blitz_task_state(h), size);
    blitz_task_release(&h);
    return rc;
}

BLITZ_API int blitz_run(blitz_poll_fn poll, void *state, size_t size) {
    blitz_runtime *rt;
    int rc = blitz_runtime_new(NULL, &rt);
    if (rc != BLITZ_OK)
        return rc;
    rc = blitz_runtime_run(rt, poll, state, size);
    blitz_runtime_free(rt);
    return rc;
}

BLITZ_API blitz_runtime *blitz_runtime_current(void) {
    blitz__context *ctx = blitz__context_get();
    return ctx ? ctx->rt : NULL;
}

BLITZ_API blitz_flavor blitz_runtime_flavor(const blitz_runtime *rt) {
    return rt ? rt->flavor : BLITZ_MULTI_THREAD;
}

BLITZ_API uint32_t blitz_runtime_workers(const blitz_runtime *rt) {
    return rt ? rt->num_workers : 0;
}

/* ---- statistics ---------------------------------------------------------------- */

static uint64_t blitz__counter(const blitz__atomic_u64 *c) {
    return blitz__u64_load(c, BLITZ__RELAXED);
}

BLITZ_API int blitz_runtime_worker_stats(const blitz_runtime *rt, uint32_t worker,
                                         blitz_worker_stats *out) {
    if (!rt || !out || worker >= rt->num_workers)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    const blitz__worker_counters *k =
        rt->workers ? &rt->workers[worker].counters : &rt->ct->counters;
    out->tasks_polled = blitz__counter(&k->polled);
    out->tasks_stolen = blitz__counter(&k->stolen);
    out->steals = blitz__counter(&k->steals);
    out->times_parked = blitz__counter(&k->parked);
    out->lifo_hits = blitz__counter(&k->lifo_hits);
    out->global_batch_fetches = blitz__counter(&k->batch_fetches);
    out->overflows = blitz__counter(&k->overflows);
    out->global_queue_interval =
        rt->workers          ? blitz__u32_load(&rt->workers[worker].interval_shared, BLITZ__RELAXED)
        : rt->fixed_interval ? rt->fixed_interval
                             : 31;
    return BLITZ_OK;
}

BLITZ_API int blitz_runtime_stats(const blitz_runtime *rt, blitz_stats *out) {
    if (!rt || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    uint64_t spawned = blitz__counter(&rt->remote_counters.spawned);
    uint64_t freed = blitz__counter(&rt->remote_counters.freed);
    for (uint32_t i = 0; i < rt->num_workers; i++) {
        const blitz__worker_counters *k =
            rt->workers ? &rt->workers[i].counters : &rt->ct->counters;
        spawned += blitz__counter(&k->spawned);
        freed += blitz__counter(&k->freed);
        out->total_polled += blitz__counter(&k->polled);
        out->total_stolen += blitz__counter(&k->stolen);
        out->total_parked += blitz__counter(&k->parked);
    }
    out->total_polled += blitz__counter(&rt->remote_counters.polled);
    out->total_spawned = spawned;
    out->tasks_alive = spawned >= freed ? spawned - freed : 0;
    out->global_queue_depth = blitz__u64_load(&rt->global->len, BLITZ__RELAXED);
    out->num_workers = rt->num_workers;
    out->workers_started = rt->workers
                               ? blitz__u32_load(&rt->workers_started, BLITZ__RELAXED)
                               : (uint32_t)(blitz__u32_load(&rt->ct->driving, BLITZ__RELAXED) != 0);
    return BLITZ_OK;
}
