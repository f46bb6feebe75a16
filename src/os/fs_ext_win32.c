/* The work of api_fs.h's ops on Windows (fs_job.c lists it; the front
 * ends are those of fs_meta.c, fs_tree.c and fs_dir.c). Each runs on a
 * pool thread with the paths turned into UTF-16, through fs_win32.c's
 * helpers, and answers as POSIX does where Windows has the concept:
 *   - permission bits are the read-only attribute (fs_win32.c's rule);
 *   - owners do not exist: chown is BLITZ_ENOSYS unless it keeps both;
 *   - BLITZ_FS_CAN_EXEC asks only that the path exists;
 *   - times are kept in 100 ns units;
 *   - readlink reads symlinks and junctions (reparse points);
 *   - statfs has no inode figures (files and files_free are 0). */
#include "../io/io.h"
#if BLITZ__WIN32

/* A path's UTF-16 copy (blitz__free), or NULL with the code in *rc. */
static wchar_t *blitz__wfx_wide(const char *path, int64_t *rc) {
    int err = 0;
    wchar_t *w = blitz__utf16(path, &err);
    *rc = err;
    return w;
}

/* A code for a path op's failure: not found through a file is
 * BLITZ_ENOTDIR, as fs_win32.c's ops say. */
static int64_t blitz__wfx_fail(wchar_t *path, int64_t rc) {
    return rc == BLITZ_ENOENT ? blitz__wfs_not_found(path) : rc;
}

/* A handle on path `p` itself, a directory too, for `access` (`flags`
 * besides backup semantics); or INVALID_HANDLE_VALUE with the code in
 * *rc. Shared as POSIX files are. */
static HANDLE blitz__wfx_open(wchar_t *p, DWORD access, DWORD flags, int64_t *rc) {
    HANDLE h = CreateFileW(p, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | flags, NULL);
    if (h == INVALID_HANDLE_VALUE)
        *rc = blitz__wfx_fail(p, blitz__wfs_err());
    return h;
}

/* `attrs` with the read-only attribute as `mode` says (no 0200). */
static DWORD blitz__wfx_mode_attrs(DWORD attrs, uint32_t mode) {
    attrs =
        (mode & 0200) ? attrs & ~(DWORD)FILE_ATTRIBUTE_READONLY : attrs | FILE_ATTRIBUTE_READONLY;
    attrs &= ~(DWORD)FILE_ATTRIBUTE_NORMAL;
    return attrs ? attrs : FILE_ATTRIBUTE_NORMAL;
}

static int64_t blitz__wfx_set_attrs(HANDLE h, uint32_t mode) {
    FILE_BASIC_INFO basic;
    if (!GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof basic))
        return blitz__wfs_err();
    DWORD attrs = blitz__wfx_mode_attrs(basic.FileAttributes, mode);
    memset(&basic, 0, sizeof basic); /* times of 0: left as they are */
    basic.FileAttributes = attrs;
    return SetFileInformationByHandle(h, FileBasicInfo, &basic, sizeof basic) ? 0
                                                                              : blitz__wfs_err();
}

static int64_t blitz__wfx_set_times(HANDLE h, const FILETIME *a, const FILETIME *m) {
    return SetFileTime(h, NULL, a, m) ? 0 : blitz__wfs_err();
}

/* Sets `fd`'s mode (`a` NULL) or times through its own handle, whose
 * writes then leave the times alone; a descriptor opened without the
 * access to attributes goes through a second handle. */
static int64_t blitz__wfx_fd_set(int fd, uint32_t mode, const FILETIME *a, const FILETIME *m,
                                 int times) {
    HANDLE h = blitz__wfs_handle(fd);
    if (h == INVALID_HANDLE_VALUE)
        return BLITZ_EBADF;
    int64_t rc = times ? blitz__wfx_set_times(h, a, m) : blitz__wfx_set_attrs(h, mode);
    if (rc != BLITZ_EACCES)
        return rc;
    HANDLE again = ReOpenFile(h, FILE_WRITE_ATTRIBUTES,
                              FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, 0);
    if (again == INVALID_HANDLE_VALUE)
        return rc;
    rc = times ? blitz__wfx_set_times(again, a, m) : blitz__wfx_set_attrs(again, mode);
    CloseHandle(again);
    return rc;
}

