/* Processes on Windows: the platform half of process.c (spawning,
 * reaping, kill, release, the output pump) with Win32 calls.
 *
 * Spawning: CreateProcessW with a command line quoted from argv as the
 * Microsoft C runtime parses it back, a UTF-16 environment block sorted as
 * Windows wants, no console window. The child starts suspended, joins a
 * job object of its own (so kill ends the processes it started too) and
 * then runs. Its stdio handles are passed by PROC_THREAD_ATTRIBUTE_HANDLE_LIST:
 * it inherits those and nothing else, not another child's pipe ends that
 * happen to be inheritable at the same moment.
 *
 * Pipes: the parent's ends are overlapped (blitz_sock_adopt can take
 * them; the file ops wait on an event for them), the child's are plain
 * blocking handles, as programs expect.
 *
 * Status: the record holds the process handle, so "reaped" only means the
 * exit code was taken: kill never reaches another process with a reused
 * id. A kill whose TerminateJobObject ended the child is remembered, and
 * the child reads as killed by that signal number (exit code 128 + signo
 * for those that look at it from outside). The job is not killed when
 * closed: as on POSIX a released child runs on. */
#include "../io/io.h"

#if BLITZ__WIN32

#define BLITZ__PROC_KILLED (INT64_C(1) << 32)

struct blitz__proc {
    blitz__atomic_u32 refs;
    blitz__mutex lock;
    HANDLE process, job; /* job: NULL when the child could not join one */
    int reaped;
    int killed_by; /* the signal number of a kill that ended it, or 0 */
    int64_t status;
    blitz_runtime *rt;
};

static void blitz__proc_unref(blitz__proc *p) {
    /* Acq_rel: every user's accesses happen before the free. */
    if (blitz__u32_fetch_sub(&p->refs, 1, BLITZ__ACQ_REL) != 1)
        return;
    CloseHandle(p->process);
    if (p->job)
        CloseHandle(p->job);
    blitz__mutex_destroy(&p->lock);
    blitz__free(p);
}

static void blitz__proc_ref(blitz__proc *p) {
    blitz__u32_fetch_add(&p->refs, 1, BLITZ__RELAXED);
}

static int blitz__proc_try_reap(blitz__proc *p, int64_t *status) {
    blitz__mutex_lock(&p->lock);
    if (!p->reaped && WaitForSingleObject(p->process, 0) == WAIT_OBJECT_0) {
        DWORD code = 0;
        GetExitCodeProcess(p->process, &code);
        p->reaped = 1;
        p->status = p->killed_by && code == (DWORD)(128 + p->killed_by)
                        ? BLITZ__PROC_KILLED | p->killed_by
                        : (int64_t)code;
    }
    int done = p->reaped;
    if (done)
        *status = p->status;
    blitz__mutex_unlock(&p->lock);
    return done;
}

static int blitz__proc_wait_blocking(blitz__pool_rec *rec, blitz__proc *p, int64_t *status) {
    while (!blitz__proc_try_reap(p, status)) {
        if (blitz__pool_rec_give_up(rec))
            return 0;
        WaitForSingleObject(p->process, BLITZ__PROC_TICK_MS);
    }
    return 1;
}

/* Exit codes are DWORDs: `code` is that value as an int (NTSTATUS codes
 * such as 0xC0000005 come out negative). */
static int blitz__decode_status(int64_t st, int *exited, int *code, int *sig, int *core) {
    int killed = (st & BLITZ__PROC_KILLED) != 0;
    *exited = !killed;
    *code = killed ? 0 : (int)(uint32_t)st;
    *sig = killed ? (int)(st & 0xff) : 0;
    if (core)
        *core = 0;
    return BLITZ_OK;
}

/* ---- spawning ------------------------------------------------------------------ */

typedef struct {
    wchar_t *buf;
    size_t len, cap;
    int err;
} blitz__wbuf;

static void blitz__wbuf_put(blitz__wbuf *b, const wchar_t *s, size_t n) {
    if (b->err)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        wchar_t *nb = (wchar_t *)blitz__malloc(cap * sizeof *nb);
        if (!nb) {
            b->err = BLITZ_ENOMEM;
            return;
        }
        if (b->len)
            memcpy(nb, b->buf, b->len * sizeof *nb);
        blitz__free(b->buf);
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n * sizeof *s);
    b->len += n;
    b->buf[b->len] = 0;
}

