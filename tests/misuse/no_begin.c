/* A coroutine macro outside BLITZ_BEGIN ... BLITZ_END: compiled with
 * -DMISUSE=AWAIT, YIELD, RETURN or END, it must fail to compile with an
 * error naming blitz_<MISUSE>_needs_BLITZ_BEGIN. */
#include "blitz.h"

typedef struct {
    BLITZ_CORO;
    blitz_task *child;
} state;

#define AWAIT  1
#define YIELD  2
#define RETURN 3
#define END    4

blitz_poll misuse_poll(blitz_cx *cx, void *p);
blitz_poll misuse_poll(blitz_cx *cx, void *p) {
    state *s = (state *)p;
#if MISUSE == AWAIT
    BLITZ_AWAIT(s, blitz_join(cx, s->child));
#elif MISUSE == YIELD
    BLITZ_YIELD(s, cx);
#elif MISUSE == RETURN
    (void)cx;
    BLITZ_RETURN(s);
#elif MISUSE == END
    (void)cx;
    BLITZ_END(s);
#endif
    return BLITZ_READY;
}
