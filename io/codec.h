/*
 * io/codec.h - compressors and byte filters, shared by both store kinds.
 * A ck_codec_spec is what --compress parses into and what a store reports;
 * encode/decode are pure functions on memory, safe to call from any thread.
 * Knows nothing of files or of HDF5's filter pipeline (io/hdf5/ maps filter
 * ids onto these).
 */
#ifndef CK_CODEC_H
#define CK_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "io/filter.h"

typedef enum ck_codec_id {
    CK_CODEC_NONE = 0,
    CK_CODEC_ZSTD,  /* one zstd frame (numcodecs Zstd, HDF5 filter 32015) */
    CK_CODEC_ZLIB,  /* zlib stream (numcodecs Zlib, HDF5 deflate) */
    CK_CODEC_GZIP,  /* gzip member (numcodecs GZip) */
    CK_CODEC_BLOSC, /* blosc 1 frame (numcodecs Blosc, HDF5 filter 32001) */
    CK_CODEC_LZ4,   /* numcodecs LZ4: u32 little-endian size, one LZ4 block */
    CK_CODEC_LZMA,  /* numcodecs LZMA: xz (default), "alone" or raw */
    CK_CODEC_BZ2,   /* numcodecs BZ2: one bzip2 stream */
} ck_codec_id;

/* numcodecs LZMA's 'format' (Python's lzma.FORMAT_*). */
enum { CK_LZMA_AUTO = 0, CK_LZMA_XZ = 1, CK_LZMA_ALONE = 2, CK_LZMA_RAW = 3 };
/* numcodecs LZMA's 'filters': none, or one LZMA1/LZMA2 filter with a
 * preset (Python's lzma.FILTER_LZMA1 / FILTER_LZMA2). */
enum { CK_LZF_NONE = 0, CK_LZF_LZMA1 = 1, CK_LZF_LZMA2 = 2 };

typedef enum ck_shuffle_kind {
    CK_SHUF_NONE = 0,
    CK_SHUF_BYTE = 1,
    CK_SHUF_BIT = 2,
} ck_shuffle_kind;

typedef struct ck_codec_spec {
    ck_codec_id id;
    int level; /* zstd 1..22 (negative: fast), zlib/gzip 0..9, blosc 0..9 */
    ck_shuffle_kind
        shuffle;    /* blosc: its own shuffle; others: a shuffle filter */
    char cname[16]; /* blosc inner compressor: lz4 lz4hc blosclz zlib zstd */
    /* lzma: level is the preset (-1: numcodecs' null, i.e. 6); format
     * CK_LZMA_*, check Python's lzma.CHECK_* (-1: the format's default),
     * lzfilter CK_LZF_*.  lz4: level is the acceleration (>= 1). */
    int format, check, lzfilter;
    /* zstd: the frame carries a content checksum (Zarr v3 zstd's
     * "checksum"), which decoding checks whenever a frame has one. */
    int checksum;
    /* Zarr filters, applied in order before the compressor on encode (and
     * before the shuffle above), in reverse after it on decode.  HDF5
     * stores none: io/hdf5 refuses a spec with nfilters > 0. */
    int nfilters;
    ck_filter filters[CK_FILTERS_MAX];
} ck_codec_spec;

/* Parses "none", "zstd[:LEVEL]", "gzip[:LEVEL]", "zlib[:LEVEL]",
 * "blosc[:CNAME[:LEVEL[:SHUFFLE]]]" where SHUFFLE is shuffle, bitshuffle or
 * noshuffle; zstd/gzip/zlib take an optional ":shuffle" too; "lz4[:ACCEL]"
 * (1..65537), "lzma[:PRESET]" (0..9, xz format), "bz2[:LEVEL]" (1..9).
 * Defaults: zstd:3, gzip:4, blosc:lz4:5:shuffle, lz4:1, lzma (preset
 * null: 6), bz2:1 (numcodecs' own).  No filters.  CK_EUSAGE on anything
 * else. */
ck_code ck_codec_parse(const char *s, ck_codec_spec *out, ck_err *err);

