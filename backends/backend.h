/*
 * backends/backend.h - the table of compute functions chosen at run time.
 * ops/ calls through a ck_backend so that a CUDA backend can plug in as a
 * loadable module without ops/ or pipelines/ changing.  The CPU backend is
 * the reference and fills every slot; a NULL slot elsewhere means "use the
 * CPU for this step".  Compute slots arrive with the ops that use them.
 */
#ifndef CK_BACKEND_H
#define CK_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "base/ck_grid.h"

#define CK_BACKEND_ABI 9 /* bump when a slot or an argument is added */

typedef struct ck_be_ctx ck_be_ctx;

/* ---- elementwise (semantics and type rules: ops/ew.h) ---- */

typedef enum ck_ew_op {
    /* unary */
    CK_EW_NEGATIVE,
    CK_EW_ABS,
    CK_EW_SQRT,
    CK_EW_EXP,
    CK_EW_LOG,
    CK_EW_LOG1P,
    CK_EW_EXPM1,
    CK_EW_SIN,
    CK_EW_COS,
    CK_EW_TAN,
    CK_EW_TANH,
    CK_EW_FLOOR,
    CK_EW_CEIL,
    CK_EW_ROUND, /* half to even, as numpy.round with decimals=0 */
    CK_EW_ISNAN,
    CK_EW_ISFINITE,
    CK_EW_LOGICAL_NOT,
    /* binary */
    CK_EW_ADD,
    CK_EW_SUBTRACT,
    CK_EW_MULTIPLY,
    CK_EW_DIVIDE, /* true division: integers give float64 */
    CK_EW_POWER,
    CK_EW_MINIMUM, /* NaN propagates, as numpy.minimum */
    CK_EW_MAXIMUM,
    CK_EW_LESS,
    CK_EW_LESS_EQUAL,
    CK_EW_GREATER,
    CK_EW_GREATER_EQUAL,
    CK_EW_EQUAL,
    CK_EW_NOT_EQUAL,
    CK_EW_LOGICAL_AND,
    CK_EW_LOGICAL_OR,
    /* ternary */
    CK_EW_WHERE, /* where(cond, a, b) */
    CK_EW_CLIP,  /* clip(a, lo, hi): minimum(maximum(a, lo), hi) */
    CK_EW_COUNT
} ck_ew_op;

/* One run of n elements.  Operands are in the compute dtype (cond: bool);
 * stride is 1 (contiguous) or 0 (the same element for all n). */
typedef struct ck_ew_args {
    ck_ew_op op;
    ck_dtype compute, result;
    size_t n;
    const void *in[3];
    int stride[3];
    void *out;
} ck_ew_args;

/* ---- reductions (semantics, states, finalising: ops/reduce.h) ---- */

typedef enum ck_red_op {
    CK_RED_SUM,
    CK_RED_PROD,
    CK_RED_MIN,
    CK_RED_MAX,
    CK_RED_MEAN,
    CK_RED_VAR,
    CK_RED_STD,
    CK_RED_ARGMIN,
    CK_RED_ARGMAX,
    CK_RED_COUNT_NONZERO,
    CK_RED_ANY,
    CK_RED_ALL,
    CK_RED_NANSUM,
    CK_RED_NANMEAN,
    CK_RED_NANMIN,
    CK_RED_NANMAX,
    CK_RED_NANVAR,
    CK_RED_NANSTD,
    CK_RED_NANPROD,
    CK_RED_NANARGMIN,
    CK_RED_NANARGMAX,
    CK_RED_NANCOUNT_NONZERO, /* count_nonzero with NaN left out (not NumPy's;
                                what decoded data's count_nonzero means) */
    CK_RED_COUNT
} ck_red_op;

/* Accumulates one block into partial states.  The block is C-order data of
 * dtype 'in' and shape shape[ndim] placed at origin[] in an array of shape
 * array_shape[]; bit d of 'axes' set means axis d is reduced.  state holds
 * one partial state (ops/reduce.h: ck_red_state_size bytes each) per
 * element of the block's output box (the block's shape without the
 * reduced axes, C order), already initialised; elements are folded in C
 * order. */
typedef struct ck_red_args {
    ck_red_op op;
    ck_dtype in;
    const void *data;
    int ndim;
    const int64_t *shape;
    const int64_t *origin;
    const int64_t *array_shape;
    uint32_t axes;
    void *state;
} ck_red_args;

/* ---- histogram (semantics, edges: ops/hist.h) ---- */

/* Adds n values (dtype in) to counts[nbins] following numpy.histogram:
 * bins are [e_i, e_i+1) except the last, which is closed; values outside
 * [edges[0], edges[nbins]] and NaN are dropped.  weights (dtype wtype, n
 * values) or NULL for counts of 1.  uniform bins are found arithmetically
 * the way NumPy does it, then corrected against edges[]. */
