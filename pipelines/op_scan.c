/*
 * pipelines/op_scan.c - cumsum and cumprod (numpy.cumsum, numpy.cumprod)
 * along one axis, or over the array flattened in C order (no axis).
 *
 * NumPy accumulates sequentially: out[j] = out[j-1] + x[j], in the result
 * dtype.  Boxes are evaluated in any order, in parallel, so a step first
 * runs once (ck_exec_run_scan) to find, for each chunk along the axis but
 * the last, the running values at its end: one cross-section of the array
 * per chunk boundary (the carries, held in r->x[i].carry and charged to
 * the budget).  A box is then its operand's values scanned from the carry
 * of the chunk before it; a box that starts inside a chunk (a downstream
 * slice's) first scans the leading part of that chunk.  The carries are
 * the sequential running values themselves, never separately summed chunk
 * totals, so the results are NumPy's bit for bit, for any --threads.
 *
 * Without an axis the step is 1-D, of the operand's size: a box of it is
 * a C-order span of the operand, read as the few boxes that make it up.
 *
 * Under MPI the carries are found by rank: each takes a contiguous range
 * of the cross-section blocks (the chunks across the axis) and runs their
 * chains along the axis, then every rank broadcasts its carries, so each
 * rank holds them all (the same bits: each chain is still one sequential
 * scan).  A step with one cross-section block (1-D, or the flattened
 * scan) has one chain, which rank 0 runs alone.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_comm.h"
#include "base/ck_grid.h"
#include "base/ck_thread.h"
#include "pipelines/exec_impl.h"
#include "pipelines/optab.h"
#include "pipelines/plan_impl.h"

/* ---- parse ---- */

/* numpy.add.accumulate's default result dtype on a 64-bit platform:
 * integers narrower than int64 (and bool) widen to int64, unsigned ones
 * to uint64; the rest keep theirs. */
static ck_dtype default_dtype(ck_dtype t)
{
    switch (t) {
    case CK_BOOL:
    case CK_I8:
    case CK_I16:
    case CK_I32:
        return CK_I64;
    case CK_U8:
    case CK_U16:
    case CK_U32:
        return CK_U64;
    default:
        return t;
    }
}

/* Output chunk of a flattened scan: runs of whole rows (the operand's
 * first axis) of about the operand's chunk band along that axis, so that
 * each output chunk reads one band of the operand's chunks; bands over
 * FLAT_BYTES are cut into pieces of whole rows, and rows over FLAT_BYTES
 * into pieces of an operand chunk's size. */
#define FLAT_BYTES ((int64_t)4 << 20)

static int64_t flat_chunk(const ck_node *m, int64_t total, size_t esz)
{
    int64_t inner = 1, cb = 1, cap = FLAT_BYTES / (int64_t)esz, c;

    if (m->ndim == 0 || total <= 0)
        return 1;
    for (int d = 0; d < m->ndim; d++)
        cb *= m->chunks[d] < m->shape[d] ? m->chunks[d] : m->shape[d];
    for (int d = 1; d < m->ndim; d++)
        inner *= m->shape[d];
    if (inner > cap) {
        c = cb > 0 ? cb : 1;
    } else {
        int64_t band = m->chunks[0] < m->shape[0] ? m->chunks[0] : m->shape[0];
        int64_t pieces = (band * inner + cap - 1) / cap;
        if (band < 1)
            band = 1;
        if (pieces < 1)
            pieces = 1;
        c = (band + pieces - 1) / pieces * inner;
    }
    return c < total ? (c > 0 ? c : 1) : total;
}

