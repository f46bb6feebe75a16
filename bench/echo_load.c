/* echo_load: the tcp group's own load client, for when neither anchor
 * client is at hand. Plain POSIX (threads, nonblocking sockets, epoll):
 * it does not use blitz, so the tcp group measures blitz's server only.
 *
 *   echo_load -p PORT [-H 127.0.0.1] [-c 50] [-s 64] [-w 1] [-d 3] [-r 5]
 *             [-t 1] [-b BYTES] [-i blitz]
 *
 * The workload is the Tokio anchor's echo client (tcp.rs in
 * ../shared/anchors/tokio):
 *   echo  C connections (TCP_NODELAY), closed loop: each sends S bytes,
 *         waits until all S came back, records the latency (send .. last
 *         byte), sends again. W s warm-up on the same connections, then R
 *         back-to-back windows of D s; a request belongs to the window it
 *         was sent in. Per window: requests / window length, p50 and p99.
 *         Printed: the median over the windows.
 *   bulk  (B > 0; default 1 GiB) one connection streams B bytes in 65,536-
 *         byte writes while reading the echo back; timed from the first
 *         write to the last byte back. One warm-up transfer, then R, median.
 * The load runs on T threads (default 1, as both anchor clients: another
 * client thread would compete with the server for this machine's two
 * cores), each owning an equal share of the connections.
 *
 * stdout: bench=tcp_echo_c<C>_m<S>_{rps,p50,p99} (ops/s, ms) and
 * bench=tcp_bulk_<B/MiB>mib (MB/s), impl=<-i>; details on stderr as '#'
 * lines. Exit 1 when a connection fails or a window saw no request; the
 * process ends itself (status 124) 60 s after its planned time. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_WINDOWS 64
#define MAX_MSG     65536
#define BULK_CHUNK  65536
#define BULK_CAP_S  60

static const char *opt_host = "127.0.0.1";
static int opt_port, opt_conns = 50, opt_size = 64, opt_windows = 5, opt_threads = 1;
static double opt_warm = 1.0, opt_dur = 3.0;
static uint64_t opt_bulk = 1ull << 30;
static const char *opt_impl = "blitz";
static struct sockaddr_in server;

/* 0 = warm-up, 1..opt_windows = measured window, beyond = stop. */
static atomic_int phase;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void die(const char *what) {
    fprintf(stderr, "# echo_load: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void on_alarm(int sig) {
    static const char msg[] = "# echo_load: time limit reached\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(124);
}

/* Connects blocking (connecting is not timed), then goes nonblocking. */
static int connect_server(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    if (connect(fd, (const struct sockaddr *)&server, sizeof server) < 0)
        die("connect");
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        die("TCP_NODELAY");
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die("O_NONBLOCK");
    return fd;
}

/* ---- echo: closed-loop ping-pong ----------------------------------------------------- */

typedef struct {
    uint32_t *v;
    size_t n, cap;
} lat_vec;

static void lat_push(lat_vec *l, uint32_t ns) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 65536;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v)
            die("realloc");
    }
    l->v[l->n++] = ns;
}

typedef struct {
    int fd, window, want_out, dead;
    size_t sent, got;
    uint64_t t0;
    unsigned char *out, *in;
} conn;

typedef struct {
    pthread_t th;
    int ep, nconns, errors;
    conn *conns;
    lat_vec lat[MAX_WINDOWS]; /* [w - 1]: requests sent in window w */
} worker;

static void conn_fail(worker *w, conn *c, const char *why) {
    fprintf(stderr, "# echo_load: connection %d: %s\n", c->fd, why);
    epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
    c->dead = 1;
    w->errors++;
}

