/*
 * backends/cuda/cuda.c - the CUDA backend module, libchunkctl-cuda.so.
 * Loaded by backends/backend.c with dlopen when a run asks for "cuda" (or
 * "auto" finds a device).  It links the CUDA runtime statically, which
 * finds the driver (libcuda.so.1) itself when first called, so the module
 * loads on machines with no CUDA at all and says why it cannot run.
 *
 * It opens the device and lists devices; it fills no compute slot yet,
 * so every step runs on the CPU beside it (a NULL slot is the CPU's,
 * backends/backend.h) and results are the CPU's.  The device kernels
 * arrive with the engine's device buffers (issue 11).
 *
 * Users' CUDA C kernels (launch.c) and the dense linear algebra on
 * cuBLAS and cuSOLVER (blas.c) are written but not yet run on a GPU:
 * their slots are in the table only when CHUNKCTL_CUDA_UNVERIFIED=1, as
 * the GPU suite (tests/gpu/run.sh) sets it to check them against the CPU.
 * Without it they run on the CPU (a kernel step its C version), so no one
 * gets an answer from untested device code by accident.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "base/ck_log.h"
#include "base/ck_mem.h"

/* The driver's reason a call failed.  With no driver installed the
 * runtime says only that the driver is "insufficient"; the loader's
 * message for libcuda.so.1 says what is really missing. */
ck_code ck_cuda_fail(cudaError_t e, const char *what, ck_err *err)
{
    int drv = 0;

    if (e == cudaErrorInsufficientDriver &&
        (cudaDriverGetVersion(&drv) != cudaSuccess || drv == 0)) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h)
            return ck_err_set(err, CK_EDEVICE,
                              "no CUDA device: no NVIDIA driver (%s); use "
                              "--backend cpu",
                              dlerror());
        dlclose(h);
    }
    return ck_err_set(err, CK_EDEVICE, "%s: %s (%s); use --backend cpu", what,
                      cudaGetErrorString(e), cudaGetErrorName(e));
}

int ck_cuda_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
        return 1;
    default:
        return 0;
    }
}

static ck_code cuda_devices(ck_be_devices *out, int with_free, ck_err *err)
{
    cudaError_t e;
    int n = 0;

    memset(out, 0, sizeof *out);
    cudaDriverGetVersion(&out->driver);
    cudaRuntimeGetVersion(&out->runtime);
    if ((e = cudaGetDeviceCount(&n)) != cudaSuccess)
        return ck_cuda_fail(e, "no CUDA device", err);
    if (n == 0)
        return ck_err_set(err, CK_EDEVICE,
                          "no CUDA device: the driver lists none; use "
                          "--backend cpu");
    out->n = n < CK_BE_MAX_DEVICES ? n : CK_BE_MAX_DEVICES;
    for (int i = 0; i < out->n; i++) {
        ck_be_device *d = &out->dev[i];
        struct cudaDeviceProp p;
        size_t fr = 0, tot = 0;
        if ((e = cudaGetDeviceProperties(&p, i)) != cudaSuccess)
            return ck_cuda_fail(e, "CUDA device properties", err);
        snprintf(d->name, sizeof d->name, "%s", p.name);
        d->memory = (int64_t)p.totalGlobalMem;
        d->major = p.major;
        d->minor = p.minor;
        d->free_memory = -1;
        /* free memory needs a context on the device: only when asked */
        if (with_free && cudaSetDevice(i) == cudaSuccess &&
            cudaMemGetInfo(&fr, &tot) == cudaSuccess)
            d->free_memory = (int64_t)fr;
    }
    return CK_OK;
}

/* The device this process takes: the ranks on a host go round its
 * devices (host rank r takes device r mod n), and *share gets how many of
 * them take the same one.  A process that sees one device where
 * CUDA_VISIBLE_DEVICES is set was given it (Slurm's --gpus-per-task, a
 * wrapper script): it shares it with no one it knows of. */
static int pick_device(const ck_be_opts *o, int n, int *share)
{
    int r = o && o->host_size > 1 ? o->host_rank : 0;
    int size = o && o->host_size > 1 ? o->host_size : 1;
    int d = r % n;

    *share = size / n + (d < size % n);
    if (n == 1 && getenv("CUDA_VISIBLE_DEVICES"))
        *share = 1;
    return d;
}

/* CHUNKCTL_CUDA_SVD: gesvd (unset), gesvdj or host; -1 for another. */
static int svd_method(void)
{
    const char *v = getenv("CHUNKCTL_CUDA_SVD");

    if (!v || !*v || strcmp(v, "gesvd") == 0)
        return CK_CUDA_SVD_GESVD;
    if (strcmp(v, "gesvdj") == 0)
        return CK_CUDA_SVD_GESVDJ;
    if (strcmp(v, "host") == 0)
        return CK_CUDA_SVD_HOST;
    return -1;
}

