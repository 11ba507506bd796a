/*
 * ops/dispatch.c - the one place that knows a backend slot may be NULL:
 * such a step runs on the CPU backend instead.
 */
#include "ops/ew.h"
#include "ops/hist.h"
#include "ops/linalg.h"
#include "ops/reduce.h"

ck_code ck_op_ew(const ck_be *be, const ck_ew_args *a, ck_err *err)
{
    if (be->table->ew)
        return be->table->ew(be->ctx, a, err);
    return ck_backend_cpu.ew(be->cpu_ctx, a, err);
}

ck_code ck_op_reduce(const ck_be *be, const ck_red_args *a, ck_err *err)
{
    if (be->table->reduce)
        return be->table->reduce(be->ctx, a, err);
    return ck_backend_cpu.reduce(be->cpu_ctx, a, err);
}

ck_code ck_op_hist(const ck_be *be, const ck_hist_args *a, ck_err *err)
{
    if (be->table->hist)
        return be->table->hist(be->ctx, a, err);
    return ck_backend_cpu.hist(be->cpu_ctx, a, err);
}

ck_code ck_op_gemm(const ck_be *be, const ck_gemm_args *a, ck_err *err)
{
    if (be->table->gemm)
        return be->table->gemm(be->ctx, a, err);
    return ck_backend_cpu.gemm(be->cpu_ctx, a, err);
}

ck_code ck_op_syrk(const ck_be *be, const ck_syrk_args *a, ck_err *err)
{
    if (be->table->syrk)
        return be->table->syrk(be->ctx, a, err);
    return ck_backend_cpu.syrk(be->cpu_ctx, a, err);
}

ck_code ck_op_qr(const ck_be *be, const ck_qr_args *a, ck_err *err)
{
    if (be->table->qr)
        return be->table->qr(be->ctx, a, err);
    return ck_backend_cpu.qr(be->cpu_ctx, a, err);
}

ck_code ck_op_svd(const ck_be *be, const ck_svd_args *a, ck_err *err)
{
    if (be->table->svd)
        return be->table->svd(be->ctx, a, err);
    return ck_backend_cpu.svd(be->cpu_ctx, a, err);
}

ck_code ck_op_posv(const ck_be *be, ck_posv_args *a, ck_err *err)
{
    if (be->table->posv)
        return be->table->posv(be->ctx, a, err);
    return ck_backend_cpu.posv(be->cpu_ctx, a, err);
}
