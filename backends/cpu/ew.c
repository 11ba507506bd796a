/*
 * backends/cpu/ew.c - elementwise kernels: one tight loop per (op, compute
 * dtype), chosen once per call from a table.  Operands arrive already in
 * the compute dtype (ops/ew.c decides it, with NumPy's rules); the kernels
 * never convert, they compute and write the result dtype.
 *
 * Integer arithmetic wraps like NumPy's: it is done in an unsigned type of
 * at least 32 bits (signed overflow is undefined in C, and uint8/uint16
 * would promote to int) and truncated back.  Bool is a byte holding 0 or 1.
 */
#include <math.h>
#include <stdint.h>

#include "backends/cpu/cpu.h"

/* Runs one run; nonzero means "negative integer exponent" (power only). */
typedef int kern(const ck_ew_args *a);

/* Names for error messages only; the op table proper is ops/ew.c, which a
 * backend may not call. */
static const char *const op_names[CK_EW_COUNT] = {
    [CK_EW_NEGATIVE] = "negative",
    [CK_EW_ABS] = "abs",
    [CK_EW_SQRT] = "sqrt",
    [CK_EW_EXP] = "exp",
    [CK_EW_LOG] = "log",
    [CK_EW_LOG1P] = "log1p",
    [CK_EW_EXPM1] = "expm1",
    [CK_EW_SIN] = "sin",
    [CK_EW_COS] = "cos",
    [CK_EW_TAN] = "tan",
    [CK_EW_TANH] = "tanh",
    [CK_EW_FLOOR] = "floor",
    [CK_EW_CEIL] = "ceil",
    [CK_EW_ROUND] = "round",
    [CK_EW_ISNAN] = "isnan",
    [CK_EW_ISFINITE] = "isfinite",
    [CK_EW_LOGICAL_NOT] = "logical_not",
    [CK_EW_ADD] = "add",
    [CK_EW_SUBTRACT] = "subtract",
    [CK_EW_MULTIPLY] = "multiply",
    [CK_EW_DIVIDE] = "divide",
    [CK_EW_POWER] = "power",
    [CK_EW_MINIMUM] = "minimum",
    [CK_EW_MAXIMUM] = "maximum",
    [CK_EW_LESS] = "less",
    [CK_EW_LESS_EQUAL] = "less_equal",
    [CK_EW_GREATER] = "greater",
    [CK_EW_GREATER_EQUAL] = "greater_equal",
    [CK_EW_EQUAL] = "equal",
    [CK_EW_NOT_EQUAL] = "not_equal",
    [CK_EW_LOGICAL_AND] = "logical_and",
    [CK_EW_LOGICAL_OR] = "logical_or",
    [CK_EW_WHERE] = "where",
    [CK_EW_CLIP] = "clip",
};

/* ---- per-element expressions: (T, W, x[, y]), T the element type, W the
 * unsigned type integer arithmetic is done in ---- */

/* float32 data gets the float32 libm function: sqrtf, expf, ... */
#define FM(fn, x) _Generic((x), float : fn##f, default : fn)(x)

#define IDENT(T, W, x) (x)
#define NEG_INT(T, W, x) ((T)((W)0 - (W)(x)))
#define NEG_FLT(T, W, x) (-(x))
#define ABS_SINT(T, W, x) ((x) < 0 ? NEG_INT(T, W, x) : (x))
#define ABS_FLT(T, W, x) FM(fabs, x)
#define SQRT_F(T, W, x) FM(sqrt, x)
#define EXP_F(T, W, x) FM(exp, x)
#define LOG_F(T, W, x) FM(log, x)
#define LOG1P_F(T, W, x) FM(log1p, x)
#define EXPM1_F(T, W, x) FM(expm1, x)
#define SIN_F(T, W, x) FM(sin, x)
#define COS_F(T, W, x) FM(cos, x)
#define TAN_F(T, W, x) FM(tan, x)
#define TANH_F(T, W, x) FM(tanh, x)
#define FLOOR_F(T, W, x) FM(floor, x)
#define CEIL_F(T, W, x) FM(ceil, x)
/* rint rounds half to even in the default rounding mode, as np.round. */
#define ROUND_F(T, W, x) FM(rint, x)
#define ISNAN_F(T, W, x) (isnan(x) != 0)
#define ISFIN_F(T, W, x) (isfinite(x) != 0)
#define FALSE_(T, W, x) ((void)(x), 0)
#define TRUE_(T, W, x) ((void)(x), 1)
#define NOT_(T, W, x) ((x) == 0)

