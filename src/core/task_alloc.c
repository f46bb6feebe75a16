/* Task blocks: size-classed slabs in 64 KiB-aligned chunks.
 *
 * Why: a task is one block (header + state), spawned and freed at high rates
 * from every thread. Per-worker free lists make steady-state spawn free of
 * malloc and of locks; the chunk header at the 64 KiB boundary below a block
 * names the runtime, so the task header needs no runtime pointer; and the
 * runtime can walk every live block at shutdown (a free block's state word
 * is zero) instead of keeping an owned-task list in every task.
 *
 * Blocks are a multiple of 16 bytes and start at an address that is 8 mod
 * 16, so the state after the 56-byte header is 16-byte aligned, and an
 * idle task with at most 8 bytes of state costs 64 bytes. States too big
 * for the largest class get a chunk of their own. Caches: one per worker and
 * one for the current-thread driver (no locking: only their thread touches
 * them), and a shared one behind alloc_lock for every other thread. Free
 * blocks travel in batches of BLITZ__FREE_BATCH: a cache keeps an active
 * list and at most one full batch; a second full batch goes to the
 * runtime's spare batches, where a cache that runs dry takes one. Every
 * move is O(1) (no walking of cold blocks), and memory freed on one worker
 * is reused by the others.
 *
 * Chunks of a size class are allocated in groups (1, 2, then 4 at
 * a time) and live until a trim frees their whole group: one aligned
 * allocation per chunk costs the allocator a page of bookkeeping or more
 * each (the alignment slack it splits off and the headers it writes),
 * about a tenth of a chunk, where a group pays it once. A group's first chunk holds the
 * allocation and counts the group's chunks handed out; the others have no
 * `raw`.
 *
 * Trims give memory back after a burst: an owner thread going idle hands
 * its cache's blocks to the shared cache and, when the chunks grew by a
 * quarter since the last trim (or another trim ran since it last gave its
 * blocks back), frees every group all of whose chunks are retired and
 * have all their carved blocks in the shared cache and spare batches (the
 * group still being handed out: its chunks handed so far, and the rest
 * with it). Only those lists, under alloc_lock, are counted, never
 * another thread's private cache; a chunk is retired once its carver
 * moved on to another, so nobody carves a freed chunk. */
#include "core.h"

static const uint32_t blitz__class_size[BLITZ__NUM_CLASSES] = {
    64,  80,   96,   112,  128,  160,  192,  224,  256,  320,  384,  448,  512,  640,  768,
    896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240};

/* First block offset: past the chunk header, 8 mod 16. */
#define BLITZ__FIRST_BLOCK ((sizeof(blitz__chunk) + 8 + 15) / 16 * 16 - 8)
#define BLITZ__FREE_BATCH  64u

/* Join handle generations (BLITZ__TAG_HANDLES): a 32-bit word per block
 * that outlives the block's tasks, at the chunk's end for a size class
 * (one per block, last block first) and right after the block of a large
 * chunk. */
#if BLITZ__TAG_HANDLES
#define BLITZ__GEN_BYTES       sizeof(blitz__atomic_u32)
#define BLITZ__GEN_LARGE_BYTES 16u
#else
#define BLITZ__GEN_BYTES       0u
#define BLITZ__GEN_LARGE_BYTES 0u
#endif

/* A free block's header is unused: a batch's first block links to the next
 * batch through join_data. */
static inline blitz__task *blitz__batch_next(blitz__task *first) {
    return (blitz__task *)(uintptr_t)first->join_data;
}
static inline void blitz__batch_set_next(blitz__task *first, blitz__task *next) {
    first->join_data = next;
}

static inline blitz__chunk *blitz__chunk_of(const void *block) {
    return (blitz__chunk *)((uintptr_t)block & ~(uintptr_t)(BLITZ__CHUNK_SIZE - 1));
}

static inline blitz_runtime *blitz__task_runtime(const blitz__task *t) {
    return blitz__chunk_of(t)->rt;
}

/* Bytes of the block holding `t` (for the drop pointer at its end). */
static inline size_t blitz__block_size(const blitz__task *t) {
    return blitz__chunk_of(t)->block_size;
}

