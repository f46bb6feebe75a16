/* The platform layer's internal API for every layer above it:
 * configuration defaults and limits, linkage, locks and parkers. The only
 * system includes are in platform.h; everything here is private (blitz__
 * prefix) and may change at any time. */
#ifndef BLITZ__PLATFORM_BASE_H
#define BLITZ__PLATFORM_BASE_H
#ifdef __cplusplus
#error \
    "blitz.h: the implementation is C11. Define BLITZ_IMPLEMENTATION in a .c file compiled as C; the declarations compile as C++ in every other file."
#endif

#include "platform.h"
#include "atomic.h"

#include "../api/blitz_api.h"

/* ---- configuration ------------------------------------------------------ */

#ifndef BLITZ_PRIVATE
#if BLITZ__MSVC
#define BLITZ_PRIVATE static
#else
#define BLITZ_PRIVATE static __attribute__((unused))
#endif
#endif

#ifndef BLITZ_ASSERT
#if defined(__MINGW32__) && !defined(NDEBUG)
/* mingw-w64's assert calls an _assert not declared noreturn: without the
 * unreachable, gcc's flow analysis takes the failed branch as continuing
 * (and -Warray-bounds sees an index the assertion ruled out). */
#define BLITZ_ASSERT(c) ((c) ? (void)0 : (assert(c), __builtin_unreachable()))
#else
#define BLITZ_ASSERT(c) assert(c)
#endif
#endif

/* Debug builds check handles (handle_check.c). The rule of the checked
 * BLITZ_END in blitz_api.h, applied in the implementation's file. */
#ifndef BLITZ_DEBUG
#ifdef NDEBUG
#define BLITZ__CHECK_HANDLES 0
#else
#define BLITZ__CHECK_HANDLES 1
#endif
#elif BLITZ_DEBUG
#define BLITZ__CHECK_HANDLES 1
#else
#define BLITZ__CHECK_HANDLES 0
#endif

#if defined(BLITZ_MALLOC) != defined(BLITZ_FREE)
#error "define both BLITZ_MALLOC and BLITZ_FREE, or neither"
#endif
#ifndef BLITZ_MALLOC
#define BLITZ_MALLOC(size)       malloc(size)
#define BLITZ_FREE(ptr)          free(ptr)
#define BLITZ__DEFAULT_ALLOCATOR 1
#endif

/* Where a test makes an allocation fail: the test program defines it (to
 * nonzero for a failure at `site`) before including blitz. */
#ifndef BLITZ__FAULT
#define BLITZ__FAULT(site) 0
#endif

/* Fault injection (fault.c): the sites that may fail on request. Without
 * BLITZ_FAULT_INJECT each is the plain expression. BLITZ__SYS wraps a
 * system call that returns -1 and sets errno; BLITZ__SYS_LEN the length
 * of a read or write; BLITZ__CHAOS(n) is true one time in n under chaos
 * scheduling. */
#ifdef BLITZ_FAULT_INJECT
#define BLITZ__STR_(x)      #x
#define BLITZ__STR(x)       BLITZ__STR_(x)
#define BLITZ__SITE         __FILE__ ":" BLITZ__STR(__LINE__)
#define BLITZ__SYS(call)    (blitz__fault_sys(BLITZ__SITE) ? -1 : (call))
#define BLITZ__SYS_LEN(len) blitz__fault_len(BLITZ__SITE, (len))
#define BLITZ__CHAOS(n)     blitz__fault_chaos(n)
BLITZ_PRIVATE int blitz__fault_alloc(const char *site);
BLITZ_PRIVATE int blitz__fault_sys(const char *site);
BLITZ_PRIVATE size_t blitz__fault_len(const char *site, size_t len);
BLITZ_PRIVATE int blitz__fault_chaos(uint32_t one_in);
#else
#define BLITZ__SYS(call)    (call)
#define BLITZ__SYS_LEN(len) (len)
#define BLITZ__CHAOS(n)     0
#endif

#ifndef BLITZ_LOCAL_QUEUE_CAPACITY
#define BLITZ_LOCAL_QUEUE_CAPACITY 256
#endif
#ifndef BLITZ_BUDGET_PER_TICK
#define BLITZ_BUDGET_PER_TICK 128
#endif
/* Task polls between two non-blocking looks at epoll by a thread that
 * runs tasks (Tokio's event interval; see blitz__io_between_ticks). A
 * count at least this large makes the next look due. */
#define BLITZ__IO_EVENT_INTERVAL 61u
#ifndef BLITZ_MAX_LIFO_POLLS_PER_TICK
#define BLITZ_MAX_LIFO_POLLS_PER_TICK 3
#endif

