/* Spawning and joining: every flavour, from plain threads and from tasks,
 * every task exactly once, fan-out trees, several runtimes at once. */
#include "test_util.h"

/* ---- spawn + join from a plain thread ------------------------------------ */

typedef struct {
    int in, out, polls;
    void *seen_state;
    blitz_runtime *seen_cx_rt, *seen_current;
    int worker;
} spawn_basic;

static blitz_poll spawn_basic_poll(blitz_cx *cx, void *p) {
    spawn_basic *s = p;
    s->polls++;
    s->out = s->in * 2 + 1;
    s->seen_state = p;
    s->seen_cx_rt = blitz_cx_runtime(cx);
    s->seen_current = blitz_runtime_current();
    s->worker = blitz_cx_worker(cx);
    return BLITZ_READY;
}

static int spawn_join(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    CHECK_NULL(blitz_runtime_current());
    enum { N = 64 };
    blitz_task *h[N];
    for (int i = 0; i < N; i++) {
        spawn_basic s = {i, -1, 0, NULL, NULL, NULL, -100};
        h[i] = NULL;
        CHECK_OK(blitz_spawn(rt, spawn_basic_poll, &s, sizeof s, &h[i]));
        CHECK_NOT_NULL(h[i]);
    }
    for (int i = 0; i < N; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        CHECK_OK(blitz_task_status(h[i]));
        /* Waiting again on a finished task returns at once. */
        CHECK_OK(blitz_join_blocking(h[i]));
        spawn_basic *s = blitz_task_state(h[i]);
        CHECK_NOT_NULL(s);
        CHECK_EQ(s->polls, 1);
        CHECK_EQ(s->out, 2 * i + 1);
        CHECK_PTR_EQ(s->seen_state, s); /* the state did not move */
        CHECK_PTR_EQ(s->seen_cx_rt, rt);
        CHECK_PTR_EQ(s->seen_current, rt);
        if (f.flavor == BLITZ_CURRENT_THREAD)
            CHECK_EQ(s->worker, 0);
        else
            CHECK(s->worker >= -1 && s->worker < (int)f.workers);
        CHECK_OK(blitz_task_release(&h[i]));
        CHECK_NULL(h[i]);
    }
    CHECK_NULL(blitz_runtime_current());
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(spawn_join)

/* ---- a large state built in place (blitz_spawn_opts.init) ---------------- */

enum { SPAWN_BIG_WORDS = 60 * 1024 / sizeof(uint32_t) };

typedef struct {
    uint32_t words[SPAWN_BIG_WORDS];
    void *init_at;  /* where init saw the state */
    int zero_seen;  /* init found the state zero-filled */
    int pattern_ok; /* the task saw every word init wrote */
} spawn_big;

static void spawn_big_init(void *p, void *arg) {
    spawn_big *s = p;
    uint32_t seed = *(const uint32_t *)arg;
    s->zero_seen = 1;
    for (size_t i = 0; i < SPAWN_BIG_WORDS; i++) {
        if (s->words[i] != 0)
            s->zero_seen = 0;
        s->words[i] = seed ^ (uint32_t)(i * 2654435761u);
    }
    s->init_at = p;
}

static blitz_poll spawn_big_poll(blitz_cx *cx, void *p) {
    spawn_big *s = p;
    (void)cx;
    s->pattern_ok = s->init_at == p;
    for (size_t i = 0; i < SPAWN_BIG_WORDS; i++)
        if (s->words[i] != (s->words[0] ^ (uint32_t)(i * 2654435761u)))
            s->pattern_ok = 0;
    return BLITZ_READY;
}

static int spawn_init_in_place(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    uint32_t seed = 0x5eed1234u;
    blitz_spawn_opts o;
    memset(&o, 0, sizeof o);
    o.poll = spawn_big_poll;
    o.size = sizeof(spawn_big);
    o.init = spawn_big_init;
    o.init_arg = &seed;
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn_ex(rt, &o, &h));
    CHECK_OK(blitz_join_blocking(h));
    spawn_big *s = blitz_task_state(h);
    CHECK_NOT_NULL(s);
    CHECK_EQ(s->words[0], seed);
    CHECK_EQ(s->zero_seen, 1);
    CHECK_EQ(s->pattern_ok, 1);
    CHECK_OK(blitz_task_release(&h));

    /* The same through a group. */
    blitz_group *g;
    CHECK_OK(blitz_group_new(rt, &g));
    seed = 0xabcdef01u;
    CHECK_OK(blitz_group_spawn_ex(g, &o));
    CHECK_OK(blitz_group_next_blocking(g, &h));
    CHECK_NOT_NULL(h);
    s = blitz_task_state(h);
    CHECK_NOT_NULL(s);
    CHECK_EQ(s->words[0], seed);
    CHECK_EQ(s->pattern_ok, 1);
    CHECK_OK(blitz_task_release(&h));

    /* init and a state to copy contradict each other. */
    spawn_big *copy = calloc(1, sizeof *copy);
    CHECK_NOT_NULL(copy);
    o.state = copy;
    CHECK_EQ(blitz_spawn_ex(rt, &o, &h), BLITZ_EINVAL);
    CHECK_NULL(h);
    CHECK_EQ(blitz_group_spawn_ex(g, &o), BLITZ_EINVAL);
    CHECK_EQ(blitz_group_len(g), 0);
    free(copy);
    CHECK_OK(blitz_group_free(g));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(spawn_init_in_place)

/* On a current-thread runtime nothing runs until a thread waits on it: a
 * spawned task is unfinished (EAGAIN, no state) until then. */
BLITZ_TEST(current_thread_runs_only_when_driven) {
    blitz_runtime *rt = tu_rt_new(TU_CT);
    spawn_basic s = {5, 0, 0, NULL, NULL, NULL, -100};
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, spawn_basic_poll, &s, sizeof s, &h));
    tu_sleep_ms(20);
    CHECK_EQ(blitz_task_status(h), BLITZ_EAGAIN);
    CHECK_NULL(blitz_task_state(h));
    CHECK_OK(blitz_join_blocking(h));
    spawn_basic *r = blitz_task_state(h);
    CHECK_NOT_NULL(r);
    CHECK_EQ(r->out, 11);
    CHECK_EQ(r->polls, 1);
    CHECK_EQ(s.out, 0); /* the caller's copy is not the task's */
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- join from inside a task ---------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    int n, i;
    long sum;
    int statuses_ok;
    int early_join_ready; /* joining a child that already finished */
    int polls;
    blitz_task *kids[16];
} spawn_parent;

