/* Ops as values (blitz_op) and the blocking form of any op: blitz_op_run_blocking
 * polls it on the calling thread and sleeps on a per-thread parker between
 * polls. */
#include "../time/time.h"
#include "../core/waitq.h"

BLITZ_API blitz_op blitz_op_make(blitz_poll_fn poll, blitz_cancel_fn cancel, void *arg) {
    blitz_op op;
    op.poll = poll;
    op.cancel = cancel;
    op.arg = arg;
    return op;
}

BLITZ__OP_ADAPTER(blitz__join_op_poll, blitz_task, t, blitz_join(cx, t))
BLITZ_API blitz_op blitz_op_join(blitz_task *t) {
    return blitz_op_make(blitz__join_op_poll, blitz_join_cancel, t);
}

BLITZ__OP_ADAPTER(blitz__sleep_op_poll, blitz_timer, t, blitz_sleep_until(cx, t, t->deadline))
BLITZ_API blitz_op blitz_op_sleep_until(blitz_timer *t, uint64_t deadline_ns) {
    if (t)
        t->deadline = deadline_ns;
    return blitz_op_make(blitz__sleep_op_poll, blitz_timer_cancel, t);
}

BLITZ__OP_ADAPTER(blitz__interval_op_poll, blitz_interval, iv, blitz_interval_tick(cx, iv))
static void blitz__interval_op_cancel(blitz_cx *cx, void *iv) {
    if (iv)
        blitz_timer_cancel(cx, &((blitz_interval *)iv)->timer);
}
BLITZ_API blitz_op blitz_op_interval_tick(blitz_interval *iv) {
    return blitz_op_make(blitz__interval_op_poll, blitz__interval_op_cancel, iv);
}

BLITZ__OP_ADAPTER(blitz__spawn_blocking_op_poll, blitz_blocking_spawn, sp,
                  sp ? blitz_spawn_blocking_await(cx, sp, sp->blitz__opts) : BLITZ_READY)
BLITZ_API blitz_op blitz_op_spawn_blocking_await(blitz_blocking_spawn *op,
                                                 const blitz_blocking_opts *opts) {
    if (op)
        op->blitz__opts = opts;
    return blitz_op_make(blitz__spawn_blocking_op_poll, blitz_spawn_blocking_cancel, op);
}

/* ---- the thread waker ---------------------------------------------------------- */

/* A parker that wakers can reach after the thread stopped waiting: a
 * waker may be woken after the op it was registered with completed (wakes
 * happen outside the primitives' locks), so the parker is reference
 * counted. Each thread keeps one for its whole life (released when the
 * thread exits) and hands out references. */
typedef struct blitz__thread_parker {
    blitz__atomic_u32 refs;
    blitz__parker parker;
} blitz__thread_parker;

static void blitz__thread_parker_unref(blitz__thread_parker *tp) {
    /* Acq_rel: the last owner sees every other owner's unpark finished
     * before it destroys the parker. */
    if (blitz__u32_fetch_sub(&tp->refs, 1, BLITZ__ACQ_REL) == 1) {
        blitz__parker_destroy(&tp->parker);
        BLITZ_FREE(tp);
    }
}

static void blitz__thread_waker_wake_by_ref(const void *data) {
    blitz__parker_unpark(&((blitz__thread_parker *)data)->parker);
}
static void blitz__thread_waker_wake(const void *data) {
    blitz__thread_waker_wake_by_ref(data);
    blitz__thread_parker_unref((blitz__thread_parker *)data);
}
static void blitz__thread_waker_drop(const void *data) {
    blitz__thread_parker_unref((blitz__thread_parker *)data);
}
static blitz_waker blitz__thread_waker_clone(const void *data);
static const blitz_waker_vtable blitz__thread_waker_vtable = {
    blitz__thread_waker_wake, blitz__thread_waker_wake_by_ref, blitz__thread_waker_clone,
    blitz__thread_waker_drop};
static blitz_waker blitz__thread_waker_clone(const void *data) {
    blitz__u32_fetch_add(&((blitz__thread_parker *)data)->refs, 1, BLITZ__RELAXED);
    blitz_waker w = {data, &blitz__thread_waker_vtable};
    return w;
}

static blitz__tls_key blitz__thread_parker_key;
static blitz__once blitz__thread_parker_once = BLITZ__ONCE_STATIC;
static BLITZ__THREAD_LOCAL blitz__thread_parker *blitz__thread_parker_cached;

/* Runs at the thread's exit, as the system calls it (BLITZ__TLS_DTOR). */
static void BLITZ__TLS_DTOR blitz__thread_parker_release(void *p) {
    blitz__thread_parker_unref((blitz__thread_parker *)p);
}
static void blitz__thread_parker_key_init(void) {
    (void)blitz__tls_key_create(&blitz__thread_parker_key, blitz__thread_parker_release);
}

/* The calling thread's parker, created on first use; NULL when out of
 * memory. */
