/* The blocking pool (seed 002 "Blocking Pool"; Tokio's runtime/blocking):
 * threads that run work which would block a worker.
 *
 * Threads start on demand, up to max_threads, and exit after keep_alive_ns
 * without work. An idle thread waits on its own parker in the idle list,
 * most recently idle first, and new work goes to the head of that list: a
 * busy pool reuses its warm threads while the ones at the tail age out, so
 * the pool shrinks when the load drops. The queue is intrusive (the job
 * lives in the task block or in the op), so queueing never allocates.
 *
 * Protocols, all under `lock`:
 *   submit:   closed: ESHUTDOWN. An idle thread: take it off the list, mark
 *             it notified, inbound++, unpark it. Else below the cap: start
 *             a thread (threads++, inbound++). Else, with a capacity, when
 *             the jobs no thread is coming for (queued - inbound) reach it:
 *             BLITZ_EFULL, or, for an op that may wait, join the room
 *             waiters. Then append the job.
 *   a thread: takes jobs until the queue is empty (each one taken frees
 *             room: the first room waiter is woken), then goes idle until
 *             it is notified, the pool closes, or keep_alive passes. Any
 *             other wake-up (spurious, or a token left over from a notify
 *             that raced its time-out) parks it again for the time left.
 *   exit:     threads--, record itself as last_exiting and join the thread
 *             recorded before it, so at most one exited thread is ever
 *             unjoined; shutdown joins that one.
 *   shutdown: closed = 1, take the queue and complete every job in it as
 *             cancelled, wake the room waiters and every idle thread, wait
 *             until threads == 0 (running jobs finish first), join
 *             last_exiting.
 *
 * Pool ops (files, DNS, processes) keep everything a thread touches in a
 * heap record (blitz__pool_rec and the op's request and results after
 * it); the op in the task's state only points at it. rec->state:
 *   INFLIGHT (queued or running; `job.linked` under the lock tells which)
 *   -> DONE, when the task's next poll takes the results and frees it;
 *   ROOM while waiting for queue room, RETRY once woken for it (the
 *   task's poll queues it again); ABANDONED (a flag) when the task gave
 *   up while a thread ran it: the thread then frees it. Whoever owns the
 *   record frees it, so a task that gives up never waits, and no thread
 *   writes into a task's state after the task stopped caring. */
#include "sched.h"

#define BLITZ__POOL_DEFAULT_MAX       512u
#define BLITZ__POOL_DEFAULT_KEEPALIVE ((uint64_t)10 * 1000000000u)

#define BLITZ__OP_IDLE      0u
#define BLITZ__OP_INFLIGHT  1u
#define BLITZ__OP_DONE      2u
#define BLITZ__OP_ROOM      3u
#define BLITZ__OP_RETRY     5u /* woken for room: the task queues it again */
#define BLITZ__OP_ABANDONED 4u

/* ---- intrusive lists ------------------------------------------------------- */

static void blitz__jl_append(blitz__pool_job **head, blitz__pool_job **tail, blitz__pool_job *j) {
    j->next = NULL;
    j->prev = *tail;
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
    j->linked = 1;
}

static void blitz__jl_unlink(blitz__pool_job **head, blitz__pool_job **tail, blitz__pool_job *j) {
    if (j->prev)
        j->prev->next = j->next;
    else
        *head = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        *tail = j->prev;
    j->next = j->prev = NULL;
    j->linked = 0;
}

static blitz__pool_job *blitz__jl_pop(blitz__pool_job **head, blitz__pool_job **tail) {
    blitz__pool_job *j = *head;
    if (j)
        blitz__jl_unlink(head, tail, j);
    return j;
}

static void blitz__idle_push(blitz__pool *p, blitz__pool_thread *th) {
    th->prev = NULL;
    th->next = p->idle_head;
    if (p->idle_head)
        p->idle_head->prev = th;
    p->idle_head = th;
    p->idle++;
}

static void blitz__idle_remove(blitz__pool *p, blitz__pool_thread *th) {
    if (th->prev)
        th->prev->next = th->next;
    else
        p->idle_head = th->next;
    if (th->next)
        th->next->prev = th->prev;
    th->next = th->prev = NULL;
    p->idle--;
}

/* ---- set-up ------------------------------------------------------------------ */

