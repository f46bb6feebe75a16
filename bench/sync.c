/* Synchronization and channel benchmarks: blitz's mirror of the Tokio
 * anchor's `sync` group (../shared/anchors/tokio/src/sync_bench.rs),
 * workload for workload and constant for constant.
 *
 *   sync [FILTER...]   run the benchmarks whose name contains a FILTER
 *                      (all without arguments)
 *
 * The primitives' rows (mutex, rwlock, semaphore, oncecell, notify,
 * barrier and their contended forms) are in bench/sync_prims.inc; the
 * channel rows (channel_*, oneshot, broadcast, watch) in
 * bench/sync_chan.inc. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"

#include "bench_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync_prims.inc"
#include "sync_chan.inc"

int main(int argc, char **argv) {
    bench_cpu_snapshot cpu0;
    bench_cpu_snapshot_take(&cpu0);
    bench_set_filter(argc - 1, argv + 1);
    bench_watchdog(240, "sync");
    bench_cpu_warmup();
    bench_sync_prims();
    bench_sync_chan();
    bench_cpu_report_since(&cpu0, "sync");
    return 0;
}
