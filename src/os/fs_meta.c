/* File positions, permissions, owners, times, access checks, links read
 * back, canonical paths, file-system figures and size-limited whole-file
 * reads: each one system call (or a short loop of them) on a pool thread,
 * through fs_job.c's record. The POSIX work is here; Windows's is in
 * fs_ext_win32.c. */
#include "../io/io.h"
#if BLITZ__HAS_IO || BLITZ__WIN32

#if !BLITZ__WIN32

static int64_t blitz__fsm_seek(blitz__fsx_rec *r) {
    off_t at = lseek(r->fd, (off_t)r->a, r->how);
    return at < 0 ? blitz__fsx_errno() : (int64_t)at;
}

static int64_t blitz__fsm_chmod(blitz__fsx_rec *r) {
    int rc = r->path ? chmod(r->path, (mode_t)r->mode) : fchmod(r->fd, (mode_t)r->mode);
    return rc == 0 ? 0 : blitz__fsx_errno();
}

static int64_t blitz__fsm_chown(blitz__fsx_rec *r) {
    uid_t u = r->uid == BLITZ_FS_ID_KEEP ? (uid_t)-1 : (uid_t)r->uid;
    gid_t g = r->gid == BLITZ_FS_ID_KEEP ? (gid_t)-1 : (gid_t)r->gid;
    int rc = r->path ? chown(r->path, u, g) : fchown(r->fd, u, g);
    return rc == 0 ? 0 : blitz__fsx_errno();
}

static struct timespec blitz__fsm_time(int64_t ns) {
    struct timespec ts;
    ts.tv_sec = 0;
    if (ns == BLITZ_FS_TIME_NOW) {
        ts.tv_nsec = UTIME_NOW;
    } else if (ns == BLITZ_FS_TIME_KEEP) {
        ts.tv_nsec = UTIME_OMIT;
    } else {
        ts.tv_sec = (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
    }
    return ts;
}

static int64_t blitz__fsm_utimes(blitz__fsx_rec *r) {
    struct timespec ts[2];
    ts[0] = blitz__fsm_time(r->a);
    ts[1] = blitz__fsm_time(r->b);
    int rc = r->path ? utimensat(AT_FDCWD, r->path, ts, 0) : futimens(r->fd, ts);
    return rc == 0 ? 0 : blitz__fsx_errno();
}

static int64_t blitz__fsm_access(blitz__fsx_rec *r) {
    int how = r->how == BLITZ_FS_EXISTS ? F_OK : 0;
    if (r->how & BLITZ_FS_CAN_READ)
        how |= R_OK;
    if (r->how & BLITZ_FS_CAN_WRITE)
        how |= W_OK;
    if (r->how & BLITZ_FS_CAN_EXEC)
        how |= X_OK;
    /* The effective ids: whether this process could open it now. */
    return faccessat(AT_FDCWD, r->path, how, AT_EACCESS) == 0 ? 0 : blitz__fsx_errno();
}

/* readlink does not say how long the target is: a buffer it fills
 * completely may have cut it, so grow and ask again. */
static int64_t blitz__fsm_readlink(blitz__fsx_rec *r) {
    for (size_t cap = 256;; cap *= 2) {
        char *buf = (char *)blitz__malloc(cap);
        if (!buf)
            return BLITZ_ENOMEM;
        ssize_t n = readlink(r->path, buf, cap);
        if (n < 0) {
            int64_t rc = blitz__fsx_errno();
            blitz__free(buf);
            return rc;
        }
        if ((size_t)n < cap) {
            buf[n] = '\0';
            r->data = buf;
            return (int64_t)n;
        }
        blitz__free(buf);
        if (cap > SIZE_MAX / 4)
            return BLITZ_ENAMETOOLONG;
    }
}

static int64_t blitz__fsm_realpath(blitz__fsx_rec *r) {
    char *p = realpath(r->path, NULL); /* libc's malloc: copied onto blitz's */
    if (!p)
        return blitz__fsx_errno();
    size_t n = strlen(p);
    char *copy = (char *)blitz__malloc(n + 1);
    if (copy)
        memcpy(copy, p, n + 1);
    free(p);
    if (!copy)
        return BLITZ_ENOMEM;
    r->data = copy;
    return (int64_t)n;
}

static int64_t blitz__fsm_statfs(blitz__fsx_rec *r) {
    struct statvfs v;
    if (statvfs(r->path, &v) != 0)
        return blitz__fsx_errno();
    r->info.block_size = (uint64_t)(v.f_frsize ? v.f_frsize : v.f_bsize);
    r->info.blocks = (uint64_t)v.f_blocks;
    r->info.blocks_free = (uint64_t)v.f_bfree;
    r->info.blocks_avail = (uint64_t)v.f_bavail;
    r->info.files = (uint64_t)v.f_files;
    r->info.files_free = (uint64_t)v.f_ffree;
    r->info.name_max = (uint64_t)v.f_namemax;
    return 0;
}
#endif /* !BLITZ__WIN32 */

/* ---- public calls ------------------------------------------------------------------- */

BLITZ_API blitz_poll blitz_fs_seek(blitz_cx *cx, blitz_fs_op *op, int fd, int64_t offset,
                                   int whence) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_seek);
    q.fd = fd;
    q.a = offset;
    q.how = whence == BLITZ_SEEK_SET   ? SEEK_SET
            : whence == BLITZ_SEEK_CUR ? SEEK_CUR
            : whence == BLITZ_SEEK_END ? SEEK_END
                                       : -1;
    int err = fd < 0 ? BLITZ_EBADF : q.how < 0 ? BLITZ_EINVAL : 0;
    return blitz__fsx_call(cx, op, &q, err);
}

