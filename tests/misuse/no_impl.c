/* A program in which no file defines BLITZ_IMPLEMENTATION: it must fail to
 * link, and the first error must name
 * blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file, even though a function
 * above main already calls into blitz. */
#include "blitz.h"

static blitz_poll done_poll(blitz_cx *cx, void *p) {
    (void)p;
    return blitz_cx_worker(cx) >= -1 ? BLITZ_READY : BLITZ_PENDING;
}

int main(void) {
    char state = 0;
    return blitz_run(done_poll, &state, sizeof state);
}
