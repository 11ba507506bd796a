/*
 * ops/hist.c - histogram edges, their checks, 2-D histograms and
 * densities, following NumPy 1.24's numpy/lib/histograms.py.  Counting
 * one block into a 1-D histogram is the backend's job (ck_op_hist);
 * histogram2d is counted here, as histogramdd counts it, since it has no
 * fast path worth a backend slot.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "ops/hist.h"

/* Do lo and hi fit a float32 without overflow?  NumPy 1.24 types a Python
 * float by value, so a range beyond float32 makes the bins float64 even
 * for float32 data. */
static int fits_float32(double v)
{
    return fabs(v) <= FLT_MAX;
}

ck_code ck_hist_uniform_edges(int nbins, double lo, double hi, ck_dtype t,
                              double *edges, ck_err *err)
{
    if (nbins < 1)
        return ck_err_set(err, CK_EUSAGE, "bins must be positive, got %d",
                          nbins);
    if (!isfinite(lo) || !isfinite(hi))
        return ck_err_set(err, CK_EUSAGE,
                          "supplied range of [%g, %g] is not "
                          "finite",
                          lo, hi);
    if (lo > hi)
        return ck_err_set(err, CK_EUSAGE,
                          "max must be larger than min in range "
                          "(%g > %g)",
                          lo, hi);
    if (lo == hi) { /* _get_outer_edges: avoid a zero width */
        lo = lo - 0.5;
        hi = hi + 0.5;
    }

    /* _get_bin_edges: np.linspace(lo, hi, nbins + 1, dtype=bin_type).
     * linspace computes in float64 (its start and stop are Python floats)
     * and casts at the end: y = arange(num) * step + start, y[-1] = stop,
     * and y = arange(num) / div * delta + start when step underflows to 0
     * (gh-5437). */
    int f32 = t == CK_F32 && fits_float32(lo) && fits_float32(hi);
    double delta = hi - lo, div = (double)nbins;
    double step = delta / div;

    for (int i = 0; i <= nbins; i++) {
        double y;
        if (step == 0) {
            y = (double)i / div;
            y = y * delta;
        } else {
            y = (double)i * step;
        }
        y = y + lo;
        if (i == nbins)
            y = hi;
        edges[i] = f32 ? (double)(float)y : y;
    }
    return CK_OK;
}

ck_code ck_hist_check_edges(const double *edges, int n, ck_err *err)
{
    if (n < 2)
        return ck_err_set(err, CK_EUSAGE,
                          "bins needs at least two edges, got %d", n);
    for (int i = 0; i < n; i++) {
        if (!isfinite(edges[i]))
            return ck_err_set(err, CK_EUSAGE, "bin edge %d (%g) is not finite",
                              i, edges[i]);
        if (i > 0 && edges[i - 1] > edges[i])
            return ck_err_set(err, CK_EUSAGE,
                              "bins must increase monotonically: "
                              "edge %d (%g) is below edge %d (%g)",
                              i, edges[i], i - 1, edges[i - 1]);
    }
    return CK_OK;
}

/* histogramdd's bin of v (numpy/lib/histograms.py, NumPy 1.24):
 *   k = searchsorted(edges, v, side='right')   (compared in float64)
 *   k -= (v == edges[-1])                      (compared in the sample's
 *                                               dtype: float32 for float32
 *                                               samples, by value-based
 *                                               casting of the scalar)
 * and bins 1..n of k are the histogram's, 0 and n + 1 outliers.  So a
 * float32 value equal to the last edge once both are rounded to float32
 * moves down one bin, wherever it was.  Returns the bin or -1.  Uniform
 * edges start from an arithmetic guess and walk to the same k. */
