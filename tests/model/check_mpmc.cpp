/* The bounded channel's ring (src/chan/mpmc.c): a Vyukov ring of stamped
 * slots, here with capacity 2 so that both producers and consumers wrap.
 * producers_consumers: two senders (two values each, retrying while full)
 *   and a receiver (retrying while empty) share the ring: every value
 *   is received exactly once, and a value's bytes written by its sender
 *   happen before the receiver's read of them (the slot data are checked
 *   variables; the stamp alone must publish them).
 * full_empty: one sender fills the ring and sees it full, one receiver
 *   drains: the ring is never over- or under-filled, values come out in
 *   order, and a sender that saw "full" saw a ring of two values.
 * send_vs_close: a send races the close: a send that succeeded put a
 *   value the receiver drains before it sees ECLOSED, a send that failed
 *   left nothing; after the close nothing more gets in.
 * The ring is driven through the real try_send / try_recv / close (the
 * waiter paths are not entered: nobody waits). */
#include "model.h"
#define BLITZ_STATIC 1
#include "api/blitz_api.h"
#include "model_waker.h"

#define BLITZ__CORE_H
#define BLITZ__MAGIC_MEMBER
#define BLITZ__MAGIC_CHECK(p, m, msg) ((void)0)
#define BLITZ__MAGIC_SET(p, m)        ((void)0)
#define BLITZ_CACHE_LINE              64

enum { MODEL_CAP = 2, MODEL_STRIDE = 16 };

/* The channel's memory is raw bytes (as from the allocator): its atomic
 * fields and the slots' stamps are bound to the Relacy atomics here, the
 * slots' values are checked variables that the code's copies reach
 * through model_copy, and its lock is this Relacy mutex. */
struct model_ring {
    blitz__atomic_u64 tail, head, refs;
    blitz__atomic_u32 send_waiting, recv_waiting;
    rl::mutex lock;
    blitz__atomic_u64 stamp[MODEL_CAP];
    rl::var<uint64_t> data[MODEL_CAP];
    alignas(8) unsigned char bytes[MODEL_CAP * MODEL_STRIDE];
};
static model_ring *model_cur_ring;

static int model_data_index(const void *p) {
    for (int i = 0; i < MODEL_CAP; i++)
        if (p == model_cur_ring->bytes + i * MODEL_STRIDE + sizeof(uint64_t))
            return i;
    return -1;
}
static void *model_copy(void *dst, const void *src, size_t n) {
    RL_ASSERT(n == sizeof(uint64_t));
    int d = model_data_index(dst), s = model_data_index(src);
    if (d >= 0) {
        uint64_t v;
        std::memcpy(&v, src, n);
        model_cur_ring->data[d]($) = v;
    } else if (s >= 0) {
        uint64_t v = model_cur_ring->data[s]($);
        std::memcpy(dst, &v, n);
    } else {
        std::memcpy(dst, src, n);
    }
    return dst;
}
alignas(64) static unsigned char model_handle[1024];
static void *blitz__alloc_aligned(size_t n, size_t align, void **raw) {
    (void)align;
    RL_ASSERT(n <= sizeof model_handle);
    *raw = model_handle;
    return *raw;
}
typedef struct {
    rl::mutex *m;
} blitz__mutex;
static int blitz__mutex_init(blitz__mutex *m) {
    m->m = &model_cur_ring->lock;
    return 0;
}
static void blitz__mutex_destroy(blitz__mutex *m) {
    (void)m;
}
static void blitz__mutex_lock(blitz__mutex *m) {
    m->m->lock($);
}
static void blitz__mutex_unlock(blitz__mutex *m) {
    m->m->unlock($);
}
#define BLITZ_MALLOC(n) ((void)(n), (void *)model_cur_ring->bytes)
#define BLITZ_FREE(p)   ((void)(p))
static void blitz__free(void *p) {
    (void)p;
}
static void blitz__free_handle(void *p) {
    (void)p;
}

#define memcpy model_copy
#include "chan/mpmc.c"
#undef memcpy