BLITZ_PRIVATE uint32_t blitz__size_class(size_t need) {
    for (uint32_t c = 0; c < BLITZ__NUM_CLASSES; c++)
        if (need <= blitz__class_size[c])
            return c;
    return BLITZ__CLASS_LARGE;
}

/* The cache and counters this thread may use without a lock for runtime
 * `rt` (a worker's, or the current-thread driver's); NULL for any other
 * thread, which uses the shared cache under alloc_lock and the shared
 * counters. One thread-local lookup serves both. */
static blitz__block_cache *blitz__local_owner(blitz_runtime *rt, blitz__worker_counters **k) {
    blitz__context *c = blitz__context_get();
    *k = NULL;
    if (!c || c->rt != rt)
        return NULL;
    *k = c->counters;
    return c->cache;
}

#define BLITZ__GROUP_LOG_MAX 2u

/* Adds a chunk of class `c` to the runtime's list. Caller holds nothing. */
static blitz__chunk *blitz__chunk_new(blitz_runtime *rt, uint32_t c) {
    void *raw = NULL;
    blitz__chunk *ch;
    blitz__mutex_lock(&rt->alloc_lock);
    if (rt->chunk_spare_left == 0) {
        uint32_t log =
            rt->chunk_groups < BLITZ__GROUP_LOG_MAX ? rt->chunk_groups : BLITZ__GROUP_LOG_MAX;
        char *g = (char *)blitz__alloc_aligned(BLITZ__CHUNK_SIZE << log, BLITZ__CHUNK_SIZE, &raw);
        if (!g) {
            blitz__mutex_unlock(&rt->alloc_lock);
            return NULL;
        }
        rt->chunk_groups++;
        rt->chunk_spare = g;
        rt->chunk_spare_left = 1u << log;
        rt->chunk_group = (blitz__chunk *)(void *)g;
        rt->chunk_group->group_n = 1u << log;
        rt->chunk_group->group_handed = 0;
    }
    rt->chunk_group->group_handed++;
    ch = (blitz__chunk *)(void *)rt->chunk_spare;
    rt->chunk_spare += BLITZ__CHUNK_SIZE;
    rt->chunk_spare_left--;
    /* Handed out but not on the list yet: a trim meanwhile must not take
     * its group for free (it judges the group's chunks by trim_ok). */
    ch->trim_ok = 0;
    blitz__mutex_unlock(&rt->alloc_lock);
    ch->rt = rt;
    ch->raw = raw; /* NULL but in the group's first chunk */
    ch->block_size = blitz__class_size[c];
    ch->class_index = c;
    ch->capacity =
        (uint32_t)((BLITZ__CHUNK_SIZE - BLITZ__FIRST_BLOCK) / (ch->block_size + BLITZ__GEN_BYTES));
    blitz__u32_store(&ch->carved, 0, BLITZ__RELAXED);
#if BLITZ__TAG_HANDLES
    memset((char *)ch + BLITZ__CHUNK_SIZE - ch->capacity * BLITZ__GEN_BYTES, 0,
           ch->capacity * BLITZ__GEN_BYTES);
#endif
    blitz__u32_store(&ch->retired, 0, BLITZ__RELAXED);
    ch->trim_free = 0;
    blitz__mutex_lock(&rt->alloc_lock);
    ch->next = rt->chunks;
    rt->chunks = ch;
    blitz__u32_store(&rt->chunks_held, blitz__u32_load(&rt->chunks_held, BLITZ__RELAXED) + 1,
                     BLITZ__RELAXED);
    blitz__mutex_unlock(&rt->alloc_lock);
    return ch;
}

/* The carver of `ch` moves on: a trim may free it from now on. Release:
 * the trim reads `carved` after this (acquire) and sees the final count. */
static void blitz__chunk_retire(blitz__chunk *ch) {
    if (ch)
        blitz__u32_store(&ch->retired, 1, BLITZ__RELEASE);
}

static inline blitz__task *blitz__chunk_block(blitz__chunk *ch, uint32_t i) {
    return (blitz__task *)((char *)ch + BLITZ__FIRST_BLOCK + (size_t)i * ch->block_size);
}

