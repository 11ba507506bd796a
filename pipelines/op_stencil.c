/*
 * pipelines/op_stencil.c - the stencil ops (dask's map_overlap family):
 * convolve, correlate, uniform_filter and gaussian_filter as
 * scipy.ndimage has them, and gradient and diff as NumPy has them.
 *
 * Each output box is computed from the operand's values over the box
 * grown by the op's halo (ck_node.halo_lo/halo_hi) on each side.  The
 * part of the grown box outside the array is filled as the boundary mode
 * says, by mapping each position of the grown box to an index of the
 * array (or to cval); the operand is evaluated only over the indices so
 * needed: one box per axis interval, and 'wrap' needs at most two
 * intervals per axis (the near side and the far side of the array).  So a
 * kernel larger than a chunk, or than the array, is exact, and every
 * output element is a fixed formula of the operand's values: the same
 * bits for any chunking and thread count.
 *
 * The filters compute in float64 as SciPy does and cast to the input's
 * dtype; the separable ones (uniform_filter, gaussian_filter) cast after
 * each axis as SciPy's per-axis passes do.  Nothing here reads a store.
 */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipelines/exec_impl.h"
#include "pipelines/optab.h"
#include "pipelines/plan_impl.h"

/* ck_node.mode: scipy.ndimage's boundary modes for filters. */
enum { MODE_REFLECT, MODE_NEAREST, MODE_MIRROR, MODE_CONSTANT, MODE_WRAP };
static const char *const mode_names[] = {"reflect", "nearest", "mirror",
                                         "constant", "wrap"};

/* Limits that keep a kernel small beside a chunk (documented in
 * chunkctl-pipeline(5)): weights elements and side, and the window of
 * uniform_filter and gaussian_filter along one axis. */
enum { MAX_WEIGHTS = 4096, MAX_SIDE = 512, MAX_WINDOW = 4097 };

/* ---- parsing ---- */

static ck_code parse_mode(const char *path, const char *where,
                          const cJSON *step, ck_node *n, ck_err *err)
{
    const cJSON *v = cJSON_GetObjectItem(step, "mode");

    n->mode = MODE_REFLECT;
    if (!v || cJSON_IsNull(v))
        return CK_OK;
    for (int k = 0; cJSON_IsString(v) && k < 5; k++)
        if (strcmp(v->valuestring, mode_names[k]) == 0) {
            n->mode = k;
            return CK_OK;
        }
    if (cJSON_IsString(v))
        return ck_plan_bad(err, path, where,
                           "mode: unknown mode '%.40s' (expected reflect, "
                           "nearest, mirror, constant or wrap)",
                           v->valuestring);
    return ck_plan_bad(err, path, where,
                       "mode: expected a string: reflect, nearest, mirror, "
                       "constant or wrap");
}

/* A key that is one number for every axis or a list of one per axis
 * (SciPy's _normalize_sequence), into out[nd]; integral: integers only. */
static ck_code per_axis(const char *path, const char *where, const cJSON *step,
                        const char *key, int nd, double dflt, double lo,
                        double hi, int integral, double *out, ck_err *err)
{
    const cJSON *v = cJSON_GetObjectItem(step, key), *e;
    int k = 0;

    for (int d = 0; d < nd; d++)
        out[d] = dflt;
    if (!v || cJSON_IsNull(v))
        return CK_OK;
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) != nd)
        return ck_plan_bad(err, path, where,
                           "%s: a list of %d values for a %d-D input (one "
                           "per axis)",
                           key, cJSON_GetArraySize(v), nd);
    if (!cJSON_IsArray(v) && !cJSON_IsNumber(v))
        return ck_plan_bad(err, path, where,
                           "%s: expected a number or a list of one per axis",
                           key);
    for (e = cJSON_IsArray(v) ? v->child : v; e && k < nd;
         e = cJSON_IsArray(v) ? e->next : e) {
        double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!(x >= lo && x <= hi) || (integral && !ck_plan_is_int(e))) {
            char at[16] = "";
            if (cJSON_IsArray(v))
                snprintf(at, sizeof at, "[%d]", k);
            return ck_plan_bad(err, path, where, "%s%s: must be %s in [%g, %g]",
                               key, at, integral ? "an integer" : "a number",
                               lo, hi);
        }
        out[k++] = x;
    }
    return CK_OK;
}

/* Fills out[] from the nested list v (C order), checking that each level
 * d has shape[d] entries; 0 when it is ragged or holds a non-number. */
static int fill_weights(const cJSON *v, int d, int nd, const int64_t *shape,
                        double *out, int64_t *k)
{
    const cJSON *e;

    if (d == nd) {
        if (!cJSON_IsNumber(v))
            return 0;
        out[(*k)++] = v->valuedouble;
        return 1;
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != shape[d])
        return 0;
    cJSON_ArrayForEach(
        e, v) if (!fill_weights(e, d + 1, nd, shape, out, k)) return 0;
    return 1;
}

