/* The fs group of make bench-compare on libuv: the workloads of
 * bench/files.c (see its top comment) with uv_fs_* on one loop (its
 * default thread pool carries the calls), one line per benchmark in the
 * anchors' format with impl=libuv. Not a blitz benchmark: built by
 * bench/compare.sh against Debian's libuv1-dev.
 *
 *   fs_uv DIR [FILTER...]
 *
 * Reads: uv_fs_read at an offset, one chain of READS_QD1 (qd1) or 64
 * chains of READS_QD64 (qd64: 64 requests in flight). Copy:
 * uv_fs_copyfile. Small files: open/write/close, open/read/close, unlink
 * (libuv has no whole-file calls). Stats: uv_fs_stat. Files go in a fresh
 * directory under DIR, removed at the end. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

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

static char g_dir[256], g_read[300], g_src[300], g_dst[300];
static char g_data[SMALL];
static uv_loop_t *g_loop;

static void die(const char *what, long r) {
    fprintf(stderr, "fs_uv: %s: %ld (%s)\n", what, r, r < 0 ? uv_strerror((int)r) : "");
    exit(1);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *name, double *s, int n, double ops) {
    fprintf(stderr, "# %s run_ns=[", name);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%.3f", i ? "," : "", s[i]);
    fprintf(stderr, "]\n");
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    if (ops > 0)
        printf("bench=%s value=%.4f unit=ns/op impl=libuv\n", name, m / ops);
    else
        printf("bench=%s value=%.4f unit=ms impl=libuv\n", name, m / 1e6);
    fflush(stdout);
}

static void file_path(char *out, size_t cap, const char *sub, long i) {
    snprintf(out, cap, "%s/%s%ld", g_dir, sub, i);
}

/* ---- random reads ---- */

typedef struct {
    uv_fs_t req;
    uv_file fd;
    long left;
    uint64_t seed;
    char buf[BLOCK];
    uv_buf_t b;
} reader;

static void read_next(reader *r);

static void on_read(uv_fs_t *req) {
    reader *r = req->data;
    if (req->result != (ssize_t)BLOCK)
        die("read", (long)req->result);
    uv_fs_req_cleanup(req);
    read_next(r);
}

static void read_next(reader *r) {
    if (r->left-- == 0)
        return;
    r->seed = r->seed * 6364136223846793005ull + 1442695040888963407ull;
    int64_t off = (int64_t)(((r->seed >> 33) % (READ_BYTES / BLOCK)) * BLOCK);
    r->b = uv_buf_init(r->buf, BLOCK);
    r->req.data = r;
    int rc = uv_fs_read(g_loop, &r->req, r->fd, &r->b, 1, off, on_read);
    if (rc)
        die("uv_fs_read", rc);
}

