/* Tracing hooks and metrics: every hook fires as often as its events
 * happen, the snapshot agrees with what was run, and the Prometheus
 * exposition, scraped over HTTP from a server on the runtime itself,
 * parses line by line and moves with the work. */
#include "test_tasks.h"

/* ---- hooks --------------------------------------------------------------- */

typedef struct {
    atomic_long spawn, terminate, poll_start, poll_end, ready;
    atomic_long worker_start, worker_stop, park, unpark;
    atomic_int in_poll, nested; /* poll_start without its poll_end */
} mh_counts;

static void mh_spawn(void *arg, blitz_task *t) {
    CHECK_NOT_NULL(t);
    atomic_fetch_add(&((mh_counts *)arg)->spawn, 1);
}
static void mh_terminate(void *arg, blitz_task *t) {
    CHECK_NOT_NULL(t);
    atomic_fetch_add(&((mh_counts *)arg)->terminate, 1);
}
static void mh_poll_start(void *arg, blitz_task *t) {
    (void)t;
    atomic_fetch_add(&((mh_counts *)arg)->poll_start, 1);
}
static void mh_poll_end(void *arg, blitz_task *t, blitz_poll r) {
    (void)t;
    mh_counts *c = arg;
    atomic_fetch_add(&c->poll_end, 1);
    if (r == BLITZ_READY)
        atomic_fetch_add(&c->ready, 1);
}
/* The calling thread's name starts with `prefix` (Linux names them). */
static void mh_check_name(const char *prefix) {
#if defined(__linux__)
    char name[32] = "";
    CHECK_EQ(pthread_getname_np(pthread_self(), name, sizeof name), 0);
    CHECK(strncmp(name, prefix, strlen(prefix)) == 0);
#else
    (void)prefix;
#endif
}

static void mh_worker_start(void *arg, uint32_t w) {
    CHECK_LT(w, 64);
    char name[32];
    snprintf(name, sizeof name, "blitz-worker-%u", (unsigned)w);
    mh_check_name(name);
    atomic_fetch_add(&((mh_counts *)arg)->worker_start, 1);
}
static void mh_worker_stop(void *arg, uint32_t w) {
    CHECK_LT(w, 64);
    atomic_fetch_add(&((mh_counts *)arg)->worker_stop, 1);
}
static void mh_park(void *arg, uint32_t w) {
    (void)w;
    atomic_fetch_add(&((mh_counts *)arg)->park, 1);
}
static void mh_unpark(void *arg, uint32_t w) {
    (void)w;
    atomic_fetch_add(&((mh_counts *)arg)->unpark, 1);
}

#define MH_KIDS 200
typedef struct {
    BLITZ_CORO;
    int i;
    blitz_timer timer;
    blitz_task *kids[MH_KIDS];
} mh_main;

typedef struct {
    BLITZ_CORO;
    int yields, k;
} mh_kid;

static blitz_poll mh_kid_poll(blitz_cx *cx, void *p) {
    mh_kid *c = p;
    BLITZ_BEGIN(c);
    for (c->k = 0; c->k < c->yields; c->k++)
        BLITZ_YIELD(c, cx);
    BLITZ_END(c);
}

static void mh_blocking_fn(void *arg) {
    mh_check_name("blitz-pool");
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* Spawns MH_KIDS tasks that yield twice and joins them, sleeps once, and
 * runs one blocking job. */
static blitz_poll mh_main_poll(blitz_cx *cx, void *p) {
    mh_main *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < MH_KIDS; s->i++) {
        mh_kid c = {0, 2, 0};
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), mh_kid_poll, &c, sizeof c, &s->kids[s->i]));
    }
    for (s->i = 0; s->i < MH_KIDS; s->i++) {
        BLITZ_AWAIT(s, blitz_join(cx, s->kids[s->i]));
        CHECK_OK(blitz_task_release(&s->kids[s->i]));
    }
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, BLITZ_MSEC));
    BLITZ_END(s);
}

