/* Debug checks of handles used after their release (BLITZ__CHECK_HANDLES:
 * on unless NDEBUG, or as BLITZ_DEBUG says; none of it in a release
 * build).
 *
 * A check must not read memory that may already belong to something else,
 * so poisoning alone is not enough:
 * - Heap handles (channels, task groups, sockets) carry a magic word that
 *   their last release overwrites, and their memory goes through a
 *   quarantine: the last BLITZ__QUARANTINE frees of the process wait here,
 *   so a stale pointer still reads the poisoned word instead of a new
 *   object's.
 * - Join handles point into task blocks that the slab allocator gives to
 *   the next task at once. A handle carries its block's generation in the
 *   pointer's unused top 16 bits; blitz_task_release bumps the generation,
 *   so a stale handle no longer matches even when its block holds a live
 *   task again (core/task_alloc.c keeps the generations, core/join.c
 *   compares). */
#include "base.h"

BLITZ_PRIVATE void blitz__handle_misuse(const char *func, const char *what) {
    fprintf(stderr, "blitz: %s: %s\n", func, what);
    abort();
}

#if BLITZ__CHECK_HANDLES
#define BLITZ__QUARANTINE 64u

static struct {
    blitz__atomic_u32 lock;
    uint32_t next;
    void *held[BLITZ__QUARANTINE];
} blitz__quarantine;

BLITZ_PRIVATE void blitz__free_handle(void *raw) {
    if (!raw)
        return;
    uint32_t free = 0;
    while (!blitz__u32_cas_weak(&blitz__quarantine.lock, &free, 1, BLITZ__ACQUIRE)) {
        free = 0;
        blitz__yield();
    }
    void *old = blitz__quarantine.held[blitz__quarantine.next];
    blitz__quarantine.held[blitz__quarantine.next] = raw;
    blitz__quarantine.next = (blitz__quarantine.next + 1) % BLITZ__QUARANTINE;
    blitz__u32_store(&blitz__quarantine.lock, 0, BLITZ__RELEASE);
    blitz__free(old);
}
#else
BLITZ_PRIVATE void blitz__free_handle(void *raw) {
    blitz__free(raw);
}
#endif
