/*
 * backends/cuda/ew_gen.c - CUDA source for a fused elementwise chain.
 * Every element expression mirrors backends/cpu/ew.c's (the reference):
 * integer arithmetic wraps in an unsigned type of the same or greater
 * width, minimum/maximum let NaN win, round is rint (half to even),
 * float32 data gets the float32 functions, and conversions follow
 * ck_dtype_convert.  One thread per element in a grid-stride loop; an
 * operand read at the linear index needs no index arithmetic, others get
 * their offset from the box's C-order index and their strides.
 */
#include "backends/cuda/ew_gen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing string; oom remembered, reported once at the end. */
typedef struct buf {
    char *s;
    size_t n, cap;
    int oom;
} buf;

static void put(buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    int k;

    if (b->oom)
        return;
    va_start(ap, fmt);
    k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
        b->oom = 1;
        return;
    }
    if (!b->s || b->n + (size_t)k >= b->cap) {
        size_t cap = (b->cap ? b->cap : 4096);
        char *t;
        while (cap <= b->n + (size_t)k)
            cap *= 2;
        if (!(t = realloc(b->s, cap))) {
            b->oom = 1;
            return;
        }
        b->s = t;
        b->cap = cap;
        va_start(ap, fmt);
        vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
    }
    b->n += (size_t)k;
}

static const char *ctype(ck_dtype t)
{
    switch (t) {
    case CK_BOOL:
    case CK_U8:
        return "unsigned char";
    case CK_I8:
        return "signed char";
    case CK_I16:
        return "short";
    case CK_I32:
        return "int";
    case CK_I64:
        return "long long";
    case CK_U16:
        return "unsigned short";
    case CK_U32:
        return "unsigned int";
    case CK_U64:
        return "unsigned long long";
    case CK_F32:
        return "float";
    case CK_F64:
        return "double";
    default:
        return NULL;
    }
}

/* The unsigned type integer arithmetic of t wraps in (ew.c's W). */
static const char *wtype(ck_dtype t)
{
    return t == CK_I64 || t == CK_U64 ? "unsigned long long" : "unsigned int";
}

static int is_int(ck_dtype t)
{
    return t >= CK_I8 && t <= CK_U64;
}

static int is_sint(ck_dtype t)
{
    return t >= CK_I8 && t <= CK_I64;
}

/* The conversion of value v (dtype s) to dtype d, as ck_dtype_convert. */
static void cast(buf *b, ck_dtype d, ck_dtype s, const char *v)
{
    static const char *const f2i[CK_DT_COUNT] = {
        [CK_I8] = "ck_f2_i8",   [CK_I16] = "ck_f2_i16", [CK_I32] = "ck_f2_i32",
        [CK_I64] = "ck_f2_i64", [CK_U8] = "ck_f2_u8",   [CK_U16] = "ck_f2_u16",
        [CK_U32] = "ck_f2_u32", [CK_U64] = "ck_f2_u64"};

    if (d == s)
        put(b, "%s", v);
    else if (d == CK_BOOL)
        put(b, "(unsigned char)(%s != 0)", v);
    else if (ck_dtype_is_float(s) && is_int(d))
        put(b, "%s((double)%s)", f2i[d], v);
    else
        put(b, "(%s)%s", ctype(d), v);
}

/* The float function fn for dtype t: sqrtf for float32, sqrt for float64. */
static void fn1(buf *b, const char *fn, ck_dtype t, const char *x)
{
    put(b, "%s%s(%s)", fn, t == CK_F32 ? "f" : "", x);
}

/* Whether the CPU backend has a kernel for op in compute dtype c (the
 * rows of backends/cpu/ew.c's KERNELS). */
static int supported(ck_ew_op op, ck_dtype c)
{
    int f = ck_dtype_is_float(c), i = is_int(c), bl = c == CK_BOOL;

    switch (op) {
    case CK_EW_NEGATIVE:
    case CK_EW_SUBTRACT:
        return f || i;
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
    case CK_EW_FLOOR:
    case CK_EW_CEIL:
    case CK_EW_ROUND:
    case CK_EW_POWER:
        return f || i;
    default:
        return (f || i || bl) && op < CK_EW_COUNT;
    }
}

static int arity(ck_ew_op op)
{
    return op <= CK_EW_LOGICAL_NOT ? 1 : op < CK_EW_WHERE ? 2 : 3;
}

