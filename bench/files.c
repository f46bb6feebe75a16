/* File benchmarks (the `fs` group of make bench-compare): the same five
 * workloads as bench/fs_tokio (tokio::fs) and bench/fs_uv.c (uv_fs_*), on
 * the 2-worker multi-thread runtime, once on the io_uring backend (the
 * ring carries the ops it has) and once on epoll (every op a blocking-pool
 * job, rows *_pool), plus the physical floor (*_floor): the same work as
 * plain system calls in one thread, no runtime.
 *
 *   files [FILTER...]   run the benchmarks whose name contains a FILTER
 *                       (all without arguments)
 *
 * The files live in a fresh directory under $FS_BENCH_DIR (default /tmp),
 * removed at the end.
 * fs_read4k_qd1: one task, READS_QD1 4 KiB preads in a row from a 256 MiB
 *   file in the page cache; ns per read.
 * fs_read4k_qd64: 64 tasks, READS_QD64 reads each, all at once; ns per read.
 *   Offsets: 4 KiB-aligned, from a 64-bit LCG per task (seeded by its index).
 * fs_copy_1g: blitz_fs_copy_file of a 1 GiB file (in the page cache) to a
 *   new file; ms per copy (the copy is fsynced after each run and removed
 *   before the next, untimed).
 * fs_small_files_10k: one task writes 10,000 files of 1 KiB
 *   (blitz_fs_write_file), reads each back (blitz_fs_read_file), then
 *   deletes them; ns per file.
 * fs_stat_10k: one task stats 10,000 existing paths; ns per stat.
 * Each value is the median of the runs after one warm-up run (none for
 * the copy and the small files, the slow ones). */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include "bench_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_BYTES ((uint64_t)256 << 20)
#define COPY_BYTES ((uint64_t)1 << 30)
#define BLOCK      4096u
#define READS_QD1  20000
#define READS_QD64 1000
#define NFILES     10000
#define SMALL      1024u
#define RUNS       5
#define COPY_RUNS  3
#define FILE_RUNS  3

static char g_dir[256];
static char g_read[300], g_src[300], g_dst[300];
static char g_data[SMALL];

static void file_path(char *out, size_t cap, const char *sub, long i) {
    snprintf(out, cap, "%s/%s%ld", g_dir, sub, i);
}

static uint64_t lcg_offset(uint64_t *seed) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    return ((*seed >> 33) % (READ_BYTES / BLOCK)) * BLOCK;
}

typedef struct {
    BLITZ_CORO;
    blitz_fs_op op;
    int fd;
    long i, n;
    uint64_t seed;
    char buf[BLOCK];
} reader;

static blitz_poll reader_poll(blitz_cx *cx, void *p) {
    reader *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, s->fd, s->buf, BLOCK, lcg_offset(&s->seed)));
        if (s->op.result != (int64_t)BLOCK)
            bench_die("pread: %lld", (long long)s->op.result);
    }
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    blitz_fs_op op;
} copier;

static blitz_poll copier_poll(blitz_cx *cx, void *p) {
    copier *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, g_src, g_dst));
    if (s->op.result != (int64_t)COPY_BYTES)
        bench_die("copy_file: %lld", (long long)s->op.result);
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    blitz_fs_op op;
    long i;
    char path[300];
} smalls;

static blitz_poll smalls_poll(blitz_cx *cx, void *p) {
    smalls *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < NFILES; s->i++) {
        file_path(s->path, sizeof s->path, "s", s->i);
        BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->path, g_data, SMALL));
        if (s->op.result != (int64_t)SMALL)
            bench_die("write_file: %lld", (long long)s->op.result);
    }
    for (s->i = 0; s->i < NFILES; s->i++) {
        file_path(s->path, sizeof s->path, "s", s->i);
        BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->path));
        if (s->op.result != (int64_t)SMALL || memcmp(s->op.data, g_data, SMALL) != 0)
            bench_die("read_file: %lld", (long long)s->op.result);
        blitz_free(s->op.data);
    }
    for (s->i = 0; s->i < NFILES; s->i++) {
        file_path(s->path, sizeof s->path, "s", s->i);
        BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->path));
        if (s->op.result != 0)
            bench_die("unlink: %lld", (long long)s->op.result);
    }
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    blitz_fs_op op;
    long i;
    blitz_fs_metadata md;
    char path[300];
} stater;

static blitz_poll stater_poll(blitz_cx *cx, void *p) {
    stater *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < NFILES; s->i++) {
        file_path(s->path, sizeof s->path, "t", s->i);
        BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
        if (s->op.result != 0 || s->md.size != 0)
            bench_die("stat: %lld", (long long)s->op.result);
    }
    BLITZ_END(s);
}

