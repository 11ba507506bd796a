/*
 * tests/io/test_io_errors.c - the Criterion suite "io_errors": the
 * translations of foreign errors in io/oserr.h (errno) and io/codec.h
 * (zlib, zstd and blosc return codes) into chunkctl's one-line messages.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <zlib.h>
#include <zstd_errors.h>

#include "io/codec.h"
#include "io/oserr.h"

TestSuite(io_errors, .description = "io/oserr.h and io/codec.h: foreign "
                                    "errors in chunkctl's words");

Test(io_errors, errno_reads_as_strerror_after_the_context)
{
    ck_err err = {0};

    cr_assert_eq(ck_os_fail(&err, CK_OK, ENOSPC, "%s:%s: chunk %s", "out.h5",
                            "/x", "(0, 1)"),
                 CK_EIO);
    cr_assert_eq(err.code, CK_EIO);
    cr_assert_str_eq(err.msg,
                     "out.h5:/x: chunk (0, 1): No space left on device");
}

Test(io_errors, errno_enomem_is_out_of_memory)
{
    ck_err err = {0};

    cr_assert_eq(ck_os_fail(&err, CK_OK, ENOMEM, "%s", "a.zarr"), CK_ENOMEM);
    cr_assert_str_eq(err.msg, "a.zarr: Cannot allocate memory");
}

Test(io_errors, errno_keeps_a_code_given)
{
    ck_err err = {0};

    cr_assert_eq(ck_os_fail(&err, CK_EUSAGE, EEXIST, "%s: cannot create %s",
                            "s.zarr", "x"),
                 CK_EUSAGE);
    cr_assert_str_eq(err.msg, "s.zarr: cannot create x: File exists");
}

Test(io_errors, errno_permission_denied)
{
    ck_err err = {0};

    ck_os_fail(&err, CK_OK, EACCES, "%s: cannot create %s", "d/out.h5",
               "d/.out.h5.tmp");
    cr_assert_str_eq(err.msg,
                     "d/out.h5: cannot create d/.out.h5.tmp: Permission "
                     "denied");
}

/* Every code zlib documents in zlib.h has its own words. */
Test(io_errors, zlib_table_maps_each_known_code)
{
    static const int codes[] = {Z_NEED_DICT,    Z_ERRNO,     Z_STREAM_ERROR,
                                Z_DATA_ERROR,   Z_MEM_ERROR, Z_BUF_ERROR,
                                Z_VERSION_ERROR};
    const char *seen[sizeof codes / sizeof codes[0]];

    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        seen[i] = ck_codec_why(CK_CODEC_ZLIB, codes[i]);
        cr_assert_str_neq(seen[i], "unknown zlib error", "code %d", codes[i]);
        cr_assert_str_eq(ck_codec_why(CK_CODEC_GZIP, codes[i]), seen[i]);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(seen[i], seen[j], "codes %d and %d", codes[i],
                              codes[j]);
    }
    cr_assert_str_eq(ck_codec_why(CK_CODEC_ZLIB, Z_DATA_ERROR),
                     "corrupt, or not zlib or gzip data");
    cr_assert_str_eq(ck_codec_why(CK_CODEC_ZLIB, -99), "unknown zlib error");
}

Test(io_errors, zstd_codes_read_as_zstds_own_names)
{
    long long r = -(long long)ZSTD_error_srcSize_wrong;

    cr_assert_str_eq(ck_codec_why(CK_CODEC_ZSTD, r), "Src size is incorrect");
    cr_assert_str_eq(ck_codec_why(CK_CODEC_ZSTD, 5), "unknown zstd error");
    cr_assert_eq(ck_codec_code(CK_CODEC_ZSTD,
                               -(long long)ZSTD_error_memory_allocation, 1),
                 CK_ENOMEM);
}

Test(io_errors, blosc_table_maps_each_known_code)
{
    static const int codes[] = {0, -1, -2, -5};

    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        cr_assert_str_neq(ck_codec_why(CK_CODEC_BLOSC, codes[i]),
                          "unknown blosc error", "code %d", codes[i]);
    cr_assert_str_eq(ck_codec_why(CK_CODEC_BLOSC, -77), "unknown blosc error");
}

Test(io_errors, codes_allocation_decode_and_encode)
{
    cr_assert_eq(ck_codec_code(CK_CODEC_ZLIB, Z_MEM_ERROR, 1), CK_ENOMEM);
    cr_assert_eq(ck_codec_code(CK_CODEC_ZLIB, Z_MEM_ERROR, 0), CK_ENOMEM);
    cr_assert_eq(ck_codec_code(CK_CODEC_ZLIB, Z_DATA_ERROR, 1), CK_ECORRUPT);
    cr_assert_eq(ck_codec_code(CK_CODEC_ZLIB, Z_STREAM_ERROR, 0), CK_EIO);
    cr_assert_eq(ck_codec_code(CK_CODEC_BLOSC, -1, 1), CK_ECORRUPT);
    cr_assert_eq(ck_codec_code(CK_CODEC_BLOSC, 0, 0), CK_EIO);
}

/* The table is what a decode failure says, end to end. */
Test(io_errors, decode_failures_carry_the_translation)
{
    static const unsigned char junk[64] = {0x78, 0x9c, 0xff, 0xff, 0xff};
    unsigned char out[256];
    ck_err err = {0};

    cr_assert_eq(ck_codec_decode(CK_CODEC_ZLIB, junk, sizeof junk, out,
                                 sizeof out, &err),
                 CK_ECORRUPT);
    cr_assert(strncmp(err.msg, "zlib data does not decode (", 27) == 0, "%s",
              err.msg);
    memset(&err, 0, sizeof err);
    cr_assert_eq(ck_codec_decode(CK_CODEC_ZLIB, junk, 2, out, sizeof out, &err),
                 CK_ECORRUPT);
    cr_assert_str_eq(err.msg, "zlib data does not decode (truncated)");
}
