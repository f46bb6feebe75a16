/* Tests of the stream area: X(name, timeout_ms). Each runs on every backend
 * and on mt2 and ct: stream_NAME_{uring,epoll,poll,kqueue}_{mt2,ct} (kqueue
 * where it builds). */
#if BLITZ__HAS_KQUEUE
#define BLITZ_STREAM_KQUEUE2(X, name, ms) \
    X(stream_##name##_kqueue_mt2, ms) X(stream_##name##_kqueue_ct, ms)
#else
#define BLITZ_STREAM_KQUEUE2(X, name, ms)
#endif
#define BLITZ_STREAM_TEST6(X, name, ms) \
    X(stream_##name##_uring_mt2, ms)    \
    X(stream_##name##_uring_ct, ms)     \
    X(stream_##name##_epoll_mt2, ms)    \
    X(stream_##name##_epoll_ct, ms)     \
    X(stream_##name##_poll_mt2, ms) X(stream_##name##_poll_ct, ms) BLITZ_STREAM_KQUEUE2(X, name, ms)
#define BLITZ_STREAM_TEST_LIST(X)            \
    X(stream_custom_and_bad_args, 5000)      \
    BLITZ_STREAM_TEST6(X, lines, 10000)      \
    BLITZ_STREAM_TEST6(X, copy, 20000)       \
    BLITZ_STREAM_TEST6(X, sendfile, 20000)   \
    BLITZ_STREAM_TEST6(X, broken, 10000)     \
    BLITZ_STREAM_TEST6(X, cancel, 10000)     \
    BLITZ_STREAM_TEST6(X, copy_again, 20000) \
    BLITZ_STREAM_TEST6(X, shutdown, 10000)   \
    BLITZ_STREAM_TEST6(X, file_both, 20000)
