/* Every test, in run order: X(name, timeout_ms). A test named foo is
 * defined with BLITZ_TEST(foo) in one of the tests/ files; the white-box
 * tests of tests/test_internal.c have their own list in list_internal.h. */
#include "list_internal.h"
#include "list_op.h"
#include "list_sync.h"
#include "list_chan.h"
#include "list_io.h"
#include "list_sock.h"
#include "list_pool.h"
#include "list_stream.h"
#include "list_metrics.h"
#include "list_observe.h"

#define BLITZ_TEST_LIST(X)                        \
    X(error_strings, 5000)                        \
    X(version, 5000)                              \
    X(bad_runtime_new, 5000)                      \
    X(bad_spawn_mt2, 5000)                        \
    X(bad_spawn_mt4, 5000)                        \
    X(bad_spawn_ct, 5000)                         \
    X(runtime_backend_kind_mt2, 5000)             \
    X(runtime_backend_kind_mt4, 5000)             \
    X(runtime_backend_kind_ct, 5000)              \
    X(bad_run, 5000)                              \
    X(bad_handles, 5000)                          \
    X(bad_stats, 5000)                            \
    X(deadlock_inside_task_mt2, 5000)             \
    X(deadlock_inside_task_mt4, 5000)             \
    X(deadlock_inside_task_ct, 5000)              \
    X(state_sizes_mt2, 15000)                     \
    X(state_sizes_mt4, 15000)                     \
    X(state_sizes_ct, 15000)                      \
    X(spawn_join_mt2, 5000)                       \
    X(spawn_join_mt4, 5000)                       \
    X(spawn_join_ct, 5000)                        \
    X(spawn_init_in_place_mt2, 5000)              \
    X(spawn_init_in_place_mt4, 5000)              \
    X(spawn_init_in_place_ct, 5000)               \
    X(current_thread_runs_only_when_driven, 5000) \
    X(join_in_task_mt2, 5000)                     \
    X(join_in_task_mt4, 5000)                     \
    X(join_in_task_ct, 5000)                      \
    X(blitz_run_main, 5000)                       \
    X(runtime_run_copies_back_mt2, 5000)          \
    X(runtime_run_copies_back_mt4, 5000)          \
    X(runtime_run_copies_back_ct, 5000)           \
    X(million_tasks_external_mt2, 60000)          \
    X(million_tasks_internal_mt2, 60000)          \
    X(million_tasks_internal_mt4, 60000)          \
    X(many_tasks_internal_ct, 30000)              \
    X(many_tasks_joined_mt2, 30000)               \
    X(many_tasks_joined_mt4, 30000)               \
    X(many_tasks_joined_ct, 30000)                \
    X(external_spawners_mt2, 30000)               \
    X(external_spawners_mt4, 30000)               \
    X(external_spawners_ct, 30000)                \
    X(fanout_tree_mt2, 20000)                     \
    X(fanout_tree_mt4, 20000)                     \
    X(fanout_tree_ct, 20000)                      \
    X(task_wait_inside_task_mt1, 10000)           \
    X(task_wait_inside_task_mt2, 10000)           \
    X(spawn_fn_once_mt2, 10000)                   \
    X(spawn_fn_once_mt4, 10000)                   \
    X(spawn_fn_once_ct, 10000)                    \
    X(lifo_slot_task_rescued_mt2, 60000)          \
    X(runtimes_mt_awaits_mt, 10000)               \
    X(runtimes_ct_awaits_mt, 10000)               \
    X(runtimes_mt_awaits_ct, 10000)               \
    X(runtimes_ring, 10000)                       \
    X(waker_noop, 5000)                           \
    X(waker_clone_balance_mt2, 5000)              \
    X(waker_clone_balance_mt4, 5000)              \
    X(waker_clone_balance_ct, 5000)               \
    X(waker_cross_thread_mt2, 30000)              \
    X(waker_cross_thread_mt4, 30000)              \
    X(waker_cross_thread_ct, 30000)               \
    X(wake_during_poll_mt2, 10000)                \
    X(wake_during_poll_mt4, 10000)                \
    X(wake_during_poll_ct, 10000)                 \
    X(waker_storm_mt2, 30000)                     \
    X(waker_storm_mt4, 30000)                     \
    X(waker_storm_ct, 30000)                      \
    X(yield_alternates_ct, 5000)                  \
    X(yield_lets_others_run_ct, 5000)             \
    X(yield_fair_mt1, 10000)                      \
    X(yield_fair_ct, 10000)                       \
    X(cancel_idle_now_ct, 5000)                   \
    X(cancel_idle_mt2, 10000)                     \
    X(cancel_idle_mt4, 10000)                     \
    X(cancel_idle_ct, 10000)                      \
    X(cancel_queued_ct, 5000)                     \
    X(cancel_queued_mt2, 10000)                   \
    X(cancel_queued_mt4, 10000)                   \
    X(cancel_running_mt2, 10000)                  \
    X(cancel_running_mt4, 10000)                  \
    X(cancel_self_mt2, 10000)                     \
    X(cancel_self_mt4, 10000)                     \
    X(cancel_self_ct, 10000)                      \
    X(cancel_after_complete_mt2, 5000)            \
    X(cancel_after_complete_mt4, 5000)            \
    X(cancel_after_complete_ct, 5000)             \
    X(cancel_shield_mt2, 10000)                   \
    X(cancel_shield_mt4, 10000)                   \
    X(cancel_shield_ct, 10000)                    \
    X(shield_nesting_mt2, 5000)                   \
    X(shield_nesting_mt4, 5000)                   \
    X(shield_nesting_ct, 5000)                    \
    X(cancel_race_mt2, 60000)                     \
    X(cancel_race_mt4, 60000)                     \
    X(drop_once_mt2, 10000)                       \
    X(drop_once_mt4, 10000)                       \
    X(drop_once_ct, 10000)                        \
    X(detach_running_mt2, 10000)                  \
    X(detach_running_mt4, 10000)                  \
    X(detach_self_mt2, 10000)                     \
    X(detach_self_mt4, 10000)                     \
    X(detach_self_ct, 10000)                      \
    X(shutdown_everything_mt2, 15000)             \
    X(shutdown_everything_mt4, 15000)             \
    X(shutdown_everything_ct, 15000)              \
    X(shutdown_wakes_waiter_mt2, 10000)           \
    X(shutdown_wakes_waiter_mt4, 10000)           \
    X(shutdown_wakes_waiter_ct, 10000)            \
    X(shutdown_waits_for_poll_mt1, 10000)         \
    X(shutdown_waits_for_poll_mt2, 10000)         \
    X(shutdown_wakes_other_runtime_mt, 10000)     \
    X(shutdown_wakes_other_runtime_ct, 10000)     \
    X(free_without_shutdown_mt2, 10000)           \
    X(free_without_shutdown_mt4, 10000)           \
    X(free_without_shutdown_ct, 10000)            \
    X(free_with_handles_held_mt2, 10000)          \
    X(free_with_handles_held_mt4, 10000)          \
    X(free_with_handles_held_ct, 10000)           \
    X(shutdown_many_mt2, 20000)                   \
    X(shutdown_many_mt4, 20000)                   \
    X(shutdown_many_ct, 20000)                    \
    X(shutdown_spawn_race_mt2, 20000)             \
    X(shutdown_spawn_race_mt4, 20000)             \
    X(shutdown_spawn_race_ct, 20000)              \
    X(stats_fresh_mt2, 5000)                      \
    X(stats_fresh_mt4, 5000)                      \
    X(stats_fresh_ct, 5000)                       \
    X(stats_counts_mt2, 10000)                    \
    X(stats_counts_mt4, 10000)                    \
    X(stats_counts_ct, 10000)                     \
    X(stats_queue_depth_mt2, 10000)               \
    X(stats_fixed_interval, 10000)                \
    X(stats_idle_workers_park, 10000)             \
    X(time_never_early_mt2, 20000)                \
    X(time_never_early_ct, 20000)                 \
    X(time_fires_during_long_poll_mt2, 10000)     \
    X(time_idle_no_cpu_mt2, 10000)                \
    X(time_paused_hour_mt2, 5000)                 \
    X(time_paused_hour_ct, 5000)                  \
    X(time_paused_order_mt2, 5000)                \
    X(time_paused_order_ct, 5000)                 \
    X(time_advance_fires_due_mt2, 10000)          \
    X(time_advance_fires_due_ct, 10000)           \
    X(time_advance_einval, 5000)                  \
    X(time_timeout_mt2, 5000)                     \
    X(time_timeout_ct, 5000)                      \
    X(time_interval_mt2, 5000)                    \
    X(time_interval_ct, 5000)                     \
    X(time_interval_delay_grace_mt2, 5000)        \
    X(time_interval_delay_grace_ct, 5000)         \
    X(time_cancel_mt2, 10000)                     \
    X(time_cancel_ct, 10000)                      \
    X(time_cancel_race_mt2, 60000)                \
    X(time_cancel_race_mt4, 60000)                \
    X(time_bad_input_mt2, 5000)                   \
    X(time_bad_input_ct, 5000)                    \
    X(time_shutdown_armed_mt2, 10000)             \
    X(time_shutdown_armed_ct, 10000)              \
    BLITZ_OP_TEST_LIST(X)                         \
    BLITZ_SYNC_TEST_LIST(X)                       \
    BLITZ_CHAN_TEST_LIST(X)                       \
    BLITZ_IO_TEST_LIST(X)                         \
    BLITZ_SOCK_TEST_LIST(X)                       \
    BLITZ_POOL_TEST_LIST(X)                       \
    BLITZ_STREAM_TEST_LIST(X)                     \
    BLITZ_METRICS_TEST_LIST(X)                    \
    BLITZ_OBSERVE_TEST_LIST(X)                    \
    BLITZ_INTERNAL_TEST_LIST(X)
