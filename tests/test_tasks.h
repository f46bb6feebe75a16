/* A scripted task for the cancellation, drop and shutdown tests: it counts
 * its polls in a probe the test can read while it lives, and its drop
 * function records what it saw. Plus a joiner task, worker blockers, and a
 * way to drive a current-thread runtime. */
#ifndef BLITZ_TEST_TASKS_H
#define BLITZ_TEST_TASKS_H

#include "test_util.h"

/* What a test can see of a task while it lives (its state is readable only
 * once it has finished). */
typedef struct {
    atomic_int polls;
    atomic_int drops;
    atomic_long done; /* 1 once a poll returned READY */
    atomic_int saw_cancelled;
    atomic_int in_poll;     /* CM_SPIN: inside the first poll */
    atomic_int go;          /* CM_SPIN: let the first poll continue */
    atomic_int spin_exited; /* CM_SPIN: the first poll is about to return */
    atomic_int cancel_rc;
    atomic_long dropped_value;
} tt_probe;

enum {
    CM_READY,       /* READY on the first poll */
    CM_FOREVER,     /* PENDING, and nobody will wake it */
    CM_GATE,        /* waits on a gate, then READY */
    CM_YIELD_ONCE,  /* yields once, then READY */
    CM_YIELD_LOOP,  /* yields forever */
    CM_SPIN,        /* first poll: spins until probe->go, then does `then` */
    CM_SELF,        /* first poll: cancels itself, then does `then` */
    CM_SELF_RELEASE /* first poll: releases its own handle, then does `then` */
};

/* How the first poll of CM_SPIN / CM_SELF ends. */
enum { THEN_YIELD, THEN_WAKE, THEN_IDLE, THEN_READY };

typedef struct {
    int mode, then;
    long value;
    tu_gate *gate;
    blitz_task **self;
    tt_probe *pr;
} tt_task;

static inline blitz_poll tt_finish(tt_task *s) {
    s->value += 1000;
    atomic_store(&s->pr->done, 1);
    return BLITZ_READY;
}

static inline blitz_poll tt_then(blitz_cx *cx, tt_task *s) {
    switch (s->then) {
    case THEN_YIELD:
        blitz_cx_yield(cx);
        return BLITZ_PENDING;
    case THEN_WAKE: {
        blitz_waker w = blitz_cx_waker(cx);
        blitz_waker_wake_by_ref(&w);
        return BLITZ_PENDING;
    }
    case THEN_IDLE:
        return BLITZ_PENDING;
    default:
        return tt_finish(s);
    }
}

static inline blitz_poll tt_task_poll(blitz_cx *cx, void *p) {
    tt_task *s = p;
    tt_probe *pr = s->pr;
    int n = atomic_fetch_add(&pr->polls, 1) + 1;
    if (blitz_cx_cancelled(cx))
        atomic_store(&pr->saw_cancelled, 1);
    switch (s->mode) {
    case CM_READY:
        return tt_finish(s);
    case CM_FOREVER:
        return BLITZ_PENDING;
    case CM_GATE:
        if (tu_gate_wait(cx, s->gate) == BLITZ_PENDING)
            return BLITZ_PENDING;
        return tt_finish(s);
    case CM_YIELD_ONCE:
        if (n == 1) {
            blitz_cx_yield(cx);
            return BLITZ_PENDING;
        }
        return tt_finish(s);
    case CM_YIELD_LOOP:
        blitz_cx_yield(cx);
        return BLITZ_PENDING;
    case CM_SPIN: {
        if (n > 1)
            return tt_finish(s);
        atomic_store(&pr->in_poll, 1);
        while (!atomic_load(&pr->go))
            tu_spin_pause();
        if (blitz_cx_cancelled(cx))
            atomic_store(&pr->saw_cancelled, 1);
        blitz_poll r = tt_then(cx, s);
        atomic_store(&pr->spin_exited, 1);
        return r;
    }
    case CM_SELF:
        if (n > 1)
            return tt_finish(s);
        atomic_store(&pr->cancel_rc, blitz_task_cancel(*s->self));
        if (blitz_cx_cancelled(cx))
            atomic_store(&pr->saw_cancelled, 1);
        return tt_then(cx, s);
    default: /* CM_SELF_RELEASE */
        if (n > 1)
            return tt_finish(s);
        atomic_store(&pr->cancel_rc, blitz_task_release(s->self));
        return tt_then(cx, s);
    }
}

static inline void tt_task_drop(void *p) {
    tt_task *s = p;
    atomic_store(&s->pr->dropped_value, s->value);
    atomic_fetch_add(&s->pr->drops, 1);
}

