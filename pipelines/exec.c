/*
 * pipelines/exec.c - the executor: pull evaluation of boxes through the
 * step graph, chunk-order folds for reductions and histograms, and the
 * writes of outputs (all stores committed together at the end).
 */
#include "pipelines/exec.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/ck_comm.h"
#include "base/ck_log.h"
#include "base/ck_thread.h"
#include "base/ck_tree.h"
#include "io/store.h"
#include "ops/ew.h"
#include "ops/hist.h"
#include "ops/kernel.h"
#include "ops/reduce.h"
#include "pipelines/cf.h"
#include "pipelines/exec_impl.h"
#include "pipelines/gen.h"
#include "pipelines/optab.h"
#include "pipelines/stream.h"

int64_t ck_exec_nelem(int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    return n;
}

size_t ck_exec_al(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* Elements of the operand a reshape reads for a box of n elements: the
 * whole rows (first axis) of the operand that the box's C-order span
 * touches, for a box shaped like the reshape's chunks. */
static size_t reshape_span(const ck_plan *p, const ck_node *nd, size_t n)
{
    const ck_node *m = &p->node[nd->arg[0]];
    int64_t inner = 1, stride = 1, span = 1;

    for (int d = 1; d < m->ndim; d++)
        inner *= m->shape[d];
    for (int d = nd->ndim - 1; d >= 0; d--) {
        int64_t c = nd->chunks[d] < nd->shape[d] ? nd->chunks[d] : nd->shape[d];
        span += (c > 0 ? c - 1 : 0) * stride;
        stride *= nd->shape[d];
    }
    if ((size_t)span < n)
        span = (int64_t)n;
    return (size_t)(span + 2 * inner);
}

size_t ck_exec_eval_bytes(const xrun *r, int i, size_t n)
{
    return ck_exec_bytes(r, i, n, -1, 0);
}

size_t ck_exec_bytes(const xrun *r, int i, size_t n, int known, int aligned)
{
    if (i == known) /* given as a memo: nothing to evaluate */
        return 0;
    return ck_optab_kind(r->p->node[i].kind)->bytes(r, i, n, known, aligned);
}

/* Are node m's chunks node nd's (so nd's chunk boxes are m's)? */
static int same_chunks(const ck_node *nd, const ck_node *m)
{
    return nd->ndim == m->ndim &&
           memcmp(nd->chunks, m->chunks, sizeof(int64_t) * (size_t)m->ndim) ==
               0;
}

const char *ck_exec_who(const xrun *r, const ck_node *nd)
{
    return r->p->onestep && r->p->command[0] ? r->p->command : nd->name;
}

ck_code ck_exec_no_room(ck_err *err)
{
    return ck_err_internal(err, "run: scratch arena too small");
}

/* The memo in the chain mm that holds node's values over the box, or NULL. */
static const memo *memo_find(const memo *mm, int node, int ndim,
                             const int64_t *start, const int64_t *shape)
{
    size_t b = sizeof(int64_t) * (size_t)ndim;
    for (; mm; mm = mm->next)
        if (mm->node == node && memcmp(mm->start, start, b) == 0 &&
            memcmp(mm->shape, shape, b) == 0)
            return mm;
    return NULL;
}

static int memo_has(const memo *mm, int node, int ndim, const int64_t *start,
                    const int64_t *shape)
{
    return memo_find(mm, node, ndim, start, shape) != NULL;
}

static ck_code eval(xrun *r, int i, const int64_t *start, const int64_t *shape,
                    void *dst, ck_arena *a, const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_op_def *def = ck_optab_kind(nd->kind);
    const memo *hit = memo_find(mm, i, nd->ndim, start, shape);

    if (hit) {
        memcpy(dst, hit->data,
               (size_t)ck_exec_nelem(nd->ndim, shape) *
                   ck_dtype_size(nd->dtype));
        return CK_OK;
    }
    if (!def->eval) /* svd and glm_fit: only their results are evaluated */
        return ck_err_set(err, CK_ENOTSUP, "run: %s is not evaluated by box",
                          nd->name);
    return def->eval(r, i, start, shape, dst, a, mm, err);
}

ck_code ck_exec_eval(xrun *r, int i, const int64_t *start, const int64_t *shape,
                     void *dst, ck_arena *a, ck_err *err)
{
    return eval(r, i, start, shape, dst, a, NULL, err);
}

/* ---- inputs ---- */

/* An input read in whole chunks of its own dtype needs no region buffer
 * (ck_array_read_region reads them in place): when its chunks divide it
 * evenly, every box of its own chunks is a whole chunk. */
size_t ck_exec_input_bytes(const xrun *r, int i, size_t n, int known,
                           int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_grid *g = ck_array_grid(r->x[i].arr);
    int whole = aligned && ck_array_info_of(r->x[i].arr)->dtype == nd->dtype &&
                g->ndim == nd->ndim;

    (void)n, (void)known;
    for (int d = 0; d < g->ndim && whole; d++)
        whole = g->shape[d] % g->chunk[d] == 0 && g->chunk[d] == nd->chunks[d];
    return whole ? ck_exec_al(ck_array_scratch_bytes(r->x[i].arr))
                 : ck_array_region_scratch_bytes(r->x[i].arr);
}

ck_code ck_exec_input_eval(xrun *r, int i, const int64_t *start,
                           const int64_t *shape, void *dst, ck_arena *a,
                           const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    int64_t stop[CK_MAX_DIMS];

    (void)mm;
    for (int d = 0; d < nd->ndim; d++)
        stop[d] = start[d] + shape[d];
    return ck_array_read_region(r->x[i].arr, start, stop, NULL, nd->dtype, dst,
                                NULL, a, err);
}

/* Input i's values over a box that is one of its chunks stored raw, seen
 * in place (ck_array_view_chunk): 1 with *view set, else 0. */
static int view_box(xrun *r, int i, int ndim, const int64_t *start,
                    const int64_t *shape, ck_chunk_view *view)
{
    const ck_node *m = &r->p->node[i];
    int64_t coords[CK_MAX_DIMS];
    const ck_grid *g;

    if (m->kind != CK_NODE_INPUT ||
        ck_array_info_of(r->x[i].arr)->dtype != m->dtype)
        return 0;
    g = ck_array_grid(r->x[i].arr);
    if (g->ndim != ndim)
        return 0;
    for (int d = 0; d < ndim; d++) {
        if (start[d] % g->chunk[d] != 0 || shape[d] != g->chunk[d])
            return 0;
        coords[d] = start[d] / g->chunk[d];
    }
    return ck_array_view_chunk(r->x[i].arr, coords, view);
}

/* ---- astype ---- */

size_t ck_exec_astype_bytes(const xrun *r, int i, size_t n, int known,
                            int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];

    return ck_exec_al(n * ck_dtype_size(m->dtype)) +
           ck_exec_bytes(r, nd->arg[0], n, known,
                         aligned && same_chunks(nd, m));
}

ck_code ck_exec_astype_eval(xrun *r, int i, const int64_t *start,
                            const int64_t *shape, void *dst, ck_arena *a,
                            const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    size_t n = (size_t)ck_exec_nelem(nd->ndim, shape);
    void *tmp = ck_arena_alloc(a, n * ck_dtype_size(m->dtype));

    if (!tmp)
        return ck_exec_no_room(err);
    CK_TRY(eval(r, nd->arg[0], start, shape, tmp, a, mm, err));
    ck_dtype_convert(nd->dtype, dst, m->dtype, tmp, n);
    return CK_OK;
}

/* ---- elementwise ---- */

