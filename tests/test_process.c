/* Processes (included by tests/test_pool.c). Uses sh, cat, sleep, true
 * and pwd from PATH. */

typedef struct {
    BLITZ_CORO;
    blitz_child child;
    blitz_wait_op wait;
    blitz_fs_op op;
    blitz_timer timer;
    int i, expired, step;
    char buf[256];
    size_t got;
} tpr_state;

static blitz_command tpr_cmd(const char *const *argv) {
    blitz_command c;
    memset(&c, 0, sizeof c);
    c.argv = argv;
    c.stdin_mode = BLITZ_STDIO_NULL;
    c.stdout_mode = BLITZ_STDIO_NULL;
    c.stderr_mode = BLITZ_STDIO_INHERIT;
    return c;
}

/* Exit codes and deaths by signal, awaited from a task. */
static blitz_poll tpr_exit_poll(blitz_cx *cx, void *p) {
    tpr_state *s = p;
    static const char *const exit3[] = {"sh", "-c", "exit 3", NULL};
    static const char *const ok[] = {"true", NULL};
    static const char *const killed[] = {"sh", "-c", "kill -USR1 $$; sleep 5", NULL};
    static const char *const *progs[] = {exit3, ok, killed};
    static const int want_exited[] = {1, 1, 0}, want_code[] = {3, 0, 0};
    static const int want_sig[] = {0, 0, SIGUSR1};
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < 3; s->i++) {
        {
            blitz_command c = tpr_cmd(progs[s->i]);
            CHECK_OK(blitz_process_spawn(blitz_cx_runtime(cx), &c, &s->child));
            CHECK_GT(s->child.pid, 0);
            CHECK_EQ(s->child.stdin_fd, -1);
        }
        BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
        CHECK_OK(s->wait.result);
        CHECK_EQ(s->wait.exited, want_exited[s->i]);
        CHECK_EQ(s->wait.code, want_code[s->i]);
        CHECK_EQ(s->wait.signal, want_sig[s->i]);
        /* The status is remembered for later waits. */
        BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
        CHECK_EQ(s->wait.code, want_code[s->i]);
        CHECK_EQ(blitz_process_kill(&s->child, SIGTERM), BLITZ_ESRCH);
        CHECK_OK(blitz_process_release(&s->child));
    }
    s->step = 1;
    BLITZ_END(s);
}

