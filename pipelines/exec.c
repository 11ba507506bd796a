/*
 * pipelines/exec.c - the executor: pull evaluation of boxes through the
 * step graph, chunk-order folds for reductions and histograms, and the
 * writes of outputs (all stores committed together at the end).
 */
#include "pipelines/exec.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/ck_log.h"
#include "base/ck_thread.h"
#include "io/store.h"
#include "ops/ew.h"
#include "ops/hist.h"
#include "ops/reduce.h"
#include "pipelines/exec_impl.h"
#include "pipelines/gen.h"
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
    const ck_node *nd = &r->p->node[i];
    size_t b = 0, most = 0;

    switch (nd->kind) {
    case CK_NODE_INPUT:
        return ck_array_region_scratch_bytes(r->x[i].arr) + 256;
    case CK_NODE_ASTYPE: {
        const ck_node *m = &r->p->node[nd->arg[0]];
        return ck_exec_al(n * ck_dtype_size(m->dtype)) +
               ck_exec_eval_bytes(r, nd->arg[0], n);
    }
    case CK_NODE_EW:
        /* per array operand: its values, their conversion to the compute
         * dtype if it differs, their broadcast to the box if it does; the
         * operands are evaluated one after another, so their own scratch
         * is needed once, for the largest */
        for (int k = 0; k < nd->nargs; k++) {
            const ck_node *m = nd->arg[k] >= 0 ? &r->p->node[nd->arg[k]] : NULL;
            size_t csz = ck_dtype_size(
                nd->ew == CK_EW_WHERE && k == 0 ? CK_BOOL : nd->compute);
            b += 128;
            if (!m)
                continue;
            size_t e = ck_exec_eval_bytes(r, nd->arg[k], n);
            b += ck_exec_al(n * ck_dtype_size(m->dtype));
            most = e > most ? e : most;
            if (m->dtype != nd->compute)
                b += ck_exec_al(n * csz);
            if (m->ndim != nd->ndim ||
                memcmp(m->shape, nd->shape, sizeof(int64_t) * (size_t)m->ndim))
                b += ck_exec_al(n * csz);
        }
        return b + most;
    case CK_NODE_TRANSPOSE:
        return ck_exec_al(n * ck_dtype_size(nd->dtype)) +
               ck_exec_eval_bytes(r, nd->arg[0], n);
    case CK_NODE_RECHUNK:
        return ck_exec_eval_bytes(r, nd->arg[0], n);
    case CK_NODE_MATMUL:
    case CK_NODE_PART:
    case CK_NODE_PREDICT:
        return ck_exec_linalg_bytes(r, i, n);
    case CK_NODE_RANDOM:
        return ck_exec_al((size_t)(nd->ndim ? nd->shape[nd->ndim - 1] : 1) * 8);
    case CK_NODE_CONCAT: {
        for (int k = 0; k < nd->nargs; k++) {
            size_t e = ck_exec_eval_bytes(r, nd->arg[k], n);
            most = e > most ? e : most;
        }
        return 2 * ck_exec_al(n * 8) + most;
    }
    case CK_NODE_RESHAPE: {
        size_t span = reshape_span(r->p, nd, n);
        return ck_exec_al(span * ck_dtype_size(nd->dtype)) +
               ck_exec_eval_bytes(r, nd->arg[0], span);
    }
    case CK_NODE_SLICE: {
        /* A strided box of anything but an input is evaluated whole over
         * its bounding box, then subsampled. */
        size_t span = n;
        if (r->p->node[nd->arg[0]].kind == CK_NODE_INPUT)
            return ck_exec_eval_bytes(r, nd->arg[0], n);
        for (int d = 0; d < r->p->node[nd->arg[0]].ndim; d++)
            span *= (size_t)nd->sl_step[d];
        return ck_exec_al(span * ck_dtype_size(nd->dtype)) +
               ck_exec_eval_bytes(r, nd->arg[0], span);
    }
    default:
        return 64;
    }
}

/* Copies operand data (shape osh, broadcast against the box shape bsh of
 * nd dims; osh[d] is 1 or bsh[d]) into dst laid out as the full box. */
