/*
 * io/codec.c - zstd, zlib/gzip and blosc on memory buffers, plus the byte
 * shuffle.  Every function is reentrant: blosc runs through its _ctx calls,
 * which keep no global state, and zstd/zlib contexts live on the stack of
 * one call.
 */
#include "io/codec.h"

#include <blosc.h>
#include <bzlib.h>
#include <limits.h>
#include <lz4.h>
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <isa-l/crc.h>
#include <libdeflate.h>
#include <pthread.h>
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

static const codec_why bz2_whys[] = {
    {BZ_MEM_ERROR, "out of memory"},
    {BZ_DATA_ERROR, "corrupt bzip2 data"},
    {BZ_DATA_ERROR_MAGIC, "not bzip2 data"},
    {BZ_UNEXPECTED_EOF, "truncated"},
    {BZ_OUTBUFF_FULL, "decodes to more bytes than expected"},
    {BZ_PARAM_ERROR, "bad parameters"},
    {BZ_CONFIG_ERROR, "libbz2 misconfigured"},
};

static const codec_why lzma_whys[] = {
    {LZMA_MEM_ERROR, "out of memory"},
    {LZMA_MEMLIMIT_ERROR, "memory limit reached"},
    {LZMA_FORMAT_ERROR, "not in the expected lzma format"},
    {LZMA_OPTIONS_ERROR, "unsupported lzma options"},
    {LZMA_DATA_ERROR, "corrupt lzma data"},
    {LZMA_BUF_ERROR, "truncated, or decodes to more bytes than expected"},
    {LZMA_UNSUPPORTED_CHECK, "unsupported integrity check"},
    {LZMA_PROG_ERROR, "bad parameters"},
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
    case CK_CODEC_LZ4:
        return rc < 0 ? "corrupt lz4 block, or it decodes to another size"
                      : "output does not fit";
    case CK_CODEC_LZMA:
        return lookup(lzma_whys, sizeof lzma_whys / sizeof lzma_whys[0], rc,
                      "unknown lzma error");
    case CK_CODEC_BZ2:
        return lookup(bz2_whys, sizeof bz2_whys / sizeof bz2_whys[0], rc,
                      "unknown bzip2 error");
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
    if ((id == CK_CODEC_LZMA && rc == LZMA_MEM_ERROR) ||
        (id == CK_CODEC_BZ2 && rc == BZ_MEM_ERROR))
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

int ck_codec_fields(char *buf, char **part, int max)
{
    int np = 0;

    for (char *p = buf; p && np < max;) {
        part[np++] = p;
        p = strchr(p, ':');
        if (p)
            *p++ = '\0';
    }
    return np;
}

/* --compress S whose codec is known but whose level (or acceleration,
 * preset) v is not one it takes: say which and the range. */
static ck_code bad_level(const char *s, const char *codec, const char *what,
                         const char *v, int lo, int hi, ck_err *err)
{
    return ck_err_set(err, CK_EUSAGE,
                      "--compress '%s': %s %s '%s' is not a whole number "
                      "from %d to %d",
                      s, codec, what, v, lo, hi);
}

#define LEVEL(v, lo, hi, what, dst)                                            \
    do {                                                                       \
        if (!parse_level(v, lo, hi, dst))                                      \
            return bad_level(s, part[0], what, v, lo, hi, err);                \
    } while (0)

ck_code ck_codec_parse(const char *s, ck_codec_spec *out, ck_err *err)
{
    char buf[64], *part[5] = {0};
    int np = 0;
    ck_codec_spec c = {0};

    if (strlen(s) >= sizeof buf)
        goto bad;
    strcpy(buf, s);
    np = ck_codec_fields(buf, part, 5);
    if (strcmp(part[0], "none") == 0 && np == 1) {
        c.id = CK_CODEC_NONE;
    } else if (strcmp(part[0], "zstd") == 0 || strcmp(part[0], "gzip") == 0 ||
               strcmp(part[0], "zlib") == 0) {
        int zstd = part[0][0] == 'z' && part[0][1] == 's';
        c.id = zstd ? CK_CODEC_ZSTD
                    : (part[0][1] == 'z' ? CK_CODEC_GZIP : CK_CODEC_ZLIB);
        c.level = zstd ? 3 : 4;
        /* NAME[:LEVEL][:shuffle]: "zstd:shuffle" keeps the default level */
        int shuf = np >= 2 && strcmp(part[np - 1], "shuffle") == 0;
        int nl = np - shuf; /* fields up to the level */
        if (nl > 2)
            goto bad;
        if (nl == 2 && zstd)
            LEVEL(part[1], -131072, 22, "level", &c.level);
        else if (nl == 2)
            LEVEL(part[1], 0, 9, "level", &c.level);
        c.shuffle = shuf ? CK_SHUF_BYTE : CK_SHUF_NONE;
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
        if (np >= 3)
            LEVEL(part[2], 0, 9, "level", &c.level);
        if (np == 4 && !parse_shuffle(part[3], &c.shuffle))
            goto bad;
    } else if (strcmp(part[0], "lz4") == 0) {
        c.id = CK_CODEC_LZ4;
        c.level = 1;
        if (np > 2)
            goto bad;
        if (np == 2)
            LEVEL(part[1], 1, 65537, "acceleration", &c.level);
    } else if (strcmp(part[0], "lzma") == 0) {
        c.id = CK_CODEC_LZMA;
        c.level = -1;
        c.format = CK_LZMA_XZ;
        c.check = -1;
        if (np > 2)
            goto bad;
        if (np == 2)
            LEVEL(part[1], 0, 9, "preset", &c.level);
    } else if (strcmp(part[0], "bz2") == 0) {
        c.id = CK_CODEC_BZ2;
        c.level = 1;
        if (np > 2)
            goto bad;
        if (np == 2)
            LEVEL(part[1], 1, 9, "level", &c.level);
    } else {
        goto bad;
    }
    *out = c;
    return CK_OK;
bad:
    return ck_err_set(err, CK_EUSAGE,
                      "--compress '%s': expected none, zstd[:LEVEL], "
                      "gzip[:LEVEL], zlib[:LEVEL] (each optionally "
                      ":shuffle), blosc[:lz4|lz4hc|blosclz|zlib|zstd"
                      "[:LEVEL[:shuffle|bitshuffle|noshuffle]]], "
                      "lz4[:ACCEL], lzma[:PRESET] or bz2[:LEVEL]",
                      s);
}

#undef LEVEL

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
    case CK_CODEC_LZ4:
        snprintf(buf, n, "lz4:%d", c->level);
        break;
    case CK_CODEC_LZMA: {
        static const char *const fmts[] = {"auto", "xz", "alone", "raw"};
        const char *f =
            c->format >= 0 && c->format <= 3 ? fmts[c->format] : "?";
        if (c->level >= 0)
            snprintf(buf, n, "lzma:%d%s%s", c->level,
                     c->format == CK_LZMA_XZ ? "" : ":",
                     c->format == CK_LZMA_XZ ? "" : f);
        else
            snprintf(buf, n, "lzma%s%s", c->format == CK_LZMA_XZ ? "" : ":",
                     c->format == CK_LZMA_XZ ? "" : f);
        break;
    }
    case CK_CODEC_BZ2:
        snprintf(buf, n, "bz2:%d", c->level);
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
    case CK_CODEC_LZ4:
        return (n > LZ4_MAX_INPUT_SIZE ? n
                                       : (size_t)LZ4_compressBound((int)n)) +
               4;
    case CK_CODEC_LZMA:
        return lzma_stream_buffer_bound(n) + 1024;
    case CK_CODEC_BZ2:
        return n + n / 100 + 600;
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

/* ---- lz4, lzma, bz2: numcodecs' framings ---- */

static ck_code lz4_encode(const ck_codec_spec *c, const void *src, size_t n,
                          void *dst, size_t cap, size_t *out_n, ck_err *err)
{
    unsigned char *d = dst;
    int r;

    if (n > LZ4_MAX_INPUT_SIZE || cap < 4)
        return ck_err_set(err, CK_ENOTSUP,
                          "lz4: a chunk of %zu bytes is over lz4's 2 GiB "
                          "limit",
                          n);
    /* numcodecs/lz4.pyx: the decoded size as a little-endian uint32. */
    d[0] = (unsigned char)n;
    d[1] = (unsigned char)(n >> 8);
    d[2] = (unsigned char)(n >> 16);
    d[3] = (unsigned char)(n >> 24);
    r = LZ4_compress_fast(src, (char *)d + 4, (int)n,
                          cap - 4 > INT_MAX ? INT_MAX : (int)(cap - 4),
                          c->level < 1 ? 1 : c->level);
    if (r <= 0)
        return ck_err_set(err, CK_EIO, "lz4: compression failed: %s",
                          ck_codec_why(CK_CODEC_LZ4, r));
    *out_n = (size_t)r + 4;
    return CK_OK;
}

static ck_code lz4_decode(const void *src, size_t n, void *dst, size_t want,
                          ck_err *err)
{
    const unsigned char *s = src;
    uint32_t h;
    int r;

    if (n < 4)
        return ck_err_set(err, CK_ECORRUPT,
                          "lz4 data of %zu bytes has no size header", n);
    h = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 |
        (uint32_t)s[3] << 24;
    if (h != want)
        return ck_err_set(err, CK_ECORRUPT,
                          "lz4 size header says %u bytes, expected %zu", h,
                          want);
    if (n - 4 > INT_MAX || want > INT_MAX)
        return ck_err_set(err, CK_ENOTSUP,
                          "lz4: a chunk of %zu bytes is over 2 GiB", want);
    r = LZ4_decompress_safe((const char *)s + 4, dst, (int)(n - 4), (int)want);
    if (r < 0 || (size_t)r != want)
        return ck_err_set(err, CK_ECORRUPT, "lz4 block does not decode (%s)",
                          ck_codec_why(CK_CODEC_LZ4, r < 0 ? r : -1));
    return CK_OK;
}

/* The most memory an xz or lzma-alone decoder may take.  Those headers
 * choose the dictionary size, which liblzma allocates before decoding a
 * byte: a damaged one asked for 3 GiB (found by tests/fuzz/fuzz_codec).
 * Every preset fits (9e: a 64 MiB dictionary); over it, the chunk is
 * refused as corrupt ("memory limit reached"). */
#define LZMA_DECODE_MEMLIMIT ((uint64_t)256 << 20)

/* Python's lzma module: check -1 is CRC64 for xz, none otherwise; preset
 * null is 6; a filter chain is one LZMA1 or LZMA2 filter. */
static ck_code lzma_setup(const ck_codec_spec *c, int decoding, lzma_stream *z,
                          lzma_options_lzma *opt, lzma_filter *f, ck_err *err)
{
    uint32_t preset =
        c->level >= 0 ? (uint32_t)c->level : (uint32_t)LZMA_PRESET_DEFAULT;
    int lz1 = c->lzfilter == CK_LZF_LZMA1 ||
              (c->lzfilter == CK_LZF_NONE && c->format == CK_LZMA_ALONE);
    lzma_check check =
        c->check < 0
            ? (c->format == CK_LZMA_XZ ? LZMA_CHECK_CRC64 : LZMA_CHECK_NONE)
            : (lzma_check)c->check;
    lzma_ret r;

    if (lzma_lzma_preset(opt, preset))
        return ck_err_set(err, CK_ENOTSUP, "lzma: preset %d is not supported",
                          c->level);
    f[0].id = lz1 ? LZMA_FILTER_LZMA1 : LZMA_FILTER_LZMA2;
    f[0].options = opt;
    f[1].id = LZMA_VLI_UNKNOWN;
    f[1].options = NULL;
    switch (c->format) {
    case CK_LZMA_AUTO:
        if (!decoding)
            return ck_err_set(err, CK_ENOTSUP,
                              "lzma: format auto (0) only decodes");
        r = lzma_auto_decoder(z, LZMA_DECODE_MEMLIMIT, 0);
        break;
    case CK_LZMA_XZ:
        r = decoding ? lzma_stream_decoder(z, LZMA_DECODE_MEMLIMIT, 0)
                     : lzma_stream_encoder(z, f, check);
        break;
    case CK_LZMA_ALONE:
        r = decoding ? lzma_alone_decoder(z, LZMA_DECODE_MEMLIMIT)
                     : lzma_alone_encoder(z, opt);
        break;
    case CK_LZMA_RAW:
        r = decoding ? lzma_raw_decoder(z, f) : lzma_raw_encoder(z, f);
        break;
    default:
        return ck_err_set(err, CK_ENOTSUP, "lzma: format %d is not supported",
                          c->format);
    }
    if (r != LZMA_OK)
        return ck_err_set(err, ck_codec_code(CK_CODEC_LZMA, r, decoding),
                          "lzma: cannot start: %s",
                          ck_codec_why(CK_CODEC_LZMA, r));
    return CK_OK;
}

static ck_code lzma_encode(const ck_codec_spec *c, const void *src, size_t n,
                           void *dst, size_t cap, size_t *out_n, ck_err *err)
{
    lzma_stream z = LZMA_STREAM_INIT;
    lzma_options_lzma opt;
    lzma_filter f[2];
    lzma_ret r;

    CK_TRY(lzma_setup(c, 0, &z, &opt, f, err));
    z.next_in = src;
    z.avail_in = n;
    z.next_out = dst;
    z.avail_out = cap;
    r = lzma_code(&z, LZMA_FINISH);
    *out_n = cap - z.avail_out;
    lzma_end(&z);
    if (r != LZMA_STREAM_END)
        return ck_err_set(err, ck_codec_code(CK_CODEC_LZMA, r, 0),
                          "lzma: compression failed: %s",
                          r == LZMA_OK ? "output buffer full"
                                       : ck_codec_why(CK_CODEC_LZMA, r));
    return CK_OK;
}

static ck_code lzma_decode(const ck_codec_spec *c, const void *src, size_t n,
                           void *dst, size_t want, ck_err *err)
{
    lzma_stream z = LZMA_STREAM_INIT;
    lzma_options_lzma opt;
    lzma_filter f[2];
    lzma_ret r;
    size_t got;

    CK_TRY(lzma_setup(c, 1, &z, &opt, f, err));
    z.next_in = src;
    z.avail_in = n;
    z.next_out = dst;
    z.avail_out = want;
    r = lzma_code(&z, LZMA_FINISH);
    got = want - z.avail_out;
    lzma_end(&z);
    if (r == LZMA_STREAM_END && got == want)
        return CK_OK;
    if (r == LZMA_STREAM_END)
        return ck_err_set(err, CK_ECORRUPT,
                          "lzma data decodes to %zu bytes, expected %zu", got,
                          want);
    if (r == LZMA_OK && got == want)
        return ck_err_set(err, CK_ECORRUPT,
                          "lzma data decodes to more than %zu bytes", want);
    return ck_err_set(
        err, ck_codec_code(CK_CODEC_LZMA, r, 1),
        "lzma data does not decode (%s)",
        ck_codec_why(CK_CODEC_LZMA, r == LZMA_OK ? LZMA_BUF_ERROR : r));
}

static ck_code bz2_encode(const ck_codec_spec *c, const void *src, size_t n,
                          void *dst, size_t cap, size_t *out_n, ck_err *err)
{
    unsigned int dn = cap > UINT_MAX ? UINT_MAX : (unsigned int)cap;
    int r;

    if (n > UINT_MAX)
        return ck_err_set(err, CK_ENOTSUP,
                          "bz2: a chunk of %zu bytes is over 4 GiB", n);
    r = BZ2_bzBuffToBuffCompress(dst, &dn, (char *)(uintptr_t)src,
                                 (unsigned int)n,
                                 c->level < 1   ? 1
                                 : c->level > 9 ? 9
                                                : c->level,
                                 0, 0);
    if (r != BZ_OK)
        return ck_err_set(err, ck_codec_code(CK_CODEC_BZ2, r, 0),
                          "bz2: compression failed: %s",
                          ck_codec_why(CK_CODEC_BZ2, r));
    *out_n = dn;
    return CK_OK;
}

static ck_code bz2_decode(const void *src, size_t n, void *dst, size_t want,
                          ck_err *err)
{
    unsigned int dn = (unsigned int)want;
    int r;

    if (n > UINT_MAX || want > UINT_MAX)
        return ck_err_set(err, CK_ENOTSUP,
                          "bz2: a chunk of %zu bytes is over 4 GiB", want);
    r = BZ2_bzBuffToBuffDecompress(dst, &dn, (char *)(uintptr_t)src,
                                   (unsigned int)n, 0, 0);
    if (r != BZ_OK)
        return ck_err_set(err, ck_codec_code(CK_CODEC_BZ2, r, 1),
                          "bz2 data does not decode (%s)",
                          ck_codec_why(CK_CODEC_BZ2, r));
    if (dn != want)
        return ck_err_set(err, CK_ECORRUPT,
                          "bz2 data decodes to %u bytes, expected %zu", dn,
                          want);
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
        size_t r;
        if (c->checksum) {
            ZSTD_CCtx *z = ZSTD_createCCtx();
            if (!z)
                return ck_err_set(err, CK_ENOMEM, "zstd: out of memory");
            r = ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, c->level);
            if (!ZSTD_isError(r))
                r = ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
            if (!ZSTD_isError(r))
                r = ZSTD_compress2(z, dst, cap, src, n);
            ZSTD_freeCCtx(z);
        } else {
            r = ZSTD_compress(dst, cap, src, n, c->level);
        }
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
    case CK_CODEC_LZ4:
        return lz4_encode(c, src, n, dst, cap, out_n, err);
    case CK_CODEC_LZMA:
        return lzma_encode(c, src, n, dst, cap, out_n, err);
    case CK_CODEC_BZ2:
        return bz2_encode(c, src, n, dst, cap, out_n, err);
    }
    return ck_err_set(err, CK_ENOTSUP, "unknown codec %d", (int)c->id);
}

