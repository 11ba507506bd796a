/*
 * io/hdf5/h5_write.c - datasets created and chunks written in an HDF5
 * file being written.  Sets up the filter pipeline for a codec so that
 * h5py and h5dump read the file, encodes each chunk outside the lock with
 * io/codec.c and hands the encoded bytes to H5Dwrite_chunk; finds and
 * takes over a killed run's chunks for --resume.  Creating and
 * committing the file itself is h5.c's job; attributes are h5_attrs.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blosc.h>

#include "io/hdf5/h5_impl.h"
#include "io/hdf5/zstd_filter.h"
#include "io/journal.h"
#include "io/oserr.h"

/* ---- writing ---- */

/* Adds the filters of codec c to dcpl.  HDF5's deflate reads zlib
 * streams, so gzip is written as deflate; the shuffle of a non-blosc codec
 * is HDF5's shuffle filter. */
static ck_code set_filters(ck_store *s, const ck_array_spec *spec, size_t esize,
                           size_t cb, hid_t dcpl, h5_array *ha, ck_err *err)
{
    const ck_codec_spec *c = &spec->codec;
    int level = c->level;

    ha->wcodec = *c;
    ha->wcodec.shuffle = CK_SHUF_NONE;
    ha->wcodec.nfilters = 0;
    if (c->nfilters > 0)
        return ck_err_set(err, CK_EUSAGE,
                          "%s:%s: hdf5 has no %s filter (zarr filters need a "
                          "zarr output; hdf5 takes only a shuffle before "
                          "zstd, gzip or zlib)",
                          s->path, spec->name,
                          ck_filter_name(c->filters[0].id));
    if (c->id == CK_CODEC_LZ4 || c->id == CK_CODEC_LZMA ||
        c->id == CK_CODEC_BZ2)
        return ck_err_set(err, CK_EUSAGE,
                          "%s:%s: chunkctl writes %s only to zarr stores "
                          "(for hdf5 use zstd, gzip, zlib or blosc)",
                          s->path, spec->name,
                          c->id == CK_CODEC_LZ4    ? "lz4"
                          : c->id == CK_CODEC_LZMA ? "lzma"
                                                   : "bz2");
    if (c->id != CK_CODEC_BLOSC && c->shuffle == CK_SHUF_BIT)
        return ck_err_set(err, CK_EUSAGE,
                          "%s:%s: bitshuffle needs blosc in HDF5 files",
                          s->path, spec->name);
    if (c->id != CK_CODEC_BLOSC && c->shuffle == CK_SHUF_BYTE) {
        ha->wshuffle = 1;
        if (H5Pset_shuffle(dcpl) < 0)
            goto fail;
    }
    switch (c->id) {
    case CK_CODEC_NONE:
        break;
    case CK_CODEC_ZLIB:
    case CK_CODEC_GZIP:
        level = level < 0 ? 0 : level > 9 ? 9 : level;
        ha->wcodec.id = CK_CODEC_ZLIB;
        ha->wcodec.level = level;
        if (H5Pset_deflate(dcpl, (unsigned)level) < 0)
            goto fail;
        break;
    case CK_CODEC_ZSTD: {
        unsigned cd[1] = {(unsigned)level};
        if (H5Pset_filter(dcpl, CK_H5Z_FILTER_ZSTD, H5Z_FLAG_OPTIONAL, 1, cd) <
            0)
            goto fail;
        break;
    }
    case CK_CODEC_BLOSC: {
        const char *cname = c->cname[0] ? c->cname : "lz4";
        int code = blosc_compname_to_compcode(cname);
        unsigned cd[7] = {BLOSC_FILTER_REV, BLOSC_VERSION_FORMAT,
                          (unsigned)esize,  (unsigned)cb,
                          (unsigned)level,  (unsigned)c->shuffle,
                          (unsigned)code};
        if (code < 0)
            return ck_err_set(err, CK_ENOTSUP,
                              "%s:%s: blosc has no compressor '%s'", s->path,
                              spec->name, cname);
        ha->wcodec.shuffle = c->shuffle;
        snprintf(ha->wcodec.cname, sizeof ha->wcodec.cname, "%s", cname);
        if (H5Pset_filter(dcpl, H5Z_FILTER_BLOSC_ID, H5Z_FLAG_OPTIONAL, 7, cd) <
            0)
            goto fail;
        break;
    }
    default:
        return ck_err_set(err, CK_ENOTSUP, "%s:%s: codec %d", s->path,
                          spec->name, (int)c->id);
    }
    return CK_OK;
fail:
    return ck_h5_fail(err, CK_EIO, "%s:%s: cannot set up the filters", s->path,
                      spec->name);
}

