/* The oneshot channel: one 64-bit value in a caller-provided cell, handed
 * over through one atomic state word; no lock, no allocation.
 *
 * The receiver's waker lives in the cell. Only the receiver writes it, and
 * only while it holds REGISTERING; the sender reads it only while it holds
 * TAKING, and the two exclude each other through the state word. The sender
 * copies the waker out before the store that publishes the value, so it
 * never touches the cell after the receiver can see the value (and free the
 * cell). */
#include "../core/core.h"

#define BLITZ__OS_VALUE       0x01u /* the sender stored a value */
#define BLITZ__OS_TX_CLOSED   0x02u /* the sender finished without a value */
#define BLITZ__OS_RX_CLOSED   0x04u /* the receiver gave up */
#define BLITZ__OS_HAS_WAKER   0x08u /* the cell holds the receiver's waker */
#define BLITZ__OS_REGISTERING 0x10u /* the receiver is writing the waker */
#define BLITZ__OS_TAKING      0x20u /* the sender is copying the waker out */
#define BLITZ__OS_TAKEN       0x40u /* the receiver took the value */

static inline blitz__atomic_u32 *blitz__os_state(blitz_oneshot *os) {
    /* blitz__atomic_u32 is a struct around one uint32_t: same layout. */
    return (blitz__atomic_u32 *)(void *)&os->blitz__state;
}

BLITZ_API void blitz_oneshot_init(blitz_oneshot *os) {
    if (!os)
        return;
    /* The waker field is read only while HAS_WAKER is set: zero is fine. */
    memset(os, 0, sizeof *os);
}

/* Finishes the sender side with `done` (VALUE or TX_CLOSED). */
static int blitz__oneshot_finish_tx(blitz_oneshot *os, uint32_t done) {
    blitz__atomic_u32 *a = blitz__os_state(os);
    uint32_t s = blitz__u32_load(a, BLITZ__ACQUIRE);
    for (;;) {
        if (s & (BLITZ__OS_VALUE | BLITZ__OS_TX_CLOSED))
            return BLITZ_EINVAL;
        if (s & BLITZ__OS_RX_CLOSED)
            done = BLITZ__OS_TX_CLOSED;
        if ((s & BLITZ__OS_HAS_WAKER) && !(s & BLITZ__OS_REGISTERING)) {
            /* Acquire: the waker the receiver published with release. */
            if (!blitz__u32_cas_weak(a, &s, s | BLITZ__OS_TAKING, BLITZ__ACQUIRE))
                continue;
            blitz_waker w = os->blitz__waker;
            s |= BLITZ__OS_TAKING;
            uint32_t target;
            /* Only the receiver's close can change the word meanwhile. */
            do {
                if (s & BLITZ__OS_RX_CLOSED)
                    done = BLITZ__OS_TX_CLOSED;
                target = (s & ~(BLITZ__OS_TAKING | BLITZ__OS_HAS_WAKER)) | done;
                /* Release: the value is visible to the receiver that
                 * acquires VALUE. From here on the cell is not touched. */
            } while (!blitz__u32_cas_weak(a, &s, target, BLITZ__RELEASE));
            if (s & BLITZ__OS_RX_CLOSED) {
                blitz_waker_drop(w); /* nobody listens any more */
                return BLITZ_ECLOSED;
            }
            blitz_waker_wake(w);
            return done == BLITZ__OS_VALUE ? BLITZ_OK : BLITZ_ECLOSED;
        }
        /* No waker, or the receiver is registering one: it sees the new
         * state when it tries to finish and handles it. */
        if (blitz__u32_cas_weak(a, &s, s | done, BLITZ__RELEASE))
            return done == BLITZ__OS_VALUE ? BLITZ_OK : BLITZ_ECLOSED;
    }
}

BLITZ_API int blitz_oneshot_send(blitz_oneshot *os, uint64_t value) {
    if (!os)
        return BLITZ_EINVAL;
    uint32_t s = blitz__u32_load(blitz__os_state(os), BLITZ__ACQUIRE);
    if (s & (BLITZ__OS_VALUE | BLITZ__OS_TX_CLOSED))
        return BLITZ_EINVAL;
    if (!(s & BLITZ__OS_RX_CLOSED))
        os->blitz__value = value; /* read only after VALUE is acquired */
    return blitz__oneshot_finish_tx(os, BLITZ__OS_VALUE);
}

BLITZ_API void blitz_oneshot_close_tx(blitz_oneshot *os) {
    if (os)
        blitz__oneshot_finish_tx(os, BLITZ__OS_TX_CLOSED);
}

/* Drops the receiver's waker if the cell still holds it and the sender is
 * not copying it; with `close`, also marks the receiver gone. */
static void blitz__oneshot_withdraw(blitz_oneshot *os, int close) {
    blitz__atomic_u32 *a = blitz__os_state(os);
    uint32_t s = blitz__u32_load(a, BLITZ__ACQUIRE);
    uint32_t add = close ? BLITZ__OS_RX_CLOSED : 0u;
    for (;;) {
        uint32_t target = s | add;
        /* While TAKING the sender owns the waker and wakes or drops it. */
        int drop = (s & BLITZ__OS_HAS_WAKER) && !(s & BLITZ__OS_TAKING);
        if (drop)
            target &= ~BLITZ__OS_HAS_WAKER;
        if (target == s)
            return;
        if (blitz__u32_cas_weak(a, &s, target, BLITZ__ACQ_REL)) {
            if (drop) {
                blitz_waker w = os->blitz__waker;
                os->blitz__waker = blitz_waker_noop();
                blitz_waker_drop(w);
            }
            return;
        }
    }
}

