/*
 * ops/kernel.c - user kernels (ops/kernel.h): compile, cache, load, call.
 */
#include "ops/kernel.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/ck_cache.h"
#include "base/ck_thread.h"
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
    uint64_t key; /* what the kernel computes with (ck_kernel_key) */
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

/* The cache directory (created, with the contract header in it), or 0.
 * The header is written (whole, through a temporary) only when it is not
 * there as it should be, so a read-only cache serves what it holds. */
static int cache_dir(char *dir, size_t n)
{
    char hp[PATH_MAX], final[PATH_MAX], have[4096];
    size_t len = strlen(ck_kernel_header);
    ssize_t got = -1;
    int fd;

    if (!ck_cache_dir("c", dir, n))
        return 0;
    snprintf(final, sizeof final, "%s/chunkctl_kernel.h", dir);
    if (len < sizeof have && (fd = open(final, O_RDONLY | O_CLOEXEC)) >= 0) {
        got = read(fd, have, sizeof have);
        close(fd);
    }
    if (got == (ssize_t)len && memcmp(have, ck_kernel_header, len) == 0)
        return 1;
    snprintf(hp, sizeof hp, "%s/chunkctl_kernel.h.tmp-%ld", dir,
             (long)getpid());
    if ((fd = open(hp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        return 0;
    int ok = write(fd, ck_kernel_header, len) == (ssize_t)len;
    ok &= close(fd) == 0;
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

/* The compiler's first error line ("k.c:3:5: error: ..."; else the first
 * line saying "error:", else the first line), without the newline. */
static void first_error(const char *log, char *out, size_t n)
{
    const char *l = strstr(log, ": error:");
    const char *s, *e;

    if (!l)
        l = strstr(log, "error:");
    s = l ? l : log;
    while (l && s > log && s[-1] != '\n')
        s--;
    e = strchr(s, '\n');
    snprintf(out, n, "%.*s", (int)(e ? e - s : (ptrdiff_t)strlen(s)), s);
}

/* $CC split at blanks into argv[0..] (at most max - 1 words, in buf):
 * "gcc -m64" is a compiler and a flag, as make takes it. */
static int cc_words(const char *cc, char *buf, size_t n, const char **argv,
                    int max)
{
    char *save = NULL;
    int k = 0;

    snprintf(buf, n, "%s", cc);
    for (char *t = strtok_r(buf, " \t", &save); t && k < max - 1;
         t = strtok_r(NULL, " \t", &save))
        argv[k++] = t;
    argv[k] = NULL;
    return k;
}

/* Removes what compiles killed before they finished left in the cache
 * (".tmp-PID", ".log-PID" of a process that is gone). */
static void drop_stale(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    while (d && (e = readdir(d))) {
        const char *t = strstr(e->d_name, ".tmp-");
        if (!t)
            t = strstr(e->d_name, ".log-");
        if (!t)
            continue;
        char *end;
        long pid = strtol(t + 5, &end, 10);
        if (*end || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* not one of ours, or its writer lives */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
}

/* Waits for child pid, killing its process group when chunkctl is
 * interrupted meanwhile (a compile can take long; its compiler must not
 * outlive the run).  1 when it was. */
static int wait_child(pid_t pid, int *status)
{
    struct timespec nap = {0, 20 * 1000 * 1000};

    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return 0;
        if (ck_interrupted()) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR)
                ;
            return 1;
        }
        nanosleep(&nap, NULL);
    }
}

/* Runs argv (argv[0] looked up on PATH) in a process group of its own,
 * its output and errors to the file log; its exit status in *status,
 * *interrupted when chunkctl was (the child killed).  0 or an errno. */
static int run(const char *const *argv, const char *log, int *status,
               int *interrupted)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    pid_t pid;
    int rc;

    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    rc = posix_spawnp(&pid, argv[0], &fa, &at, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    *interrupted = 0;
    if (rc == 0)
        *interrupted = wait_child(pid, status);
    return rc;
}

/* The seal of a cache entry, so.sum: the shared object's size and hash,
 * written once it is in place; an entry whose bytes do not match it
 * (truncated, overwritten, another compile's) is compiled again, never
 * loaded (dlopen of a truncated one died of SIGBUS). */
static int so_hash(const char *so, uint64_t *h, size_t *len)
{
    char *b = slurp(so, len);

    if (!b)
        return 0;
    *h = fnv(1469598103934665603ull, b, *len);
    free(b);
    return 1;
}

static int sealed(const char *so)
{
    char sp[PATH_MAX + 8], *txt;
    unsigned long long want_h, want_n;
    size_t len = 0, n;
    uint64_t h;
    int ok;

    snprintf(sp, sizeof sp, "%s.sum", so);
    if (!(txt = slurp(sp, &len)))
        return 0;
    ok = sscanf(txt, "%llu %llx", &want_n, &want_h) == 2;
    free(txt);
    return ok && so_hash(so, &h, &n) && n == want_n && h == want_h;
}

static void seal(const char *so)
{
    char sp[PATH_MAX + 8], tmp[PATH_MAX + 32];
    uint64_t h;
    size_t n;
    FILE *f;

    if (!so_hash(so, &h, &n))
        return;
    snprintf(sp, sizeof sp, "%s.sum", so);
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", sp, (long)getpid());
    if (!(f = fopen(tmp, "w")))
        return;
    fprintf(f, "%zu %016llx\n", n, (unsigned long long)h);
    if (fclose(f) != 0 || rename(tmp, sp) != 0)
        unlink(tmp);
}

/* Runs the compiler: source -> so (a temporary renamed into place). */
static ck_code compile(const char *what, const char *cc, const char *dir,
                       const char *source, const char *so, ck_err *err)
{
    char tmp[PATH_MAX], logp[PATH_MAX], inc[PATH_MAX + 2], line[400];
    char words[512];
    const char *argv[24];
    int k, status = 0, stopped = 0, rc = ENOENT;
    size_t loglen = 0;
    char *log;

    if (access(dir, W_OK) != 0)
        return ck_err_set(err, CK_EIO,
                          "%s: the kernel must be compiled, but the kernel "
                          "cache %s cannot be written (%s; set "
                          "CHUNKCTL_CACHE_DIR)",
                          what, dir, strerror(errno));
    drop_stale(dir);
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", so, (long)getpid());
    snprintf(logp, sizeof logp, "%s.log-%ld", so, (long)getpid());
    snprintf(inc, sizeof inc, "-I%s", dir);
    k = cc_words(cc, words, sizeof words, argv, 9);
    for (int i = 0; cflags[i]; i++)
        argv[k++] = cflags[i];
    argv[k++] = inc;
    argv[k++] = "-o";
    argv[k++] = tmp;
    argv[k++] = source;
    argv[k] = NULL;
    if (!argv[0] || (rc = run(argv, logp, &status, &stopped)) != 0) {
        unlink(logp);
        return ck_err_set(err, CK_EIO, "%s: cannot run the C compiler '%s': %s",
                          what, cc, strerror(rc));
    }
    log = slurp(logp, &loglen);
    unlink(logp);
    if (stopped) {
        unlink(tmp);
        free(log);
        return ck_err_set(err, CK_ESTOPPED, "interrupted");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(tmp);
        first_error(log ? log : "", line, sizeof line);
        free(log);
        return ck_err_set(err, CK_EUSAGE, "%s: kernel does not compile: %s",
                          what, line[0] ? line : "(the compiler said nothing)");
    }
    free(log);
    if (access(tmp, F_OK) != 0)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: the C compiler '%s' succeeded but made no "
                          "library (is CC a C compiler?)",
                          what, cc);
    if (rename(tmp, so) != 0) {
        unlink(tmp);
        return ck_err_set(err, CK_EIO, "%s: %s: %s", what, so, strerror(errno));
    }
    seal(so);
    return CK_OK;
}

/* What the compile of source depends on besides its own text: the files
 * it includes, read through the preprocessor (cc -E, into a temporary
 * file), and the compiler itself (its executable's size and time).
 * Mixed into *h; with no preprocessor output, the source text alone
 * counts (the compile then says what is wrong). */
static void depends(const char *cc, const char *dir, const char *source,
                    uint64_t *h)
{
    char words[512], inc[PATH_MAX + 2], pp[64], logp[64];
    const char *argv[24], *tmpd = getenv("TMPDIR");
    int k, status = 0, stopped = 0, fd;
    size_t len = 0;
    char *text;

    k = cc_words(cc, words, sizeof words, argv, 9);
    if (k == 0)
        return;
    /* the compiler: PATH lookup as posix_spawnp does */
    const char *path = getenv("PATH");
    struct stat st;
    char exe[PATH_MAX];
    int found = strchr(argv[0], '/') && stat(argv[0], &st) == 0;
    for (const char *p = path; !found && p && *p;) {
        const char *c = strchr(p, ':');
        int n = c ? (int)(c - p) : (int)strlen(p);
        snprintf(exe, sizeof exe, "%.*s/%s", n, p, argv[0]);
        found = stat(exe, &st) == 0 && S_ISREG(st.st_mode);
        p = c ? c + 1 : NULL;
    }
    if (found) {
        *h = fnv(*h, &st.st_size, sizeof st.st_size);
        *h = fnv(*h, &st.st_mtime, sizeof st.st_mtime);
        *h = fnv(*h, &st.st_ino, sizeof st.st_ino);
    }
    snprintf(pp, sizeof pp, "%s/chunkctl-pp-XXXXXX",
             tmpd && *tmpd && strlen(tmpd) < 32 ? tmpd : "/tmp");
    if ((fd = mkstemp(pp)) < 0)
        return;
    close(fd);
    snprintf(logp, sizeof logp, "%s.log", pp);
    snprintf(inc, sizeof inc, "-I%s", dir);
    argv[k++] = "-E";
    argv[k++] = "-P"; /* no line markers: where the files are is no matter */
    argv[k++] = inc;
    argv[k++] = "-o";
    argv[k++] = pp;
    argv[k++] = source;
    argv[k] = NULL;
    if (run(argv, logp, &status, &stopped) == 0 && !stopped &&
        WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
        (text = slurp(pp, &len))) {
        *h = fnv(*h, text, len);
        free(text);
    }
    unlink(logp);
    unlink(pp);
}

/* Whether the symbol at p is code: dlsym finds variables too, and calling
 * one would crash on the first chunk.  An address in no loaded object (a
 * thread-local variable's) is none. */
static int is_function(void *p)
{
    Dl_info di;
    const ElfW(Sym) *sym = NULL;

    if (!dladdr1(p, &di, (void **)&sym, RTLD_DL_SYMENT))
        return 0;
    if (!sym)
        return 1;
    switch (ELF64_ST_TYPE(sym->st_info)) {
    case STT_OBJECT:
    case STT_TLS:
    case STT_COMMON:
        return 0;
    default:
        return 1;
    }
}

ck_code ck_kernel_open(const char *what, const char *source,
                       const char *library, const char *entry, ck_kernel **out,
                       ck_err *err)
{
    ck_kernel *k = calloc(1, sizeof *k);
    char dir[PATH_MAX - 64], so[PATH_MAX];
    const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
    ck_code rc = CK_OK;
    size_t n;

    *out = NULL;
    if (!k)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    if (library) {
        snprintf(so, sizeof so, "%s", library);
        /* the library's bytes are what it computes */
        if (!so_hash(so, &k->key, &n))
            k->key = 0;
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
            if (!dir[0])
                return ck_err_set(err, CK_EIO,
                                  "%s: no kernel cache directory: none of "
                                  "CHUNKCTL_CACHE_DIR, XDG_CACHE_HOME and HOME "
                                  "is set",
                                  what);
            return ck_err_set(err, CK_EIO,
                              "%s: no usable kernel cache directory: %s "
                              "cannot be made or written (set "
                              "CHUNKCTL_CACHE_DIR)",
                              what, dir);
        }
        depends(cc, dir, source, &h);
        k->key = h;
        snprintf(so, sizeof so, "%s/%016llx.so", dir, (unsigned long long)h);
        if (!sealed(so)) {
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
        else if (!is_function(*(void **)(&k->fn)))
            rc = ck_err_set(err, CK_EUSAGE,
                            "%s: '%s' in %s is a variable (a data symbol), "
                            "not a function",
                            what, entry,
                            library ? library : "the compiled kernel");
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

uint64_t ck_kernel_key(const ck_kernel *k)
{
    return k->key;
}

const char *ck_kernel_contract(void)
{
    return ck_kernel_header;
}