BLITZ_PRIVATE int blitz__pool_init(blitz__pool *p, const blitz_config *c) {
    memset(p, 0, sizeof *p);
    p->max_threads = c->max_blocking_threads ? c->max_blocking_threads : BLITZ__POOL_DEFAULT_MAX;
    p->keep_alive_ns =
        c->blocking_keep_alive_ns ? c->blocking_keep_alive_ns : BLITZ__POOL_DEFAULT_KEEPALIVE;
    p->capacity = c->blocking_queue_capacity;
    return blitz__mutex_init(&p->lock);
}

BLITZ_PRIVATE void blitz__pool_destroy(blitz__pool *p) {
    blitz__mutex_destroy(&p->lock);
}

/* With a paused clock, a job in flight counts as a thread polling a task:
 * the clock must not jump to the next timer while a job may still wake its
 * task (Tokio inhibits auto-advance during spawn_blocking, too). */
static void blitz__pool_busy(blitz_runtime *rt, int delta) {
    if (!rt->time->paused)
        return;
    if (delta > 0)
        blitz__u32_fetch_add(&rt->paused_polling, 1, BLITZ__SEQ_CST);
    else
        blitz__u32_fetch_sub(&rt->paused_polling, 1, BLITZ__SEQ_CST);
}

/* Takes the first room waiter off its list (caller holds the lock) and
 * returns its waker for the caller to wake after unlocking; a noop waker
 * when nobody waits. */
static blitz_waker blitz__pool_take_room_waiter(blitz__pool *p) {
    blitz__pool_job *j = blitz__jl_pop(&p->space_head, &p->space_tail);
    if (!j)
        return blitz_waker_noop();
    blitz__pool_rec *rec = (blitz__pool_rec *)j;
    blitz_waker w = rec->waker;
    /* Release: the waiter's next poll sees RETRY and tries again. From
     * here the record is the task's; only the copied waker is used. */
    blitz__u32_field_store(&rec->state, BLITZ__OP_RETRY, BLITZ__RELEASE);
    return w;
}

static int blitz__waker_is_noop(const blitz_waker *w) {
    blitz_waker noop = blitz_waker_noop();
    return w->vtable == noop.vtable;
}

/* ---- threads ------------------------------------------------------------------- */

/* A write to a pipe whose reader is gone raises SIGPIPE at the writing
 * thread; pool threads block it, and whoever gets EPIPE takes it back here,
 * so a broken pipe is an error code rather than the end of the process. */
BLITZ_PRIVATE void blitz__consume_sigpipe(void) {
#if !BLITZ__WIN32
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
        blitz__sigpipe_take(&pipe_set);
#endif
}

static void *blitz__pool_thread_main(void *arg) {
    blitz_runtime *rt = (blitz_runtime *)arg;
    blitz__pool *p = rt->pool;
    blitz__pool_thread self;
    memset(&self, 0, sizeof self);
    blitz__parker_init(&self.parker);
    /* Jobs run as the runtime's code: spawns from them reach it, and a
     * blitz_join_blocking inside one gives up when the runtime shuts down
     * (which waits for this thread). */
    blitz__context ctx;
    blitz__context_init(&ctx, rt);
    blitz__context_set(&ctx);
    blitz__thread_name("blitz-pool");
    blitz__thread_block_sigpipe();

    blitz__mutex_lock(&p->lock);
    p->inbound--;
    for (;;) {
        blitz__pool_job *j;
        while ((j = blitz__jl_pop(&p->head, &p->tail)) != NULL) {
            p->queued--;
            p->jobs_run++;
            blitz_waker room = blitz__pool_take_room_waiter(p);
            blitz__mutex_unlock(&p->lock);
            blitz_waker_wake(room);
            j->run(j, 0);
            blitz__mutex_lock(&p->lock);
        }
        if (p->closed)
            break;
        self.notified = 0;
        blitz__idle_push(p, &self);
        uint64_t deadline = blitz__now_ns() + p->keep_alive_ns;
        int leave = 0;
        for (;;) {
            blitz__mutex_unlock(&p->lock);
            uint64_t now = blitz__now_ns();
            blitz__parker_park(&self.parker, deadline > now ? deadline - now : 1);
            blitz__mutex_lock(&p->lock);
            if (self.notified) {
                /* The notifier took us off the idle list. */
                p->inbound--;
                break;
            }
            if (p->closed || blitz__now_ns() >= deadline) {
                blitz__idle_remove(p, &self);
                leave = 1;
                break;
            }
        }
        if (leave)
            break;
    }
    p->threads--;
    int had_prev = p->have_last_exiting;
    blitz__thread prev = p->last_exiting;
    p->last_exiting = blitz__thread_self();
    p->have_last_exiting = 1;
    if (p->threads == 0 && p->shutdown_waiter)
        blitz__parker_unpark(p->shutdown_waiter);
    blitz__mutex_unlock(&p->lock);
    if (had_prev)
        blitz__thread_join(prev);
    blitz__context_set(NULL);
    blitz__parker_destroy(&self.parker);
    return NULL;
}

