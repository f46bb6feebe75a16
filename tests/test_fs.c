/* Files (included by tests/test_pool.c). On Windows the same tests run
 * where the behaviour is the same; what differs (permission bits, pipes,
 * symlinks without the privilege, the io_uring path) is marked. */
#if defined(_WIN32)
#include <fcntl.h>
#include <io.h>

#define tf_close _close

/* A fresh directory under the temporary folder, removed (with its
 * contents) by tf_rm_rf. */
static void tf_tmpdir(char *out, size_t n) {
    static atomic_int seq;
    char base[MAX_PATH + 1];
    DWORD len = GetTempPathA(sizeof base, base);
    CHECK(len > 0 && len < sizeof base);
    for (;;) {
        snprintf(out, n, "%sblitz_fs_%lu_%d", base, (unsigned long)GetCurrentProcessId(),
                 atomic_fetch_add(&seq, 1));
        if (CreateDirectoryA(out, NULL))
            return;
        CHECK_EQ(GetLastError(), ERROR_ALREADY_EXISTS);
    }
}

static void tf_rm_rf(const char *path) {
    DWORD a = GetFileAttributesA(path);
    if (a == INVALID_FILE_ATTRIBUTES)
        return;
    SetFileAttributesA(path, a & ~(DWORD)FILE_ATTRIBUTE_READONLY);
    if ((a & FILE_ATTRIBUTE_DIRECTORY) && !(a & FILE_ATTRIBUTE_REPARSE_POINT)) {
        char pattern[600];
        snprintf(pattern, sizeof pattern, "%s\\*", path);
        WIN32_FIND_DATAA e;
        HANDLE f = FindFirstFileA(pattern, &e);
        if (f != INVALID_HANDLE_VALUE) {
            do {
                if (!strcmp(e.cFileName, ".") || !strcmp(e.cFileName, ".."))
                    continue;
                char sub[600];
                snprintf(sub, sizeof sub, "%s\\%s", path, e.cFileName);
                tf_rm_rf(sub);
            } while (FindNextFileA(f, &e));
            FindClose(f);
        }
        RemoveDirectoryA(path);
    } else if (a & FILE_ATTRIBUTE_DIRECTORY) {
        RemoveDirectoryA(path); /* a directory symlink */
    } else {
        DeleteFileA(path);
    }
}
#else
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#define tf_close close

/* A fresh directory under /tmp, removed (with its contents) by
 * tf_tmpdir_remove. */
static void tf_tmpdir(char *out, size_t n) {
    snprintf(out, n, "/tmp/blitz_fs_XXXXXX");
    CHECK_NOT_NULL(mkdtemp(out));
}

