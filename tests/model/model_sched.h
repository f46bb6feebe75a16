/* Stand-ins for the scheduler's structures (src/sched/sched.h, the parts of
 * src/core/core.h they use) around the real run queues and idle set:
 * local_queue.c, global_queue.c, idle.c and lifo.c. The global queue's lock is a
 * Relacy mutex; a parker records its unparks. */
#ifndef BLITZ_MODEL_SCHED_H
#define BLITZ_MODEL_SCHED_H
#include "model.h"
#define BLITZ_STATIC 1
#include "api/blitz_api.h"
#include "model_mutex.h"

#ifndef BLITZ_LOCAL_QUEUE_CAPACITY
#define BLITZ_LOCAL_QUEUE_CAPACITY 4
#endif
#define BLITZ__SCHED_H

typedef struct blitz_task {
    struct blitz_task *next;
    int id;
} blitz__task;

typedef struct blitz__local_queue {
    blitz__atomic_u32 head;
    blitz__atomic_u32 tail;
    blitz__atomic_ptr buffer[BLITZ_LOCAL_QUEUE_CAPACITY];
} blitz__local_queue;
typedef struct blitz__global_queue {
    blitz__mutex lock;
    blitz__task *head;
    blitz__task *tail;
    int closed;
    blitz__atomic_u64 len;
} blitz__global_queue;
typedef struct blitz__idle {
    blitz__atomic_u32 num_searching;
    blitz__atomic_u64 parked_bitmap;
    blitz__atomic_u32 lifo_armed, lifo_watcher, lifo_quiet, lifo_backoff;
} blitz__idle;
typedef struct blitz__worker_counters {
    int overflows;
} blitz__worker_counters;
typedef struct blitz__parker {
    blitz__atomic_u32 unparks;
} blitz__parker;
static void blitz__parker_unpark(blitz__parker *p) {
    blitz__u32_fetch_add(&p->unparks, 1, BLITZ__RELEASE);
}
typedef struct blitz__worker {
    blitz__local_queue queue;
    blitz__parker parker;
    /* Owner-only fields the LIFO slot's protocol uses (lifo.c). */
    struct blitz_runtime *rt;
    uint32_t batch_head, batch_len;
    uint32_t index;
    int searching;
    blitz__task *watch_task;
    uint64_t watch_polls;
    uint32_t watch_victim;
    int watch_queued;
    blitz__atomic_ptr lifo_slot;
    blitz__atomic_u64 polls_begun;
    blitz__atomic_u32 transitioning_to_park;
    blitz__worker_counters counters;
} blitz__worker;
struct blitz_runtime {
    blitz__global_queue *global;
    blitz__idle *idle;
    blitz__worker *workers;
    uint32_t num_workers;
};

#include "sched/global_queue.c"
#include "sched/local_queue.c"
#define BLITZ__CHAOS(n) 0 /* chaos scheduling is a fault-injection build's */
#include "sched/idle.c"
#include "sched/lifo.c"

#endif
