/* Tests of the chan area (tests/list_chan.h): the bounded MPMC channel
 * (exactly-once delivery, FIFO per producer, backpressure, close and
 * drain, values handed back, reference counts, cancel safety, blocking
 * forms), oneshot, broadcast (lag) and watch (versions, torn reads). */
#include "test_tasks.h"

/* A message of the checkers: who sent it and its number at that sender. */
typedef struct {
    uint32_t producer, seq;
} ch_msg;

#define CH_MAX_PRODUCERS 8

/* What every consumer reports into: per message, how often it was seen. */
typedef struct {
    atomic_int *seen; /* [producer * per_producer + seq] */
    uint32_t per_producer;
    atomic_long received;
    atomic_long handed_back;
} ch_ledger;

static void ch_ledger_init(ch_ledger *l, uint32_t producers, uint32_t per_producer) {
    l->seen = calloc((size_t)producers * per_producer, sizeof(atomic_int));
    CHECK_NOT_NULL(l->seen);
    l->per_producer = per_producer;
    atomic_store(&l->received, 0);
    atomic_store(&l->handed_back, 0);
}

static void ch_ledger_note(ch_ledger *l, const ch_msg *m) {
    CHECK_LT(m->seq, l->per_producer);
    atomic_fetch_add(&l->seen[(size_t)m->producer * l->per_producer + m->seq], 1);
    atomic_fetch_add(&l->received, 1);
}

/* Every message of every producer seen exactly once. */
static void ch_ledger_check_once(ch_ledger *l, uint32_t producers) {
    size_t i, n = (size_t)producers * l->per_producer;
    for (i = 0; i < n; i++)
        CHECK_BASE(atomic_load(&l->seen[i]) == 1,
                   "message %zu (producer %zu seq %zu) seen %d times", i, i / l->per_producer,
                   i % l->per_producer, atomic_load(&l->seen[i]));
    CHECK_EQ(tu_ldl(&l->received), (long)n);
    free(l->seen);
}

/* ---- try forms ------------------------------------------------------------------- */

BLITZ_TEST(chan_try_basics) {
    blitz_chan *ch = NULL;
    CHECK_EQ(blitz_chan_new(NULL, 8, 4), BLITZ_EINVAL);
    CHECK_EQ(blitz_chan_new(&ch, 0, 4), BLITZ_EINVAL);
    CHECK_NULL(ch);
    CHECK_EQ(blitz_chan_new(&ch, 8, 0), BLITZ_EINVAL);
    CHECK_EQ(blitz_chan_new(&ch, SIZE_MAX / 2, SIZE_MAX / 2), BLITZ_EINVAL);
    CHECK_OK(blitz_chan_new(&ch, sizeof(uint64_t), 3));
    CHECK_EQ(blitz_chan_capacity(ch), 3);
    CHECK_EQ(blitz_chan_elem_size(ch), 8);
    CHECK_EQ(blitz_chan_try_send(NULL, &ch), BLITZ_EINVAL);
    CHECK_EQ(blitz_chan_try_send(ch, NULL), BLITZ_EINVAL);
    uint64_t v = 0, round;
    CHECK_EQ(blitz_chan_try_recv(ch, &v), BLITZ_EEMPTY);
    /* Many laps around an odd capacity, the ring full each time. */
    for (round = 0; round < 50; round++) {
        uint64_t i;
        for (i = 0; i < 3; i++) {
            uint64_t x = round * 10 + i;
            CHECK_OK(blitz_chan_try_send(ch, &x));
        }
        CHECK_EQ(blitz_chan_len(ch), 3);
        CHECK_EQ(blitz_chan_try_send(ch, &v), BLITZ_EFULL);
        for (i = 0; i < 3; i++) {
            CHECK_OK(blitz_chan_try_recv(ch, &v));
            CHECK_EQ(v, round * 10 + i);
        }
        CHECK_EQ(blitz_chan_len(ch), 0);
        CHECK_EQ(blitz_chan_try_recv(ch, &v), BLITZ_EEMPTY);
    }
    /* Close: what was sent drains, then ECLOSED; sends fail at once. */
    v = 7;
    CHECK_OK(blitz_chan_try_send(ch, &v));
    v = 8;
    CHECK_OK(blitz_chan_try_send(ch, &v));
    CHECK_EQ(blitz_chan_is_closed(ch), 0);
    CHECK_OK(blitz_chan_close(ch));
    CHECK_OK(blitz_chan_close(ch));
    CHECK_EQ(blitz_chan_is_closed(ch), 1);
    CHECK_EQ(blitz_chan_try_send(ch, &v), BLITZ_ECLOSED);
    CHECK_OK(blitz_chan_try_recv(ch, &v));
    CHECK_EQ(v, 7);
    CHECK_OK(blitz_chan_try_recv(ch, &v));
    CHECK_EQ(v, 8);
    CHECK_EQ(blitz_chan_try_recv(ch, &v), BLITZ_ECLOSED);
    /* Ops with bad input finish at once with BLITZ_EINVAL; an op without
     * an object is refused by blitz_op_run_blocking. */
    blitz_chan_op op;
    memset(&op, 0, sizeof op);
    CHECK_OK(blitz_op_run_blocking(NULL, blitz_op_chan_recv(&op, NULL, &v)));
    CHECK_EQ(op.result, BLITZ_EINVAL);
    CHECK_OK(blitz_op_run_blocking(NULL, blitz_op_chan_send(&op, ch, NULL)));
    CHECK_EQ(op.result, BLITZ_EINVAL);
    CHECK_EQ(blitz_op_run_blocking(NULL, blitz_op_chan_send(NULL, ch, &v)), BLITZ_EINVAL);
    blitz_chan_cancel(NULL, NULL); /* does nothing */
    blitz_chan_cancel(NULL, &op);  /* nothing pending: the result stays */
    CHECK_EQ(op.result, BLITZ_EINVAL);
    CHECK_EQ(blitz_chan_send_blocking(NULL, &v), BLITZ_EINVAL);
    CHECK_EQ(blitz_chan_recv_blocking(ch, NULL), BLITZ_EINVAL);
    /* The blocking forms on a closed channel: drained, then closed. */
    CHECK_EQ(blitz_chan_send_blocking(ch, &v), BLITZ_ECLOSED);
    CHECK_EQ(blitz_chan_recv_blocking(ch, &v), BLITZ_ECLOSED);
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_OK(blitz_chan_receiver_release(ch));
    return 0;
}

BLITZ_TEST(chan_capacity_one_odd_size) {
    /* 13-byte values through a one-slot channel. */
    blitz_chan *ch;
    CHECK_OK(blitz_chan_new(&ch, 13, 1));
    unsigned char in[13], out[13];
    int i, k;
    for (i = 0; i < 1000; i++) {
        for (k = 0; k < 13; k++)
            in[k] = (unsigned char)(i * 31 + k);
        CHECK_OK(blitz_chan_try_send(ch, in));
        CHECK_EQ(blitz_chan_try_send(ch, in), BLITZ_EFULL);
        CHECK_EQ(blitz_chan_len(ch), 1);
        memset(out, 0, sizeof out);
        CHECK_OK(blitz_chan_try_recv(ch, out));
        CHECK_EQ(memcmp(in, out, 13), 0);
        CHECK_EQ(blitz_chan_try_recv(ch, out), BLITZ_EEMPTY);
    }
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_OK(blitz_chan_receiver_release(ch));
    return 0;
}

