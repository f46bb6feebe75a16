/* I/O across threads: sockets used by threads that are not the runtime's
 * workers. With io_uring each worker submits to its own ring and threads
 * that are not workers go through the shared ring, whose completions
 * reach the workers through an eventfd; a close from a plain thread
 * cancels ops that sit in the workers' rings. Every case runs on every
 * backend (tests/list_io.h). Uses the harness of tests/test_io.c. */

/* ---- a socket of one runtime used by the tasks of another ------------------------------- */

#define IO_FOREIGN_MSG 8 /* the round number, int64_t */

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    long rounds, done;
    int serve; /* 1: receive then answer; 0: send then wait for the answer */
    char buf[IO_FOREIGN_MSG];
} io_foreign_peer;

static blitz_poll io_foreign_peer_poll(blitz_cx *cx, void *p) {
    io_foreign_peer *f = p;
    BLITZ_BEGIN(f);
    for (f->done = 0; f->done < f->rounds; f->done++) {
        if (!f->serve) {
            {
                int64_t n = f->done;
                memcpy(f->buf, &n, sizeof n);
            }
            BLITZ_AWAIT(f, blitz_sock_send_all(cx, &f->op, f->sock, f->buf, IO_FOREIGN_MSG));
            CHECK_EQ(f->op.result, IO_FOREIGN_MSG);
        }
        /* One message in flight at a time: it arrives whole. */
        BLITZ_AWAIT(f, blitz_sock_recv(cx, &f->op, f->sock, f->buf, IO_FOREIGN_MSG));
        CHECK_EQ(f->op.result, IO_FOREIGN_MSG);
        {
            int64_t got;
            memcpy(&got, f->buf, sizeof got);
            CHECK_EQ(got, f->done);
        }
        if (f->serve) {
            BLITZ_AWAIT(f, blitz_sock_send_all(cx, &f->op, f->sock, f->buf, IO_FOREIGN_MSG));
            CHECK_EQ(f->op.result, IO_FOREIGN_MSG);
        }
    }
    BLITZ_END(f);
}

static int io_foreign_runtime(blitz_backend b) {
    blitz_runtime *owner = tu_io_rt_new(b, TU_MT2);
    if (!owner)
        return 0;
    blitz_runtime *user = tu_io_rt_new(b, TU_MT2);
    CHECK_NOT_NULL(user);
    blitz_socket *x = NULL, *y = NULL;
    CHECK_OK(blitz_unix_pair(owner, 1, &x, &y));
    io_foreign_peer server, client;
    memset(&server, 0, sizeof server);
    memset(&client, 0, sizeof client);
    server.sock = x; /* owner's socket, polled by the other runtime's workers */
    server.serve = 1;
    client.sock = y;
    server.rounds = client.rounds = test_scaled(300);
    blitz_task *ts, *tc;
    CHECK_OK(blitz_spawn(user, io_foreign_peer_poll, &server, sizeof server, &ts));
    /* Let the server's first receive wait in the kernel before any data. */
    tu_sleep_ms(20);
    CHECK_OK(blitz_spawn(owner, io_foreign_peer_poll, &client, sizeof client, &tc));
    CHECK_OK(blitz_join_blocking(tc));
    CHECK_OK(blitz_join_blocking(ts));
    CHECK_EQ(((io_foreign_peer *)blitz_task_state(ts))->done, server.rounds);
    CHECK_EQ(((io_foreign_peer *)blitz_task_state(tc))->done, client.rounds);
    blitz_task_release(&ts);
    blitz_task_release(&tc);
    CHECK_OK(blitz_runtime_free(user));
    blitz_sock_close(x);
    blitz_sock_close(y);
    CHECK_OK(blitz_runtime_free(owner));
    return 0;
}
IO_BACKEND_TESTS(io_foreign_runtime)

/* ---- a plain thread closes sockets whose receives wait on the workers --------------------- */

#define IO_CLOSE_TASKS 16

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    _Atomic(blitz_io *) *where; /* tells the test where the op lives */
    char buf[64];
} io_close_waiter;

