/* The poll harness (run, complete, free), task wakers, and spawning.
 *
 * The seed's vtable {poll, drop, schedule, reschedule} maps onto C as:
 * poll = the user's poll function in the header, driven by blitz__task_run;
 * drop = blitz__task_free (the user's drop function, if any, then the block
 * goes back to its cache); schedule = blitz__task_schedule (a wake: the LIFO
 * slot when the waker runs on a worker of the task's runtime, else the
 * global queue); reschedule = blitz__task_reschedule (after NOTIFIED: the
 * back of the local queue; after a yield: the thread's deferred list, which
 * joins the queue at the end of the tick, so everything runnable, remote
 * tasks included, runs first, as Tokio defers yield_now). */
#include "core.h"

static inline void *blitz__task_state_ptr(blitz__task *t) {
    return (char *)t + BLITZ__TASK_HEADER_SIZE;
}

/* The hooks sit at the end of the block: the drop function last, the
 * cancel hook before it. */
static inline blitz_drop_fn *blitz__task_drop_slot(blitz__task *t) {
    return (blitz_drop_fn *)((char *)t + blitz__block_size(t) - sizeof(blitz_drop_fn));
}
static inline blitz_cancel_hook_fn *blitz__task_cancel_slot(blitz__task *t, uint64_t s) {
    size_t back = sizeof(blitz_drop_fn) * ((s & BLITZ__TASK_HAS_DROP) ? 2 : 1);
    return (blitz_cancel_hook_fn *)((char *)t + blitz__block_size(t) - back);
}

/* The task's name (blitz_spawn_opts.name) sits before the hooks. */
static inline const char **blitz__task_name_slot(blitz__task *t, uint64_t s) {
    size_t hooks = ((s & BLITZ__TASK_HAS_DROP) != 0) + ((s & BLITZ__TASK_HAS_CANCEL) != 0);
    return (const char **)(void *)((char *)t + blitz__block_size(t) -
                                   (hooks + 1) * sizeof(blitz_drop_fn));
}
/* The name of task `t` whose state word is `s`, or NULL. */
static inline const char *blitz__task_name_of(blitz__task *t, uint64_t s) {
    return (s & BLITZ__TASK_HAS_NAME) ? *blitz__task_name_slot(t, s) : NULL;
}

/* `size` bytes (a multiple of 8) reserved in front of the hooks and the
 * name at the end of the block of a task spawned with a trailer. */
static inline void *blitz__task_trailer_of(blitz__task *t, uint64_t s, size_t size) {
    size_t hooks = ((s & BLITZ__TASK_HAS_DROP) != 0) + ((s & BLITZ__TASK_HAS_CANCEL) != 0) +
                   ((s & BLITZ__TASK_HAS_NAME) != 0);
    return (char *)t + blitz__block_size(t) - hooks * sizeof(blitz_drop_fn) - size;
}
static inline void *blitz__task_trailer(blitz__task *t, size_t size) {
    return blitz__task_trailer_of(t, blitz__u64_load(&t->state, BLITZ__RELAXED), size);
}

/* ---- spawn deadlines ---------------------------------------------------------
 * A task spawned with a timeout carries a timer in its trailer, armed with a
 * waker whose wake cancels the task instead of polling it. The time driver
 * fires it on whatever thread drives the timers, so the wake only marks the
 * task cancelled (and timed out) and schedules it; its own scheduler then
 * completes it, withdrawing the op it waits in. Completion disarms the
 * timer, so a task that finishes in time holds nothing until its deadline. */

static inline blitz_timer *blitz__task_deadline_timer(blitz__task *t, uint64_t s) {
    return (blitz_timer *)blitz__task_trailer_of(t, s, sizeof(blitz_timer));
}

static void blitz__deadline_wake_by_ref(const void *data) {
    blitz__task *t = (blitz__task *)data;
    if (blitz__state_cancel_wake(t, BLITZ__TASK_TIMED_OUT) == BLITZ__WAKE_SCHEDULE)
        blitz__task_schedule(t);
}
static void blitz__deadline_wake(const void *data) {
    blitz__deadline_wake_by_ref(data);
    blitz__task_unref((blitz__task *)data);
}
static void blitz__deadline_drop(const void *data) {
    blitz__task_unref((blitz__task *)data);
}
static blitz_waker blitz__deadline_clone(const void *data);
static const blitz_waker_vtable blitz__deadline_vtable = {
    blitz__deadline_wake, blitz__deadline_wake_by_ref, blitz__deadline_clone, blitz__deadline_drop};
