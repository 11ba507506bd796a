/*
 * backends/cuda/blas.c - the dense linear algebra slots (backends/
 * backend.h: gemm, syrk, qr, svd, posv) on the device, through cuBLAS and
 * cuSOLVER.  Each call moves its operands up, runs, and brings its
 * results back, in order on the context's stream, one call at a time: the
 * blocks the CPU executor hands out (a row block's QR, a tile's gemm, a
 * pass's X^T W X) each run on the device.  A gemm operand that comes
 * with a key (backends/backend.h: a block of an input that later calls
 * hand over again, as GLM passes do with X's rows and matmul boxes with
 * their bands) is kept on the device while half the context's budget
 * lasts, so it crosses the bus once; the rest are uploaded per call.
 * Everything the calls allocate counts against that budget
 * (--gpu-memory): a call that finds no room lets the kept operands go and
 * runs again, and a gemm, a syrk or a QR's R that still does not fit runs
 * in pieces that do.
 *
 * cuBLAS and cuSOLVER are loaded with dlopen on the first call (so the
 * module loads, and lists devices, without them): libcublas.so.13 and
 * libcusolver.so.12 from the loader's path, then the Toolkit chunkctl was
 * built with.  Matrices arrive row-major (gemm, syrk) or column-major (the
 * factorisations), as the slots say; cuBLAS and cuSOLVER are column-major,
 * so a row-major matrix is its transpose there.
 */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cusolverDn.h>

#include "backends/cuda/cuda_impl.h"
#include "base/ck_mem.h"

/* ---- the libraries ---- */

static struct {
    pthread_once_t once;
    char why[512];
    void *blas, *solver;
    __typeof__(cublasCreate_v2) *create;
    __typeof__(cublasDestroy_v2) *destroy;
    __typeof__(cublasSetStream_v2) *set_stream;
    __typeof__(cublasDgemm_v2) *dgemm;
    __typeof__(cublasSgemm_v2) *sgemm;
    __typeof__(cublasDsyrk_v2) *dsyrk;
    __typeof__(cublasDdgmm) *ddgmm;
    __typeof__(cusolverDnCreate) *s_create;
    __typeof__(cusolverDnDestroy) *s_destroy;
    __typeof__(cusolverDnSetStream) *s_set_stream;
    __typeof__(cusolverDnDgeqrf_bufferSize) *geqrf_size;
    __typeof__(cusolverDnDgeqrf) *geqrf;
    __typeof__(cusolverDnDorgqr_bufferSize) *orgqr_size;
    __typeof__(cusolverDnDorgqr) *orgqr;
    __typeof__(cusolverDnDgesvd_bufferSize) *gesvd_size;
    __typeof__(cusolverDnDgesvd) *gesvd;
    __typeof__(cusolverDnDgesvdj_bufferSize) *gesvdj_size;
    __typeof__(cusolverDnDgesvdj) *gesvdj;
    __typeof__(cusolverDnCreateGesvdjInfo) *gesvdj_create;
    __typeof__(cusolverDnDestroyGesvdjInfo) *gesvdj_destroy;
    __typeof__(cusolverDnDpotrf_bufferSize) *potrf_size;
    __typeof__(cusolverDnDpotrf) *potrf;
    __typeof__(cusolverDnDpotrs) *potrs;
} lib = {.once = PTHREAD_ONCE_INIT};

/* The first of names that loads, else the Toolkit's copy in dir. */
static void *open_lib(const char *const *names, int n, const char *dir,
                      const char *file)
{
    char path[1024];
    void *h = NULL;

    for (int i = 0; i < n && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h && dir &&
        snprintf(path, sizeof path, "%s/%s", dir, file) < (int)sizeof path)
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return h;
}

#ifndef CK_CUDA_LIB_DIR
#define CK_CUDA_LIB_DIR NULL
#endif

#define SYM(h, field, name)                                                    \
    (*(void **)&lib.field = dlsym(h, name), lib.field != NULL)

/* The names looked for; the test build of the module (tests/CMakeLists.txt,
 * cuda/emulated) names its emulated device's library for both. */
#ifndef CK_CUBLAS_LIBS
#define CK_CUBLAS_LIBS "libcublas.so.13", "libcublas.so"
#endif
#ifndef CK_CUSOLVER_LIBS
#define CK_CUSOLVER_LIBS "libcusolver.so.12", "libcusolver.so"
#endif