static blitz_poll io_close_waiter_poll(blitz_cx *cx, void *p) {
    io_close_waiter *w = p;
    BLITZ_BEGIN(w);
    atomic_store(w->where, &w->op);
    BLITZ_AWAIT(w, blitz_sock_recv(cx, &w->op, w->sock, w->buf, sizeof w->buf));
    BLITZ_END(w);
}

static int io_close_from_thread(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    for (int round = 0; round < test_scaled(10); round++) {
        blitz_socket *mine[IO_CLOSE_TASKS], *peer[IO_CLOSE_TASKS];
        blitz_task *t[IO_CLOSE_TASKS];
        _Atomic(blitz_io *) ops[IO_CLOSE_TASKS];
        for (int i = 0; i < IO_CLOSE_TASKS; i++) {
            atomic_init(&ops[i], NULL);
            CHECK_OK(blitz_unix_pair(rt, 1, &mine[i], &peer[i]));
            io_close_waiter w;
            memset(&w, 0, sizeof w);
            w.sock = mine[i];
            w.where = &ops[i];
            CHECK_OK(blitz_spawn(rt, io_close_waiter_poll, &w, sizeof w, &t[i]));
        }
        /* Close only receives that are pending (closing a socket an op is
         * about to start on is the caller's race). Odd rounds close at
         * once (io_uring: the SQE may still wait in the worker's batch),
         * even ones after the receives had time to wait in the kernel. */
        for (int i = 0; i < IO_CLOSE_TASKS; i++)
            while (!atomic_load(&ops[i]) || !blitz_io_pending(atomic_load(&ops[i])))
                tu_sleep_ms(1);
        if (round % 2 == 0)
            tu_sleep_ms(5);
        for (int i = 0; i < IO_CLOSE_TASKS; i++)
            CHECK_OK(blitz_sock_close(mine[i]));
        for (int i = 0; i < IO_CLOSE_TASKS; i++) {
            CHECK_OK(blitz_join_blocking(t[i]));
            CHECK_EQ(((io_close_waiter *)blitz_task_state(t[i]))->op.result, BLITZ_ECLOSED);
            blitz_task_release(&t[i]);
            blitz_sock_close(peer[i]);
        }
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_close_from_thread)

/* ---- a plain thread cancels tasks whose receives wait in the kernel ---------------------- */

/* blitz_task_cancel from a thread that is not the runtime's: the task ends
 * cancelled, its joiner (a task) wakes, the kernel lets go of the receive
 * (on io_uring the cancel's submission may come after the joiner's wake),
 * so the task's block is freed, and the socket keeps its data for the
 * next receive. */

#define IO_CANCEL_ROUNDS 20

typedef struct {
    BLITZ_CORO;
    blitz_task *target;
    int status;
} io_cancel_joiner;

static blitz_poll io_cancel_joiner_poll(blitz_cx *cx, void *p) {
    io_cancel_joiner *j = p;
    BLITZ_BEGIN(j);
    BLITZ_AWAIT(j, blitz_join(cx, j->target));
    j->status = blitz_task_status(j->target);
    BLITZ_END(j);
}

typedef struct {
    _Atomic(blitz_io *) op;
    blitz_task *target;
    int wait_ms;
} io_cancel_job;

static void *io_cancel_thread(void *p) {
    io_cancel_job *job = p;
    TU_WAIT_UNTIL(atomic_load(&job->op) && blitz_io_pending(atomic_load(&job->op)), 10, 1);
    if (job->wait_ms)
        tu_sleep_ms(job->wait_ms); /* the receive reaches the kernel, the owner parks */
    CHECK_OK(blitz_task_cancel(job->target));
    return NULL;
}

static uint64_t io_tasks_live(blitz_runtime *rt) {
    blitz_metrics m;
    CHECK_OK(blitz_metrics_get(rt, &m));
    return m.tasks_live;
}

/* Waits (driving the runtime, which a current-thread one needs to reap)
 * until it is the runtime's only task. */
typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    double deadline;
} io_cancel_alone;

static blitz_poll io_cancel_alone_poll(blitz_cx *cx, void *p) {
    io_cancel_alone *a = p;
    BLITZ_BEGIN(a);
    while (io_tasks_live(blitz_cx_runtime(cx)) > 1 && tu_now() < a->deadline)
        BLITZ_AWAIT(a, blitz_sleep(cx, &a->timer, BLITZ_MSEC));
    BLITZ_END(a);
}

