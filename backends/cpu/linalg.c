/*
 * backends/cpu/linalg.c - dense linear algebra slots on OpenBLAS (BLAS
 * level 3 through CBLAS) and LAPACK (through LAPACKE, column-major, so no
 * layout copies are made).  LAPACK's info codes are translated here, by
 * ck_cpu_lapack_info alone.
 */
#include <cblas.h>
#include <dlfcn.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/cpu/cpu.h"

/* What a positive info means, for the routines that document one.  The
 * others (dgeqrf, dgeqrt, dtpqrt, dorgqr, dgebrd, dormbr) return only 0 or
 * a rejected argument. */
static const struct lapack_fail {
    const char *routine;
    ck_code code;
    const char *fails; /* after "svd of a 4 x 3 matrix" */
} lapack_fails[] = {
    {.routine = "dgesdd", .code = CK_ENOTSUP, .fails = "did not converge"},
    {.routine = "dbdsdc", .code = CK_ENOTSUP, .fails = "did not converge"},
    {.routine = "dposv",
     .code = CK_ENOTSUP,
     .fails = "is not positive definite"},
};

ck_code ck_cpu_lapack_info(int info, const char *routine, const char *op,
                           int64_t m, int64_t n, ck_err *err)
{
    long long lm = (long long)m, ln = (long long)n;

    if (info == 0)
        return CK_OK;
    /* LAPACKE's own allocation failures are negative too: test them first */
    if (info == LAPACK_WORK_MEMORY_ERROR ||
#ifdef LAPACKE_WORK_MEMORY_ERROR
        info == LAPACKE_WORK_MEMORY_ERROR ||
#endif
        info == LAPACK_TRANSPOSE_MEMORY_ERROR)
        return ck_err_set(err, CK_ENOMEM,
                          "%s of a %lld x %lld matrix: out of memory in "
                          "LAPACK %s",
                          op, lm, ln, routine);
    if (info < 0) /* an argument chunkctl built */
        return ck_err_internal(err,
                               "%s of a %lld x %lld matrix: LAPACK %s "
                               "rejected argument %d",
                               op, lm, ln, routine, -info);
    for (size_t i = 0; i < sizeof lapack_fails / sizeof lapack_fails[0]; i++)
        if (strcmp(lapack_fails[i].routine, routine) == 0)
            return ck_err_set(err, lapack_fails[i].code,
                              "%s of a %lld x %lld matrix %s (LAPACK %s info "
                              "%d)",
                              op, lm, ln, lapack_fails[i].fails, routine, info);
    return ck_err_internal(err,
                           "%s of a %lld x %lld matrix: LAPACK %s returned "
                           "info %d, which it does not document",
                           op, lm, ln, routine, info);
}

ck_code ck_cpu_gemm(ck_be_ctx *ctx, const ck_gemm_args *a, ck_err *err)
{
    CBLAS_TRANSPOSE ta = a->trans_a ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE tb = a->trans_b ? CblasTrans : CblasNoTrans;

    (void)ctx;
    if (a->m == 0 || a->n == 0)
        return CK_OK;
    if (a->n == 1 && a->k > 0 && (a->dtype == CK_F32 || a->dtype == CK_F64)) {
        /* a matrix times a vector: gemv, whose kernels stream A; gemm's
         * small-matrix kernels take ~3x as long on a 512 x 100 block */
        blasint rows = (blasint)(a->trans_a ? a->k : a->m);
        blasint cols = (blasint)(a->trans_a ? a->m : a->k);
        blasint incx = a->trans_b ? 1 : (blasint)a->ldb;
        if (a->dtype == CK_F32)
            cblas_sgemv(CblasRowMajor, ta, rows, cols, (float)a->alpha, a->a,
                        (blasint)a->lda, a->b, incx, (float)a->beta, a->c,
                        (blasint)a->ldc);
        else
            cblas_dgemv(CblasRowMajor, ta, rows, cols, a->alpha, a->a,
                        (blasint)a->lda, a->b, incx, a->beta, a->c,
                        (blasint)a->ldc);
        return CK_OK;
    }
    if (a->dtype == CK_F32)
        cblas_sgemm(CblasRowMajor, ta, tb, (blasint)a->m, (blasint)a->n,
                    (blasint)a->k, (float)a->alpha, a->a, (blasint)a->lda, a->b,
                    (blasint)a->ldb, (float)a->beta, a->c, (blasint)a->ldc);
    else if (a->dtype == CK_F64)
        cblas_dgemm(CblasRowMajor, ta, tb, (blasint)a->m, (blasint)a->n,
                    (blasint)a->k, a->alpha, a->a, (blasint)a->lda, a->b,
                    (blasint)a->ldb, a->beta, a->c, (blasint)a->ldc);
    else
        return ck_err_set(err, CK_ENOTSUP, "gemm: dtype %s",
                          ck_dtype_name(a->dtype));
    return CK_OK;
}

