/* The hierarchical timer wheel's types and interface (timer_wheel.c).
 *
 * Deadlines are in ticks (the runtime's tick is 1 ms). The wheel is a plain
 * data structure: no locking (the caller serializes), no allocation (entries
 * are intrusive), no clock (the caller says what time it is). */

#define BLITZ__WHEEL_LEVELS    5
#define BLITZ__WHEEL_SLOT_BITS 6
#define BLITZ__WHEEL_SLOTS     64
/* The levels reach 64^5 = 2^30 ticks (~12 days at 1 ms); later deadlines
 * wait in the overflow list. */
#define BLITZ__WHEEL_SPAN_BITS (BLITZ__WHEEL_LEVELS * BLITZ__WHEEL_SLOT_BITS)

/* entry->where: level * 64 + slot for an entry in a slot, or one of these. */
#define BLITZ__WHEEL_WHERE_OVERFLOW (BLITZ__WHEEL_LEVELS * BLITZ__WHEEL_SLOTS)
#define BLITZ__WHEEL_WHERE_DUE      (BLITZ__WHEEL_WHERE_OVERFLOW + 1)
#define BLITZ__WHEEL_NOT_IN_WHEEL   0xffffffffu

/* The entry, struct blitz__timer_entry, is defined in blitz_api.h because
 * blitz_timer embeds it and users keep timers in their task state:
 *   uint64_t deadline;  in ticks; set before insert, left alone while in
 *   next, prev;         the wheel's links
 *   uint32_t where;     level * 64 + slot, or one of the values above */
typedef struct blitz__timer_entry blitz__timer_entry;

/* An entry that is in no wheel. Zeroed memory is NOT a valid idle entry
 * (where 0 means level 0, slot 0): initialize with this or
 * blitz__timer_entry_init before the first insert or remove. */
#define BLITZ__TIMER_ENTRY_INIT \
    { .deadline = 0, .next = NULL, .prev = NULL, .where = BLITZ__WHEEL_NOT_IN_WHEEL }

typedef struct blitz__timer_wheel {
    uint64_t elapsed; /* every entry still in a slot or the overflow is due after this */
    uint64_t occupied[BLITZ__WHEEL_LEVELS]; /* bit s of level l: slots[l][s] is not empty */
    /* Lower bounds, UINT64_MAX when their list is empty: the earliest
     * deadline in `due`, and the earliest 2^30-aligned start of a deadline
     * in `overflow`. Removal may leave them lower than the truth. */
    uint64_t due_min;
    uint64_t overflow_start;
    size_t count;
    blitz__timer_entry *due;      /* inserted at or before elapsed */
    blitz__timer_entry *overflow; /* beyond the levels' reach */
    /* Doubly linked lists, NULL-terminated; the head's prev is NULL. */
    blitz__timer_entry *slots[BLITZ__WHEEL_LEVELS][BLITZ__WHEEL_SLOTS];
} blitz__timer_wheel;

BLITZ_PRIVATE void blitz__timer_entry_init(blitz__timer_entry *e);
BLITZ_PRIVATE void blitz__wheel_init(blitz__timer_wheel *w, uint64_t now_tick);
/* Inserts e with e->deadline already set. A deadline <= w->elapsed is due
 * at once: it goes to a "due" list that the next advance returns first. An
 * entry already in the wheel is moved (removed, then inserted). */
BLITZ_PRIVATE void blitz__wheel_insert(blitz__timer_wheel *w, blitz__timer_entry *e);
/* O(1). Safe on an entry not in the wheel (no-op, returns 0); returns 1 if
 * it was removed. */
BLITZ_PRIVATE int blitz__wheel_remove(blitz__timer_wheel *w, blitz__timer_entry *e);
/* The earliest tick at which some entry is due: exact for level-0 entries,
 * a lower bound (the slot's start) for higher levels and the overflow, never
 * later than the earliest deadline. UINT64_MAX when empty (and when every
 * deadline left is UINT64_MAX: tell them apart by the count). O(levels). */
BLITZ_PRIVATE uint64_t blitz__wheel_next_expiry(const blitz__timer_wheel *w);
/* Advances elapsed to now_tick (never backwards) and sets *out to a list of
 * every entry with deadline <= now_tick (linked through next, the first's
 * prev NULL, order unspecified; NULL if none). Those entries are out of the
 * wheel (where = NOT_IN_WHEEL) and may be re-inserted at once, but read
 * e->next before re-inserting e. Returns the number moved. */
BLITZ_PRIVATE size_t blitz__wheel_advance(blitz__timer_wheel *w, uint64_t now_tick,
                                          blitz__timer_entry **out);
BLITZ_PRIVATE size_t blitz__wheel_count(const blitz__timer_wheel *w);
