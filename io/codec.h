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

#include "base/ck_err.h"

typedef enum ck_codec_id {
    CK_CODEC_NONE = 0,
    CK_CODEC_ZSTD,  /* one zstd frame (numcodecs Zstd, HDF5 filter 32015) */
    CK_CODEC_ZLIB,  /* zlib stream (numcodecs Zlib, HDF5 deflate) */
    CK_CODEC_GZIP,  /* gzip member (numcodecs GZip) */
    CK_CODEC_BLOSC, /* blosc 1 frame (numcodecs Blosc, HDF5 filter 32001) */
} ck_codec_id;

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
} ck_codec_spec;

/* Parses "none", "zstd[:LEVEL]", "gzip[:LEVEL]", "zlib[:LEVEL]",
 * "blosc[:CNAME[:LEVEL[:SHUFFLE]]]" where SHUFFLE is shuffle, bitshuffle or
 * noshuffle; zstd/gzip/zlib take an optional ":shuffle" too.  Defaults:
 * zstd:3, gzip:4, blosc:lz4:5:shuffle.  CK_EUSAGE on anything else. */
ck_code ck_codec_parse(const char *s, ck_codec_spec *out, ck_err *err);

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

/* HDF5's shuffle filter (and numcodecs' Shuffle): byte k of every element
 * goes to plane k; a tail of n % typesize bytes is copied as is. */
void ck_shuffle(size_t typesize, const void *src, void *dst, size_t n);
void ck_unshuffle(size_t typesize, const void *src, void *dst, size_t n);

#endif
