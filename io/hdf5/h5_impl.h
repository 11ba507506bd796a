/*
 * io/hdf5/h5_impl.h - what the files of io/hdf5/ share (private to them).
 * The HDF5 store is one ck_store_ops table (ck_h5_ops, in h5.c) spread
 * over six files: h5.c (the lock, HDF5's errors, files, listing, arrays
 * opened and closed), h5_types.c (HDF5 types and dataset layouts as a
 * ck_array_info), h5_read.c (chunks read), h5_write.c (datasets created,
 * chunks written), h5_attrs.c (attributes) and h5_dims.c (dimension
 * names as dimension scales).  Nothing outside io/hdf5/
 * includes this header: the rest of io/ sees only ck_h5_ops and
 * ck_h5_sniff, through io/store_impl.h.
 */
#ifndef CK_H5_IMPL_H
#define CK_H5_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "io/store_impl.h"

#define H5Z_FILTER_BLOSC_ID 32001
#define BLOSC_FILTER_REV 2 /* PyTables' blosc filter, cd_values[0] */

/* HDF5 limits one chunk to less than 4 GiB. */
#define H5_CHUNK_MAX ((int64_t)UINT32_MAX)

typedef enum read_path {
    PATH_RAW_CHUNK,  /* chunked, filters we decode: raw bytes, decode */
    PATH_RAW_CONTIG, /* contiguous, plain: pread one byte run */
    PATH_H5READ,     /* anything else: H5Dread under the ck_h5_lock */
} read_path;

/* The NAME netCDF-C gives a dimension scale that is not a variable
 * (followed by the length, "%10d"); such datasets hold no data. */
#define CK_NC_DIM_ONLY "This is a netCDF dimension but not a netCDF variable."

/* An array created with dimension names, to be given scales at flush. */
typedef struct h5_dimreq {
    char name[512]; /* "/g/x" */
    int ndim;
    int64_t shape[CK_MAX_DIMS];
    char dims[CK_MAX_DIMS][CK_DIM_NAME_MAX]; /* "": named at flush */
    unsigned unlimited;                      /* as ck_array_spec's */
} h5_dimreq;

typedef struct h5_store {
    hid_t file;    /* -1 once flush() closed it */
    int fd;        /* read-only fd for contiguous data; -1 when writing */
    uint64_t size; /* of the file when opened, for views */
    /* Writing a *.nc file: netCDF-4's conventions (creation order
     * tracked, every axis a dimension, strings as NC_CHAR). */
    int netcdf;
    h5_dimreq *dimreq; /* arrays whose axes get scales at flush */
    int ndimreq, capdimreq;
    /* --resume: the file being written, read back to checksum what it
     * holds (rfd), and a killed run's file whose chunks are taken over
     * (from_fd); -1 until first needed. */
    int rfd, from_fd;
    char *from; /* the file from_fd reads (malloc'd) */
} h5_store;

typedef struct h5_array {
    h5_store *hs;
    hid_t dset;
    hid_t mtype; /* native memory type of the elements */
    size_t esize;
    size_t chunk_bytes; /* one full chunk, decoded */
    read_path path;
    int swap; /* file byte order differs from ours */
    int nfilt;
    H5Z_filter_t filt[H5Z_MAX_NFILTERS];
    size_t shuf_size[H5Z_MAX_NFILTERS]; /* element size of a shuffle */
    haddr_t contig_addr;                /* PATH_RAW_CONTIG: file offset */
    /* PATH_RAW_CHUNK: where each chunk is stored, by linear chunk number
     * (size 0: never written), looked up once so that chunks are pread()
     * without the ck_h5_lock; index_state 0 untried, 1 built, -1 not used. */
    struct h5_loc {
        uint64_t addr, size;
        uint32_t mask;
    } * index;
    int index_state;
    /* The dataset lives in another file (an external link): its addresses
     * are not offsets in hs->fd, so nothing is read past HDF5.  origin:
     * that file and the dataset's name in it ("ext.h5:/e"), which chunk
     * messages name beside the linking file's ("" when not foreign). */
    int foreign;
    char origin[1024];
    /* Writing: what write_chunk applies before H5Dwrite_chunk. */
    int writing;
    int wshuffle;
    ck_codec_spec wcodec;
    /* Writing a journaled file: where each recent chunk landed, its length
     * and checksum, so that unit_sum need not ask HDF5, whose 1.10
     * by-coordinate lookup walks the whole chunk index (O(N^2) over a
     * run).  The guess is the file's end of allocation just before the
     * H5Dwrite_chunk, kept only when the end grew by the chunk at least
     * and the file holds the chunk's very bytes there.  Slot: linear chunk
     * number mod H5_CANDS, overwritten freely; no guess: HDF5's answer. */
    struct h5_cand {
        int64_t lin; /* -1: empty */
        uint64_t addr, size, sum;
    } * cand;
} h5_array;

