/*
 * pipelines/cf.c - netCDF and CF conventions through a pipeline (see
 * pipelines/cf.h): dimension names and coordinates per node, axes named
 * by dimension, CF decoding of inputs as a node of its own
 * (CK_NODE_CF), and on the way out the dimension names, coordinate
 * variables, attributes, provenance and history of each output.
 *
 * The attribute rule (man chunkctl-pipeline(5), "netCDF and CF"): an
 * output keeps the attributes of the input its values come from, less the
 * ones that describe the stored encoding (_FillValue, missing_value,
 * scale_factor, add_offset) or the file's structure (dimension lists,
 * _Netcdf4* and friends); valid_range, valid_min, valid_max, actual_range
 * and flag_* go once the values are computed rather than selected, and
 * the first three are unpacked where the values were (CF 8.1); units
 * and standard_name go unless every step keeps units (selections,
 * reshapes, sums, means, min/max, std, quantiles, cumsum, stencils,
 * coarsen, +, -, abs, negative, minimum, maximum, clip, where, rounding).
 */
#include "pipelines/cf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/ck_config.h"
#include "base/ck_log.h"
#include "io/attrs_json.h"
#include "pipelines/exec_impl.h"
#include "pipelines/optab.h"
#include "pipelines/plan_impl.h"

/* ---- plan: inputs ------------------------------------------------------ */

static double attr_num(const ck_attr *v)
{
    return v->kind == CK_ATTR_I64 ? (double)v->i64 : v->f64;
}

/* The numbers of attribute 'key' (one, or a list, as CF allows for
 * missing_value) into v[0, *nv): 0 when it is absent or not numbers, -1
 * (with err set) when it has more than max (CF's one-value attributes:
 * max 1; the data would otherwise be read undecoded, silently). */
static int num_list_attr(ck_store *s, const char *dataset, const char *key,
                         double *v, int max, int *nv, const char *label,
                         ck_err *err)
{
    ck_attr a;
    ck_err e = {0};
    char *json = NULL;
    cJSON *root = NULL, *x, *it;
    int n = 0;

    *nv = 0;
    if (ck_store_get_attr(s, dataset, key, &a, &e) == CK_OK) {
        if (a.kind == CK_ATTR_STR)
            return 0;
        v[0] = attr_num(&a);
        *nv = 1;
        return 1;
    }
    if (e.code != CK_ENOTSUP) /* absent */
        return 0;
    if (ck_store_get_attrs(s, dataset, &json, &e) == CK_OK && json)
        root = ck_attrs_parse(json, strlen(json));
    free(json);
    x = root ? cJSON_GetObjectItemCaseSensitive(root, key) : NULL;
    if (cJSON_IsArray(x)) {
        cJSON_ArrayForEach(it, x)
        {
            ck_attrs_num num;
            if (!ck_attrs_number(it, &num)) {
                n = 0;
                break;
            }
            if (n == max) {
                int all = cJSON_GetArraySize(x);
                cJSON_Delete(root);
                if (max == 1)
                    ck_err_set(err, CK_EFORMAT,
                               "%s: %s has %d values; CF gives it one "
                               "(--raw reads the data as stored)",
                               label, key, all);
                else
                    ck_err_set(err, CK_EFORMAT,
                               "%s: %s has more than %d values; chunkctl "
                               "decodes at most %d (--raw reads it stored)",
                               label, key, max, max);
                return -1;
            }
            v[n++] = num.f;
        }
    }
    cJSON_Delete(root);
    *nv = n;
    return n > 0;
}

/* _Unsigned "true" (any case), as netCDF-C and xarray read it. */
static int unsigned_attr(ck_store *s, const char *dataset)
{
    ck_attr a;
    ck_err e = {0};

    return ck_store_get_attr(s, dataset, "_Unsigned", &a, &e) == CK_OK &&
           a.kind == CK_ATTR_STR && strcasecmp(a.str, "true") == 0;
}

/* The unsigned type of a signed integer type's width. */
static ck_dtype unsigned_of(ck_dtype t)
{
    switch (t) {
    case CK_I8:
        return CK_U8;
    case CK_I16:
        return CK_U16;
    case CK_I32:
        return CK_U32;
    case CK_I64:
        return CK_U64;
    default:
        return t;
    }
}

/* The group part of "/g/x" ("/g"; "" for "/x"). */
static void group_of(const char *dataset, char *buf, size_t n)
{
    const char *slash = strrchr(dataset, '/');
    size_t k = slash ? (size_t)(slash - dataset) : 0;

    snprintf(buf, n, "%.*s", (int)k, dataset);
}

static void no_coords(ck_node *n)
{
    for (int k = 0; k < CK_MAX_DIMS; k++) {
        n->coord_in[k] = 0;
        n->coord_axis[k] = 0;
        n->coord_start[k] = 0;
        n->coord_step[k] = 1;
    }
}

