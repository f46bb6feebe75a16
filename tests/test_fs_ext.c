/* The file ops of api_fs.h (included by tests/test_pool.c after
 * test_fs.c, whose temporary-directory helpers it uses). On Windows the
 * same tests run; what differs there is marked: permission bits are the
 * read-only attribute, owners do not exist, times are kept in 100 ns
 * units, symlinks may be refused (no privilege; wine makes none), and
 * ".." is resolved by name. */

#if defined(_WIN32)
#define TFX_NULL_DEV  "NUL"
#define TFX_TIME_UNIT 100
#define TFX_MODE(m)   (((m)&0200) ? 0666u : 0444u)
#define tfx_fd_write  _write

static int tfx_unlink(const char *path) {
    return DeleteFileA(path) ? 0 : -1;
}

static int tfx_rmdir(const char *path) {
    return RemoveDirectoryA(path) ? 0 : -1;
}

static void tfx_mkdir(const char *path) {
    CHECK(CreateDirectoryA(path, NULL));
}

/* Whether a child process would inherit the descriptor's handle. */
static int tfx_inherited(int fd) {
    DWORD flags = 0;
    CHECK(GetHandleInformation((HANDLE)_get_osfhandle(fd), &flags));
    return (flags & HANDLE_FLAG_INHERIT) != 0;
}

/* Whether directory `dir` has an entry whose name starts with `prefix`. */
static int tfx_has_entry(const char *dir, const char *prefix) {
    char pattern[300];
    snprintf(pattern, sizeof pattern, "%s\\%s*", dir, prefix);
    WIN32_FIND_DATAA e;
    HANDLE f = FindFirstFileA(pattern, &e);
    if (f == INVALID_HANDLE_VALUE)
        return 0;
    FindClose(f);
    return 1;
}
#else
#define TFX_NULL_DEV  "/dev/null"
#define TFX_TIME_UNIT 1
#define TFX_MODE(m)   (m)
#define tfx_fd_write  write
#define tfx_unlink    unlink
#define tfx_rmdir     rmdir

static void tfx_mkdir(const char *path) {
    CHECK_EQ(mkdir(path, 0755), 0);
}

static int tfx_inherited(int fd) {
    return (fcntl(fd, F_GETFD) & FD_CLOEXEC) == 0;
}

static int tfx_has_entry(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    CHECK_NOT_NULL(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            found = 1;
    closedir(d);
    return found;
}
#endif
/* A time as the file system keeps it. */
#define TFX_KEPT(ns) ((uint64_t)(ns) / TFX_TIME_UNIT * TFX_TIME_UNIT)

#define TFX_STREQ(a, b) CHECK(strcmp((a), (b)) == 0)
#define TFX_TIME_A      ((int64_t)1000000000 * 1000 + 5)
#define TFX_TIME_M      ((int64_t)1000000000 * 2000 + 7000)

typedef struct {
    BLITZ_CORO;
    char dir[64], path[160], path2[160], sub[200];
    blitz_fs_op op, op2;
    blitz_fs_metadata md, md2;
    blitz_fs_fsinfo info;
    blitz_fs_dir *reader;
    int fd, step, i, links;
    long seen;
    char buf[64];
    unsigned char mark[150];
} tfx_round;

#define TFX_PATH(s, field, fmt) snprintf((s)->field, sizeof(s)->field, fmt, (s)->dir)

static void tfx_write(const char *path, const char *text) {
    FILE *fp = fopen(path, "wb");
    CHECK_NOT_NULL(fp);
    fputs(text, fp);
    fclose(fp);
}

static blitz_poll tfx_round_poll(blitz_cx *cx, void *p) {
    tfx_round *s = p;
    BLITZ_BEGIN(s);
    /* Open flags: mode bits, sync flags, nofollow, unknown bits. */
    TFX_PATH(s, path, "%s/data.txt");
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path,
                                 BLITZ_FS_READ | BLITZ_FS_WRITE | BLITZ_FS_CREATE | BLITZ_FS_EXCL |
                                     BLITZ_FS_SYNC | BLITZ_FS_DSYNC,
                                 0640));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_fstat(cx, &s->op, s->fd, &s->md));
#if defined(_WIN32)
    CHECK_EQ(s->md.mode, TFX_MODE(0640));
#else
    CHECK_EQ(s->md.mode & 0137, 0); /* nothing beyond 0640 */
