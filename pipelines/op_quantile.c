/*
 * pipelines/op_quantile.c - quantile, percentile, median and their nan*
 * forms (numpy.quantile and friends, method "linear"), exact and out of
 * core, in a bounded number of passes over the operand.
 *
 * Every value becomes an ordered 64-bit key (ops/quantile.h), so the k-th
 * smallest value is one bit pattern whatever order the values arrive in,
 * and counting keys into bins is integer arithmetic: results are the same
 * for any --threads.  Two ways to get the keys a result needs:
 *
 *  - rows: output elements in blocks (boxes over the kept axes, aligned
 *    to the operand's chunks) whose values all fit the memory left;
 *    each block is one pass that gathers every output element's values
 *    side by side, then a selection per element finds the ranks its q
 *    need.  One pass per block.
 *  - refining (one output element's values do not fit, which is the
 *    usual case with every axis reduced): pass 1 finds the keys' range
 *    and the counts; each later pass counts the keys inside the interval
 *    that holds a wanted rank into up to 65536 bins of equal key width,
 *    which narrows that interval to one bin, until the interval's values
 *    fit in memory; the pass that finds them collects them and selects
 *    exactly.  Three passes typically; at most six for a median or one q
 *    (64-bit keys, 15 or 16 bits a pass), more for many q whose ranks
 *    crowd into a few keys' neighbourhoods (the bins are shared).
 *
 * Under MPI the refining passes are divided: each rank reads a contiguous
 * range of the region's boxes, the counts (integers) are summed over the
 * ranks, and the keys a gathering pass collects are sent to rank 0, which
 * selects and broadcasts them; the keys found, and so the result, are
 * one process's whatever the ranks.  The rows way divides its blocks of
 * output elements (cut so that every rank gets some, where there are
 * enough elements): each rank selects its own blocks' results and
 * broadcasts them (ck_comm_share).
 *
 * NumPy's arithmetic on the chosen values (its lerp, its median's mean)
 * is in ops/quantile.c.  The result is held in r->x[i].mem, charged to
 * the budget for the run, and copied out by ck_exec_held_eval.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/ck_comm.h"
#include "base/ck_log.h"
#include "base/ck_thread.h"
#include "base/ck_tree.h"
#include "ops/quantile.h"
#include "pipelines/exec_impl.h"
#include "pipelines/optab.h"
#include "pipelines/plan_impl.h"

enum {
    Q_MAX_WORKERS = 64,
    Q_BINS = 1 << 16, /* bins of a refining pass, over all its intervals */
    Q_MIN_BINS = 16,  /* per interval */
    /* numpy.nanmedian over a kept axis shorter than this takes the masked
     * median, whose odd middle is (x + x) / 2 */
    Q_NANMEDIAN_SMALL = 600,
    Q_TAG = 2031, /* gathered keys, rank to rank 0 (ck_tree uses 2030) */
};

/* ---- parse ---- */

static const char *q_range(int unit)
{
    return unit == CK_Q_PERCENTILE ? "[0, 100]" : "[0, 1]";
}

static ck_code parse_q(const char *path, const char *where, ck_node *n,
                       int unit, const cJSON *q, int *list, ck_err *err)
{
    double hi = unit == CK_Q_PERCENTILE ? 100 : 1;
    int k = 0;
    const cJSON *e;

    *list = 0;
    if (!q || cJSON_IsNull(q))
        return ck_plan_bad(err, path, where,
                           "q: required, a number or a list of numbers in %s",
                           q_range(unit));
    if (cJSON_IsArray(q))
        *list = 1;
    else if (!cJSON_IsNumber(q))
        return ck_plan_bad(err, path, where,
                           "q: expected a number or a list of numbers in %s",
                           q_range(unit));
    n->nvals = *list ? cJSON_GetArraySize(q) : 1;
    if (!(n->vals = malloc(sizeof(double) * (size_t)(n->nvals + 1))))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    if (!*list) {
        if (!(q->valuedouble >= 0 && q->valuedouble <= hi))
            return ck_plan_bad(err, path, where, "q: must be in %s, got %g",
                               q_range(unit), q->valuedouble);
        /* numpy.percentile divides by 100 first (np.true_divide) */
        n->vals[0] =
            unit == CK_Q_PERCENTILE ? q->valuedouble / 100 : q->valuedouble;
        return CK_OK;
    }
    cJSON_ArrayForEach(e, q)
    {
        if (!cJSON_IsNumber(e))
            return ck_plan_bad(err, path, where, "q[%d]: not a number", k);
        if (!(e->valuedouble >= 0 && e->valuedouble <= hi))
            return ck_plan_bad(err, path, where, "q[%d]: must be in %s, got %g",
                               k, q_range(unit), e->valuedouble);
        n->vals[k++] =
            unit == CK_Q_PERCENTILE ? e->valuedouble / 100 : e->valuedouble;
    }
    return CK_OK;
}

