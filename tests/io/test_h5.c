/*
 * tests/io/test_h5.c - the Criterion suite "h5": io/hdf5 as a store.
 * Fixture files are written with the raw HDF5 C API into a fresh mkdtemp
 * directory (HDF5 is the independent implementation here); files chunkctl
 * writes are read back both through the store and through plain H5Dread.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <hdf5.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/hdf5/zstd_filter.h"
#include "io/store.h"
#include "io/store_impl.h"

static char dir[64];

static int rm_cb(const char *p, const struct stat *sb, int flag,
                 struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ck_h5_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void teardown(void)
{
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(h5, .init = setup, .fini = teardown,
          .description = "io/hdf5: HDF5 files as chunkctl stores");

static const char *in_dir(const char *name)
{
    static char buf[4][256];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

/* ---- fixtures ---- */

static hid_t new_file(const char *name, hsize_t userblock)
{
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), f;
    if (userblock)
        H5Pset_userblock(fcpl, userblock);
    f = H5Fcreate(in_dir(name), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    H5Pclose(fcpl);
    cr_assert(f >= 0);
    return f;
}

/* Creates dataset name with file type ftype and writes data (memory type
 * mtype) unless data is NULL.  dcpl may be H5P_DEFAULT. */
static void put(hid_t f, const char *name, hid_t ftype, int ndim,
                const hsize_t *dims, hid_t dcpl, hid_t mtype, const void *data)
{
    hid_t space =
        ndim ? H5Screate_simple(ndim, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), d;
    H5Pset_create_intermediate_group(lcpl, 1);
    d = H5Dcreate2(f, name, ftype, space, lcpl, dcpl, H5P_DEFAULT);
    cr_assert(d >= 0, "create %s", name);
    if (data)
        cr_assert(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(d);
    H5Pclose(lcpl);
    H5Sclose(space);
}

static hid_t chunked(int ndim, const hsize_t *chunks)
{
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, ndim, chunks);
    return dcpl;
}

static hid_t bool_type(hid_t base)
{
    hid_t e = H5Tenum_create(base);
    int8_t v0 = 0, v1 = 1;
    H5Tenum_insert(e, "FALSE", &v0);
    H5Tenum_insert(e, "TRUE", &v1);
    return e;
}

/* ---- reading helpers ---- */

static void write_all(ck_array *a, const void *src);

static ck_store *open_store(const char *name)
{
    ck_store *s = NULL;
    ck_err err = {0};
    cr_assert_eq(ck_store_open(in_dir(name), &s, &err), CK_OK, "%s", err.msg);
    return s;
}

static ck_array *open_array(ck_store *s, const char *name)
{
    ck_array *a = NULL;
    ck_err err = {0};
    cr_assert_eq(ck_array_open(s, name, &a, &err), CK_OK, "%s", err.msg);
    return a;
}

/* Reads every chunk with an arena of exactly ck_array_scratch_bytes() and
 * assembles the whole array (C order, native) into a malloc'd buffer. */
static void *read_all(ck_array *a)
{
    const ck_grid *g = ck_array_grid(a);
    const ck_array_info *info = ck_array_info_of(a);
    size_t es = ck_dtype_size(info->dtype);
    char *out = calloc((size_t)(g->nelem ? g->nelem : 1), es);
    char *chunk = malloc((size_t)g->chunk_nelem * es);
    int64_t zero[CK_MAX_DIMS] = {0};
    ck_arena ar = CK_ARENA_INIT;
    ck_err err = {0};
    ck_iter it = ck_iter_all(g);
    ck_chunk c;

    cr_assert_eq(
        ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(a), "test", &err),
        CK_OK);
    while (ck_iter_next(&it, &c)) {
        cr_assert_eq(ck_array_read_chunk(a, c.coords, chunk, &ar, &err), CK_OK,
                     "%s", err.msg);
        if (g->ndim == 0)
            memcpy(out, chunk, es);
        else
            ck_box_copy(g->ndim, es, out, g->shape, c.start, chunk, g->chunk,
                        zero, NULL, c.shape);
        ck_arena_reset(&ar);
    }
    ck_arena_release(&ar);
    free(chunk);
    return out;
}

static ck_code read_one(ck_array *a, const int64_t *coords, void *dst,
                        ck_err *err)
{
    ck_arena ar = CK_ARENA_INIT;
    ck_code rc;
    cr_assert_eq(
        ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(a), "test", err),
        CK_OK);
    rc = ck_array_read_chunk(a, coords, dst, &ar, err);
    ck_arena_release(&ar);
    return rc;
}

/* ---- reading ---- */

Test(h5, sniff_finds_the_signature_after_a_user_block)
{
    hid_t f = new_file("ub.h5", 1024);
    FILE *t;
    H5Fclose(f);
    cr_assert(ck_h5_sniff(in_dir("ub.h5")));
    t = fopen(in_dir("text.h5"), "w");
    fputs("hello, not hdf5\n", t);
    fclose(t);
    cr_assert_not(ck_h5_sniff(in_dir("text.h5")));
    cr_assert_not(ck_h5_sniff(in_dir("missing.h5")));
}

