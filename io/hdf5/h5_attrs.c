/*
 * io/hdf5/h5_attrs.c - attributes of HDF5 groups and datasets.
 * All of an object's attributes as one JSON object (for copies between
 * HDF5 and Zarr), and one typed attribute at a time (ck_store_set_attr,
 * ck_store_get_attr).  Values HDF5 or JSON cannot hold are skipped with a
 * note, never an error.  Dataset data is not touched here.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/ck_log.h"
#include <hdf5_hl.h>

#include "io/attrs_json.h"
#include "io/hdf5/h5_impl.h"

/* Attributes larger than this many elements are skipped, not read. */
#define ATTR_MAX_ELEMS ((hssize_t)1 << 24)

/* ---- attributes ---- */

/* Numbers go out as raw text in the exchange form (io/attrs_json.h):
 * the shortest text that reads back exactly (cJSON's own printing rounds
 * 2^53 + 1 and 0.1 + 0.2), a float always with a '.' or an exponent so
 * that Python reads a float, non-finite ones as Python's json writes them. */
static cJSON *json_double(double v)
{
    char buf[48];

    if (isnan(v))
        return cJSON_CreateRaw("NaN");
    if (isinf(v))
        return cJSON_CreateRaw(v > 0 ? "Infinity" : "-Infinity");
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    return cJSON_CreateRaw(buf);
}

static cJSON *json_int(long long v)
{
    char buf[32];

    snprintf(buf, sizeof buf, "%lld", v);
    return cJSON_CreateRaw(buf);
}

static cJSON *json_uint(unsigned long long v)
{
    char buf[32];

    snprintf(buf, sizeof buf, "%llu", v);
    return cJSON_CreateRaw(buf);
}

/* Turns a flat JSON array of a C-order N-d attribute into nested arrays
 * (what NumPy's tolist() gives, and how zarr keeps array attributes).
 * Takes flat; NULL when out of memory. */
static cJSON *nest(cJSON *flat, const hsize_t *dims, int nd)
{
    for (int d = nd - 1; d >= 1; d--) {
        cJSON *outer = cJSON_CreateArray(), *item;
        if (!outer) {
            cJSON_Delete(flat);
            return NULL;
        }
        while (flat->child) {
            cJSON *row = cJSON_CreateArray();
            if (!row) {
                cJSON_Delete(outer);
                cJSON_Delete(flat);
                return NULL;
            }
            for (hsize_t k = 0; k < dims[d] && flat->child; k++) {
                item = cJSON_DetachItemFromArray(flat, 0);
                cJSON_AddItemToArray(row, item);
            }
            cJSON_AddItemToArray(outer, row);
        }
        cJSON_Delete(flat);
        flat = outer;
    }
    return flat;
}