static int process_exit_status(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    tpr_state s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, tpr_exit_poll, &s, sizeof s));
    CHECK_EQ(s.step, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(process_exit_status)

/* Spawn errors are reported by spawn, not as exit codes. */
BLITZ_TEST(process_spawn_errors) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    blitz_child c;
    static const char *const missing_path[] = {"/nonexistent/blitz-prog", NULL};
    static const char *const missing_name[] = {"blitz-no-such-program-here", NULL};
    static const char *const ok[] = {"true", NULL};
    static const char *const empty[] = {"", NULL};
    static const char *const none[] = {NULL};
    blitz_command cmd = tpr_cmd(missing_path);
    CHECK_EQ(blitz_process_spawn(rt, &cmd, &c), BLITZ_ENOENT);
    CHECK_EQ(c.pid, 0);
    CHECK_NULL(c.blitz__handle);
    cmd = tpr_cmd(missing_name);
    CHECK_EQ(blitz_process_spawn(rt, &cmd, &c), BLITZ_ENOENT);
    cmd = tpr_cmd(ok);
    cmd.cwd = "/nonexistent/dir";
    CHECK_EQ(blitz_process_spawn(rt, &cmd, &c), BLITZ_ENOENT);
    /* a file that is not executable */
    char dir[64], path[128];
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/script", dir);
    FILE *fp = fopen(path, "w");
    CHECK_NOT_NULL(fp);
    fputs("#!/bin/sh\nexit 0\n", fp);
    fclose(fp);
    const char *const noexec[] = {path, NULL};
    cmd = tpr_cmd(noexec);
    CHECK_EQ(blitz_process_spawn(rt, &cmd, &c), BLITZ_EACCES);
    /* bad arguments */
    cmd = tpr_cmd(empty);
    CHECK_EQ(blitz_process_spawn(rt, &cmd, &c), BLITZ_EINVAL);
    cmd = tpr_cmd(none);
    CHECK_EQ(blitz_process_spawn(rt, &cmd, &c), BLITZ_EINVAL);
    cmd = tpr_cmd(ok);
    cmd.stdout_mode = (blitz_stdio)7;
    CHECK_EQ(blitz_process_spawn(rt, &cmd, &c), BLITZ_EINVAL);
    CHECK_EQ(blitz_process_spawn(NULL, &cmd, &c), BLITZ_EINVAL);
    CHECK_EQ(blitz_process_spawn(rt, NULL, &c), BLITZ_EINVAL);
    CHECK_EQ(blitz_process_kill(NULL, SIGTERM), BLITZ_EINVAL);
    CHECK_EQ(blitz_process_release(NULL), BLITZ_EINVAL);
    CHECK_EQ(blitz_process_try_wait(NULL, NULL), BLITZ_EINVAL);
    /* no descriptor leaked by any of that */
    tf_rm_rf(dir);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Pipes both ways, the environment and the working directory. */
typedef struct {
    BLITZ_CORO;
    blitz_child child;
    blitz_wait_op wait;
    blitz_fs_op op;
    char buf[64];
    size_t got;
    int mode;
} tpr_pipe;

static blitz_poll tpr_pipe_poll(blitz_cx *cx, void *p) {
    tpr_pipe *s = p;
    static const char *const cat[] = {"cat", NULL};
    static const char *const echo_env[] = {"sh", "-c", "echo $BLITZ_T-$HOME", NULL};
    static const char *const env[] = {"BLITZ_T=yes", "PATH=/usr/bin:/bin", NULL};
    static const char *const pwd[] = {"pwd", NULL};
    BLITZ_BEGIN(s);
    {
        blitz_command c = tpr_cmd(s->mode == 0 ? cat : s->mode == 1 ? echo_env : pwd);
        c.stdin_mode = s->mode == 0 ? BLITZ_STDIO_PIPE : BLITZ_STDIO_NULL;
        c.stdout_mode = BLITZ_STDIO_PIPE;
        if (s->mode == 1)
            c.env = env;
        if (s->mode == 2)
            c.cwd = "/";
        CHECK_OK(blitz_process_spawn(blitz_cx_runtime(cx), &c, &s->child));
    }
    if (s->mode == 0) {
        CHECK_GE(s->child.stdin_fd, 0);
        BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->child.stdin_fd, "through cat\n", 12));
        CHECK_EQ(s->op.result, 12);
        BLITZ_AWAIT(s, blitz_fs_close(cx, &s->op, s->child.stdin_fd));
        CHECK_OK((int)s->op.result);
        s->child.stdin_fd = -1;
    }
    for (;;) {
        BLITZ_AWAIT(s, blitz_fs_read(cx, &s->op, s->child.stdout_fd, s->buf + s->got,
                                     sizeof s->buf - 1 - s->got));
        CHECK_GE(s->op.result, 0);
        if (s->op.result == 0)
            break;
        s->got += (size_t)s->op.result;
    }
    s->buf[s->got] = '\0';
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
    CHECK_EQ(s->wait.code, 0);
    CHECK_OK(blitz_process_release(&s->child));
    BLITZ_END(s);
}

static int process_pipes(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    static const char *const want[] = {"through cat\n", "yes-\n", "/\n"};
    int fds = tu_open_fds();
    for (int mode = 0; mode < 3; mode++) {
        tpr_pipe s;
        memset(&s, 0, sizeof s);
        s.mode = mode;
        CHECK_OK(blitz_runtime_run(rt, tpr_pipe_poll, &s, sizeof s));
        CHECK_BASE(strcmp(s.buf, want[mode]) == 0, "mode %d: got \"%s\"", mode, s.buf);
    }
    CHECK_EQ(tu_open_fds(), fds);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(process_pipes)

/* Writing to a child that stopped reading: BLITZ_EPIPE, and this process
 * lives on (SIGPIPE is taken back). */
typedef struct {
    BLITZ_CORO;
    blitz_child child;
    blitz_wait_op wait;
    blitz_fs_op op;
    char big[65536];
} tpr_broken;

static blitz_poll tpr_broken_poll(blitz_cx *cx, void *p) {
    tpr_broken *s = p;
    static const char *const t[] = {"true", NULL};
    BLITZ_BEGIN(s);
    {
        blitz_command c = tpr_cmd(t);
        c.stdin_mode = BLITZ_STDIO_PIPE;
        CHECK_OK(blitz_process_spawn(blitz_cx_runtime(cx), &c, &s->child));
    }
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
    CHECK_EQ(s->wait.code, 0);
    BLITZ_AWAIT(s, blitz_fs_write(cx, &s->op, s->child.stdin_fd, s->big, sizeof s->big));
    CHECK_EQ(s->op.result, BLITZ_EPIPE);
    CHECK_OK(blitz_process_release(&s->child));
    BLITZ_END(s);
}

BLITZ_TEST(process_broken_pipe) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    static tpr_broken s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, tpr_broken_poll, &s, sizeof s));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* kill / terminate, a wait given up by a timeout, a wait in flight at
 * shutdown, and a released child reaped by the pool. */
