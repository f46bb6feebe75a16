/* TCP benchmarks: blitz's mirror of the Tokio anchor's `tcp` group
 * (../shared/anchors/tokio/src/tcp.rs).
 *
 *   tcp                      the group: start a blitz echo server (this
 *                            program, `echo-server --default`, a child
 *                            process), drive it with the anchors'
 *                            load client, print the anchor's names:
 *                            tcp_echo_c50_m64_rps / _p50 / _p99 (50
 *                            connections x 64-byte ping-pong, 1 s warm-up,
 *                            5 x 3 s windows, median) and tcp_bulk_1024mib.
 *   tcp echo-server [--port N] [--workers N] [--default]
 *                            the server alone: prints "PORT <n>", echoes
 *                            (65,536-byte buffer per connection, TCP_NODELAY)
 *                            until its stdin closes. --default: the runtime
 *                            as a user gets it, blitz_runtime_new(NULL)
 *                            (workers, backend: blitz's own choice).
 *
 * The group's server is the default one, started with no BLITZ_*
 * variable in its environment (BENCH_TCP_TUNED=1: 2 workers, and the
 * environment as it is, e.g. BLITZ_BACKEND).
 *
 * The client, in order of preference (BENCH_TCP_CLIENT=tokio|uv|own forces
 * one):
 *   tokio  the Tokio anchor's own client (`tokio-anchor echo-client --addr
 *          ... --impl blitz`), the one the anchor's numbers come from; found
 *          through TOKIO_ANCHOR_BIN, build/tokio-target/release/ (where
 *          make bench-compare builds it) or the anchor's own target/ under
 *          SHARED_DIR (default ../shared beside the repository);
 *   uv     ../shared/anchors/libuv/echo_client.c (the client of the Go and
 *          libuv anchors), built by the Makefile as build/bench/echo_client;
 *          its names and units are converted to the Tokio anchor's;
 *   own    bench/echo_load.c, built as build/bench/echo_load: the same
 *          workload in plain POSIX C, for a checkout without the anchors.
 * BENCH_TCP_WINDOW_S (default 3) shortens the echo windows and
 * BENCH_TCP_BULK_MIB (default 1024) the bulk transfer of the uv and own
 * clients, for quick checks; the figures are then not the anchors'
 * workload.
 * The server reports its CPU time per request on stderr (# server_cpu
 * ...). */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include "bench_common.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the server ------------------------------------------------------------------------ */

#define SERVER_BUF 65536

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    char buf[SERVER_BUF];
} conn_task;

static blitz_poll conn_poll(blitz_cx *cx, void *p) {
    conn_task *c = p;
    BLITZ_BEGIN(c);
    for (;;) {
        BLITZ_AWAIT(c, blitz_sock_recv(cx, &c->op, c->sock, c->buf, sizeof c->buf));
        if (c->op.result <= 0)
            break;
        BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->op, c->sock, c->buf, (size_t)c->op.result));
        if (c->op.result < 0)
            break;
    }
    blitz_sock_close(c->sock);
    BLITZ_END(c);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_io op;
    blitz_timer timer;
    conn_task *proto;
} accept_task;

static blitz_poll accept_poll(blitz_cx *cx, void *p) {
    accept_task *a = p;
    BLITZ_BEGIN(a);
    for (;;) {
        BLITZ_AWAIT(a, blitz_sock_accept(cx, &a->op, a->listener));
        if (a->op.result < 0) {
            fprintf(stderr, "# accept error: %s\n", blitz_strerror((int)a->op.result));
            BLITZ_AWAIT(a, blitz_sleep(cx, &a->timer, 10 * BLITZ_MSEC));
            continue;
        }
        blitz_tcp_set_nodelay(a->op.socket, 1);
        a->proto->sock = a->op.socket;
        if (blitz_spawn(blitz_cx_runtime(cx), conn_poll, a->proto, sizeof *a->proto, NULL) !=
            BLITZ_OK)
            blitz_sock_close(a->op.socket);
    }
    BLITZ_END(a);
}

