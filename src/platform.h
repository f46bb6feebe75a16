/* The only place that includes system headers, grouped by OS. */
#if !defined(_GNU_SOURCE) && defined(__linux__)
#define _GNU_SOURCE
#endif
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

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#define BLITZ__HAS_FUTEX 1
#else
#define BLITZ__HAS_FUTEX 0
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