#if BLITZ__TAG_HANDLES
static blitz__atomic_u32 *blitz__block_gen(const blitz__task *t) {
    blitz__chunk *ch = blitz__chunk_of(t);
    if (ch->class_index == BLITZ__CLASS_LARGE)
        return (blitz__atomic_u32 *)(void *)((char *)t + ch->block_size);
    size_t i = ((size_t)((const char *)t - (const char *)ch) - BLITZ__FIRST_BLOCK) / ch->block_size;
    return (blitz__atomic_u32 *)(void *)((char *)ch + BLITZ__CHUNK_SIZE) - 1 - i;
}

#define BLITZ__TAG_SHIFT 48
#define BLITZ__TAG_OF(g) (((g)&0x7fffu) | 0x8000u)

/* The handle the program gets for `t`: tagged with the block's generation
 * (an address with no room for it goes unchecked). */
BLITZ_PRIVATE blitz_task *blitz__handle_out(blitz__task *t) {
    uintptr_t p = (uintptr_t)t;
    if (!t || p >> BLITZ__TAG_SHIFT)
        return t;
    uint32_t g = blitz__u32_load(blitz__block_gen(t), BLITZ__RELAXED);
    return (blitz_task *)(p | (uintptr_t)BLITZ__TAG_OF(g) << BLITZ__TAG_SHIFT);
}

/* The task of handle `h`; stops the program, naming `func`, when the
 * handle was released. The runtime's own untagged pointers pass as they
 * are. */
BLITZ_PRIVATE blitz__task *blitz__handle_in(const blitz_task *h, const char *func) {
    uintptr_t p = (uintptr_t)h;
    uint32_t tag = (uint32_t)(p >> BLITZ__TAG_SHIFT);
    if (!tag)
        return (blitz__task *)(uintptr_t)h;
    blitz__task *t = (blitz__task *)(p & (((uintptr_t)1 << BLITZ__TAG_SHIFT) - 1));
    if (BLITZ__TAG_OF(blitz__u32_load(blitz__block_gen(t), BLITZ__ACQUIRE)) != tag)
        blitz__handle_misuse(func, "join handle used after blitz_task_release");
    return t;
}

/* Makes every copy of `h` stale. Called while the handle still keeps the
 * block. */
BLITZ_PRIVATE void blitz__handle_retire(const blitz_task *h, blitz__task *t) {
    if ((uintptr_t)h >> BLITZ__TAG_SHIFT)
        blitz__u32_fetch_add(blitz__block_gen(t), 1, BLITZ__RELEASE);
}
#else
#define blitz__handle_out(t)       (t)
#define blitz__handle_in(h, func)  ((void)(func), (blitz__task *)(uintptr_t)(h))
#define blitz__handle_retire(h, t) ((void)(h), (void)(t))
#endif

/* Takes a block of class c when `cache`'s active list is empty: its
 * held-back batch, a spare batch of the runtime, or a fresh carve.
 * `locked`: the caller holds alloc_lock (and `cache` is the shared one).
 * Out of line, so that the common take stays a few instructions. */