typedef struct {
    BLITZ_CORO;
    int in;
    long out;
    int yields, k;
} spawn_child;

static blitz_poll spawn_child_poll(blitz_cx *cx, void *p) {
    spawn_child *c = p;
    BLITZ_BEGIN(c);
    for (c->k = 0; c->k < c->yields; c->k++)
        BLITZ_YIELD(c, cx);
    c->out = (long)c->in * c->in;
    BLITZ_END(c);
}

static blitz_poll spawn_parent_poll(blitz_cx *cx, void *p) {
    spawn_parent *s = p;
    s->polls++;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        spawn_child c = {0, s->i + 1, 0, s->i % 3, 0};
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), spawn_child_poll, &c, sizeof c, &s->kids[s->i]));
    }
    /* At least one resumption, even when every child finishes before its
     * join is reached. */
    BLITZ_YIELD(s, cx);
    for (s->i = 0; s->i < s->n; s->i++) {
        BLITZ_AWAIT(s, blitz_join(cx, s->kids[s->i]));
        s->statuses_ok += blitz_task_status(s->kids[s->i]) == BLITZ_OK;
        spawn_child *c = blitz_task_state(s->kids[s->i]);
        CHECK_NOT_NULL(c);
        s->sum += c->out;
        CHECK_OK(blitz_task_release(&s->kids[s->i]));
    }
    /* A child that finished before the join: spawn it, wait until it is
     * done (the yields let it run), then join, which is ready at once. */
    {
        spawn_child c = {0, 100, 0, 0, 0};
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), spawn_child_poll, &c, sizeof c, &s->kids[0]));
    }
    while (blitz_task_status(s->kids[0]) == BLITZ_EAGAIN)
        BLITZ_YIELD(s, cx);
    s->early_join_ready = blitz_join(cx, s->kids[0]) == BLITZ_READY;
    s->sum += ((spawn_child *)blitz_task_state(s->kids[0]))->out;
    CHECK_OK(blitz_task_release(&s->kids[0]));
    BLITZ_END(s);
}