/* Spawns `tasks` copies of a task (readers get their own seed) and joins
 * them: the elapsed ns. */
static double run_tasks(blitz_runtime *rt, blitz_poll_fn fn, void *proto, size_t size, int tasks) {
    blitz_task *h[64];
    uint64_t start = bench_now_ns();
    for (int i = 0; i < tasks; i++) {
        if (fn == reader_poll)
            ((reader *)proto)->seed = (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
        if (blitz_spawn(rt, fn, proto, size, &h[i]) != BLITZ_OK)
            bench_die("spawn");
    }
    for (int i = 0; i < tasks; i++) {
        if (blitz_join_blocking(h[i]) != BLITZ_OK)
            bench_die("join");
        blitz_task_release(&h[i]);
    }
    return (double)(bench_now_ns() - start);
}

/* ---- the floor: the same work as plain system calls in one thread ---- */

static void floor_reads(int fd, long n) {
    static char buf[BLOCK];
    uint64_t seed = 1;
    for (long i = 0; i < n; i++)
        if (pread(fd, buf, BLOCK, (off_t)lcg_offset(&seed)) != (ssize_t)BLOCK)
            bench_die("pread");
}

static void floor_copy(void) {
    int in = open(g_src, O_RDONLY | O_CLOEXEC);
    int out = open(g_dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || out < 0)
        bench_die("open for copy");
    uint64_t done = 0;
    while (done < COPY_BYTES) {
        ssize_t r = copy_file_range(in, NULL, out, NULL, (size_t)(COPY_BYTES - done), 0);
        if (r <= 0)
            bench_die("copy_file_range");
        done += (uint64_t)r;
    }
    close(in);
    close(out);
}

static void floor_smalls(void) {
    char path[300], buf[SMALL + 1];
    for (long i = 0; i < NFILES; i++) {
        file_path(path, sizeof path, "s", i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, g_data, SMALL) != (ssize_t)SMALL)
            bench_die("small write");
        close(fd);
    }
    for (long i = 0; i < NFILES; i++) {
        file_path(path, sizeof path, "s", i);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, buf, sizeof buf) != (ssize_t)SMALL)
            bench_die("small read");
        close(fd);
    }
    for (long i = 0; i < NFILES; i++) {
        file_path(path, sizeof path, "s", i);
        if (unlink(path) != 0)
            bench_die("small unlink");
    }
}

static void floor_stats(void) {
    char path[300];
    struct stat st;
    for (long i = 0; i < NFILES; i++) {
        file_path(path, sizeof path, "t", i);
        if (stat(path, &st) != 0 || st.st_size != 0)
            bench_die("stat");
    }
}

/* Untimed, after each copy: its gigabyte written back, so that the disk's
 * writeback does not slow whatever runs next. */
static void settle_copy(void) {
    int fd = open(g_dst, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        bench_die("fsync %s", g_dst);
    close(fd);
}

/* ---- setup ---- */

static void fill_file(const char *path, uint64_t bytes) {
    static char chunk[1 << 20];
    for (size_t i = 0; i < sizeof chunk; i++)
        chunk[i] = (char)(i * 131u);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        bench_die("create %s", path);
    for (uint64_t done = 0; done < bytes; done += sizeof chunk)
        if (pwrite(fd, chunk, sizeof chunk, (off_t)done) != (ssize_t)sizeof chunk)
            bench_die("writing %s", path);
    for (uint64_t done = 0; done < bytes; done += sizeof chunk)
        if (pread(fd, chunk, sizeof chunk, (off_t)done) != (ssize_t)sizeof chunk)
            bench_die("reading %s", path);
    close(fd);
}

static int wanted(int argc, char **argv, const char *name) {
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i]))
            return 1;
    return 0;
}

enum { W_QD1, W_QD64, W_COPY, W_SMALL, W_STAT, W_N };
static const struct {
    const char *name;
    int runs, warm;
    double ops; /* per run; 0: report ms per run */
} works[W_N] = {
    {"fs_read4k_qd1", RUNS, 1, READS_QD1}, {"fs_read4k_qd64", RUNS, 1, 64.0 * READS_QD64},
    {"fs_copy_1g", COPY_RUNS, 0, 0},       {"fs_small_files_10k", FILE_RUNS, 0, NFILES},
    {"fs_stat_10k", RUNS, 1, NFILES},
};

static void emit(const char *name, const double *samples, int n, double ops) {
    if (ops > 0)
        bench_emit_ns_per_op(name, samples, (size_t)n, (size_t)ops);
    else
        bench_emit_ms(name, samples, (size_t)n);
}

