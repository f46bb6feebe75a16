/* Tests of the sync area: X(name, timeout_ms). */
#define BLITZ_SYNC_TEST_LIST(X)
