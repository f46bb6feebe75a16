/* The timer wheel against a list of deadlines: operation sequences of
 * inserts (at offsets that reach every level and the overflow), removals,
 * moves and advances. After each advance the wheel must have fired exactly
 * the entries due, each once; next_expiry may never be later than the
 * earliest deadline left, and the counts must agree. */
#include "fuzz_input.h"

#define FZ_TIMERS 32

typedef struct {
    int armed;
    uint64_t deadline;
} fz_ref;

/* An offset from now on a scale the input picks: within a slot, a level,
 * past the levels' reach, or right on a level boundary. */
static uint64_t fz_offset(fz_input *in) {
    uint8_t scale = fz_u8(in);
    uint64_t raw = fz_bytes(in, 2);
    switch (scale & 7) {
    case 0:
        return raw & 63;
    case 1:
        return raw;
    case 2:
        return raw << 12;
    case 3:
        return raw << 24;
    case 4:
        return (raw << 30) | (raw & 0xfff);
    case 5:
        return (uint64_t)1 << (6 * (raw % 6));
    case 6:
        return ((uint64_t)1 << (6 * (raw % 6))) - 1;
    default:
        return raw ? UINT64_MAX / raw : 0;
    }
}

static uint64_t fz_add(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    static blitz__timer_wheel wheel;
    blitz__timer_entry entries[FZ_TIMERS];
    fz_ref ref[FZ_TIMERS];
    uint64_t now = fz_bytes(&in, 3);
    blitz__wheel_init(&wheel, now);
    for (int i = 0; i < FZ_TIMERS; i++) {
        blitz__timer_entry_init(&entries[i]);
        ref[i].armed = 0;
    }
    size_t armed = 0;
    while (in.left) {
        uint8_t op = fz_u8(&in);
        int k = fz_u8(&in) % FZ_TIMERS;
        switch (op % 4) {
        case 0:
        case 1: {                       /* insert, or move an armed one */
            uint64_t back = fz_u8(&in); /* 0x80: at or before now (due at once) */
            uint64_t d = op & 0x80 ? (back > now ? 0 : now - back) : fz_add(now, fz_offset(&in));
            entries[k].deadline = d;
            blitz__wheel_insert(&wheel, &entries[k]);
            armed += !ref[k].armed;
            ref[k].armed = 1;
            ref[k].deadline = d;
            break;
        }
        case 2: /* remove */
            FZ_CHECK(blitz__wheel_remove(&wheel, &entries[k]) == ref[k].armed);
            armed -= ref[k].armed;
            ref[k].armed = 0;
            break;
        default: { /* advance */
            uint64_t to = fz_add(now, fz_offset(&in));
            blitz__timer_entry *fired = NULL;
            size_t n = blitz__wheel_advance(&wheel, to, &fired);
            now = to;
            size_t seen = 0;
            for (blitz__timer_entry *e = fired; e; e = e->next, seen++) {
                int i = (int)(e - entries);
                FZ_CHECK(i >= 0 && i < FZ_TIMERS);
                FZ_CHECK(ref[i].armed && ref[i].deadline <= now);
                FZ_CHECK(e->where == BLITZ__WHEEL_NOT_IN_WHEEL);
                ref[i].armed = 0;
                armed--;
            }
            FZ_CHECK(seen == n);
            for (int i = 0; i < FZ_TIMERS; i++)
                FZ_CHECK(!ref[i].armed || ref[i].deadline > now);
            break;
        }
        }
        FZ_CHECK(blitz__wheel_count(&wheel) == armed);
        uint64_t earliest = UINT64_MAX;
        for (int i = 0; i < FZ_TIMERS; i++)
            if (ref[i].armed && ref[i].deadline < earliest)
                earliest = ref[i].deadline;
        FZ_CHECK(blitz__wheel_next_expiry(&wheel) <= earliest);
    }
    return 0;
}
