/* File ops carried out by the io_uring ring against the same ops as pool
 * jobs (included by tests/test_fs.c): the same results, the ring's path
 * never touching the pool, and cancels at any point leaking nothing. */

enum { TFU_MAX = 64 };

typedef struct {
    BLITZ_CORO;
    char dir[64], f[160], s[160], h[160], h2[160], d[160];
    blitz_fs_op op;
    blitz_fs_metadata md;
    int fd, fd2;
    char buf[32], a[3], b[100];
    blitz_iovec iov[2];
    int64_t out[TFU_MAX]; /* every result, then metadata fields */
    int n;
} tfu_script;

#define TFU_REC(s, v) ((s)->out[(s)->n++] = (int64_t)(v))

static blitz_poll tfu_script_poll(blitz_cx *cx, void *p) {
    tfu_script *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->f,
                                 BLITZ_FS_WRITE | BLITZ_FS_CREATE | BLITZ_FS_TRUNCATE, 0644));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->fd, "hello world", 11));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_pwrite(cx, &s->op, s->fd, "HE", 2, 0));
    TFU_REC(s, s->op.result);
    s->iov[0].base = "ab";
    s->iov[0].len = 2;
    s->iov[1].base = "cde";
    s->iov[1].len = 3;
    BLITZ_AWAIT(s, blitz_fs_writev(cx, &s->op, s->fd, s->iov, 2, -1));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_fsync(cx, &s->op, s->fd));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_fdatasync(cx, &s->op, s->fd));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_fallocate(cx, &s->op, s->fd, 0, 8192));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_fstat(cx, &s->op, s->fd, &s->md));
    TFU_REC(s, s->op.result);
    TFU_REC(s, s->md.size);
    BLITZ_AWAIT(s, blitz_fs_truncate(cx, &s->op, s->fd, 16));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_fstat(cx, &s->op, s->fd, &s->md));
    TFU_REC(s, s->md.size);
    TFU_REC(s, s->md.type);
    TFU_REC(s, s->md.mode & 0600); /* whatever the umask */
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->f, BLITZ_FS_READ, 0));
    CHECK_GE(s->op.result, 0);
    s->fd2 = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->fd2, s->buf, 5));
    TFU_REC(s, s->op.result);
    CHECK(memcmp(s->buf, "HEllo", 5) == 0);
    BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, s->fd2, s->buf, 4, 6));
    TFU_REC(s, s->op.result);
    CHECK(memcmp(s->buf, "worl", 4) == 0);
    s->iov[0].base = s->a;
    s->iov[0].len = sizeof s->a;
    s->iov[1].base = s->b;
    s->iov[1].len = sizeof s->b;
    BLITZ_AWAIT(s, blitz_fs_readv(cx, &s->op, s->fd2, s->iov, 2, 0));
    TFU_REC(s, s->op.result);
    CHECK(memcmp(s->a, "HEl", 3) == 0 && memcmp(s->b, "lo worldabcde", 13) == 0);
    /* the file position moved by 5 only (the other reads were at offsets) */
    BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->fd2, s->buf, sizeof s->buf));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_symlink(cx, &s->op, "f", s->s));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_lstat(cx, &s->op, s->s, &s->md));
    TFU_REC(s, s->op.result);
    TFU_REC(s, s->md.type);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->s, &s->md));
    TFU_REC(s, s->md.type);
    TFU_REC(s, s->md.size);
    BLITZ_AWAIT(s, blitz_fs_link(cx, &s->op, s->f, s->h));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_rename(cx, &s->op, s->h, s->h2));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->h2, &s->md));
    TFU_REC(s, s->md.nlink);
    BLITZ_AWAIT(s, blitz_fs_mkdir(cx, &s->op, s->d, 0700));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->d, &s->md));
    TFU_REC(s, s->md.type);
    BLITZ_AWAIT(s, blitz_fs_rmdir(cx, &s->op, s->d));
    TFU_REC(s, s->op.result);
    /* deleted while open: still readable through the descriptor */
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->f));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->h2));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->s));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_fstat(cx, &s->op, s->fd2, &s->md));
    TFU_REC(s, s->md.nlink);
    TFU_REC(s, s->md.size);
    BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, s->fd2, s->buf, 4, 6));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->f, &s->md));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd2));
    TFU_REC(s, s->op.result);
    BLITZ_END(s);
}

static const int64_t tfu_expected[] = {
    11,
    2,
    5,
    0,
    0,
    0,
    0,
    8192,
    0,
    16,
    BLITZ_FILE_REGULAR,
    0600,
    0, /* writing */
    5,
    4,
    16,
    11, /* reading */
    0,
    0,
    BLITZ_FILE_SYMLINK,
    BLITZ_FILE_REGULAR,
    16, /* symlink */
    0,
    0,
    2, /* link, rename */
    0,
    BLITZ_FILE_DIRECTORY,
    0, /* mkdir, rmdir */
    0,
    0,
    0,
    0,
    16,
    4,
    BLITZ_ENOENT,
    0, /* deleted while open */
};

