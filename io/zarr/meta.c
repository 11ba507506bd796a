/*
 * io/zarr/meta.c - parse and write .zarray JSON (Zarr storage spec v2,
 * "Metadata"), with cJSON; read and set single members of .zattrs.  Only
 * the metadata text: chunk files, directories and the store layout are
 * io/zarr/zarr.c's job.
 */
#include "io/zarr/meta.h"
#include "io/zarr/meta_impl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

#include "base/ck_json.h"
#include "io/attrs_json.h"

#define HOST_BIG_ENDIAN (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
#define EXACT_MAX 9007199254740992.0 /* 2^53: doubles are exact below */

static const char *where_or(const char *where)
{
    return where ? where : ".zarray";
}

/* 1-based line and column of byte 'off' in text. */
static void text_pos(const char *text, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Python's json, and so zarr-python (v3 attributes included), reads and
 * writes the bare words NaN, Infinity and -Infinity: text that is JSON
 * but for them parses with each word as a string of itself, which is how
 * the metadata spells them (fill_value "NaN"); attributes are read from
 * the text as written (io/attrs_json.h).  NULL when that is not JSON
 * either. */
static cJSON *parse_words(const char *text, size_t len)
{
    char *q = ck_attrs_quote_words(text, len);
    const char *end = NULL;
    cJSON *j = NULL;
    size_t n, off;

    if (!q)
        return NULL;
    n = strlen(q);
    if (n != len) { /* no words: nothing to retry */
        j = cJSON_ParseWithLengthOpts(q, n, &end, 0);
        for (off = j ? (size_t)(end - q) : n; off < n && is_ws(q[off]); off++)
            ;
        if (j && off != n) {
            cJSON_Delete(j);
            j = NULL;
        }
    }
    free(q);
    return j;
}

/* Parses exactly one JSON value from text.  cJSON_GetErrorPtr is a global;
 * the parse end pointer is per call, so this is safe from several threads. */
ck_code ck_zarr_parse_json(const char *text, size_t len, const char *where,
                           cJSON **out, ck_err *err)
{
    const char *end = NULL;
    const char *nul = memchr(text, '\0', len);
    size_t off;
    cJSON *j;
    int line, col;

    if ((off = ck_json_too_deep(text, len)) != (size_t)-1) {
        text_pos(text, off, &line, &col);
        return ck_err_set(err, CK_EFORMAT,
                          "%s: JSON nested deeper than %d levels (the limit) "
                          "at line %d column %d",
                          where, CK_JSON_DEPTH_MAX, line, col);
    }
    j = cJSON_ParseWithLengthOpts(text, nul ? (size_t)(nul - text) : len, &end,
                                  0);
    if (!j && !nul && (j = parse_words(text, len)) != NULL) {
        *out = j;
        return CK_OK;
    }
    if (j) {
        off = (size_t)(end - text);
        while (off < len && is_ws(text[off]))
            off++;
        if (off == len) {
            *out = j;
            return CK_OK;
        }
        cJSON_Delete(j);
    } else {
        off = end ? (size_t)(end - text) : 0;
    }
    if (off > len)
        off = len;
    text_pos(text, off, &line, &col);
    return ck_err_set(err, CK_EFORMAT,
                      "%s: invalid JSON near line %d column %d", where, line,
                      col);
}

/* The first character of member 'key' of the top-level object, found in
 * the raw text (already validated by cJSON), or NULL.  cJSON keeps numbers
 * as doubles only, so this is how 64-bit integers stay exact. */
static const char *raw_member(const char *t, size_t len, const char *key)
{
    size_t klen = strlen(key);
    int depth = 0;

    for (size_t i = 0; i < len; i++) {
        char c = t[i];
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == '"') {
            size_t s = ++i;
            while (i < len && t[i] != '"')
                i += t[i] == '\\' ? 2 : 1;
            if (i >= len)
                return NULL;
            if (depth != 1 || i - s != klen || memcmp(t + s, key, klen) != 0)
                continue;
            size_t j = i + 1;
            while (j < len && is_ws(t[j]))
                j++;
            if (j < len && t[j] == ':') {
                for (j++; j < len && is_ws(t[j]); j++)
                    ;
                return t + j;
            }
        }
    }
    return NULL;
}

/* Reads an integer literal (no fraction or exponent) at p exactly.
 * Returns 1 and sets *neg and *mag (the magnitude), or 0 if p does not
 * start a plain integer or it does not fit 64 bits. */
static int raw_int(const char *p, const char *end, int *neg, uint64_t *mag)
{
    uint64_t v = 0;
    const char *q = p;

    *neg = q < end && *q == '-';
    if (*neg)
        q++;
    if (q >= end || *q < '0' || *q > '9')
        return 0;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (v > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*q - '0');
    }
    if (q < end && (*q == '.' || *q == 'e' || *q == 'E'))
        return 0;
    *mag = v;
    return 1;
}

static const struct {
    char kind, size;
    ck_dtype t;
} dtype_map[] = {
    {'b', '1', CK_BOOL}, {'i', '1', CK_I8},  {'i', '2', CK_I16},
    {'i', '4', CK_I32},  {'i', '8', CK_I64}, {'u', '1', CK_U8},
    {'u', '2', CK_U16},  {'u', '4', CK_U32}, {'u', '8', CK_U64},
    {'f', '4', CK_F32},  {'f', '8', CK_F64},
};

/* "<f8", "|u1": 1 with *t and *be set; 0 for anything else. */
static int dtype_from_str(const char *s, ck_dtype *t, int *be)
{
    if (strlen(s) == 3 && strchr("<>|", s[0]))
        for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++) {
            if (s[1] != dtype_map[i].kind || s[2] != dtype_map[i].size)
                continue;
            if (dtype_map[i].size != '1' && s[0] == '|')
                return 0;
            *t = dtype_map[i].t;
            *be = dtype_map[i].size != '1' && s[0] == '>';
            return 1;
        }
    return 0;
}

static ck_code parse_dtype(const cJSON *j, const char *where, ck_zarr_meta *m,
                           ck_err *err)
{
    if (!j)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key 'dtype'", where);
    if (!cJSON_IsString(j)) {
        char *txt = cJSON_PrintUnformatted(j);
        ck_code rc =
            ck_err_set(err, CK_ENOTSUP, "%s: dtype %.200s is not supported",
                       where, txt ? txt : "(structured)");
        cJSON_free(txt);
        return rc;
    }
    if (dtype_from_str(j->valuestring, &m->dtype, &m->big_endian))
        return CK_OK;
    if (strlen(j->valuestring) >= 2 && strchr("UOSa", j->valuestring[1]))
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: dtype '%.100s' is a string type (chunkctl "
                          "reads numeric and bool arrays only)",
                          where, j->valuestring);
    /* a NumPy type string chunkctl does not hold ("<c8", "<f2", "<M8[ns]")
     * is unsupported; anything else is not a dtype at all */
    const char *v = j->valuestring;
    int numpy = strlen(v) >= 3 && strchr("<>|", v[0]) &&
                strchr("biufcmMOSUV", v[1]) && v[1] &&
                isdigit((unsigned char)v[2]);
    return ck_err_set(err, numpy ? CK_ENOTSUP : CK_EFORMAT,
                      "%s: dtype '%.100s' is not supported", where, v);
}

