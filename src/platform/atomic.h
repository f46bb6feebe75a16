/* The one atomics layer. Nothing else in blitz names a raw atomic: every
 * shared word is one of the wrapper types below and is touched only through
 * these functions, so a test build can swap the layer for an instrumented
 * one (tests/model/model.h is the one on the Relacy model checker).
 * GCC/Clang (clang-cl too) use the __atomic builtins, which work in C and
 * C++ alike and are seen by ThreadSanitizer; MSVC uses its interlocked
 * intrinsics (BLITZ__ATOMICS_MSVC below), on x64 only.
 *
 * Orders: BLITZ__RELAXED, BLITZ__ACQUIRE, BLITZ__RELEASE, BLITZ__ACQ_REL,
 * BLITZ__SEQ_CST. The ordering of every non-obvious use is argued at the
 * call site. */

#if BLITZ__ATOMICS_MSVC
/* x64 only. Its argument, which every function below relies on:
 * - Every _Interlocked* intrinsic is a LOCK-prefixed instruction (XCHG is
 *   locked by itself): a full hardware barrier, and MSVC treats each as a
 *   full compiler barrier, so each gives seq_cst whatever order is asked.
 * - An aligned, naturally sized plain load or store is one MOV, atomic on
 *   x64. x64 keeps loads ordered with loads and stores with stores and
 *   never moves a store above an earlier load (TSO), so a MOV load is an
 *   acquire and a MOV store a release in hardware; only the compiler may
 *   reorder them. That is stopped by _ReadWriteBarrier after an acquiring
 *   load and before a releasing store, not by volatile: x64 builds default
 *   to /volatile:iso, and nothing here depends on /volatile:ms. The
 *   volatile access only keeps the compiler from splitting, merging or
 *   dropping the MOV.
 * - A seq_cst store is an XCHG (a MOV store may pass a later load: the
 *   store-load reordering TSO allows), so seq_cst loads stay plain MOVs,
 *   the mapping the C++ memory model's x86 proofs use.
 * - The seq_cst fence is __faststorefence (a locked no-op on the stack,
 *   full barrier like MFENCE for ordinary memory), with compiler barriers
 *   around it.
 * ARM64 and ARM64EC need LDAR/STLR (__ldar*, __stlr*) and the _acq/_rel
 * interlocked variants; 32-bit x86 has no single-MOV 64-bit access. Both
 * are refused rather than built on an argument that does not hold there. */
#if !defined(_M_X64) && !defined(__x86_64__)
#error \
    "blitz: the MSVC atomics mapping is written and argued for x64 only (not ARM64, ARM64EC or x86); build with clang-cl there"
#endif
#if defined(_M_ARM64EC)
#error \
    "blitz: the MSVC atomics mapping is written and argued for x64 only (not ARM64EC); build with clang-cl there"
#endif

#define BLITZ__RELAXED 0
#define BLITZ__ACQUIRE 2
#define BLITZ__RELEASE 3
#define BLITZ__ACQ_REL 4
#define BLITZ__SEQ_CST 5

typedef struct {
    uint32_t v;
} blitz__atomic_u32;
typedef struct {
    uint64_t v;
} blitz__atomic_u64;
typedef struct {
    void *v;
} blitz__atomic_ptr;

/* Plain MOV loads and stores: see the ordering argument above. A relaxed
 * access needs no compiler barrier (a relaxed store may still be moved
 * after a later plain access, as C11 allows). */
#define BLITZ__MSVC_LOAD(T, p, o)    \
    T r_ = *(T const volatile *)(p); \
    if ((o) != BLITZ__RELAXED)       \
        _ReadWriteBarrier();         \
    return r_
#define BLITZ__MSVC_STORE(p, x, o) \
    if ((o) != BLITZ__RELAXED)     \
        _ReadWriteBarrier();       \
    *(p) = (x)

static inline uint32_t blitz__u32_load(const blitz__atomic_u32 *a, int o) {
    BLITZ__MSVC_LOAD(uint32_t, &a->v, o);
}
static inline uint64_t blitz__u64_load(const blitz__atomic_u64 *a, int o) {
    BLITZ__MSVC_LOAD(uint64_t, &a->v, o);
}
static inline void *blitz__ptr_load(const blitz__atomic_ptr *a, int o) {
    BLITZ__MSVC_LOAD(void *, &a->v, o);
}
/* volatile long / __int64 / void *: what the intrinsics take (long is 32
 * bits on Windows). */
