/* Seeing inside a running runtime: task ids and names, the task dump and
 * its await sites, the stall watchdog, the leak report. */
#include "test_util.h"

/* ---- a growable text sink for dumps ---- */

typedef struct {
    char *data;
    size_t len, cap;
} ob_text;

static int ob_write(void *arg, const char *data, size_t len) {
    ob_text *t = arg;
    if (t->len + len + 1 > t->cap) {
        size_t cap = (t->len + len + 1) * 2;
        char *d = realloc(t->data, cap);
        if (!d)
            return -1;
        t->data = d;
        t->cap = cap;
    }
    memcpy(t->data + t->len, data, len);
    t->len += len;
    t->data[t->len] = 0;
    return 0;
}

static __attribute__((unused)) void ob_dump(blitz_runtime *rt, ob_text *t, unsigned flags) {
    t->len = 0;
    if (t->data)
        t->data[0] = 0;
    CHECK_OK(blitz_runtime_dump_to(rt, ob_write, t, flags));
}

/* The dump line of task `id` (text form), copied into buf; 0 if none. */
static __attribute__((unused)) int ob_line_of(const ob_text *t, uint64_t id, char *buf,
                                              size_t size) {
    char head[32];
    snprintf(head, sizeof head, "task %llu ", (unsigned long long)id);
    for (const char *p = t->data; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (strncmp(p, head, strlen(head)) == 0) {
            snprintf(buf, size, "%.*s", (int)n, p);
            return 1;
        }
        p = end ? end + 1 : p + n;
    }
    return 0;
}

/* A current-thread runtime runs its tasks only while a thread waits on
 * it: a few ticks of driving, for the waiters to reach their awaits. */
typedef struct {
    BLITZ_CORO;
    int n;
} ob_yielder;

static blitz_poll ob_yield_poll(blitz_cx *cx, void *p) {
    ob_yielder *s = p;
    BLITZ_BEGIN(s);
    for (s->n = 0; s->n < 20; s->n++)
        BLITZ_YIELD(s, cx);
    BLITZ_END(s);
}

static __attribute__((unused)) void ob_drive(blitz_runtime *rt) {
    if (blitz_runtime_flavor(rt) != BLITZ_CURRENT_THREAD)
        return;
    ob_yielder y = {0};
    CHECK_OK(blitz_runtime_run(rt, ob_yield_poll, &y, sizeof y));
}

/* ---- tasks that wait on one thing each, at a known line ---- */

typedef struct {
    BLITZ_CORO;
    int line; /* the line of the await below (same source line) */
    int kind;
    blitz_timer timer;
    blitz_socket *listener, *conn;
    blitz_io io;
    char buf[16];
    blitz_chan *ch;
    blitz_chan_op chop;
    int value;
    blitz_mutex *mutex;
    blitz_mutex_lock_op lock;
    blitz_task *child;
} ob_waiter;

enum { OB_TIMER, OB_SOCKET, OB_CHANNEL, OB_MUTEX, OB_JOIN, OB_KINDS };

static blitz_poll ob_waiter_poll(blitz_cx *cx, void *p) {
    ob_waiter *s = p;
    BLITZ_BEGIN(s);
    /* Each await shares its line with the statement that records it. */
    /* clang-format off */
    if (s->kind == OB_TIMER) {
        s->line = __LINE__; BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 3600 * BLITZ_SEC));
    } else if (s->kind == OB_SOCKET) {
        BLITZ_AWAIT(s, blitz_sock_accept(cx, &s->io, s->listener));
        CHECK_OK((int)s->io.result);
        s->conn = s->io.socket;
        s->line = __LINE__; BLITZ_AWAIT(s, blitz_sock_recv(cx, &s->io, s->conn, s->buf, 16));
    } else if (s->kind == OB_CHANNEL) {
        s->line = __LINE__; BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->chop, s->ch, &s->value));
    } else if (s->kind == OB_MUTEX) {
        s->line = __LINE__; BLITZ_AWAIT(s, blitz_mutex_lock(cx, &s->lock, s->mutex));
        blitz_mutex_unlock(s->mutex);
    } else {
        s->line = __LINE__; BLITZ_AWAIT(s, blitz_join(cx, s->child));
    } /* clang-format on */
    BLITZ_END(s);
}

