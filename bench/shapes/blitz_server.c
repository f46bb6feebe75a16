/* blitz's server for the load shapes (bench/shapes.sh): the runtime as a
 * user gets it (blitz_runtime_new(NULL)), one task per connection, every
 * receive into a buffer the runtime lends (blitz_sock_recv_buf), so an
 * idle connection holds no buffer.
 *
 *   blitz_server echo    echoes every byte back (TCP_NODELAY)
 *   blitz_server http    a minimal HTTP/1.1 keep-alive responder: each
 *                        request (up to its blank line; no bodies) gets
 *                        the same fixed 200 response, pipelined requests
 *                        their responses in one send
 *
 * Prints "PORT <n>" (127.0.0.1, any free port), serves until stdin
 * closes. */
#define BLITZ_IMPLEMENTATION
#include "../../blitz.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/plain\r\n"
                               "Content-Length: 13\r\n"
                               "\r\n"
                               "Hello, world!";
#define RESPONSE_LEN (sizeof RESPONSE - 1)
#define MAX_BATCH    32 /* pipelined responses per send */

static char responses[MAX_BATCH * RESPONSE_LEN];
static int http_mode;

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io io;
    blitz_buf in;
    int matched;       /* bytes of "\r\n\r\n" seen at the end of the data so far */
    size_t due, batch; /* responses owed, and in the send under way */
} conn;

/* Counts the requests that end in `b` (each at its first blank line). */
static size_t count_requests(conn *c, const char *p, size_t n) {
    static const char end[] = "\r\n\r\n";
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == end[c->matched])
            c->matched++;
        else
            c->matched = p[i] == '\r' ? 1 : 0;
        if (c->matched == 4) {
            k++;
            c->matched = 0;
        }
    }
    return k;
}

static blitz_poll conn_poll(blitz_cx *cx, void *p) {
    conn *c = p;
    BLITZ_BEGIN(c);
    for (;;) {
        BLITZ_AWAIT(c, blitz_sock_recv_buf(cx, &c->io, c->sock, &c->in));
        if (c->io.result <= 0)
            break;
        if (!http_mode) {
            BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->sock, c->in.data, c->in.len));
            blitz_buf_release(&c->in);
            if (c->io.result < 0)
                break;
            continue;
        }
        c->due += count_requests(c, c->in.data, c->in.len);
        blitz_buf_release(&c->in);
        while (c->due) {
            c->batch = c->due < MAX_BATCH ? c->due : MAX_BATCH;
            BLITZ_AWAIT(
                c, blitz_sock_send_all(cx, &c->io, c->sock, responses, c->batch * RESPONSE_LEN));
            if (c->io.result < 0)
                goto out;
            c->due -= c->batch;
        }
    }
out:
    blitz_sock_close(c->sock);
    BLITZ_END(c);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_io io;
    blitz_timer backoff;
} acceptor;

static blitz_poll acceptor_poll(blitz_cx *cx, void *p) {
    acceptor *a = p;
    BLITZ_BEGIN(a);
    for (;;) {
        BLITZ_AWAIT(a, blitz_sock_accept(cx, &a->io, a->listener));
        if (a->io.result < 0) {
            BLITZ_AWAIT(a, blitz_sleep(cx, &a->backoff, 10 * BLITZ_MSEC));
            continue;
        }
        blitz_tcp_set_nodelay(a->io.socket, 1);
        conn c;
        memset(&c, 0, sizeof c);
        c.sock = a->io.socket;
        if (blitz_spawn(blitz_cx_runtime(cx), conn_poll, &c, sizeof c, NULL) != BLITZ_OK)
            blitz_sock_close(c.sock);
    }
    BLITZ_END(a);
}

static void *stdin_watch(void *arg) {
    (void)arg;
    char b[256];
    while (read(0, b, sizeof b) > 0) {
    }
    _exit(0);
}

int main(int argc, char **argv) {
    http_mode = argc > 1 && !strcmp(argv[1], "http");
    for (size_t i = 0; i < MAX_BATCH; i++)
        memcpy(responses + i * RESPONSE_LEN, RESPONSE, RESPONSE_LEN);
    blitz_runtime *rt = NULL;
    blitz_addr addr;
    acceptor a;
    memset(&a, 0, sizeof a);
    if (blitz_runtime_new(NULL, &rt) != BLITZ_OK ||
        blitz_addr_ip("127.0.0.1", 0, &addr) != BLITZ_OK ||
        blitz_tcp_listen(rt, &addr, 4096, 0, &a.listener) != BLITZ_OK) {
        fprintf(stderr, "blitz_server: cannot listen\n");
        return 1;
    }
    blitz_sock_local_addr(a.listener, &addr);
    printf("PORT %d\n", blitz_addr_port(&addr));
    fflush(stdout);
    pthread_t th;
    pthread_create(&th, NULL, stdin_watch, NULL);
    return blitz_runtime_run(rt, acceptor_poll, &a, sizeof a) == BLITZ_OK ? 0 : 1;
}
