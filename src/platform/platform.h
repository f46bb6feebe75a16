/* The only place that includes system headers, grouped by OS. */

/* MSVC's own dialect (clang-cl speaks GCC's too and takes the GCC paths):
 * __declspec for attributes and thread-locals, intrinsics for atomics and
 * bit scans. BLITZ_ATOMICS_MSVC forces the intrinsics on a mingw-w64
 * compiler, whose <intrin.h> has them too: the build that runs the MSVC
 * atomics where no MSVC is at hand. */
#if defined(_MSC_VER) && !defined(__clang__)
#define BLITZ__MSVC 1
#else
#define BLITZ__MSVC 0
#endif
#if BLITZ__MSVC || defined(BLITZ_ATOMICS_MSVC)
#if !defined(_WIN32)
#error "BLITZ_ATOMICS_MSVC: MSVC's intrinsics exist on Windows only"
#endif
#define BLITZ__ATOMICS_MSVC 1
#else
#define BLITZ__ATOMICS_MSVC 0
#endif
#if defined(_WIN32)
/* Windows (10 1809 and later), Win32 only: threads, waits on an address
 * (WaitOnAddress), the performance counter, Winsock. No POSIX layer: the
 * sockets API runs on the IOCP backend (BLITZ__HAS_SOCKETS); the rest of
 * the I/O, network and OS layers is POSIX code, left out (BLITZ__HAS_IO 0). */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <winsock2.h>
#include <ws2tcpip.h>
#include <mswsock.h>
#include <afunix.h>
#include <windows.h>
#include <process.h>
#include <io.h>
#include <fcntl.h>
#include <signal.h>
#if BLITZ__ATOMICS_MSVC
#include <intrin.h>
#elif defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define BLITZ__WIN32       1
#define BLITZ__LINUX       0
#define BLITZ__HAS_FUTEX   1 /* WaitOnAddress */
#define BLITZ__HAS_KQUEUE  0
#define BLITZ__HAS_IO      0
#define BLITZ__HAS_SOCKETS 1 /* the sockets API, over the completion port */
#define BLITZ__HAVE_DLADDR 0
#define BLITZ_NO_IO_URING  1
#define BLITZ_NO_EPOLL     1

/* errno names the C runtime lacks, for the error map: Winsock's values,
 * apart from every errno value. */
#ifndef EHOSTDOWN
#define EHOSTDOWN WSAEHOSTDOWN
#endif
#ifndef ESTALE
#define ESTALE WSAESTALE
#endif
#ifndef EDQUOT
#define EDQUOT WSAEDQUOT
#endif
#ifndef IF_NAMESIZE
#define IF_NAMESIZE 256 /* an IPv6 scope's interface name (Linux: 16) */
#endif

/* What wakes a thread parked in the I/O driver: its completion port. */
typedef void *blitz__wake_t;
#define BLITZ__WAKE_NONE NULL

/* A socket: Winsock's handle, closed with closesocket. */
typedef SOCKET blitz__sock_t;
#define BLITZ__SOCK_NONE INVALID_SOCKET
static inline void blitz__sock_close_raw(blitz__sock_t s) {
    (void)closesocket(s);
}
/* TCP_KEEPIDLE (Windows 10 1709 and later), which mingw-w64 leaves out. */
#if defined(TCP_KEEPIDLE)
#define BLITZ__TCP_KEEPIDLE TCP_KEEPIDLE
#else
#define BLITZ__TCP_KEEPIDLE 3
#endif
#define BLITZ__IPV6_JOIN_GROUP  IPV6_ADD_MEMBERSHIP
#define BLITZ__IPV6_LEAVE_GROUP IPV6_DROP_MEMBERSHIP
#define SHUT_RD                 SD_RECEIVE
#define SHUT_WR                 SD_SEND
#define SHUT_RDWR               SD_BOTH
struct blitz__ip_mreq {
    struct in_addr multiaddr;
    struct in_addr interface_addr;
};

static inline void blitz__thread_name(const char *name) {
    (void)name;
}
#else
#define BLITZ__WIN32       0
#define BLITZ__HAS_IO      1
#define BLITZ__HAS_SOCKETS 1
/* What wakes a thread parked in the I/O driver: a descriptor to write
 * (eventfd, pipe) or an encoded kqueue (BLITZ__WAKE_KQ). */
typedef int blitz__wake_t;
#define BLITZ__WAKE_NONE   (-1)
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
/* Hidden under strict _POSIX_C_SOURCE; the redeclaration is compatible. */
long syscall(long number, ...);
#define BLITZ__HAS_FUTEX 1
#endif

/* Sockets and the I/O backends. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#if defined(__linux__)
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <linux/io_uring.h>
#define BLITZ__LINUX 1
#else
#define BLITZ__LINUX      0
#define BLITZ_NO_IO_URING 1
#define BLITZ_NO_EPOLL    1
#endif

/* Darwin and the BSDs: kqueue, and a wait on an address where the system
 * has one (Darwin's __ulock calls, FreeBSD's _umtx_op); the others park
 * on a condition variable. */
#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__) || \
    defined(__DragonFly__)
#include <sys/event.h>
#include <sys/time.h>
#define BLITZ__HAS_KQUEUE 1
#if defined(__APPLE__)
#include <sys/uio.h>
/* libSystem's wait on an address (macOS 10.12 and later); the headers do
 * not declare it. */
