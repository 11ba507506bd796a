/*
 * tests/io/test_zarr.c - the Criterion suite "zarr": Zarr v2 directory
 * stores through io/store.h (ck_zarr_ops).  Fixture stores are written by
 * the tests themselves into a fresh mkdtemp directory: by chunkctl for
 * round trips, by hand (the bytes zarr-python writes) for layouts chunkctl
 * never writes (F order, big-endian, "/" keys) and for damaged stores.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "base/ck_thread.h"
#include "io/store.h"
#include "io/store_impl.h"
#include "io/zarr/meta.h"

static char tmpdir[256];

static int rm_entry(const char *p, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ck-test-zarr-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(zarr, .description = "io/zarr: Zarr v2 directory stores",
          .init = setup, .fini = teardown);

/* ---- fixture helpers ---- */

static const char *at(const char *rel)
{
    static char buf[4][512];
    static int k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, rel);
    return buf[k];
}

static void put(const char *rel, const void *data, size_t n)
{
    FILE *f = fopen(at(rel), "wb");

    cr_assert_not_null(f, "%s", at(rel));
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static void put_text(const char *rel, const char *text)
{
    put(rel, text, strlen(text));
}

static void mk(const char *rel)
{
    cr_assert_eq(mkdir(at(rel), 0777), 0, "%s", at(rel));
}

static int exists(const char *rel)
{
    struct stat st;

    return lstat(at(rel), &st) == 0;
}

/* A .zarray for the hand-written fixtures. */
static void put_zarray(const char *dir, const char *shape, const char *chunks,
                       const char *dtype, const char *compressor,
                       const char *fill, const char *order, const char *sep)
{
    char rel[256], text[1024];

    snprintf(rel, sizeof rel, "%s/.zarray", dir);
    snprintf(text, sizeof text,
             "{\"zarr_format\": 2, \"shape\": %s, \"chunks\": %s, "
             "\"dtype\": \"%s\", \"compressor\": %s, \"fill_value\": %s, "
             "\"order\": \"%s\", \"filters\": null, "
             "\"dimension_separator\": \"%s\"}",
             shape, chunks, dtype, compressor, fill, order, sep);
    put_text(rel, text);
}

static ck_store *open_ok(const char *rel)
{
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_open(at(rel), &s, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_store_kind_of(s), CK_KIND_ZARR);
    return s;
}

static ck_array *array_ok(ck_store *s, const char *name)
{
    ck_array *a = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_array_open(s, name, &a, &err), CK_OK, "%s", err.msg);
    return a;
}

/* Reads one chunk with an arena of exactly ck_array_scratch_bytes(). */
static ck_code read_one(ck_array *a, const int64_t *coords, void *dst,
                        ck_err *err)
{
    ck_arena ar = CK_ARENA_INIT;
    ck_code rc;

    cr_assert_eq(
        ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(a), "t", err),
        CK_OK);
    rc = ck_array_read_chunk(a, coords, dst, &ar, err);
    ck_arena_release(&ar);
    return rc;
}

/* ---- round trips ---- */

struct rt_case {
    ck_dtype dtype;
    char codec[32];
    int ndim;
    int64_t shape[3], chunks[3];
};

static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

ParameterizedTestParameters(zarr, round_trip)
{
    static const char codecs[][32] = {"none",
                                      "zstd:3",
                                      "zlib:4",
                                      "gzip:4",
                                      "blosc:lz4:5:shuffle",
                                      "blosc:zstd:1:bitshuffle",
                                      "blosc:blosclz:5:noshuffle"};
    static const ck_dtype dts[] = {CK_BOOL, CK_I8,  CK_U8,  CK_I16,
                                   CK_U16,  CK_I32, CK_U32, CK_I64,
                                   CK_U64,  CK_F32, CK_F64};
    static const struct {
        int ndim;
        int64_t shape[3], chunks[3];
    } grids[] = {
        {2, {10, 7}, {4, 3}},      /* edge chunks on both axes */
        {3, {5, 4, 3}, {5, 4, 3}}, /* one chunk */
        {1, {9}, {2}},
        {0, {0}, {0}},
    };
    size_t n = sizeof codecs / sizeof codecs[0] * sizeof dts / sizeof dts[0] *
               sizeof grids / sizeof grids[0];
    struct rt_case *c = cr_malloc(n * sizeof *c);
    size_t k = 0;

    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
        for (size_t j = 0; j < sizeof dts / sizeof dts[0]; j++)
            for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
                memset(&c[k], 0, sizeof c[k]);
                c[k].dtype = dts[j];
                memcpy(c[k].codec, codecs[i], sizeof c[k].codec);
                c[k].ndim = grids[g].ndim;
                memcpy(c[k].shape, grids[g].shape, sizeof c[k].shape);
                memcpy(c[k].chunks, grids[g].chunks, sizeof c[k].chunks);
                k++;
            }
    return cr_make_param_array(struct rt_case, c, n, free_params);
}

/* Deterministic bytes that are valid for every dtype (bool: 0 or 1). */
static void pattern(ck_dtype t, void *buf, size_t nelem, unsigned seed)
{
    size_t sz = ck_dtype_size(t);
    unsigned char *b = buf;

    for (size_t i = 0; i < nelem; i++) {
        if (t == CK_BOOL) {
            b[i] = (unsigned char)((i * 7 + seed) % 3 == 0);
        } else if (t == CK_F64) {
            double v = (double)i * 0.25 - (double)seed;
            memcpy(b + i * 8, &v, 8);
        } else if (t == CK_F32) {
            float v = (float)i * 0.5f + (float)seed;
            memcpy(b + i * 4, &v, 4);
        } else {
            for (size_t k = 0; k < sz; k++)
                b[i * sz + k] = (unsigned char)(i * 31 + k * 7 + seed);
        }
    }
}

