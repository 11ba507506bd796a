/*
 * pipelines/optab.h - the table of pipeline ops: one row per op (or op
 * family), from which the parser (plan.c), the planner's listings, the
 * executor (exec.c, linalg.c), `chunkctl --help` and the one-step commands
 * all read.  Adding an op is one row here, its parse, scratch-bytes and
 * evaluation functions (a family of new ops in a file of its own,
 * op_NAME.c, using plan_impl.h's parse helpers; the first ops are in
 * plan.c, exec.c and linalg.c), its tests and its line in
 * chunkctl-pipeline(5).
 * Private to pipelines/.
 */
#ifndef CK_OPTAB_H
#define CK_OPTAB_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_err.h"
#include "base/ck_mem.h"
#include "pipelines/plan.h"

struct cJSON;
struct xrun;
struct memo;

/* What an op's row says of it (flags). */
enum {
    CK_OP_PRINTS = 1 << 0, /* its result is small: "print" and one-step
                              commands show it */
    CK_OP_FOLD = 1 << 1,   /* folded chunk by chunk before outputs are
                              written; the result is held in memory */
    CK_OP_HELD = 1 << 2,   /* its result is held in memory (folds, and the
                              small results of svd and glm_fit) */
    CK_OP_SOURCE = 1 << 3, /* takes no "args": makes its values itself */
};

/* Which backends implement an op's evaluation (backends). */
enum { CK_OPB_CPU = 1 << 0, CK_OPB_CUDA = 1 << 1 };

typedef struct ck_op_def {
    const char *name; /* as a step's "op" names it; a family's members are
                         named by member() */
    ck_node_kind kind;
    /* A family (elementwise ops, reductions): members 0..nmembers-1, their
     * names, and each member's number of args. */
    int nmembers;
    const char *(*member)(int sub);
    int (*member_arity)(int sub);
    int sub; /* what a row that is no family passes to parse */
    /* "args": how many (arrays or numbers); max -1: up to CK_MAX_ARGS */
    int min_args, max_args;
    unsigned flags;
    unsigned backends;
    const char *help; /* one line for `chunkctl --help` */
    /* The one-step command's examples for its --help: lines of arguments
     * after "chunkctl ", '@' standing for the op's name as typed; a
     * family's come from member_example(sub). */
    const char *example;
    const char *(*member_example)(int sub);
    /* Parses the step's keys into n (its args are parsed already, n->arg
     * and n->scalar set) and infers its dtype, shape and chunks.  sub is
     * the family member.  Messages through plan.c's bad(). */
    ck_code (*parse)(ck_plan *p, const char *path, const char *where,
                     ck_node *n, int sub, const struct cJSON *step,
                     ck_err *err);
    /* Arena bytes that evaluating a box of n elements of node i needs,
     * where node 'known' is given as a memo (-1: none) and 'aligned' says
     * the boxes are node i's own chunks.  Written beside eval, whose
     * allocations it adds up. */
    size_t (*bytes)(const struct xrun *r, int i, size_t n, int known,
                    int aligned);
    /* Node i's values over the box start[]/shape[] into dst (its dtype, C
     * order), scratch from a. */
    ck_code (*eval)(struct xrun *r, int i, const int64_t *start,
                    const int64_t *shape, void *dst, ck_arena *a,
                    const struct memo *mm, ck_err *err);
    /* A whole-step phase that runs before outputs are written (svd,
     * glm_fit); NULL for ops that are only evaluated box by box. */
    ck_code (*run)(struct xrun *r, int i, ck_err *err);
} ck_op_def;

/* The rows' parse functions, in plan.c (the rows' box and run functions
 * are declared in exec_impl.h). */
#define CK_PLAN_PARSE_FN(op)                                                   \
    ck_code ck_plan_parse_##op(ck_plan *p, const char *path,                   \
                               const char *where, ck_node *n, int sub,         \
                               const struct cJSON *step, ck_err *err)
CK_PLAN_PARSE_FN(ew);
CK_PLAN_PARSE_FN(astype);
CK_PLAN_PARSE_FN(reduce);
CK_PLAN_PARSE_FN(hist);
CK_PLAN_PARSE_FN(slice);
CK_PLAN_PARSE_FN(transpose);
CK_PLAN_PARSE_FN(reshape);
CK_PLAN_PARSE_FN(rechunk);
CK_PLAN_PARSE_FN(concat);
CK_PLAN_PARSE_FN(random);
CK_PLAN_PARSE_FN(mask);
CK_PLAN_PARSE_FN(hist2d);
CK_PLAN_PARSE_FN(matmul);
CK_PLAN_PARSE_FN(svd);
CK_PLAN_PARSE_FN(glm);
CK_PLAN_PARSE_FN(predict);
CK_PLAN_PARSE_FN(moveaxis);
CK_PLAN_PARSE_FN(swapaxes);
CK_PLAN_PARSE_FN(squeeze);
CK_PLAN_PARSE_FN(expand_dims);
CK_PLAN_PARSE_FN(take);
CK_PLAN_PARSE_FN(kernel);
CK_PLAN_PARSE_FN(indices);
CK_PLAN_PARSE_FN(contract);
CK_PLAN_PARSE_FN(isin);
CK_PLAN_PARSE_FN(broadcast_to);
CK_PLAN_PARSE_FN(stencil);
CK_PLAN_PARSE_FN(scan);
CK_PLAN_PARSE_FN(quantile);
CK_PLAN_PARSE_FN(coarsen);
CK_PLAN_PARSE_FN(count);

/* The variants of the rows that share a kind (ck_node.sub). */
enum {
    CK_ST_CONVOLVE,
    CK_ST_CORRELATE,
    CK_ST_UNIFORM,
    CK_ST_GAUSSIAN,
    CK_ST_GRADIENT,
    CK_ST_DIFF
};
enum { CK_SCAN_CUMSUM, CK_SCAN_CUMPROD };
/* quantile's unit, and NaN ignored (the nan* forms) */
enum { CK_Q_QUANTILE = 0, CK_Q_PERCENTILE = 1, CK_Q_MEDIAN = 2, CK_Q_NAN = 4 };
enum { CK_COUNT_UNIQUE, CK_COUNT_BINCOUNT };
/* The boxes bincount reads operand m in (chunk shape into ch[CK_MAX_DIMS]):
 * m's chunks, or, weighted, runs in C order of the whole array (whole
 * trailing axes) of about a chunk, at least 1 MiB, since weighted sums are
 * added in that order. */
void ck_count_boxes(const ck_node *m, int weighted, int64_t *ch);

/* The row that defines node kind k (every kind has one). */
const ck_op_def *ck_optab_kind(ck_node_kind k);
/* The row of the op a step names, and the family member in *sub; NULL if
 * no op has that name. */
const ck_op_def *ck_optab_find(const char *name, int *sub);
/* The rows, for listings: ck_optab_row(0 .. ck_optab_rows() - 1). */
int ck_optab_rows(void);
const ck_op_def *ck_optab_row(int k);
/* The name a node's op shows in `chunkctl plan`. */
const char *ck_optab_label(const ck_node *n);

#endif