int ck_cf_fill_of(ck_store *s, const char *dataset, const ck_array_info *ai,
                  double *fill, const char *label, ck_err *err)
{
    int k1,
        hf = num_list_attr(s, dataset, "_FillValue", fill, 1, &k1, label, err);

    if (hf != 0)
        return hf;
    /* ... and any other fill_value too where xarray reads the array so: a
     * Zarr v2 array that names its dimensions (_ARRAY_DIMENSIONS), as
     * xarray and chunkctl write netCDF variables to Zarr (xarray's
     * use_zarr_fill_value_as_mask, on for v2 only: pydata/xarray#10269).
     * A plain array's fill_value (zarr-python's default 0) only fills
     * unwritten chunks, and a NaN one marks NaN as missing (above). */
    if (ai->zarr_format == 2 && ai->has_fill && ai->has_dims &&
        !(ck_dtype_is_float(ai->dtype) && isnan(ai->fill.f))) {
        *fill = ck_dtype_is_float(ai->dtype)    ? ai->fill.f
                : ck_dtype_is_signed(ai->dtype) ? (double)ai->fill.i
                                                : (double)ai->fill.u;
        return 1;
    }
    /* ... and a netCDF float variable without _FillValue has netCDF's
     * default fill (9.97e36) where nothing was written, which
     * netCDF4-python masks (Variable._toma).  An integer one keeps its
     * type and values: its default fill (-2147483647 for int32) would
     * turn every netCDF integer variable into floats. */
    if (ai->nc_fill == CK_NC_FILL_DEFAULT && ck_dtype_is_float(ai->dtype)) {
        ck_scalar nf;
        ck_dtype_nc_fill(ai->dtype, &nf);
        *fill = nf.f;
        return 1;
    }
    return 0;
}

ck_code ck_cf_plan_input(ck_plan *p, const char *path, const char *where, int i,
                         ck_store *s, const char *dataset,
                         const ck_array_info *ai, ck_err *err)
{
    ck_node *n = &p->node[i];
    char group[512], cname[600];
    double fill = 0, miss[CK_CF_MAX_MISSING], scale = 1, offset = 0;
    int hf, hm, hs, ho, hu, nmiss = 0, k1;

    no_coords(n);
    n->attrs_from = i + 1;
    n->attrs_cf = 0;
    n->keeps_units = 2;
    n->has_dims = ai->has_dims;
    memcpy(n->dims, ai->dims, sizeof n->dims);
    group_of(ai->name, group, sizeof group);
    /* A 1-D array named as a dimension, beside the array, is that
     * dimension's coordinate variable. */
    for (int k = 0; k < n->ndim && n->has_dims; k++) {
        ck_array *c = NULL;
        ck_err e = {0};
        if (!n->dims[k][0])
            continue;
        snprintf(cname, sizeof cname, "%s/%s", group, n->dims[k]);
        if (ck_array_open(s, cname, &c, &e) == CK_OK) {
            const ck_array_info *ci = ck_array_info_of(c);
            if (ci->ndim == 1 && ci->shape[0] == n->shape[k]) {
                n->coord_in[k] = i + 1;
                n->coord_axis[k] = k;
            }
        }
        ck_array_close(c);
    }
    if (p->raw || ai->dtype == CK_BOOL)
        return CK_OK;
    /* A Zarr array's fill_value is its _FillValue (xarray reads it so):
     * NaN there marks NaN as missing, which reductions then skip. */
    if (ck_store_kind_of(s) == CK_KIND_ZARR && ai->has_fill &&
        ck_dtype_is_float(ai->dtype) && isnan(ai->fill.f))
        n->missing = 1;
    /* a Zarr .zattrs that is not a JSON object is an error, not "no
     * attributes": decoding would be skipped (HDF5's are read one by one) */
    char *all = NULL;
    if (ck_store_kind_of(s) == CK_KIND_ZARR &&
        ck_store_get_attrs(s, dataset, &all, err) != CK_OK)
        return err->code;
    free(all);
    hf = ck_cf_fill_of(s, dataset, ai, &fill, n->source, err);
    if (hf < 0)
        return err->code;
    hm = num_list_attr(s, dataset, "missing_value", miss, CK_CF_MAX_MISSING,
                       &nmiss, n->source, err);
    if (hm < 0)
        return err->code;
    hs = num_list_attr(s, dataset, "scale_factor", &scale, 1, &k1, n->source,
                       err);
    ho = num_list_attr(s, dataset, "add_offset", &offset, 1, &k1, n->source,
                       err);
    if (hs < 0 || ho < 0)
        return err->code;
    hu = ck_dtype_is_signed(ai->dtype) && unsigned_attr(s, dataset);
    if (!hf && !hm && !hs && !ho && !hu)
        return CK_OK;
    if (p->n == CK_MAX_NODES)
        return ck_plan_bad(err, path, where, "more than %d inputs and steps",
                           CK_MAX_NODES);

    /* The stored values keep a name nobody can write in a pipeline; the
     * decoded ones take the input's name. */
    ck_node *c = &p->node[p->n];
    *c = *n;
    char stored[CK_NAME_MAX];
    snprintf(stored, sizeof stored, "%.50s (stored)", c->name);
    memcpy(n->name, stored, sizeof stored);
    c->kind = CK_NODE_CF;
    snprintf(c->op, sizeof c->op, "decode_cf");
    c->source[0] = '\0';
    c->nargs = 1;
    for (int k = 0; k < CK_MAX_ARGS; k++)
        c->arg[k] = -1;
    c->arg[0] = i;
    /* An unsigned variable's fill and missing values are given in its
     * stored (signed) type: -1 is 255 for a byte. */
    double wrap = hu ? ldexp(1, 8 * (int)ck_dtype_size(ai->dtype)) : 0;
    c->cf_has_fill = hf;
    c->cf_nmissing = nmiss;
    c->cf_unsigned = hu;
    c->cf_fill = hf && fill < 0 ? fill + wrap : fill;
    for (int k = 0; k < nmiss; k++)
        c->cf_missing[k] = miss[k] < 0 ? miss[k] + wrap : miss[k];
    c->cf_scale = hs ? scale : 1;
    c->cf_offset = ho ? offset : 0;
    c->missing = hf || hm;
    c->attrs_cf = hs || ho || hu ? p->n + 1 : 0;
    if (!hf && !hm && !hs && !ho) /* _Unsigned alone: the values as such */
        c->dtype = unsigned_of(ai->dtype);
    else if (!ck_dtype_is_float(ai->dtype))
        c->dtype = ck_dtype_size(ai->dtype) <= 2 ? CK_F32 : CK_F64;
    p->n++;
    return CK_OK;
}

