/*
 * base/ck_fault.c - the --wrap targets of a fault-injection build
 * (base/ck_fault.h says what is wrapped and how CK_FAULT chooses the call
 * that fails).  Compiled into chunkctl only with CHUNKCTL_FAULT_INJECTION;
 * no other build sees this file.  Everything here must stay off the heap
 * (the site table is static) and call only the __real_ functions, or a
 * wrapper would count, and fail, its own calls.
 */
#include "base/ck_fault.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
ssize_t __real_read(int fd, void *buf, size_t n);
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
int __real_syncfs(int fd);
int __real_rename(const char *from, const char *to);
int __real_renameat(int fromfd, const char *from, int tofd, const char *to);
int __real_renameat2(int fromfd, const char *from, int tofd, const char *to,
                     unsigned flags);
int __real_open(const char *path, int flags, ...);
int __real_openat(int dirfd, const char *path, int flags, ...);

/* Set by the linker: the executable's first byte and the end of its text.
 * Return addresses are logged relative to the first, so that a site is
 * named the same in every run despite ASLR (and addr2line reads it). */
extern char __executable_start[];
extern char etext[];

enum kind { K_ALLOC, K_READ, K_WRITE, K_FSYNC, K_RENAME, K_OPEN, K_N };
static const char *const kind_name[K_N] = {"alloc", "read",   "write",
                                           "fsync", "rename", "open"};

enum mode { M_OFF, M_LOG, M_KIND, M_SITE };

typedef struct site {
    uintptr_t at[2]; /* caller, caller's caller (0: outside chunkctl) */
    int kind;        /* enum kind, +1 (0: empty slot) */
    unsigned long n; /* calls */
} site;

#define NSITES 8192 /* power of two; a full table stops logging new sites */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int mode, logging, persist, want_kind;
static unsigned long want_n; /* fail the want_n-th call (1-based) */
static uintptr_t want_at[2]; /* M_SITE: the site */
static unsigned long counts[K_N], site_calls;
static int fired, fired_kind;
static uintptr_t fired_at[2];
static site sites[NSITES];
static char log_path[4096];

static uintptr_t rel(void *p)
{
    char *c = p;

    return c >= __executable_start && c < etext
               ? (uintptr_t)(c - __executable_start)
               : 0;
}

static void put(int fd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(int fd, const char *fmt, ...)
{
    char line[160];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && __real_write(fd, line, (size_t)n) < 0)
        return;
}

static void write_log(void)
{
    int fd =
        __real_open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    if (fd < 0)
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < NSITES; i++)
        if (sites[i].kind)
            put(fd, "site %lx/%lx %s %lu\n", (unsigned long)sites[i].at[0],
                (unsigned long)sites[i].at[1], kind_name[sites[i].kind - 1],
                sites[i].n);
    if (fired)
        put(fd, "fired %lx/%lx %s\n", (unsigned long)fired_at[0],
            (unsigned long)fired_at[1], kind_name[fired_kind]);
    for (int k = 0; k < K_N; k++)
        put(fd, "total %s %lu\n", kind_name[k],
            __atomic_load_n(&counts[k], __ATOMIC_RELAXED));
    pthread_mutex_unlock(&lock);
    close(fd);
}

static void init(void)
{
    const char *f = getenv("CK_FAULT"), *l = getenv("CK_FAULT_LOG");
    void *prime[4];

    /* backtrace() loads libgcc's unwinder on its first call, which
     * allocates (libc's malloc, not ours): do it now, not under 'lock'. */
    backtrace(prime, 4);
    if (l && *l && strlen(l) < sizeof log_path) {
        memcpy(log_path, l, strlen(l) + 1);
        logging = 1;
        mode = M_LOG;
        atexit(write_log);
    }
    if (!f || !*f)
        return;
    persist = f[strlen(f) - 1] == '+';
    if (!strncmp(f, "site:", 5)) {
        unsigned long a, b, k = 1;
        int got = sscanf(f + 5, "%lx/%lx:%lu", &a, &b, &k);
        if (got >= 2 && k >= 1) {
            want_at[0] = a;
            want_at[1] = b;
            want_n = k;
            mode = M_SITE;
        }
        return;
    }
    for (int k = 0; k < K_N; k++) {
        size_t len = strlen(kind_name[k]);
        if (!strncmp(f, kind_name[k], len) && f[len] == ':') {
            want_kind = k;
            want_n = strtoul(f + len + 1, NULL, 10);
            if (want_n >= 1)
                mode = M_KIND;
        }
    }
}

/* Counts one call of kind k made at return address 'ra' (the wrapper's
 * __builtin_return_address(0)); 1 if it must fail. */
