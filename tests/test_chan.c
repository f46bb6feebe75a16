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
    CHECK_OK(blitz_task_wait(*t));
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
        CHECK_OK(blitz_task_wait(t));
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
    s->cancel_rc = blitz_chan_op_cancel(&s->op);
    CHECK_EQ(s->op.result, s->cancel_rc);
    /* Nothing is pending any more; the result stays. */
    CHECK_EQ(blitz_chan_op_cancel(&s->op), BLITZ_ECANCELED);
    CHECK_EQ(s->op.result, s->cancel_rc);
    return BLITZ_READY;
}

static atomic_int ch_hook_rc;
static void ch_cancel_hook(void *p) {
    ch_cancel_after *s = p;
    atomic_store(&ch_hook_rc, blitz_chan_op_cancel(&s->op));
}

static int chan_cancel_keeps(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    blitz_chan *ch;
    CHECK_OK(blitz_chan_new(&ch, 8, 1));
    atomic_int pending;
    /* A receive that was handed a message before its cancel keeps it. */
    {
        atomic_store(&pending, 0);
        ch_cancel_after st = ch_cancel_after_make(ch, 0, 0, &pending);
        blitz_task *t;
        CHECK_OK(blitz_spawn(rt, ch_cancel_after_poll, &st, sizeof st, &t));
        if (f.flavor == BLITZ_CURRENT_THREAD)
            tt_drive_ct(rt);
        TU_WAIT_GE(&pending, 1, 5);
        uint64_t v = 42;
        CHECK_OK(blitz_chan_try_send(ch, &v)); /* handed straight to the op */
        CHECK_OK(blitz_task_wait(t));
        ch_cancel_after *fin = blitz_task_state(t);
        CHECK_EQ(fin->cancel_rc, BLITZ_OK);
        CHECK_EQ(fin->v, 42);
        CHECK_OK(blitz_task_release(&t));
        CHECK_EQ(blitz_chan_try_recv(ch, &v), BLITZ_EEMPTY);
    }
    /* A send whose value was taken before its cancel reports success. */
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
        CHECK_OK(blitz_chan_try_recv(ch, &v)); /* frees the slot: 77 goes in */
        CHECK_EQ(v, 1);
        CHECK_OK(blitz_task_wait(t));
        CHECK_EQ(((ch_cancel_after *)blitz_task_state(t))->cancel_rc, BLITZ_OK);
        CHECK_OK(blitz_task_release(&t));
        CHECK_OK(blitz_chan_try_recv(ch, &v));
        CHECK_EQ(v, 77);
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
        CHECK_EQ(blitz_task_wait(t), BLITZ_ECANCELED);
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
TU_FLAVOR_TESTS(chan_cancel_keeps)

/* Consumers cancelled at random while a thread sends: a consumer's cancel
 * hook keeps a message that was already handed to it; nothing is lost or
 * delivered twice. */
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
    int r = blitz_chan_op_cancel(&s->op);
    if (r == BLITZ_OK)
        ch_ledger_note(s->l, &s->msg);
    else
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
                int r = blitz_task_wait(ts[i]);
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
            blitz_task_wait(ts[i]);
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
