/* Helpers shared by the behaviour tests: runtime set-up per flavour and
 * backend, a loopback listener, deadline-bounded waiting, small atomics and
 * threads. Everything is static and prefixed tu_ because all test files
 * share one translation unit. */
#ifndef BLITZ_TEST_UTIL_H
#define BLITZ_TEST_UTIL_H

#if !defined(_WIN32)
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

/* The flavours the behaviour tests run on. workers is ignored for
 * current-thread. */
typedef struct {
    blitz_flavor flavor;
    uint32_t workers;
} tu_flavor;

static const tu_flavor TU_MT2 = {BLITZ_MULTI_THREAD, 2};
static const tu_flavor TU_MT4 = {BLITZ_MULTI_THREAD, 4};
static const tu_flavor TU_CT = {BLITZ_CURRENT_THREAD, 0};

/* Defines name_mt2, name_mt4 and name_ct from `static int name(tu_flavor)`. */
#define TU_FLAVOR_TESTS(name) \
    BLITZ_TEST(name##_mt2) {  \
        return name(TU_MT2);  \
    }                         \
    BLITZ_TEST(name##_mt4) {  \
        return name(TU_MT4);  \
    }                         \
    BLITZ_TEST(name##_ct) {   \
        return name(TU_CT);   \
    }

/* A config for flavour f, the rest zero (defaults); tests set more. */
static inline blitz_config tu_config(tu_flavor f) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = f.flavor;
    cfg.workers = f.flavor == BLITZ_MULTI_THREAD ? f.workers : 0;
    return cfg;
}

static inline blitz_runtime *tu_rt_config(const blitz_config *cfg) {
    blitz_runtime *rt = NULL;
    CHECK_OK(blitz_runtime_new(cfg, &rt));
    CHECK_NOT_NULL(rt);
    return rt;
}

/* A runtime of flavour f whose clock starts paused or not. */
static inline blitz_runtime *tu_rt_paused(tu_flavor f, int paused) {
    blitz_config cfg = tu_config(f);
    cfg.start_paused = paused;
    return tu_rt_config(&cfg);
}

/* A runtime from `cfg` on cfg->backend, or NULL where the kernel refuses
 * io_uring: the test then returns 0 and reports itself skipped. */
static inline blitz_runtime *tu_io_rt_config(const blitz_config *cfg) {
    blitz_runtime *rt = NULL;
    int rc = blitz_runtime_new(cfg, &rt);
    if (rc != BLITZ_OK && cfg->backend == BLITZ_BACKEND_IO_URING) {
        printf("# skipped: io_uring unavailable (%s)\n", blitz_strerror(rc));
        return NULL;
    }
#if !BLITZ__LINUX
    /* The Linux backends are compiled out elsewhere. */
    if (rc == BLITZ_ENOSYS) {
        printf("# skipped: %s not on this system\n", blitz_backend_name(cfg->backend));
        return NULL;
    }
#endif
    CHECK_OK(rc);
    CHECK_EQ(blitz_runtime_backend(rt), cfg->backend);
    return rt;
}

static inline blitz_runtime *tu_io_rt_new(blitz_backend b, tu_flavor f) {
    blitz_config cfg = tu_config(f);
    cfg.backend = b;
    return tu_io_rt_config(&cfg);
}

/* A TCP listener on an ephemeral loopback port; *bound gets its address. */
static inline blitz_socket *tu_listen_any(blitz_runtime *rt, blitz_addr *bound) {
    blitz_addr a;
    CHECK_OK(blitz_addr_parse("127.0.0.1:0", &a));
    blitz_socket *l = NULL;
    CHECK_OK(blitz_tcp_listen(rt, &a, 1024, 0, &l));
    CHECK_OK(blitz_sock_local_addr(l, bound));
    CHECK_GT(blitz_addr_port(bound), 0);
    return l;
}

/* ---- racing ops inside a coroutine (c: its state, with ops[2], combo,
 * timer and due fields; cx in scope) ---- */

/* Races ops[0] and ops[1] and leaves the winner in c->combo.winner. */
#define OPIO_RACE(c, a, b)                                          \
    do {                                                            \
        (c)->ops[0] = (a);                                          \
        (c)->ops[1] = (b);                                          \
        blitz_combo_reset(&(c)->combo);                             \
        BLITZ_AWAIT((c), blitz_race(cx, &(c)->combo, (c)->ops, 2)); \
    } while (0)

