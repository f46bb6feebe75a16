/* Files: every operation is a heap record holding the request; the
 * ring carries it out (io/uring_file.c) when the runtime's backend is
 * io_uring and the kernel has the op, else it is a pool op
 * (blocking_pool.c) whose thread makes the system calls. Either way the
 * record is tracked with the pool's and its result taken the same way,
 * so both paths answer alike.
 *
 * Paths are copied (one allocation for both paths of a rename) when the
 * operation starts: a cancelled operation whose thread is still running
 * must not read the caller's string after the caller moved on. The thread
 * (or the ring's completion) frees the copy when it is done; a cancel
 * that takes the op out of the queue frees it instead. */
#include "../io/io.h"

#if BLITZ__HAS_IO /* POSIX only until the IOCP backend (platform.h) */

/* What a pool thread works on: the request, with copies of the paths
 * and of the data to write, and the results, reads landing in `buf`. */
typedef struct {
    blitz__pool_rec base;
    int kind, fd, flags;
    uint32_t mode;
    void *buf; /* owned: data to write, or room for what is read */
    size_t len;
    int64_t off;
    char *path, *path2; /* one allocation */
    blitz_fs_metadata md;
    int64_t result;
    void *data;
    /* Carried out by the ring instead of a pool thread (io/uring_file.c). */
    int native;
    size_t done; /* a native write's bytes written so far */
    blitz__ufile uf;
} blitz__fs_rec;

static int64_t blitz__fs_err(void) {
    return blitz__from_errno(errno);
}

static blitz_file_type blitz__fs_type_of_mode(mode_t m) {
    if (S_ISREG(m))
        return BLITZ_FILE_REGULAR;
    if (S_ISDIR(m))
        return BLITZ_FILE_DIRECTORY;
    if (S_ISLNK(m))
        return BLITZ_FILE_SYMLINK;
    return BLITZ_FILE_OTHER;
}

static uint64_t blitz__fs_ns(struct timespec ts) {
    return ts.tv_sec < 0 ? 0 : (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void blitz__fs_fill_metadata(blitz_fs_metadata *m, const struct stat *st) {
    memset(m, 0, sizeof *m);
    m->type = blitz__fs_type_of_mode(st->st_mode);
    m->mode = (uint32_t)(st->st_mode & 07777);
    m->size = st->st_size < 0 ? 0 : (uint64_t)st->st_size;
    struct timespec modified, accessed, changed;
    blitz__stat_times(st, &modified, &accessed, &changed);
    m->mtime_ns = blitz__fs_ns(modified);
    m->atime_ns = blitz__fs_ns(accessed);
    m->ctime_ns = blitz__fs_ns(changed);
    m->dev = (uint64_t)st->st_dev;
    m->ino = (uint64_t)st->st_ino;
    m->nlink = (uint64_t)st->st_nlink;
    m->uid = (uint32_t)st->st_uid;
    m->gid = (uint32_t)st->st_gid;
}

/* Writes everything, continuing after short writes and EINTR. */
static int64_t blitz__fs_write_all(int fd, const char *p, size_t len, int64_t off) {
    size_t done = 0;
    while (done < len) {
        size_t want = BLITZ__SYS_LEN(len - done);
        ssize_t n = BLITZ__SYS(off >= 0 ? pwrite(fd, p + done, want, (off_t)(off + (int64_t)done))
                                        : write(fd, p + done, want));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE)
                blitz__consume_sigpipe();
            return blitz__fs_err();
        }
        if (n == 0)
            return BLITZ_EIO;
        done += (size_t)n;
    }
    return (int64_t)done;
}

static int64_t blitz__fs_read_some(int fd, void *buf, size_t len, int64_t off) {
    for (;;) {
        size_t want = BLITZ__SYS_LEN(len);
        ssize_t n = BLITZ__SYS(off >= 0 ? pread(fd, buf, want, (off_t)off) : read(fd, buf, want));
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return blitz__fs_err();
    }
}

static int64_t blitz__fs_mkdir_all(char *path, mode_t mode) {
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        path[--len] = '\0';
    for (char *p = path + 1;; p++) {
        int last = *p == '\0';
        if (*p != '/' && !last)
            continue;
        if (!last && p[-1] == '/')
            continue; /* doubled slash */
        char saved = *p;
        *p = '\0';
        if (mkdir(path, mode) != 0) {
            /* An existing directory is fine whatever mkdir said (it may
             * say EACCES for a parent we cannot write). */
            int e = errno;
            struct stat st;
            int exists = stat(path, &st) == 0;
            if (!exists || !S_ISDIR(st.st_mode)) {
                *p = saved;
                return blitz__from_errno(!exists ? e : last ? EEXIST : ENOTDIR);
            }
        }
        *p = saved;
        if (last)
            return 0;
    }
}

/* A whole file, or BLITZ_EFBIG as soon as it has more than `limit`
 * bytes (SIZE_MAX: no limit), so that an endless file stops early. */
static int64_t blitz__fs_read_file(const char *path, size_t limit, void **out) {
    int fd;
    do
        fd = BLITZ__SYS(open(path, O_RDONLY | O_CLOEXEC));
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return blitz__fs_err();
    struct stat st;
    size_t cap = 0, used = 0;
    char *buf = NULL;
    int sized = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
    if (sized && (uint64_t)st.st_size > limit) {
        close(fd);
        return BLITZ_EFBIG;
    }
    size_t hint = sized ? (size_t)st.st_size + 1 : 4096;
    if (limit < SIZE_MAX - 1 && hint > limit + 2)
        hint = limit + 2;
    int64_t rc = blitz__grow_buffer(&buf, &cap, 0, hint);
    while (rc == 0) {
        if (used > limit) {
            rc = BLITZ_EFBIG;
            break;
        }
        if (used + 1 >= cap && (rc = blitz__grow_buffer(&buf, &cap, used, cap * 2)) != 0)
            break;
        int64_t n = blitz__fs_read_some(fd, buf + used, cap - used - 1, -1);
        if (n < 0)
            rc = n;
        else if (n == 0)
            break;
        else
            used += (size_t)n;
    }
    close(fd);
    if (rc != 0) {
        blitz__free(buf);
        return rc;
    }
    buf[used] = '\0';
    *out = buf;
    return (int64_t)used;
}

