/* Graceful shutdown: a trigger (a call or a signal), a cancellation token
 * the acceptors race against, and the handles of the tracked in-flight
 * tasks, which the run awaits until the grace period ends and then
 * cancels. */
#include "../io/io.h"

struct blitz_shutdown {
    blitz_runtime *rt;
    blitz_cancel_token token;
    blitz_signal sig;
    int has_sig;
    blitz__mutex lock;
    /* Tracked tasks not yet known to be finished (under lock). */
    blitz_task **tasks;
    size_t ntasks, cap;
    int closed;   /* the grace period is over: no more tracked spawns */
    int running;  /* a run has started */
    int draining; /* triggered: the run now holds indexes into `tasks` */
    blitz__atomic_u32 triggered;
};

BLITZ_API int blitz_shutdown_new(blitz_runtime *rt, const blitz_shutdown_opts *opts,
                                 blitz_shutdown **out) {
    if (out)
        *out = NULL;
    if (!rt || !out)
        return BLITZ_EINVAL;
    blitz_shutdown *sd = (blitz_shutdown *)blitz__calloc(sizeof *sd);
    if (!sd)
        return BLITZ_ENOMEM;
    sd->rt = rt;
    blitz_cancel_token_init(&sd->token);
    blitz__mutex_init(&sd->lock);
#if BLITZ__WIN32
    /* The console's Ctrl-C, Ctrl-Break and close. */
    static const int defaults[] = {SIGINT, BLITZ_SIGBREAK, BLITZ_SIGHUP};
#else
    static const int defaults[] = {SIGINT, SIGTERM};
#endif
    const int *sigs = defaults;
    int n = (int)(sizeof defaults / sizeof defaults[0]);
    if (opts && opts->nsignals != 0) {
        sigs = opts->signals;
        n = opts->nsignals < 0 ? 0 : opts->nsignals;
        if (n > 0 && !sigs) {
            blitz_shutdown_free(sd);
            return BLITZ_EINVAL;
        }
    }
    for (int i = 0; i < n; i++) {
        int rc = sd->has_sig ? blitz_signal_add(&sd->sig, sigs[i])
                             : blitz_signal_init(&sd->sig, sigs[i]);
        if (rc != BLITZ_OK) {
            blitz_shutdown_free(sd);
            return rc;
        }
        sd->has_sig = 1;
    }
    *out = sd;
    return BLITZ_OK;
}

BLITZ_API int blitz_shutdown_trigger(blitz_shutdown *sd) {
    if (!sd)
        return BLITZ_EINVAL;
    blitz__u32_store(&sd->triggered, 1, BLITZ__RELEASE);
    blitz_cancel_token_cancel(&sd->token);
    return BLITZ_OK;
}

BLITZ_API int blitz_shutdown_triggered(const blitz_shutdown *sd) {
    return sd ? (int)blitz__u32_load(&sd->triggered, BLITZ__ACQUIRE) : 0;
}

BLITZ_API blitz_cancel_token *blitz_shutdown_token(blitz_shutdown *sd) {
    return sd ? &sd->token : NULL;
}

/* Releases the handles of tasks that finished (under lock): a server
 * that runs for days keeps only its live connections here. */
static void blitz__shutdown_prune(blitz_shutdown *sd) {
    size_t keep = 0;
    for (size_t i = 0; i < sd->ntasks; i++) {
        if (blitz_task_status(sd->tasks[i]) == BLITZ_EAGAIN)
            sd->tasks[keep++] = sd->tasks[i];
        else
            blitz_task_release(&sd->tasks[i]);
    }
    sd->ntasks = keep;
}

BLITZ_API int blitz_shutdown_spawn_ex(blitz_shutdown *sd, const blitz_spawn_opts *opts) {
    if (!sd || !opts)
        return BLITZ_EINVAL;
    blitz__mutex_lock(&sd->lock);
    if (sd->closed) {
        blitz__mutex_unlock(&sd->lock);
        return BLITZ_ECLOSED;
    }
    if (sd->ntasks == sd->cap && !sd->draining)
        blitz__shutdown_prune(sd);
    if (sd->ntasks == sd->cap) {
        size_t cap = sd->cap ? sd->cap * 2 : 16;
        blitz_task **t = (blitz_task **)blitz__malloc(cap * sizeof *t);
        if (!t) {
            blitz__mutex_unlock(&sd->lock);
            return BLITZ_ENOMEM;
        }
        if (sd->ntasks)
            memcpy(t, sd->tasks, sd->ntasks * sizeof *t);
        blitz__free(sd->tasks);
        sd->tasks = t;
        sd->cap = cap;
    }
    blitz_task *h = NULL;
    int rc = blitz_spawn_ex(sd->rt, opts, &h);
    if (rc == BLITZ_OK)
        sd->tasks[sd->ntasks++] = h;
    blitz__mutex_unlock(&sd->lock);
    return rc;
}

