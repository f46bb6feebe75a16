/* Processes with this test binary as the child (`--proc-child WHAT ...`,
 * see tpc_child_main), so that they run the same on every platform
 * (included by tests/test_pool.c). */

#define TPC_SIGKILL 9 /* SIGKILL, also where signal.h lacks it */

/* The child's side: returns its exit code. */
static int tpc_child_main(int argc, char **argv) {
#if defined(_WIN32)
    _setmode(1, _O_BINARY);
    _setmode(0, _O_BINARY);
#endif
    const char *what = argc > 2 ? argv[2] : "";
#if !defined(_WIN32) /* the C runtime's argv and environment are the bytes given */
    if (strcmp(what, "argvw") == 0)
        what = "argv";
    if (strcmp(what, "envw") == 0)
        what = "env";
#endif
    if (strcmp(what, "exit") == 0)
        return argc > 3 ? atoi(argv[3]) : 0;
    if (strcmp(what, "argv") == 0) {
        /* Each argument, NUL-terminated, for an exact comparison. */
        for (int i = 3; i < argc; i++)
            fwrite(argv[i], 1, strlen(argv[i]) + 1, stdout);
        return 0;
    }
#if defined(_WIN32)
    /* The arguments and a variable as Windows holds them (UTF-16), in
     * UTF-8: the C runtime's argv and getenv use the ANSI code page. */
    if (strcmp(what, "argvw") == 0) {
        typedef LPWSTR *(WINAPI * to_argv_fn)(LPCWSTR, int *);
        HMODULE shell = LoadLibraryA("shell32.dll");
        to_argv_fn to_argv =
            shell ? (to_argv_fn)(void (*)(void))GetProcAddress(shell, "CommandLineToArgvW") : NULL;
        int wargc = 0;
        LPWSTR *wargv = to_argv ? to_argv(GetCommandLineW(), &wargc) : NULL;
        if (!wargv)
            return 98;
        for (int i = 3; i < wargc; i++) {
            char buf[1024];
            int n = WideCharToMultiByte(CP_UTF8, 0, wargv[i], -1, buf, sizeof buf, NULL, NULL);
            if (n <= 0)
                return 97;
            fwrite(buf, 1, (size_t)n, stdout);
        }
        LocalFree(wargv);
        return 0;
    }
    if (strcmp(what, "envw") == 0) {
        wchar_t name[64], value[512];
        char buf[1024];
        if (argc < 4 || !MultiByteToWideChar(CP_UTF8, 0, argv[3], -1, name, 64))
            return 98;
        DWORD n = GetEnvironmentVariableW(name, value, 512);
        if (n == 0 || n >= 512)
            return 97;
        if (WideCharToMultiByte(CP_UTF8, 0, value, -1, buf, sizeof buf, NULL, NULL) <= 0)
            return 96;
        fputs(buf, stdout);
        return 0;
    }
#endif
    if (strcmp(what, "echo") == 0) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
            fwrite(buf, 1, n, stdout);
        fputs("to stderr", stderr);
        return 5;
    }
    if (strcmp(what, "env") == 0) {
        const char *v = argc > 3 ? getenv(argv[3]) : NULL;
        fputs(v ? v : "(unset)", stdout);
        return 0;
    }
    if (strcmp(what, "cwd") == 0) {
        char buf[1024];
#if defined(_WIN32)
        fputs(_getcwd(buf, sizeof buf) ? buf : "?", stdout);
#else
        fputs(getcwd(buf, sizeof buf) ? buf : "?", stdout);
#endif
        return 0;
    }
    if (strcmp(what, "sleep") == 0) {
        /* Until killed (the test ends it); a bound so none is left behind. */
        for (int i = 0; i < 600; i++)
#if defined(_WIN32)
            Sleep(100);
#else
            usleep(100000);
#endif
        return 0;
    }
    return 99;
}

static void tpc_self(char *out, size_t n) {
#if defined(_WIN32)
    DWORD len = GetModuleFileNameA(NULL, out, (DWORD)n);
    CHECK(len > 0 && len < n);
#else
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    CHECK(len > 0);
    out[len] = '\0';
#endif
}