static int64_t blitz__fs_write_file(const char *path, const void *data, size_t len) {
    int fd;
    do
        fd = BLITZ__SYS(open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return blitz__fs_err();
    int64_t rc = blitz__fs_write_all(fd, (const char *)data, len, -1);
    if (close(fd) != 0 && rc >= 0 && errno != EINTR)
        rc = blitz__fs_err();
    return rc;
}

static int blitz__fs_dirent_cmp(const void *a, const void *b) {
    return strcmp(((const blitz_fs_dirent *)a)->name, ((const blitz_fs_dirent *)b)->name);
}

/* One block: the entry array, then the names it points into. */
static int64_t blitz__fs_read_dir(const char *path, void **out) {
    DIR *d = opendir(path);
    if (!d)
        return blitz__fs_err();
    char *names = NULL, *types = NULL;
    size_t names_cap = 0, names_used = 0, types_cap = 0, count = 0;
    int64_t rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno)
                rc = blitz__fs_err();
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        size_t n = strlen(e->d_name) + 1;
        if ((rc = blitz__grow_buffer(&names, &names_cap, names_used, names_used + n)) != 0 ||
            (rc = blitz__grow_buffer(&types, &types_cap, count, count + 1)) != 0)
            break;
        memcpy(names + names_used, e->d_name, n);
        names_used += n;
        blitz_file_type t = BLITZ_FILE_UNKNOWN;
#ifdef DT_UNKNOWN
        switch (e->d_type) {
        case DT_REG:
            t = BLITZ_FILE_REGULAR;
            break;
        case DT_DIR:
            t = BLITZ_FILE_DIRECTORY;
            break;
        case DT_LNK:
            t = BLITZ_FILE_SYMLINK;
            break;
        case DT_UNKNOWN:
            break;
        default:
            t = BLITZ_FILE_OTHER;
        }
#endif
        types[count++] = (char)t;
    }
    closedir(d);
    blitz_fs_dirent *list = NULL;
    if (rc == 0) {
        size_t head = (count ? count : 1) * sizeof(blitz_fs_dirent);
        list = (blitz_fs_dirent *)blitz__malloc(head + names_used);
        if (!list) {
            rc = BLITZ_ENOMEM;
        } else {
            char *copy = (char *)list + head;
            if (names_used)
                memcpy(copy, names, names_used);
            for (size_t i = 0; i < count; i++) {
                list[i].name = copy;
                list[i].type = (blitz_file_type)types[i];
                copy += strlen(copy) + 1;
            }
            qsort(list, count, sizeof *list, blitz__fs_dirent_cmp);
        }
    }
    blitz__free(names);
    blitz__free(types);
    if (rc != 0)
        return rc;
    *out = list;
    return (int64_t)count;
}

static int blitz__fs_open_flags(int flags, int *out) {
    if (flags &
        ~(BLITZ_FS_READ | BLITZ_FS_WRITE | BLITZ_FS_APPEND | BLITZ_FS_CREATE | BLITZ_FS_TRUNCATE |
          BLITZ_FS_EXCL | BLITZ_FS_SYNC | BLITZ_FS_DSYNC | BLITZ_FS_DIRECT | BLITZ_FS_NOFOLLOW))
        return BLITZ_EINVAL;
    int direct = blitz__open_direct_flag();
    if ((flags & BLITZ_FS_DIRECT) && !direct)
        return BLITZ_EOPNOTSUPP;
    int w = (flags & (BLITZ_FS_WRITE | BLITZ_FS_APPEND)) != 0, r = (flags & BLITZ_FS_READ) != 0;
    if (!w && !r)
        return BLITZ_EINVAL;
    int o = (r && w) ? O_RDWR : w ? O_WRONLY : O_RDONLY;
    if (flags & BLITZ_FS_APPEND)
        o |= O_APPEND;
    if (flags & BLITZ_FS_CREATE)
        o |= O_CREAT;
    if (flags & BLITZ_FS_TRUNCATE)
        o |= O_TRUNC;
    if (flags & BLITZ_FS_EXCL)
        o |= O_EXCL;
    if (flags & BLITZ_FS_SYNC)
        o |= O_SYNC;
    if (flags & BLITZ_FS_DSYNC)
        o |= O_DSYNC;
    if (flags & BLITZ_FS_DIRECT)
        o |= direct;
    if (flags & BLITZ_FS_NOFOLLOW)
        o |= O_NOFOLLOW;
    *out = o | O_CLOEXEC;
    return 0;
}

static int64_t blitz__fs_stat_result(int rc, blitz_fs_metadata *out, const struct stat *st) {
    if (rc != 0)
        return blitz__fs_err();
    blitz__fs_fill_metadata(out, st);
    return 0;
}

static int64_t blitz__fs_do(blitz__fs_rec *f) {
    struct stat st;
    int rc;
    switch (f->kind) {
    case BLITZ__FS_OPEN:
        do
            rc = BLITZ__SYS(open(f->path, f->flags, (mode_t)f->mode));
        while (rc < 0 && errno == EINTR);
        return rc < 0 ? blitz__fs_err() : rc;
    case BLITZ__FS_CLOSE:
        /* Linux releases the descriptor even when close reports EINTR. */
        return close(f->fd) == 0 || errno == EINTR ? 0 : blitz__fs_err();
    case BLITZ__FS_READ:
    case BLITZ__FS_PREAD:
    case BLITZ__FS_READV:
        return blitz__fs_read_some(f->fd, f->buf, f->len, f->off);
    case BLITZ__FS_WRITE:
    case BLITZ__FS_PWRITE:
    case BLITZ__FS_WRITEV:
        return blitz__fs_write_all(f->fd, (const char *)f->buf, f->len, f->off);
    case BLITZ__FS_FSYNC:
        return fsync(f->fd) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_FDATASYNC:
        return blitz__fdatasync(f->fd) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_TRUNCATE:
        return ftruncate(f->fd, (off_t)f->off) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_STAT:
        return blitz__fs_stat_result(stat(f->path, &st), &f->md, &st);
    case BLITZ__FS_LSTAT:
        return blitz__fs_stat_result(lstat(f->path, &st), &f->md, &st);
    case BLITZ__FS_FSTAT:
        return blitz__fs_stat_result(fstat(f->fd, &st), &f->md, &st);
    case BLITZ__FS_RENAME:
        return rename(f->path, f->path2) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_UNLINK:
        return unlink(f->path) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_RMDIR:
        return rmdir(f->path) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_MKDIR:
        return mkdir(f->path, (mode_t)f->mode) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_MKDIR_ALL:
        return blitz__fs_mkdir_all(f->path, (mode_t)f->mode);
    case BLITZ__FS_READ_DIR:
        return blitz__fs_read_dir(f->path, &f->data);
    case BLITZ__FS_READ_FILE:
        return blitz__fs_read_file(f->path, f->len, &f->data);
    case BLITZ__FS_WRITE_FILE:
        return blitz__fs_write_file(f->path, f->buf, f->len);
    case BLITZ__FS_SYMLINK:
        return symlink(f->path, f->path2) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_LINK:
        return link(f->path, f->path2) == 0 ? 0 : blitz__fs_err();
    case BLITZ__FS_FALLOCATE:
        return blitz__fallocate(f->fd, f->off, (int64_t)f->len);
    default:
        return BLITZ_EINVAL;
    }
}

