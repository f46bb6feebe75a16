/* White-box tests of the timer wheel (src/timer_wheel.c): a differential
 * test against a binary heap over long seeded random runs (deadlines on
 * every level, on cascade boundaries and past the overflow horizon; small
 * steps and huge jumps), targeted edge cases, one huge jump over many
 * entries, and a run driven only by next_expiry, the way the runtime will
 * drive it. */

/* ---- helpers ---------------------------------------------------------------- */

static uint64_t tw_next(uint64_t *s) { /* SplitMix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t tw_below(uint64_t *s, uint64_t n) {
    return n ? tw_next(s) % n : 0;
}
static uint64_t tw_add(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
static uint64_t tw_sub(uint64_t a, uint64_t b) {
    return a < b ? 0 : a - b;
}
static uint64_t tw_pow64(unsigned k) {
    return (uint64_t)1 << (6 * k);
}

/* The wheel is consistent: occupancy words match the slots, every entry
 * sits where its `where` says, the count adds up, and nothing in the levels
 * or overflow is already due (invariants I1-I3). O(entries). */
static void tw_check_structure(const blitz__timer_wheel *w) {
    size_t n = 0;
    for (unsigned l = 0; l < BLITZ__WHEEL_LEVELS; l++) {
        for (unsigned s = 0; s < BLITZ__WHEEL_SLOTS; s++) {
            const blitz__timer_entry *e = w->slots[l][s];
            CHECK_EQ(!!(w->occupied[l] >> s & 1), e != NULL);
            if (e)
                CHECK_NULL(e->prev);
            for (; e; e = e->next, n++) {
                unsigned shift = 6 * l;
                CHECK_EQ(e->where, l * BLITZ__WHEEL_SLOTS + s);
                CHECK(e->deadline > w->elapsed);
                CHECK_EQ(e->deadline >> shift & 63, s);
                CHECK(e->deadline >> (shift + 6) == w->elapsed >> (shift + 6));
                CHECK_GT(s, w->elapsed >> shift & 63);
                if (e->next)
                    CHECK_PTR_EQ(e->next->prev, e);
            }
        }
    }
    for (const blitz__timer_entry *e = w->overflow; e; e = e->next, n++) {
        CHECK_EQ(e->where, BLITZ__WHEEL_WHERE_OVERFLOW);
        CHECK((e->deadline >> BLITZ__WHEEL_SPAN_BITS) > (w->elapsed >> BLITZ__WHEEL_SPAN_BITS));
        CHECK(w->overflow_start <= e->deadline);
        CHECK(w->overflow_start > w->elapsed);
        if (e->next)
            CHECK_PTR_EQ(e->next->prev, e);
    }
    for (const blitz__timer_entry *e = w->due; e; e = e->next, n++) {
        CHECK_EQ(e->where, BLITZ__WHEEL_WHERE_DUE);
        CHECK(w->due_min <= e->deadline);
        if (e->next)
            CHECK_PTR_EQ(e->next->prev, e);
    }
    CHECK_EQ(n, blitz__wheel_count(w));
    if (!w->overflow)
        CHECK(w->overflow_start == UINT64_MAX);
    if (!w->due)
        CHECK(w->due_min == UINT64_MAX);
}

/* ---- the reference: a binary min-heap of (deadline, id, generation) ------- */

/* Removal and re-insertion bump an id's generation; heap nodes of an older
 * generation are stale and skipped (lazy deletion). */
typedef struct {
    uint64_t deadline;
    uint32_t id, gen;
} tw_node;

typedef struct {
    tw_node *heap;
    size_t len, cap;
    uint32_t *gen;     /* per id */
    unsigned char *in; /* per id: in the reference wheel */
    size_t count;
    uint64_t elapsed;
} tw_ref;

static void tw_ref_init(tw_ref *r, size_t ids, uint64_t start) {
    memset(r, 0, sizeof *r);
    r->cap = 1024;
    r->heap = (tw_node *)malloc(r->cap * sizeof(tw_node));
    r->gen = (uint32_t *)calloc(ids, sizeof(uint32_t));
    r->in = (unsigned char *)calloc(ids, 1);
    CHECK(r->heap && r->gen && r->in);
    r->elapsed = start;
}
static void tw_ref_free(tw_ref *r) {
    free(r->heap);
    free(r->gen);
    free(r->in);
}
static int tw_node_less(const tw_node *a, const tw_node *b) {
    return a->deadline < b->deadline;
}
static void tw_ref_push(tw_ref *r, uint64_t deadline, uint32_t id) {
    if (r->len == r->cap) {
        r->cap *= 2;
        r->heap = (tw_node *)realloc(r->heap, r->cap * sizeof(tw_node));
        CHECK_NOT_NULL(r->heap);
    }
    size_t i = r->len++;
    tw_node x = {deadline, id, r->gen[id]};
    while (i > 0 && tw_node_less(&x, &r->heap[(i - 1) / 2])) {
        r->heap[i] = r->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    r->heap[i] = x;
}
static void tw_ref_pop(tw_ref *r) {
    tw_node x = r->heap[--r->len];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= r->len)
            break;
        if (c + 1 < r->len && tw_node_less(&r->heap[c + 1], &r->heap[c]))
            c++;
        if (!tw_node_less(&r->heap[c], &x))
            break;
        r->heap[i] = r->heap[c];
        i = c;
    }
    if (r->len > 0)
        r->heap[i] = x;
}
static int tw_ref_live(const tw_ref *r, const tw_node *x) {
    return r->in[x->id] && r->gen[x->id] == x->gen;
}
static void tw_ref_insert(tw_ref *r, uint32_t id, uint64_t deadline) {
    if (!r->in[id])
        r->count++;
    r->gen[id]++;
    r->in[id] = 1;
    tw_ref_push(r, deadline, id);
}
static int tw_ref_remove(tw_ref *r, uint32_t id) {
    if (!r->in[id])
        return 0;
    r->in[id] = 0;
    r->gen[id]++;
    r->count--;
    return 1;
}
/* The earliest live deadline, UINT64_MAX when empty. */
static uint64_t tw_ref_min(tw_ref *r) {
    while (r->len > 0 && !tw_ref_live(r, &r->heap[0]))
        tw_ref_pop(r);
    return r->len > 0 ? r->heap[0].deadline : UINT64_MAX;
}
/* Advances to now; stamps expect[id] = stamp for every entry due. */
static size_t tw_ref_advance(tw_ref *r, uint64_t now, uint32_t *expect, uint32_t stamp) {
    size_t n = 0;
    if (now < r->elapsed)
        now = r->elapsed;
    r->elapsed = now;
    while (r->len > 0 && r->heap[0].deadline <= now) {
        tw_node x = r->heap[0];
        tw_ref_pop(r);
        if (!tw_ref_live(r, &x))
            continue;
        r->in[x.id] = 0;
        r->count--;
        expect[x.id] = stamp;
        n++;
    }
    return n;
}

