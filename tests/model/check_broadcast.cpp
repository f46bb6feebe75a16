/* The broadcast channel (src/chan/broadcast.c): a ring of seqlocked slots,
 * capacity 2, values of two words each equal to the value's position + 1.
 * send_vs_try_recv: a sender sends three values (the third laps the ring)
 *   while a subscribed receiver calls try_recv three times: each value it
 *   gets is whole (not torn) and the one its position says, positions only
 *   move forward, and a lag counts exactly the values skipped.
 * recv_vs_send: a receiver waits in recv while a sender sends: it is woken
 *   (no lost wake-up) and gets the value; every waker reference is
 *   returned.
 * recv_vs_close: the same against a close: recv ends with ECLOSED. */
#include "model_chan.h"

#include "chan/broadcast.c"

struct model_value {
    uint64_t a, b;
};

struct bc_env {
    model_chan_mem mem;
    blitz_broadcast *bc;
    blitz_broadcast_rx rx;
    blitz__atomic_u32 rx_state;

    void init() {
        model_cur_chan = &mem;
        mem.init();
        blitz_broadcast *at = (blitz_broadcast *)(void *)mem.handle;
        model_bind(&at->tail, &mem.head_word);
        model_bind(&at->refs, &mem.refs);
        model_bind(&at->closed, &mem.closed);
        model_bind(&at->waiting, &mem.waiting);
        bc = NULL;
        RL_ASSERT(blitz_broadcast_new(&bc, sizeof(model_value), 2) == BLITZ_OK && bc == at);
        RL_ASSERT(bc->slot_words == 3 && bc->cap == 2);
        memset(&rx, 0, sizeof rx);
        blitz__u32_store(&rx_state, BLITZ__WAITER_IDLE, BLITZ__RELAXED);
        model_bind(&rx.blitz__w.blitz__state, &rx_state);
        RL_ASSERT(blitz_broadcast_subscribe(bc, &rx) == BLITZ_OK);
    }
    void send(uint64_t k) {
        model_value v = {k, k};
        RL_ASSERT(blitz_broadcast_send(bc, &v) == 1);
    }
};

struct send_vs_try_recv : rl::test_suite<send_vs_try_recv, 2> {
    bc_env e;

    void before() {
        e.init();
    }
    void thread(unsigned i) {
        if (i == 0) {
            for (uint64_t k = 1; k <= 3; k++)
                e.send(k);
        } else {
            for (int k = 0; k < 3; k++) {
                uint64_t pos = e.rx.blitz__pos;
                model_value v = {0, 0};
                int r = blitz_broadcast_try_recv(&e.rx, &v);
                if (r == BLITZ_OK) {
                    RL_ASSERT(v.a == v.b);     /* not torn */
                    RL_ASSERT(v.a == pos + 1); /* the position's own value */
                    RL_ASSERT(e.rx.blitz__pos == pos + 1);
                } else if (r == BLITZ_ELAGGED) {
                    RL_ASSERT(e.rx.blitz__pos > pos);
                    RL_ASSERT(e.rx.lagged == e.rx.blitz__pos - pos);
                } else {
                    RL_ASSERT(r == BLITZ_EEMPTY && e.rx.blitz__pos == pos);
                }
            }
        }
    }
};

template <bool Close> struct recv_vs : rl::test_suite<recv_vs<Close>, 2> {
    bc_env e;
    model_task t;

    void before() {
        e.init();
        t.init();
    }
    void thread(unsigned i) {
        if (i == 0) {
            if (Close)
                RL_ASSERT(blitz_broadcast_close(e.bc) == BLITZ_OK);
            else
                e.send(1);
        } else {
            model_value v = {0, 0};
            model_poll_until_ready(
                &t, [this, &v](blitz_cx *cx) { return blitz_broadcast_recv(cx, &e.rx, &v); });
            if (Close) {
                RL_ASSERT(e.rx.result == BLITZ_ECLOSED);
            } else {
                RL_ASSERT(e.rx.result == BLITZ_OK && v.a == 1 && v.b == 1);
            }
        }
    }
    void after() {
        RL_ASSERT(t.refs.load(rl::mo_relaxed, $) == 0);
        RL_ASSERT(blitz__u32_load(&e.mem.waiting, BLITZ__RELAXED) == 0);
    }
};

int main() {
    int rc = 0;
    rc |= model_run<send_vs_try_recv>("broadcast try_recv vs three sends", 3);
    rc |= model_run<recv_vs<false>>("broadcast recv vs send", 4);
    rc |= model_run<recv_vs<true>>("broadcast recv vs close", 4);
    return rc;
}
