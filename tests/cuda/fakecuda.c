/*
 * tests/cuda/fakecuda.c - a CUDA device emulated on the CPU, so that the
 * CUDA module's host code (backends/cuda/blas.c: what it uploads, how it
 * calls cuBLAS and cuSOLVER, what it brings back, when it waits, what it
 * frees) runs in CI, where there is no GPU, and its results are checked
 * against NumPy by the GPU suite (tests/gpu/run.sh).
 *
 * It is the subset of the CUDA runtime, cuBLAS and cuSOLVER that the
 * module calls, with the same prototypes (the Toolkit's headers), built as
 * libfakecuda.so: the test build of the module (tests/CMakeLists.txt,
 * "cuda/emulated") links it instead of the CUDA runtime and dlopens it
 * instead of libcublas and libcusolver.  It is stricter than a GPU where
 * it can be:
 *  - work on a stream runs when the stream is waited for, not when it is
 *    queued: a result read before cudaStreamSynchronize is stale, a host
 *    buffer changed before then is what is uploaded;
 *  - every device pointer an operation touches must lie inside a live
 *    device allocation, and every host pointer outside all of them
 *    (checked when the operation runs, so a use after a stream-ordered
 *    free is caught); a violation aborts with the operation's name;
 *  - new device memory is NaN bytes (0xff), as a GPU's is not zeroed;
 *  - cuSOLVER's gesvd refuses m < n, as the real one does; workspaces must
 *    be as large as the _bufferSize call said.
 * The arithmetic is OpenBLAS and LAPACKE's, column-major, as cuBLAS and
 * cuSOLVER define it.  Nothing here runs device code: users' kernels fail
 * to load (cudaErrorNoKernelImageForDevice), and the suite skips them.
 *
 * Environment:
 *   CHUNKCTL_FAKE_CUDA_MEMORY  the device's size in bytes (default 4 GiB);
 *                              an allocation past it fails as a GPU's does
 *   CHUNKCTL_FAKE_CUDA_DEVICES how many devices the process sees (default
 *                              1); each is the same memory, so a process
 *                              is to use one
 *   CHUNKCTL_FAKE_CUDA_FAULT   N: the N-th operation run faults with
 *                              cudaErrorIllegalAddress, which sticks
 *   CHUNKCTL_FAKE_CUDA_LOG     a file: at exit, one line is appended with
 *                              the peak device memory, bytes up and down,
 *                              bytes never freed, the library calls and
 *                              the devices set
 */
#include <cblas.h>
#include <lapacke.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#define API __attribute__((visibility("default")))

/* ---- the device: allocations, counters ---- */

typedef struct alloc {
    char *p;
    size_t n;
    int live;
} alloc;

enum {
    N_GEMM,
    N_SYRK,
    N_DGMM,
    N_GEQRF,
    N_ORGQR,
    N_GESVD,
    N_GESVDJ,
    N_POTRF,
    N_POTRS,
    N_CALLS
};
static const char *const call_name[N_CALLS] = {"gemm",   "syrk",  "dgmm",
                                               "geqrf",  "orgqr", "gesvd",
                                               "gesvdj", "potrf", "potrs"};

static struct {
    pthread_mutex_t lock;
    alloc *a;
    size_t na, cap_a;
    size_t memory, reserved, peak; /* reserved: allocated, less stream-
                                      ordered frees already queued */
    unsigned long long up, down, calls[N_CALLS], ops, fault_at, devices;
    unsigned long long set_mask; /* the devices cudaSetDevice chose */
    cudaError_t sticky;
    cudaError_t last; /* cudaGetLastError's: the last failed allocation */
} dev = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "fakecuda: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

static unsigned long long env_num(const char *name, unsigned long long def)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : def;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void)
{
    dev.memory = (size_t)env_num("CHUNKCTL_FAKE_CUDA_MEMORY", 4ull << 30);
    dev.fault_at = env_num("CHUNKCTL_FAKE_CUDA_FAULT", 0);
    dev.devices = env_num("CHUNKCTL_FAKE_CUDA_DEVICES", 1);
}
static void lock(void)
{
    pthread_once(&once, init);
    pthread_mutex_lock(&dev.lock);
}
static void unlock(void)
{
    pthread_mutex_unlock(&dev.lock);
}

static alloc *find(const void *p)
{
    const char *c = p;

    for (size_t i = 0; i < dev.na; i++)
        if (dev.a[i].live && c >= dev.a[i].p && c < dev.a[i].p + dev.a[i].n)
            return &dev.a[i];
    return NULL;
}