ck_code ck_cpu_syrk(ck_be_ctx *ctx, const ck_syrk_args *a, ck_err *err)
{
    (void)ctx;
    (void)err;
    const double *m = a->a;
    int64_t ld = a->lda;

    if (a->n == 0)
        return CK_OK;
    if (a->w) { /* W^1/2 a, row by row */
        for (int64_t i = 0; i < a->k; i++) {
            double s = sqrt(a->w[i]);
            for (int64_t j = 0; j < a->n; j++)
                a->work[i * a->n + j] = s * a->a[i * a->lda + j];
        }
        m = a->work;
        ld = a->n;
    }
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (blasint)a->n,
                (blasint)a->k, a->alpha, m, (blasint)ld, a->beta, a->c,
                (blasint)a->ldc);
    /* syrk fills one triangle; callers get both */
    for (int64_t i = 1; i < a->n; i++)
        for (int64_t j = 0; j < i; j++)
            a->c[i * a->ldc + j] = a->c[j * a->ldc + i];
    return CK_OK;
}

ck_code ck_cpu_qr(ck_be_ctx *ctx, const ck_qr_args *a, ck_err *err)
{
    double *tau = malloc((size_t)(a->n ? a->n : 1) * sizeof *tau);
    const char *routine = "dgeqrf";
    lapack_int info;

    (void)ctx;
    if (!tau)
        return ck_err_set(err, CK_ENOMEM, "qr: out of memory");
    if (!a->want_q) {
        /* R only: dgeqrt's recursive panel (dgeqrt3) is level-3 BLAS,
         * where dgeqrf's panels are level-2 and bound by memory on the
         * tall-skinny blocks TSQR feeds it */
        lapack_int nb = (lapack_int)(a->n < 128 ? a->n : 128);
        double *t = malloc((size_t)(nb > 0 ? nb : 1) *
                           (size_t)(a->n ? a->n : 1) * sizeof *t);
        if (!t) {
            free(tau);
            return ck_err_set(err, CK_ENOMEM, "qr: out of memory");
        }
        routine = a->n && a->two_r && a->m == 2 * a->n ? "dtpqrt" : "dgeqrt";
        if (a->n && a->two_r && a->m == 2 * a->n)
            /* triangle on triangle: dtpqrt skips the zeros, 0.027 s
             * where dgeqrt takes 0.055 at n = 1000 */
            info = LAPACKE_dtpqrt(LAPACK_COL_MAJOR, (lapack_int)a->n,
                                  (lapack_int)a->n, (lapack_int)a->n,
                                  nb < 64 ? nb : 64, a->a, (lapack_int)a->lda,
                                  a->a + a->n, (lapack_int)a->lda, t, nb);
        else
            info = a->n ? LAPACKE_dgeqrt(LAPACK_COL_MAJOR, (lapack_int)a->m,
                                         (lapack_int)a->n, nb, a->a,
                                         (lapack_int)a->lda, t, nb)
                        : 0;
        free(t);
    } else {
        info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (lapack_int)a->m,
                              (lapack_int)a->n, a->a, (lapack_int)a->lda, tau);
    }
    if (info == 0) {
        for (int64_t j = 0; j < a->n; j++)
            for (int64_t i = 0; i < a->n; i++)
                a->r[j * a->ldr + i] = i <= j ? a->a[j * a->lda + i] : 0.0;
        if (a->want_q) {
            routine = "dorgqr";
            info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, (lapack_int)a->m,
                                  (lapack_int)a->n, (lapack_int)a->n, a->a,
                                  (lapack_int)a->lda, tau);
        }
    }
    free(tau);
    return ck_cpu_lapack_info((int)info, routine, "qr", a->m, a->n, err);
}

/* dgesdd's steps for m >= n without the one that makes U: bidiagonalise
 * (dgebrd), divide and conquer on the bidiagonal (dbdsdc, whose left
 * vectors go to the scratch u), then Vt = Vt_B P^T (dormbr).  dgesdd's
 * dormbr for U costs as much as the one for Vt: 0.033 of 0.29 s at
 * 1000 x 1000 on two cores.  *routine: the step that set info. */
