/* Metrics: the snapshot (blitz_metrics_get) and its Prometheus text
 * exposition (blitz_metrics_write).
 *
 * Every counter is written by one thread only (a worker's or the
 * current-thread driver's own, with a relaxed load and a release store),
 * by one thread at a time (the timers', under the time driver's lock), or
 * with an atomic add (the shared ones, for every other thread). A reader
 * loads each with a relaxed atomic load: it sees some value the counter
 * held recently, never a torn one, and nothing else is inferred from it,
 * so no ordering is needed. Sums over workers are taken on read. The names
 * of the exposition are part of the API (manual: METRICS). */
#include "../sched/sched.h"

static uint64_t blitz__metric(const blitz__atomic_u64 *c) {
    return blitz__u64_load(c, BLITZ__RELAXED);
}

/* Adds the counters of `k` that are not per worker into `m`. */
static void blitz__metrics_add(blitz_metrics *m, const blitz__worker_counters *k) {
    m->io_submitted += blitz__metric(&k->io_submitted);
    m->io_completed += blitz__metric(&k->io_completed);
    m->poll_timed += blitz__metric(&k->poll_timed);
    m->poll_ns_sum += blitz__metric(&k->poll_ns_sum);
    for (int i = 0; i < BLITZ_METRICS_POLL_BUCKETS; i++)
        m->poll_buckets[i] += blitz__metric(&k->poll_buckets[i]);
}

