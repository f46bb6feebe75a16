/* Processes: posix_spawn (glibc, Darwin) or fork + exec with an error pipe, waits
 * on pool threads, and a shared record per child so that reaping happens
 * exactly once.
 *
 * The record (blitz__proc) is reference counted: the child handle holds
 * one reference, every wait in flight another, so a wait abandoned by its
 * task, or a child released while a wait still runs, never touches freed
 * memory. `lock` orders reaping against kill: kill signals the pid only
 * while the record says "not reaped", and reaping sets that under the
 * same lock, so a reaped (and perhaps reused) pid is never signalled.
 *
 * Waiting: the pool thread sleeps on the child's pidfd (poll) or, without
 * pidfds, in short sleeps, and reaps with waitpid(WNOHANG). It wakes at
 * least every 50 ms to see whether its op was abandoned or the runtime is
 * shutting down, so a wait never pins a pool thread or holds up shutdown.
 *
 * Spawning, when fork is used: everything the child needs (resolved
 * path, descriptors) is prepared before fork; between fork and exec the child calls only
 * async-signal-safe functions. Signals are blocked across fork so that no
 * handler (blitz's counting one included) runs in the child before it has
 * reset them. exec failures travel back through a close-on-exec pipe. */
#include "../io/io.h"

#if BLITZ__HAS_IO || BLITZ__WIN32
/* What both platforms share: the argument checks, the ops' front ends
 * (below), and the primitives each platform defines (here for POSIX,
 * process_win32.c for Windows). A status is a waitpid status on POSIX,
 * an exit code or the kill that ended the child on Windows. */

#define BLITZ__PROC_TICK_MS 50
#ifdef SIGKILL
#define BLITZ__SIGKILL SIGKILL
#else
#define BLITZ__SIGKILL 9
#endif

typedef struct {
    blitz__pool_rec base;
    blitz_child child;
    char *input; /* a copy */
    size_t input_len;
    int result, exited, code, signal;
    char *out, *err;
    size_t out_len, err_len;
} blitz__output_rec;

typedef struct {
    char *buf;
    size_t len, cap;
} blitz__outbuf;

/* The end of an output op's collection: on success (rc == 0) each buffer,
 * NUL-terminated (an empty one allocated for it), goes to the record;
 * otherwise, or when that allocation fails, both are freed and the error
 * returned. */
static int blitz__output_finish(blitz__output_rec *o, blitz__outbuf bufs[2], int rc) {
    for (int i = 0; i < 2 && rc == 0; i++)
        if (!bufs[i].buf && (rc = blitz__grow_buffer(&bufs[i].buf, &bufs[i].cap, 0, 1)) != 0)
            break;
    if (rc != 0) {
        blitz__free(bufs[0].buf);
        blitz__free(bufs[1].buf);
        return rc;
    }
    bufs[0].buf[bufs[0].len] = '\0';
    bufs[1].buf[bufs[1].len] = '\0';
    o->out = bufs[0].buf;
    o->out_len = bufs[0].len;
    o->err = bufs[1].buf;
    o->err_len = bufs[1].len;
    return 0;
}

static void blitz__proc_ref(blitz__proc *p);
static void blitz__proc_unref(blitz__proc *p);
/* Takes the status without blocking; 1 once the child has ended. */
static int blitz__proc_try_reap(blitz__proc *p, int64_t *status);
/* Waits on a pool thread; 1 when reaped, 0 when the op gave up. */
static int blitz__proc_wait_blocking(blitz__pool_rec *rec, blitz__proc *p, int64_t *status);
/* BLITZ_OK and the fields, or BLITZ_ECHILD (the status was lost). */
static int blitz__decode_status(int64_t st, int *exited, int *code, int *sig, int *core);
static int blitz__spawn_process(blitz_runtime *rt, const blitz_command *cmd, blitz_child *child);
static int blitz__release_child(blitz_runtime *rt, blitz_child *child);
/* Feeds the input and collects stdout and stderr until both end. */
static int blitz__output_pump(blitz__output_rec *o);
/* Ends a child nobody will read from and reaps it. */
static void blitz__output_end_child(blitz_child *c);