static void *stdin_watch(void *arg) {
    (void)arg;
    char b[256];
    while (read(0, b, sizeof b) > 0) {
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    fprintf(stderr, "# server_cpu_s=%.3f\n", cpu);
    _exit(0);
}

static int server_main(int argc, char **argv) {
    int port = 0, workers = BENCH_MT_WORKERS, dflt = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--default"))
            dflt = 1;
        if (i + 1 < argc && !strcmp(argv[i], "--port"))
            port = atoi(argv[i + 1]);
        if (i + 1 < argc && !strcmp(argv[i], "--workers"))
            workers = atoi(argv[i + 1]);
    }
    bench_watchdog(300, "echo-server");
    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = workers ? BLITZ_MULTI_THREAD : BLITZ_CURRENT_THREAD;
    cfg.workers = (uint32_t)workers;
    if (getenv("BENCH_TCP_SPIN")) /* experiments: spin rounds before parking */
        cfg.spin_before_park = (uint32_t)strtoul(getenv("BENCH_TCP_SPIN"), NULL, 10);
    blitz_runtime *rt;
    BENCH_CHECK(blitz_runtime_new(dflt ? NULL : &cfg, &rt));
    blitz_addr a;
    BENCH_CHECK(blitz_addr_ip("127.0.0.1", (uint16_t)port, &a));
    accept_task at;
    memset(&at, 0, sizeof at);
    BENCH_CHECK(blitz_tcp_listen(rt, &a, 1024, 0, &at.listener));
    blitz_addr bound;
    BENCH_CHECK(blitz_sock_local_addr(at.listener, &bound));
    at.proto = calloc(1, sizeof *at.proto);
    printf("PORT %d\n", blitz_addr_port(&bound));
    fflush(stdout);
    if (dflt)
        fprintf(stderr, "# echo-server backend=%s workers=default\n",
                blitz_backend_name(blitz_runtime_backend(rt)));
    else
        fprintf(stderr, "# echo-server backend=%s workers=%d\n",
                blitz_backend_name(blitz_runtime_backend(rt)), workers);
    pthread_t th;
    pthread_create(&th, NULL, stdin_watch, NULL);
    return blitz_runtime_run(rt, accept_poll, &at, sizeof at);
}

/* ---- the group: server child + client ------------------------------------------------------ */

extern char **environ;

/* The default server sees no BLITZ_* variable (as a user's program that
 * sets none). */
