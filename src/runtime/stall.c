/* The stall watchdog: a thread that reports polls running longer than a
 * threshold (a blocking call inside a task holds its worker and every task
 * queued behind it).
 *
 * Off (the default) it costs one test of a context field per poll. On,
 * each worker (or the current-thread driver) fills its slot before a poll
 * (blitz__stall_begin: the clock and the task's id, name, poll function
 * and resume point) and clears its start after; the watchdog wakes every
 * quarter threshold, so a stall is seen within 1.25 thresholds, and
 * reports each stalled poll once. It never touches a task: everything it
 * prints was copied into the slot (see blitz__stall_slot for the
 * ordering). */
#include "../io/io.h"

struct blitz__stall {
    blitz_runtime *rt;
    uint64_t threshold_ns;
    blitz_stall_fn fn;
    void *arg;
    uint32_t nslots;
    blitz__atomic_u32 stop;
    blitz__parker parker;
    blitz__thread thread;
    void *slots_raw;
};

static void blitz__stall_print(const blitz_stall_info *info, void *arg) {
    (void)arg;
    char poll[32];
    uintptr_t a;
    memcpy(&a, &info->poll, sizeof a);
    snprintf(poll, sizeof poll, "%#lx", (unsigned long)a);
    fprintf(stderr,
            "blitz: stall: worker %u has polled task %llu%s%s%s (poll %s, resumed at %s:%d) for "
            "%llu ms\n",
            info->worker, (unsigned long long)info->task_id, info->name ? " \"" : "",
            info->name ? info->name : "", info->name ? "\"" : "", poll,
            info->file ? info->file : "?", info->line,
            (unsigned long long)(info->running_ns / 1000000));
}

static void blitz__stall_check(struct blitz__stall *st, blitz__stall_slot *slot, uint32_t worker) {
    uint64_t since = blitz__u64_load(&slot->since, BLITZ__ACQUIRE);
    if (!since || since == slot->reported_since)
        return;
    uint64_t now = blitz__now_ns();
    if (now < since || now - since < st->threshold_ns)
        return;
    blitz_stall_info info;
    memset(&info, 0, sizeof info);
    info.worker = worker;
    info.task_id = blitz__u64_load(&slot->id, BLITZ__RELAXED);
    info.name = (const char *)(uintptr_t)blitz__u64_load(&slot->name, BLITZ__RELAXED);
    uintptr_t poll = (uintptr_t)blitz__u64_load(&slot->poll, BLITZ__RELAXED);
    memcpy(&info.poll, &poll, sizeof poll);
    uint64_t site = blitz__u64_load(&slot->site, BLITZ__RELAXED);
    info.file = site ? (const char *)(uintptr_t)(site & (((uint64_t)1 << 48) - 1)) : NULL;
    info.line = (int)blitz__u32_load(&slot->line, BLITZ__RELAXED);
    info.running_ns = now - since;
    /* Another poll started meanwhile: the fields may be its own. */
    if (blitz__u64_load(&slot->since, BLITZ__ACQUIRE) != since)
        return;
    slot->reported_since = since;
    st->fn(&info, st->arg);
}

static void *blitz__stall_main(void *arg) {
    struct blitz__stall *st = (struct blitz__stall *)arg;
    uint64_t period = st->threshold_ns / 4;
    if (period < 1000000)
        period = 1000000;
    while (!blitz__u32_load(&st->stop, BLITZ__ACQUIRE)) {
        blitz__parker_park(&st->parker, period);
        for (uint32_t i = 0; i < st->nslots; i++)
            blitz__stall_check(st, &st->rt->stall_slots[i], i);
    }
    return NULL;
}

/* Starts the watchdog of a runtime being created (before any worker). */
BLITZ_PRIVATE int blitz__stall_start(blitz_runtime *rt, const blitz_config *c) {
    if (!c->stall_threshold_ns)
        return BLITZ_OK;
    struct blitz__stall *st = (struct blitz__stall *)blitz__calloc(sizeof *st);
    if (!st)
        return BLITZ_ENOMEM;
    st->rt = rt;
    st->threshold_ns = c->stall_threshold_ns;
    st->fn = c->stall_fn ? c->stall_fn : blitz__stall_print;
    st->arg = c->stall_arg;
    st->nslots = rt->num_workers;
    blitz__stall_slot *slots = (blitz__stall_slot *)blitz__alloc_aligned(
        st->nslots * sizeof *slots, BLITZ_CACHE_LINE, &st->slots_raw);
    if (!slots) {
        blitz__free(st);
        return BLITZ_ENOMEM;
    }
    memset(slots, 0, st->nslots * sizeof *slots);
    blitz__parker_init(&st->parker);
    rt->stall_slots = slots;
    rt->stall = st;
    int err = blitz__thread_start(&st->thread, blitz__stall_main, st);
    if (err) {
        rt->stall_slots = NULL;
        rt->stall = NULL;
        blitz__parker_destroy(&st->parker);
        blitz__free(st->slots_raw);
        blitz__free(st);
        return err;
    }
    return BLITZ_OK;
}

/* Stops the watchdog once no thread polls tasks any more; the slots stay
 * (NULL-safe) until blitz__stall_free. */
BLITZ_PRIVATE void blitz__stall_stop(blitz_runtime *rt) {
    struct blitz__stall *st = rt->stall;
    if (!st || blitz__u32_load(&st->stop, BLITZ__RELAXED))
        return;
    blitz__u32_store(&st->stop, 1, BLITZ__RELEASE);
    blitz__parker_unpark(&st->parker);
    blitz__thread_join(st->thread);
}

BLITZ_PRIVATE void blitz__stall_free(blitz_runtime *rt) {
    struct blitz__stall *st = rt->stall;
    if (!st)
        return;
    blitz__stall_stop(rt);
    blitz__parker_destroy(&st->parker);
    blitz__free(st->slots_raw);
    blitz__free(st);
    rt->stall = NULL;
    rt->stall_slots = NULL;
}