/* ---- plan: axes by name ------------------------------------------------ */

static int dim_index(const ck_node *m, const char *name)
{
    for (int d = 0; m->has_dims && d < m->ndim; d++)
        if (strcmp(m->dims[d], name) == 0)
            return d;
    return -1;
}

static ck_code name_axis(const ck_node *m, const char *path, const char *where,
                         const char *key, cJSON *v, int *changed, ck_err *err)
{
    int d;

    if (!cJSON_IsString(v))
        return CK_OK;
    if ((d = dim_index(m, v->valuestring)) < 0) {
        char dims[400] = "";
        size_t used = 0;
        for (int k = 0; m->has_dims && k < m->ndim && used < sizeof dims; k++)
            used += (size_t)snprintf(dims + used, sizeof dims - used, "%s%s",
                                     k ? ", " : "", m->dims[k]);
        return ck_plan_bad(err, path, where,
                           "%s '%s': '%s' has no such dimension (its "
                           "dimensions: %s)",
                           key, v->valuestring, m->name,
                           m->has_dims ? dims : "none named");
    }
    cJSON_SetNumberValue(v, d);
    v->type = cJSON_Number;
    *changed = 1;
    return CK_OK;
}

ck_code ck_cf_plan_axis_names(const ck_plan *p, const char *path,
                              const char *where, const ck_node *n,
                              const cJSON *step, cJSON **out, ck_err *err)
{
    static const char *const keys[] = {"axis", "axes", "source", "destination"};
    const ck_node *m;
    cJSON *copy = NULL;
    int changed = 0;

    *out = NULL;
    if (n->nargs < 1 || n->arg[0] < 0 || n->kind == CK_NODE_CONTRACT ||
        n->kind == CK_NODE_KERNEL)
        return CK_OK;
    m = &p->node[n->arg[0]];
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        /* moveaxis's source and destination; a kernel's source is a file */
        if (k >= 2 && n->kind != CK_NODE_TRANSPOSE)
            continue;
        const cJSON *v = cJSON_GetObjectItem(step, keys[k]), *e;
        int named = cJSON_IsString(v);
        if (cJSON_IsArray(v))
            cJSON_ArrayForEach(e, v) named |= cJSON_IsString(e);
        if (!named)
            continue;
        if (!copy && !(copy = cJSON_Duplicate(step, 1)))
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        cJSON *cv = cJSON_GetObjectItem(copy, keys[k]), *ce;
        ck_code rc = name_axis(m, path, where, keys[k], cv, &changed, err);
        if (cJSON_IsArray(cv))
            cJSON_ArrayForEach(ce, cv)
            {
                if (rc == CK_OK)
                    rc = name_axis(m, path, where, keys[k], ce, &changed, err);
            }
        if (rc != CK_OK) {
            cJSON_Delete(copy);
            return rc;
        }
    }
    *out = copy;
    return CK_OK;
}

/* ---- plan: steps ------------------------------------------------------- */

/* Axis k of node n (of nd axes) takes operand m's axis aligned to it from
 * the right (NumPy broadcasting), when m has one of the same length. */
static void align_from(ck_node *n, const ck_node *m)
{
    for (int k = 0; k < n->ndim; k++) {
        int d = m->ndim - n->ndim + k;
        if (d < 0 || !m->has_dims)
            continue;
        if (!n->dims[k][0] && m->dims[d][0]) {
            snprintf(n->dims[k], CK_DIM_NAME_MAX, "%s", m->dims[d]);
            n->has_dims = 1;
        }
        if (!n->coord_in[k] && m->coord_in[d] && m->shape[d] == n->shape[k] &&
            strcmp(n->dims[k], m->dims[d]) == 0) {
            n->coord_in[k] = m->coord_in[d];
            n->coord_axis[k] = m->coord_axis[d];
            n->coord_start[k] = m->coord_start[d];
            n->coord_step[k] = m->coord_step[d];
        }
    }
}

/* Axis k of n is axis d of m, unchanged. */
static void take_axis(ck_node *n, int k, const ck_node *m, int d)
{
    if (!m->has_dims)
        return;
    snprintf(n->dims[k], CK_DIM_NAME_MAX, "%s", m->dims[d]);
    n->has_dims |= m->dims[d][0] != '\0';
    if (m->shape[d] == n->shape[k]) {
        n->coord_in[k] = m->coord_in[d];
        n->coord_axis[k] = m->coord_axis[d];
        n->coord_start[k] = m->coord_start[d];
        n->coord_step[k] = m->coord_step[d];
    }
}

static int ew_keeps_units(ck_ew_op op)
{
    switch (op) {
    case CK_EW_NEGATIVE:
    case CK_EW_ABS:
    case CK_EW_FLOOR:
    case CK_EW_CEIL:
    case CK_EW_ROUND:
    case CK_EW_ADD:
    case CK_EW_SUBTRACT:
    case CK_EW_MINIMUM:
    case CK_EW_MAXIMUM:
    case CK_EW_WHERE:
    case CK_EW_CLIP:
        return 1;
    default:
        return 0;
    }
}

