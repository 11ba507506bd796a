/*
 * tests/ops/test_reduce.c - the Criterion suite "reduce": ops/reduce.h and
 * the CPU backend's reduce slot against NumPy 1.24.  The broad matrix
 * (every op x dtype x set of axes, with and without NaN) is in
 * tests/data/ops/reduce_cases.txt, made by gen_reduce.py beside it; each
 * case is folded chunk by chunk with several chunkings and the chunks'
 * states combined in chunk order, as the executor does.  The tests below
 * it pin single rules, each with the NumPy line it comes from.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/red_state.h"
#include "base/ck_grid.h"
#include "ops/reduce.h"

TestSuite(reduce, .description = "ops/reduce.h: reductions as NumPy's");

/* ---- folding a whole array, chunk by chunk ---- */

typedef struct arr {
    ck_dtype t;
    int ndim;
    int64_t shape[CK_MAX_DIMS];
    size_t n;
    void *data;
} arr;

/* Folds a (chunked as chunk[]) into states for the kept axes, combining
 * the chunks' states in chunk order, and finalises them into result. */
static ck_code run(ck_red_op op, const arr *a, uint32_t axes, double ddof,
                   const int64_t *chunk, ck_dtype out, void *result, int *empty,
                   ck_err *err)
{
    size_t ss = ck_red_state_size(), esz = ck_dtype_size(a->t);
    int64_t gshape[CK_MAX_DIMS], zero[CK_MAX_DIMS] = {0};
    int gnd = 0;
    ck_grid g;

    cr_assert_eq(ck_grid_init(&g, a->ndim, a->shape, chunk, esz, err), CK_OK);
    for (int d = 0; d < a->ndim; d++)
        if (!((axes >> d) & 1))
            gshape[gnd++] = a->shape[d];
    int64_t nout = 1;
    for (int d = 0; d < gnd; d++)
        nout *= gshape[d];
    char *gst = malloc((size_t)nout * ss + 1);
    ck_red_init(op, gst, (size_t)nout);

    ck_iter it = ck_iter_all(&g);
    ck_chunk c;
    while (ck_iter_next(&it, &c)) {
        int64_t ne = ck_chunk_nelem(&g, &c), lshape[CK_MAX_DIMS];
        int64_t lstart[CK_MAX_DIMS], lnout = 1;
        int lnd = 0;
        char *buf = malloc((size_t)ne * esz + 1);
        ck_box_copy(a->ndim, esz, buf, c.shape, zero, a->data, a->shape,
                    c.start, NULL, c.shape);
        for (int d = 0; d < a->ndim; d++) {
            if (!((axes >> d) & 1)) {
                lshape[lnd] = c.shape[d];
                lstart[lnd++] = c.start[d];
                lnout *= c.shape[d];
            }
        }
        char *lst = malloc((size_t)lnout * ss + 1);
        ck_red_init(op, lst, (size_t)lnout);
        ck_red_args ra = {.op = op,
                          .in = a->t,
                          .data = buf,
                          .ndim = a->ndim,
                          .shape = c.shape,
                          .origin = c.start,
                          .array_shape = a->shape,
                          .axes = axes,
                          .state = lst};
        cr_assert_eq(ck_cpu_reduce(NULL, &ra, err), CK_OK, "%s", err->msg);
        for (int64_t li = 0; li < lnout; li++) {
            int64_t rem = li, gi = 0, mul = 1;
            for (int d = lnd - 1; d >= 0; d--) {
                int64_t coord = rem % lshape[d] + lstart[d];
                rem /= lshape[d];
                gi += coord * mul;
                mul *= gshape[d];
            }
            ck_red_combine(op, gst + gi * (int64_t)ss, lst + li * (int64_t)ss,
                           1);
        }
        free(lst);
        free(buf);
    }
    ck_code rc =
        ck_red_finalize(op, ddof, gst, (size_t)nout, out, result, empty, err);
    free(gst);
    return rc;
}

/* Whole array as one chunk. */
static ck_code run1(ck_red_op op, const arr *a, uint32_t axes, double ddof,
                    ck_dtype out, void *result, int *empty, ck_err *err)
{
    return run(op, a, axes, ddof, a->shape, out, result, empty, err);
}

static arr mk(ck_dtype t, int ndim, const int64_t *shape, const void *data)
{
    arr a = {.t = t, .ndim = ndim, .data = (void *)data};
    a.n = 1;
    for (int d = 0; d < ndim; d++) {
        a.shape[d] = shape[d];
        a.n *= (size_t)shape[d];
    }
    return a;
}

/* ---- the NumPy matrix from reduce_cases.txt ---- */

#define MAX_ARRAYS 64

static char *data_path(const char *name)
{
    const char *dir = getenv("CK_TEST_DATA");
    static char path[4096];

    snprintf(path, sizeof path, "%s/ops/%s", dir ? dir : "tests/data", name);
    return path;
}

