/*
 * pipelines/optab.c - the op table: what every pipeline op is, in one row.
 * The parser finds a step's op here and parses its args as the row says,
 * the executor evaluates and sizes a node through its row, and the help,
 * the one-step commands and `chunkctl plan` list and name ops from here.
 * Nothing here computes: the rows point at plan.c, exec.c and linalg.c.
 */
#include "pipelines/optab.h"

#include <string.h>

#include "ops/ew.h"
#include "ops/reduce.h"
#include "pipelines/exec_impl.h"

static const char *ew_member(int sub)
{
    return ck_ew_name((ck_ew_op)sub);
}

static int ew_arity(int sub)
{
    return ck_ew_arity((ck_ew_op)sub);
}

static const char *red_member(int sub)
{
    return ck_red_name((ck_red_op)sub);
}

static int red_arity(int sub)
{
    (void)sub;
    return 1;
}

/* Fields every row sets alike. */
#define BOX(op) .bytes = ck_exec_##op##_bytes, .eval = ck_exec_##op##_eval

/* Each kind's first row is the one ck_optab_kind finds.  Rows without a
 * parse function (inputs, the results of svd and glm_fit) are not step
 * ops: they are made by the parser itself. */
static const ck_op_def table[] = {
    {.name = "elementwise",
     .kind = CK_NODE_EW,
     .nmembers = CK_EW_COUNT,
     .member = ew_member,
     .member_arity = ew_arity,
     .backends = CK_OPB_CPU,
     .help = "NumPy ufuncs with broadcasting, fused per chunk",
     .parse = ck_plan_parse_ew,
     BOX(ew)},
    {.name = "reductions",
     .kind = CK_NODE_REDUCE,
     .nmembers = CK_RED_COUNT,
     .member = red_member,
     .member_arity = red_arity,
     .flags = CK_OP_PRINTS | CK_OP_FOLD | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "reductions over axes (axis, keepdims, ddof)",
     .parse = ck_plan_parse_reduce,
     BOX(held)},
    {.name = "histogram",
     .kind = CK_NODE_HIST,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_FOLD | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.histogram (bins, range or edges, density, weights)",
     .parse = ck_plan_parse_hist,
     BOX(held)},
    {.name = "histogram2d",
     .kind = CK_NODE_HIST2D,
     .min_args = 2,
     .max_args = 2,
     .flags = CK_OP_FOLD | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.histogram2d of x and y (bins, range, density, weights)",
     .parse = ck_plan_parse_hist2d,
     BOX(held)},
    {.name = "mask",
     .kind = CK_NODE_MASK,
     .min_args = 2,
     .max_args = 2,
     .flags = CK_OP_FOLD | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "x[cond]: the values where a boolean array is true (1-D)",
     .parse = ck_plan_parse_mask,
     BOX(held)},
    {.name = "astype",
     .kind = CK_NODE_ASTYPE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "the array in another dtype (dtype)",
     .parse = ck_plan_parse_astype,
     BOX(astype)},
    {.name = "slice",
     .kind = CK_NODE_SLICE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "x[start:stop:step, i, ...] (index)",
     .parse = ck_plan_parse_slice,
     BOX(slice)},
    {.name = "transpose",
     .kind = CK_NODE_TRANSPOSE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "permute axes (axes; default: reversed)",
     .parse = ck_plan_parse_transpose,
     BOX(transpose)},
    {.name = "moveaxis",
     .kind = CK_NODE_TRANSPOSE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.moveaxis (source, destination)",
     .parse = ck_plan_parse_moveaxis,
     BOX(transpose)},
    {.name = "swapaxes",
     .kind = CK_NODE_TRANSPOSE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.swapaxes (axis1, axis2)",
     .parse = ck_plan_parse_swapaxes,
     BOX(transpose)},
    {.name = "reshape",
     .kind = CK_NODE_RESHAPE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "C-order reshape (shape, one -1 allowed)",
     .parse = ck_plan_parse_reshape,
     BOX(reshape)},
    {.name = "squeeze",
     .kind = CK_NODE_RESHAPE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "drop axes of length 1 (axis; default: all of them)",
     .parse = ck_plan_parse_squeeze,
     BOX(reshape)},
    {.name = "expand_dims",
     .kind = CK_NODE_RESHAPE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "new axes of length 1 (axis)",
     .parse = ck_plan_parse_expand_dims,
     BOX(reshape)},
    {.name = "broadcast_to",
     .kind = CK_NODE_BROADCAST,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.broadcast_to (shape)",
     .parse = ck_plan_parse_broadcast_to,
     BOX(broadcast)},
    {.name = "take",
     .kind = CK_NODE_TAKE,
     .min_args = 1,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "numpy.take along an axis (indices or an int array; axis)",
     .parse = ck_plan_parse_take,
     BOX(take)},
    {.name = "compress",
     .kind = CK_NODE_TAKE,
     .sub = 1, /* take's parse, the indices from a boolean array */
     .min_args = 1,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "numpy.compress: x[..., cond, ...] along an axis (condition)",
     .parse = ck_plan_parse_take,
     BOX(take)},
    {.name = "tensordot",
     .kind = CK_NODE_CONTRACT,
     .min_args = 2,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "numpy.tensordot of two arrays (axes), through gemm",
     .parse = ck_plan_parse_contract,
     BOX(contract)},
    {.name = "einsum",
     .kind = CK_NODE_CONTRACT,
     .sub = 1, /* tensordot's evaluation, the axes from subscripts */
     .min_args = 2,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "numpy.einsum of two arrays, contractions (subscripts)",
     .parse = ck_plan_parse_contract,
     BOX(contract)},
    {.name = "isin",
     .kind = CK_NODE_ISIN,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.isin: membership in a list (values, invert)",
     .parse = ck_plan_parse_isin,
     BOX(isin)},
    {.name = "rechunk",
     .kind = CK_NODE_RECHUNK,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "the same values streamed in other chunks (chunks)",
     .parse = ck_plan_parse_rechunk,
     BOX(rechunk)},
    {.name = "concatenate",
     .kind = CK_NODE_CONCAT,
     .min_args = 1,
     .max_args = -1,
     .backends = CK_OPB_CPU,
     .help = "join arrays along an existing axis (axis)",
     .parse = ck_plan_parse_concat,
     BOX(concat)},
    {.name = "stack",
     .kind = CK_NODE_CONCAT,
     .sub = 1, /* concatenate's parse, with a new axis */
     .min_args = 1,
     .max_args = -1,
     .backends = CK_OPB_CPU,
     .help = "join arrays along a new axis (axis)",
     .parse = ck_plan_parse_concat,
     BOX(concat)},
    {.name = "random",
     .kind = CK_NODE_RANDOM,
     .flags = CK_OP_SOURCE,
     .backends = CK_OPB_CPU,
     .help = "reproducible random values (shape, dist, seed, dtype, chunks)",
     .parse = ck_plan_parse_random,
     BOX(random)},
    {.name = "matmul",
     .kind = CK_NODE_MATMUL,
     .min_args = 2,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "a @ b of 2-D arrays, tile by tile (DGEMM/SGEMM)",
     .parse = ck_plan_parse_matmul,
     BOX(matmul)},
    {.name = "svd",
     .kind = CK_NODE_SVD,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "SVD of a 2-D array: results .U .S .Vt (k, method)",
     .parse = ck_plan_parse_svd,
     .bytes = ck_exec_held_bytes, /* only its results are evaluated */
     .run = ck_exec_run_svd},
    {.name = "glm_fit",
     .kind = CK_NODE_GLM,
     .min_args = 2,
     .max_args = 2,
     .flags = CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "fit a GLM to X and y: results .coef .intercept (family, ...)",
     .parse = ck_plan_parse_glm,
     .bytes = ck_exec_held_bytes, /* only its results are evaluated */
     .run = ck_exec_run_glm},
    {.name = "glm_predict",
     .kind = CK_NODE_PREDICT,
     .min_args = 1,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "a GLM's mean response for each row of X (model or coef)",
     .parse = ck_plan_parse_predict,
     BOX(predict)},
    {.name = "convolve",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_CONVOLVE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "scipy.ndimage.convolve with a small N-D kernel (weights, mode)",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "correlate",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_CORRELATE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "scipy.ndimage.correlate (weights, mode, cval, origin)",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "uniform_filter",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_UNIFORM,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "scipy.ndimage.uniform_filter (size, mode, cval)",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "gaussian_filter",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_GAUSSIAN,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "scipy.ndimage.gaussian_filter (sigma, truncate, mode, cval)",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "gradient",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_GRADIENT,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.gradient along one axis (axis)",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "diff",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_DIFF,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.diff along an axis (n, axis)",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "cumsum",
     .kind = CK_NODE_SCAN,
     .sub = CK_SCAN_CUMSUM,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.cumsum along an axis (axis, dtype)",
     .parse = ck_plan_parse_scan,
     BOX(scan),
     .run = ck_exec_run_scan},
    {.name = "cumprod",
     .kind = CK_NODE_SCAN,
     .sub = CK_SCAN_CUMPROD,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.cumprod along an axis (axis, dtype)",
     .parse = ck_plan_parse_scan,
     BOX(scan),
     .run = ck_exec_run_scan},
    {.name = "quantile",
     .kind = CK_NODE_QUANTILE,
     .sub = CK_Q_QUANTILE,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.quantile, exact (q, axis, keepdims)",
     .parse = ck_plan_parse_quantile,
     BOX(held),
     .run = ck_exec_run_quantile},
    {.name = "nanquantile",
     .kind = CK_NODE_QUANTILE,
     .sub = CK_Q_QUANTILE | CK_Q_NAN,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.nanquantile, exact (q, axis, keepdims)",
     .parse = ck_plan_parse_quantile,
     BOX(held),
     .run = ck_exec_run_quantile},
    {.name = "percentile",
     .kind = CK_NODE_QUANTILE,
     .sub = CK_Q_PERCENTILE,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.percentile, exact (q, axis, keepdims)",
     .parse = ck_plan_parse_quantile,
     BOX(held),
     .run = ck_exec_run_quantile},
    {.name = "nanpercentile",
     .kind = CK_NODE_QUANTILE,
     .sub = CK_Q_PERCENTILE | CK_Q_NAN,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.nanpercentile, exact (q, axis, keepdims)",
     .parse = ck_plan_parse_quantile,
     BOX(held),
     .run = ck_exec_run_quantile},
    {.name = "median",
     .kind = CK_NODE_QUANTILE,
     .sub = CK_Q_MEDIAN,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.median, exact (axis, keepdims)",
     .parse = ck_plan_parse_quantile,
     BOX(held),
     .run = ck_exec_run_quantile},
    {.name = "nanmedian",
     .kind = CK_NODE_QUANTILE,
     .sub = CK_Q_MEDIAN | CK_Q_NAN,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.nanmedian, exact (axis, keepdims)",
     .parse = ck_plan_parse_quantile,
     BOX(held),
     .run = ck_exec_run_quantile},
    {.name = "coarsen",
     .kind = CK_NODE_COARSEN,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "dask.array.coarsen: block reductions (reduction, window)",
     .parse = ck_plan_parse_coarsen,
     BOX(coarsen)},
    {.name = "unique",
     .kind = CK_NODE_COUNT,
     .sub = CK_COUNT_UNIQUE,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.unique: sorted values (.values) and counts (.counts)",
     .parse = ck_plan_parse_count,
     BOX(held),
     .run = ck_exec_run_count},
    {.name = "bincount",
     .kind = CK_NODE_COUNT,
     .sub = CK_COUNT_BINCOUNT,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.bincount of non-negative integers (minlength, weights)",
     .parse = ck_plan_parse_count,
     BOX(held),
     .run = ck_exec_run_count},
    {.name = "(input)",
     .kind = CK_NODE_INPUT,
     .backends = CK_OPB_CPU,
     BOX(input)},
    {.name = "(result)",
     .kind = CK_NODE_PART,
     .backends = CK_OPB_CPU,
     BOX(part)},
};