/* ---- positions, permissions, owners, times, access ----------------------------------- */

static int64_t blitz__fsm_seek(blitz__fsx_rec *r) {
    HANDLE h = blitz__wfs_handle(r->fd);
    if (h == INVALID_HANDLE_VALUE)
        return BLITZ_EBADF;
    if (GetFileType(h) != FILE_TYPE_DISK)
        return BLITZ_ESPIPE;
    LARGE_INTEGER to, at;
    to.QuadPart = r->a;
    /* SEEK_SET, SEEK_CUR and SEEK_END are FILE_BEGIN, _CURRENT, _END. */
    if (SetFilePointerEx(h, to, &at, (DWORD)r->how))
        return (int64_t)at.QuadPart;
    DWORD e = GetLastError();
    return e == ERROR_NEGATIVE_SEEK ? BLITZ_EINVAL : blitz__from_win32(e);
}

static int64_t blitz__fsm_chmod(blitz__fsx_rec *r) {
    if (!r->path)
        return blitz__wfx_fd_set(r->fd, r->mode, NULL, NULL, 0);
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(r->path, &rc);
    if (!p)
        return rc;
    DWORD a = GetFileAttributesW(p);
    if (a == INVALID_FILE_ATTRIBUTES || !SetFileAttributesW(p, blitz__wfx_mode_attrs(a, r->mode)))
        rc = blitz__wfx_fail(p, blitz__wfs_err());
    blitz__free(p);
    return rc;
}

static int64_t blitz__fsm_chown(blitz__fsx_rec *r) {
    int keep = r->uid == BLITZ_FS_ID_KEEP && r->gid == BLITZ_FS_ID_KEEP;
    if (!r->path)
        return blitz__wfs_handle(r->fd) == INVALID_HANDLE_VALUE ? BLITZ_EBADF
               : keep                                           ? 0
                                                                : BLITZ_ENOSYS;
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(r->path, &rc);
    if (!p)
        return rc;
    if (GetFileAttributesW(p) == INVALID_FILE_ATTRIBUTES)
        rc = blitz__wfx_fail(p, blitz__wfs_err());
    else if (!keep)
        rc = BLITZ_ENOSYS;
    blitz__free(p);
    return rc;
}

/* A time for SetFileTime: NULL to keep it. */
static const FILETIME *blitz__wfx_time(int64_t ns, FILETIME *ft) {
    if (ns == BLITZ_FS_TIME_KEEP)
        return NULL;
    if (ns == BLITZ_FS_TIME_NOW) {
        GetSystemTimeAsFileTime(ft);
        return ft;
    }
    uint64_t t = (uint64_t)ns / 100u + 116444736000000000u; /* 1970 in 1601's units */
    ft->dwLowDateTime = (DWORD)(t & 0xffffffffu);
    ft->dwHighDateTime = (DWORD)(t >> 32);
    return ft;
}

static int64_t blitz__fsm_utimes(blitz__fsx_rec *r) {
    FILETIME at, mt;
    const FILETIME *a = blitz__wfx_time(r->a, &at), *m = blitz__wfx_time(r->b, &mt);
    if (!r->path)
        return blitz__wfx_fd_set(r->fd, 0, a, m, 1);
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(r->path, &rc);
    if (!p)
        return rc;
    HANDLE h = blitz__wfx_open(p, FILE_WRITE_ATTRIBUTES, 0, &rc);
    if (h != INVALID_HANDLE_VALUE) {
        rc = blitz__wfx_set_times(h, a, m);
        CloseHandle(h);
    }
    blitz__free(p);
    return rc;
}