static void tf_rm_rf(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                char sub[4096];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                tf_rm_rf(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}
#endif

/* A file holding `text`. */
static void tf_put(const char *path, const char *text) {
    FILE *fp = fopen(path, "wb");
    CHECK_NOT_NULL(fp);
    fputs(text, fp);
    fclose(fp);
}

typedef struct {
    BLITZ_CORO;
    char dir[200], path[300], path2[300], nested[300];
    blitz_fs_op op;
    int fd, step;
    blitz_fs_metadata md;
    char buf[64], a[4], b[8];
    blitz_iovec iov[2];
} tf_round;

#define TF_PATH(s, field, fmt) snprintf((s)->field, sizeof(s)->field, fmt, (s)->dir)

static blitz_poll tf_round_poll(blitz_cx *cx, void *p) {
    tf_round *s = p;
    BLITZ_BEGIN(s);
    /* mkdir -p, twice (the second finds everything there) */
    TF_PATH(s, nested, "%s/x/y//z/");
    BLITZ_AWAIT(s, blitz_fs_mkdir_all(cx, &s->op, s->nested, 0755));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_mkdir_all(cx, &s->op, s->nested, 0755));
    CHECK_EQ(s->op.result, 0);
    TF_PATH(s, nested, "%s/x/y/z");
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->nested, &s->md));
    CHECK_EQ(s->op.result, 0);
    CHECK_EQ(s->md.type, BLITZ_FILE_DIRECTORY);
    /* whole-file write and read */
    TF_PATH(s, path, "%s/whole.txt");
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->path, "hello, file\n", 12));
    CHECK_EQ(s->op.result, 12);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, 12);
    CHECK_NOT_NULL(s->op.data);
    CHECK(memcmp(s->op.data, "hello, file\n", 13) == 0); /* NUL-terminated */
    blitz_free(s->op.data);
    s->op.data = NULL;
    /* open, positional and vectored I/O */
    TF_PATH(s, path, "%s/data.bin");
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path,
                                 BLITZ_FS_READ | BLITZ_FS_WRITE | BLITZ_FS_CREATE | BLITZ_FS_EXCL,
                                 0600));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->fd, "abcdef", 6));
    CHECK_EQ(s->op.result, 6);
    BLITZ_AWAIT(s, blitz_fs_pwrite(cx, &s->op, s->fd, "XY", 2, 10)); /* leaves a hole */
    CHECK_EQ(s->op.result, 2);
    BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, s->fd, s->buf, sizeof s->buf, 0));
    CHECK_EQ(s->op.result, 12);
    CHECK(memcmp(s->buf, "abcdef\0\0\0\0XY", 12) == 0);
    BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, s->fd, s->buf, sizeof s->buf, 100));
    CHECK_EQ(s->op.result, 0); /* past the end */
    s->iov[0].base = s->a;
    s->iov[0].len = sizeof s->a;
    s->iov[1].base = s->b;
    s->iov[1].len = sizeof s->b;
    BLITZ_AWAIT(s, blitz_fs_readv(cx, &s->op, s->fd, s->iov, 2, 2));
    CHECK_EQ(s->op.result, 10);
    CHECK(memcmp(s->a, "cdef", 4) == 0);
    CHECK(memcmp(s->b + 4, "XY", 2) == 0);
    memcpy(s->a, "1234", 4);
    memcpy(s->b, "5678", 4);
    s->iov[1].len = 4;
    BLITZ_AWAIT(s, blitz_fs_writev(cx, &s->op, s->fd, s->iov, 2, -1)); /* at the position: 6 */
    CHECK_EQ(s->op.result, 8);
    BLITZ_AWAIT(s, blitz_fs_fsync(cx, &s->op, s->fd));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_fdatasync(cx, &s->op, s->fd));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_fstat(cx, &s->op, s->fd, &s->md));
    CHECK_EQ(s->op.result, 0);
    CHECK_EQ(s->md.type, BLITZ_FILE_REGULAR);
    CHECK_EQ(s->md.size, 14);
#if defined(_WIN32)
    CHECK_EQ(s->md.mode, 0666); /* writable: the read-only attribute is the only bit */
#else
    CHECK_EQ(s->md.mode, 0600);
#endif
    CHECK_GT(s->md.mtime_ns, 0);
    BLITZ_AWAIT(s, blitz_fs_truncate(cx, &s->op, s->fd, 3));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, s->fd, s->buf, sizeof s->buf, 0));
    CHECK_EQ(s->op.result, 3);
    /* the position-based read continues where the vectored write left */
    BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->fd, s->buf, sizeof s->buf));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    CHECK_EQ(s->op.result, 0);
    /* append mode */
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_APPEND, 0));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->fd, "++", 2));
    CHECK_EQ(s->op.result, 2);
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, 5);
    CHECK(memcmp(s->op.data, "abc++", 5) == 0);
    blitz_free(s->op.data);
    /* rename, symlink metadata, listing */
    TF_PATH(s, path2, "%s/renamed.bin");
    BLITZ_AWAIT(s, blitz_fs_rename(cx, &s->op, s->path, s->path2));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    TF_PATH(s, path, "%s/link");
    BLITZ_AWAIT(s, blitz_fs_symlink(cx, &s->op, "renamed.bin", s->path));
