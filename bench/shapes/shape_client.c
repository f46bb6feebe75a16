/* The load client of bench/shapes.sh (plain POSIX C and epoll, no
 * runtime), against any echo server on 127.0.0.1.
 *
 *   shape_client idle-busy -p PORT [-P SERVER_PID] [-n IDLE] [-c BUSY]
 *                [-d SECS] [-i IMPL]
 *       IDLE connections (default 10000), each echoes one byte (so the
 *       server has run a receive and a send for it) and then stays idle;
 *       the server's resident memory (VmRSS of SERVER_PID) before and
 *       after gives its memory per idle connection. Then BUSY connections
 *       (default 50) ping-pong 64 bytes for 1 s of warm-up and SECS
 *       (default 5) measured, one client thread: requests/s and latency
 *       percentiles of the busy ones while the idle ones stay open.
 *   shape_client churn -p PORT [-t THREADS] [-d SECS] [-i IMPL]
 *       THREADS (default 4) loops of connect, one 64-byte request and its
 *       echo, close: connections per second over SECS (default 5) after
 *       1 s of warm-up. The client closes with a reset (SO_LINGER 0), so
 *       its ports never pile up in TIME_WAIT.
 *
 * Prints bench=NAME value=V unit=U impl=IMPL lines. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 64

static int port, idle_n = 10000, busy_n = 50, secs = 5, threads = 4;
static long server_pid;
static const char *impl = "server";

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static int dial(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int tries = 0;; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            die("socket");
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return fd;
        }
        close(fd);
        if (tries > 100)
            die("connect");
        usleep(10000); /* a full accept backlog: try again */
    }
}

static int full_io(int fd, char *buf, size_t n, int send_it) {
    for (size_t done = 0; done < n;) {
        ssize_t r = send_it ? send(fd, buf + done, n - done, MSG_NOSIGNAL)
                            : recv(fd, buf + done, n - done, 0);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        done += (size_t)r;
    }
    return 0;
}

static long rss_kb(void) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", server_pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- idle + busy ---------------------------------------------------------------------- */

typedef struct {
    int fd;
    size_t got;
    uint64_t sent_at;
    char buf[MSG];
} busy_conn;

static int idle_busy(void) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if ((long)rl.rlim_cur < idle_n + busy_n + 64) {
        fprintf(stderr, "shape_client: descriptor limit %ld too low\n", (long)rl.rlim_cur);
        return 1;
    }
    long before = server_pid ? rss_kb() : -1;
    int *idle = malloc(sizeof(int) * (size_t)idle_n);
    char b = 'x';
    for (int i = 0; i < idle_n; i++) {
        idle[i] = dial();
        if (full_io(idle[i], &b, 1, 1) || full_io(idle[i], &b, 1, 0))
            die("idle echo");
    }
    usleep(500000);
    long after = server_pid ? rss_kb() : -1;
    if (before > 0 && after > 0)
        printf("bench=shape_idle_mem_per_conn value=%.2f unit=KB impl=%s\n",
               (double)(after - before) / idle_n, impl);

    int ep = epoll_create1(EPOLL_CLOEXEC);
    busy_conn *bc = calloc((size_t)busy_n, sizeof *bc);
    for (int i = 0; i < busy_n; i++) {
        bc[i].fd = dial();
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, bc[i].fd, &ev);
    }
    size_t cap = 1u << 20, n = 0;
    uint64_t *lat = malloc(cap * sizeof *lat);
    char msg[MSG];
    memset(msg, 'a', sizeof msg);
    uint64_t t0 = now_ns(), start = t0 + 1000000000u, end = start + (uint64_t)secs * 1000000000u;
    for (int i = 0; i < busy_n; i++) {
        bc[i].sent_at = now_ns();
        if (full_io(bc[i].fd, msg, MSG, 1))
            die("busy send");
    }
    struct epoll_event evs[64];
    uint64_t now = t0;
    while (now < end) {
        int k = epoll_wait(ep, evs, 64, 1000);
        now = now_ns();
        for (int j = 0; j < k; j++) {
            busy_conn *c = &bc[evs[j].data.u32];
            ssize_t r = recv(c->fd, c->buf + c->got, MSG - c->got, MSG_DONTWAIT);
            if (r <= 0) {
                if (r < 0 && errno == EAGAIN)
                    continue;
                die("busy recv");
            }
            c->got += (size_t)r;
            if (c->got < MSG)
                continue;
            c->got = 0;
            if (c->sent_at >= start && n < cap)
                lat[n++] = now - c->sent_at;
            c->sent_at = now;
            if (full_io(c->fd, msg, MSG, 1))
                die("busy send");
        }
    }
    qsort(lat, n, sizeof *lat, cmp_u64);
    printf("bench=shape_busy_rps value=%.1f unit=req/s impl=%s\n", (double)n / secs, impl);
    if (n) {
        printf("bench=shape_busy_p50 value=%.3f unit=ms impl=%s\n", lat[n / 2] / 1e6, impl);
        printf("bench=shape_busy_p99 value=%.3f unit=ms impl=%s\n", lat[n * 99 / 100] / 1e6, impl);
    }
    fprintf(stderr, "# shape idle+busy: %d idle, %d busy, rss %ld -> %ld KB\n", idle_n, busy_n,
            before, after);
    for (int i = 0; i < busy_n; i++)
        close(bc[i].fd);
    for (int i = 0; i < idle_n; i++)
        close(idle[i]);
    return 0;
}

