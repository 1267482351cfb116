/*
 * faultfs: a file-system fault layer for a whole process, loaded with LD_PRELOAD (test-only).
 * It makes the files under one folder behave as if their file system were full or mounted
 * read-only, without root (no tmpfs to mount) and without changing the program under test.
 *
 *   NATIVE_FAULTFS_DIR   the folder (absolute, as the process names it); nothing else is touched
 *   NATIVE_FAULTFS_CTL   a file holding the fault now, read at every call, so that a test can
 *                        change it while the process runs: "full", "ro", or anything else (none)
 *
 * "full": every write to a file under the folder and every extension (ftruncate, fallocate)
 * fails with ENOSPC, as on a full disk. "ro": every open for writing, creation,
 * rename, removal, new folder and write fails with EROFS, as on a read-only mount. Reads, and
 * everything outside the folder, go through unchanged.
 *
 * It wraps the libc calls that Rust's std and SQLite's unix VFS make (open/openat and their 64
 * variants, write, pwrite, writev, ftruncate, fallocate, rename, unlink, mkdir); the real ones
 * are found with dlsym(RTLD_NEXT). The control file is read with raw system calls, so that
 * reading it does not come back here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum fault { NONE, FULL, RO };

static enum fault fault_now(void) {
    const char *ctl = getenv("NATIVE_FAULTFS_CTL");
    if (!ctl) return NONE;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, ctl, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NONE;
    char buf[16] = {0};
    long n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
    syscall(SYS_close, fd);
    if (n <= 0) return NONE;
    if (strncmp(buf, "full", 4) == 0) return FULL;
    if (strncmp(buf, "ro", 2) == 0) return RO;
    return NONE;
}

/* Whether an absolute path is the folder or under it. */
static int under_dir(const char *path) {
    const char *dir = getenv("NATIVE_FAULTFS_DIR");
    if (!dir || !*dir || !path) return 0;
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == 0);
}

/* The absolute path of a path relative to dirfd. */
static int path_at(int dirfd, const char *path, char *out, size_t cap) {
    if (!path) return 0;
    if (path[0] == '/') {
        snprintf(out, cap, "%s", path);
        return 1;
    }
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (syscall(SYS_getcwd, base, sizeof(base)) < 0) return 0;
    } else {
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
        long n = syscall(SYS_readlinkat, AT_FDCWD, link, base, sizeof(base) - 1);
        if (n < 0) return 0;
        base[n] = 0;
    }
    snprintf(out, cap, "%s/%s", base, path);
    return 1;
}

static int fd_under_dir(int fd) {
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    long n = syscall(SYS_readlinkat, AT_FDCWD, link, target, sizeof(target) - 1);
    if (n < 0) return 0;
    target[n] = 0;
    return under_dir(target);
}

/* The error for a write to fd now, or 0. */
static int write_fault(int fd) {
    if (!getenv("NATIVE_FAULTFS_DIR")) return 0;
    enum fault f = fault_now();
    if (f == NONE || !fd_under_dir(fd)) return 0;
    return f == FULL ? ENOSPC : EROFS;
}

/* The error for changing the name path (relative to dirfd) now, or 0: read-only only. */
static int name_fault(int dirfd, const char *path) {
    if (!getenv("NATIVE_FAULTFS_DIR")) return 0;
    enum fault f = fault_now();
    if (f == NONE) return 0;
    char abs[PATH_MAX];
    if (!path_at(dirfd, path, abs, sizeof(abs)) || !under_dir(abs)) return 0;
    return f == RO ? EROFS : 0;
}

/* The error for an open with flags now, or 0. */
static int open_fault(int dirfd, const char *path, int flags) {
    if (!getenv("NATIVE_FAULTFS_DIR")) return 0;
    enum fault f = fault_now();
    if (f == NONE) return 0;
    char abs[PATH_MAX];
    if (!path_at(dirfd, path, abs, sizeof(abs)) || !under_dir(abs)) return 0;
    int writes = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
    /* On a full disk a new, empty file is still made (an inode is left), as on a tmpfs whose
     * size is reached: what fails is writing to it, and it is left behind unless removed. */
    return f == RO && writes ? EROFS : 0;
}

#define REAL(ret, name, ...)                                         \
    static ret (*real_##name)(__VA_ARGS__);                          \
    static ret (*get_##name(void))(__VA_ARGS__) {                    \
        if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name);     \
        return real_##name;                                          \
    }

