/* Public API: Channels: bounded MPMC, oneshot, broadcast, watch; select. */

/* ---------------------------------------------------------------------------
 * Channels
 *
 * Values are fixed-size byte blobs: the element size is given when a
 * channel is created, a send copies `elem_size` bytes in, a receive copies
 * them out. To pass ownership of heap data, send a pointer.
 *
 * Every operation has three forms:
 *   try_    never waits (BLITZ_EFULL / BLITZ_EEMPTY when it would);
 *   async   an op struct in the task state (it embeds the waiter, so
 *           waiting allocates nothing), used with BLITZ_AWAIT, or wrapped
 *           as a blitz_op (blitz_op_chan_send, ...) for blitz_op_run_blocking and
 *           the combinators (race, select, timeout);
 *   blocking for plain threads and blocking-pool jobs (returns
 *   BLITZ_EDEADLK inside a task).
 *
 * Cancel safety. An async op is withdrawn with its cancel function (the
 * combinators and blitz_timeout call it, and so does the runtime for the
 * op a cancelled task waits in).
 * A pending op has done nothing yet: a waiting op is only woken when a
 * value or a slot turns up, and does its receive or send itself on its
 * next poll. So cancelling a pending op always leaves it BLITZ_ECANCELED:
 *   recv    nothing was taken; the message stays in the channel, at its
 *           place, for the next receiver. A receive that loses a race or
 *           select therefore never swallows a message: read only the
 *           winner's result.
 *   send    nothing was sent; the value is still only in the caller's
 *           buffer.
 * ------------------------------------------------------------------------- */

/* ---- bounded MPMC channel ------------------------------------------------- */

/* A bounded multi-producer multi-consumer FIFO. Opaque, on the heap. */
typedef struct blitz_chan blitz_chan;

/* Creates a channel of `capacity` values of `elem_size` bytes, with one
 * sender and one receiver reference (the creator holds both).
 * BLITZ_EINVAL for NULL out, elem_size 0, capacity 0 (there is no
 * rendezvous channel: use capacity 1) or a size that overflows;
 * BLITZ_ENOMEM. */
BLITZ_API int blitz_chan_new(blitz_chan **out, size_t elem_size, size_t capacity);

/* Reference counts of the two sides. A clone adds a reference for a new
 * holder (call it while holding one of that side); a release gives one up.
 * When the last sender is released the channel closes (receivers drain
 * what is buffered, then see BLITZ_ECLOSED); when the last receiver is
 * released it closes too (senders see BLITZ_ECLOSED; values still buffered
 * stay in it for anyone still holding a reference to take out with
 * blitz_chan_try_recv). The channel is freed with the last reference of
 * either side. Clone: BLITZ_ECLOSED when that side has no reference left;
 * release: BLITZ_ERELEASED when it has none. A holder must not release
 * while one of its own ops is pending. */
BLITZ_API int blitz_chan_sender_clone(blitz_chan *ch);
BLITZ_API int blitz_chan_sender_release(blitz_chan *ch);
BLITZ_API int blitz_chan_receiver_clone(blitz_chan *ch);
BLITZ_API int blitz_chan_receiver_release(blitz_chan *ch);

/* Closes the channel: sends fail with BLITZ_ECLOSED from now on (a waiting
 * send returns BLITZ_ECLOSED with its value still in the caller's buffer);
 * receivers first drain what was sent before, then see BLITZ_ECLOSED.
 * The caller must hold a sender or receiver reference, and still holds it
 * afterwards (a close releases nothing). Idempotent. BLITZ_EINVAL for
 * NULL; a debug build stops at a close after the channel's last release. */
BLITZ_API int blitz_chan_close(blitz_chan *ch);
BLITZ_API int blitz_chan_is_closed(const blitz_chan *ch);
/* Values buffered right now (a snapshot), and the capacity. */
BLITZ_API size_t blitz_chan_len(const blitz_chan *ch);
BLITZ_API size_t blitz_chan_capacity(const blitz_chan *ch);
BLITZ_API size_t blitz_chan_elem_size(const blitz_chan *ch);

/* BLITZ_OK, BLITZ_EFULL, BLITZ_ECLOSED (the value was not taken),
 * BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_chan_try_send(blitz_chan *ch, const void *value);
/* BLITZ_OK (a value was copied to `out`), BLITZ_EEMPTY, BLITZ_ECLOSED
 * (closed and drained), BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_chan_try_recv(blitz_chan *ch, void *out);

/* An async send or receive. Zero-filled is idle; the fields other than
 * `result` are private. One op does one send or receive at a time; after
 * it returned BLITZ_READY it is idle again and can be reused. */