static blitz_waker blitz__deadline_clone(const void *data) {
    blitz__task_ref((blitz__task *)data);
    blitz_waker w = {data, &blitz__deadline_vtable};
    return w;
}

/* Arms the deadline of a task not queued yet, so its time counts from the
 * spawn even if the task runs and waits at once (a paused clock jumps
 * then). The caller holds a reference across the spawn. */
static void blitz__task_deadline_start(blitz_runtime *rt, blitz__task *t, int64_t timeout_ns) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    blitz_waker w = {t, &blitz__deadline_vtable};
    blitz__deadline_arm(rt, blitz__task_deadline_timer(t, s), timeout_ns, &w);
}

/* The spawn failed after arming: disarm, and wait out a firing timer's
 * reference (held only until its wake returns) before the block goes. */
static void blitz__task_deadline_abandon(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    blitz__deadline_disarm(blitz__task_deadline_timer(t, s));
    uint64_t mine = 2 + ((s & BLITZ__TASK_JOIN_INTEREST) != 0); /* lifecycle, spawner, handle */
    while (blitz__refs(blitz__u64_load(&t->state, BLITZ__ACQUIRE)) > mine)
        blitz__cpu_relax();
}

/* Last reference gone: run the drop function and recycle the block. */
BLITZ_PRIVATE void blitz__task_free(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (s & BLITZ__TASK_HAS_DROP)
        (*blitz__task_drop_slot(t))(blitz__task_state_ptr(t));
    blitz__u64_store(&t->state, 0, BLITZ__RELEASE);
    blitz__block_release(t);
}

/* Wakes threads sleeping on the runtime's completion word. The bump is
 * seq_cst and so is a sleeper's announcement (blitz__sleep_on_completion):
 * either the sleeper's futex compare sees the new value, or this side sees
 * the sleeper and makes the system call; a wake nobody needs costs none. */
BLITZ_PRIVATE void blitz__wake_thread_joiners(blitz_runtime *rt) {
    blitz__u32_fetch_add(&rt->completion_seq, 1, BLITZ__SEQ_CST);
    if (blitz__u32_load(&rt->completion_sleepers, BLITZ__SEQ_CST))
        blitz__futex_wake(&rt->completion_seq, INT_MAX);
    /* A current-thread driver waiting for this task sleeps in its parker. */
    if (rt->ct_parker)
        blitz__parker_unpark(rt->ct_parker);
}

/* Sleeps while the completion word still holds `seq` (read by the caller
 * before it checked its condition), at most timeout_ns. */
BLITZ_PRIVATE void blitz__sleep_on_completion(blitz_runtime *rt, uint32_t seq,
                                              uint64_t timeout_ns) {
    blitz__u32_fetch_add(&rt->completion_sleepers, 1, BLITZ__SEQ_CST);
    blitz__futex_wait(&rt->completion_seq, seq, timeout_ns);
    blitz__u32_fetch_sub(&rt->completion_sleepers, 1, BLITZ__RELAXED);
}

/* A TRACED task is gone: the runtime's task_terminate hook, if set. */
static BLITZ__NOINLINE void blitz__task_trace_end(blitz__task *t) {
    blitz_runtime *rt = blitz__task_runtime(t);
    if (rt->hooks.task_terminate)
        rt->hooks.task_terminate(rt->hooks.arg, t);
}

/* RUNNING -> COMPLETE and everything completion owes: the joiner's waker,
 * sleeping joiner threads, and the lifecycle reference. */
BLITZ_PRIVATE void blitz__task_finish(blitz__task *t, int cancelled) {
    int dropped;
    /* The hook bits are fixed at spawn: one look serves both below. */
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    if (BLITZ__UNLIKELY(s & BLITZ__TASK_TRACED))
        blitz__task_trace_end(t);
    if (cancelled) {
        /* The task is ours (RUNNING): the op it waits in is withdrawn, then
         * its cancel hook releases the rest, before any joiner sees it
         * complete. What that kicks (an io_uring cancel's submission wakes
         * the ring's owner) waits until the joiners are woken (defer.c). */
        blitz__defer_begin();
        blitz_cancel_fn withdraw = t->pending_cancel;
        if (withdraw) {
            t->pending_cancel = NULL;
            withdraw(NULL, t->pending_op);
        }
        if (s & BLITZ__TASK_HAS_CANCEL)
            (*blitz__task_cancel_slot(t, s))(blitz__task_state_ptr(t));
    }
    if (s & BLITZ__TASK_HAS_DEADLINE)
        blitz__deadline_disarm(blitz__task_deadline_timer(t, s));
    uint64_t prev = blitz__state_complete(t, cancelled, &dropped);
    if (dropped) {
        if (blitz__refs(prev) == 1)
            blitz__task_free(t);
    } else {
        if (prev & BLITZ__TASK_JOIN_WAKER) {
            /* The completer only reads the slot (the handle owner may be
             * reading it too, in blitz_join's will_wake check). */
            blitz__join_wake(t, prev);
        }
        if (prev & BLITZ__TASK_THREAD_JOINER)
            blitz__wake_thread_joiners(blitz__task_runtime(t));
        blitz__task_unref(t);
    }
    if (cancelled)
        blitz__defer_end();
}

