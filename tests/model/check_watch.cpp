/* The watch channel (src/chan/watch.c, with broadcast.c's word copies and
 * waiter wake-up): a seqlock around one value, and changed() waiters.
 * read_vs_send: a reader reads while a sender sends twice; values are two
 *   words, each equal to its version: a read never returns a torn value,
 *   nor a version with another version's value, nor one older than a
 *   version it read before.
 * changed_vs_send: a subscribed receiver waits in changed() while a sender
 *   sends: it is woken (no lost wake-up), sees the new version and reads
 *   the new value; every waker reference is returned.
 * changed_vs_close: the same against a close: changed() ends with
 *   ECLOSED. */
#include "model_chan.h"

#include "chan/broadcast.c"
#include "chan/watch.c"

struct model_value {
    uint64_t a, b;
};

struct watch_env {
    model_chan_mem mem;
    blitz_watch *w;
    blitz_watch_rx rx;
    blitz__atomic_u32 rx_state;

    void init() {
        model_cur_chan = &mem;
        mem.init();
        blitz_watch *at = (blitz_watch *)(void *)mem.handle;
        model_bind(&at->seq, &mem.head_word);
        model_bind(&at->refs, &mem.refs);
        model_bind(&at->closed, &mem.closed);
        model_bind(&at->waiting, &mem.waiting);
        model_value v0 = {1, 1};
        w = NULL;
        RL_ASSERT(blitz_watch_new(&w, sizeof v0, &v0) == BLITZ_OK && w == at);
        memset(&rx, 0, sizeof rx);
        blitz__u32_store(&rx_state, BLITZ__WAITER_IDLE, BLITZ__RELAXED);
        model_bind(&rx.blitz__w.blitz__state, &rx_state);
        RL_ASSERT(blitz_watch_subscribe(w, &rx) == BLITZ_OK);
        RL_ASSERT(rx.seen == 1);
    }
};

struct read_vs_send : rl::test_suite<read_vs_send, 2> {
    watch_env e;

    void before() {
        e.init();
    }
    void thread(unsigned i) {
        if (i == 0) {
            for (uint64_t k = 2; k <= 3; k++) {
                model_value v = {k, k};
                RL_ASSERT(blitz_watch_send(e.w, &v) == BLITZ_OK);
            }
        } else {
            uint64_t last = 0;
            for (int k = 0; k < 2; k++) {
                model_value v = {0, 0};
                uint64_t ver = blitz_watch_read(e.w, &v);
                RL_ASSERT(v.a == v.b);  /* not torn */
                RL_ASSERT(v.a == ver);  /* the version's own value */
                RL_ASSERT(ver >= last); /* never older than before */
                last = ver;
            }
        }
    }
};

template <bool Close> struct changed_vs : rl::test_suite<changed_vs<Close>, 2> {
    watch_env e;
    model_task t;

    void before() {
        e.init();
        t.init();
    }
    void thread(unsigned i) {
        if (i == 0) {
            if (Close) {
                RL_ASSERT(blitz_watch_close(e.w) == BLITZ_OK);
            } else {
                model_value v = {2, 2};
                RL_ASSERT(blitz_watch_send(e.w, &v) == BLITZ_OK);
            }
        } else {
            model_poll_until_ready(&t,
                                   [this](blitz_cx *cx) { return blitz_watch_changed(cx, &e.rx); });
            if (Close) {
                RL_ASSERT(e.rx.result == BLITZ_ECLOSED);
            } else {
                RL_ASSERT(e.rx.result == BLITZ_OK && e.rx.seen == 2);
                model_value v = {0, 0};
                RL_ASSERT(blitz_watch_read(e.w, &v) == 2 && v.a == 2 && v.b == 2);
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
    rc |= model_run<read_vs_send>("watch read vs two sends", 3);
    rc |= model_run<changed_vs<false>>("watch changed vs send", 4);
    rc |= model_run<changed_vs<true>>("watch changed vs close", 4);
    return rc;
}
