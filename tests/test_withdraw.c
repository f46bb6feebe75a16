/* A cancelled task's pending op is withdrawn without a cancel hook; timeouts
 * around an op and spawn deadlines. */
#include "test_util.h"

/* ---- cancelling a task withdraws the op it waits in -------------------------- */

enum {
    WD_SLEEP,
    WD_CHAN,
    WD_MUTEX,
    WD_SEMAPHORE,
    WD_JOIN,
    WD_RACE,
    WD_SELECT,
    WD_TIMEOUT,
    WD_SOCKET,
    WD_KINDS
};

typedef struct {
    BLITZ_CORO;
    int kind;
    atomic_int *entered;
    blitz_chan *ch;
    blitz_mutex *mutex;
    blitz_semaphore *sem;
    blitz_task *child;
    blitz_socket *sock;
    blitz_timer timer;
    blitz_chan_op chan_op;
    blitz_mutex_lock_op lock_op;
    blitz_semaphore_acquire_op acq_op;
    blitz_io io;
    blitz_op ops[2];
    blitz_combo combo;
    long value;
    char buf[64];
} wd_state;

static blitz_poll wd_poll(blitz_cx *cx, void *p) {
    wd_state *s = (wd_state *)p;
    BLITZ_BEGIN(s);
    atomic_fetch_add(s->entered, 1);
    switch (s->kind) {
    case WD_SLEEP:
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 3600 * BLITZ_SEC));
        break;
    case WD_CHAN:
        BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->chan_op, s->ch, &s->value));
        break;
    case WD_MUTEX:
        BLITZ_AWAIT(s, blitz_mutex_lock(cx, &s->lock_op, s->mutex));
        break;
    case WD_SEMAPHORE:
        BLITZ_AWAIT(s, blitz_semaphore_acquire(cx, &s->acq_op, s->sem, 1));
        break;
    case WD_JOIN:
        BLITZ_AWAIT(s, blitz_join(cx, s->child));
        break;
    case WD_RACE:
    case WD_SELECT:
        s->ops[0] = blitz_op_mutex_lock(&s->lock_op, s->mutex);
        s->ops[1] = blitz_op_sleep_until(&s->timer, BLITZ_TIME_NEVER - 1);
        if (s->kind == WD_RACE)
            BLITZ_AWAIT(s, blitz_race(cx, &s->combo, s->ops, 2));
        else
            BLITZ_AWAIT(s, blitz_select(cx, &s->combo, s->ops, 2));
        break;
    case WD_TIMEOUT:
        BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, 3600 * BLITZ_SEC,
                                     blitz_mutex_lock(cx, &s->lock_op, s->mutex)));
        break;
    case WD_SOCKET:
        BLITZ_AWAIT(s, blitz_sock_recv(cx, &s->io, s->sock, s->buf, sizeof s->buf));
        break;
    }
    s->value = -1; /* never reached: the task is cancelled while it waits */
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    int left;
} wd_spin_state;

static blitz_poll wd_spin_poll(blitz_cx *cx, void *p) {
    wd_spin_state *s = (wd_spin_state *)p;
    BLITZ_BEGIN(s);
    while (s->left-- > 0)
        BLITZ_YIELD(s, cx);
    BLITZ_END(s);
}

/* Lets a current-thread runtime run (and reap I/O) for a few ticks. */
static void wd_drive(blitz_runtime *rt) {
    wd_spin_state sp = {0, 64};
    blitz_task *d;
    CHECK_OK(blitz_spawn(rt, wd_spin_poll, &sp, sizeof sp, &d));
    CHECK_EQ(blitz_join_blocking(d), BLITZ_OK);
    CHECK_OK(blitz_task_release(&d));
}

static uint64_t wd_alive(blitz_runtime *rt) {
    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    return st.tasks_alive;
}

static uint64_t wd_alive_driven(blitz_runtime *rt, tu_flavor f) {
    if (f.flavor == BLITZ_CURRENT_THREAD)
        wd_drive(rt);
    return wd_alive(rt);
}

