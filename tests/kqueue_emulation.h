/* A kqueue emulation over epoll, for the test build only: with
 * -DBLITZ__KQUEUE_EMULATION='"tests/kqueue_emulation.h"' the platform
 * layer includes it and the kqueue backend's own code (src/io/kqueue.c)
 * runs the backend conformance suite on Linux. Never part of blitz.h.
 *
 * It models what the backend uses, with macOS's constants and struct
 * layout: EVFILT_READ and EVFILT_WRITE (EV_CLEAR or level-triggered),
 * EVFILT_USER (EV_CLEAR, NOTE_TRIGGER), EV_ADD, EV_DELETE, EV_RECEIPT,
 * EV_ERROR entries carrying the errno, EV_EOF, a timespec timeout, and
 * calls from many threads at once (one thread waiting while others add
 * and delete).
 *
 * Design: the kqueue is an epoll instance. Each descriptor with knotes
 * has one epoll registration: edge-triggered (EPOLLET) when all its
 * knotes are EV_CLEAR, level-triggered otherwise; its data is the
 * descriptor number, looked up in the kqueue's table when the event is
 * turned into kevents, so a knote deleted meanwhile yields nothing.
 * EVFILT_USER is an eventfd in the set plus a `triggered` flag. The table
 * is under the kqueue's mutex, which is not held across epoll_wait.
 *
 * What it does not model (see the manual's backend table):
 *   - kqueue() never returns 0..2 (its state is keyed by the number);
 *   - closing a descriptor does not drop its knotes here (epoll forgets
 *     the file, the table keeps the entry until EV_DELETE or until the
 *     number is registered again); close(kq) cannot be seen, so a kqueue's
 *     state is reset when kqueue() returns its number again;
 *   - `data` is FIONREAD for reads and 0 for writes (no send space, no
 *     listen backlog); EV_EOF's fflags never carry the socket error
 *     (reading SO_ERROR here would clear it for the retried call);
 *   - EV_CLEAR fires on epoll's edges, whose counts can differ from the
 *     BSD kernels' (one epoll event carries both directions);
 *   - no EVFILT_PROC, EVFILT_SIGNAL, EVFILT_TIMER, EVFILT_VNODE,
 *     EV_ONESHOT, EV_DISPATCH, EV_ENABLE or EV_DISABLE, and none of the
 *     BSDs' differing constants (FreeBSD's EVFILT_USER is -11 and its
 *     struct kevent has ext[4]). */
#ifndef BLITZ_TESTS_KQUEUE_EMULATION_H
#define BLITZ_TESTS_KQUEUE_EMULATION_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define EVFILT_READ  (-1)
#define EVFILT_WRITE (-2)
#define EVFILT_USER  (-10)

#define EV_ADD     0x0001u
#define EV_DELETE  0x0002u
#define EV_CLEAR   0x0020u
#define EV_RECEIPT 0x0040u
#define EV_ERROR   0x4000u
#define EV_EOF     0x8000u

#define NOTE_TRIGGER 0x01000000u

struct kevent {
    uintptr_t ident;
    int16_t filter;
    uint16_t flags;
    uint32_t fflags;
    intptr_t data;
    void *udata;
};

#define EV_SET(kevp, a, b, c, d, e, f) \
    do {                               \
        struct kevent *kqe_ = (kevp);  \
        kqe_->ident = (a);             \
        kqe_->filter = (int16_t)(b);   \
        kqe_->flags = (uint16_t)(c);   \
        kqe_->fflags = (uint32_t)(d);  \
        kqe_->data = (intptr_t)(e);    \
        kqe_->udata = (f);             \
    } while (0)

/* epoll data of the user eventfd: never a descriptor number. */
#define KQE_USER_TAG UINT64_MAX

typedef struct {
    uint8_t has[2];   /* [0] read, [1] write */
    uint8_t clear[2]; /* EV_CLEAR */
    void *udata[2];
} kqe_fd;

typedef struct {
    pthread_mutex_t mu;
    int live;
    int efd;
    int user_added, user_clear, user_triggered;
    void *user_udata;
    kqe_fd *fds;
    int nfds;
    /* The second kevent of an epoll event when the list had room for one. */
    struct kevent carry;
    int has_carry;
} kqe_queue;

static struct {
    pthread_mutex_t mu;
    kqe_queue **q; /* by kqueue (epoll) descriptor number */
    int n;
} kqe_all = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

static kqe_queue *kqe_get(int kq) {
    kqe_queue *q = NULL;
    pthread_mutex_lock(&kqe_all.mu);
    if (kq >= 0 && kq < kqe_all.n && kqe_all.q[kq] && kqe_all.q[kq]->live)
        q = kqe_all.q[kq];
    pthread_mutex_unlock(&kqe_all.mu);
    return q;
}

static int kqe_fail(int e) {
    errno = e;
    return -1;
}

