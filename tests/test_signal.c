/* Signals (included by tests/test_pool.c). Signals are sent to this
 * process with kill (any thread may take it) and raise (the calling
 * thread takes it).
 *
 * On Windows the signals are console control events, and no event can be
 * raised without a console (GenerateConsoleCtrlEvent fails under a
 * headless wine, and would reach every process of a real console): the
 * tests call the handler the library registers with
 * SetConsoleCtrlHandler, from a thread of their own, as Windows does from
 * the thread it starts for an event. Its result is what Windows acts on:
 * TRUE, handled; FALSE, the default action (ending the process). */
#include <signal.h>

#if defined(_WIN32)
/* The console event a signal number stands for. */
static DWORD ts_event(int signo) {
    switch (signo) {
    case SIGINT:
        return CTRL_C_EVENT;
    case BLITZ_SIGBREAK:
        return CTRL_BREAK_EVENT;
    case BLITZ_SIGHUP:
        return CTRL_CLOSE_EVENT;
    default:
        CHECK(0);
        return 0;
    }
}
/* Delivers one event as Windows would; nonzero when blitz took it. */
static int ts_console(int signo) {
    return blitz__sig_console(ts_event(signo)) != FALSE;
}
#define TS_SIG_A BLITZ_SIGBREAK
static void ts_send_a(void) {
    CHECK(ts_console(TS_SIG_A));
}
#else
#define TS_SIG_A SIGUSR1
static void ts_send_a(void) {
    raise(SIGUSR1);
}
#endif

typedef struct {
    BLITZ_CORO;
    int signo, extra, want;
    blitz_signal sig[2];
    int nsig, i, k;
    long got[2];
    int last_signo;
    atomic_int *ready;
    atomic_long *received;
} ts_listen;

static blitz_poll ts_listen_poll(blitz_cx *cx, void *p) {
    ts_listen *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->nsig; s->i++) {
        CHECK_OK(blitz_signal_init(&s->sig[s->i], s->signo));
        if (s->extra)
            CHECK_OK(blitz_signal_add(&s->sig[s->i], s->extra));
    }
    atomic_fetch_add(s->ready, s->nsig);
    for (s->k = 1; s->k <= s->want; s->k++) {
        for (s->i = 0; s->i < s->nsig; s->i++) {
            while (s->got[s->i] < s->k) {
                BLITZ_AWAIT(s, blitz_signal_recv(cx, &s->sig[s->i]));
                CHECK_GE(s->sig[s->i].count, 1);
                s->last_signo = s->sig[s->i].signo;
                s->got[s->i] += (long)s->sig[s->i].count;
                atomic_fetch_add(s->received, (long)s->sig[s->i].count);
            }
        }
    }
    for (s->i = 0; s->i < s->nsig; s->i++)
        CHECK_OK(blitz_signal_deinit(&s->sig[s->i]));
    BLITZ_END(s);
}

static void *ts_signal_driver(void *h) {
    blitz_join_blocking(h);
    return NULL;
}

#if !defined(_WIN32)
/* The signal's disposition: SIG_DFL, SIG_IGN or a handler. The tests
 * compare it with what the process inherited (nohup and `cmd &` in a
 * script start some signals ignored), never with SIG_DFL. */
static void (*ts_disposition(int signo))(int) {
    struct sigaction sa;
    CHECK_EQ(sigaction(signo, NULL, &sa), 0);
    return sa.sa_handler;
}
#endif

/* Three listeners in two tasks, for the signals whose default action
 * would end the process: each listener sees every delivery, from kill and
 * from raise; afterwards the default action is back. */
