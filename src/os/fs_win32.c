/* Files on Windows: the file ops of api_pool.h as pool jobs making Win32
 * calls (CreateFileW, ReadFile, WriteFile, ...). The record and its life
 * are those of fs.c's pool path: paths and data to write are copied when
 * the op starts, reads land in the record's buffer, a file opened for an
 * op its task gave up on is closed by the record's discard.
 *
 * Descriptors are C runtime descriptors (_open_osfhandle) over the
 * handles, so that `int fd` means what it means elsewhere; _get_osfhandle
 * gives the handle back. Paths are UTF-8, turned into UTF-16 on the pool
 * thread (BLITZ_EINVAL for invalid UTF-8).
 *
 * Where Windows differs from POSIX the ops answer as POSIX does when it
 * can: a positional read or write puts the file position back (ReadFile
 * with an OVERLAPPED offset moves it), a directory opened, read or
 * unlinked as a file is BLITZ_EISDIR, a write through a handle without
 * write access BLITZ_EBADF. Permission bits are the read-only attribute:
 * a file is 0666 (a directory 0777) less the write bits when read-only;
 * a file created with a mode without 0200 is made read-only. */
#include "../io/io.h"

#if BLITZ__WIN32

typedef struct {
    blitz__pool_rec base;
    int kind, fd, flags;
    uint32_t mode;
    void *buf; /* owned: data to write, or room for what is read */
    size_t len;
    int64_t off;        /* -1: the file position */
    char *path, *path2; /* one allocation */
    blitz_fs_metadata md;
    int64_t result;
    void *data;
} blitz__wfs_rec;

/* ---- conversions ------------------------------------------------------------------- */

/* The UTF-8 length of a NUL-terminated UTF-16 string, NUL included (0 on
 * failure: an unpaired surrogate). */
static size_t blitz__wfs_utf8_len(const wchar_t *w) {
    int n = WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w, -1, NULL, 0, NULL, NULL);
    return n > 0 ? (size_t)n : 0;
}

static int64_t blitz__wfs_err(void) {
    return blitz__from_win32(GetLastError());
}

/* FILETIME (100 ns since 1601) to nanoseconds since 1970 (0 before). */
static uint64_t blitz__wfs_ns(LARGE_INTEGER t) {
    const int64_t epoch = 116444736000000000; /* 1970-01-01 in FILETIME units */
    return t.QuadPart < epoch ? 0 : (uint64_t)(t.QuadPart - epoch) * 100u;
}

static HANDLE blitz__wfs_handle(int fd) {
    return fd < 0 ? INVALID_HANDLE_VALUE : (HANDLE)_get_osfhandle(fd);
}

/* Whether `path` names a directory (following links). */
static int blitz__wfs_is_dir(const wchar_t *path) {
    DWORD a = GetFileAttributesW(path);
    return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY);
}

/* ---- the work of each op ----------------------------------------------------------- */

static int64_t blitz__wfs_fill_metadata(HANDLE h, int nofollow, blitz_fs_metadata *m) {
    BY_HANDLE_FILE_INFORMATION info;
    FILE_BASIC_INFO basic;
    if (!GetFileInformationByHandle(h, &info) ||
        !GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof basic))
        return blitz__wfs_err();
    memset(m, 0, sizeof *m);
    DWORD attrs = info.dwFileAttributes, type = GetFileType(h);
    int ro = (attrs & FILE_ATTRIBUTE_READONLY) != 0;
    if (nofollow && (attrs & FILE_ATTRIBUTE_REPARSE_POINT)) {
        FILE_ATTRIBUTE_TAG_INFO tag;
        if (GetFileInformationByHandleEx(h, FileAttributeTagInfo, &tag, sizeof tag) &&
            tag.ReparseTag == IO_REPARSE_TAG_SYMLINK) {
            m->type = BLITZ_FILE_SYMLINK;
            m->mode = 0777;
        }
    }
    if (m->type == BLITZ_FILE_UNKNOWN) {
        if (attrs & FILE_ATTRIBUTE_DIRECTORY) {
            m->type = BLITZ_FILE_DIRECTORY;
            m->mode = ro ? 0555 : 0777;
        } else {
            m->type = type == FILE_TYPE_DISK ? BLITZ_FILE_REGULAR : BLITZ_FILE_OTHER;
            m->mode = ro ? 0444 : 0666;
        }
    }
    m->size = ((uint64_t)info.nFileSizeHigh << 32) | info.nFileSizeLow;
    m->mtime_ns = blitz__wfs_ns(basic.LastWriteTime);
    m->atime_ns = blitz__wfs_ns(basic.LastAccessTime);
    m->ctime_ns = blitz__wfs_ns(basic.ChangeTime);
    m->dev = info.dwVolumeSerialNumber;
    m->ino = ((uint64_t)info.nFileIndexHigh << 32) | info.nFileIndexLow;
    m->nlink = info.nNumberOfLinks;
    return 0;
}