CK_PLAN_PARSE_FN(quantile)
{
    int unit = sub & 3, nanf = (sub & CK_Q_NAN) != 0, list = 0, nd = 0;
    const cJSON *q = cJSON_GetObjectItem(step, "q");
    const cJSON *meth = cJSON_GetObjectItem(step, "method");
    const cJSON *kd = cJSON_GetObjectItem(step, "keepdims");
    const char *op = n->op[0] ? n->op : "quantile";
    const ck_node *m;
    int64_t nred = 1, nout = 1;

    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    if (cJSON_GetObjectItem(step, "interpolation"))
        return ck_plan_bad(err, path, where,
                           "interpolation: not supported (NumPy's old name "
                           "for method; only method \"linear\" is)");
    if (meth && !cJSON_IsNull(meth) &&
        (!cJSON_IsString(meth) || strcmp(meth->valuestring, "linear") != 0)) {
        if (cJSON_IsString(meth))
            return ck_plan_bad(err, path, where,
                               "method: only \"linear\" is supported, got "
                               "'%s'",
                               meth->valuestring);
        return ck_plan_bad(err, path, where,
                           "method: only \"linear\" is supported");
    }
    if (unit == CK_Q_MEDIAN) {
        if (q)
            return ck_plan_bad(err, path, where, "q: %s takes no q", op);
        n->nvals = 1;
        if (!(n->vals = malloc(sizeof(double))))
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        n->vals[0] = 0.5;
    } else {
        CK_TRY(parse_q(path, where, n, unit, q, &list, err));
        if (m->dtype == CK_BOOL)
            return ck_plan_bad(err, path, where,
                               "%s of a bool array: NumPy refuses it (no "
                               "boolean subtract); convert it with astype "
                               "first",
                               op);
    }
    CK_TRY(ck_plan_axes(path, where, cJSON_GetObjectItem(step, "axis"), m->ndim,
                        &n->axes, err));
    if (kd && !cJSON_IsNull(kd) && !cJSON_IsBool(kd))
        return ck_plan_bad(err, path, where, "keepdims must be true or false");
    n->keepdims = cJSON_IsTrue(kd);
    if (list)
        n->shape[nd++] = n->nvals;
    for (int d = 0; d < m->ndim; d++) {
        if (n->axes & (1u << d))
            nred *= m->shape[d];
        else
            nout *= m->shape[d];
        if (nd == CK_MAX_DIMS)
            return ck_plan_bad(err, path, where,
                               "the result would have more than %d "
                               "dimensions",
                               CK_MAX_DIMS);
        if (!(n->axes & (1u << d)))
            n->shape[nd++] = m->shape[d];
        else if (n->keepdims)
            n->shape[nd++] = 1;
    }
    if (unit != CK_Q_MEDIAN && !nanf && nred == 0 && nout > 0)
        return ck_plan_bad(err, path, where,
                           "%s over an empty axis has no value (NumPy raises "
                           "IndexError)",
                           op);
    n->ndim = nd;
    /* numpy.quantile computes in float64 even for float32 data (its
     * weights are a float64 array); median's mean keeps float32 */
    n->dtype = unit == CK_Q_MEDIAN && m->dtype == CK_F32 ? CK_F32 : CK_F64;
    memcpy(n->chunks, n->shape, sizeof n->chunks);
    for (int d = 0; d < nd; d++)
        if (n->chunks[d] < 1)
            n->chunks[d] = 1;
    return CK_OK;
}

/* ---- run ---- */

/* A key interval that holds wanted ranks (refining). */
typedef struct ivl {
    uint64_t lo, hi;      /* keys, inclusive */
    int64_t below, count; /* values with a key below lo; inside */
    int gather;           /* this pass: collect its keys, else count them */
    int shift;            /* bin of key k: (k - lo) >> shift */
    int64_t nbins, hoff;  /* bins, and their offset in the pass's bins */
    uint64_t *buf;        /* gathered keys */
    int64_t fill;         /* atomic */
} ivl;

/* One worker's share of a range pass. */
typedef struct wstat {
    uint64_t lo, hi;
    int64_t nv, nnan;
} wstat;

enum { PASS_ROWS, PASS_RANGE, PASS_REFINE, PASS_SELECT };

typedef struct qrun {
    xrun *r;
    const ck_node *nd, *m;
    int opnd;
    ck_dtype dt; /* the operand's */
    int unit, nanf, twice, nq;
    const double *q;
    int nkeep, keep[CK_MAX_DIMS]; /* kept axes of the operand */
    int64_t nout, n;              /* output elements; values each */
    void *res;                    /* the result: [q][output element] */
    ck_grid g;                    /* the operand's chunks */
    int threads;
    ck_arena arena[Q_MAX_WORKERS];
    int64_t share;   /* bytes for gathered keys */
    int64_t charged; /* besides the arenas, released at the end */
    int passes;
    /* the pass: the operand's region and the chunks that cover it */
    int mode;
    int64_t rs[CK_MAX_DIMS], rsh[CK_MAX_DIMS];
    int64_t clo[CK_MAX_DIMS], cn[CK_MAX_DIMS];
    int64_t ntasks, next, tend; /* this rank's tasks: [next, tend) */
    /* rows: keys of output element o (of the block) at rows + o * n; S[d]
     * is the step in rows along operand axis d */
    uint64_t *rows;
    int64_t S[CK_MAX_DIMS];
    int64_t bnout; /* output elements in the block */
    /* per worker: wanted ranks and their keys (2 nq + 2 each) */
    int64_t *wrk[Q_MAX_WORKERS];
    uint64_t *wkey[Q_MAX_WORKERS];
    /* range */
    wstat st[Q_MAX_WORKERS];
    /* refining: the intervals, ascending and disjoint; per worker bins
     * (Q_BINS) and counts per interval */
    ivl *iv;
    int niv, maxiv;
    uint64_t *hist[Q_MAX_WORKERS], *merged;
    int64_t *lc[Q_MAX_WORKERS];
} qrun;

static void put(qrun *x, int k, int64_t gi, double v)
{
    size_t at = (size_t)k * (size_t)x->nout + (size_t)gi;
    if (x->nd->dtype == CK_F32)
        ((float *)x->res)[at] = (float)v;
    else
        ((double *)x->res)[at] = v;
}

static void put_nan(qrun *x, int64_t gi)
{
    for (int k = 0; k < x->nq; k++)
        put(x, k, gi, NAN);
}

