/* The streaming directory reader: open, batches of entries, close.
 *
 * A reader is shared by its owner and the record of a batch read in
 * flight, each holding a reference; the last one to let go closes the
 * directory, so closing the reader while a cancelled read still runs on a
 * pool thread is safe. `busy` admits one read at a time: it is taken when
 * a read starts and given back when its record is freed (taken by the
 * task, dropped from the queue, or finished by an abandoned thread), so a
 * read after a cancelled one that is still running gets BLITZ_EBUSY
 * instead of sharing the DIR stream with that thread. */
#include "../io/io.h"
#if BLITZ__HAS_IO || BLITZ__WIN32

#define BLITZ__FSD_BATCH     64u
#define BLITZ__FSD_MAX_BATCH 4096u

struct blitz_fs_dir {
    void *stream; /* the system's (fs_job.c's blitz__fsd_stream_*) */
    blitz__atomic_u32 refs;
    blitz__atomic_u32 busy;
};

#if !BLITZ__WIN32
/* The POSIX stream is a DIR (Windows's: fs_ext_win32.c). */
static int64_t blitz__fsd_stream_open(const char *path, void **stream) {
    DIR *d = opendir(path);
    *stream = d;
    return d ? 0 : blitz__fsx_errno();
}

static blitz_file_type blitz__fsd_type(const struct dirent *e) {
#ifdef DT_UNKNOWN
    switch (e->d_type) {
    case DT_REG:
        return BLITZ_FILE_REGULAR;
    case DT_DIR:
        return BLITZ_FILE_DIRECTORY;
    case DT_LNK:
        return BLITZ_FILE_SYMLINK;
    case DT_UNKNOWN:
        return BLITZ_FILE_UNKNOWN;
    default:
        return BLITZ_FILE_OTHER;
    }
#else
    (void)e;
    return BLITZ_FILE_UNKNOWN;
#endif
}

static int64_t blitz__fsd_stream_next(void *stream, const char **name, blitz_file_type *type) {
    errno = 0;
    struct dirent *e = readdir((DIR *)stream);
    if (!e)
        return errno ? blitz__fsx_errno() : 0;
    *name = e->d_name;
    *type = blitz__fsd_type(e);
    return 1;
}

static void blitz__fsd_stream_close(void *stream) {
    closedir((DIR *)stream);
}
#endif /* !BLITZ__WIN32 */

static void blitz__fsd_unref(blitz_fs_dir *dir) {
    /* Acq_rel: the last owner sees every other owner's use of the stream
     * before closing it. */
    if (blitz__u32_fetch_sub(&dir->refs, 1, BLITZ__ACQ_REL) == 1) {
        blitz__fsd_stream_close(dir->stream);
        blitz__free(dir);
    }
}

/* An opened reader nobody took. */
static void blitz__fsd_open_undo(blitz__fsx_rec *r) {
    if (r->result >= 0 && r->data) {
        blitz__fsd_unref((blitz_fs_dir *)r->data);
        r->data = NULL;
    }
}

static int64_t blitz__fsd_open(blitz__fsx_rec *r) {
    blitz_fs_dir *dir = (blitz_fs_dir *)blitz__calloc(sizeof *dir);
    if (!dir)
        return BLITZ_ENOMEM;
    int64_t rc = blitz__fsd_stream_open(r->path, &dir->stream);
    if (rc < 0) {
        blitz__free(dir);
        return rc;
    }
    blitz__u32_store(&dir->refs, 1, BLITZ__RELAXED);
    r->data = dir;
    r->undo = blitz__fsd_open_undo;
    return 0;
}

/* Up to r->n entries into one block (the array, then the names). */
static int64_t blitz__fsd_next(blitz__fsx_rec *r) {
    blitz_fs_dir *dir = (blitz_fs_dir *)r->handle;
    size_t cap = r->n * (sizeof(blitz_fs_dirent) + 32), used = r->n * sizeof(blitz_fs_dirent);
    char *block = (char *)blitz__malloc(cap);
    if (!block)
        return BLITZ_ENOMEM;
    size_t count = 0;
    int64_t rc = 0;
    /* Names are placed by offset while the block may still move. */
    while (count < r->n) {
        const char *name = NULL;
        blitz_file_type type = BLITZ_FILE_UNKNOWN;
        if ((rc = blitz__fsd_stream_next(dir->stream, &name, &type)) <= 0)
            break;
        rc = 0;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        size_t len = strlen(name) + 1;
        if ((rc = blitz__grow_buffer(&block, &cap, used, used + len)) != 0)
            break;
        blitz_fs_dirent *ent = (blitz_fs_dirent *)(void *)block + count++;
        ent->name = (const char *)(uintptr_t)used;
        ent->type = type;
        memcpy(block + used, name, len);
        used += len;
    }
    if (rc != 0 || count == 0) {
        blitz__free(block);
        return rc;
    }
    blitz_fs_dirent *list = (blitz_fs_dirent *)(void *)block;
    for (size_t i = 0; i < count; i++)
        list[i].name = block + (uintptr_t)list[i].name;
    r->data = block;
    return (int64_t)count;
}