/* "weights": a nested list with one level per axis of the input. */
static ck_code parse_weights(const char *path, const char *where,
                             const cJSON *w, int want, ck_node *n, ck_err *err)
{
    char buf[128];
    int nd = 0;
    int64_t total = 1, k = 0;
    int big = 0;

    if (!w || cJSON_IsNull(w))
        return ck_plan_bad(err, path, where,
                           "weights: missing (a nested list of numbers with "
                           "one level per axis of the %d-D input)",
                           want);
    for (const cJSON *e = w; cJSON_IsArray(e); e = e->child) {
        if (nd == CK_MAX_DIMS || cJSON_GetArraySize(e) == 0)
            return ck_plan_bad(err, path, where,
                               "weights: empty or too deeply nested");
        n->wshape[nd] = cJSON_GetArraySize(e);
        big |= n->wshape[nd] > MAX_SIDE;
        if (total <= MAX_WEIGHTS)
            total *= n->wshape[nd];
        nd++;
    }
    if (nd == 0)
        return ck_plan_bad(err, path, where,
                           "weights: expected a nested list of numbers");
    if (nd != want)
        return ck_plan_bad(err, path, where,
                           "weights: %d-D for a %d-D input (one level of "
                           "lists per axis)",
                           nd, want);
    if (big || total > MAX_WEIGHTS)
        return ck_plan_bad(err, path, where,
                           "weights: shape %s is too large (at most %d "
                           "elements and %d along an axis)",
                           ck_plan_shape_str(nd, n->wshape, buf, sizeof buf),
                           MAX_WEIGHTS, MAX_SIDE);
    if (!(n->vals = malloc((size_t)total * sizeof(double))))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    n->nvals = total;
    if (!fill_weights(w, 0, nd, n->wshape, n->vals, &k))
        return ck_plan_bad(err, path, where,
                           "weights: not a regular nested list of numbers "
                           "of shape %s",
                           ck_plan_shape_str(nd, n->wshape, buf, sizeof buf));
    return CK_OK;
}

/* NumPy's pairwise summation of a float64 array, as np.sum does it
 * (numpy/core/src/umath/loops_utils.h.src): blocks of up to 128 summed
 * in 8 lanes, halves above that. */
static double np_sum(const double *a, int64_t n)
{
    double r[8], res;
    int64_t i;

    if (n < 8) {
        res = 0.;
        for (i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n > 128) {
        int64_t n2 = n / 2;
        n2 -= n2 % 8;
        return np_sum(a, n2) + np_sum(a + n2, n - n2);
    }
    for (int j = 0; j < 8; j++)
        r[j] = a[j];
    for (i = 8; i < n - (n % 8); i += 8)
        for (int j = 0; j < 8; j++)
            r[j] += a[i + j];
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++)
        res += a[i];
    return res;
}

/* scipy.ndimage._gaussian_kernel1d(sigma, 0, radius)[::-1] into w[2r+1]. */
static void gaussian_weights(double sigma, int64_t radius, double *w)
{
    int64_t len = 2 * radius + 1;
    double f = -0.5 / (sigma * sigma), sum;

    for (int64_t x = -radius; x <= radius; x++)
        w[x + radius] = exp(f * (double)(x * x));
    sum = np_sum(w, len);
    for (int64_t k = 0; k < len; k++)
        w[k] = w[k] / sum;
    for (int64_t k = 0; k < len / 2; k++) { /* symmetric: for the record */
        double t = w[k];
        w[k] = w[len - 1 - k];
        w[len - 1 - k] = t;
    }
}

static ck_code parse_filter(ck_plan *p, const char *path, const char *where,
                            ck_node *n, int sub, const cJSON *step,
                            const ck_node *m, ck_err *err)
{
    double v[CK_MAX_DIMS], org[CK_MAX_DIMS];
    int nd = m->ndim;

    if (nd == 0)
        return ck_plan_bad(err, path, where,
                           "needs an array of 1 or more "
                           "dimensions");
    if (m->dtype == CK_BOOL)
        return ck_plan_bad(err, path, where,
                           "a bool input is not supported (SciPy casts "
                           "the filtered values back to bool); use astype "
                           "first");
    CK_TRY(parse_mode(path, where, step, n, err));
    CK_TRY(ck_plan_opt_num(path, where, step, "cval", -DBL_MAX, DBL_MAX, 0.0,
                           &n->cval, err));
    if (sub == CK_ST_CONVOLVE || sub == CK_ST_CORRELATE) {
        CK_TRY(parse_weights(path, where, cJSON_GetObjectItem(step, "weights"),
                             nd, n, err));
        CK_TRY(per_axis(path, where, step, "origin", nd, 0, -MAX_SIDE, MAX_SIDE,
                        1, org, err));
        for (int d = 0; d < nd; d++) {
            int64_t w = n->wshape[d], o = (int64_t)org[d];
            if (o < -(w / 2) || o > (w - 1) / 2)
                return ck_plan_bad(
                    err, path, where,
                    "origin: %lld along axis %d must be in [%lld, %lld] for "
                    "weights of %lld there",
                    (long long)o, d, (long long)-(w / 2),
                    (long long)((w - 1) / 2), (long long)w);
            /* scipy.ndimage.convolve: the weights flipped, the origin
             * negated and, for an even side, moved down by one */
            if (sub == CK_ST_CONVOLVE)
                o = -o - (w % 2 == 0);
            n->origin[d] = o;
            n->halo_lo[d] = w / 2 + o;
            n->halo_hi[d] = w - 1 - n->halo_lo[d];
        }
        if (sub == CK_ST_CONVOLVE) /* flipping every axis reverses C order */
            for (int64_t k = 0; k < n->nvals / 2; k++) {
                double t = n->vals[k];
                n->vals[k] = n->vals[n->nvals - 1 - k];
                n->vals[n->nvals - 1 - k] = t;
            }
    } else if (sub == CK_ST_UNIFORM) {
        CK_TRY(per_axis(path, where, step, "size", nd, 3, 1, MAX_WINDOW, 1, v,
                        err));
        CK_TRY(per_axis(path, where, step, "origin", nd, 0, -MAX_WINDOW,
                        MAX_WINDOW, 1, org, err));
        for (int d = 0; d < nd; d++) {
            int64_t w = (int64_t)v[d], o = (int64_t)org[d];
            if (w == 1) /* SciPy skips the axis, origin and all */
                continue;
            if (w / 2 + o < 0 || w / 2 + o >= w)
                return ck_plan_bad(err, path, where,
                                   "origin: %lld along axis %d must be in "
                                   "[%lld, %lld] for size %lld",
                                   (long long)o, d, (long long)-(w / 2),
                                   (long long)(w - 1 - w / 2), (long long)w);
            n->wshape[d] = w;
            n->origin[d] = o;
            n->halo_lo[d] = w / 2 + o;
            n->halo_hi[d] = w - 1 - n->halo_lo[d];
        }
    } else { /* gaussian */
        double truncate;
        int64_t order, total = 0, k = 0;
        CK_TRY(
            per_axis(path, where, step, "sigma", nd, NAN, 0, 1e300, 0, v, err));
        if (isnan(v[0]))
            return ck_plan_bad(err, path, where,
                               "sigma: missing (a number, or a list of one "
                               "per axis)");
        CK_TRY(ck_plan_opt_num(path, where, step, "truncate", 0, 1e300, 4.0,
                               &truncate, err));
        CK_TRY(
            ck_plan_opt_int(path, where, step, "order", 0, 0, 0, &order, err));
        for (int d = 0; d < nd; d++) {
            double rad = truncate * v[d] + 0.5;
            if (v[d] <= 1e-15) /* SciPy skips the axis */
                continue;
            if (!(rad < (MAX_WINDOW - 1) / 2 + 1))
                return ck_plan_bad(err, path, where,
                                   "sigma: %g with truncate %g gives a "
                                   "radius over %d along axis %d",
                                   v[d], truncate, (MAX_WINDOW - 1) / 2, d);
            n->halo_lo[d] = n->halo_hi[d] = (int64_t)rad;
            n->wshape[d] = 2 * (int64_t)rad + 1;
            total += n->wshape[d];
        }
        if (!(n->vals = malloc((size_t)(total ? total : 1) * sizeof(double))))
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        n->nvals = total;
        for (int d = 0; d < nd; d++)
            if (n->wshape[d]) {
                gaussian_weights(v[d], n->halo_lo[d], n->vals + k);
                k += n->wshape[d];
            }
    }
    n->dtype = m->dtype;
    n->ndim = nd;
    memcpy(n->shape, m->shape, sizeof n->shape);
    ck_plan_first_chunks(p, n);
    return CK_OK;
}