/* `native`: the runtime carries file ops on a ring (no pool job). */
static int tfu_script_run(blitz_backend backend, int native, tu_flavor f, tfu_script *out,
                          int *ran) {
    blitz_config cfg = tu_config(f);
    cfg.backend = backend;
    blitz_runtime *rt = NULL;
    *ran = 0;
    if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK)
        return 0; /* no io_uring here */
    memset(out, 0, sizeof *out);
    tf_tmpdir(out->dir, sizeof out->dir);
    snprintf(out->f, sizeof out->f, "%s/f", out->dir);
    snprintf(out->s, sizeof out->s, "%s/s", out->dir);
    snprintf(out->h, sizeof out->h, "%s/h", out->dir);
    snprintf(out->h2, sizeof out->h2, "%s/h2", out->dir);
    snprintf(out->d, sizeof out->d, "%s/d", out->dir);
    int fds = tu_open_fds();
    CHECK_OK(blitz_runtime_run(rt, tfu_script_poll, out, sizeof *out));
    blitz_pool_stats st;
    CHECK_OK(blitz_runtime_pool_stats(rt, &st));
    CHECK_EQ(tu_open_fds(), fds);
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(out->dir);
    *ran = 1;
    /* A ring carried every op itself; the pool did otherwise. */
    if (native)
        CHECK_EQ(st.jobs_run, 0);
    else
        CHECK_GT(st.jobs_run, 0);
    CHECK_EQ(out->n, (int)(sizeof tfu_expected / sizeof tfu_expected[0]));
    for (int i = 0; i < out->n; i++)
        if (out->out[i] != tfu_expected[i]) {
            fprintf(stderr, "# backend %d: result %d is %lld, not %lld\n", (int)backend, i,
                    (long long)out->out[i], (long long)tfu_expected[i]);
            CHECK_EQ(out->out[i], tfu_expected[i]);
        }
    return 0;
}

static int fs_native_both_paths(tu_flavor f) {
    static tfu_script ring, pool, dflt;
    int ran_ring, ran_pool, ran_dflt;
    tfu_script_run(BLITZ_BACKEND_IO_URING, 1, f, &ring, &ran_ring);
    tfu_script_run(BLITZ_BACKEND_EPOLL, 0, f, &pool, &ran_pool);
    CHECK(ran_pool);
    /* The default: the ring, or with several workers epoll and a ring
     * for files; either way files go to a ring where there is one
     * (unless the environment names a backend). */
    tfu_script_run(BLITZ_BACKEND_AUTO, ran_ring && !getenv("BLITZ_BACKEND"), f, &dflt, &ran_dflt);
    CHECK(ran_dflt);
    CHECK_EQ(dflt.n, pool.n);
    CHECK(memcmp(dflt.out, pool.out, sizeof dflt.out) == 0);
    if (ran_ring) {
        CHECK_EQ(ring.n, pool.n);
        CHECK(memcmp(ring.out, pool.out, sizeof ring.out) == 0);
    }
    return 0;
}
TU_FLAVOR_TESTS(fs_native_both_paths)

/* Direct descriptor slots of the runtime's rings still taken by
 * whole-file chains (0 once every chain's last CQE was reaped). */
static int tfu_slots_taken(blitz_runtime *rt) {
    int n = 0;
#if defined(__linux__) && !defined(BLITZ_NO_IO_URING)
    blitz__io *io = rt->io;
    for (uint32_t i = 0; io && i < io->nrings; i++)
        for (int w = 0; w < 4; w++)
            n += __builtin_popcountll(blitz__u64_load(&io->rings[i].slots[w], BLITZ__RELAXED));
#else
    (void)rt;
#endif
    return n;
}

/* Whether the runtime's ring carries read_file and write_file itself. */
static int tfu_chains(blitz_runtime *rt) {
#if defined(__linux__) && !defined(BLITZ_NO_IO_URING)
    return rt->io && (rt->io->uf_ops >> BLITZ__UF_READ_FILE & 1u);
#else
    (void)rt;
    return 0;
#endif
}

/* Ring ops given up at every point (right after the submission, while the
 * kernel works, after the completion but before the task took it), many
 * times over: opened files are closed by the completion, records freed,
 * and the op works again afterwards. */
typedef struct {
    BLITZ_CORO;
    const char *path;
    char wpath[192]; /* this task's own file for write_file */
    blitz_fs_op op;
    blitz_timer timer;
    blitz_fs_metadata md;
    char buf[4096];
    long i, n, done, timeouts;
    unsigned seed;
} tfu_race;