/* The value of one attribute as JSON, or NULL to skip it. */
static cJSON *attr_json(hid_t attr, const char *name, const char *where)
{
    hid_t type = H5Aget_type(attr), space = H5Aget_space(attr), mt = -1;
    H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    H5S_class_t scls =
        space >= 0 ? H5Sget_simple_extent_type(space) : H5S_NO_CLASS;
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    int nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    cJSON *v = NULL, *arr = NULL;
    void *buf = NULL;
    size_t esz = 8;
    int isbool = cls == H5T_ENUM && ck_h5_is_bool_enum(type);
    int isvstr = cls == H5T_STRING && H5Tis_variable_str(type) > 0;
    int got = 0;

    if (!(scls == H5S_SCALAR ||
          (scls == H5S_SIMPLE && nd >= 1 && nd <= CK_MAX_DIMS)) ||
        n < 0 || n > ATTR_MAX_ELEMS)
        goto skip;
    if (cls == H5T_INTEGER)
        mt = H5Tcopy(H5Tget_sign(type) == H5T_SGN_NONE ? H5T_NATIVE_ULLONG
                                                       : H5T_NATIVE_LLONG);
    else if (cls == H5T_FLOAT)
        mt = H5Tcopy(H5T_NATIVE_DOUBLE);
    else if (isbool)
        mt = ck_h5_make_type(CK_BOOL, 0), esz = 1;
    else if (cls == H5T_STRING && isvstr) {
        mt = H5Tcopy(H5T_C_S1);
        if (mt >= 0 && (H5Tset_size(mt, H5T_VARIABLE) < 0 ||
                        H5Tset_cset(mt, H5Tget_cset(type)) < 0)) {
            H5Tclose(mt);
            mt = -1;
        }
        esz = sizeof(char *);
    } else if (cls == H5T_STRING) {
        mt = H5Tcopy(type);
        esz = H5Tget_size(type);
    } else {
        goto skip;
    }
    if (mt < 0 || esz == 0 || !(buf = calloc((size_t)(n ? n : 1), esz)) ||
        H5Aread(attr, mt, buf) < 0)
        goto skip;
    got = 1;
    /* an array of one element is one value, as netCDF reads it (netCDF-C
     * writes every attribute as a 1-D array; h5py writes scalars) */
    if (scls == H5S_SIMPLE && !(nd == 1 && n == 1) &&
        !(arr = cJSON_CreateArray()))
        goto skip;
    for (hssize_t i = 0; i < n; i++) {
        cJSON *item = NULL;
        if (cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_NONE)
            item = json_uint(((unsigned long long *)buf)[i]);
        else if (cls == H5T_INTEGER)
            item = json_int(((long long *)buf)[i]);
        else if (cls == H5T_FLOAT)
            item = json_double(((double *)buf)[i]);
        else if (isbool)
            item = cJSON_CreateBool(((int8_t *)buf)[i] != 0);
        else if (isvstr) {
            const char *p = ((char **)buf)[i];
            char *tmp = ck_attrs_utf8(p ? p : "", SIZE_MAX);
            item = tmp ? cJSON_CreateString(tmp) : NULL;
            free(tmp);
        } else {
            const char *p = (const char *)buf + (size_t)i * esz;
            char *tmp = ck_attrs_utf8(p, esz);
            if (tmp) {
                size_t len = strlen(tmp);
                if (H5Tget_strpad(type) == H5T_STR_SPACEPAD)
                    while (len > 0 && tmp[len - 1] == ' ')
                        tmp[--len] = '\0';
                item = cJSON_CreateString(tmp);
                free(tmp);
            }
        }
        if (!item)
            goto skip;
        if (!arr) {
            v = item;
            break;
        }
        cJSON_AddItemToArray(arr, item);
    }
    if (arr && nd > 1) {
        hsize_t dims[CK_MAX_DIMS];
        H5Sget_simple_extent_dims(space, dims, NULL);
        if (!(arr = nest(arr, dims, nd)))
            goto skip;
    }
    if (arr) {
        v = arr;
        arr = NULL;
    }
    goto out;
skip:
    ck_log(CK_LOG_NOTE, "%s: attribute '%s' skipped (%s)", where, name,
           ck_h5_class_name(cls));
out:
    if (got && isvstr)
        H5Dvlen_reclaim(mt, space, H5P_DEFAULT, buf);
    free(buf);
    cJSON_Delete(arr);
    if (mt >= 0)
        H5Tclose(mt);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    return v;
}

static ck_code open_object(ck_store *s, const char *name, hid_t *out,
                           ck_err *err)
{
    h5_store *hs = s->impl;
    const char *n = name && *name ? name : "/";

    if (!hs || hs->file < 0)
        return ck_err_set(err, CK_EUSAGE, "%s: file already closed", s->path);
    *out = H5Oopen(hs->file, n, H5P_DEFAULT);
    if (*out < 0)
        return ck_err_set(err, CK_EFORMAT, "%s: no group or dataset '%s'",
                          s->path, n);
    return CK_OK;
}

typedef struct attr_ctx {
    cJSON *obj;
    const char *where;
    int scale; /* the object is a dimension scale */
} attr_ctx;

/* 1 for the attributes that keep HDF5 dimension scales and netCDF-4's
 * own bookkeeping: they describe the file's structure, not the data
 * (netCDF-C hides them too), they would be wrong copied onto another
 * array, and dimension names travel in ck_array_info instead.  CLASS and
 * NAME are such only on a scale. */
static int bookkeeping(const char *name, int scale)
{
    static const char *const always[] = {
        "DIMENSION_LIST", "DIMENSION_LABELS",    "REFERENCE_LIST",
        "_Netcdf4Dimid",  "_Netcdf4Coordinates", "_NCProperties",
        "_nc3_strict",
    };

    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
        if (strcmp(name, always[i]) == 0)
            return 1;
    return scale && (strcmp(name, "CLASS") == 0 || strcmp(name, "NAME") == 0);
}

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *ai,
                      void *data)
{
    attr_ctx *c = data;
    hid_t attr;
    cJSON *v;

    (void)ai;
    if (bookkeeping(name, c->scale)) {
        ck_log(CK_LOG_DEBUG,
               "%s: attribute '%s' left out (dimension "
               "scale bookkeeping)",
               c->where, name);
        return 0;
    }
    if ((attr = H5Aopen(loc, name, H5P_DEFAULT)) < 0)
        return 0;
    v = attr_json(attr, name, c->where);
    H5Aclose(attr);
    if (v) {
        char *key = ck_attrs_utf8(name, SIZE_MAX);
        if (key)
            cJSON_AddItemToObject(c->obj, key, v);
        else
            cJSON_Delete(v);
        free(key);
    }
    return 0;
}

/* The order attributes are listed in: the order they were written where
 * the object tracks it (netCDF-4 files; what ncdump shows), else by name. */