static int64_t blitz__wfs_stat(const wchar_t *path, int nofollow, blitz_fs_metadata *m) {
    /* Backup semantics open directories too; no access is asked for but
     * the attributes, so nothing the file's sharing forbids. */
    DWORD fl = FILE_FLAG_BACKUP_SEMANTICS | (nofollow ? FILE_FLAG_OPEN_REPARSE_POINT : 0);
    HANDLE h = CreateFileW(path, FILE_READ_ATTRIBUTES,
                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, fl, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return blitz__wfs_err();
    int64_t rc = blitz__wfs_fill_metadata(h, nofollow, m);
    CloseHandle(h);
    return rc;
}

/* CreateFileW's arguments for BLITZ_FS_* flags. */
static void blitz__wfs_open_args(int flags, uint32_t mode, DWORD *access, DWORD *disp,
                                 DWORD *attrs) {
    DWORD a = 0;
    if (flags & BLITZ_FS_READ)
        a |= GENERIC_READ;
    if (flags & BLITZ_FS_APPEND) /* appends, never overwrites */
        a |= (FILE_GENERIC_WRITE & ~(DWORD)FILE_WRITE_DATA);
    else if (flags & BLITZ_FS_WRITE)
        a |= GENERIC_WRITE;
    *access = a;
    if ((flags & BLITZ_FS_CREATE) && (flags & BLITZ_FS_EXCL))
        *disp = CREATE_NEW;
    else if ((flags & BLITZ_FS_CREATE) && (flags & BLITZ_FS_TRUNCATE))
        *disp = CREATE_ALWAYS;
    else if (flags & BLITZ_FS_CREATE)
        *disp = OPEN_ALWAYS;
    else if (flags & BLITZ_FS_TRUNCATE)
        *disp = TRUNCATE_EXISTING;
    else
        *disp = OPEN_EXISTING;
    DWORD at = (flags & BLITZ_FS_CREATE) && !(mode & 0200) ? FILE_ATTRIBUTE_READONLY
                                                           : FILE_ATTRIBUTE_NORMAL;
    if (flags & (BLITZ_FS_SYNC | BLITZ_FS_DSYNC))
        at |= FILE_FLAG_WRITE_THROUGH;
    if (flags & BLITZ_FS_DIRECT)
        at |= FILE_FLAG_NO_BUFFERING;
    if (flags & BLITZ_FS_NOFOLLOW)
        at |= FILE_FLAG_OPEN_REPARSE_POINT;
    *attrs = at;
}

/* Opens a file: a handle, or INVALID_HANDLE_VALUE with the code in *err. */
static HANDLE blitz__wfs_create(const wchar_t *path, int flags, uint32_t mode, int64_t *err) {
    DWORD access, disp, attrs;
    blitz__wfs_open_args(flags, mode, &access, &disp, &attrs);
    /* Shared as POSIX files are: others may read, write, rename and
     * delete it while it is open. Not inherited by child processes. */
    HANDLE h = CreateFileW(path, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, disp, attrs, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        *err = e == ERROR_ACCESS_DENIED && blitz__wfs_is_dir(path) ? BLITZ_EISDIR
                                                                   : blitz__from_win32(e);
        return h;
    }
    if (flags & BLITZ_FS_NOFOLLOW) {
        FILE_ATTRIBUTE_TAG_INFO tag;
        if (GetFileInformationByHandleEx(h, FileAttributeTagInfo, &tag, sizeof tag) &&
            (tag.FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) &&
            tag.ReparseTag == IO_REPARSE_TAG_SYMLINK) {
            CloseHandle(h);
            *err = BLITZ_ELOOP;
            return INVALID_HANDLE_VALUE;
        }
    }
    if (GetFileType(h) == FILE_TYPE_DISK) {
        FILE_ATTRIBUTE_TAG_INFO tag;
        if (GetFileInformationByHandleEx(h, FileAttributeTagInfo, &tag, sizeof tag) &&
            (tag.FileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
            CloseHandle(h);
            *err = BLITZ_EISDIR;
            return INVALID_HANDLE_VALUE;
        }
    }
    return h;
}

static int64_t blitz__wfs_open(const wchar_t *path, int flags, uint32_t mode) {
    int64_t err = 0;
    HANDLE h = blitz__wfs_create(path, flags, mode, &err);
    if (h == INVALID_HANDLE_VALUE)
        return err;
    int crt = _O_BINARY | _O_NOINHERIT;
    int w = (flags & (BLITZ_FS_WRITE | BLITZ_FS_APPEND)) != 0, r = (flags & BLITZ_FS_READ) != 0;
    crt |= r && w ? _O_RDWR : w ? _O_WRONLY : _O_RDONLY;
    if (flags & BLITZ_FS_APPEND)
        crt |= _O_APPEND;
    int fd = _open_osfhandle((intptr_t)h, crt);
    if (fd < 0) {
        CloseHandle(h);
        return BLITZ_EMFILE;
    }
    return fd;
}

/* A read or write's error: without the access (a read-only descriptor
 * written) it is a bad descriptor for that op, as on POSIX. */
static int64_t blitz__wfs_io_err(void) {
    DWORD e = GetLastError();
    return e == ERROR_ACCESS_DENIED ? BLITZ_EBADF : blitz__from_win32(e);
}

/* A read or write at the position of a pipe, which may be overlapped (a
 * child's pipe end: ReadFile without an OVERLAPPED is not defined for
 * those). An OVERLAPPED with an event works for both kinds; pipes have
 * no offset to misread. -1 when h is not a pipe. */
static int blitz__wfs_pipe_io(HANDLE h, int write, void *buf, DWORD want, DWORD *got) {
    if (GetFileType(h) != FILE_TYPE_PIPE)
        return -1;
    OVERLAPPED ov;
    memset(&ov, 0, sizeof ov);
    if (!(ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL)))
        return 0;
    BOOL ok = write ? WriteFile(h, buf, want, NULL, &ov) : ReadFile(h, buf, want, NULL, &ov);
    if (ok || GetLastError() == ERROR_IO_PENDING)
        ok = GetOverlappedResult(h, &ov, got, TRUE);
    DWORD e = GetLastError();
    CloseHandle(ov.hEvent);
    SetLastError(e);
    return ok ? 1 : 0;
}

/* Reads once (at most len bytes; 0 at the end). At an offset the file
 * position is put back afterwards. */
static int64_t blitz__wfs_read(HANDLE h, void *buf, size_t len, int64_t off) {
    if (h == INVALID_HANDLE_VALUE)
        return BLITZ_EBADF;
    DWORD want = len > 0x40000000u ? 0x40000000u : (DWORD)len, got = 0;
    if (off < 0) {
        int piped = blitz__wfs_pipe_io(h, 0, buf, want, &got);
        if (piped == 1 || (piped < 0 && ReadFile(h, buf, want, &got, NULL)))
            return got;
        DWORD e = GetLastError();
        return e == ERROR_BROKEN_PIPE || e == ERROR_HANDLE_EOF ? 0
               : e == ERROR_ACCESS_DENIED                      ? BLITZ_EBADF
                                                               : blitz__from_win32(e);
    }
    if (GetFileType(h) != FILE_TYPE_DISK)
        return GetFileType(h) == FILE_TYPE_UNKNOWN && GetLastError() != NO_ERROR ? BLITZ_EBADF
                                                                                 : BLITZ_ESPIPE;
    LARGE_INTEGER zero, pos;
    zero.QuadPart = 0;
    if (!SetFilePointerEx(h, zero, &pos, FILE_CURRENT))
        return blitz__wfs_err();
    OVERLAPPED ov;
    memset(&ov, 0, sizeof ov);
    ov.Offset = (DWORD)((uint64_t)off & 0xffffffffu);
    ov.OffsetHigh = (DWORD)((uint64_t)off >> 32);
    int64_t rc;
    if (ReadFile(h, buf, want, &got, &ov))
        rc = got;
    else
        rc = GetLastError() == ERROR_HANDLE_EOF ? 0 : blitz__wfs_io_err();
    SetFilePointerEx(h, pos, NULL, FILE_BEGIN);
    return rc;
}

/* Writes everything, continuing after short writes. */
static int64_t blitz__wfs_write(HANDLE h, const char *p, size_t len, int64_t off) {
    if (h == INVALID_HANDLE_VALUE)
        return BLITZ_EBADF;
    LARGE_INTEGER pos;
    if (off >= 0) {
        if (GetFileType(h) != FILE_TYPE_DISK)
            return BLITZ_ESPIPE;
        LARGE_INTEGER zero;
        zero.QuadPart = 0;
        if (!SetFilePointerEx(h, zero, &pos, FILE_CURRENT))
            return blitz__wfs_err();
    }
    size_t done = 0;
    int64_t rc = 0;
    while (done < len) {
        DWORD want = len - done > 0x40000000u ? 0x40000000u : (DWORD)(len - done), n = 0;
        OVERLAPPED ov, *pov = NULL;
        if (off >= 0) {
            uint64_t at = (uint64_t)off + done;
            memset(&ov, 0, sizeof ov);
            ov.Offset = (DWORD)(at & 0xffffffffu);
            ov.OffsetHigh = (DWORD)(at >> 32);
            pov = &ov;
        }
        int piped = pov ? -1 : blitz__wfs_pipe_io(h, 1, (void *)(uintptr_t)(p + done), want, &n);
        if (piped == 0 || (piped < 0 && !WriteFile(h, p + done, want, &n, pov))) {
            rc = blitz__wfs_io_err();
            break;
        }
        if (n == 0) {
            rc = BLITZ_EIO;
            break;
        }
        done += n;
    }
    if (off >= 0)
        SetFilePointerEx(h, pos, NULL, FILE_BEGIN);
    return rc < 0 ? rc : (int64_t)done;
}

/* Sets the end of the file at `size` (the position is left as it is). */
static int64_t blitz__wfs_set_size(HANDLE h, uint64_t size, int64_t denied) {
    if (h == INVALID_HANDLE_VALUE)
        return BLITZ_EBADF;
    FILE_END_OF_FILE_INFO eof;
    eof.EndOfFile.QuadPart = (LONGLONG)size;
    if (SetFileInformationByHandle(h, FileEndOfFileInfo, &eof, sizeof eof))
        return 0;
    DWORD e = GetLastError();
    return e == ERROR_ACCESS_DENIED ? denied : blitz__from_win32(e);
}

/* fallocate(2) mode 0: the file grows to off + len when it is shorter. */
static int64_t blitz__wfs_fallocate(HANDLE h, int64_t off, int64_t len) {
    if (h == INVALID_HANDLE_VALUE)
        return BLITZ_EBADF;
    LARGE_INTEGER size;
    if (!GetFileSizeEx(h, &size))
        return blitz__wfs_err();
    if (off > INT64_MAX - len)
        return BLITZ_EFBIG;
    if (size.QuadPart >= off + len) {
        /* Nothing to grow, but the handle must allow writing: a write of
         * nothing checks that and changes no byte. */
        DWORD n;
        OVERLAPPED ov;
        LARGE_INTEGER zero, pos;
        zero.QuadPart = 0;
        if (!SetFilePointerEx(h, zero, &pos, FILE_CURRENT))
            return blitz__wfs_err();
        memset(&ov, 0, sizeof ov);
        int64_t rc = WriteFile(h, "", 0, &n, &ov) ? 0 : blitz__wfs_io_err();
        SetFilePointerEx(h, pos, NULL, FILE_BEGIN);
        return rc;
    }
    return blitz__wfs_set_size(h, (uint64_t)(off + len), BLITZ_EBADF);
}

static int64_t blitz__wfs_fsync(HANDLE h) {
    if (h == INVALID_HANDLE_VALUE)
        return BLITZ_EBADF;
    if (FlushFileBuffers(h))
        return 0;
    DWORD e = GetLastError();
    /* A handle without write access has written nothing to flush
     * (fsync(2) on a read-only descriptor succeeds). */
    return e == ERROR_ACCESS_DENIED ? 0 : blitz__from_win32(e);
}

static int64_t blitz__wfs_unlink(const wchar_t *path) {
    if (DeleteFileW(path))
        return 0;
    DWORD e = GetLastError();
    if (e == ERROR_ACCESS_DENIED) {
        DWORD a = GetFileAttributesW(path);
        if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY) &&
            !(a & FILE_ATTRIBUTE_REPARSE_POINT))
            return BLITZ_EISDIR;
        /* unlink(2) removes a read-only file (the mode guards its
         * contents, the directory's its name). */
        if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_READONLY) &&
            SetFileAttributesW(path, a & ~(DWORD)FILE_ATTRIBUTE_READONLY)) {
            if (DeleteFileW(path))
                return 0;
            e = GetLastError();
            SetFileAttributesW(path, a);
        }
    }
    return blitz__from_win32(e);
}

