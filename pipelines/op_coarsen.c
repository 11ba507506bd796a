/*
 * pipelines/op_coarsen.c - coarsen: dask.array.coarsen(reduction, x,
 * {axis: window}, trim_excess), block reductions over non-overlapping
 * windows.  Output element o reduces the operand's box o * window ..
 * (o + 1) * window, its elements taken in C order of the window, so the
 * result never depends on boxes or threads.  Each output box reads the
 * operand box (output box) x window; the output is chunked as the
 * operand's chunks divided by the window, so its boxes read whole operand
 * chunks where the window divides them.
 *
 * Dtypes are NumPy's for the reshape-and-reduce formula
 * x.reshape(a // 4, 4, b // 4, 4).mean(axis=(1, 3)): sum and prod of bool
 * and signed ints give int64 and wrap on overflow, of unsigned ints
 * uint64; mean of ints gives float64; floats keep theirs; min and max
 * keep the dtype.  Float sums and means are compensated (Neumaier) sums in
 * float64, rounded once to the result dtype: within an ulp or two of
 * NumPy's pairwise float64 sums, and more accurate than its float32 ones.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ops/reduce.h"
#include "pipelines/exec_impl.h"
#include "pipelines/optab.h"
#include "pipelines/plan_impl.h"

/* The reductions coarsen takes. */
static int coarsen_op(ck_red_op op)
{
    switch (op) {
    case CK_RED_SUM:
    case CK_RED_PROD:
    case CK_RED_MEAN:
    case CK_RED_MIN:
    case CK_RED_MAX:
    case CK_RED_NANSUM:
    case CK_RED_NANMEAN:
    case CK_RED_NANMIN:
    case CK_RED_NANMAX:
    case CK_RED_NANPROD:
        return 1;
    default:
        return 0;
    }
}

/* "window": a list with one integer >= 1 per axis, one integer for every
 * axis, or dask's {axis: window} (missing axes: 1; negative axes count
 * from the end). */
static ck_code parse_window(const char *path, const char *where, const cJSON *w,
                            int ndim, int64_t *win, ck_err *err)
{
    const cJSON *e;
    int k = 0;

    for (int d = 0; d < ndim; d++)
        win[d] = 1;
    if (!w)
        return ck_plan_bad(err, path, where,
                           "window: missing (a list with one window per "
                           "axis, such as [4, 4])");
    if (ck_plan_is_int(w)) {
        if (w->valuedouble < 1)
            return ck_plan_bad(err, path, where, "window must be >= 1");
        for (int d = 0; d < ndim; d++)
            win[d] = (int64_t)w->valuedouble;
        return CK_OK;
    }
    if (cJSON_IsArray(w)) {
        if (cJSON_GetArraySize(w) != ndim)
            return ck_plan_bad(err, path, where,
                               "window has %d entries for a %d-D array (one "
                               "per axis)",
                               cJSON_GetArraySize(w), ndim);
        cJSON_ArrayForEach(e, w)
        {
            if (!ck_plan_is_int(e) || e->valuedouble < 1)
                return ck_plan_bad(err, path, where,
                                   "window[%d]: expected an integer >= 1", k);
            win[k++] = (int64_t)e->valuedouble;
        }
        return CK_OK;
    }
    if (!cJSON_IsObject(w))
        return ck_plan_bad(err, path, where,
                           "window: expected a list with one integer per "
                           "axis (or {\"axis\": window})");
    cJSON_ArrayForEach(e, w)
    {
        char *end;
        long ax = strtol(e->string, &end, 10);
        if (!*e->string || *end || ax < -ndim || ax >= ndim)
            return ck_plan_bad(err, path, where,
                               "window: '%s' is not an axis of a %d-D array",
                               e->string, ndim);
        if (!ck_plan_is_int(e) || e->valuedouble < 1)
            return ck_plan_bad(err, path, where,
                               "window[\"%s\"]: expected an integer >= 1",
                               e->string);
        win[ax < 0 ? ax + ndim : ax] = (int64_t)e->valuedouble;
    }
    return CK_OK;
}