/* Spawns this binary as a child doing `what` (with `arg` unless NULL),
 * stdin and stdout as given, stderr to the null device. */
static void tpc_spawn(blitz_runtime *rt, const char *what, const char *arg, blitz_stdio in,
                      blitz_stdio out, blitz_child *child) {
    char self[1024]; /* spawn copies what it needs */
    tpc_self(self, sizeof self);
    const char *argv[] = {self, "--proc-child", what, arg, NULL};
    blitz_command c = {argv, NULL, NULL, in, out, BLITZ_STDIO_NULL};
    CHECK_OK(blitz_process_spawn(rt, &c, child));
}

typedef struct {
    BLITZ_CORO;
    blitz_output_op out;
    blitz_command cmd;
    const char *input;
    size_t input_len;
} tpc_output;

static blitz_poll tpc_output_poll(blitz_cx *cx, void *p) {
    tpc_output *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_process_output(cx, &s->out, &s->cmd, s->input, s->input_len));
    BLITZ_END(s);
}

/* Runs the child with `args` (after the mode), returns its output op. */
static blitz_output_op tpc_run(blitz_runtime *rt, const char *const *args, const char *const *env,
                               const char *cwd, const char *input, size_t input_len) {
    static char self[1024];
    tpc_self(self, sizeof self);
    const char *argv[16] = {self, "--proc-child"};
    int n = 2;
    for (; args[n - 2] && n < 15; n++)
        argv[n] = args[n - 2];
    argv[n] = NULL;
    tpc_output s;
    memset(&s, 0, sizeof s);
    s.cmd.argv = argv;
    s.cmd.env = env;
    s.cmd.cwd = cwd;
    s.input = input;
    s.input_len = input_len;
    CHECK_OK(blitz_runtime_run(rt, tpc_output_poll, &s, sizeof s));
    return s.out;
}

/* Exit codes, stdout and stderr byte for byte, stdin echoed back. */
BLITZ_TEST(process_self_output) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    static const char *const exit7[] = {"exit", "7", NULL};
    blitz_output_op o = tpc_run(rt, exit7, NULL, NULL, NULL, 0);
    CHECK_OK(o.result);
    CHECK_EQ(o.exited, 1);
    CHECK_EQ(o.code, 7);
    CHECK_EQ(o.out_len, 0);
    blitz_free(o.out);
    blitz_free(o.err);
    size_t big = 200000;
    char *input = malloc(big);
    CHECK_NOT_NULL(input);
    for (size_t i = 0; i < big; i++)
        input[i] = (char)(i % 251); /* every byte value, \r and \n too */
    static const char *const echo[] = {"echo", NULL};
    o = tpc_run(rt, echo, NULL, NULL, input, big);
    CHECK_OK(o.result);
    CHECK_EQ(o.code, 5);
    CHECK_EQ(o.out_len, big);
    CHECK(memcmp(o.out, input, big) == 0);
    CHECK(strcmp(o.err, "to stderr") == 0);
    blitz_free(o.out);
    blitz_free(o.err);
    free(input);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* The child's output is args[1..], each NUL-terminated, and no more. */
static void tpc_check_args(const blitz_output_op *o, const char *const *args) {
    size_t at = 0;
    for (int i = 1; args[i]; i++) {
        CHECK(at < o->out_len);
        CHECK(strcmp(o->out + at, args[i]) == 0);
        at += strlen(args[i]) + 1;
    }
    CHECK_EQ(at, o->out_len);
}

/* Odd arguments come back as they were sent. */
BLITZ_TEST(process_self_argv) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    static const char *const args[] = {"argv",     "",     "a b",        "tab\there", "q\"uote",
                                       "\\",       "a\\b", "trail\\",    "two\\\\",   "\\\"",
                                       "x\\\\\"y", "\"",   "{ }^&|<>%!", NULL};
    blitz_output_op o = tpc_run(rt, args, NULL, NULL, NULL, 0);
    CHECK_OK(o.result);
    tpc_check_args(&o, args);
    blitz_free(o.out);
    blitz_free(o.err);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

