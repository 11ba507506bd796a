/*
 * io/zarr/meta.h - Zarr array and group metadata as text: v2's .zarray,
 * .zgroup and .zattrs (io/zarr/meta.c) and v3's zarr.json
 * (io/zarr/meta3.c).  Parses and writes the JSON of one node's metadata;
 * knows nothing of directories or chunk files, and of codecs only how
 * their configurations map onto ck_codec_spec and ck_z3_chain.
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

/* Zarr v3: one bytes-to-bytes codec of a chain. */
typedef enum ck_z3_bb_kind {
    CK_Z3_COMPRESS = 1, /* the chain's compressor (ck_z3_chain.codec) */
    CK_Z3_CRC32C,       /* 4 bytes of CRC-32C appended, little-endian */
    CK_Z3_SHUFFLE,      /* numcodecs.shuffle: byte planes of elementsize */
} ck_z3_bb_kind;

#define CK_Z3_BB_MAX 4

/* Zarr v3 codecs for one chunk, sharding aside: transposes (composed into
 * one permutation), the bytes codec, then bytes-to-bytes codecs in encode
 * order.  At most one compressor. */
typedef struct ck_z3_chain {
    int has_perm;
    int perm[CK_MAX_DIMS]; /* stored axis i is the array's axis perm[i] */
    int big_endian;        /* the bytes codec's endian */
    int nbb;
    ck_z3_bb_kind bb[CK_Z3_BB_MAX];
    int elementsize[CK_Z3_BB_MAX]; /* CK_Z3_SHUFFLE */
    ck_codec_spec codec;           /* CK_Z3_COMPRESS; id NONE if none */
} ck_z3_chain;

#define CK_ZARR_DIMNAME_MAX 64

typedef struct ck_zarr_meta {
    int zarr_format; /* 2 or 3 */
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
    /* Zarr v3 (zarr_format 3).  chunks[] above are the inner chunks of a
     * sharded array, shard[] the chunk grid's (each a multiple).  codec
     * above is chain.codec, for callers that ask what compresses. */
    int key_c;         /* chunk_key_encoding default: "c/0/1"; 0: v2 */
    ck_z3_chain chain; /* the chunks' codecs (the inner chunks' if sharded) */
    int sharded;
    int64_t shard[CK_MAX_DIMS];
    ck_z3_chain index;  /* index_codecs: bytes and perhaps crc32c */
    int index_at_start; /* index_location "start" */
    int has_dim_names;
    char dim_names[CK_MAX_DIMS][CK_ZARR_DIMNAME_MAX]; /* "" for null */
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

/* Checks the text of a zarr.json: a JSON object with zarr_format 3 and
 * node_type "array" (*is_array 1) or "group" (0).  CK_EFORMAT naming
 * 'where' otherwise. */
ck_code ck_zarr3_node_kind(const char *text, size_t len, const char *where,
                           int *is_array, ck_err *err);

/* Parses the text of an array's zarr.json (Zarr v3 core spec): data
 * types bool, int8..uint64, float32, float64; chunk_grid regular;
 * chunk_key_encoding default or v2 with either separator; fill_value a
 * number, true/false, "NaN", "Infinity", "-Infinity" or hex bits
 * ("0x7fc00000"); codecs transpose, bytes, gzip, zstd, blosc, crc32c,
 * numcodecs.* compressors and numcodecs.shuffle, and sharding_indexed as
 * the only codec (inner codecs of the same kinds; index codecs bytes and
 * crc32c); dimension_names.  CK_ENOTSUP naming what is valid Zarr but not
 * supported (complex types, unknown codecs); CK_EFORMAT otherwise. */
ck_code ck_zarr3_meta_parse(const char *text, size_t len, const char *where,
                            ck_zarr_meta *out, ck_err *err);

/* The text of an array's zarr.json for m (malloc'd) with 'attrs' (the text
 * of a JSON object, NULL for {}) as its attributes. */
ck_code ck_zarr3_meta_format(const ck_zarr_meta *m, const char *attrs,
                             char **out, ck_err *err);

/* The text of a group's zarr.json (malloc'd). */
ck_code ck_zarr3_group_format(const char *attrs, char **out, ck_err *err);

/* Raw members of the JSON object in text.  ck_zarr_json_get: 1 and the
 * value's span when member 'key' is there (the last of duplicates), 0
 * when not, -1 when text is not an object. */
int ck_zarr_json_get(const char *text, size_t len, const char *key,
                     const char **val, size_t *vlen);
/* Steps through the members: start with *pos 0; 1 with the key (decoded,
 * at most keycap - 1 bytes) and the value's span, 0 after the last, -1
 * for text that is not an object or a key too long. */
int ck_zarr_json_members(const char *text, size_t len, size_t *pos, char *key,
                         size_t keycap, const char **val, size_t *vlen);
/* A new text (malloc'd) of the object in text with member 'key' set to
 * the raw JSON vtext, in place or appended; vtext NULL removes it. */
ck_code ck_zarr_json_put(const char *text, size_t len, const char *key,
                         const char *vtext, const char *where, char **out,
                         ck_err *err);

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
/* JSON text (valid, UTF-8) in ASCII, malloc'd (NULL when out of memory):
 * every character past U+007F, which only a string can hold, as a \uXXXX
 * escape, as zarr-python 2 (which reads metadata as ASCII) writes it. */
char *ck_zarr_json_ascii(const char *text);
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
