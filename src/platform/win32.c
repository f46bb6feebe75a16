/* Windows: the calls thread.c, posix.c and linux.c make on the other
 * systems, in Win32 alone (no winpthreads, no POSIX layer). Waits on a
 * word are WaitOnAddress (Windows 8 and later; -lsynchronization), threads
 * are _beginthreadex (the C runtime's per-thread state is set up, unlike
 * CreateThread with some older CRTs), the clock is the performance
 * counter, per-thread destructors are fiber-local storage callbacks (the
 * one Win32 mechanism that runs at every thread's exit). Winsock starts
 * once per process, on first use, and stays up: WSACleanup at exit would
 * race with sockets a program still holds. */
#include "base.h"

#if BLITZ__WIN32

/* ---- waits on a word ------------------------------------------------------ */

/* A wait's limit in whole milliseconds, rounded up so that a short wait
 * is no busy loop; 0 and UINT64_MAX are none (INFINITE). */
BLITZ_PRIVATE DWORD blitz__win32_ms(uint64_t timeout_ns) {
    if (timeout_ns == 0 || timeout_ns == UINT64_MAX)
        return INFINITE;
    uint64_t m = (timeout_ns + 999999u) / 1000000u;
    return m >= INFINITE ? INFINITE - 1 : (DWORD)m;
}
/* Sleeps while *word == expected, at most timeout_ns (0 = no limit);
 * spurious returns are allowed. */
BLITZ_PRIVATE void blitz__futex_wait(blitz__atomic_u32 *word, uint32_t expected,
                                     uint64_t timeout_ns) {
    WaitOnAddress(&word->v, &expected, sizeof expected, blitz__win32_ms(timeout_ns));
}
BLITZ_PRIVATE void blitz__futex_wake(blitz__atomic_u32 *word, int n) {
    if (n == 1)
        WakeByAddressSingle(&word->v);
    else
        WakeByAddressAll(&word->v);
}

/* ---- clock and CPUs ---------------------------------------------------------- */

BLITZ_PRIVATE uint64_t blitz__now_ns(void) {
    LARGE_INTEGER count, freq;
    QueryPerformanceCounter(&count);
    /* Fixed at boot; reading it is a load from a shared page. */
    QueryPerformanceFrequency(&freq);
    uint64_t c = (uint64_t)count.QuadPart, f = (uint64_t)freq.QuadPart;
    /* Split so that c * 10^9 cannot overflow (f is at most ~10^10). */
    return c / f * 1000000000u + c % f * 1000000000u / f;
}

BLITZ_PRIVATE uint32_t blitz__cpu_count(void) {
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n > 0 ? (uint32_t)n : 1u;
}

/* ---- threads --------------------------------------------------------------- */

typedef struct {
    void *(*fn)(void *);
    void *arg;
} blitz__win32_start;

static unsigned __stdcall blitz__win32_thread_main(void *raw) {
    blitz__win32_start st = *(blitz__win32_start *)raw;
    blitz__free(raw);
    st.fn(st.arg);
    return 0;
}

BLITZ_PRIVATE int blitz__thread_start(blitz__thread *t, void *(*fn)(void *), void *arg) {
    blitz__win32_start *st = (blitz__win32_start *)blitz__malloc(sizeof *st);
    if (!st)
        return BLITZ_ENOMEM;
    st->fn = fn;
    st->arg = arg;
    uintptr_t h = _beginthreadex(NULL, 0, blitz__win32_thread_main, st, 0, NULL);
    if (h == 0) {
        int e = errno;
        blitz__free(st);
        return e == EAGAIN ? BLITZ_EAGAIN : BLITZ_ENOMEM;
    }
    *t = (HANDLE)h;
    return 0;
}
BLITZ_PRIVATE void blitz__thread_join(blitz__thread t) {
    if (!t)
        return;
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
}
/* A handle of the calling thread that another thread can wait on (the
 * pseudo-handle GetCurrentThread returns names whoever uses it); NULL when
 * none can be opened, and the join then only skips the wait. */
