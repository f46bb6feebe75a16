/* Public API: Channels: bounded MPMC, oneshot, broadcast, watch; select. */