static blitz__thread_parker *blitz__thread_parker_get(void) {
    blitz__thread_parker *tp = blitz__thread_parker_cached;
    if (BLITZ__LIKELY(tp != NULL))
        return tp;
    blitz__once_run(&blitz__thread_parker_once, blitz__thread_parker_key_init);
    tp = (blitz__thread_parker *)BLITZ_MALLOC(sizeof *tp);
    if (!tp)
        return NULL;
    blitz__u32_store(&tp->refs, 1, BLITZ__RELAXED);
    blitz__parker_init(&tp->parker);
    if (blitz__tls_set(blitz__thread_parker_key, tp) != 0) {
        blitz__parker_destroy(&tp->parker);
        BLITZ_FREE(tp);
        return NULL;
    }
    blitz__thread_parker_cached = tp;
    return tp;
}

/* A poll context whose waker is `waker` (no task). */
BLITZ_PRIVATE void blitz__cx_init_waker(blitz_cx *cx, blitz__context *ctx, blitz_waker waker) {
    cx->task = NULL;
    cx->ctx = ctx;
    cx->yielded = 0;
    cx->waker = waker;
}

/* With a runtime, the op runs inside a task of that runtime: a
 * current-thread runtime is then driven by this thread while it waits, and
 * a shutdown cancels the wait (and withdraws the op) instead of leaving the
 * thread asleep on a timer that will never fire. A withdrawn op may still
 * be in the kernel (an io_uring receive): it holds the task until its
 * completion, as it does any task's memory, so the wait returns only once
 * the task is freed, and the op is the caller's again. */
typedef struct blitz__op_task {
    blitz_op op;
    blitz__atomic_u32 *freed; /* on the waiting thread's stack */
    blitz__thread_parker *tp; /* the waiting thread's; a reference of its own */
} blitz__op_task;

static blitz_poll blitz__op_task_poll(blitz_cx *cx, void *state) {
    blitz__op_task *s = (blitz__op_task *)state;
    return s->op.poll(cx, s->op.arg);
}
static void blitz__op_task_cancel(void *state) {
    blitz__op_task *s = (blitz__op_task *)state;
    if (s->op.cancel)
        s->op.cancel(NULL, s->op.arg);
}
/* The task's last reference is gone: nothing uses the op any more. */
static void blitz__op_task_drop(void *state) {
    blitz__op_task *s = (blitz__op_task *)state;
    blitz__thread_parker *tp = s->tp;
    /* Release: the waiter that sees the flag sees every use of the op
     * before it. After the store the waiter may return (its stack, the
     * flag, is gone): only the parker, kept by our reference, is used. */
    blitz__u32_store(s->freed, 1, BLITZ__RELEASE);
    blitz__parker_unpark(&tp->parker);
    blitz__thread_parker_unref(tp);
}

static int blitz__op_wait_in_task(blitz_runtime *rt, blitz_op op) {
    blitz__thread_parker *tp = blitz__thread_parker_get();
    if (!tp)
        return BLITZ_ENOMEM;
    blitz__atomic_u32 freed;
    blitz__u32_store(&freed, 0, BLITZ__RELAXED);
    blitz__u32_fetch_add(&tp->refs, 1, BLITZ__RELAXED);
    blitz__op_task st = {op, &freed, tp};
    blitz_spawn_opts opts;
    blitz__plain_opts(&opts, blitz__op_task_poll, &st, sizeof st);
    opts.cancel = blitz__op_task_cancel;
    opts.drop = blitz__op_task_drop;
    blitz_task *t = NULL;
    int rc = blitz_spawn_ex(rt, &opts, &t);
    if (rc != BLITZ_OK) {
        blitz__thread_parker_unref(tp); /* a task never queued runs no drop */
        return rc;
    }
    rc = blitz_join_blocking(t);
    blitz_task_release(&t);
    while (!blitz__u32_load(&freed, BLITZ__ACQUIRE))
        blitz__parker_park(&tp->parker, 0);
    return rc;
}

/* Whether the calling thread may block: not a worker or a current-thread
 * driver, and not polling a task, unless that task is a blocking-pool job
 * (a pool thread runs nothing else, so blocking it holds up nobody). */
static int blitz__thread_may_block(const blitz__context *c) {
    if (!c)
        return 1;
    if (c->worker || c->ct_driver)
        return 0;
    return !c->current ||
           (blitz__u64_load(&c->current->state, BLITZ__RELAXED) & BLITZ__TASK_BLOCKING) != 0;
}

BLITZ_API int blitz_op_run_blocking(blitz_runtime *rt, blitz_op op) {
    if (!op.poll)
        return BLITZ_EINVAL;
    blitz__context *home = blitz__context_get();
    if (!blitz__thread_may_block(home))
        return BLITZ_EDEADLK;
    if (rt)
        return blitz__op_wait_in_task(rt, op);
    blitz__thread_parker *tp = blitz__thread_parker_get();
    if (!tp)
        return BLITZ_ENOMEM;
    blitz__context ctx;
    blitz__context_init(&ctx, NULL);
    blitz_cx cx;
    blitz_waker borrowed = {tp, &blitz__thread_waker_vtable};
    blitz__cx_init_waker(&cx, &ctx, borrowed);
    for (;;) {
        blitz_poll r = op.poll(&cx, op.arg);
        /* A coroutine's site note left in this thread's context: no task
         * here takes it (one polling further out would find its own). */
        if (home && !home->current)
            home->note.resume = NULL;
        if (r == BLITZ_READY)
            return BLITZ_OK;
        blitz__parker_park(&tp->parker, 0);
    }
}