static H5_index_t attr_order(hid_t obj)
{
    H5I_type_t t = H5Iget_type(obj);
    hid_t pl = t == H5I_DATASET ? H5Dget_create_plist(obj)
               : t == H5I_GROUP ? H5Gget_create_plist(obj)
                                : -1;
    unsigned flags = 0;

    if (pl >= 0) {
        if (H5Pget_attr_creation_order(pl, &flags) < 0)
            flags = 0;
        H5Pclose(pl);
    }
    H5Eclear2(H5E_DEFAULT);
    return flags & H5P_CRT_ORDER_TRACKED ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
}

ck_code ck_h5_get_attrs(ck_store *s, const char *name, char **json, ck_err *err)
{
    char where[PATH_MAX + 520];
    hid_t obj = -1;
    char *text = NULL;
    cJSON *out;
    attr_ctx c;
    ck_code rc;

    snprintf(where, sizeof where, "%s:%s", s->path, name ? name : "/");
    if (!(out = cJSON_CreateObject()))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    c.obj = out;
    c.where = where;
    c.scale = 0;
    ck_h5_lock();
    rc = open_object(s, name, &obj, err);
    if (rc == CK_OK && H5Iget_type(obj) == H5I_DATASET)
        c.scale = H5DSis_scale(obj) > 0;
    H5Eclear2(H5E_DEFAULT);
    if (rc == CK_OK &&
        H5Aiterate2(obj, attr_order(obj), H5_ITER_INC, NULL, attr_cb, &c) < 0)
        rc = ck_h5_fail(err, CK_EFORMAT, "%s: cannot read attributes", where);
    if (obj >= 0)
        H5Oclose(obj);
    ck_h5_unlock();
    if (rc == CK_OK && !(text = cJSON_PrintUnformatted(out)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    cJSON_Delete(out);
    if (rc == CK_OK)
        *json = text;
    return rc;
}

/* Writes one attribute; returns 0 when the value has no HDF5 form (the
 * caller notes it), -1 on an HDF5 failure. */
static int write_attr_nd(hid_t obj, const char *name, const cJSON *v, int nd,
                         const hsize_t *dims, int nc);

/* Shape of a rectangular nested JSON array into dims; 0 if ragged or
 * deeper than CK_MAX_DIMS. */
static int json_shape(const cJSON *v, int d, hsize_t *dims, int *nd)
{
    const cJSON *e;

    if (!cJSON_IsArray(v))
        return d == *nd;
    if (d >= CK_MAX_DIMS)
        return 0;
    if (d >= *nd) {
        *nd = d + 1;
        dims[d] = (hsize_t)cJSON_GetArraySize(v);
    } else if (dims[d] != (hsize_t)cJSON_GetArraySize(v)) {
        return 0;
    }
    cJSON_ArrayForEach(e, v)
    {
        if (!json_shape(e, d + 1, dims, nd))
            return 0;
    }
    return 1;
}

static void flatten(const cJSON *v, cJSON *flat)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, v)
    {
        if (cJSON_IsArray(e))
            flatten(e, flat);
        else
            cJSON_AddItemToArray(flat, cJSON_Duplicate(e, 1));
    }
}

static int write_attr(hid_t obj, const char *name, const cJSON *v, int nc)
{
    hsize_t dims[CK_MAX_DIMS];
    int nd = 0, r;
    cJSON *flat;

    if (!cJSON_IsArray(v) || !v->child || !cJSON_IsArray(v->child))
        return write_attr_nd(obj, name, v, cJSON_IsArray(v), NULL, nc);
    if (!json_shape(v, 0, dims, &nd) || nd < 2)
        return 0;
    if (!(flat = cJSON_CreateArray()))
        return -1;
    flatten(v, flat);
    r = write_attr_nd(obj, name, flat, nd, dims, nc);
    cJSON_Delete(flat);
    return r;
}

/* ---- netCDF's typing rules ---- */

/* The attributes netCDF wants in the variable's own type: the NUG says so
 * of _FillValue (netCDF-C refuses another type), the CF conventions of
 * missing_value, valid_min, valid_max and valid_range (CF 2.5.1). */
static int cf_typed(const char *key)
{
    static const char *const keys[] = {"_FillValue", "missing_value",
                                       "valid_min", "valid_max", "valid_range"};

    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0)
            return 1;
    return 0;
}

/* The dtype of dataset obj, with its file type in *ftype (caller closes
 * it), when attribute 'key' must be written in it; CK_DT_INVALID when not
 * (another key, a group, a bool dataset). */