#if defined(_WIN32)
    /* Without the privilege (or developer mode) Windows refuses; wine
     * makes none. */
    if (s->op.result == BLITZ_EPERM || s->op.result == BLITZ_EOPNOTSUPP) {
        /* a hard link stands in, for the listing below */
        BLITZ_AWAIT(s, blitz_fs_link(cx, &s->op, s->path2, s->path));
        CHECK_EQ(s->op.result, 0);
        BLITZ_AWAIT(s, blitz_fs_lstat(cx, &s->op, s->path, &s->md));
        CHECK_EQ(s->op.result, 0);
        CHECK_EQ(s->md.type, BLITZ_FILE_REGULAR);
        CHECK_EQ(s->md.nlink, 2);
        s->step = -1;
    }
#endif
    CHECK_EQ(s->op.result, 0);
    if (s->step == 0) {
        BLITZ_AWAIT(s, blitz_fs_lstat(cx, &s->op, s->path, &s->md));
        CHECK_EQ(s->op.result, 0);
        CHECK_EQ(s->md.type, BLITZ_FILE_SYMLINK);
    }
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
    CHECK_EQ(s->md.type, BLITZ_FILE_REGULAR);
    CHECK_EQ(s->md.size, 5);
    BLITZ_AWAIT(s, blitz_fs_read_dir(cx, &s->op, s->dir));
    CHECK_EQ(s->op.result, 4);
    {
        blitz_fs_dirent *e = s->op.data;
        CHECK(strcmp(e[0].name, "link") == 0);
        CHECK(strcmp(e[1].name, "renamed.bin") == 0);
        CHECK(strcmp(e[2].name, "whole.txt") == 0);
        CHECK(strcmp(e[3].name, "x") == 0);
        if (s->step == 0)
            CHECK(e[0].type == BLITZ_FILE_SYMLINK || e[0].type == BLITZ_FILE_UNKNOWN);
        CHECK(e[3].type == BLITZ_FILE_DIRECTORY || e[3].type == BLITZ_FILE_UNKNOWN);
    }
    blitz_free(s->op.data);
    /* unlink and rmdir */
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path2, &s->md));
    CHECK_EQ(s->op.result, 0); /* what the link named is still there */
    BLITZ_AWAIT(s, blitz_fs_rmdir(cx, &s->op, s->nested));
    CHECK_EQ(s->op.result, 0);
    TF_PATH(s, nested, "%s/x");
    BLITZ_AWAIT(s, blitz_fs_rmdir(cx, &s->op, s->nested));
    CHECK_EQ(s->op.result, BLITZ_ENOTEMPTY);
    BLITZ_AWAIT(s, blitz_fs_read_dir(cx, &s->op, s->nested));
    CHECK_EQ(s->op.result, 1);
    blitz_free(s->op.data);
    /* a name beyond ASCII comes back as it went in (UTF-16 on Windows) */
    TF_PATH(s, path, "%s/x/caf\xc3\xa9.txt");
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->path, "", 0));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_read_dir(cx, &s->op, s->nested));
    CHECK_EQ(s->op.result, 2);
    CHECK(strcmp(((blitz_fs_dirent *)s->op.data)[0].name, "caf\xc3\xa9.txt") == 0);
    blitz_free(s->op.data);
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, 0);
    s->step = 1;
    BLITZ_END(s);
}

static int fs_roundtrip(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    tf_round s;
    memset(&s, 0, sizeof s);
    tf_tmpdir(s.dir, sizeof s.dir);
    int fds = tu_open_fds();
    CHECK_OK(blitz_runtime_run(rt, tf_round_poll, &s, sizeof s));
    CHECK_EQ(s.step, 1);
    CHECK_EQ(tu_open_fds(), fds);
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(s.dir);
    return 0;
}
TU_FLAVOR_TESTS(fs_roundtrip)

/* Errors come back as codes: missing files, existing ones, wrong kinds,
 * bad arguments, and permissions (checked as an unprivileged user; as root
 * the test switches its effective user for that part). */
typedef struct {
    BLITZ_CORO;
    char dir[200], path[300], path2[300];
    blitz_fs_op op;
    blitz_fs_metadata md;
    int fd, pfd[2];
    char buf[8];
    blitz_iovec iov[1];
    int check_perm;
} tf_err;

