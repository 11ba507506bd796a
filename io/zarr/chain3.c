/*
 * io/zarr/chain3.c - encode and decode one Zarr v3 chunk through its
 * codec chain (see io/zarr/chain3.h).  The compressors are io/codec.c's,
 * CRC-32C is ISA-L's (io/codec.c).
 */
#include "io/zarr/chain3.h"

#include <string.h>

#include "io/codec.h"

#define HOST_BIG_ENDIAN (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
#define SLACK 64 /* ck_arena_alloc aligns each block */

static int needs_swap(const ck_z3_chain *c, ck_dtype dt)
{
    return c->big_endian != HOST_BIG_ENDIAN && ck_dtype_size(dt) > 1;
}

size_t ck_z3_bound(const ck_z3_chain *c, size_t chunk_bytes)
{
    size_t n = chunk_bytes;

    for (int i = 0; i < c->nbb; i++)
        n = c->bb[i] == CK_Z3_COMPRESS ? ck_codec_bound(&c->codec, n)
            : c->bb[i] == CK_Z3_CRC32C ? n + 4
                                       : n;
    return n;
}

size_t ck_z3_scratch(const ck_z3_chain *c, size_t chunk_bytes)
{
    size_t n = chunk_bytes, enc = 0, dec = 0;

    /* Both ways: the transposed and the byte-swapped copy, and one buffer
     * per bytes-to-bytes stage. */
    enc = dec = 2 * (chunk_bytes + SLACK);
    for (int i = 0; i < c->nbb; i++) {
        n = c->bb[i] == CK_Z3_COMPRESS ? ck_codec_bound(&c->codec, n)
            : c->bb[i] == CK_Z3_CRC32C ? n + 4
                                       : n;
        enc += n + SLACK;
        dec += chunk_bytes + SLACK;
    }
    return enc > dec ? enc : dec;
}

/* dst (C order over oshape) gets src's element at sum(x[d] * sstride[d]). */
static void gather(int ndim, const int64_t *oshape, const int64_t *sstride,
                   size_t elem, const char *src, char *dst)
{
    int64_t idx[CK_MAX_DIMS] = {0}, off = 0, total = 1;
    int last = ndim - 1;

    for (int d = 0; d < ndim; d++)
        total *= oshape[d];
    if (total == 0)
        return;
    for (int64_t k = 0; k < total; k += oshape[last]) {
        int64_t st = sstride[last];
        for (int64_t i = 0; i < oshape[last]; i++)
            memcpy(dst + (size_t)(k + i) * elem,
                   src + (size_t)(off + i * st) * elem, elem);
        for (int d = last - 1; d >= 0; d--) {
            if (++idx[d] < oshape[d]) {
                off += sstride[d];
                break;
            }
            off -= (oshape[d] - 1) * sstride[d];
            idx[d] = 0;
        }
    }
}

void ck_z3_transpose(int ndim, const int64_t *shape, const int *perm,
                     size_t elem, const void *src, void *dst, int inverse)
{
    int64_t tshape[CK_MAX_DIMS], cs[CK_MAX_DIMS], ts[CK_MAX_DIMS];
    int64_t sst[CK_MAX_DIMS];

    if (ndim == 0) {
        memcpy(dst, src, elem);
        return;
    }
    for (int i = 0; i < ndim; i++)
        tshape[i] = shape[perm[i]];
    cs[ndim - 1] = ts[ndim - 1] = 1;
    for (int d = ndim - 2; d >= 0; d--) {
        cs[d] = cs[d + 1] * shape[d + 1];
        ts[d] = ts[d + 1] * tshape[d + 1];
    }
    if (!inverse) { /* over the stored shape, reading the chunk */
        for (int i = 0; i < ndim; i++)
            sst[i] = cs[perm[i]];
        gather(ndim, tshape, sst, elem, src, dst);
    } else { /* over the chunk, reading the stored one */
        for (int i = 0; i < ndim; i++)
            sst[perm[i]] = ts[i];
        gather(ndim, shape, sst, elem, src, dst);
    }
}

static size_t chunk_bytes_of(int ndim, const int64_t *shape, ck_dtype dt)
{
    size_t n = ck_dtype_size(dt);

    for (int d = 0; d < ndim; d++)
        n *= (size_t)shape[d];
    return n;
}

static ck_code no_room(ck_err *err)
{
    return ck_err_set(err, CK_ENOMEM, "zarr v3: scratch arena too small");
}

