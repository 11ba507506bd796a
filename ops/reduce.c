/*
 * ops/reduce.c - reductions: names, NumPy's result dtypes, and the partial
 * states (backends/red_state.h) that blocks are folded into: their empty
 * value, how two are combined and how they become results.  Folding a
 * block is the backend's job (backends/cpu/reduce.c); choosing blocks and
 * the order of combination is the executor's.
 *
 * argmin/argmax index the reduced axes in C order over the whole array:
 * with every axis reduced that is NumPy's flat index, with one axis the
 * index along it.  NumPy refuses argmin/argmax over several but not all
 * axes; these functions cannot see the axes, so the executor must refuse
 * such a plan (CK_EUSAGE) before folding anything.
 */
#include <math.h>
#include <string.h>

#include "backends/red_state.h"
#include "ops/reduce.h"

static const char *const names[CK_RED_COUNT] = {
    [CK_RED_SUM] = "sum",
    [CK_RED_PROD] = "prod",
    [CK_RED_MIN] = "min",
    [CK_RED_MAX] = "max",
    [CK_RED_MEAN] = "mean",
    [CK_RED_VAR] = "var",
    [CK_RED_STD] = "std",
    [CK_RED_ARGMIN] = "argmin",
    [CK_RED_ARGMAX] = "argmax",
    [CK_RED_COUNT_NONZERO] = "count_nonzero",
    [CK_RED_ANY] = "any",
    [CK_RED_ALL] = "all",
    [CK_RED_NANSUM] = "nansum",
    [CK_RED_NANMEAN] = "nanmean",
    [CK_RED_NANMIN] = "nanmin",
    [CK_RED_NANMAX] = "nanmax",
    [CK_RED_NANVAR] = "nanvar",
    [CK_RED_NANSTD] = "nanstd",
    [CK_RED_NANPROD] = "nanprod",
    [CK_RED_NANARGMIN] = "nanargmin",
    [CK_RED_NANARGMAX] = "nanargmax",
    [CK_RED_NANCOUNT_NONZERO] = "nancount_nonzero",
};

const char *ck_red_name(ck_red_op op)
{
    if ((int)op < 0 || op >= CK_RED_COUNT)
        return NULL;
    return names[op];
}

int ck_red_lookup(const char *name, ck_red_op *op)
{
    for (int i = 0; i < CK_RED_COUNT; i++) {
        if (name && strcmp(name, names[i]) == 0) {
            *op = (ck_red_op)i;
            return 1;
        }
    }
    return 0;
}

ck_dtype ck_red_result_dtype(ck_red_op op, ck_dtype in)
{
    if ((int)in <= CK_DT_INVALID || in >= CK_DT_COUNT)
        return CK_DT_INVALID;
    int is_float = ck_dtype_is_float(in);

    switch (op) {
    case CK_RED_SUM:
    case CK_RED_PROD:
    case CK_RED_NANSUM:
    case CK_RED_NANPROD:
        if (is_float)
            return in;
        return ck_dtype_is_signed(in) || in == CK_BOOL ? CK_I64 : CK_U64;
    case CK_RED_MIN:
    case CK_RED_MAX:
    case CK_RED_NANMIN:
    case CK_RED_NANMAX:
        return in;
    case CK_RED_MEAN:
    case CK_RED_VAR:
    case CK_RED_STD:
    case CK_RED_NANMEAN:
    case CK_RED_NANVAR:
    case CK_RED_NANSTD:
        return is_float ? in : CK_F64;
    case CK_RED_ARGMIN:
    case CK_RED_ARGMAX:
    case CK_RED_COUNT_NONZERO:
    case CK_RED_NANARGMIN:
    case CK_RED_NANARGMAX:
    case CK_RED_NANCOUNT_NONZERO:
        return CK_I64;
    case CK_RED_ANY:
    case CK_RED_ALL:
        return CK_BOOL;
    default:
        return CK_DT_INVALID;
    }
}