#define ADD_INT(T, W, x, y) ((T)((W)(x) + (W)(y)))
#define SUB_INT(T, W, x, y) ((T)((W)(x) - (W)(y)))
#define MUL_INT(T, W, x, y) ((T)((W)(x) * (W)(y)))
#define POW_INT(T, W, x, y) ((T)ipow_##W((W)(x), (W)(y)))
#define ADD_FLT(T, W, x, y) ((x) + (y))
#define SUB_FLT(T, W, x, y) ((x) - (y))
#define MUL_FLT(T, W, x, y) ((x) * (y))
#define DIV_FLT(T, W, x, y) ((x) / (y))
#define POW_FLT(T, W, x, y) _Generic((x), float : powf, default : pow)(x, y)
#define OR_(T, W, x, y) ((x) | (y))
#define AND_(T, W, x, y) ((x) & (y))
#define MIN_INT(T, W, x, y) ((x) <= (y) ? (x) : (y))
#define MAX_INT(T, W, x, y) ((x) >= (y) ? (x) : (y))
/* NaN in either operand wins, as in NumPy's loops. */
#define MIN_FLT(T, W, x, y) (((x) <= (y) || isnan(x)) ? (x) : (y))
#define MAX_FLT(T, W, x, y) (((x) >= (y) || isnan(x)) ? (x) : (y))
#define LT_(T, W, x, y) ((x) < (y))
#define LE_(T, W, x, y) ((x) <= (y))
#define GT_(T, W, x, y) ((x) > (y))
#define GE_(T, W, x, y) ((x) >= (y))
#define EQ_(T, W, x, y) ((x) == (y))
#define NE_(T, W, x, y) ((x) != (y))
#define LAND_(T, W, x, y) (((x) != 0) & ((y) != 0))
#define LOR_(T, W, x, y) (((x) != 0) | ((y) != 0))

/* Repeated squaring, wrapping modulo 2^32 or 2^64; the caller truncates to
 * the element width, which commutes with the products. */
static inline uint32_t ipow_uint32_t(uint32_t b, uint32_t e)
{
    uint32_t r = 1;

    for (; e; e >>= 1, b *= b)
        if (e & 1)
            r *= b;
    return r;
}

static inline uint64_t ipow_uint64_t(uint64_t b, uint64_t e)
{
    uint64_t r = 1;

    for (; e; e >>= 1, b *= b)
        if (e & 1)
            r *= b;
    return r;
}

/* ---- loop shapes.  Each stride combination gets its own loop, so that
 * the common ones are plain unit-stride loops the compiler vectorises; a
 * stride-0 operand is read once, before the loop (out may alias it). ---- */

#define RES_same(T) T
#define RES_pred(T) uint8_t

#define LOOP_un(fn, T, W, R, E)                                                \
    static int fn(const ck_ew_args *a)                                         \
    {                                                                          \
        const T *x = a->in[0];                                                 \
        R *o = a->out;                                                         \
        size_t n = a->n;                                                       \
        if (a->stride[0]) {                                                    \
            for (size_t i = 0; i < n; i++)                                     \
                o[i] = (R)E(T, W, x[i]);                                       \
        } else {                                                               \
            const R v = (R)E(T, W, x[0]);                                      \
            for (size_t i = 0; i < n; i++)                                     \
                o[i] = v;                                                      \
        }                                                                      \
        return 0;                                                              \
    }

