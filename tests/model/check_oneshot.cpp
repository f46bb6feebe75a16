/* The oneshot channel (src/chan/oneshot.c): one value, one state word.
 * send_vs_recv: the receiver registers its waker while the sender sends.
 *   A pending receive is woken exactly once, then sees the value (and the
 *   sender's write of it happens before that read, whether the receiver
 *   waits for the wake or is polled for another reason); every waker
 *   reference is given back.
 * send_vs_close: the receiver registers, then gives up (cancel + close)
 *   while the sender sends: the waker is woken or dropped, never both or
 *   twice; the sender's result says whether the receiver was gone.
 * The cell's plain fields are checked slots, so the value and the waker
 * must be handed over through the state word's orders. */
#include "model.h"
#define BLITZ_STATIC  1
#define blitz_oneshot model_api_oneshot /* the cell is redefined below */
#include "api/blitz_api.h"
#undef blitz_oneshot
#include "model_waker.h"

#define BLITZ__CORE_H
typedef struct blitz_oneshot {
    blitz__atomic_u32 blitz__state;
    model_slot<uint64_t> blitz__value;
    model_slot<blitz_waker> blitz__waker;
} blitz_oneshot;

#include "chan/oneshot.c"

template <bool WaitWake> struct send_vs_recv : rl::test_suite<send_vs_recv<WaitWake>, 2> {
    blitz_oneshot os;
    model_task rx;
    int send_rc, pending;

    void before() {
        blitz__u32_store(&os.blitz__state, 0, BLITZ__RELAXED);
        os.blitz__waker = blitz_waker_noop();
        rx.init();
        pending = 0;
    }
    void thread(unsigned i) {
        if (i == 0) {
            send_rc = blitz_oneshot_send(&os, 42);
        } else {
            blitz_cx cx = model_cx(&rx);
            uint64_t v = 0;
            if (blitz_oneshot_recv(&cx, &os) == BLITZ_PENDING) {
                pending = 1;
                if (WaitWake) {
                    rx.wait_wake(0); /* a lost wake-up never returns */
                    RL_ASSERT(blitz_oneshot_recv(&cx, &os) == BLITZ_READY);
                } else {
                    /* Polled for another reason: the value alone must be
                     * published by the state word. */
                    while (blitz_oneshot_try_recv(&os, &v) != BLITZ_OK)
                        rl::yield(1, $);
                    RL_ASSERT(v == 42);
                    return;
                }
            }
            RL_ASSERT(blitz_oneshot_try_recv(&os, &v) == BLITZ_OK && v == 42);
        }
    }
    void after() {
        RL_ASSERT(send_rc == BLITZ_OK);
        RL_ASSERT(rx.wakes.load(rl::mo_relaxed, $) == pending);
        RL_ASSERT(rx.refs.load(rl::mo_relaxed, $) == 0);
        RL_ASSERT(rx.wakes.load(rl::mo_relaxed, $) <= 1);
        RL_ASSERT(blitz_oneshot_done(&os));
    }
};

struct send_vs_close : rl::test_suite<send_vs_close, 2> {
    blitz_oneshot os;
    model_task rx;
    int send_rc;

    void before() {
        blitz__u32_store(&os.blitz__state, 0, BLITZ__RELAXED);
        os.blitz__waker = blitz_waker_noop();
        rx.init();
    }
    void thread(unsigned i) {
        if (i == 0) {
            send_rc = blitz_oneshot_send(&os, 7);
        } else {
            blitz_cx cx = model_cx(&rx);
            (void)blitz_oneshot_recv(&cx, &os);
            blitz_oneshot_cancel(&cx, &os);
            blitz_oneshot_close_rx(&os);
        }
    }
    void after() {
        RL_ASSERT(send_rc == BLITZ_OK || send_rc == BLITZ_ECLOSED);
        RL_ASSERT(rx.refs.load(rl::mo_relaxed, $) == 0);
        RL_ASSERT(rx.wakes.load(rl::mo_relaxed, $) <= 1);
        RL_ASSERT(blitz_oneshot_rx_closed(&os));
    }
};

int main() {
    int rc = 0;
    rc |= model_run<send_vs_recv<true>>("oneshot send vs receive, woken", 3);
    rc |= model_run<send_vs_recv<false>>("oneshot send vs receive, polled", 3);
    rc |= model_run<send_vs_close>("oneshot send vs receiver close", 3);
    return rc;
}
