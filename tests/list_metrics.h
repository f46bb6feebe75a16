/* Tests of tracing hooks and metrics: X(name, timeout_ms). */
#define BLITZ_METRICS_TEST_LIST(X)    \
    X(metrics_hooks_mt2, 10000)       \
    X(metrics_hooks_mt4, 10000)       \
    X(metrics_hooks_ct, 10000)        \
    X(metrics_snapshot_mt2, 10000)    \
    X(metrics_snapshot_mt4, 10000)    \
    X(metrics_snapshot_ct, 10000)     \
    X(metrics_sample_rate, 10000)     \
    X(metrics_bad_args, 5000)         \
    X(metrics_format_fresh, 5000)     \
    X(metrics_scrape_mt2, 10000)      \
    X(metrics_scrape_mt4, 10000)      \
    X(metrics_scrape_ct, 10000)       \
    X(metrics_io_connect_uring, 5000) \
    X(metrics_io_connect_epoll, 5000) \
    X(metrics_io_connect_poll, 5000)
