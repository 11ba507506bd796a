/*
 * tests/fuzz/fuzz_zarr3_meta.c - Zarr v3 zarr.json texts:
 * ck_zarr3_node_kind, ck_zarr3_meta_parse, and ck_zarr3_meta_format of
 * what parsed (with the text's "attributes", if any), which must parse
 * again.  The input is the file's text.
 */
#include "io/zarr/meta.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ck_zarr_meta m, m2;
    ck_err err = {0};
    char *t, *out = NULL, *attrs = NULL;
    const char *val;
    size_t vlen;
    int is_array = 0;

    if (size > CK_ZARR_META_MAX)
        return 0;
    t = fz_dup(data, size);
    if (ck_zarr3_node_kind(t, size, "s.zarr/zarr.json", &is_array, &err) ==
            CK_OK &&
        !is_array) {
        if (ck_zarr3_group_format(NULL, &out, &err) == CK_OK)
            free(out);
    }
    if (fz_note("zarr.json",
                ck_zarr3_meta_parse(t, size, "s.zarr/zarr.json", &m, &err),
                &err) == CK_OK) {
        /* Attributes go back as the raw text they were, if an object. */
        if (ck_zarr_json_get(t, size, "attributes", &val, &vlen) == 1 && vlen &&
            val[0] == '{' &&
            ck_zarr_attrs_check(val, vlen, "attributes", &err) == CK_OK) {
            attrs = fz_str((const uint8_t *)val, vlen);
        }
        if (ck_zarr3_meta_format(&m, attrs, &out, &err) == CK_OK) {
            err = (ck_err){0};
            if (ck_zarr3_meta_parse(out, strlen(out), "out", &m2, &err) !=
                CK_OK) {
                fprintf(stderr, "formatted zarr.json does not parse: %s\n%s\n",
                        err.msg, out);
                abort();
            }
            free(out);
        }
        free(attrs);
    }
    free(t);
    return 0;
}