/* [p, p + bytes) is inside one live device allocation */
static void on_device(const void *p, size_t bytes, const char *op,
                      const char *arg)
{
    alloc *a = find(p);

    if (bytes == 0)
        return;
    if (!a)
        die("%s: %s (%p) is not device memory", op, arg, p);
    if ((size_t)((const char *)p - a->p) + bytes > a->n)
        die("%s: %s runs %zu bytes past its device allocation of %zu", op, arg,
            (size_t)((const char *)p - a->p) + bytes - a->n, a->n);
}

static void on_host(const void *p, size_t bytes, const char *op,
                    const char *arg)
{
    if (bytes && find(p))
        die("%s: %s (%p) is device memory, host memory expected", op, arg, p);
}

/* a column-major matrix of rows x cols, leading dimension ld */
static void matrix(const void *p, int64_t rows, int64_t cols, int64_t ld,
                   size_t esz, const char *op, const char *arg)
{
    if (rows < 0 || cols < 0 || ld < (rows > 1 ? rows : 1))
        die("%s: %s is %lld x %lld with leading dimension %lld", op, arg,
            (long long)rows, (long long)cols, (long long)ld);
    if (rows && cols)
        on_device(p, (size_t)((cols - 1) * ld + rows) * esz, op, arg);
}

/* ---- streams: queued work, run when waited for ---- */

typedef struct op op;
struct op {
    op *next;
    void (*run)(op *);
    int i[8];
    double d[2];
    void *p[8];
    size_t z[4];
};

struct CUstream_st {
    op *head, **tail;
    cudaError_t err; /* the first failure of its work */
};

static struct CUstream_st null_stream = {.tail = &null_stream.head};
static cudaStream_t streams[64];
static int nstreams;

static cudaStream_t st(cudaStream_t s)
{
    return s ? s : &null_stream;
}

static cudaError_t enqueue(cudaStream_t s, const op *o)
{
    op *q = malloc(sizeof *q);

    if (!q)
        die("out of host memory");
    *q = *o;
    q->next = NULL;
    s = st(s);
    *s->tail = q;
    s->tail = &q->next;
    return dev.sticky;
}

static void drain(cudaStream_t s)
{
    op *o;

    s = st(s);
    while ((o = s->head)) {
        s->head = o->next;
        if (!s->head)
            s->tail = &s->head;
        if (dev.sticky == cudaSuccess) {
            if (dev.fault_at && ++dev.ops == dev.fault_at)
                dev.sticky = cudaErrorIllegalAddress;
            else
                o->run(o);
        }
        free(o);
    }
    if (dev.sticky != cudaSuccess && s->err == cudaSuccess)
        s->err = dev.sticky;
}

static void drain_all(void)
{
    drain(&null_stream);
    for (int i = 0; i < nstreams; i++)
        drain(streams[i]);
}

static void log_at_exit(void)
{
    const char *path = getenv("CHUNKCTL_FAKE_CUDA_LOG");
    size_t leaked = 0;
    FILE *f;

    if (!path || !(f = fopen(path, "a")))
        return;
    for (size_t i = 0; i < dev.na; i++)
        leaked += dev.a[i].live ? dev.a[i].n : 0;
    fprintf(f, "peak=%zu up=%llu down=%llu leaked=%zu", dev.peak, dev.up,
            dev.down, leaked);
    for (int i = 0; i < N_CALLS; i++)
        fprintf(f, " %s=%llu", call_name[i], dev.calls[i]);
    fputs(" devices=", f);
    for (int d = 0, first = 1; d < 64; d++)
        if (dev.set_mask >> d & 1) {
            fprintf(f, "%s%d", first ? "" : ",", d);
            first = 0;
        }
    fputc('\n', f);
    fclose(f);
}

/* ---- the runtime ---- */

API const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorIllegalAddress:
        return "cudaErrorIllegalAddress";
    case cudaErrorNoKernelImageForDevice:
        return "cudaErrorNoKernelImageForDevice";
    case cudaErrorNotSupported:
        return "cudaErrorNotSupported";
    default:
        return "cudaErrorUnknown";
    }
}

API const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorIllegalAddress:
        return "an illegal memory access was encountered";
    case cudaErrorNoKernelImageForDevice:
        return "no kernel image is available for execution on the device "
               "(an emulated device runs no device code)";
    case cudaErrorNotSupported:
        return "operation not supported";
    default:
        return "unknown error";
    }
}

API cudaError_t cudaGetLastError(void)
{
    cudaError_t e;

    lock();
    e = dev.sticky != cudaSuccess ? dev.sticky : dev.last;
    dev.last = cudaSuccess;
    unlock();
    return e;
}

API cudaError_t cudaDriverGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

API cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

/* Whether d names one of the devices. */
static int device_ok(int d)
{
    pthread_once(&once, init);
    return d >= 0 && (unsigned long long)d < dev.devices;
}

