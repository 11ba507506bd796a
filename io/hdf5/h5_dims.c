/*
 * io/hdf5/h5_dims.c - dimension names as HDF5 dimension scales, the way
 * netCDF-4 keeps them.
 * Reading: an axis is named after the first dimension scale attached to
 * it (the scale dataset's link name: netCDF's dimension name), else its
 * DIMENSION_LABELS entry.  Writing: arrays created with dimension names
 * (every array of a *.nc file) are noted at create time; when the file is
 * flushed each named axis gets a scale in the array's group - the 1-D
 * dataset of that name and length when there is one (a coordinate
 * variable, written before or after the array), else, in a *.nc file,
 * netCDF-4's dimension-only placeholder - and is attached to it
 * (H5DSattach_scale).  In other HDF5 files an axis with no such dataset
 * keeps its name as a dimension label instead, so h5py users find no
 * data-less datasets they did not ask for; a *.nc file names every axis
 * ("dim_k" when unnamed) and refuses a dimension of two lengths, as
 * netCDF must.  Attaching at flush time is what lets a coordinate
 * variable come before or after the arrays that use it.  Callers hold the
 * ck_h5_lock; the HDF5 high-level library (H5DS) runs under it like every other
 * H5* call.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5_hl.h>

#include "base/ck_log.h"
#include "io/hdf5/h5_impl.h"

/* ---- reading ---- */

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int ck_h5_is_nc_dim_only(hid_t dset)
{
    char name[128] = "";
    size_t n = strlen(CK_NC_DIM_ONLY);

    if (H5DSis_scale(dset) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    if (H5DSget_scale_name(dset, name, sizeof name) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    return strncmp(name, CK_NC_DIM_ONLY, n) == 0;
}

/* H5DSiterate_scales visitor: the first scale's link name, then stop. */
static herr_t first_scale(hid_t did, unsigned dim, hid_t dsid, void *data)
{
    char path[1024] = "", *out = data;

    (void)did;
    (void)dim;
    if (H5Iget_name(dsid, path, sizeof path) > 0 && base_of(path)[0])
        snprintf(out, CK_DIM_NAME_MAX, "%s", base_of(path));
    else if (H5DSget_scale_name(dsid, path, sizeof path) > 0 &&
             strncmp(path, CK_NC_DIM_ONLY, strlen(CK_NC_DIM_ONLY)) != 0)
        snprintf(out, CK_DIM_NAME_MAX, "%s", path);
    return 1;
}

/* The int32 values of attribute 'an' of obj (exactly n of them) into v;
 * 0 when there is no such attribute or it is something else. */
static int read_ints(hid_t obj, const char *an, int *v, int n)
{
    hid_t a, space;
    int ok = 0;

    if (H5Aexists(obj, an) <= 0)
        return 0;
    if ((a = H5Aopen(obj, an, H5P_DEFAULT)) < 0)
        return 0;
    if ((space = H5Aget_space(a)) >= 0) {
        ok = H5Sget_simple_extent_npoints(space) == n &&
             H5Aread(a, H5T_NATIVE_INT, v) >= 0;
        H5Sclose(space);
    }
    H5Aclose(a);
    return ok;
}

typedef struct dimid_find {
    int id;
    char name[CK_DIM_NAME_MAX];
} dimid_find;

/* H5Literate visitor: the link whose _Netcdf4Dimid is f->id. */
static herr_t find_dimid(hid_t g, const char *link, const H5L_info_t *li,
                         void *data)
{
    dimid_find *f = data;
    hid_t obj;
    int id = -1, hit = 0;

    (void)li;
    if (H5Aexists_by_name(g, link, "_Netcdf4Dimid", H5P_DEFAULT) <= 0)
        return 0;
    if ((obj = H5Oopen(g, link, H5P_DEFAULT)) < 0)
        return 0;
    hit = read_ints(obj, "_Netcdf4Dimid", &id, 1) && id == f->id;
    H5Oclose(obj);
    if (hit)
        snprintf(f->name, sizeof f->name, "%s", link);
    return hit;
}

/* netCDF-4 keeps a variable named like its first dimension but of more
 * than one axis, x(x, y), as a dimension scale whose dimensions are the
 * ids in its _Netcdf4Coordinates (netCDF-C libhdf5/hdf5open.c, no
 * DIMENSION_LIST); each id's dimension is the scale with that
 * _Netcdf4Dimid in the variable's group or one above it. */
static void nc_coord_dims(hid_t dset, const char *name, ck_array_info *info)
{
    int ids[CK_MAX_DIMS];
    hid_t file = H5Iget_file_id(dset);

    if (file < 0 || !read_ints(dset, "_Netcdf4Coordinates", ids, info->ndim)) {
        if (file >= 0)
            H5Fclose(file);
        return;
    }
    for (int d = 0; d < info->ndim; d++) {
        dimid_find f = {.id = ids[d]};
        char up[512];
        snprintf(up, sizeof up, "%s", name);
        for (;;) {
            char *slash = strrchr(up, '/');
            hid_t grp;
            if (!slash)
                break;
            *slash = '\0';
            if ((grp = H5Gopen2(file, up[0] ? up : "/", H5P_DEFAULT)) < 0)
                break;
            H5Literate(grp, H5_INDEX_NAME, H5_ITER_INC, NULL, find_dimid, &f);
            H5Gclose(grp);
            if (f.name[0])
                break;
        }
        snprintf(info->dims[d], CK_DIM_NAME_MAX, "%s", f.name);
        if (f.name[0])
            info->has_dims = 1;
    }
    H5Fclose(file);
}

void ck_h5_read_dims(hid_t dset, const char *name, ck_array_info *info)
{
    info->has_dims = 0;
    memset(info->dims, 0, sizeof info->dims);
    if (info->ndim == 0)
        return;
    /* A 1-D scale is the coordinate variable (or placeholder) of the
     * dimension it names: its own axis is that dimension. */
    if (info->ndim == 1 && H5DSis_scale(dset) > 0) {
        snprintf(info->dims[0], CK_DIM_NAME_MAX, "%s", base_of(name));
        info->has_dims = info->dims[0][0] != '\0';
        H5Eclear2(H5E_DEFAULT);
        return;
    }
    if (H5DSis_scale(dset) > 0)
        nc_coord_dims(dset, name, info);
    if (info->has_dims) {
        H5Eclear2(H5E_DEFAULT);
        return;
    }
    for (int d = 0; d < info->ndim; d++) {
        char *out = info->dims[d];
        if (H5DSget_num_scales(dset, (unsigned)d) > 0)
            H5DSiterate_scales(dset, (unsigned)d, NULL, first_scale, out);
        if (!out[0] &&
            H5DSget_label(dset, (unsigned)d, out, CK_DIM_NAME_MAX) <= 0)
            out[0] = '\0';
        if (out[0])
            info->has_dims = 1;
    }
    /* Files without scales or labels leave complaints on the stack. */
    H5Eclear2(H5E_DEFAULT);
}

/* ---- writing ---- */

/* "/g" for "/g/x", "" for "/x": the group part of an array's name. */
static void group_of(const char *name, char *out, size_t n)
{
    const char *slash = strrchr(name, '/');
    size_t len = slash ? (size_t)(slash - name) : 0;

    if (len >= n)
        len = n - 1;
    memcpy(out, name, len);
    out[len] = '\0';
}

static int same_group(const char *a, const char *b)
{
    char ga[512], gb[512];

    group_of(a, ga, sizeof ga);
    group_of(b, gb, sizeof gb);
    return strcmp(ga, gb) == 0;
}

/* A dimension name must be a link name of its own: no '/', not "." */
static ck_code check_dim_name(ck_store *s, const char *array, const char *d,
                              ck_err *err)
{
    if (strchr(d, '/') || strcmp(d, ".") == 0 || strcmp(d, "..") == 0)
        return ck_err_set(err, CK_EFORMAT,
                          "%s:%s: dimension name '%s' cannot name an HDF5 "
                          "dataset",
                          s->path, array, d);
    return CK_OK;
}

ck_code ck_h5_note_dims(ck_store *s, const ck_array_spec *spec, ck_err *err)
{
    h5_store *hs = s->impl;
    h5_dimreq *r;

    if (spec->ndim == 0 || (!spec->has_dims && !hs->netcdf))
        return CK_OK;
    /* Only a netCDF file needs a dimension to be one thing: elsewhere an
     * axis no scale can name keeps its name as a label. */
    for (int d = 0; hs->netcdf && spec->has_dims && d < spec->ndim; d++) {
        const char *dn = spec->dims[d];
        if (!dn[0])
            continue;
        CK_TRY(check_dim_name(s, spec->name, dn, err));
        /* netCDF allows a dimension to share its name with a variable
         * when it is the variable's first: its coordinate variable, or
         * x(x, y), which netCDF-C keeps as a scale of two axes. */
        if (strcmp(dn, base_of(spec->name)) == 0 && d > 0)
            return ck_err_set(err, CK_EFORMAT,
                              "%s:%s: dimension '%s' has the name of this "
                              "array but is not its first (netCDF names "
                              "only a variable's first dimension so)",
                              s->path, spec->name, dn);
        for (int k = 0; k < d; k++)
            if (strcmp(spec->dims[k], dn) == 0 &&
                spec->shape[k] != spec->shape[d])
                return ck_err_set(err, CK_EFORMAT,
                                  "%s:%s: dimension '%s' is both %" PRId64
                                  " and %" PRId64 " long",
                                  s->path, spec->name, dn, spec->shape[k],
                                  spec->shape[d]);
        for (int i = 0; i < hs->ndimreq; i++) {
            const h5_dimreq *o = &hs->dimreq[i];
            if (!same_group(o->name, spec->name))
                continue;
            /* netCDF lets the variables of an unlimited dimension have
             * different lengths along it: the dimension's length is the
             * longest (netCDF-C nc4_find_dim_len); the rest read as
             * fill beyond their own. */
            for (int k = 0; k < o->ndim; k++)
                if (strcmp(o->dims[k], dn) == 0 &&
                    o->shape[k] != spec->shape[d] &&
                    !(spec->unlimited >> d & 1 && o->unlimited >> k & 1))
                    return ck_err_set(err, CK_EFORMAT,
                                      "%s:%s: dimension '%s' is %" PRId64
                                      " long, but %" PRId64 " in %s (a "
                                      "dimension has one length)",
                                      s->path, spec->name, dn, spec->shape[d],
                                      o->shape[k], o->name);
        }
    }
    if (hs->ndimreq == hs->capdimreq) {
        int cap = hs->capdimreq ? 2 * hs->capdimreq : 8;
        h5_dimreq *v = realloc(hs->dimreq, (size_t)cap * sizeof *v);
        if (!v)
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        hs->dimreq = v;
        hs->capdimreq = cap;
    }
    r = &hs->dimreq[hs->ndimreq++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", spec->name);
    r->ndim = spec->ndim;
    r->unlimited = spec->unlimited;
    for (int d = 0; d < spec->ndim; d++) {
        r->shape[d] = spec->shape[d];
        if (spec->has_dims)
            snprintf(r->dims[d], CK_DIM_NAME_MAX, "%s", spec->dims[d]);
    }
    return CK_OK;
}

/* The length another noted array of the group gives dimension d; -1 when
 * none names it.  'skip' is the array asking. */
static int64_t noted_len(const h5_store *hs, const char *group_of_name,
                         const char *d, const h5_dimreq *skip)
{
    for (int i = 0; i < hs->ndimreq; i++) {
        const h5_dimreq *o = &hs->dimreq[i];
        if (o == skip || !same_group(o->name, group_of_name))
            continue;
        for (int k = 0; k < o->ndim; k++)
            if (strcmp(o->dims[k], d) == 0)
                return o->shape[k];
    }
    return -1;
}

/* The length of dimension k of r: its own, or for an unlimited one the
 * longest any noted array of the group gives it (netCDF's rule). */
static int64_t dim_len(const h5_store *hs, const h5_dimreq *r, int k)
{
    int64_t len = r->shape[k];

    if (!(r->unlimited >> k & 1))
        return len;
    for (int i = 0; i < hs->ndimreq; i++) {
        const h5_dimreq *o = &hs->dimreq[i];
        if (!same_group(o->name, r->name))
            continue;
        for (int j = 0; j < o->ndim; j++)
            if (o->unlimited >> j & 1 && strcmp(o->dims[j], r->dims[k]) == 0 &&
                o->shape[j] > len)
                len = o->shape[j];
    }
    return len;
}

/* Length of dataset 'path' when it is 1-D; -1 when it is absent, -2 when
 * it is something else (a group, another shape). */
static int64_t dataset_len(hid_t file, const char *path)
{
    hid_t obj, space;
    hsize_t dims[1];
    int64_t len = -2;

    if (H5Lexists(file, path, H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return -1;
    }
    if ((obj = H5Oopen(file, path, H5P_DEFAULT)) < 0)
        return -2;
    if (H5Iget_type(obj) == H5I_DATASET && (space = H5Dget_space(obj)) >= 0) {
        if (H5Sget_simple_extent_ndims(space) == 1 &&
            H5Sget_simple_extent_dims(space, dims, NULL) == 1)
            len = (int64_t)dims[0];
        H5Sclose(space);
    }
    H5Oclose(obj);
    return len;
}

static void join(char *out, size_t n, const char *array, const char *d)
{
    char g[512];

    group_of(array, g, sizeof g);
    snprintf(out, n, "%s/%s", g, d);
}

/* Names the axes left unnamed.  A 1-D array whose name another array of
 * its group uses as a dimension of its length is that dimension's
 * coordinate variable; any other unnamed axis k is "dim_k" (xarray's
 * and NumPy-to-netCDF tools' convention), or "dim_k_LEN" when "dim_k"
 * already has another length in the group. */
static void name_unnamed(ck_store *s)
{
    h5_store *hs = s->impl;

    if (!hs->netcdf)
        return;
    for (int i = 0; i < hs->ndimreq; i++) {
        h5_dimreq *r = &hs->dimreq[i];
        for (int k = 0; k < r->ndim; k++) {
            char path[1100], cand[CK_DIM_NAME_MAX];
            int64_t len = r->shape[k], other;
            if (r->dims[k][0])
                continue;
            if (r->ndim == 1 &&
                noted_len(hs, r->name, base_of(r->name), r) == len) {
                snprintf(r->dims[k], CK_DIM_NAME_MAX, "%s", base_of(r->name));
                continue;
            }
            snprintf(cand, sizeof cand, "dim_%d", k);
            join(path, sizeof path, r->name, cand);
            other = noted_len(hs, r->name, cand, r);
            if ((other >= 0 && other != len) ||
                dataset_len(hs->file, path) == -2 ||
                (dataset_len(hs->file, path) >= 0 &&
                 dataset_len(hs->file, path) != len))
                snprintf(cand, sizeof cand, "dim_%d_%" PRId64, k, len);
            snprintf(r->dims[k], CK_DIM_NAME_MAX, "%s", cand);
        }
    }
}

/* The noted array at 'path', or NULL. */
static const h5_dimreq *noted(const h5_store *hs, const char *path)
{
    for (int i = 0; i < hs->ndimreq; i++)
        if (strcmp(hs->dimreq[i].name, path) == 0)
            return &hs->dimreq[i];
    return NULL;
}

/* netCDF-4's dimension without a variable: a float dataset of the
 * dimension's length that holds no data (never allocated), with the NAME
 * netCDF-C gives it (libhdf5/nc4hdf.c); unlimited (netCDF's record
 * dimension) when 'unlimited' or the length is 0. */
static hid_t make_dim_only(h5_store *hs, const char *path, int64_t len,
                           int unlimited)
{
    hsize_t dim = (hsize_t)len, one = 1;
    hsize_t maxd = len > 0 && !unlimited ? dim : H5S_UNLIMITED;
    hid_t space = -1, dcpl = -1, ds = -1;
    char nm[128];

    if ((space = H5Screate_simple(1, &dim, &maxd)) < 0 ||
        (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
        (hs->netcdf &&
         H5Pset_attr_creation_order(dcpl, H5P_CRT_ORDER_TRACKED |
                                              H5P_CRT_ORDER_INDEXED) < 0) ||
        (maxd == H5S_UNLIMITED && H5Pset_chunk(dcpl, 1, &one) < 0))
        goto out;
    ds = H5Dcreate2(hs->file, path, H5T_IEEE_F32BE, space, H5P_DEFAULT, dcpl,
                    H5P_DEFAULT);
    snprintf(nm, sizeof nm, "%s%10" PRId64, CK_NC_DIM_ONLY, len);
    if (ds >= 0 && H5DSset_scale(ds, nm) < 0) {
        H5Dclose(ds);
        ds = -1;
    }
out:
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    return ds;
}

/* A scale of the file: its path and netCDF dimension id. */
typedef struct dim_ent {
    char path[1100];
    int64_t len;
} dim_ent;

/* Writes _Netcdf4Dimid (a scalar int32, as netCDF-C does) on scale ds. */
static herr_t write_dimid(hid_t ds, int id)
{
    hid_t space = H5Screate(H5S_SCALAR), attr = -1;
    int32_t v = id;
    herr_t r = -1;

    if (space < 0)
        return -1;
    if (H5Aexists(ds, "_Netcdf4Dimid") > 0 &&
        H5Adelete(ds, "_Netcdf4Dimid") < 0)
        goto out;
    attr = H5Acreate2(ds, "_Netcdf4Dimid", H5T_STD_I32LE, space, H5P_DEFAULT,
                      H5P_DEFAULT);
    if (attr >= 0)
        r = H5Awrite(attr, H5T_NATIVE_INT32, &v);
out:
    if (attr >= 0)
        H5Aclose(attr);
    H5Sclose(space);
    return r;
}

/* 1 when r is x(x, ...), more than 1-D: netCDF-C keeps such a variable
 * as the scale of its first dimension, with no scales attached (HDF5
 * attaches none to a scale) and its dimensions' ids in
 * _Netcdf4Coordinates instead. */
static int multi_scale(const h5_dimreq *r)
{
    return r->ndim > 1 && strcmp(r->dims[0], base_of(r->name)) == 0;
}

/* Writes _Netcdf4Coordinates (int32, one per axis: the dimensions' ids)
 * on the dataset at path, as netCDF-C does for x(x, y). */
static herr_t write_coords(hid_t file, const char *path, const int *ids, int n)
{
    hsize_t dim = (hsize_t)n;
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT), space = -1, attr = -1;
    herr_t r = -1;

    if (ds < 0 || (space = H5Screate_simple(1, &dim, NULL)) < 0)
        goto out;
    if (H5Aexists(ds, "_Netcdf4Coordinates") > 0 &&
        H5Adelete(ds, "_Netcdf4Coordinates") < 0)
        goto out;
    attr = H5Acreate2(ds, "_Netcdf4Coordinates", H5T_STD_I32LE, space,
                      H5P_DEFAULT, H5P_DEFAULT);
    if (attr >= 0)
        r = H5Awrite(attr, H5T_NATIVE_INT, ids);
out:
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (ds >= 0)
        H5Dclose(ds);
    return r;
}

/* Makes path a scale of dimension d, length len: the dataset there, or a
 * new placeholder.  Returns the open dataset, or -1 with err set. */
static hid_t scale_for(ck_store *s, const h5_dimreq *r, int k, const char *path,
                       ck_err *err)
{
    h5_store *hs = s->impl;
    const char *d = r->dims[k];
    int64_t len = dim_len(hs, r, k), have = dataset_len(hs->file, path);
    int grows = r->unlimited >> k & 1;
    const h5_dimreq *o;
    hid_t ds;

    /* x(x, y): the variable is its first dimension's scale. */
    if (have == -2 && (o = noted(hs, path)) != NULL && multi_scale(o) &&
        strcmp(o->dims[0], d) == 0 && o->shape[0] == len)
        have = len;
    if (have == -1) {
        if ((ds = make_dim_only(hs, path, len, grows)) < 0)
            ck_h5_fail(err, CK_EIO, "%s: cannot create dimension '%s'", s->path,
                       path);
        return ds;
    }
    /* An unlimited dimension's coordinate variable may be shorter than
     * the dimension, as any of its variables may. */
    if (have != len && !(grows && have >= 0 && have <= len)) {
        ck_err_set(err, CK_EFORMAT,
                   "%s:%s: dimension '%s' is %" PRId64 " long, but %s is "
                   "not a 1-d dataset of that length",
                   s->path, r->name, d, len, path);
        return -1;
    }
    /* A 1-D array along another dimension cannot also be this one's
     * scale (netCDF would rename it _nc4_non_coord_...). */
    if ((o = noted(hs, path)) != NULL && strcmp(o->dims[0], d) != 0) {
        ck_err_set(err, CK_EFORMAT,
                   "%s:%s: dimension '%s' would be the 1-d array %s, which "
                   "lies along '%s'",
                   s->path, r->name, d, path, o->dims[0]);
        return -1;
    }
    if ((ds = H5Dopen2(hs->file, path, H5P_DEFAULT)) < 0 ||
        (H5DSis_scale(ds) <= 0 && H5DSset_scale(ds, d) < 0)) {
        ck_h5_fail(err, CK_EIO, "%s: cannot make %s a dimension scale", s->path,
                   path);
        if (ds >= 0)
            H5Dclose(ds);
        return -1;
    }
    return ds;
}

/* Outside netCDF files: 1 when the dataset at path can be the scale of
 * axis k of r as it is (a 1-D dataset of the axis's length that lies
 * along no other dimension). */
static int usable_scale(const h5_store *hs, const h5_dimreq *r, int k,
                        const char *path)
{
    const h5_dimreq *o = noted(hs, path);

    return !strchr(r->dims[k], '/') &&
           dataset_len(hs->file, path) == r->shape[k] &&
           (!o || strcmp(o->dims[0], r->dims[k]) == 0);
}

ck_code ck_h5_write_dims(ck_store *s, ck_err *err)
{
    h5_store *hs = s->impl;
    dim_ent *ent = NULL;
    int nent = 0, cap = 0;
    ck_code rc = CK_OK;

    if (hs->ndimreq == 0)
        return CK_OK;
    name_unnamed(s);
    for (int i = 0; i < hs->ndimreq && rc == CK_OK; i++) {
        const h5_dimreq *r = &hs->dimreq[i];
        hid_t var = -1;
        for (int k = 0; k < r->ndim && rc == CK_OK; k++) {
            char path[1100];
            int e, own;
            hid_t ds;
            if (!r->dims[k][0])
                continue;
            join(path, sizeof path, r->name, r->dims[k]);
            own = strcmp(path, r->name) == 0;
            if (!hs->netcdf && !usable_scale(hs, r, k, path)) {
                /* No dataset can be this axis's scale (the array itself
                 * only when it is 1-D, a coordinate variable): its name
                 * is kept as an HDF5 dimension label (h5py's
                 * dims[k].label), and no placeholder dataset is added to
                 * an HDF5 file. */
                if (var < 0)
                    var = H5Dopen2(hs->file, r->name, H5P_DEFAULT);
                if (var < 0 || H5DSset_label(var, (unsigned)k, r->dims[k]) < 0)
                    rc = ck_h5_fail(err, CK_EIO,
                                    "%s:%s: cannot label dimension %d", s->path,
                                    r->name, k);
                continue;
            }
            for (e = 0; e < nent; e++)
                if (strcmp(ent[e].path, path) == 0)
                    break;
            if (e < nent && ent[e].len != dim_len(hs, r, k)) {
                rc = ck_err_set(err, CK_EFORMAT,
                                "%s:%s: dimension '%s' is %" PRId64
                                " long here, %" PRId64 " elsewhere (a "
                                "dimension has one length)",
                                s->path, r->name, r->dims[k], r->shape[k],
                                ent[e].len);
                break;
            }
            if (e == nent) {
                if (nent == cap) {
                    dim_ent *v;
                    cap = cap ? 2 * cap : 8;
                    if (!(v = realloc(ent, (size_t)cap * sizeof *v))) {
                        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
                        break;
                    }
                    ent = v;
                }
                snprintf(ent[nent].path, sizeof ent[nent].path, "%s", path);
                ent[nent++].len = dim_len(hs, r, k);
            }
            if ((ds = scale_for(s, r, k, path, err)) < 0) {
                rc = err->code;
                break;
            }
            /* A coordinate variable is its own scale, never attached. */
            if (!own && !multi_scale(r)) {
                if (var < 0)
                    var = H5Dopen2(hs->file, r->name, H5P_DEFAULT);
                if (var < 0 || H5DSattach_scale(var, ds, (unsigned)k) < 0)
                    rc = ck_h5_fail(err, CK_EIO,
                                    "%s:%s: cannot attach dimension '%s'",
                                    s->path, r->name, r->dims[k]);
            }
            H5Dclose(ds);
        }
        if (var >= 0)
            H5Dclose(var);
    }
    /* netCDF-C numbers dimensions by _Netcdf4Dimid when it is there, in
     * the order they were first used here: time, lat, lon as written. */
    for (int e = 0; hs->netcdf && e < nent && rc == CK_OK; e++) {
        hid_t ds = H5Dopen2(hs->file, ent[e].path, H5P_DEFAULT);
        if (ds < 0 || write_dimid(ds, e) < 0)
            rc = ck_h5_fail(err, CK_EIO, "%s: cannot number dimension %s",
                            s->path, ent[e].path);
        if (ds >= 0)
            H5Dclose(ds);
    }
    for (int i = 0; hs->netcdf && i < hs->ndimreq && rc == CK_OK; i++) {
        const h5_dimreq *r = &hs->dimreq[i];
        int ids[CK_MAX_DIMS];
        if (!multi_scale(r))
            continue;
        for (int k = 0; k < r->ndim; k++) {
            char path[1100];
            join(path, sizeof path, r->name, r->dims[k]);
            for (ids[k] = 0; ids[k] < nent; ids[k]++)
                if (strcmp(ent[ids[k]].path, path) == 0)
                    break;
        }
        if (write_coords(hs->file, r->name, ids, r->ndim) < 0)
            rc = ck_h5_fail(err, CK_EIO,
                            "%s:%s: cannot write _Netcdf4Coordinates", s->path,
                            r->name);
    }
    free(ent);
    return rc;
}
