/*
 * backends/cuda/nvrtc.c - CUDA source to cubin with NVRTC, cached in the
 * process and on disk.  NVRTC is loaded with dlopen the first time a
 * kernel is compiled (libnvrtc.so.13, then libnvrtc.so), so the module
 * needs it only on machines that run kernels.
 */
#include "backends/cuda/nvrtc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nvrtc.h>

#include "base/ck_cache.h"

static struct {
    pthread_once_t once;
    void *h;
    char why[256];
    nvrtcResult (*version)(int *, int *);
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int,
                          const char *const *, const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    int major, minor;
} nv = {.once = PTHREAD_ONCE_INIT};

static void load(void)
{
    /* the loader's search path first; then the Toolkit chunkctl was built
     * with, for a machine where it is not on that path */
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so",
#ifdef CK_NVRTC_PATH
                                        CK_NVRTC_PATH
#endif
    };

    for (size_t i = 0; i < sizeof names / sizeof names[0] && !nv.h; i++)
        nv.h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!nv.h) {
        snprintf(nv.why, sizeof nv.why, "%s", dlerror());
        return;
    }
    *(void **)&nv.version = dlsym(nv.h, "nvrtcVersion");
    *(void **)&nv.create = dlsym(nv.h, "nvrtcCreateProgram");
    *(void **)&nv.compile = dlsym(nv.h, "nvrtcCompileProgram");
    *(void **)&nv.log_size = dlsym(nv.h, "nvrtcGetProgramLogSize");
    *(void **)&nv.log = dlsym(nv.h, "nvrtcGetProgramLog");
    *(void **)&nv.cubin_size = dlsym(nv.h, "nvrtcGetCUBINSize");
    *(void **)&nv.cubin = dlsym(nv.h, "nvrtcGetCUBIN");
    *(void **)&nv.destroy = dlsym(nv.h, "nvrtcDestroyProgram");
    if (!nv.version || !nv.create || !nv.compile || !nv.log_size || !nv.log ||
        !nv.cubin_size || !nv.cubin || !nv.destroy ||
        nv.version(&nv.major, &nv.minor) != NVRTC_SUCCESS) {
        snprintf(nv.why, sizeof nv.why, "libnvrtc lacks the functions used");
        dlclose(nv.h);
        nv.h = NULL;
    }
}

/* ---- this process's table ---- */

typedef struct entry {
    struct entry *next;
    uint64_t key;
    size_t len;
    char image[]; /* len bytes */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *table;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

static const entry *lookup(uint64_t key)
{
    const entry *e;

    pthread_mutex_lock(&lock);
    for (e = table; e && e->key != key; e = e->next)
        ;
    pthread_mutex_unlock(&lock);
    return e;
}

/* Adds a copy of image under key; returns the table's copy (or NULL). */
static const entry *remember(uint64_t key, const void *image, size_t len)
{
    entry *e = malloc(sizeof *e + len);

    if (!e)
        return NULL;
    e->key = key;
    e->len = len;
    memcpy(e->image, image, len);
    pthread_mutex_lock(&lock);
    e->next = table;
    table = e;
    pthread_mutex_unlock(&lock);
    return e;
}

void ck_cuda_image_forget(void)
{
    pthread_mutex_lock(&lock);
    while (table) {
        entry *e = table;
        table = e->next;
        free(e);
    }
    pthread_mutex_unlock(&lock);
}

/* ---- the disk cache ---- */

static void *read_file(const char *path, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && st.st_size > 4 && st.st_size < (64 << 20) &&
        (buf = malloc((size_t)st.st_size)) &&
        read(fd, buf, (size_t)st.st_size) == st.st_size &&
        memcmp(buf, "\177ELF", 4) == 0) {
        *len = (size_t)st.st_size;
    } else {
        free(buf);
        buf = NULL;
    }
    close(fd);
    return buf;
}

/* Writes image to path through a temporary, so a reader never sees half
 * of it; failures leave no file and are not errors. */
static void write_file(const char *path, const void *image, size_t len)
{
    char tmp[4200];
    int fd;

    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid()) >=
        (int)sizeof tmp)
        return;
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        return;
    if (write(fd, image, len) != (ssize_t)len || close(fd) != 0 ||
        rename(tmp, path) != 0)
        unlink(tmp);
}