size_t ck_red_state_size(void)
{
    return sizeof(ck_red_state);
}

void ck_red_init(ck_red_op op, void *state, size_t n)
{
    ck_red_state *s = state;

    (void)op; /* the value's identity depends on its kind: set on first
                 use (backends/cpu/reduce.c) */
    for (size_t i = 0; i < n; i++) {
        memset(&s[i], 0, sizeof s[i]);
        s[i].idx = -1;
    }
}

/* Is a (value av at index ai) a better argmin (sign 1) or argmax (sign
 * -1) than b?  The first NaN wins; otherwise the smaller value, and on a
 * tie the smaller index (the first occurrence).  (nanargmin/nanargmax of
 * floats: ck_red_nanarg_put.) */
static int arg_better(int kind, int sign, const ck_red_state *a,
                      const ck_red_state *b)
{
    if (kind == CK_RK_FLOAT) {
        int an = isnan(a->v.f), bn = isnan(b->v.f);
        if (an && bn)
            return a->idx < b->idx;
        if (an || bn)
            return an;
        if (a->v.f != b->v.f)
            return sign > 0 ? a->v.f < b->v.f : a->v.f > b->v.f;
    } else if (kind == CK_RK_SIGNED) {
        if (a->v.i != b->v.i)
            return sign > 0 ? a->v.i < b->v.i : a->v.i > b->v.i;
    } else if (a->v.u != b->v.u) {
        return sign > 0 ? a->v.u < b->v.u : a->v.u > b->v.u;
    }
    return a->idx < b->idx;
}

/* min (sign 1) or max (sign -1) of two values of one kind; NaN wins unless
 * skip_nan, where it was never folded in the first place. */
static void minmax_merge(int kind, int sign, ck_red_state *d,
                         const ck_red_state *s)
{
    if (kind == CK_RK_FLOAT) {
        if (isnan(d->v.f))
            return;
        if (isnan(s->v.f) || (sign > 0 ? s->v.f < d->v.f : s->v.f > d->v.f))
            d->v.f = s->v.f;
    } else if (kind == CK_RK_SIGNED) {
        if (sign > 0 ? s->v.i < d->v.i : s->v.i > d->v.i)
            d->v.i = s->v.i;
    } else if (sign > 0 ? s->v.u < d->v.u : s->v.u > d->v.u) {
        d->v.u = s->v.u;
    }
}

static void combine_one(ck_red_op op, ck_red_state *d, const ck_red_state *s)
{
    if (s->n == 0)
        return;
    if (d->n == 0) {
        *d = *s;
        return;
    }
    int kind = d->kind ? d->kind : s->kind;

    switch (op) {
    case CK_RED_SUM:
    case CK_RED_NANSUM:
    case CK_RED_MEAN:
    case CK_RED_NANMEAN:
        if (kind == CK_RK_FLOAT) {
            /* dst's compensation first, then src's sum and its
             * compensation: a fixed order, so results are reproducible */
            double c = s->comp;
            ck_red_sum_add(d, s->v.f);
            d->comp += c;
        } else {
            d->v.u += s->v.u;
        }
        d->k += s->k;
        break;
    case CK_RED_PROD:
    case CK_RED_NANPROD:
        if (kind == CK_RK_FLOAT)
            d->v.f *= s->v.f;
        else
            d->v.u *= s->v.u;
        break;
    case CK_RED_MIN:
    case CK_RED_NANMIN:
        if (s->kind != CK_RK_NONE)
            minmax_merge(kind, 1, d, s);
        d->k += s->k;
        break;
    case CK_RED_MAX:
    case CK_RED_NANMAX:
        if (s->kind != CK_RK_NONE)
            minmax_merge(kind, -1, d, s);
        d->k += s->k;
        break;
    case CK_RED_ARGMIN:
    case CK_RED_ARGMAX:
    case CK_RED_NANARGMIN:
    case CK_RED_NANARGMAX: {
        int sign = op == CK_RED_ARGMIN || op == CK_RED_NANARGMIN ? 1 : -1;
        if (s->idx < 0)
            break;
        if ((op == CK_RED_NANARGMIN || op == CK_RED_NANARGMAX) &&
            kind == CK_RK_FLOAT) {
            ck_red_nanarg_put(d, s->v.f, s->idx, sign);
            break;
        }
        if (d->idx < 0 || arg_better(kind, sign, s, d)) {
            d->v = s->v;
            d->idx = s->idx;
        }
        break;
    }
    case CK_RED_VAR:
    case CK_RED_STD:
    case CK_RED_NANVAR:
    case CK_RED_NANSTD: {
        /* the values' sum too, as a mean's (see ck_red_mean_of) */
        double c = s->comp;
        ck_red_sum_add(d, s->v.f);
        d->comp += c;
        ck_red_chan_merge(d, s->k, s->mean, s->m2);
        break;
    }
    case CK_RED_COUNT_NONZERO:
    case CK_RED_NANCOUNT_NONZERO:
    case CK_RED_ANY:
    case CK_RED_ALL:
        d->k += s->k;
        break;
    default:
        break;
    }
    d->n += s->n;
    d->kind = kind;
}

