/* Tests of the pool area: X(name, timeout_ms). */
#define BLITZ_POOL_TEST_LIST(X)
