/* The request of a file op of api_pool.h, as its public call (os/fs.c,
 * every system's) describes it to the system's front end: fs.c's own on
 * POSIX (the ring or a pool job), fs_win32.c's on Windows. A request
 * lives on the caller's stack; the front end copies what it needs. */
#include "../io/io.h"
#if BLITZ__HAS_IO || BLITZ__WIN32

enum {
    BLITZ__FS_OPEN = 1,
    BLITZ__FS_CLOSE,
    BLITZ__FS_READ,
    BLITZ__FS_WRITE,
    BLITZ__FS_PREAD,
    BLITZ__FS_PWRITE,
    BLITZ__FS_READV,
    BLITZ__FS_WRITEV,
    BLITZ__FS_FSYNC,
    BLITZ__FS_FDATASYNC,
    BLITZ__FS_TRUNCATE,
    BLITZ__FS_STAT,
    BLITZ__FS_LSTAT,
    BLITZ__FS_FSTAT,
    BLITZ__FS_RENAME,
    BLITZ__FS_UNLINK,
    BLITZ__FS_RMDIR,
    BLITZ__FS_MKDIR,
    BLITZ__FS_MKDIR_ALL,
    BLITZ__FS_READ_DIR,
    BLITZ__FS_READ_FILE,
    BLITZ__FS_WRITE_FILE,
    BLITZ__FS_SYMLINK,
    BLITZ__FS_LINK,
    BLITZ__FS_FALLOCATE,
};

/* The most buffers of a vectored op. */
#if BLITZ__WIN32
#define BLITZ__FS_IOV_MAX 1024 /* Linux's IOV_MAX: the same limit everywhere */
#else
#define BLITZ__FS_IOV_MAX IOV_MAX
#endif

/* A request, as the public calls describe it. */
typedef struct {
    int kind, fd, flags;
    uint32_t mode;
    const void *buf; /* data to write; where a read goes */
    size_t len;
    int64_t off;
    const char *path, *path2;
    const blitz_iovec *iov;
    int iovcnt;
    blitz_fs_metadata *md;
} blitz__fs_req;

static blitz__fs_req blitz__fs_req_new(int kind) {
    blitz__fs_req r;
    memset(&r, 0, sizeof r);
    r.kind = kind;
    r.fd = -1;
    r.off = -1;
    return r;
}

#endif /* BLITZ__HAS_IO || BLITZ__WIN32 */