API cudaError_t cudaGetDeviceCount(int *n)
{
    pthread_once(&once, init);
    *n = (int)dev.devices;
    return cudaSuccess;
}

API cudaError_t cudaSetDevice(int d)
{
    if (!device_ok(d))
        return cudaErrorInvalidDevice;
    if (d < 64)
        __atomic_or_fetch(&dev.set_mask, 1ull << d, __ATOMIC_RELAXED);
    return cudaSuccess;
}

API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (!device_ok(d))
        return cudaErrorInvalidDevice;
    lock();
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "fakecuda (emulated on the CPU)");
    p->totalGlobalMem = dev.memory;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 1;
    p->maxThreadsPerBlock = 1024;
    p->warpSize = 32;
    unlock();
    return cudaSuccess;
}

API cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d)
{
    if (!device_ok(d))
        return cudaErrorInvalidDevice;
    switch (a) {
    case cudaDevAttrComputeCapabilityMajor:
        *v = 9;
        break;
    case cudaDevAttrComputeCapabilityMinor:
        *v = 0;
        break;
    case cudaDevAttrMaxThreadsPerBlock:
        *v = 1024;
        break;
    case cudaDevAttrMultiProcessorCount:
        *v = 1;
        break;
    case cudaDevAttrWarpSize:
        *v = 32;
        break;
    default:
        *v = 0;
    }
    return cudaSuccess;
}

API cudaError_t cudaMemGetInfo(size_t *fr, size_t *tot)
{
    lock();
    *tot = dev.memory;
    *fr = dev.memory - dev.reserved;
    unlock();
    return cudaSuccess;
}

static cudaError_t dmalloc(void **out, size_t n)
{
    static int registered;
    alloc *a;

    *out = NULL;
    if (dev.sticky != cudaSuccess)
        return dev.sticky;
    if (n > dev.memory - dev.reserved)
        return dev.last = cudaErrorMemoryAllocation;
    if (dev.na == dev.cap_a) {
        size_t c = dev.cap_a ? 2 * dev.cap_a : 64;
        alloc *g = realloc(dev.a, c * sizeof *g);
        if (!g)
            die("out of host memory");
        dev.a = g;
        dev.cap_a = c;
    }
    a = &dev.a[dev.na];
    if (!(a->p = malloc(n ? n : 1)))
        return cudaErrorMemoryAllocation;
    memset(a->p, 0xff, n);
    a->n = n;
    a->live = 1;
    dev.na++;
    dev.reserved += n;
    if (dev.reserved > dev.peak)
        dev.peak = dev.reserved;
    if (!registered++)
        atexit(log_at_exit);
    *out = a->p;
    return cudaSuccess;
}

static void dfree_now(void *p, const char *what)
{
    alloc *a = find(p);

    if (!a || a->p != p)
        die("%s: %p is not the start of a live device allocation", what, p);
    free(a->p);
    a->live = 0;
}

API cudaError_t cudaMalloc(void **p, size_t n)
{
    cudaError_t e;

    lock();
    e = dmalloc(p, n);
    unlock();
    return e;
}

API cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
    (void)s;
    return cudaMalloc(p, n);
}

/* cudaFree waits for the whole device, then frees; cudaFree(NULL) is the
 * conventional way to start the context */
API cudaError_t cudaFree(void *p)
{
    alloc *a;

    lock();
    drain_all();
    if (p) {
        if (!(a = find(p)) || a->p != p)
            die("cudaFree: %p is not a live device allocation", p);
        dev.reserved -= a->n;
        dfree_now(p, "cudaFree");
    }
    unlock();
    return dev.sticky;
}

static void run_free(op *o)
{
    dfree_now(o->p[0], "cudaFreeAsync");
}

API cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    alloc *a;
    op o = {.run = run_free, .p = {p}};
    cudaError_t e;

    lock();
    if (!(a = find(p)) || a->p != p)
        die("cudaFreeAsync: %p is not a live device allocation", p);
    /* the memory is the stream's to reuse from here on, in stream order */
    dev.reserved -= a->n;
    e = enqueue(s, &o);
    unlock();
    return e;
}

API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    lock();
    if (nstreams == (int)(sizeof streams / sizeof *streams))
        die("too many streams");
    if (!(*s = calloc(1, sizeof **s)))
        die("out of host memory");
    (*s)->tail = &(*s)->head;
    streams[nstreams++] = *s;
    unlock();
    return cudaSuccess;
}

API cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    lock();
    drain(s);
    for (int i = 0; i < nstreams; i++)
        if (streams[i] == s) {
            streams[i] = streams[--nstreams];
            break;
        }
    free(s);
    unlock();
    return cudaSuccess;
}

API cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    cudaError_t e;

    lock();
    drain(s);
    e = st(s)->err;
    unlock();
    return e;
}

/* copies: p[0] dst, p[1] src, z[0] width bytes, z[1] rows, z[2] dst pitch,
 * z[3] src pitch, i[0] kind */
static void run_copy(op *o)
{
    char *dst = o->p[0];
    const char *src = o->p[1];
    size_t w = o->z[0], h = o->z[1], dp = o->z[2], sp = o->z[3];
    size_t dext = h ? (h - 1) * dp + w : 0, sext = h ? (h - 1) * sp + w : 0;
    int kind = o->i[0];

    if (kind == cudaMemcpyDefault)
        kind = find(dst) ? (find(src) ? cudaMemcpyDeviceToDevice
                                      : cudaMemcpyHostToDevice)
                         : cudaMemcpyDeviceToHost;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        on_device(dst, dext, "cudaMemcpy (host to device)", "dst");
        on_host(src, sext, "cudaMemcpy (host to device)", "src");
        dev.up += w * h;
        break;
    case cudaMemcpyDeviceToHost:
        on_host(dst, dext, "cudaMemcpy (device to host)", "dst");
        on_device(src, sext, "cudaMemcpy (device to host)", "src");
        dev.down += w * h;
        break;
    case cudaMemcpyDeviceToDevice:
        on_device(dst, dext, "cudaMemcpy (device to device)", "dst");
        on_device(src, sext, "cudaMemcpy (device to device)", "src");
        break;
    default:
        die("cudaMemcpy: kind %d", kind);
    }
    for (size_t r = 0; r < h; r++)
        memmove(dst + r * dp, src + r * sp, w);
}

static cudaError_t copy(void *dst, size_t dp, const void *src, size_t sp,
                        size_t w, size_t h, enum cudaMemcpyKind kind,
                        cudaStream_t s)
{
    op o = {.run = run_copy,
            .p = {dst, (void *)src},
            .z = {w, h, dp, sp},
            .i = {kind}};
    cudaError_t e;

    if (w > dp || w > sp)
        return cudaErrorInvalidPitchValue;
    lock();
    e = enqueue(s, &o);
    unlock();
    return e;
}

API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                                enum cudaMemcpyKind kind, cudaStream_t s)
{
    return copy(dst, n, src, n, n, 1, kind, s);
}

API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp, const void *src,
                                  size_t sp, size_t w, size_t h,
                                  enum cudaMemcpyKind kind, cudaStream_t s)
{
    return copy(dst, dp, src, sp, w, h, kind, s);
}

static void run_memset(op *o)
{
    on_device(o->p[0], o->z[0], "cudaMemsetAsync", "dst");
    memset(o->p[0], o->i[0], o->z[0]);
}

API cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    op o = {.run = run_memset, .p = {p}, .z = {n}, .i = {v}};
    cudaError_t e;

    lock();
    e = enqueue(s, &o);
    unlock();
    return e;
}

/* no device code runs here */
API cudaError_t cudaLibraryLoadData(cudaLibrary_t *l, const void *code,
                                    enum cudaJitOption *jo, void **jv,
                                    unsigned nj, enum cudaLibraryOption *lo,
                                    void **lv, unsigned nl)
{
    (void)code, (void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;
    *l = NULL;
    return cudaErrorNoKernelImageForDevice;
}

API cudaError_t cudaLibraryGetKernel(cudaKernel_t *k, cudaLibrary_t l,
                                     const char *name)
{
    (void)l, (void)name;
    *k = NULL;
    return cudaErrorNotSupported;
}

API cudaError_t cudaLibraryUnload(cudaLibrary_t l)
{
    (void)l;
    return cudaSuccess;
}

API cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a,
                                      const void *f)
{
    (void)a, (void)f;
    return cudaErrorNotSupported;
}

API cudaError_t cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args,
                                 size_t shared, cudaStream_t s)
{
    (void)f, (void)g, (void)b, (void)args, (void)shared, (void)s;
    return cudaErrorNotSupported;
}

/* ---- cuBLAS ---- */

struct cublasContext {
    cudaStream_t stream;
};

API cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
    *h = calloc(1, sizeof **h);
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

API cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t blas_enqueue(cublasHandle_t h, const op *o)
{
    cudaError_t e;

    lock();
    e = enqueue(h->stream, o);
    unlock();
    return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                            : CUBLAS_STATUS_EXECUTION_FAILED;
}

static enum CBLAS_TRANSPOSE cblas_op(int t)
{
    return t == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
}

/* gemm: i[] = ta, tb, m, n, k, lda, ldb, ldc, z[0] element size; p[] = A,
 * B, C; d[] = alpha, beta (read when queued: host pointer mode) */