/* ---- wakers ----------------------------------------------------------------- */

static void blitz__waker_wake_by_ref_fn(const void *data) {
    blitz__task *t = (blitz__task *)data;
    if (blitz__state_wake(t) == BLITZ__WAKE_SCHEDULE)
        blitz__task_schedule(t);
}
static void blitz__waker_wake_fn(const void *data) {
    blitz__waker_wake_by_ref_fn(data);
    blitz__task_unref((blitz__task *)data);
}
static blitz_waker blitz__waker_clone_fn(const void *data);
static void blitz__waker_drop_fn(const void *data) {
    blitz__task_unref((blitz__task *)data);
}
static const blitz_waker_vtable blitz__task_waker_vtable = {
    blitz__waker_wake_fn, blitz__waker_wake_by_ref_fn, blitz__waker_clone_fn, blitz__waker_drop_fn};
static blitz_waker blitz__waker_clone_fn(const void *data) {
    blitz__task_ref((blitz__task *)data);
    blitz_waker w = {data, &blitz__task_waker_vtable};
    return w;
}

static void blitz__noop_fn(const void *data) {
    (void)data;
}
static blitz_waker blitz__noop_clone_fn(const void *data);
static const blitz_waker_vtable blitz__noop_waker_vtable = {blitz__noop_fn, blitz__noop_fn,
                                                            blitz__noop_clone_fn, blitz__noop_fn};
static blitz_waker blitz__noop_clone_fn(const void *data) {
    blitz_waker w = {data, &blitz__noop_waker_vtable};
    return w;
}

BLITZ_API blitz_waker blitz_waker_noop(void) {
    blitz_waker w = {NULL, &blitz__noop_waker_vtable};
    return w;
}

BLITZ_API blitz_waker blitz_cx_waker(blitz_cx *cx) {
    BLITZ_ASSERT(cx);
    if (!cx)
        return blitz_waker_noop();
    if (BLITZ__UNLIKELY(!cx->task))
        return cx->waker;
    blitz_waker w = {cx->task, &blitz__task_waker_vtable};
    return w;
}

BLITZ_API blitz_waker blitz_waker_clone(const blitz_waker *w) {
    if (!w || !w->vtable)
        return blitz_waker_noop();
    return w->vtable->clone(w->data);
}
BLITZ_API void blitz_waker_wake(blitz_waker w) {
    if (w.vtable)
        w.vtable->wake(w.data);
}
BLITZ_API void blitz_waker_wake_by_ref(const blitz_waker *w) {
    if (w && w->vtable)
        w->vtable->wake_by_ref(w->data);
}
BLITZ_API void blitz_waker_drop(blitz_waker w) {
    if (w.vtable)
        w.vtable->drop(w.data);
}
BLITZ_API int blitz_waker_will_wake(const blitz_waker *a, const blitz_waker *b) {
    return a && b && a->data == b->data && a->vtable == b->vtable;
}

BLITZ_PRIVATE const blitz_waker_vtable *blitz__join_vtable(const blitz__task *t, uint32_t idx) {
    if (idx == 0)
        return &blitz__task_waker_vtable;
    /* Acquire: pairs with the claim below (the vtables are constants, so
     * this only has to see the pointer). */
    return (const blitz_waker_vtable *)blitz__ptr_load(
        &blitz__task_runtime(t)->join_vtables[idx - 1], BLITZ__ACQUIRE);
}

BLITZ_PRIVATE uint32_t blitz__join_vtable_index(const blitz__task *t,
                                                const blitz_waker_vtable *vt) {
    if (BLITZ__LIKELY(vt == &blitz__task_waker_vtable))
        return 0;
    blitz_runtime *rt = blitz__task_runtime(t);
    for (uint32_t i = 0; i < BLITZ__JOIN_VT_BOXED - 1; i++) {
        void *cur = blitz__ptr_load(&rt->join_vtables[i], BLITZ__ACQUIRE);
        if (!cur &&
            blitz__ptr_cas(&rt->join_vtables[i], &cur, (void *)(uintptr_t)vt, BLITZ__ACQ_REL))
            return i + 1;
        if (cur == (const void *)vt)
            return i + 1;
    }
    return BLITZ__JOIN_VT_BOXED;
}