static int64_t blitz__fsm_access(blitz__fsx_rec *r) {
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(r->path, &rc);
    if (!p)
        return rc;
    DWORD a = GetFileAttributesW(p);
    DWORD want = ((r->how & BLITZ_FS_CAN_READ) ? GENERIC_READ : 0) |
                 ((r->how & BLITZ_FS_CAN_WRITE) ? GENERIC_WRITE : 0);
    if (a == INVALID_FILE_ATTRIBUTES) {
        rc = blitz__wfx_fail(p, blitz__wfs_err());
    } else if ((a & FILE_ATTRIBUTE_DIRECTORY) && want) {
        /* A directory's contents are readable and changeable unless it
         * is read-only (which Windows itself only advises). */
        rc = (r->how & BLITZ_FS_CAN_WRITE) && (a & FILE_ATTRIBUTE_READONLY) ? BLITZ_EACCES : 0;
    } else if (want) {
        /* Whether it could be opened so now: the attribute, the access
         * lists and other openers' sharing all answer. */
        HANDLE h = CreateFileW(p, want, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                               NULL, OPEN_EXISTING, 0, NULL);
        if (h == INVALID_HANDLE_VALUE)
            rc = blitz__wfx_fail(p, blitz__wfs_err());
        else
            CloseHandle(h);
    }
    blitz__free(p);
    return rc;
}

/* ---- links read back, canonical paths, file-system figures --------------------------- */

/* UTF-16 text of `n` units as UTF-8 into r->data; its length. */
static int64_t blitz__wfx_utf8_out(blitz__fsx_rec *r, const wchar_t *w, int n) {
    int len = n ? WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w, n, NULL, 0, NULL, NULL) : 0;
    if (n && len <= 0)
        return BLITZ_EIO; /* an unpaired surrogate: no UTF-8 form */
    char *out = (char *)blitz__malloc((size_t)len + 1);
    if (!out)
        return BLITZ_ENOMEM;
    if (len)
        WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w, n, out, len, NULL, NULL);
    out[len] = '\0';
    r->data = out;
    return len;
}

/* The reparse data of a symlink or junction: the tag, then the lengths
 * and offsets of its two names (bytes into the path buffer), a symlink's
 * flags, then the buffer. Read by offset: mingw's headers may lack the
 * struct. */
#define BLITZ__WFX_REPARSE_MAX 16384u
#ifndef FSCTL_GET_REPARSE_POINT /* winioctl.h's, left out by a lean windows.h */
#define FSCTL_GET_REPARSE_POINT 0x000900a8
#endif

static int64_t blitz__fsm_readlink(blitz__fsx_rec *r) {
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(r->path, &rc);
    if (!p)
        return rc;
    HANDLE h = blitz__wfx_open(p, FILE_READ_ATTRIBUTES, FILE_FLAG_OPEN_REPARSE_POINT, &rc);
    unsigned char *buf = NULL;
    DWORD got = 0;
    if (h != INVALID_HANDLE_VALUE) {
        if (!(buf = (unsigned char *)blitz__malloc(BLITZ__WFX_REPARSE_MAX))) {
            rc = BLITZ_ENOMEM;
        } else if (!DeviceIoControl(h, FSCTL_GET_REPARSE_POINT, NULL, 0, buf,
                                    BLITZ__WFX_REPARSE_MAX, &got, NULL)) {
            DWORD e = GetLastError();
            /* Not a link (readlink(2) says EINVAL), or a system that
             * keeps no reparse points. */
            rc = e == ERROR_NOT_A_REPARSE_POINT || e == ERROR_INVALID_FUNCTION ||
                         e == ERROR_NOT_SUPPORTED
                     ? BLITZ_EINVAL
                     : blitz__from_win32(e);
        }
        CloseHandle(h);
    }
    if (rc == 0) {
        uint32_t tag;
        uint16_t names[4]; /* substitute offset, length; print offset, length */
        memcpy(&tag, buf, sizeof tag);
        size_t start = tag == IO_REPARSE_TAG_SYMLINK ? 20 : 16;
        if ((tag != IO_REPARSE_TAG_SYMLINK && tag != IO_REPARSE_TAG_MOUNT_POINT) || got < start) {
            rc = BLITZ_EINVAL;
        } else {
            memcpy(names, buf + 8, sizeof names);
            /* The name to show, else the one Windows follows, without
             * its "\??\" prefix. */
            size_t off = names[3] ? names[2] : names[0], len = names[3] ? names[3] : names[1];
            if (start + off + len > got) {
                rc = BLITZ_EIO;
            } else {
                wchar_t *name = (wchar_t *)blitz__malloc(len + sizeof(wchar_t));
                if (!name) {
                    rc = BLITZ_ENOMEM;
                } else {
                    memcpy(name, buf + start + off, len);
                    int n = (int)(len / sizeof(wchar_t)), skip = 0;
                    if (!names[3] && n >= 4 && !wcsncmp(name, L"\\??\\", 4))
                        skip = 4;
                    rc = blitz__wfx_utf8_out(r, name + skip, n - skip);
                    blitz__free(name);
                }
            }
        }
    }
    blitz__free(buf);
    blitz__free(p);
    return rc;
}

