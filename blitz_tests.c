/* The test program: one translation unit with the implementation, so the
 * white-box tests can reach internal (static) functions.
 *
 *   ./blitz_tests            run every test, each in a child process, TAP output
 *   ./blitz_tests --list     list the tests
 *   ./blitz_tests NAME...    run the named tests in this process (for gdb)
 *
 * BLITZ_TEST_TIMEOUT_MULT multiplies every timeout (sanitizer builds).
 * On Windows (tools/windows_check.sh) the tests of what is not built there
 * yet are left out: BLITZ_TEST_LIST_WINDOWS names the generated list, the
 * full one minus tests/windows_skip.txt. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define BLITZ_IMPLEMENTATION
/* Allocation failures the tests inject at the library's BLITZ__FAULT
 * sites (tests/test_io_nomem.c), and delays at sites where a thread may be
 * preempted (tests/test_withdraw.c). */
enum {
    TEST_FAULT_queue_grow,
    TEST_FAULT_sock_alloc,
    TEST_FAULT_spawn_armed,
    TEST_FAULT_poll_want,
    TEST_FAULT_pool_rec,
    TEST_FAULT_SITES
};
static int test_fault(int site);
#define BLITZ__FAULT(site) test_fault(TEST_FAULT_##site)
#ifdef BLITZ_TEST_HEADER
#include BLITZ_TEST_HEADER
#else
#include "blitz.h"
#endif

#include <time.h>
#if defined(_WIN32)
#include BLITZ_TEST_LIST_WINDOWS
#define TEST_LIST BLITZ_WINDOWS_TEST_LIST
#else
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#define TEST_LIST BLITZ_TEST_LIST
#endif

#include "tests/test.h"
#include "tests/list.h"

#include "tests/test_basics.c"
#include "tests/test_spawn.c"
#include "tests/test_waker.c"
#include "tests/test_cancel.c"
#include "tests/test_shutdown.c"
#include "tests/test_stats.c"
#include "tests/test_internal.c"
#include "tests/test_iocp.c"
#include "tests/test_addr.c"
#include "tests/test_timer_wheel.c"
#include "tests/test_time.c"
#include "tests/test_op.c"
#include "tests/test_sync.c"
#include "tests/test_chan.c"
#if !defined(_WIN32) /* sockets, pipes, streams: not on Windows yet */
#include "tests/test_io.c"
#include "tests/test_io_threads.c"
#include "tests/test_io_multishot.c"
#include "tests/test_io_connect_limit.c"
#include "tests/test_io_cancel_safe.c"
#include "tests/test_io_misuse.c"
#include "tests/test_io_edges.c"
#include "tests/test_io_release.c"
#include "tests/test_io_nomem.c"
#include "tests/test_io_recv_buf.c"
#else
/* The fault sites' delays only (test_io_nomem.c, POSIX, injects the rest). */
static atomic_int test_fault_delay_ms[TEST_FAULT_SITES];
static int test_fault(int site) {
    int delay = atomic_load(&test_fault_delay_ms[site]);
    if (delay > 0)
        tu_sleep_ms(delay);
    return 0;
}
#endif
#include "tests/test_sock.c"
#include "tests/test_pipe.c"
#include "tests/test_pool.c"
#include "tests/test_stream_sock.c"
#include "tests/test_connect_host.c"
#include "tests/test_withdraw.c"
#if !defined(_WIN32)
#include "tests/test_stream.c"
#include "tests/test_stream_file.c"
#include "tests/test_op_io.c"
#include "tests/test_serve.c"
#endif
#include "tests/test_metrics.c"
#include "tests/test_observe.c"

#if defined(__SANITIZE_ADDRESS__)
#define TEST_HAS_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_HAS_LSAN 1
#endif
#endif
#ifdef TEST_HAS_LSAN
#include <sanitizer/lsan_interface.h>
/* Nonzero when LeakSanitizer finds a leak (reported on stderr). */
static int test_leak_check(void) {
    return __lsan_do_recoverable_leak_check();
}
#else
static int test_leak_check(void) {
    return 0;
}
#endif

typedef struct {
    const char *name;
    int (*fn)(void);
    long timeout_ms;
} test_entry;

#define TEST_ENTRY(name, timeout) {#name, test_##name, timeout},
static const test_entry tests[] = {TEST_LIST(TEST_ENTRY)};
#undef TEST_ENTRY
#define NUM_TESTS (sizeof tests / sizeof tests[0])

#if defined(_WIN32)
static double now_s(void) {
    LARGE_INTEGER c, f;
    QueryPerformanceCounter(&c);
    QueryPerformanceFrequency(&f);
    return (double)c.QuadPart / (double)f.QuadPart;
}

/* Runs one test in a child process (this program, `--child NAME`); kills
 * it when it overruns. */
