/* Tests of the chan area (tests/list_chan.h). */
