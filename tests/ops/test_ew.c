/*
 * tests/ops/test_ew.c - suite "ew": ops/ew.h (names, NumPy 1.24 type
 * rules) and the CPU kernels behind it (backends/cpu/cpu.h: ck_cpu_ew).
 * The expected dtypes and values come from NumPy 1.24.2, written to
 * tests/data/ops/ew_types.inc and ew_cases.inc by ew_gen.py there; the
 * cases here run as the executor will: ck_ew_types, convert the operands
 * to the compute dtype, one kernel call.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "ops/ew.h"

#define N 8

typedef struct ew_input {
    ck_dtype t;    /* of the array, or the scalar's CK_I64 / CK_F64 */
    int is_scalar; /* a Python scalar: v[0], stride 0 */
    double v[N];
} ew_input;

typedef struct ew_case {
    const char *op;
    ew_input in[3];
    ck_dtype want_t;
    double want[N];
    int inexact; /* libm and NumPy's SIMD loops may differ by an ulp */
} ew_case;

#include "tests/data/ops/ew_cases.inc"
#include "tests/data/ops/ew_types.inc"

TestSuite(ew, .description = "ops/ew.h and the cpu kernels, against NumPy");

/* NumPy's type chars, as in the .inc files. */
static ck_dtype from_char(char c)
{
    static const char chars[] = "?bhilBHILfd";
    static const ck_dtype t[] = {CK_BOOL, CK_I8,  CK_I16, CK_I32, CK_I64, CK_U8,
                                 CK_U16,  CK_U32, CK_U64, CK_F32, CK_F64};
    const char *p = strchr(chars, c);

    return p && c ? t[p - chars] : CK_DT_INVALID;
}

static ck_ew_op op_of(const char *name)
{
    ck_ew_op op;

    cr_assert(ck_ew_lookup(name, &op), "no op '%s'", name);
    return op;
}

static ck_ew_operand array_of(ck_dtype t)
{
    return (ck_ew_operand){.dtype = t};
}

static ck_ew_operand scalar_of(ck_dtype t, double v)
{
    return (ck_ew_operand){.dtype = t, .is_scalar = 1, .value = v};
}

static int is_compare(ck_ew_op op)
{
    return op >= CK_EW_LESS && op <= CK_EW_NOT_EQUAL;
}

/* Checks the result dtype (for comparisons, the compute dtype) against
 * NumPy's char; '-' means NumPy raises TypeError. */
static void check_types(ck_ew_op op, int n, const ck_ew_operand *in, char want,
                        const char *what)
{
    ck_dtype c = CK_DT_INVALID, r = CK_DT_INVALID;
    ck_err err = {0};
    ck_code rc = ck_ew_types(op, n, in, &c, &r, &err);

    if (want == '-') {
        cr_expect_eq(rc, CK_EUSAGE, "%s: numpy refuses, we gave %s", what,
                     ck_dtype_name(r));
        return;
    }
    cr_assert_eq(rc, CK_OK, "%s: %s", what, err.msg);
    if (is_compare(op)) {
        cr_expect_eq(r, CK_BOOL, "%s", what);
        cr_expect_eq(c, from_char(want), "%s: compute %s, numpy %c", what,
                     ck_dtype_name(c), want);
    } else {
        cr_expect_eq(r, from_char(want), "%s: %s, numpy %c", what,
                     ck_dtype_name(r), want);
    }
}

/* ---- names ---- */

Test(ew, names_round_trip)
{
    for (int i = 0; i < CK_EW_COUNT; i++) {
        ck_ew_op op = CK_EW_COUNT;
        const char *name = ck_ew_name((ck_ew_op)i);
        cr_assert(name, "op %d has no name", i);
        cr_assert(ck_ew_lookup(name, &op), "%s", name);
        cr_expect_eq(op, (ck_ew_op)i, "%s", name);
    }
}

