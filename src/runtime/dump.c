/* The task dump and the leak report: every live task of a running runtime,
 * with where it waits and on what.
 *
 * Registry: the block allocator's chunks are the list of live tasks (a
 * free block's state word is zero), so a spawn pays nothing for the dump
 * and a task carries no list links. Walking them is O(blocks carved).
 *
 * Protocol, from any thread, while the runtime runs:
 *   1. announce in external_running, then check shutdown (seq_cst both, as
 *      helping threads do): shutdown waits for the count before it sweeps,
 *      and a dump that sees shutdown takes no task over (step 3);
 *   2. under alloc_lock, pin every block whose word is nonzero with a
 *      reference (a CAS that leaves a word with no reference alone). No
 *      chunk goes away under the lock, and a pinned block is not freed
 *      (blitz__task_discard waits out the pin too). The word is published
 *      by the spawn's release store, so the pin's acquire sees the id,
 *      poll function and name, fixed from then on;
 *   3. outside the lock, take each IDLE task over (IDLE -> RUNNING, the
 *      CAS a scheduler makes, acquire): as its owner the dump reads what
 *      its last poll left (resume point, pending op, idle stamp) with no
 *      race, then hands it back (RUNNING -> IDLE with release, or to its
 *      scheduler when a wake or a cancel came meanwhile). A task that is
 *      scheduled or running is listed without its site: its owner may be
 *      writing it;
 *   4. drop the pins (the last one frees the block, as a waker's would).
 *
 * The leak report runs inside shutdown once no thread polls a task: every
 * task is then quiescent and is read without being taken over. */
#include "../io/io.h"

/* ---- buffered output ---------------------------------------------------------- */

typedef struct blitz__dump_out {
    blitz_dump_write_fn write;
    void *arg;
    int rc;
    size_t len;
    char buf[16384];
} blitz__dump_out;

static void blitz__out_flush(blitz__dump_out *o) {
    if (o->len && o->rc == BLITZ_OK && o->write(o->arg, o->buf, o->len) != 0)
        o->rc = BLITZ_EIO;
    o->len = 0;
}

static void blitz__out(blitz__dump_out *o, const char *fmt, ...) BLITZ__PRINTF(2, 3);
static void blitz__out(blitz__dump_out *o, const char *fmt, ...) {
    for (int tries = 0; tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = sizeof o->buf - o->len;
        int n = vsnprintf(o->buf + o->len, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            o->len += (size_t)n;
            return;
        }
        blitz__out_flush(o);
    }
    o->len = sizeof o->buf - 1; /* one line longer than the buffer: cut */
}

/* Plain appends: a dump of 100,000 tasks is mostly these, and a printf
 * per field would be most of its time. */
