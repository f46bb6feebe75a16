/* Public API: The blocking pool, files, DNS, signals, processes, streams. */
