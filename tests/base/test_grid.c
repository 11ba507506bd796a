#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "base/ck_dtype.h"
#include "base/ck_grid.h"

TestSuite(grid, .description = "base/ck_grid.h: chunk grid and iterator");

Test(grid, partial_edge_chunks_are_clipped)
{
    ck_grid g;
    ck_err err = {0};
    int64_t shape[] = {10, 7}, chunk[] = {4, 3};
    ck_chunk c;

    cr_assert_eq(ck_grid_init(&g, 2, shape, chunk, 8, &err), CK_OK);
    cr_assert_eq(g.nchunks[0], 3);
    cr_assert_eq(g.nchunks[1], 3);
    cr_assert_eq(g.total_chunks, 9);
    ck_grid_chunk(&g, 8, &c);
    cr_assert_eq(c.coords[0], 2);
    cr_assert_eq(c.coords[1], 2);
    cr_assert_eq(c.start[0], 8);
    cr_assert_eq(c.shape[0], 2);
    cr_assert_eq(c.shape[1], 1);
    cr_assert_eq(ck_chunk_nelem(&g, &c), 2);
    cr_assert_eq(ck_grid_index(&g, c.coords), 8);
}

Test(grid, iterator_walks_c_order_and_ranges)
{
    ck_grid g;
    int64_t shape[] = {5, 5}, chunk[] = {2, 2};
    ck_chunk c;
    int64_t n = 0, prev = -1;

    cr_assert_eq(ck_grid_init(&g, 2, shape, chunk, 1, NULL), CK_OK);
    ck_iter it = ck_iter_all(&g);
    while (ck_iter_next(&it, &c)) {
        cr_assert_eq(c.index, prev + 1);
        prev = c.index;
        n++;
    }
    cr_assert_eq(n, 9);
    it = ck_iter_range(&g, 7, 100);
    n = 0;
    while (ck_iter_next(&it, &c))
        n++;
    cr_assert_eq(n, 2);
}

Test(grid, overflowing_shape_is_refused)
{
    ck_grid g;
    ck_err err = {0};
    int64_t shape[] = {INT64_MAX, 4}, chunk[] = {1000, 4};

    cr_assert_eq(ck_grid_init(&g, 2, shape, chunk, 8, &err), CK_EFORMAT);
    cr_assert(strstr(err.msg, "more elements"), "%s", err.msg);
}

Test(grid, zero_chunk_and_negative_shape_are_refused)
{
    ck_grid g;
    ck_err err = {0};
    int64_t shape[] = {4}, chunk[] = {0}, neg[] = {-1}, one[] = {1};

    cr_assert_eq(ck_grid_init(&g, 1, shape, chunk, 8, &err), CK_EFORMAT);
    memset(&err, 0, sizeof err);
    cr_assert_eq(ck_grid_init(&g, 1, neg, one, 8, &err), CK_EFORMAT);
}

Test(grid, empty_axis_has_no_chunks_and_scalar_has_one)
{
    ck_grid g;
    int64_t shape[] = {0, 4}, chunk[] = {2, 2};

    cr_assert_eq(ck_grid_init(&g, 2, shape, chunk, 8, NULL), CK_OK);
    cr_assert_eq(g.total_chunks, 0);
    cr_assert_eq(ck_grid_init(&g, 0, NULL, NULL, 8, NULL), CK_OK);
    cr_assert_eq(g.total_chunks, 1);
    cr_assert_eq(g.nelem, 1);
}

Test(grid, box_copy_with_steps_and_offsets)
{
    /* src 4x5 holding 0..19; take rows 1..3 step 2, cols 0..4 step 2 */
    int32_t src[20], dst[3 * 4];
    int64_t ss[] = {4, 5}, so[] = {1, 0}, step[] = {2, 2}, box[] = {2, 3};
    int64_t ds[] = {3, 4}, doff[] = {1, 1};

    for (int i = 0; i < 20; i++)
        src[i] = i;
    memset(dst, 0xff, sizeof dst);
    ck_box_copy(2, 4, dst, ds, doff, src, ss, so, step, box);
    cr_assert_eq(dst[1 * 4 + 1], 5);
    cr_assert_eq(dst[1 * 4 + 2], 7);
    cr_assert_eq(dst[1 * 4 + 3], 9);
    cr_assert_eq(dst[2 * 4 + 1], 15);
    cr_assert_eq(dst[2 * 4 + 3], 19);
    cr_assert_eq(dst[0], -1);
}