BLITZ_PRIVATE blitz__thread blitz__thread_self(void) {
    return OpenThread(SYNCHRONIZE, FALSE, GetCurrentThreadId());
}
/* Drops the starter's handle; the thread's own (blitz__thread_self) is
 * the one joined. */
BLITZ_PRIVATE void blitz__thread_forget(blitz__thread t) {
    CloseHandle(t);
}
BLITZ_PRIVATE void blitz__yield(void) {
    if (!SwitchToThread())
        Sleep(0);
}
BLITZ_PRIVATE void blitz__thread_block_sigpipe(void) {
    /* Windows has no SIGPIPE: a write to a closed peer fails. */
}

typedef struct {
    void (*fn)(void);
} blitz__win32_once_fn;

static BOOL CALLBACK blitz__win32_once_main(PINIT_ONCE once, PVOID param, PVOID *context) {
    (void)once;
    (void)context;
    ((blitz__win32_once_fn *)param)->fn();
    return TRUE;
}
BLITZ_PRIVATE void blitz__once_run(blitz__once *once, void (*fn)(void)) {
    blitz__win32_once_fn box = {fn};
    InitOnceExecuteOnce(once, blitz__win32_once_main, &box, NULL);
}

/* Fiber-local storage calls `dtor` with the value at a thread's exit. */
BLITZ_PRIVATE int blitz__tls_key_create(blitz__tls_key *key, blitz__tls_dtor dtor) {
    DWORD k = FlsAlloc(dtor);
    if (k == FLS_OUT_OF_INDEXES)
        return BLITZ_ENOMEM;
    *key = k;
    return 0;
}
BLITZ_PRIVATE int blitz__tls_set(blitz__tls_key key, void *value) {
    return FlsSetValue(key, value) ? 0 : BLITZ_ENOMEM;
}

/* ---- errors ------------------------------------------------------------------- */

/* The code for a Win32 error (GetLastError) or a Winsock one
 * (WSAGetLastError): the same codes the errno values map to elsewhere. */