#endif
    BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->fd, "hello world", 11));
    CHECK_EQ(s->op.result, 11);
    /* Seek from each origin. */
    BLITZ_AWAIT(s, blitz_fs_seek(cx, &s->op, s->fd, 6, BLITZ_SEEK_SET));
    CHECK_EQ(s->op.result, 6);
    BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->fd, s->buf, 5));
    CHECK_EQ(s->op.result, 5);
    CHECK(memcmp(s->buf, "world", 5) == 0);
    BLITZ_AWAIT(s, blitz_fs_seek(cx, &s->op, s->fd, -5, BLITZ_SEEK_CUR));
    CHECK_EQ(s->op.result, 6);
    BLITZ_AWAIT(s, blitz_fs_seek(cx, &s->op, s->fd, 0, BLITZ_SEEK_END));
    CHECK_EQ(s->op.result, 11);
    BLITZ_AWAIT(s, blitz_fs_seek(cx, &s->op, s->fd, -20, BLITZ_SEEK_END));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_seek(cx, &s->op, s->fd, 0, 7));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_seek(cx, &s->op, -1, 0, BLITZ_SEEK_SET));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    /* Permissions, owner, times through the descriptor. */
    BLITZ_AWAIT(s, blitz_fs_fchmod(cx, &s->op, s->fd, 0600));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_fchown(cx, &s->op, s->fd, BLITZ_FS_ID_KEEP, BLITZ_FS_ID_KEEP));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_futimes(cx, &s->op, s->fd, TFX_TIME_A, TFX_TIME_M));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_fstat(cx, &s->op, s->fd, &s->md));
    CHECK_EQ(s->md.mode, TFX_MODE(0600));
    CHECK_EQ(s->md.atime_ns, TFX_KEPT(TFX_TIME_A));
    CHECK_EQ(s->md.mtime_ns, TFX_KEPT(TFX_TIME_M));
    BLITZ_AWAIT(s, blitz_fs_futimes(cx, &s->op, s->fd, -5, 0));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    /* The same through the path. */
    BLITZ_AWAIT(s, blitz_fs_chmod(cx, &s->op, s->path, 0604));
    CHECK_EQ(s->op.result, 0);
#if defined(_WIN32)
    BLITZ_AWAIT(s, blitz_fs_chown(cx, &s->op, s->path, 0, BLITZ_FS_ID_KEEP));
    CHECK_EQ(s->op.result, BLITZ_ENOSYS); /* no owners there */
    BLITZ_AWAIT(s, blitz_fs_chown(cx, &s->op, s->path, BLITZ_FS_ID_KEEP, BLITZ_FS_ID_KEEP));
    CHECK_EQ(s->op.result, 0);
#else
    BLITZ_AWAIT(s, blitz_fs_chown(cx, &s->op, s->path, (uint32_t)geteuid(), BLITZ_FS_ID_KEEP));
    CHECK_EQ(s->op.result, 0);
#endif
    BLITZ_AWAIT(s, blitz_fs_utimes(cx, &s->op, s->path, BLITZ_FS_TIME_KEEP, TFX_TIME_A));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
    CHECK_EQ(s->md.mode, TFX_MODE(0604));
#if !defined(_WIN32) /* there the file system updates access times as it pleases */
    CHECK_EQ(s->md.atime_ns, TFX_KEPT(TFX_TIME_A));
#endif
    CHECK_EQ(s->md.mtime_ns, TFX_KEPT(TFX_TIME_A));
#if defined(_WIN32)
    /* Without 0200 the file is read-only (wine run by root still lets
     * it be opened for writing, as its host does). */
    BLITZ_AWAIT(s, blitz_fs_chmod(cx, &s->op, s->path, 0444));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
    CHECK_EQ(s->md.mode, 0444);
    BLITZ_AWAIT(s, blitz_fs_chmod(cx, &s->op, s->path, 0644));
    CHECK_EQ(s->op.result, 0);
#endif
    BLITZ_AWAIT(s, blitz_fs_utimes(cx, &s->op, s->path, BLITZ_FS_TIME_NOW, BLITZ_FS_TIME_NOW));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
    CHECK_GT(s->md.mtime_ns, (uint64_t)TFX_TIME_M);
    TFX_PATH(s, path2, "%s/missing");
    BLITZ_AWAIT(s, blitz_fs_chmod(cx, &s->op, s->path2, 0600));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_utimes(cx, &s->op, s->path2, 0, 0));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_chmod(cx, &s->op, NULL, 0600));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    /* access */
    BLITZ_AWAIT(s, blitz_fs_access(cx, &s->op, s->path, BLITZ_FS_EXISTS));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_access(cx, &s->op, s->path, BLITZ_FS_CAN_READ | BLITZ_FS_CAN_WRITE));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_access(cx, &s->op, s->path2, BLITZ_FS_EXISTS));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_access(cx, &s->op, s->path, 8));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    /* Links read back, canonical paths. */
    TFX_PATH(s, path2, "%s/link");
    BLITZ_AWAIT(s, blitz_fs_symlink(cx, &s->op, "data.txt", s->path2));
#if defined(_WIN32)
    /* Without the privilege (or under wine, which makes none). */
    if (s->op.result != 0)
        CHECK(s->op.result == BLITZ_EPERM || s->op.result == BLITZ_EOPNOTSUPP);
