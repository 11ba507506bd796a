/*
 * tests/io/test_zarr_meta3.c - zarr.json (io/zarr/meta3.c) and v3 codec
 * chains (io/zarr/chain3.c) against the Zarr v3 core spec's own examples
 * and hand-computed bytes.  Whole stores against other implementations
 * are tests/interop/test_zarr3.py's.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/codec.h"
#include "io/zarr/chain3.h"
#include "io/zarr/meta.h"

TestSuite(zarr3, .description = "Zarr v3 metadata and codec chains");

/* The spec's sharded example (zarr-specs, v3 sharding codec). */
static const char sharded[] =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10000, 1000],"
    " \"data_type\": \"float64\", \"chunk_grid\": {\"name\": \"regular\","
    " \"configuration\": {\"chunk_shape\": [1000, 100]}},"
    " \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\":"
    " {\"separator\": \"/\"}}, \"codecs\": [{\"name\": \"sharding_indexed\","
    " \"configuration\": {\"chunk_shape\": [100, 10], \"codecs\": [{\"name\":"
    " \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\":"
    " \"gzip\", \"configuration\": {\"level\": 1}}], \"index_codecs\":"
    " [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
    " {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}],"
    " \"fill_value\": \"NaN\", \"attributes\": {}, \"dimension_names\":"
    " [\"rows\", null]}";

static ck_code parse(const char *t, ck_zarr_meta *m, ck_err *err)
{
    return ck_zarr3_meta_parse(t, strlen(t), "x/zarr.json", m, err);
}