BLITZ_API int blitz_shutdown_spawn(blitz_shutdown *sd, blitz_poll_fn poll, const void *state,
                                   size_t size) {
    blitz_spawn_opts o;
    blitz__plain_opts(&o, poll, state, size);
    return blitz_shutdown_spawn_ex(sd, &o);
}

BLITZ_API size_t blitz_shutdown_in_flight(blitz_shutdown *sd) {
    if (!sd)
        return 0;
    size_t n = 0;
    blitz__mutex_lock(&sd->lock);
    for (size_t i = 0; i < sd->ntasks; i++)
        n += blitz_task_status(sd->tasks[i]) == BLITZ_EAGAIN &&
             !blitz__serve_is_acceptor(sd->tasks[i]);
    blitz__mutex_unlock(&sd->lock);
    return n;
}

/* The handle at index i, or NULL past the end; closes the coordinator
 * when asked to at the end, so no spawn slips in after the last look. */
static blitz_task *blitz__shutdown_at(blitz_shutdown *sd, size_t i, int close_at_end) {
    blitz__mutex_lock(&sd->lock);
    blitz_task *t = i < sd->ntasks ? sd->tasks[i] : NULL;
    if (!t && close_at_end)
        sd->closed = 1;
    blitz__mutex_unlock(&sd->lock);
    return t;
}

#define BLITZ__SD_WAIT   0 /* for the trigger */
#define BLITZ__SD_GRACE  1 /* tracked tasks may finish */
#define BLITZ__SD_CANCEL 2 /* cancel and join the rest */
#define BLITZ__SD_DONE   3

BLITZ_API blitz_poll blitz_shutdown_run(blitz_cx *cx, blitz_shutdown_run_op *op, blitz_shutdown *sd,
                                        int64_t grace_ns) {
    if (!op)
        return BLITZ_READY;
    if (op->blitz__sd != sd || !sd) {
        if (!sd || !cx) {
            op->result = BLITZ_EINVAL;
            return BLITZ_READY;
        }
        blitz__mutex_lock(&sd->lock);
        int busy = sd->running;
        sd->running = 1;
        blitz__mutex_unlock(&sd->lock);
        if (busy) {
            op->result = BLITZ_EBUSY;
            return BLITZ_READY;
        }
        blitz_shutdown *arg_sd = op->blitz__arg_sd;
        int64_t arg_grace = op->blitz__arg_grace;
        memset(op, 0, sizeof *op);
        op->blitz__arg_sd = arg_sd;
        op->blitz__arg_grace = arg_grace;
        op->blitz__sd = sd;
        op->blitz__phase = BLITZ__SD_WAIT;
        blitz_combo_reset(&op->blitz__combo);
    }
    for (;;) {
        switch (op->blitz__phase) {
        case BLITZ__SD_WAIT: {
            size_t n = 1;
            op->blitz__ops[0] = blitz_op_cancel_token_wait(&op->blitz__tw, &sd->token);
            if (sd->has_sig)
                op->blitz__ops[n++] = blitz_op_signal_recv(&sd->sig);
            if (blitz_race(cx, &op->blitz__combo, op->blitz__ops, n) == BLITZ_PENDING)
                return blitz__pending(cx, blitz_shutdown_run_cancel, op);
            if (op->blitz__combo.winner == 1)
                op->signo = sd->sig.signo;
            blitz_shutdown_trigger(sd);
            /* What finished before the trigger was not in flight. */
            blitz__mutex_lock(&sd->lock);
            blitz__shutdown_prune(sd);
            sd->draining = 1;
            blitz__mutex_unlock(&sd->lock);
            op->blitz__deadline = blitz_deadline_after(blitz_cx_now(cx), grace_ns);
            op->blitz__phase = grace_ns > 0 ? BLITZ__SD_GRACE : BLITZ__SD_CANCEL;
            op->blitz__idx = 0;
            blitz_combo_reset(&op->blitz__combo);
            break;
        }
        case BLITZ__SD_GRACE: {
            blitz_task *t = blitz__shutdown_at(sd, op->blitz__idx, 0);
            if (!t) {
                /* every tracked task finished in time; close, then look
                 * once more for one spawned meanwhile */
                if (!blitz__shutdown_at(sd, op->blitz__idx, 1)) {
                    op->blitz__phase = BLITZ__SD_CANCEL;
                    break;
                }
                continue;
            }
            op->blitz__ops[0] = blitz_op_join(t);
            op->blitz__ops[1] = blitz_op_sleep_until(&op->blitz__timer, op->blitz__deadline);
            if (blitz_race(cx, &op->blitz__combo, op->blitz__ops, 2) == BLITZ_PENDING)
                return blitz__pending(cx, blitz_shutdown_run_cancel, op);
            int won = op->blitz__combo.winner;
            blitz_combo_reset(&op->blitz__combo);
            if (won == 0) {
                op->blitz__idx++;
                break;
            }
            op->blitz__phase = BLITZ__SD_CANCEL;
            break;
        }
        case BLITZ__SD_CANCEL: {
            blitz__mutex_lock(&sd->lock);
            sd->closed = 1;
            for (size_t i = op->blitz__idx; i < sd->ntasks; i++)
                blitz_task_cancel(sd->tasks[i]);
            blitz_task *t = op->blitz__idx < sd->ntasks ? sd->tasks[op->blitz__idx] : NULL;
            blitz__mutex_unlock(&sd->lock);
            if (t) {
                if (blitz_join(cx, t) == BLITZ_PENDING)
                    return blitz__pending(cx, blitz_shutdown_run_cancel, op);
                op->blitz__idx++;
                break;
            }
            /* Every handle is finished: count and release them. */
            blitz__mutex_lock(&sd->lock);
            for (size_t i = 0; i < sd->ntasks; i++) {
                if (blitz__serve_is_acceptor(sd->tasks[i]))
                    ; /* a listener, not in flight */
                else if (blitz_task_status(sd->tasks[i]) == BLITZ_OK)
                    op->finished++;
                else
                    op->cancelled++;
                blitz_task_release(&sd->tasks[i]);
            }
            sd->ntasks = 0;
            blitz__mutex_unlock(&sd->lock);
            op->result = BLITZ_OK;
            op->blitz__phase = BLITZ__SD_DONE;
            return BLITZ_READY;
        }
        default:
            return BLITZ_READY;
        }
    }
}