static int red_keeps_units(ck_red_op op)
{
    switch (op) {
    case CK_RED_SUM:
    case CK_RED_MIN:
    case CK_RED_MAX:
    case CK_RED_MEAN:
    case CK_RED_STD:
    case CK_RED_NANSUM:
    case CK_RED_NANMEAN:
    case CK_RED_NANMIN:
    case CK_RED_NANMAX:
    case CK_RED_NANSTD:
        return 1;
    default:
        return 0;
    }
}

/* A reduction of data whose NaN means missing skips NaN, as NumPy's nan*
 * reductions (and NCO and CDO) do; so does coarsen's.  count_nonzero
 * counts only values that are there (NaN is nonzero to NumPy); all needs
 * no nan form: NaN counts as true there, as a missing value must. */
static ck_red_op nan_form(ck_red_op op)
{
    switch (op) {
    case CK_RED_SUM:
        return CK_RED_NANSUM;
    case CK_RED_MEAN:
        return CK_RED_NANMEAN;
    case CK_RED_MIN:
        return CK_RED_NANMIN;
    case CK_RED_MAX:
        return CK_RED_NANMAX;
    case CK_RED_VAR:
        return CK_RED_NANVAR;
    case CK_RED_STD:
        return CK_RED_NANSTD;
    case CK_RED_PROD:
        return CK_RED_NANPROD;
    case CK_RED_ARGMIN:
        return CK_RED_NANARGMIN;
    case CK_RED_ARGMAX:
        return CK_RED_NANARGMAX;
    case CK_RED_COUNT_NONZERO:
        return CK_RED_NANCOUNT_NONZERO;
    default:
        return op;
    }
}