void ck_exec_expand(int nd, size_t esz, void *dst, const int64_t *bsh,
                    const void *src, const int64_t *osh)
{
    int64_t idx[CK_MAX_DIMS] = {0}, row = nd ? bsh[nd - 1] : 1;
    char *o = dst;

    for (;;) {
        int64_t off = 0;
        for (int d = 0; d < nd - 1; d++)
            off = off * osh[d] + (osh[d] == 1 ? 0 : idx[d]);
        off *= nd ? osh[nd - 1] : 1;
        const char *s = (const char *)src + (size_t)off * esz;
        if (nd && osh[nd - 1] == 1)
            for (int64_t k = 0; k < row; k++)
                memcpy(o + (size_t)k * esz, s, esz);
        else
            memcpy(o, s, (size_t)row * esz);
        o += (size_t)row * esz;
        int d = nd - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < bsh[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
}

/* Per array operand: its values (unless they are the memo), their
 * conversion to the compute dtype if it differs, their broadcast to the
 * box if it does; a number: one value in the compute dtype.  Operands are
 * evaluated one after another, their scratch freed in between, so only the
 * largest operand's own scratch counts. */
static size_t ew_bytes(const xrun *r, int i, size_t n, int known, int aligned)
{
    const ck_node *nd = &r->p->node[i];
    size_t b = 0, most = 0;

    for (int k = 0; k < nd->nargs; k++) {
        const ck_node *m = nd->arg[k] >= 0 ? &r->p->node[nd->arg[k]] : NULL;
        size_t csz = ck_dtype_size(
            nd->ew == CK_EW_WHERE && k == 0 ? CK_BOOL : nd->compute);
        if (!m) {
            b += ck_exec_al(8); /* the number, converted */
            continue;
        }
        /* an operand over the same box may be the memo */
        int bcast =
            m->ndim != nd->ndim ||
            memcmp(m->shape, nd->shape, sizeof(int64_t) * (size_t)m->ndim) != 0;
        size_t e = ck_exec_bytes(r, nd->arg[k], n, bcast ? -1 : known,
                                 aligned && !bcast && same_chunks(nd, m));
        if (bcast || nd->arg[k] != known)
            b += ck_exec_al(n * ck_dtype_size(m->dtype));
        most = e > most ? e : most;
        if (m->dtype != nd->compute)
            b += ck_exec_al(n * csz);
        if (bcast)
            b += ck_exec_al(n * csz);
    }
    return b + most;
}

/* ---- elementwise steps that reach a step more than once ----
 *
 * y2 = y1 * y1 evaluates y1 over the box once per operand, and so do
 * diamonds (b = f(a), c = g(a), d = b + c): evaluated as a tree, a chain
 * of such steps costs 2^steps.  So an elementwise step first finds its
 * region over the box: the elementwise and astype steps it reaches through
 * operands of its own shape (evaluated over the same box), and the other
 * steps they use over that box.  A region step other than an input that
 * the region uses more than once ('shared') is evaluated once, operands
 * first, into a buffer kept while the step is evaluated, and given to the
 * rest as a memo.  Without shared steps nothing changes. */

static int folds_in(const ck_node *nd)
{
    return nd->kind == CK_NODE_EW || nd->kind == CK_NODE_ASTYPE;
}

static int same_box(const ck_node *nd, const ck_node *m)
{
    return nd->ndim == m->ndim &&
           memcmp(nd->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim) == 0;
}

static int is_shared(const ck_plan *p, int j, const unsigned char *use)
{
    return use[j] >= 2 && p->node[j].kind != CK_NODE_INPUT;
}

/* Marks step i's region over the box start/shape (in[]) and how often
 * region steps use each step over it (use[], 2 at most), passing over
 * 'known' and the steps the memo chain mm holds over the box (at hand);
 * returns how many steps are shared. */
static int region(const ck_plan *p, int i, int known, const memo *mm,
                  const int64_t *start, const int64_t *shape, unsigned char *in,
                  unsigned char *use)
{
    int shared = 0;

    memset(in, 0, (size_t)p->n);
    memset(use, 0, (size_t)p->n);
    in[i] = 1;
    for (int t = p->n - 1; t >= 0; t--) { /* users before their operands */
        int j = p->order[t];
        const ck_node *nd = &p->node[j];
        if (!in[j] || !folds_in(nd))
            continue;
        for (int k = 0; k < nd->nargs; k++) {
            int m = nd->arg[k];
            if (m < 0 || !same_box(nd, &p->node[m]) || m == known ||
                memo_has(mm, m, nd->ndim, start, shape))
                continue;
            in[m] = 1;
            if (use[m] < 2 && ++use[m] == 2 && is_shared(p, m, use))
                shared++;
        }
    }
    return shared;
}

/* What a region with shared steps needs: the memos and the shared steps'
 * buffers; each elementwise or astype step's own buffers (its operands'
 * values, conversions, broadcasts: at most one evaluation of each is
 * under way at a time); and the largest evaluation of an operand outside
 * the region (a broadcast one, or a step of another kind), which runs
 * with the others' scratch freed. */
static size_t shared_bytes(const xrun *r, int i, size_t n, int known,
                           int aligned, const unsigned char *in,
                           const unsigned char *use, int shared)
{
    const ck_plan *p = r->p;
    size_t b = ck_exec_al((size_t)shared * sizeof(memo)), most = 0;

    for (int j = 0; j < p->n; j++) {
        const ck_node *nd = &p->node[j];
        if (!in[j])
            continue;
        if (is_shared(p, j, use))
            b += ck_exec_al(n * ck_dtype_size(nd->dtype));
        if (!folds_in(nd))
            continue;
        int own = aligned && same_chunks(&p->node[i], nd);
        for (int k = 0; k < nd->nargs; k++) {
            const ck_node *m = nd->arg[k] >= 0 ? &p->node[nd->arg[k]] : NULL;
            size_t csz = ck_dtype_size(
                nd->ew == CK_EW_WHERE && k == 0 ? CK_BOOL : nd->compute);
            if (nd->kind == CK_NODE_ASTYPE) {
                b += ck_exec_al(n * ck_dtype_size(m->dtype));
            } else if (!m) {
                b += ck_exec_al(8);
                continue;
            } else {
                b += ck_exec_al(n * ck_dtype_size(m->dtype));
                if (m->dtype != nd->compute)
                    b += ck_exec_al(n * csz);
                if (!same_box(nd, m))
                    b += ck_exec_al(n * csz);
            }
            int bcast = !same_box(nd, m);
            if (!bcast && (in[nd->arg[k]] && folds_in(m)))
                continue; /* counted as a region step */
            size_t e = ck_exec_bytes(r, nd->arg[k], n, bcast ? -1 : known,
                                     own && !bcast && same_chunks(nd, m));
            most = e > most ? e : most;
        }
    }
    return b + most;
}

size_t ck_exec_ew_bytes(const xrun *r, int i, size_t n, int known, int aligned)
{
    unsigned char in[CK_MAX_NODES], use[CK_MAX_NODES];
    int shared = region(r->p, i, known, NULL, NULL, NULL, in, use);

    if (shared)
        return shared_bytes(r, i, n, known, aligned, in, use, shared);
    return ew_bytes(r, i, n, known, aligned);
}

static ck_code ew_eval(xrun *r, int i, const int64_t *start,
                       const int64_t *shape, void *dst, ck_arena *a,
                       const memo *mm, ck_err *err);

/* Evaluates step i's shared steps over the box once each, operands
 * first, each with the memos of those before it, then step i with all. */
static ck_code shared_eval(xrun *r, int i, const int64_t *start,
                           const int64_t *shape, void *dst, ck_arena *a,
                           const memo *mm, const unsigned char *in,
                           const unsigned char *use, int shared, ck_err *err)
{
    const ck_plan *p = r->p;
    size_t n = (size_t)ck_exec_nelem(p->node[i].ndim, shape);
    memo *chain = ck_arena_alloc(a, (size_t)shared * sizeof(memo));
    int c = 0;

    if (!chain)
        return ck_exec_no_room(err);
    for (int t = 0; t < p->n; t++) {
        int s = p->order[t];
        if (!in[s] || !is_shared(p, s, use))
            continue;
        void *buf = ck_arena_alloc(a, n * ck_dtype_size(p->node[s].dtype));
        if (!buf)
            return ck_exec_no_room(err);
        size_t mark = a->used; /* its scratch is free after */
        CK_TRY(eval(r, s, start, shape, buf, a, mm, err));
        a->used = mark;
        chain[c] = (memo){s, start, shape, buf, mm};
        mm = &chain[c++];
    }
    return ew_eval(r, i, start, shape, dst, a, mm, err);
}

ck_code ck_exec_ew_eval(xrun *r, int i, const int64_t *start,
                        const int64_t *shape, void *dst, ck_arena *a,
                        const memo *mm, ck_err *err)
{
    unsigned char in[CK_MAX_NODES], use[CK_MAX_NODES];
    int shared = region(r->p, i, -1, mm, start, shape, in, use);

    if (shared)
        return shared_eval(r, i, start, shape, dst, a, mm, in, use, shared,
                           err);
    return ew_eval(r, i, start, shape, dst, a, mm, err);
}

/* An elementwise step over one box: each operand's values (a memo, a view
 * of an input's chunk, or evaluated into the arena), converted to the
 * compute dtype and broadcast to the box as needed. */
static ck_code ew_eval(xrun *r, int i, const int64_t *start,
                       const int64_t *shape, void *dst, ck_arena *a,
                       const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    size_t n = (size_t)ck_exec_nelem(nd->ndim, shape);
    ck_chunk_view views[CK_MAX_ARGS] = {{0}};
    ck_code rc = CK_OK;
    ck_ew_args ea = {0};

    ea.op = nd->ew;
    ea.compute = nd->compute;
    ea.result = nd->dtype;
    ea.n = n;
    ea.out = dst;
    for (int k = 0; k < nd->nargs; k++) {
        ck_dtype want = nd->ew == CK_EW_WHERE && k == 0 ? CK_BOOL : nd->compute;
        size_t wsz = ck_dtype_size(want);
        if (nd->arg[k] < 0) {
            void *s = ck_arena_alloc(a, 8);
            if (!s) {
                rc = ck_exec_no_room(err);
                goto out;
            }
            if (nd->scalar_t[k] == CK_F64)
                ck_dtype_convert(want, s, CK_F64, &nd->scalar[k], 1);
            else {
                int64_t v = (int64_t)nd->scalar[k];
                ck_dtype_convert(want, s, CK_I64, &v, 1);
            }
            ea.in[k] = s;
            ea.stride[k] = 0;
            continue;
        }
        const ck_node *m = &r->p->node[nd->arg[k]];
        int off = nd->ndim - m->ndim;
        int64_t ms[CK_MAX_DIMS], msh[CK_MAX_DIMS];
        for (int d = 0; d < m->ndim; d++) {
            int bc = m->shape[d] == 1 && nd->shape[d + off] != 1;
            ms[d] = bc ? 0 : start[d + off];
            msh[d] = bc ? 1 : shape[d + off];
        }
        size_t mn = (size_t)ck_exec_nelem(m->ndim, msh);
        const memo *hit = memo_find(mm, nd->arg[k], m->ndim, ms, msh);
        void *v;
        if (hit) {
            v = (void *)(uintptr_t)hit->data; /* only read */
        } else if (view_box(r, nd->arg[k], m->ndim, ms, msh, &views[k])) {
            v = (void *)(uintptr_t)views[k].data; /* only read */
        } else {
            if (!(v = ck_arena_alloc(a, mn * ck_dtype_size(m->dtype)))) {
                rc = ck_exec_no_room(err);
                goto out;
            }
            size_t mark = a->used; /* the operand's scratch is free after */
            if ((rc = eval(r, nd->arg[k], ms, msh, v, a, mm, err)) != CK_OK)
                goto out;
            a->used = mark;
        }
        if (m->dtype != want) {
            void *c = ck_arena_alloc(a, mn * wsz);
            if (!c) {
                rc = ck_exec_no_room(err);
                goto out;
            }
            ck_dtype_convert(want, c, m->dtype, v, mn);
            v = c;
        }
        if (mn == n) {
            ea.stride[k] = 1;
        } else if (mn == 1) {
            ea.stride[k] = 0;
        } else {
            int64_t full[CK_MAX_DIMS];
            void *e = ck_arena_alloc(a, n * wsz);
            if (!e) {
                rc = ck_exec_no_room(err);
                goto out;
            }
            for (int d = 0; d < nd->ndim; d++)
                full[d] = d < off ? 1 : msh[d - off];
            ck_exec_expand(nd->ndim, wsz, e, shape, v, full);
            v = e;
            ea.stride[k] = 1;
        }
        ea.in[k] = v;
    }
    rc = ck_op_ew(&r->be, &ea, err);
out:
    for (int k = 0; k < nd->nargs; k++)
        ck_chunk_view_release(&views[k]);
    return rc;
}

/* ---- results held in memory: reductions, histograms, masks ---- */

size_t ck_exec_held_bytes(const xrun *r, int i, size_t n, int known,
                          int aligned)
{
    (void)r, (void)i, (void)n, (void)known, (void)aligned;
    return 0; /* copied out of r->x[i].mem */
}

ck_code ck_exec_held_eval(xrun *r, int i, const int64_t *start,
                          const int64_t *shape, void *dst, ck_arena *a,
                          const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    int64_t zero[CK_MAX_DIMS] = {0};

    (void)a, (void)mm, (void)err;
    ck_box_copy(nd->ndim, ck_dtype_size(nd->dtype), dst, shape, zero,
                r->x[i].mem, nd->shape, start, NULL, shape);
    return CK_OK;
}

/* ---- rechunk: the operand's values over the same box ---- */

size_t ck_exec_rechunk_bytes(const xrun *r, int i, size_t n, int known,
                             int aligned)
{
    const ck_node *nd = &r->p->node[i];

    return ck_exec_bytes(r, nd->arg[0], n, known,
                         aligned && same_chunks(nd, &r->p->node[nd->arg[0]]));
}

ck_code ck_exec_rechunk_eval(xrun *r, int i, const int64_t *start,
                             const int64_t *shape, void *dst, ck_arena *a,
                             const memo *mm, ck_err *err)
{
    return eval(r, r->p->node[i].arg[0], start, shape, dst, a, mm, err);
}

/* ---- random: pipelines/gen.h's generator, one row at a time ---- */

size_t ck_exec_random_bytes(const xrun *r, int i, size_t n, int known,
                            int aligned)
{
    const ck_node *nd = &r->p->node[i];

    (void)n, (void)known, (void)aligned;
    return ck_exec_al((size_t)(nd->ndim ? nd->shape[nd->ndim - 1] : 1) * 8);
}

ck_code ck_exec_random_eval(xrun *r, int i, const int64_t *start,
                            const int64_t *shape, void *dst, ck_arena *a,
                            const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    double *row = ck_arena_alloc(
        a, sizeof(double) * (size_t)(nd->ndim ? shape[nd->ndim - 1] : 1));

    (void)mm;
    if (!row)
        return ck_exec_no_room(err);
    ck_gen_box((ck_dist)nd->dist, nd->ra, nd->rb, nd->seed, nd->dtype, nd->ndim,
               nd->shape, start, shape, shape, dst, row);
    return CK_OK;
}

/* ---- concatenate and stack ---- */

/* concatenate/stack: each operand's part of the box, converted to the
 * result dtype, placed at its offset along the axis. */
size_t ck_exec_concat_bytes(const xrun *r, int i, size_t n, int known,
                            int aligned)
{
    const ck_node *nd = &r->p->node[i];
    size_t most = 0;

    (void)known, (void)aligned;
    for (int k = 0; k < nd->nargs; k++) {
        size_t e = ck_exec_bytes(r, nd->arg[k], n, -1, 0);
        most = e > most ? e : most;
    }
    /* an operand's values and their conversion, then its own scratch */
    return 2 * ck_exec_al(n * 8) + most;
}

ck_code ck_exec_concat_eval(xrun *r, int i, const int64_t *start,
                            const int64_t *shape, void *dst, ck_arena *a,
                            const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    int ax = nd->axis;
    size_t esz = ck_dtype_size(nd->dtype);
    int64_t at = 0; /* operand k's first index along the axis */

    (void)mm;

    for (int k = 0; k < nd->nargs; k++) {
        const ck_node *m = &r->p->node[nd->arg[k]];
        int64_t len = nd->stack ? 1 : m->shape[ax];
        int64_t lo = start[ax] > at ? start[ax] : at;
        int64_t hi =
            start[ax] + shape[ax] < at + len ? start[ax] + shape[ax] : at + len;
        if (lo < hi) {
            int64_t ms[CK_MAX_DIMS], msh[CK_MAX_DIMS], box[CK_MAX_DIMS];
            int64_t doff[CK_MAX_DIMS] = {0}, zero[CK_MAX_DIMS] = {0};
            int j = 0;
            for (int d = 0; d < nd->ndim; d++) {
                box[d] = d == ax ? hi - lo : shape[d];
                if (nd->stack && d == ax)
                    continue;
                ms[j] = d == ax ? lo - at : start[d];
                msh[j++] = box[d];
            }
            doff[ax] = lo - start[ax];
            size_t mn = (size_t)ck_exec_nelem(m->ndim, msh);
            void *v = ck_arena_alloc(a, mn * ck_dtype_size(m->dtype));
            void *c = m->dtype == nd->dtype ? v : ck_arena_alloc(a, mn * esz);
            if (!v || !c)
                return ck_exec_no_room(err);
            CK_TRY(ck_exec_eval(r, nd->arg[k], ms, msh, v, a, err));
            if (c != v)
                ck_dtype_convert(nd->dtype, c, m->dtype, v, mn);
            ck_box_copy(nd->ndim, esz, dst, shape, doff, c, box, zero, NULL,
                        box);
        }
        at += len;
    }
    return CK_OK;
}

/* ---- reshape ---- */

/* Does reshape nd only insert or remove axes of length 1 (squeeze,
 * expand_dims)?  Then its box is the operand's box with those axes
 * dropped or added: the same values in the same order. */
static int unit_reshape(const ck_plan *p, const ck_node *nd)
{
    const ck_node *m = &p->node[nd->arg[0]];
    int a = 0, b = 0;

    for (;;) {
        while (a < nd->ndim && nd->shape[a] == 1)
            a++;
        while (b < m->ndim && m->shape[b] == 1)
            b++;
        if (a == nd->ndim || b == m->ndim)
            return a == nd->ndim && b == m->ndim;
        if (nd->shape[a++] != m->shape[b++])
            return 0;
    }
}

/* The operand's box of box start/shape under a unit reshape. */
static void unit_box(const ck_plan *p, const ck_node *nd, const int64_t *start,
                     const int64_t *shape, int64_t *ist, int64_t *ish)
{
    const ck_node *m = &p->node[nd->arg[0]];
    int a = 0;

    for (int b = 0; b < m->ndim; b++) {
        ist[b] = 0;
        ish[b] = 1;
        if (m->shape[b] == 1)
            continue;
        while (nd->shape[a] == 1)
            a++;
        ist[b] = start[a];
        ish[b] = shape[a++];
    }
}

/* reshape: the box's C-order span in the operand is read as whole rows of
 * its first axis, and each output row is one run of that slab. */
size_t ck_exec_reshape_bytes(const xrun *r, int i, size_t n, int known,
                             int aligned)
{
    const ck_node *nd = &r->p->node[i];
    size_t span = reshape_span(r->p, nd, n);

    (void)aligned;
    if (unit_reshape(r->p, nd))
        return ck_exec_bytes(r, nd->arg[0], n, known, 0);
    return ck_exec_al(span * ck_dtype_size(nd->dtype)) +
           ck_exec_bytes(r, nd->arg[0], span, -1, 0);
}

ck_code ck_exec_reshape_eval(xrun *r, int i, const int64_t *start,
                             const int64_t *shape, void *dst, ck_arena *a,
                             const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    size_t esz = ck_dtype_size(nd->dtype);
    int64_t inner = 1, lmin = 0, lmax = 0, idx[CK_MAX_DIMS] = {0};
    int64_t ss[CK_MAX_DIMS], sst[CK_MAX_DIMS] = {0};
    int nd_ = nd->ndim, last = nd_ - 1;
    int64_t row = nd_ ? shape[last] : 1;
    char *o = dst;

    if (unit_reshape(r->p, nd)) {
        unit_box(r->p, nd, start, shape, ss, sst);
        return eval(r, nd->arg[0], ss, sst, dst, a, mm, err);
    }
    for (int d = 1; d < m->ndim; d++)
        inner *= m->shape[d];
    for (int d = 0; d < nd_; d++) {
        lmin = lmin * nd->shape[d] + start[d];
        lmax = lmax * nd->shape[d] + start[d] + shape[d] - 1;
    }
    /* The slab: rows r0..r1 of the operand's first axis, whole. */
    int64_t r0 = m->ndim ? lmin / inner : 0, r1 = m->ndim ? lmax / inner : 0;
    memcpy(ss, m->shape, sizeof ss);
    if (m->ndim) {
        sst[0] = r0;
        ss[0] = r1 - r0 + 1;
    }
    void *slab = ck_arena_alloc(a, (size_t)ck_exec_nelem(m->ndim, ss) * esz);
    if (!slab)
        return ck_exec_no_room(err);
    CK_TRY(ck_exec_eval(r, nd->arg[0], sst, ss, slab, a, err));
    for (;;) {
        int64_t l = 0;
        for (int d = 0; d < nd_; d++)
            l = l * nd->shape[d] + start[d] + (d < last ? idx[d] : 0);
        memcpy(o, (char *)slab + (size_t)(l - r0 * inner) * esz,
               (size_t)row * esz);
        o += (size_t)row * esz;
        int d = last - 1;
        for (; d >= 0; d--) {
            if (++idx[d] < shape[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
    return CK_OK;
}

/* ---- transpose ---- */

/* dst (C order, shape[nd]) gets src transposed: dst axis k is src axis
 * perm[k]; src is C order of shape ssh[]. */
void ck_exec_permute(int nd, size_t esz, void *dst, const int64_t *shape,
                     const void *src, const int64_t *ssh, const int *perm)
{
    int64_t ss[CK_MAX_DIMS], st[CK_MAX_DIMS], idx[CK_MAX_DIMS] = {0};
    int64_t row = nd ? shape[nd - 1] : 1, inner;
    char *o = dst;

    if (nd == 0) {
        memcpy(dst, src, esz);
        return;
    }
    ss[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--)
        ss[d] = ss[d + 1] * ssh[d + 1];
    for (int k = 0; k < nd; k++)
        st[k] = ss[perm[k]];
    inner = st[nd - 1];
    for (;;) {
        int64_t off = 0;
        for (int k = 0; k < nd - 1; k++)
            off += idx[k] * st[k];
        const char *i = (const char *)src + (size_t)off * esz;
        switch (esz) {
        case 8:
            for (int64_t j = 0; j < row; j++)
                memcpy(o + 8 * j, i + (size_t)(j * inner) * 8, 8);
            break;
        case 4:
            for (int64_t j = 0; j < row; j++)
                memcpy(o + 4 * j, i + (size_t)(j * inner) * 4, 4);
            break;
        default:
            for (int64_t j = 0; j < row; j++)
                memcpy(o + (size_t)j * esz, i + (size_t)(j * inner) * esz, esz);
        }
        o += (size_t)row * esz;
        int k = nd - 2;
        for (; k >= 0; k--) {
            if (++idx[k] < shape[k])
                break;
            idx[k] = 0;
        }
        if (k < 0)
            break;
    }
}

size_t ck_exec_transpose_bytes(const xrun *r, int i, size_t n, int known,
                               int aligned)
{
    const ck_node *nd = &r->p->node[i];

    (void)known, (void)aligned;
    return ck_exec_al(n * ck_dtype_size(nd->dtype)) +
           ck_exec_bytes(r, nd->arg[0], n, -1, 0);
}

ck_code ck_exec_transpose_eval(xrun *r, int i, const int64_t *start,
                               const int64_t *shape, void *dst, ck_arena *a,
                               const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    size_t n = (size_t)ck_exec_nelem(nd->ndim, shape);
    int64_t ist[CK_MAX_DIMS], ish[CK_MAX_DIMS];
    void *tmp = ck_arena_alloc(a, n * ck_dtype_size(m->dtype));

    if (!tmp)
        return ck_exec_no_room(err);
    for (int k = 0; k < nd->ndim; k++) {
        ist[nd->perm[k]] = start[k];
        ish[nd->perm[k]] = shape[k];
    }
    CK_TRY(eval(r, nd->arg[0], ist, ish, tmp, a, mm, err));
    ck_exec_permute(nd->ndim, ck_dtype_size(nd->dtype), dst, shape, tmp, ish,
                    nd->perm);
    return CK_OK;
}

/* ---- slice ---- */

/* A strided box of an input is read as such; of anything else it is
 * evaluated whole over its bounding box, then subsampled. */
size_t ck_exec_slice_bytes(const xrun *r, int i, size_t n, int known,
                           int aligned)
{
    const ck_node *nd = &r->p->node[i];
    size_t span = n;

    (void)known, (void)aligned;
    if (r->p->node[nd->arg[0]].kind == CK_NODE_INPUT)
        return ck_exec_bytes(r, nd->arg[0], n, -1, 0);
    for (int d = 0; d < r->p->node[nd->arg[0]].ndim; d++)
        span *= (size_t)(nd->sl_step[d] < 0 ? -nd->sl_step[d] : nd->sl_step[d]);
    return ck_exec_al(span * ck_dtype_size(nd->dtype)) +
           ck_exec_bytes(r, nd->arg[0], span, -1, 0);
}

/* Reverses the C-order box data (shape[nd], elements of esz bytes) along
 * axis: x[..., ::-1, ...] in place. */
static void reverse_axis(int nd, size_t esz, void *data, const int64_t *shape,
                         int axis)
{
    size_t outer = 1, inner = esz, len = (size_t)shape[axis];
    char tmp[256];

    for (int d = 0; d < axis; d++)
        outer *= (size_t)shape[d];
    for (int d = axis + 1; d < nd; d++)
        inner *= (size_t)shape[d];
    for (size_t o = 0; o < outer; o++) {
        char *base = (char *)data + o * len * inner;
        for (size_t j = 0; j < len / 2; j++) {
            char *x = base + j * inner, *y = base + (len - 1 - j) * inner;
            for (size_t b = 0; b < inner; b += sizeof tmp) {
                size_t n = inner - b < sizeof tmp ? inner - b : sizeof tmp;
                memcpy(tmp, x + b, n);
                memcpy(x + b, y + b, n);
                memcpy(y + b, tmp, n);
            }
        }
    }
}

ck_code ck_exec_slice_eval(xrun *r, int i, const int64_t *start,
                           const int64_t *shape, void *dst, ck_arena *a,
                           const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    int64_t ist[CK_MAX_DIMS], ish[CK_MAX_DIMS], istep[CK_MAX_DIMS];
    int64_t bsh[CK_MAX_DIMS], zero[CK_MAX_DIMS] = {0};
    size_t esz = ck_dtype_size(nd->dtype);
    int k = 0, flip[CK_MAX_DIMS] = {0};

    /* A negative step reads the same elements upwards with the positive
     * step, then reverses them along that axis. */
    for (int d = 0; d < m->ndim; d++) {
        int64_t st = nd->sl_keep[d] ? nd->sl_step[d] : 1;
        ish[d] = nd->sl_keep[d] ? shape[k] : 1;
        ist[d] = nd->sl_start[d] + (nd->sl_keep[d] ? start[k] * st : 0);
        if (st < 0) {
            ist[d] += (ish[d] - 1) * st;
            st = -st;
            flip[d] = 1;
        }
        k += nd->sl_keep[d];
        istep[d] = st;
        bsh[d] = (ish[d] - 1) * istep[d] + 1;
    }
    if (m->kind == CK_NODE_INPUT) {
        int64_t stop[CK_MAX_DIMS];
        for (int d = 0; d < m->ndim; d++)
            stop[d] = ist[d] + bsh[d];
        CK_TRY(ck_array_read_region(r->x[nd->arg[0]].arr, ist, stop, istep,
                                    nd->dtype, dst, NULL, a, err));
    } else {
        void *tmp =
            ck_arena_alloc(a, (size_t)ck_exec_nelem(m->ndim, bsh) * esz);
        if (!tmp)
            return ck_exec_no_room(err);
        CK_TRY(eval(r, nd->arg[0], ist, bsh, tmp, a, mm, err));
        ck_box_copy(m->ndim, esz, dst, ish, zero, tmp, bsh, zero, istep, ish);
    }
    for (int d = 0; d < m->ndim; d++)
        if (flip[d])
            reverse_axis(m->ndim, esz, dst, ish, d);
    return CK_OK;
}

/* ---- folds: reductions, histograms and masks ----
 *
 * A fold reads its operand chunk by chunk and keeps a partial result per
 * chunk, combined in chunk order (the same bits for any thread count).
 * Folds over the same operand share one pass: mean, sum and std of an
 * array read it once.  A mask whose only users are such folds (a
 * histogram of x[x < 10]) is never materialised: its users fold the
 * selected values of each chunk of its operand. */

enum { CK_MAX_WORKERS = 256, CK_MAX_FOLD = 16 };

/* Bytes of a chunk all members of a pass fold before the next: within the
 * last-level cache, large enough that per-slab state updates stay rare
 * (ex2: 256 KB slabs 1.04 s, 2 MB 0.54 s, 8 MB 0.53 s, 32 MB 0.56 s). */
#define SLAB_BYTES ((size_t)8 << 20)

/* Chunks a task folds into one partial, where they share it (run_fold),
 * and the bytes up to which those chunks are read as one box. */
#define TASK_RUN 32
#define STACK_BYTES ((size_t)32 << 20)

/* Where the partials are small beside a chunk (a sum over every axis, a
 * histogram), runs are cut so that a pass has at least this many tasks
 * where it has the chunks: tasks are what threads and MPI ranks divide,
 * and a few long runs left them idle (6 chunks were one task, read by
 * one thread of one rank).  Not where a partial is about a chunk's size
 * (a time mean): each task initialises and merges one, and 60 chunks of
 * 4 MB in runs of 3 took twice as long as in runs of 8.  The cap depends
 * on the grid and the steps alone, so results are the same bits for any
 * --threads and number of ranks. */
#define FOLD_MIN_TASKS 16

typedef struct fold {
    xrun *r;
    int slabs; /* members fold the chunk slab by slab (all share) */
    int nm;    /* the steps folded in this pass */
    int node[CK_MAX_FOLD];
    size_t off[CK_MAX_FOLD + 1]; /* member k's partial: part + off[k] */
    int twin[CK_MAX_FOLD];       /* >= 0: member k, a mean, is read from
                                    that member's var states */
    int operand;                 /* the values folded */
    int cond;                    /* >= 0: only where this is true (a mask) */
    ck_array *direct;            /* operand read in place, chunk by chunk */
    const ck_node *decode;       /* a CF node over 'direct': its values are
                                    the chunks decoded where they are read */
    ck_grid g;                   /* the operand's chunks */
    /* Tasks: runs of up to 'run' chunks along grid axis 'axis' that all
     * fold into one partial (see run_fold); 'run' 1: a task per chunk. */
    int axis;
    int64_t run, per_row; /* tasks per row of the grid along axis */
    int stacked;          /* a task's chunks are read as one box */
    int slices;           /* ... each chunk a slice of it, decoded there */
    int64_t ntasks;
    int64_t w0, wn;    /* the window: tasks w0 .. w0+wn-1 */
    int64_t next;      /* atomic */
    size_t part_bytes; /* one task's partials */
    char **part;       /* wn of them (NULL: taken by a tree) */
    size_t arena_bytes;
    ck_arena arena[CK_MAX_WORKERS]; /* one per worker, kept across windows */
} fold;

/* Do member k's values come through a mask (so they are 1-D, in no
 * particular place)? */
static int masked(const fold *f, int k)
{
    return f->cond >= 0 && f->r->p->node[f->node[k]].kind != CK_NODE_MASK;
}

/* Output box of chunk c under reduction member k: shape and start without
 * the reduced axes (none left when its values come through a mask). */
static int out_box(const fold *f, int k, const ck_chunk *c, int64_t *start,
                   int64_t *shape)
{
    const ck_node *nd = &f->r->p->node[f->node[k]];
    int n = 0;

    for (int d = 0; d < f->g.ndim && !masked(f, k); d++)
        if (!(nd->axes & (1u << d))) {
            start[n] = c->start[d];
            shape[n++] = c->shape[d];
        }
    return n;
}

/* Folds member k over one chunk's values: v (n of them, shape sh and
 * origin org in ndim axes) into its partial 'part'. */
static ck_code fold_member(fold *f, int k, const ck_chunk *c, const void *v,
                           size_t n, int ndim, const int64_t *sh,
                           const int64_t *org, char *part, int init,
                           ck_arena *a, ck_err *err)
{
    xrun *r = f->r;
    const ck_node *nd = &r->p->node[f->node[k]];
    const ck_node *m = &r->p->node[f->operand];
    size_t esz = ck_dtype_size(m->dtype);

    if (nd->kind == CK_NODE_MASK) {
        /* the count, then the selected values in C order */
        int64_t cnt = (int64_t)n;
        memcpy(part, &cnt, sizeof cnt);
        memcpy(part + 64, v, n * esz);
        return CK_OK;
    }
    if (nd->kind == CK_NODE_REDUCE && f->twin[k] >= 0)
        return CK_OK; /* its twin's fold carries it */
    if (nd->kind == CK_NODE_REDUCE) {
        int64_t os[CK_MAX_DIMS], osh[CK_MAX_DIMS];
        int64_t zero[CK_MAX_DIMS] = {0};
        int ond = out_box(f, k, c, os, osh);
        if (init)
            ck_red_init(nd->red, part, (size_t)ck_exec_nelem(ond, osh));
        if (ond > 0 && !(nd->axes & 1u)) {
            /* a slab of the chunk along a kept axis 0: its states are
             * those rows of the chunk's */
            part += (size_t)((org[0] - c->start[0]) *
                             (ck_exec_nelem(ond, osh) / osh[0])) *
                    ck_red_state_size();
        }
        ck_red_args ra = {.op = nd->red,
                          .in = m->dtype,
                          .data = v,
                          .ndim = ndim,
                          .shape = sh,
                          /* a mask's values have no place */
                          .origin = masked(f, k) ? zero : org,
                          .array_shape = masked(f, k) ? sh : m->shape,
                          .axes = masked(f, k) ? 1u : nd->axes,
                          .state = part};
        return ck_op_reduce(&r->be, &ra, err);
    }
    void *w = NULL;
    ck_dtype wt = CK_F64;
    if (nd->weights >= 0) {
        wt = r->p->node[nd->weights].dtype;
        if (!(w = ck_arena_alloc(a, n * ck_dtype_size(wt))))
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(r, nd->weights, c->start, c->shape, w, a, err));
    }
    if (init)
        memset(part, 0, f->off[k + 1] - f->off[k]);
    if (nd->kind == CK_NODE_HIST2D) {
        const ck_node *yn = &r->p->node[nd->arg[1]];
        void *yv = ck_arena_alloc(a, n * ck_dtype_size(yn->dtype));
        if (!yv)
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(r, nd->arg[1], c->start, c->shape, yv, a, err));
        ck_hist2d_args h2 = {.tx = m->dtype,
                             .ty = yn->dtype,
                             .x = v,
                             .y = yv,
                             .n = n,
                             .weights = w,
                             .wtype = wt,
                             .nx = nd->nbins,
                             .ny = nd->nbins2,
                             .xedges = nd->edges,
                             .yedges = nd->edges2,
                             .xuniform = 1,
                             .yuniform = 1,
                             .counts = (double *)(void *)part};
        ck_hist2d_accumulate(&h2);
        return CK_OK;
    }
    ck_hist_args ha = {.in = m->dtype,
                       .data = v,
                       .n = n,
                       .weights = w,
                       .wtype = wt,
                       .nbins = nd->nbins,
                       .edges = nd->edges,
                       .uniform = nd->uniform,
                       .counts = (double *)(void *)part};
    return ck_op_hist(&r->be, &ha, err);
}

/* Moves the values v[k] (esz bytes each) where keep[k] is set to the
 * front of v, in order; returns how many. */
static size_t select_values(void *v, const uint8_t *keep, size_t n, size_t esz)
{
    size_t cnt = 0;

#define SELECT(W)                                                              \
    do {                                                                       \
        char *x = v;                                                           \
        for (size_t k = 0; k < n; k++) {                                       \
            memmove(x + cnt * (W), x + k * (W), (W));                          \
            cnt += keep[k] != 0;                                               \
        }                                                                      \
    } while (0)
    switch (esz) {
    case 1:
        SELECT(1);
        break;
    case 2:
        SELECT(2);
        break;
    case 4:
        SELECT(4);
        break;
    default:
        SELECT(8);
        break;
    }
#undef SELECT
    return cnt;
}

static ck_code fold_chunk(fold *f, const ck_chunk *c, char *part, int init,
                          ck_arena *a, ck_err *err)
{
    xrun *r = f->r;
    const ck_node *m = &r->p->node[f->operand];
    size_t esz = ck_dtype_size(m->dtype);
    size_t n = (size_t)ck_chunk_nelem(&f->g, c);
    int ndim = m->ndim;
    int64_t sh[CK_MAX_DIMS], org[CK_MAX_DIMS];
    ck_chunk_view view = {0};
    ck_code rc = CK_OK;
    void *buf;

    memcpy(sh, c->shape, sizeof sh);
    memcpy(org, c->start, sizeof org);
    if (f->stacked && f->slices) {
        /* several chunks that are consecutive slices of the box: each
         * decoded straight into its place (the last one's padding lands
         * past the box, in the room kept for it) */
        size_t cb = (size_t)f->g.chunk_nelem * esz;
        int64_t cl = f->g.chunk[f->axis];
        int64_t len = (c->shape[f->axis] + cl - 1) / cl;
        if (!(buf = ck_arena_alloc(a, n * esz + cb)))
            return ck_exec_no_room(err);
        for (int64_t j = 0; j < len; j++) {
            int64_t co[CK_MAX_DIMS];
            memcpy(co, c->coords, sizeof co);
            co[f->axis] += j;
            size_t mark = a->used;
            CK_TRY(ck_array_read_chunk(f->direct, co, (char *)buf + j * cb, a,
                                       err));
            a->used = mark;
        }
    } else if (f->stacked) {
        /* several chunks' box: evaluated as one */
        if (!(buf = ck_arena_alloc(a, n * esz)))
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(r, f->operand, c->start, c->shape, buf, a, err));
    } else if (f->direct && !f->decode && f->cond < 0 &&
               n == (size_t)f->g.chunk_nelem &&
               ck_array_view_chunk(f->direct, c->coords, &view)) {
        /* a whole chunk stored raw: folded where it lies, no copy */
        buf = (void *)(uintptr_t)view.data; /* only read: no mask */
    } else if (f->direct) {
        /* the chunk as stored, then its values at the front */
        if (!(buf = ck_arena_alloc(a, (size_t)f->g.chunk_nelem * esz)))
            return ck_exec_no_room(err);
        CK_TRY(ck_array_read_chunk(f->direct, c->coords, buf, a, err));
        if (n < (size_t)f->g.chunk_nelem)
            ck_box_compact(ndim, esz, buf, f->g.chunk, c->shape);
    } else {
        if (!(buf = ck_arena_alloc(a, n * esz)))
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(r, f->operand, c->start, c->shape, buf, a, err));
    }
    /* read in place under a CF decoding: decoded here (evaluated boxes of
     * the CF node came decoded) */
    if (f->decode && (f->slices || !f->stacked))
        ck_cf_decode(f->decode, buf, n);
    if (f->cond >= 0) {
        /* x[cond]: the selected values, in C order, at the front of buf;
         * the condition usually reads the values (x < 10), given as the
         * memo so they are not evaluated twice */
        memo mm = {f->operand, c->start, c->shape, buf, NULL};
        uint8_t *cond = ck_arena_alloc(a, n);
        size_t cnt = 0;
        if (!cond)
            return ck_exec_no_room(err);
        CK_TRY(eval(r, f->cond, c->start, c->shape, cond, a, &mm, err));
        cnt = select_values(buf, cond, n, esz);
        n = cnt;
        ndim = 1;
        sh[0] = (int64_t)cnt;
        org[0] = 0;
    }
    /* Several members take the chunk in slabs along axis 0 that stay in
     * cache, all of them each slab, rather than one whole chunk after
     * another from memory. */
    int64_t row = ndim > 0 && sh[0] > 0 ? (int64_t)n / sh[0] : 1;
    row = row > 0 ? row : 1; /* an empty box: one empty slab */
    int64_t step = ndim > 0 && f->nm > 1 && f->slabs
                       ? (int64_t)(SLAB_BYTES / ((size_t)row * esz))
                       : (ndim > 0 ? sh[0] : 1);
    step = step < 1 ? 1 : step;
    int64_t rows = ndim > 0 ? sh[0] : 1;
    for (int64_t r0 = 0; rc == CK_OK && (r0 == 0 || r0 < rows); r0 += step) {
        int64_t ssh[CK_MAX_DIMS], sorg[CK_MAX_DIMS];
        memcpy(ssh, sh, sizeof ssh);
        memcpy(sorg, org, sizeof sorg);
        if (ndim > 0) {
            ssh[0] = rows - r0 < step ? rows - r0 : step;
            sorg[0] = org[0] + r0;
        }
        size_t sn = (size_t)(ndim > 0 ? ssh[0] * row : (int64_t)n);
        const char *sv = (const char *)buf + (size_t)(r0 * row) * esz;
        for (int k = 0; rc == CK_OK && k < f->nm; k++)
            rc = fold_member(f, k, c, sv, sn, ndim, ssh, sorg, part + f->off[k],
                             init && r0 == 0, a, err);
    }
    ck_chunk_view_release(&view);
    return rc;
}

static int64_t run_cap(const ck_plan *p, const int *node, int nm,
                       const ck_grid *g, int64_t run)
{
    int64_t cap = g->total_chunks / FOLD_MIN_TASKS, out = 0;

    for (int k = 0; k < nm; k++) {
        const ck_node *nd = &p->node[node[k]];
        int64_t e = ck_exec_nelem(nd->ndim, nd->shape);
        out = e > out ? e : out;
    }
    if (out * 4 > g->chunk_nelem)
        return run;
    cap = cap > 1 ? cap : 1;
    return run < cap ? run : cap;
}

/* How a pass folding steps node[0..nm) over grid g (elements of esize
 * bytes; cond: a mask's condition, or -1) cuts its chunks into tasks.
 * Runs of chunks into one partial: when every chunk along the grid's
 * last axis of several chunks (*axis) feeds the same output elements
 * (that axis is reduced: a time mean of a file chunked by time step), a
 * task folds up to TASK_RUN of them (*run) in turn into one partial, so
 * the per-chunk work is the fold itself, not initialising and merging a
 * partial the size of the output.  Runs of small chunks of reductions
 * alone are read as one box (*stacked; a day of a time series chunked by
 * time step): so many rows per kernel call that the partial's states are
 * touched once per run.  Tasks depend on the grid and the steps only,
 * and are combined in order: the same bits for any thread count. */
static void fold_layout(const ck_plan *p, const int *node, int nm, int cond,
                        const ck_grid *g, size_t esize, int *axis, int64_t *run,
                        int *stacked)
{
    *run = 1;
    *axis = -1;
    *stacked = 0;
    for (int d = 0; d < g->ndim; d++)
        if (g->nchunks[d] > 1)
            *axis = d;
    if (*axis >= 0 && p->node[node[0]].kind != CK_NODE_MASK) {
        *run = TASK_RUN;
        for (int k = 0; k < nm; k++) {
            const ck_node *nk = &p->node[node[k]];
            if (nk->kind == CK_NODE_REDUCE && cond < 0 &&
                !(nk->axes & (1u << *axis)))
                *run = 1;
        }
    }
    if (*run > 1 && cond < 0) {
        size_t cb = (size_t)g->chunk_nelem * esize;
        int all_red = 1;
        for (int k = 0; k < nm; k++)
            all_red &= p->node[node[k]].kind == CK_NODE_REDUCE;
        if (all_red && cb > 0 && cb * 2 <= STACK_BYTES) {
            *run = (int64_t)(STACK_BYTES / cb) < TASK_RUN
                       ? (int64_t)(STACK_BYTES / cb)
                       : TASK_RUN;
            *stacked = 1;
        }
    }
    *run = run_cap(p, node, nm, g, *run);
    if (*run <= 1) {
        *run = 1;
        *stacked = 0;
    }
}

/* f's tasks of its runs (fold_layout). */
static void tasks_of_runs(fold *f)
{
    if (f->run > 1) {
        f->per_row = (f->g.nchunks[f->axis] + f->run - 1) / f->run;
        f->ntasks = f->g.total_chunks / f->g.nchunks[f->axis] * f->per_row;
    } else {
        f->per_row = 1;
        f->ntasks = f->g.total_chunks;
    }
}

/* Task t's chunks: first .. first + len - 1, consecutive along f->axis
 * (the grid's last axis of more than one chunk). */
static void task_chunks(const fold *f, int64_t t, int64_t *first, int64_t *len)
{
    int64_t nl = f->run > 1 ? f->g.nchunks[f->axis] : 1;
    int64_t row = t / f->per_row, j = (t % f->per_row) * f->run;

    *first = row * nl + j;
    *len = nl - j < f->run ? nl - j : f->run;
}

static ck_code fold_worker(void *ctx, int id, ck_par *par, ck_err *err)
{
    fold *f = ctx;
    ck_arena *a = &f->arena[id];
    ck_code rc = CK_OK;

    while (rc == CK_OK && !ck_par_stopped(par)) {
        int64_t k = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED);
        int64_t first, len;
        if (k >= f->wn)
            break;
        task_chunks(f, f->w0 + k, &first, &len);
        if (f->stacked) {
            /* the run's chunks as one box: the reduction kernels fold its
             * rows into in-cache tiles and touch the partial once */
            ck_chunk c, l;
            ck_grid_chunk(&f->g, first, &c);
            ck_grid_chunk(&f->g, first + len - 1, &l);
            c.shape[f->axis] =
                l.start[f->axis] + l.shape[f->axis] - c.start[f->axis];
            ck_arena_reset(a);
            rc = fold_chunk(f, &c, f->part[k], 1, a, err);
            for (int64_t j = 0; rc == CK_OK && j < len; j++)
                ck_progress_add(f->r->o->progress, 0);
            continue;
        }
        /* a run is up to TASK_RUN chunks: a failure elsewhere stops it at
         * the next one (the job fails, so the partial is never used) */
        for (int64_t j = 0; rc == CK_OK && j < len && !ck_par_stopped(par);
             j++) {
            ck_chunk c;
            ck_grid_chunk(&f->g, first + j, &c);
            ck_arena_reset(a);
            rc = fold_chunk(f, &c, f->part[k], j == 0, a, err);
            if (rc == CK_OK)
                ck_progress_add(f->r->o->progress, 0);
        }
    }
    return rc;
}

/* Combines chunk c's partial states of reduction member k into the global
 * states (shape gsh). */
static void combine_box(const fold *f, int k, const ck_chunk *c, void *states,
                        const void *part, const int64_t *gsh)
{
    const ck_node *nd = &f->r->p->node[f->node[k]];
    int64_t os[CK_MAX_DIMS], osh[CK_MAX_DIMS], idx[CK_MAX_DIMS] = {0};
    int ond = out_box(f, k, c, os, osh);
    size_t ssz = ck_red_state_size();
    int64_t row = ond ? osh[ond - 1] : 1;
    const char *src = part;

    for (;;) {
        int64_t off = 0;
        for (int d = 0; d < ond; d++)
            off = off * gsh[d] + os[d] + (d < ond - 1 ? idx[d] : 0);
        ck_red_combine(nd->red, (char *)states + (size_t)off * ssz, src,
                       (size_t)row);
        src += (size_t)row * ssz;
        int d = ond - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < osh[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
}

/* Appends one chunk's selected values (count, then values) to mask i's
 * result, charging the budget for the growth. */
static ck_code append_mask(xrun *r, int i, const char *part, int64_t *len,
                           ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    size_t esz = ck_dtype_size(nd->dtype);
    int64_t cnt;
    void *grown;

    memcpy(&cnt, part, sizeof cnt);
    if (cnt == 0)
        return CK_OK;
    if (ck_budget_charge(&r->budget, cnt * (int64_t)esz, nd->name, NULL) !=
        CK_OK)
        return ck_err_set(err, CK_ENOMEM,
                          "%s: the mask's result is larger than --memory "
                          "allows (it is held in memory)",
                          nd->where);
    if (!(grown = realloc(r->x[i].mem, (size_t)(*len + cnt) * esz)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    r->x[i].mem = grown;
    memcpy((char *)grown + (size_t)*len * esz, part + 64, (size_t)cnt * esz);
    *len += cnt;
    return CK_OK;
}

/* One member's global result while the pass runs. */
typedef struct fold_out {
    void *states;   /* reductions: one state per output element */
    double *counts; /* histograms */
    int64_t nout, masked;
    int64_t gsh[CK_MAX_DIMS];
} fold_out;

/* Bytes of member k's partial for one chunk (of at most maxbox output
 * elements for a reduction kept along the unreduced axes). */
static size_t member_part_bytes(const fold *f, int k)
{
    const ck_node *nd = &f->r->p->node[f->node[k]];
    const ck_node *m = &f->r->p->node[f->operand];
    int64_t maxbox = 1;

    if (nd->kind == CK_NODE_MASK)
        return ck_exec_al((size_t)f->g.chunk_nelem * ck_dtype_size(m->dtype)) +
               64;
    if (nd->kind == CK_NODE_REDUCE && f->twin[k] >= 0)
        return 0; /* read from its twin's states */
    if (nd->kind != CK_NODE_REDUCE)
        return ck_exec_al(
            (size_t)nd->nbins *
            (size_t)(nd->kind == CK_NODE_HIST2D ? nd->nbins2 : 1) *
            sizeof(double));
    for (int d = 0; d < m->ndim && !masked(f, k); d++)
        if (!(nd->axes & (1u << d)))
            maxbox *= m->chunks[d] < m->shape[d] ? m->chunks[d] : m->shape[d];
    return ck_exec_al((size_t)maxbox * ck_red_state_size());
}

/* Scratch one worker needs for a chunk beyond the operand's values. */
static size_t member_scratch_bytes(const fold *f, int k)
{
    const xrun *r = f->r;
    const ck_node *nd = &r->p->node[f->node[k]];
    size_t n = (size_t)f->g.chunk_nelem, b = 0;

    if (nd->weights >= 0)
        b += ck_exec_al(n * 8) + ck_exec_eval_bytes(r, nd->weights, n);
    if (nd->kind == CK_NODE_HIST2D)
        b += ck_exec_al(n * ck_dtype_size(r->p->node[nd->arg[1]].dtype)) +
             ck_exec_eval_bytes(r, nd->arg[1], n);
    return b;
}

/* Member k's result after the pass: finalised into r->x[].mem. */
static ck_code fold_finish(fold *f, int k, fold_out *o, ck_err *err)
{
    xrun *r = f->r;
    int i = f->node[k];
    const ck_node *nd = &r->p->node[i];

    if (nd->kind == CK_NODE_MASK) {
        ck_node *w = &r->p->node[i];
        w->shape[0] = o->masked;
        w->chunks[0] =
            o->masked < (1 << 20) ? (o->masked > 0 ? o->masked : 1) : 1 << 20;
        return CK_OK;
    }
    if (nd->kind == CK_NODE_REDUCE) {
        int empty = 0;
        /* integers and bools hold no NaN: NumPy's nanvar of them is var
         * (inf where ddof >= n, not NaN) */
        ck_red_op op = nd->red;
        if (!ck_dtype_is_float(r->p->node[nd->arg[0]].dtype))
            op = op == CK_RED_NANVAR   ? CK_RED_VAR
                 : op == CK_RED_NANSTD ? CK_RED_STD
                                       : op;
        ck_code rc = ck_red_finalize(op, nd->ddof, o->states, (size_t)o->nout,
                                     nd->dtype, r->x[i].mem, &empty, err);
        if (rc != CK_OK) {
            ck_err_prefix(err, "%s", nd->where);
            return rc;
        }
        int ranges = 0; /* a histogram's range step: it says so itself */
        for (int h = 0; h < r->p->n; h++)
            ranges |= r->p->node[h].range_of[0] == i ||
                      r->p->node[h].range_of[1] == i;
        int var = op == CK_RED_VAR || op == CK_RED_STD || op == CK_RED_NANVAR ||
                  op == CK_RED_NANSTD;
        if (empty && !ranges && var) /* NumPy's RuntimeWarning */
            ck_log(CK_LOG_WARN,
                   "%s: degrees of freedom <= 0 for a slice: its %s is "
                   "inf or NaN",
                   ck_exec_who(r, nd), ck_red_name(nd->red));
        else if (empty && !ranges)
            ck_log(CK_LOG_WARN, "%s: %s of an empty selection is NaN",
                   ck_exec_who(r, nd), ck_red_name(nd->red));
        return CK_OK;
    }
    if (nd->density && nd->kind == CK_NODE_HIST2D)
        ck_hist2d_density(o->counts, nd->nbins, nd->nbins2, nd->edges,
                          nd->edges2);
    else if (nd->density)
        ck_hist_density(o->counts, nd->nbins, nd->edges);
    ck_dtype_convert(nd->dtype, r->x[i].mem, CK_F64, o->counts,
                     (size_t)ck_exec_nelem(nd->ndim, nd->shape));
    return CK_OK;
}

/* ---- the fixed tree a member's partials are combined along ----
 *
 * A reduction's partials are combined along the canonical tree of
 * base/ck_tree.h, one tree per output box (the elements that the same
 * chunks of the operand fold into), over that box's tasks in C order,
 * and a histogram's along one tree over all tasks.  Its bits then depend
 * on the chunks alone, never on --threads nor on how many MPI ranks share
 * the tasks: a rank folds a contiguous range of them, keeps for each box
 * the completed subtrees of its range (a binary counter: at most
 * log2(tasks) + 1 partials a box), and ck_tree_finish combines the
 * ranks'.  Merging two partials costs their box, so the whole combination
 * is as cheap as the sequential one it replaces. */

typedef struct tree_node {
    int64_t lo, hi; /* the box's tasks it holds */
    char *part;     /* their combined partial */
} tree_node;

typedef struct box_stack {
    int n, cap;
    tree_node *v;
} box_stack;

typedef struct member_tree {
    int64_t nbox, leaves; /* boxes, and tasks folding into each */
    box_stack *box;
    size_t elem;   /* bytes of one partial's element */
    int counts;    /* a histogram's: doubles, added */
    ck_red_op red; /* a reduction's */
    int64_t held;  /* bytes of partials held (charged to the budget) */
    /* A tree that takes the window's partials as its leaves (the member
     * is all a task's partial holds, own_bytes long, charged so) gives
     * the buffers its merges free back to the window: no more than the
     * window's slots without a buffer ('empty'), so spares and the
     * window's buffers together stay within the window's charge. */
    size_t own_bytes;
    char **spare;
    int nspare, empty;
} member_tree;

static void tree_merge(void *left, const void *right, size_t bytes,
                       const member_tree *t)
{
    if (t->counts) {
        double *l = left;
        const double *rr = right;
        for (size_t i = 0; i < bytes / sizeof(double); i++)
            l[i] += rr[i];
    } else {
        ck_red_combine(t->red, left, right, bytes / t->elem);
    }
}

typedef struct merge_ctx {
    const member_tree *t;
    size_t bytes;
} merge_ctx;

static void tree_merge_fn(void *left, const void *right, void *ctx)
{
    const merge_ctx *m = ctx;
    tree_merge(left, right, m->bytes, m->t);
}

/* The box and the leaf (its place among the box's tasks) of the task
 * whose first chunk is c, for member k. */
static void box_leaf(const fold *f, int k, const ck_chunk *c, int64_t *box,
                     int64_t *leaf, int64_t task)
{
    const ck_node *nd = &f->r->p->node[f->node[k]];

    *box = 0;
    *leaf = 0;
    if (nd->kind != CK_NODE_REDUCE || masked(f, k)) {
        *leaf = task;
        return;
    }
    for (int d = 0; d < f->g.ndim; d++) {
        int along = d == f->axis && f->run > 1;
        if (!(nd->axes & (1u << d)))
            *box = *box * f->g.nchunks[d] + c->coords[d];
        else
            *leaf = *leaf * (along ? f->per_row : f->g.nchunks[d]) +
                    (along ? c->coords[d] / f->run : c->coords[d]);
    }
}

/* Bytes of member k's partial for the task whose first chunk is c (a
 * reduction's box of states; a histogram's counts: c may be NULL). */
static size_t tree_bytes(const fold *f, int k, const ck_chunk *c)
{
    const ck_node *nd = &f->r->p->node[f->node[k]];
    int64_t os[CK_MAX_DIMS], osh[CK_MAX_DIMS];

    if (nd->kind != CK_NODE_REDUCE)
        return (size_t)ck_exec_nelem(nd->ndim, nd->shape) * sizeof(double);
    int ond = out_box(f, k, c, os, osh);
    return (size_t)ck_exec_nelem(ond, osh) * ck_red_state_size();
}

/* A chunk of box bx of member k: the box's chunk coordinates, 0 along
 * the reduced axes. */
static void box_chunk(const fold *f, int k, int64_t bx, ck_chunk *c)
{
    const ck_node *nd = &f->r->p->node[f->node[k]];
    int64_t lin = 0, coords[CK_MAX_DIMS] = {0};

    for (int d = f->g.ndim - 1; d >= 0 && !masked(f, k); d--)
        if (!(nd->axes & (1u << d))) {
            coords[d] = bx % f->g.nchunks[d];
            bx /= f->g.nchunks[d];
        }
    for (int d = 0; d < f->g.ndim; d++)
        lin = lin * f->g.nchunks[d] + coords[d];
    ck_grid_chunk(&f->g, lin, c);
}

static void member_tree_init(const fold *f, int k, member_tree *t)
{
    const ck_node *nd = &f->r->p->node[f->node[k]];

    memset(t, 0, sizeof *t);
    t->nbox = 1;
    t->leaves = f->ntasks;
    t->counts = nd->kind != CK_NODE_REDUCE;
    t->red = nd->red;
    t->elem = nd->kind == CK_NODE_REDUCE ? ck_red_state_size() : sizeof(double);
    if (nd->kind != CK_NODE_REDUCE || masked(f, k))
        return;
    t->leaves = 1;
    for (int d = 0; d < f->g.ndim; d++) {
        int along = d == f->axis && f->run > 1;
        if (!(nd->axes & (1u << d)))
            t->nbox *= f->g.nchunks[d];
        else
            t->leaves *= along ? f->per_row : f->g.nchunks[d];
    }
}

/* Frees a partial the tree no longer needs, or keeps it for the window. */
static void part_free(member_tree *t, char *part)
{
    if (part && t->nspare < t->empty)
        t->spare[t->nspare++] = part;
    else
        free(part);
}

/* What a node of 'bytes' holds charged: a window's buffer when taken. */
static int64_t node_charge(const member_tree *t, size_t bytes)
{
    return (int64_t)(t->own_bytes ? t->own_bytes : bytes);
}

/* Pushes leaf 'leaf' of box 'box' (a partial of 'bytes'), merging the
 * siblings it completes.  With 'own' the tree takes the buffer *own (the
 * window's) and sets *own to NULL; without, it copies 'part'. */
static ck_code tree_push(xrun *r, member_tree *t, int64_t box, int64_t leaf,
                         const void *part, char **own, size_t bytes,
                         ck_err *err)
{
    box_stack *b;

    if (!t->box && !(t->box = calloc((size_t)t->nbox, sizeof *t->box)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    b = &t->box[box];
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 4;
        tree_node *v = realloc(b->v, (size_t)cap * sizeof *v);
        if (!v)
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        b->v = v;
        b->cap = cap;
    }
    CK_TRY(ck_budget_charge(&r->budget, node_charge(t, bytes),
                            "partial results of a reduction", err));
    t->held += node_charge(t, bytes);
    if (own) {
        b->v[b->n].part = *own;
        *own = NULL;
        t->empty++;
    } else if (!(b->v[b->n].part = ck_alloc_large(bytes))) {
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    } else {
        memcpy(b->v[b->n].part, part, bytes);
    }
    b->v[b->n].lo = leaf;
    b->v[b->n].hi = leaf + 1;
    b->n++;
    /* siblings: equal aligned blocks of a power of two (the right spine's
     * nodes are merged by ck_tree at the end) */
    while (b->n >= 2) {
        tree_node *lt = &b->v[b->n - 2], *rt = &b->v[b->n - 1];
        int64_t sz = rt->hi - rt->lo;
        if (lt->hi != rt->lo || lt->hi - lt->lo != sz || lt->lo % (2 * sz))
            break;
        tree_merge(lt->part, rt->part, bytes, t);
        lt->hi = rt->hi;
        part_free(t, rt->part);
        ck_budget_release(&r->budget, node_charge(t, bytes));
        t->held -= node_charge(t, bytes);
        b->n--;
    }
    return CK_OK;
}

/* Frees node j of box b's stack. */
static void node_free(xrun *r, member_tree *t, box_stack *b, int j,
                      size_t bytes)
{
    free(b->v[j].part);
    b->v[j].part = NULL;
    ck_budget_release(&r->budget, node_charge(t, bytes));
    t->held -= node_charge(t, bytes);
}

/* Combines box 'box''s subtrees into its root, 'bytes' long, in *root.
 * In one process the stack holds the whole tree's completed nodes, and
 * the canonical tree's last merges join them right to left (the right
 * spine, as ck_tree_add would after the last leaf): done in place, the
 * root is the stack's first partial.  Across ranks the stacks meet in a
 * ck_tree (collective) and the root is copied into buf. */
static ck_code tree_finish(xrun *r, member_tree *t, int64_t box, size_t bytes,
                           char *buf, const char **root, ck_err *err)
{
    box_stack *b = t->box ? &t->box[box] : NULL;
    merge_ctx m = {t, bytes};
    ck_tree tree;
    ck_code rc;

    if (ck_comm_size() == 1) {
        int64_t hi = t->leaves;
        for (int j = b ? b->n - 1 : -1; j >= 0; j--) {
            if (b->v[j].hi != hi)
                break;
            hi = b->v[j].lo;
            if (j + 1 < b->n) {
                tree_merge(b->v[j].part, b->v[j + 1].part, bytes, t);
                node_free(r, t, b, j + 1, bytes);
                b->n--;
            }
        }
        if (!b || b->n != 1 || hi != 0)
            return ck_err_internal(err,
                                   "reduction tree: box %lld's partials do "
                                   "not cover its %lld tasks",
                                   (long long)box, (long long)t->leaves);
        *root = b->v[0].part;
        return CK_OK;
    }
    /* every rank reaches the exchange, or none does */
    CK_TRY(ck_comm_agree(
        ck_tree_init(&tree, t->leaves, bytes, tree_merge_fn, &m, err), err));
    rc = CK_OK;
    for (int i = 0; rc == CK_OK && b && i < b->n; i++) {
        rc = ck_tree_add(&tree, b->v[i].lo, b->v[i].hi, b->v[i].part, err);
        node_free(r, t, b, i, bytes); /* in the tree's slot now */
    }
    rc = ck_tree_finish(&tree, rc, buf, err);
    ck_tree_release(&tree);
    *root = buf;
    return rc;
}

static void member_tree_free(xrun *r, member_tree *t)
{
    for (int64_t i = 0; t->box && i < t->nbox; i++) {
        for (int j = 0; j < t->box[i].n; j++)
            free(t->box[i].v[j].part); /* NULL once finished */
        free(t->box[i].v);
    }
    free(t->box);
    for (int j = 0; j < t->nspare; j++)
        free(t->spare[j]);
    free(t->spare);
    ck_budget_release(&r->budget, t->held);
    memset(t, 0, sizeof *t);
}

/* Under MPI: every rank's selection of a mask pass, in rank order (ranks
 * hold consecutive tasks), becomes every rank's.  Collective. */
static ck_code mask_gather(xrun *r, int i, int64_t *len, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    size_t esz = ck_dtype_size(nd->dtype);
    int size = ck_comm_size(), rank = ck_comm_rank();
    int64_t total = 0, at = 0, mine = *len;
    char *all;

    if (size == 1)
        return CK_OK;
    int64_t *lens = malloc((size_t)size * sizeof *lens);
    if (!lens)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    ck_code rc = ck_comm_allgather(&mine, sizeof mine, lens, err);
    for (int q = 0; rc == CK_OK && q < size; q++)
        total += lens[q];
    if (rc == CK_OK)
        rc = ck_budget_charge(&r->budget, (total - mine) * (int64_t)esz,
                              nd->name, err);
    if (rc == CK_OK && !(all = malloc((size_t)(total ? total : 1) * esz)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    for (int q = 0; rc == CK_OK && q < size; q++) {
        if (q == rank && lens[q])
            memcpy(all + (size_t)at * esz, r->x[i].mem, (size_t)mine * esz);
        if (lens[q])
            rc = ck_comm_bcast(all + (size_t)at * esz, (size_t)lens[q] * esz, q,
                               err);
        at += lens[q];
    }
    free(lens);
    if (rc != CK_OK)
        return rc;
    free(r->x[i].mem);
    r->x[i].mem = all;
    *len = total;
    return CK_OK;
}

/* The most bytes the members' trees hold at once: a box's partials are
 * pushed in leaf order onto a binary counter, which holds at most one a
 * bit of the box's leaf count (each the size of chunk 0's, the largest). */
static int64_t tree_bound(const fold *f)
{
    int64_t sum = 0;
    ck_chunk c0;

    if (f->g.total_chunks == 0) /* an empty operand: no partials */
        return 0;
    ck_grid_chunk(&f->g, 0, &c0);
    for (int k = 0; k < f->nm; k++) {
        const ck_node *nd = &f->r->p->node[f->node[k]];
        member_tree t;
        int bits = 1;
        if (nd->kind == CK_NODE_MASK ||
            (nd->kind == CK_NODE_REDUCE && f->twin[k] >= 0))
            continue;
        member_tree_init(f, k, &t);
        for (int64_t v = t.leaves; v > 1; v >>= 1)
            bits++;
        sum += t.nbox * bits * (int64_t)tree_bytes(f, k, &c0);
    }
    return sum;
}

/* The grid a pass walks over operand m: its chunks, or for a mask (x[cond]
 * is in C order of the whole array) boxes that are C-contiguous runs
 * (whole trailing axes), so appending the boxes' selections in order is C
 * order; about a chunk each. */
static ck_code fold_grid(const ck_node *m, int mask, ck_grid *g, ck_err *err)
{
    int64_t ch[CK_MAX_DIMS];

    memcpy(ch, m->chunks, sizeof ch);
    if (mask) {
        int64_t bytes = (int64_t)ck_dtype_size(m->dtype);
        for (int d = 0; d < m->ndim; d++)
            bytes *= m->chunks[d] < m->shape[d] ? m->chunks[d] : m->shape[d];
        ck_auto_chunks(m->ndim, m->shape, ck_dtype_size(m->dtype),
                       (size_t)(bytes > (1 << 20) ? bytes : 1 << 20), ch);
    }
    return ck_grid_init(g, m->ndim, m->shape, ch, ck_dtype_size(m->dtype), err);
}

/* Runs the fold steps f->node[] over f->operand (f->cond: through a mask)
 * in one pass. */
static ck_code run_fold(fold *f, ck_err *err)
{
    xrun *r = f->r;
    const ck_node *m = &r->p->node[f->operand];
    const ck_node *first = &r->p->node[f->node[0]];
    int threads = r->o->threads > 0 ? r->o->threads : ck_ncpus();
    fold_out out[CK_MAX_FOLD] = {{0}};
    int64_t charged = 0, states = 0, counts = 0;
    size_t n;
    ck_code rc = CK_OK;

    CK_TRY(fold_grid(m, first->kind == CK_NODE_MASK, &f->g, err));
    n = (size_t)f->g.chunk_nelem;
    /* A mean over the same axes as a var or std of the pass is read from
     * that step's states (ck_red_mean_of): one kernel fewer per chunk. */
    for (int k = 0; k < f->nm; k++) {
        const ck_node *nk = &r->p->node[f->node[k]];
        f->twin[k] = -1;
        for (int j = 0; j < f->nm && nk->kind == CK_NODE_REDUCE; j++) {
            const ck_node *nj = &r->p->node[f->node[j]];
            if (f->twin[k] < 0 && nj->kind == CK_NODE_REDUCE &&
                nj->axes == nk->axes && ck_red_mean_of(nk->red, nj->red))
                f->twin[k] = j;
        }
    }
    fold_layout(r->p, f->node, f->nm, f->cond, &f->g, ck_dtype_size(m->dtype),
                &f->axis, &f->run, &f->stacked);
    tasks_of_runs(f);
    /* Does the pass walk the operand's own chunks? */
    int own = first->kind != CK_NODE_MASK;
    /* An input folded over its own chunks in its own dtype is read in
     * place: no copy, no chunk buffer besides the values. */
    /* So is the input under a CF decoding of the same dtype (a float
     * variable with a _FillValue), decoded in the buffer it is read into. */
    int in = m->kind == CK_NODE_INPUT ? f->operand
             : m->kind == CK_NODE_CF &&
                     r->p->node[m->arg[0]].kind == CK_NODE_INPUT &&
                     r->p->node[m->arg[0]].dtype == m->dtype
                 ? m->arg[0]
                 : -1;
    if (in >= 0) {
        ck_array *arr = r->x[in].arr;
        const ck_grid *ag = ck_array_grid(arr);
        int same =
            ck_array_info_of(arr)->dtype == m->dtype && ag->ndim == f->g.ndim;
        for (int d = 0; d < f->g.ndim && same; d++)
            same = ag->chunk[d] == f->g.chunk[d];
        f->direct = same ? arr : NULL;
        f->decode = same && m->kind == CK_NODE_CF ? m : NULL;
    }
    /* A stacked run of an input read in place whose chunks span every
     * other axis whole, with nothing before the run's axis: each chunk is
     * a consecutive slice of the box (a time series chunked by step). */
    f->slices = f->stacked && f->direct && f->cond < 0;
    for (int d = 0; d < f->g.ndim && f->slices; d++)
        f->slices =
            d == f->axis ||
            (d < f->axis ? f->g.shape[d] == 1 : f->g.chunk[d] == f->g.shape[d]);
    /* what a stacked run needs beyond one chunk's reading */
    size_t stack_bytes =
        !f->stacked ? 0
        : f->slices
            ? ck_exec_al(n * (size_t)(f->run + 1) * ck_dtype_size(m->dtype)) +
                  ck_exec_al(ck_array_scratch_bytes(f->direct)) + 256
            : ck_exec_al(n * (size_t)f->run * ck_dtype_size(m->dtype)) +
                  ck_exec_bytes(r, f->operand, n * (size_t)f->run, -1, 0);
    size_t chunk_bytes =
        f->direct ? ck_exec_al(ck_array_scratch_bytes(f->direct)) + 256
                  : ck_exec_bytes(r, f->operand, n, -1, own);
    f->arena_bytes =
        ck_exec_al(n * ck_dtype_size(m->dtype)) +
        (f->stacked ? stack_bytes : chunk_bytes) +
        (f->cond >= 0
             ? ck_exec_al(n) +
                   ck_exec_bytes(r, f->cond, n, f->operand,
                                 own && same_chunks(&r->p->node[f->cond], m))
             : 0) +
        256;
    for (int k = 0; k < f->nm; k++) {
        const ck_node *nd = &r->p->node[f->node[k]];
        int64_t res = ck_exec_nelem(nd->ndim, nd->shape);
        f->off[k] = f->part_bytes;
        f->part_bytes += member_part_bytes(f, k);
        f->arena_bytes += member_scratch_bytes(f, k);
        int gnd = 0;
        for (int d = 0; d < m->ndim && nd->kind == CK_NODE_REDUCE; d++)
            if (!masked(f, k) && !(nd->axes & (1u << d)))
                out[k].gsh[gnd++] = m->shape[d];
        out[k].nout = ck_exec_nelem(gnd, out[k].gsh);
        /* The results stay in memory (a mask's are charged as they
         * grow); a histogram's counts are held through the run, and a
         * reduction's states only once the workers are done. */
        if (nd->kind != CK_NODE_MASK)
            charged += res * (int64_t)ck_dtype_size(nd->dtype);
        if (nd->kind == CK_NODE_REDUCE)
            states += out[k].nout * (int64_t)ck_red_state_size();
        else if (nd->kind != CK_NODE_MASK)
            counts += res * 8;
    }
    f->off[f->nm] = f->part_bytes;
    charged += counts;
    CK_TRY(ck_budget_charge(&r->budget, charged, first->name, err));
    /* Workers as the budget holds (each with its arena and at least one
     * partial), then a window of a few chunks per worker. */
    int64_t left = r->budget.limit - r->budget.used;
    int64_t per = (int64_t)f->arena_bytes + (int64_t)f->part_bytes;
    /* room for the trees' partials first: workers that took it would
     * leave the run to fail part-way, after reading data */
    int64_t held = tree_bound(f);
    /* the least --memory that runs: one worker and the trees, or at the
     * end (the workers gone) the trees and the states, beside what is
     * charged already */
    int64_t fin = states + (ck_comm_size() > 1 && states > 0
                                ? (int64_t)f->part_bytes /* a root received */
                                : 0);
    int64_t need = held + (per > fin ? per : fin);
    if (left < need && f->stacked) {
        /* a --memory too small for a run read as one box: its chunks are
         * folded one by one (the last bits of float sums may differ from
         * a run read whole; they still do not depend on --threads).  The
         * trees are weighed too: runs of one chunk leave more partials,
         * so a need stated for one way of reading must run that way. */
        fold keep = *f;
        f->stacked = f->slices = 0;
        f->arena_bytes = f->arena_bytes - stack_bytes + chunk_bytes;
        f->run = run_cap(r->p, f->node, f->nm, &f->g, TASK_RUN);
        tasks_of_runs(f);
        int64_t per1 = (int64_t)f->arena_bytes + (int64_t)f->part_bytes;
        int64_t held1 = tree_bound(f);
        int64_t need1 = held1 + (per1 > fin ? per1 : fin);
        if (need1 < need)
            need = need1;
        if (left >= need1) {
            per = per1;
            held = held1;
        } else {
            *f = keep;
        }
    }
    left -= held;
    if (left < per || left < fin) {
        char have[32], needs[32];
        /* the figure counts the results charged above: they are needed
         * as much as the worker */
        ck_need_str((double)(need + r->budget.used), needs, sizeof needs);
        ck_budget_release(&r->budget, charged);
        return ck_err_set(
            err, CK_ENOMEM,
            "--memory %s is too small: %s needs %s with one "
            "worker (raise --memory to that)",
            ck_size_str((double)r->budget.limit, have, sizeof have),
            first->where, needs);
    }
    if ((int64_t)threads * per > left)
        threads = (int)(left / per);
    if (threads > CK_MAX_WORKERS)
        threads = CK_MAX_WORKERS;
    left -= (int64_t)threads * (int64_t)f->arena_bytes;
    /* a window of a few tasks per worker (runs: one, as each is already
     * many chunks long and its partial the output's size: a second would
     * hold one more partial a worker and overlap nothing) */
    f->wn = (int64_t)threads * (f->run > 1 ? 1 : 4);
    while (f->wn > threads && f->wn * (int64_t)f->part_bytes > left)
        f->wn--;
    if (f->wn > f->ntasks)
        f->wn = f->ntasks > 0 ? f->ntasks : 1;
    rc = ck_budget_charge(&r->budget, f->wn * (int64_t)f->part_bytes,
                          "partial results", err);
    int64_t parts_charged = rc == CK_OK ? f->wn * (int64_t)f->part_bytes : 0;
    for (int t = 0; rc == CK_OK && t < threads; t++) {
        char what[64];
        snprintf(what, sizeof what, "%s, worker %d,", first->where, t);
        rc = ck_arena_reserve(&f->arena[t], &r->budget, f->arena_bytes, what,
                              err);
    }
    int64_t wn_all = f->wn;
    if (rc == CK_OK && !(f->part = calloc((size_t)f->wn, sizeof *f->part)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    for (int k = 0; rc == CK_OK && k < f->nm; k++) {
        int i = f->node[k];
        const ck_node *nd = &r->p->node[i];
        size_t res = (size_t)ck_exec_nelem(nd->ndim, nd->shape);
        if (nd->kind != CK_NODE_REDUCE && nd->kind != CK_NODE_MASK)
            out[k].counts = calloc(res + 1, sizeof(double));
        r->x[i].mem = malloc((nd->kind == CK_NODE_MASK ? 1 : res + 1) *
                             ck_dtype_size(nd->dtype));
        if (!r->x[i].mem || (nd->kind != CK_NODE_REDUCE &&
                             nd->kind != CK_NODE_MASK && !out[k].counts))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    if (rc == CK_OK && r->o->progress)
        r->o->progress->total += f->g.total_chunks;
    member_tree trees[CK_MAX_FOLD];
    /* a member that is all of a task's partial: its tree takes the
     * window's buffers instead of copies of them */
    int adopt = -1;
    for (int k = 0; k < f->nm; k++) {
        const ck_node *nd = &r->p->node[f->node[k]];
        member_tree_init(f, k, &trees[k]);
        if (nd->kind != CK_NODE_MASK &&
            member_part_bytes(f, k) == f->part_bytes)
            adopt = k;
    }
    if (rc == CK_OK && adopt >= 0) {
        if (!(trees[adopt].spare = calloc((size_t)f->wn, sizeof(char *))))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        trees[adopt].own_bytes = f->part_bytes;
        trees[adopt].empty = (int)f->wn;
    }
    /* this rank's tasks (all of them in one process) */
    int64_t tlo, thi;
    ck_comm_split(f->ntasks, ck_comm_rank(), ck_comm_size(), &tlo, &thi);
    for (int64_t w0 = tlo; rc == CK_OK && w0 < thi; w0 += f->wn) {
        int64_t wn = f->wn;
        f->w0 = w0;
        if (w0 + wn > thi)
            f->wn = thi - w0;
        f->next = 0;
        for (int64_t c = 0; rc == CK_OK && c < f->wn; c++) {
            member_tree *t = adopt >= 0 ? &trees[adopt] : NULL;
            if (f->part[c])
                continue;
            if (t && t->nspare > 0)
                f->part[c] = t->spare[--t->nspare];
            else if (!(f->part[c] = ck_alloc_large(f->part_bytes)))
                rc = ck_err_set(err, CK_ENOMEM, "out of memory");
            if (t && f->part[c])
                t->empty--;
        }
        if (rc != CK_OK)
            break;
        rc = ck_par_run(threads < f->wn ? threads : (int)f->wn, fold_worker, f,
                        err);
        /* Fold in task order: the same result for any thread count. */
        for (int64_t c = 0; rc == CK_OK && c < f->wn; c++) {
            ck_chunk ch;
            int64_t fc, len;
            task_chunks(f, w0 + c, &fc, &len);
            ck_grid_chunk(&f->g, fc, &ch);
            char *slot = f->part[c]; /* before a tree takes it */
            for (int k = 0; rc == CK_OK && k < f->nm; k++) {
                const ck_node *nd = &r->p->node[f->node[k]];
                const char *part = slot + f->off[k];
                int64_t box, leaf;
                if (nd->kind == CK_NODE_REDUCE && f->twin[k] >= 0)
                    continue; /* read from its twin's states */
                if (nd->kind == CK_NODE_MASK) {
                    rc = append_mask(r, f->node[k], part, &out[k].masked, err);
                    continue;
                }
                box_leaf(f, k, &ch, &box, &leaf, w0 + c);
                rc = tree_push(r, &trees[k], box, leaf, part,
                               k == adopt ? &f->part[c] : NULL,
                               tree_bytes(f, k, &ch), err);
            }
        }
        f->wn = wn;
    }
    /* The workers' arenas and the window go before the trees are
     * combined, and the states are first touched after them. */
    for (int t = 0; t < threads; t++)
        ck_arena_release(&f->arena[t]);
    ck_budget_release(&r->budget, parts_charged);
    for (int64_t c = 0; f->part && c < wn_all; c++)
        free(f->part[c]);
    free(f->part);
    f->part = NULL;
    if (adopt >= 0) { /* the window's spares, with it */
        member_tree *t = &trees[adopt];
        while (t->nspare > 0)
            free(t->spare[--t->nspare]);
        t->empty = 0;
    }
    /* the states, charged in the room they left (planned so) */
    int64_t states_charged = 0;
    if (rc == CK_OK && states > 0 &&
        (rc = ck_budget_charge(&r->budget, states, first->name, err)) == CK_OK)
        states_charged = states;
    for (int k = 0; rc == CK_OK && k < f->nm; k++) {
        const ck_node *nd = &r->p->node[f->node[k]];
        if (nd->kind != CK_NODE_REDUCE)
            continue;
        out[k].states = ck_alloc_large((size_t)(out[k].nout ? out[k].nout : 1) *
                                       ck_red_state_size());
        if (!out[k].states)
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        else
            ck_red_init(nd->red, out[k].states, (size_t)out[k].nout);
    }
    /* Every rank's part of each tree, combined; the masks' selections. */
    rc = ck_comm_agree(rc, err);
    for (int k = 0; rc == CK_OK && k < f->nm; k++) {
        const ck_node *nd = &r->p->node[f->node[k]];
        member_tree *t = &trees[k];
        if (nd->kind == CK_NODE_MASK) {
            rc = mask_gather(r, f->node[k], &out[k].masked, err);
            continue;
        }
        if (nd->kind == CK_NODE_REDUCE && f->twin[k] >= 0)
            continue;
        if (nd->kind != CK_NODE_REDUCE) {
            size_t bytes = tree_bytes(f, k, NULL);
            const char *root;
            if (f->ntasks > 0 &&
                (rc = tree_finish(r, t, 0, bytes, (char *)out[k].counts, &root,
                                  err)) == CK_OK &&
                root != (char *)out[k].counts)
                memcpy(out[k].counts, root, bytes);
            continue;
        }
        /* across ranks the root is received into a buffer of its own */
        size_t rbytes = ck_comm_size() > 1 ? member_part_bytes(f, k) + 1 : 0;
        char *res = NULL;
        int64_t rcharged = 0;
        if (rbytes && (rc = ck_budget_charge(&r->budget, (int64_t)rbytes,
                                             "partial results of a reduction",
                                             err)) == CK_OK)
            rcharged = (int64_t)rbytes;
        if (rcharged && !(res = malloc(rbytes)))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        if (rbytes) /* the boxes' exchanges are collective */
            rc = ck_comm_agree(rc, err);
        for (int64_t bx = 0; rc == CK_OK && t->leaves > 0 && bx < t->nbox;
             bx++) {
            ck_chunk ch;
            const char *root;
            box_chunk(f, k, bx, &ch);
            size_t bytes = tree_bytes(f, k, &ch);
            if ((rc = tree_finish(r, t, bx, bytes, res, &root, err)) != CK_OK)
                break;
            combine_box(f, k, &ch, out[k].states, root, out[k].gsh);
            if (t->box && t->box[bx].n == 1 && root == t->box[bx].v[0].part) {
                node_free(r, t, &t->box[bx], 0, bytes);
                t->box[bx].n = 0;
            }
        }
        ck_budget_release(&r->budget, rcharged);
        free(res);
    }
    for (int k = 0; k < f->nm; k++)
        member_tree_free(r, &trees[k]);
    for (int k = 0; rc == CK_OK && k < f->nm; k++)
        rc = fold_finish(f, k, &out[f->twin[k] >= 0 ? f->twin[k] : k], err);
    for (int k = 0; k < f->nm; k++) {
        free(out[k].states);
        free(out[k].counts);
    }
    ck_budget_release(&r->budget, states_charged + counts);
    return rc;
}

static int is_fold(const ck_node *nd)
{
    return (ck_optab_kind(nd->kind)->flags & CK_OP_FOLD) != 0;
}

/* Can fold step i share its pass, and take its values through a mask?
 * Reductions and unweighted histograms read nothing but their operand
 * (argmin and argmax also need where a value was, which a mask loses). */
static int shares(const ck_node *nd)
{
    return (nd->kind == CK_NODE_REDUCE && nd->red != CK_RED_ARGMIN &&
            nd->red != CK_RED_ARGMAX && nd->red != CK_RED_NANARGMIN &&
            nd->red != CK_RED_NANARGMAX) ||
           (nd->kind == CK_NODE_HIST && nd->weights < 0);
}

/* Is mask step i never materialised: neither written nor printed, and
 * used only as the operand of folds that share? */
static int mask_folded(const ck_plan *p, int i)
{
    int users = 0;

    if (p->node[i].kind != CK_NODE_MASK)
        return 0;
    for (int k = 0; k < p->nout; k++)
        if (p->out[k].node == i)
            return 0;
    for (int k = 0; k < p->nprint; k++)
        if (p->print[k] == i)
            return 0;
    for (int j = 0; j < p->n; j++) {
        const ck_node *nd = &p->node[j];
        if (nd->weights == i)
            return 0;
        for (int k = 0; k < nd->nargs; k++)
            if (nd->arg[k] == i) {
                if (k != 0 || !shares(nd))
                    return 0;
                users++;
            }
    }
    return users > 0;
}

/* The steps one pass folds, from step order[j] (node[0]) on: the later
 * steps not done that fold the same operand and can share the pass, not
 * those waiting for their range (waits[]); all of them then done.  Their
 * count. */
static int fold_group(const ck_plan *p, int j, char *done, const char *waits,
                      int *node)
{
    const ck_node *nd = &p->node[p->order[j]];
    int nm = 0;

    node[nm++] = p->order[j];
    for (int j2 = j + 1; shares(nd) && j2 < p->n && nm < CK_MAX_FOLD; j2++) {
        int i2 = p->order[j2];
        if (!done[i2] && shares(&p->node[i2]) &&
            p->node[i2].arg[0] == nd->arg[0] && !waits[i2])
            node[nm++] = i2;
    }
    for (int k = 0; k < nm; k++)
        done[node[k]] = 1;
    return nm;
}

/* Is step i among node[0..nm)? */
static int holds(const int *node, int nm, int i)
{
    for (int k = 0; k < nm; k++)
        if (node[k] == i)
            return 1;
    return 0;
}

/* The pass that folds step i, as run_folds_and_models groups them (a
 * histogram waiting for its range steps runs after their pass): its
 * steps into node, their count. */
static int pass_of(const ck_plan *p, int i, int *node)
{
    char done[CK_MAX_NODES] = {0}, waits[CK_MAX_NODES] = {0};

    for (int k = 0; k < p->n; k++)
        waits[k] =
            p->node[k].kind == CK_NODE_HIST && p->node[k].range_of[0] >= 0;
    for (int j = 0; j < p->n; j++) {
        int q = p->order[j], nm, jq;
        if (done[q] || !is_fold(&p->node[q]) || mask_folded(p, q))
            continue;
        for (int k = 0; waits[q] && k < 2; k++) {
            int rq = p->node[q].range_of[k];
            for (jq = 0; p->order[jq] != rq; jq++)
                ;
            if (done[rq])
                continue;
            nm = fold_group(p, jq, done, waits, node);
            if (holds(node, nm, i))
                return nm;
        }
        waits[q] = 0;
        nm = fold_group(p, j, done, waits, node);
        if (holds(node, nm, i))
            return nm;
    }
    node[0] = i;
    return 1;
}

int ck_exec_fold_chunks(const ck_plan *p, int i, int rank, int nranks,
                        int64_t *total, int64_t *mine)
{
    const ck_node *nd = &p->node[i];
    fold f;
    int64_t tlo, thi;

    memset(&f, 0, sizeof f);
    f.nm = pass_of(p, i, f.node);
    nd = &p->node[f.node[0]];
    f.operand = nd->arg[0];
    f.cond = nd->kind == CK_NODE_MASK ? nd->arg[1] : -1;
    if (mask_folded(p, nd->arg[0])) {
        f.operand = p->node[nd->arg[0]].arg[0];
        f.cond = p->node[nd->arg[0]].arg[1];
    }
    const ck_node *m = &p->node[f.operand];
    if (fold_grid(m, nd->kind == CK_NODE_MASK, &f.g, NULL) != CK_OK)
        return -1;
    fold_layout(p, f.node, f.nm, f.cond, &f.g, ck_dtype_size(m->dtype), &f.axis,
                &f.run, &f.stacked);
    tasks_of_runs(&f);
    ck_comm_split(f.ntasks, rank, nranks, &tlo, &thi);
    *total = f.g.total_chunks;
    *mine = 0;
    for (int64_t t = tlo; t < thi; t++) {
        int64_t first, len;
        task_chunks(&f, t, &first, &len);
        *mine += len;
    }
    return 0;
}

/* Runs every fold step in dependency order, those over the same operand
 * together. */
/* A histogram whose edges wait for its range steps (h.min, h.max). */
static int waits_for_range(const xrun *r, int i)
{
    const ck_node *nd = &r->p->node[i];
    return nd->kind == CK_NODE_HIST && nd->range_of[0] >= 0 && !r->x[i].mem &&
           !r->x[i].edges;
}

/* One pass over an operand: step i and the steps after it in order that
 * fold the same operand and can share the pass. */
static ck_code fold_pass(xrun *r, int j, char *done, ck_err *err)
{
    const ck_plan *p = r->p;
    int i = p->order[j];
    const ck_node *nd = &p->node[i];
    fold *f = calloc(1, sizeof *f);

    if (!f)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    f->r = r;
    f->operand = nd->arg[0];
    f->cond = nd->kind == CK_NODE_MASK ? nd->arg[1] : -1;
    if (mask_folded(p, nd->arg[0])) {
        f->operand = p->node[nd->arg[0]].arg[0];
        f->cond = p->node[nd->arg[0]].arg[1];
    }
    char waits[CK_MAX_NODES];
    for (int k = 0; k < p->n; k++)
        waits[k] = (char)waits_for_range(r, k);
    f->nm = fold_group(p, j, done, waits, f->node);
    f->slabs = 1;
    for (int k = 0; k < f->nm; k++)
        f->slabs &= shares(&p->node[f->node[k]]);
    ck_code rc = run_fold(f, err);
    free(f);
    return rc;
}

/* NumPy's edges for a histogram without a range, from its range steps'
 * results: the data's minimum and maximum (NaN ignored), widened by 0.5
 * each way when they are equal, in the data's precision. */
static ck_code range_edges(xrun *r, int i, ck_err *err)
{
    ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    double lo, hi;

    ck_dtype_convert(CK_F64, &lo, r->p->node[nd->range_of[0]].dtype,
                     r->x[nd->range_of[0]].mem, 1);
    ck_dtype_convert(CK_F64, &hi, r->p->node[nd->range_of[1]].dtype,
                     r->x[nd->range_of[1]].mem, 1);
    if (isnan(lo) || isnan(hi))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: all values are NaN, so there is no range to "
                          "take the bins from; give a range",
                          nd->where);
    if (!isfinite(lo) || !isfinite(hi))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: autodetected range of [%g, %g] is not "
                          "finite; give a range",
                          nd->where, lo, hi);
    /* lo == hi: ck_hist_uniform_edges widens to lo - 0.5, hi + 0.5 in
     * float64, as NumPy 1.x does (np.float32(x) - 0.5 is a float64); its
     * edges are float32 only at the end, from linspace */
    if (!(r->x[i].edges = malloc(sizeof(double) * (size_t)(nd->nbins + 1))))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    CK_TRY(
        ck_hist_uniform_edges(nd->nbins, lo, hi, m->dtype, r->x[i].edges, err));
    nd->edges = r->x[i].edges;
    return CK_OK;
}

static ck_code run_folds_and_models(xrun *r, ck_err *err)
{
    const ck_plan *p = r->p;
    char done[CK_MAX_NODES] = {0};

    for (int j = 0; j < p->n; j++) {
        int i = p->order[j];
        const ck_node *nd = &p->node[i];
        if (done[i])
            continue;
        if (ck_optab_kind(nd->kind)->run) {
            CK_TRY(ck_optab_kind(nd->kind)->run(r, i, err));
            ck_be_release(&r->be); /* its operands will not come again */
        }
        if (!is_fold(nd) || mask_folded(p, i))
            continue;
        if (waits_for_range(r, i)) {
            for (int k = 0; k < 2; k++) {
                int q = nd->range_of[k], jq = 0;
                while (p->order[jq] != q)
                    jq++;
                if (!done[q])
                    CK_TRY(fold_pass(r, jq, done, err));
            }
            CK_TRY(range_edges(r, i, err));
        }
        CK_TRY(fold_pass(r, j, done, err));
        ck_be_release(&r->be);
    }
    return CK_OK;
}

/* ---- outputs ---- */

typedef struct out_ctx {
    xrun *r;
    int node;
    const ck_grid *g;
} out_ctx;

static ck_code produce(void *vctx, const ck_chunk *c, void *buf, ck_arena *a,
                       ck_err *err)
{
    out_ctx *x = vctx;
    const ck_node *nd = &x->r->p->node[x->node];
    const ck_scalar zero = {0};
    int edge = 0;

    for (int d = 0; d < x->g->ndim; d++)
        edge |= c->shape[d] != x->g->chunk[d];
    CK_TRY(ck_exec_eval(x->r, x->node, c->start, c->shape, buf, a, err));
    if (edge) { /* the box is dense at buf's start; zeros past the edge */
        size_t esz = ck_dtype_size(nd->dtype);
        ck_box_spread(x->g->ndim, esz, buf, x->g->chunk, c->shape);
        ck_box_pad(x->g->ndim, esz, buf, x->g->chunk, c->shape, &zero);
    }
    return CK_OK;
}

/* "stderr" (the coefficients') and "intercept_stderr" on /coef. */
static ck_code se_attrs(ck_store *s, const char *name, const ck_node *m,
                        const double *se, ck_err *err)
{
    int64_t p = m->shape[0]; /* the coefficients */
    size_t cap = (size_t)(p + 1) * 32 + 64, k = 0;
    char *j = malloc(cap);
    ck_code rc;

    if (!j)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    k += (size_t)snprintf(j + k, cap - k, "{\"stderr\": [");
    for (int64_t q = 0; q < p; q++)
        k += (size_t)snprintf(j + k, cap - k, "%s%.17g", q ? ", " : "", se[q]);
    if (m->glm.fit_intercept)
        k += (size_t)snprintf(j + k, cap - k, "], \"intercept_stderr\": %.17g}",
                              se[p]);
    else
        snprintf(j + k, cap - k, "]}");
    rc = ck_store_set_attrs(s, name, j, err);
    free(j);
    return rc;
}

/* A glm_fit's coefficients carry the model's description, which is what
 * glm_predict (and a person with h5py) reads back. */
static ck_code model_attrs(xrun *r, const ck_node *coef, ck_store *s,
                           const char *name, ck_err *err)
{
    const ck_node *m = &r->p->node[coef->arg[0]];
    const double *info = r->x[coef->arg[0]].mem;
    const double *ic = r->x[coef->arg[0] + 2].mem;
    struct {
        const char *key;
        ck_attr v;
    } a[] = {
        {"family", {.kind = CK_ATTR_STR}},
        {"solver", {.kind = CK_ATTR_STR}},
        {"regularizer", {.kind = CK_ATTR_STR}},
        {"lambda", {.kind = CK_ATTR_F64, .f64 = m->glm.lambda}},
        {"l1_ratio", {.kind = CK_ATTR_F64, .f64 = m->glm.l1_ratio}},
        {"fit_intercept", {.kind = CK_ATTR_I64, .i64 = m->glm.fit_intercept}},
        {"intercept", {.kind = CK_ATTR_F64, .f64 = ic ? ic[0] : 0}},
        {"iterations", {.kind = CK_ATTR_I64, .i64 = (int64_t)info[0]}},
        {"converged", {.kind = CK_ATTR_I64, .i64 = (int64_t)info[1]}},
        {"objective", {.kind = CK_ATTR_F64, .f64 = info[2]}},
        {"deviance", {.kind = CK_ATTR_F64, .f64 = info[3]}},
        {"llf", {.kind = CK_ATTR_F64, .f64 = info[4]}},
        {"aic", {.kind = CK_ATTR_F64, .f64 = info[5]}},
    };

    /* the standard errors, a list: through JSON, before the rest (a
     * Zarr array's attributes are replaced by it) */
    if (m->glm.std_errors && info[1] != 0 && !isnan(info[CK_GLM_INFO]))
        CK_TRY(se_attrs(s, name, m, info + CK_GLM_INFO, err));
    snprintf(a[0].v.str, sizeof a[0].v.str, "%s",
             ck_glm_family_name(m->glm.family));
    snprintf(a[1].v.str, sizeof a[1].v.str, "%s",
             ck_glm_solver_name(m->glm.solver));
    snprintf(a[2].v.str, sizeof a[2].v.str, "%s", ck_glm_reg_name(m->glm.reg));
    for (size_t k = 0; k < sizeof a / sizeof a[0]; k++)
        CK_TRY(ck_store_set_attr(s, name, a[k].key, &a[k].v, err));
    return CK_OK;
}

/* A matmul's tile is its output chunk (plan.c picks up to 2560 on a side):
 * when one worker's tile, operand blocks and their scratch do not fit what
 * --memory leaves, the longer side is halved until they do.  Only for a
 * matmul no other step reads, whose boxes are its own chunks. */
static void fit_tile(xrun *r, int i)
{
    ck_node *nd = &r->p->node[i];

    if (nd->kind != CK_NODE_MATMUL)
        return;
    for (int j = 0; j < r->p->n; j++)
        for (int k = 0; k < r->p->node[j].nargs; k++)
            if (r->p->node[j].arg[k] == i)
                return;
    for (;;) {
        size_t n = (size_t)(nd->chunks[0] * nd->chunks[1]);
        size_t need = ck_exec_al(n * ck_dtype_size(nd->dtype)) +
                      ck_exec_eval_bytes(r, i, n) + 4096;
        int d = nd->chunks[0] >= nd->chunks[1] ? 0 : 1;
        if ((int64_t)need <= r->budget.limit - r->budget.used ||
            nd->chunks[d] <= 64)
            return; /* fits, or the stream says what is short */
        nd->chunks[d] = (nd->chunks[d] + 1) / 2;
    }
}

/* A histogram's edges beside its counts: NAME_edges (histogram2d:
 * NAME_xedges and NAME_yedges), float64, one chunk. */
static ck_code write_edges(xrun *r, ck_store *s, const char *name,
                           const char *suffix, const double *edges, int n,
                           const ck_codec_spec *codec, ck_err *err)
{
    char ename[600];
    ck_array_spec spec;
    ck_array *dst = NULL;
    ck_arena a = CK_ARENA_INIT;
    int64_t zero = 0;
    ck_code rc;

    snprintf(ename, sizeof ename, "%s_%s", name, suffix);
    memset(&spec, 0, sizeof spec);
    spec.name = ename;
    spec.ndim = 1;
    spec.shape[0] = n;
    spec.chunks[0] = n;
    spec.dtype = CK_F64;
    spec.codec = *codec;
    spec.zarr_format = r->o->zarr_format;
    CK_TRY(ck_array_create(s, &spec, &dst, err));
    rc = ck_arena_reserve(&a, &r->budget, ck_array_scratch_bytes(dst) + 4096,
                          "a histogram's edges", err);
    if (rc == CK_OK)
        rc = ck_array_write_chunk(dst, &zero, edges, &a, err);
    ck_arena_release(&a);
    ck_array_close(dst);
    return rc;
}

static ck_code hist_edges(xrun *r, const ck_node *nd, ck_store *s,
                          const char *name, const ck_codec_spec *codec,
                          ck_err *err)
{
    if (nd->kind == CK_NODE_HIST)
        return write_edges(r, s, name, "edges", nd->edges, nd->nbins + 1, codec,
                           err);
    CK_TRY(write_edges(r, s, name, "xedges", nd->edges, nd->nbins + 1, codec,
                       err));
    return write_edges(r, s, name, "yedges", nd->edges2, nd->nbins2 + 1, codec,
                       err);
}

/* An output array created, and what its stream needs. */
typedef struct out_prep {
    ck_array *dst;
    ck_codec_spec codec; /* a histogram's edges are written with it */
    out_ctx x;
} out_prep;

/* Creates output o's array in s (its chunks: the node's, a matmul's tile
 * fitted to what --memory leaves now). */
static ck_code open_output(xrun *r, const ck_output *o, ck_store *s,
                           const char *name, out_prep *op, ck_err *err)
{
    const ck_node *nd = &r->p->node[o->node];
    ck_array_spec spec;

    fit_tile(r, o->node);
    memset(&spec, 0, sizeof spec);
    spec.name = name;
    spec.ndim = nd->ndim;
    memcpy(spec.shape, nd->shape, sizeof spec.shape);
    memcpy(spec.chunks, nd->chunks, sizeof spec.chunks);
    for (int d = 0; d < nd->ndim; d++) {
        if (spec.chunks[d] > spec.shape[d])
            spec.chunks[d] = spec.shape[d];
        if (spec.chunks[d] < 1)
            spec.chunks[d] = 1;
    }
    spec.dtype = nd->dtype;
    spec.codec.id = CK_CODEC_NONE;
    if (o->has_codec)
        spec.codec = o->codec;
    else if (r->o->has_codec)
        spec.codec = r->o->codec;
    ck_cf_out_spec(r->p, o->node, ck_store_kind_of(s), &spec);
    if (ck_store_kind_of(s) == CK_KIND_ZARR) {
        spec.zarr_format = r->o->zarr_format;
        /* --shards is for the outputs with as many dimensions (svd's U
         * and Vt, not S); the others are unsharded, unless none has. */
        int nsh = r->o->shards_ndim, fits = 0;
        for (int k = 0; k < r->p->nout; k++)
            fits |= r->p->node[r->p->out[k].node].ndim == nsh;
        if (nsh && nsh != nd->ndim && !fits)
            return ck_err_set(err, CK_EUSAGE,
                              "--shards has %d values but the output '%s' has "
                              "%d dimensions",
                              nsh, name, nd->ndim);
        if (nsh != nd->ndim) {
            if (nsh)
                ck_log(CK_LOG_NOTE,
                       "%s: written without shards (--shards has %d "
                       "values, it has %d)",
                       name, nsh, nd->ndim);
            nsh = 0;
        }
        /* Inner chunks that fit the shard shape evenly. */
        for (int d = 0; d < nsh; d++) {
            int64_t c = spec.chunks[d], sh = r->o->shards[d];
            while (c > 1 && sh % c != 0)
                c--;
            spec.chunks[d] = c;
            spec.shards[d] = sh;
        }
    }
    CK_TRY(ck_array_create(s, &spec, &op->dst, err));
    op->codec = spec.codec;
    op->x.r = r;
    op->x.node = o->node;
    op->x.g = ck_array_grid(op->dst);
    return CK_OK;
}

/* The stream that writes op's array. */
static ck_stream_job output_job(xrun *r, out_prep *op)
{
    const ck_node *nd = &r->p->node[op->x.node];
    const ck_grid *g = op->x.g;
    /* the output's chunks are the node's own unless shards split them */
    int own = g->ndim == nd->ndim;
    for (int d = 0; own && d < nd->ndim; d++)
        own = g->chunk[d] == nd->chunks[d] ||
              (g->chunk[d] == nd->shape[d] && nd->chunks[d] >= nd->shape[d]);
    ck_stream_job job = {
        .dst = op->dst,
        .produce = produce,
        .ctx = &op->x,
        .scratch =
            ck_exec_bytes(r, op->x.node, (size_t)g->chunk_nelem, -1, own),
        .budget = &r->budget,
        .threads = r->o->threads,
        .progress = r->o->progress,
    };
    return job;
}

/* Writes output o into op's array, then closes it. */
static ck_code write_output(xrun *r, const ck_output *o, ck_store *s,
                            const char *name, out_prep *op, ck_err *err)
{
    const ck_node *nd = &r->p->node[o->node];
    ck_stream_job job = output_job(r, op);
    ck_code rc;

    /* several workers each compute their chunk (a matmul tile, U's rows):
     * BLAS then runs one thread per call, not a pool per worker whose
     * idle threads spin in sched_yield beside the others */
    int threads;
    size_t wb;
    ck_stream_plan(&job, &threads, &wb);
    if (threads > 1)
        ck_be_set_threads(&r->be, 1);
    rc = ck_stream_run(&job, err);
    if (threads > 1)
        ck_be_set_threads(&r->be, 0);
    ck_array_close(op->dst);
    op->dst = NULL;
    if (rc == CK_OK)
        rc = ck_cf_out_attrs(r, o->node, s, name, err);
    if (rc == CK_OK && (nd->kind == CK_NODE_HIST || nd->kind == CK_NODE_HIST2D))
        rc = hist_edges(r, nd, s, name, &op->codec, err);
    if (rc == CK_OK && nd->kind == CK_NODE_PART && nd->part == CK_PART_COEF)
        rc = model_attrs(r, nd, s, name, err);
    return rc;
}

/* Is nd's shape known before the run (not a mask's length)? */
static int shape_known(const ck_node *nd)
{
    for (int d = 0; d < nd->ndim; d++)
        if (nd->shape[d] < 0)
            return 0;
    return 1;
}

/* A lower bound of what the folds will hold when the outputs are written:
 * their results (not the states they keep beside them). */
static int64_t folds_hold(const ck_plan *p)
{
    int64_t held = 0;

    for (int i = 0; i < p->n; i++) {
        const ck_node *nd = &p->node[i];
        if (is_fold(nd) && nd->kind != CK_NODE_MASK && shape_known(nd))
            held += ck_exec_nelem(nd->ndim, nd->shape) *
                    (int64_t)ck_dtype_size(nd->dtype);
    }
    return held;
}

/* Does node i, or a step it reads, run as a whole (svd, glm_fit, ...: its
 * run may still set the chunks of what it makes, as svd sets U's)?
 * seen[]: 0 unknown, 1 no, 2 yes. */
static int after_run(const ck_plan *p, int i, char *seen)
{
    const ck_node *nd = &p->node[i];
    int yes = ck_optab_kind(nd->kind)->run != NULL;

    if (seen[i])
        return seen[i] == 2;
    for (int k = 0; k < nd->nargs && !yes; k++)
        yes = nd->arg[k] >= 0 && after_run(p, nd->arg[k], seen);
    seen[i] = (char)(yes ? 2 : 1);
    return yes;
}

/* Before any data is read: the outputs whose shapes and chunks are known
 * are created, and each one's stream must fit beside what the folds will
 * hold, or the run is refused now, not after its reductions read all of
 * their input (center.json: a mean, then x - mean to Zarr at --memory
 * 48M, was refused for the output's chunks after the mean's pass). */
static ck_code open_outputs(xrun *r, ck_store *const *stores, const int *which,
                            char names[][512], out_prep *prep, ck_err *err)
{
    const ck_plan *p = r->p;
    int64_t held = folds_hold(p);
    ck_code rc =
        ck_budget_charge(&r->budget, held, "the reductions' results", err);
    int64_t charged = rc == CK_OK ? held : 0;
    char seen[CK_MAX_NODES] = {0};

    for (int k = 0; rc == CK_OK && k < p->nout; k++) {
        /* a mask's length, or what a whole run makes: after the folds */
        if (!shape_known(&p->node[p->out[k].node]) ||
            after_run(p, p->out[k].node, seen))
            continue;
        rc = open_output(r, &p->out[k], stores[which[k]], names[k], &prep[k],
                         err);
        if (rc == CK_OK) {
            ck_stream_job job = output_job(r, &prep[k]);
            rc = ck_stream_fits(&job, err);
        }
    }
    ck_budget_release(&r->budget, charged);
    return rc;
}

void ck_results_release(ck_results *res)
{
    if (!res)
        return;
    for (int i = 0; i < res->n; i++) {
        free(res->v[i].data);
        free(res->v[i].edges);
        free(res->v[i].se);
    }
    res->n = 0;
}

/* A printed step that is streamed, not held: its values, evaluated in
 * slabs of its first axis (whole chunks of it; each slab is contiguous in
 * C order), so that the scratch charged to the budget is a slab's, not
 * the whole array's (values a parser asks for may be many).  They become
 * r->x[i].mem only when all are there: a set .mem says "held", and an
 * evaluator that finds it (an svd's streamed factor) copies from it. */
static ck_code gather(xrun *r, int i, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    int64_t start[CK_MAX_DIMS] = {0}, box[CK_MAX_DIMS];
    size_t n = (size_t)ck_exec_nelem(nd->ndim, nd->shape);
    size_t esz = ck_dtype_size(nd->dtype), bytes = n * esz;
    int64_t rows = nd->ndim ? nd->shape[0] : 1;
    int64_t step = nd->ndim && nd->chunks[0] > 0 ? nd->chunks[0] : 1;
    int64_t per = rows > 0 ? (int64_t)n / rows : 0; /* values a row */
    char what[CK_NAME_MAX + 32];
    ck_arena a = {0};
    char *vals;
    ck_code rc;

    snprintf(what, sizeof what, "the values of '%s'", nd->name);
    /* held until the run ends */
    CK_TRY(ck_budget_charge(&r->budget, (int64_t)bytes, what, err));
    if (!(vals = malloc(bytes ? bytes : 1)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    if (step > rows)
        step = rows > 0 ? rows : 1;
    rc = ck_arena_reserve(&a, &r->budget,
                          ck_exec_eval_bytes(r, i, (size_t)(step * per)),
                          nd->name, err);
    memcpy(box, nd->shape, sizeof box);
    for (int64_t r0 = 0; rc == CK_OK && n && r0 < rows; r0 += step) {
        if (nd->ndim) {
            start[0] = r0;
            box[0] = rows - r0 < step ? rows - r0 : step;
        }
        ck_arena_reset(&a);
        rc = ck_exec_eval(r, i, start, box, vals + (size_t)(r0 * per) * esz, &a,
                          err);
    }
    ck_arena_release(&a);
    if (rc == CK_OK)
        r->x[i].mem = vals;
    else
        free(vals);
    return rc;
}

/* Hands the printed steps' results to the caller. */
static ck_code take_results(xrun *r, const ck_plan *orig, ck_results *res,
                            ck_err *err)
{
    for (int k = 0; k < r->p->nprint; k++) {
        int i = r->p->print[k];
        const ck_node *nd = &r->p->node[i];
        ck_result *o = &res->v[res->n];
        int64_t nel = ck_exec_nelem(nd->ndim, nd->shape);
        size_t bytes = (size_t)nel * ck_dtype_size(nd->dtype);
        if (!ck_plan_prints_whole(nd) && nel > CK_PRINT_MAX && !r->o->whole)
            return ck_err_set(err, CK_EUSAGE,
                              "print: '%s' has %" PRId64 " elements, too "
                              "many to print (at most %d); write it to an "
                              "output instead",
                              orig->node[i].name, nel, CK_PRINT_MAX);
        if (!r->x[i].mem)
            CK_TRY(gather(r, i, err));
        /* the caller's copy: counted too when it may be large */
        if (r->o->whole)
            CK_TRY(ck_budget_charge(&r->budget, (int64_t)bytes,
                                    "the values handed back", err));
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", orig->node[i].name);
        o->array = !ck_plan_prints_lines(nd);
        o->is_hist = nd->kind == CK_NODE_HIST;
        o->dtype = nd->dtype;
        o->ndim = nd->ndim;
        memcpy(o->shape, nd->shape, sizeof o->shape);
        o->data = malloc(bytes ? bytes : 1);
        if (o->is_hist)
            o->edges = malloc(sizeof(double) * (size_t)(nd->nbins + 1));
        if (!o->data || (o->is_hist && !o->edges)) {
            free(o->data);
            free(o->edges);
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        }
        memcpy(o->data, r->x[i].mem, bytes);
        if (nd->kind == CK_NODE_PART && nd->part == CK_PART_COEF &&
            r->x[nd->arg[0]].mem) {
            const ck_node *m = &r->p->node[nd->arg[0]];
            o->has_fit = 1;
            memcpy(o->fit, r->x[nd->arg[0]].mem, sizeof o->fit);
            if (m->glm.std_errors) {
                o->nse = m->glm.fit_intercept + nd->shape[0];
                if (!(o->se = malloc((size_t)o->nse * 8)))
                    return ck_err_set(err, CK_ENOMEM, "out of memory");
                memcpy(o->se, (double *)r->x[nd->arg[0]].mem + CK_GLM_INFO,
                       (size_t)o->nse * 8);
            }
        }
        if (o->is_hist)
            memcpy(o->edges, nd->edges,
                   sizeof(double) * (size_t)(nd->nbins + 1));
        res->n++;
    }
    return CK_OK;
}

ck_code ck_exec_backend(const ck_plan *p, const char *want, const char **on,
                        char *why, size_t why_n, ck_err *err)
{
    int device_steps = 0;

    if (!want)
        want = p->backend;
    /* (a CUDA C kernel is a reason to look for a GPU; the op table says
     * the rest without loading the CUDA module) */
    for (int i = 0; i < p->n; i++)
        if (p->node[i].kind != CK_NODE_INPUT &&
            ((ck_optab_kind(p->node[i].kind)->backends & CK_OPB_CUDA) ||
             (p->node[i].kind == CK_NODE_KERNEL && p->node[i].source[0])))
            device_steps++;
    if (strcmp(want, "auto") == 0 && device_steps == 0) {
        /* nothing would run on a GPU: do not pay for starting one */
        *on = ck_backend_cpu.name;
        if (why && why_n)
            snprintf(why, why_n, "no step of this pipeline runs on a GPU");
    } else {
        CK_TRY(ck_be_resolve(want, on, why, why_n, err));
    }
    /* a kernel step given only in CUDA C: the CPU cannot run it, nor a
     * CUDA backend that does not launch users' kernels */
    for (int i = 0; i < p->n; i++) {
        const ck_node *nd = &p->node[i];
        const char *f = strrchr(nd->source, '/');
        if (nd->kind != CK_NODE_KERNEL || nd->kernel)
            continue;
        f = f ? f + 1 : nd->source;
        int stem = (int)strlen(f) - 3; /* less ".cu" */
        if (strcmp(*on, "cuda") != 0)
            return ck_err_set(err, CK_EUSAGE,
                              "kernel step '%s': %s is CUDA C, which runs "
                              "under --backend cuda; give a C version beside "
                              "it (\"source\": [\"%.*s.c\", \"%s\"]) to "
                              "run it on the CPU",
                              nd->name, f, stem, f, f);
        if (ck_plan_device_kernels(*on))
            continue;
        return ck_err_set(err, CK_ENOTSUP,
                          "kernel step '%s': this chunkctl cannot launch "
                          "CUDA C kernels on a device yet; give a C version "
                          "beside %s (\"source\": [\"%.*s.c\", \"%s\"]) "
                          "to run the step on the CPU",
                          nd->name, f, stem, f, f);
    }
    return CK_OK;
}

/* Opens the backend the run asked for and, with --verbose, says which
 * runs and which steps fall back to the CPU. */
static ck_code open_backend(xrun *r, const char *want, const ck_be_opts *bo,
                            ck_err *err)
{
    const ck_plan *p = r->p;
    const char *on;
    char why[256];

    if (!want)
        want = p->backend;
    CK_TRY(ck_exec_backend(p, want, &on, why, sizeof why, err));
    if (strcmp(want, "auto") == 0)
        ck_log(CK_LOG_DEBUG, "backend: %s (auto%s%s)", on, why[0] ? ": " : "",
               why);
    else
        ck_log(CK_LOG_DEBUG, "backend: %s", on);
    CK_TRY(ck_be_open(on, bo, &r->be, err));
    if (r->be.table == &ck_backend_cpu)
        return CK_OK;
    {
        const ck_backend *t = r->be.table;
        ck_log(CK_LOG_DEBUG, "%s backend computes:%s%s%s%s%s%s%s%s%s", t->name,
               t->ew ? " elementwise" : "", t->reduce ? " reductions" : "",
               t->hist ? " histograms" : "", t->gemm ? " gemm" : "",
               t->syrk ? " syrk" : "", t->qr ? " qr" : "", t->svd ? " svd" : "",
               t->posv ? " posv" : "", t->kernel_run ? " users' kernels" : "");
    }
    for (int i = 0; i < p->n; i++) {
        const ck_node *nd = &p->node[i];
        /* a result of an svd or glm_fit is made by its step */
        if (nd->kind != CK_NODE_INPUT && nd->kind != CK_NODE_PART &&
            strcmp(ck_plan_runs_on(p, nd, r->be.table->name),
                   "cpu (fallback)") == 0)
            ck_log(CK_LOG_DEBUG,
                   "step '%s' (%s) runs on the CPU: the %s backend does "
                   "not implement it",
                   nd->name, ck_optab_label(nd), r->be.table->name);
    }
    /* users' CUDA C kernels: compiled and loaded before any data is read */
    return ck_exec_kernels_load(r, err);
}

/* What a resumed run must share with the killed one (--resume, see
 * io/journal.h): the version, the pipeline and the options that change
 * outputs' bytes, and the inputs' identity. */
static void run_key(const ck_plan *p, const ck_exec_opts *o, ck_journal_key *k)
{
    uint64_t h = CK_JOURNAL_HASH_INIT;
    const char *be = o->backend ? o->backend : p->backend;

    if (p->text)
        h = ck_journal_hash(h, p->text, strlen(p->text) + 1);
    h = ck_journal_hash(h, be, strlen(be) + 1);
    h = ck_journal_hash(h, &p->raw, sizeof p->raw);
    h = ck_journal_hash(h, &o->has_codec, sizeof o->has_codec);
    if (o->has_codec)
        h = ck_stream_hash_codec(h, &o->codec);
    h = ck_journal_hash(h, &o->zarr_format, sizeof o->zarr_format);
    h = ck_journal_hash(h, &o->shards_ndim, sizeof o->shards_ndim);
    h = ck_journal_hash(h, o->shards, sizeof(int64_t) * (size_t)o->shards_ndim);
    /* a kernel's code, which the pipeline names but does not hold */
    for (int i = 0; i < p->n; i++)
        if (p->node[i].kind == CK_NODE_KERNEL && p->node[i].kernel) {
            uint64_t kk = ck_kernel_key(p->node[i].kernel);
            h = ck_journal_hash(h, &kk, sizeof kk);
        }
    ck_journal_key_init(k);
    ck_journal_key_command(k, &h, sizeof h);
    for (int i = 0; i < p->n; i++) {
        char sp[PATH_MAX], sn[512];
        if (p->node[i].kind == CK_NODE_INPUT &&
            ck_target_split(p->node[i].source, sp, sizeof sp, sn, sizeof sn,
                            NULL) == CK_OK)
            ck_journal_key_input(k, sp);
    }
}

ck_code ck_exec_run(const ck_plan *p, const ck_exec_opts *o, ck_results *res,
                    ck_err *err)
{
    const ck_plan *orig = p;
    xrun *r = calloc(1, sizeof *r);
    ck_store *stores[CK_MAX_NODES] = {0};
    char paths[CK_MAX_NODES][PATH_MAX];
    char names[CK_MAX_NODES][512];
    int nstores = 0, which[CK_MAX_NODES];
    ck_be_opts bo = {o->threads, o->gpu_memory, 0, 1};
    ck_journal_key *key = NULL; /* made with the first output store */
    ck_code rc = CK_OK;

    if (!r || !(r->p = ck_plan_dup(p))) { /* edges stay shared with p */
        free(r);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    p = r->p;
    r->o = o;
    r->budget.limit = o->memory;
    rc = ck_budget_charge(&r->budget, ck_base_overhead(), "chunkctl itself",
                          err);
    /* indices the parser found in data (take, argwhere) are held by the
     * plan all through the run */
    for (int i = 0; rc == CK_OK && i < p->n; i++) {
        char what[CK_NAME_MAX + 48];
        snprintf(what, sizeof what, "the indices '%s' holds", p->node[i].name);
        if (p->node[i].nidx > 0)
            rc = ck_budget_charge(&r->budget, p->node[i].nidx * 8, what, err);
    }
    if (ck_comm_active()) {
        char sz[32];
        ck_log(CK_LOG_DEBUG,
               "mpi: %d rank%s; MPI took %s of memory at its start, "
               "charged to --memory",
               ck_comm_size(), ck_comm_size() == 1 ? "" : "s",
               ck_size_str((double)ck_comm_start_bytes(), sz, sizeof sz));
    }
    ck_comm_host(&bo.host_rank, &bo.host_size);
    if (rc == CK_OK)
        rc = open_backend(r, o->backend, &bo, err);
    /* Open the inputs. */
    for (int i = 0; rc == CK_OK && i < p->n; i++) {
        const ck_node *nd = &p->node[i];
        char sp[PATH_MAX], sn[512];
        if (nd->kind != CK_NODE_INPUT)
            continue;
        rc = ck_target_split(nd->source, sp, sizeof sp, sn, sizeof sn, err);
        if (rc == CK_OK)
            rc = ck_store_open(sp, &r->x[i].store, err);
        if (rc == CK_OK)
            rc = ck_array_open(r->x[i].store, sn, &r->x[i].arr, err);
    }
    /* Create every output store before computing anything, so an existing
     * output fails the run at once. */
    for (int k = 0; rc == CK_OK && k < p->nout; k++) {
        char dp[PATH_MAX];
        rc = ck_target_split(p->out[k].target, dp, sizeof dp, names[k],
                             sizeof names[k], err);
        if (rc != CK_OK)
            break;
        if (!names[k][0]) {
            /* A Zarr store that receives only this output is the array
             * itself (as copy makes it); otherwise the step's name.  A
             * histogram's edges go beside its counts: not alone. */
            const ck_node *on_ = &p->node[p->out[k].node];
            int alone = ck_store_kind_guess(dp) == CK_KIND_ZARR &&
                        on_->kind != CK_NODE_HIST &&
                        on_->kind != CK_NODE_HIST2D;
            /* ... nor are coordinate variables (ck_cf_out_coords) */
            for (int d = 0; d < on_->ndim && on_->has_dims; d++)
                alone &= !(on_->coord_in[d] && on_->dims[d][0]);
            for (int j = 0; j < p->nout && alone; j++) {
                char op_[PATH_MAX], on[512];
                if (j != k &&
                    ck_target_split(p->out[j].target, op_, sizeof op_, on,
                                    sizeof on, NULL) == CK_OK &&
                    strcmp(op_, dp) == 0)
                    alone = 0;
            }
            snprintf(names[k], sizeof names[k], alone ? "/" : "/%s",
                     p->node[p->out[k].node].name);
        }
        which[k] = -1;
        for (int s = 0; s < nstores; s++)
            if (strcmp(paths[s], dp) == 0)
                which[k] = s;
        if (which[k] >= 0)
            continue;
        for (int i = 0; rc == CK_OK && i < p->n; i++)
            if (r->x[i].store) {
                char at[PATH_MAX + 64];
                snprintf(at, sizeof at, "%s: %s", p->out[k].where, dp);
                rc = ck_store_check_apart(ck_store_path(r->x[i].store), dp, at,
                                          err);
            }
        if (rc != CK_OK)
            break;
        ck_store_kind kind = ck_store_kind_guess(dp);
        if (kind == CK_KIND_NONE) {
            rc = ck_err_set(err, CK_EUSAGE,
                            "%s: cannot tell the output format; name it "
                            "*.h5 or *.zarr",
                            dp);
            break;
        }
        snprintf(paths[nstores], PATH_MAX, "%s", dp);
        if (!key) {
            key = malloc(sizeof *key);
            if (!key) {
                rc = ck_err_set(err, CK_ENOMEM, "out of memory");
                break;
            }
            run_key(p, o, key);
        }
        rc = ck_store_create_resumable(dp, kind, o->force, key, o->resume,
                                       &stores[nstores], err);
        which[k] = nstores++;
    }
    /* One length per dimension in a group, as netCDF and xarray need. */
    for (int a = 0; rc == CK_OK && a < p->nout; a++)
        for (int b = a + 1; rc == CK_OK && b < p->nout; b++)
            if (which[a] == which[b])
                rc = ck_cf_check_dims(p, p->out[a].node, names[a],
                                      p->out[b].node, names[b], paths[which[a]],
                                      err);
    out_prep *prep = calloc((size_t)(p->nout ? p->nout : 1), sizeof *prep);
    if (!prep && rc == CK_OK)
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    if (rc == CK_OK)
        rc = open_outputs(r, stores, which, names, prep, err);
    /* Folds and models, in dependency order. */
    if (rc == CK_OK)
        rc = run_folds_and_models(r, err);
    for (int k = 0; rc == CK_OK && k < p->nout; k++) {
        if (!prep[k].dst)
            rc = open_output(r, &p->out[k], stores[which[k]], names[k],
                             &prep[k], err);
        if (rc == CK_OK)
            rc = write_output(r, &p->out[k], stores[which[k]], names[k],
                              &prep[k], err);
        ck_be_release(&r->be);
    }
    for (int k = 0; prep && k < p->nout; k++)
        ck_array_close(prep[k].dst);
    free(prep);
    /* Coordinate variables of the dimensions outputs keep, once per store
     * and never over an output of the same name; then each store's
     * history. */
    ck_names *done = calloc((size_t)(nstores ? nstores : 1), sizeof *done);
    if (!done && rc == CK_OK)
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    for (int k = 0; rc == CK_OK && k < p->nout; k++)
        rc = ck_names_push(&done[which[k]], names[k], err);
    for (int k = 0; rc == CK_OK && k < p->nout; k++)
        rc = ck_cf_out_coords(r, p->out[k].node, stores[which[k]], names[k],
                              &done[which[k]], err);
    for (int s = 0; rc == CK_OK && s < nstores; s++)
        rc = ck_cf_out_history(r, stores[s], err);
    for (int s = 0; done && s < nstores; s++)
        ck_names_release(&done[s]);
    free(done);
    if (rc == CK_OK && res)
        rc = take_results(r, orig, res, err);
    if (rc == CK_OK)
        rc = ck_store_commit_all(stores, nstores, err);
    for (int s = 0; s < nstores; s++)
        ck_store_close(stores[s]);
    free(key);
    for (int i = 0; i < p->n; i++) {
        ck_array_close(r->x[i].arr);
        ck_store_close(r->x[i].store);
        free(r->x[i].mem);
        free(r->x[i].edges);
        free(r->x[i].carry);
        free(r->x[i].svd_t);
    }
    ck_exec_kernels_free(r);
    ck_be_close(&r->be);
    free(r->p);
    free(r);
    return rc;
}

int64_t ck_plan_memory(const ck_plan *p)
{
    if (p->memory > 0)
        return p->memory;
    return ck_phys_mem() / 4 > 0 ? ck_phys_mem() / 4 : (int64_t)1 << 30;
}

ck_code ck_exec_values(const ck_plan *p, int k, const int *nodes, void **out,
                       ck_err *err)
{
    ck_plan *q = ck_plan_dup(p); /* lists stay p's */
    ck_exec_opts o = {0};
    ck_results *res = calloc(1, sizeof *res);
    ck_code rc;
    int last = 0;

    for (int j = 0; j < k; j++)
        out[j] = NULL;
    if (!q || !res) {
        free(q);
        free(res);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    for (int j = 0; j < k; j++) {
        q->print[j] = nodes[j];
        last = nodes[j] > last ? nodes[j] : last;
    }
    q->n = last + 1;
    q->nout = 0;
    q->nprint = k;
    for (int j = 0; j < q->n; j++)
        q->order[j] = j;
    o.memory = ck_plan_memory(p);
    o.whole = 1;
    o.backend = "cpu";
    rc = ck_exec_run(q, &o, res, err);
    for (int j = 0; rc == CK_OK && j < k; j++) {
        out[j] = res->v[j].data;
        res->v[j].data = NULL;
    }
    ck_results_release(res);
    free(res);
    free(q);
    return rc;
}

int ck_exec_restart_env(const char **name, const char **value)
{
    return ck_be_restart_env(name, value);
}