/* ---- the poll harness ------------------------------------------------------------ */

/* Poll durations go to bucket i when at most 2^(i+6) ns (the last bucket
 * takes the rest). */
static inline uint32_t blitz__poll_bucket(uint64_t ns) {
    if (ns <= 64)
        return 0;
    uint32_t b = (uint32_t)(64 - blitz__clz64(ns - 1)) - 6;
    return b < BLITZ_METRICS_POLL_BUCKETS - 1 ? b : BLITZ_METRICS_POLL_BUCKETS - 1;
}

/* A poll with poll hooks or timed for metrics (`timed`; counted in the
 * poller's counters). Out of line so the plain path stays small. */
static BLITZ__NOINLINE blitz_poll blitz__task_poll_observed(blitz__task *t, blitz_cx *cx,
                                                            int timed) {
    blitz__context *ctx = cx->ctx;
    blitz_runtime *rt = ctx->rt;
    if (rt->hooks.poll_start)
        rt->hooks.poll_start(rt->hooks.arg, t);
    /* A blocking-pool job's one "poll" is the whole job: not a poll the
     * histogram is about. */
    if (timed && (blitz__u64_load(&t->state, BLITZ__RELAXED) & BLITZ__TASK_BLOCKING))
        timed = 0;
    uint64_t t0 = timed ? blitz__now_ns() : 0;
    blitz_poll r = t->poll(cx, blitz__task_state_ptr(t));
    if (timed) {
        uint64_t d = blitz__now_ns() - t0;
        blitz__worker_counters *k = ctx->counters;
        if (k) {
            /* Only this thread writes its counters. */
            blitz__u64_bump(&k->poll_buckets[blitz__poll_bucket(d)], 1);
            blitz__u64_bump(&k->poll_ns_sum, d);
            blitz__u64_bump(&k->poll_timed, 1);
        } else {
            k = &rt->remote_counters;
            blitz__u64_fetch_add(&k->poll_buckets[blitz__poll_bucket(d)], 1, BLITZ__RELAXED);
            blitz__u64_fetch_add(&k->poll_ns_sum, d, BLITZ__RELAXED);
            blitz__u64_fetch_add(&k->poll_timed, 1, BLITZ__RELAXED);
        }
    }
    if (rt->hooks.poll_end)
        rt->hooks.poll_end(rt->hooks.arg, t, r);
    return r;
}

/* The site entry of poll function `poll` in rt's table: the one that holds
 * it, or (`claim`) a free one claimed for it; NULL when neither. */
static blitz__site_entry *blitz__site_find(blitz_runtime *rt, blitz_poll_fn poll, int claim) {
    uint64_t key;
    uintptr_t a;
    memcpy(&a, &poll, sizeof a);
    key = (uint64_t)a;
    uint32_t h = (uint32_t)((key >> 4) ^ (key >> 13)) % BLITZ__SITES;
    for (uint32_t i = 0; i < 16; i++) {
        blitz__site_entry *e = &rt->sites[(h + i) % BLITZ__SITES];
        uint64_t cur = blitz__u64_load(&e->poll, BLITZ__ACQUIRE);
        if (cur == key)
            return e;
        if (cur == 0) {
            if (!claim)
                return NULL;
            /* Acq_rel: a loser reads the winner's key as above. */
            if (blitz__u64_cas(&e->poll, &cur, key, BLITZ__ACQ_REL) || cur == key)
                return cur == key ? NULL : e; /* someone else records it */
        }
    }
    return NULL;
}

/* The packed site of t's poll function (see blitz__site_entry), or 0. */
static inline uint64_t blitz__task_site(blitz__task *t) {
    blitz__site_entry *e = blitz__site_find(blitz__task_runtime(t), t->poll, 0);
    /* Acquire: the offset stored with it is within the blocks of this
     * poll function, whatever task recorded it. */
    return e ? blitz__u64_load(&e->site, BLITZ__ACQUIRE) : 0;
}

/* The resume point a task's coroutine is at (its line while suspended, 0
 * before its first poll, -1 once finished), or 0 when `site` is 0. Only
 * the task's owner may call this. */
