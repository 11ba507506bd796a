/*
 * io/zarr/meta.h - the Zarr v2 array header (.zarray) and .zattrs text.
 * Parses and writes the JSON of one array's metadata (Zarr storage spec v2,
 * "Metadata"); knows nothing of directories, chunk files or codecs beyond
 * mapping a numcodecs compressor config onto a ck_codec_spec.
 */
#ifndef CK_ZARR_META_H
#define CK_ZARR_META_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "base/ck_grid.h"
#include "io/codec.h"
#include "io/array.h"

/* .zattrs, .zarray and friends are small: a bigger file is an error, not
 * an allocation. */
#define CK_ZARR_META_MAX ((size_t)16 << 20)

typedef struct ck_zarr_meta {
    int ndim;
    int64_t shape[CK_MAX_DIMS];
    int64_t chunks[CK_MAX_DIMS];
    ck_dtype dtype;
    int big_endian;      /* byte order of the chunks on disk */
    char order;          /* 'C' or 'F' (first axis fastest in a chunk) */
    int has_fill;        /* 0 for fill_value null */
    ck_scalar fill;      /* in dtype's kind, as ck_dtype_fill reads it */
    ck_codec_spec codec; /* CK_CODEC_NONE for compressor null */
    char dim_sep;        /* '.' or '/': chunk key "0.3.1" or "0/3/1" */
} ck_zarr_meta;

/* Parses the text of a .zarray ('len' bytes; need not end in NUL).  'where'
 * names the file in messages ("s.zarr/.zarray").  Accepts zarr_format 2;
 * dtypes |b1, |i1, |u1 and <i2 >i2 ... <f8 >f8 (any byte order character
 * for 1-byte types); compressor null or blosc, zstd, zlib, gzip; filters
 * null or []; fill_value a number, null, "NaN", "Infinity", "-Infinity", or
 * true/false for bool; order "C" or "F"; dimension_separator "." (also
 * when absent or null) or "/".  Integer fill values are exact over the
 * whole 64-bit range.  Shape and chunk lengths must be integers below 2^53.
 * CK_EFORMAT naming the key for anything missing, ill-typed or invalid
 * (with line and column for invalid JSON); CK_ENOTSUP naming the
 * compressor or filters that are valid Zarr but not supported.  The grid
 * itself (element count overflow) is checked by ck_grid_init. */
ck_code ck_zarr_meta_parse(const char *text, size_t len, const char *where,
                           ck_zarr_meta *out, ck_err *err);

/* Formats m as the text of a .zarray (malloc'd, the caller frees): keys
 * sorted as zarr-python writes them, dtype in m->big_endian order, integer
 * values exact.  CK_ENOTSUP when m->codec is zstd, zlib or gzip with a
 * shuffle (numcodecs would need a Shuffle filter); CK_ENOMEM. */
ck_code ck_zarr_meta_format(const ck_zarr_meta *m, char **out, ck_err *err);

/* Writes the Zarr dtype string of t ("<f8", "|u1", "|b1") into buf (at
 * least 4 bytes) and returns buf; "" for CK_DT_INVALID. */
const char *ck_zarr_dtype_str(ck_dtype t, int big_endian, char *buf);

/* Checks that text ('len' bytes) is one JSON object, as .zattrs must be.
 * CK_EFORMAT naming 'where' otherwise (with line and column). */
ck_code ck_zarr_attrs_check(const char *text, size_t len, const char *where,
                            ck_err *err);

/* Reads member 'key' of the .zattrs object in text ('len' bytes), which
 * ck_zarr_attrs_check accepted once its bare NaN, Infinity and -Infinity
 * (zarr-python writes them so) were quoted.  Values are read as Python's
 * json module reads them: see ck_store_get_attr for the kinds, and the
 * last of duplicate keys wins.  'label' ("s.zarr:/coef") starts messages:
 * CK_EFORMAT "LABEL: no attribute 'key'", CK_ENOTSUP for values that are
 * no ck_attr. */
ck_code ck_zarr_attrs_get(const char *text, size_t len, const char *key,
                          const char *label, ck_attr *v, ck_err *err);

/* Makes the text of a .zattrs (malloc'd into *out, the caller frees) from
 * text (NULL: there was none) with member 'key' set to v: in the place of
 * its old value, else appended.  Other members are copied as written, so
 * their types and exact values stay.  Strings and keys are written in
 * ASCII, as zarr-python 2 reads them.  A float is written with a '.' or an
 * exponent, non-finite ones as bare NaN, Infinity, -Infinity, as
 * zarr-python does. */
ck_code ck_zarr_attrs_set(const char *text, size_t len, const char *key,
                          const ck_attr *v, const char *label, char **out,
                          ck_err *err);

/* Checks that text is a .zgroup: a JSON object with zarr_format 2.
 * CK_EFORMAT naming 'where' otherwise. */
ck_code ck_zarr_zgroup_check(const char *text, size_t len, const char *where,
                             ck_err *err);

#endif
