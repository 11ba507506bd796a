/*
 * tests/io/test_zarr_meta.c - the Criterion suite "zarr_meta": parsing and
 * writing .zarray text (io/zarr/meta.h).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/zarr/meta.h"

TestSuite(zarr_meta, .description = "io/zarr/meta.h: parsing .zarray");

#define WHERE "x.zarr/.zarray"

/* A valid .zarray with one key's value replaced (or the key dropped when
 * value is NULL). */
static char *zarray_with(const char *key, const char *value)
{
    static const char *const keys[] = {
        "zarr_format", "shape",      "chunks", "dtype",
        "compressor",  "fill_value", "order",  "filters"};
    static const char *const vals[] = {"2",    "[4, 6]", "[2, 3]", "\"<f8\"",
                                       "null", "0",      "\"C\"",  "null"};
    char *buf = malloc(4096);
    size_t used = 0;
    int found = 0;

    used += (size_t)snprintf(buf + used, 4096 - used, "{");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = vals[i];
        if (key && strcmp(key, keys[i]) == 0) {
            found = 1;
            if (!value)
                continue;
            v = value;
        }
        used += (size_t)snprintf(buf + used, 4096 - used, "%s\"%s\": %s",
                                 used > 1 ? ", " : "", keys[i], v);
    }
    if (key && !found && value)
        used += (size_t)snprintf(buf + used, 4096 - used, ", \"%s\": %s", key,
                                 value);
    snprintf(buf + used, 4096 - used, "}");
    return buf;
}

static ck_code parse_with(const char *key, const char *value, ck_zarr_meta *m,
                          ck_err *err)
{
    char *t = zarray_with(key, value);
    ck_code rc = ck_zarr_meta_parse(t, strlen(t), WHERE, m, err);

    free(t);
    return rc;
}

Test(zarr_meta, nan_fill_value_is_a_string)
{
    static const char zarray[] =
        "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"<f8\","
        "\"compressor\":null,\"fill_value\":\"NaN\",\"order\":\"C\","
        "\"filters\":null}";
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(ck_zarr_meta_parse(zarray, strlen(zarray), WHERE, &m, &err),
                 CK_OK, "%s", err.msg);
    cr_assert(m.has_fill);
    cr_assert(isnan(m.fill.f));
    cr_assert_eq(m.ndim, 1);
    cr_assert_eq(m.shape[0], 4);
    cr_assert_eq(m.chunks[0], 2);
    cr_assert_eq(m.dtype, CK_F64);
    cr_assert_eq(m.codec.id, CK_CODEC_NONE);
    cr_assert_eq(m.order, 'C');
    cr_assert_eq(m.dim_sep, '.', "absent dimension_separator is '.'");
}