#else
    CHECK_EQ(s->op.result, 0);
#endif
    s->links = s->op.result == 0;
    if (s->links) {
        BLITZ_AWAIT(s, blitz_fs_readlink(cx, &s->op, s->path2));
        CHECK_EQ(s->op.result, 8);
        TFX_STREQ((const char *)s->op.data, "data.txt");
        blitz_free(s->op.data);
        BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path2, BLITZ_FS_READ | BLITZ_FS_NOFOLLOW, 0));
        CHECK_EQ(s->op.result, BLITZ_ELOOP);
    }
    BLITZ_AWAIT(s, blitz_fs_readlink(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    CHECK_NULL(s->op.data);
    TFX_PATH(s, sub, "%s/missing");
    BLITZ_AWAIT(s, blitz_fs_readlink(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ | 0x4000, 0));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    /* The canonical path: absolute, naming the same file. */
    if (s->links)
        TFX_PATH(s, sub, "%s/./link");
    else
        TFX_PATH(s, sub, "%s/./data.txt");
    BLITZ_AWAIT(s, blitz_fs_realpath(cx, &s->op, s->sub));
    CHECK_GT(s->op.result, 0);
    CHECK_EQ(s->op.result, (long long)strlen((const char *)s->op.data));
    CHECK_NULL(strstr((const char *)s->op.data, "/./"));
    CHECK_NULL(strstr((const char *)s->op.data, "\\.\\"));
#if defined(_WIN32)
    CHECK(((const char *)s->op.data)[1] == ':' && ((const char *)s->op.data)[2] == '\\');
#else
    {
        char *want = realpath(s->path, NULL);
        CHECK_NOT_NULL(want);
        TFX_STREQ((const char *)s->op.data, want);
        free(want);
    }
#endif
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op2, (const char *)s->op.data, &s->md));
    CHECK_EQ(s->op2.result, 0);
    blitz_free(s->op.data);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op2, s->path, &s->md2));
    CHECK_EQ(s->op2.result, 0);
    CHECK_EQ(s->md.ino, s->md2.ino);
    CHECK_EQ(s->md.dev, s->md2.dev);
    TFX_PATH(s, sub, "%s/nope/data.txt");
    BLITZ_AWAIT(s, blitz_fs_realpath(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    CHECK_NULL(s->op.data);
#if !defined(_WIN32) /* Windows resolves ".." by name, before looking */
    TFX_PATH(s, sub, "%s/nope/../data.txt");
    BLITZ_AWAIT(s, blitz_fs_realpath(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    CHECK_NULL(s->op.data);
#endif
    /* statfs */
    BLITZ_AWAIT(s, blitz_fs_statfs(cx, &s->op, s->dir, &s->info));
    CHECK_EQ(s->op.result, 0);
    CHECK_GT(s->info.block_size, 0);
    CHECK_GT(s->info.blocks, 0);
    CHECK_GT(s->info.name_max, 0);
    BLITZ_AWAIT(s, blitz_fs_statfs(cx, &s->op, s->dir, NULL));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    /* Size-limited whole-file reads. */
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->path, 11));
    CHECK_EQ(s->op.result, 11);
    TFX_STREQ((const char *)s->op.data, "hello world");
    blitz_free(s->op.data);
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->path, 10));
    CHECK_EQ(s->op.result, BLITZ_EFBIG);
    CHECK_NULL(s->op.data);
#if !defined(_WIN32) /* an endless file */
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, "/dev/zero", 100000));
    CHECK_EQ(s->op.result, BLITZ_EFBIG);
#endif
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->dir, 100));
    CHECK_EQ(s->op.result, BLITZ_EISDIR);
    /* Temporary files and directories. */
    TFX_PATH(s, sub, "%s/tmpXXXXXX");
    BLITZ_AWAIT(s, blitz_fs_mkstemp(cx, &s->op, s->sub));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    CHECK_EQ(strlen((const char *)s->op.data), strlen(s->sub));
    CHECK(strncmp((const char *)s->op.data, s->sub, strlen(s->sub) - 6) == 0);
    CHECK(strcmp((const char *)s->op.data, s->sub) != 0);
    CHECK_EQ(tfx_fd_write(s->fd, "x", 1), 1);
    CHECK(!tfx_inherited(s->fd));
    tf_close(s->fd);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op2, (const char *)s->op.data, &s->md));
    CHECK_EQ(s->op2.result, 0);
    CHECK_EQ(s->md.mode, TFX_MODE(0600));
    CHECK_EQ(s->md.size, 1);
    blitz_free(s->op.data);
    BLITZ_AWAIT(s, blitz_fs_mkdtemp(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op2, (const char *)s->op.data, &s->md));
    CHECK_EQ(s->op2.result, 0);
    CHECK_EQ(s->md.type, BLITZ_FILE_DIRECTORY);
