/* A handle used after its release. Built with -DKIND=1..6 (task, chan,
 * broadcast, watch, group, socket); a debug build must stop at the use
 * with a message naming the function and the handle kind. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <stdio.h>

static __attribute__((unused)) blitz_poll done_poll(blitz_cx *cx, void *p) {
    (void)cx;
    (void)p;
    return BLITZ_READY;
}

int main(void) {
    blitz_runtime *rt;
    if (blitz_runtime_new(NULL, &rt) != BLITZ_OK)
        return 2;
#if KIND == 1
    blitz_task *h, *copy, *other;
    blitz_spawn(rt, done_poll, NULL, 8, &h);
    blitz_join_blocking(h);
    copy = h;
    blitz_task_release(&h);
    /* The block is free again: the next spawn may well reuse it. */
    blitz_spawn(rt, done_poll, NULL, 8, &other);
    blitz_join_blocking(other);
    printf("status: %d\n", blitz_task_status(copy));
#elif KIND == 2
    blitz_chan *ch;
    blitz_chan_new(&ch, sizeof(int), 4);
    blitz_chan_sender_release(ch);
    blitz_chan_receiver_release(ch);
    printf("close: %d\n", blitz_chan_close(ch));
#elif KIND == 3
    blitz_broadcast *bc;
    blitz_broadcast_new(&bc, sizeof(int), 4);
    blitz_broadcast_sender_release(bc);
    int v = 1;
    printf("send: %d\n", blitz_broadcast_send(bc, &v));
#elif KIND == 4
    blitz_watch *w;
    int v = 1;
    blitz_watch_new(&w, sizeof v, &v);
    blitz_watch_sender_release(w);
    printf("send: %d\n", blitz_watch_send(w, &v));
#elif KIND == 5
    blitz_group *g;
    blitz_group_new(rt, &g);
    blitz_group_spawn(g, done_poll, NULL, 8);
    blitz_group_free(g);
    printf("len: %zu\n", blitz_group_len(g));
#elif KIND == 6
    blitz_socket *a, *b;
    if (blitz_unix_pair(rt, 1, &a, &b) != BLITZ_OK)
        return 2;
    blitz_sock_close(a);
    blitz_sock_close(b);
    /* Freeing the runtime frees what the closes left to its driver. */
    blitz_runtime_free(rt);
    rt = NULL;
    printf("shutdown: %d\n", blitz_sock_shutdown(a, 2));
#endif
    if (rt)
        blitz_runtime_free(rt);
    return 0;
}