static int64_t blitz__fsm_realpath(blitz__fsx_rec *r) {
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(r->path, &rc);
    if (!p)
        return rc;
    HANDLE h = blitz__wfx_open(p, 0, 0, &rc);
    wchar_t *full = NULL;
    DWORD n = 0;
    if (h != INVALID_HANDLE_VALUE) {
        DWORD want = GetFinalPathNameByHandleW(h, NULL, 0, VOLUME_NAME_DOS);
        if (want == 0)
            rc = blitz__wfs_err();
        else if (!(full = (wchar_t *)blitz__malloc((size_t)want * sizeof *full)))
            rc = BLITZ_ENOMEM;
        else if ((n = GetFinalPathNameByHandleW(h, full, want, VOLUME_NAME_DOS)) == 0 || n >= want)
            rc = n ? BLITZ_EAGAIN : blitz__wfs_err(); /* renamed meanwhile: longer */
        CloseHandle(h);
    }
    if (rc == 0) {
        /* "\\?\C:\x" is "C:\x"; "\\?\UNC\host\share" is "\\host\share". */
        wchar_t *at = full;
        if (n >= 8 && !wcsncmp(full, L"\\\\?\\UNC\\", 8)) {
            at = full + 6;
            at[0] = L'\\';
        } else if (n >= 4 && !wcsncmp(full, L"\\\\?\\", 4)) {
            at = full + 4;
        }
        rc = blitz__wfx_utf8_out(r, at, (int)(n - (DWORD)(at - full)));
    }
    blitz__free(full);
    blitz__free(p);
    return rc;
}

static int64_t blitz__fsm_statfs(blitz__fsx_rec *r) {
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(r->path, &rc);
    if (!p)
        return rc;
    wchar_t root[MAX_PATH + 1];
    DWORD per_cluster, sector, free_clusters, clusters, name_max = 0;
    ULARGE_INTEGER avail, total, free_bytes;
    if (GetFileAttributesW(p) == INVALID_FILE_ATTRIBUTES) {
        rc = blitz__wfx_fail(p, blitz__wfs_err());
    } else if (!GetVolumePathNameW(p, root, MAX_PATH + 1) ||
               !GetDiskFreeSpaceW(root, &per_cluster, &sector, &free_clusters, &clusters) ||
               !GetDiskFreeSpaceExW(root, &avail, &total, &free_bytes)) {
        rc = blitz__wfs_err();
    } else {
        uint64_t block = (uint64_t)per_cluster * sector;
        if (block == 0)
            block = 4096;
        if (!GetVolumeInformationW(root, NULL, 0, NULL, &name_max, NULL, NULL, 0))
            name_max = 255;
        r->info.block_size = block;
        r->info.blocks = total.QuadPart / block;
        r->info.blocks_free = free_bytes.QuadPart / block;
        r->info.blocks_avail = avail.QuadPart / block;
        r->info.files = 0;
        r->info.files_free = 0;
        r->info.name_max = name_max;
    }
    blitz__free(p);
    return rc;
}

/* ---- temporary files, copies, trees ------------------------------------------------- */

static int64_t blitz__fst_create(const char *name, int dir) {
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(name, &rc);
    if (!p)
        return rc;
    if (dir)
        rc = CreateDirectoryW(p, NULL) ? 0 : blitz__wfs_err();
    else
        rc = blitz__wfs_open(p, BLITZ_FS_READ | BLITZ_FS_WRITE | BLITZ_FS_CREATE | BLITZ_FS_EXCL,
                             0600);
    rc = blitz__wfx_fail(p, rc);
    blitz__free(p);
    return rc;
}

static void blitz__fst_remove_made(const char *name, int dir, int fd) {
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(name, &rc);
    if (!dir)
        _close(fd);
    if (!p)
        return;
    if (dir)
        RemoveDirectoryW(p);
    else
        DeleteFileW(p);
    blitz__free(p);
}

