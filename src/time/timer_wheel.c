/* The hierarchical timer wheel (seed 002 "Timer Wheel", Tokio's
 * time/wheel): 5 levels of 64 slots, a level-l slot spanning 64^l ticks,
 * one occupancy word per level, an overflow list beyond 64^5 ticks, and a
 * due list for deadlines that had already passed when inserted.
 *
 * Placement. An entry with deadline d goes to the level of the highest bit
 * in which d differs from `elapsed` (six bits per level: Tokio's level_for),
 * in slot (d >> 6l) & 63. So d and elapsed agree on every bit above level l,
 * and d's slot is after elapsed's own slot at that level. A difference at
 * bit 30 or above means the overflow list.
 *
 * Invariants, relative to the current `elapsed`:
 *   I1. an entry at level l slot s has (d >> 6(l+1)) == (elapsed >> 6(l+1))
 *       and s > (elapsed >> 6l) & 63: the slot starts after elapsed and
 *       within elapsed's current 64^(l+1)-tick span. So a lower non-empty
 *       level always holds an earlier slot start than any higher level, and
 *       the slots of a level never wrap around.
 *   I2. an overflow entry has d >> 30 > elapsed >> 30, and overflow_start
 *       (a lower bound of their 2^30-aligned starts) is > elapsed.
 *   I3. occupied bit (l, s) is set iff slots[l][s] is non-empty; count is
 *       the number of entries in slots, overflow and due.
 *
 * Advancing. elapsed only moves to the start of the earliest non-empty slot
 * (or overflow start) or to a tick before all of them, which keeps I1 and
 * I2. advance(now) repeatedly takes the earliest slot; if it starts at or
 * before now, elapsed moves to its start, its entries with deadline <= now
 * fire, and the rest are re-inserted relative to the new elapsed: they land
 * at a lower level, in a more precise slot (the cascade). Entries never move
 * up, so each is handled at most once per level (and the overflow list is
 * walked at most twice per advance): a jump of any size costs the entries
 * it touches, never the ticks it crosses. Empty stretches are skipped by
 * the occupancy words (count-trailing-zeros after rotating to the current
 * slot). All arithmetic stays within aligned spans below 2^64, so deadlines
 * up to UINT64_MAX are fine. */
#include "time.h"

#define BLITZ__WHEEL_SLOT_MASK ((uint64_t)BLITZ__WHEEL_SLOTS - 1)

BLITZ_PRIVATE void blitz__timer_entry_init(blitz__timer_entry *e) {
    e->deadline = 0;
    e->next = e->prev = NULL;
    e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
}

BLITZ_PRIVATE void blitz__wheel_init(blitz__timer_wheel *w, uint64_t now_tick) {
    memset(w, 0, sizeof *w);
    w->elapsed = now_tick;
    w->due_min = UINT64_MAX;
    w->overflow_start = UINT64_MAX;
}

BLITZ_PRIVATE size_t blitz__wheel_count(const blitz__timer_wheel *w) {
    return w->count;
}

static inline uint64_t blitz__rotr64(uint64_t x, unsigned r) {
    return (x >> r) | (x << ((64u - r) & 63u));
}

/* Tokio's level_for: the level of the highest bit where elapsed and when
 * differ; the low six bits are or-ed in so the answer is 0, not undefined,
 * when they are equal. >= BLITZ__WHEEL_LEVELS means the overflow. */
static inline unsigned blitz__wheel_level_for(uint64_t elapsed, uint64_t when) {
    uint64_t masked = (elapsed ^ when) | BLITZ__WHEEL_SLOT_MASK;
    unsigned significant = 63u - blitz__clz64(masked);
    return significant / BLITZ__WHEEL_SLOT_BITS;
}

static inline void blitz__wheel_push(blitz__timer_entry **head, blitz__timer_entry *e) {
    e->prev = NULL;
    e->next = *head;
    if (*head)
        (*head)->prev = e;
    *head = e;
}

/* Puts e where its deadline belongs relative to elapsed. Leaves count alone
 * (the callers account for it). */
static void blitz__wheel_place(blitz__timer_wheel *w, blitz__timer_entry *e) {
    uint64_t d = e->deadline;
    if (d <= w->elapsed) {
        e->where = BLITZ__WHEEL_WHERE_DUE;
        blitz__wheel_push(&w->due, e);
        if (d < w->due_min)
            w->due_min = d;
        return;
    }
    unsigned level = blitz__wheel_level_for(w->elapsed, d);
    if (level >= BLITZ__WHEEL_LEVELS) {
        uint64_t start = d & ~(((uint64_t)1 << BLITZ__WHEEL_SPAN_BITS) - 1);
        e->where = BLITZ__WHEEL_WHERE_OVERFLOW;
        blitz__wheel_push(&w->overflow, e);
        if (start < w->overflow_start)
            w->overflow_start = start;
        return;
    }
    unsigned slot = (unsigned)(d >> (level * BLITZ__WHEEL_SLOT_BITS)) & BLITZ__WHEEL_SLOT_MASK;
    e->where = level * BLITZ__WHEEL_SLOTS + slot;
    blitz__wheel_push(&w->slots[level][slot], e);
    w->occupied[level] |= (uint64_t)1 << slot;
}