static int64_t blitz__wfs_rmdir(const wchar_t *path) {
    if (RemoveDirectoryW(path))
        return 0;
    DWORD e = GetLastError();
    if (e == ERROR_ACCESS_DENIED || e == ERROR_DIRECTORY) {
        DWORD a = GetFileAttributesW(path);
        if (a != INVALID_FILE_ATTRIBUTES && !(a & FILE_ATTRIBUTE_DIRECTORY))
            return BLITZ_ENOTDIR;
    }
    return blitz__from_win32(e);
}

static int64_t blitz__wfs_mkdir(const wchar_t *path, uint32_t mode) {
    if (!CreateDirectoryW(path, NULL))
        return blitz__wfs_err();
    if (!(mode & 0200))
        SetFileAttributesW(path, FILE_ATTRIBUTE_READONLY);
    return 0;
}

static int blitz__wfs_sep(wchar_t c) {
    return c == L'/' || c == L'\\';
}

/* mkdir -p: every missing directory of the path, parents first. */
static int64_t blitz__wfs_mkdir_all(wchar_t *path, uint32_t mode) {
    size_t n = wcslen(path);
    while (n > 1 && blitz__wfs_sep(path[n - 1]))
        path[--n] = 0;
    if (n == 0)
        return BLITZ_ENOENT;
    /* The root is never created: skip "C:", a leading separator and the
     * server and share of a UNC path. */
    size_t i = 0;
    if (n >= 2 && path[1] == L':')
        i = 2;
    if (blitz__wfs_sep(path[0]) && n >= 2 && blitz__wfs_sep(path[1])) {
        int parts = 0;
        for (i = 2; i < n && parts < 2; i++)
            if (blitz__wfs_sep(path[i]))
                parts++;
    }
    for (;;) {
        while (i < n && blitz__wfs_sep(path[i]))
            i++;
        if (i >= n)
            return 0;
        while (i < n && !blitz__wfs_sep(path[i]))
            i++;
        wchar_t c = path[i];
        path[i] = 0;
        int last = i >= n;
        if (!CreateDirectoryW(path, NULL)) {
            DWORD e = GetLastError();
            DWORD a = GetFileAttributesW(path);
            if (e != ERROR_ALREADY_EXISTS && e != ERROR_ACCESS_DENIED)
                return blitz__from_win32(e);
            if (a == INVALID_FILE_ATTRIBUTES)
                return blitz__from_win32(e);
            if (!(a & FILE_ATTRIBUTE_DIRECTORY))
                return last ? BLITZ_EEXIST : BLITZ_ENOTDIR;
        } else if (!(mode & 0200)) {
            SetFileAttributesW(path, FILE_ATTRIBUTE_READONLY);
        }
        path[i] = c;
    }
}