/* fd moved above 0..2 (a program may have closed its stdio). */
static int kqe_above_stdio(int fd) {
    if (fd < 0 || fd > 2)
        return fd;
    int above = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return above;
}

static __attribute__((unused)) int kqueue(void) {
    /* The state is keyed by the number, which a later dup would change:
     * start above stdio, where the backend keeps it. */
    int ep = kqe_above_stdio(epoll_create1(EPOLL_CLOEXEC));
    if (ep < 0)
        return -1;
    int efd = kqe_above_stdio(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLET;
    ev.data.u64 = KQE_USER_TAG;
    if (efd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) < 0) {
        int e = errno;
        if (efd >= 0)
            close(efd);
        close(ep);
        return kqe_fail(e);
    }
    pthread_mutex_lock(&kqe_all.mu);
    if (ep >= kqe_all.n) {
        int n = ep + 16;
        kqe_queue **g = (kqe_queue **)realloc(kqe_all.q, sizeof *g * (size_t)n);
        if (!g) {
            pthread_mutex_unlock(&kqe_all.mu);
            close(efd);
            close(ep);
            return kqe_fail(ENOMEM);
        }
        memset(g + kqe_all.n, 0, sizeof *g * (size_t)(n - kqe_all.n));
        kqe_all.q = g;
        kqe_all.n = n;
    }
    kqe_queue *q = kqe_all.q[ep];
    if (q) {
        /* A closed kqueue's number came back: its state is stale. Its
         * eventfd was only ever in that epoll set. */
        close(q->efd);
        free(q->fds);
        pthread_mutex_destroy(&q->mu);
    } else {
        q = (kqe_queue *)malloc(sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&kqe_all.mu);
            close(efd);
            close(ep);
            return kqe_fail(ENOMEM);
        }
        kqe_all.q[ep] = q;
    }
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
    q->efd = efd;
    q->live = 1;
    pthread_mutex_unlock(&kqe_all.mu);
    return ep;
}

/* The epoll registration of `fd` after a change of its knotes. */
static int kqe_sync(int kq, kqe_fd *f, int fd, int was_registered) {
    if (!f->has[0] && !f->has[1])
        return epoll_ctl(kq, EPOLL_CTL_DEL, fd, NULL) < 0 && errno != ENOENT ? errno : 0;
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = (f->has[0] ? EPOLLIN | EPOLLRDHUP : 0u) | (f->has[1] ? EPOLLOUT : 0u);
    if ((!f->has[0] || f->clear[0]) && (!f->has[1] || f->clear[1]))
        ev.events |= EPOLLET;
    ev.data.u64 = (uint64_t)fd;
    /* MOD re-arms the edge: the current state is reported once, as a
     * fresh knote reports a ready descriptor. */
    if (was_registered && epoll_ctl(kq, EPOLL_CTL_MOD, fd, &ev) == 0)
        return 0;
    if (epoll_ctl(kq, EPOLL_CTL_ADD, fd, &ev) == 0)
        return 0;
    if (errno == EEXIST && epoll_ctl(kq, EPOLL_CTL_MOD, fd, &ev) == 0)
        return 0;
    return errno;
}

/* One change, under q->mu: 0 or an errno. */
static int kqe_apply(int kq, kqe_queue *q, const struct kevent *c) {
    if (c->filter == EVFILT_USER) {
        if (c->flags & EV_ADD) {
            q->user_added = 1;
            q->user_clear = (c->flags & EV_CLEAR) != 0;
            q->user_udata = c->udata;
        } else if (c->flags & EV_DELETE) {
            if (!q->user_added)
                return ENOENT;
            q->user_added = q->user_triggered = 0;
            return 0;
        } else if (!q->user_added) {
            return ENOENT;
        }
        if (c->fflags & NOTE_TRIGGER) {
            q->user_triggered = 1;
            uint64_t one = 1;
            if (write(q->efd, &one, sizeof one) < 0 && errno != EAGAIN)
                return errno;
        }
        return 0;
    }
    if (c->filter != EVFILT_READ && c->filter != EVFILT_WRITE)
        return EINVAL;
    int fd = (int)c->ident, dir = c->filter == EVFILT_WRITE;
    if (fd < 0)
        return EBADF;
    if (fd >= q->nfds) {
        if (!(c->flags & EV_ADD))
            return ENOENT;
        int n = fd + 64;
        kqe_fd *g = (kqe_fd *)realloc(q->fds, sizeof *g * (size_t)n);
        if (!g)
            return ENOMEM;
        memset(g + q->nfds, 0, sizeof *g * (size_t)(n - q->nfds));
        q->fds = g;
        q->nfds = n;
    }
    kqe_fd *f = &q->fds[fd];
    kqe_fd old = *f;
    int was = f->has[0] || f->has[1];
    if (c->flags & EV_DELETE) {
        if (!f->has[dir])
            return ENOENT;
        f->has[dir] = 0;
        f->udata[dir] = NULL;
    } else if (c->flags & EV_ADD) {
        f->has[dir] = 1;
        f->clear[dir] = (c->flags & EV_CLEAR) != 0;
        f->udata[dir] = c->udata;
    } else {
        return f->has[dir] ? 0 : ENOENT;
    }
    int e = kqe_sync(kq, f, fd, was);
    if (e) {
        *f = old;
        if (e == ENOENT && (c->flags & EV_DELETE))
            e = 0; /* the file was closed: epoll forgot it already */
    }
    return e;
}