#ifndef BLITZ_CACHE_LINE
#if defined(__x86_64__) || defined(__aarch64__) || defined(__powerpc64__) || defined(_M_X64) || \
    defined(_M_ARM64)
/* Adjacent-line prefetchers pull pairs of 64-byte lines (seed 002 table). */
#define BLITZ_CACHE_LINE 128
#elif defined(__s390x__)
#define BLITZ_CACHE_LINE 256
#elif defined(__arm__) || defined(__mips__) || defined(__sparc__)
#define BLITZ_CACHE_LINE 32
#else
#define BLITZ_CACHE_LINE 64
#endif
#endif

_Static_assert(BLITZ_MAX_WORKERS >= 1 && BLITZ_MAX_WORKERS <= 64,
               "BLITZ_MAX_WORKERS must be 1..64: the parked-worker bitmap is one 64-bit word");
_Static_assert(BLITZ_LOCAL_QUEUE_CAPACITY >= 2 && BLITZ_LOCAL_QUEUE_CAPACITY <= 16384 &&
                   (BLITZ_LOCAL_QUEUE_CAPACITY & (BLITZ_LOCAL_QUEUE_CAPACITY - 1)) == 0,
               "BLITZ_LOCAL_QUEUE_CAPACITY must be a power of two in 2..16384");
_Static_assert(BLITZ_BUDGET_PER_TICK >= 1, "BLITZ_BUDGET_PER_TICK must be positive");
_Static_assert(BLITZ_MAX_LIFO_POLLS_PER_TICK >= 1 && BLITZ_MAX_LIFO_POLLS_PER_TICK <= 1024,
               "BLITZ_MAX_LIFO_POLLS_PER_TICK must be 1..1024");
_Static_assert(BLITZ_CACHE_LINE >= 8 && BLITZ_CACHE_LINE <= 4096 &&
                   (BLITZ_CACHE_LINE & (BLITZ_CACHE_LINE - 1)) == 0,
               "BLITZ_CACHE_LINE must be a power of two in 8..4096");
_Static_assert(BLITZ_MAX_STATE_SIZE >= 1 && BLITZ_MAX_STATE_SIZE <= (1u << 30),
               "BLITZ_MAX_STATE_SIZE must be 1..2^30 bytes");

/* Global-queue batches (seed 000): min(64, max(4, len / workers)). */
#define BLITZ__GLOBAL_BATCH_MIN  4
#define BLITZ__GLOBAL_BATCH_MAX  64
#define BLITZ__BATCH_BUFFER_SIZE 32
/* Adaptive global-queue interval: clamp(1 ms / EWMA(poll ns), 8, 255). */
#define BLITZ__INTERVAL_MIN        8
#define BLITZ__INTERVAL_MAX        255
#define BLITZ__INTERVAL_TARGET_NS  1000000u
#define BLITZ__INITIAL_AVG_POLL_NS 50000u
#define BLITZ__HELP_WAIT_MAX_NS    10000000u
#define BLITZ__DEFAULT_SPIN        64u

#if BLITZ__MSVC
/* __declspec(align) takes a literal: BLITZ_CACHE_LINE must be a plain
 * number there. */
#define BLITZ__ALIGNED     __declspec(align(BLITZ_CACHE_LINE))
#define BLITZ__LIKELY(x)   (x)
#define BLITZ__UNLIKELY(x) (x)
#define BLITZ__PRINTF(f, a)
#define BLITZ__NOINLINE      __declspec(noinline)
#define BLITZ__ALWAYS_INLINE __forceinline
#define BLITZ__THREAD_LOCAL  __declspec(thread)
#else
#define BLITZ__ALIGNED     __attribute__((aligned(BLITZ_CACHE_LINE)))
#define BLITZ__LIKELY(x)   __builtin_expect(!!(x), 1)
#define BLITZ__UNLIKELY(x) __builtin_expect(!!(x), 0)
/* A printf-like function's format check: mingw-w64's plain `printf`
 * archetype is msvcrt's, without %zu (blitz asks for the C99 one);
 * clang's is the C99 one already. */
#if defined(__MINGW32__) && !defined(__clang__)
#define BLITZ__PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#else
#define BLITZ__PRINTF(f, a) __attribute__((format(printf, f, a)))
#endif
/* Keeps a rarely taken path out of its caller. */
#define BLITZ__NOINLINE      __attribute__((noinline))
/* One body compiled into each of a few variants (a constant argument). */
#define BLITZ__ALWAYS_INLINE inline __attribute__((always_inline))
#define BLITZ__THREAD_LOCAL  _Thread_local
#endif

#ifdef BLITZ_NO_STATS
/* Not evaluated, but what it names counts as used (no unused warnings). */
#define BLITZ__STAT(expr) ((void)sizeof((expr), 0))
#else
#define BLITZ__STAT(expr) (expr)
#endif

