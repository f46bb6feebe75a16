/* The model-checking build of blitz's atomics layer (src/platform/atomic.h)
 * on Relacy (Debian relacy-dev): the same types and functions, each access a
 * Relacy atomic, so a check that includes a protocol's real source file
 * explores its interleavings and the weak-memory outcomes C11 allows.
 *
 * A check is one C++ file that includes this header, declares the few
 * neighbours the protocol's file calls (the stand-ins below the atomics),
 * includes the real file from src/, and states the protocol's property in a
 * Relacy test. The real file's own #include is emptied by defining its
 * guard first. Plain fields that a protocol hands from thread to thread
 * are rl::var (model_slot) in the stand-in structs, so a missing
 * happens-before on them is reported as a data race. */
#ifndef BLITZ_MODEL_H
#define BLITZ_MODEL_H

/* System headers first: Relacy redefines new, delete, malloc and free. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <unistd.h>
#include <string>

#include <relacy/relacy.hpp>

/* ---- the atomics layer ------------------------------------------------------ */

#define BLITZ__RELAXED 0
#define BLITZ__ACQUIRE 2
#define BLITZ__RELEASE 3
#define BLITZ__ACQ_REL 4
#define BLITZ__SEQ_CST 5

static inline rl::memory_order model_mo(int o) {
    switch (o) {
    case BLITZ__RELAXED:
        return rl::mo_relaxed;
    case BLITZ__ACQUIRE:
        return rl::mo_acquire;
    case BLITZ__RELEASE:
        return rl::mo_release;
    case BLITZ__ACQ_REL:
        return rl::mo_acq_rel;
    default:
        return rl::mo_seq_cst;
    }
}
/* As in atomic.h: the failure order is never stronger nor a release. */
static inline rl::memory_order model_fail_mo(int o) {
    return model_mo(o == BLITZ__ACQ_REL   ? BLITZ__ACQUIRE
                    : o == BLITZ__RELEASE ? BLITZ__RELAXED
                                          : o);
}

template <typename T> struct model_atomic { rl::atomic<T> v; };
typedef model_atomic<uint32_t> blitz__atomic_u32;
typedef model_atomic<uint64_t> blitz__atomic_u64;
typedef model_atomic<void *> blitz__atomic_ptr;

/* Public structs hold plain integers that the code treats as atomics
 * (sync_internal.h's blitz__atomic_u64_at, the u32_field functions). A
 * check binds each such field to a Relacy atomic; every access through the
 * layer is redirected to it (the plain field itself is never touched). */
struct model_binding {
    const void *plain;
    void *atomic;
};
static model_binding model_bindings[16];
static int model_nbindings;
static inline void model_unbind_all() {
    model_nbindings = 0;
}
template <typename T> static inline void model_bind(const void *plain, model_atomic<T> *a) {
    RL_ASSERT(model_nbindings < 16);
    model_bindings[model_nbindings].plain = plain;
    model_bindings[model_nbindings].atomic = a;
    model_nbindings++;
}
template <typename T> static inline model_atomic<T> *model_resolve(const model_atomic<T> *a) {
    for (int i = 0; i < model_nbindings; i++)
        if (model_bindings[i].plain == (const void *)a)
            return (model_atomic<T> *)model_bindings[i].atomic;
    return const_cast<model_atomic<T> *>(a);
}

template <typename T>
static inline T model_load(const model_atomic<T> *a, int o, rl::debug_info_param d) {
    return model_resolve(a)->v.load(model_mo(o), d);
}
template <typename T, typename X>
static inline void model_store(model_atomic<T> *a, X x, int o, rl::debug_info_param d) {
    model_resolve(a)->v.store((T)x, model_mo(o), d);
}
template <typename T, typename X>
static inline T model_swap(model_atomic<T> *a, X x, int o, rl::debug_info_param d) {
    return model_resolve(a)->v.exchange((T)x, model_mo(o), d);
}
template <typename T, typename X>
static inline int model_cas(model_atomic<T> *a, T *expected, X desired, int o, bool weak,
                            rl::debug_info_param d) {
    a = model_resolve(a);
    if (weak)
        return a->v.compare_exchange_weak(*expected, (T)desired, model_mo(o), d, model_fail_mo(o),
                                          d);
    return a->v.compare_exchange_strong(*expected, (T)desired, model_mo(o), d, model_fail_mo(o), d);
}

/* Macros, so that a report names the protocol's line (Relacy's $ is the
 * caller's debug info). */
