/*
 * tests/cuda/test_ew_gen.c - the CUDA source generator for fused
 * elementwise chains.  Every op in every compute dtype the CPU backend
 * has a kernel for, casts between all dtypes, broadcast operands and the
 * chains of the GPU benchmark are generated and compiled with NVRTC
 * (loaded with dlopen from the CUDA Toolkit; compiling needs no GPU).
 * Running the kernels, against the CPU backend, is the GPU suite's
 * (tests/gpu/run.sh).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

#include "backends/cuda/ew_gen.h"

static struct {
    void *h;
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int,
                          const char *const *, const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
} nv;

static void load_nvrtc(void)
{
    if (nv.h)
        return;
    nv.h = dlopen(CK_NVRTC_PATH, RTLD_NOW | RTLD_LOCAL);
    cr_assert(nv.h, "dlopen %s: %s", CK_NVRTC_PATH, dlerror());
    *(void **)&nv.create = dlsym(nv.h, "nvrtcCreateProgram");
    *(void **)&nv.compile = dlsym(nv.h, "nvrtcCompileProgram");
    *(void **)&nv.log_size = dlsym(nv.h, "nvrtcGetProgramLogSize");
    *(void **)&nv.log = dlsym(nv.h, "nvrtcGetProgramLog");
    *(void **)&nv.destroy = dlsym(nv.h, "nvrtcDestroyProgram");
    cr_assert(nv.create && nv.compile && nv.log_size && nv.log && nv.destroy);
}

/* Generates p's source and compiles it; fails with NVRTC's log. */
static void compiles(const ck_ew_prog *p, const char *what)
{
    const char *opts[] = {"--std=c++17", "-default-device"};
    ck_err err = {0};
    char *src = NULL, *log;
    nvrtcProgram prog;
    size_t n = 0;
    nvrtcResult r;

    cr_assert_eq(ck_cuda_ew_source(p, &src, &err), CK_OK, "%s: %s", what,
                 err.msg);
    cr_assert(strstr(src, "__global__ void " CK_CUDA_EW_KERNEL "("), "%s",
              what);
    load_nvrtc();
    cr_assert_eq(nv.create(&prog, src, "ck_ew.cu", 0, NULL, NULL),
                 NVRTC_SUCCESS);
    r = nv.compile(prog, 2, opts);
    nv.log_size(prog, &n);
    log = calloc(1, n + 1);
    nv.log(prog, log);
    cr_assert_eq(r, NVRTC_SUCCESS, "%s does not compile:\n%s\n--- source:\n%s",
                 what, log, src);
    free(log);
    nv.destroy(&prog);
    free(src);
}

static int ew_arity(ck_ew_op op)
{
    return op <= CK_EW_LOGICAL_NOT ? 1 : op < CK_EW_WHERE ? 2 : 3;
}

/* The (op, compute dtype) pairs backends/cpu/ew.c has kernels for. */
static int has_kernel(ck_ew_op op, ck_dtype c)
{
    int f = c == CK_F32 || c == CK_F64, b = c == CK_BOOL;

    switch (op) {
    case CK_EW_NEGATIVE:
    case CK_EW_SUBTRACT:
    case CK_EW_FLOOR:
    case CK_EW_CEIL:
    case CK_EW_ROUND:
    case CK_EW_POWER:
        return !b;
    case CK_EW_SQRT:
    case CK_EW_EXP:
    case CK_EW_LOG:
    case CK_EW_LOG1P:
    case CK_EW_EXPM1:
    case CK_EW_SIN:
    case CK_EW_COS:
    case CK_EW_TAN:
    case CK_EW_TANH:
    case CK_EW_DIVIDE:
        return f;
    default:
        return 1;
    }
}

static int predicate(ck_ew_op op)
{
    return op == CK_EW_ISNAN || op == CK_EW_ISFINITE ||
           op == CK_EW_LOGICAL_NOT ||
           (op >= CK_EW_LESS && op <= CK_EW_LOGICAL_OR);
}

/* All ops in all compute dtypes in one program each: operands loaded
 * (where's condition as bool), the op, its result stored. */
Test(ew_gen, every_op_in_every_dtype_compiles)
{
    int made = 0;

    for (int op = 0; op < CK_EW_COUNT; op++)
        for (int c = CK_BOOL; c < CK_DT_COUNT; c++) {
            ck_ew_prog p = {.ndim = 2};
            int n = ew_arity((ck_ew_op)op);
            char what[64];
            if (!has_kernel((ck_ew_op)op, (ck_dtype)c))
                continue;
            for (int k = 0; k < n; k++) {
                ck_dtype t = op == CK_EW_WHERE && k == 0 ? CK_BOOL : c;
                p.in[k] = t;
                p.contiguous[k] = 1;
                p.ins[k] =
                    (ck_ewp_ins){.kind = CK_EWP_LOAD, .dtype = t, .input = k};
            }
            p.nin = n;
            p.ins[n] = (ck_ewp_ins){
                .kind = CK_EWP_OP,
                .op = (ck_ew_op)op,
                .compute = (ck_dtype)c,
                .dtype = predicate((ck_ew_op)op) ? CK_BOOL : (ck_dtype)c,
                .arg = {0, 1, 2}};
            p.n = n + 1;
            p.result = n;
            snprintf(what, sizeof what, "op %d in %s", op,
                     ck_dtype_name((ck_dtype)c));
            compiles(&p, what);
            made++;
        }
    cr_assert_eq(made, 278, "%d programs",
                 made); /* 34 ops, 11 dtypes, the CPU's gaps */
}

