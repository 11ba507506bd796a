/*
 * pipelines/plan.c - pipeline JSON to a validated plan.
 * Every check that needs no data happens here, so a run never fails
 * half-way for a reason the file already showed.
 */
#include "pipelines/plan.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "ops/ew.h"
#include "ops/hist.h"
#include "ops/kernel.h"
#include "ops/reduce.h"
#include "pipelines/gen.h"
#include "pipelines/exec.h"
#include "pipelines/optab.h"
#include "pipelines/rowtasks.h"
#include "pipelines/stream.h"
#include "pipelines/cf.h"
#include "pipelines/plan_impl.h"
#include "io/store.h"
#include "base/ck_comm.h"
#include "base/ck_json.h"
#include "base/ck_tree.h"

/* A pipeline file larger than this is refused before it is read (see
 * LIMITS in chunkctl(1)); CK_MAX_NODES bounds the steps. */
#define CK_PLAN_FILE_MAX (16 << 20)
#define CK_PLAN_VALUES_MAX 1000000 /* JSON values in one pipeline */

ck_code ck_plan_bad(ck_err *err, const char *path, const char *where,
                    const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!where[0]) /* a one-step command's own step or operand */
        return ck_err_set(err, CK_EUSAGE, "%s: %s", path, msg);
    return ck_err_set(err, CK_EUSAGE, "%s: %s: %s", path, where, msg);
}

static int find(const ck_plan *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->node[i].name, name) == 0)
            return i;
    return -1;
}

static ck_code add_node(ck_plan *p, const char *path, const char *where,
                        const char *name, ck_node **out, ck_err *err)
{
    ck_node *n;

    if (p->n == CK_MAX_NODES)
        return ck_plan_bad(err, path, where, "more than %d inputs and steps",
                           CK_MAX_NODES);
    if (!name[0] || strlen(name) >= CK_NAME_MAX)
        return ck_plan_bad(err, path, where,
                           "a name must have 1 to %d characters",
                           CK_NAME_MAX - 1);
    if (find(p, name) >= 0)
        return ck_plan_bad(err, path, where, "name '%s' is used twice", name);
    n = &p->node[p->n++];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    /* a one-step command's node is spoken of as the command */
    snprintf(n->where, sizeof n->where, "%.47s", where[0] ? where : path);
    for (int k = 0; k < CK_MAX_ARGS; k++)
        n->arg[k] = -1;
    n->weights = -1;
    n->range_of[0] = n->range_of[1] = -1;
    *out = n;
    return CK_OK;
}

static ck_code parse_input(ck_plan *p, const char *path, const cJSON *item,
                           ck_err *err)
{
    char where[48], spath[PATH_MAX], sname[512];
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_node *n;
    ck_code rc;

    snprintf(where, sizeof where, "%s%.30s", p->onestep ? "" : "inputs.",
             p->onestep ? "" : item->string);
    if (!cJSON_IsString(item))
        return ck_plan_bad(err, path, where, "expected \"PATH[:DATASET]\"");
    if (strlen(item->valuestring) >= sizeof n->source)
        return ck_plan_bad(err, path, where,
                           "a path of %zu bytes (at most %zu)",
                           strlen(item->valuestring), sizeof n->source - 1);
    CK_TRY(add_node(p, path, where, item->string, &n, err));
    n->kind = CK_NODE_INPUT;
    snprintf(n->source, sizeof n->source, "%s", item->valuestring);
    if ((rc = ck_target_split(n->source, spath, sizeof spath, sname,
                              sizeof sname, err)) == CK_OK &&
        (rc = ck_store_open(spath, &s, err)) == CK_OK &&
        (rc = ck_array_open(s, sname, &a, err)) == CK_OK) {
        const ck_array_info *ai = ck_array_info_of(a);
        n->dtype = ai->dtype;
        n->ndim = ai->ndim;
        memcpy(n->shape, ai->shape, sizeof n->shape);
        memcpy(n->chunks, ai->chunks, sizeof n->chunks);
        rc = ck_cf_plan_input(p, path, where, (int)(n - p->node), s, ai->name,
                              ai, err);
    }
    ck_array_close(a);
    ck_store_close(s);
    if (rc != CK_OK && where[0])
        ck_err_prefix(err, "%s: %s", path, where);
    else if (rc != CK_OK)
        ck_err_prefix(err, "%s", path);
    return rc;
}

/* NumPy broadcasting of a and b into out; 0 if they do not broadcast. */
int ck_plan_broadcast(const ck_node *a, const ck_node *b, int *nd,
                      int64_t *shape)
{
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;

    for (int i = 0; i < n; i++) {
        int da = a->ndim - n + i, db = b->ndim - n + i;
        int64_t x = da >= 0 ? a->shape[da] : 1;
        int64_t y = db >= 0 ? b->shape[db] : 1;
        if (x != y && x != 1 && y != 1)
            return 0;
        shape[i] = x == 1 ? y : x;
    }
    *nd = n;
    return 1;
}

/* "(3, 4)", and "(3,)" for one dimension, as NumPy prints shapes. */
const char *ck_plan_shape_str(int nd, const int64_t *s, char *buf, size_t n)
{
    if (nd == 1 && s[0] < 0) { /* a mask: known after the run */
        snprintf(buf, n, "(?,)");
        return buf;
    }
    ck_coords_str(nd, s, buf, n);
    if (nd == 1 && strlen(buf) + 2 <= n) {
        buf[strlen(buf) - 1] = '\0';
        strcat(buf, ",)");
    }
    return buf;
}

/* A step's "args": lo to hi arrays (names) or numbers, hi -1 for up to
 * CK_MAX_ARGS; the op table says how many each op takes. */
static ck_code parse_args(ck_plan *p, const char *path, const char *where,
                          ck_node *n, const cJSON *args, int lo, int hi,
                          ck_err *err)
{
    int k = 0, got = cJSON_GetArraySize(args);
    const cJSON *a;

    if (!cJSON_IsArray(args))
        return ck_plan_bad(err, path, where, "\"args\" must be a list");
    if (hi < 0 && (got < lo || got > CK_MAX_ARGS))
        return ck_plan_bad(err, path, where, "takes %d to %d arrays, got %d",
                           lo, CK_MAX_ARGS, got);
    if (hi >= 0 && lo == hi && got != lo)
        return ck_plan_bad(err, path, where, "takes %d argument%s, got %d", lo,
                           lo == 1 ? "" : "s", got);
    if (hi >= 0 && (got < lo || got > hi))
        return ck_plan_bad(err, path, where, "takes %d to %d arguments, got %d",
                           lo, hi, got);
    cJSON_ArrayForEach(a, args)
    {
        if (cJSON_IsNumber(a) || cJSON_IsBool(a)) {
            double v = cJSON_IsBool(a) ? cJSON_IsTrue(a) : a->valuedouble;
            n->arg[k] = -1;
            n->scalar[k] = v;
            /* a Python scalar: 1 is an int, 1.0 and 1e3 are floats (as
             * marked from the text, CK_PLAN_JSON_FLOAT); -0.0 is a float,
             * whose sign counts (x / -0.0 is -inf for x > 0) */
            n->scalar_t[k] = cJSON_IsBool(a) ? CK_BOOL
                             : !(a->type & CK_PLAN_JSON_FLOAT) &&
                                     v == floor(v) && !(v == 0 && signbit(v)) &&
                                     fabs(v) < 9007199254740992.0
                                 ? CK_I64
                                 : CK_F64;
        } else if (cJSON_IsString(a)) {
            int m = find(p, a->valuestring);
            if (m < 0)
                return ck_plan_bad(err, path, where,
                                   "args[%d]: no input or step named '%s'", k,
                                   a->valuestring);
            const ck_op_def *def = ck_optab_kind(p->node[m].kind);
            if (def && !def->eval) { /* svd, glm_fit: their results only */
                char parts[256] = "";
                size_t at = 0;
                for (int j = m + 1; j < p->n && at < sizeof parts; j++)
                    if (p->node[j].kind == CK_NODE_PART &&
                        p->node[j].arg[0] == m)
                        at += (size_t)snprintf(parts + at, sizeof parts - at,
                                               "%s'%s'", at ? ", " : "",
                                               p->node[j].name);
                return ck_plan_bad(err, path, where,
                                   "args[%d]: '%s' is a %s step; name one of "
                                   "its results (%s)",
                                   k, a->valuestring, def->name, parts);
            }
            n->arg[k] = m;
        } else {
            return ck_plan_bad(err, path, where,
                               "args[%d]: expected a name or a number", k);
        }
        k++;
    }
    n->nargs = k;
    return CK_OK;
}

/* The first arg of a step, which must be an array: *m is that array. */
ck_code ck_plan_one_array(ck_plan *p, const char *path, const char *where,
                          ck_node *n, const ck_node **m, ck_err *err)
{
    *m = NULL;
    if (n->arg[0] < 0)
        return ck_plan_bad(err, path, where, "args[0]: expected an array");
    *m = &p->node[n->arg[0]];
    return CK_OK;
}

/* Axis list of "axis" (int, list, or absent/null: all) into a bit mask. */
ck_code ck_plan_axes(const char *path, const char *where, const cJSON *ax,
                     int ndim, uint32_t *mask, ck_err *err)
{
    const cJSON *a;

    *mask = 0;
    if (!ax || cJSON_IsNull(ax)) {
        *mask = ndim ? (uint32_t)((1ULL << ndim) - 1) : 0;
        return CK_OK;
    }
    /* A number that is not whole (1.5) or not a number ([1], true) is not
     * an axis at all; "out of range" is for whole numbers only. */
    if (cJSON_IsNumber(ax) && ax->valuedouble == floor(ax->valuedouble)) {
        int v = ax->valueint;
        if (ax->valuedouble != v || v < -ndim || v >= ndim)
            return ck_plan_bad(err, path, where,
                               "axis %g out of range for a %d-D array",
                               ax->valuedouble, ndim);
        *mask = 1u << (v < 0 ? v + ndim : v);
        return CK_OK;
    }
    if (!cJSON_IsArray(ax))
        return ck_plan_bad(err, path, where,
                           "axis must be an integer or a list");
    int k = 0;
    cJSON_ArrayForEach(a, ax)
    {
        int v = a->valueint;
        if (!cJSON_IsNumber(a) || a->valuedouble != floor(a->valuedouble))
            return ck_plan_bad(err, path, where,
                               "axis[%d]: expected an integer", k);
        if (a->valuedouble != v || v < -ndim || v >= ndim)
            return ck_plan_bad(err, path, where,
                               "axis %g out of range for a %d-D array",
                               a->valuedouble, ndim);
        k++;
        v = v < 0 ? v + ndim : v;
        if (*mask & (1u << v))
            return ck_plan_bad(err, path, where, "axis %d repeated", v);
        *mask |= 1u << v;
    }
    return CK_OK;
}

void ck_plan_first_chunks(const ck_plan *p, ck_node *n)
{
    /* Stream in the chunks of the first operand that has the full shape;
     * otherwise about 8 MiB blocks. */
    for (int k = 0; k < n->nargs; k++) {
        const ck_node *m = n->arg[k] >= 0 ? &p->node[n->arg[k]] : NULL;
        if (m && m->ndim == n->ndim &&
            memcmp(m->shape, n->shape, sizeof(int64_t) * (size_t)n->ndim) ==
                0) {
            memcpy(n->chunks, m->chunks, sizeof n->chunks);
            return;
        }
    }
    ck_auto_chunks(n->ndim, n->shape, 8, 8 << 20, n->chunks);
}

ck_code ck_plan_parse_ew(ck_plan *p, const char *path, const char *where,
                         ck_node *n, int sub, const cJSON *step, ck_err *err)
{
    ck_ew_op op = (ck_ew_op)sub;
    ck_ew_operand in[3];
    ck_node shape_acc = {0};

    (void)step;

    n->ew = op;
    shape_acc.ndim = 0;
    for (int k = 0; k < n->nargs; k++) {
        if (n->arg[k] < 0) {
            in[k].dtype = n->scalar_t[k];
            in[k].is_scalar = 1;
            in[k].value = n->scalar[k];
            continue;
        }
        const ck_node *m = &p->node[n->arg[k]];
        in[k].dtype = m->dtype;
        in[k].is_scalar = 0;
        in[k].value = 0;
        int nd;
        int64_t sh[CK_MAX_DIMS];
        if (!ck_plan_broadcast(&shape_acc, m, &nd, sh)) {
            char a[128], b[128];
            return ck_plan_bad(
                err, path, where, "shapes %s and %s do not broadcast",
                ck_plan_shape_str(shape_acc.ndim, shape_acc.shape, a, sizeof a),
                ck_plan_shape_str(m->ndim, m->shape, b, sizeof b));
        }
        shape_acc.ndim = nd;
        memcpy(shape_acc.shape, sh, sizeof sh);
    }
    if (op == CK_EW_WHERE)
        in[0].dtype = CK_BOOL; /* cond: any dtype, tested for nonzero */
    CK_TRY(ck_ew_types(op, n->nargs, in, &n->compute, &n->dtype, err));
    n->ndim = shape_acc.ndim;
    memcpy(n->shape, shape_acc.shape, sizeof n->shape);
    ck_plan_first_chunks(p, n);
    return CK_OK;
}

ck_code ck_plan_parse_reduce(ck_plan *p, const char *path, const char *where,
                             ck_node *n, int sub, const cJSON *step,
                             ck_err *err)
{
    ck_red_op op = (ck_red_op)sub;
    const cJSON *kd = cJSON_GetObjectItem(step, "keepdims");
    const cJSON *dd = cJSON_GetObjectItem(step, "ddof");
    const ck_node *m;
    int nd = 0;

    n->red = op;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    CK_TRY(ck_plan_axes(path, where, cJSON_GetObjectItem(step, "axis"), m->ndim,
                        &n->axes, err));
    if ((op == CK_RED_ARGMIN || op == CK_RED_ARGMAX || op == CK_RED_NANARGMIN ||
         op == CK_RED_NANARGMAX) &&
        __builtin_popcount(n->axes) > 1 &&
        n->axes != (uint32_t)((1ULL << m->ndim) - 1))
        return ck_plan_bad(err, path, where,
                           "%s takes one axis, or none for the flat index",
                           ck_red_name(op));
    if (kd && !cJSON_IsBool(kd))
        return ck_plan_bad(err, path, where, "keepdims must be true or false");
    n->keepdims = cJSON_IsTrue(kd);
    if (dd && (!cJSON_IsNumber(dd) || dd->valuedouble < 0))
        return ck_plan_bad(err, path, where, "ddof must be a number >= 0");
    n->ddof = dd ? dd->valuedouble : 0;
    n->dtype = ck_red_result_dtype(op, m->dtype);
    for (int d = 0; d < m->ndim; d++) {
        if (!(n->axes & (1u << d)))
            n->shape[nd++] = m->shape[d];
        else if (n->keepdims)
            n->shape[nd++] = 1;
    }
    n->ndim = nd;
    memcpy(n->chunks, n->shape, sizeof n->chunks);
    for (int d = 0; d < nd; d++)
        if (n->chunks[d] < 1)
            n->chunks[d] = 1;
    return CK_OK;
}

/* Adds step "<h>.min" (k = 0) or "<h>.max": the nanmin or nanmax of hist
 * step h's operand over all axes, whose result makes h's edges. */
static ck_code add_range_step(ck_plan *p, const char *path, const char *where,
                              int h, int k, ck_err *err)
{
    char name[CK_NAME_MAX + 16];
    ck_node *n;
    const ck_node *m = &p->node[p->node[h].arg[0]];

    snprintf(name, sizeof name, "%s.%s", p->node[h].name, k ? "max" : "min");
    if (strlen(name) >= CK_NAME_MAX)
        return ck_plan_bad(err, path, where, "name '%s' is too long", name);
    CK_TRY(add_node(p, path, where, name, &n, err));
    n->kind = CK_NODE_REDUCE;
    n->red = k ? CK_RED_NANMAX : CK_RED_NANMIN;
    n->nargs = 1;
    n->arg[0] = p->node[h].arg[0];
    n->axes = m->ndim ? (uint32_t)((1ULL << m->ndim) - 1) : 0;
    n->dtype = ck_red_result_dtype(n->red, m->dtype);
    n->ndim = 0;
    p->node[h].range_of[k] = (int)(n - p->node);
    return CK_OK;
}

/* NumPy's bin estimators that chunkctl computes (numpy.histogram_bin_
 * edges): each needs the count, minimum and maximum, and some the
 * standard deviation (scott) or the interquartile range (fd, auto). */
static const char *const bin_rules[] = {"auto", "fd",      "scott",
                                        "rice", "sturges", "sqrt"};

/* A hidden reduction of p's node m into a plan copy q (statistics for
 * bins by name); its index. */