static int blitz__stdio_valid(blitz_stdio m) {
    return m == BLITZ_STDIO_INHERIT || m == BLITZ_STDIO_NULL || m == BLITZ_STDIO_PIPE;
}

/* Clears *child, then BLITZ_EINVAL, BLITZ_ESHUTDOWN or 0. */
static int blitz__spawn_check(blitz_runtime *rt, const blitz_command *cmd, blitz_child *child) {
    if (child) {
        memset(child, 0, sizeof *child);
        child->stdin_fd = child->stdout_fd = child->stderr_fd = -1;
    }
    if (!rt || !cmd || !child || !cmd->argv || !cmd->argv[0] || !*cmd->argv[0] ||
        !blitz__stdio_valid(cmd->stdin_mode) || !blitz__stdio_valid(cmd->stdout_mode) ||
        !blitz__stdio_valid(cmd->stderr_mode))
        return BLITZ_EINVAL;
    if (blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE))
        return BLITZ_ESHUTDOWN;
    return 0;
}
#endif

#if BLITZ__HAS_IO /* POSIX only until the IOCP backend (platform.h) */

extern char **environ;

/* The status of a child that something else reaped: lost. */
#define BLITZ__PROC_STATUS_LOST (-1)

struct blitz__proc {
    blitz__atomic_u32 refs;
    blitz__mutex lock;
    int pid;
    int exit_fd; /* readable once the child exits; -1 when the system has none */
    int reaped;
    int status;        /* waitpid status, once reaped */
    blitz_runtime *rt; /* whose pool reaps a released child */
};

static void blitz__proc_unref(blitz__proc *p) {
    /* Acq_rel: every user's accesses happen before the free. */
    if (blitz__u32_fetch_sub(&p->refs, 1, BLITZ__ACQ_REL) != 1)
        return;
    if (p->exit_fd >= 0)
        close(p->exit_fd);
    blitz__mutex_destroy(&p->lock);
    blitz__free(p);
}

static void blitz__proc_ref(blitz__proc *p) {
    blitz__u32_fetch_add(&p->refs, 1, BLITZ__RELAXED);
}

/* Reaps without blocking. Returns 1 once reaped (now or before). */
static int blitz__proc_try_reap(blitz__proc *p, int64_t *status) {
    blitz__mutex_lock(&p->lock);
    if (!p->reaped) {
        int st;
        pid_t r;
        do
            r = waitpid(p->pid, &st, WNOHANG);
        while (r < 0 && errno == EINTR);
        if (r == p->pid) {
            p->reaped = 1;
            p->status = st;
        } else if (r < 0) {
            /* Reaped behind our back (SIGCHLD ignored, so the kernel
             * reaped it, or a waitpid(-1) elsewhere): the status is lost. */
            p->reaped = 1;
            p->status = BLITZ__PROC_STATUS_LOST;
        }
    }
    int done = p->reaped;
    if (done)
        *status = p->status;
    blitz__mutex_unlock(&p->lock);
    return done;
}

/* Sleeps until the child may have changed state, at most one tick. */
static void blitz__proc_nap(blitz__proc *p, uint32_t *backoff_ms) {
    if (p->exit_fd >= 0) {
        struct pollfd pfd = {p->exit_fd, POLLIN, 0};
        poll(&pfd, 1, BLITZ__PROC_TICK_MS);
        return;
    }
    struct timespec ts = {0, (long)*backoff_ms * 1000000L};
    nanosleep(&ts, NULL);
    if (*backoff_ms < BLITZ__PROC_TICK_MS)
        *backoff_ms *= 2;
}

/* BLITZ_ECHILD (every field 0) when the status was lost, else BLITZ_OK
 * and the fields. */