BLITZ__OP_ADAPTER(blitz__shutdown_run_op_poll, blitz_shutdown_run_op, op,
                  op ? blitz_shutdown_run(cx, op, op->blitz__arg_sd, op->blitz__arg_grace)
                     : BLITZ_READY)
BLITZ_API blitz_op blitz_op_shutdown_run(blitz_shutdown_run_op *op, blitz_shutdown *sd,
                                         int64_t grace_ns) {
    if (op) {
        op->blitz__arg_sd = sd;
        op->blitz__arg_grace = grace_ns;
    }
    return blitz_op_make(blitz__shutdown_run_op_poll, blitz_shutdown_run_cancel, op);
}

BLITZ_API void blitz_shutdown_run_cancel(blitz_cx *cx, void *p) {
    blitz_shutdown_run_op *op = (blitz_shutdown_run_op *)p;
    if (!op || !op->blitz__sd || op->blitz__phase == BLITZ__SD_DONE)
        return;
    blitz_shutdown *sd = op->blitz__sd;
    if (op->blitz__phase == BLITZ__SD_WAIT || op->blitz__phase == BLITZ__SD_GRACE)
        blitz_combo_cancel(cx, &op->blitz__combo, op->blitz__ops,
                           op->blitz__phase == BLITZ__SD_WAIT ? (size_t)(1 + sd->has_sig) : 2);
    if (op->blitz__phase == BLITZ__SD_CANCEL) {
        blitz__mutex_lock(&sd->lock);
        if (op->blitz__idx < sd->ntasks)
            blitz_join_cancel(cx, sd->tasks[op->blitz__idx]);
        blitz__mutex_unlock(&sd->lock);
    }
    blitz__mutex_lock(&sd->lock);
    sd->closed = 1;
    sd->running = 0;
    for (size_t i = 0; i < sd->ntasks; i++)
        blitz_task_cancel(sd->tasks[i]);
    blitz__mutex_unlock(&sd->lock);
    op->result = BLITZ_ECANCELED;
    op->blitz__phase = BLITZ__SD_DONE;
}

BLITZ_API int blitz_shutdown_free(blitz_shutdown *sd) {
    if (!sd)
        return BLITZ_EINVAL;
    if (sd->has_sig)
        blitz_signal_deinit(&sd->sig);
    for (size_t i = 0; i < sd->ntasks; i++) {
        blitz_task_cancel(sd->tasks[i]);
        blitz_task_release(&sd->tasks[i]);
    }
    blitz__free(sd->tasks);
    blitz_cancel_token_deinit(&sd->token);
    blitz__mutex_destroy(&sd->lock);
    blitz__free(sd);
    return BLITZ_OK;
}
