/* Byte streams: the stream vtables over sockets, descriptors and files;
 * the buffered reader and writer; copy with splice / sendfile.
 *
 * Windows has the socket, pipe, file and custom streams (sockets and
 * pipe ends over the completion port, files on the pool as fs_win32.c
 * does them) and copies through a buffer; the kernel copies are POSIX
 * (BLITZ__HAS_IO). */
#include "../io/io.h"

#if BLITZ__HAS_SOCKETS

#define BLITZ__READER_DEFAULT ((size_t)8192)
#define BLITZ__COPY_BUF       ((size_t)64 * 1024)
#define BLITZ__COPY_CHUNK     ((size_t)1 << 20)
/* Transfers one poll of a copy makes before it lets other tasks run. */
#define BLITZ__COPY_BUDGET 16

/* ---- stream implementations ------------------------------------------------------- */

static blitz_poll blitz__sock_st_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len,
                                      int64_t *res) {
    if (blitz_sock_recv(cx, &st->blitz__rio, st->sock, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__rio.result;
    return BLITZ_READY;
}
static blitz_poll blitz__sock_st_write(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                                       int64_t *res) {
    if (blitz_sock_send(cx, &st->blitz__wio, st->sock, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__wio.result;
    return BLITZ_READY;
}
static void blitz__io_st_cancel(blitz_cx *cx, blitz_stream *st, int dir) {
    (void)cx;
    blitz_io_cancel(NULL, dir ? &st->blitz__wio : &st->blitz__rio);
}
static int blitz__sock_st_shutdown(blitz_stream *st) {
    return blitz_sock_shutdown(st->sock, 1);
}
static const blitz_stream_vtable blitz__sock_vt = {blitz__sock_st_read, blitz__sock_st_write,
                                                   blitz__io_st_cancel, blitz__sock_st_shutdown};

static blitz_poll blitz__fd_st_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len,
                                    int64_t *res) {
    if (blitz_fd_read(cx, &st->blitz__rio, st->sock, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__rio.result;
    return BLITZ_READY;
}
static blitz_poll blitz__fd_st_write(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                                     int64_t *res) {
    if (blitz_fd_write(cx, &st->blitz__wio, st->sock, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__wio.result;
    return BLITZ_READY;
}
/* A pipe's write side ends only when its descriptor closes. */
static int blitz__fd_st_shutdown(blitz_stream *st) {
    if (st->sock->family != AF_UNSPEC)
        return blitz_sock_shutdown(st->sock, 1);
    if (!(st->blitz__flags & BLITZ_STREAM_OWN))
        return BLITZ_OK;
    blitz_socket *s = st->sock;
    st->sock = NULL;
    st->fd = -1;
    return blitz_sock_close(s);
}
static const blitz_stream_vtable blitz__fd_vt = {blitz__fd_st_read, blitz__fd_st_write,
                                                 blitz__io_st_cancel, blitz__fd_st_shutdown};

static blitz_poll blitz__file_st_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len,
                                      int64_t *res) {
    if (blitz_fs_read(cx, &st->blitz__rfs, st->fd, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__rfs.result;
    return BLITZ_READY;
}
static blitz_poll blitz__file_st_write(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                                       int64_t *res) {
    if (blitz_fs_write(cx, &st->blitz__wfs, st->fd, buf, len) == BLITZ_PENDING)
        return BLITZ_PENDING;
    *res = st->blitz__wfs.result;
    return BLITZ_READY;
}
static void blitz__file_st_cancel(blitz_cx *cx, blitz_stream *st, int dir) {
    blitz_fs_cancel(cx, dir ? &st->blitz__wfs : &st->blitz__rfs);
}
static int blitz__file_st_shutdown(blitz_stream *st) {
    (void)st;
    return BLITZ_OK;
}
static const blitz_stream_vtable blitz__file_vt = {blitz__file_st_read, blitz__file_st_write,
                                                   blitz__file_st_cancel, blitz__file_st_shutdown};

static void blitz__stream_close_fd(int fd) {
#if BLITZ__WIN32
    (void)_close(fd); /* a C runtime descriptor (fs_win32.c) */
#else
    (void)close(fd);
#endif
}

static void blitz__stream_base(blitz_stream *st, int kind, unsigned flags) {
    memset(st, 0, sizeof *st);
    st->kind = kind;
    st->fd = -1;
    st->blitz__flags = flags;
}

BLITZ_API int blitz_stream_socket(blitz_stream *st, blitz_socket *s, unsigned flags) {
    if (!st || !s || (flags & ~BLITZ_STREAM_OWN))
        return BLITZ_EINVAL;
    blitz__stream_base(st, BLITZ_STREAM_SOCKET, flags);
    st->vtable = &blitz__sock_vt;
    st->sock = s;
#if BLITZ__HAS_IO
    st->fd = s->fd;
#endif /* a SOCKET is no int: fd stays -1 */
    return BLITZ_OK;
}

BLITZ_API int blitz_stream_pipe(blitz_stream *st, blitz_socket *s, unsigned flags) {
    if (!st || !s || (flags & ~BLITZ_STREAM_OWN))
        return BLITZ_EINVAL;
    blitz__stream_base(st, BLITZ_STREAM_PIPE, flags);
    st->vtable = &blitz__fd_vt;
    st->sock = s;
#if BLITZ__HAS_IO
    st->fd = s->fd;
#endif
    return BLITZ_OK;
}

BLITZ_API int blitz_stream_file(blitz_stream *st, int fd, unsigned flags) {
    if (!st || fd < 0 || (flags & ~BLITZ_STREAM_OWN))
        return BLITZ_EINVAL;
    blitz__stream_base(st, BLITZ_STREAM_FILE, flags);
    st->vtable = &blitz__file_vt;
    st->fd = fd;
    return BLITZ_OK;
}

BLITZ_API int blitz_stream_custom(blitz_stream *st, const blitz_stream_vtable *vt, void *user) {
    if (!st || !vt || !vt->read || !vt->write || !vt->cancel)
        return BLITZ_EINVAL;
    blitz__stream_base(st, BLITZ_STREAM_CUSTOM, 0);
    st->vtable = vt;
    st->user = user;
    return BLITZ_OK;
}

BLITZ_API int blitz_stream_shutdown_write(blitz_stream *st) {
    if (!st || !st->vtable)
        return BLITZ_EINVAL;
    if (st->blitz__wr_shut)
        return BLITZ_OK;
    st->blitz__wr_shut = 1;
    return st->vtable->shutdown_write ? st->vtable->shutdown_write(st) : BLITZ_OK;
}

BLITZ_API int blitz_stream_close(blitz_stream *st) {
    if (!st || !st->vtable)
        return BLITZ_EINVAL;
    st->vtable->cancel(NULL, st, 0);
    st->vtable->cancel(NULL, st, 1);
    if (st->blitz__flags & BLITZ_STREAM_OWN) {
        st->blitz__flags &= ~BLITZ_STREAM_OWN;
        if (st->sock)
            blitz_sock_close(st->sock);
        else if (st->kind == BLITZ_STREAM_FILE && st->fd >= 0)
            blitz__stream_close_fd(st->fd);
        st->sock = NULL;
        st->fd = -1;
    }
    return BLITZ_OK;
}

BLITZ_API blitz_poll blitz_stream_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len) {
    if (!st)
        return BLITZ_READY;
    if (!st->vtable || (!buf && len)) {
        st->read_result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if ((st->kind == BLITZ_STREAM_SOCKET || st->kind == BLITZ_STREAM_PIPE) && !st->sock) {
        st->read_result = BLITZ_ECLOSED;
        return BLITZ_READY;
    }
    return blitz__record(cx, st->vtable->read(cx, st, buf, len, &st->read_result),
                         blitz_stream_read_cancel, st);
}

BLITZ_API blitz_poll blitz_stream_write(blitz_cx *cx, blitz_stream *st, const void *buf,
                                        size_t len) {
    if (!st)
        return BLITZ_READY;
    if (!st->vtable || (!buf && len)) {
        st->write_result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if (st->blitz__wr_shut ||
        ((st->kind == BLITZ_STREAM_SOCKET || st->kind == BLITZ_STREAM_PIPE) && !st->sock)) {
        st->write_result = BLITZ_ECLOSED;
        return BLITZ_READY;
    }
    return blitz__record(cx, st->vtable->write(cx, st, buf, len, &st->write_result),
                         blitz_stream_write_cancel, st);
}

BLITZ_API void blitz_stream_read_cancel(blitz_cx *cx, void *p) {
    blitz_stream *st = (blitz_stream *)p;
    if (st && st->vtable)
        st->vtable->cancel(cx, st, 0);
}
BLITZ_API void blitz_stream_write_cancel(blitz_cx *cx, void *p) {
    blitz_stream *st = (blitz_stream *)p;
    if (st && st->vtable)
        st->vtable->cancel(cx, st, 1);
}

BLITZ_API blitz_poll blitz_stream_settle(blitz_cx *cx, blitz_stream *st) {
    if (!st)
        return BLITZ_READY;
    if (blitz_io_settle(cx, &st->blitz__rio) == BLITZ_PENDING)
        return BLITZ_PENDING;
    return blitz_io_settle(cx, &st->blitz__wio);
}

BLITZ__OP_ADAPTER(blitz__op_stream_read_poll, blitz_stream, st,
                  blitz_stream_read(cx, st, st->blitz__rbuf, st->blitz__rlen))
BLITZ__OP_ADAPTER(blitz__op_stream_write_poll, blitz_stream, st,
                  blitz_stream_write(cx, st, st->blitz__wbuf, st->blitz__wlen))
BLITZ_API blitz_op blitz_op_stream_read(blitz_stream *st, void *buf, size_t len) {
    if (st) {
        st->blitz__rbuf = buf;
        st->blitz__rlen = len;
    }
    return blitz_op_make(blitz__op_stream_read_poll, blitz_stream_read_cancel, st);
}
BLITZ_API blitz_op blitz_op_stream_write(blitz_stream *st, const void *buf, size_t len) {
    if (st) {
        st->blitz__wbuf = buf;
        st->blitz__wlen = len;
    }
    return blitz_op_make(blitz__op_stream_write_poll, blitz_stream_write_cancel, st);
}

/* ---- the buffered reader ------------------------------------------------------------------ */

#define BLITZ__RD_READ  1
#define BLITZ__RD_EXACT 2
#define BLITZ__RD_UNTIL 3

/* The buffer of a zeroed reader or writer over `st`: the caller's, or one
 * of `cap` bytes (default BLITZ__READER_DEFAULT) that it owns. */
static int blitz__stream_buffer(const blitz_stream *st, void *buf, size_t cap, unsigned char **out,
                                size_t *out_cap, int *owns) {
    if (!st || (buf && !cap))
        return BLITZ_EINVAL;
    if (!buf) {
        if (!cap)
            cap = BLITZ__READER_DEFAULT;
        buf = blitz__malloc(cap);
        if (!buf)
            return BLITZ_ENOMEM;
        *owns = 1;
    }
    *out = (unsigned char *)buf;
    *out_cap = cap;
    return BLITZ_OK;
}

/* Frees the buffer if the reader or writer owns it. */
static void blitz__stream_buffer_free(unsigned char **buf, int *owns) {
    if (*owns)
        blitz__free(*buf);
    *owns = 0;
    *buf = NULL;
}

BLITZ_API int blitz_reader_init(blitz_reader *r, blitz_stream *st, void *buf, size_t cap) {
    if (!r)
        return BLITZ_EINVAL;
    memset(r, 0, sizeof *r);
    int rc = blitz__stream_buffer(st, buf, cap, &r->blitz__buf, &r->blitz__cap, &r->blitz__owns);
    if (rc == BLITZ_OK)
        r->stream = st;
    return rc;
}

BLITZ_API void blitz_reader_deinit(blitz_reader *r) {
    if (!r)
        return;
    blitz__stream_buffer_free(&r->blitz__buf, &r->blitz__owns);
    r->blitz__cap = r->blitz__start = r->blitz__end = r->blitz__scanned = 0;
}

BLITZ_API size_t blitz_reader_buffered(const blitz_reader *r) {
    return r ? r->blitz__end - r->blitz__start : 0;
}

BLITZ_API const void *blitz_reader_peek(const blitz_reader *r, size_t *len) {
    size_t n = blitz_reader_buffered(r);
    if (len)
        *len = n;
    return n ? r->blitz__buf + r->blitz__start : NULL;
}

/* One read of the stream into the free end of the buffer (compacted first
 * when full). READY with the buffer grown, eof or err set. The buffer's
 * layout does not change while the read is pending: the stream may own
 * that memory until it completes. */
static blitz_poll blitz__reader_fill(blitz_cx *cx, blitz_reader *r) {
    if (!r->blitz__reading) {
        if (r->blitz__start == r->blitz__end) {
            r->blitz__start = r->blitz__end = r->blitz__scanned = 0;
        } else if (r->blitz__end == r->blitz__cap && r->blitz__start > 0) {
            size_t n = r->blitz__end - r->blitz__start;
            memmove(r->blitz__buf, r->blitz__buf + r->blitz__start, n);
            r->blitz__scanned -= r->blitz__start;
            r->blitz__start = 0;
            r->blitz__end = n;
        }
        if (r->blitz__end == r->blitz__cap)
            return BLITZ_READY;
        r->blitz__reading = 1;
    }
    blitz_stream *st = r->stream;
    if (blitz_stream_read(cx, st, r->blitz__buf + r->blitz__end, r->blitz__cap - r->blitz__end) ==
        BLITZ_PENDING)
        return BLITZ_PENDING;
    r->blitz__reading = 0;
    int64_t res = st->read_result;
    if (res > 0)
        r->blitz__end += (size_t)res;
    else if (res == 0)
        r->blitz__eof = 1;
    else
        r->blitz__err = res;
    return BLITZ_READY;
}

static blitz_poll blitz__reader_done(blitz_reader *r, int64_t result) {
    r->result = result;
    r->blitz__op = 0;
    return BLITZ_READY;
}

static size_t blitz__reader_take(blitz_reader *r, void *dst, size_t n) {
    size_t avail = r->blitz__end - r->blitz__start;
    if (n > avail)
        n = avail;
    if (n)
        memcpy(dst, r->blitz__buf + r->blitz__start, n);
    r->blitz__start += n;
    if (r->blitz__scanned < r->blitz__start)
        r->blitz__scanned = r->blitz__start;
    return n;
}

static int blitz__reader_bad(blitz_reader *r) {
    return !r->stream || !r->blitz__buf;
}

BLITZ_API blitz_poll blitz_reader_read(blitz_cx *cx, blitz_reader *r, void *dst, size_t len) {
    if (!r)
        return BLITZ_READY;
    if (blitz__reader_bad(r) || (!dst && len))
        return blitz__reader_done(r, BLITZ_EINVAL);
    r->blitz__op = BLITZ__RD_READ;
    for (;;) {
        if (r->blitz__end > r->blitz__start || !len) {
            r->len = blitz__reader_take(r, dst, len);
            return blitz__reader_done(r, (int64_t)r->len);
        }
        r->len = 0;
        if (r->blitz__err)
            return blitz__reader_done(r, r->blitz__err);
        if (r->blitz__eof)
            return blitz__reader_done(r, 0);
        if (blitz__reader_fill(cx, r) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_reader_cancel, r);
    }
}

BLITZ_API blitz_poll blitz_reader_read_exact(blitz_cx *cx, blitz_reader *r, void *dst, size_t len) {
    if (!r)
        return BLITZ_READY;
    if (blitz__reader_bad(r) || (!dst && len))
        return blitz__reader_done(r, BLITZ_EINVAL);
    if (r->blitz__op != BLITZ__RD_EXACT) {
        r->blitz__op = BLITZ__RD_EXACT;
        r->blitz__got = 0;
    }
    for (;;) {
        r->blitz__got +=
            blitz__reader_take(r, (unsigned char *)dst + r->blitz__got, len - r->blitz__got);
        r->len = r->blitz__got;
        if (r->blitz__got == len)
            return blitz__reader_done(r, (int64_t)len);
        if (r->blitz__err)
            return blitz__reader_done(r, r->blitz__err);
        if (r->blitz__eof)
            return blitz__reader_done(r, BLITZ_EEOF);
        if (blitz__reader_fill(cx, r) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_reader_cancel, r);
    }
}

/* The record scan shared by read_until and read_line. */
static blitz_poll blitz__reader_until(blitz_cx *cx, blitz_reader *r, int delim, unsigned char *dst,
                                      size_t max) {
    if (r->blitz__op != BLITZ__RD_UNTIL) {
        r->blitz__op = BLITZ__RD_UNTIL;
        r->blitz__got = 0;
        r->blitz__scanned = r->blitz__start;
    }
    for (;;) {
        unsigned char *base = r->blitz__buf;
        size_t from = r->blitz__scanned, end = r->blitz__end;
        unsigned char *hit =
            end > from ? (unsigned char *)memchr(base + from, delim, end - from) : NULL;
        if (hit) {
            size_t n = (size_t)(hit - (base + r->blitz__start)) + 1;
            if (r->blitz__got + n > max) {
                r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, max - r->blitz__got);
                r->len = r->blitz__got;
                return blitz__reader_done(r, BLITZ_EMSGSIZE);
            }
            r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, n);
            r->len = r->blitz__got;
            return blitz__reader_done(r, (int64_t)r->blitz__got);
        }
        r->blitz__scanned = end;
        size_t avail = end - r->blitz__start;
        if (r->blitz__got + avail > max) {
            /* more than max bytes and no delimiter among them */
            r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, max - r->blitz__got);
            r->len = r->blitz__got;
            return blitz__reader_done(r, BLITZ_EMSGSIZE);
        }
        if (r->blitz__err) {
            r->len = r->blitz__got;
            return blitz__reader_done(r, r->blitz__err);
        }
        if (r->blitz__eof) {
            r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, avail);
            r->len = r->blitz__got;
            return blitz__reader_done(r, (int64_t)r->blitz__got);
        }
        if (!r->blitz__reading && r->blitz__end == r->blitz__cap && r->blitz__start == 0) {
            /* A record longer than the buffer moves into dst as it comes. */
            r->blitz__got += blitz__reader_take(r, dst + r->blitz__got, avail);
            r->len = r->blitz__got;
        }
        if (blitz__reader_fill(cx, r) == BLITZ_PENDING)
            return BLITZ_PENDING;
    }
}

BLITZ_API blitz_poll blitz_reader_read_until(blitz_cx *cx, blitz_reader *r, int delim, void *dst,
                                             size_t max) {
    if (!r)
        return BLITZ_READY;
    if (blitz__reader_bad(r) || !dst || !max || delim < 0 || delim > 255)
        return blitz__reader_done(r, BLITZ_EINVAL);
    return blitz__record(cx, blitz__reader_until(cx, r, delim, (unsigned char *)dst, max),
                         blitz_reader_cancel, r);
}

BLITZ_API blitz_poll blitz_reader_read_line(blitz_cx *cx, blitz_reader *r, char *dst, size_t max) {
    if (!r)
        return BLITZ_READY;
    if (blitz__reader_bad(r) || !dst || max < 2)
        return blitz__reader_done(r, BLITZ_EINVAL);
    if (blitz__reader_until(cx, r, '\n', (unsigned char *)dst, max - 1) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_reader_cancel, r);
    size_t n = r->len;
    if (r->result > 0 && n > 0 && dst[n - 1] == '\n') {
        n--;
        if (n > 0 && dst[n - 1] == '\r')
            n--;
    }
    dst[n] = '\0';
    r->len = n;
    return BLITZ_READY;
}

BLITZ_API void blitz_reader_cancel(blitz_cx *cx, void *p) {
    blitz_reader *r = (blitz_reader *)p;
    if (!r)
        return;
    if (r->blitz__reading && r->stream)
        blitz_stream_read_cancel(cx, r->stream);
    r->blitz__reading = 0;
    if (r->blitz__op)
        r->result = BLITZ_ECANCELED;
    r->blitz__op = 0;
}

BLITZ__OP_ADAPTER(blitz__op_read_line_poll, blitz_reader, r,
                  blitz_reader_read_line(cx, r, (char *)r->blitz__dst, r->blitz__max))
BLITZ__OP_ADAPTER(blitz__op_read_exact_poll, blitz_reader, r,
                  blitz_reader_read_exact(cx, r, r->blitz__dst, r->blitz__max))
BLITZ_API blitz_op blitz_op_reader_read_line(blitz_reader *r, char *dst, size_t max) {
    if (r) {
        r->blitz__dst = (unsigned char *)dst;
        r->blitz__max = max;
    }
    return blitz_op_make(blitz__op_read_line_poll, blitz_reader_cancel, r);
}
BLITZ_API blitz_op blitz_op_reader_read_exact(blitz_reader *r, void *dst, size_t len) {
    if (r) {
        r->blitz__dst = (unsigned char *)dst;
        r->blitz__max = len;
    }
    return blitz_op_make(blitz__op_read_exact_poll, blitz_reader_cancel, r);
}
BLITZ__OP_ADAPTER(blitz__op_read_poll, blitz_reader, r,
                  blitz_reader_read(cx, r, r->blitz__dst, r->blitz__max))
BLITZ__OP_ADAPTER(blitz__op_read_until_poll, blitz_reader, r,
                  blitz_reader_read_until(cx, r, r->blitz__delim, r->blitz__dst, r->blitz__max))
BLITZ_API blitz_op blitz_op_reader_read(blitz_reader *r, void *dst, size_t len) {
    if (r) {
        r->blitz__dst = (unsigned char *)dst;
        r->blitz__max = len;
    }
    return blitz_op_make(blitz__op_read_poll, blitz_reader_cancel, r);
}
BLITZ_API blitz_op blitz_op_reader_read_until(blitz_reader *r, int delim, void *dst, size_t max) {
    if (r) {
        r->blitz__dst = (unsigned char *)dst;
        r->blitz__max = max;
        r->blitz__delim = delim;
    }
    return blitz_op_make(blitz__op_read_until_poll, blitz_reader_cancel, r);
}

/* ---- the buffered writer ------------------------------------------------------------------ */

#define BLITZ__WR_WRITE 1
#define BLITZ__WR_ALL   2
#define BLITZ__WR_FLUSH 3
#define BLITZ__WR_CLOSE 4
/* blitz__writing: what the pending stream write carries */
#define BLITZ__WRITING_BUF    1
#define BLITZ__WRITING_DIRECT 2

BLITZ_API int blitz_writer_init(blitz_writer *w, blitz_stream *st, void *buf, size_t cap) {
    if (!w)
        return BLITZ_EINVAL;
    memset(w, 0, sizeof *w);
    int rc = blitz__stream_buffer(st, buf, cap, &w->blitz__buf, &w->blitz__cap, &w->blitz__owns);
    if (rc == BLITZ_OK)
        w->stream = st;
    return rc;
}

BLITZ_API void blitz_writer_deinit(blitz_writer *w) {
    if (!w)
        return;
    blitz__stream_buffer_free(&w->blitz__buf, &w->blitz__owns);
    w->blitz__cap = w->blitz__len = w->blitz__sent = 0;
}

BLITZ_API size_t blitz_writer_buffered(const blitz_writer *w) {
    return w ? w->blitz__len - w->blitz__sent : 0;
}

static blitz_poll blitz__writer_done(blitz_writer *w, int64_t result) {
    w->result = result;
    w->blitz__op = 0;
    return BLITZ_READY;
}

/* One stream write of the buffered bytes. READY with progress made or
 * blitz__err set. */
static blitz_poll blitz__writer_push(blitz_cx *cx, blitz_writer *w) {
    blitz_stream *st = w->stream;
    w->blitz__writing = BLITZ__WRITING_BUF;
    if (blitz_stream_write(cx, st, w->blitz__buf + w->blitz__sent,
                           w->blitz__len - w->blitz__sent) == BLITZ_PENDING)
        return BLITZ_PENDING;
    w->blitz__writing = 0;
    int64_t res = st->write_result;
    if (res < 0) {
        w->blitz__err = res;
    } else if (res == 0) {
        w->blitz__err = BLITZ_EIO; /* a stream that takes nothing */
    } else {
        w->blitz__sent += (size_t)res;
        if (w->blitz__sent == w->blitz__len)
            w->blitz__sent = w->blitz__len = 0;
    }
    return BLITZ_READY;
}

static size_t blitz__writer_put(blitz_writer *w, const unsigned char *src, size_t len) {
    if (w->blitz__sent > 0 && w->blitz__len == w->blitz__cap) {
        /* nothing pending here: the push is finished when we get here */
        memmove(w->blitz__buf, w->blitz__buf + w->blitz__sent, w->blitz__len - w->blitz__sent);
        w->blitz__len -= w->blitz__sent;
        w->blitz__sent = 0;
    }
    size_t room = w->blitz__cap - w->blitz__len;
    if (len > room)
        len = room;
    memcpy(w->blitz__buf + w->blitz__len, src, len);
    w->blitz__len += len;
    return len;
}

static int blitz__writer_bad(blitz_writer *w) {
    return !w->stream || !w->blitz__buf;
}

BLITZ_API blitz_poll blitz_writer_write(blitz_cx *cx, blitz_writer *w, const void *src,
                                        size_t len) {
    if (!w)
        return BLITZ_READY;
    if (blitz__writer_bad(w) || (!src && len))
        return blitz__writer_done(w, BLITZ_EINVAL);
    w->blitz__op = BLITZ__WR_WRITE;
    for (;;) {
        if (w->blitz__err)
            return blitz__writer_done(w, w->blitz__err);
        if (!len)
            return blitz__writer_done(w, 0);
        if (w->blitz__writing == 0) {
            size_t n = blitz__writer_put(w, (const unsigned char *)src, len);
            if (n)
                return blitz__writer_done(w, (int64_t)n);
        }
        if (blitz__writer_push(cx, w) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_writer_cancel, w);
    }
}

BLITZ_API blitz_poll blitz_writer_write_all(blitz_cx *cx, blitz_writer *w, const void *src,
                                            size_t len) {
    if (!w)
        return BLITZ_READY;
    if (blitz__writer_bad(w) || (!src && len))
        return blitz__writer_done(w, BLITZ_EINVAL);
    if (w->blitz__op != BLITZ__WR_ALL) {
        w->blitz__op = BLITZ__WR_ALL;
        w->blitz__taken = 0;
    }
    const unsigned char *p = (const unsigned char *)src;
    blitz_stream *st = w->stream;
    for (;;) {
        if (w->blitz__err)
            return blitz__writer_done(w, w->blitz__err);
        if (w->blitz__taken == len)
            return blitz__writer_done(w, (int64_t)len);
        size_t left = len - w->blitz__taken;
        if (w->blitz__writing == BLITZ__WRITING_DIRECT ||
            (w->blitz__writing == 0 && w->blitz__len == 0 && left >= w->blitz__cap)) {
            /* Larger than the buffer: straight from the caller's memory. */
            w->blitz__writing = BLITZ__WRITING_DIRECT;
            if (blitz_stream_write(cx, st, p + w->blitz__taken, left) == BLITZ_PENDING)
                return blitz__pending(cx, blitz_writer_cancel, w);
            w->blitz__writing = 0;
            if (st->write_result <= 0)
                w->blitz__err = st->write_result < 0 ? st->write_result : BLITZ_EIO;
            else
                w->blitz__taken += (size_t)st->write_result;
            continue;
        }
        if (w->blitz__writing == 0) {
            size_t n = blitz__writer_put(w, p + w->blitz__taken, left);
            w->blitz__taken += n;
            if (n)
                continue;
        }
        if (blitz__writer_push(cx, w) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_writer_cancel, w);
    }
}

BLITZ_API blitz_poll blitz_writer_flush(blitz_cx *cx, blitz_writer *w) {
    if (!w)
        return BLITZ_READY;
    if (blitz__writer_bad(w))
        return blitz__writer_done(w, BLITZ_EINVAL);
    w->blitz__op = BLITZ__WR_FLUSH;
    for (;;) {
        if (w->blitz__err)
            return blitz__writer_done(w, w->blitz__err);
        if (w->blitz__len == 0)
            return blitz__writer_done(w, 0);
        if (blitz__writer_push(cx, w) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_writer_cancel, w);
    }
}

BLITZ_API blitz_poll blitz_writer_close(blitz_cx *cx, blitz_writer *w) {
    if (!w)
        return BLITZ_READY;
    if (blitz_writer_flush(cx, w) == BLITZ_PENDING) {
        w->blitz__op = BLITZ__WR_CLOSE;
        return blitz__pending(cx, blitz_writer_cancel, w);
    }
    if (w->result < 0)
        return BLITZ_READY;
    return blitz__writer_done(w, blitz_stream_shutdown_write(w->stream));
}

BLITZ_API void blitz_writer_cancel(blitz_cx *cx, void *p) {
    blitz_writer *w = (blitz_writer *)p;
    if (!w)
        return;
    if (w->blitz__writing && w->stream) {
        blitz_stream_write_cancel(cx, w->stream);
        /* How much of the withdrawn write reached the stream is unknown:
         * the writer stays failed rather than resend or drop bytes. */
        if (!w->blitz__err)
            w->blitz__err = BLITZ_ECANCELED;
    }
    w->blitz__writing = 0;
    if (w->blitz__op)
        w->result = BLITZ_ECANCELED;
    w->blitz__op = 0;
}

/* A write op: its bytes kept in the writer until the first poll. */
static blitz_op blitz__writer_op(blitz_writer *w, blitz_poll_fn poll, const void *src, size_t len) {
    if (w) {
        w->blitz__src = (const unsigned char *)src;
        w->blitz__srclen = len;
    }
    return blitz_op_make(poll, blitz_writer_cancel, w);
}

BLITZ__OP_ADAPTER(blitz__op_write_all_poll, blitz_writer, w,
                  blitz_writer_write_all(cx, w, w->blitz__src, w->blitz__srclen))
BLITZ__OP_ADAPTER(blitz__op_flush_poll, blitz_writer, w, blitz_writer_flush(cx, w))
BLITZ_API blitz_op blitz_op_writer_write_all(blitz_writer *w, const void *src, size_t len) {
    return blitz__writer_op(w, blitz__op_write_all_poll, src, len);
}
BLITZ_API blitz_op blitz_op_writer_flush(blitz_writer *w) {
    return blitz_op_make(blitz__op_flush_poll, blitz_writer_cancel, w);
}
BLITZ__OP_ADAPTER(blitz__op_write_poll, blitz_writer, w,
                  blitz_writer_write(cx, w, w->blitz__src, w->blitz__srclen))
BLITZ__OP_ADAPTER(blitz__op_close_poll, blitz_writer, w, blitz_writer_close(cx, w))
BLITZ_API blitz_op blitz_op_writer_write(blitz_writer *w, const void *src, size_t len) {
    return blitz__writer_op(w, blitz__op_write_poll, src, len);
}
BLITZ_API blitz_op blitz_op_writer_close(blitz_writer *w) {
    return blitz_op_make(blitz__op_close_poll, blitz_writer_cancel, w);
}

/* ---- copy ------------------------------------------------------------------------------------ */

#define BLITZ__CP_UNSET    0
#define BLITZ__CP_BUF      1
#define BLITZ__CP_SPLICE   2 /* one side is a pipe */
#define BLITZ__CP_SPLICE2  3 /* socket to socket through a pipe of the copy's own */
#define BLITZ__CP_SENDFILE 4
#define BLITZ__CP_DONE     5

#define BLITZ__CPW_NONE  0
#define BLITZ__CPW_SRC   1 /* readiness of src */
#define BLITZ__CPW_DST   2 /* readiness of dst */
#define BLITZ__CPW_READ  3 /* a stream read */
#define BLITZ__CPW_WRITE 4 /* a stream write */

BLITZ_API int blitz_copy_init(blitz_copy *c, blitz_stream *src, blitz_stream *dst, unsigned flags) {
    if (!c)
        return BLITZ_EINVAL;
    memset(c, 0, sizeof *c);
    c->blitz__pipe[0] = c->blitz__pipe[1] = -1;
    if (!src || !dst || !src->vtable || !dst->vtable || (flags & ~BLITZ_COPY_NO_SPLICE))
        return BLITZ_EINVAL;
    c->src = src;
    c->dst = dst;
    c->flags = flags;
    return BLITZ_OK;
}

static void blitz__copy_release(blitz_copy *c) {
    if (c->blitz__pipe[0] >= 0)
        blitz__stream_close_fd(c->blitz__pipe[0]);
    if (c->blitz__pipe[1] >= 0)
        blitz__stream_close_fd(c->blitz__pipe[1]);
    c->blitz__pipe[0] = c->blitz__pipe[1] = -1;
    c->blitz__inpipe = 0;
    blitz__free(c->blitz__buf);
    c->blitz__buf = NULL;
    c->blitz__len = c->blitz__off = 0;
}

static blitz_poll blitz__copy_finish(blitz_copy *c, int64_t result) {
    blitz__copy_release(c);
    c->result = result;
    c->blitz__mode = BLITZ__CP_DONE;
    c->blitz__wait = BLITZ__CPW_NONE;
    return BLITZ_READY;
}

#if BLITZ__HAS_IO
static int blitz__is_fifo(int fd) {
    struct stat sb;
    return fd >= 0 && fstat(fd, &sb) == 0 && S_ISFIFO(sb.st_mode);
}
static int blitz__is_sock(const blitz_stream *st) {
    struct stat sb;
    return st->sock && st->fd >= 0 && fstat(st->fd, &sb) == 0 && S_ISSOCK(sb.st_mode);
}
static int blitz__pollable(const blitz_stream *st) {
    return (st->kind == BLITZ_STREAM_SOCKET || st->kind == BLITZ_STREAM_PIPE) && st->sock;
}

static int blitz__copy_pick(blitz_copy *c) {
    blitz_stream *src = c->src, *dst = c->dst;
    if ((c->flags & BLITZ_COPY_NO_SPLICE) || !blitz__splice_available())
        return BLITZ__CP_BUF;
    if (src->kind == BLITZ_STREAM_FILE && blitz__pollable(dst))
        return BLITZ__CP_SENDFILE;
    if (blitz__pollable(src) && blitz__pollable(dst)) {
        /* A splice reads a source socket directly: not while data its
         * multishot receive queued waits (the buffered copy hands it out). */
        int src_sock = blitz__is_sock(src);
        if (src_sock && !blitz__recv_ms_direct(src->sock))
            return BLITZ__CP_BUF;
        if (blitz__is_fifo(src->fd) || blitz__is_fifo(dst->fd))
            return BLITZ__CP_SPLICE;
        if (src_sock && blitz__is_sock(dst))
            return BLITZ__CP_SPLICE2;
    }
    return BLITZ__CP_BUF;
}

/* A kernel transfer; a code on failure. SIGPIPE is held back. */
static int64_t blitz__copy_splice(int in, int out, size_t n) {
    blitz__nosig g;
    blitz__nosig_begin(&g);
    int64_t r = blitz__splice(in, out, n);
    blitz__nosig_end(&g, r == BLITZ_EPIPE);
    return r;
}
static int64_t blitz__copy_sendfile(int in, int out, size_t n) {
    blitz__nosig g;
    blitz__nosig_begin(&g);
    int64_t r = blitz__sendfile(out, in, n);
    blitz__nosig_end(&g, r == BLITZ_EPIPE);
    return r;
}

/* The kernel refused this pair of descriptors: read and write instead. */
static int blitz__copy_refused(int64_t r) {
    return r == BLITZ_EINVAL || r == BLITZ_ENOSYS || r == BLITZ_EOPNOTSUPP || r == BLITZ_EBADF;
}

/* Which side held up a transfer that would block. */
static int blitz__copy_blocker(blitz_copy *c, int src_fd, int dst_fd) {
    struct pollfd p[2];
    p[0].fd = src_fd;
    p[0].events = POLLIN;
    p[1].fd = dst_fd;
    p[1].events = POLLOUT;
    p[0].revents = p[1].revents = 0;
    int n = src_fd >= 0 ? 2 : 1;
    if (poll(src_fd >= 0 ? p : p + 1, (nfds_t)n, 0) < 0)
        return BLITZ__CPW_DST;
    if (src_fd >= 0 && !p[0].revents)
        return BLITZ__CPW_SRC;
    if (!p[1].revents)
        return BLITZ__CPW_DST;
    (void)c;
    return BLITZ__CPW_NONE;
}

/* READY when the wait the copy is in is over (or it is in none); an
 * error of the wait ends the copy. */
static blitz_poll blitz__copy_wait(blitz_cx *cx, blitz_copy *c, int *failed) {
    blitz_io *op;
    blitz_poll p;
    *failed = 0;
    switch (c->blitz__wait) {
    case BLITZ__CPW_SRC:
        op = &c->blitz__src_io;
        p = blitz_fd_readable(cx, op, c->src->sock);
        break;
    case BLITZ__CPW_DST:
        op = &c->blitz__dst_io;
        p = blitz_fd_writable(cx, op, c->dst->sock);
        break;
    default:
        return BLITZ_READY;
    }
    if (p == BLITZ_PENDING)
        return BLITZ_PENDING;
    c->blitz__wait = BLITZ__CPW_NONE;
    if (op->result < 0) {
        *failed = 1;
        blitz__copy_finish(c, op->result);
    }
    return BLITZ_READY;
}

#endif /* BLITZ__HAS_IO */

static blitz_poll blitz__copy_buf(blitz_cx *cx, blitz_copy *c) {
    if (!c->blitz__buf) {
        c->blitz__buf = (unsigned char *)blitz__malloc(BLITZ__COPY_BUF);
        if (!c->blitz__buf)
            return blitz__copy_finish(c, BLITZ_ENOMEM);
    }
    for (int budget = 0;; budget++) {
        if (budget == BLITZ__COPY_BUDGET) {
            blitz_cx_yield(cx);
            return BLITZ_PENDING;
        }
        if (c->blitz__off < c->blitz__len) {
            c->blitz__wait = BLITZ__CPW_WRITE;
            if (blitz_stream_write(cx, c->dst, c->blitz__buf + c->blitz__off,
                                   c->blitz__len - c->blitz__off) == BLITZ_PENDING)
                return BLITZ_PENDING;
            c->blitz__wait = BLITZ__CPW_NONE;
            int64_t r = c->dst->write_result;
            if (r <= 0)
                return blitz__copy_finish(c, r < 0 ? r : BLITZ_EIO);
            c->blitz__off += (size_t)r;
            c->bytes += (uint64_t)r;
            continue;
        }
        c->blitz__wait = BLITZ__CPW_READ;
        if (blitz_stream_read(cx, c->src, c->blitz__buf, BLITZ__COPY_BUF) == BLITZ_PENDING)
            return BLITZ_PENDING;
        c->blitz__wait = BLITZ__CPW_NONE;
        int64_t r = c->src->read_result;
        if (r < 0)
            return blitz__copy_finish(c, r);
        if (r == 0)
            return blitz__copy_finish(c, (int64_t)c->bytes);
        c->blitz__len = (size_t)r;
        c->blitz__off = 0;
    }
}

#if BLITZ__HAS_IO
static blitz_poll blitz__copy_kernel(blitz_cx *cx, blitz_copy *c);
#endif

BLITZ_API blitz_poll blitz_copy_run(blitz_cx *cx, blitz_copy *c) {
    if (!c)
        return BLITZ_READY;
    if (!c->src || !c->dst || !cx) {
        c->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    if (c->blitz__mode == BLITZ__CP_DONE) {
        /* a finished copy polled again (BLITZ_AWAIT's re-check) */
        return BLITZ_READY;
    }
    if (c->blitz__mode == BLITZ__CP_UNSET) {
        c->bytes = c->kernel = 0;
        c->blitz__eof = 0;
#if BLITZ__HAS_IO
        c->blitz__mode = blitz__copy_pick(c);
        if (c->blitz__mode == BLITZ__CP_SPLICE2) {
            if (blitz__pipe_fds(c->blitz__pipe) != BLITZ_OK) {
                c->blitz__pipe[0] = c->blitz__pipe[1] = -1;
                c->blitz__mode = BLITZ__CP_BUF;
            } else {
                /* fewer, larger transfers; the default size is fine too */
                blitz__pipe_grow(c->blitz__pipe[1], 1 << 20);
            }
        }
#else
        c->blitz__mode = BLITZ__CP_BUF;
#endif
    }
#if BLITZ__HAS_IO
    return blitz__copy_kernel(cx, c);
#else
    return blitz__record(cx, blitz__copy_buf(cx, c), blitz_copy_cancel, c);
#endif
}

#if BLITZ__HAS_IO
/* splice / sendfile until the kernel refuses (then through a buffer). */
static blitz_poll blitz__copy_kernel(blitz_cx *cx, blitz_copy *c) {
    for (int budget = 0;; budget++) {
        if (c->blitz__mode == BLITZ__CP_BUF)
            return blitz__record(cx, blitz__copy_buf(cx, c), blitz_copy_cancel, c);
        int failed;
        if (blitz__copy_wait(cx, c, &failed) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_copy_cancel, c);
        if (failed)
            return BLITZ_READY;
        if (budget == BLITZ__COPY_BUDGET) {
            blitz_cx_yield(cx);
            return blitz__pending(cx, blitz_copy_cancel, c);
        }
        int src_fd = c->src->fd, dst_fd = c->dst->fd;
        int64_t r;
        int src_side = 1; /* whether src could be the side that blocks */
        if (c->blitz__mode == BLITZ__CP_SENDFILE) {
            r = blitz__copy_sendfile(src_fd, dst_fd, BLITZ__COPY_CHUNK);
            src_side = 0;
        } else if (c->blitz__mode == BLITZ__CP_SPLICE) {
            r = blitz__copy_splice(src_fd, dst_fd, BLITZ__COPY_CHUNK);
        } else if (c->blitz__inpipe > 0) {
            r = blitz__copy_splice(c->blitz__pipe[0], dst_fd, c->blitz__inpipe);
            src_side = 0;
        } else {
            if (c->blitz__eof)
                return blitz__copy_finish(c, (int64_t)c->bytes);
            r = blitz__copy_splice(src_fd, c->blitz__pipe[1], BLITZ__COPY_CHUNK);
            if (r > 0) {
                c->blitz__inpipe = (size_t)r;
                continue;
            }
            if (r == BLITZ_EAGAIN) {
                c->blitz__wait = BLITZ__CPW_SRC;
                continue;
            }
            if (r == 0) {
                c->blitz__eof = 1;
                continue;
            }
        }
        if (r > 0) {
            c->bytes += (uint64_t)r;
            c->kernel += (uint64_t)r;
            if (c->blitz__mode == BLITZ__CP_SPLICE2)
                c->blitz__inpipe -= (size_t)r;
            continue;
        }
        if (r == 0)
            return blitz__copy_finish(c, (int64_t)c->bytes);
        if (r == BLITZ_EAGAIN) {
            c->blitz__wait = blitz__copy_blocker(c, src_side ? src_fd : -1, dst_fd);
            if (c->blitz__wait == BLITZ__CPW_NONE) {
                blitz_cx_yield(cx);
                return blitz__pending(cx, blitz_copy_cancel, c);
            }
            continue;
        }
        if (r == BLITZ_EINTR)
            continue;
        if (blitz__copy_refused(r) && c->blitz__inpipe == 0) {
            /* nothing is held in a pipe of ours: the rest goes through a
             * buffer */
            blitz__copy_release(c);
            c->blitz__mode = BLITZ__CP_BUF;
            continue;
        }
        return blitz__copy_finish(c, r);
    }
}
#endif /* BLITZ__HAS_IO */

BLITZ_API void blitz_copy_cancel(blitz_cx *cx, void *p) {
    blitz_copy *c = (blitz_copy *)p;
    if (!c)
        return;
    if (c->blitz__mode == BLITZ__CP_UNSET || c->blitz__mode == BLITZ__CP_DONE)
        return;
    blitz_io_cancel(NULL, &c->blitz__src_io);
    blitz_io_cancel(NULL, &c->blitz__dst_io);
    /* The stream op the copy waits in; a cancelled io_uring receive or
     * send may still use the buffer, and then its completion frees it. */
    blitz_io *held = NULL;
    if (c->blitz__wait == BLITZ__CPW_READ) {
        blitz_stream_read_cancel(cx, c->src);
        held = c->src->sock ? &c->src->blitz__rio : NULL;
    }
    if (c->blitz__wait == BLITZ__CPW_WRITE) {
        blitz_stream_write_cancel(cx, c->dst);
        held = c->dst->sock ? &c->dst->blitz__wio : NULL;
    }
    if (c->blitz__buf && held && blitz__io_free_after(held, c->blitz__buf))
        c->blitz__buf = NULL;
    blitz__copy_finish(c, BLITZ_ECANCELED);
}

BLITZ_API blitz_poll blitz_copy_settle(blitz_cx *cx, blitz_copy *c) {
    if (!c)
        return BLITZ_READY;
    if (blitz_io_settle(cx, &c->blitz__src_io) == BLITZ_PENDING ||
        blitz_io_settle(cx, &c->blitz__dst_io) == BLITZ_PENDING)
        return BLITZ_PENDING;
    if (c->src && blitz_stream_settle(cx, c->src) == BLITZ_PENDING)
        return BLITZ_PENDING;
    if (c->dst && blitz_stream_settle(cx, c->dst) == BLITZ_PENDING)
        return BLITZ_PENDING;
    return BLITZ_READY;
}

BLITZ__OP_ADAPTER(blitz__op_copy_poll, blitz_copy, c, blitz_copy_run(cx, c))
BLITZ_API blitz_op blitz_op_copy(blitz_copy *c) {
    return blitz_op_make(blitz__op_copy_poll, blitz_copy_cancel, c);
}

#endif /* BLITZ__HAS_SOCKETS */