static inline int blitz__task_resume_line(blitz__task *t, uint64_t site) {
    uint64_t off = site >> 48;
    /* A task of the same poll function with a smaller block: unknown. */
    if (!off || off - 1 + sizeof(int) > blitz__block_size(t) - BLITZ__TASK_HEADER_SIZE)
        return 0;
    int line;
    memcpy(&line, (char *)blitz__task_state_ptr(t) + off - 1, sizeof line);
    return line;
}
static inline const char *blitz__site_file(uint64_t site) {
    return (const char *)(uintptr_t)(site & (((uint64_t)1 << 48) - 1));
}

/* ---- coroutine sites -----------------------------------------------------------
 * BLITZ_BEGIN leaves a note (the thread context's `note`) on a coroutine's first poll;
 * the harness takes it after the poll. The first note for a poll function
 * whose resume int lies in the task's own block records the site of every
 * task of that function: only such a one can be read back by a dump. */

_Static_assert(offsetof(blitz__context, note) == 0, "BLITZ_BEGIN finds the note at the context");

/* Whether the int at `r` lies in the state part of t's block. Compared as
 * integers: `r` may point anywhere. */
static inline int blitz__in_state(blitz__task *t, const int *r) {
    uintptr_t p = (uintptr_t)r, state = (uintptr_t)blitz__task_state_ptr(t);
    return p >= state && p + sizeof(int) <= (uintptr_t)t + blitz__block_size(t);
}

/* ctx's slot for t's poll function among those whose sites it knows. */
static inline blitz_poll_fn *blitz__site_known(const blitz__task *t, blitz__context *ctx) {
    uintptr_t a;
    memcpy(&a, &t->poll, sizeof a);
    return &ctx->site_known[(a >> 4) & 3];
}

/* Takes the note left during t's poll (ctx: the harness's context, whose
 * current task is again the one whose poll polled t, if any). A note in
 * that task's block is left for its harness; any other that is not t's is
 * dropped, so a note never outlives the poll it was left in by more than
 * the next poll on the thread. */
static BLITZ__NOINLINE void blitz__coro_note_take(blitz__task *t, blitz__context *ctx) {
    const int *resume = ctx->note.resume;
    if (ctx->current && !blitz__in_state(t, resume)) {
        if (!blitz__in_state(ctx->current, resume))
            ctx->note.resume = NULL;
        return;
    }
    /* t's note, or a stale one: dropped either way. */
    ctx->note.resume = NULL;
    blitz_runtime *rt = blitz__task_runtime(t);
    blitz_poll_fn *known = blitz__site_known(t, ctx);
    if ((*known == t->poll && rt == ctx->rt) || !blitz__in_state(t, resume))
        return;
    uint64_t off = (uint64_t)((uintptr_t)resume - (uintptr_t)blitz__task_state_ptr(t)) + 1;
    uint64_t f = (uint64_t)(uintptr_t)ctx->note.file;
    if (off > 0xffffu || f >> 48)
        return;
    blitz__site_entry *e = blitz__site_find(rt, t->poll, 0);
    if (!e && (e = blitz__site_find(rt, t->poll, 1)) != NULL)
        blitz__u64_store(&e->site, f | off << 48, BLITZ__RELEASE);
    if (e && rt == ctx->rt)
        *known = t->poll;
}

/* The stall watchdog's view of a poll about to start (see
 * blitz__stall_slot); only when the watchdog runs. */
static void blitz__stall_begin(blitz__stall_slot *slot, blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    uintptr_t poll;
    memcpy(&poll, &t->poll, sizeof poll);
    uint64_t site = blitz__task_site(t);
    blitz__u64_store(&slot->id, t->id, BLITZ__RELAXED);
    blitz__u64_store(&slot->site, site, BLITZ__RELAXED);
    blitz__u64_store(&slot->name, (uint64_t)(uintptr_t)blitz__task_name_of(t, s), BLITZ__RELAXED);
    blitz__u64_store(&slot->poll, (uint64_t)poll, BLITZ__RELAXED);
    blitz__u32_store(&slot->line, (uint32_t)blitz__task_resume_line(t, site), BLITZ__RELAXED);
    uint64_t now = blitz__now_ns();
    blitz__u64_store(&slot->since, now ? now : 1, BLITZ__RELEASE);
}

/* A poll of the observing harness whose countdown ran out: observed as the
 * runtime's settings ask (hooks, a timed poll, the stall watchdog's slot),
 * with the countdown set for the next one. */