/* "axis": one integer (default dflt; -99: required unless 1-D). */
static ck_code one_axis(const char *path, const char *where, const cJSON *step,
                        const char *op, int nd, int dflt, int *axis,
                        ck_err *err)
{
    const cJSON *v = cJSON_GetObjectItem(step, "axis");
    int64_t a;

    if (!v || cJSON_IsNull(v)) {
        if (dflt == -99 && nd != 1)
            return ck_plan_bad(err, path, where,
                               "axis: required for a %d-D array (numpy.%s "
                               "without an axis returns a list, one array "
                               "per axis; use one step per axis)",
                               nd, op);
        a = dflt == -99 ? 0 : dflt;
    } else if (!ck_plan_is_int(v)) {
        return ck_plan_bad(err, path, where,
                           "axis: expected one integer (numpy.%s over "
                           "several axes returns a list; use one step per "
                           "axis)",
                           op);
    } else {
        a = (int64_t)v->valuedouble;
    }
    if (a < -nd || a >= nd)
        return ck_plan_bad(err, path, where,
                           "axis: %lld out of range for a %d-D array",
                           (long long)a, nd);
    *axis = (int)(a < 0 ? a + nd : a);
    return CK_OK;
}

static ck_code parse_line(ck_plan *p, const char *path, const char *where,
                          ck_node *n, int sub, const cJSON *step,
                          const ck_node *m, ck_err *err)
{
    int nd = m->ndim;
    const char *op = sub == CK_ST_GRADIENT ? "gradient" : "diff";
    int64_t k;

    (void)p;
    if (nd == 0)
        return ck_plan_bad(err, path, where,
                           "%s needs an array of 1 or more dimensions", op);
    CK_TRY(one_axis(path, where, step, op, nd, sub == CK_ST_GRADIENT ? -99 : -1,
                    &n->axis, err));
    n->ndim = nd;
    memcpy(n->shape, m->shape, sizeof n->shape);
    memcpy(n->chunks, m->chunks, sizeof n->chunks);
    if (sub == CK_ST_GRADIENT) {
        CK_TRY(
            ck_plan_opt_int(path, where, step, "edge_order", 1, 2, 1, &k, err));
        if (m->dtype == CK_BOOL)
            return ck_plan_bad(err, path, where,
                               "gradient of a bool array (NumPy refuses "
                               "to subtract booleans); use astype first");
        if (m->shape[n->axis] < k + 1)
            return ck_plan_bad(err, path, where,
                               "axis %d has length %lld; edge_order %lld "
                               "needs at least %lld",
                               n->axis, (long long)m->shape[n->axis],
                               (long long)k, (long long)k + 1);
        n->halo_lo[n->axis] = n->halo_hi[n->axis] = k;
        n->dtype = m->dtype == CK_F32 ? CK_F32 : CK_F64;
    } else {
        CK_TRY(ck_plan_opt_int(path, where, step, "n", 0, INT64_MAX / 4, 1, &k,
                               err));
        n->halo_hi[n->axis] = k;
        n->shape[n->axis] = m->shape[n->axis] > k ? m->shape[n->axis] - k : 0;
        n->dtype = m->dtype;
    }
    return CK_OK;
}

CK_PLAN_PARSE_FN(stencil)
{
    const ck_node *m;

    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    for (int d = 0; d < CK_MAX_DIMS; d++) {
        n->halo_lo[d] = n->halo_hi[d] = n->origin[d] = n->wshape[d] = 0;
    }
    if (sub == CK_ST_GRADIENT || sub == CK_ST_DIFF)
        return parse_line(p, path, where, n, sub, step, m, err);
    return parse_filter(p, path, where, n, sub, step, m, err);
}

/* ---- scratch ---- */

/* The most elements a box of n elements (side d at most shape[d]) has when
 * grown by grow[d] along each axis.  prod(s_d + grow_d) under prod(s_d) =
 * n is largest at a vertex of the box of log-sides: every side but one at
 * 1 or at its bound.  The axes without growth act as one. */