typedef struct blitz_chan_op {
    blitz__waiter blitz__w;
    blitz_chan *blitz__ch;
    void *blitz__buf;
    /* BLITZ_EAGAIN from when the op is armed (blitz_op_chan_send/recv or
     * the await form) until it finishes; then BLITZ_OK, BLITZ_ECLOSED,
     * BLITZ_EINVAL (NULL channel or buffer) or BLITZ_ECANCELED (withdrawn
     * by its cancel function). */
    int result;
} blitz_chan_op;

/* Await: BLITZ_AWAIT(s, blitz_chan_send(cx, &s->op, s->ch, &s->value)).
 * READY once the value is in the channel (result BLITZ_OK) or the channel
 * closed first (BLITZ_ECLOSED: the value was not taken). `value` must stay
 * valid and unchanged until then. FIFO among the values of one sender. */
BLITZ_API blitz_poll blitz_chan_send(blitz_cx *cx, blitz_chan_op *op, blitz_chan *ch,
                                     const void *value);
/* Await: BLITZ_AWAIT(s, blitz_chan_recv(cx, &s->op, s->ch, &s->value)).
 * READY with a value in `out` (result BLITZ_OK) or with BLITZ_ECLOSED once
 * the channel is closed and drained. `out` must stay valid until then. */
BLITZ_API blitz_poll blitz_chan_recv(blitz_cx *cx, blitz_chan_op *op, blitz_chan *ch, void *out);

/* The same ops as blitz_op values (for blitz_op_run_blocking, race, select). */
BLITZ_API blitz_op blitz_op_chan_send(blitz_chan_op *op, blitz_chan *ch, const void *value);
BLITZ_API blitz_op blitz_op_chan_recv(blitz_chan_op *op, blitz_chan *ch, void *out);

/* Withdraws a pending op (a blitz_chan_op; see "Cancel safety" above).
 * Afterwards op->result is BLITZ_ECANCELED when the op was pending (woken
 * or not: it received or sent nothing), was never polled or nothing was
 * pending; an op whose last poll returned READY keeps the result it
 * reported (while an op is unfinished its result is BLITZ_EAGAIN). The
 * same whether a combinator, a timeout or the caller cancels. Safe on an
 * idle, pending or completed op, with cx NULL, and from a task's cancel
 * hook. */
BLITZ_API void blitz_chan_cancel(blitz_cx *cx, void *op);

/* Blocking forms for plain threads: wait until sent / received.
 * BLITZ_OK, BLITZ_ECLOSED, BLITZ_EINVAL, BLITZ_EDEADLK inside a task. */
BLITZ_API int blitz_chan_send_blocking(blitz_chan *ch, const void *value);
BLITZ_API int blitz_chan_recv_blocking(blitz_chan *ch, void *out);

/* ---- oneshot ------------------------------------------------------------------- */

/* One value (64 bits: an integer or a pointer cast to uintptr_t) from one
 * sender to one receiver, through a cell the caller provides: nothing is
 * allocated. Zero-filled (or blitz_oneshot_init) is empty.
 *
 * The cell is shared memory: keep it where both sides reach it until both
 * are done with it (blitz_oneshot_done). A receiver that got the value or
 * BLITZ_ECLOSED knows the sender is done, so a receiver that is never
 * cancelled while it waits may keep the cell in its own task state. */
typedef struct blitz_oneshot {
    uint32_t blitz__state;
    uint32_t blitz__pad;
    uint64_t blitz__value;
    blitz_waker blitz__waker;
} blitz_oneshot;

BLITZ_API void blitz_oneshot_init(blitz_oneshot *os);
/* Sends `value` and finishes the sender side. BLITZ_OK; BLITZ_ECLOSED when
 * the receiver closed first (the value was not delivered: it is still the
 * caller's); BLITZ_EINVAL for NULL, or when the sender side already sent or
 * closed. Wakes a waiting receiver. */
BLITZ_API int blitz_oneshot_send(blitz_oneshot *os, uint64_t value);
/* Finishes the sender side without a value: the receiver sees
 * BLITZ_ECLOSED. Idempotent; does nothing after a send. */
BLITZ_API void blitz_oneshot_close_tx(blitz_oneshot *os);
/* Finishes the receiver side: a later send fails with BLITZ_ECLOSED. A
 * value sent before stays readable with blitz_oneshot_try_recv. */