static void load(void)
{
    static const char *const blas[] = {CK_CUBLAS_LIBS};
    static const char *const solver[] = {CK_CUSOLVER_LIBS};
    const int nb = (int)(sizeof blas / sizeof *blas);
    const int ns = (int)(sizeof solver / sizeof *solver);

    lib.blas = open_lib(blas, nb, CK_CUDA_LIB_DIR, "libcublas.so");
    lib.solver = open_lib(solver, ns, CK_CUDA_LIB_DIR, "libcusolver.so");
    if (!lib.blas || !lib.solver) {
        const char *why = dlerror();
        snprintf(lib.why, sizeof lib.why, "%s",
                 why ? why : "libcublas or libcusolver not found");
        return;
    }
    if (!SYM(lib.blas, create, "cublasCreate_v2") ||
        !SYM(lib.blas, destroy, "cublasDestroy_v2") ||
        !SYM(lib.blas, set_stream, "cublasSetStream_v2") ||
        !SYM(lib.blas, dgemm, "cublasDgemm_v2") ||
        !SYM(lib.blas, sgemm, "cublasSgemm_v2") ||
        !SYM(lib.blas, dsyrk, "cublasDsyrk_v2") ||
        !SYM(lib.blas, ddgmm, "cublasDdgmm") ||
        !SYM(lib.solver, s_create, "cusolverDnCreate") ||
        !SYM(lib.solver, s_destroy, "cusolverDnDestroy") ||
        !SYM(lib.solver, s_set_stream, "cusolverDnSetStream") ||
        !SYM(lib.solver, geqrf_size, "cusolverDnDgeqrf_bufferSize") ||
        !SYM(lib.solver, geqrf, "cusolverDnDgeqrf") ||
        !SYM(lib.solver, orgqr_size, "cusolverDnDorgqr_bufferSize") ||
        !SYM(lib.solver, orgqr, "cusolverDnDorgqr") ||
        !SYM(lib.solver, gesvd_size, "cusolverDnDgesvd_bufferSize") ||
        !SYM(lib.solver, gesvd, "cusolverDnDgesvd") ||
        !SYM(lib.solver, gesvdj_size, "cusolverDnDgesvdj_bufferSize") ||
        !SYM(lib.solver, gesvdj, "cusolverDnDgesvdj") ||
        !SYM(lib.solver, gesvdj_create, "cusolverDnCreateGesvdjInfo") ||
        !SYM(lib.solver, gesvdj_destroy, "cusolverDnDestroyGesvdjInfo") ||
        !SYM(lib.solver, potrf_size, "cusolverDnDpotrf_bufferSize") ||
        !SYM(lib.solver, potrf, "cusolverDnDpotrf") ||
        !SYM(lib.solver, potrs, "cusolverDnDpotrs")) {
        snprintf(lib.why, sizeof lib.why,
                 "cuBLAS or cuSOLVER lacks the functions used");
        lib.blas = lib.solver = NULL;
    }
}

/* Under ctx->lock: the libraries, and ctx's handles on its stream. */
static ck_code ready(ck_be_ctx *c, ck_err *err)
{
    cudaError_t e;

    if (c->broken)
        return ck_err_set(err, CK_EDEVICE,
                          "the CUDA device failed earlier in this run");
    pthread_once(&lib.once, load);
    if (!lib.blas)
        return ck_err_set(err, CK_EDEVICE,
                          "no cuBLAS/cuSOLVER: %s; use --backend cpu", lib.why);
    if ((e = cudaSetDevice(c->device)) != cudaSuccess)
        return ck_cuda_fail(e, "selecting the CUDA device", err);
    if (!c->blas) {
        cublasHandle_t h;
        if (lib.create(&h) != CUBLAS_STATUS_SUCCESS)
            return ck_err_set(err, CK_EDEVICE, "cuBLAS did not start");
        lib.set_stream(h, c->stream);
        c->blas = h;
    }
    if (!c->solver) {
        cusolverDnHandle_t h;
        if (lib.s_create(&h) != CUSOLVER_STATUS_SUCCESS)
            return ck_err_set(err, CK_EDEVICE, "cuSOLVER did not start");
        lib.s_set_stream(h, c->stream);
        c->solver = h;
    }
    return CK_OK;
}

struct ck_cuda_kept {
    uint64_t key;
    void *d;
    int64_t rows, cols;
    size_t es;
    size_t len; /* bytes allocated, on the books as kept and used */
};

void ck_cuda_blas_close(ck_be_ctx *c)
{
    cudaStreamSynchronize(c->stream); /* nothing queued reads them now */
    for (int i = 0; i < c->nkept; i++)
        cudaFree(c->kept[i].d);
    free(c->kept);
    if (c->blas)
        lib.destroy((cublasHandle_t)c->blas);
    if (c->solver)
        lib.s_destroy((cusolverDnHandle_t)c->solver);
}

/* ---- device buffers and copies, on the stream ---- */

enum { MAXBUF = 8 };

typedef struct call {
    ck_be_ctx *c;
    void *buf[MAXBUF];
    size_t len[MAXBUF];
    int nbuf;
    int nkept0;    /* c->nkept before the call: later ones are its own */
    cudaError_t e; /* the first failure */
    size_t need;   /* device memory held at once had it found room */
    int over;      /* the budget refused it (else the device had none) */
    const char *what;
} call;

static void *dalloc(call *k, size_t bytes)
{
    ck_be_ctx *c = k->c;
    void *p = NULL;

    bytes = bytes ? bytes : 8;
    if (k->nbuf == MAXBUF && k->e == cudaSuccess)
        k->e = cudaErrorMemoryAllocation; /* a bug: more buffers than kept */
    if (k->e != cudaSuccess)
        return NULL;
    if (!ck_cuda_fits(c, bytes)) { /* the budget's word, not the device's */
        k->e = cudaErrorMemoryAllocation;
        k->over = 1;
    } else
        k->e = cudaMallocAsync(&p, bytes, c->stream);
    if (k->e != cudaSuccess) {
        cudaGetLastError(); /* answered here, not by a later call's check */
        k->need = c->used + bytes;
        return NULL;
    }
    c->used += bytes;
    k->len[k->nbuf] = bytes;
    k->buf[k->nbuf++] = p;
    return p;
}

ck_code ck_cuda_no_room(const ck_be_ctx *c, const char *what, size_t need,
                        ck_err *err)
{
    char n[32], b[32];

    ck_need_str((double)need, n, sizeof n);
    ck_size_str((double)c->budget, b, sizeof b);
    if (c->budget_given)
        return ck_err_set(
            err, CK_ENOMEM,
            "%s: out of device memory: needs at least %s at once, "
            "more than --gpu-memory %s",
            what, n, b);
    if (c->share > 1)
        return ck_err_set(
            err, CK_ENOMEM,
            "%s: out of device memory: needs at least %s at once, more "
            "than the %s it may use (90%% of what was free, "
            "divided among the %d processes on the device); "
            "use fewer ranks per GPU or --backend cpu",
            what, n, b, c->share);
    return ck_err_set(
        err, CK_ENOMEM,
        "%s: out of device memory: needs at least %s at once, more "
        "than the %s it may use (90%% of what was free); use "
        "--backend cpu",
        what, n, b);
}