BLITZ_PRIVATE int blitz__from_win32(DWORD e) {
    switch (e) {
    case ERROR_SUCCESS:
        return BLITZ_EIO; /* a call that failed without saying why */
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_NAME:
        return BLITZ_ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION:
    case WSAEACCES:
        return BLITZ_EACCES;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
    case ERROR_NO_SYSTEM_RESOURCES:
    case WSAENOBUFS:
        return BLITZ_ENOMEM;
    case ERROR_INVALID_PARAMETER:
    case ERROR_INVALID_HANDLE:
    case WSAEINVAL:
        return BLITZ_EINVAL;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS:
        return BLITZ_EEXIST;
    /* Files and directories. */
    case ERROR_BAD_PATHNAME:
    case ERROR_INVALID_DRIVE:
        return BLITZ_ENOENT;
    case ERROR_DIR_NOT_EMPTY:
        return BLITZ_ENOTEMPTY;
    case ERROR_DIRECTORY:
        return BLITZ_ENOTDIR;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL:
        return BLITZ_ENOSPC;
    case ERROR_FILENAME_EXCED_RANGE:
        return BLITZ_ENAMETOOLONG;
    case ERROR_NOT_SAME_DEVICE:
        return BLITZ_EXDEV;
    case ERROR_PRIVILEGE_NOT_HELD:
        return BLITZ_EPERM;
    case ERROR_WRITE_PROTECT:
        return BLITZ_EROFS;
    case ERROR_NEGATIVE_SEEK:
    case ERROR_INVALID_FUNCTION:
        return BLITZ_EINVAL;
    case ERROR_FILE_TOO_LARGE:
        return BLITZ_EFBIG;
    case ERROR_TOO_MANY_LINKS:
        return BLITZ_EMLINK;
    case ERROR_CANT_RESOLVE_FILENAME:
        return BLITZ_ELOOP;
    case ERROR_NOACCESS:
        return BLITZ_EFAULT;
    case ERROR_CRC:
    case ERROR_READ_FAULT:
    case ERROR_WRITE_FAULT:
        return BLITZ_EIO;
    case ERROR_TOO_MANY_OPEN_FILES:
    case WSAEMFILE:
        return BLITZ_EMFILE;
    case ERROR_BROKEN_PIPE:
    case ERROR_NO_DATA:
        return BLITZ_EPIPE;
    case ERROR_NOT_SUPPORTED:
    case WSAEOPNOTSUPP:
        return BLITZ_EOPNOTSUPP;
    case ERROR_OPERATION_ABORTED: /* also WSA_OPERATION_ABORTED */
        return BLITZ_ECANCELED;
    case ERROR_SEM_TIMEOUT:
    case WAIT_TIMEOUT:
    case WSAETIMEDOUT:
        return BLITZ_ETIMEDOUT;
    case ERROR_NETNAME_DELETED:
    case ERROR_CONNECTION_ABORTED:
    case WSAECONNABORTED:
        return BLITZ_ECONNABORTED;
    case ERROR_CONNECTION_REFUSED:
    case WSAECONNREFUSED:
        return BLITZ_ECONNREFUSED;
    case WSAECONNRESET:
        return BLITZ_ECONNRESET;
    case WSAEWOULDBLOCK:
        return BLITZ_EAGAIN;
    case WSAEADDRINUSE:
        return BLITZ_EADDRINUSE;
    case WSAEADDRNOTAVAIL:
        return BLITZ_EADDRNOTAVAIL;
    case WSAEAFNOSUPPORT:
        return BLITZ_EAFNOSUPPORT;
    case WSAENOTCONN:
        return BLITZ_ENOTCONN;
    case WSAEISCONN:
        return BLITZ_EISCONN;
    case WSAENETUNREACH:
        return BLITZ_ENETUNREACH;
    case WSAEHOSTUNREACH:
        return BLITZ_EHOSTUNREACH;
    case WSAEMSGSIZE:
        return BLITZ_EMSGSIZE;
    case WSAENOTSOCK:
        return BLITZ_ENOTSOCK;
    case WSAEINPROGRESS:
    case WSAEALREADY:
        return BLITZ_EALREADY;
    case WSAESHUTDOWN:
        return BLITZ_EPIPE;
    default:
        return BLITZ_EUNKNOWN;
    }
}

/* ---- text -------------------------------------------------------------------- */

/* A UTF-16 copy of a UTF-8 string (blitz__free), or NULL: *err is
 * BLITZ_EINVAL for invalid UTF-8, BLITZ_ENOMEM. */
BLITZ_PRIVATE wchar_t *blitz__utf16(const char *s, int *err) {
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    if (n <= 0) {
        *err = BLITZ_EINVAL;
        return NULL;
    }
    wchar_t *w = (wchar_t *)blitz__malloc((size_t)n * sizeof *w);
    if (!w) {
        *err = BLITZ_ENOMEM;
        return NULL;
    }
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n);
    return w;
}

/* ---- completion ports --------------------------------------------------------- */

/* Ends a GetQueuedCompletionStatusEx on `port` (a parked I/O driver): a
 * packet with no overlapped, which the driver takes for a wake-up. */
BLITZ_PRIVATE void blitz__port_post(void *port) {
    if (port)
        PostQueuedCompletionStatus((HANDLE)port, 0, 0, NULL);
}

/* ---- pipes ---------------------------------------------------------------------- */

/* An anonymous pipe made of a named pipe, since only named pipes take
 * overlapped I/O: the read end is the server instance (inbound), the
 * write end a client opened on it. Each end is overlapped or inheritable
 * as `flags` ask (BLITZ__WPIPE_*); an inheritable end is what a child
 * process gets as its stdio, the other end stays the parent's. The name
 * is made from the process and thread ids and the performance counter;
 * FILE_FLAG_FIRST_PIPE_INSTANCE turns the unlikely clash with a name in
 * use into ERROR_ACCESS_DENIED, and another name is tried. */
