/* Memory: every allocation blitz makes goes through BLITZ_MALLOC/BLITZ_FREE
 * (malloc/free unless the user defines both). Under BLITZ_FAULT_INJECT each
 * also takes its caller's site (the macros below), where fault.c may fail
 * it. */
#include "base.h"

#ifdef BLITZ_FAULT_INJECT
#define BLITZ__SITE_PARAM , const char *site
#define BLITZ__ALLOC_FAULT()          \
    do {                              \
        if (blitz__fault_alloc(site)) \
            return NULL;              \
    } while (0)
#else
#define BLITZ__SITE_PARAM
#define BLITZ__ALLOC_FAULT() ((void)0)
#endif

BLITZ_PRIVATE void *blitz__malloc(size_t size BLITZ__SITE_PARAM) {
    BLITZ__ALLOC_FAULT();
    return BLITZ_MALLOC(size);
}

BLITZ_PRIVATE void *blitz__calloc(size_t size BLITZ__SITE_PARAM) {
    BLITZ__ALLOC_FAULT();
    void *p = BLITZ_MALLOC(size);
    if (p)
        memset(p, 0, size);
    return p;
}

BLITZ_PRIVATE void blitz__free(void *p) {
    if (p)
        BLITZ_FREE(p);
}

/* `size` bytes aligned to `align` (a power of two). *raw receives what must
 * be passed to blitz__free. The default allocator uses posix_memalign (not
 * on Windows, whose _aligned_malloc needs its own free), which
 * gives the unused head back; a user allocator is over-asked and trimmed
 * here. */
BLITZ_PRIVATE void *blitz__alloc_aligned(size_t size, size_t align, void **raw BLITZ__SITE_PARAM) {
    BLITZ__ALLOC_FAULT();
#if defined(BLITZ__DEFAULT_ALLOCATOR) && !BLITZ__WIN32
    void *p = NULL;
    if (posix_memalign(&p, align, size) != 0)
        return NULL;
    *raw = p;
    return p;
#else
    if (size > SIZE_MAX - align)
        return NULL;
    char *p = (char *)BLITZ_MALLOC(size + align);
    if (!p)
        return NULL;
    *raw = p;
    return (void *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
#endif
}

#ifdef BLITZ_FAULT_INJECT
/* A macro does not expand inside its own expansion: these call the
 * functions above with the caller's site. */
#define blitz__malloc(size) blitz__malloc((size), BLITZ__SITE)
#define blitz__calloc(size) blitz__calloc((size), BLITZ__SITE)
#define blitz__alloc_aligned(size, align, raw) \
    blitz__alloc_aligned((size), (align), (raw), BLITZ__SITE)
#endif

/* Growable buffer on BLITZ_MALLOC/BLITZ_FREE (there is no realloc hook). */
BLITZ_PRIVATE int blitz__grow_buffer(char **buf, size_t *cap, size_t used, size_t need) {
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return BLITZ_ENOMEM;
        ncap *= 2;
    }
    char *n = (char *)blitz__malloc(ncap);
    if (!n)
        return BLITZ_ENOMEM;
    if (used)
        memcpy(n, *buf, used);
    blitz__free(*buf);
    *buf = n;
    *cap = ncap;
    return 0;
}
