/* file_copy: copies a file with blitz's file operations, in 64 KiB chunks,
 * then reads both files back whole and compares them. Every open, read,
 * write and close runs on the blocking pool while the task waits.
 *
 *   cc -std=c11 -O2 -pthread -I. examples/file_copy.c -o file_copy
 *   ./file_copy SRC DST      (without arguments it copies its own source)
 */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    BLITZ_CORO;
    const char *src, *dst;
    blitz_fs_op op;
    int in, out;
    int64_t copied;
    int error;
    blitz_fs_metadata md;
    void *a;
    int64_t alen;
    char buf[64 * 1024];
} copy_task;

/* Records the first error and says whether there was one. */
static int failed(copy_task *c, const char *what) {
    if (c->op.result >= 0)
        return 0;
    fprintf(stderr, "%s: %s\n", what, blitz_strerror((int)c->op.result));
    c->error = (int)c->op.result;
    return 1;
}

static blitz_poll copy_poll(blitz_cx *cx, void *p) {
    copy_task *c = p;
    BLITZ_BEGIN(c);
    c->in = c->out = -1;
    BLITZ_AWAIT(c, blitz_fs_open(cx, &c->op, c->src, BLITZ_FS_READ, 0));
    if (failed(c, c->src))
        BLITZ_RETURN(c);
    c->in = (int)c->op.result;
    BLITZ_AWAIT(c, blitz_fs_fstat(cx, &c->op, c->in, &c->md));
    if (failed(c, "fstat"))
        goto close_in;
    BLITZ_AWAIT(c, blitz_fs_open(cx, &c->op, c->dst,
                                 BLITZ_FS_WRITE | BLITZ_FS_CREATE | BLITZ_FS_TRUNCATE, c->md.mode));
    if (failed(c, c->dst))
        goto close_in;
    c->out = (int)c->op.result;
    for (;;) {
        BLITZ_AWAIT(c, blitz_fs_read(cx, &c->op, c->in, c->buf, sizeof c->buf));
        if (failed(c, "read") || c->op.result == 0)
            break;
        BLITZ_AWAIT(c, blitz_fs_write(cx, &c->op, c->out, c->buf, (size_t)c->op.result));
        if (failed(c, "write"))
            break;
        c->copied += c->op.result;
    }
    if (!c->error) {
        BLITZ_AWAIT(c, blitz_fs_fsync(cx, &c->op, c->out));
        failed(c, "fsync");
    }
    BLITZ_AWAIT(c, blitz_fs_close(cx, &c->op, c->out));
close_in:
    BLITZ_AWAIT(c, blitz_fs_close(cx, &c->op, c->in));
    if (c->error)
        BLITZ_RETURN(c);
    /* Check: both files, whole. */
    BLITZ_AWAIT(c, blitz_fs_read_file(cx, &c->op, c->src));
    if (failed(c, c->src))
        BLITZ_RETURN(c);
    c->a = c->op.data;
    c->alen = c->op.result;
    BLITZ_AWAIT(c, blitz_fs_read_file(cx, &c->op, c->dst));
    if (!failed(c, c->dst)) {
        if (c->op.result != c->alen || memcmp(c->a, c->op.data, (size_t)c->alen) != 0) {
            fprintf(stderr, "the copy differs from the original\n");
            c->error = BLITZ_EIO;
        }
        blitz_free(c->op.data);
    }
    blitz_free(c->a);
    BLITZ_END(c);
}

int main(int argc, char **argv) {
    static copy_task c; /* 64 KiB buffer: not on the stack */
    c.src = argc > 2 ? argv[1] : "examples/file_copy.c";
    c.dst = argc > 2 ? argv[2] : "/tmp/blitz_file_copy.out";
    int rc = blitz_run(copy_poll, &c, sizeof c);
    if (rc != BLITZ_OK || c.error) {
        fprintf(stderr, "copy failed: %s\n", blitz_strerror(rc ? rc : c.error));
        return 1;
    }
    printf("copied %lld bytes from %s to %s, contents verified\n", (long long)c.copied, c.src,
           c.dst);
    return 0;
}
