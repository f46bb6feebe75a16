/* A process pipeline, like the shell's `seq 1 N | grep 7 | ...`, with blitz
 * in the middle: the first child's stdout is copied into the second
 * child's stdin with blitz_copy (splice: the bytes never enter this
 * process), and the second child's output is read line by line with a
 * buffered reader.
 *
 *   ./process_pipeline [N]      default 100000: numbers 1..N containing "77"
 */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    BLITZ_CORO;
    blitz_stream from, to;
    blitz_copy copy;
} copier;

static blitz_poll copier_poll(blitz_cx *cx, void *p) {
    copier *c = p;
    BLITZ_BEGIN(c);
    blitz_copy_init(&c->copy, &c->from, &c->to, 0);
    BLITZ_AWAIT(c, blitz_copy_run(cx, &c->copy));
    /* closing the second child's stdin tells it the input ended */
    blitz_stream_close(&c->from);
    blitz_stream_close(&c->to);
    BLITZ_END(c);
}

typedef struct {
    BLITZ_CORO;
    blitz_child producer, filter;
    blitz_task *copy_task;
    blitz_stream out;
    blitz_reader rd;
    blitz_wait_op wait;
    char line[64], first[64], last[64];
    long lines;
    int status;
} pipeline;

/* Wraps a child's pipe end as a stream that owns it. */
static int adopt(blitz_runtime *rt, int *fd, blitz_stream *st) {
    blitz_socket *s;
    int rc = blitz_sock_adopt(rt, *fd, &s);
    if (rc == BLITZ_OK) {
        *fd = -1; /* the stream closes it now, not blitz_process_release */
        rc = blitz_stream_pipe(st, s, BLITZ_STREAM_OWN);
    }
    return rc;
}

static blitz_poll pipeline_poll(blitz_cx *cx, void *p) {
    pipeline *pl = p;
    BLITZ_BEGIN(pl);
    {
        copier c;
        memset(&c, 0, sizeof c);
        blitz_runtime *rt = blitz_cx_runtime(cx);
        if (adopt(rt, &pl->producer.stdout_fd, &c.from) != BLITZ_OK ||
            adopt(rt, &pl->filter.stdin_fd, &c.to) != BLITZ_OK ||
            adopt(rt, &pl->filter.stdout_fd, &pl->out) != BLITZ_OK ||
            blitz_spawn(rt, copier_poll, &c, sizeof c, &pl->copy_task) != BLITZ_OK) {
            pl->status = 1;
            BLITZ_RETURN(pl);
        }
    }
    blitz_reader_init(&pl->rd, &pl->out, NULL, 0);
    for (;;) {
        BLITZ_AWAIT(pl, blitz_reader_read_line(cx, &pl->rd, pl->line, sizeof pl->line));
        if (pl->rd.result <= 0)
            break;
        if (pl->lines++ == 0)
            memcpy(pl->first, pl->line, sizeof pl->first);
        memcpy(pl->last, pl->line, sizeof pl->last);
    }
    blitz_reader_deinit(&pl->rd);
    blitz_stream_close(&pl->out);
    BLITZ_AWAIT(pl, blitz_join(cx, pl->copy_task));
    printf("copied %lld bytes from the producer to the filter (%lld by splice)\n",
           (long long)((copier *)blitz_task_state(pl->copy_task))->copy.result,
           (long long)((copier *)blitz_task_state(pl->copy_task))->copy.kernel);
    blitz_task_release(&pl->copy_task);
    BLITZ_AWAIT(pl, blitz_process_wait(cx, &pl->wait, &pl->producer));
    BLITZ_AWAIT(pl, blitz_process_wait(cx, &pl->wait, &pl->filter));
    pl->status = pl->wait.exited ? pl->wait.code : 128 + pl->wait.signal;
    BLITZ_END(pl);
}

int main(int argc, char **argv) {
    char n[32];
    snprintf(n, sizeof n, "%ld", argc > 1 ? atol(argv[1]) : 100000L);
    const char *seq_argv[] = {"seq", "1", n, NULL};
    const char *grep_argv[] = {"grep", "77", NULL};
    blitz_command seq_cmd = {seq_argv,           NULL, NULL, BLITZ_STDIO_NULL, BLITZ_STDIO_PIPE,
                             BLITZ_STDIO_INHERIT};
    blitz_command grep_cmd = {grep_argv,          NULL, NULL, BLITZ_STDIO_PIPE, BLITZ_STDIO_PIPE,
                              BLITZ_STDIO_INHERIT};
    blitz_runtime *rt = NULL;
    static pipeline pl;
    int rc = blitz_runtime_new(NULL, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_process_spawn(rt, &seq_cmd, &pl.producer);
    if (rc == BLITZ_OK && (rc = blitz_process_spawn(rt, &grep_cmd, &pl.filter)) != BLITZ_OK)
        blitz_process_release(&pl.producer);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "process_pipeline: %s\n", blitz_strerror(rc));
        if (rt)
            blitz_runtime_free(rt);
        return rc == BLITZ_ENOENT ? 0 : 1; /* no seq / grep here: nothing to show */
    }
    rc = blitz_runtime_run(rt, pipeline_poll, &pl, sizeof pl);
    printf("seq 1 %s | grep 77: %ld lines, first %s, last %s (exit status %d)\n", n, pl.lines,
           pl.first, pl.last, pl.status);
    blitz_process_release(&pl.producer);
    blitz_process_release(&pl.filter);
    blitz_runtime_free(rt);
    return rc == BLITZ_OK && pl.status == 0 ? 0 : 1;
}
