/*
 * io/filter.c - the typed filters of io/filter.h, as numcodecs 0.11 defines
 * them (numcodecs/delta.py, fixedscaleoffset.py, quantize.py, bitround.py,
 * astype.py, packbits.py, categorize.py, shuffle.py).  Arithmetic follows
 * NumPy's: float data is computed in its own precision, integer data
 * wraps, conversions are ck_dtype_convert's (NumPy's astype()).
 */
#include "io/filter.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/codec.h"

#define SLACK 64 /* ck_arena_alloc aligns each block to 64 */

const char *ck_filter_name(ck_filter_id id)
{
    static const char *const names[] = {
        [CK_FILTER_NONE] = "",
        [CK_FILTER_DELTA] = "delta",
        [CK_FILTER_SHUFFLE] = "shuffle",
        [CK_FILTER_FIXEDSCALEOFFSET] = "fixedscaleoffset",
        [CK_FILTER_QUANTIZE] = "quantize",
        [CK_FILTER_BITROUND] = "bitround",
        [CK_FILTER_ASTYPE] = "astype",
        [CK_FILTER_PACKBITS] = "packbits",
        [CK_FILTER_CATEGORIZE] = "categorize",
    };
    return (unsigned)id < sizeof names / sizeof names[0] ? names[id] : "";
}

/* ---- parsing and formatting ---- */

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v;

    if (!s)
        return 0;
    v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

static int parse_num(const char *s, double *out)
{
    char *end;

    if (!s)
        return 0;
    *out = strtod(s, &end);
    return end != s && !*end && isfinite(*out);
}

static int parse_type(const char *s, ck_dtype *out)
{
    ck_err ignored;
    return s && ck_dtype_parse(s, out, &ignored) == CK_OK;
}

ck_code ck_filter_parse(const char *s, ck_filter *out, ck_err *err)
{
    char buf[128], *part[5] = {0};
    int np = 0, ok = 0;
    ck_filter f;

    memset(&f, 0, sizeof f);
    if (strlen(s) >= sizeof buf)
        goto bad;
    strcpy(buf, s);
    np = ck_codec_fields(buf, part, 5);
    if (strcmp(part[0], "delta") == 0) {
        f.id = CK_FILTER_DELTA;
        ok = np == 1 || (np == 2 && parse_type(part[1], &f.astype));
    } else if (strcmp(part[0], "shuffle") == 0) {
        f.id = CK_FILTER_SHUFFLE;
        ok = np == 1 ||
             (np == 2 && parse_int(part[1], 1, 1 << 20, &f.elementsize));
    } else if (strcmp(part[0], "fixedscaleoffset") == 0) {
        f.id = CK_FILTER_FIXEDSCALEOFFSET;
        ok = (np == 3 || np == 4) && parse_num(part[1], &f.offset) &&
             parse_num(part[2], &f.scale) && f.scale != 0 &&
             (np == 3 || parse_type(part[3], &f.astype));
    } else if (strcmp(part[0], "quantize") == 0) {
        f.id = CK_FILTER_QUANTIZE;
        ok = (np == 2 || np == 3) && parse_int(part[1], -300, 300, &f.digits) &&
             (np == 2 || parse_type(part[2], &f.astype));
    } else if (strcmp(part[0], "bitround") == 0) {
        f.id = CK_FILTER_BITROUND;
        ok = np == 2 && parse_int(part[1], 0, 64, &f.keepbits);
    } else if (strcmp(part[0], "astype") == 0) {
        f.id = CK_FILTER_ASTYPE;
        ok = np == 2 && parse_type(part[1], &f.astype);
    } else if (strcmp(part[0], "packbits") == 0) {
        f.id = CK_FILTER_PACKBITS;
        ok = np == 1;
    }
    if (!ok)
        goto bad;
    *out = f;
    return CK_OK;
bad:
    return ck_err_set(err, CK_EUSAGE,
                      "--filters '%s': expected delta[:ASTYPE], "
                      "shuffle[:ELEMENTSIZE], fixedscaleoffset:OFFSET:SCALE"
                      "[:ASTYPE], quantize:DIGITS[:ASTYPE], bitround:KEEPBITS, "
                      "astype:TYPE or packbits",
                      s);
}