static int signal_each_listener(tu_flavor f) {
#if defined(_WIN32)
    static const int sigs[] = {SIGINT, BLITZ_SIGBREAK};
#else
    static const int sigs[] = {SIGUSR1, SIGTERM, SIGINT, SIGHUP};
#endif
    for (size_t n = 0; n < sizeof sigs / sizeof sigs[0]; n++) {
        int signo = sigs[n];
#if defined(_WIN32)
        CHECK(!ts_console(signo)); /* nobody listens: the default action */
#else
        void (*inherited)(int) = ts_disposition(signo);
#endif
        blitz_runtime *rt = tu_rt_new(f);
        atomic_int ready;
        atomic_long received;
        atomic_store(&ready, 0);
        atomic_store(&received, 0);
        enum { SENDS = 4 };
        ts_listen a;
        memset(&a, 0, sizeof a);
        a.signo = signo;
        a.want = SENDS;
        a.nsig = 2;
        a.ready = &ready;
        a.received = &received;
        ts_listen b = a;
        b.nsig = 1;
        blitz_task *ha, *hb;
        CHECK_OK(blitz_spawn(rt, ts_listen_poll, &a, sizeof a, &ha));
        CHECK_OK(blitz_spawn(rt, ts_listen_poll, &b, sizeof b, &hb));
        /* Drive a current-thread runtime from a helper while we send. */
        atomic_long stop;
        atomic_store(&stop, 0);
        tu_until u = {0, &stop, 1};
        blitz_task *hu = NULL;
        if (f.flavor == BLITZ_CURRENT_THREAD)
            CHECK_OK(blitz_spawn(rt, tu_until_poll, &u, sizeof u, &hu));
        tu_thread driver;
        if (hu)
            tu_thread_start(&driver, ts_signal_driver, hu);
        TU_WAIT_GE(&ready, 3, 5.0);
#if !defined(_WIN32)
        CHECK(ts_disposition(signo) != inherited);
#endif
        for (int i = 0; i < SENDS; i++) {
#if defined(_WIN32)
            CHECK(ts_console(signo));
#else
            if (i % 2)
                CHECK_EQ(raise(signo), 0);
            else
                CHECK_EQ(kill(getpid(), signo), 0);
#endif
            /* One at a time: the kernel merges a standard signal that is
             * sent again before the first is handled. */
            TU_WAIT_GE(&received, 3 * (i + 1), 5.0);
        }
        CHECK_OK(blitz_join_blocking(ha));
        CHECK_OK(blitz_join_blocking(hb));
        ts_listen *da = blitz_task_state(ha), *db = blitz_task_state(hb);
        CHECK_EQ(da->got[0], SENDS);
        CHECK_EQ(da->got[1], SENDS);
        CHECK_EQ(db->got[0], SENDS);
        CHECK_EQ(da->last_signo, signo);
        atomic_store(&stop, 1);
        if (hu) {
            tu_thread_join(&driver);
            blitz_task_release(&hu);
        }
        blitz_task_release(&ha);
        blitz_task_release(&hb);
#if defined(_WIN32)
        CHECK(!ts_console(signo)); /* the default action is back */
#else
        CHECK(ts_disposition(signo) == inherited);
#endif
        CHECK_OK(blitz_runtime_free(rt));
    }
    return 0;
}
TU_FLAVOR_TESTS(signal_each_listener)

#if defined(_WIN32)
/* Deliveries while nobody awaits are counted and returned by the next
 * recv; a listener of two events reports which one came; try_recv. */
BLITZ_TEST(signal_remembered) {
    blitz_signal s;
    CHECK_OK(blitz_signal_init(&s, SIGINT));
    CHECK_OK(blitz_signal_add(&s, BLITZ_SIGBREAK));
    CHECK_OK(blitz_signal_add(&s, SIGINT)); /* twice is fine */
    CHECK_EQ(blitz_signal_try_recv(&s), 0);
    for (int i = 0; i < 3; i++)
        CHECK(ts_console(SIGINT));
    CHECK_EQ(blitz_signal_try_recv(&s), 1);
    CHECK_EQ(s.signo, SIGINT);
    CHECK_EQ(s.count, 3);
    CHECK_EQ(blitz_signal_try_recv(&s), 0);
    CHECK(ts_console(BLITZ_SIGBREAK));
    CHECK_EQ(blitz_signal_try_recv(&s), 1);
    CHECK_EQ(s.signo, BLITZ_SIGBREAK);
    CHECK_EQ(s.count, 1);
    /* the console closing, with nobody listening: Windows's default */
    CHECK(!ts_console(BLITZ_SIGHUP));
    CHECK_OK(blitz_signal_deinit(&s));
    CHECK(!ts_console(SIGINT));
    return 0;
}

