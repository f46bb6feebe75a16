/* DNS: getaddrinfo on the blocking pool (blocking_pool.c ops); on
 * Windows GetAddrInfoW, the name turned into UTF-16 first. The answer is
 * copied into one array of fixed-size addresses, so the caller frees one
 * block and a lookup abandoned by its task is freed by the thread that
 * finishes it (the op's discard). */
#include "../io/io.h"

#if BLITZ__HAS_IO || BLITZ__WIN32

_Static_assert(sizeof(struct sockaddr_in6) <= sizeof(((blitz_resolved_addr *)0)->addr.bytes),
               "a resolved address holds an IPv6 socket address");

static int blitz__dns_error(int gai) {
    switch (gai) {
    case EAI_NONAME:
#ifdef EAI_NODATA
    case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY:
#endif
        return BLITZ_ENOHOST;
    case EAI_AGAIN:
        return BLITZ_EDNSTEMP;
    case EAI_MEMORY:
        return BLITZ_ENOMEM;
    case EAI_FAMILY:
    case EAI_SERVICE:
    case EAI_BADFLAGS:
        return BLITZ_EINVAL;
#ifdef EAI_SYSTEM
    case EAI_SYSTEM:
        return blitz__from_errno(errno);
#endif
    default:
        return BLITZ_EDNS;
    }
}

#if BLITZ__WIN32
typedef ADDRINFOW blitz__dns_ai;
#define blitz__dns_free FreeAddrInfoW

/* GetAddrInfoW: 0 or a code. */
static int blitz__dns_getaddrinfo(const char *host, const char *service, const blitz__dns_ai *hints,
                                  blitz__dns_ai **res) {
    int rc = blitz__winsock_start();
    if (rc != 0)
        return rc;
    wchar_t *whost = blitz__utf16(host, &rc), *wservice = NULL;
    if (whost && (wservice = blitz__utf16(service, &rc)) != NULL) {
        int e = GetAddrInfoW(whost, wservice, hints, res);
        rc = e ? blitz__dns_error(e) : 0;
    }
    blitz__free(whost);
    blitz__free(wservice);
    return rc;
}
#else
typedef struct addrinfo blitz__dns_ai;
#define blitz__dns_free freeaddrinfo

static int blitz__dns_getaddrinfo(const char *host, const char *service, const blitz__dns_ai *hints,
                                  blitz__dns_ai **res) {
    int e = getaddrinfo(host, service, hints, res);
    return e ? blitz__dns_error(e) : 0;
}
#endif

static int blitz__dns_lookup(const char *host, uint16_t port, int family,
                             blitz_resolved_addr **out) {
    blitz__dns_ai hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = family == 4 ? AF_INET : family == 6 ? AF_INET6 : AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    int rc = blitz__dns_getaddrinfo(host, service, &hints, &res);
    if (rc != 0)
        return rc;
    size_t n = 0;
    for (blitz__dns_ai *a = res; a; a = a->ai_next)
        if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
            a->ai_addrlen <= sizeof(((blitz_resolved_addr *)0)->addr.bytes))
            n++;
    if (n == 0) {
        blitz__dns_free(res);
        return BLITZ_ENOHOST;
    }
    blitz_resolved_addr *list = (blitz_resolved_addr *)blitz__calloc(n * sizeof *list);
    if (!list) {
        blitz__dns_free(res);
        return BLITZ_ENOMEM;
    }
    size_t i = 0;
    for (blitz__dns_ai *a = res; a; a = a->ai_next) {
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
            a->ai_addrlen > sizeof list[i].addr.bytes)
            continue;
        list[i].family = a->ai_family;
        list[i].len = (uint32_t)a->ai_addrlen;
        memcpy(list[i].addr.bytes, a->ai_addr, a->ai_addrlen);
        i++;
    }
    blitz__dns_free(res);
    *out = list;
    return (int)n;
}

typedef struct {
    blitz__pool_rec base;
    char *host;
    uint16_t port;
    int family;
    int result;
    blitz_resolved_addr *addrs;
} blitz__dns_rec;

static void blitz__dns_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__dns_rec *d = (blitz__dns_rec *)rec;
    d->result =
        cancelled ? BLITZ_ECANCELED : blitz__dns_lookup(d->host, d->port, d->family, &d->addrs);
}

static void blitz__dns_discard(blitz__pool_rec *rec) {
    blitz__dns_rec *d = (blitz__dns_rec *)rec;
    blitz__free(d->addrs);
    blitz__free(d->host);
}

BLITZ_API blitz_poll blitz_dns_resolve(blitz_cx *cx, blitz_dns_op *op, const char *host,
                                       uint16_t port, int family) {
    if (!op)
        return BLITZ_READY;
    blitz__pool_rec *done;
    if (!blitz__pool_op_idle(&op->blitz__op)) {
        if (blitz__pool_op_poll(cx, &op->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_dns_cancel, op);
        blitz__dns_rec *d = (blitz__dns_rec *)done;
        op->result = d->result;
        op->addrs = d->addrs;
        d->addrs = NULL;
        blitz__pool_rec_free(done);
        return BLITZ_READY;
    }
    op->addrs = NULL;
    size_t len = host ? strlen(host) + 1 : 0;
    if (!cx || len <= 1 || len > 1025 /* NI_MAXHOST */ ||
        (family != 0 && family != 4 && family != 6)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__dns_rec *d =
        (blitz__dns_rec *)blitz__pool_rec_new(sizeof *d, blitz__dns_exec, blitz__dns_discard);
    if (d)
        d->host = (char *)blitz__malloc(len);
    if (!d || !d->host) {
        if (d)
            blitz__pool_rec_free(&d->base);
        op->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    /* Port 0 with "name:port": the port comes from the name. */
    if (port != 0 || blitz_host_port_split(host, d->host, len, &d->port) != BLITZ_OK) {
        memcpy(d->host, host, len);
        d->port = port;
    }
    d->family = family;
    int err = 0;
    if (blitz__pool_op_start(cx, &op->blitz__op, &d->base, &err) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_dns_cancel, op);
    op->result = err;
    return BLITZ_READY;
}

BLITZ_API void blitz_dns_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_dns_op *d = (blitz_dns_op *)p;
    if (d)
        blitz__pool_op_cancel(&d->blitz__op);
}

static blitz_poll blitz__dns_value_poll(blitz_cx *cx, void *arg) {
    blitz_dns_op *op = (blitz_dns_op *)arg;
    return op ? blitz_dns_resolve(cx, op, op->blitz__host, op->blitz__port, op->blitz__family)
              : BLITZ_READY;
}
BLITZ_API blitz_op blitz_op_dns_resolve(blitz_dns_op *op, const char *host, uint16_t port,
                                        int family) {
    if (op) {
        op->blitz__host = host;
        op->blitz__port = port;
        op->blitz__family = family;
    }
    return blitz_op_make(blitz__dns_value_poll, blitz_dns_cancel, op);
}

#endif /* BLITZ__HAS_IO || BLITZ__WIN32 */
