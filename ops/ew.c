/*
 * ops/ew.c - elementwise ops: the name table and NumPy 1.24's type rules.
 * Which dtype the operands are converted to and which dtype comes out is
 * decided here, once per op; the kernels (backends/cpu/ew.c) only compute.
 * Nothing here touches data.
 *
 * NumPy has float16 and chunkctl does not.  Where NumPy 1.24 picks float16
 * (sqrt, exp, ..., floor, ceil of bool, int8 and uint8; round of bool) we
 * pick float32, the nearest type that holds every such result.
 */
#include <math.h>
#include <string.h>

#include "ops/ew.h"

static const struct {
    const char *name;
    int arity;
} ops[CK_EW_COUNT] = {
    [CK_EW_NEGATIVE] = {"negative", 1},
    [CK_EW_ABS] = {"abs", 1},
    [CK_EW_SQRT] = {"sqrt", 1},
    [CK_EW_EXP] = {"exp", 1},
    [CK_EW_LOG] = {"log", 1},
    [CK_EW_LOG1P] = {"log1p", 1},
    [CK_EW_EXPM1] = {"expm1", 1},
    [CK_EW_SIN] = {"sin", 1},
    [CK_EW_COS] = {"cos", 1},
    [CK_EW_TAN] = {"tan", 1},
    [CK_EW_TANH] = {"tanh", 1},
    [CK_EW_FLOOR] = {"floor", 1},
    [CK_EW_CEIL] = {"ceil", 1},
    [CK_EW_ROUND] = {"round", 1},
    [CK_EW_ISNAN] = {"isnan", 1},
    [CK_EW_ISFINITE] = {"isfinite", 1},
    [CK_EW_LOGICAL_NOT] = {"logical_not", 1},
    [CK_EW_ADD] = {"add", 2},
    [CK_EW_SUBTRACT] = {"subtract", 2},
    [CK_EW_MULTIPLY] = {"multiply", 2},
    [CK_EW_DIVIDE] = {"divide", 2},
    [CK_EW_POWER] = {"power", 2},
    [CK_EW_MINIMUM] = {"minimum", 2},
    [CK_EW_MAXIMUM] = {"maximum", 2},
    [CK_EW_LESS] = {"less", 2},
    [CK_EW_LESS_EQUAL] = {"less_equal", 2},
    [CK_EW_GREATER] = {"greater", 2},
    [CK_EW_GREATER_EQUAL] = {"greater_equal", 2},
    [CK_EW_EQUAL] = {"equal", 2},
    [CK_EW_NOT_EQUAL] = {"not_equal", 2},
    [CK_EW_LOGICAL_AND] = {"logical_and", 2},
    [CK_EW_LOGICAL_OR] = {"logical_or", 2},
    [CK_EW_WHERE] = {"where", 3},
    [CK_EW_CLIP] = {"clip", 3},
};

const char *ck_ew_name(ck_ew_op op)
{
    return (unsigned)op < CK_EW_COUNT ? ops[op].name : NULL;
}

int ck_ew_lookup(const char *name, ck_ew_op *op)
{
    for (int i = 0; i < CK_EW_COUNT; i++)
        if (strcmp(name, ops[i].name) == 0) {
            *op = (ck_ew_op)i;
            return 1;
        }
    return 0;
}

int ck_ew_arity(ck_ew_op op)
{
    return (unsigned)op < CK_EW_COUNT ? ops[op].arity : 0;
}

/* ---- promotion (numpy/core/src/multiarray/convert_datatype.c) ---- */

static int is_unsigned(ck_dtype t)
{
    return t >= CK_U8 && t <= CK_U64;
}

/* NumPy's "simplified kind ordering": bool < integers < floats.  Value-based
 * casting applies only when no scalar is of a higher kind than every array. */
static int kind(ck_dtype t)
{
    return t == CK_BOOL ? 0 : ck_dtype_is_float(t) ? 2 : 1;
}

static ck_dtype to_signed(ck_dtype t)
{
    switch (t) {
    case CK_U8:
        return CK_I8;
    case CK_U16:
        return CK_I16;
    case CK_U32:
        return CK_I32;
    case CK_U64:
        return CK_I64;
    default:
        return t;
    }
}

static ck_dtype signed_of_size(size_t size)
{
    switch (size) {
    case 1:
        return CK_I8;
    case 2:
        return CK_I16;
    case 4:
        return CK_I32;
    default:
        return CK_I64;
    }
}

/* np.promote_types for the eleven dtypes. */
static ck_dtype promote(ck_dtype a, ck_dtype b)
{
    size_t sa = ck_dtype_size(a), sb = ck_dtype_size(b);

    if (a == b || b == CK_BOOL)
        return a;
    if (a == CK_BOOL)
        return b;
    if (ck_dtype_is_float(a) || ck_dtype_is_float(b)) {
        /* float32 holds every 8- and 16-bit integer exactly, nothing
         * wider. */
        if (a == CK_F64 || b == CK_F64)
            return CK_F64;
        if (ck_dtype_is_float(a))
            return sb <= 2 ? CK_F32 : CK_F64;
        return sa <= 2 ? CK_F32 : CK_F64;
    }
    if (is_unsigned(a) == is_unsigned(b))
        return sa >= sb ? a : b;
    if (is_unsigned(a)) { /* make a the signed one */
        ck_dtype t = a;
        size_t s = sa;
        a = b, sa = sb;
        b = t, sb = s;
    }
    if (sa > sb)
        return a;
    return sb == 8 ? CK_F64 : signed_of_size(2 * sb);
}

