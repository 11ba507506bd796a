#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "io/codec.h"

TestSuite(codec, .description = "io/codec.h: compressors and shuffle");

/* Criterion runs each test in a new process: parameters must be values,
 * not pointers into the parent's memory. */
typedef struct spec_param {
    char s[32];
} spec_param;

static spec_param specs[] = {
    {"none"},
    {"zstd:1"},
    {"zstd:19"},
    {"gzip:4"},
    {"zlib:9"},
    {"blosc"},
    {"blosc:zstd:3:bitshuffle"},
    {"blosc:blosclz:1:noshuffle"},
    {"blosc:lz4hc:9:shuffle"},
    {"blosc:zlib:5"},
    {"lz4"},
    {"lz4:9"},
    {"lzma"},
    {"lzma:1"},
    {"bz2:9"},
};

ParameterizedTestParameters(codec, round_trip)
{
    return cr_make_param_array(spec_param, specs,
                               sizeof specs / sizeof specs[0]);
}

ParameterizedTest(spec_param *spec, codec, round_trip)
{
    ck_codec_spec c;
    ck_err err = {0};
    size_t n = 100003, enc_n = 0; /* odd: exercises shuffle tails */
    double *src = malloc(n);
    char *enc, *dec = malloc(n);

    cr_assert_eq(ck_codec_parse(spec->s, &c, &err), CK_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)src)[i] = (unsigned char)((i * 7) % 13);
    enc = malloc(ck_codec_bound(&c, n));
    cr_assert_eq(ck_codec_encode(&c, 8, src, n, enc, ck_codec_bound(&c, n),
                                 &enc_n, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(ck_codec_decode(c.id, enc, enc_n, dec, n, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_arr_eq(dec, src, n);
    free(src);
    free(enc);
    free(dec);
}

Test(codec, parse_and_format_agree)
{
    ck_codec_spec c;
    char buf[64];

    cr_assert_eq(ck_codec_parse("blosc", &c, NULL), CK_OK);
    cr_assert_str_eq(ck_codec_str(&c, buf, sizeof buf), "blosc:lz4:5:shuffle");
    cr_assert_eq(ck_codec_parse("gzip:4:shuffle", &c, NULL), CK_OK);
    cr_assert_str_eq(ck_codec_str(&c, buf, sizeof buf), "gzip:4:shuffle");
    cr_assert_eq(ck_codec_parse("zstd", &c, NULL), CK_OK);
    cr_assert_eq(c.level, 3);
    /* the usage says each "may add :shuffle": also without a level */
    cr_assert_eq(ck_codec_parse("zstd:shuffle", &c, NULL), CK_OK);
    cr_assert_str_eq(ck_codec_str(&c, buf, sizeof buf), "zstd:3:shuffle");
    cr_assert_eq(ck_codec_parse("gzip:shuffle", &c, NULL), CK_OK);
    cr_assert_str_eq(ck_codec_str(&c, buf, sizeof buf), "gzip:4:shuffle");
}

Test(codec, bad_specs_are_usage_errors)
{
    const char *bad[] = {"lz5",
                         "zstd:99",
                         "gzip:10",
                         "blosc:snappy",
                         "blosc:lz4:5:twice",
                         "none:1",
                         "zstd:3:bitshuffle",
                         "zstd:shuffle:3",
                         "gzip:4:shuffle:shuffle"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_codec_spec c;
        ck_err err = {0};
        cr_assert_eq(ck_codec_parse(bad[i], &c, &err), CK_EUSAGE, "%s", bad[i]);
        cr_assert(strstr(err.msg, bad[i]), "%s", err.msg);
    }
}

Test(codec, garbage_and_wrong_sizes_are_corrupt)
{
    char junk[64], out[1000];
    ck_err err = {0};
    ck_codec_id ids[] = {CK_CODEC_ZSTD, CK_CODEC_ZLIB, CK_CODEC_GZIP,
                         CK_CODEC_BLOSC, CK_CODEC_NONE};
    /* Each message names what is wrong, not only that something is. */
    const char *cause[] = {"not a zstd frame", "zlib data does not decode",
                           "zlib data does not decode", "blosc frame",
                           "64 bytes, expected 1000"};

    memset(junk, 0x5a, sizeof junk);
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        memset(&err, 0, sizeof err);
        cr_assert_eq(
            ck_codec_decode(ids[i], junk, sizeof junk, out, sizeof out, &err),
            CK_ECORRUPT, "codec %d", (int)ids[i]);
        cr_assert(strstr(err.msg, cause[i]), "codec %d: '%s' lacks '%s'",
                  (int)ids[i], err.msg, cause[i]);
    }
}

Test(codec, decode_refuses_a_frame_of_another_size)
{
    ck_codec_spec c = {.id = CK_CODEC_ZSTD, .level = 3};
    char src[500] = {0}, enc[1000], out[400];
    size_t n;
    ck_err err = {0};

    cr_assert_eq(
        ck_codec_encode(&c, 1, src, sizeof src, enc, sizeof enc, &n, &err),
        CK_OK);
    cr_assert_eq(ck_codec_decode(CK_CODEC_ZSTD, enc, n, out, sizeof out, &err),
                 CK_ECORRUPT);
    cr_assert(strstr(err.msg, "expected 400"), "%s", err.msg);
}

Test(codec, shuffle_matches_hdf5_layout)
{
    unsigned char src[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, sh[9], back[9];
    unsigned char want[9] = {1, 3, 5, 7, 2, 4, 6, 8, 9};

    ck_shuffle(2, src, sh, 9);
    cr_assert_arr_eq(sh, want, 9);
    ck_unshuffle(2, sh, back, 9);
    cr_assert_arr_eq(back, src, 9);
}

Test(codec, lz4_size_header_must_match)
{
    ck_codec_spec c;
    ck_err err = {0};
    char src[1000], enc[1200], dec[1000];
    size_t n = 0;

    memset(src, 7, sizeof src);
    cr_assert_eq(ck_codec_parse("lz4", &c, &err), CK_OK);
    cr_assert_eq(
        ck_codec_encode(&c, 1, src, sizeof src, enc, sizeof enc, &n, &err),
        CK_OK, "%s", err.msg);
    cr_assert_eq((unsigned char)enc[0] + 256 * (unsigned char)enc[1], 1000,
                 "numcodecs framing: a little-endian size first");
    enc[3] = 0x40;
    cr_assert_eq(ck_codec_decode(CK_CODEC_LZ4, enc, n, dec, sizeof dec, &err),
                 CK_ECORRUPT);
    cr_assert_str_eq(err.msg,
                     "lz4 size header says 1073742824 bytes, expected 1000");
}

Test(codec, bz2_and_lzma_of_another_size_are_corrupt)
{
    const char *specs2[] = {"bz2", "lzma"};
    char src[500], enc[2000], dec[600];

    memset(src, 3, sizeof src);
    for (size_t i = 0; i < 2; i++) {
        ck_codec_spec c;
        ck_err err = {0};
        size_t n = 0;
        cr_assert_eq(ck_codec_parse(specs2[i], &c, &err), CK_OK);
        cr_assert_eq(
            ck_codec_encode(&c, 1, src, sizeof src, enc, sizeof enc, &n, &err),
            CK_OK, "%s", err.msg);
        cr_assert_eq(ck_codec_decode(c.id, enc, n, dec, 400, &err), CK_ECORRUPT,
                     "%s", specs2[i]);
        err = (ck_err){0};
        cr_assert_eq(ck_codec_decode(c.id, enc, n, dec, 600, &err), CK_ECORRUPT,
                     "%s", specs2[i]);
        cr_assert_not_null(strstr(err.msg, "expected 600"), "%s", err.msg);
    }
}

Test(codec, crc32c_update_continues_a_crc)
{
    /* The check value of CRC-32C (RFC 3720, B.4), in pieces. */
    uint32_t c = ck_crc32c_update(0, "1234", 4);
    cr_assert_eq(ck_crc32c_update(c, "56789", 5), 0xe3069283u);
    cr_assert_eq(ck_crc32c_update(ck_crc32c("123456789", 9), "", 0),
                 0xe3069283u);
}
