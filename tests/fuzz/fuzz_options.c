/*
 * tests/fuzz/fuzz_options.c - the parsers of command-line values: targets
 * "PATH[:DATASET]" (ck_target_split), sizes ("256M", ck_parse_size),
 * shapes and index lists ("1000,1000", ck_parse_ints), --compress
 * (ck_codec_parse; what parses must format with ck_codec_str into a
 * string that parses to the same spec), --filters (ck_filter_parse_list,
 * likewise with ck_filter_str) and dtypes (ck_dtype_parse).  The input is
 * the option's value; every parser gets it.
 */
#include "base/ck_dtype.h"
#include "base/ck_grid.h"
#include "base/ck_mem.h"
#include "io/codec.h"
#include "io/filter.h"
#include "io/store.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    return 0;
}

static void codec(const char *s)
{
    ck_codec_spec c, c2;
    ck_err err = {0};
    char buf[128];

    if (ck_codec_parse(s, &c, &err) != CK_OK)
        return;
    ck_codec_str(&c, buf, sizeof buf);
    err = (ck_err){0};
    if (ck_codec_parse(buf, &c2, &err) != CK_OK || c2.id != c.id ||
        c2.level != c.level || c2.shuffle != c.shuffle ||
        strcmp(c2.cname, c.cname) != 0) {
        fprintf(stderr,
                "--compress '%s' formats as '%s', which reads back "
                "otherwise (%s)\n",
                s, buf, err.msg);
        abort();
    }
}

static void filters(const char *s)
{
    ck_filter f[CK_FILTERS_MAX], f2[1];
    ck_err err = {0};
    char buf[256];
    int n = 0, n2 = 0;

    if (ck_filter_parse_list(s, f, CK_FILTERS_MAX, &n, &err) != CK_OK)
        return;
    for (int i = 0; i < n; i++) {
        ck_filter_str(&f[i], buf, sizeof buf);
        err = (ck_err){0};
        if (ck_filter_parse_list(buf, f2, 1, &n2, &err) != CK_OK || n2 != 1 ||
            f2[0].id != f[i].id) {
            fprintf(stderr,
                    "--filters item %d of '%s' formats as '%s', "
                    "which reads back otherwise (%s)\n",
                    i, s, buf, err.msg);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s, path[256], ds[256];
    int64_t v[CK_MAX_DIMS];
    ck_err err = {0};
    ck_dtype t;
    int n;

    if (size > 4096)
        return 0;
    s = fz_str(data, size);
    ck_target_split(s, path, sizeof path, ds, sizeof ds, &err);
    ck_parse_size(s, v, &err);
    ck_parse_ints(s, "--chunks", v, CK_MAX_DIMS, &n, &err);
    codec(s);
    filters(s);
    ck_dtype_parse(s, &t, &err);
    free(s);
    return 0;
}
