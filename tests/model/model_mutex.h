/* The runtime's mutex (src/platform) as a Relacy mutex, for checks of
 * protocols that take a lock around part of their state. */
#ifndef BLITZ_MODEL_MUTEX_H
#define BLITZ_MODEL_MUTEX_H
#include "model.h"

typedef struct {
    rl::mutex m;
} blitz__mutex;
static int blitz__mutex_init(blitz__mutex *m) {
    (void)m;
    return 0;
}
static void blitz__mutex_destroy(blitz__mutex *m) {
    (void)m;
}
static void blitz__mutex_lock(blitz__mutex *m) {
    m->m.lock($);
}
static int blitz__mutex_trylock(blitz__mutex *m) {
    return m->m.try_lock($);
}
static void blitz__mutex_unlock(blitz__mutex *m) {
    m->m.unlock($);
}
#endif
