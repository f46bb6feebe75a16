/* Public API: The I/O driver and sockets. */