/* libdeflate decompresses a whole buffer about twice as fast as zlib's
 * inflate: one decompressor per thread, made on first use and freed when
 * the thread ends. */
static pthread_key_t deflate_key;
static pthread_once_t deflate_once = PTHREAD_ONCE_INIT;

static void deflate_free(void *d)
{
    libdeflate_free_decompressor(d);
}

static void deflate_key_init(void)
{
    if (pthread_key_create(&deflate_key, deflate_free) != 0)
        deflate_key = (pthread_key_t)-1;
}

static struct libdeflate_decompressor *decompressor(void)
{
    struct libdeflate_decompressor *d;

    pthread_once(&deflate_once, deflate_key_init);
    if (deflate_key == (pthread_key_t)-1)
        return NULL;
    if (!(d = pthread_getspecific(deflate_key)) &&
        (d = libdeflate_alloc_decompressor()) &&
        pthread_setspecific(deflate_key, d) != 0) {
        libdeflate_free_decompressor(d);
        d = NULL;
    }
    return d;
}

/* 1 when libdeflate decoded src (a zlib stream or a gzip member) into
 * exactly 'want' bytes; 0 otherwise, and zlib then decides (and says
 * what is wrong), so streams libdeflate does not take stay readable. */
static int inflate_fast(const void *src, size_t n, void *dst, size_t want)
{
    const unsigned char *b = src;
    struct libdeflate_decompressor *d = decompressor();
    size_t got = 0;
    enum libdeflate_result r;

    if (!d || n < 2)
        return 0;
    if (b[0] == 0x1f && b[1] == 0x8b)
        r = libdeflate_gzip_decompress(d, src, n, dst, want, &got);
    else
        r = libdeflate_zlib_decompress(d, src, n, dst, want, &got);
    return r == LIBDEFLATE_SUCCESS && got == want;
}