static void blitz__put(blitz__dump_out *o, const char *s, size_t n) {
    while (n) {
        if (o->len == sizeof o->buf)
            blitz__out_flush(o);
        size_t k = sizeof o->buf - o->len;
        if (k > n)
            k = n;
        memcpy(o->buf + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
    }
}
static void blitz__puts(blitz__dump_out *o, const char *s) {
    blitz__put(o, s, strlen(s));
}
static void blitz__put_u64(blitz__dump_out *o, uint64_t v) {
    char d[20];
    size_t i = sizeof d;
    do
        d[--i] = (char)('0' + v % 10);
    while (v /= 10);
    blitz__put(o, d + i, sizeof d - i);
}
static void blitz__put_int(blitz__dump_out *o, int v) {
    if (v < 0)
        blitz__put(o, "-", 1);
    blitz__put_u64(o, v < 0 ? (uint64_t) - (int64_t)v : (uint64_t)v);
}
static void blitz__put_hex(blitz__dump_out *o, uint64_t v) {
    char d[18];
    size_t i = sizeof d;
    do
        d[--i] = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    d[--i] = 'x';
    d[--i] = '0';
    blitz__put(o, d + i, sizeof d - i);
}

/* `s` as a JSON string (quotes included); "null" for NULL. */
static void blitz__out_json_str(blitz__dump_out *o, const char *s) {
    if (!s) {
        blitz__put(o, "null", 4);
        return;
    }
    blitz__put(o, "\"", 1);
    for (const char *run = s;; s++) {
        unsigned char c = (unsigned char)*s;
        if (c && c != '"' && c != '\\' && c >= 0x20)
            continue;
        blitz__put(o, run, (size_t)(s - run));
        if (!c)
            break;
        if (c == '"' || c == '\\')
            blitz__out(o, "\\%c", c);
        else
            blitz__out(o, "\\u%04x", c);
        run = s + 1;
    }
    blitz__put(o, "\"", 1);
}

/* ---- what a task is ---------------------------------------------------------------- */

typedef struct blitz__task_view {
    uint64_t id;
    const char *name;
    uintptr_t poll;
    const char *state;
    int cancelled, detailed; /* detailed: site and wait below were read */
    const char *file;        /* the coroutine's file, or NULL */
    int line;                /* resume point: >0 a line, 0 not started, -1 done */
    uint64_t waited_ns;      /* 0: unknown */
    const char *wait_kind;   /* NULL: nothing recorded */
    char wait[96];
} blitz__task_view;

static uintptr_t blitz__fn_addr(blitz_cancel_fn f) {
    uintptr_t a;
    memcpy(&a, &f, sizeof a);
    return a;
}

/* What the op recorded by the task's last poll (blitz_cx_pending) waits
 * on. The op lives in the task's state or is owned by it; the fields read
 * are the ones its owner wrote when it started the op. */
static void blitz__describe_wait(blitz_runtime *rt, blitz_cancel_fn cancel, void *op,
                                 blitz__task_view *v) {
    static const struct {
        blitz_cancel_fn fn;
        const char *kind;
    } plain[] = {
        {blitz_semaphore_acquire_cancel, "semaphore"},
        {blitz_rwlock_cancel, "rwlock"},
        {blitz_notify_wait_cancel, "notify"},
        {blitz_barrier_wait_cancel, "barrier"},
        {blitz_once_cell_get_or_claim_cancel, "once_cell"},
        {blitz_cancel_token_wait_cancel, "cancel_token"},
        {blitz_oneshot_cancel, "oneshot"},
        {blitz_broadcast_cancel, "broadcast"},
        {blitz_watch_cancel, "watch"},
#if BLITZ__HAS_IO || BLITZ__WIN32
        {blitz_signal_cancel, "signal"},
        {blitz_fs_cancel, "file"},
        {blitz_dns_cancel, "dns"},
#endif
#if BLITZ__HAS_IO
        {blitz_process_wait_cancel, "process"},
        {blitz_process_output_cancel, "process"},
        {blitz_tcp_connect_host_cancel, "connect"},
        {blitz_reader_cancel, "stream"},
        {blitz_writer_cancel, "stream"},
        {blitz_copy_cancel, "stream"},
#endif
        {blitz_spawn_blocking_cancel, "blocking"},
        {blitz_group_next_cancel, "task_group"},
        {blitz__combo_withdraw, "combinator"},
        {blitz_shutdown_run_cancel, "shutdown"},
    };
    v->wait[0] = 0;
    v->wait_kind = NULL;
    if (!cancel)
        return;
    if (cancel == blitz_timer_cancel || cancel == blitz__timeout_withdraw) {
        const blitz_timer *t = (const blitz_timer *)op;
        int64_t in = (int64_t)(t->deadline - blitz__rt_now(rt));
        v->wait_kind = cancel == blitz_timer_cancel ? "timer" : "timeout";
        snprintf(v->wait, sizeof v->wait, "%s due in %lld ms", v->wait_kind,
                 (long long)(in / 1000000));
#if BLITZ__HAS_SOCKETS
    } else if (cancel == blitz_io_cancel) {
        const blitz_io *io = (const blitz_io *)op;
        uint32_t k = io->blitz__kind;
        const char *what = k == BLITZ__OP_ACCEPT                ? "accept"
                           : k == BLITZ__OP_CONNECT             ? "connect"
                           : io->blitz__dir == BLITZ__DIR_WRITE ? "write"
                                                                : "read";
        v->wait_kind = "socket";
        snprintf(v->wait, sizeof v->wait, "socket fd %lld %s",
                 io->blitz__sock ? (long long)io->blitz__sock->fd : -1LL, what);
#endif
    } else if (cancel == blitz_chan_cancel) {
        v->wait_kind = "channel";
        snprintf(v->wait, sizeof v->wait, "channel %p",
                 (void *)((const blitz_chan_op *)op)->blitz__ch);
    } else if (cancel == blitz_mutex_lock_cancel) {
        v->wait_kind = "mutex";
        snprintf(v->wait, sizeof v->wait, "mutex %p",
                 (void *)((const blitz_mutex_lock_op *)op)->blitz__acq.blitz__sem);
    } else if (cancel == blitz_join_cancel) {
        /* The joiner holds the handle, so the joined block is alive; its
         * id was fixed before the handle was made. */
        v->wait_kind = "join";
        snprintf(v->wait, sizeof v->wait, "join of task %llu",
                 (unsigned long long)((const blitz__task *)op)->id);
    } else {
        for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
            if (plain[i].fn == cancel) {
                v->wait_kind = plain[i].kind;
                snprintf(v->wait, sizeof v->wait, "%s %p", v->wait_kind, op);
                return;
            }
        v->wait_kind = "op";
        snprintf(v->wait, sizeof v->wait, "op %p (cancel %#lx)", op,
                 (unsigned long)blitz__fn_addr(cancel));
    }
}

/* The owner-only part: site, idle stamp, pending op. */
static void blitz__view_detail(blitz_runtime *rt, blitz__task *t, blitz__task_view *v, uint64_t now,
                               int idle) {
    uint64_t site = blitz__task_site(t);
    v->detailed = 1;
    v->file = site ? blitz__site_file(site) : NULL;
    v->line = blitz__task_resume_line(t, site);
    if (!v->file)
        v->line = 0;
    v->waited_ns = idle && t->idle_since && now > t->idle_since ? now - t->idle_since : 0;
    blitz__describe_wait(rt, t->pending_cancel, t->pending_op, v);
}

static const char *blitz__lc_name(uint64_t s) {
    if (s & BLITZ__TASK_BLOCKING)
        return "blocking";
    switch (blitz__lifecycle(s)) {
    case BLITZ__LC_IDLE:
        return "idle";
    case BLITZ__LC_SCHEDULED:
        return "scheduled";
    case BLITZ__LC_RUNNING:
        return "running";
    default:
        return "complete";
    }
}

/* Fills `v` for the pinned task `t`. `claim`: take IDLE tasks over;
 * `quiescent`: nobody polls tasks (the leak report), read them as they
 * are. */
static void blitz__view_task(blitz_runtime *rt, blitz__task *t, blitz__task_view *v, int claim,
                             int quiescent, uint64_t now) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    memset(v, 0, sizeof *v);
    v->id = t->id;
    v->name = blitz__task_name_of(t, s);
    memcpy(&v->poll, &t->poll, sizeof v->poll);
    v->cancelled = (s & BLITZ__TASK_CANCELLED) != 0;
    v->state = blitz__lc_name(s);
    if (s & BLITZ__TASK_BLOCKING)
        return; /* a pool job: its thread may be running it */
    if (quiescent) {
        if (blitz__lifecycle(s) != BLITZ__LC_COMPLETE)
            blitz__view_detail(rt, t, v, now, blitz__lifecycle(s) == BLITZ__LC_IDLE);
        return;
    }
    if (!claim)
        return;
    for (;;) {
        if (blitz__lifecycle(s) != BLITZ__LC_IDLE)
            return;
        uint64_t next = (s & ~BLITZ__LC_MASK) | BLITZ__LC_RUNNING;
        if (blitz__u64_cas_weak(&t->state, &s, next, BLITZ__ACQUIRE))
            break;
    }
    blitz__view_detail(rt, t, v, now, 1);
    /* Hand back, keeping the idle stamp its last poll left: a wake or a
     * cancel that came meanwhile found it RUNNING and left it to us. */
    if (blitz__state_to_idle(t, 0, NULL))
        blitz__task_schedule(t);
}

