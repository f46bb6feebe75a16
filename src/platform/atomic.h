/* The one atomics layer. Nothing else in blitz names a raw atomic: every
 * shared word is one of the wrapper types below and is touched only through
 * these functions, so a test build can swap the layer for an instrumented
 * one (tests/model/model.h is the one on the Relacy model checker).
 * GCC/Clang __atomic builtins work in C and C++ alike and are seen by
 * ThreadSanitizer.
 *
 * Orders: BLITZ__RELAXED, BLITZ__ACQUIRE, BLITZ__RELEASE, BLITZ__ACQ_REL,
 * BLITZ__SEQ_CST. The ordering of every non-obvious use is argued at the
 * call site. */

#if !defined(__GNUC__) && !defined(__clang__)
#error "blitz needs GCC or Clang __atomic builtins (MSVC support is not built yet)"
#endif

#define BLITZ__RELAXED __ATOMIC_RELAXED
#define BLITZ__ACQUIRE __ATOMIC_ACQUIRE
#define BLITZ__RELEASE __ATOMIC_RELEASE
#define BLITZ__ACQ_REL __ATOMIC_ACQ_REL
#define BLITZ__SEQ_CST __ATOMIC_SEQ_CST

typedef struct {
    uint32_t v;
} blitz__atomic_u32;
typedef struct {
    uint64_t v;
} blitz__atomic_u64;
typedef struct {
    void *v;
} blitz__atomic_ptr;

/* Failure order of a CAS may not be stronger than success nor a release. */
#define BLITZ__CAS_FAIL_ORDER(o) \
    ((o) == BLITZ__ACQ_REL ? BLITZ__ACQUIRE : (o) == BLITZ__RELEASE ? BLITZ__RELAXED : (o))

#define BLITZ__DEFINE_ATOMIC(T, name)                                                           \
    static inline T blitz__##name##_load(const blitz__atomic_##name *a, int o) {                \
        return __atomic_load_n(&a->v, o);                                                       \
    }                                                                                           \
    static inline void blitz__##name##_store(blitz__atomic_##name *a, T x, int o) {             \
        __atomic_store_n(&a->v, x, o);                                                          \
    }                                                                                           \
    static inline T blitz__##name##_swap(blitz__atomic_##name *a, T x, int o) {                 \
        return __atomic_exchange_n(&a->v, x, o);                                                \
    }                                                                                           \
    /* On failure *expected receives the current value. */                                      \
    static inline int blitz__##name##_cas(blitz__atomic_##name *a, T *expected, T desired,      \
                                          int o) {                                              \
        return __atomic_compare_exchange_n(&a->v, expected, desired, 0, o,                      \
                                           BLITZ__CAS_FAIL_ORDER(o));                           \
    }                                                                                           \
    static inline int blitz__##name##_cas_weak(blitz__atomic_##name *a, T *expected, T desired, \
                                               int o) {                                         \
        return __atomic_compare_exchange_n(&a->v, expected, desired, 1, o,                      \
                                           BLITZ__CAS_FAIL_ORDER(o));                           \
    }

BLITZ__DEFINE_ATOMIC(uint32_t, u32)
BLITZ__DEFINE_ATOMIC(uint64_t, u64)
BLITZ__DEFINE_ATOMIC(void *, ptr)

#define BLITZ__DEFINE_ATOMIC_ARITH(T, name)                                          \
    static inline T blitz__##name##_fetch_add(blitz__atomic_##name *a, T x, int o) { \
        return __atomic_fetch_add(&a->v, x, o);                                      \
    }                                                                                \
    static inline T blitz__##name##_fetch_sub(blitz__atomic_##name *a, T x, int o) { \
        return __atomic_fetch_sub(&a->v, x, o);                                      \
    }                                                                                \
    static inline T blitz__##name##_fetch_or(blitz__atomic_##name *a, T x, int o) {  \
        return __atomic_fetch_or(&a->v, x, o);                                       \
    }                                                                                \
    static inline T blitz__##name##_fetch_and(blitz__atomic_##name *a, T x, int o) { \
        return __atomic_fetch_and(&a->v, x, o);                                      \
    }

BLITZ__DEFINE_ATOMIC_ARITH(uint32_t, u32)
BLITZ__DEFINE_ATOMIC_ARITH(uint64_t, u64)

/* A 32-bit word inside a public struct (the types above are private). */
static inline uint32_t blitz__u32_field_load(const uint32_t *p, int o) {
    return __atomic_load_n(p, o);
}
static inline void blitz__u32_field_store(uint32_t *p, uint32_t x, int o) {
    __atomic_store_n(p, x, o);
}
static inline int blitz__u32_field_cas(uint32_t *p, uint32_t *expected, uint32_t desired, int o) {
    return __atomic_compare_exchange_n(p, expected, desired, 0, o, BLITZ__CAS_FAIL_ORDER(o));
}

/* A 16-bit word shared with the kernel (io_uring's buffer ring tail). */
static inline void blitz__u16_field_store(uint16_t *p, uint16_t x, int o) {
    __atomic_store_n(p, x, o);
}

/* A counter written by one thread and read by others: a plain load+store
 * (no locked RMW) is enough because there is a single writer. The store is
 * release (free on x86 and cheap elsewhere) so that a reader that acquires
 * the count also sees what the writer did before (see blitz__count_freed). */
static inline void blitz__u64_bump(blitz__atomic_u64 *a, uint64_t n) {
    __atomic_store_n(&a->v, __atomic_load_n(&a->v, BLITZ__RELAXED) + n, BLITZ__RELEASE);
}

/* gcc's ThreadSanitizer does not model fences and says so (-Wtsan) at
 * every use; the header must build warning-free there too. */
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define BLITZ__TSAN_FENCE_QUIET 1
#endif
static inline void blitz__fence_seq_cst(void) {
#ifdef BLITZ__TSAN_FENCE_QUIET
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
    __atomic_thread_fence(BLITZ__SEQ_CST);
#ifdef BLITZ__TSAN_FENCE_QUIET
#pragma GCC diagnostic pop
#endif
}

static inline void blitz__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