ParameterizedTest(struct rt_case *c, zarr, round_trip)
{
    ck_array_spec spec;
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};
    ck_arena ar = CK_ARENA_INIT;
    size_t sz = ck_dtype_size(c->dtype);
    ck_chunk ch;

    memset(&spec, 0, sizeof spec);
    spec.name = "/";
    spec.ndim = c->ndim;
    memcpy(spec.shape, c->shape, sizeof c->shape);
    memcpy(spec.chunks, c->chunks, sizeof c->chunks);
    spec.dtype = c->dtype;
    spec.has_fill = 1;
    spec.fill.i = 1;
    cr_assert_eq(ck_codec_parse(c->codec, &spec.codec, &err), CK_OK);
    cr_assert_eq(ck_store_create(at("rt.zarr"), CK_KIND_ZARR, 0, &s, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);

    const ck_grid *g = ck_array_grid(a);
    size_t cb = (size_t)g->chunk_nelem * sz;
    char *buf = malloc(cb), *back = malloc(cb);

    cr_assert_eq(
        ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(a), "t", &err),
        CK_OK);
    /* Write every chunk but the last, which is then read as fill. */
    ck_iter it = ck_iter_all(g);
    while (ck_iter_next(&it, &ch)) {
        if (ch.index == g->total_chunks - 1 && g->total_chunks > 1)
            break;
        pattern(c->dtype, buf, (size_t)g->chunk_nelem, (unsigned)ch.index);
        ck_arena_reset(&ar);
        cr_assert_eq(ck_array_write_chunk(a, ch.coords, buf, &ar, &err), CK_OK,
                     "%s", err.msg);
    }
    ck_array_close(a);
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);
    cr_assert(exists("rt.zarr/.zarray"));
    cr_assert_not(exists("rt.zarr/.zgroup"), "a root array has no .zgroup");

    s = open_ok("rt.zarr");
    a = array_ok(s, "");
    g = ck_array_grid(a);
    const ck_array_info *in = ck_array_info_of(a);
    cr_assert_str_eq(in->name, "/");
    cr_assert_eq(in->dtype, c->dtype);
    cr_assert_eq(in->ndim, c->ndim);
    cr_assert_eq(in->order, 'C');
    cr_assert_eq(in->layout, CK_LAYOUT_CHUNKED);
    cr_assert_eq(in->codec.id, spec.codec.id);
    cr_assert_eq(in->has_fill, 1);
    cr_assert_eq(in->chunks_stored,
                 g->total_chunks > 1 ? g->total_chunks - 1 : 1);
    char want[96];
    ck_codec_str(&spec.codec, want, sizeof want);
    cr_assert_str_eq(in->compressor, want);

    it = ck_iter_all(g);
    while (ck_iter_next(&it, &ch)) {
        int last = ch.index == g->total_chunks - 1 && g->total_chunks > 1;
        if (last)
            ck_dtype_fill(c->dtype, buf, spec.fill, (size_t)g->chunk_nelem);
        else
            pattern(c->dtype, buf, (size_t)g->chunk_nelem, (unsigned)ch.index);
        ck_arena_reset(&ar);
        memset(back, 0xee, cb);
        cr_assert_eq(ck_array_read_chunk(a, ch.coords, back, &ar, &err), CK_OK,
                     "%s", err.msg);
        cr_assert_eq(memcmp(buf, back, cb), 0, "chunk %lld (%s, %s)",
                     (long long)ch.index, ck_dtype_name(c->dtype), c->codec);
    }
    free(buf);
    free(back);
    ck_arena_release(&ar);
    ck_array_close(a);
    ck_store_close(s);
}

/* ---- groups and listing ---- */

static void create_array(ck_store *s, const char *name, ck_dtype t,
                         const char *codec)
{
    ck_array_spec spec;
    ck_array *a = NULL;
    ck_err err = {0};

    memset(&spec, 0, sizeof spec);
    spec.name = name;
    spec.ndim = 1;
    spec.shape[0] = 4;
    spec.chunks[0] = 2;
    spec.dtype = t;
    cr_assert_eq(ck_codec_parse(codec, &spec.codec, &err), CK_OK);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
    ck_array_close(a);
}