static blitz_poll tf_err_poll(blitz_cx *cx, void *p) {
    tf_err *s = p;
    BLITZ_BEGIN(s);
    TF_PATH(s, path, "%s/missing");
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ, 0));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    CHECK_NULL(s->op.data);
    BLITZ_AWAIT(s, blitz_fs_read_dir(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    TF_PATH(s, path, "%s/missing/deeper/file");
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->path, "x", 1));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    /* exists already, or is the wrong kind */
    BLITZ_AWAIT(s, blitz_fs_mkdir(cx, &s->op, s->dir, 0755));
    CHECK_EQ(s->op.result, BLITZ_EEXIST);
    TF_PATH(s, path, "%s/file");
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->path, "data", 4));
    CHECK_EQ(s->op.result, 4);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path,
                                 BLITZ_FS_WRITE | BLITZ_FS_CREATE | BLITZ_FS_EXCL, 0644));
    CHECK_EQ(s->op.result, BLITZ_EEXIST);
    BLITZ_AWAIT(s, blitz_fs_mkdir_all(cx, &s->op, s->path, 0755));
    CHECK_EQ(s->op.result, BLITZ_EEXIST);
    TF_PATH(s, path, "%s/file/below");
    BLITZ_AWAIT(s, blitz_fs_mkdir_all(cx, &s->op, s->path, 0755));
    CHECK_EQ(s->op.result, BLITZ_ENOTDIR);
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->dir));
    CHECK_EQ(s->op.result, BLITZ_EISDIR);
    TF_PATH(s, path, "%s/file");
    BLITZ_AWAIT(s, blitz_fs_read_dir(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, BLITZ_ENOTDIR);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->dir, BLITZ_FS_WRITE, 0));
    CHECK_EQ(s->op.result, BLITZ_EISDIR);
    TF_PATH(s, path, "%s/file/below");
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ, 0));
    CHECK_EQ(s->op.result, BLITZ_ENOTDIR);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
    CHECK_EQ(s->op.result, BLITZ_ENOTDIR);
    TF_PATH(s, path, "%s/missing");
    BLITZ_AWAIT(s, blitz_fs_rmdir(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    TF_PATH(s, path, "%s/file");
    BLITZ_AWAIT(s, blitz_fs_rmdir(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, BLITZ_ENOTDIR);
    TF_PATH(s, path2, "%s/locked");
    BLITZ_AWAIT(s, blitz_fs_unlink(cx, &s->op, s->path2));
    CHECK_EQ(s->op.result, BLITZ_EISDIR);
    BLITZ_AWAIT(s, blitz_fs_symlink(cx, &s->op, "anything", s->path));
#if defined(_WIN32)
    if (s->op.result != BLITZ_EPERM) /* no symlinks without the privilege */
#endif
        CHECK_EQ(s->op.result, BLITZ_EEXIST);
    BLITZ_AWAIT(s, blitz_fs_link(cx, &s->op, s->path, s->path));
    CHECK_EQ(s->op.result, BLITZ_EEXIST);
    TF_PATH(s, path2, "%s/missing");
    BLITZ_AWAIT(s, blitz_fs_link(cx, &s->op, s->path2, s->path2));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_rename(cx, &s->op, s->path2, s->path));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_lstat(cx, &s->op, s->path2, &s->md));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_fallocate(cx, &s->op, s->fd, 0, 0));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_fallocate(cx, &s->op, -1, 0, 1));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    /* writing through a read-only descriptor, reading a closed one */
    TF_PATH(s, path, "%s/file");
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ, 0));
    CHECK_GE(s->op.result, 0);
    s->fd = (int)s->op.result;
    BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->fd, "x", 1));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    BLITZ_AWAIT(s, blitz_fs_pwrite(cx, &s->op, s->fd, "x", 1, 0));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    BLITZ_AWAIT(s, blitz_fs_truncate(cx, &s->op, s->fd, 0));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_fallocate(cx, &s->op, s->fd, 0, 1));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    CHECK_EQ(s->op.result, 0);
    BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->fd, s->buf, sizeof s->buf));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    BLITZ_AWAIT(s, blitz_fs_fstat(cx, &s->op, s->fd, &s->md));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    BLITZ_AWAIT(s, blitz_fs_fsync(cx, &s->op, s->fd));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    /* no offsets on a pipe */
