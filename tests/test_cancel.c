/* Cancellation, the shield, drop functions and detaching. */
#include "test_tasks.h"

/* ---- cancelling an idle task ----------------------------------------------- */

/* Current-thread makes "idle" certain: after the drive returns nothing
 * polls the task, so the cancel completes it on the spot. */
BLITZ_TEST(cancel_idle_now_ct) {
    blitz_runtime *rt = tu_rt_new(TU_CT);
    blitz_runtime *other = tu_rt_new(TU_MT2);
    tt_probe pr;
    memset(&pr, 0, sizeof pr);
    blitz_task *a = tt_spawn(rt, CM_FOREVER, NULL, &pr);
    /* Its joiner is a task of another runtime, so that it can finish
     * without this one being driven. */
    blitz_task *j2 = tt_spawn_joiner(other, a);
    tt_drive_ct(rt);
    CHECK_EQ(tu_ldi(&pr.polls), 1);
    CHECK_EQ(blitz_task_status(a), BLITZ_EAGAIN);
    CHECK_NULL(blitz_task_state(a));

    /* A plain thread blocks on it too (it drives the idle runtime). */
    tt_waiter_arg w = {a, 1, 0};
    tu_thread th;
    tu_thread_start(&th, tt_waiter_main, &w);
    TU_WAIT_GE(&w.started, 1, 5.0);
    tu_sleep_ms(20);

    CHECK_OK(blitz_task_cancel(a));
    /* Completed at once: status and state readable right away. */
    CHECK_EQ(blitz_task_status(a), BLITZ_ECANCELED);
    tt_task *s = tt_state(a);
    CHECK_EQ(s->value, 7);
    CHECK_EQ(tu_ldl(&pr.done), 0);

    tu_thread_join(&th);
    CHECK_EQ(w.rc, BLITZ_ECANCELED);
    CHECK_EQ(tt_joiner_result(&j2), BLITZ_ECANCELED);
    CHECK_EQ(blitz_join_blocking(a), BLITZ_ECANCELED);
    /* Cancelling again changes nothing. */
    CHECK_OK(blitz_task_cancel(a));
    CHECK_EQ(blitz_task_status(a), BLITZ_ECANCELED);
    CHECK_EQ(tu_ldi(&pr.polls), 1);
    tt_release_dropped(&a, &pr);
    CHECK_EQ(tu_ldl(&pr.dropped_value), 7);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_OK(blitz_runtime_free(other));
    return 0;
}

