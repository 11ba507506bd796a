/*
 * pipelines/op_index.c - selection along one axis and membership:
 * take and compress (numpy.take, numpy.compress: x[[3, 1, 7]], x[:, m]),
 * isin, and broadcast_to.
 *
 * take and compress know their indices when the plan is made: from a list
 * in the step, or from a 1-D array (an input, or any step) read once by
 * the parser (ck_exec_values), so the result's shape is known before the
 * run and every later step plans as usual.  A box of the result reads,
 * for each run of its indices that falls in one chunk of the argument
 * along the axis, only the rows between that run's lowest and highest
 * index: chunks holding no selected row are never read.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_grid.h"
#include "pipelines/exec_impl.h"
#include "pipelines/gen.h"
#include "pipelines/optab.h"
#include "pipelines/plan_impl.h"
#include "pipelines/stream.h"

/* Longest index or condition array a step may take from data. */
enum { MAX_INDICES = 1 << 26 };

/* ---- take and compress ---- */

/* Indices (take) or a condition (compress) from the list v: into n->idx,
 * normalised against len (negative indices count from the end). */
static ck_code list_indices(const char *path, const char *where, ck_node *n,
                            int compress, const char *key, const cJSON *v,
                            int64_t len, ck_err *err)
{
    const cJSON *e;
    int64_t k = 0, cnt = cJSON_GetArraySize(v);

    if (!cJSON_IsArray(v) && !compress && ck_plan_is_int(v))
        return ck_plan_bad(err, path, where,
                           "%s: expected a list: [%lld] takes one index and "
                           "keeps the axis (on the command line '--%s "
                           "[%lld]'); an integer in slice's \"index\" drops "
                           "it, as numpy.take with a scalar does",
                           key, (long long)v->valuedouble, key,
                           (long long)v->valuedouble);
    if (!cJSON_IsArray(v))
        return ck_plan_bad(err, path, where, "%s: expected a list", key);
    if (compress && cnt > len)
        return ck_plan_bad(err, path, where,
                           "%s: %lld values for an axis of length %lld", key,
                           (long long)cnt, (long long)len);
    if (!(n->idx = malloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1))))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    n->nidx = 0;
    cJSON_ArrayForEach(e, v)
    {
        if (compress) {
            if (!cJSON_IsBool(e) && !cJSON_IsNumber(e))
                return ck_plan_bad(err, path, where,
                                   "%s[%lld]: expected true or false", key,
                                   (long long)k);
            if (cJSON_IsTrue(e) || (cJSON_IsNumber(e) && e->valuedouble != 0))
                n->idx[n->nidx++] = k;
        } else {
            int64_t x = ck_plan_is_int(e) ? (int64_t)e->valuedouble : INT64_MIN;
            if (x == INT64_MIN)
                return ck_plan_bad(err, path, where,
                                   "%s[%lld]: expected an integer", key,
                                   (long long)k);
            if (x < -len || x >= len)
                return ck_plan_bad(err, path, where,
                                   "%s[%lld]: index %lld is out of bounds "
                                   "for an axis of length %lld",
                                   key, (long long)k, (long long)x,
                                   (long long)len);
            n->idx[n->nidx++] = x < 0 ? x + len : x;
        }
        k++;
    }
    return CK_OK;
}

/* Indices from array arg 1: an integer array (take) or a condition
 * (compress: any dtype, nonzero true), 1-D, its values computed now. */
