/* Tests of the chan area: X(name, timeout_ms). */
#define BLITZ_CHAN_TEST_LIST(X)