static void want_writable(worker *w, conn *c, int on) {
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    if (c->want_out != on && epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->want_out = on;
}

/* Sends what is left of the request; waits for EPOLLOUT if the socket is full. */
static void send_rest(worker *w, conn *c) {
    while (c->sent < (size_t)opt_size) {
        ssize_t r = send(c->fd, c->out + c->sent, (size_t)opt_size - c->sent, MSG_NOSIGNAL);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            want_writable(w, c, 1);
            return;
        }
        if (r < 0) {
            conn_fail(w, c, strerror(errno));
            return;
        }
        c->sent += (size_t)r;
    }
    want_writable(w, c, 0);
}

static void start_request(worker *w, conn *c) {
    c->window = atomic_load_explicit(&phase, memory_order_relaxed);
    c->sent = c->got = 0;
    c->t0 = now_ns();
    send_rest(w, c);
}

static void on_readable(worker *w, conn *c) {
    for (;;) {
        ssize_t r = recv(c->fd, c->in + c->got, (size_t)opt_size - c->got, 0);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r <= 0) {
            conn_fail(w, c, r == 0 ? "server closed the connection" : strerror(errno));
            return;
        }
        c->got += (size_t)r;
        if (c->got < (size_t)opt_size)
            continue;
        uint64_t ns = now_ns() - c->t0;
        if (memcmp(c->in, c->out, (size_t)opt_size) != 0) {
            conn_fail(w, c, "echoed different bytes");
            return;
        }
        if (c->window >= 1 && c->window <= opt_windows)
            lat_push(&w->lat[c->window - 1], ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns);
        if (atomic_load_explicit(&phase, memory_order_relaxed) > opt_windows)
            return;
        start_request(w, c);
        if (c->dead)
            return;
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    struct epoll_event evs[64];
    for (int i = 0; i < w->nconns; i++)
        start_request(w, &w->conns[i]);
    while (atomic_load_explicit(&phase, memory_order_relaxed) <= opt_windows) {
        /* The timeout only bounds how late the stop is seen. */
        int n = epoll_wait(w->ep, evs, 64, 50);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (c->dead)
                continue;
            if (evs[i].events & EPOLLOUT)
                send_rest(w, c);
            if (!c->dead && (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                on_readable(w, c);
        }
    }
    for (int i = 0; i < w->nconns; i++)
        close(w->conns[i].fd);
    return NULL;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The sample at rank round((n - 1) * p) of a sorted window, in ms. */
static double pct_ms(const uint32_t *v, size_t n, double p) {
    return v[(size_t)((double)(n - 1) * p + 0.5)] / 1e6;
}

static void emit(const char *name, double value, const char *unit) {
    printf("bench=%s value=%.4f unit=%s impl=%s\n", name, value, unit, opt_impl);
    fflush(stdout);
}

static void note(const char *name, const char *what, const double *v, int n) {
    fprintf(stderr, "# %s %s=[", name, what);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%.4f", i ? "," : "", v[i]);
    fprintf(stderr, "]\n");
}

static int run_echo(void) {
    int nt = opt_threads < opt_conns ? opt_threads : opt_conns;
    worker *ws = calloc((size_t)nt, sizeof *ws);
    conn *cs = calloc((size_t)opt_conns, sizeof *cs);
    if (!ws || !cs)
        die("calloc");
    for (int i = 0; i < opt_conns; i++) {
        conn *c = &cs[i];
        c->fd = connect_server();
        c->out = malloc((size_t)opt_size);
        c->in = malloc((size_t)opt_size);
        if (!c->out || !c->in)
            die("malloc");
        memset(c->out, (i & 0xff) ^ 0x5a, (size_t)opt_size);
    }
    /* Thread t owns connections [t * C / T, (t + 1) * C / T). */
    for (int t = 0; t < nt; t++) {
        worker *w = &ws[t];
        int lo = t * opt_conns / nt, hi = (t + 1) * opt_conns / nt;
        w->conns = cs + lo;
        w->nconns = hi - lo;
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        if (w->ep < 0)
            die("epoll_create1");
        for (int i = 0; i < w->nconns; i++) {
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &w->conns[i]};
            if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->conns[i].fd, &ev) < 0)
                die("epoll_ctl");
        }
    }
    for (int t = 0; t < nt; t++)
        if (pthread_create(&ws[t].th, NULL, worker_main, &ws[t]) != 0)
            die("pthread_create");

    double secs[MAX_WINDOWS];
    sleep_s(opt_warm);
    for (int w = 1; w <= opt_windows; w++) {
        uint64_t t = now_ns();
        atomic_store_explicit(&phase, w, memory_order_relaxed);
        sleep_s(opt_dur);
        secs[w - 1] = (double)(now_ns() - t) / 1e9;
    }
    atomic_store_explicit(&phase, opt_windows + 1, memory_order_relaxed);
    int errors = 0;
    for (int t = 0; t < nt; t++) {
        pthread_join(ws[t].th, NULL);
        errors += ws[t].errors;
        close(ws[t].ep);
    }

    double rps[MAX_WINDOWS], p50[MAX_WINDOWS], p99[MAX_WINDOWS], reqs[MAX_WINDOWS];
    for (int w = 0; w < opt_windows; w++) {
        size_t n = 0;
        for (int t = 0; t < nt; t++)
            n += ws[t].lat[w].n;
        if (n == 0) {
            fprintf(stderr, "# echo_load: no request completed in window %d\n", w + 1);
            return 1;
        }
        uint32_t *all = malloc(n * sizeof *all);
        if (!all)
            die("malloc");
        size_t k = 0;
        for (int t = 0; t < nt; t++) {
            memcpy(all + k, ws[t].lat[w].v, ws[t].lat[w].n * sizeof *all);
            k += ws[t].lat[w].n;
            free(ws[t].lat[w].v);
        }
        qsort(all, n, sizeof *all, cmp_u32);
        rps[w] = (double)n / secs[w];
        p50[w] = pct_ms(all, n, 0.50);
        p99[w] = pct_ms(all, n, 0.99);
        reqs[w] = (double)n;
        free(all);
    }
    for (int i = 0; i < opt_conns; i++) {
        free(cs[i].out);
        free(cs[i].in);
    }
    free(cs);
    free(ws);

    char base[64], name[96];
    snprintf(base, sizeof base, "tcp_echo_c%d_m%d", opt_conns, opt_size);
    note(base, "rps", rps, opt_windows);
    note(base, "p50_ms", p50, opt_windows);
    note(base, "p99_ms", p99, opt_windows);
    note(base, "requests", reqs, opt_windows);
    if (errors) {
        fprintf(stderr, "# echo_load: %d connection(s) failed\n", errors);
        return 1;
    }
    snprintf(name, sizeof name, "%s_rps", base);
    emit(name, median(rps, opt_windows), "ops/s");
    snprintf(name, sizeof name, "%s_p50", base);
    emit(name, median(p50, opt_windows), "ms");
    snprintf(name, sizeof name, "%s_p99", base);
    emit(name, median(p99, opt_windows), "ms");
    return 0;
}

