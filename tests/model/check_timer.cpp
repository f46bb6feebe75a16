/* A timer firing while its owner cancels or polls it (src/time/
 * time_driver.c, with the real wheel of timer_wheel.c). The driver moves
 * due timers to the firing list and fires them in batches, taking each
 * waker under the lock and waking it after unlocking; the owner may cancel
 * the timer or poll it again (re-registering its waker) at any moment.
 * fire_vs_cancel: whatever the order, the timer ends IDLE and in no list,
 *   its one waker reference is dropped or used exactly once, and a wake
 *   never follows the cancel's return.
 * fire_vs_repoll: the owner polls the armed timer again with a new waker
 *   while it fires: exactly one of the two wakers is woken, the other
 *   released, no reference is left, and the timer is FIRED (waiting for the
 *   poll the wake causes) or, when the re-poll saw it fire, IDLE. */
#include "model.h"
#define BLITZ_STATIC 1
#include "api/blitz_api.h"
#include "model_mutex.h"

struct model_ctx;
#define MODEL_CX_FIELDS struct model_ctx *ctx;
#include "model_waker.h"

/* What time_driver.c needs of core.h. */
#define BLITZ__CORE_H
typedef struct blitz__time_driver blitz__time_driver;
struct blitz_runtime {
    blitz__time_driver *time;
    blitz_flavor flavor;
    void *ct_parker;
};
static void blitz__parker_unpark(void *parker) {
    (void)parker;
}
struct model_ctx {
    blitz_runtime *rt;
};
static uint64_t blitz__now_ns(void) {
    return 0; /* the checks run on the paused clock */
}
static void blitz__sched_kick_timers(blitz_runtime *rt, uint32_t sleeper) {
    (void)rt;
    (void)sleeper;
}
static void blitz__wake_batch_begin(void) {}
static void blitz__wake_batch_end(void) {}
static void blitz_cx_pending(blitz_cx *cx, blitz_cancel_fn cancel, void *op) {
    (void)cx;
    (void)cancel;
    (void)op;
}
static inline void blitz__cx_pending_get(blitz_cx *cx, blitz_cancel_fn *cancel, void **op) {
    (void)cx;
    *cancel = NULL;
    *op = NULL;
}

#define BLITZ__WAKE_BATCH 1 /* a timer fires per hold of the lock */
#include "time/time_driver.c"
#include "time/timer_wheel.c"

/* A runtime with a paused clock at 0 and two timers armed for tick 1,
 * timer i by task owners[i]. With one timer fired per hold of the lock,
 * whichever is second in the firing list waits there, unlocked, while the
 * first is woken. */
struct timer_env {
    blitz__time_driver td;
    blitz_runtime rt;
    model_ctx ctx;
    blitz_timer timer[2];
    blitz__atomic_u32 timer_state[2];

    void init(model_task *owner0, model_task *owner1) {
        model_unbind_all();
        rt.time = &td;
        rt.flavor = BLITZ_MULTI_THREAD;
        rt.ct_parker = NULL;
        ctx.rt = &rt;
        td.origin_ns = 0;
        td.paused = 1;
        td.advancing = 0;
        td.firing = NULL;
        blitz__wheel_init(&td.wheel, 0);
        blitz__u64_store(&td.virtual_ns, 0, BLITZ__RELAXED);
        blitz__u64_store(&td.next_expiry_ns, UINT64_MAX, BLITZ__RELAXED);
        blitz__u32_store(&td.sleeper, 0, BLITZ__RELAXED);
        model_task *owners[2] = {owner0, owner1};
        for (int i = 0; i < 2; i++) {
            memset(&timer[i], 0, sizeof timer[i]);
            blitz__u32_store(&timer_state[i], BLITZ__TIMER_IDLE, BLITZ__RELAXED);
            model_bind(&timer[i].blitz__state, &timer_state[i]);
            blitz_cx cx = cx_of(owners[i]);
            RL_ASSERT(blitz_sleep_until(&cx, &timer[i], BLITZ__TICK_NS) == BLITZ_PENDING);
        }
    }
    blitz_cx cx_of(model_task *t) {
        blitz_cx cx = model_cx(t);
        cx.ctx = &ctx;
        return cx;
    }
    uint32_t state(int i) {
        return blitz__u32_load(&timer_state[i], BLITZ__RELAXED);
    }
    /* The driver's tick: the clock reaches tick 1 and a worker's timer
     * pass fires what is due. */
    void drive() {
        blitz__u64_store(&td.virtual_ns, BLITZ__TICK_NS, BLITZ__RELEASE);
        blitz__time_process(&rt, 1);
    }
    void check_out_of_lists() {
        RL_ASSERT(td.firing == NULL);
        RL_ASSERT(blitz__wheel_count(&td.wheel) == 0);
        for (int i = 0; i < 2; i++)
            RL_ASSERT(timer[i].blitz__entry.where == BLITZ__WHEEL_NOT_IN_WHEEL);
    }
};