typedef struct ck_hist_args {
    ck_dtype in;
    const void *data;
    size_t n;
    const void *weights;
    ck_dtype wtype;
    int nbins;
    const double *edges; /* nbins + 1, increasing, already in the data's
                            precision (float32 edges for float32 data) */
    int uniform;
    double *counts;
} ck_hist_args;

/* ---- dense linear algebra (used by ops/linalg.h and ops/glm.h) ----
 * Matrices are float64 unless a slot says otherwise.  gemm and syrk take
 * C-order (row-major) matrices, as blocks of arrays are; the LAPACK-style
 * factorisations take column-major ("Fortran order") matrices, which is
 * what ops/linalg hands them. */

/* c = alpha * op(a) * op(b) + beta * c, all row-major; op(a) is m x k,
 * op(b) k x n, c m x n; ld* are row strides in elements.  dtype CK_F64 or
 * CK_F32 (all three matrices in it; alpha and beta as given).
 * a_key, b_key: 0, or a number naming the operand's contents for the
 * backend context's life (a block of an input that later calls hand over
 * again, ck_be_key): a backend with memory of its own (a GPU's) may keep
 * a copy and not read the operand again on a later call with that key. */
typedef struct ck_gemm_args {
    ck_dtype dtype;
    int trans_a, trans_b;
    int64_t m, n, k;
    double alpha, beta;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    void *c;
    int64_t ldc;
    uint64_t a_key, b_key;
} ck_gemm_args;

/* An operand key (ck_gemm_args): step 'node' (< 4095) of the run, its
 * operand 'which' (< 4), and the block's place (i < 2^34, j < 2^14);
 * 0, which keeps nothing, where they do not fit. */
static inline uint64_t ck_be_key(int node, int which, int64_t i, int64_t j)
{
    if (node < 0 || node >= 4095 || which < 0 || which >= 4 || i < 0 ||
        i >= ((int64_t)1 << 34) || j < 0 || j >= ((int64_t)1 << 14))
        return 0;
    return (uint64_t)(node + 1) << 52 | (uint64_t)which << 48 |
           (uint64_t)i << 14 | (uint64_t)j;
}

/* The key of the block di places further along i (0 stays 0). */
static inline uint64_t ck_be_key_add(uint64_t key, int64_t di)
{
    uint64_t i = (key >> 14 & (((uint64_t)1 << 34) - 1)) + (uint64_t)di;
    if (!key || di < 0 || i >= ((uint64_t)1 << 34))
        return 0;
    return (key & ~((((uint64_t)1 << 34) - 1) << 14)) | i << 14;
}

/* c = alpha * a^T a + beta * c for row-major a (k x n, row stride lda)
 * and c (n x n, row stride ldc); both triangles of c are written.  With
 * w (k weights >= 0; else NULL) it is alpha * a^T diag(w) a + beta * c,
 * and work holds k x n doubles for a backend to scale a's rows in.
 * a_key as gemm's. */
typedef struct ck_syrk_args {
    int64_t n, k;
    double alpha, beta;
    const double *a;
    int64_t lda;
    double *c;
    int64_t ldc;
    const double *w;
    double *work;
    uint64_t a_key;
} ck_syrk_args;

/* Column-major a (m x n, m >= n, leading dimension lda) is factored as
 * a = Q R: R (n x n, upper triangular, zeros below) goes to r (leading
 * dimension ldr); when want_q, a is overwritten with Q's first n columns.
 * two_r (without want_q): a is two upper triangles stacked (m = 2n, the
 * zeros below each there), as when two R factors are folded into one. */
typedef struct ck_qr_args {
    int64_t m, n;
    double *a;
    int64_t lda;
    double *r;
    int64_t ldr;
    int want_q;
    int two_r;
} ck_qr_args;

/* Thin SVD of column-major a (m x n, destroyed): s gets min(m, n) values
 * in decreasing order, u (m x min, ldu) and vt (min x n, ldvt) the vectors,
 * column-major.  With no_u, u is only scratch of the same size: the caller
 * needs s and vt (an R factor's left vectors, when A's come from A V). */
typedef struct ck_svd_args {
    int64_t m, n;
    double *a;
    int64_t lda;
    double *s;
    double *u;
    int64_t ldu;
    double *vt;
    int64_t ldvt;
    int no_u;
} ck_svd_args;

/* Solves a x = b for symmetric positive definite a (n x n, destroyed) and
 * nrhs right-hand sides in b (n x nrhs column-major, overwritten with x).
 * *not_pd is set to the 1-based order of the leading minor that is not
 * positive definite (0: it solved). */
typedef struct ck_posv_args {
    int64_t n, nrhs;
    double *a;
    double *b;
    int not_pd;
} ck_posv_args;