ck_code ck_cuda_no_device_room(const ck_be_ctx *c, const char *what,
                               size_t more, ck_err *err)
{
    char n[32], h[32];

    ck_need_str((double)more, n, sizeof n);
    ck_size_str((double)c->used, h, sizeof h);
    return ck_err_set(err, CK_ENOMEM,
                      "%s: out of device memory: the device had no room "
                      "for %s more beside the %s chunkctl held (another "
                      "process may hold the rest); give a smaller "
                      "--gpu-memory, or use --backend cpu",
                      what, n, h);
}

/* rows x cols elements of esz bytes between row strides (in elements) */
static void copy2d(call *k, void *dst, int64_t dld, const void *src,
                   int64_t sld, int64_t rows, int64_t cols, size_t esz,
                   enum cudaMemcpyKind kind)
{
    if (k->e != cudaSuccess || rows == 0 || cols == 0)
        return;
    if (dld == cols && sld == cols) /* one run: no pitch limit, faster */
        k->e = cudaMemcpyAsync(dst, src, (size_t)(rows * cols) * esz, kind,
                               k->c->stream);
    else
        k->e = cudaMemcpy2DAsync(dst, (size_t)dld * esz, src, (size_t)sld * esz,
                                 (size_t)cols * esz, (size_t)rows, kind,
                                 k->c->stream);
}

/* The device copy of a gemm operand of rows x cols elements of es bytes
 * at host (row stride ld), contiguous: the kept one for key, else one
 * uploaded now, kept when key is not 0 and there is room. */
static void *operand(call *k, uint64_t key, const void *host, int64_t ld,
                     int64_t rows, int64_t cols, size_t es)
{
    ck_be_ctx *c = k->c;
    size_t bytes = (size_t)(rows * cols) * es, len = bytes ? bytes : 8;
    void *d = NULL;

    for (int i = 0; key && i < c->nkept; i++)
        if (c->kept[i].key == key) {
            if (c->kept[i].rows == rows && c->kept[i].cols == cols &&
                c->kept[i].es == es)
                return c->kept[i].d;
            key = 0; /* another block under the key: this call's own */
        }
    if (key && k->e == cudaSuccess && len <= c->kept_cap - c->kept_bytes &&
        ck_cuda_fits(c, len)) {
        if (c->nkept == c->cap_kept) {
            int n = c->cap_kept ? 2 * c->cap_kept : 64;
            struct ck_cuda_kept *g = realloc(c->kept, (size_t)n * sizeof *g);
            if (!g)
                key = 0;
            else
                c->kept = g, c->cap_kept = n;
        }
        if (key && cudaMallocAsync(&d, len, c->stream) == cudaSuccess) {
            c->kept[c->nkept++] =
                (struct ck_cuda_kept){key, d, rows, cols, es, len};
            c->kept_bytes += len;
            c->used += len;
            copy2d(k, d, cols, host, ld, rows, cols, es,
                   cudaMemcpyHostToDevice);
            return d;
        }
        cudaGetLastError(); /* that failure is not the call's */
        d = NULL;           /* no room after all: this call's own */
    }
    d = dalloc(k, bytes);
    copy2d(k, d, cols, host, ld, rows, cols, es, cudaMemcpyHostToDevice);
    return d;
}

/* Frees kept operand o (stream-ordered) and takes it off the books; the
 * caller shortens the list. */
static void drop(ck_be_ctx *c, const struct ck_cuda_kept *o)
{
    cudaFreeAsync(o->d, c->stream);
    c->kept_bytes -= o->len;
    c->used -= o->len;
}

/* Waits for the stream, frees the call's buffers; CK_ENOMEM when the
 * device had no room, CK_EDEVICE for another failure (a fault breaks the
 * context) or a library status.  Operands the call kept are let go when
 * it failed: their uploads may not have run. */
static ck_code finish(call *k, int status_ok, ck_err *err)
{
    cudaError_t e = k->e, w;
    ck_be_ctx *c = k->c;

    /* even after a failure: copies queued before it read host memory
     * the caller may free on return */
    w = cudaStreamSynchronize(k->c->stream);
    if (e == cudaSuccess)
        e = w;
    /* an allocation found no room before any result came back: the call
     * may run again once kept operands are let go (LOCKED) */
    c->no_room = k->e == cudaErrorMemoryAllocation;
    for (int i = 0; i < k->nbuf; i++) {
        cudaFreeAsync(k->buf[i], k->c->stream);
        c->used -= k->len[i];
    }
    if (e != cudaSuccess || !status_ok)
        for (; c->nkept > k->nkept0; c->nkept--)
            drop(c, &c->kept[c->nkept - 1]);
    if (e == cudaErrorMemoryAllocation && k->over)
        return ck_cuda_no_room(c, k->what, k->need, err);
    if (e == cudaErrorMemoryAllocation)
        return ck_cuda_no_device_room(c, k->what, k->need - c->used, err);
    if (e != cudaSuccess) {
        k->c->broken |= ck_cuda_sticky(e);
        return ck_cuda_fail(e, k->what, err);
    }
    if (!status_ok)
        return ck_err_set(err, CK_EDEVICE,
                          "%s: the CUDA library call failed; use --backend "
                          "cpu",
                          k->what);
    return CK_OK;
}

