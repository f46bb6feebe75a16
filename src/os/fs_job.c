/* The pool record of the file operations of api_fs.h: one shape for all
 * of them. A public call fills a request record on its stack (the work
 * function, its numbers, the caller's paths); starting the op copies it
 * into a record on the heap with copies of the paths, so a pool thread
 * never reads the caller's memory, and moves the results (result, data,
 * file-system figures) into the op when it is READY.
 *
 * A result the caller never takes (the op was cancelled while its thread
 * ran, or the runtime was freed first) is released by the record's undo
 * function: a temporary file is closed and removed, a directory batch
 * freed. */
#include "../io/io.h"
#if BLITZ__HAS_IO || BLITZ__WIN32

typedef struct blitz__fsx_rec blitz__fsx_rec;

struct blitz__fsx_rec {
    blitz__pool_rec base;
    /* The work, run on a pool thread: a result >= 0 or a code. */
    int64_t (*run)(blitz__fsx_rec *r);
    /* Releases what a result >= 0 holds when the caller did not take it
     * (NULL: only `data`, freed). */
    void (*undo)(blitz__fsx_rec *r);
    /* Runs whenever the request ends, taken or not (gives back what the
     * request held from its start). */
    void (*release)(blitz__fsx_rec *r);
    int fd, how;
    uint32_t mode, uid, gid;
    int64_t a, b;
    size_t n;
    const char *path, *path2; /* the caller's in a request; one copy in a record */
    void *handle;             /* a directory reader */
    blitz_fs_fsinfo info;
    blitz_fs_fsinfo *info_out; /* where `info` goes when READY */
    int64_t result;
    void *data; /* handed to the caller; freed with blitz_free */
};

static void blitz__fsx_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__fsx_rec *r = (blitz__fsx_rec *)rec;
    r->result = cancelled ? BLITZ_ECANCELED : r->run(r);
}

static void blitz__fsx_discard(blitz__pool_rec *rec) {
    blitz__fsx_rec *r = (blitz__fsx_rec *)rec;
    if (r->undo)
        r->undo(r);
    if (r->release)
        r->release(r);
    blitz__free(r->data);
    blitz__free((void *)(uintptr_t)r->path);
}

/* A request for `run`, with no paths and no descriptor. */
static blitz__fsx_rec blitz__fsx_req(int64_t (*run)(blitz__fsx_rec *)) {
    blitz__fsx_rec r;
    memset(&r, 0, sizeof r);
    r.run = run;
    r.fd = -1;
    return r;
}

/* Nonzero when the op's task gave up on it (or the runtime is shutting
 * down): long work stops at its next step. */
static int blitz__fsx_give_up(blitz__fsx_rec *r) {
    return blitz__pool_rec_give_up(&r->base);
}

#if !BLITZ__WIN32
static int64_t blitz__fsx_errno(void) {
    return blitz__from_errno(errno);
}
#endif

/* Ready with an argument error, when the op is idle; an op in flight is
 * polled on (its caller repeats the call that started it). */
static blitz_poll blitz__fsx_fail(blitz_fs_op *op, int err) {
    if (!op)
        return BLITZ_READY;
    op->data = NULL;
    op->result = err;
    return BLITZ_READY;
}

static void blitz__fsx_take(blitz_fs_op *op, blitz__fsx_rec *r) {
    op->result = r->result;
    if (r->result >= 0 && r->info_out)
        *r->info_out = r->info;
    op->data = r->data;
    r->data = NULL;
    r->undo = NULL; /* the caller owns the result now */
    blitz__pool_rec_free(&r->base);
}

/* The shared body of every public call: a new request starts the op, an
 * op in flight is polled. `err` is an argument error found by the caller
 * (0 for none), reported only when nothing is in flight (`req` may then
 * be NULL). */
