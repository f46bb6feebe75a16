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

/* -errno for a failed system call. The map's values are Linux's; on other
 * systems the codes blitz returns itself are the map's, and raw errno values
 * are passed through negated. */
BLITZ_PRIVATE int blitz__from_errno(int e) {
    return e > 0 ? -e : BLITZ_EIO;
}