/* ---- threads and parking (thread.c) -------------------------------------- */

/* The per-thread context (core/core.h) that thread.c keeps in the one
 * thread-local the runtime has. */
typedef struct blitz__context blitz__context;

/* Threads, once-only initialisation and per-thread values with a
 * destructor at thread exit: pthreads, or Win32 (platform/win32.c). */
#if BLITZ__WIN32
typedef HANDLE blitz__thread;
typedef INIT_ONCE blitz__once;
#define BLITZ__ONCE_STATIC INIT_ONCE_STATIC_INIT
typedef DWORD blitz__tls_key;
/* A per-thread value's destructor: fiber-local storage calls it as a
 * WINAPI function. */
#define BLITZ__TLS_DTOR WINAPI
#else
typedef pthread_t blitz__thread;
typedef pthread_once_t blitz__once;
#define BLITZ__ONCE_STATIC PTHREAD_ONCE_INIT
typedef pthread_key_t blitz__tls_key;
#define BLITZ__TLS_DTOR
#endif
typedef void(BLITZ__TLS_DTOR *blitz__tls_dtor)(void *);
BLITZ_PRIVATE int blitz__thread_start(blitz__thread *t, void *(*fn)(void *), void *arg);
BLITZ_PRIVATE void blitz__thread_join(blitz__thread t);
BLITZ_PRIVATE void blitz__yield(void);

#if BLITZ__HAS_FUTEX
/* A futex lock that spins briefly first: the critical sections it guards
 * are a few pointer moves, far shorter than a sleep and a wake. */
typedef struct {
    blitz__atomic_u32 state; /* 0 free, 1 held, 2 held with sleepers */
} blitz__mutex;
#else
typedef pthread_mutex_t blitz__mutex;
#endif
/* ---- parking and idle workers (thread.c, idle.c) -------------------------- */

#define BLITZ__UNPARKED 0u
#define BLITZ__PARKED   1u
#define BLITZ__NOTIFIED 2u
/* Parked inside the I/O backend: unpark writes the driver's wake fd. */
#define BLITZ__PARKED_DRIVER 3u

#if BLITZ__HAS_KQUEUE
/* A parker's wake_fd that names a kqueue to trigger (its EVFILT_USER
 * knote, ident BLITZ__KQ_WAKE_IDENT) instead of a descriptor to write:
 * below -1, so it is never a descriptor. */
#define BLITZ__WAKE_KQ(kq)   (-2 - (kq))
#define BLITZ__KQ_WAKE_IDENT 1u
#endif

typedef struct blitz__parker {
    blitz__atomic_u32 state; /* UNPARKED / PARKED / NOTIFIED / PARKED_DRIVER; the futex word */
    /* The I/O driver's eventfd or pipe, BLITZ__WAKE_KQ(kq), its completion
     * port (Windows), or BLITZ__WAKE_NONE. */
    blitz__wake_t wake_fd;
#if !BLITZ__HAS_FUTEX
    pthread_mutex_t lock;
    pthread_cond_t cond;
#endif
} blitz__parker;

/* ---- handle checks (handle_check.c) --------------------------------------- */

/* Magic words of live heap handles; their last release overwrites them. */
#define BLITZ__MAGIC_CHAN      0x6368616eu
#define BLITZ__MAGIC_BROADCAST 0x62636173u
#define BLITZ__MAGIC_WATCH     0x77617463u
#define BLITZ__MAGIC_GROUP     0x67727570u
#define BLITZ__MAGIC_SOCKET    0x736f636bu
#define BLITZ__MAGIC_DEAD      0xdeadbeefu

BLITZ_PRIVATE void blitz__handle_misuse(const char *func, const char *what);
/* Frees `raw`, in a debug build after the quarantine (see handle_check.c). */
BLITZ_PRIVATE void blitz__free_handle(void *raw);

#if BLITZ__CHECK_HANDLES
/* A struct member (no semicolon after it): the magic word. */
#define BLITZ__MAGIC_MEMBER      uint32_t blitz__magic;
#define BLITZ__MAGIC_SET(obj, m) ((obj)->blitz__magic = (m))
/* Stops the program when `obj` (not NULL) is no live handle of its kind;
 * `what` names the kind and the release ("channel used after its last
 * release"). */
#define BLITZ__MAGIC_CHECK(obj, m, what)                          \
    do {                                                          \
        if ((obj) && BLITZ__UNLIKELY((obj)->blitz__magic != (m))) \
            blitz__handle_misuse(__func__, what);                 \
    } while (0)
#else
#define BLITZ__MAGIC_MEMBER
#define BLITZ__MAGIC_SET(obj, m)         ((void)0)
#define BLITZ__MAGIC_CHECK(obj, m, what) ((void)0)
#endif

#endif
