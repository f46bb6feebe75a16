/* Public API: more file operations (positions, permissions, links read
 * back, temporary files, copies, trees, file systems, directories read in
 * batches). */

/* ---------------------------------------------------------------------------
 * More file operations
 *
 * Same shape as the file ops above: a blitz_fs_op, `result` >= 0 or a
 * negative BLITZ_E* code, the work on the blocking pool, cancellation with
 * blitz_fs_cancel (a cancelled op leaks nothing: a temporary file made by
 * a thread that finished after the cancel is closed and removed, a
 * directory batch freed), and a blitz_op_fs_* form of each whose
 * arguments must stay valid until the op is READY or cancelled. Strings
 * and arrays put in op->data are the caller's after READY (blitz_free).
 *
 * The long ones, blitz_fs_copy_file and blitz_fs_remove_all, stop at their
 * next step when cancelled while running (or at shutdown): a cancelled
 * copy leaves a partial destination, a cancelled removal part of the tree,
 * as an interrupted cp or rm would.
 *
 * On Windows (Win32 calls on the pool, UTF-8 paths): permission bits are
 * the read-only attribute, as for the file ops above; there are no
 * owners, so chown and fchown are BLITZ_ENOSYS unless both ids are
 * BLITZ_FS_ID_KEEP; times are kept in 100 ns units, and the file system
 * may update an access time as it pleases; BLITZ_FS_CAN_EXEC asks only
 * that the path exists; readlink reads symlinks and junctions; realpath
 * resolves ".." by name before looking ("a/missing/../b" is "a/b");
 * statfs has no inode figures (files and files_free are 0); mkstemp's
 * file and mkdtemp's directory get the default access list, not 0600 or
 * 0700; copy_file copies the read-only attribute as the mode.
 *
 * Reading a directory without holding all of it:
 *   BLITZ_AWAIT(s, blitz_fs_opendir(cx, &s->op, path));
 *   if (s->op.result < 0) ...; s->dir = s->op.data;
 *   for (;;) {
 *       BLITZ_AWAIT(s, blitz_fs_readdir(cx, &s->op, s->dir, 0));
 *       if (s->op.result <= 0) break; (0: the end)
 *       ... ((blitz_fs_dirent *)s->op.data)[0 .. result-1] ...
 *       blitz_free(s->op.data);
 *   }
 *   blitz_fs_closedir(s->dir);
 * ------------------------------------------------------------------------- */

/* blitz_fs_seek's origins. */
#define BLITZ_SEEK_SET 0
#define BLITZ_SEEK_CUR 1
#define BLITZ_SEEK_END 2

/* Moves fd's file position to `offset` from the start, the current
 * position or the end (lseek). Result: the new position. BLITZ_EINVAL for
 * another origin or a position before the start, BLITZ_ESPIPE for a pipe
 * or socket. */
BLITZ_API blitz_poll blitz_fs_seek(blitz_cx *cx, blitz_fs_op *op, int fd, int64_t offset,
                                   int whence);

/* Sets the permission bits (mode & 07777). Result 0. */
BLITZ_API blitz_poll blitz_fs_chmod(blitz_cx *cx, blitz_fs_op *op, const char *path, uint32_t mode);
BLITZ_API blitz_poll blitz_fs_fchmod(blitz_cx *cx, blitz_fs_op *op, int fd, uint32_t mode);

/* A uid or gid that blitz_fs_chown leaves as it is. */
#define BLITZ_FS_ID_KEEP UINT32_MAX
/* Sets the owner and group (BLITZ_EPERM without the privilege). Result 0. */
BLITZ_API blitz_poll blitz_fs_chown(blitz_cx *cx, blitz_fs_op *op, const char *path, uint32_t uid,
                                    uint32_t gid);
BLITZ_API blitz_poll blitz_fs_fchown(blitz_cx *cx, blitz_fs_op *op, int fd, uint32_t uid,
                                     uint32_t gid);