/* Copies through memory, checking between chunks whether to give up. */
static int64_t blitz__wfx_copy_loop(blitz__fsx_rec *r, HANDLE in, HANDLE out) {
    char *buf = (char *)blitz__malloc(BLITZ__FST_BUF);
    if (!buf)
        return BLITZ_ENOMEM;
    int64_t total = 0, chunk = 0;
    for (;;) {
        if (chunk >= (int64_t)BLITZ__FST_CHUNK) {
            chunk = 0;
            if (blitz__fsx_give_up(r)) {
                total = BLITZ_ECANCELED;
                break;
            }
        }
        int64_t n = blitz__wfs_read(in, buf, BLITZ__FST_BUF, -1);
        if (n > 0)
            n = blitz__wfs_write(out, buf, (size_t)n, -1);
        if (n <= 0) {
            total = n < 0 ? n : total;
            break;
        }
        total += n;
        chunk += n;
    }
    blitz__free(buf);
    return total;
}

static int64_t blitz__fst_copy(blitz__fsx_rec *r) {
    int64_t rc;
    wchar_t *from = blitz__wfx_wide(r->path, &rc), *to = NULL;
    if (!from)
        return rc;
    if (!(to = blitz__wfx_wide(r->path2, &rc))) {
        blitz__free(from);
        return rc;
    }
    blitz_fs_metadata src, dst;
    memset(&src, 0, sizeof src);
    memset(&dst, 0, sizeof dst);
    src.mode = 0666;
    HANDLE in = blitz__wfs_create(from, BLITZ_FS_READ, 0, &rc), out = INVALID_HANDLE_VALUE;
    int regular = 0;
    if (in == INVALID_HANDLE_VALUE) {
        rc = blitz__wfx_fail(from, rc);
    } else {
        /* A device (NUL, a console) has no figures: copied as a stream. */
        regular = GetFileType(in) == FILE_TYPE_DISK;
        if (regular)
            rc = blitz__wfs_fill_metadata(in, 0, &src);
        /* Not truncated at open: the destination may be the source. */
        if (rc == 0 && (out = blitz__wfs_create(to, BLITZ_FS_WRITE | BLITZ_FS_CREATE, 0666, &rc)) ==
                           INVALID_HANDLE_VALUE)
            rc = blitz__wfx_fail(to, rc);
    }
    if (rc == 0 && GetFileType(out) == FILE_TYPE_DISK) {
        if ((rc = blitz__wfs_fill_metadata(out, 0, &dst)) == 0 && regular && dst.dev == src.dev &&
            dst.ino == src.ino)
            rc = BLITZ_EINVAL;
        else if (rc == 0)
            rc = blitz__wfs_set_size(out, 0, BLITZ_EACCES);
    }
    if (rc == 0) {
        rc = blitz__wfx_copy_loop(r, in, out);
        /* The source's read-only attribute, as POSIX copies the mode. */
        if (rc >= 0 && dst.type == BLITZ_FILE_REGULAR) {
            int64_t set = blitz__wfx_set_attrs(out, src.mode);
            rc = set < 0 ? set : rc;
        }
    }
    if (out != INVALID_HANDLE_VALUE)
        CloseHandle(out);
    if (in != INVALID_HANDLE_VALUE)
        CloseHandle(in);
    blitz__free(from);
    blitz__free(to);
    return rc;
}

/* "dir\name" (blitz__free), or NULL. */
static wchar_t *blitz__wfx_join(const wchar_t *dir, const wchar_t *name) {
    size_t a = wcslen(dir), b = wcslen(name);
    wchar_t *p = (wchar_t *)blitz__malloc((a + b + 2) * sizeof *p);
    if (!p)
        return NULL;
    memcpy(p, dir, a * sizeof *p);
    p[a] = L'\\';
    memcpy(p + a + 1, name, (b + 1) * sizeof *p);
    return p;
}

/* Removes `path` (its attributes `attrs`): a directory after its
 * entries; a link to a directory (a symlink or junction) as itself,
 * never what it points to. An entry that vanished meanwhile is fine. */
