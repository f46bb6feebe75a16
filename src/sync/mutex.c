/* The async mutex: a semaphore with one permit (FIFO, no spinning). */
#include "sync_internal.h"

BLITZ_API int blitz_mutex_init(blitz_mutex *m) {
    return m ? blitz_semaphore_init(&m->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API void blitz_mutex_deinit(blitz_mutex *m) {
    if (m)
        blitz_semaphore_deinit(&m->blitz__sem);
}

BLITZ_API int blitz_mutex_try_lock(blitz_mutex *m) {
    return m ? blitz_semaphore_try_acquire(&m->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API blitz_poll blitz_mutex_lock(blitz_cx *cx, blitz_mutex_lock_op *op, blitz_mutex *m) {
    if (!op)
        return BLITZ_READY;
    return blitz__record(cx,
                         blitz_semaphore_acquire(cx, &op->blitz__acq, m ? &m->blitz__sem : NULL, 1),
                         blitz_mutex_lock_cancel, op);
}

BLITZ_API void blitz_mutex_lock_cancel(blitz_cx *cx, void *op) {
    blitz_semaphore_acquire_cancel(cx, op ? &((blitz_mutex_lock_op *)op)->blitz__acq : NULL);
}

BLITZ_API blitz_op blitz_op_mutex_lock(blitz_mutex_lock_op *op, blitz_mutex *m) {
    blitz_op o =
        blitz_op_semaphore_acquire(op ? &op->blitz__acq : NULL, m ? &m->blitz__sem : NULL, 1);
    o.cancel = blitz_mutex_lock_cancel;
    return o;
}

BLITZ_API int blitz_mutex_lock_blocking(blitz_mutex *m) {
    return m ? blitz_semaphore_acquire_blocking(&m->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API void blitz_mutex_unlock(blitz_mutex *m) {
    if (m)
        blitz_semaphore_release(&m->blitz__sem, 1);
}

BLITZ_API int blitz_mutex_is_locked(const blitz_mutex *m) {
    return m && blitz_semaphore_available(&m->blitz__sem) == 0;
}
