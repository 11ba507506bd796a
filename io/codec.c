/*
 * io/codec.c - zstd, zlib/gzip and blosc on memory buffers, plus the byte
 * shuffle.  Every function is reentrant: blosc runs through its _ctx calls,
 * which keep no global state, and zstd/zlib contexts live on the stack of
 * one call.
 */
#include "io/codec.h"

#include <blosc.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

/* ---- the libraries' errors, in chunkctl's words ---- */

/* One table per library that reports errors as int codes.  zstd carries
 * its own table (ZSTD_getErrorName), whose wording users already see in
 * messages ("Src size is incorrect"), so it is used as it stands. */
typedef struct codec_why {
    long long rc;
    const char *why;
} codec_why;

static const codec_why zlib_whys[] = {
    {Z_NEED_DICT, "needs a preset dictionary"},
    {Z_ERRNO, "file error"},
    {Z_STREAM_ERROR, "bad parameters or stream state"},
    {Z_DATA_ERROR, "corrupt, or not zlib or gzip data"},
    {Z_MEM_ERROR, "out of memory"},
    {Z_BUF_ERROR, "truncated"},
    {Z_VERSION_ERROR, "zlib library version mismatch"},
};

/* blosc 1 returns 0 when the output does not fit and negative numbers
 * from its block loop (c-blosc blosc.c: blosc_c, blosc_d). */
static const codec_why blosc_whys[] = {
    {0, "output does not fit, or data corrupt"},
    {-1, "output buffer too small, or a bad header"},
    {-2, "a block does not decode"},
    {-5, "compressor not built into this blosc"},
};

static const char *lookup(const codec_why *t, size_t n, long long rc,
                          const char *other)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].rc == rc)
            return t[i].why;
    return other;
}

const char *ck_codec_why(ck_codec_id id, long long rc)
{
    switch (id) {
    case CK_CODEC_ZLIB:
    case CK_CODEC_GZIP:
        return lookup(zlib_whys, sizeof zlib_whys / sizeof zlib_whys[0], rc,
                      "unknown zlib error");
    case CK_CODEC_ZSTD:
        return ZSTD_isError((size_t)rc) ? ZSTD_getErrorName((size_t)rc)
                                        : "unknown zstd error";
    case CK_CODEC_BLOSC:
        return lookup(blosc_whys, sizeof blosc_whys / sizeof blosc_whys[0], rc,
                      "unknown blosc error");
    default:
        return "unknown codec error";
    }
}

ck_code ck_codec_code(ck_codec_id id, long long rc, int decoding)
{
    if ((id == CK_CODEC_ZLIB || id == CK_CODEC_GZIP) && rc == Z_MEM_ERROR)
        return CK_ENOMEM;
    if (id == CK_CODEC_ZSTD && ZSTD_isError((size_t)rc) &&
        ZSTD_getErrorCode((size_t)rc) == ZSTD_error_memory_allocation)
        return CK_ENOMEM;
    return decoding ? CK_ECORRUPT : CK_EIO;
}

/* zlib's own message for this stream when it set one (it names the fault
 * more closely: "incorrect header check"), else the table's. */
static const char *zlib_why(int rc, const z_stream *z)
{
    return z && z->msg ? z->msg : ck_codec_why(CK_CODEC_ZLIB, rc);
}

/* ---- parsing ---- */

static const char *const blosc_names[] = {"lz4", "lz4hc", "blosclz", "zlib",
                                          "zstd"};

static int known_cname(const char *s)
{
    for (size_t i = 0; i < sizeof blosc_names / sizeof blosc_names[0]; i++)
        if (strcmp(s, blosc_names[i]) == 0)
            return 1;
    return 0;
}