CK_PLAN_PARSE_FN(coarsen)
{
    const cJSON *red = cJSON_GetObjectItem(step, "reduction");
    const cJSON *trim = cJSON_GetObjectItem(step, "trim_excess");
    const ck_node *m;
    ck_red_op op;
    char sh[128];

    (void)sub;
    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    if (!cJSON_IsString(red) || !ck_red_lookup(red->valuestring, &op) ||
        !coarsen_op(op))
        return ck_plan_bad(err, path, where,
                           "reduction: expected one of sum, prod, mean, min, "
                           "max, nansum, nanprod, nanmean, nanmin, nanmax");
    if (trim && !cJSON_IsBool(trim))
        return ck_plan_bad(err, path, where,
                           "trim_excess must be true or false");
    CK_TRY(parse_window(path, where, cJSON_GetObjectItem(step, "window"),
                        m->ndim, n->window, err));
    double cells = 1;
    for (int d = 0; d < m->ndim; d++)
        cells *= (double)n->window[d];
    if (cells > (double)((int64_t)1 << 40))
        return ck_plan_bad(err, path, where,
                           "window: %.3g elements in one window (at most "
                           "2^40)",
                           cells);
    for (int d = 0; d < m->ndim; d++)
        if (!cJSON_IsTrue(trim) && m->shape[d] % n->window[d] != 0)
            return ck_plan_bad(
                err, path, where,
                "window: axis %d has length %lld, not a multiple of its "
                "window %lld (shape %s); give trim_excess: true to drop "
                "the remainder",
                d, (long long)m->shape[d], (long long)n->window[d],
                ck_plan_shape_str(m->ndim, m->shape, sh, sizeof sh));
    n->red = op;
    n->dtype = ck_red_result_dtype(op, m->dtype);
    n->ndim = m->ndim;
    for (int d = 0; d < m->ndim; d++) {
        int64_t c = m->chunks[d] / n->window[d];
        n->shape[d] = m->shape[d] / n->window[d];
        if (c > n->shape[d])
            c = n->shape[d];
        n->chunks[d] = c > 0 ? c : 1;
    }
    return CK_OK;
}

/* The window product, and the number of window rows (all but the last
 * axis's window). */
static void window_size(const ck_node *nd, int64_t *all, int64_t *rows)
{
    *all = *rows = 1;
    for (int d = 0; d < nd->ndim; d++) {
        *all *= nd->window[d];
        if (d < nd->ndim - 1)
            *rows *= nd->window[d];
    }
}

size_t ck_exec_coarsen_bytes(const xrun *r, int i, size_t n, int known,
                             int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    int64_t w, rows;

    (void)known;
    window_size(nd, &w, &rows);
    /* the operand's boxes are its chunks when ours are and the window
     * divides them with nothing trimmed */
    for (int d = 0; d < nd->ndim && aligned; d++)
        aligned = m->chunks[d] == nd->chunks[d] * nd->window[d] &&
                  m->shape[d] == nd->shape[d] * nd->window[d];
    return ck_exec_al(n * (size_t)w * ck_dtype_size(m->dtype)) +
           ck_exec_al((size_t)rows * sizeof(int64_t)) +
           ck_exec_bytes(r, nd->arg[0], n * (size_t)w, -1, aligned);
}

/* One box's reduction: output box osh[], operand box read densely. */
typedef struct cwin {
    ck_red_op op;
    int nd;
    int64_t nout;
    int64_t osh[CK_MAX_DIMS];
    int64_t ostep[CK_MAX_DIMS]; /* operand offset per output step */
    const int64_t *row;         /* offsets of the window's rows, C order */
    int64_t nrow, len, cnt;     /* rows, their length, elements */
} cwin;

/* Moves *base to the next output element's window (C order). */
static void next_out(const cwin *c, int64_t *idx, int64_t *base)
{
    for (int d = c->nd - 1; d >= 0; d--) {
        *base += c->ostep[d];
        if (++idx[d] < c->osh[d])
            return;
        *base -= c->ostep[d] * c->osh[d];
        idx[d] = 0;
    }
}

/* Neumaier's compensated sum: s + c, or s itself when not finite (an
 * infinity or NaN among the values, or an overflow). */
static inline void neu_add(double *s, double *c, double v)
{
    double t = *s + v;
    if (fabs(*s) >= fabs(v))
        *c += (*s - t) + v;
    else
        *c += (v - t) + *s;
    *s = t;
}

static inline double neu_total(double s, double c)
{
    return isfinite(s) ? s + c : s;
}

