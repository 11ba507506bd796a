/*
 * tests/cuda/test_nvrtc.c - kernels compiled at run time and cached: the
 * generated source becomes a cubin (an ELF image) for the asked
 * architecture, a second call is answered from the process, a new process
 * from the disk cache, and a damaged cache file is replaced; users'
 * kernels (the kernel op's CUDA C) compile against the contract header,
 * are checked for their entry point, and fail in one line.  NVRTC needs
 * no GPU.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/ew_gen.h"
#include "backends/cuda/nvrtc.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ck-nvrtc-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    setenv("CHUNKCTL_CACHE_DIR", dir, 1);
    ck_cuda_image_forget();
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* The one cache file for arch (its path in path), or 0 if none. */
static int cache_file(int arch, char *path, size_t n)
{
    char suffix[32];
    struct dirent *d;
    DIR *dd = opendir(dir);
    int found = 0;

    snprintf(suffix, sizeof suffix, "-sm%d.cubin", arch);
    while (dd && (d = readdir(dd)))
        if (strlen(d->d_name) > strlen(suffix) &&
            !strcmp(d->d_name + strlen(d->d_name) - strlen(suffix), suffix)) {
            snprintf(path, n, "%s/%s", dir, d->d_name);
            found++;
        }
    if (dd)
        closedir(dd);
    return found;
}

static char *chain_source(void)
{
    ck_ew_prog p = {.ndim = 1,
                    .nin = 1,
                    .in = {CK_F32},
                    .contiguous = {1},
                    .n = 3,
                    .result = 2,
                    .ins = {{.kind = CK_EWP_LOAD, .dtype = CK_F32, .input = 0},
                            {.kind = CK_EWP_OP,
                             .op = CK_EW_SIN,
                             .compute = CK_F32,
                             .dtype = CK_F32,
                             .arg = {0}},
                            {.kind = CK_EWP_OP,
                             .op = CK_EW_SQRT,
                             .compute = CK_F32,
                             .dtype = CK_F32,
                             .arg = {1}}}};
    ck_err err = {0};
    char *src = NULL;

    cr_assert_eq(ck_cuda_ew_source(&p, &src, &err), CK_OK, "%s", err.msg);
    return src;
}