static int blitz__decode_status(int64_t st, int *exited, int *code, int *sig, int *core) {
    if (st == BLITZ__PROC_STATUS_LOST) {
        *exited = *code = *sig = 0;
        if (core)
            *core = 0;
        return BLITZ_ECHILD;
    }
    *exited = WIFEXITED(st) ? 1 : 0;
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    if (core) {
#ifdef WCOREDUMP
        *core = WIFSIGNALED(st) && WCOREDUMP(st) ? 1 : 0;
#else
        *core = 0;
#endif
    }
    return BLITZ_OK;
}

/* ---- spawning ------------------------------------------------------------------ */

/* The program's path: argv0 itself when it has a '/', else the first
 * executable match in PATH. *out is allocated when not argv0. */
static int blitz__resolve_program(const char *argv0, char **out) {
    *out = NULL;
    if (strchr(argv0, '/'))
        return 0;
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    size_t nlen = strlen(argv0);
    int err = BLITZ_ENOENT;
    for (const char *dir = path;;) {
        const char *end = strchr(dir, ':');
        size_t dlen = end ? (size_t)(end - dir) : strlen(dir);
        char *cand = (char *)blitz__malloc(dlen + nlen + 3);
        if (!cand)
            return BLITZ_ENOMEM;
        if (dlen == 0)
            memcpy(cand, ".", 2), dlen = 1;
        else
            memcpy(cand, dir, dlen);
        cand[dlen] = '/';
        memcpy(cand + dlen + 1, argv0, nlen + 1);
        struct stat st;
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(cand, X_OK) == 0) {
                *out = cand;
                return 0;
            }
            err = BLITZ_EACCES;
        }
        blitz__free(cand);
        if (!end)
            return err;
        dir = end + 1;
    }
}

static void blitz__close_fd(int *fd) {
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* In the child: tells the parent why exec did not happen, and ends. */
static void blitz__report_errno(int err_fd) {
    int e = errno;
    ssize_t n = write(err_fd, &e, sizeof e);
    (void)n;
    _exit(127);
}

/* In the child, after fork: async-signal-safe calls only. */
static void blitz__child_exec(const char *path, const blitz_command *cmd, char *const *env,
                              const int child_fds[3], int err_fd) {
    for (int sig = 1; sig < 65; sig++) {
        struct sigaction cur;
        if (sigaction(sig, NULL, &cur) != 0)
            continue;
        /* The counting handler belongs to the parent; a SIGPIPE ignored by
         * the parent should not be ignored by a program that expects it. */
        if ((cur.sa_handler == blitz__sig_handler) || (sig == SIGPIPE && cur.sa_handler == SIG_IGN))
            signal(sig, SIG_DFL);
    }
    for (int i = 0; i < 3; i++) {
        if (child_fds[i] < 0)
            continue;
        if (child_fds[i] == i) {
            /* Already in place: only the close-on-exec flag must go. */
            int fl = fcntl(i, F_GETFD);
            if (fl >= 0)
                fcntl(i, F_SETFD, fl & ~FD_CLOEXEC);
        } else if (dup2(child_fds[i], i) < 0) {
            goto fail;
        }
    }
    if (cmd->cwd && chdir(cmd->cwd) != 0)
        goto fail;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, (char *const *)(uintptr_t)cmd->argv, env);
fail:
    blitz__report_errno(err_fd);
}

#if (defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))) || \
    defined(__APPLE__)
#define BLITZ__SPAWN_FALLBACK 1
#if defined(__GLIBC__)
/* Hidden under strict feature macros; the redeclaration is compatible. */
int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *actions, const char *path);
#endif
#if defined(__APPLE__)
/* Darwin closes every descriptor the actions do not name, whatever its
 * close-on-exec flag (no window in which a descriptor another thread just
 * opened leaks into the child); inherited stdio is named explicitly. */
#define BLITZ__SPAWN_FLAGS POSIX_SPAWN_CLOEXEC_DEFAULT
#else
#define BLITZ__SPAWN_FLAGS 0
#endif

