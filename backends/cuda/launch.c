/*
 * backends/cuda/launch.c - users' kernels (the kernel op's CUDA C) on the
 * device: compiled by NVRTC for the device's architecture (nvrtc.c, which
 * caches them), loaded with the runtime's library API, and launched once
 * per chunk with the contract's arguments (sample-data/kernels/
 * chunkctl_kernel.h): the chunk's and its arguments' descriptions, their
 * data and the params, all in device memory.
 *
 * A launch copies the arguments' blocks up, runs, and copies the chunk
 * back, in order on the context's stream, one launch at a time: the
 * simplest correct way, until the executor keeps chunks on the device
 * between steps (issue 11).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "backends/cuda/nvrtc.h"
#include "base/ck_dtype.h"

struct ck_be_kernel {
    cudaLibrary_t lib;
    cudaKernel_t fn;
    int max_block; /* threads per block it can run with */
};

ck_code ck_cuda_kernel_load(ck_be_ctx *ctx, const ck_kernel_src *s,
                            ck_be_kernel **out, ck_err *err)
{
    const void *image;
    size_t len;
    int compiled;
    ck_be_kernel *k;
    cudaError_t e;

    CK_TRY(ck_cuda_user_image(s->what, s->file, s->src, s->header, s->entry,
                              ctx->arch, &image, &len, &compiled, err));
    if (!(k = calloc(1, sizeof *k)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    if ((e = cudaSetDevice(ctx->device)) != cudaSuccess ||
        (e = cudaLibraryLoadData(&k->lib, image, NULL, NULL, 0, NULL, NULL,
                                 0)) != cudaSuccess) {
        free(k);
        return ck_cuda_fail(e, "loading a CUDA kernel", err);
    }
    if ((e = cudaLibraryGetKernel(&k->fn, k->lib, s->entry)) != cudaSuccess) {
        cudaLibraryUnload(k->lib);
        free(k);
        return ck_cuda_fail(e, "finding a CUDA kernel", err);
    }
    /* the most threads a block of it can have (its registers decide) */
    struct cudaFuncAttributes fa;
    k->max_block =
        cudaFuncGetAttributes(&fa, (const void *)k->fn) == cudaSuccess
            ? fa.maxThreadsPerBlock
            : 1024;
    *out = k;
    return CK_OK;
}

void ck_cuda_kernel_free(ck_be_ctx *ctx, ck_be_kernel *k)
{
    (void)ctx;
    if (k)
        cudaLibraryUnload(k->lib);
    free(k);
}

static size_t up256(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

static size_t data_bytes(const ck_be_array *v)
{
    size_t n = ck_dtype_size((ck_dtype)v->dtype);

    for (int d = 0; d < v->ndim; d++)
        n *= (size_t)v->shape[d];
    return n;
}

/* The scratch holds, from its start: the descriptions (out, then the
 * args), the params, then each argument's data and out's, each at a
 * 256-byte boundary. */
static ck_code room(ck_be_ctx *ctx, size_t need, const char *step, ck_err *err)
{
    char what[160];
    cudaError_t e;

    if (need <= ctx->scratch_len)
        return CK_OK;
    /* from the stream's pool, as the linear algebra's buffers are, so
     * what the pool holds for them is the scratch's to reuse */
    if (ctx->scratch)
        cudaFreeAsync(ctx->scratch, ctx->stream);
    ctx->used -= ctx->scratch_len;
    ctx->scratch = NULL;
    ctx->scratch_len = 0;
    if (!ck_cuda_fits(ctx, need) && ctx->nkept)
        ck_cuda_release(ctx); /* linear algebra's kept operands go first */
    snprintf(what, sizeof what, "kernel step '%s'", step);
    if (!ck_cuda_fits(ctx, need))
        return ck_cuda_no_room(ctx, what, ctx->used + need, err);
    if ((e = cudaMallocAsync(&ctx->scratch, need, ctx->stream)) !=
        cudaSuccess) {
        cudaGetLastError(); /* answered here */
        ctx->scratch = NULL;
        if (e == cudaErrorMemoryAllocation)
            return ck_cuda_no_device_room(ctx, what, need, err);
        return ck_cuda_fail(e, "device memory for a kernel's chunk", err);
    }
    ctx->scratch_len = need;
    ctx->used += need;
    return CK_OK;
}

static ck_code launch(ck_be_ctx *ctx, const ck_kernel_run_args *a, ck_err *err)
{
    ck_be_array desc[1 + CK_BE_KERNEL_MAX_ARGS];
    size_t off, at_params, at_data[1 + CK_BE_KERNEL_MAX_ARGS], n;
    char *base;
    cudaError_t e = cudaSuccess;
    int64_t elems = 1;

    if (a->block > a->k->max_block)
        return ck_err_set(err, CK_EUSAGE,
                          "kernel step '%s': \"block\": %d threads, and "
                          "this kernel runs at most %d a block on this "
                          "device",
                          a->step, a->block, a->k->max_block);
    if (a->nargs > CK_BE_KERNEL_MAX_ARGS)
        return ck_err_set(err, CK_EUSAGE,
                          "kernel step '%s': %d arrays, at "
                          "most %d",
                          a->step, a->nargs, CK_BE_KERNEL_MAX_ARGS);
    off = up256(sizeof(ck_be_array) * (size_t)(1 + a->nargs));
    at_params = off;
    off += up256(sizeof(double) * (size_t)(a->nparams > 0 ? a->nparams : 1));
    for (int k = 0; k <= a->nargs; k++) {
        at_data[k] = off;
        off += up256(data_bytes(k == 0 ? a->out : &a->args[k - 1]));
    }
    CK_TRY(room(ctx, off, a->step, err));
    base = ctx->scratch;
    for (int k = 0; k <= a->nargs; k++) {
        const ck_be_array *v = k == 0 ? a->out : &a->args[k - 1];
        desc[k] = *v;
        desc[k].data = base + at_data[k];
        if (k > 0 && e == cudaSuccess && (n = data_bytes(v)) > 0)
            e = cudaMemcpyAsync(desc[k].data, v->data, n,
                                cudaMemcpyHostToDevice, ctx->stream);
    }
    /* out starts as zeros, not as the last chunk's values */
    if (e == cudaSuccess && (n = data_bytes(a->out)) > 0)
        e = cudaMemsetAsync(desc[0].data, 0, n, ctx->stream);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(base, desc, sizeof desc[0] * (size_t)(1 + a->nargs),
                            cudaMemcpyHostToDevice, ctx->stream);
    if (e == cudaSuccess && a->nparams > 0)
        e = cudaMemcpyAsync(base + at_params, a->params,
                            sizeof(double) * (size_t)a->nparams,
                            cudaMemcpyHostToDevice, ctx->stream);
    if (e != cudaSuccess) {
        /* copies queued from desc and the caller's buffers read them yet */
        cudaStreamSynchronize(ctx->stream);
        return ck_cuda_fail(e, "copying a kernel's arguments to the device",
                            err);
    }
    for (int d = 0; d < a->out->ndim; d++)
        elems *= a->out->shape[d];
    {
        /* one thread an element, at most 65535 blocks (a grid-stride
         * loop covers more) */
        int64_t blocks = (elems + a->block - 1) / a->block;
        dim3 grid = {(unsigned)(blocks < 1       ? 1
                                : blocks > 65535 ? 65535
                                                 : blocks),
                     1, 1};
        dim3 threads = {(unsigned)a->block, 1, 1};
        void *p_out = base, *p_args = base + sizeof(ck_be_array);
        void *p_params = a->nparams > 0 ? base + at_params : NULL;
        int nargs = a->nargs, nparams = a->nparams;
        void *kargs[] = {&p_out, &p_args, &nargs, &p_params, &nparams};
        e = cudaLaunchKernel((const void *)a->k->fn, grid, threads, kargs, 0,
                             ctx->stream);
    }
    if (e == cudaSuccess && (n = data_bytes(a->out)) > 0)
        e = cudaMemcpyAsync(a->out->data, base + at_data[0], n,
                            cudaMemcpyDeviceToHost, ctx->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) {
        ctx->broken |= ck_cuda_sticky(e);
        return ck_err_set(err, CK_EDEVICE,
                          "kernel step '%s': the kernel failed on the device "
                          "for the chunk at %s: %s (%s)",
                          a->step, a->at, cudaGetErrorString(e),
                          cudaGetErrorName(e));
    }
    return CK_OK;
}

ck_code ck_cuda_kernel_run(ck_be_ctx *ctx, const ck_kernel_run_args *a,
                           ck_err *err)
{
    ck_code rc;
    cudaError_t e;

    pthread_mutex_lock(&ctx->lock);
    if (ctx->broken)
        rc = ck_err_set(err, CK_EDEVICE,
                        "kernel step '%s': the device failed earlier", a->step);
    else if ((e = cudaSetDevice(ctx->device)) != cudaSuccess)
        rc = ck_cuda_fail(e, "selecting the CUDA device", err);
    else
        rc = launch(ctx, a, err);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