static int blitz__wfs_dirent_cmp(const void *a, const void *b) {
    return strcmp(((const blitz_fs_dirent *)a)->name, ((const blitz_fs_dirent *)b)->name);
}

/* The first entry of directory `path` (FindFirstFileExW over "path\\*"):
 * a find handle, or INVALID_HANDLE_VALUE with the code in *err (0: the
 * directory has no entry at all). */
static HANDLE blitz__wfs_find_first(const wchar_t *path, WIN32_FIND_DATAW *fd, int64_t *err) {
    DWORD a = GetFileAttributesW(path);
    *err = a == INVALID_FILE_ATTRIBUTES      ? blitz__wfs_err()
           : !(a & FILE_ATTRIBUTE_DIRECTORY) ? BLITZ_ENOTDIR
                                             : 0;
    if (*err)
        return INVALID_HANDLE_VALUE;
    size_t n = wcslen(path);
    wchar_t *pattern = (wchar_t *)blitz__malloc((n + 3) * sizeof *pattern);
    if (!pattern) {
        *err = BLITZ_ENOMEM;
        return INVALID_HANDLE_VALUE;
    }
    memcpy(pattern, path, n * sizeof *pattern);
    if (n && !blitz__wfs_sep(path[n - 1]))
        pattern[n++] = L'\\';
    pattern[n++] = L'*';
    pattern[n] = 0;
    HANDLE f = FindFirstFileExW(pattern, FindExInfoBasic, fd, FindExSearchNameMatch, NULL, 0);
    blitz__free(pattern);
    if (f == INVALID_HANDLE_VALUE && GetLastError() != ERROR_FILE_NOT_FOUND)
        *err = blitz__wfs_err();
    return f;
}