/* A reference on a block whose word is live; 0 when it has none (free, or
 * being freed). Acquire: see the spawn's writes (blitz__task_create). */
static int blitz__dump_pin(blitz__task *t) {
    uint64_t s = blitz__u64_load(&t->state, BLITZ__ACQUIRE);
    for (;;) {
        if (s == 0 || blitz__refs(s) == 0 || blitz__refs(s) >= BLITZ__REF_MAX)
            return 0;
        if (blitz__u64_cas_weak(&t->state, &s, s + BLITZ__TASK_REF_ONE, BLITZ__ACQUIRE))
            return 1;
    }
}

/* Blocks carved so far: how many pins a dump may need. */
static size_t blitz__dump_capacity(blitz_runtime *rt) {
    size_t n = 0;
    blitz__mutex_lock(&rt->alloc_lock);
    for (blitz__chunk *ch = rt->chunks; ch; ch = ch->next)
        n += blitz__u32_load(&ch->carved, BLITZ__ACQUIRE);
    blitz__mutex_unlock(&rt->alloc_lock);
    return n;
}

/* Pins every live block; returns the array (caller frees) and its count.
 * Tasks spawned into blocks carved after the count may be left out. */
static blitz__task **blitz__dump_collect(blitz_runtime *rt, size_t *count) {
    size_t n = 0, cap = blitz__dump_capacity(rt) + 64;
    blitz__task **all = (blitz__task **)blitz__malloc(cap * sizeof *all);
    *count = 0;
    if (!all)
        return NULL;
    blitz__mutex_lock(&rt->alloc_lock);
    for (blitz__chunk *ch = rt->chunks; ch && n < cap; ch = ch->next) {
        uint32_t carved = blitz__u32_load(&ch->carved, BLITZ__ACQUIRE);
        for (uint32_t i = 0; i < carved && n < cap; i++) {
            blitz__task *t = blitz__chunk_block(ch, i);
            if (blitz__dump_pin(t))
                all[n++] = t;
        }
    }
    blitz__mutex_unlock(&rt->alloc_lock);
    *count = n;
    return all;
}

