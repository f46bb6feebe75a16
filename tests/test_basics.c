/* Basics: error codes and their strings, the version, and bad input to every
 * public entry point (an error code, never a crash). */
#include "test_util.h"

#include <errno.h>
#include <limits.h>

/* ---- error codes ------------------------------------------------------- */

typedef struct {
    const char *name;
    int value;
    const char *text;
} basics_err;

#define BASICS_ERR_ROW(name, value, text) {#name, value, text},
static const basics_err basics_errs[] = {BLITZ_ERRNO_MAP(BASICS_ERR_ROW)};
#undef BASICS_ERR_ROW
#define BASICS_NUM_ERRS (sizeof basics_errs / sizeof basics_errs[0])

BLITZ_TEST(error_strings) {
    /* Success has its own text and name. */
    CHECK_NOT_NULL(blitz_strerror(BLITZ_OK));
    CHECK_NOT_NULL(blitz_err_name(BLITZ_OK));
    CHECK(strcmp(blitz_strerror(BLITZ_OK), "unknown error") != 0);
    CHECK(strcmp(blitz_err_name(BLITZ_OK), "OK") == 0);

    /* Every code of the map: negative, distinct, its own text and name. */
    for (size_t i = 0; i < BASICS_NUM_ERRS; i++) {
        const basics_err *e = &basics_errs[i];
        CHECK_LT(e->value, 0);
        for (size_t j = i + 1; j < BASICS_NUM_ERRS; j++)
            CHECK_NE(e->value, basics_errs[j].value);
        const char *text = blitz_strerror(e->value);
        const char *name = blitz_err_name(e->value);
        CHECK_NOT_NULL(text);
        CHECK_NOT_NULL(name);
        CHECK_BASE(strcmp(text, e->text) == 0, "strerror(%d) = \"%s\", want \"%s\"", e->value, text,
                   e->text);
        CHECK_BASE(strcmp(name, e->name) == 0, "err_name(%d) = \"%s\", want \"%s\"", e->value, name,
                   e->name);
    }

    /* A few by hand, so a broken map cannot hide behind itself. */
    CHECK(strcmp(blitz_err_name(BLITZ_EINVAL), "EINVAL") == 0);
    CHECK(strcmp(blitz_err_name(BLITZ_ESHUTDOWN), "ESHUTDOWN") == 0);
    /* Socket errors a misused socket returns (a send without a
     * destination, a TCP option on UDP, a multicast join on TCP). */
    CHECK(strcmp(blitz_err_name(BLITZ_EDESTADDRREQ), "EDESTADDRREQ") == 0);
    CHECK(strcmp(blitz_err_name(BLITZ_ENOPROTOOPT), "ENOPROTOOPT") == 0);
    CHECK(strcmp(blitz_err_name(BLITZ_EPROTO), "EPROTO") == 0);
    CHECK(strcmp(blitz_err_name(BLITZ_ECANCELED), "ECANCELED") == 0);
    CHECK(strcmp(blitz_err_name(BLITZ_ERELEASED), "ERELEASED") == 0);
    CHECK(strcmp(blitz_strerror(BLITZ_EINVAL), "invalid argument") == 0);
    CHECK(strcmp(blitz_strerror(BLITZ_ESHUTDOWN), "runtime is shut down") == 0);
    CHECK(strcmp(blitz_strerror(BLITZ_ERELEASED), "handle already released") == 0);

    /* blitz's own codes live in the -4000 band. */
    CHECK_EQ(BLITZ_ESHUTDOWN, -4001);
    CHECK_EQ(BLITZ_ERELEASED, -4006);
    CHECK_LE(BLITZ_ECLOSED, -4000);
    CHECK_LE(BLITZ_ELAGGED, -4000);

#ifdef __linux__
    /* On POSIX the errno-derived codes are -errno. */
    CHECK_EQ(BLITZ_EPERM, -EPERM);
    CHECK_EQ(BLITZ_EINTR, -EINTR);
    CHECK_EQ(BLITZ_EAGAIN, -EAGAIN);
    CHECK_EQ(BLITZ_ENOMEM, -ENOMEM);
    CHECK_EQ(BLITZ_EINVAL, -EINVAL);
    CHECK_EQ(BLITZ_ERANGE, -ERANGE);
    CHECK_EQ(BLITZ_EDEADLK, -EDEADLK);
    CHECK_EQ(BLITZ_ETIMEDOUT, -ETIMEDOUT);
    CHECK_EQ(BLITZ_ECANCELED, -ECANCELED);
#endif

    /* Unknown codes: "unknown error", and a name that is no known one. */
    static const int unknown[] = {1, 42, -41, -4000, -4007, -9999, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *text = blitz_strerror(unknown[i]);
        const char *name = blitz_err_name(unknown[i]);
        CHECK_NOT_NULL(text);
        CHECK_NOT_NULL(name);
        CHECK_BASE(strcmp(text, "unknown error") == 0, "strerror(%d) = \"%s\"", unknown[i], text);
        CHECK(strcmp(name, "OK") != 0);
        for (size_t j = 0; j < BASICS_NUM_ERRS; j++)
            CHECK_BASE(strcmp(name, basics_errs[j].name) != 0, "err_name(%d) = \"%s\"", unknown[i],
                       name);
    }
    return 0;
}

