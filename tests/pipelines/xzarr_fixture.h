/*
 * tests/pipelines/xzarr_fixture.h - x.zarr, a 4 x 6 float64 Zarr array with
 * chunks of 2 x 3 and no chunk files (every value the fill, 1.5), in a
 * fresh temporary folder made the current one: the fixture of the suites
 * whose plans read metadata alone (test_optab.c, test_plan.c).
 */
#ifndef CK_TEST_XZARR_FIXTURE_H
#define CK_TEST_XZARR_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* tmpdir: a mkdtemp template ("/tmp/ck-NAME-XXXXXX"), filled in. */
static inline void xzarr_setup(char *tmpdir)
{
    FILE *f;

    cr_assert_not_null(mkdtemp(tmpdir));
    cr_assert_eq(chdir(tmpdir), 0);
    cr_assert_eq(mkdir("x.zarr", 0755), 0);
    f = fopen("x.zarr/.zarray", "w");
    cr_assert_not_null(f);
    fputs("{\"zarr_format\":2,\"shape\":[4,6],\"chunks\":[2,3],"
          "\"dtype\":\"<f8\",\"compressor\":null,\"fill_value\":1.5,"
          "\"order\":\"C\",\"filters\":null}",
          f);
    fclose(f);
}

static inline void xzarr_teardown(const char *tmpdir)
{
    unlink("x.zarr/.zarray");
    rmdir("x.zarr");
    cr_assert_eq(chdir("/"), 0);
    rmdir(tmpdir);
}

#endif