static int stat_node(ck_plan *q, int m, ck_red_op red)
{
    ck_node *s = &q->node[q->n];
    const ck_node *x = &q->node[m];

    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "(bins %s)", ck_red_name(red));
    s->kind = CK_NODE_REDUCE;
    s->red = red;
    s->nargs = 1;
    s->arg[0] = m;
    s->weights = s->range_of[0] = s->range_of[1] = -1;
    s->axes = x->ndim ? (uint32_t)((1ULL << x->ndim) - 1) : 0;
    s->dtype = ck_red_result_dtype(red, x->dtype);
    return q->n++;
}

int ck_plan_hidden_ew(ck_plan *q, ck_ew_op op, int a, int b, double bv, int c,
                      double cv)
{
    ck_node *e = &q->node[q->n];
    const ck_node *x = &q->node[a];
    int args[3] = {a, b, c}, n = ck_ew_arity(op);
    double vals[3] = {0, bv, cv};
    ck_ew_operand in[3];
    ck_dtype res;

    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "(bins %s)", ck_ew_name(op));
    for (int k = 0; k < n; k++) {
        e->arg[k] = args[k];
        e->scalar[k] = vals[k];
        e->scalar_t[k] = CK_F64;
        in[k] = args[k] >= 0 ? (ck_ew_operand){q->node[args[k]].dtype, 0, 0}
                             : (ck_ew_operand){CK_F64, 1, vals[k]};
    }
    if (ck_ew_types(op, n, in, &e->compute, &res, NULL) != CK_OK)
        return -1;
    e->kind = CK_NODE_EW;
    e->ew = op;
    e->nargs = n;
    e->weights = e->range_of[0] = e->range_of[1] = -1;
    e->dtype = res;
    e->ndim = x->ndim;
    memcpy(e->shape, x->shape, sizeof e->shape);
    memcpy(e->chunks, x->chunks, sizeof e->chunks);
    return q->n++;
}

/* The number of bins NumPy's rule 'rule' gives x (node m, NaN ignored;
 * with a range, the values in it), and without a range the data's range
 * in lo, hi (widened by 0.5 each way when equal): one pass for count,
 * minimum, maximum and standard deviation, and one for the quartiles. */
static ck_code named_bins(ck_plan *p, const char *path, const char *where,
                          int m, const char *rule, int ranged, int *nbins,
                          double *lo, double *hi, ck_err *err)
{
    ck_plan *q = ck_plan_dup(p);
    const ck_node *x = &p->node[m];
    int want[5], k = 0, fd = !strcmp(rule, "fd") || !strcmp(rule, "auto");
    int y = m;
    void *v[5] = {0};
    double st[5] = {0}, width = 0, ptp, cnt;
    ck_code rc;

    if (!q)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    q->n = m + 1;
    if (ranged) {
        /* NumPy estimates from the values inside the range: the others
         * become NaN, which every statistic below ignores */
        int ge = ck_plan_hidden_ew(q, CK_EW_GREATER_EQUAL, m, -1, *lo, -1, 0);
        int le = ck_plan_hidden_ew(q, CK_EW_LESS_EQUAL, m, -1, *hi, -1, 0);
        int in = ge < 0 || le < 0 ? -1
                                  : ck_plan_hidden_ew(q, CK_EW_LOGICAL_AND, ge,
                                                      le, 0, -1, 0);
        y = in < 0 ? -1 : ck_plan_hidden_ew(q, CK_EW_WHERE, in, m, 0, -1, NAN);
        if (y < 0) {
            free(q);
            return ck_plan_bad(err, path, where,
                               "bins '%s': cannot select the values in the "
                               "range of %s data",
                               rule, ck_dtype_name(x->dtype));
        }
    }
    if (y >= 0 && q->node[y].dtype == CK_BOOL) {
        /* NumPy's histogram converts bool to uint8 before it estimates
         * (numpy/lib/histograms.py, _ravel_and_check_weights): the
         * quartiles of 0s and 1s, which a bool array's nanquantile
         * refuses.  y + 0.0 holds the same values as float64. */
        y = ck_plan_hidden_ew(q, CK_EW_ADD, y, -1, 0.0, -1, 0);
        if (y < 0) {
            free(q);
            return ck_plan_bad(err, path, where,
                               "bins '%s': cannot take bool data as numbers",
                               rule);
        }
    }
    {
        /* the values that are not NaN: y == y, counted */
        int e = ck_plan_hidden_ew(q, CK_EW_EQUAL, y, y, 0, -1, 0);
        want[k++] = stat_node(q, e, CK_RED_COUNT_NONZERO);
    }
    want[k++] = stat_node(q, y, CK_RED_NANMIN);
    want[k++] = stat_node(q, y, CK_RED_NANMAX);
    want[k++] = stat_node(q, y, CK_RED_NANSTD);
    if (fd) {
        ck_node *s = &q->node[q->n];
        cJSON *step = cJSON_Parse("{\"q\": [0.75, 0.25]}");
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "(bins iqr)");
        s->kind = CK_NODE_QUANTILE;
        s->sub = CK_Q_QUANTILE | CK_Q_NAN;
        snprintf(s->op, sizeof s->op, "nanquantile");
        s->nargs = 1;
        s->arg[0] = y;
        s->weights = s->range_of[0] = s->range_of[1] = -1;
        rc = step ? ck_plan_parse_quantile(q, path, where, s,
                                           CK_Q_QUANTILE | CK_Q_NAN, step, err)
                  : ck_err_set(err, CK_ENOMEM, "out of memory");
        cJSON_Delete(step);
        if (rc != CK_OK) {
            free(s->vals);
            free(q);
            return rc;
        }
        want[k++] = q->n++;
    }
    rc = ck_exec_values(q, k, want, v, err);
    for (int j = 0; rc == CK_OK && j < k; j++) {
        const ck_node *s = &q->node[want[j]];
        double two[2];
        ck_dtype_convert(CK_F64, j < 4 ? &st[j] : two, s->dtype, v[j],
                         j < 4 ? 1 : 2);
        if (j == 4)
            st[4] = two[0] - two[1];
    }
    if (fd)
        free(q->node[want[4]].vals);
    for (int j = 0; j < k; j++)
        free(v[j]);
    free(q);
    CK_TRY(rc);
    cnt = st[0];
    if (ranged && cnt == 0) { /* nothing in the range: one bin, as NumPy */
        *nbins = 1;
        return CK_OK;
    }
    double rlo = *lo, rhi = *hi; /* the range, when given */
    *lo = st[1];
    *hi = st[2];
    if (cnt == 0 || isnan(*lo))
        return ck_plan_bad(err, path, where,
                           "bins '%s': '%s' has no values (or only NaN), so "
                           "there is nothing to take the bins from",
                           rule, ck_node_label(x));
    if (!isfinite(*lo) || !isfinite(*hi))
        return ck_plan_bad(err, path, where,
                           "bins '%s': the data's range [%g, %g] is not "
                           "finite",
                           rule, *lo, *hi);
    ptp = *hi - *lo;
    if (x->dtype == CK_F32)
        ptp = (float)ptp;
    if (ranged) {
        *lo = rlo;
        *hi = rhi;
    }
    {
        double sturges = ptp / (log2(cnt) + 1.0);
        double fdw = 2.0 * st[4] * pow(cnt, -1.0 / 3.0);
        if (!strcmp(rule, "sqrt"))
            width = ptp / sqrt(cnt);
        else if (!strcmp(rule, "sturges"))
            width = sturges;
        else if (!strcmp(rule, "rice"))
            width = ptp / (2.0 * pow(cnt, 1.0 / 3.0));
        else if (!strcmp(rule, "scott"))
            width = pow(24.0 * sqrt(M_PI) / cnt, 1.0 / 3.0) * st[3];
        else if (!strcmp(rule, "fd"))
            width = fdw;
        else /* auto */
            width = fdw != 0 ? (fdw < sturges ? fdw : sturges) : sturges;
    }
    if (*lo == *hi && !ranged) {
        *lo -= 0.5;
        *hi += 0.5;
    }
    *nbins = 1;
    if (width > 0) {
        double b = ceil((*hi - *lo) / width);
        if (!(b <= 100000000))
            return ck_plan_bad(err, path, where,
                               "bins '%s' asks for %g bins, more than "
                               "100000000",
                               rule, b);
        *nbins = b < 1 ? 1 : (int)b;
    }
    return CK_OK;
}

/* A histogram's nbins + 1 edges, allocated once --memory is seen to hold
 * them with its counts (a float64 or int64 each): 1e8 bins took 800 MB
 * before the run refused them. */
static ck_code alloc_edges(const ck_plan *p, ck_node *n, ck_err *err)
{
    ck_budget bud = CK_BUDGET_INIT(ck_plan_memory(p));
    char what[CK_NAME_MAX + 48];

    snprintf(what, sizeof what, "histogram '%s' (%lld bins)", n->name,
             (long long)n->nbins);
    CK_TRY(ck_budget_charge(&bud, ck_base_overhead(), "chunkctl itself", err));
    CK_TRY(ck_budget_charge(&bud, ((int64_t)n->nbins * 2 + 1) * 8, what, err));
    if (!(n->edges = calloc((size_t)n->nbins + 1, sizeof(double))))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    return CK_OK;
}

ck_code ck_plan_parse_hist(ck_plan *p, const char *path, const char *where,
                           ck_node *n, int sub, const cJSON *step, ck_err *err)
{
    const cJSON *bins = cJSON_GetObjectItem(step, "bins");
    const cJSON *range = cJSON_GetObjectItem(step, "range");
    const cJSON *edges = cJSON_GetObjectItem(step, "edges");
    const cJSON *dens = cJSON_GetObjectItem(step, "density");
    const cJSON *w = cJSON_GetObjectItem(step, "weights");
    const ck_node *m;

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    if (edges && (bins || range))
        return ck_plan_bad(
            err, path, where,
            "give \"edges\", or \"bins\" and \"range\", not both");
    if (edges) {
        int k = 0;
        const cJSON *e;
        if (!cJSON_IsArray(edges) || cJSON_GetArraySize(edges) < 2)
            return ck_plan_bad(err, path, where, "edges: at least two numbers");
        n->nbins = cJSON_GetArraySize(edges) - 1;
        CK_TRY(alloc_edges(p, n, err));
        cJSON_ArrayForEach(e, edges)
        {
            if (!cJSON_IsNumber(e))
                return ck_plan_bad(err, path, where, "edges[%d]: not a number",
                                   k);
            n->edges[k++] = e->valuedouble;
        }
        ck_err local = {0};
        if (ck_hist_check_edges(n->edges, n->nbins + 1, &local) != CK_OK)
            return ck_plan_bad(err, path, where, "%s", local.msg);
    } else {
        ck_err local = {0};
        double lo = 0, hi = 0;
        n->nbins = 10;
        if (cJSON_IsString(bins)) {
            size_t r = 0;
            while (r < sizeof bin_rules / sizeof *bin_rules &&
                   strcmp(bins->valuestring, bin_rules[r]))
                r++;
            if (r == sizeof bin_rules / sizeof *bin_rules)
                return ck_plan_bad(err, path, where,
                                   "bins '%s': expected a number or one of "
                                   "auto, fd, scott, rice, sturges, sqrt",
                                   bins->valuestring);
            if (w)
                return ck_plan_bad(err, path, where,
                                   "bins '%s': bins by name are not "
                                   "estimated for weighted data (as NumPy)",
                                   bins->valuestring);
            int ranged = range && !cJSON_IsNull(range);
            if (ranged) {
                if (!cJSON_IsArray(range) || cJSON_GetArraySize(range) != 2 ||
                    !cJSON_IsNumber(cJSON_GetArrayItem(range, 0)) ||
                    !cJSON_IsNumber(cJSON_GetArrayItem(range, 1)))
                    return ck_plan_bad(err, path, where,
                                       "range: expected [low, high]");
                lo = cJSON_GetArrayItem(range, 0)->valuedouble;
                hi = cJSON_GetArrayItem(range, 1)->valuedouble;
                if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi))
                    return ck_plan_bad(err, path, where,
                                       "range: [%g, %g] must be finite, "
                                       "low <= high",
                                       lo, hi);
                if (lo == hi) { /* as NumPy, before it selects */
                    lo -= 0.5;
                    hi += 0.5;
                }
            }
            CK_TRY(named_bins(p, path, where, n->arg[0], bins->valuestring,
                              ranged, &n->nbins, &lo, &hi, err));
            CK_TRY(alloc_edges(p, n, err));
            n->uniform = 1;
            if (ck_hist_uniform_edges(n->nbins, lo, hi, m->dtype, n->edges,
                                      &local) != CK_OK)
                return ck_plan_bad(err, path, where, "%s", local.msg);
            goto edges_done;
        }
        if (bins &&
            (!cJSON_IsNumber(bins) || bins->valueint < 1 ||
             bins->valuedouble != bins->valueint || bins->valueint > 100000000))
            return ck_plan_bad(err, path, where,
                               "bins must be a positive integer");
        if (bins)
            n->nbins = bins->valueint;
        if (range && !cJSON_IsNull(range) &&
            (!cJSON_IsArray(range) || cJSON_GetArraySize(range) != 2 ||
             !cJSON_IsNumber(cJSON_GetArrayItem(range, 0)) ||
             !cJSON_IsNumber(cJSON_GetArrayItem(range, 1))))
            return ck_plan_bad(
                err, path, where,
                "range: expected [low, high] (or none: the data's "
                "minimum and maximum)");
        CK_TRY(alloc_edges(p, n, err));
        n->uniform = 1;
        if (!range || cJSON_IsNull(range)) {
            /* edges from the data's range, found by a pass before */
            int self = (int)(n - p->node);
            int64_t nel = 1;
            for (int d = 0; d < m->ndim; d++)
                nel *= m->shape[d];
            if (nel == 0)
                return ck_plan_bad(
                    err, path, where,
                    "range: '%s' is empty, so there is no range to "
                    "take the bins from; give one",
                    ck_node_label(m));
            for (int k = 0; k < 2; k++)
                CK_TRY(add_range_step(p, path, where, self, k, err));
        } else {
            lo = cJSON_GetArrayItem(range, 0)->valuedouble;
            hi = cJSON_GetArrayItem(range, 1)->valuedouble;
            if (ck_hist_uniform_edges(n->nbins, lo, hi, m->dtype, n->edges,
                                      &local) != CK_OK)
                return ck_plan_bad(err, path, where, "%s", local.msg);
        }
    }
edges_done:
    if (dens && !cJSON_IsBool(dens))
        return ck_plan_bad(err, path, where, "density must be true or false");
    n->density = cJSON_IsTrue(dens);
    if (w) {
        if (!cJSON_IsString(w) || (n->weights = find(p, w->valuestring)) < 0)
            return ck_plan_bad(err, path, where,
                               "weights: no input or step named "
                               "'%s'",
                               cJSON_IsString(w) ? w->valuestring : "?");
        const ck_node *wn = &p->node[n->weights];
        if (wn->ndim != m->ndim ||
            memcmp(wn->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim))
            return ck_plan_bad(err, path, where,
                               "weights must have the shape of args[0]");
    }
    n->dtype = n->weights >= 0 || n->density ? CK_F64 : CK_I64;
    n->ndim = 1;
    n->shape[0] = n->nbins;
    n->chunks[0] = n->nbins;
    return CK_OK;
}

/* A slice bound as NumPy reads it: null is dflt; a negative index counts
 * from the end (len = hi for a positive step, hi + 1 for a negative one);
 * then clamped to [lo, hi]. */
static int64_t clamp_index(const cJSON *v, int64_t dflt, int64_t lo, int64_t hi)
{
    int64_t x, len = lo < 0 ? hi + 1 : hi;

    if (!v || cJSON_IsNull(v))
        return dflt;
    x = (int64_t)v->valuedouble;
    if (x < 0)
        x += len;
    return x < lo ? lo : x > hi ? hi : x;
}

int ck_plan_is_int(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < 9e18;
}