#define BLITZ__L32(p)  ((volatile long *)(p))
#define BLITZ__L64(p)  ((volatile __int64 *)(p))
#define BLITZ__LPTR(p) ((void *volatile *)(p))

static inline void blitz__u32_store(blitz__atomic_u32 *a, uint32_t x, int o) {
    if (o == BLITZ__SEQ_CST) {
        (void)_InterlockedExchange(BLITZ__L32(&a->v), (long)x);
        return;
    }
    BLITZ__MSVC_STORE((volatile uint32_t *)&a->v, x, o);
}
static inline void blitz__u64_store(blitz__atomic_u64 *a, uint64_t x, int o) {
    if (o == BLITZ__SEQ_CST) {
        (void)_InterlockedExchange64(BLITZ__L64(&a->v), (__int64)x);
        return;
    }
    BLITZ__MSVC_STORE((volatile uint64_t *)&a->v, x, o);
}
static inline void blitz__ptr_store(blitz__atomic_ptr *a, void *x, int o) {
    if (o == BLITZ__SEQ_CST) {
        (void)_InterlockedExchangePointer(BLITZ__LPTR(&a->v), x);
        return;
    }
    BLITZ__MSVC_STORE((void *volatile *)&a->v, x, o);
}

/* Read-modify-writes: one interlocked intrinsic each, seq_cst (above), so
 * the order argument is unused. */
static inline uint32_t blitz__u32_swap(blitz__atomic_u32 *a, uint32_t x, int o) {
    (void)o;
    return (uint32_t)_InterlockedExchange(BLITZ__L32(&a->v), (long)x);
}
static inline uint64_t blitz__u64_swap(blitz__atomic_u64 *a, uint64_t x, int o) {
    (void)o;
    return (uint64_t)_InterlockedExchange64(BLITZ__L64(&a->v), (__int64)x);
}
static inline void *blitz__ptr_swap(blitz__atomic_ptr *a, void *x, int o) {
    (void)o;
    return _InterlockedExchangePointer(BLITZ__LPTR(&a->v), x);
}
/* On failure *expected receives the current value. LOCK CMPXCHG never
 * fails spuriously, so the weak form is the strong one. */
static inline int blitz__u32_cas(blitz__atomic_u32 *a, uint32_t *expected, uint32_t desired,
                                 int o) {
    (void)o;
    uint32_t seen =
        (uint32_t)_InterlockedCompareExchange(BLITZ__L32(&a->v), (long)desired, (long)*expected);
    if (seen == *expected)
        return 1;
    *expected = seen;
    return 0;
}
static inline int blitz__u64_cas(blitz__atomic_u64 *a, uint64_t *expected, uint64_t desired,
                                 int o) {
    (void)o;
    uint64_t seen = (uint64_t)_InterlockedCompareExchange64(BLITZ__L64(&a->v), (__int64)desired,
                                                            (__int64)*expected);
    if (seen == *expected)
        return 1;
    *expected = seen;
    return 0;
}
static inline int blitz__ptr_cas(blitz__atomic_ptr *a, void **expected, void *desired, int o) {
    (void)o;
    void *seen = _InterlockedCompareExchangePointer(BLITZ__LPTR(&a->v), desired, *expected);
    if (seen == *expected)
        return 1;
    *expected = seen;
    return 0;
}
#define blitz__u32_cas_weak blitz__u32_cas
#define blitz__u64_cas_weak blitz__u64_cas
#define blitz__ptr_cas_weak blitz__ptr_cas

