/* The join waker hand-off (src/core/join.c over src/core/task_state.c).
 * join_vs_complete: a task awaits a handle while the task completes. A
 *   pending join is woken exactly once by the completer, the completer
 *   reads the waker slot only after the joiner's write of it, and every
 *   waker reference is returned.
 * cancel_vs_complete: the joiner withdraws its waker (join cancel) while
 *   the task completes: the waker is dropped or woken, once.
 * The completer's part is blitz__task_finish's (core/task.c): the COMPLETE
 * transition, then the stored waker is woken when JOIN_WAKER was set. */
#include "model_task.h"
#include "model_waker.h"

#define BLITZ_CURRENT_THREAD_MODEL 0
struct blitz__context {
    blitz_runtime *rt;
    void *worker;
};
struct blitz_runtime {
    int flavor;
    blitz__atomic_u32 completion_seq;
};
static blitz__task *blitz__handle_in(const blitz_task *h, const char *fn) {
    (void)fn;
    return (blitz__task *)h;
}
static void *blitz__task_state_ptr(blitz__task *t) {
    return t;
}
static void blitz__task_finish(blitz__task *t, int cancelled) {
    (void)t;
    (void)cancelled;
    RL_ASSERT(!"not reached: the task is never idle here");
}
static void blitz__pool_cancel_task(blitz__task *t) {
    (void)t;
}
static void blitz__handle_retire(blitz_task *h, blitz__task *t) {
    (void)h;
    (void)t;
}
static blitz_runtime *blitz__task_runtime(const blitz__task *t) {
    (void)t;
    return NULL;
}
static void blitz__count_handle_released(blitz_runtime *rt) {
    (void)rt;
}
static void blitz__sleep_on_completion(blitz_runtime *rt, uint32_t seq, uint64_t ns) {
    (void)rt;
    (void)seq;
    (void)ns;
}
static blitz__context *blitz__context_get(void) {
    return NULL;
}
static void blitz__ct_wait(blitz_runtime *rt, blitz__task *t, blitz__context *c) {
    (void)rt;
    (void)t;
    (void)c;
}
static void blitz__worker_help_until(blitz__context *c, blitz__task *t) {
    (void)c;
    (void)t;
}
static void blitz__external_help_until(blitz_runtime *rt, blitz__task *t, int nested) {
    (void)rt;
    (void)t;
    (void)nested;
}

static const char *blitz__task_name_of(blitz__task *t, uint64_t s) {
    (void)t;
    (void)s;
    return NULL;
}

/* A heap copy of a waker is never needed here (one vtable). */
static void *blitz__malloc(size_t n) {
    (void)n;
    RL_ASSERT(!"not reached");
    return NULL;
}
static void blitz__free(void *p) {
    (void)p;
}

/* The runtime's table of join waker vtables, for the one vtable the
 * joiner's model waker has: index 1. */
static const blitz_waker_vtable *model_join_vt;
static const blitz_waker_vtable *blitz__join_vtable(const blitz__task *t, uint32_t idx) {
    (void)t;
    RL_ASSERT(idx == 1 && model_join_vt);
    return model_join_vt;
}
static uint32_t blitz__join_vtable_index(const blitz__task *t, const blitz_waker_vtable *vt) {
    (void)t;
    RL_ASSERT(!model_join_vt || model_join_vt == vt);
    model_join_vt = vt;
    return 1;
}

/* The task waker (task.c), which join.c stores and wakes without its
 * vtable: the model's joiner has another waker, so never reached. */
static void blitz__waker_wake_fn(const void *d) {
    (void)d;
    RL_ASSERT(!"not reached");
}
static const blitz_waker_vtable blitz__task_waker_vtable = {
    blitz__waker_wake_fn, blitz__waker_wake_fn, model_noop_clone, blitz__waker_wake_fn};

#include "core/join.c"

/* blitz__task_finish's completion, for a task with a handle. */
static void model_complete(blitz__task *t) {
    int dropped = 0;
    uint64_t prev = blitz__state_complete(t, 0, &dropped);
    RL_ASSERT(!dropped);
    if (prev & BLITZ__TASK_JOIN_WAKER)
        blitz__join_wake(t, prev);
    blitz__task_unref(t);
}

template <bool Cancel> struct join_vs_complete : rl::test_suite<join_vs_complete<Cancel>, 2> {
    blitz__task t;
    model_task joiner;
    int pending;

    void before() {
        blitz__u64_store(&t.state, blitz__state_initial(1, 0, 0), BLITZ__RELAXED);
        blitz__state_to_running(&t);
        t.join_data = NULL;
        joiner.init();
        pending = 0;
        model_freed = 0;
    }
    void thread(unsigned i) {
        if (i == 0) {
            model_complete(&t);
        } else {
            blitz_cx cx = model_cx(&joiner);
            if (blitz_join(&cx, (blitz_task *)&t) == BLITZ_PENDING) {
                pending = 1;
                if (Cancel) {
                    blitz_join_cancel(&cx, &t);
                    return;
                }
                joiner.wait_wake(0); /* a lost wake-up never returns */
                RL_ASSERT(blitz_join(&cx, (blitz_task *)&t) == BLITZ_READY);
            }
            RL_ASSERT(Cancel || blitz_task_status((blitz_task *)&t) == BLITZ_OK);
        }
    }
    void after() {
        RL_ASSERT(joiner.refs.load(rl::mo_relaxed, $) == 0);
        int wakes = joiner.wakes.load(rl::mo_relaxed, $);
        RL_ASSERT(Cancel ? wakes <= pending : wakes == pending);
        RL_ASSERT(blitz__refs(blitz__u64_load(&t.state, BLITZ__RELAXED)) == 1); /* the handle */
    }
};

int main() {
    int rc = 0;
    rc |= model_run<join_vs_complete<false>>("join waker hand-off vs complete");
    rc |= model_run<join_vs_complete<true>>("join cancel vs complete");
    return rc;
}