/* ---- symbols ------------------------------------------------------------------ */

/* dladdr is slow (a symbol table search), and many tasks share a poll
 * function: a small direct-mapped cache per dump. */
#define BLITZ__SYM_CACHE 64
typedef struct {
    uintptr_t addr[BLITZ__SYM_CACHE];
    const char *name[BLITZ__SYM_CACHE];
} blitz__sym_cache;

static const char *blitz__symbol(blitz__sym_cache *c, uintptr_t addr) {
#if BLITZ__HAVE_DLADDR
    size_t h = (addr >> 4) % BLITZ__SYM_CACHE;
    if (c->addr[h] == addr)
        return c->name[h];
    Dl_info info;
    void *p;
    memcpy(&p, &addr, sizeof p);
    const char *name =
        dladdr(p, &info) && info.dli_sname && info.dli_saddr == p ? info.dli_sname : NULL;
    c->addr[h] = addr;
    c->name[h] = name;
    return name;
#else
    (void)c;
    (void)addr;
    return NULL;
#endif
}

/* ---- the writer ------------------------------------------------------------------- */

static void blitz__out_task(blitz__dump_out *o, const blitz__task_view *v, blitz__sym_cache *syms,
                            int json, int first) {
    const char *sym = blitz__symbol(syms, v->poll);
    if (!json) {
        blitz__puts(o, "task ");
        blitz__put_u64(o, v->id);
        if (v->name) {
            blitz__puts(o, " \"");
            blitz__puts(o, v->name);
            blitz__puts(o, "\"");
        }
        blitz__puts(o, " ");
        blitz__puts(o, v->state);
        if (v->cancelled)
            blitz__puts(o, " cancelled");
        blitz__puts(o, " poll=");
        blitz__put_hex(o, v->poll);
        if (sym) {
            blitz__puts(o, " (");
            blitz__puts(o, sym);
            blitz__puts(o, ")");
        }
        if (v->detailed && v->file) {
            if (v->line > 0) {
                blitz__puts(o, " at ");
                blitz__puts(o, v->file);
                blitz__puts(o, ":");
                blitz__put_int(o, v->line);
            } else {
                blitz__puts(o, v->line ? " finished (" : " not started (");
                blitz__puts(o, v->file);
                blitz__puts(o, ")");
            }
        }
        if (v->waited_ns) {
            blitz__puts(o, " waited ");
            blitz__put_u64(o, v->waited_ns / 1000000);
            blitz__puts(o, " ms");
        }
        if (v->wait_kind) {
            blitz__puts(o, " on ");
            blitz__puts(o, v->wait);
        }
        blitz__puts(o, "\n");
        return;
    }
    blitz__puts(o, first ? "\n    {\"id\": " : ",\n    {\"id\": ");
    blitz__put_u64(o, v->id);
    blitz__puts(o, ", \"name\": ");
    blitz__out_json_str(o, v->name);
    blitz__puts(o, ", \"state\": \"");
    blitz__puts(o, v->state);
    blitz__puts(o, v->cancelled ? "\", \"cancelled\": true, \"poll\": \""
                                : "\", \"cancelled\": false, \"poll\": \"");
    blitz__put_hex(o, v->poll);
    blitz__puts(o, "\", \"symbol\": ");
    blitz__out_json_str(o, sym);
    blitz__puts(o, ", \"file\": ");
    blitz__out_json_str(o, v->detailed ? v->file : NULL);
    blitz__puts(o, ", \"line\": ");
    blitz__put_int(o, v->detailed ? v->line : 0);
    blitz__puts(o, ", \"waited_ns\": ");
    blitz__put_u64(o, v->waited_ns);
    blitz__puts(o, ", \"wait_kind\": ");
    blitz__out_json_str(o, v->wait_kind);
    blitz__puts(o, ", \"wait\": ");
    blitz__out_json_str(o, v->wait_kind ? v->wait : NULL);
    blitz__puts(o, "}");
}