static void blitz__wbuf_rep(blitz__wbuf *b, wchar_t c, size_t n) {
    while (n--)
        blitz__wbuf_put(b, &c, 1);
}

/* One argument as the C runtime's parser reads it back: quoted when it is
 * empty or has blanks or quotes; inside quotes, backslashes are literal
 * unless they precede a quote (or the closing quote), where they double. */
static void blitz__quote_arg(blitz__wbuf *b, const wchar_t *a) {
    if (*a && !wcspbrk(a, L" \t\n\v\"")) {
        blitz__wbuf_put(b, a, wcslen(a));
        return;
    }
    blitz__wbuf_put(b, L"\"", 1);
    for (;; a++) {
        size_t slashes = 0;
        while (*a == L'\\')
            a++, slashes++;
        if (!*a) {
            blitz__wbuf_rep(b, L'\\', slashes * 2);
            break;
        }
        if (*a == L'"') {
            blitz__wbuf_rep(b, L'\\', slashes * 2 + 1);
        } else {
            blitz__wbuf_rep(b, L'\\', slashes);
        }
        blitz__wbuf_put(b, a, 1);
    }
    blitz__wbuf_put(b, L"\"", 1);
}

/* The command line. argv[0] is read by other rules (up to the next quote,
 * no escapes): it is quoted whole and may not hold a quote. */
static int blitz__command_line(const char *const *argv, wchar_t **out) {
    blitz__wbuf b = {NULL, 0, 0, 0};
    for (size_t i = 0; argv[i] && !b.err; i++) {
        int err = 0;
        wchar_t *w = blitz__utf16(argv[i], &err);
        if (!w) {
            b.err = err;
            break;
        }
        if (i == 0) {
            if (wcschr(w, L'"'))
                b.err = BLITZ_EINVAL;
            blitz__wbuf_put(&b, L"\"", 1);
            blitz__wbuf_put(&b, w, wcslen(w));
            blitz__wbuf_put(&b, L"\"", 1);
        } else {
            blitz__wbuf_put(&b, L" ", 1);
            blitz__quote_arg(&b, w);
        }
        blitz__free(w);
    }
    if (b.err) {
        blitz__free(b.buf);
        return b.err;
    }
    *out = b.buf;
    return 0;
}

/* Names compare without case, as Windows looks them up. */
static int blitz__env_cmp(const void *a, const void *b) {
    const wchar_t *x = *(const wchar_t *const *)a, *y = *(const wchar_t *const *)b;
    for (;; x++, y++) {
        wchar_t cx = *x == L'=' ? 0 : towupper(*x), cy = *y == L'=' ? 0 : towupper(*y);
        if (cx != cy || !cx)
            return cx < cy ? -1 : cx > cy;
    }
}

/* "A=1\0B=2\0\0", sorted by name (CreateProcessW's documented order). */
static int blitz__env_block(const char *const *env, wchar_t **out) {
    size_t n = 0;
    while (env[n])
        n++;
    wchar_t **vars = (wchar_t **)blitz__calloc((n + 1) * sizeof *vars);
    if (!vars)
        return BLITZ_ENOMEM;
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        vars[i] = blitz__utf16(env[i], &err);
    blitz__wbuf b = {NULL, 0, 0, err};
    if (!err) {
        qsort(vars, n, sizeof *vars, blitz__env_cmp);
        for (size_t i = 0; i < n; i++)
            blitz__wbuf_put(&b, vars[i], wcslen(vars[i]) + 1);
        blitz__wbuf_put(&b, L"\0", n ? 1 : 2);
    }
    for (size_t i = 0; i < n; i++)
        blitz__free(vars[i]);
    blitz__free(vars);
    if (b.err) {
        blitz__free(b.buf);
        return b.err;
    }
    *out = b.buf;
    return 0;
}

static void blitz__close_handle(HANDLE *h) {
    if (*h && *h != INVALID_HANDLE_VALUE)
        CloseHandle(*h);
    *h = NULL;
}

/* A parent's end as a C runtime descriptor (taking the handle). */
static int blitz__proc_crt_fd(HANDLE *h, int writable) {
    int fd = _open_osfhandle((intptr_t)*h,
                             (writable ? _O_WRONLY : _O_RDONLY) | _O_BINARY | _O_NOINHERIT);
    if (fd >= 0)
        *h = NULL;
    return fd;
}

