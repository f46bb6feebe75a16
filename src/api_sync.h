/* Public API: Synchronization primitives: semaphore, mutex, rwlock, notify, barrier,
 * once cell, cancellation token; and the generic op interface. */