static blitz_poll tfu_race_poll(blitz_cx *cx, void *p) {
    tfu_race *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        s->seed = s->seed * 1103515245u + 12345u;
        if ((s->seed >> 8) % 4 == 3) {
            BLITZ_AWAIT(s, blitz_timeout_op(
                               cx, &s->timer, (int64_t)((s->seed >> 16) % 40) * 1000,
                               blitz_fs_write_file(cx, &s->op, s->wpath, s->buf, sizeof s->buf),
                               blitz_fs_cancel, &s->op));
            if (!s->timer.expired)
                CHECK_EQ(s->op.result, (int64_t)sizeof s->buf);
        } else if ((s->seed >> 8) % 3 == 0) {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, (int64_t)((s->seed >> 16) % 40) * 1000,
                                            blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ, 0),
                                            blitz_fs_cancel, &s->op));
            if (!s->timer.expired) {
                CHECK_GE(s->op.result, 0);
                close((int)s->op.result);
            }
        } else if ((s->seed >> 8) % 3 == 1) {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, (int64_t)((s->seed >> 16) % 40) * 1000,
                                            blitz_fs_stat(cx, &s->op, s->path, &s->md),
                                            blitz_fs_cancel, &s->op));
            if (!s->timer.expired)
                CHECK_EQ(s->md.size, 8192);
        } else {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, (int64_t)((s->seed >> 16) % 40) * 1000,
                                            blitz_fs_read_file(cx, &s->op, s->path),
                                            blitz_fs_cancel, &s->op));
            if (!s->timer.expired) {
                CHECK_EQ(s->op.result, 8192);
                blitz_free(s->op.data);
            }
        }
        if (s->timer.expired)
            s->timeouts++;
        else
            s->done++;
    }
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ, 0));
    CHECK_GE(s->op.result, 0);
    close((int)s->op.result);
    BLITZ_END(s);
}

/* A runtime on `backend` in *rt (NULL when it cannot be made: no io_uring
 * here) and an 8 KiB file `path` in a fresh folder `dir` (64 and 160
 * bytes) for the races. */
static int tfu_race_setup(tu_flavor f, blitz_backend backend, blitz_runtime **rt, char *dir,
                          char *path) {
    blitz_config cfg = tu_config(f);
    cfg.backend = backend;
    *rt = NULL;
    if (blitz_runtime_new(&cfg, rt) != BLITZ_OK) {
        *rt = NULL;
        return 0;
    }
    tf_tmpdir(dir, 64);
    snprintf(path, 160, "%s/f", dir);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    CHECK_GE(fd, 0);
    CHECK_EQ(ftruncate(fd, 8192), 0);
    close(fd);
    return 0;
}

/* Spawns n races over `path` into h, `ops` rounds each, the i-th seeded
 * with i * seed_mul + seed_add. */
static int tfu_race_spawn(blitz_runtime *rt, blitz_task **h, int n, const char *path, long ops,
                          unsigned seed_mul, unsigned seed_add) {
    for (int i = 0; i < n; i++) {
        tfu_race s;
        memset(&s, 0, sizeof s);
        s.path = path;
        s.n = ops;
        s.seed = (unsigned)i * seed_mul + seed_add;
        snprintf(s.wpath, sizeof s.wpath, "%s.%d", path, i);
        CHECK_OK(blitz_spawn(rt, tfu_race_poll, &s, sizeof s, &h[i]));
    }
    return 0;
}

static int fs_native_cancel_on(tu_flavor f, blitz_backend backend) {
    blitz_runtime *rt = NULL;
    char dir[64], path[160];
    CHECK_OK(tfu_race_setup(f, backend, &rt, dir, path));
    if (!rt)
        return 0; /* no io_uring here */
    int fds = tu_open_fds();
    enum { N = 6 };
    blitz_task *h[N];
    CHECK_OK(tfu_race_spawn(rt, h, N, path, test_scaled(300), 7919u, 11u));
    long timeouts = 0, done = 0;
    for (int i = 0; i < N; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        tfu_race *s = blitz_task_state(h[i]);
        timeouts += s->timeouts;
        done += s->done;
        blitz_task_release(&h[i]);
    }
    CHECK_GT(timeouts, 0);
    CHECK_GT(done, 0);
    /* An open given up while in the kernel closes its file when its
     * completion is reaped, which may be a moment after its task ended. */
    TU_WAIT_UNTIL(tu_open_fds() == fds, 2, 1);
    /* Ops still in the kernel at shutdown: cancelled, their records freed. */
    CHECK_OK(tfu_race_spawn(rt, h, N, path, 1000000, 1u, 1u));
    CHECK_OK(blitz_runtime_shutdown(rt));
    for (int i = 0; i < N; i++)
        blitz_task_release(&h[i]);
    CHECK_EQ(tu_open_fds(), fds);
    /* Whole-file chains given up anywhere still closed their slot (the
     * shutdown waited for every chain's last completion). */
    CHECK_EQ(tfu_slots_taken(rt), 0);
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(dir);
    return 0;
}

/* On the ring, and on the default (with several workers: epoll, and a
 * ring for files alone). */
static int fs_native_cancel(tu_flavor f) {
    int rc = fs_native_cancel_on(f, BLITZ_BACKEND_IO_URING);
    return rc ? rc : fs_native_cancel_on(f, BLITZ_BACKEND_AUTO);
}
TU_FLAVOR_TESTS(fs_native_cancel)

/* The same races on the block_on thread, which waits for its ring ops in
 * the ring itself (its timers' wakes poke it there), while worker tasks'
 * file ops go to the same ring (the default's file ring): no completion
 * is lost while it mutes the ring's eventfd, and no descriptor leaks. */