/* shape or chunks: an array of integers >= lo, below 2^53. */
ck_code ck_zarr_parse_dims(const cJSON *root, const char *key, int64_t lo,
                           const char *where, int64_t *dims, int *ndim,
                           ck_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    const cJSON *v;
    int n = 0;

    if (!j)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key '%s'", where, key);
    if (!cJSON_IsArray(j))
        return ck_err_set(err, CK_EFORMAT, "%s: '%s' is not a list", where,
                          key);
    cJSON_ArrayForEach(v, j)
    {
        double d = v->valuedouble;
        if (n == CK_MAX_DIMS)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: '%s' has more than %d dimensions", where,
                              key, CK_MAX_DIMS);
        if (!cJSON_IsNumber(v) || d != floor(d) || d < (double)lo ||
            d >= EXACT_MAX)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: '%s'[%d] is not an integer >= %lld "
                              "(below 2^53)",
                              where, key, n, (long long)lo);
        dims[n++] = (int64_t)d;
    }
    *ndim = n;
    return CK_OK;
}

static ck_code int_level(const cJSON *cfg, const char *key, int dflt,
                         const char *where, int *out, ck_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);

    if (!j || cJSON_IsNull(j)) {
        *out = dflt;
        return CK_OK;
    }
    /* any int: LZ4's acceleration goes up to 65537 (numcodecs passes
     * more on, which LZ4 clamps); each codec checks its own range */
    if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble) ||
        fabs(j->valuedouble) > INT_MAX)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: compressor '%s' is not an integer", where, key);
    *out = (int)j->valuedouble;
    return CK_OK;
}

/* numcodecs LZMA(format, check, preset, filters): filters null or one
 * LZMA1/LZMA2 filter {"id": ..., "preset": N}, as Python's lzma takes it. */
static ck_code parse_lzma(const cJSON *j, const char *where, ck_codec_spec *c,
                          ck_err *err)
{
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(j, "filters");

    c->id = CK_CODEC_LZMA;
    CK_TRY(int_level(j, "format", 1, where, &c->format, err));
    CK_TRY(int_level(j, "check", -1, where, &c->check, err));
    CK_TRY(int_level(j, "preset", -1, where, &c->level, err));
    if (c->format < 0 || c->format > 3)
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: lzma format %d is not supported (chunkctl "
                          "reads auto 0, xz 1, alone 2 and raw 3)",
                          where, c->format);
    if (c->check != -1 && c->check != 0 && c->check != 1 && c->check != 4 &&
        c->check != 10)
        return ck_err_set(err, CK_EFORMAT, "%s: lzma check %d is unknown",
                          where, c->check);
    if (c->level < -1 || c->level > 9)
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: lzma preset %d is not supported (0..9)", where,
                          c->level);
    if (fl && !cJSON_IsNull(fl)) {
        const cJSON *f0 = cJSON_GetArrayItem(fl, 0), *id, *it;
        double v;
        if (!cJSON_IsArray(fl) || cJSON_GetArraySize(fl) != 1 ||
            !cJSON_IsObject(f0))
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: lzma filters other than one LZMA1 or LZMA2 "
                              "filter are not supported",
                              where);
        id = cJSON_GetObjectItemCaseSensitive(f0, "id");
        v = cJSON_IsNumber(id) ? id->valuedouble : -1;
        /* LZMA_FILTER_LZMA1 is 2^62 + 1, which a double rounds to 2^62. */
        if (v == 33)
            c->lzfilter = CK_LZF_LZMA2;
        else if (v == 4611686018427387904.0)
            c->lzfilter = CK_LZF_LZMA1;
        else
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: lzma filter id %.0f is not supported "
                              "(chunkctl reads LZMA1 and LZMA2)",
                              where, v);
        cJSON_ArrayForEach(it, f0)
        {
            if (strcmp(it->string, "id") != 0 &&
                strcmp(it->string, "preset") != 0)
                return ck_err_set(err, CK_ENOTSUP,
                                  "%s: lzma filter option '%.40s' is not "
                                  "supported (only preset)",
                                  where, it->string);
        }
        CK_TRY(int_level(f0, "preset", 6, where, &c->level, err));
        if (c->level < 0 || c->level > 9)
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: lzma preset %d is not supported (0..9)",
                              where, c->level);
    } else if (c->format == CK_LZMA_RAW) {
        return ck_err_set(err, CK_EFORMAT,
                          "%s: lzma format raw (3) needs 'filters'", where);
    }
    return CK_OK;
}

/* numcodecs configs: Blosc(cname, clevel, shuffle, blocksize), Zstd(level),
 * Zlib(level), GZip(level), LZ4(acceleration), LZMA, BZ2(level).  Defaults
 * are numcodecs' own. */
ck_code ck_zarr_parse_compressor(const cJSON *j, const char *where,
                                 ck_zarr_meta *m, ck_err *err)
{
    static const char *const cnames[] = {"lz4",  "lz4hc", "blosclz",
                                         "zlib", "zstd",  "snappy"};
    ck_codec_spec *c = &m->codec;
    const cJSON *id;

    memset(c, 0, sizeof *c);
    if (!j)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key 'compressor'",
                          where);
    if (cJSON_IsNull(j))
        return CK_OK;
    if (!cJSON_IsObject(j))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: 'compressor' is neither null nor an object",
                          where);
    id = cJSON_GetObjectItemCaseSensitive(j, "id");
    if (!cJSON_IsString(id))
        return ck_err_set(err, CK_EFORMAT, "%s: compressor has no string 'id'",
                          where);
    if (strcmp(id->valuestring, "zstd") == 0) {
        c->id = CK_CODEC_ZSTD;
        return int_level(j, "level", 1, where, &c->level, err);
    }
    if (strcmp(id->valuestring, "zlib") == 0 ||
        strcmp(id->valuestring, "gzip") == 0) {
        c->id = id->valuestring[0] == 'z' ? CK_CODEC_ZLIB : CK_CODEC_GZIP;
        return int_level(j, "level", 1, where, &c->level, err);
    }
    if (strcmp(id->valuestring, "blosc") == 0) {
        const cJSON *cn = cJSON_GetObjectItemCaseSensitive(j, "cname");
        const char *name = cJSON_IsString(cn) ? cn->valuestring : "lz4";
        int shuffle, known = 0;

        if (cn && !cJSON_IsString(cn))
            return ck_err_set(err, CK_EFORMAT,
                              "%s: compressor 'cname' is not a string", where);
        for (size_t i = 0; i < sizeof cnames / sizeof cnames[0]; i++)
            known |= strcmp(name, cnames[i]) == 0;
        if (!known)
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: blosc cname '%.40s' is not supported", where,
                              name);
        c->id = CK_CODEC_BLOSC;
        snprintf(c->cname, sizeof c->cname, "%s", name);
        CK_TRY(int_level(j, "clevel", 5, where, &c->level, err));
        CK_TRY(int_level(j, "shuffle", 1, where, &shuffle, err));
        if (shuffle < -1 || shuffle > 2)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: blosc shuffle %d (expected -1, 0, 1 or 2)",
                              where, shuffle);
        if (shuffle == -1) /* AUTOSHUFFLE */
            shuffle = ck_dtype_size(m->dtype) == 1 ? 2 : 1;
        c->shuffle = (ck_shuffle_kind)shuffle;
        return CK_OK;
    }
    if (strcmp(id->valuestring, "lz4") == 0) {
        c->id = CK_CODEC_LZ4;
        CK_TRY(int_level(j, "acceleration", 1, where, &c->level, err));
        if (c->level < 1) /* LZ4_compress_fast takes < 1 as 1 */
            c->level = 1;
        return CK_OK;
    }
    if (strcmp(id->valuestring, "bz2") == 0) {
        c->id = CK_CODEC_BZ2;
        CK_TRY(int_level(j, "level", 1, where, &c->level, err));
        if (c->level < 1 || c->level > 9)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: bz2 level %d is outside 1..9", where,
                              c->level);
        return CK_OK;
    }
    if (strcmp(id->valuestring, "lzma") == 0)
        return parse_lzma(j, where, c, err);
    return ck_err_set(err, CK_ENOTSUP,
                      "%s: compressor '%.60s' is not supported (chunkctl "
                      "reads blosc, zstd, zlib, gzip, lz4, lzma and bz2)",
                      where, id->valuestring);
}