/* ---- users' kernels on a device (the kernel op's CUDA C) ---- */

/* A block as the kernel contract describes it
 * (sample-data/kernels/chunkctl_kernel.h, whose chunkctl_array has this
 * layout): its data (C order), dtype (ck_dtype's numbering), ndim, shape,
 * strides in elements, origin in the whole array and the whole array's
 * shape.  ops/kernel.h's ck_kernel_array is this type. */
typedef struct ck_be_array {
    void *data;
    int dtype;
    int ndim;
    int64_t shape[CK_MAX_DIMS], strides[CK_MAX_DIMS], origin[CK_MAX_DIMS],
        full_shape[CK_MAX_DIMS];
} ck_be_array;

typedef struct ck_be_kernel ck_be_kernel;

/* A kernel to load: CUDA C source text src of file 'file', the contract
 * header's text (included as "chunkctl_kernel.h") and the entry point's
 * name; 'what' starts messages ("p.json: steps[2]"). */
typedef struct ck_kernel_src {
    const char *what, *file, *src, *header, *entry;
} ck_kernel_src;

enum { CK_BE_KERNEL_MAX_ARGS = 16 }; /* a kernel's array arguments */

/* One launch over a chunk: out and args in host memory (the backend moves
 * their data and descriptions to the device and out's data back), params
 * the step's numbers, block threads per block; 'step' and 'at' (the
 * chunk's coordinates) name a failure. */
typedef struct ck_kernel_run_args {
    ck_be_kernel *k;
    ck_be_array *out;
    const ck_be_array *args;
    int nargs;
    const double *params;
    int nparams;
    int block;
    const char *step, *at;
} ck_kernel_run_args;

typedef struct ck_be_opts {
    int threads; /* 0: all cores */
    /* a backend with memory of its own (a GPU's): the most of it the
     * context allocates at once (--gpu-memory); 0: what is free when it
     * opens */
    int64_t device_memory;
    /* this process among those on its host (MPI ranks; 0 of 1 alone):
     * a backend with devices spreads them over the devices and divides a
     * shared device's memory among them */
    int host_rank, host_size;
} ck_be_opts;

/* The devices a backend can run on, as `chunkctl devices` lists them. */
enum { CK_BE_MAX_DEVICES = 16 };
typedef struct ck_be_device {
    char name[128];
    int64_t memory;      /* bytes */
    int64_t free_memory; /* bytes free when asked */
    int major, minor;    /* compute capability */
} ck_be_device;
typedef struct ck_be_devices {
    int n;               /* devices found (at most CK_BE_MAX_DEVICES) */
    int driver, runtime; /* versions, 1000 * major + 10 * minor */
    ck_be_device dev[CK_BE_MAX_DEVICES];
} ck_be_devices;

typedef struct ck_backend {
    const char *name; /* "cpu", "cuda" */
    int abi;
    ck_code (*open)(const ck_be_opts *o, ck_be_ctx **ctx, ck_err *err);
    void (*close)(ck_be_ctx *ctx);
    ck_code (*ew)(ck_be_ctx *ctx, const ck_ew_args *a, ck_err *err);
    ck_code (*reduce)(ck_be_ctx *ctx, const ck_red_args *a, ck_err *err);
    ck_code (*hist)(ck_be_ctx *ctx, const ck_hist_args *a, ck_err *err);
    ck_code (*gemm)(ck_be_ctx *ctx, const ck_gemm_args *a, ck_err *err);
    ck_code (*syrk)(ck_be_ctx *ctx, const ck_syrk_args *a, ck_err *err);
    ck_code (*qr)(ck_be_ctx *ctx, const ck_qr_args *a, ck_err *err);
    ck_code (*svd)(ck_be_ctx *ctx, const ck_svd_args *a, ck_err *err);
    ck_code (*posv)(ck_be_ctx *ctx, ck_posv_args *a, ck_err *err);
    /* How many threads each later call into ctx may use (the CPU
     * backend's BLAS pool; a backend with no pool of its own leaves the
     * slot NULL).  n = 0: the context's own count, ck_be_opts.threads
     * (--threads; 0 there: all cores); n = 1: one thread per call, because
     * the caller runs calls side by side on threads of its own; n > 1: n
     * threads.  Called only between calls into ctx, never beside one.  It
     * cannot fail: a backend that cannot honour n carries on as it was. */
    void (*set_threads)(ck_be_ctx *ctx, int n);
    /* Process-wide, asked before any context opens: an environment
     * variable the backend's libraries read only when they load, and a
     * value that suits this machine better than what they chose without
     * it (the CPU backend: OpenBLAS's kernel set, OPENBLAS_CORETYPE, on
     * CPU models it does not know).  Returns 1 with *name and *value
     * (static strings) when the process should start again with it set,
     * 0 when all is well.  NULL: never. */
    int (*restart_env)(const char **name, const char **value);
    /* Lists the devices (NULL for a backend that runs on the host), with
     * each one's free memory when with_free (which costs a context on
     * each).  No usable device is CK_EDEVICE "no CUDA device: <the
     * driver's reason>; use --backend cpu". */
    ck_code (*devices)(ck_be_devices *out, int with_free, ck_err *err);
    /* Users' kernels (NULL: this backend runs only C kernels, on the
     * CPU).  kernel_load compiles and loads one for ctx's device, before
     * any data is read: CK_EUSAGE starting with s->what for a compile
     * error (its first error and source line) or a missing entry point.
     * kernel_run launches it over one chunk and waits for it: a launch
     * or a fault in it is CK_EDEVICE naming a->step and a->at, and the
     * context is not used again.  kernel_free releases one (NULL: none);
     * kernel_run calls may come from several threads at once. */
    ck_code (*kernel_load)(ck_be_ctx *ctx, const ck_kernel_src *s,
                           ck_be_kernel **out, ck_err *err);
    ck_code (*kernel_run)(ck_be_ctx *ctx, const ck_kernel_run_args *a,
                          ck_err *err);
    void (*kernel_free)(ck_be_ctx *ctx, ck_be_kernel *k);
    /* The calls so far will not come again with their operand keys (a
     * step, or a pass over outputs, is done): a backend that keeps
     * operands lets them go.  NULL: it keeps none.  Called only between
     * calls into ctx. */
    void (*release)(ck_be_ctx *ctx);
} ck_backend;