static int fits_int(int64_t a, int64_t b, int64_t c)
{
    return a >= 0 && b >= 0 && c >= 0 && a <= INT_MAX && b <= INT_MAX &&
           c <= INT_MAX;
}

/* ---- the slots ---- */

static ck_code gemm(ck_be_ctx *c, const ck_gemm_args *a, ck_err *err)
{
    size_t es = a->dtype == CK_F32 ? 4 : 8;
    /* as stored, row-major: a is (ta ? k x m : m x k), b (tb ? n x k :
     * k x n); column-major, each is its transpose, and c^T = op(b)^T
     * op(a)^T is what cuBLAS computes */
    int64_t ra = a->trans_a ? a->k : a->m, ca = a->trans_a ? a->m : a->k;
    int64_t rb = a->trans_b ? a->n : a->k, cb = a->trans_b ? a->k : a->n;
    call k = {.c = c, .nkept0 = c->nkept, .what = "gemm on the CUDA device"};
    const void *da, *db;
    void *dc;
    int ok = 1;

    if (a->dtype != CK_F32 && a->dtype != CK_F64)
        return ck_err_set(err, CK_ENOTSUP, "gemm: dtype %s",
                          ck_dtype_name(a->dtype));
    if (!fits_int(a->m, a->n, a->k))
        return ck_err_set(err, CK_ENOTSUP, "gemm: a dimension over 2^31");
    if (a->m == 0 || a->n == 0)
        return CK_OK;
    if (a->k == 0) { /* c = beta c, as BLAS leaves it */
        for (int64_t i = 0; i < a->m; i++)
            for (int64_t j = 0; j < a->n; j++) {
                int64_t at = i * a->ldc + j;
                if (a->dtype == CK_F64)
                    ((double *)a->c)[at] =
                        a->beta == 0 ? 0 : a->beta * ((double *)a->c)[at];
                else
                    ((float *)a->c)[at] =
                        a->beta == 0 ? 0 : (float)a->beta * ((float *)a->c)[at];
            }
        return CK_OK;
    }
    CK_TRY(ready(c, err));
    da = operand(&k, a->a_key, a->a, a->lda, ra, ca, es);
    db = operand(&k, a->b_key, a->b, a->ldb, rb, cb, es);
    dc = dalloc(&k, (size_t)(a->m * a->n) * es);
    if (a->beta != 0)
        copy2d(&k, dc, a->n, a->c, a->ldc, a->m, a->n, es,
               cudaMemcpyHostToDevice);
    else if (k.e == cudaSuccess)
        k.e = cudaMemsetAsync(dc, 0, (size_t)(a->m * a->n) * es, c->stream);
    if (k.e == cudaSuccess) {
        cublasOperation_t ta = a->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasOperation_t tb = a->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        int m = (int)a->m, n = (int)a->n, kk = (int)a->k;
        if (a->dtype == CK_F64) {
            double al = a->alpha, be = a->beta;
            ok = lib.dgemm(c->blas, tb, ta, n, m, kk, &al, db, (int)cb, da,
                           (int)ca, &be, dc, n) == CUBLAS_STATUS_SUCCESS;
        } else {
            float al = (float)a->alpha, be = (float)a->beta;
            ok = lib.sgemm(c->blas, tb, ta, n, m, kk, &al, db, (int)cb, da,
                           (int)ca, &be, dc, n) == CUBLAS_STATUS_SUCCESS;
        }
    }
    if (ok) /* c stays as it was when the call failed */
        copy2d(&k, a->c, a->ldc, dc, a->n, a->m, a->n, es,
               cudaMemcpyDeviceToHost);
    return finish(&k, ok, err);
}

static ck_code syrk(ck_be_ctx *c, const ck_syrk_args *a, ck_err *err)
{
    call k = {.c = c, .nkept0 = c->nkept, .what = "syrk on the CUDA device"};
    const double *da;
    double *dc, al = a->alpha, be = a->beta;
    int ok = 1;

    if (!fits_int(a->n, a->k, 0))
        return ck_err_set(err, CK_ENOTSUP, "syrk: a dimension over 2^31");
    if (a->n == 0)
        return CK_OK;
    CK_TRY(ready(c, err));
    /* a (k x n row-major) is A = a^T column-major, n x k: A A^T = a^T a;
     * c is symmetric, so either view of it is c */
    da = operand(&k, a->a_key, a->a, a->lda, a->k, a->n, 8);
    dc = dalloc(&k, (size_t)(a->n * a->n) * 8);
    copy2d(&k, dc, a->n, a->c, a->ldc, a->n, a->n, 8, cudaMemcpyHostToDevice);
    if (a->w && a->k > 0) {
        /* A diag(w)^1/2 on the device: the square roots go up (made in
         * work, k doubles of it), the scaled copy stays there */
        double *ds = dalloc(&k, (size_t)a->k * 8);
        double *dx = dalloc(&k, (size_t)(a->n * a->k) * 8);
        for (int64_t i = 0; i < a->k; i++)
            a->work[i] = sqrt(a->w[i]);
        copy2d(&k, ds, a->k, a->work, a->k, 1, a->k, 8, cudaMemcpyHostToDevice);
        if (k.e == cudaSuccess)
            ok = lib.ddgmm(c->blas, CUBLAS_SIDE_RIGHT, (int)a->n, (int)a->k, da,
                           (int)a->n, ds, 1, dx,
                           (int)a->n) == CUBLAS_STATUS_SUCCESS;
        da = dx;
    }
    if (ok && k.e == cudaSuccess)
        ok = lib.dsyrk(c->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, (int)a->n,
                       (int)a->k, &al, da, (int)a->n, &be, dc,
                       (int)a->n) == CUBLAS_STATUS_SUCCESS;
    copy2d(&k, a->c, a->ldc, dc, a->n, a->n, a->n, 8, cudaMemcpyDeviceToHost);
    CK_TRY(finish(&k, ok, err));
    /* the lower triangle column-major is the upper one row-major, which
     * the CPU's syrk reads and writes; callers get both */
    for (int64_t i = 1; i < a->n; i++)
        for (int64_t j = 0; j < i; j++)
            a->c[i * a->ldc + j] = a->c[j * a->ldc + i];
    return CK_OK;
}

