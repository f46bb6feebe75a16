/* Kicks of other threads that the calling thread holds back until it has
 * done what they would otherwise delay.
 *
 * Completing a task as cancelled withdraws the op it waits in. On a
 * completion backend that is a cancel the kernel must see, and the system
 * call that submits it also wakes the thread parked in the op's ring. On a
 * loaded machine the woken thread takes the CPU from the canceller while
 * the canceller still holds the op's lock (which the woken thread's
 * reaping then spins on) or has not yet woken the task's joiner (measured
 * from a plain thread on 2 CPUs: 3-12 ms at p99 for the cancel and the
 * joiner's wake, against 0.05 ms on epoll). So between blitz__defer_begin
 * and the outermost blitz__defer_end such a kick is queued on the calling
 * thread, and the end runs the queue; outside such a span, or with the
 * queue full, it runs at once (earlier is only slower, never wrong).
 *
 * Whoever defers a kick keeps what it refers to alive until then (an io
 * ring lives as long as its runtime, and the op the kick concerns is still
 * the kernel's). Thread-local: no other thread sees the queue. */
#include "core.h"

#define BLITZ__DEFER_MAX 8

typedef struct {
    uint32_t depth;
    uint32_t n;
    void (*fn[BLITZ__DEFER_MAX])(void *);
    void *arg[BLITZ__DEFER_MAX];
} blitz__deferred;

static BLITZ__THREAD_LOCAL blitz__deferred blitz__tls_deferred;

BLITZ_PRIVATE void blitz__defer_begin(void) {
    blitz__tls_deferred.depth++;
}

BLITZ_PRIVATE void blitz__defer_end(void) {
    blitz__deferred *d = &blitz__tls_deferred;
    if (--d->depth)
        return;
    /* Taken out first: a kick runs outside the span, and whatever it defers
     * runs at once. */
    blitz__deferred run = *d;
    d->n = 0;
    for (uint32_t i = 0; i < run.n; i++)
        run.fn[i](run.arg[i]);
}

BLITZ_PRIVATE void blitz__defer_kick(void (*fn)(void *), void *arg) {
    blitz__deferred *d = &blitz__tls_deferred;
    if (d->depth) {
        for (uint32_t i = 0; i < d->n; i++)
            if (d->fn[i] == fn && d->arg[i] == arg)
                return; /* one kick does for both */
        if (d->n < BLITZ__DEFER_MAX) {
            d->fn[d->n] = fn;
            d->arg[d->n] = arg;
            d->n++;
            return;
        }
    }
    fn(arg);
}