/* One task per kind of op waits in it; each is cancelled without a cancel
 * hook. Afterwards no primitive still holds the task (its block is freed
 * once the handle goes), and what the primitive would have handed the
 * withdrawn op goes to the next taker instead. */
static int withdraw_ops_on(tu_flavor f, blitz_backend backend) {
    blitz_config cfg = tu_config(f);
    cfg.backend = backend;
    blitz_runtime *rt = backend == BLITZ_BACKEND_AUTO ? tu_rt_config(&cfg) : tu_io_rt_config(&cfg);
    if (!rt)
        return 0;
    for (int kind = 0; kind < WD_KINDS; kind++) {
        atomic_int entered = 0;
        blitz_chan *ch;
        CHECK_OK(blitz_chan_new(&ch, sizeof(long), 4));
        blitz_mutex mutex;
        CHECK_OK(blitz_mutex_init(&mutex));
        CHECK_OK(blitz_mutex_try_lock(&mutex)); /* held: the task must wait */
        blitz_semaphore sem;
        CHECK_OK(blitz_semaphore_init(&sem, 0));
        int forever = 0;
        blitz_task *child;
        CHECK_OK(blitz_spawn(rt, tu_forever_poll, &forever, sizeof forever, &child));
        blitz_socket *a = NULL, *b = NULL;
        tu_tcp_pair(rt, &a, &b);

        wd_state st;
        memset(&st, 0, sizeof st);
        st.kind = kind;
        st.entered = &entered;
        st.ch = ch;
        st.mutex = &mutex;
        st.sem = &sem;
        st.child = child;
        st.sock = a;
        blitz_task *t;
        CHECK_OK(blitz_spawn(rt, wd_poll, &st, sizeof st, &t));
        /* A current-thread runtime polls only while driven: let the task
         * reach its await. */
        if (f.flavor == BLITZ_CURRENT_THREAD)
            wd_drive(rt);
        TU_WAIT_GE(&entered, 1, 10.0);
        CHECK_OK(blitz_task_cancel(t));
        CHECK_EQ(blitz_join_blocking(t), BLITZ_ECANCELED);
        CHECK_EQ(((wd_state *)blitz_task_state(t))->value, 0);
        CHECK_OK(blitz_task_release(&t));

        /* The lock and the permit go to the next taker, not to the dead
         * waiter. */
        blitz_mutex_unlock(&mutex);
        CHECK_OK(blitz_mutex_try_lock(&mutex));
        blitz_mutex_unlock(&mutex);
        CHECK_OK(blitz_semaphore_release(&sem, 1));
        CHECK_OK(blitz_semaphore_try_acquire(&sem, 1));
        long v = 42, got = 0;
        CHECK_OK(blitz_chan_try_send(ch, &v));
        CHECK_OK(blitz_chan_try_recv(ch, &got));
        CHECK_EQ(got, 42);

        CHECK_OK(blitz_task_cancel(child));
        CHECK_EQ(blitz_join_blocking(child), BLITZ_ECANCELED);
        CHECK_OK(blitz_task_release(&child));
        blitz_sock_close(a);
        blitz_sock_close(b);
        /* Nothing holds the cancelled task: every block is freed (an
         * io_uring receive lets go when its cancel completes). */
        TU_WAIT_UNTIL(wd_alive_driven(rt, f) == 0, 10.0, 1);
        blitz_mutex_deinit(&mutex);
        blitz_semaphore_deinit(&sem);
        CHECK_OK(blitz_chan_sender_release(ch));
        CHECK_OK(blitz_chan_receiver_release(ch));
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
static int withdraw_ops(tu_flavor f) {
    return withdraw_ops_on(f, BLITZ_BACKEND_AUTO);
}
TU_FLAVOR_TESTS(withdraw_ops)
BLITZ_TEST(withdraw_ops_uring) {
    return withdraw_ops_on(TU_MT2, BLITZ_BACKEND_IO_URING);
}
BLITZ_TEST(withdraw_ops_epoll) {
    return withdraw_ops_on(TU_CT, BLITZ_BACKEND_EPOLL);
}
BLITZ_TEST(withdraw_ops_poll) {
    return withdraw_ops_on(TU_MT2, BLITZ_BACKEND_POLL);
}

/* ---- blitz_timeout withdraws the op it limits ------------------------------------ */

typedef struct {
    BLITZ_CORO;
    blitz_mutex *mutex;
    blitz_chan *ch;
    blitz_timer timer;
    blitz_mutex_lock_op lock_op;
    blitz_chan_op chan_op;
    long value;
    int lock_expired, recv_expired, recv_result;
} to_state;

static blitz_poll to_poll(blitz_cx *cx, void *p) {
    to_state *s = (to_state *)p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, 20 * BLITZ_MSEC,
                                 blitz_mutex_lock(cx, &s->lock_op, s->mutex)));
    s->lock_expired = s->timer.expired;
    BLITZ_AWAIT(s, blitz_timeout(cx, &s->timer, 20 * BLITZ_MSEC,
                                 blitz_chan_recv(cx, &s->chan_op, s->ch, &s->value)));
    s->recv_expired = s->timer.expired;
    s->recv_result = s->chan_op.result;
    BLITZ_END(s);
}

