/*
 * tests/pipelines/test_devla.c - the planning of device linear algebra
 * (pipelines/devla.h): for svd, matmul, glm_fit and glm_predict, which
 * mode each device budget allows, that a plan fits the budget it was made
 * for, that blocks are whole chunks, how often the input crosses to the
 * device, and the message when a step cannot fit.  Budgets are swept from
 * too small to everything resident, so the properties hold at every size,
 * not only at the figures written here.
 */
#include "tests/pipelines/fuse_fixture.h"

#include "pipelines/devla.h"

static void setup(void)
{
    snprintf(fx_dir, sizeof fx_dir, "/tmp/ck-devla-XXXXXX");
    cr_assert_not_null(mkdtemp(fx_dir));
    /* the SVD 10000 x 1000; a wide one; a float32 pair for
     * matmul; X and y for a GLM */
    fx_array("a", "<f8", "[10000, 1000]", "[1000, 1000]");
    fx_array("w", "<f8", "[300, 5000]", "[300, 500]");
    fx_array("f", "<f4", "[10000, 3000]", "[1000, 1000]");
    fx_array("g", "<f4", "[3000, 2000]", "[1000, 1000]");
    fx_array("X", "<f8", "[100000, 20]", "[4096, 20]");
    fx_array("y", "<f8", "[100000]", "[4096]");
}

TestSuite(devla, .init = setup, .fini = fx_teardown);

static ck_plan *plan(const char *steps, const char *outputs)
{
    char doc[4096];
    ck_plan *p = NULL;
    ck_err err = {0};

    snprintf(doc, sizeof doc,
             "{\"inputs\": {\"a\": \"%s/a.zarr\", \"w\": \"%s/w.zarr\", "
             "\"f\": \"%s/f.zarr\", \"g\": \"%s/g.zarr\", \"X\": "
             "\"%s/X.zarr\", \"y\": \"%s/y.zarr\"}, \"steps\": %s, "
             "\"outputs\": %s}",
             fx_dir, fx_dir, fx_dir, fx_dir, fx_dir, fx_dir, steps, outputs);
    cr_assert_eq(ck_plan_parse("p.json", doc, 0, 0, &p, &err), CK_OK, "%s",
                 err.msg);
    return p;
}

/* Budgets from 1 MiB to 4 GiB, a factor 1.25 apart. */
#define EACH_BUDGET(b)                                                         \
    for (int64_t b = 1 << 20; b <= (int64_t)4 << 30; b += b / 4)

/* What holds for every step at every budget: a plan that fits is within
 * the budget, the least need is the least of the modes, streamed blocks
 * are whole chunks (unit rows) no larger than CK_DEVLA_BLOCK_MAX allows,
 * and a larger budget never moves more bytes to the device. */
static void sweep(const ck_plan *p, int i, int64_t unit, int64_t row_bytes,
                  int64_t input_bytes)
{
    int64_t last_up = INT64_MAX, need = -1;
    ck_devla o;

    EACH_BUDGET(b)
    {
        cr_assert(ck_devla_plan(p, i, b, &o));
        cr_assert_eq(o.node, i);
        if (need < 0)
            need = o.need_bytes;
        cr_assert_eq(o.need_bytes, need, "the need does not depend on b");
        if (o.need_bytes > b)
            continue;
        cr_assert_leq(o.device_bytes, b, "%lld bytes in a %lld budget",
                      (long long)o.device_bytes, (long long)b);
        cr_assert_geq(o.device_bytes, o.need_bytes);
        if (o.mode == CK_DEVLA_STREAMED && p->node[i].kind != CK_NODE_MATMUL) {
            cr_assert_gt(o.block_rows, 0);
            cr_assert(o.block_rows % unit == 0 || o.blocks == 1,
                      "%lld rows: whole chunks of %lld",
                      (long long)o.block_rows, (long long)unit);
            cr_assert(o.block_rows * row_bytes <= CK_DEVLA_BLOCK_MAX ||
                      o.block_rows == unit);
        }
        if (o.passes > 0 && p->node[i].kind != CK_NODE_MATMUL)
            cr_assert_eq(o.upload_bytes, o.mode == CK_DEVLA_RESIDENT
                                             ? input_bytes
                                             : o.passes * input_bytes);
        cr_assert_leq(o.upload_bytes, last_up);
        last_up = o.upload_bytes;
    }
    cr_assert_lt(need, (int64_t)4 << 30, "fits somewhere in the sweep");
}

