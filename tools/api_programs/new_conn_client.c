/* Opens 100 connections to an echo server, written against the current
 * API. Each sends a line and reads its echo within 5 s; a connection that
 * takes longer is cancelled and counted as timed out.
 *
 *   new_conn_client HOST:PORT   (HOST a name or an address; prints the counts)
 *
 * Exits 0 when every connection got its echo. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>
#include <string.h>

#define NCONN    100
#define LIMIT_NS (5 * BLITZ_SEC)

static const char msg[] = "hello, echo server\n";
#define MSG_LEN (sizeof msg - 1)

typedef struct {
    BLITZ_CORO;
    const char *target; /* "HOST:PORT" */
    blitz_connect_op connect;
    blitz_io io;
    char echo[MSG_LEN];
    int ok;
} conn;

static blitz_poll conn_poll(blitz_cx *cx, void *p) {
    conn *c = p;
    BLITZ_BEGIN(c);
    BLITZ_AWAIT(c, blitz_tcp_connect_host(cx, &c->connect, c->target, 0));
    if (c->connect.result < 0)
        BLITZ_RETURN(c);
    BLITZ_AWAIT(c, blitz_sock_send_all(cx, &c->io, c->connect.socket, msg, MSG_LEN));
    if (c->io.result >= 0)
        BLITZ_AWAIT(c, blitz_sock_recv_exact(cx, &c->io, c->connect.socket, c->echo, MSG_LEN));
    c->ok = c->io.result == MSG_LEN && memcmp(c->echo, msg, MSG_LEN) == 0;
    BLITZ_END(c);
}

/* However the task ended (done, or cancelled at its deadline with its
 * pending op withdrawn), its socket is left to close. */
static void conn_drop(void *p) {
    blitz_sock_close(((conn *)p)->connect.socket);
}

int main(int argc, char **argv) {
    char host[256];
    uint16_t port;
    if (argc != 2 || blitz_host_port_split(argv[1], host, sizeof host, &port) != BLITZ_OK) {
        fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
        return 2;
    }
    blitz_runtime *rt = NULL;
    blitz_task *tasks[NCONN] = {0};
    int ok = 0, timed_out = 0, failed = 0;
    int rc = blitz_runtime_new(NULL, &rt);
    if (rc != BLITZ_OK) {
        fprintf(stderr, "conn_client: %s\n", blitz_strerror(rc));
        return 1;
    }
    for (int i = 0; i < NCONN; i++) {
        conn c = {.target = argv[1]};
        blitz_spawn_opts o = {.poll = conn_poll,
                              .state = &c,
                              .size = sizeof c,
                              .drop = conn_drop,
                              .timeout_ns = LIMIT_NS};
        blitz_spawn_ex(rt, &o, &tasks[i]); /* on failure tasks[i] stays NULL */
    }
    for (int i = 0; i < NCONN; i++) {
        int status = blitz_join_blocking(tasks[i]); /* BLITZ_EINVAL for NULL */
        if (status == BLITZ_ETIMEDOUT)
            timed_out++;
        else if (status == BLITZ_OK && ((conn *)blitz_task_state(tasks[i]))->ok)
            ok++;
        else
            failed++;
        blitz_task_release(&tasks[i]);
    }
    blitz_runtime_free(rt);
    printf("ok %d, timed out %d, failed %d\n", ok, timed_out, failed);
    return ok == NCONN ? 0 : 1;
}