static void parse_values(ck_dtype t, char **save, void *dst, size_t n)
{
    size_t esz = ck_dtype_size(t);

    for (size_t i = 0; i < n; i++) {
        char *tok = strtok_r(NULL, " \n", save);
        cr_assert(tok, "short line");
        char *p = (char *)dst + i * esz;
        if (ck_dtype_is_float(t)) {
            double v = strtod(tok, NULL);
            ck_dtype_convert(t, p, CK_F64, &v, 1);
        } else if (ck_dtype_is_signed(t) || t == CK_BOOL) {
            int64_t v = strtoll(tok, NULL, 10);
            ck_dtype_convert(t, p, CK_I64, &v, 1);
        } else {
            uint64_t v = strtoull(tok, NULL, 10);
            ck_dtype_convert(t, p, CK_U64, &v, 1);
        }
    }
}

static double as_double(ck_dtype t, const void *p, size_t i)
{
    double v;
    ck_dtype_convert(CK_F64, &v, t, (const char *)p + i * ck_dtype_size(t), 1);
    return v;
}

/* Results agree: integers exactly, floats to tol relative (NaN == NaN). */
static int same(ck_dtype t, const void *got, const void *want, size_t i,
                double tol)
{
    size_t esz = ck_dtype_size(t);
    if (!ck_dtype_is_float(t))
        return memcmp((const char *)got + i * esz, (const char *)want + i * esz,
                      esz) == 0;
    double g = as_double(t, got, i), w = as_double(t, want, i);
    if (isnan(w) || isnan(g))
        return isnan(w) && isnan(g);
    if (isinf(w) || isinf(g))
        return g == w;
    return fabs(g - w) <= tol * (fabs(w) + 1);
}

/* Chunkings tried for every case. */
static int chunking(int k, const arr *a, int64_t *chunk)
{
    for (int d = 0; d < a->ndim; d++) {
        int64_t s = a->shape[d];
        switch (k) {
        case 0: /* one chunk */
            chunk[d] = s;
            break;
        case 1: /* one element each */
            chunk[d] = 1;
            break;
        case 2:
            chunk[d] = (s + 1) / 2;
            break;
        case 3:
            chunk[d] = d % 2 == 0 ? (s + 2) / 3 : s;
            break;
        case 4:
            chunk[d] = d == a->ndim - 1 ? 2 : 1;
            break;
        default:
            return 0;
        }
    }
    return 1;
}

/* Runs every case of the ops for which want[op] is set. */
static void run_cases(const int *want)
{
    FILE *f = fopen(data_path("reduce_cases.txt"), "r");
    cr_assert(f, "cannot open %s", data_path("reduce_cases.txt"));
    static arr arrays[MAX_ARRAYS + 1];
    char *line = NULL;
    size_t cap = 0;
    int ncases = 0;

    while (getline(&line, &cap, f) > 0) {
        char *save = NULL, *kw = strtok_r(line, " \n", &save);
        if (!kw)
            continue;
        if (strcmp(kw, "array") == 0) {
            int id = atoi(strtok_r(NULL, " ", &save));
            cr_assert(id > 0 && id <= MAX_ARRAYS);
            arr *a = &arrays[id];
            ck_err err = {0};
            free(a->data);
            cr_assert_eq(
                ck_dtype_parse(strtok_r(NULL, " ", &save), &a->t, &err), CK_OK);
            a->ndim = atoi(strtok_r(NULL, " ", &save));
            a->n = 1;
            for (int d = 0; d < a->ndim; d++) {
                a->shape[d] = atoll(strtok_r(NULL, " ", &save));
                a->n *= (size_t)a->shape[d];
            }
            a->data = malloc(a->n * ck_dtype_size(a->t));
            parse_values(a->t, &save, a->data, a->n);
            continue;
        }
        int id = atoi(strtok_r(NULL, " ", &save));
        ck_red_op op;
        cr_assert(ck_red_lookup(strtok_r(NULL, " ", &save), &op));
        uint32_t axes = (uint32_t)atoi(strtok_r(NULL, " ", &save));
        double ddof = atof(strtok_r(NULL, " ", &save));
        char *rdt = strtok_r(NULL, " ", &save);
        char *warn = strtok_r(NULL, " \n", &save);
        if (!want[op])
            continue;
        const arr *a = &arrays[id];
        ck_dtype out = ck_red_result_dtype(op, a->t);
        ck_err err = {0};
        int64_t nout = 1;
        for (int d = 0; d < a->ndim; d++)
            if (!((axes >> d) & 1))
                nout *= a->shape[d];
        size_t bytes = (size_t)nout * ck_dtype_size(out) + 1;
        void *exp = malloc(bytes), *got = malloc(bytes);
        int raise = strcmp(warn, "raise") == 0, nwarn = 0;
        if (!raise) {
            ck_dtype nt;
            cr_assert_eq(ck_dtype_parse(rdt, &nt, &err), CK_OK);
            cr_assert_eq(nt, out, "case %d %s axes %u: dtype %s, numpy %s", id,
                         ck_red_name(op), axes, ck_dtype_name(out), rdt);
            nwarn = atoi(warn);
            parse_values(out, &save, exp, (size_t)nout);
        }
        /* float32 results: NumPy accumulates in float32, we in float64 */
        double tol = a->t == CK_F32 ? 1e-5 : 1e-12;
        int64_t chunk[CK_MAX_DIMS];
        for (int k = 0; chunking(k, a, chunk); k++) {
            int empty = -1;
            ck_code rc = run(op, a, axes, ddof, chunk, out, got, &empty, &err);
            if (raise) {
                cr_expect_eq(rc, CK_EUSAGE, "case %d %s axes %u: no error", id,
                             ck_red_name(op), axes);
                continue;
            }
            cr_assert_eq(rc, CK_OK, "case %d %s: %s", id, ck_red_name(op),
                         err.msg);
            cr_expect_eq(empty, nwarn,
                         "case %d %s axes %u ddof %g chunking %d: empty %d, "
                         "numpy warned %d",
                         id, ck_red_name(op), axes, ddof, k, empty, nwarn);
            for (int64_t i = 0; i < nout; i++)
                cr_expect(same(out, got, exp, (size_t)i, tol),
                          "case %d %s (%s) axes %u ddof %g chunking %d: "
                          "[%lld] = %.17g, numpy %.17g",
                          id, ck_red_name(op), ck_dtype_name(a->t), axes, ddof,
                          k, (long long)i, as_double(out, got, (size_t)i),
                          as_double(out, exp, (size_t)i));
        }
        ncases++;
        free(exp);
        free(got);
    }
    free(line);
    fclose(f);
    for (int i = 0; i <= MAX_ARRAYS; i++) {
        free(arrays[i].data);
        arrays[i].data = NULL;
    }
    cr_assert_gt(ncases, 0);
}

