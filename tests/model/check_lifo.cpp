/* The LIFO slot against parking (src/sched/lifo.c, with the real queues
 * and idle set): a task in a worker's slot, which no other worker can
 * see, is never left there while its worker sleeps, and a task that
 * parking maintenance schedules is never stranded while every worker
 * parks.
 * flush_vs_steal: worker 0 wakes two tasks locally (the first displaced
 *   from the slot to the ring, the second in the slot) and goes to park;
 *   worker 1, searching, steals from it or parks as the last searcher.
 * maintenance_wake: worker 0 goes to park, and while it re-checks (a
 *   timer fired by its stay-up check) a task is woken on its thread;
 *   worker 1, the last searcher, finds nothing and parks too.
 * Both: every task is taken once or still queued; a worker that sleeps
 * has an empty slot; a task in a shared queue has an awake worker (one
 * that did not sleep, was unparked, or runs a stolen task).
 * rescue_vs_owner: with the rescue armed, worker 0 fills its slot (empty
 *   slot: store), fills it again (the first task displaced: swap), takes
 *   and runs the slot's task; worker 1, the watcher, notes a task in the
 *   slot and rescues it (CAS) when worker 0 has begun no poll since. Every
 *   task runs exactly once or is still queued, and whoever runs it sees
 *   what was written into it before it was scheduled. */
#include "model_sched.h"

struct lifo_env {
    blitz__global_queue global;
    blitz__idle idle;
    blitz__worker workers[2];
    blitz_runtime rt;
    blitz__task tasks[2];
    int slept[2];
    blitz__task *running;    /* what worker 1 stole and runs */
    int fired;               /* the timer of maintenance_wake */
    rl::var<int> payload[2]; /* rescue_vs_owner: a task's contents */
    int ran[2];              /* rescue_vs_owner: runs of each task */

    void init() {
        blitz__global_queue_init(&global);
        blitz__idle_init(&idle);
        rt.global = &global;
        rt.idle = &idle;
        rt.workers = workers;
        rt.num_workers = 2;
        for (int i = 0; i < 2; i++) {
            blitz__worker *w = &workers[i];
            blitz__local_queue_init(&w->queue);
            blitz__u32_store(&w->parker.unparks, 0, BLITZ__RELAXED);
            blitz__u32_store(&w->transitioning_to_park, 0, BLITZ__RELAXED);
            w->rt = &rt;
            blitz__ptr_store(&w->lifo_slot, NULL, BLITZ__RELAXED);
            blitz__u64_store(&w->polls_begun, 0, BLITZ__RELAXED);
            w->watch_task = NULL;
            w->batch_head = w->batch_len = 0;
            w->index = (uint32_t)i;
            w->searching = 0;
            tasks[i].id = i;
            tasks[i].next = NULL;
            slept[i] = 0;
        }
        running = NULL;
        fired = 0;
        /* The rescue is armed: filling a slot arms it otherwise, which
         * only adds a notify_parked, and multiplies the schedules. */
        blitz__u32_store(&idle.lifo_armed, 1, BLITZ__RELAXED);
        /* Worker 1 searches (the only searcher). */
        workers[1].searching = 1;
        blitz__u32_store(&idle.num_searching, 1, BLITZ__RELAXED);
    }
    bool awake(int i) {
        return !slept[i] || blitz__u32_load(&workers[i].parker.unparks, BLITZ__RELAXED) != 0 ||
               (i == 1 && running);
    }
    /* The end state (see the top of the file); tasks[0] is used from
     * `first` = 0, only tasks[1] from 1. */
    void check(int first) {
        int seen[2] = {0, 0}, shared = 0;
        if (running)
            seen[running->id]++;
        for (int i = 0; i < 2; i++) {
            RL_ASSERT(blitz__u32_load(&workers[i].parker.unparks, BLITZ__RELAXED) <= 1);
            blitz__task *slot =
                (blitz__task *)blitz__ptr_load(&workers[i].lifo_slot, BLITZ__RELAXED);
            if (slot) {
                RL_ASSERT(!slept[i]); /* stranded in a sleeping worker's slot */
                seen[slot->id]++;
            }
            for (blitz__task *t; (t = blitz__local_queue_pop(&workers[i].queue)) != NULL; shared++)
                seen[t->id]++;
        }
        blitz__task *got[4];
        uint32_t n = blitz__global_queue_pop_batch(&global, got, 4);
        for (uint32_t k = 0; k < n; k++, shared++)
            seen[got[k]->id]++;
        RL_ASSERT(!shared || awake(0) || awake(1)); /* queued, every worker asleep */
        for (int i = 0; i < 2; i++)
            RL_ASSERT(seen[i] == (i >= first));
    }
};
static lifo_env *model_env;