Test(ew, lookup_of_unknown_name_fails)
{
    ck_ew_op op = CK_EW_ADD;

    cr_expect_not(ck_ew_lookup("nope", &op));
    cr_expect_not(ck_ew_lookup("", &op));
    cr_expect_not(ck_ew_lookup("ADD", &op));
    cr_expect_eq(op, CK_EW_ADD, "op is written only on success");
    cr_expect_null(ck_ew_name(CK_EW_COUNT));
    cr_expect_null(ck_ew_name((ck_ew_op)-1));
}

Test(ew, arity)
{
    cr_expect_eq(ck_ew_arity(CK_EW_NEGATIVE), 1);
    cr_expect_eq(ck_ew_arity(CK_EW_LOGICAL_NOT), 1);
    cr_expect_eq(ck_ew_arity(CK_EW_ADD), 2);
    cr_expect_eq(ck_ew_arity(CK_EW_LOGICAL_OR), 2);
    cr_expect_eq(ck_ew_arity(CK_EW_WHERE), 3);
    cr_expect_eq(ck_ew_arity(CK_EW_COUNT), 0);
    for (int i = 0; i < CK_EW_COUNT; i++)
        cr_expect_eq(ck_ew_arity((ck_ew_op)i),
                     i < CK_EW_ADD     ? 1
                     : i < CK_EW_WHERE ? 2
                                       : 3,
                     "%s", ck_ew_name((ck_ew_op)i));
}

/* ---- type rules: the NumPy tables ---- */

Test(ew, unary_types_follow_numpy)
{
    for (size_t i = 0; i < sizeof unary_types / sizeof unary_types[0]; i++) {
        ck_ew_op op = op_of(unary_types[i].op);
        for (int d = 0; unary_types[i].out[d]; d++) {
            ck_ew_operand in = array_of(from_char("?bhilBHILfd"[d]));
            char what[64];
            snprintf(what, sizeof what, "%s(%s)", unary_types[i].op,
                     ck_dtype_name(in.dtype));
            check_types(op, 1, &in, unary_types[i].out[d], what);
        }
    }
}

Test(ew, binary_types_follow_numpy)
{
    for (size_t i = 0; i < sizeof binary_types / sizeof binary_types[0]; i++) {
        const struct binary_row *row = &binary_types[i];
        ck_ew_op op = op_of(row->op);
        for (int d = 0; row->out[d]; d++) {
            ck_ew_operand in[3] = {array_of(CK_BOOL),
                                   array_of(from_char(row->a)),
                                   array_of(from_char("?bhilBHILfd"[d]))};
            int where = op == CK_EW_WHERE;
            char what[64];
            snprintf(what, sizeof what, "%s(%s, %s)", row->op,
                     ck_dtype_name(in[1].dtype), ck_dtype_name(in[2].dtype));
            check_types(op, where ? 3 : 2, where ? in : in + 1, row->out[d],
                        what);
        }
    }
}

Test(ew, scalar_types_are_value_based)
{
    for (size_t i = 0; i < sizeof scalar_types / sizeof scalar_types[0]; i++) {
        const struct scalar_row *row = &scalar_types[i];
        ck_ew_op op = op_of(row->op);
        for (int s = 0; row->out[s]; s++) {
            ck_ew_operand in[3] = {array_of(CK_BOOL)};
            ck_ew_operand sc = scalar_of(scalars[s].integral ? CK_I64 : CK_F64,
                                         scalars[s].value);
            int where = op == CK_EW_WHERE;
            char what[96];
            in[1] = row->scalar_first ? sc : array_of(from_char(row->a));
            in[2] = row->scalar_first ? array_of(from_char(row->a)) : sc;
            snprintf(what, sizeof what, "%s(%s%s, %s%s) [%g]", row->op,
                     in[1].is_scalar ? "scalar " : "",
                     ck_dtype_name(in[1].dtype),
                     in[2].is_scalar ? "scalar " : "",
                     ck_dtype_name(in[2].dtype), scalars[s].value);
            check_types(op, where ? 3 : 2, where ? in : in + 1, row->out[s],
                        what);
        }
    }
}

/* The rules ops/ew.h promises, one at a time, as NumPy 1.24 answers them:
 * np.result_type / the ufunc's output dtype (np.array([1], np.int32) + 1,
 * ...). */
