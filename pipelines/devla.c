/*
 * pipelines/devla.c - see devla.h.
 */
#include "pipelines/devla.h"

#include <string.h>

#include "base/ck_mem.h"
#include "pipelines/optab.h"

/* cuSOLVER's QR workspace (geqrf's, about n panels of 64 columns) and
 * what the SVD of an n x n R takes beside it: R, its U and V^T, and
 * gesvd's work, a few n x n each. */
static int64_t qr_work(int64_t n)
{
    return 64 * n * 8 + n * 8;
}
static int64_t svd_r(int64_t n)
{
    return 5 * n * n * 8;
}

int ck_devla_part_used(const ck_plan *p, int i, int part)
{
    char live[CK_MAX_NODES] = {0};

    for (int k = 0; k < p->nout; k++)
        live[p->out[k].node] = 1;
    for (int j = p->n - 1; j >= 0; j--) {
        const ck_node *nd = &p->node[p->order[j]];
        if (!live[p->order[j]])
            continue;
        if (nd->kind == CK_NODE_PART && nd->arg[0] == i && nd->part == part)
            return 1;
        for (int a = 0; a < nd->nargs; a++)
            if (nd->arg[a] >= 0)
                live[nd->arg[a]] = 1;
    }
    return 0;
}

/* rows: the most rows a block can hold, as whole units (chunks) of rows,
 * at most m; *least the rows the smallest block must have (at least min
 * rows, rounded up to whole units, at most m). */
static int64_t whole(int64_t rows, int64_t unit, int64_t m)
{
    if (unit < 1)
        unit = 1;
    rows = rows / unit * unit;
    return rows < m ? rows : m;
}
static int64_t least(int64_t min, int64_t unit, int64_t m)
{
    if (unit < 1)
        unit = 1;
    int64_t r = (min + unit - 1) / unit * unit;
    r = r > unit ? r : unit;
    return r < m ? r : m;
}

/* A streamed plan: per_row device bytes for each block row, fixed bytes
 * beside the blocks; blocks of whole units of rows, capped at
 * CK_DEVLA_BLOCK_MAX of input (row_in bytes a row), at least min_rows. */
static void stream(ck_devla *o, int64_t m, int64_t unit, int64_t min_rows,
                   int64_t per_row, int64_t fixed, int64_t row_in,
                   int64_t budget)
{
    int64_t lo = least(min_rows, unit, m), cap, b;

    cap = whole(CK_DEVLA_BLOCK_MAX / (row_in > 0 ? row_in : 1), unit, m);
    cap = cap > lo ? cap : lo;
    b = budget > fixed ? whole((budget - fixed) / per_row, unit, m) : 0;
    b = b < cap ? b : cap;
    b = b > lo ? b : lo;
    o->mode = CK_DEVLA_STREAMED;
    o->block_rows = b;
    o->blocks = m > 0 ? (m + b - 1) / b : 0;
    o->device_bytes = fixed + per_row * b;
    o->need_bytes = fixed + per_row * lo;
}

/* The resident mode when budget holds its res device bytes: all m rows
 * at once, uploaded once (upload bytes) and read there as often as the
 * method needs; its need counts toward the least either way. */
static void resident(ck_devla *o, int64_t res, int64_t m, int64_t upload,
                     int64_t budget)
{
    if (res < o->need_bytes)
        o->need_bytes = res;
    if (res > budget)
        return;
    o->mode = CK_DEVLA_RESIDENT;
    o->device_bytes = res;
    o->passes = 1;
    o->upload_bytes = upload;
    o->block_rows = m;
    o->blocks = 1;
}

static void svd_exact(const ck_plan *p, int i, int64_t m, int64_t n,
                      int64_t unit, int tall, int64_t budget, ck_devla *o)
{
    int64_t l = m * n * 8, res;
    int rows_pass = ck_devla_part_used(p, i, tall ? CK_PART_U : CK_PART_VT);
    int cols_out = ck_devla_part_used(p, i, tall ? CK_PART_VT : CK_PART_U);

    /* resident: L, R's factors, the QR's work, and two 64 MiB blocks of
     * the rows' factor (U = Q U_R) on their way down */
    res = l + svd_r(n) + qr_work(n);
    if (rows_pass) {
        int64_t ub = whole((64 << 20) / (n > 0 ? n * 8 : 8), unit, m);
        res += 2 * (ub > 0 ? ub : (m < unit ? m : unit)) * n * 8;
    }
    /* TSQR: two blocks in flight and the stacked R pair on pass 1; two
     * blocks in and two of U out, beside V S^-1, on pass 2 */
    stream(o, m, unit, n, (rows_pass ? 4 : 2) * n * 8,
           2 * n * n * 8 + svd_r(n) + qr_work(n), n * 8, budget);
    /* (2 more, known only from S, where U is made orthonormal again:
     * linalg.c, orthonormalize) */
    o->passes = rows_pass ? 2 : 1;
    o->upload_bytes = o->passes * l;
    o->download_bytes =
        (rows_pass ? l : 0) + (cols_out ? n * n * 8 : 0) + n * 8;
    resident(o, res, m, l, budget);
}