#if !defined(_WIN32)
    CHECK_EQ(s->md.mode, 0700);
#endif
    blitz_free(s->op.data);
    TFX_PATH(s, sub, "%s/tmpXXXXX");
    BLITZ_AWAIT(s, blitz_fs_mkstemp(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    TFX_PATH(s, sub, "%s/no/tmpXXXXXX");
    BLITZ_AWAIT(s, blitz_fs_mkdtemp(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    CHECK_NULL(s->op.data);
    /* A file deleted while open still takes descriptor ops. */
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ, 0));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_seek(cx, &s->op, s->fd, 0, BLITZ_SEEK_END));
    CHECK_EQ(s->op.result, 11);
    BLITZ_AWAIT(s, blitz_fs_fchmod(cx, &s->op, s->fd, 0400));
    CHECK_EQ(s->op.result, 0);
#if !defined(_WIN32) /* there the name may stay until the last close */
    BLITZ_AWAIT(s, blitz_fs_access(cx, &s->op, s->path, BLITZ_FS_EXISTS));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
#endif
    if (s->links) {
        BLITZ_AWAIT(s, blitz_fs_readlink(cx, &s->op, s->path2)); /* dangling now */
        CHECK_EQ(s->op.result, 8);
        blitz_free(s->op.data);
    }
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    s->step = 1;
    BLITZ_END(s);
}

static int fs_ext_roundtrip(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    tfx_round s;
    memset(&s, 0, sizeof s);
    tf_tmpdir(s.dir, sizeof s.dir);
    int fds = tu_open_fds();
    CHECK_OK(blitz_runtime_run(rt, tfx_round_poll, &s, sizeof s));
    CHECK_EQ(s.step, 1);
    CHECK_EQ(tu_open_fds(), fds);
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(s.dir);
    return 0;
}
TU_FLAVOR_TESTS(fs_ext_roundtrip)

/* Copies (with the kernel and without), trees removed without following
 * symlinks, and a directory read in batches. */
static blitz_poll tfx_tree_poll(blitz_cx *cx, void *p) {
    tfx_round *s = p;
    BLITZ_BEGIN(s);
    /* copy_file: contents, mode, result; the bad cases. */
    TFX_PATH(s, path, "%s/src.bin");
    TFX_PATH(s, path2, "%s/dst.bin");
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->path, s->path2));
    CHECK_EQ(s->op.result, (long long)(300 * 1024 + 3));
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path2, &s->md2));
    CHECK_EQ(s->op.result, 0);
    CHECK_EQ(s->md2.mode, TFX_MODE(0751));
    CHECK_EQ(s->md2.size, s->md.size);
    CHECK(s->md.ino != s->md2.ino);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->path2));
    CHECK_EQ(s->op.result, (long long)(300 * 1024 + 3));
    for (s->i = 0; s->i < 300 * 1024 + 3; s->i++)
        if (((unsigned char *)s->op.data)[s->i] != (unsigned char)(s->i * 7 + 1))
            CHECK_EQ(((unsigned char *)s->op.data)[s->i], (unsigned char)(s->i * 7 + 1));
    blitz_free(s->op.data);
    /* Over an existing longer file: truncated first. */
    tfx_write(s->path2, "this file is longer than the copy would be, much longer");
    TFX_PATH(s, sub, "%s/small");
    tfx_write(s->sub, "abc");
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->sub, s->path2));
    CHECK_EQ(s->op.result, 3);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->path2));
    CHECK_EQ(s->op.result, 3);
    blitz_free(s->op.data);
    /* The mode comes along: a read-only source makes a read-only copy. */
    BLITZ_AWAIT(s, blitz_fs_chmod(cx, &s->op, s->sub, 0444));
    CHECK_EQ(s->op.result, 0);
    TFX_PATH(s, path2, "%s/ro_copy");
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->sub, s->path2));
    CHECK_EQ(s->op.result, 3);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path2, &s->md2));
    CHECK_EQ(s->md2.mode, 0444);
    BLITZ_AWAIT(s, blitz_fs_remove_all(cx, &s->op, s->path2));
    CHECK_EQ(s->op.result, 0);
    TFX_PATH(s, path2, "%s/dst.bin");
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->path, s->path));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
    CHECK_EQ(s->md.size, 300 * 1024 + 3); /* not truncated */
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->dir, s->path2));
    CHECK_EQ(s->op.result, BLITZ_EISDIR);
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->path, s->dir));
    CHECK_EQ(s->op.result, BLITZ_EISDIR);
    TFX_PATH(s, sub, "%s/missing");
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->sub, s->path2));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    TFX_PATH(s, sub, "%s/no/dst");
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->path, s->sub));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    /* A special file as the source: no kernel copy, the read loop. */
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, TFX_NULL_DEV, s->path2));
    CHECK_EQ(s->op.result, 0);
