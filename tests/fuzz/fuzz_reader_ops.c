/* The buffered reader's other record forms against a cursor over the
 * stream's bytes: any sequence of read_until (any delimiter, any limit),
 * read_exact, read and peek, over a small buffer fed in arbitrary chunks.
 * Each op's result, stored length and bytes must be what the cursor says:
 * a record up to and with its delimiter, BLITZ_EMSGSIZE with exactly max
 * bytes when none is among them, the tail at end of stream. */
#include "fuzz_input.h"

typedef struct {
    const uint8_t *data;
    size_t size, pos; /* pos: bytes the stream has given */
    uint64_t chunk_seed;
} fz_source;

static blitz_poll fz_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len, int64_t *result) {
    (void)cx;
    fz_source *src = st->user;
    src->chunk_seed ^= src->chunk_seed << 13;
    src->chunk_seed ^= src->chunk_seed >> 7;
    src->chunk_seed ^= src->chunk_seed << 17;
    size_t n = 1 + (size_t)(src->chunk_seed % 16);
    size_t left = src->size - src->pos;
    if (n > left)
        n = left;
    if (n > len)
        n = len;
    memcpy(buf, src->data + src->pos, n);
    src->pos += n;
    *result = (int64_t)n;
    return BLITZ_READY;
}
static blitz_poll fz_write(blitz_cx *cx, blitz_stream *st, const void *buf, size_t len,
                           int64_t *result) {
    (void)cx;
    (void)st;
    (void)buf;
    (void)len;
    *result = BLITZ_EINVAL;
    return BLITZ_READY;
}
static void fz_cancel(blitz_cx *cx, blitz_stream *st, int dir) {
    (void)cx;
    (void)st;
    (void)dir;
}
static const blitz_stream_vtable fz_vtable = {fz_read, fz_write, fz_cancel, NULL};

typedef struct {
    BLITZ_CORO;
    fz_source *src;
    const uint8_t *ops;
    size_t nops, i, cap;
    size_t cur; /* the model: bytes the reader has handed out */
    int kind, arg;
    size_t max;
    blitz_stream stream;
    blitz_reader reader;
    unsigned char dst[72];
} fz_task;

/* The reader's buffered bytes are the stream's next ones. */
static void fz_check_buffered(fz_task *t) {
    size_t n = 0;
    const unsigned char *p = blitz_reader_peek(&t->reader, &n);
    FZ_CHECK(n == blitz_reader_buffered(&t->reader) && n <= t->cap);
    FZ_CHECK(t->cur + n == t->src->pos);
    FZ_CHECK(n == 0 ? p == NULL : memcmp(p, t->src->data + t->cur, n) == 0);
}

static blitz_poll fz_task_poll(blitz_cx *cx, void *p) {
    fz_task *t = p;
    BLITZ_BEGIN(t);
    FZ_CHECK(blitz_stream_custom(&t->stream, &fz_vtable, t->src) == BLITZ_OK);
    FZ_CHECK(blitz_reader_init(&t->reader, &t->stream, NULL, t->cap) == BLITZ_OK);
    for (t->i = 0; t->i < t->nops; t->i++) {
        t->kind = t->ops[2 * t->i] & 3;
        t->arg = t->ops[2 * t->i + 1];
        t->max = 1 + (size_t)(t->ops[2 * t->i] >> 2) % 64;
        memset(t->dst, 0xAA, sizeof t->dst);
        if (t->kind == 0 || t->kind == 3) {
            BLITZ_AWAIT(t, blitz_reader_read_until(cx, &t->reader, t->arg, t->dst, t->max));
            const uint8_t *rest = t->src->data + t->cur;
            size_t left = t->src->size - t->cur;
            size_t span = left < t->max ? left : t->max;
            const uint8_t *hit = span ? memchr(rest, t->arg, span) : NULL;
            if (hit) {
                size_t n = (size_t)(hit - rest) + 1;
                FZ_CHECK(t->reader.result == (int64_t)n && t->reader.len == n);
            } else if (left > t->max) {
                FZ_CHECK(t->reader.result == BLITZ_EMSGSIZE && t->reader.len == t->max);
            } else {
                FZ_CHECK(t->reader.result == (int64_t)left && t->reader.len == left);
            }
        } else if (t->kind == 1) {
            BLITZ_AWAIT(t, blitz_reader_read_exact(cx, &t->reader, t->dst, t->max));
            size_t left = t->src->size - t->cur;
            if (left >= t->max)
                FZ_CHECK(t->reader.result == (int64_t)t->max && t->reader.len == t->max);
            else
                FZ_CHECK(t->reader.result == BLITZ_EEOF && t->reader.len == left);
        } else {
            BLITZ_AWAIT(t, blitz_reader_read(cx, &t->reader, t->dst, t->max));
            size_t left = t->src->size - t->cur;
            FZ_CHECK(t->reader.result >= 0 && t->reader.len == (size_t)t->reader.result);
            FZ_CHECK(t->reader.len <= t->max && t->reader.len <= left);
            FZ_CHECK((t->reader.len == 0) == (left == 0));
        }
        FZ_CHECK(memcmp(t->dst, t->src->data + t->cur, t->reader.len) == 0);
        FZ_CHECK(t->reader.len == sizeof t->dst || t->dst[t->reader.len] == 0xAA);
        t->cur += t->reader.len;
        fz_check_buffered(t);
    }
    blitz_reader_deinit(&t->reader);
    BLITZ_END(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3 || size > 4096)
        return 0;
    size_t nops = data[1] % 48;
    if (size < 3 + 2 * nops)
        return 0;
    fz_source src = {data + 3 + 2 * nops, size - 3 - 2 * nops, 0, 0x9e3779b97f4a7c15ull ^ data[2]};
    fz_task t; /* the runtime runs a copy */
    memset(&t, 0, sizeof t);
    t.src = &src;
    t.ops = data + 3;
    t.nops = nops;
    t.cap = 1 + data[0] % 64;

    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = BLITZ_CURRENT_THREAD;
    cfg.backend = BLITZ_BACKEND_NONE;
    blitz_runtime *rt = NULL;
    FZ_CHECK(blitz_runtime_new(&cfg, &rt) == BLITZ_OK);
    FZ_CHECK(blitz_runtime_run(rt, fz_task_poll, &t, sizeof t) == BLITZ_OK);
    FZ_CHECK(blitz_runtime_free(rt) == BLITZ_OK);
    return 0;
}