/* NumPy's promote_types() with the "small unsigned" flags: a nonnegative
 * scalar that also fits the signed type of its size promotes with a signed
 * type as that signed type (int8 array + 1 stays int8). */
static ck_dtype promote_flagged(ck_dtype a, int a_small, ck_dtype b,
                                int b_small)
{
    if (a_small && b != CK_BOOL && !is_unsigned(b))
        return promote(to_signed(a), b);
    if (b_small && a != CK_BOOL && !is_unsigned(a))
        return promote(a, to_signed(b));
    return promote(a, b);
}

/* The type a Python scalar has on its own: int64 (uint64 from 2**63 up),
 * float64, bool. */
static ck_dtype own_type(const ck_ew_operand *o)
{
    if (o->dtype == CK_I64 && o->value >= 9223372036854775808.0)
        return CK_U64;
    return o->dtype;
}

/* np.min_scalar_type, and whether the result is "small unsigned".  Float
 * bounds are NumPy's own (65000 for float16, 3.4e38 for float32); float16
 * becomes float32, which promotes with the float32 or float64 array that
 * value-based casting of a float scalar implies to the same result. */
static ck_dtype min_scalar_type(const ck_ew_operand *o, int *small)
{
    double v = o->value;

    *small = 0;
    if (o->dtype == CK_BOOL)
        return CK_BOOL;
    if (ck_dtype_is_float(o->dtype)) /* inf and NaN: float16 */
        return isfinite(v) && fabs(v) >= 3.4e38 ? CK_F64 : CK_F32;
    if (v >= 0) {
        static const struct {
            double max, small_max;
            ck_dtype t;
        } u[] = {
            {255.0, 127.0, CK_U8},
            {65535.0, 32767.0, CK_U16},
            {4294967295.0, 2147483647.0, CK_U32},
        };
        for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
            if (v <= u[i].max) {
                *small = v <= u[i].small_max;
                return u[i].t;
            }
        *small = v < 9223372036854775808.0;
        return CK_U64;
    }
    if (v >= -128.0)
        return CK_I8;
    if (v >= -32768.0)
        return CK_I16;
    if (v >= -2147483648.0)
        return CK_I32;
    return CK_I64;
}

static ck_code check_operand(ck_ew_op op, int i, const ck_ew_operand *o,
                             ck_err *err)
{
    if (o->dtype <= CK_DT_INVALID || o->dtype >= CK_DT_COUNT)
        return ck_err_set(err, CK_EUSAGE, "%s: operand %d has no dtype",
                          ck_ew_name(op), i + 1);
    if (!o->is_scalar || ck_dtype_is_float(o->dtype) || o->dtype == CK_BOOL)
        return CK_OK;
    /* An integer scalar must fit int64 or uint64; NumPy makes an object
     * array of anything bigger. */
    if (!(o->value == floor(o->value) && o->value >= -9223372036854775808.0 &&
          o->value < 18446744073709551616.0))
        return ck_err_set(err, CK_EUSAGE,
                          "%s: integer scalar %g does not fit int64 or uint64",
                          ck_ew_name(op), o->value);
    return CK_OK;
}

/* Whether Python scalars are judged by value: only when no scalar is of a
 * higher kind than every array (should_use_min_scalar). */
static int use_min_scalar(int n, const ck_ew_operand *in)
{
    int max_array = -1, max_scalar = -1;

    for (int i = 0; i < n; i++) {
        int k = kind(in[i].dtype);
        if (in[i].is_scalar)
            max_scalar = k > max_scalar ? k : max_scalar;
        else
            max_array = k > max_array ? k : max_array;
    }
    return max_array >= 0 && max_scalar >= 0 && max_array >= max_scalar;
}

/* np.result_type of n operands, with NumPy 1.24's value-based casting of
 * Python scalars (PyArray_ResultType). */
static ck_dtype result_type(int n, const ck_ew_operand *in)
{
    int use_min = use_min_scalar(n, in);
    ck_dtype ret = CK_DT_INVALID;
    int ret_small = 0;

    for (int i = 0; i < n; i++) {
        int small = 0;
        ck_dtype t = in[i].dtype;
        if (in[i].is_scalar)
            t = use_min ? min_scalar_type(&in[i], &small) : own_type(&in[i]);
        if (ret == CK_DT_INVALID) {
            ret = t;
            ret_small = small;
        } else {
            ret = promote_flagged(t, small, ret, ret_small);
            ret_small = small && ret_small;
        }
    }
    return ret;
}

