/*
 * tests/io/test_h5_dims.c - the Criterion suite "h5_dims": dimension names
 * in HDF5 files through io/store.h (io/hdf5/h5_dims.c), written by
 * chunkctl and read back: dimension scales for named axes, coordinate
 * variables written before or after the arrays that use them, netCDF-4's
 * dimension-only placeholders (not listed, not opened), "dim_k" for the
 * unnamed axes of a *.nc file, typed _FillValue, and the errors for
 * dimensions that cannot be.  What netCDF-C and h5py make of these files
 * is tests/interop/test_netcdf.py's job.
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/store.h"

static char tmpdir[64];

static int rm_entry(const char *p, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ck-test-h5dims-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(h5_dims, .description = "io/hdf5/h5_dims.c: dimension scales",
          .init = setup, .fini = teardown);

static const char *at(const char *rel)
{
    static char buf[4][512];
    static int k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, rel);
    return buf[k];
}

/* A float32 spec "name" of 'nd' axes, dims[] names (NULL: none given). */
static ck_array_spec spec_of(const char *name, int nd, const int64_t *shape,
                             const char *const *dims)
{
    ck_array_spec sp;

    memset(&sp, 0, sizeof sp);
    sp.name = name;
    sp.ndim = nd;
    sp.dtype = CK_F32;
    for (int d = 0; d < nd; d++) {
        sp.shape[d] = shape[d];
        sp.chunks[d] = shape[d] > 0 ? shape[d] : 1;
        if (dims) {
            snprintf(sp.dims[d], CK_DIM_NAME_MAX, "%s", dims[d]);
            sp.has_dims = 1;
        }
    }
    return sp;
}

/* Creates (and closes) one array; its chunks stay unwritten. */
static ck_code add(ck_store *s, const char *name, int nd, const int64_t *shape,
                   const char *const *dims, ck_err *err)
{
    ck_array_spec sp = spec_of(name, nd, shape, dims);
    ck_array *a = NULL;
    ck_code rc = ck_array_create(s, &sp, &a, err);

    ck_array_close(a);
    return rc;
}

/* Opens path:name and returns its info (copied). */
static ck_array_info info_of(const char *path, const char *name)
{
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};
    ck_array_info i;

    cr_assert_eq(ck_store_open(path, &s, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_array_open(s, name, &a, &err), CK_OK, "%s", err.msg);
    i = *ck_array_info_of(a);
    ck_array_close(a);
    ck_store_close(s);
    return i;
}

static void assert_dims(const ck_array_info *i, const char *const *want)
{
    cr_assert(i->has_dims, "%s: no dims", i->name);
    for (int d = 0; d < i->ndim; d++)
        cr_assert_str_eq(i->dims[d], want[d], "%s: axis %d", i->name, d);
}

static int listed(const char *path, const char *name)
{
    ck_store *s = NULL;
    ck_names l = {0};
    ck_err err = {0};
    int found = 0;

    cr_assert_eq(ck_store_open(path, &s, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_store_list(s, &l, &err), CK_OK, "%s", err.msg);
    for (int i = 0; i < l.n; i++)
        found |= strcmp(l.v[i], name) == 0;
    ck_names_release(&l);
    ck_store_close(s);
    return found;
}

static void commit(ck_store *s)
{
    ck_err err = {0};

    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);
}

/* ---- names written and read back ---- */

