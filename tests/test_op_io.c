/* Tests of the blitz_op constructors of sockets, descriptors, files, DNS,
 * processes, signals, the blocking pool and task groups (host-name
 * connects: tests/test_connect_host.c): each op is raced against a timer
 * or a token, the winner's result is checked and the loser must have
 * been withdrawn cleanly (its object reusable at once). */
#include <ftw.h>
#include <sys/ioctl.h>

/* ---- sockets ---------------------------------------------------------------------------- */

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    blitz_cancel_token *token;
} opio_firer;

static blitz_poll opio_firer_poll(blitz_cx *cx, void *p) {
    opio_firer *f = p;
    BLITZ_BEGIN(f);
    BLITZ_AWAIT(f, blitz_sleep(cx, &f->timer, 20 * BLITZ_MSEC));
    blitz_cancel_token_cancel(f->token);
    BLITZ_END(f);
}

typedef struct {
    BLITZ_CORO;
    blitz_socket *listener;
    blitz_addr addr;
    blitz_io acc, con, rx, tx;
    blitz_timer timer;
    blitz_cancel_token token;
    blitz_cancel_token_wait_op tw;
    blitz_combo combo;
    blitz_op ops[2];
    blitz_iovec iov[2];
    char buf[8], a[1], b[1];
} opio_sock;

static blitz_poll opio_sock_poll(blitz_cx *cx, void *p) {
    opio_sock *s = p;
    BLITZ_BEGIN(s);
    /* An accept that loses to a timer is withdrawn. */
    OPIO_RACE(s, blitz_op_sock_accept(&s->acc, s->listener), OPIO_SLEEP(s, 20 * BLITZ_MSEC));
    CHECK_EQ(s->combo.winner, 1);
    CHECK(!blitz_io_pending(&s->acc));
    BLITZ_AWAIT(s, blitz_io_settle(cx, &s->acc));

    /* An accept raced against a token that fires later. */
    CHECK_OK(blitz_cancel_token_init(&s->token));
    {
        opio_firer f;
        memset(&f, 0, sizeof f);
        f.token = &s->token;
        CHECK_OK(blitz_spawn(blitz_cx_runtime(cx), opio_firer_poll, &f, sizeof f, NULL));
    }
    OPIO_RACE(s, blitz_op_sock_accept(&s->acc, s->listener),
              blitz_op_cancel_token_wait(&s->tw, &s->token));
    CHECK_EQ(s->combo.winner, 1);
    CHECK(!blitz_io_pending(&s->acc));
    BLITZ_AWAIT(s, blitz_io_settle(cx, &s->acc));

    /* The listener still accepts: the same op, both ends as ops. */
    s->ops[0] = blitz_op_sock_accept(&s->acc, s->listener);
    s->ops[1] = blitz_op_tcp_connect(&s->con, &s->addr);
    blitz_combo_reset(&s->combo);
    BLITZ_AWAIT(s, blitz_join_all(cx, &s->combo, s->ops, 2));
    CHECK_OK((int)s->acc.result);
    CHECK_OK((int)s->con.result);
    CHECK_NOT_NULL(s->acc.socket);
    CHECK_NOT_NULL(s->con.socket);

    /* Data arrives before the timer: the receive wins. */
    OPIO_RACE(s, blitz_op_sock_send_all(&s->tx, s->con.socket, "hi", 2),
              OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->tx.result, 2);
    OPIO_RACE(s, blitz_op_sock_recv(&s->rx, s->acc.socket, s->buf, sizeof s->buf),
              OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->rx.result, 2);
    CHECK(memcmp(s->buf, "hi", 2) == 0);

    /* Nothing to read: the timer wins, the receive is withdrawn and the
     * next one gets what comes later. */
    OPIO_RACE(s, blitz_op_sock_recv(&s->rx, s->acc.socket, s->buf, sizeof s->buf),
              OPIO_SLEEP(s, 20 * BLITZ_MSEC));
    CHECK_EQ(s->combo.winner, 1);
    BLITZ_AWAIT(s, blitz_io_settle(cx, &s->rx));
    CHECK_EQ(s->rx.result, BLITZ_ECANCELED);
    s->iov[0].base = "y";
    s->iov[0].len = 1;
    s->iov[1].base = "o";
    s->iov[1].len = 1;
    OPIO_RACE(s, blitz_op_sock_sendv(&s->tx, s->con.socket, s->iov, 2),
              OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->tx.result, 2);
    s->iov[0].base = s->a;
    s->iov[1].base = s->b;
    OPIO_RACE(s, blitz_op_sock_recvv(&s->rx, s->acc.socket, s->iov, 2),
              OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->rx.result, 2);
    CHECK(s->a[0] == 'y' && s->b[0] == 'o');
    OPIO_RACE(s, blitz_op_sock_send(&s->tx, s->acc.socket, "!", 1), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->tx.result, 1);
    blitz_sock_close(s->acc.socket);
    blitz_sock_close(s->con.socket);

    /* A connect with a limit, as an op. */
    s->ops[0] = blitz_op_sock_accept(&s->acc, s->listener);
    s->ops[1] = blitz_op_tcp_connect_timeout(&s->con, &s->addr, 5 * BLITZ_SEC);
    blitz_combo_reset(&s->combo);
    BLITZ_AWAIT(s, blitz_join_all(cx, &s->combo, s->ops, 2));
    CHECK_OK((int)s->acc.result);
    CHECK_OK((int)s->con.result);
    blitz_sock_close(s->acc.socket);
    blitz_sock_close(s->con.socket);
    BLITZ_END(s);
}

