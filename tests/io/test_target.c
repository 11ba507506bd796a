#include <criterion/criterion.h>
#include <string.h>

#include "io/store.h"

TestSuite(target, .description = "io/store.h: PATH[:DATASET] and kinds");

Test(target, splits_path_and_dataset)
{
    char p[256], d[256];

    cr_assert_eq(ck_target_split("data.h5:/group/x", p, 256, d, 256, NULL),
                 CK_OK);
    cr_assert_str_eq(p, "data.h5");
    cr_assert_str_eq(d, "/group/x");
    cr_assert_eq(ck_target_split("s.zarr", p, 256, d, 256, NULL), CK_OK);
    cr_assert_str_eq(p, "s.zarr");
    cr_assert_str_eq(d, "");
    cr_assert_eq(ck_target_split("s.zarr:g/x/", p, 256, d, 256, NULL), CK_OK);
    cr_assert_str_eq(d, "/g/x");
}

Test(target, empty_path_and_long_names_are_usage_errors)
{
    char p[16], d[16];
    ck_err err = {0};

    cr_assert_eq(ck_target_split(":/x", p, 16, d, 16, &err), CK_EUSAGE);
    memset(&err, 0, sizeof err);
    cr_assert_eq(
        ck_target_split("a-very-long-file-name.h5", p, 16, d, 16, &err),
        CK_EUSAGE);
}

Test(target, each_buffer_bounds_its_own_part)
{
    char p[256], d[8];
    ck_err err = {0};

    /* a dataset name longer than its buffer, the path's being larger:
     * refused, not written past d */
    cr_assert_eq(
        ck_target_split("a.h5:/abcdefgh", p, sizeof p, d, sizeof d, &err),
        CK_EUSAGE);
    cr_assert_eq(ck_target_split("a.h5:/abcd", p, sizeof p, d, sizeof d, NULL),
                 CK_OK);
    cr_assert_str_eq(d, "/abcd");
}

Test(target, kind_from_name_for_new_outputs)
{
    cr_assert_eq(ck_store_kind_guess("/nonexistent/out.zarr"), CK_KIND_ZARR);
    cr_assert_eq(ck_store_kind_guess("/nonexistent/out.zarr/"), CK_KIND_ZARR);
    cr_assert_eq(ck_store_kind_guess("/nonexistent/out.H5"), CK_KIND_HDF5);
    cr_assert_eq(ck_store_kind_guess("/nonexistent/out.txt"), CK_KIND_NONE);
}