static int parse_level(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (end == s || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

static int parse_shuffle(const char *s, ck_shuffle_kind *out)
{
    if (strcmp(s, "shuffle") == 0)
        *out = CK_SHUF_BYTE;
    else if (strcmp(s, "bitshuffle") == 0)
        *out = CK_SHUF_BIT;
    else if (strcmp(s, "noshuffle") == 0)
        *out = CK_SHUF_NONE;
    else
        return 0;
    return 1;
}

ck_code ck_codec_parse(const char *s, ck_codec_spec *out, ck_err *err)
{
    char buf[64], *part[5] = {0};
    int np = 0;
    ck_codec_spec c = {0};

    if (strlen(s) >= sizeof buf)
        goto bad;
    strcpy(buf, s);
    for (char *p = buf; p && np < 5;) {
        part[np++] = p;
        p = strchr(p, ':');
        if (p)
            *p++ = '\0';
    }
    if (strcmp(part[0], "none") == 0 && np == 1) {
        c.id = CK_CODEC_NONE;
    } else if (strcmp(part[0], "zstd") == 0 || strcmp(part[0], "gzip") == 0 ||
               strcmp(part[0], "zlib") == 0) {
        int zstd = part[0][0] == 'z' && part[0][1] == 's';
        c.id = zstd ? CK_CODEC_ZSTD
                    : (part[0][1] == 'z' ? CK_CODEC_GZIP : CK_CODEC_ZLIB);
        c.level = zstd ? 3 : 4;
        if (np > 3)
            goto bad;
        if (np >= 2 && !(zstd ? parse_level(part[1], -131072, 22, &c.level)
                              : parse_level(part[1], 0, 9, &c.level)))
            goto bad;
        if (np == 3 && strcmp(part[2], "shuffle") != 0)
            goto bad;
        c.shuffle = np == 3 ? CK_SHUF_BYTE : CK_SHUF_NONE;
    } else if (strcmp(part[0], "blosc") == 0) {
        c.id = CK_CODEC_BLOSC;
        strcpy(c.cname, "lz4");
        c.level = 5;
        c.shuffle = CK_SHUF_BYTE;
        if (np > 4)
            goto bad;
        if (np >= 2) {
            if (!known_cname(part[1]))
                goto bad;
            snprintf(c.cname, sizeof c.cname, "%s", part[1]);
        }
        if (np >= 3 && !parse_level(part[2], 0, 9, &c.level))
            goto bad;
        if (np == 4 && !parse_shuffle(part[3], &c.shuffle))
            goto bad;
    } else {
        goto bad;
    }
    *out = c;
    return CK_OK;
bad:
    return ck_err_set(err, CK_EUSAGE,
                      "--compress '%s': expected none, zstd[:LEVEL], "
                      "gzip[:LEVEL], zlib[:LEVEL] (each optionally "
                      ":shuffle) or blosc[:lz4|lz4hc|blosclz|zlib|zstd"
                      "[:LEVEL[:shuffle|bitshuffle|noshuffle]]]",
                      s);
}

const char *ck_codec_str(const ck_codec_spec *c, char *buf, size_t n)
{
    static const char *const shuf[] = {"noshuffle", "shuffle", "bitshuffle"};

    switch (c->id) {
    case CK_CODEC_ZSTD:
    case CK_CODEC_ZLIB:
    case CK_CODEC_GZIP:
        snprintf(buf, n, "%s:%d%s",
                 c->id == CK_CODEC_ZSTD
                     ? "zstd"
                     : (c->id == CK_CODEC_ZLIB ? "zlib" : "gzip"),
                 c->level, c->shuffle ? ":shuffle" : "");
        break;
    case CK_CODEC_BLOSC:
        snprintf(buf, n, "blosc:%s:%d:%s", c->cname, c->level,
                 shuf[c->shuffle <= CK_SHUF_BIT ? c->shuffle : 0]);
        break;
    default:
        snprintf(buf, n, "none");
        break;
    }
    return buf;
}

size_t ck_codec_bound(const ck_codec_spec *c, size_t n)
{
    switch (c->id) {
    case CK_CODEC_ZSTD:
        return ZSTD_compressBound(n);
    case CK_CODEC_ZLIB:
    case CK_CODEC_GZIP:
        /* compressBound() plus the gzip header and trailer. */
        return compressBound((uLong)n) + 32;
    case CK_CODEC_BLOSC:
        return n + BLOSC_MAX_OVERHEAD;
    default:
        return n;
    }
}

static ck_code deflate_buf(int gzip, int level, const void *src, size_t n,
                           void *dst, size_t cap, size_t *out_n, ck_err *err)
{
    z_stream z;
    int rc;

    if (n > UINT_MAX || cap > UINT_MAX)
        return ck_err_set(err, CK_ENOTSUP,
                          "zlib: a chunk of %zu bytes is over 4 GiB", n);
    memset(&z, 0, sizeof z);
    rc = deflateInit2(&z, level, Z_DEFLATED, gzip ? 15 + 16 : 15, 8,
                      Z_DEFAULT_STRATEGY);
    if (rc != Z_OK)
        return ck_err_set(err, ck_codec_code(CK_CODEC_ZLIB, rc, 0),
                          "zlib: cannot start deflate: %s", zlib_why(rc, &z));
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)cap;
    rc = deflate(&z, Z_FINISH);
    *out_n = z.total_out;
    if (rc != Z_STREAM_END) {
        /* Z_OK or Z_BUF_ERROR: deflate stopped with input left, i.e. the
         * output is full; ck_codec_bound makes that a bug of the caller. */
        ck_code code = ck_codec_code(CK_CODEC_ZLIB, rc, 0);
        const char *why = rc == Z_OK || rc == Z_BUF_ERROR ? "output buffer full"
                                                          : zlib_why(rc, &z);
        deflateEnd(&z);
        return ck_err_set(err, code, "zlib: deflate failed: %s", why);
    }
    deflateEnd(&z);
    return CK_OK;
}

ck_code ck_codec_encode(const ck_codec_spec *c, size_t typesize,
                        const void *src, size_t n, void *dst, size_t cap,
                        size_t *out_n, ck_err *err)
{
    switch (c->id) {
    case CK_CODEC_NONE:
        if (cap < n)
            return ck_err_set(err, CK_ENOMEM, "encode: buffer too small");
        memcpy(dst, src, n);
        *out_n = n;
        return CK_OK;
    case CK_CODEC_ZSTD: {
        size_t r = ZSTD_compress(dst, cap, src, n, c->level);
        if (ZSTD_isError(r))
            return ck_err_set(
                err, ck_codec_code(CK_CODEC_ZSTD, (long long)r, 0), "zstd: %s",
                ck_codec_why(CK_CODEC_ZSTD, (long long)r));
        *out_n = r;
        return CK_OK;
    }
    case CK_CODEC_ZLIB:
    case CK_CODEC_GZIP:
        return deflate_buf(c->id == CK_CODEC_GZIP, c->level, src, n, dst, cap,
                           out_n, err);
    case CK_CODEC_BLOSC: {
        int r;
        if (n > BLOSC_MAX_BUFFERSIZE)
            return ck_err_set(err, CK_ENOTSUP,
                              "blosc: a chunk of %zu bytes is over blosc's "
                              "2 GiB limit",
                              n);
        r = blosc_compress_ctx(c->level, (int)c->shuffle,
                               typesize > 255 ? 1 : typesize, n, src, dst, cap,
                               c->cname, 0, 1);
        if (r <= 0)
            return ck_err_set(err, CK_EIO, "blosc: compression failed: %s",
                              ck_codec_why(CK_CODEC_BLOSC, r));
        *out_n = (size_t)r;
        return CK_OK;
    }
    }
    return ck_err_set(err, CK_ENOTSUP, "unknown codec %d", (int)c->id);
}

static ck_code inflate_buf(const void *src, size_t n, void *dst, size_t want,
                           ck_err *err)
{
    z_stream z;
    int rc;

    if (n > UINT_MAX || want > UINT_MAX)
        return ck_err_set(err, CK_ENOTSUP,
                          "zlib: a chunk of %zu bytes is over 4 GiB", want);
    memset(&z, 0, sizeof z);
    /* 15 + 32: accept zlib and gzip headers alike. */
    rc = inflateInit2(&z, 15 + 32);
    if (rc != Z_OK)
        return ck_err_set(err, ck_codec_code(CK_CODEC_ZLIB, rc, 0),
                          "zlib: cannot start inflate: %s", zlib_why(rc, &z));
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)want;
    rc = inflate(&z, Z_FINISH);
    if (rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && z.avail_out == 0)) {
        ck_code code = ck_codec_code(CK_CODEC_ZLIB, rc, 1);
        const char *why = zlib_why(rc == Z_OK ? Z_BUF_ERROR : rc, &z);
        ck_err_set(err, code, "zlib data does not decode (%s)", why);
        inflateEnd(&z);
        return code;
    }
    inflateEnd(&z);
    if (rc == Z_STREAM_END && z.total_out == want)
        return CK_OK;
    if (rc == Z_STREAM_END)
        return ck_err_set(err, CK_ECORRUPT,
                          "zlib data decodes to %lu bytes, expected %zu",
                          z.total_out, want);
    return ck_err_set(err, CK_ECORRUPT,
                      "zlib data decodes to more than %zu bytes", want);
}