static void write_bytes(const char *path, const char *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

Test(nvrtc, compiles_then_caches, .init = setup, .fini = teardown)
{
    char *src = chain_source(), path[256];
    const void *a, *b, *c;
    size_t na, nb, nc;
    ck_err err = {0};
    static const char planted[] = "\177ELF planted by the test";

    cr_assert_eq(ck_cuda_image(src, 90, &a, &na, &err), CK_OK, "%s", err.msg);
    cr_assert_gt(na, 64);
    cr_assert_eq(memcmp(a, "\177ELF", 4), 0, "a cubin is an ELF image");
    cr_assert_eq(cache_file(90, path, sizeof path), 1);
    /* the process answers the second call */
    cr_assert_eq(ck_cuda_image(src, 90, &b, &nb, &err), CK_OK);
    cr_assert_eq(a, b);
    cr_assert_eq(na, nb);
    /* forgetting frees the table's copies: keep one */
    void *first = malloc(na);
    cr_assert_not_null(first);
    memcpy(first, a, na);
    /* a new process (here: a forgotten table) reads the disk cache */
    write_bytes(path, planted, sizeof planted);
    ck_cuda_image_forget();
    cr_assert_eq(ck_cuda_image(src, 90, &c, &nc, &err), CK_OK);
    cr_assert_eq(nc, sizeof planted);
    cr_assert_eq(memcmp(c, planted, nc), 0, "read from the disk cache");
    /* a damaged file is not used, and is replaced */
    write_bytes(path, "garbage", 7);
    ck_cuda_image_forget();
    cr_assert_eq(ck_cuda_image(src, 90, &c, &nc, &err), CK_OK);
    cr_assert_eq(nc, na);
    cr_assert_eq(memcmp(c, first, nc), 0, "recompiled: the same image");
    free(first);
    cr_assert_eq(cache_file(90, path, sizeof path), 1);
    /* another architecture is another image and another file */
    cr_assert_eq(ck_cuda_image(src, 80, &b, &nb, &err), CK_OK);
    cr_assert_eq(cache_file(80, path, sizeof path), 1);
    free(src);
}

Test(nvrtc, an_unwritable_cache_is_skipped, .init = setup, .fini = teardown)
{
    char *src = chain_source();
    const void *a;
    size_t na;
    ck_err err = {0};

    setenv("CHUNKCTL_CACHE_DIR", "/proc/no-such-place/kernels", 1);
    cr_assert_eq(ck_cuda_image(src, 90, &a, &na, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(memcmp(a, "\177ELF", 4), 0);
    free(src);
}

/* A file's text (freed by the caller). */
static char *slurp(const char *path)
{
    char *src;
    FILE *f;
    long n;

    cr_assert_not_null(f = fopen(path, "rb"), "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    rewind(f);
    cr_assert_not_null(src = calloc(1, (size_t)n + 1));
    cr_assert_eq(fread(src, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return src;
}

static char *sample(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CK_SAMPLE_KERNELS, name);
    return slurp(path);
}

/* The sample custom kernel users start from (sample-data/kernels/
 * rowadd.cu, the seed's row add, written to the contract in
 * chunkctl_kernel.h) compiles for the H100's and the A100's
 * architectures and defines its entry point; a new process finds it in
 * the disk cache. */
Test(nvrtc, the_sample_row_add_kernel_compiles, .init = setup, .fini = teardown)
{
    char *src = sample("rowadd.cu"), *hdr = sample("chunkctl_kernel.h");
    const void *image;
    size_t len;
    int compiled = -1;
    ck_err err = {0};

    for (int arch = 80; arch <= 90; arch += 10) {
        cr_assert_eq(ck_cuda_user_image("p.json: steps[0]", "k/rowadd.cu", src,
                                        hdr, "rowadd", arch, &image, &len,
                                        &compiled, &err),
                     CK_OK, "sm_%d: %s", arch, err.msg);
        cr_assert_eq(compiled, 1);
        cr_assert_gt(len, 4);
        cr_assert_eq(memcmp(image, "\177ELF", 4), 0);
    }
    ck_cuda_image_forget(); /* as a new process */
    cr_assert_eq(ck_cuda_user_image("p.json: steps[0]", "k/rowadd.cu", src, hdr,
                                    "rowadd", 90, &image, &len, &compiled,
                                    &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(compiled, 0, "from the disk cache");
    free(src);
    free(hdr);
}

/* The cache is keyed by the contract too: a changed header compiles
 * again (a kernel built against an old layout is never reused). */
Test(nvrtc, a_changed_contract_compiles_again, .init = setup, .fini = teardown)
{
    char *src = sample("rowadd.cu"), *hdr = sample("chunkctl_kernel.h");
    size_t n = strlen(hdr);
    char *hdr2 = malloc(n + 32);
    const void *image;
    size_t len;
    int compiled = -1;
    ck_err err = {0};

    cr_assert_not_null(hdr2);
    snprintf(hdr2, n + 32, "%s\n/* v2 */\n", hdr);
    cr_assert_eq(ck_cuda_user_image("w", "rowadd.cu", src, hdr, "rowadd", 90,
                                    &image, &len, &compiled, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(ck_cuda_user_image("w", "rowadd.cu", src, hdr2, "rowadd", 90,
                                    &image, &len, &compiled, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(compiled, 1);
    free(src);
    free(hdr);
    free(hdr2);
}

/* A kernel that does not compile is one line: the step, the file and
 * line of the first error, NVRTC's words and the source line; a missing
 * entry point is named.  Both are usage errors (exit 2). */
Test(nvrtc, bad_user_kernels_are_one_line, .init = setup, .fini = teardown)
{
    static const char bad[] =
        "#include \"chunkctl_kernel.h\"\n"
        "extern \"C\" __global__ void k(const chunkctl_array *out,\n"
        "    const chunkctl_array *args, int nargs, const double *params,\n"
        "    int nparams)\n"
        "{\n"
        "    ((float *)out->data)[0] = q;\n"
        "}\n";
    char *src = sample("rowadd.cu"), *hdr = sample("chunkctl_kernel.h");
    const void *image;
    size_t len;
    int compiled;
    ck_err err = {0};

    cr_assert_eq(ck_cuda_user_image("p.json: steps[1]", "dir/bad.cu", bad, hdr,
                                    "k", 90, &image, &len, &compiled, &err),
                 CK_EUSAGE);
    cr_assert_str_eq(err.msg,
                     "p.json: steps[1]: bad.cu(6): error: identifier \"q\" "
                     "is undefined: ((float *)out->data)[0] = q;");
    cr_assert_null(strchr(err.msg, '\n'));
    err = (ck_err){0};
    cr_assert_eq(ck_cuda_user_image("p.json: steps[1]", "rowadd.cu", src, hdr,
                                    "row_add", 90, &image, &len, &compiled,
                                    &err),
                 CK_EUSAGE);
    cr_assert_str_eq(err.msg, "p.json: steps[1]: rowadd.cu has no kernel "
                              "'row_add' (an extern \"C\" __global__ "
                              "function)");
    free(src);
    free(hdr);
}