Test(zarr3, parses_the_spec_sharding_example)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(parse(sharded, &m, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(m.zarr_format, 3);
    cr_assert_eq(m.dtype, CK_F64);
    cr_assert_eq(m.ndim, 2);
    cr_assert(m.sharded);
    cr_assert_eq(m.shard[0], 1000);
    cr_assert_eq(m.shard[1], 100);
    cr_assert_eq(m.chunks[0], 100);
    cr_assert_eq(m.chunks[1], 10);
    cr_assert_eq(m.chain.codec.id, CK_CODEC_GZIP);
    cr_assert_eq(m.chain.codec.level, 1);
    cr_assert_eq(m.index.nbb, 1);
    cr_assert_eq(m.index.bb[0], CK_Z3_CRC32C);
    cr_assert_not(m.index_at_start);
    cr_assert(m.key_c);
    cr_assert_eq(m.dim_sep, '/');
    cr_assert(isnan(m.fill.f));
    cr_assert(m.has_dim_names);
    cr_assert_str_eq(m.dim_names[0], "rows");
    cr_assert_str_eq(m.dim_names[1], "");
}

Test(zarr3, format_then_parse_is_the_same_array)
{
    ck_zarr_meta m, back;
    ck_err err = {0};
    char *txt = NULL;

    cr_assert_eq(parse(sharded, &m, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_zarr3_meta_format(&m, "{\"units\": \"K\"}", &txt, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(parse(txt, &back, &err), CK_OK, "%s\n%s", err.msg, txt);
    cr_assert_not_null(strstr(txt, "\"units\""), "%s", txt);
    cr_assert_eq(memcmp(back.shape, m.shape, sizeof m.shape), 0);
    cr_assert_eq(memcmp(back.shard, m.shard, sizeof m.shard), 0);
    cr_assert_eq(memcmp(back.chunks, m.chunks, sizeof m.chunks), 0);
    cr_assert_eq(back.chain.codec.id, CK_CODEC_GZIP);
    cr_assert_eq(back.index.nbb, 1);
    cr_assert(isnan(back.fill.f));
    cr_assert_str_eq(back.dim_names[0], "rows");
    free(txt);
}

static const char *head =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4, 6], "
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
    "{\"chunk_shape\": [2, 3]}}, \"chunk_key_encoding\": {\"name\": "
    "\"v2\", \"configuration\": {\"separator\": \".\"}}, ";

/* An array of 'dtype' with fill value and codecs as given. */
static ck_code with(const char *dtype, const char *fill, const char *codecs,
                    ck_zarr_meta *m, ck_err *err)
{
    char buf[2048];

    snprintf(buf, sizeof buf,
             "%s\"data_type\": \"%s\", \"fill_value\": %s, \"codecs\": %s}",
             head, dtype, fill, codecs);
    return parse(buf, m, err);
}

static const char *bytes_le =
    "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]";

Test(zarr3, hex_and_named_fill_values)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(with("float32", "\"0x7fc00000\"", bytes_le, &m, &err), CK_OK,
                 "%s", err.msg);
    cr_assert(isnan(m.fill.f));
    cr_assert_eq(with("float64", "\"0x3ff0000000000000\"", bytes_le, &m, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(m.fill.f, 1.0);
    cr_assert_eq(with("float64", "\"-Infinity\"", bytes_le, &m, &err), CK_OK);
    cr_assert(isinf(m.fill.f) && m.fill.f < 0);
    cr_assert_eq(with("uint64", "18446744073709551615", bytes_le, &m, &err),
                 CK_OK);
    cr_assert_eq(m.fill.u, UINT64_MAX);
    cr_assert_eq(with("bool", "true", "[\"bytes\"]", &m, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_eq(m.fill.i, 1);
    cr_assert_not(m.key_c);
    cr_assert_eq(m.dim_sep, '.');
}

/* The one line each bad zarr.json gets. */
static void refused(const char *dtype, const char *fill, const char *codecs,
                    ck_code code, const char *what)
{
    ck_zarr_meta m;
    ck_err err = {0};

    cr_assert_eq(with(dtype, fill, codecs, &m, &err), code, "%s: %s", codecs,
                 err.msg);
    cr_assert_not_null(strstr(err.msg, what), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "x/zarr.json"), "%s", err.msg);
    cr_assert_null(strchr(err.msg, '\n'));
}

Test(zarr3, bad_metadata_is_refused_naming_what)
{
    refused("complex64", "0", bytes_le, CK_ENOTSUP, "'complex64'");
    refused("float16", "0", bytes_le, CK_ENOTSUP, "'float16'");
    refused("float64", "0",
            "[{\"name\": \"bytes\", \"configuration\": "
            "{\"endian\": \"little\"}}, {\"name\": \"lz5\"}]",
            CK_ENOTSUP, "unknown codec 'lz5'");
    refused("float64", "0",
            "[{\"name\": \"bytes\", \"configuration\": "
            "{\"endian\": \"little\"}}, {\"name\": \"zstd\", "
            "\"configuration\": {\"level\": 99}}]",
            CK_EFORMAT, "'level' is not an integer in -131072..22");
    refused("float64", "0",
            "[{\"name\": \"bytes\", \"configuration\": "
            "{\"endian\": \"little\"}}, {\"name\": \"gzip\", "
            "\"configuration\": {\"level\": 12}}]",
            CK_EFORMAT, "codecs[1] (gzip): 'level'");
    refused("float64", "0",
            "[{\"name\": \"bytes\", \"configuration\": "
            "{\"endian\": \"little\"}}, {\"name\": \"blosc\", "
            "\"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, "
            "\"shuffle\": \"foo\"}}]",
            CK_EFORMAT, "'shuffle'");
    refused("float64", "0",
            "[{\"name\": \"transpose\", \"configuration\": "
            "{\"order\": [0, 0]}}, {\"name\": \"bytes\", \"configuration\": "
            "{\"endian\": \"little\"}}]",
            CK_EFORMAT, "not a permutation");
    refused("float64", "0",
            "[{\"name\": \"gzip\", \"configuration\": "
            "{\"level\": 1}}]",
            CK_EFORMAT, "before bytes");
    refused("float64", "0", "[]", CK_EFORMAT, "no array-to-bytes codec");
    refused("float64", "0", "[\"bytes\"]", CK_EFORMAT, "missing 'endian'");
    refused("float64", "null", bytes_le, CK_EFORMAT, "fill_value is null");
    refused("float32", "\"0x7fc0\"", bytes_le, CK_EFORMAT, "hex digits");
}

Test(zarr3, node_type_must_be_array_or_group)
{
    const char *t = "{\"zarr_format\": 3, \"node_type\": \"bucket\"}";
    ck_err err = {0};
    int arr = -1;

    cr_assert_eq(ck_zarr3_node_kind(t, strlen(t), "s/zarr.json", &arr, &err),
                 CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, "node_type 'bucket'"), "%s", err.msg);
    t = "{\"zarr_format\": 2, \"node_type\": \"group\"}";
    cr_assert_eq(ck_zarr3_node_kind(t, strlen(t), "s/zarr.json", &arr, &err),
                 CK_EFORMAT);
}

Test(zarr3, crc32c_is_castagnoli)
{
    /* The check value of CRC-32C (RFC 3720, B.4). */
    cr_assert_eq(ck_crc32c("123456789", 9), 0xe3069283u);
    cr_assert_eq(ck_crc32c("", 0), 0u);
}

Test(zarr3, transpose_stores_axes_in_the_codec_order)
{
    /* A 2 x 3 x 4 chunk stored with order [2, 0, 1]: stored[k][i][j] =
     * chunk[i][j][k]. */
    int64_t shape[3] = {2, 3, 4};
    int perm[3] = {2, 0, 1};
    int32_t a[24], t[24], back[24];

    for (int i = 0; i < 24; i++)
        a[i] = i;
    ck_z3_transpose(3, shape, perm, 4, a, t, 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                cr_assert_eq(t[(k * 2 + i) * 3 + j], a[(i * 3 + j) * 4 + k]);
    ck_z3_transpose(3, shape, perm, 4, t, back, 1);
    cr_assert_eq(memcmp(a, back, sizeof a), 0);
}

Test(zarr3, big_endian_zstd_crc32c_round_trip_and_damage)
{
    ck_zarr_meta m;
    ck_err err = {0};
    ck_arena ar = CK_ARENA_INIT;
    int64_t shape[2] = {2, 3};
    double src[6] = {1, -2.5, 3, NAN, 1e300, -0.0}, dst[6];
    const void *enc = NULL;
    size_t n = 0;

    cr_assert_eq(
        with("float64", "0",
             "[{\"name\": \"transpose\", \"configuration\": {\"order\": "
             "[1, 0]}}, {\"name\": \"bytes\", \"configuration\": {\"endian\": "
             "\"big\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": "
             "3, \"checksum\": true}}, {\"name\": \"crc32c\"}]",
             &m, &err),
        CK_OK, "%s", err.msg);
    cr_assert_eq(ck_arena_reserve(&ar, NULL, ck_z3_scratch(&m.chain, 48) * 2,
                                  "test", &err),
                 CK_OK);
    cr_assert_eq(
        ck_z3_encode(&m.chain, 2, shape, CK_F64, src, &ar, &enc, &n, &err),
        CK_OK, "%s", err.msg);
    /* The stored bytes end in the crc32c of the zstd frame before it. */
    const unsigned char *b = enc;
    uint32_t crc = (uint32_t)b[n - 4] | (uint32_t)b[n - 3] << 8 |
                   (uint32_t)b[n - 2] << 16 | (uint32_t)b[n - 1] << 24;
    cr_assert_eq(crc, ck_crc32c(enc, n - 4));
    /* zstd with checksum: the frame header's checksum flag (bit 2). */
    cr_assert(b[4] & 4);
    cr_assert_eq(
        ck_z3_decode(&m.chain, 2, shape, CK_F64, enc, n, dst, &ar, &err), CK_OK,
        "%s", err.msg);
    cr_assert_eq(memcmp(src, dst, sizeof src), 0);

    unsigned char bad[256];
    memcpy(bad, enc, n);
    bad[n / 2] ^= 1;
    cr_assert_eq(
        ck_z3_decode(&m.chain, 2, shape, CK_F64, bad, n, dst, &ar, &err),
        CK_ECORRUPT);
    cr_assert_not_null(strstr(err.msg, "crc32c mismatch"), "%s", err.msg);
    ck_arena_release(&ar);
}
