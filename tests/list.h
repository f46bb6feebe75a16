/* Every test, in run order: X(name, timeout_ms). A test named foo is
 * defined with BLITZ_TEST(foo) in one of tests/*.c. */
#define BLITZ_TEST_LIST(X)                                                                         \
    X(error_strings, 5000)