static blitz_config mh_config(tu_flavor f, mh_counts *c) {
    blitz_config cfg = tu_config(f);
    cfg.hooks.arg = c;
    cfg.hooks.task_spawn = mh_spawn;
    cfg.hooks.task_terminate = mh_terminate;
    cfg.hooks.poll_start = mh_poll_start;
    cfg.hooks.poll_end = mh_poll_end;
    cfg.hooks.worker_start = mh_worker_start;
    cfg.hooks.worker_stop = mh_worker_stop;
    cfg.hooks.worker_park = mh_park;
    cfg.hooks.worker_unpark = mh_unpark;
    return cfg;
}

/* After the runtime is freed every count is final: one spawn and one
 * terminate per task, a poll_end per poll_start, a READY per task, every
 * worker started and stopped, and every park followed by its unpark. */
static int metrics_hooks(tu_flavor f) {
    static mh_counts c;
    memset(&c, 0, sizeof c);
    blitz_config cfg = mh_config(f, &c);
    blitz_runtime *rt = tu_rt_config(&cfg);
    mh_main m;
    memset(&m, 0, sizeof m);
    CHECK_OK(blitz_runtime_run(rt, mh_main_poll, &m, sizeof m));
    atomic_int ran = 0;
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn_blocking(rt, mh_blocking_fn, &ran, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_OK(blitz_task_release(&h));
    CHECK_EQ(atomic_load(&ran), 1);
    CHECK_OK(blitz_runtime_free(rt));
    long tasks = MH_KIDS + 2; /* the kids, the main task, the blocking job */
    CHECK_EQ(atomic_load(&c.spawn), tasks);
    CHECK_EQ(atomic_load(&c.terminate), tasks);
    CHECK_EQ(atomic_load(&c.poll_start), atomic_load(&c.poll_end));
    /* Each kid: 3 polls; the main task: at least 2. */
    CHECK_GE(atomic_load(&c.poll_start), 3 * MH_KIDS + 2);
    CHECK_EQ(atomic_load(&c.ready), tasks);
    long workers = f.flavor == BLITZ_MULTI_THREAD ? (long)f.workers : 0;
    CHECK_EQ(atomic_load(&c.worker_start), workers);
    CHECK_EQ(atomic_load(&c.worker_stop), workers);
    CHECK_EQ(atomic_load(&c.park), atomic_load(&c.unpark));
    if (f.flavor != BLITZ_MULTI_THREAD) /* the driver sleeps through the 1 ms timer */
        CHECK_GE(atomic_load(&c.park), 1);
    return 0;
}
TU_FLAVOR_TESTS(metrics_hooks)

/* ---- the snapshot --------------------------------------------------------- */

static uint64_t mx_bucket_sum(const blitz_metrics *m) {
    uint64_t n = 0;
    for (int i = 0; i < BLITZ_METRICS_POLL_BUCKETS; i++)
        n += m->poll_buckets[i];
    return n;
}

/* A thread that reads the metrics while the runtime works: every value
 * it sees only grows (the counters), and the sanitizers see the reads. */
typedef struct {
    blitz_runtime *rt;
    atomic_int stop;
    long reads;
} mx_reader;

static void *mx_reader_main(void *arg) {
    mx_reader *r = arg;
    blitz_metrics *m = malloc(2 * sizeof *m), *prev = m + 1;
    CHECK_NOT_NULL(m);
    memset(prev, 0, sizeof *prev);
    while (!atomic_load(&r->stop)) {
        CHECK_OK(blitz_metrics_get(r->rt, m));
        CHECK_GE(m->polls, prev->polls);
        CHECK_GE(m->tasks_spawned, prev->tasks_spawned);
        CHECK_GE(m->poll_timed, prev->poll_timed);
        CHECK_GE(m->timers_fired, prev->timers_fired);
        memcpy(prev, m, sizeof *m);
        r->reads++;
        sched_yield();
    }
    free(m);
    return NULL;
}

/* With metrics on and every poll timed, after the work (read once the
 * runtime is shut down, when nothing moves): polls, spawns, timers and the
 * pool's job agree with what ran, each timed poll sits in one bucket, and
 * the per-worker polls add up. Without metrics the timed parts stay 0. */
static int metrics_snapshot(tu_flavor f) {
    for (int on = 0; on <= 1; on++) {
        blitz_config cfg = tu_config(f);
        cfg.metrics = on;
        cfg.metrics_poll_sample = 1;
        blitz_runtime *rt = tu_rt_config(&cfg);
        blitz_metrics m;
        CHECK_OK(blitz_metrics_get(rt, &m));
        CHECK_EQ(m.polls, 0);
        CHECK_EQ(m.tasks_spawned, 0);
        CHECK_EQ(m.poll_timed, 0);
        mh_main s;
        memset(&s, 0, sizeof s);
        mx_reader reader = {rt, 0, 0};
        tu_thread th;
        tu_thread_start(&th, mx_reader_main, &reader);
        CHECK_OK(blitz_runtime_run(rt, mh_main_poll, &s, sizeof s));
        atomic_store(&reader.stop, 1);
        tu_thread_join(&th);
        atomic_int ran = 0;
        blitz_task *h = NULL;
        CHECK_OK(blitz_spawn_blocking(rt, mh_blocking_fn, &ran, &h));
        CHECK_OK(blitz_join_blocking(h));
        CHECK_OK(blitz_task_release(&h));
        CHECK_OK(blitz_runtime_shutdown(rt));
        CHECK_OK(blitz_metrics_get(rt, &m));
        CHECK_EQ(m.num_workers, blitz_runtime_workers(rt));
        CHECK_EQ(m.tasks_spawned, MH_KIDS + 2);
        CHECK_GE(m.polls, 3 * MH_KIDS + 2);
        CHECK_EQ(m.timers_armed, 1); /* the main task's one sleep */
        CHECK_EQ(m.timers_fired, 1);
        CHECK_EQ(m.pool_jobs, 1);
        CHECK_EQ(m.global_queue_depth, 0);
        uint64_t worker_polls = 0;
        for (uint32_t i = 0; i < m.num_workers; i++) {
            worker_polls += m.workers[i].polls;
            CHECK_EQ(m.workers[i].queue_depth, 0);
            if (!on)
                CHECK_EQ(m.workers[i].busy_ns, 0);
        }
        CHECK_LE(worker_polls, m.polls);
        CHECK_EQ(mx_bucket_sum(&m), m.poll_timed);
        if (on) {
            /* Every poll was timed; the blocking job is no poll. */
            CHECK_EQ(m.poll_timed, m.polls);
            CHECK_GT(m.poll_ns_sum, 0);
            uint64_t busy = 0;
            for (uint32_t i = 0; i < m.num_workers; i++)
                busy += m.workers[i].busy_ns;
            CHECK_GT(busy, 0);
        } else {
            CHECK_EQ(m.poll_timed, 0);
            CHECK_EQ(m.poll_ns_sum, 0);
        }
        CHECK_OK(blitz_runtime_free(rt));
    }
    return 0;
}
TU_FLAVOR_TESTS(metrics_snapshot)

/* One poll in metrics_poll_sample is timed: a task that yields 8,000
 * times in one drive of a current-thread runtime, sampled one in 8, gets
 * about 1,000 timed polls (the drive's first poll is timed too), and the
 * histogram holds each of them once. */
BLITZ_TEST(metrics_sample_rate) {
    blitz_config cfg = tu_config(TU_CT);
    cfg.metrics = 1;
    cfg.metrics_poll_sample = 8;
    blitz_runtime *rt = tu_rt_config(&cfg);
    mh_kid kid;
    memset(&kid, 0, sizeof kid);
    kid.yields = 8000;
    CHECK_OK(blitz_runtime_run(rt, mh_kid_poll, &kid, sizeof kid));
    blitz_metrics m;
    CHECK_OK(blitz_metrics_get(rt, &m));
    CHECK_GE(m.polls, 8001);
    CHECK_GE(m.poll_timed, m.polls / 8 - 2);
    CHECK_LE(m.poll_timed, m.polls / 8 + 2);
    CHECK_EQ(mx_bucket_sum(&m), m.poll_timed);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(metrics_bad_args) {
    blitz_metrics m;
    CHECK_EQ(blitz_metrics_get(NULL, &m), BLITZ_EINVAL);
    CHECK_EQ(blitz_metrics_format(NULL, NULL, 0), BLITZ_EINVAL);
    blitz_runtime *rt = tu_rt_new(TU_CT);
    CHECK_EQ(blitz_metrics_get(rt, NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_metrics_write(rt, NULL, NULL), BLITZ_EINVAL);
    /* Too small a buffer: the full length, and a NUL-terminated prefix. */
    char small[8];
    int64_t n = blitz_metrics_format(rt, small, sizeof small);
    CHECK_GT(n, (int64_t)sizeof small);
    CHECK_EQ(strlen(small), sizeof small - 1);
    char *big = malloc((size_t)n + 1);
    CHECK_NOT_NULL(big);
    CHECK_EQ(blitz_metrics_format(rt, big, (size_t)n + 1), n);
    CHECK_EQ((int64_t)strlen(big), n);
    CHECK(memcmp(big, small, sizeof small - 1) == 0);
    free(big);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- the exposition, scraped over HTTP ------------------------------------- */

#define MX_FAMILIES 64
#define MX_INF      1e300 /* le="+Inf" */
typedef struct {
    char name[MX_FAMILIES][64];
    char type[MX_FAMILIES][16];
    int help[MX_FAMILIES];
    int samples[MX_FAMILIES];
    int n;
    double polls, hist_count, hist_inf, last_le, last_bucket;
    int buckets;
} mx_parse;

static int mx_family(mx_parse *p, const char *name, size_t len) {
    for (int i = 0; i < p->n; i++)
        if (strlen(p->name[i]) == len && memcmp(p->name[i], name, len) == 0)
            return i;
    return -1;
}

static int mx_name_char(char c, int first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/* One "# HELP" or "# TYPE" line. */
static int mx_comment(mx_parse *p, const char *line) {
    int help = strncmp(line, "# HELP ", 7) == 0;
    CHECK(help || strncmp(line, "# TYPE ", 7) == 0);
    const char *name = line + 7, *end = name;
    while (mx_name_char(*end, end == name))
        end++;
    CHECK(end > name && *end == ' ' && end[1] != '\0');
    int i = mx_family(p, name, (size_t)(end - name));
    if (i < 0) {
        /* HELP then TYPE, once per family. */
        CHECK(help);
        CHECK_LT(p->n, MX_FAMILIES);
        CHECK_LT((size_t)(end - name), sizeof p->name[0]);
        i = p->n++;
        memcpy(p->name[i], name, (size_t)(end - name));
        p->name[i][end - name] = '\0';
        p->help[i] = 1;
        p->type[i][0] = '\0';
        p->samples[i] = 0;
        return 0;
    }
    CHECK(!help && p->type[i][0] == '\0');
    const char *type = end + 1;
    CHECK(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
          strcmp(type, "histogram") == 0);
    snprintf(p->type[i], sizeof p->type[i], "%s", type);
    /* Counters end in _total (the exposition's convention). */
    if (strcmp(type, "counter") == 0)
        CHECK(strlen(p->name[i]) > 6 && strcmp(p->name[i] + strlen(p->name[i]) - 6, "_total") == 0);
    return 0;
}

/* One sample line: name, optional {label="value",...}, one space, value. */
static int mx_sample(mx_parse *p, const char *line) {
    const char *end = line;
    while (mx_name_char(*end, end == line))
        end++;
    CHECK(end > line);
    size_t len = (size_t)(end - line);
    char le[32] = "";
    if (*end == '{') {
        const char *q = end + 1;
        for (;;) {
            const char *lname = q;
            while (mx_name_char(*q, q == lname))
                q++;
            CHECK(q > lname && q[0] == '=' && q[1] == '"');
            const char *v = q + 2, *vend = strchr(v, '"');
            CHECK_NOT_NULL(vend);
            if (q - lname == 2 && memcmp(lname, "le", 2) == 0) {
                CHECK_LT((size_t)(vend - v), sizeof le);
                memcpy(le, v, (size_t)(vend - v));
                le[vend - v] = '\0';
            }
            q = vend + 1;
            if (*q == ',') {
                q++;
                continue;
            }
            CHECK(*q == '}');
            end = q + 1;
            break;
        }
    }
    CHECK(*end == ' ');
    char *vend;
    double value = strtod(end + 1, &vend);
    CHECK(vend > end + 1 && *vend == '\0');
    CHECK(value >= 0);
    /* The family: the name itself, or a histogram's without its suffix. */
    int i = mx_family(p, line, len);
    const char *suffix = "";
    if (i < 0) {
        static const char *const sfx[] = {"_bucket", "_sum", "_count"};
        for (int k = 0; k < 3 && i < 0; k++) {
            size_t sl = strlen(sfx[k]);
            if (len > sl && memcmp(line + len - sl, sfx[k], sl) == 0) {
                i = mx_family(p, line, len - sl);
                suffix = sfx[k];
            }
        }
        CHECK_GE(i, 0);
        CHECK(strcmp(p->type[i], "histogram") == 0);
    }
    /* HELP and TYPE come before the family's first sample. */
    CHECK(p->help[i] && p->type[i][0] != '\0');
    p->samples[i]++;
    if (strcmp(p->type[i], "histogram") == 0) {
        CHECK(*suffix != '\0');
        if (strcmp(suffix, "_bucket") == 0) {
            CHECK(le[0] != '\0');
            double bound = strcmp(le, "+Inf") == 0 ? MX_INF : strtod(le, NULL);
            /* Bounds ascend, cumulative counts never fall. */
            if (p->buckets) {
                CHECK(bound > p->last_le);
                CHECK(value >= p->last_bucket);
            }
            p->buckets++;
            p->last_le = bound;
            p->last_bucket = value;
            if (bound == MX_INF)
                p->hist_inf = value;
        } else if (strcmp(suffix, "_count") == 0) {
            p->hist_count = value;
        }
    }
    if (strcmp(p->name[i], "blitz_polls_total") == 0)
        p->polls = value;
    return 0;
}

/* Checks an HTTP response carrying an exposition, line by line. */
static int mx_check(const char *resp, mx_parse *p) {
    memset(p, 0, sizeof *p);
    p->hist_inf = -1;
    CHECK(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17) == 0);
    CHECK_NOT_NULL(strstr(resp, "Content-Type: text/plain; version=0.0.4"));
    const char *body = strstr(resp, "\r\n\r\n");
    CHECK_NOT_NULL(body);
    body += 4;
    CHECK(*body != '\0' && body[strlen(body) - 1] == '\n');
    char line[512];
    while (*body) {
        const char *nl = strchr(body, '\n');
        CHECK_NOT_NULL(nl);
        CHECK_LT((size_t)(nl - body), sizeof line);
        memcpy(line, body, (size_t)(nl - body));
        line[nl - body] = '\0';
        body = nl + 1;
        CHECK(line[0] != '\0');
        if (line[0] == '#') {
            if (mx_comment(p, line))
                return 1;
        } else if (mx_sample(p, line)) {
            return 1;
        }
    }
    for (int i = 0; i < p->n; i++) {
        CHECK(p->type[i][0] != '\0');
        CHECK_GT(p->samples[i], 0);
    }
    CHECK_GE(mx_family(p, "blitz_poll_duration_seconds", 27), 0);
    CHECK_EQ(p->buckets, BLITZ_METRICS_POLL_BUCKETS);
    CHECK(p->hist_inf == p->hist_count);
    CHECK_GE(mx_family(p, "blitz_worker_busy_seconds_total", 31), 0);
    CHECK_GE(mx_family(p, "blitz_io_ops_submitted_total", 28), 0);
    return 0;
}

/* The server: answers each of `conns` connections with the metrics of its
 * runtime, then closes the listener. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *listener, *conn;
    blitz_io io;
    int conns, got;
    char req[1024];
    char *resp;
    size_t resp_len;
} mx_server;

/* An HTTP/1.1 response with the exposition as its body (malloc'd). */
static char *mx_response(blitz_runtime *rt, size_t *len) {
    int64_t n = blitz_metrics_format(rt, NULL, 0);
    CHECK_GT(n, 0);
    /* Room for growth between the two calls (counters gain digits). */
    size_t cap = (size_t)n + 4096;
    char *body = malloc(cap);
    CHECK_NOT_NULL(body);
    n = blitz_metrics_format(rt, body, cap);
    CHECK_GE(n, 0);
    CHECK_LT((size_t)n, cap);
    char *r = malloc((size_t)n + 256);
    CHECK_NOT_NULL(r);
    int h = snprintf(r, 256,
                     "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                     "Content-Length: %lld\r\nConnection: close\r\n\r\n",
                     (long long)n);
    memcpy(r + h, body, (size_t)n);
    free(body);
    *len = (size_t)h + (size_t)n;
    return r;
}

/* Whether the request's blank line has arrived (memmem is not in C11). */
static int mx_request_done(const char *req, size_t n) {
    for (size_t i = 0; i + 4 <= n; i++)
        if (memcmp(req + i, "\r\n\r\n", 4) == 0)
            return 1;
    return 0;
}

static blitz_poll mx_server_poll(blitz_cx *cx, void *p) {
    mx_server *s = p;
    BLITZ_BEGIN(s);
    for (; s->conns > 0; s->conns--) {
        BLITZ_AWAIT(s, blitz_sock_accept(cx, &s->io, s->listener));
        CHECK_GE(s->io.result, 0);
        s->conn = s->io.socket;
        /* The request: up to its blank line. */
        s->got = 0;
        while (!mx_request_done(s->req, (size_t)s->got)) {
            CHECK_LT((size_t)s->got, sizeof s->req);
            BLITZ_AWAIT(s, blitz_sock_recv(cx, &s->io, s->conn, s->req + s->got,
                                           sizeof s->req - (size_t)s->got));
            CHECK_GT(s->io.result, 0);
            s->got += (int)s->io.result;
        }
        CHECK(strncmp(s->req, "GET /metrics ", 13) == 0);
        s->resp = mx_response(blitz_cx_runtime(cx), &s->resp_len);
        BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->io, s->conn, s->resp, s->resp_len));
        CHECK_EQ(s->io.result, (int64_t)s->resp_len);
        free(s->resp);
        blitz_sock_close(s->conn);
    }
    blitz_sock_close(s->listener);
    BLITZ_END(s);
}

/* The client: GET /metrics, the whole response into `resp`. */
typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_socket *sock;
    blitz_io io;
    char *resp;
    size_t len, cap;
} mx_client;

static const char mx_request[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";

static blitz_poll mx_client_poll(blitz_cx *cx, void *p) {
    mx_client *c = p;
    BLITZ_BEGIN(c);
    BLITZ_AWAIT(c, blitz_tcp_connect(cx, &c->io, &c->addr));
    CHECK_OK((int)(c->io.result < 0 ? c->io.result : 0));
    c->sock = c->io.socket;
    BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, mx_request, sizeof mx_request - 1));
    CHECK_EQ(c->io.result, (int64_t)(sizeof mx_request - 1));
    c->len = 0;
    for (;;) {
        if (c->cap - c->len < 4096) {
            c->cap = c->cap ? 2 * c->cap : 16384;
            c->resp = realloc(c->resp, c->cap);
            CHECK_NOT_NULL(c->resp);
        }
        BLITZ_AWAIT(c, blitz_sock_recv(cx, &c->io, c->sock, c->resp + c->len, c->cap - c->len - 1));
        CHECK_GE(c->io.result, 0);
        if (c->io.result == 0)
            break;
        c->len += (size_t)c->io.result;
    }
    c->resp[c->len] = '\0';
    blitz_sock_close(c->sock);
    BLITZ_END(c);
}

