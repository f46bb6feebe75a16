/* Join handles: await, wait, status, state, cancel, release.
 *
 * The join waker protocol (Tokio's JOIN_WAKER): the handle's owner writes
 * join_data only while JOIN_WAKER is clear, then sets the bit with a
 * release CAS that fails once the task is COMPLETE. The completer clears the
 * bit in its COMPLETE transition and then only reads the slot. To replace a
 * stored waker the owner first clears the bit (a CAS that also fails on
 * COMPLETE). So the slot is never written while another thread may read it.
 *
 * The slot is one word, join_data; the waker's vtable is a 3-bit index
 * set in the state word by the same CAS as JOIN_WAKER (task_state.c):
 * the task waker's, one of the few others the runtime has seen
 * (blitz__join_vtable), or, past those, the whole waker in a heap copy. */
#include "core.h"

static inline uint32_t blitz__join_vt_of(uint64_t s) {
    return (uint32_t)((s & BLITZ__JOIN_VT_MASK) >> BLITZ__JOIN_VT_SHIFT);
}

/* The stored waker, as `s` (a state word with JOIN_WAKER) names it. */
static blitz_waker blitz__join_waker_get(const blitz__task *t, uint64_t s) {
    uint32_t vt = blitz__join_vt_of(s);
    const void *data = t->join_data;
    if (vt == BLITZ__JOIN_VT_BOXED)
        return *(const blitz_waker *)data;
    blitz_waker w = {data, blitz__join_vtable(t, vt)};
    return w;
}

/* Takes the stored waker out of its slot: the caller owns the returned
 * reference. */
static blitz_waker blitz__join_waker_take(blitz__task *t, uint64_t s) {
    blitz_waker w = blitz__join_waker_get(t, s);
    if (blitz__join_vt_of(s) == BLITZ__JOIN_VT_BOXED) {
        const void *box = t->join_data;
        blitz__free((void *)(uintptr_t)box);
    }
    return w;
}

/* Stores a clone of `w` in the slot (JOIN_WAKER clear: the owner's) and
 * returns the state bits that name it; 0 with nothing stored when a heap
 * copy was needed and memory ran out. */
static uint64_t blitz__join_waker_put(blitz__task *t, const blitz_waker *w) {
    /* The common joiner, a task: its waker's clone, without the calls. */
    if (BLITZ__LIKELY(w->vtable == &blitz__task_waker_vtable)) {
        blitz__task_ref((blitz__task *)(uintptr_t)w->data);
        t->join_data = w->data;
        return BLITZ__TASK_JOIN_WAKER;
    }
    blitz_waker c = blitz_waker_clone(w);
    uint32_t vt = blitz__join_vtable_index(t, c.vtable);
    if (vt == BLITZ__JOIN_VT_BOXED) {
        blitz_waker *box = (blitz_waker *)blitz__malloc(sizeof *box);
        if (!box) {
            blitz_waker_drop(c);
            return 0;
        }
        *box = c;
        t->join_data = box;
    } else {
        t->join_data = c.data;
    }
    return BLITZ__TASK_JOIN_WAKER | (uint64_t)vt << BLITZ__JOIN_VT_SHIFT;
}

BLITZ_PRIVATE void blitz__join_wake(blitz__task *t, uint64_t prev) {
    /* The common joiner, a task: its waker's wake, without the look-up. */
    if (BLITZ__LIKELY(blitz__join_vt_of(prev) == 0))
        blitz__waker_wake_fn(t->join_data);
    else
        blitz_waker_wake(blitz__join_waker_take(t, prev));
}