ck_code ck_z3_decode(const ck_z3_chain *c, int ndim, const int64_t *shape,
                     ck_dtype dt, const void *src, size_t n, void *dst,
                     ck_arena *scratch, ck_err *err)
{
    size_t cb = chunk_bytes_of(ndim, shape, dt), es = ck_dtype_size(dt);
    int swap = needs_swap(c, dt), tail = swap || c->has_perm;
    const char *cur = src;
    size_t len = n;

    for (int i = c->nbb - 1; i >= 0; i--) {
        /* The last stage writes straight into dst, which holds one chunk:
         * not a stage with crc32c below it (its output still carries
         * their checksums; it goes to scratch, copied once checked), and
         * a shuffle only of exactly a chunk's bytes.  Both wrote past dst
         * (tests/fuzz/fuzz_z3_chain found a stored chunk of the wrong
         * size under numcodecs.shuffle). */
        int last = !tail && i == 0;
        char *out;
        switch (c->bb[i]) {
        case CK_Z3_CRC32C: {
            uint32_t want, got;
            const unsigned char *p;
            if (len < 4)
                return ck_err_set(err, CK_ECORRUPT,
                                  "crc32c: %zu bytes, too short for a "
                                  "checksum",
                                  len);
            len -= 4;
            p = (const unsigned char *)cur + len;
            want = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24;
            got = ck_crc32c(cur, len);
            if (got != want)
                return ck_err_set(err, CK_ECORRUPT,
                                  "crc32c mismatch (stored %08x, computed "
                                  "%08x)",
                                  (unsigned)want, (unsigned)got);
            continue;
        }
        case CK_Z3_COMPRESS: {
            /* A compressor after crc32c compressed the checksums too: a
             * chunk and 4 bytes per crc32c below it come out (the seed of
             * tests/fuzz/fuzz_z3_chain for [bytes, crc32c, zstd] did not
             * decode). */
            size_t want = cb;
            for (int k = 0; k < i; k++)
                want += c->bb[k] == CK_Z3_CRC32C ? 4 : 0;
            if (!(out = last ? dst : ck_arena_alloc(scratch, want)))
                return no_room(err);
            CK_TRY(ck_codec_decode_spec(&c->codec, cur, len, out, want, err));
            len = want;
            break;
        }
        default: /* CK_Z3_SHUFFLE */
            if (last && len != cb)
                return ck_err_set(err, CK_ECORRUPT,
                                  "numcodecs.shuffle: %zu bytes, expected %zu",
                                  len, cb);
            if (!(out = last ? dst : ck_arena_alloc(scratch, len)))
                return no_room(err);
            ck_unshuffle((size_t)c->elementsize[i], cur, out, len);
            break;
        }
        cur = out;
    }
    if (len != cb)
        return ck_err_set(err, CK_ECORRUPT, "%zu bytes, expected %zu", len, cb);
    if (!tail) {
        if (cur != dst)
            memcpy(dst, cur, cb);
        return CK_OK;
    }
    if (swap) {
        char *out = c->has_perm ? ck_arena_alloc(scratch, cb) : dst;
        if (!out)
            return no_room(err);
        if (out != cur)
            memcpy(out, cur, cb);
        ck_byteswap(out, es, cb / es);
        cur = out;
    }
    if (c->has_perm)
        ck_z3_transpose(ndim, shape, c->perm, es, cur, dst, 1);
    return CK_OK;
}

ck_code ck_z3_encode(const ck_z3_chain *c, int ndim, const int64_t *shape,
                     ck_dtype dt, const void *src, ck_arena *scratch,
                     const void **out, size_t *out_n, ck_err *err)
{
    size_t cb = chunk_bytes_of(ndim, shape, dt), es = ck_dtype_size(dt);
    const char *cur = src;
    size_t len = cb;
    char *buf;

    if (c->has_perm) {
        if (!(buf = ck_arena_alloc(scratch, cb)))
            return no_room(err);
        ck_z3_transpose(ndim, shape, c->perm, es, cur, buf, 0);
        cur = buf;
    }
    if (needs_swap(c, dt)) {
        if (cur == src) {
            if (!(buf = ck_arena_alloc(scratch, cb)))
                return no_room(err);
            memcpy(buf, cur, cb);
            cur = buf;
        }
        ck_byteswap((char *)cur, es, cb / es);
    }
    for (int i = 0; i < c->nbb; i++) {
        size_t cap;
        switch (c->bb[i]) {
        case CK_Z3_CRC32C: {
            uint32_t crc = ck_crc32c(cur, len);
            if (!(buf = ck_arena_alloc(scratch, len + 4)))
                return no_room(err);
            memcpy(buf, cur, len);
            for (int k = 0; k < 4; k++)
                buf[len + (size_t)k] = (char)(crc >> (8 * k));
            len += 4;
            break;
        }
        case CK_Z3_COMPRESS:
            cap = ck_codec_bound(&c->codec, len);
            if (!(buf = ck_arena_alloc(scratch, cap)))
                return no_room(err);
            CK_TRY(
                ck_codec_encode(&c->codec, es, cur, len, buf, cap, &len, err));
            break;
        default: /* CK_Z3_SHUFFLE */
            if (!(buf = ck_arena_alloc(scratch, len)))
                return no_room(err);
            ck_shuffle((size_t)c->elementsize[i], cur, buf, len);
            break;
        }
        cur = buf;
    }
    *out = cur;
    *out_n = len;
    return CK_OK;
}
