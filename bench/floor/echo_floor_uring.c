/* The least work an io_uring echo server can do per request: one thread,
 * one ring, and only the ring's own operations (a multishot accept, then
 * per connection a RECV into its own buffer and a SEND of what came), no
 * runtime, no task, no other system call than io_uring_enter.
 * bench/ceiling.sh runs it beside echo_floor.c (the same for epoll) and
 * Tokio's and blitz's servers: what a completion-based server can reach
 * with this client on this machine.
 *
 *   echo_floor_uring [seconds]  prints "PORT <n>", serves 127.0.0.1 for
 *                               `seconds` (default 300) or until stdin
 *                               closes
 *
 * Raw system calls and <linux/io_uring.h> (Linux 5.19+ for the multishot
 * accept): no liburing needed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ENTRIES  1024
#define BUF_SIZE 65536
#define MAX_FD   65536

/* user_data: the kind in the top byte, the descriptor below. */
enum { UD_ACCEPT = 1, UD_RECV, UD_SEND, UD_STDIN, UD_TIMEOUT };
#define UD(kind, fd) (((uint64_t)(kind) << 56) | (uint32_t)(fd))

static struct {
    int fd;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    unsigned pending;
} ring;

typedef struct {
    char *buf;
    unsigned len, sent; /* bytes received, bytes of them sent */
} conn;
static conn *conns;

static int enter(unsigned submit, unsigned wait) {
    return (int)syscall(SYS_io_uring_enter, ring.fd, submit, wait,
                        wait ? IORING_ENTER_GETEVENTS : 0, NULL, 0);
}

static struct io_uring_sqe *sqe_get(void) {
    unsigned tail = *ring.sq_tail;
    if (tail - atomic_load_explicit((_Atomic unsigned *)ring.sq_head, memory_order_acquire) ==
        ENTRIES) {
        enter(ring.pending, 0);
        ring.pending = 0;
    }
    unsigned i = tail & *ring.sq_mask;
    struct io_uring_sqe *s = &ring.sqes[i];
    memset(s, 0, sizeof *s);
    ring.sq_array[i] = i;
    /* Release: the kernel reads the tail, then the entry. */
    atomic_store_explicit((_Atomic unsigned *)ring.sq_tail, tail + 1, memory_order_release);
    ring.pending++;
    return s;
}

static void queue_recv(int fd) {
    struct io_uring_sqe *s = sqe_get();
    s->opcode = IORING_OP_RECV;
    s->fd = fd;
    s->addr = (uint64_t)(uintptr_t)conns[fd].buf;
    s->len = BUF_SIZE;
    s->user_data = UD(UD_RECV, fd);
}

static void queue_send(int fd) {
    conn *c = &conns[fd];
    struct io_uring_sqe *s = sqe_get();
    s->opcode = IORING_OP_SEND;
    s->fd = fd;
    s->addr = (uint64_t)(uintptr_t)(c->buf + c->sent);
    s->len = c->len - c->sent;
    s->msg_flags = MSG_NOSIGNAL;
    s->user_data = UD(UD_SEND, fd);
}

static void queue_close(int fd) {
    free(conns[fd].buf);
    conns[fd].buf = NULL;
    struct io_uring_sqe *s = sqe_get();
    s->opcode = IORING_OP_CLOSE;
    s->fd = fd;
    s->user_data = 0;
}