/* A filter's dtype key: one of ours in this machine's byte order; a
 * string or object type is named as such. */
static ck_code filter_dtype(const cJSON *cfg, const char *key, int need,
                            const char *where, const char *fid, ck_dtype *t,
                            ck_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);
    int be = 0;

    *t = CK_DT_INVALID;
    if (!j || cJSON_IsNull(j)) {
        if (need)
            return ck_err_set(err, CK_EFORMAT, "%s: filter %s has no '%s'",
                              where, fid, key);
        return CK_OK;
    }
    if (!cJSON_IsString(j))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: filter %s '%s' is not a dtype string", where,
                          fid, key);
    if (!dtype_from_str(j->valuestring, t, &be)) {
        const char *s = j->valuestring;
        char k = strlen(s) >= 2 ? s[1] : '?';
        if (strchr("UOSa", k))
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: filter %s %s '%.40s' is a string type "
                              "(chunkctl reads numeric and bool arrays only)",
                              where, fid, key, s);
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: filter %s %s '%.40s' is not supported", where,
                          fid, key, s);
    }
    if (be != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: filter %s %s '%s' is not in this machine's "
                          "byte order",
                          where, fid, key, j->valuestring);
    return CK_OK;
}

static ck_code filter_num(const cJSON *cfg, const char *key, const char *where,
                          const char *fid, double *out, ck_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);

    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: filter %s '%s' is missing or not a number",
                          where, fid, key);
    *out = j->valuedouble;
    return CK_OK;
}

static ck_code filter_int(const cJSON *cfg, const char *key, int dflt,
                          const char *where, const char *fid, int *out,
                          ck_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);

    if (!j || cJSON_IsNull(j)) {
        if (dflt == INT_MIN)
            return ck_err_set(err, CK_EFORMAT, "%s: filter %s has no '%s'",
                              where, fid, key);
        *out = dflt;
        return CK_OK;
    }
    if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble) ||
        fabs(j->valuedouble) > 1e6)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: filter %s '%s' is not a small integer", where,
                          fid, key);
    *out = (int)j->valuedouble;
    return CK_OK;
}

/* One numcodecs filter config (as numcodecs 0.11's get_config writes it). */
static ck_code parse_filter(const cJSON *j, const char *where, ck_filter *f,
                            ck_err *err)
{
    const cJSON *idj = cJSON_GetObjectItemCaseSensitive(j, "id");
    const char *id;

    memset(f, 0, sizeof *f);
    if (!cJSON_IsObject(j) || !cJSON_IsString(idj))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: a filter is not an object with a string 'id'",
                          where);
    id = idj->valuestring;
    if (strcmp(id, "delta") == 0) {
        f->id = CK_FILTER_DELTA;
        CK_TRY(filter_dtype(j, "dtype", 1, where, id, &f->dtype, err));
        return filter_dtype(j, "astype", 0, where, id, &f->astype, err);
    }
    if (strcmp(id, "shuffle") == 0) {
        f->id = CK_FILTER_SHUFFLE;
        CK_TRY(
            filter_int(j, "elementsize", 4, where, id, &f->elementsize, err));
        if (f->elementsize < 0)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: filter shuffle elementsize %d is negative",
                              where, f->elementsize);
        if (f->elementsize == 0) /* numcodecs: <= 1 copies */
            f->elementsize = 1;
        return CK_OK;
    }
    if (strcmp(id, "fixedscaleoffset") == 0) {
        f->id = CK_FILTER_FIXEDSCALEOFFSET;
        CK_TRY(filter_num(j, "offset", where, id, &f->offset, err));
        CK_TRY(filter_num(j, "scale", where, id, &f->scale, err));
        CK_TRY(filter_dtype(j, "dtype", 1, where, id, &f->dtype, err));
        return filter_dtype(j, "astype", 0, where, id, &f->astype, err);
    }
    if (strcmp(id, "quantize") == 0) {
        f->id = CK_FILTER_QUANTIZE;
        CK_TRY(filter_int(j, "digits", INT_MIN, where, id, &f->digits, err));
        CK_TRY(filter_dtype(j, "dtype", 1, where, id, &f->dtype, err));
        return filter_dtype(j, "astype", 0, where, id, &f->astype, err);
    }
    if (strcmp(id, "bitround") == 0) {
        f->id = CK_FILTER_BITROUND;
        return filter_int(j, "keepbits", INT_MIN, where, id, &f->keepbits, err);
    }
    if (strcmp(id, "astype") == 0) {
        f->id = CK_FILTER_ASTYPE;
        CK_TRY(filter_dtype(j, "decode_dtype", 1, where, id, &f->dtype, err));
        return filter_dtype(j, "encode_dtype", 1, where, id, &f->astype, err);
    }
    if (strcmp(id, "packbits") == 0) {
        f->id = CK_FILTER_PACKBITS;
        return CK_OK;
    }
    if (strcmp(id, "categorize") == 0) {
        const cJSON *labels = cJSON_GetObjectItemCaseSensitive(j, "labels");
        const cJSON *l;
        f->id = CK_FILTER_CATEGORIZE;
        CK_TRY(filter_dtype(j, "dtype", 1, where, id, &f->dtype, err));
        CK_TRY(filter_dtype(j, "astype", 0, where, id, &f->astype, err));
        if (f->astype == CK_DT_INVALID)
            f->astype = CK_U8;
        if (!cJSON_IsArray(labels))
            return ck_err_set(err, CK_EFORMAT,
                              "%s: filter categorize 'labels' is not a list",
                              where);
        if (cJSON_GetArraySize(labels) > CK_CATEGORIES_MAX)
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: filter categorize has %d labels (at most "
                              "%d)",
                              where, cJSON_GetArraySize(labels),
                              CK_CATEGORIES_MAX);
        cJSON_ArrayForEach(l, labels)
        {
            if (!cJSON_IsNumber(l))
                return ck_err_set(err, CK_ENOTSUP,
                                  "%s: filter categorize labels are not "
                                  "numbers (chunkctl reads numeric arrays "
                                  "only)",
                                  where);
            f->labels[f->nlabels++] = l->valuedouble;
        }
        return CK_OK;
    }
    return ck_err_set(err, CK_ENOTSUP,
                      "%s: filter '%.60s' is not supported (chunkctl applies "
                      "delta, shuffle, fixedscaleoffset, quantize, bitround, "
                      "astype, packbits and categorize)",
                      where, id);
}

