/* The runtime's own descriptors (rings, epoll, eventfds, the signal
 * thread's pipe) are kept above stdin, stdout and stderr. A program
 * started with one of those closed would otherwise find a runtime
 * descriptor at 0, 1 or 2: reading "stdin" (or adopting it as a socket)
 * would consume the runtime's wake-ups, and closing it would close the
 * runtime's descriptor under it. */
#include "base.h"

#if !BLITZ__WIN32

/* Returns `fd`, or a close-on-exec duplicate at 3 or above (and closes
 * `fd`) when it is 0, 1 or 2. Keeps `fd` when the duplicate cannot be made:
 * a low number is a hazard only for a program that misuses stdio, running
 * out of descriptors is one for every program. */
BLITZ_PRIVATE int blitz__fd_above_stdio(int fd) {
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (moved < 0)
        return fd;
    close(fd);
    return moved;
}

#endif /* !BLITZ__WIN32 */
