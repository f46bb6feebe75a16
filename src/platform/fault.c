/* Fault injection (BLITZ_FAULT_INJECT): a test build fails allocations and
 * system calls on request and perturbs scheduling, so that the paths that
 * handle failure run. Without the macro none of this exists and the sites
 * compile to the plain calls (base.h).
 *
 * The environment, read once per process, says what to inject:
 *   BLITZ_FAULT_ALLOC=N         the N-th counted allocation fails (1-based)
 *   BLITZ_FAULT_SYSCALL=N:ERR   the N-th counted system call fails with ERR
 *                               (EAGAIN EINTR ECONNRESET EMFILE ENOMEM EBUSY)
 *                               or, ERR being SHORT, the N-th counted read
 *                               or write is cut to half its length
 *   BLITZ_FAULT_SITE=FILE:LINE  count only the calls of that site
 *   BLITZ_FAULT_TRACE=1         print each site on first reach
 *   BLITZ_FAULT_CHAOS=SEED      chaos scheduling (nonzero seed)
 * Each injection prints "blitz fault: inject KIND SITE #N" on stderr, each
 * traced site "blitz fault: site KIND SITE": tools/fault_sweep.py reads them.
 *
 * The counters are the one process-wide mutable state blitz has, and only
 * in this build: "the N-th allocation" is a property of the process. */
#include "base.h"

#ifdef BLITZ_FAULT_INJECT

#define BLITZ__FAULT_SITES_MAX 1024

static struct {
    pthread_once_t once;
    uint64_t alloc_at, sys_at; /* 0: never */
    int sys_err;               /* an errno, or 0 for a short transfer */
    const char *site;          /* NULL: every site counts */
    int trace;
    uint64_t chaos_seed;
    blitz__atomic_u64 allocs, syscalls, shorts, chaos_threads;
    blitz__atomic_ptr seen[BLITZ__FAULT_SITES_MAX];
} blitz__fault = {PTHREAD_ONCE_INIT, 0, 0, 0, NULL, 0, 0, {0}, {0}, {0}, {0}, {{0}}};

static uint64_t blitz__fault_env_u64(const char *name) {
    const char *v = getenv(name);
    return v ? strtoull(v, NULL, 0) : 0;
}

static void blitz__fault_init(void) {
    static const struct {
        const char *name;
        int err;
    } errs[] = {{"EAGAIN", EAGAIN}, {"EINTR", EINTR},   {"ECONNRESET", ECONNRESET},
                {"EMFILE", EMFILE}, {"ENOMEM", ENOMEM}, {"EBUSY", EBUSY},
                {"SHORT", 0}};
    blitz__fault.alloc_at = blitz__fault_env_u64("BLITZ_FAULT_ALLOC");
    const char *sys = getenv("BLITZ_FAULT_SYSCALL");
    if (sys) {
        char *end;
        uint64_t n = strtoull(sys, &end, 0);
        for (size_t i = 0; *end == ':' && i < sizeof errs / sizeof errs[0]; i++)
            if (strcmp(end + 1, errs[i].name) == 0) {
                blitz__fault.sys_at = n;
                blitz__fault.sys_err = errs[i].err;
            }
        if (!blitz__fault.sys_at && n)
            fprintf(stderr, "blitz fault: BLITZ_FAULT_SYSCALL=%s is not N:ERR\n", sys);
    }
    blitz__fault.site = getenv("BLITZ_FAULT_SITE");
    blitz__fault.trace = blitz__fault_env_u64("BLITZ_FAULT_TRACE") != 0;
    blitz__fault.chaos_seed = blitz__fault_env_u64("BLITZ_FAULT_CHAOS");
}

static void blitz__fault_ready(void) {
    (void)pthread_once(&blitz__fault.once, blitz__fault_init);
}

/* Prints a site the first time any thread reaches it. */
static void blitz__fault_trace(const char *kind, const char *site) {
    for (size_t i = 0; i < BLITZ__FAULT_SITES_MAX; i++) {
        void *seen = blitz__ptr_load(&blitz__fault.seen[i], BLITZ__ACQUIRE);
        if (!seen) {
            /* Acquire/release: a slot is read only after its string was
             * published, and a lost race rereads the winner's. */
            if (blitz__ptr_cas(&blitz__fault.seen[i], &seen, (void *)(uintptr_t)site,
                               BLITZ__ACQ_REL)) {
                fprintf(stderr, "blitz fault: site %s %s\n", kind, site);
                return;
            }
        }
        if (strcmp((const char *)seen, site) == 0)
            return;
    }
}

/* Whether this call of `site` is the one to fail; `counter` counts them. */
static int blitz__fault_hit(const char *kind, const char *site, blitz__atomic_u64 *counter,
                            uint64_t at) {
    if (blitz__fault.trace)
        blitz__fault_trace(kind, site);
    if (!at || (blitz__fault.site && strcmp(blitz__fault.site, site) != 0))
        return 0;
    uint64_t n = blitz__u64_fetch_add(counter, 1, BLITZ__RELAXED) + 1;
    if (n != at)
        return 0;
    fprintf(stderr, "blitz fault: inject %s %s #%llu\n", kind, site, (unsigned long long)n);
    return 1;
}

BLITZ_PRIVATE int blitz__fault_alloc(const char *site) {
    blitz__fault_ready();
    return blitz__fault_hit("alloc", site, &blitz__fault.allocs, blitz__fault.alloc_at);
}

BLITZ_PRIVATE int blitz__fault_sys(const char *site) {
    blitz__fault_ready();
    int err = blitz__fault.sys_err;
    if (!blitz__fault_hit("sys", site, &blitz__fault.syscalls, err ? blitz__fault.sys_at : 0))
        return 0;
    errno = err;
    return 1;
}

BLITZ_PRIVATE size_t blitz__fault_len(const char *site, size_t len) {
    blitz__fault_ready();
    uint64_t at = blitz__fault.sys_err == 0 ? blitz__fault.sys_at : 0;
    if (len < 2 || !blitz__fault_hit("short", site, &blitz__fault.shorts, at))
        return len;
    return len / 2;
}

/* Under chaos scheduling, true one time in `one_in` (per-thread random). */
BLITZ_PRIVATE int blitz__fault_chaos(uint32_t one_in) {
    static BLITZ__THREAD_LOCAL uint64_t state;
    if (!state) {
        blitz__fault_ready();
        if (!blitz__fault.chaos_seed)
            return 0;
        uint64_t t = blitz__u64_fetch_add(&blitz__fault.chaos_threads, 1, BLITZ__RELAXED);
        state = (blitz__fault.chaos_seed ^ (t * 0x9e3779b97f4a7c15ull)) | 1;
    }
    /* xorshift64* */
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (uint32_t)((state * 0x2545f4914f6cdd1dull) >> 32) % one_in == 0;
}

#endif
