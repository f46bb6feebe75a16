/* Task groups: members report their completion through their join waker,
 * which moves them to the group's list of finished members.
 *
 * Every member is in exactly one of three lists, under the group's lock:
 * `running` (not yet asked to cancel), `cancelling` (blitz_task_cancel sent
 * or being sent) or `finished` (complete, handle not yet handed out). The
 * group is reference counted: its owner holds one reference and every
 * member another, so a member finishing after blitz_group_free still finds
 * the group. */
#include "../time/time.h"

#define BLITZ__MEMBER_RUNNING    0
#define BLITZ__MEMBER_CANCELLING 1
#define BLITZ__MEMBER_FINISHED   2

typedef struct blitz__group_member {
    blitz_group *group;
    blitz_task *task;
    struct blitz__group_member *next, *prev;
    int list;
} blitz__group_member;

typedef struct blitz__member_list {
    blitz__group_member *head, *tail;
} blitz__member_list;

struct blitz_group {
    blitz_runtime *rt;
    blitz__mutex lock;
    blitz__atomic_u32 refs;
    blitz__member_list lists[3]; /* running, cancelling, finished */
    size_t len;                  /* members not yet handed out */
    blitz_waker waiter;          /* the task awaiting blitz_group_next */
    int has_waiter;
    int closed;
    int freed;
    blitz_task **op_out; /* where blitz_op_group_next's poll puts the handle */
    BLITZ__MAGIC_MEMBER
};

#define BLITZ__GROUP_CHECK(g) \
    BLITZ__MAGIC_CHECK(g, BLITZ__MAGIC_GROUP, "task group used after blitz_group_free")

static void blitz__member_push(blitz__member_list *l, blitz__group_member *m) {
    m->next = NULL;
    m->prev = l->tail;
    if (l->tail)
        l->tail->next = m;
    else
        l->head = m;
    l->tail = m;
}

static void blitz__member_unlink(blitz__member_list *l, blitz__group_member *m) {
    if (m->prev)
        m->prev->next = m->next;
    else
        l->head = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        l->tail = m->prev;
    m->next = m->prev = NULL;
}

static void blitz__group_unref(blitz_group *g) {
    /* Acq_rel: the last reference sees every other holder's last use of
     * the group before it frees it. */
    if (blitz__u32_fetch_sub(&g->refs, 1, BLITZ__ACQ_REL) == 1) {
        blitz__mutex_destroy(&g->lock);
        blitz__free_handle(g);
    }
}

/* A member's task completed (its join waker fired, or it was already
 * complete when the group registered). */
static void blitz__member_finished(blitz__group_member *m) {
    blitz_group *g = m->group;
    blitz_waker waiter = blitz_waker_noop();
    blitz__mutex_lock(&g->lock);
    blitz__member_unlink(&g->lists[m->list], m);
    if (g->freed) {
        blitz__mutex_unlock(&g->lock);
        blitz_task_release(&m->task);
        BLITZ_FREE(m);
        blitz__group_unref(g);
        return;
    }
    m->list = BLITZ__MEMBER_FINISHED;
    blitz__member_push(&g->lists[BLITZ__MEMBER_FINISHED], m);
    if (g->has_waiter) {
        waiter = g->waiter;
        g->has_waiter = 0;
    }
    blitz__mutex_unlock(&g->lock);
    blitz_waker_wake(waiter);
}

/* The member's join waker. A join waker is woken once or dropped once, so
 * the member needs no count of its own. */
static void blitz__member_wake(const void *data) {
    blitz__member_finished((blitz__group_member *)data);
}
static void blitz__member_drop(const void *data) {
    (void)data;
}
static blitz_waker blitz__member_clone(const void *data);
static const blitz_waker_vtable blitz__member_waker_vtable = {
    blitz__member_wake, blitz__member_wake, blitz__member_clone, blitz__member_drop};
static blitz_waker blitz__member_clone(const void *data) {
    blitz_waker w = {data, &blitz__member_waker_vtable};
    return w;
}

BLITZ_API int blitz_group_new(blitz_runtime *rt, blitz_group **out) {
    if (!rt || !out)
        return BLITZ_EINVAL;
    blitz_group *g = (blitz_group *)BLITZ_MALLOC(sizeof *g);
    if (!g)
        return BLITZ_ENOMEM;
    memset(g, 0, sizeof *g);
    g->rt = rt;
    blitz__mutex_init(&g->lock);
    blitz__u32_store(&g->refs, 1, BLITZ__RELAXED);
    BLITZ__MAGIC_SET(g, BLITZ__MAGIC_GROUP);
    *out = g;
    return BLITZ_OK;
}

