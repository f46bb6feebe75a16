/* Tests of the sync area (tests/list_sync.h): semaphore, mutex, rwlock,
 * notify, barrier, once cell, cancellation token.
 *
 * The first half drives ops by hand with a task-less poll context and a
 * counting waker, so queue order, handoff, partial fills and cancellation
 * are checked step by step. The second half runs them in runtimes of every
 * flavour, from tasks and plain threads at once, with invariant checkers
 * (holders never exceed permits, every permit accounted for at the end). */
#include "test_util.h"

#if defined(__GLIBC__)
#include <malloc.h>
/* Bytes the C library's heap holds in use. */
static size_t ts_heap_in_use(void) {
    return mallinfo2().uordblks;
}
#elif defined(__APPLE__)
#include <malloc/malloc.h>
static size_t ts_heap_in_use(void) {
    malloc_statistics_t st;
    malloc_zone_statistics(NULL, &st);
    return st.size_in_use;
}
#else
static size_t ts_heap_in_use(void) {
    return 0; /* unknown: the leak check below checks nothing */
}
#endif

/* ---- a poll context with a counting waker ------------------------------------ */

typedef struct {
    atomic_int wakes;
    atomic_int refs; /* clones not yet woken or dropped */
} ts_wk;

static void ts_wk_wake(const void *d) {
    ts_wk *w = (ts_wk *)d;
    atomic_fetch_add(&w->wakes, 1);
    atomic_fetch_sub(&w->refs, 1);
}
static void ts_wk_wake_by_ref(const void *d) {
    atomic_fetch_add(&((ts_wk *)d)->wakes, 1);
}
static void ts_wk_drop(const void *d) {
    atomic_fetch_sub(&((ts_wk *)d)->refs, 1);
}
static blitz_waker ts_wk_clone(const void *d);
static const blitz_waker_vtable ts_wk_vtable = {ts_wk_wake, ts_wk_wake_by_ref, ts_wk_clone,
                                                ts_wk_drop};
static blitz_waker ts_wk_clone(const void *d) {
    atomic_fetch_add(&((ts_wk *)d)->refs, 1);
    blitz_waker w = {d, &ts_wk_vtable};
    return w;
}

/* One simulated task: its poll context and its waker's counters. */
typedef struct {
    ts_wk wk;
    blitz__context ctx;
    blitz_cx cx;
} ts_task;

static void ts_task_init(ts_task *t) {
    memset(t, 0, sizeof *t);
    blitz_waker w = {&t->wk, &ts_wk_vtable};
    blitz__cx_init_waker(&t->cx, &t->ctx, w);
}
static int ts_wakes(ts_task *t) {
    return atomic_load(&t->wk.wakes);
}
static int ts_refs(ts_task *t) {
    return atomic_load(&t->wk.refs);
}

#define TS_PENDING(expr) CHECK_EQ((expr), BLITZ_PENDING)
#define TS_READY(expr)   CHECK_EQ((expr), BLITZ_READY)

/* ---- semaphore ------------------------------------------------------------------ */

