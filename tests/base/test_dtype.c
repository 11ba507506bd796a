#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/ck_dtype.h"

TestSuite(dtype, .description = "base/ck_dtype.h: names and conversion");

Test(dtype, sizes_and_names)
{
    cr_assert_eq(ck_dtype_size(CK_BOOL), 1);
    cr_assert_eq(ck_dtype_size(CK_U16), 2);
    cr_assert_eq(ck_dtype_size(CK_F32), 4);
    cr_assert_eq(ck_dtype_size(CK_I64), 8);
    cr_assert_str_eq(ck_dtype_name(CK_U32), "uint32");
    cr_assert_eq(ck_dtype_size(CK_DT_INVALID), 0);
}

Test(dtype, parse_names_and_aliases)
{
    ck_dtype t;
    ck_err err = {0};

    cr_assert_eq(ck_dtype_parse("float32", &t, &err), CK_OK);
    cr_assert_eq(t, CK_F32);
    cr_assert_eq(ck_dtype_parse("f8", &t, &err), CK_OK);
    cr_assert_eq(t, CK_F64);
    cr_assert_eq(ck_dtype_parse("u1", &t, &err), CK_OK);
    cr_assert_eq(t, CK_U8);
    cr_assert_eq(ck_dtype_parse("complex128", &t, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "unknown dtype 'complex128'"), "%s", err.msg);
}

Test(dtype, float_to_int_is_defined_everywhere)
{
    double src[] = {NAN, 1e300, -1e300, 3.9, -3.9, 127.0, 128.0};
    int8_t i8[7];
    uint8_t u8[7];

    ck_dtype_convert(CK_I8, i8, CK_F64, src, 7);
    cr_assert_eq(i8[0], 0);
    cr_assert_eq(i8[1], INT8_MAX);
    cr_assert_eq(i8[2], INT8_MIN);
    cr_assert_eq(i8[3], 3); /* truncation toward zero, as astype */
    cr_assert_eq(i8[4], -3);
    cr_assert_eq(i8[6], INT8_MAX);
    ck_dtype_convert(CK_U8, u8, CK_F64, src, 7);
    cr_assert_eq(u8[2], 0);
    cr_assert_eq(u8[6], 128);
}

Test(dtype, int64_extremes_to_double_and_back)
{
    int64_t v[] = {INT64_MIN, INT64_MAX, -1};
    double d[3];
    int64_t back[3];

    ck_dtype_convert(CK_F64, d, CK_I64, v, 3);
    cr_assert_eq(d[0], -9223372036854775808.0);
    ck_dtype_convert(CK_I64, back, CK_F64, d, 3);
    cr_assert_eq(back[0], INT64_MIN);
    cr_assert_eq(back[1], INT64_MAX); /* 2^63 saturates */
    cr_assert_eq(back[2], -1);
}

Test(dtype, narrowing_integers_wrap_like_numpy)
{
    int32_t v[] = {300, -1};
    uint8_t u[2];

    ck_dtype_convert(CK_U8, u, CK_I32, v, 2);
    cr_assert_eq(u[0], 44);
    cr_assert_eq(u[1], 255);
}

Test(dtype, bool_reads_any_nonzero_byte_as_true)
{
    uint8_t b[] = {0, 1, 2};
    double d[3];
    float nanf_[1] = {NAN};
    uint8_t nb;

    ck_dtype_convert(CK_F64, d, CK_BOOL, b, 3);
    cr_assert(d[0] == 0 && d[1] == 1 && d[2] == 1);
    ck_dtype_convert(CK_BOOL, &nb, CK_F32, nanf_, 1);
    cr_assert_eq(nb, 1);
}

Test(dtype, fill_writes_every_element)
{
    float f[1000];
    ck_scalar v = {.f = -2.5};

    ck_dtype_fill(CK_F32, f, v, 1000);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(f[i], -2.5f);
}

Test(dtype, scalar_convert_rounds_through_source_type)
{
    ck_scalar v = {.f = 0.1};
    ck_scalar r = ck_scalar_convert(CK_F64, CK_F32, v);

    cr_assert_eq(r.f, (double)0.1f);
    v.i = -5;
    r = ck_scalar_convert(CK_U16, CK_I32, v);
    cr_assert_eq(r.u, 65531);
}

Test(dtype, byteswap_reverses_bytes)
{
    uint32_t v = 0x01020304;

    ck_byteswap(&v, 4, 1);
    cr_assert_eq(v, 0x04030201);
}

Test(dtype, nc_fill_is_netcdfs_default)
{
    /* netcdf.h: NC_FILL_BYTE ... NC_FILL_UINT64 */
    ck_scalar v;
    float f32;

    ck_dtype_nc_fill(CK_I8, &v);
    cr_assert_eq(v.i, -127);
    ck_dtype_nc_fill(CK_I16, &v);
    cr_assert_eq(v.i, -32767);
    ck_dtype_nc_fill(CK_I32, &v);
    cr_assert_eq(v.i, -2147483647);
    ck_dtype_nc_fill(CK_I64, &v);
    cr_assert_eq(v.i, INT64_C(-9223372036854775806));
    ck_dtype_nc_fill(CK_U8, &v);
    cr_assert_eq(v.u, 255);
    ck_dtype_nc_fill(CK_U64, &v);
    cr_assert_eq(v.u, UINT64_C(18446744073709551614));
    ck_dtype_nc_fill(CK_F64, &v);
    cr_assert_eq(v.f, 9.9692099683868690e+36);
    ck_dtype_nc_fill(CK_F32, &v);
    ck_dtype_convert(CK_F32, &f32, CK_F64, &v.f, 1);
    cr_assert_eq(f32, 9.9692099683868690e+36f);
}