static BLITZ__NOINLINE blitz__task *
blitz__cache_refill(blitz_runtime *rt, blitz__block_cache *cache, uint32_t c, int locked) {
    if (cache->full[c]) {
        cache->active[c] = cache->full[c];
        cache->full[c] = NULL;
    } else if (blitz__ptr_load(&rt->spare_batches[c], BLITZ__RELAXED)) {
        /* The unlocked peek above only saves a lock when there is
         * nothing; the list itself is read and written under it. */
        if (!locked)
            blitz__mutex_lock(&rt->alloc_lock);
        blitz__task *b = (blitz__task *)blitz__ptr_load(&rt->spare_batches[c], BLITZ__RELAXED);
        if (b)
            blitz__ptr_store(&rt->spare_batches[c], blitz__batch_next(b), BLITZ__RELAXED);
        if (!locked)
            blitz__mutex_unlock(&rt->alloc_lock);
        cache->active[c] = b;
    }
    blitz__task *t = cache->active[c];
    if (t) {
        cache->active[c] = t->next;
        cache->active_count[c] = BLITZ__FREE_BATCH - 1;
        return t;
    }
    blitz__chunk *ch = cache->carving[c];
    if (!ch || blitz__u32_load(&ch->carved, BLITZ__RELAXED) == ch->capacity) {
        if (locked)
            blitz__mutex_unlock(&rt->alloc_lock);
        ch = blitz__chunk_new(rt, c);
        if (locked)
            blitz__mutex_lock(&rt->alloc_lock);
        if (!ch)
            return NULL;
        /* With the lock dropped another thread may have installed a chunk;
         * the older one is full or nearly so and stays on the list. */
        blitz__chunk_retire(cache->carving[c]);
        cache->carving[c] = ch;
    }
    /* Only this thread carves ch: relaxed read, release publish (see
     * blitz__chunk.carved). */
    uint32_t i = blitz__u32_load(&ch->carved, BLITZ__RELAXED);
    t = blitz__chunk_block(ch, i);
    blitz__u64_store(&t->state, 0, BLITZ__RELAXED);
    blitz__u32_store(&ch->carved, i + 1, BLITZ__RELEASE);
    return t;
}

/* Takes a block of class c from `cache` (see blitz__cache_refill). */
static inline blitz__task *blitz__cache_take(blitz_runtime *rt, blitz__block_cache *cache,
                                             uint32_t c, int locked) {
    blitz__task *t = cache->active[c];
    if (!t)
        return blitz__cache_refill(rt, cache, c, locked);
    cache->active[c] = t->next;
    cache->active_count[c]--;
    return t;
}

/* A full active list becomes the held-back batch; the batch held back
 * before goes to the runtime's spares. Out of line, as refill. */
static BLITZ__NOINLINE void blitz__cache_spill(blitz_runtime *rt, blitz__block_cache *cache,
                                               uint32_t c, int locked) {
    blitz__task *spill = cache->full[c];
    cache->full[c] = cache->active[c];
    cache->active[c] = NULL;
    cache->active_count[c] = 0;
    if (spill) {
        if (!locked)
            blitz__mutex_lock(&rt->alloc_lock);
        blitz__batch_set_next(
            spill, (blitz__task *)blitz__ptr_load(&rt->spare_batches[c], BLITZ__RELAXED));
        blitz__ptr_store(&rt->spare_batches[c], spill, BLITZ__RELAXED);
        blitz__u32_store(&rt->spares_since_trim,
                         blitz__u32_load(&rt->spares_since_trim, BLITZ__RELAXED) + 1,
                         BLITZ__RELAXED);
        if (!locked)
            blitz__mutex_unlock(&rt->alloc_lock);
    }
}

/* Gives block t of class c back to `cache`; `locked` as for
 * blitz__cache_take. */
static inline void blitz__cache_put(blitz_runtime *rt, blitz__block_cache *cache, uint32_t c,
                                    blitz__task *t, int locked) {
    t->next = cache->active[c];
    cache->active[c] = t;
    if (++cache->active_count[c] >= BLITZ__FREE_BATCH)
        blitz__cache_spill(rt, cache, c, locked);
}

/* Task ids: each cache takes ranges of BLITZ__ID_RANGE from the runtime's
 * counter, so a spawn pays one increment and an atomic only once per
 * range. Ids are unique in the runtime and roughly in spawn order; 0 is
 * never given. The shared cache's under alloc_lock. */
#define BLITZ__ID_RANGE 1024u
static inline uint64_t blitz__task_id_next(blitz_runtime *rt, blitz__block_cache *cache) {
    if (BLITZ__UNLIKELY(cache->id_next == cache->id_end)) {
        /* Relaxed: ids only need to differ. */
        cache->id_next = blitz__u64_fetch_add(&rt->id_ranges, BLITZ__ID_RANGE, BLITZ__RELAXED) + 1;
        cache->id_end = cache->id_next + BLITZ__ID_RANGE;
    }
    return cache->id_next++;
}