static int fs_native_block_on_on(tu_flavor f, blitz_backend backend) {
    blitz_runtime *rt = NULL;
    char dir[64], path[160];
    CHECK_OK(tfu_race_setup(f, backend, &rt, dir, path));
    if (!rt)
        return 0; /* no io_uring here */
    int fds = tu_open_fds();
    enum { N = 3 };
    blitz_task *h[N];
    CHECK_OK(tfu_race_spawn(rt, h, N, path, test_scaled(300), 104729u, 3u));
    static tfu_race mine;
    memset(&mine, 0, sizeof mine);
    mine.path = path;
    mine.n = test_scaled(60);
    mine.seed = 77u;
    snprintf(mine.wpath, sizeof mine.wpath, "%s.mine", path);
    CHECK_OK(blitz_runtime_run(rt, tfu_race_poll, &mine, sizeof mine));
    CHECK_EQ(mine.done + mine.timeouts, mine.n);
    CHECK_GT(mine.done, 0);
    for (int i = 0; i < N; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        tfu_race *s = blitz_task_state(h[i]);
        CHECK_EQ(s->done + s->timeouts, s->n);
        blitz_task_release(&h[i]);
    }
    TU_WAIT_UNTIL(tu_open_fds() == fds, 2, 1);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_EQ(tfu_slots_taken(rt), 0);
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(dir);
    return 0;
}

static int fs_native_block_on(tu_flavor f) {
    int rc = fs_native_block_on_on(f, BLITZ_BACKEND_IO_URING);
    return rc ? rc : fs_native_block_on_on(f, BLITZ_BACKEND_AUTO);
}
TU_FLAVOR_TESTS(fs_native_block_on)

/* Out of space: a write answers BLITZ_ENOSPC alike on the ring and on the
 * pool. /dev/full refuses every write with ENOSPC (and fsync with EINVAL:
 * a device without one) everywhere, but the ring's runtime hands writes
 * to anything but a regular file to the pool; a 64 KiB tmpfs, where a
 * user and mount namespace may be made, fills up for real on the ring. */
typedef struct {
    BLITZ_CORO;
    const char *path; /* a file to fill, or NULL: /dev/full */
    blitz_fs_op op;
    int fd;
    long i;
    char buf[4096];
    int64_t out[8];
    int n;
} tfu_nospc;

static const char tfu_nospc_big[131072];

static blitz_poll tfu_nospc_poll(blitz_cx *cx, void *p) {
    tfu_nospc *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_fs_open(
                       cx, &s->op, s->path ? s->path : "/dev/full",
                       BLITZ_FS_WRITE | (s->path ? BLITZ_FS_CREATE | BLITZ_FS_TRUNCATE : 0), 0644));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    if (!s->path) {
        BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->fd, s->buf, sizeof s->buf));
        TFU_REC(s, s->op.result);
        BLITZ_AWAIT(s, blitz_fs_pwrite(cx, &s->op, s->fd, s->buf, sizeof s->buf, 0));
        TFU_REC(s, s->op.result);
        BLITZ_AWAIT(s, blitz_fs_fsync(cx, &s->op, s->fd));
        TFU_REC(s, s->op.result);
    } else {
        /* Whole blocks until the first refusal: the bytes taken, then it. */
        for (s->i = 0; s->i < 64; s->i++) {
            BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->fd, s->buf, sizeof s->buf));
            if (s->op.result < 0)
                break;
            CHECK_EQ(s->op.result, (int64_t)sizeof s->buf);
        }
        TFU_REC(s, s->i * (int64_t)sizeof s->buf);
        TFU_REC(s, s->op.result);
        BLITZ_AWAIT(s, blitz_fs_fsync(cx, &s->op, s->fd));
        TFU_REC(s, s->op.result);
    }
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    TFU_REC(s, s->op.result);
    if (s->path) {
        BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->path));
        TFU_REC(s, s->op.result);
    }
    /* A whole file: on the tmpfs the write stops short at 64 KiB, the
     * rest is refused. */
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->path ? s->path : "/dev/full", tfu_nospc_big,
                                       sizeof tfu_nospc_big));
    TFU_REC(s, s->op.result);
    if (s->path) {
        BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->path));
        TFU_REC(s, s->op.result);
    }
    BLITZ_END(s);
}

/* Runs the script on `backend`; `jobs`: the pool jobs it takes (-1: some). */
static void tfu_nospc_run(blitz_backend backend, int jobs, tu_flavor f, const char *path,
                          tfu_nospc *out, int *ran) {
    blitz_config cfg = tu_config(f);
    cfg.backend = backend;
    blitz_runtime *rt = NULL;
    *ran = 0;
    if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK)
        return; /* no io_uring here */
    memset(out, 0, sizeof *out);
    out->path = path;
    CHECK_OK(blitz_runtime_run(rt, tfu_nospc_poll, out, sizeof *out));
    blitz_pool_stats st;
    CHECK_OK(blitz_runtime_pool_stats(rt, &st));
    /* A ring too small for whole-file chains gives the file's
     * write_file to the pool. */
    if (jobs >= 0 && path && backend == BLITZ_BACKEND_IO_URING && !tfu_chains(rt))
        jobs++;
    CHECK_OK(blitz_runtime_free(rt));
    if (jobs >= 0)
        CHECK_EQ(st.jobs_run, (uint64_t)jobs);
    else
        CHECK_GT(st.jobs_run, 0);
    *ran = 1;
}

