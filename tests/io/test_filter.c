#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "io/codec.h"
#include "io/filter.h"

TestSuite(filter, .description = "io/filter.h: typed chunk filters");

static ck_filter_chain chain_of(const char *list, ck_dtype t, size_t bytes)
{
    ck_filter f[CK_FILTERS_MAX];
    ck_filter_chain ch;
    ck_err err = {0};
    int n = 0;

    cr_assert_eq(ck_filter_parse_list(list, f, CK_FILTERS_MAX, &n, &err), CK_OK,
                 "%s", err.msg);
    cr_assert_eq(ck_filter_chain_init(&ch, f, n, t, bytes, &err), CK_OK, "%s",
                 err.msg);
    return ch;
}

static void round_trip(const ck_filter_chain *ch, const void *src, void *dst)
{
    ck_arena a = CK_ARENA_INIT;
    const void *enc = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_arena_reserve(&a, NULL,
                                  ck_filter_chain_scratch(ch) * 2 +
                                      ch->size[ch->n] + 256,
                                  "test", &err),
                 CK_OK);
    cr_assert_eq(ck_filter_chain_encode(ch, src, &a, &enc, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_eq(
        ck_filter_chain_decode(ch, enc, ch->size[ch->n], dst, &a, &err), CK_OK,
        "%s", err.msg);
    ck_arena_release(&a);
}

Test(filter, sizes_follow_the_types)
{
    ck_filter_chain ch = chain_of("delta:int16,shuffle", CK_I64, 80);

    cr_assert_eq(ch.n, 2);
    cr_assert_eq(ch.size[1], 20);
    cr_assert_eq(ch.size[2], 20);
    cr_assert_eq(ch.f[1].elementsize, 2, "shuffle takes the int16 size");
    cr_assert_eq(ch.out_dtype, CK_I16);
    ch = chain_of("packbits", CK_BOOL, 13);
    cr_assert_eq(ch.size[1], 3, "one pad byte, then 13 bits in 2 bytes");
}

Test(filter, delta_round_trips_and_wraps)
{
    int32_t src[6] = {5, 7, INT32_MAX, INT32_MIN, -1, 0}, dst[6];
    ck_filter_chain ch = chain_of("delta", CK_I32, sizeof src);

    round_trip(&ch, src, dst);
    cr_assert_arr_eq(dst, src, sizeof src);
}

Test(filter, packbits_is_numpy_bit_order)
{
    unsigned char src[10] = {1, 0, 0, 0, 0, 0, 0, 1, 1, 1}, dst[10];
    ck_filter_chain ch = chain_of("packbits", CK_BOOL, sizeof src);
    ck_arena a = CK_ARENA_INIT;
    const unsigned char *enc = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_arena_reserve(&a, NULL, 4096, "test", &err), CK_OK);
    cr_assert_eq(
        ck_filter_chain_encode(&ch, src, &a, (const void **)&enc, &err), CK_OK);
    cr_assert_eq(enc[0], 6);
    cr_assert_eq(enc[1], 0x81);
    cr_assert_eq(enc[2], 0xc0);
    ck_arena_release(&a);
    round_trip(&ch, src, dst);
    cr_assert_arr_eq(dst, src, sizeof src);
}

Test(filter, bitround_keeps_the_top_bits)
{
    float src[3] = {1.0f, 3.14159265f, -1e-3f}, dst[3];
    ck_filter_chain ch = chain_of("bitround:23", CK_F32, sizeof src);

    round_trip(&ch, src, dst);
    cr_assert_arr_eq(dst, src, sizeof src, "all bits kept: identity");
    ch = chain_of("bitround:2", CK_F32, sizeof src);
    round_trip(&ch, src, dst);
    cr_assert_float_eq(dst[1], 3.0f, 0, "pi to 2 mantissa bits is 3");
}

Test(filter, configs_out_of_range)
{
    ck_filter f;
    ck_filter_chain ch;
    ck_err err = {0};

    cr_assert_eq(ck_filter_parse("bitround:30", &f, &err), CK_OK);
    cr_assert_eq(ck_filter_chain_init(&ch, &f, 1, CK_F32, 16, &err),
                 CK_EFORMAT);
    cr_assert_str_eq(err.msg, "filter bitround: keepbits 30 is outside 0..23 "
                              "(the mantissa bits of float32)");
    cr_assert_eq(ck_filter_parse("quantize:2", &f, &err), CK_OK);
    cr_assert_eq(ck_filter_chain_init(&ch, &f, 1, CK_I32, 16, &err),
                 CK_EFORMAT);
    cr_assert_eq(ck_filter_parse("packbits", &f, &err), CK_OK);
    cr_assert_eq(ck_filter_chain_init(&ch, &f, 1, CK_U8, 16, &err), CK_EFORMAT);
    cr_assert_eq(ck_filter_parse("wavelet", &f, &err), CK_EUSAGE);
}

Test(filter, packbits_header_is_checked)
{
    unsigned char enc[3] = {5, 0xff, 0xff}, dst[10];
    ck_filter_chain ch = chain_of("packbits", CK_BOOL, sizeof dst);
    ck_arena a = CK_ARENA_INIT;
    ck_err err = {0};

    cr_assert_eq(ck_arena_reserve(&a, NULL, 4096, "test", &err), CK_OK);
    cr_assert_eq(ck_filter_chain_decode(&ch, enc, 3, dst, &a, &err),
                 CK_ECORRUPT);
    cr_assert_eq(ck_filter_chain_decode(&ch, enc, 2, dst, &a, &err),
                 CK_ECORRUPT);
    ck_arena_release(&a);
}

Test(filter, fold_shuffle_into_gzip)
{
    ck_codec_spec c;
    ck_err err = {0};

    cr_assert_eq(ck_codec_parse("gzip:4", &c, &err), CK_OK);
    c.nfilters = 1;
    cr_assert_eq(ck_filter_parse("shuffle", &c.filters[0], &err), CK_OK);
    ck_codec_fold_shuffle(&c, CK_F64);
    cr_assert_eq(c.nfilters, 0);
    cr_assert_eq(c.shuffle, CK_SHUF_BYTE);
    c.shuffle = CK_SHUF_NONE;
    c.nfilters = 1;
    cr_assert_eq(ck_filter_parse("shuffle:2", &c.filters[0], &err), CK_OK);
    ck_codec_fold_shuffle(&c, CK_F64);
    cr_assert_eq(c.nfilters, 1, "another element size stays a filter");
}
