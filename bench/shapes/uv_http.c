/* libuv's server for the HTTP shape of bench/shapes.sh: the same minimal
 * HTTP/1.1 keep-alive responder as blitz_server.c's http mode (each
 * request up to its blank line gets one fixed 200 response; pipelined
 * requests their responses in one write), on one uv loop thread, as
 * libuv programs are written: a read buffer lent by alloc_cb, a write
 * tried at once (uv_try_write) and queued only for what is left.
 *
 *   uv_http     prints "PORT <n>" (127.0.0.1, any free port), serves
 *               until stdin closes */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/plain\r\n"
                               "Content-Length: 13\r\n"
                               "\r\n"
                               "Hello, world!";
#define RESPONSE_LEN (sizeof RESPONSE - 1)
#define MAX_BATCH    32

static char responses[MAX_BATCH * RESPONSE_LEN];
static char readbuf[65536]; /* one loop thread: each read is handled before the next */
static uv_loop_t *loop;

typedef struct {
    uv_tcp_t tcp;
    int matched;
} client_t;

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)h;
    (void)suggested;
    *buf = uv_buf_init(readbuf, sizeof readbuf);
}

static void close_cb(uv_handle_t *h) {
    free(h);
}

static void write_cb(uv_write_t *w, int status) {
    (void)status;
    free(w);
}

static void respond(client_t *c, size_t k) {
    while (k) {
        size_t b = k < MAX_BATCH ? k : MAX_BATCH;
        uv_buf_t buf = uv_buf_init(responses, (unsigned)(b * RESPONSE_LEN));
        int n = uv_try_write((uv_stream_t *)&c->tcp, &buf, 1);
        if (n < 0)
            n = 0;
        if ((size_t)n < buf.len) {
            uv_write_t *w = malloc(sizeof *w);
            buf = uv_buf_init(responses + n, buf.len - (unsigned)n);
            if (uv_write(w, (uv_stream_t *)&c->tcp, &buf, 1, write_cb) != 0)
                free(w);
        }
        k -= b;
    }
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    client_t *c = (client_t *)s;
    if (n < 0) {
        uv_close((uv_handle_t *)s, close_cb);
        return;
    }
    static const char end[] = "\r\n\r\n";
    size_t k = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (buf->base[i] == end[c->matched])
            c->matched++;
        else
            c->matched = buf->base[i] == '\r' ? 1 : 0;
        if (c->matched == 4) {
            k++;
            c->matched = 0;
        }
    }
    respond(c, k);
}

static void on_conn(uv_stream_t *server, int status) {
    if (status < 0)
        return;
    client_t *c = calloc(1, sizeof *c);
    uv_tcp_init(loop, &c->tcp);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, close_cb);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
}

static void stdin_cb(uv_poll_t *p, int status, int events) {
    (void)p;
    (void)status;
    (void)events;
    char b[256];
    if (read(0, b, sizeof b) <= 0)
        exit(0);
}

int main(void) {
    for (size_t i = 0; i < MAX_BATCH; i++)
        memcpy(responses + i * RESPONSE_LEN, RESPONSE, RESPONSE_LEN);
    loop = uv_default_loop();
    uv_tcp_t server;
    uv_tcp_init(loop, &server);
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    if (uv_tcp_bind(&server, (const struct sockaddr *)&a, 0) ||
        uv_listen((uv_stream_t *)&server, 4096, on_conn)) {
        fprintf(stderr, "uv_http: cannot listen\n");
        return 1;
    }
    int alen = sizeof a;
    uv_tcp_getsockname(&server, (struct sockaddr *)&a, &alen);
    printf("PORT %d\n", ntohs(a.sin_port));
    fflush(stdout);
    uv_poll_t in;
    uv_poll_init(loop, &in, 0);
    uv_poll_start(&in, UV_READABLE, stdin_cb);
    return uv_run(loop, UV_RUN_DEFAULT);
}
