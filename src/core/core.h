/* The task core's internal API: the task block, the block allocator, the
 * thread context, and the runtime every task belongs to.
 *
 * The runtime struct lives here because every layer reads it; the parts
 * owned by higher layers (run queues, idle set, workers, the time driver,
 * the blocking pool, the I/O driver) are behind pointers to types those
 * layers define, and runtime.c allocates them in one block with it. */
#ifndef BLITZ__CORE_H
#define BLITZ__CORE_H
#include "../platform/base.h"

/* ---- tasks (task_state.c, task.c, task_alloc.c) -------------------------- */

/* The task header. A task is one block: this header, then the user's state
 * (16-byte aligned), and, when the task has a drop function, that pointer in
 * the block's last 8 bytes. The runtime a task belongs to is found from the
 * 64 KiB-aligned chunk that holds the block, so the header carries no
 * runtime pointer, and the join waker's vtable is a 3-bit index in the
 * state word: 56 bytes in all. */
struct blitz_task {
    /* ref_count 24 | shield 8 | flags 8 | lifecycle 8 | low flags 16; see
     * task_state.c. Zero means the block is free. */
    blitz__atomic_u64 state;
    blitz_poll_fn poll;
    /* Intrusive link: global queue, current-thread queue, or a free list. A
     * task is in at most one of them, guarded by the SCHEDULED lifecycle.
     * While the task is IDLE (in no list) the slot holds when it went idle
     * (blitz__context.clock_ns, 0 = unknown), for the task dump. */
    union {
        struct blitz_task *next;
        uint64_t idle_since;
    };
    /* The data of the waker of the task awaiting this one (its vtable is
     * named by the state word, see join.c); owned by whoever the
     * JOIN_WAKER protocol says. */
    const void *join_data;
    /* The op the task is suspended in, recorded by the op during the poll
     * that returned PENDING (blitz_cx_pending; cleared before every poll),
     * and withdrawn with it when the task is cancelled. Only the thread
     * that owns the task (RUNNING) touches them; the state word's
     * transitions order one owner's writes before the next one's reads. */
    blitz_cancel_fn pending_cancel;
    void *pending_op;
    /* The task's id (runtime/dump.c): given at spawn, never changes. */
    uint64_t id;
};
typedef struct blitz_task blitz__task;

#define BLITZ__TASK_HEADER_SIZE 56u
_Static_assert(sizeof(struct blitz_task) == BLITZ__TASK_HEADER_SIZE || sizeof(void *) != 8,
               "task header layout");

/* ---- the block allocator (task_alloc.c) ---------------------------------- */

#define BLITZ__CHUNK_SIZE  ((size_t)64 * 1024)
#define BLITZ__NUM_CLASSES 30
#define BLITZ__CLASS_LARGE 0xffffu

/* Join handles carry their block's generation in a debug build with room
 * for it in a pointer (platform/handle_check.c). */
#if BLITZ__CHECK_HANDLES && UINTPTR_MAX > 0xffffffffu
#define BLITZ__TAG_HANDLES 1
#else
#define BLITZ__TAG_HANDLES 0
#endif

typedef struct blitz__chunk {
    blitz_runtime *rt;
    struct blitz__chunk *next;
    void *raw; /* what to hand back to the allocator */
    uint32_t block_size;
    uint32_t class_index;
    uint32_t capacity; /* blocks that fit */
    /* Blocks handed out so far. Written by the chunk's one carver with
     * release after zeroing the block's state word, so a walk that reads
     * it with acquire never looks at uninitialised memory. */
    blitz__atomic_u32 carved;
    /* Set (release) once no cache carves the chunk any more: then a trim
     * may free it when all of its carved blocks are free. */
    blitz__atomic_u32 retired;
    uint32_t trim_free; /* a trim's count of its free blocks (alloc_lock) */
    int trim_ok;        /* a trim's verdict on this chunk alone (alloc_lock) */
    /* A group's first chunk: the chunks in its group, and how many of
     * them were handed out (alloc_lock). */
    uint32_t group_n, group_handed;
} blitz__chunk;

