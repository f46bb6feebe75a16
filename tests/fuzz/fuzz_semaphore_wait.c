/* The semaphore's waiting side (src/sync/semaphore.c) against a pool and a
 * FIFO queue of partly filled requests. Simulated tasks try_acquire,
 * acquire (async, one poll at a time), cancel, release and close in any
 * order. After every
 * step the permits in the pool, each op's result, and which tasks were
 * woken must match the model: direct handoff in queue order, no barging,
 * a cancelled waiter's partial fill passed on, a closed-out waiter's given
 * back. */
#include "fuzz_input.h"

#define SM_TASKS 6

enum { SM_IDLE, SM_QUEUED, SM_DONE };

typedef struct {
    int state;
    uint64_t n, need; /* asked, still owed (QUEUED) */
    int result;       /* DONE */
    uint64_t seq;     /* queue order */
} sm_model_op;

typedef struct {
    uint64_t pool, seq;
    int closed;
    sm_model_op op[SM_TASKS];
} sm_model;

static int sm_head(const sm_model *m) {
    int best = -1;
    for (int i = 0; i < SM_TASKS; i++)
        if (m->op[i].state == SM_QUEUED && (best < 0 || m->op[i].seq < m->op[best].seq))
            best = i;
    return best;
}

static void sm_hand_out(sm_model *m, uint64_t n) {
    int h;
    while (n > 0 && (h = sm_head(m)) >= 0) {
        uint64_t take = n < m->op[h].need ? n : m->op[h].need;
        m->op[h].need -= take;
        n -= take;
        if (m->op[h].need == 0) {
            m->op[h].state = SM_DONE;
            m->op[h].result = BLITZ_OK;
        }
    }
    m->pool += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    sm_model m;
    memset(&m, 0, sizeof m);
    m.pool = fz_u8(&in) & 7;
    blitz_semaphore sem;
    FZ_CHECK(blitz_semaphore_init(&sem, (size_t)m.pool) == BLITZ_OK);
    fz_sim t[SM_TASKS];
    blitz_semaphore_acquire_op op[SM_TASKS];
    uint64_t held = 0; /* permits the tasks hold (released only by op 4) */
    for (int i = 0; i < SM_TASKS; i++) {
        fz_sim_init(&t[i]);
        memset(&op[i], 0, sizeof op[i]);
    }
    for (int steps = 0; in.left && steps < 4096; steps++) {
        uint8_t b = fz_u8(&in);
        int k = (b >> 3) % SM_TASKS;
        uint64_t n = 1 + (fz_u8(&in) & 7);
        int before[SM_TASKS];
        for (int i = 0; i < SM_TASKS; i++) {
            before[i] = m.op[i].state;
            t[i].wk.wakes = 0;
        }
        switch (b & 7) {
        case 0: { /* try_acquire */
            int rc = blitz_semaphore_try_acquire(&sem, (size_t)n);
            int want = m.closed ? BLITZ_ECLOSED : m.pool >= n ? BLITZ_OK : BLITZ_EAGAIN;
            FZ_CHECK(rc == want);
            if (rc == BLITZ_OK) {
                m.pool -= n;
                held += n;
            }
            break;
        }
        case 1:
        case 2: { /* poll task k's acquire (arming it when idle) */
            sm_model_op *o = &m.op[k];
            blitz_poll p = blitz_semaphore_acquire(&t[k].cx, &op[k], &sem, (size_t)n);
            if (o->state == SM_IDLE) {
                if (m.closed) {
                    o->state = SM_DONE;
                    o->result = BLITZ_ECLOSED;
                } else if (m.pool >= n) {
                    o->state = SM_DONE;
                    o->result = BLITZ_OK;
                    o->n = n;
                    m.pool -= n;
                } else {
                    o->state = SM_QUEUED;
                    o->n = n;
                    o->need = n - m.pool;
                    o->seq = m.seq++;
                    m.pool = 0;
                }
            }
            if (o->state == SM_QUEUED) {
                FZ_CHECK(p == BLITZ_PENDING);
            } else {
                FZ_CHECK(p == BLITZ_READY);
                FZ_CHECK(op[k].result == o->result);
                if (o->result == BLITZ_OK)
                    held += o->n;
                o->state = SM_IDLE;
            }
            break;
        }
        case 3: { /* cancel task k's acquire */
            sm_model_op *o = &m.op[k];
            blitz_semaphore_acquire_cancel(&t[k].cx, &op[k]);
            if (o->state == SM_QUEUED) {
                o->state = SM_IDLE;
                sm_hand_out(&m, o->n - o->need);
            } else if (o->state == SM_DONE) {
                o->state = SM_IDLE;
                if (o->result == BLITZ_OK)
                    sm_hand_out(&m, o->n);
            }
            break;
        }
        case 4: /* give back held permits */
            if (held >= n) {
                FZ_CHECK(blitz_semaphore_release(&sem, (size_t)n) == BLITZ_OK);
                held -= n;
                sm_hand_out(&m, n);
            }
            break;
        case 5: /* new permits */
            FZ_CHECK(blitz_semaphore_release(&sem, (size_t)n) == BLITZ_OK);
            sm_hand_out(&m, n);
            break;
        case 6:
            if (fz_u8(&in) < 32) {
                blitz_semaphore_close(&sem);
                for (int i = 0; i < SM_TASKS; i++) {
                    sm_model_op *o = &m.op[i];
                    if (o->state == SM_QUEUED) {
                        m.pool += o->n - o->need;
                        o->state = SM_DONE;
                        o->result = BLITZ_ECLOSED;
                    }
                }
                m.closed = 1;
            }
            break;
        default: /* argument errors change nothing */
            FZ_CHECK(blitz_semaphore_try_acquire(&sem, 0) == BLITZ_EINVAL);
            FZ_CHECK(blitz_semaphore_release(&sem, 0) == BLITZ_EINVAL);
            break;
        }
        FZ_CHECK(blitz_semaphore_available(&sem) == m.pool);
        FZ_CHECK(blitz_semaphore_is_closed(&sem) == m.closed);
        for (int i = 0; i < SM_TASKS; i++) {
            /* Woken exactly when its request was filled or closed out. */
            int finished = before[i] == SM_QUEUED && m.op[i].state == SM_DONE;
            FZ_CHECK(t[i].wk.wakes == finished);
            FZ_CHECK(t[i].wk.refs == (m.op[i].state == SM_QUEUED));
        }
    }
    /* Withdrawn, no op keeps a waker. */
    for (int i = 0; i < SM_TASKS; i++)
        blitz_semaphore_acquire_cancel(NULL, &op[i]);
    for (int i = 0; i < SM_TASKS; i++)
        FZ_CHECK(t[i].wk.refs == 0);
    blitz_semaphore_deinit(&sem);
    return 0;
}