Test(ew, the_documented_rules)
{
    static const struct {
        ck_ew_op op;
        ck_ew_operand a, b;
        ck_dtype compute, result;
    } cases[] = {
        {CK_EW_ADD, {CK_I32, 0, 0}, {CK_I64, 1, 1}, CK_I32, CK_I32},
        {CK_EW_ADD, {CK_I8, 0, 0}, {CK_I64, 1, 300}, CK_I16, CK_I16},
        {CK_EW_ADD, {CK_I8, 0, 0}, {CK_I64, 1, 200}, CK_I16, CK_I16},
        {CK_EW_ADD, {CK_I8, 0, 0}, {CK_I64, 1, 127}, CK_I8, CK_I8},
        {CK_EW_ADD, {CK_U8, 0, 0}, {CK_I64, 1, -1}, CK_I16, CK_I16},
        {CK_EW_ADD, {CK_U64, 0, 0}, {CK_I64, 1, -1}, CK_F64, CK_F64},
        {CK_EW_ADD, {CK_I32, 0, 0}, {CK_F64, 1, 1.5}, CK_F64, CK_F64},
        {CK_EW_ADD, {CK_F32, 0, 0}, {CK_F64, 1, 1.5}, CK_F32, CK_F32},
        {CK_EW_ADD, {CK_F32, 0, 0}, {CK_F64, 1, 1e39}, CK_F64, CK_F64},
        {CK_EW_ADD, {CK_BOOL, 0, 0}, {CK_I64, 1, 1}, CK_I64, CK_I64},
        {CK_EW_ADD, {CK_I16, 0, 0}, {CK_U16, 0, 0}, CK_I32, CK_I32},
        {CK_EW_ADD, {CK_I64, 0, 0}, {CK_U64, 0, 0}, CK_F64, CK_F64},
        {CK_EW_ADD, {CK_I16, 0, 0}, {CK_F32, 0, 0}, CK_F32, CK_F32},
        {CK_EW_ADD, {CK_I32, 0, 0}, {CK_F32, 0, 0}, CK_F64, CK_F64},
        {CK_EW_ADD, {CK_I64, 1, 1}, {CK_F64, 1, 2.5}, CK_F64, CK_F64},
        {CK_EW_ADD, {CK_I64, 1, 1}, {CK_I64, 1, 2}, CK_I64, CK_I64},
        {CK_EW_DIVIDE, {CK_I32, 0, 0}, {CK_I32, 0, 0}, CK_F64, CK_F64},
        {CK_EW_DIVIDE, {CK_BOOL, 0, 0}, {CK_U8, 0, 0}, CK_F64, CK_F64},
        {CK_EW_DIVIDE, {CK_F32, 0, 0}, {CK_I64, 1, 2}, CK_F32, CK_F32},
        {CK_EW_POWER, {CK_BOOL, 0, 0}, {CK_BOOL, 0, 0}, CK_I8, CK_I8},
        /* power has no result_type resolver: the int16 loop comes
         * before the uint16 one. */
        {CK_EW_POWER, {CK_U8, 0, 0}, {CK_I64, 1, 256}, CK_I16, CK_I16},
        {CK_EW_MINIMUM, {CK_U8, 0, 0}, {CK_I8, 0, 0}, CK_I16, CK_I16},
        {CK_EW_LESS, {CK_U64, 0, 0}, {CK_I64, 1, -1}, CK_F64, CK_BOOL},
        {CK_EW_LESS, {CK_U8, 0, 0}, {CK_I64, 1, 300}, CK_U16, CK_BOOL},
        {CK_EW_LOGICAL_AND, {CK_F64, 0, 0}, {CK_I32, 0, 0}, CK_BOOL, CK_BOOL},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_ew_operand in[2] = {cases[i].a, cases[i].b};
        ck_dtype c, r;
        ck_err err = {0};
        cr_assert_eq(ck_ew_types(cases[i].op, 2, in, &c, &r, &err), CK_OK,
                     "case %zu: %s", i, err.msg);
        cr_expect_eq(c, cases[i].compute, "case %zu: compute %s", i,
                     ck_dtype_name(c));
        cr_expect_eq(r, cases[i].result, "case %zu: result %s", i,
                     ck_dtype_name(r));
    }
}