static ck_code array_indices(ck_plan *p, const char *path, const char *where,
                             ck_node *n, int compress, int64_t len, ck_err *err)
{
    const ck_node *q = ck_plan_array_arg(p, n, 1);
    const char *what = compress ? "condition" : "indices";
    int64_t cnt;
    void *v = NULL;
    int64_t *iv;
    char sh[64];

    if (!q)
        return ck_plan_bad(err, path, where, "args[1]: expected an array");
    if (q->ndim != 1 || q->shape[0] < 0)
        return ck_plan_bad(err, path, where,
                           "args[1]: the %s must be a 1-D array, not %s", what,
                           ck_plan_shape_str(q->ndim, q->shape, sh, sizeof sh));
    cnt = q->shape[0];
    if (!compress && (ck_dtype_is_float(q->dtype) || q->dtype == CK_BOOL))
        return ck_plan_bad(err, path, where,
                           "args[1]: indices must be integers, not %s (use "
                           "compress for a boolean array)",
                           ck_dtype_name(q->dtype));
    if (compress && cnt > len)
        return ck_plan_bad(err, path, where,
                           "args[1]: %lld values for an axis of length %lld",
                           (long long)cnt, (long long)len);
    if (cnt > MAX_INDICES)
        return ck_plan_bad(err, path, where, "args[1]: %lld %s, at most %d",
                           (long long)cnt, what, MAX_INDICES);
    CK_TRY(ck_exec_values(p, 1, &n->arg[1], &v, err));
    if (!(iv = malloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1)))) {
        free(v);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    n->idx = iv;
    n->nidx = 0;
    if (compress) {
        /* any dtype, nonzero (NaN too) as true, as numpy.compress */
        for (int64_t k = 0; k < cnt; k++)
            if (ck_dtype_load_f64(q->dtype, v, (size_t)k) != 0)
                iv[n->nidx++] = k;
    } else {
        ck_dtype_convert(CK_I64, iv, q->dtype, v, (size_t)cnt);
        for (int64_t k = 0; k < cnt; k++) {
            int64_t x = iv[k];
            if (x < -len || x >= len || (q->dtype == CK_U64 && x < 0)) {
                free(v);
                return ck_plan_bad(err, path, where,
                                   "args[1]: %s[%lld] = %lld is out of "
                                   "bounds for an axis of length %lld",
                                   q->name, (long long)k, (long long)x,
                                   (long long)len);
            }
            iv[n->nidx++] = x < 0 ? x + len : x;
        }
    }
    free(v);
    return CK_OK;
}

/* take: "indices" or args[1] (an integer array), "axis"; compress (sub 1):
 * "condition" or args[1] (an array, nonzero true), "axis". */
CK_PLAN_PARSE_FN(take)
{
    const char *key = sub ? "condition" : "indices";
    const cJSON *list = cJSON_GetObjectItem(step, key);
    const ck_node *m;
    int64_t axis, len;

    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    if (m->ndim == 0)
        return ck_plan_bad(err, path, where, "needs an array of 1-D or more");
    CK_TRY(ck_plan_opt_int(path, where, step, "axis", -m->ndim, m->ndim - 1,
                           m->ndim == 1 ? 0 : INT64_MIN, &axis, err));
    if (axis == INT64_MIN)
        return ck_plan_bad(err, path, where,
                           "needs \"axis\" for a %d-D array (NumPy's default "
                           "flattens it: reshape it to 1-D first)",
                           m->ndim);
    n->axis = (int)(axis < 0 ? axis + m->ndim : axis);
    len = m->shape[n->axis];
    if ((list != NULL) == (n->nargs == 2))
        return ck_plan_bad(err, path, where,
                           "give \"%s\" or a second array in args, one of "
                           "them",
                           key);
    if (list)
        CK_TRY(list_indices(path, where, n, sub, key, list, len, err));
    else
        CK_TRY(array_indices(p, path, where, n, sub, len, err));
    n->dtype = m->dtype;
    n->ndim = m->ndim;
    memcpy(n->shape, m->shape, sizeof n->shape);
    memcpy(n->chunks, m->chunks, sizeof n->chunks);
    n->shape[n->axis] = n->nidx;
    if (n->chunks[n->axis] > n->nidx)
        n->chunks[n->axis] = n->nidx > 0 ? n->nidx : 1;
    return CK_OK;
}

/* A box reads, per group of its positions, the argument's rows lo..hi:
 * a group stays in one chunk of the argument along the axis and spans at
 * most as many rows as the box has along it, so the buffer never holds
 * more elements than the box. */
size_t ck_exec_take_bytes(const xrun *r, int i, size_t n, int known,
                          int aligned)
{
    const ck_node *nd = &r->p->node[i];

    (void)known, (void)aligned;
    return ck_exec_al(n * ck_dtype_size(nd->dtype)) +
           ck_exec_bytes(r, nd->arg[0], n, -1, 0);
}

