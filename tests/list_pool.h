/* Tests of the pool area: X(name, timeout_ms). */
#define BLITZ_POOL_TEST_LIST(X)                 \
    X(pool_bad_args, 5000)                      \
    X(pool_runs_jobs_mt2, 5000)                 \
    X(pool_runs_jobs_mt4, 5000)                 \
    X(pool_runs_jobs_ct, 5000)                  \
    X(pool_state_copy, 5000)                    \
    X(pool_await_in_task_mt2, 5000)             \
    X(pool_await_in_task_mt4, 5000)             \
    X(pool_await_in_task_ct, 5000)              \
    X(pool_grows_to_demand, 5000)               \
    X(pool_respects_cap, 5000)                  \
    X(pool_shrinks_after_keep_alive, 5000)      \
    X(pool_spurious_wakeups, 5000)              \
    X(pool_cancel_before_start, 5000)           \
    X(pool_bounded_queue, 5000)                 \
    X(pool_room_wait_cancel_and_shutdown, 5000) \
    X(pool_shutdown_in_flight_mt2, 5000)        \
    X(pool_shutdown_in_flight_mt4, 5000)        \
    X(pool_shutdown_in_flight_ct, 5000)         \
    X(pool_job_waits_at_shutdown_mt2, 5000)     \
    X(pool_job_waits_at_shutdown_mt4, 5000)     \
    X(pool_job_waits_at_shutdown_ct, 5000)      \
    X(pool_hammer, 20000)                       \
    X(pool_paused_clock_waits_mt2, 5000)        \
    X(pool_paused_clock_waits_mt4, 5000)        \
    X(pool_paused_clock_waits_ct, 5000)
