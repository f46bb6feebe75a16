/* Socket addresses: parsing, formatting, host:port splitting. Pure
 * functions, the same on every system (Windows included). */

BLITZ_TEST(addr_parse) {
    blitz_addr a;
    char buf[128];
    CHECK_OK(blitz_addr_parse("127.0.0.1:8080", &a));
    CHECK_EQ(blitz_addr_family(&a), AF_INET);
    CHECK_EQ(blitz_addr_port(&a), 8080);
    CHECK_EQ(blitz_addr_format(&a, buf, sizeof buf), (int)strlen("127.0.0.1:8080"));
    CHECK(strcmp(buf, "127.0.0.1:8080") == 0);
    CHECK_OK(blitz_addr_parse("[::1]:443", &a));
    CHECK_EQ(blitz_addr_family(&a), AF_INET6);
    CHECK_EQ(blitz_addr_port(&a), 443);
    CHECK_GT(blitz_addr_format(&a, buf, sizeof buf), 0);
    CHECK(strcmp(buf, "[::1]:443") == 0);
    CHECK_OK(blitz_addr_parse("[fe80::1%1]:80", &a));
    CHECK_GT(blitz_addr_format(&a, buf, sizeof buf), 0);
    CHECK(strcmp(buf, "[fe80::1%1]:80") == 0);
    CHECK_OK(blitz_addr_parse("0.0.0.0:0", &a));
    CHECK_EQ(blitz_addr_port(&a), 0);
    const char *bad[] = {"",
                         "127.0.0.1",
                         "127.0.0.1:",
                         "127.0.0.1:65536",
                         "1.2.3:80",
                         "::1:80",
                         "[::1]",
                         "[::1]80",
                         "[1.2.3.4]:80",
                         "host:80",
                         "1.2.3.4:8x",
                         "[::1]:-1",
                         "256.1.1.1:1",
                         ":80",
                         "[]:80",
                         "1.2.3.4:99999999999",
                         "[fe80::1%4294967296]:80",
                         "[fe80::1%99999999999999999999]:80",
                         "[fe80::1%-1]:80",
                         "[fe80::1%+7]:80",
                         "[fe80::1% 7]:80",
                         "[fe80::1%7x]:80",
                         "[fe80::1%]:80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = blitz_addr_parse(bad[i], &a);
        CHECK_BASE(rc == BLITZ_EINVAL, "parse(\"%s\") = %d", bad[i], rc);
    }
    CHECK_EQ(blitz_addr_parse(NULL, &a), BLITZ_EINVAL);
    CHECK_EQ(blitz_addr_parse("1.2.3.4:5", NULL), BLITZ_EINVAL);
    CHECK_OK(blitz_addr_ip("10.1.2.3", 7, &a));
    CHECK_EQ(blitz_addr_port(&a), 7);
    CHECK_EQ(blitz_addr_ip("nope", 7, &a), BLITZ_EINVAL);
    CHECK_OK(blitz_addr_unix("/tmp/x.sock", &a));
    CHECK_EQ(blitz_addr_family(&a), AF_UNIX);
    CHECK_GT(blitz_addr_format(&a, buf, sizeof buf), 0);
    CHECK(strcmp(buf, "/tmp/x.sock") == 0);
    CHECK_OK(blitz_addr_unix("@abstract", &a));
    CHECK_GT(blitz_addr_format(&a, buf, sizeof buf), 0);
    CHECK(strcmp(buf, "@abstract") == 0);
    CHECK_EQ(blitz_addr_unix("", &a), BLITZ_EINVAL);
    CHECK_EQ(blitz_addr_unix("@", &a), BLITZ_EINVAL);
    char longp[200];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    CHECK_EQ(blitz_addr_unix(longp, &a), BLITZ_EINVAL);
    /* An abstract name may fill sun_path (107 bytes after its NUL); a
     * path needs room for its terminator. */
    longp[0] = '@';
    longp[108] = 0;
    CHECK_OK(blitz_addr_unix(longp, &a));
    CHECK_EQ(blitz_addr_format(&a, buf, sizeof buf), 108);
    CHECK(memcmp(buf, longp, 109) == 0);
    longp[108] = 'a';
    longp[109] = 0;
    CHECK_EQ(blitz_addr_unix(longp, &a), BLITZ_EINVAL);
    longp[0] = 'a';
    longp[107] = 0;
    CHECK_OK(blitz_addr_unix(longp, &a));
    longp[107] = 'a';
    longp[108] = 0;
    CHECK_EQ(blitz_addr_unix(longp, &a), BLITZ_EINVAL);
    CHECK_OK(blitz_addr_parse("[fe80::1%4294967295]:80", &a));
    /* A length that does not fit its family: an error, no read past it. */
    CHECK_OK(blitz_addr_unix("/tmp/x.sock", &a));
    a.len = sizeof a.u.bytes + 1;
    CHECK_EQ(blitz_addr_format(&a, buf, sizeof buf), BLITZ_EINVAL);
    a.len = 111; /* longer than a struct sockaddr_un */
    CHECK_EQ(blitz_addr_format(&a, buf, sizeof buf), BLITZ_EINVAL);
    a.len = 2; /* the family alone: a Unix socket with no name */
    CHECK_EQ(blitz_addr_format(&a, buf, sizeof buf), (int)strlen("(unnamed)"));
    CHECK_OK(blitz_addr_parse("127.0.0.1:80", &a));
    a.len = 4;
    CHECK_EQ(blitz_addr_format(&a, buf, sizeof buf), BLITZ_EINVAL);
    CHECK(buf[0] == 0);
    CHECK_OK(blitz_addr_parse("127.0.0.1:80", &a));
    CHECK_EQ(blitz_addr_format(&a, buf, 5), BLITZ_ERANGE);
    CHECK_EQ(strlen(buf), 4);
    CHECK_EQ(blitz_addr_port(NULL), -1);
    return 0;
}