static void expand(int nd, size_t esz, void *dst, const int64_t *bsh,
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

/* dst (C order, shape[nd]) gets src transposed: dst axis k is src axis
 * perm[k]; src is C order of shape ssh[]. */
static void permute(int nd, size_t esz, void *dst, const int64_t *shape,
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

ck_code ck_exec_no_room(ck_err *err)
{
    return ck_err_set(err, CK_ENOMEM, "run: scratch arena too small");
}

/* concatenate/stack: each operand's part of the box, converted to the
 * result dtype, placed at its offset along the axis. */
static ck_code eval_concat(xrun *r, const ck_node *nd, const int64_t *start,
                           const int64_t *shape, void *dst, ck_arena *a,
                           ck_err *err)
{
    int ax = nd->axis;
    size_t esz = ck_dtype_size(nd->dtype);
    int64_t at = 0; /* operand k's first index along the axis */

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

/* reshape: the box's C-order span in the operand is read as whole rows of
 * its first axis, and each output row is one run of that slab. */
static ck_code eval_reshape(xrun *r, const ck_node *nd, const int64_t *start,
                            const int64_t *shape, void *dst, ck_arena *a,
                            ck_err *err)
{
    const ck_node *m = &r->p->node[nd->arg[0]];
    size_t esz = ck_dtype_size(nd->dtype);
    int64_t inner = 1, lmin = 0, lmax = 0, idx[CK_MAX_DIMS] = {0};
    int64_t ss[CK_MAX_DIMS], sst[CK_MAX_DIMS] = {0};
    int nd_ = nd->ndim, last = nd_ - 1;
    int64_t row = nd_ ? shape[last] : 1;
    char *o = dst;

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

ck_code ck_exec_eval(xrun *r, int i, const int64_t *start, const int64_t *shape,
                     void *dst, ck_arena *a, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    size_t n = (size_t)ck_exec_nelem(nd->ndim, shape);

    switch (nd->kind) {
    case CK_NODE_INPUT: {
        int64_t stop[CK_MAX_DIMS];
        for (int d = 0; d < nd->ndim; d++)
            stop[d] = start[d] + shape[d];
        return ck_array_read_region(r->x[i].arr, start, stop, NULL, nd->dtype,
                                    dst, NULL, a, err);
    }
    case CK_NODE_REDUCE:
    case CK_NODE_HIST:
    case CK_NODE_HIST2D:
    case CK_NODE_MASK: {
        int64_t zero[CK_MAX_DIMS] = {0};
        ck_box_copy(nd->ndim, ck_dtype_size(nd->dtype), dst, shape, zero,
                    r->x[i].mem, nd->shape, start, NULL, shape);
        return CK_OK;
    }
    case CK_NODE_RECHUNK:
        return ck_exec_eval(r, nd->arg[0], start, shape, dst, a, err);
    case CK_NODE_RANDOM: {
        double *row = ck_arena_alloc(
            a, sizeof(double) * (size_t)(nd->ndim ? shape[nd->ndim - 1] : 1));
        if (!row)
            return ck_exec_no_room(err);
        ck_gen_box((ck_dist)nd->dist, nd->ra, nd->rb, nd->seed, nd->dtype,
                   nd->ndim, nd->shape, start, shape, shape, dst, row);
        return CK_OK;
    }
    case CK_NODE_CONCAT:
        return eval_concat(r, nd, start, shape, dst, a, err);
    case CK_NODE_MATMUL:
    case CK_NODE_PART:
    case CK_NODE_PREDICT:
        return ck_exec_linalg_eval(r, i, start, shape, dst, a, err);
    case CK_NODE_SVD:
    case CK_NODE_GLM:
        break; /* only their parts are evaluated */
    case CK_NODE_RESHAPE:
        return eval_reshape(r, nd, start, shape, dst, a, err);
    case CK_NODE_TRANSPOSE: {
        const ck_node *m = &r->p->node[nd->arg[0]];
        int64_t ist[CK_MAX_DIMS], ish[CK_MAX_DIMS];
        void *tmp = ck_arena_alloc(a, n * ck_dtype_size(m->dtype));
        if (!tmp)
            return ck_exec_no_room(err);
        for (int k = 0; k < nd->ndim; k++) {
            ist[nd->perm[k]] = start[k];
            ish[nd->perm[k]] = shape[k];
        }
        CK_TRY(ck_exec_eval(r, nd->arg[0], ist, ish, tmp, a, err));
        permute(nd->ndim, ck_dtype_size(nd->dtype), dst, shape, tmp, ish,
                nd->perm);
        return CK_OK;
    }
    case CK_NODE_SLICE: {
        const ck_node *m = &r->p->node[nd->arg[0]];
        int64_t ist[CK_MAX_DIMS], ish[CK_MAX_DIMS], istep[CK_MAX_DIMS];
        int64_t bsh[CK_MAX_DIMS], zero[CK_MAX_DIMS] = {0};
        size_t esz = ck_dtype_size(nd->dtype);
        int k = 0;
        for (int d = 0; d < m->ndim; d++) {
            istep[d] = nd->sl_keep[d] ? nd->sl_step[d] : 1;
            ist[d] = nd->sl_start[d] +
                     (nd->sl_keep[d] ? start[k] * nd->sl_step[d] : 0);
            ish[d] = nd->sl_keep[d] ? shape[k++] : 1;
            bsh[d] = (ish[d] - 1) * istep[d] + 1;
        }
        if (m->kind == CK_NODE_INPUT) {
            int64_t stop[CK_MAX_DIMS];
            for (int d = 0; d < m->ndim; d++)
                stop[d] = ist[d] + bsh[d];
            return ck_array_read_region(r->x[nd->arg[0]].arr, ist, stop, istep,
                                        nd->dtype, dst, NULL, a, err);
        }
        void *tmp =
            ck_arena_alloc(a, (size_t)ck_exec_nelem(m->ndim, bsh) * esz);
        if (!tmp)
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(r, nd->arg[0], ist, bsh, tmp, a, err));
        ck_box_copy(m->ndim, esz, dst, ish, zero, tmp, bsh, zero, istep, ish);
        return CK_OK;
    }
    case CK_NODE_ASTYPE: {
        const ck_node *m = &r->p->node[nd->arg[0]];
        void *tmp = ck_arena_alloc(a, n * ck_dtype_size(m->dtype));
        if (!tmp)
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(r, nd->arg[0], start, shape, tmp, a, err));
        ck_dtype_convert(nd->dtype, dst, m->dtype, tmp, n);
        return CK_OK;
    }
    case CK_NODE_EW: {
        ck_ew_args ea = {0};
        ea.op = nd->ew;
        ea.compute = nd->compute;
        ea.result = nd->dtype;
        ea.n = n;
        ea.out = dst;
        for (int k = 0; k < nd->nargs; k++) {
            ck_dtype want =
                nd->ew == CK_EW_WHERE && k == 0 ? CK_BOOL : nd->compute;
            size_t wsz = ck_dtype_size(want);
            if (nd->arg[k] < 0) {
                void *s = ck_arena_alloc(a, 8);
                if (!s)
                    return ck_exec_no_room(err);
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
            void *v = ck_arena_alloc(a, mn * ck_dtype_size(m->dtype));
            if (!v)
                return ck_exec_no_room(err);
            size_t mark = a->used; /* the operand's scratch is free after */
            CK_TRY(ck_exec_eval(r, nd->arg[k], ms, msh, v, a, err));
            a->used = mark;
            if (m->dtype != want) {
                void *c = ck_arena_alloc(a, mn * wsz);
                if (!c)
                    return ck_exec_no_room(err);
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
                if (!e)
                    return ck_exec_no_room(err);
                for (int d = 0; d < nd->ndim; d++)
                    full[d] = d < off ? 1 : msh[d - off];
                expand(nd->ndim, wsz, e, shape, v, full);
                v = e;
                ea.stride[k] = 1;
            }
            ea.in[k] = v;
        }
        return ck_op_ew(&r->be, &ea, err);
    }
    }
    return ck_err_set(err, CK_ENOTSUP, "run: node kind %d", (int)nd->kind);
}

/* ---- folds: reductions and histograms ---- */

enum { CK_MAX_WORKERS = 256 };

typedef struct fold {
    xrun *r;
    int node, operand;
    ck_grid g;         /* the operand's chunks */
    int64_t w0, wn;    /* the window: chunks w0 .. w0+wn-1 */
    int64_t next;      /* atomic */
    size_t part_bytes; /* one chunk's partial */
    char *parts;       /* wn partials */
    size_t arena_bytes;
    ck_arena arena[CK_MAX_WORKERS]; /* one per worker, kept across windows */
} fold;

/* Output box of chunk c under a reduction: shape and start without the
 * reduced axes. */
static int out_box(const ck_node *nd, const ck_grid *g, const ck_chunk *c,
                   int64_t *start, int64_t *shape)
{
    int k = 0;
    for (int d = 0; d < g->ndim; d++)
        if (!(nd->axes & (1u << d))) {
            start[k] = c->start[d];
            shape[k++] = c->shape[d];
        }
    return k;
}

static ck_code fold_chunk(fold *f, const ck_chunk *c, ck_arena *a, ck_err *err)
{
    xrun *r = f->r;
    const ck_node *nd = &r->p->node[f->node];
    const ck_node *m = &r->p->node[f->operand];
    size_t n = (size_t)ck_chunk_nelem(&f->g, c);
    void *part = f->parts + (size_t)(c->index - f->w0) * f->part_bytes;
    void *buf = ck_arena_alloc(a, n * ck_dtype_size(m->dtype));

    if (!buf)
        return ck_exec_no_room(err);
    CK_TRY(ck_exec_eval(r, f->operand, c->start, c->shape, buf, a, err));
    if (nd->kind == CK_NODE_MASK) {
        /* part: the count, then the selected values in C order */
        size_t esz = ck_dtype_size(m->dtype);
        uint8_t *cond = ck_arena_alloc(a, n);
        char *o = (char *)part + 64;
        int64_t cnt = 0;
        if (!cond)
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(r, nd->arg[1], c->start, c->shape, cond, a, err));
        for (size_t k = 0; k < n; k++)
            if (cond[k])
                memcpy(o + (size_t)cnt++ * esz, (char *)buf + k * esz, esz);
        memcpy(part, &cnt, sizeof cnt);
        return CK_OK;
    }
    if (nd->kind == CK_NODE_REDUCE) {
        int64_t os[CK_MAX_DIMS], osh[CK_MAX_DIMS];
        int ond = out_box(nd, &f->g, c, os, osh);
        ck_red_init(nd->red, part, (size_t)ck_exec_nelem(ond, osh));
        ck_red_args ra = {.op = nd->red,
                          .in = m->dtype,
                          .data = buf,
                          .ndim = m->ndim,
                          .shape = c->shape,
                          .origin = c->start,
                          .array_shape = m->shape,
                          .axes = nd->axes,
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
    memset(part, 0, f->part_bytes);
    if (nd->kind == CK_NODE_HIST2D) {
        const ck_node *yn = &r->p->node[nd->arg[1]];
        void *yv = ck_arena_alloc(a, n * ck_dtype_size(yn->dtype));
        if (!yv)
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(r, nd->arg[1], c->start, c->shape, yv, a, err));
        ck_hist2d_args h2 = {.tx = m->dtype,
                             .ty = yn->dtype,
                             .x = buf,
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
                             .counts = part};
        ck_hist2d_accumulate(&h2);
        return CK_OK;
    }
    ck_hist_args ha = {.in = m->dtype,
                       .data = buf,
                       .n = n,
                       .weights = w,
                       .wtype = wt,
                       .nbins = nd->nbins,
                       .edges = nd->edges,
                       .uniform = nd->uniform,
                       .counts = part};
    return ck_op_hist(&r->be, &ha, err);
}

static ck_code fold_worker(void *ctx, int id, ck_par *par, ck_err *err)
{
    fold *f = ctx;
    ck_arena *a = &f->arena[id];
    ck_code rc = CK_OK;

    while (rc == CK_OK && !ck_par_stopped(par)) {
        int64_t k = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED);
        ck_chunk c;
        if (k >= f->wn)
            break;
        ck_grid_chunk(&f->g, f->w0 + k, &c);
        ck_arena_reset(a);
        rc = fold_chunk(f, &c, a, err);
        if (rc == CK_OK)
            ck_progress_add(f->r->o->progress, 0);
    }
    return rc;
}

/* Combines chunk c's partial states into the global states (shape gsh). */
static void combine_box(const ck_node *nd, const ck_grid *g, const ck_chunk *c,
                        void *states, const void *part, int gnd,
                        const int64_t *gsh)
{
    int64_t os[CK_MAX_DIMS], osh[CK_MAX_DIMS], idx[CK_MAX_DIMS] = {0};
    int ond = out_box(nd, g, c, os, osh);
    size_t ssz = ck_red_state_size();
    int64_t row = ond ? osh[ond - 1] : 1;
    const char *src = part;

    (void)gnd;
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

static ck_code run_fold(xrun *r, int i, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    fold f = {0};
    int64_t gsh[CK_MAX_DIMS];
    int gnd = 0, threads = r->o->threads > 0 ? r->o->threads : ck_ncpus();
    void *states = NULL;
    double *counts = NULL;
    int64_t charged = 0, nout, maxbox = 1, masked = 0;
    ck_code rc;

    f.r = r;
    f.node = i;
    f.operand = nd->arg[0];
    if (nd->kind == CK_NODE_MASK) {
        /* x[cond] is in C order of the whole array: walk it in boxes that
         * are C-contiguous runs (whole trailing axes), so appending the
         * boxes' selections in order is C order.  About a chunk each. */
        int64_t bytes = (int64_t)ck_dtype_size(m->dtype), ch[CK_MAX_DIMS];
        for (int d = 0; d < m->ndim; d++)
            bytes *= m->chunks[d] < m->shape[d] ? m->chunks[d] : m->shape[d];
        ck_auto_chunks(m->ndim, m->shape, ck_dtype_size(m->dtype),
                       (size_t)(bytes > (1 << 20) ? bytes : 1 << 20), ch);
        CK_TRY(ck_grid_init(&f.g, m->ndim, m->shape, ch,
                            ck_dtype_size(m->dtype), err));
    } else {
        CK_TRY(ck_grid_init(&f.g, m->ndim, m->shape, m->chunks,
                            ck_dtype_size(m->dtype), err));
    }
    for (int d = 0; d < m->ndim; d++)
        if (!(nd->axes & (1u << d))) {
            gsh[gnd++] = m->shape[d];
            maxbox *= m->chunks[d] < m->shape[d] ? m->chunks[d] : m->shape[d];
        }
    nout = ck_exec_nelem(gnd, gsh);
    if (nd->kind == CK_NODE_REDUCE)
        f.part_bytes = ck_exec_al((size_t)maxbox * ck_red_state_size());
    else if (nd->kind == CK_NODE_MASK)
        f.part_bytes =
            ck_exec_al((size_t)f.g.chunk_nelem * ck_dtype_size(m->dtype)) + 64;
    else
        f.part_bytes =
            ck_exec_al((size_t)nd->nbins *
                       (size_t)(nd->kind == CK_NODE_HIST2D ? nd->nbins2 : 1) *
                       sizeof(double));
    f.arena_bytes =
        ck_exec_al((size_t)f.g.chunk_nelem * ck_dtype_size(m->dtype)) +
        ck_exec_eval_bytes(r, f.operand, (size_t)f.g.chunk_nelem) +
        (nd->weights >= 0
             ? ck_exec_al((size_t)f.g.chunk_nelem * 8) +
                   ck_exec_eval_bytes(r, nd->weights, (size_t)f.g.chunk_nelem)
             : 0) +
        (nd->kind == CK_NODE_MASK || nd->kind == CK_NODE_HIST2D
             ? ck_exec_al((size_t)f.g.chunk_nelem *
                          ck_dtype_size(r->p->node[nd->arg[1]].dtype)) +
                   ck_exec_eval_bytes(r, nd->arg[1], (size_t)f.g.chunk_nelem)
             : 0) +
        256;
    /* The result and its states stay in memory. */
    charged = nd->kind == CK_NODE_MASK
                  ? 0 /* charged as it grows */
                  : (nd->kind == CK_NODE_REDUCE
                         ? nout * (int64_t)ck_red_state_size()
                         : ck_exec_nelem(nd->ndim, nd->shape) * 8) +
                        ck_exec_nelem(nd->ndim, nd->shape) *
                            (int64_t)ck_dtype_size(nd->dtype);
    CK_TRY(ck_budget_charge(&r->budget, charged, nd->name, err));
    /* Workers as the budget holds (each with its arena and at least one
     * partial), then a window of a few chunks per worker. */
    int64_t left = r->budget.limit - r->budget.used;
    int64_t per = (int64_t)f.arena_bytes + (int64_t)f.part_bytes;
    if (left < per) {
        char have[32], need[32];
        ck_budget_release(&r->budget, charged);
        return ck_err_set(
            err, CK_ENOMEM,
            "--memory %s is too small: %s needs %s for one "
            "worker (raise --memory or use smaller chunks)",
            ck_size_str((double)r->budget.limit, have, sizeof have), nd->where,
            ck_size_str((double)(per + r->budget.used), need, sizeof need));
    }
    if ((int64_t)threads * per > left)
        threads = (int)(left / per);
    left -= (int64_t)threads * (int64_t)f.arena_bytes;
    f.wn = (int64_t)threads * 4;
    while (f.wn > threads && f.wn * (int64_t)f.part_bytes > left)
        f.wn--;
    if (f.wn > f.g.total_chunks)
        f.wn = f.g.total_chunks > 0 ? f.g.total_chunks : 1;
    if (threads > CK_MAX_WORKERS)
        threads = CK_MAX_WORKERS;
    rc = ck_budget_charge(&r->budget, f.wn * (int64_t)f.part_bytes,
                          "partial results", err);
    int64_t parts_charged = rc == CK_OK ? f.wn * (int64_t)f.part_bytes : 0;
    for (int t = 0; rc == CK_OK && t < threads; t++) {
        char what[64];
        snprintf(what, sizeof what, "%s, worker %d,", nd->where, t);
        rc =
            ck_arena_reserve(&f.arena[t], &r->budget, f.arena_bytes, what, err);
    }
    if (rc == CK_OK) {
        f.parts = malloc((size_t)f.wn * f.part_bytes);
        states = nd->kind == CK_NODE_REDUCE
                     ? malloc((size_t)(nout ? nout : 1) * ck_red_state_size())
                     : NULL;
        counts = calloc(
            (size_t)nd->nbins * (size_t)(nd->nbins2 > 0 ? nd->nbins2 : 1) + 1,
            sizeof(double));
        r->x[i].mem =
            malloc((size_t)(nd->kind == CK_NODE_MASK
                                ? 1
                                : ck_exec_nelem(nd->ndim, nd->shape) + 1) *
                   ck_dtype_size(nd->dtype));
        if (!f.parts || !r->x[i].mem || !counts ||
            (nd->kind == CK_NODE_REDUCE && !states))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    if (rc == CK_OK && states)
        ck_red_init(nd->red, states, (size_t)nout);
    if (rc == CK_OK && r->o->progress)
        r->o->progress->total += f.g.total_chunks;
    for (int64_t w0 = 0; rc == CK_OK && w0 < f.g.total_chunks; w0 += f.wn) {
        f.w0 = w0;
        int64_t wn = f.wn;
        if (w0 + wn > f.g.total_chunks)
            f.wn = f.g.total_chunks - w0;
        f.next = 0;
        rc = ck_par_run(threads < f.wn ? threads : (int)f.wn, fold_worker, &f,
                        err);
        /* Fold in chunk order: the same result for any thread count. */
        for (int64_t k = 0; rc == CK_OK && k < f.wn; k++) {
            ck_chunk c;
            const char *part = f.parts + (size_t)k * f.part_bytes;
            ck_grid_chunk(&f.g, w0 + k, &c);
            if (nd->kind == CK_NODE_REDUCE)
                combine_box(nd, &f.g, &c, states, part, gnd, gsh);
            else if (nd->kind == CK_NODE_MASK)
                rc = append_mask(r, i, part, &masked, err);
            else
                for (int64_t b = 0; b < ck_exec_nelem(nd->ndim, nd->shape); b++)
                    counts[b] += ((const double *)(const void *)part)[b];
        }
        f.wn = wn;
    }
    if (rc == CK_OK && nd->kind == CK_NODE_MASK) {
        ck_node *w = &r->p->node[i];
        w->shape[0] = masked;
        w->chunks[0] = masked < (1 << 20) ? (masked > 0 ? masked : 1) : 1 << 20;
    } else if (rc == CK_OK && nd->kind == CK_NODE_REDUCE) {
        int empty = 0;
        rc = ck_red_finalize(nd->red, nd->ddof, states, (size_t)nout, nd->dtype,
                             r->x[i].mem, &empty, err);
        if (rc == CK_OK && empty)
            ck_log(CK_LOG_WARN, "%s: %s of an empty selection is NaN", nd->name,
                   ck_red_name(nd->red));
        if (rc != CK_OK)
            ck_err_prefix(err, "%s", nd->where);
    } else if (rc == CK_OK) {
        if (nd->density && nd->kind == CK_NODE_HIST2D)
            ck_hist2d_density(counts, nd->nbins, nd->nbins2, nd->edges,
                              nd->edges2);
        else if (nd->density)
            ck_hist_density(counts, nd->nbins, nd->edges);
        ck_dtype_convert(nd->dtype, r->x[i].mem, CK_F64, counts,
                         (size_t)ck_exec_nelem(nd->ndim, nd->shape));
    }
    for (int t = 0; t < threads; t++)
        ck_arena_release(&f.arena[t]);
    ck_budget_release(&r->budget, parts_charged);
    free(f.parts);
    free(states);
    free(counts);
    return rc;
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
    size_t esz = ck_dtype_size(nd->dtype);
    int64_t zero[CK_MAX_DIMS] = {0};
    int edge = 0;
    void *tmp;

    for (int d = 0; d < x->g->ndim; d++)
        edge |= c->shape[d] != x->g->chunk[d];
    if (!edge)
        return ck_exec_eval(x->r, x->node, c->start, c->shape, buf, a, err);
    if (!(tmp = ck_arena_alloc(a, (size_t)ck_chunk_nelem(x->g, c) * esz)))
        return ck_exec_no_room(err);
    CK_TRY(ck_exec_eval(x->r, x->node, c->start, c->shape, tmp, a, err));
    memset(buf, 0, (size_t)x->g->chunk_nelem * esz);
    ck_box_copy(x->g->ndim, esz, buf, x->g->chunk, zero, tmp, c->shape, zero,
                NULL, c->shape);
    return CK_OK;
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
    };

    snprintf(a[0].v.str, sizeof a[0].v.str, "%s",
             ck_glm_family_name(m->glm.family));
    snprintf(a[1].v.str, sizeof a[1].v.str, "%s",
             ck_glm_solver_name(m->glm.solver));
    snprintf(a[2].v.str, sizeof a[2].v.str, "%s", ck_glm_reg_name(m->glm.reg));
    for (size_t k = 0; k < sizeof a / sizeof a[0]; k++)
        CK_TRY(ck_store_set_attr(s, name, a[k].key, &a[k].v, err));
    return CK_OK;
}

static ck_code write_output(xrun *r, const ck_output *o, ck_store *s,
                            const char *name, ck_err *err)
{
    const ck_node *nd = &r->p->node[o->node];
    ck_array_spec spec;
    ck_array *dst = NULL;
    ck_code rc;
    out_ctx x;

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
    CK_TRY(ck_array_create(s, &spec, &dst, err));
    x.r = r;
    x.node = o->node;
    x.g = ck_array_grid(dst);
    ck_stream_job job = {
        .dst = dst,
        .produce = produce,
        .ctx = &x,
        .scratch =
            ck_exec_al((size_t)x.g->chunk_nelem * ck_dtype_size(nd->dtype)) +
            ck_exec_eval_bytes(r, o->node, (size_t)x.g->chunk_nelem),
        .budget = &r->budget,
        .threads = r->o->threads,
        .progress = r->o->progress,
    };
    rc = ck_stream_run(&job, err);
    ck_array_close(dst);
    if (rc == CK_OK && nd->kind == CK_NODE_PART && nd->part == CK_PART_COEF)
        rc = model_attrs(r, nd, s, name, err);
    return rc;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

void ck_results_release(ck_results *res)
{
    if (!res)
        return;
    for (int i = 0; i < res->n; i++) {
        free(res->v[i].data);
        free(res->v[i].edges);
    }
    res->n = 0;
}

/* Hands the printed steps' results to the caller. */
static ck_code take_results(xrun *r, const ck_plan *orig, ck_results *res,
                            ck_err *err)
{
    for (int k = 0; k < r->p->nprint; k++) {
        int i = r->p->print[k];
        const ck_node *nd = &r->p->node[i];
        ck_result *o = &res->v[res->n];
        size_t bytes = (size_t)ck_exec_nelem(nd->ndim, nd->shape) *
                       ck_dtype_size(nd->dtype);
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", orig->node[i].name);
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
            o->has_fit = 1;
            memcpy(o->fit, r->x[nd->arg[0]].mem, sizeof o->fit);
        }
        if (o->is_hist)
            memcpy(o->edges, nd->edges,
                   sizeof(double) * (size_t)(nd->nbins + 1));
        res->n++;
    }
    return CK_OK;
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
    ck_be_opts bo = {o->threads};
    ck_code rc = CK_OK;

    if (!r || !(r->p = malloc(sizeof *p))) {
        free(r);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    memcpy(r->p, p, sizeof *p); /* edges stay shared with p */
    p = r->p;
    r->o = o;
    r->budget.limit = o->memory;
    rc = ck_budget_charge(&r->budget, CK_BASE_OVERHEAD, "chunkctl itself", err);
    if (rc == CK_OK)
        rc = ck_be_open(o->backend ? o->backend : "cpu", &bo, &r->be, err);
    /* Open the inputs. */
    for (int i = 0; rc == CK_OK && i < p->n; i++) {
        const ck_node *nd = &p->node[i];
        char sp[PATH_MAX], sn[512];
        if (nd->kind != CK_NODE_INPUT)
            continue;
        rc = ck_target_split(nd->source, sp, sn, sizeof sp, err);
        if (rc == CK_OK)
            rc = ck_store_open(sp, &r->x[i].store, err);
        if (rc == CK_OK)
            rc = ck_array_open(r->x[i].store, sn, &r->x[i].arr, err);
    }
    /* Create every output store before computing anything, so an existing
     * output fails the run at once. */
    for (int k = 0; rc == CK_OK && k < p->nout; k++) {
        char dp[PATH_MAX];
        rc = ck_target_split(p->out[k].target, dp, names[k], sizeof dp, err);
        if (rc != CK_OK)
            break;
        if (!names[k][0]) {
            /* A Zarr store that receives only this output is the array
             * itself (as copy makes it); otherwise the step's name. */
            int alone = ck_store_kind_guess(dp) == CK_KIND_ZARR;
            for (int j = 0; j < p->nout && alone; j++) {
                char op_[PATH_MAX], on[512];
                if (j != k &&
                    ck_target_split(p->out[j].target, op_, on, sizeof op_,
                                    NULL) == CK_OK &&
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
            if (r->x[i].store && same_file(dp, ck_store_path(r->x[i].store)))
                rc = ck_err_set(err, CK_EUSAGE,
                                "%s: %s is the input '%s'; chunkctl never "
                                "writes into its input",
                                p->out[k].where, dp, p->node[i].name);
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
        rc = ck_store_create(dp, kind, o->force, &stores[nstores], err);
        which[k] = nstores++;
    }
    /* Folds and models, in dependency order. */
    for (int j = 0; rc == CK_OK && j < p->n; j++) {
        int i = p->order[j];
        if (p->node[i].kind == CK_NODE_REDUCE ||
            p->node[i].kind == CK_NODE_HIST ||
            p->node[i].kind == CK_NODE_HIST2D ||
            p->node[i].kind == CK_NODE_MASK)
            rc = run_fold(r, i, err);
        else if (p->node[i].kind == CK_NODE_SVD)
            rc = ck_exec_run_svd(r, i, err);
        else if (p->node[i].kind == CK_NODE_GLM)
            rc = ck_exec_run_glm(r, i, err);
    }
    for (int k = 0; rc == CK_OK && k < p->nout; k++)
        rc = write_output(r, &p->out[k], stores[which[k]], names[k], err);
    if (rc == CK_OK && res)
        rc = take_results(r, orig, res, err);
    for (int s = 0; rc == CK_OK && s < nstores; s++)
        rc = ck_store_commit(stores[s], err);
    for (int s = 0; s < nstores; s++)
        ck_store_close(stores[s]);
    for (int i = 0; i < p->n; i++) {
        ck_array_close(r->x[i].arr);
        ck_store_close(r->x[i].store);
        free(r->x[i].mem);
    }
    ck_be_close(&r->be);
    free(r->p);
    free(r);
    return rc;
}