/* A chunk of its own for a block too large for the size classes. Out of
 * line: the common allocation stays short. */
static BLITZ__NOINLINE blitz__task *
blitz__block_alloc_large(blitz_runtime *rt, blitz__block_cache *cache, size_t need) {
    blitz__task *t;
    size_t total = BLITZ__FIRST_BLOCK + ((need + 15) & ~(size_t)15) + BLITZ__GEN_LARGE_BYTES;
    void *raw;
    blitz__chunk *ch = (blitz__chunk *)blitz__alloc_aligned(
        total < BLITZ__CHUNK_SIZE ? BLITZ__CHUNK_SIZE : total, BLITZ__CHUNK_SIZE, &raw);
    if (!ch)
        return NULL;
    ch->rt = rt;
    ch->raw = raw;
    ch->group_n = ch->group_handed = 1;
    blitz__u32_store(&ch->retired, 0, BLITZ__RELAXED);
    ch->trim_free = 0;
    ch->trim_ok = 0;
    ch->block_size = (uint32_t)(total - BLITZ__FIRST_BLOCK - BLITZ__GEN_LARGE_BYTES);
    ch->class_index = BLITZ__CLASS_LARGE;
    ch->capacity = 1;
    blitz__u64_store(&blitz__chunk_block(ch, 0)->state, 0, BLITZ__RELAXED);
    blitz__u32_store(&ch->carved, 1, BLITZ__RELAXED);
#if BLITZ__TAG_HANDLES
    /* Memory a stale handle's block had may come back here: start
     * from a generation no earlier chunk used. */
    static blitz__atomic_u32 large_gen;
    blitz__u32_store(blitz__block_gen(blitz__chunk_block(ch, 0)),
                     blitz__u32_fetch_add(&large_gen, 1u << 8, BLITZ__RELAXED), BLITZ__RELAXED);
#endif
    t = blitz__chunk_block(ch, 0);
    blitz__mutex_lock(&rt->alloc_lock);
    t->id = blitz__task_id_next(rt, cache ? cache : &rt->shared_cache);
    ch->next = rt->chunks;
    rt->chunks = ch;
    blitz__mutex_unlock(&rt->alloc_lock);
    return t;
}

/* A block for a task whose header + state (+ drop pointer) need `need`
 * bytes; NULL when out of memory. Counts the spawn, and the join handle
 * given out with it when `with_handle`, on the counters its one look-up
 * of the thread's owner found. */
BLITZ_PRIVATE blitz__task *blitz__block_alloc(blitz_runtime *rt, size_t need, int with_handle) {
    uint32_t c = blitz__size_class(need);
    blitz__task *t;
    blitz__worker_counters *k;
    blitz__block_cache *cache = blitz__local_owner(rt, &k);
    if (BLITZ__UNLIKELY(c == BLITZ__CLASS_LARGE)) {
        t = blitz__block_alloc_large(rt, cache, need);
        if (!t)
            return NULL;
    } else {
        if (cache) {
            t = blitz__cache_take(rt, cache, c, 0);
            if (t)
                t->id = blitz__task_id_next(rt, cache);
        } else {
            blitz__mutex_lock(&rt->alloc_lock);
            t = blitz__cache_take(rt, &rt->shared_cache, c, 1);
            if (t)
                t->id = blitz__task_id_next(rt, &rt->shared_cache);
            blitz__mutex_unlock(&rt->alloc_lock);
        }
        if (!t)
            return NULL;
    }
    if (k) {
        BLITZ__STAT(blitz__u64_bump(&k->spawned, 1));
        if (with_handle)
            BLITZ__STAT(blitz__u64_bump(&k->handles, 1));
    } else {
        BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.spawned, 1, BLITZ__RELAXED));
        if (with_handle)
            BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.handles, 1, BLITZ__RELAXED));
    }
    return t;
}

/* Counts a released join handle (blitz__block_alloc counts them given). */
BLITZ_PRIVATE void blitz__count_handle_released(blitz_runtime *rt) {
    blitz__worker_counters *k;
    (void)blitz__local_owner(rt, &k);
    if (k) {
        BLITZ__STAT(blitz__u64_bump(&k->handles_released, 1));
    } else {
        BLITZ__STAT(blitz__u64_fetch_add(&rt->remote_counters.handles_released, 1, BLITZ__RELAXED));
    }
}