Test(grid, box_copy_of_whole_rows_merges_axes)
{
    double src[3 * 4 * 5], dst[3 * 4 * 5];
    int64_t sh[] = {3, 4, 5}, z[] = {0, 0, 0};

    for (int i = 0; i < 60; i++)
        src[i] = i * 0.5;
    ck_box_copy(3, 8, dst, sh, z, src, sh, z, NULL, sh);
    cr_assert_arr_eq(dst, src, sizeof src);
}

Test(grid, box_pad_fills_only_outside_the_box)
{
    int16_t buf[3 * 4];
    int64_t full[] = {3, 4}, box[] = {2, 3};
    int16_t v = -7;

    for (int i = 0; i < 12; i++)
        buf[i] = (int16_t)i;
    ck_box_pad(2, 2, buf, full, box, &v);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++) {
            int inside = r < 2 && c < 3;
            cr_assert_eq(buf[r * 4 + c], inside ? r * 4 + c : -7, "%d,%d", r,
                         c);
        }
}

Test(grid, box_compact_moves_the_box_to_the_front_in_place)
{
    /* a 3x4x5 edge chunk whose values are the box 2x3x4: element (i,j,k)
     * holds 100i + 10j + k, and must end up at (i*3 + j)*4 + k */
    int32_t buf[3 * 4 * 5];
    int64_t full[] = {3, 4, 5}, box[] = {2, 3, 4};

    for (int i = 0; i < 60; i++)
        buf[i] = (i / 20) * 100 + (i / 5 % 4) * 10 + i % 5;
    ck_box_compact(3, 4, buf, full, box);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                cr_assert_eq(buf[(i * 3 + j) * 4 + k], i * 100 + j * 10 + k,
                             "%d,%d,%d", i, j, k);
}

Test(grid, box_spread_moves_a_dense_box_to_its_place_in_place)
{
    /* the inverse of the above: the dense 2x3x4 box, element (i,j,k) =
     * 100i + 10j + k at (i*3 + j)*4 + k, goes to (i*4 + j)*5 + k of a
     * 3x4x5 chunk; elements outside the box are not the box's business */
    int32_t buf[3 * 4 * 5];
    int64_t full[] = {3, 4, 5}, box[] = {2, 3, 4};

    for (int i = 0; i < 60; i++)
        buf[i] = -1;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                buf[(i * 3 + j) * 4 + k] = i * 100 + j * 10 + k;
    ck_box_spread(3, 4, buf, full, box);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                cr_assert_eq(buf[(i * 4 + j) * 5 + k], i * 100 + j * 10 + k,
                             "%d,%d,%d", i, j, k);
    ck_box_compact(3, 4, buf, full, box);
    for (int i = 0; i < 24; i++)
        cr_assert_eq(buf[i], i / 12 * 100 + i / 4 % 3 * 10 + i % 4, "%d", i);
}

Test(grid, box_convert_converts_only_the_box)
{
    /* src 3x4 int16 holding 0..11; the box rows 1..2, cols 1..3 step 2
     * lands as float64 at (0, 1) of a 2x3 destination. */
    int16_t src[12];
    double dst[6] = {-1, -1, -1, -1, -1, -1};
    int64_t ss[] = {3, 4}, so[] = {1, 1}, step[] = {1, 2}, box[] = {2, 2};
    int64_t ds[] = {2, 3}, doff[] = {0, 1};

    for (int i = 0; i < 12; i++)
        src[i] = (int16_t)i;
    ck_box_convert(2, CK_F64, dst, ds, doff, CK_I16, src, ss, so, step, box);
    cr_assert_eq(dst[0], -1);
    cr_assert_eq(dst[1], 5);
    cr_assert_eq(dst[2], 7);
    cr_assert_eq(dst[4], 9);
    cr_assert_eq(dst[5], 11);
}