/* ---- churn ---------------------------------------------------------------------------- */

static atomic_long churned;
static atomic_int churn_stop, churn_failed;

static void *churn_main(void *arg) {
    (void)arg;
    char msg[MSG], in[MSG];
    memset(msg, 'c', sizeof msg);
    struct linger lg = {1, 0};
    while (!atomic_load(&churn_stop)) {
        int fd = dial();
        if (full_io(fd, msg, MSG, 1) || full_io(fd, in, MSG, 0)) {
            atomic_store(&churn_failed, 1);
            close(fd);
            break;
        }
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(fd);
        atomic_fetch_add(&churned, 1);
    }
    return NULL;
}

static int churn(void) {
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, churn_main, NULL);
    sleep(1);
    long c0 = atomic_load(&churned);
    uint64_t t0 = now_ns();
    sleep((unsigned)secs);
    long c1 = atomic_load(&churned);
    uint64_t t1 = now_ns();
    atomic_store(&churn_stop, 1);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    if (atomic_load(&churn_failed)) {
        fprintf(stderr, "shape_client: a churn request failed\n");
        return 1;
    }
    printf("bench=shape_churn_conn_per_s value=%.1f unit=conn/s impl=%s\n",
           (double)(c1 - c0) * 1e9 / (double)(t1 - t0), impl);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: shape_client idle-busy|churn -p PORT [options]\n");
        return 2;
    }
    const char *mode = argv[1];
    int o;
    optind = 2;
    while ((o = getopt(argc, argv, "p:P:n:c:d:t:i:")) != -1) {
        switch (o) {
        case 'p':
            port = atoi(optarg);
            break;
        case 'P':
            server_pid = atol(optarg);
            break;
        case 'n':
            idle_n = atoi(optarg);
            break;
        case 'c':
            busy_n = atoi(optarg);
            break;
        case 'd':
            secs = atoi(optarg);
            break;
        case 't':
            threads = atoi(optarg);
            break;
        case 'i':
            impl = optarg;
            break;
        default:
            return 2;
        }
    }
    if (port <= 0)
        return 2;
    if (!strcmp(mode, "idle-busy"))
        return idle_busy();
    if (!strcmp(mode, "churn"))
        return churn();
    fprintf(stderr, "shape_client: unknown mode %s\n", mode);
    return 2;
}