static ck_code parse_filters(const cJSON *j, const char *where, ck_zarr_meta *m,
                             ck_err *err)
{
    ck_codec_spec *c = &m->codec;
    ck_filter_chain ch;
    const cJSON *f;
    ck_code rc;

    if (!j || cJSON_IsNull(j))
        return CK_OK;
    if (!cJSON_IsArray(j))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: 'filters' is neither null nor a list", where);
    if (cJSON_GetArraySize(j) > CK_FILTERS_MAX)
        return ck_err_set(err, CK_ENOTSUP, "%s: %d filters (at most %d)", where,
                          cJSON_GetArraySize(j), CK_FILTERS_MAX);
    cJSON_ArrayForEach(f, j)
    {
        CK_TRY(parse_filter(f, where, &c->filters[c->nfilters], err));
        c->nfilters++;
    }
    /* The types must flow from one stage to the next; the chunk size is
     * checked when the array opens. */
    rc = ck_codec_chain(c, m->dtype, ck_dtype_size(m->dtype) * 8, &ch, err);
    if (rc != CK_OK) {
        ck_err_prefix(err, "%s", where);
        return rc;
    }
    ck_codec_fold_shuffle(c, m->dtype);
    return CK_OK;
}

/* Range of the integer dtype t, as the magnitude limits of a fill value. */
static int int_fits(ck_dtype t, int neg, uint64_t mag)
{
    unsigned bits = 8 * (unsigned)ck_dtype_size(t);

    if (!ck_dtype_is_signed(t))
        return !neg || mag == 0 ? bits == 64 || mag < ((uint64_t)1 << bits) : 0;
    if (neg)
        return mag <= ((uint64_t)1 << (bits - 1));
    return mag < ((uint64_t)1 << (bits - 1));
}

ck_code ck_zarr_parse_fill(const cJSON *j, const char *text, size_t len,
                           const char *where, ck_zarr_meta *m, ck_err *err)
{
    ck_dtype t = m->dtype;

    m->has_fill = 0;
    m->fill.u = 0;
    if (!j)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key 'fill_value'",
                          where);
    if (cJSON_IsNull(j))
        return CK_OK;
    m->has_fill = 1;
    if (ck_dtype_is_float(t)) {
        if (cJSON_IsNumber(j)) {
            m->fill.f = j->valuedouble;
            return CK_OK;
        }
        if (cJSON_IsString(j)) {
            if (strcmp(j->valuestring, "NaN") == 0)
                m->fill.f = NAN;
            else if (strcmp(j->valuestring, "Infinity") == 0)
                m->fill.f = INFINITY;
            else if (strcmp(j->valuestring, "-Infinity") == 0)
                m->fill.f = -INFINITY;
            else
                return ck_err_set(err, CK_EFORMAT,
                                  "%s: fill_value '%.60s' is not a number",
                                  where, j->valuestring);
            return CK_OK;
        }
        return ck_err_set(err, CK_EFORMAT, "%s: fill_value is not a number",
                          where);
    }
    if (t == CK_BOOL && cJSON_IsBool(j)) {
        m->fill.i = cJSON_IsTrue(j) ? 1 : 0;
        return CK_OK;
    }
    if (!cJSON_IsNumber(j))
        return ck_err_set(
            err, CK_EFORMAT, "%s: fill_value is not %s for dtype %s", where,
            t == CK_BOOL ? "true, false or a number" : "an integer",
            ck_dtype_name(t));
    if (t == CK_BOOL) {
        m->fill.i = j->valuedouble != 0;
        return CK_OK;
    }

    /* Integers: exact from the raw text where it is a plain literal, else
     * from the double when that is integral and exact (below 2^53). */
    const char *p = raw_member(text, len, "fill_value");
    int neg = 0;
    uint64_t mag = 0;
    double d = j->valuedouble;

    if (!p || !raw_int(p, text + len, &neg, &mag)) {
        if (d != floor(d) || fabs(d) >= EXACT_MAX)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: fill_value %.17g is not an exact integer",
                              where, d);
        neg = d < 0;
        mag = (uint64_t)fabs(d);
    }
    if (!int_fits(t, neg, mag))
        return ck_err_set(
            err, CK_EFORMAT, "%s: fill_value %s%llu does not fit dtype %s",
            where, neg ? "-" : "", (unsigned long long)mag, ck_dtype_name(t));
    if (ck_dtype_is_signed(t))
        m->fill.i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    else
        m->fill.u = mag;
    return CK_OK;
}

static ck_code parse_root(const cJSON *root, const char *text, size_t len,
                          const char *where, ck_zarr_meta *m, ck_err *err)
{
    const cJSON *j;
    int nchunk = 0;

    if (!cJSON_IsObject(root))
        return ck_err_set(err, CK_EFORMAT, "%s: not a JSON object", where);
    j = cJSON_GetObjectItemCaseSensitive(root, "zarr_format");
    if (!j)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key 'zarr_format'",
                          where);
    if (!cJSON_IsNumber(j) || j->valuedouble != 2)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: zarr_format is not 2 (only zarr v2 is "
                          "supported)",
                          where);
    CK_TRY(
        ck_zarr_parse_dims(root, "shape", 0, where, m->shape, &m->ndim, err));
    CK_TRY(
        ck_zarr_parse_dims(root, "chunks", 1, where, m->chunks, &nchunk, err));
    if (nchunk != m->ndim)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: 'chunks' has %d dimensions, 'shape' has %d",
                          where, nchunk, m->ndim);
    CK_TRY(parse_dtype(cJSON_GetObjectItemCaseSensitive(root, "dtype"), where,
                       m, err));

    j = cJSON_GetObjectItemCaseSensitive(root, "order");
    if (!j)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key 'order'", where);
    if (!cJSON_IsString(j) ||
        (strcmp(j->valuestring, "C") != 0 && strcmp(j->valuestring, "F") != 0))
        return ck_err_set(err, CK_EFORMAT, "%s: order is not \"C\" or \"F\"",
                          where);
    m->order = j->valuestring[0];

    /* Absent in stores written before zarr-python 2.8: '.' then. */
    j = cJSON_GetObjectItemCaseSensitive(root, "dimension_separator");
    m->dim_sep = '.';
    if (j && !cJSON_IsNull(j)) {
        if (!cJSON_IsString(j) || (strcmp(j->valuestring, ".") != 0 &&
                                   strcmp(j->valuestring, "/") != 0))
            return ck_err_set(err, CK_EFORMAT,
                              "%s: dimension_separator is not \".\" or "
                              "\"/\"",
                              where);
        m->dim_sep = j->valuestring[0];
    }

    CK_TRY(
        ck_zarr_parse_fill(cJSON_GetObjectItemCaseSensitive(root, "fill_value"),
                           text, len, where, m, err));
    CK_TRY(ck_zarr_parse_compressor(
        cJSON_GetObjectItemCaseSensitive(root, "compressor"), where, m, err));
    return parse_filters(cJSON_GetObjectItemCaseSensitive(root, "filters"),
                         where, m, err);
}

ck_code ck_zarr_meta_parse(const char *text, size_t len, const char *where,
                           ck_zarr_meta *out, ck_err *err)
{
    ck_zarr_meta m;
    cJSON *root = NULL;
    ck_code rc;

    where = where_or(where);
    memset(&m, 0, sizeof m);
    m.zarr_format = 2;
    CK_TRY(ck_zarr_parse_json(text, len, where, &root, err));
    rc = parse_root(root, text, len, where, &m, err);
    cJSON_Delete(root);
    if (rc == CK_OK)
        *out = m;
    return rc;
}

ck_code ck_zarr_attrs_check(const char *text, size_t len, const char *where,
                            ck_err *err)
{
    cJSON *root = NULL;
    int ok;

    CK_TRY(ck_zarr_parse_json(text, len, where, &root, err));
    ok = cJSON_IsObject(root);
    cJSON_Delete(root);
    if (!ok)
        return ck_err_set(err, CK_EFORMAT, "%s: not a JSON object", where);
    return CK_OK;
}