#if defined(_WIN32)
    CHECK_EQ(_pipe(s->pfd, 64, _O_BINARY), 0);
#else
    CHECK_EQ(pipe(s->pfd), 0);
#endif
    BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, s->pfd[0], s->buf, 1, 0));
    CHECK_EQ(s->op.result, BLITZ_ESPIPE);
    BLITZ_AWAIT(s, blitz_fs_pwrite(cx, &s->op, s->pfd[1], "x", 1, 0));
    CHECK_EQ(s->op.result, BLITZ_ESPIPE);
    tf_close(s->pfd[0]);
    tf_close(s->pfd[1]);
    /* bad arguments, refused before anything runs */
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, NULL, BLITZ_FS_READ, 0));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, 0, 0));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ | 0x1000, 0));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, -1, s->buf, sizeof s->buf));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, 0, NULL, 5));
    CHECK_EQ(s->op.result, BLITZ_EFAULT);
    BLITZ_AWAIT(s, blitz_fs_readv(cx, &s->op, 0, NULL, 1, -1));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, NULL));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_rename(cx, &s->op, s->path, NULL));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_mkdir_all(cx, &s->op, "", 0755));
    CHECK_EQ(s->op.result, BLITZ_ENOENT);
    BLITZ_AWAIT(s, blitz_fs_pread(cx, &s->op, 0, s->buf, 1, (uint64_t)INT64_MAX + 1));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    s->iov[0].base = s->buf;
    s->iov[0].len = sizeof s->buf;
    BLITZ_AWAIT(s, blitz_fs_readv(cx, &s->op, 0, s->iov, 1025, -1));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_writev(cx, &s->op, -1, s->iov, 1, -1));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    BLITZ_AWAIT(s, blitz_fs_truncate(cx, &s->op, 0, (uint64_t)INT64_MAX + 1));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->path, NULL, 3));
    CHECK_EQ(s->op.result, BLITZ_EFAULT);
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, -1));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    BLITZ_AWAIT(s, blitz_fs_fstat(cx, &s->op, -1, &s->md));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
#if defined(_WIN32)
    /* a path that is no UTF-8 has no UTF-16 form */
    BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, "bad\xff", &s->md));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, "bad\xc3", BLITZ_FS_READ, 0));
    CHECK_EQ(s->op.result, BLITZ_EINVAL);
#endif
    BLITZ_AWAIT(s, blitz_fs_truncate(cx, &s->op, -1, 0));
    CHECK_EQ(s->op.result, BLITZ_EBADF);
    /* permissions */
    if (s->check_perm) {
        TF_PATH(s, path, "%s/secret");
        BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ, 0));
        CHECK_EQ(s->op.result, BLITZ_EACCES);
        BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->path));
        CHECK_EQ(s->op.result, BLITZ_EACCES);
        TF_PATH(s, path, "%s/locked/inner");
        BLITZ_AWAIT(s, blitz_fs_write_file(cx, &s->op, s->path, "x", 1));
        CHECK_EQ(s->op.result, BLITZ_EACCES);
        TF_PATH(s, path, "%s/locked");
        BLITZ_AWAIT(s, blitz_fs_read_dir(cx, &s->op, s->path));
        CHECK_EQ(s->op.result, BLITZ_EACCES);
        TF_PATH(s, path, "%s/locked/inner");
        BLITZ_AWAIT(s, blitz_fs_mkdir(cx, &s->op, s->path, 0755));
        CHECK_EQ(s->op.result, BLITZ_EACCES);
        BLITZ_AWAIT(s, blitz_fs_stat(cx, &s->op, s->path, &s->md));
        CHECK_EQ(s->op.result, BLITZ_EACCES);
        BLITZ_AWAIT(s, blitz_fs_symlink(cx, &s->op, "x", s->path));
        CHECK_EQ(s->op.result, BLITZ_EACCES);
    }
    BLITZ_END(s);
}

