/* process_pipeline: the shell pipeline  seq 1 20 | sort -r | head -5
 * done by a task: it starts the three programs with pipes, relays the
 * bytes from each one's stdout to the next one's stdin with blitz's file
 * operations, and awaits every exit. Then it runs one more command with
 * blitz_process_output to show the collect-everything helper.
 *
 *   cc -std=c11 -O2 -pthread -I. examples/process_pipeline.c -o process_pipeline
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
}