/* Both paths over `path`, against `want`. */
static int tfu_nospc_both(tu_flavor f, const char *path, const int64_t *want, int nwant) {
    static tfu_nospc ring, pool;
    int ran_ring, ran_pool;
    /* The ring's: the writes to /dev/full, nothing of the tmpfs file's. */
    tfu_nospc_run(BLITZ_BACKEND_IO_URING, path ? 0 : 3, f, path, &ring, &ran_ring);
    tfu_nospc_run(BLITZ_BACKEND_EPOLL, -1, f, path, &pool, &ran_pool);
    CHECK(ran_pool);
    CHECK_EQ(pool.n, nwant);
    for (int i = 0; i < nwant; i++)
        CHECK_EQ(pool.out[i], want[i]);
    if (ran_ring) {
        CHECK_EQ(ring.n, nwant);
        for (int i = 0; i < nwant; i++)
            CHECK_EQ(ring.out[i], want[i]);
    }
    return 0;
}

#if defined(__linux__)
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>

/* A child that makes a user and mount namespace, maps its ids to
 * themselves (so this process's files are owned alike there) and mounts
 * a 64 KiB tmpfs on `dir`, seen from here through /proc/PID/root. It
 * reports 0 or the errno of the step that failed, then waits for `hold`
 * to close. Only system calls after the fork: this process has threads. */
static pid_t tfu_small_fs(const char *dir, int *hold, int *err) {
    char um[48], gm[48];
    snprintf(um, sizeof um, "%u %u 1", (unsigned)getuid(), (unsigned)getuid());
    snprintf(gm, sizeof gm, "%u %u 1", (unsigned)getgid(), (unsigned)getgid());
    int rep[2], hl[2];
    CHECK_EQ(pipe(rep), 0);
    CHECK_EQ(pipe(hl), 0);
    pid_t pid = fork();
    CHECK_GE(pid, 0);
    if (pid == 0) {
        int e = 0, w = -1;
        close(rep[0]);
        close(hl[1]);
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            e = errno;
        if (!e && ((w = open("/proc/self/uid_map", O_WRONLY)) < 0 || write(w, um, strlen(um)) < 0))
            e = errno;
        if (w >= 0)
            close(w);
        w = -1;
        /* Without setgroups denied an unprivileged process may not map
         * its group. */
        if (!e && ((w = open("/proc/self/setgroups", O_WRONLY)) < 0 || write(w, "deny", 4) < 0))
            e = errno;
        if (w >= 0)
            close(w);
        w = -1;
        if (!e && ((w = open("/proc/self/gid_map", O_WRONLY)) < 0 || write(w, gm, strlen(gm)) < 0))
            e = errno;
        if (w >= 0)
            close(w);
        if (!e && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
            e = errno;
        if (!e && mount("tmpfs", dir, "tmpfs", 0, "size=64k") != 0)
            e = errno;
        ssize_t wr = write(rep[1], &e, sizeof e);
        char c;
        ssize_t rd = read(hl[0], &c, 1);
        (void)wr;
        (void)rd;
        _exit(0);
    }
    close(rep[1]);
    close(hl[0]);
    *err = EIO;
    ssize_t rd = read(rep[0], err, sizeof *err);
    if (rd != (ssize_t)sizeof *err)
        *err = EIO;
    close(rep[0]);
    *hold = hl[1];
    return pid;
}
#endif

static int fs_native_enospc(tu_flavor f) {
    static const int64_t dev_full[] = {BLITZ_ENOSPC, BLITZ_ENOSPC, BLITZ_EINVAL, 0, BLITZ_ENOSPC};
    int rc = tfu_nospc_both(f, NULL, dev_full, 5);
    if (rc)
        return rc;
#if defined(__linux__)
    char dir[64], path[192];
    tf_tmpdir(dir, sizeof dir);
    int hold = -1, err = 0;
    pid_t pid = tfu_small_fs(dir, &hold, &err);
    if (err == 0) {
        /* 64 KiB: sixteen blocks, then the refusal; fsync, close and
         * unlink (which gives the space back for the next run) succeed. */
        static const int64_t full[] = {65536, BLITZ_ENOSPC, 0, 0, 0, BLITZ_ENOSPC, 0};
        snprintf(path, sizeof path, "/proc/%d/root%s/f", (int)pid, dir);
        rc = tfu_nospc_both(f, path, full, 7);
    } else {
        fprintf(stderr,
                "# fs_native_enospc: tmpfs part skipped, no user and mount namespace here (%s)\n",
                strerror(err));
    }
    close(hold);
    CHECK_EQ(waitpid(pid, NULL, 0), pid);
    tf_rm_rf(dir);
#endif
    return rc;
}
TU_FLAVOR_TESTS(fs_native_enospc)

/* A ring read of a pipe nobody writes is withdrawn by its cancel: the
 * kernel stops it, so the byte written afterwards is the next read's (a
 * pool thread's read cannot be stopped and would take it). */
typedef struct {
    BLITZ_CORO;
    blitz_fs_op op;
    blitz_timer timer;
    int pfd[2];
    char buf[8];
} tfu_pipe;

static blitz_poll tfu_pipe_poll(blitz_cx *cx, void *p) {
    tfu_pipe *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 20 * BLITZ_MSEC,
                                    blitz_fs_read(cx, &s->op, s->pfd[0], s->buf, sizeof s->buf),
                                    blitz_fs_cancel, &s->op));
    CHECK(s->timer.expired);
    CHECK_EQ(write(s->pfd[1], "z", 1), 1);
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 5 * BLITZ_SEC,
                                    blitz_fs_read(cx, &s->op, s->pfd[0], s->buf, sizeof s->buf),
                                    blitz_fs_cancel, &s->op));
    CHECK(!s->timer.expired);
    CHECK_EQ(s->op.result, 1);
    CHECK_EQ(s->buf[0], 'z');
    BLITZ_END(s);
}

