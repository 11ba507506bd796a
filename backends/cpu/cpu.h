/*
 * backends/cpu/cpu.h - the CPU backend's kernels, one file per family
 * (ew.c, reduce.c, hist.c, linalg.c); cpu.c puts them in the table.  Private to
 * backends/cpu.
 */
#ifndef CK_CPU_H
#define CK_CPU_H

#include "backends/backend.h"

/* The CPU context: what the slots read. */
struct ck_be_ctx {
    int threads; /* ck_be_opts.threads: 0 for all cores */
};

ck_code ck_cpu_ew(ck_be_ctx *ctx, const ck_ew_args *a, ck_err *err);
ck_code ck_cpu_reduce(ck_be_ctx *ctx, const ck_red_args *a, ck_err *err);
ck_code ck_cpu_hist(ck_be_ctx *ctx, const ck_hist_args *a, ck_err *err);
ck_code ck_cpu_gemm(ck_be_ctx *ctx, const ck_gemm_args *a, ck_err *err);
ck_code ck_cpu_syrk(ck_be_ctx *ctx, const ck_syrk_args *a, ck_err *err);
ck_code ck_cpu_qr(ck_be_ctx *ctx, const ck_qr_args *a, ck_err *err);
ck_code ck_cpu_svd(ck_be_ctx *ctx, const ck_svd_args *a, ck_err *err);
ck_code ck_cpu_posv(ck_be_ctx *ctx, ck_posv_args *a, ck_err *err);
void ck_cpu_set_threads(ck_be_ctx *ctx, int n);
int ck_cpu_restart_env(const char **name, const char **value);
void ck_cpu_blas_threads(int n);

#endif