enum { NROWS = sizeof table / sizeof table[0] };

const ck_op_def *ck_optab_kind(ck_node_kind k)
{
    for (int i = 0; i < NROWS; i++)
        if (table[i].kind == k)
            return &table[i];
    return &table[NROWS - 1]; /* unreachable: every kind has a row */
}

const ck_op_def *ck_optab_find(const char *name, int *sub)
{
    for (int i = 0; i < NROWS; i++) {
        const ck_op_def *d = &table[i];
        for (int m = 0; m < d->nmembers; m++)
            if (strcmp(d->member(m), name) == 0) {
                *sub = m;
                return d;
            }
        if (!d->nmembers && d->parse && strcmp(d->name, name) == 0) {
            *sub = d->sub;
            return d;
        }
    }
    return NULL;
}

int ck_optab_rows(void)
{
    return NROWS;
}

const ck_op_def *ck_optab_row(int k)
{
    return k >= 0 && k < NROWS ? &table[k] : NULL;
}

const char *ck_optab_label(const ck_node *n)
{
    const ck_op_def *d = ck_optab_kind(n->kind);

    switch (n->kind) {
    case CK_NODE_EW:
        return ck_ew_name(n->ew);
    case CK_NODE_REDUCE:
        return ck_red_name(n->red);
    case CK_NODE_CONCAT:
        return n->stack ? "stack" : "concatenate";
    case CK_NODE_SVD:
        return n->randomized ? "svd (rand.)" : "svd";
    case CK_NODE_INPUT:
        return "input";
    default:
        return n->op[0] ? n->op : d->name;
    }
}
