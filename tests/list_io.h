/* Tests of the io area: X(name, timeout_ms). */
#define BLITZ_IO_TEST_LIST(X)
