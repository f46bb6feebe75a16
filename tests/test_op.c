/* Ops as values and their combinators: blitz_op_run_blocking from plain threads,
 * join-all, race, select (fairness, what is kept and what is withdrawn),
 * task groups. */
#include "test_tasks.h"

/* ---- a scripted op: ready at its `ready_at`-th poll (never when 0) --------- */

typedef struct {
    int ready_at;
    int polls;
    int cancels;
} op_script;

static blitz_poll op_script_poll(blitz_cx *cx, void *p) {
    op_script *o = p;
    o->polls++;
    if (o->ready_at > 0 && o->polls >= o->ready_at)
        return BLITZ_READY;
    blitz_cx_yield(cx); /* poll again soon */
    return BLITZ_PENDING;
}
static void op_script_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    ((op_script *)p)->cancels++;
}
static blitz_op op_script_op(op_script *o, int ready_at) {
    memset(o, 0, sizeof *o);
    o->ready_at = ready_at;
    return blitz_op_make(op_script_poll, op_script_cancel, o);
}

/* ---- a child that sleeps, then records when it finished ------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    int64_t ns;
    int id;
    atomic_int *finished_seq; /* shared counter: this child's finishing rank */
    int rank;
} op_child;

static blitz_poll op_child_poll(blitz_cx *cx, void *p) {
    op_child *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, s->ns));
    if (s->finished_seq)
        s->rank = atomic_fetch_add(s->finished_seq, 1);
    BLITZ_END(s);
}
static void op_child_cancel(void *p) {
    blitz_timer_cancel(NULL, &((op_child *)p)->timer);
}
static blitz_spawn_opts op_child_opts(op_child *c, int id, int64_t ns, atomic_int *seq) {
    memset(c, 0, sizeof *c);
    c->id = id;
    c->ns = ns;
    c->finished_seq = seq;
    blitz_spawn_opts o;
    memset(&o, 0, sizeof o);
    o.poll = op_child_poll;
    o.state = c;
    o.size = sizeof *c;
    o.cancel = op_child_cancel;
    return o;
}
static blitz_task *op_spawn_child(blitz_runtime *rt, int id, int64_t ns, atomic_int *seq) {
    op_child c;
    blitz_spawn_opts o = op_child_opts(&c, id, ns, seq);
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn_ex(rt, &o, &h));
    return h;
}

/* ---- blitz_op_run_blocking ----------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    int rc;
} op_wait_inside;
static blitz_poll op_wait_inside_poll(blitz_cx *cx, void *p) {
    op_wait_inside *s = p;
    op_script o;
    (void)cx;
    s->rc = blitz_op_run_blocking(NULL, op_script_op(&o, 1));
    return BLITZ_READY;
}

BLITZ_TEST(op_wait_plain_thread) {
    blitz_runtime *rt = tu_rt_paused(TU_MT2, 0);
    blitz_task *child = op_spawn_child(rt, 1, 20 * BLITZ_MSEC, NULL);
    double t0 = tu_now();
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_join(child)));
    CHECK_GE(tu_now() - t0, 0.019);
    CHECK_OK(blitz_task_status(child));
    CHECK_OK(blitz_task_release(&child));

    /* A timer needs the runtime's clock: with rt given it sleeps. */
    blitz_timer timer;
    memset(&timer, 0, sizeof timer);
    uint64_t deadline = blitz_deadline_after(blitz_time_now(rt), 15 * BLITZ_MSEC);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_sleep_until(&timer, deadline)));
    CHECK_GE(blitz_time_now(rt), deadline);
    CHECK(!blitz_timer_armed(&timer));

    /* Bad input and misuse. */
    CHECK_EQ(blitz_op_run_blocking(rt, blitz_op_make(NULL, NULL, NULL)), BLITZ_EINVAL);
    op_wait_inside in;
    memset(&in, 0, sizeof in);
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, op_wait_inside_poll, &in, sizeof in, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_EQ(((op_wait_inside *)blitz_task_state(h))->rc, BLITZ_EDEADLK);
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A current-thread runtime is driven by the waiting thread; a shutdown
 * ends a wait that could otherwise never finish. */
typedef struct {
    blitz_runtime *rt;
    int rc;
} op_shutdown_arg;