/* Scrape, run work, scrape again: both expositions parse, and the second
 * has more polls and timed polls than the first. */
typedef struct {
    BLITZ_CORO;
    mx_server srv;
    blitz_task *server;
    blitz_task *h;
    blitz_addr addr;
    mh_main work;
    mx_parse before, after;
    int k, failed;
} mx_main;

static blitz_poll mx_main_poll(blitz_cx *cx, void *p) {
    mx_main *s = p;
    BLITZ_BEGIN(s);
    CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), mx_server_poll, &s->srv, sizeof s->srv, &s->server));
    for (s->k = 0; s->k < 2; s->k++) {
        if (s->k == 1) {
            memset(&s->work, 0, sizeof s->work);
            CHECK_OK(
                blitz_spawn(blitz_cx_runtime(cx), mh_main_poll, &s->work, sizeof s->work, &s->h));
            BLITZ_AWAIT(s, blitz_join(cx, s->h));
            CHECK_OK(blitz_task_release(&s->h));
        }
        {
            mx_client c;
            memset(&c, 0, sizeof c);
            c.addr = s->addr;
            CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), mx_client_poll, &c, sizeof c, &s->h));
        }
        BLITZ_AWAIT(s, blitz_join(cx, s->h));
        {
            mx_client *done = blitz_task_state(s->h);
            if (mx_check(done->resp, s->k == 0 ? &s->before : &s->after))
                s->failed = 1;
            free(done->resp);
        }
        CHECK_OK(blitz_task_release(&s->h));
        CHECK(!s->failed);
    }
    BLITZ_AWAIT(s, blitz_join(cx, s->server));
    CHECK_OK(blitz_task_release(&s->server));
    BLITZ_END(s);
}