ck_code ck_zarr_zgroup_check(const char *text, size_t len, const char *where,
                             ck_err *err)
{
    cJSON *root = NULL;
    const cJSON *f;
    ck_code rc = CK_OK;

    CK_TRY(ck_zarr_parse_json(text, len, where, &root, err));
    f = cJSON_GetObjectItemCaseSensitive(root, "zarr_format");
    if (!cJSON_IsObject(root))
        rc = ck_err_set(err, CK_EFORMAT, "%s: not a JSON object", where);
    else if (!f)
        rc =
            ck_err_set(err, CK_EFORMAT, "%s: missing key 'zarr_format'", where);
    else if (!cJSON_IsNumber(f) || f->valuedouble != 2)
        rc = ck_err_set(err, CK_EFORMAT,
                        "%s: zarr_format is not 2 (only zarr v2 is "
                        "supported)",
                        where);
    cJSON_Delete(root);
    return rc;
}

const char *ck_zarr_dtype_str(ck_dtype t, int big_endian, char *buf)
{
    static const char kinds[CK_DT_COUNT] = {
        [CK_BOOL] = 'b', [CK_I8] = 'i',  [CK_I16] = 'i', [CK_I32] = 'i',
        [CK_I64] = 'i',  [CK_U8] = 'u',  [CK_U16] = 'u', [CK_U32] = 'u',
        [CK_U64] = 'u',  [CK_F32] = 'f', [CK_F64] = 'f',
    };
    size_t sz = (unsigned)t < CK_DT_COUNT ? ck_dtype_size(t) : 0;

    if (sz == 0 || !kinds[t]) {
        buf[0] = '\0';
        return buf;
    }
    buf[0] = sz == 1 ? '|' : big_endian ? '>' : '<';
    buf[1] = kinds[t];
    buf[2] = (char)('0' + sz);
    buf[3] = '\0';
    return buf;
}

/* An integer as a raw JSON number, so 64-bit values stay exact. */
static cJSON *raw_int_item(int neg, uint64_t mag)
{
    char buf[32];

    snprintf(buf, sizeof buf, "%s%llu", neg ? "-" : "",
             (unsigned long long)mag);
    return cJSON_CreateRaw(buf);
}

cJSON *ck_zarr_dims_item(const int64_t *v, int n)
{
    cJSON *a = cJSON_CreateArray();

    for (int d = 0; a && d < n; d++) {
        cJSON *x = raw_int_item(0, (uint64_t)v[d]);
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

cJSON *ck_zarr_fill_item(const ck_zarr_meta *m)
{
    if (!m->has_fill)
        return cJSON_CreateNull();
    if (m->dtype == CK_BOOL)
        return cJSON_CreateBool(m->fill.i != 0);
    if (ck_dtype_is_float(m->dtype)) {
        double f = m->fill.f;
        if (isnan(f))
            return cJSON_CreateString("NaN");
        if (isinf(f))
            return cJSON_CreateString(f > 0 ? "Infinity" : "-Infinity");
        /* The shortest digits that read back as f: cJSON's 15 can miss
         * (netCDF's default fill 9.969209968386869e+36 came back as
         * another double, and then marked nothing). */
        char buf[40];
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, f);
            if (strtod(buf, NULL) == f)
                break;
        }
        return cJSON_CreateRaw(buf);
    }
    if (ck_dtype_is_signed(m->dtype))
        return m->fill.i < 0 ? raw_int_item(1, 0 - (uint64_t)m->fill.i)
                             : raw_int_item(0, (uint64_t)m->fill.i);
    return raw_int_item(0, m->fill.u);
}

/* numcodecs LZMA's config: preset null unless asked; a filter chain of
 * one filter carries the preset instead (Python's lzma takes only one of
 * them). */
static cJSON *lzma_item(const ck_codec_spec *c)
{
    cJSON *o = cJSON_CreateObject(), *fl = NULL, *f = NULL;
    int ok = o != NULL;

    if (ok && c->lzfilter != CK_LZF_NONE) {
        fl = cJSON_CreateArray();
        f = cJSON_CreateObject();
        ok = fl && f && cJSON_AddItemToArray(fl, f);
        if (!ok) {
            cJSON_Delete(f);
            f = NULL;
        }
        /* LZMA1 is 2^62 + 1, beyond a double: written as raw text. */
        ok = ok &&
             (c->lzfilter == CK_LZF_LZMA1
                  ? cJSON_AddRawToObject(f, "id", "4611686018427387905")
                  : cJSON_AddNumberToObject(f, "id", 33)) &&
             cJSON_AddNumberToObject(f, "preset", c->level < 0 ? 6 : c->level);
    }
    ok = ok && cJSON_AddNumberToObject(o, "check", c->check);
    if (ok && fl) {
        ok = cJSON_AddItemToObject(o, "filters", fl);
        if (ok)
            fl = NULL;
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "filters") != NULL;
    }
    ok = ok && cJSON_AddNumberToObject(o, "format", c->format) &&
         cJSON_AddStringToObject(o, "id", "lzma") &&
         (c->level >= 0 && c->lzfilter == CK_LZF_NONE
              ? cJSON_AddNumberToObject(o, "preset", c->level) != NULL
              : cJSON_AddNullToObject(o, "preset") != NULL);
    cJSON_Delete(fl);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* numcodecs config of m->codec, keys sorted; NULL with *rc set if none. */
cJSON *ck_zarr_compressor_item(const ck_zarr_meta *m, ck_code *rc, ck_err *err)
{
    const ck_codec_spec *c = &m->codec;
    static const char *const ids[] = {
        [CK_CODEC_ZSTD] = "zstd",
        [CK_CODEC_ZLIB] = "zlib",
        [CK_CODEC_GZIP] = "gzip",
    };
    cJSON *o;

    switch (c->id) {
    case CK_CODEC_NONE:
        return cJSON_CreateNull();
    case CK_CODEC_ZSTD:
    case CK_CODEC_ZLIB:
    case CK_CODEC_GZIP:
        /* A shuffle is written as a numcodecs shuffle filter. */
        o = cJSON_CreateObject();
        if (o && (!cJSON_AddStringToObject(o, "id", ids[c->id]) ||
                  !cJSON_AddNumberToObject(o, "level", c->level))) {
            cJSON_Delete(o);
            o = NULL;
        }
        break;
    case CK_CODEC_BLOSC:
        o = cJSON_CreateObject();
        if (o && (!cJSON_AddNumberToObject(o, "blocksize", 0) ||
                  !cJSON_AddNumberToObject(o, "clevel", c->level) ||
                  !cJSON_AddStringToObject(o, "cname",
                                           c->cname[0] ? c->cname : "lz4") ||
                  !cJSON_AddStringToObject(o, "id", "blosc") ||
                  !cJSON_AddNumberToObject(o, "shuffle", (int)c->shuffle))) {
            cJSON_Delete(o);
            o = NULL;
        }
        break;
    case CK_CODEC_LZ4:
        o = cJSON_CreateObject();
        if (o && (!cJSON_AddNumberToObject(o, "acceleration", c->level) ||
                  !cJSON_AddStringToObject(o, "id", "lz4"))) {
            cJSON_Delete(o);
            o = NULL;
        }
        break;
    case CK_CODEC_BZ2:
        o = cJSON_CreateObject();
        if (o && (!cJSON_AddStringToObject(o, "id", "bz2") ||
                  !cJSON_AddNumberToObject(o, "level", c->level))) {
            cJSON_Delete(o);
            o = NULL;
        }
        break;
    case CK_CODEC_LZMA:
        o = lzma_item(c);
        break;
    default:
        *rc = ck_err_set(err, CK_ENOTSUP, "zarr: codec %d is not supported",
                         (int)c->id);
        return NULL;
    }
    if (!o)
        *rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    return o;
}

