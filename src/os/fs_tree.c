/* Operations on whole files and trees: temporary files and directories,
 * copying a file, removing a tree. Long work (a copy, a removal) checks
 * between steps whether its task gave up, and stops there: a cancelled
 * copy leaves a partial destination, a cancelled removal part of the
 * tree, as an interrupted cp or rm would. The naming of temporary files
 * and the front ends are every system's; the POSIX work is here,
 * Windows's in fs_ext_win32.c. */
#include "../io/io.h"
#if BLITZ__HAS_IO || BLITZ__WIN32

#define BLITZ__FST_CHUNK ((size_t)1 << 20) /* bytes copied between give-up checks */
#define BLITZ__FST_BUF   ((size_t)64 * 1024)

/* ---- temporary files ---------------------------------------------------------------- */

/* The template's trailing XXXXXX are replaced by random letters until a
 * name is free: the exclusive creation (O_EXCL, mkdir; CREATE_NEW) makes
 * it atomic, and a file's descriptor is not inherited from the start,
 * which mkstemp cannot promise portably. */
static const char blitz__fst_letters[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

static int64_t blitz__fst_temp(blitz__fsx_rec *r, int dir) {
    size_t len = strlen(r->path);
    char *name = (char *)blitz__malloc(len + 1);
    if (!name)
        return BLITZ_ENOMEM;
    memcpy(name, r->path, len + 1);
    /* Names need only be unlikely to collide: a taken one is retried. */
    uint64_t x = blitz__now_ns() ^ ((uint64_t)(uintptr_t)name << 16) ^ (uint64_t)(uintptr_t)&len;
    int64_t rc = BLITZ_EEXIST;
    for (int attempt = 0; attempt < 1000 && rc == BLITZ_EEXIST; attempt++) {
        for (size_t i = len - 6; i < len; i++) {
            x ^= x << 13; /* xorshift64 */
            x ^= x >> 7;
            x ^= x << 17;
            name[i] = blitz__fst_letters[x % (sizeof blitz__fst_letters - 1)];
        }
        rc = blitz__fst_create(name, dir);
    }
    if (rc < 0) {
        blitz__free(name);
        return rc;
    }
    r->data = name;
    return rc;
}

/* A temporary file or directory the caller never learnt the name of. */
static void blitz__fst_temp_undo(blitz__fsx_rec *r) {
    if (r->result >= 0 && r->data)
        blitz__fst_remove_made((const char *)r->data, r->how, r->how ? -1 : (int)r->result);
}

static int64_t blitz__fst_mkstemp(blitz__fsx_rec *r) {
    r->undo = blitz__fst_temp_undo;
    return blitz__fst_temp(r, 0);
}

static int64_t blitz__fst_mkdtemp(blitz__fsx_rec *r) {
    r->undo = blitz__fst_temp_undo;
    int64_t rc = blitz__fst_temp(r, 1);
    return rc < 0 ? rc : 0;
}

#if !BLITZ__WIN32

static int64_t blitz__fst_create(const char *name, int dir) {
    if (dir)
        return mkdir(name, 0700) == 0 ? 0 : blitz__fsx_errno();
    int fd;
    do
        fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    while (fd < 0 && errno == EINTR);
    return fd >= 0 ? fd : blitz__fsx_errno();
}

static void blitz__fst_remove_made(const char *name, int dir, int fd) {
    if (dir) {
        rmdir(name);
    } else {
        close(fd);
        unlink(name);
    }
}

/* ---- copy --------------------------------------------------------------------------- */

static int64_t blitz__fst_copy_loop(blitz__fsx_rec *r, int in, int out, int kernel) {
    char *buf = NULL;
    int64_t total = 0;
    for (;;) {
        if (blitz__fsx_give_up(r)) {
            total = BLITZ_ECANCELED;
            break;
        }
        int64_t n;
        if (kernel) {
            n = blitz__file_copy_range(in, out, BLITZ__FST_CHUNK);
            if (n == BLITZ_EINTR)
                continue;
            /* Nothing copied yet and the kernel cannot do it here (no
             * system call, across file systems, a special file), or it
             * found nothing, as it does for /proc files whose size reads
             * 0: copy through memory instead. */
            if (total == 0 && (n == BLITZ_ENOSYS || n == BLITZ_EXDEV || n == BLITZ_EINVAL ||
                               n == BLITZ_EOPNOTSUPP || n == BLITZ_EPERM || n == 0)) {
                kernel = 0;
                continue;
            }
        } else {
            if (!buf && !(buf = (char *)blitz__malloc(BLITZ__FST_BUF))) {
                total = BLITZ_ENOMEM;
                break;
            }
            n = 0;
            for (size_t chunk = 0; chunk < BLITZ__FST_CHUNK;) {
                ssize_t got = read(in, buf, BLITZ__FST_BUF);
                if (got < 0 && errno == EINTR)
                    continue;
                if (got < 0) {
                    n = blitz__fsx_errno();
                    break;
                }
                if (got == 0)
                    break;
                int64_t w = blitz__fs_write_all(out, buf, (size_t)got, -1);
                if (w < 0) {
                    n = w;
                    break;
                }
                n += got;
                chunk += (size_t)got;
            }
        }
        if (n < 0) {
            total = n;
            break;
        }
        if (n == 0)
            break;
        total += n;
    }
    blitz__free(buf);
    return total;
}

static int blitz__fst_open(const char *path, int flags, mode_t mode) {
    int fd;
    do
        fd = open(path, flags | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    return fd;
}

static int64_t blitz__fst_copy(blitz__fsx_rec *r) {
    int in = blitz__fst_open(r->path, O_RDONLY, 0);
    if (in < 0)
        return blitz__fsx_errno();
    struct stat st, ost;
    int64_t rc = 0;
    int out = -1;
    if (fstat(in, &st) != 0)
        rc = blitz__fsx_errno();
    else if (S_ISDIR(st.st_mode))
        rc = BLITZ_EISDIR;
    /* Not truncated at open: the destination may be the source itself. */
    else if ((out = blitz__fst_open(r->path2, O_WRONLY | O_CREAT, (mode_t)(st.st_mode & 0777))) < 0)
        rc = blitz__fsx_errno();
    else if (fstat(out, &ost) != 0)
        rc = blitz__fsx_errno();
    else if (ost.st_dev == st.st_dev && ost.st_ino == st.st_ino)
        rc = BLITZ_EINVAL;
    else if (S_ISREG(ost.st_mode) && ftruncate(out, 0) != 0)
        rc = blitz__fsx_errno();
    if (rc == 0) {
        int regular = S_ISREG(st.st_mode) && S_ISREG(ost.st_mode);
        if (regular && blitz__file_clone(in, out) == 0)
            rc = st.st_size;
        else
            rc = blitz__fst_copy_loop(r, in, out, regular);
        /* The source's permissions, which the umask may have cut. */
        if (rc >= 0 && S_ISREG(ost.st_mode) && fchmod(out, st.st_mode & 07777) != 0)
            rc = blitz__fsx_errno();
    }
    if (out >= 0 && close(out) != 0 && rc >= 0 && errno != EINTR)
        rc = blitz__fsx_errno();
    close(in);
    return rc;
}

/* ---- remove a tree ------------------------------------------------------------------ */

/* Empties the directory `fd` (owned: closed here) entry by entry, going
 * into subdirectories through descriptors opened with O_NOFOLLOW, so a
 * symlink is removed and never followed, even one swapped in for a
 * directory while this runs. An entry that vanished meanwhile is fine. */
static int64_t blitz__fst_empty_dir(blitz__fsx_rec *r, int fd) {
    DIR *d = fdopendir(fd);
    if (!d) {
        int64_t rc = blitz__fsx_errno();
        close(fd);
        return rc;
    }
    int64_t rc = 0;
    for (;;) {
        if (blitz__fsx_give_up(r)) {
            rc = BLITZ_ECANCELED;
            break;
        }
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno)
                rc = blitz__fsx_errno();
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(fd, e->d_name, 0) == 0 || errno == ENOENT)
            continue;
        /* Linux says EISDIR for a directory, others EPERM. */
        if (errno != EISDIR && errno != EPERM) {
            rc = blitz__fsx_errno();
            break;
        }
        int sub;
        do
            sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        while (sub < 0 && errno == EINTR);
        if (sub < 0) {
            rc = errno == ENOENT ? 0 : blitz__fsx_errno();
            if (rc)
                break;
            continue;
        }
        if ((rc = blitz__fst_empty_dir(r, sub)) != 0)
            break;
        if (unlinkat(fd, e->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
            rc = blitz__fsx_errno();
            break;
        }
    }
    closedir(d);
    return rc;
}

static int64_t blitz__fst_remove_all(blitz__fsx_rec *r) {
    struct stat st;
    if (lstat(r->path, &st) != 0)
        return blitz__fsx_errno();
    if (!S_ISDIR(st.st_mode))
        return unlink(r->path) == 0 ? 0 : blitz__fsx_errno();
    int fd;
    do
        fd = open(r->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return blitz__fsx_errno();
    int64_t rc = blitz__fst_empty_dir(r, fd);
    if (rc == 0 && rmdir(r->path) != 0)
        rc = blitz__fsx_errno();
    return rc;
}

#endif /* !BLITZ__WIN32 */

/* ---- public calls ------------------------------------------------------------------- */

static int blitz__fst_template_ok(const char *t) {
    size_t n = t ? strlen(t) : 0;
    return n >= 6 && strcmp(t + n - 6, "XXXXXX") == 0;
}

BLITZ_API blitz_poll blitz_fs_mkstemp(blitz_cx *cx, blitz_fs_op *op, const char *template_path) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fst_mkstemp);
    q.path = template_path;
    return blitz__fsx_call(cx, op, &q, blitz__fst_template_ok(template_path) ? 0 : BLITZ_EINVAL);
}
BLITZ_API blitz_poll blitz_fs_mkdtemp(blitz_cx *cx, blitz_fs_op *op, const char *template_path) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fst_mkdtemp);
    q.path = template_path;
    q.how = 1;
    return blitz__fsx_call(cx, op, &q, blitz__fst_template_ok(template_path) ? 0 : BLITZ_EINVAL);
}
BLITZ_API blitz_poll blitz_fs_copy_file(blitz_cx *cx, blitz_fs_op *op, const char *from,
                                        const char *to) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fst_copy);
    q.path = from;
    q.path2 = to;
    return blitz__fsx_call(cx, op, &q, from && to ? 0 : BLITZ_EINVAL);
}
BLITZ_API blitz_poll blitz_fs_remove_all(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fst_remove_all);
    q.path = path;
    return blitz__fsx_call(cx, op, &q, !path ? BLITZ_EINVAL : !*path ? BLITZ_ENOENT : 0);
}