herr_t ck_h5_make_groups(hid_t file, const char *name, int self, int nc)
{
    unsigned order = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
    char path[512];
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    herr_t r = 0;

    if (gcpl < 0 || (nc && (H5Pset_link_creation_order(gcpl, order) < 0 ||
                            H5Pset_attr_creation_order(gcpl, order) < 0)))
        r = -1;
    snprintf(path, sizeof path, "%s%s", name, self ? "/" : "");
    for (char *p = strchr(path + 1, '/'); r >= 0 && p; p = strchr(p + 1, '/')) {
        hid_t g;
        *p = '\0';
        if (H5Lexists(file, path, H5P_DEFAULT) <= 0) {
            H5Eclear2(H5E_DEFAULT);
            if ((g = H5Gcreate2(file, path, H5P_DEFAULT, gcpl, H5P_DEFAULT)) <
                0)
                r = -1;
            else
                H5Gclose(g);
        }
        *p = '/';
    }
    if (gcpl >= 0)
        H5Pclose(gcpl);
    return r;
}

ck_code ck_h5_array_create(ck_store *s, const ck_array_spec *spec, ck_array *a,
                           ck_err *err)
{
    h5_store *hs = s->impl;
    h5_array *ha = ck_h5_array_new(hs);
    hid_t ftype = -1, space = -1, dcpl = -1, lcpl = -1, dapl = -1;
    hsize_t dims[CK_MAX_DIMS], maxd[CK_MAX_DIMS], cdims[CK_MAX_DIMS];
    size_t esize = ck_dtype_size(spec->dtype);
    int64_t cb = (int64_t)esize;
    int nreq;
    ck_code rc = CK_OK;

    if (!ha)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    if (esize == 0 || spec->ndim < 0 || spec->ndim > CK_MAX_DIMS) {
        free(ha);
        return ck_err_set(err, CK_EUSAGE, "%s:%s: bad array spec", s->path,
                          spec->name);
    }
    /* "/" is the root group every HDF5 file has, never a dataset: say so,
     * rather than that it "already exists" in a file made a moment ago. */
    if (spec->name[0] == '/' && !spec->name[strspn(spec->name, "/")]) {
        free(ha);
        return ck_err_set(err, CK_EUSAGE,
                          "%s: '/' is the root group, not a dataset name "
                          "(name one, e.g. %s:/data)",
                          s->path, s->path);
    }
    /* HDF5 wants chunks no larger than a fixed dimension: clip them (the
     * caller takes its grid from a->info); a 0-long axis is unlimited. */
    for (int d = 0; d < spec->ndim; d++) {
        int64_t c = spec->chunks[d] > 0 ? spec->chunks[d] : 1;
        if (spec->shape[d] > 0 && c > spec->shape[d])
            c = spec->shape[d];
        dims[d] = (hsize_t)spec->shape[d];
        maxd[d] = spec->shape[d] > 0 && !(spec->unlimited >> d & 1)
                      ? dims[d]
                      : H5S_UNLIMITED;
        cdims[d] = (hsize_t)c;
        if (c > H5_CHUNK_MAX / cb) {
            free(ha);
            return ck_err_set(err, CK_ENOTSUP,
                              "%s:%s: HDF5 chunks must be smaller than 4 GiB",
                              s->path, spec->name);
        }
        cb *= c;
    }
    ck_h5_lock();
    nreq = hs->ndimreq;
    if ((rc = ck_h5_note_dims(s, spec, err)) != CK_OK)
        goto out;
    /* netCDF has no bool: a *.nc file stores one as a byte of 0 or 1 (as
     * xarray does), which netCDF-C reads; h5py's enum it does not. */
    ck_dtype stored =
        hs->netcdf && spec->dtype == CK_BOOL ? CK_I8 : spec->dtype;
    if ((ftype = ck_h5_make_type(stored, 1)) < 0 ||
        (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
        (hs->netcdf &&
         (H5Pset_attr_creation_order(dcpl, H5P_CRT_ORDER_TRACKED |
                                               H5P_CRT_ORDER_INDEXED) < 0 ||
          ck_h5_make_groups(hs->file, spec->name, 0, 1) < 0)) ||
        (lcpl = H5Pcreate(H5P_LINK_CREATE)) < 0 ||
        H5Pset_create_intermediate_group(lcpl, 1) < 0 ||
        (dapl = ck_h5_make_dapl()) < 0 ||
        (space = spec->ndim > 0 ? H5Screate_simple(spec->ndim, dims, maxd)
                                : H5Screate(H5S_SCALAR)) < 0 ||
        (ha->mtype = ck_h5_make_type(stored, 0)) < 0) {
        rc = ck_h5_fail(err, CK_EIO, "%s:%s: cannot set up the dataset",
                        s->path, spec->name);
        goto out;
    }
    if (spec->ndim > 0) {
        if (H5Pset_chunk(dcpl, spec->ndim, cdims) < 0) {
            rc = ck_h5_fail(err, CK_EUSAGE, "%s:%s: bad chunk shape", s->path,
                            spec->name);
            goto out;
        }
        if ((rc = set_filters(s, spec, esize, (size_t)cb, dcpl, ha, err)) !=
            CK_OK)
            goto out;
    }
    if (spec->has_fill) {
        unsigned char fv[16];
        ck_dtype_fill(spec->dtype, fv, spec->fill, 1);
        if (H5Pset_fill_value(dcpl, ha->mtype, fv) < 0) {
            rc = ck_h5_fail(err, CK_EIO, "%s:%s: cannot set the fill value",
                            s->path, spec->name);
            goto out;
        }
    }
    /* H5Lexists fails (rather than says 0) when a parent group is
     * missing; either way there is nothing in the way. */
    if (H5Lexists(hs->file, spec->name, H5P_DEFAULT) > 0) {
        rc = ck_err_set(err, CK_EUSAGE, "%s: '%s' already exists", s->path,
                        spec->name);
        goto out;
    }
    ha->dset = H5Dcreate2(hs->file, spec->name, ftype, space, lcpl, dcpl, dapl);
    if (ha->dset < 0) {
        rc = ck_h5_fail(err, CK_EIO, "%s: cannot create dataset '%s'", s->path,
                        spec->name);
        goto out;
    }
    H5Tclose(ha->mtype);
    ha->mtype = -1;
    if ((rc = ck_h5_describe(s, spec->name, ha->dset, a, ha, err)) != CK_OK)
        goto out;
    /* The scales come at flush; the names are known now. */
    if (spec->has_dims && spec->ndim > 0) {
        a->info.has_dims = 1;
        memcpy(a->info.dims, spec->dims, sizeof a->info.dims);
    }
    ha->writing = 1;
    ha->path = PATH_H5READ;
out:
    if (dapl >= 0)
        H5Pclose(dapl);
    if (lcpl >= 0)
        H5Pclose(lcpl);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    if (ftype >= 0)
        H5Tclose(ftype);
    if (rc != CK_OK) {
        hs->ndimreq = nreq; /* no array, no scales for it */
        ck_h5_array_free(ha);
    }
    ck_h5_unlock();
    if (rc == CK_OK)
        a->impl = ha;
    return rc;
}

/* Opens path read-only into *fd once (under the ck_h5_lock: workers
 * share it). */
static int open_ro(int *fd, const char *path)
{
    if (*fd < 0)
        *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    return *fd;
}

/* Whether fd holds the n bytes of p at off. */
static int same_bytes(int fd, uint64_t off, const void *p, size_t n)
{
    char buf[16384];

    for (size_t at = 0; at < n;) {
        size_t want = n - at < sizeof buf ? n - at : sizeof buf;
        ssize_t k = pread(fd, buf, want, (off_t)(off + at));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0 || memcmp(buf, (const char *)p + at, (size_t)k) != 0)
            return 0;
        at += (size_t)k;
    }
    return 1;
}