/* The owner cancels both of its timers while they fire. */
struct fire_vs_cancel : rl::test_suite<fire_vs_cancel, 2> {
    model_task owner;
    timer_env env;

    void before() {
        owner.init();
        env.init(&owner, &owner);
    }
    void thread(unsigned i) {
        if (i == 0) {
            env.drive();
        } else {
            blitz_cx cx = env.cx_of(&owner);
            blitz_timer_cancel(&cx, &env.timer[0]);
            blitz_timer_cancel(&cx, &env.timer[1]);
        }
    }
    void after() {
        env.check_out_of_lists();
        RL_ASSERT(env.state(0) == BLITZ__TIMER_IDLE && env.state(1) == BLITZ__TIMER_IDLE);
        RL_ASSERT(owner.refs.load(rl::mo_relaxed, $) == 0);
        RL_ASSERT(owner.wakes.load(rl::mo_relaxed, $) <= 2);
    }
};

/* Timer 0's task polls it again with another waker while both fire. */
struct fire_vs_repoll : rl::test_suite<fire_vs_repoll, 2> {
    model_task first, second, bystander;
    timer_env env;
    rl::atomic<int> ready;

    void before() {
        first.init();
        second.init();
        bystander.init();
        env.init(&first, &bystander);
        ready.store(0, rl::mo_relaxed, $);
    }
    void thread(unsigned i) {
        if (i == 0) {
            env.drive();
        } else {
            blitz_cx cx = env.cx_of(&second);
            if (blitz_sleep_until(&cx, &env.timer[0], BLITZ__TICK_NS) == BLITZ_READY)
                ready.store(1, rl::mo_relaxed, $);
        }
    }
    void after() {
        env.check_out_of_lists();
        RL_ASSERT(first.refs.load(rl::mo_relaxed, $) == 0);
        RL_ASSERT(second.refs.load(rl::mo_relaxed, $) == 0);
        RL_ASSERT(bystander.refs.load(rl::mo_relaxed, $) == 0);
        RL_ASSERT(bystander.wakes.load(rl::mo_relaxed, $) == 1);
        /* One wake, to whichever waker timer 0 held when it fired (a
         * re-poll that then saw FIRED makes it a spurious one). */
        int a = first.wakes.load(rl::mo_relaxed, $), b = second.wakes.load(rl::mo_relaxed, $);
        RL_ASSERT(a + b == 1);
        /* READY on the re-poll leaves the timer IDLE for reuse; otherwise
         * it waits, FIRED, for the poll the wake causes. */
        RL_ASSERT(env.state(0) ==
                  (ready.load(rl::mo_relaxed, $) ? BLITZ__TIMER_IDLE : BLITZ__TIMER_FIRED));
        RL_ASSERT(env.state(1) == BLITZ__TIMER_FIRED);
    }
};

int main() {
    int rc = 0;
    rc |= model_run<fire_vs_cancel>("timer_fire_vs_cancel");
    rc |= model_run<fire_vs_repoll>("timer_fire_vs_repoll");
    return rc;
}
