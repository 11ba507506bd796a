/*
 * ops/quantile.h - exact order statistics for quantile, percentile and
 * median: values as ordered 64-bit keys, selection of several ranks at
 * once, and NumPy 1.24's arithmetic on the chosen values (its linear
 * interpolation, its median's mean of the middle pair).  Pure kernels:
 * gathering the values out of core, threads and passes are
 * pipelines/op_quantile.c's business.
 *
 * Why keys: a key is an unsigned integer that orders as its value does
 * (floats by sign and magnitude, -0.0 just below +0.0), so a histogram of
 * keys is exact integer arithmetic, and the k-th smallest key is one bit
 * pattern whatever order the values were gathered in: results do not
 * depend on the thread schedule.
 */
#ifndef CK_OPS_QUANTILE_H
#define CK_OPS_QUANTILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_dtype.h"

/* NaN's key: above every other key (no number maps to it). */
#define CK_Q_NAN_KEY UINT64_MAX

/* Keys of n values of dtype t (any dtype: floats by value, NaN to
 * CK_Q_NAN_KEY; signed integers offset by 2^63; unsigned and bool as
 * they are). */
void ck_q_keys(ck_dtype t, const void *src, size_t n, uint64_t *dst);

/* Rearranges v[0..n) so that v[ranks[j]] is the ranks[j]-th smallest key
 * (0-based) for every j; ranks ascending, distinct, each < n.  Three-way
 * quickselect (many equal keys cost nothing extra) with a deterministic
 * pivot, the median of three (of nine for long ranges); past a depth of
 * 2 log2(n) the range is heapsorted, so the worst case is O(n log n). */
void ck_q_select(uint64_t *v, int64_t n, const int64_t *ranks, int nranks);

/* NumPy's method "linear" for n > 0 values and quantile q in [0, 1]: the
 * virtual index (n - 1) * q lies between ranks *lo and *hi with weight
 * *t, as numpy.lib.function_base._get_indexes and _get_gamma make them
 * (at or past the last rank both are n - 1 and *t is the index + 1). */
void ck_q_linear(int64_t n, double q, int64_t *lo, int64_t *hi, double *t);

/* NumPy 1.24's _lerp(a, b, t) on the values of keys ka <= kb of dtype dt,
 * as a float64 result: diff = b - a in dt (float32 differences are
 * rounded to float32, as NumPy subtracts the float32 values; integer
 * differences are exact where NumPy's would wrap in dt), then a + diff *
 * t, or b - diff * (1 - t) where t >= 0.5. */
double ck_q_lerp(ck_dtype dt, uint64_t ka, uint64_t kb, double t);

/* numpy.median's value from the middle keys: for an odd count ka == kb
 * and the value itself, or with 'twice' (numpy.nanmedian over a kept axis
 * of fewer than 600 values, which takes the masked-array median) (x + x)
 * / 2; for an even count the mean a + (0 + b), / 2.  In float32 for
 * float32 data (the result dtype), float64 otherwise. */
double ck_q_median(ck_dtype dt, uint64_t ka, uint64_t kb, int odd, int twice);

#endif