/* A found entry's type: a symlink is a reparse point of that tag. */
static blitz_file_type blitz__wfs_find_type(const WIN32_FIND_DATAW *fd) {
    if ((fd->dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) &&
        fd->dwReserved0 == IO_REPARSE_TAG_SYMLINK)
        return BLITZ_FILE_SYMLINK;
    return (fd->dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) ? BLITZ_FILE_DIRECTORY
                                                             : BLITZ_FILE_REGULAR;
}

/* Every entry of a directory, sorted by name, in one allocation: the
 * array, then the names. */
static int64_t blitz__wfs_read_dir(const wchar_t *path, void **out) {
    WIN32_FIND_DATAW fd;
    int64_t err;
    HANDLE f = blitz__wfs_find_first(path, &fd, &err);
    if (f == INVALID_HANDLE_VALUE)
        return err;
    /* Names and types first, packed; the array is built once the count
     * is known. */
    char *names = NULL;
    char *types = NULL;
    size_t used = 0, cap = 0, count = 0, tcap = 0;
    int64_t rc = 0;
    do {
        const wchar_t *w = fd.cFileName;
        if (!wcscmp(w, L".") || !wcscmp(w, L".."))
            continue;
        size_t len = blitz__wfs_utf8_len(w);
        if (len == 0)
            continue; /* a name with no UTF-8 form cannot be named back */
        if (blitz__grow_buffer(&names, &cap, used, used + len) != 0 ||
            blitz__grow_buffer(&types, &tcap, count, count + 1) != 0) {
            rc = BLITZ_ENOMEM;
            break;
        }
        WideCharToMultiByte(CP_UTF8, 0, w, -1, names + used, (int)len, NULL, NULL);
        used += len;
        types[count++] = (char)blitz__wfs_find_type(&fd);
    } while (FindNextFileW(f, &fd));
    if (rc == 0 && GetLastError() != ERROR_NO_MORE_FILES)
        rc = blitz__wfs_err();
    FindClose(f);
    blitz_fs_dirent *list = NULL;
    if (rc == 0 && count) {
        list = (blitz_fs_dirent *)blitz__malloc(count * sizeof *list + used);
        if (!list) {
            rc = BLITZ_ENOMEM;
        } else {
            char *copy = (char *)(list + count);
            memcpy(copy, names, used);
            for (size_t i = 0; i < count; i++) {
                list[i].name = copy;
                list[i].type = (blitz_file_type)types[i];
                copy += strlen(copy) + 1;
            }
            qsort(list, count, sizeof *list, blitz__wfs_dirent_cmp);
        }
    }
    blitz__free(names);
    blitz__free(types);
    if (rc != 0)
        return rc;
    *out = list;
    return (int64_t)count;
}

/* A whole file, or BLITZ_EFBIG as soon as it has more than `limit`
 * bytes (SIZE_MAX: no limit), as fs.c's blitz__fs_read_file. */
