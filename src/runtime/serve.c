/* Serving: an accept loop bound to a graceful shutdown, one task per
 * connection.
 *
 * The acceptor is a tracked task of the shutdown, so the run waits for it
 * and the coordinator outlives its wait on the token; the run does not
 * count it among the connections. It races each accept against the
 * shutdown's token; at the trigger the accept is withdrawn and settled
 * and the listener closed.
 *
 * A connection's state is the user's, behind a small head that holds the
 * user's poll and drop and the socket. The head closes the socket however
 * the task ends: its poll when the user's returns READY, its cancel hook
 * when the task is cancelled (the op it waited in is withdrawn first),
 * its drop when the task never ran, and the acceptor when the spawn
 * fails. So the user never closes a served socket. */
#include "../io/io.h"

#if BLITZ__HAS_SOCKETS

#define BLITZ__SERVE_ACCEPT  0
#define BLITZ__SERVE_BACKOFF 1
#define BLITZ__SERVE_SETTLE  2
#define BLITZ__SERVE_DONE    3

/* An accept error (out of descriptors, say) is retried after this. */
#define BLITZ__SERVE_BACKOFF_NS (10 * BLITZ_MSEC)

typedef struct {
    blitz_poll_fn poll;
    blitz_drop_fn drop;
    blitz_socket *sock;
} blitz__serve_head;

/* The user's state keeps the alignment a task's state has. */
#define BLITZ__SERVE_HEAD ((sizeof(blitz__serve_head) + 7u) & ~(size_t)7u)

typedef struct {
    blitz_shutdown *sd;
    blitz_serve_opts opts;
    int phase, armed;
    blitz_io io;
    blitz_cancel_token_wait_op stop;
    blitz_combo race;
    blitz_op ops[2];
    blitz_timer backoff;
} blitz__serve;

static void *blitz__serve_user(void *head) {
    return (char *)head + BLITZ__SERVE_HEAD;
}

static void blitz__serve_conn_close(blitz__serve_head *h) {
    if (h->sock) {
        blitz_sock_close(h->sock);
        h->sock = NULL;
    }
}

static blitz_poll blitz__serve_conn_poll(blitz_cx *cx, void *p) {
    blitz__serve_head *h = (blitz__serve_head *)p;
    if (h->poll(cx, blitz__serve_user(h)) == BLITZ_PENDING)
        return BLITZ_PENDING;
    blitz__serve_conn_close(h);
    return BLITZ_READY;
}

static void blitz__serve_conn_cancel(void *p) {
    blitz__serve_conn_close((blitz__serve_head *)p);
}

static void blitz__serve_conn_drop(void *p) {
    blitz__serve_head *h = (blitz__serve_head *)p;
    blitz__serve_conn_close(h);
    if (h->drop)
        h->drop(blitz__serve_user(h));
}

typedef struct {
    const blitz_serve_opts *opts;
    blitz_socket *sock;
} blitz__serve_conn_arg;

/* Builds the state in place: a large one is never copied twice. */
static void blitz__serve_conn_init(void *p, void *arg) {
    const blitz__serve_conn_arg *a = (const blitz__serve_conn_arg *)arg;
    blitz__serve_head *h = (blitz__serve_head *)p;
    h->poll = a->opts->poll;
    h->drop = a->opts->drop;
    h->sock = a->sock;
    char *user = (char *)blitz__serve_user(h);
    if (a->opts->state)
        memcpy(user, a->opts->state, a->opts->size);
    memcpy(user + a->opts->socket_offset, &a->sock, sizeof a->sock);
}

static void blitz__serve_conn_spawn(blitz__serve *s, blitz_socket *sock) {
    blitz__serve_conn_arg a = {&s->opts, sock};
    blitz_spawn_opts o;
    memset(&o, 0, sizeof o);
    o.poll = blitz__serve_conn_poll;
    o.size = BLITZ__SERVE_HEAD + s->opts.size;
    o.drop = blitz__serve_conn_drop;
    o.cancel = blitz__serve_conn_cancel;
    o.timeout_ns = s->opts.timeout_ns;
    o.init = blitz__serve_conn_init;
    o.init_arg = &a;
    /* A failed spawn discards the block without its hooks: the socket is
     * still ours (the grace period is over, or memory ran out). */
    if (blitz_shutdown_spawn_ex(s->sd, &o) != BLITZ_OK)
        blitz_sock_close(sock);
}