/* Checks the list advance returned against the reference's due set. */
static void tw_check_fired(blitz__timer_entry *out, size_t n, size_t want, uint64_t now,
                           const blitz__timer_entry *pool, size_t ids, uint32_t *expect,
                           uint32_t stamp) {
    CHECK_EQ(n, want);
    size_t seen = 0;
    if (out)
        CHECK_NULL(out->prev);
    for (blitz__timer_entry *e = out; e; e = e->next, seen++) {
        size_t id = (size_t)(e - pool);
        CHECK_LT(id, ids);
        CHECK(e->deadline <= now);
        CHECK_EQ(e->where, BLITZ__WHEEL_NOT_IN_WHEEL);
        CHECK_EQ(expect[id], stamp); /* due, and not returned twice */
        expect[id] = 0;
        CHECK_LE(seen, n);
    }
    CHECK_EQ(seen, n);
}

/* A deadline relative to elapsed e, from one of many distributions. */
static uint64_t tw_pick_deadline(uint64_t *rng, uint64_t e) {
    unsigned k = 1 + (unsigned)tw_below(rng, 5);
    switch (tw_below(rng, 14)) {
    case 0:
        return tw_sub(e, tw_below(rng, 100)); /* already passed */
    case 1:
        return e;
    case 2:
        return tw_add(e, 1 + tw_below(rng, 64));
    case 3:
        return tw_add(e, tw_below(rng, 4096));
    case 4:
        return tw_add(e, tw_below(rng, tw_pow64(3)));
    case 5:
        return tw_add(e, tw_below(rng, tw_pow64(4)));
    case 6:
        return tw_add(e, tw_below(rng, tw_pow64(5)));
    case 7:
    case 8: { /* on a cascade boundary of some level, +-1 */
        uint64_t m = tw_pow64(k);
        uint64_t b = tw_add((e / m) * m, m * (1 + tw_below(rng, 3)));
        return tw_sub(tw_add(b, tw_below(rng, 3)), 1);
    }
    case 9: /* past the overflow horizon */
        return tw_add(e, tw_pow64(5) + tw_below(rng, (uint64_t)1 << 33));
    case 10: { /* on an overflow epoch boundary, +-1 */
        uint64_t m = tw_pow64(5);
        uint64_t b = tw_add((e / m) * m, m * (1 + tw_below(rng, 3)));
        return tw_sub(tw_add(b, tw_below(rng, 3)), 1);
    }
    case 11:
        return tw_add(e, tw_below(rng, (uint64_t)1 << 42));
    case 12:
        return tw_sub(UINT64_MAX, tw_below(rng, 3));
    default:
        return tw_next(rng) | (tw_next(rng) & 1 ? (uint64_t)1 << 63 : 0);
    }
}