static ck_dtype typed_dtype(hid_t obj, const char *key, hid_t *ftype)
{
    char why[64];
    int be, exact;
    ck_dtype dt = CK_DT_INVALID;
    hid_t t;

    *ftype = -1;
    if (!cf_typed(key) || H5Iget_type(obj) != H5I_DATASET ||
        (t = H5Dget_type(obj)) < 0)
        return CK_DT_INVALID;
    dt = ck_h5_map_type(t, &be, &exact, why, sizeof why);
    if (dt == CK_DT_INVALID || dt == CK_BOOL || !exact) {
        H5Tclose(t);
        return CK_DT_INVALID;
    }
    *ftype = t;
    return dt;
}

/* Converts n values (f64, or i64 when 'ints') to dt into out; 0 when one
 * does not fit: an integer dtype takes only whole numbers in its range, a
 * float one any number that does not overflow to infinity. */
static int to_dtype(ck_dtype dt, const double *f, const int64_t *i, int ints,
                    int n, void *out)
{
    size_t es = ck_dtype_size(dt);

    for (int k = 0; k < n; k++) {
        void *p = (char *)out + (size_t)k * es;
        if (ints) {
            int64_t back;
            ck_dtype_convert(dt, p, CK_I64, &i[k], 1);
            ck_dtype_convert(CK_I64, &back, dt, p, 1);
            if (!ck_dtype_is_float(dt) && back != i[k])
                return 0;
            if (dt == CK_U64 && i[k] < 0)
                return 0;
        } else {
            double back;
            ck_dtype_convert(dt, p, CK_F64, &f[k], 1);
            ck_dtype_convert(CK_F64, &back, dt, p, 1);
            if (ck_dtype_is_float(dt) ? isfinite(f[k]) && !isfinite(back)
                                      : back != f[k])
                return 0;
        }
    }
    return 1;
}

/* Writes attribute 'name' of obj as n values of dt (file type ftype),
 * from f64 or i64 values; 0 when they do not fit dt, -1 on an HDF5
 * failure, 1 done.  'scalar': a scalar dataspace, else 1-D. */
static int write_typed(hid_t obj, const char *name, ck_dtype dt, hid_t ftype,
                       const double *f, const int64_t *i, int ints, int n,
                       int scalar)
{
    hsize_t dim = (hsize_t)n;
    hid_t mtype = -1, space = -1, attr = -1;
    void *buf = calloc((size_t)(n ? n : 1), 8);
    int ok = -1;

    if (!buf)
        return -1;
    if (!to_dtype(dt, f, i, ints, n, buf)) {
        free(buf);
        return 0;
    }
    if ((mtype = ck_h5_make_type(dt, 0)) < 0 ||
        (space = scalar ? H5Screate(H5S_SCALAR)
                        : H5Screate_simple(1, &dim, NULL)) < 0 ||
        (H5Aexists(obj, name) > 0 && H5Adelete(obj, name) < 0) ||
        (attr = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT)) <
            0 ||
        H5Awrite(attr, mtype, buf) < 0)
        goto out;
    ok = 1;
out:
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (mtype >= 0)
        H5Tclose(mtype);
    free(buf);
    return ok;
}

/* A fixed-length string type of s's length (at least 1), NUL-terminated:
 * what netCDF reads as NC_CHAR text (ncdump: units = "K"), where a
 * variable-length string is NC_STRING (string units = "K"), which older
 * netCDF tools do not take.  ASCII unless s is not. */