/* The SVD, U S Vt written: resident (one upload, one pass) once
 * the budget holds L and the factors, TSQR in two passes (R, then U)
 * below that; 1000-row chunks are the blocks' unit. */
Test(devla, exact_svd_resident_above_its_size_tsqr_below)
{
    ck_plan *p = plan("[{\"name\": \"s\", \"op\": \"svd\", \"args\": [\"a\"]}]",
                      "{\"s.U\": \"u.zarr\", \"s.S\": \"s.zarr\", "
                      "\"s.Vt\": \"v.zarr\"}");
    int i = fx_node(p, "s");
    int64_t l = 10000LL * 1000 * 8;
    ck_devla o;

    sweep(p, i, 1000, 1000 * 8, l);
    ck_devla_plan(p, i, (int64_t)2 << 30, &o);
    cr_assert_eq(o.mode, CK_DEVLA_RESIDENT);
    cr_assert_eq(o.passes, 1);
    cr_assert_eq(o.upload_bytes, l);
    cr_assert_gt(o.device_bytes, l);
    /* U, Vt and S come back */
    cr_assert_eq(o.download_bytes, l + 1000LL * 1000 * 8 + 1000 * 8);
    ck_devla_plan(p, i, l, &o); /* L alone leaves no room for the rest */
    cr_assert_eq(o.mode, CK_DEVLA_STREAMED);
    cr_assert_eq(o.passes, 2);
    cr_assert_eq(o.upload_bytes, 2 * l);
    cr_assert_eq(o.block_rows % 1000, 0);
    cr_assert_eq(o.blocks, (10000 + o.block_rows - 1) / o.block_rows);
    ck_plan_free(p);
}

/* Only S written: TSQR needs no second pass. */
Test(devla, exact_svd_of_s_alone_reads_once)
{
    ck_plan *p = plan("[{\"name\": \"s\", \"op\": \"svd\", \"args\": [\"a\"]}]",
                      "{\"s.S\": \"s.zarr\"}");
    int i = fx_node(p, "s");
    ck_devla o;

    sweep(p, i, 1000, 1000 * 8, 10000LL * 1000 * 8);
    ck_devla_plan(p, i, 40 << 20, &o);
    cr_assert_eq(o.mode, CK_DEVLA_STREAMED);
    cr_assert_eq(o.passes, 1);
    cr_assert_eq(o.download_bytes, 1000 * 8);
    ck_plan_free(p);
}

/* A wide A is factored as L = A^T: its rows are A's columns, in A's
 * column chunks (500); Vt is then the rows' factor. */
Test(devla, wide_svd_streams_columns_in_their_chunks)
{
    ck_plan *p = plan("[{\"name\": \"s\", \"op\": \"svd\", \"args\": [\"w\"]}]",
                      "{\"s.Vt\": \"v.zarr\"}");
    int i = fx_node(p, "s");
    ck_devla o;

    sweep(p, i, 500, 300 * 8, 300LL * 5000 * 8);
    ck_devla_plan(p, i, 8 << 20, &o);
    cr_assert_eq(o.mode, CK_DEVLA_STREAMED);
    cr_assert_eq(o.passes, 2, "Vt of a wide A takes the second pass");
    cr_assert_eq(o.block_rows % 500, 0);
    ck_plan_free(p);
}

/* Randomized: power_iters + 1 passes over the rows when streamed, one
 * upload when resident. */
Test(devla, randomized_svd_passes)
{
    ck_plan *p = plan("[{\"name\": \"s\", \"op\": \"svd\", \"args\": [\"a\"], "
                      "\"method\": \"randomized\", \"k\": 10, "
                      "\"power_iters\": 3}]",
                      "{\"s.U\": \"u.zarr\"}");
    int i = fx_node(p, "s");
    int64_t l = 10000LL * 1000 * 8;
    ck_devla o;

    sweep(p, i, 1000, 1000 * 8, l);
    ck_devla_plan(p, i, 16 << 20, &o);
    cr_assert_eq(o.mode, CK_DEVLA_STREAMED);
    cr_assert_eq(o.passes, 4);
    cr_assert_eq(o.upload_bytes, 4 * l);
    ck_devla_plan(p, i, (int64_t)1 << 30, &o);
    cr_assert_eq(o.mode, CK_DEVLA_RESIDENT);
    cr_assert_eq(o.upload_bytes, l);
    ck_plan_free(p);
}