#if !defined(_WIN32)
    /* A file whose size reads 0 but that has contents (procfs). */
    if (access("/proc/self/status", R_OK) == 0) {
        BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, "/proc/self/status", s->path2));
        CHECK_GT(s->op.result, 0);
        BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path2, &s->md));
        CHECK_GT(s->md.size, 0);
    }
    /* ENOSPC, from a device that is always full. */
    if (access("/dev/full", W_OK) == 0) {
        BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->path, "/dev/full"));
        CHECK_EQ(s->op.result, BLITZ_ENOSPC);
    }
#endif
    /* remove_all: the tree goes, what its symlinks point to stays. */
    TFX_PATH(s, sub, "%s/tree");
    BLITZ_AWAIT(s, blitz_fs_remove_all(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_lstat(cx, &s->op, s->sub, &s->md));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    TFX_PATH(s, sub, "%s/outside/keep");
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->sub, &s->md));
    CHECK_EQ(s->op.result, 0);
    TFX_PATH(s, sub, "%s/tree");
    BLITZ_AWAIT(s, blitz_fs_remove_all(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_remove_all(cx, &s->op, s->path2)); /* a file */
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_remove_all(cx, &s->op, ""));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    /* The directory reader: 150 entries in batches of at most 64. */
    TFX_PATH(s, sub, "%s/many");
    BLITZ_AWAIT(s, blitz_fs_opendir(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, 0);
    CHECK_NOT_NULL(s->op.data);
    s->reader = (blitz_fs_dir *)s->op.data;
    s->seen = 0;
    for (;;) {
        BLITZ_AWAIT(s, blitz_fs_readdir(cx, &s->op, s->reader, 64));
        CHECK_GE(s->op.result, 0);
        CHECK_LE(s->op.result, 64);
        if (s->op.result == 0)
            break;
        for (s->i = 0; s->i < (int)s->op.result; s->i++) {
            blitz_fs_dirent *e = (blitz_fs_dirent *)s->op.data + s->i;
            int n = atoi(e->name + 1);
            CHECK_EQ(e->name[0], 'f');
            CHECK(n >= 0 && n < 150);
            CHECK(e->type == BLITZ_FILE_REGULAR || e->type == BLITZ_FILE_UNKNOWN);
            CHECK_EQ(s->mark[n], 0); /* each name once */
            s->mark[n] = 1;
            s->seen++;
        }
        blitz_free(s->op.data);
    }
    CHECK_EQ(s->seen, 150);
    CHECK_NULL(s->op.data);
    BLITZ_AWAIT(s, blitz_fs_readdir(cx, &s->op, s->reader, 0)); /* still the end */
    CHECK_EQ(s->op.result, 0);
    CHECK_OK(blitz_fs_closedir(s->reader));
    BLITZ_AWAIT(s, blitz_fs_readdir(cx, &s->op, NULL, 0));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_opendir(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, BLITZ_ENOTDIR);
    TFX_PATH(s, sub, "%s/missing");
    BLITZ_AWAIT(s, blitz_fs_opendir(cx, &s->op, s->sub));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    CHECK_NULL(s->op.data);
    CHECK_EQ(blitz_fs_closedir(NULL), BLITZ_EINVAL);
    s->step = 1;
    BLITZ_END(s);
}

static void tfx_make_tree(const char *dir) {
    char p[256];
    unsigned char *data = malloc(300 * 1024 + 3);
    CHECK_NOT_NULL(data);
    for (int i = 0; i < 300 * 1024 + 3; i++)
        data[i] = (unsigned char)(i * 7 + 1);
    snprintf(p, sizeof p, "%s/src.bin", dir);
    FILE *fp = fopen(p, "wb");
    CHECK_NOT_NULL(fp);
    CHECK_EQ(fwrite(data, 1, 300 * 1024 + 3, fp), 300 * 1024 + 3);
    fclose(fp);
#if !defined(_WIN32)
    CHECK_EQ(chmod(p, 0751), 0);
#endif
    free(data);
    const char *dirs[] = {"tree", "tree/a", "tree/a/b", "tree/a/b/c", "tree/e", "outside", "many"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, dirs[i]);
        tfx_mkdir(p);
    }
    const char *files[] = {"tree/f", "tree/a/f", "tree/a/b/f", "tree/a/b/c/f", "outside/keep"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        tfx_write(p, "x");
    }
    /* Links out of the tree, which its removal must not follow (Windows:
     * where symlinks can be made; wine makes none). */
    char target[256];
    snprintf(target, sizeof target, "%s/outside", dir);
    snprintf(p, sizeof p, "%s/tree/a/to_dir", dir);