static void run_gemm(op *o)
{
    int ta = o->i[0], tb = o->i[1], m = o->i[2], n = o->i[3], k = o->i[4];
    size_t es = o->z[0];
    const char *what = es == 8 ? "cublasDgemm" : "cublasSgemm";

    matrix(o->p[0], ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m,
           o->i[5], es, what, "A");
    matrix(o->p[1], tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k,
           o->i[6], es, what, "B");
    matrix(o->p[2], m, n, o->i[7], es, what, "C");
    dev.calls[N_GEMM]++;
    if (es == 8)
        cblas_dgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k, o->d[0],
                    o->p[0], o->i[5], o->p[1], o->i[6], o->d[1], o->p[2],
                    o->i[7]);
    else
        cblas_sgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k,
                    (float)o->d[0], o->p[0], o->i[5], o->p[1], o->i[6],
                    (float)o->d[1], o->p[2], o->i[7]);
}

static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k, double al,
                           const void *A, int lda, const void *B, int ldb,
                           double be, void *C, int ldc, size_t es)
{
    op o = {.run = run_gemm,
            .i = {ta, tb, m, n, k, lda, ldb, ldc},
            .p = {(void *)A, (void *)B, C},
            .d = {al, be},
            .z = {es}};

    if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    return blas_enqueue(h, &o);
}

API cublasStatus_t cublasDgemm_v2(cublasHandle_t h, cublasOperation_t ta,
                                  cublasOperation_t tb, int m, int n, int k,
                                  const double *al, const double *A, int lda,
                                  const double *B, int ldb, const double *be,
                                  double *C, int ldc)
{
    return gemm(h, ta, tb, m, n, k, *al, A, lda, B, ldb, *be, C, ldc, 8);
}

API cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta,
                                  cublasOperation_t tb, int m, int n, int k,
                                  const float *al, const float *A, int lda,
                                  const float *B, int ldb, const float *be,
                                  float *C, int ldc)
{
    return gemm(h, ta, tb, m, n, k, *al, A, lda, B, ldb, *be, C, ldc, 4);
}

/* syrk: i[] = uplo, trans, n, k, lda, ldc; p[] = A, C; d[] = alpha, beta */
static void run_syrk(op *o)
{
    int up = o->i[0], tr = o->i[1], n = o->i[2], k = o->i[3];

    matrix(o->p[0], tr == CUBLAS_OP_N ? n : k, tr == CUBLAS_OP_N ? k : n,
           o->i[4], 8, "cublasDsyrk", "A");
    matrix(o->p[1], n, n, o->i[5], 8, "cublasDsyrk", "C");
    dev.calls[N_SYRK]++;
    cblas_dsyrk(CblasColMajor,
                up == CUBLAS_FILL_MODE_LOWER ? CblasLower : CblasUpper,
                cblas_op(tr), n, k, o->d[0], o->p[0], o->i[4], o->d[1], o->p[1],
                o->i[5]);
}

API cublasStatus_t cublasDsyrk_v2(cublasHandle_t h, cublasFillMode_t up,
                                  cublasOperation_t tr, int n, int k,
                                  const double *al, const double *A, int lda,
                                  const double *be, double *C, int ldc)
{
    op o = {.run = run_syrk,
            .i = {up, tr, n, k, lda, ldc},
            .p = {(void *)A, C},
            .d = {*al, *be}};

    if (n < 0 || k < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    return blas_enqueue(h, &o);
}

/* dgmm: i[] = side, m, n, lda, incx, ldc; p[] = A, x, C */
static void run_dgmm(op *o)
{
    int side = o->i[0], m = o->i[1], n = o->i[2], lda = o->i[3];
    int incx = o->i[4], ldc = o->i[5];
    int nx = side == CUBLAS_SIDE_RIGHT ? n : m;
    const double *A = o->p[0], *x = o->p[1];
    double *C = o->p[2];

    matrix(A, m, n, lda, 8, "cublasDdgmm", "A");
    matrix(C, m, n, ldc, 8, "cublasDdgmm", "C");
    if (nx > 0)
        on_device(x, (size_t)((nx - 1) * (incx < 0 ? -incx : incx) + 1) * 8,
                  "cublasDdgmm", "x");
    dev.calls[N_DGMM]++;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            C[i + (size_t)j * ldc] =
                A[i + (size_t)j * lda] *
                x[(size_t)(side == CUBLAS_SIDE_RIGHT ? j : i) * incx];
}

API cublasStatus_t cublasDdgmm(cublasHandle_t h, cublasSideMode_t side, int m,
                               int n, const double *A, int lda, const double *x,
                               int incx, double *C, int ldc)
{
    op o = {.run = run_dgmm,
            .i = {side, m, n, lda, incx, ldc},
            .p = {(void *)A, (void *)x, C}};

    /* a negative incx reads x backwards in cuBLAS: not emulated */
    if (m < 0 || n < 0 || incx < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    return blas_enqueue(h, &o);
}

/* ---- cuSOLVER ---- */

struct cusolverDnContext {
    cudaStream_t stream;
};

API cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *h)
{
    *h = calloc(1, sizeof **h);
    return *h ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_ALLOC_FAILED;
}

API cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t h)
{
    free(h);
    return CUSOLVER_STATUS_SUCCESS;
}

API cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t h, cudaStream_t s)
{
    h->stream = s;
    return CUSOLVER_STATUS_SUCCESS;
}

/* workspaces: a size of their own, so that one too small is caught */
static int work_len(int m, int n)
{
    return 64 * (m > n ? m : n) + 1;
}

static void workspace(const void *w, int lw, int need, const char *what)
{
    if (lw < need)
        die("%s: Lwork %d, the _bufferSize call said %d", what, lw, need);
    on_device(w, (size_t)lw * 8, what, "workspace");
}

static void set_info(int *dinfo, int v, const char *what)
{
    on_device(dinfo, sizeof(int), what, "devInfo");
    *dinfo = v;
}

static cusolverStatus_t solver_enqueue(cusolverDnHandle_t h, const op *o)
{
    cudaError_t e;

    lock();
    e = enqueue(h->stream, o);
    unlock();
    return e == cudaSuccess ? CUSOLVER_STATUS_SUCCESS
                            : CUSOLVER_STATUS_EXECUTION_FAILED;
}

API cusolverStatus_t cusolverDnDgeqrf_bufferSize(cusolverDnHandle_t h, int m,
                                                 int n, double *A, int lda,
                                                 int *lw)
{
    (void)h, (void)A, (void)lda;
    *lw = work_len(m, n);
    return CUSOLVER_STATUS_SUCCESS;
}

/* i[] = m, n, lda, lwork; p[] = A, tau, work, info */
static void run_geqrf(op *o)
{
    int m = o->i[0], n = o->i[1], lda = o->i[2];
    const char *what = "cusolverDnDgeqrf";

    matrix(o->p[0], m, n, lda, 8, what, "A");
    on_device(o->p[1], (size_t)(m < n ? m : n) * 8, what, "TAU");
    workspace(o->p[2], o->i[3], work_len(m, n), what);
    dev.calls[N_GEQRF]++;
    set_info(o->p[3],
             LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, n, o->p[0], lda, o->p[1]),
             what);
}

API cusolverStatus_t cusolverDnDgeqrf(cusolverDnHandle_t h, int m, int n,
                                      double *A, int lda, double *tau,
                                      double *w, int lw, int *info)
{
    op o = {.run = run_geqrf, .i = {m, n, lda, lw}, .p = {A, tau, w, info}};

    if (m < 0 || n < 0 || lda < (m > 1 ? m : 1))
        return CUSOLVER_STATUS_INVALID_VALUE;
    return solver_enqueue(h, &o);
}

API cusolverStatus_t cusolverDnDorgqr_bufferSize(cusolverDnHandle_t h, int m,
                                                 int n, int k, const double *A,
                                                 int lda, const double *tau,
                                                 int *lw)
{
    (void)h, (void)k, (void)A, (void)lda, (void)tau;
    *lw = work_len(m, n);
    return CUSOLVER_STATUS_SUCCESS;
}

/* i[] = m, n, k, lda, lwork; p[] = A, tau, work, info */
static void run_orgqr(op *o)
{
    int m = o->i[0], n = o->i[1], k = o->i[2], lda = o->i[3];
    const char *what = "cusolverDnDorgqr";

    matrix(o->p[0], m, n, lda, 8, what, "A");
    on_device(o->p[1], (size_t)k * 8, what, "TAU");
    workspace(o->p[2], o->i[4], work_len(m, n), what);
    dev.calls[N_ORGQR]++;
    set_info(o->p[3],
             LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, n, k, o->p[0], lda, o->p[1]),
             what);
}

API cusolverStatus_t cusolverDnDorgqr(cusolverDnHandle_t h, int m, int n, int k,
                                      double *A, int lda, const double *tau,
                                      double *w, int lw, int *info)
{
    op o = {.run = run_orgqr,
            .i = {m, n, k, lda, lw},
            .p = {A, (void *)tau, w, info}};

    if (m < n || n < k || k < 0 || lda < (m > 1 ? m : 1))
        return CUSOLVER_STATUS_INVALID_VALUE;
    return solver_enqueue(h, &o);
}