BLITZ_API blitz_poll blitz_join(blitz_cx *cx, blitz_task *h) {
    BLITZ_ASSERT(cx && h);
    if (!cx || !h)
        return BLITZ_READY; /* blitz_task_status reports the misuse */
    blitz__task *t = blitz__handle_in(h, __func__);
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (blitz__state_is_complete(s))
        return BLITZ_READY;
    blitz_waker mine = blitz_cx_waker(cx);
    if (s & BLITZ__TASK_JOIN_WAKER) {
        /* Reading the slot races only with the completer's read of it; a
         * heap copy is not read (the completer frees it): it is replaced. */
        if (blitz__join_vt_of(s) != BLITZ__JOIN_VT_BOXED) {
            blitz_waker cur = blitz__join_waker_get(t, s);
            if (blitz_waker_will_wake(&cur, &mine))
                return blitz__pending(cx, blitz_join_cancel, t);
        }
        /* A different waker is stored (the handle moved to another task):
         * take the slot back before overwriting it. */
        for (;;) {
            if (blitz__state_is_complete(s))
                return BLITZ_READY;
            if (blitz__u64_cas_weak(&t->state, &s, s & ~BLITZ__TASK_JOIN_WAKER, BLITZ__ACQ_REL))
                break;
        }
        blitz_waker_drop(blitz__join_waker_take(t, s));
    }
    uint64_t bits = blitz__join_waker_put(t, &mine);
    if (BLITZ__UNLIKELY(!bits)) {
        /* No memory to store the waker: be polled again instead. */
        blitz_waker_wake_by_ref(&mine);
        return blitz__pending(cx, blitz_join_cancel, t);
    }
    s = blitz__u64_load(&t->state, BLITZ__RELAXED);
    for (;;) {
        if (blitz__state_is_complete(s)) {
            blitz_waker_drop(blitz__join_waker_take(t, bits));
            return BLITZ_READY;
        }
        if (blitz__u64_cas_weak(&t->state, &s, (s & ~BLITZ__JOIN_VT_MASK) | bits, BLITZ__ACQ_REL))
            return blitz__pending(cx, blitz_join_cancel, t);
    }
}

BLITZ_API void blitz_join_cancel(blitz_cx *cx, void *handle) {
    (void)cx;
    if (!handle)
        return;
    blitz__task *t = blitz__handle_in((blitz_task *)handle, __func__);
    /* Take the stored waker back unless the task completed (then the
     * completer owns and consumes it). */
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    for (;;) {
        if (blitz__state_is_complete(s) || !(s & BLITZ__TASK_JOIN_WAKER))
            return;
        if (blitz__u64_cas_weak(&t->state, &s, s & ~BLITZ__TASK_JOIN_WAKER, BLITZ__ACQ_REL))
            break;
    }
    blitz_waker_drop(blitz__join_waker_take(t, s));
}

BLITZ_API int blitz_task_status(const blitz_task *h) {
    if (!h)
        return BLITZ_EINVAL;
    const blitz__task *t = blitz__handle_in(h, __func__);
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    if (!blitz__state_is_complete(s))
        return BLITZ_EAGAIN;
    if (!(s & BLITZ__TASK_OUTCOME_CANCELLED))
        return BLITZ_OK;
    return (s & BLITZ__TASK_TIMED_OUT) ? BLITZ_ETIMEDOUT : BLITZ_ECANCELED;
}

BLITZ_API void *blitz_task_state(blitz_task *h) {
    if (!h)
        return NULL;
    blitz__task *t = blitz__handle_in(h, __func__);
    if (!blitz__state_is_complete(blitz__u64_load(&t->state, BLITZ__ACQUIRE)))
        return NULL;
    return blitz__task_state_ptr(t);
}

BLITZ_API int blitz_task_cancel(blitz_task *h) {
    if (!h)
        return BLITZ_EINVAL;
    blitz__task *t = blitz__handle_in(h, __func__);
    /* An idle task is claimed (taken to RUNNING) and completed here. */
    if (blitz__state_cancel(t))
        blitz__task_finish(t, 1);
    else if (blitz__u64_load(&t->state, BLITZ__RELAXED) & BLITZ__TASK_BLOCKING)
        blitz__pool_cancel_task(t); /* not started: out of the pool's queue now */
    return BLITZ_OK;
}

