/*
 * base/ck_grid.h - the chunk grid, its iterator, and N-d box copies.
 * Almost all of chunkctl is a loop over chunks.  The grid does the
 * arithmetic (overflow is checked once, in ck_grid_init); the iterator is a
 * value on the stack that allocates nothing, cannot fail, and walks in C
 * order.  Threads take ranges of chunk indices and combine partial results
 * in index order, so output does not depend on the thread count.
 */
#ifndef CK_GRID_H
#define CK_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_err.h"

#define CK_MAX_DIMS 32

/* The most elements an array (or a pipeline step) may have: 2^53, where
 * doubles stop counting exactly and a single pass would take months.  A
 * header asking for more is refused before anything is allocated (see
 * LIMITS in chunkctl(1)). */
#define CK_ELEMS_MAX ((int64_t)1 << 53)

/* The most bytes one chunk may decode to: 4 GiB, HDF5's own limit.  A
 * chunk is read, decoded and written whole, so a larger one is refused at
 * open or create (ck_chunk_bytes_check). */
#define CK_CHUNK_BYTES_MAX ((int64_t)1 << 32)

typedef struct ck_grid {
    int ndim;
    int64_t shape[CK_MAX_DIMS];
    int64_t chunk[CK_MAX_DIMS];   /* full chunk shape, each >= 1 */
    int64_t nchunks[CK_MAX_DIMS]; /* chunks along each axis */
    int64_t total_chunks;         /* 0 when any axis is empty */
    int64_t nelem;                /* elements in the array */
    int64_t chunk_nelem;          /* elements in a full chunk */
} ck_grid;

typedef struct ck_chunk {
    int64_t index;               /* linear chunk number, C order */
    int64_t coords[CK_MAX_DIMS]; /* chunk coordinates */
    int64_t start[CK_MAX_DIMS];  /* first element of the chunk */
    int64_t shape[CK_MAX_DIMS];  /* element box, clipped at the array edge */
} ck_chunk;

typedef struct ck_iter {
    const ck_grid *g;
    int64_t next, end;
} ck_iter;

/* Sets up the grid.  CK_EFORMAT when ndim is outside 0..CK_MAX_DIMS, a
 * dimension is negative, a chunk dimension is < 1, or the array or one
 * chunk would take more than INT64_MAX bytes of elem_size elements (so a
 * hostile header can never make a caller allocate a wrapped size).  A 0-d
 * array is one chunk of one element. */
ck_code ck_grid_init(ck_grid *g, int ndim, const int64_t *shape,
                     const int64_t *chunk, size_t elem_size, ck_err *err);

/* CK_ENOTSUP, naming the chunk shape and CK_CHUNK_BYTES_MAX, when a chunk of
 * this shape and element size takes more than CK_CHUNK_BYTES_MAX bytes. */
ck_code ck_chunk_bytes_check(int ndim, const int64_t *chunk, size_t elem_size,
                             ck_err *err);

/* Fills *c for chunk number index (0 <= index < total_chunks). */
void ck_grid_chunk(const ck_grid *g, int64_t index, ck_chunk *c);

/* Chunk number of chunk coordinates. */
int64_t ck_grid_index(const ck_grid *g, const int64_t *coords);

/* Elements in chunk c as clipped at the edge. */
int64_t ck_chunk_nelem(const ck_grid *g, const ck_chunk *c);

ck_iter ck_iter_all(const ck_grid *g);
/* Chunks first .. first+count-1, clipped to the grid. */
ck_iter ck_iter_range(const ck_grid *g, int64_t first, int64_t count);
/* Writes the next chunk into *c and returns 1, or returns 0 at the end. */
int ck_iter_next(ck_iter *it, ck_chunk *c);

/* Copies an N-d box of elements between two C-order arrays.  The box has
 * shape box[]; it starts at src_off[] in src (of shape src_shape[]) taking
 * every src_step[]-th element along each axis (NULL: step 1), and lands at
 * dst_off[] in dst (of shape dst_shape[]).  Runs along the last axis are
 * memcpy'd when contiguous. */
void ck_box_copy(int ndim, size_t elem, void *dst, const int64_t *dst_shape,
                 const int64_t *dst_off, const void *src,
                 const int64_t *src_shape, const int64_t *src_off,
                 const int64_t *src_step, const int64_t *box);

/* ck_box_copy with a dtype change: the box is read as src_t elements and
 * written as dst_t elements (ck_dtype_convert's rules), one run at a time,
 * so only the box is converted, never the whole source. */
void ck_box_convert(int ndim, int dst_t, void *dst, const int64_t *dst_shape,
                    const int64_t *dst_off, int src_t, const void *src,
                    const int64_t *src_shape, const int64_t *src_off,
                    const int64_t *src_step, const int64_t *box);

/* Moves the C-order box of shape box[] held densely at the start of buf to
 * where it lies in buf seen as a C-order array of shape full[] (box[d] <=
 * full[d], the box at the origin), in place, last row first: an edge chunk
 * evaluated into its own buffer needs no second one.  The elements outside
 * the box are left as they are (ck_box_pad sets them). */
void ck_box_spread(int ndim, size_t elem, void *buf, const int64_t *full,
                   const int64_t *box);

/* Sets every element of buf (a C-order array of shape full[]) that lies
 * outside the box [0, box[d]) to the elem-byte value at 'value': how an
 * edge chunk read whole is given defined padding in place. */
void ck_box_pad(int ndim, size_t elem, void *buf, const int64_t *full,
                const int64_t *box, const void *value);

/* The other way round: moves the box [0, box[d]) of buf (a C-order array
 * of shape full[]) to the front of buf as a C-order array of shape box[],
 * in place.  How an edge chunk read whole becomes its clipped values. */
void ck_box_compact(int ndim, size_t elem, void *buf, const int64_t *full,
                    const int64_t *box);

/* Formats chunk coordinates as "(0, 3, 1)" into buf. */
const char *ck_coords_str(int ndim, const int64_t *coords, char *buf, size_t n);

#endif
