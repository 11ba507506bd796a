/*
 * pipelines/rowtasks.c - see rowtasks.h.
 */
#include "pipelines/rowtasks.h"

#include "base/ck_comm.h"

void ck_rowtasks_init(ck_rowtasks *k, int64_t m, int64_t unit, int64_t target)
{
    if (target < 1)
        target = 1;
    if (unit < 1 || unit > m)
        unit = m > 0 ? m : 1;
    k->m = m;
    if (unit >= target) {
        k->G = unit;
        k->q = (unit + target - 1) / target;
    } else {
        k->G = unit * (target / unit);
        k->q = 1;
    }
    if (k->G > m)
        k->G = m > 0 ? m : 1;
    k->sub = (k->G + k->q - 1) / k->q;
    if (m == 0) {
        k->n = 0;
        return;
    }
    int64_t ng = (m + k->G - 1) / k->G, last = m - (ng - 1) * k->G;
    k->n = (ng - 1) * k->q + (last + k->sub - 1) / k->sub;
}

void ck_rowtask_rows(const ck_rowtasks *k, int64_t t, int64_t *lo, int64_t *hi)
{
    int64_t g = t / k->q, end = (g + 1) * k->G < k->m ? (g + 1) * k->G : k->m;

    *lo = g * k->G + (t % k->q) * k->sub;
    *hi = *lo + k->sub < end ? *lo + k->sub : end;
}

void ck_rowtasks_of(const ck_rowtasks *k, int rank, int size, int64_t *t0,
                    int64_t *t1)
{
    int64_t ng = k->n > 0 ? (k->m + k->G - 1) / k->G : 0, g0, g1;

    if (ng < size) {
        ck_comm_split(k->n, rank, size, t0, t1);
        return;
    }
    ck_comm_split(ng, rank, size, &g0, &g1);
    *t0 = g0 * k->q;
    *t1 = g1 == ng ? k->n : g1 * k->q;
}

int ck_rowtasks_of_node(const ck_plan *p, const ck_node *nd, ck_rowtasks *k,
                        int64_t *part_doubles)
{
    const ck_node *an;
    int64_t m, n, target, part;

    if (nd->kind != CK_NODE_SVD && nd->kind != CK_NODE_GLM)
        return 0;
    an = &p->node[nd->arg[0]];
    if (nd->kind == CK_NODE_GLM) {
        /* a task's loss, gradient and Hessian, and in the first pass
         * the columns' squares */
        int64_t d = an->shape[1] + (nd->glm.fit_intercept ? 1 : 0);
        ck_rowtasks_init(k, an->shape[0], an->chunks[0], CK_GLM_SLICE);
        part = 1 + d + d * d + an->shape[1];
    } else {
        /* L = A, or A^T for a wide A: m x n, n <= m */
        int t = an->shape[0] < an->shape[1];
        m = an->shape[t ? 1 : 0];
        n = an->shape[t ? 0 : 1];
        target = CK_TSQR_TASK_BYTES / (8 * (n > 0 ? n : 1));
        if (nd->randomized) {
            /* a task's sketch, (k + oversample) x n */
            int64_t l = nd->k + nd->oversample < n ? nd->k + nd->oversample : n;
            /* at least 16 rows a row of the sketch: merging two costs
             * less than a tenth of a task's memory traffic then */
            target = target > 16 * l ? target : 16 * l;
            target = target > CK_RS_PANEL ? target : CK_RS_PANEL;
            part = l * n;
        } else {
            /* at least 4n rows, where merging two R factors costs a tenth
             * of a task; a task's R, and L's column sums when wide */
            target = target > 4 * n ? target : 4 * n;
            part = n * n + (t ? n : 0);
        }
        ck_rowtasks_init(k, m, an->chunks[t ? 1 : 0], target);
    }
    if (part_doubles)
        *part_doubles = part;
    return 1;
}