ck_code ck_filter_parse_list(const char *s, ck_filter *out, int max, int *n,
                             ck_err *err)
{
    char buf[1024], *save = NULL;
    int k = 0;

    if (strcmp(s, "none") == 0 || !*s) {
        *n = 0;
        return CK_OK;
    }
    if (strlen(s) >= sizeof buf)
        return ck_err_set(err, CK_EUSAGE, "--filters: list too long");
    strcpy(buf, s);
    for (char *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (k == max)
            return ck_err_set(err, CK_EUSAGE, "--filters: at most %d filters",
                              max);
        CK_TRY(ck_filter_parse(t, &out[k], err));
        k++;
    }
    *n = k;
    return CK_OK;
}

static const char *tname(ck_dtype t)
{
    return t == CK_DT_INVALID ? "" : ck_dtype_name(t);
}

/* The fewest digits that read back as x (3.3, not 3.2999999999999998),
 * as Python prints a float. */
static const char *shortest(double x, char buf[32])
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, 32, "%.*g", p, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    return buf;
}

const char *ck_filter_str(const ck_filter *f, char *buf, size_t n)
{
    const char *id = ck_filter_name(f->id);
    int typed = f->astype != CK_DT_INVALID && f->astype != f->dtype;

    switch (f->id) {
    case CK_FILTER_DELTA:
    case CK_FILTER_ASTYPE:
        if (f->id == CK_FILTER_ASTYPE || typed)
            snprintf(buf, n, "%s:%s", id, tname(f->astype));
        else
            snprintf(buf, n, "%s", id);
        break;
    case CK_FILTER_SHUFFLE:
        if (f->elementsize)
            snprintf(buf, n, "%s:%d", id, f->elementsize);
        else
            snprintf(buf, n, "%s", id);
        break;
    case CK_FILTER_FIXEDSCALEOFFSET: {
        char o[32], sc[32];
        snprintf(buf, n, "%s:%s:%s%s%s", id, shortest(f->offset, o),
                 shortest(f->scale, sc), typed ? ":" : "",
                 typed ? tname(f->astype) : "");
        break;
    }
    case CK_FILTER_QUANTIZE:
        snprintf(buf, n, "%s:%d%s%s", id, f->digits, typed ? ":" : "",
                 typed ? tname(f->astype) : "");
        break;
    case CK_FILTER_BITROUND:
        snprintf(buf, n, "%s:%d", id, f->keepbits);
        break;
    case CK_FILTER_CATEGORIZE:
        snprintf(buf, n, "%s:%d", id, f->nlabels);
        break;
    default:
        snprintf(buf, n, "%s", id);
        break;
    }
    return buf;
}

/* ---- the chain ---- */

static int mantissa_bits(ck_dtype t)
{
    return t == CK_F32 ? 23 : t == CK_F64 ? 52 : 0;
}