static blitz_poll blitz__fsm_path_call(blitz_cx *cx, blitz_fs_op *op, blitz__fsx_rec *q,
                                       const char *path) {
    q->path = path;
    return blitz__fsx_call(cx, op, q, path ? 0 : BLITZ_EINVAL);
}

static blitz_poll blitz__fsm_fd_call(blitz_cx *cx, blitz_fs_op *op, blitz__fsx_rec *q, int fd) {
    q->fd = fd;
    return blitz__fsx_call(cx, op, q, fd < 0 ? BLITZ_EBADF : 0);
}

BLITZ_API blitz_poll blitz_fs_chmod(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                    uint32_t mode) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_chmod);
    q.mode = mode & 07777;
    return blitz__fsm_path_call(cx, op, &q, path);
}
BLITZ_API blitz_poll blitz_fs_fchmod(blitz_cx *cx, blitz_fs_op *op, int fd, uint32_t mode) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_chmod);
    q.mode = mode & 07777;
    return blitz__fsm_fd_call(cx, op, &q, fd);
}

BLITZ_API blitz_poll blitz_fs_chown(blitz_cx *cx, blitz_fs_op *op, const char *path, uint32_t uid,
                                    uint32_t gid) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_chown);
    q.uid = uid;
    q.gid = gid;
    return blitz__fsm_path_call(cx, op, &q, path);
}
BLITZ_API blitz_poll blitz_fs_fchown(blitz_cx *cx, blitz_fs_op *op, int fd, uint32_t uid,
                                     uint32_t gid) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_chown);
    q.uid = uid;
    q.gid = gid;
    return blitz__fsm_fd_call(cx, op, &q, fd);
}

static int blitz__fsm_time_ok(int64_t ns) {
    return ns >= 0 || ns == BLITZ_FS_TIME_NOW || ns == BLITZ_FS_TIME_KEEP;
}

