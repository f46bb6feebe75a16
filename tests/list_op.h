/* Tests of ops as values and the combinators (tests/test_op.c). */
#define BLITZ_OP_TEST_LIST(X)           \
    X(op_wait_plain_thread, 10000)      \
    X(op_wait_many_threads, 30000)      \
    X(op_combinators_mt2, 5000)         \
    X(op_combinators_mt4, 5000)         \
    X(op_combinators_ct, 5000)          \
    X(op_select_fair, 5000)             \
    X(op_combinators_bad_input, 5000)   \
    X(op_race_join_timer_mt2, 10000)    \
    X(op_race_join_timer_mt4, 10000)    \
    X(op_race_join_timer_ct, 10000)     \
    X(op_group_order_mt2, 10000)        \
    X(op_group_order_mt4, 10000)        \
    X(op_group_order_ct, 10000)         \
    X(op_group_close_mt2, 10000)        \
    X(op_group_close_mt4, 10000)        \
    X(op_group_close_ct, 10000)         \
    X(op_group_free_busy_mt2, 10000)    \
    X(op_group_free_busy_mt4, 10000)    \
    X(op_group_free_busy_ct, 10000)     \
    X(op_group_concurrent_mt2, 30000)   \
    X(op_group_concurrent_mt4, 30000)   \
    X(op_group_concurrent_ct, 30000)    \
    X(op_group_wait_next_thread, 10000) \
    X(op_group_timeout_mt2, 10000)      \
    X(op_group_timeout_mt4, 10000)      \
    X(op_group_timeout_ct, 10000)