#define NUMPY_MATRIX(name, ...)                                                \
    Test(reduce, numpy_matrix_##name)                                          \
    {                                                                          \
        int want[CK_RED_COUNT] = {0};                                          \
        ck_red_op ops[] = {__VA_ARGS__};                                       \
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)                \
            want[ops[i]] = 1;                                                  \
        run_cases(want);                                                       \
    }

NUMPY_MATRIX(sum_prod, CK_RED_SUM, CK_RED_PROD, CK_RED_NANSUM)
NUMPY_MATRIX(min_max, CK_RED_MIN, CK_RED_MAX, CK_RED_NANMIN, CK_RED_NANMAX)
NUMPY_MATRIX(mean_var_std, CK_RED_MEAN, CK_RED_VAR, CK_RED_STD, CK_RED_NANMEAN,
             CK_RED_NANVAR, CK_RED_NANSTD)
NUMPY_MATRIX(argmin_argmax, CK_RED_ARGMIN, CK_RED_ARGMAX)
NUMPY_MATRIX(count_any_all, CK_RED_COUNT_NONZERO, CK_RED_ANY, CK_RED_ALL)

/* ---- names and types ---- */

Test(reduce, names_round_trip)
{
    for (int i = 0; i < CK_RED_COUNT; i++) {
        ck_red_op op;
        cr_assert(ck_red_lookup(ck_red_name((ck_red_op)i), &op));
        cr_assert_eq(op, (ck_red_op)i);
    }
    cr_assert_str_eq(ck_red_name(CK_RED_NANSTD), "nanstd");
    cr_assert_null(ck_red_name(CK_RED_COUNT));
    ck_red_op op = CK_RED_SUM;
    cr_assert_not(ck_red_lookup("median", &op));
    cr_assert_eq(op, CK_RED_SUM);
}

Test(reduce, result_dtypes_follow_numpy)
{
    /* np.sum(np.int32([1])).dtype == int64; np.uint8 -> uint64; bool ->
     * int64; np.mean(np.int16([1])).dtype == float64; float32 stays */
    cr_assert_eq(ck_red_result_dtype(CK_RED_SUM, CK_I32), CK_I64);
    cr_assert_eq(ck_red_result_dtype(CK_RED_SUM, CK_U8), CK_U64);
    cr_assert_eq(ck_red_result_dtype(CK_RED_SUM, CK_BOOL), CK_I64);
    cr_assert_eq(ck_red_result_dtype(CK_RED_PROD, CK_F32), CK_F32);
    cr_assert_eq(ck_red_result_dtype(CK_RED_MEAN, CK_I16), CK_F64);
    cr_assert_eq(ck_red_result_dtype(CK_RED_NANSTD, CK_F32), CK_F32);
    cr_assert_eq(ck_red_result_dtype(CK_RED_MIN, CK_U16), CK_U16);
    cr_assert_eq(ck_red_result_dtype(CK_RED_MAX, CK_BOOL), CK_BOOL);
    cr_assert_eq(ck_red_result_dtype(CK_RED_ARGMAX, CK_F32), CK_I64);
    cr_assert_eq(ck_red_result_dtype(CK_RED_COUNT_NONZERO, CK_U8), CK_I64);
    cr_assert_eq(ck_red_result_dtype(CK_RED_ALL, CK_F64), CK_BOOL);
    cr_assert_eq(ck_red_result_dtype(CK_RED_SUM, CK_DT_INVALID), CK_DT_INVALID);
}

Test(reduce, state_size_is_fixed)
{
    cr_assert_eq(ck_red_state_size(), sizeof(ck_red_state));
    cr_assert_eq(ck_red_state_size() % 8, 0);
}

/* ---- blocks and combination ---- */

