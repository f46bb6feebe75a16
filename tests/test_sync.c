/* Tests of the sync area (tests/list_sync.h). */