static blitz_poll tpr_kill_poll(blitz_cx *cx, void *p) {
    tpr_state *s = p;
    static const char *const sl[] = {"sleep", "5", NULL};
    BLITZ_BEGIN(s);
    {
        blitz_command c = tpr_cmd(sl);
        CHECK_OK(blitz_process_spawn(blitz_cx_runtime(cx), &c, &s->child));
    }
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 30 * BLITZ_MSEC,
                                    blitz_process_wait(cx, &s->wait, &s->child),
                                    blitz_process_wait_cancel, &s->wait));
    CHECK_EQ(s->timer.expired, 1);
    CHECK_EQ(blitz_process_try_wait(&s->child, &s->wait), 0);
    CHECK_OK(blitz_process_kill(&s->child, SIGKILL));
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
    CHECK_OK(s->wait.result);
    CHECK_EQ(s->wait.exited, 0);
    CHECK_EQ(s->wait.signal, SIGKILL);
    CHECK_EQ(blitz_process_try_wait(&s->child, &s->wait), 1);
    CHECK_EQ(blitz_process_terminate(&s->child), BLITZ_ESRCH);
    CHECK_OK(blitz_process_release(&s->child));
    CHECK_EQ(blitz_process_release(&s->child), BLITZ_EINVAL);
    {
        blitz_command c = tpr_cmd(sl);
        CHECK_OK(blitz_process_spawn(blitz_cx_runtime(cx), &c, &s->child));
    }
    CHECK_OK(blitz_process_terminate(&s->child));
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
    CHECK_EQ(s->wait.signal, SIGTERM);
    CHECK_OK(blitz_process_release(&s->child));
    s->step = 1;
    BLITZ_END(s);
}

static int process_kill_and_cancel(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    tpr_state s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, tpr_kill_poll, &s, sizeof s));
    CHECK_EQ(s.step, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(process_kill_and_cancel)

static blitz_poll tpr_wait_forever_poll(blitz_cx *cx, void *p) {
    tpr_state *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
    BLITZ_END(s);
}

BLITZ_TEST(process_shutdown_and_release) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    static const char *const sl[] = {"sleep", "5", NULL};
    blitz_command c = tpr_cmd(sl);
    /* released while running: reaped by the pool when it ends */
    blitz_child released;
    CHECK_OK(blitz_process_spawn(rt, &c, &released));
    int pid = released.pid;
    CHECK_OK(blitz_process_release(&released));
    CHECK_EQ(kill(pid, SIGKILL), 0);
    double deadline = tu_now() + 5.0 * tu_timeout_mult();
    for (;;) {
        int st;
        if (waitpid(pid, &st, WNOHANG) < 0 && errno == ECHILD)
            break; /* already reaped by the pool */
        CHECK(tu_now() < deadline);
        tu_sleep_ms(2);
    }
    /* a wait in flight does not hold up shutdown */
    tpr_state s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_process_spawn(rt, &c, &s.child));
    blitz_child copy = s.child;
    blitz_task *t;
    CHECK_OK(blitz_spawn(rt, tpr_wait_forever_poll, &s, sizeof s, &t));
    while (tp_stats(rt).jobs_run < 2)
        tu_sleep_ms(1);
    double t0 = tu_now();
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_LT(tu_now() - t0, 1.0 * tu_timeout_mult());
    CHECK_EQ(blitz_task_status(t), BLITZ_ECANCELED);
    blitz_task_release(&t);
    CHECK_OK(blitz_process_kill(&copy, SIGKILL));
    blitz_wait_op st;
    while (blitz_process_try_wait(&copy, &st) != 1)
        tu_sleep_ms(1);
    CHECK_EQ(st.signal, SIGKILL);
    CHECK_OK(blitz_process_release(&copy));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* The collect-output helper: stdout, stderr, exit code, with input fed in
 * (big enough that writing and reading must overlap), and a command that
 * does not read its input. */