/* a = np.arange(35, dtype=float).reshape(7, 5) * 0.1 - 1
 * a.sum(axis=0) -> [3.5, 4.2, 4.9, 5.6, 6.3] (up to rounding) */
Test(reduce, row_blocks_fold_into_the_same_states)
{
    double a[35], want[5];
    for (int i = 0; i < 35; i++)
        a[i] = i * 0.1 - 1;
    for (int j = 0; j < 5; j++) {
        want[j] = 0;
        for (int i = 0; i < 7; i++)
            want[j] += a[i * 5 + j];
    }
    /* three row blocks (3, 3, 1 rows) folded one after another into one
     * set of states, as for a reduction over the chunked axis 0 */
    char st[5 * sizeof(ck_red_state)];
    int64_t ashape[2] = {7, 5};
    ck_red_init(CK_RED_SUM, st, 5);
    for (int r0 = 0; r0 < 7; r0 += 3) {
        int64_t shape[2] = {r0 + 3 <= 7 ? 3 : 7 - r0, 5}, origin[2] = {r0, 0};
        ck_red_args ra = {.op = CK_RED_SUM,
                          .in = CK_F64,
                          .data = a + r0 * 5,
                          .ndim = 2,
                          .shape = shape,
                          .origin = origin,
                          .array_shape = ashape,
                          .axes = 1,
                          .state = st};
        ck_err err = {0};
        cr_assert_eq(ck_cpu_reduce(NULL, &ra, &err), CK_OK, "%s", err.msg);
    }
    double got[5];
    ck_err err = {0};
    cr_assert_eq(ck_red_finalize(CK_RED_SUM, 0, st, 5, CK_F64, got, NULL, &err),
                 CK_OK);
    for (int j = 0; j < 5; j++)
        cr_assert_float_eq(got[j], want[j], 1e-14, "[%d] %g", j, got[j]);
    cr_assert_float_eq(got[0], 3.5, 1e-13);
    cr_assert_float_eq(got[4], 6.3, 1e-13);
}

/* LCG data, reproduced in Python for the expected values below:
 *   st = 12345; M = 2**64 - 1
 *   st = (st * 6364136223846793005 + 1442695040888963407) & M
 *   x.append(((st >> 33) % 2000001 - 1000000.0) / 3.0 + 0.1 * (i % 7)) */
static double *lcg_data(size_t n)
{
    double *x = malloc(n * sizeof *x);
    uint64_t st = 12345;
    for (size_t i = 0; i < n; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = ((double)((st >> 33) % 2000001) - 1000000.0) / 3.0 +
               0.1 * (double)(i % 7);
    }
    return x;
}

/* np.sum(x) -> 91167326.1999996 (pairwise); math.fsum(x) ->
 * 91167326.19999976; np.mean(x) -> 86.94393749237022; np.var(x) ->
 * 37017008616.997665.  Reshaped (1024, 1024): math.fsum(b[:, j]) for j
 * = 0, 511, 1023 -> -1271526.5333333337, 10021.133333332456, 2459467.0
 * (NumPy's own axis-0 sums are sequential and off by up to 2.8e-12);
 * math.fsum(b[0, :]) -> -10336059.966666667. */
Test(reduce, float64_sums_match_numpy_pairwise_and_exact_sums)
{
    size_t n = (size_t)1 << 20;
    double *x = lcg_data(n);
    int64_t flat[1] = {(int64_t)n}, sq[2] = {1024, 1024};
    int64_t chunks[2] = {300, 1024};
    arr a = mk(CK_F64, 1, flat, x), b = mk(CK_F64, 2, sq, x);
    double r, cols[1024], rows[1024];
    ck_err err = {0};

    cr_assert_eq(run1(CK_RED_SUM, &a, 1, 0, CK_F64, &r, NULL, &err), CK_OK);
    cr_assert_float_eq(r, 91167326.1999996, 1e-12 * 91167326.2);
    cr_assert_float_eq(r, 91167326.19999976, 1e-14 * 91167326.2);
    cr_assert_eq(run1(CK_RED_MEAN, &a, 1, 0, CK_F64, &r, NULL, &err), CK_OK);
    cr_assert_float_eq(r, 86.94393749237022, 1e-12 * 86.94);
    cr_assert_eq(run1(CK_RED_VAR, &a, 1, 0, CK_F64, &r, NULL, &err), CK_OK);
    cr_assert_float_eq(r, 37017008616.997665, 1e-12 * 3.7e10);
    cr_assert_eq(run(CK_RED_SUM, &b, 1, 0, chunks, CK_F64, cols, NULL, &err),
                 CK_OK);
    cr_assert_float_eq(cols[0], -1271526.5333333337, 1e-13 * 1.27e6);
    cr_assert_float_eq(cols[511], 10021.133333332456, 1e-13 * 1.27e6);
    cr_assert_float_eq(cols[1023], 2459467.0, 1e-13 * 2.46e6);
    cr_assert_eq(run(CK_RED_SUM, &b, 2, 0, chunks, CK_F64, rows, NULL, &err),
                 CK_OK);
    cr_assert_float_eq(rows[0], -10336059.966666667, 1e-14 * 1.03e7);
    free(x);
}