BLITZ_TEST(addr_host_port_split) {
    char host[64];
    uint16_t port = 1;
    CHECK_OK(blitz_host_port_split("example.com:443", host, sizeof host, &port));
    CHECK_EQ(strcmp(host, "example.com"), 0);
    CHECK_EQ(port, 443);
    CHECK_OK(blitz_host_port_split("[::1]:8080", host, sizeof host, &port));
    CHECK_EQ(strcmp(host, "::1"), 0);
    CHECK_EQ(port, 8080);
    CHECK_OK(blitz_host_port_split("10.0.0.1:0", host, sizeof host, &port));
    CHECK_EQ(port, 0);
    static const char *const bad[] = {"example.com", "example.com:", ":80",     "::1:80",
                                      "[::1]80",     "[]:80",        "h:65536", "h:8x",
                                      "h:-1",        "[a]b]:1",      ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        port = 7;
        CHECK_EQ(blitz_host_port_split(bad[i], host, sizeof host, &port), BLITZ_EINVAL);
        CHECK_EQ(host[0], 0);
        CHECK_EQ(port, 0);
    }
    CHECK_EQ(blitz_host_port_split("abcd:1", host, 4, &port), BLITZ_EINVAL); /* too long */
    CHECK_OK(blitz_host_port_split("abc:1", host, 4, &port));
    CHECK_EQ(blitz_host_port_split(NULL, host, sizeof host, &port), BLITZ_EINVAL);
    CHECK_EQ(blitz_host_port_split("a:1", NULL, sizeof host, &port), BLITZ_EINVAL);
    CHECK_EQ(blitz_host_port_split("a:1", host, 0, &port), BLITZ_EINVAL);
    CHECK_EQ(blitz_host_port_split("a:1", host, sizeof host, NULL), BLITZ_EINVAL);
    return 0;
}