static void blitz__serve_close_listener(blitz__serve *s) {
    if (s->opts.listener) {
        blitz_sock_close(s->opts.listener);
        s->opts.listener = NULL;
    }
}

BLITZ_PRIVATE blitz_poll blitz__serve_poll(blitz_cx *cx, void *p) {
    blitz__serve *s = (blitz__serve *)p;
    for (;;) {
        switch (s->phase) {
        case BLITZ__SERVE_ACCEPT:
            if (!s->armed) {
                s->ops[0] = blitz_op_sock_accept(&s->io, s->opts.listener);
                s->ops[1] = blitz_op_cancel_token_wait(&s->stop, blitz_shutdown_token(s->sd));
                blitz_combo_reset(&s->race);
                s->armed = 1;
            }
            if (blitz_race(cx, &s->race, s->ops, 2) == BLITZ_PENDING)
                return BLITZ_PENDING;
            s->armed = 0;
            if (s->race.winner != 0)
                s->phase = BLITZ__SERVE_SETTLE; /* the accept was withdrawn */
            else if (s->io.result < 0)
                s->phase = BLITZ__SERVE_BACKOFF;
            else
                blitz__serve_conn_spawn(s, s->io.socket);
            break;
        case BLITZ__SERVE_BACKOFF:
            if (blitz_sleep(cx, &s->backoff, BLITZ__SERVE_BACKOFF_NS) == BLITZ_PENDING)
                return BLITZ_PENDING;
            s->phase = BLITZ__SERVE_ACCEPT;
            break;
        case BLITZ__SERVE_SETTLE:
            if (blitz_io_settle(cx, &s->io) == BLITZ_PENDING)
                return BLITZ_PENDING;
            blitz__serve_close_listener(s);
            s->phase = BLITZ__SERVE_DONE;
            return BLITZ_READY;
        default:
            return BLITZ_READY;
        }
    }
}

/* Cancelled (a grace period of 0, the coordinator freed, the runtime
 * freed): the race or sleep was withdrawn already. */
static void blitz__serve_cancel(void *p) {
    blitz__serve_close_listener((blitz__serve *)p);
}

BLITZ_PRIVATE int blitz__serve_is_acceptor(blitz_task *h) {
    return blitz__handle_in(h, __func__)->poll == blitz__serve_poll;
}

BLITZ_API int blitz_serve(blitz_shutdown *sd, const blitz_serve_opts *opts) {
    if (!sd || !opts || !opts->listener || !opts->poll || opts->timeout_ns < 0 ||
        opts->size < sizeof(blitz_socket *) ||
        opts->socket_offset > opts->size - sizeof(blitz_socket *) ||
        opts->size > BLITZ_MAX_STATE_SIZE - BLITZ__SERVE_HEAD)
        return BLITZ_EINVAL;
    BLITZ__SOCK_CHECK(opts->listener);
    blitz__serve s;
    memset(&s, 0, sizeof s);
    s.sd = sd;
    s.opts = *opts;
    blitz_spawn_opts o;
    memset(&o, 0, sizeof o);
    o.poll = blitz__serve_poll;
    o.state = &s;
    o.size = sizeof s;
    o.cancel = blitz__serve_cancel;
    return blitz_shutdown_spawn_ex(sd, &o);
}

#endif /* BLITZ__HAS_SOCKETS */

#if !BLITZ__HAS_SOCKETS
/* No sockets, so no acceptor task (shutdown.c asks). */
BLITZ_PRIVATE int blitz__serve_is_acceptor(blitz_task *h) {
    (void)h;
    return 0;
}
#endif