static int blitz__spawn_process(blitz_runtime *rt, const blitz_command *cmd, blitz_child *child) {
    int rc = blitz__spawn_check(rt, cmd, child);
    if (rc != 0)
        return rc;
    wchar_t *line = NULL, *envb = NULL, *cwd = NULL;
    HANDLE parent[3] = {NULL, NULL, NULL}, kid[3] = {NULL, NULL, NULL}, nul = NULL;
    int fds[3] = {-1, -1, -1};
    LPPROC_THREAD_ATTRIBUTE_LIST attrs = NULL;
    PROCESS_INFORMATION pi;
    memset(&pi, 0, sizeof pi);
    blitz__proc *p = NULL;
    rc = blitz__command_line(cmd->argv, &line);
    if (rc == 0 && cmd->env)
        rc = blitz__env_block(cmd->env, &envb);
    if (rc == 0 && cmd->cwd && !(cwd = blitz__utf16(cmd->cwd, &rc)))
        goto out;
    const blitz_stdio modes[3] = {cmd->stdin_mode, cmd->stdout_mode, cmd->stderr_mode};
    static const DWORD std_ids[3] = {STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE};
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (modes[i] == BLITZ_STDIO_PIPE) {
            /* stdin: the child reads; stdout/stderr: it writes. */
            HANDLE r, w;
            rc = blitz__win_pipe_pair(
                &r, &w,
                i == 0 ? BLITZ__WPIPE_WRITE_OVERLAPPED | BLITZ__WPIPE_READ_INHERIT
                       : BLITZ__WPIPE_READ_OVERLAPPED | BLITZ__WPIPE_WRITE_INHERIT,
                0);
            if (rc == 0) {
                kid[i] = i == 0 ? r : w;
                parent[i] = i == 0 ? w : r;
            }
        } else if (modes[i] == BLITZ_STDIO_NULL) {
            SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
            if (!nul) {
                nul = CreateFileW(L"NUL", GENERIC_READ | GENERIC_WRITE,
                                  FILE_SHARE_READ | FILE_SHARE_WRITE, &sa, OPEN_EXISTING, 0, NULL);
                if (nul == INVALID_HANDLE_VALUE) {
                    nul = NULL;
                    rc = blitz__from_win32(GetLastError());
                }
            }
            kid[i] = nul;
        } else {
            /* The parent's own, duplicated inheritable (it may not be). */
            HANDLE own = GetStdHandle(std_ids[i]);
            if (own && own != INVALID_HANDLE_VALUE &&
                !DuplicateHandle(GetCurrentProcess(), own, GetCurrentProcess(), &kid[i], 0, TRUE,
                                 DUPLICATE_SAME_ACCESS))
                kid[i] = NULL;
        }
    }
    if (rc != 0)
        goto out;
    /* The handle list names each handle once. */
    HANDLE list[3];
    DWORD nlist = 0;
    for (int i = 0; i < 3; i++) {
        int seen = !kid[i];
        for (DWORD k = 0; k < nlist && !seen; k++)
            seen = list[k] == kid[i];
        if (!seen)
            list[nlist++] = kid[i];
    }
    SIZE_T size = 0;
    InitializeProcThreadAttributeList(NULL, 1, 0, &size);
    attrs = (LPPROC_THREAD_ATTRIBUTE_LIST)blitz__malloc(size);
    p = (blitz__proc *)blitz__calloc(sizeof *p);
    if (!attrs || !p || blitz__mutex_init(&p->lock) != 0) {
        blitz__free(p);
        p = NULL;
        rc = BLITZ_ENOMEM;
        goto out;
    }
    if (!InitializeProcThreadAttributeList(attrs, 1, 0, &size)) {
        blitz__free(attrs);
        attrs = NULL;
        rc = blitz__from_win32(GetLastError());
        goto out;
    }
    if (nlist && !UpdateProcThreadAttribute(attrs, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, list,
                                            nlist * sizeof list[0], NULL, NULL)) {
        rc = blitz__from_win32(GetLastError());
        goto out;
    }
    STARTUPINFOEXW si;
    memset(&si, 0, sizeof si);
    si.StartupInfo.cb = sizeof si;
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdInput = kid[0];
    si.StartupInfo.hStdOutput = kid[1];
    si.StartupInfo.hStdError = kid[2];
    si.lpAttributeList = attrs;
    DWORD flags = CREATE_UNICODE_ENVIRONMENT | CREATE_NO_WINDOW | CREATE_SUSPENDED |
                  EXTENDED_STARTUPINFO_PRESENT;
    if (!CreateProcessW(NULL, line, NULL, NULL, nlist != 0, flags, envb, cwd, &si.StartupInfo,
                        &pi)) {
        DWORD e = GetLastError();
        /* A missing working directory reads as such, not as "not a directory". */
        rc = e == ERROR_DIRECTORY        ? BLITZ_ENOENT
             : e == ERROR_BAD_EXE_FORMAT ? BLITZ_ENOEXEC
                                         : blitz__from_win32(e);
        goto out;
    }
    p->job = CreateJobObjectW(NULL, NULL);
    if (p->job && !AssignProcessToJobObject(p->job, pi.hProcess))
        blitz__close_handle(&p->job);
    ResumeThread(pi.hThread);
    CloseHandle(pi.hThread);
    for (int i = 0; i < 3 && rc == 0; i++)
        if (parent[i] && (fds[i] = blitz__proc_crt_fd(&parent[i], i == 0)) < 0)
            rc = BLITZ_EMFILE;
    if (rc != 0) {
        /* Nobody could talk to it: end it rather than leave it running. */
        TerminateProcess(pi.hProcess, 1);
        WaitForSingleObject(pi.hProcess, INFINITE);
        CloseHandle(pi.hProcess);
        blitz__close_handle(&p->job);
        goto out;
    }
    blitz__u32_store(&p->refs, 1, BLITZ__RELAXED);
    p->process = pi.hProcess;
    p->rt = rt;
    child->pid = (int)pi.dwProcessId;
    child->stdin_fd = fds[0];
    child->stdout_fd = fds[1];
    child->stderr_fd = fds[2];
    child->blitz__handle = p;
    p = NULL;