static void *op_hour_waiter_main(void *p) {
    op_shutdown_arg *a = p;
    blitz_timer timer;
    memset(&timer, 0, sizeof timer);
    a->rc = blitz_op_run_blocking(
        a->rt, blitz_op_sleep_until(&timer,
                                    blitz_deadline_after(blitz_time_now(a->rt), 3600 * BLITZ_SEC)));
    return NULL;
}

static int op_wait_runtime(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 0);
    blitz_timer timer;
    memset(&timer, 0, sizeof timer);
    uint64_t deadline = blitz_deadline_after(blitz_time_now(rt), 10 * BLITZ_MSEC);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_sleep_until(&timer, deadline)));
    CHECK_GE(blitz_time_now(rt), deadline);

    op_shutdown_arg a = {rt, 1};
    tu_thread th;
    tu_thread_start(&th, op_hour_waiter_main, &a);
    tu_sleep_ms(20);
    CHECK_EQ(a.rc, 1); /* still waiting */
    CHECK_OK(blitz_runtime_shutdown(rt));
    tu_thread_join(&th);
    CHECK(a.rc == BLITZ_ECANCELED || a.rc == BLITZ_ESHUTDOWN);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(op_wait_runtime)

/* Many plain threads wait on tasks that finish at random moments: every
 * wait returns once its task finished, none is lost. */
typedef struct {
    blitz_runtime *rt;
    int rounds;
    int ok;
} op_waiter_arg;

static void *op_waiter_main(void *p) {
    op_waiter_arg *a = p;
    int i;
    for (i = 0; i < a->rounds; i++) {
        blitz_task *h = op_spawn_child(a->rt, i, (i % 3) * BLITZ_MSEC / 2, NULL);
        if (blitz_op_run_blocking(a->rt, blitz_op_join(h)) == BLITZ_OK && blitz_task_status(h) == 0)
            a->ok++;
        blitz_task_release(&h);
    }
    return NULL;
}