static hid_t char_type(const char *str)
{
    size_t len = strlen(str);
    int ascii = 1;
    hid_t t;

    for (const unsigned char *p = (const unsigned char *)str; *p; p++)
        ascii &= *p < 0x80;
    if ((t = H5Tcopy(H5T_C_S1)) < 0)
        return -1;
    if (H5Tset_size(t, len ? len : 1) < 0 ||
        H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
        H5Tset_cset(t, ascii ? H5T_CSET_ASCII : H5T_CSET_UTF8) < 0) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

/* Writes a scalar (nd 0) or a flat array holding an N-d attribute of shape
 * dims (NULL: 1-D of its length).  nc: a netCDF file (a scalar string is
 * NC_CHAR text, netCDF's typed attributes take the variable's type). */
static int write_attr_nd(hid_t obj, const char *name, const cJSON *v, int nd,
                         const hsize_t *dims, int nc)
{
    int isarr = cJSON_IsArray(v), n = isarr ? cJSON_GetArraySize(v) : 1;
    int nnum = 0, nstr = 0, nbool = 0, ok = -1;
    const cJSON *e;
    hid_t type = -1, space = -1, attr = -1;
    hsize_t dim = (hsize_t)n;
    void *buf = NULL;
    ck_attrs_num num;

    for (e = isarr ? v->child : v; e; e = isarr ? e->next : NULL) {
        nnum += ck_attrs_number(e, &num);
        nstr += cJSON_IsString(e);
        nbool += cJSON_IsBool(e);
    }
    if (nnum == n) {
        /* Integer literals stay exact: int64, or uint64 past INT64_MAX
         * (as NumPy reads a Python int); anything else (and []) is
         * float64. */
        int ints = n > 0, sgn = 1, k = 0;
        double *f = calloc((size_t)(n ? n : 1), sizeof *f);
        uint64_t *u = calloc((size_t)(n ? n : 1), sizeof *u);
        ck_dtype dt;
        hid_t dft;
        if (!f || !u) {
            free(f);
            free(u);
            return -1;
        }
        for (e = isarr ? v->child : v; e; e = isarr ? e->next : NULL, k++) {
            ck_attrs_number(e, &num);
            f[k] = num.f;
            ints &= num.integer && num.fits;
            sgn &= !num.integer || num.neg || num.mag <= (uint64_t)INT64_MAX;
            u[k] = num.neg ? (uint64_t)0 - num.mag : num.mag;
        }
        /* _FillValue and co. in the variable's type; a value that does
         * not fit it keeps the generic type below. */
        if (n > 0 && nd <= 1 &&
            (dt = typed_dtype(obj, name, &dft)) != CK_DT_INVALID) {
            int r = write_typed(obj, name, dt, dft, f, (const int64_t *)u,
                                ints && sgn, n, !isarr);
            H5Tclose(dft);
            if (r != 0) {
                free(f);
                free(u);
                return r;
            }
        }
        if (ints) {
            type = H5Tcopy(sgn ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64);
            buf = u;
            free(f);
        } else {
            type = H5Tcopy(H5T_NATIVE_DOUBLE);
            buf = f;
            free(u);
        }
    } else if (nc && nstr == 1 && !isarr) {
        /* Text as netCDF writes it: the bytes themselves, NUL-ended. */
        size_t len = strlen(v->valuestring);
        if (!(buf = calloc(len + 1, 1)))
            return -1;
        memcpy(buf, v->valuestring, len);
        type = char_type(v->valuestring);
    } else if (nstr == n && n > 0) {
        size_t k = 0;
        if (!(buf = calloc((size_t)n, sizeof(char *))))
            return -1;
        if (isarr) {
            cJSON_ArrayForEach(e, v)((const char **)buf)[k++] = e->valuestring;
        } else {
            ((const char **)buf)[0] = v->valuestring;
        }
        type = H5Tcopy(H5T_C_S1);
        if (type >= 0 && (H5Tset_size(type, H5T_VARIABLE) < 0 ||
                          H5Tset_cset(type, H5T_CSET_UTF8) < 0))
            goto out;
    } else if (nbool == n && n > 0) {
        size_t k = 0;
        if (!(buf = calloc((size_t)n, 1)))
            return -1;
        if (isarr) {
            cJSON_ArrayForEach(e, v)((int8_t *)buf)[k++] =
                (int8_t)cJSON_IsTrue(e);
        } else {
            ((int8_t *)buf)[0] = (int8_t)cJSON_IsTrue(v);
        }
        type = ck_h5_make_type(CK_BOOL, 0);
    } else {
        return 0;
    }
    if (type < 0)
        goto out;
    space = !isarr ? H5Screate(H5S_SCALAR)
            : dims ? H5Screate_simple(nd, dims, NULL)
                   : H5Screate_simple(1, &dim, NULL);
    if (space < 0)
        goto out;
    if (H5Aexists(obj, name) > 0 && H5Adelete(obj, name) < 0)
        goto out;
    if ((attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT)) <
            0 ||
        H5Awrite(attr, type, buf) < 0)
        goto out;
    ok = 1;
out:
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    free(buf);
    return ok;
}

ck_code ck_h5_set_attrs(ck_store *s, const char *name, const char *json,
                        ck_err *err)
{
    cJSON *root = ck_attrs_parse(json, strlen(json)), *v;
    char where[PATH_MAX + 520];
    hid_t obj = -1;
    ck_code rc;

    snprintf(where, sizeof where, "%s:%s", s->path, name ? name : "/");
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ck_err_set(err, CK_EUSAGE,
                          "%s: attributes must be a JSON object", where);
    }
    ck_h5_lock();
    /* Attributes of a group not made yet (one that holds no dataset, in a
     * copy) make it, with the groups above it, as in a Zarr store. */
    if (s->writing && name && strcmp(name, "/") != 0 &&
        H5Lexists(((h5_store *)s->impl)->file, name, H5P_DEFAULT) <= 0) {
        h5_store *hs = s->impl;
        H5Eclear2(H5E_DEFAULT);
        if (ck_h5_make_groups(hs->file, name, 1, hs->netcdf) < 0)
            H5Eclear2(H5E_DEFAULT); /* open_object says what is missing */
    }
    rc = open_object(s, name, &obj, err);
    for (v = root->child; rc == CK_OK && v; v = v->next) {
        /* Zarr's (xarray's) names of the dimensions: HDF5 has dimension
         * scales for them, which the writer makes (h5_dims.c) */
        if (strcmp(v->string, "_ARRAY_DIMENSIONS") == 0)
            continue;
        int r = write_attr(obj, v->string, v, ((h5_store *)s->impl)->netcdf);
        if (r < 0)
            rc = ck_h5_fail(err, CK_EIO, "%s: cannot write attribute '%s'",
                            where, v->string);
        else if (r == 0)
            ck_log(CK_LOG_WARN, /* lost: not a note --quiet may drop */
                   "%s: attribute '%s' skipped (HDF5 holds no such value)",
                   where, v->string);
    }
    if (obj >= 0)
        H5Oclose(obj);
    ck_h5_unlock();
    cJSON_Delete(root);
    return rc;
}