static blitz_poll ob_never(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_PENDING;
}

static int observe_dump_sites(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    blitz_addr bound;
    blitz_socket *listener = tu_listen_any(rt, &bound);
    blitz_chan *ch;
    CHECK_OK(blitz_chan_new(&ch, sizeof(int), 4));
    blitz_mutex mutex;
    CHECK_OK(blitz_mutex_init(&mutex));
    CHECK_OK(blitz_mutex_try_lock(&mutex));
    blitz_task *never;
    blitz_spawn_opts no = {.poll = ob_never, .size = 1, .name = "never"};
    CHECK_OK(blitz_spawn_ex(rt, &no, &never));

    static const char *names[OB_KINDS] = {"timer", "socket", "channel", "mutex", "join"};
    blitz_task *h[OB_KINDS];
    for (int k = 0; k < OB_KINDS; k++) {
        ob_waiter w;
        memset(&w, 0, sizeof w);
        w.kind = k;
        w.listener = listener;
        w.ch = ch;
        w.mutex = &mutex;
        w.child = never;
        blitz_spawn_opts o = {
            .poll = ob_waiter_poll, .state = &w, .size = sizeof w, .name = names[k]};
        CHECK_OK(blitz_spawn_ex(rt, &o, &h[k]));
        CHECK_GT(blitz_task_id(h[k]), 0);
        CHECK(strcmp(blitz_task_name(h[k]), names[k]) == 0);
        for (int j = 0; j < k; j++)
            CHECK_NE(blitz_task_id(h[k]), blitz_task_id(h[j]));
    }
    /* A peer for the socket task's accept, driven from this thread. */
    blitz_io pio;
    memset(&pio, 0, sizeof pio);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_tcp_connect(&pio, &bound)));
    CHECK_OK((int)pio.result);
    blitz_socket *peer = pio.socket;

    static const char *waits[OB_KINDS] = {" on timer due in ", " on socket fd ", " on channel ",
                                          " on mutex ", " on join of task "};
    ob_text text = {0};
    char line[512], want[256];
    double deadline = tu_now() + 30 * tu_timeout_mult();
    int found = 0;
    while (!found && tu_now() < deadline) {
        ob_drive(rt);
        /* A waiter whose wait failed (an injected fault) has ended: it
         * will never show up waiting. */
        for (int k = 0; k < OB_KINDS; k++)
            CHECK_EQ(blitz_task_status(h[k]), BLITZ_EAGAIN);
        ob_dump(rt, &text, 0);
        found = 1;
        for (int k = 0; k < OB_KINDS && found; k++) {
            if (!ob_line_of(&text, blitz_task_id(h[k]), line, sizeof line) ||
                !strstr(line, " idle ") || !strstr(line, waits[k]) ||
                (k == OB_SOCKET && !strstr(line, " read")))
                found = 0;
        }
        if (!found)
            tu_sleep_ms(5);
    }
    if (!found)
        printf("# dump:\n%s", text.data ? text.data : "");
    CHECK(found);
    for (int k = 0; k < OB_KINDS; k++) {
        CHECK(ob_line_of(&text, blitz_task_id(h[k]), line, sizeof line));
        /* The await site: the line each poll recorded for its await. The
         * tasks are idle, so their state may be read once they finish;
         * until then the dump is the only view: check its line number is
         * one of this file's await lines (it is exact below, after). */
        snprintf(want, sizeof want, "\"%s\" idle", names[k]);
        CHECK(strstr(line, want) != NULL);
        CHECK(strstr(line, "at " __FILE__ ":") != NULL);
        CHECK(strstr(line, "(ob_waiter_poll)") != NULL || strstr(line, "poll=0x") != NULL);
    }
    char jl[64];
    snprintf(jl, sizeof jl, " on join of task %llu", (unsigned long long)blitz_task_id(never));
    CHECK(ob_line_of(&text, blitz_task_id(h[OB_JOIN]), line, sizeof line));
    CHECK(strstr(line, jl) != NULL);
    CHECK(ob_line_of(&text, blitz_task_id(never), line, sizeof line));
    CHECK(strstr(line, "\"never\" idle") != NULL);
    CHECK(strstr(text.data, "live tasks\n") != NULL);

    /* JSON: the same tasks, one object each. */
    ob_dump(rt, &text, BLITZ_DUMP_JSON);
    CHECK(strncmp(text.data, "{\n", 2) == 0);
    CHECK(strstr(text.data, "\"wait_kind\": \"timer\"") != NULL);
    CHECK(strstr(text.data, "\"wait_kind\": \"socket\"") != NULL);
    CHECK(strstr(text.data, "\"wait_kind\": \"channel\"") != NULL);
    CHECK(strstr(text.data, "\"wait_kind\": \"mutex\"") != NULL);
    CHECK(strstr(text.data, "\"wait_kind\": \"join\"") != NULL);
    CHECK(strstr(text.data, "\"name\": \"never\"") != NULL);

    /* The sites are exact: release what each waits on, let them finish,
     * and compare with the line each recorded. */
    ob_text before = {0};
    ob_dump(rt, &before, 0);
    blitz_mutex_unlock(&mutex);
    int one = 1;
    CHECK_OK(blitz_chan_try_send(ch, &one));
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_sock_send_all(&pio, peer, "x", 1)));
    CHECK_EQ(pio.result, 1);
    CHECK_OK(blitz_task_cancel(never));
    CHECK_OK(blitz_task_cancel(h[OB_TIMER]));
    for (int k = 0; k < OB_KINDS; k++) {
        int rc = blitz_join_blocking(h[k]);
        CHECK(rc == BLITZ_OK || (k == OB_TIMER && rc == BLITZ_ECANCELED));
        if (k == OB_TIMER)
            continue; /* a cancelled task's state is not readable */
        ob_waiter *w = blitz_task_state(h[k]);
        CHECK_NOT_NULL(w);
        CHECK(ob_line_of(&before, blitz_task_id(h[k]), line, sizeof line));
        snprintf(want, sizeof want, "at %s:%d ", __FILE__, w->line);
        CHECK(strstr(line, want) != NULL);
        if (w->conn)
            CHECK_OK(blitz_sock_close(w->conn));
    }
    /* The timer's line is the one right after the task's BLITZ_BEGIN. */
    CHECK(ob_line_of(&before, blitz_task_id(h[OB_TIMER]), line, sizeof line));
    CHECK(strstr(line, "at " __FILE__ ":") != NULL);
    for (int k = 0; k < OB_KINDS; k++)
        CHECK_OK(blitz_task_release(&h[k]));
    CHECK_OK(blitz_task_release(&never));
    CHECK_OK(blitz_sock_close(peer));
    CHECK_OK(blitz_sock_close(listener));
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_OK(blitz_chan_receiver_release(ch));
    CHECK_OK(blitz_runtime_free(rt));
    blitz_mutex_deinit(&mutex);
    free(text.data);
    free(before.data);
    return 0;
}
TU_FLAVOR_TESTS(observe_dump_sites)

