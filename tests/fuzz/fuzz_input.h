/* Shared by the libFuzzer targets: the implementation in this translation
 * unit (the targets call the header's private parts), a byte reader over
 * the fuzzer's input, and a check that aborts with the failing line, which
 * libFuzzer reports as a crash and saves. */
#define BLITZ_IMPLEMENTATION
#include "../../blitz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_CHECK(cond)                                                               \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

typedef struct {
    const uint8_t *p;
    size_t left;
} fz_input;

/* The next byte, or 0 once the input is used up. */
static inline uint8_t fz_u8(fz_input *in) {
    if (!in->left)
        return 0;
    in->left--;
    return *in->p++;
}

static inline uint64_t fz_bytes(fz_input *in, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | fz_u8(in);
    return v;
}

/* ---- a simulated task -------------------------------------------------------
 * A poll context whose waker counts its wakes and its live clones, for
 * driving async ops by hand, one poll at a time, on this thread. */

typedef struct {
    int wakes; /* since the caller last cleared it */
    int refs;  /* clones not yet woken or dropped */
} fz_sim_wk;

static void fz_sim_wk_wake(const void *d) {
    fz_sim_wk *w = (fz_sim_wk *)d;
    w->wakes++;
    w->refs--;
}
static void fz_sim_wk_wake_by_ref(const void *d) {
    ((fz_sim_wk *)d)->wakes++;
}
static void fz_sim_wk_drop(const void *d) {
    ((fz_sim_wk *)d)->refs--;
}
static blitz_waker fz_sim_wk_clone(const void *d);
static const blitz_waker_vtable fz_sim_wk_vtable = {fz_sim_wk_wake, fz_sim_wk_wake_by_ref,
                                                    fz_sim_wk_clone, fz_sim_wk_drop};
static blitz_waker fz_sim_wk_clone(const void *d) {
    ((fz_sim_wk *)d)->refs++;
    blitz_waker w = {d, &fz_sim_wk_vtable};
    return w;
}

typedef struct {
    fz_sim_wk wk;
    blitz__context ctx;
    blitz_cx cx;
} fz_sim;

static inline void fz_sim_init(fz_sim *t) {
    memset(t, 0, sizeof *t);
    blitz_waker w = {&t->wk, &fz_sim_wk_vtable};
    blitz__cx_init_waker(&t->cx, &t->ctx, w);
}
