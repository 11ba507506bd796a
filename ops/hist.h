/*
 * ops/hist.h - numpy.histogram and histogram2d, out of core.
 * Counts are accumulated per chunk (the backend's hist slot) into doubles
 * and added in chunk order.  Edges follow NumPy exactly: for uniform bins,
 * linspace(lo, hi, nbins + 1) in the result type of the range and the
 * data, which is float32 for float32 data (NumPy computes float32 edges
 * there; dask uses float64, and their counts can differ).
 */
#ifndef CK_OPS_HIST_H
#define CK_OPS_HIST_H

#include "backends/backend.h"
#include "base/ck_dtype.h"
#include "base/ck_err.h"

/* Fills edges[nbins + 1] for nbins uniform bins over [lo, hi] the way
 * numpy.histogram does for data of dtype t (lo == hi widens to lo - 0.5,
 * hi + 0.5 as NumPy does).  CK_EUSAGE when nbins < 1, lo > hi, or either
 * is not finite. */
ck_code ck_hist_uniform_edges(int nbins, double lo, double hi, ck_dtype t,
                              double *edges, ck_err *err);

/* Checks explicit edges: at least two, finite, monotonically increasing
 * (CK_EUSAGE naming the first offending index otherwise). */
ck_code ck_hist_check_edges(const double *edges, int n, ck_err *err);

/* Adds one block of values through the backend. */
ck_code ck_op_hist(const ck_be *be, const ck_hist_args *a, ck_err *err);

/* 2-D: counts[nx * ny] (row-major: x bin, then y bin) of pairs (x[i],
 * y[i]) as numpy.histogram2d, both arrays of dtype tx / ty with n values.
 * Values outside either range or NaN are dropped.  histogram2d's edges are
 * float64 whatever the data (histogramdd calls linspace without a dtype):
 * make uniform ones with ck_hist_uniform_edges(..., CK_F64, ...). */
typedef struct ck_hist2d_args {
    ck_dtype tx, ty;
    const void *x, *y;
    size_t n;
    const void *weights;
    ck_dtype wtype;
    int nx, ny;
    const double *xedges, *yedges;
    int xuniform, yuniform;
    double *counts;
} ck_hist2d_args;

void ck_hist2d_accumulate(const ck_hist2d_args *a);

/* Converts counts to a density (counts / total / bin width), NumPy's
 * density=True. */
void ck_hist_density(double *counts, int nbins, const double *edges);
/* The same for a 2-D histogram: counts / total / x width / y width, as
 * numpy.histogram2d's density=True. */
void ck_hist2d_density(double *counts, int nx, int ny, const double *xedges,
                       const double *yedges);

#endif