/* posix_spawn shares the parent's memory until the exec (no page tables
 * to copy and tear down), which makes it several times faster than fork
 * here; glibc reports exec errors and resets the parent's handlers in the
 * child. Returns BLITZ__SPAWN_FALLBACK when fork must do it (a standard
 * descriptor that is already in place keeps its close-on-exec flag
 * through a self-dup2 in older libcs). */
static int blitz__spawn_posix(const char *path, const blitz_command *cmd, char *const *env,
                              const int child_fds[3], pid_t *pid) {
    for (int i = 0; i < 3; i++)
        if (child_fds[i] == i)
            return BLITZ__SPAWN_FALLBACK;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return BLITZ_ENOMEM;
    if (posix_spawnattr_init(&attr) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return BLITZ_ENOMEM;
    }
    int e = 0;
    for (int i = 0; i < 3 && e == 0; i++) {
        if (child_fds[i] >= 0)
            e = posix_spawn_file_actions_adddup2(&fa, child_fds[i], i);
#if defined(__APPLE__)
        else if (fcntl(i, F_GETFD) >= 0)
            e = posix_spawn_file_actions_addinherit_np(&fa, i);
#endif
    }
    if (e == 0 && cmd->cwd)
        e = posix_spawn_file_actions_addchdir_np(&fa, cmd->cwd);
    /* The child starts with no signal blocked and SIGPIPE at its default
     * even when this process ignores it. */
    sigset_t none, deflt;
    sigemptyset(&none);
    sigemptyset(&deflt);
    struct sigaction cur;
    if (sigaction(SIGPIPE, NULL, &cur) == 0 && cur.sa_handler == SIG_IGN)
        sigaddset(&deflt, SIGPIPE);
    if (e == 0)
        e = posix_spawnattr_setsigmask(&attr, &none);
    if (e == 0)
        e = posix_spawnattr_setsigdefault(&attr, &deflt);
    if (e == 0)
        e = posix_spawnattr_setflags(
            &attr, (short)(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | BLITZ__SPAWN_FLAGS));
    if (e == 0)
        e = posix_spawn(pid, path, &fa, &attr, (char *const *)(uintptr_t)cmd->argv, env);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return e == 0 ? 0 : blitz__from_errno(e);
}
#endif