/* ---- the value forms ---------------------------------------------------------------- */

enum { BLITZ__FST_MKSTEMP = 201, BLITZ__FST_MKDTEMP, BLITZ__FST_COPY, BLITZ__FST_REMOVE_ALL };

static blitz_poll blitz__fst_value_poll(blitz_cx *cx, void *arg) {
    blitz_fs_op *op = (blitz_fs_op *)arg;
    if (!op)
        return BLITZ_READY;
    switch (op->blitz__call) {
    case BLITZ__FST_MKSTEMP:
        return blitz_fs_mkstemp(cx, op, op->blitz__path);
    case BLITZ__FST_MKDTEMP:
        return blitz_fs_mkdtemp(cx, op, op->blitz__path);
    case BLITZ__FST_COPY:
        return blitz_fs_copy_file(cx, op, op->blitz__path, op->blitz__path2);
    case BLITZ__FST_REMOVE_ALL:
        return blitz_fs_remove_all(cx, op, op->blitz__path);
    default:
        return blitz__fsx_call(cx, op, NULL, BLITZ_EINVAL);
    }
}

static blitz_op blitz__fst_value(blitz_fs_op *op, int call, const char *path, const char *path2) {
    blitz__fsx_value_set(op, call, -1, path, path2, 0, 0, 0);
    return blitz_op_make(blitz__fst_value_poll, blitz_fs_cancel, op);
}

BLITZ_API blitz_op blitz_op_fs_mkstemp(blitz_fs_op *op, const char *template_path) {
    return blitz__fst_value(op, BLITZ__FST_MKSTEMP, template_path, NULL);
}
BLITZ_API blitz_op blitz_op_fs_mkdtemp(blitz_fs_op *op, const char *template_path) {
    return blitz__fst_value(op, BLITZ__FST_MKDTEMP, template_path, NULL);
}
BLITZ_API blitz_op blitz_op_fs_copy_file(blitz_fs_op *op, const char *from, const char *to) {
    return blitz__fst_value(op, BLITZ__FST_COPY, from, to);
}
BLITZ_API blitz_op blitz_op_fs_remove_all(blitz_fs_op *op, const char *path) {
    return blitz__fst_value(op, BLITZ__FST_REMOVE_ALL, path, NULL);
}

#endif /* BLITZ__HAS_IO || BLITZ__WIN32 */