BLITZ_TEST(op_wait_many_threads) {
    blitz_runtime *rt = tu_rt_paused(TU_MT2, 0);
    enum { THREADS = 4 };
    tu_thread th[THREADS];
    op_waiter_arg args[THREADS];
    int i;
    for (i = 0; i < THREADS; i++) {
        args[i].rt = rt;
        args[i].rounds = (int)test_scaled(300);
        args[i].ok = 0;
        tu_thread_start(&th[i], op_waiter_main, &args[i]);
    }
    for (i = 0; i < THREADS; i++) {
        tu_thread_join(&th[i]);
        CHECK_EQ(args[i].ok, args[i].rounds);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- join-all, race, select with scripted ops -------------------------------- */

enum { OP_JOIN_ALL, OP_RACE, OP_SELECT };

typedef struct {
    BLITZ_CORO;
    int kind;
    size_t n;
    blitz_combo combo;
    blitz_op ops[4];
    op_script scripts[4];
    int ready_at[4];
    int rounds; /* select: how many awaits */
    int winners[5];
} op_combo_task;

static blitz_poll op_combo_poll(blitz_cx *cx, void *p) {
    op_combo_task *s = p;
    size_t i;
    BLITZ_BEGIN(s);
    for (i = 0; i < s->n; i++)
        s->ops[i] = op_script_op(&s->scripts[i], s->ready_at[i]);
    if (s->kind == OP_JOIN_ALL)
        BLITZ_AWAIT(s, blitz_join_all(cx, &s->combo, s->ops, s->n));
    else if (s->kind == OP_RACE)
        BLITZ_AWAIT(s, blitz_race(cx, &s->combo, s->ops, s->n));
    else {
        for (s->rounds = 0; s->rounds < 5; s->rounds++) {
            BLITZ_AWAIT(s, blitz_select(cx, &s->combo, s->ops, s->n));
            s->winners[s->rounds] = s->combo.winner;
            if (s->combo.winner < 0)
                break;
        }
    }
    BLITZ_END(s);
}

static op_combo_task op_run_combo(tu_flavor f, int kind, const int *ready_at, size_t n) {
    blitz_runtime *rt = tu_rt_paused(f, 0);
    op_combo_task s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.n = n;
    memcpy(s.ready_at, ready_at, n * sizeof *ready_at);
    CHECK_OK(blitz_runtime_run(rt, op_combo_poll, &s, sizeof s));
    CHECK_OK(blitz_runtime_free(rt));
    return s;
}

static int op_combinators(tu_flavor f) {
    /* join-all: ready when the slowest is; each op is polled until it is
     * ready and never after. */
    int ja[3] = {3, 1, 5};
    op_combo_task s = op_run_combo(f, OP_JOIN_ALL, ja, 3);
    CHECK_EQ(s.combo.error, 0);
    CHECK_EQ(s.scripts[0].polls, 3);
    CHECK_EQ(s.scripts[1].polls, 1);
    CHECK_EQ(s.scripts[2].polls, 5);
    CHECK_EQ(s.scripts[0].cancels + s.scripts[1].cancels + s.scripts[2].cancels, 0);

    /* race: op 2 wins at its 2nd poll; the others are cancelled once, the
     * winner never. */
    int ra[3] = {0, 7, 2};
    s = op_run_combo(f, OP_RACE, ra, 3);
    CHECK_EQ(s.combo.winner, 2);
    CHECK_EQ(s.scripts[0].cancels, 1);
    CHECK_EQ(s.scripts[1].cancels, 1);
    CHECK_EQ(s.scripts[2].cancels, 0);
    CHECK_EQ(s.scripts[2].polls, 2);

    /* select: finishing order 1, 3, 0, then -1; op 2 never finishes, so
     * the 4th await would hang: give it 3 rounds then a never-ready op. */
    int se[3] = {6, 2, 4};
    s = op_run_combo(f, OP_SELECT, se, 3);
    CHECK_EQ(s.winners[0], 1);
    CHECK_EQ(s.winners[1], 2);
    CHECK_EQ(s.winners[2], 0);
    CHECK_EQ(s.winners[3], -1);
    CHECK_EQ(s.scripts[0].cancels + s.scripts[1].cancels + s.scripts[2].cancels, 0);
    /* No op was polled after it finished. */
    CHECK_EQ(s.scripts[0].polls, 6);
    CHECK_EQ(s.scripts[1].polls, 2);
    CHECK_EQ(s.scripts[2].polls, 4);
    return 0;
}
TU_FLAVOR_TESTS(op_combinators)

/* Two ops that are always ready: a select loop that re-arms them each
 * round must not always pick the same one. */
typedef struct {
    BLITZ_CORO;
    int round;
    blitz_combo combo;
    blitz_op ops[2];
    op_script scripts[2];
    int wins[2];
} op_fair_task;

static blitz_poll op_fair_poll(blitz_cx *cx, void *p) {
    op_fair_task *s = p;
    BLITZ_BEGIN(s);
    s->ops[0] = op_script_op(&s->scripts[0], 1);
    s->ops[1] = op_script_op(&s->scripts[1], 1);
    for (s->round = 0; s->round < 100; s->round++) {
        blitz_combo_reset(&s->combo);
        BLITZ_AWAIT(s, blitz_select(cx, &s->combo, s->ops, 2));
        s->wins[s->combo.winner]++;
    }
    BLITZ_END(s);
}

BLITZ_TEST(op_select_fair) {
    blitz_runtime *rt = tu_rt_paused(TU_CT, 0);
    op_fair_task s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, op_fair_poll, &s, sizeof s));
    CHECK_GE(s.wins[0], 25);
    CHECK_GE(s.wins[1], 25);
    CHECK_EQ(s.wins[0] + s.wins[1], 100);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

typedef struct {
    BLITZ_CORO;
    blitz_combo combo;
    int results[8];
} op_bad_task;

static blitz_poll op_bad_poll(blitz_cx *cx, void *p) {
    op_bad_task *s = p;
    blitz_op ops[BLITZ_COMBO_MAX + 1];
    op_script sc;
    size_t i;
    for (i = 0; i <= BLITZ_COMBO_MAX; i++)
        ops[i] = op_script_op(&sc, 1);
    int k = 0;
    CHECK_EQ(blitz_join_all(cx, &s->combo, ops, 0), BLITZ_READY);
    s->results[k++] = s->combo.error;
    CHECK_EQ(blitz_race(cx, &s->combo, ops, BLITZ_COMBO_MAX + 1), BLITZ_READY);
    s->results[k++] = s->combo.error;
    CHECK_EQ(blitz_select(cx, &s->combo, NULL, 2), BLITZ_READY);
    s->results[k++] = s->combo.error;
    CHECK_EQ(s->combo.winner, -1);
    ops[1].poll = NULL;
    CHECK_EQ(blitz_select(cx, &s->combo, ops, 2), BLITZ_READY);
    s->results[k++] = s->combo.error;
    CHECK_EQ(blitz_select(NULL, &s->combo, ops, 1), BLITZ_READY);
    s->results[k++] = s->combo.error;
    CHECK_EQ(blitz_select(cx, NULL, ops, 1), BLITZ_READY);
    blitz_combo_cancel(cx, NULL, ops, 1);
    blitz_combo_reset(NULL);
    /* Exactly BLITZ_COMBO_MAX ops is fine. */
    blitz_combo_reset(&s->combo);
    ops[1].poll = op_script_poll;
    CHECK_EQ(blitz_join_all(cx, &s->combo, ops, BLITZ_COMBO_MAX), BLITZ_READY);
    s->results[k++] = s->combo.error;
    return BLITZ_READY;
}

BLITZ_TEST(op_combinators_bad_input) {
    blitz_runtime *rt = tu_rt_paused(TU_CT, 0);
    op_bad_task s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, op_bad_poll, &s, sizeof s));
    int i;
    for (i = 0; i < 5; i++)
        CHECK_EQ(s.results[i], BLITZ_EINVAL);
    CHECK_EQ(s.results[5], 0);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- race and join-all over real ops: joins and timers -------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_task *slow, *fast;
    blitz_timer timer;
    blitz_combo combo;
    blitz_op ops[3];
    int race_winner;
    int all_error;
} op_real_task;