static int blitz__spawn_process(blitz_runtime *rt, const blitz_command *cmd, blitz_child *child) {
    int rc0 = blitz__spawn_check(rt, cmd, child);
    if (rc0 != 0)
        return rc0;
    char *resolved = NULL;
    int rc = blitz__resolve_program(cmd->argv[0], &resolved);
    if (rc != 0)
        return rc;
    const char *path = resolved ? resolved : cmd->argv[0];
    const blitz_stdio modes[3] = {cmd->stdin_mode, cmd->stdout_mode, cmd->stderr_mode};
    int parent_fds[3] = {-1, -1, -1}, child_fds[3] = {-1, -1, -1}, err_pipe[2] = {-1, -1};
    int devnull = -1;
    blitz__proc *p = NULL;
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (modes[i] == BLITZ_STDIO_PIPE) {
            int fds[2];
            rc = blitz__pipe_open(fds, 0);
            if (rc == 0) {
                /* stdin: the child reads fds[0]; stdout/stderr: it writes fds[1]. */
                child_fds[i] = i == 0 ? fds[0] : fds[1];
                parent_fds[i] = i == 0 ? fds[1] : fds[0];
            }
        } else if (modes[i] == BLITZ_STDIO_NULL) {
            if (devnull < 0 && (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
                rc = blitz__from_errno(errno);
            child_fds[i] = devnull;
        }
    }
    if (rc == 0)
        rc = blitz__pipe_open(err_pipe, 0);
    if (rc == 0) {
        p = (blitz__proc *)blitz__calloc(sizeof *p);
        if (!p || blitz__mutex_init(&p->lock) != 0)
            rc = BLITZ_ENOMEM;
    }
    pid_t pid = -1;
    int forked = 0;
    char *const *env = cmd->env ? (char *const *)(uintptr_t)cmd->env : environ;
#ifdef BLITZ__SPAWN_FALLBACK
    if (rc == 0) {
        rc = blitz__spawn_posix(path, cmd, env, child_fds, &pid);
        forked = rc == BLITZ__SPAWN_FALLBACK;
        if (forked)
            rc = 0;
    }
#else
    forked = 1;
#endif
    if (rc == 0 && forked) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid = fork();
        if (pid == 0)
            blitz__child_exec(path, cmd, env, child_fds, err_pipe[1]);
        int fork_errno = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (pid < 0)
            rc = blitz__from_errno(fork_errno);
    }
    blitz__close_fd(&err_pipe[1]);
    for (int i = 0; i < 3; i++)
        if (child_fds[i] >= 0 && child_fds[i] != devnull)
            blitz__close_fd(&child_fds[i]);
    blitz__close_fd(&devnull);
    if (rc == 0 && forked) {
        int e = 0;
        ssize_t n;
        do
            n = read(err_pipe[0], &e, sizeof e);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof e) {
            /* exec failed: the child is already on its way out. */
            int st;
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
            }
            rc = blitz__from_errno(e);
        }
    }
    blitz__close_fd(&err_pipe[0]);
    blitz__free(resolved);
    if (rc != 0) {
        for (int i = 0; i < 3; i++)
            blitz__close_fd(&parent_fds[i]);
        if (p) {
            blitz__mutex_destroy(&p->lock);
            blitz__free(p);
        }
        return rc;
    }
    blitz__u32_store(&p->refs, 1, BLITZ__RELAXED);
    p->pid = (int)pid;
    p->rt = rt;
    p->exit_fd = blitz__proc_exit_fd((int)pid);
    child->pid = (int)pid;
    child->stdin_fd = parent_fds[0];
    child->stdout_fd = parent_fds[1];
    child->stderr_fd = parent_fds[2];
    child->blitz__handle = p;
    return BLITZ_OK;
}

static int blitz__proc_wait_blocking(blitz__pool_rec *rec, blitz__proc *p, int64_t *status) {
    uint32_t backoff = 1;
    while (!blitz__proc_try_reap(p, status)) {
        if (blitz__pool_rec_give_up(rec))
            return 0;
        blitz__proc_nap(p, &backoff);
    }
    return 1;
}

BLITZ_API int blitz_process_kill(blitz_child *child, int signo) {
    if (!child || !child->blitz__handle || signo < 0 || signo > 64)
        return BLITZ_EINVAL;
    blitz__proc *p = child->blitz__handle;
    blitz__mutex_lock(&p->lock);
    int rc = p->reaped                  ? BLITZ_ESRCH
             : kill(p->pid, signo) == 0 ? BLITZ_OK
                                        : blitz__from_errno(errno);
    blitz__mutex_unlock(&p->lock);
    return rc;
}

typedef struct {
    blitz__proc *p;
} blitz__reaper_state;

static void blitz__reaper_fn(void *state) {
    blitz__proc *p = ((blitz__reaper_state *)state)->p;
    blitz_runtime *rt = p->rt;
    uint32_t backoff = 1;
    int64_t st;
    while (!blitz__proc_try_reap(p, &st) && !(rt && blitz__u32_load(&rt->shutdown, BLITZ__ACQUIRE)))
        blitz__proc_nap(p, &backoff);
}

static void blitz__reaper_drop(void *state) {
    blitz__proc_unref(((blitz__reaper_state *)state)->p);
}