static void svd_randomized(const ck_node *nd, int64_t m, int64_t n,
                           int64_t unit, int64_t budget, ck_devla *o)
{
    int64_t lr = nd->k + nd->oversample < n ? nd->k + nd->oversample : n;
    int64_t l = m * n * 8, fixed = 4 * n * lr * 8 + 3 * lr * lr * 8,
            res = l + m * lr * 8 + fixed;

    /* streamed: two blocks of rows in flight, each with its rows of the
     * sketch y going back */
    stream(o, m, unit, 1, 2 * (n + lr) * 8, fixed, n * 8, budget);
    o->passes = nd->power_iters + 1;
    o->upload_bytes = o->passes * l;
    o->download_bytes = m * lr * 8 + n * lr * 8;
    resident(o, res, m, l, budget);
}

static void matmul(const ck_plan *p, const ck_node *nd, int64_t budget,
                   ck_devla *o)
{
    const ck_node *a = &p->node[nd->arg[0]];
    int64_t e = nd->dtype == CK_F32 ? 4 : 8;
    int64_t m = nd->shape[0], n = nd->shape[1], k = a->shape[1];
    int64_t tm = nd->chunks[0], tn = nd->chunks[1];
    int64_t ab = m * k * e, bb = k * n * e, tiles = 2 * tm * tn * e;
    int64_t rows = (m + tm - 1) / tm, cols = (n + tn - 1) / tn;
    int64_t ca = ab + 2 * k * tn * e, cb = bb + 2 * tm * k * e;
    int64_t kk, band = 2 * (tm + tn) * e, least_k = k < 64 ? k : 64;

    o->download_bytes = m * n * e;
    o->blocks = rows * cols;
    o->passes = 1;
    /* bands of both, k split into the largest extent that fits (whole
     * 64s), the accumulating tile and the one going down beside them */
    kk = budget > tiles ? (budget - tiles) / band : 0;
    kk = kk >= k ? k : kk / 64 * 64;
    kk = kk > least_k ? kk : least_k;
    o->mode = CK_DEVLA_STREAMED;
    o->block_rows = kk;
    o->device_bytes = tiles + band * kk;
    o->need_bytes = tiles + band * least_k;
    o->upload_bytes = ab * cols + bb * rows;
    if (ca < o->need_bytes)
        o->need_bytes = ca;
    if (cb < o->need_bytes)
        o->need_bytes = cb;
    if (ab + bb + tiles < o->need_bytes)
        o->need_bytes = ab + bb + tiles;
    /* of the two that fit, the one that takes less keeps its operand */
    if (cb + tiles <= budget && (cb <= ca || ca + tiles > budget)) {
        o->mode = CK_DEVLA_CACHE_B;
        o->device_bytes = cb + tiles;
    } else if (ca + tiles <= budget) {
        o->mode = CK_DEVLA_CACHE_A;
        o->device_bytes = ca + tiles;
    }
    if (o->mode != CK_DEVLA_STREAMED) {
        o->upload_bytes = ab + bb;
        o->block_rows = k;
    }
    if (ab + bb + tiles <= budget) {
        o->mode = CK_DEVLA_RESIDENT;
        o->device_bytes = ab + bb + tiles;
        o->upload_bytes = ab + bb;
        o->block_rows = k;
    }
}

static void glm_fit(const ck_plan *p, const ck_node *nd, int64_t budget,
                    ck_devla *o)
{
    const ck_node *x = &p->node[nd->arg[0]];
    int64_t m = x->shape[0], d = x->shape[1] + (nd->glm.fit_intercept ? 1 : 0);
    /* per row: X's row with its intercept, y, and the solver's vectors
     * (eta, mu, weights, working response); beside them the Hessian, its
     * factor and the solver's small dense state */
    int64_t fixed = 3 * d * d * 8 + 8 * d * 8, res = m * (d + 5) * 8 + fixed;

    stream(o, m, x->chunks[0], 1, 2 * (d + 1) * 8 + 4 * 8, fixed, d * 8,
           budget);
    o->passes = -1;
    o->upload_bytes = m * (x->shape[1] + 1) * 8;
    o->download_bytes = d * 8;
    resident(o, res, m, o->upload_bytes, budget);
}