/* Where to advance to from elapsed e, given the reference's minimum. */
static uint64_t tw_pick_now(uint64_t *rng, uint64_t e, uint64_t ref_min, int huge) {
    unsigned k = 1 + (unsigned)tw_below(rng, 5);
    switch (tw_below(rng, 12)) {
    case 0:
        return e;
    case 1:
        return tw_add(e, 1);
    case 2:
        return tw_add(e, tw_below(rng, 64));
    case 3:
        return tw_add(e, tw_below(rng, 5000));
    case 4:
        return tw_add(e, tw_below(rng, (uint64_t)1 << 20));
    case 5:
        return ref_min == UINT64_MAX ? e : ref_min;
    case 6:
        return ref_min == UINT64_MAX ? e : tw_sub(ref_min, 1);
    case 7:
    case 8: { /* to a cascade boundary, +-1 */
        uint64_t m = tw_pow64(k);
        return tw_sub(tw_add(tw_add((e / m) * m, m), tw_below(rng, 3)), 1);
    }
    case 9:
        return tw_sub(e, tw_below(rng, 10)); /* backwards: a no-op for elapsed */
    default:
        if (!huge)
            return tw_add(e, tw_below(rng, 100));
        /* Past several levels or the overflow horizon in one go. */
        return tw_add(e, tw_below(rng, 2) ? tw_below(rng, tw_pow64(5))
                                          : tw_pow64(5) + tw_below(rng, (uint64_t)1 << 34));
    }
}

/* One seeded run of `ops` random operations over `ids` entries. */
static void tw_differential_run(uint64_t seed, uint64_t start, long ops, size_t ids, int huge) {
    uint64_t rng = seed;
    blitz__timer_wheel *w = (blitz__timer_wheel *)malloc(sizeof *w);
    blitz__timer_entry *pool = (blitz__timer_entry *)malloc(ids * sizeof *pool);
    uint32_t *expect = (uint32_t *)calloc(ids, sizeof(uint32_t));
    CHECK(w && pool && expect);
    for (size_t i = 0; i < ids; i++)
        blitz__timer_entry_init(&pool[i]);
    tw_ref ref;
    tw_ref_init(&ref, ids, start);
    blitz__wheel_init(w, start);
    uint32_t stamp = 0;
    size_t fired_total = 0;
    for (long op = 0; op < ops; op++) {
        uint64_t r = tw_below(&rng, 100);
        uint32_t id = (uint32_t)tw_below(&rng, ids);
        if (r < 45) { /* insert, or move an entry already in */
            uint64_t d = tw_pick_deadline(&rng, w->elapsed);
            pool[id].deadline = d;
            blitz__wheel_insert(w, &pool[id]);
            tw_ref_insert(&ref, id, d);
        } else if (r < 60) {
            CHECK_EQ(blitz__wheel_remove(w, &pool[id]), tw_ref_remove(&ref, id));
            CHECK_EQ(pool[id].where, BLITZ__WHEEL_NOT_IN_WHEEL);
        } else {
            uint64_t now = tw_pick_now(&rng, w->elapsed, tw_ref_min(&ref), huge);
            blitz__timer_entry poison = BLITZ__TIMER_ENTRY_INIT, *out = &poison; /* overwritten */
            stamp++;
            size_t want = tw_ref_advance(&ref, now, expect, stamp);
            size_t n = blitz__wheel_advance(w, now, &out);
            tw_check_fired(out, n, want, ref.elapsed, pool, ids, expect, stamp);
            CHECK(w->elapsed == ref.elapsed);
            fired_total += n;
        }
        CHECK_EQ(blitz__wheel_count(w), ref.count);
        uint64_t ref_min = tw_ref_min(&ref);
        uint64_t next = blitz__wheel_next_expiry(w);
        CHECK(next <= ref_min);
        /* UINT64_MAX also when the only deadlines left are UINT64_MAX. */
        if (ref.count == 0)
            CHECK(next == UINT64_MAX);
        /* Progress: with nothing due, the next expiry is in the future, so
         * a caller sleeping until it never spins. */
        if (ref_min > w->elapsed)
            CHECK(next > w->elapsed);
        if (op % 64 == 0)
            tw_check_structure(w);
    }
    /* The end of time: everything left fires. */
    blitz__timer_entry *out;
    stamp++;
    size_t want = tw_ref_advance(&ref, UINT64_MAX, expect, stamp);
    size_t n = blitz__wheel_advance(w, UINT64_MAX, &out);
    tw_check_fired(out, n, want, UINT64_MAX, pool, ids, expect, stamp);
    CHECK_EQ(blitz__wheel_count(w), 0);
    CHECK(blitz__wheel_next_expiry(w) == UINT64_MAX);
    tw_check_structure(w);
    /* The run must have exercised firing, not just churned. */
    CHECK_GT(fired_total + n, (size_t)ops / 20);
    tw_ref_free(&ref);
    free(expect);
    free(pool);
    free(w);
}