/* Only the console's events are signals; the default action comes back
 * after the last listener; bad arguments are refused. */
BLITZ_TEST(signal_bad_args_and_restore) {
    blitz_signal s, t;
    memset(&t, 0, sizeof t);
    CHECK_EQ(blitz_signal_init(NULL, SIGINT), BLITZ_EINVAL);
    static const int bad[] = {0, -1, 2 + 64, 1000, SIGTERM, SIGSEGV, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(blitz_signal_init(&s, bad[i]), BLITZ_EINVAL);
    CHECK_EQ(blitz_signal_add(&t, SIGINT), BLITZ_EINVAL); /* never initialised */
    CHECK_EQ(blitz_signal_try_recv(&t), BLITZ_EINVAL);
    CHECK_EQ(blitz_signal_deinit(&t), BLITZ_EINVAL);
    blitz_signal_cancel(NULL, &t); /* harmless */
    static const int good[] = {SIGINT, BLITZ_SIGBREAK, BLITZ_SIGHUP, BLITZ_SIGLOGOFF,
                               BLITZ_SIGSHUTDOWN};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK_OK(blitz_signal_init(&s, good[i]));
        CHECK_OK(blitz_signal_deinit(&s));
    }
    CHECK(!ts_console(SIGINT));
    CHECK_OK(blitz_signal_init(&s, SIGINT));
    CHECK_EQ(blitz_signal_init(&s, SIGINT), BLITZ_EBUSY);
    CHECK_OK(blitz_signal_init(&t, SIGINT));
    CHECK_EQ(blitz_signal_add(&s, SIGTERM), BLITZ_EINVAL);
    CHECK(ts_console(SIGINT));
    CHECK(!ts_console(BLITZ_SIGBREAK)); /* nobody listens to that one */
    CHECK_OK(blitz_signal_deinit(&s));
    CHECK_EQ(blitz_signal_deinit(&s), BLITZ_EINVAL);
    CHECK(ts_console(SIGINT)); /* t still listens */
    CHECK_OK(blitz_signal_deinit(&t));
    CHECK(!ts_console(SIGINT));
    return 0;
}
#else

/* Deliveries while nobody awaits are counted and returned by the next
 * recv; a listener of two signals reports which one came; try_recv. */
BLITZ_TEST(signal_remembered) {
    void (*inherited)(int) = ts_disposition(SIGUSR2);
    blitz_signal s;
    CHECK_OK(blitz_signal_init(&s, SIGUSR2));
    CHECK_OK(blitz_signal_add(&s, SIGWINCH));
    CHECK_OK(blitz_signal_add(&s, SIGUSR2)); /* twice is fine */
    CHECK_EQ(blitz_signal_try_recv(&s), 0);
    CHECK_EQ(raise(SIGUSR2), 0);
    CHECK_EQ(raise(SIGUSR2), 0);
    CHECK_EQ(raise(SIGUSR2), 0);
    long total = 0;
    double deadline = tu_now() + 5.0 * tu_timeout_mult();
    while (total < 3) {
        CHECK(tu_now() < deadline);
        int rc = blitz_signal_try_recv(&s);
        CHECK_GE(rc, 0);
        if (rc == 1) {
            CHECK_EQ(s.signo, SIGUSR2);
            total += (long)s.count;
        }
        tu_sleep_ms(1);
    }
    CHECK_EQ(total, 3);
    CHECK_EQ(raise(SIGWINCH), 0);
    while (blitz_signal_try_recv(&s) != 1)
        tu_sleep_ms(1);
    CHECK_EQ(s.signo, SIGWINCH);
    CHECK_EQ(s.count, 1);
    CHECK_OK(blitz_signal_deinit(&s));
    CHECK(ts_disposition(SIGUSR2) == inherited);
    return 0;
}