Test(reduce, combine_order_gives_identical_bits)
{
    /* the same data in 1 chunk and in 37-element chunks: both within
     * 1e-15 of each other, and each chunking reproducible */
    size_t n = 100000;
    double *x = lcg_data(n);
    int64_t shape[1] = {(int64_t)n}, c1[1] = {37};
    arr a = mk(CK_F64, 1, shape, x);
    double r1, r2, r3;
    ck_err err = {0};
    cr_assert_eq(run1(CK_RED_SUM, &a, 1, 0, CK_F64, &r1, NULL, &err), CK_OK);
    cr_assert_eq(run(CK_RED_SUM, &a, 1, 0, c1, CK_F64, &r2, NULL, &err), CK_OK);
    cr_assert_eq(run(CK_RED_SUM, &a, 1, 0, c1, CK_F64, &r3, NULL, &err), CK_OK);
    cr_assert_float_eq(r1, r2, 1e-15 * fabs(r1));
    cr_assert(memcmp(&r2, &r3, sizeof r2) == 0);
    free(x);
}

/* ---- argmin / argmax ---- */

/* np.argmin([3, 1, 2, 1]) -> 1 (first of the tied minima);
 * np.argmax([[0, 5], [5, 1]]) -> 1 (flat index);
 * np.argmax([[0, 5], [5, 1]], axis=0) -> [1, 0] */
Test(reduce, arg_ties_take_the_first_occurrence)
{
    int32_t v[4] = {3, 1, 2, 1}, m[4] = {0, 5, 5, 1};
    int64_t s1[1] = {4}, s2[2] = {2, 2}, one[2] = {1, 1};
    arr a = mk(CK_I32, 1, s1, v), b = mk(CK_I32, 2, s2, m);
    int64_t r[2];
    ck_err err = {0};

    cr_assert_eq(run1(CK_RED_ARGMIN, &a, 1, 0, CK_I64, r, NULL, &err), CK_OK);
    cr_assert_eq(r[0], 1);
    /* chunks of one element, combined in chunk order */
    cr_assert_eq(run(CK_RED_ARGMAX, &b, 3, 0, one, CK_I64, r, NULL, &err),
                 CK_OK);
    cr_assert_eq(r[0], 1);
    cr_assert_eq(run(CK_RED_ARGMAX, &b, 1, 0, one, CK_I64, r, NULL, &err),
                 CK_OK);
    cr_assert_eq(r[0], 1);
    cr_assert_eq(r[1], 0);
}

/* Chunk order is not C order: in a 4x4 array of 2x2 chunks, chunk 0
 * (rows 0-1, columns 0-1) holds flat index 4 and is folded before chunk 1
 * (rows 0-1, columns 2-3), which holds flat index 3 with the same value;
 * the tie goes to the smaller index, not to the earlier chunk.
 * a = np.zeros((4, 4)); a[1, 0] = a[0, 3] = a[2, 1] = 9; np.argmax(a) -> 3
 */
Test(reduce, arg_ties_across_chunks_use_the_flat_index)
{
    double a[16] = {0};
    int64_t shape[2] = {4, 4}, chunk[2] = {2, 2};
    a[1 * 4 + 0] = a[0 * 4 + 3] = a[2 * 4 + 1] = 9;
    arr x = mk(CK_F64, 2, shape, a);
    int64_t r;
    ck_err err = {0};
    cr_assert_eq(run(CK_RED_ARGMAX, &x, 3, 0, chunk, CK_I64, &r, NULL, &err),
                 CK_OK);
    cr_assert_eq(r, 3);
}

/* np.argmin([1.0, nan, -5.0, nan]) -> 1; np.argmax([nan, 7.0]) -> 0;
 * np.min([1.0, nan]) -> nan; np.nanmin([1.0, nan]) -> 1.0 */
Test(reduce, nan_wins_argmin_and_min_but_not_nanmin)
{
    double v[4] = {1.0, NAN, -5.0, NAN};
    int64_t s[1] = {4}, one[1] = {1};
    arr a = mk(CK_F64, 1, s, v);
    int64_t r;
    double f;
    ck_err err = {0};
    for (int k = 0; k < 2; k++) {
        const int64_t *chunk = k ? one : s;
        cr_assert_eq(
            run(CK_RED_ARGMIN, &a, 1, 0, chunk, CK_I64, &r, NULL, &err), CK_OK);
        cr_assert_eq(r, 1);
        cr_assert_eq(
            run(CK_RED_ARGMAX, &a, 1, 0, chunk, CK_I64, &r, NULL, &err), CK_OK);
        cr_assert_eq(r, 1);
        cr_assert_eq(run(CK_RED_MIN, &a, 1, 0, chunk, CK_F64, &f, NULL, &err),
                     CK_OK);
        cr_assert(isnan(f));
        cr_assert_eq(
            run(CK_RED_NANMIN, &a, 1, 0, chunk, CK_F64, &f, NULL, &err), CK_OK);
        cr_assert_eq(f, -5.0);
    }
}

/* ---- var, std, ddof, empty folds ---- */

/* np.var([1., 2., 4.], ddof=1) -> 2.3333333333333335;
 * np.std([1., 2., 4.]) -> 1.247219128924647;
 * np.var([1., 2.], ddof=2) -> inf (warns); np.var([1., 1.], ddof=2) ->
 * nan (warns); np.nanvar([1., 2., nan], ddof=2) -> nan (warns) */
