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

/* The one translation of a LAPACK(E) info (STYLE §3), for routine (its
 * name, "dgesdd") called by step op ("svd") on an m x n matrix.  0: CK_OK.
 * LAPACKE's work and transpose allocation failures (-1010, -1011):
 * CK_ENOMEM "<op> of a M x N matrix: out of memory in LAPACK <routine>".
 * Any other info < 0, an argument the routine rejects, was built by
 * chunkctl: an internal fault (ck_err_internal, which asserts in debug
 * builds).  info > 0: the routine's own failure, "<op> of a M x N matrix
 * did not converge (LAPACK dgesdd info 3)" (CK_ENOTSUP), or an internal
 * fault for a routine that documents no positive info. */
ck_code ck_cpu_lapack_info(int info, const char *routine, const char *op,
                           int64_t m, int64_t n, ck_err *err);
int ck_cpu_restart_env(const char **name, const char **value);
void ck_cpu_blas_threads(int n);

#endif
