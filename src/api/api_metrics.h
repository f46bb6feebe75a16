/* ---------------------------------------------------------------------------
 * Metrics
 *
 * A snapshot of a runtime's counters (blitz_metrics_get) and the same in
 * the Prometheus text exposition format (blitz_metrics_write). Counters
 * only grow; gauges say how things are now. Each value is read atomically,
 * the set is not one instant. Busy time and the poll duration histogram
 * need blitz_config.metrics; the rest is kept always (and is zero when
 * compiled with BLITZ_NO_STATS). The exposition's names are in the manual
 * (METRICS) and are stable.
 * ------------------------------------------------------------------------- */

/* Poll duration histogram buckets: bucket i < BLITZ_METRICS_POLL_BUCKETS-1
 * counts polls of at most 2^(i+6) ns (64 ns up to about 1.07 s); the last
 * counts longer ones. */
#define BLITZ_METRICS_POLL_BUCKETS 26

typedef struct blitz_worker_metrics {
    uint64_t busy_ns;     /* time awake (not parked); with metrics on */
    uint64_t polls;       /* task polls */
    uint64_t steals;      /* successful steals from other workers */
    uint64_t stolen;      /* tasks taken by those steals */
    uint64_t parks;       /* times the worker went to sleep */
    uint64_t queue_depth; /* tasks in its local queue now */
} blitz_worker_metrics;

typedef struct blitz_metrics {
    uint32_t num_workers;
    uint32_t workers_started;
    blitz_backend backend;
    uint64_t tasks_spawned;
    uint64_t tasks_live; /* spawned and not yet freed */
    uint64_t polls;      /* every poll, workers' and other threads' */
    uint64_t global_queue_depth;
    uint64_t io_submitted; /* socket and descriptor ops started */
    uint64_t io_completed; /* those that finished with a result */
    uint64_t timers_armed;
    uint64_t timers_fired;
    uint32_t pool_threads; /* blocking pool threads alive */
    uint32_t pool_idle;    /* of which idle */
    uint64_t pool_queue_depth;
    uint64_t pool_jobs; /* jobs the pool ran */
    /* Timed polls (one in blitz_config.metrics_poll_sample): per bucket
     * (not cumulative), their count and total duration. */
    uint64_t poll_buckets[BLITZ_METRICS_POLL_BUCKETS];
    uint64_t poll_timed;
    uint64_t poll_ns_sum;
    blitz_worker_metrics workers[BLITZ_MAX_WORKERS]; /* the first num_workers */
} blitz_metrics;

/* Fills *out. BLITZ_EINVAL for NULL arguments. */
BLITZ_API int blitz_metrics_get(const blitz_runtime *rt, blitz_metrics *out);

/* Receives the exposition text piece by piece; a nonzero return stops the
 * writing, and blitz_metrics_write returns it. */
typedef int (*blitz_write_fn)(void *arg, const char *data, size_t len);

/* Writes the runtime's metrics in the Prometheus text exposition format
 * (version 0.0.4) through fn. Returns BLITZ_OK, BLITZ_EINVAL, or what fn
 * returned. */
BLITZ_API int blitz_metrics_write(const blitz_runtime *rt, blitz_write_fn fn, void *arg);

/* The same into buf (at most cap bytes, NUL-terminated when cap > 0), as
 * snprintf: returns the length of the whole text, which did not fit when
 * it is >= cap; BLITZ_EINVAL for a NULL runtime. */
BLITZ_API int64_t blitz_metrics_format(const blitz_runtime *rt, char *buf, size_t cap);