/* devInfo, once the stream has run */
static int info_of(call *k, const int *dinfo)
{
    int info = 0;

    if (k->e == cudaSuccess)
        k->e = cudaMemcpyAsync(&info, dinfo, sizeof info,
                               cudaMemcpyDeviceToHost, k->c->stream);
    if (k->e == cudaSuccess)
        k->e = cudaStreamSynchronize(k->c->stream);
    return info;
}

/* The QR slot; with top (n x n column-major, when not NULL, and without
 * want_q) the matrix factored is top stacked over a's m rows, as a
 * factorisation in pieces folds its R so far into the next rows. */
static ck_code qr_run(ck_be_ctx *c, const ck_qr_args *a, const double *top,
                      ck_err *err)
{
    call k = {.c = c, .nkept0 = c->nkept, .what = "QR on the CUDA device"};
    int64_t mt = a->m + (top ? a->n : 0), at = top ? a->n : 0;
    int m = (int)mt, n = (int)a->n, lw = 0, lw2 = 0, ok = 1, info;
    double *da, *dtau, *dwork, *r;
    int *dinfo;

    if (!fits_int(mt, a->n, mt * a->n))
        return ck_err_set(err, CK_ENOTSUP, "qr: a dimension over 2^31");
    if (a->n == 0)
        return CK_OK;
    CK_TRY(ready(c, err));
    da = dalloc(&k, (size_t)(mt * a->n) * 8);
    dtau = dalloc(&k, (size_t)a->n * 8);
    dinfo = dalloc(&k, sizeof(int));
    if (top)
        copy2d(&k, da, mt, top, a->n, a->n, a->n, 8, cudaMemcpyHostToDevice);
    copy2d(&k, da + at, mt, a->a, a->lda, a->n, a->m, 8,
           cudaMemcpyHostToDevice);
    if (k.e == cudaSuccess)
        ok = lib.geqrf_size(c->solver, m, n, da, m, &lw) ==
                 CUSOLVER_STATUS_SUCCESS &&
             (!a->want_q || lib.orgqr_size(c->solver, m, n, n, da, m, dtau,
                                           &lw2) == CUSOLVER_STATUS_SUCCESS);
    dwork = dalloc(&k, (size_t)(lw > lw2 ? lw : lw2) * 8);
    if (ok && k.e == cudaSuccess)
        ok = lib.geqrf(c->solver, m, n, da, m, dtau, dwork, lw, dinfo) ==
             CUSOLVER_STATUS_SUCCESS;
    info = info_of(&k, dinfo);
    /* R: the upper triangle of the top n x n, zeros below */
    copy2d(&k, a->r, a->ldr, da, mt, a->n, a->n, 8, cudaMemcpyDeviceToHost);
    if (ok && info == 0 && a->want_q && !top && k.e == cudaSuccess) {
        ok = lib.orgqr(c->solver, m, n, n, da, m, dtau, dwork, lw2, dinfo) ==
             CUSOLVER_STATUS_SUCCESS;
        info = info_of(&k, dinfo);
        copy2d(&k, a->a, a->lda, da, a->m, a->n, a->m, 8,
               cudaMemcpyDeviceToHost);
    }
    CK_TRY(finish(&k, ok, err));
    if (info != 0)
        return ck_err_set(err, CK_EDEVICE,
                          "qr of a %lld x %lld matrix: cuSOLVER returned "
                          "info %d",
                          (long long)mt, (long long)a->n, info);
    r = a->r;
    for (int64_t j = 0; j < a->n; j++)
        for (int64_t i = j + 1; i < a->n; i++)
            r[j * a->ldr + i] = 0.0;
    return CK_OK;
}

static ck_code qr(ck_be_ctx *c, const ck_qr_args *a, ck_err *err)
{
    return qr_run(c, a, NULL, err);
}

/* The SVD of column-major g (m x n, m >= n, device, destroyed): s, and U
 * (m x n) into du and the right vectors (n x n) into dv, when not NULL:
 * V^T from gesvd, V from gesvdj (c->svd_method). */