static double grown_bound(int nd, const int64_t *shape, const int64_t *grow,
                          size_t n)
{
    double cap[CK_MAX_DIMS + 1], g[CK_MAX_DIMS + 1], flat = 1, best = 0;
    int k = 0;

    for (int d = 0; d < nd; d++) {
        double c = (double)(shape[d] < (int64_t)n ? shape[d] : (int64_t)n);
        if (grow[d] > 0) {
            cap[k] = c > 1 ? c : 1;
            g[k++] = (double)grow[d];
        } else {
            flat *= c > 1 ? c : 1;
        }
    }
    cap[k] = flat < (double)n ? flat : (double)n;
    g[k++] = 0;
    if (k > 12) { /* too many to try: each side grown as if it were 1 */
        best = (double)n;
        for (int d = 0; d < k; d++)
            best *= 1 + g[d];
        return best;
    }
    for (int f = 0; f < k; f++)
        for (uint32_t mask = 0; mask < (1u << (k - 1)); mask++) {
            double fixed = 1, val = 1;
            int b = 0;
            for (int d = 0; d < k; d++) {
                if (d == f)
                    continue;
                double s = (mask >> b++) & 1 ? cap[d] : 1;
                fixed *= s;
                val *= s + g[d];
            }
            if (fixed > (double)n)
                continue;
            double s = (double)n / fixed;
            val *= (s < cap[f] ? s : cap[f]) + g[f];
            if (val > best)
                best = val;
        }
    return best;
}

static size_t elems(double x)
{
    return x >= (double)(SIZE_MAX / 64) ? SIZE_MAX / 64 : (size_t)ceil(x);
}

size_t ck_exec_stencil_bytes(const xrun *r, int i, size_t n, int known,
                             int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    int64_t grow[CK_MAX_DIMS];
    size_t esz = ck_dtype_size(m->dtype), padded, region, b;
    double total = (double)ck_exec_nelem(m->ndim, m->shape);

    (void)known;
    if (n == 0)
        return 0;
    for (int d = 0; d < nd->ndim; d++)
        grow[d] = nd->halo_lo[d] + nd->halo_hi[d];
    if (aligned) { /* boxes of its own chunks at most: their shape known */
        double p = 1;
        for (int d = 0; d < nd->ndim; d++)
            p *= (double)(nd->chunks[d] < nd->shape[d] ? nd->chunks[d]
                                                       : nd->shape[d]) +
                 (double)grow[d];
        padded = elems(p);
    } else {
        padded = elems(grown_bound(nd->ndim, nd->shape, grow, n));
    }
    region = padded < total ? padded : elems(total);
    b = ck_exec_al(region * esz) + ck_exec_bytes(r, nd->arg[0], region, -1, 0);
    if (nd->sub == CK_ST_GRADIENT || nd->sub == CK_ST_DIFF)
        return b + ck_exec_al(region * 8) + 256;
    /* the padded box and its second buffer, the result in float64, the
     * far-side boxes of 'wrap', the index maps and the footprint */
    b += 2 * ck_exec_al(padded * 8) + ck_exec_al(n * 8);
    if (nd->mode == MODE_WRAP)
        b += ck_exec_al(region * esz);
    for (int d = 0; d < nd->ndim; d++)
        b += ck_exec_al(
            ((size_t)(nd->shape[d] < (int64_t)n ? nd->shape[d] : (int64_t)n) +
             (size_t)grow[d]) *
            8);
    if (nd->sub == CK_ST_CONVOLVE || nd->sub == CK_ST_CORRELATE)
        b += 2 * ck_exec_al((size_t)nd->nvals * 8);
    return b + 256;
}

/* ---- the filters ---- */

/* Index of the array (length len) that position j of the extended line
 * holds under mode, or -1 for cval: scipy.ndimage's extension of a line,
 * periodic however far it reaches. */
static int64_t map_index(int mode, int64_t j, int64_t len)
{
    int64_t p, k;

    if (j >= 0 && j < len)
        return j;
    switch (mode) {
    case MODE_NEAREST:
        return j < 0 ? 0 : len - 1;
    case MODE_CONSTANT:
        return -1;
    case MODE_WRAP:
        k = j % len;
        return k < 0 ? k + len : k;
    case MODE_MIRROR:
        if (len == 1)
            return 0;
        p = 2 * len - 2;
        k = j % p;
        k = k < 0 ? k + p : k;
        return k < len ? k : p - k;
    default: /* reflect */
        p = 2 * len;
        k = j % p;
        k = k < 0 ? k + p : k;
        return k < len ? k : p - 1 - k;
    }
}

/* One axis of a box being evaluated: the grown (padded) positions, the
 * intervals of the array they read, and where each position's value sits
 * in the compact region read (-1: cval). */
typedef struct axis_map {
    int64_t npad;
    int nint;
    int64_t lo[2], len[2];
    int64_t *cpos;
} axis_map;

static void make_map(int mode, int64_t len, int64_t p0, axis_map *x)
{
    int64_t L = x->npad;

    if (mode == MODE_WRAP) {
        int64_t q0 = ((p0 % len) + len) % len;
        x->nint = 1;
        x->lo[0] = L >= len ? 0 : q0;
        x->len[0] = L >= len ? len : q0 + L <= len ? L : len - q0;
        if (L < len && q0 + L > len) {
            x->nint = 2; /* the far side first: intervals ascend */
            x->lo[1] = q0;
            x->len[1] = len - q0;
            x->lo[0] = 0;
            x->len[0] = q0 + L - len;
        }
    } else { /* the positions map onto one run of indices */
        int64_t mn = len, mx = -1;
        for (int64_t j = 0; j < L; j++) {
            int64_t k = map_index(mode, p0 + j, len);
            if (k >= 0) {
                mn = k < mn ? k : mn;
                mx = k > mx ? k : mx;
            }
        }
        x->nint = 1;
        x->lo[0] = mn;
        x->len[0] = mx - mn + 1;
    }
    for (int64_t j = 0; j < L; j++) {
        int64_t k = map_index(mode, p0 + j, len);
        if (k < 0)
            x->cpos[j] = -1;
        else if (k >= x->lo[0] && k < x->lo[0] + x->len[0])
            x->cpos[j] = k - x->lo[0];
        else
            x->cpos[j] = x->len[0] + k - x->lo[1];
    }
}

