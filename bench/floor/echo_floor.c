/* The least work an echo server can do per request: one thread, one epoll
 * set, a receive and a send per ready connection, nothing else (no
 * runtime, no task, no buffering beyond one receive). bench/ceiling.sh
 * runs it beside Tokio's and blitz's servers to show what a load client
 * allows on this machine: no server can answer faster than this one.
 *
 *   echo_floor [seconds]     prints "PORT <n>", serves 127.0.0.1 for
 *                            `seconds` (default 300) or until stdin closes
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int send_all(int fd, const char *buf, ssize_t len) {
    for (ssize_t off = 0; off < len;) {
        ssize_t w = send(fd, buf + off, (size_t)(len - off), MSG_NOSIGNAL);
        if (w >= 0) {
            off += w;
            continue;
        }
        if (errno != EAGAIN)
            return -1;
        /* The peer's window is full (bulk): wait for room on this one. */
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, 1000);
    }
    return 0;
}

int main(int argc, char **argv) {
    int secs = argc > 1 ? atoi(argv[1]) : 300;
    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 1024) ||
        getsockname(lfd, (struct sockaddr *)&a, &alen)) {
        perror("echo_floor");
        return 1;
    }
    printf("PORT %d\n", ntohs(a.sin_port));
    fflush(stdout);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    ev.data.fd = 0; /* stdin: its end stops the server */
    epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);
    static char buf[65536];
    struct epoll_event ready[256];
    time_t end = time(NULL) + secs;
    while (time(NULL) < end) {
        int n = epoll_wait(ep, ready, 256, 1000);
        for (int i = 0; i < n; i++) {
            int fd = ready[i].data.fd;
            if (fd == 0)
                return 0;
            if (fd == lfd) {
                int c;
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
                }
                continue;
            }
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r < 0 && errno == EAGAIN)
                continue;
            if (r <= 0 || send_all(fd, buf, r) < 0)
                close(fd);
        }
    }
    return 0;
}