static int blitz__release_child(blitz_runtime *rt, blitz_child *child) {
    if (!child || !child->blitz__handle)
        return BLITZ_EINVAL;
    blitz__close_fd(&child->stdin_fd);
    blitz__close_fd(&child->stdout_fd);
    blitz__close_fd(&child->stderr_fd);
    blitz__proc *p = child->blitz__handle;
    child->blitz__handle = NULL;
    int64_t st;
    if (!blitz__proc_try_reap(p, &st) && rt) {
        blitz__reaper_state rs = {p};
        blitz_blocking_opts o = {blitz__reaper_fn, &rs, sizeof rs, blitz__reaper_drop};
        if (blitz_spawn_blocking_ex(rt, &o, NULL) == BLITZ_OK)
            return BLITZ_OK; /* the job's state holds our reference now */
    }
    blitz__proc_unref(p);
    return BLITZ_OK;
}

BLITZ_API int blitz_process_release(blitz_child *child) {
    return blitz__release_child(child && child->blitz__handle ? child->blitz__handle->rt : NULL,
                                child);
}

static int blitz__output_pump(blitz__output_rec *o) {
    blitz_child *c = &o->child;
    blitz__outbuf bufs[2];
    memset(bufs, 0, sizeof bufs);
    size_t written = 0;
    int rc = 0;
    if (c->stdin_fd >= 0 && o->input_len == 0)
        blitz__close_fd(&c->stdin_fd);
    /* A blocking write of the whole input would wait for the child to
     * read while the child waits for us to drain its output. */
    if (c->stdin_fd >= 0) {
        int fl = fcntl(c->stdin_fd, F_GETFL);
        if (fl >= 0)
            fcntl(c->stdin_fd, F_SETFL, fl | O_NONBLOCK);
    }
    while (rc == 0 && (c->stdout_fd >= 0 || c->stderr_fd >= 0 || c->stdin_fd >= 0)) {
        if (blitz__pool_rec_give_up(&o->base)) {
            rc = BLITZ_ECANCELED;
            break;
        }
        struct pollfd pfd[3];
        int *fds[3] = {&c->stdout_fd, &c->stderr_fd, &c->stdin_fd};
        nfds_t n = 0;
        int which[3];
        for (int i = 0; i < 3; i++) {
            if (*fds[i] < 0)
                continue;
            pfd[n].fd = *fds[i];
            pfd[n].events = i == 2 ? POLLOUT : POLLIN;
            pfd[n].revents = 0;
            which[n++] = i;
        }
        int r = poll(pfd, n, BLITZ__PROC_TICK_MS);
        if (r < 0 && errno != EINTR) {
            rc = blitz__from_errno(errno);
            break;
        }
        for (nfds_t k = 0; k < (nfds_t)(r > 0 ? n : 0); k++) {
            if (!pfd[k].revents)
                continue;
            int i = which[k];
            if (i == 2) {
                const char *in = (const char *)o->input + written;
                ssize_t w = write(c->stdin_fd, in, o->input_len - written);
                if (w > 0)
                    written += (size_t)w;
                if (w < 0 && errno == EPIPE)
                    blitz__consume_sigpipe();
                /* Done, or the child stopped reading: it gets EOF. */
                if (written == o->input_len || (w < 0 && errno != EINTR && errno != EAGAIN))
                    blitz__close_fd(&c->stdin_fd);
                continue;
            }
            blitz__outbuf *b = &bufs[i];
            if (b->len + 4096 + 1 > b->cap &&
                (rc = blitz__grow_buffer(&b->buf, &b->cap, b->len, b->len + 4096 + 1)) != 0)
                break;
            ssize_t got = read(*fds[i], b->buf + b->len, b->cap - b->len - 1);
            if (got > 0)
                b->len += (size_t)got;
            else if (got == 0 || (errno != EINTR && errno != EAGAIN))
                blitz__close_fd(fds[i]);
        }
    }
    return blitz__output_finish(o, bufs, rc);
}

/* Ends a child nobody will read from (SIGKILL) and reaps it. */
static void blitz__output_end_child(blitz_child *c) {
    blitz_process_kill(c, SIGKILL);
    int64_t st;
    uint32_t backoff = 1;
    while (!blitz__proc_try_reap(c->blitz__handle, &st))
        blitz__proc_nap(c->blitz__handle, &backoff);
}

#endif /* BLITZ__HAS_IO */