int ck_red_mean_of(ck_red_op mean, ck_red_op var)
{
    if (mean == CK_RED_MEAN)
        return var == CK_RED_VAR || var == CK_RED_STD;
    if (mean == CK_RED_NANMEAN)
        return var == CK_RED_NANVAR || var == CK_RED_NANSTD;
    return 0;
}

void ck_red_combine(ck_red_op op, void *dst, const void *src, size_t n)
{
    ck_red_state *d = dst;
    const ck_red_state *s = src;

    for (size_t i = 0; i < n; i++)
        combine_one(op, &d[i], &s[i]);
}

/* Writes one result: the value in the wide type of 'kind' converted to
 * dtype out. */
static void put(ck_dtype out, void *result, size_t i, int kind, ck_scalar v)
{
    char *p = (char *)result + i * ck_dtype_size(out);

    if (kind == CK_RK_FLOAT)
        ck_dtype_convert(out, p, CK_F64, &v.f, 1);
    else if (kind == CK_RK_UNSIGNED)
        ck_dtype_convert(out, p, CK_U64, &v.u, 1);
    else
        ck_dtype_convert(out, p, CK_I64, &v.i, 1);
}

static ck_scalar fval(double f)
{
    ck_scalar v;
    v.f = f;
    return v;
}

static ck_scalar ival(int64_t i)
{
    ck_scalar v;
    v.i = i;
    return v;
}

/* Finalises one state into result[i]; -1 when NumPy raises (-2 for a
 * nanargmin or nanargmax of only NaN). */