/* NumPy gives float16 here; chunkctl has none and gives float32. */
Test(ew, float16_becomes_float32)
{
    static const ck_dtype small[] = {CK_BOOL, CK_I8, CK_U8};
    ck_dtype c, r;
    ck_err err = {0};

    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        ck_ew_operand in = array_of(small[i]);
        cr_assert_eq(ck_ew_types(CK_EW_SQRT, 1, &in, &c, &r, &err), CK_OK);
        cr_expect_eq(c, CK_F32);
        cr_expect_eq(r, CK_F32);
    }
    ck_ew_operand b = array_of(CK_BOOL);
    cr_assert_eq(ck_ew_types(CK_EW_ROUND, 1, &b, &c, &r, &err), CK_OK);
    cr_expect_eq(r, CK_F32);
}

Test(ew, where_ignores_cond_dtype)
{
    ck_ew_operand in[3] = {array_of(CK_F64), array_of(CK_I8),
                           scalar_of(CK_I64, 1)};
    ck_dtype c, r;
    ck_err err = {0};

    cr_assert_eq(ck_ew_types(CK_EW_WHERE, 3, in, &c, &r, &err), CK_OK);
    cr_expect_eq(c, CK_I8);
    cr_expect_eq(r, CK_I8);
    in[2] = scalar_of(CK_F64, 1.5);
    cr_assert_eq(ck_ew_types(CK_EW_WHERE, 3, in, &c, &r, &err), CK_OK);
    cr_expect_eq(r, CK_F64);
}

Test(ew, negative_of_bool_is_refused)
{
    ck_ew_operand in = array_of(CK_BOOL);
    ck_dtype c = CK_DT_INVALID, r = CK_DT_INVALID;
    ck_err err = {0};

    cr_assert_eq(ck_ew_types(CK_EW_NEGATIVE, 1, &in, &c, &r, &err), CK_EUSAGE);
    cr_expect_str_eq(err.msg,
                     "negative: not defined for bool, use logical_not");
    cr_expect_eq(c, CK_DT_INVALID, "written only on success");
    cr_expect_eq(r, CK_DT_INVALID, "written only on success");
}

Test(ew, subtract_of_bools_is_refused)
{
    ck_ew_operand in[2] = {array_of(CK_BOOL), array_of(CK_BOOL)};
    ck_dtype c, r;
    ck_err err = {0};

    cr_assert_eq(ck_ew_types(CK_EW_SUBTRACT, 2, in, &c, &r, &err), CK_EUSAGE);
    cr_expect(strstr(err.msg, "subtract: not defined for bool"), "%s", err.msg);
}

Test(ew, operand_count_must_match)
{
    ck_ew_operand in[2] = {array_of(CK_F64), array_of(CK_F64)};
    ck_dtype c, r;
    ck_err err = {0};

    cr_assert_eq(ck_ew_types(CK_EW_ADD, 1, in, &c, &r, &err), CK_EUSAGE);
    cr_expect_str_eq(err.msg, "add takes 2 operands, not 1");
}

Test(ew, bad_op_dtype_and_scalar_are_refused)
{
    ck_ew_operand in[2] = {array_of(CK_F64), scalar_of(CK_I64, 1e20)};
    ck_dtype c, r;
    ck_err err = {0};

    cr_expect_eq(ck_ew_types(CK_EW_COUNT, 1, in, &c, &r, &err), CK_EUSAGE);
    err = (ck_err){0};
    cr_expect_eq(ck_ew_types(CK_EW_ADD, 2, in, &c, &r, &err), CK_EUSAGE);
    cr_expect(strstr(err.msg, "does not fit int64 or uint64"), "%s", err.msg);
    err = (ck_err){0};
    in[1] = scalar_of(CK_I64, 0.5);
    cr_expect_eq(ck_ew_types(CK_EW_ADD, 2, in, &c, &r, &err), CK_EUSAGE);
    err = (ck_err){0};
    in[1] = array_of(CK_DT_INVALID);
    cr_expect_eq(ck_ew_types(CK_EW_ADD, 2, in, &c, &r, &err), CK_EUSAGE);
    cr_expect_str_eq(err.msg, "add: operand 2 has no dtype");
}