static int64_t blitz__wfs_read_file(const wchar_t *path, size_t limit, void **out) {
    int64_t err = 0;
    HANDLE h = blitz__wfs_create(path, BLITZ_FS_READ, 0, &err);
    if (h == INVALID_HANDLE_VALUE)
        return err;
    LARGE_INTEGER size;
    int sized = GetFileType(h) == FILE_TYPE_DISK && GetFileSizeEx(h, &size) && size.QuadPart > 0;
    if (sized && (uint64_t)size.QuadPart > limit) {
        CloseHandle(h);
        return BLITZ_EFBIG;
    }
    size_t hint = sized && (uint64_t)size.QuadPart < (uint64_t)SIZE_MAX / 2
                      ? (size_t)size.QuadPart + 1
                      : 4096;
    if (limit < SIZE_MAX - 1 && hint > limit + 2)
        hint = limit + 2;
    char *buf = NULL;
    size_t used = 0, cap = 0;
    int64_t rc = blitz__grow_buffer(&buf, &cap, 0, hint);
    /* The size is a hint: the file may grow or shrink while it is read
     * (the read that finds the end needs room for one byte). */
    while (rc == 0) {
        if (used > limit) {
            rc = BLITZ_EFBIG;
            break;
        }
        if (used + 1 >= cap && (rc = blitz__grow_buffer(&buf, &cap, used, cap * 2)) != 0)
            break;
        int64_t n = blitz__wfs_read(h, buf + used, cap - used - 1, -1);
        if (n <= 0) {
            rc = n;
            break;
        }
        used += (size_t)n;
    }
    CloseHandle(h);
    if (rc < 0) {
        blitz__free(buf);
        return rc;
    }
    buf[used] = 0;
    *out = buf;
    return (int64_t)used;
}

static int64_t blitz__wfs_write_file(const wchar_t *path, const void *data, size_t len) {
    int64_t err = 0;
    HANDLE h =
        blitz__wfs_create(path, BLITZ_FS_WRITE | BLITZ_FS_CREATE | BLITZ_FS_TRUNCATE, 0666, &err);
    if (h == INVALID_HANDLE_VALUE)
        return err;
    int64_t rc = blitz__wfs_write(h, (const char *)data, len, -1);
    CloseHandle(h);
    return rc;
}

static int64_t blitz__wfs_symlink(const wchar_t *target, const wchar_t *link) {
    /* Windows resolves a symlink's target with its own separators only. */
    size_t n = wcslen(target);
    wchar_t *t = (wchar_t *)blitz__malloc((n + 1) * sizeof *t);
    if (!t)
        return BLITZ_ENOMEM;
    for (size_t i = 0; i <= n; i++)
        t[i] = target[i] == L'/' ? L'\\' : target[i];
    DWORD fl = SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE;
    if (blitz__wfs_is_dir(t))
        fl |= SYMBOLIC_LINK_FLAG_DIRECTORY;
    int64_t rc = 0;
    WIN32_FIND_DATAW found;
    /* FindFirstFileW names the link itself, not its target. */
    HANDLE f = FindFirstFileW(link, &found);
    if (f != INVALID_HANDLE_VALUE) {
        FindClose(f);
        rc = BLITZ_EEXIST;
    } else if (!CreateSymbolicLinkW(link, t, fl)) {
        DWORD e = GetLastError();
        rc = e == ERROR_PRIVILEGE_NOT_HELD ? BLITZ_EPERM : blitz__from_win32(e);
    } else if ((f = FindFirstFileW(link, &found)) == INVALID_HANDLE_VALUE) {
        rc = BLITZ_EOPNOTSUPP; /* a success that made nothing (wine's stub) */
    } else {
        FindClose(f);
    }
    blitz__free(t);
    return rc;
}

/* ENOENT for a path through a file is ENOTDIR, as POSIX has it
 * (Windows says the path was not found). */
static int64_t blitz__wfs_not_found(wchar_t *path) {
    for (size_t i = wcslen(path); i > 0; i--) {
        if (!blitz__wfs_sep(path[i - 1]) || i < 2)
            continue;
        wchar_t c = path[i - 1];
        path[i - 1] = 0;
        DWORD a = GetFileAttributesW(path);
        path[i - 1] = c;
        if (a != INVALID_FILE_ATTRIBUTES)
            return (a & FILE_ATTRIBUTE_DIRECTORY) ? BLITZ_ENOENT : BLITZ_ENOTDIR;
    }
    return BLITZ_ENOENT;
}