Test(zarr, groups_are_created_and_listed_sorted)
{
    ck_store *s = NULL;
    ck_names l = {0};
    ck_err err = {0};

    cr_assert_eq(ck_store_create(at("g.zarr"), CK_KIND_ZARR, 0, &s, &err),
                 CK_OK, "%s", err.msg);
    create_array(s, "/z", CK_F64, "none");
    create_array(s, "/g/h/b", CK_I32, "zstd:1");
    create_array(s, "/g/a", CK_U8, "none");
    create_array(s, "/a", CK_F32, "none");
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);
    cr_assert(exists("g.zarr/.zgroup"));
    cr_assert(exists("g.zarr/g/.zgroup"));
    cr_assert(exists("g.zarr/g/h/.zgroup"));
    cr_assert(exists("g.zarr/g/h/b/.zarray"));
    cr_assert_not(exists("g.zarr/g/h/b/.zgroup"));

    s = open_ok("g.zarr");
    cr_assert_eq(ck_store_list(s, &l, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(l.n, 4);
    cr_assert_str_eq(l.v[0], "/a");
    cr_assert_str_eq(l.v[1], "/g/a");
    cr_assert_str_eq(l.v[2], "/g/h/b");
    cr_assert_str_eq(l.v[3], "/z");
    ck_names_release(&l);
    ck_array *a = array_ok(s, "/g/h/b");
    cr_assert_str_eq(ck_array_info_of(a)->name, "/g/h/b");
    cr_assert_eq(ck_array_info_of(a)->dtype, CK_I32);
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, root_array_lists_as_slash)
{
    ck_names l = {0};
    ck_err err = {0};

    mk("r.zarr");
    put_zarray("r.zarr", "[3]", "[3]", "<i2", "null", "0", "C", ".");
    ck_store *s = open_ok("r.zarr");
    cr_assert_eq(ck_store_list(s, &l, &err), CK_OK);
    cr_assert_eq(l.n, 1);
    cr_assert_str_eq(l.v[0], "/");
    ck_names_release(&l);
    ck_store_close(s);
}

Test(zarr, dangling_names_consolidated_arrays_without_zarray)
{
    ck_names l = {0};
    ck_err err = {0};

    mk("c.zarr");
    mk("c.zarr/g");
    mk("c.zarr/g/x");
    mk("c.zarr/y");
    put_text("c.zarr/.zgroup", "{\"zarr_format\": 2}");
    put_text("c.zarr/g/.zgroup", "{\"zarr_format\": 2}");
    put_zarray("c.zarr/y", "[3]", "[3]", "<i2", "null", "0", "C", ".");
    /* g/x is listed but has no .zarray; y has one; ../z leaves the store
     * and is not looked at */
    put_text("c.zarr/.zmetadata",
             "{\"metadata\": {\".zgroup\": {\"zarr_format\": 2},"
             " \"g/.zgroup\": {}, \"g/x/.zarray\": {}, \"y/.zarray\": {},"
             " \"../z/.zarray\": {}}, \"zarr_consolidated_format\": 1}");
    ck_store *s = open_ok("c.zarr");
    cr_assert_eq(ck_store_dangling(s, &l, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(l.n, 1);
    cr_assert(strstr(l.v[0], "c.zarr:/g/x: .zmetadata lists this array, "
                             "but g/x/.zarray is missing"),
              "%s", l.v[0]);
    ck_names_release(&l);
    cr_assert_eq(ck_store_list(s, &l, &err), CK_OK);
    cr_assert_eq(l.n, 1);
    cr_assert_str_eq(l.v[0], "/y");
    ck_names_release(&l);
    ck_store_close(s);
    /* no .zmetadata, no dangling names */
    cr_assert_eq(unlink(at("c.zarr/.zmetadata")), 0);
    s = open_ok("c.zarr");
    cr_assert_eq(ck_store_dangling(s, &l, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(l.n, 0);
    ck_store_close(s);
}

Test(zarr, root_array_and_other_arrays_exclude_each_other)
{
    ck_store *s = NULL;
    ck_array_spec spec;
    ck_array *a = NULL;
    ck_err err = {0};

    memset(&spec, 0, sizeof spec);
    spec.ndim = 1;
    spec.shape[0] = spec.chunks[0] = 2;
    spec.dtype = CK_F64;

    cr_assert_eq(ck_store_create(at("x.zarr"), CK_KIND_ZARR, 0, &s, &err),
                 CK_OK);
    create_array(s, "/", CK_F64, "none");
    spec.name = "/b";
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_EUSAGE);
    cr_assert_not_null(strstr(err.msg, "is the array '/'; it cannot hold "
                                       "'/b' too"),
                       "%s", err.msg);
    ck_store_close(s);
    cr_assert_not(exists("x.zarr"), "an uncommitted store vanishes");

    err = (ck_err){0};
    cr_assert_eq(ck_store_create(at("y.zarr"), CK_KIND_ZARR, 0, &s, &err),
                 CK_OK);
    create_array(s, "/b", CK_F64, "none");
    spec.name = "/";
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_EUSAGE);
    cr_assert_not_null(strstr(err.msg, "the root cannot be an array"), "%s",
                       err.msg);
    err = (ck_err){0};
    spec.name = "/b/c";
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_EUSAGE);
    cr_assert_not_null(strstr(err.msg, "'/b' is an array; it cannot hold "
                                       "'/b/c'"),
                       "%s", err.msg);
    err = (ck_err){0};
    spec.name = "/b";
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_EUSAGE,
                 "an array that exists: %s", err.msg);
    err = (ck_err){0};
    spec.name = "/../up";
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_EUSAGE);
    ck_store_close(s);
}

Test(zarr, empty_store_is_a_group)
{
    ck_store *s = NULL;
    ck_names l = {0};
    ck_err err = {0};

    cr_assert_eq(ck_store_create(at("e.zarr"), CK_KIND_ZARR, 0, &s, &err),
                 CK_OK);
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);
    cr_assert(exists("e.zarr/.zgroup"));
    s = open_ok("e.zarr");
    cr_assert_eq(ck_store_list(s, &l, &err), CK_OK);
    cr_assert_eq(l.n, 0);
    ck_store_close(s);
}