ck_code ck_exec_take_eval(xrun *r, int i, const int64_t *start,
                          const int64_t *shape, void *dst, ck_arena *a,
                          const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    const int64_t *ix = nd->idx + start[nd->axis];
    int ax = nd->axis, nd_ = nd->ndim;
    int64_t len = shape[ax], cl = m->chunks[ax] > 0 ? m->chunks[ax] : 1;
    int64_t ist[CK_MAX_DIMS], ish[CK_MAX_DIMS], so[CK_MAX_DIMS] = {0};
    int64_t doff[CK_MAX_DIMS] = {0}, box[CK_MAX_DIMS];
    size_t esz = ck_dtype_size(nd->dtype);
    void *buf;

    (void)mm;
    if (ck_exec_nelem(nd_, shape) == 0)
        return CK_OK;
    if (!(buf = ck_arena_alloc(a, (size_t)ck_exec_nelem(nd_, shape) * esz)))
        return ck_exec_no_room(err);
    memcpy(ist, start, sizeof(int64_t) * (size_t)nd_);
    memcpy(ish, shape, sizeof(int64_t) * (size_t)nd_);
    memcpy(box, shape, sizeof(int64_t) * (size_t)nd_);
    box[ax] = 1;
    size_t mark = a->used; /* each group's operand scratch is freed after */
    for (int64_t j = 0; j < len;) {
        int64_t lo = ix[j], hi = ix[j], c = ix[j] / cl, e = j + 1;
        /* the group: following positions in chunk c within len rows */
        for (; e < len && ix[e] / cl == c; e++) {
            int64_t l2 = ix[e] < lo ? ix[e] : lo, h2 = ix[e] > hi ? ix[e] : hi;
            if (h2 - l2 + 1 > len)
                break;
            lo = l2;
            hi = h2;
        }
        ist[ax] = lo;
        ish[ax] = hi - lo + 1;
        CK_TRY(ck_exec_eval(r, nd->arg[0], ist, ish, buf, a, err));
        a->used = mark;
        for (int64_t k = j; k < e; k++) {
            so[ax] = ix[k] - lo;
            doff[ax] = k;
            ck_box_copy(nd_, esz, dst, shape, doff, buf, ish, so, NULL, box);
        }
        j = e;
    }
    return CK_OK;
}

/* ---- isin ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* isin: "values", a list of numbers (NaN never matches), "invert". */
CK_PLAN_PARSE_FN(isin)
{
    const cJSON *v = cJSON_GetObjectItem(step, "values"), *e;
    const cJSON *inv = cJSON_GetObjectItem(step, "invert");
    const ck_node *m;
    int64_t k = 0;

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    if (!cJSON_IsArray(v))
        return ck_plan_bad(err, path, where,
                           "\"values\": expected a list of numbers");
    if (inv && !cJSON_IsBool(inv))
        return ck_plan_bad(err, path, where, "invert: expected true or false");
    n->invert = cJSON_IsTrue(inv);
    n->vals = malloc(sizeof(double) * (size_t)(cJSON_GetArraySize(v) + 1));
    if (!n->vals)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    cJSON_ArrayForEach(e, v)
    {
        if (!cJSON_IsNumber(e) && !cJSON_IsBool(e))
            return ck_plan_bad(err, path, where,
                               "values[%lld]: expected a number", (long long)k);
        k++;
        if (cJSON_IsNumber(e) && isnan(e->valuedouble))
            continue;
        n->vals[n->nvals++] =
            cJSON_IsBool(e) ? cJSON_IsTrue(e) : e->valuedouble;
    }
    qsort(n->vals, (size_t)n->nvals, sizeof(double), cmp_double);
    n->dtype = CK_BOOL;
    n->ndim = m->ndim;
    memcpy(n->shape, m->shape, sizeof n->shape);
    memcpy(n->chunks, m->chunks, sizeof n->chunks);
    return CK_OK;
}

size_t ck_exec_isin_bytes(const xrun *r, int i, size_t n, int known,
                          int aligned)
{
    const ck_node *nd = &r->p->node[i];

    return ck_exec_al(n * sizeof(double)) +
           ck_exec_al(n * ck_dtype_size(r->p->node[nd->arg[0]].dtype)) +
           ck_exec_bytes(r, nd->arg[0], n, known, aligned);
}

/* Each value compared as float64 with the sorted list: what NumPy's isin
 * does after promoting both sides (int64 beyond 2^53 aside). */
