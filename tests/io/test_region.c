#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/cache.h"
#include "io/store.h"

TestSuite(region, .description = "io/store.h: ck_array_read_region");

static char dir[64];

/* A 7x5 int16 array in 3x2 chunks (edge chunks on both axes), element
 * (i, j) = 5i + j, written through the store API as zarr or HDF5. */
static ck_array *fixture(ck_store_kind kind, ck_store **s)
{
    ck_store *w;
    ck_array *a;
    ck_array_spec spec = {.name = "/x",
                          .ndim = 2,
                          .shape = {7, 5},
                          .chunks = {3, 2},
                          .dtype = CK_I16,
                          .codec = {.id = CK_CODEC_ZSTD, .level = 1}};
    ck_arena ar = CK_ARENA_INIT;
    char path[128];
    ck_chunk c;

    snprintf(dir, sizeof dir, "/tmp/ck-region-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.%s", dir,
             kind == CK_KIND_ZARR ? "zarr" : "h5");
    cr_assert_eq(ck_store_create(path, kind, 0, &w, NULL), CK_OK);
    cr_assert_eq(ck_array_create(w, &spec, &a, NULL), CK_OK);
    cr_assert_eq(ck_arena_reserve(&ar, NULL, 1 << 16, "t", NULL), CK_OK);
    ck_iter it = ck_iter_all(ck_array_grid(a));
    while (ck_iter_next(&it, &c)) {
        int16_t v[6] = {0};
        for (int i = 0; i < c.shape[0]; i++)
            for (int j = 0; j < c.shape[1]; j++)
                v[i * 2 + j] = (int16_t)(5 * (c.start[0] + i) + c.start[1] + j);
        ck_arena_reset(&ar);
        cr_assert_eq(ck_array_write_chunk(a, c.coords, v, &ar, NULL), CK_OK);
    }
    ck_arena_release(&ar);
    ck_array_close(a);
    cr_assert_eq(ck_store_commit(w, NULL), CK_OK);
    ck_store_close(w);
    cr_assert_eq(ck_store_open(path, s, NULL), CK_OK);
    cr_assert_eq(ck_array_open(*s, "/x", &a, NULL), CK_OK);
    return a;
}

static void check_strided(ck_store_kind kind, int cached)
{
    ck_store *s;
    ck_array *a = fixture(kind, &s);
    ck_chunk_cache *cache = NULL;
    ck_arena ar = CK_ARENA_INIT;
    int64_t start[] = {1, 0}, stop[] = {7, 5}, step[] = {2, 3};
    double got[3 * 2];
    ck_err err = {0};
    char cmd[128];

    if (cached)
        cr_assert_eq(ck_chunk_cache_new(a, 3, NULL, &cache, NULL), CK_OK);
    cr_assert_eq(ck_arena_reserve(&ar, NULL, ck_array_region_scratch_bytes(a),
                                  "t", NULL),
                 CK_OK);
    cr_assert_eq(ck_array_read_region(a, start, stop, step, CK_F64, got, cache,
                                      &ar, &err),
                 CK_OK, "%s", err.msg);
    /* rows 1, 3, 5; columns 0, 3 */
    double want[] = {5, 8, 15, 18, 25, 28};
    for (int k = 0; k < 6; k++)
        cr_assert_eq(got[k], want[k], "element %d: %g", k, got[k]);
    ck_chunk_cache_free(cache);
    ck_arena_release(&ar);
    ck_array_close(a);
    ck_store_close(s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(region, strided_read_converts_zarr)
{
    check_strided(CK_KIND_ZARR, 0);
}

Test(region, strided_read_converts_hdf5)
{
    check_strided(CK_KIND_HDF5, 0);
}

Test(region, strided_read_through_the_cache)
{
    check_strided(CK_KIND_ZARR, 1);
}

Test(region, region_outside_the_array_is_refused)
{
    ck_store *s;
    ck_array *a = fixture(CK_KIND_ZARR, &s);
    ck_arena ar = CK_ARENA_INIT;
    int64_t start[] = {0, 0}, stop[] = {8, 5};
    double got[64];
    ck_err err = {0};
    char cmd[128];

    cr_assert_eq(ck_arena_reserve(&ar, NULL, 1 << 16, "t", NULL), CK_OK);
    cr_assert_eq(ck_array_read_region(a, start, stop, NULL, CK_F64, got, NULL,
                                      &ar, &err),
                 CK_EUSAGE);
    cr_assert(strstr(err.msg, "outside the array"), "%s", err.msg);
    ck_arena_release(&ar);
    ck_array_close(a);
    ck_store_close(s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
