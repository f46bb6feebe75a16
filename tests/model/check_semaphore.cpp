/* The semaphore's FIFO hand-off (src/sync/semaphore.c, with the real wait
 * queue, waiter protocol and word lock of sync_internal.h and waitq.h).
 * handoff: a task acquires while another releases. The task gets the
 *   permit, either lock-free or handed over while it waits (then it is
 *   woken exactly once), and what the releaser wrote before releasing
 *   happens before the acquirer's read, whether it waits for the wake or
 *   is polled for another reason: a mutex on top is a mutex.
 * cancel_vs_release: an acquire of 2 takes the one permit there is and
 *   waits; it is cancelled while another permit is released. Both permits
 *   end up in the pool either way (the partial fill goes back), never lost
 *   and never counted twice, and the waker is dropped or woken once.
 * queued_vs_try: an acquire of 2 waits holding the one permit there was;
 *   a lock-free try_acquire must not take the permit released for it. */
#include "model.h"
#define BLITZ_STATIC 1
#include "api/blitz_api.h"
#include "model_waker.h"

#define BLITZ__CORE_H
#define BLITZ__HAS_FUTEX 0 /* the word lock is the portable TTAS lock */
#include "sync/semaphore.c"

struct sem_env {
    blitz_semaphore sem;
    blitz__atomic_u64 state;
    blitz__atomic_u32 lock;

    void init(size_t permits) {
        model_unbind_all();
        blitz_semaphore_init(&sem, permits);
        blitz__u64_store(&state, (uint64_t)permits << BLITZ__SEM_SHIFT, BLITZ__RELAXED);
        blitz__u32_store(&lock, 0, BLITZ__RELAXED);
        model_bind(&sem.blitz__state, &state);
        model_bind(&sem.blitz__lock, &lock);
    }
};
struct op_env {
    blitz_semaphore_acquire_op op;
    blitz__atomic_u32 wstate;
    void init() {
        memset(&op, 0, sizeof op);
        blitz__u32_store(&wstate, BLITZ__WAITER_IDLE, BLITZ__RELAXED);
        model_bind(&op.blitz__w.blitz__state, &wstate);
    }
};

/* Acquires n for task `t`, waiting for wakes as the scheduler would, or
 * (polled) polling again and again as a task woken by something else. */
static int model_acquire(blitz_semaphore *sem, blitz_semaphore_acquire_op *op, model_task *t,
                         size_t n, bool polled = false) {
    blitz_cx cx = model_cx(t);
    int seen = 0;
    while (blitz_semaphore_acquire(&cx, op, sem, n) == BLITZ_PENDING) {
        if (polled) {
            rl::yield(1, $);
            continue;
        }
        t->wait_wake(seen); /* a lost wake-up never returns */
        seen = t->wakes.load(rl::mo_relaxed, $);
    }
    return op->result;
}

template <bool Polled> struct handoff : rl::test_suite<handoff<Polled>, 2> {
    sem_env s;
    op_env o;
    model_task a;
    rl::var<int> data;

    void before() {
        s.init(0);
        o.init();
        a.init();
        data($) = 0;
    }
    void thread(unsigned i) {
        if (i == 0) {
            RL_ASSERT(model_acquire(&s.sem, &o.op, &a, 1, Polled) == BLITZ_OK);
            RL_ASSERT(data($) == 1);
        } else {
            data($) = 1;
            RL_ASSERT(blitz_semaphore_release(&s.sem, 1) == BLITZ_OK);
        }
    }
    void after() {
        RL_ASSERT(blitz_semaphore_available(&s.sem) == 0);
        RL_ASSERT(a.refs.load(rl::mo_relaxed, $) == 0);
        RL_ASSERT(a.wakes.load(rl::mo_relaxed, $) <= 1);
    }
};

struct cancel_vs_release : rl::test_suite<cancel_vs_release, 2> {
    sem_env s;
    op_env o;
    model_task a;

    void before() {
        s.init(1);
        o.init();
        a.init();
    }
    void thread(unsigned i) {
        if (i == 0) {
            blitz_cx cx = model_cx(&a);
            (void)blitz_semaphore_acquire(&cx, &o.op, &s.sem, 2);
            if (blitz__waiter_state(&o.op.blitz__w) != BLITZ__WAITER_IDLE)
                blitz_semaphore_acquire_cancel(&cx, &o.op);
            else if (o.op.result == BLITZ_OK)
                blitz_semaphore_release(&s.sem, 2); /* got both: give them back */
        } else {
            RL_ASSERT(blitz_semaphore_release(&s.sem, 1) == BLITZ_OK);
        }
    }
    void after() {
        RL_ASSERT(blitz_semaphore_available(&s.sem) == 2);
        RL_ASSERT(blitz__waitq_empty(&s.sem.blitz__waiters));
        RL_ASSERT((blitz__u64_load(&s.state, BLITZ__RELAXED) & BLITZ__SEM_WAITERS) == 0);
        RL_ASSERT(a.refs.load(rl::mo_relaxed, $) == 0);
    }
};

struct queued_vs_try : rl::test_suite<queued_vs_try, 3> {
    sem_env s;
    op_env o;
    model_task a;
    int tried;

    void before() {
        s.init(1);
        o.init();
        a.init();
        tried = 0;
    }
    void thread(unsigned i) {
        if (i == 0) {
            RL_ASSERT(model_acquire(&s.sem, &o.op, &a, 2) == BLITZ_OK);
            RL_ASSERT(blitz_semaphore_release(&s.sem, 2) == BLITZ_OK);
        } else if (i == 1) {
            RL_ASSERT(blitz_semaphore_release(&s.sem, 1) == BLITZ_OK);
        } else if (blitz_semaphore_try_acquire(&s.sem, 1) == BLITZ_OK) {
            tried = 1;
            RL_ASSERT(blitz_semaphore_release(&s.sem, 1) == BLITZ_OK);
        }
    }
    void after() {
        RL_ASSERT(blitz_semaphore_available(&s.sem) == 2);
        RL_ASSERT(a.refs.load(rl::mo_relaxed, $) == 0);
    }
};

int main() {
    int rc = 0;
    rc |= model_run<handoff<false>>("semaphore hand-off, woken", 3);
    rc |= model_run<handoff<true>>("semaphore hand-off, polled", 3);
    rc |= model_run<cancel_vs_release>("semaphore cancel vs release", 3);
    rc |= model_run<queued_vs_try>("semaphore queued acquire vs try_acquire", 2);
    return rc;
}