/* row[j] = the compact region's element base + cpos[j], as float64. */
static void gather_row(ck_dtype t, const void *src, int64_t base,
                       const int64_t *cpos, int64_t n, double cval, double *row)
{
#define GATHER(T)                                                              \
    do {                                                                       \
        const T *s_ = (const T *)src + base;                                   \
        for (int64_t j = 0; j < n; j++)                                        \
            row[j] = cpos[j] < 0 ? cval : (double)s_[cpos[j]];                 \
    } while (0)
    switch (t) {
    case CK_I8:
        GATHER(int8_t);
        break;
    case CK_I16:
        GATHER(int16_t);
        break;
    case CK_I32:
        GATHER(int32_t);
        break;
    case CK_I64:
        GATHER(int64_t);
        break;
    case CK_U8:
        GATHER(uint8_t);
        break;
    case CK_U16:
        GATHER(uint16_t);
        break;
    case CK_U32:
        GATHER(uint32_t);
        break;
    case CK_U64:
        GATHER(uint64_t);
        break;
    case CK_F32:
        GATHER(float);
        break;
    default:
        GATHER(double);
        break;
    }
#undef GATHER
}

/* Before a cast to an integer dtype (which truncates, as SciPy's does):
 * a value within 1e-12 relative of an integer is that integer.  SciPy's
 * weights come from NumPy's exp, which may differ from the C library's
 * in the last bit, so its sums and these can fall on either side of an
 * integer they equal mathematically: a constant 42 came out 41. */
static void snap_ints(ck_dtype t, double *x, size_t n)
{
    if (ck_dtype_is_float(t))
        return;
    for (size_t i = 0; i < n; i++) {
        double r = nearbyint(x[i]);
        if (fabs(x[i] - r) <= 1e-12 * fmax(1.0, fabs(r)))
            x[i] = r;
    }
}

/* Rounds x[n] to dtype t and back (as SciPy stores each axis's pass in the
 * output array before the next reads it). */
static void round_to(ck_dtype t, double *x, size_t n)
{
    uint64_t tmp[256];

    if (t == CK_F64)
        return;
    snap_ints(t, x, n);
    for (size_t i = 0; i < n; i += 256) {
        size_t k = n - i < 256 ? n - i : 256;
        ck_dtype_convert(t, tmp, CK_F64, x + i, k);
        ck_dtype_convert(CK_F64, x + i, t, tmp, k);
    }
}

/* Strides (elements) of a C-order box. */
static void strides(int nd, const int64_t *shape, int64_t *st)
{
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

/* Advances the C-order odometer idx over shape[0..nd-1]; 0 at the end. */
static int next_index(int nd, const int64_t *shape, int64_t *idx)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d])
            return 1;
        idx[d] = 0;
    }
    return 0;
}

/* Sets the cells of buf (shape cur) that lie outside the array along an
 * axis after 'after' back to cval: SciPy's next pass extends the pass's
 * output with cval, not the pass's values there. */
static void reset_outside(int nd, const int64_t *cur, const axis_map *x,
                          int after, double cval, double *buf)
{
    int64_t idx[CK_MAX_DIMS] = {0}, row = cur[nd - 1];
    int last = nd - 1 > after;

    if (nd == 1) {
        for (int64_t j = 0; last && j < row; j++)
            if (x[0].cpos[j] < 0)
                buf[j] = cval;
        return;
    }
    do {
        int out = 0;
        for (int d = after + 1; d < nd - 1; d++)
            out |= x[d].cpos[idx[d]] < 0;
        for (int64_t j = 0; j < row; j++)
            if (out || (last && x[nd - 1].cpos[j] < 0))
                buf[j] = cval;
        buf += row;
    } while (next_index(nd - 1, cur, idx));
}

/* The taps of one pass over n contiguous outputs y, whose tap k reads
 * x + k * step: uniform sums them from 0 in tap order and divides by L
 * (SciPy keeps a running sum along the line: the same within rounding);
 * gaussian is NI_Correlate1D's symmetric form, the centre tap first and
 * the pairs from the outside in.  Groups of PASS_REGS outputs keep their
 * sums in registers over all the taps (vectorised: the file is built at
 * -O3); every output gets its terms in that order. */
#define PASS_REGS 16
static void pass_taps(int uniform, const double *w, int64_t L, int64_t step,
                      const double *restrict x, double *restrict y, int64_t n)
{
    int64_t c = L / 2, m = 0;

    for (; m + PASS_REGS <= n; m += PASS_REGS) {
        double acc[PASS_REGS];
        if (uniform) {
            for (int q = 0; q < PASS_REGS; q++)
                acc[q] = 0.0;
            for (int64_t k = 0; k < L; k++)
                for (int q = 0; q < PASS_REGS; q++)
                    acc[q] += x[k * step + m + q];
            for (int q = 0; q < PASS_REGS; q++)
                y[m + q] = acc[q] / (double)L;
        } else {
            for (int q = 0; q < PASS_REGS; q++)
                acc[q] = x[c * step + m + q] * w[c];
            for (int64_t j = -c; j < 0; j++)
                for (int q = 0; q < PASS_REGS; q++)
                    acc[q] += (x[(c + j) * step + m + q] +
                               x[(c - j) * step + m + q]) *
                              w[c + j];
            for (int q = 0; q < PASS_REGS; q++)
                y[m + q] = acc[q];
        }
    }
    for (; m < n; m++) {
        double acc;
        if (uniform) {
            acc = 0.0;
            for (int64_t k = 0; k < L; k++)
                acc += x[k * step + m];
            y[m] = acc / (double)L;
        } else {
            acc = x[c * step + m] * w[c];
            for (int64_t j = -c; j < 0; j++)
                acc +=
                    (x[(c + j) * step + m] + x[(c - j) * step + m]) * w[c + j];
            y[m] = acc;
        }
    }
}