/* Caller holds the pool's lock. */
static void blitz__pool_rec_link(blitz__pool *p, blitz__pool_rec *rec) {
    if (rec->tracked)
        return;
    rec->tracked = 1;
    rec->all_prev = NULL;
    rec->all_next = p->records;
    if (p->records)
        p->records->all_prev = rec;
    p->records = rec;
}

/* A record whose op is carried out elsewhere (the ring's file ops) is
 * the runtime's too: freed with it if its task never takes it. */
BLITZ_PRIVATE void blitz__pool_rec_track(blitz_runtime *rt, blitz__pool_rec *rec) {
    rec->rt = rt;
    blitz__mutex_lock(&rt->pool->lock);
    blitz__pool_rec_link(rt->pool, rec);
    blitz__mutex_unlock(&rt->pool->lock);
}

/* Queues job `j` (see the submit protocol). When the queue is full and
 * `room` is given, `room` (whose waker the caller has cloned) joins the
 * room waiters and BLITZ_EFULL is returned; the caller then waits for its
 * waker. */
static int blitz__pool_submit(blitz_runtime *rt, blitz__pool_job *j, blitz__pool_rec *room) {
    blitz__pool *p = rt->pool;
    blitz__mutex_lock(&p->lock);
    if (room)
        blitz__pool_rec_link(p, room);
    if (p->closed) {
        blitz__mutex_unlock(&p->lock);
        return BLITZ_ESHUTDOWN;
    }
    if (p->idle_head) {
        blitz__pool_thread *th = p->idle_head;
        blitz__idle_remove(p, th);
        th->notified = 1;
        p->inbound++;
        blitz__parker_unpark(&th->parker);
    } else {
        int have_thread = 0;
        if (p->threads < p->max_threads) {
            blitz__thread tid;
            int rc = blitz__thread_start(&tid, blitz__pool_thread_main, rt);
            if (rc == 0) {
                /* Joined through its own blitz__thread_self when it exits. */
                blitz__thread_forget(tid);
                p->threads++;
                p->inbound++;
                p->threads_started++;
                have_thread = 1;
            } else if (p->threads == 0) {
                /* Nobody would ever run the job. */
                blitz__mutex_unlock(&p->lock);
                return rc;
            }
        }
        uint32_t backlog = p->queued > p->inbound ? p->queued - p->inbound : 0;
        if (!have_thread && p->capacity && backlog >= p->capacity) {
            p->rejected++;
            if (room) {
                blitz__jl_append(&p->space_head, &p->space_tail, &room->job);
                blitz__u32_field_store(&room->state, BLITZ__OP_ROOM, BLITZ__RELAXED);
            }
            blitz__mutex_unlock(&p->lock);
            return BLITZ_EFULL;
        }
    }
    blitz__jl_append(&p->head, &p->tail, j);
    p->queued++;
    blitz__pool_busy(rt, 1);
    blitz__mutex_unlock(&p->lock);
    return BLITZ_OK;
}

/* Runtime shutdown, after the workers stopped and before the sweep: no job
 * is left queued or running when it returns, and every thread is joined. */
