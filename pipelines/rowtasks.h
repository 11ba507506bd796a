/*
 * pipelines/rowtasks.h - the fixed pieces a model's passes are cut into.
 * svd and glm_fit sum over the rows of a 2-D array L (TSQR's R factors,
 * the randomized sketches, a GLM's loss, gradient and Hessian): each task,
 * a fixed range of L's rows, gives a partial result, and the partials
 * meet along base/ck_tree.h's canonical tree over the tasks.  The tasks
 * depend on L's shape, its chunking along the rows and the node alone,
 * never on --threads, --memory or the number of MPI ranks, so neither do
 * the bits of the result.  Tasks are cut from groups of whole chunks
 * along the rows, so a rank that owns whole groups reads only its own
 * chunks: a group is one chunk cut into q tasks, or whole chunks (q = 1).
 * Pure arithmetic: the executor (pipelines/linalg.c) runs the tasks and
 * chunkctl plan shows how ranks would share them.
 */
#ifndef CK_ROWTASKS_H
#define CK_ROWTASKS_H

#include <stdint.h>

#include "pipelines/plan.h"

/* Rows per glm kernel call, and so at most per GLM task: the kernel's
 * scratch is about this many rows of X. */
enum { CK_GLM_SLICE = 8192 };

/* Rows of a randomized-SVD panel: 32 was fastest of 4..1000 on 20000 x
 * 5000 (k + oversample = 20) with p and z transposed (0.61 s against
 * 0.66 for 8 and 0.82 for 1000).  A randomized task has at least one. */
enum { CK_RS_PANEL = 32 };

/* Bytes of L's rows per TSQR or randomized task, about: the QR of a
 * longer panel re-reads it from memory at every level of its recursion
 * (a 100100 x 100 QR ran at 13 GFLOP/s). */
enum { CK_TSQR_TASK_BYTES = 2 << 20 };

typedef struct ck_rowtasks {
    int64_t m;   /* L's rows */
    int64_t G;   /* rows per group (the last group fewer) */
    int64_t q;   /* tasks per whole group */
    int64_t sub; /* rows per task: ceil(G / q), a group's last fewer */
    int64_t n;   /* tasks; 0 when m == 0 */
} ck_rowtasks;

/* Tasks over m rows chunked by 'unit' rows (clipped to 1 .. m), of at
 * most 'target' rows (at least 1): a block of a pass holds a task, and
 * --memory bounds blocks. */
void ck_rowtasks_init(ck_rowtasks *k, int64_t m, int64_t unit, int64_t target);

/* Task t's rows [*lo, *hi). */
void ck_rowtask_rows(const ck_rowtasks *k, int64_t t, int64_t *lo, int64_t *hi);

/* Rank 'rank' of 'size''s tasks [*t0, *t1), contiguous and in rank order:
 * whole groups when there are at least as many as ranks, else an even
 * share of the tasks (ranks then share the chunks at their edges).  All
 * of them for one rank. */
void ck_rowtasks_of(const ck_rowtasks *k, int rank, int size, int64_t *t0,
                    int64_t *t1);

/* The tasks of an svd or glm_fit node's passes over its first argument
 * (an svd of a wide array: over its columns); 0 for other nodes.  With
 * *part_doubles: the doubles of one task's partial result (a pass's
 * largest). */
int ck_rowtasks_of_node(const ck_plan *p, const ck_node *nd, ck_rowtasks *k,
                        int64_t *part_doubles);

#endif