static int io_cancel_from_thread_on(blitz_backend b, tu_flavor f) {
    blitz_runtime *rt = tu_io_rt_new(b, f);
    if (!rt)
        return 0;
    for (int round = 0; round < test_scaled(IO_CANCEL_ROUNDS); round++) {
        blitz_socket *mine, *peer;
        CHECK_OK(blitz_unix_pair(rt, 1, &mine, &peer));
        io_cancel_job job;
        atomic_init(&job.op, NULL);
        job.wait_ms = round % 2 ? 0 : 2;
        io_close_waiter w;
        memset(&w, 0, sizeof w);
        w.sock = mine;
        w.where = &job.op;
        CHECK_OK(blitz_spawn(rt, io_close_waiter_poll, &w, sizeof w, &job.target));
        io_cancel_joiner j;
        memset(&j, 0, sizeof j);
        j.target = job.target;
        j.status = 1;
        blitz_task *jt;
        CHECK_OK(blitz_spawn(rt, io_cancel_joiner_poll, &j, sizeof j, &jt));
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, io_cancel_thread, &job), 0);
        /* Drives a current-thread runtime while the plain thread cancels. */
        CHECK_OK(blitz_join_blocking(jt));
        CHECK_EQ(pthread_join(th, NULL), 0);
        CHECK_EQ(((io_cancel_joiner *)blitz_task_state(jt))->status, BLITZ_ECANCELED);
        CHECK_EQ(blitz_task_status(job.target), BLITZ_ECANCELED);
        blitz_task_release(&jt);
        blitz_task_release(&job.target);
        /* Both blocks go once the kernel has let go of the receive. */
        io_cancel_alone alone;
        memset(&alone, 0, sizeof alone);
        alone.deadline = tu_now() + 10 * tu_timeout_mult();
        blitz_task *at;
        CHECK_OK(blitz_spawn(rt, io_cancel_alone_poll, &alone, sizeof alone, &at));
        CHECK_OK(blitz_join_blocking(at));
        blitz_task_release(&at);
        TU_WAIT_UNTIL(io_tasks_live(rt) == 0, 10, 1);
        /* The socket still works: the next receive gets what the peer
         * sends. */
        CHECK_EQ(write(blitz_sock_fd(peer), "x", 1), 1);
        io_close_waiter w2;
        memset(&w2, 0, sizeof w2);
        _Atomic(blitz_io *) where2;
        atomic_init(&where2, NULL);
        w2.sock = mine;
        w2.where = &where2;
        blitz_task *t2;
        CHECK_OK(blitz_spawn(rt, io_close_waiter_poll, &w2, sizeof w2, &t2));
        CHECK_OK(blitz_join_blocking(t2));
        const io_close_waiter *done = blitz_task_state(t2);
        CHECK_EQ(done->op.result, 1);
        CHECK_EQ(done->buf[0], 'x');
        blitz_task_release(&t2);
        CHECK_OK(blitz_sock_close(mine));
        CHECK_OK(blitz_sock_close(peer));
    }
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

static int io_cancel_from_thread(blitz_backend b) {
    CHECK_OK(io_cancel_from_thread_on(b, TU_CT));
    return io_cancel_from_thread_on(b, TU_MT2);
}
IO_BACKEND_TESTS(io_cancel_from_thread)

/* ---- a plain thread closing sockets whose sends are in progress ------------------------- */

/* A send_all of more than the socket can buffer to a peer that never
 * reads, re-polled every 50 us by a timer, so a close from another thread
 * lands while the task is inside the op: in its system call, in a wait,
 * or re-registering its waker. The op must end with BLITZ_ECLOSED, the
 * socket's memory must outlive the task's use of it (AddressSanitizer),
 * and nothing may hang. */
#define IO_BUSY_SOCKS 16
#define IO_BUSY_BYTES (4u << 20)

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    blitz_io op;
    blitz_timer tick;
    atomic_int *started;
    unsigned char *data;
    long polls;
} io_busy_sender;