static int timeout_withdraws(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    blitz_mutex mutex;
    CHECK_OK(blitz_mutex_init(&mutex));
    CHECK_OK(blitz_mutex_try_lock(&mutex));
    blitz_chan *ch;
    CHECK_OK(blitz_chan_new(&ch, sizeof(long), 2));
    to_state st;
    memset(&st, 0, sizeof st);
    st.mutex = &mutex;
    st.ch = ch;
    CHECK_OK(blitz_runtime_run(rt, to_poll, &st, sizeof st));
    CHECK_EQ(st.lock_expired, 1);
    CHECK_EQ(st.recv_expired, 1);
    CHECK_EQ(st.recv_result, BLITZ_ECANCELED);
    /* Withdrawn: the unlock does not go to the timed-out waiter. */
    blitz_mutex_unlock(&mutex);
    CHECK_OK(blitz_mutex_try_lock(&mutex));
    blitz_mutex_unlock(&mutex);
    /* A worker that fired the timer may still be dropping its waker. */
    TU_WAIT_UNTIL(wd_alive(rt) == 0, 10.0, 1);
    blitz_mutex_deinit(&mutex);
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_OK(blitz_chan_receiver_release(ch));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(timeout_withdraws)

/* ---- spawn deadlines ------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    blitz_chan *ch;
    blitz_chan_op op;
    int64_t sleep_ns;
    long value;
    int finished;
} dl_state;

static blitz_poll dl_poll(blitz_cx *cx, void *p) {
    dl_state *s = (dl_state *)p;
    BLITZ_BEGIN(s);
    if (s->ch)
        BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->op, s->ch, &s->value));
    else if (s->sleep_ns)
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, s->sleep_ns));
    s->finished = 1;
    BLITZ_END(s);
}

static blitz_task *dl_spawn(blitz_runtime *rt, dl_state *st, int64_t timeout_ns) {
    blitz_spawn_opts o = {.poll = dl_poll, .state = st, .size = sizeof *st};
    o.timeout_ns = timeout_ns;
    blitz_task *t = NULL;
    CHECK_OK(blitz_spawn_ex(rt, &o, &t));
    return t;
}

static int spawn_timeout(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    dl_state st;
    memset(&st, 0, sizeof st);

    /* Too slow: cancelled at its deadline, withdrawn from its sleep. */
    st.sleep_ns = 3600 * BLITZ_SEC;
    uint64_t t0 = blitz_time_now(rt); /* before: the paused clock may jump at once */
    blitz_task *t = dl_spawn(rt, &st, 50 * BLITZ_MSEC);
    CHECK_EQ(blitz_join_blocking(t), BLITZ_ETIMEDOUT);
    CHECK_EQ(blitz_task_status(t), BLITZ_ETIMEDOUT);
    CHECK_EQ(((dl_state *)blitz_task_state(t))->finished, 0);
    uint64_t waited = blitz_time_now(rt) - t0;
    CHECK(waited >= (uint64_t)(50 * BLITZ_MSEC) && waited < (uint64_t)(3600 * BLITZ_SEC));
    CHECK_OK(blitz_task_release(&t));
    /* The timer thread drops its waker last. */
    TU_WAIT_UNTIL(wd_alive(rt) == 0, 10.0, 1);

    /* In time: completes, and its deadline no longer holds the block. The
     * deadline is armed before the task is queued; an idle runtime must
     * not jump its paused clock to it meanwhile. */
    st.sleep_ns = 10 * BLITZ_MSEC;
    for (int i = 0; i < 3; i++) {
        /* The spawner pauses there (the kicked worker parks again). */
        atomic_store(&test_fault_delay_ms[TEST_FAULT_spawn_armed], i ? 20 : 0);
        t = dl_spawn(rt, &st, 3600 * BLITZ_SEC);
        atomic_store(&test_fault_delay_ms[TEST_FAULT_spawn_armed], 0);
        CHECK_EQ(blitz_join_blocking(t), BLITZ_OK);
        CHECK_EQ(((dl_state *)blitz_task_state(t))->finished, 1);
        CHECK_OK(blitz_task_release(&t));
        TU_WAIT_UNTIL(wd_alive(rt) == 0, 10.0, 1);
    }

    /* Cancelled before its deadline: ECANCELED, not ETIMEDOUT. On a real
     * clock: a paused one jumps to the deadline as soon as all is idle. */
    blitz_runtime *real = tu_rt_paused(f, 0);
    st.sleep_ns = 3600 * BLITZ_SEC;
    t = dl_spawn(real, &st, 1800 * BLITZ_SEC);
    CHECK_OK(blitz_task_cancel(t));
    CHECK_EQ(blitz_join_blocking(t), BLITZ_ECANCELED);
    CHECK_OK(blitz_task_release(&t));
    TU_WAIT_UNTIL(wd_alive(real) == 0, 10.0, 1);
    CHECK_OK(blitz_runtime_free(real));

    /* Waiting on a channel: withdrawn at the deadline, so a value sent
     * afterwards stays in the channel. */
    blitz_chan *ch;
    CHECK_OK(blitz_chan_new(&ch, sizeof(long), 2));
    st.ch = ch;
    t = dl_spawn(rt, &st, 30 * BLITZ_MSEC);
    CHECK_EQ(blitz_join_blocking(t), BLITZ_ETIMEDOUT);
    CHECK_OK(blitz_task_release(&t));
    long v = 7, got = 0;
    CHECK_OK(blitz_chan_try_send(ch, &v));
    CHECK_OK(blitz_chan_try_recv(ch, &got));
    CHECK_EQ(got, 7);
    TU_WAIT_UNTIL(wd_alive(rt) == 0, 10.0, 1);

    /* Detached with a deadline: freed once it timed out. */
    st.ch = NULL;
    st.sleep_ns = 3600 * BLITZ_SEC;
    blitz_spawn_opts o = {.poll = dl_poll, .state = &st, .size = sizeof st};
    o.timeout_ns = 5 * BLITZ_MSEC;
    CHECK_OK(blitz_spawn_ex(rt, &o, NULL));
    st.sleep_ns = 100 * BLITZ_MSEC;
    t = dl_spawn(rt, &st, 0);
    CHECK_EQ(blitz_join_blocking(t), BLITZ_OK);
    CHECK_OK(blitz_task_release(&t));
    TU_WAIT_UNTIL(wd_alive(rt) == 0, 10.0, 1);

    o.timeout_ns = -1;
    CHECK_EQ(blitz_spawn_ex(rt, &o, &t), BLITZ_EINVAL);
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_OK(blitz_chan_receiver_release(ch));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(spawn_timeout)

/* ---- the combinators, intervals, readers and writers as ops ---------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_chan *ch;
    blitz_chan_op recv_op;
    blitz_timer distant;
    blitz_interval iv;
    blitz_op inner[2], outer[2];
    blitz_combo inner_combo, outer_combo;
    long value;
    int inner_winner, outer_error;
} nest_state;

static blitz_poll nest_poll(blitz_cx *cx, void *p) {
    nest_state *s = (nest_state *)p;
    BLITZ_BEGIN(s);
    CHECK_OK(blitz_interval_init(&s->iv, blitz_cx_now(cx), 10 * BLITZ_MSEC, BLITZ_MISSED_BURST));
    s->inner[0] = blitz_op_sleep_until(&s->distant, BLITZ_TIME_NEVER - 1);
    s->inner[1] = blitz_op_chan_recv(&s->recv_op, s->ch, &s->value);
    s->outer[0] = blitz_op_race(&s->inner_combo, s->inner, 2);
    s->outer[1] = blitz_op_interval_tick(&s->iv);
    BLITZ_AWAIT(s, blitz_join_all(cx, &s->outer_combo, s->outer, 2));
    s->inner_winner = s->inner_combo.winner;
    s->outer_error = s->outer_combo.error;
    BLITZ_END(s);
}

/* A race nested in a join-all: the receive wins the inner race (the far
 * timer is withdrawn), the interval ticks, the join-all finishes. */
static int op_nested(tu_flavor f) {
    blitz_runtime *rt = tu_rt_paused(f, 1);
    blitz_chan *ch;
    CHECK_OK(blitz_chan_new(&ch, sizeof(long), 2));
    long v = 99;
    CHECK_OK(blitz_chan_try_send(ch, &v));
    nest_state st;
    memset(&st, 0, sizeof st);
    st.ch = ch;
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, nest_poll, &st, sizeof st, &t));
    CHECK_EQ(blitz_join_blocking(t), BLITZ_OK);
    nest_state *done = (nest_state *)blitz_task_state(t);
    CHECK_EQ(done->inner_winner, 1);
    CHECK_EQ(done->value, 99);
    CHECK_EQ(done->outer_error, 0);
    CHECK(!blitz_timer_armed(&done->distant));
    CHECK_OK(blitz_task_release(&t));
    /* Too many ops: the nested op reports BLITZ_EINVAL, not a crash. */
    blitz_combo c;
    memset(&c, 0, sizeof c);
    blitz_op none[1];
    CHECK_OK(blitz_op_run_blocking(NULL, blitz_op_race(&c, none, BLITZ_COMBO_MAX + 5)));
    CHECK_EQ(c.error, BLITZ_EINVAL);
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_OK(blitz_chan_receiver_release(ch));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(op_nested)