/* ---- tests -------------------------------------------------------------------- */

BLITZ_TEST(timer_wheel_differential) {
    long ops = test_scaled(1000000);
    /* Few entries (slots of one), many (crowded slots, long overflow), and
     * small steps only (every boundary crossed one at a time); from zero,
     * from odd places mid-range, and from just below the top of time, where
     * elapsed reaches UINT64_MAX mid-run. */
    tw_differential_run(1, 0, ops, 512, 1);
    tw_differential_run(2, 0, ops / 2, 64, 0);
    tw_differential_run(3, ((uint64_t)1 << 40) - 77, ops / 2, 2048, 1);
    tw_differential_run(4, 0x5555555555555555ull, ops / 4, 16, 1);
    tw_differential_run(5, UINT64_MAX - ((uint64_t)1 << 36), ops / 8, 512, 1);
    tw_differential_run(6, UINT64_MAX - 5000, ops / 8, 256, 0);
    return 0;
}

BLITZ_TEST(timer_wheel_edge_cases) {
    blitz__timer_wheel w;
    blitz__timer_entry a = BLITZ__TIMER_ENTRY_INIT, b = BLITZ__TIMER_ENTRY_INIT;
    blitz__timer_entry lv[BLITZ__WHEEL_LEVELS + 1];
    blitz__timer_entry *out;

    /* Empty. */
    blitz__wheel_init(&w, 1000);
    CHECK_EQ(blitz__wheel_count(&w), 0);
    CHECK(blitz__wheel_next_expiry(&w) == UINT64_MAX);
    CHECK_EQ(blitz__wheel_advance(&w, 2000, &out), 0);
    CHECK_NULL(out);
    CHECK_EQ(w.elapsed, 2000);

    /* deadline == elapsed: due at once, returned even by an advance to the
     * same tick. */
    a.deadline = 2000;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(blitz__wheel_count(&w), 1);
    CHECK_EQ(blitz__wheel_next_expiry(&w), 2000);
    CHECK_EQ(blitz__wheel_advance(&w, 2000, &out), 1);
    CHECK_PTR_EQ(out, &a);
    CHECK_NULL(a.next);
    CHECK_NULL(a.prev);
    CHECK_EQ(a.where, BLITZ__WHEEL_NOT_IN_WHEEL);
    CHECK_EQ(blitz__wheel_count(&w), 0);
    CHECK(blitz__wheel_next_expiry(&w) == UINT64_MAX);

    /* deadline < elapsed: next_expiry is the deadline itself; an advance
     * backwards still returns it and leaves elapsed alone. */
    a.deadline = 5;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(blitz__wheel_next_expiry(&w), 5);
    CHECK_EQ(blitz__wheel_advance(&w, 10, &out), 1);
    CHECK_PTR_EQ(out, &a);
    CHECK_EQ(w.elapsed, 2000);

    /* Remove twice; remove after it fired; the due list empties too. */
    a.deadline = 2100;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(blitz__wheel_remove(&w, &a), 1);
    CHECK_EQ(blitz__wheel_remove(&w, &a), 0);
    CHECK_EQ(blitz__wheel_count(&w), 0);
    CHECK(blitz__wheel_next_expiry(&w) == UINT64_MAX);
    a.deadline = 1;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(blitz__wheel_remove(&w, &a), 1);
    CHECK(blitz__wheel_next_expiry(&w) == UINT64_MAX);
    a.deadline = 2010;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(blitz__wheel_advance(&w, 2010, &out), 1);
    CHECK_EQ(blitz__wheel_remove(&w, &a), 0);
    CHECK_EQ(blitz__wheel_count(&w), 0);

    /* Re-insert after it fired: fires again, not a tick early. */
    a.deadline = 2500;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(blitz__wheel_advance(&w, 2499, &out), 0);
    CHECK_EQ(blitz__wheel_advance(&w, 2500, &out), 1);
    a.deadline = 9000;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(blitz__wheel_advance(&w, 8999, &out), 0);
    CHECK_EQ(blitz__wheel_advance(&w, 9000, &out), 1);
    CHECK_PTR_EQ(out, &a);

    /* Insert of an entry already in the wheel moves it. */
    a.deadline = 9100;
    blitz__wheel_insert(&w, &a);
    a.deadline = 9050;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(blitz__wheel_count(&w), 1);
    CHECK_EQ(blitz__wheel_next_expiry(&w), 9024); /* level 1: 9050's slot starts at 9024 */
    CHECK_EQ(blitz__wheel_advance(&w, 9049, &out), 0);
    CHECK_EQ(blitz__wheel_advance(&w, 9200, &out), 1);
    CHECK_NULL(out->next);

    /* next_expiry: exact at level 0, the slot start above, exact again once
     * the cascade brings the entry down. */
    blitz__wheel_init(&w, 0);
    a.deadline = 37;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(blitz__wheel_next_expiry(&w), 37);
    CHECK_EQ(blitz__wheel_remove(&w, &a), 1);
    a.deadline = 200; /* level 1, slot 3: starts at 192 */
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(a.where, 1 * BLITZ__WHEEL_SLOTS + 3);
    CHECK_EQ(blitz__wheel_next_expiry(&w), 192);
    CHECK_EQ(blitz__wheel_advance(&w, 192, &out), 0);
    CHECK_EQ(a.where, 0 * BLITZ__WHEEL_SLOTS + 200 % 64);
    CHECK_EQ(blitz__wheel_next_expiry(&w), 200);
    CHECK_EQ(blitz__wheel_advance(&w, 199, &out), 0);
    CHECK_EQ(blitz__wheel_advance(&w, 200, &out), 1);

    /* Exactly on a cascade boundary of every level. */
    for (unsigned k = 1; k <= BLITZ__WHEEL_LEVELS; k++) {
        uint64_t m = tw_pow64(k);
        blitz__wheel_init(&w, 0);
        a.deadline = m;
        b.deadline = m + 1;
        blitz__wheel_insert(&w, &a);
        blitz__wheel_insert(&w, &b);
        CHECK_LE(blitz__wheel_next_expiry(&w), m);
        CHECK_EQ(blitz__wheel_advance(&w, m - 1, &out), 0);
        CHECK_EQ(blitz__wheel_advance(&w, m, &out), 1);
        CHECK_PTR_EQ(out, &a);
        CHECK_EQ(blitz__wheel_next_expiry(&w), m + 1);
        CHECK_EQ(blitz__wheel_advance(&w, m + 1, &out), 1);
        CHECK_PTR_EQ(out, &b);
    }

    /* Occupancy: one entry per level and one in the overflow; each bit and
     * the overflow bound go when their last entry goes. */
    blitz__wheel_init(&w, 12345);
    for (unsigned k = 0; k <= BLITZ__WHEEL_LEVELS; k++) {
        blitz__timer_entry_init(&lv[k]);
        lv[k].deadline = 12345 + tw_pow64(k) + 1;
        blitz__wheel_insert(&w, &lv[k]);
    }
    b.deadline = lv[2].deadline + 1; /* shares lv[2]'s slot */
    blitz__wheel_insert(&w, &b);
    CHECK_EQ(b.where, lv[2].where);
    for (unsigned k = 0; k < BLITZ__WHEEL_LEVELS; k++) {
        CHECK_EQ(lv[k].where / BLITZ__WHEEL_SLOTS, k);
        CHECK_EQ(__builtin_popcountll(w.occupied[k]), 1);
    }
    CHECK_EQ(lv[BLITZ__WHEEL_LEVELS].where, BLITZ__WHEEL_WHERE_OVERFLOW);
    CHECK_EQ(blitz__wheel_count(&w), BLITZ__WHEEL_LEVELS + 2);
    CHECK_EQ(blitz__wheel_next_expiry(&w), lv[0].deadline);
    tw_check_structure(&w);
    CHECK_EQ(blitz__wheel_remove(&w, &lv[2]), 1);
    CHECK_EQ(__builtin_popcountll(w.occupied[2]), 1); /* b is still there */
    CHECK_EQ(blitz__wheel_remove(&w, &b), 1);
    CHECK(w.occupied[2] == 0);
    for (unsigned k = 0; k <= BLITZ__WHEEL_LEVELS; k++) {
        if (k != 2)
            CHECK_EQ(blitz__wheel_remove(&w, &lv[k]), 1);
        tw_check_structure(&w);
    }
    for (unsigned k = 0; k < BLITZ__WHEEL_LEVELS; k++)
        CHECK(w.occupied[k] == 0);
    CHECK_NULL(w.overflow);
    CHECK_EQ(blitz__wheel_count(&w), 0);
    CHECK(blitz__wheel_next_expiry(&w) == UINT64_MAX);
    CHECK_EQ(blitz__wheel_advance(&w, UINT64_MAX, &out), 0);
    CHECK_NULL(out);

    /* Deadline UINT64_MAX from zero: overflow, fires only at the very end. */
    blitz__wheel_init(&w, 0);
    a.deadline = UINT64_MAX;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(a.where, BLITZ__WHEEL_WHERE_OVERFLOW);
    CHECK(blitz__wheel_next_expiry(&w) > 0);
    CHECK(blitz__wheel_next_expiry(&w) <= UINT64_MAX - 1);
    CHECK_EQ(blitz__wheel_advance(&w, UINT64_MAX - 1, &out), 0);
    CHECK(blitz__wheel_next_expiry(&w) == UINT64_MAX); /* exact now: level 0 */
    CHECK_EQ(blitz__wheel_count(&w), 1);
    CHECK_EQ(blitz__wheel_advance(&w, UINT64_MAX, &out), 1);
    CHECK_PTR_EQ(out, &a);
    CHECK(w.elapsed == UINT64_MAX);
    /* At the end of time everything is due at once. */
    a.deadline = UINT64_MAX;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(a.where, BLITZ__WHEEL_WHERE_DUE);
    CHECK_EQ(blitz__wheel_advance(&w, UINT64_MAX, &out), 1);

    /* Near the top: every level's last slots, then the end. */
    blitz__wheel_init(&w, UINT64_MAX - 100);
    a.deadline = UINT64_MAX - 50;
    b.deadline = UINT64_MAX;
    blitz__wheel_insert(&w, &a);
    blitz__wheel_insert(&w, &b);
    CHECK_EQ(blitz__wheel_advance(&w, UINT64_MAX - 51, &out), 0);
    CHECK_EQ(blitz__wheel_advance(&w, UINT64_MAX - 50, &out), 1);
    CHECK_PTR_EQ(out, &a);
    CHECK(blitz__wheel_next_expiry(&w) == UINT64_MAX);
    CHECK_EQ(blitz__wheel_count(&w), 1);
    CHECK_EQ(blitz__wheel_advance(&w, UINT64_MAX, &out), 1);
    CHECK_PTR_EQ(out, &b);
    blitz__wheel_init(&w, UINT64_MAX - tw_pow64(5) - 3);
    a.deadline = UINT64_MAX - 1;
    blitz__wheel_insert(&w, &a);
    CHECK_EQ(a.where, BLITZ__WHEEL_WHERE_OVERFLOW);
    CHECK_EQ(blitz__wheel_advance(&w, UINT64_MAX - 2, &out), 0);
    CHECK_EQ(blitz__wheel_next_expiry(&w), UINT64_MAX - 1);
    CHECK_EQ(blitz__wheel_advance(&w, UINT64_MAX, &out), 1);
    CHECK_EQ(blitz__wheel_count(&w), 0);
    return 0;
}