BLITZ_PRIVATE void blitz__pool_shutdown(blitz_runtime *rt) {
    blitz__pool *p = rt->pool;
    blitz__parker waiter;
    blitz__parker_init(&waiter);
    blitz__mutex_lock(&p->lock);
    p->closed = 1;
    blitz__pool_job *jobs = p->head;
    for (blitz__pool_job *j = jobs; j; j = j->next)
        j->linked = 0;
    p->head = p->tail = NULL;
    p->queued = 0;
    for (blitz__pool_thread *th = p->idle_head; th; th = th->next)
        blitz__parker_unpark(&th->parker);
    p->shutdown_waiter = &waiter;
    blitz__mutex_unlock(&p->lock);

    while (jobs) {
        blitz__pool_job *next = jobs->next; /* the job may be gone after run */
        jobs->run(jobs, 1);
        jobs = next;
    }
    for (;;) {
        blitz__mutex_lock(&p->lock);
        blitz_waker w = blitz__pool_take_room_waiter(p);
        blitz__mutex_unlock(&p->lock);
        if (blitz__waker_is_noop(&w))
            break;
        blitz_waker_wake(w);
    }
    blitz__mutex_lock(&p->lock);
    while (p->threads > 0) {
        blitz__mutex_unlock(&p->lock);
        blitz__parker_park(&waiter, 0);
        blitz__mutex_lock(&p->lock);
    }
    p->shutdown_waiter = NULL;
    int had = p->have_last_exiting;
    blitz__thread last = p->last_exiting;
    p->have_last_exiting = 0;
    blitz__mutex_unlock(&p->lock);
    if (had)
        blitz__thread_join(last);
    blitz__parker_destroy(&waiter);
}

BLITZ_API int blitz_runtime_pool_stats(blitz_runtime *rt, blitz_pool_stats *out) {
    if (!rt || !out)
        return BLITZ_EINVAL;
    blitz__pool *p = rt->pool;
    memset(out, 0, sizeof *out);
    blitz__mutex_lock(&p->lock);
    out->threads = p->threads;
    out->idle = p->idle;
    out->queued = p->queued;
    out->max_threads = p->max_threads;
    out->threads_started = p->threads_started;
    out->jobs_run = p->jobs_run;
    out->rejected = p->rejected;
    blitz__mutex_unlock(&p->lock);
    return BLITZ_OK;
}

BLITZ_API void blitz_free(void *p) {
    blitz__free(p);
}

/* ---- blocking tasks ---------------------------------------------------------------
 * A blocking job is a task (so its handle is a task handle) that is queued
 * on the pool instead of the scheduler and polled once, by a pool thread.
 * Its job record sits in a trailer at the end of the block, so the user's
 * state comes first and blitz_task_state finds it as for any task. */

typedef struct blitz__blocking_trailer {
    blitz__pool_job job; /* first: the pool hands back this pointer */
    blitz__task *task;
    blitz_fn fn;
} blitz__blocking_trailer;

_Static_assert(sizeof(blitz__blocking_trailer) % 8 == 0, "trailer keeps the hooks aligned");

static blitz__blocking_trailer *blitz__blocking_of(blitz__task *t) {
    return (blitz__blocking_trailer *)blitz__task_trailer(t, sizeof(blitz__blocking_trailer));
}

static blitz_poll blitz__blocking_poll(blitz_cx *cx, void *state) {
    blitz__blocking_of(cx->task)->fn(state);
    return BLITZ_READY;
}

static void blitz__blocking_run(blitz__pool_job *j, int cancelled) {
    blitz__task *t = ((blitz__blocking_trailer *)j)->task;
    blitz_runtime *rt = blitz__task_runtime(t); /* the block may be freed below */
    if (!cancelled)
        blitz__task_run(t, blitz__context_get());
    else if (blitz__state_claim_for_shutdown(t))
        blitz__task_finish(t, 1);
    blitz__pool_busy(rt, -1);
}

/* blitz_task_cancel of a blocking task that is still queued: complete it
 * as cancelled now rather than when a thread reaches it. */
BLITZ_PRIVATE void blitz__pool_cancel_task(blitz__task *t) {
    blitz_runtime *rt = blitz__task_runtime(t);
    blitz__pool *p = rt->pool;
    blitz__pool_job *j = &blitz__blocking_of(t)->job;
    blitz__mutex_lock(&p->lock);
    int queued = j->linked;
    blitz_waker room = blitz_waker_noop();
    if (queued) {
        blitz__jl_unlink(&p->head, &p->tail, j);
        p->queued--;
        room = blitz__pool_take_room_waiter(p);
    }
    blitz__mutex_unlock(&p->lock);
    if (!queued)
        return;
    blitz_waker_wake(room);
    /* CANCELLED is set and a blocking task has no shield, so this is the
     * cancel transition; either way the task is ours to complete. */
    (void)blitz__state_to_running(t);
    blitz__task_finish(t, 1);
    blitz__pool_busy(rt, -1);
}

