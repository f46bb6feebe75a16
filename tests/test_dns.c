/* DNS (included by tests/test_pool.c). Only names every machine resolves
 * without a network: localhost and numeric addresses. */
#if !defined(_WIN32) /* Winsock's come with blitz.h there */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#endif

typedef struct {
    BLITZ_CORO;
    blitz_dns_op dns;
    int done;
} td_state;

static blitz_poll td_poll(blitz_cx *cx, void *p) {
    td_state *s = p;
    BLITZ_BEGIN(s);
    /* numeric IPv4, with the port filled in */
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "127.0.0.1", 8080, 0));
    CHECK_EQ(s->dns.result, 1);
    CHECK_EQ(s->dns.addrs[0].family, AF_INET);
    {
        struct sockaddr_in sin;
        memcpy(&sin, s->dns.addrs[0].addr.bytes, sizeof sin);
        CHECK_EQ(s->dns.addrs[0].len, sizeof sin);
        CHECK_EQ(ntohs(sin.sin_port), 8080);
        CHECK_EQ(ntohl(sin.sin_addr.s_addr), 0x7f000001);
    }
    blitz_free(s->dns.addrs);
    /* numeric IPv6 */
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "::1", 443, 6));
    CHECK_EQ(s->dns.result, 1);
    CHECK_EQ(s->dns.addrs[0].family, AF_INET6);
    {
        struct sockaddr_in6 sin6;
        memcpy(&sin6, s->dns.addrs[0].addr.bytes, sizeof sin6);
        CHECK_EQ(ntohs(sin6.sin6_port), 443);
        CHECK(IN6_IS_ADDR_LOOPBACK(&sin6.sin6_addr));
    }
    blitz_free(s->dns.addrs);
    /* a name: localhost is a loopback address of some family */
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "localhost", 80, 0));
    CHECK_GE(s->dns.result, 1);
    for (int i = 0; i < s->dns.result; i++)
        CHECK(s->dns.addrs[i].family == AF_INET || s->dns.addrs[i].family == AF_INET6);
    blitz_free(s->dns.addrs);
    /* no address of the asked family */
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "127.0.0.1", 80, 6));
#if defined(_WIN32)
    /* wine hands the host's EAI_ADDRFAMILY (-9) through untranslated:
     * no code of Windows, so BLITZ_EDNS. */
    if (s->dns.result != BLITZ_EDNS)
#endif
        CHECK_EQ(s->dns.result, BLITZ_ENOHOST);
    CHECK_NULL(s->dns.addrs);
    /* bad arguments */
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "", 80, 0));
    CHECK_EQ(s->dns.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, NULL, 80, 0));
    CHECK_EQ(s->dns.result, BLITZ_EINVAL);
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "localhost", 80, 5));
    CHECK_EQ(s->dns.result, BLITZ_EINVAL);
#if defined(_WIN32)
    /* a name that is no UTF-8 has no UTF-16 form for GetAddrInfoW */
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "bad\xff", 80, 0));
    CHECK_EQ(s->dns.result, BLITZ_EINVAL);
#endif
    s->done = 1;
    BLITZ_END(s);
}

static int dns_resolve(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    td_state s;
    memset(&s, 0, sizeof s);
    CHECK_OK(blitz_runtime_run(rt, td_poll, &s, sizeof s));
    CHECK_EQ(s.done, 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(dns_resolve)

/* Lookups given up at random moments (queued, running, finished but not
 * taken): nothing leaks (LeakSanitizer in the sanitizer builds), and the
 * op works afterwards. */
typedef struct {
    BLITZ_CORO;
    blitz_dns_op dns;
    blitz_timer timer;
    long i, n, answered, timeouts;
    unsigned seed;
} td_race;

static blitz_poll td_race_poll(blitz_cx *cx, void *p) {
    td_race *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        s->seed = s->seed * 1103515245u + 12345u;
        BLITZ_AWAIT(s, blitz_timeout_op(cx, &s->timer, tf_race_timeout(s->seed),
                                        blitz_dns_resolve(cx, &s->dns, "localhost", 80, 0),
                                        blitz_dns_cancel, &s->dns));
        if (s->timer.expired) {
            s->timeouts++;
            continue;
        }
        CHECK_GE(s->dns.result, 1);
        s->answered++;
        blitz_free(s->dns.addrs);
    }
    BLITZ_AWAIT(s, blitz_dns_resolve(cx, &s->dns, "127.0.0.1", 1, 4));
    CHECK_EQ(s->dns.result, 1);
    blitz_free(s->dns.addrs);
    BLITZ_END(s);
}

BLITZ_TEST(dns_cancel_race) {
    blitz_runtime *rt = tp_rt_new(TU_MT2, 2, 0, 0);
    enum { N = 4 };
    blitz_task *h[N];
    for (int i = 0; i < N; i++) {
        td_race s;
        memset(&s, 0, sizeof s);
        s.n = test_scaled(300);
        s.seed = (unsigned)i * 31u + 7u;
        CHECK_OK(blitz_spawn(rt, td_race_poll, &s, sizeof s, &h[i]));
    }
    long answered = 0, timeouts = 0;
    for (int i = 0; i < N; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        td_race *d = blitz_task_state(h[i]);
        answered += d->answered;
        timeouts += d->timeouts;
        blitz_task_release(&h[i]);
    }
    CHECK_GT(answered, 0);
    CHECK_GT(timeouts, 0);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
