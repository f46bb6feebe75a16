/* The time layer's internal API: the time driver every runtime owns. */
#ifndef BLITZ__TIME_H
#define BLITZ__TIME_H
#include "../core/core.h"
#include "timer_wheel.h"

/* ---- the time driver (time_driver.c) ---------------------------------------- */

struct blitz__time_driver {
    blitz__mutex lock; /* guards wheel, firing and armed timers' wakers */
    blitz__timer_wheel wheel;
    blitz__timer_entry *firing; /* due, being fired in batches */
    uint64_t origin_ns;         /* tick 0 */
    int paused;                 /* virtual clock */
    int advancing;              /* a paused-clock jump is firing its timers */
    blitz__atomic_u64 virtual_ns;
    /* Earliest deadline in ns (never later than the truth), UINT64_MAX
     * when no timer is armed. */
    BLITZ__ALIGNED blitz__atomic_u64 next_expiry_ns;
    /* 1 + index of the parked worker that sleeps until the next deadline,
     * or 0. */
    blitz__atomic_u32 sleeper;
    /* Timers armed and fired (metrics): bumped under the lock, which the
     * arm and the fire take anyway, and read without it. */
    blitz__atomic_u64 armed, fired;
};

#endif