/* Counts a freed block. It is the freeing thread's last access to the
 * runtime: blitz_runtime_free waits for the count (acquire, pairing with the
 * release here) before it frees the memory this thread was using. */
static void blitz__count_freed(blitz_runtime *rt, blitz__worker_counters *k) {
    if (k)
        blitz__u64_bump(&k->freed, 1);
    else
        blitz__u64_fetch_add(&rt->remote_counters.freed, 1, BLITZ__RELEASE);
}

/* Returns the block of a task whose state word has already been zeroed. */
BLITZ_PRIVATE void blitz__block_release(blitz__task *t) {
    blitz__chunk *ch = blitz__chunk_of(t);
    blitz_runtime *rt = ch->rt;
    blitz__worker_counters *k;
    blitz__block_cache *cache = blitz__local_owner(rt, &k);
    uint32_t c = ch->class_index;
    if (c == BLITZ__CLASS_LARGE) {
        /* During the shutdown sweep the chunk list is being walked: leave the
         * (now free) chunk on it for blitz__block_free_all. */
        if (!blitz__u32_load(&rt->sweeping, BLITZ__ACQUIRE)) {
            blitz__mutex_lock(&rt->alloc_lock);
            blitz__chunk **p = &rt->chunks;
            while (*p != ch)
                p = &(*p)->next;
            *p = ch->next;
            blitz__mutex_unlock(&rt->alloc_lock);
#if BLITZ__TAG_HANDLES
            blitz__free_handle(ch->raw); /* a stale handle may still look */
#else
            blitz__free(ch->raw);
#endif
        }
    } else {
        if (cache) {
            blitz__cache_put(rt, cache, c, t, 0);
        } else {
            blitz__mutex_lock(&rt->alloc_lock);
            blitz__cache_put(rt, &rt->shared_cache, c, t, 1);
            blitz__mutex_unlock(&rt->alloc_lock);
        }
    }
    blitz__count_freed(rt, k);
}

/* Moves the blocks of list `t` (linked through next) onto *out. */
static void blitz__trim_collect(blitz__task *t, blitz__task **out) {
    while (t) {
        blitz__task *next = t->next;
        blitz__chunk_of(t)->trim_free++;
        t->next = *out;
        *out = t;
        t = next;
    }
}

/* Empties the shared cache, the spare batches and `own` (the caller's
 * private cache, or NULL) into one list per class, frees the retired
 * chunks all of whose carved blocks were there, and puts the other blocks
 * back in the shared cache. Caller holds alloc_lock; the freed chunks are
 * returned (linked through next) for the caller to free after unlocking. */