#define TPC_UNICODE \
    "\xc3\xbc"      \
    "n"             \
    "\xc3\xaf"      \
    "c"             \
    "\xc3\xb6"      \
    "d"             \
    "\xc3\xa9"      \
    " \xe2\x9c\x93" /* accented letters, a check mark */

/* Arguments and environment values beyond ASCII arrive as the UTF-8
 * they were given in (on Windows through UTF-16). */
BLITZ_TEST(process_self_unicode) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    static const char *const args[] = {"argvw", "h\xc3\xa9llo", "\xe6\x97\xa5\xe6\x9c\xac",
                                       "a \xf0\x9f\x98\x80 b", NULL};
    blitz_output_op o = tpc_run(rt, args, NULL, NULL, NULL, 0);
    CHECK_OK(o.result);
    CHECK_EQ(o.code, 0);
    tpc_check_args(&o, args);
    blitz_free(o.out);
    blitz_free(o.err);
    static const char *const env_args[] = {"envw", "BLITZ_TPC", NULL};
#if defined(_WIN32)
    char sysroot[512];
    snprintf(sysroot, sizeof sysroot, "SystemRoot=%s",
             getenv("SystemRoot") ? getenv("SystemRoot") : "C:\\windows");
    const char *env[] = {"BLITZ_TPC=" TPC_UNICODE, sysroot, NULL};
#else
    const char *env[] = {"BLITZ_TPC=" TPC_UNICODE, NULL};
#endif
    o = tpc_run(rt, env_args, env, NULL, NULL, 0);
    CHECK_OK(o.result);
    CHECK_EQ(o.code, 0);
    CHECK(strcmp(o.out, TPC_UNICODE) == 0);
    blitz_free(o.out);
    blitz_free(o.err);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* The environment is the one given; the working directory too. */
BLITZ_TEST(process_self_env_cwd) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    static const char *const env_args[] = {"env", "BLITZ_TPC", NULL};
#if defined(_WIN32)
    char sysroot[512];
    snprintf(sysroot, sizeof sysroot, "SystemRoot=%s",
             getenv("SystemRoot") ? getenv("SystemRoot") : "C:\\windows");
    const char *env[] = {"ZZ=last", "BLITZ_TPC=v a l", sysroot, NULL};
#else
    const char *env[] = {"ZZ=last", "BLITZ_TPC=v a l", NULL};
#endif
    blitz_output_op o = tpc_run(rt, env_args, env, NULL, NULL, 0);
    CHECK_OK(o.result);
    CHECK(strcmp(o.out, "v a l") == 0);
    blitz_free(o.out);
    blitz_free(o.err);
    const char *none[] = {"ZZ=1", NULL};
    o = tpc_run(rt, env_args, none, NULL, NULL, 0);
    CHECK_OK(o.result);
    CHECK(strcmp(o.out, "(unset)") == 0);
    blitz_free(o.out);
    blitz_free(o.err);
    char dir[256];
    tf_tmpdir(dir, sizeof dir);
    static const char *const cwd_args[] = {"cwd", NULL};
    o = tpc_run(rt, cwd_args, NULL, dir, NULL, 0);
    CHECK_OK(o.result);
    /* The temporary folder may be reached by another spelling: compare the
     * last component. */
    const char *leaf = strrchr(dir, '/') ? strrchr(dir, '/') : strrchr(dir, '\\');
    CHECK_NOT_NULL(leaf);
    CHECK_NOT_NULL(strstr(o.out, leaf + 1));
    blitz_free(o.out);
    blitz_free(o.err);
    tf_rm_rf(dir);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

typedef struct {
    BLITZ_CORO;
    blitz_child child;
    blitz_wait_op w1, w2;
    blitz_timer timer;
    int step;
} tpc_kill;