enum {
    BLITZ__WPIPE_READ_OVERLAPPED = 1,
    BLITZ__WPIPE_WRITE_OVERLAPPED = 2,
    BLITZ__WPIPE_READ_INHERIT = 4,
    BLITZ__WPIPE_WRITE_INHERIT = 8,
};
BLITZ_PRIVATE int blitz__win_pipe_pair(void **read_end, void **write_end, unsigned flags,
                                       uint32_t buffer_bytes) {
    if (!read_end || !write_end)
        return BLITZ_EINVAL;
    *read_end = *write_end = NULL;
    SECURITY_ATTRIBUTES read_sa = {sizeof read_sa, NULL, (flags & BLITZ__WPIPE_READ_INHERIT) != 0};
    SECURITY_ATTRIBUTES write_sa = {sizeof write_sa, NULL,
                                    (flags & BLITZ__WPIPE_WRITE_INHERIT) != 0};
    DWORD read_mode = PIPE_ACCESS_INBOUND | FILE_FLAG_FIRST_PIPE_INSTANCE |
                      ((flags & BLITZ__WPIPE_READ_OVERLAPPED) ? FILE_FLAG_OVERLAPPED : 0);
    DWORD write_mode = (flags & BLITZ__WPIPE_WRITE_OVERLAPPED) ? FILE_FLAG_OVERLAPPED : 0;
    if (!buffer_bytes)
        buffer_bytes = 65536;
    for (unsigned attempt = 0; attempt < 16; attempt++) {
        LARGE_INTEGER tick;
        QueryPerformanceCounter(&tick);
        wchar_t name[96];
        swprintf(name, sizeof name / sizeof name[0], L"\\\\.\\pipe\\blitz-%lu-%lu-%llx-%u",
                 (unsigned long)GetCurrentProcessId(), (unsigned long)GetCurrentThreadId(),
                 (unsigned long long)tick.QuadPart, attempt);
        HANDLE r = CreateNamedPipeW(name, read_mode,
                                    PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT |
                                        PIPE_REJECT_REMOTE_CLIENTS,
                                    1, buffer_bytes, buffer_bytes, 0, &read_sa);
        if (r == INVALID_HANDLE_VALUE) {
            DWORD e = GetLastError();
            if (e == ERROR_ACCESS_DENIED || e == ERROR_PIPE_BUSY)
                continue;
            return blitz__from_win32(e);
        }
        HANDLE w = CreateFileW(name, GENERIC_WRITE | FILE_READ_ATTRIBUTES, 0, &write_sa,
                               OPEN_EXISTING, write_mode, NULL);
        if (w == INVALID_HANDLE_VALUE) {
            DWORD e = GetLastError();
            CloseHandle(r);
            return blitz__from_win32(e);
        }
        *read_end = r;
        *write_end = w;
        return BLITZ_OK;
    }
    return BLITZ_EEXIST;
}

/* ---- Winsock ------------------------------------------------------------------- */

static BOOL CALLBACK blitz__win32_wsa_main(PINIT_ONCE once, PVOID param, PVOID *context) {
    (void)once;
    (void)context;
    WSADATA data;
    int e = WSAStartup(MAKEWORD(2, 2), &data);
    *(int *)param = e ? blitz__from_win32((DWORD)e) : 0;
    return e == 0;
}
/* Starts Winsock 2.2 once per process: 0 or a code (a failed start is
 * tried again by the next call). */
BLITZ_PRIVATE int blitz__winsock_start(void) {
    static INIT_ONCE once = INIT_ONCE_STATIC_INIT;
    int rc = 0;
    return InitOnceExecuteOnce(&once, blitz__win32_wsa_main, &rc, NULL) ? 0 : rc ? rc : BLITZ_EIO;
}

#endif