/* ---- compiling ---- */

/* The first error of an NVRTC log with the source line it names (NVRTC
 * shows none), as one line:
 * 'k.cu(12): error: identifier "q" is undefined: z[i] = q;'. */
static void first_error(const char *log, const char *src, char *out, size_t n)
{
    const char *e = strstr(log, ": error"), *start, *paren, *line;
    int len;
    long no;

    if (!e) {
        snprintf(out, n, "%.*s", (int)strcspn(log, "\n"), log);
        return;
    }
    for (start = e; start > log && start[-1] != '\n'; start--)
        ;
    len = (int)strcspn(start, "\n");
    /* "name(12): error": the 12th line of src, without its indent */
    paren = e > start && e[-1] == ')' ? e - 1 : NULL;
    while (paren && paren > start && *paren != '(')
        paren--;
    no = paren && *paren == '(' ? strtol(paren + 1, NULL, 10) : 0;
    for (line = src; no > 1 && line; no--)
        if ((line = strchr(line, '\n')))
            line++;
    if (no == 1 && line)
        line += strspn(line, " \t");
    if (no == 1 && line && *line && *line != '\n')
        snprintf(out, n, "%.*s: %.*s", len, start, (int)strcspn(line, "\r\n"),
                 line);
    else
        snprintf(out, n, "%.*s", len, start);
}

/* Compiles src (named name in the log) with nopts options and the
 * headers given; a compile error is *log_out's first error (when
 * log_out) or a chunkctl bug. */
static ck_code compile(const char *name, const char *src, int nhdr,
                       const char *const *hdr, const char *const *hdr_names,
                       int nopts, const char *const *opts, int arch,
                       char **image, size_t *len, char *log_out, size_t log_n,
                       ck_err *err)
{
    nvrtcProgram prog;
    ck_code rc = CK_OK;
    size_t n = 0;

    if (nv.create(&prog, src, name, nhdr, hdr, hdr_names) != NVRTC_SUCCESS)
        return ck_err_set(err, CK_ENOMEM, "nvrtc: out of memory");
    if (nv.compile(prog, nopts, opts) != NVRTC_SUCCESS) {
        char *log = NULL;
        if (nv.log_size(prog, &n) == NVRTC_SUCCESS && (log = calloc(1, n + 1)))
            nv.log(prog, log);
        if (log_out) {
            first_error(log ? log : "(no log)", src, log_out, log_n);
            rc = CK_EUSAGE;
        } else {
            rc = ck_err_internal(err, "kernel does not compile for sm_%d: %s",
                                 arch, log ? log : "(no log)");
        }
        free(log);
    } else if (nv.cubin_size(prog, &n) != NVRTC_SUCCESS ||
               !(*image = malloc(n ? n : 1)) ||
               nv.cubin(prog, *image) != NVRTC_SUCCESS) {
        free(*image);
        *image = NULL;
        rc = ck_err_set(err, CK_EDEVICE, "nvrtc: no cubin for sm_%d", arch);
    } else {
        *len = n;
    }
    nv.destroy(&prog);
    return rc;
}

/* The image under key: this process's table, the disk cache, or made by
 * build(); *built says which. */
typedef ck_code (*build_fn)(void *ctx, char **image, size_t *len, ck_err *err);

static ck_code cached(uint64_t key, int arch, build_fn build, void *ctx,
                      const void **image, size_t *len, int *built, ck_err *err)
{
    char dir[4096], path[4200];
    const entry *e;
    char *img = NULL;
    size_t n = 0;
    int disk;

    *built = 0;
    if ((e = lookup(key)))
        goto found;
    disk = ck_cache_dir(NULL, dir, sizeof dir) &&
           snprintf(path, sizeof path, "%s/%016llx-sm%d.cubin", dir,
                    (unsigned long long)key, arch) < (int)sizeof path;
    if (!disk || !(img = read_file(path, &n))) {
        CK_TRY(build(ctx, &img, &n, err));
        *built = 1;
        if (disk)
            write_file(path, img, n);
    }
    e = remember(key, img, n);
    free(img);
    if (!e)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
found:
    *image = e->image;
    *len = e->len;
    return CK_OK;
}