int ck_devla_plan(const ck_plan *p, int i, int64_t budget, ck_devla *out)
{
    const ck_node *nd = &p->node[i];

    memset(out, 0, sizeof *out);
    out->node = i;
    switch (nd->kind) {
    case CK_NODE_SVD: {
        const ck_node *a = &p->node[nd->arg[0]];
        int tall = a->shape[0] >= a->shape[1];
        int64_t m = a->shape[tall ? 0 : 1], n = a->shape[tall ? 1 : 0];
        int64_t unit = a->chunks[tall ? 0 : 1];
        if (nd->randomized)
            svd_randomized(nd, m, n, unit, budget, out);
        else
            svd_exact(p, i, m, n, unit, tall, budget, out);
        return 1;
    }
    case CK_NODE_MATMUL:
        matmul(p, nd, budget, out);
        return 1;
    case CK_NODE_GLM:
        glm_fit(p, nd, budget, out);
        return 1;
    case CK_NODE_PREDICT: {
        /* X's own row chunks, two in flight with their results, beside
         * the coefficients */
        const ck_node *x = &p->node[nd->arg[0]];
        int64_t m = x->shape[0], c = x->shape[1];
        int64_t b = x->chunks[0] < m ? x->chunks[0] : m;
        out->mode = CK_DEVLA_STREAMED;
        out->block_rows = b;
        out->blocks = b > 0 ? (m + b - 1) / b : 0;
        out->passes = 1;
        out->device_bytes = (c + 1) * 8 + 2 * (c + 1) * 8 * b;
        out->need_bytes = out->device_bytes;
        out->upload_bytes = m * c * 8;
        out->download_bytes = m * 8;
        return 1;
    }
    default:
        return 0;
    }
}

ck_code ck_devla_check(const ck_plan *p, int64_t budget, ck_err *err)
{
    char need[32], have[32];
    ck_devla o;

    for (int j = 0; j < p->n; j++) {
        int i = p->order[j];
        if (!ck_devla_plan(p, i, budget, &o) || o.need_bytes <= budget)
            continue;
        return ck_err_set(
            err, CK_ENOMEM,
            "%s %s: needs %s of device memory (its smallest blocks), "
            "--gpu-memory gives %s",
            ck_optab_label(&p->node[i]), p->node[i].name,
            ck_need_str((double)o.need_bytes, need, sizeof need),
            ck_size_str((double)budget, have, sizeof have));
    }
    return CK_OK;
}

static const char *mode_str(const ck_node *nd, const ck_devla *o)
{
    switch (o->mode) {
    case CK_DEVLA_RESIDENT:
        if (nd->kind == CK_NODE_MATMUL)
            return "both operands resident";
        if (nd->kind == CK_NODE_SVD)
            return nd->randomized ? "resident: the passes over device memory"
                                  : "resident: QR, the SVD of R and the "
                                    "rows' factor on the device";
        return "resident: every iteration over device memory";
    case CK_DEVLA_CACHE_A:
        return "a resident, b's column bands streamed";
    case CK_DEVLA_CACHE_B:
        return "b resident, a's row bands streamed";
    default:
        if (nd->kind == CK_NODE_MATMUL)
            return "bands of a and b streamed per tile";
        if (nd->kind == CK_NODE_SVD && !nd->randomized)
            return "streamed TSQR: each block's QR on the device";
        return "row blocks streamed";
    }
}

void ck_devla_print(const ck_plan *p, int64_t budget, FILE *f)
{
    char dev[32], up[32], down[32];
    ck_devla o;

    for (int j = 0; j < p->n; j++) {
        int i = p->order[j];
        const ck_node *nd = &p->node[i];
        if (!ck_devla_plan(p, i, budget, &o))
            continue;
        fprintf(f, "device %s %s: %s", ck_optab_label(nd), nd->name,
                mode_str(nd, &o));
        if (nd->kind == CK_NODE_MATMUL)
            fprintf(f, "; %lld tiles, k in bands of %lld", (long long)o.blocks,
                    (long long)o.block_rows);
        else if (o.mode == CK_DEVLA_STREAMED)
            fprintf(f, "; %lld blocks of up to %lld rows, 2 in flight",
                    (long long)o.blocks, (long long)o.block_rows);
        if (o.passes > 1)
            fprintf(f, "; %d passes", o.passes);
        else if (o.passes < 0)
            fprintf(f, "; one pass per iteration");
        fprintf(f, "; device peak %s, %s up%s, %s down\n",
                ck_size_str((double)o.device_bytes, dev, sizeof dev),
                ck_size_str((double)o.upload_bytes, up, sizeof up),
                o.passes < 0 ? " per iteration" : "",
                ck_size_str((double)o.download_bytes, down, sizeof down));
    }
}