static int popcount(uint32_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

static void step_dims(ck_plan *p, ck_node *n)
{
    const ck_node *m =
        n->nargs > 0 && n->arg[0] >= 0 ? &p->node[n->arg[0]] : NULL;
    int k = 0;

    if (!m)
        return;
    switch (n->kind) {
    case CK_NODE_EW:
    case CK_NODE_ASTYPE:
    case CK_NODE_ISIN:
    case CK_NODE_STENCIL:
    case CK_NODE_SCAN:
    case CK_NODE_BROADCAST:
    case CK_NODE_CF:
        for (int a = 0; a < n->nargs; a++)
            if (n->arg[a] >= 0)
                align_from(n, &p->node[n->arg[a]]);
        break;
    case CK_NODE_SLICE:
        for (int d = 0; d < m->ndim; d++) {
            if (!n->sl_keep[d])
                continue;
            take_axis(n, k, m, d);
            n->coord_in[k] = m->coord_in[d];
            n->coord_axis[k] = m->coord_axis[d];
            n->coord_start[k] =
                m->coord_start[d] + m->coord_step[d] * n->sl_start[d];
            n->coord_step[k] = m->coord_step[d] * n->sl_step[d];
            k++;
        }
        break;
    case CK_NODE_TRANSPOSE:
        for (k = 0; k < n->ndim; k++)
            take_axis(n, k, m, n->perm[k]);
        break;
    case CK_NODE_REDUCE:
    case CK_NODE_QUANTILE: {
        int kept = m->ndim - popcount(n->axes);
        int lead = n->keepdims ? 0 : n->ndim - kept; /* quantile's q axis */
        if (lead < 0)
            break;
        if (lead == 1)
            snprintf(n->dims[0], CK_DIM_NAME_MAX, "quantile");
        k = lead;
        for (int d = 0; d < m->ndim && k < n->ndim; d++) {
            if ((n->axes >> d & 1) && !n->keepdims)
                continue;
            take_axis(n, k, m, d);
            if (n->axes >> d & 1)
                n->coord_in[k] = 0;
            k++;
        }
        break;
    }
    case CK_NODE_COARSEN:
    case CK_NODE_TAKE:
    case CK_NODE_RECHUNK:
    case CK_NODE_RESHAPE:
        if (n->ndim == m->ndim) {
            int same = 1;
            for (int d = 0; d < n->ndim; d++)
                same &=
                    n->kind != CK_NODE_RESHAPE || n->shape[d] == m->shape[d];
            for (int d = 0; same && d < n->ndim; d++) {
                take_axis(n, d, m, d);
                if (n->shape[d] != m->shape[d])
                    n->coord_in[d] = 0;
            }
        } else if (n->kind == CK_NODE_RESHAPE) {
            /* squeeze and expand_dims: the axes longer than 1, in order */
            int d = 0;
            for (k = 0; k < n->ndim; k++) {
                if (n->shape[k] == 1)
                    continue;
                while (d < m->ndim && m->shape[d] == 1)
                    d++;
                if (d < m->ndim && m->shape[d] == n->shape[k])
                    take_axis(n, k, m, d++);
            }
        }
        break;
    case CK_NODE_MATMUL:
        if (n->ndim == 2 && m->ndim == 2 && n->arg[1] >= 0 &&
            p->node[n->arg[1]].ndim == 2) {
            take_axis(n, 0, m, 0);
            take_axis(n, 1, &p->node[n->arg[1]], 1);
        }
        break;
    default:
        break;
    }
}

static void step_attrs(ck_plan *p, ck_node *n)
{
    const ck_node *m =
        n->nargs > 0 && n->arg[0] >= 0 ? &p->node[n->arg[0]] : NULL;
    int keep = 0; /* 2: the same values, 1: the same units, 0: neither */

    if (!m)
        return;
    switch (n->kind) {
    case CK_NODE_SLICE:
    case CK_NODE_TRANSPOSE:
    case CK_NODE_RESHAPE:
    case CK_NODE_RECHUNK:
    case CK_NODE_TAKE:
    case CK_NODE_MASK:
    case CK_NODE_BROADCAST:
    case CK_NODE_CONCAT:
    case CK_NODE_CF:
        keep = 2;
        break;
    case CK_NODE_ASTYPE:
    case CK_NODE_QUANTILE:
    case CK_NODE_COARSEN:
    case CK_NODE_STENCIL:
        keep = 1;
        break;
    case CK_NODE_SCAN:
        keep = n->sub == CK_SCAN_CUMSUM;
        break;
    case CK_NODE_REDUCE:
        keep = red_keeps_units(n->red);
        break;
    case CK_NODE_EW:
        keep = ew_keeps_units(n->ew);
        /* where(cond, a, b): the values are a's and b's */
        if (n->ew == CK_EW_WHERE && n->arg[1] >= 0)
            m = &p->node[n->arg[1]];
        break;
    default:
        return; /* histograms, counts, indices, linear algebra, kernels */
    }
    n->attrs_from = m->attrs_from;
    n->attrs_cf = m->attrs_cf;
    n->keeps_units = keep < m->keeps_units ? keep : m->keeps_units;
    if (n->kind == CK_NODE_EW && n->ew >= CK_EW_LESS &&
        n->ew <= CK_EW_LOGICAL_OR)
        n->attrs_from = 0; /* comparisons: booleans, not the quantity */
}

ck_code ck_cf_plan_step(ck_plan *p, const char *path, const char *where, int i,
                        const cJSON *step, ck_err *err)
{
    ck_node *n = &p->node[i];
    const cJSON *dims = cJSON_GetObjectItem(step, "dims"), *v;
    int k = 0;

    no_coords(n);
    n->has_dims = 0;
    memset(n->dims, 0, sizeof n->dims);
    n->attrs_from = 0;
    n->attrs_cf = 0;
    n->keeps_units = 0;
    for (int a = 0; a < n->nargs; a++)
        if (n->arg[a] >= 0 && p->node[n->arg[a]].missing)
            n->missing = 1;
    if ((n->kind == CK_NODE_REDUCE || n->kind == CK_NODE_COARSEN) && n->missing)
        n->red = nan_form(n->red);
    if (n->kind == CK_NODE_QUANTILE && n->missing)
        n->sub |= CK_Q_NAN; /* median -> nanmedian, ... */
    step_dims(p, n);
    step_attrs(p, n);
    if (!dims)
        return CK_OK;
    if (!cJSON_IsArray(dims) || cJSON_GetArraySize(dims) != n->ndim)
        return ck_plan_bad(err, path, where,
                           "dims: expected a list of %d dimension names",
                           n->ndim);
    cJSON_ArrayForEach(v, dims)
    {
        if (!cJSON_IsString(v) || !v->valuestring[0] ||
            strlen(v->valuestring) >= CK_DIM_NAME_MAX)
            return ck_plan_bad(err, path, where,
                               "dims[%d]: expected a name of 1 to %d "
                               "characters",
                               k, CK_DIM_NAME_MAX - 1);
        if (strcmp(n->dims[k], v->valuestring) != 0)
            n->coord_in[k] = 0; /* a new dimension: no coordinate */
        snprintf(n->dims[k++], CK_DIM_NAME_MAX, "%s", v->valuestring);
    }
    n->has_dims = 1;
    return CK_OK;
}

/* ---- exec: decoding ---------------------------------------------------- */

size_t ck_exec_cf_bytes(const xrun *r, int i, size_t n, int known, int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];

    return ck_exec_al(n * ck_dtype_size(m->dtype)) +
           ck_exec_bytes(r, nd->arg[0], n, known, aligned);
}

/* dst (nd->dtype, a float type) from the stored values raw: the values
 * equal to _FillValue or missing_value become NaN, the rest are
 * unpacked as x * scale_factor + add_offset.  The comparison is made on
 * the values converted to the float type, as they are exact there for
 * every stored type up to 32 bits (and int64 fill values are rare). */
#define DECODE(T)                                                              \
    do {                                                                       \
        T *o = dst;                                                            \
        const T f = (T)nd->cf_fill;                                            \
        const T sc = (T)nd->cf_scale, of = (T)nd->cf_offset;                   \
        /* one simple loop each, so each vectorises; NaN stays NaN when        \
         * unpacked */                                                         \
        if (nd->cf_has_fill)                                                   \
            for (size_t k = 0; k < n; k++)                                     \
                o[k] = o[k] == f ? (T)NAN : o[k];                              \
        for (int j = 0; j < nd->cf_nmissing; j++) {                            \
            const T mv = (T)nd->cf_missing[j];                                 \
            for (size_t k = 0; k < n; k++)                                     \
                o[k] = o[k] == mv ? (T)NAN : o[k];                             \
        }                                                                      \
        if (nd->cf_scale != 1 || nd->cf_offset != 0)                           \
            for (size_t k = 0; k < n; k++)                                     \
                o[k] = o[k] * sc + of;                                         \
    } while (0)

void ck_cf_decode(const ck_node *nd, void *dst, size_t n)
{
    if (!ck_dtype_is_float(nd->dtype)) /* _Unsigned alone: nothing to do */
        return;
    if (nd->dtype == CK_F32)
        DECODE(float);
    else
        DECODE(double);
}