/* Element expression of instruction k, operands named v<arg>. */
static void expr(buf *b, const ck_ewp_ins *in)
{
    ck_dtype c = in->compute;
    const char *T = ctype(c), *W = wtype(c);
    char x[16], y[16], z[16];
    int f = ck_dtype_is_float(c);

    snprintf(x, sizeof x, "v%d", in->arg[0]);
    snprintf(y, sizeof y, "v%d", in->arg[1]);
    snprintf(z, sizeof z, "v%d", in->arg[2]);
    switch (in->op) {
    case CK_EW_NEGATIVE:
        if (f)
            put(b, "-%s", x);
        else
            put(b, "(%s)((%s)0 - (%s)%s)", T, W, W, x);
        break;
    case CK_EW_ABS:
        if (f)
            fn1(b, "fabs", c, x);
        else if (is_sint(c))
            put(b, "(%s < 0 ? (%s)((%s)0 - (%s)%s) : %s)", x, T, W, W, x, x);
        else
            put(b, "%s", x);
        break;
    case CK_EW_SQRT:
        fn1(b, "sqrt", c, x);
        break;
    case CK_EW_EXP:
        fn1(b, "exp", c, x);
        break;
    case CK_EW_LOG:
        fn1(b, "log", c, x);
        break;
    case CK_EW_LOG1P:
        fn1(b, "log1p", c, x);
        break;
    case CK_EW_EXPM1:
        fn1(b, "expm1", c, x);
        break;
    case CK_EW_SIN:
        fn1(b, "sin", c, x);
        break;
    case CK_EW_COS:
        fn1(b, "cos", c, x);
        break;
    case CK_EW_TAN:
        fn1(b, "tan", c, x);
        break;
    case CK_EW_TANH:
        fn1(b, "tanh", c, x);
        break;
    case CK_EW_FLOOR:
    case CK_EW_CEIL:
    case CK_EW_ROUND:
        if (f)
            fn1(b,
                in->op == CK_EW_FLOOR  ? "floor"
                : in->op == CK_EW_CEIL ? "ceil"
                                       : "rint",
                c, x);
        else
            put(b, "%s", x);
        break;
    case CK_EW_ISNAN:
        put(b, f ? "(unsigned char)(isnan(%s) != 0)" : "((void)%s, 0)", x);
        break;
    case CK_EW_ISFINITE:
        put(b, f ? "(unsigned char)(isfinite(%s) != 0)" : "((void)%s, 1)", x);
        break;
    case CK_EW_LOGICAL_NOT:
        put(b, "(unsigned char)(%s == 0)", x);
        break;
    case CK_EW_ADD:
    case CK_EW_SUBTRACT:
    case CK_EW_MULTIPLY: {
        char o = in->op == CK_EW_ADD        ? '+'
                 : in->op == CK_EW_SUBTRACT ? '-'
                                            : '*';
        if (f)
            put(b, "%s %c %s", x, o, y);
        else if (c == CK_BOOL) /* add is or, multiply is and */
            put(b, "(unsigned char)(%s %c %s)", x, o == '+' ? '|' : '&', y);
        else
            put(b, "(%s)((%s)%s %c (%s)%s)", T, W, x, o, W, y);
        break;
    }
    case CK_EW_DIVIDE:
        put(b, "%s / %s", x, y);
        break;
    case CK_EW_POWER: {
        const char *ip = c == CK_I64 || c == CK_U64 ? "ck_ipow64" : "ck_ipow32";
        if (f)
            put(b, "pow%s(%s, %s)", c == CK_F32 ? "f" : "", x, y);
        else if (is_sint(c)) /* NumPy refuses negative exponents */
            put(b, "(%s < 0 ? (%s)ck_refuse(err) : (%s)%s((%s)%s, (%s)%s))", y,
                T, T, ip, W, x, W, y);
        else
            put(b, "(%s)%s((%s)%s, (%s)%s)", T, ip, W, x, W, y);
        break;
    }
    case CK_EW_MINIMUM:
    case CK_EW_MAXIMUM: {
        const char *cmp = in->op == CK_EW_MINIMUM ? "<=" : ">=";
        if (f) /* NaN in either operand wins */
            put(b, "((%s %s %s || isnan(%s)) ? %s : %s)", x, cmp, y, x, x, y);
        else
            put(b, "(%s %s %s ? %s : %s)", x, cmp, y, x, y);
        break;
    }
    case CK_EW_LESS:
        put(b, "(unsigned char)(%s < %s)", x, y);
        break;
    case CK_EW_LESS_EQUAL:
        put(b, "(unsigned char)(%s <= %s)", x, y);
        break;
    case CK_EW_GREATER:
        put(b, "(unsigned char)(%s > %s)", x, y);
        break;
    case CK_EW_GREATER_EQUAL:
        put(b, "(unsigned char)(%s >= %s)", x, y);
        break;
    case CK_EW_EQUAL:
        put(b, "(unsigned char)(%s == %s)", x, y);
        break;
    case CK_EW_NOT_EQUAL:
        put(b, "(unsigned char)(%s != %s)", x, y);
        break;
    case CK_EW_LOGICAL_AND:
        put(b, "(unsigned char)((%s != 0) & (%s != 0))", x, y);
        break;
    case CK_EW_LOGICAL_OR:
        put(b, "(unsigned char)((%s != 0) | (%s != 0))", x, y);
        break;
    case CK_EW_WHERE:
        put(b, "(%s ? %s : %s)", x, y, z);
        break;
    case CK_EW_CLIP: /* minimum(maximum(x, lo), hi), NaN wins */
        if (f)
            put(b, "ck_clip%s(%s, %s, %s)", c == CK_F32 ? "f" : "", x, y, z);
        else
            put(b, "(%s >= %s ? (%s <= %s ? %s : %s) : (%s <= %s ? %s : %s))",
                x, y, x, z, x, z, y, z, y, z);
        break;
    default:
        break;
    }
}

