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
} xnode;

typedef struct xrun {
    ck_plan *p; /* the executor's copy: a mask's length is set when known */
    const ck_exec_opts *o;
    ck_be be;
    ck_budget budget;
    xnode x[CK_MAX_NODES];
} xrun;

int64_t ck_exec_nelem(int nd, const int64_t *shape);
/* n rounded up to 64 bytes, as arenas hand out. */
size_t ck_exec_al(size_t n);
ck_code ck_exec_no_room(ck_err *err);

/* Arena bytes that evaluating a box of n elements of node i needs. */
size_t ck_exec_eval_bytes(const xrun *r, int i, size_t n);
/* Evaluates node i over the box start[]/shape[] (its own coordinates) into
 * dst, in the node's dtype, C order, with scratch from a. */
ck_code ck_exec_eval(xrun *r, int i, const int64_t *start, const int64_t *shape,
                     void *dst, ck_arena *a, ck_err *err);

/* linalg.c: boxes of matmul, part and glm_predict nodes, and the steps
 * that run before outputs are written (svd, glm_fit). */
size_t ck_exec_linalg_bytes(const xrun *r, int i, size_t n);
ck_code ck_exec_linalg_eval(xrun *r, int i, const int64_t *start,
                            const int64_t *shape, void *dst, ck_arena *a,
                            ck_err *err);
ck_code ck_exec_run_svd(xrun *r, int i, ck_err *err);
ck_code ck_exec_run_glm(xrun *r, int i, ck_err *err);

#endif