/* ---- kernels: NumPy's values ---- */

static int close_enough(ck_dtype t, double got, double want, int inexact)
{
    double eps = t == CK_F32 ? FLT_EPSILON : DBL_EPSILON;

    if (isnan(want))
        return isnan(got);
    if (got == want)
        return 1;
    return inexact && isfinite(want) &&
           fabs(got - want) <= 4 * eps * fabs(want);
}

/* Runs ew_cases[idx] the way the executor does. */
static void run_case(size_t idx)
{
    const ew_case *c = &ew_cases[idx];
    _Alignas(8) unsigned char buf[3][N * 8], tmp[N * 8], out[N * 8];
    ck_ew_op op = op_of(c->op);
    int n = ck_ew_arity(op), first = op == CK_EW_WHERE;
    ck_ew_operand in[3];
    ck_ew_args a = {.op = op, .n = N, .out = out};
    double got[N];
    ck_err err = {0};

    for (int i = 0; i < n; i++)
        in[i] = (ck_ew_operand){c->in[i].t, c->in[i].is_scalar, c->in[i].v[0]};
    cr_assert_eq(ck_ew_types(op, n, in, &a.compute, &a.result, &err), CK_OK,
                 "%s", err.msg);
    cr_assert_eq(a.result, c->want_t, "case %zu, %s: result %s, numpy %s", idx,
                 c->op, ck_dtype_name(a.result), ck_dtype_name(c->want_t));
    for (int i = 0; i < n; i++) {
        ck_dtype to = first && i == 0 ? CK_BOOL : a.compute;
        size_t len = c->in[i].is_scalar ? 1 : N;
        if (c->in[i].is_scalar) {
            ck_dtype_convert(to, buf[i], CK_F64, c->in[i].v, 1);
        } else {
            ck_dtype_convert(c->in[i].t, tmp, CK_F64, c->in[i].v, len);
            ck_dtype_convert(to, buf[i], c->in[i].t, tmp, len);
        }
        a.in[i] = buf[i];
        a.stride[i] = !c->in[i].is_scalar;
    }
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK, "case %zu: %s", idx,
                 err.msg);
    ck_dtype_convert(CK_F64, got, a.result, out, N);
    for (int k = 0; k < N; k++)
        cr_expect(close_enough(a.result, got[k], c->want[k], c->inexact),
                  "case %zu, %s: element %d: %.17g, numpy %.17g", idx, c->op, k,
                  got[k], c->want[k]);
}

/* The parameter is an index: Criterion may run a test in a fresh process
 * image, where pointers inside a copied ew_case would not hold. */
static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

ParameterizedTestParameters(ew, numpy_values)
{
    size_t n = sizeof ew_cases / sizeof ew_cases[0];
    size_t *idx = cr_malloc(n * sizeof *idx);

    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, n, free_params);
}

ParameterizedTest(size_t *i, ew, numpy_values)
{
    run_case(*i);
}

/* Every (op, dtype) of the compute dtypes, broadcast: one stride-0 element
 * through each kernel gives the same answer as a full run of it. */