static int finalize_one(ck_red_op op, double ddof, const ck_red_state *s,
                        ck_dtype out, void *result, size_t i, int *empty)
{
    int kind = s->kind;
    ck_scalar v;

    switch (op) {
    case CK_RED_SUM:
    case CK_RED_NANSUM:
    case CK_RED_PROD:
    case CK_RED_NANPROD: {
        int prod = op == CK_RED_PROD || op == CK_RED_NANPROD;
        if (kind == CK_RK_NONE) /* no elements: the identity */
            put(out, result, i, CK_RK_SIGNED, ival(prod));
        else if (kind == CK_RK_FLOAT)
            put(out, result, i, kind,
                fval(prod ? s->v.f : ck_red_sum_value(s)));
        else {
            v.u = s->v.u;
            put(out, result, i, kind, v);
        }
        return 0;
    }
    case CK_RED_MIN:
    case CK_RED_MAX:
    case CK_RED_NANMIN:
    case CK_RED_NANMAX:
        if (s->n == 0)
            return -1;
        if (s->k == 0) { /* all NaN: NumPy warns and gives NaN */
            *empty = 1;
            put(out, result, i, CK_RK_FLOAT, fval(NAN));
            return 0;
        }
        v.u = s->v.u;
        put(out, result, i, kind, v);
        return 0;
    case CK_RED_ARGMIN:
    case CK_RED_ARGMAX:
    case CK_RED_NANARGMIN:
    case CK_RED_NANARGMAX:
        if (s->n == 0 || s->idx < 0)
            return -1;
        if ((op == CK_RED_NANARGMIN || op == CK_RED_NANARGMAX) &&
            kind == CK_RK_FLOAT && isnan(s->v.f))
            return -2; /* NumPy: "All-NaN slice encountered" */
        put(out, result, i, CK_RK_SIGNED, ival(s->idx));
        return 0;
    case CK_RED_MEAN:
    case CK_RED_NANMEAN:
        if (s->k == 0) {
            *empty = 1;
            put(out, result, i, CK_RK_FLOAT, fval(NAN));
            return 0;
        }
        put(out, result, i, CK_RK_FLOAT,
            fval(ck_red_sum_value(s) / (double)s->k));
        return 0;
    case CK_RED_VAR:
    case CK_RED_STD:
    case CK_RED_NANVAR:
    case CK_RED_NANSTD: {
        double dof = (double)s->k - ddof, var;
        if (dof <= 0) {
            /* NumPy warns; var divides by max(dof, 0) (inf, or NaN when
             * m2 is 0), nanvar gives NaN (of floats: the executor asks
             * integers' nanvar as var, as NumPy computes it) */
            *empty = 1;
            var = op == CK_RED_VAR || op == CK_RED_STD ? s->m2 / 0.0 : NAN;
            if (s->k == 0)
                var = NAN;
        } else {
            var = s->m2 / dof;
        }
        if (op == CK_RED_STD || op == CK_RED_NANSTD)
            var = sqrt(var);
        put(out, result, i, CK_RK_FLOAT, fval(var));
        return 0;
    }
    case CK_RED_COUNT_NONZERO:
    case CK_RED_NANCOUNT_NONZERO:
        put(out, result, i, CK_RK_SIGNED, ival(s->k));
        return 0;
    case CK_RED_ANY:
        put(out, result, i, CK_RK_SIGNED, ival(s->k > 0));
        return 0;
    case CK_RED_ALL:
        put(out, result, i, CK_RK_SIGNED, ival(s->k == s->n));
        return 0;
    default:
        return -1;
    }
}

ck_code ck_red_finalize(ck_red_op op, double ddof, const void *state, size_t n,
                        ck_dtype out, void *result, int *empty, ck_err *err)
{
    const ck_red_state *s = state;
    int e = 0;

    if (!ck_red_name(op))
        return ck_err_set(err, CK_EUSAGE, "unknown reduction %d", (int)op);
    if (ck_dtype_size(out) == 0)
        return ck_err_set(err, CK_EUSAGE, "%s: invalid result dtype",
                          names[op]);
    for (size_t i = 0; i < n; i++) {
        int bad = finalize_one(op, ddof, &s[i], out, result, i, &e);
        if (bad == -2)
            return ck_err_set(err, CK_EUSAGE,
                              "%s of a slice of only NaN (missing) values",
                              names[op]);
        if (bad != 0) {
            if (op == CK_RED_ARGMIN || op == CK_RED_ARGMAX ||
                op == CK_RED_NANARGMIN || op == CK_RED_NANARGMAX)
                return ck_err_set(err, CK_EUSAGE,
                                  "attempt to get %s of an empty sequence",
                                  names[op]);
            return ck_err_set(err, CK_EUSAGE,
                              "zero-size array to reduction operation %s "
                              "which has no identity",
                              names[op]);
        }
    }
    if (empty)
        *empty = e;
    return CK_OK;
}
