/* Tests of the io area (tests/list_io.h). */