Test(reduce, var_ddof_and_degrees_of_freedom)
{
    double v[3] = {1, 2, 4}, w[2] = {1, 2}, u[2] = {1, 1}, q[3] = {1, 2, NAN};
    int64_t s3[1] = {3}, s2[1] = {2};
    arr a = mk(CK_F64, 1, s3, v), b = mk(CK_F64, 1, s2, w);
    arr c = mk(CK_F64, 1, s2, u), d = mk(CK_F64, 1, s3, q);
    double r;
    int empty;
    ck_err err = {0};

    cr_assert_eq(run1(CK_RED_VAR, &a, 1, 1, CK_F64, &r, &empty, &err), CK_OK);
    cr_assert_float_eq(r, 2.3333333333333335, 1e-15);
    cr_assert_eq(empty, 0);
    cr_assert_eq(run1(CK_RED_STD, &a, 1, 0, CK_F64, &r, &empty, &err), CK_OK);
    cr_assert_float_eq(r, 1.247219128924647, 1e-15);
    cr_assert_eq(run1(CK_RED_VAR, &b, 1, 2, CK_F64, &r, &empty, &err), CK_OK);
    cr_assert(isinf(r) && r > 0);
    cr_assert_eq(empty, 1);
    cr_assert_eq(run1(CK_RED_VAR, &c, 1, 2, CK_F64, &r, &empty, &err), CK_OK);
    cr_assert(isnan(r));
    cr_assert_eq(empty, 1);
    cr_assert_eq(run1(CK_RED_NANVAR, &d, 1, 2, CK_F64, &r, &empty, &err),
                 CK_OK);
    cr_assert(isnan(r));
    cr_assert_eq(empty, 1);
    cr_assert_eq(run1(CK_RED_NANVAR, &d, 1, 1, CK_F64, &r, &empty, &err),
                 CK_OK);
    cr_assert_float_eq(r, 0.5, 1e-15);
    cr_assert_eq(empty, 0);
}

/* Folding nothing: np.sum([]) -> 0.0, np.prod([]) -> 1.0, np.all([]) ->
 * True, np.any([]) -> False, np.count_nonzero([]) -> 0, np.mean([]) ->
 * nan (warns); np.min([]) raises "zero-size array to reduction operation
 * minimum which has no identity"; np.argmax([]) raises "attempt to get
 * argmax of an empty sequence"; np.nanmax([nan]) -> nan (warns). */
Test(reduce, empty_folds)
{
    char st[sizeof(ck_red_state)];
    double f;
    int64_t i;
    uint8_t b;
    int empty;
    ck_err err = {0};

#define FIN(op, out, res)                                                      \
    (err = (ck_err){0}, ck_red_init(op, st, 1),                                \
     ck_red_finalize(op, 1, st, 1, out, res, &empty, &err))
    cr_assert_eq(FIN(CK_RED_SUM, CK_F64, &f), CK_OK);
    cr_assert_eq(f, 0.0);
    cr_assert_eq(FIN(CK_RED_PROD, CK_F64, &f), CK_OK);
    cr_assert_eq(f, 1.0);
    cr_assert_eq(FIN(CK_RED_PROD, CK_I64, &i), CK_OK);
    cr_assert_eq(i, 1);
    cr_assert_eq(FIN(CK_RED_ALL, CK_BOOL, &b), CK_OK);
    cr_assert_eq(b, 1);
    cr_assert_eq(FIN(CK_RED_ANY, CK_BOOL, &b), CK_OK);
    cr_assert_eq(b, 0);
    cr_assert_eq(FIN(CK_RED_COUNT_NONZERO, CK_I64, &i), CK_OK);
    cr_assert_eq(i, 0);
    cr_assert_eq(FIN(CK_RED_MEAN, CK_F64, &f), CK_OK);
    cr_assert(isnan(f));
    cr_assert_eq(empty, 1);
    cr_assert_eq(FIN(CK_RED_STD, CK_F64, &f), CK_OK);
    cr_assert(isnan(f));
    cr_assert_eq(empty, 1);
    cr_assert_eq(FIN(CK_RED_MIN, CK_F64, &f), CK_EUSAGE);
    cr_assert_str_eq(err.msg, "zero-size array to reduction operation min "
                              "which has no identity");
    cr_assert_eq(FIN(CK_RED_NANMAX, CK_F64, &f), CK_EUSAGE);
    cr_assert_eq(FIN(CK_RED_ARGMAX, CK_I64, &i), CK_EUSAGE);
    cr_assert_str_eq(err.msg, "attempt to get argmax of an empty sequence");
#undef FIN

    double nan1[1] = {NAN};
    int64_t s[1] = {1};
    arr a = mk(CK_F64, 1, s, nan1);
    cr_assert_eq(run1(CK_RED_NANMAX, &a, 1, 0, CK_F64, &f, &empty, &err),
                 CK_OK);
    cr_assert(isnan(f));
    cr_assert_eq(empty, 1);
    cr_assert_eq(run1(CK_RED_NANMEAN, &a, 1, 0, CK_F64, &f, &empty, &err),
                 CK_OK);
    cr_assert(isnan(f));
    cr_assert_eq(empty, 1);
    cr_assert_eq(run1(CK_RED_NANSUM, &a, 1, 0, CK_F64, &f, &empty, &err),
                 CK_OK);
    cr_assert_eq(f, 0.0);
    cr_assert_eq(empty, 0);
}

