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

static ck_code compile(const char *src, int arch, char **image, size_t *len,
                       ck_err *err)
{
    char opt_arch[32];
    const char *opts[] = {opt_arch, "--std=c++17", "-default-device"};
    nvrtcProgram prog;
    ck_code rc = CK_OK;
    size_t n = 0;

    snprintf(opt_arch, sizeof opt_arch, "-arch=sm_%d", arch);
    if (nv.create(&prog, src, "ck_kernel.cu", 0, NULL, NULL) != NVRTC_SUCCESS)
        return ck_err_set(err, CK_ENOMEM, "nvrtc: out of memory");
    if (nv.compile(prog, 3, opts) != NVRTC_SUCCESS) {
        char *log = NULL;
        if (nv.log_size(prog, &n) == NVRTC_SUCCESS && (log = calloc(1, n + 1)))
            nv.log(prog, log);
        rc = ck_err_internal(err, "kernel does not compile for sm_%d: %s", arch,
                             log ? log : "(no log)");
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

ck_code ck_cuda_image(const char *src, int arch, const void **image,
                      size_t *len, ck_err *err)
{
    char dir[4096], path[4200];
    const entry *e;
    uint64_t key;
    char *img = NULL;
    size_t n = 0;
    int disk;

    pthread_once(&nv.once, load);
    if (!nv.h)
        return ck_err_set(err, CK_EDEVICE, "no NVRTC: %s", nv.why);
    key = fnv(14695981039346656037ULL, src, strlen(src));
    key = fnv(key, &arch, sizeof arch);
    key = fnv(key, &nv.major, sizeof nv.major);
    key = fnv(key, &nv.minor, sizeof nv.minor);
    if ((e = lookup(key)))
        goto found;
    disk = ck_cache_dir(NULL, dir, sizeof dir) &&
           snprintf(path, sizeof path, "%s/%016llx-sm%d.cubin", dir,
                    (unsigned long long)key, arch) < (int)sizeof path;
    if (!disk || !(img = read_file(path, &n))) {
        CK_TRY(compile(src, arch, &img, &n, err));
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