static BLITZ__NOINLINE blitz_poll blitz__task_poll_counted_down(blitz__task *t, blitz_cx *cx) {
    blitz__context *ctx = cx->ctx;
    blitz_runtime *rt = ctx->rt;
    blitz__stall_slot *stall = ctx->stall;
    if (!rt->observe && !stall) {
        ctx->poll_countdown = UINT32_MAX;
        return t->poll(cx, blitz__task_state_ptr(t));
    }
    int timed = 1;
    if (rt->poll_hooks || stall) {
        ctx->poll_countdown = 1;
        timed = rt->metrics && (ctx->poll_seq++ & rt->poll_sample_mask) == 0;
    } else {
        ctx->poll_countdown = rt->poll_sample_mask + 1u;
    }
    if (stall)
        blitz__stall_begin(stall, t);
    blitz_poll r = blitz__task_poll_observed(t, cx, timed);
    if (stall)
        blitz__u64_store(&stall->since, 0, BLITZ__RELAXED);
    return r;
}

/* Runs a SCHEDULED task once (blitz__task_run), with the observing
 * harness's one countdown per poll when `observed`: it reaches 0 once per
 * timed poll with metrics alone, and at every poll with hooks or the
 * watchdog. A coroutine's site note costs a poll one test. */
static BLITZ__ALWAYS_INLINE int blitz__task_run_as(blitz__task *t, blitz__context *ctx,
                                                   int observed) {
    if (blitz__state_to_running(t) == BLITZ__RUN_CANCEL) {
        blitz__task_finish(t, 1);
        return 0;
    }
    blitz_cx cx;
    cx.task = t;
    cx.ctx = ctx;
    cx.yielded = 0;
    blitz__task *outer = ctx->current;
    ctx->current = t;
    t->pending_cancel = NULL;
    blitz_poll r;
    if (!observed || BLITZ__LIKELY(--ctx->poll_countdown != 0))
        r = t->poll(&cx, blitz__task_state_ptr(t));
    else
        r = blitz__task_poll_counted_down(t, &cx);
    ctx->current = outer;
    if (BLITZ__UNLIKELY(ctx->note.resume != NULL)) {
        /* The common note: the first poll of another task of a known
         * function, with no outer task whose note it could be. */
        if (!outer && *blitz__site_known(t, ctx) == t->poll && blitz__task_runtime(t) == ctx->rt)
            ctx->note.resume = NULL;
        else
            blitz__coro_note_take(t, ctx);
    }
    if (r == BLITZ_READY)
        blitz__task_finish(t, 0);
    else if (blitz__state_to_idle(t, cx.yielded, &ctx->clock_ns))
        blitz__task_reschedule(t, ctx, cx.yielded);
    return 1;
}

BLITZ_PRIVATE int blitz__task_run_plain(blitz__task *t, blitz__context *ctx) {
    return blitz__task_run_as(t, ctx, 0);
}
BLITZ_PRIVATE int blitz__task_run_observed(blitz__task *t, blitz__context *ctx) {
    return blitz__task_run_as(t, ctx, 1);
}

/* ---- poll-context accessors ---------------------------------------------------- */

BLITZ_API blitz_runtime *blitz_cx_runtime(blitz_cx *cx) {
    return cx ? cx->ctx->rt : NULL;
}
BLITZ_API void blitz_cx_yield(blitz_cx *cx) {
    if (cx)
        cx->yielded = 1;
}
BLITZ_API int blitz_cx_cancelled(blitz_cx *cx) {
    if (!cx || !cx->task)
        return 0;
    return (blitz__u64_load(&cx->task->state, BLITZ__ACQUIRE) & BLITZ__TASK_CANCELLED) != 0;
}
BLITZ_API void blitz_cx_pending(blitz_cx *cx, blitz_cancel_fn cancel, void *op) {
    (void)blitz__pending(cx, cancel, op);
}
BLITZ_API int blitz_cx_shield(blitz_cx *cx) {
    return cx && cx->task ? blitz__state_shield(cx->task, 1) : BLITZ_EINVAL;
}
BLITZ_API int blitz_cx_unshield(blitz_cx *cx) {
    return cx && cx->task ? blitz__state_shield(cx->task, -1) : BLITZ_EINVAL;
}
BLITZ_API uint64_t blitz_cx_task_id(blitz_cx *cx) {
    return cx && cx->task ? cx->task->id : 0;
}

BLITZ_API int blitz_cx_worker(blitz_cx *cx) {
    if (!cx)
        return -1;
    if (cx->ctx->worker)
        return cx->ctx->worker_index;
    return cx->ctx->ct_driver ? 0 : -1;
}

/* ---- spawning ------------------------------------------------------------------- */

