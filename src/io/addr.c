/* Socket addresses: parsing and formatting of IPv4, IPv6 and Unix
 * addresses into blitz_addr (a sockaddr_storage with its length). The
 * same code on Windows (Winsock's and afunix.h's structures), where an
 * IPv6 scope is a number only: interface names need iphlpapi, which
 * blitz does not link. */
#include "io.h"

#if BLITZ__HAS_IO || BLITZ__WIN32

_Static_assert(sizeof(((blitz_addr *)0)->u.bytes) >= sizeof(struct sockaddr_storage),
               "blitz_addr holds any socket address");

/* An interface index or IPv6 scope as text: digits only, within 32 bits
 * (strtoul and atoi would take a sign and spaces, and wrap or overflow).
 * 1 on success. */
BLITZ_PRIVATE int blitz__parse_index(const char *s, uint32_t *out) {
    uint64_t id = 0;
    if (!*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        id = id * 10u + (uint64_t)(*s - '0');
        if (id > UINT32_MAX)
            return 0;
    }
    *out = (uint32_t)id;
    return 1;
}

BLITZ_API int blitz_addr_ip(const char *ip, uint16_t port, blitz_addr *out) {
    if (!ip || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    struct sockaddr_in *a4 = (struct sockaddr_in *)(void *)out->u.bytes;
    if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        out->len = sizeof *a4;
        return BLITZ_OK;
    }
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)(void *)out->u.bytes;
    char tmp[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
    const char *pct = strchr(ip, '%');
    size_t n = pct ? (size_t)(pct - ip) : strlen(ip);
    if (n == 0 || n >= INET6_ADDRSTRLEN)
        goto bad;
    memcpy(tmp, ip, n);
    tmp[n] = 0;
    if (inet_pton(AF_INET6, tmp, &a6->sin6_addr) != 1)
        goto bad;
    if (pct) {
        const char *z = pct + 1;
        if (!*z)
            goto bad;
        if (*z >= '0' && *z <= '9') {
            uint32_t scope; /* sin6_scope_id is a ULONG on Windows */
            if (!blitz__parse_index(z, &scope))
                goto bad;
            a6->sin6_scope_id = scope;
        } else {
#if BLITZ__WIN32
            goto bad;
#else
            unsigned idx = if_nametoindex(z);
            if (!idx)
                goto bad;
            a6->sin6_scope_id = idx;
#endif
        }
    }
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    out->len = sizeof *a6;
    return BLITZ_OK;
bad:
    memset(out, 0, sizeof *out);
    return BLITZ_EINVAL;
}

static int blitz__parse_port(const char *p, uint16_t *port) {
    if (!*p)
        return 0;
    unsigned long v = 0;
    for (const char *c = p; *c; c++) {
        if (*c < '0' || *c > '9')
            return 0;
        v = v * 10 + (unsigned long)(*c - '0');
        if (v > 65535)
            return 0;
    }
    *port = (uint16_t)v;
    return 1;
}

BLITZ_API int blitz_host_port_split(const char *s, char *host, size_t cap, uint16_t *port) {
    if (!s || !host || cap == 0 || !port)
        return BLITZ_EINVAL;
    host[0] = 0;
    *port = 0;
    const char *start = s, *colon;
    size_t n;
    if (s[0] == '[') {
        const char *close_br = strchr(s, ']');
        if (!close_br || close_br[1] != ':')
            return BLITZ_EINVAL;
        start = s + 1;
        n = (size_t)(close_br - start);
        colon = close_br + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || strchr(s, ':') != colon)
            return BLITZ_EINVAL; /* no port, or an IPv6 address without brackets */
        n = (size_t)(colon - s);
    }
    if (n == 0 || n >= cap || memchr(start, ']', n) || !blitz__parse_port(colon + 1, port))
        return BLITZ_EINVAL;
    memcpy(host, start, n);
    host[n] = 0;
    return BLITZ_OK;
}