BLITZ_API blitz_poll blitz_fs_utimes(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                     int64_t atime_ns, int64_t mtime_ns) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_utimes);
    q.a = atime_ns;
    q.b = mtime_ns;
    q.path = path;
    int err = !path || !blitz__fsm_time_ok(atime_ns) || !blitz__fsm_time_ok(mtime_ns);
    return blitz__fsx_call(cx, op, &q, err ? BLITZ_EINVAL : 0);
}
BLITZ_API blitz_poll blitz_fs_futimes(blitz_cx *cx, blitz_fs_op *op, int fd, int64_t atime_ns,
                                      int64_t mtime_ns) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_utimes);
    q.a = atime_ns;
    q.b = mtime_ns;
    q.fd = fd;
    int err = fd < 0                                                           ? BLITZ_EBADF
              : !blitz__fsm_time_ok(atime_ns) || !blitz__fsm_time_ok(mtime_ns) ? BLITZ_EINVAL
                                                                               : 0;
    return blitz__fsx_call(cx, op, &q, err);
}

BLITZ_API blitz_poll blitz_fs_access(blitz_cx *cx, blitz_fs_op *op, const char *path, int how) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_access);
    q.how = how;
    q.path = path;
    int all = BLITZ_FS_CAN_READ | BLITZ_FS_CAN_WRITE | BLITZ_FS_CAN_EXEC;
    return blitz__fsx_call(cx, op, &q, !path || (how & ~all) ? BLITZ_EINVAL : 0);
}

BLITZ_API blitz_poll blitz_fs_readlink(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_readlink);
    return blitz__fsm_path_call(cx, op, &q, path);
}
BLITZ_API blitz_poll blitz_fs_realpath(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_realpath);
    return blitz__fsm_path_call(cx, op, &q, path);
}

BLITZ_API blitz_poll blitz_fs_statfs(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                     blitz_fs_fsinfo *out) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsm_statfs);
    q.path = path;
    q.info_out = out;
    return blitz__fsx_call(cx, op, &q, !path || !out ? BLITZ_EINVAL : 0);
}

/* ---- the value forms ---------------------------------------------------------------- */

enum {
    BLITZ__FSM_SEEK = 101,
    BLITZ__FSM_CHMOD,
    BLITZ__FSM_FCHMOD,
    BLITZ__FSM_CHOWN,
    BLITZ__FSM_FCHOWN,
    BLITZ__FSM_UTIMES,
    BLITZ__FSM_FUTIMES,
    BLITZ__FSM_ACCESS,
    BLITZ__FSM_READLINK,
    BLITZ__FSM_REALPATH,
    BLITZ__FSM_STATFS,
    BLITZ__FSM_READ_FILE_LIMIT,
};

static blitz_poll blitz__fsm_value_poll(blitz_cx *cx, void *arg) {
    blitz_fs_op *op = (blitz_fs_op *)arg;
    if (!op)
        return BLITZ_READY;
    uint32_t uid = (uint32_t)op->blitz__off, gid = (uint32_t)op->blitz__off2;
    switch (op->blitz__call) {
    case BLITZ__FSM_SEEK:
        return blitz_fs_seek(cx, op, op->blitz__fd, op->blitz__off2, (int)op->blitz__mode);
    case BLITZ__FSM_CHMOD:
        return blitz_fs_chmod(cx, op, op->blitz__path, op->blitz__mode);
    case BLITZ__FSM_FCHMOD:
        return blitz_fs_fchmod(cx, op, op->blitz__fd, op->blitz__mode);
    case BLITZ__FSM_CHOWN:
        return blitz_fs_chown(cx, op, op->blitz__path, uid, gid);
    case BLITZ__FSM_FCHOWN:
        return blitz_fs_fchown(cx, op, op->blitz__fd, uid, gid);
    case BLITZ__FSM_UTIMES:
        return blitz_fs_utimes(cx, op, op->blitz__path, (int64_t)op->blitz__off, op->blitz__off2);
    case BLITZ__FSM_FUTIMES:
        return blitz_fs_futimes(cx, op, op->blitz__fd, (int64_t)op->blitz__off, op->blitz__off2);
    case BLITZ__FSM_ACCESS:
        return blitz_fs_access(cx, op, op->blitz__path, (int)op->blitz__mode);
    case BLITZ__FSM_READLINK:
        return blitz_fs_readlink(cx, op, op->blitz__path);
    case BLITZ__FSM_REALPATH:
        return blitz_fs_realpath(cx, op, op->blitz__path);
    case BLITZ__FSM_STATFS:
        return blitz_fs_statfs(cx, op, op->blitz__path, (blitz_fs_fsinfo *)op->blitz__out);
    case BLITZ__FSM_READ_FILE_LIMIT:
        return blitz_fs_read_file_limit(cx, op, op->blitz__path, (size_t)op->blitz__off);
    default:
        return blitz__fsx_call(cx, op, NULL, BLITZ_EINVAL);
    }
}

