/*
 * base/ck_grid.c - chunk grid arithmetic and the C-order chunk iterator.
 */
#include "base/ck_grid.h"

#include <stdio.h>
#include <string.h>

#include "base/ck_dtype.h"
#include "base/ck_mem.h"

ck_code ck_grid_init(ck_grid *g, int ndim, const int64_t *shape,
                     const int64_t *chunk, size_t elem_size, ck_err *err)
{
    int64_t max_elems;

    if (ndim < 0 || ndim > CK_MAX_DIMS)
        return ck_err_set(err, CK_EFORMAT, "%d dimensions (at most %d)", ndim,
                          CK_MAX_DIMS);
    if (elem_size == 0)
        elem_size = 1;
    max_elems = INT64_MAX / (int64_t)elem_size;
    memset(g, 0, sizeof *g);
    g->ndim = ndim;
    g->nelem = 1;
    g->chunk_nelem = 1;
    g->total_chunks = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return ck_err_set(err, CK_EFORMAT,
                              "dimension %d has negative size %lld", d,
                              (long long)shape[d]);
        if (chunk[d] < 1)
            return ck_err_set(err, CK_EFORMAT,
                              "chunk dimension %d is %lld (must be >= 1)", d,
                              (long long)chunk[d]);
        g->shape[d] = shape[d];
        g->chunk[d] = chunk[d];
        g->nchunks[d] = shape[d] / chunk[d] + (shape[d] % chunk[d] != 0);
        if (__builtin_mul_overflow(g->nelem, shape[d], &g->nelem) ||
            g->nelem > max_elems || g->nelem > CK_ELEMS_MAX) {
            char buf[256];
            return ck_err_set(err, CK_EFORMAT,
                              "shape %s has more elements than the limit of "
                              "2^53 (%lld)",
                              ck_coords_str(ndim, shape, buf, sizeof buf),
                              (long long)CK_ELEMS_MAX);
        }
        if (__builtin_mul_overflow(g->chunk_nelem, chunk[d], &g->chunk_nelem) ||
            g->chunk_nelem > max_elems)
            return ck_err_set(err, CK_EFORMAT,
                              "chunk shape overflows 64-bit sizes at "
                              "dimension %d",
                              d);
        /* nchunks[d] <= shape[d], so this product cannot overflow once
         * nelem did not, except when some axis is empty. */
        g->total_chunks *= g->nchunks[d];
    }
    return CK_OK;
}

ck_code ck_chunk_bytes_check(int ndim, const int64_t *chunk, size_t elem_size,
                             ck_err *err)
{
    int64_t bytes = elem_size ? (int64_t)elem_size : 1;
    int over = 0;

    for (int d = 0; d < ndim && !over; d++)
        over =
            chunk[d] > 0 && (__builtin_mul_overflow(bytes, chunk[d], &bytes) ||
                             bytes > CK_CHUNK_BYTES_MAX);
    if (over) {
        char buf[256], sz[32];
        double b = (double)elem_size;
        for (int d = 0; d < ndim; d++)
            b *= (double)chunk[d];
        return ck_err_set(err, CK_ENOTSUP,
                          "chunks %s take %s each, over the limit of 4 GiB "
                          "per chunk",
                          ck_coords_str(ndim, chunk, buf, sizeof buf),
                          ck_size_str(b, sz, sizeof sz));
    }
    return CK_OK;
}

void ck_grid_chunk(const ck_grid *g, int64_t index, ck_chunk *c)
{
    int64_t rest = index;

    c->index = index;
    for (int d = g->ndim - 1; d >= 0; d--) {
        int64_t n = g->nchunks[d];
        c->coords[d] = rest % n;
        rest /= n;
        c->start[d] = c->coords[d] * g->chunk[d];
        c->shape[d] = g->shape[d] - c->start[d] < g->chunk[d]
                          ? g->shape[d] - c->start[d]
                          : g->chunk[d];
    }
}

int64_t ck_grid_index(const ck_grid *g, const int64_t *coords)
{
    int64_t idx = 0;

    for (int d = 0; d < g->ndim; d++)
        idx = idx * g->nchunks[d] + coords[d];
    return idx;
}

int64_t ck_chunk_nelem(const ck_grid *g, const ck_chunk *c)
{
    int64_t n = 1;

    for (int d = 0; d < g->ndim; d++)
        n *= c->shape[d];
    return n;
}

ck_iter ck_iter_all(const ck_grid *g)
{
    return ck_iter_range(g, 0, g->total_chunks);
}

ck_iter ck_iter_range(const ck_grid *g, int64_t first, int64_t count)
{
    ck_iter it = {g, first, first + count};

    if (it.next < 0)
        it.next = 0;
    if (it.end > g->total_chunks || count > g->total_chunks)
        it.end = g->total_chunks;
    return it;
}