/* Float kernels: the result has the input's dtype T. */
#define FLOAT_KERNEL(NAME, T)                                                  \
    static void NAME(const cwin *c, const void *src, void *dst)                \
    {                                                                          \
        const T *in = src;                                                     \
        T *out = dst;                                                          \
        int64_t idx[CK_MAX_DIMS] = {0}, base = 0;                              \
        int nan_skip = c->op == CK_RED_NANSUM || c->op == CK_RED_NANMEAN ||    \
                       c->op == CK_RED_NANMIN || c->op == CK_RED_NANMAX ||     \
                       c->op == CK_RED_NANPROD;                                \
        for (int64_t o = 0; o < c->nout; o++, next_out(c, idx, &base)) {       \
            double s = 0, e = 0, pr = 1;                                       \
            int64_t k = 0;                                                     \
            T best = 0;                                                        \
            int have = 0, nan = 0;                                             \
            for (int64_t r = 0; r < c->nrow; r++) {                            \
                const T *v = in + base + c->row[r];                            \
                for (int64_t j = 0; j < c->len; j++) {                         \
                    T x = v[j];                                                \
                    if (isnan(x)) {                                            \
                        if (!nan_skip && !nan) {                               \
                            nan = 1;                                           \
                            best = x;                                          \
                        }                                                      \
                        if (nan_skip)                                          \
                            continue;                                          \
                    }                                                          \
                    switch (c->op) {                                           \
                    case CK_RED_PROD:                                          \
                    case CK_RED_NANPROD:                                       \
                        pr *= (double)x;                                       \
                        break;                                                 \
                    case CK_RED_MIN:                                           \
                    case CK_RED_NANMIN:                                        \
                        if (!nan && (!have || x < best))                       \
                            best = x;                                          \
                        have = 1;                                              \
                        break;                                                 \
                    case CK_RED_MAX:                                           \
                    case CK_RED_NANMAX:                                        \
                        if (!nan && (!have || x > best))                       \
                            best = x;                                          \
                        have = 1;                                              \
                        break;                                                 \
                    default:                                                   \
                        neu_add(&s, &e, (double)x);                            \
                        k++;                                                   \
                    }                                                          \
                }                                                              \
            }                                                                  \
            switch (c->op) {                                                   \
            case CK_RED_PROD:                                                  \
            case CK_RED_NANPROD:                                               \
                out[o] = (T)pr;                                                \
                break;                                                         \
            case CK_RED_MIN:                                                   \
            case CK_RED_MAX:                                                   \
            case CK_RED_NANMIN:                                                \
            case CK_RED_NANMAX:                                                \
                out[o] = nan || have ? best : (T)NAN;                          \
                break;                                                         \
            case CK_RED_MEAN:                                                  \
            case CK_RED_NANMEAN:                                               \
                out[o] = k ? (T)(neu_total(s, e) / (double)k) : (T)NAN;        \
                break;                                                         \
            default:                                                           \
                out[o] = (T)neu_total(s, e);                                   \
            }                                                                  \
        }                                                                      \
    }

/* Integer and bool kernels: sums and products wrap in 64 bits (int64 or
 * uint64 results: the same bits), means are float64, min and max keep T.
 * W is int64_t for signed types and bool, uint64_t for unsigned ones. */
#define INT_KERNEL(NAME, T, W)                                                 \
    static void NAME(const cwin *c, const void *src, void *dst)                \
    {                                                                          \
        const T *in = src;                                                     \
        int64_t idx[CK_MAX_DIMS] = {0}, base = 0;                              \
        for (int64_t o = 0; o < c->nout; o++, next_out(c, idx, &base)) {       \
            int prod = c->op == CK_RED_PROD || c->op == CK_RED_NANPROD;        \
            uint64_t acc = prod ? 1 : 0;                                       \
            double s = 0, e = 0;                                               \
            T best = in[base];                                                 \
            for (int64_t r = 0; r < c->nrow; r++) {                            \
                const T *v = in + base + c->row[r];                            \
                for (int64_t j = 0; j < c->len; j++) {                         \
                    T x = v[j];                                                \
                    switch (c->op) {                                           \
                    case CK_RED_PROD:                                          \
                    case CK_RED_NANPROD:                                       \
                        acc *= (uint64_t)(W)x;                                 \
                        break;                                                 \
                    case CK_RED_MIN:                                           \
                    case CK_RED_NANMIN:                                        \
                        best = x < best ? x : best;                            \
                        break;                                                 \
                    case CK_RED_MAX:                                           \
                    case CK_RED_NANMAX:                                        \
                        best = x > best ? x : best;                            \
                        break;                                                 \
                    case CK_RED_MEAN:                                          \
                    case CK_RED_NANMEAN:                                       \
                        neu_add(&s, &e, (double)x);                            \
                        break;                                                 \
                    default:                                                   \
                        acc += (uint64_t)(W)x;                                 \
                    }                                                          \
                }                                                              \
            }                                                                  \
            switch (c->op) {                                                   \
            case CK_RED_MIN:                                                   \
            case CK_RED_MAX:                                                   \
            case CK_RED_NANMIN:                                                \
            case CK_RED_NANMAX:                                                \
                ((T *)dst)[o] = best;                                          \
                break;                                                         \
            case CK_RED_MEAN:                                                  \
            case CK_RED_NANMEAN:                                               \
                ((double *)dst)[o] = neu_total(s, e) / (double)c->cnt;         \
                break;                                                         \
            default:                                                           \
                ((uint64_t *)dst)[o] = acc;                                    \
            }                                                                  \
        }                                                                      \
    }