ck_code ck_codec_decode(ck_codec_id id, const void *src, size_t n, void *dst,
                        size_t want, ck_err *err)
{
    switch (id) {
    case CK_CODEC_NONE:
        if (n != want)
            return ck_err_set(err, CK_ECORRUPT, "%zu bytes, expected %zu", n,
                              want);
        memcpy(dst, src, n);
        return CK_OK;
    case CK_CODEC_ZSTD: {
        unsigned long long fs = ZSTD_getFrameContentSize(src, n);
        size_t r;
        if (fs == ZSTD_CONTENTSIZE_ERROR)
            return ck_err_set(err, CK_ECORRUPT, "not a zstd frame");
        if (fs != ZSTD_CONTENTSIZE_UNKNOWN && fs != want)
            return ck_err_set(err, CK_ECORRUPT,
                              "zstd frame holds %llu bytes, expected %zu", fs,
                              want);
        r = ZSTD_decompress(dst, want, src, n);
        if (ZSTD_isError(r))
            return ck_err_set(err,
                              ck_codec_code(CK_CODEC_ZSTD, (long long)r, 1),
                              "zstd frame does not decode (%s)",
                              ck_codec_why(CK_CODEC_ZSTD, (long long)r));
        if (r != want)
            return ck_err_set(err, CK_ECORRUPT,
                              "zstd data decodes to %zu bytes, expected %zu", r,
                              want);
        return CK_OK;
    }
    case CK_CODEC_ZLIB:
    case CK_CODEC_GZIP:
        return inflate_buf(src, n, dst, want, err);
    case CK_CODEC_BLOSC: {
        size_t nbytes = 0, cbytes = 0, bsize = 0;
        int r;
        if (n < BLOSC_MIN_HEADER_LENGTH)
            return ck_err_set(err, CK_ECORRUPT,
                              "blosc frame of %zu bytes is truncated", n);
        blosc_cbuffer_sizes(src, &nbytes, &cbytes, &bsize);
        if (cbytes > n)
            return ck_err_set(err, CK_ECORRUPT,
                              "blosc frame claims %zu bytes, has %zu", cbytes,
                              n);
        if (nbytes != want)
            return ck_err_set(err, CK_ECORRUPT,
                              "blosc frame holds %zu bytes, expected %zu",
                              nbytes, want);
        r = blosc_decompress_ctx(src, dst, want, 1);
        if (r <= 0)
            return ck_err_set(err, CK_ECORRUPT,
                              "blosc frame does not decode (%s)",
                              ck_codec_why(CK_CODEC_BLOSC, r));
        if ((size_t)r != want)
            return ck_err_set(err, CK_ECORRUPT,
                              "blosc frame decodes to %d bytes, expected %zu",
                              r, want);
        return CK_OK;
    }
    }
    return ck_err_set(err, CK_ENOTSUP, "unknown codec %d", (int)id);
}