static int op_io_sock(blitz_backend b) {
    IO_RUN_LISTENING(b, opio_sock, opio_sock_poll);
}
IO_BACKEND_TESTS(op_io_sock)

/* Datagrams and pipe descriptors. */
typedef struct {
    BLITZ_CORO;
    blitz_socket *u1, *u2, *rd, *wr, *ul;
    blitz_addr to, from, uaddr;
    blitz_io rx, tx, acc, con;
    blitz_timer timer;
    blitz_combo combo;
    blitz_op ops[2];
    char buf[8];
} opio_dgram;

static blitz_poll opio_dgram_poll(blitz_cx *cx, void *p) {
    opio_dgram *d = p;
    BLITZ_BEGIN(d);
    OPIO_RACE(d, blitz_op_sock_recv_from(&d->rx, d->u2, d->buf, sizeof d->buf, &d->from),
              OPIO_SLEEP(d, 20 * BLITZ_MSEC));
    CHECK_EQ(d->combo.winner, 1);
    BLITZ_AWAIT(d, blitz_io_settle(cx, &d->rx));
    OPIO_RACE(d, blitz_op_sock_send_to(&d->tx, d->u1, "dg", 2, &d->to),
              OPIO_SLEEP(d, 5 * BLITZ_SEC));
    CHECK_EQ(d->combo.winner, 0);
    CHECK_EQ(d->tx.result, 2);
    OPIO_RACE(d, blitz_op_sock_recv_from(&d->rx, d->u2, d->buf, sizeof d->buf, &d->from),
              OPIO_SLEEP(d, 5 * BLITZ_SEC));
    CHECK_EQ(d->combo.winner, 0);
    CHECK_EQ(d->rx.result, 2);
    CHECK(memcmp(d->buf, "dg", 2) == 0);
    CHECK_GT(blitz_addr_port(&d->from), 0);

    OPIO_RACE(d, blitz_op_fd_readable(&d->rx, d->rd), OPIO_SLEEP(d, 20 * BLITZ_MSEC));
    CHECK_EQ(d->combo.winner, 1);
    BLITZ_AWAIT(d, blitz_io_settle(cx, &d->rx));
    OPIO_RACE(d, blitz_op_fd_writable(&d->tx, d->wr), OPIO_SLEEP(d, 5 * BLITZ_SEC));
    CHECK_EQ(d->combo.winner, 0);
    CHECK_GT(d->tx.result, 0);
    OPIO_RACE(d, blitz_op_fd_write(&d->tx, d->wr, "p", 1), OPIO_SLEEP(d, 5 * BLITZ_SEC));
    CHECK_EQ(d->combo.winner, 0);
    CHECK_EQ(d->tx.result, 1);
    OPIO_RACE(d, blitz_op_fd_write_all(&d->tx, d->wr, "q", 1), OPIO_SLEEP(d, 5 * BLITZ_SEC));
    CHECK_EQ(d->combo.winner, 0);
    CHECK_EQ(d->tx.result, 1);
    OPIO_RACE(d, blitz_op_fd_read(&d->rx, d->rd, d->buf, sizeof d->buf),
              OPIO_SLEEP(d, 5 * BLITZ_SEC));
    CHECK_EQ(d->combo.winner, 0);
    CHECK_GE(d->rx.result, 1);
    CHECK(d->buf[0] == 'p');

    d->ops[0] = blitz_op_sock_accept(&d->acc, d->ul);
    d->ops[1] = blitz_op_unix_connect(&d->con, &d->uaddr);
    blitz_combo_reset(&d->combo);
    BLITZ_AWAIT(d, blitz_join_all(cx, &d->combo, d->ops, 2));
    CHECK_OK((int)d->acc.result);
    CHECK_OK((int)d->con.result);
    blitz_sock_close(d->acc.socket);
    blitz_sock_close(d->con.socket);
    BLITZ_END(d);
}

