/* Error codes: blitz_strerror and blitz_err_name, both generated from
 * BLITZ_ERRNO_MAP, and the mapping from errno values. */
#include "base.h"

BLITZ_API const char *blitz_strerror(int err) {
    switch (err) {
    case BLITZ_OK:
        return "success";
#define BLITZ__ERR_TEXT(name, value, text) \
    case value:                            \
        return text;
        BLITZ_ERRNO_MAP(BLITZ__ERR_TEXT)
#undef BLITZ__ERR_TEXT
    default:
        return "unknown error";
    }
}

BLITZ_API const char *blitz_err_name(int err) {
    switch (err) {
    case BLITZ_OK:
        return "OK";
#define BLITZ__ERR_NAME(name, value, text) \
    case value:                            \
        return #name;
        BLITZ_ERRNO_MAP(BLITZ__ERR_NAME)
#undef BLITZ__ERR_NAME
    default:
        return "UNKNOWN";
    }
}

BLITZ_API const char *blitz_version(void) {
    return BLITZ_VERSION_STRING;
}

/* The symbol the declarations refer to (see its declaration). */
BLITZ_API void blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file(void) {}

/* Called by BLITZ_END in a debug build; a poll function's state that was
 * not zero-filled is a bug to stop at, not a task to finish quietly. */
BLITZ_API void blitz_coro_bad_resume(const char *file, int line, const char *func, int resume) {
    fprintf(stderr,
            "blitz: %s:%d: %s: resume point %d is no BLITZ_AWAIT or BLITZ_YIELD "
            "of this poll function: the task state must start zero-filled\n",
            file, line, func, resume);
    abort();
}

/* The code for a system errno value: the one place where errno values
 * become blitz codes, so that the codes mean the same on every system.
 * Names that share a value on one system (EAGAIN / EWOULDBLOCK,
 * EOPNOTSUPP / ENOTSUP, EDEADLK / EDEADLOCK) are separate on another. */
BLITZ_PRIVATE int blitz__from_errno(int e) {
    switch (e) {
#define BLITZ__ERR_FROM_ERRNO(name, value, text) \
    case name:                                   \
        return value;
        BLITZ_SYS_ERR_MAP(BLITZ__ERR_FROM_ERRNO)
#undef BLITZ__ERR_FROM_ERRNO
#if defined(EWOULDBLOCK) && EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
        return BLITZ_EAGAIN;
#endif
#if defined(ENOTSUP) && ENOTSUP != EOPNOTSUPP
    case ENOTSUP:
        return BLITZ_EOPNOTSUPP;
#endif
#if defined(EDEADLOCK) && EDEADLOCK != EDEADLK
    case EDEADLOCK:
        return BLITZ_EDEADLK;
#endif
    case 0:
        /* A call that failed without saying why. */
        return BLITZ_EIO;
    default:
        return BLITZ_EUNKNOWN;
    }
}