/* One axis's pass of a separable filter: b (shape cur with cur[d] = s)
 * from a (shape cur with cur[d] = the padded length), as SciPy's 1-D
 * filters compute each element.  For one index o of the axes before d,
 * output m of the (s x inner) slab reads the input at m + k inner for
 * the taps k: contiguous outputs whatever the axis. */
static void pass_axis(const ck_node *nd, int d, const double *w, int64_t s,
                      const int64_t *cur, const double *a, double *b)
{
    int64_t outer = 1, inner = 1, lin = cur[d];

    for (int e = 0; e < d; e++)
        outer *= cur[e];
    for (int e = d + 1; e < nd->ndim; e++)
        inner *= cur[e];
    for (int64_t o = 0; o < outer; o++)
        pass_taps(nd->sub == CK_ST_UNIFORM, w, nd->wshape[d], inner,
                  a + o * lin * inner, b + o * s * inner, s * inner);
}

/* n contiguous outputs y of a correlation: each sums p[off[f]] * fw[f]
 * from 0 over the taps f in order, with p its own position in x; groups
 * of PASS_REGS outputs keep their sums in registers over the taps. */
static void correlate_row(const double *restrict x, const int64_t *off,
                          const double *fw, int64_t nf, double *restrict y,
                          int64_t n)
{
    int64_t m = 0;

    for (; m + PASS_REGS <= n; m += PASS_REGS) {
        double acc[PASS_REGS];
        for (int q = 0; q < PASS_REGS; q++)
            acc[q] = 0.0;
        for (int64_t f = 0; f < nf; f++)
            for (int q = 0; q < PASS_REGS; q++)
                acc[q] += x[off[f] + m + q] * fw[f];
        for (int q = 0; q < PASS_REGS; q++)
            y[m + q] = acc[q];
    }
    for (; m < n; m++) {
        double acc = 0.0;
        for (int64_t f = 0; f < nf; f++)
            acc += x[off[f] + m] * fw[f];
        y[m] = acc;
    }
}

/* scipy.ndimage.correlate over the padded box pad (strides pst): each
 * output element sums weight * value over the weights larger than
 * DBL_EPSILON in magnitude, in C order, as NI_Correlate does. */
static ck_code correlate_box(const ck_node *nd, const int64_t *shape,
                             const double *pad, const int64_t *pst, double *out,
                             ck_arena *a, ck_err *err)
{
    int64_t *off = ck_arena_alloc(a, (size_t)nd->nvals * 8);
    double *fw = ck_arena_alloc(a, (size_t)nd->nvals * 8);
    int64_t idx[CK_MAX_DIMS] = {0}, nf = 0, o = 0;
    int dims = nd->ndim;

    if (!off || !fw)
        return ck_exec_no_room(err);
    for (int64_t k = 0; k < nd->nvals; k++) {
        if (fabs(nd->vals[k]) > DBL_EPSILON) {
            int64_t f = 0;
            for (int d = 0; d < dims; d++)
                f += idx[d] * pst[d];
            off[nf] = f;
            fw[nf++] = nd->vals[k];
        }
        next_index(dims, nd->wshape, idx);
    }
    memset(idx, 0, sizeof idx);
    do {
        int64_t base = 0;
        for (int d = 0; d < dims - 1; d++)
            base += idx[d] * pst[d];
        correlate_row(pad + base, off, fw, nf, out + o, shape[dims - 1]);
        o += shape[dims - 1];
    } while (next_index(dims - 1, shape, idx));
    return CK_OK;
}

/* The operand over the intervals of every axis, into the compact region
 * reg (shape csh): one evaluation per combination of intervals. */
static ck_code read_region(xrun *r, const ck_node *nd, const axis_map *x,
                           const int64_t *csh, void *reg, ck_arena *a,
                           ck_err *err)
{
    const ck_node *m = &r->p->node[nd->arg[0]];
    int dims = nd->ndim, ncomb = 1;
    int64_t st[CK_MAX_DIMS], sh[CK_MAX_DIMS], off[CK_MAX_DIMS];
    int64_t zero[CK_MAX_DIMS] = {0};
    size_t esz = ck_dtype_size(m->dtype);
    void *tmp;

    for (int d = 0; d < dims; d++)
        ncomb *= x[d].nint;
    if (ncomb == 1) {
        for (int d = 0; d < dims; d++)
            st[d] = x[d].lo[0];
        return ck_exec_eval(r, nd->arg[0], st, csh, reg, a, err);
    }
    if (!(tmp = ck_arena_alloc(a, (size_t)ck_exec_nelem(dims, csh) * esz)))
        return ck_exec_no_room(err);
    /* Each piece's scratch is spent once it is copied: the arena goes
     * back to this mark after each, so the pieces need no more than one
     * evaluation of the whole region (what the bytes function counts). */
    size_t mark = a->used;
    for (int c = 0; c < ncomb; c++) {
        int rest = c;
        for (int d = dims - 1; d >= 0; d--) {
            int k = rest % x[d].nint;
            rest /= x[d].nint;
            st[d] = x[d].lo[k];
            sh[d] = x[d].len[k];
            off[d] = k ? x[d].len[0] : 0;
        }
        CK_TRY(ck_exec_eval(r, nd->arg[0], st, sh, tmp, a, err));
        ck_box_copy(dims, esz, reg, csh, off, tmp, sh, zero, NULL, sh);
        a->used = mark;
    }
    return CK_OK;
}