/* One sample of workload w: on rt, or as the floor when rt is NULL. */
static double sample(int w, blitz_runtime *rt, int fd) {
    double ns = 0;
    uint64_t start = bench_now_ns();
    reader r;
    copier c;
    smalls sm;
    stater st;
    switch (w) {
    case W_QD1:
    case W_QD64:
        if (!rt) {
            floor_reads(fd, READS_QD1);
            break;
        }
        memset(&r, 0, sizeof r);
        r.fd = fd;
        r.n = w == W_QD1 ? READS_QD1 : READS_QD64;
        return run_tasks(rt, reader_poll, &r, sizeof r, w == W_QD1 ? 1 : 64);
    case W_COPY:
        unlink(g_dst);
        start = bench_now_ns();
        if (!rt) {
            floor_copy();
            ns = (double)(bench_now_ns() - start);
            settle_copy();
            return ns;
        }
        memset(&c, 0, sizeof c);
        ns = run_tasks(rt, copier_poll, &c, sizeof c, 1);
        settle_copy();
        return ns;
    case W_SMALL:
        if (!rt) {
            floor_smalls();
            break;
        }
        memset(&sm, 0, sizeof sm);
        return run_tasks(rt, smalls_poll, &sm, sizeof sm, 1);
    case W_STAT:
        if (!rt) {
            floor_stats();
            break;
        }
        memset(&st, 0, sizeof st);
        return run_tasks(rt, stater_poll, &st, sizeof st, 1);
    }
    ns = (double)(bench_now_ns() - start);
    return ns;
}

static void measure(int w, blitz_runtime *rt, int fd, const char *name, int argc, char **argv) {
    double samples[RUNS];
    if (!wanted(argc, argv, name))
        return;
    if (works[w].warm)
        (void)sample(w, rt, fd);
    for (int r = 0; r < works[w].runs; r++)
        samples[r] = sample(w, rt, fd);
    /* The floor's qd64 row is the qd1 loop: one thread has no queue. */
    emit(name, samples, works[w].runs, (!rt && w == W_QD64) ? READS_QD1 : works[w].ops);
}

int main(int argc, char **argv) {
    bench_watchdog(600, "files");
    bench_cpu_snapshot t0;
    bench_cpu_snapshot_take(&t0);
    const char *parent = getenv("FS_BENCH_DIR");
    snprintf(g_dir, sizeof g_dir, "%s/blitz_fsbench_XXXXXX", parent && *parent ? parent : "/tmp");
    if (!mkdtemp(g_dir))
        bench_die("mkdtemp %s", g_dir);
    snprintf(g_read, sizeof g_read, "%s/read.dat", g_dir);
    snprintf(g_src, sizeof g_src, "%s/copy.src", g_dir);
    snprintf(g_dst, sizeof g_dst, "%s/copy.dst", g_dir);
    for (size_t i = 0; i < SMALL; i++)
        g_data[i] = (char)('a' + i % 26);
    fill_file(g_read, READ_BYTES);
    if (wanted(argc, argv, "fs_copy_1g") || wanted(argc, argv, "fs_copy_1g_pool") ||
        wanted(argc, argv, "fs_copy_1g_floor"))
        fill_file(g_src, COPY_BYTES);
    char path[300];
    for (long i = 0; i < NFILES; i++) {
        file_path(path, sizeof path, "t", i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            bench_die("create %s", path);
        close(fd);
    }
    int fd = open(g_read, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        bench_die("open %s", g_read);

    static const struct {
        blitz_backend backend;
        const char *suffix;
    } backends[] = {{BLITZ_BACKEND_IO_URING, ""}, {BLITZ_BACKEND_EPOLL, "_pool"}};
    for (size_t b = 0; b < 2; b++) {
        blitz_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.flavor = BLITZ_MULTI_THREAD;
        cfg.workers = 2;
        cfg.backend = backends[b].backend;
        blitz_runtime *rt;
        if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK) {
            fprintf(stderr, "# files: no runtime for rows *%s here\n", backends[b].suffix);
            continue;
        }
        for (int w = 0; w < W_N; w++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", works[w].name, backends[b].suffix);
            measure(w, rt, fd, name, argc, argv);
        }
        blitz_runtime_free(rt);
    }
    for (int w = 0; w < W_N; w++) {
        char name[64];
        snprintf(name, sizeof name, "%s_floor", works[w].name);
        measure(w, NULL, fd, name, argc, argv);
    }

    close(fd);
    unlink(g_read);
    unlink(g_src);
    unlink(g_dst);
    for (long i = 0; i < NFILES; i++) {
        file_path(path, sizeof path, "t", i);
        unlink(path);
        file_path(path, sizeof path, "s", i);
        unlink(path);
    }
    if (rmdir(g_dir) != 0)
        bench_die("rmdir %s", g_dir);
    bench_cpu_report_since(&t0, "fs");
    return 0;
}