static double run_reads(uv_file fd, int chains, long n) {
    static reader rs[64];
    double start = now_ns();
    for (int i = 0; i < chains; i++) {
        rs[i].fd = fd;
        rs[i].left = n;
        rs[i].seed = (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
        read_next(&rs[i]);
    }
    uv_run(g_loop, UV_RUN_DEFAULT);
    return now_ns() - start;
}

/* ---- copy ---- */

static void on_copy(uv_fs_t *req) {
    if (req->result != 0)
        die("copyfile", (long)req->result);
    uv_fs_req_cleanup(req);
}

static double run_copy(void) {
    uv_fs_t req;
    unlink(g_dst);
    double start = now_ns();
    int rc = uv_fs_copyfile(g_loop, &req, g_src, g_dst, 0, on_copy);
    if (rc)
        die("uv_fs_copyfile", rc);
    uv_run(g_loop, UV_RUN_DEFAULT);
    double ns = now_ns() - start;
    /* Untimed: the copy written back before whatever runs next. */
    int fd = open(g_dst, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        die("fsync", fd);
    close(fd);
    return ns;
}

/* ---- small files: one chain of steps per file, files one after another ---- */

enum { S_OPEN_W, S_WRITE, S_CLOSE_W, S_OPEN_R, S_READ, S_CLOSE_R, S_UNLINK };

typedef struct {
    uv_fs_t req;
    int phase; /* 0 write, 1 read, 2 delete */
    int step;
    long i;
    uv_file fd;
    char path[300];
    char buf[SMALL + 1];
    uv_buf_t b;
} smalls;

static void small_step(smalls *s);

static void on_small(uv_fs_t *req) {
    smalls *s = req->data;
    ssize_t r = req->result;
    uv_fs_req_cleanup(req);
    switch (s->step) {
    case S_OPEN_W:
        if (r < 0)
            die("open for write", (long)r);
        s->fd = (uv_file)r;
        s->step = S_WRITE;
        break;
    case S_WRITE:
        if (r != (ssize_t)SMALL)
            die("write", (long)r);
        s->step = S_CLOSE_W;
        break;
    case S_OPEN_R:
        if (r < 0)
            die("open for read", (long)r);
        s->fd = (uv_file)r;
        s->step = S_READ;
        break;
    case S_READ:
        if (r != (ssize_t)SMALL || memcmp(s->buf, g_data, SMALL) != 0)
            die("read", (long)r);
        s->step = S_CLOSE_R;
        break;
    case S_CLOSE_W:
    case S_CLOSE_R:
    case S_UNLINK:
        if (r != 0)
            die("close/unlink", (long)r);
        if (++s->i == NFILES) {
            s->i = 0;
            if (++s->phase == 3)
                return;
        }
        s->step = s->phase == 0 ? S_OPEN_W : s->phase == 1 ? S_OPEN_R : S_UNLINK;
        break;
    }
    small_step(s);
}

static void small_step(smalls *s) {
    int rc = 0;
    s->req.data = s;
    switch (s->step) {
    case S_OPEN_W:
        file_path(s->path, sizeof s->path, "s", s->i);
        rc = uv_fs_open(g_loop, &s->req, s->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644,
                        on_small);
        break;
    case S_WRITE:
        s->b = uv_buf_init(g_data, SMALL);
        rc = uv_fs_write(g_loop, &s->req, s->fd, &s->b, 1, -1, on_small);
        break;
    case S_OPEN_R:
        file_path(s->path, sizeof s->path, "s", s->i);
        rc = uv_fs_open(g_loop, &s->req, s->path, O_RDONLY | O_CLOEXEC, 0, on_small);
        break;
    case S_READ:
        s->b = uv_buf_init(s->buf, sizeof s->buf);
        rc = uv_fs_read(g_loop, &s->req, s->fd, &s->b, 1, -1, on_small);
        break;
    case S_CLOSE_W:
    case S_CLOSE_R:
        rc = uv_fs_close(g_loop, &s->req, s->fd, on_small);
        break;
    case S_UNLINK:
        file_path(s->path, sizeof s->path, "s", s->i);
        rc = uv_fs_unlink(g_loop, &s->req, s->path, on_small);
        break;
    }
    if (rc)
        die("small-file request", rc);
}

static double run_smalls(void) {
    static smalls s;
    memset(&s, 0, sizeof s);
    double start = now_ns();
    small_step(&s);
    uv_run(g_loop, UV_RUN_DEFAULT);
    return now_ns() - start;
}

/* ---- stats ---- */

typedef struct {
    uv_fs_t req;
    long i;
    char path[300];
} stater;

static void stat_next(stater *s);

static void on_stat(uv_fs_t *req) {
    stater *s = req->data;
    if (req->result != 0 || req->statbuf.st_size != 0)
        die("stat", (long)req->result);
    uv_fs_req_cleanup(req);
    if (++s->i < NFILES)
        stat_next(s);
}

static void stat_next(stater *s) {
    file_path(s->path, sizeof s->path, "t", s->i);
    s->req.data = s;
    int rc = uv_fs_stat(g_loop, &s->req, s->path, on_stat);
    if (rc)
        die("uv_fs_stat", rc);
}

static double run_stats(void) {
    static stater s;
    memset(&s, 0, sizeof s);
    double start = now_ns();
    stat_next(&s);
    uv_run(g_loop, UV_RUN_DEFAULT);
    return now_ns() - start;
}

/* ---- setup ---- */

static void fill_file(const char *path, uint64_t bytes) {
    static char chunk[1 << 20];
    for (size_t i = 0; i < sizeof chunk; i++)
        chunk[i] = (char)(i * 131u);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        die("create", fd);
    for (uint64_t done = 0; done < bytes; done += sizeof chunk)
        if (pwrite(fd, chunk, sizeof chunk, (off_t)done) != (ssize_t)sizeof chunk)
            die("fill write", 0);
    for (uint64_t done = 0; done < bytes; done += sizeof chunk)
        if (pread(fd, chunk, sizeof chunk, (off_t)done) != (ssize_t)sizeof chunk)
            die("fill read", 0);
    close(fd);
}

static int g_argc;
static char **g_argv;

static int wanted(const char *name) {
    if (g_argc < 3)
        return 1;
    for (int i = 2; i < g_argc; i++)
        if (strstr(name, g_argv[i]))
            return 1;
    return 0;
}

int main(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
    snprintf(g_dir, sizeof g_dir, "%s/uv_fsbench_XXXXXX", argc > 1 ? argv[1] : "/tmp");
    if (!mkdtemp(g_dir))
        die("mkdtemp", 0);
    snprintf(g_read, sizeof g_read, "%s/read.dat", g_dir);
    snprintf(g_src, sizeof g_src, "%s/copy.src", g_dir);
    snprintf(g_dst, sizeof g_dst, "%s/copy.dst", g_dir);
    for (size_t i = 0; i < SMALL; i++)
        g_data[i] = (char)('a' + i % 26);
    fill_file(g_read, READ_BYTES);
    if (wanted("fs_copy_1g"))
        fill_file(g_src, COPY_BYTES);
    char path[300];
    for (long i = 0; i < NFILES; i++) {
        file_path(path, sizeof path, "t", i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            die("create", fd);
        close(fd);
    }
    g_loop = uv_default_loop();
    int fd = open(g_read, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("open", fd);
    double s[RUNS];

    if (wanted("fs_read4k_qd1")) {
        (void)run_reads(fd, 1, READS_QD1);
        for (int r = 0; r < RUNS; r++)
            s[r] = run_reads(fd, 1, READS_QD1);
        report("fs_read4k_qd1", s, RUNS, READS_QD1);
    }
    if (wanted("fs_read4k_qd64")) {
        (void)run_reads(fd, 64, READS_QD64);
        for (int r = 0; r < RUNS; r++)
            s[r] = run_reads(fd, 64, READS_QD64);
        report("fs_read4k_qd64", s, RUNS, 64.0 * READS_QD64);
    }
    if (wanted("fs_copy_1g")) {
        for (int r = 0; r < COPY_RUNS; r++)
            s[r] = run_copy();
        report("fs_copy_1g", s, COPY_RUNS, 0);
    }
    if (wanted("fs_small_files_10k")) {
        for (int r = 0; r < FILE_RUNS; r++)
            s[r] = run_smalls();
        report("fs_small_files_10k", s, FILE_RUNS, NFILES);
    }
    if (wanted("fs_stat_10k")) {
        (void)run_stats();
        for (int r = 0; r < RUNS; r++)
            s[r] = run_stats();
        report("fs_stat_10k", s, RUNS, NFILES);
    }

    close(fd);
    unlink(g_read);
    unlink(g_src);
    unlink(g_dst);
    for (long i = 0; i < NFILES; i++) {
        file_path(path, sizeof path, "t", i);
        unlink(path);
    }
    if (rmdir(g_dir) != 0)
        die("rmdir", 0);
    uv_loop_close(g_loop);
    return 0;
}