/* ---- bulk: one connection, write and read at once ------------------------------------- */

/* One transfer of `total` bytes; its seconds, or -1 on failure. */
static double bulk_once(uint64_t total) {
    static unsigned char out[BULK_CHUNK], in[BULK_CHUNK];
    memset(out, 0xa5, sizeof out);
    int fd = connect_server();
    uint64_t sent = 0, got = 0, t0 = now_ns();
    uint64_t cap = t0 + (uint64_t)BULK_CAP_S * 1000000000u;
    double secs = -1;
    while (got < total) {
        if (now_ns() > cap) {
            fprintf(stderr, "# echo_load: bulk transfer took over %d s\n", BULK_CAP_S);
            goto out;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN | (sent < total ? POLLOUT : 0)};
        if (poll(&p, 1, 100) < 0 && errno != EINTR)
            die("poll");
        if ((p.revents & POLLOUT) && sent < total) {
            size_t n = total - sent < BULK_CHUNK ? (size_t)(total - sent) : BULK_CHUNK;
            ssize_t r = send(fd, out, n, MSG_NOSIGNAL);
            if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                fprintf(stderr, "# echo_load: bulk send: %s\n", strerror(errno));
                goto out;
            }
            if (r > 0)
                sent += (uint64_t)r;
        }
        if (p.revents & (POLLIN | POLLERR | POLLHUP)) {
            ssize_t r = recv(fd, in, sizeof in, 0);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                fprintf(stderr, "# echo_load: bulk receive: %s\n",
                        r == 0 ? "server closed early" : strerror(errno));
                goto out;
            }
            if (r > 0)
                got += (uint64_t)r;
        }
    }
    secs = (double)(now_ns() - t0) / 1e9;