BLITZ_API void blitz_oneshot_close_rx(blitz_oneshot *os) {
    if (os)
        blitz__oneshot_withdraw(os, 1);
}

BLITZ_API int blitz_oneshot_rx_closed(const blitz_oneshot *os) {
    return os ? (blitz__u32_field_load(&os->blitz__state, BLITZ__ACQUIRE) & BLITZ__OS_RX_CLOSED) !=
                    0
              : 1;
}

BLITZ_API int blitz_oneshot_try_recv(blitz_oneshot *os, uint64_t *out) {
    if (!os || !out)
        return BLITZ_EINVAL;
    blitz__atomic_u32 *a = blitz__os_state(os);
    /* Acquire: pairs with the sender's release of VALUE. */
    uint32_t s = blitz__u32_load(a, BLITZ__ACQUIRE);
    if ((s & (BLITZ__OS_VALUE | BLITZ__OS_TAKEN)) == BLITZ__OS_VALUE) {
        *out = os->blitz__value;
        /* After VALUE the sender never writes the word again, and the
         * receiver is the only other writer: a plain store suffices. */
        blitz__u32_store(a, s | BLITZ__OS_TAKEN, BLITZ__RELAXED);
        return BLITZ_OK;
    }
    return (s & (BLITZ__OS_VALUE | BLITZ__OS_TX_CLOSED)) ? BLITZ_ECLOSED : BLITZ_EEMPTY;
}

BLITZ_API blitz_poll blitz_oneshot_recv(blitz_cx *cx, blitz_oneshot *os) {
    if (!os)
        return BLITZ_READY;
    blitz__atomic_u32 *a = blitz__os_state(os);
    blitz_waker mine = blitz_cx_waker(cx);
    uint32_t s = blitz__u32_load(a, BLITZ__ACQUIRE);
    for (;;) {
        if (s & (BLITZ__OS_VALUE | BLITZ__OS_TX_CLOSED))
            return BLITZ_READY;
        if (s & BLITZ__OS_TAKING) {
            /* The sender is waking the stored waker right now; poll again
             * in case this poll comes from another waker. */
            blitz_waker_wake_by_ref(&mine);
            return blitz__pending(cx, blitz_oneshot_cancel, os);
        }
        if ((s & BLITZ__OS_HAS_WAKER) && blitz_waker_will_wake(&os->blitz__waker, &mine))
            return blitz__pending(cx, blitz_oneshot_cancel, os);
        if (blitz__u32_cas_weak(a, &s, s | BLITZ__OS_REGISTERING, BLITZ__ACQUIRE))
            break;
    }
    /* REGISTERING: the waker field is ours until we clear it. */
    blitz_waker old = (s & BLITZ__OS_HAS_WAKER) ? os->blitz__waker : blitz_waker_noop();
    os->blitz__waker = blitz_waker_clone(&mine);
    uint32_t expected = s | BLITZ__OS_REGISTERING;
    uint32_t target = (s & ~BLITZ__OS_REGISTERING) | BLITZ__OS_HAS_WAKER;
    /* Release: publishes the waker to a sender that acquires HAS_WAKER. */
    if (blitz__u32_cas(a, &expected, target, BLITZ__ACQ_REL)) {
        blitz_waker_drop(old);
        return blitz__pending(cx, blitz_oneshot_cancel, os);
    }
    /* The sender finished meanwhile (it does not take a waker while we
     * register): the waker is still ours to drop. */
    blitz_waker again = os->blitz__waker;
    os->blitz__waker = blitz_waker_noop();
    blitz__u32_fetch_and(a, ~(BLITZ__OS_REGISTERING | BLITZ__OS_HAS_WAKER), BLITZ__ACQ_REL);
    blitz_waker_drop(old);
    blitz_waker_drop(again);
    return BLITZ_READY;
}

BLITZ__OP_ADAPTER(blitz__oneshot_recv_poll, blitz_oneshot, os, blitz_oneshot_recv(cx, os))

BLITZ_API void blitz_oneshot_cancel(blitz_cx *cx, void *os) {
    (void)cx;
    if (os)
        blitz__oneshot_withdraw((blitz_oneshot *)os, 0);
}

BLITZ_API blitz_op blitz_op_oneshot_recv(blitz_oneshot *os) {
    return blitz_op_make(os ? blitz__oneshot_recv_poll : NULL, blitz_oneshot_cancel, os);
}

BLITZ_API int blitz_oneshot_recv_blocking(blitz_oneshot *os, uint64_t *out) {
    if (!os || !out)
        return BLITZ_EINVAL;
    int rc = blitz_op_run_blocking(NULL, blitz_op_oneshot_recv(os));
    if (rc != BLITZ_OK)
        return rc;
    return blitz_oneshot_try_recv(os, out);
}

BLITZ_API int blitz_oneshot_done(const blitz_oneshot *os) {
    if (!os)
        return 1;
    uint32_t s = blitz__u32_field_load(&os->blitz__state, BLITZ__ACQUIRE);
    /* Without a value there is nothing left for the receiver to take. */
    int finished = (s & BLITZ__OS_TX_CLOSED) ||
                   ((s & BLITZ__OS_VALUE) && (s & (BLITZ__OS_TAKEN | BLITZ__OS_RX_CLOSED)));
    return finished && !(s & (BLITZ__OS_HAS_WAKER | BLITZ__OS_REGISTERING | BLITZ__OS_TAKING));
}
