/* process_pipeline: the shell pipeline  seq 1 20 | sort -r | head -5
 * done by a task: it starts the three programs with pipes, relays the
 * bytes from each one's stdout to the next one's stdin with blitz's file
 * operations, and awaits every exit. Then it runs one more command with
 * blitz_process_output to show the collect-everything helper.
 *
 *   cc -std=c11 -O2 -pthread -I. examples/process_pipeline.c -o process_pipeline
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
#include <string.h>

#define STAGES 3

typedef struct {
    BLITZ_CORO;
    blitz_child child[STAGES];
    blitz_wait_op wait;
    blitz_fs_op op;
    blitz_output_op out;
    int i, error;
    char buf[4096];
    size_t n;
    char result[256];
    size_t result_len;
} pipeline;

static const char *const seq[] = {"seq", "1", "20", NULL};
static const char *const sort[] = {"sort", "-rn", NULL};
static const char *const head[] = {"head", "-5", NULL};
static const char *const *const stages[STAGES] = {seq, sort, head};

static int start(pipeline *p, blitz_runtime *rt) {
    for (int i = 0; i < STAGES; i++) {
        blitz_command cmd = {stages[i],
                             NULL,
                             NULL,
                             i == 0 ? BLITZ_STDIO_NULL : BLITZ_STDIO_PIPE,
                             BLITZ_STDIO_PIPE,
                             BLITZ_STDIO_INHERIT};
        int rc = blitz_process_spawn(rt, &cmd, &p->child[i]);
        if (rc != BLITZ_OK) {
            fprintf(stderr, "%s: %s\n", stages[i][0], blitz_strerror(rc));
            return rc;
        }
    }
    return BLITZ_OK;
}

static blitz_poll pipeline_poll(blitz_cx *cx, void *state) {
    pipeline *p = state;
    BLITZ_BEGIN(p);
    if ((p->error = start(p, blitz_cx_runtime(cx))) != BLITZ_OK)
        BLITZ_RETURN(p);
    /* Relay stage i's output into stage i+1, one stage after the other
     * (each stage's output fits the pipe, so nobody blocks meanwhile). */
    for (p->i = 0; p->i < STAGES - 1; p->i++) {
        for (;;) {
            BLITZ_AWAIT(p,
                        blitz_fs_read(cx, &p->op, p->child[p->i].stdout_fd, p->buf, sizeof p->buf));
            if (p->op.result <= 0)
                break;
            p->n = (size_t)p->op.result;
            BLITZ_AWAIT(p, blitz_fs_write(cx, &p->op, p->child[p->i + 1].stdin_fd, p->buf, p->n));
            if (p->op.result < 0)
                break; /* BLITZ_EPIPE: the next stage stopped reading */
        }
        /* End of input for the next stage. */
        BLITZ_AWAIT(p, blitz_fs_close(cx, &p->op, p->child[p->i + 1].stdin_fd));
        p->child[p->i + 1].stdin_fd = -1;
    }
    for (;;) {
        BLITZ_AWAIT(p,
                    blitz_fs_read(cx, &p->op, p->child[STAGES - 1].stdout_fd,
                                  p->result + p->result_len, sizeof p->result - 1 - p->result_len));
        if (p->op.result <= 0)
            break;
        p->result_len += (size_t)p->op.result;
    }
    p->result[p->result_len] = '\0';
    for (p->i = 0; p->i < STAGES; p->i++) {
        BLITZ_AWAIT(p, blitz_process_wait(cx, &p->wait, &p->child[p->i]));
        if (p->wait.exited)
            printf("%-5s exited with %d\n", stages[p->i][0], p->wait.code);
        else
            printf("%-5s killed by signal %d\n", stages[p->i][0], p->wait.signal);
        blitz_process_release(&p->child[p->i]);
    }
    printf("seq 1 20 | sort -rn | head -5:\n%s", p->result);

    {
        static const char *const wc[] = {"wc", "-w", NULL};
        blitz_command cmd = {
            wc, NULL, NULL, BLITZ_STDIO_INHERIT, BLITZ_STDIO_INHERIT, BLITZ_STDIO_INHERIT};
        static const char text[] = "the quick brown fox jumps over the lazy dog\n";
        BLITZ_AWAIT(p, blitz_process_output(cx, &p->out, &cmd, text, sizeof text - 1));
    }
    if (p->out.result == BLITZ_OK) {
        printf("wc -w of a sentence: %s", p->out.out);
        blitz_free(p->out.out);
        blitz_free(p->out.err);
    } else {
        fprintf(stderr, "wc: %s\n", blitz_strerror(p->out.result));
        p->error = p->out.result;
    }
    BLITZ_END(p);
}

int main(void) {
    static pipeline p;
    int rc = blitz_run(pipeline_poll, &p, sizeof p);
    if (rc != BLITZ_OK || p.error) {
        fprintf(stderr, "pipeline failed: %s\n", blitz_strerror(rc ? rc : p.error));
        return 1;
    }
    return strcmp(p.result, "20\n19\n18\n17\n16\n") == 0 ? 0 : 1;
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