/* Times for blitz_fs_utimes besides nanoseconds since the epoch. */
#define BLITZ_FS_TIME_NOW  ((int64_t)-1) /* the current time */
#define BLITZ_FS_TIME_KEEP ((int64_t)-2) /* leave it as it is */
/* Sets the access and modification times (following symlinks). Result 0;
 * BLITZ_EINVAL for another negative time. */
BLITZ_API blitz_poll blitz_fs_utimes(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                     int64_t atime_ns, int64_t mtime_ns);
BLITZ_API blitz_poll blitz_fs_futimes(blitz_cx *cx, blitz_fs_op *op, int fd, int64_t atime_ns,
                                      int64_t mtime_ns);

/* What blitz_fs_access checks: existence alone, or any of the others. */
#define BLITZ_FS_EXISTS    0
#define BLITZ_FS_CAN_READ  4
#define BLITZ_FS_CAN_WRITE 2
#define BLITZ_FS_CAN_EXEC  1
/* Whether this process may use `path` so, by its effective user and
 * group (faccessat with AT_EACCESS). Result 0, or BLITZ_EACCES,
 * BLITZ_ENOENT, ... */
BLITZ_API blitz_poll blitz_fs_access(blitz_cx *cx, blitz_fs_op *op, const char *path, int how);

/* The target of a symlink, into op->data (NUL-terminated); result: its
 * length. BLITZ_EINVAL when `path` is not a symlink. */
BLITZ_API blitz_poll blitz_fs_readlink(blitz_cx *cx, blitz_fs_op *op, const char *path);
/* The absolute path with no ".", ".." or symlinks, into op->data
 * (NUL-terminated); result: its length. The path must exist. */
BLITZ_API blitz_poll blitz_fs_realpath(blitz_cx *cx, blitz_fs_op *op, const char *path);

/* Figures of the file system holding a path (statvfs). Sizes are in
 * blocks of block_size bytes. */
typedef struct blitz_fs_fsinfo {
    uint64_t block_size;
    uint64_t blocks, blocks_free, blocks_avail; /* avail: free to unprivileged users */
    uint64_t files, files_free;                 /* inodes */
    uint64_t name_max;                          /* longest file name */
} blitz_fs_fsinfo;
/* Fills *out. Result 0. */
BLITZ_API blitz_poll blitz_fs_statfs(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                     blitz_fs_fsinfo *out);

/* blitz_fs_read_file that gives up with BLITZ_EFBIG, keeping nothing, as
 * soon as the file has more than `max` bytes: safe on a path from
 * untrusted input (/dev/zero, a growing log). */
BLITZ_API blitz_poll blitz_fs_read_file_limit(blitz_cx *cx, blitz_fs_op *op, const char *path,
                                              size_t max);

/* A new file or directory named after `template_path`, whose last six
 * characters must be "XXXXXX" (they are replaced; BLITZ_EINVAL if not):
 * mkstemp creates a file (mode 0600, open for reading and writing,
 * close-on-exec), result: its descriptor; mkdtemp a directory (0700),
 * result 0. The name is in op->data (NUL-terminated). */
BLITZ_API blitz_poll blitz_fs_mkstemp(blitz_cx *cx, blitz_fs_op *op, const char *template_path);
BLITZ_API blitz_poll blitz_fs_mkdtemp(blitz_cx *cx, blitz_fs_op *op, const char *template_path);

/* Copies the contents of file `from` to `to` (created, or truncated),
 * then gives `to` the permission bits of `from`. The kernel copies where
 * it can: a reflink (FICLONE), else copy_file_range, else a read/write
 * loop. Result: the bytes copied. BLITZ_EISDIR for a directory,
 * BLITZ_EINVAL when both name the same file. */
BLITZ_API blitz_poll blitz_fs_copy_file(blitz_cx *cx, blitz_fs_op *op, const char *from,
                                        const char *to);