static void unset_blitz_env(void) {
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++) {
            if (!strncmp(*e, "BLITZ_", 6)) {
                char name[256];
                size_t n = strcspn(*e, "=");
                if (n >= sizeof name)
                    continue;
                memcpy(name, *e, n);
                name[n] = 0;
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
}

static int file_exists(const char *p) {
    return p && access(p, X_OK) == 0;
}

static const char *find_tokio(char *buf, size_t n, const char *self) {
    const char *e = getenv("TOKIO_ANCHOR_BIN");
    if (e && file_exists(e))
        return e;
    /* self = .../build/bench/tcp */
    char dir[2048];
    if (strlen(self) >= sizeof dir)
        return NULL;
    memcpy(dir, self, strlen(self) + 1);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        memcpy(dir, ".", 2);
    snprintf(buf, n, "%s/../tokio-target/release/tokio-anchor", dir);
    if (file_exists(buf))
        return buf;
    const char *shared = getenv("SHARED_DIR");
    if (shared && *shared)
        snprintf(buf, n, "%s/anchors/tokio/target/release/tokio-anchor", shared);
    else
        snprintf(buf, n, "%s/../../../shared/anchors/tokio/target/release/tokio-anchor", dir);
    return file_exists(buf) ? buf : NULL;
}

/* The tool `name` built beside this program (build/bench/), or NULL. */
static const char *find_tool(char *buf, size_t n, const char *self, const char *name) {
    char dir[2048];
    if (strlen(self) >= sizeof dir)
        return NULL;
    memcpy(dir, self, strlen(self) + 1);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        memcpy(dir, ".", 2);
    snprintf(buf, n, "%s/%s", dir, name);
    return file_exists(buf) ? buf : NULL;
}

/* Passes on the client's bench= lines that the filter selects; 1 if the
 * echo rate is among them. */
static int pass_on(char *out) {
    int ok = out && strstr(out, "bench=tcp_echo_c50_m64_rps") != NULL;
    for (char *l = out ? strtok(out, "\n") : NULL; l; l = strtok(NULL, "\n")) {
        char name[128];
        if (!strncmp(l, "bench=", 6) && sscanf(l, "bench=%127s", name) == 1 &&
            bench_selected(name)) {
            printf("%s\n", l);
            fflush(stdout);
        }
    }
    return ok;
}

/* Runs argv, returns its stdout (malloc'd) or NULL. */
static char *run_capture(char *const argv[]) {
    int pfd[2];
    if (pipe(pfd) < 0)
        return NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    ssize_t r;
    while ((r = read(pfd[0], out + len, cap - len - 1)) > 0) {
        len += (size_t)r;
        if (cap - len < 512) {
            cap *= 2;
            out = realloc(out, cap);
        }
    }
    out[len] = 0;
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "# client %s failed (status %d)\n", argv[0], st);
    }
    return out;
}