/* Reader and writer ops over a socket pair, from a plain thread. */
BLITZ_TEST(op_reader_writer) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    blitz_socket *a, *b;
    tu_tcp_pair(rt, &a, &b);
    blitz_stream sa, sb;
    CHECK_OK(blitz_stream_socket(&sa, a, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_socket(&sb, b, BLITZ_STREAM_OWN));
    blitz_writer w;
    blitz_reader r;
    CHECK_OK(blitz_writer_init(&w, &sa, NULL, 0));
    CHECK_OK(blitz_reader_init(&r, &sb, NULL, 0));
    const char msg[] = "alpha;beta;";
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_writer_write(&w, msg, sizeof msg - 1)));
    CHECK_EQ(w.result, (int64_t)(sizeof msg - 1));
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_writer_close(&w)));
    CHECK_EQ(w.result, 0);
    char buf[32];
    memset(buf, 0, sizeof buf);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_reader_read_until(&r, ';', buf, sizeof buf)));
    CHECK_EQ(r.result, 6);
    CHECK_EQ(memcmp(buf, "alpha;", 6), 0);
    memset(buf, 0, sizeof buf);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_reader_read(&r, buf, sizeof buf)));
    CHECK_EQ(r.result, 5);
    CHECK_EQ(memcmp(buf, "beta;", 5), 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_reader_read(&r, buf, sizeof buf)));
    CHECK_EQ(r.result, 0); /* the writer closed its side */
    blitz_reader_deinit(&r);
    blitz_writer_deinit(&w);
    blitz_stream_close(&sa);
    blitz_stream_close(&sb);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