/* A backend table with its open context: what ops/ is handed. */
typedef struct ck_be {
    const ck_backend *table;
    ck_be_ctx *ctx;
    ck_be_ctx *cpu_ctx; /* for slots the table leaves NULL */
} ck_be;

extern const ck_backend ck_backend_cpu;

/* Whether gemm runs on a device (a slot of its own, not the CPU's):
 * callers then hand it fewer and larger blocks, as moving a block there
 * and back costs more than its arithmetic. */
static inline int ck_be_gemm_on_device(const ck_be *be)
{
    return be && be->table && be->table->gemm && be->table != &ck_backend_cpu;
}

/* What a backend module (libchunkctl-NAME.so) exports, its one symbol:
 * its table, whose abi must be CK_BACKEND_ABI. */
const ck_backend *ck_backend_module(void);

/* Finds a backend by name: "cpu" (built in) or "cuda" (the module
 * libchunkctl-cuda.so beside the executable, loaded on first use).
 * CK_EUSAGE for a name it does not know, naming the known ones; CK_EDEVICE
 * "no CUDA backend: <why the module did not load>" when chunkctl was built
 * without it or it cannot load. */
ck_code ck_be_find(const char *name, const ck_backend **out, ck_err *err);

/* The backend 'name' means on this machine: "auto" is "cuda" when the
 * module loads and lists a device, "cpu" otherwise; any other name is
 * itself (checked as ck_be_find checks it).  *out gets the chosen name
 * (a static string); when why is not NULL it gets, for "auto", the reason
 * for the choice (why_n bytes, "" when cuda was chosen). */
ck_code ck_be_resolve(const char *name, const char **out, char *why,
                      size_t why_n, ck_err *err);

/* The GPUs the CUDA backend can use, with their free memory: CK_EDEVICE
 * as ck_be_find and the devices slot say when there are none. */
ck_code ck_be_list_devices(ck_be_devices *out, ck_err *err);

/* Finds and opens backend 'name' ("auto" as ck_be_resolve chooses; and
 * the CPU backend beside it, for the slots it leaves NULL) into *be.
 * ck_be_close releases both; it accepts a zeroed ck_be. */
ck_code ck_be_open(const char *name, const ck_be_opts *o, ck_be *be,
                   ck_err *err);
void ck_be_close(ck_be *be);

/* The set_threads slot (its contract above) for the steps that follow:
 * applied to be's context and, when be is not the CPU backend, to the CPU
 * context its NULL slots fall back to.  A NULL slot: nothing to do.  So
 * pipelines/ says how it runs calls, never which backend runs them. */
void ck_be_set_threads(const ck_be *be, int n);

/* The release slot (its contract above) of be's backend; nothing when it
 * has none or be is not open. */
void ck_be_release(const ck_be *be);

/* The restart_env slot of the backends built in (the CPU backend, which
 * every run loads), for a caller about to load nothing else: 1 with *name
 * and *value when the process should start again with that variable set,
 * 0 when all is well or the user has set the variable (theirs wins, and
 * so a process started again is not started a third time). */
int ck_be_restart_env(const char **name, const char **value);

#endif