Test(zarr, zstd_shuffle_is_a_shuffle_filter)
{
    ck_store *s = NULL;
    ck_array_spec spec;
    ck_array *a = NULL;
    ck_err err = {0};

    memset(&spec, 0, sizeof spec);
    spec.name = "/x";
    spec.ndim = 1;
    spec.shape[0] = spec.chunks[0] = 2;
    spec.dtype = CK_F64;
    cr_assert_eq(ck_codec_parse("zstd:3:shuffle", &spec.codec, &err), CK_OK);
    cr_assert_eq(ck_store_create(at("s.zarr"), CK_KIND_ZARR, 0, &s, &err),
                 CK_OK);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_info_of(a)->codec.shuffle, CK_SHUF_BYTE);
    ck_array_close(a);
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);
    s = open_ok("s.zarr");
    cr_assert_eq(ck_array_open(s, "/x", &a, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_info_of(a)->codec.shuffle, CK_SHUF_BYTE,
                 "a shuffle filter of the element size reads back folded");
    cr_assert_eq(ck_array_info_of(a)->codec.nfilters, 0);
    ck_array_close(a);
    ck_store_close(s);
}

/* ---- layouts chunkctl reads but does not write ---- */

Test(zarr, f_order_chunks_read_in_c_order)
{
    /* A 2x3 int16 chunk in F order: element (i, j) at i + 2*j. */
    int16_t f[6] = {0, 10, 1, 11, 2, 12}, c[6];
    int16_t want[6] = {0, 1, 2, 10, 11, 12};

    mk("f.zarr");
    put_zarray("f.zarr", "[2, 3]", "[2, 3]", "<i2", "null", "0", "F", ".");
    put("f.zarr/0.0", f, sizeof f);
    ck_store *s = open_ok("f.zarr");
    ck_array *a = array_ok(s, "/");
    ck_err err = {0};
    int64_t co[2] = {0, 0};

    cr_assert_eq(ck_array_info_of(a)->order, 'F');
    cr_assert_eq(read_one(a, co, c, &err), CK_OK, "%s", err.msg);
    cr_assert_arr_eq(c, want, sizeof want);
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, f_order_3d_compressed_big_endian)
{
    /* shape 2x3x4, F order, >i4, zstd: element (i,j,k) = 100i + 10j + k,
     * stored at i + 2j + 6k, byte-swapped. */
    int32_t f[24], c[24];
    unsigned char z[256];
    size_t zn;

    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                f[i + 2 * j + 6 * k] = (int32_t)__builtin_bswap32(
                    (uint32_t)(100 * i + 10 * j + k));
    zn = ZSTD_compress(z, sizeof z, f, sizeof f, 3);
    cr_assert_not(ZSTD_isError(zn));
    mk("f3.zarr");
    put_zarray("f3.zarr", "[2, 3, 4]", "[2, 3, 4]", ">i4",
               "{\"id\": \"zstd\", \"level\": 3}", "0", "F", ".");
    put("f3.zarr/0.0.0", z, zn);

    ck_store *s = open_ok("f3.zarr");
    ck_array *a = array_ok(s, "");
    ck_err err = {0};
    int64_t co[3] = {0, 0, 0};

    cr_assert(ck_array_info_of(a)->big_endian);
    cr_assert_str_eq(ck_array_info_of(a)->compressor, "zstd:3");
    cr_assert_eq(read_one(a, co, c, &err), CK_OK, "%s", err.msg);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                cr_assert_eq(c[(i * 3 + j) * 4 + k], 100 * i + 10 * j + k);
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, slash_separated_keys)
{
    double v[2] = {1.5, -2.0}, got[2];
    ck_err err = {0};

    mk("sl.zarr");
    put_zarray("sl.zarr", "[4, 2]", "[1, 2]", ">f8", "null", "null", "C", "/");
    mk("sl.zarr/1");
    for (int i = 0; i < 2; i++) {
        uint64_t u;
        memcpy(&u, &v[i], 8);
        u = __builtin_bswap64(u);
        memcpy(&v[i], &u, 8);
    }
    put("sl.zarr/1/0", v, sizeof v);
    put("sl.zarr/1/0.bak", v, sizeof v); /* not a chunk key */

    ck_store *s = open_ok("sl.zarr");
    ck_array *a = array_ok(s, "");
    cr_assert_eq(ck_array_info_of(a)->chunks_stored, 1);
    cr_assert_eq(ck_array_info_of(a)->stored_bytes, 16);
    cr_assert_eq(ck_array_info_of(a)->has_fill, 0);
    int64_t co[2] = {1, 0};
    cr_assert_eq(read_one(a, co, got, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(got[0], 1.5);
    cr_assert_eq(got[1], -2.0);
    co[0] = 3; /* directory 3 does not exist: missing, no fill: zeros */
    got[0] = got[1] = 9;
    cr_assert_eq(read_one(a, co, got, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(got[0], 0.0);
    cr_assert_eq(got[1], 0.0);
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, zero_dimensional_key_is_0)
{
    float v = 2.5f, got = 0;
    ck_err err = {0};

    mk("z0.zarr");
    put_zarray("z0.zarr", "[]", "[]", "<f4", "null", "\"NaN\"", "C", ".");
    put("z0.zarr/0", &v, sizeof v);
    ck_store *s = open_ok("z0.zarr");
    ck_array *a = array_ok(s, "");
    cr_assert_eq(ck_array_info_of(a)->ndim, 0);
    cr_assert_eq(ck_array_info_of(a)->chunks_stored, 1);
    cr_assert_eq(read_one(a, NULL, &got, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(got, 2.5f);
    ck_array_close(a);
    ck_store_close(s);
    cr_assert_eq(unlink(at("z0.zarr/0")), 0);
    s = open_ok("z0.zarr");
    a = array_ok(s, "");
    cr_assert_eq(read_one(a, NULL, &got, &err), CK_OK, "%s", err.msg);
    cr_assert(isnan(got), "missing reads as the fill value");
    ck_array_close(a);
    ck_store_close(s);
}

/* ---- missing and damaged chunks ---- */

Test(zarr, missing_chunks_read_as_fill)
{
    int64_t got[4], co[1] = {1};
    ck_err err = {0};

    mk("m.zarr");
    put_zarray("m.zarr", "[8]", "[4]", "<i8",
               "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, "
               "\"shuffle\": 1}",
               "-9223372036854775807", "C", ".");
    ck_store *s = open_ok("m.zarr");
    ck_array *a = array_ok(s, "");
    cr_assert_eq(ck_array_info_of(a)->chunks_stored, 0);
    cr_assert_eq(ck_array_info_of(a)->stored_bytes, 0);
    cr_assert_eq(read_one(a, co, got, &err), CK_OK, "%s", err.msg);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(got[i], INT64_MIN + 1);
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, wrong_size_chunk_is_corrupt)
{
    char ten[10] = {0};
    double got[8];
    int64_t co[2] = {0, 3};
    ck_err err = {0};

    mk("s.zarr");
    put_zarray("s.zarr", "[2, 20]", "[2, 4]", "<f8", "null", "0", "C", ".");
    put("s.zarr/0.3", ten, sizeof ten);
    ck_store *s = open_ok("s.zarr");
    ck_array *a = array_ok(s, "");
    cr_assert_eq(read_one(a, co, got, &err), CK_ECORRUPT);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want,
             "%s: chunk 0.3 (coords (0, 3)): 10 bytes, expected 64",
             at("s.zarr"));
    cr_assert_str_eq(err.msg, want);
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, compressed_chunk_that_decodes_wrong_is_corrupt)
{
    double one[2] = {1, 2}, got[8];
    unsigned char z[128];
    size_t zn = ZSTD_compress(z, sizeof z, one, sizeof one, 1);
    int64_t co[1] = {0};
    ck_err err = {0};

    mk("c.zarr");
    put_zarray("c.zarr", "[8]", "[8]", "<f8", "{\"id\": \"zstd\"}", "0", "C",
               ".");
    put("c.zarr/0", z, zn);
    ck_store *s = open_ok("c.zarr");
    ck_array *a = array_ok(s, "");
    cr_assert_str_eq(ck_array_info_of(a)->compressor, "zstd:1");
    cr_assert_eq(read_one(a, co, got, &err), CK_ECORRUPT);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "%s: chunk 0 (coords (0)): ", at("c.zarr"));
    cr_assert_eq(strncmp(err.msg, want, strlen(want)), 0, "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);

    err = (ck_err){0};
    put_text("c.zarr/0", "this is not zstd data at all");
    s = open_ok("c.zarr");
    a = array_ok(s, "");
    cr_assert_eq(read_one(a, co, got, &err), CK_ECORRUPT);
    cr_assert_eq(strncmp(err.msg, want, strlen(want)), 0, "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, oversized_compressed_chunk_is_corrupt_without_reading)
{
    int64_t co[1] = {0};
    uint8_t got[16];
    ck_err err = {0};
    int fd;

    mk("o.zarr");
    put_zarray("o.zarr", "[16]", "[16]", "|u1", "{\"id\": \"zlib\"}", "0", "C",
               ".");
    /* A sparse 1 GiB chunk file for 16 bytes of data. */
    fd = open(at("o.zarr/0"), O_WRONLY | O_CREAT, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)1 << 30), 0);
    close(fd);
    ck_store *s = open_ok("o.zarr");
    ck_array *a = array_ok(s, "");
    cr_assert_eq(read_one(a, co, got, &err), CK_ECORRUPT);
    cr_assert_not_null(strstr(err.msg, "chunk 0 (coords (0)): 1073741824 "
                                       "bytes stored, more than any codec "
                                       "makes of 16"),
                       "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);
}

/* ---- links out of the store ---- */

Test(zarr, symlinked_chunk_is_refused)
{
    double secret[2] = {42, 43}, got[2];
    int64_t co[1] = {0};
    ck_err err = {0};

    put("secret.bin", secret, sizeof secret);
    mk("l.zarr");
    put_zarray("l.zarr", "[2]", "[2]", "<f8", "null", "0", "C", ".");
    cr_assert_eq(symlink(at("secret.bin"), at("l.zarr/0")), 0);
    ck_store *s = open_ok("l.zarr");
    ck_array *a = array_ok(s, "");
    cr_assert_eq(ck_array_info_of(a)->chunks_stored, 0,
                 "links are not counted");
    cr_assert_eq(read_one(a, co, got, &err), CK_ECORRUPT);
    char want[PATH_MAX + 160];
    snprintf(want, sizeof want,
             "%s: chunk 0 is a symlink (chunkctl refuses symlinked chunks, "
             "which could lead out of the store)",
             at("l.zarr"));
    cr_assert_str_eq(err.msg, want);
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, symlinked_key_directory_is_refused)
{
    double secret[2] = {42, 43}, got[2];
    int64_t co[2] = {0, 0};
    ck_err err = {0};

    mk("outside");
    put("outside/0", secret, sizeof secret);
    mk("ls.zarr");
    put_zarray("ls.zarr", "[1, 2]", "[1, 2]", "<f8", "null", "0", "C", "/");
    cr_assert_eq(symlink(at("outside"), at("ls.zarr/0")), 0);
    ck_store *s = open_ok("ls.zarr");
    ck_array *a = array_ok(s, "");
    cr_assert_eq(read_one(a, co, got, &err), CK_ECORRUPT);
    cr_assert_not_null(strstr(err.msg, "chunk 0/0 is a symlink"), "%s",
                       err.msg);
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, array_directory_leading_out_of_the_store_is_refused)
{
    ck_array *a = NULL;
    ck_err err = {0};

    mk("elsewhere");
    put_zarray("elsewhere", "[2]", "[2]", "<f8", "null", "0", "C", ".");
    mk("g.zarr");
    put_text("g.zarr/.zgroup", "{\"zarr_format\": 2}");
    cr_assert_eq(symlink(at("elsewhere"), at("g.zarr/x")), 0);
    ck_store *s = open_ok("g.zarr");
    cr_assert_neq(ck_array_open(s, "/x", &a, &err), CK_OK);
    /* Links are not listed, so io/store.c reports an unknown name; the
     * table says why. */
    err = (ck_err){0};
    a = calloc(1, sizeof *a);
    a->store = s;
    cr_assert_eq(s->ops->array_open(s, "/x", a, &err), CK_EFORMAT);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "%s:/x is a symlink leading out of the store",
             at("g.zarr"));
    cr_assert_str_eq(err.msg, want);
    free(a);
    ck_store_close(s);
}

Test(zarr, symlink_inside_the_store_to_an_array_is_followed)
{
    ck_names l = {0};
    ck_err err = {0};

    mk("in.zarr");
    put_text("in.zarr/.zgroup", "{\"zarr_format\": 2}");
    mk("in.zarr/real");
    put_zarray("in.zarr/real", "[2]", "[2]", "<f8", "null", "0", "C", ".");
    cr_assert_eq(symlink("real", at("in.zarr/alias")), 0);
    ck_store *s = open_ok("in.zarr");
    cr_assert_eq(ck_store_list(s, &l, &err), CK_OK);
    cr_assert_eq(l.n, 1, "links are not listed");
    cr_assert_str_eq(l.v[0], "/real");
    ck_names_release(&l);
    ck_array *a = array_ok(s, "/alias");
    ck_array_close(a);
    ck_store_close(s);
}

Test(zarr, symlinked_zarray_is_refused)
{
    ck_array *a = NULL;
    ck_err err = {0};

    mk("elsewhere");
    put_zarray("elsewhere", "[2]", "[2]", "<f8", "null", "0", "C", ".");
    mk("sz.zarr");
    put_text("sz.zarr/.zgroup", "{\"zarr_format\": 2}");
    mk("sz.zarr/x");
    cr_assert_eq(symlink(at("elsewhere/.zarray"), at("sz.zarr/x/.zarray")), 0);
    ck_store *s = open_ok("sz.zarr");
    cr_assert_neq(ck_array_open(s, "/x", &a, &err), CK_OK);
    err = (ck_err){0};
    a = calloc(1, sizeof *a);
    a->store = s;
    cr_assert_eq(s->ops->array_open(s, "/x", a, &err), CK_EFORMAT);
    free(a);
    cr_assert_not_null(strstr(err.msg, "/x/.zarray is a symlink"), "%s",
                       err.msg);
    ck_store_close(s);
}

/* ---- bad metadata ---- */

Test(zarr, invalid_zarray_json)
{
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};

    mk("j.zarr");
    put_text("j.zarr/.zarray", "{\"zarr_format\": 2,\n \"shape\": [1}");
    cr_assert_eq(ck_store_open(at("j.zarr"), &s, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_open(s, "", &a, &err), CK_EFORMAT);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want,
             "%s/.zarray: invalid JSON near line 2 column 13", at("j.zarr"));
    cr_assert_str_eq(err.msg, want);
    ck_store_close(s);
}

Test(zarr, huge_zarray_is_an_error_not_an_allocation)
{
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};
    int fd;

    mk("h.zarr");
    fd = open(at("h.zarr/.zarray"), O_WRONLY | O_CREAT, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)CK_ZARR_META_MAX + 1), 0);
    close(fd);
    cr_assert_eq(ck_store_open(at("h.zarr"), &s, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_open(s, "/", &a, &err), CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, ".zarray: 16777217 bytes is too large "
                                       "for zarr metadata"),
                       "%s", err.msg);
    ck_store_close(s);
}

Test(zarr, unsupported_compressor_and_filters)
{
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};

    mk("u.zarr");
    put_zarray("u.zarr", "[2]", "[2]", "<f8", "{\"id\": \"zfpy\", \"mode\": 1}",
               "0", "C", ".");
    s = open_ok("u.zarr");
    cr_assert_eq(ck_array_open(s, "", &a, &err), CK_ENOTSUP);
    cr_assert_not_null(strstr(err.msg, "compressor 'zfpy' is not supported"),
                       "%s", err.msg);
    ck_store_close(s);

    err = (ck_err){0};
    put_text("u.zarr/.zarray",
             "{\"zarr_format\": 2, \"shape\": [2], \"chunks\": [2], "
             "\"dtype\": \"<f8\", \"compressor\": null, \"fill_value\": 0, "
             "\"order\": \"C\", \"filters\": [{\"id\": \"crc32\"}]}");
    s = open_ok("u.zarr");
    cr_assert_eq(ck_array_open(s, "", &a, &err), CK_ENOTSUP);
    cr_assert_not_null(strstr(err.msg, "filter 'crc32' is not supported"), "%s",
                       err.msg);
    ck_store_close(s);
}