void ck_shuffle(size_t typesize, const void *src, void *dst, size_t n)
{
    const unsigned char *s = src;
    unsigned char *d = dst;
    size_t elems = typesize ? n / typesize : 0;

    if (typesize <= 1 || elems <= 1) {
        memcpy(dst, src, n);
        return;
    }
    for (size_t b = 0; b < typesize; b++)
        for (size_t i = 0; i < elems; i++)
            d[b * elems + i] = s[i * typesize + b];
    memcpy(d + elems * typesize, s + elems * typesize, n - elems * typesize);
}

static int little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

void ck_unshuffle(size_t typesize, const void *src, void *dst, size_t n)
{
    const unsigned char *s = src;
    unsigned char *d = dst;
    size_t elems = typesize ? n / typesize : 0;

    if (typesize <= 1 || elems <= 1) {
        memcpy(dst, src, n);
        return;
    }
    /* The common sizes build each element from its byte planes as one
     * little-endian integer, which the compiler vectorises (a time series
     * of float32 decodes 4x faster than byte by byte); byte order in
     * memory is the planes' order, as the generic loop writes it. */
    if (typesize == 4 && little_endian()) {
        const unsigned char *p0 = s, *p1 = s + elems, *p2 = s + 2 * elems,
                            *p3 = s + 3 * elems;
        for (size_t i = 0; i < elems; i++) {
            uint32_t v = (uint32_t)p0[i] | (uint32_t)p1[i] << 8 |
                         (uint32_t)p2[i] << 16 | (uint32_t)p3[i] << 24;
            memcpy(d + 4 * i, &v, 4);
        }
    } else if (typesize == 8 && little_endian()) {
        for (size_t i = 0; i < elems; i++) {
            uint64_t v = 0;
            for (int b = 0; b < 8; b++)
                v |= (uint64_t)s[(size_t)b * elems + i] << (8 * b);
            memcpy(d + 8 * i, &v, 8);
        }
    } else if (typesize == 2 && little_endian()) {
        for (size_t i = 0; i < elems; i++) {
            uint16_t v = (uint16_t)(s[i] | s[elems + i] << 8);
            memcpy(d + 2 * i, &v, 2);
        }
    } else {
        for (size_t i = 0; i < elems; i++)
            for (size_t b = 0; b < typesize; b++)
                d[i * typesize + b] = s[b * elems + i];
    }
    memcpy(d + elems * typesize, s + elems * typesize, n - elems * typesize);
}