static long spawn_parent_expect(int n) {
    long sum = 0;
    for (int i = 1; i <= n; i++)
        sum += (long)i * i;
    return sum + 100 * 100;
}

static int join_in_task(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    /* Through blitz_runtime_run: the final state is copied back. */
    spawn_parent s;
    memset(&s, 0, sizeof s);
    s.n = 16;
    CHECK_OK(blitz_runtime_run(rt, spawn_parent_poll, &s, sizeof s));
    CHECK_EQ(s.sum, spawn_parent_expect(16));
    CHECK_EQ(s.statuses_ok, 16);
    CHECK_EQ(s.early_join_ready, 1);
    CHECK_EQ(s.blitz__resume, -1);
    CHECK_GE(s.polls, 2);

    /* Through spawn + blitz_join_blocking, several parents at once. */
    enum { P = 8 };
    blitz_task *h[P];
    for (int i = 0; i < P; i++) {
        spawn_parent q;
        memset(&q, 0, sizeof q);
        q.n = 1 + i;
        CHECK_OK(blitz_spawn(rt, spawn_parent_poll, &q, sizeof q, &h[i]));
    }
    for (int i = 0; i < P; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        spawn_parent *q = blitz_task_state(h[i]);
        CHECK_EQ(q->sum, spawn_parent_expect(1 + i));
        CHECK_EQ(q->statuses_ok, 1 + i);
        CHECK_OK(blitz_task_release(&h[i]));
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(join_in_task)

/* blitz_run: a default runtime for one main task, state copied back. */
BLITZ_TEST(blitz_run_main) {
    spawn_parent s;
    memset(&s, 0, sizeof s);
    s.n = 10;
    CHECK_OK(blitz_run(spawn_parent_poll, &s, sizeof s));
    CHECK_EQ(s.sum, spawn_parent_expect(10));
    CHECK_EQ(s.statuses_ok, 10);
    CHECK_NULL(blitz_runtime_current());
    /* Again: each call has its own runtime. */
    memset(&s, 0, sizeof s);
    s.n = 3;
    CHECK_OK(blitz_run(spawn_parent_poll, &s, sizeof s));
    CHECK_EQ(s.sum, spawn_parent_expect(3));
    return 0;
}

/* blitz_runtime_run copies back what the task wrote on its last poll, and
 * the runtime can run again afterwards. */
typedef struct {
    BLITZ_CORO;
    int step;
    int trail[8];
    char text[32];
} spawn_steps;

static blitz_poll spawn_steps_poll(blitz_cx *cx, void *p) {
    spawn_steps *s = p;
    BLITZ_BEGIN(s);
    for (s->step = 0; s->step < 8; s->step++) {
        s->trail[s->step] = s->step * 10 + 1;
        BLITZ_YIELD(s, cx);
    }
    snprintf(s->text, sizeof s->text, "done after %d", s->step);
    BLITZ_END(s);
}

static int runtime_run_copies_back(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    for (int round = 0; round < 3; round++) {
        spawn_steps s;
        memset(&s, 0, sizeof s);
        CHECK_OK(blitz_runtime_run(rt, spawn_steps_poll, &s, sizeof s));
        CHECK_EQ(s.step, 8);
        for (int i = 0; i < 8; i++)
            CHECK_EQ(s.trail[i], i * 10 + 1);
        CHECK(strcmp(s.text, "done after 8") == 0);
        CHECK_EQ(s.blitz__resume, -1);
    }
    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.total_spawned, 3);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(runtime_run_copies_back)

/* ---- every task exactly once -------------------------------------------- */

typedef struct {
    uint8_t *slots;
    atomic_long *done;
    long idx;
} spawn_slot;

static blitz_poll spawn_slot_poll(blitz_cx *cx, void *p) {
    (void)cx;
    spawn_slot *s = p;
    s->slots[s->idx]++;
    atomic_fetch_add_explicit(s->done, 1, memory_order_release);
    return BLITZ_READY;
}

static void spawn_check_slots(const uint8_t *slots, long n) {
    long zero = 0, more = 0;
    for (long i = 0; i < n; i++) {
        zero += slots[i] == 0;
        more += slots[i] > 1;
    }
    CHECK_BASE(zero == 0 && more == 0, "%ld tasks never ran, %ld ran more than once", zero, more);
}

/* 1,000,000 detached tasks spawned from the main thread (the global-queue
 * path), each marking its own slot. */
BLITZ_TEST(million_tasks_external_mt2) {
    long n = test_scaled(1000000);
    uint8_t *slots = calloc((size_t)n, 1);
    CHECK_NOT_NULL(slots);
    atomic_long done = 0;
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    for (long i = 0; i < n; i++) {
        spawn_slot s = {slots, &done, i};
        CHECK_OK(blitz_spawn(rt, spawn_slot_poll, &s, sizeof s, NULL));
    }
    TU_WAIT_GE(&done, n, 60.0);
    spawn_check_slots(slots, n);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_EQ(tu_ldl(&done), n);
    spawn_check_slots(slots, n);
    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.total_spawned, n);
    CHECK_EQ(st.total_polled, n);
    CHECK_EQ(st.tasks_alive, 0);
    CHECK_OK(blitz_runtime_free(rt));
    free(slots);
    return 0;
}

/* The same from inside the runtime: a task spawns them (the LIFO slot and
 * local-queue path, with overflow into the global queue), in rounds with a
 * yield between rounds. */
typedef struct {
    BLITZ_CORO;
    uint8_t *slots;
    atomic_long *done;
    long n, next;
} spawn_spawner;

static blitz_poll spawn_spawner_poll(blitz_cx *cx, void *p) {
    spawn_spawner *s = p;
    BLITZ_BEGIN(s);
    while (s->next < s->n) {
        for (int k = 0; k < 1000 && s->next < s->n; k++, s->next++) {
            spawn_slot c = {s->slots, s->done, s->next};
            CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), spawn_slot_poll, &c, sizeof c, NULL));
        }
        BLITZ_YIELD(s, cx);
    }
    BLITZ_END(s);
}