ck_code ck_plan_parse_slice(ck_plan *p, const char *path, const char *where,
                            ck_node *n, int sub, const cJSON *step, ck_err *err)
{
    const cJSON *idx = cJSON_GetObjectItem(step, "index"), *e;
    const ck_node *m;
    int d = 0, k = 0;

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    if (!cJSON_IsArray(idx))
        return ck_plan_bad(
            err, path, where,
            "index: expected a list with, per axis, [start, stop, "
            "step], an integer, or null");
    if (cJSON_GetArraySize(idx) > m->ndim)
        return ck_plan_bad(err, path, where,
                           "index has %d entries for a %d-D array",
                           cJSON_GetArraySize(idx), m->ndim);
    for (int a = 0; a < m->ndim; a++) {
        n->sl_start[a] = 0;
        n->sl_step[a] = 1;
        n->sl_keep[a] = 1;
    }
    cJSON_ArrayForEach(e, idx)
    {
        int64_t len = m->shape[d];
        if (ck_plan_is_int(e)) {
            int64_t x = (int64_t)e->valuedouble;
            if (x < -len || x >= len)
                return ck_plan_bad(
                    err, path, where,
                    "index[%d]: %lld is out of range for length %lld", d,
                    (long long)x, (long long)len);
            n->sl_start[d] = x < 0 ? x + len : x;
            n->sl_keep[d] = 0;
        } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) >= 1 &&
                   cJSON_GetArraySize(e) <= 3) {
            const cJSON *a0 = cJSON_GetArrayItem(e, 0);
            const cJSON *a1 = cJSON_GetArrayItem(e, 1);
            const cJSON *a2 = cJSON_GetArrayItem(e, 2);
            for (const cJSON *v = e->child; v; v = v->next)
                if (!cJSON_IsNull(v) && !ck_plan_is_int(v))
                    return ck_plan_bad(
                        err, path, where,
                        "index[%d]: start, stop and step must be "
                        "integers or null",
                        d);
            int64_t st = a2 && !cJSON_IsNull(a2) ? (int64_t)a2->valuedouble : 1;
            if (st == 0)
                return ck_plan_bad(err, path, where,
                                   "index[%d]: the step cannot be zero", d);
            if (st < -len || st > len)
                st = st < 0 ? -(len > 0 ? len : 1) : (len > 0 ? len : 1);
            if (st > 0) {
                int64_t b0 = clamp_index(a0, 0, 0, len);
                int64_t b1 = clamp_index(a1, len, 0, len);
                n->shape[k] = b1 > b0 ? (b1 - b0 - 1) / st + 1 : 0;
                n->sl_start[d] = b0;
            } else { /* NumPy: from the end down to before the start */
                int64_t b0 = clamp_index(a0, len - 1, -1, len - 1);
                int64_t b1 = clamp_index(a1, -1, -1, len - 1);
                n->shape[k] = b0 > b1 ? (b0 - b1 - 1) / -st + 1 : 0;
                n->sl_start[d] = b0;
            }
            n->sl_step[d] = st;
            st = st < 0 ? -st : st;
            n->chunks[k] = m->chunks[d] / st > 0 ? m->chunks[d] / st : 1;
            k++;
        } else if (cJSON_IsNull(e)) {
            n->shape[k] = len;
            n->chunks[k++] = m->chunks[d];
        } else {
            return ck_plan_bad(err, path, where,
                               "index[%d]: expected [start, stop, step], an "
                               "integer, or null",
                               d);
        }
        d++;
    }
    for (; d < m->ndim; d++) {
        n->shape[k] = m->shape[d];
        n->chunks[k++] = m->chunks[d];
    }
    n->ndim = k;
    n->dtype = m->dtype;
    return CK_OK;
}

ck_code ck_plan_parse_transpose(ck_plan *p, const char *path, const char *where,
                                ck_node *n, int sub, const cJSON *step,
                                ck_err *err)
{
    const cJSON *axes = cJSON_GetObjectItem(step, "axes"), *e;
    const ck_node *m;
    int seen[CK_MAX_DIMS] = {0}, k = 0;

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    if (axes && !cJSON_IsNull(axes)) {
        if (!cJSON_IsArray(axes) || cJSON_GetArraySize(axes) != m->ndim)
            return ck_plan_bad(err, path, where,
                               "axes must list each of the %d axes once",
                               m->ndim);
        cJSON_ArrayForEach(e, axes)
        {
            int a = ck_plan_is_int(e) ? (int)e->valuedouble : -99;
            if (a < 0 && a >= -m->ndim)
                a += m->ndim;
            if (a < 0 || a >= m->ndim || seen[a]++)
                return ck_plan_bad(err, path, where,
                                   "axes must list each of the %d axes once",
                                   m->ndim);
            n->perm[k++] = a;
        }
    } else {
        for (k = 0; k < m->ndim; k++)
            n->perm[k] = m->ndim - 1 - k;
    }
    n->ndim = m->ndim;
    for (k = 0; k < m->ndim; k++) {
        n->shape[k] = m->shape[n->perm[k]];
        n->chunks[k] = m->chunks[n->perm[k]];
    }
    n->dtype = m->dtype;
    return CK_OK;
}

/* Step key 'key': an axis or a list of distinct axes of an ndim-D array
 * (negative ones count from the end) into ax[*na]; absent or null gives
 * *na = -1. */
static ck_code axis_list(const char *path, const char *where, const char *key,
                         const cJSON *step, int ndim, int *ax, int *na,
                         ck_err *err)
{
    const cJSON *v = cJSON_GetObjectItem(step, key), *e;
    int k = 0;

    *na = -1;
    if (!v || cJSON_IsNull(v))
        return CK_OK;
    if (!cJSON_IsArray(v) && !cJSON_IsNumber(v))
        return ck_plan_bad(err, path, where,
                           "%s: expected an axis or a list of axes", key);
    for (e = cJSON_IsArray(v) ? v->child : v; e;
         e = cJSON_IsArray(v) ? e->next : NULL) {
        int a = ck_plan_is_int(e) ? (int)e->valuedouble : INT_MIN;
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble)) {
            if (cJSON_IsArray(v))
                return ck_plan_bad(err, path, where,
                                   "%s[%d]: expected an integer", key, k);
            return ck_plan_bad(err, path, where,
                               "%s: expected an axis or a list of axes", key);
        }
        if (k == CK_MAX_DIMS || a < -ndim || a >= ndim)
            return ck_plan_bad(err, path, where,
                               "%s: axis %g out of range for a %d-D array", key,
                               e->valuedouble, ndim);
        a = a < 0 ? a + ndim : a;
        for (int j = 0; j < k; j++)
            if (ax[j] == a)
                return ck_plan_bad(err, path, where, "%s: axis %d repeated",
                                   key, a);
        ax[k++] = a;
    }
    *na = k;
    return CK_OK;
}

/* Sets n's shape and chunks from operand m through the permutation
 * n->perm (output axis k is m's axis perm[k]). */
static void permuted(ck_node *n, const ck_node *m)
{
    n->ndim = m->ndim;
    for (int k = 0; k < m->ndim; k++) {
        n->shape[k] = m->shape[n->perm[k]];
        n->chunks[k] = m->chunks[n->perm[k]];
    }
    n->dtype = m->dtype;
}

/* numpy.moveaxis: the axes in "source" go to the places in
 * "destination", the others keep their order. */
ck_code ck_plan_parse_moveaxis(ck_plan *p, const char *path, const char *where,
                               ck_node *n, int sub, const cJSON *step,
                               ck_err *err)
{
    const ck_node *m;
    int src[CK_MAX_DIMS], dst[CK_MAX_DIMS], ns, nd, k = 0;
    int placed[CK_MAX_DIMS] = {0}, moved[CK_MAX_DIMS] = {0};

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    CK_TRY(axis_list(path, where, "source", step, m->ndim, src, &ns, err));
    CK_TRY(axis_list(path, where, "destination", step, m->ndim, dst, &nd, err));
    if (ns < 0 || nd < 0)
        return ck_plan_bad(err, path, where,
                           "needs \"source\" and \"destination\"");
    if (ns != nd)
        return ck_plan_bad(err, path, where,
                           "source and destination must have the same "
                           "number of axes (%d and %d)",
                           ns, nd);
    for (int j = 0; j < ns; j++) {
        n->perm[dst[j]] = src[j];
        placed[dst[j]] = moved[src[j]] = 1;
    }
    for (int d = 0; d < m->ndim; d++) {
        if (moved[d])
            continue;
        while (placed[k])
            k++;
        n->perm[k++] = d;
    }
    permuted(n, m);
    return CK_OK;
}

ck_code ck_plan_parse_swapaxes(ck_plan *p, const char *path, const char *where,
                               ck_node *n, int sub, const cJSON *step,
                               ck_err *err)
{
    const ck_node *m;
    int a[CK_MAX_DIMS], b[CK_MAX_DIMS], na, nb;

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    CK_TRY(axis_list(path, where, "axis1", step, m->ndim, a, &na, err));
    CK_TRY(axis_list(path, where, "axis2", step, m->ndim, b, &nb, err));
    if (na != 1 || nb != 1)
        return ck_plan_bad(err, path, where,
                           "needs \"axis1\" and \"axis2\", one axis each");
    for (int d = 0; d < m->ndim; d++)
        n->perm[d] = d;
    n->perm[a[0]] = b[0];
    n->perm[b[0]] = a[0];
    permuted(n, m);
    return CK_OK;
}

/* numpy.squeeze: drops the axes of length 1 in "axis" (default: all). */
ck_code ck_plan_parse_squeeze(ck_plan *p, const char *path, const char *where,
                              ck_node *n, int sub, const cJSON *step,
                              ck_err *err)
{
    const ck_node *m;
    int ax[CK_MAX_DIMS], na, drop[CK_MAX_DIMS] = {0};

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    CK_TRY(axis_list(path, where, "axis", step, m->ndim, ax, &na, err));
    for (int d = 0; d < m->ndim; d++)
        drop[d] = na < 0 && m->shape[d] == 1;
    for (int j = 0; j < na; j++) {
        if (m->shape[ax[j]] != 1)
            return ck_plan_bad(err, path, where,
                               "axis %d has length %lld: only axes of "
                               "length 1 can be squeezed out",
                               ax[j], (long long)m->shape[ax[j]]);
        drop[ax[j]] = 1;
    }
    n->ndim = 0;
    for (int d = 0; d < m->ndim; d++)
        if (!drop[d]) {
            n->shape[n->ndim] = m->shape[d];
            n->chunks[n->ndim++] = m->chunks[d];
        }
    n->dtype = m->dtype;
    return CK_OK;
}

/* numpy.expand_dims: new axes of length 1 at the places in "axis" (of the
 * result). */
ck_code ck_plan_parse_expand_dims(ck_plan *p, const char *path,
                                  const char *where, ck_node *n, int sub,
                                  const cJSON *step, ck_err *err)
{
    const ck_node *m;
    int ax[CK_MAX_DIMS], na, isnew[CK_MAX_DIMS] = {0}, k = 0;
    const cJSON *v = cJSON_GetObjectItem(step, "axis");
    int nout = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    nout += m->ndim;
    if (nout > CK_MAX_DIMS)
        return ck_plan_bad(err, path, where, "more than %d axes", CK_MAX_DIMS);
    CK_TRY(axis_list(path, where, "axis", step, nout, ax, &na, err));
    if (na < 0)
        return ck_plan_bad(err, path, where, "needs \"axis\"");
    for (int j = 0; j < na; j++)
        isnew[ax[j]] = 1;
    for (int d = 0; d < nout; d++) {
        n->shape[d] = isnew[d] ? 1 : m->shape[k];
        n->chunks[d] = isnew[d] ? 1 : m->chunks[k++];
    }
    n->ndim = nout;
    n->dtype = m->dtype;
    return CK_OK;
}

/* A list of positive integers (a shape or chunks) of at most CK_MAX_DIMS. */
ck_code ck_plan_int_list(const char *path, const char *where, const char *key,
                         const cJSON *v, int64_t *out, int *nd, int allow_neg1,
                         ck_err *err)
{
    const cJSON *e;
    int k = 0;

    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > CK_MAX_DIMS)
        return ck_plan_bad(err, path, where, "%s: expected a list of integers",
                           key);
    cJSON_ArrayForEach(e, v)
    {
        if (!ck_plan_is_int(e) ||
            !(e->valuedouble >= 0 || (allow_neg1 && e->valuedouble == -1)))
            return ck_plan_bad(err, path, where,
                               "%s[%d]: expected an integer >= 0", key, k);
        out[k++] = (int64_t)e->valuedouble;
    }
    *nd = k;
    return CK_OK;
}

const ck_node *ck_plan_array_arg(const ck_plan *p, const ck_node *n, int k)
{
    return n->arg[k] >= 0 ? &p->node[n->arg[k]] : NULL;
}

ck_code ck_plan_parse_reshape(ck_plan *p, const char *path, const char *where,
                              ck_node *n, int sub, const cJSON *step,
                              ck_err *err)
{
    const ck_node *m;
    int64_t total = 1, known = 1;
    int free_axis = -1;

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    CK_TRY(ck_plan_int_list(path, where, "shape",
                            cJSON_GetObjectItem(step, "shape"), n->shape,
                            &n->ndim, 1, err));
    for (int d = 0; d < m->ndim; d++)
        total *= m->shape[d];
    for (int d = 0; d < n->ndim; d++) {
        if (n->shape[d] == -1) {
            if (free_axis >= 0)
                return ck_plan_bad(err, path, where, "shape: only one -1");
            free_axis = d;
        } else if (__builtin_mul_overflow(known, n->shape[d], &known)) {
            return ck_plan_bad(err, path, where, "shape: too many elements");
        }
    }
    if (free_axis >= 0) {
        if (known == 0 || total % known)
            return ck_plan_bad(
                err, path, where,
                "cannot reshape %lld elements with a -1 in shape",
                (long long)total);
        n->shape[free_axis] = total / known;
        known = total;
    }
    if (known != total) {
        char a[128], b[128];
        return ck_plan_bad(err, path, where,
                           "cannot reshape %s (%lld elements) into %s (%lld)",
                           ck_plan_shape_str(m->ndim, m->shape, a, sizeof a),
                           (long long)total,
                           ck_plan_shape_str(n->ndim, n->shape, b, sizeof b),
                           (long long)known);
    }
    n->dtype = m->dtype;
    /* Chunks that are runs of whole trailing rows keep each output chunk
     * one contiguous stretch of the operand: about its chunk size. */
    {
        int64_t cb = 1;
        for (int d = 0; d < m->ndim; d++)
            cb *= m->chunks[d] < m->shape[d] ? m->chunks[d] : m->shape[d];
        ck_auto_chunks(n->ndim, n->shape, 1, (size_t)(cb > 0 ? cb : 1),
                       n->chunks);
    }
    return CK_OK;
}

ck_code ck_plan_parse_rechunk(ck_plan *p, const char *path, const char *where,
                              ck_node *n, int sub, const cJSON *step,
                              ck_err *err)
{
    const ck_node *m;
    int nd;

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    CK_TRY(ck_plan_int_list(path, where, "chunks",
                            cJSON_GetObjectItem(step, "chunks"), n->chunks, &nd,
                            0, err));
    if (nd != m->ndim)
        return ck_plan_bad(err, path, where,
                           "chunks has %d values for a %d-D array", nd,
                           m->ndim);
    for (int d = 0; d < nd; d++)
        if (n->chunks[d] < 1)
            return ck_plan_bad(err, path, where, "chunks[%d]: must be >= 1", d);
    n->ndim = m->ndim;
    memcpy(n->shape, m->shape, sizeof n->shape);
    n->dtype = m->dtype;
    return CK_OK;
}

ck_code ck_plan_parse_concat(ck_plan *p, const char *path, const char *where,
                             ck_node *n, int sub, const cJSON *step,
                             ck_err *err)
{
    int stack = sub;
    const cJSON *ax = cJSON_GetObjectItem(step, "axis");
    const ck_node *m0;
    ck_ew_operand in[CK_MAX_ARGS];
    ck_dtype compute;
    int axis = ax ? (int)ax->valuedouble : 0, nd;

    n->stack = stack;
    for (int k = 0; k < n->nargs; k++)
        if (n->arg[k] < 0)
            return ck_plan_bad(err, path, where, "args[%d]: expected an array",
                               k);
    m0 = ck_plan_array_arg(p, n, 0);
    nd = m0->ndim + (stack ? 1 : 0);
    if (ax && !ck_plan_is_int(ax))
        return ck_plan_bad(err, path, where, "axis must be an integer");
    if (axis < 0)
        axis += nd;
    if (axis < 0 || axis >= nd || (!stack && m0->ndim == 0))
        return ck_plan_bad(err, path, where,
                           "axis %d out of range for a %d-D result",
                           ax ? (int)ax->valuedouble : 0, nd);
    n->axis = axis;
    n->ndim = nd;
    for (int k = 0; k < n->nargs; k++) {
        const ck_node *m = ck_plan_array_arg(p, n, k);
        in[k].dtype = m->dtype;
        in[k].is_scalar = 0;
        in[k].value = 0;
        if (m->ndim != m0->ndim)
            return ck_plan_bad(err, path, where,
                               "args[%d] has %d dimensions, args[0] has %d", k,
                               m->ndim, m0->ndim);
        for (int d = 0; d < m0->ndim; d++)
            if (m->shape[d] != m0->shape[d] && (stack || d != axis))
                return ck_plan_bad(
                    err, path, where,
                    "args[%d] has length %lld on axis %d, args[0] "
                    "%lld",
                    k, (long long)m->shape[d], d, (long long)m0->shape[d]);
    }
    /* numpy.concatenate's result dtype: the operands' promotion (one
     * operand: its own dtype). */
    n->dtype = m0->dtype;
    for (int k = 1; k < n->nargs; k++) {
        ck_ew_operand two[2] = {{n->dtype, 0, 0}, in[k]};
        CK_TRY(ck_ew_types(CK_EW_MAXIMUM, 2, two, &compute, &n->dtype, err));
    }
    for (int d = 0, s = 0; d < nd; d++) {
        if (stack && d == axis) {
            n->shape[d] = n->nargs;
            n->chunks[d] = 1;
            continue;
        }
        n->shape[d] = m0->shape[s];
        n->chunks[d] = m0->chunks[s];
        if (!stack && d == axis) {
            n->shape[d] = 0;
            for (int k = 0; k < n->nargs; k++)
                n->shape[d] += ck_plan_array_arg(p, n, k)->shape[s];
        }
        s++;
    }
    return CK_OK;
}