/* np.can_cast(from, to, "safe") for the eleven dtypes. */
static int can_cast(ck_dtype from, ck_dtype to)
{
    return promote(from, to) == to;
}

/* The dtype NumPy's default type resolver picks for power: the first of
 * its loops, in NumPy's order, that every operand casts to safely, Python
 * scalars judged by value (can_cast_scalar_to).  This differs from
 * result_type: uint8 array ** 256 runs the int16 loop, not uint16, since
 * the int16 loop comes first.  float16 (NumPy's next loop after the
 * integers) is skipped: whatever fits it fits float32, the next one. */
static ck_dtype power_loop(const ck_ew_operand *in)
{
    static const ck_dtype loops[] = {CK_I8,  CK_U8,  CK_I16, CK_U16, CK_I32,
                                     CK_U32, CK_I64, CK_U64, CK_F32, CK_F64};
    int use_min = use_min_scalar(2, in);

    for (size_t l = 0; l < sizeof loops / sizeof loops[0]; l++) {
        int ok = 1;
        for (int i = 0; i < 2 && ok; i++) {
            int small = 0;
            ck_dtype t = in[i].dtype;
            if (in[i].is_scalar && use_min) {
                t = min_scalar_type(&in[i], &small);
                if (small && !is_unsigned(loops[l]))
                    t = to_signed(t);
            } else if (in[i].is_scalar) {
                t = own_type(&in[i]);
            }
            ok = can_cast(t, loops[l]);
        }
        if (ok)
            return loops[l];
    }
    return CK_F64; /* not reached: everything casts to float64 */
}

/* The float type of a float-only ufunc (sqrt, exp, floor, ...) on an
 * operand of dtype t: the first of float16, float32, float64 that t casts
 * to safely, with float32 standing in for float16. */
static ck_dtype float_for(ck_dtype t)
{
    if (ck_dtype_is_float(t))
        return t;
    return ck_dtype_size(t) >= 4 ? CK_F64 : CK_F32;
}

ck_code ck_ew_types(ck_ew_op op, int n, const ck_ew_operand *in,
                    ck_dtype *compute, ck_dtype *result, ck_err *err)
{
    ck_dtype p, c, r;

    if ((unsigned)op >= CK_EW_COUNT)
        return ck_err_set(err, CK_EUSAGE, "elementwise op %d does not exist",
                          (int)op);
    if (n != ops[op].arity)
        return ck_err_set(err, CK_EUSAGE, "%s takes %d operand%s, not %d",
                          ops[op].name, ops[op].arity,
                          ops[op].arity == 1 ? "" : "s", n);
    for (int i = 0; i < n; i++)
        CK_TRY(check_operand(op, i, &in[i], err));
    /* where(cond, a, b): cond is only ever read as bool. */
    p = op == CK_EW_WHERE ? result_type(2, in + 1) : result_type(n, in);
    c = r = p;
    switch (op) {
    case CK_EW_NEGATIVE:
        if (p == CK_BOOL)
            return ck_err_set(err, CK_EUSAGE,
                              "negative: not defined for bool, use "
                              "logical_not");
        break;
    case CK_EW_SUBTRACT:
        if (p == CK_BOOL)
            return ck_err_set(err, CK_EUSAGE,
                              "subtract: not defined for bool, use "
                              "logical_xor or not_equal");
        break;
    case CK_EW_SQRT:
    case CK_EW_EXP:
    case CK_EW_LOG:
    case CK_EW_LOG1P:
    case CK_EW_EXPM1:
    case CK_EW_SIN:
    case CK_EW_COS:
    case CK_EW_TAN:
    case CK_EW_TANH:
    case CK_EW_FLOOR: /* NumPy 1.24 has float loops only, ints included */
    case CK_EW_CEIL:
        c = r = float_for(p);
        break;
    case CK_EW_ROUND: /* np.round keeps integers, as np.around does */
        if (p == CK_BOOL)
            c = r = CK_F32;
        break;
    case CK_EW_DIVIDE:
        if (!ck_dtype_is_float(p))
            c = r = CK_F64;
        break;
    case CK_EW_POWER: /* no bool loop, and a different resolver */
        c = r = power_loop(in);
        break;
    case CK_EW_ISNAN:
    case CK_EW_ISFINITE:
    case CK_EW_LESS:
    case CK_EW_LESS_EQUAL:
    case CK_EW_GREATER:
    case CK_EW_GREATER_EQUAL:
    case CK_EW_EQUAL:
    case CK_EW_NOT_EQUAL:
        r = CK_BOOL;
        break;
    case CK_EW_LOGICAL_NOT:
    case CK_EW_LOGICAL_AND:
    case CK_EW_LOGICAL_OR:
        /* NaN and any nonzero are true, as ck_dtype_convert makes them. */
        c = r = CK_BOOL;
        break;
    default: /* abs, add, multiply, minimum, maximum, where */
        break;
    }
    *compute = c;
    *result = r;
    return CK_OK;
}