static int op_io_dgram(blitz_backend b) {
    blitz_runtime *rt = tu_io_rt_new(b, TU_MT2);
    if (!rt)
        return 0;
    opio_dgram *d = calloc(1, sizeof *d);
    blitz_addr any;
    CHECK_OK(blitz_addr_parse("127.0.0.1:0", &any));
    CHECK_OK(blitz_udp_bind(rt, &any, 0, &d->u1));
    CHECK_OK(blitz_udp_bind(rt, &any, 0, &d->u2));
    CHECK_OK(blitz_sock_local_addr(d->u2, &d->to));
    CHECK_OK(blitz_pipe(rt, &d->rd, &d->wr));
    char name[64];
    snprintf(name, sizeof name, "@blitz_op_io_%d_%d", (int)getpid(), (int)b);
    CHECK_OK(blitz_addr_unix(name, &d->uaddr));
    CHECK_OK(blitz_unix_listen(rt, &d->uaddr, 16, &d->ul));
    CHECK_OK(blitz_runtime_run(rt, opio_dgram_poll, d, sizeof *d));
    blitz_sock_close(d->ul);
    blitz_sock_close(d->u1);
    blitz_sock_close(d->u2);
    blitz_sock_close(d->rd);
    blitz_sock_close(d->wr);
    CHECK_OK(blitz_runtime_free(rt));
    free(d);
    return 0;
}
IO_BACKEND_TESTS(op_io_dgram)

/* ---- files from a plain thread -------------------------------------------------------- */

BLITZ_TEST(op_fs_run_blocking) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    char path[64];
    snprintf(path, sizeof path, "/tmp/blitz_op_fs_%d", (int)getpid());
    blitz_fs_op op;
    memset(&op, 0, sizeof op);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_write_file(&op, path, "hello", 5)));
    CHECK_EQ(op.result, 5);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_open(&op, path, BLITZ_FS_READ, 0)));
    CHECK_GE(op.result, 0);
    int fd = (int)op.result;
    char buf[16] = {0};
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_read(&op, fd, buf, sizeof buf)));
    CHECK_EQ(op.result, 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_pread(&op, fd, buf, 3, 2)));
    CHECK_EQ(op.result, 3);
    CHECK(memcmp(buf, "llo", 3) == 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_close(&op, fd)));
    CHECK_OK((int)op.result);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_read_file(&op, path)));
    CHECK_EQ(op.result, 5);
    CHECK(strcmp((const char *)op.data, "hello") == 0);
    blitz_free(op.data);
    CHECK_EQ(unlink(path), 0);
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}

/* A fresh directory under $TMPDIR (or /tmp) in `out`. */
static void opfs_tmpdir(char *out, size_t cap) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    CHECK_LT(snprintf(out, cap, "%s/blitz_opfs_XXXXXX", base), (int)cap);
    CHECK_NOT_NULL(mkdtemp(out));
}