static int gesvd(call *k, double *g, int m, int n, double *ds, double *du,
                 double *dv, int *info)
{
    int lw = 0, ok;
    int *dinfo = dalloc(k, sizeof(int));
    double *dwork;

    if (k->c->svd_method == CK_CUDA_SVD_GESVDJ) {
        /* gesvdj computes both or neither: scratch for the ones not
         * asked for */
        gesvdjInfo_t p = NULL;
        double *su = du ? du : dalloc(k, (size_t)m * (size_t)n * 8);
        double *sv = dv ? dv : dalloc(k, (size_t)n * (size_t)n * 8);
        ok = k->e == cudaSuccess &&
             lib.gesvdj_create(&p) == CUSOLVER_STATUS_SUCCESS;
        ok = ok && lib.gesvdj_size(k->c->solver, CUSOLVER_EIG_MODE_VECTOR, 1, m,
                                   n, g, m, ds, su, m, sv, n, &lw,
                                   p) == CUSOLVER_STATUS_SUCCESS;
        dwork = dalloc(k, (size_t)lw * 8);
        if (ok && k->e == cudaSuccess)
            ok = lib.gesvdj(k->c->solver, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, g,
                            m, ds, su, m, sv, n, dwork, lw, dinfo,
                            p) == CUSOLVER_STATUS_SUCCESS;
        *info = info_of(k, dinfo); /* waits: p may go */
        if (p)
            lib.gesvdj_destroy(p);
        return ok;
    }
    ok = k->e == cudaSuccess &&
         lib.gesvd_size(k->c->solver, m, n, &lw) == CUSOLVER_STATUS_SUCCESS;
    dwork = dalloc(k, (size_t)lw * 8);
    if (ok && k->e == cudaSuccess)
        ok = lib.gesvd(k->c->solver, du ? 'S' : 'N', dv ? 'S' : 'N', m, n, g, m,
                       ds, du, m, dv, n, dwork, lw, NULL,
                       dinfo) == CUSOLVER_STATUS_SUCCESS;
    *info = info_of(k, dinfo);
    return ok;
}

static ck_code svd(ck_be_ctx *c, const ck_svd_args *a, ck_err *err)
{
    call k = {.c = c, .nkept0 = c->nkept, .what = "SVD on the CUDA device"};
    int64_t m = a->m, n = a->n, p = m < n ? m : n;
    double *dg, *ds, *du, *dv, *t = NULL, *hu = NULL, *hv = NULL;
    int gesvdj = c->svd_method == CK_CUDA_SVD_GESVDJ;
    ck_code rc;
    int ok = 1, info = 0;

    if (!fits_int(m, n, m * n))
        return ck_err_set(err, CK_ENOTSUP, "svd: a dimension over 2^31");
    if (p == 0)
        return CK_OK;
    /* host room, before the device's: the transpose path's, and V's
     * (gesvdj gives V, the slot V^T) */
    if (m < n) {
        t = malloc((size_t)(m * n) * 8);
        hu = malloc((size_t)(n * m) * 8);
        hv = malloc((size_t)(m * m) * 8);
    } else if (gesvdj) {
        hv = malloc((size_t)(n * n) * 8);
    }
    if ((m < n && (!t || !hu || !hv)) || (m >= n && gesvdj && !hv)) {
        free(t), free(hu), free(hv);
        return ck_err_set(err, CK_ENOMEM, "svd: out of memory");
    }
    if ((rc = ready(c, err)) != CK_OK) {
        free(t), free(hu), free(hv);
        return rc;
    }
    dg = dalloc(&k, (size_t)(m * n) * 8);
    ds = dalloc(&k, (size_t)p * 8);
    if (m >= n) {
        du = a->no_u ? NULL : dalloc(&k, (size_t)(m * n) * 8);
        dv = dalloc(&k, (size_t)(n * n) * 8);
        copy2d(&k, dg, m, a->a, a->lda, n, m, 8, cudaMemcpyHostToDevice);
        ok = gesvd(&k, dg, (int)m, (int)n, ds, du, dv, &info);
        if (du)
            copy2d(&k, a->u, a->ldu, du, m, n, m, 8, cudaMemcpyDeviceToHost);
        if (gesvdj)
            copy2d(&k, hv, n, dv, n, n, n, 8, cudaMemcpyDeviceToHost);
        else
            copy2d(&k, a->vt, a->ldvt, dv, n, n, n, 8, cudaMemcpyDeviceToHost);
    } else {
        /* cuSOLVER's gesvd needs m >= n: factor a^T (n x m) = U' S V'^T,
         * so a = V' S U'^T: u = V', vt = U'^T */
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++)
                t[i * n + j] = a->a[j * a->lda + i];
        du = dalloc(&k, (size_t)(n * m) * 8);
        dv = dalloc(&k, (size_t)(m * m) * 8);
        copy2d(&k, dg, n, t, n, m, n, 8, cudaMemcpyHostToDevice);
        ok = gesvd(&k, dg, (int)n, (int)m, ds, du, dv, &info);
        copy2d(&k, hu, n, du, n, m, n, 8, cudaMemcpyDeviceToHost);
        copy2d(&k, hv, m, dv, m, m, m, 8, cudaMemcpyDeviceToHost);
    }
    {
        /* even after a failure: t is freed below, and a copy from it may
         * be queued; hu and hv are read below */
        cudaError_t w = cudaStreamSynchronize(c->stream);
        if (k.e == cudaSuccess)
            k.e = w;
    }
    if (k.e == cudaSuccess && ok && info == 0 && m < n) {
        /* hu: U' (n x m col-major); hv: V'^T, or V' from gesvdj (m x m
         * col-major) */
        for (int64_t j = 0; j < m; j++)
            for (int64_t i = 0; i < m; i++)
                a->u[j * a->ldu + i] = gesvdj ? hv[j * m + i] : hv[i * m + j];
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++)
                a->vt[j * a->ldvt + i] = hu[i * n + j];
    } else if (k.e == cudaSuccess && ok && info == 0 && gesvdj) {
        for (int64_t j = 0; j < n; j++) /* V^T from V, n x n col-major */
            for (int64_t i = 0; i < n; i++)
                a->vt[j * a->ldvt + i] = hv[i * n + j];
    }
    free(t), free(hu), free(hv);
    if (k.e == cudaSuccess)
        k.e = cudaMemcpyAsync(a->s, ds, (size_t)p * 8, cudaMemcpyDeviceToHost,
                              c->stream);
    CK_TRY(finish(&k, ok, err));
    if (info > 0)
        return ck_err_set(err, CK_ENOTSUP,
                          "svd of a %lld x %lld matrix: cuSOLVER %s did "
                          "not converge (%d)",
                          (long long)m, (long long)n,
                          gesvdj ? "gesvdj" : "gesvd", info);
    if (info < 0)
        return ck_err_internal(err, "svd: cuSOLVER %s argument %d",
                               gesvdj ? "gesvdj" : "gesvd", -info);
    return CK_OK;
}

