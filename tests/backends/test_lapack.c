/*
 * tests/backends/test_lapack.c - the Criterion suite "lapack": the CPU
 * backend's one translation of LAPACK(E) info codes (ck_cpu_lapack_info,
 * backends/cpu/cpu.h), class by class, and the slots that go through it.
 * Internal faults assert in debug builds (NDEBUG not defined), so those
 * tests expect SIGABRT there and check code and message where it returns.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

#include "backends/cpu/cpu.h"

TestSuite(lapack, .description = "backends/cpu: LAPACK info -> ck_code");

#ifdef NDEBUG
#define INTERNAL_SIGNAL 0
#else
#define INTERNAL_SIGNAL SIGABRT
#endif

/* LAPACKE's allocation failures (lapacke.h, which tests do not include) */
#define WORK_MEMORY_ERROR (-1010)
#define TRANSPOSE_MEMORY_ERROR (-1011)

static const char internal_at[] = " (internal fault at backends/cpu/linalg.c:";

Test(lapack, zero_is_ok)
{
    ck_err err = {0};

    cr_expect_eq(ck_cpu_lapack_info(0, "dgesdd", "svd", 4, 3, &err), CK_OK);
    cr_expect_eq(err.code, CK_OK);
    cr_expect_str_eq(err.msg, "");
}

Test(lapack, work_memory_error_is_out_of_memory)
{
    ck_err err = {0};

    cr_expect_eq(
        ck_cpu_lapack_info(WORK_MEMORY_ERROR, "dgesdd", "svd", 4, 3, &err),
        CK_ENOMEM);
    cr_expect_str_eq(err.msg,
                     "svd of a 4 x 3 matrix: out of memory in LAPACK dgesdd");
}

Test(lapack, transpose_memory_error_is_out_of_memory)
{
    ck_err err = {0};

    cr_expect_eq(ck_cpu_lapack_info(TRANSPOSE_MEMORY_ERROR, "dgeqrf", "qr", 100,
                                    10, &err),
                 CK_ENOMEM);
    cr_expect_str_eq(err.msg,
                     "qr of a 100 x 10 matrix: out of memory in LAPACK dgeqrf");
}

/* An illegal argument was built by chunkctl: a bug, not a usage error. */
Test(lapack, negative_info_is_internal, .signal = INTERNAL_SIGNAL)
{
    ck_err err = {0};
    static const char head[] =
        "svd of a 4 x 3 matrix: LAPACK dgesdd rejected argument 5";

    cr_expect_eq(ck_cpu_lapack_info(-5, "dgesdd", "svd", 4, 3, &err),
                 CK_EINTERNAL);
    cr_expect_eq(err.code, CK_EINTERNAL);
    cr_expect_eq(strncmp(err.msg, head, strlen(head)), 0, "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, internal_at), "%s", err.msg);
}

Test(lapack, positive_info_did_not_converge)
{
    ck_err err = {0};

    cr_expect_eq(ck_cpu_lapack_info(2, "dgesdd", "svd", 4, 3, &err),
                 CK_ENOTSUP);
    cr_expect_str_eq(err.msg, "svd of a 4 x 3 matrix did not converge "
                              "(LAPACK dgesdd info 2)");
}

Test(lapack, positive_info_of_the_divide_and_conquer_step)
{
    ck_err err = {0};

    cr_expect_eq(ck_cpu_lapack_info(1, "dbdsdc", "svd", 1000, 1000, &err),
                 CK_ENOTSUP);
    cr_expect_str_eq(err.msg, "svd of a 1000 x 1000 matrix did not converge "
                              "(LAPACK dbdsdc info 1)");
}

Test(lapack, positive_info_not_positive_definite)
{
    ck_err err = {0};

    cr_expect_eq(ck_cpu_lapack_info(3, "dposv", "posv", 5, 5, &err),
                 CK_ENOTSUP);
    cr_expect_str_eq(err.msg, "posv of a 5 x 5 matrix is not positive "
                              "definite (LAPACK dposv info 3)");
}

/* dgeqrf documents no positive info: one would be a bug too. */
Test(lapack, undocumented_positive_info_is_internal, .signal = INTERNAL_SIGNAL)
{
    ck_err err = {0};
    static const char head[] = "qr of a 8 x 2 matrix: LAPACK dgeqrf returned "
                               "info 1, which it does not document";

    cr_expect_eq(ck_cpu_lapack_info(1, "dgeqrf", "qr", 8, 2, &err),
                 CK_EINTERNAL);
    cr_expect_eq(strncmp(err.msg, head, strlen(head)), 0, "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, internal_at), "%s", err.msg);
}

/* ---- the slots, through LAPACK ---- */

Test(lapack, svd_slot_succeeds)
{
    /* column-major 3 x 2 */
    double a[6] = {3, 0, 0, 0, 2, 0}, s[2], u[6], vt[4];
    ck_svd_args sa = {.m = 3,
                      .n = 2,
                      .a = a,
                      .lda = 3,
                      .s = s,
                      .u = u,
                      .ldu = 3,
                      .vt = vt,
                      .ldvt = 2};
    ck_err err = {0};

    cr_assert_eq(ck_backend_cpu.svd(NULL, &sa, &err), CK_OK, "%s", err.msg);
    cr_expect_float_eq(s[0], 3.0, 1e-12);
    cr_expect_float_eq(s[1], 2.0, 1e-12);
}

/* dposv's positive info is the caller's to handle, not an error. */
Test(lapack, posv_slot_reports_not_positive_definite)
{
    double a[4] = {1, 2, 2, 1}, b[2] = {1, 1};
    ck_posv_args pa = {.n = 2, .nrhs = 1, .a = a, .b = b};
    ck_err err = {0};

    cr_expect_eq(ck_backend_cpu.posv(NULL, &pa, &err), CK_OK, "%s", err.msg);
    cr_expect_eq(pa.not_pd, 2);
}

/* A leading dimension below the row count: LAPACKE rejects argument 6 of
 * dgesdd, and the slot reports a bug of ours. */
Test(lapack, svd_slot_with_a_bad_argument_is_internal,
     .signal = INTERNAL_SIGNAL)
{
    double a[6] = {1, 2, 3, 4, 5, 6}, s[2], u[6], vt[4];
    ck_svd_args sa = {.m = 3,
                      .n = 2,
                      .a = a,
                      .lda = 1,
                      .s = s,
                      .u = u,
                      .ldu = 3,
                      .vt = vt,
                      .ldvt = 2};
    ck_err err = {0};

    cr_expect_eq(ck_backend_cpu.svd(NULL, &sa, &err), CK_EINTERNAL);
    cr_expect_not_null(strstr(err.msg, "LAPACK dgesdd rejected argument 6"),
                       "%s", err.msg);
}