BLITZ_API int blitz_group_spawn_ex(blitz_group *g, const blitz_spawn_opts *opts) {
    BLITZ__GROUP_CHECK(g);
    if (!g || !opts)
        return BLITZ_EINVAL;
    blitz__group_member *m = (blitz__group_member *)BLITZ_MALLOC(sizeof *m);
    if (!m)
        return BLITZ_ENOMEM;
    blitz__mutex_lock(&g->lock);
    int closed = g->closed;
    blitz__mutex_unlock(&g->lock);
    if (closed) {
        BLITZ_FREE(m);
        return BLITZ_ECLOSED;
    }
    blitz_task *t = NULL;
    int rc = blitz_spawn_ex(g->rt, opts, &t);
    if (rc != BLITZ_OK) {
        BLITZ_FREE(m);
        return rc;
    }
    m->group = g;
    m->task = t;
    blitz__u32_fetch_add(&g->refs, 1, BLITZ__RELAXED);
    /* Listed before the join waker is registered: the task may finish at
     * once, and its completion unlinks the member. */
    blitz__mutex_lock(&g->lock);
    m->list = BLITZ__MEMBER_RUNNING;
    blitz__member_push(&g->lists[BLITZ__MEMBER_RUNNING], m);
    g->len++;
    int cancel_now = g->closed; /* closed while we spawned */
    if (cancel_now) {
        blitz__member_unlink(&g->lists[BLITZ__MEMBER_RUNNING], m);
        m->list = BLITZ__MEMBER_CANCELLING;
        blitz__member_push(&g->lists[BLITZ__MEMBER_CANCELLING], m);
    }
    blitz__mutex_unlock(&g->lock);
    if (cancel_now)
        blitz_task_cancel(t);
    blitz_cx cx;
    blitz_waker member = {m, &blitz__member_waker_vtable};
    blitz__cx_init_waker(&cx, NULL, member);
    if (blitz_join(&cx, t) == BLITZ_READY)
        blitz__member_finished(m);
    return BLITZ_OK;
}

BLITZ_API int blitz_group_spawn(blitz_group *g, blitz_poll_fn poll, const void *state,
                                size_t size) {
    blitz_spawn_opts opts;
    blitz__plain_opts(&opts, poll, state, size);
    return blitz_group_spawn_ex(g, &opts);
}

BLITZ_API blitz_poll blitz_group_next(blitz_cx *cx, blitz_group *g, blitz_task **out) {
    BLITZ__GROUP_CHECK(g);
    if (!cx || !g || !out) {
        if (out)
            *out = NULL;
        return BLITZ_READY;
    }
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&g->lock);
    blitz__group_member *m = g->lists[BLITZ__MEMBER_FINISHED].head;
    if (m) {
        blitz__member_unlink(&g->lists[BLITZ__MEMBER_FINISHED], m);
        g->len--;
        if (g->has_waiter) {
            old = g->waiter;
            g->has_waiter = 0;
        }
        blitz__mutex_unlock(&g->lock);
        blitz_waker_drop(old);
        *out = m->task;
        BLITZ_FREE(m);
        blitz__group_unref(g);
        return BLITZ_READY;
    }
    if (g->len == 0) {
        blitz__mutex_unlock(&g->lock);
        *out = NULL;
        return BLITZ_READY;
    }
    blitz_waker mine = blitz_cx_waker(cx);
    if (!g->has_waiter) {
        g->waiter = blitz_waker_clone(&mine);
        g->has_waiter = 1;
    } else if (!blitz_waker_will_wake(&g->waiter, &mine)) {
        old = g->waiter;
        g->waiter = blitz_waker_clone(&mine);
    }
    blitz__mutex_unlock(&g->lock);
    blitz_waker_drop(old);
    return blitz__pending(cx, blitz_group_next_cancel, g);
}

BLITZ_API void blitz_group_next_cancel(blitz_cx *cx, void *group) {
    blitz_group *g = (blitz_group *)group;
    blitz_waker old = blitz_waker_noop();
    (void)cx;
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return;
    blitz__mutex_lock(&g->lock);
    if (g->has_waiter) {
        old = g->waiter;
        g->has_waiter = 0;
    }
    blitz__mutex_unlock(&g->lock);
    blitz_waker_drop(old);
}