ck_code ck_plan_parse_random(ck_plan *p, const char *path, const char *where,
                             ck_node *n, int sub, const cJSON *step,
                             ck_err *err)
{
    const cJSON *dist = cJSON_GetObjectItem(step, "dist");
    const cJSON *seed = cJSON_GetObjectItem(step, "seed");
    const cJSON *dt = cJSON_GetObjectItem(step, "dtype");
    const cJSON *ch = cJSON_GetObjectItem(step, "chunks");
    const char *names[][3] = {{"low", "high", "uniform"},
                              {"mean", "std", "normal"},
                              {"low", "high", "integers"}};
    ck_err local = {0};
    int nd;

    (void)sub;
    (void)p;
    CK_TRY(ck_plan_int_list(path, where, "shape",
                            cJSON_GetObjectItem(step, "shape"), n->shape,
                            &n->ndim, 0, err));
    n->dist = -1;
    for (int k = 0; k < 3; k++)
        if (cJSON_IsString(dist) && strcmp(dist->valuestring, names[k][2]) == 0)
            n->dist = k;
    if (!dist)
        n->dist = CK_DIST_UNIFORM;
    if (n->dist < 0)
        return ck_plan_bad(err, path, where,
                           "dist: expected \"uniform\", \"normal\" or "
                           "\"integers\"");
    const cJSON *a = cJSON_GetObjectItem(step, names[n->dist][0]);
    const cJSON *b = cJSON_GetObjectItem(step, names[n->dist][1]);
    n->ra = cJSON_IsNumber(a) ? a->valuedouble : 0;
    n->rb = cJSON_IsNumber(b) ? b->valuedouble
                              : (n->dist == CK_DIST_INTEGERS ? 100 : 1);
    if (n->dist != CK_DIST_NORMAL && !(n->rb > n->ra))
        return ck_plan_bad(err, path, where, "%s must exceed %s",
                           names[n->dist][1], names[n->dist][0]);
    if (seed && (!ck_plan_is_int(seed) || seed->valuedouble < 0))
        return ck_plan_bad(err, path, where, "seed must be an integer >= 0");
    n->seed = seed ? (uint64_t)seed->valuedouble : 0;
    n->dtype = n->dist == CK_DIST_INTEGERS ? CK_I64 : CK_F64;
    if (dt && (!cJSON_IsString(dt) ||
               ck_dtype_parse(dt->valuestring, &n->dtype, &local) != CK_OK))
        return ck_plan_bad(err, path, where, "dtype: %s",
                           local.msg[0] ? local.msg : "expected a name");
    double tlo, thi;
    int bad = n->dist == CK_DIST_INTEGERS
                  ? ck_gen_integers_fit(n->dtype, n->ra, n->rb, &tlo, &thi)
                  : 0;
    if (bad == 1)
        return ck_plan_bad(err, path, where,
                           "dist \"integers\" needs whole low and high (got "
                           "%g and %g)",
                           n->ra, n->rb);
    if (bad == 2)
        return ck_plan_bad(err, path, where,
                           "low %g, high %g: outside %s's range [%.0f, %.0f] "
                           "(high is excluded), as NumPy refuses",
                           n->ra, n->rb, ck_dtype_name(n->dtype), tlo, thi);
    if (n->dist == CK_DIST_UNIFORM && !ck_gen_uniform_fits(n->ra, n->rb))
        return ck_plan_bad(err, path, where,
                           "low %g, high %g: high - low is past the largest "
                           "double, as NumPy refuses",
                           n->ra, n->rb);
    if (ch) {
        CK_TRY(ck_plan_int_list(path, where, "chunks", ch, n->chunks, &nd, 0,
                                err));
        if (nd != n->ndim)
            return ck_plan_bad(err, path, where,
                               "chunks has %d values, shape %d", nd, n->ndim);
        for (int d = 0; d < nd; d++)
            if (n->chunks[d] < 1)
                return ck_plan_bad(err, path, where, "chunks[%d]: must be >= 1",
                                   d);
    } else {
        ck_auto_chunks(n->ndim, n->shape, ck_dtype_size(n->dtype), 8 << 20,
                       n->chunks);
    }
    return CK_OK;
}

ck_code ck_plan_parse_mask(ck_plan *p, const char *path, const char *where,
                           ck_node *n, int sub, const cJSON *step, ck_err *err)
{
    const ck_node *x, *c;

    (void)sub, (void)step;
    if (!(x = ck_plan_array_arg(p, n, 0)) || !(c = ck_plan_array_arg(p, n, 1)))
        return ck_plan_bad(err, path, where,
                           "args: expected [array, condition]");
    if (c->dtype != CK_BOOL)
        return ck_plan_bad(
            err, path, where,
            "args[1] must be a boolean array (from less, isnan, ...), "
            "not %s",
            ck_dtype_name(c->dtype));
    if (c->ndim != x->ndim ||
        memcmp(c->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim)) {
        char a[128], b[128];
        return ck_plan_bad(err, path, where,
                           "the condition's shape %s is not the array's %s",
                           ck_plan_shape_str(c->ndim, c->shape, a, sizeof a),
                           ck_plan_shape_str(x->ndim, x->shape, b, sizeof b));
    }
    n->dtype = x->dtype;
    n->ndim = 1;
    n->shape[0] = -1; /* known after the run */
    n->chunks[0] = 1 << 20;
    return CK_OK;
}

/* A mask's length is known only once it has run, so only steps that take
 * any length (reductions, histograms) and outputs may use it. */
static ck_code check_mask_use(const ck_plan *p, const char *path,
                              const char *where, const ck_node *n, ck_err *err)
{
    for (int k = 0; k < n->nargs; k++) {
        const ck_node *m = ck_plan_array_arg(p, n, k);
        if (m && m->kind == CK_NODE_MASK && n->kind != CK_NODE_REDUCE &&
            n->kind != CK_NODE_COUNT &&
            (n->kind != CK_NODE_HIST || n->weights >= 0))
            return ck_plan_bad(
                err, path, where,
                "args[%d]: '%s' is a mask, whose length is known only "
                "after the run; use it in a reduction, a histogram "
                "(without weights) or an output",
                k, m->name);
        /* unique's and bincount's results (op_count.c): the same, and
         * unique and bincount themselves take any length */
        if (m && m->kind != CK_NODE_MASK && m->ndim == 1 && m->shape[0] < 0 &&
            n->kind != CK_NODE_REDUCE && n->kind != CK_NODE_COUNT &&
            n->kind != CK_NODE_PART &&
            (n->kind != CK_NODE_HIST || n->weights >= 0))
            return ck_plan_bad(
                err, path, where,
                "args[%d]: the length of '%s' is known only after the "
                "run; use it in a reduction, a histogram (without "
                "weights), unique, bincount or an output",
                k, m->name);
    }
    return CK_OK;
}

ck_code ck_plan_parse_hist2d(ck_plan *p, const char *path, const char *where,
                             ck_node *n, int sub, const cJSON *step,
                             ck_err *err)
{
    const cJSON *bins = cJSON_GetObjectItem(step, "bins");
    const cJSON *range = cJSON_GetObjectItem(step, "range");
    const cJSON *dens = cJSON_GetObjectItem(step, "density");
    const cJSON *w = cJSON_GetObjectItem(step, "weights");
    const ck_node *x, *y;
    int nb[2] = {10, 10};
    double *e[2] = {NULL, NULL};

    (void)sub;
    if (!(x = ck_plan_array_arg(p, n, 0)) || !(y = ck_plan_array_arg(p, n, 1)))
        return ck_plan_bad(err, path, where,
                           "args: expected two arrays [x, y]");
    if (x->ndim != y->ndim ||
        memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim))
        return ck_plan_bad(err, path, where,
                           "x and y must have the same shape");
    if (ck_plan_is_int(bins)) {
        nb[0] = nb[1] = (int)bins->valuedouble;
    } else if (cJSON_IsArray(bins) && cJSON_GetArraySize(bins) == 2 &&
               ck_plan_is_int(cJSON_GetArrayItem(bins, 0)) &&
               ck_plan_is_int(cJSON_GetArrayItem(bins, 1))) {
        nb[0] = (int)cJSON_GetArrayItem(bins, 0)->valuedouble;
        nb[1] = (int)cJSON_GetArrayItem(bins, 1)->valuedouble;
    } else if (bins) {
        return ck_plan_bad(err, path, where, "bins: an integer or [nx, ny]");
    }
    if (!cJSON_IsArray(range) || cJSON_GetArraySize(range) != 2)
        return ck_plan_bad(err, path, where,
                           "range: expected [[xlow, xhigh], [ylow, yhigh]]");
    for (int k = 0; k < 2; k++) {
        const cJSON *r = cJSON_GetArrayItem(range, k);
        ck_err local = {0};
        if (nb[k] < 1 || nb[k] > 100000)
            return ck_plan_bad(err, path, where, "bins must be 1 to 100000");
        if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 2 ||
            !cJSON_IsNumber(cJSON_GetArrayItem(r, 0)) ||
            !cJSON_IsNumber(cJSON_GetArrayItem(r, 1)))
            return ck_plan_bad(
                err, path, where,
                "range: expected [[xlow, xhigh], [ylow, yhigh]]");
        if (!(e[k] = calloc((size_t)nb[k] + 1, sizeof(double)))) {
            free(e[0]);
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        }
        /* histogramdd computes its edges in float64 whatever the data */
        if (ck_hist_uniform_edges(nb[k], cJSON_GetArrayItem(r, 0)->valuedouble,
                                  cJSON_GetArrayItem(r, 1)->valuedouble, CK_F64,
                                  e[k], &local) != CK_OK) {
            free(e[0]);
            free(e[1]);
            return ck_plan_bad(err, path, where, "range[%d]: %s", k, local.msg);
        }
    }
    n->nbins = nb[0];
    n->nbins2 = nb[1];
    n->edges = e[0];
    n->edges2 = e[1];
    n->uniform = 1;
    if (dens && !cJSON_IsBool(dens))
        return ck_plan_bad(err, path, where, "density must be true or false");
    n->density = cJSON_IsTrue(dens);
    if (w) {
        if (!cJSON_IsString(w) || (n->weights = find(p, w->valuestring)) < 0)
            return ck_plan_bad(err, path, where,
                               "weights: no input or step named '%s'",
                               cJSON_IsString(w) ? w->valuestring : "?");
        const ck_node *wn = &p->node[n->weights];
        if (wn->ndim != x->ndim ||
            memcmp(wn->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim))
            return ck_plan_bad(err, path, where,
                               "weights must have the shape of x");
    }
    /* float64 counts too, as numpy.histogram2d's (histogramdd's) */
    n->dtype = CK_F64;
    n->ndim = 2;
    n->shape[0] = n->chunks[0] = nb[0];
    n->shape[1] = n->chunks[1] = nb[1];
    return CK_OK;
}

/* ---- linear algebra and models ---- */

/* An optional integer member: *v keeps dflt when absent. */
ck_code ck_plan_opt_int(const char *path, const char *where, const cJSON *step,
                        const char *key, int64_t lo, int64_t hi, int64_t dflt,
                        int64_t *v, ck_err *err)
{
    const cJSON *j = cJSON_GetObjectItem(step, key);

    *v = dflt;
    if (!j || cJSON_IsNull(j))
        return CK_OK;
    if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble) ||
        j->valuedouble < (double)lo || j->valuedouble > (double)hi)
        return ck_plan_bad(err, path, where,
                           "%s must be an integer in %lld..%lld", key,
                           (long long)lo, (long long)hi);
    *v = (int64_t)j->valuedouble;
    return CK_OK;
}

ck_code ck_plan_opt_num(const char *path, const char *where, const cJSON *step,
                        const char *key, double lo, double hi, double dflt,
                        double *v, ck_err *err)
{
    const cJSON *j = cJSON_GetObjectItem(step, key);

    *v = dflt;
    if (!j || cJSON_IsNull(j))
        return CK_OK;
    if (!cJSON_IsNumber(j) || !(j->valuedouble >= lo && j->valuedouble <= hi))
        return ck_plan_bad(err, path, where, "%s must be a number in [%g, %g]",
                           key, lo, hi);
    *v = j->valuedouble;
    return CK_OK;
}

static ck_code want_2d(const char *path, const char *where, int k,
                       const ck_node *m, ck_err *err)
{
    char sh[128];

    if (m->ndim != 2 && !where[0] && m->kind == CK_NODE_INPUT)
        /* a one-step command: name the array as the user typed it */
        return ck_plan_bad(err, path, where,
                           "expected a 2-D array, %s has shape %s", m->source,
                           ck_plan_shape_str(m->ndim, m->shape, sh, sizeof sh));
    if (m->ndim != 2)
        return ck_plan_bad(err, path, where,
                           "args[%d]: expected a 2-D array, '%s' "
                           "has shape %s",
                           k, m->name,
                           ck_plan_shape_str(m->ndim, m->shape, sh, sizeof sh));
    if (m->shape[0] < 0)
        return ck_plan_bad(
            err, path, where,
            "args[%d]: the length of mask '%s' is known only after "
            "the run",
            k, m->name);
    return CK_OK;
}

/* Square tiles of at most 2560 on a side, as even as the shape allows:
 * matmul reads each operand (size / tile) times, so tiles are large, and
 * 2560^2 float64 is 50 MiB. */
static int64_t tile(int64_t len)
{
    int64_t t = (len + 2559) / 2560;
    return len > 0 ? (len + t - 1) / t : 1;
}

ck_code ck_plan_parse_matmul(ck_plan *p, const char *path, const char *where,
                             ck_node *n, int sub, const cJSON *step,
                             ck_err *err)
{
    const ck_node *a, *b;
    char sa[64], sb[64];

    (void)sub, (void)step;
    if (n->arg[0] < 0 || n->arg[1] < 0)
        return ck_plan_bad(err, path, where, "matmul takes two arrays");
    a = &p->node[n->arg[0]];
    b = &p->node[n->arg[1]];
    CK_TRY(want_2d(path, where, 0, a, err));
    CK_TRY(want_2d(path, where, 1, b, err));
    if (a->shape[1] != b->shape[0])
        return ck_plan_bad(
            err, path, where,
            "shapes %s and %s do not match for matmul (%lld != %lld)",
            ck_plan_shape_str(2, a->shape, sa, sizeof sa),
            ck_plan_shape_str(2, b->shape, sb, sizeof sb),
            (long long)a->shape[1], (long long)b->shape[0]);
    /* float32 @ float32 runs in sgemm; everything else in float64 */
    n->dtype = a->dtype == CK_F32 && b->dtype == CK_F32 ? CK_F32 : CK_F64;
    n->ndim = 2;
    n->shape[0] = a->shape[0];
    n->shape[1] = b->shape[1];
    n->chunks[0] = tile(n->shape[0]);
    n->chunks[1] = tile(n->shape[1]);
    return CK_OK;
}

/* Adds result node "<step>.<suffix>" of kind CK_NODE_PART. */
static ck_code add_part(ck_plan *p, const char *path, const char *where,
                        int owner, const char *suffix, int part, ck_dtype dt,
                        int ndim, const int64_t *shape, const int64_t *chunks,
                        ck_err *err)
{
    char name[CK_NAME_MAX + 16];
    ck_node *n;

    snprintf(name, sizeof name, "%s.%s", p->node[owner].name, suffix);
    if (strlen(name) >= CK_NAME_MAX)
        return ck_plan_bad(err, path, where, "name '%s' is too long", name);
    CK_TRY(add_node(p, path, where, name, &n, err));
    n->kind = CK_NODE_PART;
    n->part = part;
    n->nargs = 1;
    n->arg[0] = owner;
    n->dtype = dt;
    n->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        n->shape[d] = shape[d];
        n->chunks[d] = chunks[d] > 0 ? chunks[d] : 1;
    }
    return CK_OK;
}

ck_code ck_plan_add_part(ck_plan *p, const char *path, const char *where,
                         int owner, const char *suffix, int part, ck_dtype dt,
                         int ndim, const int64_t *shape, const int64_t *chunks,
                         ck_err *err)
{
    return add_part(p, path, where, owner, suffix, part, dt, ndim, shape,
                    chunks, err);
}

/* Lines (rows, axis 0; columns, axis 1) per block of a 2-D operand streamed
 * whole-line: its chunks along that axis, cut so that a block of lines
 * 'width' float64 values long stays near 32 MiB. */
static int64_t line_block(const ck_node *m, int axis, int64_t width)
{
    int64_t r = m->chunks[axis] > 0 ? m->chunks[axis] : 1;
    int64_t most = ((int64_t)32 << 20) / (8 * (width > 0 ? width : 1));

    if (most < 1)
        most = 1;
    if (r > most)
        r = (r + ((r + most - 1) / most) - 1) / ((r + most - 1) / most);
    return r < m->shape[axis] ? r : (m->shape[axis] > 0 ? m->shape[axis] : 1);
}