Test(h5, dangling_names_links_that_lead_nowhere)
{
    hsize_t dims[1] = {3};
    int v[3] = {1, 2, 3};
    hid_t f = new_file("ln.h5", 0);
    ck_names l = {0};
    ck_err err = {0};

    put(f, "/a", H5T_STD_I32LE, 1, dims, H5P_DEFAULT, H5T_NATIVE_INT, v);
    cr_assert_geq(H5Lcreate_soft("/a", f, "ok", H5P_DEFAULT, H5P_DEFAULT), 0);
    cr_assert_geq(H5Lcreate_soft("/nope", f, "soft", H5P_DEFAULT, H5P_DEFAULT),
                  0);
    cr_assert_geq(H5Lcreate_external("nofile.h5", "/x", f, "ext", H5P_DEFAULT,
                                     H5P_DEFAULT),
                  0);
    H5Fclose(f);
    ck_store *s = open_store("ln.h5");
    cr_assert_eq(ck_store_dangling(s, &l, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(l.n, 2);
    cr_assert(strstr(l.v[0], "ln.h5: '/ext' is an external link to "
                             "nofile.h5:/x, which cannot be opened"),
              "%s", l.v[0]);
    cr_assert(strstr(l.v[1], "ln.h5: '/soft' is a soft link to '/nope', "
                             "which does not exist"),
              "%s", l.v[1]);
    ck_names_release(&l);
    ck_store_close(s);
}

Test(h5, reads_shuffle_deflate_with_edge_chunks)
{
    hsize_t dims[2] = {10, 7}, ch[2] = {4, 3};
    int32_t data[70];
    hid_t f = new_file("a.h5", 0), dcpl = chunked(2, ch);
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 4);
    for (int i = 0; i < 70; i++)
        data[i] = i * 1000 - 7;
    put(f, "/x", H5T_STD_I32LE, 2, dims, dcpl, H5T_NATIVE_INT32, data);
    H5Pclose(dcpl);
    H5Fclose(f);

    ck_store *s = open_store("a.h5");
    ck_array *a = open_array(s, "/x");
    const ck_array_info *info = ck_array_info_of(a);
    cr_assert_eq(info->dtype, CK_I32);
    cr_assert_eq(info->ndim, 2);
    cr_assert_eq(info->chunks[0], 4);
    cr_assert_eq(info->chunks[1], 3);
    cr_assert_eq(info->layout, CK_LAYOUT_CHUNKED);
    cr_assert_eq(info->codec.id, CK_CODEC_ZLIB);
    cr_assert_eq(info->codec.level, 4);
    cr_assert_eq(info->codec.shuffle, CK_SHUF_BYTE);
    cr_assert_str_eq(info->compressor, "gzip:4:shuffle");
    cr_assert_eq(info->chunks_stored, 9);
    cr_assert_gt(info->stored_bytes, 0);
    cr_assert_eq(info->order, 'C');
    int32_t *got = read_all(a);
    cr_assert_arr_eq(got, data, sizeof data);
    free(got);
    ck_array_close(a);
    ck_store_close(s);
}

Test(h5, missing_chunks_read_as_the_fill_value)
{
    hsize_t dims[1] = {10}, ch[1] = {4}, start = 0, count = 4;
    int16_t fill = 42, data[4] = {1, 2, 3, 4}, got[4];
    hid_t f = new_file("fill.h5", 0), dcpl = chunked(1, ch), d, fs, ms;
    H5Pset_deflate(dcpl, 1);
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT16, &fill);
    put(f, "/x", H5T_STD_I16BE, 1, dims, dcpl, 0, NULL);
    d = H5Dopen2(f, "/x", H5P_DEFAULT);
    fs = H5Dget_space(d);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
    ms = H5Screate_simple(1, &count, NULL);
    H5Dwrite(d, H5T_NATIVE_INT16, ms, fs, H5P_DEFAULT, data);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Fclose(f);

    ck_store *s = open_store("fill.h5");
    ck_array *a = open_array(s, "x");
    const ck_array_info *info = ck_array_info_of(a);
    ck_err err = {0};
    cr_assert(info->big_endian);
    cr_assert(info->has_fill);
    cr_assert_eq(info->fill.i, 42);
    cr_assert_eq(info->chunks_stored, 1);
    cr_assert_eq(read_one(a, (int64_t[]){0}, got, &err), CK_OK, "%s", err.msg);
    cr_assert_arr_eq(got, data, sizeof data);
    cr_assert_eq(read_one(a, (int64_t[]){2}, got, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(got[0], 42);
    cr_assert_eq(got[3], 42);
    ck_array_close(a);
    ck_store_close(s);
}

Test(h5, default_fill_is_zero_and_undefined_fill_is_none)
{
    hsize_t dims[1] = {4}, ch[1] = {2};
    hid_t f = new_file("f0.h5", 0), dcpl = chunked(1, ch);
    put(f, "/dflt", H5T_IEEE_F32LE, 1, dims, dcpl, 0, NULL);
    H5Pset_fill_value(dcpl, H5T_NATIVE_FLOAT, NULL);
    put(f, "/undef", H5T_IEEE_F32LE, 1, dims, dcpl, 0, NULL);
    H5Pclose(dcpl);
    H5Fclose(f);

    ck_store *s = open_store("f0.h5");
    ck_array *a = open_array(s, "/dflt"), *b = open_array(s, "/undef");
    float got[2] = {1, 1};
    ck_err err = {0};
    cr_assert(ck_array_info_of(a)->has_fill);
    cr_assert_eq(ck_array_info_of(a)->fill.f, 0.0);
    cr_assert_not(ck_array_info_of(b)->has_fill);
    cr_assert_eq(ck_array_info_of(a)->chunks_stored, 0);
    cr_assert_eq(read_one(b, (int64_t[]){1}, got, &err), CK_OK);
    cr_assert_eq(got[0], 0.0f);
    cr_assert_eq(got[1], 0.0f);
    ck_array_close(a);
    ck_array_close(b);
    ck_store_close(s);
}

Test(h5, big_endian_floats_come_back_native)
{
    hsize_t dims[2] = {5, 6}, ch[2] = {2, 4};
    double data[30];
    hid_t f = new_file("be.h5", 0), dcpl = chunked(2, ch);
    for (int i = 0; i < 30; i++)
        data[i] = i * 0.25 - 3;
    put(f, "/contig", H5T_IEEE_F64BE, 2, dims, H5P_DEFAULT, H5T_NATIVE_DOUBLE,
        data);
    put(f, "/plain", H5T_IEEE_F64BE, 2, dims, dcpl, H5T_NATIVE_DOUBLE, data);
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 9);
    put(f, "/packed", H5T_IEEE_F64BE, 2, dims, dcpl, H5T_NATIVE_DOUBLE, data);
    H5Pclose(dcpl);
    H5Fclose(f);

    ck_store *s = open_store("be.h5");
    const char *names[] = {"/contig", "/plain", "/packed"};
    for (int k = 0; k < 3; k++) {
        ck_array *a = open_array(s, names[k]);
        cr_assert(ck_array_info_of(a)->big_endian);
        cr_assert_eq(ck_array_info_of(a)->dtype, CK_F64);
        double *got = read_all(a);
        cr_assert_arr_eq(got, data, sizeof data, "%s", names[k]);
        free(got);
        ck_array_close(a);
    }
    ck_store_close(s);
}

Test(h5, fletcher32_reads_through_hdf5)
{
    hsize_t dims[1] = {100}, ch[1] = {30};
    uint16_t data[100];
    hid_t f = new_file("fl.h5", 0), dcpl = chunked(1, ch);
    for (int i = 0; i < 100; i++)
        data[i] = (uint16_t)(i * 613);
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 4);
    H5Pset_fletcher32(dcpl);
    put(f, "/x", H5T_STD_U16LE, 1, dims, dcpl, H5T_NATIVE_UINT16, data);
    H5Pclose(dcpl);
    H5Fclose(f);

    ck_store *s = open_store("fl.h5");
    ck_array *a = open_array(s, "/x");
    cr_assert_str_eq(ck_array_info_of(a)->compressor,
                     "gzip:4+shuffle+fletcher32");
    uint16_t *got = read_all(a);
    cr_assert_arr_eq(got, data, sizeof data);
    free(got);
    ck_array_close(a);
    ck_store_close(s);
}

Test(h5, contiguous_reads_in_virtual_chunks)
{
    /* 3 x 1500 x 1000 bytes: one 1.5 MB plane fits 4 MiB, two do. */
    hsize_t dims[3] = {3, 1500, 1000};
    size_t n = 3 * 1500 * 1000;
    uint8_t *data = malloc(n);
    hid_t f = new_file("c.h5", 0);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 31 + i / 1000);
    put(f, "/x", H5T_STD_U8LE, 3, dims, H5P_DEFAULT, H5T_NATIVE_UINT8, data);
    H5Fclose(f);

    ck_store *s = open_store("c.h5");
    ck_array *a = open_array(s, "/x");
    const ck_array_info *info = ck_array_info_of(a);
    cr_assert_eq(info->layout, CK_LAYOUT_CONTIGUOUS);
    cr_assert_eq(info->chunks[0], 2);
    cr_assert_eq(info->chunks[1], 1500);
    cr_assert_eq(info->chunks[2], 1000);
    cr_assert_eq(info->chunks_stored, -1);
    cr_assert_str_eq(info->compressor, "none");
    uint8_t *got = read_all(a);
    cr_assert(memcmp(got, data, n) == 0);
    free(got);
    free(data);
    ck_array_close(a);
    ck_store_close(s);
}