static void setup(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN;
    ring.fd = (int)syscall(SYS_io_uring_setup, ENTRIES, &p);
    if (ring.fd < 0) {
        p.flags = 0;
        ring.fd = (int)syscall(SYS_io_uring_setup, ENTRIES, &p);
    }
    if (ring.fd < 0) {
        perror("io_uring_setup");
        exit(1);
    }
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (cq_len > sq_len)
        sq_len = cq_len; /* one mapping for both (IORING_FEAT_SINGLE_MMAP, 5.4+) */
    char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd,
                    IORING_OFF_SQ_RING);
    ring.sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_POPULATE, ring.fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || ring.sqes == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    ring.sq_head = (unsigned *)(sq + p.sq_off.head);
    ring.sq_tail = (unsigned *)(sq + p.sq_off.tail);
    ring.sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    ring.sq_array = (unsigned *)(sq + p.sq_off.array);
    ring.cq_head = (unsigned *)(sq + p.cq_off.head);
    ring.cq_tail = (unsigned *)(sq + p.cq_off.tail);
    ring.cq_mask = (unsigned *)(sq + p.cq_off.ring_mask);
    ring.cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
}

int main(int argc, char **argv) {
    int secs = argc > 1 ? atoi(argv[1]) : 300;
    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 1024) ||
        getsockname(lfd, (struct sockaddr *)&a, &alen)) {
        perror("echo_floor_uring");
        return 1;
    }
    printf("PORT %d\n", ntohs(a.sin_port));
    fflush(stdout);
    conns = calloc(MAX_FD, sizeof *conns);
    setup();

    struct io_uring_sqe *s = sqe_get();
    s->opcode = IORING_OP_ACCEPT;
    s->fd = lfd;
    s->ioprio = IORING_ACCEPT_MULTISHOT;
    s->user_data = UD(UD_ACCEPT, lfd);
    s = sqe_get(); /* stdin: its end stops the server */
    s->opcode = IORING_OP_POLL_ADD;
    s->fd = 0;
    s->poll32_events = POLLIN;
    s->user_data = UD(UD_STDIN, 0);
    struct __kernel_timespec limit = {.tv_sec = secs};
    s = sqe_get();
    s->opcode = IORING_OP_TIMEOUT;
    s->fd = -1;
    s->addr = (uint64_t)(uintptr_t)&limit;
    s->len = 1;
    s->user_data = UD(UD_TIMEOUT, 0);

    for (;;) {
        if (enter(ring.pending, 1) < 0)
            continue; /* EINTR */
        ring.pending = 0;
        unsigned head = *ring.cq_head;
        /* Acquire: the kernel writes the entries, then the tail. */
        unsigned tail =
            atomic_load_explicit((_Atomic unsigned *)ring.cq_tail, memory_order_acquire);
        for (; head != tail; head++) {
            struct io_uring_cqe *c = &ring.cqes[head & *ring.cq_mask];
            int kind = (int)(c->user_data >> 56), fd = (int)(uint32_t)c->user_data, res = c->res;
            switch (kind) {
            case UD_STDIN:
            case UD_TIMEOUT:
                return 0;
            case UD_ACCEPT:
                if (res >= 0 && res < MAX_FD) {
                    setsockopt(res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    conns[res].buf = malloc(BUF_SIZE);
                    queue_recv(res);
                } else if (res >= 0) {
                    close(res);
                }
                if (!(c->flags & IORING_CQE_F_MORE)) { /* ended: arm it again */
                    s = sqe_get();
                    s->opcode = IORING_OP_ACCEPT;
                    s->fd = lfd;
                    s->ioprio = IORING_ACCEPT_MULTISHOT;
                    s->user_data = UD(UD_ACCEPT, lfd);
                }
                break;
            case UD_RECV:
                if (res <= 0) {
                    queue_close(fd);
                } else {
                    conns[fd].len = (unsigned)res;
                    conns[fd].sent = 0;
                    queue_send(fd);
                }
                break;
            case UD_SEND:
                if (res < 0) {
                    queue_close(fd);
                    break;
                }
                conns[fd].sent += (unsigned)res;
                if (conns[fd].sent < conns[fd].len)
                    queue_send(fd); /* the peer's window was full: the rest */
                else
                    queue_recv(fd);
                break;
            default:
                break;
            }
        }
        atomic_store_explicit((_Atomic unsigned *)ring.cq_head, head, memory_order_release);
    }
}