#if defined(_WIN32)
    for (size_t i = 0; target[i]; i++)
        target[i] = target[i] == '/' ? '\\' : target[i];
    CreateSymbolicLinkA(
        p, target, SYMBOLIC_LINK_FLAG_DIRECTORY | SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE);
    snprintf(p, sizeof p, "%s/tree/to_file", dir);
    CreateSymbolicLinkA(p, "..\\outside\\keep", SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE);
#else
    CHECK_EQ(symlink(target, p), 0);
    snprintf(p, sizeof p, "%s/tree/to_file", dir);
    CHECK_EQ(symlink("../outside/keep", p), 0);
    snprintf(p, sizeof p, "%s/tree/e/dangling", dir);
    CHECK_EQ(symlink("nowhere", p), 0);
#endif
    for (int i = 0; i < 150; i++) {
        snprintf(p, sizeof p, "%s/many/f%d", dir, i);
        tfx_write(p, "");
    }
}

static int fs_ext_tree(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    tfx_round s;
    memset(&s, 0, sizeof s);
    tf_tmpdir(s.dir, sizeof s.dir);
    tfx_make_tree(s.dir);
    int fds = tu_open_fds();
    CHECK_OK(blitz_runtime_run(rt, tfx_tree_poll, &s, sizeof s));
    CHECK_EQ(s.step, 1);
    CHECK_EQ(tu_open_fds(), fds);
    /* The value forms, driven from this thread. */
    blitz_fs_op op;
    memset(&op, 0, sizeof op);
    char tmpl[128], copy[128];
    snprintf(tmpl, sizeof tmpl, "%s/vXXXXXX", s.dir);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_mkdtemp(&op, tmpl)));
    CHECK_EQ(op.result, 0);
    char *made = op.data;
    snprintf(copy, sizeof copy, "%s/c", made);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_copy_file(&op, TFX_NULL_DEV, copy)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_access(&op, copy, BLITZ_FS_EXISTS)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_chmod(&op, copy, 0700)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_utimes(&op, copy, 0, TFX_TIME_M)));
    CHECK_EQ(op.result, 0);
    blitz_fs_fsinfo info;
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_statfs(&op, made, &info)));
    CHECK_EQ(op.result, 0);
    CHECK_GT(info.block_size, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_opendir(&op, made)));
    CHECK_EQ(op.result, 0);
    blitz_fs_dir *dir = op.data;
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_readdir(&op, dir, 10)));
    CHECK_EQ(op.result, 1);
    TFX_STREQ(((blitz_fs_dirent *)op.data)[0].name, "c");
    blitz_free(op.data);
    CHECK_OK(blitz_fs_closedir(dir));
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_remove_all(&op, made)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_realpath(&op, made)));
    CHECK_EQ(op.result, BLITZ_ENOENT);
    blitz_free(made);
    snprintf(tmpl, sizeof tmpl, "%s/src.bin", s.dir);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_read_file_limit(&op, tmpl, 1000)));
    CHECK_EQ(op.result, BLITZ_EFBIG);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_open(&op, tmpl, BLITZ_FS_READ, 0)));
    int fd = (int)op.result;
    CHECK_GE(fd, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_seek(&op, fd, -3, BLITZ_SEEK_END)));
    CHECK_EQ(op.result, 300 * 1024);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_futimes(&op, fd, BLITZ_FS_TIME_KEEP, 0)));
    CHECK_EQ(op.result, 0);
    tf_close(fd);
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(s.dir);
    return 0;
}
TU_FLAVOR_TESTS(fs_ext_tree)

/* Cancelled at any point (queued, running, done but not taken), the new
 * ops leak nothing: no descriptor, no memory (LSan), no temporary file,
 * and a reader is still usable (or busy) afterwards. */
typedef struct {
    BLITZ_CORO;
    const char *dir;
    char tmpl[160], src[160], dst[160];
    blitz_fs_op op;
    blitz_timer timer;
    blitz_fs_dir *reader;
    long i, n, done, timeouts, busy;
    int kind;
    unsigned seed;
} tfx_race;