/* ---- one typed attribute (ck_store_set_attr, ck_store_get_attr) ---- */

/* Writes a scalar attribute.  Strings are variable-length UTF-8, what h5py
 * writes for a Python str and hands back as one (fixed-length ASCII comes
 * back as bytes in h5py 3); in a netCDF file fixed-length text, netCDF's
 * NC_CHAR.  Numbers are stored little-endian whatever the host, as h5py
 * does on the machines it runs on, except that _FillValue, missing_value,
 * valid_min and valid_max of a numeric dataset take the dataset's type,
 * as netCDF requires (CK_EUSAGE when the value does not fit it). */
ck_code ck_h5_set_attr(ck_store *s, const char *name, const char *key,
                       const ck_attr *v, ck_err *err)
{
    h5_store *hs = s->impl;
    hid_t obj = -1, ftype = -1, mtype = -1, space = -1, attr = -1;
    const char *str = v->str;
    const void *buf = &str;
    ck_dtype dt;
    htri_t ex;
    ck_code rc;

    ck_h5_lock();
    if ((rc = open_object(s, name, &obj, err)) != CK_OK)
        goto out;
    if (v->kind != CK_ATTR_STR &&
        (dt = typed_dtype(obj, key, &ftype)) != CK_DT_INVALID) {
        int r = write_typed(obj, key, dt, ftype, &v->f64, &v->i64,
                            v->kind == CK_ATTR_I64, 1, 1);
        if (r < 0)
            goto fail;
        if (r == 0) {
            char num[40];
            if (v->kind == CK_ATTR_I64)
                snprintf(num, sizeof num, "%lld", (long long)v->i64);
            else
                snprintf(num, sizeof num, "%.17g", v->f64);
            rc = ck_err_set(err, CK_EUSAGE,
                            "%s:%s: attribute '%s': %s does not fit the "
                            "array's %s",
                            s->path, name, key, num, ck_dtype_name(dt));
        }
        goto out;
    }
    if (v->kind == CK_ATTR_STR && hs->netcdf) {
        ftype = char_type(v->str);
        mtype = ftype >= 0 ? H5Tcopy(ftype) : -1;
        buf = v->str;
    } else if (v->kind == CK_ATTR_STR) {
        ftype = H5Tcopy(H5T_C_S1);
        if (ftype >= 0 && (H5Tset_size(ftype, H5T_VARIABLE) < 0 ||
                           H5Tset_cset(ftype, H5T_CSET_UTF8) < 0)) {
            H5Tclose(ftype);
            ftype = -1;
        }
        mtype = ftype >= 0 ? H5Tcopy(ftype) : -1;
    } else if (v->kind == CK_ATTR_F64) {
        ftype = H5Tcopy(H5T_IEEE_F64LE);
        mtype = H5Tcopy(H5T_NATIVE_DOUBLE);
        buf = &v->f64;
    } else {
        ftype = H5Tcopy(H5T_STD_I64LE);
        mtype = H5Tcopy(H5T_NATIVE_INT64);
        buf = &v->i64;
    }
    /* A key that exists is replaced, even with another type: HDF5 cannot
     * change the type of an attribute in place. */
    if (ftype < 0 || mtype < 0 || (space = H5Screate(H5S_SCALAR)) < 0 ||
        (ex = H5Aexists(obj, key)) < 0 || (ex > 0 && H5Adelete(obj, key) < 0))
        goto fail;
    attr = H5Acreate2(obj, key, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, mtype, buf) < 0)
        goto fail;
    goto out;
fail:
    rc = ck_h5_fail(err, CK_EIO, "%s:%s: cannot write attribute '%s'", s->path,
                    name, key);
out:
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (mtype >= 0)
        H5Tclose(mtype);
    if (ftype >= 0)
        H5Tclose(ftype);
    if (obj >= 0)
        H5Oclose(obj);
    ck_h5_unlock();
    return rc;
}

/* Reads a string attribute of file type 'type' into v->str.  Called with
 * h5_mutex held. */
