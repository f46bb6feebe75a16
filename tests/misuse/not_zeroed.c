/* A task state that does not start zero-filled. In a debug build BLITZ_END
 * must stop the program with a message naming this file and the poll
 * function; with NDEBUG the task finishes without running its body. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    BLITZ_CORO;
    int ran;
} state;

static blitz_poll garbage_poll(blitz_cx *cx, void *p) {
    state *s = p;
    BLITZ_BEGIN(s);
    s->ran = 1;
    BLITZ_YIELD(s, cx);
    BLITZ_END(s);
}

int main(void) {
    state s;
    memset(&s, 0x5a, sizeof s); /* what an uninitialised stack may hold */
    s.ran = 0;
    int rc = blitz_run(garbage_poll, &s, sizeof s);
    printf("blitz_run: %d, body ran: %d\n", rc, s.ran);
    return rc;
}
