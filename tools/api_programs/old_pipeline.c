/* Counts a file's words through a pipeline: the main task reads the file
 * and sends its lines through a channel to 4 worker tasks; each counts the
 * words of the lines it gets and reports its total through a oneshot; the
 * main task prints the sum. Written against the API of commit 9529cb2.
 *
 *   old_pipeline FILE           (compare: wc -lw FILE) */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define NWORKERS 4

/* A line: a slice of the file's contents, which outlive the workers. */
typedef struct {
    const char *text;
    size_t len;
} line;

static size_t line_len(const char *p, const char *end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    return (size_t)((nl ? nl : end) - p);
}

static uint64_t count_words(const char *s, size_t n) {
    uint64_t words = 0;
    int in_word = 0;
    for (size_t i = 0; i < n; i++) {
        int space = isspace((unsigned char)s[i]);
        words += !space && !in_word;
        in_word = !space;
    }
    return words;
}

typedef struct {
    BLITZ_CORO;
    blitz_chan *lines;
    blitz_chan_op op;
    line ln;
    blitz_oneshot *report;
    uint64_t words;
} worker;

static blitz_poll worker_poll(blitz_cx *cx, void *p) {
    worker *w = p;
    BLITZ_BEGIN(w);
    for (;;) {
        BLITZ_AWAIT(w, blitz_chan_recv(cx, &w->op, w->lines, &w->ln));
        if (w->op.result != BLITZ_OK)
            break; /* closed and drained: no more lines */
        w->words += count_words(w->ln.text, w->ln.len);
    }
    blitz_chan_receiver_release(w->lines);
    blitz_oneshot_send(w->report, w->words);
    BLITZ_END(w);
}

typedef struct {
    BLITZ_CORO;
    const char *path;
    blitz_fs_op file;
    blitz_chan *lines;
    blitz_chan_op op;
    line ln;
    const char *next, *end;
    blitz_oneshot reports[NWORKERS];
    int i, error;
    uint64_t nlines, words;
} main_task;

static blitz_poll main_poll(blitz_cx *cx, void *p) {
    main_task *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, blitz_fs_read_file(cx, &m->file, m->path));
    if (m->file.result < 0) {
        m->error = (int)m->file.result;
        BLITZ_RETURN(m);
    }
    m->error = blitz_chan_new(&m->lines, sizeof(line), 64);
    if (m->error != BLITZ_OK) {
        blitz_free(m->file.data);
        BLITZ_RETURN(m);
    }
    for (m->i = 0; m->i < NWORKERS; m->i++) {
        worker w = {0};
        w.lines = m->lines;
        w.report = &m->reports[m->i];
        blitz_chan_receiver_clone(m->lines); /* the worker's own reference */
        if (blitz_spawn(blitz_cx_runtime(cx), worker_poll, &w, sizeof w, NULL) != BLITZ_OK) {
            blitz_chan_receiver_release(m->lines);
            blitz_oneshot_close_tx(w.report);
        }
    }
    blitz_chan_receiver_release(m->lines); /* the main task only sends */

    m->next = m->file.data;
    m->end = m->next + m->file.result;
    while (m->next < m->end) {
        m->ln.text = m->next;
        m->ln.len = line_len(m->next, m->end);
        m->next += m->ln.len + 1;
        m->nlines++;
        BLITZ_AWAIT(m, blitz_chan_send(cx, &m->op, m->lines, &m->ln));
    }
    blitz_chan_sender_release(m->lines); /* the last sender: the channel closes */

    for (m->i = 0; m->i < NWORKERS; m->i++) {
        BLITZ_AWAIT(m, blitz_oneshot_recv(cx, &m->reports[m->i]));
        uint64_t words;
        if (blitz_oneshot_try_recv(&m->reports[m->i], &words) == BLITZ_OK)
            m->words += words;
        else
            m->error = BLITZ_ECANCELED; /* a worker could not start */
    }
    blitz_free(m->file.data);
    BLITZ_END(m);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    main_task m = {0};
    m.path = argv[1];
    int rc = blitz_run(main_poll, &m, sizeof m);
    if (rc == BLITZ_OK)
        rc = m.error;
    if (rc != BLITZ_OK) {
        fprintf(stderr, "pipeline: %s: %s\n", argv[1], blitz_strerror(rc));
        return 1;
    }
    printf("%llu lines, %llu words\n", (unsigned long long)m.nlines, (unsigned long long)m.words);
    return 0;
}