#if defined(_WIN32)
/* No permission bits to test: one run on the default runtime. */
BLITZ_TEST(fs_errors) {
    tf_err s;
    memset(&s, 0, sizeof s);
    tf_tmpdir(s.dir, sizeof s.dir);
    char locked[300];
    snprintf(locked, sizeof locked, "%s/locked", s.dir);
    CHECK(CreateDirectoryA(locked, NULL));
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    CHECK_OK(blitz_runtime_run(rt, tf_err_poll, &s, sizeof s));
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(s.dir);
    return 0;
}
#else
BLITZ_TEST(fs_errors) {
    tf_err s;
    memset(&s, 0, sizeof s);
    tf_tmpdir(s.dir, sizeof s.dir);
    char secret[300], locked[300];
    snprintf(secret, sizeof secret, "%s/secret", s.dir);
    snprintf(locked, sizeof locked, "%s/locked", s.dir);
    int fd = open(secret, O_CREAT | O_WRONLY, 0600);
    CHECK_GE(fd, 0);
    close(fd);
    CHECK_EQ(chmod(secret, 0), 0);
    CHECK_EQ(mkdir(locked, 0), 0);
    CHECK_EQ(chmod(s.dir, 0777), 0); /* the unprivileged run writes here too */
    /* Root ignores permission bits: become an ordinary user for the
     * run (setreuid keeps root as the saved id to come back to). */
    uid_t euid = geteuid();
#if defined(__APPLE__)
    int dropped = euid == 0 && seteuid(65534) == 0; /* no setresuid */
#else
    int dropped = euid == 0 && setresuid(0, 65534, 0) == 0;
#endif
    s.check_perm = geteuid() != 0;
    /* The ring's file ops and the pool's give the same answers. */
    static const blitz_backend backends[] = {BLITZ_BACKEND_IO_URING, BLITZ_BACKEND_EPOLL,
                                             BLITZ_BACKEND_POLL};
    for (size_t b = 0; (dropped || euid != 0) && b < sizeof backends / sizeof backends[0]; b++) {
        blitz_config cfg = tu_config(TU_MT2);
        cfg.backend = backends[b];
        blitz_runtime *rt = NULL;
        if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK)
            continue; /* no io_uring here */
        tf_err run = s;
        CHECK_OK(blitz_runtime_run(rt, tf_err_poll, &run, sizeof run));
        CHECK_OK(blitz_runtime_free(rt));
    }
    if (dropped)
#if defined(__APPLE__)
        CHECK_EQ(seteuid(0), 0);
#else
        CHECK_EQ(setresuid(0, 0, 0), 0);
#endif
    if (euid == 0 && !dropped)
        fprintf(stderr, "# fs_errors: could not drop root, permission checks skipped\n");
    CHECK(s.check_perm || !dropped);
    chmod(locked, 0700);
    tf_rm_rf(s.dir);
    return 0;
}
#endif

/* Cancelling at every point of an op's life: queued, running, finished
 * but not taken. Opened files are closed and buffers freed whatever the
 * timing, and the op is usable again afterwards. */
typedef struct {
    BLITZ_CORO;
    const char *path;
    blitz_fs_op op;
    blitz_timer timer;
    long i, n, opened, timeouts;
    unsigned seed;
} tf_race;

/* Zero a quarter of the time (the op is given up right after it starts),
 * else up to 2 ms (it may be queued, running or done by then). */
static int64_t tf_race_timeout(unsigned seed) {
    return (seed >> 20) % 4 == 0 ? 0 : (int64_t)((seed >> 12) % 2000) * 1000;
}