out:
    if (p) {
        blitz__mutex_destroy(&p->lock);
        blitz__free(p);
    }
    if (attrs) {
        DeleteProcThreadAttributeList(attrs);
        blitz__free(attrs);
    }
    for (int i = 0; i < 3; i++) {
        if (kid[i] != nul)
            blitz__close_handle(&kid[i]);
        blitz__close_handle(&parent[i]);
        if (rc != 0 && fds[i] >= 0)
            _close(fds[i]);
    }
    blitz__close_handle(&nul);
    blitz__free(line);
    blitz__free(envb);
    blitz__free(cwd);
    return rc;
}

/* ---- kill and release ---------------------------------------------------------- */

/* Every signal number ends the child (and what it started) with exit
 * code 128 + signo; 0 only checks that it was not reaped. */
BLITZ_API int blitz_process_kill(blitz_child *child, int signo) {
    if (!child || !child->blitz__handle || signo < 0 || signo > 64)
        return BLITZ_EINVAL;
    blitz__proc *p = child->blitz__handle;
    blitz__mutex_lock(&p->lock);
    int rc = BLITZ_OK;
    if (p->reaped) {
        rc = BLITZ_ESRCH;
    } else if (signo && WaitForSingleObject(p->process, 0) == WAIT_TIMEOUT) {
        /* Still running (one that ended but is not reaped is left alone,
         * like a zombie on POSIX: its status stays its own). */
        if (!p->killed_by)
            p->killed_by = signo;
        UINT code = (UINT)(128 + p->killed_by);
        BOOL ok = p->job ? TerminateJobObject(p->job, code) : TerminateProcess(p->process, code);
        if (!ok && WaitForSingleObject(p->process, 0) == WAIT_TIMEOUT)
            rc = blitz__from_win32(GetLastError());
    }
    blitz__mutex_unlock(&p->lock);
    return rc;
}

static void blitz__close_fd(int *fd) {
    if (*fd >= 0)
        _close(*fd);
    *fd = -1;
}

/* Nothing to reap on Windows: dropping the handle lets the child go. */
static int blitz__release_child(blitz_runtime *rt, blitz_child *child) {
    (void)rt;
    if (!child || !child->blitz__handle)
        return BLITZ_EINVAL;
    blitz__close_fd(&child->stdin_fd);
    blitz__close_fd(&child->stdout_fd);
    blitz__close_fd(&child->stderr_fd);
    blitz__proc *p = child->blitz__handle;
    child->blitz__handle = NULL;
    blitz__proc_unref(p);
    return BLITZ_OK;
}