static int metrics_scrape(tu_flavor f) {
    blitz_config cfg = tu_config(f);
    cfg.metrics = 1;
    cfg.metrics_poll_sample = 1;
    blitz_runtime *rt = tu_rt_config(&cfg);
    mx_main *m = calloc(1, sizeof *m);
    CHECK_NOT_NULL(m);
    m->srv.listener = tu_listen_any(rt, &m->addr);
    m->srv.conns = 2;
    CHECK_OK(blitz_runtime_run(rt, mx_main_poll, m, sizeof *m));
    CHECK(!m->failed);
    /* The work between the scrapes: MH_KIDS tasks of 3 polls each. */
    CHECK_GE(m->after.polls, m->before.polls + 3 * MH_KIDS);
    CHECK_GT(m->after.hist_count, m->before.hist_count);
    CHECK_GE(m->before.n, 20);
    CHECK_EQ(m->after.n, m->before.n);
    free(m);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(metrics_scrape)

/* The exposition of a runtime that never ran is well-formed too. */
BLITZ_TEST(metrics_format_fresh) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    size_t len = 0;
    char *r = mx_response(rt, &len);
    mx_parse *p = calloc(1, sizeof *p);
    CHECK_NOT_NULL(p);
    CHECK_OK(mx_check(r, p));
    CHECK(p->polls == 0 && p->hist_count == 0);
    free(p);
    free(r);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

#if !defined(_WIN32) /* sockets: not on Windows yet */
/* ---- I/O counts ------------------------------------------------------------ */

typedef struct {
    BLITZ_CORO;
    blitz_addr addr;
    blitz_io io;
    blitz_metrics before, after;
} mx_connect;

static blitz_poll mx_connect_poll(blitz_cx *cx, void *p) {
    mx_connect *c = p;
    BLITZ_BEGIN(c);
    CHECK_OK(blitz_metrics_get(blitz_cx_runtime(cx), &c->before));
    BLITZ_AWAIT(c, blitz_tcp_connect(cx, &c->io, &c->addr));
    CHECK_GE(c->io.result, 0);
    CHECK_OK(blitz_metrics_get(blitz_cx_runtime(cx), &c->after));
    CHECK_OK(blitz_sock_close(c->io.socket));
    BLITZ_END(c);
}

/* A TCP connect is one submitted and one completed op on every backend
 * (the kernel's backlog takes the connection; nothing accepts it). */
static int metrics_io_connect(blitz_backend b) {
    blitz_config cfg = tu_config(TU_CT);
    cfg.backend = b;
    cfg.metrics = 1;
    blitz_runtime *rt = tu_io_rt_config(&cfg);
    if (!rt)
        return 0;
    mx_connect c;
    memset(&c, 0, sizeof c);
    blitz_socket *l = tu_listen_any(rt, &c.addr);
    CHECK_OK(blitz_runtime_run(rt, mx_connect_poll, &c, sizeof c));
    CHECK_EQ(c.after.io_submitted - c.before.io_submitted, 1);
    CHECK_EQ(c.after.io_completed - c.before.io_completed, 1);
    CHECK_OK(blitz_sock_close(l));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
BLITZ_TEST(metrics_io_connect_uring) {
    return metrics_io_connect(BLITZ_BACKEND_IO_URING);
}
BLITZ_TEST(metrics_io_connect_epoll) {
    return metrics_io_connect(BLITZ_BACKEND_EPOLL);
}
BLITZ_TEST(metrics_io_connect_poll) {
    return metrics_io_connect(BLITZ_BACKEND_POLL);
}
#endif
