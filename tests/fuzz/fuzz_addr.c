/* The address parsers on arbitrary text: blitz_addr_parse and
 * blitz_host_port_split never read or write out of bounds, and whatever
 * they accept is consistent: a parsed address formats back to text that
 * parses to the same address, and a split host fits its buffer, is
 * terminated, and appears in the input. */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 512)
        return 0;
    char *s = malloc(size + 1);
    FZ_CHECK(s);
    memcpy(s, data, size);
    s[size] = '\0';

    blitz_addr a;
    if (blitz_addr_parse(s, &a) == BLITZ_OK) {
        char text[160];
        int n = blitz_addr_format(&a, text, sizeof text);
        FZ_CHECK(n > 0 && (size_t)n < sizeof text && strlen(text) == (size_t)n);
        blitz_addr b;
        FZ_CHECK(blitz_addr_parse(text, &b) == BLITZ_OK);
        FZ_CHECK(a.len == b.len && memcmp(&a.u, &b.u, a.len) == 0);
    }

    /* The host buffer's size comes from the input too, so short ones are
     * tried. */
    size_t cap = size ? 1 + data[0] % 80 : 1;
    char *host = malloc(cap);
    FZ_CHECK(host);
    uint16_t port = 0;
    if (blitz_host_port_split(s, host, cap, &port) == BLITZ_OK) {
        size_t hl = strnlen(host, cap);
        FZ_CHECK(hl < cap);
        FZ_CHECK(strstr(s, host) != NULL);
    }
    free(host);
    free(s);
    return 0;
}