ck_code ck_plan_parse_svd(ck_plan *p, const char *path, const char *where,
                          ck_node *n, int sub, const cJSON *step, ck_err *err)
{
    const cJSON *meth = cJSON_GetObjectItem(step, "method");
    const ck_node *m;
    int64_t mm, nn, r, v, sh[2], ch[2];
    int self = (int)(n - p->node);

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    CK_TRY(want_2d(path, where, 0, m, err));
    mm = m->shape[0];
    nn = m->shape[1];
    r = mm < nn ? mm : nn;
    if (r < 1) {
        char txt[128];
        return ck_plan_bad(
            err, path, where, "svd of an empty array: %s has shape %s",
            ck_node_label(m),
            ck_plan_shape_str(m->ndim, m->shape, txt, sizeof txt));
    }
    if (meth && (!cJSON_IsString(meth) ||
                 (strcmp(meth->valuestring, "exact") != 0 &&
                  strcmp(meth->valuestring, "randomized") != 0)))
        return ck_plan_bad(err, path, where,
                           "method must be \"exact\" or \"randomized\"");
    n->randomized = meth && strcmp(meth->valuestring, "randomized") == 0;
    const cJSON *kj = cJSON_GetObjectItem(step, "k");
    if (kj && cJSON_IsNumber(kj) && kj->valuedouble > (double)r)
        return ck_plan_bad(err, path, where,
                           "k = %g is larger than min(m, n) = %lld for shape "
                           "(%lld, %lld)",
                           kj->valuedouble, (long long)r, (long long)mm,
                           (long long)nn);
    CK_TRY(ck_plan_opt_int(path, where, step, "k", 1, r, n->randomized ? 0 : r,
                           &v, err));
    if (v == 0)
        return ck_plan_bad(err, path, where, "a randomized svd needs k");
    n->k = v;
    /* an exact svd has no random range: its options would be ignored */
    static const char *const rnd_only[] = {"oversample", "power_iters", "seed"};
    for (size_t o = 0; !n->randomized && o < 3; o++)
        if (cJSON_GetObjectItem(step, rnd_only[o]))
            return ck_plan_bad(err, path, where,
                               "%s applies to method \"randomized\" only",
                               rnd_only[o]);
    CK_TRY(
        ck_plan_opt_int(path, where, step, "oversample", 0, 1000, 10, &v, err));
    n->oversample = (int)v;
    CK_TRY(
        ck_plan_opt_int(path, where, step, "power_iters", 0, 100, 2, &v, err));
    n->power_iters = (int)v;
    CK_TRY(
        ck_plan_opt_int(path, where, step, "seed", 0, INT64_MAX, 0, &v, err));
    n->seed = (uint64_t)v;
    /* The node itself stands for S (what plan shows); its results are
     * parts.  The streamed factor (U when tall, Vt when wide) is chunked
     * along the long side. */
    n->dtype = CK_F64;
    n->ndim = 1;
    n->shape[0] = n->chunks[0] = n->k;
    int tall = mm >= nn;
    sh[0] = mm;
    sh[1] = n->k;
    ch[0] = tall ? line_block(m, 0, nn) : mm;
    ch[1] = n->k;
    CK_TRY(
        add_part(p, path, where, self, "U", CK_PART_U, CK_F64, 2, sh, ch, err));
    CK_TRY(add_part(p, path, where, self, "S", CK_PART_S, CK_F64, 1, &n->k,
                    &n->k, err));
    sh[0] = n->k;
    sh[1] = nn;
    ch[0] = n->k;
    ch[1] = tall ? nn : line_block(m, 1, mm);
    return add_part(p, path, where, self, "Vt", CK_PART_VT, CK_F64, 2, sh, ch,
                    err);
}

static ck_code glm_names(const char *path, const char *where, const cJSON *step,
                         ck_glm_opts *o, ck_err *err)
{
    const cJSON *f = cJSON_GetObjectItem(step, "family");
    const cJSON *s = cJSON_GetObjectItem(step, "solver");
    const cJSON *g = cJSON_GetObjectItem(step, "regularizer");

    o->family = CK_GLM_LOGISTIC;
    o->solver = CK_GLM_NEWTON;
    o->reg = CK_GLM_REG_NONE;
    if (f && (!cJSON_IsString(f) ||
              !ck_glm_family_lookup(f->valuestring, &o->family)))
        return ck_plan_bad(
            err, path, where,
            "family must be \"logistic\", \"normal\" or \"poisson\"");
    if (s && (!cJSON_IsString(s) ||
              !ck_glm_solver_lookup(s->valuestring, &o->solver)))
        return ck_plan_bad(
            err, path, where,
            "solver must be \"newton\", \"lbfgs\", "
            "\"gradient_descent\", \"proximal_grad\" or \"admm\"");
    if (g &&
        (!cJSON_IsString(g) || !ck_glm_reg_lookup(g->valuestring, &o->reg)))
        return ck_plan_bad(err, path, where,
                           "regularizer must be \"none\", \"l1\", \"l2\" or "
                           "\"elastic_net\"");
    return CK_OK;
}

ck_code ck_plan_parse_glm(ck_plan *p, const char *path, const char *where,
                          ck_node *n, int sub, const cJSON *step, ck_err *err)
{
    const cJSON *fi = cJSON_GetObjectItem(step, "fit_intercept");
    const cJSON *lam = cJSON_GetObjectItem(step, "lambda");
    const ck_node *x, *y;
    ck_glm_opts *o = &n->glm;
    ck_err local = {0};
    int64_t v, sh[1], ch[1];
    int self = (int)(n - p->node);

    (void)sub;
    if (n->arg[0] < 0 || n->arg[1] < 0)
        return ck_plan_bad(err, path, where,
                           "glm_fit takes two arrays, X and y");
    x = &p->node[n->arg[0]];
    y = &p->node[n->arg[1]];
    CK_TRY(want_2d(path, where, 0, x, err));
    if (y->ndim != 1 || y->shape[0] < 0)
        return ck_plan_bad(err, path, where, "args[1]: y must be a 1-D array");
    if (y->shape[0] != x->shape[0])
        return ck_plan_bad(err, path, where,
                           "X ('%s') has %lld rows but y ('%s') has %lld "
                           "values",
                           ck_node_label(x), (long long)x->shape[0],
                           ck_node_label(y), (long long)y->shape[0]);
    if (x->shape[0] < 1 || x->shape[1] < 1)
        return ck_plan_bad(err, path, where, "X ('%s') is empty",
                           ck_node_label(x));
    CK_TRY(glm_names(path, where, step, o, err));
    if (fi && !cJSON_IsBool(fi))
        return ck_plan_bad(err, path, where,
                           "fit_intercept must be true or false");
    o->fit_intercept = !fi || cJSON_IsTrue(fi);
    if (o->reg != CK_GLM_REG_NONE && !lam)
        return ck_plan_bad(err, path, where, "a %s penalty needs \"lambda\"",
                           ck_glm_reg_name(o->reg));
    /* a weight with no penalty to weigh was ignored, the fit unpenalised */
    if (o->reg == CK_GLM_REG_NONE && lam &&
        !(cJSON_IsNumber(lam) && lam->valuedouble == 0))
        return ck_plan_bad(err, path, where,
                           "lambda weighs a penalty: give \"regularizer\" "
                           "(l1, l2 or elastic_net) too");
    if (o->reg != CK_GLM_REG_ELASTIC_NET &&
        cJSON_GetObjectItem(step, "l1_ratio"))
        return ck_plan_bad(err, path, where,
                           "l1_ratio is elastic_net's: give \"regularizer\": "
                           "\"elastic_net\" too");
    const cJSON *tj = cJSON_GetObjectItem(step, "tol");
    if (cJSON_IsNumber(tj) && !(tj->valuedouble > 0 && tj->valuedouble <= 1))
        return ck_plan_bad(err, path, where,
                           "tol must be a number in (0, 1] (default 1e-8)");
    CK_TRY(ck_plan_opt_num(path, where, step, "lambda", 0, HUGE_VAL, 0,
                           &o->lambda, err));
    CK_TRY(ck_plan_opt_num(path, where, step, "l1_ratio", 0, 1, 0.5,
                           &o->l1_ratio, err));
    CK_TRY(ck_plan_opt_int(path, where, step, "max_iter", 1, 10000000, 0, &v,
                           err));
    o->max_iter = (int)v;
    CK_TRY(ck_plan_opt_num(path, where, step, "tol", 0, 1, 1e-8, &o->tol, err));
    const cJSON *se = cJSON_GetObjectItem(step, "std_errors");
    if (se && !cJSON_IsBool(se))
        return ck_plan_bad(err, path, where,
                           "std_errors must be true or false");
    o->std_errors = cJSON_IsTrue(se);
    if (!(o->tol > 0)) /* 0 would never stop; no silent default for it */
        return ck_plan_bad(err, path, where,
                           "tol must be a number in (0, 1] (default 1e-8)");
    if (ck_glm_check(o, &local) != CK_OK)
        return ck_plan_bad(err, path, where, "%s", local.msg);
    n->dtype = CK_F64;
    n->ndim = 1;
    n->shape[0] = n->chunks[0] = x->shape[1];
    sh[0] = ch[0] = x->shape[1];
    CK_TRY(add_part(p, path, where, self, "coef", CK_PART_COEF, CK_F64, 1, sh,
                    ch, err));
    sh[0] = ch[0] = 1;
    return add_part(p, path, where, self, "intercept", CK_PART_INTERCEPT,
                    CK_F64, 1, sh, ch, err);
}

/* "glm-predict: model: ..." (one-step) or "p.json: steps[1]: model: ..." */
static void model_prefix(ck_code rc, ck_err *err, const char *path,
                         const char *where)
{
    if (rc != CK_OK && where[0])
        ck_err_prefix(err, "%s: %s: model", path, where);
    else if (rc != CK_OK)
        ck_err_prefix(err, "%s: model", path);
}

/* One of the attributes glm_fit gives the coefficients it writes: an
 * array without it is not a model, so naming it is a usage error. */
static ck_code model_attr(ck_store *s, const char *name, const char *key,
                          ck_attr *v, const char *path, const char *where,
                          const cJSON *model, ck_err *err)
{
    ck_err e = {0};
    ck_code rc = ck_store_get_attr(s, name, key, v, &e);

    if (rc == CK_EFORMAT)
        return ck_plan_bad(err, path, where,
                           "model %s is not a glm-fit result (it has no "
                           "readable attribute '%s')",
                           model->valuestring, key);
    if (rc != CK_OK)
        model_prefix(ck_err_set(err, rc, "%s", e.msg), err, path, where);
    return rc;
}

/* glm_predict(X) with "model": the coefficients array a glm_fit wrote
 * (PATH, meaning PATH:/coef, or PATH:DATASET), read as an input named
 * "<step>.coef"; family and intercept come from its attributes. */
static ck_code parse_model(ck_plan *p, const char *path, const char *where,
                           ck_node *n, const cJSON *step, ck_err *err)
{
    const cJSON *mj = cJSON_GetObjectItem(step, "model");
    char mp[PATH_MAX], mn[512], nm[CK_NAME_MAX + 8];
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_attr fam, ic;
    ck_node *c;
    ck_code rc;
    int self = (int)(n - p->node);

    if (n->arg[0] < 0)
        return ck_plan_bad(err, path, where, "args[0]: expected an array X");
    if (!cJSON_IsString(mj))
        return ck_plan_bad(err, path, where,
                           "model must be \"PATH[:DATASET]\"");
    CK_TRY(ck_target_split(mj->valuestring, mp, sizeof mp, mn, sizeof mn, err));
    if (!mn[0])
        snprintf(mn, sizeof mn, "/coef");
    snprintf(nm, sizeof nm, "%.50s.coef", n->name);
    CK_TRY(add_node(p, path, where, nm, &c, err));
    /* the input goes before the step that reads it */
    ck_node tmp = p->node[self];
    p->node[self] = *c;
    *c = tmp;
    c = &p->node[self];
    n = &p->node[self + 1];
    c->kind = CK_NODE_INPUT;
    snprintf(c->source, sizeof c->source, "%s:%s", mp, mn);
    if ((rc = ck_store_open(mp, &s, err)) == CK_OK)
        rc = ck_array_open(s, mn, &a, err);
    model_prefix(rc, err, path, where);
    if (rc == CK_OK &&
        (rc = model_attr(s, mn, "family", &fam, path, where, mj, err)) ==
            CK_OK &&
        (rc = model_attr(s, mn, "intercept", &ic, path, where, mj, err)) ==
            CK_OK) {
        const ck_array_info *ai = ck_array_info_of(a);
        c->dtype = ai->dtype;
        c->ndim = ai->ndim;
        memcpy(c->shape, ai->shape, sizeof c->shape);
        memcpy(c->chunks, ai->chunks, sizeof c->chunks);
        if (fam.kind != CK_ATTR_STR ||
            !ck_glm_family_lookup(fam.str, &n->glm.family))
            rc = ck_plan_bad(
                err, path, where,
                "model %s: attribute 'family' is not a known family",
                mj->valuestring);
        else if (ic.kind == CK_ATTR_STR)
            rc = ck_plan_bad(err, path, where,
                             "model %s: attribute 'intercept' is not a number",
                             mj->valuestring);
    }
    ck_array_close(a);
    ck_store_close(s);
    if (rc != CK_OK)
        return rc;
    const ck_node *x = &p->node[n->arg[0]];
    CK_TRY(want_2d(path, where, 0, x, err));
    if (c->ndim != 1 || c->shape[0] != x->shape[1])
        return ck_plan_bad(
            err, path, where,
            "X ('%s') has %lld columns but the model (%s) has %lld "
            "coefficients",
            ck_node_label(x), (long long)x->shape[1], mj->valuestring,
            (long long)(c->ndim == 1 ? c->shape[0] : -1));
    n->nargs = 3;
    n->arg[1] = self;
    n->arg[2] = -1;
    n->scalar[2] = ic.kind == CK_ATTR_F64 ? ic.f64 : (double)ic.i64;
    n->dtype = CK_F64;
    n->ndim = 1;
    n->shape[0] = x->shape[0];
    n->chunks[0] = line_block(x, 0, x->shape[1]);
    return CK_OK;
}

/* glm_predict(X, coef): args[2] is the intercept (a 1-element array or a
 * number), taken from "intercept", or from the glm_fit step that made
 * coef. */
ck_code ck_plan_parse_predict(ck_plan *p, const char *path, const char *where,
                              ck_node *n, int sub, const cJSON *step,
                              ck_err *err)
{
    const cJSON *ic = cJSON_GetObjectItem(step, "intercept");
    const cJSON *f = cJSON_GetObjectItem(step, "family");
    const ck_node *x, *c, *fit = NULL;

    (void)sub;
    if (cJSON_GetObjectItem(step, "model")) {
        if (n->nargs != 1)
            return ck_plan_bad(err, path, where,
                               "takes 1 argument (X) with a model, got %d",
                               n->nargs);
        return parse_model(p, path, where, n, step, err);
    }
    if (n->nargs != 2)
        return ck_plan_bad(err, path, where, "takes 2 arguments, got %d",
                           n->nargs);
    if (n->arg[0] < 0 || n->arg[1] < 0)
        return ck_plan_bad(err, path, where,
                           "glm_predict takes two arrays, X and "
                           "the coefficients");
    x = &p->node[n->arg[0]];
    c = &p->node[n->arg[1]];
    CK_TRY(want_2d(path, where, 0, x, err));
    if (c->ndim != 1 || c->shape[0] != x->shape[1])
        return ck_plan_bad(err, path, where,
                           "X has %lld columns: the coefficients must be a 1-D "
                           "array of %lld values",
                           (long long)x->shape[1], (long long)x->shape[1]);
    if (c->kind == CK_NODE_PART && c->part == CK_PART_COEF)
        fit = &p->node[c->arg[0]];
    n->glm.family = fit ? fit->glm.family : CK_GLM_LOGISTIC;
    if (f && (!cJSON_IsString(f) ||
              !ck_glm_family_lookup(f->valuestring, &n->glm.family)))
        return ck_plan_bad(
            err, path, where,
            "family must be \"logistic\", \"normal\" or \"poisson\"");
    n->nargs = 3;
    n->arg[2] = -1;
    n->scalar[2] = 0;
    if (cJSON_IsNumber(ic)) {
        n->scalar[2] = ic->valuedouble;
    } else if (cJSON_IsString(ic)) {
        int k = find(p, ic->valuestring);
        if (k < 0)
            return ck_plan_bad(err, path, where,
                               "intercept: no step named '%s'",
                               ic->valuestring);
        if (p->node[k].ndim > 1 ||
            (p->node[k].ndim == 1 && p->node[k].shape[0] != 1))
            return ck_plan_bad(err, path, where,
                               "intercept: '%s' must hold one value",
                               ic->valuestring);
        n->arg[2] = k;
    } else if (ic) {
        return ck_plan_bad(err, path, where,
                           "intercept must be a number or a name");
    } else if (fit) {
        n->arg[2] = c->arg[0] + 2; /* "m.intercept" follows "m.coef" */
    }
    n->dtype = CK_F64;
    n->ndim = 1;
    n->shape[0] = x->shape[0];
    n->chunks[0] = line_block(x, 0, x->shape[1]);
    return CK_OK;
}