int ck_iter_next(ck_iter *it, ck_chunk *c)
{
    if (it->next >= it->end)
        return 0;
    ck_grid_chunk(it->g, it->next++, c);
    return 1;
}

/* Recursive over axes; the last axis is a memcpy when its step is 1. */
static void box_rec(int d, int ndim, size_t elem, char *dst,
                    const int64_t *dst_stride, const char *src,
                    const int64_t *src_stride, const int64_t *step,
                    const int64_t *box)
{
    if (d == ndim - 1) {
        if (step[d] == 1) {
            memcpy(dst, src, (size_t)box[d] * elem);
            return;
        }
        for (int64_t i = 0; i < box[d]; i++)
            memcpy(dst + (size_t)i * elem,
                   src + (size_t)(i * step[d] * src_stride[d]) * elem, elem);
        return;
    }
    for (int64_t i = 0; i < box[d]; i++)
        box_rec(d + 1, ndim, elem, dst + (size_t)(i * dst_stride[d]) * elem,
                dst_stride, src + (size_t)(i * step[d] * src_stride[d]) * elem,
                src_stride, step, box);
}

void ck_box_copy(int ndim, size_t elem, void *dst, const int64_t *dst_shape,
                 const int64_t *dst_off, const void *src,
                 const int64_t *src_shape, const int64_t *src_off,
                 const int64_t *src_step, const int64_t *box)
{
    int64_t ds[CK_MAX_DIMS], ss[CK_MAX_DIMS], st[CK_MAX_DIMS];
    int64_t doff = 0, soff = 0;

    if (ndim == 0) {
        memcpy(dst, src, elem);
        return;
    }
    if (ndim < 0 || ndim > CK_MAX_DIMS)
        return;
    for (int d = 0; d < ndim; d++)
        if (box[d] == 0)
            return;
    ds[ndim - 1] = ss[ndim - 1] = 1;
    for (int d = ndim - 2; d >= 0; d--) {
        ds[d] = ds[d + 1] * dst_shape[d + 1];
        ss[d] = ss[d + 1] * src_shape[d + 1];
    }
    for (int d = 0; d < ndim; d++) {
        st[d] = src_step ? src_step[d] : 1;
        doff += dst_off[d] * ds[d];
        soff += src_off[d] * ss[d];
    }
    /* Merge trailing axes that are whole in both arrays into one run, so
     * a box of full rows is a single memcpy. */
    int64_t bx[CK_MAX_DIMS], dsh[CK_MAX_DIMS], ssh[CK_MAX_DIMS];
    memcpy(bx, box, sizeof(int64_t) * (size_t)ndim);
    memcpy(dsh, dst_shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(ssh, src_shape, sizeof(int64_t) * (size_t)ndim);
    while (ndim > 1 && st[ndim - 1] == 1 && st[ndim - 2] == 1 &&
           bx[ndim - 1] == dsh[ndim - 1] && bx[ndim - 1] == ssh[ndim - 1]) {
        bx[ndim - 2] *= bx[ndim - 1];
        dsh[ndim - 2] *= dsh[ndim - 1];
        ssh[ndim - 2] *= ssh[ndim - 1];
        ds[ndim - 2] = ds[ndim - 1];
        ss[ndim - 2] = ss[ndim - 1];
        ndim--;
    }
    box_rec(0, ndim, elem, (char *)dst + (size_t)doff * elem, ds,
            (const char *)src + (size_t)soff * elem, ss, st, bx);
}

typedef struct conv_args {
    ck_dtype dt, st;
    size_t dsz, ssz;
    const int64_t *ds, *ss, *step, *box;
    int ndim;
} conv_args;

static void conv_rec(const conv_args *c, int d, char *dst, const char *src)
{
    if (d == c->ndim - 1) {
        if (c->step[d] == 1) {
            ck_dtype_convert(c->dt, dst, c->st, src, (size_t)c->box[d]);
            return;
        }
        for (int64_t i = 0; i < c->box[d]; i++)
            ck_dtype_convert(c->dt, dst + (size_t)i * c->dsz, c->st,
                             src + (size_t)(i * c->step[d] * c->ss[d]) * c->ssz,
                             1);
        return;
    }
    for (int64_t i = 0; i < c->box[d]; i++)
        conv_rec(c, d + 1, dst + (size_t)(i * c->ds[d]) * c->dsz,
                 src + (size_t)(i * c->step[d] * c->ss[d]) * c->ssz);
}

void ck_box_convert(int ndim, int dst_t, void *dst, const int64_t *dst_shape,
                    const int64_t *dst_off, int src_t, const void *src,
                    const int64_t *src_shape, const int64_t *src_off,
                    const int64_t *src_step, const int64_t *box)
{
    int64_t ds[CK_MAX_DIMS], ss[CK_MAX_DIMS], st[CK_MAX_DIMS];
    int64_t doff = 0, soff = 0;
    conv_args c;

    c.dt = (ck_dtype)dst_t;
    c.st = (ck_dtype)src_t;
    c.dsz = ck_dtype_size(c.dt);
    c.ssz = ck_dtype_size(c.st);
    if (ndim == 0) {
        ck_dtype_convert(c.dt, dst, c.st, src, 1);
        return;
    }
    if (ndim < 0 || ndim > CK_MAX_DIMS)
        return;
    for (int d = 0; d < ndim; d++)
        if (box[d] == 0)
            return;
    ds[ndim - 1] = ss[ndim - 1] = 1;
    for (int d = ndim - 2; d >= 0; d--) {
        ds[d] = ds[d + 1] * dst_shape[d + 1];
        ss[d] = ss[d + 1] * src_shape[d + 1];
    }
    for (int d = 0; d < ndim; d++) {
        st[d] = src_step ? src_step[d] : 1;
        doff += dst_off[d] * ds[d];
        soff += src_off[d] * ss[d];
    }
    c.ds = ds;
    c.ss = ss;
    c.step = st;
    c.box = box;
    c.ndim = ndim;
    conv_rec(&c, 0, (char *)dst + (size_t)doff * c.dsz,
             (const char *)src + (size_t)soff * c.ssz);
}

static void fill_run(char *p, size_t elem, const void *value, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        memcpy(p + (size_t)i * elem, value, elem);
}

void ck_box_spread(int ndim, size_t elem, void *buf, const int64_t *full,
                   const int64_t *box)
{
    int64_t idx[CK_MAX_DIMS], rows = 1;
    int last = ndim - 1;
    char *p = buf;

    if (ndim < 1 || ndim > CK_MAX_DIMS)
        return;
    for (int d = 0; d < last; d++) {
        if (box[d] == 0)
            return;
        idx[d] = box[d] - 1;
        rows *= box[d];
    }
    size_t run = (size_t)box[last] * elem;
    /* Row i of the box moves from i * box[last] to its place in full[]; a
     * row never moves down, so going from the last row keeps every row
     * not yet moved intact. */
    for (int64_t i = rows - 1; i >= 0 && run > 0; i--) {
        int64_t at = 0;
        for (int d = 0; d < last; d++)
            at = at * full[d] + idx[d];
        at *= full[last];
        if (at != i * box[last])
            memmove(p + (size_t)at * elem, p + (size_t)(i * box[last]) * elem,
                    run);
        for (int d = last - 1; d >= 0; d--) {
            if (--idx[d] >= 0)
                break;
            idx[d] = box[d] - 1;
        }
    }
}

void ck_box_pad(int ndim, size_t elem, void *buf, const int64_t *full,
                const int64_t *box, const void *value)
{
    int64_t idx[CK_MAX_DIMS] = {0}, row;
    int last = ndim - 1;
    char *p = buf;

    if (ndim < 1 || ndim > CK_MAX_DIMS)
        return;
    row = full[last];
    for (;;) {
        int outside = 0;
        for (int d = 0; d < last; d++)
            outside |= idx[d] >= box[d];
        if (outside)
            fill_run(p, elem, value, row);
        else if (box[last] < row)
            fill_run(p + (size_t)box[last] * elem, elem, value,
                     row - box[last]);
        p += (size_t)row * elem;
        int d = last - 1;
        for (; d >= 0; d--) {
            if (++idx[d] < full[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
}

const char *ck_coords_str(int ndim, const int64_t *coords, char *buf, size_t n)
{
    size_t used = 0;

    if (n == 0)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? ", " : "",
                                 (long long)coords[d]);
    if (used < n)
        snprintf(buf + used, n - used, ")");
    return buf;
}

void ck_box_compact(int ndim, size_t elem, void *buf, const int64_t *full,
                    const int64_t *box)
{
    int64_t idx[CK_MAX_DIMS] = {0};
    int last = ndim - 1;
    char *dst = buf;

    if (ndim < 1 || ndim > CK_MAX_DIMS)
        return;
    for (int d = 0; d < ndim; d++)
        if (box[d] <= 0)
            return;
    /* Row r lands at r * box[last], at or before where it starts in buf,
     * and after the end of every row already moved: moving the rows in
     * order never overwrites one still to move. */
    for (;;) {
        int64_t off = 0;
        for (int d = 0; d < ndim; d++)
            off = off * full[d] + (d < last ? idx[d] : 0);
        memmove(dst, (char *)buf + (size_t)off * elem,
                (size_t)box[last] * elem);
        dst += (size_t)box[last] * elem;
        int d = last - 1;
        for (; d >= 0; d--) {
            if (++idx[d] < box[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
}