static blitz_poll op_real_poll(blitz_cx *cx, void *p) {
    op_real_task *s = p;
    BLITZ_BEGIN(s);
    s->slow = op_spawn_child(blitz_cx_runtime(cx), 0, 3600 * BLITZ_SEC, NULL);
    s->fast = op_spawn_child(blitz_cx_runtime(cx), 1, 5 * BLITZ_MSEC, NULL);
    /* A timeout as a race: the hour-long child loses to a 20 ms timer. */
    s->ops[0] = blitz_op_join(s->slow);
    s->ops[1] =
        blitz_op_sleep_until(&s->timer, blitz_deadline_after(blitz_cx_now(cx), 20 * BLITZ_MSEC));
    BLITZ_AWAIT(s, blitz_race(cx, &s->combo, s->ops, 2));
    s->race_winner = s->combo.winner;
    CHECK_EQ(blitz_task_status(s->slow), BLITZ_EAGAIN);
    /* The join was withdrawn: cancelling the child must not wake us for a
     * join nobody awaits (it would be a stale wake, harmless but the
     * handle's waker slot must be empty for the next await below). */
    CHECK_OK(blitz_task_cancel(s->slow));
    blitz_combo_reset(&s->combo);
    s->ops[0] = blitz_op_join(s->slow);
    s->ops[1] = blitz_op_join(s->fast);
    BLITZ_AWAIT(s, blitz_join_all(cx, &s->combo, s->ops, 2));
    s->all_error = s->combo.error;
    CHECK_EQ(blitz_task_status(s->slow), BLITZ_ECANCELED);
    CHECK_OK(blitz_task_status(s->fast));
    blitz_task_release(&s->slow);
    blitz_task_release(&s->fast);
    BLITZ_END(s);
}

static int op_race_join_timer(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 0);
    op_real_task s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, op_real_poll, &s, sizeof s));
    CHECK_EQ(s.race_winner, 1);
    CHECK_EQ(s.all_error, 0);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(op_race_join_timer)

/* ---- task groups -------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_group *group;
    blitz_task *done;
    int n;
    int got;
    int ids[64];
    int statuses[64];
} op_group_task;

static blitz_poll op_group_drain_poll(blitz_cx *cx, void *p) {
    op_group_task *s = p;
    int i;
    BLITZ_BEGIN(s);
    /* Spawned inside the runtime: with a paused clock, a plain thread
     * spawning one member at a time would let the clock jump between its
     * spawns (the runtime is idle then). */
    for (i = 0; i < s->n; i++) {
        op_child c;
        blitz_spawn_opts o = op_child_opts(&c, i, (int64_t)(s->n - i) * 10 * BLITZ_MSEC, NULL);
        CHECK_OK(blitz_group_spawn_ex(s->group, &o));
    }
    for (;;) {
        BLITZ_AWAIT(s, blitz_group_next(cx, s->group, &s->done));
        if (!s->done)
            break;
        if (s->got < 64) {
            s->statuses[s->got] = blitz_task_status(s->done);
            op_child *c = blitz_task_state(s->done);
            s->ids[s->got] = c ? c->id : -1;
        }
        s->got++;
        blitz_task_release(&s->done);
    }
    BLITZ_END(s);
}