ck_code ck_plan_parse_astype(ck_plan *p, const char *path, const char *where,
                             ck_node *n, int sub, const cJSON *step,
                             ck_err *err)
{
    const cJSON *dt = cJSON_GetObjectItem(step, "dtype");
    ck_err local = {0};
    const ck_node *m;

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    if (!cJSON_IsString(dt) ||
        ck_dtype_parse(dt->valuestring, &n->dtype, &local) != CK_OK)
        return ck_plan_bad(err, path, where, "dtype: %s",
                           local.msg[0] ? local.msg
                           : dt         ? "expected a NumPy name (\"int16\")"
                                        : "missing");
    n->ndim = m->ndim;
    memcpy(n->shape, m->shape, sizeof n->shape);
    memcpy(n->chunks, m->chunks, sizeof n->chunks);
    return CK_OK;
}

/* Where step i is, for messages: "steps[2]", or nothing for a one-step
 * command, whose user gave options, not steps. */
static void step_where(const ck_plan *p, int i, char *buf, size_t n)
{
    if (p->onestep)
        buf[0] = '\0';
    else
        snprintf(buf, n, "steps[%d]", i);
}

/* The keys looked up on the step being parsed (and on its copy with axes
 * named by dimension turned into numbers). */
enum { SEEN_MAX = 64 };
static _Thread_local struct {
    const cJSON *obj[2];
    char seen[SEEN_MAX][32];
    int n;
} looked;

cJSON *ck_plan_key(const cJSON *obj, const char *key)
{
    if (obj && key && (obj == looked.obj[0] || obj == looked.obj[1])) {
        int have = 0; /* each key once: parsers may look one up often */
        for (int j = 0; j < looked.n && !have; j++)
            have = strncmp(looked.seen[j], key, sizeof looked.seen[0] - 1) == 0;
        if (!have && looked.n < SEEN_MAX)
            snprintf(looked.seen[looked.n++], sizeof looked.seen[0], "%s", key);
    }
    return (cJSON_GetObjectItem)(obj, key);
}

/* CK_EUSAGE for the first key of step that its parse did not look up,
 * naming those it did. */
static ck_code unread_keys(const char *path, const char *where, const char *op,
                           const cJSON *step, ck_err *err)
{
    const cJSON *k;

    cJSON_ArrayForEach(k, step)
    {
        int seen = !strcmp(k->string, "name") || !strcmp(k->string, "op") ||
                   !strcmp(k->string, "args");
        for (int j = 0; j < looked.n && !seen; j++)
            seen = strcmp(looked.seen[j], k->string) == 0;
        if (seen)
            continue;
        char took[512] = "";
        size_t at = 0;
        for (int j = 0; j < looked.n && at < sizeof took - 40; j++)
            if (strcmp(looked.seen[j], "name") &&
                strcmp(looked.seen[j], "op") && strcmp(looked.seen[j], "args"))
                at += (size_t)snprintf(took + at, sizeof took - at, "%s\"%s\"",
                                       at ? ", " : "", looked.seen[j]);
        return ck_plan_bad(err, path, where,
                           "%s takes no key \"%.40s\" here (%s%s)", op,
                           k->string, at ? "it reads " : "it takes none", took);
    }
    return CK_OK;
}

static ck_code parse_step(ck_plan *p, const char *path, int i,
                          const cJSON *step, ck_err *err)
{
    char where[48];
    const cJSON *name = cJSON_GetObjectItem(step, "name");
    const cJSON *op = cJSON_GetObjectItem(step, "op");
    const cJSON *args;
    const ck_op_def *def;
    ck_node *n;
    int sub = 0;

    step_where(p, i, where, sizeof where);
    if (!cJSON_IsObject(step))
        return ck_plan_bad(err, path, where, "expected an object");
    if (!cJSON_IsString(name))
        return ck_plan_bad(err, path, where,
                           name ? "\"name\" must be a string"
                                : "\"name\" is missing");
    if (!cJSON_IsString(op))
        return ck_plan_bad(err, path, where,
                           op ? "\"op\" must be a string (an op's name)"
                              : "\"op\" is missing");
    CK_TRY(add_node(p, path, where, name->valuestring, &n, err));
    if (!(def = ck_optab_find(op->valuestring, &sub)) || !def->parse)
        return ck_plan_bad(
            err, path, where,
            "unknown op '%s' (see chunkctl-pipeline(5) for the list)",
            op->valuestring);
    n->kind = def->kind;
    n->sub = sub;
    snprintf(n->op, sizeof n->op, "%s", op->valuestring);
    args = cJSON_GetObjectItem(step, "args");
    if (def->flags & CK_OP_SOURCE) {
        if (cJSON_GetArraySize(args) > 0)
            return ck_plan_bad(err, path, where, "%s takes no args", def->name);
    } else {
        int lo = def->member_arity ? def->member_arity(sub) : def->min_args;
        int hi = def->member_arity ? lo : def->max_args;
        CK_TRY(parse_args(p, path, where, n, args, lo, hi, err));
    }
    /* Axes named by dimension become indices before the op reads them. */
    cJSON *named = NULL;
    int self = (int)(n - p->node);
    looked.obj[0] = step;
    looked.obj[1] = NULL;
    looked.n = 0;
    ck_code rc = ck_cf_plan_axis_names(p, path, where, n, step, &named, err);
    looked.obj[1] = named;
    if (rc == CK_OK)
        rc = def->parse(p, path, where, n, sub, named ? named : step, err);
    if (rc == CK_OK)
        rc = ck_cf_plan_step(p, path, where, self, step, err);
    if (rc == CK_OK)
        rc = unread_keys(path, where, n->op, step, err);
    looked.obj[0] = looked.obj[1] = NULL;
    cJSON_Delete(named);
    return rc;
}

/* Steps may name steps defined later: each step is parsed after the steps
 * it names (depth first), which orders the plan's nodes so that operands
 * come first and finds cycles. */
typedef struct steps_ctx {
    ck_plan *p;
    const char *path;
    const cJSON *item[CK_MAX_NODES];
    int state[CK_MAX_NODES]; /* 0 new, 1 being parsed, 2 done */
    int n;
} steps_ctx;

static int step_index(const steps_ctx *s, const char *name)
{
    const char *dot = strrchr(name, '.');

    for (int i = 0; i < s->n; i++) {
        const cJSON *nm = cJSON_GetObjectItem(s->item[i], "name");
        if (cJSON_IsString(nm) && strcmp(nm->valuestring, name) == 0)
            return i;
    }
    /* "d.U" is a result of step "d" */
    for (int i = 0; dot && i < s->n; i++) {
        const cJSON *nm = cJSON_GetObjectItem(s->item[i], "name");
        if (cJSON_IsString(nm) &&
            strlen(nm->valuestring) == (size_t)(dot - name) &&
            strncmp(nm->valuestring, name, (size_t)(dot - name)) == 0)
            return i;
    }
    return -1;
}

/* A step of more than CK_ELEMS_MAX elements (chunkctl(1), LIMITS) is
 * refused while the pipeline is parsed, before anything is sized for it. */
static ck_code check_elems(const char *path, const char *where,
                           const ck_node *n, ck_err *err)
{
    int64_t nel = 1;
    char sh[256];

    for (int d = 0; d < n->ndim; d++)
        if (__builtin_mul_overflow(nel, n->shape[d], &nel) ||
            nel > CK_ELEMS_MAX)
            return ck_plan_bad(err, path, where,
                               "shape %s has more elements than the limit of "
                               "2^53 (%lld)",
                               ck_coords_str(n->ndim, n->shape, sh, sizeof sh),
                               (long long)CK_ELEMS_MAX);
    return CK_OK;
}

static ck_code parse_one(steps_ctx *s, int i, const char *via, ck_err *err)
{
    const cJSON *step = s->item[i], *args, *a, *w;
    char where[48];

    if (s->state[i] == 2)
        return CK_OK;
    step_where(s->p, i, where, sizeof where);
    if (s->state[i] == 1)
        return ck_plan_bad(err, s->path, where,
                           "'%s' depends on itself (its args lead back to it)",
                           via);
    s->state[i] = 1;
    args = cJSON_GetObjectItem(step, "args");
    w = cJSON_GetObjectItem(step, "weights");
    if (!cJSON_IsString(w))
        w = cJSON_GetObjectItem(step, "intercept");
    if (!cJSON_IsArray(args))
        args = NULL;
    cJSON_ArrayForEach(a, args)
    {
        int j = cJSON_IsString(a) && find(s->p, a->valuestring) < 0
                    ? step_index(s, a->valuestring)
                    : -1;
        if (j >= 0)
            CK_TRY(parse_one(s, j, a->valuestring, err));
    }
    if (cJSON_IsString(w) && find(s->p, w->valuestring) < 0) {
        int j = step_index(s, w->valuestring);
        if (j >= 0)
            CK_TRY(parse_one(s, j, w->valuestring, err));
    }
    CK_TRY(parse_step(s->p, s->path, i, step, err));
    CK_TRY(check_mask_use(s->p, s->path, where, &s->p->node[s->p->n - 1], err));
    CK_TRY(check_elems(s->path, where, &s->p->node[s->p->n - 1], err));
    s->state[i] = 2;
    return CK_OK;
}

static ck_code parse_steps(ck_plan *p, const char *path, const cJSON *steps,
                           ck_err *err)
{
    steps_ctx *s = calloc(1, sizeof *s);
    const cJSON *it;
    ck_code rc = CK_OK;

    if (!s)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    s->p = p;
    s->path = path;
    cJSON_ArrayForEach(it, steps)
    {
        if (s->n == CK_MAX_NODES) {
            free(s);
            return ck_plan_bad(err, path, "steps",
                               "more than %d steps (the limit)", CK_MAX_NODES);
        }
        s->item[s->n++] = it;
    }
    for (int i = 0; i < s->n && rc == CK_OK; i++)
        rc = parse_one(s, i, "", err);
    free(s);
    return rc;
}

/* An output's target: "PATH[:DATASET]", or {"path": "PATH[:DATASET]",
 * "compress": "SPEC"} (SPEC as copy's --compress). */
static ck_code parse_output(const char *path, const char *ow, const cJSON *it,
                            ck_output *o, ck_err *err)
{
    const cJSON *t = it, *c = NULL;

    if (cJSON_IsObject(it)) {
        const cJSON *k;
        cJSON_ArrayForEach(k, it)
        {
            if (strcmp(k->string, "path") && strcmp(k->string, "compress"))
                return ck_plan_bad(err, path, ow,
                                   "unknown key '%.40s' (an output takes "
                                   "\"path\" and \"compress\")",
                                   k->string);
        }
        t = cJSON_GetObjectItem(it, "path");
        c = cJSON_GetObjectItem(it, "compress");
    }
    if (!cJSON_IsString(t) || !t->valuestring[0])
        return ck_plan_bad(err, path, ow,
                           "expected \"PATH[:DATASET]\" or {\"path\": "
                           "\"PATH[:DATASET]\", \"compress\": \"SPEC\"}");
    if (strlen(t->valuestring) >= sizeof o->target)
        return ck_plan_bad(err, path, ow, "a path of %zu bytes (at most %zu)",
                           strlen(t->valuestring), sizeof o->target - 1);
    snprintf(o->target, sizeof o->target, "%s", t->valuestring);
    /* What the executor would refuse about the target when it creates the
     * store, said here, where the message can name the output (a one-step
     * command's -o as before: the target alone). */
    {
        char sp[PATH_MAX], sn[PATH_MAX];
        ck_err e = {0};
        if (ck_target_split(o->target, sp, sizeof sp, sn, sizeof sn, &e) ==
                CK_OK &&
            ck_store_kind_guess(sp) == CK_KIND_NONE)
            ck_err_set(&e, CK_EUSAGE,
                       "%s: cannot tell the output format; name it *.h5 or "
                       "*.zarr",
                       sp);
        if (e.code != CK_OK)
            return ow[0] ? ck_plan_bad(err, path, ow, "%s", e.msg)
                         : ck_err_set(err, e.code, "%s", e.msg);
    }
    if (c) {
        ck_err e = {0};
        if (!cJSON_IsString(c) ||
            ck_codec_parse(c->valuestring, &o->codec, &e) != CK_OK)
            return ck_plan_bad(err, path, ow, "compress: %s",
                               cJSON_IsString(c) ? e.msg
                                                 : "expected a string such "
                                                   "as \"zstd:3\"");
        o->has_codec = 1;
    }
    return CK_OK;
}

/* Counts, in the raw text, the JSON values (at most about one per comma or
 * bracket) and the elements of the top-level "steps" list, so that a pipeline
 * of 10^6 steps or values is refused before cJSON builds a tree of them
 * (some 80 bytes a value). */
static void raw_counts(const char *t, long *values, long *steps)
{
    const char *key = "";
    size_t klen = 0;
    int depth = 0, in_steps = 0;

    *values = 1;
    *steps = 0;
    for (const char *c = t; *c; c++) {
        if (*c == '"') {
            const char *k = ++c;
            while (*c && *c != '"')
                c += c[0] == '\\' && c[1] ? 2 : 1;
            if (!*c)
                return;
            if (depth == 1) {
                key = k;
                klen = (size_t)(c - k);
            }
        } else if (*c == '[' || *c == '{') {
            ++*values;
            if (++depth == 2 && *c == '[' && klen == 5 &&
                memcmp(key, "steps", 5) == 0)
                in_steps = 1;
        } else if (*c == ']' || *c == '}') {
            if (--depth < 2)
                in_steps = 0;
        } else if (*c == ',') {
            ++*values;
            *steps += in_steps && depth == 2;
        }
        if (in_steps && depth >= 2 && !*steps && c[0] != '[' &&
            (depth > 2 ||
             (c[0] != ' ' && c[0] != '\n' && c[0] != '\t' && c[0] != '\r')))
            *steps = 1; /* the first element */
    }
}

/* Numbers written with a fraction or an exponent (2.0, 1e3) are floats
 * to NumPy's promotion, as Python reads them; cJSON keeps no number text,
 * so after the parse each such number is marked in its type
 * (CK_PLAN_JSON_FLOAT, a bit cJSON leaves alone).  The text's numbers and
 * the tree's, walked depth first, come in the same order. */
typedef struct float_marks {
    const char *c; /* the text, at the next number to find */
} float_marks;

/* 1 if the text's next number (from m->c) is written as a float; -1 if
 * there is none. */
static int next_float_text(float_marks *m)
{
    const char *c = m->c;

    for (; *c; c++) {
        if (*c == '"') {
            for (c++; *c && *c != '"';)
                c += c[0] == '\\' && c[1] ? 2 : 1;
            if (!*c)
                break;
        } else if (*c == '-' || (*c >= '0' && *c <= '9')) {
            int fl = 0;
            for (; *c == '-' || *c == '+' || *c == '.' || *c == 'e' ||
                   *c == 'E' || (*c >= '0' && *c <= '9');
                 c++)
                fl |= *c == '.' || *c == 'e' || *c == 'E';
            m->c = c;
            return fl;
        }
    }
    m->c = c;
    return -1;
}

static void mark_floats(cJSON *v, float_marks *m)
{
    for (; v; v = v->next) {
        if (cJSON_IsNumber(v) && next_float_text(m) == 1)
            v->type |= CK_PLAN_JSON_FLOAT;
        mark_floats(v->child, m);
    }
}

/* cJSON decodes "\u0000" into a NUL that ends its C string, so "sum\u0000zz"
 * ran as sum and "a.h5\u0000zz:/x" read a.h5: a string (key or value)
 * holding one is refused, naming where it is.  Walks the text's strings
 * alongside the tree's keys and string values, which come in the same
 * order (as mark_floats does for numbers). */
static int next_string_has_nul(const char **c)
{
    const char *t = strchr(*c, '"');
    int nul = 0;

    if (!t) /* cannot happen: the tree came from this text */
        return 0;
    for (t++; *t && *t != '"'; t++)
        if (t[0] == '\\' && t[1]) {
            nul |= t[1] == 'u' && strncmp(t + 2, "0000", 4) == 0;
            t++;
        }
    *c = *t ? t + 1 : t;
    return nul;
}

static ck_code nul_strings(const char *path, const cJSON *v, const char *where,
                           const char **c, ck_err *err)
{
    char sub[160];
    int k = 0;

    for (; v; v = v->next) {
        if (v->string) /* an object's member: its key comes first */
            snprintf(sub, sizeof sub, "%s%s%.60s", where, where[0] ? "." : "",
                     v->string);
        else
            snprintf(sub, sizeof sub, "%s[%d]", where, k++);
        if (v->string && next_string_has_nul(c))
            return ck_plan_bad(err, path, where[0] ? where : "top level",
                               "key \"%.60s\\u0000...\": a string may not "
                               "hold \\u0000 (NUL)",
                               v->string);
        if (cJSON_IsString(v) && next_string_has_nul(c))
            return ck_plan_bad(err, path, sub,
                               "\"%.60s\\u0000...\": a string may not hold "
                               "\\u0000 (NUL)",
                               v->valuestring);
        CK_TRY(nul_strings(path, v->child, sub, c, err));
    }
    return CK_OK;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string,
                  (*(const cJSON *const *)b)->string);
}