enum { H5_CANDS = 1024 };

/* ---- h5.c: the lock and HDF5's errors ---- */

/* Takes and drops the one lock every H5* call runs under (HDF5 is not
 * thread-safe for our purposes).  ck_h5_lock also registers the zstd and
 * blosc filters once and turns HDF5's automatic error printing off for
 * the calling thread. */
void ck_h5_lock(void);
void ck_h5_unlock(void);

/* The one translation of HDF5's errors in io/: walks HDF5's error stack
 * (H5Ewalk2), clears it, and sets err to "<context>: <cause>", the
 * context naming file, dataset and chunk ("out.h5:/x: chunk (0, 1): cannot
 * write").  The cause is strerror of the errno a file driver reported when
 * a system call failed ("No space left on device", "Permission denied"),
 * else HDF5's innermost message.  code CK_OK classifies: a failed system
 * call is CK_EIO (CK_ENOMEM for ENOMEM), a missing filter CK_ENOTSUP,
 * another pipeline failure CK_ECORRUPT, the rest CK_EIO.  Call with the
 * lock held, right after the failing call, before any other H5* call
 * clears the stack. */
ck_code ck_h5_fail(ck_err *err, ck_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 1 if the call that just failed did so because the chunk was never
 * written (HDF5 1.10); clears the error stack.  Lock held. */
int ck_h5_chunk_not_allocated(void);

/* "(i, j)": chunk coords of a, written into buf; for a dataset reached
 * through an external link, "(i, j) in ext.h5:/e": the file that holds
 * the chunk's bytes, which the linking file's name does not say. */
const char *ck_h5_chunk_str(const ck_array *a, const int64_t *coords, char *buf,
                            size_t n);

/* ---- h5.c: arrays ---- */

/* A dataset access plist with a tiny chunk cache (caller closes it). */
hid_t ck_h5_make_dapl(void);
/* A new h5_array of hs with no HDF5 objects open yet; NULL when out of
 * memory.  ck_h5_array_free closes what it holds (lock held) and accepts
 * NULL. */
h5_array *ck_h5_array_new(h5_store *hs);
void ck_h5_array_free(h5_array *ha);

/* ---- h5_types.c ---- */

/* A new memory (file 0) or file (file 1) type for dtype t, caller closes
 * it; -1 on failure. */
hid_t ck_h5_make_type(ck_dtype t, int file);
/* 1 if t is h5py's bool enum. */
int ck_h5_is_bool_enum(hid_t t);
/* "integer", "compound", ...: for messages. */
const char *ck_h5_class_name(H5T_class_t c);
/* File type t as a dtype, CK_DT_INVALID with "why" written when there is
 * none; *exact 1 when the bytes on disk are the dtype's up to byte order. */
ck_dtype ck_h5_map_type(hid_t t, int *big_endian, int *exact, char *why,
                        size_t n);
/* Fills a->info and ha from dataset dset.  Lock held. */
ck_code ck_h5_describe(ck_store *s, const char *name, hid_t dset, ck_array *a,
                       h5_array *ha, ck_err *err);

/* ---- h5_dims.c (lock held) ---- */

/* Fills info->dims and has_dims of dataset dset ('name' its path) from
 * its dimension scales, else its DIMENSION_LABELS. */
void ck_h5_read_dims(hid_t dset, const char *name, ck_array_info *info);
/* 1 if dset is netCDF-4's dimension-only placeholder (no data). */
int ck_h5_is_nc_dim_only(hid_t dset);
/* Notes an array being created whose axes need scales (spec->has_dims,
 * or any array of a netCDF file).  netCDF files: CK_EUSAGE for a
 * dimension name HDF5 cannot hold or one whose length disagrees with an
 * earlier array's. */
ck_code ck_h5_note_dims(ck_store *s, const ck_array_spec *spec, ck_err *err);
/* Gives every noted array's axes their scales; before the file closes. */
ck_code ck_h5_write_dims(ck_store *s, ck_err *err);

/* Creates the missing groups above 'name' ("/a/b/x": /a, /a/b), and with
 * 'self' 'name' itself; with 'nc' tracking link and attribute creation
 * order, as netCDF-4 groups do.  Called with h5_mutex held; < 0 on an
 * HDF5 failure. */
herr_t ck_h5_make_groups(hid_t file, const char *name, int self, int nc);

/* ---- the ck_h5_ops slots of h5_read.c, h5_write.c and h5_attrs.c ---- */

/* h5_read.c: undoes ha's filter pipeline (HDF5's order, last filter
 * first; those whose bit is set in mask were skipped by the writer) on
 * the n stored bytes at raw, into dst (ha->chunk_bytes, file byte order).
 * scratch holds one chunk for the stages in between.  CK_ECORRUPT when
 * the bytes do not decode to exactly one chunk; the caller names the
 * chunk.  Exposed for tests/fuzz/fuzz_h5_filters.c. */
ck_code ck_h5_unfilter(const h5_array *ha, uint32_t mask, const void *raw,
                       size_t n, void *dst, ck_arena *scratch, ck_err *err);

ck_code ck_h5_read_chunk(ck_array *a, const int64_t *coords, void *dst,
                         ck_arena *scratch, ck_err *err);
int ck_h5_view_chunk(ck_array *a, const int64_t *coords, size_t off, size_t len,
                     ck_chunk_view *v);
int ck_h5_raw(ck_array *a);
ck_code ck_h5_read_bytes(ck_array *a, const int64_t *coords, size_t off,
                         size_t len, void *dst, ck_err *err);
ck_code ck_h5_array_create(ck_store *s, const ck_array_spec *spec, ck_array *a,
                           ck_err *err);
/* The resume slots (io/store_impl.h: unit_sum, take_unit): a unit is a
 * chunk, found through HDF5's chunk index in the file being written, and
 * taken from a killed run's file by its offset alone (its index never
 * reached the disk). */
ck_code ck_h5_unit_sum(ck_array *a, const int64_t *coords, int *found,
                       uint64_t *off, uint64_t *len, uint64_t *sum,
                       ck_err *err);
ck_code ck_h5_take_unit(ck_array *a, const char *from, const int64_t *coords,
                        uint64_t off, uint64_t len, uint64_t sum, int *taken,
                        ck_err *err);
ck_code ck_h5_write_chunk(ck_array *a, const int64_t *coords, const void *src,
                          ck_arena *scratch, ck_err *err);
ck_code ck_h5_get_attrs(ck_store *s, const char *name, char **json,
                        ck_err *err);
ck_code ck_h5_set_attrs(ck_store *s, const char *name, const char *json,
                        ck_err *err);
ck_code ck_h5_set_attr(ck_store *s, const char *name, const char *key,
                       const ck_attr *v, ck_err *err);
ck_code ck_h5_get_attr(ck_store *s, const char *name, const char *key,
                       ck_attr *v, ck_err *err);
ck_code ck_h5_keep_attr_types(ck_store *dst, const char *dst_name,
                              ck_store *src, const char *src_name, ck_err *err);

#endif