static ck_code resolve(ck_filter *f, ck_dtype *cur, ck_err *err)
{
    const char *name = ck_filter_name(f->id);

    switch (f->id) {
    case CK_FILTER_DELTA:
    case CK_FILTER_FIXEDSCALEOFFSET:
    case CK_FILTER_QUANTIZE:
    case CK_FILTER_ASTYPE:
    case CK_FILTER_CATEGORIZE:
        if (f->dtype == CK_DT_INVALID)
            f->dtype = *cur;
        if (f->astype == CK_DT_INVALID)
            f->astype = f->dtype;
        if (f->id == CK_FILTER_QUANTIZE &&
            (!ck_dtype_is_float(f->dtype) || !ck_dtype_is_float(f->astype)))
            return ck_err_set(err, CK_EFORMAT,
                              "filter quantize: dtype %s, astype %s "
                              "(only float types are supported)",
                              ck_dtype_name(f->dtype),
                              ck_dtype_name(f->astype));
        if (f->id == CK_FILTER_FIXEDSCALEOFFSET &&
            (f->scale == 0 || !isfinite(f->scale) || !isfinite(f->offset)))
            return ck_err_set(err, CK_EFORMAT,
                              "filter fixedscaleoffset: scale %g, offset %g "
                              "(scale must be finite and nonzero)",
                              f->scale, f->offset);
        if (f->id == CK_FILTER_QUANTIZE &&
            (f->digits < -300 || f->digits > 300))
            return ck_err_set(err, CK_EFORMAT,
                              "filter quantize: digits %d out of range",
                              f->digits);
        if (f->id == CK_FILTER_DELTA &&
            (f->dtype == CK_BOOL || f->astype == CK_BOOL))
            return ck_err_set(err, CK_EFORMAT,
                              "filter delta: dtype %s, astype %s (booleans "
                              "have no differences: numcodecs' delta of them "
                              "loses the values)",
                              ck_dtype_name(f->dtype),
                              ck_dtype_name(f->astype));
        if (f->id == CK_FILTER_CATEGORIZE && ck_dtype_is_float(f->astype))
            return ck_err_set(err, CK_EFORMAT,
                              "filter categorize: astype %s is not an "
                              "integer type",
                              ck_dtype_name(f->astype));
        *cur = f->astype;
        return CK_OK;
    case CK_FILTER_SHUFFLE:
        if (f->elementsize < 0)
            return ck_err_set(err, CK_EFORMAT,
                              "filter shuffle: elementsize %d is negative",
                              f->elementsize);
        if (f->elementsize == 0)
            f->elementsize = (int)ck_dtype_size(*cur);
        f->dtype = f->astype = *cur;
        return CK_OK;
    case CK_FILTER_BITROUND: {
        int bits = mantissa_bits(*cur);
        if (!bits)
            return ck_err_set(err, CK_EFORMAT,
                              "filter bitround: data of type %s (only "
                              "float32 and float64 can be bit-rounded)",
                              ck_dtype_name(*cur));
        if (f->keepbits < 0 || f->keepbits > bits)
            return ck_err_set(err, CK_EFORMAT,
                              "filter bitround: keepbits %d is outside 0..%d "
                              "(the mantissa bits of %s)",
                              f->keepbits, bits, ck_dtype_name(*cur));
        f->dtype = f->astype = *cur;
        return CK_OK;
    }
    case CK_FILTER_PACKBITS:
        if (*cur != CK_BOOL)
            return ck_err_set(err, CK_EFORMAT,
                              "filter packbits: data of type %s (packbits "
                              "takes bool)",
                              ck_dtype_name(*cur));
        f->dtype = CK_BOOL;
        f->astype = CK_U8;
        *cur = CK_U8;
        return CK_OK;
    default:
        return ck_err_set(err, CK_EFORMAT, "filter %s%d is unknown", name,
                          (int)f->id);
    }
}

static size_t encoded_size(const ck_filter *f, size_t n)
{
    switch (f->id) {
    case CK_FILTER_SHUFFLE:
    case CK_FILTER_BITROUND:
        return n;
    case CK_FILTER_PACKBITS:
        return 1 + (n + 7) / 8;
    default:
        return n / ck_dtype_size(f->dtype) * ck_dtype_size(f->astype);
    }
}

