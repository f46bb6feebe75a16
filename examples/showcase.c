/* showcase: what `make run` runs. One task spawns 1,000,000 small tasks
 * and awaits every one of them, first on the multi-thread (work-stealing)
 * runtime, then on the current-thread runtime. For each it prints the
 * throughput and then the scheduler's statistics, with a line saying what
 * each number means.
 *
 *   cc -std=c11 -O2 -pthread -I. examples/showcase.c -o showcase && ./showcase
 */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TASKS 1000000L
#define BATCH 1024

/* ---- the workload ----------------------------------------------------------- */

/* A leaf task: a few nanoseconds of work on its own index. */
typedef struct {
    uint64_t index, result;
} leaf_state;

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static blitz_poll leaf_poll(blitz_cx *cx, void *p) {
    (void)cx;
    leaf_state *l = p;
    l->result = mix(l->index);
    return BLITZ_READY;
}

/* The spawner: spawns BATCH leaves, awaits each, adds up their results,
 * releases them, and goes on until TASKS leaves have run. */
typedef struct {
    BLITZ_CORO;
    long spawned, i, n;
    int error;
    uint64_t checksum;
    blitz_task *batch[BATCH];
} spawner_state;

static blitz_poll spawner_poll(blitz_cx *cx, void *p) {
    spawner_state *s = p;
    BLITZ_BEGIN(s);
    while (s->spawned < TASKS && !s->error) {
        s->n = TASKS - s->spawned < BATCH ? TASKS - s->spawned : BATCH;
        for (s->i = 0; s->i < s->n; s->i++) {
            leaf_state l = {(uint64_t)(s->spawned + s->i), 0};
            int rc = blitz_spawn(blitz_cx_runtime(cx), leaf_poll, &l, sizeof l, &s->batch[s->i]);
            if (rc != BLITZ_OK) {
                s->error = rc;
                s->n = s->i;
                break;
            }
        }
        for (s->i = 0; s->i < s->n; s->i++) {
            BLITZ_AWAIT(s, blitz_join(cx, s->batch[s->i]));
            s->checksum += ((leaf_state *)blitz_task_state(s->batch[s->i]))->result;
            blitz_task_release(&s->batch[s->i]);
        }
        s->spawned += s->n;
    }
    BLITZ_END(s);
}

/* ---- printing ------------------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void stat_line(const char *name, uint64_t value, const char *meaning) {
    printf("  %-19s %10" PRIu64 "  %s\n", name, value, meaning);
}

static void print_stats(blitz_runtime *rt) {
    blitz_stats st;
    if (blitz_runtime_stats(rt, &st) != BLITZ_OK)
        return;
    printf("\nScheduler statistics (blitz_runtime_stats, read after shutdown):\n");
    stat_line("total_spawned", st.total_spawned,
              "tasks created: the 1,000,000 leaves plus the spawner");
    stat_line("total_polled", st.total_polled,
              "poll-function calls: a leaf finishes in one poll; the spawner is");
    printf("  %-19s %10s  polled again each time the leaf it awaits has finished\n", "", "");
    stat_line("total_stolen", st.total_stolen,
              "tasks a worker took from another worker's queue (work stealing)");
    stat_line("total_parked", st.total_parked,
              "times a worker went to sleep because it found nothing to run");
    stat_line("tasks_alive", st.tasks_alive,
              "tasks spawned and not yet freed (all were joined and released)");
    stat_line("global_queue_depth", st.global_queue_depth,
              "tasks waiting in the global (injection) queue");
    stat_line("num_workers", st.num_workers,
              "worker threads (1 for current-thread: the thread that waits)");
    stat_line("workers_started", st.workers_started,
              "worker threads started (they start on the first spawn)");

    printf("\nPer worker (blitz_runtime_worker_stats):\n");
    printf("  %6s %10s %8s %7s %7s %10s %8s %9s %8s\n", "worker", "polled", "stolen", "steals",
           "parked", "lifo_hits", "batches", "overflows", "interval");
    uint64_t polled = 0;
    for (uint32_t i = 0; i < st.num_workers; i++) {
        blitz_worker_stats w;
        if (blitz_runtime_worker_stats(rt, i, &w) != BLITZ_OK)
            continue;
        polled += w.tasks_polled;
        printf("  %6u %10" PRIu64 " %8" PRIu64 " %7" PRIu64 " %7" PRIu64 " %10" PRIu64 " %8" PRIu64
               " %9" PRIu64 " %8u\n",
               i, w.tasks_polled, w.tasks_stolen, w.steals, w.times_parked, w.lifo_hits,
               w.global_batch_fetches, w.overflows, w.global_queue_interval);
    }
    printf("  polled     tasks this worker polled");
    if (polled < st.total_polled)
        printf(" (the other %" PRIu64 " polls ran on the main thread\n"
               "             while it waited in blitz_join_blocking)",
               st.total_polled - polled);
    printf("\n");
    if (blitz_runtime_flavor(rt) == BLITZ_CURRENT_THREAD) {
        printf("  interval   polls between two looks for tasks that other threads spawned\n"
               "             or woke (the rest are zero: one thread, nothing to steal)\n");
        return;
    }
    printf("  stolen     tasks taken from other workers' queues, in `steals` steal\n"
           "             operations (one steal takes half of the victim's queue)\n");
    printf("  parked     times the worker slept (futex) for lack of work\n");
    printf("  lifo_hits  tasks run straight from the LIFO slot: a task spawned from a\n"
           "             worker runs next, on the same core, while its data is in cache\n");
    printf("  batches    batches of tasks fetched from the global queue\n");
    printf("  overflows  times the worker's 256-slot queue was full and half of it\n"
           "             moved to the global queue for the others\n");
    printf("  interval   polls between two looks at the global queue (adapts to the\n"
           "             average poll time, 8..255, so remote tasks wait ~1 ms at most)\n");
}

/* ---- one run per flavour --------------------------------------------------------- */