/* The batch read's hold on the reader, given back whatever happened. */
static void blitz__fsd_next_release(blitz__fsx_rec *r) {
    blitz_fs_dir *dir = (blitz_fs_dir *)r->handle;
    /* Release: this thread's use of the stream happens before the next
     * read's acquire of `busy`. */
    blitz__u32_store(&dir->busy, 0, BLITZ__RELEASE);
    blitz__fsd_unref(dir);
}

BLITZ_API blitz_poll blitz_fs_opendir(blitz_cx *cx, blitz_fs_op *op, const char *path) {
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsd_open);
    q.path = path;
    return blitz__fsx_call(cx, op, &q, path ? 0 : BLITZ_EINVAL);
}

BLITZ_API blitz_poll blitz_fs_readdir(blitz_cx *cx, blitz_fs_op *op, blitz_fs_dir *dir,
                                      size_t max) {
    if (op && !blitz__pool_op_idle(&op->blitz__op))
        return blitz__fsx_call(cx, op, NULL, 0);
    if (!op || !dir)
        return blitz__fsx_call(cx, op, NULL, BLITZ_EINVAL);
    blitz__fsx_rec q = blitz__fsx_req(blitz__fsd_next);
    q.handle = dir;
    q.release = blitz__fsd_next_release;
    q.n = max == 0 ? BLITZ__FSD_BATCH : max > BLITZ__FSD_MAX_BATCH ? BLITZ__FSD_MAX_BATCH : max;
    uint32_t idle = 0;
    /* Acquire: see the stream as the previous read left it. */
    if (!blitz__u32_cas(&dir->busy, &idle, 1, BLITZ__ACQUIRE))
        return blitz__fsx_call(cx, op, NULL, BLITZ_EBUSY);
    /* Relaxed: the caller's own reference keeps the count above zero. */
    blitz__u32_fetch_add(&dir->refs, 1, BLITZ__RELAXED);
    return blitz__fsx_call(cx, op, &q, 0);
}

BLITZ_API int blitz_fs_closedir(blitz_fs_dir *dir) {
    if (!dir)
        return BLITZ_EINVAL;
    blitz__fsd_unref(dir);
    return BLITZ_OK;
}

/* ---- the value forms ---------------------------------------------------------------- */

enum { BLITZ__FSD_OPEN = 301, BLITZ__FSD_NEXT };

static blitz_poll blitz__fsd_value_poll(blitz_cx *cx, void *arg) {
    blitz_fs_op *op = (blitz_fs_op *)arg;
    if (!op)
        return BLITZ_READY;
    switch (op->blitz__call) {
    case BLITZ__FSD_OPEN:
        return blitz_fs_opendir(cx, op, op->blitz__path);
    case BLITZ__FSD_NEXT:
        return blitz_fs_readdir(cx, op, (blitz_fs_dir *)(uintptr_t)op->blitz__buf, op->blitz__len);
    default:
        return blitz__fsx_call(cx, op, NULL, BLITZ_EINVAL);
    }
}

BLITZ_API blitz_op blitz_op_fs_opendir(blitz_fs_op *op, const char *path) {
    blitz__fsx_value_set(op, BLITZ__FSD_OPEN, -1, path, NULL, 0, 0, 0);
    return blitz_op_make(blitz__fsd_value_poll, blitz_fs_cancel, op);
}
BLITZ_API blitz_op blitz_op_fs_readdir(blitz_fs_op *op, blitz_fs_dir *dir, size_t max) {
    blitz__fsx_value_set(op, BLITZ__FSD_NEXT, -1, NULL, NULL, 0, 0, 0);
    if (op) {
        op->blitz__buf = dir;
        op->blitz__len = max;
    }
    return blitz_op_make(blitz__fsd_value_poll, blitz_fs_cancel, op);
}

#endif /* BLITZ__HAS_IO || BLITZ__WIN32 */