Test(zarr, shape_overflow_is_a_format_error)
{
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};

    mk("ov.zarr");
    put_zarray("ov.zarr", "[4294967296, 4294967296]",
               "[4294967296, 4294967296]", "<f8", "null", "0", "C", ".");
    s = open_ok("ov.zarr");
    cr_assert_eq(ck_array_open(s, "", &a, &err), CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, "more elements"), "%s", err.msg);
    ck_store_close(s);
}

Test(zarr, zarr_v3_array_missing_keys_is_refused)
{
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};

    mk("v3.zarr");
    put_text("v3.zarr/zarr.json", "{\"zarr_format\": 3, \"node_type\": "
                                  "\"array\"}");
    s = open_ok("v3.zarr");
    cr_assert_eq(ck_array_open(s, "", &a, &err), CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, "zarr.json: missing key 'shape'"), "%s",
                       err.msg);
    ck_store_close(s);
}

Test(zarr, zarr_v2_and_v3_in_one_node_is_refused)
{
    ck_store *s = NULL;
    ck_err err = {0};

    mk("mixed.zarr");
    put_text("mixed.zarr/zarr.json", "{\"zarr_format\": 3, \"node_type\": "
                                     "\"group\"}");
    put_text("mixed.zarr/.zgroup", "{\"zarr_format\": 2}");
    cr_assert_eq(ck_store_open(at("mixed.zarr"), &s, &err), CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, "both zarr v2"), "%s", err.msg);
}