#define BIN_BODY(T, W, R, E)                                                   \
    const T *x = a->in[0], *y = a->in[1];                                      \
    R *o = a->out;                                                             \
    size_t n = a->n;                                                           \
    if (a->stride[0] && a->stride[1]) {                                        \
        for (size_t i = 0; i < n; i++)                                         \
            o[i] = (R)E(T, W, x[i], y[i]);                                     \
    } else if (a->stride[0]) {                                                 \
        const T yv = y[0];                                                     \
        for (size_t i = 0; i < n; i++)                                         \
            o[i] = (R)E(T, W, x[i], yv);                                       \
    } else if (a->stride[1]) {                                                 \
        const T xv = x[0];                                                     \
        for (size_t i = 0; i < n; i++)                                         \
            o[i] = (R)E(T, W, xv, y[i]);                                       \
    } else {                                                                   \
        const R v = (R)E(T, W, x[0], y[0]);                                    \
        for (size_t i = 0; i < n; i++)                                         \
            o[i] = v;                                                          \
    }                                                                          \
    return 0;

#define LOOP_bin(fn, T, W, R, E)                                               \
    static int fn(const ck_ew_args *a)                                         \
    {                                                                          \
        BIN_BODY(T, W, R, E)                                                   \
    }

/* NumPy refuses the whole call ("Integers to negative integer powers are
 * not allowed"), so the exponents are checked before anything is written. */
#define LOOP_powneg(fn, T, W, R, E)                                            \
    static int fn(const ck_ew_args *a)                                         \
    {                                                                          \
        const T *e = a->in[1];                                                 \
        size_t ne = a->stride[1] ? a->n : 1;                                   \
        for (size_t i = 0; i < ne; i++)                                        \
            if (e[i] < 0)                                                      \
                return 1;                                                      \
        BIN_BODY(T, W, R, E)                                                   \
    }

/* where(cond, x, y): a select; the strides are general here. */
#define LOOP_where(fn, T, W, R, E)                                             \
    static int fn(const ck_ew_args *a)                                         \
    {                                                                          \
        const uint8_t *c = a->in[0];                                           \
        const T *x = a->in[1], *y = a->in[2];                                  \
        R *o = a->out;                                                         \
        size_t sc = (size_t)a->stride[0], sx = (size_t)a->stride[1],           \
               sy = (size_t)a->stride[2];                                      \
        for (size_t i = 0; i < a->n; i++)                                      \
            o[i] = c[i * sc] ? x[i * sx] : y[i * sy];                          \
        return 0;                                                              \
    }

/* clip(x, lo, hi) as NumPy's: minimum(maximum(x, lo), hi), NaN wins. */
#define CLIP_INT(T, W, x, l, h) MIN_INT(T, W, MAX_INT(T, W, x, l), h)
#define CLIP_FLT(T, W, x, l, h) MIN_FLT(T, W, MAX_FLT(T, W, x, l), h)
#define LOOP_clip(fn, T, W, R, E)                                              \
    static int fn(const ck_ew_args *a)                                         \
    {                                                                          \
        const T *x = a->in[0], *l = a->in[1], *h = a->in[2];                   \
        R *o = a->out;                                                         \
        size_t sx = (size_t)a->stride[0], sl = (size_t)a->stride[1],           \
               sh = (size_t)a->stride[2];                                      \
        for (size_t i = 0; i < a->n; i++) {                                    \
            T v = x[i * sx], lo = l[i * sl], hi = h[i * sh];                   \
            o[i] = E(T, W, v, lo, hi);                                         \
        }                                                                      \
        return 0;                                                              \
    }

/* ---- the matrix.  A type list calls M(suffix, dtype, T, W, ...) per
 * type; a kernel row is (shape, op, name, expression, result). ---- */

#define SINTS(M, ...)                                                          \
    M(i8, CK_I8, int8_t, uint32_t, __VA_ARGS__)                                \
    M(i16, CK_I16, int16_t, uint32_t, __VA_ARGS__)                             \
    M(i32, CK_I32, int32_t, uint32_t, __VA_ARGS__)                             \
    M(i64, CK_I64, int64_t, uint64_t, __VA_ARGS__)
#define UINTS(M, ...)                                                          \
    M(u8, CK_U8, uint8_t, uint32_t, __VA_ARGS__)                               \
    M(u16, CK_U16, uint16_t, uint32_t, __VA_ARGS__)                            \
    M(u32, CK_U32, uint32_t, uint32_t, __VA_ARGS__)                            \
    M(u64, CK_U64, uint64_t, uint64_t, __VA_ARGS__)
#define FLOATS(M, ...)                                                         \
    M(f32, CK_F32, float, float, __VA_ARGS__)                                  \
    M(f64, CK_F64, double, double, __VA_ARGS__)
