/* White-box tests of internals (tests/test_internal.c): X(name, timeout_ms). */
#define BLITZ_INTERNAL_TEST_LIST(X)                  \
    X(local_queue_fifo_and_overflow, 10000)          \
    X(local_queue_steal_half, 5000)                  \
    X(local_queue_steal_pop_overflow_race, 30000)    \
    X(task_state_wake_during_running, 5000)          \
    X(task_cancel_vs_complete_race, 30000)           \
    X(task_blocks_sizes_alignment_and_reuse, 10000)  \
    X(task_join_waker_kinds, 10000)                  \
    X(park_no_lost_wakeup_mt2, 30000)                \
    X(park_no_lost_wakeup_mt4, 30000)                \
    X(park_no_lost_wakeup_ct, 30000)                 \
    X(park_remote_bursts_all_run, 30000)             \
    X(park_external_wakes_mt2, 30000)                \
    X(park_external_wakes_ct, 30000)                 \
    X(shutdown_nested_wait_mt1, 10000)               \
    X(shutdown_nested_wait_mt2, 10000)               \
    X(shutdown_nested_wait_ct, 10000)                \
    X(lifo_eviction_and_transitioning_to_park, 5000) \
    X(cancel_hook_frees_mt, 10000)                   \
    X(cancel_hook_frees_ct, 10000)                   \
    X(timeout_op_cancels_join, 10000)                \
    X(platform_errors_and_waits, 10000)              \
    X(timer_wheel_differential, 60000)               \
    X(timer_wheel_edge_cases, 5000)                  \
    X(timer_wheel_big_jumps, 30000)                  \
    X(timer_wheel_drive_by_next_expiry, 30000)
