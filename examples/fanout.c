/* fanout: fan-out / fan-in. A parent task splits a sum over 1..N into
 * CHILDREN ranges, spawns one child task per range, awaits every child
 * (suspending, not blocking a thread), and adds up their results.
 *
 *   cc -std=c11 -O2 -pthread -I. examples/fanout.c -o fanout && ./fanout
 */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <inttypes.h>
#include <stdio.h>

#define N        10000000ull
#define CHILDREN 100

/* A child sums the squares of first..last (mod 2^64). */
typedef struct {
    uint64_t first, last;
    uint64_t result;
} child_state;

static blitz_poll child_poll(blitz_cx *cx, void *p) {
    (void)cx;
    child_state *c = p;
    uint64_t sum = 0;
    for (uint64_t i = c->first; i <= c->last; i++)
        sum += i * i;
    c->result = sum;
    return BLITZ_READY;
}

/* The parent is a coroutine: its resume point (BLITZ_CORO) and everything
 * that must survive an await live in its state, not in locals. */
typedef struct {
    BLITZ_CORO;
    int i;
    int failed;
    uint64_t total;
    blitz_task *children[CHILDREN];
} parent_state;

static blitz_poll parent_poll(blitz_cx *cx, void *p) {
    parent_state *s = p;
    BLITZ_BEGIN(s);

    /* Fan out: spawned from inside a task, each child goes to this
     * worker's LIFO slot and queue; idle workers steal them. */
    for (s->i = 0; s->i < CHILDREN; s->i++) {
        child_state c;
        c.first = N / CHILDREN * (uint64_t)s->i + 1;
        c.last = N / CHILDREN * (uint64_t)(s->i + 1);
        c.result = 0;
        if (blitz_spawn(blitz_cx_runtime(cx), child_poll, &c, sizeof c, &s->children[s->i]) !=
            BLITZ_OK) {
            s->failed = 1;
            s->children[s->i] = NULL;
        }
    }

    /* Fan in: one await per line; the parent is polled again whenever the
     * child it waits for finishes. */
    for (s->i = 0; s->i < CHILDREN; s->i++) {
        if (!s->children[s->i])
            continue;
        BLITZ_AWAIT(s, blitz_join(cx, s->children[s->i]));
        if (blitz_task_status(s->children[s->i]) == BLITZ_OK)
            s->total += ((child_state *)blitz_task_state(s->children[s->i]))->result;
        else
            s->failed = 1;
        blitz_task_release(&s->children[s->i]);
    }
    BLITZ_END(s);
}

int main(void) {
    static parent_state parent; /* zero: the coroutine starts at the top */
    /* blitz_run: a default multi-thread runtime (one worker per CPU) runs
     * the parent; its final state is copied back into `parent`. */
    int rc = blitz_run(parent_poll, &parent, sizeof parent);
    if (rc != BLITZ_OK || parent.failed) {
        fprintf(stderr, "fanout failed: %s\n", blitz_strerror(rc));
        return 1;
    }

    uint64_t expect = 0;
    for (uint64_t i = 1; i <= N; i++)
        expect += i * i;
    printf("sum of squares 1..%llu over %d child tasks = %" PRIu64 " (%s)\n", (unsigned long long)N,
           CHILDREN, parent.total, parent.total == expect ? "correct" : "WRONG");
    return parent.total == expect ? 0 : 1;
}