#define BOOLS(M, ...) M(b, CK_BOOL, uint8_t, uint32_t, __VA_ARGS__)
#define INTS(M, ...) SINTS(M, __VA_ARGS__) UINTS(M, __VA_ARGS__)
#define NUMS(M, ...) INTS(M, __VA_ARGS__) FLOATS(M, __VA_ARGS__)
#define ALL(M, ...) BOOLS(M, __VA_ARGS__) NUMS(M, __VA_ARGS__)

#define FLOAT_UN(M, op, name, E) FLOATS(M, un, op, name, E, same)
#define WHOLE_UN(M, op, name, E)                                               \
    FLOAT_UN(M, op, name, E) INTS(M, un, op, name, IDENT, same)
#define PRED2(M, op, name, E) ALL(M, bin, op, name, E, pred)

#define KERNELS(M)                                                             \
    INTS(M, un, CK_EW_NEGATIVE, negative, NEG_INT, same)                       \
    FLOATS(M, un, CK_EW_NEGATIVE, negative, NEG_FLT, same)                     \
    SINTS(M, un, CK_EW_ABS, abs, ABS_SINT, same)                               \
    UINTS(M, un, CK_EW_ABS, abs, IDENT, same)                                  \
    BOOLS(M, un, CK_EW_ABS, abs, IDENT, same)                                  \
    FLOATS(M, un, CK_EW_ABS, abs, ABS_FLT, same)                               \
    FLOAT_UN(M, CK_EW_SQRT, sqrt, SQRT_F)                                      \
    FLOAT_UN(M, CK_EW_EXP, exp, EXP_F)                                         \
    FLOAT_UN(M, CK_EW_LOG, log, LOG_F)                                         \
    FLOAT_UN(M, CK_EW_LOG1P, log1p, LOG1P_F)                                   \
    FLOAT_UN(M, CK_EW_EXPM1, expm1, EXPM1_F)                                   \
    FLOAT_UN(M, CK_EW_SIN, sin, SIN_F)                                         \
    FLOAT_UN(M, CK_EW_COS, cos, COS_F)                                         \
    FLOAT_UN(M, CK_EW_TAN, tan, TAN_F)                                         \
    FLOAT_UN(M, CK_EW_TANH, tanh, TANH_F)                                      \
    WHOLE_UN(M, CK_EW_FLOOR, floor, FLOOR_F)                                   \
    WHOLE_UN(M, CK_EW_CEIL, ceil, CEIL_F)                                      \
    WHOLE_UN(M, CK_EW_ROUND, round, ROUND_F)                                   \
    FLOATS(M, un, CK_EW_ISNAN, isnan, ISNAN_F, pred)                           \
    INTS(M, un, CK_EW_ISNAN, isnan, FALSE_, pred)                              \
    BOOLS(M, un, CK_EW_ISNAN, isnan, FALSE_, pred)                             \
    FLOATS(M, un, CK_EW_ISFINITE, isfinite, ISFIN_F, pred)                     \
    INTS(M, un, CK_EW_ISFINITE, isfinite, TRUE_, pred)                         \
    BOOLS(M, un, CK_EW_ISFINITE, isfinite, TRUE_, pred)                        \
    ALL(M, un, CK_EW_LOGICAL_NOT, logical_not, NOT_, pred)                     \
    INTS(M, bin, CK_EW_ADD, add, ADD_INT, same)                                \
    FLOATS(M, bin, CK_EW_ADD, add, ADD_FLT, same)                              \
    BOOLS(M, bin, CK_EW_ADD, add, OR_, same)                                   \
    INTS(M, bin, CK_EW_SUBTRACT, subtract, SUB_INT, same)                      \
    FLOATS(M, bin, CK_EW_SUBTRACT, subtract, SUB_FLT, same)                    \
    INTS(M, bin, CK_EW_MULTIPLY, multiply, MUL_INT, same)                      \
    FLOATS(M, bin, CK_EW_MULTIPLY, multiply, MUL_FLT, same)                    \
    BOOLS(M, bin, CK_EW_MULTIPLY, multiply, AND_, same)                        \
    FLOATS(M, bin, CK_EW_DIVIDE, divide, DIV_FLT, same)                        \
    SINTS(M, powneg, CK_EW_POWER, power, POW_INT, same)                        \
    UINTS(M, bin, CK_EW_POWER, power, POW_INT, same)                           \
    FLOATS(M, bin, CK_EW_POWER, power, POW_FLT, same)                          \
    INTS(M, bin, CK_EW_MINIMUM, minimum, MIN_INT, same)                        \
    BOOLS(M, bin, CK_EW_MINIMUM, minimum, MIN_INT, same)                       \
    FLOATS(M, bin, CK_EW_MINIMUM, minimum, MIN_FLT, same)                      \
    INTS(M, bin, CK_EW_MAXIMUM, maximum, MAX_INT, same)                        \
    BOOLS(M, bin, CK_EW_MAXIMUM, maximum, MAX_INT, same)                       \
    FLOATS(M, bin, CK_EW_MAXIMUM, maximum, MAX_FLT, same)                      \
    PRED2(M, CK_EW_LESS, less, LT_)                                            \
    PRED2(M, CK_EW_LESS_EQUAL, less_equal, LE_)                                \
    PRED2(M, CK_EW_GREATER, greater, GT_)                                      \
    PRED2(M, CK_EW_GREATER_EQUAL, greater_equal, GE_)                          \
    PRED2(M, CK_EW_EQUAL, equal, EQ_)                                          \
    PRED2(M, CK_EW_NOT_EQUAL, not_equal, NE_)                                  \
    PRED2(M, CK_EW_LOGICAL_AND, logical_and, LAND_)                            \
    PRED2(M, CK_EW_LOGICAL_OR, logical_or, LOR_)                               \
    ALL(M, where, CK_EW_WHERE, where, IDENT, same)                             \
    INTS(M, clip, CK_EW_CLIP, clip, CLIP_INT, same)                            \
    BOOLS(M, clip, CK_EW_CLIP, clip, CLIP_INT, same)                           \
    FLOATS(M, clip, CK_EW_CLIP, clip, CLIP_FLT, same)