static blitz_poll tfx_race_poll(blitz_cx *cx, void *p) {
    tfx_race *s = p;
    BLITZ_BEGIN(s);
    snprintf(s->tmpl, sizeof s->tmpl, "%s/t/tmpXXXXXX", s->dir);
    snprintf(s->src, sizeof s->src, "%s/src.bin", s->dir);
    snprintf(s->dst, sizeof s->dst, "%s/t/copy%u", s->dir, s->seed);
    BLITZ_AWAIT(s, blitz_fs_opendir(cx, &s->op, s->dir));
    CHECK_EQ(s->op.result, 0);
    s->reader = s->op.data;
    for (s->i = 0; s->i < s->n; s->i++) {
        s->seed = s->seed * 1103515245u + 12345u;
        s->kind = (int)((s->seed >> 8) % 5);
        if (s->kind == 0) {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, tf_race_timeout(s->seed),
                                            blitz_fs_mkstemp(cx, &s->op, s->tmpl), blitz_fs_cancel,
                                            &s->op));
            if (!s->timer.expired) {
                CHECK_GE(s->op.result, 0);
                tf_close((int)s->op.result);
                CHECK_EQ(tfx_unlink(s->op.data), 0);
                blitz_free(s->op.data);
            }
        } else if (s->kind == 1) {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, tf_race_timeout(s->seed),
                                            blitz_fs_mkdtemp(cx, &s->op, s->tmpl), blitz_fs_cancel,
                                            &s->op));
            if (!s->timer.expired) {
                CHECK_EQ(s->op.result, 0);
                CHECK_EQ(tfx_rmdir(s->op.data), 0);
                blitz_free(s->op.data);
            }
        } else if (s->kind == 2) {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, tf_race_timeout(s->seed),
                                            blitz_fs_copy_file(cx, &s->op, s->src, s->dst),
                                            blitz_fs_cancel, &s->op));
            if (!s->timer.expired)
                CHECK_EQ(s->op.result, 64 * 1024);
        } else if (s->kind == 3) {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, tf_race_timeout(s->seed),
                                            blitz_fs_readdir(cx, &s->op, s->reader, 2),
                                            blitz_fs_cancel, &s->op));
            if (!s->timer.expired) {
                if (s->op.result == BLITZ_EBUSY)
                    s->busy++;
                else
                    CHECK_GE(s->op.result, 0);
                blitz_free(s->op.data);
            }
        } else {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, tf_race_timeout(s->seed),
                                            blitz_fs_realpath(cx, &s->op, s->src), blitz_fs_cancel,
                                            &s->op));
            if (!s->timer.expired) {
                CHECK_GT(s->op.result, 0);
                blitz_free(s->op.data);
            }
        }
        if (s->timer.expired)
            s->timeouts++;
        else
            s->done++;
    }
    /* Closed while a cancelled read may still run: the thread's hold
     * keeps the stream until it ends. */
    CHECK_OK(blitz_fs_closedir(s->reader));
    BLITZ_END(s);
}

static int fs_ext_cancel_race(tu_flavor f) {
    blitz_runtime *rt = tp_rt_new(f, 2, 0, 0);
    char dir[64], p[160];
    tf_tmpdir(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/t", dir);
    tfx_mkdir(p);
    snprintf(p, sizeof p, "%s/src.bin", dir);
    {
        static const char zeros[64 * 1024];
        FILE *fp = fopen(p, "wb");
        CHECK_NOT_NULL(fp);
        CHECK_EQ(fwrite(zeros, 1, sizeof zeros, fp), sizeof zeros);
        fclose(fp);
    }
    int fds = tu_open_fds();
    enum { N = 4 };
    blitz_task *h[N];
    for (int i = 0; i < N; i++) {
        tfx_race s;
        memset(&s, 0, sizeof s);
        s.dir = dir;
        s.n = test_scaled(300);
        s.seed = (unsigned)i * 7919u + 3;
        CHECK_OK(blitz_spawn(rt, tfx_race_poll, &s, sizeof s, &h[i]));
    }
    long timeouts = 0, done = 0;
    for (int i = 0; i < N; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        tfx_race *st = blitz_task_state(h[i]);
        timeouts += st->timeouts;
        done += st->done;
        blitz_task_release(&h[i]);
    }
    /* Threads that finish after their op was given up release what they
     * made a moment later. */
    TU_WAIT_UNTIL(tu_open_fds() == fds, 2, 1);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_GT(timeouts, 0);
    CHECK_GT(done, 0);
    /* Nothing temporary is left: only the copies. */
    snprintf(p, sizeof p, "%s/t", dir);
    CHECK(!tfx_has_entry(p, "tmp"));
    tf_rm_rf(dir);
    return 0;
}
TU_FLAVOR_TESTS(fs_ext_cancel_race)

#if !defined(_WIN32) /* users and permission bits; an endless file */
/* Permissions: as an unprivileged user (root switches its effective user
 * for the run, as fs_errors does), each op reports EACCES or EPERM. */
typedef struct {
    BLITZ_CORO;
    char dir[64], secret[160], locked[160], path[200];
    blitz_fs_op op;
    blitz_fs_fsinfo info;
    int step, not_owner;
} tfx_perm;

static blitz_poll tfx_perm_poll(blitz_cx *cx, void *p) {
    tfx_perm *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_fs_access(cx, &s->op, s->secret, BLITZ_FS_CAN_READ));
    CHECK_EQ(s->op.result, BLITZ_EACCES);
    BLITZ_AWAIT(s, blitz_fs_access(cx, &s->op, s->secret, BLITZ_FS_EXISTS));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_read_file_limit(cx, &s->op, s->secret, 100));
    CHECK_EQ(s->op.result, BLITZ_EACCES);
    snprintf(s->path, sizeof s->path, "%s/out", s->dir);
    BLITZ_AWAIT(s, blitz_fs_copy_file(cx, &s->op, s->secret, s->path));
    CHECK_EQ(s->op.result, BLITZ_EACCES);
    BLITZ_AWAIT(s, blitz_fs_chown(cx, &s->op, s->secret, 0, BLITZ_FS_ID_KEEP));
    CHECK_EQ(s->op.result, BLITZ_EPERM);
    if (s->not_owner) { /* an owner may change these, whatever the bits */
        BLITZ_AWAIT(s, blitz_fs_chmod(cx, &s->op, s->secret, 0644));
        CHECK_EQ(s->op.result, BLITZ_EPERM);
        BLITZ_AWAIT(s, blitz_fs_utimes(cx, &s->op, s->secret, 0, 0));
        CHECK_EQ(s->op.result, BLITZ_EPERM);
    }
    BLITZ_AWAIT(s, blitz_fs_opendir(cx, &s->op, s->locked));
    CHECK_EQ(s->op.result, BLITZ_EACCES);
    BLITZ_AWAIT(s, blitz_fs_remove_all(cx, &s->op, s->locked));
    CHECK_EQ(s->op.result, BLITZ_EACCES);
    snprintf(s->path, sizeof s->path, "%s/tmpXXXXXX", s->locked);
    BLITZ_AWAIT(s, blitz_fs_mkstemp(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, BLITZ_EACCES);
    BLITZ_AWAIT(s, blitz_fs_statfs(cx, &s->op, s->dir, &s->info));
    CHECK_EQ(s->op.result, 0);
    s->step = 1;
    BLITZ_END(s);
}