static int hit(int k, void *ra)
{
    void *bt[12];
    uintptr_t at[2] = {0, 0};
    unsigned long n;
    int fail = 0;

    pthread_once(&once, init);
    if (mode == M_OFF)
        return 0;
    n = __atomic_add_fetch(&counts[k], 1, __ATOMIC_RELAXED);
    if (mode == M_KIND && k == want_kind)
        fail = n == want_n || (persist && n > want_n);
    if (logging || mode == M_SITE) {
        /* The caller's caller is the frame after ra: how many frames come
         * before it depends on inlining and on ASan's own backtrace(). */
        int got = backtrace(bt, 12);
        at[0] = rel(ra);
        for (int j = 0; j + 1 < got; j++)
            if (bt[j] == ra) {
                at[1] = rel(bt[j + 1]);
                break;
            }
    }
    if (mode == M_SITE && at[0] == want_at[0] && at[1] == want_at[1]) {
        n = __atomic_add_fetch(&site_calls, 1, __ATOMIC_RELAXED);
        fail = n == want_n || (persist && n > want_n);
    }
    if (logging) {
        size_t h = (at[0] * 31 + at[1] * 7 + (uintptr_t)k) & (NSITES - 1);
        pthread_mutex_lock(&lock);
        for (size_t i = 0; i < NSITES; i++, h = (h + 1) & (NSITES - 1)) {
            site *s = &sites[h];
            if (!s->kind) {
                s->at[0] = at[0];
                s->at[1] = at[1];
                s->kind = k + 1;
            }
            if (s->kind == k + 1 && s->at[0] == at[0] && s->at[1] == at[1]) {
                s->n++;
                break;
            }
        }
        if (fail && !fired) {
            fired = 1;
            fired_kind = k;
            fired_at[0] = at[0];
            fired_at[1] = at[1];
        }
        pthread_mutex_unlock(&lock);
    }
    return fail;
}

#define FAIL(kind, err, ret)                                                   \
    do {                                                                       \
        if (hit(kind, __builtin_return_address(0))) {                          \
            errno = (err);                                                     \
            return ret;                                                        \
        }                                                                      \
    } while (0)

void *__wrap_malloc(size_t n)
{
    FAIL(K_ALLOC, ENOMEM, NULL);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    FAIL(K_ALLOC, ENOMEM, NULL);
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    FAIL(K_ALLOC, ENOMEM, NULL);
    return __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    FAIL(K_ALLOC, ENOMEM, NULL);
    return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    FAIL(K_ALLOC, ENOMEM, NULL);
    return __real_strndup(s, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    if (hit(K_ALLOC, __builtin_return_address(0)))
        return ENOMEM;
    return __real_posix_memalign(p, align, n);
}

ssize_t __wrap_read(int fd, void *buf, size_t n)
{
    FAIL(K_READ, EIO, -1);
    return __real_read(fd, buf, n);
}

/* HDF5's file driver (sec2) calls pread and pwrite from libhdf5, where
 * --wrap does not reach.  chunkctl is linked with -rdynamic
 * (ENABLE_EXPORTS), so these definitions come before libc's for every
 * shared library too; they go on to the next one (libc's, or a
 * sanitizer's interceptor).  __real_pread would name these very
 * functions, so the wrappers call next_pread as well. */
static pthread_once_t next_once = PTHREAD_ONCE_INIT;
static ssize_t (*next_pread)(int, void *, size_t, off_t);
static ssize_t (*next_pwrite)(int, const void *, size_t, off_t);

static void find_next(void)
{
    *(void **)&next_pread = dlsym(RTLD_NEXT, "pread");
    *(void **)&next_pwrite = dlsym(RTLD_NEXT, "pwrite");
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    FAIL(K_READ, EIO, -1);
    pthread_once(&next_once, find_next);
    return next_pread(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    FAIL(K_WRITE, ENOSPC, -1);
    pthread_once(&next_once, find_next);
    return next_pwrite(fd, buf, n, off);
}

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
    FAIL(K_READ, EIO, -1);
    pthread_once(&next_once, find_next);
    return next_pread(fd, buf, n, off);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    FAIL(K_WRITE, ENOSPC, -1);
    return __real_write(fd, buf, n);
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    FAIL(K_WRITE, ENOSPC, -1);
    pthread_once(&next_once, find_next);
    return next_pwrite(fd, buf, n, off);
}

int __wrap_fsync(int fd)
{
    FAIL(K_FSYNC, EIO, -1);
    return __real_fsync(fd);
}

int __wrap_fdatasync(int fd)
{
    FAIL(K_FSYNC, EIO, -1);
    return __real_fdatasync(fd);
}

int __wrap_syncfs(int fd)
{
    FAIL(K_FSYNC, EIO, -1);
    return __real_syncfs(fd);
}

int __wrap_rename(const char *from, const char *to)
{
    FAIL(K_RENAME, EIO, -1);
    return __real_rename(from, to);
}

int __wrap_renameat(int fromfd, const char *from, int tofd, const char *to)
{
    FAIL(K_RENAME, EIO, -1);
    return __real_renameat(fromfd, from, tofd, to);
}

int __wrap_renameat2(int fromfd, const char *from, int tofd, const char *to,
                     unsigned flags)
{
    FAIL(K_RENAME, EIO, -1);
    return __real_renameat2(fromfd, from, tofd, to, flags);
}

/* open(2)'s third argument exists only with O_CREAT or O_TMPFILE. */
int __wrap_open(const char *path, int flags, ...)
{
    unsigned mode_arg = 0;

    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode_arg = va_arg(ap, unsigned);
        va_end(ap);
    }
    FAIL(K_OPEN, EMFILE, -1);
    return __real_open(path, flags, mode_arg);
}

int __wrap_openat(int dirfd, const char *path, int flags, ...)
{
    unsigned mode_arg = 0;

    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode_arg = va_arg(ap, unsigned);
        va_end(ap);
    }
    FAIL(K_OPEN, EMFILE, -1);
    return __real_openat(dirfd, path, flags, mode_arg);
}
