/* A local variable initialised before an await and used after it: gcc
 * -Wjump-misses-init must reject it (resuming jumps past the
 * initialisation). */
#include "blitz.h"

typedef struct {
    BLITZ_CORO;
    blitz_task *child;
    long total;
} state;

blitz_poll misuse_poll(blitz_cx *cx, void *p);
blitz_poll misuse_poll(blitz_cx *cx, void *p) {
    state *s = p;
    BLITZ_BEGIN(s);
    long n = 42;
    BLITZ_AWAIT(s, blitz_join(cx, s->child));
    s->total += n;
    BLITZ_END(s);
}
