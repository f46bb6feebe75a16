/* Tests of the io area: X(name, timeout_ms). Behaviour tests run on every
 * backend (name_uring, name_epoll, name_poll). */
#if BLITZ__HAS_KQUEUE
/* And name_kqueue where the kqueue backend builds (its emulation on Linux). */
#define BLITZ_IO_TEST3(X, name, ms) \
    X(name##_uring, ms) X(name##_epoll, ms) X(name##_poll, ms) X(name##_kqueue, ms)
#else
#define BLITZ_IO_TEST3(X, name, ms) X(name##_uring, ms) X(name##_epoll, ms) X(name##_poll, ms)
#endif
#define BLITZ_IO_TEST_LIST(X)                          \
    X(io_backend_default, 5000)                        \
    X(io_backend_names, 5000)                          \
    X(io_uring_refused_fallback, 20000)                \
    X(io_uring_enter_refused_fallback, 20000)          \
    X(io_uring_register_refused_fallback, 20000)       \
    X(epoll_wait_refused_fallback, 20000)              \
    BLITZ_IO_TEST3(X, io_echo_many, 30000)             \
    BLITZ_IO_TEST3(X, io_echo_ct, 30000)               \
    BLITZ_IO_TEST3(X, io_echo_mt4, 30000)              \
    BLITZ_IO_TEST3(X, io_bulk_1gib, 60000)             \
    BLITZ_IO_TEST3(X, io_connect_refused, 10000)       \
    BLITZ_IO_TEST3(X, io_half_close, 10000)            \
    BLITZ_IO_TEST3(X, io_reset, 10000)                 \
    BLITZ_IO_TEST3(X, io_cancel_pending, 10000)        \
    BLITZ_IO_TEST3(X, io_cancel_task, 10000)           \
    BLITZ_IO_TEST3(X, io_shutdown_inflight, 10000)     \
    BLITZ_IO_TEST3(X, io_free_drop_closes, 10000)      \
    BLITZ_IO_TEST3(X, io_recv_len0, 10000)             \
    BLITZ_IO_TEST3(X, io_misuse, 10000)                \
    BLITZ_IO_TEST3(X, io_edges, 10000)                 \
    BLITZ_IO_TEST3(X, io_stdio_closed, 10000)          \
    BLITZ_IO_TEST3(X, io_connect_timeout, 10000)       \
    BLITZ_IO_TEST3(X, io_emfile, 10000)                \
    BLITZ_IO_TEST3(X, io_udp, 10000)                   \
    BLITZ_IO_TEST3(X, io_unix, 10000)                  \
    BLITZ_IO_TEST3(X, io_options, 10000)               \
    BLITZ_IO_TEST3(X, io_idle_wakeup, 10000)           \
    BLITZ_IO_TEST3(X, io_busy_sees_io, 10000)          \
    BLITZ_IO_TEST3(X, io_stress_10k, 120000)           \
    BLITZ_IO_TEST3(X, io_foreign_runtime, 20000)       \
    BLITZ_IO_TEST3(X, io_close_from_thread, 20000)     \
    BLITZ_IO_TEST3(X, io_cancel_from_thread, 20000)    \
    BLITZ_IO_TEST3(X, io_close_busy, 30000)            \
    BLITZ_IO_TEST3(X, io_shutdown_from_thread, 30000)  \
    BLITZ_IO_TEST3(X, io_opwait_shutdown, 30000)       \
    BLITZ_IO_TEST3(X, io_serve, 30000)                 \
    BLITZ_IO_TEST3(X, io_serve_timeout, 10000)         \
    BLITZ_IO_TEST3(X, io_recv_exact, 10000)            \
    BLITZ_IO_TEST3(X, io_recv_buf_echo, 30000)         \
    BLITZ_IO_TEST3(X, io_recv_buf_hold, 30000)         \
    BLITZ_IO_TEST3(X, io_recv_buf_edges, 10000)        \
    BLITZ_IO_TEST3(X, io_recv_buf_blocking, 10000)     \
    X(serve_bad_input, 5000)                           \
    X(io_uring_creator_not_woken, 20000)               \
    X(io_uring_ct_driver_moves, 30000)                 \
    X(io_uring_overtaken_park, 10000)                  \
    X(io_ms_messages, 20000)                           \
    X(io_ms_lagging_reader, 20000)                     \
    X(io_ms_pool_exhausted, 30000)                     \
    X(io_ms_bulk_reader, 30000)                        \
    X(io_ms_eof_after_data, 20000)                     \
    X(io_ms_then_fd_read, 20000)                       \
    X(io_ms_accept_bounded, 20000)                     \
    X(io_uring_accept_unclaimed, 20000)                \
    BLITZ_IO_TEST3(X, io_recv_cancel_race, 60000)      \
    BLITZ_IO_TEST3(X, io_send_cancel_race, 60000)      \
    BLITZ_IO_TEST3(X, io_send_all_cancel_count, 20000) \
    BLITZ_IO_TEST3(X, io_close_dead_task, 20000)       \
    X(io_uring_cancel_after_completion, 20000)         \
    BLITZ_IO_TEST3(X, io_connect_limit, 20000)         \
    BLITZ_IO_TEST3(X, io_connect_limit_ok, 20000)      \
    BLITZ_IO_TEST3(X, io_connect_limit_cancel, 20000)  \
    BLITZ_IO_TEST3(X, io_connect_limit_paused, 20000)  \
    BLITZ_IO_TEST3(X, io_connect_limit_host, 20000)    \
    X(io_connect_limit_bad_input, 5000)                \
    BLITZ_IO_TEST3(X, io_relisten, 20000)              \
    BLITZ_IO_TEST3(X, io_ct_close_eof, 10000)          \
    BLITZ_IO_TEST3(X, io_unix_listen_live, 10000)      \
    BLITZ_IO_TEST3(X, io_foreign_unstarted, 20000)     \
    BLITZ_IO_TEST3(X, io_dgram_empty_cancel, 20000)    \
    BLITZ_IO_TEST3(X, io_recvv_zero, 10000)            \
    BLITZ_IO_TEST3(X, io_accept_nomem, 20000)          \
    BLITZ_IO_TEST3(X, io_recv_nomem, 20000)            \
    X(io_uring_accept_queue_nomem, 20000)              \
    X(io_poll_want_nomem, 20000)                       \
    X(fs_close_nomem, 10000)
