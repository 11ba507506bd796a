/*
 * tests/ops/test_quantile.c - the Criterion suite "quantile": ops/quantile.h.
 * Keys order as their values; selection finds every asked rank (checked
 * against a sort) on random, tied, sorted, reversed and organ-pipe data;
 * NumPy 1.24's linear indexes, lerp and median arithmetic on the values
 * where they matter (the t >= 0.5 branch, float32 differences, inf).
 * Whole arrays against NumPy are in tests/interop/test_quantile.py.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/quantile.h"

TestSuite(quantile, .description = "ops/quantile.h: keys, selection, "
                                   "NumPy's quantile arithmetic");

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t next_rand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

Test(quantile, float_keys_order_as_the_values)
{
    double v[] = {-INFINITY, -1e308, -1.5, -1e-310, -0.0,  0.0,
                  1e-310,    1e-300, 1.0,  1.5,     1e308, INFINITY};
    uint64_t k[12], n;
    float f[] = {-INFINITY, -2.5f, -0.0f, 0.0f, 1e-40f, 3.0f, INFINITY};
    uint64_t kf[7];
    double nan = NAN;

    ck_q_keys(CK_F64, v, 12, k);
    for (int i = 1; i < 12; i++)
        cr_assert_lt(k[i - 1], k[i], "key %d", i);
    ck_q_keys(CK_F32, f, 7, kf);
    for (int i = 1; i < 7; i++)
        cr_assert_lt(kf[i - 1], kf[i], "float32 key %d", i);
    ck_q_keys(CK_F64, &nan, 1, &n);
    cr_assert_eq(n, CK_Q_NAN_KEY);
    nan = -NAN;
    ck_q_keys(CK_F64, &nan, 1, &n);
    cr_assert_eq(n, CK_Q_NAN_KEY);
}

Test(quantile, integer_keys_order_as_the_values)
{
    int64_t s[] = {INT64_MIN, -5, -1, 0, 1, INT64_MAX};
    int8_t s8[] = {-128, -1, 0, 127};
    uint64_t u[] = {0, 1, UINT64_MAX - 1, UINT64_MAX};
    uint64_t k[6];

    ck_q_keys(CK_I64, s, 6, k);
    for (int i = 1; i < 6; i++)
        cr_assert_lt(k[i - 1], k[i]);
    ck_q_keys(CK_I8, s8, 4, k);
    for (int i = 1; i < 4; i++)
        cr_assert_lt(k[i - 1], k[i]);
    ck_q_keys(CK_U64, u, 4, k);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(k[i], u[i]);
}

/* Selects ranks of v[n] and checks each against the sorted copy. */
static void check_select(uint64_t *v, int64_t n, const int64_t *rk, int nr)
{
    uint64_t *s = malloc(sizeof *s * (size_t)n);

    cr_assert_not_null(s);
    memcpy(s, v, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_u64);
    ck_q_select(v, n, rk, nr);
    for (int j = 0; j < nr; j++)
        cr_assert_eq(v[rk[j]], s[rk[j]], "rank %lld of %lld", (long long)rk[j],
                     (long long)n);
    free(s);
}

Test(quantile, selection_finds_every_rank)
{
    enum { N = 100003 };
    uint64_t *v = malloc(sizeof *v * N);
    int64_t rk[] = {0, 1, 17, N / 3, N / 2, N / 2 + 1, N - 2, N - 1};

    cr_assert_not_null(v);
    for (int shape = 0; shape < 6; shape++) {
        for (int64_t i = 0; i < N; i++) {
            switch (shape) {
            case 0: /* random */
                v[i] = next_rand();
                break;
            case 1: /* few distinct values: ties everywhere */
                v[i] = next_rand() % 5;
                break;
            case 2: /* sorted */
                v[i] = (uint64_t)i;
                break;
            case 3: /* reversed */
                v[i] = (uint64_t)(N - i);
                break;
            case 4: /* organ pipe */
                v[i] = (uint64_t)(i < N / 2 ? i : N - i);
                break;
            default: /* all equal */
                v[i] = 42;
                break;
            }
        }
        check_select(v, N, rk, 8);
        check_select(v, N, rk + 4, 1);
    }
    for (int64_t n = 1; n < 40; n++) { /* short ranges */
        for (int64_t i = 0; i < n; i++)
            v[i] = next_rand() % 7;
        int64_t r[2] = {0, n - 1};
        check_select(v, n, r, n > 1 ? 2 : 1);
    }
    free(v);
}

