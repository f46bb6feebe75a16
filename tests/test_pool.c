/* Tests of the pool area (tests/list_pool.h). */