/* Every dtype converted to every other, from a constant and a load. */
Test(ew_gen, every_cast_compiles)
{
    ck_ew_prog p = {.ndim = 1, .nin = 0};

    for (int s = CK_BOOL; s < CK_DT_COUNT; s++)
        for (int d = CK_BOOL; d < CK_DT_COUNT; d++) {
            int k = p.n;
            if (k + 2 > CK_EWP_MAX_INS) {
                p.result = k - 1;
                compiles(&p, "casts");
                p.n = k = 0;
            }
            p.ins[k] = (ck_ewp_ins){.kind = CK_EWP_CONST,
                                    .dtype = (ck_dtype)s,
                                    .value = s >= CK_F32 ? -1.5 : 7};
            p.ins[k + 1] = (ck_ewp_ins){
                .kind = CK_EWP_CAST, .dtype = (ck_dtype)d, .arg = {k}};
            p.n = k + 2;
        }
    p.result = p.n - 1;
    compiles(&p, "casts");
}

/* The GPU benchmark's chain, sqrt(abs(sin(x) * 3 + x / 2)) on float32,
 * with x broadcast against a (rows, 1) operand read by strides, and
 * (x + 1)[(x + 1) < 10]'s predicate on float64. */
Test(ew_gen, fused_chains_compile)
{
    ck_ew_prog p = {.ndim = 2,
                    .nin = 2,
                    .in = {CK_F32, CK_F32},
                    .contiguous = {1, 0},
                    .n = 10,
                    .result = 9,
                    .ins = {
                        {.kind = CK_EWP_LOAD, .dtype = CK_F32, .input = 0},
                        {.kind = CK_EWP_OP,
                         .op = CK_EW_SIN,
                         .compute = CK_F32,
                         .dtype = CK_F32,
                         .arg = {0}},
                        {.kind = CK_EWP_CONST, .dtype = CK_F32, .value = 3},
                        {.kind = CK_EWP_OP,
                         .op = CK_EW_MULTIPLY,
                         .compute = CK_F32,
                         .dtype = CK_F32,
                         .arg = {1, 2}},
                        {.kind = CK_EWP_LOAD, .dtype = CK_F32, .input = 1},
                        {.kind = CK_EWP_CONST, .dtype = CK_F32, .value = 2},
                        {.kind = CK_EWP_OP,
                         .op = CK_EW_DIVIDE,
                         .compute = CK_F32,
                         .dtype = CK_F32,
                         .arg = {4, 5}},
                        {.kind = CK_EWP_OP,
                         .op = CK_EW_ADD,
                         .compute = CK_F32,
                         .dtype = CK_F32,
                         .arg = {3, 6}},
                        {.kind = CK_EWP_OP,
                         .op = CK_EW_ABS,
                         .compute = CK_F32,
                         .dtype = CK_F32,
                         .arg = {7}},
                        {.kind = CK_EWP_OP,
                         .op = CK_EW_SQRT,
                         .compute = CK_F32,
                         .dtype = CK_F32,
                         .arg = {8}},
                    }};
    ck_ew_prog q = {.ndim = 2,
                    .nin = 1,
                    .in = {CK_F64},
                    .contiguous = {1},
                    .n = 5,
                    .result = 4,
                    .ins = {
                        {.kind = CK_EWP_LOAD, .dtype = CK_F64, .input = 0},
                        {.kind = CK_EWP_CONST, .dtype = CK_F64, .value = 1},
                        {.kind = CK_EWP_OP,
                         .op = CK_EW_ADD,
                         .compute = CK_F64,
                         .dtype = CK_F64,
                         .arg = {0, 1}},
                        {.kind = CK_EWP_CONST, .dtype = CK_F64, .value = 10},
                        {.kind = CK_EWP_OP,
                         .op = CK_EW_LESS,
                         .compute = CK_F64,
                         .dtype = CK_BOOL,
                         .arg = {2, 3}},
                    }};
    char *src = NULL;
    ck_err err = {0};

    compiles(&p, "sqrt(abs(sin(x) * 3 + x / 2))");
    compiles(&q, "(x + 1) < 10");
    /* only the strided operand pays for index arithmetic */
    cr_assert_eq(ck_cuda_ew_source(&p, &src, &err), CK_OK);
    cr_assert(strstr(src, "in0[i]") && strstr(src, "in1[off[1]]"), "%s", src);
    cr_assert(strstr(src, "sinf(") && strstr(src, "sqrtf(") &&
                  strstr(src, "fabsf("),
              "float32 data gets the float32 functions: %s", src);
    free(src);
    cr_assert_eq(ck_cuda_ew_source(&q, &src, &err), CK_OK);
    cr_assert_null(strstr(src, "off["), "%s", src);
    free(src);
}
