/* Tests of task ids, the task dump, the stall watchdog and the leak report
 * (tests/test_observe.c). */
#define BLITZ_OBSERVE_TEST_LIST(X)    \
    X(observe_dump_sites_mt2, 30000)  \
    X(observe_dump_sites_mt4, 30000)  \
    X(observe_dump_sites_ct, 30000)   \
    X(observe_ids_mt2, 10000)         \
    X(observe_ids_mt4, 10000)         \
    X(observe_ids_ct, 10000)          \
    X(observe_dump_100k, 60000)       \
    X(observe_stall_mt2, 30000)       \
    X(observe_stall_mt4, 30000)       \
    X(observe_stall_ct, 30000)        \
    X(observe_leak_report_mt2, 30000) \
    X(observe_leak_report_mt4, 30000) \
    X(observe_leak_report_ct, 30000)