BLITZ_API void blitz_oneshot_close_rx(blitz_oneshot *os);
/* Nonzero once the receiver closed (for a sender that wants to stop). */
BLITZ_API int blitz_oneshot_rx_closed(const blitz_oneshot *os);
/* BLITZ_OK (value in *out; the value is then consumed), BLITZ_EEMPTY,
 * BLITZ_ECLOSED (the sender closed without sending, or the value was
 * already taken), BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_oneshot_try_recv(blitz_oneshot *os, uint64_t *out);
/* Await: BLITZ_AWAIT(s, blitz_oneshot_recv(cx, &s->cell)); then
 * blitz_oneshot_try_recv gives the value or BLITZ_ECLOSED. READY once a
 * value is there or the sender closed. One receiver at a time. */
BLITZ_API blitz_poll blitz_oneshot_recv(blitz_cx *cx, blitz_oneshot *os);
/* As a blitz_op; the cancel withdraws the receiver's waker and keeps a
 * value that already arrived in the cell (take it with try_recv). */
BLITZ_API blitz_op blitz_op_oneshot_recv(blitz_oneshot *os);
/* Withdraws a pending receive (op is the blitz_oneshot; cx may be NULL). */
BLITZ_API void blitz_oneshot_cancel(blitz_cx *cx, void *os);
/* Blocking receive for plain threads: BLITZ_OK with *out, BLITZ_ECLOSED,
 * BLITZ_EINVAL, BLITZ_EDEADLK inside a task. */
BLITZ_API int blitz_oneshot_recv_blocking(blitz_oneshot *os, uint64_t *out);
/* Nonzero once neither side will touch the cell again: the sender closed,
 * or it sent and the receiver took the value or closed. */
BLITZ_API int blitz_oneshot_done(const blitz_oneshot *os);

/* ---- broadcast ----------------------------------------------------------------- */

/* Every receiver gets every value sent after it subscribed. The channel
 * keeps the last `capacity` values (rounded up to a power of two); senders
 * never wait, so a receiver that falls further behind misses the oldest:
 * its next receive returns BLITZ_ELAGGED with the number it missed in
 * `lagged`, and the one after resumes at the oldest value still kept. */
typedef struct blitz_broadcast blitz_broadcast;

/* A receiver: caller-provided (in the task state), filled by subscribe.
 * Fields other than `lagged` and `result` are private. */
typedef struct blitz_broadcast_rx {
    blitz__waiter blitz__w;
    blitz_broadcast *blitz__bc;
    void *blitz__buf;
    uint64_t blitz__pos;
    uint64_t lagged; /* values missed, set with BLITZ_ELAGGED */
    int result;      /* of the last async receive */
} blitz_broadcast_rx;

/* Creates a channel with one sender reference and no receiver.
 * BLITZ_EINVAL for NULL out, elem_size 0, capacity 0 or too large;
 * BLITZ_ENOMEM. */
BLITZ_API int blitz_broadcast_new(blitz_broadcast **out, size_t elem_size, size_t capacity);
/* Sender references; the last release closes the channel (receivers read
 * what is kept, then see BLITZ_ECLOSED). The channel is freed when no
 * sender and no receiver is left. blitz_broadcast_close, like
 * blitz_chan_close, needs a reference and releases none. */
BLITZ_API int blitz_broadcast_sender_clone(blitz_broadcast *bc);
BLITZ_API int blitz_broadcast_sender_release(blitz_broadcast *bc);
BLITZ_API int blitz_broadcast_close(blitz_broadcast *bc);
/* Starts a receiver at the next value sent; the receiver is a reference
 * until blitz_broadcast_unsubscribe. BLITZ_EINVAL for NULL. A receiver
 * subscribed to a closed channel sees BLITZ_ECLOSED. The caller must hold
 * a sender reference at the call (until the receiver exists only those
 * keep the channel), so subscribe before it may be released: in the
 * spawner, either in the state it then passes to blitz_spawn (a receiver
 * with no receive waiting is plain data: the task's copy is the receiver
 * and the original must not be used) or in the spawn's init
 * (blitz_spawn_opts.init, in place). A receiver stays at its address only
 * while a receive of it waits. */
BLITZ_API int blitz_broadcast_subscribe(blitz_broadcast *bc, blitz_broadcast_rx *rx);
/* Gives the receiver up (withdrawing a pending receive). */
BLITZ_API int blitz_broadcast_unsubscribe(blitz_broadcast_rx *rx);
/* Sends to every current receiver: returns how many (>= 1), or
 * BLITZ_ECLOSED when the channel is closed or has no receiver (the value is
 * not kept). BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_broadcast_send(blitz_broadcast *bc, const void *value);
BLITZ_API uint32_t blitz_broadcast_receiver_count(const blitz_broadcast *bc);
/* BLITZ_OK (value in out), BLITZ_EEMPTY, BLITZ_ELAGGED (rx->lagged set;
 * `out` holds no value), BLITZ_ECLOSED (closed and everything kept was
 * read), BLITZ_EINVAL. */