static ck_code posv(ck_be_ctx *c, ck_posv_args *a, ck_err *err)
{
    call k = {.c = c,
              .nkept0 = c->nkept,
              .what = "a Cholesky solve on the CUDA device"};
    int n = (int)a->n, lw = 0, ok = 1, info = 0;
    double *da, *db, *dwork;
    int *dinfo;

    a->not_pd = 0;
    if (!fits_int(a->n, a->nrhs, a->n * a->n))
        return ck_err_set(err, CK_ENOTSUP, "posv: a dimension over 2^31");
    if (a->n == 0)
        return CK_OK;
    CK_TRY(ready(c, err));
    da = dalloc(&k, (size_t)(a->n * a->n) * 8);
    db = dalloc(&k, (size_t)(a->n * a->nrhs) * 8);
    dinfo = dalloc(&k, sizeof(int));
    copy2d(&k, da, a->n, a->a, a->n, a->n, a->n, 8, cudaMemcpyHostToDevice);
    copy2d(&k, db, a->n, a->b, a->n, a->nrhs, a->n, 8, cudaMemcpyHostToDevice);
    if (k.e == cudaSuccess)
        ok = lib.potrf_size(c->solver, CUBLAS_FILL_MODE_UPPER, n, da, n, &lw) ==
             CUSOLVER_STATUS_SUCCESS;
    dwork = dalloc(&k, (size_t)lw * 8);
    if (ok && k.e == cudaSuccess)
        ok = lib.potrf(c->solver, CUBLAS_FILL_MODE_UPPER, n, da, n, dwork, lw,
                       dinfo) == CUSOLVER_STATUS_SUCCESS;
    info = info_of(&k, dinfo);
    if (ok && info == 0 && k.e == cudaSuccess) {
        ok = lib.potrs(c->solver, CUBLAS_FILL_MODE_UPPER, n, (int)a->nrhs, da,
                       n, db, n, dinfo) == CUSOLVER_STATUS_SUCCESS;
        copy2d(&k, a->b, a->n, db, a->n, a->nrhs, a->n, 8,
               cudaMemcpyDeviceToHost);
    }
    CK_TRY(finish(&k, ok, err));
    if (info > 0) /* the caller's to handle, as with LAPACK's dposv */
        a->not_pd = info;
    else if (info < 0)
        return ck_err_set(err, CK_EDEVICE,
                          "posv of a %lld x %lld matrix: cuSOLVER returned "
                          "info %d",
                          (long long)a->n, (long long)a->n, info);
    return CK_OK;
}

void ck_cuda_release(ck_be_ctx *c)
{
    cudaStreamSynchronize(c->stream);
    for (; c->nkept > 0; c->nkept--)
        drop(c, &c->kept[c->nkept - 1]);
    cudaStreamSynchronize(c->stream);
    cudaGetLastError(); /* a failed allocation's, now answered */
}

/* Lets the kept operands go and keeps no more than half as much as
 * before from now on: a call found no room beside them. */
static void let_go(ck_be_ctx *c)
{
    ck_cuda_release(c);
    c->kept_cap /= 2;
}

/* ---- calls larger than the device's room ---- */

/* What a call may still allocate: the budget's room, no more than the
 * device has free (another process may hold the rest). */
static size_t room_left(const ck_be_ctx *c)
{
    size_t fr = 0, tot = 0, room = c->budget - c->used;

    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && fr < room)
        room = fr;
    return room;
}

/* gemm a in pieces, each a whole gemm that fits the room left (nothing
 * kept): tiles of m, n and k halved, the largest first, until one tile's
 * three blocks fit; k's pieces add into c (beta 1 after the first). */
static ck_code gemm_pieces(ck_be_ctx *c, const ck_gemm_args *a, ck_err *err)
{
    size_t es = a->dtype == CK_F32 ? 4 : 8, room = room_left(c);
    int64_t mt = a->m, nt = a->n, kt = a->k;

    while ((size_t)(mt * kt + kt * nt + mt * nt) * es > room) {
        if (mt == 1 && nt == 1 && kt == 1)
            return CK_ENOMEM; /* no pieces: the call's failure stands */
        if (kt >= mt && kt >= nt)
            kt = (kt + 1) / 2;
        else if (mt >= nt)
            mt = (mt + 1) / 2;
        else
            nt = (nt + 1) / 2;
    }
    for (int64_t i = 0; i < a->m; i += mt)
        for (int64_t j = 0; j < a->n; j += nt)
            for (int64_t p = 0; p < a->k; p += kt) {
                ck_gemm_args t = *a;
                t.m = a->m - i < mt ? a->m - i : mt;
                t.n = a->n - j < nt ? a->n - j : nt;
                t.k = a->k - p < kt ? a->k - p : kt;
                t.beta = p == 0 ? a->beta : 1;
                t.a =
                    (const char *)a->a +
                    (size_t)(a->trans_a ? p * a->lda + i : i * a->lda + p) * es;
                t.b =
                    (const char *)a->b +
                    (size_t)(a->trans_b ? j * a->ldb + p : p * a->ldb + j) * es;
                t.c = (char *)a->c + (size_t)(i * a->ldc + j) * es;
                t.a_key = t.b_key = 0;
                CK_TRY(gemm(c, &t, err));
            }
    return CK_OK;
}