/* Free blocks by size class, moved between caches in whole batches of
 * BLITZ__FREE_BATCH blocks. Each worker has one (no locking); threads that
 * are not workers share one behind alloc_lock. */
typedef struct blitz__block_cache {
    /* Task ids handed out by this cache: next, and the end of the range
     * it took from the runtime (blitz__task_id_next). */
    uint64_t id_next, id_end;
    blitz__task *active[BLITZ__NUM_CLASSES]; /* free blocks, LIFO */
    uint32_t active_count[BLITZ__NUM_CLASSES];
    blitz__task *full[BLITZ__NUM_CLASSES]; /* one full batch held back, or NULL */
    blitz__chunk *carving[BLITZ__NUM_CLASSES];
    uint32_t trim_epoch; /* the runtime's trim_epoch when this cache last gave its blocks back */
} blitz__block_cache;

typedef struct blitz__worker_counters {
    blitz__atomic_u64 polled, stolen, steals, parked, lifo_hits, batch_fetches, overflows;
    blitz__atomic_u64 spawned, freed;
    /* Join handles given out and released: blitz_runtime_free does not
     * wait for blocks that only a handle the program holds keeps alive. */
    blitz__atomic_u64 handles, handles_released;
    /* ---- metrics (blitz_metrics_get) ---- */
    blitz__atomic_u64 io_submitted, io_completed;
    blitz__atomic_u64 busy_ns, poll_timed, poll_ns_sum;
    blitz__atomic_u64 poll_buckets[BLITZ_METRICS_POLL_BUCKETS];
} blitz__worker_counters;

/* Defined by the layers above (sched, time, io). */
typedef struct blitz__worker blitz__worker;
typedef struct blitz__ct_core blitz__ct_core;
typedef struct blitz__global_queue blitz__global_queue;
typedef struct blitz__idle blitz__idle;
typedef struct blitz__time_driver blitz__time_driver;
typedef struct blitz__pool blitz__pool;

/* ---- thread context (seed 002 "Thread-Local Context") ---------------------- */

struct blitz__context {
    /* First: BLITZ_BEGIN reaches it through the context pointer alone. */
    struct blitz__coro_site note;
    blitz_runtime *rt;
    blitz__worker *worker; /* NULL on the current-thread driver and on helpers */
    int ct_driver;         /* this thread drives rt (current-thread flavour) */
    blitz__task *current;  /* the task being polled, or NULL */
    /* Poll functions of rt whose await sites this thread found recorded,
     * by address bits: their tasks' site notes are dropped without a
     * look-up. */
    blitz_poll_fn site_known[4];
    /* How this thread runs a task (blitz__task_run): the plain harness, or,
     * when the runtime has poll hooks or metrics or this thread has a stall
     * watchdog slot, the observing one. Chosen with the context, so a
     * plain poll tests nothing for observability. */
    int (*run)(blitz__task *t, struct blitz__context *ctx);
    /* Polls until the next observed one (the observing harness's slow
     * path, which sets it again from the runtime's settings). */
    uint32_t poll_countdown;
    uint32_t poll_seq; /* observed polls here, for sampling under poll hooks */
    /* A block_on thread polling its task: it waits in the shared ring for
     * the file ops it submits there (io/uring.c's blitz__uring_wait_files). */
    int files_reaper;
    /* Filled in by the scheduler that owns the thread, so the layers below
     * it need not know its types: the thread's block cache and counters
     * (NULL: the shared ones), and its worker index (-1: not a worker). */
    blitz__block_cache *cache;
    blitz__worker_counters *counters;
    int worker_index;
    /* ---- observation (runtime/dump.c, runtime/stall.c) ----
     * clock_ns: the clock at the start of the scheduler's current tick (0:
     * not kept), stamped on tasks that go idle. stall: this thread's slot
     * of the stall watchdog, or NULL. */
    uint64_t clock_ns;
    struct blitz__stall_slot *stall;
};