static int million_tasks_internal(tu_flavor f) {
    long n = test_scaled(f.flavor == BLITZ_CURRENT_THREAD ? 200000 : 1000000);
    uint8_t *slots = calloc((size_t)n, 1);
    CHECK_NOT_NULL(slots);
    atomic_long done = 0;
    blitz_runtime *rt = tu_rt_new(f);
    spawn_spawner s;
    memset(&s, 0, sizeof s);
    s.slots = slots;
    s.done = &done;
    s.n = n;
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn(rt, spawn_spawner_poll, &s, sizeof s, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_EQ(((spawn_spawner *)blitz_task_state(h))->next, n);
    CHECK_OK(blitz_task_release(&h));
    if (f.flavor == BLITZ_CURRENT_THREAD) {
        /* Drive the rest: a task that yields until all have run. */
        tu_until u = {0, &done, n};
        CHECK_OK(blitz_runtime_run(rt, tu_until_poll, &u, sizeof u));
    }
    TU_WAIT_GE(&done, n, 60.0);
    spawn_check_slots(slots, n);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_EQ(tu_ldl(&done), n);
    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_GE(st.total_spawned, n + 1);
    CHECK_EQ(st.tasks_alive, 0);
    CHECK_OK(blitz_runtime_free(rt));
    free(slots);
    return 0;
}
BLITZ_TEST(million_tasks_internal_mt2) {
    return million_tasks_internal(TU_MT2);
}
BLITZ_TEST(million_tasks_internal_mt4) {
    return million_tasks_internal(TU_MT4);
}
BLITZ_TEST(many_tasks_internal_ct) {
    return million_tasks_internal(TU_CT);
}

/* Tasks with handles, joined from the main thread with blitz_join_blocking in
 * batches. */
static int many_tasks_joined(tu_flavor f) {
    long n = test_scaled(200000);
    enum { BATCH = 4096 };
    uint8_t *slots = calloc((size_t)n, 1);
    blitz_task **h = calloc(BATCH, sizeof *h);
    CHECK(slots && h);
    atomic_long done = 0;
    blitz_runtime *rt = tu_rt_new(f);
    for (long base = 0; base < n; base += BATCH) {
        long m = n - base < BATCH ? n - base : BATCH;
        for (long i = 0; i < m; i++) {
            spawn_slot s = {slots, &done, base + i};
            CHECK_OK(blitz_spawn(rt, spawn_slot_poll, &s, sizeof s, &h[i]));
        }
        for (long i = m - 1; i >= 0; i--) {
            CHECK_OK(blitz_join_blocking(h[i]));
            CHECK_EQ(((spawn_slot *)blitz_task_state(h[i]))->idx, base + i);
            CHECK_EQ(slots[base + i], 1);
            CHECK_OK(blitz_task_release(&h[i]));
        }
    }
    CHECK_EQ(tu_ldl(&done), n);
    spawn_check_slots(slots, n);
    CHECK_OK(blitz_runtime_free(rt));
    free(slots);
    free(h);
    return 0;
}
TU_FLAVOR_TESTS(many_tasks_joined)

/* Several plain threads spawn at once. */
typedef struct {
    blitz_runtime *rt;
    uint8_t *slots;
    atomic_long *done;
    long first, count;
} spawn_thread_arg;

static void *spawn_thread_main(void *p) {
    spawn_thread_arg *a = p;
    for (long i = a->first; i < a->first + a->count; i++) {
        spawn_slot s = {a->slots, a->done, i};
        CHECK_OK(blitz_spawn(a->rt, spawn_slot_poll, &s, sizeof s, NULL));
    }
    return NULL;
}

static int external_spawners(tu_flavor f) {
    enum { T = 4 };
    long per = test_scaled(100000);
    long n = per * T;
    uint8_t *slots = calloc((size_t)n, 1);
    CHECK_NOT_NULL(slots);
    atomic_long done = 0;
    blitz_runtime *rt = tu_rt_new(f);
    tu_thread th[T];
    spawn_thread_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (spawn_thread_arg){rt, slots, &done, per * i, per};
        tu_thread_start(&th[i], spawn_thread_main, &args[i]);
    }
    if (f.flavor == BLITZ_CURRENT_THREAD) {
        /* Drive the runtime while the threads spawn into it. */
        tu_until u = {0, &done, n};
        CHECK_OK(blitz_runtime_run(rt, tu_until_poll, &u, sizeof u));
    }
    for (int i = 0; i < T; i++)
        tu_thread_join(&th[i]);
    TU_WAIT_GE(&done, n, 60.0);
    spawn_check_slots(slots, n);
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(tu_ldl(&done), n);
    free(slots);
    return 0;
}
TU_FLAVOR_TESTS(external_spawners)