static int opfs_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void opfs_rm_rf(const char *path) {
    CHECK_EQ(nftw(path, opfs_rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* `dir`/`name` into out. */
static void opfs_join(char *out, size_t cap, const char *dir, const char *name) {
    CHECK_LT(snprintf(out, cap, "%s/%s", dir, name), (int)cap);
}

BLITZ_TEST(op_fs_more_run_blocking) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    char dir[PATH_MAX], nested[PATH_MAX], sub[PATH_MAX], f[PATH_MAX], g[PATH_MAX], l[PATH_MAX];
    opfs_tmpdir(dir, sizeof dir);
    opfs_join(nested, sizeof nested, dir, "n/e/s/t");
    opfs_join(sub, sizeof sub, dir, "sub");
    opfs_join(f, sizeof f, dir, "f");
    opfs_join(g, sizeof g, dir, "g");
    opfs_join(l, sizeof l, dir, "l");
    blitz_fs_op op;
    memset(&op, 0, sizeof op);
    blitz_fs_metadata md;

    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_mkdir_all(&op, nested, 0755)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_stat(&op, nested, &md)));
    CHECK_EQ(op.result, 0);
    CHECK_EQ(md.type, BLITZ_FILE_DIRECTORY);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_mkdir(&op, sub, 0700)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_mkdir(&op, sub, 0700)));
    CHECK_EQ(op.result, BLITZ_EEXIST);

    CHECK_OK(blitz_op_run_blocking(
        rt, blitz_op_fs_open(&op, f, BLITZ_FS_READ | BLITZ_FS_WRITE | BLITZ_FS_CREATE, 0644)));
    CHECK_GE(op.result, 0);
    int fd = (int)op.result;
    blitz_iovec iov[2] = {{(void *)(uintptr_t) "hel", 3}, {(void *)(uintptr_t) "lo!", 3}};
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_writev(&op, fd, iov, 2, -1)));
    CHECK_EQ(op.result, 6);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_fdatasync(&op, fd)));
    CHECK_EQ(op.result, 0);
    char x[2], y[8];
    iov[0].base = x;
    iov[0].len = sizeof x;
    iov[1].base = y;
    iov[1].len = sizeof y;
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_readv(&op, fd, iov, 2, 1)));
    CHECK_EQ(op.result, 5);
    CHECK(memcmp(x, "el", 2) == 0 && memcmp(y, "lo!", 3) == 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_truncate(&op, fd, 3)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_fstat(&op, fd, &md)));
    CHECK_EQ(op.result, 0);
    CHECK_EQ(md.type, BLITZ_FILE_REGULAR);
    CHECK_EQ(md.size, 3);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_close(&op, fd)));
    CHECK_EQ(op.result, 0);

    CHECK_EQ(symlink("f", l), 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_lstat(&op, l, &md)));
    CHECK_EQ(op.result, 0);
    CHECK_EQ(md.type, BLITZ_FILE_SYMLINK);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_stat(&op, l, &md)));
    CHECK_EQ(op.result, 0);
    CHECK_EQ(md.type, BLITZ_FILE_REGULAR);
    CHECK_EQ(md.size, 3);

    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_rename(&op, f, g)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_stat(&op, f, &md)));
    CHECK_EQ(op.result, BLITZ_ENOENT);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_read_dir(&op, dir)));
    CHECK_EQ(op.result, 4);
    const blitz_fs_dirent *e = (const blitz_fs_dirent *)op.data;
    CHECK(strcmp(e[0].name, "g") == 0 && strcmp(e[1].name, "l") == 0);
    CHECK(strcmp(e[2].name, "n") == 0 && strcmp(e[3].name, "sub") == 0);
    blitz_free(op.data);

    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_unlink(&op, g)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_unlink(&op, l)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_lstat(&op, l, &md)));
    CHECK_EQ(op.result, BLITZ_ENOENT);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_rmdir(&op, sub)));
    CHECK_EQ(op.result, 0);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_rmdir(&op, dir)));
    CHECK_EQ(op.result, BLITZ_ENOTEMPTY);
    CHECK_OK(blitz_op_run_blocking(rt, blitz_op_fs_read_dir(&op, dir)));
    CHECK_EQ(op.result, 1);
    CHECK(strcmp(((const blitz_fs_dirent *)op.data)[0].name, "n") == 0);
    blitz_free(op.data);
    CHECK_OK(blitz_runtime_free(rt));
    opfs_rm_rf(dir);
    return 0;
}

