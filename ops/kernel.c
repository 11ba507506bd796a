/*
 * ops/kernel.c - user kernels (ops/kernel.h): compile, cache, load, call.
 */
#include "ops/kernel.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/ck_cache.h"
#include "chunkctl_kernel.h"   /* the contract, to check the layout */
#include "ops/kernel_header.h" /* ck_kernel_header[]: the contract's text */

_Static_assert(sizeof(chunkctl_array) == sizeof(ck_kernel_array) &&
                   offsetof(chunkctl_array, full_shape) ==
                       offsetof(ck_kernel_array, full_shape) &&
                   CHUNKCTL_MAX_DIMS == CK_MAX_DIMS &&
                   (int)CHUNKCTL_FLOAT64 == (int)CK_F64 &&
                   (int)CHUNKCTL_BOOL == (int)CK_BOOL,
               "chunkctl_kernel.h and ck_kernel_array differ");

extern char **environ;

typedef int (*entry_fn)(ck_kernel_array *out, const ck_kernel_array *args,
                        int nargs, const double *params, int nparams);

struct ck_kernel {
    void *dl;
    entry_fn fn;
    int compiled;
};

/* Flags every kernel is built with (part of the cache key). */
static const char *const cflags[] = {"-std=c11", "-O2", "-fPIC", "-shared",
                                     NULL};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The cache directory (created, with the contract header in it), or 0. */
static int cache_dir(char *dir, size_t n)
{
    char hp[PATH_MAX];
    int fd;

    if (!ck_cache_dir("c", dir, n))
        return 0;
    /* the header, written whole through a temporary each time (cheap) */
    snprintf(hp, sizeof hp, "%s/chunkctl_kernel.h.tmp-%ld", dir,
             (long)getpid());
    if ((fd = open(hp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        return 0;
    size_t len = strlen(ck_kernel_header);
    int ok = write(fd, ck_kernel_header, len) == (ssize_t)len;
    ok &= close(fd) == 0;
    char final[PATH_MAX];
    snprintf(final, sizeof final, "%s/chunkctl_kernel.h", dir);
    if (!ok || rename(hp, final) != 0) {
        unlink(hp);
        return 0;
    }
    return 1;
}

static char *slurp(const char *path, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (16 << 20) &&
        (buf = malloc((size_t)st.st_size + 1))) {
        if (read(fd, buf, (size_t)st.st_size) == st.st_size) {
            buf[st.st_size] = '\0';
            *len = (size_t)st.st_size;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    close(fd);
    return buf;
}

/* The first line of the compiler's log that says "error" (or its first
 * line), without the newline. */
static void first_error(const char *log, char *out, size_t n)
{
    const char *l = strstr(log, "error");
    const char *s = l ? l : log, *e;

    while (l && s > log && s[-1] != '\n')
        s--;
    e = strchr(s, '\n');
    snprintf(out, n, "%.*s", (int)(e ? e - s : (ptrdiff_t)strlen(s)), s);
}

/* Runs the compiler: source -> so (a temporary renamed into place). */
static ck_code compile(const char *what, const char *cc, const char *dir,
                       const char *source, const char *so, ck_err *err)
{
    char tmp[PATH_MAX], logp[PATH_MAX], inc[PATH_MAX + 2], line[400];
    const char *argv[16];
    posix_spawn_file_actions_t fa;
    int k = 0, status = 0;
    pid_t pid;
    size_t loglen = 0;
    char *log;

    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", so, (long)getpid());
    snprintf(logp, sizeof logp, "%s.log-%ld", so, (long)getpid());
    snprintf(inc, sizeof inc, "-I%s", dir);
    argv[k++] = cc;
    for (int i = 0; cflags[i]; i++)
        argv[k++] = cflags[i];
    argv[k++] = inc;
    argv[k++] = "-o";
    argv[k++] = tmp;
    argv[k++] = source;
    argv[k] = NULL;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawnp(&pid, cc, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        unlink(logp);
        return ck_err_set(err, CK_EIO, "%s: cannot run the C compiler '%s': %s",
                          what, cc, strerror(rc));
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    log = slurp(logp, &loglen);
    unlink(logp);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(tmp);
        first_error(log ? log : "", line, sizeof line);
        free(log);
        return ck_err_set(err, CK_EUSAGE, "%s: kernel does not compile: %s",
                          what, line[0] ? line : "(the compiler said nothing)");
    }
    free(log);
    if (rename(tmp, so) != 0) {
        unlink(tmp);
        return ck_err_set(err, CK_EIO, "%s: %s: %s", what, so, strerror(errno));
    }
    return CK_OK;
}

ck_code ck_kernel_open(const char *what, const char *source,
                       const char *library, const char *entry, ck_kernel **out,
                       ck_err *err)
{
    ck_kernel *k = calloc(1, sizeof *k);
    char dir[PATH_MAX - 64], so[PATH_MAX];
    const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
    ck_code rc = CK_OK;

    *out = NULL;
    if (!k)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    if (library) {
        snprintf(so, sizeof so, "%s", library);
    } else {
        size_t len = 0;
        char *text = slurp(source, &len);
        struct stat st;
        uint64_t h = 1469598103934665603ull;
        if (!text) {
            free(k);
            return ck_err_set(err, CK_EUSAGE, "%s: source %s: %s", what, source,
                              stat(source, &st) == 0 ? "not a readable file"
                                                     : strerror(errno));
        }
        h = fnv(h, text, len);
        free(text);
        h = fnv(h, ck_kernel_header, strlen(ck_kernel_header));
        h = fnv(h, cc, strlen(cc) + 1);
        for (int i = 0; cflags[i]; i++)
            h = fnv(h, cflags[i], strlen(cflags[i]) + 1);
        if (!cache_dir(dir, sizeof dir)) {
            free(k);
            return ck_err_set(err, CK_EIO,
                              "%s: no kernel cache directory (set "
                              "CHUNKCTL_CACHE_DIR)",
                              what);
        }
        snprintf(so, sizeof so, "%s/%016llx.so", dir, (unsigned long long)h);
        if (access(so, R_OK) != 0) {
            rc = compile(what, cc, dir, source, so, err);
            k->compiled = 1;
        }
    }
    if (rc == CK_OK && !(k->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL)))
        rc = ck_err_set(err, CK_EUSAGE, "%s: cannot load %s: %s", what,
                        library ? library : "the compiled kernel", dlerror());
    if (rc == CK_OK) {
        *(void **)(&k->fn) = dlsym(k->dl, entry);
        if (!k->fn)
            rc = ck_err_set(err, CK_EUSAGE,
                            "%s: the kernel has no entry point '%s'", what,
                            entry);
    }
    if (rc != CK_OK) {
        ck_kernel_close(k);
        return rc;
    }
    *out = k;
    return CK_OK;
}

void ck_kernel_close(ck_kernel *k)
{
    if (!k)
        return;
    if (k->dl)
        dlclose(k->dl);
    free(k);
}

int ck_kernel_call(const ck_kernel *k, ck_kernel_array *out,
                   const ck_kernel_array *args, int nargs, const double *params,
                   int nparams)
{
    return k->fn(out, args, nargs, params, nparams);
}

int ck_kernel_compiled(const ck_kernel *k)
{
    return k->compiled;
}

const char *ck_kernel_contract(void)
{
    return ck_kernel_header;
}
