/* hello: the smallest blitz program that does something. It creates a
 * runtime with two worker threads, spawns one task, waits for it from
 * main(), reads the finished task's state, and frees everything.
 *
 *   cc -std=c11 -O2 -pthread -I. examples/hello.c -o hello && ./hello
 */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>

/* The task's state: blitz copies it into the task when it is spawned, and
 * the poll function works on that copy. */
typedef struct {
    const char *name;
    int worker;
    char greeting[64];
} hello_state;

/* The poll function. It finishes on its first call, so it returns
 * BLITZ_READY; a task that had to wait would return BLITZ_PENDING. */
static blitz_poll hello_poll(blitz_cx *cx, void *p) {
    hello_state *s = p;
    s->worker = blitz_cx_worker(cx); /* -1: the thread in blitz_join_blocking ran it */
    snprintf(s->greeting, sizeof s->greeting, "hello, %s!", s->name);
    return BLITZ_READY;
}

int main(void) {
    blitz_config cfg = {0};
    cfg.flavor = BLITZ_MULTI_THREAD;
    cfg.workers = 2;
    blitz_runtime *rt = NULL;
    int rc = blitz_runtime_new(&cfg, &rt);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "blitz_runtime_new: %s\n", blitz_strerror(rc));
        return 1;
    }

    hello_state state = {"world", 0, ""};
    blitz_task *task = NULL;
    rc = blitz_spawn(rt, hello_poll, &state, sizeof state, &task);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "blitz_spawn: %s\n", blitz_strerror(rc));
        blitz_runtime_free(rt);
        return 1;
    }

    /* Block this thread until the task has finished, then read its state
     * (the task's own copy, not `state`). */
    rc = blitz_join_blocking(task);
    if (rc == BLITZ_OK) {
        hello_state *done = blitz_task_state(task);
        if (done->worker >= 0)
            printf("%s (from worker %d)\n", done->greeting, done->worker);
        else
            printf("%s (from the main thread, while it waited)\n", done->greeting);
    } else {
        fprintf(stderr, "task: %s\n", blitz_strerror(rc));
    }

    blitz_task_release(&task); /* every handle is released once */
    blitz_runtime_free(rt);
    return rc == BLITZ_OK ? 0 : 1;
}