BLITZ_TEST(version) {
    CHECK_NOT_NULL(blitz_version());
    CHECK(strcmp(blitz_version(), BLITZ_VERSION_STRING) == 0);
    char buf[64];
    snprintf(buf, sizeof buf, "%d.%d.%d", BLITZ_VERSION_MAJOR, BLITZ_VERSION_MINOR,
             BLITZ_VERSION_PATCH);
    CHECK(strcmp(buf, BLITZ_VERSION_STRING) == 0);
    return 0;
}

/* ---- bad input ------------------------------------------------------------ */

static atomic_int basics_polls;

static blitz_poll basics_count_poll(blitz_cx *cx, void *state) {
    (void)cx;
    (void)state;
    atomic_fetch_add(&basics_polls, 1);
    return BLITZ_READY;
}

static void basics_fn(void *arg) {
    atomic_fetch_add((atomic_int *)arg, 1);
}

BLITZ_TEST(bad_runtime_new) {
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    CHECK_EQ(blitz_runtime_new(&cfg, NULL), BLITZ_EINVAL);

    /* Too many workers is an error, not a clamp. */
    blitz_runtime *rt = NULL;
    cfg.flavor = BLITZ_MULTI_THREAD;
    cfg.workers = BLITZ_MAX_WORKERS + 1;
    CHECK_EQ(blitz_runtime_new(&cfg, &rt), BLITZ_EINVAL);
    cfg.workers = UINT32_MAX;
    CHECK_EQ(blitz_runtime_new(&cfg, &rt), BLITZ_EINVAL);

    /* Unknown flavours. */
    cfg.workers = 2;
    cfg.flavor = (blitz_flavor)2;
    CHECK_EQ(blitz_runtime_new(&cfg, &rt), BLITZ_EINVAL);
    cfg.flavor = (blitz_flavor)-1;
    CHECK_EQ(blitz_runtime_new(&cfg, &rt), BLITZ_EINVAL);
    cfg.flavor = (blitz_flavor)1000;
    CHECK_EQ(blitz_runtime_new(&cfg, &rt), BLITZ_EINVAL);

    /* The limit itself is fine (threads start lazily, so this is cheap). */
    cfg.flavor = BLITZ_MULTI_THREAD;
    cfg.workers = BLITZ_MAX_WORKERS;
    rt = NULL;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    CHECK_NOT_NULL(rt);
    CHECK_EQ(blitz_runtime_workers(rt), BLITZ_MAX_WORKERS);
    CHECK_EQ(blitz_runtime_flavor(rt), BLITZ_MULTI_THREAD);
    CHECK_OK(blitz_runtime_free(rt));

    /* Zero workers: the number of CPUs, at most BLITZ_MAX_WORKERS. */
    cfg.workers = 0;
    rt = NULL;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    CHECK_GE(blitz_runtime_workers(rt), 1);
    CHECK_LE(blitz_runtime_workers(rt), BLITZ_MAX_WORKERS);
    CHECK_OK(blitz_runtime_free(rt));

    /* Current-thread reports one worker. */
    cfg.flavor = BLITZ_CURRENT_THREAD;
    rt = NULL;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    CHECK_EQ(blitz_runtime_flavor(rt), BLITZ_CURRENT_THREAD);
    CHECK_EQ(blitz_runtime_workers(rt), 1);
    CHECK_OK(blitz_runtime_free(rt));

    CHECK_EQ(blitz_runtime_free(NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_shutdown(NULL), BLITZ_EINVAL);
    CHECK_NULL(blitz_runtime_current());
    return 0;
}

static int bad_spawn(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    char state[16] = {0};
    blitz_task *h = NULL;
    atomic_store(&basics_polls, 0);

    CHECK_EQ(blitz_spawn(NULL, basics_count_poll, state, sizeof state, &h), BLITZ_EINVAL);
    CHECK_EQ(blitz_spawn(rt, NULL, state, sizeof state, &h), BLITZ_EINVAL);
    CHECK_EQ(blitz_spawn(rt, basics_count_poll, state, 0, &h), BLITZ_EINVAL);
    CHECK_EQ(blitz_spawn(rt, basics_count_poll, state, (size_t)BLITZ_MAX_STATE_SIZE + 1, &h),
             BLITZ_EINVAL);
    CHECK_EQ(blitz_spawn(rt, basics_count_poll, state, SIZE_MAX, &h), BLITZ_EINVAL);
    CHECK_EQ(blitz_spawn(rt, basics_count_poll, NULL, 0, NULL), BLITZ_EINVAL);

    blitz_spawn_opts o;
    memset(&o, 0, sizeof o);
    CHECK_EQ(blitz_spawn_ex(rt, NULL, &h), BLITZ_EINVAL);
    CHECK_EQ(blitz_spawn_ex(NULL, &o, &h), BLITZ_EINVAL);
    CHECK_EQ(blitz_spawn_ex(rt, &o, &h), BLITZ_EINVAL); /* no poll */
    o.poll = basics_count_poll;
    CHECK_EQ(blitz_spawn_ex(rt, &o, &h), BLITZ_EINVAL); /* size 0 */
    o.size = (size_t)BLITZ_MAX_STATE_SIZE + 1;
    CHECK_EQ(blitz_spawn_ex(rt, &o, &h), BLITZ_EINVAL);
    o.poll = NULL;
    o.size = 8;
    CHECK_EQ(blitz_spawn_ex(rt, &o, &h), BLITZ_EINVAL);

    atomic_int fn_calls = 0;
    CHECK_EQ(blitz_spawn_fn(NULL, basics_fn, &fn_calls, &h), BLITZ_EINVAL);
    CHECK_EQ(blitz_spawn_fn(rt, NULL, &fn_calls, &h), BLITZ_EINVAL);

    CHECK_EQ(blitz_runtime_run(NULL, basics_count_poll, state, sizeof state), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_run(rt, NULL, state, sizeof state), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_run(rt, basics_count_poll, state, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_run(rt, basics_count_poll, state, (size_t)BLITZ_MAX_STATE_SIZE + 1),
             BLITZ_EINVAL);

    /* Nothing was spawned, nothing ran. */
    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.total_spawned, 0);
    CHECK_EQ(st.tasks_alive, 0);
    CHECK_EQ(tu_ldi(&basics_polls), 0);
    CHECK_EQ(tu_ldi(&fn_calls), 0);

    /* And the runtime still works after all that. */
    CHECK_OK(blitz_spawn(rt, basics_count_poll, state, sizeof state, &h));
    CHECK_NOT_NULL(h);
    CHECK_OK(blitz_join_blocking(h));
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_spawn_fn(rt, basics_fn, &fn_calls, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_OK(blitz_task_release(&h));
    CHECK_EQ(tu_ldi(&basics_polls), 1);
    CHECK_EQ(tu_ldi(&fn_calls), 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(bad_spawn)

/* ---- the I/O backend's kind ----------------------------------------------- */

/* Sleeps, then waits for a blocking job: the runtime parks in its backend
 * (on Windows the completion port) until the timer, then until a wake-up
 * from a thread outside it. */
typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    blitz_task *job;
    int rounds;
} basics_park;

static void basics_job(void *arg) {
    (void)arg;
}

static blitz_poll basics_park_poll(blitz_cx *cx, void *p) {
    basics_park *s = p;
    BLITZ_BEGIN(s);
    for (; s->rounds < 3; s->rounds++) {
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, BLITZ_MSEC));
        CHECK_OK(blitz_spawn_blocking(blitz_cx_runtime(cx), basics_job, NULL, &s->job));
        BLITZ_AWAIT(s, blitz_join(cx, s->job));
    }
    BLITZ_END(s);
}

static int runtime_backend_kind(tu_flavor f) {
    CHECK(strcmp(blitz_backend_name(BLITZ_BACKEND_IOCP), "iocp") == 0);
    blitz_config cfg = tu_config(f);
    blitz_runtime *rt = NULL;
#if defined(_WIN32)
    /* The completion port is the one backend: the default and the forced. */
    blitz_backend want[] = {BLITZ_BACKEND_AUTO, BLITZ_BACKEND_IOCP};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cfg.backend = want[i];
        CHECK_OK(blitz_runtime_new(&cfg, &rt));
        CHECK_EQ(blitz_runtime_backend(rt), BLITZ_BACKEND_IOCP);
        basics_park st;
        memset(&st, 0, sizeof st);
        CHECK_OK(blitz_runtime_run(rt, basics_park_poll, &st, sizeof st));
        CHECK_EQ(st.rounds, 3);
        CHECK_OK(blitz_runtime_free(rt));
    }
    cfg.backend = BLITZ_BACKEND_EPOLL;
    CHECK_EQ(blitz_runtime_new(&cfg, &rt), BLITZ_ENOSYS);
    cfg.backend = BLITZ_BACKEND_NONE;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    CHECK_EQ(blitz_runtime_backend(rt), BLITZ_BACKEND_NONE);
    basics_park st;
    memset(&st, 0, sizeof st);
    CHECK_OK(blitz_runtime_run(rt, basics_park_poll, &st, sizeof st));
    CHECK_EQ(st.rounds, 3);
    CHECK_OK(blitz_runtime_free(rt));
#else
    /* Windows only. */
    cfg.backend = BLITZ_BACKEND_IOCP;
    CHECK_EQ(blitz_runtime_new(&cfg, &rt), BLITZ_ENOSYS);
    cfg.backend = BLITZ_BACKEND_AUTO;
    CHECK_OK(blitz_runtime_new(&cfg, &rt));
    basics_park st;
    memset(&st, 0, sizeof st);
    CHECK_OK(blitz_runtime_run(rt, basics_park_poll, &st, sizeof st));
    CHECK_EQ(st.rounds, 3);
    CHECK_OK(blitz_runtime_free(rt));
#endif
    cfg.backend = (blitz_backend)(BLITZ_BACKEND_IOCP + 1);
    CHECK_EQ(blitz_runtime_new(&cfg, &rt), BLITZ_EINVAL);
    return 0;
}
TU_FLAVOR_TESTS(runtime_backend_kind)

