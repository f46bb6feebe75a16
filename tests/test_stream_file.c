/* File streams both ways through blitz_copy: a file into a socket and a
 * socket into a file (included by blitz_tests.c after test_stream.c,
 * whose copier task and byte pattern it uses). */

static int st_file_both(blitz_backend b, tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(b, f);
    if (!rt)
        return 0;
    char in_path[] = "/tmp/blitz_sf_XXXXXX", out_path[] = "/tmp/blitz_sf_XXXXXX";
    int in = mkstemp(in_path), out = mkstemp(out_path);
    CHECK_GE(in, 0);
    CHECK_GE(out, 0);
    unlink(in_path);
    unlink(out_path);
    uint64_t total = (uint64_t)test_scaled(2) << 20 | 12345;
    unsigned char *data = malloc((size_t)total);
    CHECK_NOT_NULL(data);
    for (uint64_t i = 0; i < total; i++)
        data[i] = st_pattern(i);
    CHECK_EQ(write(in, data, (size_t)total), (long long)total);
    CHECK_EQ(lseek(in, 0, SEEK_SET), 0);
    blitz_socket *x, *y;
    CHECK_OK(blitz_unix_pair(rt, 1, &x, &y));
    st_copier up, down;
    memset(&up, 0, sizeof up);
    memset(&down, 0, sizeof down);
    CHECK_OK(blitz_stream_file(&up.src, in, 0));
    CHECK_OK(blitz_stream_socket(&up.dst, x, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_socket(&down.src, y, BLITZ_STREAM_OWN));
    CHECK_OK(blitz_stream_file(&down.dst, out, 0));
    blitz_task *tu, *td;
    CHECK_OK(blitz_spawn(rt, st_copier_poll, &down, sizeof down, &td));
    CHECK_OK(blitz_spawn(rt, st_copier_poll, &up, sizeof up, &tu));
    CHECK_OK(blitz_join_blocking(tu));
    CHECK_OK(blitz_join_blocking(td));
    CHECK_EQ(((st_copier *)blitz_task_state(tu))->c.result, (long long)total);
    CHECK_EQ(((st_copier *)blitz_task_state(td))->c.result, (long long)total);
    blitz_task_release(&tu);
    blitz_task_release(&td);
    /* What reached the second file is the first, byte for byte. */
    unsigned char *back = malloc((size_t)total);
    CHECK_NOT_NULL(back);
    CHECK_EQ(pread(out, back, (size_t)total, 0), (long long)total);
    CHECK(memcmp(back, data, (size_t)total) == 0);
    unsigned char extra;
    CHECK_EQ(pread(out, &extra, 1, (off_t)total), 0);
    free(back);
    free(data);
    close(in);
    close(out);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
ST_TESTS(file_both)