typedef struct {
    blitz_fn fn;
    void *arg;
} blitz__blocking_fn_state;

static void blitz__blocking_call(void *state) {
    blitz__blocking_fn_state *s = (blitz__blocking_fn_state *)state;
    s->fn(s->arg);
}

static int blitz__spawn_blocking(blitz_runtime *rt, const blitz_blocking_opts *bo,
                                 blitz_task **handle, blitz__pool_rec *room) {
    if (handle)
        *handle = NULL;
    if (!rt || !bo || !bo->fn)
        return BLITZ_EINVAL;
    blitz_spawn_opts o;
    blitz__plain_opts(&o, blitz__blocking_poll, bo->state, bo->size);
    o.drop = bo->drop;
    blitz__task *t;
    int entered = blitz__spawn_enter(rt);
    int rc = blitz__task_create(rt, &o, handle != NULL, sizeof(blitz__blocking_trailer),
                                BLITZ__TASK_BLOCKING, &t);
    if (rc == BLITZ_OK) {
        blitz__blocking_trailer *b = blitz__blocking_of(t);
        memset(&b->job, 0, sizeof b->job);
        b->job.run = blitz__blocking_run;
        b->task = t;
        b->fn = bo->fn;
        rc = blitz__pool_submit(rt, &b->job, room);
        if (rc != BLITZ_OK)
            blitz__task_discard(t);
        else if (handle)
            *handle = blitz__handle_out(t);
    }
    blitz__spawn_leave(rt, entered);
    return rc;
}

BLITZ_API int blitz_spawn_blocking_ex(blitz_runtime *rt, const blitz_blocking_opts *opts,
                                      blitz_task **handle) {
    return blitz__spawn_blocking(rt, opts, handle, NULL);
}

BLITZ_API int blitz_spawn_blocking(blitz_runtime *rt, blitz_fn fn, void *arg, blitz_task **handle) {
    if (handle)
        *handle = NULL;
    if (!fn)
        return BLITZ_EINVAL;
    blitz__blocking_fn_state s;
    s.fn = fn;
    s.arg = arg;
    blitz_blocking_opts o;
    memset(&o, 0, sizeof o);
    o.fn = blitz__blocking_call;
    o.state = &s;
    o.size = sizeof s;
    return blitz__spawn_blocking(rt, &o, handle, NULL);
}

/* ---- pool ops ---------------------------------------------------------------------- */

BLITZ_PRIVATE void blitz__pool_rec_free(blitz__pool_rec *rec) {
    if (rec->tracked) {
        blitz__pool *p = rec->rt->pool;
        blitz__mutex_lock(&p->lock);
        if (rec->all_prev)
            rec->all_prev->all_next = rec->all_next;
        else
            p->records = rec->all_next;
        if (rec->all_next)
            rec->all_next->all_prev = rec->all_prev;
        blitz__mutex_unlock(&p->lock);
    }
    if (rec->discard)
        rec->discard(rec);
    blitz__free(rec);
}

/* blitz_runtime_free, after the pool stopped and the tasks' drop
 * functions ran: records still alive belong to tasks that were cancelled
 * without cancelling their ops (no cancel hook); nobody will take their
 * results, so release those (close files, free data). */
BLITZ_PRIVATE void blitz__pool_free_records(blitz_runtime *rt) {
    blitz__pool_rec *rec = rt->pool->records;
    rt->pool->records = NULL;
    while (rec) {
        blitz__pool_rec *next = rec->all_next;
        rec->tracked = 0;
        if (rec->discard)
            rec->discard(rec);
        blitz__free(rec);
        rec = next;
    }
}

/* The thread is done: hand the record over, or, when the task gave up on
 * it, release what it holds and free it. The task never sees an
 * abandoned record again, so nothing of the task is touched here but its
 * waker, whose reference keeps the block alive until the wake. */