/* ---- fan-out tree: spawns from inside tasks ------------------------------- */

#define SPAWN_TREE_B 5
typedef struct {
    BLITZ_CORO;
    int depth, i;
    long leaves;
    atomic_long *nodes;
    blitz_task *kids[SPAWN_TREE_B];
} spawn_tree;

static blitz_poll spawn_tree_poll(blitz_cx *cx, void *p) {
    spawn_tree *s = p;
    BLITZ_BEGIN(s);
    atomic_fetch_add(s->nodes, 1);
    if (s->depth == 0) {
        s->leaves = 1;
        BLITZ_RETURN(s);
    }
    for (s->i = 0; s->i < SPAWN_TREE_B; s->i++) {
        spawn_tree c;
        memset(&c, 0, sizeof c);
        c.depth = s->depth - 1;
        c.nodes = s->nodes;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), spawn_tree_poll, &c, sizeof c, &s->kids[s->i]));
    }
    for (s->i = 0; s->i < SPAWN_TREE_B; s->i++) {
        BLITZ_AWAIT(s, blitz_join(cx, s->kids[s->i]));
        CHECK_OK(blitz_task_status(s->kids[s->i]));
        s->leaves += ((spawn_tree *)blitz_task_state(s->kids[s->i]))->leaves;
        CHECK_OK(blitz_task_release(&s->kids[s->i]));
    }
    BLITZ_END(s);
}