typedef struct {
    BLITZ_CORO;
    blitz_output_op out;
    char *input;
    size_t input_len;
    int which;
} tpr_output;

static blitz_poll tpr_output_poll(blitz_cx *cx, void *p) {
    tpr_output *s = p;
    static const char *const both[] = {"sh", "-c", "echo out; echo err >&2; exit 2", NULL};
    static const char *const cat[] = {"cat", NULL};
    static const char *const t[] = {"true", NULL};
    static const char *const missing[] = {"blitz-no-such-program-here", NULL};
    static const char *const *progs[] = {both, cat, t, missing};
    BLITZ_BEGIN(s);
    {
        blitz_command c = tpr_cmd(progs[s->which]);
        (void)c;
    }
    BLITZ_AWAIT(
        s, blitz_process_output(cx, &s->out,
                                &(blitz_command){progs[s->which], NULL, NULL, BLITZ_STDIO_INHERIT,
                                                 BLITZ_STDIO_INHERIT, BLITZ_STDIO_INHERIT},
                                s->which == 0 ? NULL : s->input, s->which == 0 ? 0 : s->input_len));
    BLITZ_END(s);
}

BLITZ_TEST(process_output) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    size_t big = 300000;
    char *input = malloc(big);
    CHECK_NOT_NULL(input);
    for (size_t i = 0; i < big; i++)
        input[i] = (char)('a' + i % 26);
    int fds = tu_open_fds();
    for (int which = 0; which < 4; which++) {
        tpr_output s;
        memset(&s, 0, sizeof s);
        s.which = which;
        s.input = input;
        s.input_len = big;
        CHECK_OK(blitz_runtime_run(rt, tpr_output_poll, &s, sizeof s));
        if (which == 3) {
            CHECK_EQ(s.out.result, BLITZ_ENOENT);
            CHECK_NULL(s.out.out);
            continue;
        }
        CHECK_OK(s.out.result);
        CHECK_EQ(s.out.exited, 1);
        if (which == 0) {
            CHECK_EQ(s.out.code, 2);
            CHECK(strcmp(s.out.out, "out\n") == 0);
            CHECK(strcmp(s.out.err, "err\n") == 0);
        } else if (which == 1) {
            CHECK_EQ(s.out.code, 0);
            CHECK_EQ(s.out.out_len, big);
            CHECK(memcmp(s.out.out, input, big) == 0);
            CHECK_EQ(s.out.err_len, 0);
        } else {
            CHECK_EQ(s.out.code, 0);
            CHECK_EQ(s.out.out_len, 0);
        }
        blitz_free(s.out.out);
        blitz_free(s.out.err);
    }
    CHECK_EQ(tu_open_fds(), fds);
    free(input);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* Giving up on the helper kills the child. */
typedef struct {
    BLITZ_CORO;
    blitz_output_op out;
    blitz_timer timer;
    int expired;
} tpr_output_cancel;

static blitz_poll tpr_output_cancel_poll(blitz_cx *cx, void *p) {
    tpr_output_cancel *s = p;
    static const char *const sl[] = {"sh", "-c", "echo started; sleep 5", NULL};
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, 50 * BLITZ_MSEC,
                                    blitz_process_output(
                                        cx, &s->out,
                                        &(blitz_command){sl, NULL, NULL, BLITZ_STDIO_INHERIT,
                                                         BLITZ_STDIO_INHERIT, BLITZ_STDIO_INHERIT},
                                        NULL, 0),
                                    blitz_process_output_cancel, &s->out));
    s->expired = s->timer.expired;
    BLITZ_END(s);
}