/* syrk a in pieces of a's rows (k), added into c, each fitting the room
 * left. */
static ck_code syrk_pieces(ck_be_ctx *c, const ck_syrk_args *a, ck_err *err)
{
    size_t room = room_left(c);
    /* c, then per row of a: its copy, and with weights the scaled copy
     * and the weight */
    size_t fixed = (size_t)(a->n * a->n) * 8;
    size_t row = (size_t)a->n * 8 * (a->w ? 2 : 1) + (a->w ? 8 : 0);
    int64_t kt = a->k;

    if (a->k == 0 || fixed > room)
        return CK_ENOMEM; /* c alone does not fit: no pieces */
    while (kt > 1 && fixed + (size_t)kt * row > room)
        kt = (kt + 1) / 2;
    if (fixed + (size_t)kt * row > room)
        return CK_ENOMEM;
    for (int64_t p = 0; p < a->k; p += kt) {
        ck_syrk_args t = *a;
        t.k = a->k - p < kt ? a->k - p : kt;
        t.beta = p == 0 ? a->beta : 1;
        t.a = a->a + p * a->lda;
        t.w = a->w ? a->w + p : NULL;
        t.a_key = 0;
        CK_TRY(syrk(c, &t, err));
    }
    return CK_OK;
}

/* The R of a QR (no Q) in pieces: a's rows a block at a time, each
 * stacked under the R so far and factored (the first block's rows alone),
 * the blocks halved until one fits: at least n + 1 rows' room.  The rows
 * of R may differ in sign from one QR's; R^T R, and so an SVD's S and V,
 * do not.  The call's failure stands where it has no pieces (want_q). */
static ck_code qr_pieces(ck_be_ctx *c, const ck_qr_args *a, ck_err *err)
{
    int64_t m = a->m, n = a->n, mb = (m + 1) / 2, i0 = 0;
    double *acc, *next;
    int have = 0;
    ck_code rc = CK_OK;
    ck_err e = {0};

    if (a->want_q || n == 0)
        return CK_ENOMEM;
    acc = malloc((size_t)(n * n) * 8);
    next = malloc((size_t)(n * n) * 8);
    if (!acc || !next) {
        free(acc), free(next);
        return ck_err_set(err, CK_ENOMEM, "qr: out of memory");
    }
    while (rc == CK_OK && i0 < m) {
        /* the first block has at least n rows, as a QR needs */
        int64_t b = have || mb >= n ? mb : n;
        ck_qr_args t = {.n = n, .lda = a->lda, .r = next, .ldr = n};
        double *sw;
        t.m = m - i0 < b ? m - i0 : b;
        t.a = a->a + i0;
        e = (ck_err){0};
        c->no_room = 0;
        rc = qr_run(c, &t, have ? acc : NULL, &e);
        if (rc == CK_ENOMEM && c->no_room && mb > 1 && (have || mb > n)) {
            mb /= 2; /* smaller blocks */
            rc = CK_OK;
            continue;
        }
        sw = acc, acc = next, next = sw;
        have = 1;
        i0 += t.m;
    }
    for (int64_t j = 0; rc == CK_OK && j < n; j++)
        memcpy(a->r + j * a->ldr, acc + j * n, (size_t)n * 8);
    free(acc), free(next);
    if (rc != CK_OK && err)
        *err = e;
    return rc;
}

/* The slots, each one call at a time under the context's lock.  A call
 * that found no room on the device while operands were kept there runs
 * again without them; one that still finds none runs in pieces where the
 * slot has them (gemm, syrk), so that --gpu-memory bounds the device's
 * memory whatever the blocks callers hand over. */
#define LOCKED(name, args_t, pieces)                                           \
    ck_code ck_cuda_##name(ck_be_ctx *c, args_t *a, ck_err *err)               \
    {                                                                          \
        ck_code (*in_pieces)(ck_be_ctx *, args_t *, ck_err *) = pieces;        \
        ck_err e = {0}, again = {0};                                           \
        ck_code rc;                                                            \
        pthread_mutex_lock(&c->lock);                                          \
        c->no_room = 0;                                                        \
        rc = name(c, a, &e);                                                   \
        if (rc == CK_ENOMEM && c->no_room && c->nkept && !c->broken) {         \
            let_go(c);                                                         \
            c->no_room = 0;                                                    \
            rc = name(c, a, &again);                                           \
            e = again;                                                         \
        }                                                                      \
        if (rc == CK_ENOMEM && c->no_room && in_pieces && !c->broken) {        \
            again = (ck_err){0};                                               \
            rc = in_pieces(c, a, &again);                                      \
            if (again.code != CK_OK)                                           \
                e = again; /* else it had no pieces: the call's failure */     \
        }                                                                      \
        if (rc != CK_OK && err && err->code == CK_OK)                          \
            *err = e;                                                          \
        pthread_mutex_unlock(&c->lock);                                        \
        return rc;                                                             \
    }
LOCKED(gemm, const ck_gemm_args, gemm_pieces)
LOCKED(syrk, const ck_syrk_args, syrk_pieces)
LOCKED(qr, const ck_qr_args, qr_pieces)
LOCKED(svd, const ck_svd_args, NULL)
LOCKED(posv, ck_posv_args, NULL)
