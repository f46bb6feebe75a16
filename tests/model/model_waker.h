/* Stand-ins for wakers, the poll context and ops (src/core/task.c,
 * core.h), for checks of the primitives that store a waiting task's waker.
 * A model task counts its waker references and its wakes; a wake is a
 * release, and a task waits for one with acquire, as the scheduler's state
 * word orders a waker's writes before the poll it causes. */
#ifndef BLITZ_MODEL_WAKER_H
#define BLITZ_MODEL_WAKER_H
#include "model.h"

struct model_task {
    rl::atomic<int> refs;  /* waker references held anywhere */
    rl::atomic<int> wakes; /* wakes delivered */
    void init() {
        refs.store(0, rl::mo_relaxed, $);
        wakes.store(0, rl::mo_relaxed, $);
    }
    /* Blocks the calling model thread until a wake beyond `seen` arrives. */
    void wait_wake(int seen) {
        while (wakes.load(rl::mo_acquire, $) <= seen)
            rl::yield(1, $);
    }
};

static void model_waker_wake_by_ref(const void *d) {
    ((model_task *)d)->wakes.fetch_add(1, rl::mo_release, $);
}
static void model_waker_drop(const void *d) {
    int prev = ((model_task *)d)->refs.fetch_sub(1, rl::mo_relaxed, $);
    RL_ASSERT(prev > 0); /* a waker dropped or woken twice */
}
static void model_waker_wake(const void *d) {
    model_waker_wake_by_ref(d);
    model_waker_drop(d);
}
static blitz_waker model_waker_clone(const void *d);
static const blitz_waker_vtable model_waker_vtable = {model_waker_wake, model_waker_wake_by_ref,
                                                      model_waker_clone, model_waker_drop};
static blitz_waker model_waker_clone(const void *d) {
    ((model_task *)d)->refs.fetch_add(1, rl::mo_relaxed, $);
    blitz_waker w = {d, &model_waker_vtable};
    return w;
}
static void model_noop(const void *d) {
    (void)d;
}
static blitz_waker model_noop_clone(const void *d);
static const blitz_waker_vtable model_noop_vtable = {model_noop, model_noop, model_noop_clone,
                                                     model_noop};
static blitz_waker model_noop_clone(const void *d) {
    blitz_waker w = {d, &model_noop_vtable};
    return w;
}

/* The real bodies of task.c's waker functions. */
static blitz_waker blitz_waker_noop(void) {
    blitz_waker w = {NULL, &model_noop_vtable};
    return w;
}
static blitz_waker blitz_waker_clone(const blitz_waker *w) {
    if (!w || !w->vtable)
        return blitz_waker_noop();
    return w->vtable->clone(w->data);
}
static void blitz_waker_wake(blitz_waker w) {
    if (w.vtable)
        w.vtable->wake(w.data);
}
static void blitz_waker_wake_by_ref(const blitz_waker *w) {
    if (w && w->vtable)
        w->vtable->wake_by_ref(w->data);
}
static void blitz_waker_drop(blitz_waker w) {
    if (w.vtable)
        w.vtable->drop(w.data);
}
static int blitz_waker_will_wake(const blitz_waker *a, const blitz_waker *b) {
    return a && b && a->data == b->data && a->vtable == b->vtable;
}
/* A checked slot: reading it is an access Relacy orders. */
static int blitz_waker_will_wake(const model_slot<blitz_waker> *a, const blitz_waker *b) {
    blitz_waker w = *a;
    return blitz_waker_will_wake(&w, b);
}

/* The poll context: the task's borrowed waker (and what a check adds:
 * MODEL_CX_FIELDS). */
#ifndef MODEL_CX_FIELDS
#define MODEL_CX_FIELDS
#endif
struct blitz_cx {
    blitz_waker waker;
    MODEL_CX_FIELDS
};
static blitz_waker blitz_cx_waker(blitz_cx *cx) {
    return cx->waker;
}
static inline blitz_poll blitz__pending(blitz_cx *cx, blitz_cancel_fn cancel, void *op) {
    (void)cx;
    (void)cancel;
    (void)op;
    return BLITZ_PENDING;
}
static inline blitz_poll blitz__record(blitz_cx *cx, blitz_poll r, blitz_cancel_fn cancel,
                                       void *op) {
    return r == BLITZ_PENDING ? blitz__pending(cx, cancel, op) : r;
}
static inline blitz_cx model_cx(model_task *t) {
    blitz_cx cx = {{t, &model_waker_vtable}};
    return cx;
}

/* Ops are not run here: constructors build them, blocking forms abort. */
#define BLITZ__OP_ADAPTER(name, type, obj, call)            \
    static blitz_poll name(blitz_cx *cx, void *obj##_arg) { \
        type *obj = (type *)obj##_arg;                      \
        return call;                                        \
    }
static blitz_op blitz_op_make(blitz_poll_fn poll, blitz_cancel_fn cancel, void *obj) {
    (void)poll;
    (void)cancel;
    (void)obj;
    blitz_op op;
    memset(&op, 0, sizeof op);
    return op;
}
static int blitz_op_run_blocking(blitz_runtime *rt, blitz_op op) {
    (void)rt;
    (void)op;
    RL_ASSERT(!"blocking forms are not modelled");
    return BLITZ_EINVAL;
}
#endif