ck_code ck_exec_cf_eval(xrun *r, int i, const int64_t *start,
                        const int64_t *shape, void *dst, ck_arena *a,
                        const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    size_t n = (size_t)ck_exec_nelem(nd->ndim, shape);

    /* the stored integers read as unsigned ones of their width */
    ck_dtype from = nd->cf_unsigned ? unsigned_of(m->dtype) : m->dtype;

    (void)mm;
    if (from == nd->dtype) {
        CK_TRY(ck_exec_eval(r, nd->arg[0], start, shape, dst, a, err));
    } else {
        void *raw = ck_arena_alloc(a, n * ck_dtype_size(m->dtype));
        if (!raw)
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(r, nd->arg[0], start, shape, raw, a, err));
        ck_dtype_convert(nd->dtype, dst, from, raw, n);
    }
    ck_cf_decode(nd, dst, n);
    return CK_OK;
}

/* ---- exec: outputs ----------------------------------------------------- */

ck_code ck_cf_check_dims(const ck_plan *p, int a, const char *aname, int b,
                         const char *bname, const char *path, ck_err *err)
{
    const ck_node *x = &p->node[a], *y = &p->node[b];
    char ga[512], gb[512];

    group_of(aname, ga, sizeof ga);
    group_of(bname, gb, sizeof gb);
    if (strcmp(ga, gb) != 0 || !x->has_dims || !y->has_dims)
        return CK_OK;
    for (int i = 0; i < x->ndim; i++)
        for (int j = 0; j < y->ndim; j++)
            if (x->dims[i][0] && strcmp(x->dims[i], y->dims[j]) == 0 &&
                x->shape[i] != y->shape[j])
                return ck_err_set(
                    err, CK_EUSAGE,
                    "%s: dimension '%s' would have length %lld in %s and "
                    "%lld in %s; name one of them otherwise with the "
                    "step's \"dims\"",
                    path, x->dims[i], (long long)x->shape[i], aname,
                    (long long)y->shape[j], bname);
    return CK_OK;
}

void ck_cf_out_spec(const ck_plan *p, int i, ck_store_kind kind,
                    ck_array_spec *spec)
{
    const ck_node *nd = &p->node[i];

    spec->has_dims = nd->has_dims && nd->ndim == spec->ndim;
    if (spec->has_dims)
        memcpy(spec->dims, nd->dims, sizeof spec->dims);
    /* Zarr says what is missing in the array's own fill_value, which
     * xarray reads as _FillValue (an attribute of that name would clash);
     * HDF5 gets the attribute (ck_cf_out_attrs). */
    if (kind == CK_KIND_ZARR && nd->missing && ck_dtype_is_float(nd->dtype)) {
        spec->has_fill = 1;
        spec->fill.f = NAN;
    }
}

/* Attributes that describe how the input was stored or laid out, never
 * carried to an output (the writer makes its own). */
static int structural(const char *k)
{
    static const char *const keys[] = {"_FillValue",
                                       "missing_value",
                                       "_Unsigned",
                                       "scale_factor",
                                       "add_offset",
                                       "DIMENSION_LIST",
                                       "REFERENCE_LIST",
                                       "DIMENSION_LABELS",
                                       "CLASS",
                                       "NAME",
                                       "_Netcdf4Dimid",
                                       "_Netcdf4Coordinates",
                                       "_ARRAY_DIMENSIONS",
                                       "_nc3_strict",
                                       "_NCProperties",
                                       "chunkctl_version",
                                       "chunkctl_pipeline",
                                       "coordinates"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(k, keys[i]) == 0)
            return 1;
    return 0;
}

/* Attributes about the values themselves: they hold only for values that
 * were selected, not computed. */
static int about_values(const char *k)
{
    return strcmp(k, "valid_range") == 0 || strcmp(k, "valid_min") == 0 ||
           strcmp(k, "valid_max") == 0 || strcmp(k, "actual_range") == 0 ||
           strncmp(k, "flag_", 5) == 0;
}

/* The attributes that bound the stored values: CF 8.1 gives them in the
 * packed type and units, so they are unpacked with the values. */
static int bounds_stored(const char *k)
{
    return strcmp(k, "valid_range") == 0 || strcmp(k, "valid_min") == 0 ||
           strcmp(k, "valid_max") == 0;
}

/* Stored value x as decode_cf step c decodes it into its dtype: read as
 * unsigned where _Unsigned says so, then x * scale_factor + add_offset in
 * the decoded type, as ck_cf_decode computes it. */
static double unpack_one(const ck_node *c, const ck_node *in, double x)
{
    if (c->cf_unsigned && x < 0)
        x += ldexp(1, 8 * (int)ck_dtype_size(in->dtype));
    if (c->dtype == CK_F32)
        return (double)((float)x * (float)c->cf_scale + (float)c->cf_offset);
    if (c->dtype == CK_F64)
        return x * c->cf_scale + c->cf_offset;
    return x; /* _Unsigned alone: an unsigned integer */
}

/* A copy of attribute v (a number or a list of numbers) unpacked by
 * decode_cf step c of input 'in' (NULL when out of memory); anything else
 * is copied as it is. */