BLITZ_TEST(fs_ext_permissions) {
    tfx_perm s;
    memset(&s, 0, sizeof s);
    tf_tmpdir(s.dir, sizeof s.dir);
    snprintf(s.secret, sizeof s.secret, "%s/secret", s.dir);
    snprintf(s.locked, sizeof s.locked, "%s/locked", s.dir);
    tfx_write(s.secret, "secret");
    CHECK_EQ(chmod(s.secret, 0), 0);
    CHECK_EQ(mkdir(s.locked, 0700), 0);
    char inner[200];
    snprintf(inner, sizeof inner, "%s/inner", s.locked);
    tfx_write(inner, "x");
    CHECK_EQ(chmod(s.locked, 0), 0);
    CHECK_EQ(chmod(s.dir, 0777), 0);
    uid_t euid = geteuid();
#if defined(__APPLE__)
    int dropped = euid == 0 && seteuid(65534) == 0;
#else
    int dropped = euid == 0 && setresuid(0, 65534, 0) == 0;
#endif
    s.not_owner = dropped;
    if (dropped || euid != 0) {
        blitz_runtime *rt = tu_rt_new(TU_MT2);
        CHECK_OK(blitz_runtime_run(rt, tfx_perm_poll, &s, sizeof s));
        CHECK_OK(blitz_runtime_free(rt));
        CHECK_EQ(s.step, 1);
    } else {
        fprintf(stderr, "# fs_ext_permissions: could not drop root, checks skipped\n");
    }
    if (dropped)
#if defined(__APPLE__)
        CHECK_EQ(seteuid(0), 0);
#else
        CHECK_EQ(setresuid(0, 0, 0), 0);
#endif
    chmod(s.locked, 0700);
    tf_rm_rf(s.dir);
    return 0;
}

/* A copy that would never end (/dev/zero into /dev/null) stops at its
 * next step once its task gives up on it: the pool thread comes back. */
typedef struct {
    BLITZ_CORO;
    blitz_fs_op op;
    blitz_timer timer;
} tfx_endless;

static blitz_poll tfx_endless_poll(blitz_cx *cx, void *p) {
    tfx_endless *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 5 * 1000 * 1000,
                                    blitz_fs_copy_file(cx, &s->op, "/dev/zero", "/dev/null"),
                                    blitz_fs_cancel, &s->op));
    CHECK(s->timer.expired);
    BLITZ_END(s);
}

BLITZ_TEST(fs_ext_copy_gives_up) {
    if (access("/dev/zero", R_OK) != 0 || access("/dev/null", W_OK) != 0)
        return 0;
    blitz_runtime *rt = tp_rt_new(TU_MT2, 2, 0, 0);
    tfx_endless s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, tfx_endless_poll, &s, sizeof s));
    blitz_pool_stats st;
    CHECK_OK(blitz_runtime_pool_stats(rt, &st));
    TU_WAIT_UNTIL(blitz_runtime_pool_stats(rt, &st) == 0 && st.idle == st.threads, 10, 1);
    CHECK_EQ(st.jobs_run, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
#endif /* !_WIN32 */