/* With a paused clock, members finish in deadline order, and the group
 * hands them out in that order. */
static int op_group_order(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    op_group_task s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_group_new(rt, &s.group));
    int i, n = 20;
    s.n = n;
    CHECK_OK(blitz_runtime_run(rt, op_group_drain_poll, &s, sizeof s));
    CHECK_EQ(s.got, n);
    for (i = 0; i < n; i++) {
        CHECK_EQ(s.ids[i], n - 1 - i);
        CHECK_EQ(s.statuses[i], 0);
    }
    CHECK_EQ(blitz_group_len(s.group), 0);
    CHECK_OK(blitz_group_free(s.group));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(op_group_order)

static int op_group_close(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 0);
    op_group_task s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_group_new(rt, &s.group));
    int i, n = 30;
    for (i = 0; i < n; i++) {
        op_child c;
        blitz_spawn_opts o = op_child_opts(&c, i, (i % 2 ? 3600 : 0) * BLITZ_SEC, NULL);
        CHECK_OK(blitz_group_spawn_ex(s.group, &o));
    }
    CHECK_OK(blitz_group_close(s.group));
    op_child c;
    blitz_spawn_opts o = op_child_opts(&c, 99, 0, NULL);
    CHECK_EQ(blitz_group_spawn_ex(s.group, &o), BLITZ_ECLOSED);
    CHECK_OK(blitz_runtime_run(rt, op_group_drain_poll, &s, sizeof s));
    CHECK_EQ(s.got, n);
    int cancelled = 0;
    for (i = 0; i < n; i++) {
        if (s.ids[i] % 2) /* the hour-long ones can only have been cancelled */
            CHECK_EQ(s.statuses[i], BLITZ_ECANCELED);
        cancelled += s.statuses[i] == BLITZ_ECANCELED;
    }
    CHECK_GE(cancelled, n / 2);
    CHECK_OK(blitz_group_free(s.group));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(op_group_close)

/* Freeing a group with members running and finished: nothing leaks
 * (LeakSanitizer checks), nothing is touched after it is freed. */
static int op_group_free_busy(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 0);
    blitz_group *g = NULL;
    CHECK_OK(blitz_group_new(rt, &g));
    int i, n = (int)test_scaled(200);
    for (i = 0; i < n; i++) {
        op_child c;
        blitz_spawn_opts o = op_child_opts(&c, i, (i % 3) * BLITZ_MSEC, NULL);
        CHECK_OK(blitz_group_spawn_ex(g, &o));
    }
    tu_sleep_ms(2);
    CHECK_OK(blitz_group_free(g));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(op_group_free_busy)

/* Members spawned from several threads while a task drains the group:
 * every member is handed out exactly once. */
typedef struct {
    blitz_group *group;
    int n;
} op_spawner_arg;

typedef struct {
    BLITZ_CORO;
    int id;
} op_quick;
static blitz_poll op_quick_poll(blitz_cx *cx, void *p) {
    op_quick *s = p;
    BLITZ_BEGIN(s);
    BLITZ_YIELD(s, cx);
    BLITZ_END(s);
}

static void *op_spawner_main(void *p) {
    op_spawner_arg *a = p;
    int i;
    for (i = 0; i < a->n; i++) {
        op_quick q = {0, i};
        CHECK_OK(blitz_group_spawn(a->group, op_quick_poll, &q, sizeof q));
    }
    return NULL;
}

typedef struct {
    BLITZ_CORO;
    blitz_group *group;
    blitz_task *done;
    int want;
    int got;
} op_counter_task;

static blitz_poll op_counter_poll(blitz_cx *cx, void *p) {
    op_counter_task *s = p;
    BLITZ_BEGIN(s);
    while (s->got < s->want) {
        BLITZ_AWAIT(s, blitz_group_next(cx, s->group, &s->done));
        if (s->done) {
            CHECK_OK(blitz_task_status(s->done));
            s->got++;
            blitz_task_release(&s->done);
        } else {
            BLITZ_YIELD(s, cx); /* empty for now: the spawners are behind */
        }
    }
    BLITZ_END(s);
}

