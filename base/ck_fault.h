/*
 * base/ck_fault.h - fault injection for test builds (CHUNKCTL_FAULT_INJECTION).
 *
 * Only in a build configured with -DCHUNKCTL_FAULT_INJECTION=ON: the chunkctl
 * executable is linked with -Wl,--wrap=malloc,... so that every call that
 * chunkctl's own code (base/, io/, ops/, backends/cpu, pipelines/, cli/) makes
 * to the functions below goes through base/ck_fault.c first.  Calls made inside
 * shared libraries (libhdf5, zstd, blosc, cJSON, OpenBLAS, libc itself) are not
 * seen, except pread and pwrite, which base/ck_fault.c also defines so that
 * libhdf5's file driver calls them (chunkctl is linked with -rdynamic). Nothing
 * here changes behaviour unless CK_FAULT or CK_FAULT_LOG is set:
 *
 *   CK_FAULT=KIND:N     the N-th call (1-based, counted over all threads) of
 *                       KIND fails: alloc (malloc calloc realloc strdup strndup
 *                       posix_memalign -> NULL / ENOMEM), read (read pread ->
 *                       -1 / EIO), write (write pwrite -> -1 / ENOSPC), fsync
 *                       (fsync fdatasync -> -1 / EIO), rename (rename renameat
 *                       renameat2 -> -1 / EIO), open (open openat -> -1 /
 *                       EMFILE).
 *   CK_FAULT=site:HEX[:K]  the K-th call (default 1) from call site HEX fails,
 *                       whatever its kind; sites are as CK_FAULT_LOG lists
 * them. a trailing '+'      (KIND:N+, site:HEX:K+) makes every later call of
 * the same kind (or site) fail too, as a full disk does. CK_FAULT_LOG=FILE   at
 * exit, write one line per call site seen, "site HEX KIND CALLS", then "fired
 * HEX KIND" if the fault fired, then "total KIND CALLS" per kind.
 *
 * A call site is the pair (caller, caller's caller) of return addresses, taken
 * relative to the executable's load address, hashed to 48 bits: stable from run
 * to run of the same binary, so a walk can list the sites of a run and fail
 * each in turn (tests/fault/walk.py).
 */
#ifndef CK_FAULT_H
#define CK_FAULT_H

#include <stddef.h>
#include <sys/types.h>

/* The wrappers (-Wl,--wrap=NAME makes chunkctl's calls to NAME land here). */
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
ssize_t __wrap_read(int fd, void *buf, size_t n);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off);
int __wrap_fsync(int fd);
int __wrap_fdatasync(int fd);
int __wrap_syncfs(int fd);
int __wrap_rename(const char *from, const char *to);
int __wrap_renameat(int fromfd, const char *from, int tofd, const char *to);
int __wrap_renameat2(int fromfd, const char *from, int tofd, const char *to,
                     unsigned flags);
int __wrap_open(const char *path, int flags, ...);
int __wrap_openat(int dirfd, const char *path, int flags, ...);

#endif