BLITZ_TEST(chan_refcounts) {
    blitz_chan *ch;
    uint64_t v = 1;
    /* Last sender gone: closed, buffered values still drain. */
    CHECK_OK(blitz_chan_new(&ch, 8, 4));
    CHECK_OK(blitz_chan_sender_clone(ch));
    CHECK_OK(blitz_chan_try_send(ch, &v));
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_EQ(blitz_chan_is_closed(ch), 0);
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_EQ(blitz_chan_is_closed(ch), 1);
    CHECK_EQ(blitz_chan_sender_release(ch), BLITZ_ERELEASED);
    CHECK_EQ(blitz_chan_sender_clone(ch), BLITZ_ECLOSED);
    v = 0;
    CHECK_OK(blitz_chan_try_recv(ch, &v));
    CHECK_EQ(v, 1);
    CHECK_EQ(blitz_chan_try_recv(ch, &v), BLITZ_ECLOSED);
    CHECK_OK(blitz_chan_receiver_release(ch)); /* frees */
    /* Last receiver gone: sends fail, the value stays the caller's. */
    CHECK_OK(blitz_chan_new(&ch, 8, 4));
    CHECK_OK(blitz_chan_receiver_clone(ch));
    CHECK_OK(blitz_chan_try_send(ch, &v));
    CHECK_OK(blitz_chan_receiver_release(ch));
    CHECK_OK(blitz_chan_receiver_release(ch));
    CHECK_EQ(blitz_chan_receiver_release(ch), BLITZ_ERELEASED);
    CHECK_EQ(blitz_chan_try_send(ch, &v), BLITZ_ECLOSED);
    /* What was buffered can still be taken out by a remaining holder. */
    CHECK_OK(blitz_chan_try_recv(ch, &v));
    CHECK_OK(blitz_chan_sender_release(ch)); /* frees */
    CHECK_EQ(blitz_chan_close(NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_chan_sender_release(NULL), BLITZ_EINVAL);
    return 0;
}

/* ---- producer / consumer tasks -------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_chan *ch;
    blitz_chan_op op;
    ch_msg msg;
    uint32_t id, n;
    int release; /* release the sender reference at the end */
    ch_ledger *l;
} ch_producer;

static blitz_poll ch_producer_poll(blitz_cx *cx, void *p) {
    ch_producer *s = p;
    BLITZ_BEGIN(s);
    for (s->msg.seq = 0; s->msg.seq < s->n; s->msg.seq++) {
        s->msg.producer = s->id;
        BLITZ_AWAIT(s, blitz_chan_send(cx, &s->op, s->ch, &s->msg));
        if (s->op.result == BLITZ_ECLOSED) {
            /* Handed back: the value is still ours, unchanged. */
            CHECK_EQ(s->msg.producer, s->id);
            if (s->l)
                atomic_fetch_add(&s->l->handed_back, 1);
            break;
        }
        CHECK_OK(s->op.result);
    }
    if (s->release)
        CHECK_OK(blitz_chan_sender_release(s->ch));
    BLITZ_END(s);
}

typedef struct {
    BLITZ_CORO;
    blitz_chan *ch;
    blitz_chan_op op;
    ch_msg msg;
    ch_ledger *l;
    int64_t last[CH_MAX_PRODUCERS];
    long got;
    int release;
} ch_consumer;

static void ch_consumer_take(ch_consumer *s) {
    CHECK_LT(s->msg.producer, CH_MAX_PRODUCERS);
    /* FIFO per producer: what one consumer gets from one producer is in
     * the order it was sent. */
    CHECK_GT((int64_t)s->msg.seq, s->last[s->msg.producer]);
    s->last[s->msg.producer] = s->msg.seq;
    ch_ledger_note(s->l, &s->msg);
    s->got++;
}

static blitz_poll ch_consumer_poll(blitz_cx *cx, void *p) {
    ch_consumer *s = p;
    BLITZ_BEGIN(s);
    for (;;) {
        BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->op, s->ch, &s->msg));
        if (s->op.result == BLITZ_ECLOSED)
            break;
        CHECK_OK(s->op.result);
        ch_consumer_take(s);
    }
    if (s->release)
        CHECK_OK(blitz_chan_receiver_release(s->ch));
    BLITZ_END(s);
}

static blitz_task *ch_spawn_consumer(blitz_runtime *rt, blitz_chan *ch, ch_ledger *l) {
    ch_consumer c;
    memset(&c, 0, sizeof c);
    c.ch = ch;
    c.l = l;
    c.release = 1;
    int i;
    for (i = 0; i < CH_MAX_PRODUCERS; i++)
        c.last[i] = -1;
    CHECK_OK(blitz_chan_receiver_clone(ch));
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, ch_consumer_poll, &c, sizeof c, &t));
    return t;
}

static blitz_task *ch_spawn_producer(blitz_runtime *rt, blitz_chan *ch, uint32_t id, uint32_t n,
                                     ch_ledger *l) {
    ch_producer pr;
    memset(&pr, 0, sizeof pr);
    pr.ch = ch;
    pr.id = id;
    pr.n = n;
    pr.release = 1;
    pr.l = l;
    CHECK_OK(blitz_chan_sender_clone(ch));
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, ch_producer_poll, &pr, sizeof pr, &t));
    return t;
}

static void ch_join(blitz_task **t) {
    CHECK_OK(blitz_join_blocking(*t));
    CHECK_OK(blitz_task_release(t));
}

/* Producers and consumers as tasks; the creator's references are dropped
 * at once, so the channel closes when the last producer finishes and is
 * freed by the last consumer. */
static void ch_run_mpmc(blitz_runtime *rt, uint32_t producers, uint32_t consumers, size_t cap,
                        uint32_t per_producer) {
    blitz_chan *ch;
    ch_ledger l;
    ch_ledger_init(&l, producers, per_producer);
    CHECK_OK(blitz_chan_new(&ch, sizeof(ch_msg), cap));
    blitz_task *ts[2 * CH_MAX_PRODUCERS];
    uint32_t i, n = 0;
    for (i = 0; i < consumers; i++)
        ts[n++] = ch_spawn_consumer(rt, ch, &l);
    for (i = 0; i < producers; i++)
        ts[n++] = ch_spawn_producer(rt, ch, i, per_producer, &l);
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_OK(blitz_chan_receiver_release(ch));
    for (i = 0; i < n; i++)
        ch_join(&ts[i]);
    CHECK_EQ(tu_ldl(&l.handed_back), 0);
    ch_ledger_check_once(&l, producers);
}

/* Upstream's lost-send case: 1 producer, 2 consumers, 20 messages through
 * a buffer of 5. Every sender that waited must really deliver. */