BLITZ_TEST(fs_native_withdrawn_read) {
    blitz_config cfg = tu_config(TU_MT2);
    cfg.backend = BLITZ_BACKEND_IO_URING;
    blitz_runtime *rt = NULL;
    if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK)
        return 0; /* no io_uring here */
    tfu_pipe *s = calloc(1, sizeof *s);
    CHECK_NOT_NULL(s);
    CHECK_EQ(pipe(s->pfd), 0);
    CHECK_OK(blitz_runtime_run(rt, tfu_pipe_poll, s, sizeof *s));
    CHECK_OK(blitz_runtime_free(rt));
    close(s->pfd[0]);
    close(s->pfd[1]);
    free(s);
    return 0;
}

/* Bad input: the ring and the pool give the same codes for a missing path,
 * a directory where a file is expected (and the reverse), an existing
 * path, a descriptor used the wrong way, a permission refused (root is
 * let in: then both paths must agree on that too) and a file deleted
 * while open. */
typedef struct {
    BLITZ_CORO;
    char dir[64], f[160], d[160], miss[160], under[160], lnk[160], locked[160];
    blitz_fs_op op;
    blitz_fs_metadata md;
    int fd;
    char buf[8];
    int64_t out[TFU_MAX];
    int n;
} tfu_bad;

/* A descriptor the op returned is closed and recorded as 1. */
#define TFU_REC_OPEN(s)                 \
    do {                                \
        if ((s)->op.result >= 0) {      \
            close((int)(s)->op.result); \
            TFU_REC(s, 1);              \
        } else {                        \
            TFU_REC(s, (s)->op.result); \
        }                               \
    } while (0)

static blitz_poll tfu_bad_poll(blitz_cx *cx, void *p) {
    tfu_bad *s = p;
    BLITZ_BEGIN(s);
    /* missing paths */
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->miss, BLITZ_FS_READ, 0));
    TFU_REC_OPEN(s);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->miss, &s->md));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->miss));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_rename(cx, &s->op, s->miss, s->miss));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->miss));
    TFU_REC(s, s->op.result);
    /* a directory where a file is expected, a file where a directory is */
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->d, BLITZ_FS_WRITE, 0));
    TFU_REC_OPEN(s);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->d, BLITZ_FS_READ, 0));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->fd, s->buf, sizeof s->buf));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->d));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_rmdir(cx, &s->op, s->f));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->under, BLITZ_FS_READ, 0));
    TFU_REC_OPEN(s);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->under, &s->md));
    TFU_REC(s, s->op.result);
    /* existing paths */
    BLITZ_AWAIT(s, blitz_fs_mkdir(cx, &s->op, s->d, 0700));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(
        s, blitz_fs_open(cx, &s->op, s->f, BLITZ_FS_WRITE | BLITZ_FS_CREATE | BLITZ_FS_EXCL, 0600));
    TFU_REC_OPEN(s);
    BLITZ_AWAIT(s, blitz_fs_rmdir(cx, &s->op, s->d));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->lnk, BLITZ_FS_READ | BLITZ_FS_NOFOLLOW, 0));
    TFU_REC_OPEN(s);
    /* permission refused (to anyone but root) */
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->locked, BLITZ_FS_READ, 0));
    TFU_REC_OPEN(s);
    /* written through a read-only descriptor, then deleted while open */
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->f, BLITZ_FS_READ, 0));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->fd, "x", 1));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->f));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, s->fd, s->buf, sizeof s->buf, 0));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->f, BLITZ_FS_READ, 0));
    TFU_REC_OPEN(s);
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->f));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    TFU_REC(s, s->op.result);
    BLITZ_END(s);
}

static int tfu_bad_run(blitz_backend backend, tfu_bad *out, int *ran) {
    blitz_config cfg = tu_config(TU_MT2);
    cfg.backend = backend;
    blitz_runtime *rt = NULL;
    *ran = 0;
    memset(out, 0, sizeof *out);
    if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK)
        return 0; /* no io_uring here */
    tf_tmpdir(out->dir, sizeof out->dir);
    snprintf(out->f, sizeof out->f, "%s/f", out->dir);
    snprintf(out->d, sizeof out->d, "%s/d", out->dir);
    snprintf(out->miss, sizeof out->miss, "%s/missing", out->dir);
    snprintf(out->under, sizeof out->under, "%s/f/x", out->dir);
    snprintf(out->lnk, sizeof out->lnk, "%s/l", out->dir);
    snprintf(out->locked, sizeof out->locked, "%s/locked", out->dir);
    char inner[200];
    snprintf(inner, sizeof inner, "%s/inner", out->d);
    int fd = open(out->f, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK_GE(fd, 0);
    CHECK_EQ(write(fd, "abc", 3), 3);
    close(fd);
    CHECK_EQ(mkdir(out->d, 0700), 0);
    CHECK_GE(fd = open(inner, O_WRONLY | O_CREAT, 0600), 0);
    close(fd);
    CHECK_GE(fd = open(out->locked, O_WRONLY | O_CREAT, 0600), 0);
    close(fd);
    CHECK_EQ(chmod(out->locked, 0), 0);
    CHECK_EQ(symlink("f", out->lnk), 0);
    int fds = tu_open_fds();
    CHECK_OK(blitz_runtime_run(rt, tfu_bad_poll, out, sizeof *out));
    CHECK_EQ(tu_open_fds(), fds);
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(out->dir);
    *ran = 1;
    return 0;
}