/* Lists the pinned tasks and drops the pins. */
static void blitz__dump_tasks(blitz_runtime *rt, blitz__dump_out *o, blitz__task **all, size_t n,
                              int claim, int quiescent, int json) {
    blitz__sym_cache *syms = (blitz__sym_cache *)blitz__calloc(sizeof *syms);
    blitz__sym_cache none;
    memset(&none, 0, sizeof none);
    uint64_t now = blitz__now_ns();
    size_t listed = 0;
    for (size_t i = 0; i < n; i++) {
        blitz__task_view v;
        blitz__view_task(rt, all[i], &v, claim, quiescent, now);
        /* Finished tasks that only a handle keeps are no live work. */
        if (strcmp(v.state, "complete") != 0) {
            blitz__out_task(o, &v, syms ? syms : &none, json, listed == 0);
            listed++;
        }
        blitz__task_unref(all[i]);
    }
    blitz__free(syms);
    if (json)
        blitz__out(o, "%s],\n  \"count\": %zu", listed ? "\n  " : "", listed);
    else
        blitz__out(o, "%zu live tasks\n", listed);
}

BLITZ_API int blitz_runtime_dump_to(blitz_runtime *rt, blitz_dump_write_fn write, void *arg,
                                    unsigned flags) {
    if (!rt || !write || (flags & ~(unsigned)BLITZ_DUMP_JSON))
        return BLITZ_EINVAL;
    blitz__dump_out *o = (blitz__dump_out *)blitz__malloc(sizeof *o);
    if (!o)
        return BLITZ_ENOMEM;
    o->write = write;
    o->arg = arg;
    o->rc = BLITZ_OK;
    o->len = 0;
    int json = (flags & BLITZ_DUMP_JSON) != 0;
    /* Step 1 of the protocol above. */
    blitz__u32_fetch_add(&rt->external_running, 1, BLITZ__SEQ_CST);
    int claim = !blitz__u32_load(&rt->shutdown, BLITZ__SEQ_CST);
    size_t n = 0;
    blitz__task **all = blitz__dump_collect(rt, &n);
    if (json)
        blitz__out(o, "{\n  \"workers\": %u,\n  \"tasks\": [", rt->num_workers);
    if (all)
        blitz__dump_tasks(rt, o, all, n, claim, 0, json);
    else
        o->rc = BLITZ_ENOMEM;
    blitz__u32_fetch_sub(&rt->external_running, 1, BLITZ__RELEASE);
    blitz__free(all);
    if (json)
        blitz__out(o, "\n}\n");
    blitz__out_flush(o);
    int rc = o->rc;
    blitz__free(o);
    return rc;
}