/* A thread's poll in progress, as the stall watchdog sees it. The thread
 * writes every field with relaxed stores and `since` last with release
 * before each poll, and clears `since` after it; the watchdog reads
 * `since` (acquire), then the rest, then `since` again, and drops the
 * reading when it changed. All atomics: the two race by design. */
typedef struct blitz__stall_slot {
    BLITZ__ALIGNED blitz__atomic_u64 since; /* poll start (ns), 0 = not polling */
    blitz__atomic_u64 id, site, name, poll;
    blitz__atomic_u32 line;
    uint64_t reported_since; /* the watchdog's own: a stall is reported once */
} blitz__stall_slot;

/* The poll context handed to poll functions. A context with no task polls
 * an op for a plain thread (blitz_op_run_blocking) or for a runtime-internal
 * waiter: its waker is `waker` instead of the task's. */
struct blitz_cx {
    blitz__task *task;
    blitz__context *ctx;
    int yielded;
    blitz_waker waker;
};

/* Records the op the running task is suspended in (blitz_cx_pending) and
 * returns BLITZ_PENDING: what an op's poll returns when it must wait. */
static inline blitz_poll blitz__pending(blitz_cx *cx, blitz_cancel_fn cancel, void *op) {
    if (cx && cx->task) {
        cx->task->pending_cancel = cancel;
        cx->task->pending_op = op;
    }
    return BLITZ_PENDING;
}
/* `r`, recording the op when it is PENDING. */
static inline blitz_poll blitz__record(blitz_cx *cx, blitz_poll r, blitz_cancel_fn cancel,
                                       void *op) {
    return r == BLITZ_PENDING ? blitz__pending(cx, cancel, op) : r;
}
/* What the running task recorded so far in this poll. */
static inline void blitz__cx_pending_get(blitz_cx *cx, blitz_cancel_fn *cancel, void **op) {
    *cancel = NULL;
    *op = NULL;
    if (cx && cx->task) {
        *cancel = cx->task->pending_cancel;
        *op = cx->task->pending_op;
    }
}

/* ---- deferred kicks (defer.c) ------------------------------------------------
 * A kick of another thread (fn(arg)) made inside a begin/end span runs at
 * the outermost end, on the calling thread; outside one, at once. */
BLITZ_PRIVATE void blitz__defer_begin(void);
BLITZ_PRIVATE void blitz__defer_end(void);
BLITZ_PRIVATE void blitz__defer_kick(void (*fn)(void *), void *arg);

/* ---- coroutine sites (task.c) ------------------------------------------------
 * The first BLITZ_BEGIN a task runs records, for the task's poll function,
 * the file it is in and the offset of its resume int in the state: one
 * entry per poll function (tasks of one poll function share the layout),
 * in an open-addressed table that only grows; full, sites are unknown.
 * site packs the file pointer (low 48 bits) and offset + 1 (high 16).
 * Entries are claimed with a CAS on `poll`, then `site` is stored:
 * readers take 0 for unknown. */
#define BLITZ__SITES 256u
typedef struct blitz__site_entry {
    blitz__atomic_u64 poll, site;
} blitz__site_entry;

/* ---- the runtime (runtime.c) ------------------------------------------------ */

struct blitz_runtime {
    blitz_flavor flavor;
    uint32_t num_workers;
    uint64_t park_timeout_ns;
    uint32_t spin_before_park;
    int spin_explicit; /* spin_before_park was set in the config */
    uint32_t fixed_interval;

    blitz__global_queue *global;
    blitz__idle *idle;
    blitz__worker *workers;
    blitz__ct_core *ct;