static blitz_poll blitz__fsx_call(blitz_cx *cx, blitz_fs_op *op, const blitz__fsx_rec *req,
                                  int err) {
    if (!op)
        return BLITZ_READY;
    blitz__pool_rec *done;
    if (!blitz__pool_op_idle(&op->blitz__op)) {
        if (blitz__pool_op_poll(cx, &op->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_fs_cancel, op);
        blitz__fsx_take(op, (blitz__fsx_rec *)done);
        return BLITZ_READY;
    }
    if (err)
        return blitz__fsx_fail(op, err);
    blitz__fsx_rec *r =
        cx ? (blitz__fsx_rec *)blitz__pool_rec_new(sizeof *r, blitz__fsx_exec, blitz__fsx_discard)
           : NULL;
    if (!r) {
        if (req->release) {
            blitz__fsx_rec held = *req;
            req->release(&held);
        }
        return blitz__fsx_fail(op, cx ? BLITZ_ENOMEM : BLITZ_EINVAL);
    }
    blitz__pool_rec base = r->base;
    *r = *req;
    r->base = base;
    r->result = -1;
    r->undo = NULL; /* set by a work function once it has something to undo */
    if (req->path) {
        size_t la = strlen(req->path) + 1, lb = req->path2 ? strlen(req->path2) + 1 : 0;
        char *p = (char *)blitz__malloc(la + lb);
        r->path = p;
        r->path2 = NULL;
        if (!p) {
            blitz__pool_rec_free(&r->base);
            return blitz__fsx_fail(op, BLITZ_ENOMEM);
        }
        memcpy(p, req->path, la);
        if (req->path2) {
            memcpy(p + la, req->path2, lb);
            r->path2 = p + la;
        }
    }
    int rc;
    if (blitz__pool_op_start(cx, &op->blitz__op, &r->base, &rc) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_fs_cancel, op);
    return blitz__fsx_fail(op, rc);
}

/* The value forms: the arguments kept in the op, read at each poll. */
static void blitz__fsx_value_set(blitz_fs_op *op, int call, int fd, const char *path,
                                 const char *path2, uint32_t mode, uint64_t off, int64_t off2) {
    if (!op)
        return;
    blitz__fs_value_set(op, call, fd, path, path2, NULL, 0, off, off2);
    op->blitz__mode = mode;
}

/* The work of each op, run on a pool thread: a result >= 0 or a code.
 * The front ends (argument checks, requests, value forms) are one for
 * every system; the work is the system's: the POSIX forms sit beside
 * their front ends in fs_meta.c, fs_tree.c and fs_dir.c, the Windows
 * forms in fs_ext_win32.c. */
static int64_t blitz__fsm_seek(blitz__fsx_rec *r);
static int64_t blitz__fsm_chmod(blitz__fsx_rec *r);
static int64_t blitz__fsm_chown(blitz__fsx_rec *r);
static int64_t blitz__fsm_utimes(blitz__fsx_rec *r);
static int64_t blitz__fsm_access(blitz__fsx_rec *r);
static int64_t blitz__fsm_readlink(blitz__fsx_rec *r);
static int64_t blitz__fsm_realpath(blitz__fsx_rec *r);
static int64_t blitz__fsm_statfs(blitz__fsx_rec *r);
/* Creates `name` exclusively: a descriptor (a file), 0 (a directory,
 * `dir`), or a code; BLITZ_EEXIST when the name is taken. */
static int64_t blitz__fst_create(const char *name, int dir);
/* Removes what blitz__fst_create made (closing the file first). */
static void blitz__fst_remove_made(const char *name, int dir, int fd);
static int64_t blitz__fst_copy(blitz__fsx_rec *r);
static int64_t blitz__fst_remove_all(blitz__fsx_rec *r);
/* A directory stream: opened on a path, read an entry at a time (1 with
 * the entry's name, valid until the next call, and type; 0 at the end;
 * or a code), closed once. "." and ".." may come; the caller skips them. */
static int64_t blitz__fsd_stream_open(const char *path, void **stream);
static int64_t blitz__fsd_stream_next(void *stream, const char **name, blitz_file_type *type);
static void blitz__fsd_stream_close(void *stream);

#endif /* BLITZ__HAS_IO || BLITZ__WIN32 */