ck_code ck_filter_chain_init(ck_filter_chain *ch, const ck_filter *f, int n,
                             ck_dtype dtype, size_t chunk_bytes, ck_err *err)
{
    ck_filter_chain c;
    ck_dtype cur = dtype;

    if (n < 0 || n > CK_FILTERS_MAX_CHAIN)
        return ck_err_set(err, CK_EFORMAT, "%d filters (at most %d)", n,
                          CK_FILTERS_MAX_CHAIN);
    memset(&c, 0, sizeof c);
    c.n = n;
    c.size[0] = chunk_bytes;
    for (int i = 0; i < n; i++) {
        size_t es;
        c.f[i] = f[i];
        CK_TRY(resolve(&c.f[i], &cur, err));
        es = ck_dtype_size(c.f[i].dtype);
        if (es && c.size[i] % es)
            return ck_err_set(err, CK_EFORMAT,
                              "filter %s: %zu bytes reach it, not a "
                              "multiple of its %s elements",
                              ck_filter_name(c.f[i].id), c.size[i],
                              ck_dtype_name(c.f[i].dtype));
        if (c.f[i].id == CK_FILTER_SHUFFLE && c.f[i].elementsize &&
            c.size[i] % (size_t)c.f[i].elementsize)
            return ck_err_set(err, CK_EFORMAT,
                              "filter shuffle: %zu bytes reach it, not a "
                              "multiple of its elementsize %d (numcodecs "
                              "refuses them)",
                              c.size[i], c.f[i].elementsize);
        c.size[i + 1] = encoded_size(&c.f[i], c.size[i]);
    }
    c.out_dtype = cur;
    *ch = c;
    return CK_OK;
}

size_t ck_filter_chain_scratch(const ck_filter_chain *ch)
{
    size_t big = 0;

    for (int i = 1; i <= ch->n; i++)
        big = ch->size[i] > big ? ch->size[i] : big;
    return (size_t)(ch->n < 2 ? ch->n : 2) * (big + SLACK);
}

/* ---- element access: values in a dtype's kind (see ck_scalar) ---- */

static ck_scalar load(ck_dtype t, const void *p, size_t i)
{
    const unsigned char *b = (const unsigned char *)p + i * ck_dtype_size(t);
    ck_scalar v = {0};

    switch (t) {
    case CK_BOOL:
        v.i = *b != 0;
        break;
    case CK_I8: {
        int8_t x;
        memcpy(&x, b, 1);
        v.i = x;
        break;
    }
    case CK_I16: {
        int16_t x;
        memcpy(&x, b, 2);
        v.i = x;
        break;
    }
    case CK_I32: {
        int32_t x;
        memcpy(&x, b, 4);
        v.i = x;
        break;
    }
    case CK_I64: {
        int64_t x;
        memcpy(&x, b, 8);
        v.i = x;
        break;
    }
    case CK_U8:
        v.u = *b;
        break;
    case CK_U16: {
        uint16_t x;
        memcpy(&x, b, 2);
        v.u = x;
        break;
    }
    case CK_U32: {
        uint32_t x;
        memcpy(&x, b, 4);
        v.u = x;
        break;
    }
    case CK_U64:
        memcpy(&v.u, b, 8);
        break;
    case CK_F32: {
        float x;
        memcpy(&x, b, 4);
        v.f = x;
        break;
    }
    case CK_F64:
        memcpy(&v.f, b, 8);
        break;
    default:
        break;
    }
    return v;
}

/* Stores v (in t's kind) truncating integers to t's width: two's
 * complement wrap, as NumPy's integer arithmetic does. */
static void store(ck_dtype t, void *p, size_t i, ck_scalar v)
{
    unsigned char *b = (unsigned char *)p + i * ck_dtype_size(t);
    uint64_t u = v.u; /* .i and .u share their bits */

    switch (t) {
    case CK_BOOL:
        *b = v.i != 0;
        break;
    case CK_I8:
    case CK_U8:
        *b = (unsigned char)u;
        break;
    case CK_I16:
    case CK_U16: {
        uint16_t x = (uint16_t)u;
        memcpy(b, &x, 2);
        break;
    }
    case CK_I32:
    case CK_U32: {
        uint32_t x = (uint32_t)u;
        memcpy(b, &x, 4);
        break;
    }
    case CK_I64:
    case CK_U64:
        memcpy(b, &u, 8);
        break;
    case CK_F32: {
        float x = (float)v.f;
        memcpy(b, &x, 4);
        break;
    }
    case CK_F64:
        memcpy(b, &v.f, 8);
        break;
    default:
        break;
    }
}