static blitz__chunk *blitz__trim_locked(blitz_runtime *rt, blitz__block_cache *own) {
    blitz__task *all[BLITZ__NUM_CLASSES];
    blitz__block_cache *sh = &rt->shared_cache;
    for (uint32_t c = 0; c < BLITZ__NUM_CLASSES; c++) {
        all[c] = NULL;
        blitz__block_cache *caches[2] = {sh, own};
        for (int k = 0; k < 2; k++) {
            blitz__block_cache *cache = caches[k];
            if (!cache)
                continue;
            blitz__trim_collect(cache->active[c], &all[c]);
            blitz__trim_collect(cache->full[c], &all[c]);
            cache->active[c] = cache->full[c] = NULL;
            cache->active_count[c] = 0;
            blitz__chunk_retire(cache->carving[c]);
            cache->carving[c] = NULL;
        }
        blitz__task *b = (blitz__task *)blitz__ptr_load(&rt->spare_batches[c], BLITZ__RELAXED);
        blitz__ptr_store(&rt->spare_batches[c], NULL, BLITZ__RELAXED);
        while (b) {
            blitz__task *next_batch = blitz__batch_next(b);
            blitz__trim_collect(b, &all[c]);
            b = next_batch;
        }
    }
    /* Acquire on retired, then carved: the carver's last count. */
    for (blitz__chunk *ch = rt->chunks; ch; ch = ch->next) {
        ch->trim_ok = ch->class_index != BLITZ__CLASS_LARGE &&
                      blitz__u32_load(&ch->retired, BLITZ__ACQUIRE) &&
                      ch->trim_free == blitz__u32_load(&ch->carved, BLITZ__ACQUIRE);
        if (!ch->trim_ok)
            ch->trim_free = 0; /* never the freed mark below */
    }
    /* A group goes whole: its chunks lie one after another behind its
     * first, and those not handed out yet (the group being handed out)
     * go with it. Freed chunks are marked with trim_free = UINT32_MAX
     * until the blocks are put back. */
    for (blitz__chunk *ch = rt->chunks; ch; ch = ch->next) {
        if (!ch->raw || !ch->trim_ok)
            continue;
        int current = ch == rt->chunk_group;
        int whole = ch->group_handed == ch->group_n || current;
        for (uint32_t i = 1; whole && i < ch->group_handed; i++)
            whole = ((blitz__chunk *)(void *)((char *)ch + (size_t)i * BLITZ__CHUNK_SIZE))->trim_ok;
        if (!whole)
            continue;
        for (uint32_t i = 0; i < ch->group_handed; i++)
            ((blitz__chunk *)(void *)((char *)ch + (size_t)i * BLITZ__CHUNK_SIZE))->trim_free =
                UINT32_MAX;
        if (current) {
            rt->chunk_group = NULL;
            rt->chunk_spare_left = 0;
        }
    }
    blitz__chunk *dead = NULL, **p = &rt->chunks;
    uint32_t held = blitz__u32_load(&rt->chunks_held, BLITZ__RELAXED);
    while (*p) {
        blitz__chunk *ch = *p;
        if (ch->trim_free == UINT32_MAX) {
            *p = ch->next;
            held--;
            /* The group's memory goes with its first chunk. */
            if (ch->raw) {
                ch->next = dead;
                dead = ch;
            }
        } else {
            ch->trim_free = 0;
            p = &ch->next;
        }
    }
    uint32_t kept = 0;
    for (uint32_t c = 0; c < BLITZ__NUM_CLASSES; c++) {
        for (blitz__task *t = all[c], *next; t; t = next) {
            next = t->next;
            if (blitz__chunk_of(t)->trim_free != UINT32_MAX) {
                blitz__cache_put(rt, sh, c, t, 1);
                kept++;
            }
        }
    }
    blitz__u32_store(&rt->spares_since_trim, 0, BLITZ__RELAXED);
    blitz__u32_store(&rt->free_at_trim, kept, BLITZ__RELAXED);
    blitz__u32_store(&rt->chunks_held, held, BLITZ__RELAXED);
    blitz__u32_store(&rt->chunks_at_trim, held, BLITZ__RELAXED);
    return dead;
}

/* An owner thread (a worker, the current-thread driver) going idle, with
 * its private cache `own`: trims when the chunks grew by a quarter (at
 * least 4) since the last trim, when at least as many blocks as the last
 * trim kept (at least BLITZ__TRIM_MIN_FREED) went to the spares since, or
 * when a trim ran since `own` last gave its blocks back. A trim costs a
 * walk of the free blocks and the chunks, so these bounds keep its cost
 * proportional to the frees and allocations since the last one. Cheap
 * otherwise: a few relaxed loads. Not during shutdown, whose sweep walks
 * the chunk list.
 *
 * A trim started by growth or frees waits BLITZ__TRIM_DELAY_NS after the
 * last trim that gave memory back: a program whose bursts of tasks come
 * and go faster than that keeps reusing its blocks rather than paying the
 * page faults of fresh chunks after every burst. Returns 0, or how long
 * such a trim still has to wait: an owner about to sleep wakes by then to
 * run it, so an idle runtime still gives its memory back. */
