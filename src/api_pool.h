/* Public API: the blocking pool, files, DNS, signals, processes. */

/* ---------------------------------------------------------------------------
 * The blocking pool
 *
 * Work that blocks a thread (a system call without an async form, a long
 * computation, a library that sleeps) runs on the runtime's blocking pool,
 * never on a worker. Threads start on demand, up to
 * blitz_config.max_blocking_threads, and exit after
 * blitz_config.blocking_keep_alive_ns without work. Shutdown cancels the
 * jobs that have not started and waits for the running ones.
 * ------------------------------------------------------------------------- */

/* Private: a job's place in the pool's queue. */
struct blitz__pool_job {
    struct blitz__pool_job *next, *prev;
    /* Runs the job on a pool thread; `cancelled` when it never will run
     * (shutdown), so it only reports that. */
    void (*run)(struct blitz__pool_job *job, int cancelled);
    int linked; /* in a pool list (guarded by the pool's lock) */
};

/* Private: an op carried out by a pool thread. The op lives in the task's
 * state; its job holds a clone of the task's waker, and so the task's
 * block, until the thread is done with it. */
struct blitz__pool_op {
    struct blitz__pool_job job;
    blitz_waker waker;
    blitz_runtime *rt;
    uint32_t state;
    /* The blocking work: fills the op's result (BLITZ_ECANCELED when
     * `cancelled`). */
    void (*exec)(struct blitz__pool_op *op, int cancelled);
    /* Frees a result nobody will take (an op cancelled after it ran). */
    void (*discard)(struct blitz__pool_op *op);
};

/* Runs fn(arg) on a pool thread. The handle is an ordinary task handle:
 * await it with blitz_join, block on it with blitz_task_wait, read its
 * status, release it. blitz_task_cancel before the job started removes it
 * from the queue at once (it completes as cancelled and fn never runs);
 * a running job cannot be stopped and finishes normally.
 * `handle` may be NULL (detached).
 * Returns BLITZ_OK, BLITZ_EINVAL (NULL rt or fn), BLITZ_ENOMEM,
 * BLITZ_ESHUTDOWN, BLITZ_EFULL (blitz_config.blocking_queue_capacity is set
 * and that many jobs already wait for a thread), or a thread-creation error
 * when no pool thread exists and none could be started. */
BLITZ_API int blitz_spawn_blocking(blitz_runtime *rt, blitz_fn fn, void *arg, blitz_task **handle);

typedef struct blitz_blocking_opts {
    blitz_fn fn;        /* required: called with the job's own copy of state */
    const void *state;  /* copied into the job; NULL = zero-filled */
    size_t size;        /* bytes of state, 1..BLITZ_MAX_STATE_SIZE */
    blitz_drop_fn drop; /* optional: frees what the state owns */
} blitz_blocking_opts;

/* blitz_spawn_blocking with a state block that the job owns (as
 * blitz_spawn copies a task's state): fn gets a pointer to the copy, and
 * blitz_task_state(handle) reads it once the job has finished. Nothing the
 * job writes can outlive the job, so the spawner may give up waiting at any
 * time. Same returns as blitz_spawn_blocking (EINVAL also for a bad size). */
BLITZ_API int blitz_spawn_blocking_ex(blitz_runtime *rt, const blitz_blocking_opts *opts,
                                      blitz_task **handle);

/* An awaitable spawn that waits for room in a bounded queue instead of
 * failing with BLITZ_EFULL:
 *   BLITZ_AWAIT(s, blitz_spawn_blocking_await(cx, &s->sp, &opts));
 *   if (s->sp.result == BLITZ_OK) ... s->sp.task is the handle ...
 * Without a capacity it never waits. Zero-filled is ready to use; READY
 * once the job was queued (result BLITZ_OK, task set) or failed (result
 * < 0, task NULL). Waiters get room first come, first served. */
typedef struct blitz_blocking_spawn {
    int result;
    blitz_task *task;
    struct blitz__pool_op blitz__op;
} blitz_blocking_spawn;
BLITZ_API blitz_poll blitz_spawn_blocking_await(blitz_cx *cx, blitz_blocking_spawn *op,
                                                const blitz_blocking_opts *opts);
/* Stops waiting for room (a blitz_cancel_fn; op is the blitz_blocking_spawn). */
BLITZ_API void blitz_spawn_blocking_cancel(blitz_cx *cx, void *op);

typedef struct blitz_pool_stats {
    uint32_t threads;     /* alive pool threads */
    uint32_t idle;        /* of which waiting for work */
    uint32_t queued;      /* jobs waiting for a thread */
    uint32_t max_threads; /* the cap */
    uint64_t threads_started;
    uint64_t jobs_run; /* jobs taken by a thread */
    uint64_t rejected; /* BLITZ_EFULL answers */
} blitz_pool_stats;

/* A snapshot of the pool (taken under its lock, so one instant).
 * BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_runtime_pool_stats(blitz_runtime *rt, blitz_pool_stats *out);

/* Frees memory that blitz allocated and handed to the caller (a whole
 * file's contents, a directory listing, resolved addresses); NULL is fine. */
BLITZ_API void blitz_free(void *p);