static void blitz__fs_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__fs_rec *f = (blitz__fs_rec *)rec;
    f->result = cancelled ? BLITZ_ECANCELED : blitz__fs_do(f);
}

/* Frees what the record still holds; an opened file nobody took is
 * closed. */
static void blitz__fs_discard(blitz__pool_rec *rec) {
    blitz__fs_rec *f = (blitz__fs_rec *)rec;
    if (f->kind == BLITZ__FS_OPEN && f->result >= 0)
        close((int)f->result);
    blitz__free(f->data);
    blitz__free(f->buf);
    blitz__free(f->path);
}

/* Copies the path(s) into the record. */
static int blitz__fs_set_paths(blitz__fs_rec *f, const char *a, const char *b) {
    size_t la = strlen(a) + 1, lb = b ? strlen(b) + 1 : 0;
    char *p = (char *)blitz__malloc(la + lb);
    if (!p)
        return BLITZ_ENOMEM;
    memcpy(p, a, la);
    if (b)
        memcpy(p + la, b, lb);
    f->path = p;
    f->path2 = b ? p + la : NULL;
    return 0;
}

static int blitz__fs_is_read(int kind) {
    return kind == BLITZ__FS_READ || kind == BLITZ__FS_PREAD || kind == BLITZ__FS_READV;
}

/* Builds the record: copies of paths and of data to write, room for a
 * read. */
static int blitz__fs_rec_fill(blitz__fs_rec *f, const blitz__fs_req *r) {
    f->kind = r->kind;
    f->fd = r->fd;
    f->flags = r->flags;
    f->mode = r->mode;
    f->off = r->off;
    f->result = -1;
    if (r->path && blitz__fs_set_paths(f, r->path, r->path2) != 0)
        return BLITZ_ENOMEM;
    size_t len = r->len;
    if (r->iov) {
        len = 0;
        for (int i = 0; i < r->iovcnt; i++) {
            if (!r->iov[i].base && r->iov[i].len)
                return BLITZ_EFAULT;
            if (r->iov[i].len > SIZE_MAX - len)
                return BLITZ_EINVAL;
            len += r->iov[i].len;
        }
    }
    if (blitz__fs_is_read(r->kind) && len > BLITZ_FS_MAX_READ)
        len = BLITZ_FS_MAX_READ;
    f->len = len;
    if (len && (blitz__fs_is_read(r->kind) || r->buf || r->iov)) {
        f->buf = blitz__malloc(len);
        if (!f->buf)
            return BLITZ_ENOMEM;
        if (!blitz__fs_is_read(r->kind)) {
            if (r->iov) {
                size_t at = 0;
                for (int i = 0; i < r->iovcnt; i++) {
                    if (r->iov[i].len)
                        memcpy((char *)f->buf + at, r->iov[i].base, r->iov[i].len);
                    at += r->iov[i].len;
                }
            } else {
                memcpy(f->buf, r->buf, len);
            }
        }
    }
    return 0;
}

/* Moves the results of a finished record into the op and the caller's
 * buffers. */
static void blitz__fs_take(blitz_fs_op *op, blitz__fs_rec *f) {
    op->result = f->result;
    if (f->result > 0 && blitz__fs_is_read(f->kind)) {
        if (op->blitz__iov) {
            size_t at = 0, left = (size_t)f->result;
            for (int i = 0; i < op->blitz__iovcnt && left; i++) {
                size_t n = op->blitz__iov[i].len < left ? op->blitz__iov[i].len : left;
                if (n)
                    memcpy(op->blitz__iov[i].base, (char *)f->buf + at, n);
                at += n;
                left -= n;
            }
        } else {
            memcpy(op->blitz__out, f->buf, (size_t)f->result);
        }
    }
    if (f->result == 0 &&
        (f->kind == BLITZ__FS_STAT || f->kind == BLITZ__FS_LSTAT || f->kind == BLITZ__FS_FSTAT))
        *(blitz_fs_metadata *)op->blitz__out = f->md;
    op->data = f->data;
    f->data = NULL;
    f->result = -1; /* an opened file is the caller's now */
    blitz__pool_rec_free(&f->base);
}

/* ---- the ring's path ---------------------------------------------------------------- */

/* The ring's op for a record, or 0 for a pool job. A write goes to the
 * ring only for a regular file: the kernel would raise SIGPIPE on a
 * worker for a pipe or socket with no reader, where a pool thread blocks
 * it. A read at an offset only for a regular file or a block device: the
 * ring ignores the offset of a pipe or socket (and waits for data) where
 * pread says ESPIPE. An empty write stays a pool job too (it makes no
 * system call there, so a bad descriptor is no error). */
static int blitz__fs_native_op(blitz_runtime *rt, const blitz__fs_rec *f) {
    int op = 0;
    switch (f->kind) {
    case BLITZ__FS_OPEN:
        op = BLITZ__UF_OPEN;
        break;
    case BLITZ__FS_CLOSE:
        op = BLITZ__UF_CLOSE;
        break;
    case BLITZ__FS_READ:
    case BLITZ__FS_PREAD:
    case BLITZ__FS_READV:
        op = BLITZ__UF_READ;
        break;
    case BLITZ__FS_WRITE:
    case BLITZ__FS_PWRITE:
    case BLITZ__FS_WRITEV:
        op = f->len ? BLITZ__UF_WRITE : 0;
        break;
    case BLITZ__FS_FSYNC:
        op = BLITZ__UF_FSYNC;
        break;
    case BLITZ__FS_FDATASYNC:
        op = BLITZ__UF_FDATASYNC;
        break;
    case BLITZ__FS_TRUNCATE:
        op = BLITZ__UF_FTRUNCATE;
        break;
    case BLITZ__FS_STAT:
        op = BLITZ__UF_STAT;
        break;
    case BLITZ__FS_LSTAT:
        op = BLITZ__UF_LSTAT;
        break;
    case BLITZ__FS_FSTAT:
        op = BLITZ__UF_FSTAT;
        break;
    case BLITZ__FS_RENAME:
        op = BLITZ__UF_RENAME;
        break;
    case BLITZ__FS_UNLINK:
        op = BLITZ__UF_UNLINK;
        break;
    case BLITZ__FS_RMDIR:
        op = BLITZ__UF_RMDIR;
        break;
    case BLITZ__FS_MKDIR:
        op = BLITZ__UF_MKDIR;
        break;
    case BLITZ__FS_SYMLINK:
        op = BLITZ__UF_SYMLINK;
        break;
    case BLITZ__FS_LINK:
        op = BLITZ__UF_LINK;
        break;
    case BLITZ__FS_FALLOCATE:
        op = BLITZ__UF_FALLOCATE;
        break;
    case BLITZ__FS_READ_FILE:
        op = BLITZ__UF_READ_FILE;
        break;
    case BLITZ__FS_WRITE_FILE:
        op = BLITZ__UF_WRITE_FILE;
        break;
    default:
        return 0;
    }
    if (!op || !blitz__ufile_can(rt, op))
        return 0;
    /* A whole-file write only where the path names a regular file, a
     * directory (EISDIR) or nothing, for the same reason as a write's. */
    struct stat pst;
    if (op == BLITZ__UF_WRITE_FILE && stat(f->path, &pst) == 0 && !S_ISREG(pst.st_mode) &&
        !S_ISDIR(pst.st_mode))
        return 0;
    if (op == BLITZ__UF_WRITE || (op == BLITZ__UF_READ && f->off >= 0)) {
        struct stat st;
        if (fstat(f->fd, &st) != 0 ||
            !(S_ISREG(st.st_mode) || (op == BLITZ__UF_READ && S_ISBLK(st.st_mode))))
            return 0;
    }
    return op;
}