/* A key given twice in one object (cJSON keeps both and finds the first:
 * the second would be ignored silently, as an unknown key is not) is an
 * error naming where it is, e.g. "steps[2]: \"op\" given twice". */
static ck_code dup_keys(const char *path, const cJSON *j, const char *where,
                        ck_err *err)
{
    char sub[160];
    const cJSON *it;
    int n = cJSON_IsObject(j) ? cJSON_GetArraySize(j) : 0, k = 0;

    if (n > 1) {
        const cJSON **v = malloc(sizeof *v * (size_t)n);
        if (!v)
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        cJSON_ArrayForEach(it, j) v[k++] = it;
        qsort(v, (size_t)n, sizeof *v, key_cmp);
        for (k = 1; k < n && strcmp(v[k - 1]->string, v[k]->string) != 0; k++)
            ;
        if (k < n)
            snprintf(sub, sizeof sub, "\"%.60s\" given twice", v[k]->string);
        free(v);
        if (k < n)
            return where[0] ? ck_plan_bad(err, path, where, "%s", sub)
                            : ck_err_set(err, CK_EUSAGE, "%s: %s", path, sub);
    }
    if (!cJSON_IsObject(j) && !cJSON_IsArray(j))
        return CK_OK;
    k = 0;
    cJSON_ArrayForEach(it, j)
    {
        if (cJSON_IsArray(j))
            snprintf(sub, sizeof sub, "%s[%d]", where, k++);
        else
            snprintf(sub, sizeof sub, "%s%s%.60s", where, where[0] ? "." : "",
                     it->string);
        CK_TRY(dup_keys(path, it, sub, err));
    }
    return CK_OK;
}