out:
    close(fd);
    return secs;
}

static int run_bulk(void) {
    double mbs[MAX_WINDOWS];
    for (int i = 0; i <= opt_windows; i++) {
        double s = bulk_once(opt_bulk);
        if (s <= 0)
            return 1;
        if (i > 0) /* the first transfer is the warm-up */
            mbs[i - 1] = (double)opt_bulk / 1e6 / s;
    }
    char name[64];
    snprintf(name, sizeof name, "tcp_bulk_%llumib", (unsigned long long)(opt_bulk >> 20));
    note(name, "MBps", mbs, opt_windows);
    emit(name, median(mbs, opt_windows), "MB/s");
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: echo_load -p PORT [-H 127.0.0.1] [-c CONNS] [-s MSG_BYTES] "
                    "[-w WARMUP_S] [-d WINDOW_S] [-r WINDOWS] [-t THREADS] [-b BULK_BYTES|0] "
                    "[-i IMPL]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int o;
    while ((o = getopt(argc, argv, "H:p:c:s:w:d:r:t:b:i:")) != -1) {
        switch (o) {
        case 'H':
            opt_host = optarg;
            break;
        case 'p':
            opt_port = atoi(optarg);
            break;
        case 'c':
            opt_conns = atoi(optarg);
            break;
        case 's':
            opt_size = atoi(optarg);
            break;
        case 'w':
            opt_warm = atof(optarg);
            break;
        case 'd':
            opt_dur = atof(optarg);
            break;
        case 'r':
            opt_windows = atoi(optarg);
            break;
        case 't':
            opt_threads = atoi(optarg);
            break;
        case 'b':
            opt_bulk = strtoull(optarg, NULL, 10);
            break;
        case 'i':
            opt_impl = optarg;
            break;
        default:
            usage();
        }
    }
    if (opt_port <= 0 || opt_port > 65535 || opt_conns < 1 || opt_size < 1 || opt_size > MAX_MSG ||
        opt_warm < 0 || opt_dur <= 0 || opt_windows < 1 || opt_windows > MAX_WINDOWS ||
        opt_threads < 1)
        usage();
    server.sin_family = AF_INET;
    server.sin_port = htons((uint16_t)opt_port);
    /* A load generator: only ever aimed at this machine. */
    if (inet_pton(AF_INET, opt_host, &server.sin_addr) != 1 ||
        (ntohl(server.sin_addr.s_addr) >> 24) != 127) {
        fprintf(stderr, "echo_load: %s is not an IPv4 loopback address\n", opt_host);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    double planned = opt_warm + opt_windows * opt_dur;
    if (opt_bulk)
        planned += (opt_windows + 1) * (double)BULK_CAP_S;
    alarm((unsigned)planned + 60);

    fprintf(stderr,
            "# echo_load: %s:%d, %d connections x %d bytes, %d thread(s), %.1f s warm-up, "
            "%d x %.1f s windows\n",
            opt_host, opt_port, opt_conns, opt_size, opt_threads, opt_warm, opt_windows, opt_dur);
    int rc = run_echo();
    if (rc == 0 && opt_bulk)
        rc = run_bulk();
    return rc;
}