static double field(const char *out, const char *name) {
    char key[128];
    snprintf(key, sizeof key, "bench=%s value=", name);
    const char *p = strstr(out, key);
    return p ? atof(p + strlen(key)) : -1;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1 && !strcmp(argv[1], "echo-server"))
        return server_main(argc - 2, argv + 2);
    bench_cpu_snapshot cpu0;
    bench_cpu_snapshot_take(&cpu0);
    bench_set_filter(argc - 1, argv + 1);
    bench_watchdog(280, "tcp");

    int in[2], outp[2];
    if (pipe(in) < 0 || pipe(outp) < 0)
        bench_die("pipe");
    pid_t srv = fork();
    if (srv == 0) {
        dup2(in[0], 0);
        dup2(outp[1], 1);
        close(in[1]);
        close(outp[0]);
        if (getenv("BENCH_TCP_TUNED"))
            execl("/proc/self/exe", argv[0], "echo-server", "--port", "0", "--workers", "2",
                  (char *)NULL);
        else {
            unset_blitz_env();
            execl("/proc/self/exe", argv[0], "echo-server", "--port", "0", "--default",
                  (char *)NULL);
        }
        _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    char line[128] = {0};
    size_t ln = 0;
    while (ln + 1 < sizeof line) {
        char ch;
        if (read(outp[0], &ch, 1) != 1 || ch == '\n')
            break;
        line[ln++] = ch;
    }
    int port = 0;
    if (sscanf(line, "PORT %d", &port) != 1 || port <= 0)
        bench_die("bad server banner '%s'", line);
    fprintf(stderr, "# echo-server pid=%d port=%d\n", (int)srv, port);

    char tb[4200], ub[4200], ob[4200], addr[64], portstr[16];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    snprintf(portstr, sizeof portstr, "%d", port);
    const char *want = getenv("BENCH_TCP_CLIENT");
    const char *tokio =
        (!want || !strcmp(want, "tokio")) ? find_tokio(tb, sizeof tb, argv[0]) : NULL;
    const char *uv =
        (!want || !strcmp(want, "uv")) ? find_tool(ub, sizeof ub, argv[0], "echo_client") : NULL;
    const char *own =
        (!want || !strcmp(want, "own")) ? find_tool(ob, sizeof ob, argv[0], "echo_load") : NULL;
    /* Quick-check knobs (see the top of the file). */
    char window[32], bulk[32];
    snprintf(window, sizeof window, "%s",
             getenv("BENCH_TCP_WINDOW_S") ? getenv("BENCH_TCP_WINDOW_S") : "3");
    unsigned long long bulk_mib =
        getenv("BENCH_TCP_BULK_MIB") ? strtoull(getenv("BENCH_TCP_BULK_MIB"), NULL, 10) : 1024;
    char bulk_name[64];
    snprintf(bulk_name, sizeof bulk_name, "tcp_bulk_%llumib", bulk_mib);
    snprintf(bulk, sizeof bulk, "%llu", bench_selected(bulk_name) ? bulk_mib << 20 : 0);
    int status = 0;
    if (tokio) {
        fprintf(stderr, "# client: %s echo-client\n", tokio);
        char *cargv[] = {(char *)tokio, "echo-client", "--addr", addr, "--impl", "blitz", NULL};
        char *out = run_capture(cargv);
        /* The anchor's client prints the anchor's names: pass them on. */
        if (!pass_on(out))
            status = 1;
        free(out);
    } else if (uv) {
        fprintf(stderr, "# client: %s (libuv anchor's echo_client)\n", uv);
        char *eargv[] = {(char *)uv, "-H", "127.0.0.1", "-p", portstr, "-m", "echo", "-c",
                         "50",       "-s", "64",        "-w", "1",     "-d", window, "-r",
                         "5",        "-t", "1",         "-i", "blitz", NULL};
        char *out = run_capture(eargv);
        double rps = out ? field(out, "tcp_echo_50conn_64B_rps") : -1;
        double p50 = out ? field(out, "tcp_echo_50conn_64B_p50") : -1;
        double p99 = out ? field(out, "tcp_echo_50conn_64B_p99") : -1;
        free(out);
        if (rps <= 0)
            status = 1;
        else {
            bench_emit("tcp_echo_c50_m64_rps", rps, "ops/s");
            bench_emit("tcp_echo_c50_m64_p50", p50 / 1000.0, "ms");
            bench_emit("tcp_echo_c50_m64_p99", p99 / 1000.0, "ms");
        }
        if (bulk_mib > 0 && bench_selected(bulk_name)) {
            char *bargv[] = {(char *)uv, "-H", "127.0.0.1", "-p", portstr, "-m",    "bulk",
                             "-b",       bulk, "-r",        "5",  "-i",    "blitz", NULL};
            out = run_capture(bargv);
            /* Named tcp_bulk_1GiB, or tcp_bulk_custom for another size. */
            const char *b = out ? strstr(out, "bench=tcp_bulk_") : NULL;
            const char *v = b ? strstr(b, " value=") : NULL;
            double mbs = v ? atof(v + 7) : -1;
            free(out);
            if (mbs <= 0)
                status = 1;
            else
                bench_emit(bulk_name, mbs, "MB/s");
        }
    } else if (own) {
        fprintf(stderr, "# client: %s (blitz's own, plain POSIX)\n", own);
        char *oargv[] = {(char *)own, "-H", "127.0.0.1", "-p", portstr, "-c", "50", "-s",
                         "64",        "-w", "1",         "-d", window,  "-r", "5",  "-t",
                         "1",         "-b", bulk,        "-i", "blitz", NULL};
        char *out = run_capture(oargv);
        if (!pass_on(out))
            status = 1;
        free(out);
    } else {
        if (want && strcmp(want, "own"))
            fprintf(stderr,
                    "# BENCH_TCP_CLIENT=%s: that client is not built (tokio: make "
                    "bench-compare builds it; uv: needs the libuv anchor)\n",
                    want);
        else
            fprintf(stderr, "# no load client: build/bench/echo_load is missing (make "
                            "build/bench/echo_load)\n");
        status = 1;
    }
    close(in[1]); /* the server exits when its stdin closes */
    int st;
    waitpid(srv, &st, 0);
    bench_cpu_report_since(&cpu0, "tcp");
    return status;
}