Test(ew, stride_zero_matches_stride_one)
{
    for (int op = 0; op < CK_EW_COUNT; op++)
        for (int t = CK_BOOL; t < CK_DT_COUNT; t++) {
            _Alignas(8) unsigned char x[3][N * 8] = {{0}}, o1[N * 8], o0[N * 8];
            int n = ck_ew_arity((ck_ew_op)op);
            ck_ew_args a = {.op = (ck_ew_op)op, .compute = (ck_dtype)t, .n = N};
            ck_err err = {0};
            double v[N] = {3, 3, 3, 3, 3, 3, 3, 3};
            for (int i = 0; i < n; i++) {
                ck_dtype ti = op == CK_EW_WHERE && i == 0 ? CK_BOOL : a.compute;
                ck_dtype_convert(ti, x[i], CK_F64, v, N);
                a.in[i] = x[i];
                a.stride[i] = 1;
            }
            a.result = (op >= CK_EW_ISNAN && op <= CK_EW_LOGICAL_NOT) ||
                               (op >= CK_EW_LESS && op <= CK_EW_LOGICAL_OR)
                           ? CK_BOOL
                           : a.compute;
            a.out = o1;
            if (ck_cpu_ew(NULL, &a, &err) != CK_OK) {
                cr_expect_eq(err.code, CK_ENOTSUP, "%s", err.msg);
                continue;
            }
            for (int mask = 0; mask < (1 << n); mask++) {
                for (int i = 0; i < n; i++)
                    a.stride[i] = (mask >> i) & 1;
                a.out = o0;
                memset(o0, 0xa5, sizeof o0);
                cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK, "%s", err.msg);
                cr_expect_eq(memcmp(o0, o1, N * ck_dtype_size(a.result)), 0,
                             "%s on %s, strides mask %d",
                             ck_ew_name((ck_ew_op)op),
                             ck_dtype_name((ck_dtype)t), mask);
            }
        }
}

Test(ew, int64_wraps)
{
    int64_t x[4] = {INT64_MAX, INT64_MIN, INT64_MIN, 3};
    int64_t y[4] = {1, 1, 2, 40};
    int64_t o[4];
    ck_ew_args a = {.op = CK_EW_ADD,
                    .compute = CK_I64,
                    .result = CK_I64,
                    .n = 4,
                    .in = {x, y},
                    .stride = {1, 1},
                    .out = o};
    ck_err err = {0};

    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[0], INT64_MIN);
    a.op = CK_EW_SUBTRACT;
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[1], INT64_MAX);
    a.op = CK_EW_MULTIPLY;
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[2], 0);
    a.op = CK_EW_POWER; /* np.int64(3) ** 40, wrapped */
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[3], -6289078614652622815);
    a.op = CK_EW_NEGATIVE;
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[1], INT64_MIN);
    a.op = CK_EW_ABS; /* np.abs(np.int64 min) is itself */
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[1], INT64_MIN);
    cr_expect_eq(o[0], INT64_MAX);
}

Test(ew, uint64_wraps)
{
    uint64_t x[2] = {0, UINT64_MAX}, y[2] = {1, 2}, o[2];
    ck_ew_args a = {.op = CK_EW_SUBTRACT,
                    .compute = CK_U64,
                    .result = CK_U64,
                    .n = 2,
                    .in = {x, y},
                    .stride = {1, 1},
                    .out = o};
    ck_err err = {0};

    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[0], UINT64_MAX);
    a.op = CK_EW_POWER;
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[1], 1);
    a.op = CK_EW_NEGATIVE;
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[1], 1);
}

Test(ew, small_integer_power_wraps)
{
    int8_t x[2] = {2, -3}, y[2] = {7, 5}, o[2];
    uint8_t ux = 2, uy[2] = {8, 255}, uo[2];
    ck_ew_args a = {.op = CK_EW_POWER,
                    .compute = CK_I8,
                    .result = CK_I8,
                    .n = 2,
                    .in = {x, y},
                    .stride = {1, 1},
                    .out = o};
    ck_err err = {0};

    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o[0], -128); /* np.int8(2) ** 7 */
    cr_expect_eq(o[1], 13);   /* np.int8(-3) ** 5: -243 wrapped */
    a = (ck_ew_args){.op = CK_EW_POWER,
                     .compute = CK_U8,
                     .result = CK_U8,
                     .n = 2,
                     .in = {&ux, uy},
                     .stride = {0, 1},
                     .out = uo};
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(uo[0], 0);
    cr_expect_eq(uo[1], 0);
}