/* A float computed in t's precision: float32 rounds after each step. */
static double in_prec(ck_dtype t, double x)
{
    return t == CK_F32 ? (double)(float)x : x;
}

/* ---- the stages ---- */

static void delta_encode(const ck_filter *f, const void *src, void *dst,
                         size_t ne)
{
    ck_dtype d = f->dtype, a = f->astype;
    ck_scalar prev = {0};

    for (size_t i = 0; i < ne; i++) {
        ck_scalar x = load(d, src, i), v = x;
        if (i > 0) {
            if (ck_dtype_is_float(d))
                v.f = in_prec(d, x.f - prev.f);
            else
                v.u = x.u - prev.u;
        }
        prev = x;
        if (a != d) { /* wrap into d's width first, as np.diff does */
            unsigned char tmp[8];
            store(d, tmp, 0, v);
            v = ck_scalar_convert(a, d, load(d, tmp, 0));
        }
        store(a, dst, i, v);
    }
}

static void delta_decode(const ck_filter *f, const void *src, void *dst,
                         size_t ne)
{
    ck_dtype d = f->dtype, a = f->astype;
    unsigned char acc[8] = {0};

    /* np.cumsum(enc, out=dec) accumulates in dec's type. */
    for (size_t i = 0; i < ne; i++) {
        ck_scalar x = ck_scalar_convert(d, a, load(a, src, i));
        ck_scalar s = load(d, acc, 0);
        if (i == 0)
            s = x;
        else if (ck_dtype_is_float(d))
            s.f = in_prec(d, s.f + x.f);
        else
            s.u = s.u + x.u;
        store(d, acc, 0, s);
        memcpy((unsigned char *)dst + i * ck_dtype_size(d), acc,
               ck_dtype_size(d));
    }
}

/* Arithmetic happens in the data's type when it is a float (NumPy keeps
 * float32 with a Python float scalar), else in float64. */
static ck_dtype work_type(ck_dtype t)
{
    return t == CK_F32 ? CK_F32 : CK_F64;
}

static ck_scalar as_f64(ck_dtype t, ck_scalar v)
{
    return ck_dtype_is_float(t) ? v : ck_scalar_convert(CK_F64, t, v);
}

static void fso_encode(const ck_filter *f, const void *src, void *dst,
                       size_t ne)
{
    ck_dtype d = f->dtype, w = work_type(d);
    double off = in_prec(w, f->offset), sc = in_prec(w, f->scale);

    for (size_t i = 0; i < ne; i++) {
        ck_scalar v = as_f64(d, load(d, src, i));
        v.f = rint(in_prec(w, in_prec(w, v.f - off) * sc));
        store(f->astype, dst, i, ck_scalar_convert(f->astype, CK_F64, v));
    }
}

static void fso_decode(const ck_filter *f, const void *src, void *dst,
                       size_t ne)
{
    ck_dtype a = f->astype, w = work_type(a);
    double off = in_prec(w, f->offset), sc = in_prec(w, f->scale);

    for (size_t i = 0; i < ne; i++) {
        ck_scalar v = as_f64(a, load(a, src, i));
        v.f = in_prec(w, in_prec(w, v.f / sc) + off);
        store(f->dtype, dst, i, ck_scalar_convert(f->dtype, CK_F64, v));
    }
}

/* numcodecs/quantize.py: the power of two above 10^digits. */
static double quantize_scale(int digits)
{
    double precision = pow(10.0, -digits);
    double e = log(precision) / log(10.0);
    int exp = e < 0 ? (int)floor(e) : (int)ceil(e);
    double bits = ceil(log(pow(10.0, -exp)) / log(2.0));
    return pow(2.0, bits);
}