/* Splits buf in place at ':' into at most max fields (part[0..]); the
 * count.  How --compress and --filters specs are read ("blosc:lz4:5"). */
int ck_codec_fields(char *buf, char **part, int max);

/* Formats a spec the way ck_codec_parse reads it ("blosc:lz4:5:shuffle"). */
const char *ck_codec_str(const ck_codec_spec *c, char *buf, size_t n);

/* The largest encoded size of n input bytes. */
size_t ck_codec_bound(const ck_codec_spec *c, size_t n);

/* Encodes n bytes of typesize-byte elements into dst (cap bytes, at least
 * ck_codec_bound()); *out_n gets the encoded size.  The shuffle of a
 * non-blosc spec is NOT applied here (HDF5 runs it as a separate filter;
 * io/hdf5 calls ck_shuffle first). */
ck_code ck_codec_encode(const ck_codec_spec *c, size_t typesize,
                        const void *src, size_t n, void *dst, size_t cap,
                        size_t *out_n, ck_err *err);

/* Decodes src (n bytes) into dst, which must come out exactly 'want' bytes
 * long.  ZLIB and GZIP both accept either framing.  CK_ECORRUPT if the data
 * does not decode or decodes to another size. */
ck_code ck_codec_decode(ck_codec_id id, const void *src, size_t n, void *dst,
                        size_t want, ck_err *err);

/* ck_codec_decode with the whole spec, for codecs whose framing does not
 * describe itself (lzma's raw format names its filter in the spec). */
ck_code ck_codec_decode_spec(const ck_codec_spec *c, const void *src, size_t n,
                             void *dst, size_t want, ck_err *err);

/* Folds a trailing byte shuffle filter of the element size reaching it
 * into c->shuffle when the compressor is zstd, zlib or gzip, so that a
 * Zarr shuffle filter and HDF5's shuffle filter are one thing; dtype is
 * the array's.  Leaves c alone otherwise (or when the filters do not
 * resolve: the store reports that). */
void ck_codec_fold_shuffle(ck_codec_spec *c, ck_dtype dtype);

/* The stages a Zarr chunk of chunk_bytes bytes of dtype passes before
 * the compressor: c's filters, then the byte shuffle of a zstd, zlib or
 * gzip spec as a shuffle filter. */
ck_code ck_codec_chain(const ck_codec_spec *c, ck_dtype dtype,
                       size_t chunk_bytes, ck_filter_chain *out, ck_err *err);

/* What a codec library's error return means, in chunkctl's words: zlib's
 * Z_* codes ("corrupt, or not zlib or gzip data"), zstd's size_t results
 * cast to long long (zstd's own names, "Src size is incorrect") and blosc
 * 1's 0 and negative returns.  Never NULL; "unknown zlib error" and the
 * like for codes the library does not document.  This is the one place
 * io/ turns these codes into text. */
const char *ck_codec_why(ck_codec_id id, long long rc);

/* The ck_code an error return of codec id calls for: CK_ENOMEM when the
 * library could not allocate, else CK_ECORRUPT when decoding (the data is
 * at fault) and CK_EIO when encoding. */
ck_code ck_codec_code(ck_codec_id id, long long rc, int decoding);

/* CRC-32C (Castagnoli, as iSCSI and Zarr v3's crc32c codec), with
 * ISA-L's hardware-accelerated code. */
uint32_t ck_crc32c(const void *p, size_t n);
/* The CRC-32C of the bytes that gave crc followed by p[0..n) (zlib's
 * crc32() convention: start from 0), so a long run can be summed through
 * a small buffer. */
uint32_t ck_crc32c_update(uint32_t crc, const void *p, size_t n);

/* HDF5's shuffle filter (and numcodecs' Shuffle): byte k of every element
 * goes to plane k; a tail of n % typesize bytes is copied as is. */
void ck_shuffle(size_t typesize, const void *src, void *dst, size_t n);
void ck_unshuffle(size_t typesize, const void *src, void *dst, size_t n);

#endif