static lapack_int svd_vt(const ck_svd_args *a, const char **routine)
{
    lapack_int m = (lapack_int)a->m, n = (lapack_int)a->n, info;
    lapack_int lda = (lapack_int)a->lda, ldvt = (lapack_int)a->ldvt;
    lapack_int *iw = malloc(sizeof *iw * 8 * (size_t)(n > 0 ? n : 1));
    double q1 = 0, q2 = 0, *v = calloc(3 * (size_t)(n > 0 ? n : 1), 8), *e = v,
           *tq = v + n, *tp = v + 2 * n, *work = NULL;

    *routine = "dgebrd";
    info = LAPACKE_dgebrd_work(LAPACK_COL_MAJOR, m, n, a->a, lda, a->s, e, tq,
                               tp, &q1, -1);
    if (info == 0) {
        *routine = "dormbr";
        info = LAPACKE_dormbr_work(LAPACK_COL_MAJOR, 'P', 'R', 'T', n, n, n,
                                   a->a, lda, tp, a->vt, ldvt, &q2, -1);
    }
    size_t lw = (size_t)(q1 > q2 ? q1 : q2);
    size_t bw = 3 * (size_t)n * (size_t)n + 4 * (size_t)n; /* dbdsdc */
    if (info == 0 && (!iw || !v || !(work = malloc(8 * (lw > bw ? lw : bw))))) {
        *routine = "dbdsdc"; /* the largest workspace is dbdsdc's */
        info = LAPACK_WORK_MEMORY_ERROR;
    }
    if (info == 0) {
        *routine = "dgebrd";
        info = LAPACKE_dgebrd_work(LAPACK_COL_MAJOR, m, n, a->a, lda, a->s, e,
                                   tq, tp, work, (lapack_int)lw);
    }
    if (info == 0) {
        *routine = "dbdsdc";
        info = LAPACKE_dbdsdc_work(LAPACK_COL_MAJOR, 'U', 'I', n, a->s, e, a->u,
                                   (lapack_int)a->ldu, a->vt, ldvt, NULL, NULL,
                                   work, iw);
    }
    if (info == 0) {
        *routine = "dormbr";
        info =
            LAPACKE_dormbr_work(LAPACK_COL_MAJOR, 'P', 'R', 'T', n, n, n, a->a,
                                lda, tp, a->vt, ldvt, work, (lapack_int)lw);
    }
    free(work);
    free(v);
    free(iw);
    return info;
}

ck_code ck_cpu_svd(ck_be_ctx *ctx, const ck_svd_args *a, ck_err *err)
{
    const char *routine = "dgesdd";
    lapack_int info;

    (void)ctx;
    /* divide and conquer: several times faster than dgesvd for the
     * square R factors of tall-skinny SVDs */
    if (a->no_u && a->m >= a->n)
        info = svd_vt(a, &routine);
    else
        info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'S', (lapack_int)a->m,
                              (lapack_int)a->n, a->a, (lapack_int)a->lda, a->s,
                              a->u, (lapack_int)a->ldu, a->vt,
                              (lapack_int)a->ldvt);
    return ck_cpu_lapack_info((int)info, routine, "svd", a->m, a->n, err);
}

ck_code ck_cpu_posv(ck_be_ctx *ctx, ck_posv_args *a, ck_err *err)
{
    lapack_int info;

    (void)ctx;
    a->not_pd = 0;
    info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', (lapack_int)a->n,
                         (lapack_int)a->nrhs, a->a, (lapack_int)a->n, a->b,
                         (lapack_int)a->n);
    if (info > 0) { /* the caller's to handle: a damped step, a report */
        a->not_pd = (int)info;
        return CK_OK;
    }
    return ck_cpu_lapack_info((int)info, "dposv", "posv", a->n, a->n, err);
}

/* Threads BLAS may use: OpenBLAS keeps one global pool. */
void ck_cpu_blas_threads(int n)
{
    if (n > 0)
        openblas_set_num_threads(n);
}

int ck_cpu_restart_env(const char **name, const char **value)
{
    /* OpenBLAS 0.3.21 picks its kernels from the CPU model; on CPUs it does
     * not know (virtual "Intel Xeon Processor" models among them) it falls
     * back to Prescott's SSE3 kernels, 3-5x slower than the AVX2/AVX-512
     * ones the CPU has.  Name the kernels that fit. */
    const char *now = openblas_get_corename(), *core = NULL;

    if (!now || strcasecmp(now, "prescott") != 0)
        return 0;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        core = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        core = "Haswell";
    if (!core)
        return 0;
    *name = "OPENBLAS_CORETYPE"; /* read when libopenblas loads */
    *value = core;
    return 1;
}

/* OpenBLAS's pool threads spin in sched_yield for about 0.1 s after each
 * threaded call before they sleep.  Beside workers that each run BLAS on
 * one thread they took a share of a core for nothing: 17% of the samples
 * of svd's U phase, and a 10000 x 1000 svd ran 0.82 s instead of 0.94 s
 * with the pool stopped.  So going down to one thread stops the pool
 * (blas_thread_shutdown_, OpenBLAS's own, looked up since other BLAS
 * builds lack it); OpenBLAS starts it again on its next threaded call.
 * Called only between BLAS calls, never beside one.  n = 0 is the
 * context's own count (--threads), and its 0 all cores. */
void ck_cpu_set_threads(ck_be_ctx *ctx, int n)
{
    int (*stop)(void) = NULL;
    void *sym;

    if (n == 0)
        n = ctx->threads;
    openblas_set_num_threads(n > 0 ? n : openblas_get_num_procs());
    if (n == 1 && (sym = dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) {
        memcpy(&stop, &sym, sizeof stop);
        stop();
    }
}