/* rm -r: removes a file, a symlink (never what it points to) or a
 * directory with everything in it. Symlinks inside are removed, not
 * followed. Result 0; BLITZ_ENOENT when `path` does not exist (unlike
 * rm -f: a missing path is reported, the caller may ignore it). Each
 * level of depth holds a descriptor while it is emptied (BLITZ_EMFILE
 * past the process's limit). */
BLITZ_API blitz_poll blitz_fs_remove_all(blitz_cx *cx, blitz_fs_op *op, const char *path);

/* A directory being read in batches (opaque). */
typedef struct blitz_fs_dir blitz_fs_dir;
/* Opens a directory for reading: result 0 and the reader in op->data (a
 * blitz_fs_dir *: the caller's, to close with blitz_fs_closedir, not to
 * free). */
BLITZ_API blitz_poll blitz_fs_opendir(blitz_cx *cx, blitz_fs_op *op, const char *path);
/* The next entries, at most `max` (0: 64; more than 4096: 4096), in the
 * directory's order without "." and "..": op->data is an array of
 * `result` blitz_fs_dirent (freed with blitz_free), result 0 at the end.
 * One read at a time per reader: BLITZ_EBUSY while a cancelled read still
 * runs on its pool thread (the entries it read are lost). */
BLITZ_API blitz_poll blitz_fs_readdir(blitz_cx *cx, blitz_fs_op *op, blitz_fs_dir *dir, size_t max);
/* Lets go of a reader (closed once a cancelled read still running ends).
 * No read may be pending on it, nor start after. BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_fs_closedir(blitz_fs_dir *dir);

/* The value forms (cancel: blitz_fs_cancel). */
BLITZ_API blitz_op blitz_op_fs_seek(blitz_fs_op *op, int fd, int64_t offset, int whence);
BLITZ_API blitz_op blitz_op_fs_chmod(blitz_fs_op *op, const char *path, uint32_t mode);
BLITZ_API blitz_op blitz_op_fs_fchmod(blitz_fs_op *op, int fd, uint32_t mode);
BLITZ_API blitz_op blitz_op_fs_chown(blitz_fs_op *op, const char *path, uint32_t uid, uint32_t gid);
BLITZ_API blitz_op blitz_op_fs_fchown(blitz_fs_op *op, int fd, uint32_t uid, uint32_t gid);
BLITZ_API blitz_op blitz_op_fs_utimes(blitz_fs_op *op, const char *path, int64_t atime_ns,
                                      int64_t mtime_ns);
BLITZ_API blitz_op blitz_op_fs_futimes(blitz_fs_op *op, int fd, int64_t atime_ns, int64_t mtime_ns);
BLITZ_API blitz_op blitz_op_fs_access(blitz_fs_op *op, const char *path, int how);
BLITZ_API blitz_op blitz_op_fs_readlink(blitz_fs_op *op, const char *path);
BLITZ_API blitz_op blitz_op_fs_realpath(blitz_fs_op *op, const char *path);
BLITZ_API blitz_op blitz_op_fs_statfs(blitz_fs_op *op, const char *path, blitz_fs_fsinfo *out);
BLITZ_API blitz_op blitz_op_fs_read_file_limit(blitz_fs_op *op, const char *path, size_t max);
BLITZ_API blitz_op blitz_op_fs_mkstemp(blitz_fs_op *op, const char *template_path);
BLITZ_API blitz_op blitz_op_fs_mkdtemp(blitz_fs_op *op, const char *template_path);
BLITZ_API blitz_op blitz_op_fs_copy_file(blitz_fs_op *op, const char *from, const char *to);
BLITZ_API blitz_op blitz_op_fs_remove_all(blitz_fs_op *op, const char *path);
BLITZ_API blitz_op blitz_op_fs_opendir(blitz_fs_op *op, const char *path);
BLITZ_API blitz_op blitz_op_fs_readdir(blitz_fs_op *op, blitz_fs_dir *dir, size_t max);