static blitz_poll io_busy_sender_poll(blitz_cx *cx, void *p) {
    io_busy_sender *s = p;
    blitz_poll sent = blitz_sock_send_all(cx, &s->op, s->sock, s->data, IO_BUSY_BYTES);
    /* Counted once the op has started: the main thread may close the
     * socket from then on, and a handle is not used after its close. */
    if (s->polls++ == 0)
        atomic_fetch_add(s->started, 1);
    if (sent == BLITZ_READY) {
        blitz_timer_cancel(NULL, &s->tick);
        return BLITZ_READY;
    }
    /* Re-armed whenever it fired: the next poll comes from the timer even
     * while the send waits. */
    while (blitz_sleep(cx, &s->tick, 50 * BLITZ_USEC) == BLITZ_READY) {
    }
    return BLITZ_PENDING;
}

static void io_busy_sender_cancel(void *p) {
    io_busy_sender *s = p;
    blitz_io_cancel(NULL, &s->op);
    blitz_timer_cancel(NULL, &s->tick);
}

static int io_close_busy(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    unsigned char *data = calloc(1, IO_BUSY_BYTES);
    CHECK_NOT_NULL(data);
    unsigned seed = 12345;
    for (int round = 0; round < test_scaled(20); round++) {
        blitz_socket *mine[IO_BUSY_SOCKS];
        int peer[IO_BUSY_SOCKS];
        blitz_task *t[IO_BUSY_SOCKS];
        atomic_int started = 0;
        for (int i = 0; i < IO_BUSY_SOCKS; i++) {
            int sv[2];
            CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
            CHECK_OK(blitz_sock_adopt(rt, sv[0], &mine[i]));
            peer[i] = sv[1];
            io_busy_sender s;
            memset(&s, 0, sizeof s);
            s.sock = mine[i];
            s.started = &started;
            s.data = data;
            blitz_spawn_opts o;
            memset(&o, 0, sizeof o);
            o.poll = io_busy_sender_poll;
            o.state = &s;
            o.size = sizeof s;
            o.cancel = io_busy_sender_cancel;
            CHECK_OK(blitz_spawn_ex(rt, &o, &t[i]));
        }
        /* The op starts on the first poll, before the count moves: from
         * here on every close lands inside a send. */
        TU_WAIT_GE(&started, IO_BUSY_SOCKS, 5);
        seed = seed * 1103515245u + 12345u;
        tu_sleep_ms((int)((seed >> 16) % 4));
        for (int i = 0; i < IO_BUSY_SOCKS; i++)
            CHECK_OK(blitz_sock_close(mine[i]));
        for (int i = 0; i < IO_BUSY_SOCKS; i++) {
            CHECK_OK(blitz_join_blocking(t[i]));
            CHECK_EQ(((io_busy_sender *)blitz_task_state(t[i]))->op.result, BLITZ_ECLOSED);
            blitz_task_release(&t[i]);
            close(peer[i]);
        }
    }
    free(data);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_close_busy)

/* ---- ending connections that their tasks own, from a plain thread ------------------------ */

/* The way the manual gives to end a connection whose task loops over ops:
 * blitz_sock_shutdown(s, 2) from another thread, under the lock of the
 * table the task leaves before it closes (so the handle is open while it
 * is used). Half the connections idle after one round trip (their receive
 * waits: a multishot one on io_uring), the other half have a client that
 * sends and never reads (their task waits in send_all). Every task must
 * leave its loop, and every client must then see the end of stream of the
 * closed socket. */
#define IO_SHUT_CONNS 16

typedef struct {
    pthread_mutex_t lock;
    blitz_socket *open[IO_SHUT_CONNS];
} io_shut_table;

typedef struct {
    BLITZ_CORO;
    blitz_socket *sock;
    io_shut_table *table;
    int index;
    blitz_io op;
    int64_t recv_result, send_result;
    char buf[4096];
} io_shut_server;