BLITZ_API int blitz_broadcast_try_recv(blitz_broadcast_rx *rx, void *out);
/* Await: BLITZ_AWAIT(s, blitz_broadcast_recv(cx, &s->rx, &s->value)); then
 * rx.result is BLITZ_OK, BLITZ_ELAGGED or BLITZ_ECLOSED. Cancel: nothing
 * is consumed by a withdrawn receive (each receiver has its own position),
 * so the next receive gets the same value. */
BLITZ_API blitz_poll blitz_broadcast_recv(blitz_cx *cx, blitz_broadcast_rx *rx, void *out);
BLITZ_API blitz_op blitz_op_broadcast_recv(blitz_broadcast_rx *rx, void *out);
/* Withdraws a pending receive (op is the blitz_broadcast_rx; cx may be
 * NULL). */
BLITZ_API void blitz_broadcast_cancel(blitz_cx *cx, void *rx);
BLITZ_API int blitz_broadcast_recv_blocking(blitz_broadcast_rx *rx, void *out);

/* ---- watch ------------------------------------------------------------------------ */

/* One value with a version that every send increments (the initial value
 * is version 1). Receivers read the latest value and wait for a newer
 * version. Reading is a seqlock: a read that overlaps a send retries, so
 * a reader always copies one whole value, never a torn mix, and senders
 * never wait for readers. */
typedef struct blitz_watch blitz_watch;

typedef struct blitz_watch_rx {
    blitz__waiter blitz__w;
    blitz_watch *blitz__watch;
    uint64_t seen; /* the version this receiver saw last */
    int result;    /* of the last blitz_watch_changed */
} blitz_watch_rx;

/* Creates a watch holding a copy of `initial` (elem_size bytes), with one
 * sender reference. BLITZ_EINVAL for NULL arguments or elem_size 0;
 * BLITZ_ENOMEM. */
BLITZ_API int blitz_watch_new(blitz_watch **out, size_t elem_size, const void *initial);
/* Replaces the value and wakes every receiver waiting in changed.
 * BLITZ_OK, BLITZ_ECLOSED after close, BLITZ_EINVAL for NULL. */
BLITZ_API int blitz_watch_send(blitz_watch *w, const void *value);
/* Sender references; the last release closes the watch. The watch is freed
 * when no sender and no receiver is left. blitz_watch_close needs a
 * reference and releases none. */
BLITZ_API int blitz_watch_sender_clone(blitz_watch *w);
BLITZ_API int blitz_watch_sender_release(blitz_watch *w);
BLITZ_API int blitz_watch_close(blitz_watch *w);
/* Copies the current value to `out` and returns its version (0 for NULL
 * arguments). Safe against concurrent sends. */
BLITZ_API uint64_t blitz_watch_read(const blitz_watch *w, void *out);
/* A receiver that has seen the current version; a reference until
 * blitz_watch_unsubscribe. As for broadcast, the caller must hold a sender
 * reference at the call (subscribe in the spawner, in the state it passes
 * or in the spawn's init), and the receiver stays at its address only
 * while a blitz_watch_changed of it waits. */
BLITZ_API int blitz_watch_subscribe(blitz_watch *w, blitz_watch_rx *rx);
BLITZ_API int blitz_watch_unsubscribe(blitz_watch_rx *rx);
/* Reads and marks the version read as seen. Returns the version. */
BLITZ_API uint64_t blitz_watch_read_update(blitz_watch_rx *rx, void *out);
/* 1 when a version newer than rx->seen exists, 0 when not, BLITZ_ECLOSED
 * when not and the watch is closed. */
BLITZ_API int blitz_watch_has_changed(const blitz_watch_rx *rx);
/* Await: READY once a version newer than rx->seen exists (result BLITZ_OK,
 * and rx->seen becomes the newest version: read it with
 * blitz_watch_read) or the watch closed without one (BLITZ_ECLOSED).
 * Cancel consumes nothing: a newer version stays newer. */
BLITZ_API blitz_poll blitz_watch_changed(blitz_cx *cx, blitz_watch_rx *rx);
BLITZ_API blitz_op blitz_op_watch_changed(blitz_watch_rx *rx);
/* Withdraws a pending blitz_watch_changed (op is the blitz_watch_rx; cx
 * may be NULL). */
BLITZ_API void blitz_watch_cancel(blitz_cx *cx, void *rx);
BLITZ_API int blitz_watch_changed_blocking(blitz_watch_rx *rx);
