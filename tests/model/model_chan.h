/* Stand-ins around the lock-free channels (src/chan/broadcast.c, watch.c):
 * their handle and value words are raw bytes, as from the allocator, and
 * every atomic field in them is bound to a Relacy atomic of a
 * model_chan_mem, so the constructors' memsets touch no model state. The
 * receivers' lock is a Relacy mutex, and the reference count helpers of
 * mpmc.c (not the protocol checked here) are plain. */
#ifndef BLITZ_MODEL_CHAN_H
#define BLITZ_MODEL_CHAN_H
#include "model.h"
#define BLITZ_STATIC 1
#include "api/blitz_api.h"
#include "model_waker.h"

#define BLITZ__CORE_H
#define BLITZ__MAGIC_MEMBER
#define BLITZ__MAGIC_CHECK(p, m, msg) ((void)0)
#define BLITZ__MAGIC_SET(p, m)        ((void)0)
#define BLITZ_CACHE_LINE              64

enum { MODEL_CHAN_WORDS = 8 };

/* The Relacy side of one channel: the handle's atomics, its words and its
 * receivers' lock. */
struct model_chan_mem {
    blitz__atomic_u64 head_word, refs;
    blitz__atomic_u32 closed, waiting;
    blitz__atomic_u64 words[MODEL_CHAN_WORDS];
    rl::mutex lock;
    alignas(64) unsigned char handle[1024];
    /* The code steps through its words as blitz__atomic_u64, whose size
     * here is that of a Relacy atomic. */
    alignas(8) unsigned char bytes[MODEL_CHAN_WORDS * sizeof(blitz__atomic_u64)];

    /* What the constructor's allocation and memset give them. */
    void init() {
        model_unbind_all();
        blitz__u64_store(&head_word, 0, BLITZ__RELAXED);
        blitz__u64_store(&refs, 0, BLITZ__RELAXED);
        blitz__u32_store(&closed, 0, BLITZ__RELAXED);
        blitz__u32_store(&waiting, 0, BLITZ__RELAXED);
        for (int i = 0; i < MODEL_CHAN_WORDS; i++) {
            blitz__u64_store(&words[i], 0, BLITZ__RELAXED);
            model_bind(bytes + sizeof(blitz__atomic_u64) * i, &words[i]);
        }
    }
};
static model_chan_mem *model_cur_chan;

static void *blitz__alloc_aligned(size_t n, size_t align, void **raw) {
    (void)align;
    RL_ASSERT(n <= sizeof model_cur_chan->handle);
    *raw = model_cur_chan->handle;
    return *raw;
}
static void *model_chan_malloc(size_t n) {
    RL_ASSERT(n / 8 <= MODEL_CHAN_WORDS);
    return model_cur_chan->bytes;
}
#define BLITZ_MALLOC(n) model_chan_malloc(n)
#define BLITZ_FREE(p)   ((void)(p))
static void blitz__free(void *p) {
    (void)p;
}
static void blitz__free_handle(void *p) {
    (void)p;
}

typedef struct {
    rl::mutex *m;
} blitz__mutex;
static int blitz__mutex_init(blitz__mutex *m) {
    m->m = &model_cur_chan->lock;
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

#define BLITZ__CHAN_SENDERS   0
#define BLITZ__CHAN_RECEIVERS 32
static inline int blitz__chan_refs_add(blitz__atomic_u64 *refs, int shift) {
    blitz__u64_fetch_add(refs, (uint64_t)1 << shift, BLITZ__RELAXED);
    return BLITZ_OK;
}
static inline int blitz__chan_refs_release(blitz__atomic_u64 *refs, int shift,
                                           void (*close)(void *), void *ch, int *last) {
    uint64_t unit = (uint64_t)1 << shift;
    if (((blitz__u64_load(refs, BLITZ__RELAXED) >> shift) & 0xffffffffu) == 1)
        close(ch);
    *last = blitz__u64_fetch_sub(refs, unit, BLITZ__ACQ_REL) == unit;
    return BLITZ_OK;
}
static inline int blitz__chan_refs_drop(blitz__atomic_u64 *refs, int shift) {
    uint64_t unit = (uint64_t)1 << shift;
    return blitz__u64_fetch_sub(refs, unit, BLITZ__ACQ_REL) == unit;
}

/* A receiver polls `poll` as its task would: after each PENDING it waits
 * for a wake (a lost wake-up never returns). The yield marks the re-poll
 * after a wake it gave itself (a send half done) as a spin, so that Relacy
 * lets the sender's stores reach it rather than report a livelock. */
template <typename Poll> static void model_poll_until_ready(model_task *t, Poll poll) {
    blitz_cx cx = model_cx(t);
    int seen = 0;
    while (poll(&cx) == BLITZ_PENDING) {
        rl::yield(1, $);
        t->wait_wake(seen);
        seen = t->wakes.load(rl::mo_relaxed, $);
    }
}
#endif