/* ---- ids from inside ---- */

typedef struct {
    BLITZ_CORO;
    uint64_t seen;
} ob_id_state;

static blitz_poll ob_id_poll(blitz_cx *cx, void *p) {
    ob_id_state *s = p;
    s->seen = blitz_cx_task_id(cx);
    return BLITZ_READY;
}

static int observe_ids(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    enum { N = 300 };
    blitz_task *h[N];
    for (int i = 0; i < N; i++) {
        ob_id_state s = {0};
        CHECK_OK(blitz_spawn(rt, ob_id_poll, &s, sizeof s, &h[i]));
        CHECK_NULL(blitz_task_name(h[i]));
    }
    for (int i = 0; i < N; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        ob_id_state *s = blitz_task_state(h[i]);
        CHECK_EQ(s->seen, blitz_task_id(h[i]));
        CHECK_GT(s->seen, 0);
        for (int j = 0; j < i; j++)
            CHECK_NE(blitz_task_id(h[i]), blitz_task_id(h[j]));
    }
    for (int i = 0; i < N; i++)
        CHECK_OK(blitz_task_release(&h[i]));
    CHECK_EQ(blitz_task_id(NULL), 0);
    CHECK_EQ(blitz_cx_task_id(NULL), 0);
    CHECK_EQ(blitz_runtime_dump(NULL, stdout, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_dump(rt, NULL, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_dump(rt, stdout, 0x80), BLITZ_EINVAL);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(observe_ids)

/* ---- a big dump ---- */

typedef struct {
    BLITZ_CORO;
    int line;
} ob_idle_state;

static blitz_poll ob_pending(void) {
    return BLITZ_PENDING;
}

static blitz_poll ob_idle_poll(blitz_cx *cx, void *p) {
    (void)cx;
    ob_idle_state *s = p;
    BLITZ_BEGIN(s);
    /* clang-format off */
    s->line = __LINE__; BLITZ_AWAIT(s, ob_pending());
    /* clang-format on */
    BLITZ_END(s);
}

typedef struct {
    ob_text text;
    size_t lines, at_site;
    char want[128];
} ob_counter;

static int ob_count_write(void *arg, const char *data, size_t len) {
    ob_counter *c = arg;
    return ob_write(&c->text, data, len);
}

BLITZ_TEST(observe_dump_100k) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    enum { N = 100000 };
    ob_idle_state st = {0};
    for (int i = 0; i < N; i++)
        CHECK_OK(blitz_spawn(rt, ob_idle_poll, &st, sizeof st, NULL));
    blitz_stats stats;
    TU_WAIT_UNTIL((blitz_runtime_stats(rt, &stats), stats.total_polled >= N), 60.0, 2);
    ob_counter c;
    memset(&c, 0, sizeof c);
    size_t idle = 0;
    double took = 0;
    for (int tries = 0; tries < 100 && idle < N; tries++) {
        c.text.len = 0;
        double t0 = tu_now();
        CHECK_OK(blitz_runtime_dump_to(rt, ob_count_write, &c, 0));
        took = tu_now() - t0;
        idle = 0;
        for (char *p = c.text.data; p && *p;) {
            char *end = strchr(p, '\n');
            if (!end)
                break;
            *end = 0;
            if (strstr(p, " idle ")) {
                idle++;
                /* Every idle task waits at the one await of ob_idle_poll. */
                CHECK(strstr(p, "at " __FILE__ ":") != NULL);
            }
            p = end + 1;
        }
        if (idle < N)
            tu_sleep_ms(10);
    }
    CHECK_EQ(idle, N);
    printf("# dump of %d tasks took %.1f ms\n", N, took * 1000);
    CHECK_OK(blitz_runtime_free(rt));
    free(c.text.data);
    return 0;
}

/* ---- the stall watchdog ---- */

typedef struct {
    atomic_int reports;
    atomic_ullong id, running_ns;
    atomic_int line;
    const char *_Atomic name;
    const char *_Atomic file;
} ob_stall_seen;

static void ob_on_stall(const blitz_stall_info *info, void *arg) {
    ob_stall_seen *s = arg;
    atomic_store(&s->id, info->task_id);
    atomic_store(&s->running_ns, info->running_ns);
    atomic_store(&s->line, info->line);
    atomic_store(&s->name, info->name);
    atomic_store(&s->file, info->file);
    atomic_fetch_add(&s->reports, 1);
}

typedef struct {
    BLITZ_CORO;
    int line;
    blitz_timer timer;
    ob_stall_seen *seen;
} ob_staller;

static blitz_poll ob_staller_poll(blitz_cx *cx, void *p) {
    ob_staller *s = p;
    BLITZ_BEGIN(s);
    /* clang-format off */
    s->line = __LINE__; BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 1 * BLITZ_MSEC));
    /* clang-format on */
    /* A blocking call inside a poll: at least 200 ms, and until the
     * watchdog has seen it (bounded, for a machine that starves it). */
    usleep(200 * 1000);
    for (int i = 0; i < 2000 && atomic_load(&s->seen->reports) == 0; i++)
        usleep(5 * 1000);
    BLITZ_END(s);
}