ck_code ck_h5_write_chunk(ck_array *a, const int64_t *coords, const void *src,
                          ck_arena *scratch, ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_array_info *info = &a->info;
    size_t cb = ha->chunk_bytes, n = cb;
    hsize_t off[CK_MAX_DIMS];
    const void *in = src;
    int64_t lin = -1; /* journaled: the linear chunk number */
    uint64_t sum = 0;
    haddr_t eoa = HADDR_UNDEF;
    char cs[160];
    ck_code rc = CK_OK;

    if (!ha->writing)
        return ck_err_set(err, CK_EUSAGE, "%s:%s: not open for writing",
                          a->store->path, info->name);
    for (int d = 0; d < info->ndim; d++) {
        if (coords[d] < 0 || coords[d] >= a->grid.nchunks[d])
            return ck_err_set(err, CK_EUSAGE,
                              "%s:%s: chunk %s is outside the array",
                              a->store->path, info->name,
                              ck_h5_chunk_str(a, coords, cs, sizeof cs));
        off[d] = (hsize_t)(coords[d] * info->chunks[d]);
    }
    if (info->ndim == 0) { /* a scalar dataset has no chunks */
        ck_h5_lock();
        if (ha->hs->file < 0 || H5Dwrite(ha->dset, ha->mtype, H5S_ALL, H5S_ALL,
                                         H5P_DEFAULT, src) < 0)
            rc = ck_h5_fail(err, CK_EIO, "%s:%s: cannot write", a->store->path,
                            info->name);
        ck_h5_unlock();
        return rc;
    }
    /* Encode outside the ck_h5_lock; only the write itself is serialised. */
    if (ha->wshuffle) {
        void *t = ck_arena_alloc(scratch, cb);
        if (!t)
            return ck_err_set(err, CK_ENOMEM, "%s:%s: scratch arena too small",
                              a->store->path, info->name);
        ck_shuffle(ha->esize, src, t, cb);
        in = t;
    }
    if (ha->wcodec.id != CK_CODEC_NONE) {
        size_t cap = ck_codec_bound(&ha->wcodec, cb);
        void *out = ck_arena_alloc(scratch, cap);
        if (!out)
            return ck_err_set(err, CK_ENOMEM, "%s:%s: scratch arena too small",
                              a->store->path, info->name);
        rc = ck_codec_encode(&ha->wcodec, ha->esize, in, cb, out, cap, &n, err);
        if (rc != CK_OK) {
            ck_err_prefix(err, "%s:%s: chunk %s", a->store->path, info->name,
                          ck_h5_chunk_str(a, coords, cs, sizeof cs));
            return rc;
        }
        in = out;
    }
    if (a->store->journal) {
        lin = ck_grid_index(&a->grid, coords);
        sum = ck_journal_sum_mem(in, n);
    }
    ck_h5_lock();
    if (lin >= 0 && !ha->cand &&
        (ha->cand = malloc(H5_CANDS * sizeof *ha->cand)))
        for (int i = 0; i < H5_CANDS; i++)
            ha->cand[i].lin = -1;
    if (lin >= 0 && ha->cand && H5Fget_eoa(ha->hs->file, &eoa) < 0)
        eoa = HADDR_UNDEF; /* no guess, nothing worse */
    if (ha->hs->file < 0 ||
        H5Dwrite_chunk(ha->dset, H5P_DEFAULT, 0, off, n, in) < 0) {
        rc = ck_h5_fail(err, CK_EIO, "%s:%s: chunk %s: cannot write",
                        a->store->path, info->name,
                        ck_h5_chunk_str(a, coords, cs, sizeof cs));
    } else if (lin >= 0 && ha->cand) {
        haddr_t end = HADDR_UNDEF;
        ha->cand[lin % H5_CANDS].lin = -1;
        if (eoa == HADDR_UNDEF || H5Fget_eoa(ha->hs->file, &end) < 0 ||
            end < eoa + n || open_ro(&ha->hs->rfd, a->store->tmp) < 0)
            eoa = HADDR_UNDEF;
    }
    ck_h5_unlock();
    /* The guess holds when the file has these very bytes there (read
     * outside the lock: no one else writes where this chunk went). */
    if (rc == CK_OK && lin >= 0 && eoa != HADDR_UNDEF &&
        same_bytes(ha->hs->rfd, (uint64_t)eoa, in, n)) {
        ck_h5_lock();
        ha->cand[lin % H5_CANDS] =
            (struct h5_cand){.lin = lin, .addr = eoa, .size = n, .sum = sum};
        ck_h5_unlock();
    }
    return rc;
}