Test(h5, virtual_chunks_split_a_long_last_axis)
{
    hsize_t dims[2] = {3, 600000};
    size_t n = 3 * 600000;
    int64_t *data = malloc(n * 8);
    hid_t f = new_file("c2.h5", 0);
    for (size_t i = 0; i < n; i++)
        data[i] = (int64_t)i * 3 - 5;
    put(f, "/x", H5T_STD_I64LE, 2, dims, H5P_DEFAULT, H5T_NATIVE_INT64, data);
    H5Fclose(f);

    ck_store *s = open_store("c2.h5");
    ck_array *a = open_array(s, "/x");
    cr_assert_eq(ck_array_info_of(a)->chunks[0], 1);
    cr_assert_eq(ck_array_info_of(a)->chunks[1], 524288);
    int64_t *got = read_all(a);
    cr_assert(memcmp(got, data, n * 8) == 0);
    free(got);
    free(data);
    ck_array_close(a);
    ck_store_close(s);
}

Test(h5, user_block_offsets_are_honoured)
{
    hsize_t dims[1] = {1000}, ch[1] = {300};
    int32_t data[1000];
    hid_t f = new_file("ub.h5", 512), dcpl = chunked(1, ch);
    for (int i = 0; i < 1000; i++)
        data[i] = i - 500;
    put(f, "/contig", H5T_STD_I32LE, 1, dims, H5P_DEFAULT, H5T_NATIVE_INT32,
        data);
    put(f, "/plain", H5T_STD_I32LE, 1, dims, dcpl, H5T_NATIVE_INT32, data);
    H5Pset_deflate(dcpl, 1);
    put(f, "/packed", H5T_STD_I32LE, 1, dims, dcpl, H5T_NATIVE_INT32, data);
    H5Pclose(dcpl);
    H5Fclose(f);

    ck_store *s = open_store("ub.h5");
    const char *names[] = {"/contig", "/plain", "/packed"};
    for (int k = 0; k < 3; k++) {
        ck_array *a = open_array(s, names[k]);
        int32_t *got = read_all(a);
        cr_assert_arr_eq(got, data, sizeof data, "%s", names[k]);
        free(got);
        ck_array_close(a);
    }
    ck_store_close(s);
}

