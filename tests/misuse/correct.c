/* The control: the same shapes used correctly compile without a warning
 * (also under -Wjump-misses-init) and run to the end. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>

typedef struct {
    BLITZ_CORO;
    blitz_task *child;
    long total;
} state;

static blitz_poll child_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_READY;
}

static blitz_poll parent_poll(blitz_cx *cx, void *p) {
    state *s = p;
    BLITZ_BEGIN(s);
    s->total = 42; /* in the state: survives the await */
    if (blitz_spawn(blitz_cx_runtime(cx), child_poll, NULL, 1, &s->child) != BLITZ_OK)
        BLITZ_RETURN(s);
    BLITZ_YIELD(s, cx);
    BLITZ_AWAIT(s, blitz_join(cx, s->child));
    blitz_task_release(&s->child);
    s->total += 1;
    BLITZ_END(s);
}

int main(void) {
    state s = {0};
    int rc = blitz_run(parent_poll, &s, sizeof s);
    printf("blitz_run: %d, total: %ld\n", rc, s.total);
    return rc == BLITZ_OK && s.total == 43 ? 0 : 1;
}