/* Unsigned arithmetic wraps: adding 0 - x subtracts x. */
static inline uint32_t blitz__u32_fetch_add(blitz__atomic_u32 *a, uint32_t x, int o) {
    (void)o;
    return (uint32_t)_InterlockedExchangeAdd(BLITZ__L32(&a->v), (long)x);
}
static inline uint32_t blitz__u32_fetch_sub(blitz__atomic_u32 *a, uint32_t x, int o) {
    (void)o;
    return (uint32_t)_InterlockedExchangeAdd(BLITZ__L32(&a->v), (long)(0u - x));
}
static inline uint32_t blitz__u32_fetch_or(blitz__atomic_u32 *a, uint32_t x, int o) {
    (void)o;
    return (uint32_t)_InterlockedOr(BLITZ__L32(&a->v), (long)x);
}
static inline uint32_t blitz__u32_fetch_and(blitz__atomic_u32 *a, uint32_t x, int o) {
    (void)o;
    return (uint32_t)_InterlockedAnd(BLITZ__L32(&a->v), (long)x);
}
static inline uint64_t blitz__u64_fetch_add(blitz__atomic_u64 *a, uint64_t x, int o) {
    (void)o;
    return (uint64_t)_InterlockedExchangeAdd64(BLITZ__L64(&a->v), (__int64)x);
}
static inline uint64_t blitz__u64_fetch_sub(blitz__atomic_u64 *a, uint64_t x, int o) {
    (void)o;
    return (uint64_t)_InterlockedExchangeAdd64(BLITZ__L64(&a->v), (__int64)(0u - x));
}
static inline uint64_t blitz__u64_fetch_or(blitz__atomic_u64 *a, uint64_t x, int o) {
    (void)o;
    return (uint64_t)_InterlockedOr64(BLITZ__L64(&a->v), (__int64)x);
}
static inline uint64_t blitz__u64_fetch_and(blitz__atomic_u64 *a, uint64_t x, int o) {
    (void)o;
    return (uint64_t)_InterlockedAnd64(BLITZ__L64(&a->v), (__int64)x);
}

/* A 32-bit word inside a public struct (the types above are private). */
static inline uint32_t blitz__u32_field_load(const uint32_t *p, int o) {
    BLITZ__MSVC_LOAD(uint32_t, p, o);
}
static inline void blitz__u32_field_store(uint32_t *p, uint32_t x, int o) {
    if (o == BLITZ__SEQ_CST) {
        (void)_InterlockedExchange(BLITZ__L32(p), (long)x);
        return;
    }
    BLITZ__MSVC_STORE((volatile uint32_t *)p, x, o);
}
static inline int blitz__u32_field_cas(uint32_t *p, uint32_t *expected, uint32_t desired, int o) {
    return blitz__u32_cas((blitz__atomic_u32 *)p, expected, desired, o);
}
/* (The io_uring buffer ring's 16-bit tail has no user on Windows.) */

/* A single writer's counter (see the GCC form below): MOV load, release
 * MOV store. */
static inline void blitz__u64_bump(blitz__atomic_u64 *a, uint64_t n) {
    blitz__u64_store(a, blitz__u64_load(a, BLITZ__RELAXED) + n, BLITZ__RELEASE);
}

static inline void blitz__fence_seq_cst(void) {
    _ReadWriteBarrier();
    __faststorefence();
    _ReadWriteBarrier();
}

static inline void blitz__cpu_relax(void) {
    _mm_pause();
}

/* Bit scans of a nonzero word. Portable popcount: POPCNT is not on every
 * x64 CPU, and MSVC emits it without a check. */
static inline unsigned blitz__ctz64(uint64_t x) {
    unsigned long i;
    (void)_BitScanForward64(&i, x);
    return (unsigned)i;
}
static inline unsigned blitz__clz64(uint64_t x) {
    unsigned long i;
    (void)_BitScanReverse64(&i, x);
    return 63u - (unsigned)i;
}
static inline unsigned blitz__popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555u);
    x = (x & 0x3333333333333333u) + ((x >> 2) & 0x3333333333333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fu;
    return (unsigned)((x * 0x0101010101010101u) >> 56);
}

#else /* GCC and Clang */

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

/* Bit scans of a nonzero word. */
static inline unsigned blitz__ctz64(uint64_t x) {
    return (unsigned)__builtin_ctzll(x);
}
static inline unsigned blitz__clz64(uint64_t x) {
    return (unsigned)__builtin_clzll(x);
}
static inline unsigned blitz__popcount64(uint64_t x) {
    return (unsigned)__builtin_popcountll(x);
}

#endif /* BLITZ__ATOMICS_MSVC */