/* A sleep of `ns` from now as an op. */
#define OPIO_SLEEP(c, ns) \
    blitz_op_sleep_until(&(c)->timer, blitz_deadline_after(blitz_cx_now(cx), (ns)))

/* Races `a` against a timer already due: a zeroed combo polls `a` first,
 * so it has started when the timer wins and it is withdrawn. */
#define OPIO_LOSE(c, a)                                             \
    do {                                                            \
        (c)->ops[0] = (a);                                          \
        (c)->ops[1] = blitz_op_sleep_until(&(c)->due, 0);           \
        memset(&(c)->combo, 0, sizeof(c)->combo);                   \
        BLITZ_AWAIT((c), blitz_race(cx, &(c)->combo, (c)->ops, 2)); \
        CHECK_EQ((c)->combo.winner, 1);                             \
    } while (0)

/* A deadline no test run reaches. */
#define OPIO_FAR(c) OPIO_SLEEP(c, 600 * BLITZ_SEC)

/* A connected loopback TCP pair made with blitz calls only (every system,
 * Windows included): *a connected, *b accepted. */
static inline void tu_tcp_pair(blitz_runtime *rt, blitz_socket **a, blitz_socket **b) {
    blitz_addr addr;
    blitz_socket *l = tu_listen_any(rt, &addr);
    blitz_io acc, con;
    blitz_combo all;
    memset(&acc, 0, sizeof acc);
    memset(&con, 0, sizeof con);
    memset(&all, 0, sizeof all);
    blitz_op ops[2] = {blitz_op_sock_accept(&acc, l), blitz_op_tcp_connect(&con, &addr)};
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_join_all(&all, ops, 2)));
    CHECK_EQ(all.error, 0);
    CHECK_EQ(acc.result, 0);
    CHECK_EQ(con.result, 0);
    CHECK(acc.socket && con.socket);
    *a = con.socket;
    *b = acc.socket;
    CHECK_OK(blitz_sock_close(l));
}

#if !defined(_WIN32) /* plain POSIX sockets */
/* A plain kernel TCP listener (socket type flags `flags`) on an ephemeral
 * loopback port, for a peer the runtime does not drive; *sa gets its
 * address. */
static inline int tu_plain_listener(int backlog, int flags, struct sockaddr_in *sa) {
    int fd = socket(AF_INET, SOCK_STREAM | flags, 0);
    CHECK_GE(fd, 0);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(fd, (struct sockaddr *)sa, sizeof *sa), 0);
    CHECK_EQ(listen(fd, backlog), 0);
    socklen_t sl = sizeof *sa;
    CHECK_EQ(getsockname(fd, (struct sockaddr *)sa, &sl), 0);
    return fd;
}
#endif

static inline blitz_runtime *tu_rt_new(tu_flavor f) {
    blitz_config cfg = tu_config(f);
    blitz_runtime *rt = tu_rt_config(&cfg);
    CHECK_EQ(blitz_runtime_flavor(rt), f.flavor);
    if (f.flavor == BLITZ_MULTI_THREAD)
        CHECK_EQ(blitz_runtime_workers(rt), f.workers);
    else
        CHECK_EQ(blitz_runtime_workers(rt), 1);
    return rt;
}

static inline double tu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void tu_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Waits until *a >= want, failing the test after `seconds` (scaled by
 * BLITZ_TEST_TIMEOUT_MULT so that sanitizer builds get more time). */
#if !defined(_WIN32)
/* Open descriptors of this process. */
static inline int tu_open_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}
#else
/* Open C runtime descriptors of this process (what blitz_fs_open
 * returns): the ones the runtime knows a handle for. */
static inline int tu_open_fds(void) {
    int n = 0;
    for (int fd = 0; fd < 2048; fd++)
        if (_get_osfhandle(fd) != -1)
            n++;
    return n;
}
#endif

static inline double tu_timeout_mult(void) {
    const char *m = getenv("BLITZ_TEST_TIMEOUT_MULT");
    double mult = m ? atof(m) : 1.0;
    return mult > 0 ? mult : 1.0;
}