Test(ew, negative_integer_exponent_is_refused)
{
    int32_t x[3] = {2, 3, 4}, y[3] = {1, -1, 2}, o[3] = {7, 7, 7};
    ck_ew_args a = {.op = CK_EW_POWER,
                    .compute = CK_I32,
                    .result = CK_I32,
                    .n = 3,
                    .in = {x, y},
                    .stride = {1, 1},
                    .out = o};
    ck_err err = {0};

    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_EUSAGE);
    cr_expect(strstr(err.msg, "power: integers to negative integer powers "
                              "are not allowed"),
              "%s", err.msg);
    cr_expect_eq(o[0], 7, "nothing written");
    err = (ck_err){0};
    a.in[1] = &y[1];
    a.stride[1] = 0;
    cr_expect_eq(ck_cpu_ew(NULL, &a, &err), CK_EUSAGE);
}

Test(ew, unsupported_kernels_are_named)
{
    int32_t x[2] = {1, 2};
    int32_t o[2];
    ck_ew_args a = {.op = CK_EW_SQRT,
                    .compute = CK_I32,
                    .result = CK_I32,
                    .n = 2,
                    .in = {x},
                    .stride = {1},
                    .out = o};
    ck_err err = {0};

    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_ENOTSUP);
    cr_expect_str_eq(err.msg, "sqrt: no cpu kernel for int32");
    err = (ck_err){0};
    a.op = CK_EW_LESS; /* a comparison writes bool */
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_ENOTSUP);
    cr_expect_str_eq(err.msg, "less: no cpu kernel from int32 to int32");
    err = (ck_err){0};
    a.op = CK_EW_NEGATIVE;
    a.compute = a.result = CK_BOOL;
    cr_expect_eq(ck_cpu_ew(NULL, &a, &err), CK_ENOTSUP);
    err = (ck_err){0};
    a.op = CK_EW_COUNT;
    cr_expect_eq(ck_cpu_ew(NULL, &a, &err), CK_ENOTSUP);
    err = (ck_err){0};
    a.op = CK_EW_ABS;
    a.compute = a.result = CK_I32;
    a.stride[0] = 2;
    cr_expect_eq(ck_cpu_ew(NULL, &a, &err), CK_ENOTSUP);
    cr_expect_str_eq(err.msg, "abs: operand 1 has stride 2 (only 0 or 1)");
}

Test(ew, empty_run_writes_nothing)
{
    double x = 1, o = 5;
    ck_ew_args a = {.op = CK_EW_EXP,
                    .compute = CK_F64,
                    .result = CK_F64,
                    .n = 0,
                    .in = {&x},
                    .stride = {1},
                    .out = &o};
    ck_err err = {0};

    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(o, 5);
}

Test(ew, in_place)
{
    float x[4] = {1, 2, 3, 4};
    float two = 2;
    ck_ew_args a = {.op = CK_EW_MULTIPLY,
                    .compute = CK_F32,
                    .result = CK_F32,
                    .n = 4,
                    .in = {x, &two},
                    .stride = {1, 0},
                    .out = x};
    ck_err err = {0};

    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(x[3], 8);
    a.in[0] = &two;
    a.in[1] = x;
    a.stride[0] = 0;
    a.stride[1] = 1;
    a.op = CK_EW_SUBTRACT;
    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    cr_expect_eq(x[0], 0);
    cr_expect_eq(x[3], -6);
}

Test(ew, round_is_half_to_even)
{
    /* np.round([0.5, 1.5, 2.5, -0.5, -2.5, 3.5]) */
    double x[6] = {0.5, 1.5, 2.5, -0.5, -2.5, 3.5}, o[6];
    double want[6] = {0, 2, 2, -0.0, -2, 4};
    ck_ew_args a = {.op = CK_EW_ROUND,
                    .compute = CK_F64,
                    .result = CK_F64,
                    .n = 6,
                    .in = {x},
                    .stride = {1},
                    .out = o};
    ck_err err = {0};

    cr_assert_eq(ck_cpu_ew(NULL, &a, &err), CK_OK);
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(o[i], want[i], "element %d: %g", i, o[i]);
        cr_expect_eq(!!signbit(o[i]), !!signbit(want[i]), "element %d", i);
    }
}