static int observe_stall(tu_flavor f) {
    ob_stall_seen seen;
    memset(&seen, 0, sizeof seen);
    blitz_config cfg = tu_config(f);
    cfg.stall_threshold_ns = 100 * BLITZ_MSEC;
    cfg.stall_fn = ob_on_stall;
    cfg.stall_arg = &seen;
    blitz_runtime *rt = tu_rt_config(&cfg);
    ob_staller st = {.seen = &seen};
    blitz_spawn_opts o = {
        .poll = ob_staller_poll, .state = &st, .size = sizeof st, .name = "staller"};
    blitz_task *h;
    CHECK_OK(blitz_spawn_ex(rt, &o, &h));
    CHECK_OK(blitz_join_blocking(h));
    ob_staller *done = blitz_task_state(h);
    CHECK_EQ(atomic_load(&seen.reports), 1);
    CHECK_EQ(atomic_load(&seen.id), blitz_task_id(h));
    CHECK(strcmp(atomic_load(&seen.name), "staller") == 0);
    CHECK(strcmp(atomic_load(&seen.file), __FILE__) == 0);
    CHECK_EQ(atomic_load(&seen.line), done->line);
    CHECK_GE(atomic_load(&seen.running_ns), 100 * BLITZ_MSEC);
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_free(rt));

    /* Off by default: no slots, no thread. */
    rt = tu_rt_new(f);
    CHECK_NULL(rt->stall_slots);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(observe_stall)