BLITZ_TEST(fs_native_bad_input) {
    static tfu_bad ring, pool;
    int ran_ring, ran_pool;
    const int64_t root_open = geteuid() == 0 ? 1 : BLITZ_EACCES;
#if defined(__linux__)
    const int64_t unlink_dir = BLITZ_EISDIR;
#else
    const int64_t unlink_dir = BLITZ_EPERM; /* POSIX's code; Linux says EISDIR */
#endif
    const int64_t expected[] = {
        BLITZ_ENOENT,
        BLITZ_ENOENT,
        BLITZ_ENOENT,
        BLITZ_ENOENT,
        BLITZ_ENOENT, /* missing */
        BLITZ_EISDIR,
        BLITZ_EISDIR,
        0,
        unlink_dir,
        BLITZ_ENOTDIR,
        BLITZ_ENOTDIR,
        BLITZ_ENOTDIR, /* directory vs file */
        BLITZ_EEXIST,
        BLITZ_EEXIST,
        BLITZ_ENOTEMPTY,
        BLITZ_ELOOP, /* existing */
        root_open,   /* permission */
        BLITZ_EBADF,
        0,
        3,
        BLITZ_ENOENT,
        BLITZ_ENOENT,
        0, /* deleted */
    };
    CHECK_OK(tfu_bad_run(BLITZ_BACKEND_IO_URING, &ring, &ran_ring));
    CHECK_OK(tfu_bad_run(BLITZ_BACKEND_EPOLL, &pool, &ran_pool));
    CHECK(ran_pool);
    const tfu_bad *runs[2] = {&pool, ran_ring ? &ring : NULL};
    for (int r = 0; r < 2; r++) {
        if (!runs[r])
            continue;
        CHECK_EQ(runs[r]->n, (int)(sizeof expected / sizeof expected[0]));
        for (int i = 0; i < runs[r]->n; i++)
            if (runs[r]->out[i] != expected[i]) {
                fprintf(stderr, "# %s: result %d is %lld, not %lld\n", r ? "ring" : "pool", i,
                        (long long)runs[r]->out[i], (long long)expected[i]);
                CHECK_EQ(runs[r]->out[i], expected[i]);
            }
    }
    return 0;
}

/* Whole files, written and read back, on the ring (linked SQEs on a
 * direct descriptor) and on the pool: the same results, contents and
 * errors, for /proc's files sized 0 too; files larger than the ring
 * read's buffer are read in full by the pool. */
enum { TFU_BIG = 100000, TFU_EDGE = 16384 };

typedef struct {
    BLITZ_CORO;
    char dir[64], f[160], big[160], edge[160], miss[160], d[160], under[160], locked[160];
    blitz_fs_op op;
    char *pattern; /* TFU_BIG bytes */
    size_t i;
    int64_t out[TFU_MAX];
    int n;
} tfu_whole;

/* The read's length, then 1 when its data is `want` NUL-terminated. */
#define TFU_REC_DATA(s, want, len)                                     \
    do {                                                               \
        TFU_REC(s, (s)->op.result);                                    \
        TFU_REC(s, (s)->op.result == (int64_t)(len) && (s)->op.data && \
                       memcmp((s)->op.data, want, len) == 0 &&         \
                       ((const char *)(s)->op.data)[len] == '\0');     \
        blitz_free((s)->op.data);                                      \
    } while (0)

static blitz_poll tfu_whole_poll(blitz_cx *cx, void *p) {
    tfu_whole *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->f, "hello world", 11));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->f));
    TFU_REC_DATA(s, "hello world", 11);
    /* with a limit: all of it, or EFBIG keeping nothing */
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->f, 11));
    TFU_REC_DATA(s, "hello world", 11);
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->f, 10));
    TFU_REC(s, s->op.result);
    TFU_REC(s, s->op.data == NULL);
    /* rewritten shorter: truncated */
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->f, "hi", 2));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->f));
    TFU_REC_DATA(s, "hi", 2);
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->f, NULL, 0));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->f));
    TFU_REC_DATA(s, "", 0);
    /* around the ring read's buffer, and well past it */
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->edge, s->pattern, TFU_EDGE - 1));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->edge));
    TFU_REC_DATA(s, s->pattern, TFU_EDGE - 1);
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->edge, s->pattern, TFU_EDGE));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->edge));
    TFU_REC_DATA(s, s->pattern, TFU_EDGE);
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->big, s->pattern, TFU_BIG));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->big));
    TFU_REC_DATA(s, s->pattern, TFU_BIG);
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->big, TFU_BIG));
    TFU_REC_DATA(s, s->pattern, TFU_BIG);
    /* past the limit within the ring's read, or after it */
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->big, 100));
    TFU_REC(s, s->op.result);
    TFU_REC(s, s->op.data == NULL);
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->big, TFU_BIG - 1));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, "/dev/zero", 100));
    TFU_REC(s, s->op.result);
    /* sized 0, yet it has contents */
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, "/proc/self/status"));
    TFU_REC(s, s->op.result > 5 && memcmp(s->op.data, "Name:", 5) == 0 &&
                   strlen((const char *)s->op.data) == (size_t)s->op.result);
    blitz_free(s->op.data);
    /* errors */
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->miss));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->under, "x", 1));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->under));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->d));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->d, 100));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->d, "x", 1));
    TFU_REC(s, s->op.result);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->locked));
    TFU_REC(s, s->op.result);
    blitz_free(s->op.data);
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->locked, "x", 1));
    TFU_REC(s, s->op.result);
    BLITZ_END(s);
}

