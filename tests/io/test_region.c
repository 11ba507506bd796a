#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/cache.h"
#include "io/store.h"

TestSuite(region, .description = "io/store.h: ck_array_read_region");

static char dir[64];

/* An R x C int16 array in CR x CC chunks, element (i, j) = 5i + j
 * (wrapping), written through the store API as zarr or HDF5. */
static ck_array *grid_fixture(ck_store_kind kind, int64_t r, int64_t cl,
                              int64_t cr, int64_t cc, ck_store **s)
{
    ck_store *w;
    ck_array *a;
    ck_array_spec spec = {.name = "/x",
                          .ndim = 2,
                          .shape = {r, cl},
                          .chunks = {cr, cc},
                          .dtype = CK_I16,
                          .codec = {.id = CK_CODEC_ZSTD, .level = 1}};
    ck_arena ar = CK_ARENA_INIT;
    char path[128];
    ck_chunk c;
    int16_t *v = calloc((size_t)(cr * cc), sizeof *v);

    cr_assert_not_null(v);
    snprintf(dir, sizeof dir, "/tmp/ck-region-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.%s", dir,
             kind == CK_KIND_ZARR ? "zarr" : "h5");
    cr_assert_eq(ck_store_create(path, kind, 0, &w, NULL), CK_OK);
    cr_assert_eq(ck_array_create(w, &spec, &a, NULL), CK_OK);
    cr_assert_eq(ck_arena_reserve(&ar, NULL, 1 << 16, "t", NULL), CK_OK);
    ck_iter it = ck_iter_all(ck_array_grid(a));
    while (ck_iter_next(&it, &c)) {
        memset(v, 0, (size_t)(cr * cc) * sizeof *v);
        for (int64_t i = 0; i < c.shape[0]; i++)
            for (int64_t j = 0; j < c.shape[1]; j++)
                v[i * cc + j] =
                    (int16_t)(5 * (c.start[0] + i) + c.start[1] + j);
        ck_arena_reset(&ar);
        cr_assert_eq(ck_array_write_chunk(a, c.coords, v, &ar, NULL), CK_OK);
    }
    free(v);
    ck_arena_release(&ar);
    ck_array_close(a);
    cr_assert_eq(ck_store_commit(w, NULL), CK_OK);
    ck_store_close(w);
    cr_assert_eq(ck_store_open(path, s, NULL), CK_OK);
    cr_assert_eq(ck_array_open(*s, "/x", &a, NULL), CK_OK);
    return a;
}

/* A 7x5 array in 3x2 chunks (edge chunks on both axes). */
static ck_array *fixture(ck_store_kind kind, ck_store **s)
{
    return grid_fixture(kind, 7, 5, 3, 2, s);
}

/* Closes what fixture opened and removes its directory. */
static void done(ck_array *a, ck_store *s)
{
    char cmd[128];

    ck_array_close(a);
    ck_store_close(s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
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
    done(a, s);
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

/* A region over a row of 350 chunks (3 batches of the cache's lookups),
 * strided so that some chunks hold none of it, through a cache that holds
 * them all and one that holds fewer: every element as the formula says,
 * and a second read through the large cache finds each chunk it needs
 * there (no pin was left behind by the first). */
static void check_row_of_chunks(int slots)
{
    ck_store *s;
    ck_array *a = grid_fixture(CK_KIND_ZARR, 3, 700, 3, 2, &s);
    ck_chunk_cache *cache = NULL;
    ck_arena ar = CK_ARENA_INIT;
    int64_t start[] = {0, 1}, stop[] = {3, 700}, step[] = {1, 3};
    int64_t hits0, hits1, misses, used = 0;
    enum { N = 3 * 233 };
    double got[N];
    ck_err err = {0};

    for (int64_t j = 1; j < 700; j += 3) /* chunks holding a column */
        used += j / 2 != (j - 3) / 2 || j == 1;
    cr_assert_eq(ck_chunk_cache_new(a, slots, NULL, &cache, NULL), CK_OK);
    cr_assert_eq(ck_arena_reserve(&ar, NULL, ck_array_region_scratch_bytes(a),
                                  "t", NULL),
                 CK_OK);
    for (int pass = 0; pass < 2; pass++) {
        ck_chunk_cache_stats(cache, &hits0, &misses);
        memset(got, 0, sizeof got);
        cr_assert_eq(ck_array_read_region(a, start, stop, step, CK_F64, got,
                                          cache, &ar, &err),
                     CK_OK, "%s", err.msg);
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 233; k++)
                cr_assert_eq(got[i * 233 + k], 5 * i + 1 + 3 * k,
                             "pass %d (%d, %d): %g", pass, i, k,
                             got[i * 233 + k]);
        ck_chunk_cache_stats(cache, &hits1, &misses);
        if (pass == 1 && slots >= 350)
            cr_assert_eq(hits1 - hits0, used, "hits %lld of %lld chunks",
                         (long long)(hits1 - hits0), (long long)used);
    }
    ck_chunk_cache_free(cache);
    ck_arena_release(&ar);
    done(a, s);
}

Test(region, row_of_chunks_through_a_cache_that_holds_it)
{
    check_row_of_chunks(400);
}

Test(region, row_of_chunks_through_a_smaller_cache)
{
    check_row_of_chunks(40);
}

Test(region, region_outside_the_array_is_refused)
{
    ck_store *s;
    ck_array *a = fixture(CK_KIND_ZARR, &s);
    ck_arena ar = CK_ARENA_INIT;
    int64_t start[] = {0, 0}, stop[] = {8, 5};
    double got[64];
    ck_err err = {0};

    cr_assert_eq(ck_arena_reserve(&ar, NULL, 1 << 16, "t", NULL), CK_OK);
    cr_assert_eq(ck_array_read_region(a, start, stop, NULL, CK_F64, got, NULL,
                                      &ar, &err),
                 CK_EUSAGE);
    cr_assert(strstr(err.msg, "outside the array"), "%s", err.msg);
    ck_arena_release(&ar);
    done(a, s);
}