/* Helpers every kernel may use: ck_dtype_convert's float-to-integer
 * conversions, wrapping integer powers, the refusal flag. */
static const char prelude[] =
    "#define CK_F2I(NAME, T, LO, HI) \\\n"
    "  __device__ __forceinline__ T NAME(double x) { \\\n"
    "    return x != x ? (T)0 : x <= (double)(LO) ? (T)(LO) \\\n"
    "         : x >= (double)(HI) ? (T)(HI) : (T)x; }\n"
    "CK_F2I(ck_f2_i8, signed char, -128, 127)\n"
    "CK_F2I(ck_f2_i16, short, -32768, 32767)\n"
    "CK_F2I(ck_f2_i32, int, -2147483647 - 1, 2147483647)\n"
    "CK_F2I(ck_f2_u8, unsigned char, 0, 255)\n"
    "CK_F2I(ck_f2_u16, unsigned short, 0, 65535)\n"
    "CK_F2I(ck_f2_u32, unsigned int, 0, 4294967295u)\n"
    "__device__ __forceinline__ long long ck_f2_i64(double x) {\n"
    "  return x != x ? 0 : x < -9223372036854775808.0 ? "
    "(-9223372036854775807LL - 1)\n"
    "       : x >= 9223372036854775808.0 ? 9223372036854775807LL : (long "
    "long)x; }\n"
    "__device__ __forceinline__ unsigned long long ck_f2_u64(double x) {\n"
    "  return x != x || x <= 0 ? 0ULL : x >= 18446744073709551616.0\n"
    "       ? 18446744073709551615ULL : (unsigned long long)x; }\n"
    "__device__ __forceinline__ unsigned int ck_ipow32(unsigned int b, "
    "unsigned int e) {\n"
    "  unsigned int r = 1; for (; e; e >>= 1, b *= b) if (e & 1) r *= b; "
    "return r; }\n"
    "__device__ __forceinline__ unsigned long long ck_ipow64(unsigned long "
    "long b,\n"
    "                                                        unsigned long "
    "long e) {\n"
    "  unsigned long long r = 1; for (; e; e >>= 1, b *= b) if (e & 1) r *= b; "
    "return r; }\n"
    "#define CK_CLIP(NAME, T) \\\n"
    "  __device__ __forceinline__ T NAME(T x, T l, T h) { \\\n"
    "    T m = (x >= l || isnan(x)) ? x : l; \\\n"
    "    return (m <= h || isnan(m)) ? m : h; }\n"
    "CK_CLIP(ck_clipf, float)\n"
    "CK_CLIP(ck_clip, double)\n";