ck_code ck_plan_parse(const char *path, const char *text, unsigned flags,
                      int64_t memory, ck_plan **out, ck_err *err)
{
    const char *end = NULL;
    cJSON *root;
    ck_code rc;
    size_t deep = ck_json_too_deep(text, strlen(text));
    long values, nsteps;

    if (deep != (size_t)-1) {
        int line, col;
        ck_json_pos(text, deep, &line, &col);
        return ck_err_set(err, CK_EUSAGE,
                          "%s: line %d column %d: JSON nested deeper than %d "
                          "levels (the limit)",
                          path, line, col, CK_JSON_DEPTH_MAX);
    }
    raw_counts(text, &values, &nsteps);
    if (nsteps > CK_MAX_NODES)
        return ck_plan_bad(err, path, "steps", "more than %d steps (the limit)",
                           CK_MAX_NODES);
    if (values > CK_PLAN_VALUES_MAX)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: more than %d JSON values (the limit)", path,
                          CK_PLAN_VALUES_MAX);
    if (!(root = cJSON_ParseWithOpts(text, &end, 1))) {
        int line = 1, col = 1;
        for (const char *c = text; end && c < end; c++) {
            if (*c == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        return ck_err_set(err, CK_EUSAGE, "%s: line %d column %d: invalid JSON",
                          path, line, col);
    }
    float_marks fm = {text};
    mark_floats(root, &fm);
    const char *sc = text;
    rc = nul_strings(path, root->child, "", &sc, err);
    if (rc == CK_OK)
        rc = dup_keys(path, root, "", err);
    if (rc == CK_OK)
        rc = ck_plan_build(path, root, flags, memory, out, err);
    cJSON_Delete(root);
    return rc;
}

ck_code ck_plan_build(const char *path, const cJSON *root, unsigned flags,
                      int64_t memory, ck_plan **out, ck_err *err)
{
    const cJSON *inputs, *steps, *outputs, *it;
    const char *ow;
    ck_plan *p;
    ck_code rc = CK_OK;

    if (!(p = calloc(1, sizeof *p)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    p->onestep = (flags & CK_PLAN_ONESTEP) != 0;
    if (p->onestep)
        snprintf(p->command, sizeof p->command, "%s", path);
    p->raw = (flags & CK_PLAN_RAW) != 0;
    p->memory = memory;
    p->text = cJSON_PrintUnformatted(root);
    inputs = cJSON_GetObjectItem(root, "inputs");
    steps = cJSON_GetObjectItem(root, "steps");
    outputs = cJSON_GetObjectItem(root, "outputs");
    if (!cJSON_IsObject(root))
        rc = ck_plan_bad(err, path, "top level", "expected an object");
    else if (inputs && !cJSON_IsObject(inputs))
        rc = ck_plan_bad(err, path, "inputs",
                         "expected {\"name\": \"PATH[:DATASET]\"}");
    else if (steps && !cJSON_IsArray(steps))
        rc = ck_plan_bad(err, path, "steps", "expected a list");
    else if (outputs && !cJSON_IsObject(outputs))
        rc = ck_plan_bad(err, path, "outputs",
                         "expected {\"step\": \"PATH[:DATASET]\"}");
    else if (cJSON_GetObjectItem(root, "print") &&
             !cJSON_IsArray(cJSON_GetObjectItem(root, "print")))
        rc = ck_plan_bad(err, path, "print", "expected a list of step names");
    else if (!(outputs && outputs->child) &&
             !cJSON_GetArraySize(cJSON_GetObjectItem(root, "print")))
        rc = ck_plan_bad(
            err, path, "outputs",
            "a pipeline needs at least one output or print: "
            "{\"step\": \"PATH[:DATASET]\"} or \"print\": [\"step\"]");
    static const char *const top[] = {"inputs", "steps",  "outputs",
                                      "print",  "decode", "backend"};
    for (it = rc == CK_OK ? root->child : NULL; it && rc == CK_OK;
         it = it->next) {
        int known = 0;
        for (size_t k = 0; k < sizeof top / sizeof top[0]; k++)
            known |= strcmp(it->string, top[k]) == 0;
        if (!known)
            rc = ck_plan_bad(err, path, "top level",
                             "unknown key \"%.40s\" (a pipeline takes "
                             "\"inputs\", \"steps\", \"outputs\", "
                             "\"print\", \"decode\" and \"backend\")",
                             it->string);
    }
    snprintf(p->backend, sizeof p->backend, "auto");
    if (rc == CK_OK && (it = cJSON_GetObjectItem(root, "decode"))) {
        if (!cJSON_IsBool(it))
            rc = ck_plan_bad(err, path, "decode", "expected true or false");
        else if (cJSON_IsFalse(it))
            p->raw = 1;
    }
    if (rc == CK_OK && (it = cJSON_GetObjectItem(root, "backend"))) {
        const char *b = cJSON_GetStringValue(it);
        if (!b || (strcmp(b, "auto") && strcmp(b, "cpu") && strcmp(b, "cuda")))
            rc = ck_plan_bad(err, path, "backend",
                             "expected \"auto\", \"cpu\" or "
                             "\"cuda\"");
        else
            snprintf(p->backend, sizeof p->backend, "%s", b);
    }
    for (it = inputs ? inputs->child : NULL; rc == CK_OK && it; it = it->next)
        rc = parse_input(p, path, it, err);
    if (rc == CK_OK && steps)
        rc = parse_steps(p, path, steps, err);
    for (it = outputs ? outputs->child : NULL; rc == CK_OK && it;
         it = it->next) {
        ck_output *o = &p->out[p->nout];
        if (p->onestep)
            snprintf(o->where, sizeof o->where, "%.47s", path);
        else
            snprintf(o->where, sizeof o->where, "outputs.%.30s", it->string);
        ow = p->onestep ? "" : o->where; /* ck_plan_bad() names the command */
        if ((o->node = find(p, it->string)) < 0)
            rc = ck_plan_bad(err, path, ow, "no step named '%s'", it->string);
        else if (p->node[o->node].kind == CK_NODE_SVD)
            rc = ck_plan_bad(
                err, path, ow,
                "an svd step has three results: write '%s.U', '%s.S' "
                "and '%s.Vt'",
                it->string, it->string, it->string);
        else if (p->node[o->node].kind == CK_NODE_GLM)
            rc = ck_plan_bad(
                err, path, ow,
                "a glm_fit step has two results: write '%s.coef' and "
                "'%s.intercept'",
                it->string, it->string);
        else
            rc = parse_output(path, ow, it, o, err);
        for (int k = 0; rc == CK_OK && k < p->nout; k++)
            if (strcmp(p->out[k].target, o->target) == 0)
                rc = ck_plan_bad(err, path, ow, "%s is also the target of %s",
                                 o->target, p->out[k].where);
        p->nout++;
    }
    const cJSON *pr = cJSON_GetObjectItem(root, "print");
    if (rc != CK_OK)
        pr = NULL;
    cJSON_ArrayForEach(it, pr)
    {
        char w[48] = "";
        int k;
        if (!p->onestep)
            snprintf(w, sizeof w, "print[%d]", p->nprint);
        if (!cJSON_IsString(it) || (k = find(p, it->valuestring)) < 0) {
            rc = ck_plan_bad(err, path, w, "no step named '%s'",
                             cJSON_IsString(it) ? it->valuestring : "?");
            break;
        }
        const ck_node *nd = &p->node[k];
        int64_t nel = 1;
        for (int d = 0; d < nd->ndim; d++)
            nel *= nd->shape[d];
        if (nd->kind == CK_NODE_SVD || nd->kind == CK_NODE_GLM) {
            rc = ck_plan_bad(
                err, path, w,
                nd->kind == CK_NODE_SVD
                    ? "an svd step has three results: print '%s.S' "
                      "(or a small '%s.U' or '%s.Vt')"
                    : "a glm_fit step has two results: print '%s.coef' "
                      "and '%s.intercept'",
                nd->name, nd->name, nd->name);
            break;
        }
        /* a one-step reduction or histogram prints what it was asked
         * for, however long; a pipeline's print list has the limit */
        if ((!ck_plan_prints_whole(nd) || !p->onestep) && nel > CK_PRINT_MAX) {
            rc = ck_plan_bad(err, path, w,
                             "'%s' has %" PRId64
                             " elements, too many to print (at "
                             "most %d); write it to an output instead",
                             nd->name, nel, CK_PRINT_MAX);
            break;
        }
        p->print[p->nprint++] = k;
    }
    for (int a = 0; rc == CK_OK && a < p->nout; a++)
        for (int b = 0; rc == CK_OK && b < p->n; b++)
            if (p->node[b].kind == CK_NODE_INPUT &&
                strcmp(p->out[a].target, p->node[b].source) == 0)
                rc = ck_plan_bad(
                    err, path, p->out[a].where,
                    "'%s' is also an input; chunkctl never writes into "
                    "its input",
                    p->out[a].target);
    for (int k = 0; k < p->n; k++)
        p->order[k] = k; /* parse_steps created operands first */
    if (rc != CK_OK) {
        ck_plan_free(p);
        return rc;
    }
    *out = p;
    return CK_OK;
}

/* ck_plan_dup copies [0, node + n), [nout, out + nout) and [order, end) */
_Static_assert(offsetof(ck_plan, node) < offsetof(ck_plan, nout) &&
                   offsetof(ck_plan, nout) < offsetof(ck_plan, out) &&
                   offsetof(ck_plan, out) < offsetof(ck_plan, order),
               "ck_plan_dup: node[] and out[] must keep their places");

ck_plan *ck_plan_dup(const ck_plan *p)
{
    /* calloc leaves a block this large in untouched, zero pages */
    ck_plan *q = calloc(1, sizeof *q);
    const char *from = (const char *)p;
    char *to = (char *)q;
    size_t at, end;

    if (!q)
        return NULL;
    end = offsetof(ck_plan, node) + (size_t)p->n * sizeof p->node[0];
    memcpy(to, from, end);
    at = offsetof(ck_plan, nout);
    end = offsetof(ck_plan, out) + (size_t)p->nout * sizeof p->out[0];
    memcpy(to + at, from + at, end - at);
    at = offsetof(ck_plan, order);
    memcpy(to + at, from + at, sizeof *p - at);
    return q;
}

void ck_plan_free(ck_plan *p)
{
    if (!p)
        return;
    free(p->text);
    for (int i = 0; i < p->n; i++) {
        free(p->node[i].edges);
        free(p->node[i].edges2);
        free(p->node[i].vals);
        free(p->node[i].idx);
        ck_kernel_close(p->node[i].kernel);
    }
    free(p);
}

ck_code ck_plan_load(const char *path, unsigned flags, int64_t memory,
                     ck_plan **out, ck_err *err)
{
    struct stat st;
    char *text;
    ssize_t got;
    ck_code rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return ck_err_set(err, CK_EIO, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return ck_err_set(err, CK_EUSAGE, "%s: a folder, not a pipeline file",
                          path);
    }
    if (fstat(fd, &st) != 0 || st.st_size > CK_PLAN_FILE_MAX) {
        close(fd);
        return ck_err_set(err, CK_EUSAGE,
                          "%s: not a pipeline file (%lld bytes, over the "
                          "limit of %d MiB)",
                          path, (long long)st.st_size, CK_PLAN_FILE_MAX >> 20);
    }
    if (!(text = malloc((size_t)st.st_size + 1))) {
        close(fd);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    got = read(fd, text, (size_t)st.st_size);
    close(fd);
    if (got != st.st_size) {
        free(text);
        return ck_err_set(err, CK_EIO, "%s: short read", path);
    }
    text[got] = '\0';
    rc = ck_plan_parse(path, text, flags, memory, out, err);
    free(text);
    return rc;
}

/* backend's table, or NULL for the CPU's or one that does not load */
static const ck_backend *table_of(const char *backend)
{
    const ck_backend *t;
    ck_err e = {0};

    return strcmp(backend, "cpu") != 0 && ck_be_find(backend, &t, &e) == CK_OK
               ? t
               : NULL;
}

/* An svd result's streamed factor, made block by block with gemm: U of
 * a tall A, Vt of a wide one (the other is held in memory); -1 for any
 * other result. */
static int streamed_part(const ck_plan *p, const ck_node *n)
{
    const ck_node *s = &p->node[n->arg[0]], *a;

    if (s->kind != CK_NODE_SVD)
        return -1;
    a = &p->node[s->arg[0]];
    return a->shape[0] >= a->shape[1] ? CK_PART_U : CK_PART_VT;
}

int ck_plan_device_kernels(const char *backend)
{
    const ck_backend *t = table_of(backend);
    return t && t->kernel_load;
}

const char *ck_node_label(const ck_node *n)
{
    return n->kind == CK_NODE_INPUT ? n->source : n->name;
}

const char *ck_plan_runs_on(const ck_plan *p, const ck_node *n,
                            const char *backend)
{
    unsigned bit = strcmp(backend, "cuda") == 0 ? CK_OPB_CUDA : CK_OPB_CPU;

    if (n->kind == CK_NODE_INPUT)
        return "host"; /* read and decoded there */
    if (bit == CK_OPB_CPU)
        return "cpu";
    if (n->kind == CK_NODE_KERNEL && n->source[0] &&
        ck_plan_device_kernels(backend))
        return backend; /* its CUDA C version */
    if (ck_optab_kind(n->kind)->backends & bit)
        return backend;
    /* the linear algebra's blocks go to the backend's gemm, syrk, QR,
     * SVD and Cholesky, when it has them */
    if (n->kind == CK_NODE_MATMUL || n->kind == CK_NODE_SVD ||
        n->kind == CK_NODE_GLM || n->kind == CK_NODE_PREDICT ||
        n->kind == CK_NODE_CONTRACT ||
        (n->kind == CK_NODE_PART && n->part == streamed_part(p, n))) {
        const ck_backend *t = table_of(backend);
        if (t && t->gemm)
            return "cpu, its BLAS and LAPACK calls on cuda";
    }
    return "cpu (fallback)";
}

void ck_plan_print(const ck_plan *p, int threads, int64_t memory,
                   const char *backend, FILE *f)
{
    char sh[128], ch[128], rd[32], wr[32], pk[32];
    double peak = 0;

    fprintf(f, "%-12s %-12s %-20s %-8s %-18s %8s %10s %10s  %s\n", "step", "op",
            "shape", "dtype", "chunks", "tasks", "read", "write", "on");
    for (int j = 0; j < p->n; j++) {
        const ck_node *n = &p->node[p->order[j]];
        ck_grid g;
        double in_bytes = 0, out_bytes = 0, chunk_bytes;
        int64_t tasks = 0;
        int written = 0;

        for (int k = 0; k < p->nout; k++)
            written |= p->out[k].node == p->order[j];
        if (ck_grid_init(&g, n->ndim, n->shape, n->chunks,
                         ck_dtype_size(n->dtype), NULL) == CK_OK)
            tasks = g.total_chunks;
        if (n->kind == CK_NODE_INPUT)
            in_bytes = (double)g.nelem * (double)ck_dtype_size(n->dtype);
        if (ck_optab_kind(n->kind)->flags & CK_OP_FOLD) {
            const ck_node *m = &p->node[n->arg[0]];
            ck_grid mg;
            if (ck_grid_init(&mg, m->ndim, m->shape, m->chunks,
                             ck_dtype_size(m->dtype), NULL) == CK_OK)
                tasks = mg.total_chunks;
        }
        if (written)
            out_bytes = (double)g.nelem * (double)ck_dtype_size(n->dtype);
        chunk_bytes =
            (double)g.chunk_nelem * (double)ck_dtype_size(n->dtype) * 2;
        if (chunk_bytes > peak)
            peak = chunk_bytes;
        fprintf(f, "%-12s %-12s %-20s %-8s %-18s %8lld %10s %10s  %s\n",
                n->name, ck_optab_label(n),
                ck_plan_shape_str(n->ndim, n->shape, sh, sizeof sh),
                ck_dtype_name(n->dtype),
                ck_plan_shape_str(n->ndim, n->chunks, ch, sizeof ch),
                (long long)tasks,
                in_bytes ? ck_size_str(in_bytes, rd, sizeof rd) : "-",
                out_bytes ? ck_size_str(out_bytes, wr, sizeof wr) : "-",
                ck_plan_runs_on(p, n, backend));
    }
    for (int k = 0; k < p->nout; k++)
        fprintf(f, "output %s -> %s\n", p->node[p->out[k].node].name,
                p->out[k].target);
    /* The executor runs as many workers as --memory holds (at least one;
     * a step that needs more than the budget stops the run), after the
     * charge for chunkctl itself. */
    double base = (double)CK_BASE_OVERHEAD;
    if (memory > 0 && peak > 0 && base + peak * threads > (double)memory) {
        int fit = (int)(((double)memory - base) / peak);
        threads = fit < 1 ? 1 : fit;
    }
    fprintf(f, "estimated peak memory: %s (%d worker%s)\n",
            ck_size_str(base + peak * threads, pk, sizeof pk), threads,
            threads == 1 ? "" : "s");
}

void ck_plan_print_ranks(const ck_plan *p, int nranks, FILE *f)
{
    char sz[32], what[64];

    int nfold = 0, steps = 0;

    while ((1 << steps) < nranks)
        steps++;
    fprintf(f,
            "mpi: %d ranks; each output's chunks are split (a step computed "
            "per chunk, matmul and stencils among them, is computed where its "
            "chunks are), and so are the chunks reductions, histograms and "
            "masks fold, the row tasks of svd and glm_fit, the chunks "
            "unique and bincount count, a quantile's passes (or its blocks "
            "of output elements) and the chains of a scan's carries (by "
            "blocks across its axis); a weighted bincount's ranks read their "
            "boxes side by side and add them in turn\n",
            nranks);
    for (int j = 0; j < p->n; j++) {
        const ck_node *n = &p->node[p->order[j]];
        if (n->kind != CK_NODE_REDUCE && n->kind != CK_NODE_HIST &&
            n->kind != CK_NODE_HIST2D && n->kind != CK_NODE_MASK)
            continue;
        int64_t total, mine;
        if (ck_exec_fold_chunks(p, p->order[j], 0, nranks, &total, &mine))
            continue;
        nfold++;
        fprintf(f, "fold %s (%s): %lld %s, per rank", n->name,
                ck_optab_label(n), (long long)total,
                n->kind == CK_NODE_MASK ? "boxes" : "chunks");
        for (int r = 0; r < nranks && r < 16; r++) {
            ck_exec_fold_chunks(p, p->order[j], r, nranks, &total, &mine);
            fprintf(f, "%s%lld", r ? "/" : " ", (long long)mine);
        }
        fprintf(f, "%s\n", nranks > 16 ? "/..." : "");
    }
    /* svd and glm_fit: each rank's row tasks; their partial results meet
     * along ck_tree (once, or once a pass) */
    for (int j = 0; j < p->n; j++) {
        const ck_node *n = &p->node[p->order[j]];
        ck_rowtasks tk;
        int64_t part, t0, t1, lo, hi, x;
        if (!ck_rowtasks_of_node(p, n, &tk, &part))
            continue;
        fprintf(f, "%s %s (%s): %lld row tasks of up to %lld rows, per rank",
                n->kind == CK_NODE_SVD ? "svd" : "glm_fit", n->name,
                n->kind == CK_NODE_SVD
                    ? (n->randomized ? "randomized: each pass's sketches meet "
                                       "along the tree; then every rank gets "
                                       "all rows of L p"
                                     : "each rank's R factors meet along the "
                                       "tree")
                    : "every pass's loss, gradient and Hessian meet along "
                      "the tree",
                (long long)tk.n, (long long)tk.sub);
        for (int r = 0; r < nranks && r < 16; r++) {
            ck_rowtasks_of(&tk, r, nranks, &t0, &t1);
            lo = hi = 0;
            if (t1 > t0) {
                ck_rowtask_rows(&tk, t0, &lo, &x);
                ck_rowtask_rows(&tk, t1 - 1, &x, &hi);
            }
            fprintf(f, "%s%lld (%lld rows)", r ? "/" : " ",
                    (long long)(t1 - t0), (long long)(hi - lo));
        }
        fprintf(f, "%s\n", nranks > 16 ? "/..." : "");
        fprintf(f,
                "  a rank sends at most %d partials of %s each time (%d "
                "steps up the tree), and receives the result\n",
                ck_tree_max_parts(tk.n),
                ck_size_str((double)part * 8, sz, sizeof sz), steps);
    }
    /* quantiles, scans, unique and bincount: the chunks each rank reads */
    for (int j = 0; j < p->n; j++) {
        const ck_node *n = &p->node[p->order[j]];
        const ck_node *m = n->nargs > 0 ? &p->node[n->arg[0]] : NULL;
        int64_t items = 1, along = 1;
        int weighted = 0;
        ck_grid g;
        if (!m || (n->kind != CK_NODE_QUANTILE && n->kind != CK_NODE_SCAN &&
                   n->kind != CK_NODE_COUNT))
            continue;
        if (n->kind == CK_NODE_SCAN) {
            for (int d = 0; d < n->ndim; d++) {
                int64_t c = n->chunks[d] < 1 ? 1 : n->chunks[d];
                int64_t nb = n->shape[d] > 0 ? (n->shape[d] + c - 1) / c : 0;
                if (d == n->axis)
                    along = nb;
                else
                    items *= nb;
            }
            fprintf(f,
                    "scan %s: %lld chains of carries across axis %d (%lld "
                    "chunks along it), per rank",
                    n->name, (long long)items, n->axis, (long long)along);
        } else {
            if (ck_grid_init(&g, m->ndim, m->shape, m->chunks,
                             ck_dtype_size(m->dtype), NULL) != CK_OK)
                continue;
            items = g.total_chunks;
            weighted = n->kind == CK_NODE_COUNT && n->sub != CK_COUNT_UNIQUE &&
                       n->weights >= 0;
            if (weighted) {
                int64_t ch[CK_MAX_DIMS];
                ck_count_boxes(m, 1, ch);
                if (ck_grid_init(&g, m->ndim, m->shape, ch,
                                 ck_dtype_size(m->dtype), NULL) != CK_OK)
                    continue;
                items = g.total_chunks;
            }
            fprintf(f,
                    weighted ? "%s %s: %lld box%s read (runs in C order "
                               "of about a chunk), per rank"
                             : "%s %s: %lld chunk%s read, per rank",
                    n->kind == CK_NODE_QUANTILE ? "quantile"
                    : n->sub == CK_COUNT_UNIQUE ? "unique"
                                                : "bincount",
                    n->name, (long long)items,
                    items == 1 ? ""
                    : weighted ? "es"
                               : "s");
        }
        for (int r = 0; r < nranks && r < 16; r++) {
            int64_t lo, hi;
            ck_comm_split(items, r, nranks, &lo, &hi);
            fprintf(f, "%s%lld", r ? "/" : " ", (long long)(hi - lo));
        }
        fprintf(f, "%s\n", nranks > 16 ? "/..." : "");
        fprintf(f, "  %s\n",
                n->kind == CK_NODE_SCAN
                    ? "each rank broadcasts the running values of its chains "
                      "at every chunk boundary"
                : n->kind == CK_NODE_QUANTILE
                    ? "values beyond --memory: each refining pass's counts "
                      "(at most 512 KiB) are summed up the tree and the "
                      "values left go to rank 0; values that fit: ranks "
                      "select their own blocks of output elements and "
                      "broadcast them"
                : n->sub == CK_COUNT_UNIQUE
                    ? "sorted values (16 B each, with counts) merge up a "
                      "binary tree of ranks; rank 0 broadcasts the set"
                : weighted
                    ? "ranks read their boxes side by side (holding up to "
                      "half of --memory until their turn) and add them in "
                      "turn, NumPy's order: the bins (8 B each) go rank to "
                      "rank, then from the last to all"
                    : "counts (8 B per bin) are summed up the tree and "
                      "broadcast");
    }
    for (int k = 0; k < p->nout; k++) {
        const ck_node *n = &p->node[p->out[k].node];
        int64_t chunks[CK_MAX_DIMS];
        size_t esz = ck_dtype_size(n->dtype);
        ck_grid g;

        /* as write_output clips them */
        for (int d = 0; d < n->ndim; d++)
            chunks[d] = n->chunks[d] > n->shape[d]
                            ? (n->shape[d] > 0 ? n->shape[d] : 1)
                            : (n->chunks[d] < 1 ? 1 : n->chunks[d]);
        if (ck_grid_init(&g, n->ndim, n->shape, chunks, esz, NULL) != CK_OK)
            continue;
        fprintf(f, "output %s -> %s: %lld chunks\n", n->name, p->out[k].target,
                (long long)g.total_chunks);
        for (int r = 0; r < nranks; r++) {
            int64_t lo, hi;
            double bytes = 0;
            ck_chunk c;
            ck_comm_split(g.total_chunks, r, nranks, &lo, &hi);
            for (int64_t i = lo; i < hi; i++) {
                ck_grid_chunk(&g, i, &c);
                double ne = 1;
                for (int d = 0; d < n->ndim; d++)
                    ne *= (double)c.shape[d];
                bytes += ne * (double)esz;
            }
            if (lo < hi)
                snprintf(what, sizeof what, "chunks %lld-%lld (%lld)",
                         (long long)lo, (long long)hi - 1,
                         (long long)(hi - lo));
            else
                snprintf(what, sizeof what, "no chunk");
            fprintf(f, "  rank %-4d %-28s %10s\n", r, what,
                    bytes > 0 ? ck_size_str(bytes, sz, sizeof sz) : "-");
        }
    }
    /* What pipelines/stream.c and io/store.c send: per output, every rank
     * agrees twice (4 bytes each way) and sends rank 0 where its part is
     * (two paths); per output store, one agreement on the commit; one at
     * the end.  The chunks themselves go through the file system. */
    int nstores = 0;
    for (int k = 0; k < p->nout; k++) {
        char pk[PATH_MAX], pj[PATH_MAX], nk[512], nj[512];
        int seen = 0;
        if (ck_target_split(p->out[k].target, pk, sizeof pk, nk, sizeof nk,
                            NULL) != CK_OK)
            continue;
        for (int j = 0; j < k && !seen; j++)
            seen = ck_target_split(p->out[j].target, pj, sizeof pj, nj,
                                   sizeof nj, NULL) == CK_OK &&
                   strcmp(pk, pj) == 0;
        nstores += !seen;
    }
    fprintf(f,
            "communication per rank: %d agreements of 4 B each way; ranks "
            "1-%d each send rank 0 %s per output (where their part is); "
            "chunk data moves through the file system, not MPI\n",
            2 * p->nout + nstores + 1, nranks - 1,
            ck_size_str(2.0 * PATH_MAX, sz, sizeof sz));
    if (nfold)
        fprintf(f,
                "each fold's partial results meet up a binary tree of ranks "
                "in %d steps: a rank sends at most 2 log2(chunks) + 2 partials "
                "per output box (a box: the elements the same chunks fold "
                "into), and every rank receives the result\n",
                steps);
    fprintf(f, "memory per rank: the estimate above, and what MPI itself "
               "takes at the start (measured then, and charged to --memory "
               "with chunkctl's own)\n");
}

void ck_plan_dot(const ck_plan *p, FILE *f)
{
    char sh[128];

    fprintf(f, "digraph pipeline {\n  rankdir=LR;\n");
    for (int i = 0; i < p->n; i++) {
        const ck_node *n = &p->node[i];
        fprintf(f, "  \"%s\" [label=\"%s\\n%s %s %s\"%s];\n", n->name, n->name,
                ck_optab_label(n),
                ck_coords_str(n->ndim, n->shape, sh, sizeof sh),
                ck_dtype_name(n->dtype),
                n->kind == CK_NODE_INPUT ? ", shape=box" : "");
        for (int k = 0; k < n->nargs; k++)
            if (n->arg[k] >= 0)
                fprintf(f, "  \"%s\" -> \"%s\";\n", p->node[n->arg[k]].name,
                        n->name);
        if (n->weights >= 0)
            fprintf(f, "  \"%s\" -> \"%s\" [label=weights];\n",
                    p->node[n->weights].name, n->name);
    }
    for (int k = 0; k < p->nout; k++)
        fprintf(f,
                "  \"out%d\" [label=\"%s\", shape=note];\n  \"%s\" -> "
                "\"out%d\";\n",
                k, p->out[k].target, p->node[p->out[k].node].name, k);
    fprintf(f, "}\n");
}

int ck_plan_prints(const char *name)
{
    int sub;
    const ck_op_def *def = ck_optab_find(name, &sub);

    return def && (def->flags & CK_OP_PRINTS);
}

int ck_plan_prints_whole(const ck_node *n)
{
    return (ck_optab_kind(n->kind)->flags & CK_OP_PRINTS) != 0;
}

int ck_plan_prints_lines(const ck_node *n)
{
    /* a fit's vectors are listed like a reduction's values; its factor
     * matrices are arrays like any other */
    if (n->kind == CK_NODE_PART)
        return n->part != CK_PART_U && n->part != CK_PART_VT;
    return ck_plan_prints_whole(n);
}

int ck_plan_op_known(const char *name)
{
    int sub;
    const ck_op_def *def = ck_optab_find(name, &sub);

    return def && def->parse;
}

void ck_plan_op_usage(FILE *f, const char *name)
{
    static const char *const arg[] = {"X", "Y", "Z"};
    int sub;
    const ck_op_def *d = ck_optab_find(name, &sub);

    if (!d || !d->parse)
        return;
    int lo = d->nmembers ? d->member_arity(sub) : d->min_args;
    int hi = d->nmembers ? lo : d->max_args;
    fprintf(f, "usage: chunkctl %s", name);
    for (int k = 0; k < lo && k < 3; k++)
        fprintf(f, " %s", arg[k]);
    if (lo > 3)
        fprintf(f, " ...");
    if (hi < 0)
        fprintf(f, " [%s ...]", lo ? arg[lo < 3 ? lo - 1 : 2] : "X");
    else
        for (int k = lo; k < hi && k < 3; k++)
            fprintf(f, " [%s]", arg[k]);
    fprintf(f, " [--KEY VALUE ...] %s\n\n",
            d->flags & CK_OP_PRINTS ? "[-o DST]" : "-o DST");
    if (d->nmembers)
        fprintf(f, "%s (%s): %s.\n", name, d->name, d->help);
    else
        fprintf(f, "%s: %s.\n", name, d->help);
}

void ck_plan_op_examples(FILE *f, const char *name)
{
    int sub;
    const ck_op_def *d = ck_optab_find(name, &sub);
    const char *e = !d                  ? NULL
                    : d->member_example ? d->member_example(sub)
                                        : d->example;

    if (!e)
        return;
    fputs("examples:\n  chunkctl ", f);
    for (; *e; e++)
        if (*e == '@')
            fputs(name, f);
        else if (*e == '\n')
            fputs("\n  chunkctl ", f);
        else
            fputc(*e, f);
    fputc('\n', f);
}

void ck_plan_ops_help(FILE *f)
{
    for (int k = 0; k < ck_optab_rows(); k++) {
        const ck_op_def *d = ck_optab_row(k);
        int col = 16;
        if (!d->parse)
            continue; /* not a step op */
        if (!d->nmembers) {
            fprintf(f, "  %-13s %s\n", d->name, d->help);
            continue;
        }
        /* a family: its label, then its members' names, wrapped */
        fprintf(f, "  %s:%*s%s\n%16s", d->name, 13 - (int)strlen(d->name), "",
                d->help, "");
        for (int m = 0; m < d->nmembers; m++) {
            const char *nm = d->member(m);
            if (m && col + (int)strlen(nm) + 1 > 79) {
                fprintf(f, "\n%16s", "");
                col = 16;
            } else if (m) {
                col += fprintf(f, " ");
            }
            col += fprintf(f, "%s", nm);
        }
        fputc('\n', f);
    }
}