/* A disposition the program had before comes back after the last
 * listener; bad arguments are refused. */
static atomic_int ts_user_handler_calls;
static void ts_user_handler(int signo) {
    (void)signo;
    atomic_fetch_add(&ts_user_handler_calls, 1);
}

BLITZ_TEST(signal_bad_args_and_restore) {
    blitz_signal s, t;
    memset(&t, 0, sizeof t);
    CHECK_EQ(blitz_signal_init(NULL, SIGUSR1), BLITZ_EINVAL);
    static const int bad[] = {0, -1, 65, 1000, SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(blitz_signal_init(&s, bad[i]), BLITZ_EINVAL);
    CHECK_EQ(blitz_signal_add(&t, SIGUSR1), BLITZ_EINVAL); /* never initialised */
    CHECK_EQ(blitz_signal_try_recv(&t), BLITZ_EINVAL);
    CHECK_EQ(blitz_signal_deinit(&t), BLITZ_EINVAL);
    blitz_signal_cancel(NULL, &t); /* harmless */

    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ts_user_handler;
    CHECK_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    atomic_store(&ts_user_handler_calls, 0);
    CHECK_OK(blitz_signal_init(&s, SIGUSR1));
    CHECK_EQ(blitz_signal_init(&s, SIGUSR1), BLITZ_EBUSY);
    CHECK_OK(blitz_signal_init(&t, SIGUSR1));
    CHECK_EQ(blitz_signal_add(&s, SIGKILL), BLITZ_EINVAL);
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(tu_ldi(&ts_user_handler_calls), 0); /* ours runs now */
    CHECK_OK(blitz_signal_deinit(&s));
    CHECK_EQ(blitz_signal_deinit(&s), BLITZ_EINVAL);
    CHECK_EQ(raise(SIGUSR1), 0); /* t still listens */
    CHECK_EQ(tu_ldi(&ts_user_handler_calls), 0);
    CHECK_OK(blitz_signal_deinit(&t));
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(tu_ldi(&ts_user_handler_calls), 1); /* the program's own is back */
    CHECK_EQ(sigaction(SIGUSR1, &old, NULL), 0);
    return 0;
}

#endif /* !_WIN32 */

/* A recv given up by a timeout keeps no waker; deliveries during the
 * pause are still counted; a job on a pool thread can raise signals. */
typedef struct {
    BLITZ_CORO;
    blitz_signal sig;
    blitz_timer timer;
    int expired;
    uint64_t count;
    blitz_task *raiser;
} ts_timeout;

static void ts_raise_a(void *p) {
    (void)p;
    ts_send_a();
}

static blitz_poll ts_timeout_poll(blitz_cx *cx, void *p) {
    ts_timeout *s = p;
    BLITZ_BEGIN(s);
    CHECK_OK(blitz_signal_init(&s->sig, TS_SIG_A));
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 10 * BLITZ_MSEC, blitz_signal_recv(cx, &s->sig),
                                    blitz_signal_cancel, &s->sig));
    s->expired = s->timer.expired;
    CHECK_EQ(s->sig.blitz__has_waker, 0);
    CHECK_OK(blitz_spawn_blocking(blitz_cx_runtime(cx), ts_raise_a, NULL, &s->raiser));
    BLITZ_AWAIT(s, blitz_join(cx, s->raiser));
    blitz_task_release(&s->raiser);
    BLITZ_AWAIT(s, blitz_signal_recv(cx, &s->sig));
    s->count = s->sig.count;
    CHECK_OK(blitz_signal_deinit(&s->sig));
    BLITZ_END(s);
}

static int signal_timeout_and_pool(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    ts_timeout s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, ts_timeout_poll, &s, sizeof s));
    CHECK_EQ(s.expired, 1);
    CHECK_EQ(s.count, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(signal_timeout_and_pool)
