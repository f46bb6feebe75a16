/* Counts a file's words through a pipeline, written against the current
 * API: the main thread reads the file and sends its lines through a
 * channel to 4 worker tasks; each counts the words of the lines it gets
 * and reports its total through a oneshot; the main thread prints the sum.
 *
 *   new_pipeline FILE           (compare: wc -lw FILE) */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define NWORKERS 4

static uint64_t count_words(const char *s) {
    uint64_t words = 0;
    for (size_t i = 0; s[i]; i++)
        words += !isspace((unsigned char)s[i]) && (i == 0 || isspace((unsigned char)s[i - 1]));
    return words;
}

typedef struct {
    BLITZ_CORO;
    blitz_chan *lines; /* borrowed: the main thread releases it last */
    blitz_chan_op op;
    const char *line;
    blitz_oneshot *report;
    uint64_t words;
} worker;

static blitz_poll worker_poll(blitz_cx *cx, void *p) {
    worker *w = p;
    BLITZ_BEGIN(w);
    for (;;) {
        BLITZ_AWAIT(w, blitz_chan_recv(cx, &w->op, w->lines, &w->line));
        if (w->op.result != BLITZ_OK)
            break; /* closed and drained: no more lines */
        w->words += count_words(w->line);
    }
    blitz_oneshot_send(w->report, w->words);
    BLITZ_END(w);
}

static int fail(const char *path, int rc) {
    fprintf(stderr, "pipeline: %s: %s\n", path, blitz_strerror(rc));
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    blitz_runtime *rt = NULL;
    blitz_chan *lines = NULL;
    blitz_fs_op file = {0};
    blitz_oneshot reports[NWORKERS] = {0};
    int rc = blitz_runtime_new(NULL, &rt);
    if (rc == BLITZ_OK)
        rc = blitz_op_run_blocking(rt, blitz_op_fs_read_file(&file, argv[1]));
    if (rc == BLITZ_OK && file.result < 0)
        rc = (int)file.result;
    if (rc == BLITZ_OK)
        rc = blitz_chan_new(&lines, sizeof(const char *), 64);
    for (int i = 0; rc == BLITZ_OK && i < NWORKERS; i++) {
        worker w = {.lines = lines, .report = &reports[i]};
        rc = blitz_spawn(rt, worker_poll, &w, sizeof w, NULL);
    }
    if (rc != BLITZ_OK)
        return fail(argv[1], rc);

    /* A line ends where its newline was: the workers read the file's bytes. */
    uint64_t nlines = 0, words = 0, n;
    for (char *line = file.data, *end = line + file.result; line < end; nlines++) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        *(nl ? nl : end) = '\0';
        blitz_chan_send_blocking(lines, &line);
        line = (nl ? nl : end) + 1;
    }
    blitz_chan_sender_release(lines); /* the last sender: the channel closes */
    for (int i = 0; i < NWORKERS; i++) {
        if ((rc = blitz_oneshot_recv_blocking(&reports[i], &n)) != BLITZ_OK)
            return fail(argv[1], rc);
        words += n;
    }
    blitz_chan_receiver_release(lines);
    printf("%llu lines, %llu words\n", (unsigned long long)nlines, (unsigned long long)words);
    blitz_free(file.data);
    blitz_runtime_free(rt);
    return 0;
}