#define DEFINE(s, dt, T, W, shape, op, name, E, res)                           \
    LOOP_##shape(name##_##s, T, W, RES_##res(T), E)
#define ENTRY(s, dt, T, W, shape, op, name, E, res) [op][dt] = name##_##s,

KERNELS(DEFINE)

static kern *const kernels[CK_EW_COUNT][CK_DT_COUNT] = {KERNELS(ENTRY)};

static int is_predicate(ck_ew_op op)
{
    return (op >= CK_EW_ISNAN && op <= CK_EW_LOGICAL_NOT) ||
           (op >= CK_EW_LESS && op <= CK_EW_LOGICAL_OR);
}

ck_code ck_cpu_ew(ck_be_ctx *ctx, const ck_ew_args *a, ck_err *err)
{
    int arity;
    kern *k;

    (void)ctx;
    if ((unsigned)a->op >= CK_EW_COUNT)
        return ck_err_set(err, CK_ENOTSUP, "elementwise op %d does not exist",
                          (int)a->op);
    if ((unsigned)a->compute >= CK_DT_COUNT ||
        !(k = kernels[a->op][a->compute]))
        return ck_err_set(err, CK_ENOTSUP, "%s: no cpu kernel for %s",
                          op_names[a->op], ck_dtype_name(a->compute));
    if (a->result != (is_predicate(a->op) ? CK_BOOL : a->compute))
        return ck_err_set(err, CK_ENOTSUP, "%s: no cpu kernel from %s to %s",
                          op_names[a->op], ck_dtype_name(a->compute),
                          ck_dtype_name(a->result));
    arity = a->op < CK_EW_ADD ? 1 : a->op < CK_EW_WHERE ? 2 : 3;
    for (int i = 0; i < arity; i++)
        if (a->stride[i] != 0 && a->stride[i] != 1)
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: operand %d has stride %d (only 0 or 1)",
                              op_names[a->op], i + 1, a->stride[i]);
    if (a->n == 0)
        return CK_OK;
    if (k(a))
        return ck_err_set(err, CK_EUSAGE,
                          "power: integers to negative integer powers are "
                          "not allowed (%s)",
                          ck_dtype_name(a->compute));
    return CK_OK;
}