BLITZ_TEST(bad_run) {
    char state[8] = {0};
    atomic_store(&basics_polls, 0);
    CHECK_EQ(blitz_run(NULL, state, sizeof state), BLITZ_EINVAL);
    CHECK_EQ(blitz_run(basics_count_poll, state, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_run(basics_count_poll, state, (size_t)BLITZ_MAX_STATE_SIZE + 1), BLITZ_EINVAL);
    CHECK_EQ(tu_ldi(&basics_polls), 0);
    return 0;
}

BLITZ_TEST(bad_handles) {
    CHECK_EQ(blitz_join_blocking(NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_task_status(NULL), BLITZ_EINVAL);
    CHECK_NULL(blitz_task_state(NULL));
    CHECK_EQ(blitz_task_cancel(NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_task_release(NULL), BLITZ_EINVAL);
    blitz_task *none = NULL;
    CHECK_EQ(blitz_task_release(&none), BLITZ_ERELEASED);
    CHECK_EQ(blitz_task_release(&none), BLITZ_ERELEASED);

    /* Released twice: the second time is ERELEASED, and nothing is freed
     * twice (ASan would say so). */
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    char state[8] = {0};
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, basics_count_poll, state, sizeof state, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_OK(blitz_task_release(&h));
    CHECK_NULL(h);
    CHECK_EQ(blitz_task_release(&h), BLITZ_ERELEASED);
    CHECK_NULL(h);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

BLITZ_TEST(bad_stats) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    blitz_stats st;
    blitz_worker_stats ws;
    CHECK_EQ(blitz_runtime_stats(NULL, &st), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_stats(rt, NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_worker_stats(NULL, 0, &ws), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_worker_stats(rt, 0, NULL), BLITZ_EINVAL);
    CHECK_OK(blitz_runtime_worker_stats(rt, 0, &ws));
    CHECK_OK(blitz_runtime_worker_stats(rt, 1, &ws));
    CHECK_EQ(blitz_runtime_worker_stats(rt, 2, &ws), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_worker_stats(rt, BLITZ_MAX_WORKERS, &ws), BLITZ_EINVAL);
    CHECK_EQ(blitz_runtime_worker_stats(rt, UINT32_MAX, &ws), BLITZ_EINVAL);
    CHECK_OK(blitz_runtime_free(rt));

    rt = tu_rt_new(TU_CT);
    CHECK_OK(blitz_runtime_worker_stats(rt, 0, &ws));
    CHECK_EQ(blitz_runtime_worker_stats(rt, 1, &ws), BLITZ_EINVAL);
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.num_workers, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* shutdown / free from inside a task of the runtime: EDEADLK, and the
 * runtime is untouched (the task still completes normally). */
typedef struct {
    int shutdown_rc, free_rc;
    blitz_runtime *seen_current, *seen_cx;
} basics_deadlk;

static blitz_poll basics_deadlk_poll(blitz_cx *cx, void *p) {
    basics_deadlk *s = p;
    s->seen_cx = blitz_cx_runtime(cx);
    s->seen_current = blitz_runtime_current();
    s->shutdown_rc = blitz_runtime_shutdown(blitz_cx_runtime(cx));
    s->free_rc = blitz_runtime_free(blitz_cx_runtime(cx));
    return BLITZ_READY;
}

static int deadlock_inside_task(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    basics_deadlk s = {0, 0, NULL, NULL};
    CHECK_OK(blitz_runtime_run(rt, basics_deadlk_poll, &s, sizeof s));
    CHECK_EQ(s.shutdown_rc, BLITZ_EDEADLK);
    CHECK_EQ(s.free_rc, BLITZ_EDEADLK);
    CHECK_PTR_EQ(s.seen_cx, rt);
    CHECK_PTR_EQ(s.seen_current, rt);
    CHECK_NULL(blitz_runtime_current());
    /* Not shut down: spawning still works. */
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, basics_count_poll, &s, sizeof s, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(deadlock_inside_task)

/* ---- state sizes ---------------------------------------------------------- */

/* A state of `size` bytes: a header, then bytes filled with a pattern. The
 * task checks its copy (alignment, contents) and rewrites it. */
typedef struct {
    size_t size;
    uint32_t seed;
    uint32_t ok;
} basics_sized;

static uint8_t basics_pattern(size_t i, uint32_t seed) {
    return (uint8_t)((i * 131u + seed) ^ (i >> 8));
}

static blitz_poll basics_sized_poll(blitz_cx *cx, void *p) {
    (void)cx;
    basics_sized *s = p;
    uint8_t *bytes = (uint8_t *)p;
    int ok = ((uintptr_t)p % _Alignof(max_align_t)) == 0;
    if (s->size == 0) {
        /* Zero-filled (spawned with state NULL): look at a sample. */
        size_t n = (size_t)BLITZ_MAX_STATE_SIZE;
        for (size_t i = 0; i < n; i += 4093)
            ok &= bytes[i] == 0;
        ok &= bytes[n - 1] == 0;
        bytes[n - 1] = 0x5a;
    } else {
        for (size_t i = sizeof *s; i < s->size; i++)
            ok &= bytes[i] == basics_pattern(i, s->seed);
        for (size_t i = sizeof *s; i < s->size; i++)
            bytes[i] = (uint8_t)~basics_pattern(i, s->seed);
    }
    s->ok = (uint32_t)ok;
    return BLITZ_READY;
}

static blitz_poll basics_byte_poll(blitz_cx *cx, void *p) {
    (void)cx;
    uint8_t *b = p;
    *b = (uint8_t)(*b + 1);
    return BLITZ_READY;
}

static int state_sizes(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    static const size_t sizes[] = {sizeof(basics_sized),
                                   sizeof(basics_sized) + 1,
                                   40,
                                   100,
                                   4096 - 40,
                                   8192,
                                   8193,
                                   65536,
                                   200000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        uint8_t *buf = malloc(n);
        CHECK_NOT_NULL(buf);
        basics_sized hdr = {n, (uint32_t)k * 7u + 1u, 0};
        memcpy(buf, &hdr, sizeof hdr);
        for (size_t i = sizeof hdr; i < n; i++)
            buf[i] = basics_pattern(i, hdr.seed);
        blitz_task *h = NULL;
        CHECK_OK(blitz_spawn(rt, basics_sized_poll, buf, n, &h));
        /* The task has its own copy: changing ours now changes nothing. */
        memset(buf + sizeof hdr, 0xee, n - sizeof hdr);
        CHECK_OK(blitz_join_blocking(h));
        uint8_t *st = blitz_task_state(h);
        CHECK_NOT_NULL(st);
        CHECK_PTR_EQ(st, blitz_task_state(h));
        basics_sized got;
        memcpy(&got, st, sizeof got);
        CHECK_BASE(got.ok == 1, "state of %zu bytes arrived damaged or misaligned", n);
        for (size_t i = sizeof hdr; i < n; i++)
            CHECK_EQ(st[i], (uint8_t)~basics_pattern(i, hdr.seed));
        CHECK_OK(blitz_task_release(&h));
        free(buf);
    }

    /* One byte. */
    uint8_t one = 41;
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, basics_byte_poll, &one, 1, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_EQ(*(uint8_t *)blitz_task_state(h), 42);
    CHECK_EQ(one, 41);
    CHECK_OK(blitz_task_release(&h));

    /* The largest state, zero-filled (state NULL). */
    CHECK_OK(blitz_spawn(rt, basics_sized_poll, NULL, (size_t)BLITZ_MAX_STATE_SIZE, &h));
    CHECK_OK(blitz_join_blocking(h));
    basics_sized *big = blitz_task_state(h);
    CHECK_NOT_NULL(big);
    CHECK_EQ(big->ok, 1);
    CHECK_EQ(((uint8_t *)big)[(size_t)BLITZ_MAX_STATE_SIZE - 1], 0x5a);
    CHECK_OK(blitz_task_release(&h));

    blitz_spawn_opts o = {.poll = basics_byte_poll, .size = 1};
    CHECK_OK(blitz_spawn_ex(rt, &o, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_EQ(*(uint8_t *)blitz_task_state(h), 1);
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(state_sizes)