static int64_t blitz__wfx_remove(blitz__fsx_rec *r, const wchar_t *path, DWORD attrs) {
    if (!(attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        int64_t rc = blitz__wfs_unlink(path);
        return rc == BLITZ_ENOENT ? 0 : rc;
    }
    int64_t rc = 0;
    if (!(attrs & FILE_ATTRIBUTE_REPARSE_POINT)) {
        WIN32_FIND_DATAW fd;
        HANDLE f = blitz__wfs_find_first(path, &fd, &rc);
        if (f == INVALID_HANDLE_VALUE)
            return rc == BLITZ_ENOENT ? 0 : rc;
        do {
            if (blitz__fsx_give_up(r)) {
                rc = BLITZ_ECANCELED;
                break;
            }
            if (!wcscmp(fd.cFileName, L".") || !wcscmp(fd.cFileName, L".."))
                continue;
            wchar_t *sub = blitz__wfx_join(path, fd.cFileName);
            rc = sub ? blitz__wfx_remove(r, sub, fd.dwFileAttributes) : BLITZ_ENOMEM;
            blitz__free(sub);
        } while (rc == 0 && FindNextFileW(f, &fd));
        if (rc == 0 && GetLastError() != ERROR_NO_MORE_FILES)
            rc = blitz__wfs_err();
        FindClose(f);
        if (rc != 0)
            return rc;
    }
    /* A read-only directory refuses removal until it is writable. */
    if (attrs & FILE_ATTRIBUTE_READONLY)
        SetFileAttributesW(path, attrs & ~(DWORD)FILE_ATTRIBUTE_READONLY);
    if (RemoveDirectoryW(path) || GetLastError() == ERROR_FILE_NOT_FOUND)
        return 0;
    return blitz__wfs_err();
}

static int64_t blitz__fst_remove_all(blitz__fsx_rec *r) {
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(r->path, &rc);
    if (!p)
        return rc;
    DWORD a = GetFileAttributesW(p);
    rc = a == INVALID_FILE_ATTRIBUTES ? blitz__wfx_fail(p, blitz__wfs_err())
                                      : blitz__wfx_remove(r, p, a);
    blitz__free(p);
    return rc;
}

/* ---- the directory stream ----------------------------------------------------------- */

typedef struct {
    HANDLE find; /* INVALID_HANDLE_VALUE once at the end */
    WIN32_FIND_DATAW entry;
    int unread;      /* `entry` is one not handed out yet */
    char name[1024]; /* the last one handed out, in UTF-8 (255 units at most) */
} blitz__wfx_dir;

static int64_t blitz__fsd_stream_open(const char *path, void **stream) {
    int64_t rc;
    wchar_t *p = blitz__wfx_wide(path, &rc);
    if (!p)
        return rc;
    blitz__wfx_dir *d = (blitz__wfx_dir *)blitz__calloc(sizeof *d);
    if (!d) {
        blitz__free(p);
        return BLITZ_ENOMEM;
    }
    d->find = blitz__wfs_find_first(p, &d->entry, &rc);
    rc = blitz__wfx_fail(p, rc);
    blitz__free(p);
    if (rc != 0) {
        blitz__free(d);
        return rc;
    }
    d->unread = d->find != INVALID_HANDLE_VALUE;
    *stream = d;
    return 0;
}

static int64_t blitz__fsd_stream_next(void *stream, const char **name, blitz_file_type *type) {
    blitz__wfx_dir *d = (blitz__wfx_dir *)stream;
    for (;;) {
        if (d->find == INVALID_HANDLE_VALUE)
            return 0;
        if (!d->unread && !FindNextFileW(d->find, &d->entry)) {
            DWORD e = GetLastError();
            if (e != ERROR_NO_MORE_FILES)
                return blitz__from_win32(e);
            FindClose(d->find);
            d->find = INVALID_HANDLE_VALUE;
            return 0;
        }
        d->unread = 0;
        /* A name with no UTF-8 form could not be named back: skipped. */
        if (WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, d->entry.cFileName, -1, d->name,
                                (int)sizeof d->name, NULL, NULL) <= 0)
            continue;
        *name = d->name;
        *type = blitz__wfs_find_type(&d->entry);
        return 1;
    }
}

static void blitz__fsd_stream_close(void *stream) {
    blitz__wfx_dir *d = (blitz__wfx_dir *)stream;
    if (d->find != INVALID_HANDLE_VALUE)
        FindClose(d->find);
    blitz__free(d);
}

#endif /* BLITZ__WIN32 */