static ck_code filter_eval(xrun *r, int i, const int64_t *start,
                           const int64_t *shape, void *dst, ck_arena *a,
                           ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    int dims = nd->ndim, passes = 0;
    axis_map x[CK_MAX_DIMS];
    int64_t csh[CK_MAX_DIMS], cur[CK_MAX_DIMS], cst[CK_MAX_DIMS];
    int64_t pst[CK_MAX_DIMS], idx[CK_MAX_DIMS] = {0};
    size_t n = (size_t)ck_exec_nelem(dims, shape), npad;
    void *reg;
    double *pad, *row;

    for (int d = 0; d < dims; d++)
        passes += nd->wshape[d] > 0;
    if (passes == 0) /* uniform_filter of size 1, gaussian of sigma 0 */
        return ck_exec_eval(r, nd->arg[0], start, shape, dst, a, err);
    for (int d = 0; d < dims; d++) {
        x[d].npad = shape[d] + nd->halo_lo[d] + nd->halo_hi[d];
        if (!(x[d].cpos = ck_arena_alloc(a, (size_t)x[d].npad * 8)))
            return ck_exec_no_room(err);
        make_map(nd->mode, m->shape[d], start[d] - nd->halo_lo[d], &x[d]);
        csh[d] = x[d].len[0] + (x[d].nint > 1 ? x[d].len[1] : 0);
        cur[d] = x[d].npad;
    }
    npad = (size_t)ck_exec_nelem(dims, cur);
    if (!(reg = ck_arena_alloc(a, (size_t)ck_exec_nelem(dims, csh) *
                                      ck_dtype_size(m->dtype))) ||
        !(pad = ck_arena_alloc(a, npad * 8)))
        return ck_exec_no_room(err);
    CK_TRY(read_region(r, nd, x, csh, reg, a, err));

    /* the padded box, in float64 */
    strides(dims, csh, cst);
    row = pad;
    do {
        int64_t base = 0;
        int out = 0;
        for (int d = 0; d < dims - 1; d++) {
            out |= x[d].cpos[idx[d]] < 0;
            base += x[d].cpos[idx[d]] * cst[d];
        }
        if (out)
            for (int64_t j = 0; j < cur[dims - 1]; j++)
                row[j] = nd->cval;
        else
            gather_row(m->dtype, reg, base, x[dims - 1].cpos, cur[dims - 1],
                       nd->cval, row);
        row += cur[dims - 1];
    } while (next_index(dims - 1, cur, idx));

    if (nd->sub == CK_ST_CONVOLVE || nd->sub == CK_ST_CORRELATE) {
        double *out = ck_arena_alloc(a, n * 8);
        if (!out)
            return ck_exec_no_room(err);
        strides(dims, cur, pst);
        CK_TRY(correlate_box(nd, shape, pad, pst, out, a, err));
        ck_dtype_convert(nd->dtype, dst, CK_F64, out, n);
        return CK_OK;
    }

    /* separable: one pass per axis, cast to the dtype between passes */
    double *buf = ck_arena_alloc(a, npad * 8), *src = pad;
    const double *w = nd->vals;
    if (!buf)
        return ck_exec_no_room(err);
    for (int d = 0; d < dims; d++) {
        if (!nd->wshape[d])
            continue;
        pass_axis(nd, d, w, shape[d], cur, src, buf);
        if (nd->sub == CK_ST_GAUSSIAN)
            w += nd->wshape[d];
        cur[d] = shape[d];
        double *t = src;
        src = buf;
        buf = t;
        if (--passes == 0)
            break;
        round_to(nd->dtype, src, (size_t)ck_exec_nelem(dims, cur));
        if (nd->mode == MODE_CONSTANT)
            reset_outside(dims, cur, x, d, nd->cval, src);
    }
    snap_ints(nd->dtype, src, n);
    ck_dtype_convert(nd->dtype, dst, CK_F64, src, n);
    return CK_OK;
}

/* ---- gradient and diff ---- */

/* numpy.gradient with unit spacing along the axis of length len: y (outer
 * x s x inner) from f (outer x lr x inner), whose index 0 along the axis
 * is the array's r0; g0 is the box's first index. */
#define GRADIENT_FN(name, T)                                                   \
    static void name(const T *f, T *y, int64_t outer, int64_t lr,              \
                     int64_t inner, int64_t s, int64_t r0, int64_t g0,         \
                     int64_t len, int64_t edge)                                \
    {                                                                          \
        for (int64_t o = 0; o < outer; o++)                                    \
            for (int64_t i = 0; i < s; i++) {                                  \
                int64_t g = g0 + i;                                            \
                const T *c = f + (o * lr + g - r0) * inner;                    \
                const T *lo = c - inner, *hi = c + inner;                      \
                T *out = y + (o * s + i) * inner;                              \
                for (int64_t t = 0; t < inner; t++) {                          \
                    if (g > 0 && g < len - 1)                                  \
                        out[t] = (hi[t] - lo[t]) / (T)2.0;                     \
                    else if (edge == 1 && g == 0)                              \
                        out[t] = (hi[t] - c[t]) / (T)1.0;                      \
                    else if (edge == 1)                                        \
                        out[t] = (c[t] - lo[t]) / (T)1.0;                      \
                    else if (g == 0)                                           \
                        out[t] = (T)-1.5 * c[t] + (T)2.0 * hi[t] +             \
                                 (T)-0.5 * hi[t + inner];                      \
                    else                                                       \
                        out[t] = (T)0.5 * lo[t - inner] + (T)-2.0 * lo[t] +    \
                                 (T)1.5 * c[t];                                \
                }                                                              \
            }                                                                  \
    }
GRADIENT_FN(gradient_f32, float)
GRADIENT_FN(gradient_f64, double)

/* numpy.diff n times along the axis, in place over w (outer x lr x inner):
 * each pass w[j] = w[j + 1] - w[j] (not_equal for bool; integers wrap). */