ck_code ck_exec_isin_eval(xrun *r, int i, const int64_t *start,
                          const int64_t *shape, void *dst, ck_arena *a,
                          const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    size_t cnt = (size_t)ck_exec_nelem(nd->ndim, shape);
    double *v = ck_arena_alloc(a, cnt * sizeof(double));
    void *raw = ck_arena_alloc(a, cnt * ck_dtype_size(m->dtype));
    uint8_t *o = dst;

    (void)mm;
    if (!v || !raw)
        return ck_exec_no_room(err);
    CK_TRY(ck_exec_eval(r, nd->arg[0], start, shape, raw, a, err));
    ck_dtype_convert(CK_F64, v, m->dtype, raw, cnt);
    for (size_t k = 0; k < cnt; k++) {
        size_t lo = 0, hi = (size_t)nd->nvals;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (nd->vals[mid] < v[k])
                lo = mid + 1;
            else
                hi = mid;
        }
        int in = lo < (size_t)nd->nvals && nd->vals[lo] == v[k];
        o[k] = (uint8_t)(in != nd->invert);
    }
    return CK_OK;
}

/* ---- broadcast_to ---- */

CK_PLAN_PARSE_FN(broadcast_to)
{
    const ck_node *m;
    char a[128], b[128];

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    CK_TRY(ck_plan_int_list(path, where, "shape",
                            cJSON_GetObjectItem(step, "shape"), n->shape,
                            &n->ndim, 0, err));
    if (n->ndim < m->ndim)
        goto refuse;
    for (int d = 0; d < m->ndim; d++) {
        int64_t want = n->shape[n->ndim - m->ndim + d];
        if (m->shape[d] != want && m->shape[d] != 1)
            goto refuse;
    }
    n->dtype = m->dtype;
    ck_auto_chunks(n->ndim, n->shape, 8, 8 << 20, n->chunks);
    for (int d = 0; d < m->ndim; d++)
        if (m->shape[d] != 1)
            n->chunks[n->ndim - m->ndim + d] = m->chunks[d];
    return CK_OK;
refuse:
    return ck_plan_bad(err, path, where, "cannot broadcast %s to shape %s",
                       ck_plan_shape_str(m->ndim, m->shape, a, sizeof a),
                       ck_plan_shape_str(n->ndim, n->shape, b, sizeof b));
}

/* The argument's box under box start/shape: its axes of length 1 read
 * once. */
static void operand_box(const ck_node *nd, const ck_node *m,
                        const int64_t *start, const int64_t *shape,
                        int64_t *ost, int64_t *osh, int64_t *full)
{
    int lead = nd->ndim - m->ndim;

    for (int k = 0; k < nd->ndim; k++) {
        int d = k - lead;
        int one = d < 0 || m->shape[d] == 1;
        full[k] = one ? 1 : shape[k];
        if (d >= 0) {
            ost[d] = one ? 0 : start[k];
            osh[d] = one ? 1 : shape[k];
        }
    }
}

size_t ck_exec_broadcast_bytes(const xrun *r, int i, size_t n, int known,
                               int aligned)
{
    const ck_node *nd = &r->p->node[i];

    (void)known, (void)aligned;
    return ck_exec_al(n * ck_dtype_size(nd->dtype)) +
           ck_exec_bytes(r, nd->arg[0], n, -1, 0);
}

ck_code ck_exec_broadcast_eval(xrun *r, int i, const int64_t *start,
                               const int64_t *shape, void *dst, ck_arena *a,
                               const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    int64_t ost[CK_MAX_DIMS], osh[CK_MAX_DIMS], full[CK_MAX_DIMS];
    size_t esz = ck_dtype_size(nd->dtype);
    void *v;

    (void)mm;
    operand_box(nd, m, start, shape, ost, osh, full);
    if (ck_exec_nelem(nd->ndim, shape) == 0)
        return CK_OK;
    if (!(v = ck_arena_alloc(a, (size_t)ck_exec_nelem(m->ndim, osh) * esz)))
        return ck_exec_no_room(err);
    CK_TRY(ck_exec_eval(r, nd->arg[0], ost, osh, v, a, err));
    ck_exec_expand(nd->ndim, esz, dst, shape, v, full);
    return CK_OK;
}

/* ---- argwhere, nonzero, flatnonzero ---- */

/* The nonzero values' positions, found now (the argument evaluated once,
 * at most MAX_INDICES values): argwhere (sub 0) gives them as rows of
 * coordinates, nonzero (1) as one row per axis (np.array(np.nonzero(x))),
 * flatnonzero (2) as C-order positions. */