Test(reduce, empty_blocks_fold_nothing)
{
    char st[2 * sizeof(ck_red_state)];
    int64_t shape[2] = {0, 2}, origin[2] = {0, 0}, ashape[2] = {0, 2};
    ck_red_args ra = {.op = CK_RED_MAX,
                      .in = CK_F64,
                      .data = NULL,
                      .ndim = 2,
                      .shape = shape,
                      .origin = origin,
                      .array_shape = ashape,
                      .axes = 1,
                      .state = st};
    double r[2];
    ck_err err = {0};
    ck_red_init(CK_RED_MAX, st, 2);
    cr_assert_eq(ck_cpu_reduce(NULL, &ra, &err), CK_OK);
    cr_assert_eq(ck_red_finalize(CK_RED_MAX, 0, st, 2, CK_F64, r, NULL, &err),
                 CK_EUSAGE);
}

/* ---- integers ---- */

/* np.sum(np.array([2**62] * 3, np.int64)) -> -4611686018427387904;
 * np.sum(np.array([2**63, 2**63, 5], np.uint64)) -> 5;
 * np.prod(np.array([2**40, 2**40], np.int64)) -> 0;
 * np.prod(np.array([-3, 5, 7], np.int8)) -> -105 (int64) */
Test(reduce, integer_sums_and_products_wrap)
{
    int64_t v[3] = {INT64_C(1) << 62, INT64_C(1) << 62, INT64_C(1) << 62};
    uint64_t u[3] = {UINT64_C(1) << 63, UINT64_C(1) << 63, 5};
    int64_t p[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    int8_t q[3] = {-3, 5, 7};
    int64_t s3[1] = {3}, s2[1] = {2}, one[1] = {1};
    arr a = mk(CK_I64, 1, s3, v), b = mk(CK_U64, 1, s3, u);
    arr c = mk(CK_I64, 1, s2, p), d = mk(CK_I8, 1, s3, q);
    int64_t r;
    uint64_t ru;
    ck_err err = {0};

    for (int k = 0; k < 2; k++) {
        cr_assert_eq(
            run(CK_RED_SUM, &a, 1, 0, k ? one : s3, CK_I64, &r, NULL, &err),
            CK_OK);
        cr_assert_eq(r, INT64_C(-4611686018427387904));
        cr_assert_eq(
            run(CK_RED_SUM, &b, 1, 0, k ? one : s3, CK_U64, &ru, NULL, &err),
            CK_OK);
        cr_assert_eq(ru, 5);
    }
    cr_assert_eq(run1(CK_RED_PROD, &c, 1, 0, CK_I64, &r, NULL, &err), CK_OK);
    cr_assert_eq(r, 0);
    cr_assert_eq(run1(CK_RED_PROD, &d, 1, 0, CK_I64, &r, NULL, &err), CK_OK);
    cr_assert_eq(r, -105);
}

/* np.min(np.array([2**63 + 1, 2**64 - 1], np.uint64)) -> 9223372036854775809
 * (exact, not rounded through float64); np.max(np.int64([-2**63, 2**53 +
 * 1])) -> 9007199254740993 */
Test(reduce, integer_min_max_are_exact)
{
    uint64_t u[2] = {(UINT64_C(1) << 63) + 1, UINT64_MAX};
    int64_t v[2] = {INT64_MIN, (INT64_C(1) << 53) + 1};
    int64_t s[1] = {2};
    arr a = mk(CK_U64, 1, s, u), b = mk(CK_I64, 1, s, v);
    uint64_t ru;
    int64_t r;
    ck_err err = {0};
    cr_assert_eq(run1(CK_RED_MIN, &a, 1, 0, CK_U64, &ru, NULL, &err), CK_OK);
    cr_assert_eq(ru, (UINT64_C(1) << 63) + 1);
    cr_assert_eq(run1(CK_RED_MAX, &b, 1, 0, CK_I64, &r, NULL, &err), CK_OK);
    cr_assert_eq(r, (INT64_C(1) << 53) + 1);
    cr_assert_eq(run1(CK_RED_ARGMIN, &b, 1, 0, CK_I64, &r, NULL, &err), CK_OK);
    cr_assert_eq(r, 0);
}

/* np.count_nonzero([0., nan, -0., 2.]) -> 2; np.all([1., nan]) -> True;
 * np.any([0., -0.]) -> False */
Test(reduce, nan_is_nonzero)
{
    double v[4] = {0., NAN, -0., 2.}, w[2] = {1., NAN}, z[2] = {0., -0.};
    int64_t s4[1] = {4}, s2[1] = {2};
    arr a = mk(CK_F64, 1, s4, v), b = mk(CK_F64, 1, s2, w);
    arr c = mk(CK_F64, 1, s2, z);
    int64_t r;
    uint8_t t;
    ck_err err = {0};
    cr_assert_eq(run1(CK_RED_COUNT_NONZERO, &a, 1, 0, CK_I64, &r, NULL, &err),
                 CK_OK);
    cr_assert_eq(r, 2);
    cr_assert_eq(run1(CK_RED_ALL, &b, 1, 0, CK_BOOL, &t, NULL, &err), CK_OK);
    cr_assert_eq(t, 1);
    cr_assert_eq(run1(CK_RED_ANY, &c, 1, 0, CK_BOOL, &t, NULL, &err), CK_OK);
    cr_assert_eq(t, 0);
}

/* np.nanargmin([nan, 3., nan, 1., 1.]) -> 3, np.nanargmax -> 1,
 * np.nanprod -> 3., and 3 values there and nonzero; with chunks of 2 a
 * chunk of only NaN folds first and must lose to any number; of only NaN
 * nanargmin raises, as NumPy does. */
Test(reduce, nan_forms_skip_nan)
{
    double v[5] = {NAN, 3., NAN, 1., 1.}, w[2] = {NAN, NAN};
    int64_t s5[1] = {5}, s2[1] = {2}, c2[1] = {2}, c1[1] = {1};
    arr a = mk(CK_F64, 1, s5, v), b = mk(CK_F64, 1, s2, w);
    int64_t r;
    double f;
    ck_err err = {0};
    const int64_t *chunks[3] = {s5, c2, c1};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(
            run(CK_RED_NANARGMIN, &a, 1, 0, chunks[k], CK_I64, &r, NULL, &err),
            CK_OK);
        cr_assert_eq(r, 3, "chunk %d", k);
        cr_assert_eq(
            run(CK_RED_NANARGMAX, &a, 1, 0, chunks[k], CK_I64, &r, NULL, &err),
            CK_OK);
        cr_assert_eq(r, 1, "chunk %d", k);
        cr_assert_eq(
            run(CK_RED_NANPROD, &a, 1, 0, chunks[k], CK_F64, &f, NULL, &err),
            CK_OK);
        cr_assert_eq(f, 3.0, "chunk %d", k);
        cr_assert_eq(run(CK_RED_NANCOUNT_NONZERO, &a, 1, 0, chunks[k], CK_I64,
                         &r, NULL, &err),
                     CK_OK);
        cr_assert_eq(r, 3, "chunk %d", k);
    }
    cr_assert_eq(run1(CK_RED_NANARGMIN, &b, 1, 0, CK_I64, &r, NULL, &err),
                 CK_EUSAGE);
    cr_assert(strstr(err.msg, "only NaN"), "%s", err.msg);
}