/* matmul of float32 10000 x 3000 by 3000 x 2000: as the budget grows,
 * bands of both (each operand uploaded once per tile row or column), then
 * one operand kept (each uploaded once), then both resident. */
Test(devla, matmul_modes_follow_the_budget)
{
    ck_plan *p = plan("[{\"name\": \"m\", \"op\": \"matmul\", \"args\": "
                      "[\"f\", \"g\"]}]",
                      "{\"m\": \"m.zarr\"}");
    int i = fx_node(p, "m");
    int64_t ab = 10000LL * 3000 * 4, bb = 3000LL * 2000 * 4;
    ck_devla_mode last = CK_DEVLA_RESIDENT;
    int seen[4] = {0};
    ck_devla o;

    cr_assert_eq(p->node[i].dtype, CK_F32);
    sweep(p, i, 1, 0, 0);
    EACH_BUDGET(b)
    {
        ck_devla_plan(p, i, b, &o);
        if (o.need_bytes > b)
            continue;
        seen[o.mode] = 1;
        if (o.mode == CK_DEVLA_STREAMED) {
            cr_assert_gt(o.upload_bytes, ab + bb);
            cr_assert_leq(o.block_rows, 3000);
        } else {
            cr_assert_eq(o.upload_bytes, ab + bb);
        }
        if (o.mode == CK_DEVLA_RESIDENT)
            cr_assert_geq(b, ab + bb);
        last = o.mode;
        cr_assert_eq(o.download_bytes, 10000LL * 2000 * 4);
    }
    cr_assert_eq(last, CK_DEVLA_RESIDENT);
    cr_assert(seen[CK_DEVLA_STREAMED]);
    cr_assert(seen[CK_DEVLA_CACHE_A] || seen[CK_DEVLA_CACHE_B]);
    ck_plan_free(p);
}

/* glm_fit: X (with its intercept column) and y resident, one upload for
 * all iterations; else blocks of X's 4096-row chunks every iteration. */
Test(devla, glm_fit_resident_or_a_pass_per_iteration)
{
    ck_plan *p = plan("[{\"name\": \"m\", \"op\": \"glm_fit\", \"args\": "
                      "[\"X\", \"y\"], \"family\": \"logistic\"}]",
                      "{\"m.coef\": \"c.zarr\"}");
    int i = fx_node(p, "m");
    ck_devla o;

    sweep(p, i, 4096, 21 * 8, 100000LL * 21 * 8);
    ck_devla_plan(p, i, 4 << 20, &o);
    cr_assert_eq(o.mode, CK_DEVLA_STREAMED);
    cr_assert_eq(o.passes, -1);
    cr_assert_eq(o.block_rows % 4096, 0);
    cr_assert_eq(o.upload_bytes, 100000LL * 21 * 8, "X and y, a pass");
    ck_devla_plan(p, i, 64 << 20, &o);
    cr_assert_eq(o.mode, CK_DEVLA_RESIDENT);
    cr_assert_eq(o.passes, 1);
    cr_assert_eq(o.download_bytes, 21 * 8, "the coefficients");
    ck_plan_free(p);
}

/* Steps that are not linear algebra are not planned here; a step that
 * does not fit is named in the check's message with what it needs. */
Test(devla, check_names_the_step_that_does_not_fit)
{
    ck_plan *p = plan("[{\"name\": \"r\", \"op\": \"sqrt\", \"args\": "
                      "[\"a\"]}, {\"name\": \"big\", \"op\": \"svd\", "
                      "\"args\": [\"a\"]}]",
                      "{\"r\": \"r.zarr\", \"big.U\": \"u.zarr\"}");
    ck_devla o;
    ck_err err = {0};

    cr_assert_not(ck_devla_plan(p, fx_node(p, "r"), 1 << 30, &o));
    cr_assert_eq(ck_devla_check(p, (int64_t)1 << 30, &err), CK_OK);
    cr_assert_eq(ck_devla_check(p, 4 << 20, &err), CK_ENOMEM);
    cr_assert_not_null(strstr(err.msg, "svd big: needs "), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "--gpu-memory gives 4.0 MiB"), "%s",
                       err.msg);
    ck_plan_free(p);
}