static cJSON *unpack_attr(const ck_node *c, const ck_node *in, const cJSON *v)
{
    cJSON *out, *e, *u;
    ck_attrs_num num;
    char txt[48];

    if (cJSON_IsArray(v)) {
        if (!(out = cJSON_CreateArray()))
            return NULL;
        cJSON_ArrayForEach(e, v)
        {
            if (!(u = unpack_attr(c, in, e)) || !cJSON_AddItemToArray(out, u)) {
                cJSON_Delete(u);
                cJSON_Delete(out);
                return NULL;
            }
        }
        return out;
    }
    if (!ck_attrs_number(v, &num) || !isfinite(num.f))
        return cJSON_Duplicate(v, 1);
    double x = unpack_one(c, in, num.f);
    if (!ck_dtype_is_float(c->dtype))
        snprintf(txt, sizeof txt, "%.0f", x);
    else if (snprintf(txt, sizeof txt, "%.*g", c->dtype == CK_F32 ? 9 : 17, x) >
                 0 &&
             txt[strspn(txt, "-0123456789")] == '\0')
        strcat(txt, ".0"); /* a float, as JSON readers of attributes see */
    return cJSON_CreateRaw(txt);
}

static int about_units(const char *k)
{
    return strcmp(k, "units") == 0 || strcmp(k, "standard_name") == 0;
}

ck_code ck_cf_out_attrs(xrun *r, int i, ck_store *s, const char *name,
                        ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    cJSON *out = cJSON_CreateObject(), *in = NULL, *v;
    char *txt = NULL;
    ck_code rc = CK_OK;

    if (!out)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    if (nd->attrs_from > 0) {
        int src = nd->attrs_from - 1;
        const ck_array_info *ai = ck_array_info_of(r->x[src].arr);
        rc = ck_store_get_attrs(r->x[src].store, ai->name, &txt, err);
        if (rc == CK_OK && !(in = ck_attrs_parse(txt, strlen(txt))))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        free(txt);
        txt = NULL;
    }
    if (rc != CK_OK) {
        cJSON_Delete(in);
        in = NULL;
    }
    cJSON_ArrayForEach(v, in)
    {
        cJSON *c;
        if (structural(v->string) ||
            (nd->keeps_units < 2 && about_values(v->string)) ||
            (nd->keeps_units < 1 && about_units(v->string)))
            continue;
        /* values unpacked by decode_cf have their bounds unpacked too:
         * left in packed units they would mask every value */
        if (nd->attrs_cf > 0 && bounds_stored(v->string)) {
            const ck_node *cf = &r->p->node[nd->attrs_cf - 1];
            c = unpack_attr(cf, &r->p->node[cf->arg[0]], v);
        } else {
            c = cJSON_Duplicate(v, 1);
        }
        if (!c || !cJSON_AddItemToObject(out, v->string, c)) {
            cJSON_Delete(c);
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
            break;
        }
    }
    cJSON_Delete(in);
    if (rc == CK_OK &&
        (!cJSON_AddStringToObject(out, "chunkctl_version", CK_VERSION) ||
         (r->p->text &&
          !cJSON_AddStringToObject(out, "chunkctl_pipeline", r->p->text)) ||
         !(txt = cJSON_PrintUnformatted(out))))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    cJSON_Delete(out);
    if (rc == CK_OK)
        rc = ck_store_set_attrs(s, name, txt, err);
    free(txt);
    if (rc == CK_OK && nd->missing && ck_dtype_is_float(nd->dtype) &&
        ck_store_kind_of(s) == CK_KIND_HDF5) {
        ck_attr f = {.kind = CK_ATTR_F64, .f64 = NAN};
        rc = ck_store_set_attr(s, name, "_FillValue", &f, err);
    }
    return rc;
}

static int done_has(const ck_names *done, const char *name)
{
    for (int k = 0; k < done->n; k++)
        if (strcmp(done->v[k], name) == 0)
            return 1;
    return 0;
}

/* Writes coordinate 'cname' (dimension 'dim') of s: values start + step *
 * j, j < len, of input src's coordinate variable 'from'. */
static ck_code write_coord(xrun *r, int src, const char *from, ck_store *s,
                           const char *cname, const char *dim, int64_t start,
                           int64_t step, int64_t len, ck_err *err)
{
    ck_store *in = r->x[src].store;
    ck_array *c = NULL, *dst = NULL;
    ck_arena a = CK_ARENA_INIT;
    ck_array_spec spec;
    ck_code rc;

    CK_TRY(ck_array_open(in, from, &c, err));
    const ck_array_info *ci = ck_array_info_of(c);
    size_t es = ck_dtype_size(ci->dtype);
    int64_t lo = step < 0 ? start + step * (len - 1) : start;
    int64_t st = step < 0 ? -step : step, stop = lo + st * (len - 1) + 1;

    memset(&spec, 0, sizeof spec);
    spec.name = cname;
    spec.ndim = 1;
    spec.shape[0] = len;
    spec.chunks[0] = len > 0 ? len : 1;
    spec.dtype = ci->dtype;
    spec.codec.id = CK_CODEC_NONE;
    spec.zarr_format = r->o->zarr_format;
    spec.has_dims = 1;
    snprintf(spec.dims[0], CK_DIM_NAME_MAX, "%s", dim);
    rc = ck_arena_reserve(&a, &r->budget,
                          ck_exec_al((size_t)spec.chunks[0] * es) * 2 +
                              ck_array_region_scratch_bytes(c) +
                              ck_array_scratch_bytes(c) + 4096,
                          "a coordinate variable", err);
    char *buf =
        rc == CK_OK ? ck_arena_alloc(&a, (size_t)spec.chunks[0] * es) : NULL;
    if (rc == CK_OK && !buf)
        rc = ck_exec_no_room(err);
    if (rc == CK_OK && len > 0)
        rc = ck_array_read_region(c, &lo, &stop, &st, ci->dtype, buf, NULL, &a,
                                  err);
    if (rc == CK_OK && step < 0)
        for (int64_t j = 0; j < len / 2; j++) {
            char t[16];
            memcpy(t, buf + (size_t)j * es, es);
            memcpy(buf + (size_t)j * es, buf + (size_t)(len - 1 - j) * es, es);
            memcpy(buf + (size_t)(len - 1 - j) * es, t, es);
        }
    if (rc == CK_OK)
        rc = ck_array_create(s, &spec, &dst, err);
    if (rc == CK_OK && len > 0) {
        int64_t zero = 0;
        rc = ck_array_write_chunk(dst, &zero, buf, &a, err);
    }
    ck_array_close(dst);
    ck_array_close(c);
    ck_arena_release(&a);
    if (rc == CK_OK)
        rc = ck_store_copy_attrs(in, from, s, cname, err);
    return rc;
}