/* The ranks that nv values need, ascending and distinct, into rk. */
static int want_ranks(const qrun *x, int64_t nv, int64_t *rk)
{
    int m = 0;

    if (x->unit == CK_Q_MEDIAN) {
        rk[m++] = nv % 2 ? (nv - 1) / 2 : nv / 2 - 1;
        if (nv % 2 == 0)
            rk[m++] = nv / 2;
    } else {
        for (int k = 0; k < x->nq; k++) {
            double t;
            ck_q_linear(nv, x->q[k], &rk[m], &rk[m + 1], &t);
            m += 2;
        }
    }
    /* insertion sort, then drop repeats */
    for (int i = 1; i < m; i++) {
        int64_t v = rk[i];
        int j = i;
        for (; j > 0 && rk[j - 1] > v; j--)
            rk[j] = rk[j - 1];
        rk[j] = v;
    }
    int u = 0;
    for (int i = 0; i < m; i++)
        if (u == 0 || rk[u - 1] != rk[i])
            rk[u++] = rk[i];
    return u;
}

static uint64_t key_of(const int64_t *rk, const uint64_t *key, int nr,
                       int64_t rank)
{
    int lo = 0, hi = nr - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (rk[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return key[lo];
}

/* Output element gi's results from the keys of its wanted ranks. */
static void finish(qrun *x, int64_t gi, int64_t nv, const int64_t *rk,
                   const uint64_t *key, int nr)
{
    if (x->unit == CK_Q_MEDIAN) {
        int64_t lo = nv % 2 ? (nv - 1) / 2 : nv / 2 - 1;
        int64_t hi = nv % 2 ? lo : nv / 2;
        put(x, 0, gi,
            ck_q_median(x->dt, key_of(rk, key, nr, lo), key_of(rk, key, nr, hi),
                        (int)(nv % 2), x->twice));
        return;
    }
    for (int k = 0; k < x->nq; k++) {
        int64_t lo, hi;
        double t;
        ck_q_linear(nv, x->q[k], &lo, &hi, &t);
        put(x, k, gi,
            ck_q_lerp(x->dt, key_of(rk, key, nr, lo), key_of(rk, key, nr, hi),
                      t));
    }
}

/* Output element gi of the kept axes' coordinates c[] (operand axes). */
static int64_t out_index(const qrun *x, const int64_t *c)
{
    int64_t gi = 0;
    for (int j = 0; j < x->nkeep; j++)
        gi = gi * x->m->shape[x->keep[j]] + c[x->keep[j]];
    return gi;
}

/* The pass walks the operand's chunks that meet the region rs/rsh. */
static void set_region(qrun *x, const int64_t *rs, const int64_t *rsh)
{
    int nd = x->m->ndim;

    x->ntasks = 1;
    for (int d = 0; d < nd; d++) {
        x->rs[d] = rs[d];
        x->rsh[d] = rsh[d];
        x->clo[d] = rs[d] / x->g.chunk[d];
        x->cn[d] =
            rsh[d] ? (rs[d] + rsh[d] - 1) / x->g.chunk[d] - x->clo[d] + 1 : 0;
        x->ntasks *= x->cn[d];
    }
    x->next = 0;
}

static void task_box(const qrun *x, int64_t t, int64_t *st, int64_t *sh)
{
    for (int d = x->m->ndim - 1; d >= 0; d--) {
        int64_t c = x->clo[d] + t % x->cn[d];
        int64_t a = c * x->g.chunk[d], b = a + x->g.chunk[d];
        t /= x->cn[d];
        if (a < x->rs[d])
            a = x->rs[d];
        if (b > x->rs[d] + x->rsh[d])
            b = x->rs[d] + x->rsh[d];
        st[d] = a;
        sh[d] = b - a;
    }
}

/* rows: the box's keys to their places in the block's rows. */
static void scatter(const qrun *x, const int64_t *st, const int64_t *sh,
                    const uint64_t *k)
{
    int nd = x->m->ndim;
    int64_t base = 0, idx[CK_MAX_DIMS] = {0};

    for (int d = 0; d < nd; d++)
        base += (st[d] - x->rs[d]) * x->S[d];
    if (nd == 0) {
        x->rows[base] = k[0];
        return;
    }
    int64_t inner = sh[nd - 1], s = x->S[nd - 1];
    for (;;) {
        int64_t off = base;
        for (int d = 0; d < nd - 1; d++)
            off += idx[d] * x->S[d];
        uint64_t *dst = x->rows + off;
        for (int64_t j = 0; j < inner; j++)
            dst[j * s] = *k++;
        int d = nd - 2;
        while (d >= 0 && ++idx[d] == sh[d])
            idx[d--] = 0;
        if (d < 0)
            return;
    }
}

/* The interval holding key k, or -1. */
static int find_ivl(const qrun *x, uint64_t k)
{
    int lo = 0, hi = x->niv - 1;

    if (k < x->iv[0].lo || k > x->iv[hi].hi)
        return -1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (x->iv[mid].lo <= k)
            lo = mid;
        else
            hi = mid - 1;
    }
    return k <= x->iv[lo].hi ? lo : -1;
}

static void refine_box(qrun *x, int w, const uint64_t *k, int64_t nel)
{
    uint64_t *h = x->hist[w];
    int64_t *lc = x->lc[w];
    int any = 0;

    memset(lc, 0, sizeof(int64_t) * (size_t)x->niv);
    for (int64_t e = 0; e < nel; e++) {
        int v = find_ivl(x, k[e]);
        if (v < 0)
            continue;
        const ivl *iv = &x->iv[v];
        if (iv->gather) {
            lc[v]++;
            any = 1;
        } else if (iv->nbins) {
            h[iv->hoff + (int64_t)((k[e] - iv->lo) >> iv->shift)]++;
        }
    }
    if (!any)
        return;
    /* reserve each interval's room once, then copy */
    for (int v = 0; v < x->niv; v++)
        if (lc[v])
            lc[v] = __atomic_fetch_add(&x->iv[v].fill, lc[v], __ATOMIC_RELAXED);
    for (int64_t e = 0; e < nel; e++) {
        int v = find_ivl(x, k[e]);
        if (v >= 0 && x->iv[v].gather)
            x->iv[v].buf[lc[v]++] = k[e];
    }
}

static void range_box(qrun *x, int w, const uint64_t *k, int64_t nel)
{
    wstat *s = &x->st[w];

    for (int64_t e = 0; e < nel; e++) {
        if (k[e] == CK_Q_NAN_KEY && ck_dtype_is_float(x->dt)) {
            s->nnan++;
            continue;
        }
        s->nv++;
        if (k[e] < s->lo)
            s->lo = k[e];
        if (k[e] > s->hi)
            s->hi = k[e];
    }
}

/* Selection over the block's rows: output elements o = t*8.. */
static void select_rows(qrun *x, int w, int64_t t)
{
    for (int64_t o = t * 8; o < x->bnout && o < t * 8 + 8; o++) {
        uint64_t *v = x->rows + o * x->n;
        int64_t c[CK_MAX_DIMS] = {0}, rem = o, nnan = 0;
        for (int j = x->nkeep - 1; j >= 0; j--) {
            int d = x->keep[j];
            c[d] = x->rs[d] + rem % x->rsh[d];
            rem /= x->rsh[d];
        }
        int64_t gi = out_index(x, c);
        if (ck_dtype_is_float(x->dt))
            for (int64_t e = 0; e < x->n; e++)
                nnan += v[e] == CK_Q_NAN_KEY;
        int64_t nv = x->n - nnan;
        if ((nnan && !x->nanf) || nv == 0) {
            put_nan(x, gi);
            continue;
        }
        /* NaN's keys are the largest: the first nv ranks are the rest */
        int nr = want_ranks(x, nv, x->wrk[w]);
        ck_q_select(v, x->n, x->wrk[w], nr);
        for (int j = 0; j < nr; j++)
            x->wkey[w][j] = v[x->wrk[w][j]];
        finish(x, gi, nv, x->wrk[w], x->wkey[w], nr);
    }
}

static ck_code worker(void *ctx, int w, ck_par *par, ck_err *err)
{
    qrun *x = ctx;
    ck_arena *a = &x->arena[w];
    size_t esz = ck_dtype_size(x->dt);

    while (!ck_par_stopped(par)) {
        int64_t t = __atomic_fetch_add(&x->next, 1, __ATOMIC_RELAXED);
        int64_t st[CK_MAX_DIMS], sh[CK_MAX_DIMS], nel = 1;
        if (t >= x->tend)
            break;
        if (x->mode == PASS_SELECT) {
            select_rows(x, w, t);
            continue;
        }
        task_box(x, t, st, sh);
        for (int d = 0; d < x->m->ndim; d++)
            nel *= sh[d];
        ck_arena_reset(a);
        void *buf = ck_arena_alloc(a, (size_t)nel * esz);
        uint64_t *keys = ck_arena_alloc(a, (size_t)nel * sizeof *keys);
        if (!buf || !keys)
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(x->r, x->opnd, st, sh, buf, a, err));
        ck_q_keys(x->dt, buf, (size_t)nel, keys);
        if (x->mode == PASS_ROWS)
            scatter(x, st, sh, keys);
        else if (x->mode == PASS_RANGE)
            range_box(x, w, keys, nel);
        else
            refine_box(x, w, keys, nel);
        ck_progress_add(x->r->o->progress, nel * (int64_t)esz);
    }
    return CK_OK;
}