#if BLITZ__HAS_IO || BLITZ__WIN32

BLITZ_API int blitz_process_spawn(blitz_runtime *rt, const blitz_command *cmd, blitz_child *child) {
    return blitz__spawn_process(rt, cmd, child);
}

/* ---- waiting ------------------------------------------------------------------ */

typedef struct {
    blitz__pool_rec base;
    blitz__proc *proc;
    int64_t status;
    int reaped;
} blitz__wait_rec;

/* Waits for the child on a pool thread; 1 when reaped, 0 when it gave up. */
static void blitz__wait_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__wait_rec *w = (blitz__wait_rec *)rec;
    w->reaped = !cancelled && blitz__proc_wait_blocking(rec, w->proc, &w->status);
}

static void blitz__wait_discard(blitz__pool_rec *rec) {
    blitz__proc_unref(((blitz__wait_rec *)rec)->proc);
}

static void blitz__wait_fill(blitz_wait_op *op, int64_t st) {
    op->result = blitz__decode_status(st, &op->exited, &op->code, &op->signal, &op->core_dumped);
}

BLITZ_API blitz_poll blitz_process_wait(blitz_cx *cx, blitz_wait_op *op, blitz_child *child) {
    if (!op)
        return BLITZ_READY;
    blitz__pool_rec *done;
    if (!blitz__pool_op_idle(&op->blitz__op)) {
        if (blitz__pool_op_poll(cx, &op->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_process_wait_cancel, op);
        blitz__wait_rec *w = (blitz__wait_rec *)done;
        if (w->reaped)
            blitz__wait_fill(op, w->status);
        else
            op->result = BLITZ_ECANCELED;
        blitz__pool_rec_free(done);
        return BLITZ_READY;
    }
    if (!cx || !child || !child->blitz__handle) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    /* Already reaped: no thread needed. */
    int64_t st;
    if (blitz__proc_try_reap(child->blitz__handle, &st)) {
        blitz__wait_fill(op, st);
        return BLITZ_READY;
    }
    blitz__wait_rec *w =
        (blitz__wait_rec *)blitz__pool_rec_new(sizeof *w, blitz__wait_exec, blitz__wait_discard);
    if (!w) {
        op->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    blitz__proc_ref(child->blitz__handle);
    w->proc = child->blitz__handle;
    int err = 0;
    if (blitz__pool_op_start(cx, &op->blitz__op, &w->base, &err) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_process_wait_cancel, op);
    op->result = err;
    return BLITZ_READY;
}

BLITZ_API void blitz_process_wait_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_wait_op *w = (blitz_wait_op *)p;
    if (w)
        blitz__pool_op_cancel(&w->blitz__op);
}

BLITZ_API int blitz_process_try_wait(blitz_child *child, blitz_wait_op *status) {
    if (!child || !child->blitz__handle || !status)
        return BLITZ_EINVAL;
    int64_t st;
    if (!blitz__proc_try_reap(child->blitz__handle, &st))
        return 0;
    status->result = blitz__decode_status(st, &status->exited, &status->code, &status->signal,
                                          &status->core_dumped);
    return 1;
}

BLITZ_API int blitz_process_terminate(blitz_child *child) {
    return blitz_process_kill(child, SIGTERM);
}

/* A released child that was still running: a detached pool job reaps it. */
/* ---- collecting output ------------------------------------------------------------ */

static void blitz__output_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__output_rec *o = (blitz__output_rec *)rec;
    int rc = cancelled ? BLITZ_ECANCELED : blitz__output_pump(o);
    int64_t st = 0;
    if (rc == 0 && !blitz__proc_wait_blocking(rec, o->child.blitz__handle, &st))
        rc = BLITZ_ECANCELED;
    if (rc != 0) {
        blitz__output_end_child(&o->child);
        blitz__free(o->out);
        blitz__free(o->err);
        o->out = o->err = NULL;
        o->out_len = o->err_len = 0;
    } else {
        rc = blitz__decode_status(st, &o->exited, &o->code, &o->signal, NULL);
    }
    o->result = rc;
    blitz__release_child(NULL, &o->child);
}