static void blitz__pool_rec_run(blitz__pool_job *j, int cancelled) {
    blitz__pool_rec *rec = (blitz__pool_rec *)j;
    blitz_runtime *rt = rec->rt;
    rec->exec(rec, cancelled);
    blitz_waker w = rec->waker;
    uint32_t expected = BLITZ__OP_INFLIGHT;
    /* Release publishes the results to the task's acquire load of DONE;
     * acquire on failure pairs with the canceller's ABANDONED. */
    if (blitz__u32_field_cas(&rec->state, &expected, BLITZ__OP_DONE, BLITZ__ACQ_REL)) {
        blitz_waker_wake(w);
    } else {
        blitz__pool_rec_free(rec);
        blitz_waker_drop(w);
    }
    blitz__pool_busy(rt, -1);
}

/* A record for an op: `size` bytes (at least a blitz__pool_rec, which it
 * starts with), zero-filled. NULL when out of memory. */
BLITZ_PRIVATE void *blitz__pool_rec_new(size_t size, void (*exec)(blitz__pool_rec *, int),
                                        void (*discard)(blitz__pool_rec *)) {
    blitz__pool_rec *rec = BLITZ__FAULT(pool_rec) ? NULL : (blitz__pool_rec *)blitz__calloc(size);
    if (rec) {
        rec->job.run = blitz__pool_rec_run;
        rec->exec = exec;
        rec->discard = discard;
    }
    return rec;
}

static int blitz__pool_rec_submit(blitz_cx *cx, blitz__pool_rec *rec) {
    blitz_waker mine = blitz_cx_waker(cx);
    rec->rt = blitz_cx_runtime(cx);
    rec->waker = blitz_waker_clone(&mine);
    /* Relaxed: the pool's lock publishes the record to the thread. */
    blitz__u32_field_store(&rec->state, BLITZ__OP_INFLIGHT, BLITZ__RELAXED);
    int rc = blitz__pool_submit(rec->rt, &rec->job, rec);
    if (rc == BLITZ_OK || rc == BLITZ_EFULL)
        return BLITZ_OK; /* queued, or waiting for room with the clone */
    blitz_waker_drop(rec->waker);
    return rc;
}

/* Starts an op with its filled-in record. PENDING once queued (or waiting
 * for room); READY with *err when it could not be, the record freed. */
BLITZ_PRIVATE blitz_poll blitz__pool_op_start(blitz_cx *cx, blitz__pool_op *op,
                                              blitz__pool_rec *rec, int *err) {
    int rc = blitz__pool_rec_submit(cx, rec);
    if (rc == BLITZ_OK) {
        op->rec = rec;
        return BLITZ_PENDING;
    }
    blitz__pool_rec_free(rec);
    *err = rc;
    return BLITZ_READY;
}

/* Nonzero when the op carries no operation (its poll starts a new one). */
BLITZ_PRIVATE int blitz__pool_op_idle(const blitz__pool_op *op) {
    return op->rec == NULL;
}

/* A started op: READY with the finished record in *done (the caller takes
 * its results and frees it with blitz__pool_rec_free); the op is idle
 * again. A record woken for queue room is queued again here; if that
 * fails its exec reports the cancellation. */
BLITZ_PRIVATE blitz_poll blitz__pool_op_poll(blitz_cx *cx, blitz__pool_op *op,
                                             blitz__pool_rec **done) {
    blitz__pool_rec *rec = op->rec;
    /* Acquire pairs with the thread's release of DONE (or the room
     * wake's of RETRY). */
    uint32_t s = blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE);
    if (s == BLITZ__OP_RETRY) {
        if (blitz__pool_rec_submit(cx, rec) == BLITZ_OK)
            return BLITZ_PENDING;
        rec->exec(rec, 1);
        s = BLITZ__OP_DONE;
    }
    if (s != BLITZ__OP_DONE)
        return BLITZ_PENDING;
    op->rec = NULL;
    *done = rec;
    return BLITZ_READY;
}

/* Takes a record off the room waiters or out of the queue. Returns 1 when
 * it was in one of them (its waker then dropped). */
static int blitz__pool_rec_unlink(blitz__pool_rec *rec, uint32_t s) {
    blitz__pool *p = rec->rt->pool;
    blitz_waker room = blitz_waker_noop();
    blitz__mutex_lock(&p->lock);
    int was = rec->job.linked;
    if (was) {
        if (s == BLITZ__OP_ROOM) {
            blitz__jl_unlink(&p->space_head, &p->space_tail, &rec->job);
        } else {
            blitz__jl_unlink(&p->head, &p->tail, &rec->job);
            p->queued--;
            room = blitz__pool_take_room_waiter(p);
        }
    }
    blitz__mutex_unlock(&p->lock);
    if (was) {
        blitz_waker_drop(rec->waker);
        blitz_waker_wake(room);
        if (s == BLITZ__OP_INFLIGHT)
            blitz__pool_busy(rec->rt, -1);
    }
    return was;
}

