/* Resident memory per idle task: blitz's mirror of the Tokio anchor's `mem`
 * group (../shared/anchors/tokio/src/mem.rs).
 *
 *   mem                       parent: runs BENCH_RUNS children per variant,
 *                             reports the median bytes/task
 *   mem mem-child pending     one measurement (what the parent runs)
 *
 * Each measurement is a fresh child process (this program re-executed):
 *   1. build the 2-worker runtime, warm it (spawn + join 10,000 empty tasks),
 *   2. sleep 50 ms, read VmRSS (before),
 *   3. a root task spawns IDLE_TASKS tasks (handles dropped); each task
 *      increments a global counter and returns BLITZ_PENDING without
 *      registering its waker, so it is never polled again,
 *   4. wait until every task has been polled once, sleep 50 ms, read VmRSS
 *      (after),
 *   5. print (after - before) / IDLE_TASKS and exit without tearing down.
 *
 * Variants:
 *   pending  mem_idle_task_pending_mt2 (Tokio: std::future::pending())
 *   notify   mem_idle_task_notify_mt2 (Tokio: `n.notified().await` on one
 *            shared Arc<Notify> that is never notified): each task awaits
 *            blitz_notify_wait on one shared blitz_notify, its state
 *            holding the op and the Notify's address (the Arc clone).
 *
 * Difference from the anchor: Tokio's block_on future re-checks the counter
 * after each tokio::time::sleep(1 ms); blitz has no timer yet, so the main
 * thread does that check with nanosleep(1 ms) after the root task has been
 * joined (the workers run the tasks either way). */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include "bench_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define IDLE_TASKS   1000000
#define WARM_TASKS   10000
#define MEM_RUNS     BENCH_RUNS
#define POLL_LIMIT_S 60

static atomic_size_t polled;

/* ---------------------------------------------------------------------------
 * Child
 * ------------------------------------------------------------------------- */

static const char empty_state = 0;
static blitz_poll empty_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_READY;
}

/* block_on: spawn WARM_TASKS empty tasks, then await every handle in order. */
typedef struct warm_state {
    BLITZ_CORO;
    blitz_task **hs;
    size_t i;
} warm_state;
static blitz_poll warm_poll(blitz_cx *cx, void *p) {
    warm_state *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < WARM_TASKS; s->i++)
        bench_spawn(blitz_cx_runtime(cx), empty_poll, &empty_state, sizeof empty_state,
                    &s->hs[s->i]);
    for (s->i = 0; s->i < WARM_TASKS; s->i++) {
        BLITZ_AWAIT(s, blitz_join(cx, s->hs[s->i]));
        BENCH_CHECK(blitz_task_release(&s->hs[s->i]));
    }
    BLITZ_END(s);
}

/* async { POLLED.fetch_add(1); std::future::pending::<()>().await } : a
 * one-byte state, like the anchor's one-byte future. */
static const char idle_state = 0;
static blitz_poll idle_pending_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    atomic_fetch_add_explicit(&polled, 1, memory_order_relaxed);
    return BLITZ_PENDING; /* the waker is not kept: never woken again */
}

static blitz_poll root_pending_poll(blitz_cx *cx, void *p) {
    blitz_runtime *rt = blitz_cx_runtime(cx);
    int i;
    (void)p;
    for (i = 0; i < IDLE_TASKS; i++)
        bench_spawn(rt, idle_pending_poll, &idle_state, sizeof idle_state, NULL);
    return BLITZ_READY;
}

/* async move { POLLED.fetch_add(1); n.notified().await } */
static blitz_notify shared_notify;
typedef struct idle_notify_state {
    BLITZ_CORO;
    blitz_notify *n;
    blitz_notify_wait_op op;
} idle_notify_state;
static blitz_poll idle_notify_poll(blitz_cx *cx, void *p) {
    idle_notify_state *s = p;
    BLITZ_BEGIN(s);
    atomic_fetch_add_explicit(&polled, 1, memory_order_relaxed);
    BLITZ_AWAIT(s, blitz_notify_wait(cx, &s->op, s->n));
    BLITZ_END(s);
}

static blitz_poll root_notify_poll(blitz_cx *cx, void *p) {
    blitz_runtime *rt = blitz_cx_runtime(cx);
    idle_notify_state st;
    int i;
    (void)p;
    memset(&st, 0, sizeof st);
    st.n = &shared_notify;
    for (i = 0; i < IDLE_TASKS; i++)
        bench_spawn(rt, idle_notify_poll, &st, sizeof st, NULL);
    return BLITZ_READY;
}