static int fanout_tree(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    int depth = test_scaled(8) >= 8 ? 6 : 5;
    long leaves = 1, nodes = 0;
    for (int d = 0; d <= depth; d++) {
        nodes += leaves;
        if (d < depth)
            leaves *= SPAWN_TREE_B;
    }
    atomic_long counted = 0;
    spawn_tree root;
    memset(&root, 0, sizeof root);
    root.depth = depth;
    root.nodes = &counted;
    CHECK_OK(blitz_runtime_run(rt, spawn_tree_poll, &root, sizeof root));
    CHECK_EQ(root.leaves, leaves);
    CHECK_EQ(tu_ldl(&counted), nodes);
    CHECK_OK(blitz_runtime_shutdown(rt));
    blitz_stats st;
    CHECK_OK(blitz_runtime_stats(rt, &st));
    CHECK_EQ(st.total_spawned, nodes);
    CHECK_EQ(st.tasks_alive, 0);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(fanout_tree)

/* ---- blitz_join_blocking inside a task (the worker helps) ---------------------- */

typedef struct {
    int depth;
    long result;
    atomic_int *finished;
} spawn_wait_arg;

static void spawn_wait_fn(void *p) {
    spawn_wait_arg *a = p;
    if (a->depth == 0) {
        a->result = 1;
        atomic_fetch_add(a->finished, 1);
        return;
    }
    blitz_runtime *rt = blitz_runtime_current();
    CHECK_NOT_NULL(rt);
    spawn_wait_arg kids[3];
    blitz_task *h[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = (spawn_wait_arg){a->depth - 1, 0, a->finished};
        CHECK_OK(blitz_spawn_fn(rt, spawn_wait_fn, &kids[i], &h[i]));
    }
    a->result = 1;
    for (int i = 0; i < 3; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        a->result += kids[i].result;
        CHECK_OK(blitz_task_release(&h[i]));
    }
    atomic_fetch_add(a->finished, 1);
}

static int task_wait_inside_task(uint32_t workers) {
    blitz_runtime *rt = tu_rt_new((tu_flavor){BLITZ_MULTI_THREAD, workers});
    atomic_int finished = 0;
    spawn_wait_arg root = {3, 0, &finished};
    blitz_task *h = NULL;
    CHECK_OK(blitz_spawn_fn(rt, spawn_wait_fn, &root, &h));
    /* Not blitz_join_blocking: the workers alone must get this done. */
    TU_WAIT_GE(&finished, 1 + 3 + 9 + 27, 10.0);
    CHECK_OK(blitz_join_blocking(h));
    CHECK_EQ(root.result, 1 + 3 + 9 + 27);
    CHECK_OK(blitz_task_release(&h));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
BLITZ_TEST(task_wait_inside_task_mt1) {
    return task_wait_inside_task(1);
}
BLITZ_TEST(task_wait_inside_task_mt2) {
    return task_wait_inside_task(2);
}

/* blitz_spawn_fn runs the function exactly once. */
static void spawn_fn_count(void *p) {
    atomic_fetch_add((atomic_long *)p, 1);
}

static int spawn_fn_once(tu_flavor f) {
    blitz_runtime *rt = tu_rt_new(f);
    enum { N = 1000 };
    atomic_long calls = 0;
    blitz_task *h = NULL;
    for (int i = 0; i < N; i++) {
        if (i % 2) {
            CHECK_OK(blitz_spawn_fn(rt, spawn_fn_count, &calls, NULL));
        } else {
            CHECK_OK(blitz_spawn_fn(rt, spawn_fn_count, &calls, &h));
            CHECK_OK(blitz_task_release(&h));
        }
    }
    CHECK_OK(blitz_spawn_fn(rt, spawn_fn_count, &calls, &h));
    CHECK_OK(blitz_join_blocking(h));
    CHECK_OK(blitz_task_release(&h));
    if (f.flavor == BLITZ_CURRENT_THREAD) {
        tu_until u = {0, &calls, N + 1};
        CHECK_OK(blitz_runtime_run(rt, tu_until_poll, &u, sizeof u));
    }
    TU_WAIT_GE(&calls, N + 1, 10.0);
    CHECK_OK(blitz_runtime_shutdown(rt));
    CHECK_EQ(tu_ldl(&calls), N + 1);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
TU_FLAVOR_TESTS(spawn_fn_once)

/* A task spawned into a worker's LIFO slot by a task that then computes
 * (here: waits on a flag only the spawned task sets) runs on the other
 * worker, which was asleep: the slot's task is rescued, not left until the
 * spawner's poll ends. */
typedef struct {
    atomic_int *flag;
    atomic_int *worker;
} lifo_child;

static blitz_poll lifo_child_poll(blitz_cx *cx, void *p) {
    lifo_child *c = p;
    atomic_store(c->worker, blitz_cx_worker(cx));
    atomic_store(c->flag, 1);
    return BLITZ_READY;
}

typedef struct {
    atomic_int *flag, *child_worker, *done, *saw_flag;
    int worker;
} lifo_spawner;

static blitz_poll lifo_spawner_poll(blitz_cx *cx, void *p) {
    lifo_spawner *s = p;
    s->worker = blitz_cx_worker(cx);
    lifo_child c = {s->flag, s->child_worker};
    if (blitz_spawn(blitz_cx_runtime(cx), lifo_child_poll, &c, sizeof c, NULL) == BLITZ_OK) {
        double deadline = tu_now() + 20.0 * tu_timeout_mult();
        while (!atomic_load(s->flag) && tu_now() < deadline)
            sched_yield();
    }
    atomic_store(s->saw_flag, atomic_load(s->flag));
    atomic_store(s->done, 1);
    return BLITZ_READY;
}

BLITZ_TEST(lifo_slot_task_rescued_mt2) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    for (int round = 0; round < 3; round++) {
        atomic_int flag = 0, child_worker = -1, done = 0, saw_flag = 0;
        lifo_spawner s = {&flag, &child_worker, &done, &saw_flag, -1};
        blitz_task *h = NULL;
        /* Not joined from here: a joining thread may run the spawner
         * itself, and then its child goes to the global queue. */
        CHECK_OK(blitz_spawn(rt, lifo_spawner_poll, &s, sizeof s, &h));
        TU_WAIT_UNTIL(tu_ldi(&done), 30.0, 1);
        CHECK_EQ(tu_ldi(&saw_flag), 1);
        CHECK_OK(blitz_join_blocking(h));
        lifo_spawner *out = blitz_task_state(h);
        CHECK_NOT_NULL(out);
        CHECK_GE(out->worker, 0);
        CHECK_NE(tu_ldi(&child_worker), out->worker);
        CHECK_OK(blitz_task_release(&h));
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* ---- several runtimes at once ------------------------------------------- */

typedef struct {
    blitz_runtime *seen_cx, *seen_current;
    int value, out;
} spawn_remote;

static blitz_poll spawn_remote_poll(blitz_cx *cx, void *p) {
    spawn_remote *s = p;
    s->seen_cx = blitz_cx_runtime(cx);
    s->seen_current = blitz_runtime_current();
    s->out = s->value + 1000;
    return BLITZ_READY;
}

/* A task of runtime A spawns tasks on runtime B and joins them. */
typedef struct {
    BLITZ_CORO;
    blitz_runtime *other;
    int i, n;
    long sum;
    int right_rt; /* children saw runtime B, we still see A */
    blitz_task *kids[32];
} spawn_cross;

static blitz_poll spawn_cross_poll(blitz_cx *cx, void *p) {
    spawn_cross *s = p;
    BLITZ_BEGIN(s);
    for (s->i = 0; s->i < s->n; s->i++) {
        spawn_remote r = {NULL, NULL, s->i, 0};
        CHECK_OK(blitz_spawn(s->other, spawn_remote_poll, &r, sizeof r, &s->kids[s->i]));
    }
    for (s->i = 0; s->i < s->n; s->i++) {
        BLITZ_AWAIT(s, blitz_join(cx, s->kids[s->i]));
        spawn_remote *r = blitz_task_state(s->kids[s->i]);
        CHECK_NOT_NULL(r);
        s->sum += r->out;
        s->right_rt += r->seen_cx == s->other && r->seen_current == s->other &&
                       blitz_runtime_current() == blitz_cx_runtime(cx) &&
                       blitz_cx_runtime(cx) != s->other;
        CHECK_OK(blitz_task_release(&s->kids[s->i]));
    }
    BLITZ_END(s);
}

static long spawn_cross_expect(int n) {
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += i + 1000;
    return sum;
}

static int cross_runtime(tu_flavor fa, blitz_runtime *b) {
    blitz_runtime *a = tu_rt_new(fa);
    /* One main task through run, and several at once. */
    spawn_cross s;
    memset(&s, 0, sizeof s);
    s.other = b;
    s.n = 32;
    CHECK_OK(blitz_runtime_run(a, spawn_cross_poll, &s, sizeof s));
    CHECK_EQ(s.sum, spawn_cross_expect(32));
    CHECK_EQ(s.right_rt, 32);
    enum { P = 6 };
    blitz_task *h[P];
    for (int i = 0; i < P; i++) {
        memset(&s, 0, sizeof s);
        s.other = b;
        s.n = 5 + i;
        CHECK_OK(blitz_spawn(a, spawn_cross_poll, &s, sizeof s, &h[i]));
    }
    for (int i = 0; i < P; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        spawn_cross *r = blitz_task_state(h[i]);
        CHECK_EQ(r->sum, spawn_cross_expect(5 + i));
        CHECK_EQ(r->right_rt, 5 + i);
        CHECK_OK(blitz_task_release(&h[i]));
    }
    CHECK_OK(blitz_runtime_free(a));
    return 0;
}

BLITZ_TEST(runtimes_mt_awaits_mt) {
    blitz_runtime *b = tu_rt_new(TU_MT2);
    cross_runtime(TU_MT2, b);
    CHECK_OK(blitz_runtime_free(b));
    return 0;
}

BLITZ_TEST(runtimes_ct_awaits_mt) {
    blitz_runtime *b = tu_rt_new(TU_MT2);
    cross_runtime(TU_CT, b);
    CHECK_OK(blitz_runtime_free(b));
    return 0;
}

/* Runtime B is current-thread, driven by a helper thread that waits (in
 * blitz_runtime_run) on a task of B that sleeps until a gate opens: the
 * driver parks, and spawns from A's workers must wake it. */
typedef struct {
    BLITZ_CORO;
    tu_gate *stop;
} spawn_keeper;

static blitz_poll spawn_keeper_poll(blitz_cx *cx, void *p) {
    spawn_keeper *s = p;
    BLITZ_BEGIN(s);
    BLITZ_AWAIT(s, tu_gate_wait(cx, s->stop));
    BLITZ_END(s);
}

typedef struct {
    blitz_runtime *rt;
    tu_gate *stop;
    int rc;
} spawn_driver_arg;

static void *spawn_driver_main(void *p) {
    spawn_driver_arg *a = p;
    spawn_keeper k = {0, a->stop};
    a->rc = blitz_runtime_run(a->rt, spawn_keeper_poll, &k, sizeof k);
    return NULL;
}

BLITZ_TEST(runtimes_mt_awaits_ct) {
    blitz_runtime *b = tu_rt_new(TU_CT);
    tu_gate stop;
    tu_gate_init(&stop);
    spawn_driver_arg d = {b, &stop, -1};
    tu_thread th;
    tu_thread_start(&th, spawn_driver_main, &d);
    cross_runtime(TU_MT2, b);
    tu_gate_open(&stop);
    tu_thread_join(&th);
    CHECK_OK(d.rc);
    tu_gate_destroy(&stop);
    CHECK_OK(blitz_runtime_free(b));
    return 0;
}

/* Four runtimes in a ring, each main task awaiting a task of the next. */
BLITZ_TEST(runtimes_ring) {
    enum { R = 4 };
    blitz_runtime *rt[R];
    rt[0] = tu_rt_new(TU_MT2);
    rt[1] = tu_rt_new((tu_flavor){BLITZ_MULTI_THREAD, 1});
    rt[2] = tu_rt_new(TU_MT2);
    rt[3] = tu_rt_new((tu_flavor){BLITZ_MULTI_THREAD, 3});
    blitz_task *h[R];
    for (int i = 0; i < R; i++) {
        spawn_cross s;
        memset(&s, 0, sizeof s);
        s.other = rt[(i + 1) % R];
        s.n = 20;
        CHECK_OK(blitz_spawn(rt[i], spawn_cross_poll, &s, sizeof s, &h[i]));
    }
    for (int i = 0; i < R; i++) {
        CHECK_OK(blitz_join_blocking(h[i]));
        spawn_cross *r = blitz_task_state(h[i]);
        CHECK_EQ(r->sum, spawn_cross_expect(20));
        CHECK_EQ(r->right_rt, 20);
        CHECK_OK(blitz_task_release(&h[i]));
    }
    for (int i = 0; i < R; i++)
        CHECK_OK(blitz_runtime_free(rt[i]));
    return 0;
}