static ck_code read_str_attr(hid_t attr, hid_t type, hid_t space,
                             const char *label, const char *key, ck_attr *v,
                             ck_err *err)
{
    int vlen = H5Tis_variable_str(type) > 0;
    hid_t mt = H5Tcopy(vlen ? H5T_C_S1 : type);
    size_t esz = vlen ? sizeof(char *) : H5Tget_size(type), len;
    char *buf = NULL, *p;
    ck_code rc = CK_OK;

    /* A variable-length string is read as one in the file's character set
     * (HDF5 converts none); a fixed-length one as its own bytes. */
    if (mt < 0 || esz == 0 ||
        (vlen && (H5Tset_size(mt, H5T_VARIABLE) < 0 ||
                  H5Tset_cset(mt, H5Tget_cset(type)) < 0))) {
        rc = ck_h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'",
                        label, key);
        goto out;
    }
    if (!(buf = calloc(1, esz + 1))) {
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        goto out;
    }
    if (H5Aread(attr, mt, buf) < 0) {
        rc = ck_h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'",
                        label, key);
        free(buf);
        buf = NULL;
        goto out;
    }
    if (vlen) {
        p = *(char **)buf;
        len = p ? strlen(p) : 0;
    } else {
        p = buf;
        len = strnlen(p, esz);
        if (H5Tget_strpad(type) == H5T_STR_SPACEPAD)
            while (len > 0 && p[len - 1] == ' ')
                len--;
    }
    if (len >= sizeof v->str)
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s: attribute '%s': string of %zu bytes (at most "
                        "%zu)",
                        label, key, len, sizeof v->str - 1);
    else {
        v->kind = CK_ATTR_STR;
        if (len)
            memcpy(v->str, p, len);
        v->str[len] = '\0';
    }
    if (vlen)
        H5Dvlen_reclaim(mt, space, H5P_DEFAULT, buf);
out:
    free(buf);
    if (mt >= 0)
        H5Tclose(mt);
    return rc;
}

/* Reads one value of an integer, float or h5py-bool attribute, converted
 * by HDF5 to int64 or double.  Called with h5_mutex held. */
static ck_code read_num_attr(hid_t attr, hid_t type, const char *label,
                             const char *key, ck_attr *v, ck_err *err)
{
    H5T_class_t cls = H5Tget_class(type);
    int isuns = cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_NONE;
    hid_t mt = cls == H5T_FLOAT  ? H5Tcopy(H5T_NATIVE_DOUBLE)
               : cls == H5T_ENUM ? ck_h5_make_type(CK_BOOL, 0)
               : isuns           ? H5Tcopy(H5T_NATIVE_UINT64)
                                 : H5Tcopy(H5T_NATIVE_INT64);
    union {
        double f;
        int64_t i;
        uint64_t u;
        int8_t b;
    } buf;
    ck_code rc = CK_OK;

    memset(&buf, 0, sizeof buf);
    if (mt < 0 || H5Aread(attr, mt, &buf) < 0) {
        rc = ck_h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'",
                        label, key);
    } else if (cls == H5T_FLOAT) {
        v->kind = CK_ATTR_F64;
        v->f64 = buf.f;
    } else if (cls == H5T_ENUM) {
        v->kind = CK_ATTR_I64;
        v->i64 = buf.b != 0;
    } else if (isuns && buf.u > INT64_MAX) {
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s: attribute '%s': %llu does not fit int64", label,
                        key, (unsigned long long)buf.u);
    } else {
        v->kind = CK_ATTR_I64;
        v->i64 = isuns ? (int64_t)buf.u : buf.i;
    }
    if (mt >= 0)
        H5Tclose(mt);
    return rc;
}

ck_code ck_h5_get_attr(ck_store *s, const char *name, const char *key,
                       ck_attr *v, ck_err *err)
{
    char label[PATH_MAX + 520];
    hid_t obj = -1, attr = -1, type = -1, space = -1;
    H5T_class_t cls;
    hssize_t n;
    htri_t ex;
    ck_code rc;

    snprintf(label, sizeof label, "%s:%s", s->path, name);
    ck_h5_lock();
    if ((rc = open_object(s, name, &obj, err)) != CK_OK)
        goto out;
    if ((ex = H5Aexists(obj, key)) < 0) {
        rc = ck_h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'",
                        label, key);
        goto out;
    }
    if (!ex) {
        rc = ck_err_set(err, CK_EFORMAT, "%s: no attribute '%s'", label, key);
        goto out;
    }
    if ((attr = H5Aopen(obj, key, H5P_DEFAULT)) < 0 ||
        (type = H5Aget_type(attr)) < 0 || (space = H5Aget_space(attr)) < 0 ||
        (n = H5Sget_simple_extent_npoints(space)) < 0) {
        rc = ck_h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'",
                        label, key);
        goto out;
    }
    /* netCDF and MATLAB write a number as an array of one element: that is
     * one value too. */
    if (n != 1) {
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s: attribute '%s' holds %lld values, not one", label,
                        key, (long long)n);
        goto out;
    }
    cls = H5Tget_class(type);
    if (cls == H5T_STRING)
        rc = read_str_attr(attr, type, space, label, key, v, err);
    else if (cls == H5T_INTEGER || cls == H5T_FLOAT ||
             (cls == H5T_ENUM && ck_h5_is_bool_enum(type)))
        rc = read_num_attr(attr, type, label, key, v, err);
    else
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s: attribute '%s': HDF5 type class %s (only "
                        "strings and numbers are read)",
                        label, key, ck_h5_class_name(cls));
