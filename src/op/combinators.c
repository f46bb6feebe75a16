/* Combinators over ops: join-all, race, select. */
#include "../time/time.h"

BLITZ_API void blitz_combo_reset(blitz_combo *c) {
    if (!c)
        return;
    /* The starting position survives, so a select loop that resets its
     * combo each round still rotates through its ops. */
    uint32_t start = c->blitz__start, n = c->blitz__n;
    const blitz_op *ops = c->blitz__ops;
    memset(c, 0, sizeof *c);
    c->blitz__start = start;
    /* What blitz_op_race and the others were given. */
    c->blitz__ops = ops;
    c->blitz__n = n;
}

static uint64_t blitz__combo_all(size_t n) {
    return n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1);
}

/* Checks the arguments; on misuse the combinator is READY with an error. */
static int blitz__combo_valid(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    size_t i;
    if (!c)
        return 0;
    c->error = BLITZ_EINVAL;
    c->winner = -1;
    if (!cx || !ops || n == 0 || n > BLITZ_COMBO_MAX)
        return 0;
    for (i = 0; i < n; i++)
        if (!ops[i].poll)
            return 0;
    c->error = 0;
    c->blitz__ops = ops;
    c->blitz__n = (uint32_t)n;
    return 1;
}

/* The task's cancel of a combinator: every op still registered. */
static void blitz__combo_withdraw(blitz_cx *cx, void *combo) {
    blitz_combo *c = (blitz_combo *)combo;
    if (c->blitz__ops)
        blitz_combo_cancel(cx, c, c->blitz__ops, c->blitz__n);
}

/* After polling its ops, the combinator is what the task waits in, in
 * place of the op that polled last; once READY, what the task recorded
 * before it (select: itself while ops stay registered). */
static blitz_poll blitz__combo_result(blitz_cx *cx, blitz_combo *c, blitz_poll r, int keep,
                                      blitz_cancel_fn prev_cancel, void *prev_op) {
    if (r == BLITZ_PENDING || keep)
        blitz_cx_pending(cx, blitz__combo_withdraw, c);
    else
        blitz_cx_pending(cx, prev_cancel, prev_op);
    return r;
}

/* Polls the unfinished ops once, from the rotating start. With `first`,
 * stops at the first op that finishes and returns its index; otherwise
 * polls them all. Returns -1 when none finished (or `first` is 0). */
static int blitz__combo_poll(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n,
                             int first) {
    size_t k, start = c->blitz__start % n;
    c->blitz__start = (uint32_t)((start + 1) % n);
    for (k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        uint64_t bit = (uint64_t)1 << i;
        if (c->blitz__done & bit)
            continue;
        if (ops[i].poll(cx, ops[i].arg) == BLITZ_READY) {
            c->blitz__done |= bit;
            if (first)
                return (int)i;
        }
    }
    return -1;
}

BLITZ_API blitz_poll blitz_join_all(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    if (!blitz__combo_valid(cx, c, ops, n))
        return BLITZ_READY;
    blitz_cancel_fn prev_cancel;
    void *prev_op;
    blitz__cx_pending_get(cx, &prev_cancel, &prev_op);
    blitz__combo_poll(cx, c, ops, n, 0);
    blitz_poll r = c->blitz__done == blitz__combo_all(n) ? BLITZ_READY : BLITZ_PENDING;
    return blitz__combo_result(cx, c, r, 0, prev_cancel, prev_op);
}

BLITZ_API void blitz_combo_cancel(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    size_t i;
    if (!c || !ops || n > BLITZ_COMBO_MAX)
        return;
    for (i = 0; i < n; i++) {
        uint64_t bit = (uint64_t)1 << i;
        if (c->blitz__done & bit)
            continue;
        if (ops[i].cancel)
            ops[i].cancel(cx, ops[i].arg);
        c->blitz__done |= bit;
    }
}

/* select and race: the first op that finishes wins. */
static blitz_poll blitz__combo_first(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n,
                                     int race) {
    if (!blitz__combo_valid(cx, c, ops, n))
        return BLITZ_READY;
    if (c->blitz__done == blitz__combo_all(n))
        return BLITZ_READY; /* nothing left: winner -1 */
    blitz_cancel_fn prev_cancel;
    void *prev_op;
    blitz__cx_pending_get(cx, &prev_cancel, &prev_op);
    int won = blitz__combo_poll(cx, c, ops, n, 1);
    if (won < 0)
        return blitz__combo_result(cx, c, BLITZ_PENDING, 0, prev_cancel, prev_op);
    c->winner = won;
    if (race)
        blitz_combo_cancel(cx, c, ops, n);
    int rest = !race && c->blitz__done != blitz__combo_all(n);
    return blitz__combo_result(cx, c, BLITZ_READY, rest, prev_cancel, prev_op);
}

BLITZ_API blitz_poll blitz_select(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_first(cx, c, ops, n, 0);
}

BLITZ_API blitz_poll blitz_race(blitz_cx *cx, blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_first(cx, c, ops, n, 1);
}

/* ---- the combinators as ops ---- */

static blitz_op blitz__combo_op(blitz_poll_fn poll, blitz_combo *c, const blitz_op *ops, size_t n) {
    if (c) {
        c->blitz__ops = ops;
        /* Too many stays too many (the poll reports BLITZ_EINVAL). */
        c->blitz__n = n > BLITZ_COMBO_MAX ? BLITZ_COMBO_MAX + 1 : (uint32_t)n;
    }
    return blitz_op_make(poll, blitz__combo_withdraw, c);
}
static blitz_poll blitz__join_all_op_poll(blitz_cx *cx, void *c) {
    blitz_combo *combo = (blitz_combo *)c;
    return blitz_join_all(cx, combo, combo ? combo->blitz__ops : NULL, combo ? combo->blitz__n : 0);
}
static blitz_poll blitz__race_op_poll(blitz_cx *cx, void *c) {
    blitz_combo *combo = (blitz_combo *)c;
    return blitz_race(cx, combo, combo ? combo->blitz__ops : NULL, combo ? combo->blitz__n : 0);
}
static blitz_poll blitz__select_op_poll(blitz_cx *cx, void *c) {
    blitz_combo *combo = (blitz_combo *)c;
    return blitz_select(cx, combo, combo ? combo->blitz__ops : NULL, combo ? combo->blitz__n : 0);
}
BLITZ_API blitz_op blitz_op_join_all(blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_op(blitz__join_all_op_poll, c, ops, n);
}
BLITZ_API blitz_op blitz_op_race(blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_op(blitz__race_op_poll, c, ops, n);
}
BLITZ_API blitz_op blitz_op_select(blitz_combo *c, const blitz_op *ops, size_t n) {
    return blitz__combo_op(blitz__select_op_poll, c, ops, n);
}