/* ---- the backend slot's checks ---- */

Test(reduce, bad_arguments_are_refused)
{
    double v[2] = {1, 2};
    char st[2 * sizeof(ck_red_state)];
    int64_t shape[1] = {2}, origin[1] = {0}, ashape[1] = {2}, far[1] = {1};
    ck_red_args ra = {.op = CK_RED_SUM,
                      .in = CK_F64,
                      .data = v,
                      .ndim = 1,
                      .shape = shape,
                      .origin = origin,
                      .array_shape = ashape,
                      .axes = 2,
                      .state = st};
    ck_err err = {0};
    ck_red_init(CK_RED_SUM, st, 2);
    cr_assert_eq(ck_cpu_reduce(NULL, &ra, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "axes mask 0x2"), "%s", err.msg);
    err = (ck_err){0};
    ra.axes = 1;
    ra.origin = far;
    cr_assert_eq(ck_cpu_reduce(NULL, &ra, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "outside the array"), "%s", err.msg);
    ra.origin = origin;
    ra.in = CK_DT_INVALID;
    cr_assert_eq(ck_cpu_reduce(NULL, &ra, &err), CK_EUSAGE);
    ra.in = CK_F64;
    ra.op = CK_RED_COUNT;
    cr_assert_eq(ck_cpu_reduce(NULL, &ra, &err), CK_EUSAGE);
}

/* A 0-d array is one element; reducing no axes keeps it. */
Test(reduce, zero_dimensional_block)
{
    double v = 4.5;
    char st[sizeof(ck_red_state)];
    ck_red_args ra = {.op = CK_RED_ARGMAX,
                      .in = CK_F64,
                      .data = &v,
                      .ndim = 0,
                      .axes = 0,
                      .state = st};
    int64_t r;
    double f;
    ck_err err = {0};
    ck_red_init(CK_RED_ARGMAX, st, 1);
    cr_assert_eq(ck_cpu_reduce(NULL, &ra, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(
        ck_red_finalize(CK_RED_ARGMAX, 0, st, 1, CK_I64, &r, NULL, &err),
        CK_OK);
    cr_assert_eq(r, 0);
    ra.op = CK_RED_MAX;
    ck_red_init(CK_RED_MAX, st, 1);
    cr_assert_eq(ck_cpu_reduce(NULL, &ra, &err), CK_OK);
    cr_assert_eq(ck_red_finalize(CK_RED_MAX, 0, st, 1, CK_F64, &f, NULL, &err),
                 CK_OK);
    cr_assert_eq(f, 4.5);
}
