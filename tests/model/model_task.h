/* Stand-in for the task part of src/core/core.h, with the real state word
 * transitions (src/core/task_state.c). join_data is a checked plain slot:
 * the JOIN_WAKER protocol must order every write of it before the
 * completer's read. */
#ifndef BLITZ_MODEL_TASK_H
#define BLITZ_MODEL_TASK_H
#include "model.h"
#define BLITZ_STATIC 1 /* no link check: this file is the whole program */
#include "api/blitz_api.h"

#define BLITZ__CORE_H /* replaced by what follows */

struct blitz_task {
    blitz__atomic_u64 state;
    union {
        struct blitz_task *next;
        uint64_t idle_since;
    };
    model_slot<const void *> join_data;
    uint64_t id; /* fixed before the task is shared */
};
typedef struct blitz_task blitz__task;

static int model_freed; /* blocks freed (the last reference went) */
static void blitz__task_free(blitz__task *t) {
    (void)t;
    model_freed++;
}

#include "core/task_state.c"

static inline uint64_t model_lifecycle(blitz__task *t) {
    return blitz__lifecycle(blitz__u64_load(&t->state, BLITZ__ACQUIRE));
}
#endif