/* A native record whose owner is gone: the completion releases it. */
static void blitz__fs_native_discard(blitz__ufile *u) {
    blitz__fs_rec *f = (blitz__fs_rec *)(void *)((char *)u - offsetof(blitz__fs_rec, uf));
    f->result = u->res; /* an opened file is closed */
    blitz__pool_rec_free(&f->base);
}

/* What a whole-file read reads on the ring: a file whose end its second
 * read finds needs nothing else; any other (larger, or giving its data
 * in pieces like some of /proc's) is read again by a pool job. */
#define BLITZ__FS_RING_READ 16384u

/* (Re)submits the record's request; a write continues after `done`. */
static int blitz__fs_native_submit(blitz_cx *cx, blitz__fs_rec *f) {
    blitz__ufile *u = &f->uf;
    if (f->kind == BLITZ__FS_WRITE_FILE || f->kind == BLITZ__FS_READ_FILE) {
        int w = f->kind == BLITZ__FS_WRITE_FILE;
        /* A write_file cut short goes on in the same file, reopened. */
        u->flags = w ? O_WRONLY | (f->done ? 0 : O_CREAT | O_TRUNC) : O_RDONLY;
        u->mode = 0666;
        u->path = f->path;
        u->off = w ? (int64_t)f->done : -1;
        if (!w && !f->buf && !(f->buf = blitz__malloc(BLITZ__FS_RING_READ + 1)))
            return BLITZ_ENOMEM;
        u->buf = w && f->buf ? (char *)f->buf + f->done : f->buf;
        u->len = w ? f->len - f->done : BLITZ__FS_RING_READ;
        return blitz__ufile_submit(cx, u);
    }
    u->fd = f->fd;
    u->flags = f->flags;
    u->mode = f->mode;
    u->buf = f->buf ? (char *)f->buf + f->done : NULL;
    u->len = f->len - f->done;
    u->off = f->kind == BLITZ__FS_FALLOCATE || f->kind == BLITZ__FS_TRUNCATE || f->off < 0
                 ? f->off
                 : f->off + (int64_t)f->done;
    u->path = f->path;
    u->path2 = f->path2;
    return blitz__ufile_submit(cx, u);
}

static int64_t blitz__fs_kerr(int32_t res) {
    return blitz__from_errno(-res);
}

/* A whole-file chain's result from its steps' (open, write or two
 * reads, close), as the pool's calls would answer; *again: go on (a
 * short write, EINTR); *pool: read it again on a pool thread. */
static int64_t blitz__fs_chain_result(blitz__fs_rec *f, int *again, int *pool) {
    const int32_t *r = f->uf.link_res;
    int w = f->kind == BLITZ__FS_WRITE_FILE;
    int32_t io = r[1] < 0 || w ? r[1] : r[2] < 0 ? r[2] : r[1], closed = r[w ? 2 : 3];
    if (r[0] < 0 || io < 0) {
        int32_t e = r[0] < 0 ? r[0] : io;
        *again = e == -EINTR;
        return blitz__fs_kerr(e);
    }
    if (closed < 0 && closed != -EINTR)
        return blitz__fs_kerr(closed);
    if (w) {
        if (io == 0 && f->done < f->len)
            return BLITZ_EIO;
        f->done += (size_t)io;
        *again = f->done < f->len;
        return (int64_t)f->done;
    }
    /* More bytes than the limit (f->len) already: as the pool's read
     * would end, keeping nothing. */
    if ((uint64_t)io + (uint64_t)(r[2] > 0 ? r[2] : 0) > (uint64_t)f->len)
        return BLITZ_EFBIG;
    if (r[2] != 0 || (uint32_t)io >= BLITZ__FS_RING_READ) {
        *pool = 1;
        return 0;
    }
    char *data = (char *)f->buf;
    data[io] = '\0';
    f->data = data;
    f->buf = NULL;
    return io;
}

/* A native record's completion: 1 when the result is final (in
 * f->result) or the record was given to the pool (f->native cleared), 0
 * when the rest was submitted again. */
static int blitz__fs_native_finish(blitz_cx *cx, blitz__fs_rec *f) {
    int64_t res = f->uf.res;
    int again = 0, pool = 0;
    if (f->uf.op == BLITZ__UF_WRITE_FILE || f->uf.op == BLITZ__UF_READ_FILE) {
        res = blitz__fs_chain_result(f, &again, &pool);
        if (pool) {
            blitz__free(f->buf);
            f->buf = NULL;
            f->native = 0;
            return 1;
        }
    } else if (res == BLITZ_EINTR && f->kind != BLITZ__FS_CLOSE) {
        again = 1;
    } else if (f->uf.op == BLITZ__UF_WRITE && res >= 0) {
        /* Short writes are continued, as a pool thread does. */
        if (res == 0) {
            res = BLITZ_EIO;
        } else {
            f->done += (size_t)res;
            res = (int64_t)f->done;
            again = f->done < f->len;
        }
    } else if (res == BLITZ_EINTR) {
        res = 0; /* Linux releases the descriptor even then */
    } else if (res == 0 && (f->uf.op == BLITZ__UF_STAT || f->uf.op == BLITZ__UF_LSTAT ||
                            f->uf.op == BLITZ__UF_FSTAT)) {
        struct stat st;
        blitz__ufile_stat(&f->uf, &st);
        blitz__fs_fill_metadata(&f->md, &st);
    }
    if (again && blitz__fs_native_submit(cx, f) == BLITZ_OK)
        return 0;
    f->result = again ? BLITZ_EBUSY : res;
    return 1;
}

