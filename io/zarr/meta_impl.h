/*
 * io/zarr/meta_impl.h - the pieces of io/zarr/meta.c that the Zarr v3
 * metadata (io/zarr/meta3.c) shares with v2: JSON parsing with positions
 * in messages, exact integers, fill values and numcodecs configs.
 * Private to io/zarr/.
 */
#ifndef CK_ZARR_META_IMPL_H
#define CK_ZARR_META_IMPL_H

#include <cjson/cJSON.h>

#include "io/zarr/meta.h"

/* Parses exactly one JSON value of text (line and column in messages). */
ck_code ck_zarr_parse_json(const char *text, size_t len, const char *where,
                           cJSON **out, ck_err *err);
/* Member 'key' of root: a list of integers >= lo, below 2^53. */
ck_code ck_zarr_parse_dims(const cJSON *root, const char *key, int64_t lo,
                           const char *where, int64_t *dims, int *ndim,
                           ck_err *err);
/* fill_value j (member "fill_value" of the top-level object in text, read
 * there again for exact 64-bit integers) in m->dtype's kind. */
ck_code ck_zarr_parse_fill(const cJSON *j, const char *text, size_t len,
                           const char *where, ck_zarr_meta *m, ck_err *err);
/* A numcodecs compressor config ({"id": ..., ...}) into m->codec. */
ck_code ck_zarr_parse_compressor(const cJSON *j, const char *where,
                                 ck_zarr_meta *m, ck_err *err);
cJSON *ck_zarr_dims_item(const int64_t *v, int n);
cJSON *ck_zarr_fill_item(const ck_zarr_meta *m);
/* numcodecs config of m->codec (null for none); NULL with *rc set. */
cJSON *ck_zarr_compressor_item(const ck_zarr_meta *m, ck_code *rc, ck_err *err);

#endif
