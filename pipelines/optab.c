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

static const char *ew_example(int sub)
{
    switch (ck_ew_arity((ck_ew_op)sub)) {
    case 1:
        return "@ data.h5:/x -o out.h5:/y";
    case 2:
        return "@ data.h5:/x 1.5 -o out.h5:/y\n"
               "@ data.h5:/x data.h5:/y -o out.h5:/z";
    default: /* where, clip */
        return sub == CK_EW_WHERE ? "@ data.h5:/m data.h5:/x 0 -o out.h5:/y"
                                  : "@ data.h5:/x -1 1 -o out.h5:/y";
    }
}

static const char *red_example(int sub)
{
    const char *nm = ck_red_name((ck_red_op)sub);
    return strstr(nm, "var") || strstr(nm, "std") /* and nanvar, nanstd */
               ? "@ data.h5:/x --axis 0 --ddof 1 -o out.h5:/r\n@ data.h5:/x"
               : "@ data.h5:/x --axis 0 -o out.h5:/r\n@ data.h5:/x";
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
     .member_example = ew_example,
     .backends = CK_OPB_CPU,
     .help = "NumPy ufuncs with broadcasting, fused per chunk",
     .parse = ck_plan_parse_ew,
     BOX(ew)},
    {.name = "reductions",
     .kind = CK_NODE_REDUCE,
     .nmembers = CK_RED_COUNT,
     .member = red_member,
     .member_arity = red_arity,
     .member_example = red_example,
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
     .flags = CK_OP_PRINTS | CK_OP_FOLD | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.histogram2d of x and y (bins, range, density, weights)",
     .example =
         "@ data.h5:/x data.h5:/x2 --bins 20,30 --range='-4,4;-4,4' --json",
     .parse = ck_plan_parse_hist2d,
     BOX(held)},
    {.name = "mask",
     .kind = CK_NODE_MASK,
     .min_args = 2,
     .max_args = 2,
     .flags = CK_OP_FOLD | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "x[cond]: the values where a boolean array is true (1-D)",
     .example = "@ data.h5:/x data.h5:/m -o out.h5:/v",
     .parse = ck_plan_parse_mask,
     BOX(held)},
    {.name = "astype",
     .kind = CK_NODE_ASTYPE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "the array in another dtype (dtype)",
     .example = "@ data.h5:/x --dtype float32 -o out.h5:/x",
     .parse = ck_plan_parse_astype,
     BOX(astype)},
    {.name = "slice",
     .kind = CK_NODE_SLICE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "x[start:stop:step, i, ...] (index)",
     .example = "@ data.h5:/x --index '[[null,null,2],[100,-100]]' -o "
                "out.h5:/s\n@ data.h5:/t --index '[0, [5, 15]]' -o out.h5:/t0",
     .parse = ck_plan_parse_slice,
     BOX(slice)},
    {.name = "transpose",
     .kind = CK_NODE_TRANSPOSE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "permute axes (axes; default: reversed)",
     .example =
         "@ data.h5:/x -o out.h5:/xt\n@ data.h5:/t --axes 2,0,1 -o out.zarr",
     .parse = ck_plan_parse_transpose,
     BOX(transpose)},
    {.name = "moveaxis",
     .kind = CK_NODE_TRANSPOSE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.moveaxis (source, destination)",
     .example = "@ data.h5:/t --source 0 --destination -1 -o out.h5:/t",
     .parse = ck_plan_parse_moveaxis,
     BOX(transpose)},
    {.name = "swapaxes",
     .kind = CK_NODE_TRANSPOSE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.swapaxes (axis1, axis2)",
     .example = "@ data.h5:/t --axis1 0 --axis2 2 -o out.h5:/t",
     .parse = ck_plan_parse_swapaxes,
     BOX(transpose)},
    {.name = "reshape",
     .kind = CK_NODE_RESHAPE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "C-order reshape (shape, one -1 allowed)",
     .example = "@ data.h5:/x --shape 1000,-1,3 -o out.zarr",
     .parse = ck_plan_parse_reshape,
     BOX(reshape)},
    {.name = "squeeze",
     .kind = CK_NODE_RESHAPE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "drop axes of length 1 (axis; default: all of them)",
     .example = "@ data.h5:/row -o out.h5:/y",
     .parse = ck_plan_parse_squeeze,
     BOX(reshape)},
    {.name = "expand_dims",
     .kind = CK_NODE_RESHAPE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "new axes of length 1 (axis)",
     .example = "@ data.h5:/y --axis 0 -o out.h5:/row",
     .parse = ck_plan_parse_expand_dims,
     BOX(reshape)},
    {.name = "broadcast_to",
     .kind = CK_NODE_BROADCAST,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.broadcast_to (shape)",
     .example = "@ data.h5:/y --shape 1000,600 -o out.h5:/yy",
     .parse = ck_plan_parse_broadcast_to,
     BOX(broadcast)},
    {.name = "take",
     .kind = CK_NODE_TAKE,
     .min_args = 1,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "numpy.take along an axis (indices or an int array; axis)",
     .example = "@ data.h5:/x --indices 0,5,7 --axis 1 -o out.h5:/cols\n@ "
                "data.h5:/x data.h5:/idx --axis 0 -o out.h5:/rows",
     .parse = ck_plan_parse_take,
     BOX(take)},
    {.name = "compress",
     .kind = CK_NODE_TAKE,
     .sub = 1, /* take's parse, the indices from a boolean array */
     .min_args = 1,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "numpy.compress: x[..., cond, ...] along an axis (condition)",
     .example = "@ data.h5:/x --condition 1,0,1 --axis 1 -o out.h5:/c\n@ "
                "data.h5:/x data.h5:/keep --axis 0 -o out.h5:/rows",
     .parse = ck_plan_parse_take,
     BOX(take)},
    {.name = "kernel",
     .kind = CK_NODE_KERNEL,
     .min_args = 1,
     .max_args = -1,
     .backends = CK_OPB_CPU,
     .help = "your C function per chunk, as map_blocks (source, entry, ...)",
     .example = "@ data.h5:/xf data.h5:/yf --source rowadd.c --entry rowadd -o "
                "out.h5:/z",
     .parse = ck_plan_parse_kernel,
     BOX(kernel)},
    {.name = "tensordot",
     .kind = CK_NODE_CONTRACT,
     .min_args = 2,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "numpy.tensordot of two arrays (axes), through gemm",
     .example = "@ data.h5:/x data.h5:/w --axes 1 -o out.h5:/xw",
     .parse = ck_plan_parse_contract,
     BOX(contract)},
    {.name = "einsum",
     .kind = CK_NODE_CONTRACT,
     .sub = 1, /* tensordot's evaluation, the axes from subscripts */
     .min_args = 2,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "numpy.einsum of two arrays, contractions (subscripts)",
     .example =
         "@ data.h5:/x data.h5:/w --subscripts 'ij,jk->ik' -o out.h5:/xw",
     .parse = ck_plan_parse_contract,
     BOX(contract)},
    {.name = "argwhere",
     .kind = CK_NODE_INDICES,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.argwhere: the indices of nonzero values, one row each",
     .example = "@ data.h5:/m -o out.h5:/idx",
     .parse = ck_plan_parse_indices,
     BOX(indices)},
    {.name = "nonzero",
     .kind = CK_NODE_INDICES,
     .sub = 1,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.nonzero (where with one argument), one row per axis",
     .example = "@ data.h5:/m -o out.h5:/idx",
     .parse = ck_plan_parse_indices,
     BOX(indices)},
    {.name = "flatnonzero",
     .kind = CK_NODE_INDICES,
     .sub = 2,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.flatnonzero: C-order positions of nonzero values",
     .example = "@ data.h5:/m -o out.h5:/pos",
     .parse = ck_plan_parse_indices,
     BOX(indices)},
    {.name = "isin",
     .kind = CK_NODE_ISIN,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.isin: membership in a list (values, invert)",
     .example = "@ data.h5:/k --values 1,3,5 -o out.h5:/sel",
     .parse = ck_plan_parse_isin,
     BOX(isin)},
    {.name = "rechunk",
     .kind = CK_NODE_RECHUNK,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "the same values streamed in other chunks (chunks)",
     .example = "@ data.h5:/x --chunks 1000,10 -o out.zarr",
     .parse = ck_plan_parse_rechunk,
     BOX(rechunk)},
    {.name = "concatenate",
     .kind = CK_NODE_CONCAT,
     .min_args = 1,
     .max_args = -1,
     .backends = CK_OPB_CPU,
     .help = "join arrays along an existing axis (axis)",
     .example = "@ data.h5:/x data.h5:/x --axis 0 -o out.h5:/xx",
     .parse = ck_plan_parse_concat,
     BOX(concat)},
    {.name = "stack",
     .kind = CK_NODE_CONCAT,
     .sub = 1, /* concatenate's parse, with a new axis */
     .min_args = 1,
     .max_args = -1,
     .backends = CK_OPB_CPU,
     .help = "join arrays along a new axis (axis)",
     .example = "@ data.h5:/x data.h5:/x --axis 0 -o out.h5:/xx",
     .parse = ck_plan_parse_concat,
     BOX(concat)},
    {.name = "random",
     .kind = CK_NODE_RANDOM,
     .flags = CK_OP_SOURCE,
     .backends = CK_OPB_CPU,
     .help = "reproducible random values (shape, dist, seed, dtype, chunks)",
     .example = "@ --shape 1000,1000 --chunks 250,1000 --dist normal --seed 7 "
                "-o out.h5:/r",
     .parse = ck_plan_parse_random,
     BOX(random)},
    {.name = "matmul",
     .kind = CK_NODE_MATMUL,
     .min_args = 2,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "a @ b of 2-D arrays, tile by tile (DGEMM/SGEMM)",
     .example = "@ data.h5:/x data.h5:/w -o out.h5:/xw",
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
     .example = "glm-fit data.h5:/x data.h5:/b --family logistic -o model.h5",
     .parse = ck_plan_parse_glm,
     .bytes = ck_exec_held_bytes, /* only its results are evaluated */
     .run = ck_exec_run_glm},
    {.name = "glm_predict",
     .kind = CK_NODE_PREDICT,
     .min_args = 1,
     .max_args = 2,
     .backends = CK_OPB_CPU,
     .help = "a GLM's mean response for each row of X (model or coef)",
     .example = "glm-fit data.h5:/x data.h5:/b -o model.h5\n"
                "@ data.h5:/x --model model.h5 -o out.h5:/p",
     .parse = ck_plan_parse_predict,
     BOX(predict)},
    {.name = "convolve",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_CONVOLVE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "scipy.ndimage.convolve with a small N-D kernel (weights, mode)",
     .example = "@ data.h5:/x --weights '1,2,1;2,4,2;1,2,1' -o out.h5:/c",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "correlate",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_CORRELATE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "scipy.ndimage.correlate (weights, mode, cval, origin)",
     .example = "@ data.h5:/x --weights '0,1,0;1,-4,1;0,1,0' --mode constant "
                "-o out.h5:/c",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "uniform_filter",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_UNIFORM,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "scipy.ndimage.uniform_filter (size, mode, cval)",
     .example = "@ data.h5:/x --size 5 -o out.h5:/u\n@ data.h5:/x --size 1,9 "
                "--mode nearest -o out.h5:/u",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "gaussian_filter",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_GAUSSIAN,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "scipy.ndimage.gaussian_filter (sigma, truncate, mode, cval)",
     .example = "@ data.h5:/x --sigma 2 -o out.h5:/g\n@ data.h5:/x --sigma 0,3 "
                "--truncate 3 -o out.h5:/g",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "gradient",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_GRADIENT,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.gradient along one axis (axis)",
     .example = "@ data.h5:/x --axis 1 -o out.h5:/dx",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "diff",
     .kind = CK_NODE_STENCIL,
     .sub = CK_ST_DIFF,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.diff along an axis (n, axis)",
     .example = "@ data.h5:/x --n 2 --axis 0 -o out.h5:/d",
     .parse = ck_plan_parse_stencil,
     BOX(stencil)},
    {.name = "cumsum",
     .kind = CK_NODE_SCAN,
     .sub = CK_SCAN_CUMSUM,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "numpy.cumsum along an axis (axis, dtype)",
     .example = "@ data.h5:/x --axis 0 -o out.h5:/c",
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
     .example = "@ data.h5:/x --axis 1 -o out.h5:/p",
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
     .example = "@ data.h5:/x --q 0.05,0.5,0.95 --axis 0 -o out.h5:/q\n@ "
                "data.h5:/y --q 0.5",
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
     .example = "@ data.h5:/x --q 0.05,0.5,0.95 --axis 0 -o out.h5:/q\n@ "
                "data.h5:/y --q 0.5",
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
     .example =
         "@ data.h5:/x --q 5,50,95 --axis 0 -o out.h5:/p\n@ data.h5:/y --q 50",
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
     .example =
         "@ data.h5:/x --q 5,50,95 --axis 0 -o out.h5:/p\n@ data.h5:/y --q 50",
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
     .example = "@ data.h5:/x --axis 0 -o out.h5:/med\n@ data.h5:/y",
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
     .example = "@ data.h5:/x --axis 0 -o out.h5:/med\n@ data.h5:/y",
     .parse = ck_plan_parse_quantile,
     BOX(held),
     .run = ck_exec_run_quantile},
    {.name = "coarsen",
     .kind = CK_NODE_COARSEN,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "dask.array.coarsen: block reductions (reduction, window)",
     .example = "@ data.h5:/x --reduction mean --window '{\"0\": 4, \"1\": 4}' "
                "-o out.h5:/c",
     .parse = ck_plan_parse_coarsen,
     BOX(coarsen)},
    {.name = "unique",
     .kind = CK_NODE_COUNT,
     .sub = CK_COUNT_UNIQUE,
     .min_args = 1,
     .max_args = 1,
     .flags = CK_OP_PRINTS | CK_OP_HELD,
     .backends = CK_OPB_CPU,
     .help = "numpy.unique: sorted values, their counts as .counts",
     .example = "@ data.h5:/k\n@ data.h5:/k -o out.h5:/u",
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
     .example = "@ data.h5:/k --minlength 10\n@ data.h5:/k -o out.h5:/n",
     .parse = ck_plan_parse_count,
     BOX(held),
     .run = ck_exec_run_count},
    {.name = "(input)",
     .kind = CK_NODE_INPUT,
     .backends = CK_OPB_CPU,
     BOX(input)},
    {.name = "(decode_cf)",
     .kind = CK_NODE_CF,
     .backends = CK_OPB_CPU,
     .help = "an input's CF decoding (_FillValue, missing_value, "
             "scale_factor, add_offset)",
     BOX(cf)},
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