ck_code ck_cuda_ew_source(const ck_ew_prog *p, char **src, ck_err *err)
{
    buf b = {0};
    int general = 0; /* some operand needs index arithmetic */

    *src = NULL;
    if (p->ndim < 0 || p->ndim > CK_MAX_DIMS || p->nin < 0 ||
        p->nin > CK_EWP_MAX_IN || p->n < 1 || p->n > CK_EWP_MAX_INS ||
        p->result < 0 || p->result >= p->n)
        return ck_err_internal(err, "ew program: bad sizes");
    for (int k = 0; k < p->nin; k++) {
        if (!ctype(p->in[k]))
            return ck_err_internal(err, "ew program: operand %d's dtype", k);
        general |= !p->contiguous[k];
    }
    for (int k = 0; k < p->n; k++) {
        const ck_ewp_ins *in = &p->ins[k];
        int nargs = in->kind == CK_EWP_CAST ? 1
                    : in->kind == CK_EWP_OP ? arity(in->op)
                                            : 0;
        if (!ctype(in->dtype))
            return ck_err_internal(err, "ew program: ins %d's dtype", k);
        for (int a = 0; a < nargs; a++)
            if (in->arg[a] < 0 || in->arg[a] >= k)
                return ck_err_internal(err, "ew program: ins %d's arg %d", k,
                                       a);
        if (in->kind == CK_EWP_LOAD && (in->input < 0 || in->input >= p->nin ||
                                        p->in[in->input] != in->dtype))
            return ck_err_internal(err, "ew program: ins %d loads %d", k,
                                   in->input);
        if (in->kind == CK_EWP_OP && !supported(in->op, in->compute))
            return ck_err_internal(err, "ew program: ins %d: op %d in %s", k,
                                   (int)in->op, ck_dtype_name(in->compute));
    }

    put(&b, "%s", prelude);
    put(&b, "__device__ __forceinline__ int ck_refuse(int *err) "
            "{ atomicExch(err, 1); return 0; }\n");
    put(&b, "struct ck_box { long long n;");
    if (general && p->ndim > 0)
        put(&b, " long long shape[%d]; long long stride[%d][%d];", p->ndim,
            p->nin, p->ndim);
    put(&b, " };\n");
    put(&b, "extern \"C\" __global__ void " CK_CUDA_EW_KERNEL "(ck_box box");
    for (int k = 0; k < p->nin; k++)
        put(&b, ", const %s *__restrict__ in%d", ctype(p->in[k]), k);
    put(&b, ", %s *__restrict__ out, int *err)\n{\n",
        ctype(p->ins[p->result].dtype));
    put(&b, "  (void)err;\n"
            "  for (long long i = (long long)blockIdx.x * blockDim.x + "
            "threadIdx.x; i < box.n;\n"
            "       i += (long long)gridDim.x * blockDim.x) {\n");
    if (general && p->ndim > 0) {
        put(&b, "    long long off[%d] = {0}, r = i;\n", p->nin);
        put(&b,
            "    for (int d = %d; d >= 0; d--) {\n"
            "      long long j = r %% box.shape[d];\n"
            "      r /= box.shape[d];\n",
            p->ndim - 1);
        for (int k = 0; k < p->nin; k++)
            if (!p->contiguous[k])
                put(&b, "      off[%d] += j * box.stride[%d][d];\n", k, k);
        put(&b, "    }\n");
    }
    for (int k = 0; k < p->n; k++) {
        const ck_ewp_ins *in = &p->ins[k];
        char v[16];
        put(&b, "    const %s v%d = ", ctype(in->dtype), k);
        switch (in->kind) {
        case CK_EWP_LOAD:
            if (p->contiguous[in->input] || !general || p->ndim == 0)
                put(&b, "in%d[i]", in->input);
            else
                put(&b, "in%d[off[%d]]", in->input, in->input);
            break;
        case CK_EWP_CONST:
            if (ck_dtype_is_float(in->dtype))
                put(&b, "(%s)%.17g", ctype(in->dtype), in->value);
            else if (in->dtype == CK_BOOL)
                put(&b, "(unsigned char)%d", in->value != 0);
            else if (is_sint(in->dtype))
                put(&b, "(%s)%lldLL", ctype(in->dtype), (long long)in->value);
            else
                put(&b, "(%s)%lluULL", ctype(in->dtype),
                    (unsigned long long)in->value);
            break;
        case CK_EWP_CAST:
            snprintf(v, sizeof v, "v%d", in->arg[0]);
            cast(&b, in->dtype, p->ins[in->arg[0]].dtype, v);
            break;
        case CK_EWP_OP:
            put(&b, "(%s)(", ctype(in->dtype));
            expr(&b, in);
            put(&b, ")");
            break;
        }
        put(&b, ";\n");
    }
    put(&b, "    out[i] = v%d;\n  }\n}\n", p->result);
    if (b.oom) {
        free(b.s);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    *src = b.s;
    return CK_OK;
}
