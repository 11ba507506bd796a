/*
 * io/array.h - what an array in a store looks like, as plain types.
 * The description a store kind fills when it opens an array
 * (ck_array_info), the one a caller hands over to create one
 * (ck_array_spec), attribute values, chunk views and lists of names.
 * Both the dispatcher (io/store.h) and the store kinds (io/hdf5/,
 * io/zarr/) include this header; it knows no format and declares only
 * the two ck_names functions (io/array.c), so the kinds need not include
 * the dispatcher that calls them.
 */
#ifndef CK_ARRAY_H
#define CK_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "base/ck_grid.h"
#include "io/codec.h"

/* The longest dimension name, with its NUL. */
#define CK_DIM_NAME_MAX 64

typedef struct ck_store ck_store;
typedef struct ck_array ck_array;

typedef enum ck_store_kind {
    CK_KIND_NONE = 0,
    CK_KIND_HDF5,
    CK_KIND_ZARR,
} ck_store_kind;

typedef enum ck_layout {
    CK_LAYOUT_CHUNKED = 0,
    CK_LAYOUT_CONTIGUOUS, /* HDF5; read through a virtual chunking */
    CK_LAYOUT_COMPACT,    /* HDF5; one virtual chunk */
} ck_layout;

/* What netCDF says marks a variable's missing values when it has no
 * _FillValue attribute (netCDF4-python's auto mask, netCDF-C's fill
 * rules). */
typedef enum ck_nc_fill {
    CK_NC_FILL_ATTR = 0, /* not netCDF, or a _FillValue attribute says it */
    CK_NC_FILL_DEFAULT,  /* the type's default fill (ck_dtype_nc_fill) */
    CK_NC_FILL_NONE,     /* nothing: a byte variable written without fill
                            (netCDF4 masks no default fill for bytes then) */
} ck_nc_fill;

/* What a store says about one array. */
typedef struct ck_array_info {
    char name[512]; /* "/g/x"; "/" for a Zarr store that is one array */
    int ndim;
    int64_t shape[CK_MAX_DIMS];
    int64_t chunks[CK_MAX_DIMS]; /* the read granularity (virtual for
                                    contiguous and compact layouts) */
    ck_dtype dtype;
    int big_endian; /* byte order on disk */
    char order;     /* 'C' or 'F' (Zarr) */
    int has_fill;
    ck_scalar fill; /* in dtype's kind (see ck_dtype_fill) */
    ck_layout layout;
    ck_codec_spec codec;   /* the compression, as --compress would say it */
    char compressor[256];  /* for people: "zstd:3", "gzip:4+shuffle",
                              "deflate:4+fletcher32", "none"; Zarr
                              filters first: "delta:int16+zstd:3" */
    int64_t stored_bytes;  /* bytes of chunk data on disk; -1 unknown */
    int64_t chunks_stored; /* chunks present on disk; -1 unknown */
    int zarr_format;       /* 2 or 3; 0 for HDF5 */
    /* Zarr v3 shard shape (a multiple of chunks); all 0 when not
     * sharded. */
    int64_t shards[CK_MAX_DIMS];
    /* Zarr v3: the codecs, for people; "" otherwise
     * ("sharding_indexed[64,64](bytes:little+zstd:3)
     * index(bytes:little+crc32c)@end"). */
    char codecs[256];
    /* Dimension names (netCDF-4/HDF5 dimension scales, Zarr v2
     * _ARRAY_DIMENSIONS, v3 dimension_names); has_dims 0 when the store
     * names none, "" for an axis it leaves unnamed. */
    int has_dims;
    char dims[CK_MAX_DIMS][CK_DIM_NAME_MAX];
    /* HDF5: bit d set when axis d may grow (maximum size unlimited, as a
     * netCDF record dimension's); 0 for Zarr. */
    unsigned unlimited;
    /* HDF5: a netCDF-4 variable's missing values when it has no
     * _FillValue attribute (netCDF-4: the root has _NCProperties, or the
     * name ends in .nc); the HDF5 fill value ('fill') can differ (0 for
     * a variable written without fill). */
    ck_nc_fill nc_fill;
} ck_array_info;

/* What a new array should look like. */
typedef struct ck_array_spec {
    const char *name; /* "/x", "/g/x"; Zarr: "/" makes the store an array */
    int ndim;
    int64_t shape[CK_MAX_DIMS];
    int64_t chunks[CK_MAX_DIMS];
    ck_dtype dtype;
    ck_codec_spec codec;
    int has_fill;
    ck_scalar fill;
    /* Zarr only.  zarr_format 2 or 3 (0: 2); every array and group of one
     * store has the same.  shards: v3 shard shape, a multiple of chunks
     * (ndim 0s: no sharding). */
    int zarr_format;
    int64_t shards[CK_MAX_DIMS];
    /* Dimension names to write (has_dims 0: none); see ck_array_info. */
    int has_dims;
    char dims[CK_MAX_DIMS][CK_DIM_NAME_MAX];
    /* HDF5 only: bit d makes axis d growable (maximum size unlimited) at
     * its length shape[d]; a 0-long axis always is.  Zarr ignores it. */
    unsigned unlimited;
} ck_array_spec;

/* Fits a new array's chunks (and shards) to its shape.  A chunk axis
 * longer than the array is cut to the array: nothing is gained by writing
 * padding (h5py cuts too).  A shard axis is cut to the smallest multiple of
 * that chunk which covers the array, so it stays a whole number of inner
 * chunks (Zarr v3 sharding_indexed) and covers no shard's worth of empty
 * index.  Before anything is cut, CK_EUSAGE when a shard axis is not a
 * multiple of the chunk axis, naming both as the caller gave them. */
ck_code ck_array_spec_fit(ck_array_spec *spec, ck_err *err);

/* A list of array names, owned by the caller: ck_names_release(). */
typedef struct ck_names {
    char **v;
    int n, cap;
} ck_names;

ck_code ck_names_push(ck_names *l, const char *s, ck_err *err);
void ck_names_release(ck_names *l);

/* A chunk's bytes seen where the store keeps them (mapped from the page
 * cache), read-only, without a copy. */
typedef struct ck_chunk_view {
    const void *data; /* a full chunk, as ck_array_read_chunk gives it */
    void *base;       /* the mapping */
    size_t len;
} ck_chunk_view;

/* One attribute value: what a fitted model's metadata needs (a name, a
 * count, a flag, a number), not all that HDF5 or JSON can hold. */
typedef enum ck_attr_kind {
    CK_ATTR_STR, /* str: UTF-8, NUL-terminated, at most 255 bytes */
    CK_ATTR_F64, /* f64 */
    CK_ATTR_I64, /* i64 */
} ck_attr_kind;

typedef struct ck_attr {
    ck_attr_kind kind;
    double f64;
    int64_t i64;
    char str[256];
} ck_attr;

#endif