static int tfu_whole_run(blitz_backend backend, tu_flavor f, tfu_whole *out, int *ran) {
    blitz_config cfg = tu_config(f);
    cfg.backend = backend;
    blitz_runtime *rt = NULL;
    *ran = 0;
    static char pattern[TFU_BIG];
    for (size_t i = 0; i < sizeof pattern; i++)
        pattern[i] = (char)('a' + i % 23);
    memset(out, 0, sizeof *out);
    if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK)
        return 0; /* no io_uring here */
    out->pattern = pattern;
    tf_tmpdir(out->dir, sizeof out->dir);
    snprintf(out->f, sizeof out->f, "%s/f", out->dir);
    snprintf(out->big, sizeof out->big, "%s/big", out->dir);
    snprintf(out->edge, sizeof out->edge, "%s/edge", out->dir);
    snprintf(out->miss, sizeof out->miss, "%s/missing", out->dir);
    snprintf(out->d, sizeof out->d, "%s/d", out->dir);
    snprintf(out->under, sizeof out->under, "%s/f/x", out->dir);
    snprintf(out->locked, sizeof out->locked, "%s/locked", out->dir);
    CHECK_EQ(mkdir(out->d, 0700), 0);
    int fd = open(out->locked, O_WRONLY | O_CREAT, 0600);
    CHECK_GE(fd, 0);
    close(fd);
    CHECK_EQ(chmod(out->locked, 0), 0);
    int fds = tu_open_fds();
    CHECK_OK(blitz_runtime_run(rt, tfu_whole_poll, out, sizeof *out));
    blitz_pool_stats st;
    CHECK_OK(blitz_runtime_pool_stats(rt, &st));
    CHECK_EQ(tu_open_fds(), fds);
    /* Only the reads the ring cannot finish alone: the 16 KiB file and
     * the 100 KB one, whole and past limits above the ring's read
     * (/proc's status comes whole in one read; /dev/zero is past its
     * limit within it). */
    if (tfu_chains(rt))
        CHECK_EQ(st.jobs_run, 4);
    CHECK_EQ(tfu_slots_taken(rt), 0);
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(out->dir);
    *ran = 1;
    return 0;
}

static int fs_native_whole_files(tu_flavor f) {
    static tfu_whole ring, pool;
    int ran_ring, ran_pool;
    const int64_t root = geteuid() == 0;
    const int64_t expected[] = {
        11,
        11,
        1,
        11,
        1,
        BLITZ_EFBIG,
        1, /* limited */
        2,
        2,
        1,
        0,
        0,
        1, /* written, read back */
        TFU_EDGE - 1,
        TFU_EDGE - 1,
        1,
        TFU_EDGE,
        TFU_EDGE,
        1,
        TFU_BIG,
        TFU_BIG,
        1,
        TFU_BIG,
        1,
        BLITZ_EFBIG,
        1,
        BLITZ_EFBIG,
        BLITZ_EFBIG, /* limited */
        1,           /* /proc */
        BLITZ_ENOENT,
        BLITZ_ENOTDIR,
        BLITZ_ENOTDIR,
        BLITZ_EISDIR,
        BLITZ_EISDIR,
        BLITZ_EISDIR,
        root ? 0 : BLITZ_EACCES,
        root ? 1 : BLITZ_EACCES, /* permission */
    };
    CHECK_OK(tfu_whole_run(BLITZ_BACKEND_IO_URING, f, &ring, &ran_ring));
    CHECK_OK(tfu_whole_run(BLITZ_BACKEND_EPOLL, f, &pool, &ran_pool));
    CHECK(ran_pool);
    const tfu_whole *runs[2] = {&pool, ran_ring ? &ring : NULL};
    for (int r = 0; r < 2; r++) {
        if (!runs[r])
            continue;
        CHECK_EQ(runs[r]->n, (int)(sizeof expected / sizeof expected[0]));
        for (int i = 0; i < runs[r]->n; i++)
            if (runs[r]->out[i] != expected[i]) {
                fprintf(stderr, "# %s: result %d is %lld, not %lld\n", r ? "ring" : "pool", i,
                        (long long)runs[r]->out[i], (long long)expected[i]);
                CHECK_EQ(runs[r]->out[i], expected[i]);
            }
    }
    return 0;
}
TU_FLAVOR_TESTS(fs_native_whole_files)
