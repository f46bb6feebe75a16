/* The async reader-writer lock: a semaphore with BLITZ_RWLOCK_MAX_READERS
 * permits; a reader takes one, a writer all of them. FIFO handoff makes a
 * queued writer block later readers (the pool stays empty while it waits)
 * and hands the readers queued behind a writer the lock together. */
#include "sync_internal.h"

#define BLITZ__RW_ALL BLITZ_RWLOCK_MAX_READERS

BLITZ_API int blitz_rwlock_init(blitz_rwlock *l) {
    return l ? blitz_semaphore_init(&l->blitz__sem, BLITZ__RW_ALL) : BLITZ_EINVAL;
}

BLITZ_API void blitz_rwlock_deinit(blitz_rwlock *l) {
    if (l)
        blitz_semaphore_deinit(&l->blitz__sem);
}

BLITZ_API int blitz_rwlock_try_read(blitz_rwlock *l) {
    return l ? blitz_semaphore_try_acquire(&l->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API int blitz_rwlock_try_write(blitz_rwlock *l) {
    return l ? blitz_semaphore_try_acquire(&l->blitz__sem, BLITZ__RW_ALL) : BLITZ_EINVAL;
}

BLITZ_API blitz_poll blitz_rwlock_read(blitz_cx *cx, blitz_rwlock_op *op, blitz_rwlock *l) {
    if (!op)
        return BLITZ_READY;
    return blitz__record(cx,
                         blitz_semaphore_acquire(cx, &op->blitz__acq, l ? &l->blitz__sem : NULL, 1),
                         blitz_rwlock_cancel, op);
}

BLITZ_API blitz_poll blitz_rwlock_write(blitz_cx *cx, blitz_rwlock_op *op, blitz_rwlock *l) {
    if (!op)
        return BLITZ_READY;
    return blitz__record(
        cx, blitz_semaphore_acquire(cx, &op->blitz__acq, l ? &l->blitz__sem : NULL, BLITZ__RW_ALL),
        blitz_rwlock_cancel, op);
}

BLITZ_API void blitz_rwlock_cancel(blitz_cx *cx, void *op) {
    blitz_semaphore_acquire_cancel(cx, op ? &((blitz_rwlock_op *)op)->blitz__acq : NULL);
}

static blitz_op blitz__rwlock_op(blitz_rwlock_op *op, blitz_rwlock *l, size_t n) {
    blitz_op o =
        blitz_op_semaphore_acquire(op ? &op->blitz__acq : NULL, l ? &l->blitz__sem : NULL, n);
    o.cancel = blitz_rwlock_cancel;
    return o;
}

BLITZ_API blitz_op blitz_op_rwlock_read(blitz_rwlock_op *op, blitz_rwlock *l) {
    return blitz__rwlock_op(op, l, 1);
}

BLITZ_API blitz_op blitz_op_rwlock_write(blitz_rwlock_op *op, blitz_rwlock *l) {
    return blitz__rwlock_op(op, l, BLITZ__RW_ALL);
}

BLITZ_API int blitz_rwlock_read_blocking(blitz_rwlock *l) {
    return l ? blitz_semaphore_acquire_blocking(&l->blitz__sem, 1) : BLITZ_EINVAL;
}

BLITZ_API int blitz_rwlock_write_blocking(blitz_rwlock *l) {
    return l ? blitz_semaphore_acquire_blocking(&l->blitz__sem, BLITZ__RW_ALL) : BLITZ_EINVAL;
}

BLITZ_API void blitz_rwlock_read_unlock(blitz_rwlock *l) {
    if (l)
        blitz_semaphore_release(&l->blitz__sem, 1);
}

BLITZ_API void blitz_rwlock_write_unlock(blitz_rwlock *l) {
    if (l)
        blitz_semaphore_release(&l->blitz__sem, BLITZ__RW_ALL);
}
