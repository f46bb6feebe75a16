/* Tests of the socket API on the default backend of every system,
 * Windows included (tests/test_sock.c, tests/test_pipe.c): X(name, timeout_ms). */
#define BLITZ_SOCK_TEST3(X, name, ms) X(name##_mt2, ms) X(name##_mt4, ms) X(name##_ct, ms)
#define BLITZ_SOCK_TEST_LIST(X)                       \
    BLITZ_SOCK_TEST3(X, sock_echo, 30000)             \
    X(sock_echo_1000, 60000)                          \
    BLITZ_SOCK_TEST3(X, sock_connect_refused, 10000)  \
    BLITZ_SOCK_TEST3(X, sock_connect_limit_ok, 10000) \
    BLITZ_SOCK_TEST3(X, sock_half_close, 10000)       \
    BLITZ_SOCK_TEST3(X, sock_cancel_recv, 10000)      \
    BLITZ_SOCK_TEST3(X, sock_close_inflight, 10000)   \
    BLITZ_SOCK_TEST3(X, sock_options, 10000)          \
    BLITZ_SOCK_TEST3(X, sock_free_inflight, 10000)    \
    BLITZ_SOCK_TEST3(X, sock_udp, 10000)              \
    BLITZ_SOCK_TEST3(X, sock_serve, 20000)            \
    BLITZ_SOCK_TEST3(X, sock_stream_relay, 20000)     \
    BLITZ_SOCK_TEST3(X, sock_stream_file, 20000)      \
    BLITZ_SOCK_TEST3(X, sock_stream_cancel, 10000)    \
    X(sock_connect_host, 10000)                       \
    X(sock_bad_input, 5000)                           \
    BLITZ_SOCK_TEST3(X, pipe_round_trip, 20000)       \
    BLITZ_SOCK_TEST3(X, pipe_epipe, 10000)            \
    BLITZ_SOCK_TEST3(X, pipe_cancel_read, 10000)      \
    BLITZ_SOCK_TEST3(X, pipe_close_inflight, 10000)   \
    BLITZ_SOCK_TEST3(X, pipe_ready, 10000)            \
    BLITZ_SOCK_TEST3(X, pipe_free_inflight, 10000)    \
    BLITZ_SOCK_TEST3(X, pipe_op_forms, 10000)         \
    BLITZ_SOCK_TEST3(X, pipe_fd_ops_tcp, 10000)       \
    BLITZ_SOCK_TEST3(X, pipe_stream, 20000)           \
    X(pipe_adopt, 10000)                              \
    X(pipe_bad_input, 5000)
