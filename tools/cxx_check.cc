// Proves that blitz.h's declarations compile as C++ (make test-cxx):
// included without BLITZ_IMPLEMENTATION, used the way a C++ program would.
// Syntax-checked only (-fsyntax-only), never linked.
#include "blitz.h"
#include "blitz.h" // the header guard makes a second include harmless

#include <cstdio>

static_assert(BLITZ_OK == 0, "BLITZ_OK is zero");
static_assert(BLITZ_EINVAL < 0 && BLITZ_ESHUTDOWN == -4001, "error codes");
static_assert(sizeof(blitz_waker) == 2 * sizeof(void *), "a waker is two pointers");
static_assert(BLITZ_MAX_WORKERS >= 1 && BLITZ_MAX_WORKERS <= 64, "worker bound");

namespace {

struct counter {
    BLITZ_CORO;
    int n;
    blitz_task *child;
};

blitz_poll leaf(blitz_cx *cx, void *p) {
    (void)cx;
    static_cast<counter *>(p)->n++;
    return BLITZ_READY;
}

// The coroutine macros, in C++ (no initialised locals across a case label).
blitz_poll parent(blitz_cx *cx, void *p) {
    counter *s = static_cast<counter *>(p);
    BLITZ_BEGIN(s);
    for (s->n = 0; s->n < 3; s->n++)
        BLITZ_YIELD(s, cx);
    if (blitz_spawn(blitz_cx_runtime(cx), leaf, nullptr, sizeof(counter), &s->child) != BLITZ_OK)
        BLITZ_RETURN(s);
    BLITZ_AWAIT(s, blitz_join(cx, s->child));
    blitz_task_release(&s->child);
    BLITZ_END(s);
}

void drop(void *state) {
    (void)state;
}

void leaf_blocking(void *state) {
    (void)state;
}

} // namespace

int main() {
    blitz_config cfg = {};
    cfg.flavor = BLITZ_CURRENT_THREAD;
    blitz_runtime *rt = nullptr;
    if (blitz_runtime_new(&cfg, &rt) != BLITZ_OK)
        return 1;
    blitz_spawn_opts opts = {};
    opts.poll = parent;
    opts.size = sizeof(counter);
    opts.drop = drop;
    blitz_task *h = nullptr;
    int rc = blitz_spawn_ex(rt, &opts, &h);
    if (rc == BLITZ_OK)
        rc = blitz_join_blocking(h);
    std::printf("%s %s %d\n", blitz_version(), blitz_err_name(rc), blitz_task_status(h));
    blitz_task_release(&h);

    blitz_waker w = blitz_waker_noop();
    blitz_waker c = blitz_waker_clone(&w);
    (void)blitz_waker_will_wake(&w, &c);
    blitz_waker_wake_by_ref(&c);
    blitz_waker_drop(c);

    blitz_stats st;
    blitz_worker_stats ws;
    blitz_runtime_stats(rt, &st);
    blitz_runtime_worker_stats(rt, 0, &ws);
    blitz_poll_fn fn = leaf;
    blitz_drop_fn dfn = drop;
    (void)fn;
    (void)dfn;
    std::printf("%s\n", blitz_strerror(BLITZ_ERELEASED));

    /* The blocking pool, files, DNS, signals and processes: the op structs
     * zero-initialise and the calls are declared. */
    blitz_blocking_opts bo = {leaf_blocking, nullptr, 1, drop};
    blitz_task *bh = nullptr;
    if (blitz_spawn_blocking_ex(rt, &bo, &bh) == BLITZ_OK)
        blitz_task_release(&bh);
    blitz_pool_stats ps;
    blitz_runtime_pool_stats(rt, &ps);
    blitz_fs_op fop = {};
    blitz_dns_op dop = {};
    blitz_wait_op wop = {};
    blitz_output_op oop = {};
    blitz_blocking_spawn bs = {};
    blitz_fs_metadata md;
    blitz_signal sig;
    if (blitz_signal_init(&sig, 10) == BLITZ_OK)
        blitz_signal_deinit(&sig);
    const char *const argv[] = {"true", nullptr};
    blitz_command cmd = {
        argv, nullptr, nullptr, BLITZ_STDIO_NULL, BLITZ_STDIO_NULL, BLITZ_STDIO_INHERIT};
    blitz_child child;
    if (blitz_process_spawn(rt, &cmd, &child) == BLITZ_OK)
        blitz_process_release(&child);
    (void)fop;
    (void)dop;
    (void)wop;
    (void)oop;
    (void)bs;
    (void)md;
    blitz_cancel_fn cancels[] = {blitz_fs_cancel,           blitz_dns_cancel,
                                 blitz_process_wait_cancel, blitz_process_output_cancel,
                                 blitz_signal_cancel,       blitz_spawn_blocking_cancel};
    (void)cancels;
    return blitz_runtime_free(rt) == BLITZ_OK ? 0 : 1;
}