ck_code ck_cf_out_coords(xrun *r, int i, ck_store *s, const char *name,
                         ck_names *done, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    char group[512], cname[600], from[600], fgroup[512];

    group_of(name, group, sizeof group);
    for (int k = 0; k < nd->ndim && nd->has_dims; k++) {
        int src = nd->coord_in[k] - 1;
        if (src < 0 || !nd->dims[k][0])
            continue;
        snprintf(cname, sizeof cname, "%s/%s", group, nd->dims[k]);
        if (strcmp(cname, name) == 0 || done_has(done, cname))
            continue;
        const ck_node *in = &r->p->node[src];
        group_of(ck_array_info_of(r->x[src].arr)->name, fgroup, sizeof fgroup);
        snprintf(from, sizeof from, "%s/%s", fgroup,
                 in->dims[nd->coord_axis[k]]);
        CK_TRY(write_coord(r, src, from, s, cname, nd->dims[k],
                           nd->coord_start[k], nd->coord_step[k], nd->shape[k],
                           err));
        CK_TRY(ck_names_push(done, cname, err));
    }
    return CK_OK;
}

ck_code ck_cf_history(ck_store *s, ck_store *in, const char *cmd, ck_err *err)
{
    char when[64], *old = NULL, *txt = NULL, *line = NULL;
    const char *prev = "";
    cJSON *src = NULL, *mine = NULL, *h;
    time_t now = time(NULL);
    struct tm tm;
    ck_code rc = CK_OK;
    size_t n;

    /* A Zarr store that is one array has no global attributes, only the
     * array's: it gets no history. */
    ck_names names = {0};
    int root_array = 0;
    /* A listing that fails (out of memory, a failed open) must fail the
     * run: taken as "not a root array" it wrote a history attribute where
     * none belongs (found by the fault walk, tests/fault). */
    if ((rc = ck_store_list(s, &names, err)) != CK_OK) {
        ck_names_release(&names);
        return rc;
    }
    for (int k = 0; k < names.n; k++)
        root_array |= strcmp(names.v[k], "/") == 0;
    ck_names_release(&names);
    if (root_array)
        return CK_OK;
    /* The input's history goes on below ours.  get_attrs gives "{}" when
     * there are none: a failure is a read error, not "no history" (the
     * fault walk, tests/fault, saw the input's history silently dropped). */
    if (in) {
        if ((rc = ck_store_get_attrs(in, "/", &old, err)) != CK_OK)
            return rc;
        src = ck_attrs_parse(old, strlen(old));
        free(old);
    }
    h = cJSON_GetObjectItem(src, "history");
    if (cJSON_IsString(h))
        prev = h->valuestring;
    localtime_r(&now, &tm);
    strftime(when, sizeof when, "%a %b %d %H:%M:%S %Y", &tm);
    n = strlen(when) + strlen(prev) + 64 + (cmd ? strlen(cmd) : 0);
    if (!(line = malloc(n))) {
        cJSON_Delete(src);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    snprintf(line, n, "%s: %s%s%s", when, cmd ? cmd : "chunkctl",
             prev[0] ? "\n" : "", prev);
    cJSON_Delete(src);
    /* Keep what the output's root has (a Zarr root array's attributes):
     * Zarr rewrites them whole; HDF5 replaces only the history, so the
     * others keep their types (float32, int8), which JSON would widen. */
    if (ck_store_kind_of(s) == CK_KIND_ZARR &&
        (rc = ck_store_get_attrs(s, "/", &txt, err)) != CK_OK) {
        free(line);
        return rc;
    }
    mine = txt ? ck_attrs_parse(txt, strlen(txt)) : NULL;
    free(txt);
    txt = NULL;
    if (!mine)
        mine = cJSON_CreateObject();
    cJSON_DeleteItemFromObject(mine, "history");
    if (!mine || !cJSON_AddStringToObject(mine, "history", line) ||
        !(txt = cJSON_PrintUnformatted(mine)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    if (rc == CK_OK)
        rc = ck_store_set_attrs(s, "/", txt, err);
    cJSON_Delete(mine);
    free(txt);
    free(line);
    return rc;
}

ck_code ck_cf_out_history(xrun *r, ck_store *s, ck_err *err)
{
    ck_store *in = NULL;

    for (int i = 0; i < r->p->n && !in; i++)
        if (r->p->node[i].kind == CK_NODE_INPUT)
            in = r->x[i].store;
    return ck_cf_history(s, in, r->o->cmdline ? r->o->cmdline : "chunkctl run",
                         err);
}
