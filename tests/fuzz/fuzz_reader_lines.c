/* The buffered reader's line splitting on arbitrary bytes, arriving in
 * arbitrary chunks through a custom stream, with a small reader buffer
 * and a small destination: every line comes out without its ending and
 * with no '\n' inside, a too-long line is cut at max - 1 bytes (and only
 * then), and the pieces and endings put back together are the input. */
#include "fuzz_input.h"

typedef struct {
    const uint8_t *data;
    size_t size, pos;
    uint64_t chunk_seed;
    unsigned char *rebuilt; /* the lines and endings put back together */
    size_t rebuilt_len;
} fz_source;

static blitz_poll fz_read(blitz_cx *cx, blitz_stream *st, void *buf, size_t len, int64_t *result) {
    (void)cx;
    fz_source *src = st->user;
    /* Chunk sizes from their own sequence (xorshift), 1..16 bytes. */
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
    *result = BLITZ_EINVAL; /* read only */
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
    size_t max, cap;
    blitz_stream stream;
    blitz_reader reader;
    char line[80];
} fz_task;

static blitz_poll fz_task_poll(blitz_cx *cx, void *p) {
    fz_task *t = p;
    BLITZ_BEGIN(t);
    FZ_CHECK(blitz_stream_custom(&t->stream, &fz_vtable, t->src) == BLITZ_OK);
    FZ_CHECK(blitz_reader_init(&t->reader, &t->stream, NULL, t->cap) == BLITZ_OK);
    for (;;) {
        BLITZ_AWAIT(t, blitz_reader_read_line(cx, &t->reader, t->line, t->max));
        int64_t r = t->reader.result;
        size_t len = t->reader.len;
        if (r == 0)
            break;
        if (r == BLITZ_EMSGSIZE) {
            FZ_CHECK(len == t->max - 1);
            FZ_CHECK(!memchr(t->line, '\n', len));
            memcpy(t->src->rebuilt + t->src->rebuilt_len, t->line, len);
            t->src->rebuilt_len += len;
            continue;
        }
        FZ_CHECK(r > 0);
        FZ_CHECK(len < t->max && t->line[len] == '\0');
        FZ_CHECK(!memchr(t->line, '\n', len));
        memcpy(t->src->rebuilt + t->src->rebuilt_len, t->line, len);
        t->src->rebuilt_len += len;
        size_t ending = (size_t)r - len;
        FZ_CHECK(ending <= 2);
        if (ending == 2) {
            memcpy(t->src->rebuilt + t->src->rebuilt_len, "\r\n", 2);
        } else if (ending == 1) {
            t->src->rebuilt[t->src->rebuilt_len] = '\n';
        } else {
            /* No ending: the stream's last, unterminated line. */
            FZ_CHECK(t->src->pos == t->src->size);
        }
        t->src->rebuilt_len += ending;
        /* A line that fitted was not cut. */
        FZ_CHECK(len + ending <= t->max - 1 || ending == 0);
    }
    blitz_reader_deinit(&t->reader);
    BLITZ_END(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3 || size > 4096)
        return 0;
    fz_source src = {data + 3, size - 3, 0, 0x9e3779b97f4a7c15ull ^ data[2], NULL, 0};
    src.rebuilt = malloc(size);
    FZ_CHECK(src.rebuilt);
    fz_task t; /* the runtime runs a copy */
    memset(&t, 0, sizeof t);
    t.src = &src;
    t.max = 2 + data[0] % 64;
    t.cap = 1 + data[1] % 64;

    blitz_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flavor = BLITZ_CURRENT_THREAD;
    cfg.backend = BLITZ_BACKEND_NONE;
    blitz_runtime *rt = NULL;
    FZ_CHECK(blitz_runtime_new(&cfg, &rt) == BLITZ_OK);
    FZ_CHECK(blitz_runtime_run(rt, fz_task_poll, &t, sizeof t) == BLITZ_OK);
    FZ_CHECK(blitz_runtime_free(rt) == BLITZ_OK);
    FZ_CHECK(src.pos == src.size);
    FZ_CHECK(src.rebuilt_len == src.size && memcmp(src.rebuilt, src.data, src.size) == 0);
    free(src.rebuilt);
    return 0;
}