Test(zarr, zgroup_with_another_format_is_refused)
{
    ck_store *s = NULL;
    ck_err err = {0};

    mk("g3.zarr");
    put_text("g3.zarr/.zgroup", "{\"zarr_format\": 3}");
    cr_assert_eq(ck_store_open(at("g3.zarr"), &s, &err), CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, ".zgroup: zarr_format is not 2"), "%s",
                       err.msg);
}

Test(zarr, unknown_and_group_names)
{
    ck_array *a = NULL;
    ck_err err = {0};

    mk("n.zarr");
    put_text("n.zarr/.zgroup", "{\"zarr_format\": 2}");
    mk("n.zarr/g");
    put_text("n.zarr/g/.zgroup", "{\"zarr_format\": 2}");
    ck_store *s = open_ok("n.zarr");
    /* Straight to the table: io/store.c rewrites unknown names. */
    a = calloc(1, sizeof *a);
    a->store = s;
    cr_assert_eq(s->ops->array_open(s, "/g", a, &err), CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, "'/g' is a group, not an array"), "%s",
                       err.msg);
    err = (ck_err){0};
    cr_assert_eq(s->ops->array_open(s, "/nope", a, &err), CK_EFORMAT);
    cr_assert_not_null(strstr(err.msg, "no array '/nope'"), "%s", err.msg);
    err = (ck_err){0};
    cr_assert_eq(s->ops->array_open(s, "/g/../g", a, &err), CK_EUSAGE);
    free(a);
    ck_store_close(s);
}