    BLITZ__ALIGNED blitz__atomic_u32 shutdown;
    blitz__atomic_u32 started;
    blitz__atomic_u32 workers_started;
    blitz__mutex start_lock;
    int shutdown_done;
    blitz__atomic_u32 sweeping; /* the shutdown sweep walks the chunk list */
    /* Threads waiting in blitz_join_blocking sleep on this futex word; a task
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
    /* Chunks come in groups (task_alloc.c): the rest of the newest group,
     * not handed out yet, and how many groups were allocated. */
    char *chunk_spare;
    uint32_t chunk_spare_left, chunk_groups;
    blitz__chunk *chunk_group; /* the first chunk of the group chunk_spare is in */
    blitz__block_cache shared_cache;
    /* Full batches given up by caches, linked through each batch's first
     * block (join_data). */
    blitz__atomic_ptr spare_batches[BLITZ__NUM_CLASSES];
    /* Chunks of size classes held, and how many the last trim left
     * (written under alloc_lock, read without it to decide on a trim);
     * trim_epoch counts the trims that growth or frees started. */
    blitz__atomic_u32 chunks_held, chunks_at_trim, trim_epoch;
    /* Batches given to the spares since the last trim, and the free
     * blocks that trim kept (written under alloc_lock). */
    blitz__atomic_u32 spares_since_trim, free_at_trim;
    /* The clock before which no trim started by growth or frees runs
     * (written under alloc_lock after a trim that freed chunks). */
    blitz__atomic_u64 trim_not_before;
    uint64_t trim_delay_ns;                 /* BLITZ__TRIM_DELAY_NS; tests set it */
    blitz__worker_counters remote_counters; /* updated under alloc_lock */
    /* Join waker vtables other than the task waker's, by index - 1
     * (blitz__join_vtable): claimed once each, never changed. */
    blitz__atomic_ptr join_vtables[6];
    /* ---- observation (runtime/dump.c) ---- */
    blitz__atomic_u64 id_ranges; /* task ids handed to caches so far */
    /* Where the tasks of each poll function keep their resume point
     * (blitz__coro_note_take). */
    blitz__site_entry sites[BLITZ__SITES];
    struct blitz__stall *stall; /* the stall watchdog, or NULL */
    /* Its slots: one per worker (index), or one for the current-thread
     * driver; NULL without a watchdog. */
    struct blitz__stall_slot *stall_slots;
    int leak_report; /* report what is still open at free */
    blitz__time_driver *time;
    blitz__pool *pool;
    void *workers_raw;
    /* The I/O driver (io_driver.c), or NULL when no backend could start. */
    struct blitz__io *io;
    /* The current-thread driver's parker (&ct->parker), or NULL. */
    blitz__parker *ct_parker;
    blitz_backend backend_choice;
    /* ---- observability: tracing hooks and metrics ---- */
    /* Fixed at creation. observe: a poll hook is set or metrics are on,
     * so polls take the observed path (blitz__task_poll_observed);
     * observe_workers: a park hook is set or metrics are on. */
    int observe, observe_workers;
    int poll_hooks; /* poll_start or poll_end is set */
    int task_hooks; /* task_spawn or task_terminate is set */
    int metrics;
    uint32_t poll_sample_mask; /* one poll in mask + 1 is timed */
    blitz_hooks hooks;
};

/* ---- thread contexts (continued) ------------------------------------------- */

/* The task harnesses (task.c); blitz__context.run holds one. */
BLITZ_PRIVATE int blitz__task_run_plain(blitz__task *t, blitz__context *ctx);
BLITZ_PRIVATE int blitz__task_run_observed(blitz__task *t, blitz__context *ctx);

/* A context for `rt` that owns no cache and is no worker. */
static inline void blitz__context_init(blitz__context *c, blitz_runtime *rt) {
    c->note.resume = NULL;
    c->note.file = NULL;
    c->rt = rt;
    c->run = rt && rt->observe ? blitz__task_run_observed : blitz__task_run_plain;
    c->worker = NULL;
    c->ct_driver = 0;
    c->files_reaper = 0;
    c->current = NULL;
    for (int i = 0; i < 4; i++)
        c->site_known[i] = NULL;
    c->cache = NULL;
    c->counters = NULL;
    c->worker_index = -1;
    c->poll_countdown = 1;
    c->poll_seq = 0;
    c->clock_ns = 0;
    c->stall = NULL;
}

