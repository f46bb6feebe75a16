/* Internal definitions shared by every module: configuration defaults,
 * linkage, and the layout of the runtime's structures. Everything below is
 * private (blitz__ prefix) and may change at any time. */

#ifdef __cplusplus
#error \
    "blitz.h: the implementation is C11. Define BLITZ_IMPLEMENTATION in a .c file compiled as C; the declarations compile as C++ in every other file."
#endif

#include "platform.h"
#include "atomic.h"

#include "blitz_api.h"

/* ---- configuration ------------------------------------------------------ */

#ifndef BLITZ_PRIVATE
#define BLITZ_PRIVATE static __attribute__((unused))
#endif

#ifndef BLITZ_ASSERT
#define BLITZ_ASSERT(c) assert(c)
#endif

#if defined(BLITZ_MALLOC) != defined(BLITZ_FREE)
#error "define both BLITZ_MALLOC and BLITZ_FREE, or neither"
#endif
#ifndef BLITZ_MALLOC
#define BLITZ_MALLOC(size)       malloc(size)
#define BLITZ_FREE(ptr)          free(ptr)
#define BLITZ__DEFAULT_ALLOCATOR 1
#endif

#ifndef BLITZ_LOCAL_QUEUE_CAPACITY
#define BLITZ_LOCAL_QUEUE_CAPACITY 256
#endif
#ifndef BLITZ_BUDGET_PER_TICK
#define BLITZ_BUDGET_PER_TICK 128
#endif
/* Task polls between two non-blocking looks at epoll by a thread that
 * runs tasks (Tokio's event interval; see blitz__io_between_ticks). A
 * count at least this large makes the next look due. */
#define BLITZ__IO_EVENT_INTERVAL 61u
#ifndef BLITZ_MAX_LIFO_POLLS_PER_TICK
#define BLITZ_MAX_LIFO_POLLS_PER_TICK 3
#endif

#ifndef BLITZ_CACHE_LINE
#if defined(__x86_64__) || defined(__aarch64__) || defined(__powerpc64__)
/* Adjacent-line prefetchers pull pairs of 64-byte lines (seed 002 table). */
#define BLITZ_CACHE_LINE 128
#elif defined(__s390x__)
#define BLITZ_CACHE_LINE 256
#elif defined(__arm__) || defined(__mips__) || defined(__sparc__)
#define BLITZ_CACHE_LINE 32
#else
#define BLITZ_CACHE_LINE 64
#endif
#endif

_Static_assert(BLITZ_MAX_WORKERS >= 1 && BLITZ_MAX_WORKERS <= 64,
               "BLITZ_MAX_WORKERS must be 1..64: the parked-worker bitmap is one 64-bit word");
_Static_assert(BLITZ_LOCAL_QUEUE_CAPACITY >= 2 && BLITZ_LOCAL_QUEUE_CAPACITY <= 16384 &&
                   (BLITZ_LOCAL_QUEUE_CAPACITY & (BLITZ_LOCAL_QUEUE_CAPACITY - 1)) == 0,
               "BLITZ_LOCAL_QUEUE_CAPACITY must be a power of two in 2..16384");
_Static_assert(BLITZ_BUDGET_PER_TICK >= 1, "BLITZ_BUDGET_PER_TICK must be positive");
_Static_assert(BLITZ_MAX_LIFO_POLLS_PER_TICK >= 1 && BLITZ_MAX_LIFO_POLLS_PER_TICK <= 1024,
               "BLITZ_MAX_LIFO_POLLS_PER_TICK must be 1..1024");
_Static_assert(BLITZ_CACHE_LINE >= 8 && BLITZ_CACHE_LINE <= 4096 &&
                   (BLITZ_CACHE_LINE & (BLITZ_CACHE_LINE - 1)) == 0,
               "BLITZ_CACHE_LINE must be a power of two in 8..4096");
_Static_assert(BLITZ_MAX_STATE_SIZE >= 1 && BLITZ_MAX_STATE_SIZE <= (1u << 30),
               "BLITZ_MAX_STATE_SIZE must be 1..2^30 bytes");

/* Global-queue batches (seed 000): min(64, max(4, len / workers)). */
#define BLITZ__GLOBAL_BATCH_MIN  4
#define BLITZ__GLOBAL_BATCH_MAX  64
#define BLITZ__BATCH_BUFFER_SIZE 32
/* Adaptive global-queue interval: clamp(1 ms / EWMA(poll ns), 8, 255). */
#define BLITZ__INTERVAL_MIN        8
#define BLITZ__INTERVAL_MAX        255
#define BLITZ__INTERVAL_TARGET_NS  1000000u
#define BLITZ__INITIAL_AVG_POLL_NS 50000u
#define BLITZ__HELP_WAIT_MAX_NS    10000000u
#define BLITZ__DEFAULT_SPIN        64u