/* ---- attributes ---- */

Test(zarr, attributes_round_trip)
{
    ck_store *s = NULL, *d = NULL;
    char *json = NULL;
    ck_err err = {0};

    mk("a.zarr");
    put_text("a.zarr/.zgroup", "{\"zarr_format\": 2}");
    put_text("a.zarr/.zattrs", "{\"title\": \"t\", \"n\": [1, 2]}");
    mk("a.zarr/x");
    put_zarray("a.zarr/x", "[2]", "[2]", "<f8", "null", "0", "C", ".");
    put_text("a.zarr/x/.zattrs", "{\"units\": \"m\"}");
    mk("a.zarr/y");
    put_zarray("a.zarr/y", "[2]", "[2]", "<f8", "null", "0", "C", ".");
    s = open_ok("a.zarr");
    cr_assert_eq(s->ops->get_attrs(s, "/y", &json, &err), CK_OK);
    cr_assert_str_eq(json, "{}");
    free(json);

    cr_assert_eq(ck_store_create(at("b.zarr"), CK_KIND_ZARR, 0, &d, &err),
                 CK_OK);
    cr_assert_eq(ck_store_copy_attrs(s, "/", d, "/", &err), CK_OK, "%s",
                 err.msg);
    create_array(d, "/g/x", CK_F64, "none");
    cr_assert_eq(ck_store_copy_attrs(s, "/x", d, "/g/x", &err), CK_OK, "%s",
                 err.msg);
    cr_assert_eq(ck_store_copy_attrs(s, "/x", d, "/h", &err), CK_OK,
                 "attributes of a new group make it: %s", err.msg);
    cr_assert_eq(ck_store_commit(d, &err), CK_OK, "%s", err.msg);
    ck_store_close(d);
    ck_store_close(s);

    d = open_ok("b.zarr");
    cr_assert_eq(d->ops->get_attrs(d, "/", &json, &err), CK_OK, "%s", err.msg);
    cr_assert_not_null(strstr(json, "\"title\""), "%s", json);
    free(json);
    cr_assert_eq(d->ops->get_attrs(d, "/g/x", &json, &err), CK_OK);
    cr_assert_not_null(strstr(json, "\"units\""), "%s", json);
    free(json);
    cr_assert(exists("b.zarr/h/.zgroup"));
    cr_assert(exists("b.zarr/h/.zattrs"));
    ck_store_close(d);
}

