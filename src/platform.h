/* The only place that includes system headers, grouped by OS. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
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
#else
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