/* A spawn on a thread that shutdown does not wait for (a plain thread,
 * or one polling another runtime's task) announces itself in `spawning`
 * until its block is queued or given back; shutdown waits for the count
 * to reach 0 before it sweeps the blocks, so it never finishes a block
 * its spawner is still filling in or discarding. Threads polling rt's
 * tasks need no announcement: shutdown waits for all of them first.
 * Returns whether the caller announced itself (pass it to leave). */
BLITZ_PRIVATE int blitz__spawn_enter(blitz_runtime *rt) {
    blitz__context *ctx = blitz__context_get();
    if (!rt || (ctx && ctx->rt == rt))
        return 0;
    /* Seq_cst, with the seq_cst shutdown check in blitz__task_create:
     * shutdown stores its flag (seq_cst) and then reads this count, so
     * either the spawn sees the flag or shutdown sees the count. */
    blitz__u32_fetch_add(&rt->spawning, 1, BLITZ__SEQ_CST);
    return 1;
}

BLITZ_PRIVATE void blitz__spawn_leave(blitz_runtime *rt, int entered) {
    /* Release: the block's contents (or its discard) happen before the
     * sweep, which reads the count with acquire. */
    if (entered)
        blitz__u32_fetch_sub(&rt->spawning, 1, BLITZ__RELEASE);
}

/* A new task block in the SCHEDULED state that nobody has seen yet, with
 * `trailer` bytes before the hooks and `flags` added to its state word.
 * The caller queues it, or gives it back with blitz__task_discard. */
BLITZ_PRIVATE int blitz__task_create(blitz_runtime *rt, const blitz_spawn_opts *o, int with_handle,
                                     size_t trailer, uint64_t flags, blitz__task **out) {
    *out = NULL;
    /* size - 1 wraps for 0: one compare refuses both ends. */
    if (!rt || !o || !o->poll || o->size - 1 >= (size_t)BLITZ_MAX_STATE_SIZE ||
        (o->init && o->state))
        return BLITZ_EINVAL;
    if (blitz__u32_load(&rt->shutdown, BLITZ__SEQ_CST))
        return BLITZ_ESHUTDOWN;
    if (BLITZ__UNLIKELY(o->timeout_ns != 0)) {
        if (o->timeout_ns < 0)
            return BLITZ_EINVAL;
        /* The deadline's timer is the trailer (blocking-pool jobs have
         * their own trailer and no deadline). */
        BLITZ_ASSERT(trailer == 0);
        trailer = sizeof(blitz_timer);
        flags |= BLITZ__TASK_HAS_DEADLINE;
    }
    size_t need = BLITZ__TASK_HEADER_SIZE + o->size;
    /* The plain spawn has no slots after its state. */
    if (BLITZ__UNLIKELY(o->drop || o->cancel || o->name || trailer)) {
        size_t hooks = (o->drop != NULL) + (o->cancel != NULL) + (o->name != NULL);
        need = ((need + 7) & ~(size_t)7) + trailer + hooks * sizeof(blitz_drop_fn);
    }
    blitz__task *t = blitz__block_alloc(rt, need, with_handle);
    if (!t)
        return BLITZ_ENOMEM;
    t->poll = o->poll;
    t->next = NULL;
    t->join_data = NULL;
    t->pending_cancel = NULL;
    t->pending_op = NULL;
    /* t->id was given by blitz__block_alloc. */
    if (o->state)
        memcpy(blitz__task_state_ptr(t), o->state, o->size);
    else
        memset(blitz__task_state_ptr(t), 0, o->size);
    /* In place: a large state never needs a copy on the caller's stack. No
     * one sees the block before it is queued, so the task cannot run yet. */
    if (o->init)
        o->init(blitz__task_state_ptr(t), o->init_arg);
    uint64_t initial =
        blitz__state_initial(with_handle, o->drop != NULL, o->cancel != NULL) | flags;
    if (o->drop)
        *blitz__task_drop_slot(t) = o->drop;
    if (o->cancel)
        *blitz__task_cancel_slot(t, initial) = o->cancel;
    if (o->name) {
        initial |= BLITZ__TASK_HAS_NAME;
        *blitz__task_name_slot(t, initial) = o->name;
    }
    if (flags & BLITZ__TASK_HAS_DEADLINE)
        memset(blitz__task_deadline_timer(t, initial), 0, sizeof(blitz_timer));
    /* Task hooks: the spawn is reported now, the end by completion or by
     * blitz__task_discard when the block is never queued. */
    int traced = BLITZ__UNLIKELY(rt->task_hooks != 0);
    if (traced)
        initial |= BLITZ__TASK_TRACED;
    /* The enqueue publishes the block to its scheduler (queue release or a
     * mutex); release here publishes it to a task dump, which may find the
     * block before that and reads the word with acquire. */
    blitz__u64_store(&t->state, initial, BLITZ__RELEASE);
    if (traced && rt->hooks.task_spawn)
        rt->hooks.task_spawn(rt->hooks.arg, t);
    *out = t;
    return BLITZ_OK;
}

