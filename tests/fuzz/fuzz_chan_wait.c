/* The bounded channel's waiting side (src/chan/mpmc.c) against a FIFO of
 * values. Simulated tasks send and receive (try_ and async forms, one poll
 * at a time), cancel, and the channel is closed, in any order. Every value
 * received must be the model's next one, every result one the model
 * allows, an op that starts waiting must have had no way to proceed, and
 * after settling (repolling every woken task until none is) no task may
 * still wait while it could proceed: no lost wakeup, no wake swallowed by
 * a cancel. */
#include "fuzz_input.h"

#define CH_TASKS 6
#define CH_CAP   8

typedef struct {
    uint64_t q[CH_CAP];
    size_t head, len, cap;
    int closed;
} ch_model;

typedef struct {
    fz_sim t;
    blitz_chan_op op;
    int pending, send;
    uint64_t value; /* to send, or received */
} ch_task;

/* The model's side of a send or receive that reported rc. */
static void ch_apply(ch_model *m, int send, int rc, uint64_t value) {
    if (send && rc == BLITZ_OK) {
        FZ_CHECK(!m->closed && m->len < m->cap);
        m->q[(m->head + m->len++) % CH_CAP] = value;
    } else if (send) {
        FZ_CHECK(rc == (m->closed ? BLITZ_ECLOSED : BLITZ_EFULL));
        FZ_CHECK(m->closed || m->len == m->cap);
    } else if (rc == BLITZ_OK) {
        FZ_CHECK(m->len > 0 && value == m->q[m->head]);
        m->head = (m->head + 1) % CH_CAP;
        m->len--;
    } else {
        FZ_CHECK(m->len == 0);
        FZ_CHECK(rc == (m->closed ? BLITZ_ECLOSED : BLITZ_EEMPTY));
    }
}

/* Whether an op of this kind could finish now. */
static int ch_could(const ch_model *m, int send) {
    return m->closed || (send ? m->len < m->cap : m->len > 0);
}

static void ch_poll(ch_model *m, blitz_chan *ch, ch_task *t) {
    /* A queued op not yet woken stays queued: a value or a slot that
     * turned up was offered to an op ahead of it. */
    int unwoken = t->pending && !t->t.wk.wakes;
    t->t.wk.wakes = 0;
    blitz_poll p = t->send ? blitz_chan_send(&t->t.cx, &t->op, ch, &t->value)
                           : blitz_chan_recv(&t->t.cx, &t->op, ch, &t->value);
    t->pending = p == BLITZ_PENDING;
    if (t->pending)
        FZ_CHECK(unwoken || !ch_could(m, t->send));
    else
        ch_apply(m, t->send, t->op.result, t->value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    ch_model m;
    memset(&m, 0, sizeof m);
    m.cap = 1 + fz_u8(&in) % 4;
    blitz_chan *ch = NULL;
    FZ_CHECK(blitz_chan_new(&ch, sizeof(uint64_t), m.cap) == BLITZ_OK);
    ch_task t[CH_TASKS];
    for (int i = 0; i < CH_TASKS; i++) {
        memset(&t[i], 0, sizeof t[i]);
        fz_sim_init(&t[i].t);
    }
    uint64_t next_value = 1;
    for (int steps = 0; in.left && steps < 4096; steps++) {
        uint8_t b = fz_u8(&in);
        ch_task *k = &t[(b >> 3) % CH_TASKS];
        switch (b & 7) {
        case 0: { /* try_send */
            uint64_t v = next_value++;
            ch_apply(&m, 1, blitz_chan_try_send(ch, &v), v);
            break;
        }
        case 1: { /* try_recv */
            uint64_t v = 0;
            ch_apply(&m, 0, blitz_chan_try_recv(ch, &v), v);
            break;
        }
        case 2: /* poll k, starting a send or a receive when idle */
        case 3:
            if (!k->pending) {
                k->send = (b & 7) == 2;
                k->value = k->send ? next_value++ : 0;
            }
            ch_poll(&m, ch, k);
            break;
        case 4: /* cancel k: a pending op, woken or not, moved nothing */
            blitz_chan_cancel(&k->t.cx, &k->op);
            if (k->pending)
                FZ_CHECK(k->op.result == BLITZ_ECANCELED);
            k->pending = 0;
            break;
        case 5:
            if (fz_u8(&in) < 32) {
                FZ_CHECK(blitz_chan_close(ch) == BLITZ_OK);
                m.closed = 1;
            }
            break;
        default: { /* settle: repoll the woken until none is */
            int progress = 1;
            for (int round = 0; progress && round < 64; round++) {
                progress = 0;
                for (int i = 0; i < CH_TASKS; i++) {
                    if (t[i].pending && t[i].t.wk.wakes) {
                        ch_poll(&m, ch, &t[i]);
                        progress = 1;
                    }
                }
            }
            FZ_CHECK(!progress);
            for (int i = 0; i < CH_TASKS; i++)
                FZ_CHECK(!t[i].pending || !ch_could(&m, t[i].send));
            break;
        }
        }
        FZ_CHECK(blitz_chan_len(ch) == m.len);
        FZ_CHECK(!!blitz_chan_is_closed(ch) == m.closed);
    }
    /* Withdrawn, no op keeps a clone of its task's waker. */
    for (int i = 0; i < CH_TASKS; i++) {
        blitz_chan_cancel(NULL, &t[i].op);
        FZ_CHECK(t[i].t.wk.refs == 0);
    }
    FZ_CHECK(blitz_chan_sender_release(ch) == BLITZ_OK);
    FZ_CHECK(blitz_chan_receiver_release(ch) == BLITZ_OK);
    return 0;
}