static blitz_poll tf_race_poll(blitz_cx *cx, void *p) {
    tf_race *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        s->seed = s->seed * 1103515245u + 12345u;
        if (s->seed & 0x100) {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, tf_race_timeout(s->seed),
                                            blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ, 0),
                                            blitz_fs_cancel, &s->op));
            if (s->timer.expired) {
                s->timeouts++;
                continue;
            }
            CHECK_GE(s->op.result, 0);
            s->opened++;
            tf_close((int)s->op.result);
        } else {
            BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, tf_race_timeout(s->seed),
                                            blitz_fs_read_file(cx, &s->op, s->path),
                                            blitz_fs_cancel, &s->op));
            if (s->timer.expired) {
                s->timeouts++;
                continue;
            }
            CHECK_EQ(s->op.result, 4);
            blitz_free(s->op.data);
        }
    }
    /* The op still works after everything that happened to it. */
    BLITZ_AWAIT(s, blitz_fs_read_file(cx, &s->op, s->path));
    CHECK_EQ(s->op.result, 4);
    blitz_free(s->op.data);
    BLITZ_END(s);
}

static int fs_cancel_race(tu_flavor f) {
    blitz_runtime *rt = tp_rt_new(f, 2, 0, 0); /* 2 threads: ops also wait in the queue */
    char dir[200], path[300];
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/f", dir);
    tf_put(path, "four");
    int fds = tu_open_fds();
    enum { N = 6 };
    blitz_task *h[N];
    for (int i = 0; i < N; i++) {
        tf_race s;
        memset(&s, 0, sizeof s);
        s.path = path;
        s.n = test_scaled(400);
        s.seed = (unsigned)i * 7919u + 1;
        CHECK_OK(blitz_spawn(rt, tf_race_poll, &s, sizeof s, &h[i]));
    }
    long timeouts = 0, opened = 0;
    for (int i = 0; i < N; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        tf_race *done = blitz_task_state(h[i]);
        timeouts += done->timeouts;
        opened += done->opened;
        blitz_task_release(&h[i]);
    }
    /* Before the runtime is freed: it holds descriptors of its own (the
     * I/O backend's). A cancelled open whose thread was still in open(2)
     * closes its descriptor when that returns, after its task moved on:
     * allow it a moment. */
    TU_WAIT_UNTIL(tu_open_fds() == fds, 2, 1);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_GT(timeouts, 0);
    CHECK_GT(opened, 0);
    tf_rm_rf(dir);
    return 0;
}
TU_FLAVOR_TESTS(fs_cancel_race)

/* A task cancelled while its op is pending releases the op from its
 * cancel hook; files opened by threads that finish later are closed. And
 * an op queued at shutdown completes as cancelled. */
typedef struct {
    BLITZ_CORO;
    const char *path;
    blitz_fs_op op;
} tf_hooked;

static blitz_poll tf_hooked_poll(blitz_cx *cx, void *p) {
    tf_hooked *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_fs_open(cx, &s->op, s->path, BLITZ_FS_READ, 0));
    if (s->op.result >= 0)
        tf_close((int)s->op.result);
    BLITZ_END(s);
}
static void tf_hooked_cancel(void *p) {
    blitz_fs_cancel(NULL, &((tf_hooked *)p)->op);
}

/* A runtime whose file ops are pool jobs (epoll: the ring would carry
 * them itself). */
static blitz_runtime *tf_pool_rt(tu_flavor f, uint32_t max_threads, uint32_t capacity) {
    blitz_config cfg = tu_config(f);
    cfg.max_blocking_threads = max_threads;
    cfg.blocking_queue_capacity = capacity;
#if !defined(_WIN32)
    cfg.backend = BLITZ_BACKEND_EPOLL;
#endif
    return tu_rt_config(&cfg);
}