static ck_code pass(qrun *x, int mode, ck_err *err)
{
    int t = x->threads;
    int64_t t0 = 0, t1 = x->ntasks;

    /* refining passes are divided over the ranks (their counts are
     * summed after); rows and their selection are whole on every rank */
    if (mode == PASS_RANGE || mode == PASS_REFINE)
        ck_comm_split(x->ntasks, ck_comm_rank(), ck_comm_size(), &t0, &t1);
    x->mode = mode;
    x->next = t0;
    x->tend = t1;
    if (mode != PASS_SELECT) {
        x->passes++;
        if (x->r->o->progress) /* each pass reads the region again */
            x->r->o->progress->total += t1 - t0;
    }
    if (t > t1 - t0)
        t = t1 > t0 ? (int)(t1 - t0) : 1;
    return ck_par_run(t, worker, x, err);
}

/* ---- rows ---- */

/* The blocks of the rows way: nb[j] along kept axis j, of b[j] elements
 * (the last fewer); 'shape' the kept axes' extents. */
typedef struct blocks {
    const qrun *x;
    int64_t nb[CK_MAX_DIMS], b[CK_MAX_DIMS], shape[CK_MAX_DIMS], n;
} blocks;

/* Block bi's box over the kept axes. */
static void block_box(const blocks *k, int64_t bi, int64_t *off, int64_t *box)
{
    for (int j = k->x->nkeep - 1; j >= 0; j--) {
        off[j] = bi % k->nb[j] * k->b[j];
        bi /= k->nb[j];
        box[j] =
            off[j] + k->b[j] <= k->shape[j] ? k->b[j] : k->shape[j] - off[j];
    }
}

/* Rank q's blocks' results (ck_comm_piece_fn), for every q. */
static size_t block_results(void *ctx, int q, void *buf, int dir)
{
    const blocks *k = ctx;
    const qrun *x = k->x;
    size_t esz = ck_dtype_size(x->nd->dtype);
    int64_t b0, b1, at = 0, zero[CK_MAX_DIMS] = {0};

    ck_comm_split(k->n, q, ck_comm_size(), &b0, &b1);
    for (int j = 0; j < x->nq; j++)
        for (int64_t bi = b0; bi < b1; bi++) {
            int64_t off[CK_MAX_DIMS], box[CK_MAX_DIMS];
            char *res = (char *)x->res + (size_t)j * (size_t)x->nout * esz;
            char *at_buf = dir ? (char *)buf + (size_t)at * esz : NULL;
            block_box(k, bi, off, box);
            if (dir > 0)
                ck_box_copy(x->nkeep, esz, at_buf, box, zero, res, k->shape,
                            off, NULL, box);
            else if (dir < 0)
                ck_box_copy(x->nkeep, esz, res, k->shape, off, at_buf, box,
                            zero, NULL, box);
            at += ck_exec_nelem(x->nkeep, box);
        }
    return (size_t)at * esz;
}