#define BLITZ__ALIGNED     __attribute__((aligned(BLITZ_CACHE_LINE)))
#define BLITZ__LIKELY(x)   __builtin_expect(!!(x), 1)
#define BLITZ__UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifdef BLITZ_NO_STATS
/* Not evaluated, but what it names counts as used (no unused warnings). */
#define BLITZ__STAT(expr) ((void)sizeof((expr), 0))
#else
#define BLITZ__STAT(expr) (expr)
#endif

/* ---- threads and parking (thread.c) -------------------------------------- */

#if BLITZ__HAS_FUTEX
/* A futex lock that spins briefly first: the critical sections it guards
 * are a few pointer moves, far shorter than a sleep and a wake. */
typedef struct {
    blitz__atomic_u32 state; /* 0 free, 1 held, 2 held with sleepers */
} blitz__mutex;
#else
typedef pthread_mutex_t blitz__mutex;
#endif

/* ---- tasks (task_state.c, task.c, task_alloc.c) -------------------------- */

/* The task header. A task is one block: this header, then the user's state
 * (16-byte aligned), and, when the task has a drop function, that pointer in
 * the block's last 8 bytes. The runtime a task belongs to is found from the
 * 64 KiB-aligned chunk that holds the block, so the header carries no
 * runtime pointer: 40 bytes in all. */
struct blitz_task {
    /* ref_count 24 | shield 8 | flags 8 | lifecycle 8 | low flags 16; see
     * task_state.c. Zero means the block is free. */
    blitz__atomic_u64 state;
    blitz_poll_fn poll;
    /* Intrusive link: global queue, current-thread queue, or a free list. A
     * task is in at most one of them, guarded by the SCHEDULED lifecycle. */
    struct blitz_task *next;
    /* The waker of the task awaiting this one; owned by whoever the
     * JOIN_WAKER protocol says (join.c). */
    blitz_waker join_waker;
};
typedef struct blitz_task blitz__task;

#define BLITZ__TASK_HEADER_SIZE 40u
_Static_assert(sizeof(struct blitz_task) == BLITZ__TASK_HEADER_SIZE || sizeof(void *) != 8,
               "task header layout");

/* ---- the block allocator (task_alloc.c) ---------------------------------- */

#define BLITZ__CHUNK_SIZE  ((size_t)64 * 1024)
#define BLITZ__NUM_CLASSES 30
#define BLITZ__CLASS_LARGE 0xffffu

typedef struct blitz__chunk {
    blitz_runtime *rt;
    struct blitz__chunk *next;
    void *raw; /* what to hand back to the allocator */
    uint32_t block_size;
    uint32_t class_index;
    uint32_t capacity; /* blocks that fit */
    uint32_t carved;   /* blocks handed out so far (by the chunk's carver) */
} blitz__chunk;

/* Free blocks by size class, moved between caches in whole batches of
 * BLITZ__FREE_BATCH blocks. Each worker has one (no locking); threads that
 * are not workers share one behind alloc_lock. */
typedef struct blitz__block_cache {
    blitz__task *active[BLITZ__NUM_CLASSES]; /* free blocks, LIFO */
    uint32_t active_count[BLITZ__NUM_CLASSES];
    blitz__task *full[BLITZ__NUM_CLASSES]; /* one full batch held back, or NULL */
    blitz__chunk *carving[BLITZ__NUM_CLASSES];
} blitz__block_cache;

#include "timer_wheel.h"

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
typedef struct blitz__global_queue {
    blitz__mutex lock;
    blitz__task *head;
    blitz__task *tail;
    int closed;
    BLITZ__ALIGNED blitz__atomic_u64 len;
} blitz__global_queue;

/* ---- parking and idle workers (thread.c, idle.c) -------------------------- */

#define BLITZ__UNPARKED 0u
#define BLITZ__PARKED   1u
#define BLITZ__NOTIFIED 2u
/* Parked inside the I/O backend: unpark writes the driver's wake fd. */
#define BLITZ__PARKED_DRIVER 3u

typedef struct blitz__parker {
    blitz__atomic_u32 state; /* UNPARKED / PARKED / NOTIFIED / PARKED_DRIVER; the futex word */
    int wake_fd;             /* the I/O driver's eventfd, or -1 */
#if !BLITZ__HAS_FUTEX
    pthread_mutex_t lock;
    pthread_cond_t cond;
#endif
} blitz__parker;