static int op_group_concurrent(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 0);
    blitz_group *g = NULL;
    CHECK_OK(blitz_group_new(rt, &g));
    enum { SPAWNERS = 3 };
    op_spawner_arg args[SPAWNERS];
    tu_thread th[SPAWNERS];
    int i, per = (int)test_scaled(3000);
    op_counter_task s;
    memset(&s, 0, sizeof s);
    s.group = g;
    s.want = per * SPAWNERS;
    blitz_task *counter = NULL;
    CHECK_OK(blitz_spawn(rt, op_counter_poll, &s, sizeof s, &counter));
    for (i = 0; i < SPAWNERS; i++) {
        args[i].group = g;
        args[i].n = per;
        tu_thread_start(&th[i], op_spawner_main, &args[i]);
    }
    for (i = 0; i < SPAWNERS; i++)
        tu_thread_join(&th[i]);
    if (f.flavor == BLITZ_CURRENT_THREAD)
        CHECK_OK(blitz_join_blocking(counter));
    else
        CHECK_OK(blitz_join_blocking(counter));
    CHECK_EQ(((op_counter_task *)blitz_task_state(counter))->got, per * SPAWNERS);
    CHECK_EQ(blitz_group_len(g), 0);
    CHECK_OK(blitz_task_release(&counter));
    CHECK_OK(blitz_group_free(g));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(op_group_concurrent)

BLITZ_TEST(op_group_wait_next_thread) {
    blitz_runtime *rt = tu_rt_paused(TU_MT2, 0);
    blitz_group *g = NULL;
    CHECK_OK(blitz_group_new(rt, &g));
    int i, n = 10;
    for (i = 0; i < n; i++) {
        op_child c;
        blitz_spawn_opts o = op_child_opts(&c, i, (i + 1) * BLITZ_MSEC, NULL);
        CHECK_OK(blitz_group_spawn_ex(g, &o));
    }
    int got = 0;
    for (;;) {
        blitz_task *t = NULL;
        CHECK_OK(blitz_group_next_blocking(g, &t));
        if (!t)
            break;
        CHECK_OK(blitz_task_status(t));
        CHECK_OK(blitz_task_release(&t));
        got++;
    }
    CHECK_EQ(got, n);
    /* Bad input. */
    blitz_task *t = NULL;
    CHECK_EQ(blitz_group_new(NULL, &g), BLITZ_EINVAL);
    CHECK_EQ(blitz_group_next_blocking(NULL, &t), BLITZ_EINVAL);
    CHECK_EQ(blitz_group_spawn_ex(NULL, NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_group_spawn(g, NULL, NULL, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_group_close(NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_group_cancel_all(NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_group_free(NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_group_len(NULL), 0);
    CHECK_OK(blitz_group_free(g));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A timeout around blitz_group_next withdraws the waiter: the member that
 * finishes later is still handed out to the next await. */
typedef struct {
    BLITZ_CORO;
    blitz_group *group;
    blitz_task *done;
    blitz_timer timer;
    int first_expired;
    int second_got;
} op_group_timeout_task;

static blitz_poll op_group_timeout_poll(blitz_cx *cx, void *p) {
    op_group_timeout_task *s = p;
    BLITZ_BEGIN(s);
    {
        op_child c;
        blitz_spawn_opts o = op_child_opts(&c, 0, 50 * BLITZ_MSEC, NULL);
        CHECK_OK(blitz_group_spawn_ex(s->group, &o));
    }
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 10 * BLITZ_MSEC,
                                    blitz_group_next(cx, s->group, &s->done),
                                    blitz_group_next_cancel, s->group));
    s->first_expired = s->timer.expired;
    CHECK_NULL(s->done);
    BLITZ_AWAIT(s, blitz_group_next(cx, s->group, &s->done));
    s->second_got = s->done != NULL;
    blitz_task_release(&s->done);
    BLITZ_END(s);
}

static int op_group_timeout(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    op_group_timeout_task s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_group_new(rt, &s.group));
    CHECK_OK(blitz_runtime_run(rt, op_group_timeout_poll, &s, sizeof s));
    CHECK_EQ(s.first_expired, 1);
    CHECK_EQ(s.second_got, 1);
    CHECK_OK(blitz_group_free(s.group));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(op_group_timeout)