/* ---- the leak report ---- */

#if defined(_WIN32) /* the C runtime's descriptors */
#define ob_dup    _dup
#define ob_dup2   _dup2
#define ob_close  _close
#define ob_fileno _fileno
#else
#define ob_dup    dup
#define ob_dup2   dup2
#define ob_close  close
#define ob_fileno fileno
#endif

/* A scratch file for stderr (Windows' tmpfile wants the drive's root). */
static FILE *ob_capture_open(char *dir, size_t n) {
#if defined(_WIN32)
    char path[600];
    tf_tmpdir(dir, n);
    snprintf(path, sizeof path, "%s\\report", dir);
    return fopen(path, "w+");
#else
    (void)n;
    dir[0] = 0;
    return tmpfile();
#endif
}

static int observe_leak_report(tu_flavor f) {
    blitz_config cfg = tu_config(f);
    cfg.leak_report = 1;
    blitz_runtime *rt = tu_rt_config(&cfg);
    blitz_addr bound;
    blitz_socket *listener = tu_listen_any(rt, &bound);
    ob_waiter w;
    memset(&w, 0, sizeof w);
    w.kind = OB_TIMER;
    blitz_spawn_opts o = {.poll = ob_waiter_poll, .state = &w, .size = sizeof w, .name = "leaky"};
    blitz_task *h;
    CHECK_OK(blitz_spawn_ex(rt, &o, &h));
    uint64_t id = blitz_task_id(h);
    ob_text text = {0};
    TU_WAIT_UNTIL((ob_drive(rt), ob_dump(rt, &text, 0), strstr(text.data, " on timer ") != NULL),
                  30.0, 2);
    CHECK_OK(blitz_task_release(&h));

    /* Capture stderr for the report. */
    fflush(stderr);
    char cap_dir[512];
    FILE *cap = ob_capture_open(cap_dir, sizeof cap_dir);
    CHECK_NOT_NULL(cap);
    int saved = ob_dup(2);
    CHECK_GE(saved, 0);
    CHECK_GE(ob_dup2(ob_fileno(cap), 2), 0);
    int rc = blitz_runtime_shutdown(rt);
    fflush(stderr);
    ob_dup2(saved, 2);
    ob_close(saved);
    CHECK_OK(rc);
    char report[4096];
    rewind(cap);
    size_t n = fread(report, 1, sizeof report - 1, cap);
    report[n] = 0;
    fclose(cap);
    if (cap_dir[0])
        tf_rm_rf(cap_dir);
    char want[128];
    snprintf(want, sizeof want, "task %llu \"leaky\" idle", (unsigned long long)id);
    if (!strstr(report, want))
        printf("# report:\n%s", report);
    CHECK(strstr(report, "leak report") != NULL);
    CHECK(strstr(report, want) != NULL);
    CHECK(strstr(report, "at " __FILE__ ":") != NULL);
    CHECK(strstr(report, "1 live tasks") != NULL);
    CHECK(strstr(report, "1 open sockets") != NULL);
    CHECK(strstr(report, "armed timers") != NULL);
    CHECK(strstr(report, "blocking jobs") != NULL);
    CHECK_OK(blitz_sock_close(listener));
    CHECK_OK(blitz_runtime_free(rt));
    free(text.data);
    return 0;
}
TU_FLAVOR_TESTS(observe_leak_report)