/* ---- resuming (io/journal.h) ----
 *
 * H5Dwrite_chunk hands a chunk's bytes straight to the file (HDF5 caches
 * only metadata), so once it returns they are in the file at the offset
 * the chunk index gives, even if the index itself never reaches the disk:
 * the journal records that offset, and a resumed run reads the bytes
 * there, checks them against the journal and writes them again into its
 * own file as the same chunk.  The chunk's bytes are the same; where they
 * sit in the new file is not. */

ck_code ck_h5_unit_sum(ck_array *a, const int64_t *coords, int *found,
                       uint64_t *off, uint64_t *len, uint64_t *sum, ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_store *s = a->store;
    hsize_t at[CK_MAX_DIMS], size = 0;
    haddr_t addr = HADDR_UNDEF;
    unsigned mask = 0;
    herr_t r = -1;
    int64_t lin = ck_grid_index(&a->grid, coords);
    struct h5_cand guess = {.lin = -1};
    char cs[160];

    *found = 0;
    if (a->info.ndim == 0)
        return CK_OK; /* a scalar is written whole, never resumed */
    for (int d = 0; d < a->info.ndim; d++)
        at[d] = (hsize_t)(coords[d] * a->info.chunks[d]);
    ck_h5_lock();
    if (ha->cand && ha->cand[lin % H5_CANDS].lin == lin) {
        guess = ha->cand[lin % H5_CANDS];
        ha->cand[lin % H5_CANDS].lin = -1;
    }
    /* write_chunk found the chunk's bytes at the guess: no asking HDF5 */
    if (guess.lin == lin) {
        ck_h5_unlock();
        *off = guess.addr;
        *len = guess.size;
        *sum = guess.sum;
        *found = 1;
        return CK_OK;
    }
    if (ha->hs->file >= 0)
        r = H5Dget_chunk_info_by_coord(ha->dset, at, &mask, &addr, &size);
    (void)open_ro(&ha->hs->rfd, s->tmp);
    ck_h5_unlock();
    if (r < 0 || addr == HADDR_UNDEF || size == 0)
        return CK_OK;
    if (ha->hs->rfd < 0 || ck_journal_sum_fd(ha->hs->rfd, (uint64_t)addr,
                                             (uint64_t)size, len, sum) != 0)
        return ck_os_fail(err, CK_EIO, errno,
                          "%s:%s: chunk %s: cannot read "
                          "it back from %s",
                          s->path, a->info.name,
                          ck_h5_chunk_str(a, coords, cs, sizeof cs), s->tmp);
    if (*len != (uint64_t)size)
        return CK_OK; /* cut short: not recorded, so written again */
    *off = (uint64_t)addr;
    *found = 1;
    return CK_OK;
}

