/*
 * tests/fuzz/fuzz_zarr_meta.c - Zarr v2 metadata texts: .zarray
 * (ck_zarr_meta_parse, and ck_zarr_meta_format of what parsed, which must
 * parse again), .zgroup (ck_zarr_zgroup_check) and .zattrs
 * (ck_zarr_attrs_check, then ck_zarr_attrs_get and ck_zarr_attrs_set of
 * its members and of a new one), and the raw member walk every one of
 * them rests on (ck_zarr_json_members, ck_zarr_json_get,
 * ck_zarr_json_put).  The input is the file's text, as read from disk.
 */
#include <math.h>

#include "io/zarr/meta.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    return 0;
}

static void zarray(const char *t, size_t n)
{
    ck_zarr_meta m, m2;
    ck_err err = {0};
    char *out = NULL;

    if (fz_note(".zarray", ck_zarr_meta_parse(t, n, "s.zarr/.zarray", &m, &err),
                &err) != CK_OK)
        return;
    /* What chunkctl writes of a .zarray it read must read back. */
    if (ck_zarr_meta_format(&m, &out, &err) == CK_OK) {
        err = (ck_err){0};
        if (ck_zarr_meta_parse(out, strlen(out), "out", &m2, &err) != CK_OK) {
            fprintf(stderr, "formatted .zarray does not parse: %s\n%s\n",
                    err.msg, out);
            abort();
        }
        free(out);
    }
}

static int ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return 0;
    return 1;
}

static void zattrs(const char *t, size_t n)
{
    ck_err err = {0};
    ck_attr v;
    char key[128], *out = NULL;
    const char *val;
    size_t vlen, pos = 0;
    int k = 0;

    ck_zarr_zgroup_check(t, n, "s.zarr/.zgroup", &err);
    if (fz_note(".zattrs", ck_zarr_attrs_check(t, n, "s.zarr/.zattrs", &err),
                &err) != CK_OK)
        return;
    ck_zarr_json_get(t, n, "units", &val, &vlen);
    /* Every member read, and written back as a new value. */
    while (k++ < 64 && ck_zarr_json_members(t, n, &pos, key, sizeof key, &val,
                                            &vlen) == 1) {
        if (ck_zarr_attrs_get(t, n, key, "s.zarr:/x", &v, &err) == CK_OK &&
            ck_zarr_attrs_set(t, n, key, &v, "s.zarr:/x", &out, &err) ==
                CK_OK) {
            ck_attr w;
            /* Non-finite floats are written bare (NaN), as zarr-python
             * does, which only the store's quoting makes readable; keys
             * and strings not UTF-8 never get here (io/store.c refuses
             * them) and are written with U+FFFD: ASCII ones are checked. */
            err = (ck_err){0};
            if ((v.kind != CK_ATTR_F64 || isfinite(v.f64)) && ascii(key) &&
                (v.kind != CK_ATTR_STR || ascii(v.str)) &&
                ck_zarr_attrs_get(out, strlen(out), key, "out", &w, &err) !=
                    CK_OK) {
                fprintf(stderr, "attribute '%s' set but not read back: %s\n",
                        key, err.msg);
                abort();
            }
            free(out);
            out = NULL;
        }
        if (ck_zarr_json_put(t, n, key, NULL, "s.zarr/.zattrs", &out, &err) ==
            CK_OK) {
            free(out);
            out = NULL;
        }
    }
    v.kind = CK_ATTR_F64;
    v.f64 = 0.5;
    if (ck_zarr_attrs_set(t, n, "new_key", &v, "s.zarr:/x", &out, &err) ==
        CK_OK)
        free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *t;

    if (size > CK_ZARR_META_MAX)
        return 0;
    t = fz_dup(data, size);
    zarray(t, size);
    zattrs(t, size);
    free(t);
    return 0;
}