/* Runs a path op with the paths in UTF-16. */
static int64_t blitz__wfs_do_path(blitz__wfs_rec *f) {
    int err = 0;
    wchar_t *p = blitz__utf16(f->path, &err), *p2 = NULL;
    if (!p)
        return err;
    if (f->path2 && !(p2 = blitz__utf16(f->path2, &err))) {
        blitz__free(p);
        return err;
    }
    int64_t rc;
    switch (f->kind) {
    case BLITZ__FS_OPEN:
        rc = blitz__wfs_open(p, f->flags, f->mode);
        break;
    case BLITZ__FS_STAT:
    case BLITZ__FS_LSTAT:
        rc = blitz__wfs_stat(p, f->kind == BLITZ__FS_LSTAT, &f->md);
        break;
    case BLITZ__FS_RENAME:
        rc = MoveFileExW(p, p2, MOVEFILE_REPLACE_EXISTING) ? 0 : blitz__wfs_err();
        break;
    case BLITZ__FS_UNLINK:
        rc = blitz__wfs_unlink(p);
        break;
    case BLITZ__FS_RMDIR:
        rc = blitz__wfs_rmdir(p);
        break;
    case BLITZ__FS_MKDIR:
        rc = blitz__wfs_mkdir(p, f->mode);
        break;
    case BLITZ__FS_MKDIR_ALL:
        rc = blitz__wfs_mkdir_all(p, f->mode);
        break;
    case BLITZ__FS_READ_DIR:
        rc = blitz__wfs_read_dir(p, &f->data);
        break;
    case BLITZ__FS_READ_FILE:
        rc = blitz__wfs_read_file(p, f->len, &f->data); /* len: the limit */
        break;
    case BLITZ__FS_WRITE_FILE:
        rc = blitz__wfs_write_file(p, f->buf, f->len);
        break;
    case BLITZ__FS_SYMLINK:
        rc = blitz__wfs_symlink(p, p2);
        break;
    case BLITZ__FS_LINK: /* link(from, to): `to` is the new name */
        rc = CreateHardLinkW(p2, p, NULL) ? 0 : blitz__wfs_err();
        break;
    default:
        rc = BLITZ_EINVAL;
        break;
    }
    if (rc == BLITZ_ENOENT)
        rc = blitz__wfs_not_found(f->kind == BLITZ__FS_SYMLINK || f->kind == BLITZ__FS_LINK ? p2
                                                                                            : p);
    blitz__free(p);
    blitz__free(p2);
    return rc;
}

static int64_t blitz__wfs_do(blitz__wfs_rec *f) {
    HANDLE h = blitz__wfs_handle(f->fd);
    switch (f->kind) {
    case BLITZ__FS_CLOSE:
        return _close(f->fd) == 0 ? 0 : BLITZ_EBADF;
    case BLITZ__FS_READ:
        return blitz__wfs_read(h, f->buf, f->len, f->off);
    case BLITZ__FS_WRITE:
        return blitz__wfs_write(h, (const char *)f->buf, f->len, f->off);
    case BLITZ__FS_FSYNC:
        return blitz__wfs_fsync(h);
    case BLITZ__FS_TRUNCATE:
        /* ftruncate(2) on a descriptor not open for writing: EINVAL. */
        return blitz__wfs_set_size(h, (uint64_t)f->off, BLITZ_EINVAL);
    case BLITZ__FS_FSTAT:
        return h == INVALID_HANDLE_VALUE ? BLITZ_EBADF : blitz__wfs_fill_metadata(h, 0, &f->md);
    case BLITZ__FS_FALLOCATE:
        return blitz__wfs_fallocate(h, f->off, (int64_t)f->len);
    default:
        return blitz__wfs_do_path(f);
    }
}

/* ---- the op's life ------------------------------------------------------------------ */

static void blitz__wfs_exec(blitz__pool_rec *rec, int cancelled) {
    blitz__wfs_rec *f = (blitz__wfs_rec *)rec;
    f->result = cancelled ? BLITZ_ECANCELED : blitz__wfs_do(f);
}

/* Frees what the record still holds; an opened file nobody took is
 * closed. */
static void blitz__wfs_discard(blitz__pool_rec *rec) {
    blitz__wfs_rec *f = (blitz__wfs_rec *)rec;
    if (f->kind == BLITZ__FS_OPEN && f->result >= 0)
        _close((int)f->result);
    blitz__free(f->data);
    blitz__free(f->buf);
    blitz__free(f->path);
}

/* Copies the paths and the data to write into the record, makes room for
 * a read. */
static int blitz__wfs_fill(blitz__wfs_rec *f, const blitz__fs_req *r) {
    /* One read, one write and one flush here: the offset (-1: the file
     * position) and the buffers say the rest. */
    f->kind = r->kind == BLITZ__FS_PREAD || r->kind == BLITZ__FS_READV     ? BLITZ__FS_READ
              : r->kind == BLITZ__FS_PWRITE || r->kind == BLITZ__FS_WRITEV ? BLITZ__FS_WRITE
              : r->kind == BLITZ__FS_FDATASYNC                             ? BLITZ__FS_FSYNC
                                                                           : r->kind;
    f->fd = r->fd;
    f->flags = r->flags;
    f->mode = r->mode;
    f->off = r->off;
    f->result = -1;
    if (r->path) {
        size_t la = strlen(r->path) + 1, lb = r->path2 ? strlen(r->path2) + 1 : 0;
        char *p = (char *)blitz__malloc(la + lb);
        if (!p)
            return BLITZ_ENOMEM;
        memcpy(p, r->path, la);
        if (r->path2)
            memcpy(p + la, r->path2, lb);
        f->path = p;
        f->path2 = r->path2 ? p + la : NULL;
    }
    size_t len = r->len;
    if (r->iov) {
        len = 0;
        for (int i = 0; i < r->iovcnt; i++) {
            if (!r->iov[i].base && r->iov[i].len)
                return BLITZ_EFAULT;
            if (r->iov[i].len > SIZE_MAX - len)
                return BLITZ_EINVAL;
            len += r->iov[i].len;
        }
    }
    int read = f->kind == BLITZ__FS_READ;
    if (read && len > BLITZ_FS_MAX_READ)
        len = BLITZ_FS_MAX_READ;
    f->len = len;
    if (len && (read || r->buf || r->iov)) {
        f->buf = blitz__malloc(len);
        if (!f->buf)
            return BLITZ_ENOMEM;
        if (!read && r->iov) {
            size_t at = 0;
            for (int i = 0; i < r->iovcnt; i++) {
                if (r->iov[i].len)
                    memcpy((char *)f->buf + at, r->iov[i].base, r->iov[i].len);
                at += r->iov[i].len;
            }
        } else if (!read) {
            memcpy(f->buf, r->buf, len);
        }
    }
    return 0;
}