/* Two waiters on one child; kill ends both; the status stays. */
static blitz_poll tpc_kill_poll(blitz_cx *cx, void *p) {
    tpc_kill *s = p;
    blitz_poll r1, r2;
    BLITZ_BEGIN(s);
    tpc_spawn(blitz_cx_runtime(cx), "sleep", NULL, BLITZ_STDIO_NULL, BLITZ_STDIO_NULL, &s->child);
    /* A wait given up by a timeout ends, the child runs on. */
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 30 * BLITZ_MSEC,
                                    blitz_process_wait(cx, &s->w1, &s->child),
                                    blitz_process_wait_cancel, &s->w1));
    CHECK_EQ(s->timer.expired, 1);
    r1 = blitz_process_wait(cx, &s->w1, &s->child);
    r2 = blitz_process_wait(cx, &s->w2, &s->child);
    CHECK_EQ(r1, BLITZ_PENDING);
    CHECK_EQ(r2, BLITZ_PENDING);
    CHECK_EQ(blitz_process_try_wait(&s->child, &s->w1), 0);
    CHECK_OK(blitz_process_kill(&s->child, TPC_SIGKILL));
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->w1, &s->child));
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->w2, &s->child));
    CHECK_OK(s->w1.result);
    CHECK_OK(s->w2.result);
    CHECK_EQ(s->w1.exited, 0);
    CHECK_EQ(s->w1.signal, TPC_SIGKILL);
    CHECK_EQ(s->w2.signal, TPC_SIGKILL);
    CHECK_EQ(blitz_process_kill(&s->child, TPC_SIGKILL), BLITZ_ESRCH);
    CHECK_OK(blitz_process_release(&s->child));
    s->step = 1;
    BLITZ_END(s);
}

BLITZ_TEST(process_self_kill) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    tpc_kill s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, tpc_kill_poll, &s, sizeof s));
    CHECK_EQ(s.step, 1);
    static const char *const missing[] = {"blitz-no-such-program-here", NULL};
    blitz_command c = {missing, NULL, NULL, BLITZ_STDIO_NULL, BLITZ_STDIO_NULL, BLITZ_STDIO_NULL};
    blitz_child ch;
    CHECK_EQ(blitz_process_spawn(rt, &c, &ch), BLITZ_ENOENT);
    CHECK_NULL(ch.blitz__handle);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

typedef struct {
    BLITZ_CORO;
    blitz_child child;
    blitz_fs_op op;
    blitz_wait_op wait;
    char buf[64];
    size_t got;
    int fd, step;
} tpc_pipes;

/* The parent's pipe ends work with the file ops. */
static blitz_poll tpc_pipes_poll(blitz_cx *cx, void *p) {
    tpc_pipes *s = p;
    BLITZ_BEGIN(s);
    tpc_spawn(blitz_cx_runtime(cx), "echo", NULL, BLITZ_STDIO_PIPE, BLITZ_STDIO_PIPE, &s->child);
    CHECK_GE(s->child.stdin_fd, 0);
    CHECK_GE(s->child.stdout_fd, 0);
    CHECK_EQ(s->child.stderr_fd, -1);
    BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->child.stdin_fd, "hello\r\n\0x", 9));
    CHECK_EQ(s->op.result, 9);
    s->fd = s->child.stdin_fd;
    s->child.stdin_fd = -1;
    BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->fd));
    CHECK_OK(s->op.result);
    for (;;) {
        BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->child.stdout_fd, s->buf + s->got,
                                     sizeof s->buf - s->got));
        CHECK_GE(s->op.result, 0);
        if (s->op.result == 0)
            break;
        s->got += (size_t)s->op.result;
    }
    CHECK_EQ(s->got, 9);
    CHECK(memcmp(s->buf, "hello\r\n\0x", 9) == 0);
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
    CHECK_OK(s->wait.result);
    CHECK_EQ(s->wait.exited, 1);
    CHECK_EQ(s->wait.code, 5);
    CHECK_OK(blitz_process_release(&s->child));
    s->step = 1;
    BLITZ_END(s);
}

BLITZ_TEST(process_self_pipes) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    tpc_pipes s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, tpc_pipes_poll, &s, sizeof s));
    CHECK_EQ(s.step, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

static blitz_poll tpc_wait_forever_poll(blitz_cx *cx, void *p) {
    tpc_kill *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->w1, &s->child));
    BLITZ_END(s);
}