BLITZ_TEST(fs_cancelled_task_closes_files) {
    blitz_runtime *rt = tf_pool_rt(TU_MT2, 1, 0);
    char dir[200], path[300];
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/f", dir);
    tf_put(path, "");
    int fds = tu_open_fds();
    tp_job gate;
    tp_job_init(&gate, 0);
    blitz_task *blocker;
    CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &gate, &blocker));
    TU_WAIT_GE(&gate.running, 1, 5.0);
    enum { N = 40 };
    blitz_task *h[N];
    for (int i = 0; i < N; i++) {
        tf_hooked s = {0, path, {0}};
        blitz_spawn_opts o;
        memset(&o, 0, sizeof o);
        o.poll = tf_hooked_poll;
        o.state = &s;
        o.size = sizeof s;
        o.cancel = tf_hooked_cancel;
        CHECK_OK(blitz_spawn_ex(rt, &o, &h[i]));
    }
    while (tp_stats(rt).queued < N)
        tu_sleep_ms(1);
    /* Half are cancelled while queued; the rest run once the gate opens,
     * and some of those are cancelled while their open runs. */
    for (int i = 0; i < N; i += 2)
        CHECK_OK(blitz_task_cancel(h[i]));
    atomic_store(&gate.gate, 1);
    for (int i = 1; i < N; i += 4)
        CHECK_OK(blitz_task_cancel(h[i]));
    for (int i = 0; i < N; i++) {
        int rc = blitz_join_blocking(h[i]);
        CHECK(rc == BLITZ_OK || rc == BLITZ_ECANCELED);
        if (i % 2 == 0)
            CHECK_EQ(rc, BLITZ_ECANCELED);
        blitz_task_release(&h[i]);
    }
    CHECK_OK(blitz_join_blocking(blocker));
    blitz_task_release(&blocker);
    /* Shutdown with ops queued behind a busy thread. */
    atomic_store(&gate.gate, 0);
    CHECK_OK(blitz_spawn_blocking(rt, tp_job_fn, &gate, &blocker));
    TU_WAIT_GE(&gate.running, 1, 5.0);
    for (int i = 0; i < 4; i++) {
        tf_hooked s = {0, path, {0}};
        CHECK_OK(blitz_spawn(rt, tf_hooked_poll, &s, sizeof s, &h[i]));
    }
    while (tp_stats(rt).queued < 4)
        tu_sleep_ms(1);
    tu_thread opener;
    tu_thread_start(&opener, tp_open_gate_later, &gate);
    CHECK_OK(blitz_runtime_shutdown(rt));
    tu_thread_join(&opener);
    for (int i = 0; i < 4; i++) {
        int rc = blitz_task_status(h[i]);
        CHECK(rc == BLITZ_OK || rc == BLITZ_ECANCELED);
        blitz_task_release(&h[i]);
    }
    blitz_task_release(&blocker);
    CHECK_EQ(tu_open_fds(), fds);
    CHECK_OK(blitz_runtime_free(rt));
    tf_rm_rf(dir);
    return 0;
}

/* A bounded queue under fire: one thread, room for two waiting jobs, and
 * tasks whose ops wait for room, are woken for it, requeue, and are given
 * up at random moments in between. Every op that is not given up
 * completes, and nothing leaks. */
BLITZ_TEST(fs_room_cancel_race) {
    blitz_runtime *rt = tf_pool_rt(TU_MT2, 1, 2);
    char dir[200], path[300];
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/f", dir);
    tf_put(path, "four");
    int fds = tu_open_fds();
    enum { N = 8 };
    blitz_task *h[N];
    for (int i = 0; i < N; i++) {
        tf_race s;
        memset(&s, 0, sizeof s);
        s.path = path;
        s.n = test_scaled(200);
        s.seed = (unsigned)i * 104729u + 3;
        CHECK_OK(blitz_spawn(rt, tf_race_poll, &s, sizeof s, &h[i]));
    }
    long timeouts = 0, opened = 0;
    for (int i = 0; i < N; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        tf_race *done = blitz_task_state(h[i]);
        timeouts += done->timeouts;
        opened += done->opened;
        blitz_task_release(&h[i]);
    }
    blitz_pool_stats st = tp_stats(rt);
    CHECK_GT(st.rejected, 0); /* ops did wait for room */
    CHECK_EQ(st.threads_started, 1);
    /* Before the runtime is freed: it holds its I/O backend's descriptors. */
    CHECK_EQ(tu_open_fds(), fds);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_GT(timeouts, 0);
    CHECK_GT(opened, 0);
    tf_rm_rf(dir);
    return 0;
}

#if !defined(_WIN32) /* the io_uring path */
#include "test_fs_uring.c"
#endif
