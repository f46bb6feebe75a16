/* Tests of the chan area: X(name, timeout_ms). */
#define BLITZ_CHAN_TEST_LIST(X)          \
    X(chan_try_basics, 5000)             \
    X(chan_capacity_one_odd_size, 5000)  \
    X(chan_refcounts, 5000)              \
    X(chan_backpressure_1p2c_mt2, 20000) \
    X(chan_backpressure_1p2c_mt4, 20000) \
    X(chan_backpressure_1p2c_ct, 20000)  \
    X(chan_mpmc_random_mt2, 30000)       \
    X(chan_mpmc_random_mt4, 30000)       \
    X(chan_mpmc_random_ct, 30000)        \
    X(chan_close_hands_back_mt2, 20000)  \
    X(chan_close_hands_back_mt4, 20000)  \
    X(chan_close_hands_back_ct, 20000)   \
    X(chan_blocking_threads_mt2, 30000)  \
    X(chan_blocking_threads_mt4, 30000)  \
    X(chan_blocking_threads_ct, 30000)   \
    X(chan_cancel_keeps_mt2, 10000)      \
    X(chan_cancel_keeps_mt4, 10000)      \
    X(chan_cancel_keeps_ct, 10000)       \
    X(chan_cancel_race_mt2, 30000)       \
    X(chan_cancel_race_mt4, 30000)       \
    X(chan_cancel_race_ct, 30000)