BLITZ_API int blitz_task_release(blitz_task **tp) {
    if (!tp)
        return BLITZ_EINVAL;
    blitz_task *h = *tp;
    if (!h)
        return BLITZ_ERELEASED;
    blitz__task *t = blitz__handle_in(h, __func__);
    *tp = NULL;
    blitz__handle_retire(h, t);
    blitz_runtime *rt = blitz__task_runtime(t);
    uint64_t s = blitz__u64_load(&t->state, BLITZ__RELAXED), next;
    for (;;) {
        BLITZ_ASSERT((s & BLITZ__TASK_JOIN_INTEREST) && "task handle released twice");
        if (!(s & BLITZ__TASK_JOIN_INTEREST))
            return BLITZ_ERELEASED;
        next = (s & ~(BLITZ__TASK_JOIN_INTEREST | BLITZ__TASK_JOIN_WAKER)) - BLITZ__TASK_REF_ONE;
        if (!blitz__state_is_complete(s))
            next |= BLITZ__TASK_DETACHED;
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQ_REL))
            break;
    }
    blitz__count_handle_released(rt);
    /* Before completion a stored join waker is ours again to drop. */
    if (!blitz__state_is_complete(s) && (s & BLITZ__TASK_JOIN_WAKER))
        blitz_waker_drop(blitz__join_waker_take(t, s));
    if (blitz__refs(next) == 0)
        blitz__task_free(t);
    return BLITZ_OK;
}

/* Marks that a thread will sleep on the completion word for `t`. Returns 0
 * when `t` is already complete. */
BLITZ_PRIVATE int blitz__task_set_thread_joiner(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    for (;;) {
        if (blitz__state_is_complete(s))
            return 0;
        if (s & BLITZ__TASK_THREAD_JOINER)
            return 1;
        if (blitz__u64_cas_weak(&t->state, &s, s | BLITZ__TASK_THREAD_JOINER, BLITZ__ACQ_REL))
            return 1;
    }
}

BLITZ_PRIVATE int blitz__task_is_complete(const blitz__task *t) {
    return blitz__state_is_complete(blitz__u64_load(&t->state, BLITZ__ACQUIRE));
}

/* Sleeps until `t` completes, the runtime's completion word changes, or
 * timeout_ns passes. Returns 1 once `t` is complete. */
BLITZ_PRIVATE int blitz__wait_completion(blitz_runtime *rt, blitz__task *t, uint64_t timeout_ns) {
    /* Read the word before announcing ourselves: a completion after the
     * announcement bumps it, so the futex wait cannot miss it. */
    uint32_t seq = blitz__u32_load(&rt->completion_seq, BLITZ__ACQUIRE);
    if (!blitz__task_set_thread_joiner(t))
        return 1;
    blitz__sleep_on_completion(rt, seq, timeout_ns);
    return blitz__task_is_complete(t);
}

BLITZ_API int blitz_join_blocking(blitz_task *h) {
    if (!h)
        return BLITZ_EINVAL;
    blitz__task *t = blitz__handle_in(h, __func__);
    if (!blitz__task_is_complete(t)) {
        blitz_runtime *rt = blitz__task_runtime(t);
        blitz__context *ctx = blitz__context_get();
        if (rt->flavor == BLITZ_CURRENT_THREAD)
            blitz__ct_wait(rt, t, ctx);
        else if (ctx && ctx->rt == rt && ctx->worker)
            blitz__worker_help_until(ctx, t);
        else
            blitz__external_help_until(rt, t, ctx && ctx->rt == rt);
    }
    int rc = blitz_task_status(h);
    /* Only a wait inside one of the runtime's own polls returns unfinished:
     * the runtime is shutting down and waits for that poll to end. */
    return rc == BLITZ_EAGAIN ? BLITZ_ESHUTDOWN : rc;
}

BLITZ_API uint64_t blitz_task_id(const blitz_task *h) {
    return h ? blitz__handle_in(h, __func__)->id : 0;
}

BLITZ_API const char *blitz_task_name(const blitz_task *h) {
    if (!h)
        return NULL;
    blitz__task *t = blitz__handle_in(h, __func__);
    /* Relaxed: HAS_NAME and the slot are fixed before the handle exists. */
    return blitz__task_name_of(t, blitz__u64_load(&t->state, BLITZ__RELAXED));
}