static ck_code cuda_open(const ck_be_opts *o, ck_be_ctx **out, ck_err *err)
{
    ck_be_ctx *c;
    cudaError_t e;
    int major = 0, minor = 0, ndev = 0, dev = 0, share = 1;
    size_t fr = 0, tot = 0;
    char b[32], f[32];

    if (svd_method() < 0)
        return ck_err_set(err, CK_EUSAGE,
                          "CHUNKCTL_CUDA_SVD '%s': expected gesvd, gesvdj or "
                          "host",
                          getenv("CHUNKCTL_CUDA_SVD"));
    if ((e = cudaGetDeviceCount(&ndev)) != cudaSuccess)
        return ck_cuda_fail(e, "no CUDA device", err);
    if (ndev < 1)
        return ck_err_set(err, CK_EDEVICE,
                          "no CUDA device: the driver lists none; use "
                          "--backend cpu");
    dev = pick_device(o, ndev, &share);
    if ((e = cudaSetDevice(dev)) != cudaSuccess ||
        (e = cudaFree(0)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                    dev)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
                                    dev)) != cudaSuccess)
        return ck_cuda_fail(e, "no CUDA device", err);
    if ((e = cudaMemGetInfo(&fr, &tot)) != cudaSuccess)
        return ck_cuda_fail(e, "the CUDA device's free memory", err);
    if (!(c = calloc(1, sizeof *c)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    c->device = dev;
    c->share = share;
    c->svd_method = svd_method();
    c->arch = major * 10 + minor;
    /* what it may hold: --gpu-memory, never more than is free; else 90%
     * of what is free (the rest: cuBLAS's and cuSOLVER's own), divided
     * among the ranks that share the device */
    c->budget = fr / 10 * 9 / (size_t)share;
    if (o && o->device_memory > 0 && (uint64_t)o->device_memory <= fr) {
        c->budget = (size_t)o->device_memory;
        c->budget_given = 1;
    } else if (o && o->device_memory > 0) {
        char g[32];
        ck_log(CK_LOG_WARN, "--gpu-memory %s: device %d has %s free; using %s",
               ck_size_str((double)o->device_memory, g, sizeof g), dev,
               ck_size_str((double)fr, f, sizeof f),
               ck_size_str((double)c->budget, b, sizeof b));
    }
    c->kept_cap = c->budget / 2;
    ck_log(CK_LOG_DEBUG,
           "cuda: device %d of %d, %s of its memory for this process (%s "
           "free%s; %d process%s on it)",
           dev, ndev, ck_size_str((double)c->budget, b, sizeof b),
           ck_size_str((double)fr, f, sizeof f),
           c->budget_given ? ", --gpu-memory" : "", share,
           share == 1 ? "" : "es");
    if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) !=
        cudaSuccess) {
        free(c);
        return ck_cuda_fail(e, "a CUDA stream", err);
    }
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return CK_OK;
}

static void cuda_close(ck_be_ctx *c)
{
    if (!c)
        return;
    cudaSetDevice(c->device); /* this thread's may be another */
    if (c->scratch)
        cudaFree(c->scratch);
    ck_cuda_blas_close(c);
    cudaStreamDestroy(c->stream);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void cuda_release(ck_be_ctx *c)
{
    pthread_mutex_lock(&c->lock);
    cudaSetDevice(c->device);
    ck_cuda_release(c);
    pthread_mutex_unlock(&c->lock);
}

static const ck_backend table = {
    .name = "cuda",
    .abi = CK_BACKEND_ABI,
    .open = cuda_open,
    .close = cuda_close,
    .devices = cuda_devices,
};

/* The same with the slots whose device code awaits its first run on a
 * GPU (see the top of this file). */
static const ck_backend table_unverified = {
    .name = "cuda",
    .abi = CK_BACKEND_ABI,
    .open = cuda_open,
    .close = cuda_close,
    .devices = cuda_devices,
    .gemm = ck_cuda_gemm,
    .syrk = ck_cuda_syrk,
    .qr = ck_cuda_qr,
    .svd = ck_cuda_svd,
    .posv = ck_cuda_posv,
    .kernel_load = ck_cuda_kernel_load,
    .kernel_run = ck_cuda_kernel_run,
    .kernel_free = ck_cuda_kernel_free,
    .release = cuda_release,
};

/* The module's one export (backends/backend.c looks it up by name).
 * CHUNKCTL_CUDA_SVD=host leaves the svd slot to the CPU's LAPACK. */
__attribute__((visibility("default"))) const ck_backend *ck_backend_module(void)
{
    static ck_backend host_svd;
    const char *v = getenv("CHUNKCTL_CUDA_UNVERIFIED");

    if (!v || strcmp(v, "1") != 0)
        return &table;
    if (svd_method() != CK_CUDA_SVD_HOST)
        return &table_unverified;
    host_svd = table_unverified;
    host_svd.svd = NULL;
    return &host_svd;
}