BLITZ_API int blitz_addr_parse(const char *s, blitz_addr *out) {
    if (!s || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
    uint16_t port;
    if (blitz_host_port_split(s, host, sizeof host, &port) != BLITZ_OK)
        return BLITZ_EINVAL;
    if (s[0] == '[' && !strchr(host, ':'))
        return BLITZ_EINVAL; /* brackets are for IPv6 only */
    return blitz_addr_ip(host, port, out);
}

BLITZ_API int blitz_addr_unix(const char *path, blitz_addr *out) {
    if (!path || !out)
        return BLITZ_EINVAL;
    memset(out, 0, sizeof *out);
    struct sockaddr_un *u = (struct sockaddr_un *)(void *)out->u.bytes;
    size_t n = strlen(path);
    /* A path needs its terminator inside sun_path; an abstract name ("@"
     * then up to 107 bytes) has none and may fill it. */
    if (n == 0 || (path[0] == '@' ? n == 1 || n > sizeof u->sun_path : n >= sizeof u->sun_path))
        return BLITZ_EINVAL;
    u->sun_family = AF_UNIX;
    if (path[0] == '@') {
        /* Abstract: a leading NUL, the name, no terminator counted. */
        u->sun_path[0] = 0;
        memcpy(u->sun_path + 1, path + 1, n - 1);
        out->len = (uint32_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        memcpy(u->sun_path, path, n + 1);
        out->len = (uint32_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    return BLITZ_OK;
}

BLITZ_API int blitz_addr_family(const blitz_addr *a) {
    return a && a->len ? a->u.family : 0;
}

BLITZ_API int blitz_addr_port(const blitz_addr *a) {
    if (!a || !a->len)
        return -1;
    if (a->u.family == AF_INET)
        return ntohs(((const struct sockaddr_in *)(const void *)a->u.bytes)->sin_port);
    if (a->u.family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)(const void *)a->u.bytes)->sin6_port);
    return -1;
}

/* Whether `a` holds a whole socket address of its family, as the kernel
 * would take it: for IPv4 and IPv6 at least their sockaddr (a length up to
 * the whole storage is fine), for Unix at least the family and at most a
 * struct sockaddr_un (an unnamed Unix address is the family alone). */
BLITZ_PRIVATE int blitz__addr_valid(const blitz_addr *a) {
    if (!a)
        return 0;
    switch (a->u.family) {
    case AF_INET:
        return a->len >= sizeof(struct sockaddr_in) && a->len <= sizeof a->u.bytes;
    case AF_INET6:
        return a->len >= sizeof(struct sockaddr_in6) && a->len <= sizeof a->u.bytes;
    case AF_UNIX:
        return a->len >= offsetof(struct sockaddr_un, sun_path) &&
               a->len <= sizeof(struct sockaddr_un);
    default:
        return 0;
    }
}

/* Stores a received datagram's source of `namelen` bytes (already in
 * a->u) as `a`'s length. A Unix sender that never bound has no name: the
 * kernel gives none, and it becomes the unnamed Unix address (the family
 * alone), the one blitz_sock_peer_addr gives for such a peer. */
BLITZ_PRIVATE void blitz__addr_set_from(blitz_addr *a, uint32_t namelen, int family) {
    if (family == AF_UNIX && namelen < offsetof(struct sockaddr_un, sun_path)) {
        a->u.family = AF_UNIX;
        namelen = (uint32_t)offsetof(struct sockaddr_un, sun_path);
    }
    a->len = namelen <= sizeof a->u.bytes ? namelen : (uint32_t)sizeof a->u.bytes;
}

BLITZ_API int blitz_addr_format(const blitz_addr *a, char *buf, size_t size) {
    if (!buf || size == 0)
        return BLITZ_EINVAL;
    buf[0] = 0;
    if (!blitz__addr_valid(a))
        return BLITZ_EINVAL;
    char tmp[160];
    int n;
    if (a->u.family == AF_INET) {
        const struct sockaddr_in *a4 = (const struct sockaddr_in *)(const void *)a->u.bytes;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof ip);
        n = snprintf(tmp, sizeof tmp, "%s:%u", ip, (unsigned)ntohs(a4->sin_port));
    } else if (a->u.family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)(const void *)a->u.bytes;
        char ip[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof ip);
        if (a6->sin6_scope_id)
            n = snprintf(tmp, sizeof tmp, "[%s%%%u]:%u", ip, (unsigned)a6->sin6_scope_id,
                         (unsigned)ntohs(a6->sin6_port));
        else
            n = snprintf(tmp, sizeof tmp, "[%s]:%u", ip, (unsigned)ntohs(a6->sin6_port));
    } else {
        const struct sockaddr_un *u = (const struct sockaddr_un *)(const void *)a->u.bytes;
        size_t plen = a->len > offsetof(struct sockaddr_un, sun_path)
                          ? a->len - offsetof(struct sockaddr_un, sun_path)
                          : 0;
        if (plen == 0) {
            n = snprintf(tmp, sizeof tmp, "(unnamed)");
        } else if (u->sun_path[0] == 0) {
            n = snprintf(tmp, sizeof tmp, "@%.*s", (int)(plen - 1), u->sun_path + 1);
        } else {
            n = snprintf(tmp, sizeof tmp, "%.*s", (int)strnlen(u->sun_path, plen), u->sun_path);
        }
    }
    if (n < 0)
        return BLITZ_EINVAL;
    if ((size_t)n >= size) {
        memcpy(buf, tmp, size - 1);
        buf[size - 1] = 0;
        return BLITZ_ERANGE;
    }
    memcpy(buf, tmp, (size_t)n + 1);
    return n;
}

#endif /* BLITZ__HAS_IO || BLITZ__WIN32 */
