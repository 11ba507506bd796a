/*
 * io/hdf5/h5_read.c - chunks read from an HDF5 dataset.
 * Three paths: raw chunk bytes (pread() through an index of chunk
 * locations, or H5Dread_chunk under the lock) decoded outside the lock
 * with io/codec.c; contiguous byte runs pread() without the lock; H5Dread
 * under the lock for everything else.  Also chunk views (mmap) and the
 * raw-bytes slot of region reads.  Opening datasets is h5.c's job, and
 * nothing here writes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/hdf5/h5_impl.h"
#include "io/oserr.h"
#include "io/hdf5/zstd_filter.h"

/* HDF5 1.10's fletcher32 filter takes the last 4 bytes of a stored chunk
 * as its checksum without checking that there are 4: a shorter chunk
 * makes it read far outside the buffer (a SIGSEGV in libhdf5, found by
 * tests/fuzz/fuzz_h5_chunks).  1 with *size set when chunk 'off' of a
 * pipeline with fletcher32 is that short.  Lock held. */
static int fletcher_short(const h5_array *ha, const hsize_t *off, hsize_t *size)
{
    for (int i = 0; i < ha->nfilt; i++) {
        if (ha->filt[i] != H5Z_FILTER_FLETCHER32)
            continue;
        if (H5Dget_chunk_storage_size(ha->dset, off, size) < 0) {
            H5Eclear2(H5E_DEFAULT); /* never written: nothing to check */
            return 0;
        }
        return *size > 0 && *size < 4;
    }
    return 0;
}

/* Reads the element box of chunk 'coords' with H5Dread into dst (a full
 * chunk), converting to the native type.  Holds the ck_h5_lock throughout. */
static ck_code read_h5(ck_array *a, const int64_t *coords, void *dst,
                       ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_array_info *info = &a->info;
    hsize_t start[CK_MAX_DIMS], count[CK_MAX_DIMS], full[CK_MAX_DIMS];
    hsize_t zero[CK_MAX_DIMS] = {0}, stored = 0;
    hid_t fspace = -1, mspace = -1;
    ck_code rc = CK_OK;
    char cs[600];

    for (int d = 0; d < info->ndim; d++) {
        int64_t s0 = coords[d] * info->chunks[d];
        int64_t n = info->shape[d] - s0;
        start[d] = (hsize_t)s0;
        count[d] = (hsize_t)(n < info->chunks[d] ? n : info->chunks[d]);
        full[d] = (hsize_t)info->chunks[d];
    }
    ck_h5_lock();
    if (ha->hs->file < 0) {
        rc = ck_err_set(err, CK_EUSAGE, "%s:%s: file already closed",
                        a->store->path, info->name);
        goto out;
    }
    if (fletcher_short(ha, start, &stored)) {
        rc = ck_err_set(err, CK_ECORRUPT,
                        "%s:%s: chunk %s: %llu bytes stored, too short for "
                        "its fletcher32 checksum",
                        a->store->path, info->name,
                        ck_h5_chunk_str(a, coords, cs, sizeof cs),
                        (unsigned long long)stored);
        goto out;
    }
    if (info->ndim > 0) {
        if ((fspace = H5Dget_space(ha->dset)) < 0 ||
            H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count,
                                NULL) < 0 ||
            (mspace = H5Screate_simple(info->ndim, full, NULL)) < 0 ||
            H5Sselect_hyperslab(mspace, H5S_SELECT_SET, zero, NULL, count,
                                NULL) < 0) {
            rc = ck_h5_fail(err, CK_EIO, "%s:%s: chunk %s: bad selection",
                            a->store->path, info->name,
                            ck_h5_chunk_str(a, coords, cs, sizeof cs));
            goto out;
        }
    }
    if (H5Dread(ha->dset, ha->mtype, info->ndim > 0 ? mspace : H5S_ALL,
                info->ndim > 0 ? fspace : H5S_ALL, H5P_DEFAULT, dst) < 0)
        rc = ck_h5_fail(err, CK_OK, "%s:%s: chunk %s", a->store->path,
                        info->name, ck_h5_chunk_str(a, coords, cs, sizeof cs));
out:
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    ck_h5_unlock();
    return rc;
}