CK_PLAN_PARSE_FN(scan)
{
    const cJSON *ax = cJSON_GetObjectItem(step, "axis");
    const cJSON *dt = cJSON_GetObjectItem(step, "dtype");
    const char *op = sub == CK_SCAN_CUMPROD ? "cumprod" : "cumsum";
    const ck_node *m;

    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    if (dt && !cJSON_IsNull(dt)) {
        ck_err local = {0};
        if (!cJSON_IsString(dt) ||
            ck_dtype_parse(dt->valuestring, &n->dtype, &local) != CK_OK)
            return ck_plan_bad(err, path, where, "dtype: %s",
                               local.msg[0] ? local.msg
                                            : "must be a dtype name such as "
                                              "\"float64\" or null");
    } else {
        n->dtype = default_dtype(m->dtype);
    }
    if (!ax || cJSON_IsNull(ax)) { /* flattened, as NumPy's default */
        int64_t total = 1;
        for (int d = 0; d < m->ndim; d++)
            total *= m->shape[d];
        n->axis = 0;
        n->ndim = 1;
        n->shape[0] = total;
        n->chunks[0] =
            m->ndim == 1
                ? m->chunks[0]
                : flat_chunk(m, total,
                             ck_dtype_size(n->dtype) > ck_dtype_size(m->dtype)
                                 ? ck_dtype_size(n->dtype)
                                 : ck_dtype_size(m->dtype));
        return CK_OK;
    }
    if (!ck_plan_is_int(ax))
        return ck_plan_bad(err, path, where,
                           "axis must be an integer or null (%s takes one "
                           "axis, or none for the flattened array)",
                           op);
    if (ax->valuedouble < -m->ndim || ax->valuedouble >= m->ndim)
        return ck_plan_bad(err, path, where,
                           "axis %g out of range for a %d-D array",
                           ax->valuedouble, m->ndim);
    n->axis = (int)ax->valuedouble;
    if (n->axis < 0)
        n->axis += m->ndim;
    n->ndim = m->ndim;
    memcpy(n->shape, m->shape, sizeof n->shape);
    ck_plan_first_chunks(p, n);
    return CK_OK;
}

/* ---- the scan itself ---- */

/* Scans data (C order, outer x len x inner, the axis in the middle) in
 * place along the axis, starting from carry (outer x inner: the running
 * values before the first row), or from the first row itself when carry
 * is NULL. */
typedef void (*scan_fn)(void *data, const void *carry, int64_t outer,
                        int64_t len, int64_t inner);