static int cancel_idle(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    for (int rep = 0; rep < 20; rep++) {
        tt_probe pr;
        memset(&pr, 0, sizeof pr);
        tu_gate g;
        tu_gate_init(&g);
        blitz_task *a = tt_spawn(rt, CM_GATE, &g, &pr);
        blitz_task *j = tt_spawn_joiner(rt, a);
        tt_waiter_arg w = {a, 1, 0};
        tu_thread th;
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        else
            TU_WAIT_GE(&g.waits, 1, 5.0);
        tu_thread_start(&th, tt_waiter_main, &w);
        TU_WAIT_GE(&w.started, 1, 5.0);
        if (rep % 2)
            tu_sleep_ms(2);
        CHECK_OK(blitz_task_cancel(a));
        tu_thread_join(&th);
        CHECK_EQ(w.rc, BLITZ_ECANCELED);
        CHECK_EQ(blitz_join_blocking(a), BLITZ_ECANCELED);
        CHECK_EQ(blitz_task_status(a), BLITZ_ECANCELED);
        CHECK_EQ(tt_joiner_result(&j), BLITZ_ECANCELED);
        CHECK_EQ(tt_state(a)->value, 7);
        /* Waking it after the cancel does nothing. */
        tu_gate_open(&g);
        tu_sleep_ms(2);
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        CHECK_EQ(tu_ldi(&pr.polls), 1);
        CHECK_EQ(tu_ldl(&pr.done), 0);
        tt_release_dropped(&a, &pr);
        tu_gate_destroy(&g);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(cancel_idle)

/* ---- cancelling a queued task -------------------------------------------- */

BLITZ_TEST(cancel_queued_ct) {
    blitz_runtime *rt = tu_rt_new(TU_CT);
    tt_probe pr;
    memset(&pr, 0, sizeof pr);
    blitz_task *a = tt_spawn(rt, CM_READY, NULL, &pr);
    CHECK_OK(blitz_task_cancel(a));
    CHECK_OK(blitz_task_cancel(a));
    CHECK_EQ(blitz_join_blocking(a), BLITZ_ECANCELED);
    CHECK_EQ(blitz_task_status(a), BLITZ_ECANCELED);
    CHECK_EQ(tu_ldi(&pr.polls), 0); /* never polled */
    CHECK_EQ(tt_state(a)->value, 7);
    tt_release_dropped(&a, &pr);
    CHECK_EQ(tu_ldl(&pr.dropped_value), 7);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

static int cancel_queued_mt(uint32_t workers) {
    blitz_runtime *rt = tu_rt_new((tu_flavor){BLITZ_MULTI_THREAD, workers});
    tt_blockers bl;
    tt_block(rt, workers, &bl);
    enum { N = 16 };
    tt_probe pr[N];
    blitz_task *h[N], *j[N];
    memset(pr, 0, sizeof pr);
    for (int i = 0; i < N; i++) {
        h[i] = tt_spawn(rt, CM_READY, NULL, &pr[i]);
        j[i] = tt_spawn_joiner(rt, h[i]);
    }
    for (int i = 0; i < N; i += 2)
        CHECK_OK(blitz_task_cancel(h[i]));
    tu_sleep_ms(5);
    for (int i = 0; i < N; i++)
        CHECK_EQ(tu_ldi(&pr[i].polls), 0);
    tt_unblock(&bl);
    for (int i = 0; i < N; i++) {
        int want = i % 2 ? BLITZ_OK : BLITZ_ECANCELED;
        CHECK_EQ(blitz_join_blocking(h[i]), want);
        CHECK_EQ(tt_joiner_result(&j[i]), want);
        CHECK_EQ(tu_ldi(&pr[i].polls), i % 2 ? 1 : 0);
        CHECK_EQ(tt_state(h[i])->value, i % 2 ? 1007 : 7);
        tt_release_dropped(&h[i], &pr[i]);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
BLITZ_TEST(cancel_queued_mt2) {
    return cancel_queued_mt(2);
}
BLITZ_TEST(cancel_queued_mt4) {
    return cancel_queued_mt(4);
}

/* ---- cancelling a running task ----------------------------------------------- */

/* From another thread while the first poll runs: the poll sees the request,
 * and the task completes as cancelled instead of being polled again --
 * unless that poll itself returned READY. */
static int cancel_running_mt(uint32_t workers) {
    blitz_runtime *rt = tu_rt_new((tu_flavor){BLITZ_MULTI_THREAD, workers});
    for (int then = THEN_YIELD; then <= THEN_READY; then++) {
        for (int rep = 0; rep < 10; rep++) {
            tt_probe pr;
            memset(&pr, 0, sizeof pr);
            blitz_task *a = tt_spawn_ex(rt, CM_SPIN, then, NULL, NULL, &pr, 1);
            blitz_task *j = tt_spawn_joiner(rt, a);
            TU_WAIT_GE(&pr.in_poll, 1, 10.0);
            CHECK_OK(blitz_task_cancel(a));
            atomic_store(&pr.go, 1);
            int want = then == THEN_READY ? BLITZ_OK : BLITZ_ECANCELED;
            CHECK_EQ(blitz_join_blocking(a), want);
            CHECK_EQ(tt_joiner_result(&j), want);
            CHECK_EQ(tu_ldi(&pr.saw_cancelled), 1);
            CHECK_BASE(tu_ldi(&pr.polls) == 1, "then=%d: polled %d times after the cancel", then,
                       tu_ldi(&pr.polls));
            CHECK_EQ(tt_state(a)->value, then == THEN_READY ? 1007 : 7);
            tt_release_dropped(&a, &pr);
        }
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
BLITZ_TEST(cancel_running_mt2) {
    return cancel_running_mt(2);
}
BLITZ_TEST(cancel_running_mt4) {
    return cancel_running_mt(4);
}

/* A task cancels itself from inside its poll (any flavour). */
static int cancel_self(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    for (int then = THEN_YIELD; then <= THEN_READY; then++) {
        tt_probe pr;
        memset(&pr, 0, sizeof pr);
        atomic_store(&pr.cancel_rc, 99);
        /* The task reads its handle from `self` in its poll, so it must
         * not run before blitz_spawn_ex has stored it: on a multi-thread
         * runtime the workers are kept busy until then. */
        blitz_task *self = NULL;
        tt_task s = {CM_SELF, then, 7, NULL, &self, &pr};
        blitz_spawn_opts o = {tt_task_poll, &s, sizeof s, tt_task_drop, NULL, NULL, NULL};
        tt_blockers bl;
        if (f.flavor == BLITZ_MULTI_THREAD)
            tt_block(rt, f.workers, &bl);
        CHECK_OK(blitz_spawn_ex(rt, &o, &self));
        if (f.flavor == BLITZ_MULTI_THREAD)
            tt_unblock(&bl);
        blitz_task *h = self;
        int want = then == THEN_READY ? BLITZ_OK : BLITZ_ECANCELED;
        CHECK_EQ(blitz_join_blocking(h), want);
        CHECK_EQ(tu_ldi(&pr.cancel_rc), BLITZ_OK);
        CHECK_EQ(tu_ldi(&pr.saw_cancelled), 1);
        CHECK_EQ(tu_ldi(&pr.polls), 1);
        tt_release_dropped(&h, &pr);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(cancel_self)

/* ---- cancel after completion ------------------------------------------------ */

static int cancel_after_complete(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    tt_probe pr;
    memset(&pr, 0, sizeof pr);
    blitz_task *a = tt_spawn(rt, CM_YIELD_ONCE, NULL, &pr);
    CHECK_OK(blitz_join_blocking(a));
    CHECK_OK(blitz_task_cancel(a));
    CHECK_OK(blitz_task_cancel(a));
    CHECK_OK(blitz_task_status(a));
    CHECK_OK(blitz_join_blocking(a));
    CHECK_EQ(tt_state(a)->value, 1007);
    /* A joiner that comes later still sees OK. */
    blitz_task *j = tt_spawn_joiner(rt, a);
    CHECK_EQ(tt_joiner_result(&j), BLITZ_OK);
    CHECK_EQ(tu_ldi(&pr.polls), 2);
    CHECK_EQ(tu_ldi(&pr.saw_cancelled), 0);
    tt_release_dropped(&a, &pr);
    CHECK_EQ(tu_ldl(&pr.dropped_value), 1007);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(cancel_after_complete)

/* ---- the shield ----------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    int then; /* after lowering the shield: THEN_YIELD, THEN_IDLE, THEN_READY */
    tu_gate *gate;
    tt_probe *pr;
    int shield_rc, unshield_rc, unshield2_rc;
    int cancelled_in_shield;
    int after; /* reached only if the task was not cancelled */
} cancel_shielded;

static blitz_poll cancel_shielded_poll(blitz_cx *cx, void *p) {
    cancel_shielded *s = p;
    atomic_fetch_add(&s->pr->polls, 1);
    BLITZ_BEGIN(s);
    s->shield_rc = blitz_cx_shield(cx);
    BLITZ_AWAIT(s, tu_gate_wait(cx, s->gate));
    s->cancelled_in_shield = blitz_cx_cancelled(cx) != 0;
    s->unshield_rc = blitz_cx_unshield(cx);
    s->unshield2_rc = blitz_cx_unshield(cx); /* unbalanced */
    if (s->then == THEN_YIELD)
        BLITZ_YIELD(s, cx);
    else if (s->then == THEN_IDLE)
        BLITZ_AWAIT(s, BLITZ_PENDING);
    s->after = 1;
    atomic_store(&s->pr->done, 1);
    BLITZ_END(s);
}

static int cancel_shield(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    for (int then = THEN_YIELD; then <= THEN_READY; then++) {
        if (then == THEN_WAKE)
            continue;
        tt_probe pr;
        memset(&pr, 0, sizeof pr);
        tu_gate g;
        tu_gate_init(&g);
        cancel_shielded s;
        memset(&s, 0, sizeof s);
        s.then = then;
        s.gate = &g;
        s.pr = &pr;
        blitz_task *a = NULL;
        CHECK_OK(blitz_spawn(rt, cancel_shielded_poll, &s, sizeof s, &a));
        blitz_task *j = tt_spawn_joiner(rt, a);
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        else
            TU_WAIT_GE(&g.waits, 1, 5.0);
        CHECK_OK(blitz_task_cancel(a));
        /* Shielded: the request is remembered, not carried out. */
        tu_sleep_ms(20);
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        CHECK_EQ(blitz_task_status(a), BLITZ_EAGAIN);
        CHECK_NULL(blitz_task_state(a));
        CHECK_EQ(tu_ldi(&pr.polls), 1);
        tu_gate_open(&g);
        int want = then == THEN_READY ? BLITZ_OK : BLITZ_ECANCELED;
        CHECK_EQ(blitz_join_blocking(a), want);
        CHECK_EQ(tt_joiner_result(&j), want);
        cancel_shielded *r = blitz_task_state(a);
        CHECK_NOT_NULL(r);
        CHECK_EQ(r->shield_rc, BLITZ_OK);
        CHECK_EQ(r->cancelled_in_shield, 1);
        CHECK_EQ(r->unshield_rc, BLITZ_OK);
        CHECK_EQ(r->unshield2_rc, BLITZ_ERANGE);
        CHECK_EQ(r->after, then == THEN_READY);
        CHECK_EQ(tu_ldi(&pr.polls), 2);
        CHECK_OK(blitz_task_release(&a));
        tu_gate_destroy(&g);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(cancel_shield)

/* Nesting: 255 levels, then ERANGE; lowering: 255 times, then ERANGE. */
typedef struct {
    int raised, raise_fail, lowered, lower_fail, first_lower;
} cancel_nest;

static blitz_poll cancel_nest_poll(blitz_cx *cx, void *p) {
    cancel_nest *s = p;
    s->first_lower = blitz_cx_unshield(cx);
    for (int i = 0; i < 255; i++)
        s->raised += blitz_cx_shield(cx) == BLITZ_OK;
    s->raise_fail = blitz_cx_shield(cx);
    for (int i = 0; i < 255; i++)
        s->lowered += blitz_cx_unshield(cx) == BLITZ_OK;
    s->lower_fail = blitz_cx_unshield(cx);
    return BLITZ_READY;
}

static int shield_nesting(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    cancel_nest s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, cancel_nest_poll, &s, sizeof s));
    CHECK_EQ(s.first_lower, BLITZ_ERANGE);
    CHECK_EQ(s.raised, 255);
    CHECK_EQ(s.raise_fail, BLITZ_ERANGE);
    CHECK_EQ(s.lowered, 255);
    CHECK_EQ(s.lower_fail, BLITZ_ERANGE);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(shield_nesting)

/* ---- cancel racing completion ---------------------------------------------------- */

typedef struct {
    blitz_task **tasks;
    int n;
    atomic_long batch;   /* batches handed to the canceller */
    atomic_long handled; /* batches it has finished */
    atomic_int quit;
} cancel_racer;

static void *cancel_racer_main(void *p) {
    cancel_racer *r = p;
    for (long b = 1;; b++) {
        while (atomic_load(&r->batch) < b) {
            if (atomic_load(&r->quit))
                return NULL;
            tu_spin_pause();
        }
        /* Cancel in reverse order: the last spawned are the likeliest to
         * be still queued, the first the likeliest to be running. */
        for (int i = r->n - 1; i >= 0; i--)
            CHECK_OK(blitz_task_cancel(r->tasks[i]));
        atomic_store(&r->handled, b);
    }
}

static int cancel_race(uint32_t workers) {
    blitz_runtime *rt = tu_rt_new((tu_flavor){BLITZ_MULTI_THREAD, workers});
    enum { K = 64 };
    long batches = test_scaled(300);
    blitz_task *tasks[K], *joiners[K];
    tt_probe *pr = calloc(K, sizeof *pr);
    CHECK_NOT_NULL(pr);
    cancel_racer r;
    memset(&r, 0, sizeof r);
    r.tasks = tasks;
    r.n = K;
    tu_thread th;
    tu_thread_start(&th, cancel_racer_main, &r);
    long ok = 0, cancelled = 0;
    for (long b = 1; b <= batches; b++) {
        memset(pr, 0, K * sizeof *pr);
        for (int i = 0; i < K; i++) {
            tasks[i] = tt_spawn(rt, i % 3 == 0 ? CM_READY : CM_YIELD_ONCE, NULL, &pr[i]);
            joiners[i] = tt_spawn_joiner(rt, tasks[i]);
        }
        atomic_store(&r.batch, b);
        /* Wait on them while the canceller cancels. */
        for (int i = 0; i < K; i++) {
            int rc = blitz_join_blocking(tasks[i]);
            CHECK_BASE(rc == BLITZ_OK || rc == BLITZ_ECANCELED, "wait returned %d", rc);
            CHECK_EQ(blitz_task_status(tasks[i]), rc);
            CHECK_EQ(tt_joiner_result(&joiners[i]), rc);
            tt_task *s = tt_state(tasks[i]);
            if (rc == BLITZ_OK) {
                CHECK_EQ(tu_ldl(&pr[i].done), 1);
                CHECK_EQ(s->value, 1007);
                ok++;
            } else {
                cancelled++;
            }
        }
        TU_WAIT_GE(&r.handled, b, 10.0);
        for (int i = 0; i < K; i++) {
            /* The outcome did not change after the cancel returned. */
            int rc = blitz_task_status(tasks[i]);
            CHECK(rc == BLITZ_OK || rc == BLITZ_ECANCELED);
            CHECK_OK(blitz_task_release(&tasks[i]));
            TU_WAIT_GE(&pr[i].drops, 1, 5.0);
            CHECK_EQ(tu_ldi(&pr[i].drops), 1);
        }
    }
    atomic_store(&r.quit, 1);
    tu_thread_join(&th);
    CHECK_EQ(ok + cancelled, batches * K);
    CHECK_OK(blitz_runtime_free(rt));
    free(pr);
    return 0;
}
BLITZ_TEST(cancel_race_mt2) {
    return cancel_race(2);
}
BLITZ_TEST(cancel_race_mt4) {
    return cancel_race(4);
}

/* ---- drop functions -------------------------------------------------------- */

/* One task of each kind; every drop function runs exactly once: at release
 * for finished tasks with a handle, on completion for detached ones, and at
 * shutdown for those never finished. */
static int drop_once(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    enum {
        D_COMPLETED,      /* finished, then released */
        D_CANCELLED,      /* cancelled while idle, then released */
        D_DETACHED_SPAWN, /* spawned without a handle */
        D_DETACHED_IDLE,  /* released while waiting, then woken */
        D_SHUT_HANDLE,    /* never finishes, handle released after shutdown */
        D_SHUT_DETACHED,  /* never finishes, no handle */
        D_SHUT_RUNNABLE,  /* yields forever, no handle */
        D_SHUT_KEPT,      /* never finishes, handle never released */
        D_COUNT
    };
    tt_probe pr[D_COUNT];
    memset(pr, 0, sizeof pr);
    tu_gate gate;
    tu_gate_init(&gate);
    int ct = f.flavor == BLITZ_CURRENT_THREAD;

    blitz_task *done = tt_spawn(rt, CM_YIELD_ONCE, NULL, &pr[D_COMPLETED]);
    CHECK_OK(blitz_join_blocking(done));
    tu_sleep_ms(5);
    CHECK_EQ(tu_ldi(&pr[D_COMPLETED].drops), 0); /* the handle still holds it */
    CHECK_EQ(tt_state(done)->value, 1007);
    tt_release_dropped(&done, &pr[D_COMPLETED]);
    CHECK_EQ(tu_ldl(&pr[D_COMPLETED].dropped_value), 1007);

    blitz_task *canc = tt_spawn(rt, CM_FOREVER, NULL, &pr[D_CANCELLED]);
    if (ct)
        tt_drive_ct(rt);
    else
        TU_WAIT_GE(&pr[D_CANCELLED].polls, 1, 5.0);
    CHECK_OK(blitz_task_cancel(canc));
    CHECK_EQ(blitz_join_blocking(canc), BLITZ_ECANCELED);
    tu_sleep_ms(5);
    CHECK_EQ(tu_ldi(&pr[D_CANCELLED].drops), 0);
    tt_release_dropped(&canc, &pr[D_CANCELLED]);
    CHECK_EQ(tu_ldl(&pr[D_CANCELLED].dropped_value), 7);

    tt_spawn_ex(rt, CM_YIELD_ONCE, THEN_READY, NULL, NULL, &pr[D_DETACHED_SPAWN], 0);
    blitz_task *idle = tt_spawn(rt, CM_GATE, &gate, &pr[D_DETACHED_IDLE]);
    if (ct)
        tt_drive_ct(rt);
    else
        TU_WAIT_GE(&gate.waits, 1, 5.0);
    CHECK_OK(blitz_task_release(&idle));
    CHECK_NULL(idle);
    tu_gate_open(&gate);
    if (ct) {
        tu_until u = {0, &pr[D_DETACHED_IDLE].done, 1};
        CHECK_OK(blitz_runtime_run(rt, tu_until_poll, &u, sizeof u));
        tt_drive_ct(rt);
    }
    TU_WAIT_GE(&pr[D_DETACHED_SPAWN].drops, 1, 5.0);
    TU_WAIT_GE(&pr[D_DETACHED_IDLE].drops, 1, 5.0);
    CHECK_EQ(tu_ldl(&pr[D_DETACHED_SPAWN].dropped_value), 1007);
    CHECK_EQ(tu_ldl(&pr[D_DETACHED_IDLE].dropped_value), 1007);
    CHECK_EQ(tu_ldi(&pr[D_DETACHED_IDLE].polls), 2);

    blitz_task *sh = tt_spawn(rt, CM_FOREVER, NULL, &pr[D_SHUT_HANDLE]);
    tt_spawn_ex(rt, CM_FOREVER, THEN_READY, NULL, NULL, &pr[D_SHUT_DETACHED], 0);
    tt_spawn_ex(rt, CM_YIELD_LOOP, THEN_READY, NULL, NULL, &pr[D_SHUT_RUNNABLE], 0);
    blitz_task *kept = tt_spawn(rt, CM_FOREVER, NULL, &pr[D_SHUT_KEPT]);
    if (ct)
        tt_drive_ct(rt);
    else
        TU_WAIT_GE(&pr[D_SHUT_RUNNABLE].polls, 3, 5.0);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_EQ(blitz_task_status(sh), BLITZ_ECANCELED);
    CHECK_EQ(blitz_task_status(kept), BLITZ_ECANCELED);
    CHECK_EQ(tu_ldi(&pr[D_SHUT_HANDLE].drops), 0);
    CHECK_EQ(tu_ldi(&pr[D_SHUT_KEPT].drops), 0);
    CHECK_OK(blitz_task_release(&sh));
    CHECK_EQ(tu_ldi(&pr[D_SHUT_HANDLE].drops), 1);
    /* `kept` is freed with the runtime. */
    CHECK_OK(blitz_runtime_free(rt));
    for (int i = 0; i < D_COUNT; i++)
        CHECK_BASE(tu_ldi(&pr[i].drops) == 1, "kind %d: drop ran %d times", i,
                   tu_ldi(&pr[i].drops));
    CHECK_EQ(tu_ldl(&pr[D_SHUT_RUNNABLE].done), 0);
    tu_gate_destroy(&gate);
    return 0;
}
TU_FLAVOR_TESTS(drop_once)

/* ---- detach ----------------------------------------------------------------- */

/* Releasing the handle of a task in the middle of its poll: it still runs
 * to completion. */
static int detach_running(uint32_t workers) {
    blitz_runtime *rt = tu_rt_new((tu_flavor){BLITZ_MULTI_THREAD, workers});
    for (int then = THEN_YIELD; then <= THEN_READY; then++) {
        if (then == THEN_IDLE)
            continue; /* would never be woken */
        tt_probe pr;
        memset(&pr, 0, sizeof pr);
        blitz_task *a = tt_spawn_ex(rt, CM_SPIN, then, NULL, NULL, &pr, 1);
        TU_WAIT_GE(&pr.in_poll, 1, 10.0);
        CHECK_OK(blitz_task_release(&a));
        CHECK_NULL(a);
        atomic_store(&pr.go, 1);
        TU_WAIT_GE(&pr.done, 1, 10.0);
        TU_WAIT_GE(&pr.drops, 1, 5.0);
        CHECK_EQ(tu_ldl(&pr.dropped_value), 1007);
        CHECK_EQ(tu_ldi(&pr.polls), then == THEN_READY ? 1 : 2);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
BLITZ_TEST(detach_running_mt2) {
    return detach_running(2);
}
BLITZ_TEST(detach_running_mt4) {
    return detach_running(4);
}

/* A task releases its own handle from inside its poll. */
static int detach_self(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    tt_probe pr;
    memset(&pr, 0, sizeof pr);
    atomic_store(&pr.cancel_rc, 99);
    blitz_task *self = NULL;
    tt_task s = {CM_SELF_RELEASE, THEN_YIELD, 7, NULL, &self, &pr};
    blitz_spawn_opts o = {tt_task_poll, &s, sizeof s, tt_task_drop, NULL, NULL, NULL};
    tt_blockers bl;
    if (f.flavor == BLITZ_MULTI_THREAD)
        tt_block(rt, f.workers, &bl);
    CHECK_OK(blitz_spawn_ex(rt, &o, &self));
    if (f.flavor == BLITZ_MULTI_THREAD)
        tt_unblock(&bl);
    if (f.flavor == BLITZ_CURRENT_THREAD) {
        tu_until u = {0, &pr.done, 1};
        CHECK_OK(blitz_runtime_run(rt, tu_until_poll, &u, sizeof u));
    }
    TU_WAIT_GE(&pr.done, 1, 10.0);
    TU_WAIT_GE(&pr.drops, 1, 5.0);
    CHECK_EQ(tu_ldi(&pr.cancel_rc), BLITZ_OK);
    CHECK_EQ(tu_ldi(&pr.polls), 2);
    CHECK_EQ(tu_ldl(&pr.dropped_value), 1007);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(tu_ldi(&pr.drops), 1);
    return 0;
}
TU_FLAVOR_TESTS(detach_self)