BLITZ_API int blitz_process_release(blitz_child *child) {
    return blitz__release_child(NULL, child);
}

/* ---- collecting output ------------------------------------------------------------ */

/* Overlapped reads of stdout and stderr and a write of the input, each
 * with its own event, waited for together one tick at a time. */
static int blitz__output_pump(blitz__output_rec *o) {
    blitz_child *c = &o->child;
    blitz__outbuf bufs[2];
    memset(bufs, 0, sizeof bufs);
    int *fds[3] = {&c->stdout_fd, &c->stderr_fd, &c->stdin_fd};
    OVERLAPPED ov[3];
    int busy[3] = {0, 0, 0};
    memset(ov, 0, sizeof ov);
    int rc = 0;
    size_t written = 0;
    if (c->stdin_fd >= 0 && o->input_len == 0)
        blitz__close_fd(&c->stdin_fd);
    for (int i = 0; i < 3 && rc == 0; i++)
        if (!(ov[i].hEvent = CreateEventW(NULL, TRUE, FALSE, NULL)))
            rc = BLITZ_ENOMEM;
    while (rc == 0 && (c->stdout_fd >= 0 || c->stderr_fd >= 0 || c->stdin_fd >= 0)) {
        if (blitz__pool_rec_give_up(&o->base)) {
            rc = BLITZ_ECANCELED;
            break;
        }
        HANDLE ev[3];
        DWORD n = 0;
        for (int i = 0; i < 3 && rc == 0; i++) {
            if (*fds[i] < 0 || busy[i])
                continue;
            HANDLE h = (HANDLE)_get_osfhandle(*fds[i]);
            BOOL ok;
            ResetEvent(ov[i].hEvent);
            if (i == 2) {
                DWORD want =
                    o->input_len - written > 65536 ? 65536 : (DWORD)(o->input_len - written);
                ok = WriteFile(h, o->input + written, want, NULL, &ov[i]);
            } else {
                blitz__outbuf *b = &bufs[i];
                if (b->len + 4096 + 1 > b->cap &&
                    (rc = blitz__grow_buffer(&b->buf, &b->cap, b->len, b->len + 4096 + 1)) != 0)
                    break;
                DWORD room = (DWORD)(b->cap - b->len - 1);
                ok = ReadFile(h, b->buf + b->len, room, NULL, &ov[i]);
            }
            if (ok || GetLastError() == ERROR_IO_PENDING)
                busy[i] = 1;
            else
                blitz__close_fd(fds[i]); /* the other end is gone */
        }
        for (int i = 0; i < 3; i++)
            if (busy[i])
                ev[n++] = ov[i].hEvent;
        if (rc != 0 || n == 0)
            break;
        WaitForMultipleObjects(n, ev, FALSE, BLITZ__PROC_TICK_MS);
        for (int i = 0; i < 3; i++) {
            DWORD got = 0;
            if (!busy[i] || WaitForSingleObject(ov[i].hEvent, 0) != WAIT_OBJECT_0)
                continue;
            busy[i] = 0;
            HANDLE h = (HANDLE)_get_osfhandle(*fds[i]);
            BOOL ok = GetOverlappedResult(h, &ov[i], &got, FALSE);
            if (i == 2) {
                written += ok ? got : 0;
                if (!ok || written == o->input_len)
                    blitz__close_fd(fds[i]); /* done, or it stopped reading */
            } else if (ok && got > 0) {
                bufs[i].len += got;
            } else {
                blitz__close_fd(fds[i]);
            }
        }
    }
    for (int i = 0; i < 3; i++) {
        if (busy[i]) {
            HANDLE h = (HANDLE)_get_osfhandle(*fds[i]);
            DWORD got;
            CancelIoEx(h, &ov[i]);
            GetOverlappedResult(h, &ov[i], &got, TRUE);
        }
        if (ov[i].hEvent)
            CloseHandle(ov[i].hEvent);
    }
    return blitz__output_finish(o, bufs, rc);
}

static void blitz__output_end_child(blitz_child *c) {
    blitz_process_kill(c, BLITZ__SIGKILL);
    WaitForSingleObject(c->blitz__handle->process, INFINITE);
    int64_t st;
    blitz__proc_try_reap(c->blitz__handle, &st);
}

#endif /* BLITZ__WIN32 */
