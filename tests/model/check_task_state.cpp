/* The task state word (src/core/task_state.c).
 * wake_while_running: a waker publishes a message and wakes the task while
 *   its poll runs. Exactly one of (the poll's RUNNING -> IDLE sees NOTIFIED,
 *   the wake finds IDLE and schedules) happens: no lost and no double run;
 *   the next poll sees the message and the previous poll's writes, and the
 *   enqueue that follows a wake (its write of the queue link) comes after
 *   the previous owner's last use of the link.
 * cancel_vs_complete: an IDLE task is woken by one thread (which runs it:
 *   polls it to completion, or completes it cancelled when the cancel is due)
 *   while another cancels it (and completes it when it claimed it). The task
 *   completes exactly once, cancelled exactly when the canceller claimed it
 *   or the runner saw the cancel, and its last reference frees it once. */
#include "model_task.h"

struct wake_while_running : rl::test_suite<wake_while_running, 2> {
    blitz__task t;
    rl::var<int> message, poll_data, link;
    int runs;

    void before() {
        blitz__u64_store(&t.state, blitz__state_initial(0, 0, 0), BLITZ__RELAXED);
        RL_ASSERT(blitz__state_to_running(&t) == BLITZ__RUN_POLL);
        message($) = 0;
        poll_data($) = 0;
        link($) = 0;
        runs = 0;
    }
    void second_poll() {
        RL_ASSERT(blitz__state_to_running(&t) == BLITZ__RUN_POLL);
        RL_ASSERT(message($) == 1);
        RL_ASSERT(poll_data($) == 1);
        runs++;
    }
    void thread(unsigned i) {
        if (i == 0) {
            link($) = 0;      /* it was dequeued here */
            poll_data($) = 1; /* the first poll's work */
            if (blitz__state_to_idle(&t, 0, NULL))
                second_poll();
        } else {
            message($) = 1;
            if (blitz__state_wake(&t) == BLITZ__WAKE_SCHEDULE) {
                link($) = 1;   /* enqueued */
                second_poll(); /* and run by the enqueuer's worker */
            }
        }
    }
    void after() {
        RL_ASSERT(runs == 1);
    }
};

struct cancel_vs_complete : rl::test_suite<cancel_vs_complete, 2> {
    blitz__task t;
    int completions, cancelled_outcome, claimed, polled;

    void before() {
        /* Spawned with a handle, polled once, now IDLE waiting for a wake. */
        blitz__u64_store(&t.state, blitz__state_initial(1, 0, 0), BLITZ__RELAXED);
        blitz__state_to_running(&t);
        blitz__state_to_idle(&t, 0, NULL);
        completions = cancelled_outcome = claimed = polled = 0;
        model_freed = 0;
    }
    void complete(int cancelled) {
        int dropped = 0;
        uint64_t prev = blitz__state_complete(&t, cancelled, &dropped);
        RL_ASSERT(!dropped && blitz__lifecycle(prev) == BLITZ__LC_RUNNING);
        completions++;
        blitz__task_unref(&t); /* the lifecycle reference */
    }
    void thread(unsigned i) {
        if (i == 0) {
            if (blitz__state_wake(&t) == BLITZ__WAKE_SCHEDULE) {
                if (blitz__state_to_running(&t) == BLITZ__RUN_CANCEL) {
                    complete(1);
                } else {
                    polled = 1;
                    if (blitz__state_to_idle(&t, 0, NULL)) { /* a cancel arrived meanwhile */
                        RL_ASSERT(blitz__state_to_running(&t) == BLITZ__RUN_CANCEL);
                        complete(1);
                    }
                }
            }
        } else {
            if (blitz__state_cancel(&t)) {
                claimed = 1;
                complete(1);
            }
        }
    }
    void after() {
        uint64_t s = blitz__u64_load(&t.state, BLITZ__RELAXED);
        RL_ASSERT(completions == 1);
        RL_ASSERT(blitz__lifecycle(s) == BLITZ__LC_COMPLETE);
        RL_ASSERT((s & BLITZ__TASK_OUTCOME_CANCELLED) != 0);
        RL_ASSERT(blitz__refs(s) == 1); /* the handle's */
        /* The handle goes: the block is freed exactly then. */
        RL_ASSERT(model_freed == 0);
        blitz__task_unref(&t);
        RL_ASSERT(model_freed == 1);
    }
};

int main() {
    int rc = 0;
    rc |= model_run<wake_while_running>("task_state wake while running");
    rc |= model_run<cancel_vs_complete>("task_state cancel vs complete");
    return rc;
}