int __ulock_wait(uint32_t operation, void *addr, uint64_t value, uint32_t timeout_us);
int __ulock_wake(uint32_t operation, void *addr, uint64_t wake_value);
#define BLITZ__HAS_FUTEX 1
#elif defined(__FreeBSD__)
#include <sys/types.h>
#include <sys/umtx.h>
#define BLITZ__HAS_FUTEX 1
#endif
#elif defined(BLITZ__KQUEUE_EMULATION)
/* The test suite's kqueue over epoll (a header path): the kqueue backend's
 * own code runs on Linux. Never defined outside the test build. */
#include BLITZ__KQUEUE_EMULATION
#define BLITZ__HAS_KQUEUE 1
#else
#define BLITZ__HAS_KQUEUE 0
#endif

#if !defined(BLITZ__HAS_FUTEX)
#define BLITZ__HAS_FUTEX 0
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* Files, DNS, signals and processes. */
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <stdarg.h>
/* dladdr names poll functions in task dumps; glibc has it in libc (no
 * -ldl) from 2.34 on, and declares it only under _GNU_SOURCE. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34) && defined(__USE_GNU) && \
    !defined(BLITZ_NO_DLADDR)
#include <dlfcn.h>
#define BLITZ__HAVE_DLADDR 1
#else
#define BLITZ__HAVE_DLADDR 0
#endif

/* A system header included before blitz.h in the implementation file fixes
 * the C library's feature set before blitz.h can ask for _GNU_SOURCE. Plain
 * POSIX 2008 (the compilers' default GNU dialects, or an explicit
 * _POSIX_C_SOURCE) is enough: the few Linux extensions used here are
 * declared below when the C library hid them. Strict ISO C hides POSIX
 * itself, which no declaration here can make up for. */
#if !defined(CLOCK_MONOTONIC) || !defined(O_CLOEXEC)
#error \
    "blitz.h: POSIX 2008 declarations are hidden (strict -std=c11 with a system header included first, or _POSIX_C_SOURCE below 200809L?). In the file that defines BLITZ_IMPLEMENTATION, include blitz.h before any system header, or define _GNU_SOURCE (or _POSIX_C_SOURCE=200809L) at its top, or compile with -std=gnu11."
#endif
#if defined(__linux__)
#ifndef POLLRDHUP
#define POLLRDHUP 0x2000
#endif
#ifndef IOV_MAX
#define IOV_MAX 1024 /* the kernel's UIO_MAXIOV */
#endif
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || \
    defined(__riscv) || defined(__loongarch__)
/* The asm-generic values these architectures share. */
#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS 0x20
#endif
#ifndef MAP_POPULATE
#define MAP_POPULATE 0x8000
#endif
#ifndef SO_REUSEPORT
#define SO_REUSEPORT 15
#endif
#endif
/* GNU extensions, declared when the C library hid them (glibc's own
 * declaration of accept4 takes a transparent union, not this type). */
#if (defined(__GLIBC__) && !defined(__USE_GNU)) || (!defined(__GLIBC__) && !defined(_GNU_SOURCE))
int accept4(int fd, struct sockaddr *addr, socklen_t *addr_len, int flags);
int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *mask);
int pthread_setname_np(pthread_t thread, const char *name);
#endif
#endif
/* POSIX 2008 has realpath in its base, but glibc declares it only for XSI
 * or the default feature set; the redeclaration is compatible. */
#if defined(__GLIBC__) && !defined(__USE_MISC) && !defined(__USE_XOPEN_EXTENDED)
char *realpath(const char *path, char *resolved);
#endif

/* Names the calling thread for ps, top and debuggers (at most 15
 * characters on Linux); best effort, nothing elsewhere. */
static inline void blitz__thread_name(const char *name) {
#if defined(__linux__)
    (void)pthread_setname_np(pthread_self(), name);
#else
    (void)name;
#endif
}

/* A socket: a descriptor. */
typedef int blitz__sock_t;
#define BLITZ__SOCK_NONE (-1)
static inline void blitz__sock_close_raw(blitz__sock_t s) {
    (void)close(s);
}

/* Socket options some systems spell differently. */
#if defined(TCP_KEEPIDLE)
#define BLITZ__TCP_KEEPIDLE TCP_KEEPIDLE
#else
#define BLITZ__TCP_KEEPIDLE TCP_KEEPALIVE /* Apple's name */
#endif
#if defined(IPV6_ADD_MEMBERSHIP)
#define BLITZ__IPV6_JOIN_GROUP  IPV6_ADD_MEMBERSHIP
#define BLITZ__IPV6_LEAVE_GROUP IPV6_DROP_MEMBERSHIP
#else
#define BLITZ__IPV6_JOIN_GROUP  IPV6_JOIN_GROUP /* the BSDs' and Apple's names */
#define BLITZ__IPV6_LEAVE_GROUP IPV6_LEAVE_GROUP
#endif

/* struct ip_mreq's layout, which the kernel reads (the C library hides the
 * struct without _DEFAULT_SOURCE). */
struct blitz__ip_mreq {
    struct in_addr multiaddr;
    struct in_addr interface_addr;
};
#endif /* !_WIN32 */
