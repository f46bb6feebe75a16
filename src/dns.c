/* DNS: getaddrinfo on the blocking pool (blocking_pool.c ops). The answer
 * is copied into one array of fixed-size addresses, so the caller frees
 * one block and a lookup abandoned by its task is freed by the thread that
 * finishes it (the op's discard). */
#include "internal.h"

#define BLITZ__DNS_OF(pop) \
    ((blitz_dns_op *)(void *)((char *)(pop)-offsetof(blitz_dns_op, blitz__op)))

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
    case EAI_SYSTEM:
        return blitz__from_errno(errno);
    default:
        return BLITZ_EDNS;
    }
}

static int blitz__dns_lookup(const char *host, uint16_t port, int family,
                             blitz_resolved_addr **out) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = family == 4 ? AF_INET : family == 6 ? AF_INET6 : AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0)
        return blitz__dns_error(rc);
    size_t n = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next)
        if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
            a->ai_addrlen <= sizeof(((blitz_resolved_addr *)0)->addr.bytes))
            n++;
    if (n == 0) {
        freeaddrinfo(res);
        return BLITZ_ENOHOST;
    }
    blitz_resolved_addr *list = (blitz_resolved_addr *)blitz__calloc(n * sizeof *list);
    if (!list) {
        freeaddrinfo(res);
        return BLITZ_ENOMEM;
    }
    size_t i = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
            a->ai_addrlen > sizeof list[i].addr.bytes)
            continue;
        list[i].family = a->ai_family;
        list[i].len = (uint32_t)a->ai_addrlen;
        memcpy(list[i].addr.bytes, a->ai_addr, a->ai_addrlen);
        i++;
    }
    freeaddrinfo(res);
    *out = list;
    return (int)n;
}

static void blitz__dns_exec(blitz__pool_op *op, int cancelled) {
    blitz_dns_op *d = BLITZ__DNS_OF(op);
    d->addrs = NULL;
    d->result =
        cancelled ? BLITZ_ECANCELED
                  : blitz__dns_lookup(d->blitz__host, d->blitz__port, d->blitz__family, &d->addrs);
    blitz__free(d->blitz__host);
    d->blitz__host = NULL;
}

static void blitz__dns_discard(blitz__pool_op *op) {
    blitz_dns_op *d = BLITZ__DNS_OF(op);
    blitz__free(d->addrs);
    d->addrs = NULL;
    d->result = BLITZ_ECANCELED;
}

BLITZ_API blitz_poll blitz_dns_resolve(blitz_cx *cx, blitz_dns_op *op, const char *host,
                                       uint16_t port, int family) {
    if (!op)
        return BLITZ_READY;
    if (!blitz__pool_op_idle(&op->blitz__op))
        return blitz__pool_op_poll(&op->blitz__op);
    op->addrs = NULL;
    if (!cx || !host || !*host || (family != 0 && family != 4 && family != 6)) {
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    size_t len = strlen(host) + 1;
    if (len > 1025) { /* NI_MAXHOST */
        op->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    op->blitz__host = (char *)blitz__malloc(len);
    if (!op->blitz__host) {
        op->result = BLITZ_ENOMEM;
        return BLITZ_READY;
    }
    memcpy(op->blitz__host, host, len);
    op->blitz__port = port;
    op->blitz__family = family;
    int err = 0;
    if (blitz__pool_op_start(cx, &op->blitz__op, blitz__dns_exec, blitz__dns_discard, &err) ==
        BLITZ_PENDING)
        return BLITZ_PENDING;
    blitz__free(op->blitz__host);
    op->blitz__host = NULL;
    op->result = err;
    return BLITZ_READY;
}

BLITZ_API void blitz_dns_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    blitz_dns_op *d = (blitz_dns_op *)p;
    if (!d)
        return;
    blitz__pool_op_cancel(&d->blitz__op);
    /* Out of the queue before a thread saw it: the host copy is ours. */
    if (blitz__pool_op_idle(&d->blitz__op)) {
        blitz__free(d->blitz__host);
        d->blitz__host = NULL;
    }
}