static uint64_t key_of(const char *src, int arch)
{
    uint64_t key = fnv(14695981039346656037ULL, src, strlen(src));
    key = fnv(key, &arch, sizeof arch);
    key = fnv(key, &nv.major, sizeof nv.major);
    return fnv(key, &nv.minor, sizeof nv.minor);
}

typedef struct gen_job {
    const char *src;
    int arch;
} gen_job;

static ck_code build_gen(void *ctx, char **image, size_t *len, ck_err *err)
{
    const gen_job *j = ctx;
    char opt_arch[32];
    const char *opts[] = {opt_arch, "--std=c++17", "-default-device"};

    snprintf(opt_arch, sizeof opt_arch, "-arch=sm_%d", j->arch);
    return compile("ck_kernel.cu", j->src, 0, NULL, NULL, 3, opts, j->arch,
                   image, len, NULL, 0, err);
}

ck_code ck_cuda_image(const char *src, int arch, const void **image,
                      size_t *len, ck_err *err)
{
    gen_job j = {src, arch};
    int built;

    pthread_once(&nv.once, load);
    if (!nv.h)
        return ck_err_set(err, CK_EDEVICE, "no NVRTC: %s", nv.why);
    return cached(key_of(src, arch), arch, build_gen, &j, image, len, &built,
                  err);
}

/* The user's options: the architecture, and C++17 as CuPy's RawKernel
 * compiles (no -default-device: a user's kernels say __global__). */
#define USER_OPTS(opt_arch)                                                    \
    {                                                                          \
        opt_arch, "--std=c++17", "-lineinfo"                                   \
    }

typedef struct user_job {
    const char *what, *name, *src, *header;
    int arch;
} user_job;

static ck_code build_user(void *ctx, char **image, size_t *len, ck_err *err)
{
    const user_job *j = ctx;
    char opt_arch[32], log[512];
    const char *opts[] = USER_OPTS(opt_arch);
    const char *hdr[] = {j->header}, *hdr_names[] = {"chunkctl_kernel.h"};
    ck_code rc;

    snprintf(opt_arch, sizeof opt_arch, "-arch=sm_%d", j->arch);
    rc = compile(j->name, j->src, 1, hdr, hdr_names, 3, opts, j->arch, image,
                 len, log, sizeof log, err);
    if (rc == CK_EUSAGE)
        return ck_err_set(err, CK_EUSAGE, "%s: %s", j->what, log);
    return rc;
}

/* Whether a cubin defines kernel 'entry': each kernel has a section
 * .text.<its name> (an extern "C" name is not mangled). */
static int has_kernel(const void *image, size_t len, const char *name)
{
    char sect[300];
    int n = snprintf(sect, sizeof sect, ".text.%s", name);

    if (n <= 0 || n >= (int)sizeof sect)
        return 0;
    return memmem(image, len, sect, (size_t)n + 1) != NULL;
}

ck_code ck_cuda_user_image(const char *what, const char *file, const char *src,
                           const char *header, const char *kernel, int arch,
                           const void **image, size_t *len, int *compiled,
                           ck_err *err)
{
    const char *base = strrchr(file, '/');
    user_job j = {what, base ? base + 1 : file, src, header, arch};
    char opt_arch[32];
    const char *opts[] = USER_OPTS(opt_arch);
    uint64_t key;

    pthread_once(&nv.once, load);
    if (!nv.h)
        return ck_err_set(err, CK_EDEVICE,
                          "%s: %s is CUDA C, and NVRTC is missing (%s)", what,
                          j.name, nv.why);
    snprintf(opt_arch, sizeof opt_arch, "-arch=sm_%d", arch);
    /* the key: the source, its name (in line info), the contract and the
     * options beside ck_cuda_image's */
    key = key_of(src, arch);
    key = fnv(key, j.name, strlen(j.name) + 1);
    key = fnv(key, header, strlen(header));
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
        key = fnv(key, opts[k], strlen(opts[k]) + 1);
    CK_TRY(cached(key, arch, build_user, &j, image, len, compiled, err));
    if (!has_kernel(*image, *len, kernel))
        return ck_err_set(err, CK_EUSAGE,
                          "%s: %s has no kernel '%s' (an extern \"C\" "
                          "__global__ function)",
                          what, j.name, kernel);
    return CK_OK;
}