API cusolverStatus_t cusolverDnDgesvd_bufferSize(cusolverDnHandle_t h, int m,
                                                 int n, int *lw)
{
    (void)h;
    *lw = work_len(m, n);
    return CUSOLVER_STATUS_SUCCESS;
}

/* i[] = jobu, jobvt, m, n, lda, ldu, ldvt, lwork; p[] = A, S, U, VT, work,
 * info */
static void run_gesvd(op *o)
{
    int ju = o->i[0], jv = o->i[1], m = o->i[2], n = o->i[3];
    const char *what = "cusolverDnDgesvd";
    double *superb;

    matrix(o->p[0], m, n, o->i[4], 8, what, "A");
    on_device(o->p[1], (size_t)n * 8, what, "S");
    if (ju != 'N')
        matrix(o->p[2], m, ju == 'A' ? m : n, o->i[5], 8, what, "U");
    if (jv != 'N')
        matrix(o->p[3], n, n, o->i[6], 8, what, "VT");
    workspace(o->p[4], o->i[7], work_len(m, n), what);
    dev.calls[N_GESVD]++;
    if (!(superb = malloc((size_t)(n > 1 ? n : 1) * 8)))
        die("out of host memory");
    set_info(o->p[5],
             LAPACKE_dgesvd(LAPACK_COL_MAJOR, (char)ju, (char)jv, m, n, o->p[0],
                            o->i[4], o->p[1], o->p[2],
                            o->i[5] > 0 ? o->i[5] : 1, o->p[3],
                            o->i[6] > 0 ? o->i[6] : 1, superb),
             what);
    free(superb);
}

API cusolverStatus_t cusolverDnDgesvd(cusolverDnHandle_t h, signed char ju,
                                      signed char jv, int m, int n, double *A,
                                      int lda, double *S, double *U, int ldu,
                                      double *VT, int ldvt, double *w, int lw,
                                      double *rw, int *info)
{
    op o = {.run = run_gesvd,
            .i = {ju, jv, m, n, lda, ldu, ldvt, lw},
            .p = {A, S, U, VT, w, info}};

    (void)rw;
    /* cuSOLVER's gesvd: m >= n only; jobu and jobvt 'A', 'S', 'O' or 'N' */
    if (m < n || n < 0 || lda < (m > 1 ? m : 1) || !strchr("ASN", ju) ||
        !strchr("ASN", jv))
        return CUSOLVER_STATUS_INVALID_VALUE;
    return solver_enqueue(h, &o);
}

/* gesvdj's parameters: the defaults (tolerance machine epsilon, sorted
 * values) are LAPACK's answer here */
struct gesvdjInfo {
    int sweeps;
};

API cusolverStatus_t cusolverDnCreateGesvdjInfo(gesvdjInfo_t *info)
{
    return (*info = calloc(1, sizeof **info)) ? CUSOLVER_STATUS_SUCCESS
                                              : CUSOLVER_STATUS_ALLOC_FAILED;
}

API cusolverStatus_t cusolverDnDestroyGesvdjInfo(gesvdjInfo_t info)
{
    free(info);
    return CUSOLVER_STATUS_SUCCESS;
}

API cusolverStatus_t cusolverDnDgesvdj_bufferSize(
    cusolverDnHandle_t h, cusolverEigMode_t jobz, int econ, int m, int n,
    const double *A, int lda, const double *S, const double *U, int ldu,
    const double *V, int ldv, int *lw, gesvdjInfo_t params)
{
    (void)h, (void)jobz, (void)econ, (void)A, (void)lda, (void)S, (void)U;
    (void)ldu, (void)V, (void)ldv, (void)params;
    *lw = work_len(m, n);
    return CUSOLVER_STATUS_SUCCESS;
}

/* i[] = jobz, econ, m, n, lda, ldu, ldv, lwork; p[] = A, S, U, V, work,
 * info.  gesvdj gives V, not V^T. */