BLITZ_TEST(process_output_cancel) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    int fds = tu_open_fds();
    tpr_output_cancel s;
    memset(&s, 0, sizeof s);
    double t0 = tu_now();
    CHECK_OK(blitz_runtime_run(rt, tpr_output_cancel_poll, &s, sizeof s));
    CHECK_EQ(s.expired, 1);
    /* The thread notices within a tick, kills and reaps the child. */
    TU_WAIT_UNTIL(tu_open_fds() == fds, 5.0, 2);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_LT(tu_now() - t0, 3.0 * tu_timeout_mult());
    int st;
    CHECK_EQ(waitpid(-1, &st, WNOHANG), -1); /* no child left behind */
    return 0;
}

/* With this process's stdin closed, the child's stdin pipe end is
 * descriptor 0 already: the fork path spawns it then. */
BLITZ_TEST(process_fork_path) {
    int saved = dup(0);
    CHECK_GE(saved, 0);
    close(0);
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    static char input[] = "through the fork path\n";
    tpr_output s;
    memset(&s, 0, sizeof s);
    s.which = 1; /* cat */
    s.input = input;
    s.input_len = sizeof input - 1;
    CHECK_OK(blitz_runtime_run(rt, tpr_output_poll, &s, sizeof s));
    CHECK_OK(s.out.result);
    CHECK(strcmp(s.out.out, input) == 0);
    blitz_free(s.out.out);
    blitz_free(s.out.err);
    static const char *const missing[] = {"/nonexistent/blitz-prog", NULL};
    blitz_command cmd = tpr_cmd(missing);
    cmd.stdin_mode = BLITZ_STDIO_PIPE;
    blitz_child c;
    CHECK_EQ(blitz_process_spawn(rt, &cmd, &c), BLITZ_ENOENT);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(dup2(saved, 0), 0);
    close(saved);
    return 0;
}

/* With SIGCHLD ignored the kernel reaps children itself and their status
 * is gone: waits say so (BLITZ_ECHILD) instead of inventing one. */
typedef struct {
    BLITZ_CORO;
    blitz_child child;
    blitz_wait_op wait;
    blitz_output_op out;
} tpr_lost_status;

static blitz_poll tpr_lost_status_poll(blitz_cx *cx, void *p) {
    tpr_lost_status *s = p;
    static const char *const exit3[] = {"sh", "-c", "echo gone; exit 3", NULL};
    BLITZ_BEGIN(s);
    {
        blitz_command c = tpr_cmd(exit3);
        CHECK_OK(blitz_process_spawn(blitz_cx_runtime(cx), &c, &s->child));
    }
    BLITZ_AWAIT(s, blitz_process_wait(cx, &s->wait, &s->child));
    CHECK_EQ(s->wait.result, BLITZ_ECHILD);
    CHECK_EQ(s->wait.exited, 0);
    CHECK_EQ(s->wait.code, 0);
    CHECK_EQ(s->wait.signal, 0);
    s->wait.result = BLITZ_OK;
    CHECK_EQ(blitz_process_try_wait(&s->child, &s->wait), 1);
    CHECK_EQ(s->wait.result, BLITZ_ECHILD);
    CHECK_EQ(blitz_process_kill(&s->child, SIGTERM), BLITZ_ESRCH);
    CHECK_OK(blitz_process_release(&s->child));
    BLITZ_AWAIT(s, blitz_process_output(cx, &s->out,
                                        &(blitz_command){exit3, NULL, NULL, BLITZ_STDIO_INHERIT,
                                                         BLITZ_STDIO_INHERIT, BLITZ_STDIO_INHERIT},
                                        NULL, 0));
    CHECK_EQ(s->out.result, BLITZ_ECHILD);
    CHECK(s->out.out && strcmp(s->out.out, "gone\n") == 0);
    blitz_free(s->out.out);
    blitz_free(s->out.err);
    BLITZ_END(s);
}

BLITZ_TEST(process_sigchld_ignored) {
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    CHECK_OK(sigaction(SIGCHLD, &ign, &old));
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    tpr_lost_status s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, tpr_lost_status_poll, &s, sizeof s));
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_OK(sigaction(SIGCHLD, &old, NULL));
    return 0;
}
