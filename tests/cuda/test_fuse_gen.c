/*
 * tests/cuda/test_fuse_gen.c - the programs the fusion planner makes of
 * real pipelines (pipelines/fuse.h) become CUDA source that NVRTC
 * compiles for an H100 (sm_90) and an A100 (sm_80): the whole path from
 * a pipeline file to a kernel image, with no GPU.
 */
#include "backends/cuda/ew_gen.h"
#include "backends/cuda/nvrtc.h"
#include "tests/pipelines/fuse_fixture.h"

static void setup(void)
{
    fx_setup();
    setenv("CHUNKCTL_CACHE_DIR", fx_dir, 1);
    ck_cuda_image_forget();
}

TestSuite(fuse_gen, .init = setup, .fini = fx_teardown);

/* Every program of steps compiles; returns how many there were. */
static int compile_all(const char *steps, const char *out)
{
    ck_plan *p = fx_plan(steps, out);
    ck_fusion *fz = malloc(sizeof *fz);
    int n;

    cr_assert_not_null(fz);
    ck_fuse_plan(p, fz);
    for (int k = 0; k < fz->n; k++) {
        ck_err err = {0};
        char *src = NULL;
        const void *img;
        size_t len;
        cr_assert_eq(ck_cuda_ew_source(&fz->f[k].prog, &src, &err), CK_OK, "%s",
                     err.msg);
        for (int arch = 80; arch <= 90; arch += 10)
            cr_assert_eq(ck_cuda_image(src, arch, &img, &len, &err), CK_OK,
                         "program %d (sm_%d): %s\n%s", k, arch, err.msg, src);
        free(src);
    }
    n = fz->n;
    free(fz);
    ck_plan_free(p);
    return n;
}

Test(fuse_gen, the_benchmark_chain_compiles_as_one_kernel)
{
    cr_assert_eq(
        compile_all("[{\"name\": \"s\", \"op\": \"sin\", \"args\": [\"x\"]},"
                    " {\"name\": \"m\", \"op\": \"multiply\", \"args\": "
                    "[\"s\", 3]},"
                    " {\"name\": \"h\", \"op\": \"divide\", \"args\": "
                    "[\"x\", 2]},"
                    " {\"name\": \"a\", \"op\": \"add\", \"args\": "
                    "[\"m\", \"h\"]},"
                    " {\"name\": \"b\", \"op\": \"abs\", \"args\": [\"a\"]},"
                    " {\"name\": \"r\", \"op\": \"sqrt\", \"args\": [\"b\"]}]",
                    "r"),
        1);
}

/* The seed histogram's mask: (x + 1)[(x + 1) < 10] needs x + 1 (the
 * mask's values) and the condition, each a program. */
Test(fuse_gen, the_seed_histogram_mask_compiles)
{
    cr_assert_eq(
        compile_all("[{\"name\": \"y\", \"op\": \"add\", \"args\": [\"x\", 1]},"
                    " {\"name\": \"c\", \"op\": \"less\", \"args\": "
                    "[\"y\", 10]},"
                    " {\"name\": \"m\", \"op\": \"mask\", \"args\": "
                    "[\"y\", \"c\"]},"
                    " {\"name\": \"h\", \"op\": \"histogram\", \"args\": "
                    "[\"m\"], \"bins\": 100, \"range\": [-9, 11]}]",
                    "y"),
        2);
}

Test(fuse_gen, mixed_dtypes_broadcasting_and_where_compile)
{
    cr_assert_eq(
        compile_all("[{\"name\": \"z\", \"op\": \"multiply\", \"args\": "
                    "[\"x\", \"w\"]},"
                    " {\"name\": \"c\", \"op\": \"greater\", \"args\": "
                    "[\"z\", 0]},"
                    " {\"name\": \"k\", \"op\": \"astype\", \"args\": "
                    "[\"i\"], \"dtype\": \"uint8\"},"
                    " {\"name\": \"q\", \"op\": \"power\", \"args\": "
                    "[\"k\", 2]},"
                    " {\"name\": \"r\", \"op\": \"where\", \"args\": "
                    "[\"c\", \"q\", -1.5]}]",
                    "r"),
        1);
}