/* Gives back a block from blitz__task_create that was never queued,
 * without its drop function (the caller still owns what its state refers
 * to). */
BLITZ_PRIVATE void blitz__task_discard(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    if (s & BLITZ__TASK_TRACED)
        blitz__task_trace_end(t);
    if (s & BLITZ__TASK_JOIN_INTEREST)
        blitz__count_handle_released(blitz__task_runtime(t));
    /* A task dump may hold a reference for an instant (blitz__dump_pin). */
    uint64_t mine = 1 + ((s & BLITZ__TASK_JOIN_INTEREST) != 0);
    while (blitz__refs(blitz__u64_load(&t->state, BLITZ__ACQUIRE)) > mine)
        blitz__cpu_relax();
    blitz__u64_store(&t->state, 0, BLITZ__RELAXED);
    blitz__block_release(t);
}

/* Spawns; a PINNED task is not queued (blitz__block_on polls it). */
BLITZ_PRIVATE int blitz__spawn(blitz_runtime *rt, const blitz_spawn_opts *o, blitz_task **handle,
                               int pinned) {
    if (handle)
        *handle = NULL;
    blitz__task *t;
    int entered = blitz__spawn_enter(rt);
    int rc = blitz__task_create(rt, o, handle != NULL, 0, pinned ? BLITZ__TASK_PINNED : 0, &t);
    if (rc == BLITZ_OK) {
        int deadline = o->timeout_ns > 0;
        if (deadline) {
            blitz__task_ref(t); /* kept until the spawn is decided */
            blitz__task_deadline_start(rt, t, o->timeout_ns);
            (void)BLITZ__FAULT(spawn_armed); /* a spawner preempted here */
        }
        if (pinned)
            blitz__u32_fetch_add(&rt->pinned_runnable, 1, BLITZ__SEQ_CST);
        rc = pinned ? BLITZ_OK : blitz__task_spawn_schedule(rt, t);
        if (rc != BLITZ_OK) {
            if (deadline)
                blitz__task_deadline_abandon(t);
            blitz__task_discard(t);
        } else {
            if (deadline)
                blitz__task_unref(t);
            if (handle)
                *handle = blitz__handle_out(t);
        }
    }
    blitz__spawn_leave(rt, entered);
    return rc;
}

BLITZ_API int blitz_spawn_ex(blitz_runtime *rt, const blitz_spawn_opts *o, blitz_task **handle) {
    return blitz__spawn(rt, o, handle, 0);
}

/* Options for a task without hooks, filled in place: built in a returned
 * copy, gcc reads the copy back with 16-byte loads of 8-byte stores, which
 * the store buffer cannot forward (a stall per field pair, on every
 * spawn). */
BLITZ_PRIVATE void blitz__plain_opts(blitz_spawn_opts *o, blitz_poll_fn poll, const void *state,
                                     size_t size) {
    memset(o, 0, sizeof *o);
    o->poll = poll;
    o->state = state;
    o->size = size;
}

BLITZ_API int blitz_spawn(blitz_runtime *rt, blitz_poll_fn poll, const void *state, size_t size,
                          blitz_task **handle) {
    blitz_spawn_opts o;
    blitz__plain_opts(&o, poll, state, size);
    return blitz_spawn_ex(rt, &o, handle);
}

typedef struct {
    blitz_fn fn;
    void *arg;
} blitz__fn_state;

static blitz_poll blitz__fn_poll(blitz_cx *cx, void *p) {
    (void)cx;
    blitz__fn_state *s = (blitz__fn_state *)p;
    s->fn(s->arg);
    return BLITZ_READY;
}

BLITZ_API int blitz_spawn_fn(blitz_runtime *rt, blitz_fn fn, void *arg, blitz_task **handle) {
    if (handle)
        *handle = NULL;
    if (!fn)
        return BLITZ_EINVAL;
    blitz__fn_state s;
    s.fn = fn;
    s.arg = arg;
    return blitz_spawn(rt, blitz__fn_poll, &s, sizeof s, handle);
}