BLITZ_PRIVATE int blitz__wheel_remove(blitz__timer_wheel *w, blitz__timer_entry *e) {
    uint32_t where = e->where;
    if (where == BLITZ__WHEEL_NOT_IN_WHEEL)
        return 0;
    blitz__timer_entry **head;
    if (where == BLITZ__WHEEL_WHERE_DUE)
        head = &w->due;
    else if (where == BLITZ__WHEEL_WHERE_OVERFLOW)
        head = &w->overflow;
    else {
        BLITZ_ASSERT(where < BLITZ__WHEEL_WHERE_OVERFLOW);
        head = &w->slots[where / BLITZ__WHEEL_SLOTS][where % BLITZ__WHEEL_SLOTS];
    }
    if (e->prev)
        e->prev->next = e->next;
    else
        *head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->next = e->prev = NULL;
    e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
    w->count--;
    if (!*head) {
        /* The cached minimums are only lower bounds, but an empty list must
         * not keep one alive: next_expiry would report a phantom timer. */
        if (where == BLITZ__WHEEL_WHERE_DUE)
            w->due_min = UINT64_MAX;
        else if (where == BLITZ__WHEEL_WHERE_OVERFLOW)
            w->overflow_start = UINT64_MAX;
        else
            w->occupied[where / BLITZ__WHEEL_SLOTS] &=
                ~((uint64_t)1 << (where % BLITZ__WHEEL_SLOTS));
    }
    return 1;
}

BLITZ_PRIVATE void blitz__wheel_insert(blitz__timer_wheel *w, blitz__timer_entry *e) {
    blitz__wheel_remove(w, e);
    blitz__wheel_place(w, e);
    w->count++;
}

/* The start of the earliest non-empty slot in the levels, with its level and
 * slot; 0 when the levels are empty. By I1 the lowest non-empty level holds
 * it, and within a level the next occupied slot after elapsed's own. */
static int blitz__wheel_next_slot(const blitz__timer_wheel *w, uint64_t *start, unsigned *level,
                                  unsigned *slot) {
    for (unsigned l = 0; l < BLITZ__WHEEL_LEVELS; l++) {
        uint64_t occ = w->occupied[l];
        if (!occ)
            continue;
        unsigned shift = l * BLITZ__WHEEL_SLOT_BITS;
        unsigned cur = (unsigned)(w->elapsed >> shift) & BLITZ__WHEEL_SLOT_MASK;
        unsigned s = cur + blitz__ctz64(blitz__rotr64(occ, cur));
        /* I1: never elapsed's own slot, never wrapped past slot 63. */
        BLITZ_ASSERT(s > cur && s < BLITZ__WHEEL_SLOTS);
        uint64_t level_start = w->elapsed & ~(((uint64_t)BLITZ__WHEEL_SLOTS << shift) - 1);
        *start = level_start + ((uint64_t)s << shift);
        *level = l;
        *slot = s;
        return 1;
    }
    return 0;
}

BLITZ_PRIVATE uint64_t blitz__wheel_next_expiry(const blitz__timer_wheel *w) {
    uint64_t t = w->overflow_start; /* by I1 and I2, later than any slot */
    uint64_t start;
    unsigned level, slot;
    if (blitz__wheel_next_slot(w, &start, &level, &slot))
        t = start;
    return w->due_min < t ? w->due_min : t;
}

BLITZ_PRIVATE size_t blitz__wheel_advance(blitz__timer_wheel *w, uint64_t now_tick,
                                          blitz__timer_entry **out) {
    blitz__timer_entry *fired = NULL, *e, *next;
    size_t n = 0;
    if (now_tick < w->elapsed)
        now_tick = w->elapsed;
    for (e = w->due; e; e = next, n++) {
        next = e->next;
        e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
        blitz__wheel_push(&fired, e);
    }
    w->due = NULL;
    w->due_min = UINT64_MAX;
    for (;;) {
        uint64_t start;
        unsigned level, slot;
        blitz__timer_entry *list;
        if (blitz__wheel_next_slot(w, &start, &level, &slot)) {
            if (start > now_tick)
                break;
            list = w->slots[level][slot];
            w->slots[level][slot] = NULL;
            w->occupied[level] &= ~((uint64_t)1 << slot);
        } else if (w->overflow && w->overflow_start <= now_tick) {
            /* The levels are empty, so nothing is lost by jumping to the
             * overflow's start; entries that come within the levels' reach
             * of it are placed there, the rest stay (and set a fresh
             * lower bound). */
            start = w->overflow_start;
            list = w->overflow;
            w->overflow = NULL;
            w->overflow_start = UINT64_MAX;
        } else {
            break;
        }
        BLITZ_ASSERT(start >= w->elapsed);
        w->elapsed = start;
        for (e = list; e; e = next) {
            next = e->next;
            if (e->deadline <= now_tick) {
                /* Due by the end of this advance: no point cascading it. */
                e->where = BLITZ__WHEEL_NOT_IN_WHEEL;
                blitz__wheel_push(&fired, e);
                n++;
            } else {
                /* deadline > now_tick >= elapsed: lands in a slot that
                 * starts after elapsed, at a lower level than before (or
                 * back in the overflow, further along). */
                blitz__wheel_place(w, e);
            }
        }
    }
    /* Every slot and the overflow start after now_tick: I1 and I2 hold. */
    w->elapsed = now_tick;
    w->count -= n;
    *out = fired;
    return n;
}
