/* The test harness: BLITZ_TEST(name) defines a test, the CHECK macros fail
 * it with both operands printed. Tests return 0 on success. */
#ifndef BLITZ_TEST_H
#define BLITZ_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLITZ_TEST(name) int test_##name(void)

/* An intended fall-through between switch cases (-Wimplicit-fallthrough). */
#define TEST_FALLTHROUGH __attribute__((fallthrough))

#define CHECK_BASE(cond, fmt, ...)                                                              \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: check failed: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__); \
            fflush(stderr);                                                                     \
            abort();                                                                            \
        }                                                                                       \
    } while (0)

#define CHECK(cond) CHECK_BASE(cond, "%s", #cond)
#define CHECK_INT_OP(a, op, b)                                                             \
    do {                                                                                   \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                    \
        CHECK_BASE(check_a_ op check_b_, "%s %s %s (%lld vs %lld)", #a, #op, #b, check_a_, \
                   check_b_);                                                              \
    } while (0)
#define CHECK_EQ(a, b) CHECK_INT_OP(a, ==, b)
#define CHECK_NE(a, b) CHECK_INT_OP(a, !=, b)
#define CHECK_LT(a, b) CHECK_INT_OP(a, <, b)
#define CHECK_LE(a, b) CHECK_INT_OP(a, <=, b)
#define CHECK_GT(a, b) CHECK_INT_OP(a, >, b)
#define CHECK_GE(a, b) CHECK_INT_OP(a, >=, b)
#define CHECK_OK(expr)                                                      \
    do {                                                                    \
        int check_rc_ = (expr);                                             \
        CHECK_BASE(check_rc_ == 0, "%s returned %d (%s)", #expr, check_rc_, \
                   blitz_strerror(check_rc_));                              \
    } while (0)
#define CHECK_PTR_EQ(a, b)                                                            \
    CHECK_BASE((const void *)(a) == (const void *)(b), "%s == %s (%p vs %p)", #a, #b, \
               (const void *)(a), (const void *)(b))
#define CHECK_NULL(a)     CHECK_PTR_EQ(a, NULL)
#define CHECK_NOT_NULL(a) CHECK_BASE((a) != NULL, "%s != NULL", #a)

/* Iteration counts scale down under sanitizers (BLITZ_TEST_SCALE=4 divides). */
static inline long test_scaled(long n) {
    const char *s = getenv("BLITZ_TEST_SCALE");
    long div = s ? atol(s) : 1;
    if (div < 1)
        div = 1;
    return n / div > 0 ? n / div : 1;
}

#if !defined(SOCK_CLOEXEC) && !defined(_WIN32)
/* Linux's socket type flags, which the tests use to make plain peers:
 * elsewhere they are applied with fcntl after the call. */
#include <fcntl.h>
#include <sys/socket.h>
#define SOCK_CLOEXEC  0x10000000
#define SOCK_NONBLOCK 0x20000000
static inline int test_sock_flags(int fd, int type) {
    if (fd >= 0 && (type & SOCK_CLOEXEC))
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (fd >= 0 && (type & SOCK_NONBLOCK))
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}
static inline int test_socket(int domain, int type, int proto) {
    return test_sock_flags(socket(domain, type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK), proto), type);
}
static inline int test_socketpair(int domain, int type, int proto, int sv[2]) {
    int r = socketpair(domain, type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK), proto, sv);
    if (r == 0) {
        test_sock_flags(sv[0], type);
        test_sock_flags(sv[1], type);
    }
    return r;
}
#define socket(d, t, p)         test_socket(d, t, p)
#define socketpair(d, t, p, sv) test_socketpair(d, t, p, sv)
#endif

#endif