#define DIFF_FN(name, T, OP)                                                   \
    static void name(T *w, int64_t outer, int64_t lr, int64_t inner,           \
                     int64_t times)                                            \
    {                                                                          \
        for (int64_t k = 1; k <= times; k++)                                   \
            for (int64_t o = 0; o < outer; o++)                                \
                for (int64_t j = 0; j < lr - k; j++) {                         \
                    T *a = w + (o * lr + j) * inner, *b = a + inner;           \
                    for (int64_t t = 0; t < inner; t++)                        \
                        a[t] = OP(b[t], a[t]);                                 \
                }                                                              \
    }
#define SUB(x, y) ((x) - (y))
#define NEQ(x, y) ((uint8_t)(((x) != 0) != ((y) != 0)))
DIFF_FN(diff_f32, float, SUB)
DIFF_FN(diff_f64, double, SUB)
DIFF_FN(diff_u64, uint64_t, SUB)
DIFF_FN(diff_bool, uint8_t, NEQ)

/* Writes the wrapped integers w[n] as dtype t (two's complement). */
static void store_wrapped(ck_dtype t, void *dst, const uint64_t *w, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        uint8_t b8;
        uint16_t b16;
        uint32_t b32;
        switch (ck_dtype_size(t)) {
        case 1:
            b8 = (uint8_t)w[k];
            memcpy((char *)dst + k, &b8, 1);
            break;
        case 2:
            b16 = (uint16_t)w[k];
            memcpy((char *)dst + 2 * k, &b16, 2);
            break;
        case 4:
            b32 = (uint32_t)w[k];
            memcpy((char *)dst + 4 * k, &b32, 4);
            break;
        default:
            memcpy((char *)dst + 8 * k, &w[k], 8);
        }
    }
}

/* Copies the first s of lr along the axis of w (outer x lr x inner). */
static void take_first(void *dst, const void *w, size_t esz, int64_t outer,
                       int64_t lr, int64_t s, int64_t inner)
{
    for (int64_t o = 0; o < outer; o++)
        memcpy((char *)dst + (size_t)(o * s * inner) * esz,
               (const char *)w + (size_t)(o * lr * inner) * esz,
               (size_t)(s * inner) * esz);
}

static ck_code line_eval(xrun *r, int i, const int64_t *start,
                         const int64_t *shape, void *dst, ck_arena *a,
                         ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    int ax = nd->axis;
    int64_t rst[CK_MAX_DIMS], rsh[CK_MAX_DIMS], outer = 1, inner = 1;
    int64_t len = m->shape[ax], s = shape[ax], r0, r1;
    size_t rn, esz = ck_dtype_size(m->dtype);
    /* gradient: edge_order; diff: n (the halos they were made into) */
    int64_t k = nd->sub == CK_ST_GRADIENT ? nd->halo_lo[ax] : nd->halo_hi[ax];
    void *reg;

    if (nd->sub == CK_ST_GRADIENT) {
        r0 = start[ax] - k > 0 ? start[ax] - k : 0;
        r1 = start[ax] + s + k < len ? start[ax] + s + k : len;
    } else {
        r0 = start[ax];
        r1 = start[ax] + s + k;
    }
    memcpy(rst, start, sizeof(int64_t) * (size_t)nd->ndim);
    memcpy(rsh, shape, sizeof(int64_t) * (size_t)nd->ndim);
    rst[ax] = r0;
    rsh[ax] = r1 - r0;
    for (int d = 0; d < ax; d++)
        outer *= shape[d];
    for (int d = ax + 1; d < nd->ndim; d++)
        inner *= shape[d];
    rn = (size_t)ck_exec_nelem(nd->ndim, rsh);
    if (!(reg = ck_arena_alloc(a, rn * esz)))
        return ck_exec_no_room(err);
    CK_TRY(ck_exec_eval(r, nd->arg[0], rst, rsh, reg, a, err));

    if (nd->sub == CK_ST_GRADIENT) {
        if (m->dtype == CK_F32) {
            gradient_f32(reg, dst, outer, rsh[ax], inner, s, r0, start[ax], len,
                         k);
            return CK_OK;
        }
        double *f = reg;
        if (m->dtype != CK_F64) { /* NumPy: integers to float64 first */
            if (!(f = ck_arena_alloc(a, rn * 8)))
                return ck_exec_no_room(err);
            ck_dtype_convert(CK_F64, f, m->dtype, reg, rn);
        }
        gradient_f64(f, dst, outer, rsh[ax], inner, s, r0, start[ax], len, k);
        return CK_OK;
    }
    switch (m->dtype) {
    case CK_F32:
        diff_f32(reg, outer, rsh[ax], inner, k);
        break;
    case CK_F64:
        diff_f64(reg, outer, rsh[ax], inner, k);
        break;
    case CK_BOOL:
        diff_bool(reg, outer, rsh[ax], inner, k);
        break;
    default: { /* integers: modular arithmetic in 64 bits, then narrowed */
        uint64_t *w = ck_arena_alloc(a, rn * 8);
        if (!w)
            return ck_exec_no_room(err);
        ck_dtype_convert(ck_dtype_is_signed(m->dtype) ? CK_I64 : CK_U64, w,
                         m->dtype, reg, rn);
        diff_u64(w, outer, rsh[ax], inner, k);
        for (int64_t q = 0; q < outer; q++)
            store_wrapped(nd->dtype,
                          (char *)dst + (size_t)(q * s * inner) * esz,
                          w + q * rsh[ax] * inner, (size_t)(s * inner));
        return CK_OK;
    }
    }
    take_first(dst, reg, esz, outer, rsh[ax], s, inner);
    return CK_OK;
}

ck_code ck_exec_stencil_eval(xrun *r, int i, const int64_t *start,
                             const int64_t *shape, void *dst, ck_arena *a,
                             const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];

    (void)mm;
    if (ck_exec_nelem(nd->ndim, shape) == 0)
        return CK_OK;
    if (nd->sub == CK_ST_GRADIENT || nd->sub == CK_ST_DIFF)
        return line_eval(r, i, start, shape, dst, a, err);
    return filter_eval(r, i, start, shape, dst, a, err);
}