static int run(const char *title, blitz_flavor flavor, uint64_t expect) {
    blitz_config cfg = {0};
    cfg.flavor = flavor;
    blitz_runtime *rt = NULL;
    int rc = blitz_runtime_new(&cfg, &rt);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "blitz_runtime_new: %s\n", blitz_strerror(rc));
        return 1;
    }
    printf("\n== %s runtime, %u worker thread%s ==\n", title, blitz_runtime_workers(rt),
           blitz_runtime_workers(rt) == 1 ? "" : "s");

    /* The spawner's state is ~8 KiB (its batch of handles); it is copied
     * into the task, so a heap buffer is fine as the source. */
    spawner_state *init = calloc(1, sizeof *init);
    if (!init) {
        blitz_runtime_free(rt);
        return 1;
    }
    double t0 = now_s();
    blitz_task *spawner = NULL;
    rc = blitz_spawn(rt, spawner_poll, init, sizeof *init, &spawner);
    if (rc == BLITZ_OK)
        rc = blitz_join_blocking(spawner);
    double secs = now_s() - t0;
    free(init);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "spawner: %s\n", blitz_strerror(rc));
        blitz_task_release(&spawner);
        blitz_runtime_free(rt);
        return 1;
    }
    spawner_state *done = blitz_task_state(spawner);
    int ok = done->error == BLITZ_OK && done->spawned == TASKS && done->checksum == expect;
    printf("%ld tasks spawned and joined in %.3f s: %.2f M tasks/s (%.0f ns per task), "
           "checksum %s\n",
           done->spawned, secs, (double)done->spawned / secs / 1e6,
           secs * 1e9 / (double)done->spawned, ok ? "ok" : "WRONG");
    if (done->error)
        printf("spawn failed: %s\n", blitz_strerror(done->error));
    blitz_task_release(&spawner);

    /* Stop the workers so the counters hold still, then read them. */
    blitz_runtime_shutdown(rt);
    print_stats(rt);
    blitz_runtime_free(rt);
    return ok ? 0 : 1;
}

int main(void) {
    uint64_t expect = 0;
    for (long i = 0; i < TASKS; i++)
        expect += mix((uint64_t)i);

    printf("blitz %s showcase: one task spawns %ld tasks, %d at a time, and awaits\n"
           "each one (blitz_join): every task is spawned, queued, polled, completed,\n"
           "joined and freed.\n",
           blitz_version(), TASKS, BATCH);
    int failed = run("multi-thread", BLITZ_MULTI_THREAD, expect);
    printf("\nThe current-thread runtime has no worker threads: the thread that waits\n"
           "(here main, in blitz_join_blocking) runs the tasks, with no stealing and no\n"
           "cross-thread wake-ups.\n");
    failed |= run("current-thread", BLITZ_CURRENT_THREAD, expect);
    return failed;
}