REAL(int, open, const char *, int, ...)
REAL(int, open64, const char *, int, ...)
REAL(int, openat, int, const char *, int, ...)
REAL(int, openat64, int, const char *, int, ...)
REAL(ssize_t, write, int, const void *, size_t)
REAL(ssize_t, pwrite, int, const void *, size_t, off_t)
REAL(ssize_t, pwrite64, int, const void *, size_t, off64_t)
REAL(ssize_t, writev, int, const struct iovec *, int)
REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t)
REAL(int, ftruncate, int, off_t)
REAL(int, ftruncate64, int, off64_t)
REAL(int, fallocate, int, int, off_t, off_t)
REAL(int, fallocate64, int, int, off64_t, off64_t)
REAL(int, posix_fallocate, int, off_t, off_t)
REAL(int, posix_fallocate64, int, off64_t, off64_t)
REAL(int, rename, const char *, const char *)
REAL(int, renameat, int, const char *, int, const char *)
REAL(int, renameat2, int, const char *, int, const char *, unsigned int)
REAL(int, unlink, const char *)
REAL(int, unlinkat, int, const char *, int)
REAL(int, mkdir, const char *, mode_t)
REAL(int, mkdirat, int, const char *, mode_t)

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

#define FAIL(e)      \
    do {             \
        errno = (e); \
        return -1;   \
    } while (0)

int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int e = open_fault(AT_FDCWD, path, flags);
    if (e) FAIL(e);
    return get_open()(path, flags, m);
}

int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int e = open_fault(AT_FDCWD, path, flags);
    if (e) FAIL(e);
    return get_open64()(path, flags, m);
}

int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int e = open_fault(dirfd, path, flags);
    if (e) FAIL(e);
    return get_openat()(dirfd, path, flags, m);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int e = open_fault(dirfd, path, flags);
    if (e) FAIL(e);
    return get_openat64()(dirfd, path, flags, m);
}

ssize_t write(int fd, const void *buf, size_t n) {
    int e = n ? write_fault(fd) : 0;
    if (e) FAIL(e);
    return get_write()(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    int e = n ? write_fault(fd) : 0;
    if (e) FAIL(e);
    return get_pwrite()(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
    int e = n ? write_fault(fd) : 0;
    if (e) FAIL(e);
    return get_pwrite64()(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    int e = write_fault(fd);
    if (e) FAIL(e);
    return get_writev()(fd, iov, cnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    int e = write_fault(fd);
    if (e) FAIL(e);
    return get_pwritev()(fd, iov, cnt, off);
}

/* A truncation that shrinks a file needs no space. */
static int grows(int fd, off64_t len) {
    struct stat st;
    return syscall(SYS_fstat, fd, &st) != 0 || len > st.st_size;
}

int ftruncate(int fd, off_t len) {
    int e = write_fault(fd);
    if (e && (e == EROFS || grows(fd, len))) FAIL(e);
    return get_ftruncate()(fd, len);
}

int ftruncate64(int fd, off64_t len) {
    int e = write_fault(fd);
    if (e && (e == EROFS || grows(fd, len))) FAIL(e);
    return get_ftruncate64()(fd, len);
}

int fallocate(int fd, int mode, off_t off, off_t len) {
    int e = write_fault(fd);
    if (e) FAIL(e);
    return get_fallocate()(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off64_t off, off64_t len) {
    int e = write_fault(fd);
    if (e) FAIL(e);
    return get_fallocate64()(fd, mode, off, len);
}

/* posix_fallocate returns the error instead of setting errno. */
int posix_fallocate(int fd, off_t off, off_t len) {
    int e = write_fault(fd);
    if (e) return e;
    return get_posix_fallocate()(fd, off, len);
}

int posix_fallocate64(int fd, off64_t off, off64_t len) {
    int e = write_fault(fd);
    if (e) return e;
    return get_posix_fallocate64()(fd, off, len);
}

int rename(const char *from, const char *to) {
    int e = name_fault(AT_FDCWD, from);
    if (!e) e = name_fault(AT_FDCWD, to);
    if (e) FAIL(e);
    return get_rename()(from, to);
}

int renameat(int fd1, const char *from, int fd2, const char *to) {
    int e = name_fault(fd1, from);
    if (!e) e = name_fault(fd2, to);
    if (e) FAIL(e);
    return get_renameat()(fd1, from, fd2, to);
}

int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned int flags) {
    int e = name_fault(fd1, from);
    if (!e) e = name_fault(fd2, to);
    if (e) FAIL(e);
    return get_renameat2()(fd1, from, fd2, to, flags);
}

int unlink(const char *path) {
    int e = name_fault(AT_FDCWD, path);
    if (e) FAIL(e);
    return get_unlink()(path);
}

int unlinkat(int dirfd, const char *path, int flags) {
    int e = name_fault(dirfd, path);
    if (e) FAIL(e);
    return get_unlinkat()(dirfd, path, flags);
}

int mkdir(const char *path, mode_t m) {
    int e = name_fault(AT_FDCWD, path);
    if (e) {
        struct stat st;
        /* As the kernel: an existing name is EEXIST, even on a read-only mount. */
        if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) == 0) FAIL(EEXIST);
        FAIL(e);
    }
    return get_mkdir()(path, m);
}

int mkdirat(int dirfd, const char *path, mode_t m) {
    int e = name_fault(dirfd, path);
    if (e) {
        struct stat st;
        if (syscall(SYS_newfstatat, dirfd, path, &st, 0) == 0) FAIL(EEXIST);
        FAIL(e);
    }
    return get_mkdirat()(dirfd, path, m);
}
