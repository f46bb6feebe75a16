/* The schedulers' internal API: run queues, idle workers, the worker and
 * current-thread cores, and the blocking pool. */
#ifndef BLITZ__SCHED_H
#define BLITZ__SCHED_H
#include "../io/io.h"

/* ---- queues ---------------------------------------------------------------- */

/* The per-worker ring (local_queue.c): one producer (the owner), many
 * consumers. head packs (steal << 16) | real as two 16-bit positions. */
typedef struct blitz__local_queue {
    BLITZ__ALIGNED blitz__atomic_u32 head;
    BLITZ__ALIGNED blitz__atomic_u32 tail;
    BLITZ__ALIGNED blitz__atomic_ptr buffer[BLITZ_LOCAL_QUEUE_CAPACITY];
} blitz__local_queue;

/* The injection queue (global_queue.c): mutex + intrusive list + atomic
 * length for lock-free emptiness checks. */
struct blitz__global_queue {
    blitz__mutex lock;
    blitz__task *head;
    blitz__task *tail;
    int closed;
    BLITZ__ALIGNED blitz__atomic_u64 len;
};

struct blitz__idle {
    BLITZ__ALIGNED blitz__atomic_u32 num_searching;
    BLITZ__ALIGNED blitz__atomic_u64 parked_bitmap; /* bit i set: worker i parked */
    /* LIFO rescue (lifo.c): armed by a worker that fills its empty slot;
     * the index + 1 of the parked worker watching the slots (0: none); the
     * watcher's rounds in a row with every other worker parked; the shift
     * of its sleep (longer after rounds that rescued nothing). */
    BLITZ__ALIGNED blitz__atomic_u32 lifo_armed;
    blitz__atomic_u32 lifo_watcher;
    blitz__atomic_u32 lifo_quiet;
    blitz__atomic_u32 lifo_backoff;
};

/* ---- workers (worker.c) ----------------------------------------------------- */

struct blitz__worker {
    blitz__local_queue queue;
    /* Owner-only fields. */
    BLITZ__ALIGNED blitz_runtime *rt;
    blitz__task *batch[BLITZ__BATCH_BUFFER_SIZE];
    uint32_t batch_head, batch_len;
    uint32_t index;
    uint32_t tick;       /* polls, for the periodic global-queue check */
    uint32_t lifo_polls; /* consecutive LIFO polls */
    uint32_t global_interval;
    uint64_t avg_poll_ns; /* EWMA of the time per poll */
    uint64_t stamp_ns;    /* clock at the last interval update */
    uint64_t stamp_polls; /* polls since then */
    uint64_t awake_since; /* metrics: clock when busy time was last added */
    uint64_t rng[2];      /* xorshift64+ for victim choice */
    int searching;
    int started;
    blitz__task *deferred_head, *deferred_tail; /* yielded this tick */
    int wake_batching;                          /* between blitz__wake_batch_begin and _end */
    blitz__task *wake_head, *wake_tail;
    uint64_t wake_count;
    /* As the rescue's watcher (lifo.c): the task seen in another worker's
     * slot before the sleep (or whether its ring held tasks), that worker
     * and its polls_begun then. */
    blitz__task *watch_task;
    uint64_t watch_polls;
    uint32_t watch_victim;
    int watch_queued;
    blitz__thread thread;
    blitz__block_cache cache;
    /* The LIFO slot: only the owner puts a task in; the owner takes it,
     * or the watcher rescues it when the owner begins no poll for a while
     * (lifo.c), which polls_begun counts. */
    BLITZ__ALIGNED blitz__atomic_ptr lifo_slot;
    blitz__atomic_u64 polls_begun;
    /* Read by producers on other threads (lost-wakeup guard, seed 000). */
    BLITZ__ALIGNED blitz__atomic_u32 transitioning_to_park;
    blitz__atomic_u32 interval_shared; /* for stats readers */
    blitz__parker parker;
    blitz__worker_counters counters;
};

/* ---- the current-thread core (current_thread.c) ---------------------------- */

struct blitz__ct_core {
    blitz__task *head, *tail;                   /* run queue, touched only by the driving thread */
    blitz__task *deferred_head, *deferred_tail; /* yielded this tick */
    blitz__atomic_u32 driving;                  /* 1 while a thread drives the runtime */
    blitz__parker parker;                       /* the driver sleeps here */
    uint32_t inject_in;   /* blitz__ct_drive_until's countdown between drives */
    uint64_t awake_since; /* metrics: clock when busy time was last added */
    blitz__worker_counters counters;
    blitz__block_cache cache;
};

/* ---- the blocking pool (blocking_pool.c) ------------------------------------ */

/* A pool thread's record, on its own stack. */
typedef struct blitz__pool_thread {
    struct blitz__pool_thread *next, *prev; /* the idle list */
    blitz__parker parker;
    int notified; /* handed work while idle; guarded by the pool's lock */
} blitz__pool_thread;

/* Everything below is guarded by `lock`. */
struct blitz__pool {
    blitz__mutex lock;
    struct blitz__pool_job *head, *tail;             /* jobs waiting for a thread */
    struct blitz__pool_job *space_head, *space_tail; /* ops waiting for queue room */
    blitz__pool_thread *idle_head;                   /* most recently idle first */
    uint32_t queued, threads, idle;
    /* Threads woken or started for queued jobs that have not yet taken
     * the lock: jobs they are about to take do not count as a backlog. */
    uint32_t inbound;
    uint32_t max_threads, capacity;
    uint64_t keep_alive_ns;
    int closed;
    int have_last_exiting;
    blitz__thread last_exiting; /* joined by the next thread to exit, or shutdown */
    blitz__parker *shutdown_waiter;
    struct blitz__pool_rec *records; /* see blitz__pool_rec.all_next */
    uint64_t threads_started, jobs_run, rejected;
};

/* An op's record on the blocking pool (blocking_pool.c); each kind of op
 * puts its request and results after it. */
struct blitz__pool_rec {
    struct blitz__pool_job job; /* first: the pool hands back this pointer */
    blitz_waker waker;
    blitz_runtime *rt;
    uint32_t state;
    void (*exec)(blitz__pool_rec *rec, int cancelled); /* the work; ECANCELED when cancelled */
    void (*discard)(blitz__pool_rec *rec);             /* frees what the record still holds */
    /* Every record the pool has seen, so that blitz_runtime_free can free
     * those whose task was cancelled without cancelling its op. */
    blitz__pool_rec *all_next, *all_prev;
    int tracked;
};
typedef struct blitz__pool_job blitz__pool_job;

#endif