static blitz_poll io_shut_server_poll(blitz_cx *cx, void *p) {
    io_shut_server *s = p;
    BLITZ_BEGIN(s);
    s->send_result = 1;
    for (;;) {
        BLITZ_AWAIT(s, blitz_sock_recv(cx, &s->op, s->sock, s->buf, sizeof s->buf));
        s->recv_result = s->op.result;
        if (s->op.result <= 0)
            break;
        BLITZ_AWAIT(s, blitz_sock_send_all(cx, &s->op, s->sock, s->buf, (size_t)s->op.result));
        s->send_result = s->op.result;
        if (s->op.result < 0)
            break;
    }
    pthread_mutex_lock(&s->table->lock);
    s->table->open[s->index] = NULL;
    pthread_mutex_unlock(&s->table->lock);
    blitz_sock_close(s->sock);
    BLITZ_END(s);
}

static int io_shutdown_from_thread(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    struct sockaddr_in sa;
    int lfd = tu_plain_listener(IO_SHUT_CONNS, 0, &sa);
    int client[IO_SHUT_CONNS];
    io_shut_table table;
    pthread_mutex_init(&table.lock, NULL);
    blitz_task *t[IO_SHUT_CONNS];
    static char chunk[65536];
    for (int i = 0; i < IO_SHUT_CONNS; i++) {
        client[i] = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(client[i] >= 0);
        CHECK_EQ(connect(client[i], (struct sockaddr *)&sa, sizeof sa), 0);
        int fd = accept(lfd, NULL, NULL);
        CHECK(fd >= 0);
        io_shut_server st;
        memset(&st, 0, sizeof st);
        CHECK_OK(blitz_sock_adopt(rt, fd, &st.sock));
        st.table = &table;
        st.index = i;
        table.open[i] = st.sock;
        CHECK_OK(blitz_spawn(rt, io_shut_server_poll, &st, sizeof st, &t[i]));
        if (i % 2 == 0) {
            /* One round trip, then idle. */
            CHECK_EQ(send(client[i], "ping", 4, 0), 4);
            char got[4];
            CHECK_EQ(recv(client[i], got, 4, MSG_WAITALL), 4);
            CHECK_EQ(memcmp(got, "ping", 4), 0);
        } else {
            /* Fill both directions: the echo backs up until the task's
             * send_all waits and then the client's send does. */
            CHECK_EQ(fcntl(client[i], F_SETFL, O_NONBLOCK), 0);
            double deadline = tu_now() + 10 * tu_timeout_mult();
            int full_rounds = 0;
            while (full_rounds < 20) {
                CHECK(tu_now() < deadline);
                if (send(client[i], chunk, sizeof chunk, MSG_NOSIGNAL) < 0) {
                    CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
                    full_rounds++;
                    tu_sleep_ms(1);
                } else {
                    full_rounds = 0;
                }
            }
        }
    }
    tu_sleep_ms(10); /* the idle receives are back in the kernel */
    pthread_mutex_lock(&table.lock);
    for (int i = 0; i < IO_SHUT_CONNS; i++) {
        CHECK_NOT_NULL(table.open[i]); /* nothing else ends them */
        CHECK_OK(blitz_sock_shutdown(table.open[i], 2));
    }
    pthread_mutex_unlock(&table.lock);
    for (int i = 0; i < IO_SHUT_CONNS; i++) {
        CHECK_OK(blitz_join_blocking(t[i]));
        io_shut_server *st = blitz_task_state(t[i]);
        if (i % 2 == 0) {
            CHECK_EQ(st->recv_result, 0);
            CHECK_EQ(st->send_result, 4);
        } else {
            CHECK_LT(st->send_result, 0);
        }
        blitz_task_release(&t[i]);
    }
    /* The tasks closed their sockets: each client reads (the rest of its
     * echo, then) the end of stream. */
    for (int i = 0; i < IO_SHUT_CONNS; i++) {
        CHECK_EQ(fcntl(client[i], F_SETFL, 0), 0);
        ssize_t r;
        while ((r = recv(client[i], chunk, sizeof chunk, 0)) > 0) {
        }
        CHECK(r == 0 || (r < 0 && errno == ECONNRESET));
        close(client[i]);
    }
    close(lfd);
    pthread_mutex_destroy(&table.lock);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
IO_BACKEND_TESTS(io_shutdown_from_thread)

/* ---- the thread that created an io_uring runtime is left alone ------------------------- */

/* The kernel runs a poll's task work on the thread that submitted it, even
 * when that thread sleeps elsewhere. Each worker arms its own ring's
 * polls, so waking parked workers (here: 200 spawns from a plain thread,
 * 0.5 ms apart) never wakes the thread that created the runtime, asleep
 * in one long nanosleep meanwhile. */
typedef struct {
    blitz_runtime *rt;
    atomic_int ran;
} io_creator_spawner;

static blitz_poll io_creator_noop(blitz_cx *cx, void *p) {
    (void)cx;
    atomic_fetch_add(*(atomic_int **)p, 1);
    return BLITZ_READY;
}

__attribute__((unused)) static void *io_creator_spawn_thread(void *p) {
    io_creator_spawner *sp = p;
    atomic_int *ran = &sp->ran;
    for (int i = 0; i < 200; i++) {
        CHECK_OK(blitz_spawn(sp->rt, io_creator_noop, &ran, sizeof ran, NULL));
        usleep(500);
    }
    return NULL;
}

BLITZ_TEST(io_uring_creator_not_woken) {
#if BLITZ__LINUX
    blitz_runtime *rt = tu_io_rt_new(BLITZ_BACKEND_IO_URING, TU_MT2);
    if (!rt)
        return 0;
    io_creator_spawner sp;
    sp.rt = rt;
    atomic_init(&sp.ran, 0);
    /* Start the workers and let them park in their rings. */
    atomic_int *ran = &sp.ran;
    CHECK_OK(blitz_spawn(rt, io_creator_noop, &ran, sizeof ran, NULL));
    TU_WAIT_GE(&sp.ran, 1, 5);
    tu_sleep_ms(20);
    struct rusage before, after;
    CHECK_EQ(getrusage(RUSAGE_THREAD, &before), 0);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, io_creator_spawn_thread, &sp), 0);
    struct timespec ts = {0, 300 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    CHECK_EQ(getrusage(RUSAGE_THREAD, &after), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    TU_WAIT_GE(&sp.ran, 201, 5);
    long woken = after.ru_nvcsw - before.ru_nvcsw;
    printf("# the creating thread slept %ld times while 200 spawns woke the workers\n", woken);
    CHECK_LT(woken, 20);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
#else
    printf("# skipped: io_uring and per-thread usage are Linux's\n");
    return 0;
#endif
}

/* ---- a current-thread runtime driven by another thread ------------------------------- */

/* A current-thread runtime's ring is COOP_TASKRUN: the task work of the
 * poll that wakes its parked driver runs on the thread that armed the
 * poll, without interrupting it. Here the runtime is created (its poll
 * armed) on the test thread, which then computes without system calls
 * while a second thread drives the runtime and a third spawns into it one
 * task at a time: the driver arms its own poll, so each spawn reaches it
 * at once instead of at the computing thread's next timer interrupt. */
#define IO_CT_MOVE_SPAWNS 100

typedef struct {
    blitz_runtime *rt;
    blitz_notify done;
    atomic_int ran, stop;
    double waits[IO_CT_MOVE_SPAWNS];
} io_ct_move;

typedef struct {
    BLITZ_CORO;
    io_ct_move *m;
    blitz_notify_wait_op wait;
} io_ct_root;

static blitz_poll io_ct_root_poll(blitz_cx *cx, void *p) {
    io_ct_root *r = p;
    BLITZ_BEGIN(r);
    BLITZ_AWAIT(r, blitz_notify_wait(cx, &r->wait, &r->m->done));
    BLITZ_END(r);
}

static blitz_poll io_ct_move_task(blitz_cx *cx, void *p) {
    (void)cx;
    io_ct_move *m = *(io_ct_move **)p;
    if (atomic_fetch_add(&m->ran, 1) + 1 == IO_CT_MOVE_SPAWNS)
        blitz_notify_one(&m->done);
    return BLITZ_READY;
}

static void *io_ct_move_driver(void *p) {
    io_ct_move *m = p;
    io_ct_root r;
    memset(&r, 0, sizeof r);
    r.m = m;
    CHECK_OK(blitz_runtime_run(m->rt, io_ct_root_poll, &r, sizeof r));
    return NULL;
}

static int io_ct_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *io_ct_move_spawner(void *p) {
    io_ct_move *m = p;
    tu_sleep_ms(50); /* the driver has parked */
    for (int i = 0; i < IO_CT_MOVE_SPAWNS; i++) {
        double t0 = tu_now();
        CHECK_OK(blitz_spawn(m->rt, io_ct_move_task, &m, sizeof m, NULL));
        while (atomic_load(&m->ran) <= i)
            sched_yield();
        m->waits[i] = tu_now() - t0;
        usleep(200);
    }
    atomic_store(&m->stop, 1);
    return NULL;
}

/* One round: the median wait from a spawn to its task running, or -1
 * when io_uring is unavailable. */
static double io_ct_move_round(void) {
    blitz_runtime *rt = tu_io_rt_new(BLITZ_BACKEND_IO_URING, TU_CT);
    if (!rt)
        return -1;
    io_ct_move m;
    memset(&m, 0, sizeof m);
    m.rt = rt;
    CHECK_OK(blitz_notify_init(&m.done));
    pthread_t driver, spawner;
    CHECK_EQ(pthread_create(&driver, NULL, io_ct_move_driver, &m), 0);
    CHECK_EQ(pthread_create(&spawner, NULL, io_ct_move_spawner, &m), 0);
    /* Compute, with no system call (the clock is read in user space),
     * until the spawner is done. */
    double t0 = tu_now();
    while (!atomic_load(&m.stop) && tu_now() - t0 < 20.0 * tu_timeout_mult())
        ;
    CHECK_EQ(pthread_join(spawner, NULL), 0);
    CHECK_EQ(pthread_join(driver, NULL), 0);
    qsort(m.waits, IO_CT_MOVE_SPAWNS, sizeof m.waits[0], io_ct_cmp_double);
    double median = m.waits[IO_CT_MOVE_SPAWNS / 2];
    printf("# spawn to run: median %.1f us, worst %.1f us\n", median * 1e6,
           m.waits[IO_CT_MOVE_SPAWNS - 1] * 1e6);
    fflush(stdout);
    CHECK_EQ(atomic_load(&m.ran), IO_CT_MOVE_SPAWNS);
    blitz_notify_deinit(&m.done);
    CHECK_OK(blitz_runtime_free(rt));
    return median;
}

/* The median: a spawn that waits for the computing thread's timer
 * interrupt waits a tick (1 to 4 ms) every time, in every round, while a
 * loaded machine delays a few spawns by as much and leaves the middle
 * alone, or slows one round. So one round of five with a short median
 * passes. */
BLITZ_TEST(io_uring_ct_driver_moves) {
    for (int round = 0; round < 5; round++) {
        double median = io_ct_move_round();
        if (median < 0.0005 * tu_timeout_mult())
            return 0; /* also io_uring unavailable: -1 */
    }
    CHECK(!"the median spawn waited 0.5 ms or more in each of 5 rounds");
    return 0;
}

/* ---- a park whose claimed SQEs another thread submitted ------------------------------ */

/* A thread parks by taking the count of its ring's pending SQEs and
 * submitting them in the system call that waits. A flush by another
 * thread (a close's ASYNC_CANCEL, from any thread) submits every SQE in
 * the ring, possibly those. The park's submission then finds fewer SQEs
 * than it asked for, and the kernel returns at once without waiting. No
 * count may stay owed for SQEs that are gone: every later park would ask
 * for them, return at once, and the idle thread would spin. Played here
 * step by step on a current-thread runtime's ring from the test thread,
 * then a park with a 50 ms timeout must sleep. */
BLITZ_TEST(io_uring_overtaken_park) {
#if BLITZ__LINUX
    blitz_runtime *rt = tu_io_rt_new(BLITZ_BACKEND_IO_URING, TU_CT);
    if (!rt)
        return 0;
    blitz__io *io = rt->io;
    blitz__ring *r = io->shared;
    struct io_uring_sqe nop;
    memset(&nop, 0, sizeof nop);
    nop.opcode = IORING_OP_NOP;
    nop.user_data = BLITZ__UD_IGNORE;
    CHECK_OK(blitz__uring_queue(r, &nop, 0));
    CHECK_OK(blitz__uring_queue(r, &nop, 0));
    /* The parking thread's claim... */
    uint32_t n = blitz__uring_claim_all(r);
    CHECK_EQ(n, 2u);
    /* ...overtaken by another thread's flush... */
    blitz__mutex_lock(&r->sq_lock);
    blitz__uring_flush_locked(r);
    blitz__mutex_unlock(&r->sq_lock);
    /* ...so its own submission finds nothing. */
    int got = blitz__uring_enter(r->fd, n, 0, 0, NULL, 0);
    CHECK_EQ(got, 0);
    blitz__uring_settle_claim(r, n, 0);
    CHECK_EQ(blitz__u32_load(&r->to_submit, BLITZ__RELAXED), 0u);
    /* A park reaps the NOPs' completions without waiting; the next ones
     * wait for their timeout. */
    blitz__parker p;
    blitz__parker_init(&p);
    p.wake_fd = r->wake_fd;
    blitz__uring_park(io, &p, 50 * BLITZ_MSEC, NULL, NULL);
    double t0 = tu_now();
    for (int i = 0; i < 2; i++)
        blitz__uring_park(io, &p, 50 * BLITZ_MSEC, NULL, NULL);
    double dt = tu_now() - t0;
    printf("# 2 parks of 50 ms took %.1f ms\n", dt * 1e3);
    fflush(stdout);
    CHECK(dt >= 0.09);
    blitz__parker_destroy(&p);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
#else
    printf("# skipped: io_uring is Linux's\n");
    return 0;
#endif
}

/* ---- a plain thread's blitz_op_run_blocking on a receive, and a shutdown
 * ------------------------- */

/* The shutdown withdraws the receive (on io_uring it is in the kernel and
 * its cancel completes later). blitz_op_run_blocking must return only once nothing
 * uses the op: the thread then finds it settled and may free it. */
typedef struct {
    blitz_io io;
    blitz_socket *sock;
    char buf[16];
    atomic_int started;
    int rc, pending_after;
} io_opwait_recv;

static blitz_poll io_opwait_recv_poll(blitz_cx *cx, void *p) {
    io_opwait_recv *o = p;
    atomic_store(&o->started, 1);
    return blitz_sock_recv(cx, &o->io, o->sock, o->buf, sizeof o->buf);
}
static void io_opwait_recv_cancel(blitz_cx *cx, void *p) {
    blitz_io_cancel(cx, &((io_opwait_recv *)p)->io);
}

static blitz_runtime *io_opwait_rt;

static void *io_opwait_thread(void *p) {
    io_opwait_recv *o = p;
    o->rc = blitz_op_run_blocking(io_opwait_rt,
                                  blitz_op_make(io_opwait_recv_poll, io_opwait_recv_cancel, o));
    o->pending_after = blitz_io_pending(&o->io);
    /* The op is the thread's again: scribble over it, as a free would. */
    memset(&o->io, 0xa5, sizeof o->io);
    return NULL;
}

static int io_opwait_shutdown(blitz_backend b) {
    for (int round = 0; round < test_scaled(5); round++) {
        blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
        if (!rt)
            return 0;
        io_opwait_rt = rt;
        blitz_socket *x = NULL, *y = NULL;
        CHECK_OK(blitz_unix_pair(rt, 1, &x, &y));
        io_opwait_recv *o = calloc(1, sizeof *o);
        CHECK(o != NULL);
        o->sock = x;
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, io_opwait_thread, o), 0);
        while (!atomic_load(&o->started))
            tu_sleep_ms(1);
        tu_sleep_ms(20); /* io_uring: the receive reaches the kernel */
        CHECK_OK(blitz_runtime_shutdown(rt));
        CHECK_EQ(pthread_join(th, NULL), 0);
        CHECK_EQ(o->rc, BLITZ_ECANCELED);
        CHECK_EQ(o->pending_after, 0);
        blitz_sock_close(x);
        blitz_sock_close(y);
        CHECK_OK(blitz_runtime_free(rt));
        free(o);
    }
    return 0;
}
IO_BACKEND_TESTS(io_opwait_shutdown)