static blitz_op blitz__fsm_value(blitz_fs_op *op, int call, int fd, const char *path, uint32_t mode,
                                 uint64_t a, int64_t b) {
    blitz__fsx_value_set(op, call, fd, path, NULL, mode, a, b);
    return blitz_op_make(blitz__fsm_value_poll, blitz_fs_cancel, op);
}

BLITZ_API blitz_op blitz_op_fs_seek(blitz_fs_op *op, int fd, int64_t offset, int whence) {
    return blitz__fsm_value(op, BLITZ__FSM_SEEK, fd, NULL, (uint32_t)whence, 0, offset);
}
BLITZ_API blitz_op blitz_op_fs_chmod(blitz_fs_op *op, const char *path, uint32_t mode) {
    return blitz__fsm_value(op, BLITZ__FSM_CHMOD, -1, path, mode, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_fchmod(blitz_fs_op *op, int fd, uint32_t mode) {
    return blitz__fsm_value(op, BLITZ__FSM_FCHMOD, fd, NULL, mode, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_chown(blitz_fs_op *op, const char *path, uint32_t uid,
                                     uint32_t gid) {
    return blitz__fsm_value(op, BLITZ__FSM_CHOWN, -1, path, 0, uid, gid);
}
BLITZ_API blitz_op blitz_op_fs_fchown(blitz_fs_op *op, int fd, uint32_t uid, uint32_t gid) {
    return blitz__fsm_value(op, BLITZ__FSM_FCHOWN, fd, NULL, 0, uid, gid);
}
BLITZ_API blitz_op blitz_op_fs_utimes(blitz_fs_op *op, const char *path, int64_t atime_ns,
                                      int64_t mtime_ns) {
    return blitz__fsm_value(op, BLITZ__FSM_UTIMES, -1, path, 0, (uint64_t)atime_ns, mtime_ns);
}
BLITZ_API blitz_op blitz_op_fs_futimes(blitz_fs_op *op, int fd, int64_t atime_ns,
                                       int64_t mtime_ns) {
    return blitz__fsm_value(op, BLITZ__FSM_FUTIMES, fd, NULL, 0, (uint64_t)atime_ns, mtime_ns);
}
BLITZ_API blitz_op blitz_op_fs_access(blitz_fs_op *op, const char *path, int how) {
    return blitz__fsm_value(op, BLITZ__FSM_ACCESS, -1, path, (uint32_t)how, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_readlink(blitz_fs_op *op, const char *path) {
    return blitz__fsm_value(op, BLITZ__FSM_READLINK, -1, path, 0, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_realpath(blitz_fs_op *op, const char *path) {
    return blitz__fsm_value(op, BLITZ__FSM_REALPATH, -1, path, 0, 0, 0);
}
BLITZ_API blitz_op blitz_op_fs_statfs(blitz_fs_op *op, const char *path, blitz_fs_fsinfo *out) {
    blitz_op v = blitz__fsm_value(op, BLITZ__FSM_STATFS, -1, path, 0, 0, 0);
    if (op)
        op->blitz__out = out;
    return v;
}
BLITZ_API blitz_op blitz_op_fs_read_file_limit(blitz_fs_op *op, const char *path, size_t max) {
    return blitz__fsm_value(op, BLITZ__FSM_READ_FILE_LIMIT, -1, path, 0, (uint64_t)max, 0);
}

#endif /* BLITZ__HAS_IO || BLITZ__WIN32 */