/* A channel of 8-byte values and capacity 2 over `ring`. */
static blitz_chan *model_chan(model_ring *ring) {
    model_unbind_all();
    model_cur_ring = ring;
    blitz_chan *ch = NULL, *at = (blitz_chan *)(void *)model_handle;
    /* What the constructor's memset of the handle gives them. */
    blitz__u64_store(&ring->tail, 0, BLITZ__RELAXED);
    blitz__u64_store(&ring->head, 0, BLITZ__RELAXED);
    blitz__u32_store(&ring->send_waiting, 0, BLITZ__RELAXED);
    blitz__u32_store(&ring->recv_waiting, 0, BLITZ__RELAXED);
    model_bind(&at->tail, &ring->tail);
    model_bind(&at->head, &ring->head);
    model_bind(&at->refs, &ring->refs);
    model_bind(&at->send_waiting, &ring->send_waiting);
    model_bind(&at->recv_waiting, &ring->recv_waiting);
    for (int i = 0; i < MODEL_CAP; i++)
        model_bind(ring->bytes + i * MODEL_STRIDE, &ring->stamp[i]);
    RL_ASSERT(blitz_chan_new(&ch, sizeof(uint64_t), MODEL_CAP) == BLITZ_OK && ch == at);
    RL_ASSERT(ch->stride == MODEL_STRIDE);
    return ch;
}

static void model_send(blitz_chan *ch, uint64_t v) {
    while (blitz_chan_try_send(ch, &v) != BLITZ_OK)
        rl::yield(1, $);
}
static uint64_t model_recv(blitz_chan *ch) {
    uint64_t v = 0;
    while (blitz_chan_try_recv(ch, &v) != BLITZ_OK)
        rl::yield(1, $);
    return v;
}

struct producers_consumers : rl::test_suite<producers_consumers, 3> {
    model_ring ring;
    blitz_chan *ch;
    int seen[4];

    void before() {
        ch = model_chan(&ring);
        for (int i = 0; i < 4; i++)
            seen[i] = 0;
    }
    void thread(unsigned i) {
        if (i < 2) {
            model_send(ch, 2 * i + 1);
            model_send(ch, 2 * i + 2);
        } else {
            for (int k = 0; k < 4; k++) {
                uint64_t v = model_recv(ch);
                RL_ASSERT(v >= 1 && v <= 4);
                seen[v - 1]++;
            }
        }
    }
    void after() {
        for (int i = 0; i < 4; i++)
            RL_ASSERT(seen[i] == 1);
        int closed;
        RL_ASSERT(blitz__chan_count(ch, &closed) == 0 && !closed);
    }
};

struct full_empty : rl::test_suite<full_empty, 2> {
    model_ring ring;
    blitz_chan *ch;

    void before() {
        ch = model_chan(&ring);
    }
    void thread(unsigned i) {
        if (i == 0) {
            for (uint64_t v = 1; v <= 3;) {
                int r = blitz_chan_try_send(ch, &v);
                RL_ASSERT(r == BLITZ_OK || r == BLITZ_EFULL);
                if (r == BLITZ_OK)
                    v++;
                else
                    rl::yield(1, $);
            }
        } else {
            for (uint64_t want = 1; want <= 3;) {
                uint64_t v = 0;
                int r = blitz_chan_try_recv(ch, &v);
                RL_ASSERT(r == BLITZ_OK || r == BLITZ_EEMPTY);
                if (r == BLITZ_OK) {
                    RL_ASSERT(v == want); /* one producer: FIFO */
                    want++;
                } else {
                    rl::yield(1, $);
                }
            }
        }
    }
    void after() {
        uint64_t v;
        RL_ASSERT(blitz_chan_try_recv(ch, &v) == BLITZ_EEMPTY);
    }
};

struct send_vs_close : rl::test_suite<send_vs_close, 3> {
    model_ring ring;
    blitz_chan *ch;
    int sent[2], got;

    void before() {
        ch = model_chan(&ring);
        sent[0] = sent[1] = 0;
        got = 0;
    }
    void thread(unsigned i) {
        if (i < 2) {
            uint64_t v = 10 + i;
            int r = blitz_chan_try_send(ch, &v);
            RL_ASSERT(r == BLITZ_OK || r == BLITZ_ECLOSED);
            sent[i] = r == BLITZ_OK;
        } else {
            RL_ASSERT(blitz_chan_close(ch) == BLITZ_OK);
            uint64_t v = 99;
            RL_ASSERT(blitz_chan_try_send(ch, &v) == BLITZ_ECLOSED);
        }
    }
    void after() {
        uint64_t v;
        int r, n = 0;
        while ((r = blitz_chan_try_recv(ch, &v)) == BLITZ_OK) {
            RL_ASSERT(v == 10 || v == 11);
            RL_ASSERT(sent[v - 10]);
            n++;
        }
        RL_ASSERT(r == BLITZ_ECLOSED);
        RL_ASSERT(n == sent[0] + sent[1]);
    }
};

int main() {
    int rc = 0;
    rc |= model_run<producers_consumers>("mpmc ring two producers vs a consumer", 1);
    rc |= model_run<full_empty>("mpmc ring full and empty, FIFO", 2);
    rc |= model_run<send_vs_close>("mpmc ring send vs close", 2);
    return rc;
}