static ck_code inflate_buf(const void *src, size_t n, void *dst, size_t want,
                           ck_err *err)
{
    z_stream z;
    int rc;

    if (inflate_fast(src, n, dst, want))
        return CK_OK;

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
    case CK_CODEC_LZ4:
        return lz4_decode(src, n, dst, want, err);
    case CK_CODEC_LZMA: {
        /* The xz and alone framings describe themselves; raw needs the
         * spec: ck_codec_decode_spec. */
        ck_codec_spec c = {.id = CK_CODEC_LZMA,
                           .level = -1,
                           .format = CK_LZMA_AUTO,
                           .check = -1};
        return lzma_decode(&c, src, n, dst, want, err);
    }
    case CK_CODEC_BZ2:
        return bz2_decode(src, n, dst, want, err);
    }
    return ck_err_set(err, CK_ENOTSUP, "unknown codec %d", (int)id);
}

ck_code ck_codec_decode_spec(const ck_codec_spec *c, const void *src, size_t n,
                             void *dst, size_t want, ck_err *err)
{
    if (c->id == CK_CODEC_LZMA)
        return lzma_decode(c, src, n, dst, want, err);
    return ck_codec_decode(c->id, src, n, dst, want, err);
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

static int folds(const ck_codec_spec *c)
{
    return c->id == CK_CODEC_ZSTD || c->id == CK_CODEC_ZLIB ||
           c->id == CK_CODEC_GZIP;
}

void ck_codec_fold_shuffle(ck_codec_spec *c, ck_dtype dtype)
{
    ck_filter_chain ch;
    ck_err ignored;
    const ck_filter *last;

    if (!folds(c) || c->shuffle != CK_SHUF_NONE || c->nfilters == 0)
        return;
    /* Any whole number of elements resolves the types. */
    if (ck_filter_chain_init(&ch, c->filters, c->nfilters, dtype,
                             ck_dtype_size(dtype) * 8, &ignored) != CK_OK)
        return;
    last = &ch.f[ch.n - 1];
    if (last->id != CK_FILTER_SHUFFLE ||
        (size_t)last->elementsize != ck_dtype_size(last->dtype))
        return;
    c->nfilters--;
    memset(&c->filters[c->nfilters], 0, sizeof c->filters[0]);
    c->shuffle = CK_SHUF_BYTE;
}

ck_code ck_codec_chain(const ck_codec_spec *c, ck_dtype dtype,
                       size_t chunk_bytes, ck_filter_chain *out, ck_err *err)
{
    ck_filter f[CK_FILTERS_MAX_CHAIN];
    int n = c->nfilters < 0 ? 0 : c->nfilters;

    if (n > CK_FILTERS_MAX)
        return ck_err_set(err, CK_EFORMAT, "%d filters (at most %d)", n,
                          CK_FILTERS_MAX);
    memcpy(f, c->filters, sizeof(ck_filter) * (size_t)n);
    if (folds(c) && c->shuffle == CK_SHUF_BYTE) {
        memset(&f[n], 0, sizeof f[n]);
        f[n++].id = CK_FILTER_SHUFFLE;
    } else if (folds(c) && c->shuffle == CK_SHUF_BIT) {
        return ck_err_set(err, CK_ENOTSUP,
                          "bitshuffle needs blosc (use "
                          "blosc:CNAME:LEVEL:bitshuffle)");
    }
    return ck_filter_chain_init(out, f, n, dtype, chunk_bytes, err);
}

uint32_t ck_crc32c_update(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;
    unsigned int c = ~crc;

    /* ISA-L takes an int length and the un-inverted state: feed it in
     * pieces, carrying that state. */
    while (n > 0) {
        int k = n > (1u << 30) ? 1 << 30 : (int)n;
        c = crc32_iscsi((unsigned char *)b, k, c);
        b += k;
        n -= (size_t)k;
    }
    return ~c;
}

uint32_t ck_crc32c(const void *p, size_t n)
{
    return ck_crc32c_update(0, p, n);
}