typedef struct blitz__group_wait {
    blitz_group *group;
    blitz_task *task;
} blitz__group_wait;

static blitz_poll blitz__group_wait_poll(blitz_cx *cx, void *arg) {
    blitz__group_wait *w = (blitz__group_wait *)arg;
    return blitz_group_next(cx, w->group, &w->task);
}

BLITZ_API int blitz_group_next_blocking(blitz_group *g, blitz_task **out) {
    BLITZ__GROUP_CHECK(g);
    if (!g || !out)
        return BLITZ_EINVAL;
    blitz__group_wait w = {g, NULL};
    int rc = blitz_op_run_blocking(g->rt, blitz_op_make(blitz__group_wait_poll, NULL, &w));
    *out = rc == BLITZ_OK ? w.task : NULL;
    return rc;
}

BLITZ_API size_t blitz_group_len(blitz_group *g) {
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return 0;
    blitz__mutex_lock(&g->lock);
    size_t n = g->len;
    blitz__mutex_unlock(&g->lock);
    return n;
}

/* Sends a cancel to every running member. Each task is pinned with a
 * reference while the lock is dropped for blitz_task_cancel (which may
 * complete the task at once, and that completion takes the lock). */
static void blitz__group_cancel_running(blitz_group *g) {
    for (;;) {
        blitz__mutex_lock(&g->lock);
        blitz__group_member *m = g->lists[BLITZ__MEMBER_RUNNING].head;
        if (!m) {
            blitz__mutex_unlock(&g->lock);
            return;
        }
        blitz__member_unlink(&g->lists[BLITZ__MEMBER_RUNNING], m);
        m->list = BLITZ__MEMBER_CANCELLING;
        blitz__member_push(&g->lists[BLITZ__MEMBER_CANCELLING], m);
        blitz__task *t = blitz__handle_in(m->task, __func__);
        blitz__task_ref(t);
        blitz__mutex_unlock(&g->lock);
        blitz_task_cancel(t);
        blitz__task_unref(t);
    }
}

BLITZ_API int blitz_group_cancel_all(blitz_group *g) {
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return BLITZ_EINVAL;
    blitz__group_cancel_running(g);
    return BLITZ_OK;
}

BLITZ_API int blitz_group_close(blitz_group *g) {
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return BLITZ_EINVAL;
    blitz__mutex_lock(&g->lock);
    g->closed = 1;
    blitz__mutex_unlock(&g->lock);
    blitz__group_cancel_running(g);
    return BLITZ_OK;
}

BLITZ_API int blitz_group_free(blitz_group *g) {
    BLITZ__GROUP_CHECK(g);
    if (!g)
        return BLITZ_EINVAL;
    /* Members still running keep the memory: the handle ends here. */
    BLITZ__MAGIC_SET(g, BLITZ__MAGIC_DEAD);
    blitz_waker old = blitz_waker_noop();
    blitz__mutex_lock(&g->lock);
    g->closed = 1;
    g->freed = 1;
    blitz__group_member *finished = g->lists[BLITZ__MEMBER_FINISHED].head;
    g->lists[BLITZ__MEMBER_FINISHED].head = g->lists[BLITZ__MEMBER_FINISHED].tail = NULL;
    if (g->has_waiter) {
        old = g->waiter;
        g->has_waiter = 0;
    }
    blitz__mutex_unlock(&g->lock);
    blitz_waker_drop(old);
    blitz__group_cancel_running(g);
    while (finished) {
        blitz__group_member *next = finished->next;
        blitz_task_release(&finished->task);
        BLITZ_FREE(finished);
        blitz__group_unref(g);
        finished = next;
    }
    blitz__group_unref(g);
    return BLITZ_OK;
}

BLITZ__OP_ADAPTER(blitz__group_next_op_poll, blitz_group, g,
                  g ? blitz_group_next(cx, g, g->op_out) : BLITZ_READY)
BLITZ_API blitz_op blitz_op_group_next(blitz_group *g, blitz_task **out) {
    BLITZ__GROUP_CHECK(g);
    if (g)
        g->op_out = out;
    return blitz_op_make(blitz__group_next_op_poll, blitz_group_next_cancel, g);
}