typedef struct blitz__idle {
    BLITZ__ALIGNED blitz__atomic_u32 num_searching;
    BLITZ__ALIGNED blitz__atomic_u64 parked_bitmap; /* bit i set: worker i parked */
} blitz__idle;

/* ---- workers (worker.c) ----------------------------------------------------- */

typedef struct blitz__worker_counters {
    blitz__atomic_u64 polled, stolen, steals, parked, lifo_hits, batch_fetches, overflows;
    blitz__atomic_u64 spawned, freed;
} blitz__worker_counters;

typedef struct blitz__worker {
    blitz__local_queue queue;
    /* Owner-only fields. */
    BLITZ__ALIGNED blitz_runtime *rt;
    blitz__task *lifo_slot;
    blitz__task *batch[BLITZ__BATCH_BUFFER_SIZE];
    uint32_t batch_head, batch_len;
    uint32_t index;
    uint32_t tick;       /* polls, for the periodic global-queue check */
    uint32_t lifo_polls; /* consecutive LIFO polls */
    uint32_t global_interval;
    uint64_t avg_poll_ns; /* EWMA of the time per poll */
    uint64_t stamp_ns;    /* clock at the last interval update */
    uint64_t stamp_polls; /* polls since then */
    uint64_t rng[2];      /* xorshift64+ for victim choice */
    int searching;
    int started;
    blitz__task *deferred_head, *deferred_tail; /* yielded this tick */
    int wake_batching;                          /* between blitz__wake_batch_begin and _end */
    blitz__task *wake_head, *wake_tail;
    uint64_t wake_count;
    pthread_t thread;
    blitz__block_cache cache;
    /* Read by producers on other threads (lost-wakeup guard, seed 000). */
    BLITZ__ALIGNED blitz__atomic_u32 transitioning_to_park;
    blitz__atomic_u32 interval_shared; /* for stats readers */
    blitz__parker parker;
    blitz__worker_counters counters;
} blitz__worker;

/* ---- the current-thread core (current_thread.c) ---------------------------- */

typedef struct blitz__ct_core {
    blitz__task *head, *tail;                   /* run queue, touched only by the driving thread */
    blitz__task *deferred_head, *deferred_tail; /* yielded this tick */
    blitz__atomic_u32 driving;                  /* 1 while a thread drives the runtime */
    blitz__parker parker;                       /* the driver sleeps here */
    uint32_t tick;
    blitz__worker_counters counters;
    blitz__block_cache cache;
} blitz__ct_core;

/* ---- thread context (seed 002 "Thread-Local Context") ---------------------- */

typedef struct blitz__context {
    blitz_runtime *rt;
    blitz__worker *worker; /* NULL on the current-thread driver and on helpers */
    int ct_driver;         /* this thread drives rt (current-thread flavour) */
    blitz__task *current;  /* the task being polled, or NULL */
} blitz__context;

/* The poll context handed to poll functions. A context with no task polls
 * an op for a plain thread (blitz_op_wait) or for a runtime-internal
 * waiter: its waker is `waker` instead of the task's. */
struct blitz_cx {
    blitz__task *task;
    blitz__context *ctx;
    int yielded;
    blitz_waker waker;
};

/* ---- the time driver (time_driver.c) ---------------------------------------- */

typedef struct blitz__time_driver {
    blitz__mutex lock; /* guards wheel, firing and armed timers' wakers */
    blitz__timer_wheel wheel;
    blitz__timer_entry *firing; /* due, being fired in batches */
    uint64_t origin_ns;         /* tick 0 */
    int paused;                 /* virtual clock */
    int advancing;              /* a paused-clock jump is firing its timers */
    blitz__atomic_u64 virtual_ns;
    /* Earliest deadline in ns (never later than the truth), UINT64_MAX
     * when no timer is armed. */
    BLITZ__ALIGNED blitz__atomic_u64 next_expiry_ns;
    /* 1 + index of the parked worker that sleeps until the next deadline,
     * or 0. */
    blitz__atomic_u32 sleeper;
} blitz__time_driver;

/* ---- the blocking pool (blocking_pool.c) ------------------------------------ */

/* A pool thread's record, on its own stack. */
typedef struct blitz__pool_thread {
    struct blitz__pool_thread *next, *prev; /* the idle list */
    blitz__parker parker;
    int notified; /* handed work while idle; guarded by the pool's lock */
} blitz__pool_thread;