static void quantize_encode(const ck_filter *f, const void *src, void *dst,
                            size_t ne)
{
    ck_dtype d = f->dtype;
    double sc = in_prec(d, quantize_scale(f->digits));

    for (size_t i = 0; i < ne; i++) {
        ck_scalar v = load(d, src, i);
        v.f = in_prec(d, rint(in_prec(d, sc * v.f)) / sc);
        v.f = in_prec(d, v.f);
        store(f->astype, dst, i, ck_scalar_convert(f->astype, d, v));
    }
}

static void bitround_encode(const ck_filter *f, const void *src, void *dst,
                            size_t n)
{
    int bits = mantissa_bits(f->dtype), mb = bits - f->keepbits;

    if (mb == 0) {
        memcpy(dst, src, n);
        return;
    }
    if (f->dtype == CK_F32) {
        uint32_t mask = ~((UINT32_C(1) << mb) - 1);
        uint32_t half = (UINT32_C(1) << (mb - 1)) - 1;
        for (size_t i = 0; i < n / 4; i++) {
            uint32_t b;
            memcpy(&b, (const char *)src + 4 * i, 4);
            b += ((b >> mb) & 1) + half;
            b &= mask;
            memcpy((char *)dst + 4 * i, &b, 4);
        }
    } else {
        uint64_t mask = ~((UINT64_C(1) << mb) - 1);
        uint64_t half = (UINT64_C(1) << (mb - 1)) - 1;
        for (size_t i = 0; i < n / 8; i++) {
            uint64_t b;
            memcpy(&b, (const char *)src + 8 * i, 8);
            b += ((b >> mb) & 1) + half;
            b &= mask;
            memcpy((char *)dst + 8 * i, &b, 8);
        }
    }
}

/* np.packbits: the first element is the most significant bit. */
static void packbits_encode(const void *src, void *dst, size_t n)
{
    const unsigned char *s = src;
    unsigned char *d = dst;

    d[0] = (unsigned char)(n % 8 ? 8 - n % 8 : 0);
    memset(d + 1, 0, (n + 7) / 8);
    for (size_t i = 0; i < n; i++)
        if (s[i])
            d[1 + i / 8] |= (unsigned char)(0x80u >> (i % 8));
}

static ck_code packbits_decode(const void *src, size_t n, void *dst,
                               size_t want, ck_err *err)
{
    const unsigned char *s = src;
    unsigned char *d = dst;
    unsigned pad = want % 8 ? 8 - (unsigned)(want % 8) : 0;

    if (n != 1 + (want + 7) / 8 || s[0] != pad)
        return ck_err_set(err, CK_ECORRUPT,
                          "packbits data of %zu bytes (padding %u) does not "
                          "hold %zu values",
                          n, n ? s[0] : 0, want);
    for (size_t i = 0; i < want; i++)
        d[i] = (s[1 + i / 8] >> (7 - i % 8)) & 1;
    return CK_OK;
}

static void categorize_decode(const ck_filter *f, const void *src, void *dst,
                              size_t ne)
{
    for (size_t i = 0; i < ne; i++) {
        ck_scalar k = load(f->astype, src, i), v = {0};
        uint64_t idx =
            ck_dtype_is_signed(f->astype) ? (k.i < 0 ? 0 : (uint64_t)k.i) : k.u;
        if (idx >= 1 && idx <= (uint64_t)f->nlabels) {
            ck_scalar l = {.f = f->labels[idx - 1]};
            v = ck_scalar_convert(f->dtype, CK_F64, l);
        }
        store(f->dtype, dst, i, v);
    }
}

