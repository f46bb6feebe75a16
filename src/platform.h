/* The only place that includes system headers, grouped by OS. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#if !defined(CLOCK_MONOTONIC)
#error \
    "blitz.h: POSIX declarations are hidden (strict -std=c11?). Include blitz.h before any system header in the file that defines BLITZ_IMPLEMENTATION, or define _POSIX_C_SOURCE=200809L or _GNU_SOURCE."
#endif

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

#if !defined(__linux__)
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
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