Test(quantile, numpy_linear_indexes)
{
    int64_t lo, hi;
    double t;

    ck_q_linear(10, 0.5, &lo, &hi, &t); /* 4.5 */
    cr_assert(lo == 4 && hi == 5 && t == 0.5);
    ck_q_linear(10, 0.0, &lo, &hi, &t);
    cr_assert(lo == 0 && hi == 1 && t == 0.0);
    /* at the last index, both are the last and t is the index + 1 */
    ck_q_linear(10, 1.0, &lo, &hi, &t);
    cr_assert(lo == 9 && hi == 9 && t == 10.0);
    ck_q_linear(1, 0.3, &lo, &hi, &t);
    cr_assert(lo == 0 && hi == 0 && t == 1.0);
}

static uint64_t key(double x)
{
    uint64_t k;
    ck_q_keys(CK_F64, &x, 1, &k);
    return k;
}

Test(quantile, numpy_lerp)
{
    /* t < 0.5: a + (b - a) t; t >= 0.5: b - (b - a)(1 - t) */
    cr_assert_eq(ck_q_lerp(CK_F64, key(1.0), key(2.0), 0.25), 1.25);
    cr_assert_eq(ck_q_lerp(CK_F64, key(0.1), key(0.7), 0.7),
                 0.7 - (0.7 - 0.1) * (1 - 0.7));
    cr_assert_eq(ck_q_lerp(CK_F64, key(0.1), key(0.7), 0.3),
                 0.1 + (0.7 - 0.1) * 0.3);
    /* inf - inf is NaN, as NumPy gives quantile([1, inf], 1.0) */
    cr_assert(isnan(ck_q_lerp(CK_F64, key(INFINITY), key(INFINITY), 2.0)));
    /* float32: the difference is rounded to float32 first */
    float a = 0.1f, b = 16777216.0f;
    uint64_t ka, kb;
    ck_q_keys(CK_F32, &a, 1, &ka);
    ck_q_keys(CK_F32, &b, 1, &kb);
    cr_assert_eq(ck_q_lerp(CK_F32, ka, kb, 0.25),
                 (double)a + (double)(b - a) * 0.25);
    /* integers: the exact difference, where int8's would wrap */
    int8_t i8[2] = {-100, 100};
    ck_q_keys(CK_I8, i8 + 1, 1, &kb);
    ck_q_keys(CK_I8, i8, 1, &ka);
    cr_assert_eq(ck_q_lerp(CK_I8, ka, kb, 0.5), 0.0);
    int64_t i64[2] = {INT64_MIN, INT64_MAX};
    ck_q_keys(CK_I64, i64, 1, &ka);
    ck_q_keys(CK_I64, i64 + 1, 1, &kb);
    cr_assert_eq(ck_q_lerp(CK_I64, ka, kb, 0.0), -9223372036854775808.0);
}

Test(quantile, numpy_median)
{
    cr_assert_eq(ck_q_median(CK_F64, key(1.0), key(4.0), 0, 0), 2.5);
    cr_assert_eq(ck_q_median(CK_F64, key(3.0), key(3.0), 1, 0), 3.0);
    /* the masked median's odd middle, (x + x) / 2, overflows */
    cr_assert_eq(ck_q_median(CK_F64, key(1e308), key(1e308), 1, 0), 1e308);
    cr_assert(isinf(ck_q_median(CK_F64, key(1e308), key(1e308), 1, 1)));
    /* float32: the sum is rounded to float32 */
    float a = 1.0f, b = 1.0f + 0x1p-23f;
    uint64_t ka, kb;
    ck_q_keys(CK_F32, &a, 1, &ka);
    ck_q_keys(CK_F32, &b, 1, &kb);
    cr_assert_eq(ck_q_median(CK_F32, ka, kb, 0, 0), (double)((a + b) / 2));
    int64_t i[2] = {3, 6};
    ck_q_keys(CK_I64, i, 1, &ka);
    ck_q_keys(CK_I64, i + 1, 1, &kb);
    cr_assert_eq(ck_q_median(CK_I64, ka, kb, 0, 0), 4.5);
}
