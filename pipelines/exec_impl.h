/*
 * pipelines/exec_impl.h - the executor's insides, shared by exec.c (the
 * graph walk, folds, outputs) and linalg.c (matmul, svd, glm_fit and
 * glm_predict steps).  Private to pipelines/.
 */
#ifndef CK_EXEC_IMPL_H
#define CK_EXEC_IMPL_H

#include "base/ck_mem.h"
#include "io/store.h"
#include "pipelines/exec.h"

typedef struct xnode {
    ck_store *store; /* inputs */
    ck_array *arr;
    /* results held in memory (reductions, histograms, svd and glm_fit
     * results): dtype, C order.  For an svd node: the matrix that makes
     * its streamed factor (see linalg.c). */
    void *mem;
    double *edges; /* a histogram's edges found in the run (owned) */
    void *carry;   /* a scan's running values at its chunks' ends, found
                      in the run (owned; op_scan.c) */
    struct ck_be_kernel *dev_kernel; /* a kernel step's CUDA C, loaded on
                                        the device (op_kernel.c) */
    /* An exact svd whose streamed factor is made orthonormal (linalg.c,
     * orthonormalize): the factor is Z T, Z = L W with its columns
     * [svd_null, k) Gaussian; svd_t is T (k x k), owned.  NULL where the
     * factor is L W. */
    double *svd_t;
    int64_t svd_null;
} xnode;

typedef struct xrun {
    ck_plan *p; /* the executor's copy: a mask's length is set when known */
    const ck_exec_opts *o;
    ck_be be;
    ck_budget budget;
    xnode x[CK_MAX_NODES];
} xrun;

/* A node's values over one box, already at hand: evaluating that node over
 * that box again copies them (an elementwise operand uses them in place).
 * Memos chain through 'next' (NULL ends): an elementwise step whose
 * operands reach a step more than once over its box evaluates that step
 * once and adds it to the chain (exec.c: ck_exec_ew_eval). */
typedef struct memo {
    int node;
    const int64_t *start, *shape;
    const void *data;
    const struct memo *next;
} memo;

/* Compiles and loads each kernel step's CUDA C on r's backend when it
 * launches them (NULL slots: nothing to do); frees them. */
ck_code ck_exec_kernels_load(xrun *r, ck_err *err);
void ck_exec_kernels_free(xrun *r);

int64_t ck_exec_nelem(int nd, const int64_t *shape);
/* n rounded up to 64 bytes, as arenas hand out. */
size_t ck_exec_al(size_t n);
/* What a warning names: the step, or a one-step command ("glm-fit"),
 * whose step's name ("m") the user never gave. */
const char *ck_exec_who(const xrun *r, const ck_node *nd);
ck_code ck_exec_no_room(ck_err *err);

/* Copies operand data (shape osh, broadcast against the box shape bsh of
 * nd dims; osh[d] is 1 or bsh[d]) into dst laid out as the full box. */
void ck_exec_expand(int nd, size_t esz, void *dst, const int64_t *bsh,
                    const void *src, const int64_t *osh);

/* dst (C order, shape[nd]) gets src (shape ssh) transposed: dst axis k is
 * src axis perm[k]. */
void ck_exec_permute(int nd, size_t esz, void *dst, const int64_t *shape,
                     const void *src, const int64_t *ssh, const int *perm);

/* Arena bytes that evaluating a box of n elements of node i needs. */
size_t ck_exec_eval_bytes(const xrun *r, int i, size_t n);
/* The same, where node 'known' (or none, -1) is given as a memo and needs
 * nothing, and 'aligned' says the boxes are node i's own chunks: what the
 * op table's bytes functions call for their operands. */
size_t ck_exec_bytes(const xrun *r, int i, size_t n, int known, int aligned);
/* Evaluates node i over the box start[]/shape[] (its own coordinates) into
 * dst, in the node's dtype, C order, with scratch from a. */
ck_code ck_exec_eval(xrun *r, int i, const int64_t *start, const int64_t *shape,
                     void *dst, ck_arena *a, ck_err *err);

/* The op table's functions (pipelines/optab.h says what each kind of
 * function does): exec.c's box evaluations, and linalg.c's boxes of
 * matmul, svd results and glm_predict, and the steps that run before
 * outputs are written (svd, glm_fit). */
#define CK_EXEC_BOX_FNS(op)                                                    \
    size_t ck_exec_##op##_bytes(const xrun *r, int i, size_t n, int known,     \
                                int aligned);                                  \
    ck_code ck_exec_##op##_eval(xrun *r, int i, const int64_t *start,          \
                                const int64_t *shape, void *dst, ck_arena *a,  \
                                const memo *mm, ck_err *err)
CK_EXEC_BOX_FNS(input);
CK_EXEC_BOX_FNS(cf); /* pipelines/cf.c */
CK_EXEC_BOX_FNS(astype);
CK_EXEC_BOX_FNS(ew);
CK_EXEC_BOX_FNS(held);
CK_EXEC_BOX_FNS(rechunk);
CK_EXEC_BOX_FNS(random);
CK_EXEC_BOX_FNS(concat);
CK_EXEC_BOX_FNS(reshape);
CK_EXEC_BOX_FNS(transpose);
CK_EXEC_BOX_FNS(slice);
CK_EXEC_BOX_FNS(matmul);
CK_EXEC_BOX_FNS(part);
CK_EXEC_BOX_FNS(predict);
CK_EXEC_BOX_FNS(take);
CK_EXEC_BOX_FNS(kernel);
CK_EXEC_BOX_FNS(indices);
CK_EXEC_BOX_FNS(contract);
CK_EXEC_BOX_FNS(isin);
CK_EXEC_BOX_FNS(broadcast);
CK_EXEC_BOX_FNS(stencil);
CK_EXEC_BOX_FNS(scan);
CK_EXEC_BOX_FNS(coarsen);
ck_code ck_exec_run_svd(xrun *r, int i, ck_err *err);
ck_code ck_exec_run_scan(xrun *r, int i, ck_err *err);
ck_code ck_exec_run_quantile(xrun *r, int i, ck_err *err);
ck_code ck_exec_run_count(xrun *r, int i, ck_err *err);
ck_code ck_exec_run_glm(xrun *r, int i, ck_err *err);

#endif
