/* Every test, in run order: X(name, timeout_ms). A test named foo is
 * defined with BLITZ_TEST(foo) in one of the tests/ files. */
#include "list_internal.h"

#define BLITZ_TEST_LIST(X)                                                                         \
    X(error_strings, 5000)                                                                         \
    BLITZ_INTERNAL_TEST_LIST(X)