/* pread()s exactly n bytes at off; CK_ECORRUPT when the file is short. */
static ck_code pread_all(ck_array *a, const int64_t *coords, void *buf,
                         size_t n, uint64_t off, ck_err *err)
{
    char cs[600];
    size_t got = 0;

    if (off > (uint64_t)INT64_MAX - n)
        return ck_err_set(err, CK_ECORRUPT, "%s:%s: chunk %s: bad address",
                          a->store->path, a->info.name,
                          ck_h5_chunk_str(a, coords, cs, sizeof cs));
    while (got < n) {
        ssize_t r = pread(((h5_array *)a->impl)->hs->fd, (char *)buf + got,
                          n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ck_os_fail(err, CK_EIO, errno, "%s:%s: chunk %s",
                              a->store->path, a->info.name,
                              ck_h5_chunk_str(a, coords, cs, sizeof cs));
        if (r == 0)
            return ck_err_set(err, CK_ECORRUPT,
                              "%s:%s: chunk %s: %zu of %zu bytes at offset "
                              "%llu (file truncated?)",
                              a->store->path, a->info.name,
                              ck_h5_chunk_str(a, coords, cs, sizeof cs), got, n,
                              (unsigned long long)off);
        got += (size_t)r;
    }
    return CK_OK;
}

static ck_code read_raw_contig(ck_array *a, const int64_t *coords, void *dst,
                               ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_array_info *info = &a->info;
    int64_t first = 0, n = 1;

    /* Row-major offset of the chunk's first element; all but one axis are
     * whole or 1 wide, so the chunk is the next n elements. */
    for (int d = 0; d < info->ndim; d++) {
        int64_t s0 = coords[d] * info->chunks[d];
        int64_t len = info->shape[d] - s0;
        first = first * info->shape[d] + s0;
        n *= len < info->chunks[d] ? len : info->chunks[d];
    }
    CK_TRY(pread_all(a, coords, dst, (size_t)n * ha->esize,
                     (uint64_t)ha->contig_addr + (uint64_t)first * ha->esize,
                     err));
    if (ha->swap)
        ck_byteswap(dst, ha->esize, (size_t)n);
    return CK_OK;
}

/* Chunk-location indexes are made for datasets of at most this many
 * chunks: HDF5 1.10 finds the i-th chunk by walking the chunk index (about
 * 10 ns a chunk), so the whole table costs INDEX_MAX^2 / 2 steps (~20 ms). */
#define INDEX_MAX 2048

/* Fills ha->index from H5Dget_chunk_info, under the ck_h5_lock.  Left unused
 * (index_state -1) for a file with a user block (HDF5 1.10 reports chunk
 * addresses relative to the superblock), for too many chunks, or when
 * HDF5 does not answer. */
static void build_index(ck_array *a)
{
    h5_array *ha = a->impl;
    const ck_grid *g = &a->grid;
    hid_t fcpl, space = -1;
    hsize_t n = 0, ub = 1;
    struct h5_loc *t = NULL;
    int ok;

    ok = ha->hs->fd >= 0 && ha->hs->file >= 0 && !ha->foreign &&
         g->total_chunks <= 64 * INDEX_MAX;
    if (ok && (fcpl = H5Fget_create_plist(ha->hs->file)) >= 0) {
        ok = H5Pget_userblock(fcpl, &ub) >= 0 && ub == 0;
        H5Pclose(fcpl);
    }
    ok = ok && (space = H5Dget_space(ha->dset)) >= 0 &&
         H5Dget_num_chunks(ha->dset, space, &n) >= 0 && n <= INDEX_MAX &&
         (t = calloc((size_t)(g->total_chunks ? g->total_chunks : 1),
                     sizeof *t)) != NULL;
    for (hsize_t i = 0; ok && i < n; i++) {
        hsize_t off[CK_MAX_DIMS], size = 0;
        haddr_t addr = HADDR_UNDEF;
        unsigned mask = 0;
        int64_t lin = 0;
        ok = H5Dget_chunk_info(ha->dset, space, i, off, &mask, &addr, &size) >=
                 0 &&
             addr != HADDR_UNDEF;
        for (int d = 0; ok && d < g->ndim; d++) {
            int64_t c = (int64_t)off[d] / g->chunk[d];
            ok = (int64_t)off[d] % g->chunk[d] == 0 && c < g->nchunks[d];
            lin = lin * g->nchunks[d] + c;
        }
        if (ok) {
            t[lin].addr = (uint64_t)addr;
            t[lin].size = (uint64_t)size;
            t[lin].mask = mask;
        }
    }
    if (space >= 0)
        H5Sclose(space);
    H5Eclear2(H5E_DEFAULT);
    if (!ok)
        free(t);
    ha->index = ok ? t : NULL;
    __atomic_store_n(&ha->index_state, ok ? 1 : -1, __ATOMIC_RELEASE);
}

/* Where chunk coords is stored, from the index: 1 when the index answers
 * (*size 0: never written), 0 when the ck_h5_lock path must. */
static int indexed(ck_array *a, const int64_t *coords, uint64_t *addr,
                   hsize_t *size, uint32_t *mask)
{
    h5_array *ha = a->impl;
    int64_t lin = 0;

    if (__atomic_load_n(&ha->index_state, __ATOMIC_ACQUIRE) == 0) {
        ck_h5_lock();
        if (ha->index_state == 0)
            build_index(a);
        ck_h5_unlock();
    }
    if (__atomic_load_n(&ha->index_state, __ATOMIC_ACQUIRE) != 1)
        return 0;
    for (int d = 0; d < a->grid.ndim; d++)
        lin = lin * a->grid.nchunks[d] + coords[d];
    *addr = ha->index[lin].addr;
    *size = (hsize_t)ha->index[lin].size;
    *mask = ha->index[lin].mask;
    return 1;
}

/* ck_array_view_chunk_bytes: bytes of an indexed chunk stored whole and
 * raw, mapped. */
int ck_h5_view_chunk(ck_array *a, const int64_t *coords, size_t off, size_t len,
                     ck_chunk_view *v)
{
    h5_array *ha = a->impl;
    uint64_t addr = 0, page = (uint64_t)sysconf(_SC_PAGESIZE);
    hsize_t size = 0;
    uint32_t mask = 0;
    void *p;

    if (ha->path != PATH_RAW_CHUNK || ha->nfilt != 0 || ha->swap ||
        !indexed(a, coords, &addr, &size, &mask) || size != ha->chunk_bytes ||
        addr % ha->esize != 0 || addr > ha->hs->size ||
        ha->hs->size - addr < size)
        return 0;
    addr += off;
    size_t skip = (size_t)(addr % page);
    p = mmap(NULL, len + skip, PROT_READ, MAP_SHARED | MAP_POPULATE, ha->hs->fd,
             (off_t)(addr - skip));
    if (p == MAP_FAILED)
        return 0;
    v->base = p;
    v->len = len + skip;
    v->data = (const char *)p + skip;
    return 1;
}

/* n elements of a chunk never written: the fill value, 0 when none. */
static void fill_missing(const ck_array *a, void *dst, size_t n)
{
    ck_scalar zero = {0};

    ck_dtype_fill(a->info.dtype, dst, a->info.has_fill ? a->info.fill : zero,
                  n);
}

/* ck_array_raw: unfiltered chunks whose locations are indexed. */
int ck_h5_raw(ck_array *a)
{
    h5_array *ha = a->impl;
    uint64_t addr;
    hsize_t size;
    uint32_t mask;
    int64_t zero[CK_MAX_DIMS] = {0};

    return !ha->writing && ha->path == PATH_RAW_CHUNK && ha->nfilt == 0 &&
           indexed(a, zero, &addr, &size, &mask);
}

/* ck_store_ops.read_bytes of a raw array (ck_h5_raw). */
ck_code ck_h5_read_bytes(ck_array *a, const int64_t *coords, size_t off,
                         size_t len, void *dst, ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_array_info *info = &a->info;
    uint64_t addr = 0;
    hsize_t size = 0;
    uint32_t mask = 0;
    char cs[600];

    if (!indexed(a, coords, &addr, &size, &mask))
        return ck_err_set(err, CK_ENOTSUP, "%s:%s: chunk %s: not indexed",
                          a->store->path, info->name,
                          ck_h5_chunk_str(a, coords, cs, sizeof cs));
    if (size == 0 && addr == 0) { /* never written */
        fill_missing(a, dst, len / ha->esize);
        return CK_OK;
    }
    if (size != ha->chunk_bytes)
        return ck_err_set(err, CK_ECORRUPT,
                          "%s:%s: chunk %s: %llu bytes stored, expected %zu",
                          a->store->path, info->name,
                          ck_h5_chunk_str(a, coords, cs, sizeof cs),
                          (unsigned long long)size, ha->chunk_bytes);
    if (addr > UINT64_MAX - off)
        return ck_err_set(err, CK_ECORRUPT, "%s:%s: chunk %s: bad address",
                          a->store->path, info->name,
                          ck_h5_chunk_str(a, coords, cs, sizeof cs));
    CK_TRY(pread_all(a, coords, dst, len, addr + off, err));
    if (ha->swap)
        ck_byteswap(dst, ha->esize, len / ha->esize);
    return CK_OK;
}

/* The fast path.  A dataset of at most INDEX_MAX chunks has their
 * locations indexed once (build_index) and its chunks are pread() without
 * the ck_h5_lock, so threads copy bytes out of the page cache side by side.
 * Larger ones: H5Dget_chunk_info_by_coord would give the address, but HDF5
 * 1.10 answers it by walking every chunk (about 1 ms per lookup at
 * 100,000 chunks), so their raw bytes are fetched with H5Dread_chunk, an
 * index lookup, under the ck_h5_lock.  Either way the decode, the expensive
 * part, runs outside it. */
static ck_code read_raw_chunk(ck_array *a, const int64_t *coords, void *dst,
                              ck_arena *scratch, ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_array_info *info = &a->info;
    size_t cb = ha->chunk_bytes;
    hsize_t off[CK_MAX_DIMS], size = 0;
    uint32_t mask = 0;
    void *raw = NULL;
    char cs[600];
    ck_code rc = CK_OK;
    int missing = 0;

    ck_h5_chunk_str(a, coords, cs, sizeof cs);
    for (int d = 0; d < info->ndim; d++)
        off[d] = (hsize_t)(coords[d] * info->chunks[d]);
    /* Where the chunk is: from the index without the ck_h5_lock, or from HDF5
     * under it. */
    uint64_t addr = 0;
    int have = indexed(a, coords, &addr, &size, &mask);
    if (!have)
        ck_h5_lock();
    if (have) {
        /* never written: no address (0 is the superblock's); an address
         * with no bytes is a damaged index, caught below */
        missing = size == 0 && addr == 0;
    } else if (ha->hs->file < 0) {
        rc = ck_err_set(err, CK_EUSAGE, "%s:%s: file already closed",
                        a->store->path, info->name);
    } else if (H5Dget_chunk_storage_size(ha->dset, off, &size) < 0) {
        if (ck_h5_chunk_not_allocated())
            missing = 1;
        else
            rc = ck_h5_fail(err, CK_EFORMAT,
                            "%s:%s: chunk %s: cannot look it up",
                            a->store->path, info->name, cs);
    } else {
        missing = size == 0;
    }
    if (rc != CK_OK || missing) {
        /* nothing to fetch */
    } else if (size == 0) {
        rc = ck_err_set(
            err, CK_ECORRUPT, "%s:%s: chunk %s: stored at %llu with 0 bytes",
            a->store->path, info->name, cs, (unsigned long long)addr);
    } else if (size > ck_stored_max(cb)) {
        rc = ck_err_set(err, CK_ECORRUPT,
                        "%s:%s: chunk %s: stored size %llu is impossible for "
                        "a chunk of %zu bytes",
                        a->store->path, info->name, cs,
                        (unsigned long long)size, cb);
    } else if (ha->nfilt == 0 && size != cb) {
        rc = ck_err_set(err, CK_ECORRUPT,
                        "%s:%s: chunk %s: %llu bytes stored, expected %zu",
                        a->store->path, info->name, cs,
                        (unsigned long long)size, cb);
    } else if (!(raw = ha->nfilt == 0
                           ? dst /* the chunk itself, in place */
                           : ck_arena_alloc(scratch, (size_t)size))) {
        rc = ck_err_set(err, CK_ENOMEM, "%s:%s: scratch arena too small",
                        a->store->path, info->name);
    } else if (have) {
        rc = pread_all(a, coords, raw, (size_t)size, addr, err);
    } else if (H5Dread_chunk(ha->dset, H5P_DEFAULT, off, &mask, raw) < 0) {
        rc = ck_h5_fail(err, CK_ECORRUPT,
                        "%s:%s: chunk %s: cannot read %llu stored bytes (file "
                        "truncated?)",
                        a->store->path, info->name, cs,
                        (unsigned long long)size);
    }
    if (!have)
        ck_h5_unlock();
    if (rc != CK_OK)
        return rc;
    if (missing) {
        fill_missing(a, dst, cb / ha->esize);
        return CK_OK;
    }

    if (raw == dst) {
        if (ha->swap)
            ck_byteswap(dst, ha->esize, cb / ha->esize);
        return CK_OK;
    }
    rc = ck_h5_unfilter(ha, mask, raw, (size_t)size, dst, scratch, err);
    if (rc != CK_OK) {
        ck_err_prefix(err, "%s:%s: chunk %s", a->store->path, info->name,
                      ck_h5_chunk_str(a, coords, cs, sizeof cs));
        return rc;
    }
    if (ha->swap)
        ck_byteswap(dst, ha->esize, cb / ha->esize);
    return CK_OK;
}

/* Undoes the filters last to first, skipping those the writer skipped
 * (their bit is set in the chunk's filter mask).  Split out of
 * read_raw_chunk so that tests/fuzz/fuzz_h5_filters.c runs it on bytes
 * of its own. */
ck_code ck_h5_unfilter(const h5_array *ha, uint32_t mask, const void *raw,
                       size_t n, void *dst, ck_arena *scratch, ck_err *err)
{
    size_t cb = ha->chunk_bytes, cur_n = n;
    const void *cur = raw;
    void *tmp = NULL;
    ck_code rc = CK_OK;

    for (int i = ha->nfilt - 1; i >= 0 && rc == CK_OK; i--) {
        void *out;
        if (mask & (1u << i))
            continue;
        if (cur == dst) {
            if (!tmp && !(tmp = ck_arena_alloc(scratch, cb)))
                return ck_err_set(err, CK_ENOMEM, "scratch arena too small");
            out = tmp;
        } else {
            out = dst;
        }
        switch (ha->filt[i]) {
        case H5Z_FILTER_DEFLATE:
            rc = ck_codec_decode(CK_CODEC_ZLIB, cur, cur_n, out, cb, err);
            break;
        case CK_H5Z_FILTER_ZSTD:
            rc = ck_codec_decode(CK_CODEC_ZSTD, cur, cur_n, out, cb, err);
            break;
        case H5Z_FILTER_BLOSC_ID:
            rc = ck_codec_decode(CK_CODEC_BLOSC, cur, cur_n, out, cb, err);
            break;
        case H5Z_FILTER_SHUFFLE:
            if (cur_n != cb)
                rc = ck_err_set(err, CK_ECORRUPT, "%zu bytes, expected %zu",
                                cur_n, cb);
            else
                ck_unshuffle(ha->shuf_size[i], cur, out, cb);
            break;
        default: /* read_filters() let no other filter through */
            rc = ck_err_set(err, CK_ENOTSUP, "filter %d", (int)ha->filt[i]);
            break;
        }
        cur = out;
        cur_n = cb;
    }
    if (rc == CK_OK && cur_n != cb)
        rc = ck_err_set(err, CK_ECORRUPT, "%zu bytes, expected %zu", cur_n, cb);
    if (rc == CK_OK && cur != dst)
        memcpy(dst, cur, cb);
    return rc;
}

ck_code ck_h5_read_chunk(ck_array *a, const int64_t *coords, void *dst,
                         ck_arena *scratch, ck_err *err)
{
    h5_array *ha = a->impl;
    char cs[600];

    for (int d = 0; d < a->info.ndim; d++)
        if (coords[d] < 0 || coords[d] >= a->grid.nchunks[d])
            return ck_err_set(err, CK_EUSAGE,
                              "%s:%s: chunk %s is outside the array",
                              a->store->path, a->info.name,
                              ck_h5_chunk_str(a, coords, cs, sizeof cs));
    switch (ha->path) {
    case PATH_RAW_CHUNK:
        return read_raw_chunk(a, coords, dst, scratch, err);
    case PATH_RAW_CONTIG:
        return read_raw_contig(a, coords, dst, err);
    default:
        return read_h5(a, coords, dst, err);
    }
}