BLITZ_TEST(sync_sem_basics) {
    blitz_semaphore sem;
    CHECK_EQ(blitz_semaphore_init(NULL, 1), BLITZ_EINVAL);
    CHECK_EQ(blitz_semaphore_init(&sem, BLITZ_SEMAPHORE_MAX_PERMITS + 1), BLITZ_EINVAL);
    CHECK_OK(blitz_semaphore_init(&sem, 3));
    CHECK_EQ(blitz_semaphore_available(&sem), 3);
    CHECK_EQ(blitz_semaphore_try_acquire(&sem, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_semaphore_try_acquire(NULL, 1), BLITZ_EINVAL);
    CHECK_EQ(blitz_semaphore_try_acquire(&sem, BLITZ_SEMAPHORE_MAX_PERMITS + 1), BLITZ_EINVAL);
    CHECK_OK(blitz_semaphore_try_acquire(&sem, 2));
    CHECK_EQ(blitz_semaphore_try_acquire(&sem, 2), BLITZ_EAGAIN);
    CHECK_OK(blitz_semaphore_try_acquire(&sem, 1));
    CHECK_EQ(blitz_semaphore_available(&sem), 0);
    CHECK_EQ(blitz_semaphore_release(&sem, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_semaphore_release(NULL, 1), BLITZ_EINVAL);
    CHECK_OK(blitz_semaphore_release(&sem, 3));
    CHECK_EQ(blitz_semaphore_available(&sem), 3);
    /* The pool is bounded: a release past the maximum is refused whole. */
    CHECK_EQ(blitz_semaphore_release(&sem, BLITZ_SEMAPHORE_MAX_PERMITS), BLITZ_EINVAL);
    CHECK_EQ(blitz_semaphore_available(&sem), 3);
    CHECK_OK(blitz_semaphore_release(&sem, BLITZ_SEMAPHORE_MAX_PERMITS - 3));
    CHECK_EQ(blitz_semaphore_available(&sem), BLITZ_SEMAPHORE_MAX_PERMITS);
    CHECK_OK(blitz_semaphore_try_acquire(&sem, BLITZ_SEMAPHORE_MAX_PERMITS));
    CHECK_EQ(blitz_semaphore_available(&sem), 0);
    /* Async argument errors complete at once. */
    ts_task t;
    ts_task_init(&t);
    blitz_semaphore_acquire_op op;
    memset(&op, 0, sizeof op);
    TS_READY(blitz_semaphore_acquire(&t.cx, &op, &sem, 0));
    CHECK_EQ(op.result, BLITZ_EINVAL);
    TS_READY(blitz_semaphore_acquire(&t.cx, &op, NULL, 1));
    CHECK_EQ(op.result, BLITZ_EINVAL);
    TS_READY(blitz_semaphore_acquire(&t.cx, NULL, &sem, 1));
    blitz_semaphore_acquire_cancel(NULL, NULL);
    blitz_semaphore_acquire_cancel(NULL, &op); /* idle: nothing */
    /* Blocking form from a plain thread. */
    CHECK_OK(blitz_semaphore_release(&sem, 1));
    CHECK_OK(blitz_semaphore_acquire_blocking(&sem, 1));
    CHECK_EQ(blitz_semaphore_acquire_blocking(&sem, 0), BLITZ_EINVAL);
    blitz_semaphore_deinit(&sem);
    CHECK_EQ(ts_refs(&t), 0);
    return 0;
}

/* Release hands permits to the queue head, partly filling it; later,
 * smaller requests wait behind a big head (no barging, §4.3 item 4). */
BLITZ_TEST(sync_sem_fifo_handoff) {
    blitz_semaphore sem;
    CHECK_OK(blitz_semaphore_init(&sem, 2));
    ts_task a, b, c;
    ts_task_init(&a);
    ts_task_init(&b);
    ts_task_init(&c);
    blitz_semaphore_acquire_op oa, ob, oc;
    memset(&oa, 0, sizeof oa);
    memset(&ob, 0, sizeof ob);
    memset(&oc, 0, sizeof oc);
    /* A wants 5, takes the 2 in the pool and waits for 3. */
    TS_PENDING(blitz_semaphore_acquire(&a.cx, &oa, &sem, 5));
    CHECK_EQ(blitz_semaphore_available(&sem), 0);
    TS_PENDING(blitz_semaphore_acquire(&b.cx, &ob, &sem, 1));
    TS_PENDING(blitz_semaphore_acquire(&c.cx, &oc, &sem, 2));
    /* One permit: to A (partial), not to B although B wants only one. */
    CHECK_OK(blitz_semaphore_release(&sem, 1));
    CHECK_EQ(blitz_semaphore_available(&sem), 0);
    CHECK_EQ(ts_wakes(&a) + ts_wakes(&b) + ts_wakes(&c), 0);
    CHECK_EQ(blitz_semaphore_try_acquire(&sem, 1), BLITZ_EAGAIN);
    TS_PENDING(blitz_semaphore_acquire(&b.cx, &ob, &sem, 1)); /* re-poll: still queued */
    /* Three more: A completes (2 of them), B gets the third. */
    CHECK_OK(blitz_semaphore_release(&sem, 3));
    CHECK_EQ(ts_wakes(&a), 1);
    CHECK_EQ(ts_wakes(&b), 1);
    CHECK_EQ(ts_wakes(&c), 0);
    TS_READY(blitz_semaphore_acquire(&a.cx, &oa, &sem, 5));
    CHECK_EQ(oa.result, BLITZ_OK);
    TS_READY(blitz_semaphore_acquire(&b.cx, &ob, &sem, 1));
    CHECK_EQ(ob.result, BLITZ_OK);
    CHECK_EQ(blitz_semaphore_available(&sem), 0);
    /* Five back: C takes 2, the pool keeps 3. */
    CHECK_OK(blitz_semaphore_release(&sem, 5));
    CHECK_EQ(ts_wakes(&c), 1);
    TS_READY(blitz_semaphore_acquire(&c.cx, &oc, &sem, 2));
    CHECK_EQ(oc.result, BLITZ_OK);
    CHECK_EQ(blitz_semaphore_available(&sem), 3);
    /* Everything back: 3 + A's 5 + B's 1 + C's 2 - the 5 released = 2 + 4. */
    CHECK_OK(blitz_semaphore_release(&sem, 5 + 1 + 2 - 5));
    CHECK_EQ(blitz_semaphore_available(&sem), 6);
    CHECK_EQ(ts_refs(&a) + ts_refs(&b) + ts_refs(&c), 0);
    blitz_semaphore_deinit(&sem);
    return 0;
}

/* A cancelled waiter returns exactly its partial permits and wakes the
 * next (§4.3 item 3); one that completed unseen returns all of them. */
BLITZ_TEST(sync_sem_cancel_returns_permits) {
    blitz_semaphore sem;
    CHECK_OK(blitz_semaphore_init(&sem, 2));
    ts_task a, b, c;
    ts_task_init(&a);
    ts_task_init(&b);
    ts_task_init(&c);
    blitz_semaphore_acquire_op oa, ob, oc;
    memset(&oa, 0, sizeof oa);
    memset(&ob, 0, sizeof ob);
    memset(&oc, 0, sizeof oc);
    TS_PENDING(blitz_semaphore_acquire(&a.cx, &oa, &sem, 4)); /* holds 2 of 4 */
    TS_PENDING(blitz_semaphore_acquire(&b.cx, &ob, &sem, 1));
    TS_PENDING(blitz_semaphore_acquire(&c.cx, &oc, &sem, 3));
    blitz_semaphore_acquire_cancel(NULL, &oa);
    /* A's 2: one completes B, one partly fills C. */
    CHECK_EQ(ts_wakes(&b), 1);
    CHECK_EQ(ts_wakes(&c), 0);
    CHECK_EQ(ts_wakes(&a), 0);
    CHECK_EQ(ts_refs(&a), 0);
    CHECK_EQ(blitz_semaphore_available(&sem), 0);
    blitz_semaphore_acquire_cancel(NULL, &oa); /* twice: nothing */
    /* B completed but never polled: cancelling it passes its permit on. */
    blitz_semaphore_acquire_cancel(NULL, &ob);
    CHECK_EQ(ts_wakes(&c), 0);
    CHECK_OK(blitz_semaphore_release(&sem, 1));
    CHECK_EQ(ts_wakes(&c), 1);
    TS_READY(blitz_semaphore_acquire(&c.cx, &oc, &sem, 3));
    CHECK_EQ(oc.result, BLITZ_OK);
    /* A completed op that was seen keeps its permits: cancel is a no-op. */
    blitz_semaphore_acquire_cancel(NULL, &oc);
    CHECK_EQ(blitz_semaphore_available(&sem), 0);
    CHECK_OK(blitz_semaphore_release(&sem, 3));
    CHECK_EQ(blitz_semaphore_available(&sem), 3);
    /* The ops are reusable. */
    TS_READY(blitz_semaphore_acquire(&a.cx, &oa, &sem, 3));
    CHECK_EQ(oa.result, BLITZ_OK);
    /* Cancelling the only waiter, which got nothing, clears the queue:
     * the next release goes to the pool. */
    TS_PENDING(blitz_semaphore_acquire(&b.cx, &ob, &sem, 1));
    blitz_semaphore_acquire_cancel(NULL, &ob);
    CHECK_OK(blitz_semaphore_release(&sem, 3));
    CHECK_EQ(blitz_semaphore_available(&sem), 3);
    CHECK_OK(blitz_semaphore_try_acquire(&sem, 1));
    CHECK_EQ(ts_refs(&a) + ts_refs(&b) + ts_refs(&c), 0);
    return 0;
}

BLITZ_TEST(sync_sem_close) {
    blitz_semaphore sem;
    CHECK_OK(blitz_semaphore_init(&sem, 1));
    ts_task a, b;
    ts_task_init(&a);
    ts_task_init(&b);
    blitz_semaphore_acquire_op oa, ob;
    memset(&oa, 0, sizeof oa);
    memset(&ob, 0, sizeof ob);
    TS_PENDING(blitz_semaphore_acquire(&a.cx, &oa, &sem, 3)); /* holds 1 of 3 */
    TS_PENDING(blitz_semaphore_acquire(&b.cx, &ob, &sem, 1));
    CHECK(!blitz_semaphore_is_closed(&sem));
    blitz_semaphore_close(&sem);
    CHECK(blitz_semaphore_is_closed(&sem));
    CHECK_EQ(ts_wakes(&a), 1);
    CHECK_EQ(ts_wakes(&b), 1);
    TS_READY(blitz_semaphore_acquire(&a.cx, &oa, &sem, 3));
    CHECK_EQ(oa.result, BLITZ_ECLOSED);
    TS_READY(blitz_semaphore_acquire(&b.cx, &ob, &sem, 1));
    CHECK_EQ(ob.result, BLITZ_ECLOSED);
    /* A's partial permit went back to the pool. */
    CHECK_EQ(blitz_semaphore_available(&sem), 1);
    CHECK_EQ(blitz_semaphore_try_acquire(&sem, 1), BLITZ_ECLOSED);
    TS_READY(blitz_semaphore_acquire(&a.cx, &oa, &sem, 1));
    CHECK_EQ(oa.result, BLITZ_ECLOSED);
    CHECK_EQ(blitz_semaphore_acquire_blocking(&sem, 1), BLITZ_ECLOSED);
    CHECK_OK(blitz_semaphore_release(&sem, 2));
    CHECK_EQ(blitz_semaphore_available(&sem), 3);
    blitz_semaphore_close(&sem); /* idempotent */
    /* Cancelling an op closed out and not yet seen gives back nothing. */
    blitz_semaphore sem2;
    CHECK_OK(blitz_semaphore_init(&sem2, 0));
    TS_PENDING(blitz_semaphore_acquire(&a.cx, &oa, &sem2, 1));
    blitz_semaphore_close(&sem2);
    blitz_semaphore_acquire_cancel(NULL, &oa);
    CHECK_EQ(blitz_semaphore_available(&sem2), 0);
    CHECK_EQ(ts_refs(&a) + ts_refs(&b), 0);
    return 0;
}

/* ---- mutex and rwlock --------------------------------------------------------------- */

BLITZ_TEST(sync_mutex_basics) {
    blitz_mutex m;
    CHECK_EQ(blitz_mutex_init(NULL), BLITZ_EINVAL);
    CHECK_OK(blitz_mutex_init(&m));
    CHECK(!blitz_mutex_is_locked(&m));
    CHECK_OK(blitz_mutex_try_lock(&m));
    CHECK(blitz_mutex_is_locked(&m));
    CHECK_EQ(blitz_mutex_try_lock(&m), BLITZ_EAGAIN);
    ts_task t[3];
    blitz_mutex_lock_op op[3];
    memset(op, 0, sizeof op);
    for (int i = 0; i < 3; i++) {
        ts_task_init(&t[i]);
        TS_PENDING(blitz_mutex_lock(&t[i].cx, &op[i], &m));
    }
    /* FIFO: each unlock hands the lock to the next in arrival order. */
    for (int i = 0; i < 3; i++) {
        blitz_mutex_unlock(&m);
        for (int j = 0; j < 3; j++)
            CHECK_EQ(ts_wakes(&t[j]), j <= i);
        TS_READY(blitz_mutex_lock(&t[i].cx, &op[i], &m));
        CHECK_EQ(op[i].blitz__acq.result, BLITZ_OK);
        CHECK(blitz_mutex_is_locked(&m));
        CHECK_EQ(blitz_mutex_try_lock(&m), BLITZ_EAGAIN);
    }
    blitz_mutex_unlock(&m);
    CHECK(!blitz_mutex_is_locked(&m));
    /* Through the op value: poll and cancel as a combinator would. */
    CHECK_OK(blitz_mutex_try_lock(&m));
    blitz_op o = blitz_op_mutex_lock(&op[0], &m);
    TS_PENDING(o.poll(&t[0].cx, o.arg));
    blitz_mutex_unlock(&m); /* handed to op[0] */
    o.cancel(NULL, o.arg);  /* unseen: passed on, to the pool */
    CHECK(!blitz_mutex_is_locked(&m));
    CHECK_OK(blitz_mutex_lock_blocking(&m));
    blitz_mutex_unlock(&m);
    blitz_mutex_deinit(&m);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(ts_refs(&t[i]), 0);
    return 0;
}

/* A queued writer blocks new readers and gets the lock when the last
 * reader leaves; the readers behind it get the lock together after it
 * (§4.3 item 4). */
BLITZ_TEST(sync_rwlock_writer_priority) {
    blitz_rwlock l;
    CHECK_OK(blitz_rwlock_init(&l));
    CHECK_OK(blitz_rwlock_try_read(&l));
    CHECK_OK(blitz_rwlock_try_read(&l));
    CHECK_EQ(blitz_rwlock_try_write(&l), BLITZ_EAGAIN);
    ts_task w, r1, r2;
    ts_task_init(&w);
    ts_task_init(&r1);
    ts_task_init(&r2);
    blitz_rwlock_op ow, o1, o2;
    memset(&ow, 0, sizeof ow);
    memset(&o1, 0, sizeof o1);
    memset(&o2, 0, sizeof o2);
    TS_PENDING(blitz_rwlock_write(&w.cx, &ow, &l));
    CHECK_EQ(blitz_rwlock_try_read(&l), BLITZ_EAGAIN);
    TS_PENDING(blitz_rwlock_read(&r1.cx, &o1, &l));
    TS_PENDING(blitz_rwlock_read(&r2.cx, &o2, &l));
    blitz_rwlock_read_unlock(&l);
    CHECK_EQ(ts_wakes(&w), 0);
    blitz_rwlock_read_unlock(&l);
    CHECK_EQ(ts_wakes(&w), 1);
    CHECK_EQ(ts_wakes(&r1) + ts_wakes(&r2), 0);
    TS_READY(blitz_rwlock_write(&w.cx, &ow, &l));
    CHECK_EQ(ow.blitz__acq.result, BLITZ_OK);
    CHECK_EQ(blitz_rwlock_try_read(&l), BLITZ_EAGAIN);
    blitz_rwlock_write_unlock(&l);
    CHECK_EQ(ts_wakes(&r1), 1);
    CHECK_EQ(ts_wakes(&r2), 1);
    TS_READY(blitz_rwlock_read(&r1.cx, &o1, &l));
    TS_READY(blitz_rwlock_read(&r2.cx, &o2, &l));
    /* Readers hold it; more readers get in while nobody waits. */
    CHECK_OK(blitz_rwlock_try_read(&l));
    blitz_rwlock_read_unlock(&l);
    /* A cancelled writer that had collected permits gives them to the
     * readers queued behind it. */
    TS_PENDING(blitz_rwlock_write(&w.cx, &ow, &l));
    TS_PENDING(blitz_rwlock_read(&r1.cx, &o1, &l));
    blitz_rwlock_cancel(NULL, &ow);
    CHECK_EQ(ts_wakes(&r1), 2);
    TS_READY(blitz_rwlock_read(&r1.cx, &o1, &l));
    blitz_rwlock_read_unlock(&l);
    blitz_rwlock_read_unlock(&l);
    blitz_rwlock_read_unlock(&l);
    CHECK_OK(blitz_rwlock_try_write(&l));
    blitz_rwlock_write_unlock(&l);
    CHECK_OK(blitz_rwlock_write_blocking(&l));
    blitz_rwlock_write_unlock(&l);
    CHECK_OK(blitz_rwlock_read_blocking(&l));
    blitz_rwlock_read_unlock(&l);
    CHECK_EQ(blitz_semaphore_available(&l.blitz__sem), BLITZ_RWLOCK_MAX_READERS);
    CHECK_EQ(ts_refs(&w) + ts_refs(&r1) + ts_refs(&r2), 0);
    blitz_rwlock_deinit(&l);
    return 0;
}

/* ---- notify --------------------------------------------------------------------------- */

BLITZ_TEST(sync_notify_permit) {
    blitz_notify n;
    CHECK_OK(blitz_notify_init(&n));
    ts_task a, b, c;
    ts_task_init(&a);
    ts_task_init(&b);
    ts_task_init(&c);
    blitz_notify_wait_op oa, ob, oc;
    memset(&oa, 0, sizeof oa);
    memset(&ob, 0, sizeof ob);
    memset(&oc, 0, sizeof oc);
    CHECK_EQ(blitz_notify_try_wait(&n), BLITZ_EAGAIN);
    /* Before any wait: one permit stored, and it does not accumulate. */
    blitz_notify_one(&n);
    blitz_notify_one(&n);
    TS_READY(blitz_notify_wait(&a.cx, &oa, &n));
    TS_PENDING(blitz_notify_wait(&a.cx, &oa, &n));
    /* notify_waiters with a waiter wakes it and stores nothing. */
    blitz_notify_waiters(&n);
    CHECK_EQ(ts_wakes(&a), 1);
    TS_READY(blitz_notify_wait(&a.cx, &oa, &n));
    blitz_notify_waiters(&n); /* nobody waits: stores nothing */
    CHECK_EQ(blitz_notify_try_wait(&n), BLITZ_EAGAIN);
    /* notify_one wakes in FIFO order. */
    TS_PENDING(blitz_notify_wait(&a.cx, &oa, &n));
    TS_PENDING(blitz_notify_wait(&b.cx, &ob, &n));
    TS_PENDING(blitz_notify_wait(&c.cx, &oc, &n));
    blitz_notify_one(&n);
    CHECK_EQ(ts_wakes(&a), 2);
    CHECK_EQ(ts_wakes(&b), 0);
    /* A was chosen but abandons unseen: B gets the notification. */
    blitz_notify_wait_cancel(NULL, &oa);
    CHECK_EQ(ts_wakes(&b), 1);
    CHECK_EQ(ts_wakes(&c), 0);
    TS_READY(blitz_notify_wait(&b.cx, &ob, &n));
    /* C withdraws while queued: the next notify_one is stored. */
    blitz_notify_wait_cancel(NULL, &oc);
    blitz_notify_one(&n);
    CHECK_EQ(ts_wakes(&c), 0);
    CHECK_OK(blitz_notify_try_wait(&n));
    /* notify_waiters wakes only the ops waiting at the call. */
    TS_PENDING(blitz_notify_wait(&a.cx, &oa, &n));
    TS_PENDING(blitz_notify_wait(&b.cx, &ob, &n));
    blitz_notify_waiters(&n);
    TS_PENDING(blitz_notify_wait(&c.cx, &oc, &n));
    TS_READY(blitz_notify_wait(&a.cx, &oa, &n));
    TS_READY(blitz_notify_wait(&b.cx, &ob, &n));
    TS_PENDING(blitz_notify_wait(&c.cx, &oc, &n));
    /* A notify_waiters wake-up that is abandoned is not passed on. */
    TS_PENDING(blitz_notify_wait(&a.cx, &oa, &n));
    blitz_notify_waiters(&n);
    blitz_notify_wait_cancel(NULL, &oa);
    blitz_notify_wait_cancel(NULL, &oc); /* C was woken too */
    CHECK_EQ(blitz_notify_try_wait(&n), BLITZ_EAGAIN);
    /* Blocking with a stored permit. */
    blitz_notify_one(&n);
    CHECK_OK(blitz_notify_wait_blocking(&n));
    CHECK_EQ(blitz_notify_try_wait(NULL), BLITZ_EINVAL);
    CHECK_EQ(ts_refs(&a) + ts_refs(&b) + ts_refs(&c), 0);
    blitz_notify_deinit(&n);
    return 0;
}

/* ---- barrier ------------------------------------------------------------------------------ */

BLITZ_TEST(sync_barrier_generations) {
    blitz_barrier b;
    CHECK_EQ(blitz_barrier_init(&b, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_barrier_init(NULL, 2), BLITZ_EINVAL);
    CHECK_OK(blitz_barrier_init(&b, 3));
    ts_task t[4];
    blitz_barrier_wait_op op[4];
    memset(op, 0, sizeof op);
    for (int i = 0; i < 4; i++)
        ts_task_init(&t[i]);
    for (int gen = 0; gen < 3; gen++) {
        TS_PENDING(blitz_barrier_wait(&t[0].cx, &op[0], &b));
        TS_PENDING(blitz_barrier_wait(&t[1].cx, &op[1], &b));
        TS_READY(blitz_barrier_wait(&t[2].cx, &op[2], &b));
        CHECK_EQ(op[2].is_leader, 1);
        TS_READY(blitz_barrier_wait(&t[0].cx, &op[0], &b));
        TS_READY(blitz_barrier_wait(&t[1].cx, &op[1], &b));
        CHECK_EQ(op[0].is_leader + op[1].is_leader, 0);
    }
    CHECK_EQ(b.blitz__generation, 3);
    /* A cancelled wait withdraws its arrival: two more are needed. */
    TS_PENDING(blitz_barrier_wait(&t[0].cx, &op[0], &b));
    TS_PENDING(blitz_barrier_wait(&t[1].cx, &op[1], &b));
    blitz_barrier_wait_cancel(NULL, &op[0]);
    TS_PENDING(blitz_barrier_wait(&t[2].cx, &op[2], &b));
    CHECK_EQ(ts_wakes(&t[1]), 3);
    TS_READY(blitz_barrier_wait(&t[3].cx, &op[3], &b));
    CHECK_EQ(op[3].is_leader, 1);
    TS_READY(blitz_barrier_wait(&t[1].cx, &op[1], &b));
    TS_READY(blitz_barrier_wait(&t[2].cx, &op[2], &b));
    /* Cancel after the generation completed: nothing withdrawn. */
    TS_PENDING(blitz_barrier_wait(&t[0].cx, &op[0], &b));
    TS_PENDING(blitz_barrier_wait(&t[1].cx, &op[1], &b));
    TS_READY(blitz_barrier_wait(&t[2].cx, &op[2], &b));
    blitz_barrier_wait_cancel(NULL, &op[0]);
    TS_READY(blitz_barrier_wait(&t[1].cx, &op[1], &b));
    CHECK_EQ(b.blitz__arrived, 0);
    /* One party: every wait leads at once. */
    blitz_barrier one;
    CHECK_OK(blitz_barrier_init(&one, 1));
    for (int i = 0; i < 3; i++) {
        TS_READY(blitz_barrier_wait(&t[0].cx, &op[0], &one));
        CHECK_EQ(op[0].is_leader, 1);
    }
    int leader = 0;
    CHECK_OK(blitz_barrier_wait_blocking(&one, &leader));
    CHECK_EQ(leader, 1);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(ts_refs(&t[i]), 0);
    blitz_barrier_deinit(&b);
    blitz_barrier_deinit(&one);
    return 0;
}

/* ---- once cell ------------------------------------------------------------------------------ */

BLITZ_TEST(sync_once_cell_claims) {
    blitz_once_cell c;
    CHECK_OK(blitz_once_cell_init(&c));
    CHECK_NULL(blitz_once_cell_get(&c));
    CHECK(!blitz_once_cell_is_set(&c));
    ts_task a, b, d;
    ts_task_init(&a);
    ts_task_init(&b);
    ts_task_init(&d);
    blitz_once_cell_op oa, ob, od;
    memset(&oa, 0, sizeof oa);
    memset(&ob, 0, sizeof ob);
    memset(&od, 0, sizeof od);
    TS_READY(blitz_once_cell_get_or_claim(&a.cx, &oa, &c));
    CHECK_EQ(oa.claimed, 1);
    CHECK_EQ(blitz_once_cell_try_claim(&c), BLITZ_EBUSY);
    CHECK_EQ(blitz_once_cell_set(&c, &c), BLITZ_EBUSY);
    TS_PENDING(blitz_once_cell_get_or_claim(&b.cx, &ob, &c));
    TS_PENDING(blitz_once_cell_get_or_claim(&d.cx, &od, &c));
    /* A fails: the claim passes to B (first waiter), D keeps waiting. */
    CHECK_OK(blitz_once_cell_abandon(&c));
    CHECK_EQ(ts_wakes(&b), 1);
    CHECK_EQ(ts_wakes(&d), 0);
    /* B is abandoned before it saw the claim (say, by a timeout): D gets
     * it. */
    blitz_once_cell_get_or_claim_cancel(NULL, &ob);
    CHECK_EQ(ts_wakes(&d), 1);
    TS_READY(blitz_once_cell_get_or_claim(&d.cx, &od, &c));
    CHECK_EQ(od.claimed, 1);
    TS_PENDING(blitz_once_cell_get_or_claim(&a.cx, &oa, &c));
    static int value = 42;
    CHECK_EQ(blitz_once_cell_complete(NULL, &value), BLITZ_EINVAL);
    CHECK_OK(blitz_once_cell_complete(&c, &value));
    CHECK_EQ(blitz_once_cell_complete(&c, &value), BLITZ_EINVAL);
    CHECK_EQ(blitz_once_cell_abandon(&c), BLITZ_EINVAL);
    CHECK_EQ(ts_wakes(&a), 1);
    TS_READY(blitz_once_cell_get_or_claim(&a.cx, &oa, &c));
    CHECK_EQ(oa.claimed, 0);
    CHECK_PTR_EQ(oa.value, &value);
    CHECK_PTR_EQ(blitz_once_cell_get(&c), &value);
    CHECK(blitz_once_cell_is_set(&c));
    CHECK_EQ(blitz_once_cell_set(&c, NULL), BLITZ_EEXIST);
    CHECK_EQ(blitz_once_cell_try_claim(&c), BLITZ_EEXIST);
    TS_READY(blitz_once_cell_get_or_claim(&b.cx, &ob, &c));
    CHECK_PTR_EQ(ob.value, &value);
    /* A lone claimer that abandons leaves the cell empty again. */
    blitz_once_cell e;
    CHECK_OK(blitz_once_cell_init(&e));
    CHECK_OK(blitz_once_cell_try_claim(&e));
    CHECK_OK(blitz_once_cell_abandon(&e));
    CHECK_OK(blitz_once_cell_set(&e, &value));
    CHECK_PTR_EQ(blitz_once_cell_get(&e), &value);
    void *v = NULL;
    int claimed = -1;
    CHECK_OK(blitz_once_cell_get_or_claim_blocking(&e, &v, &claimed));
    CHECK_EQ(claimed, 0);
    CHECK_PTR_EQ(v, &value);
    CHECK_EQ(ts_refs(&a) + ts_refs(&b) + ts_refs(&d), 0);
    blitz_once_cell_deinit(&c);
    blitz_once_cell_deinit(&e);
    return 0;
}

static int ts_init_fail(void *arg, void **value) {
    (void)arg;
    (void)value;
    return BLITZ_EIO;
}
static int ts_init_ok(void *arg, void **value) {
    *value = arg;
    return BLITZ_OK;
}

BLITZ_TEST(sync_once_cell_init_blocking) {
    blitz_once_cell c;
    CHECK_OK(blitz_once_cell_init(&c));
    void *v = &v;
    CHECK_EQ(blitz_once_cell_get_or_init_blocking(&c, ts_init_fail, NULL, &v), BLITZ_EIO);
    CHECK_NULL(v);
    CHECK(!blitz_once_cell_is_set(&c));
    static int x = 7;
    CHECK_OK(blitz_once_cell_get_or_init_blocking(&c, ts_init_ok, &x, &v));
    CHECK_PTR_EQ(v, &x);
    CHECK_OK(blitz_once_cell_get_or_init_blocking(&c, ts_init_fail, NULL, &v));
    CHECK_PTR_EQ(v, &x);
    CHECK_EQ(blitz_once_cell_get_or_init_blocking(&c, NULL, NULL, &v), BLITZ_EINVAL);
    return 0;
}

/* ---- cancellation token -----------------------------------------------------------------------
 */

BLITZ_TEST(sync_cancel_token_tree) {
    blitz_cancel_token root, mid, leaf, other;
    CHECK_OK(blitz_cancel_token_init(&root));
    CHECK_OK(blitz_cancel_token_init_child(&mid, &root));
    CHECK_OK(blitz_cancel_token_init_child(&leaf, &mid));
    CHECK_OK(blitz_cancel_token_init_child(&other, &root));
    blitz_cancel_token spare;
    CHECK_EQ(blitz_cancel_token_init_child(&spare, NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_cancel_token_init_child(&spare, &spare), BLITZ_EINVAL);
    ts_task a, b;
    ts_task_init(&a);
    ts_task_init(&b);
    blitz_cancel_token_wait_op oa, ob;
    memset(&oa, 0, sizeof oa);
    memset(&ob, 0, sizeof ob);
    TS_PENDING(blitz_cancel_token_wait(&a.cx, &oa, &leaf));
    TS_PENDING(blitz_cancel_token_wait(&b.cx, &ob, &root));
    /* Cancelling a child leaves the parent alone. */
    blitz_cancel_token_cancel(&other);
    CHECK(blitz_cancel_token_is_cancelled(&other));
    CHECK(!blitz_cancel_token_is_cancelled(&root));
    /* Destroying the middle token moves the leaf up to the root. */
    blitz_cancel_token_deinit(&mid);
    CHECK_PTR_EQ(leaf.blitz__parent, &root);
    blitz_cancel_token_cancel(&root);
    CHECK(blitz_cancel_token_is_cancelled(&leaf));
    CHECK_EQ(ts_wakes(&a), 1);
    CHECK_EQ(ts_wakes(&b), 1);
    TS_READY(blitz_cancel_token_wait(&a.cx, &oa, &leaf));
    TS_READY(blitz_cancel_token_wait(&b.cx, &ob, &root));
    TS_READY(blitz_cancel_token_wait(&b.cx, &ob, &root)); /* stays cancelled */
    CHECK_OK(blitz_cancel_token_wait_blocking(&leaf));
    /* A child of a cancelled token starts cancelled. */
    blitz_cancel_token late;
    CHECK_OK(blitz_cancel_token_init_child(&late, &root));
    CHECK(blitz_cancel_token_is_cancelled(&late));
    /* A parent freed with live children: they become roots. */
    blitz_cancel_token_deinit(&root);
    CHECK_NULL(leaf.blitz__parent);
    CHECK_NULL(late.blitz__parent);
    blitz_cancel_token_deinit(&leaf);
    blitz_cancel_token_deinit(&other);
    blitz_cancel_token_deinit(&late);
    /* Withdrawn waits are not woken. */
    blitz_cancel_token t;
    CHECK_OK(blitz_cancel_token_init(&t));
    TS_PENDING(blitz_cancel_token_wait(&a.cx, &oa, &t));
    blitz_cancel_token_wait_cancel(NULL, &oa);
    blitz_cancel_token_cancel(&t);
    CHECK_EQ(ts_wakes(&a), 1);
    CHECK_EQ(ts_refs(&a) + ts_refs(&b), 0);
    blitz_cancel_token_deinit(&t);
    return 0;
}

/* Many waiters on a deep tree: cancel drains them in batches. */
BLITZ_TEST(sync_cancel_token_many_waiters) {
    enum { DEPTH = 5, PER = 30 };
    blitz_cancel_token tok[DEPTH];
    CHECK_OK(blitz_cancel_token_init(&tok[0]));
    for (int i = 1; i < DEPTH; i++)
        CHECK_OK(blitz_cancel_token_init_child(&tok[i], &tok[i - 1]));
    static ts_task t[DEPTH * PER];
    static blitz_cancel_token_wait_op op[DEPTH * PER];
    memset(op, 0, sizeof op);
    for (int i = 0; i < DEPTH * PER; i++) {
        ts_task_init(&t[i]);
        TS_PENDING(blitz_cancel_token_wait(&t[i].cx, &op[i], &tok[i % DEPTH]));
    }
    blitz_cancel_token_cancel(&tok[1]);
    for (int i = 0; i < DEPTH * PER; i++) {
        CHECK_EQ(ts_wakes(&t[i]), i % DEPTH != 0);
        if (i % DEPTH)
            TS_READY(blitz_cancel_token_wait(&t[i].cx, &op[i], &tok[i % DEPTH]));
    }
    blitz_cancel_token_cancel(&tok[0]);
    for (int i = 0; i < DEPTH * PER; i++) {
        CHECK_EQ(ts_wakes(&t[i]), 1);
        TS_READY(blitz_cancel_token_wait(&t[i].cx, &op[i], &tok[i % DEPTH]));
        CHECK_EQ(ts_refs(&t[i]), 0);
    }
    for (int i = DEPTH - 1; i >= 0; i--)
        blitz_cancel_token_deinit(&tok[i]);
    return 0;
}

/* Wake-list batching: more waiters than one batch, on every primitive. */
BLITZ_TEST(sync_many_waiters_batches) {
    enum { N = 100 };
    static ts_task t[N];
    static blitz_semaphore_acquire_op so[N];
    static blitz_notify_wait_op no[N];
    static blitz_barrier_wait_op bo[N];
    static blitz_once_cell_op oo[N];
    memset(so, 0, sizeof so);
    memset(no, 0, sizeof no);
    memset(bo, 0, sizeof bo);
    memset(oo, 0, sizeof oo);
    blitz_semaphore sem;
    blitz_notify n;
    blitz_barrier b;
    blitz_once_cell c;
    CHECK_OK(blitz_semaphore_init(&sem, 0));
    CHECK_OK(blitz_notify_init(&n));
    CHECK_OK(blitz_barrier_init(&b, N + 1));
    CHECK_OK(blitz_once_cell_init(&c));
    CHECK_OK(blitz_once_cell_try_claim(&c));
    for (int i = 0; i < N; i++) {
        ts_task_init(&t[i]);
        TS_PENDING(blitz_semaphore_acquire(&t[i].cx, &so[i], &sem, 1));
        TS_PENDING(blitz_notify_wait(&t[i].cx, &no[i], &n));
        TS_PENDING(blitz_barrier_wait(&t[i].cx, &bo[i], &b));
        TS_PENDING(blitz_once_cell_get_or_claim(&t[i].cx, &oo[i], &c));
    }
    CHECK_OK(blitz_semaphore_release(&sem, N + 1));
    CHECK_EQ(blitz_semaphore_available(&sem), 1);
    blitz_notify_waiters(&n);
    ts_task leader;
    ts_task_init(&leader);
    blitz_barrier_wait_op lo;
    memset(&lo, 0, sizeof lo);
    TS_READY(blitz_barrier_wait(&leader.cx, &lo, &b));
    CHECK_EQ(lo.is_leader, 1);
    static int v;
    CHECK_OK(blitz_once_cell_complete(&c, &v));
    for (int i = 0; i < N; i++) {
        CHECK_EQ(ts_wakes(&t[i]), 4);
        TS_READY(blitz_semaphore_acquire(&t[i].cx, &so[i], &sem, 1));
        TS_READY(blitz_notify_wait(&t[i].cx, &no[i], &n));
        TS_READY(blitz_barrier_wait(&t[i].cx, &bo[i], &b));
        CHECK_EQ(bo[i].is_leader, 0);
        TS_READY(blitz_once_cell_get_or_claim(&t[i].cx, &oo[i], &c));
        CHECK_PTR_EQ(oo[i].value, &v);
        CHECK_EQ(ts_refs(&t[i]), 0);
    }
    /* Close with more queued ops than one batch. */
    for (int i = 0; i < N; i++)
        TS_PENDING(blitz_semaphore_acquire(&t[i].cx, &so[i], &sem, 2)); /* first takes 1 */
    blitz_semaphore_close(&sem);
    for (int i = 0; i < N; i++) {
        TS_READY(blitz_semaphore_acquire(&t[i].cx, &so[i], &sem, 2));
        CHECK_EQ(so[i].result, BLITZ_ECLOSED);
    }
    CHECK_EQ(blitz_semaphore_available(&sem), 1);
    return 0;
}

/* ---- blocking forms ----------------------------------------------------------------------------
 */

typedef struct {
    BLITZ_CORO;
    int rc[6];
} ts_deadlock_task;

static blitz_poll ts_deadlock_poll(blitz_cx *cx, void *p) {
    ts_deadlock_task *s = p;
    (void)cx;
    static blitz_mutex m;
    static blitz_semaphore sem;
    static blitz_notify n;
    static blitz_barrier b;
    static blitz_cancel_token t;
    static blitz_once_cell c;
    blitz_mutex_init(&m);
    blitz_semaphore_init(&sem, 1);
    blitz_notify_init(&n);
    blitz_barrier_init(&b, 1);
    blitz_cancel_token_init(&t);
    blitz_once_cell_init(&c);
    s->rc[0] = blitz_mutex_lock_blocking(&m);
    s->rc[1] = blitz_semaphore_acquire_blocking(&sem, 1);
    s->rc[2] = blitz_notify_wait_blocking(&n);
    s->rc[3] = blitz_barrier_wait_blocking(&b, NULL);
    s->rc[4] = blitz_cancel_token_wait_blocking(&t);
    s->rc[5] = blitz_once_cell_get_or_claim_blocking(&c, NULL, NULL);
    return BLITZ_READY;
}

static int sync_blocking_in_task(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    ts_deadlock_task s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, ts_deadlock_poll, &s, sizeof s));
    for (int i = 0; i < 6; i++)
        CHECK_EQ(s.rc[i], BLITZ_EDEADLK);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(sync_blocking_in_task)

#include "test_sync_stress.c"

/* Waiting allocates nothing: heap use is the same after thousands of waits,
 * handoffs and cancels on every primitive. */

BLITZ_TEST(sync_waits_do_not_allocate) {
    static blitz_semaphore sem;
    static blitz_notify n;
    static blitz_barrier b;
    static blitz_cancel_token tok, child;
    CHECK_OK(blitz_semaphore_init(&sem, 0));
    CHECK_OK(blitz_notify_init(&n));
    CHECK_OK(blitz_barrier_init(&b, 2));
    CHECK_OK(blitz_cancel_token_init(&tok));
    ts_task a, c;
    ts_task_init(&a);
    ts_task_init(&c);
    blitz_semaphore_acquire_op so;
    blitz_notify_wait_op no;
    blitz_barrier_wait_op bo, bo2;
    blitz_cancel_token_wait_op to;
    memset(&so, 0, sizeof so);
    memset(&no, 0, sizeof no);
    memset(&bo, 0, sizeof bo);
    memset(&bo2, 0, sizeof bo2);
    memset(&to, 0, sizeof to);
    size_t before = ts_heap_in_use();
    for (int i = 0; i < 5000; i++) {
        TS_PENDING(blitz_semaphore_acquire(&a.cx, &so, &sem, 2));
        CHECK_OK(blitz_semaphore_release(&sem, 1));
        if (i % 2) {
            blitz_semaphore_acquire_cancel(NULL, &so);
            CHECK_OK(blitz_semaphore_try_acquire(&sem, 1));
        } else {
            CHECK_OK(blitz_semaphore_release(&sem, 1));
            TS_READY(blitz_semaphore_acquire(&a.cx, &so, &sem, 2));
        }
        TS_PENDING(blitz_notify_wait(&a.cx, &no, &n));
        blitz_notify_one(&n);
        TS_READY(blitz_notify_wait(&a.cx, &no, &n));
        TS_PENDING(blitz_barrier_wait(&a.cx, &bo, &b));
        TS_READY(blitz_barrier_wait(&c.cx, &bo2, &b));
        TS_READY(blitz_barrier_wait(&a.cx, &bo, &b));
        CHECK_OK(blitz_cancel_token_init_child(&child, &tok));
        TS_PENDING(blitz_cancel_token_wait(&a.cx, &to, &child));
        blitz_cancel_token_cancel(&child);
        TS_READY(blitz_cancel_token_wait(&a.cx, &to, &child));
        blitz_cancel_token_deinit(&child);
    }
    CHECK_EQ(ts_heap_in_use(), before);
    CHECK_EQ(ts_refs(&a) + ts_refs(&c), 0);
    return 0;
}