/* The op's cancel. The op is idle afterwards in every case: a record that
 * is queued, waits for room, is finished or was woken for room is freed
 * here (with what it holds); a running one is marked ABANDONED and its
 * thread frees it when done. */
BLITZ_PRIVATE void blitz__pool_op_cancel(blitz__pool_op *op) {
    blitz__pool_rec *rec = op->rec;
    if (!rec)
        return;
    op->rec = NULL;
    uint32_t s = blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE);
    if (s == BLITZ__OP_ROOM || s == BLITZ__OP_INFLIGHT) {
        if (blitz__pool_rec_unlink(rec, s)) {
            blitz__pool_rec_free(rec);
            return;
        }
        /* Taken by a thread, or woken for room (RETRY, stored under the
         * lock, so this load sees it). */
        s = blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE);
    }
    for (;;) {
        if (s == BLITZ__OP_INFLIGHT) {
            /* Acq_rel: the thread's failed CAS sees ABANDONED, or this CAS
             * fails because the thread already stored DONE. */
            if (blitz__u32_field_cas(&rec->state, &s, BLITZ__OP_INFLIGHT | BLITZ__OP_ABANDONED,
                                     BLITZ__ACQ_REL))
                return;
            continue;
        }
        /* DONE or RETRY: the record is the task's alone. */
        blitz__pool_rec_free(rec);
        return;
    }
}

/* Nonzero when the thread working for `rec` should stop early: its task
 * gave up on it, or the runtime is shutting down. */
BLITZ_PRIVATE int blitz__pool_rec_give_up(blitz__pool_rec *rec) {
    return (blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE) & BLITZ__OP_ABANDONED) ||
           blitz__u32_load(&rec->rt->shutdown, BLITZ__ACQUIRE);
}

/* ---- the awaitable spawn ------------------------------------------------------------ */

BLITZ_API blitz_poll blitz_spawn_blocking_await(blitz_cx *cx, blitz_blocking_spawn *op,
                                                const blitz_blocking_opts *opts) {
    if (!op)
        return BLITZ_READY;
    if (!cx) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__pool_rec *rec = op->blitz__op.rec;
    if (rec) {
        /* Acquire pairs with the release of the room wake. */
        if (blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE) == BLITZ__OP_ROOM)
            return blitz__pending(cx, blitz_spawn_blocking_cancel, op);
        op->blitz__op.rec = NULL; /* woken: the wake consumed its waker */
        blitz__pool_rec_free(rec);
    }
    /* A room waiter's record: only its links, state and waker are used. */
    rec = (blitz__pool_rec *)blitz__pool_rec_new(sizeof *rec, NULL, NULL);
    if (!rec) {
        op->task = NULL;
        op->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    rec->rt = blitz_cx_runtime(cx);
    rec->waker = blitz_waker_clone(&mine);
    int rc = blitz__spawn_blocking(rec->rt, opts, &op->task, rec);
    if (rc == BLITZ_EFULL && opts && opts->fn) {
        op->blitz__op.rec = rec; /* a room waiter now: the clone is the pool's */
        return blitz__pending(cx, blitz_spawn_blocking_cancel, op);
    }
    blitz_waker_drop(rec->waker);
    blitz__pool_rec_free(rec);
    op->result = rc;
    return BLITZ_READY;
}

BLITZ_API void blitz_spawn_blocking_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_blocking_spawn *op = (blitz_blocking_spawn *)p;
    if (!op || !op->blitz__op.rec)
        return;
    blitz__pool_rec *rec = op->blitz__op.rec;
    op->blitz__op.rec = NULL;
    if (blitz__u32_field_load(&rec->state, BLITZ__ACQUIRE) == BLITZ__OP_ROOM)
        (void)blitz__pool_rec_unlink(rec, BLITZ__OP_ROOM);
    blitz__pool_rec_free(rec);
}
