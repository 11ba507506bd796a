/*
 * pipelines/gen.h - reproducible random arrays (chunkctl gen).
 * Element i of an array depends only on the seed, the distribution and i
 * (its C-order linear index), never on chunking or thread count, so the same
 * command makes the same numbers everywhere.
 */
#ifndef CK_GEN_H
#define CK_GEN_H

#include <stdint.h>

#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "base/ck_grid.h"
#include "base/ck_progress.h"
#include "io/codec.h"

typedef enum ck_dist {
    CK_DIST_UNIFORM = 0, /* [a, b) */
    CK_DIST_NORMAL,      /* mean a, standard deviation b */
    CK_DIST_INTEGERS,    /* integers in [a, b) */
} ck_dist;

typedef struct ck_gen_opts {
    const char *dst; /* PATH[:DATASET] */
    int ndim;
    int64_t shape[CK_MAX_DIMS];
    int chunks_ndim; /* 0: about 8 MiB chunks */
    int64_t chunks[CK_MAX_DIMS];
    ck_dtype dtype;
    ck_codec_spec codec;
    int zarr_format; /* Zarr output: 2 or 3 (0: 2) */
    int shards_ndim; /* Zarr v3: shard shape; 0: none */
    int64_t shards[CK_MAX_DIMS];
    ck_dist dist;
    double a, b;
    uint64_t seed;
    int force;
    int64_t memory;
    int threads;
    ck_progress *progress;
} ck_gen_opts;

ck_code ck_gen(const ck_gen_opts *o, ck_err *err);
/* "integers" draws from [lo, hi) as NumPy's Generator.integers does:
 * whole bounds, none past dtype t's range (which the values would
 * otherwise be clipped to).  0 if they fit; 1 if a bound is not whole; 2
 * if past the range, which is then [*tlo, *thi]. */
int ck_gen_integers_fit(ck_dtype t, double lo, double hi, double *tlo,
                        double *thi);
/* "uniform" draws lo + (hi - lo) * u, so the width hi - lo must be a
 * finite double, as NumPy's Generator.uniform requires (OverflowError
 * "high - low range exceeds valid bounds"); past it every value would be
 * inf or nan.  1 if it is, 0 if not. */
int ck_gen_uniform_fits(double lo, double hi);

/* Value i of the stream (exposed for tests of the distribution). */
double ck_gen_value(ck_dist dist, double a, double b, uint64_t seed,
                    uint64_t i);

/* Writes the values of the box start[]/box[] of an array of shape[] into
 * dst, a C-order array of shape dst_shape[] (the box lands at its origin),
 * as dtype t.  row is scratch for box[nd - 1] doubles. */
void ck_gen_box(ck_dist dist, double a, double b, uint64_t seed, ck_dtype t,
                int nd, const int64_t *shape, const int64_t *start,
                const int64_t *box, const int64_t *dst_shape, void *dst,
                double *row);

/* A chunk shape of about 'target' bytes for shape: whole trailing axes
 * first (the same rule io/hdf5 uses for contiguous datasets). */
void ck_auto_chunks(int ndim, const int64_t *shape, size_t elem, size_t target,
                    int64_t *chunks);

#endif