ck_code ck_h5_take_unit(ck_array *a, const char *from, const int64_t *coords,
                        uint64_t off, uint64_t len, uint64_t sum, int *taken,
                        ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_store *s = a->store;
    hsize_t at[CK_MAX_DIMS];
    uint64_t l = 0, h = 0;
    size_t got = 0;
    char cs[160], *buf;
    ck_code rc = CK_OK;

    *taken = 0;
    /* A journal line names no chunk larger than this run would store. */
    if (a->info.ndim == 0 || off == 0 || len == 0 ||
        len > ck_codec_bound(&ha->wcodec, ha->chunk_bytes))
        return CK_OK;
    /* One file at a time: a killed run's, or each MPI rank's part. */
    if (!ha->hs->from || strcmp(ha->hs->from, from) != 0) {
        if (ha->hs->from_fd >= 0)
            close(ha->hs->from_fd);
        ha->hs->from_fd = -1;
        free(ha->hs->from);
        if (!(ha->hs->from = strdup(from)))
            return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    if (open_ro(&ha->hs->from_fd, from) < 0)
        return CK_OK;
    if (!(buf = malloc((size_t)len)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    while (got < len) {
        ssize_t k = pread(ha->hs->from_fd, buf + got, (size_t)(len - got),
                          (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    if (got == len) {
        ck_journal_sum js;
        ck_journal_sum_init(&js);
        for (size_t b = 0; b < len; b += CK_JOURNAL_BLOCK)
            ck_journal_sum_block(&js, buf + b,
                                 len - b < CK_JOURNAL_BLOCK ? (size_t)(len - b)
                                                            : CK_JOURNAL_BLOCK);
        l = js.len;
        h = js.h;
    }
    if (got == len && l == len && h == sum) {
        int64_t lin = ck_grid_index(&a->grid, coords);
        for (int d = 0; d < a->info.ndim; d++)
            at[d] = (hsize_t)(coords[d] * a->info.chunks[d]);
        ck_h5_lock();
        if (ha->cand) /* no guess of this run's for a chunk it takes */
            ha->cand[lin % H5_CANDS].lin = -1;
        if (ha->hs->file < 0 ||
            H5Dwrite_chunk(ha->dset, H5P_DEFAULT, 0, at, (size_t)len, buf) < 0)
            rc = ck_h5_fail(err, CK_EIO, "%s:%s: chunk %s: cannot write",
                            s->path, a->info.name,
                            ck_h5_chunk_str(a, coords, cs, sizeof cs));
        ck_h5_unlock();
        *taken = rc == CK_OK;
    }
    free(buf);
    return rc;
}