static blitz__fs_rec *blitz__fs_native_rec(blitz_fs_op *op) {
    blitz__fs_rec *f = (blitz__fs_rec *)op->blitz__op.rec;
    return f && f->native ? f : NULL;
}

/* A request that cannot reach the pool ends with `err`; a close runs
 * here instead: the caller has given the descriptor up (close(2) releases
 * it even when it fails), and a close that never ran would leak it. */
static blitz_poll blitz__fs_unstarted(blitz_fs_op *f, const blitz__fs_req *r, int err) {
    if (r->kind == BLITZ__FS_CLOSE)
        err = close(r->fd) == 0 || errno == EINTR ? 0 : blitz__fs_err();
    f->result = err;
    return BLITZ_READY;
}

/* The shared body of every public call: a new request starts the op, an
 * op in flight is polled. */
static blitz_poll blitz__fs_call(blitz_cx *cx, blitz_fs_op *f, const blitz__fs_req *r) {
    if (!f)
        return BLITZ_READY;
    blitz__pool_rec *done;
    blitz__fs_rec *nat = blitz__fs_native_rec(f);
    if (nat) {
        if (!blitz__ufile_done(&nat->uf) || !blitz__fs_native_finish(cx, nat))
            return blitz__pending(cx, blitz_fs_cancel, f);
        f->blitz__op.rec = NULL;
        if (!nat->native) {
            int rc;
            if (blitz__pool_op_start(cx, &f->blitz__op, &nat->base, &rc) == BLITZ_PENDING)
                return blitz__pending(cx, blitz_fs_cancel, f);
            f->result = rc;
            return BLITZ_READY;
        }
        blitz__fs_take(f, nat);
        return BLITZ_READY;
    }
    if (!blitz__pool_op_idle(&f->blitz__op)) {
        if (blitz__pool_op_poll(cx, &f->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_fs_cancel, f);
        blitz__fs_take(f, (blitz__fs_rec *)done);
        return BLITZ_READY;
    }
    f->data = NULL;
    if (!cx) {
        f->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__fs_rec *rec =
        (blitz__fs_rec *)blitz__pool_rec_new(sizeof *rec, blitz__fs_exec, blitz__fs_discard);
    if (!rec)
        return blitz__fs_unstarted(f, r, BLITZ_ENOMEM);
    int rc = blitz__fs_rec_fill(rec, r);
    if (rc != 0) {
        blitz__pool_rec_free(&rec->base);
        f->result = rc;
        return BLITZ_READY;
    }
    f->blitz__out = r->md ? (void *)r->md : (void *)(uintptr_t)r->buf;
    f->blitz__iov = r->iov;
    f->blitz__iovcnt = r->iovcnt;
    blitz_runtime *rt = blitz_cx_runtime(cx);
    rec->uf.op = blitz__fs_native_op(rt, rec);
    if (rec->uf.op) {
        rec->native = 1;
        rec->uf.discard = blitz__fs_native_discard;
        /* Tracked like a pool job's record: one its task never takes is
         * freed with the runtime. */
        blitz__pool_rec_track(rt, &rec->base);
        if (blitz__fs_native_submit(cx, rec) == BLITZ_OK) {
            f->blitz__op.rec = &rec->base;
            return blitz__pending(cx, blitz_fs_cancel, f);
        }
        rec->native = 0; /* the ring is full: a pool job after all */
    }
    if (blitz__pool_op_start(cx, &f->blitz__op, &rec->base, &rc) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_fs_cancel, f);
    return blitz__fs_unstarted(f, r, rc);
}

BLITZ_API void blitz_fs_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_fs_op *f = (blitz_fs_op *)p;
    if (!f)
        return;
    blitz__fs_rec *nat = blitz__fs_native_rec(f);
    if (nat) {
        /* The record (buffers, paths) stays the kernel's until its
         * completion, which frees it when it comes after this. */
        f->blitz__op.rec = NULL;
        if (blitz__ufile_cancel(&nat->uf)) {
            nat->result = nat->uf.res; /* an opened file is closed */
            blitz__pool_rec_free(&nat->base);
        }
        return;
    }
    blitz__pool_op_cancel(&f->blitz__op);
}

#endif /* BLITZ__HAS_IO */

/* Windows too: the work below the calls is fs_win32.c's there. */
#if BLITZ__HAS_IO || BLITZ__WIN32

/* ---- the public calls: one set of checks for every system --------------------------------- */

/* An argument error known before anything starts. */
static blitz_poll blitz__fs_fail(blitz_cx *cx, blitz_fs_op *f, int err) {
    if (f && blitz__pool_op_idle(&f->blitz__op)) {
        f->data = NULL;
        f->result = err;
        return BLITZ_READY;
    }
    blitz__fs_req none = blitz__fs_req_new(0);
    return blitz__fs_call(cx, f, &none);
}
BLITZ_API blitz_poll blitz_fs_open(blitz_cx *cx, blitz_fs_op *op, const char *path, int flags,
                                   uint32_t mode) {
    blitz__fs_req r = blitz__fs_req_new(BLITZ__FS_OPEN);
    int rc = path ? blitz__fs_open_flags(flags, &r.flags) : BLITZ_EINVAL;
    if (rc != 0)
        return blitz__fs_fail(cx, op, rc);
    r.mode = mode;
    r.path = path;
    return blitz__fs_call(cx, op, &r);
}

static blitz_poll blitz__fs_fd_call(blitz_cx *cx, blitz_fs_op *op, int kind, int fd) {
    if (fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.fd = fd;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_close(blitz_cx *cx, blitz_fs_op *op, int fd) {
    return blitz__fs_fd_call(cx, op, BLITZ__FS_CLOSE, fd);
}
BLITZ_API blitz_poll blitz_fs_fsync(blitz_cx *cx, blitz_fs_op *op, int fd) {
    return blitz__fs_fd_call(cx, op, BLITZ__FS_FSYNC, fd);
}
BLITZ_API blitz_poll blitz_fs_fdatasync(blitz_cx *cx, blitz_fs_op *op, int fd) {
    return blitz__fs_fd_call(cx, op, BLITZ__FS_FDATASYNC, fd);
}

static blitz_poll blitz__fs_io(blitz_cx *cx, blitz_fs_op *op, int kind, int fd, const void *buf,
                               size_t len, int64_t off) {
    if (fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    if (!buf && len)
        return blitz__fs_fail(cx, op, BLITZ_EFAULT);
    if (off < -1 || (len > (size_t)INT64_MAX))
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.fd = fd;
    r.buf = buf;
    r.len = len;
    r.off = off;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_read(blitz_cx *cx, blitz_fs_op *op, int fd, void *buf, size_t len) {
    return blitz__fs_io(cx, op, BLITZ__FS_READ, fd, buf, len, -1);
}
BLITZ_API blitz_poll blitz_fs_write(blitz_cx *cx, blitz_fs_op *op, int fd, const void *buf,
                                    size_t len) {
    return blitz__fs_io(cx, op, BLITZ__FS_WRITE, fd, buf, len, -1);
}
BLITZ_API blitz_poll blitz_fs_pread(blitz_cx *cx, blitz_fs_op *op, int fd, void *buf, size_t len,
                                    uint64_t offset) {
    if (offset > (uint64_t)INT64_MAX)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    return blitz__fs_io(cx, op, BLITZ__FS_PREAD, fd, buf, len, (int64_t)offset);
}
BLITZ_API blitz_poll blitz_fs_pwrite(blitz_cx *cx, blitz_fs_op *op, int fd, const void *buf,
                                     size_t len, uint64_t offset) {
    if (offset > (uint64_t)INT64_MAX)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    return blitz__fs_io(cx, op, BLITZ__FS_PWRITE, fd, buf, len, (int64_t)offset);
}

static blitz_poll blitz__fs_vec(blitz_cx *cx, blitz_fs_op *op, int kind, int fd,
                                const blitz_iovec *iov, int iovcnt, int64_t offset) {
    if (!iov || iovcnt <= 0 || iovcnt > BLITZ__FS_IOV_MAX || offset < -1)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    if (fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.fd = fd;
    r.iov = iov;
    r.iovcnt = iovcnt;
    r.off = offset;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_readv(blitz_cx *cx, blitz_fs_op *op, int fd, const blitz_iovec *iov,
                                    int iovcnt, int64_t offset) {
    return blitz__fs_vec(cx, op, BLITZ__FS_READV, fd, iov, iovcnt, offset);
}
BLITZ_API blitz_poll blitz_fs_writev(blitz_cx *cx, blitz_fs_op *op, int fd, const blitz_iovec *iov,
                                     int iovcnt, int64_t offset) {
    return blitz__fs_vec(cx, op, BLITZ__FS_WRITEV, fd, iov, iovcnt, offset);
}

BLITZ_API blitz_poll blitz_fs_truncate(blitz_cx *cx, blitz_fs_op *op, int fd, uint64_t length) {
    if (length > (uint64_t)INT64_MAX)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    if (fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    blitz__fs_req r = blitz__fs_req_new(BLITZ__FS_TRUNCATE);
    r.fd = fd;
    r.off = (int64_t)length;
    return blitz__fs_call(cx, op, &r);
}

static blitz_poll blitz__fs_stat_call(blitz_cx *cx, blitz_fs_op *op, int kind, const char *path,
                                      int fd, blitz_fs_metadata *out) {
    if (!out || (kind != BLITZ__FS_FSTAT && !path))
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    if (kind == BLITZ__FS_FSTAT && fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.fd = fd;
    r.md = out;
    r.path = path;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_stat(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                   blitz_fs_metadata *out) {
    return blitz__fs_stat_call(cx, op, BLITZ__FS_STAT, path, -1, out);
}
BLITZ_API blitz_poll blitz_fs_lstat(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                    blitz_fs_metadata *out) {
    return blitz__fs_stat_call(cx, op, BLITZ__FS_LSTAT, path, -1, out);
}
BLITZ_API blitz_poll blitz_fs_fstat(blitz_cx *cx, blitz_fs_op *op, int fd, blitz_fs_metadata *out) {
    return blitz__fs_stat_call(cx, op, BLITZ__FS_FSTAT, NULL, fd, out);
}

static blitz_poll blitz__fs_path_call(blitz_cx *cx, blitz_fs_op *op, int kind, const char *path,
                                      const char *path2, uint32_t mode) {
    if (!path ||
        ((kind == BLITZ__FS_RENAME || kind == BLITZ__FS_SYMLINK || kind == BLITZ__FS_LINK) &&
         !path2))
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    blitz__fs_req r = blitz__fs_req_new(kind);
    r.path = path;
    r.path2 = path2;
    r.mode = mode;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_rename(blitz_cx *cx, blitz_fs_op *op, const char *from,
                                     const char *to) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_RENAME, from, to, 0);
}
BLITZ_API blitz_poll blitz_fs_unlink(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_UNLINK, path, NULL, 0);
}
BLITZ_API blitz_poll blitz_fs_rmdir(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_RMDIR, path, NULL, 0);
}
BLITZ_API blitz_poll blitz_fs_mkdir(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                    uint32_t mode) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_MKDIR, path, NULL, mode);
}
BLITZ_API blitz_poll blitz_fs_mkdir_all(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                        uint32_t mode) {
    if (path && !*path)
        return blitz__fs_fail(cx, op, BLITZ_ENOENT);
    return blitz__fs_path_call(cx, op, BLITZ__FS_MKDIR_ALL, path, NULL, mode);
}
BLITZ_API blitz_poll blitz_fs_read_dir(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_READ_DIR, path, NULL, 0);
}
BLITZ_API blitz_poll blitz_fs_read_file_limit(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                              size_t max) {
    if (!path)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    blitz__fs_req r = blitz__fs_req_new(BLITZ__FS_READ_FILE);
    r.path = path;
    r.len = max; /* the most bytes it may have */
    return blitz__fs_call(cx, op, &r);
}
BLITZ_API blitz_poll blitz_fs_read_file(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    return blitz_fs_read_file_limit(cx, op, path, SIZE_MAX);
}
BLITZ_API blitz_poll blitz_fs_write_file(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                         const void *data, size_t len) {
    if (!path)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    if (!data && len)
        return blitz__fs_fail(cx, op, BLITZ_EFAULT);
    blitz__fs_req r = blitz__fs_req_new(BLITZ__FS_WRITE_FILE);
    r.path = path;
    r.buf = data;
    r.len = len;
    return blitz__fs_call(cx, op, &r);
}

BLITZ_API blitz_poll blitz_fs_symlink(blitz_cx *cx, blitz_fs_op *op, const char *target,
                                      const char *linkpath) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_SYMLINK, target, linkpath, 0);
}
BLITZ_API blitz_poll blitz_fs_link(blitz_cx *cx, blitz_fs_op *op, const char *from,
                                   const char *to) {
    return blitz__fs_path_call(cx, op, BLITZ__FS_LINK, from, to, 0);
}
BLITZ_API blitz_poll blitz_fs_fallocate(blitz_cx *cx, blitz_fs_op *op, int fd, uint64_t offset,
                                        uint64_t len) {
    if (offset > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX || len == 0)
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    if (fd < 0)
        return blitz__fs_fail(cx, op, BLITZ_EBADF);
    blitz__fs_req r = blitz__fs_req_new(BLITZ__FS_FALLOCATE);
    r.fd = fd;
    r.off = (int64_t)offset;
    r.len = (size_t)len;
    return blitz__fs_call(cx, op, &r);
}

/* ---- file ops as values ------------------------------------------------------------------- */

/* The call a constructor recorded (the public calls read their arguments
 * at the first poll only). */
enum {
    BLITZ__FSC_OPEN = 1,
    BLITZ__FSC_CLOSE,
    BLITZ__FSC_READ,
    BLITZ__FSC_WRITE,
    BLITZ__FSC_PREAD,
    BLITZ__FSC_PWRITE,
    BLITZ__FSC_FSYNC,
    BLITZ__FSC_READ_FILE,
    BLITZ__FSC_WRITE_FILE,
    BLITZ__FSC_READV,
    BLITZ__FSC_WRITEV,
    BLITZ__FSC_FDATASYNC,
    BLITZ__FSC_TRUNCATE,
    BLITZ__FSC_STAT,
    BLITZ__FSC_LSTAT,
    BLITZ__FSC_FSTAT,
    BLITZ__FSC_RENAME,
    BLITZ__FSC_UNLINK,
    BLITZ__FSC_RMDIR,
    BLITZ__FSC_MKDIR,
    BLITZ__FSC_MKDIR_ALL,
    BLITZ__FSC_READ_DIR,
    BLITZ__FSC_SYMLINK,
    BLITZ__FSC_LINK,
    BLITZ__FSC_FALLOCATE
};

/* The vectored calls' signed offset (-1: the file position), kept in the
 * unsigned offset field. */
static int64_t blitz__fs_signed(uint64_t v) {
    return v <= (uint64_t)INT64_MAX ? (int64_t)v : -(int64_t)~v - 1;
}

static blitz_poll blitz__fs_value_poll(blitz_cx *cx, void *arg) {
    blitz_fs_op *op = (blitz_fs_op *)arg;
    if (!op)
        return BLITZ_READY;
    void *buf = (void *)(uintptr_t)op->blitz__buf;
    switch (op->blitz__call) {
    case BLITZ__FSC_OPEN:
        return blitz_fs_open(cx, op, op->blitz__path, op->blitz__flags, op->blitz__mode);
    case BLITZ__FSC_CLOSE:
        return blitz_fs_close(cx, op, op->blitz__fd);
    case BLITZ__FSC_READ:
        return blitz_fs_read(cx, op, op->blitz__fd, buf, op->blitz__len);
    case BLITZ__FSC_WRITE:
        return blitz_fs_write(cx, op, op->blitz__fd, buf, op->blitz__len);
    case BLITZ__FSC_PREAD:
        return blitz_fs_pread(cx, op, op->blitz__fd, buf, op->blitz__len, op->blitz__off);
    case BLITZ__FSC_PWRITE:
        return blitz_fs_pwrite(cx, op, op->blitz__fd, buf, op->blitz__len, op->blitz__off);
    case BLITZ__FSC_FSYNC:
        return blitz_fs_fsync(cx, op, op->blitz__fd);
    case BLITZ__FSC_READ_FILE:
        return blitz_fs_read_file(cx, op, op->blitz__path);
    case BLITZ__FSC_WRITE_FILE:
        return blitz_fs_write_file(cx, op, op->blitz__path, buf, op->blitz__len);
    case BLITZ__FSC_READV:
        return blitz_fs_readv(cx, op, op->blitz__fd, op->blitz__vec, op->blitz__nvec,
                              blitz__fs_signed(op->blitz__off));
    case BLITZ__FSC_WRITEV:
        return blitz_fs_writev(cx, op, op->blitz__fd, op->blitz__vec, op->blitz__nvec,
                               blitz__fs_signed(op->blitz__off));
    case BLITZ__FSC_FDATASYNC:
        return blitz_fs_fdatasync(cx, op, op->blitz__fd);
    case BLITZ__FSC_TRUNCATE:
        return blitz_fs_truncate(cx, op, op->blitz__fd, op->blitz__off);
    case BLITZ__FSC_STAT:
        return blitz_fs_stat(cx, op, op->blitz__path, op->blitz__md);
    case BLITZ__FSC_LSTAT:
        return blitz_fs_lstat(cx, op, op->blitz__path, op->blitz__md);
    case BLITZ__FSC_FSTAT:
        return blitz_fs_fstat(cx, op, op->blitz__fd, op->blitz__md);
    case BLITZ__FSC_RENAME:
        return blitz_fs_rename(cx, op, op->blitz__path, op->blitz__path2);
    case BLITZ__FSC_UNLINK:
        return blitz_fs_unlink(cx, op, op->blitz__path);
    case BLITZ__FSC_RMDIR:
        return blitz_fs_rmdir(cx, op, op->blitz__path);
    case BLITZ__FSC_MKDIR:
        return blitz_fs_mkdir(cx, op, op->blitz__path, op->blitz__mode);
    case BLITZ__FSC_MKDIR_ALL:
        return blitz_fs_mkdir_all(cx, op, op->blitz__path, op->blitz__mode);
    case BLITZ__FSC_READ_DIR:
        return blitz_fs_read_dir(cx, op, op->blitz__path);
    case BLITZ__FSC_SYMLINK:
        return blitz_fs_symlink(cx, op, op->blitz__path, op->blitz__path2);
    case BLITZ__FSC_LINK:
        return blitz_fs_link(cx, op, op->blitz__path, op->blitz__path2);
    case BLITZ__FSC_FALLOCATE:
        return blitz_fs_fallocate(cx, op, op->blitz__fd, op->blitz__off, op->blitz__len);
    default:
        return blitz__fs_fail(cx, op, BLITZ_EINVAL);
    }
}

/* The arguments of a value form, kept in the op and read at each poll
 * (the flags and mode, where a call has them, are set apart). */
BLITZ_PRIVATE void blitz__fs_value_set(blitz_fs_op *op, int call, int fd, const char *path,
                                       const char *path2, const void *buf, size_t len, uint64_t off,
                                       int64_t off2) {
    op->blitz__call = call;
    op->blitz__fd = fd;
    op->blitz__path = path;
    op->blitz__path2 = path2;
    op->blitz__buf = buf;
    op->blitz__len = len;
    op->blitz__off = off;
    op->blitz__off2 = off2;
    op->blitz__vec = NULL;
    op->blitz__nvec = 0;
    op->blitz__md = NULL;
}

static blitz_op blitz__fs_value(blitz_fs_op *op, int call, int fd, const char *path,
                                const void *buf, size_t len, uint64_t off) {
    if (op)
        blitz__fs_value_set(op, call, fd, path, NULL, buf, len, off, 0);
    return blitz_op_make(blitz__fs_value_poll, blitz_fs_cancel, op);
}

BLITZ_API blitz_op blitz_op_fs_open(blitz_fs_op *op, const char *path, int flags, uint32_t mode) {
    if (op) {
        op->blitz__flags = flags;
        op->blitz__mode = mode;
    }
    return blitz__fs_value(op, BLITZ__FSC_OPEN, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_close(blitz_fs_op *op, int fd) {
    return blitz__fs_value(op, BLITZ__FSC_CLOSE, fd, NULL, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_read(blitz_fs_op *op, int fd, void *buf, size_t len) {
    return blitz__fs_value(op, BLITZ__FSC_READ, fd, NULL, buf, len, 0);
}
BLITZ_API blitz_op blitz_op_fs_write(blitz_fs_op *op, int fd, const void *buf, size_t len) {
    return blitz__fs_value(op, BLITZ__FSC_WRITE, fd, NULL, buf, len, 0);
}
BLITZ_API blitz_op blitz_op_fs_pread(blitz_fs_op *op, int fd, void *buf, size_t len,
                                     uint64_t offset) {
    return blitz__fs_value(op, BLITZ__FSC_PREAD, fd, NULL, buf, len, offset);
}
BLITZ_API blitz_op blitz_op_fs_pwrite(blitz_fs_op *op, int fd, const void *buf, size_t len,
                                      uint64_t offset) {
    return blitz__fs_value(op, BLITZ__FSC_PWRITE, fd, NULL, buf, len, offset);
}
BLITZ_API blitz_op blitz_op_fs_fsync(blitz_fs_op *op, int fd) {
    return blitz__fs_value(op, BLITZ__FSC_FSYNC, fd, NULL, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_read_file(blitz_fs_op *op, const char *path) {
    return blitz__fs_value(op, BLITZ__FSC_READ_FILE, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_write_file(blitz_fs_op *op, const char *path, const void *data,
                                          size_t len) {
    return blitz__fs_value(op, BLITZ__FSC_WRITE_FILE, -1, path, data, len, 0);
}

static blitz_op blitz__fs_vec_value(blitz_fs_op *op, int call, int fd, const blitz_iovec *iov,
                                    int iovcnt, int64_t offset) {
    blitz_op v = blitz__fs_value(op, call, fd, NULL, NULL, 0, (uint64_t)offset);
    if (op) {
        op->blitz__vec = iov;
        op->blitz__nvec = iovcnt;
    }
    return v;
}
BLITZ_API blitz_op blitz_op_fs_readv(blitz_fs_op *op, int fd, const blitz_iovec *iov, int iovcnt,
                                     int64_t offset) {
    return blitz__fs_vec_value(op, BLITZ__FSC_READV, fd, iov, iovcnt, offset);
}
BLITZ_API blitz_op blitz_op_fs_writev(blitz_fs_op *op, int fd, const blitz_iovec *iov, int iovcnt,
                                      int64_t offset) {
    return blitz__fs_vec_value(op, BLITZ__FSC_WRITEV, fd, iov, iovcnt, offset);
}
BLITZ_API blitz_op blitz_op_fs_fdatasync(blitz_fs_op *op, int fd) {
    return blitz__fs_value(op, BLITZ__FSC_FDATASYNC, fd, NULL, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_truncate(blitz_fs_op *op, int fd, uint64_t length) {
    return blitz__fs_value(op, BLITZ__FSC_TRUNCATE, fd, NULL, NULL, 0, length);
}

static blitz_op blitz__fs_stat_value(blitz_fs_op *op, int call, int fd, const char *path,
                                     blitz_fs_metadata *out) {
    blitz_op v = blitz__fs_value(op, call, fd, path, NULL, 0, 0);
    if (op)
        op->blitz__md = out;
    return v;
}
BLITZ_API blitz_op blitz_op_fs_stat(blitz_fs_op *op, const char *path, blitz_fs_metadata *out) {
    return blitz__fs_stat_value(op, BLITZ__FSC_STAT, -1, path, out);
}
BLITZ_API blitz_op blitz_op_fs_lstat(blitz_fs_op *op, const char *path, blitz_fs_metadata *out) {
    return blitz__fs_stat_value(op, BLITZ__FSC_LSTAT, -1, path, out);
}
BLITZ_API blitz_op blitz_op_fs_fstat(blitz_fs_op *op, int fd, blitz_fs_metadata *out) {
    return blitz__fs_stat_value(op, BLITZ__FSC_FSTAT, fd, NULL, out);
}

BLITZ_API blitz_op blitz_op_fs_rename(blitz_fs_op *op, const char *from, const char *to) {
    blitz_op v = blitz__fs_value(op, BLITZ__FSC_RENAME, -1, from, NULL, 0, 0);
    if (op)
        op->blitz__path2 = to;
    return v;
}
BLITZ_API blitz_op blitz_op_fs_unlink(blitz_fs_op *op, const char *path) {
    return blitz__fs_value(op, BLITZ__FSC_UNLINK, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_rmdir(blitz_fs_op *op, const char *path) {
    return blitz__fs_value(op, BLITZ__FSC_RMDIR, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_mkdir(blitz_fs_op *op, const char *path, uint32_t mode) {
    if (op)
        op->blitz__mode = mode;
    return blitz__fs_value(op, BLITZ__FSC_MKDIR, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_mkdir_all(blitz_fs_op *op, const char *path, uint32_t mode) {
    if (op)
        op->blitz__mode = mode;
    return blitz__fs_value(op, BLITZ__FSC_MKDIR_ALL, -1, path, NULL, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_read_dir(blitz_fs_op *op, const char *path) {
    return blitz__fs_value(op, BLITZ__FSC_READ_DIR, -1, path, NULL, 0, 0);
}
static blitz_op blitz__fs_two_paths(blitz_fs_op *op, int call, const char *a, const char *b) {
    blitz_op v = blitz__fs_value(op, call, -1, a, NULL, 0, 0);
    if (op)
        op->blitz__path2 = b;
    return v;
}
BLITZ_API blitz_op blitz_op_fs_symlink(blitz_fs_op *op, const char *target, const char *linkpath) {
    return blitz__fs_two_paths(op, BLITZ__FSC_SYMLINK, target, linkpath);
}
BLITZ_API blitz_op blitz_op_fs_link(blitz_fs_op *op, const char *from, const char *to) {
    return blitz__fs_two_paths(op, BLITZ__FSC_LINK, from, to);
}
BLITZ_API blitz_op blitz_op_fs_fallocate(blitz_fs_op *op, int fd, uint64_t offset, uint64_t len) {
    return blitz__fs_value(op, BLITZ__FSC_FALLOCATE, fd, NULL, NULL, (size_t)len, offset);
}

#endif /* BLITZ__HAS_IO || BLITZ__WIN32 */