static void run_gesvdj(op *o)
{
    int m = o->i[2], n = o->i[3], p = m < n ? m : n, econ = o->i[1];
    int vec = o->i[0] == CUSOLVER_EIG_MODE_VECTOR;
    int cu = econ ? p : m, cv = econ ? p : n;
    const char *what = "cusolverDnDgesvdj";
    double *superb, *vt;
    double *V = o->p[3];

    matrix(o->p[0], m, n, o->i[4], 8, what, "A");
    on_device(o->p[1], (size_t)p * 8, what, "S");
    if (vec) {
        matrix(o->p[2], m, cu, o->i[5], 8, what, "U");
        matrix(V, n, cv, o->i[6], 8, what, "V");
    }
    workspace(o->p[4], o->i[7], work_len(m, n), what);
    dev.calls[N_GESVDJ]++;
    superb = malloc((size_t)(p > 1 ? p : 1) * 8);
    vt = malloc((size_t)cv * (size_t)n * 8 + 8);
    if (!superb || !vt)
        die("out of host memory");
    set_info(o->p[5],
             LAPACKE_dgesvd(LAPACK_COL_MAJOR, vec ? (econ ? 'S' : 'A') : 'N',
                            vec ? (econ ? 'S' : 'A') : 'N', m, n, o->p[0],
                            o->i[4], o->p[1], o->p[2],
                            vec && o->i[5] > 0 ? o->i[5] : 1, vt,
                            cv > 0 ? cv : 1, superb),
             what);
    for (int j = 0; vec && j < cv; j++) /* V = (V^T)^T */
        for (int i = 0; i < n; i++)
            V[(size_t)j * (size_t)o->i[6] + (size_t)i] =
                vt[(size_t)i * (size_t)cv + (size_t)j];
    free(superb);
    free(vt);
}

API cusolverStatus_t cusolverDnDgesvdj(cusolverDnHandle_t h,
                                       cusolverEigMode_t jobz, int econ, int m,
                                       int n, double *A, int lda, double *S,
                                       double *U, int ldu, double *V, int ldv,
                                       double *w, int lw, int *info,
                                       gesvdjInfo_t params)
{
    op o = {.run = run_gesvdj,
            .i = {jobz, econ, m, n, lda, ldu, ldv, lw},
            .p = {A, S, U, V, w, info}};

    if (!params || m < 0 || n < 0 || lda < (m > 1 ? m : 1) ||
        (jobz == CUSOLVER_EIG_MODE_VECTOR &&
         (ldu < (m > 1 ? m : 1) || ldv < (n > 1 ? n : 1))))
        return CUSOLVER_STATUS_INVALID_VALUE;
    return solver_enqueue(h, &o);
}

API cusolverStatus_t cusolverDnDpotrf_bufferSize(cusolverDnHandle_t h,
                                                 cublasFillMode_t up, int n,
                                                 double *A, int lda, int *lw)
{
    (void)h, (void)up, (void)A, (void)lda;
    *lw = work_len(n, n);
    return CUSOLVER_STATUS_SUCCESS;
}

/* i[] = uplo, n, lda, lwork; p[] = A, work, info */
static void run_potrf(op *o)
{
    int n = o->i[1];
    const char *what = "cusolverDnDpotrf";

    matrix(o->p[0], n, n, o->i[2], 8, what, "A");
    workspace(o->p[1], o->i[3], work_len(n, n), what);
    dev.calls[N_POTRF]++;
    set_info(o->p[2],
             LAPACKE_dpotrf(LAPACK_COL_MAJOR,
                            o->i[0] == CUBLAS_FILL_MODE_LOWER ? 'L' : 'U', n,
                            o->p[0], o->i[2]),
             what);
}

API cusolverStatus_t cusolverDnDpotrf(cusolverDnHandle_t h, cublasFillMode_t up,
                                      int n, double *A, int lda, double *w,
                                      int lw, int *info)
{
    op o = {.run = run_potrf, .i = {up, n, lda, lw}, .p = {A, w, info}};

    if (n < 0 || lda < (n > 1 ? n : 1))
        return CUSOLVER_STATUS_INVALID_VALUE;
    return solver_enqueue(h, &o);
}

/* i[] = uplo, n, nrhs, lda, ldb; p[] = A, B, info */
static void run_potrs(op *o)
{
    int n = o->i[1], nrhs = o->i[2];
    const char *what = "cusolverDnDpotrs";

    matrix(o->p[0], n, n, o->i[3], 8, what, "A");
    matrix(o->p[1], n, nrhs, o->i[4], 8, what, "B");
    dev.calls[N_POTRS]++;
    set_info(o->p[2],
             LAPACKE_dpotrs(LAPACK_COL_MAJOR,
                            o->i[0] == CUBLAS_FILL_MODE_LOWER ? 'L' : 'U', n,
                            nrhs, o->p[0], o->i[3], o->p[1], o->i[4]),
             what);
}

API cusolverStatus_t cusolverDnDpotrs(cusolverDnHandle_t h, cublasFillMode_t up,
                                      int n, int nrhs, const double *A, int lda,
                                      double *B, int ldb, int *info)
{
    op o = {.run = run_potrs,
            .i = {up, n, nrhs, lda, ldb},
            .p = {(void *)A, B, info}};

    if (n < 0 || nrhs < 0 || lda < (n > 1 ? n : 1) || ldb < (n > 1 ? n : 1))
        return CUSOLVER_STATUS_INVALID_VALUE;
    return solver_enqueue(h, &o);
}
