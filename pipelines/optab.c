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
    {.name = "reshape",
     .kind = CK_NODE_RESHAPE,
     .min_args = 1,
     .max_args = 1,
     .backends = CK_OPB_CPU,
     .help = "C-order reshape (shape, one -1 allowed)",
     .parse = ck_plan_parse_reshape,
     BOX(reshape)},
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
        return d->name;
    }
}