Test(h5, compact_and_scalar_datasets)
{
    hsize_t dims[2] = {2, 3};
    float data[6] = {1, 2, 3, 4, 5, 6}, got[6], one = 0;
    double pi = 3.25, gotd = 0;
    hid_t f = new_file("k.h5", 0), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    ck_err err = {0};
    H5Pset_layout(dcpl, H5D_COMPACT);
    put(f, "/k", H5T_IEEE_F32LE, 2, dims, dcpl, H5T_NATIVE_FLOAT, data);
    put(f, "/s", H5T_IEEE_F64LE, 0, NULL, H5P_DEFAULT, H5T_NATIVE_DOUBLE, &pi);
    H5Pclose(dcpl);
    H5Fclose(f);
    (void)one;

    ck_store *s = open_store("k.h5");
    ck_array *a = open_array(s, "/k"), *b = open_array(s, "/s");
    cr_assert_eq(ck_array_info_of(a)->layout, CK_LAYOUT_COMPACT);
    cr_assert_eq(ck_array_info_of(a)->chunks[0], 2);
    cr_assert_eq(ck_array_info_of(a)->chunks[1], 3);
    cr_assert_eq(read_one(a, (int64_t[]){0, 0}, got, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_arr_eq(got, data, sizeof data);
    cr_assert_eq(ck_array_info_of(b)->ndim, 0);
    cr_assert_eq(read_one(b, NULL, &gotd, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(gotd, 3.25);
    ck_array_close(a);
    ck_array_close(b);
    ck_store_close(s);
}

Test(h5, h5py_bool_enum_is_bool)
{
    hsize_t dims[1] = {5}, ch[1] = {2};
    int8_t data[5] = {1, 0, 0, 1, 1};
    hid_t f = new_file("b.h5", 0), dcpl = chunked(1, ch);
    hid_t ft = bool_type(H5T_STD_I8LE), mt = bool_type(H5T_NATIVE_INT8);
    H5Pset_deflate(dcpl, 1);
    put(f, "/b", ft, 1, dims, dcpl, mt, data);
    H5Pclose(dcpl);
    H5Tclose(ft);
    H5Tclose(mt);
    H5Fclose(f);

    ck_store *s = open_store("b.h5");
    ck_array *a = open_array(s, "/b");
    cr_assert_eq(ck_array_info_of(a)->dtype, CK_BOOL);
    int8_t *got = read_all(a);
    cr_assert_arr_eq(got, data, sizeof data);
    free(got);
    ck_array_close(a);
    ck_store_close(s);
}

Test(h5, list_names_every_dataset_readable_skips_non_numeric)
{
    hsize_t dims[1] = {3};
    hid_t f = new_file("l.h5", 0), st = H5Tcopy(H5T_C_S1);
    hid_t cmp = H5Tcreate(H5T_COMPOUND, 8);
    H5Tset_size(st, 4);
    H5Tinsert(cmp, "a", 0, H5T_NATIVE_INT32);
    H5Tinsert(cmp, "b", 4, H5T_NATIVE_FLOAT);
    put(f, "/z", H5T_STD_I8LE, 1, dims, H5P_DEFAULT, 0, NULL);
    put(f, "/g/h/c", H5T_IEEE_F32LE, 1, dims, H5P_DEFAULT, 0, NULL);
    put(f, "/g/b", H5T_STD_U64BE, 1, dims, H5P_DEFAULT, 0, NULL);
    put(f, "/a", H5T_IEEE_F64LE, 1, dims, H5P_DEFAULT, 0, NULL);
    put(f, "/g/text", st, 1, dims, H5P_DEFAULT, 0, NULL);
    put(f, "/rec", cmp, 1, dims, H5P_DEFAULT, 0, NULL);
    put(f, "/half", H5T_IEEE_F32LE, 1, dims, H5P_DEFAULT, 0, NULL);
    H5Tclose(st);
    H5Tclose(cmp);
    H5Fclose(f);
    /* Replace /half's type with a 2-byte float by making a new dataset. */
    f = H5Fopen(in_dir("l.h5"), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t f16 = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(f16, 15, 10, 5, 0, 10);
    H5Tset_size(f16, 2);
    H5Tset_ebias(f16, 15);
    H5Ldelete(f, "/half", H5P_DEFAULT);
    put(f, "/half", f16, 1, dims, H5P_DEFAULT, 0, NULL);
    H5Tclose(f16);
    H5Fclose(f);

    ck_store *s = open_store("l.h5");
    ck_names l = {0};
    ck_err err = {0};
    /* every dataset is listed; the readable listing leaves out the
     * string, compound and 2-byte float ones */
    cr_assert_eq(ck_store_list(s, &l, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(l.n, 7);
    const char *every[] = {"/a",    "/g/b", "/g/h/c", "/g/text",
                           "/half", "/rec", "/z"};
    for (int i = 0; i < 7; i++)
        cr_assert_str_eq(l.v[i], every[i]);
    ck_names_release(&l);
    cr_assert_eq(ck_store_list_readable(s, 0, &l, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(l.n, 4);
    cr_assert_str_eq(l.v[0], "/a");
    cr_assert_str_eq(l.v[1], "/g/b");
    cr_assert_str_eq(l.v[2], "/g/h/c");
    cr_assert_str_eq(l.v[3], "/z");
    ck_names_release(&l);

    ck_array *a = NULL;
    err = (ck_err){0};
    cr_assert_eq(ck_array_open(s, "/g/text", &a, &err), CK_ENOTSUP);
    cr_assert(strstr(err.msg, "/g/text") && strstr(err.msg, "string"), "%s",
              err.msg);
    err = (ck_err){0};
    cr_assert_eq(ck_array_open(s, "/rec", &a, &err), CK_ENOTSUP);
    cr_assert(strstr(err.msg, "compound"), "%s", err.msg);
    err = (ck_err){0};
    cr_assert_eq(ck_array_open(s, "/half", &a, &err), CK_ENOTSUP);
    cr_assert(strstr(err.msg, "2-byte float"), "%s", err.msg);
    ck_store_close(s);
}

Test(h5, unknown_names_are_format_errors)
{
    hsize_t dims[1] = {3};
    hid_t f = new_file("n.h5", 0);
    put(f, "/g/x", H5T_STD_I8LE, 1, dims, H5P_DEFAULT, 0, NULL);
    H5Fclose(f);

    ck_store *s = open_store("n.h5");
    ck_array a = {.store = s};
    ck_err err = {0};
    cr_assert_eq(ck_h5_ops.array_open(s, "/y", &a, &err), CK_EFORMAT);
    cr_assert(strstr(err.msg, "no dataset '/y'"), "%s", err.msg);
    cr_assert(strstr(err.msg, "n.h5"), "%s", err.msg);
    err = (ck_err){0};
    cr_assert_eq(ck_h5_ops.array_open(s, "/g", &a, &err), CK_EFORMAT);
    cr_assert(strstr(err.msg, "group"), "%s", err.msg);
    ck_store_close(s);
}

Test(h5, damaged_files_give_errors)
{
    ck_store st = {.ops = &ck_h5_ops, .kind = CK_KIND_HDF5};
    ck_err err = {0};
    int fd;
    static const unsigned char sig[8] = {0x89, 'H',  'D',  'F',
                                         '\r', '\n', 0x1a, '\n'};
    char junk[600];

    /* The signature and then garbage. */
    memset(junk, 0x5a, sizeof junk);
    memcpy(junk, sig, 8);
    fd = open(in_dir("junk.h5"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    cr_assert_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    close(fd);
    snprintf(st.path, sizeof st.path, "%s", in_dir("junk.h5"));
    cr_assert_eq(ck_h5_ops.open(&st, &err), CK_EFORMAT);
    cr_assert(strstr(err.msg, "not an HDF5 file or damaged"), "%s", err.msg);

    /* A real file cut in half. */
    {
        hsize_t dims[1] = {20000};
        static int32_t data[20000];
        hid_t f = new_file("cut.h5", 0);
        put(f, "/x", H5T_STD_I32LE, 1, dims, H5P_DEFAULT, H5T_NATIVE_INT32,
            data);
        H5Fclose(f);
        cr_assert_eq(truncate(in_dir("cut.h5"), 40000), 0);
        err = (ck_err){0};
        snprintf(st.path, sizeof st.path, "%s", in_dir("cut.h5"));
        ck_code rc = ck_h5_ops.open(&st, &err);
        if (rc == CK_OK) { /* HDF5 may accept it; the read must not */
            ck_array a = {.store = &st};
            err = (ck_err){0};
            cr_assert_eq(ck_h5_ops.array_open(&st, "/x", &a, &err), CK_OK);
            ck_h5_ops.array_close(&a);
            ck_h5_ops.close(&st);
        } else {
            cr_assert_neq(err.msg[0], '\0');
        }
    }

    /* A missing file. */
    err = (ck_err){0};
    snprintf(st.path, sizeof st.path, "%s", in_dir("nope.h5"));
    cr_assert_eq(ck_h5_ops.open(&st, &err), CK_EIO);
    /* The path alone would match any message: the cause too. */
    cr_assert(strstr(err.msg, "nope.h5") &&
                  strstr(err.msg, "No such file or directory"),
              "%s", err.msg);
}

/* Writes a deflate-compressed dataset and returns the address of chunk
 * 'which' (absolute) and its stored size. */
static void chunk_where(const char *name, hsize_t which, haddr_t *addr,
                        hsize_t *size)
{
    hid_t f = H5Fopen(in_dir(name), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/x", H5P_DEFAULT);
    unsigned mask;
    cr_assert(H5Dget_chunk_info_by_coord(d, &which, &mask, addr, size) >= 0);
    H5Dclose(d);
    H5Fclose(f);
}

Test(h5, corrupt_chunks_are_named)
{
    hsize_t dims[1] = {400}, ch[1] = {100};
    int32_t data[400], got[100];
    hid_t f = new_file("bad.h5", 0), dcpl = chunked(1, ch);
    haddr_t addr;
    hsize_t size;
    ck_err err = {0};
    for (int i = 0; i < 400; i++)
        data[i] = i;
    H5Pset_deflate(dcpl, 6);
    put(f, "/x", H5T_STD_I32LE, 1, dims, dcpl, H5T_NATIVE_INT32, data);
    H5Pclose(dcpl);
    H5Fclose(f);
    chunk_where("bad.h5", 200, &addr, &size);

    int fd = open(in_dir("bad.h5"), O_WRONLY);
    char zeros[16] = {0};
    cr_assert_eq(pwrite(fd, zeros, sizeof zeros, (off_t)addr + 2),
                 (ssize_t)sizeof zeros);
    close(fd);

    ck_store *s = open_store("bad.h5");
    ck_array *a = open_array(s, "/x");
    cr_assert_eq(read_one(a, (int64_t[]){1}, got, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(got[5], 105);
    cr_assert_eq(read_one(a, (int64_t[]){2}, got, &err), CK_ECORRUPT);
    cr_assert(strstr(err.msg, "bad.h5:/x: chunk (2): "), "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);
}

/* Every chunk index HDF5 has (v1 B-tree; with the 1.10 format: single
 * chunk, implicit, fixed array, extensible array, v2 B-tree), each with
 * chunks never written, read through the fast path. */
Test(h5, every_chunk_index_and_missing_chunks)
{
    hsize_t dims[2] = {10, 9}, ch[2] = {4, 4}, one[2] = {10, 9};
    hsize_t unl[2] = {H5S_UNLIMITED, H5S_UNLIMITED},
            ext[2] = {H5S_UNLIMITED, 9};
    hsize_t start[2] = {0, 4}, count[2] = {4, 4};
    int32_t part[16], fill = -9;
    const struct {
        const char *name;
        const hsize_t *chunk, *maxd;
        int latest, early, deflate;
    } cases[] = {
        {"/v1", ch, NULL, 0, 0, 1},       {"/single", one, NULL, 1, 0, 1},
        {"/implicit", ch, NULL, 1, 1, 0}, {"/fixed", ch, NULL, 1, 0, 1},
        {"/earray", ch, ext, 1, 0, 1},    {"/v2", ch, unl, 1, 0, 1},
    };
    for (int i = 0; i < 16; i++)
        part[i] = i + 100;
    for (int k = 0; k < 6; k++) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f, dcpl, sp, d, ms, fs;
        char name[32];
        snprintf(name, sizeof name, "ix%d.h5", k);
        if (cases[k].latest)
            H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
        f = H5Fcreate(in_dir(name), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        dcpl = chunked(2, cases[k].chunk);
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT32, &fill);
        if (cases[k].early)
            H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
        if (cases[k].deflate)
            H5Pset_deflate(dcpl, 3);
        sp = H5Screate_simple(2, dims, cases[k].maxd);
        d = H5Dcreate2(f, "/x", H5T_STD_I32LE, sp, H5P_DEFAULT, dcpl,
                       H5P_DEFAULT);
        cr_assert(d >= 0, "%s", cases[k].name);
        if (cases[k].chunk != one) {
            fs = H5Dget_space(d);
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
            ms = H5Screate_simple(2, count, NULL);
            H5Dwrite(d, H5T_NATIVE_INT32, ms, fs, H5P_DEFAULT, part);
            H5Sclose(ms);
            H5Sclose(fs);
        }
        H5Dclose(d);
        H5Sclose(sp);
        H5Pclose(dcpl);
        H5Pclose(fapl);
        H5Fclose(f);

        ck_store *s = open_store(name);
        ck_array *a = open_array(s, "/x");
        int32_t *got = read_all(a);
        for (int r = 0; r < 10; r++)
            for (int c = 0; c < 9; c++) {
                int in = cases[k].chunk != one && r < 4 && c >= 4 && c < 8;
                int32_t want = in ? part[r * 4 + (c - 4)] : fill;
                cr_assert_eq(got[r * 9 + c], want, "%s (%d, %d): %d",
                             cases[k].name, r, c, got[r * 9 + c]);
            }
        free(got);
        ck_array_close(a);
        ck_store_close(s);
    }
}

Test(h5, fletcher32_mismatch_is_corrupt)
{
    hsize_t dims[1] = {400}, ch[1] = {100};
    int32_t data[400], got[100];
    hid_t f = new_file("f32.h5", 0), dcpl = chunked(1, ch);
    haddr_t addr;
    hsize_t size;
    ck_err err = {0};
    for (int i = 0; i < 400; i++)
        data[i] = i;
    H5Pset_fletcher32(dcpl);
    put(f, "/x", H5T_STD_I32LE, 1, dims, dcpl, H5T_NATIVE_INT32, data);
    H5Pclose(dcpl);
    H5Fclose(f);
    chunk_where("f32.h5", 300, &addr, &size);
    int fd = open(in_dir("f32.h5"), O_WRONLY);
    cr_assert_eq(pwrite(fd, "\xff\xff", 2, (off_t)addr + 8), 2);
    close(fd);

    ck_store *s = open_store("f32.h5");
    ck_array *a = open_array(s, "/x");
    cr_assert_eq(read_one(a, (int64_t[]){0}, got, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(read_one(a, (int64_t[]){3}, got, &err), CK_ECORRUPT, "%s",
                 err.msg);
    cr_assert(strstr(err.msg, "f32.h5:/x: chunk (3): "), "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);
}

Test(h5, bad_zstd_frames_are_named)
{
    ck_array_spec spec = {.name = "/x", .ndim = 2, .dtype = CK_F64};
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};
    double src[64 * 6], got[32];
    haddr_t addr;
    hsize_t size;
    hsize_t which[2] = {0, 24};
    for (int i = 0; i < 64 * 6; i++)
        src[i] = i;
    spec.shape[0] = 6;
    spec.shape[1] = 64;
    spec.chunks[0] = 1;
    spec.chunks[1] = 32;
    cr_assert_eq(ck_codec_parse("zstd:3", &spec.codec, &err), CK_OK);
    cr_assert_eq(ck_store_create(in_dir("zb.h5"), CK_KIND_HDF5, 0, &s, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
    write_all(a, src);
    ck_array_close(a);
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);

    hid_t f = H5Fopen(in_dir("zb.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/x", H5P_DEFAULT);
    unsigned mask;
    which[0] = 0;
    which[1] = 32;
    cr_assert(H5Dget_chunk_info_by_coord(d, which, &mask, &addr, &size) >= 0);
    H5Dclose(d);
    H5Fclose(f);
    int fd = open(in_dir("zb.h5"), O_WRONLY);
    cr_assert_eq(pwrite(fd, "XXXX", 4, (off_t)addr), 4); /* the magic */
    close(fd);

    s = open_store("zb.h5");
    a = open_array(s, "/x");
    cr_assert_eq(read_one(a, (int64_t[]){0, 0}, got, &err), CK_OK);
    cr_assert_eq(got[31], 31.0);
    cr_assert_eq(read_one(a, (int64_t[]){0, 1}, got, &err), CK_ECORRUPT);
    cr_assert(strstr(err.msg, "zb.h5:/x: chunk (0, 1): "), "%s", err.msg);
    cr_assert(strstr(err.msg, "zstd"), "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);
}

/* An identity filter that only this test registers, standing in for lzf,
 * szip and other filters chunkctl does not decode itself. */
static size_t ident_filter(unsigned flags, size_t cd_nelmts,
                           const unsigned cd_values[], size_t nbytes,
                           size_t *buf_size, void **buf)
{
    (void)flags;
    (void)cd_nelmts;
    (void)cd_values;
    (void)buf_size;
    (void)buf;
    return nbytes;
}

static const H5Z_class2_t ident_class = {
    H5Z_CLASS_T_VERS, 32123, 1, 1, "ident", NULL, NULL, ident_filter};

Test(h5, unknown_filters_fall_back_or_fail_cleanly)
{
    hsize_t dims[1] = {50}, ch[1] = {20};
    int32_t data[50];
    hid_t f = new_file("u.h5", 0), dcpl = chunked(1, ch);
    ck_err err = {0};
    for (int i = 0; i < 50; i++)
        data[i] = 3 * i;
    cr_assert(H5Zregister(&ident_class) >= 0);
    H5Pset_filter(dcpl, 32123, H5Z_FLAG_MANDATORY, 0, NULL);
    H5Pset_deflate(dcpl, 2);
    put(f, "/x", H5T_STD_I32LE, 1, dims, dcpl, H5T_NATIVE_INT32, data);
    H5Pclose(dcpl);
    H5Fclose(f);

    ck_store *s = open_store("u.h5");
    ck_array *a = open_array(s, "/x");
    cr_assert_str_eq(ck_array_info_of(a)->compressor, "gzip:2+filter32123");
    int32_t *got = read_all(a);
    cr_assert_arr_eq(got, data, sizeof data);
    free(got);
    ck_array_close(a);
    ck_store_close(s);

    cr_assert(H5Zunregister(32123) >= 0);
    s = open_store("u.h5");
    a = open_array(s, "/x");
    int32_t chunk[20];
    ck_code rc = read_one(a, (int64_t[]){1}, chunk, &err);
    cr_assert(rc == CK_ENOTSUP || rc == CK_ECORRUPT || rc == CK_EIO);
    cr_assert(strstr(err.msg, "u.h5:/x: chunk (1)"), "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);
}

/* ---- writing ---- */

static void make_values(ck_dtype t, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ck_scalar v;
        if (ck_dtype_is_float(t))
            v.f = (double)i * 0.5 - 3.0;
        else if (t == CK_BOOL)
            v.i = i % 3 == 0;
        else if (ck_dtype_is_signed(t))
            v.i = (int64_t)(i * 7 % 1000) - 500;
        else
            v.u = i % 251;
        ck_dtype_fill(t, (char *)p + i * ck_dtype_size(t), v, 1);
    }
}

/* Writes src (the whole array) chunk by chunk, edges padded with fill. */
static void write_all(ck_array *a, const void *src)
{
    const ck_grid *g = ck_array_grid(a);
    const ck_array_info *info = ck_array_info_of(a);
    size_t es = ck_dtype_size(info->dtype);
    char *chunk = malloc((size_t)g->chunk_nelem * es);
    int64_t zero[CK_MAX_DIMS] = {0};
    ck_arena ar = CK_ARENA_INIT;
    ck_err err = {0};
    ck_iter it = ck_iter_all(g);
    ck_chunk c;

    cr_assert_eq(
        ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(a), "test", &err),
        CK_OK);
    while (ck_iter_next(&it, &c)) {
        ck_dtype_fill(info->dtype, chunk, info->fill, (size_t)g->chunk_nelem);
        ck_box_copy(g->ndim, es, chunk, g->chunk, zero, src, g->shape, c.start,
                    NULL, c.shape);
        cr_assert_eq(ck_array_write_chunk(a, c.coords, chunk, &ar, &err), CK_OK,
                     "%s", err.msg);
        ck_arena_reset(&ar);
    }
    ck_arena_release(&ar);
    free(chunk);
}

/* Reads dataset name of file path with plain H5Dread (HDF5 running the
 * filter classes chunkctl registered) into a malloc'd native buffer. */
static void *h5_read_plain(const char *path, const char *name, ck_dtype t,
                           size_t n)
{
    static const hid_t *const mt[] = {
        [CK_I8] = &H5T_NATIVE_INT8_g,    [CK_I16] = &H5T_NATIVE_INT16_g,
        [CK_I32] = &H5T_NATIVE_INT32_g,  [CK_I64] = &H5T_NATIVE_INT64_g,
        [CK_U8] = &H5T_NATIVE_UINT8_g,   [CK_U16] = &H5T_NATIVE_UINT16_g,
        [CK_U32] = &H5T_NATIVE_UINT32_g, [CK_U64] = &H5T_NATIVE_UINT64_g,
        [CK_F32] = &H5T_NATIVE_FLOAT_g,  [CK_F64] = &H5T_NATIVE_DOUBLE_g,
        [CK_BOOL] = &H5T_NATIVE_INT8_g,
    };
    void *buf = calloc(n ? n : 1, ck_dtype_size(t));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t m = t == CK_BOOL ? bool_type(H5T_NATIVE_INT8) : H5Tcopy(*mt[t]);
    cr_assert(d >= 0);
    cr_assert(H5Dread(d, m, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0,
              "plain H5Dread of %s", name);
    H5Tclose(m);
    H5Dclose(d);
    H5Fclose(f);
    return buf;
}

struct rt_case {
    const char *codec;
    ck_dtype dtype;
    const char *compressor;
};

static void round_trip(const struct rt_case *rc, int k)
{
    char name[32];
    ck_array_spec spec = {.name = "/g/data", .ndim = 2, .dtype = rc->dtype};
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};
    size_t n = 37 * 23, es = ck_dtype_size(rc->dtype);
    void *src = malloc(n * es);

    snprintf(name, sizeof name, "rt%d.h5", k);
    spec.shape[0] = 37;
    spec.shape[1] = 23;
    spec.chunks[0] = 10;
    spec.chunks[1] = 8;
    spec.has_fill = 1;
    spec.fill.i = 1;
    if (ck_dtype_is_float(rc->dtype))
        spec.fill.f = 1;
    cr_assert_eq(ck_codec_parse(rc->codec, &spec.codec, &err), CK_OK, "%s",
                 err.msg);
    make_values(rc->dtype, src, n);
    cr_assert_eq(ck_store_create(in_dir(name), CK_KIND_HDF5, 0, &s, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
    write_all(a, src);
    ck_array_close(a);
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);

    s = open_store(name);
    a = open_array(s, "/g/data");
    const ck_array_info *info = ck_array_info_of(a);
    cr_assert_eq(info->dtype, rc->dtype);
    cr_assert_str_eq(info->compressor, rc->compressor, "%s", rc->codec);
    cr_assert_eq(info->chunks_stored, 12);
    cr_assert(info->has_fill);
    void *got = read_all(a);
    cr_assert(memcmp(got, src, n * es) == 0, "%s %s", rc->codec,
              ck_dtype_name(rc->dtype));
    free(got);
    ck_array_close(a);
    ck_store_close(s);

    got = h5_read_plain(in_dir(name), "/g/data", rc->dtype, n);
    cr_assert(memcmp(got, src, n * es) == 0, "plain %s %s", rc->codec,
              ck_dtype_name(rc->dtype));
    free(got);
    free(src);
}

Test(h5, round_trips_every_codec)
{
    static const struct rt_case cases[] = {
        {"none", CK_I16, "none"},
        {"none", CK_BOOL, "none"},
        {"zlib:5:shuffle", CK_F64, "gzip:5:shuffle"},
        {"gzip:4", CK_U8, "gzip:4"},
        {"zstd:3", CK_I32, "zstd:3"},
        {"zstd:-5", CK_F32, "zstd:-5"},
        {"zstd:7:shuffle", CK_U64, "zstd:7:shuffle"},
        {"zstd:1", CK_BOOL, "zstd:1"},
        {"blosc:lz4:5:shuffle", CK_F64, "blosc:lz4:5:shuffle"},
        {"blosc:zstd:3:bitshuffle", CK_I16, "blosc:zstd:3:bitshuffle"},
        {"blosc:blosclz:9:noshuffle", CK_U32, "blosc:blosclz:9:noshuffle"},
        {"blosc:zlib:1:shuffle", CK_I64, "blosc:zlib:1:shuffle"},
    };
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++)
        round_trip(&cases[k], k);
}

Test(h5, created_info_describes_the_codec)
{
    ck_array_spec spec = {.name = "/x", .ndim = 1, .dtype = CK_F32};
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};

    spec.shape[0] = 10;
    spec.chunks[0] = 100; /* clipped to the shape */
    cr_assert_eq(ck_codec_parse("blosc:lz4hc:7:bitshuffle", &spec.codec, &err),
                 CK_OK);
    cr_assert_eq(ck_store_create(in_dir("ci.h5"), CK_KIND_HDF5, 0, &s, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
    const ck_array_info *info = ck_array_info_of(a);
    cr_assert_eq(info->chunks[0], 10);
    cr_assert_eq(info->codec.id, CK_CODEC_BLOSC);
    cr_assert_eq(info->codec.level, 7);
    cr_assert_eq(info->codec.shuffle, CK_SHUF_BIT);
    cr_assert_str_eq(info->codec.cname, "lz4hc");
    ck_array *dup = NULL;
    cr_assert_eq(ck_array_create(s, &spec, &dup, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "'/x' already exists"), "%s", err.msg);
    err = (ck_err){0};
    /* Commit with the array still open: flush closes every handle. */
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);
    cr_assert(access(in_dir("ci.h5"), F_OK) == 0);

    /* bitshuffle without blosc has no HDF5 filter here. */
    spec.name = "/y";
    cr_assert_eq(ck_codec_parse("zstd:3", &spec.codec, &err), CK_OK);
    spec.codec.shuffle = CK_SHUF_BIT;
    cr_assert_eq(ck_store_create(in_dir("c2.h5"), CK_KIND_HDF5, 0, &s, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_EUSAGE);
    ck_store_close(s);
    cr_assert(access(in_dir("c2.h5"), F_OK) != 0);
}

Test(h5, uncommitted_stores_leave_nothing)
{
    ck_array_spec spec = {.name = "/x", .ndim = 1, .dtype = CK_I8};
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};
    spec.shape[0] = 4;
    spec.chunks[0] = 2;
    cr_assert_eq(ck_store_create(in_dir("gone.h5"), CK_KIND_HDF5, 0, &s, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);
    cr_assert(access(in_dir("gone.h5"), F_OK) != 0);
}

/* ---- threads ---- */

struct thr {
    ck_array *a;
    int id, nthreads;
    ck_code rc;
    char msg[512];
    const int32_t *want;
};

static void *reader(void *p)
{
    struct thr *t = p;
    const ck_grid *g = ck_array_grid(t->a);
    int32_t *chunk = malloc((size_t)g->chunk_nelem * 4);
    ck_arena ar = CK_ARENA_INIT;
    ck_err err = {0};

    t->rc =
        ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(t->a), "t", &err);
    for (int rep = 0; rep < 5 && t->rc == CK_OK; rep++) {
        for (int64_t i = t->id; i < g->total_chunks && t->rc == CK_OK;
             i += t->nthreads) {
            ck_chunk c;
            ck_grid_chunk(g, i, &c);
            t->rc = ck_array_read_chunk(t->a, c.coords, chunk, &ar, &err);
            if (t->rc == CK_OK && chunk[0] != t->want[c.start[0]])
                t->rc = CK_ECORRUPT;
            ck_arena_reset(&ar);
        }
    }
    memcpy(t->msg, err.msg, sizeof t->msg);
    ck_arena_release(&ar);
    free(chunk);
    return NULL;
}

static void *writer(void *p)
{
    struct thr *t = p;
    const ck_grid *g = ck_array_grid(t->a);
    int32_t *chunk = malloc((size_t)g->chunk_nelem * 4);
    ck_arena ar = CK_ARENA_INIT;
    ck_err err = {0};

    t->rc =
        ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(t->a), "t", &err);
    for (int64_t i = t->id; i < g->total_chunks && t->rc == CK_OK;
         i += t->nthreads) {
        ck_chunk c;
        ck_grid_chunk(g, i, &c);
        memcpy(chunk, t->want + c.start[0], (size_t)g->chunk_nelem * 4);
        t->rc = ck_array_write_chunk(t->a, c.coords, chunk, &ar, &err);
        ck_arena_reset(&ar);
    }
    memcpy(t->msg, err.msg, sizeof t->msg);
    ck_arena_release(&ar);
    free(chunk);
    return NULL;
}

static void run_threads(void *(*fn)(void *), ck_array *a, const int32_t *want)
{
    enum { N = 8 };
    pthread_t th[N];
    struct thr t[N];
    for (int i = 0; i < N; i++) {
        t[i] = (struct thr){a, i, N, CK_OK, "", want};
        pthread_create(&th[i], NULL, fn, &t[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(t[i].rc, CK_OK, "thread %d: %s", i, t[i].msg);
    }
}

Test(h5, many_threads_read_and_write_at_once)
{
    enum { LEN = 1000 * 64 };
    int32_t *want = malloc((LEN + 64) * 4);
    ck_array_spec spec = {.name = "/x", .ndim = 1, .dtype = CK_I32};
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};
    const char *codecs[] = {"zstd:1:shuffle", "gzip:1", "blosc:lz4:5:shuffle"};

    for (int i = 0; i < LEN + 64; i++)
        want[i] = i * 17 % 1001;
    spec.shape[0] = LEN;
    spec.chunks[0] = 64;
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "t%d.h5", k);
        cr_assert_eq(ck_codec_parse(codecs[k], &spec.codec, &err), CK_OK);
        cr_assert_eq(ck_store_create(in_dir(name), CK_KIND_HDF5, 0, &s, &err),
                     CK_OK, "%s", err.msg);
        cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
        run_threads(writer, a, want);
        ck_array_close(a);
        cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
        ck_store_close(s);

        s = open_store(name);
        a = open_array(s, "/x");
        run_threads(reader, a, want);
        ck_array_close(a);
        ck_store_close(s);
    }
    free(want);
}

/* ---- attributes ---- */

Test(h5, attributes_round_trip_as_json)
{
    ck_array_spec spec = {.name = "/g/x", .ndim = 1, .dtype = CK_U8};
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};
    char *json = NULL;
    static const char in[] =
        "{\"count\":3,\"scale\":0.5,\"title\":\"héllo\",\"bad\":\"NaN\","
        "\"v\":[1,2,3],\"w\":[1.5,NaN,-Infinity],\"one\":1.0,"
        "\"big\":9007199254740993,\"u\":[0,18446744073709551615],"
        "\"mixed\":[1,\"NaN\"],"
        "\"names\":[\"a\",\"b\"],\"flag\":true,\"skip\":{\"a\":1},"
        "\"none\":null}";

    spec.shape[0] = 4;
    spec.chunks[0] = 4;
    cr_assert_eq(ck_store_create(in_dir("at.h5"), CK_KIND_HDF5, 0, &s, &err),
                 CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_h5_ops.set_attrs(s, "/g/x", in, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_eq(ck_h5_ops.set_attrs(s, "/", "{\"root\":-7}", &err), CK_OK,
                 "%s", err.msg);
    cr_assert_eq(ck_h5_ops.set_attrs(s, "/g/x", "[1]", &err), CK_EUSAGE);
    err = (ck_err){0};
    /* a group not made yet is made, with those above it (copies of
     * groups that hold no dataset), as in a Zarr store */
    cr_assert_eq(ck_h5_ops.set_attrs(s, "/meta/sub", "{\"k\":\"v\"}", &err),
                 CK_OK, "%s", err.msg);
    ck_array_close(a);
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);

    s = open_store("at.h5");
    cr_assert_eq(ck_h5_ops.get_attrs(s, "/g/x", &json, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_str_eq(json,
                     "{\"bad\":\"NaN\",\"big\":9007199254740993,\"count\":3,"
                     "\"flag\":true,\"names\":[\"a\",\"b\"],\"one\":1.0,"
                     "\"scale\":0.5,\"title\":\"héllo\",\"u\":[0,"
                     "18446744073709551615],\"v\":[1,2,3],"
                     "\"w\":[1.5,NaN,-Infinity]}");
    free(json);
    cr_assert_eq(ck_h5_ops.get_attrs(s, "/", &json, &err), CK_OK);
    cr_assert_str_eq(json, "{\"root\":-7}");
    free(json);
    cr_assert_eq(ck_h5_ops.get_attrs(s, "/g", &json, &err), CK_OK);
    cr_assert_str_eq(json, "{}");
    free(json);
    cr_assert_eq(ck_h5_ops.get_attrs(s, "/meta/sub", &json, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_str_eq(json, "{\"k\":\"v\"}");
    free(json);
    ck_store_close(s);

    /* The types: int64 scalars, float64 arrays, UTF-8 strings. */
    hid_t f = H5Fopen(in_dir("at.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t at = H5Aopen_by_name(f, "/g/x", "count", H5P_DEFAULT, H5P_DEFAULT);
    hid_t ty = H5Aget_type(at);
    cr_assert(H5Tequal(ty, H5T_NATIVE_INT64) > 0);
    H5Tclose(ty);
    H5Aclose(at);
    at = H5Aopen_by_name(f, "/g/x", "w", H5P_DEFAULT, H5P_DEFAULT);
    ty = H5Aget_type(at);
    cr_assert(H5Tequal(ty, H5T_NATIVE_DOUBLE) > 0);
    H5Tclose(ty);
    H5Aclose(at);
    at = H5Aopen_by_name(f, "/g/x", "title", H5P_DEFAULT, H5P_DEFAULT);
    ty = H5Aget_type(at);
    cr_assert(H5Tis_variable_str(ty) > 0);
    cr_assert_eq(H5Tget_cset(ty), H5T_CSET_UTF8);
    H5Tclose(ty);
    H5Aclose(at);
    H5Fclose(f);
}

Test(h5, reads_fixed_length_and_numeric_attributes)
{
    hsize_t dims[1] = {3}, two = 2;
    hid_t f = new_file("fa.h5", 0), st = H5Tcopy(H5T_C_S1), sp, at;
    char *json = NULL;
    ck_err err = {0};
    int16_t iv[3] = {-1, 0, 300};
    double inf = INFINITY;

    put(f, "/x", H5T_STD_I8LE, 1, dims, H5P_DEFAULT, 0, NULL);
    H5Tset_size(st, 8);
    H5Tset_strpad(st, H5T_STR_SPACEPAD);
    sp = H5Screate(H5S_SCALAR);
    at = H5Acreate_by_name(f, "/x", "units", st, sp, H5P_DEFAULT, H5P_DEFAULT,
                           H5P_DEFAULT);
    H5Awrite(at, st, "metres  ");
    H5Aclose(at);
    at = H5Acreate_by_name(f, "/x", "top", H5T_IEEE_F32BE, sp, H5P_DEFAULT,
                           H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(at, H5T_NATIVE_DOUBLE, &inf);
    H5Aclose(at);
    H5Sclose(sp);
    sp = H5Screate_simple(1, dims, NULL);
    at = H5Acreate_by_name(f, "/x", "iv", H5T_STD_I16BE, sp, H5P_DEFAULT,
                           H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(at, H5T_NATIVE_INT16, iv);
    H5Aclose(at);
    H5Sclose(sp);
    hsize_t d2[2] = {2, 2};
    sp = H5Screate_simple(2, d2, NULL); /* 2-D: nested lists, as tolist() */
    at = H5Acreate_by_name(f, "/x", "m", H5T_STD_I8LE, sp, H5P_DEFAULT,
                           H5P_DEFAULT, H5P_DEFAULT);
    int8_t m[4] = {1, 2, 3, 4};
    H5Awrite(at, H5T_NATIVE_INT8, m);
    H5Aclose(at);
    H5Sclose(sp);
    (void)two;
    H5Tclose(st);
    H5Fclose(f);

    ck_store *s = open_store("fa.h5");
    cr_assert_eq(ck_h5_ops.get_attrs(s, "/x", &json, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_str_eq(json,
                     "{\"iv\":[-1,0,300],\"m\":[[1,2],[3,4]],\"top\":Infinity,"
                     "\"units\":\"metres\"}");
    free(json);
    ck_store_close(s);
}

Test(h5, zstd_filter_registers_and_round_trips_in_hdf5)
{
    hsize_t dims[1] = {5000}, ch[1] = {1000};
    static double data[5000], got[5000];
    unsigned cd[1] = {9};
    hid_t f, dcpl = chunked(1, ch), d;
    for (int i = 0; i < 5000; i++)
        data[i] = sin(i * 0.01);
    cr_assert(ck_h5_zstd_register() >= 0);
    H5Pset_filter(dcpl, CK_H5Z_FILTER_ZSTD, H5Z_FLAG_OPTIONAL, 1, cd);
    f = new_file("z.h5", 0);
    put(f, "/x", H5T_IEEE_F64LE, 1, dims, dcpl, H5T_NATIVE_DOUBLE, data);
    H5Pclose(dcpl);
    H5Fclose(f);
    f = H5Fopen(in_dir("z.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
    d = H5Dopen2(f, "/x", H5P_DEFAULT);
    cr_assert(
        H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0);
    cr_assert(H5Dget_storage_size(d) < sizeof data);
    H5Dclose(d);
    H5Fclose(f);
    cr_assert_arr_eq(got, data, sizeof data);

    /* ... and chunkctl's own decoder reads what the filter wrote. */
    ck_store *s = open_store("z.h5");
    ck_array *a = open_array(s, "/x");
    cr_assert_str_eq(ck_array_info_of(a)->compressor, "zstd:9");
    double *all = read_all(a);
    cr_assert_arr_eq(all, data, sizeof data);
    free(all);
    ck_array_close(a);
    ck_store_close(s);
}