BLITZ_API int blitz_metrics_get(const blitz_runtime *rt, blitz_metrics *out) {
    if (!rt || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    blitz_stats st;
    blitz_runtime_stats(rt, &st);
    out->num_workers = st.num_workers;
    out->workers_started = st.workers_started;
    out->backend = blitz_runtime_backend(rt);
    out->tasks_spawned = st.total_spawned;
    out->tasks_live = st.tasks_alive;
    out->polls = st.total_polled;
    out->global_queue_depth = st.global_queue_depth;
    blitz__metrics_add(out, &rt->remote_counters);
    if (rt->time) {
        out->timers_armed = blitz__metric(&rt->time->armed);
        out->timers_fired = blitz__metric(&rt->time->fired);
    }
    for (uint32_t i = 0; i < rt->num_workers; i++) {
        const blitz__worker_counters *k =
            rt->workers ? &rt->workers[i].counters : &rt->ct->counters;
        blitz_worker_metrics *w = &out->workers[i];
        blitz__metrics_add(out, k);
        w->busy_ns = blitz__metric(&k->busy_ns);
        w->polls = blitz__metric(&k->polled);
        w->steals = blitz__metric(&k->steals);
        w->stolen = blitz__metric(&k->stolen);
        w->parks = blitz__metric(&k->parked);
        w->queue_depth = rt->workers ? blitz__local_queue_len(&rt->workers[i].queue) : 0;
    }
    /* The pool's numbers are guarded by its lock; reading them does not
     * change the runtime. */
    blitz__pool *p = ((blitz_runtime *)(uintptr_t)rt)->pool;
    blitz__mutex_lock(&p->lock);
    out->pool_threads = p->threads;
    out->pool_idle = p->idle;
    out->pool_queue_depth = p->queued;
    out->pool_jobs = p->jobs_run;
    blitz__mutex_unlock(&p->lock);
    return BLITZ_OK;
}

/* ---- the exposition --------------------------------------------------------- */

typedef struct {
    blitz_write_fn fn;
    void *arg;
    int rc;
} blitz__expo;

static void blitz__expo_put(blitz__expo *e, const char *fmt, ...) BLITZ__PRINTF(2, 3);
static void blitz__expo_put(blitz__expo *e, const char *fmt, ...) {
    if (e->rc)
        return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = (int)sizeof line - 1;
    e->rc = e->fn(e->arg, line, (size_t)n);
}

static void blitz__expo_head(blitz__expo *e, const char *name, const char *type, const char *help) {
    blitz__expo_put(e, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric with one unlabelled sample. */
static void blitz__expo_one(blitz__expo *e, const char *name, const char *type, const char *help,
                            uint64_t v) {
    blitz__expo_head(e, name, type, help);
    blitz__expo_put(e, "%s %llu\n", name, (unsigned long long)v);
}

/* A metric with one sample per worker. `field` picks the value. */
static void blitz__expo_workers(blitz__expo *e, const blitz_metrics *m, const char *name,
                                const char *type, const char *help, size_t field) {
    blitz__expo_head(e, name, type, help);
    for (uint32_t i = 0; i < m->num_workers; i++) {
        uint64_t v;
        memcpy(&v, (const char *)&m->workers[i] + field, sizeof v);
        blitz__expo_put(e, "%s{worker=\"%u\"} %llu\n", name, (unsigned)i, (unsigned long long)v);
    }
}

static const char *blitz__backend_label(blitz_backend b) {
    switch (b) {
    case BLITZ_BACKEND_IO_URING:
        return "io_uring";
    case BLITZ_BACKEND_EPOLL:
        return "epoll";
    case BLITZ_BACKEND_POLL:
        return "poll";
    default:
        return "none";
    }
}

BLITZ_API int blitz_metrics_write(const blitz_runtime *rt, blitz_write_fn fn, void *arg) {
    if (!rt || !fn)
        return BLITZ_EINVAL;
    blitz_metrics *m = (blitz_metrics *)blitz__malloc(sizeof *m);
    if (!m)
        return BLITZ_ENOMEM;
    blitz_metrics_get(rt, m);
    blitz__expo e = {fn, arg, 0};
    blitz__expo_one(&e, "blitz_workers", "gauge", "Worker threads of the runtime.", m->num_workers);
    blitz__expo_head(&e, "blitz_worker_busy_seconds_total", "counter",
                     "Time each worker spent awake (metrics on).");
    for (uint32_t i = 0; i < m->num_workers; i++)
        blitz__expo_put(&e, "blitz_worker_busy_seconds_total{worker=\"%u\"} %.9f\n", (unsigned)i,
                        (double)m->workers[i].busy_ns / 1e9);
    blitz__expo_workers(&e, m, "blitz_worker_polls_total", "counter", "Task polls by each worker.",
                        offsetof(blitz_worker_metrics, polls));
    blitz__expo_workers(&e, m, "blitz_worker_steals_total", "counter",
                        "Successful steals from other workers' queues.",
                        offsetof(blitz_worker_metrics, steals));
    blitz__expo_workers(&e, m, "blitz_worker_stolen_tasks_total", "counter",
                        "Tasks taken by those steals.", offsetof(blitz_worker_metrics, stolen));
    blitz__expo_workers(&e, m, "blitz_worker_parks_total", "counter",
                        "Times each worker went to sleep for want of work.",
                        offsetof(blitz_worker_metrics, parks));
    blitz__expo_workers(&e, m, "blitz_worker_local_queue_depth", "gauge",
                        "Tasks in each worker's local queue.",
                        offsetof(blitz_worker_metrics, queue_depth));
    blitz__expo_one(&e, "blitz_global_queue_depth", "gauge", "Tasks in the global queue.",
                    m->global_queue_depth);
    blitz__expo_one(&e, "blitz_tasks_spawned_total", "counter", "Tasks spawned.", m->tasks_spawned);
    blitz__expo_one(&e, "blitz_tasks_live", "gauge", "Tasks spawned and not yet freed.",
                    m->tasks_live);
    blitz__expo_one(&e, "blitz_polls_total", "counter", "Task polls on every thread.", m->polls);
    const char *be = blitz__backend_label(m->backend);
    blitz__expo_head(&e, "blitz_io_ops_submitted_total", "counter",
                     "Socket and descriptor operations started.");
    blitz__expo_put(&e, "blitz_io_ops_submitted_total{backend=\"%s\"} %llu\n", be,
                    (unsigned long long)m->io_submitted);
    blitz__expo_head(&e, "blitz_io_ops_completed_total", "counter",
                     "Socket and descriptor operations finished with a result.");
    blitz__expo_put(&e, "blitz_io_ops_completed_total{backend=\"%s\"} %llu\n", be,
                    (unsigned long long)m->io_completed);
    blitz__expo_one(&e, "blitz_timers_armed_total", "counter", "Timers armed.", m->timers_armed);
    blitz__expo_one(&e, "blitz_timers_fired_total", "counter", "Timers fired.", m->timers_fired);
    blitz__expo_one(&e, "blitz_blocking_threads", "gauge", "Blocking pool threads alive.",
                    m->pool_threads);
    blitz__expo_one(&e, "blitz_blocking_idle_threads", "gauge",
                    "Blocking pool threads waiting for work.", m->pool_idle);
    blitz__expo_one(&e, "blitz_blocking_queue_depth", "gauge",
                    "Blocking pool jobs waiting for a thread.", m->pool_queue_depth);
    blitz__expo_one(&e, "blitz_blocking_jobs_total", "counter", "Blocking pool jobs run.",
                    m->pool_jobs);
    blitz__expo_head(&e, "blitz_poll_duration_seconds", "histogram",
                     "Durations of sampled task polls (metrics on).");
    uint64_t cum = 0;
    for (int i = 0; i < BLITZ_METRICS_POLL_BUCKETS - 1; i++) {
        cum += m->poll_buckets[i];
        blitz__expo_put(&e, "blitz_poll_duration_seconds_bucket{le=\"%.10g\"} %llu\n",
                        (double)(UINT64_C(1) << (i + 6)) / 1e9, (unsigned long long)cum);
    }
    cum += m->poll_buckets[BLITZ_METRICS_POLL_BUCKETS - 1];
    /* The buckets are read one by one while polls go on: the count is
     * their sum, so +Inf and _count agree. */
    blitz__expo_put(&e, "blitz_poll_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
                    (unsigned long long)cum);
    blitz__expo_put(&e, "blitz_poll_duration_seconds_sum %.9f\n", (double)m->poll_ns_sum / 1e9);
    blitz__expo_put(&e, "blitz_poll_duration_seconds_count %llu\n", (unsigned long long)cum);
    blitz__free(m);
    return e.rc;
}

typedef struct {
    char *buf;
    size_t cap, len;
} blitz__expo_buf;

static int blitz__expo_to_buf(void *arg, const char *data, size_t len) {
    blitz__expo_buf *b = (blitz__expo_buf *)arg;
    if (b->len < b->cap) {
        size_t room = b->cap - 1 - b->len, n = len < room ? len : room;
        memcpy(b->buf + b->len, data, n);
        b->buf[b->len + n] = '\0';
    }
    b->len += len;
    return 0;
}

BLITZ_API int64_t blitz_metrics_format(const blitz_runtime *rt, char *buf, size_t cap) {
    if (!rt || (!buf && cap))
        return BLITZ_EINVAL;
    blitz__expo_buf b = {buf, cap, 0};
    if (cap)
        buf[0] = '\0';
    int rc = blitz_metrics_write(rt, blitz__expo_to_buf, &b);
    return rc ? rc : (int64_t)b.len;
}
