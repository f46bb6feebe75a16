/* Public API: synchronization primitives: semaphore, mutex, rwlock, notify,
 * barrier, once cell, cancellation token. */