static int model_stay_down(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
/* Worker 0's stay-up check fires a timer that wakes tasks[1] on its
 * thread, once; nothing else keeps it up. */
static int model_timer_fires(blitz_runtime *rt) {
    (void)rt;
    if (!model_env->fired) {
        model_env->fired = 1;
        blitz__lifo_schedule(&model_env->workers[0], &model_env->tasks[1]);
    }
    return 0;
}

/* Worker 1: steal from worker 0, else park. */
static void model_worker1(lifo_env *e) {
    blitz__worker *w = &e->workers[1];
    uint32_t stolen = 0;
    blitz__task *t = blitz__local_queue_steal_into(&e->workers[0].queue, &w->queue, &stolen);
    if (t) {
        e->running = t;
        w->searching = 0;
        if (blitz__idle_leave_searching(&e->rt, 0))
            blitz__idle_notify_parked(&e->rt);
        return;
    }
    e->slept[1] = blitz__lifo_begin_park(w, model_stay_down);
    blitz__lifo_end_park(w);
}

struct flush_vs_steal : rl::test_suite<flush_vs_steal, 2> {
    lifo_env e;

    void before() {
        e.init();
        model_env = &e;
    }
    void thread(unsigned i) {
        if (i == 0) {
            blitz__worker *w = &e.workers[0];
            blitz__lifo_schedule(w, &e.tasks[0]);
            blitz__lifo_schedule(w, &e.tasks[1]);
            e.slept[0] = blitz__lifo_begin_park(w, model_stay_down);
            blitz__lifo_end_park(w);
        } else {
            model_worker1(&e);
        }
    }
    void after() {
        e.check(0);
    }
};

struct maintenance_wake : rl::test_suite<maintenance_wake, 2> {
    lifo_env e;

    void before() {
        e.init();
        model_env = &e;
    }
    void thread(unsigned i) {
        if (i == 0) {
            blitz__worker *w = &e.workers[0];
            e.slept[0] = blitz__lifo_begin_park(w, model_timer_fires);
            blitz__lifo_end_park(w);
        } else {
            model_worker1(&e);
        }
    }
    void after() {
        e.check(1);
    }
};

/* Runs a task taken from a slot: reads its contents (a race without the
 * slot's release/acquire pairing) and counts the run. */
static void model_run_task(lifo_env *e, blitz__task *t) {
    RL_ASSERT(e->payload[t->id]($) == t->id + 1);
    e->ran[t->id]++;
}

struct rescue_vs_owner : rl::test_suite<rescue_vs_owner, 2> {
    lifo_env e;

    void before() {
        e.init();
        model_env = &e;
        e.workers[1].searching = 0;
        blitz__u32_store(&e.idle.num_searching, 0, BLITZ__RELAXED);
        for (int i = 0; i < 2; i++) {
            e.payload[i]($) = 0;
            e.ran[i] = 0;
        }
    }
    void thread(unsigned i) {
        if (i == 0) {
            blitz__worker *w = &e.workers[0];
            for (int k = 0; k < 2; k++) {
                e.payload[k]($) = k + 1;
                blitz__lifo_schedule(w, &e.tasks[k]);
            }
            blitz__task *t = blitz__lifo_take(w);
            if (t) {
                blitz__lifo_poll_begin(w);
                model_run_task(&e, t);
            }
        } else {
            /* A watch round that times out while still parked, then a
             * second round's wake when the first found nothing stranded. */
            blitz__worker *w = &e.workers[1];
            uint64_t next = 0;
            if (blitz__lifo_watch(w) && (blitz__lifo_watch_again(w, &next) || next) &&
                blitz__lifo_rescue(w))
                model_run_task(&e, blitz__local_queue_pop(&w->queue));
        }
    }
    void after() {
        int seen[2] = {e.ran[0], e.ran[1]};
        blitz__task *slot = (blitz__task *)blitz__ptr_load(&e.workers[0].lifo_slot, BLITZ__RELAXED);
        if (slot)
            seen[slot->id]++;
        for (int i = 0; i < 2; i++)
            for (blitz__task *t; (t = blitz__local_queue_pop(&e.workers[i].queue)) != NULL;)
                seen[t->id]++;
        RL_ASSERT(seen[0] == 1 && seen[1] == 1); /* lost, or run twice */
        RL_ASSERT(blitz__global_queue_len(&e.global) == 0);
        RL_ASSERT(blitz__u32_load(&e.idle.lifo_watcher, BLITZ__RELAXED) == 0);
    }
};

int main() {
    int rc = 0;
    rc |= model_run<flush_vs_steal>("lifo slot flushed vs a stealer parking", 3);
    rc |= model_run<maintenance_wake>("lifo wake while parking vs last searcher", 3);
    rc |= model_run<rescue_vs_owner>("lifo slot rescued vs its owner's fill and take", 3);
    return rc;
}