/* block_on: tokio::spawn(root).await.unwrap() */
typedef struct main_state {
    BLITZ_CORO;
    blitz_poll_fn root;
    blitz_task *h;
} main_state;
static blitz_poll main_poll(blitz_cx *cx, void *p) {
    main_state *s = p;
    static const char root_state = 0;
    BLITZ_BEGIN(s);
    bench_spawn(blitz_cx_runtime(cx), s->root, &root_state, sizeof root_state, &s->h);
    BLITZ_AWAIT(s, blitz_join(cx, s->h));
    if (blitz_task_status(s->h) != BLITZ_OK)
        bench_die("mem: the root task did not complete");
    BENCH_CHECK(blitz_task_release(&s->h));
    BLITZ_END(s);
}

static int child(const char *variant) {
    blitz_runtime *rt;
    warm_state w;
    main_state m;
    uint64_t before, after, t0, deadline;
    double spawn_ms, per_task;
    bench_watchdog(90, "mem-child");
    memset(&m, 0, sizeof m);
    if (strcmp(variant, "pending") == 0)
        m.root = root_pending_poll;
    else if (strcmp(variant, "notify") == 0)
        m.root = root_notify_poll;
    else
        bench_die("mem-child: unknown variant '%s'", variant);
    BENCH_CHECK(blitz_notify_init(&shared_notify));

    rt = bench_runtime_new(BENCH_MT2);
    memset(&w, 0, sizeof w);
    w.hs = calloc(WARM_TASKS, sizeof *w.hs);
    if (!w.hs)
        bench_die("out of memory");
    bench_block_on(rt, warm_poll, &w, sizeof w);
    free(w.hs);
    bench_sleep_ns(50u * 1000u * 1000u);

    before = bench_vm_rss_bytes();
    t0 = bench_now_ns();
    bench_block_on(rt, main_poll, &m, sizeof m);
    deadline = bench_now_ns() + (uint64_t)POLL_LIMIT_S * 1000000000u;
    while (atomic_load_explicit(&polled, memory_order_relaxed) < IDLE_TASKS) {
        if (bench_now_ns() > deadline)
            bench_die("tasks were not all polled within %d s (%zu of %d)", POLL_LIMIT_S,
                      atomic_load(&polled), IDLE_TASKS);
        bench_sleep_ns(1000u * 1000u);
    }
    spawn_ms = (double)(bench_now_ns() - t0) / 1e6;
    bench_sleep_ns(50u * 1000u * 1000u);
    after = bench_vm_rss_bytes();
    per_task = ((double)after - (double)before) / (double)IDLE_TASKS;
    printf("MEMRESULT bytes_per_task=%.2f rss_before=%llu rss_after=%llu spawn_and_poll_ms=%.1f\n",
           per_task, (unsigned long long)before, (unsigned long long)after, spawn_ms);
    fflush(stdout);
    /* Skip tearing down a million tasks: the measurement is done. */
    _exit(0);
}

/* ---------------------------------------------------------------------------
 * Parent
 * ------------------------------------------------------------------------- */

/* Runs "<self> mem-child <variant>", returns its bytes_per_task. */
static double run_child(const char *variant) {
    char buf[4096];
    size_t len = 0;
    int fds[2], status;
    pid_t pid;
    char *line;
    const char *key = "bytes_per_task=";
    if (pipe(fds) != 0)
        bench_die("pipe: %s", strerror(errno));
    fflush(stdout);
    pid = fork();
    if (pid < 0)
        bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
        char *args[4];
        args[0] = (char *)"mem";
        args[1] = (char *)"mem-child";
        args[2] = (char *)variant;
        args[3] = NULL;
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[1]);
        execv("/proc/self/exe", args);
        fprintf(stderr, "# exec /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    for (;;) {
        ssize_t n = read(fds[0], buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == sizeof buf - 1)
            break;
    }
    buf[len] = 0;
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    line = strstr(buf, "MEMRESULT");
    if (!line || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_die("mem-child %s failed (status %d): %s", variant, status, buf);
    {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
    }
    fprintf(stderr, "# mem_%s %s\n", variant, line);
    return strtod(strstr(line, key) + strlen(key), NULL);
}

int main(int argc, char **argv) {
    static const char *const variants[] = {"pending", "notify"};
    bench_cpu_snapshot cpu0;
    size_t v;
    if (argc >= 2 && strcmp(argv[1], "mem-child") == 0)
        return child(argc >= 3 ? argv[2] : "pending");
    bench_cpu_snapshot_take(&cpu0);
    bench_set_filter(argc - 1, argv + 1);
    bench_watchdog(120, "mem");
    for (v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        char name[64];
        double s[MEM_RUNS];
        int i;
        snprintf(name, sizeof name, "mem_idle_task_%s_mt2", variants[v]);
        if (!bench_selected(name))
            continue;
        for (i = 0; i < MEM_RUNS; i++)
            s[i] = run_child(variants[v]);
        bench_note(name, "bytes_per_task", s, MEM_RUNS);
        bench_emit(name, bench_median(s, MEM_RUNS), "bytes/task");
    }
    bench_cpu_report_since(&cpu0, "mem");
    return 0;
}