static int run_forked(const test_entry *t, double mult) {
    fflush(stdout);
    fflush(stderr);
    char exe[MAX_PATH], cmd[MAX_PATH + 256];
    DWORD n = GetModuleFileNameA(NULL, exe, sizeof exe);
    if (n == 0 || n >= sizeof exe)
        return -1;
    snprintf(cmd, sizeof cmd, "\"%s\" --child %s", exe, t->name);
    STARTUPINFOA si;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    PROCESS_INFORMATION pi;
    /* wine under load sometimes fails a start with ERROR_INTERNAL_ERROR
     * (1359) before the child runs a line: a failed start is no test
     * result, so it is tried again a few times. */
    int started = 0;
    for (int attempt = 0; attempt < 5 && !started; attempt++) {
        started = CreateProcessA(exe, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi) != 0;
        if (!started) {
            fprintf(stderr, "# %s: CreateProcess failed (%lu)\n", t->name,
                    (unsigned long)GetLastError());
            Sleep(200);
        }
    }
    if (!started)
        return -1;
    CloseHandle(pi.hThread);
    int rc = 1;
    DWORD ms = (DWORD)((double)t->timeout_ms * mult);
    if (WaitForSingleObject(pi.hProcess, ms) == WAIT_TIMEOUT) {
        TerminateProcess(pi.hProcess, 255);
        WaitForSingleObject(pi.hProcess, INFINITE);
        fprintf(stderr, "# %s: timed out after %lu ms\n", t->name, (unsigned long)ms);
    } else {
        DWORD code = 1;
        GetExitCodeProcess(pi.hProcess, &code);
        rc = code == 0 ? 0 : 1;
        if (code != 0)
            fprintf(stderr, "# %s: exit code 0x%lx\n", t->name, (unsigned long)code);
    }
    CloseHandle(pi.hProcess);
    return rc;
}
#else
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs one test in a child process; kills it when it overruns. */
static int run_forked(const test_entry *t, double mult) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        alarm(0);
        /* A failing check aborts; no core files in the working tree. */
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        int rc = t->fn() == 0 ? 0 : 1;
        /* _exit skips LeakSanitizer's exit-time check: run it here. */
        if (rc == 0 && test_leak_check() != 0)
            rc = 1;
        _exit(rc);
    }
    double deadline = now_s() + (double)t->timeout_ms * mult / 1000.0;
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            if (WIFEXITED(status))
                return WEXITSTATUS(status) == 0 ? 0 : 1;
            fprintf(stderr, "# %s: killed by signal %d\n", t->name, WTERMSIG(status));
            return 1;
        }
        if (now_s() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "# %s: timed out after %ld ms\n", t->name,
                    (long)((double)t->timeout_ms * mult));
            return 1;
        }
        usleep(2000);
    }
}
#endif

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--proc-child") == 0)
        return tpc_child_main(argc, argv);
#if defined(_WIN32)
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        /* A crash ends this process with its code, no error dialog or
         * debugger (wine starts one otherwise). */
        SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
        for (size_t i = 0; i < NUM_TESTS; i++)
            if (strcmp(argv[2], tests[i].name) == 0)
                return tests[i].fn() == 0 && test_leak_check() == 0 ? 0 : 1;
        return 2;
    }
#endif
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < NUM_TESTS; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    if (argc > 1) {
        int failed = 0;
        for (int a = 1; a < argc; a++) {
            size_t i;
            for (i = 0; i < NUM_TESTS; i++)
                if (strcmp(argv[a], tests[i].name) == 0)
                    break;
            if (i == NUM_TESTS) {
                fprintf(stderr, "no test named %s\n", argv[a]);
                return 2;
            }
            int rc = tests[i].fn();
            printf("%s %s\n", rc == 0 ? "ok" : "not ok", tests[i].name);
            failed |= rc != 0;
        }
        return failed;
    }
    const char *m = getenv("BLITZ_TEST_TIMEOUT_MULT");
    double mult = m ? atof(m) : 1.0;
    if (mult <= 0)
        mult = 1.0;
    /* BLITZ_TEST_FILTER=text: only the tests whose name contains it. */
    const char *filter = getenv("BLITZ_TEST_FILTER");
    /* BLITZ_TEST_EXCLUDE=prefix: not the tests whose name starts with it. */
    const char *exclude = getenv("BLITZ_TEST_EXCLUDE");
    size_t exclude_len = exclude ? strlen(exclude) : 0;
    /* BLITZ_TEST_SHARD=i/n: only the tests whose index is i modulo n (for
     * runs split over several processes). */
    unsigned shard = 0, shards = 1;
    const char *sh = getenv("BLITZ_TEST_SHARD");
    if (sh && (sscanf(sh, "%u/%u", &shard, &shards) != 2 || shards == 0 || shard >= shards)) {
        fprintf(stderr, "BLITZ_TEST_SHARD=%s: want i/n with i < n\n", sh);
        return 2;
    }
    int failed = 0;
    printf("1..%zu\n", NUM_TESTS);
    for (size_t i = 0; i < NUM_TESTS; i++) {
        if ((filter && !strstr(tests[i].name, filter)) || i % shards != shard ||
            (exclude_len && strncmp(tests[i].name, exclude, exclude_len) == 0))
            continue;
        double t0 = now_s();
        int rc = run_forked(&tests[i], mult);
        printf("%s %zu - %s # %.2fs\n", rc == 0 ? "ok" : "not ok", i + 1, tests[i].name,
               now_s() - t0);
        fflush(stdout);
        failed += rc != 0;
    }
    if (failed)
        printf("# %d of %zu tests failed\n", failed, NUM_TESTS);
    return failed ? 1 : 0;
}
