/* File benchmarks: 4 KiB random reads (blitz_fs_pread) from a 64 MiB file
 * in the page cache, on the 2-worker multi-thread runtime, once on the
 * io_uring backend (the ring carries the reads itself) and once on epoll
 * (every read is a blocking-pool job): the same binary, the same reads.
 *
 *   files [FILTER...]   run the benchmarks whose name contains a FILTER
 *                       (all without arguments)
 *
 * files_pread4k_qd1_<backend>: one task, READS_QD1 reads in a row.
 * files_pread4k_qd64_<backend>: 64 tasks, READS_QD64 reads each, all at
 *   once (64 reads in flight).
 * files_pread4k_floor: the physical floor, the qd1 reads as plain pread(2)
 *   calls in one thread, no runtime.
 * Offsets: 4 KiB-aligned, from a 64-bit LCG per task (seeded by the task's
 * index), generated inside the task. Timed: spawning the tasks until the
 * last one finished; emitted as ns per read (median of RUNS runs, after
 * one warm-up run). The file is written, then read once, before timing,
 * and removed at the end. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include "bench_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_BYTES ((uint64_t)64 << 20)
#define BLOCK      4096u
#define READS_QD1  20000
#define READS_QD64 1000
#define RUNS       5

typedef struct {
    BLITZ_CORO;
    blitz_fs_op op;
    int fd;
    long i, n;
    uint64_t seed, off;
    char buf[BLOCK];
} reader;

static blitz_poll reader_poll(blitz_cx *cx, void *p) {
    reader *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        s->seed = s->seed * 6364136223846793005ull + 1442695040888963407ull;
        s->off = ((s->seed >> 33) % (FILE_BYTES / BLOCK)) * BLOCK;
        BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, s->fd, s->buf, BLOCK, s->off));
        if (s->op.result != (int64_t)BLOCK)
            bench_die("pread: %lld", (long long)s->op.result);
    }
    BLITZ_END(s);
}

/* One run: `tasks` readers of `n` reads each; the elapsed ns. */
static double run_once(blitz_runtime *rt, int fd, int tasks, long n) {
    blitz_task *h[64];
    uint64_t start = bench_now_ns();
    for (int i = 0; i < tasks; i++) {
        reader s;
        memset(&s, 0, sizeof s);
        s.fd = fd;
        s.n = n;
        s.seed = (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
        if (blitz_spawn(rt, reader_poll, &s, sizeof s, &h[i]) != BLITZ_OK)
            bench_die("spawn");
    }
    for (int i = 0; i < tasks; i++) {
        if (blitz_join_blocking(h[i]) != BLITZ_OK)
            bench_die("join");
        blitz_task_release(&h[i]);
    }
    return (double)(bench_now_ns() - start);
}

/* The same reads as one qd1 reader, as plain system calls: the elapsed ns. */
static double run_floor(int fd, long n) {
    static char buf[BLOCK];
    uint64_t seed = 1, start = bench_now_ns();
    for (long i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        off_t off = (off_t)(((seed >> 33) % (FILE_BYTES / BLOCK)) * BLOCK);
        if (pread(fd, buf, BLOCK, off) != (ssize_t)BLOCK)
            bench_die("pread");
    }
    return (double)(bench_now_ns() - start);
}

static int wanted(int argc, char **argv, const char *name) {
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i]))
            return 1;
    return 0;
}

int main(int argc, char **argv) {
    bench_watchdog(240, "files");
    char path[] = "/tmp/blitz_bench_files_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        bench_die("mkstemp");
    unlink(path);
    static char chunk[1 << 20];
    for (size_t i = 0; i < sizeof chunk; i++)
        chunk[i] = (char)(i * 131u);
    for (uint64_t done = 0; done < FILE_BYTES; done += sizeof chunk)
        if (pwrite(fd, chunk, sizeof chunk, (off_t)done) != (ssize_t)sizeof chunk)
            bench_die("writing the file");
    for (uint64_t done = 0; done < FILE_BYTES; done += sizeof chunk)
        if (pread(fd, chunk, sizeof chunk, (off_t)done) != (ssize_t)sizeof chunk)
            bench_die("reading the file");
    static const struct {
        blitz_backend backend;
        const char *name;
    } backends[] = {{BLITZ_BACKEND_IO_URING, "uring"}, {BLITZ_BACKEND_EPOLL, "epoll"}};
    static const struct {
        int tasks;
        long n;
        const char *name;
    } shapes[] = {{1, READS_QD1, "qd1"}, {64, READS_QD64, "qd64"}};
    double median[2][2] = {{0, 0}, {0, 0}}, floor_ns = 0;
    if (wanted(argc, argv, "files_pread4k_floor")) {
        double samples[RUNS];
        (void)run_floor(fd, READS_QD1);
        for (int r = 0; r < RUNS; r++)
            samples[r] = run_floor(fd, READS_QD1);
        bench_emit_ns_per_op("files_pread4k_floor", samples, RUNS, READS_QD1);
        floor_ns = bench_median(samples, RUNS) / (double)READS_QD1;
    }
    for (size_t b = 0; b < 2; b++) {
        blitz_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.flavor = BLITZ_MULTI_THREAD;
        cfg.workers = 2;
        cfg.backend = backends[b].backend;
        blitz_runtime *rt;
        if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK) {
            fprintf(stderr, "# files: no %s runtime here\n", backends[b].name);
            continue;
        }
        for (size_t k = 0; k < 2; k++) {
            char name[64];
            snprintf(name, sizeof name, "files_pread4k_%s_%s", shapes[k].name, backends[b].name);
            if (!wanted(argc, argv, name))
                continue;
            double samples[RUNS];
            (void)run_once(rt, fd, shapes[k].tasks, shapes[k].n);
            for (int r = 0; r < RUNS; r++)
                samples[r] = run_once(rt, fd, shapes[k].tasks, shapes[k].n);
            size_t ops = (size_t)shapes[k].tasks * (size_t)shapes[k].n;
            bench_emit_ns_per_op(name, samples, RUNS, ops);
            median[b][k] = bench_median(samples, RUNS) / (double)ops;
        }
        blitz_runtime_free(rt);
    }
    for (size_t k = 0; k < 2; k++)
        if (median[0][k] > 0 && median[1][k] > 0)
            fprintf(stderr, "# files_pread4k_%s: io_uring / pool = %.3f\n", shapes[k].name,
                    median[0][k] / median[1][k]);
    for (size_t b = 0; b < 2; b++)
        if (median[b][0] > 0 && floor_ns > 0)
            fprintf(stderr, "# files_pread4k_qd1_%s / floor = %.2f\n", backends[b].name,
                    median[b][0] / floor_ns);
    close(fd);
    return 0;
}