#define TU_WAIT_GE(a, want, seconds)                                                             \
    do {                                                                                         \
        double tu_deadline_ = tu_now() + (seconds)*tu_timeout_mult();                            \
        long long tu_want_ = (long long)(want);                                                  \
        while ((long long)atomic_load(a) < tu_want_) {                                           \
            CHECK_BASE(tu_now() < tu_deadline_, "timed out waiting for %s >= %s (%lld vs %lld)", \
                       #a, #want, (long long)atomic_load(a), tu_want_);                          \
            sched_yield();                                                                       \
        }                                                                                        \
    } while (0)

/* Waits until `cond` holds, looking every `ms` milliseconds; fails the
 * test after `seconds` (scaled as above). */
#define TU_WAIT_UNTIL(cond, seconds, ms)                                            \
    do {                                                                            \
        double tu_deadline_ = tu_now() + (seconds)*tu_timeout_mult();               \
        while (!(cond)) {                                                           \
            CHECK_BASE(tu_now() < tu_deadline_, "timed out waiting for %s", #cond); \
            tu_sleep_ms(ms);                                                        \
        }                                                                           \
    } while (0)

/* Plain functions, not the atomic_load macro, so that a failed CHECK prints
 * the expression as written. */
static inline int tu_ldi(atomic_int *a) {
    return atomic_load(a);
}
static inline long tu_ldl(atomic_long *a) {
    return atomic_load(a);
}

typedef struct {
    pthread_t th;
} tu_thread;

static inline void tu_thread_start(tu_thread *t, void *(*fn)(void *), void *arg) {
    CHECK_EQ(pthread_create(&t->th, NULL, fn, arg), 0);
}

static inline void tu_thread_join(tu_thread *t) {
    CHECK_EQ(pthread_join(t->th, NULL), 0);
}

static inline void tu_spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    sched_yield();
#endif
}

/* A one-shot event a task can await: tu_gate_wait is READY once the gate
 * is open, else it keeps (a clone of) the task's waker; tu_gate_open wakes
 * it from any thread. One waiting task at a time. */
typedef struct {
    pthread_mutex_t lock;
    int open;
    int has_waker;
    blitz_waker waker;
    atomic_int waits; /* times a task found it closed */
} tu_gate;

static inline void tu_gate_init(tu_gate *g) {
    pthread_mutex_init(&g->lock, NULL);
    g->open = 0;
    g->has_waker = 0;
    atomic_store(&g->waits, 0);
}

static inline blitz_poll tu_gate_wait(blitz_cx *cx, tu_gate *g) {
    pthread_mutex_lock(&g->lock);
    if (g->open) {
        pthread_mutex_unlock(&g->lock);
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    if (g->has_waker && !blitz_waker_will_wake(&g->waker, &mine)) {
        blitz_waker_drop(g->waker);
        g->has_waker = 0;
    }
    if (!g->has_waker) {
        g->waker = blitz_waker_clone(&mine);
        g->has_waker = 1;
    }
    atomic_fetch_add(&g->waits, 1);
    pthread_mutex_unlock(&g->lock);
    return BLITZ_PENDING;
}

static inline void tu_gate_open(tu_gate *g) {
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    int had = g->has_waker;
    blitz_waker w = g->waker;
    g->has_waker = 0;
    pthread_mutex_unlock(&g->lock);
    if (had)
        blitz_waker_wake(w);
}

/* Drops a waker still held (call before the runtime is freed). */
static inline void tu_gate_destroy(tu_gate *g) {
    if (g->has_waker)
        blitz_waker_drop(g->waker);
    g->has_waker = 0;
    pthread_mutex_destroy(&g->lock);
}

/* Keeps a runtime driven (current-thread) until *flag >= want. */
typedef struct {
    BLITZ_CORO;
    atomic_long *flag;
    long want;
} tu_until;

static inline blitz_poll tu_until_poll(blitz_cx *cx, void *p) {
    tu_until *s = p;
    BLITZ_BEGIN(s);
    while (atomic_load(s->flag) < s->want)
        BLITZ_YIELD(s, cx);
    BLITZ_END(s);
}

/* A task that never finishes by itself: it returns PENDING and arranges
 * for no wake at all. */
static inline blitz_poll tu_forever_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_PENDING;
}

#endif