Test(zarr_meta, zarr_python_output_parses)
{
    /* As zarr-python 2.13 writes it (indent 4, sorted keys). */
    static const char zarray[] = "{\n"
                                 "    \"chunks\": [\n"
                                 "        100,\n"
                                 "        100\n"
                                 "    ],\n"
                                 "    \"compressor\": {\n"
                                 "        \"blocksize\": 0,\n"
                                 "        \"clevel\": 5,\n"
                                 "        \"cname\": \"lz4\",\n"
                                 "        \"id\": \"blosc\",\n"
                                 "        \"shuffle\": 1\n"
                                 "    },\n"
                                 "    \"dimension_separator\": \"/\",\n"
                                 "    \"dtype\": \">i4\",\n"
                                 "    \"fill_value\": -7,\n"
                                 "    \"filters\": null,\n"
                                 "    \"order\": \"F\",\n"
                                 "    \"shape\": [\n"
                                 "        1000,\n"
                                 "        250\n"
                                 "    ],\n"
                                 "    \"zarr_format\": 2\n"
                                 "}\n";
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(ck_zarr_meta_parse(zarray, strlen(zarray), WHERE, &m, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(m.ndim, 2);
    cr_assert_eq(m.shape[1], 250);
    cr_assert_eq(m.chunks[0], 100);
    cr_assert_eq(m.dtype, CK_I32);
    cr_assert(m.big_endian);
    cr_assert_eq(m.order, 'F');
    cr_assert_eq(m.dim_sep, '/');
    cr_assert_eq(m.fill.i, -7);
    cr_assert_eq(m.codec.id, CK_CODEC_BLOSC);
    cr_assert_str_eq(m.codec.cname, "lz4");
    cr_assert_eq(m.codec.level, 5);
    cr_assert_eq(m.codec.shuffle, CK_SHUF_BYTE);
}

/* ---- dtypes ---- */

struct dt_case {
    char s[8];
    ck_dtype t;
    int big;
};

ParameterizedTestParameters(zarr_meta, dtypes)
{
    static struct dt_case c[] = {
        {"|b1", CK_BOOL, 0}, {"|i1", CK_I8, 0},  {"|u1", CK_U8, 0},
        {"<i1", CK_I8, 0},   {">u1", CK_U8, 0},  {"<b1", CK_BOOL, 0},
        {"<i2", CK_I16, 0},  {">i2", CK_I16, 1}, {"<i4", CK_I32, 0},
        {">i4", CK_I32, 1},  {"<i8", CK_I64, 0}, {">i8", CK_I64, 1},
        {"<u2", CK_U16, 0},  {">u2", CK_U16, 1}, {"<u4", CK_U32, 0},
        {">u4", CK_U32, 1},  {"<u8", CK_U64, 0}, {">u8", CK_U64, 1},
        {"<f4", CK_F32, 0},  {">f4", CK_F32, 1}, {"<f8", CK_F64, 0},
        {">f8", CK_F64, 1},
    };
    return cr_make_param_array(struct dt_case, c, sizeof c / sizeof c[0]);
}

ParameterizedTest(struct dt_case *c, zarr_meta, dtypes)
{
    char v[16];
    ck_zarr_meta m;
    ck_err err = {0};

    snprintf(v, sizeof v, "\"%s\"", c->s);
    cr_assert_eq(parse_with("dtype", v, &m, &err), CK_OK, "%s: %s", c->s,
                 err.msg);
    cr_assert_eq(m.dtype, c->t, "%s", c->s);
    cr_assert_eq(m.big_endian, c->big, "%s", c->s);
}

struct bad_dt {
    char json[48];
    char msg[96];
};

ParameterizedTestParameters(zarr_meta, unsupported_dtypes)
{
    static struct bad_dt c[] = {
        {"\"<f2\"", WHERE ": dtype '<f2' is not supported"},
        {"\"<c16\"", WHERE ": dtype '<c16' is not supported"},
        {"\"|S10\"", WHERE ": dtype '|S10' is a string type (chunkctl reads "
                           "numeric and bool arrays only)"},
        {"\"|i4\"", WHERE ": dtype '|i4' is not supported"},
        {"\"<M8[ns]\"", WHERE ": dtype '<M8[ns]' is not supported"},
        {"[[\"a\", \"<i4\"]]", WHERE ": dtype [[\"a\",\"<i4\"]] is not "
                                     "supported"},
    };
    return cr_make_param_array(struct bad_dt, c, sizeof c / sizeof c[0]);
}

ParameterizedTest(struct bad_dt *c, zarr_meta, unsupported_dtypes)
{
    ck_zarr_meta m;
    ck_err err = {0};

    /* a type chunkctl does not hold, not a broken file: a whole-store
     * copy skips such arrays with a warning */
    cr_assert_eq(parse_with("dtype", c->json, &m, &err), CK_ENOTSUP);
    cr_assert_str_eq(err.msg, c->msg);
}

Test(zarr_meta, a_dtype_that_is_no_numpy_type_is_a_format_error)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(parse_with("dtype", "\"float64\"", &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": dtype 'float64' is not supported");
}

Test(zarr_meta, dtype_strings_are_written_as_numpy_spells_them)
{
    char b[4];

    cr_assert_str_eq(ck_zarr_dtype_str(CK_F64, 0, b), "<f8");
    cr_assert_str_eq(ck_zarr_dtype_str(CK_F32, 1, b), ">f4");
    cr_assert_str_eq(ck_zarr_dtype_str(CK_BOOL, 1, b), "|b1");
    cr_assert_str_eq(ck_zarr_dtype_str(CK_I8, 0, b), "|i1");
    cr_assert_str_eq(ck_zarr_dtype_str(CK_U8, 0, b), "|u1");
    cr_assert_str_eq(ck_zarr_dtype_str(CK_U64, 0, b), "<u8");
    cr_assert_str_eq(ck_zarr_dtype_str(CK_DT_INVALID, 0, b), "");
}

/* ---- fill values ---- */

Test(zarr_meta, float_fill_strings)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(parse_with("fill_value", "\"Infinity\"", &m, &err), CK_OK);
    cr_assert(isinf(m.fill.f) && m.fill.f > 0);
    cr_assert_eq(parse_with("fill_value", "\"-Infinity\"", &m, &err), CK_OK);
    cr_assert(isinf(m.fill.f) && m.fill.f < 0);
    cr_assert_eq(parse_with("fill_value", "-2.5e-3", &m, &err), CK_OK);
    cr_assert_eq(m.fill.f, -2.5e-3);
    cr_assert_eq(parse_with("fill_value", "\"nan\"", &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": fill_value 'nan' is not a number");
}

Test(zarr_meta, null_fill_means_no_fill)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(parse_with("fill_value", "null", &m, &err), CK_OK);
    cr_assert_eq(m.has_fill, 0);
}

Test(zarr_meta, bool_fill)
{
    char *t = zarray_with("dtype", "\"|b1\"");
    char *p = strstr(t, "\"fill_value\": 0");
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_not_null(p);
    memcpy(p, "\"fill_value\": 1", 15); /* numbers count as bool too */
    cr_assert_eq(ck_zarr_meta_parse(t, strlen(t), WHERE, &m, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_eq(m.fill.i, 1);
    free(t);

    static const char tr[] =
        "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"|b1\","
        "\"compressor\":null,\"fill_value\":true,\"order\":\"C\","
        "\"filters\":null}";
    cr_assert_eq(ck_zarr_meta_parse(tr, strlen(tr), WHERE, &m, &err), CK_OK,
                 "%s", err.msg);
    cr_assert(m.has_fill);
    cr_assert_eq(m.fill.i, 1);
}

struct int_fill {
    char dtype[8];
    char json[32];
    int64_t i;
    uint64_t u;
};

ParameterizedTestParameters(zarr_meta, integer_fills_are_exact)
{
    static struct int_fill c[] = {
        {"\"<i8\"", "9223372036854775807", INT64_MAX, 0},
        {"\"<i8\"", "-9223372036854775808", INT64_MIN, 0},
        {"\"<i8\"", "9007199254740993", 9007199254740993LL, 0},
        {"\"<i8\"", "-9007199254740993", -9007199254740993LL, 0},
        {"\"<u8\"", "18446744073709551615", 0, UINT64_MAX},
        {"\"<u8\"", "18446744073709551613", 0, UINT64_MAX - 2},
        {"\"|i1\"", "-128", -128, 0},
        {"\"|u1\"", "255", 0, 255},
        {"\"<i4\"", "1e3", 1000, 0}, /* integral, written with exponent */
        {"\"<u2\"", "-0", 0, 0},
    };
    return cr_make_param_array(struct int_fill, c, sizeof c / sizeof c[0]);
}

ParameterizedTest(struct int_fill *c, zarr_meta, integer_fills_are_exact)
{
    char *t = zarray_with("dtype", c->dtype);
    char *p = strstr(t, "\"fill_value\": 0");
    char buf[4096];
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_not_null(p);
    snprintf(buf, sizeof buf, "%.*s\"fill_value\": %s%s", (int)(p - t), t,
             c->json, p + 15);
    free(t);
    cr_assert_eq(ck_zarr_meta_parse(buf, strlen(buf), WHERE, &m, &err), CK_OK,
                 "%s: %s", c->json, err.msg);
    if (ck_dtype_is_signed(m.dtype))
        cr_assert_eq(m.fill.i, c->i, "%s: got %lld", c->json,
                     (long long)m.fill.i);
    else
        cr_assert_eq(m.fill.u, c->u, "%s: got %llu", c->json,
                     (unsigned long long)m.fill.u);
}

Test(zarr_meta, integer_fill_errors)
{
    char *t = zarray_with("dtype", "\"|u1\"");
    char *p = strstr(t, "\"fill_value\": 0");
    char buf[4096];
    ck_zarr_meta m;
    ck_err err = {0};

    snprintf(buf, sizeof buf, "%.*s\"fill_value\": 256%s", (int)(p - t), t,
             p + 15);
    cr_assert_eq(ck_zarr_meta_parse(buf, strlen(buf), WHERE, &m, &err),
                 CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": fill_value 256 does not fit dtype "
                                    "uint8");

    err = (ck_err){0};
    snprintf(buf, sizeof buf, "%.*s\"fill_value\": 1.5%s", (int)(p - t), t,
             p + 15);
    cr_assert_eq(ck_zarr_meta_parse(buf, strlen(buf), WHERE, &m, &err),
                 CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": fill_value 1.5 is not an exact "
                                    "integer");

    err = (ck_err){0};
    snprintf(buf, sizeof buf, "%.*s\"fill_value\": \"NaN\"%s", (int)(p - t), t,
             p + 15);
    cr_assert_eq(ck_zarr_meta_parse(buf, strlen(buf), WHERE, &m, &err),
                 CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": fill_value is not an integer for "
                                    "dtype uint8");
    free(t);
}

Test(zarr_meta, fill_value_key_inside_a_nested_object_is_not_used)
{
    /* The exact-integer scan must find the top-level key only. */
    static const char t[] =
        "{\"compressor\":{\"id\":\"zstd\",\"fill_value\":5},"
        "\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<i8\","
        "\"fill_value\":9223372036854775806,\"order\":\"C\","
        "\"filters\":null}";
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(ck_zarr_meta_parse(t, strlen(t), WHERE, &m, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_eq(m.fill.i, INT64_MAX - 1);
}

/* ---- compressors and filters ---- */

Test(zarr_meta, compressors_map_to_codec_specs)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(
        parse_with("compressor", "{\"id\":\"zstd\",\"level\":7}", &m, &err),
        CK_OK, "%s", err.msg);
    cr_assert_eq(m.codec.id, CK_CODEC_ZSTD);
    cr_assert_eq(m.codec.level, 7);
    cr_assert_eq(
        parse_with("compressor", "{\"id\":\"zlib\",\"level\":4}", &m, &err),
        CK_OK);
    cr_assert_eq(m.codec.id, CK_CODEC_ZLIB);
    cr_assert_eq(m.codec.level, 4);
    cr_assert_eq(
        parse_with("compressor", "{\"id\":\"gzip\",\"level\":9}", &m, &err),
        CK_OK);
    cr_assert_eq(m.codec.id, CK_CODEC_GZIP);
    cr_assert_eq(m.codec.level, 9);
    cr_assert_eq(parse_with("compressor",
                            "{\"id\":\"blosc\",\"cname\":\"zstd\","
                            "\"clevel\":3,\"shuffle\":2,\"blocksize\":0}",
                            &m, &err),
                 CK_OK);
    cr_assert_eq(m.codec.id, CK_CODEC_BLOSC);
    cr_assert_str_eq(m.codec.cname, "zstd");
    cr_assert_eq(m.codec.level, 3);
    cr_assert_eq(m.codec.shuffle, CK_SHUF_BIT);
    cr_assert_eq(parse_with("compressor",
                            "{\"id\":\"blosc\",\"cname\":\"snappy\","
                            "\"clevel\":1,\"shuffle\":0}",
                            &m, &err),
                 CK_OK);
    cr_assert_eq(m.codec.shuffle, CK_SHUF_NONE);
}

Test(zarr_meta, blosc_autoshuffle_depends_on_item_size)
{
    static const char fmt[] =
        "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"%s\","
        "\"compressor\":{\"id\":\"blosc\",\"cname\":\"lz4\",\"clevel\":5,"
        "\"shuffle\":-1},\"fill_value\":0,\"order\":\"C\",\"filters\":[]}";
    char t[512];
    ck_zarr_meta m;
    ck_err err = {0};

    snprintf(t, sizeof t, fmt, "|u1");
    cr_assert_eq(ck_zarr_meta_parse(t, strlen(t), WHERE, &m, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_eq(m.codec.shuffle, CK_SHUF_BIT);
    snprintf(t, sizeof t, fmt, "<f4");
    cr_assert_eq(ck_zarr_meta_parse(t, strlen(t), WHERE, &m, &err), CK_OK);
    cr_assert_eq(m.codec.shuffle, CK_SHUF_BYTE);
}

Test(zarr_meta, unknown_compressor_is_not_supported)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(
        parse_with("compressor", "{\"id\":\"zfpy\",\"mode\":1}", &m, &err),
        CK_ENOTSUP);
    cr_assert_str_eq(err.msg, WHERE ": compressor 'zfpy' is not supported "
                                    "(chunkctl reads blosc, zstd, zlib, gzip, "
                                    "lz4, lzma and bz2)");
    err = (ck_err){0};
    cr_assert_eq(parse_with("compressor",
                            "{\"id\":\"blosc\",\"cname\":\"brotli\"}", &m,
                            &err),
                 CK_ENOTSUP);
    cr_assert_str_eq(err.msg, WHERE ": blosc cname 'brotli' is not supported");
    err = (ck_err){0};
    cr_assert_eq(parse_with("compressor", "{\"level\":1}", &m, &err),
                 CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": compressor has no string 'id'");
    err = (ck_err){0};
    cr_assert_eq(parse_with("compressor", "\"zstd\"", &m, &err), CK_EFORMAT);
}

Test(zarr_meta, filters_parse_and_unknown_ones_are_refused)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(parse_with("filters", "[]", &m, &err), CK_OK);
    cr_assert_eq(parse_with("filters", NULL, &m, &err), CK_OK,
                 "absent filters are tolerated");
    cr_assert_eq(parse_with("filters",
                            "[{\"id\":\"delta\",\"dtype\":\"<f8\"},"
                            "{\"id\":\"quantize\",\"digits\":3,"
                            "\"dtype\":\"<f8\"}]",
                            &m, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(m.codec.nfilters, 2);
    cr_assert_eq(m.codec.filters[0].id, CK_FILTER_DELTA);
    cr_assert_eq(m.codec.filters[1].id, CK_FILTER_QUANTIZE);
    cr_assert_eq(m.codec.filters[1].digits, 3);
    err = (ck_err){0};
    cr_assert_eq(parse_with("filters", "[{\"id\":\"crc32\"}]", &m, &err),
                 CK_ENOTSUP);
    cr_assert_not_null(strstr(err.msg, WHERE ": filter 'crc32' is not "
                                             "supported"),
                       "%s", err.msg);
    err = (ck_err){0};
    cr_assert_eq(parse_with("filters",
                            "[{\"id\":\"bitround\","
                            "\"keepbits\":60}]",
                            &m, &err),
                 CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, "keepbits 60 is outside 0..52"), "%s",
                       err.msg);
    err = (ck_err){0};
    cr_assert_eq(parse_with("filters", "{}", &m, &err), CK_EFORMAT);
}

/* ---- required keys, shapes, layout ---- */

ParameterizedTestParameters(zarr_meta, missing_keys_are_named)
{
    static char keys[][16] = {"zarr_format", "shape",      "chunks", "dtype",
                              "compressor",  "fill_value", "order"};
    return cr_make_param_array(char[16], keys, sizeof keys / sizeof keys[0]);
}

ParameterizedTest(char (*key)[16], zarr_meta, missing_keys_are_named)
{
    char want[128];
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(parse_with(*key, NULL, &m, &err), CK_EFORMAT, "%s", *key);
    snprintf(want, sizeof want, WHERE ": missing key '%s'", *key);
    cr_assert_str_eq(err.msg, want);
}

Test(zarr_meta, zarr_format_must_be_2)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(parse_with("zarr_format", "3", &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": zarr_format is not 2 (only zarr v2 is "
                                    "supported)");
}

Test(zarr_meta, bad_shapes)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(parse_with("shape", "[4]", &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": 'chunks' has 2 dimensions, 'shape' "
                                    "has 1");
    err = (ck_err){0};
    cr_assert_eq(parse_with("shape", "[4, -1]", &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": 'shape'[1] is not an integer >= 0 "
                                    "(below 2^53)");
    err = (ck_err){0};
    cr_assert_eq(parse_with("chunks", "[2, 0]", &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": 'chunks'[1] is not an integer >= 1 "
                                    "(below 2^53)");
    err = (ck_err){0};
    cr_assert_eq(parse_with("chunks", "[2, 2.5]", &m, &err), CK_EFORMAT);
    err = (ck_err){0};
    cr_assert_eq(parse_with("chunks", "[2, \"3\"]", &m, &err), CK_EFORMAT);
    err = (ck_err){0};
    cr_assert_eq(parse_with("shape", "{\"a\": 1}", &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": 'shape' is not a list");
    err = (ck_err){0};
    cr_assert_eq(parse_with("shape", "[1e300, 1]", &m, &err), CK_EFORMAT);
}

Test(zarr_meta, too_many_dimensions)
{
    char shape[512] = "[", chunks[512] = "[";
    ck_zarr_meta m;
    ck_err err = {0};
    char *t, *p;

    for (int d = 0; d <= CK_MAX_DIMS; d++) {
        strcat(shape, d ? ",1" : "1");
        strcat(chunks, d ? ",1" : "1");
    }
    strcat(shape, "]");
    strcat(chunks, "]");
    t = zarray_with("shape", shape);
    p = strstr(t, "[2, 3]");
    cr_assert_not_null(p);
    char buf[8192];
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(p - t), t, chunks, p + 6);
    free(t);
    cr_assert_eq(ck_zarr_meta_parse(buf, strlen(buf), WHERE, &m, &err),
                 CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": 'shape' has more than 32 dimensions");
}

Test(zarr_meta, zero_dimensional)
{
    static const char t[] =
        "{\"zarr_format\":2,\"shape\":[],\"chunks\":[],\"dtype\":\"<i2\","
        "\"compressor\":null,\"fill_value\":null,\"order\":\"C\","
        "\"filters\":null}";
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(ck_zarr_meta_parse(t, strlen(t), WHERE, &m, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_eq(m.ndim, 0);
}

Test(zarr_meta, order_and_separator)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(parse_with("order", "\"F\"", &m, &err), CK_OK);
    cr_assert_eq(m.order, 'F');
    cr_assert_eq(parse_with("order", "\"K\"", &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": order is not \"C\" or \"F\"");
    err = (ck_err){0};
    cr_assert_eq(parse_with("dimension_separator", "\"/\"", &m, &err), CK_OK);
    cr_assert_eq(m.dim_sep, '/');
    cr_assert_eq(parse_with("dimension_separator", "\".\"", &m, &err), CK_OK);
    cr_assert_eq(m.dim_sep, '.');
    cr_assert_eq(parse_with("dimension_separator", "null", &m, &err), CK_OK);
    cr_assert_eq(m.dim_sep, '.');
    cr_assert_eq(parse_with("dimension_separator", "\"_\"", &m, &err),
                 CK_EFORMAT);
    cr_assert_str_eq(err.msg,
                     WHERE ": dimension_separator is not \".\" or \"/\"");
}

/* ---- invalid JSON ---- */

Test(zarr_meta, invalid_json_names_line_and_column)
{
    static const char t[] = "{\n  \"zarr_format\": 2,\n  \"shape\": [4,],\n}";
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(ck_zarr_meta_parse(t, strlen(t), WHERE, &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": invalid JSON near line 3 column 15");
}

Test(zarr_meta, trailing_text_is_invalid)
{
    char *t = zarray_with(NULL, NULL);
    char buf[4096];
    ck_zarr_meta m;
    ck_err err = {0};

    snprintf(buf, sizeof buf, "%s \n", t);
    cr_assert_eq(ck_zarr_meta_parse(buf, strlen(buf), WHERE, &m, &err), CK_OK,
                 "trailing white space is fine: %s", err.msg);
    snprintf(buf, sizeof buf, "%s x", t);
    cr_assert_eq(ck_zarr_meta_parse(buf, strlen(buf), WHERE, &m, &err),
                 CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, "invalid JSON near line 1"), "%s",
                       err.msg);
    free(t);
}

Test(zarr_meta, nul_byte_is_invalid)
{
    char *t = zarray_with(NULL, NULL);
    size_t n = strlen(t);
    ck_zarr_meta m;
    ck_err err = {0};

    t[n - 1] = '\0'; /* the closing brace */
    cr_assert_eq(ck_zarr_meta_parse(t, n, WHERE, &m, &err), CK_EFORMAT);
    free(t);
}

Test(zarr_meta, not_an_object)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(ck_zarr_meta_parse("[2]", 3, WHERE, &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": not a JSON object");
    err = (ck_err){0};
    cr_assert_eq(ck_zarr_meta_parse("", 0, WHERE, &m, &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, WHERE ": invalid JSON near line 1 column 1");
}

Test(zarr_meta, out_untouched_on_error)
{
    ck_zarr_meta m;
    ck_err err = {0};

    memset(&m, 0x5a, sizeof m);
    cr_assert_eq(parse_with("order", "\"K\"", &m, &err), CK_EFORMAT);
    cr_assert_eq(m.ndim, 0x5a5a5a5a);
}

/* ---- writing ---- */

static ck_zarr_meta sample(ck_dtype t)
{
    ck_zarr_meta m;

    memset(&m, 0, sizeof m);
    m.ndim = 2;
    m.shape[0] = 1000;
    m.shape[1] = 7;
    m.chunks[0] = 128;
    m.chunks[1] = 7;
    m.dtype = t;
    m.order = 'C';
    m.dim_sep = '.';
    m.has_fill = 1;
    return m;
}

static void round_trip(const ck_zarr_meta *m, ck_zarr_meta *back)
{
    char *txt = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_zarr_meta_format(m, &txt, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_zarr_meta_parse(txt, strlen(txt), WHERE, back, &err), CK_OK,
                 "%s\n%s", err.msg, txt);
    free(txt);
    cr_assert_eq(back->ndim, m->ndim);
    for (int d = 0; d < m->ndim; d++) {
        cr_assert_eq(back->shape[d], m->shape[d]);
        cr_assert_eq(back->chunks[d], m->chunks[d]);
    }
    cr_assert_eq(back->dtype, m->dtype);
    cr_assert_eq(back->big_endian, m->big_endian);
    cr_assert_eq(back->order, m->order);
    cr_assert_eq(back->dim_sep, m->dim_sep);
    cr_assert_eq(back->has_fill, m->has_fill);
    cr_assert_eq(back->codec.id, m->codec.id);
    cr_assert_eq(back->codec.level, m->codec.level);
    cr_assert_eq(back->codec.shuffle, m->codec.shuffle);
}

Test(zarr_meta, format_round_trips_fills)
{
    ck_zarr_meta m, b;

    m = sample(CK_I64);
    m.fill.i = INT64_MIN;
    round_trip(&m, &b);
    cr_assert_eq(b.fill.i, INT64_MIN);
    m.fill.i = INT64_MAX;
    round_trip(&m, &b);
    cr_assert_eq(b.fill.i, INT64_MAX);
    m = sample(CK_U64);
    m.fill.u = UINT64_MAX;
    round_trip(&m, &b);
    cr_assert_eq(b.fill.u, UINT64_MAX);
    m = sample(CK_F64);
    m.fill.f = NAN;
    round_trip(&m, &b);
    cr_assert(isnan(b.fill.f));
    m.fill.f = -INFINITY;
    round_trip(&m, &b);
    cr_assert(isinf(b.fill.f) && b.fill.f < 0);
    m.fill.f = 0.1;
    round_trip(&m, &b);
    cr_assert_eq(b.fill.f, 0.1);
    m.fill.f = 1.0 / 3.0;
    round_trip(&m, &b);
    cr_assert_eq(b.fill.f, 1.0 / 3.0, "doubles are printed exactly");
    m = sample(CK_BOOL);
    m.fill.i = 1;
    round_trip(&m, &b);
    cr_assert_eq(b.fill.i, 1);
    m = sample(CK_F32);
    m.has_fill = 0;
    round_trip(&m, &b);
    cr_assert_eq(b.has_fill, 0);
}

Test(zarr_meta, format_round_trips_codecs_and_layout)
{
    ck_zarr_meta m = sample(CK_U16), b;

    m.codec.id = CK_CODEC_BLOSC;
    m.codec.level = 9;
    m.codec.shuffle = CK_SHUF_BIT;
    snprintf(m.codec.cname, sizeof m.codec.cname, "zstd");
    m.big_endian = 1;
    m.order = 'F';
    m.dim_sep = '/';
    round_trip(&m, &b);
    cr_assert_str_eq(b.codec.cname, "zstd");
    m.codec = (ck_codec_spec){.id = CK_CODEC_GZIP, .level = 6};
    round_trip(&m, &b);
    m.codec = (ck_codec_spec){.id = CK_CODEC_ZLIB, .level = 1};
    round_trip(&m, &b);
    m.codec = (ck_codec_spec){.id = CK_CODEC_ZSTD, .level = -5};
    round_trip(&m, &b);
    m.ndim = 0;
    round_trip(&m, &b);
}

Test(zarr_meta, format_writes_what_zarr_python_expects)
{
    ck_zarr_meta m = sample(CK_F64);
    char *txt = NULL;
    ck_err err = {0};

    m.fill.f = NAN;
    m.codec.id = CK_CODEC_BLOSC;
    m.codec.level = 5;
    m.codec.shuffle = CK_SHUF_BYTE;
    snprintf(m.codec.cname, sizeof m.codec.cname, "lz4");
    cr_assert_eq(ck_zarr_meta_format(&m, &txt, &err), CK_OK, "%s", err.msg);
    cr_assert_not_null(strstr(txt, "\"zarr_format\":\t2"), "%s", txt);
    cr_assert_not_null(strstr(txt, "\"dtype\":\t\"<f8\""), "%s", txt);
    cr_assert_not_null(strstr(txt, "\"fill_value\":\t\"NaN\""), "%s", txt);
    cr_assert_not_null(strstr(txt, "\"filters\":\tnull"), "%s", txt);
    cr_assert_not_null(strstr(txt, "\"blocksize\":\t0"), "%s", txt);
    cr_assert_not_null(strstr(txt, "\"cname\":\t\"lz4\""), "%s", txt);
    cr_assert_not_null(strstr(txt, "\"dimension_separator\":\t\".\""), "%s",
                       txt);
    free(txt);
}

Test(zarr_meta, shuffle_without_blosc_is_a_shuffle_filter)
{
    ck_zarr_meta m = sample(CK_F32);
    char *txt = NULL;
    ck_err err = {0};

    m.codec = (ck_codec_spec){
        .id = CK_CODEC_ZSTD, .level = 3, .shuffle = CK_SHUF_BYTE};
    cr_assert_eq(ck_zarr_meta_format(&m, &txt, &err), CK_OK, "%s", err.msg);
    cr_assert_not_null(strstr(txt, "\"elementsize\":\t4"), "%s", txt);
    cr_assert_not_null(strstr(txt, "\"id\":\t\"shuffle\""), "%s", txt);
    free(txt);
}

/* ---- .zattrs and .zgroup ---- */

Test(zarr_meta, attrs_must_be_an_object)
{
    ck_err err = {0};

    cr_assert_eq(ck_zarr_attrs_check("{\"a\": [1, 2]}", 13, "a/.zattrs", &err),
                 CK_OK);
    cr_assert_eq(ck_zarr_attrs_check("[1]", 3, "a/.zattrs", &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, "a/.zattrs: not a JSON object");
    err = (ck_err){0};
    /* Python's json takes NaN (zarr-python writes it), not nan */
    cr_assert_eq(ck_zarr_attrs_check("{\n\"a\": NaN}", 11, "a/.zattrs", &err),
                 CK_OK);
    cr_assert_eq(ck_zarr_attrs_check("{\n\"a\": nan}", 11, "a/.zattrs", &err),
                 CK_EFORMAT);
    cr_assert_str_eq(err.msg, "a/.zattrs: invalid JSON near line 2 column 6");
}

Test(zarr_meta, zgroup_needs_zarr_format_2)
{
    ck_err err = {0};

    cr_assert_eq(
        ck_zarr_zgroup_check("{\"zarr_format\": 2}", 18, "g/.zgroup", &err),
        CK_OK);
    cr_assert_eq(
        ck_zarr_zgroup_check("{\"zarr_format\": 3}", 18, "g/.zgroup", &err),
        CK_EFORMAT);
    cr_assert_str_eq(err.msg, "g/.zgroup: zarr_format is not 2 (only zarr v2 "
                              "is supported)");
    err = (ck_err){0};
    cr_assert_eq(ck_zarr_zgroup_check("{}", 2, "g/.zgroup", &err), CK_EFORMAT);
    cr_assert_str_eq(err.msg, "g/.zgroup: missing key 'zarr_format'");
}