static void blitz__wfs_take(blitz_fs_op *op, blitz__wfs_rec *f) {
    op->result = f->result;
    if (f->result > 0 && f->kind == BLITZ__FS_READ) {
        if (op->blitz__iov) {
            size_t at = 0, left = (size_t)f->result;
            for (int i = 0; i < op->blitz__iovcnt && left; i++) {
                size_t n = op->blitz__iov[i].len < left ? op->blitz__iov[i].len : left;
                if (n)
                    memcpy(op->blitz__iov[i].base, (char *)f->buf + at, n);
                at += n;
                left -= n;
            }
        } else {
            memcpy(op->blitz__out, f->buf, (size_t)f->result);
        }
    }
    if (f->result == 0 &&
        (f->kind == BLITZ__FS_STAT || f->kind == BLITZ__FS_LSTAT || f->kind == BLITZ__FS_FSTAT))
        *(blitz_fs_metadata *)op->blitz__out = f->md;
    op->data = f->data;
    f->data = NULL;
    f->result = -1; /* an opened file is the caller's now */
    blitz__pool_rec_free(&f->base);
}

/* A request that cannot reach the pool ends with `err`; a close runs
 * here instead (the caller has given the descriptor up). */
static blitz_poll blitz__wfs_unstarted(blitz_fs_op *f, const blitz__fs_req *r, int err) {
    if (r->kind == BLITZ__FS_CLOSE)
        err = _close(r->fd) == 0 ? 0 : BLITZ_EBADF;
    f->result = err;
    return BLITZ_READY;
}

static blitz_poll blitz__fs_call(blitz_cx *cx, blitz_fs_op *f, const blitz__fs_req *r) {
    if (!f)
        return BLITZ_READY;
    blitz__pool_rec *done;
    if (!blitz__pool_op_idle(&f->blitz__op)) {
        if (blitz__pool_op_poll(cx, &f->blitz__op, &done) == BLITZ_PENDING)
            return blitz__pending(cx, blitz_fs_cancel, f);
        blitz__wfs_take(f, (blitz__wfs_rec *)done);
        return BLITZ_READY;
    }
    f->data = NULL;
    if (!cx) {
        f->result = BLITZ_EINVAL;
        return BLITZ_READY;
    }
    blitz__wfs_rec *rec =
        (blitz__wfs_rec *)blitz__pool_rec_new(sizeof *rec, blitz__wfs_exec, blitz__wfs_discard);
    if (!rec)
        return blitz__wfs_unstarted(f, r, BLITZ_ENOMEM);
    int rc = blitz__wfs_fill(rec, r);
    if (rc != 0) {
        blitz__pool_rec_free(&rec->base);
        f->result = rc;
        return BLITZ_READY;
    }
    f->blitz__out = r->md ? (void *)r->md : (void *)(uintptr_t)r->buf;
    f->blitz__iov = r->iov;
    f->blitz__iovcnt = r->iovcnt;
    if (blitz__pool_op_start(cx, &f->blitz__op, &rec->base, &rc) == BLITZ_PENDING)
        return blitz__pending(cx, blitz_fs_cancel, f);
    return blitz__wfs_unstarted(f, r, rc);
}

/* The flags of an open, checked: Windows takes them as they are. */
static int blitz__fs_open_flags(int flags, int *out) {
    const int known = BLITZ_FS_READ | BLITZ_FS_WRITE | BLITZ_FS_APPEND | BLITZ_FS_CREATE |
                      BLITZ_FS_TRUNCATE | BLITZ_FS_EXCL | BLITZ_FS_SYNC | BLITZ_FS_DSYNC |
                      BLITZ_FS_DIRECT | BLITZ_FS_NOFOLLOW;
    if ((flags & ~known) || !(flags & (BLITZ_FS_READ | BLITZ_FS_WRITE | BLITZ_FS_APPEND)))
        return BLITZ_EINVAL;
    *out = flags;
    return 0;
}

BLITZ_API void blitz_fs_cancel(blitz_cx *cx, void *p) {
    (void)cx;
    if (p)
        blitz__pool_op_cancel(&((blitz_fs_op *)p)->blitz__op);
}

#endif /* BLITZ__WIN32 */