/* Many entries on every level and far beyond, then a few huge jumps: the
 * right ones fire each time. Tick-by-tick advancing would never finish. */
BLITZ_TEST(timer_wheel_big_jumps) {
    size_t n = (size_t)test_scaled(100000);
    uint64_t rng = 42;
    blitz__timer_wheel *w = (blitz__timer_wheel *)malloc(sizeof *w);
    blitz__timer_entry *pool = (blitz__timer_entry *)malloc(n * sizeof *pool);
    CHECK(w && pool);
    uint64_t start = (uint64_t)1 << 20;
    blitz__wheel_init(w, start);
    for (size_t i = 0; i < n; i++) {
        blitz__timer_entry_init(&pool[i]);
        pool[i].deadline = tw_pick_deadline(&rng, start);
        blitz__wheel_insert(w, &pool[i]);
    }
    const uint64_t stops[] = {
        start + 1,         start + tw_pow64(2) + 5, start + tw_pow64(4), (uint64_t)1 << 31,
        (uint64_t)1 << 45, UINT64_MAX / 3,          UINT64_MAX - 1,      UINT64_MAX};
    size_t total = 0;
    for (size_t s = 0; s < sizeof stops / sizeof stops[0]; s++) {
        blitz__timer_entry *out;
        size_t got = blitz__wheel_advance(w, stops[s], &out);
        size_t want = 0;
        for (size_t i = 0; i < n; i++)
            want += pool[i].deadline <= stops[s] && (s == 0 || pool[i].deadline > stops[s - 1]);
        CHECK_EQ(got, want);
        for (blitz__timer_entry *e = out; e; e = e->next)
            CHECK(e->deadline <= stops[s] && (s == 0 || e->deadline > stops[s - 1]));
        total += got;
        CHECK_EQ(blitz__wheel_count(w), n - total);
        tw_check_structure(w);
    }
    CHECK_EQ(total, n);
    free(pool);
    free(w);
    return 0;
}