/* Spawns a tt_task (with a drop function); returns its handle, or NULL
 * when spawned detached. */
static inline blitz_task *tt_spawn_ex(blitz_runtime *rt, int mode, int then, tu_gate *gate,
                                      blitz_task **self, tt_probe *pr, int with_handle) {
    tt_task s = {mode, then, 7, gate, self, pr};
    blitz_spawn_opts o = {tt_task_poll, &s, sizeof s, tt_task_drop, NULL, NULL, NULL};
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn_ex(rt, &o, with_handle ? &h : NULL));
    return h;
}

static inline blitz_task *tt_spawn(blitz_runtime *rt, int mode, tu_gate *gate, tt_probe *pr) {
    return tt_spawn_ex(rt, mode, THEN_READY, gate, NULL, pr, 1);
}

static inline tt_task *tt_state(blitz_task *h) {
    tt_task *s = blitz_task_state(h);
    CHECK_NOT_NULL(s);
    return s;
}

/* Releases a handle and waits for the drop function (the thread that
 * completed the task may hold its own reference a moment longer). */
static inline void tt_release_dropped(blitz_task **h, tt_probe *pr) {
    CHECK_EQ(atomic_load(&pr->drops), 0);
    CHECK_OK(blitz_task_release(h));
    TU_WAIT_GE(&pr->drops, 1, 5.0);
    CHECK_EQ(atomic_load(&pr->drops), 1);
}

/* A task that joins another and records the status it found. */
typedef struct {
    blitz_task *target;
    int status;
    int polls;
    int joined;
} tt_joiner;

static inline blitz_poll tt_joiner_poll(blitz_cx *cx, void *p) {
    tt_joiner *s = p;
    s->polls++;
    if (blitz_join(cx, s->target) == BLITZ_PENDING)
        return BLITZ_PENDING;
    s->joined = 1;
    s->status = blitz_task_status(s->target);
    return BLITZ_READY;
}

static inline blitz_task *tt_spawn_joiner(blitz_runtime *rt, blitz_task *target) {
    tt_joiner j = {target, 1, 0, 0};
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, tt_joiner_poll, &j, sizeof j, &h));
    return h;
}

/* Waits for a joiner, returns the status it saw, releases it. */
static inline int tt_joiner_result(blitz_task **j) {
    CHECK_OK(blitz_join_blocking(*j));
    tt_joiner *s = blitz_task_state(*j);
    CHECK_NOT_NULL(s);
    CHECK_EQ(s->joined, 1);
    int st = s->status;
    CHECK_OK(blitz_task_release(j));
    return st;
}

/* Drives a current-thread runtime until everything queued so far has been
 * polled: a yield lets every other runnable task run first. */
static inline void tt_drive_ct(blitz_runtime *rt) {
    tt_probe pr;
    memset(&pr, 0, sizeof pr);
    blitz_task *h = tt_spawn(rt, CM_YIELD_ONCE, NULL, &pr);
    CHECK_OK(blitz_join_blocking(h));
    CHECK_OK(blitz_task_release(&h));
}

typedef struct {
    blitz_task *h;
    int rc;
    atomic_int started;
} tt_waiter_arg;

static inline void *tt_waiter_main(void *p) {
    tt_waiter_arg *a = p;
    atomic_store(&a->started, 1);
    a->rc = blitz_join_blocking(a->h);
    return NULL;
}

/* Occupies every worker of a multi-thread runtime with a poll that spins
 * until released, so that what is spawned next stays queued. */
typedef struct {
    atomic_int started, release, finished;
    uint32_t n;
} tt_blockers;

static inline blitz_poll tt_blocker_poll(blitz_cx *cx, void *p) {
    (void)cx;
    tt_blockers *b = *(tt_blockers **)p;
    atomic_fetch_add(&b->started, 1);
    while (!atomic_load(&b->release))
        tu_spin_pause();
    atomic_fetch_add(&b->finished, 1); /* the last touch of *b */
    return BLITZ_READY;
}

static inline void tt_block(blitz_runtime *rt, uint32_t n, tt_blockers *b) {
    atomic_store(&b->started, 0);
    atomic_store(&b->release, 0);
    atomic_store(&b->finished, 0);
    b->n = n;
    for (uint32_t i = 0; i < n; i++) {
        CHECK_OK(blitz_spawn(rt, tt_blocker_poll, &b, sizeof b, NULL));
        TU_WAIT_GE(&b->started, i + 1, 10.0);
    }
}

static inline void tt_unblock(tt_blockers *b) {
    atomic_store(&b->release, 1);
    TU_WAIT_GE(&b->finished, b->n, 10.0);
}

#endif