#define blitz__u32_load(a, o)           model_load((a), (o), $)
#define blitz__u64_load(a, o)           model_load((a), (o), $)
#define blitz__ptr_load(a, o)           model_load((a), (o), $)
#define blitz__u32_store(a, x, o)       model_store((a), (x), (o), $)
#define blitz__u64_store(a, x, o)       model_store((a), (x), (o), $)
#define blitz__ptr_store(a, x, o)       model_store((a), (void *)(x), (o), $)
#define blitz__u32_swap(a, x, o)        model_swap((a), (x), (o), $)
#define blitz__u64_swap(a, x, o)        model_swap((a), (x), (o), $)
#define blitz__ptr_swap(a, x, o)        model_swap((a), (void *)(x), (o), $)
#define blitz__u32_cas(a, e, x, o)      model_cas((a), (e), (x), (o), false, $)
#define blitz__u64_cas(a, e, x, o)      model_cas((a), (e), (x), (o), false, $)
#define blitz__ptr_cas(a, e, x, o)      model_cas((a), (e), (void *)(x), (o), false, $)
#define blitz__u32_cas_weak(a, e, x, o) model_cas((a), (e), (x), (o), true, $)
#define blitz__u64_cas_weak(a, e, x, o) model_cas((a), (e), (x), (o), true, $)
#define blitz__ptr_cas_weak(a, e, x, o) model_cas((a), (e), (void *)(x), (o), true, $)
#define blitz__u32_fetch_add(a, x, o)   model_resolve(a)->v.fetch_add((x), model_mo(o), $)
#define blitz__u64_fetch_add(a, x, o)   model_resolve(a)->v.fetch_add((x), model_mo(o), $)
#define blitz__u32_fetch_sub(a, x, o)   model_resolve(a)->v.fetch_sub((x), model_mo(o), $)
#define blitz__u64_fetch_sub(a, x, o)   model_resolve(a)->v.fetch_sub((x), model_mo(o), $)
#define blitz__u32_fetch_or(a, x, o)    model_resolve(a)->v.fetch_or((x), model_mo(o), $)
#define blitz__u64_fetch_or(a, x, o)    model_resolve(a)->v.fetch_or((x), model_mo(o), $)
#define blitz__u32_fetch_and(a, x, o)   model_resolve(a)->v.fetch_and((x), model_mo(o), $)
#define blitz__u64_fetch_and(a, x, o)   model_resolve(a)->v.fetch_and((x), model_mo(o), $)
/* The plain 32-bit words of public structs. */
#define blitz__u32_field_load(p, o)     model_load((const blitz__atomic_u32 *)(const void *)(p), (o), $)
#define blitz__u32_field_store(p, x, o) model_store((blitz__atomic_u32 *)(void *)(p), (x), (o), $)
#define blitz__u32_field_cas(p, e, x, o) \
    model_cas((blitz__atomic_u32 *)(void *)(p), (e), (x), (o), false, $)
/* Single writer: a relaxed load and a release store, as in atomic.h. */
#define blitz__u64_bump(a, n) \
    model_store((a), model_load((a), BLITZ__RELAXED, $) + (n), BLITZ__RELEASE, $)
#define blitz__fence_seq_cst() rl::atomic_thread_fence(rl::mo_seq_cst, $)
#define blitz__cpu_relax()     rl::yield(1, $)
#define blitz__yield()         rl::yield(1, $) /* the platform's thread yield */
/* Bit scans of a nonzero word, as in atomic.h. */
#define blitz__ctz64(x)      ((unsigned)__builtin_ctzll(x))
#define blitz__clz64(x)      ((unsigned)__builtin_clzll(x))
#define blitz__popcount64(x) ((unsigned)__builtin_popcountll(x))

/* ---- what base.h gives every module ----------------------------------------- */

#define BLITZ_PRIVATE   static __attribute__((unused))
#define BLITZ_API       static __attribute__((unused))
#define BLITZ_ASSERT(c) RL_ASSERT(c)
#define BLITZ__ALIGNED
#define BLITZ__LIKELY(x)   __builtin_expect(!!(x), 1)
#define BLITZ__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define BLITZ__STAT(expr)  ((void)0)

/* A plain field that passes from thread to thread: every access is checked
 * for a happens-before edge with the previous one. */
template <typename T> struct model_slot {
    T value;
    rl::var<int> tracker; /* Relacy checks the accesses; value holds the data */
    model_slot &operator=(T x) {
        tracker($) = 1;
        value = x;
        return *this;
    }
    operator T() const {
        (void)(int)tracker($);
        return value;
    }
};

/* ---- running a check ---------------------------------------------------------- */

/* Exhaustive search unless `bound` is nonzero: then every schedule with at
 * most `bound` preemptions (the only way some checks finish), one more
 * under MODEL_DEEP=1 (make model-check). Prints a TAP line, and Relacy's
 * report (the failing execution's history with MODEL_HISTORY=1) on a
 * failure; returns 0 when the property held in every explored execution. */
template <typename Test> static int model_run(const char *name, unsigned bound = 0) {
    rl::test_params p;
    const char *deep = getenv("MODEL_DEEP");
    if (bound && deep && *deep == '1')
        bound++;
    p.search_type =
        bound ? rl::fair_context_bound_scheduler_type : rl::fair_full_search_scheduler_type;
    if (bound)
        p.context_bound = bound;
    p.output_history = getenv("MODEL_HISTORY") != nullptr;
    p.execution_depth_limit = 5000;
    /* Relacy reports on std::cout, and replaces operator new while it runs
     * (so no string stream): its report goes to a file, shown on failure. */
    std::fflush(stdout);
    std::cout.flush();
    FILE *report = tmpfile();
    int saved = dup(1);
    if (report)
        dup2(fileno(report), 1);
    bool ok = rl::simulate<Test>(p);
    std::cout.flush();
    std::fflush(stdout);
    if (report) {
        dup2(saved, 1);
        if (!ok) {
            char buf[4096];
            size_t n;
            rewind(report);
            while ((n = fread(buf, 1, sizeof buf, report)) > 0)
                fwrite(buf, 1, n, stdout);
        }
        fclose(report);
    }
    close(saved);
    std::printf("%s - model %s (%llu executions%s)\n", ok ? "ok" : "not ok", name,
                (unsigned long long)p.stop_iteration,
                bound ? (deep && *deep == '1' ? ", preemption bound +1" : ", preemption-bounded")
                      : ", exhaustive");
    std::fflush(stdout);
    return ok ? 0 : 1;
}

#endif