/* Output elements in blocks over the kept axes: each block's keys fit
 * the share.  A unit is the operand's chunk on the kept axes, halved
 * along its longest axis until one unit's keys fit; a block is as many
 * units as fit, taken along the last kept axes first. */
static ck_code by_rows(qrun *x, ck_err *err)
{
    const ck_node *m = x->m;
    int64_t u[CK_MAX_DIMS] = {0}, b[CK_MAX_DIMS] = {0}, row = x->n * 8;
    int64_t rs[CK_MAX_DIMS] = {0}, rsh[CK_MAX_DIMS], *nb;
    int64_t per = row, nblocks = 1, share = x->share, b0 = 0, b1;
    int size = ck_comm_size();
    blocks k = {.x = x};
    ck_code rc = CK_OK;

    /* under MPI blocks small enough that each rank gets some (the result
     * does not depend on the blocks: each element is selected whole) */
    if (size > 1 && x->nkeep > 0) {
        int64_t even = (x->nout + size - 1) / size * row;
        share = even < share ? even : share;
    }
    nb = k.nb;

    for (int j = 0; j < x->nkeep; j++) {
        int d = x->keep[j];
        u[j] = m->chunks[d] < m->shape[d] ? m->chunks[d] : m->shape[d];
        per *= u[j];
    }
    while (per > share) {
        int big = 0;
        for (int j = 1; j < x->nkeep; j++)
            if (u[j] > u[big])
                big = j;
        per = per / u[big] * ((u[big] + 1) / 2);
        u[big] = (u[big] + 1) / 2;
    }
    memcpy(b, u, sizeof b);
    for (int j = x->nkeep - 1; j >= 0; j--) {
        int64_t ext = m->shape[x->keep[j]], fit = share / per;
        if (fit * u[j] >= ext) {
            per = per / b[j] * ext;
            b[j] = ext;
            continue;
        }
        per = per / b[j] * (fit * u[j]);
        b[j] = fit * u[j];
        break;
    }
    for (int j = 0; j < x->nkeep; j++) {
        nb[j] = (m->shape[x->keep[j]] + b[j] - 1) / b[j];
        k.b[j] = b[j];
        k.shape[j] = m->shape[x->keep[j]];
        nblocks *= nb[j];
    }
    k.n = nblocks;
    b1 = nblocks;
    if (x->nkeep > 0) /* one element (nothing kept) is whole everywhere */
        ck_comm_split(nblocks, ck_comm_rank(), size, &b0, &b1);
    CK_TRY(ck_budget_charge(&x->r->budget, per, x->nd->name, err));
    if (!(x->rows = ck_alloc_large((size_t)per))) {
        ck_budget_release(&x->r->budget, per);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    for (int d = 0; d < m->ndim; d++) {
        rsh[d] = m->shape[d];
        rs[d] = 0;
    }
    int64_t most = per / (row ? row : 1);
    for (int64_t bi = b0; rc == CK_OK && bi < b1; bi++) {
        int64_t rem = bi, step = x->n;
        for (int j = x->nkeep - 1; j >= 0; j--) {
            int d = x->keep[j];
            rs[d] = rem % nb[j] * b[j];
            rem /= nb[j];
            rsh[d] = rs[d] + b[j] <= m->shape[d] ? b[j] : m->shape[d] - rs[d];
        }
        /* steps: kept axes (C order among them) times n; reduced axes C
         * order among them */
        x->bnout = 1;
        for (int d = m->ndim - 1; d >= 0; d--)
            if (!(x->nd->axes & (1u << d))) {
                x->S[d] = step;
                step *= rsh[d];
                x->bnout *= rsh[d];
            }
        step = 1;
        for (int d = m->ndim - 1; d >= 0; d--)
            if (x->nd->axes & (1u << d)) {
                x->S[d] = step;
                step *= m->shape[d];
            }
        set_region(x, rs, rsh);
        rc = pass(x, PASS_ROWS, err);
        if (rc == CK_OK) {
            x->ntasks = (x->bnout + 7) / 8;
            rc = pass(x, PASS_SELECT, err);
        }
    }
    free(x->rows);
    x->rows = NULL;
    ck_budget_release(&x->r->budget, per);
    if (size > 1 && x->nkeep > 0)
        rc = ck_comm_share(block_results, &k, &x->r->budget, rc, err);
    ck_log(CK_LOG_DEBUG,
           "%s: exact %s in %d pass%s over the data (the values of %" PRId64
           " output element%s gathered at a time)",
           x->nd->where, x->nd->op, x->passes, x->passes == 1 ? "" : "es", most,
           most == 1 ? "" : "s");
    return rc;
}

/* ---- refining ---- */

typedef struct rank {
    int64_t r;
    uint64_t lo, hi;
    int64_t below, count;
    int done;
    uint64_t key;
} rank;

/* ---- refining over MPI ranks ---- */

/* Collective, after a range pass (rc: this rank's outcome): every rank's
 * counts and key range. */
static ck_code range_over_ranks(wstat *s, ck_code rc, ck_err *err)
{
    int size = ck_comm_size();
    wstat *all = malloc(sizeof *all * (size_t)size);

    if (rc == CK_OK && !all)
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    if ((rc = ck_comm_agree(rc, err)) == CK_OK &&
        (rc = ck_comm_allgather(s, sizeof *s, all, err)) == CK_OK) {
        *s = all[0];
        for (int k = 1; k < size; k++) {
            s->nv += all[k].nv;
            s->nnan += all[k].nnan;
            s->lo = all[k].lo < s->lo ? all[k].lo : s->lo;
            s->hi = all[k].hi > s->hi ? all[k].hi : s->hi;
        }
    }
    free(all);
    return rc;
}

/* Collective, after a refining pass: the bins summed over the ranks, and
 * the keys every rank gathered sent to rank 0, in rank order after its
 * own (each interval's buffer holds all of them there); 'fill' becomes
 * each gathering interval's total on every rank. */
static ck_code refine_over_ranks(qrun *x, int64_t hoff, ck_code rc, ck_err *err)
{
    int size = ck_comm_size(), me = ck_comm_rank(), niv = x->niv;
    int64_t *mine = NULL, *fills = NULL;

    if ((rc = ck_comm_agree(rc, err)) != CK_OK)
        return rc;
    if (hoff)
        CK_TRY(ck_tree_sum_u64(x->merged, hoff, &x->r->budget, CK_OK, err));
    mine = calloc((size_t)x->maxiv, sizeof *mine);
    fills = calloc((size_t)x->maxiv * (size_t)size, sizeof *fills);
    if (!mine || !fills)
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    for (int v = 0; rc == CK_OK && v < niv; v++)
        mine[v] = x->iv[v].fill;
    if ((rc = ck_comm_agree(rc, err)) == CK_OK)
        rc = ck_comm_allgather(mine, (size_t)x->maxiv * sizeof *mine, fills,
                               err);
    for (int v = 0; rc == CK_OK && v < niv; v++) {
        ivl *iv = &x->iv[v];
        int64_t at = 0;
        if (!iv->gather)
            continue;
        for (int k = 0; k < size; k++) {
            int64_t f = fills[(size_t)k * (size_t)x->maxiv + (size_t)v];
            if (k == 0 || f == 0 || at + f > iv->count)
                ; /* rank 0's keys are in place; an excess is caught below */
            else if (me == 0)
                rc = ck_comm_recv(iv->buf + at, (size_t)f * 8, k, Q_TAG, err);
            else if (me == k)
                rc = ck_comm_send(iv->buf, (size_t)f * 8, 0, Q_TAG, err);
            at += f;
        }
        iv->fill = at;
    }
    free(mine);
    free(fills);
    return rc;
}

/* One refining pass over the region for the ranks not yet found. */
static ck_code refine_pass(qrun *x, rank *rk, int nr, ck_err *err)
{
    int64_t gather_bytes = 0;
    int nh = 0;
    ck_code rc;

    /* the distinct intervals: ranks are ascending, so equal intervals
     * are neighbours, and distinct ones disjoint */
    x->niv = 0;
    for (int j = 0; j < nr; j++) {
        if (rk[j].done)
            continue;
        if (x->niv && x->iv[x->niv - 1].lo == rk[j].lo)
            continue;
        ivl *iv = &x->iv[x->niv++];
        memset(iv, 0, sizeof *iv);
        iv->lo = rk[j].lo;
        iv->hi = rk[j].hi;
        iv->below = rk[j].below;
        iv->count = rk[j].count;
    }
    /* collect what fits, count the rest into bins */
    for (int v = 0; v < x->niv; v++) {
        ivl *iv = &x->iv[v];
        if (gather_bytes + iv->count * 8 <= x->share) {
            iv->gather = 1;
            gather_bytes += iv->count * 8;
        } else if (nh < Q_BINS / Q_MIN_BINS) {
            nh++;
        }
    }
    int64_t per = Q_BINS;
    while (nh && per / 2 >= Q_MIN_BINS && per > Q_BINS / nh)
        per /= 2;
    int64_t hoff = 0, seen = 0;
    for (int v = 0; v < x->niv; v++) {
        ivl *iv = &x->iv[v];
        if (iv->gather || seen == nh)
            continue;
        seen++;
        uint64_t span = iv->hi - iv->lo;
        while ((span >> iv->shift) >= (uint64_t)per)
            iv->shift++;
        iv->nbins = (int64_t)(span >> iv->shift) + 1;
        iv->hoff = hoff;
        hoff += iv->nbins;
    }
    uint64_t *gbuf = NULL;
    if (gather_bytes) {
        CK_TRY(ck_budget_charge(&x->r->budget, gather_bytes, x->nd->name, err));
        if (!(gbuf = ck_alloc_large((size_t)gather_bytes))) {
            ck_budget_release(&x->r->budget, gather_bytes);
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        }
        int64_t at = 0;
        for (int v = 0; v < x->niv; v++)
            if (x->iv[v].gather) {
                x->iv[v].buf = gbuf + at;
                at += x->iv[v].count;
            }
    }
    for (int w = 0; w < x->threads; w++)
        memset(x->hist[w], 0, sizeof(uint64_t) * (size_t)hoff);
    rc = pass(x, PASS_REFINE, err);
    /* bins: merged in worker order (integer counts: any order gives the
     * same), then each rank's bin is its new interval */
    if (rc == CK_OK && hoff) {
        memset(x->merged, 0, sizeof(uint64_t) * (size_t)hoff);
        for (int w = 0; w < x->threads; w++)
            for (int64_t e = 0; e < hoff; e++)
                x->merged[e] += x->hist[w][e];
    }
    if (ck_comm_size() > 1)
        rc = refine_over_ranks(x, hoff, rc, err);
    for (int j = 0, v = -1; rc == CK_OK && j < nr; j++) {
        if (rk[j].done)
            continue;
        while (v < 0 || x->iv[v].lo != rk[j].lo)
            v++;
        ivl *iv = &x->iv[v];
        int64_t local = rk[j].r - iv->below;
        if (iv->gather) {
            if (iv->fill != iv->count) {
                rc = ck_err_internal(err,
                                     "quantile: gathered %" PRId64
                                     " values, counted %" PRId64,
                                     iv->fill, iv->count);
                break;
            }
            /* every rank of this interval at once */
            int64_t locs[64];
            int k = 0;
            while (j + k < nr && k < 64 && rk[j + k].lo == iv->lo &&
                   !rk[j + k].done) {
                locs[k] = rk[j + k].r - iv->below;
                k++;
            }
            /* (under MPI only rank 0 holds the keys, and tells) */
            if (ck_comm_rank() == 0)
                ck_q_select(iv->buf, iv->count, locs, k);
            for (int i = 0; i < k; i++) {
                rk[j + i].done = 1;
                rk[j + i].key = ck_comm_rank() == 0 ? iv->buf[locs[i]] : 0;
            }
            j += k - 1;
            continue;
        }
        if (!iv->nbins)
            continue; /* waits for a later pass */
        const uint64_t *h = x->merged + iv->hoff;
        int64_t cum = 0, bin = 0;
        while (cum + (int64_t)h[bin] <= local)
            cum += (int64_t)h[bin++];
        rk[j].lo = iv->lo + ((uint64_t)bin << iv->shift);
        rk[j].hi = rk[j].lo + ((((uint64_t)1 << iv->shift) - 1));
        if (rk[j].hi > iv->hi || rk[j].hi < rk[j].lo)
            rk[j].hi = iv->hi;
        rk[j].below = iv->below + cum;
        rk[j].count = (int64_t)h[bin];
    }
    if (ck_comm_size() > 1 && gather_bytes &&
        (rc = ck_comm_agree(rc, err)) == CK_OK)
        rc = ck_comm_bcast(rk, sizeof *rk * (size_t)nr, 0, err);
    free(gbuf);
    if (gather_bytes)
        ck_budget_release(&x->r->budget, gather_bytes);
    return rc;
}

/* Output element gi, whose values are the region rs/rsh, by refining. */
static ck_code by_refining(qrun *x, int64_t gi, const int64_t *rs,
                           const int64_t *rsh, ck_err *err)
{
    rank *r = NULL;
    int64_t nv = 0, nnan = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    ck_code rc;

    set_region(x, rs, rsh);
    for (int w = 0; w < x->threads; w++) {
        x->st[w].lo = UINT64_MAX;
        x->st[w].hi = 0;
        x->st[w].nv = x->st[w].nnan = 0;
    }
    rc = pass(x, PASS_RANGE, err);
    for (int w = 0; w < x->threads; w++) {
        nv += x->st[w].nv;
        nnan += x->st[w].nnan;
        if (x->st[w].lo < lo)
            lo = x->st[w].lo;
        if (x->st[w].hi > hi)
            hi = x->st[w].hi;
    }
    if (ck_comm_size() > 1) {
        wstat all = {.lo = lo, .hi = hi, .nv = nv, .nnan = nnan};
        rc = range_over_ranks(&all, rc, err);
        lo = all.lo;
        hi = all.hi;
        nv = all.nv;
        nnan = all.nnan;
    }
    if (rc != CK_OK)
        return rc;
    if ((nnan && !x->nanf) || nv == 0) {
        put_nan(x, gi);
        return CK_OK;
    }
    int nr = want_ranks(x, nv, x->wrk[0]);
    if (!(r = calloc((size_t)nr, sizeof *r)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    for (int j = 0; j < nr; j++) {
        r[j].r = x->wrk[0][j];
        r[j].lo = lo;
        r[j].hi = hi;
        r[j].count = nv;
    }
    rc = CK_OK;
    for (;;) {
        int left = 0;
        for (int j = 0; j < nr; j++) {
            if (!r[j].done && r[j].lo == r[j].hi) {
                r[j].done = 1; /* one key: no need to look */
                r[j].key = r[j].lo;
            }
            left += !r[j].done;
        }
        if (!left || rc != CK_OK)
            break;
        rc = refine_pass(x, r, nr, err);
    }
    if (rc == CK_OK) {
        for (int j = 0; j < nr; j++)
            x->wkey[0][j] = r[j].key;
        finish(x, gi, nv, x->wrk[0], x->wkey[0], nr);
    }
    free(r);
    return rc;
}

/* ---- the step ---- */

static ck_code setup(qrun *x, ck_err *err)
{
    xrun *r = x->r;
    size_t esz = ck_dtype_size(x->dt);
    int threads = r->o->threads > 0 ? r->o->threads : ck_ncpus();
    int64_t cn, arena, hist, left;
    char what[96];

    CK_TRY(
        ck_grid_init(&x->g, x->m->ndim, x->m->shape, x->m->chunks, esz, err));
    cn = x->g.chunk_nelem;
    arena =
        (int64_t)(ck_exec_al((size_t)cn * esz) + ck_exec_al((size_t)cn * 8) +
                  ck_exec_bytes(r, x->opnd, (size_t)cn, -1, 0) + 256);
    x->maxiv = x->unit == CK_Q_MEDIAN ? 2 : 2 * x->nq + 2;
    /* a worker's bins, counts per interval and ranks */
    hist = (Q_BINS + 3 * (int64_t)x->maxiv) * 8;
    left = r->budget.limit - r->budget.used - (Q_BINS + x->maxiv) * 8;
    if (left < arena + hist) {
        char have[32], need[32];
        return ck_err_set(
            err, CK_ENOMEM,
            "--memory %s is too small: one worker needs %s (raise --memory "
            "or use smaller chunks)",
            ck_size_str((double)r->budget.limit, have, sizeof have),
            ck_need_str((double)(arena + hist + r->budget.limit - left), need,
                        sizeof need));
    }
    /* workers take at most half of what is left: the rest is for the
     * gathered keys */
    if (threads > Q_MAX_WORKERS)
        threads = Q_MAX_WORKERS;
    if ((int64_t)threads * (arena + hist) > left / 2)
        threads = (int)(left / 2 / (arena + hist));
    if (threads < 1)
        threads = 1;
    x->threads = threads;
    for (int w = 0; w < threads; w++) {
        snprintf(what, sizeof what, "%s, worker %d,", x->nd->where, w);
        CK_TRY(ck_arena_reserve(&x->arena[w], &r->budget, (size_t)arena, what,
                                err));
    }
    int64_t extra = (int64_t)threads * hist + (Q_BINS + x->maxiv) * 8;
    CK_TRY(ck_budget_charge(&r->budget, extra, x->nd->name, err));
    x->charged = extra;
    for (int w = 0; w < threads; w++) {
        x->hist[w] = malloc(sizeof(uint64_t) * Q_BINS);
        x->lc[w] = malloc(sizeof(int64_t) * (size_t)x->maxiv);
        x->wrk[w] = malloc(sizeof(int64_t) * (size_t)x->maxiv);
        x->wkey[w] = malloc(sizeof(uint64_t) * (size_t)x->maxiv);
        if (!x->hist[w] || !x->lc[w] || !x->wrk[w] || !x->wkey[w])
            return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    x->merged = malloc(sizeof(uint64_t) * Q_BINS);
    x->iv = malloc(sizeof(ivl) * (size_t)x->maxiv);
    if (!x->merged || !x->iv)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    x->share = r->budget.limit - r->budget.used;
    return CK_OK;
}

static void teardown(qrun *x)
{
    for (int w = 0; w < Q_MAX_WORKERS; w++) {
        ck_arena_release(&x->arena[w]);
        free(x->hist[w]);
        free(x->lc[w]);
        free(x->wrk[w]);
        free(x->wkey[w]);
    }
    free(x->merged);
    free(x->iv);
    ck_budget_release(&x->r->budget, x->charged);
}

/* NumPy's RuntimeWarnings, as the reductions give theirs (exec.c): a
 * result over an empty axis ("Mean of empty slice"), or a nan-quantile's
 * of a slice of NaNs only ("All-NaN slice encountered"). */
static void warn_nan(const qrun *x)
{
    size_t n = (size_t)x->nq * (size_t)x->nout;
    int any = 0;

    if (!x->nanf && x->n != 0)
        return;
    for (size_t k = 0; k < n && !any; k++)
        any = x->nd->dtype == CK_F32 ? isnan(((const float *)x->res)[k])
                                     : isnan(((const double *)x->res)[k]);
    if (any && x->n == 0)
        ck_log(CK_LOG_WARN, "%s: %s of an empty selection is NaN",
               ck_exec_who(x->r, x->nd), x->nd->op);
    else if (any)
        ck_log(CK_LOG_WARN, "%s: %s of an all-NaN slice is NaN",
               ck_exec_who(x->r, x->nd), x->nd->op);
}

ck_code ck_exec_run_quantile(xrun *r, int i, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    qrun *x = calloc(1, sizeof *x);
    int64_t res_bytes;
    ck_code rc = CK_OK;

    if (!x)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    x->r = r;
    x->nd = nd;
    x->opnd = nd->arg[0];
    x->m = &r->p->node[x->opnd];
    x->dt = x->m->dtype;
    x->unit = nd->sub & 3;
    x->nanf = (nd->sub & CK_Q_NAN) != 0;
    x->nq = (int)nd->nvals;
    x->q = nd->vals;
    x->n = 1;
    x->nout = 1;
    for (int d = 0; d < x->m->ndim; d++) {
        if (nd->axes & (1u << d)) {
            x->n *= x->m->shape[d];
        } else {
            x->keep[x->nkeep++] = d;
            x->nout *= x->m->shape[d];
        }
    }
    x->twice = x->unit == CK_Q_MEDIAN && x->nanf && x->nkeep > 0 &&
               x->n < Q_NANMEDIAN_SMALL;
    /* the result stays for the run (charged, as folds' are) */
    res_bytes = (int64_t)x->nq * x->nout * (int64_t)ck_dtype_size(nd->dtype);
    rc = ck_budget_charge(&r->budget, res_bytes, nd->name, err);
    if (rc == CK_OK &&
        !(r->x[i].mem = malloc(res_bytes ? (size_t)res_bytes : 1)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    x->res = r->x[i].mem;
    if (rc != CK_OK || x->nq == 0 || x->nout == 0)
        goto out;
    if (x->n == 0) {
        for (int64_t gi = 0; gi < x->nout; gi++)
            put_nan(x, gi);
        goto out;
    }
    rc = setup(x, err);
    /* every rank must take the same way, and gather alike: the least
     * share of any rank (ranks may differ in threads) */
    if (ck_comm_size() > 1 && (rc = ck_comm_agree(rc, err)) == CK_OK) {
        int64_t *sh = calloc((size_t)ck_comm_size(), sizeof *sh);
        rc = sh ? CK_OK : ck_err_set(err, CK_ENOMEM, "out of memory");
        if ((rc = ck_comm_agree(rc, err)) == CK_OK)
            rc = ck_comm_allgather(&x->share, sizeof x->share, sh, err);
        for (int k = 0; rc == CK_OK && k < ck_comm_size(); k++)
            x->share = sh[k] < x->share ? sh[k] : x->share;
        free(sh);
    }
    if (rc != CK_OK)
        goto out;
    if (x->n * 8 <= x->share) {
        rc = by_rows(x, err);
    } else {
        /* one output element's values do not fit: refine each */
        int64_t rs[CK_MAX_DIMS] = {0}, rsh[CK_MAX_DIMS];
        for (int64_t gi = 0; rc == CK_OK && gi < x->nout; gi++) {
            int64_t rem = gi;
            for (int d = x->m->ndim - 1; d >= 0; d--) {
                if (nd->axes & (1u << d)) {
                    rs[d] = 0;
                    rsh[d] = x->m->shape[d];
                } else {
                    rs[d] = rem % x->m->shape[d];
                    rsh[d] = 1;
                    rem /= x->m->shape[d];
                }
            }
            rc = by_refining(x, gi, rs, rsh, err);
        }
        ck_log(CK_LOG_DEBUG,
               "%s: exact %s in %d pass%s over the data, refining "
               "histograms of keys",
               nd->where, nd->op, x->passes, x->passes == 1 ? "" : "es");
    }
out:
    if (rc == CK_OK)
        warn_nan(x);
    teardown(x);
    free(x);
    if (rc != CK_OK)
        ck_err_prefix(err, "%s", nd->where);
    return rc;
}
