/*
 * pipelines/copy.h - convert, rechunk, recompress and retype arrays between
 * stores, out of core (chunkctl copy).
 */
#ifndef CK_COPY_H
#define CK_COPY_H

#include <stdint.h>

#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "base/ck_grid.h"
#include "base/ck_progress.h"
#include "io/codec.h"

typedef struct ck_copy_opts {
    const char *src; /* PATH[:DATASET]; PATH alone copies every array */
    const char *dst; /* PATH[:DATASET] */
    int chunks_ndim; /* 0: keep the source chunking */
    int64_t chunks[CK_MAX_DIMS];
    int has_codec; /* 0: keep the source compression */
    ck_codec_spec codec;
    /* --filters: Zarr filters before the compressor (a trailing shuffle
     * before zstd/gzip/zlib is HDF5's shuffle filter too).  0: keep the
     * source's while the dtype is kept and the output is Zarr. */
    int has_filters;
    int nfilters;
    ck_filter filters[CK_FILTERS_MAX];
    ck_dtype dtype; /* CK_DT_INVALID: keep the source dtype */
    /* --zarr-format: 2 or 3 for a Zarr output; 0: the source's when it is
     * Zarr, else 2. */
    int zarr_format;
    int shards_ndim; /* --shards (v3); 0: the source's, when kept */
    int64_t shards[CK_MAX_DIMS];
    int force;           /* replace an existing dst */
    int resume;          /* --resume: a killed copy's chunks */
    const char *cmdline; /* for the output's history; NULL: "chunkctl copy" */
    int64_t memory;      /* the --memory budget, bytes */
    int threads;         /* 0: all cores */
    ck_progress *progress;
} ck_copy_opts;

/* Copies src to dst.  dst appears only complete; on any error nothing is
 * left at dst (an existing dst is kept unless the copy succeeded with
 * force).  Attributes of the arrays and of the root group are copied. */
ck_code ck_copy(const ck_copy_opts *o, ck_err *err);

#endif