/* The kevents of one epoll event into ev[0..room): how many. */
static int kqe_translate(kqe_queue *q, const struct epoll_event *ee, struct kevent *ev, int room) {
    if (ee->data.u64 == KQE_USER_TAG) {
        uint64_t v;
        while (read(q->efd, &v, sizeof v) < 0 && errno == EINTR) {
        }
        if (!q->user_added || !q->user_triggered)
            return 0;
        if (q->user_clear)
            q->user_triggered = 0;
        EV_SET(&ev[0], 1u, EVFILT_USER, 0, 0, 0, q->user_udata);
        return 1;
    }
    int fd = (int)ee->data.u64;
    if (fd >= q->nfds)
        return 0;
    kqe_fd *f = &q->fds[fd];
    uint32_t e = ee->events;
    int n = 0;
    if (f->has[0] && (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
        int avail = 0;
        if (ioctl(fd, FIONREAD, &avail) < 0)
            avail = 0;
        uint16_t fl = (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) ? (uint16_t)EV_EOF : 0;
        EV_SET(&ev[n], (uintptr_t)fd, EVFILT_READ, fl, 0, avail, f->udata[0]);
        n++;
    }
    if (f->has[1] && (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))) {
        uint16_t fl = (e & (EPOLLHUP | EPOLLERR)) ? (uint16_t)EV_EOF : 0;
        struct kevent w;
        EV_SET(&w, (uintptr_t)fd, EVFILT_WRITE, fl, 0, 0, f->udata[1]);
        if (n < room) {
            ev[n++] = w;
        } else {
            q->carry = w;
            q->has_carry = 1;
        }
    }
    return n;
}

static __attribute__((unused)) int kevent(int kq, const struct kevent *changes, int nchanges,
                                          struct kevent *events, int nevents,
                                          const struct timespec *timeout) {
    kqe_queue *q = kqe_get(kq);
    if (!q)
        return kqe_fail(EBADF);
    int n = 0;
    pthread_mutex_lock(&q->mu);
    for (int i = 0; i < nchanges; i++) {
        int e = kqe_apply(kq, q, &changes[i]);
        if (!e && !(changes[i].flags & EV_RECEIPT))
            continue;
        if (n < nevents) {
            events[n] = changes[i];
            events[n].flags = (uint16_t)EV_ERROR;
            events[n].data = e;
            n++;
        } else if (e) {
            pthread_mutex_unlock(&q->mu);
            return kqe_fail(e);
        }
    }
    if (n > 0 || nevents <= 0) {
        pthread_mutex_unlock(&q->mu);
        return n;
    }
    if (q->has_carry) {
        q->has_carry = 0;
        int fd = (int)q->carry.ident;
        if (fd < q->nfds && q->fds[fd].has[1] && q->fds[fd].udata[1] == q->carry.udata) {
            events[0] = q->carry;
            pthread_mutex_unlock(&q->mu);
            return 1;
        }
    }
    pthread_mutex_unlock(&q->mu);

    struct timespec end;
    if (timeout) {
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += timeout->tv_sec;
        end.tv_nsec += timeout->tv_nsec;
        if (end.tv_nsec >= 1000000000L) {
            end.tv_sec++;
            end.tv_nsec -= 1000000000L;
        }
    }
    /* Each epoll event may become two kevents. */
    struct epoll_event ee[64];
    int max = nevents / 2 > 64 ? 64 : nevents / 2 > 0 ? nevents / 2 : 1;
    for (;;) {
        int ms = -1;
        if (timeout) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            int64_t left = (int64_t)(end.tv_sec - now.tv_sec) * 1000000000 +
                           (int64_t)(end.tv_nsec - now.tv_nsec);
            if (left < 0)
                left = 0;
            int64_t m = (left + 999999) / 1000000;
            ms = m > 1000000000 ? 1000000000 : (int)m;
        }
        int m = epoll_wait(kq, ee, max, ms);
        if (m < 0)
            return -1; /* EINTR included, as kevent */
        pthread_mutex_lock(&q->mu);
        for (int i = 0; i < m; i++)
            n += kqe_translate(q, &ee[i], events + n, nevents - n);
        pthread_mutex_unlock(&q->mu);
        if (n > 0 || ms == 0)
            return n;
    }
}

#endif
