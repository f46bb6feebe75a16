/* Idle workers and the last-searcher rule (src/sched/idle.c, with the real
 * queues): no lost wake-up.
 * park_vs_push: the runtime's one worker parks (the last searcher, or not
 *   searching)
 *   while a thread outside pushes a task to the global queue and notifies.
 *   Either the worker sees the task and stays up, or the notifier claims
 *   and unparks it.
 * last_searcher: worker 1 searches and finds a task; meanwhile a producer
 *   pushes another and, seeing a searcher, wakes nobody. The last searcher
 *   to stop must then wake parked worker 0: exactly one of the two wakes it.
 */
#include "model_sched.h"

struct idle_env {
    blitz__global_queue global;
    blitz__idle idle;
    blitz__worker workers[2];
    blitz_runtime rt;
    blitz__task tasks[2];

    void init() {
        blitz__global_queue_init(&global);
        blitz__idle_init(&idle);
        for (int i = 0; i < 2; i++) {
            blitz__local_queue_init(&workers[i].queue);
            blitz__u32_store(&workers[i].parker.unparks, 0, BLITZ__RELAXED);
            tasks[i].id = i;
        }
        rt.global = &global;
        rt.idle = &idle;
        rt.workers = workers;
        rt.num_workers = 2;
    }
    /* A thread that is not a worker schedules. */
    void remote_schedule(blitz__task *t) {
        blitz__idle_schedule_remote(&rt, t);
    }
    uint32_t unparks(int i) {
        return blitz__u32_load(&workers[i].parker.unparks, BLITZ__RELAXED);
    }
};

static int model_stay_down(blitz_runtime *rt) {
    (void)rt;
    return 0;
}

template <int Searching> struct park_vs_push : rl::test_suite<park_vs_push<Searching>, 2> {
    idle_env e;
    int slept, searching;

    void before() {
        e.init();
        /* The runtime's one worker parks, as a searcher or not. */
        e.rt.num_workers = 1;
        blitz__u32_store(&e.idle.num_searching, Searching, BLITZ__RELAXED);
        slept = 0;
        searching = Searching;
    }
    void thread(unsigned i) {
        if (i == 0)
            e.remote_schedule(&e.tasks[0]);
        else
            slept = blitz__idle_commit_park(&e.rt, 0, &searching, model_stay_down);
    }
    void after() {
        /* Someone runs the task: the worker stayed up or was woken. */
        RL_ASSERT(!slept || e.unparks(0) == 1);
        RL_ASSERT(e.unparks(0) <= 1);
        /* A claimed worker counts as a searcher, once. */
        uint32_t searchers = blitz__u32_load(&e.idle.num_searching, BLITZ__RELAXED);
        RL_ASSERT(searchers == (uint32_t)(searching || (slept && e.unparks(0))));
    }
};

struct last_searcher : rl::test_suite<last_searcher, 2> {
    idle_env e;

    void before() {
        e.init();
        blitz__idle_set_parked(&e.rt, 0);
        /* Worker 1 searches and has found tasks[0]. */
        blitz__u32_store(&e.idle.num_searching, 1, BLITZ__RELAXED);
    }
    void thread(unsigned i) {
        if (i == 0) {
            e.remote_schedule(&e.tasks[1]);
        } else {
            /* worker.c's find: the searcher found work and stops. */
            if (blitz__idle_leave_searching(&e.rt, 0))
                blitz__idle_notify_parked(&e.rt);
        }
    }
    void after() {
        RL_ASSERT(e.unparks(0) == 1);
    }
};

int main() {
    int rc = 0;
    rc |= model_run<park_vs_push<1>>("idle park vs push, last searcher", 3);
    rc |= model_run<park_vs_push<0>>("idle park vs push, not searching", 3);
    rc |= model_run<last_searcher>("idle last searcher wakes a worker", 3);
    return rc;
}
