/* The bounded channel and the semaphore against plain models, driven by
 * operation sequences through their non-blocking forms: a FIFO of the
 * channel's capacity (values come out in order, full and empty and closed
 * exactly when the model says), and a permit count (acquire succeeds
 * exactly when enough permits are left, release adds them, close makes
 * acquire fail). */
#include "fuzz_input.h"

#define FZ_CAP_MAX 64

static void fz_chan(fz_input *in) {
    size_t cap = 1 + fz_u8(in) % FZ_CAP_MAX;
    blitz_chan *ch = NULL;
    FZ_CHECK(blitz_chan_new(&ch, sizeof(uint64_t), cap) == BLITZ_OK);
    FZ_CHECK(blitz_chan_capacity(ch) == cap);
    uint64_t model[FZ_CAP_MAX];
    size_t head = 0, len = 0;
    uint64_t next_value = 1;
    int closed = 0;
    for (int steps = 0; in->left && steps < 4096; steps++) {
        uint8_t op = fz_u8(in);
        if (op < 120) {
            uint64_t v = next_value;
            int rc = blitz_chan_try_send(ch, &v);
            if (closed) {
                FZ_CHECK(rc == BLITZ_ECLOSED);
            } else if (len == cap) {
                FZ_CHECK(rc == BLITZ_EFULL);
            } else {
                FZ_CHECK(rc == BLITZ_OK);
                model[(head + len++) % cap] = next_value++;
            }
        } else if (op < 250) {
            uint64_t v = 0;
            int rc = blitz_chan_try_recv(ch, &v);
            if (len) {
                FZ_CHECK(rc == BLITZ_OK);
                FZ_CHECK(v == model[head]);
                head = (head + 1) % cap;
                len--;
            } else {
                FZ_CHECK(rc == (closed ? BLITZ_ECLOSED : BLITZ_EEMPTY));
            }
        } else {
            FZ_CHECK(blitz_chan_close(ch) == BLITZ_OK);
            closed = 1;
        }
        FZ_CHECK(blitz_chan_len(ch) == len);
        FZ_CHECK(!!blitz_chan_is_closed(ch) == closed);
    }
    FZ_CHECK(blitz_chan_sender_release(ch) == BLITZ_OK);
    FZ_CHECK(blitz_chan_receiver_release(ch) == BLITZ_OK);
}

static void fz_semaphore(fz_input *in) {
    size_t permits = fz_bytes(in, 2);
    blitz_semaphore sem;
    FZ_CHECK(blitz_semaphore_init(&sem, permits) == BLITZ_OK);
    int closed = 0;
    for (int steps = 0; in->left && steps < 4096; steps++) {
        uint8_t op = fz_u8(in);
        size_t n = fz_u8(in);
        if (op < 120) {
            int rc = blitz_semaphore_try_acquire(&sem, n);
            if (n == 0)
                FZ_CHECK(rc == BLITZ_EINVAL || (closed && rc == BLITZ_ECLOSED));
            else if (closed)
                FZ_CHECK(rc == BLITZ_ECLOSED);
            else if (n <= permits) {
                FZ_CHECK(rc == BLITZ_OK);
                permits -= n;
            } else {
                FZ_CHECK(rc == BLITZ_EAGAIN);
            }
        } else if (op < 250) {
            int rc = blitz_semaphore_release(&sem, n);
            if (n == 0) {
                FZ_CHECK(rc == BLITZ_EINVAL);
            } else {
                FZ_CHECK(rc == BLITZ_OK);
                permits += n;
            }
        } else {
            blitz_semaphore_close(&sem);
            closed = 1;
        }
        FZ_CHECK(!!blitz_semaphore_is_closed(&sem) == closed);
        if (!closed)
            FZ_CHECK(blitz_semaphore_available(&sem) == permits);
    }
    blitz_semaphore_deinit(&sem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    if (fz_u8(&in) & 1)
        fz_semaphore(&in);
    else
        fz_chan(&in);
    return 0;
}