out:
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (attr >= 0)
        H5Aclose(attr);
    if (obj >= 0)
        H5Oclose(obj);
    ck_h5_unlock();
    return rc;
}

/* ---- types kept between HDF5 files (ck_store_copy_attrs) ---- */

typedef struct retype_ctx {
    hid_t dst; /* the object whose attributes are retyped */
    int failed;
} retype_ctx;

/* A numeric attribute of the source: the same name in dst, written from
 * JSON as int64/float64, is replaced by the source's bytes in the source's
 * type, when it holds as many values.  Anything else (strings, references,
 * compounds, what set_attrs skipped) is left as set_attrs made it. */
static herr_t retype_cb(hid_t src, const char *name, const H5A_info_t *info,
                        void *vctx)
{
    retype_ctx *c = vctx;
    hid_t sa = -1, st = -1, ss = -1, da = -1, dt = -1, ds = -1, na = -1;
    void *buf = NULL;
    H5T_class_t cls;
    hssize_t n;

    (void)info;
    /* _FillValue and co. are in the array's own type (typed_dtype), which
     * a copy --dtype changes */
    if ((cf_typed(name) && H5Iget_type(c->dst) == H5I_DATASET) ||
        H5Aexists(c->dst, name) <= 0)
        goto out;
    if ((sa = H5Aopen(src, name, H5P_DEFAULT)) < 0 ||
        (st = H5Aget_type(sa)) < 0 || (ss = H5Aget_space(sa)) < 0)
        goto out;
    cls = H5Tget_class(st);
    if ((cls != H5T_INTEGER && cls != H5T_FLOAT) ||
        (n = H5Sget_simple_extent_npoints(ss)) <= 0 ||
        (da = H5Aopen(c->dst, name, H5P_DEFAULT)) < 0 ||
        (dt = H5Aget_type(da)) < 0 || (ds = H5Aget_space(da)) < 0 ||
        H5Sget_simple_extent_npoints(ds) != n ||
        (H5Tget_class(dt) != H5T_INTEGER && H5Tget_class(dt) != H5T_FLOAT) ||
        H5Tequal(st, dt) > 0)
        goto out;
    size_t es = H5Tget_size(st);
    if (es == 0 || !(buf = malloc((size_t)n * es)) || H5Aread(sa, st, buf) < 0)
        goto out;
    H5Aclose(da);
    da = -1;
    if (H5Adelete(c->dst, name) < 0 ||
        (na = H5Acreate2(c->dst, name, st, ss, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
        H5Awrite(na, st, buf) < 0)
        c->failed = 1;
out:
    free(buf);
    if (na >= 0)
        H5Aclose(na);
    if (ds >= 0)
        H5Sclose(ds);
    if (dt >= 0)
        H5Tclose(dt);
    if (da >= 0)
        H5Aclose(da);
    if (ss >= 0)
        H5Sclose(ss);
    if (st >= 0)
        H5Tclose(st);
    if (sa >= 0)
        H5Aclose(sa);
    H5Eclear2(H5E_DEFAULT);
    return c->failed ? -1 : 0;
}

ck_code ck_h5_keep_attr_types(ck_store *dst, const char *dst_name,
                              ck_store *src, const char *src_name, ck_err *err)
{
    hid_t so = -1, d = -1;
    retype_ctx c = {-1, 0};
    ck_code rc;

    ck_h5_lock();
    rc = open_object(src, src_name, &so, err);
    if (rc == CK_OK)
        rc = open_object(dst, dst_name, &d, err);
    c.dst = d;
    if (rc == CK_OK &&
        (H5Aiterate2(so, H5_INDEX_NAME, H5_ITER_INC, NULL, retype_cb, &c) < 0 ||
         c.failed))
        rc = ck_h5_fail(err, CK_EIO, "%s:%s: cannot write attributes",
                        dst->path, dst_name ? dst_name : "/");
    if (d >= 0)
        H5Oclose(d);
    if (so >= 0)
        H5Oclose(so);
    ck_h5_unlock();
    return rc;
}
