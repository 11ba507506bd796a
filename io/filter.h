/*
 * io/filter.h - typed chunk filters: the stages that run before a
 * compressor on encode and after it on decode (numcodecs' Delta, Shuffle,
 * FixedScaleOffset, Quantize, BitRound, AsType, PackBits, Categorize).
 * A stage is a value (ck_filter); a chain of them (ck_filter_chain) knows
 * the element type and byte count between stages, so stages that change
 * the element size (delta with astype, astype, packbits) size the next
 * buffer.  Pure functions on memory, safe from any thread.  Knows nothing
 * of files, JSON or Zarr versions: io/zarr/meta.c maps numcodecs configs
 * onto these, and a Zarr v3 codec pipeline can reuse the same stages.
 * Data between stages is in native byte order.
 */
#ifndef CK_FILTER_H
#define CK_FILTER_H

#include <stddef.h>

#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "base/ck_mem.h"

typedef enum ck_filter_id {
    CK_FILTER_NONE = 0,
    CK_FILTER_DELTA,            /* dtype, astype */
    CK_FILTER_SHUFFLE,          /* elementsize */
    CK_FILTER_FIXEDSCALEOFFSET, /* offset, scale, dtype, astype */
    CK_FILTER_QUANTIZE,         /* digits, dtype, astype (lossy encode) */
    CK_FILTER_BITROUND,         /* keepbits (lossy encode) */
    CK_FILTER_ASTYPE,           /* dtype = decode_dtype, astype = encode */
    CK_FILTER_PACKBITS,         /* bool -> bits, with a 1-byte pad header */
    CK_FILTER_CATEGORIZE,       /* decode only: numeric labels */
} ck_filter_id;

#define CK_CATEGORIES_MAX 32
/* Filters one spec holds; a chain may add one stage (a compressor's byte
 * shuffle, see ck_codec_spec.shuffle). */
#define CK_FILTERS_MAX 8
#define CK_FILTERS_MAX_CHAIN (CK_FILTERS_MAX + 1)

typedef struct ck_filter {
    ck_filter_id id;
    /* The element type on the decoded side (dtype) and on the encoded side
     * (astype).  CK_DT_INVALID until ck_filter_chain_init resolves it: then
     * dtype is the type that reaches the stage and astype is dtype. */
    ck_dtype dtype, astype;
    int elementsize;      /* shuffle; 0: the size of the type reaching it */
    int digits;           /* quantize */
    int keepbits;         /* bitround */
    double offset, scale; /* fixedscaleoffset */
    int nlabels;          /* categorize */
    double labels[CK_CATEGORIES_MAX];
} ck_filter;

/* numcodecs' id ("delta", "fixedscaleoffset"); "" for none. */
const char *ck_filter_name(ck_filter_id id);

/* Parses one --filters item: delta[:ASTYPE], shuffle[:ELEMENTSIZE],
 * fixedscaleoffset:OFFSET:SCALE[:ASTYPE], quantize:DIGITS[:ASTYPE],
 * bitround:KEEPBITS, astype:TYPE, packbits (TYPE a NumPy name such as
 * int16).  Types not given follow the data.  CK_EUSAGE otherwise. */
ck_code ck_filter_parse(const char *s, ck_filter *out, ck_err *err);

/* Parses "none" or a comma-separated list of ck_filter_parse items into
 * out (at most max); *n gets the count. */
ck_code ck_filter_parse_list(const char *s, ck_filter *out, int max, int *n,
                             ck_err *err);

/* Formats f the way ck_filter_parse reads it, types included when known
 * ("delta:int32", "shuffle:4", "fixedscaleoffset:1000:10:uint8"). */
const char *ck_filter_str(const ck_filter *f, char *buf, size_t n);

/* A resolved chain: size[i] bytes enter stage i on encode (size[0] is the
 * decoded chunk) and size[n] bytes leave the last one. */
typedef struct ck_filter_chain {
    int n;
    ck_filter f[CK_FILTERS_MAX_CHAIN];
    size_t size[CK_FILTERS_MAX_CHAIN + 1];
    ck_dtype out_dtype; /* element type after the last stage */
} ck_filter_chain;

/* Resolves n stages (at most CK_FILTERS_MAX_CHAIN) for chunks of
 * chunk_bytes bytes of dtype: fills the types each stage leaves open and
 * checks each configuration against the data reaching it.  CK_EFORMAT
 * "filter NAME: ..." for a configuration out of range (keepbits above the
 * mantissa bits, quantize of integers, packbits of non-bool, element sizes
 * that do not divide the chunk). */
ck_code ck_filter_chain_init(ck_filter_chain *ch, const ck_filter *f, int n,
                             ck_dtype dtype, size_t chunk_bytes, ck_err *err);

/* Arena bytes ck_filter_chain_encode or _decode takes. */
size_t ck_filter_chain_scratch(const ck_filter_chain *ch);

/* Runs the stages in order on src (size[0] bytes); *out points at the
 * size[n] encoded bytes (src itself when n is 0, else in scratch).
 * CK_ENOTSUP for a stage that only decodes (categorize). */
ck_code ck_filter_chain_encode(const ck_filter_chain *ch, const void *src,
                               ck_arena *scratch, const void **out,
                               ck_err *err);

/* Runs the stages in reverse on src (n bytes, which must be size[n]) into
 * dst (size[0] bytes).  CK_ECORRUPT when the sizes or a packbits header do
 * not match. */
ck_code ck_filter_chain_decode(const ck_filter_chain *ch, const void *src,
                               size_t n, void *dst, ck_arena *scratch,
                               ck_err *err);

#endif