#define BLITZ__TRIM_MIN_FREED 2048u
#define BLITZ__TRIM_DELAY_NS  100000000ull
BLITZ_PRIVATE uint64_t blitz__block_trim_idle(blitz_runtime *rt, blitz__block_cache *own) {
    uint32_t held = blitz__u32_load(&rt->chunks_held, BLITZ__RELAXED);
    uint32_t at = blitz__u32_load(&rt->chunks_at_trim, BLITZ__RELAXED);
    uint32_t slack = at / 4 < 4 ? 4 : at / 4;
    uint64_t freed =
        (uint64_t)blitz__u32_load(&rt->spares_since_trim, BLITZ__RELAXED) * BLITZ__FREE_BATCH;
    uint32_t kept = blitz__u32_load(&rt->free_at_trim, BLITZ__RELAXED);
    int grew =
        held > at + slack || freed >= (kept < BLITZ__TRIM_MIN_FREED ? BLITZ__TRIM_MIN_FREED : kept);
    if (!grew && own->trim_epoch == blitz__u32_load(&rt->trim_epoch, BLITZ__RELAXED))
        return 0;
    uint64_t now = blitz__now_ns();
    if (grew) {
        uint64_t not_before = blitz__u64_load(&rt->trim_not_before, BLITZ__RELAXED);
        if (now < not_before)
            return not_before - now;
    }
    blitz__mutex_lock(&rt->alloc_lock);
    blitz__chunk *dead = NULL;
    /* The shutdown flag is set before the sweep takes this lock. */
    if (!blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE)) {
        dead = blitz__trim_locked(rt, own);
        uint32_t epoch = blitz__u32_load(&rt->trim_epoch, BLITZ__RELAXED);
        if (grew)
            blitz__u32_store(&rt->trim_epoch, ++epoch, BLITZ__RELAXED);
        own->trim_epoch = epoch;
        if (dead)
            blitz__u64_store(&rt->trim_not_before, now + rt->trim_delay_ns, BLITZ__RELAXED);
    }
    blitz__mutex_unlock(&rt->alloc_lock);
    /* Not through the handle quarantine: a trim frees many chunks at
     * once, the quarantine would keep only the last few, and those would
     * hold megabytes. */
    while (dead) {
        blitz__chunk *next = dead->next;
        blitz__free(dead->raw);
        dead = next;
    }
    return 0;
}

/* Calls fn on every live block of the runtime. Only for shutdown and free:
 * no thread may be carving from a private cache meanwhile. Blocks carved
 * after the walk started are not visited. */
BLITZ_PRIVATE void blitz__block_walk(blitz_runtime *rt, void (*fn)(blitz__task *t)) {
    blitz__mutex_lock(&rt->alloc_lock);
    blitz__chunk *first = rt->chunks;
    blitz__mutex_unlock(&rt->alloc_lock);
    /* Chunks are only ever prepended (and large ones removed when their task
     * is freed, which fn may do), so read each chunk's successor before fn. */
    for (blitz__chunk *ch = first, *next; ch; ch = next) {
        blitz__mutex_lock(&rt->alloc_lock);
        next = ch->next;
        uint32_t carved = blitz__u32_load(&ch->carved, BLITZ__ACQUIRE);
        blitz__mutex_unlock(&rt->alloc_lock);
        for (uint32_t i = 0; i < carved; i++) {
            blitz__task *t = blitz__chunk_block(ch, i);
            if (blitz__u64_load(&t->state, BLITZ__ACQUIRE) != 0)
                fn(t);
        }
    }
}

/* Frees every chunk (runtime teardown). */
BLITZ_PRIVATE void blitz__block_free_all(blitz_runtime *rt) {
    blitz__chunk *ch = rt->chunks;
    rt->chunks = NULL;
    /* A group goes with its first chunk, which need not be the last of
     * the group on the list: relink the first chunks, then free them. */
    blitz__chunk *firsts = NULL;
    while (ch) {
        blitz__chunk *next = ch->next;
        if (ch->raw) {
            ch->next = firsts;
            firsts = ch;
        }
        ch = next;
    }
    while (firsts) {
        blitz__chunk *next = firsts->next;
        blitz__free(firsts->raw);
        firsts = next;
    }
    rt->chunk_spare = NULL;
    rt->chunk_spare_left = 0;
}