/* The runtime's pattern: sleep until next_expiry, advance to it. Every
 * entry fires exactly at its deadline, and each firing takes a bounded
 * number of wake-ups: at most one idle one per level cascaded (four) plus
 * one for the overflow. */
BLITZ_TEST(timer_wheel_drive_by_next_expiry) {
    size_t n = (size_t)test_scaled(20000);
    uint64_t rng = 7;
    blitz__timer_wheel *w = (blitz__timer_wheel *)malloc(sizeof *w);
    blitz__timer_entry *pool = (blitz__timer_entry *)malloc(n * sizeof *pool);
    CHECK(w && pool);
    blitz__wheel_init(w, 3);
    for (size_t i = 0; i < n; i++) {
        blitz__timer_entry_init(&pool[i]);
        /* Mostly below 2^36 so the run crosses overflow epochs, a few at
         * the end of time. */
        pool[i].deadline = tw_below(&rng, 50) == 0 ? UINT64_MAX - tw_below(&rng, 4)
                                                   : tw_below(&rng, (uint64_t)1 << 36);
        blitz__wheel_insert(w, &pool[i]);
    }
    size_t fired = 0, idle_wakes = 0;
    for (;;) {
        uint64_t t = blitz__wheel_next_expiry(w);
        if (t == UINT64_MAX && blitz__wheel_count(w) == 0)
            break;
        blitz__timer_entry *out;
        size_t got = blitz__wheel_advance(w, t, &out);
        for (blitz__timer_entry *e = out; e; e = e->next) {
            /* Not late: next_expiry is never past a deadline, so the
             * wheel is woken exactly at each one. */
            CHECK(e->deadline == t || e->deadline <= 3);
        }
        fired += got;
        if (got == 0) {
            CHECK_LE(++idle_wakes, BLITZ__WHEEL_LEVELS);
        } else {
            idle_wakes = 0;
        }
    }
    CHECK_EQ(fired, n);
    free(pool);
    free(w);
    return 0;
}