static void blitz__output_discard(blitz__pool_rec *rec) {
    blitz__output_rec *o = (blitz__output_rec *)rec;
    if (o->child.blitz__handle) {
        /* Never ran: the child is still ours to end. */
        blitz__output_end_child(&o->child);
        blitz__release_child(NULL, &o->child);
    }
    blitz__free(o->out);
    blitz__free(o->err);
    blitz__free(o->input);
}

BLITZ_API blitz_poll blitz_process_output(blitz_cx *cx, blitz_output_op *op,
                                          const blitz_command *cmd, const void *input,
                                          size_t input_len) {
    if (!op)
        return BLITZ_READY;
    blitz__pool_rec *done;
    if (!blitz__pool_op_idle(&op->blitz__op)) {
        if (blitz__pool_op_poll(cx, &op->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_process_output_cancel, op);
        blitz__output_rec *o = (blitz__output_rec *)done;
        op->result = o->result;
        op->exited = o->exited;
        op->code = o->code;
        op->signal = o->signal;
        op->out = o->out;
        op->err = o->err;
        op->out_len = o->out_len;
        op->err_len = o->err_len;
        o->out = o->err = NULL;
        blitz__pool_rec_free(done);
        return BLITZ_READY;
    }
    op->out = op->err = NULL;
    op->out_len = op->err_len = 0;
    if (!cx || !cmd || (!input && input_len)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__output_rec *o = (blitz__output_rec *)blitz__pool_rec_new(sizeof *o, blitz__output_exec,
                                                                    blitz__output_discard);
    if (o && input_len) {
        o->input = (char *)blitz__malloc(input_len);
        if (o->input)
            memcpy(o->input, input, input_len);
    }
    if (!o || (input_len && !o->input)) {
        if (o)
            blitz__pool_rec_free(&o->base);
        op->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    o->input_len = input_len;
    blitz_command c = *cmd;
    c.stdin_mode = input ? BLITZ_STDIO_PIPE : BLITZ_STDIO_NULL;
    c.stdout_mode = BLITZ_STDIO_PIPE;
    c.stderr_mode = BLITZ_STDIO_PIPE;
    int rc = blitz__spawn_process(blitz_cx_runtime(cx), &c, &o->child);
    if (rc != 0) {
        blitz__pool_rec_free(&o->base);
        op->result = rc;
        return BLITZ_READY;
    }
    if (blitz__pool_op_start(cx, &op->blitz__op, &o->base, &rc) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_process_output_cancel, op);
    op->result = rc;
    return BLITZ_READY;
}

BLITZ_API void blitz_process_output_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_output_op *o = (blitz_output_op *)p;
    if (o)
        blitz__pool_op_cancel(&o->blitz__op);
}

BLITZ__OP_ADAPTER(blitz__wait_value_poll, blitz_wait_op, op,
                  op ? blitz_process_wait(cx, op, op->blitz__child) : BLITZ_READY)
BLITZ_API blitz_op blitz_op_process_wait(blitz_wait_op *op, blitz_child *child) {
    if (op)
        op->blitz__child = child;
    return blitz_op_make(blitz__wait_value_poll, blitz_process_wait_cancel, op);
}

BLITZ__OP_ADAPTER(blitz__output_value_poll, blitz_output_op, op,
                  op ? blitz_process_output(cx, op, op->blitz__cmd, op->blitz__input,
                                            op->blitz__input_len)
                     : BLITZ_READY)
BLITZ_API blitz_op blitz_op_process_output(blitz_output_op *op, const blitz_command *cmd,
                                           const void *input, size_t input_len) {
    if (op) {
        op->blitz__cmd = cmd;
        op->blitz__input = input;
        op->blitz__input_len = input_len;
    }
    return blitz_op_make(blitz__output_value_poll, blitz_process_output_cancel, op);
}

#endif