static int add_dtype(cJSON *o, const char *key, ck_dtype t)
{
    char dt[4];
    return cJSON_AddStringToObject(
               o, key, ck_zarr_dtype_str(t, HOST_BIG_ENDIAN, dt)) != NULL;
}

/* One numcodecs filter config, keys sorted as json.dumps(sort_keys=True)
 * writes them; f is resolved (its types are known). */
static cJSON *filter_item(const ck_filter *f)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;

    switch (f->id) {
    case CK_FILTER_DELTA:
        ok = ok && add_dtype(o, "astype", f->astype) &&
             add_dtype(o, "dtype", f->dtype) &&
             cJSON_AddStringToObject(o, "id", "delta");
        break;
    case CK_FILTER_SHUFFLE:
        ok = ok && cJSON_AddNumberToObject(o, "elementsize", f->elementsize) &&
             cJSON_AddStringToObject(o, "id", "shuffle");
        break;
    case CK_FILTER_FIXEDSCALEOFFSET:
        ok = ok && add_dtype(o, "astype", f->astype) &&
             add_dtype(o, "dtype", f->dtype) &&
             cJSON_AddStringToObject(o, "id", "fixedscaleoffset") &&
             cJSON_AddNumberToObject(o, "offset", f->offset) &&
             cJSON_AddNumberToObject(o, "scale", f->scale);
        break;
    case CK_FILTER_QUANTIZE:
        ok = ok && add_dtype(o, "astype", f->astype) &&
             cJSON_AddNumberToObject(o, "digits", f->digits) &&
             add_dtype(o, "dtype", f->dtype) &&
             cJSON_AddStringToObject(o, "id", "quantize");
        break;
    case CK_FILTER_BITROUND:
        ok = ok && cJSON_AddStringToObject(o, "id", "bitround") &&
             cJSON_AddNumberToObject(o, "keepbits", f->keepbits);
        break;
    case CK_FILTER_ASTYPE:
        ok = ok && add_dtype(o, "decode_dtype", f->dtype) &&
             add_dtype(o, "encode_dtype", f->astype) &&
             cJSON_AddStringToObject(o, "id", "astype");
        break;
    case CK_FILTER_PACKBITS:
        ok = ok && cJSON_AddStringToObject(o, "id", "packbits");
        break;
    default:
        ok = 0;
        break;
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The "filters" list of m: null when there are none.  A zstd, zlib or
 * gzip shuffle is the last filter. */
static cJSON *filters_item(const ck_zarr_meta *m, ck_code *rc, ck_err *err)
{
    ck_filter_chain ch;
    cJSON *list;

    *rc = ck_codec_chain(&m->codec, m->dtype, ck_dtype_size(m->dtype) * 8, &ch,
                         err);
    if (*rc != CK_OK) {
        ck_err_prefix(err, "zarr");
        return NULL;
    }
    for (int i = 0; i < ch.n; i++)
        if (ch.f[i].id == CK_FILTER_CATEGORIZE) {
            *rc = ck_err_set(err, CK_ENOTSUP,
                             "zarr: filter categorize is read only");
            return NULL;
        }
    if (ch.n == 0)
        list = cJSON_CreateNull();
    else if ((list = cJSON_CreateArray()))
        for (int i = 0; i < ch.n; i++) {
            cJSON *f = filter_item(&ch.f[i]);
            if (!f || !cJSON_AddItemToArray(list, f)) {
                cJSON_Delete(f);
                cJSON_Delete(list);
                list = NULL;
                break;
            }
        }
    if (!list)
        *rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    return list;
}

ck_code ck_zarr_meta_format(const ck_zarr_meta *m, char **out, ck_err *err)
{
    ck_code rc = CK_ENOMEM;
    char dt[4], sep[2] = {m->dim_sep ? m->dim_sep : '.', '\0'};
    char order[2] = {m->order ? m->order : 'C', '\0'};
    cJSON *root = cJSON_CreateObject();
    cJSON *comp = NULL, *filters = NULL;
    char *txt;

    if (!root)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    ck_zarr_dtype_str(m->dtype, m->big_endian, dt);
    if (!dt[0]) {
        rc = ck_err_set(err, CK_ENOTSUP, "zarr: dtype %s is not supported",
                        ck_dtype_name(m->dtype));
        goto out;
    }
    comp = ck_zarr_compressor_item(m, &rc, err);
    if (!comp)
        goto out;
    filters = filters_item(m, &rc, err);
    if (!filters) {
        cJSON_Delete(comp);
        goto out;
    }
    /* A NULL item (allocation failed) makes cJSON_AddItemToObject fail. */
    /* Keys in sorted order; an item not yet added is deleted here when an
     * earlier one fails. */
    if (!cJSON_AddItemToObject(root, "chunks",
                               ck_zarr_dims_item(m->chunks, m->ndim)) ||
        !cJSON_AddItemToObject(root, "compressor", comp)) {
        cJSON_Delete(comp);
        cJSON_Delete(filters);
        goto nomem;
    }
    if (!cJSON_AddStringToObject(root, "dimension_separator", sep) ||
        !cJSON_AddStringToObject(root, "dtype", dt) ||
        !cJSON_AddItemToObject(root, "fill_value", ck_zarr_fill_item(m)) ||
        !cJSON_AddItemToObject(root, "filters", filters)) {
        if (!cJSON_GetObjectItemCaseSensitive(root, "filters"))
            cJSON_Delete(filters);
        goto nomem;
    }
    if (!cJSON_AddStringToObject(root, "order", order) ||
        !cJSON_AddItemToObject(root, "shape",
                               ck_zarr_dims_item(m->shape, m->ndim)) ||
        !cJSON_AddNumberToObject(root, "zarr_format", 2))
        goto nomem;
    txt = cJSON_Print(root);
    if (!txt)
        goto nomem;
    /* cJSON allocates with malloc (no hooks are installed), so the caller
     * may free() it. */
    *out = txt;
    rc = CK_OK;
    goto out;
nomem:
    rc = ck_err_set(err, CK_ENOMEM, "out of memory");
out:
    cJSON_Delete(root);
    return rc;
}

/* ---- .zattrs members, one at a time ----------------------------------- */

/* These work on the raw text, not on a cJSON tree: printing a tree again
 * would turn a float 1.0 into 1 and 2^60 into 1.152921504606847e+18
 * (Python would read an int, then a float), and would quote the bare NaN
 * that zarr-python writes.  Members we do not set are copied as written. */

static size_t skip_ws(const char *t, size_t len, size_t i)
{
    while (i < len && is_ws(t[i]))
        i++;
    return i;
}

/* The index just past the string that opens at t[i]. */
static size_t skip_string(const char *t, size_t len, size_t i)
{
    for (i++; i < len && t[i] != '"'; i += t[i] == '\\' ? 2 : 1)
        ;
    return i < len ? i + 1 : len;
}

/* The index just past the value that starts at t[i]: a string, an object
 * or array with all it holds, or a number or bare word (NaN included). */
static size_t skip_value(const char *t, size_t len, size_t i)
{
    int depth = 0;

    while (i < len) {
        char c = t[i];
        if (c == '"') {
            i = skip_string(t, len, i);
            if (depth == 0)
                return i;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return i;
            if (--depth == 0)
                return i + 1;
        } else if (depth == 0 && (c == ',' || is_ws(c))) {
            return i;
        }
        i++;
    }
    return i;
}

typedef struct member {
    const char *key; /* as written, quotes and escapes included */
    size_t klen;
    const char *val; /* as written */
    size_t vlen;
} member;

/* Steps *pos past the '{' that opens the text; -1 if there is none. */
static int members_begin(const char *t, size_t len, size_t *pos)
{
    size_t i = skip_ws(t, len, 0);

    if (i >= len || t[i] != '{')
        return -1;
    *pos = i + 1;
    return 0;
}

/* The next member from *pos: 1 and *m, 0 after the last, -1 when the text
 * is not an object (never, once ck_zarr_attrs_check accepted it). */
static int next_member(const char *t, size_t len, size_t *pos, member *m)
{
    size_t i = skip_ws(t, len, *pos);

    if (i < len && t[i] == ',')
        i = skip_ws(t, len, i + 1);
    if (i >= len)
        return -1;
    if (t[i] == '}')
        return 0;
    if (t[i] != '"')
        return -1;
    m->key = t + i;
    i = skip_string(t, len, i);
    m->klen = (size_t)(t + i - m->key);
    i = skip_ws(t, len, i);
    if (i >= len || t[i] != ':')
        return -1;
    i = skip_ws(t, len, i + 1);
    m->val = t + i;
    i = skip_value(t, len, i);
    m->vlen = (size_t)(t + i - m->val);
    *pos = i;
    return m->vlen ? 1 : -1;
}

/* 1 if member m is named key, 0 if not, -1 when out of memory. */
static int key_is(const member *m, const char *key)
{
    size_t n = strlen(key);
    cJSON *j;
    int eq;

    if (!memchr(m->key, '\\', m->klen))
        return m->klen == n + 2 && memcmp(m->key + 1, key, n) == 0;
    if (!(j = cJSON_ParseWithLength(m->key, m->klen)))
        return -1;
    eq = cJSON_IsString(j) && strcmp(j->valuestring, key) == 0;
    cJSON_Delete(j);
    return eq;
}

static int word_is(const member *m, const char *w)
{
    return m->vlen == strlen(w) && memcmp(m->val, w, m->vlen) == 0;
}

/* The value of member m as Python's json module reads it: an integer
 * literal is an int, one with a fraction or exponent a float. */
static ck_code member_value(const member *m, const char *label, const char *key,
                            ck_attr *v, ck_err *err)
{
    const char *p = m->val;
    char *num, *end;
    ck_code rc = CK_OK;

    if (p[0] == '"') {
        cJSON *j = cJSON_ParseWithLength(p, m->vlen);
        size_t n;
        if (!cJSON_IsString(j)) {
            cJSON_Delete(j);
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        }
        n = strlen(j->valuestring);
        if (n >= sizeof v->str)
            rc = ck_err_set(err, CK_ENOTSUP,
                            "%s: attribute '%s': string of %zu bytes (at "
                            "most %zu)",
                            label, key, n, sizeof v->str - 1);
        else
            memcpy(v->str, j->valuestring, n + 1);
        v->kind = CK_ATTR_STR;
        cJSON_Delete(j);
        return rc;
    }
    if (word_is(m, "true") || word_is(m, "false")) {
        v->kind = CK_ATTR_I64;
        v->i64 = p[0] == 't';
        return CK_OK;
    }
    if (p[0] == '[') {
        /* a list of one number is that number, as netCDF's attributes
         * (all lists) are written: scale_factor [0.5] */
        cJSON *j = cJSON_ParseWithLength(p, m->vlen);
        const cJSON *e = cJSON_GetArraySize(j) == 1 ? j->child : NULL;
        if (cJSON_IsNumber(e)) {
            int whole = !memchr(p, '.', m->vlen) && !memchr(p, 'e', m->vlen) &&
                        !memchr(p, 'E', m->vlen) &&
                        fabs(e->valuedouble) < 9007199254740992.0;
            v->kind = whole ? CK_ATTR_I64 : CK_ATTR_F64;
            if (whole)
                v->i64 = (int64_t)e->valuedouble;
            else
                v->f64 = e->valuedouble;
            cJSON_Delete(j);
            return CK_OK;
        }
        cJSON_Delete(j);
    }
    v->kind = CK_ATTR_F64;
    if (word_is(m, "NaN")) {
        v->f64 = NAN;
        return CK_OK;
    }
    if (word_is(m, "Infinity") || word_is(m, "-Infinity")) {
        v->f64 = p[0] == '-' ? -INFINITY : INFINITY;
        return CK_OK;
    }
    if (p[0] != '-' && (p[0] < '0' || p[0] > '9'))
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: attribute '%s': %s (only strings, numbers "
                          "and true/false are read)",
                          label, key,
                          p[0] == '{'   ? "an object"
                          : p[0] == '[' ? "an array"
                                        : "null");
    if (!(num = malloc(m->vlen + 1)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    memcpy(num, p, m->vlen);
    num[m->vlen] = '\0';
    errno = 0;
    if (strpbrk(num, ".eE")) {
        v->f64 = strtod(num, &end);
    } else {
        v->kind = CK_ATTR_I64;
        v->i64 = strtoll(num, &end, 10);
        if (errno == ERANGE)
            rc = ck_err_set(err, CK_ENOTSUP,
                            "%s: attribute '%s': %s does not fit int64", label,
                            key, num);
    }
    free(num);
    return rc;
}

ck_code ck_zarr_attrs_get(const char *text, size_t len, const char *key,
                          const char *label, ck_attr *v, ck_err *err)
{
    member m, hit = {0};
    size_t pos;
    int r;

    if (members_begin(text, len, &pos) != 0)
        return ck_err_set(err, CK_EFORMAT, "%s: .zattrs is not a JSON object",
                          label);
    while ((r = next_member(text, len, &pos, &m)) == 1) {
        int k = key_is(&m, key);
        if (k < 0)
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        if (k)
            hit = m; /* the last of duplicate keys, as Python's json */
    }
    if (r < 0)
        return ck_err_set(err, CK_EFORMAT, "%s: .zattrs is not a JSON object",
                          label);
    if (!hit.key)
        return ck_err_set(err, CK_EFORMAT, "%s: no attribute '%s'", label, key);
    return member_value(&hit, label, key, v, err);
}

/* One code point of UTF-8 at *p, stepping *p past it; U+FFFD for a byte
 * that starts no valid sequence (io/store.c lets none through). */
static unsigned utf8_next(const unsigned char **p)
{
    const unsigned char *q = *p;
    unsigned c = *q++, n = 0, cp = c;

    if (c >= 0xc2 && c <= 0xdf)
        n = 1, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 2, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 3, cp = c & 0x07;
    else if (c >= 0x80)
        cp = 0xfffd;
    for (unsigned i = 0; i < n; i++, q++) {
        if ((*q & 0xc0) != 0x80) {
            *p = *p + 1;
            return 0xfffd;
        }
        cp = cp << 6 | (*q & 0x3f);
    }
    *p = q;
    return cp;
}

/* Code point cp as a JSON \\uXXXX escape at o (a surrogate pair past
 * U+FFFF); returns the end. */
static char *put_escape(char *o, unsigned cp)
{
    if (cp < 0x10000)
        return o + sprintf(o, "\\u%04x", cp);
    cp -= 0x10000;
    return o + sprintf(o, "\\u%04x\\u%04x", 0xd800 + (cp >> 10),
                       0xdc00 + (cp & 0x3ff));
}

/* s as a JSON string in ASCII (malloc'd): zarr-python 2 decodes .zattrs
 * as ASCII and fails on any other byte, so everything past U+007F is a
 * \uXXXX escape (a surrogate pair past U+FFFF), as json.dumps with
 * ensure_ascii writes it. */
static char *json_str(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    char *out = malloc(strlen(s) * 6 + 3), *o = out;

    if (!out)
        return NULL;
    *o++ = '"';
    while (*p) {
        unsigned cp = utf8_next(&p);
        const char *esc = cp == '"'    ? "\\\""
                          : cp == '\\' ? "\\\\"
                          : cp == '\b' ? "\\b"
                          : cp == '\f' ? "\\f"
                          : cp == '\n' ? "\\n"
                          : cp == '\r' ? "\\r"
                          : cp == '\t' ? "\\t"
                                       : NULL;
        if (esc) {
            memcpy(o, esc, 2);
            o += 2;
        } else if (cp >= 0x20 && cp < 0x7f) {
            *o++ = (char)cp;
        } else {
            o = put_escape(o, cp);
        }
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

char *ck_zarr_json_ascii(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    char *out = malloc(strlen(text) * 6 + 1), *o = out;

    if (!out)
        return NULL;
    while (*p)
        if (*p < 0x80)
            *o++ = (char)*p++;
        else
            o = put_escape(o, utf8_next(&p));
    *o = '\0';
    return out;
}

/* v as JSON text (malloc'd), as Python's json module writes it: strings
 * in ASCII, a float always with a '.' or an exponent, non-finite floats
 * as bare words. */
static char *value_text(const ck_attr *v)
{
    char buf[48];

    if (v->kind == CK_ATTR_STR)
        return json_str(v->str);
    if (v->kind == CK_ATTR_I64) {
        snprintf(buf, sizeof buf, "%lld", (long long)v->i64);
    } else if (isnan(v->f64)) {
        snprintf(buf, sizeof buf, "NaN");
    } else if (isinf(v->f64)) {
        snprintf(buf, sizeof buf, "%sInfinity", v->f64 < 0 ? "-" : "");
    } else {
        /* The shortest text that reads back exactly, as Python's repr. */
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, v->f64);
            if (strtod(buf, NULL) == v->f64)
                break;
        }
        if (!strpbrk(buf, ".e"))
            strcat(buf, ".0");
    }
    return strdup(buf);
}

/* The output of attrs_build: counted always, stored while it fits. */
typedef struct out_buf {
    char *buf; /* NULL: only count */
    size_t cap, used;
} out_buf;

static void emit(out_buf *o, const char *s, size_t n)
{
    if (o->buf && o->used + n <= o->cap)
        memcpy(o->buf + o->used, s, n);
    o->used += n;
}

static void emit_member(out_buf *o, int first, const char *k, size_t kn,
                        const char *v, size_t vn)
{
    if (!first)
        emit(o, ",\n", 2);
    emit(o, "    ", 4);
    emit(o, k, kn);
    emit(o, ": ", 2);
    emit(o, v, vn);
}

/* Writes the new .zattrs into o: key set to vtext in place of its old
 * value (so the order stays) or appended; vtext NULL drops the key.  -1 when
 * text is not an object, -2 when out of memory. */
static int attrs_build(const char *text, size_t len, const char *key,
                       const char *ktext, const char *vtext, out_buf *o)
{
    size_t pos = 0;
    int n = 0, placed = 0, r = 0;
    member m;

    emit(o, "{\n", 2);
    if (text && members_begin(text, len, &pos) != 0)
        return -1;
    while (text && (r = next_member(text, len, &pos, &m)) == 1) {
        int k = key_is(&m, key);
        if (k < 0)
            return -2;
        if (k && placed)
            continue; /* a later duplicate of key goes */
        if (k && vtext)
            emit_member(o, n++ == 0, ktext, strlen(ktext), vtext,
                        strlen(vtext));
        else if (!k)
            emit_member(o, n++ == 0, m.key, m.klen, m.val, m.vlen);
        placed |= k;
    }
    if (r < 0)
        return -1;
    if (!placed && vtext)
        emit_member(o, n == 0, ktext, strlen(ktext), vtext, strlen(vtext));
    emit(o, "\n}\n", 3);
    return 0;
}

ck_code ck_zarr_attrs_set(const char *text, size_t len, const char *key,
                          const ck_attr *v, const char *label, char **out,
                          ck_err *err)
{
    char *vtext = value_text(v), where[600];
    ck_code rc;

    if (!vtext)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    snprintf(where, sizeof where, "%s: .zattrs", label);
    rc = ck_zarr_json_put(text, len, key, vtext, where, out, err);
    free(vtext);
    return rc;
}

/* ---- raw members of any JSON object (zarr.json) ----------------------- */

int ck_zarr_json_get(const char *text, size_t len, const char *key,
                     const char **val, size_t *vlen)
{
    size_t pos = 0;
    member m;
    int r, found = 0;

    if (members_begin(text, len, &pos) != 0)
        return -1;
    /* The last of duplicate keys wins, as in Python's json. */
    while ((r = next_member(text, len, &pos, &m)) == 1) {
        int k = key_is(&m, key);
        if (k < 0)
            return -1;
        if (k) {
            *val = m.val;
            *vlen = m.vlen;
            found = 1;
        }
    }
    return r < 0 ? -1 : found;
}

int ck_zarr_json_members(const char *text, size_t len, size_t *pos, char *key,
                         size_t keycap, const char **val, size_t *vlen)
{
    member m;
    int r;

    if (*pos == 0 && members_begin(text, len, pos) != 0)
        return -1;
    if ((r = next_member(text, len, pos, &m)) != 1)
        return r;
    /* The key without its quotes; escapes are decoded by cJSON. */
    if (memchr(m.key, '\\', m.klen)) {
        cJSON *j = cJSON_ParseWithLength(m.key, m.klen);
        if (!j || !cJSON_IsString(j) || strlen(j->valuestring) >= keycap) {
            cJSON_Delete(j);
            return -1;
        }
        snprintf(key, keycap, "%s", j->valuestring);
        cJSON_Delete(j);
    } else {
        if (m.klen - 2 >= keycap)
            return -1;
        memcpy(key, m.key + 1, m.klen - 2);
        key[m.klen - 2] = '\0';
    }
    *val = m.val;
    *vlen = m.vlen;
    return 1;
}

ck_code ck_zarr_json_put(const char *text, size_t len, const char *key,
                         const char *vtext, const char *where, char **out,
                         ck_err *err)
{
    char *ktext = json_str(key);
    out_buf o = {NULL, 0, 0};
    ck_code rc = CK_OK;
    int r = -2;

    if (ktext && (r = attrs_build(text, len, key, ktext, vtext, &o)) == 0) {
        o.cap = o.used;
        o.used = 0;
        if (!(o.buf = malloc(o.cap + 1)) ||
            (r = attrs_build(text, len, key, ktext, vtext, &o)) != 0 ||
            o.used != o.cap)
            r = r == -1 ? -1 : -2;
    }
    if (r == -1)
        rc = ck_err_set(err, CK_EFORMAT, "%s: not a JSON object", where);
    else if (r != 0)
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    if (rc == CK_OK) {
        o.buf[o.cap] = '\0';
        *out = o.buf;
    } else {
        free(o.buf);
    }
    free(ktext);
    return rc;
}
