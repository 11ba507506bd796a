/*
 * backends/cpu/cpu.c - the reference backend: plain C, OpenBLAS and LAPACKE
 * on all cores.  Its context holds the thread count (--threads), which sets
 * the BLAS thread pool when it opens and whenever set_threads is asked for
 * the context's own count.
 */
#include <stdlib.h>

#include "backends/cpu/cpu.h"

static ck_code cpu_open(const ck_be_opts *o, ck_be_ctx **ctx, ck_err *err)
{
    ck_be_ctx *c = calloc(1, sizeof *c);

    if (!c)
        return ck_err_set(err, CK_ENOMEM, "cpu backend: out of memory");
    c->threads = o ? o->threads : 0;
    ck_cpu_blas_threads(c->threads);
    *ctx = c;
    return CK_OK;
}

static void cpu_close(ck_be_ctx *ctx)
{
    free(ctx);
}

const ck_backend ck_backend_cpu = {
    .name = "cpu",
    .abi = CK_BACKEND_ABI,
    .open = cpu_open,
    .close = cpu_close,
    .ew = ck_cpu_ew,
    .reduce = ck_cpu_reduce,
    .hist = ck_cpu_hist,
    .gemm = ck_cpu_gemm,
    .syrk = ck_cpu_syrk,
    .qr = ck_cpu_qr,
    .svd = ck_cpu_svd,
    .posv = ck_cpu_posv,
    .set_threads = ck_cpu_set_threads,
    .restart_env = ck_cpu_restart_env,
};
