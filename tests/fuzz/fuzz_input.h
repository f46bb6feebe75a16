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