static int chan_backpressure_1p2c(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    int round;
    for (round = 0; round < 50; round++)
        ch_run_mpmc(rt, 1, 2, 5, 20);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(chan_backpressure_1p2c)

static int chan_mpmc_random(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    uint64_t seed = 0x1234567u + (uint64_t)f.workers;
    int round, rounds = (int)test_scaled(40);
    for (round = 0; round < rounds; round++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t producers = 1 + (uint32_t)((seed >> 33) % 4);
        uint32_t consumers = 1 + (uint32_t)((seed >> 40) % 4);
        size_t cap = 1 + (size_t)((seed >> 20) % 16);
        if (round % 4 == 3)
            cap = 64 + (size_t)((seed >> 10) % 1000);
        uint32_t per = (uint32_t)test_scaled(3000);
        ch_run_mpmc(rt, producers, consumers, cap, per);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(chan_mpmc_random)

/* ---- close hands values back ------------------------------------------------ */

/* Senders block on a full channel; close: each blocked sender returns
 * ECLOSED with its value still in its buffer; what got in drains. */
static int chan_close_hands_back(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    int round;
    for (round = 0; round < 20; round++) {
        blitz_chan *ch;
        ch_ledger l;
        const uint32_t producers = 4, per = 10;
        ch_ledger_init(&l, producers, per);
        CHECK_OK(blitz_chan_new(&ch, sizeof(ch_msg), 3));
        blitz_task *ts[4];
        uint32_t i;
        for (i = 0; i < producers; i++)
            ts[i] = ch_spawn_producer(rt, ch, i, per, &l);
        /* Take a few while they push, so some senders were woken by a
         * freed slot before the close. */
        ch_msg m;
        int taken = 0;
        while (taken < 5 + round % 7) {
            int r = blitz_chan_try_recv(ch, &m);
            if (r == BLITZ_OK) {
                ch_ledger_note(&l, &m);
                taken++;
            } else {
                CHECK_EQ(r, BLITZ_EEMPTY);
                if (f.flavor == BLITZ_CURRENT_THREAD)
                    tt_drive_ct(rt);
                else
                    sched_yield();
            }
        }
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        CHECK_OK(blitz_chan_close(ch));
        for (i = 0; i < producers; i++)
            ch_join(&ts[i]);
        int r;
        while ((r = blitz_chan_try_recv(ch, &m)) == BLITZ_OK)
            ch_ledger_note(&l, &m);
        CHECK_EQ(r, BLITZ_ECLOSED);
        /* Every producer stopped at its first ECLOSED: messages 0..k-1 of
         * it were received, message k handed back, none after. */
        for (i = 0; i < producers; i++) {
            uint32_t k;
            int hole = 0;
            for (k = 0; k < per; k++) {
                int seen = atomic_load(&l.seen[i * per + k]);
                CHECK_LE(seen, 1);
                if (!seen)
                    hole = 1;
                else
                    CHECK_EQ(hole, 0);
            }
        }
        long handed = tu_ldl(&l.handed_back), got = tu_ldl(&l.received);
        CHECK_LE(handed, (long)producers);
        CHECK_BASE(got + handed >= 5 || handed == 0, "got %ld handed %ld", got, handed);
        /* Nothing lost: a producer that did not finish handed one back. */
        long finished = 0;
        for (i = 0; i < producers; i++)
            finished += atomic_load(&l.seen[i * per + per - 1]);
        CHECK_EQ(finished + handed, (long)producers);
        free(l.seen);
        CHECK_OK(blitz_chan_sender_release(ch));
        CHECK_OK(blitz_chan_receiver_release(ch));
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(chan_close_hands_back)

/* ---- blocking forms: plain threads talking to tasks ------------------------------- */

typedef struct {
    blitz_chan *ch;
    uint32_t id, n;
    ch_ledger *l;
    int64_t last[CH_MAX_PRODUCERS];
} ch_thread_arg;

static void *ch_thread_producer(void *p) {
    ch_thread_arg *a = p;
    ch_msg m;
    for (m.seq = 0; m.seq < a->n; m.seq++) {
        m.producer = a->id;
        CHECK_OK(blitz_chan_send_blocking(a->ch, &m));
    }
    CHECK_OK(blitz_chan_sender_release(a->ch));
    return NULL;
}

static void *ch_thread_consumer(void *p) {
    ch_thread_arg *a = p;
    ch_msg m;
    int r;
    int i;
    for (i = 0; i < CH_MAX_PRODUCERS; i++)
        a->last[i] = -1;
    while ((r = blitz_chan_recv_blocking(a->ch, &m)) == BLITZ_OK) {
        CHECK_GT((int64_t)m.seq, a->last[m.producer]);
        a->last[m.producer] = m.seq;
        ch_ledger_note(a->l, &m);
    }
    CHECK_EQ(r, BLITZ_ECLOSED);
    CHECK_OK(blitz_chan_receiver_release(a->ch));
    return NULL;
}

typedef struct {
    BLITZ_CORO;
    blitz_chan *ch;
    uint64_t v;
    int rc;
} ch_blocking_in_task;

static blitz_poll ch_blocking_in_task_poll(blitz_cx *cx, void *p) {
    (void)cx;
    ch_blocking_in_task *s = p;
    s->rc = blitz_chan_send_blocking(s->ch, &s->v);
    return BLITZ_READY;
}

static int chan_blocking_threads(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    const uint32_t per = (uint32_t)test_scaled(20000);
    /* Threads produce, tasks consume. */
    {
        blitz_chan *ch;
        ch_ledger l;
        ch_ledger_init(&l, 2, per);
        CHECK_OK(blitz_chan_new(&ch, sizeof(ch_msg), 4));
        blitz_task *c[2];
        c[0] = ch_spawn_consumer(rt, ch, &l);
        c[1] = ch_spawn_consumer(rt, ch, &l);
        ch_thread_arg a[2] = {{ch, 0, per, &l, {0}}, {ch, 1, per, &l, {0}}};
        tu_thread th[2];
        CHECK_OK(blitz_chan_sender_clone(ch));
        CHECK_OK(blitz_chan_sender_clone(ch));
        tu_thread_start(&th[0], ch_thread_producer, &a[0]);
        tu_thread_start(&th[1], ch_thread_producer, &a[1]);
        CHECK_OK(blitz_chan_sender_release(ch));
        CHECK_OK(blitz_chan_receiver_release(ch));
        ch_join(&c[0]);
        ch_join(&c[1]);
        tu_thread_join(&th[0]);
        tu_thread_join(&th[1]);
        ch_ledger_check_once(&l, 2);
    }
    /* Tasks produce, threads consume. */
    {
        blitz_chan *ch;
        ch_ledger l;
        ch_ledger_init(&l, 2, per);
        CHECK_OK(blitz_chan_new(&ch, sizeof(ch_msg), 3));
        ch_thread_arg a[2] = {{ch, 0, 0, &l, {0}}, {ch, 0, 0, &l, {0}}};
        tu_thread th[2];
        CHECK_OK(blitz_chan_receiver_clone(ch));
        CHECK_OK(blitz_chan_receiver_clone(ch));
        tu_thread_start(&th[0], ch_thread_consumer, &a[0]);
        tu_thread_start(&th[1], ch_thread_consumer, &a[1]);
        blitz_task *p[2];
        p[0] = ch_spawn_producer(rt, ch, 0, per, &l);
        p[1] = ch_spawn_producer(rt, ch, 1, per, &l);
        CHECK_OK(blitz_chan_sender_release(ch));
        CHECK_OK(blitz_chan_receiver_release(ch));
        ch_join(&p[0]);
        ch_join(&p[1]);
        tu_thread_join(&th[0]);
        tu_thread_join(&th[1]);
        ch_ledger_check_once(&l, 2);
    }
    /* The blocking form refuses to run inside a task. */
    {
        blitz_chan *ch;
        CHECK_OK(blitz_chan_new(&ch, 8, 1));
        ch_blocking_in_task b;
        memset(&b, 0, sizeof b);
        b.ch = ch;
        blitz_task *t;
        CHECK_OK(blitz_spawn(rt, ch_blocking_in_task_poll, &b, sizeof b, &t));
        CHECK_OK(blitz_join_blocking(t));
        CHECK_EQ(((ch_blocking_in_task *)blitz_task_state(t))->rc, BLITZ_EDEADLK);
        CHECK_OK(blitz_task_release(&t));
        CHECK_EQ(blitz_chan_len(ch), 0);
        CHECK_OK(blitz_chan_sender_release(ch));
        CHECK_OK(blitz_chan_receiver_release(ch));
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(chan_blocking_threads)

/* ---- cancel safety ------------------------------------------------------------------ */

/* A task that polls one op once (it must go pending), then on its next
 * poll cancels it instead of polling again: what the cancel returns, and
 * the buffer, are left in the state. */
typedef struct {
    int step;
    int send;
    blitz_chan *ch;
    blitz_chan_op op;
    uint64_t v;
    int cancel_rc;
    atomic_int *pending;
} ch_cancel_after;

static ch_cancel_after ch_cancel_after_make(blitz_chan *ch, int send, uint64_t v,
                                            atomic_int *pending) {
    ch_cancel_after st;
    memset(&st, 0, sizeof st);
    st.ch = ch;
    st.send = send;
    st.v = v;
    st.pending = pending;
    return st;
}

static blitz_poll ch_cancel_after_poll(blitz_cx *cx, void *p) {
    ch_cancel_after *s = p;
    if (s->step == 0) {
        s->step = 1;
        blitz_poll r = s->send ? blitz_chan_send(cx, &s->op, s->ch, &s->v)
                               : blitz_chan_recv(cx, &s->op, s->ch, &s->v);
        CHECK_EQ(r, BLITZ_PENDING);
        atomic_store(s->pending, 1);
        return BLITZ_PENDING;
    }
    blitz_chan_cancel(cx, &s->op);
    s->cancel_rc = s->op.result;
    CHECK(s->cancel_rc != BLITZ_EAGAIN);
    /* Nothing is pending any more; the result stays. */
    blitz_chan_cancel(cx, &s->op);
    CHECK_EQ(s->op.result, s->cancel_rc);
    return BLITZ_READY;
}

static atomic_int ch_hook_rc;
static void ch_cancel_hook(void *p) {
    ch_cancel_after *s = p;
    blitz_chan_cancel(NULL, &s->op);
    atomic_store(&ch_hook_rc, s->op.result);
}

static int chan_cancel_moves_nothing(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    blitz_chan *ch;
    CHECK_OK(blitz_chan_new(&ch, 8, 1));
    atomic_int pending;
    /* A receive woken for a message and cancelled before it polls again
     * took nothing: the message stays for the next receiver. */
    {
        atomic_store(&pending, 0);
        ch_cancel_after st = ch_cancel_after_make(ch, 0, 0, &pending);
        blitz_task *t;
        CHECK_OK(blitz_spawn(rt, ch_cancel_after_poll, &st, sizeof st, &t));
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        TU_WAIT_GE(&pending, 1, 5);
        uint64_t v = 42;
        CHECK_OK(blitz_chan_try_send(ch, &v)); /* wakes the op */
        CHECK_OK(blitz_join_blocking(t));
        ch_cancel_after *fin = blitz_task_state(t);
        CHECK_EQ(fin->cancel_rc, BLITZ_ECANCELED);
        CHECK_EQ(fin->v, 0);
        CHECK_OK(blitz_task_release(&t));
        v = 0;
        CHECK_OK(blitz_chan_try_recv(ch, &v));
        CHECK_EQ(v, 42);
    }
    /* A send woken for a free slot and cancelled before it polls again
     * sent nothing. */
    {
        atomic_store(&pending, 0);
        uint64_t v = 1;
        CHECK_OK(blitz_chan_try_send(ch, &v)); /* full */
        ch_cancel_after st = ch_cancel_after_make(ch, 1, 77, &pending);
        blitz_task *t;
        CHECK_OK(blitz_spawn(rt, ch_cancel_after_poll, &st, sizeof st, &t));
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        TU_WAIT_GE(&pending, 1, 5);
        CHECK_OK(blitz_chan_try_recv(ch, &v)); /* frees the slot: wakes the op */
        CHECK_EQ(v, 1);
        CHECK_OK(blitz_join_blocking(t));
        CHECK_EQ(((ch_cancel_after *)blitz_task_state(t))->cancel_rc, BLITZ_ECANCELED);
        CHECK_OK(blitz_task_release(&t));
        CHECK_EQ(blitz_chan_try_recv(ch, &v), BLITZ_EEMPTY);
    }
    /* A task cancelled while its receive waits: its cancel hook withdraws
     * the op (ECANCELED), and the next message stays in the channel. */
    {
        atomic_store(&pending, 0);
        atomic_store(&ch_hook_rc, 99);
        ch_cancel_after st = ch_cancel_after_make(ch, 0, 0, &pending);
        blitz_spawn_opts o;
        memset(&o, 0, sizeof o);
        o.poll = ch_cancel_after_poll;
        o.state = &st;
        o.size = sizeof st;
        o.cancel = ch_cancel_hook;
        blitz_task *t;
        CHECK_OK(blitz_spawn_ex(rt, &o, &t));
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        TU_WAIT_GE(&pending, 1, 5);
        CHECK_OK(blitz_task_cancel(t));
        CHECK_EQ(blitz_join_blocking(t), BLITZ_ECANCELED);
        CHECK_OK(blitz_task_release(&t));
        CHECK_EQ(tu_ldi(&ch_hook_rc), BLITZ_ECANCELED);
        uint64_t v = 5;
        CHECK_OK(blitz_chan_try_send(ch, &v));
        v = 0;
        CHECK_OK(blitz_chan_try_recv(ch, &v));
        CHECK_EQ(v, 5);
    }
    CHECK_OK(blitz_chan_sender_release(ch));
    CHECK_OK(blitz_chan_receiver_release(ch));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(chan_cancel_moves_nothing)

/* Consumers cancelled at random while a thread sends: a cancelled receive
 * took nothing, so the ledger sees every message exactly once. */
typedef struct {
    BLITZ_CORO;
    blitz_chan *ch;
    blitz_chan_op op;
    ch_msg msg;
    ch_ledger *l;
} ch_cancellable;

static blitz_poll ch_cancellable_poll(blitz_cx *cx, void *p) {
    ch_cancellable *s = p;
    BLITZ_BEGIN(s);
    for (;;) {
        BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->op, s->ch, &s->msg));
        if (s->op.result == BLITZ_ECLOSED)
            break;
        CHECK_OK(s->op.result);
        ch_ledger_note(s->l, &s->msg);
    }
    BLITZ_END(s);
}

static void ch_cancellable_hook(void *p) {
    ch_cancellable *s = p;
    blitz_chan_cancel(NULL, &s->op);
    int r = s->op.result;
    /* ECLOSED: the task saw the end and its op stayed idle. */
    CHECK(r == BLITZ_ECANCELED || r == BLITZ_ECLOSED);
}

static int chan_cancel_race(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    const uint32_t per = (uint32_t)test_scaled(20000);
    blitz_chan *ch;
    ch_ledger l;
    ch_ledger_init(&l, 1, per);
    CHECK_OK(blitz_chan_new(&ch, sizeof(ch_msg), 2));
    ch_thread_arg a = {ch, 0, per, &l, {0}};
    tu_thread th;
    tu_thread_start(&th, ch_thread_producer, &a); /* takes our sender reference */
    uint64_t rng = 99;
    enum { LIVE = 4 };
    blitz_task *ts[LIVE] = {0};
    int i;
    while (tu_ldl(&l.received) < (long)per) {
        for (i = 0; i < LIVE; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            if (ts[i] && (rng >> 60) < 6) {
                blitz_task_cancel(ts[i]);
                int r = blitz_join_blocking(ts[i]);
                CHECK(r == BLITZ_OK || r == BLITZ_ECANCELED);
                CHECK_OK(blitz_task_release(&ts[i]));
            }
            if (!ts[i]) {
                ch_cancellable c;
                memset(&c, 0, sizeof c);
                c.ch = ch;
                c.l = &l;
                blitz_spawn_opts o;
                memset(&o, 0, sizeof o);
                o.poll = ch_cancellable_poll;
                o.state = &c;
                o.size = sizeof c;
                o.cancel = ch_cancellable_hook;
                CHECK_OK(blitz_spawn_ex(rt, &o, &ts[i]));
            }
        }
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        else if ((rng >> 58) == 0)
            sched_yield();
    }
    tu_thread_join(&th);
    for (i = 0; i < LIVE; i++) {
        if (ts[i]) {
            blitz_task_cancel(ts[i]);
            blitz_join_blocking(ts[i]);
            CHECK_OK(blitz_task_release(&ts[i]));
        }
    }
    ch_msg m;
    CHECK_EQ(blitz_chan_try_recv(ch, &m), BLITZ_ECLOSED);
    ch_ledger_check_once(&l, 1);
    CHECK_OK(blitz_chan_receiver_release(ch));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(chan_cancel_race)

/* A consumer that races a receive on each of two channels, and a notify
 * that a thread keeps poking, and reads only the winner's result, as the
 * manual says to: a losing receive may have been woken for a message, and
 * must leave it in its channel. Each channel carries its own numbered
 * messages from a plain thread; every one must be received exactly once. */
typedef struct {
    BLITZ_CORO;
    blitz_chan *ch[2];
    blitz_chan_op op[2];
    ch_msg msg[2];
    blitz_notify *poke;
    blitz_notify_wait_op poke_op;
    blitz_op ops[3];
    int which[3]; /* channel of ops[i], 2 for the notify */
    int open[2];
    size_t n;
    blitz_combo combo;
    ch_ledger *l;
    long losers_kept; /* a loser left holding a message: lost */
    long wins[3];
} ch_racer;

static blitz_poll ch_racer_poll(blitz_cx *cx, void *p) {
    ch_racer *s = p;
    BLITZ_BEGIN(s);
    while (s->open[0] || s->open[1]) {
        {
            int c;
            s->n = 0;
            for (c = 0; c < 2; c++) {
                if (!s->open[c])
                    continue;
                s->which[s->n] = c;
                s->ops[s->n++] = blitz_op_chan_recv(&s->op[c], s->ch[c], &s->msg[c]);
            }
            s->which[s->n] = 2;
            s->ops[s->n++] = blitz_op_notify_wait(&s->poke_op, s->poke);
            blitz_combo_reset(&s->combo);
        }
        BLITZ_AWAIT(s, blitz_race(cx, &s->combo, s->ops, s->n));
        {
            CHECK_EQ(s->combo.error, 0);
            CHECK(s->combo.winner >= 0);
            int w = s->which[s->combo.winner];
            size_t i;
            s->wins[w]++;
            for (i = 0; i < s->n; i++) {
                int c = s->which[i];
                if (c != w && c != 2 && s->op[c].result != BLITZ_ECANCELED)
                    s->losers_kept++;
            }
            if (w == 2) {
                /* poked: nothing to read */
            } else if (s->op[w].result == BLITZ_ECLOSED) {
                s->open[w] = 0;
            } else {
                CHECK_OK(s->op[w].result);
                CHECK_EQ(s->msg[w].producer, (uint32_t)w);
                ch_ledger_note(s->l, &s->msg[w]);
            }
        }
    }
    BLITZ_END(s);
}

typedef struct {
    blitz_notify *n;
    atomic_int stop;
} ch_poker_arg;

static void *ch_poker(void *p) {
    ch_poker_arg *a = p;
    while (!atomic_load(&a->stop)) {
        blitz_notify_one(a->n);
        sched_yield();
    }
    return NULL;
}

static int chan_race_loses_nothing(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    const uint32_t per = (uint32_t)test_scaled(100000);
    ch_ledger l;
    ch_ledger_init(&l, 2, per);
    blitz_notify poke;
    CHECK_OK(blitz_notify_init(&poke));
    ch_poker_arg pa;
    pa.n = &poke;
    atomic_store(&pa.stop, 0);
    tu_thread poker;
    ch_racer r;
    memset(&r, 0, sizeof r);
    r.l = &l;
    r.poke = &poke;
    ch_thread_arg a[2];
    tu_thread th[2];
    int c;
    for (c = 0; c < 2; c++) {
        /* Small: the senders often wait, so both receives are often woken
         * in the same round. */
        CHECK_OK(blitz_chan_new(&r.ch[c], sizeof(ch_msg), 2));
        r.open[c] = 1;
        memset(&a[c], 0, sizeof a[c]);
        a[c].ch = r.ch[c];
        a[c].id = (uint32_t)c;
        a[c].n = per;
        a[c].l = &l;
    }
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, ch_racer_poll, &r, sizeof r, &t));
    for (c = 0; c < 2; c++)
        tu_thread_start(&th[c], ch_thread_producer, &a[c]); /* takes the sender ref */
    tu_thread_start(&poker, ch_poker, &pa);
    CHECK_OK(blitz_join_blocking(t));
    for (c = 0; c < 2; c++)
        tu_thread_join(&th[c]);
    atomic_store(&pa.stop, 1);
    tu_thread_join(&poker);
    blitz_notify_deinit(&poke);
    ch_racer *fin = blitz_task_state(t);
    fprintf(stderr, "# wins: channel 0 %ld, channel 1 %ld, notify %ld\n", fin->wins[0],
            fin->wins[1], fin->wins[2]);
    CHECK_BASE(tu_ldl(&l.received) == 2L * (long)per && fin->losers_kept == 0,
               "received %ld of %ld; %ld losing receives kept a message", tu_ldl(&l.received),
               2L * per, fin->losers_kept);
    ch_ledger_check_once(&l, 2);
    CHECK_OK(blitz_task_release(&t));
    for (c = 0; c < 2; c++)
        CHECK_OK(blitz_chan_receiver_release(r.ch[c]));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(chan_race_loses_nothing)

/* ---- oneshot --------------------------------------------------------------------------- */

BLITZ_TEST(oneshot_basics) {
    blitz_oneshot os;
    uint64_t v = 0;
    blitz_oneshot_init(&os);
    CHECK_EQ(blitz_oneshot_try_recv(&os, &v), BLITZ_EEMPTY);
    CHECK_EQ(blitz_oneshot_done(&os), 0);
    CHECK_OK(blitz_oneshot_send(&os, 7));
    CHECK_EQ(blitz_oneshot_send(&os, 8), BLITZ_EINVAL);
    CHECK_OK(blitz_oneshot_try_recv(&os, &v));
    CHECK_EQ(v, 7);
    CHECK_EQ(blitz_oneshot_try_recv(&os, &v), BLITZ_ECLOSED);
    CHECK_EQ(blitz_oneshot_done(&os), 1);
    /* Sender gone without a value. */
    blitz_oneshot_init(&os);
    blitz_oneshot_close_tx(&os);
    blitz_oneshot_close_tx(&os);
    CHECK_EQ(blitz_oneshot_try_recv(&os, &v), BLITZ_ECLOSED);
    CHECK_EQ(blitz_oneshot_send(&os, 1), BLITZ_EINVAL);
    /* Receiver gone: the send reports it (the value stays the caller's). */
    blitz_oneshot_init(&os);
    CHECK_EQ(blitz_oneshot_rx_closed(&os), 0);
    blitz_oneshot_close_rx(&os);
    CHECK_EQ(blitz_oneshot_rx_closed(&os), 1);
    CHECK_EQ(blitz_oneshot_send(&os, 9), BLITZ_ECLOSED);
    CHECK_EQ(blitz_oneshot_done(&os), 1);
    /* A value sent before the receiver closed stays readable. */
    blitz_oneshot_init(&os);
    CHECK_OK(blitz_oneshot_send(&os, 11));
    blitz_oneshot_close_rx(&os);
    CHECK_OK(blitz_oneshot_try_recv(&os, &v));
    CHECK_EQ(v, 11);
    CHECK_EQ(blitz_oneshot_send(NULL, 1), BLITZ_EINVAL);
    CHECK_EQ(blitz_oneshot_try_recv(NULL, &v), BLITZ_EINVAL);
    CHECK_EQ(blitz_oneshot_try_recv(&os, NULL), BLITZ_EINVAL);
    return 0;
}

/* Receiver tasks await cells that a thread fills (or closes) in a random
 * order; every receiver gets its own value or ECLOSED, exactly. */
typedef struct {
    BLITZ_CORO;
    blitz_oneshot *cell;
    uint64_t v;
    int rc;
    atomic_long *done;
} os_receiver;

static blitz_poll os_receiver_poll(blitz_cx *cx, void *p) {
    os_receiver *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_oneshot_recv(cx, s->cell));
    s->rc = blitz_oneshot_try_recv(s->cell, &s->v);
    atomic_fetch_add(s->done, 1);
    BLITZ_END(s);
}

typedef struct {
    blitz_oneshot *cells;
    int n;
} os_sender_arg;

static void *os_sender_thread(void *p) {
    os_sender_arg *a = p;
    int i;
    for (i = 0; i < a->n; i++) {
        int k = (int)(((unsigned)i * 7919u) % (unsigned)a->n);
        if (k % 5 == 4)
            blitz_oneshot_close_tx(&a->cells[k]);
        else
            CHECK_OK(blitz_oneshot_send(&a->cells[k], (uint64_t)k * 3 + 1));
        if (i % 64 == 0)
            sched_yield();
    }
    return NULL;
}

static int oneshot_tasks(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    int rounds = (int)test_scaled(20), round;
    for (round = 0; round < rounds; round++) {
        enum { N = 499 };
        blitz_oneshot *cells = calloc(N, sizeof *cells);
        blitz_task **ts = calloc(N, sizeof *ts);
        CHECK_NOT_NULL(cells);
        CHECK_NOT_NULL(ts);
        atomic_long done;
        atomic_store(&done, 0);
        int i;
        for (i = 0; i < N; i++) {
            blitz_oneshot_init(&cells[i]);
            os_receiver r;
            memset(&r, 0, sizeof r);
            r.cell = &cells[i];
            r.done = &done;
            CHECK_OK(blitz_spawn(rt, os_receiver_poll, &r, sizeof r, &ts[i]));
        }
        os_sender_arg a = {cells, N};
        tu_thread th;
        tu_thread_start(&th, os_sender_thread, &a);
        for (i = 0; i < N; i++) {
            CHECK_OK(blitz_join_blocking(ts[i]));
            os_receiver *fin = blitz_task_state(ts[i]);
            if (i % 5 == 4) {
                CHECK_EQ(fin->rc, BLITZ_ECLOSED);
            } else {
                CHECK_OK(fin->rc);
                CHECK_EQ(fin->v, (uint64_t)i * 3 + 1);
            }
            CHECK_OK(blitz_task_release(&ts[i]));
        }
        tu_thread_join(&th);
        for (i = 0; i < N; i++)
            CHECK_EQ(blitz_oneshot_done(&cells[i]), 1);
        free(cells);
        free(ts);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(oneshot_tasks)

/* The receiver's waker registration races the send: a thread sends while
 * another thread waits with the blocking form, or closes its side. */
typedef struct {
    blitz_oneshot *cell;
    atomic_int *go;
    int mode; /* 0 blocking recv, 1 close_rx */
    uint64_t v;
    int rc;
} os_race_arg;

static void *os_race_rx(void *p) {
    os_race_arg *a = p;
    while (!atomic_load(a->go))
        tu_spin_pause();
    if (a->mode == 0) {
        a->rc = blitz_oneshot_recv_blocking(a->cell, &a->v);
    } else {
        blitz_oneshot_close_rx(a->cell);
        a->rc = BLITZ_OK;
    }
    return NULL;
}

BLITZ_TEST(oneshot_race) {
    int iters = (int)test_scaled(3000), i;
    for (i = 0; i < iters; i++) {
        blitz_oneshot cell;
        blitz_oneshot_init(&cell);
        atomic_int go;
        atomic_store(&go, 0);
        os_race_arg a = {&cell, &go, i % 3 == 2, 0, -1};
        tu_thread th;
        tu_thread_start(&th, os_race_rx, &a);
        atomic_store(&go, 1);
        int rc = blitz_oneshot_send(&cell, (uint64_t)i + 1);
        tu_thread_join(&th);
        if (a.mode == 0) {
            CHECK_OK(rc);
            CHECK_OK(a.rc);
            CHECK_EQ(a.v, (uint64_t)i + 1);
        } else {
            /* Either the send won (the value is readable) or the close did
             * (the send reports ECLOSED). */
            uint64_t v = 0;
            if (rc == BLITZ_OK) {
                CHECK_OK(blitz_oneshot_try_recv(&cell, &v));
                CHECK_EQ(v, (uint64_t)i + 1);
            } else {
                CHECK_EQ(rc, BLITZ_ECLOSED);
                CHECK_EQ(blitz_oneshot_try_recv(&cell, &v), BLITZ_ECLOSED);
            }
        }
        CHECK_EQ(blitz_oneshot_done(&cell), 1);
    }
    return 0;
}

/* ---- broadcast ------------------------------------------------------------------------- */

BLITZ_TEST(broadcast_basics) {
    blitz_broadcast *bc;
    CHECK_EQ(blitz_broadcast_new(&bc, 0, 4), BLITZ_EINVAL);
    CHECK_EQ(blitz_broadcast_new(&bc, 8, 0), BLITZ_EINVAL);
    CHECK_OK(blitz_broadcast_new(&bc, sizeof(uint64_t), 4));
    uint64_t v = 1, out = 0;
    /* Nobody listens: not kept. */
    CHECK_EQ(blitz_broadcast_send(bc, &v), BLITZ_ECLOSED);
    blitz_broadcast_rx a, b;
    CHECK_OK(blitz_broadcast_subscribe(bc, &a));
    CHECK_OK(blitz_broadcast_subscribe(bc, &b));
    CHECK_EQ(blitz_broadcast_receiver_count(bc), 2);
    CHECK_EQ(blitz_broadcast_try_recv(&a, &out), BLITZ_EEMPTY);
    for (v = 10; v < 13; v++)
        CHECK_EQ(blitz_broadcast_send(bc, &v), 2);
    for (v = 10; v < 13; v++) {
        CHECK_OK(blitz_broadcast_try_recv(&a, &out));
        CHECK_EQ(out, v);
    }
    CHECK_EQ(blitz_broadcast_try_recv(&a, &out), BLITZ_EEMPTY);
    /* b lags: 3 kept of 4, then 3 more sent: it missed 2. */
    for (v = 13; v < 16; v++)
        CHECK_EQ(blitz_broadcast_send(bc, &v), 2);
    CHECK_EQ(blitz_broadcast_try_recv(&b, &out), BLITZ_ELAGGED);
    CHECK_EQ(b.lagged, 2);
    for (v = 12; v < 16; v++) {
        CHECK_OK(blitz_broadcast_try_recv(&b, &out));
        CHECK_EQ(out, v);
    }
    /* A late subscriber starts at the next value. */
    blitz_broadcast_rx c;
    CHECK_OK(blitz_broadcast_subscribe(bc, &c));
    CHECK_EQ(blitz_broadcast_try_recv(&c, &out), BLITZ_EEMPTY);
    CHECK_OK(blitz_broadcast_unsubscribe(&c));
    CHECK_EQ(blitz_broadcast_unsubscribe(&c), BLITZ_ERELEASED);
    CHECK_EQ(blitz_broadcast_receiver_count(bc), 2);
    /* Close: what is kept is still read, then ECLOSED. */
    v = 99;
    CHECK_EQ(blitz_broadcast_send(bc, &v), 2);
    CHECK_OK(blitz_broadcast_sender_release(bc));
    CHECK_EQ(blitz_broadcast_send(bc, &v), BLITZ_ECLOSED);
    CHECK_OK(blitz_broadcast_try_recv(&a, &out));
    CHECK_EQ(out, 13);
    CHECK_OK(blitz_broadcast_unsubscribe(&a));
    int r, got = 0;
    while ((r = blitz_broadcast_try_recv(&b, &out)) == BLITZ_OK)
        got++;
    CHECK_EQ(got, 1);
    CHECK_EQ(out, 99);
    CHECK_EQ(r, BLITZ_ECLOSED);
    CHECK_OK(blitz_broadcast_unsubscribe(&b)); /* frees */
    return 0;
}

BLITZ_TEST(broadcast_lag_small) {
    /* Capacity 2: four sends make a receiver miss two, then it resumes at
     * the oldest kept. */
    blitz_broadcast *bc;
    CHECK_OK(blitz_broadcast_new(&bc, 3, 2));
    blitz_broadcast_rx rx;
    CHECK_OK(blitz_broadcast_subscribe(bc, &rx));
    unsigned char v[3], out[3];
    int i;
    for (i = 0; i < 4; i++) {
        memset(v, i, sizeof v);
        CHECK_EQ(blitz_broadcast_send(bc, v), 1);
    }
    CHECK_EQ(blitz_broadcast_try_recv(&rx, out), BLITZ_ELAGGED);
    CHECK_EQ(rx.lagged, 2);
    CHECK_OK(blitz_broadcast_try_recv(&rx, out));
    CHECK_EQ(out[0], 2);
    CHECK_EQ(out[2], 2);
    CHECK_OK(blitz_broadcast_try_recv(&rx, out));
    CHECK_EQ(out[1], 3);
    CHECK_EQ(blitz_broadcast_try_recv(&rx, out), BLITZ_EEMPTY);
    CHECK_OK(blitz_broadcast_unsubscribe(&rx));
    CHECK_OK(blitz_broadcast_sender_release(bc));
    return 0;
}

/* Receiver tasks await every value a thread sends; with a small capacity
 * they lag: each sees increasing values, and received + missed == sent. */
typedef struct {
    uint64_t seq, check[2]; /* check = seq * constants: a torn copy shows */
} bc_msg;

typedef struct {
    BLITZ_CORO;
    blitz_broadcast_rx rx;
    bc_msg m;
    uint64_t next; /* the value expected next */
    uint64_t got, missed;
} bc_receiver;

static blitz_poll bc_receiver_poll(blitz_cx *cx, void *p) {
    bc_receiver *s = p;
    BLITZ_BEGIN(s);
    for (;;) {
        BLITZ_AWAIT(s, blitz_broadcast_recv(cx, &s->rx, &s->m));
        if (s->rx.result == BLITZ_ECLOSED)
            break;
        if (s->rx.result == BLITZ_ELAGGED) {
            CHECK_GT(s->rx.lagged, 0);
            s->missed += s->rx.lagged;
            s->next += s->rx.lagged;
            continue;
        }
        CHECK_OK(s->rx.result);
        CHECK_EQ(s->m.check[0], s->m.seq * 3);
        CHECK_EQ(s->m.check[1], s->m.seq ^ 0x5555u);
        CHECK_EQ(s->m.seq, s->next);
        s->next++;
        s->got++;
    }
    CHECK_OK(blitz_broadcast_unsubscribe(&s->rx));
    BLITZ_END(s);
}

typedef struct {
    blitz_broadcast *bc;
    uint64_t n;
} bc_sender_arg;

static void *bc_sender_thread(void *p) {
    bc_sender_arg *a = p;
    bc_msg m;
    for (m.seq = 0; m.seq < a->n; m.seq++) {
        m.check[0] = m.seq * 3;
        m.check[1] = m.seq ^ 0x5555u;
        CHECK_GE(blitz_broadcast_send(a->bc, &m), 1);
        if (m.seq % 128 == 0)
            sched_yield();
    }
    CHECK_OK(blitz_broadcast_sender_release(a->bc));
    return NULL;
}

static int broadcast_tasks(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    size_t caps[2] = {4, 1024};
    int c;
    for (c = 0; c < 2; c++) {
        blitz_broadcast *bc;
        CHECK_OK(blitz_broadcast_new(&bc, sizeof(bc_msg), caps[c]));
        enum { R = 4 };
        blitz_task *ts[R];
        int i;
        for (i = 0; i < R; i++) {
            bc_receiver r;
            memset(&r, 0, sizeof r);
            CHECK_OK(blitz_broadcast_subscribe(bc, &r.rx));
            CHECK_OK(blitz_spawn(rt, bc_receiver_poll, &r, sizeof r, &ts[i]));
        }
        bc_sender_arg a = {bc, (uint64_t)test_scaled(50000)};
        tu_thread th;
        tu_thread_start(&th, bc_sender_thread, &a);
        for (i = 0; i < R; i++) {
            CHECK_OK(blitz_join_blocking(ts[i]));
            bc_receiver *fin = blitz_task_state(ts[i]);
            CHECK_EQ(fin->got + fin->missed, a.n);
            if (caps[c] == 1024 && f.flavor != BLITZ_CURRENT_THREAD)
                CHECK_GT(fin->got, 0);
            CHECK_OK(blitz_task_release(&ts[i]));
        }
        tu_thread_join(&th);
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(broadcast_tasks)

/* Plain threads read with try_recv while a thread sends into a tiny ring:
 * the seqlock never yields a torn value, and lag accounting adds up. */
typedef struct {
    blitz_broadcast_rx rx;
    uint64_t n;
} bc_reader_arg;

static void *bc_reader_thread(void *p) {
    bc_reader_arg *a = p;
    uint64_t next = 0, got = 0, missed = 0;
    bc_msg m;
    for (;;) {
        int r = blitz_broadcast_try_recv(&a->rx, &m);
        if (r == BLITZ_ECLOSED)
            break;
        if (r == BLITZ_EEMPTY) {
            tu_spin_pause();
            continue;
        }
        if (r == BLITZ_ELAGGED) {
            missed += a->rx.lagged;
            next += a->rx.lagged;
            continue;
        }
        CHECK_OK(r);
        CHECK_EQ(m.seq, next);
        CHECK_EQ(m.check[0], m.seq * 3);
        CHECK_EQ(m.check[1], m.seq ^ 0x5555u);
        next++;
        got++;
    }
    CHECK_EQ(got + missed, a->n);
    CHECK_OK(blitz_broadcast_unsubscribe(&a->rx));
    return NULL;
}

BLITZ_TEST(broadcast_torn_reads) {
    blitz_broadcast *bc;
    CHECK_OK(blitz_broadcast_new(&bc, sizeof(bc_msg), 2));
    bc_reader_arg r[2];
    tu_thread th[3];
    int i;
    uint64_t n = (uint64_t)test_scaled(50000);
    for (i = 0; i < 2; i++) {
        CHECK_OK(blitz_broadcast_subscribe(bc, &r[i].rx));
        r[i].n = n;
        tu_thread_start(&th[i], bc_reader_thread, &r[i]);
    }
    bc_sender_arg a = {bc, n};
    tu_thread_start(&th[2], bc_sender_thread, &a);
    for (i = 0; i < 3; i++)
        tu_thread_join(&th[i]);
    return 0;
}

/* ---- watch ------------------------------------------------------------------------------ */

BLITZ_TEST(watch_basics) {
    blitz_watch *w;
    uint64_t v = 5, out = 0;
    CHECK_EQ(blitz_watch_new(&w, 0, &v), BLITZ_EINVAL);
    CHECK_EQ(blitz_watch_new(&w, 8, NULL), BLITZ_EINVAL);
    CHECK_OK(blitz_watch_new(&w, sizeof v, &v));
    CHECK_EQ(blitz_watch_read(w, &out), 1);
    CHECK_EQ(out, 5);
    blitz_watch_rx rx;
    CHECK_OK(blitz_watch_subscribe(w, &rx));
    CHECK_EQ(rx.seen, 1);
    CHECK_EQ(blitz_watch_has_changed(&rx), 0);
    v = 6;
    CHECK_OK(blitz_watch_send(w, &v));
    v = 7;
    CHECK_OK(blitz_watch_send(w, &v));
    CHECK_EQ(blitz_watch_has_changed(&rx), 1);
    CHECK_EQ(blitz_watch_read_update(&rx, &out), 3);
    CHECK_EQ(out, 7);
    CHECK_EQ(blitz_watch_has_changed(&rx), 0);
    /* changed() through the blocking form: a newer version is there. */
    CHECK_OK(blitz_watch_send(w, &v));
    CHECK_OK(blitz_watch_changed_blocking(&rx));
    CHECK_EQ(rx.seen, 4);
    CHECK_OK(blitz_watch_sender_clone(w));
    CHECK_OK(blitz_watch_sender_release(w));
    CHECK_EQ(blitz_watch_has_changed(&rx), 0);
    CHECK_OK(blitz_watch_sender_release(w)); /* closes */
    CHECK_EQ(blitz_watch_has_changed(&rx), BLITZ_ECLOSED);
    CHECK_EQ(blitz_watch_changed_blocking(&rx), BLITZ_ECLOSED);
    CHECK_EQ(blitz_watch_send(w, &v), BLITZ_ECLOSED);
    /* The last value stays readable after close. */
    CHECK_EQ(blitz_watch_read(w, &out), 4);
    CHECK_EQ(out, 7);
    CHECK_OK(blitz_watch_unsubscribe(&rx)); /* frees */
    CHECK_EQ(blitz_watch_unsubscribe(&rx), BLITZ_ERELEASED);
    return 0;
}

/* Tasks wait in changed() while a thread sends; versions only go up, each
 * read is a whole value, and the last value is seen before the close. */
typedef struct {
    uint64_t a, b, c, d, e; /* all equal: a torn read shows */
} wt_val;

typedef struct {
    BLITZ_CORO;
    blitz_watch_rx rx;
    wt_val v;
    uint64_t last_version, last_a, wakeups;
} wt_receiver;

static void wt_check(const wt_val *v) {
    CHECK_EQ(v->b, v->a);
    CHECK_EQ(v->c, v->a);
    CHECK_EQ(v->d, v->a);
    CHECK_EQ(v->e, v->a);
}

static blitz_poll wt_receiver_poll(blitz_cx *cx, void *p) {
    wt_receiver *s = p;
    BLITZ_BEGIN(s);
    for (;;) {
        BLITZ_AWAIT(s, blitz_watch_changed(cx, &s->rx));
        if (s->rx.result == BLITZ_ECLOSED)
            break;
        CHECK_OK(s->rx.result);
        CHECK_GT(s->rx.seen, s->last_version);
        s->last_version = s->rx.seen;
        uint64_t ver = blitz_watch_read_update(&s->rx, &s->v);
        CHECK_GE(ver, s->last_version);
        wt_check(&s->v);
        CHECK_GE(s->v.a, s->last_a);
        s->last_a = s->v.a;
        s->wakeups++;
    }
    CHECK_OK(blitz_watch_unsubscribe(&s->rx));
    BLITZ_END(s);
}

typedef struct {
    blitz_watch *w;
    uint64_t n;
} wt_sender_arg;

static void *wt_sender_thread(void *p) {
    wt_sender_arg *a = p;
    uint64_t i;
    for (i = 1; i <= a->n; i++) {
        wt_val v = {i, i, i, i, i};
        CHECK_OK(blitz_watch_send(a->w, &v));
        if (i % 64 == 0)
            sched_yield();
    }
    CHECK_OK(blitz_watch_sender_release(a->w));
    return NULL;
}

static void *wt_reader_thread(void *p) {
    blitz_watch *w = p;
    uint64_t last = 0, lastv = 0;
    for (;;) {
        wt_val v;
        uint64_t ver = blitz_watch_read(w, &v);
        wt_check(&v);
        CHECK(ver >= last);
        CHECK(v.a >= lastv);
        last = ver;
        lastv = v.a;
        if (v.a == UINT64_MAX)
            break;
    }
    return NULL;
}

static int watch_tasks(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    wt_val init = {0, 0, 0, 0, 0};
    blitz_watch *w;
    CHECK_OK(blitz_watch_new(&w, sizeof init, &init));
    enum { R = 4 };
    blitz_task *ts[R];
    int i;
    for (i = 0; i < R; i++) {
        wt_receiver r;
        memset(&r, 0, sizeof r);
        CHECK_OK(blitz_watch_subscribe(w, &r.rx));
        r.last_version = r.rx.seen;
        CHECK_OK(blitz_spawn(rt, wt_receiver_poll, &r, sizeof r, &ts[i]));
    }
    wt_sender_arg a = {w, (uint64_t)test_scaled(50000)};
    tu_thread th;
    tu_thread_start(&th, wt_sender_thread, &a);
    for (i = 0; i < R; i++) {
        CHECK_OK(blitz_join_blocking(ts[i]));
        wt_receiver *fin = blitz_task_state(ts[i]);
        CHECK_EQ(fin->last_a, a.n); /* the last value is never missed */
        CHECK_GT(fin->wakeups, 0);
        CHECK_OK(blitz_task_release(&ts[i]));
    }
    tu_thread_join(&th);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(watch_tasks)

BLITZ_TEST(watch_torn_reads) {
    wt_val init = {0, 0, 0, 0, 0};
    blitz_watch *w;
    CHECK_OK(blitz_watch_new(&w, sizeof init, &init));
    tu_thread rd[2];
    int i;
    for (i = 0; i < 2; i++)
        tu_thread_start(&rd[i], wt_reader_thread, w);
    uint64_t n = (uint64_t)test_scaled(300000), k;
    for (k = 1; k <= n; k++) {
        wt_val v = {k, k, k, k, k};
        CHECK_OK(blitz_watch_send(w, &v));
    }
    wt_val last = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    CHECK_OK(blitz_watch_send(w, &last));
    for (i = 0; i < 2; i++)
        tu_thread_join(&rd[i]);
    CHECK_OK(blitz_watch_sender_release(w)); /* no receiver: frees */
    return 0;
}

/* ---- select over channel ops ------------------------------------------------------ */

/* A task selects over receives on two channels through the blitz_op
 * interface: each round polls both ops, takes every one that finished and
 * cancels the other, which takes nothing (a message it was woken for stays
 * in its channel). Two threads feed the channels; nothing may be swallowed
 * or seen twice. */
typedef struct {
    BLITZ_CORO;
    blitz_chan *ch[2];
    blitz_chan_op op[2];
    ch_msg msg[2];
    int closed[2];
    ch_ledger *l;
} sel_task;

static blitz_poll sel_poll(blitz_cx *cx, void *p) {
    sel_task *s = p;
    for (;;) {
        if (s->closed[0] && s->closed[1])
            return BLITZ_READY;
        int i, done[2] = {0, 0}, any = 0;
        for (i = 0; i < 2; i++) {
            if (s->closed[i])
                continue;
            blitz_op op = blitz_op_chan_recv(&s->op[i], s->ch[i], &s->msg[i]);
            if (op.poll(cx, op.arg) == BLITZ_READY) {
                done[i] = any = 1;
                if (s->op[i].result == BLITZ_ECLOSED)
                    s->closed[i] = 1;
                else
                    ch_ledger_note(s->l, &s->msg[i]);
            }
        }
        if (!any)
            return BLITZ_PENDING;
        /* A branch won: withdraw the one still pending. */
        for (i = 0; i < 2; i++) {
            if (s->closed[i] || done[i])
                continue;
            blitz_op op = blitz_op_chan_recv(&s->op[i], s->ch[i], &s->msg[i]);
            op.cancel(cx, op.arg);
            CHECK_EQ(s->op[i].result, BLITZ_ECANCELED);
        }
    }
}

typedef struct {
    blitz_chan *ch;
    uint32_t id, n;
} sel_feed_arg;

static void *sel_feed(void *p) {
    sel_feed_arg *a = p;
    ch_msg m;
    for (m.seq = 0; m.seq < a->n; m.seq++) {
        m.producer = a->id;
        CHECK_OK(blitz_chan_send_blocking(a->ch, &m));
        if (m.seq % 16 == 0)
            sched_yield();
    }
    CHECK_OK(blitz_chan_sender_release(a->ch));
    return NULL;
}

static int chan_select_loses_nothing(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    const uint32_t per = (uint32_t)test_scaled(20000);
    ch_ledger l;
    ch_ledger_init(&l, 2, per);
    sel_task st;
    memset(&st, 0, sizeof st);
    st.l = &l;
    int i;
    for (i = 0; i < 2; i++)
        CHECK_OK(blitz_chan_new(&st.ch[i], sizeof(ch_msg), 1 + (size_t)i * 3));
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, sel_poll, &st, sizeof st, &t));
    sel_feed_arg a[2] = {{st.ch[0], 0, per}, {st.ch[1], 1, per}};
    tu_thread th[2];
    for (i = 0; i < 2; i++)
        tu_thread_start(&th[i], sel_feed, &a[i]);
    CHECK_OK(blitz_join_blocking(t));
    for (i = 0; i < 2; i++)
        tu_thread_join(&th[i]);
    CHECK_OK(blitz_task_release(&t));
    ch_ledger_check_once(&l, 2);
    for (i = 0; i < 2; i++)
        CHECK_OK(blitz_chan_receiver_release(st.ch[i]));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(chan_select_loses_nothing)

/* ---- broadcast and watch waiters withdrawn by a task's cancel hook ----------------- */

typedef struct {
    BLITZ_CORO;
    blitz_broadcast_rx rx;
    blitz_watch_rx wrx;
    uint64_t v;
    atomic_int *waiting;
} bw_task;

static blitz_poll bw_poll(blitz_cx *cx, void *p) {
    bw_task *s = p;
    BLITZ_BEGIN(s);
    atomic_fetch_add(s->waiting, 1);
    BLITZ_AWAIT(s, blitz_broadcast_recv(cx, &s->rx, &s->v));
    BLITZ_AWAIT(s, blitz_watch_changed(cx, &s->wrx));
    BLITZ_END(s);
}

/* The receivers live in the task state, which is freed after the hook. */
static void bw_cancel(void *p) {
    bw_task *s = p;
    CHECK_OK(blitz_broadcast_unsubscribe(&s->rx));
    CHECK_OK(blitz_watch_unsubscribe(&s->wrx));
}

static int chan_cancel_hook_waiters(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    blitz_broadcast *bc;
    blitz_watch *w;
    uint64_t v = 0;
    CHECK_OK(blitz_broadcast_new(&bc, sizeof v, 8));
    CHECK_OK(blitz_watch_new(&w, sizeof v, &v));
    enum { N = 16 };
    blitz_task *ts[N];
    atomic_int waiting;
    atomic_store(&waiting, 0);
    int i;
    for (i = 0; i < N; i++) {
        bw_task st;
        memset(&st, 0, sizeof st);
        st.waiting = &waiting;
        CHECK_OK(blitz_broadcast_subscribe(bc, &st.rx));
        CHECK_OK(blitz_watch_subscribe(w, &st.wrx));
        blitz_spawn_opts o;
        memset(&o, 0, sizeof o);
        o.poll = bw_poll;
        o.state = &st;
        o.size = sizeof st;
        o.cancel = bw_cancel;
        CHECK_OK(blitz_spawn_ex(rt, &o, &ts[i]));
    }
    if (f.flavor == BLITZ_CURRENT_THREAD)
        tt_drive_ct(rt);
    TU_WAIT_GE(&waiting, N, 5);
    /* Each gets a value and moves on to wait in changed() (or is
     * cancelled before it does). */
    CHECK_EQ(blitz_broadcast_send(bc, &v), N);
    for (i = 0; i < N; i++) {
        CHECK_OK(blitz_task_cancel(ts[i]));
        CHECK_EQ(blitz_join_blocking(ts[i]), BLITZ_ECANCELED);
        CHECK_OK(blitz_task_release(&ts[i]));
    }
    CHECK_EQ(blitz_broadcast_receiver_count(bc), 0);
    /* Nothing of the freed tasks is left in the queues. */
    CHECK_EQ(blitz_broadcast_send(bc, &v), BLITZ_ECLOSED);
    CHECK_OK(blitz_watch_send(w, &v));
    CHECK_OK(blitz_broadcast_sender_release(bc));
    CHECK_OK(blitz_watch_sender_release(w));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(chan_cancel_hook_waiters)