Test(zarr, bad_attributes)
{
    ck_store *s = NULL;
    char *json = NULL;
    ck_err err = {0};

    mk("ba.zarr");
    put_text("ba.zarr/.zgroup", "{\"zarr_format\": 2}");
    put_text("ba.zarr/.zattrs", "[1, 2]");
    s = open_ok("ba.zarr");
    cr_assert_eq(s->ops->get_attrs(s, "/", &json, &err), CK_EFORMAT);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "%s/.zattrs: not a JSON object", at("ba.zarr"));
    cr_assert_str_eq(err.msg, want);
    cr_assert_null(json);
    ck_store_close(s);
}

/* ---- info and threads ---- */

Test(zarr, stored_bytes_and_count)
{
    char a4[4] = {1, 2, 3, 4};

    mk("st.zarr");
    put_zarray("st.zarr", "[4, 4]", "[2, 2]", "|u1", "null", "0", "C", ".");
    put("st.zarr/0.0", a4, 4);
    put("st.zarr/1.1", a4, 4);
    put("st.zarr/1.1.1", a4, 4); /* three numbers: not a key here */
    put("st.zarr/x.1", a4, 4);
    ck_store *s = open_ok("st.zarr");
    ck_array *a = array_ok(s, "");
    cr_assert_eq(ck_array_info_of(a)->chunks_stored, 2);
    cr_assert_eq(ck_array_info_of(a)->stored_bytes, 8);
    cr_assert_str_eq(ck_array_info_of(a)->compressor, "none");
    ck_array_close(a);
    ck_store_close(s);
}

struct par_ctx {
    ck_array *a;
    int bad;
};

static ck_code read_all(void *ctx, int worker, ck_par *par, ck_err *err)
{
    struct par_ctx *p = ctx;
    const ck_grid *g = ck_array_grid(p->a);
    size_t cb = (size_t)g->chunk_nelem * 4;
    ck_arena ar = CK_ARENA_INIT;
    int32_t *buf = malloc(cb);
    ck_chunk c;
    ck_code rc = CK_OK;

    (void)par;
    CK_TRY(ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(p->a), "t", err));
    for (int rep = 0; rep < 20 && rc == CK_OK; rep++) {
        ck_iter it = ck_iter_all(g);
        while (rc == CK_OK && ck_iter_next(&it, &c)) {
            ck_arena_reset(&ar);
            rc = ck_array_read_chunk(p->a, c.coords, buf, &ar, err);
            for (int64_t i = 0; rc == CK_OK && i < g->chunk_nelem; i++)
                if (buf[i] != (int32_t)(c.index * 1000 + i + worker * 0))
                    __atomic_store_n(&p->bad, 1, __ATOMIC_RELAXED);
        }
    }
    free(buf);
    ck_arena_release(&ar);
    return rc;
}

Test(zarr, concurrent_reads_of_one_array)
{
    ck_store *s = NULL;
    ck_array_spec spec;
    ck_array *a = NULL;
    ck_arena ar = CK_ARENA_INIT;
    ck_err err = {0};
    int32_t buf[64];
    ck_chunk c;

    memset(&spec, 0, sizeof spec);
    spec.name = "/";
    spec.ndim = 2;
    spec.shape[0] = 64;
    spec.shape[1] = 64;
    spec.chunks[0] = 8;
    spec.chunks[1] = 8;
    spec.dtype = CK_I32;
    cr_assert_eq(ck_codec_parse("blosc:lz4:5:shuffle", &spec.codec, &err),
                 CK_OK);
    cr_assert_eq(ck_store_create(at("p.zarr"), CK_KIND_ZARR, 0, &s, &err),
                 CK_OK);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(
        ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(a), "t", &err),
        CK_OK);
    ck_iter it = ck_iter_all(ck_array_grid(a));
    while (ck_iter_next(&it, &c)) {
        for (int i = 0; i < 64; i++)
            buf[i] = (int32_t)(c.index * 1000 + i);
        ck_arena_reset(&ar);
        cr_assert_eq(ck_array_write_chunk(a, c.coords, buf, &ar, &err), CK_OK,
                     "%s", err.msg);
    }
    ck_arena_release(&ar);
    ck_array_close(a);
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);

    s = open_ok("p.zarr");
    struct par_ctx p = {array_ok(s, ""), 0};
    cr_assert_eq(ck_par_run(4, read_all, &p, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(p.bad, 0);
    ck_array_close(p.a);
    ck_store_close(s);
}

Test(zarr, sniff)
{
    mk("sn.zarr");
    cr_assert_eq(ck_zarr_sniff(at("sn.zarr")), 0);
    put_text("sn.zarr/.zgroup", "{\"zarr_format\": 2}");
    cr_assert_eq(ck_zarr_sniff(at("sn.zarr")), 1);
    cr_assert_eq(ck_zarr_sniff(at("sn.zarr/.zgroup")), 0);
    cr_assert_eq(ck_zarr_sniff(at("nothing")), 0);
}
