/* The other side of the address parsers: blitz_addr_format on arbitrary
 * socket address bytes and lengths (what a peer's datagram or a careless
 * caller can hand it), and blitz_addr_unix on arbitrary paths. Formatting
 * never reads past the address or writes past the buffer, returns the text
 * length or BLITZ_ERANGE exactly when the text was cut, always terminates,
 * and what it prints parses back to the same address. */
#include "fuzz_input.h"

/* Formats `a` into buffers of every size up to the whole text, checking
 * each against the whole text; returns the text's length or -1. */
static int fz_format(const blitz_addr *a, char *text, size_t cap, size_t small) {
    int n = blitz_addr_format(a, text, cap);
    if (n < 0) {
        FZ_CHECK(n == BLITZ_EINVAL && text[0] == 0);
        return -1;
    }
    FZ_CHECK((size_t)n < cap && strlen(text) == (size_t)n);
    char cut[160];
    FZ_CHECK(small < sizeof cut);
    memset(cut, 'x', sizeof cut);
    int m = blitz_addr_format(a, cut, small);
    if ((size_t)n < small) {
        FZ_CHECK(m == n && strcmp(cut, text) == 0);
    } else {
        FZ_CHECK(m == BLITZ_ERANGE && strlen(cut) == small - 1);
        FZ_CHECK(memcmp(cut, text, small - 1) == 0);
    }
    FZ_CHECK(cut[small] == 'x'); /* nothing written past the buffer */
    return n;
}

static void fz_raw(fz_input *in) {
    blitz_addr a;
    memset(&a, 0, sizeof a);
    a.len = (uint32_t)fz_u8(in);
    size_t take = in->left < sizeof a.u.bytes ? in->left : sizeof a.u.bytes;
    memcpy(a.u.bytes, in->p, take);
    in->p += take;
    in->left -= take;
    char text[160];
    int n = fz_format(&a, text, sizeof text, 1 + a.len % 64);
    if (n < 0 || a.u.family == AF_UNIX)
        return;
    blitz_addr b;
    FZ_CHECK(blitz_addr_parse(text, &b) == BLITZ_OK);
    FZ_CHECK(b.u.family == a.u.family);
    FZ_CHECK(blitz_addr_port(&b) == blitz_addr_port(&a));
    if (a.u.family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a.u.bytes, *y = (const void *)b.u.bytes;
        FZ_CHECK(x->sin_addr.s_addr == y->sin_addr.s_addr);
    } else {
        const struct sockaddr_in6 *x = (const void *)a.u.bytes, *y = (const void *)b.u.bytes;
        FZ_CHECK(memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0);
        FZ_CHECK(x->sin6_scope_id == y->sin6_scope_id);
    }
}

static void fz_unix(fz_input *in) {
    size_t len = in->left < 200 ? in->left : 200;
    char path[201];
    memcpy(path, in->p, len);
    path[len] = 0;
    blitz_addr a;
    if (blitz_addr_unix(path, &a) != BLITZ_OK) {
        FZ_CHECK(a.len == 0);
        return;
    }
    FZ_CHECK(a.len <= sizeof(struct sockaddr_un) && blitz_addr_family(&a) == AF_UNIX);
    char text[160];
    FZ_CHECK(fz_format(&a, text, sizeof text, 1 + len % 128) >= 0);
    FZ_CHECK(strcmp(text, path) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    if (fz_u8(&in) & 1)
        fz_unix(&in);
    else
        fz_raw(&in);
    return 0;
}