Test(h5_dims, named_axes_read_back_with_coordinate_first)
{
    static const int64_t shape[3] = {2, 3, 4}, lat[1] = {3};
    static const char *const dims[3] = {"time", "lat", "lon"};
    static const char *const ldims[1] = {"lat"};
    const char *path = at("a.h5");
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(path, CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(add(s, "/lat", 1, lat, ldims, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(add(s, "/tas", 3, shape, dims, &err), CK_OK, "%s", err.msg);
    commit(s);
    ck_array_info t = info_of(path, "/tas"), l = info_of(path, "/lat");
    assert_dims(&t, dims);
    assert_dims(&l, ldims);
    /* The coordinate variable holds data: listed.  time and lon are
     * placeholders: neither listed nor opened. */
    cr_assert(listed(path, "/lat"));
    cr_assert(!listed(path, "/time"));
    cr_assert(!listed(path, "/lon"));
    {
        ck_store *r = NULL;
        ck_array *a = NULL;
        cr_assert_eq(ck_store_open(path, &r, &err), CK_OK);
        cr_assert_eq(ck_array_open(r, "/lon", &a, &err), CK_EUSAGE);
        cr_assert(strstr(err.msg, "no array '/lon'"), "%s", err.msg);
        ck_store_close(r);
    }
}

Test(h5_dims, coordinate_written_after_the_array_becomes_its_scale)
{
    static const int64_t shape[2] = {3, 4}, lon[1] = {4};
    static const char *const dims[2] = {"lat", "lon"};
    const char *path = at("b.h5");
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(path, CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(add(s, "/g/x", 2, shape, dims, &err), CK_OK, "%s", err.msg);
    /* Written later, and without naming its axis: the 1-D array whose
     * name is a dimension of its length is that dimension's coordinate. */
    cr_assert_eq(add(s, "/g/lon", 1, lon, NULL, &err), CK_OK, "%s", err.msg);
    commit(s);
    ck_array_info x = info_of(path, "/g/x"), c = info_of(path, "/g/lon");
    assert_dims(&x, dims);
    cr_assert_str_eq(c.dims[0], "lon");
    cr_assert(listed(path, "/g/lon"));
    cr_assert(!listed(path, "/g/lat"));
}

Test(h5_dims, h5_keeps_names_without_a_scale_as_labels)
{
    static const int64_t a[2] = {3, 4}, b[2] = {2, 4}, c[1] = {4};
    static const char *const da[2] = {"lat", "a/b"};
    static const char *const db[2] = {"lat", "lon"};
    const char *path = at("l.h5");
    ck_store *s = NULL, *r = NULL;
    ck_array *x = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(path, CK_KIND_HDF5, 0, &s, &err), CK_OK);
    /* Outside netCDF, lat may be 3 long here and 2 there, and a name may
     * hold a '/': no scale names them, labels do. */
    cr_assert_eq(add(s, "/a", 2, a, da, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(add(s, "/b", 2, b, db, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(add(s, "/lon", 1, c, NULL, &err), CK_OK, "%s", err.msg);
    commit(s);
    ck_array_info ia = info_of(path, "/a"), ib = info_of(path, "/b");
    assert_dims(&ia, da);
    assert_dims(&ib, db);
    /* No placeholder for lat; lon is b's coordinate variable. */
    cr_assert_eq(ck_store_open(path, &r, &err), CK_OK);
    cr_assert_eq(ck_array_open(r, "/lat", &x, &err), CK_EUSAGE);
    ck_store_close(r);
    ck_array_info il = info_of(path, "/lon");
    cr_assert_str_eq(il.dims[0], "lon");
}

Test(h5_dims, h5_without_names_has_none)
{
    static const int64_t shape[2] = {3, 4};
    const char *path = at("c.h5");
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(path, CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(add(s, "/x", 2, shape, NULL, &err), CK_OK, "%s", err.msg);
    commit(s);
    ck_array_info x = info_of(path, "/x");
    cr_assert_eq(x.has_dims, 0);
    cr_assert_str_eq(x.dims[0], "");
}

Test(h5_dims, nc_names_unnamed_axes_dim_k)
{
    static const int64_t a[2] = {3, 4}, b[2] = {5, 4};
    static const char *const half[2] = {"", "y"};
    const char *path = at("d.nc");
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(path, CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(add(s, "/a", 2, a, NULL, &err), CK_OK, "%s", err.msg);
    /* dim_0 is 3 long already: a 5-long axis 0 gets dim_0_5. */
    cr_assert_eq(add(s, "/b", 2, b, half, &err), CK_OK, "%s", err.msg);
    commit(s);
    ck_array_info ia = info_of(path, "/a"), ib = info_of(path, "/b");
    static const char *const wa[2] = {"dim_0", "dim_1"};
    static const char *const wb[2] = {"dim_0_5", "y"};
    assert_dims(&ia, wa);
    assert_dims(&ib, wb);
}

Test(h5_dims, scalar_arrays_have_no_dims)
{
    const char *path = at("e.nc");
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(path, CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(add(s, "/s", 0, NULL, NULL, &err), CK_OK, "%s", err.msg);
    commit(s);
    ck_array_info i = info_of(path, "/s");
    cr_assert_eq(i.has_dims, 0);
}

/* ---- errors ---- */

Test(h5_dims, one_dimension_two_lengths_is_refused_at_create)
{
    static const int64_t a[1] = {3}, b[1] = {4};
    static const char *const x[1] = {"x"};
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(at("f.nc"), CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(add(s, "/a", 1, a, x, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(add(s, "/b", 1, b, x, &err), CK_EFORMAT);
    cr_assert(strstr(err.msg, "dimension 'x' is 4 long, but 3 in /a"), "%s",
              err.msg);
    /* The refused array left nothing behind: the store still commits. */
    commit(s);
    cr_assert(!listed(at("f.nc"), "/b"));
}

Test(h5_dims, a_name_with_a_slash_is_refused)
{
    static const int64_t a[1] = {3};
    static const char *const x[1] = {"a/b"};
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(at("g.nc"), CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(add(s, "/a", 1, a, x, &err), CK_EFORMAT);
    cr_assert(strstr(err.msg, "dimension name 'a/b'"), "%s", err.msg);
    ck_store_close(s);
}

Test(h5_dims, a_2d_array_named_like_its_first_dimension_keeps_its_dims)
{
    /* netCDF's x(x, y): netCDF-C keeps it as the scale of x, its
     * dimensions in _Netcdf4Coordinates; z(x) attaches that scale. */
    static const int64_t a[2] = {3, 4}, z[1] = {3};
    static const char *const x[2] = {"x", "y"}, *const zx[1] = {"x"};
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(at("h.nc"), CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(add(s, "/z", 1, z, zx, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(add(s, "/x", 2, a, x, &err), CK_OK, "%s", err.msg);
    commit(s);
    ck_array_info i = info_of(at("h.nc"), "/x");
    assert_dims(&i, x);
    i = info_of(at("h.nc"), "/z");
    assert_dims(&i, zx);
}

Test(h5_dims, an_array_named_like_a_later_dimension_is_refused)
{
    static const int64_t a[2] = {3, 4};
    static const char *const x[2] = {"y", "x"};
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(at("h2.nc"), CK_KIND_HDF5, 0, &s, &err),
                 CK_OK);
    cr_assert_eq(add(s, "/x", 2, a, x, &err), CK_EFORMAT);
    cr_assert(strstr(err.msg, "has the name of this array but is not its "
                              "first"),
              "%s", err.msg);
    ck_store_close(s);
}

Test(h5_dims, a_coordinate_of_another_length_fails_the_commit)
{
    static const int64_t a[2] = {3, 4}, lat[1] = {5};
    static const char *const x[2] = {"lat", "lon"};
    static const char *const other[1] = {"t"};
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_create(at("i.nc"), CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(add(s, "/x", 2, a, x, &err), CK_OK, "%s", err.msg);
    /* "/lat" lies along t and is 5 long: it cannot be dimension lat. */
    cr_assert_eq(add(s, "/lat", 1, lat, other, &err), CK_OK, "%s", err.msg);
    cr_assert_eq(ck_store_commit(s, &err), CK_EFORMAT);
    cr_assert(strstr(err.msg, "dimension 'lat' is 3 long, but /lat is not"),
              "%s", err.msg);
    ck_store_close(s);
    cr_assert_eq(access(at("i.nc"), F_OK), -1, "no output after a failure");
}

/* ---- netCDF's typed attributes ---- */

Test(h5_dims, fill_value_takes_the_array_type)
{
    static const int64_t a[1] = {3};
    const char *path = at("j.nc");
    ck_array_spec sp = spec_of("/a", 1, a, NULL);
    ck_store *s = NULL, *r = NULL;
    ck_array *arr = NULL;
    ck_attr v = {.kind = CK_ATTR_F64, .f64 = -999.0}, got;
    ck_err err = {0};
    char *json = NULL;

    sp.dtype = CK_I16;
    cr_assert_eq(ck_store_create(path, CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_eq(ck_array_create(s, &sp, &arr, &err), CK_OK, "%s", err.msg);
    ck_array_close(arr);
    cr_assert_eq(ck_store_set_attr(s, "/a", "_FillValue", &v, &err), CK_OK,
                 "%s", err.msg);
    v.f64 = 1e6; /* not an int16 */
    cr_assert_eq(ck_store_set_attr(s, "/a", "missing_value", &v, &err),
                 CK_EUSAGE);
    cr_assert(strstr(err.msg, "does not fit the array's int16"), "%s", err.msg);
    cr_assert_eq(
        ck_store_set_attrs(s, "/a", "{\"valid_range\": [-5, 5]}", &err), CK_OK,
        "%s", err.msg);
    commit(s);
    /* Read back as an integer: stored as int16, not float64. */
    cr_assert_eq(ck_store_open(path, &r, &err), CK_OK);
    cr_assert_eq(ck_store_get_attr(r, "/a", "_FillValue", &got, &err), CK_OK,
                 "%s", err.msg);
    cr_assert_eq(got.kind, CK_ATTR_I64);
    cr_assert_eq(got.i64, -999);
    cr_assert_eq(ck_store_get_attrs(r, "/a", &json, &err), CK_OK);
    cr_assert(strstr(json, "\"valid_range\":[-5,5]"), "%s", json);
    free(json);
    ck_store_close(r);
}