static int bin_of(double v, const double *e, int n, int uniform, int f32)
{
    int k;

    if (isnan(v)) {
        k = n + 1; /* NaN sorts last */
    } else if (uniform) {
        double g = (v - e[0]) * ((double)n / (e[n] - e[0])) + 1;
        k = !(g > 0) ? 0 : g >= n + 1 ? n + 1 : (int)g;
        while (k > 0 && e[k - 1] > v)
            k--;
        while (k < n + 1 && e[k] <= v)
            k++;
    } else {
        int lo = 0, hi = n + 1; /* e[i] <= v for i < lo, > v for i >= hi */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (e[mid] <= v)
                lo = mid + 1;
            else
                hi = mid;
        }
        k = lo;
    }
    if (f32 && fits_float32(v) && fits_float32(e[n]) ? (float)v == (float)e[n]
                                                     : v == e[n])
        k--;
    return k >= 1 && k <= n ? k - 1 : -1;
}

/* Is np.array((x, y)) float32?  Only when one is float32 and the other
 * fits in it (float32, bool or an integer of up to 16 bits). */
static int sample_float32(ck_dtype a, ck_dtype b)
{
    int a_small = a == CK_BOOL || a == CK_I8 || a == CK_U8 || a == CK_I16 ||
                  a == CK_U16 || a == CK_F32;
    int b_small = b == CK_BOOL || b == CK_I8 || b == CK_U8 || b == CK_I16 ||
                  b == CK_U16 || b == CK_F32;
    return (a == CK_F32 || b == CK_F32) && a_small && b_small;
}

void ck_hist2d_accumulate(const ck_hist2d_args *a)
{
    int f32 = sample_float32(a->tx, a->ty);

    for (size_t i = 0; i < a->n; i++) {
        int bx = bin_of(ck_dtype_load_f64(a->tx, a->x, i), a->xedges, a->nx,
                        a->xuniform, f32);
        if (bx < 0)
            continue;
        int by = bin_of(ck_dtype_load_f64(a->ty, a->y, i), a->yedges, a->ny,
                        a->yuniform, f32);
        if (by < 0)
            continue;
        a->counts[(size_t)bx * (size_t)a->ny + (size_t)by] +=
            a->weights ? ck_dtype_load_f64(a->wtype, a->weights, i) : 1.0;
    }
}

/* NumPy's pairwise_sum (numpy/core/src/umath/loops_utils.h.src) for a
 * contiguous float64 array, so totals match n.sum() bit for bit. */
static double pairwise_sum(const double *a, size_t n)
{
    if (n < 8) {
        double res = 0.;
        for (size_t i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8], res;
        size_t i;
        for (i = 0; i < 8; i++)
            r[i] = a[i];
        for (i = 8; i < n - (n % 8); i += 8) {
            for (int j = 0; j < 8; j++)
                r[j] += a[i + j];
        }
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* Bin widths as np.diff(bin_edges) takes them: in float32 when the edges
 * are float32 values (histogram of float32 data), else float64. */
static int all_float32(const double *e, int n)
{
    for (int i = 0; i <= n; i++) {
        if (!fits_float32(e[i]) || (double)(float)e[i] != e[i])
            return 0;
    }
    return 1;
}

void ck_hist_density(double *counts, int nbins, const double *edges)
{
    /* np.histogram: n / db / n.sum() */
    double total = pairwise_sum(counts, (size_t)nbins);
    int f32 = all_float32(edges, nbins);

    for (int i = 0; i < nbins; i++) {
        double w = f32 ? (double)((float)edges[i + 1] - (float)edges[i])
                       : edges[i + 1] - edges[i];
        counts[i] = counts[i] / w / total;
    }
}

void ck_hist2d_density(double *counts, int nx, int ny, const double *xedges,
                       const double *yedges)
{
    /* histogramdd: s = hist.sum(); hist / dx[:, None] / dy[None, :] / s */
    double total = pairwise_sum(counts, (size_t)nx * (size_t)ny);

    for (int i = 0; i < nx; i++) {
        for (int j = 0; j < ny; j++) {
            double *c = &counts[(size_t)i * (size_t)ny + (size_t)j];
            *c = *c / (xedges[i + 1] - xedges[i]);
            *c = *c / (yedges[j + 1] - yedges[j]);
            *c /= total;
        }
    }
}