static ck_code stage_encode(const ck_filter *f, const void *src, size_t n,
                            void *dst, ck_err *err)
{
    size_t ne = ck_dtype_size(f->dtype) ? n / ck_dtype_size(f->dtype) : 0;

    switch (f->id) {
    case CK_FILTER_DELTA:
        delta_encode(f, src, dst, ne);
        return CK_OK;
    case CK_FILTER_SHUFFLE:
        ck_shuffle((size_t)f->elementsize, src, dst, n);
        return CK_OK;
    case CK_FILTER_FIXEDSCALEOFFSET:
        fso_encode(f, src, dst, ne);
        return CK_OK;
    case CK_FILTER_QUANTIZE:
        quantize_encode(f, src, dst, ne);
        return CK_OK;
    case CK_FILTER_BITROUND:
        bitround_encode(f, src, dst, n);
        return CK_OK;
    case CK_FILTER_ASTYPE:
        ck_dtype_convert(f->astype, dst, f->dtype, src, ne);
        return CK_OK;
    case CK_FILTER_PACKBITS:
        packbits_encode(src, dst, n);
        return CK_OK;
    default:
        return ck_err_set(err, CK_ENOTSUP,
                          "filter %s is read only (chunkctl does not write "
                          "it)",
                          ck_filter_name(f->id));
    }
}

static ck_code stage_decode(const ck_filter *f, const void *src, size_t n,
                            void *dst, size_t want, ck_err *err)
{
    size_t ne = ck_dtype_size(f->dtype) ? want / ck_dtype_size(f->dtype) : 0;

    switch (f->id) {
    case CK_FILTER_DELTA:
        delta_decode(f, src, dst, ne);
        return CK_OK;
    case CK_FILTER_SHUFFLE:
        ck_unshuffle((size_t)f->elementsize, src, dst, n);
        return CK_OK;
    case CK_FILTER_FIXEDSCALEOFFSET:
        fso_decode(f, src, dst, ne);
        return CK_OK;
    case CK_FILTER_QUANTIZE:
    case CK_FILTER_ASTYPE:
        ck_dtype_convert(f->dtype, dst, f->astype, src, ne);
        return CK_OK;
    case CK_FILTER_BITROUND:
        memcpy(dst, src, n);
        return CK_OK;
    case CK_FILTER_PACKBITS:
        return packbits_decode(src, n, dst, want, err);
    case CK_FILTER_CATEGORIZE:
        categorize_decode(f, src, dst, ne);
        return CK_OK;
    default:
        return ck_err_set(err, CK_ENOTSUP, "filter %d is unknown", (int)f->id);
    }
}

static ck_code no_room(ck_err *err)
{
    return ck_err_set(err, CK_ENOMEM, "scratch arena too small for filters");
}

ck_code ck_filter_chain_encode(const ck_filter_chain *ch, const void *src,
                               ck_arena *scratch, const void **out, ck_err *err)
{
    size_t big = 0;
    void *buf[2] = {NULL, NULL};
    const void *cur = src;

    for (int i = 1; i <= ch->n; i++)
        big = ch->size[i] > big ? ch->size[i] : big;
    for (int i = 0; i < ch->n; i++) {
        void *dst = buf[i & 1];
        if (!dst && !(dst = buf[i & 1] = ck_arena_alloc(scratch, big)))
            return no_room(err);
        CK_TRY(stage_encode(&ch->f[i], cur, ch->size[i], dst, err));
        cur = dst;
    }
    *out = cur;
    return CK_OK;
}

ck_code ck_filter_chain_decode(const ck_filter_chain *ch, const void *src,
                               size_t n, void *dst, ck_arena *scratch,
                               ck_err *err)
{
    size_t big = 0;
    void *buf[2] = {NULL, NULL};
    const void *cur = src;

    if (n != ch->size[ch->n])
        return ck_err_set(err, CK_ECORRUPT,
                          "%zu bytes reach the filters, expected %zu", n,
                          ch->size[ch->n]);
    for (int i = 1; i <= ch->n; i++)
        big = ch->size[i] > big ? ch->size[i] : big;
    for (int i = ch->n - 1, k = 0; i >= 0; i--, k++) {
        void *out = dst;
        if (i > 0 && !(out = buf[k & 1]) &&
            !(out = buf[k & 1] = ck_arena_alloc(scratch, big)))
            return no_room(err);
        CK_TRY(stage_decode(&ch->f[i], cur, ch->size[i + 1], out, ch->size[i],
                            err));
        cur = out;
    }
    return CK_OK;
}