/* A wait in flight does not hold up shutdown; the child outlives it. */
BLITZ_TEST(process_self_shutdown) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    tpc_kill s;
    memset(&s, 0, sizeof s);
    tpc_spawn(rt, "sleep", NULL, BLITZ_STDIO_NULL, BLITZ_STDIO_NULL, &s.child);
    blitz_child copy = s.child;
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, tpc_wait_forever_poll, &s, sizeof s, &t));
    TU_WAIT_UNTIL(tp_stats(rt).jobs_run >= 1, 10, 1);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_EQ(blitz_task_status(t), BLITZ_ECANCELED);
    blitz_task_release(&t);
    blitz_wait_op st;
    CHECK_EQ(blitz_process_try_wait(&copy, &st), 0);
    CHECK_OK(blitz_process_kill(&copy, TPC_SIGKILL));
    TU_WAIT_UNTIL(blitz_process_try_wait(&copy, &st) == 1, 10, 1);
    CHECK_EQ(st.signal, TPC_SIGKILL);
    CHECK_OK(blitz_process_release(&copy));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Children spawned at the same moment from two threads inherit only
 * their own pipe ends. One task spawns sleepers (with pipes of their
 * own) while the other spawns short children and reads each one's
 * stdout to its end: a sleeper that had inherited a short child's write
 * end would hold that stream open until the sleepers are killed, which
 * happens only after the reads, so the test would hang. */
#define TPC_ROUNDS 12

typedef struct {
    BLITZ_CORO;
    blitz_child child[TPC_ROUNDS];
    blitz_fs_op op;
    blitz_wait_op wait;
    blitz_timer timer;
    char buf[64];
    size_t got;
    int i;
    atomic_int *short_done;
} tpc_spawner;

static blitz_poll tpc_short_poll(blitz_cx *cx, void *p) {
    tpc_spawner *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < TPC_ROUNDS; s->i++) {
        tpc_spawn(blitz_cx_runtime(cx), "argv", "x", BLITZ_STDIO_NULL, BLITZ_STDIO_PIPE,
                  &s->child[0]);
        for (s->got = 0;;) {
            BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->child[0].stdout_fd, s->buf + s->got,
                                         sizeof s->buf - s->got));
            CHECK_GE(s->op.result, 0);
            if (s->op.result == 0)
                break;
            s->got += (size_t)s->op.result;
        }
        CHECK_EQ(s->got, 2);
        BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child[0]));
        CHECK_EQ(s->wait.code, 0);
        CHECK_OK(blitz_process_release(&s->child[0]));
    }
    atomic_store(s->short_done, 1);
    BLITZ_END(s);
}

static blitz_poll tpc_sleepers_poll(blitz_cx *cx, void *p) {
    tpc_spawner *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < TPC_ROUNDS; s->i++) {
        tpc_spawn(blitz_cx_runtime(cx), "sleep", NULL, BLITZ_STDIO_PIPE, BLITZ_STDIO_PIPE,
                  &s->child[s->i]);
        BLITZ_YIELD(s, cx);
    }
    while (!atomic_load(s->short_done))
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, 5 * BLITZ_MSEC));
    for (s->i = 0; s->i < TPC_ROUNDS; s->i++) {
        CHECK_OK(blitz_process_kill(&s->child[s->i], TPC_SIGKILL));
        BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child[s->i]));
        CHECK_EQ(s->wait.signal, TPC_SIGKILL);
        CHECK_OK(blitz_process_release(&s->child[s->i]));
    }
    BLITZ_END(s);
}

BLITZ_TEST(process_self_concurrent_spawns) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    atomic_int short_done = 0;
    tpc_spawner a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.short_done = b.short_done = &short_done;
    blitz_task *ta, *tb;
    CHECK_OK(blitz_spawn(rt, tpc_sleepers_poll, &b, sizeof b, &tb));
    CHECK_OK(blitz_spawn(rt, tpc_short_poll, &a, sizeof a, &ta));
    CHECK_OK(blitz_join_blocking(ta));
    CHECK_OK(blitz_join_blocking(tb));
    blitz_task_release(&ta);
    blitz_task_release(&tb);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