CK_PLAN_PARSE_FN(indices)
{
    const ck_node *m;
    int64_t cnt = 1, hits = 0, row[CK_MAX_DIMS] = {0};
    void *v = NULL;
    uint8_t *b;

    (void)step;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    for (int d = 0; d < m->ndim; d++)
        cnt *= m->shape[d];
    if (cnt > MAX_INDICES)
        return ck_plan_bad(err, path, where,
                           "'%s' has %lld values, more than the %d whose "
                           "indices a step finds",
                           m->name, (long long)cnt, MAX_INDICES);
    /* evaluated as x != 0 (NaN counts, as in NumPy): one byte a value,
     * all of them held at once, within --memory */
    ck_plan *q = ck_plan_dup(p);
    if (!q)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    q->n = n->arg[0] + 1;
    int ne = ck_plan_hidden_ew(q, CK_EW_NOT_EQUAL, n->arg[0], -1, 0, -1, 0);
    if (ne >= 0)
        snprintf(q->node[ne].name, sizeof q->node[ne].name, "%.40s != 0",
                 m->name);
    ck_code rc = ck_exec_values(q, 1, ne >= 0 ? &ne : &n->arg[0], &v, err);
    ck_dtype vt = ne >= 0 ? q->node[ne].dtype : m->dtype;
    free(q);
    CK_TRY(rc);
    if (!(b = malloc((size_t)(cnt ? cnt : 1)))) {
        free(v);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    ck_dtype_convert(CK_BOOL, b, vt, v, (size_t)cnt);
    free(v);
    for (int64_t k = 0; k < cnt; k++)
        hits += b[k] != 0;
    /* a 0-d argument: argwhere's rows have no coordinates (NumPy's
     * (hits, 0)); nonzero takes it as 1-d, as NumPy does */
    int nd = sub == 2 ? 1 : m->ndim ? m->ndim : sub == 0 ? 0 : 1;
    /* the indices are held until the run ends (charged there again) */
    ck_budget bud = CK_BUDGET_INIT(ck_plan_memory(p));
    char what[CK_NAME_MAX + 48];
    snprintf(what, sizeof what, "the %lld indices of '%s'",
             (long long)(hits * nd), n->name);
    ck_code brc = ck_budget_charge(&bud, ck_base_overhead() + cnt,
                                   "chunkctl itself", err);
    if (brc == CK_OK)
        brc = ck_budget_charge(&bud, hits * nd * 8, what, err);
    if (brc != CK_OK) {
        free(b);
        return brc;
    }
    n->idx = malloc(sizeof(int64_t) * (size_t)(hits * nd + 1));
    if (!n->idx) {
        free(b);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    n->nidx = hits * nd;
    for (int64_t k = 0, h = 0; k < cnt; k++) {
        if (b[k]) {
            for (int d = 0; d < nd; d++) {
                int64_t x = sub == 2 || !m->ndim ? k : row[d];
                n->idx[sub == 1 ? d * hits + h : h * nd + d] = x;
            }
            h++;
        }
        for (int d = m->ndim - 1; d >= 0; d--) { /* row: k + 1's place */
            if (++row[d] < m->shape[d])
                break;
            row[d] = 0;
        }
    }
    free(b);
    n->dtype = CK_I64;
    n->ndim = sub == 2 ? 1 : 2;
    n->shape[0] = sub == 2 ? hits : sub == 1 ? nd : hits;
    n->shape[1] = sub == 1 ? hits : nd;
    ck_auto_chunks(n->ndim, n->shape, 8, 8 << 20, n->chunks);
    return CK_OK;
}

size_t ck_exec_indices_bytes(const xrun *r, int i, size_t n, int known,
                             int aligned)
{
    (void)r, (void)i, (void)n, (void)known, (void)aligned;
    return 0; /* copied out of the plan */
}

ck_code ck_exec_indices_eval(xrun *r, int i, const int64_t *start,
                             const int64_t *shape, void *dst, ck_arena *a,
                             const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    int64_t zero[CK_MAX_DIMS] = {0};

    (void)a, (void)mm, (void)err;
    ck_box_copy(nd->ndim, sizeof(int64_t), dst, shape, zero, nd->idx, nd->shape,
                start, NULL, shape);
    return CK_OK;
}
