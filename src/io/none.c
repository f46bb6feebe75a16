/* The I/O driver's entry points on a system whose backend is not built
 * yet (Windows until IOCP): every runtime is one with no I/O driver
 * (BLITZ_BACKEND_NONE), as on Linux when no backend starts, so tasks,
 * timers and the blocking pool run and threads park on their parkers.
 * Each answer here is the one driver.c gives for a runtime without
 * rt->io. */
#include "io.h"

#if !BLITZ__HAS_IO

BLITZ_PRIVATE void blitz__io_poll(blitz_runtime *rt) {
    (void)rt;
}
BLITZ_PRIVATE void blitz__io_after_drive(blitz_runtime *rt) {
    (void)rt;
}
BLITZ_PRIVATE void blitz__io_between_ticks(blitz_runtime *rt, uint64_t *polls_since) {
    (void)rt;
    (void)polls_since;
}
BLITZ_PRIVATE uint32_t blitz__io_spin_rounds(blitz_runtime *rt) {
    return rt->spin_before_park;
}
BLITZ_PRIVATE int blitz__io_serving(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
BLITZ_PRIVATE int blitz__io_ready_cheap(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
BLITZ_PRIVATE int blitz__io_parks_workers(blitz_runtime *rt) {
    (void)rt;
    return 0;
}
BLITZ_PRIVATE void blitz__io_worker_start(blitz_runtime *rt, uint32_t index) {
    (void)rt;
    (void)index;
}
BLITZ_PRIVATE void blitz__io_driver_start(blitz_runtime *rt) {
    (void)rt;
}
BLITZ_PRIVATE void blitz__io_flush(blitz_runtime *rt) {
    (void)rt;
}
/* Never called: the schedulers park here only when rt->io is set. */
BLITZ_PRIVATE void blitz__io_park(blitz_runtime *rt, blitz__parker *p, uint64_t timeout_ns,
                                  void (*woke)(void *), void *arg) {
    (void)rt;
    (void)woke;
    (void)arg;
    blitz__parker_park(p, timeout_ns);
}

BLITZ_API const char *blitz_backend_name(blitz_backend b) {
    return b == BLITZ_BACKEND_AUTO ? "auto" : "none";
}
BLITZ_API blitz_backend blitz_runtime_backend(const blitz_runtime *rt) {
    (void)rt;
    return BLITZ_BACKEND_NONE;
}

/* AUTO and NONE give a runtime without I/O; a named backend cannot start
 * (BLITZ_ENOSYS, as a compiled-out one elsewhere). */
BLITZ_PRIVATE int blitz__io_create(blitz_runtime *rt, blitz_backend forced) {
    (void)rt;
    if (forced > BLITZ_BACKEND_KQUEUE)
        return BLITZ_EINVAL;
    return forced == BLITZ_BACKEND_AUTO || forced == BLITZ_BACKEND_NONE ? BLITZ_OK : BLITZ_ENOSYS;
}
BLITZ_PRIVATE int blitz__io_wake_fd(const blitz__io *io, uint32_t index) {
    (void)io;
    (void)index;
    return -1;
}
BLITZ_PRIVATE void blitz__io_shutdown(blitz_runtime *rt) {
    (void)rt;
}
BLITZ_PRIVATE void blitz__io_destroy(blitz_runtime *rt) {
    (void)rt;
}

#endif