#define SCAN_FN(name, T, EXPR)                                                 \
    static void name(void *data, const void *carry, int64_t outer,             \
                     int64_t len, int64_t inner)                               \
    {                                                                          \
        for (int64_t o = 0; o < outer; o++) {                                  \
            T *x = (T *)data + o * len * inner;                                \
            const T *c = carry ? (const T *)carry + o * inner : NULL;          \
            if (c && len > 0)                                                  \
                for (int64_t t = 0; t < inner; t++) {                          \
                    T a = c[t], b = x[t];                                      \
                    x[t] = (T)(EXPR);                                          \
                }                                                              \
            for (int64_t j = 1; j < len; j++) {                                \
                T *y = x + j * inner;                                          \
                const T *q = y - inner;                                        \
                for (int64_t t = 0; t < inner; t++) {                          \
                    T a = q[t], b = y[t];                                      \
                    y[t] = (T)(EXPR);                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }

/* Integers wrap as NumPy's do: the arithmetic is done modulo 2^64 and
 * cut to the type's width. */
#define ADD_INT ((uint64_t)a + (uint64_t)b)
#define MUL_INT ((uint64_t)a * (uint64_t)b)
SCAN_FN(add_bool, uint8_t, (a | b) != 0)
SCAN_FN(mul_bool, uint8_t, (a & b) != 0)
SCAN_FN(add_i8, int8_t, ADD_INT)
SCAN_FN(mul_i8, int8_t, MUL_INT)
SCAN_FN(add_i16, int16_t, ADD_INT)
SCAN_FN(mul_i16, int16_t, MUL_INT)
SCAN_FN(add_i32, int32_t, ADD_INT)
SCAN_FN(mul_i32, int32_t, MUL_INT)
SCAN_FN(add_i64, int64_t, ADD_INT)
SCAN_FN(mul_i64, int64_t, MUL_INT)
SCAN_FN(add_u8, uint8_t, ADD_INT)
SCAN_FN(mul_u8, uint8_t, MUL_INT)
SCAN_FN(add_u16, uint16_t, ADD_INT)
SCAN_FN(mul_u16, uint16_t, MUL_INT)
SCAN_FN(add_u32, uint32_t, ADD_INT)
SCAN_FN(mul_u32, uint32_t, MUL_INT)
SCAN_FN(add_u64, uint64_t, ADD_INT)
SCAN_FN(mul_u64, uint64_t, MUL_INT)
SCAN_FN(add_f32, float, a + b)
SCAN_FN(mul_f32, float, (a) * (b))
SCAN_FN(add_f64, double, a + b)
SCAN_FN(mul_f64, double, (a) * (b))

static scan_fn scan_for(const ck_node *nd)
{
    static const scan_fn fns[2][CK_DT_COUNT] = {
        {[CK_BOOL] = add_bool,
         [CK_I8] = add_i8,
         [CK_I16] = add_i16,
         [CK_I32] = add_i32,
         [CK_I64] = add_i64,
         [CK_U8] = add_u8,
         [CK_U16] = add_u16,
         [CK_U32] = add_u32,
         [CK_U64] = add_u64,
         [CK_F32] = add_f32,
         [CK_F64] = add_f64},
        {[CK_BOOL] = mul_bool,
         [CK_I8] = mul_i8,
         [CK_I16] = mul_i16,
         [CK_I32] = mul_i32,
         [CK_I64] = mul_i64,
         [CK_U8] = mul_u8,
         [CK_U16] = mul_u16,
         [CK_U32] = mul_u32,
         [CK_U64] = mul_u64,
         [CK_F32] = mul_f32,
         [CK_F64] = mul_f64},
    };
    return fns[nd->sub == CK_SCAN_CUMPROD][nd->dtype];
}

/* ---- geometry ---- */

/* A step without an axis scans its operand flattened: the step is 1-D and
 * the operand is not (a 1-D operand flattened is itself). */
static int is_flat(const xrun *r, const ck_node *nd)
{
    return nd->ndim != r->p->node[nd->arg[0]].ndim;
}

/* The step's chunk length along axis d (as the outputs clip it). */
static int64_t clen(const ck_node *nd, int d)
{
    int64_t c = nd->chunks[d] < nd->shape[d] ? nd->chunks[d] : nd->shape[d];
    return c > 0 ? c : 1;
}

static size_t chunk_nelem(const ck_node *nd)
{
    size_t n = 1;
    for (int d = 0; d < nd->ndim; d++)
        n *= (size_t)clen(nd, d);
    return n;
}

/* The axes before and after the axis, as products. */
static void split(const ck_node *nd, const int64_t *shape, int64_t *outer,
                  int64_t *inner)
{
    *outer = *inner = 1;
    for (int d = 0; d < nd->ndim; d++) {
        if (d < nd->axis)
            *outer *= shape[d];
        else if (d > nd->axis)
            *inner *= shape[d];
    }
}

/* ---- the operand's values over a box, in the step's dtype ---- */

typedef struct flat_ctx {
    xrun *r;
    const ck_node *nd, *m;
    char *dst;
    ck_arena *a;
    int64_t bst[CK_MAX_DIMS], bsh[CK_MAX_DIMS];
} flat_ctx;

/* The operand's box f->bst/f->bsh, appended at f->dst. */
static ck_code flat_piece(flat_ctx *f, ck_err *err)
{
    size_t n = (size_t)ck_exec_nelem(f->m->ndim, f->bsh);
    size_t mark = f->a->used;
    void *v = f->dst;
    ck_code rc;

    if (f->m->dtype != f->nd->dtype &&
        !(v = ck_arena_alloc(f->a, n * ck_dtype_size(f->m->dtype))))
        return ck_exec_no_room(err);
    rc = ck_exec_eval(f->r, f->nd->arg[0], f->bst, f->bsh, v, f->a, err);
    if (rc == CK_OK && v != f->dst)
        ck_dtype_convert(f->nd->dtype, f->dst, f->m->dtype, v, n);
    f->dst += n * ck_dtype_size(f->nd->dtype);
    f->a->used = mark;
    return rc;
}

/* The operand's elements lo .. hi-1 in C order of its axes d and on, the
 * axes before d fixed at f->bst[] (a partial row, then whole rows, then a
 * partial row): at most 2 * ndim - 1 boxes, in order. */
static ck_code flat_span(flat_ctx *f, int d, int64_t lo, int64_t hi,
                         ck_err *err)
{
    const ck_node *m = f->m;
    int64_t row = 1, i0, i1;

    if (lo >= hi)
        return CK_OK;
    if (d == m->ndim) /* a 0-D operand: its one element */
        return flat_piece(f, err);
    for (int e = d + 1; e < m->ndim; e++)
        row *= m->shape[e];
    i0 = lo / row;
    i1 = hi / row;
    if (lo % row) {
        int64_t end = (i0 + 1) * row < hi ? (i0 + 1) * row : hi;
        f->bst[d] = i0;
        f->bsh[d] = 1;
        CK_TRY(flat_span(f, d + 1, lo - i0 * row, end - i0 * row, err));
        lo = end;
        i0++;
    }
    if (lo >= hi)
        return CK_OK;
    if (i1 > i0) {
        f->bst[d] = i0;
        f->bsh[d] = i1 - i0;
        for (int e = d + 1; e < m->ndim; e++) {
            f->bst[e] = 0;
            f->bsh[e] = m->shape[e];
        }
        CK_TRY(flat_piece(f, err));
        lo = i1 * row;
    }
    if (lo < hi) {
        f->bst[d] = i1;
        f->bsh[d] = 1;
        CK_TRY(flat_span(f, d + 1, 0, hi - lo, err));
    }
    return CK_OK;
}

/* The operand's values over the step's box start/shape, converted to the
 * step's dtype, into dst; the arena is left as it was found. */
static ck_code load(xrun *r, int i, const int64_t *start, const int64_t *shape,
                    void *dst, ck_arena *a, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    size_t n = (size_t)ck_exec_nelem(nd->ndim, shape), mark = a->used;
    void *v = dst;
    ck_code rc;

    if (is_flat(r, nd)) {
        flat_ctx f = {.r = r, .nd = nd, .m = m, .dst = dst, .a = a};
        return flat_span(&f, 0, start[0], start[0] + shape[0], err);
    }
    if (m->dtype != nd->dtype &&
        !(v = ck_arena_alloc(a, n * ck_dtype_size(m->dtype))))
        return ck_exec_no_room(err);
    rc = ck_exec_eval(r, nd->arg[0], start, shape, v, a, err);
    if (rc == CK_OK && v != dst)
        ck_dtype_convert(nd->dtype, dst, m->dtype, v, n);
    a->used = mark;
    return rc;
}

static size_t load_bytes(const xrun *r, int i, size_t n, int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    size_t b =
        m->dtype != nd->dtype ? ck_exec_al(n * ck_dtype_size(m->dtype)) : 0;

    return b + ck_exec_bytes(r, nd->arg[0], n, -1, aligned && !is_flat(r, nd));
}

/* ---- boxes ---- */

/* The carries' cross-section: the step's shape with the axis 1. */
static void cross_shape(const ck_node *nd, int64_t *cs)
{
    memcpy(cs, nd->shape, sizeof(int64_t) * (size_t)nd->ndim);
    cs[nd->axis] = 1;
}

/* The running values at the end of chunk k along the axis over the
 * cross-section of the box start/shape, into row (box layout). */
static void get_carry(const xrun *r, int i, int64_t k, const int64_t *start,
                      const int64_t *shape, void *row)
{
    const ck_node *nd = &r->p->node[i];
    size_t esz = ck_dtype_size(nd->dtype);
    int64_t cs[CK_MAX_DIMS], off[CK_MAX_DIMS], box[CK_MAX_DIMS];
    int64_t zero[CK_MAX_DIMS] = {0};

    cross_shape(nd, cs);
    memcpy(off, start, sizeof(int64_t) * (size_t)nd->ndim);
    memcpy(box, shape, sizeof(int64_t) * (size_t)nd->ndim);
    off[nd->axis] = 0;
    box[nd->axis] = 1;
    ck_box_copy(nd->ndim, esz, row, box, zero,
                (const char *)r->x[i].carry +
                    (size_t)k * (size_t)ck_exec_nelem(nd->ndim, cs) * esz,
                cs, off, NULL, box);
}

/* The last row along the axis of data (outer x len x inner) into row. */
static void last_row(const void *data, void *row, int64_t outer, int64_t len,
                     int64_t inner, size_t esz)
{
    size_t rb = (size_t)inner * esz;

    for (int64_t o = 0; o < outer; o++)
        memcpy((char *)row + (size_t)o * rb,
               (const char *)data + ((size_t)(o * len + len - 1)) * rb, rb);
}

/* A box: its cross-section of carries (X elements: at most n, or a
 * chunk's cross-section for the step's own chunks) and its operand's
 * values; a box that starts inside a chunk reads the chunk's part before
 * it through dst, in pieces of its own size. */
size_t ck_exec_scan_bytes(const xrun *r, int i, size_t n, int known,
                          int aligned)
{
    const ck_node *nd = &r->p->node[i];
    size_t cross = n;

    (void)known; /* no memo reaches the operand through load() */
    if (aligned) {
        size_t cc = chunk_nelem(nd) / (size_t)clen(nd, nd->axis);
        cross = cc < n ? cc : n;
    }
    return ck_exec_al(cross * ck_dtype_size(nd->dtype)) +
           load_bytes(r, i, n, aligned);
}

ck_code ck_exec_scan_eval(xrun *r, int i, const int64_t *start,
                          const int64_t *shape, void *dst, ck_arena *a,
                          const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    int ax = nd->axis;
    size_t esz = ck_dtype_size(nd->dtype);
    size_t n = (size_t)ck_exec_nelem(nd->ndim, shape);
    int64_t c = clen(nd, ax), k0 = start[ax] / c, pos = k0 * c;
    int64_t outer, inner;
    scan_fn scan = scan_for(nd);
    void *row = NULL;

    (void)mm;
    if (n == 0)
        return CK_OK;
    split(nd, shape, &outer, &inner);
    if ((k0 > 0 || pos < start[ax]) &&
        !(row = ck_arena_alloc(a, (size_t)(outer * inner) * esz)))
        return ck_exec_no_room(err);
    if (k0 > 0) {
        if (!r->x[i].carry)
            return ck_err_internal(err, "run: %s: scanned before its run",
                                   nd->name);
        get_carry(r, i, k0 - 1, start, shape, row);
    }
    if (pos < start[ax]) {
        /* the chunk's part before the box, in pieces of the box's size */
        int64_t bst[CK_MAX_DIMS], bsh[CK_MAX_DIMS];
        int have = k0 > 0;
        memcpy(bst, start, sizeof(int64_t) * (size_t)nd->ndim);
        memcpy(bsh, shape, sizeof(int64_t) * (size_t)nd->ndim);
        while (pos < start[ax]) {
            int64_t len =
                start[ax] - pos < shape[ax] ? start[ax] - pos : shape[ax];
            bst[ax] = pos;
            bsh[ax] = len;
            CK_TRY(load(r, i, bst, bsh, dst, a, err));
            scan(dst, have ? row : NULL, outer, len, inner);
            last_row(dst, row, outer, len, inner, esz);
            have = 1;
            pos += len;
        }
    }
    CK_TRY(load(r, i, start, shape, dst, a, err));
    scan(dst, row, outer, shape[ax], inner);
    return CK_OK;
}

/* ---- the run: carries, chunk by chunk along the axis ----
 *
 * The tasks are the step's chunks but the last along the axis, chunk
 * index along the axis first: task t is cross-section block t % ncs of
 * chunk t / ncs.  A window of tasks is read in parallel, one a slot; then
 * each cross-section block's tasks in the window are scanned in order
 * (blocks side by side), each from the carry the task before it left. */

enum { MAX_SLOTS = 64 };

typedef struct srun {
    xrun *r;
    int i;
    int64_t ncs;               /* cross-section blocks */
    int64_t c0, lc;            /* this rank's: c0 .. c0 + lc - 1 */
    int64_t grid[CK_MAX_DIMS]; /* chunks along each axis */
    int64_t t0, nt;            /* the window: tasks t0 .. t0+nt-1 */
    int64_t next;              /* atomic */
    size_t data_bytes;         /* a slot: a chunk's values, then a carry row */
    char *slot[MAX_SLOTS];
    ck_arena arena[MAX_SLOTS];
} srun;

static void task_box(const srun *s, int64_t t, int64_t *start, int64_t *shape)
{
    const ck_node *nd = &s->r->p->node[s->i];
    int64_t k = t / s->ncs, cs = t % s->ncs;

    for (int d = nd->ndim - 1; d >= 0; d--) {
        int64_t c = clen(nd, d), idx;
        if (d == nd->axis) {
            idx = k;
        } else {
            idx = cs % s->grid[d];
            cs /= s->grid[d];
        }
        start[d] = idx * c;
        shape[d] = nd->shape[d] - start[d] < c ? nd->shape[d] - start[d] : c;
    }
}

/* The task of this rank's u-th: tasks are numbered over its blocks. */
static int64_t gtask(const srun *s, int64_t u)
{
    return u / s->lc * s->ncs + s->c0 + u % s->lc;
}

/* The carries of rank q's blocks at every chunk boundary along the axis
 * (ck_comm_piece_fn): packed one box after the other into buf (dir > 0),
 * unpacked from it (dir < 0), or only counted (dir 0).  Returns their
 * bytes. */
typedef struct carry_share {
    const srun *s;
    int64_t nk;
} carry_share;

static size_t carry_boxes(void *ctx, int q, void *buf, int dir)
{
    const carry_share *cx = ctx;
    const srun *s = cx->s;
    const ck_node *nd = &s->r->p->node[s->i];
    size_t esz = ck_dtype_size(nd->dtype);
    int64_t cs[CK_MAX_DIMS], zero[CK_MAX_DIMS] = {0}, at = 0, xfull, c0, c1;

    ck_comm_split(s->ncs, q, ck_comm_size(), &c0, &c1);
    cross_shape(nd, cs);
    xfull = ck_exec_nelem(nd->ndim, cs);
    for (int64_t k = 0; k + 1 < cx->nk; k++)
        for (int64_t c = c0; c < c1; c++) {
            int64_t off[CK_MAX_DIMS], box[CK_MAX_DIMS];
            char *carry =
                (char *)s->r->x[s->i].carry + (size_t)k * (size_t)xfull * esz;
            char *at_buf = dir ? (char *)buf + (size_t)at * esz : NULL;
            task_box(s, k * s->ncs + c, off, box);
            off[nd->axis] = 0;
            box[nd->axis] = 1;
            if (dir > 0)
                ck_box_copy(nd->ndim, esz, at_buf, box, zero, carry, cs, off,
                            NULL, box);
            else if (dir < 0)
                ck_box_copy(nd->ndim, esz, carry, cs, off, at_buf, box, zero,
                            NULL, box);
            at += ck_exec_nelem(nd->ndim, box);
        }
    return (size_t)at * esz;
}

static ck_code read_worker(void *ctx, int id, ck_par *par, ck_err *err)
{
    srun *s = ctx;
    ck_code rc = CK_OK;

    while (rc == CK_OK && !ck_par_stopped(par)) {
        int64_t w = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
        int64_t start[CK_MAX_DIMS], shape[CK_MAX_DIMS];
        if (w >= s->nt)
            break;
        task_box(s, gtask(s, s->t0 + w), start, shape);
        ck_arena_reset(&s->arena[id]);
        rc = load(s->r, s->i, start, shape, s->slot[w], &s->arena[id], err);
    }
    return rc;
}

static ck_code scan_worker(void *ctx, int id, ck_par *par, ck_err *err)
{
    srun *s = ctx;
    const ck_node *nd = &s->r->p->node[s->i];
    size_t esz = ck_dtype_size(nd->dtype);
    int64_t groups = s->nt < s->lc ? s->nt : s->lc, cs[CK_MAX_DIMS];
    int64_t xfull;
    scan_fn scan = scan_for(nd);

    (void)id, (void)err;
    cross_shape(nd, cs);
    xfull = ck_exec_nelem(nd->ndim, cs);
    while (!ck_par_stopped(par)) {
        int64_t g = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
        if (g >= groups)
            break;
        for (int64_t w = g; w < s->nt; w += s->lc) {
            int64_t start[CK_MAX_DIMS], shape[CK_MAX_DIMS], off[CK_MAX_DIMS];
            int64_t src[CK_MAX_DIMS] = {0}, box[CK_MAX_DIMS], outer, inner;
            int64_t t = gtask(s, s->t0 + w), k = t / s->ncs;
            char *data = s->slot[w], *row = data + s->data_bytes;
            task_box(s, t, start, shape);
            split(nd, shape, &outer, &inner);
            if (k > 0)
                get_carry(s->r, s->i, k - 1, start, shape, row);
            scan(data, k > 0 ? row : NULL, outer, shape[nd->axis], inner);
            /* its last row is the carry into chunk k + 1 */
            memcpy(off, start, sizeof off);
            memcpy(box, shape, sizeof box);
            off[nd->axis] = 0;
            box[nd->axis] = 1;
            src[nd->axis] = shape[nd->axis] - 1;
            ck_box_copy(nd->ndim, esz,
                        (char *)s->r->x[s->i].carry +
                            (size_t)k * (size_t)xfull * esz,
                        cs, off, data, shape, src, NULL, box);
        }
    }
    return CK_OK;
}

ck_code ck_exec_run_scan(xrun *r, int i, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const char *op = nd->sub == CK_SCAN_CUMPROD ? "cumprod" : "cumsum";
    size_t esz = ck_dtype_size(nd->dtype), cn = chunk_nelem(nd);
    int64_t nk =
        (nd->shape[nd->axis] + clen(nd, nd->axis) - 1) / clen(nd, nd->axis);
    int64_t cs[CK_MAX_DIMS], ntasks, carry_bytes, per, left, slots_bytes = 0;
    size_t arena_bytes;
    int threads = r->o->threads > 0 ? r->o->threads : ck_ncpus(), nw;
    char have[32], need[32];
    srun *s;
    ck_code rc = CK_OK;

    if (ck_exec_nelem(nd->ndim, nd->shape) == 0 || nk <= 1)
        return CK_OK; /* one chunk along the axis: nothing carried */
    cross_shape(nd, cs);
    carry_bytes = (nk - 1) * ck_exec_nelem(nd->ndim, cs) * (int64_t)esz;
    left = r->budget.limit - r->budget.used;
    if (carry_bytes > left)
        return ck_err_set(
            err, CK_ENOMEM,
            "--memory %s is too small for %s step '%s': the running values "
            "carried between its %lld chunks along axis %d need %s more "
            "(raise --memory, or rechunk its operand to fewer, longer "
            "chunks along that axis)",
            ck_size_str((double)r->budget.limit, have, sizeof have), op,
            nd->name, (long long)nk, nd->axis,
            ck_need_str((double)carry_bytes, need, sizeof need));
    CK_TRY(ck_budget_charge(&r->budget, carry_bytes, "scan carries", err));
    if (!(r->x[i].carry = ck_alloc_large((size_t)carry_bytes))) {
        ck_budget_release(&r->budget, carry_bytes);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    if (!(s = calloc(1, sizeof *s)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    s->r = r;
    s->i = i;
    s->ncs = 1;
    for (int d = 0; d < nd->ndim; d++) {
        s->grid[d] = (nd->shape[d] + clen(nd, d) - 1) / clen(nd, d);
        if (d != nd->axis)
            s->ncs *= s->grid[d];
    }
    ck_comm_split(s->ncs, ck_comm_rank(), ck_comm_size(), &s->c0, &per);
    s->lc = per - s->c0;
    ntasks = s->lc * (nk - 1);
    if (ntasks == 0)
        goto done; /* another rank's blocks: the carries come from it */
    /* a worker: its slot (a chunk and a carry row) and its arena */
    s->data_bytes = ck_exec_al(cn * esz);
    arena_bytes = load_bytes(r, i, cn, 1) + 256;
    per = (int64_t)(2 * s->data_bytes + arena_bytes);
    left = r->budget.limit - r->budget.used;
    nw = threads < MAX_SLOTS ? threads : MAX_SLOTS;
    if (nw > ntasks)
        nw = (int)ntasks;
    if ((int64_t)nw * per > left)
        nw = (int)(left / per);
    if (nw < 1) {
        rc = ck_err_set(
            err, CK_ENOMEM,
            "--memory %s is too small for %s step '%s': reading a chunk "
            "to find the running values between chunks needs %s more "
            "(raise --memory or use smaller chunks)",
            ck_size_str((double)r->budget.limit, have, sizeof have), op,
            nd->name, ck_need_str((double)per, need, sizeof need));
        goto done;
    }
    slots_bytes = (int64_t)nw * (int64_t)(2 * s->data_bytes);
    rc = ck_budget_charge(&r->budget, slots_bytes, "scan blocks", err);
    if (rc != CK_OK) {
        slots_bytes = 0;
        goto done;
    }
    for (int w = 0; rc == CK_OK && w < nw; w++) {
        if (!(s->slot[w] = ck_alloc_large(2 * s->data_bytes)))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        else
            rc = ck_arena_reserve(&s->arena[w], &r->budget, arena_bytes,
                                  "scan reads", err);
    }
    /* several workers each read a chunk: BLAS (a matmul operand) then
     * runs one thread per call */
    if (nw > 1)
        ck_be_set_threads(&r->be, 1);
    for (s->t0 = 0; rc == CK_OK && s->t0 < ntasks; s->t0 += nw) {
        int64_t groups;
        s->nt = ntasks - s->t0 < nw ? ntasks - s->t0 : nw;
        s->next = 0;
        rc = ck_par_run((int)s->nt, read_worker, s, err);
        if (rc != CK_OK)
            break;
        groups = s->nt < s->lc ? s->nt : s->lc;
        s->next = 0;
        rc = ck_par_run((int)groups, scan_worker, s, err);
    }
    if (nw > 1)
        ck_be_set_threads(&r->be, 0);
done:
    for (int w = 0; w < MAX_SLOTS; w++) {
        free(s->slot[w]);
        s->slot[w] = NULL;
        ck_arena_release(&s->arena[w]);
    }
    ck_budget_release(&r->budget, slots_bytes);
    if (ck_comm_size() > 1) {
        carry_share sh = {s, nk};
        rc = ck_comm_share(carry_boxes, &sh, &r->budget, rc, err);
    }
    free(s);
    return rc;
}
