/*
 * backends/backend.c - backend lookup.  The CPU backend is built in; the
 * CUDA backend is a module, libchunkctl-cuda.so, loaded with dlopen from
 * the executable's directory the first time it is asked for, so that
 * chunkctl starts and works on machines with no CUDA libraries at all.
 */
#include "backends/backend.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The symbol a module exports: its table. */
#define CK_MODULE_ENTRY "ck_backend_module"

static struct {
    pthread_once_t once;
    const ck_backend *table; /* NULL: did not load, see why */
    char why[384];
} cuda = {.once = PTHREAD_ONCE_INIT};

/* dir of /proc/self/exe + "/libchunkctl-cuda.so"; CHUNKCTL_MODULE_DIR,
 * when set, is looked in instead (a test pointing at a build tree). */
static void load_cuda(void)
{
    static const char file[] = "libchunkctl-cuda.so";
    char path[PATH_MAX + sizeof file];
    const char *dir = getenv("CHUNKCTL_MODULE_DIR");
    const ck_backend *(*entry)(void);
    void *h;
    ssize_t n;

    if (dir) {
        n = snprintf(path, sizeof path, "%s/", dir);
    } else {
        n = readlink("/proc/self/exe", path, PATH_MAX);
        while (n > 0 && path[n - 1] != '/')
            n--;
    }
    if (n <= 0 || (size_t)n >= PATH_MAX) {
        snprintf(cuda.why, sizeof cuda.why,
                 "cannot find the directory chunkctl runs from");
        return;
    }
    memcpy(path + n, file, sizeof file);
    if (access(path, F_OK) != 0) {
        snprintf(cuda.why, sizeof cuda.why,
                 "this chunkctl was built without it (no %s beside it)", file);
        return;
    }
    if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        snprintf(cuda.why, sizeof cuda.why, "%s", dlerror());
        return;
    }
    *(void **)&entry = dlsym(h, CK_MODULE_ENTRY);
    if (!entry) {
        snprintf(cuda.why, sizeof cuda.why, "%s has no %s", path,
                 CK_MODULE_ENTRY);
        dlclose(h);
        return;
    }
    cuda.table = entry();
    if (!cuda.table || cuda.table->abi != CK_BACKEND_ABI) {
        snprintf(cuda.why, sizeof cuda.why,
                 "%s was built for backend ABI %d, this chunkctl has %d "
                 "(install the two together)",
                 path, cuda.table ? cuda.table->abi : -1, CK_BACKEND_ABI);
        cuda.table = NULL;
        dlclose(h);
    }
    /* a loaded module stays loaded: its table is used until exit */
}

ck_code ck_be_find(const char *name, const ck_backend **out, ck_err *err)
{
    if (strcmp(name, ck_backend_cpu.name) == 0) {
        *out = &ck_backend_cpu;
        return CK_OK;
    }
    if (strcmp(name, "cuda") == 0) {
        pthread_once(&cuda.once, load_cuda);
        if (!cuda.table)
            return ck_err_set(err, CK_EDEVICE,
                              "no CUDA backend: %s; use --backend cpu",
                              cuda.why);
        *out = cuda.table;
        return CK_OK;
    }
    return ck_err_set(err, CK_EUSAGE,
                      "unknown backend '%.64s' (known: auto, cpu, cuda)", name);
}

ck_code ck_be_resolve(const char *name, const char **out, char *why,
                      size_t why_n, ck_err *err)
{
    const ck_backend *b;
    ck_be_devices d;
    ck_err e = {0};

    if (why && why_n)
        why[0] = '\0';
    if (strcmp(name, "auto") != 0) {
        CK_TRY(ck_be_find(name, &b, err));
        *out = b->name;
        return CK_OK;
    }
    *out = ck_backend_cpu.name;
    if (ck_be_find("cuda", &b, &e) != CK_OK ||
        (b->devices && b->devices(&d, 0, &e) != CK_OK)) {
        /* the advice is for one who asked for cuda, not for auto */
        char *advice = strstr(e.msg, "; use --backend cpu");
        if (advice)
            *advice = '\0';
        if (why && why_n)
            snprintf(why, why_n, "%s", e.msg);
        return CK_OK;
    }
    *out = b->name;
    return CK_OK;
}

ck_code ck_be_list_devices(ck_be_devices *out, ck_err *err)
{
    const ck_backend *b;

    memset(out, 0, sizeof *out);
    CK_TRY(ck_be_find("cuda", &b, err));
    if (!b->devices)
        return ck_err_set(err, CK_EDEVICE,
                          "no CUDA device: the module "
                          "cannot list devices");
    return b->devices(out, 1, err);
}

ck_code ck_be_open(const char *name, const ck_be_opts *o, ck_be *be,
                   ck_err *err)
{
    ck_be b = {0};
    const char *chosen;
    ck_code rc;

    CK_TRY(ck_be_resolve(name, &chosen, NULL, 0, err));
    CK_TRY(ck_be_find(chosen, &b.table, err));
    CK_TRY(ck_backend_cpu.open(o, &b.cpu_ctx, err));
    if (b.table == &ck_backend_cpu) {
        b.ctx = b.cpu_ctx;
    } else if ((rc = b.table->open(o, &b.ctx, err)) != CK_OK) {
        ck_backend_cpu.close(b.cpu_ctx);
        return rc;
    }
    *be = b;
    return CK_OK;
}

void ck_be_close(ck_be *be)
{
    if (!be || !be->table)
        return;
    if (be->ctx && be->ctx != be->cpu_ctx)
        be->table->close(be->ctx);
    if (be->cpu_ctx)
        ck_backend_cpu.close(be->cpu_ctx);
    be->ctx = be->cpu_ctx = NULL;
}

void ck_be_set_threads(const ck_be *be, int n)
{
    if (!be->table)
        return;
    if (be->table->set_threads && be->ctx)
        be->table->set_threads(be->ctx, n);
    if (be->cpu_ctx && be->cpu_ctx != be->ctx && ck_backend_cpu.set_threads)
        ck_backend_cpu.set_threads(be->cpu_ctx, n);
}

void ck_be_release(const ck_be *be)
{
    if (be->table && be->table->release && be->ctx)
        be->table->release(be->ctx);
}

int ck_be_restart_env(const char **name, const char **value)
{
    const char *n, *v;

    if (!ck_backend_cpu.restart_env || !ck_backend_cpu.restart_env(&n, &v) ||
        getenv(n))
        return 0;
    *name = n;
    *value = v;
    return 1;
}
