/* The per-worker run queue (src/sched/local_queue.c) with a 4-slot ring:
 * the owner pushes past capacity (overflow to the global queue) and pops
 * while another worker steals half into its own ring and pops from there.
 * Property: every pushed task is taken exactly once, by a pop, a steal or
 * the overflow batch; none is lost or duplicated. */
#include "model.h"

#define BLITZ_LOCAL_QUEUE_CAPACITY 4
#define BLITZ__SCHED_H             /* the stand-ins below replace sched.h */

typedef struct blitz_task {
    struct blitz_task *next;
    int id;
} blitz__task;
typedef struct blitz__local_queue {
    blitz__atomic_u32 head;
    blitz__atomic_u32 tail;
    blitz__atomic_ptr buffer[BLITZ_LOCAL_QUEUE_CAPACITY];
} blitz__local_queue;
typedef struct blitz__worker_counters {
    int overflows;
} blitz__worker_counters;
typedef struct blitz__global_queue {
    blitz__task *head;
} blitz__global_queue;
typedef struct blitz_runtime {
    blitz__global_queue *global;
} blitz_runtime;

enum { NTASKS = 6 };
static int taken[NTASKS]; /* how many times each task was taken */

/* Only the owner reaches the global queue (overflow and the push fallback). */
static int blitz__global_queue_push_batch(blitz__global_queue *g, blitz__task *first,
                                          blitz__task *last, uint64_t n) {
    (void)g;
    uint64_t seen = 0;
    for (blitz__task *t = first;; t = t->next) {
        taken[t->id]++;
        seen++;
        if (t == last)
            break;
    }
    RL_ASSERT(last->next == NULL && seen == n);
    return 0;
}

#include "sched/local_queue.c"

struct local_queue_test : rl::test_suite<local_queue_test, 2> {
    blitz__local_queue owner_q, thief_q;
    blitz__task tasks[NTASKS];
    blitz__global_queue global;
    blitz_runtime rt;
    blitz__worker_counters k;

    void before() {
        blitz__local_queue_init(&owner_q);
        blitz__local_queue_init(&thief_q);
        for (int i = 0; i < NTASKS; i++) {
            tasks[i].id = i;
            tasks[i].next = NULL;
            taken[i] = 0;
        }
        rt.global = &global;
    }
    void take(blitz__task *t) {
        RL_ASSERT(t != NULL && t >= tasks && t < tasks + NTASKS);
        taken[t->id]++;
    }
    void thread(unsigned i) {
        if (i == 0) {
            /* Owner: fill, pop one, overflow, drain. */
            for (int n = 0; n < 4; n++)
                blitz__local_queue_push(&owner_q, &tasks[n], &rt, &k);
            blitz__task *t = blitz__local_queue_pop(&owner_q);
            if (t)
                take(t);
            for (int n = 4; n < NTASKS; n++)
                blitz__local_queue_push(&owner_q, &tasks[n], &rt, &k);
            while ((t = blitz__local_queue_pop(&owner_q)) != NULL)
                take(t);
        } else {
            /* Thief: steal twice, running what it gets. */
            for (int round = 0; round < 2; round++) {
                uint32_t stolen = 0;
                blitz__task *t = blitz__local_queue_steal_into(&owner_q, &thief_q, &stolen);
                if (t)
                    take(t);
                while ((t = blitz__local_queue_pop(&thief_q)) != NULL)
                    take(t);
            }
        }
    }
    void after() {
        for (int i = 0; i < NTASKS; i++)
            RL_ASSERT(taken[i] == 1);
    }
};

int main() {
    return model_run<local_queue_test>("local_queue push/pop/steal/overflow", 2);
}