/* Gives the thread of `c` its stall watchdog slot (NULL: none). */
static inline void blitz__context_set_stall(blitz__context *c, blitz__stall_slot *slot) {
    c->stall = slot;
    if (slot)
        c->run = blitz__task_run_observed;
}

/* Runs a SCHEDULED task once on the calling thread (context `ctx`): polls
 * it, or completes it as cancelled. Returns 1 when the poll function ran. */
static inline int blitz__task_run(blitz__task *t, blitz__context *ctx) {
    return ctx->run(t, ctx);
}

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

/* ---- counting ----------------------------------------------------------------
 * A counter of the calling thread when it owns one of rt's (a worker or the
 * current-thread driver: only that thread writes it, so a load and a store
 * do, and readers on other threads load it atomically and see some recent
 * value), else rt's shared one, updated with an atomic add. */
static inline blitz__worker_counters *blitz__counters_mine(blitz_runtime *rt) {
    blitz__context *ctx = blitz__context_get();
    return ctx && ctx->rt == rt ? ctx->counters : NULL;
}
#define BLITZ__COUNT(rt, field, n)                                                                \
    do {                                                                                          \
        blitz__worker_counters *blitz__k = blitz__counters_mine(rt);                              \
        if (blitz__k)                                                                             \
            BLITZ__STAT(blitz__u64_bump(&blitz__k->field, (n)));                                  \
        else                                                                                      \
            BLITZ__STAT(blitz__u64_fetch_add(&(rt)->remote_counters.field, (n), BLITZ__RELAXED)); \
    } while (0)

/* ---- op adapters -----------------------------------------------------------
 * A blitz_op carries one void pointer, so its poll is an adapter: it casts
 * the pointer back to `type *obj` and returns `call`, the real poll written
 * with `cx`, `obj` and what the op's constructor stored in `obj`. */
#define BLITZ__OP_ADAPTER(name, type, obj, call)            \
    static blitz_poll name(blitz_cx *cx, void *obj##_arg) { \
        type *obj = (type *)obj##_arg;                      \
        return call;                                        \
    }

/* ---- hooks into the scheduler and the time driver ----------------------------
 * The only calls from the task core up the layers: a woken task goes to
 * its scheduler, a thread that waits for a task helps run it, and a spawn
 * deadline is a timer. */
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
/* Join wakers (task.c): the vtable that index `idx` names for `t`'s
 * runtime, and the index of `vt`, claiming a free one on first use
 * (BLITZ__JOIN_VT_BOXED when all are taken). */
BLITZ_PRIVATE const blitz_waker_vtable *blitz__join_vtable(const blitz__task *t, uint32_t idx);
BLITZ_PRIVATE uint32_t blitz__join_vtable_index(const blitz__task *t, const blitz_waker_vtable *vt);
/* Wakes the joiner stored in `t` as `prev` (its state word while
 * JOIN_WAKER was set) names it, consuming the waker (join.c). */
BLITZ_PRIVATE void blitz__join_wake(blitz__task *t, uint64_t prev);
/* A timer became the earliest: wake the worker sleeping for timers (1 +
 * its index in `sleeper`), or any parked worker when there is none. */
BLITZ_PRIVATE void blitz__sched_kick_timers(blitz_runtime *rt, uint32_t sleeper);
/* A spawn deadline: arms `timer` to wake `w` timeout_ns from now on the
 * runtime's clock (the timer keeps a clone of `w`), and disarms it. */
BLITZ_PRIVATE void blitz__deadline_arm(blitz_runtime *rt, blitz_timer *timer, int64_t timeout_ns,
                                       const blitz_waker *w);
BLITZ_PRIVATE void blitz__deadline_disarm(blitz_timer *timer);
/* The first socket of a runtime starts its workers. */

#endif