/* Everything below is guarded by `lock`. */
typedef struct blitz__pool {
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
    pthread_t last_exiting; /* joined by the next thread to exit, or shutdown */
    blitz__parker *shutdown_waiter;
    struct blitz__pool_rec *records; /* see blitz__pool_rec.all_next */
    uint64_t threads_started, jobs_run, rejected;
} blitz__pool;

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

/* ---- the runtime (runtime.c) ------------------------------------------------ */

struct blitz_runtime {
    blitz_flavor flavor;
    uint32_t num_workers;
    uint64_t park_timeout_ns;
    uint32_t spin_before_park;
    int spin_explicit; /* spin_before_park was set in the config */
    uint32_t fixed_interval;

    BLITZ__ALIGNED blitz__global_queue global;
    blitz__idle idle;
    blitz__worker *workers;
    blitz__ct_core *ct;

    BLITZ__ALIGNED blitz__atomic_u32 shutdown;
    blitz__atomic_u32 started;
    blitz__atomic_u32 workers_started;
    blitz__mutex start_lock;
    int shutdown_done;
    blitz__atomic_u32 sweeping; /* the shutdown sweep walks the chunk list */
    /* Threads waiting in blitz_task_wait sleep on this futex word; a task
     * whose joiner is such a thread bumps it on completion. */
    BLITZ__ALIGNED blitz__atomic_u32 completion_seq;
    blitz__atomic_u32 completion_sleepers;
    /* Non-worker threads currently polling a task (blockOnComplete). */
    blitz__atomic_u32 external_running;
    /* Spawns in progress on threads that shutdown does not otherwise wait
     * for (blitz__spawn_enter). */
    blitz__atomic_u32 spawning;
    /* Pinned main tasks woken and not yet picked up by their thread. */
    blitz__atomic_u32 pinned_runnable;
    /* Paused clock only: threads polling a task of this runtime. */
    blitz__atomic_u32 paused_polling;

    /* Block allocator: every chunk, and the cache shared by non-worker
     * threads. */
    blitz__mutex alloc_lock;
    blitz__chunk *chunks;
    blitz__block_cache shared_cache;
    /* Full batches given up by caches, linked through each batch's first
     * block (join_waker.data). */
    blitz__atomic_ptr spare_batches[BLITZ__NUM_CLASSES];
    blitz__worker_counters remote_counters; /* updated under alloc_lock */
    blitz__time_driver time;
    blitz__pool pool;
    void *workers_raw;
    /* The I/O driver (io_driver.c), or NULL when no backend could start. */
    struct blitz__io *io;
    blitz_backend backend_choice;
};

/* Appends `t` to an intrusive FIFO (head, tail) linked through `next`. A
 * task is in at most one such list: it is SCHEDULED and in no queue. */
static inline void blitz__list_append(blitz__task **head, blitz__task **tail, blitz__task *t) {
    t->next = NULL;
    if (*tail)
        (*tail)->next = t;
    else
        *head = t;
    *tail = t;
}

/* ---- forward declarations used across modules ------------------------------ */

BLITZ_PRIVATE void blitz__task_schedule(blitz__task *t);
BLITZ_PRIVATE void blitz__task_reschedule(blitz__task *t, blitz__context *ctx, int yielded);
BLITZ_PRIVATE int blitz__task_spawn_schedule(blitz_runtime *rt, blitz__task *t);
BLITZ_PRIVATE int blitz__workers_start(blitz_runtime *rt);
BLITZ_PRIVATE void blitz__ct_push(blitz_runtime *rt, blitz__task *t);
BLITZ_PRIVATE int blitz__ct_inject(blitz_runtime *rt, blitz__task *t);
BLITZ_PRIVATE void blitz__ct_wait(blitz_runtime *rt, blitz__task *t, blitz__context *ctx);
BLITZ_PRIVATE void blitz__worker_help_until(blitz__context *ctx, blitz__task *t);
BLITZ_PRIVATE void blitz__external_help_until(blitz_runtime *rt, blitz__task *t, int nested);
BLITZ_PRIVATE void blitz__block_on(blitz_runtime *rt, blitz__task *t);
BLITZ_PRIVATE void blitz__wake_batch_begin(void);
BLITZ_PRIVATE void blitz__wake_batch_end(void);
BLITZ_PRIVATE void blitz__task_free(blitz__task *t);
static inline blitz_runtime *blitz__task_runtime(const blitz__task *t);
BLITZ_PRIVATE void blitz__pool_cancel_task(blitz__task *t);