/* ---- files raced against timers ------------------------------------------------------ */

typedef struct {
    BLITZ_CORO;
    char dir[PATH_MAX], nested[PATH_MAX], sub[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
    blitz_fs_op fs;
    blitz_fs_metadata md;
    blitz_timer timer, due;
    blitz_combo combo;
    blitz_op ops[2];
    blitz_iovec iov[2];
    char x[3], y[8];
    int fd, i, rounds;
} opfs_race;

static void opfs_race_init(opfs_race *s) {
    opfs_tmpdir(s->dir, sizeof s->dir);
    opfs_join(s->nested, sizeof s->nested, s->dir, "n/e/s/t");
    opfs_join(s->sub, sizeof s->sub, s->dir, "sub");
    opfs_join(s->a, sizeof s->a, s->dir, "a");
    opfs_join(s->b, sizeof s->b, s->dir, "b");
}

static blitz_poll opfs_race_poll(blitz_cx *cx, void *p) {
    opfs_race *s = p;
    BLITZ_BEGIN(s);
    OPIO_RACE(s, blitz_op_fs_mkdir_all(&s->fs, s->nested, 0755), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    OPIO_RACE(s, blitz_op_fs_mkdir(&s->fs, s->sub, 0755), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    OPIO_RACE(
        s, blitz_op_fs_open(&s->fs, s->a, BLITZ_FS_READ | BLITZ_FS_WRITE | BLITZ_FS_CREATE, 0644),
        OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_GE(s->fs.result, 0);
    s->fd = (int)s->fs.result;

    s->iov[0].base = (void *)(uintptr_t) "abc";
    s->iov[0].len = 3;
    s->iov[1].base = (void *)(uintptr_t) "defg";
    s->iov[1].len = 4;
    OPIO_RACE(s, blitz_op_fs_writev(&s->fs, s->fd, s->iov, 2, -1), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 7);
    OPIO_RACE(s, blitz_op_fs_fdatasync(&s->fs, s->fd), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    s->iov[0].base = s->x;
    s->iov[0].len = sizeof s->x;
    s->iov[1].base = s->y;
    s->iov[1].len = sizeof s->y;
    OPIO_RACE(s, blitz_op_fs_readv(&s->fs, s->fd, s->iov, 2, 0), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 7);
    CHECK(memcmp(s->x, "abc", 3) == 0 && memcmp(s->y, "defg", 4) == 0);
    OPIO_RACE(s, blitz_op_fs_truncate(&s->fs, s->fd, 5), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    OPIO_RACE(s, blitz_op_fs_fstat(&s->fs, s->fd, &s->md), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    CHECK_EQ(s->md.size, 5);
    OPIO_RACE(s, blitz_op_fs_close(&s->fs, s->fd), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);

    OPIO_RACE(s, blitz_op_fs_stat(&s->fs, s->a, &s->md), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    CHECK_EQ(s->md.type, BLITZ_FILE_REGULAR);
    CHECK_EQ(s->md.size, 5);
    OPIO_RACE(s, blitz_op_fs_lstat(&s->fs, s->sub, &s->md), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    CHECK_EQ(s->md.type, BLITZ_FILE_DIRECTORY);
    OPIO_RACE(s, blitz_op_fs_rename(&s->fs, s->a, s->b), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    OPIO_RACE(s, blitz_op_fs_read_dir(&s->fs, s->dir), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 3);
    {
        const blitz_fs_dirent *e = (const blitz_fs_dirent *)s->fs.data;
        CHECK(strcmp(e[0].name, "b") == 0);
        CHECK(strcmp(e[1].name, "n") == 0);
        CHECK(strcmp(e[2].name, "sub") == 0);
        blitz_free(s->fs.data);
    }
    OPIO_RACE(s, blitz_op_fs_unlink(&s->fs, s->b), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    OPIO_RACE(s, blitz_op_fs_rmdir(&s->fs, s->sub), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 0);
    OPIO_RACE(s, blitz_op_fs_stat(&s->fs, s->b, &s->md), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, BLITZ_ENOENT);
    BLITZ_END(s);
}

BLITZ_TEST(op_fs_race) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    opfs_race *s = calloc(1, sizeof *s);
    opfs_race_init(s);
    CHECK_OK(blitz_runtime_run(rt, opfs_race_poll, s, sizeof *s));
    CHECK_OK(blitz_runtime_free(rt));
    struct stat st;
    CHECK_EQ(stat(s->nested, &st), 0);
    CHECK(S_ISDIR(st.st_mode));
    opfs_rm_rf(s->dir);
    free(s);
    return 0;
}

/* File ops withdrawn after they started: whatever their thread produced
 * (a listing, metadata, bytes read, path copies) is freed, nothing is
 * handed to the op, and the op is reusable at once. The leak check after
 * the test finds anything left behind. */
static blitz_poll opfs_lose_poll(blitz_cx *cx, void *p) {
    opfs_race *s = p;
    BLITZ_BEGIN(s);
    /* The task runs on a copy of the state: point into the copy. */
    s->iov[0].base = s->x;
    s->iov[0].len = sizeof s->x;
    s->iov[1].base = s->y;
    s->iov[1].len = sizeof s->y;
    for (s->i = 0; s->i < s->rounds; s->i++) {
        OPIO_LOSE(s, blitz_op_fs_read_dir(&s->fs, s->dir));
        CHECK_NULL(s->fs.data);
        OPIO_LOSE(s, blitz_op_fs_stat(&s->fs, s->a, &s->md));
        OPIO_LOSE(s, blitz_op_fs_rename(&s->fs, s->b, s->sub));
        OPIO_LOSE(s, blitz_op_fs_readv(&s->fs, s->fd, s->iov, 2, 0));
        OPIO_LOSE(s, blitz_op_fs_read_file(&s->fs, s->a));
        CHECK_NULL(s->fs.data);
    }
    /* The same op, left alone, finishes. */
    OPIO_RACE(s, blitz_op_fs_read_dir(&s->fs, s->dir), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 1);
    CHECK(strcmp(((const blitz_fs_dirent *)s->fs.data)[0].name, "a") == 0);
    blitz_free(s->fs.data);
    OPIO_RACE(s, blitz_op_fs_readv(&s->fs, s->fd, s->iov, 2, 0), OPIO_FAR(s));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 5);
    CHECK(memcmp(s->x, "012", 3) == 0 && memcmp(s->y, "34", 2) == 0);
    BLITZ_END(s);
}

BLITZ_TEST(op_fs_race_lose) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    opfs_race *s = calloc(1, sizeof *s);
    opfs_race_init(s);
    s->rounds = (int)test_scaled(200);
    s->fd = open(s->a, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    CHECK_GE(s->fd, 0);
    CHECK_EQ(write(s->fd, "01234", 5), 5);
    CHECK_OK(blitz_runtime_run(rt, opfs_lose_poll, s, sizeof *s));
    /* Freeing the runtime waits for the withdrawn ops still running. */
    CHECK_OK(blitz_runtime_free(rt));
    CHECK_EQ(close(s->fd), 0);
    opfs_rm_rf(s->dir);
    free(s);
    return 0;
}

/* ---- pool ops, processes, signals, groups --------------------------------------------- */

static void opio_job(void *arg) {
    (void)arg;
}

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
} opio_member;

static blitz_poll opio_member_poll(blitz_cx *cx, void *p) {
    opio_member *m = p;
    BLITZ_BEGIN(m);
    BLITZ_AWAIT(m, blitz_sleep(cx, &m->timer, 60 * BLITZ_SEC));
    BLITZ_END(m);
}

typedef struct {
    BLITZ_CORO;
    blitz_timer timer;
    blitz_combo combo;
    blitz_op ops[2];
    blitz_dns_op dns;
    blitz_blocking_opts bopts;
    blitz_blocking_spawn sp;
    blitz_command cmd;
    blitz_child child;
    blitz_wait_op wait;
    blitz_output_op out;
    blitz_signal sig;
    blitz_group *group;
    blitz_task *next;
    blitz_fs_op fs;
    int pfd[2], avail, spins;
    char buf[8];
} opio_pool;

static const char *const opio_sleep_argv[] = {"sleep", "30", NULL};
static const char *const opio_echo_argv[] = {"echo", "hi", NULL};

static blitz_poll opio_pool_poll(blitz_cx *cx, void *p) {
    opio_pool *s = p;
    BLITZ_BEGIN(s);
    OPIO_RACE(s, blitz_op_dns_resolve(&s->dns, "127.0.0.1", 80, 4), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_GE(s->dns.result, 1);
    blitz_free(s->dns.addrs);

    OPIO_RACE(s, blitz_op_fs_read_file(&s->fs, "/proc/self/stat"), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_GT(s->fs.result, 0);
    blitz_free(s->fs.data);

    /* A file read that loses (a pipe nobody writes) is withdrawn; the op
     * is reusable at once while its job still waits on its thread. */
    CHECK_EQ(pipe(s->pfd), 0);
    OPIO_RACE(s, blitz_op_fs_read(&s->fs, s->pfd[0], s->buf, sizeof s->buf),
              OPIO_SLEEP(s, 20 * BLITZ_MSEC));
    CHECK_EQ(s->combo.winner, 1);
    OPIO_RACE(s, blitz_op_fs_write(&s->fs, s->pfd[1], "z", 1), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->fs.result, 1);
    /* The withdrawn read takes the byte. The pipe closes only after the
     * runtime is freed, which joins the pool thread: closing it while that
     * thread may still be inside read() would race (and a job still queued
     * would read whatever reuses the descriptor). */
    for (s->spins = 0;; s->spins++) {
        CHECK_LT(s->spins, 5000);
        CHECK_EQ(ioctl(s->pfd[0], FIONREAD, &s->avail), 0);
        if (s->avail == 0)
            break;
        BLITZ_AWAIT(s, blitz_sleep(cx, &s->timer, BLITZ_MSEC));
    }

    s->bopts.fn = opio_job;
    s->bopts.size = 1;
    OPIO_RACE(s, blitz_op_spawn_blocking_await(&s->sp, &s->bopts), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_OK(s->sp.result);
    OPIO_RACE(s, blitz_op_join(s->sp.task), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    blitz_task_release(&s->sp.task);

    /* A wait that loses to a timer is withdrawn; a later one sees the end. */
    memset(&s->cmd, 0, sizeof s->cmd);
    s->cmd.argv = opio_sleep_argv;
    s->cmd.stdin_mode = BLITZ_STDIO_NULL;
    s->cmd.stdout_mode = BLITZ_STDIO_NULL;
    s->cmd.stderr_mode = BLITZ_STDIO_INHERIT;
    CHECK_OK(blitz_process_spawn(blitz_cx_runtime(cx), &s->cmd, &s->child));
    OPIO_RACE(s, blitz_op_process_wait(&s->wait, &s->child), OPIO_SLEEP(s, 20 * BLITZ_MSEC));
    CHECK_EQ(s->combo.winner, 1);
    CHECK_OK(blitz_process_kill(&s->child, SIGKILL));
    OPIO_RACE(s, blitz_op_process_wait(&s->wait, &s->child), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_OK(s->wait.result);
    CHECK_EQ(s->wait.exited, 0);
    CHECK_EQ(s->wait.signal, SIGKILL);
    CHECK_OK(blitz_process_release(&s->child));

    s->cmd.argv = opio_echo_argv;
    OPIO_RACE(s, blitz_op_process_output(&s->out, &s->cmd, NULL, 0), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_OK(s->out.result);
    CHECK(s->out.out && strcmp(s->out.out, "hi\n") == 0);
    blitz_free(s->out.out);
    blitz_free(s->out.err);

    /* A signal receive that loses keeps counting; the next one gets it. */
    CHECK_OK(blitz_signal_init(&s->sig, SIGUSR2));
    OPIO_RACE(s, blitz_op_signal_recv(&s->sig), OPIO_SLEEP(s, 20 * BLITZ_MSEC));
    CHECK_EQ(s->combo.winner, 1);
    CHECK_EQ(raise(SIGUSR2), 0);
    OPIO_RACE(s, blitz_op_signal_recv(&s->sig), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_EQ(s->sig.signo, SIGUSR2);
    CHECK_OK(blitz_signal_deinit(&s->sig));

    /* Group next: withdrawn when the timer wins, then handed the member. */
    CHECK_OK(blitz_group_new(blitz_cx_runtime(cx), &s->group));
    {
        opio_member m;
        memset(&m, 0, sizeof m);
        CHECK_OK(blitz_group_spawn(s->group, opio_member_poll, &m, sizeof m));
    }
    OPIO_RACE(s, blitz_op_group_next(s->group, &s->next), OPIO_SLEEP(s, 20 * BLITZ_MSEC));
    CHECK_EQ(s->combo.winner, 1);
    CHECK_OK(blitz_group_cancel_all(s->group));
    OPIO_RACE(s, blitz_op_group_next(s->group, &s->next), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_NOT_NULL(s->next);
    blitz_task_release(&s->next);
    CHECK_OK(blitz_group_free(s->group));
    BLITZ_END(s);
}

BLITZ_TEST(op_pool_race) {
    /* epoll: the file ops are pool jobs too (io_uring's ring would carry
     * them itself, and its withdrawn read would not take the byte). */
    blitz_config cfg = tu_config(TU_MT2);
    cfg.backend = BLITZ_BACKEND_EPOLL;
    blitz_runtime *rt = tu_rt_config(&cfg);
    opio_pool *s = calloc(1, sizeof *s);
    CHECK_OK(blitz_runtime_run(rt, opio_pool_poll, s, sizeof *s));
    CHECK_OK(blitz_runtime_free(rt));
    close(s->pfd[0]);
    close(s->pfd[1]);
    free(s);
    return 0;
}

/* ---- the shutdown run ------------------------------------------------------------------ */

typedef struct {
    BLITZ_CORO;
    blitz_shutdown *lose, *win;
    blitz_shutdown_run_op run;
    blitz_timer timer;
    blitz_combo combo;
    blitz_op ops[2];
} opio_shutdown;

static blitz_poll opio_shutdown_poll(blitz_cx *cx, void *p) {
    opio_shutdown *s = p;
    BLITZ_BEGIN(s);
    /* Nothing triggers it: the timer wins and the run is withdrawn. */
    OPIO_RACE(s, blitz_op_shutdown_run(&s->run, s->lose, 0), OPIO_SLEEP(s, 20 * BLITZ_MSEC));
    CHECK_EQ(s->combo.winner, 1);
    CHECK_EQ(s->run.result, BLITZ_ECANCELED);
    /* Triggered: the run of a fresh coordinator finishes first. */
    CHECK_OK(blitz_shutdown_trigger(s->win));
    memset(&s->run, 0, sizeof s->run);
    OPIO_RACE(s, blitz_op_shutdown_run(&s->run, s->win, 0), OPIO_SLEEP(s, 5 * BLITZ_SEC));
    CHECK_EQ(s->combo.winner, 0);
    CHECK_OK(s->run.result);
    CHECK_EQ(s->run.signo, 0);
    BLITZ_END(s);
}

BLITZ_TEST(op_shutdown_run_race) {
    blitz_runtime *rt = tu_rt_new(TU_MT2);
    opio_shutdown s;
    memset(&s, 0, sizeof s);
    blitz_shutdown_opts none = {NULL, -1};
    CHECK_OK(blitz_shutdown_new(rt, &none, &s.lose));
    CHECK_OK(blitz_shutdown_new(rt, &none, &s.win));
    CHECK_OK(blitz_runtime_run(rt, opio_shutdown_poll, &s, sizeof s));
    CHECK_OK(blitz_shutdown_free(s.lose));
    CHECK_OK(blitz_shutdown_free(s.win));
    CHECK_OK(blitz_runtime_free(rt));
    return 0;
}