static int blitz__dump_file_write(void *arg, const char *data, size_t len) {
    return fwrite(data, 1, len, (FILE *)arg) == len ? 0 : -1;
}

BLITZ_API int blitz_runtime_dump(blitz_runtime *rt, FILE *out, unsigned flags) {
    if (!out)
        return BLITZ_EINVAL;
    int rc = blitz_runtime_dump_to(rt, blitz__dump_file_write, out, flags);
    if (rc == BLITZ_OK && fflush(out) != 0)
        rc = BLITZ_EIO;
    return rc;
}

/* ---- the leak report ------------------------------------------------------------ */

/* Whether the runtime reports at shutdown: its config, or the environment
 * variable BLITZ_LEAK_REPORT set to a nonzero number. */
BLITZ_PRIVATE int blitz__leak_report_wanted(const blitz_config *c) {
    if (c->leak_report)
        return 1;
    const char *e = getenv("BLITZ_LEAK_REPORT");
    return e && atoi(e) != 0;
}

/* Called by shutdown once no thread polls a task, before the sweep
 * cancels them. */
BLITZ_PRIVATE void blitz__leak_report(blitz_runtime *rt) {
    blitz__dump_out *o = (blitz__dump_out *)blitz__malloc(sizeof *o);
    if (!o)
        return;
    o->write = blitz__dump_file_write;
    o->arg = stderr;
    o->rc = BLITZ_OK;
    o->len = 0;
    blitz__out(o, "blitz: leak report at shutdown of runtime %p\n", (void *)rt);
    size_t n = 0;
    blitz__task **all = blitz__dump_collect(rt, &n);
    if (all)
        blitz__dump_tasks(rt, o, all, n, 0, 1, 0);
    blitz__free(all);
    if (rt->io)
        blitz__out(o, "%u open sockets\n", blitz__u32_load(&rt->io->nsocks, BLITZ__ACQUIRE));
    blitz__mutex_lock(&rt->time->lock);
    size_t timers = rt->time->wheel.count;
    blitz__mutex_unlock(&rt->time->lock);
    blitz__out(o, "%zu armed timers\n", timers);
    blitz__mutex_lock(&rt->pool->lock);
    uint32_t queued = rt->pool->queued, threads = rt->pool->threads, idle = rt->pool->idle;
    blitz__mutex_unlock(&rt->pool->lock);
    blitz__out(o, "%u blocking jobs queued, %u running\n", queued,
               threads >= idle ? threads - idle : 0);
    blitz__out_flush(o);
    blitz__free(o);
}
