/*
 * io/zarr/chain3.h - the bytes of one Zarr v3 chunk through its codecs
 * (a ck_z3_chain: transpose, bytes, then gzip/zstd/blosc/numcodecs
 * compressors, numcodecs.shuffle and crc32c).  Pure functions on memory,
 * safe from any thread; messages name the codec, the caller prefixes the
 * chunk.  Sharding is io/zarr/zarr.c's: a shard's inner chunks and its
 * index each pass through a chain of their own.
 */
#ifndef CK_ZARR_CHAIN3_H
#define CK_ZARR_CHAIN3_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_mem.h"
#include "io/zarr/meta.h"

/* Arena bytes one ck_z3_decode or ck_z3_encode of a chunk of chunk_bytes
 * takes. */
size_t ck_z3_scratch(const ck_z3_chain *c, size_t chunk_bytes);

/* The largest encoded size of a chunk of chunk_bytes. */
size_t ck_z3_bound(const ck_z3_chain *c, size_t chunk_bytes);

/* Decodes the n stored bytes at src into dst: a chunk of 'shape' (ndim
 * axes) of dt, C order, native byte order.  CK_ECORRUPT when a checksum
 * does not match or the bytes do not decode to exactly one chunk. */
ck_code ck_z3_decode(const ck_z3_chain *c, int ndim, const int64_t *shape,
                     ck_dtype dt, const void *src, size_t n, void *dst,
                     ck_arena *scratch, ck_err *err);

/* Encodes a chunk (C order, native byte order) for storage: *out gets the
 * bytes (in scratch, or src itself when there is nothing to do) and *out_n
 * their count. */
ck_code ck_z3_encode(const ck_z3_chain *c, int ndim, const int64_t *shape,
                     ck_dtype dt, const void *src, ck_arena *scratch,
                     const void **out, size_t *out_n, ck_err *err);

/* Copies a chunk of 'shape' into dst transposed the way the transpose
 * codec stores it (dst axis i is src axis perm[i]); inverse 1 undoes it
 * (src is the stored chunk, dst gets 'shape'). */
void ck_z3_transpose(int ndim, const int64_t *shape, const int *perm,
                     size_t elem, const void *src, void *dst, int inverse);

#endif