FLOAT_KERNEL(red_f32, float)
FLOAT_KERNEL(red_f64, double)
INT_KERNEL(red_b, uint8_t, int64_t)
INT_KERNEL(red_i8, int8_t, int64_t)
INT_KERNEL(red_i16, int16_t, int64_t)
INT_KERNEL(red_i32, int32_t, int64_t)
INT_KERNEL(red_i64, int64_t, int64_t)
INT_KERNEL(red_u8, uint8_t, uint64_t)
INT_KERNEL(red_u16, uint16_t, uint64_t)
INT_KERNEL(red_u32, uint32_t, uint64_t)
INT_KERNEL(red_u64, uint64_t, uint64_t)

typedef void (*kernel_fn)(const cwin *c, const void *src, void *dst);

static kernel_fn kernel(ck_dtype t)
{
    switch (t) {
    case CK_BOOL:
        return red_b;
    case CK_I8:
        return red_i8;
    case CK_I16:
        return red_i16;
    case CK_I32:
        return red_i32;
    case CK_I64:
        return red_i64;
    case CK_U8:
        return red_u8;
    case CK_U16:
        return red_u16;
    case CK_U32:
        return red_u32;
    case CK_U64:
        return red_u64;
    case CK_F32:
        return red_f32;
    default:
        return red_f64;
    }
}

ck_code ck_exec_coarsen_eval(xrun *r, int i, const int64_t *start,
                             const int64_t *shape, void *dst, ck_arena *a,
                             const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    int64_t ist[CK_MAX_DIMS], ish[CK_MAX_DIMS], istr[CK_MAX_DIMS];
    int64_t widx[CK_MAX_DIMS] = {0};
    int ndim = nd->ndim;
    int64_t stride = 1;
    cwin c;
    void *buf;
    int64_t *row;

    (void)mm;
    memset(&c, 0, sizeof c);
    c.op = nd->red;
    c.nd = ndim;
    c.nout = ck_exec_nelem(ndim, shape);
    if (c.nout == 0)
        return CK_OK;
    window_size(nd, &c.cnt, &c.nrow);
    for (int d = 0; d < ndim; d++) {
        ist[d] = start[d] * nd->window[d];
        ish[d] = shape[d] * nd->window[d];
        c.osh[d] = shape[d];
    }
    for (int d = ndim - 1; d >= 0; d--) {
        istr[d] = stride;
        c.ostep[d] = nd->window[d] * stride;
        stride *= ish[d];
    }
    c.len = ndim ? nd->window[ndim - 1] : 1;
    buf = ck_arena_alloc(a, (size_t)(c.nout * c.cnt) * ck_dtype_size(m->dtype));
    row = ck_arena_alloc(a, (size_t)c.nrow * sizeof(int64_t));
    if (!buf || !row)
        return ck_exec_no_room(err);
    /* the window's rows: every index of the axes before the last, C
     * order */
    for (int64_t k = 0; k < c.nrow; k++) {
        int64_t off = 0;
        for (int d = 0; d < ndim - 1; d++)
            off += widx[d] * istr[d];
        row[k] = off;
        for (int d = ndim - 2; d >= 0; d--) {
            if (++widx[d] < nd->window[d])
                break;
            widx[d] = 0;
        }
    }
    c.row = row;
    CK_TRY(ck_exec_eval(r, nd->arg[0], ist, ish, buf, a, err));
    kernel(m->dtype)(&c, buf, dst);
    return CK_OK;
}
