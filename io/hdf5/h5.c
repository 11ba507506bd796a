/*
 * io/hdf5/h5.c - HDF5 files as chunkctl stores (the ck_h5_ops table).
 * Reads chunked datasets chunk by chunk, contiguous ones through a virtual
 * chunking of contiguous byte runs, compact ones as one chunk; writes
 * chunked datasets with H5Dwrite_chunk.  HDF5 is not thread-safe for our
 * purposes, so every H5* call runs under h5_mutex; the fast read path holds
 * it at most to fetch a chunk's stored bytes (datasets of up to 2048
 * chunks not even that: their chunks' locations are indexed once and
 * pread()) and decodes them outside it with io/codec.c, so many threads
 * decode at once (contiguous data is pread() without the lock at all).  Filters
 * chunkctl cannot decode itself (fletcher32, szip, nbit, scaleoffset, lzf, ...)
 * fall back to H5Dread under the lock.  Nothing here knows about compute.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blosc.h>
#include <cjson/cJSON.h>
#include <hdf5.h>

#include "base/ck_log.h"
#include "io/hdf5/zstd_filter.h"
#include "io/store_impl.h"

#define H5Z_FILTER_BLOSC_ID 32001
#define BLOSC_FILTER_REV 2 /* PyTables' blosc filter, cd_values[0] */

/* Contiguous datasets are read in virtual chunks of at most this many
 * bytes (or one element, if that is larger). */
#define VCHUNK_BYTES ((int64_t)4 << 20)

/* HDF5 limits one chunk to less than 4 GiB. */
#define H5_CHUNK_MAX ((int64_t)UINT32_MAX)

/* Attributes larger than this many elements are skipped, not read. */
#define ATTR_MAX_ELEMS ((hssize_t)1 << 24)

typedef enum read_path {
    PATH_RAW_CHUNK,  /* chunked, filters we decode: raw bytes, decode */
    PATH_RAW_CONTIG, /* contiguous, plain: pread one byte run */
    PATH_H5READ,     /* anything else: H5Dread under the lock */
} read_path;

typedef struct h5_store {
    hid_t file;    /* -1 once flush() closed it */
    int fd;        /* read-only fd for contiguous data; -1 when writing */
    uint64_t size; /* of the file when opened, for views */
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
     * without the lock; index_state 0 untried, 1 built, -1 not used. */
    struct h5_loc {
        uint64_t addr, size;
        uint32_t mask;
    } * index;
    int index_state;
    /* Writing: what write_chunk applies before H5Dwrite_chunk. */
    int writing;
    int wshuffle;
    ck_codec_spec wcodec;
} h5_array;

static pthread_mutex_t h5_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t h5_once = PTHREAD_ONCE_INIT;
static int h5_filters_ok;

static int host_big_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 0;
}

/* ---- the in-process blosc filter (PyTables' convention) ---- */

/* cd_values: [0] filter revision, [1] blosc format, [2] type size, [3]
 * chunk bytes, [4] level, [5] shuffle 0/1/2, [6] compressor code. */
static size_t blosc_h5_filter(unsigned flags, size_t cd_nelmts,
                              const unsigned cd_values[], size_t nbytes,
                              size_t *buf_size, void **buf)
{
    void *out = NULL;
    size_t outn = 0;

    if (flags & H5Z_FLAG_REVERSE) {
        int r;
        if (nbytes < BLOSC_MIN_HEADER_LENGTH ||
            blosc_cbuffer_validate(*buf, nbytes, &outn) != 0 || outn == 0 ||
            outn > (size_t)H5_CHUNK_MAX)
            goto fail;
        if ((out = H5allocate_memory(outn, 0)) == NULL)
            goto fail;
        r = blosc_decompress_ctx(*buf, out, outn, 1);
        if (r <= 0 || (size_t)r != outn)
            goto fail;
        H5free_memory(*buf);
        *buf = out;
        *buf_size = outn;
        return outn;
    } else {
        size_t typesize = cd_nelmts > 2 ? cd_values[2] : 1;
        int clevel = cd_nelmts > 4 ? (int)cd_values[4] : 5;
        int shuffle = cd_nelmts > 5 ? (int)cd_values[5] : 1;
        int code = cd_nelmts > 6 ? (int)cd_values[6] : 0;
        const char *cname = NULL;
        size_t cap = nbytes + BLOSC_MAX_OVERHEAD;
        int r;

        if (typesize == 0 || typesize > BLOSC_MAX_TYPESIZE)
            typesize = 1;
        if (blosc_compcode_to_compname(code, &cname) < 0 || !cname)
            goto fail;
        if ((out = H5allocate_memory(cap, 0)) == NULL)
            goto fail;
        r = blosc_compress_ctx(clevel, shuffle, typesize, nbytes, *buf, out,
                               cap, cname, 0, 1);
        if (r <= 0)
            goto fail;
        H5free_memory(*buf);
        *buf = out;
        *buf_size = cap;
        return (size_t)r;
    }
fail:
    H5free_memory(out);
    H5Epush2(H5E_DEFAULT, __FILE__, __func__, __LINE__, H5E_ERR_CLS, H5E_PLINE,
             H5E_CANTFILTER, "blosc frame does not %s",
             (flags & H5Z_FLAG_REVERSE) ? "decode" : "encode");
    return 0;
}

static const H5Z_class2_t blosc_class = {
    .version = H5Z_CLASS_T_VERS,
    .id = H5Z_FILTER_BLOSC_ID,
    .encoder_present = 1,
    .decoder_present = 1,
    .name = "blosc",
    .can_apply = NULL,
    .set_local = NULL,
    .filter = blosc_h5_filter,
};

/* ---- the lock ---- */

/* Runs once, under h5_mutex (lock() calls it). */
static void h5_init(void)
{
    H5open();
    h5_filters_ok =
        ck_h5_zstd_register() >= 0 && H5Zregister(&blosc_class) >= 0;
}

/* Takes h5_mutex.  HDF5's error stack and its automatic printing are per
 * thread in a thread-safe build, so each thread silences it once. */
static void lock(void)
{
    static _Thread_local int silenced;

    pthread_mutex_lock(&h5_mutex);
    if (!silenced) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        silenced = 1;
    }
    pthread_once(&h5_once, h5_init);
}

static void unlock(void)
{
    pthread_mutex_unlock(&h5_mutex);
}

/* ---- errors ---- */

typedef struct h5_why {
    char desc[200]; /* the innermost message: closest to the cause */
    int pline;      /* some entry came from the filter pipeline */
    int missing;    /* a filter is not available */
} h5_why;

static herr_t why_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    h5_why *w = data;

    (void)n;
    /* The innermost entry, past the plugin search's own complaints ("can't
     * open directory"), which only say where HDF5 looked. */
    if (!w->desc[0] && e->desc && e->maj_num != H5E_PLUGIN)
        snprintf(w->desc, sizeof w->desc, "%s", e->desc);
    if (e->maj_num == H5E_PLINE) {
        w->pline = 1;
        if (e->min_num == H5E_NOTFOUND || e->min_num == H5E_CANTLOAD ||
            (e->desc && strstr(e->desc, "not registered")))
            w->missing = 1;
    }
    return 0;
}

/* Sets err to "<context>: <HDF5's innermost message>".  code CK_OK
 * classifies: a missing filter is CK_ENOTSUP, another pipeline failure
 * CK_ECORRUPT, the rest CK_EIO.  Call with h5_mutex held, right after the
 * failing call, before any other H5* call clears the stack. */
static ck_code h5_fail(ck_err *err, ck_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ck_code h5_fail(ck_err *err, ck_code code, const char *fmt, ...)
{
    h5_why w = {"", 0, 0};
    char head[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, why_cb, &w);
    H5Eclear2(H5E_DEFAULT); /* see chunk_not_allocated() */
    if (code == CK_OK)
        code = w.missing ? CK_ENOTSUP : w.pline ? CK_ECORRUPT : CK_EIO;
    if (w.desc[0])
        return ck_err_set(err, code, "%s: %s", head, w.desc);
    return ck_err_set(err, code, "%s", head);
}

static const char *chunk_str(const ck_array *a, const int64_t *coords,
                             char *buf, size_t n)
{
    return ck_coords_str(a->info.ndim, coords, buf, n);
}

/* ---- types ---- */

/* A new memory or file type for dtype t (caller closes it).  Files get
 * our own byte order; bool is h5py's enum {FALSE=0, TRUE=1} of int8. */
static hid_t make_type(ck_dtype t, int file)
{
    int be = file && host_big_endian();
    hid_t base;

    switch (t) {
    case CK_BOOL: {
        hid_t e;
        int8_t v0 = 0, v1 = 1;
        base = file ? (be ? H5T_STD_I8BE : H5T_STD_I8LE) : H5T_NATIVE_INT8;
        if ((e = H5Tenum_create(base)) < 0)
            return -1;
        if (H5Tenum_insert(e, "FALSE", &v0) < 0 ||
            H5Tenum_insert(e, "TRUE", &v1) < 0) {
            H5Tclose(e);
            return -1;
        }
        return e;
    }
    case CK_I8:
        base = file ? (be ? H5T_STD_I8BE : H5T_STD_I8LE) : H5T_NATIVE_INT8;
        break;
    case CK_I16:
        base = file ? (be ? H5T_STD_I16BE : H5T_STD_I16LE) : H5T_NATIVE_INT16;
        break;
    case CK_I32:
        base = file ? (be ? H5T_STD_I32BE : H5T_STD_I32LE) : H5T_NATIVE_INT32;
        break;
    case CK_I64:
        base = file ? (be ? H5T_STD_I64BE : H5T_STD_I64LE) : H5T_NATIVE_INT64;
        break;
    case CK_U8:
        base = file ? (be ? H5T_STD_U8BE : H5T_STD_U8LE) : H5T_NATIVE_UINT8;
        break;
    case CK_U16:
        base = file ? (be ? H5T_STD_U16BE : H5T_STD_U16LE) : H5T_NATIVE_UINT16;
        break;
    case CK_U32:
        base = file ? (be ? H5T_STD_U32BE : H5T_STD_U32LE) : H5T_NATIVE_UINT32;
        break;
    case CK_U64:
        base = file ? (be ? H5T_STD_U64BE : H5T_STD_U64LE) : H5T_NATIVE_UINT64;
        break;
    case CK_F32:
        base = file ? (be ? H5T_IEEE_F32BE : H5T_IEEE_F32LE) : H5T_NATIVE_FLOAT;
        break;
    case CK_F64:
        base =
            file ? (be ? H5T_IEEE_F64BE : H5T_IEEE_F64LE) : H5T_NATIVE_DOUBLE;
        break;
    default:
        return -1;
    }
    return H5Tcopy(base);
}

/* 1 if t is h5py's bool: an enum of a 1-byte integer with exactly the
 * members FALSE=0 and TRUE=1. */
static int is_bool_enum(hid_t t)
{
    hid_t super = H5Tget_super(t);
    int ok = super >= 0 && H5Tget_class(super) == H5T_INTEGER &&
             H5Tget_size(super) == 1 && H5Tget_nmembers(t) == 2;

    if (super >= 0)
        H5Tclose(super);
    for (unsigned i = 0; ok && i < 2; i++) {
        char *name = H5Tget_member_name(t, i);
        int8_t v = -1;
        ok = name && H5Tget_member_value(t, i, &v) >= 0 &&
             ((strcmp(name, "FALSE") == 0 && v == 0) ||
              (strcmp(name, "TRUE") == 0 && v == 1));
        if (name)
            H5free_memory(name);
    }
    return ok;
}

static const char *class_name(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER:
        return "integer";
    case H5T_FLOAT:
        return "float";
    case H5T_TIME:
        return "time";
    case H5T_STRING:
        return "string";
    case H5T_BITFIELD:
        return "bitfield";
    case H5T_OPAQUE:
        return "opaque";
    case H5T_COMPOUND:
        return "compound";
    case H5T_REFERENCE:
        return "reference";
    case H5T_ENUM:
        return "enum";
    case H5T_VLEN:
        return "variable-length";
    case H5T_ARRAY:
        return "array";
    default:
        return "unknown";
    }
}

/* Maps file type t to a dtype.  *exact is 1 when the bytes on disk are the
 * dtype's bytes up to byte order, so raw reads may skip HDF5's conversion.
 * Writes "why" (e.g. "a compound type") when there is no dtype. */
static ck_dtype map_type(hid_t t, int *big_endian, int *exact, char *why,
                         size_t n)
{
    H5T_class_t cls = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    static const ck_dtype ints[2][9] = {
        {0, CK_U8, CK_U16, 0, CK_U32, 0, 0, 0, CK_U64},
        {0, CK_I8, CK_I16, 0, CK_I32, 0, 0, 0, CK_I64},
    };
    ck_dtype dt = CK_DT_INVALID;

    *big_endian = H5Tget_order(t) == H5T_ORDER_BE;
    *exact = 0;
    if (cls == H5T_INTEGER && size <= 8) {
        dt = ints[H5Tget_sign(t) == H5T_SGN_2][size];
        *exact = H5Tget_precision(t) == 8 * size && H5Tget_offset(t) == 0;
    } else if (cls == H5T_FLOAT && (size == 4 || size == 8)) {
        dt = size == 4 ? CK_F32 : CK_F64;
        *exact = size == 4 ? H5Tequal(t, H5T_IEEE_F32LE) > 0 ||
                                 H5Tequal(t, H5T_IEEE_F32BE) > 0
                           : H5Tequal(t, H5T_IEEE_F64LE) > 0 ||
                                 H5Tequal(t, H5T_IEEE_F64BE) > 0;
    } else if (cls == H5T_ENUM && is_bool_enum(t)) {
        dt = CK_BOOL;
        *exact = 1;
        *big_endian = 0;
    }
    if (dt == CK_DT_INVALID) {
        if (cls == H5T_INTEGER || cls == H5T_FLOAT)
            snprintf(why, n, "a %zu-byte %s type", size, class_name(cls));
        else
            snprintf(why, n, "a%s %s type",
                     cls == H5T_INTEGER || cls == H5T_OPAQUE ||
                             cls == H5T_ENUM || cls == H5T_ARRAY
                         ? "n"
                         : "",
                     class_name(cls));
    }
    return dt;
}

static ck_scalar scalar_of(ck_dtype t, const void *p)
{
    ck_scalar s = {0};

    switch (t) {
    case CK_BOOL:
        s.i = *(const uint8_t *)p != 0;
        break;
    case CK_I8:
        s.i = *(const int8_t *)p;
        break;
    case CK_I16:
        s.i = *(const int16_t *)p;
        break;
    case CK_I32:
        s.i = *(const int32_t *)p;
        break;
    case CK_I64:
        s.i = *(const int64_t *)p;
        break;
    case CK_U8:
        s.u = *(const uint8_t *)p;
        break;
    case CK_U16:
        s.u = *(const uint16_t *)p;
        break;
    case CK_U32:
        s.u = *(const uint32_t *)p;
        break;
    case CK_U64:
        s.u = *(const uint64_t *)p;
        break;
    case CK_F32:
        s.f = *(const float *)p;
        break;
    case CK_F64:
        s.f = *(const double *)p;
        break;
    default:
        break;
    }
    return s;
}

/* ---- describing a dataset ---- */

static const char *filter_name(H5Z_filter_t id, char *buf, size_t n)
{
    switch (id) {
    case H5Z_FILTER_DEFLATE:
        return "deflate";
    case H5Z_FILTER_SHUFFLE:
        return "shuffle";
    case H5Z_FILTER_FLETCHER32:
        return "fletcher32";
    case H5Z_FILTER_SZIP:
        return "szip";
    case H5Z_FILTER_NBIT:
        return "nbit";
    case H5Z_FILTER_SCALEOFFSET:
        return "scaleoffset";
    case 32000:
        return "lzf";
    case 32004:
        return "lz4";
    case 32008:
        return "bitshuffle";
    case H5Z_FILTER_BLOSC_ID:
        return "blosc";
    case CK_H5Z_FILTER_ZSTD:
        return "zstd";
    default:
        snprintf(buf, n, "filter%d", (int)id);
        return buf;
    }
}

static int is_compressor(H5Z_filter_t id)
{
    return id == H5Z_FILTER_DEFLATE || id == CK_H5Z_FILTER_ZSTD ||
           id == H5Z_FILTER_BLOSC_ID || id == H5Z_FILTER_SZIP || id == 32000 ||
           id == 32004;
}

static void append_sep(char *dst, size_t n, const char *sep, const char *part)
{
    size_t used = strlen(dst);

    if (used < n)
        snprintf(dst + used, n - used, "%s%s", used ? sep : "", part);
}

static void append(char *dst, size_t n, const char *part)
{
    append_sep(dst, n, "+", part);
}

/* Reads the filter pipeline of dcpl into info->codec, info->compressor and
 * ha->filt[]; returns 1 if chunkctl can decode the chain itself (deflate,
 * zstd, blosc and shuffle, at most one compressor). */
static int read_filters(hid_t dcpl, size_t esize, ck_array_info *info,
                        h5_array *ha)
{
    int nf = H5Pget_nfilters(dcpl), ours = 1, ncomp = 0;
    char comp[96] = "", rest[96] = "", part[64], nbuf[32];

    if (nf < 0 || nf > H5Z_MAX_NFILTERS)
        nf = 0, ours = 0;
    ha->nfilt = nf;
    for (int i = 0; i < nf; i++) {
        unsigned flags = 0, cd[16] = {0}, config = 0;
        size_t ncd = 16;
        char hname[64];
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd,
                                         sizeof hname, hname, &config);
        if (ncd > 16)
            ncd = 16;
        ha->filt[i] = id;
        ha->shuf_size[i] = esize;
        switch (id) {
        case H5Z_FILTER_DEFLATE:
            info->codec.id = CK_CODEC_ZLIB;
            info->codec.level = ncd > 0 ? (int)cd[0] : 6;
            /* h5py's name, and what --compress gzip writes here */
            snprintf(part, sizeof part, "gzip:%d", info->codec.level);
            break;
        case CK_H5Z_FILTER_ZSTD:
            info->codec.id = CK_CODEC_ZSTD;
            info->codec.level = ncd > 0 ? (int)cd[0] : 3;
            snprintf(part, sizeof part, "zstd:%d", info->codec.level);
            break;
        case H5Z_FILTER_BLOSC_ID: {
            const char *cname = "blosclz";
            static const char *const shuf[] = {"noshuffle", "shuffle",
                                               "bitshuffle"};
            int code = ncd > 6 ? (int)cd[6] : 0;
            unsigned s = ncd > 5 && cd[5] <= 2 ? cd[5] : 1;
            info->codec.id = CK_CODEC_BLOSC;
            info->codec.level = ncd > 4 ? (int)cd[4] : 5;
            info->codec.shuffle = s == 0   ? CK_SHUF_NONE
                                  : s == 1 ? CK_SHUF_BYTE
                                           : CK_SHUF_BIT;
            if (blosc_compcode_to_compname(code, &cname) < 0 || !cname)
                cname = "unknown";
            snprintf(info->codec.cname, sizeof info->codec.cname, "%s", cname);
            snprintf(part, sizeof part, "blosc:%s:%d:%s", cname,
                     info->codec.level, shuf[s]);
            break;
        }
        case H5Z_FILTER_SHUFFLE:
            if (ncd > 0 && cd[0] > 0)
                ha->shuf_size[i] = cd[0];
            if (info->codec.id != CK_CODEC_BLOSC)
                info->codec.shuffle = CK_SHUF_BYTE;
            snprintf(part, sizeof part, "shuffle");
            break;
        default:
            snprintf(part, sizeof part, "%s",
                     filter_name(id, nbuf, sizeof nbuf));
            ours = 0;
            break;
        }
        if (is_compressor(id)) {
            ncomp++;
            append(comp, sizeof comp, part);
        } else {
            append(rest, sizeof rest, part);
        }
    }
    if (ncomp > 1)
        ours = 0; /* the size between two compressors is not known */
    snprintf(info->compressor, sizeof info->compressor, "%s", comp);
    /* Say it the way --compress takes it where that is possible
     * ("gzip:4:shuffle"); other filters follow with '+'. */
    if (ncomp == 1 && strcmp(rest, "shuffle") == 0 &&
        info->codec.id != CK_CODEC_BLOSC)
        append_sep(info->compressor, sizeof info->compressor, ":", "shuffle");
    else if (rest[0])
        append(info->compressor, sizeof info->compressor, rest);
    if (!info->compressor[0])
        snprintf(info->compressor, sizeof info->compressor, "none");
    return ours;
}

/* Virtual chunks of a contiguous dataset: whole trailing axes while they
 * fit VCHUNK_BYTES, part of the next axis, 1 on the axes before, so each
 * chunk is one contiguous run of bytes in the file. */
static void virtual_chunks(int ndim, const int64_t *shape, size_t esize,
                           int64_t *chunks)
{
    int64_t bytes = (int64_t)esize;
    int d = ndim - 1;

    for (; d >= 0; d--) {
        int64_t len = shape[d] > 0 ? shape[d] : 1;
        if (len > VCHUNK_BYTES / bytes)
            break;
        chunks[d] = len;
        bytes *= len;
    }
    if (d >= 0) {
        int64_t part = VCHUNK_BYTES / bytes;
        chunks[d--] = part > 0 ? part : 1;
    }
    for (; d >= 0; d--)
        chunks[d] = 1;
}

/* Fills a->info and ha from dataset dset.  Caller holds h5_mutex. */
static ck_code describe(ck_store *s, const char *name, hid_t dset, ck_array *a,
                        h5_array *ha, ck_err *err)
{
    ck_array_info *info = &a->info;
    h5_store *hs = s->impl;
    hid_t type = -1, space = -1, dcpl = -1;
    hsize_t dims[H5S_MAX_RANK];
    char why[64] = "";
    int exact = 0, ours = 0;
    ck_code rc = CK_OK;
    H5D_fill_value_t fstat = H5D_FILL_VALUE_UNDEFINED;
    H5S_class_t scls;
    H5D_layout_t layout;

    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", name);
    info->order = 'C';
    info->stored_bytes = -1;
    info->chunks_stored = -1;
    ha->contig_addr = HADDR_UNDEF;
    if ((type = H5Dget_type(dset)) < 0 || (space = H5Dget_space(dset)) < 0 ||
        (dcpl = H5Dget_create_plist(dset)) < 0) {
        rc = h5_fail(err, CK_EFORMAT, "%s:%s: cannot read dataset header",
                     s->path, name);
        goto out;
    }
    info->dtype = map_type(type, &info->big_endian, &exact, why, sizeof why);
    if (info->dtype == CK_DT_INVALID) {
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s:%s: %s is not supported (numbers and bool only)",
                        s->path, name, why);
        goto out;
    }
    ha->esize = ck_dtype_size(info->dtype);
    ha->swap = exact && ha->esize > 1 && info->big_endian != host_big_endian();
    if ((ha->mtype = make_type(info->dtype, 0)) < 0) {
        rc = h5_fail(err, CK_EIO, "%s:%s: cannot make a memory type", s->path,
                     name);
        goto out;
    }

    scls = H5Sget_simple_extent_type(space);
    if (scls == H5S_SIMPLE) {
        int nd = H5Sget_simple_extent_dims(space, dims, NULL);
        if (nd < 0 || nd > CK_MAX_DIMS) {
            rc = ck_err_set(err, CK_ENOTSUP, "%s:%s: %d dimensions", s->path,
                            name, nd);
            goto out;
        }
        info->ndim = nd;
        for (int d = 0; d < nd; d++) {
            if (dims[d] > (hsize_t)INT64_MAX) {
                rc = ck_err_set(err, CK_EFORMAT, "%s:%s: bad shape", s->path,
                                name);
                goto out;
            }
            info->shape[d] = (int64_t)dims[d];
        }
    } else if (scls != H5S_SCALAR) {
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s:%s: a dataset with a null dataspace (no "
                        "elements) is not supported",
                        s->path, name);
        goto out;
    }

    ha->path = PATH_H5READ;
    layout = H5Pget_layout(dcpl);
    if (layout == H5D_CHUNKED && info->ndim > 0) {
        hsize_t cd[H5S_MAX_RANK];
        hsize_t n = 0;
        if (H5Pget_chunk(dcpl, info->ndim, cd) != info->ndim) {
            rc = h5_fail(err, CK_EFORMAT, "%s:%s: bad chunk shape", s->path,
                         name);
            goto out;
        }
        for (int d = 0; d < info->ndim; d++)
            info->chunks[d] =
                cd[d] > 0 && cd[d] < (hsize_t)INT64_MAX ? (int64_t)cd[d] : 1;
        info->layout = CK_LAYOUT_CHUNKED;
        ours = read_filters(dcpl, ha->esize, info, ha);
        if (ours && exact && hs->fd >= 0)
            ha->path = PATH_RAW_CHUNK;
        if (H5Dget_num_chunks(dset, space, &n) >= 0)
            info->chunks_stored = (int64_t)n;
    } else {
        snprintf(info->compressor, sizeof info->compressor, "none");
        if (info->ndim > 0 && layout == H5D_COMPACT) {
            for (int d = 0; d < info->ndim; d++)
                info->chunks[d] = info->shape[d] > 0 ? info->shape[d] : 1;
        } else if (info->ndim > 0) {
            virtual_chunks(info->ndim, info->shape, ha->esize, info->chunks);
        }
        info->layout =
            layout == H5D_COMPACT ? CK_LAYOUT_COMPACT : CK_LAYOUT_CONTIGUOUS;
        if (layout == H5D_CONTIGUOUS && info->ndim > 0 && exact &&
            hs->fd >= 0 && H5Pget_external_count(dcpl) == 0) {
            /* Counted from the start of the file, user block included. */
            ha->contig_addr = H5Dget_offset(dset);
            if (ha->contig_addr != HADDR_UNDEF)
                ha->path = PATH_RAW_CONTIG;
        }
    }
    {
        int64_t cb = (int64_t)ha->esize;
        for (int d = 0; d < info->ndim; d++) {
            if (info->chunks[d] > H5_CHUNK_MAX / cb && layout == H5D_CHUNKED) {
                rc = ck_err_set(err, CK_EFORMAT, "%s:%s: chunks too large",
                                s->path, name);
                goto out;
            }
            cb *= info->chunks[d];
        }
        ha->chunk_bytes = (size_t)cb;
    }

    if (H5Pfill_value_defined(dcpl, &fstat) >= 0 &&
        fstat != H5D_FILL_VALUE_UNDEFINED) {
        unsigned char fv[16] = {0};
        if (H5Pget_fill_value(dcpl, ha->mtype, fv) >= 0) {
            info->has_fill = 1;
            info->fill = scalar_of(info->dtype, fv);
        }
    }
    info->stored_bytes = (int64_t)H5Dget_storage_size(dset);
out:
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    return rc;
}

/* ---- store open/close ---- */

int ck_h5_sniff(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'H',  'D',  'F',
                                         '\r', '\n', 0x1a, '\n'};
    unsigned char buf[8];
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;

    if (fd < 0)
        return 0;
    /* The superblock sits at 0 or after a user block of 512, 1024, 2048,
     * ... bytes (HDF5 file format spec, section II.A). */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        for (off_t off = 0; off + 8 <= st.st_size && !found;
             off = off ? off * 2 : 512) {
            found = pread(fd, buf, 8, off) == 8 && memcmp(buf, sig, 8) == 0;
        }
    }
    close(fd);
    return found;
}

/* A file access plist whose H5Fclose also closes every object still open
 * in the file, so flush() can hand back a closed file. */
static hid_t make_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);

    if (fapl >= 0 && H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

static ck_code h5_open(ck_store *s, ck_err *err)
{
    h5_store *hs = calloc(1, sizeof *hs);
    hid_t fapl = -1;
    ck_code rc = CK_OK;

    if (!hs)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    hs->file = -1;
    hs->fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (hs->fd < 0) {
        rc = ck_err_set(err, CK_EIO, "%s: %s", s->path, strerror(errno));
        free(hs);
        return rc;
    }
    {
        struct stat st;
        hs->size = fstat(hs->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    lock();
    if (!h5_filters_ok)
        ck_log(CK_LOG_WARN, "could not register the zstd and blosc filters");
    if ((fapl = make_fapl()) < 0) {
        rc = h5_fail(err, CK_EIO, "%s: cannot set up HDF5", s->path);
        goto out;
    }
    hs->file = H5Fopen(s->path, H5F_ACC_RDONLY, fapl);
    if (hs->file < 0) {
        rc = ck_err_set(err, CK_EFORMAT, "%s: not an HDF5 file or damaged",
                        s->path);
        goto out;
    }
out:
    if (fapl >= 0)
        H5Pclose(fapl);
    if (rc != CK_OK && hs->file >= 0)
        H5Fclose(hs->file);
    unlock();
    if (rc != CK_OK) {
        close(hs->fd);
        free(hs);
        return rc;
    }
    s->impl = hs;
    return CK_OK;
}

static void h5_close(ck_store *s)
{
    h5_store *hs = s->impl;

    if (!hs)
        return;
    if (hs->file >= 0) {
        lock();
        H5Fclose(hs->file);
        unlock();
    }
    if (hs->fd >= 0)
        close(hs->fd);
    free(hs);
    s->impl = NULL;
}

static ck_code h5_create(ck_store *s, ck_err *err)
{
    h5_store *hs = calloc(1, sizeof *hs);
    hid_t fapl;
    ck_code rc = CK_OK;

    if (!hs)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    hs->fd = -1; /* written chunks may sit in HDF5's caches: no raw reads */
    lock();
    /* Default library version bounds, so that older HDF5 reads the file. */
    if ((fapl = make_fapl()) < 0 ||
        (hs->file = H5Fcreate(s->tmp, H5F_ACC_EXCL, H5P_DEFAULT, fapl)) < 0)
        rc = h5_fail(err, CK_EIO, "%s: cannot create %s", s->path, s->tmp);
    if (fapl >= 0)
        H5Pclose(fapl);
    unlock();
    if (rc != CK_OK) {
        free(hs);
        return rc;
    }
    s->impl = hs;
    return CK_OK;
}

static ck_code h5_flush(ck_store *s, ck_err *err)
{
    h5_store *hs = s->impl;
    ck_code rc = CK_OK;

    if (!hs || hs->file < 0)
        return CK_OK;
    lock();
    if (H5Fclose(hs->file) < 0)
        rc = h5_fail(err, CK_EIO, "%s: cannot close %s", s->path, s->tmp);
    hs->file = -1;
    unlock();
    return rc;
}

/* ---- listing ---- */

typedef struct list_ctx {
    ck_store *s;
    ck_names *out;
    ck_err *err;
    ck_code rc;
} list_ctx;

static herr_t list_cb(hid_t group, const char *name, const H5L_info_t *li,
                      void *data)
{
    list_ctx *c = data;
    char why[64] = "unreadable", full[1024];
    int be, exact;
    hid_t obj, type, space;
    ck_dtype dt;
    H5S_class_t scls;

    if (li->type != H5L_TYPE_HARD)
        return 0;
    if ((obj = H5Oopen(group, name, H5P_DEFAULT)) < 0)
        return 0;
    if (H5Iget_type(obj) != H5I_DATASET) {
        H5Oclose(obj);
        return 0;
    }
    type = H5Dget_type(obj);
    space = H5Dget_space(obj);
    dt = type >= 0 ? map_type(type, &be, &exact, why, sizeof why)
                   : CK_DT_INVALID;
    scls = space >= 0 ? H5Sget_simple_extent_type(space) : H5S_NO_CLASS;
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    H5Oclose(obj);
    snprintf(full, sizeof full, "/%s", name);
    if (dt == CK_DT_INVALID || (scls != H5S_SIMPLE && scls != H5S_SCALAR)) {
        ck_log(CK_LOG_DEBUG, "%s:%s: skipped (%s)", c->s->path, full,
               dt == CK_DT_INVALID ? why : "no elements");
        return 0;
    }
    c->rc = ck_names_push(c->out, full, c->err);
    return c->rc == CK_OK ? 0 : -1;
}

static ck_code h5_list(ck_store *s, ck_names *out, ck_err *err)
{
    h5_store *hs = s->impl;
    list_ctx c = {s, out, err, CK_OK};
    herr_t r;

    lock();
    r = H5Lvisit(hs->file, H5_INDEX_NAME, H5_ITER_INC, list_cb, &c);
    if (r < 0 && c.rc == CK_OK)
        c.rc = h5_fail(err, CK_EFORMAT, "%s: cannot list datasets", s->path);
    unlock();
    return c.rc;
}

/* ---- arrays ---- */

/* The dataset access plist: a tiny chunk cache, since every chunk is read
 * once and whole, so --memory holds however many datasets are open. */
static hid_t make_dapl(void)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);

    if (dapl >= 0 && H5Pset_chunk_cache(dapl, 1, 0, 1.0) < 0) {
        H5Pclose(dapl);
        return -1;
    }
    return dapl;
}

static void free_array(h5_array *ha)
{
    if (!ha)
        return;
    if (ha->dset >= 0 && ha->hs->file >= 0)
        H5Dclose(ha->dset); /* else flush() closed it with the file */
    if (ha->mtype >= 0)
        H5Tclose(ha->mtype);
    free(ha->index);
    free(ha);
}

static h5_array *new_array(h5_store *hs)
{
    h5_array *ha = calloc(1, sizeof *ha);

    if (ha) {
        ha->hs = hs;
        ha->dset = -1;
        ha->mtype = -1;
    }
    return ha;
}

static ck_code h5_array_open(ck_store *s, const char *name, ck_array *a,
                             ck_err *err)
{
    h5_store *hs = s->impl;
    h5_array *ha = new_array(hs);
    hid_t obj, dapl = -1;
    ck_code rc = CK_OK;

    if (!ha)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    lock();
    /* H5Oopen first: it tells a group from a missing name. */
    obj = H5Oopen(hs->file, name, H5P_DEFAULT);
    if (obj < 0) {
        rc = ck_err_set(err, CK_EFORMAT, "%s: no dataset '%s'", s->path, name);
        goto out;
    }
    if (H5Iget_type(obj) != H5I_DATASET) {
        rc = ck_err_set(
            err, CK_EFORMAT, "%s: '%s' is %s, not a dataset", s->path, name,
            H5Iget_type(obj) == H5I_GROUP ? "a group" : "a named type");
        H5Oclose(obj);
        goto out;
    }
    H5Oclose(obj);
    if ((dapl = make_dapl()) < 0 ||
        (ha->dset = H5Dopen2(hs->file, name, dapl)) < 0) {
        rc = h5_fail(err, CK_EFORMAT, "%s: cannot open dataset '%s'", s->path,
                     name);
        goto out;
    }
    rc = describe(s, name, ha->dset, a, ha, err);
out:
    if (dapl >= 0)
        H5Pclose(dapl);
    if (rc != CK_OK)
        free_array(ha);
    unlock();
    if (rc == CK_OK)
        a->impl = ha;
    return rc;
}

static void h5_array_close(ck_array *a)
{
    lock();
    free_array(a->impl);
    unlock();
    a->impl = NULL;
}

/* Scratch for one read_chunk or write_chunk: one raw buffer big enough for
 * any stored chunk we accept (ck_stored_max) or any encoding of a chunk
 * (ck_codec_bound), plus one chunk for the other side of a shuffle or a
 * decode that must not land on its own input, plus alignment slack.  The
 * H5Dread fallback uses none of it, but HDF5 then holds about as much of
 * its own per read (stored chunk and decoded chunk; the chunk cache holds
 * nothing), so it is charged the same.  Contiguous data is pread straight
 * into the caller's buffer. */
static size_t h5_scratch_bytes(const ck_array *a)
{
    const h5_array *ha = a->impl;
    size_t cb = ha->chunk_bytes;
    size_t raw = ck_stored_max(cb);
    size_t bound = ha->writing && ha->wcodec.id != CK_CODEC_NONE
                       ? ck_codec_bound(&ha->wcodec, cb)
                       : 0;

    if (ha->writing) /* the shuffled copy, then the encoded bytes */
        return (ha->wshuffle ? cb : 0) + bound + 3 * 64;
    if (ha->path == PATH_RAW_CONTIG)
        return 64;
    if (ha->path == PATH_RAW_CHUNK) /* unfiltered chunks land in dst */
        return ha->nfilt ? raw + (ha->nfilt > 1 ? cb : 0) + 3 * 64 : 64;
    return raw + cb + 3 * 64;
}

/* Reads the element box of chunk 'coords' with H5Dread into dst (a full
 * chunk), converting to the native type.  Holds the lock throughout. */
static ck_code read_h5(ck_array *a, const int64_t *coords, void *dst,
                       ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_array_info *info = &a->info;
    hsize_t start[CK_MAX_DIMS], count[CK_MAX_DIMS], full[CK_MAX_DIMS];
    hsize_t zero[CK_MAX_DIMS] = {0};
    hid_t fspace = -1, mspace = -1;
    ck_code rc = CK_OK;
    char cs[160];

    for (int d = 0; d < info->ndim; d++) {
        int64_t s0 = coords[d] * info->chunks[d];
        int64_t n = info->shape[d] - s0;
        start[d] = (hsize_t)s0;
        count[d] = (hsize_t)(n < info->chunks[d] ? n : info->chunks[d]);
        full[d] = (hsize_t)info->chunks[d];
    }
    lock();
    if (ha->hs->file < 0) {
        rc = ck_err_set(err, CK_EUSAGE, "%s:%s: file already closed",
                        a->store->path, info->name);
        goto out;
    }
    if (info->ndim > 0) {
        if ((fspace = H5Dget_space(ha->dset)) < 0 ||
            H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count,
                                NULL) < 0 ||
            (mspace = H5Screate_simple(info->ndim, full, NULL)) < 0 ||
            H5Sselect_hyperslab(mspace, H5S_SELECT_SET, zero, NULL, count,
                                NULL) < 0) {
            rc = h5_fail(err, CK_EIO, "%s:%s: chunk %s: bad selection",
                         a->store->path, info->name,
                         chunk_str(a, coords, cs, sizeof cs));
            goto out;
        }
    }
    if (H5Dread(ha->dset, ha->mtype, info->ndim > 0 ? mspace : H5S_ALL,
                info->ndim > 0 ? fspace : H5S_ALL, H5P_DEFAULT, dst) < 0)
        rc = h5_fail(err, CK_OK, "%s:%s: chunk %s", a->store->path, info->name,
                     chunk_str(a, coords, cs, sizeof cs));
out:
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    unlock();
    return rc;
}

/* pread()s exactly n bytes at off; CK_ECORRUPT when the file is short. */
static ck_code pread_all(ck_array *a, const int64_t *coords, void *buf,
                         size_t n, uint64_t off, ck_err *err)
{
    char cs[160];
    size_t got = 0;

    if (off > (uint64_t)INT64_MAX - n)
        return ck_err_set(err, CK_ECORRUPT, "%s:%s: chunk %s: bad address",
                          a->store->path, a->info.name,
                          chunk_str(a, coords, cs, sizeof cs));
    while (got < n) {
        ssize_t r = pread(((h5_array *)a->impl)->hs->fd, (char *)buf + got,
                          n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ck_err_set(err, CK_EIO, "%s:%s: chunk %s: %s",
                              a->store->path, a->info.name,
                              chunk_str(a, coords, cs, sizeof cs),
                              strerror(errno));
        if (r == 0)
            return ck_err_set(err, CK_ECORRUPT,
                              "%s:%s: chunk %s: %zu of %zu bytes at offset "
                              "%llu (file truncated?)",
                              a->store->path, a->info.name,
                              chunk_str(a, coords, cs, sizeof cs), got, n,
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

/* 1 if the call that just failed did so because the chunk was never
 * written: HDF5 1.10 reports that as an error of H5Dget_chunk_storage_size
 * (later releases return a size of 0). */
static int chunk_not_allocated(void)
{
    h5_why w = {"", 0, 0};

    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, why_cb, &w);
    /* An error stack left standing leaks its strings in HDF5 1.10 (LSan
     * sees them at exit): clear it once read. */
    H5Eclear2(H5E_DEFAULT);
    return strcmp(w.desc, "chunk storage is not allocated") == 0;
}

/* Chunk-location indexes are made for datasets of at most this many
 * chunks: HDF5 1.10 finds the i-th chunk by walking the chunk index (about
 * 10 ns a chunk), so the whole table costs INDEX_MAX^2 / 2 steps (~20 ms). */
#define INDEX_MAX 2048

/* Fills ha->index from H5Dget_chunk_info, under the lock.  Left unused
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

    ok = ha->hs->fd >= 0 && ha->hs->file >= 0 &&
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
 * (*size 0: never written), 0 when the lock path must. */
static int indexed(ck_array *a, const int64_t *coords, uint64_t *addr,
                   hsize_t *size, uint32_t *mask)
{
    h5_array *ha = a->impl;
    int64_t lin = 0;

    if (__atomic_load_n(&ha->index_state, __ATOMIC_ACQUIRE) == 0) {
        lock();
        if (ha->index_state == 0)
            build_index(a);
        unlock();
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
static int h5_view_chunk(ck_array *a, const int64_t *coords, size_t off,
                         size_t len, ck_chunk_view *v)
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
static int h5_raw(ck_array *a)
{
    h5_array *ha = a->impl;
    uint64_t addr;
    hsize_t size;
    uint32_t mask;
    int64_t zero[CK_MAX_DIMS] = {0};

    return !ha->writing && ha->path == PATH_RAW_CHUNK && ha->nfilt == 0 &&
           indexed(a, zero, &addr, &size, &mask);
}

/* ck_store_ops.read_bytes of a raw array (h5_raw). */
static ck_code h5_read_bytes(ck_array *a, const int64_t *coords, size_t off,
                             size_t len, void *dst, ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_array_info *info = &a->info;
    uint64_t addr = 0;
    hsize_t size = 0;
    uint32_t mask = 0;
    char cs[160];

    if (!indexed(a, coords, &addr, &size, &mask))
        return ck_err_set(err, CK_ENOTSUP, "%s:%s: chunk %s: not indexed",
                          a->store->path, info->name,
                          chunk_str(a, coords, cs, sizeof cs));
    if (size == 0) {
        fill_missing(a, dst, len / ha->esize);
        return CK_OK;
    }
    if (size != ha->chunk_bytes)
        return ck_err_set(err, CK_ECORRUPT,
                          "%s:%s: chunk %s: %llu bytes stored, expected %zu",
                          a->store->path, info->name,
                          chunk_str(a, coords, cs, sizeof cs),
                          (unsigned long long)size, ha->chunk_bytes);
    if (addr > UINT64_MAX - off)
        return ck_err_set(err, CK_ECORRUPT, "%s:%s: chunk %s: bad address",
                          a->store->path, info->name,
                          chunk_str(a, coords, cs, sizeof cs));
    CK_TRY(pread_all(a, coords, dst, len, addr + off, err));
    if (ha->swap)
        ck_byteswap(dst, ha->esize, len / ha->esize);
    return CK_OK;
}

/* The fast path.  A dataset of at most INDEX_MAX chunks has their
 * locations indexed once (build_index) and its chunks are pread() without
 * the lock, so threads copy bytes out of the page cache side by side.
 * Larger ones: H5Dget_chunk_info_by_coord would give the address, but HDF5
 * 1.10 answers it by walking every chunk (about 1 ms per lookup at
 * 100,000 chunks), so their raw bytes are fetched with H5Dread_chunk, an
 * index lookup, under the lock.  Either way the decode, the expensive
 * part, runs outside it. */
static ck_code read_raw_chunk(ck_array *a, const int64_t *coords, void *dst,
                              ck_arena *scratch, ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_array_info *info = &a->info;
    size_t cb = ha->chunk_bytes, cur_n;
    hsize_t off[CK_MAX_DIMS], size = 0;
    uint32_t mask = 0;
    void *raw = NULL, *tmp = NULL, *cur;
    char cs[160];
    ck_code rc = CK_OK;
    int missing = 0;

    chunk_str(a, coords, cs, sizeof cs);
    for (int d = 0; d < info->ndim; d++)
        off[d] = (hsize_t)(coords[d] * info->chunks[d]);
    /* Where the chunk is: from the index without the lock, or from HDF5
     * under it. */
    uint64_t addr = 0;
    int have = indexed(a, coords, &addr, &size, &mask);
    if (!have)
        lock();
    if (have) {
        missing = size == 0;
    } else if (ha->hs->file < 0) {
        rc = ck_err_set(err, CK_EUSAGE, "%s:%s: file already closed",
                        a->store->path, info->name);
    } else if (H5Dget_chunk_storage_size(ha->dset, off, &size) < 0) {
        if (chunk_not_allocated())
            missing = 1;
        else
            rc = h5_fail(err, CK_EFORMAT, "%s:%s: chunk %s: cannot look it up",
                         a->store->path, info->name, cs);
    } else {
        missing = size == 0;
    }
    if (rc != CK_OK || missing) {
        /* nothing to fetch */
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
        rc = h5_fail(err, CK_ECORRUPT,
                     "%s:%s: chunk %s: cannot read %llu stored bytes (file "
                     "truncated?)",
                     a->store->path, info->name, cs, (unsigned long long)size);
    }
    if (!have)
        unlock();
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
    /* Undo the filters last to first, skipping those the writer skipped
     * (their bit is set in the chunk's filter mask). */
    cur = raw;
    cur_n = (size_t)size;
    for (int i = ha->nfilt - 1; i >= 0 && rc == CK_OK; i--) {
        void *out;
        if (mask & (1u << i))
            continue;
        if (cur == dst) {
            if (!tmp && !(tmp = ck_arena_alloc(scratch, cb)))
                return ck_err_set(err, CK_ENOMEM,
                                  "%s:%s: scratch arena too small",
                                  a->store->path, info->name);
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
    if (rc != CK_OK) {
        ck_err_prefix(err, "%s:%s: chunk %s", a->store->path, info->name,
                      chunk_str(a, coords, cs, sizeof cs));
        return rc;
    }
    if (cur != dst)
        memcpy(dst, cur, cb);
    if (ha->swap)
        ck_byteswap(dst, ha->esize, cb / ha->esize);
    return CK_OK;
}

static ck_code h5_read_chunk(ck_array *a, const int64_t *coords, void *dst,
                             ck_arena *scratch, ck_err *err)
{
    h5_array *ha = a->impl;
    char cs[160];

    for (int d = 0; d < a->info.ndim; d++)
        if (coords[d] < 0 || coords[d] >= a->grid.nchunks[d])
            return ck_err_set(err, CK_EUSAGE,
                              "%s:%s: chunk %s is outside the array",
                              a->store->path, a->info.name,
                              chunk_str(a, coords, cs, sizeof cs));
    switch (ha->path) {
    case PATH_RAW_CHUNK:
        return read_raw_chunk(a, coords, dst, scratch, err);
    case PATH_RAW_CONTIG:
        return read_raw_contig(a, coords, dst, err);
    default:
        return read_h5(a, coords, dst, err);
    }
}

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
    if (c->id != CK_CODEC_BLOSC && c->shuffle == CK_SHUF_BIT)
        return ck_err_set(err, CK_ENOTSUP,
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
    return h5_fail(err, CK_EIO, "%s:%s: cannot set up the filters", s->path,
                   spec->name);
}

static ck_code h5_array_create(ck_store *s, const ck_array_spec *spec,
                               ck_array *a, ck_err *err)
{
    h5_store *hs = s->impl;
    h5_array *ha = new_array(hs);
    hid_t ftype = -1, space = -1, dcpl = -1, lcpl = -1, dapl = -1;
    hsize_t dims[CK_MAX_DIMS], maxd[CK_MAX_DIMS], cdims[CK_MAX_DIMS];
    size_t esize = ck_dtype_size(spec->dtype);
    int64_t cb = (int64_t)esize;
    ck_code rc = CK_OK;

    if (!ha)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    if (esize == 0 || spec->ndim < 0 || spec->ndim > CK_MAX_DIMS) {
        free(ha);
        return ck_err_set(err, CK_EUSAGE, "%s:%s: bad array spec", s->path,
                          spec->name);
    }
    /* HDF5 wants chunks no larger than a fixed dimension: clip them (the
     * caller takes its grid from a->info); a 0-long axis is unlimited. */
    for (int d = 0; d < spec->ndim; d++) {
        int64_t c = spec->chunks[d] > 0 ? spec->chunks[d] : 1;
        if (spec->shape[d] > 0 && c > spec->shape[d])
            c = spec->shape[d];
        dims[d] = (hsize_t)spec->shape[d];
        maxd[d] = spec->shape[d] > 0 ? dims[d] : H5S_UNLIMITED;
        cdims[d] = (hsize_t)c;
        if (c > H5_CHUNK_MAX / cb) {
            free(ha);
            return ck_err_set(err, CK_ENOTSUP,
                              "%s:%s: HDF5 chunks must be smaller than 4 GiB",
                              s->path, spec->name);
        }
        cb *= c;
    }
    lock();
    if ((ftype = make_type(spec->dtype, 1)) < 0 ||
        (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
        (lcpl = H5Pcreate(H5P_LINK_CREATE)) < 0 ||
        H5Pset_create_intermediate_group(lcpl, 1) < 0 ||
        (dapl = make_dapl()) < 0 ||
        (space = spec->ndim > 0 ? H5Screate_simple(spec->ndim, dims, maxd)
                                : H5Screate(H5S_SCALAR)) < 0 ||
        (ha->mtype = make_type(spec->dtype, 0)) < 0) {
        rc = h5_fail(err, CK_EIO, "%s:%s: cannot set up the dataset", s->path,
                     spec->name);
        goto out;
    }
    if (spec->ndim > 0) {
        if (H5Pset_chunk(dcpl, spec->ndim, cdims) < 0) {
            rc = h5_fail(err, CK_EUSAGE, "%s:%s: bad chunk shape", s->path,
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
            rc = h5_fail(err, CK_EIO, "%s:%s: cannot set the fill value",
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
        rc = h5_fail(err, CK_EIO, "%s: cannot create dataset '%s'", s->path,
                     spec->name);
        goto out;
    }
    H5Tclose(ha->mtype);
    ha->mtype = -1;
    if ((rc = describe(s, spec->name, ha->dset, a, ha, err)) != CK_OK)
        goto out;
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
    if (rc != CK_OK)
        free_array(ha);
    unlock();
    if (rc == CK_OK)
        a->impl = ha;
    return rc;
}

static ck_code h5_write_chunk(ck_array *a, const int64_t *coords,
                              const void *src, ck_arena *scratch, ck_err *err)
{
    h5_array *ha = a->impl;
    const ck_array_info *info = &a->info;
    size_t cb = ha->chunk_bytes, n = cb;
    hsize_t off[CK_MAX_DIMS];
    const void *in = src;
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
                              chunk_str(a, coords, cs, sizeof cs));
        off[d] = (hsize_t)(coords[d] * info->chunks[d]);
    }
    if (info->ndim == 0) { /* a scalar dataset has no chunks */
        lock();
        if (ha->hs->file < 0 || H5Dwrite(ha->dset, ha->mtype, H5S_ALL, H5S_ALL,
                                         H5P_DEFAULT, src) < 0)
            rc = h5_fail(err, CK_EIO, "%s:%s: cannot write", a->store->path,
                         info->name);
        unlock();
        return rc;
    }
    /* Encode outside the lock; only the write itself is serialised. */
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
                          chunk_str(a, coords, cs, sizeof cs));
            return rc;
        }
        in = out;
    }
    lock();
    if (ha->hs->file < 0 ||
        H5Dwrite_chunk(ha->dset, H5P_DEFAULT, 0, off, n, in) < 0)
        rc = h5_fail(err, CK_EIO, "%s:%s: chunk %s: cannot write",
                     a->store->path, info->name,
                     chunk_str(a, coords, cs, sizeof cs));
    unlock();
    return rc;
}

/* ---- attributes ---- */

/* cJSON prints numbers with 15 significant digits when that is "close
 * enough", which rounds 2^53 + 1 and 0.1 + 0.2; these print the shortest
 * text that reads back exactly, as raw JSON. */
static cJSON *json_double(double v)
{
    char buf[40];

    if (isnan(v))
        return cJSON_CreateString("NaN");
    if (isinf(v))
        return cJSON_CreateString(v > 0 ? "Infinity" : "-Infinity");
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return cJSON_CreateRaw(buf);
}

static cJSON *json_int(long long v)
{
    char buf[32];

    snprintf(buf, sizeof buf, "%lld", v);
    return cJSON_CreateRaw(buf);
}

static cJSON *json_uint(unsigned long long v)
{
    char buf[32];

    snprintf(buf, sizeof buf, "%llu", v);
    return cJSON_CreateRaw(buf);
}

/* Turns a flat JSON array of a C-order N-d attribute into nested arrays
 * (what NumPy's tolist() gives, and how zarr keeps array attributes).
 * Takes flat; NULL when out of memory. */
static cJSON *nest(cJSON *flat, const hsize_t *dims, int nd)
{
    for (int d = nd - 1; d >= 1; d--) {
        cJSON *outer = cJSON_CreateArray(), *item;
        if (!outer) {
            cJSON_Delete(flat);
            return NULL;
        }
        while (flat->child) {
            cJSON *row = cJSON_CreateArray();
            if (!row) {
                cJSON_Delete(outer);
                cJSON_Delete(flat);
                return NULL;
            }
            for (hsize_t k = 0; k < dims[d] && flat->child; k++) {
                item = cJSON_DetachItemFromArray(flat, 0);
                cJSON_AddItemToArray(row, item);
            }
            cJSON_AddItemToArray(outer, row);
        }
        cJSON_Delete(flat);
        flat = outer;
    }
    return flat;
}

/* The value of one attribute as JSON, or NULL to skip it. */
static cJSON *attr_json(hid_t attr, const char *name, const char *where)
{
    hid_t type = H5Aget_type(attr), space = H5Aget_space(attr), mt = -1;
    H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    H5S_class_t scls =
        space >= 0 ? H5Sget_simple_extent_type(space) : H5S_NO_CLASS;
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    int nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    cJSON *v = NULL, *arr = NULL;
    void *buf = NULL;
    size_t esz = 8;
    int isbool = cls == H5T_ENUM && is_bool_enum(type);
    int isvstr = cls == H5T_STRING && H5Tis_variable_str(type) > 0;
    int got = 0;

    if (!(scls == H5S_SCALAR ||
          (scls == H5S_SIMPLE && nd >= 1 && nd <= CK_MAX_DIMS)) ||
        n < 0 || n > ATTR_MAX_ELEMS)
        goto skip;
    if (cls == H5T_INTEGER)
        mt = H5Tcopy(H5Tget_sign(type) == H5T_SGN_NONE ? H5T_NATIVE_ULLONG
                                                       : H5T_NATIVE_LLONG);
    else if (cls == H5T_FLOAT)
        mt = H5Tcopy(H5T_NATIVE_DOUBLE);
    else if (isbool)
        mt = make_type(CK_BOOL, 0), esz = 1;
    else if (cls == H5T_STRING && isvstr) {
        mt = H5Tcopy(H5T_C_S1);
        if (mt >= 0 && (H5Tset_size(mt, H5T_VARIABLE) < 0 ||
                        H5Tset_cset(mt, H5Tget_cset(type)) < 0)) {
            H5Tclose(mt);
            mt = -1;
        }
        esz = sizeof(char *);
    } else if (cls == H5T_STRING) {
        mt = H5Tcopy(type);
        esz = H5Tget_size(type);
    } else {
        goto skip;
    }
    if (mt < 0 || esz == 0 || !(buf = calloc((size_t)(n ? n : 1), esz)) ||
        H5Aread(attr, mt, buf) < 0)
        goto skip;
    got = 1;
    if (scls == H5S_SIMPLE && !(arr = cJSON_CreateArray()))
        goto skip;
    for (hssize_t i = 0; i < n; i++) {
        cJSON *item = NULL;
        if (cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_NONE)
            item = json_uint(((unsigned long long *)buf)[i]);
        else if (cls == H5T_INTEGER)
            item = json_int(((long long *)buf)[i]);
        else if (cls == H5T_FLOAT)
            item = json_double(((double *)buf)[i]);
        else if (isbool)
            item = cJSON_CreateBool(((int8_t *)buf)[i] != 0);
        else if (isvstr) {
            const char *p = ((char **)buf)[i];
            item = cJSON_CreateString(p ? p : "");
        } else {
            const char *p = (const char *)buf + (size_t)i * esz;
            size_t len = strnlen(p, esz);
            char *tmp = malloc(len + 1);
            if (tmp) {
                memcpy(tmp, p, len);
                tmp[len] = '\0';
                if (H5Tget_strpad(type) == H5T_STR_SPACEPAD)
                    while (len > 0 && tmp[len - 1] == ' ')
                        tmp[--len] = '\0';
                item = cJSON_CreateString(tmp);
                free(tmp);
            }
        }
        if (!item)
            goto skip;
        if (!arr) {
            v = item;
            break;
        }
        cJSON_AddItemToArray(arr, item);
    }
    if (arr && nd > 1) {
        hsize_t dims[CK_MAX_DIMS];
        H5Sget_simple_extent_dims(space, dims, NULL);
        if (!(arr = nest(arr, dims, nd)))
            goto skip;
    }
    if (arr) {
        v = arr;
        arr = NULL;
    }
    goto out;
skip:
    ck_log(CK_LOG_NOTE, "%s: attribute '%s' skipped (%s)", where, name,
           class_name(cls));
out:
    if (got && isvstr)
        H5Dvlen_reclaim(mt, space, H5P_DEFAULT, buf);
    free(buf);
    cJSON_Delete(arr);
    if (mt >= 0)
        H5Tclose(mt);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    return v;
}

static ck_code open_object(ck_store *s, const char *name, hid_t *out,
                           ck_err *err)
{
    h5_store *hs = s->impl;
    const char *n = name && *name ? name : "/";

    if (!hs || hs->file < 0)
        return ck_err_set(err, CK_EUSAGE, "%s: file already closed", s->path);
    *out = H5Oopen(hs->file, n, H5P_DEFAULT);
    if (*out < 0)
        return ck_err_set(err, CK_EFORMAT, "%s: no group or dataset '%s'",
                          s->path, n);
    return CK_OK;
}

typedef struct attr_ctx {
    cJSON *obj;
    const char *where;
} attr_ctx;

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *ai,
                      void *data)
{
    attr_ctx *c = data;
    hid_t attr = H5Aopen(loc, name, H5P_DEFAULT);
    cJSON *v;

    (void)ai;
    if (attr < 0)
        return 0;
    v = attr_json(attr, name, c->where);
    H5Aclose(attr);
    if (v)
        cJSON_AddItemToObject(c->obj, name, v);
    return 0;
}

static ck_code h5_get_attrs(ck_store *s, const char *name, char **json,
                            ck_err *err)
{
    char where[PATH_MAX + 520];
    hid_t obj = -1;
    char *text = NULL;
    cJSON *out;
    attr_ctx c;
    ck_code rc;

    snprintf(where, sizeof where, "%s:%s", s->path, name ? name : "/");
    if (!(out = cJSON_CreateObject()))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    c.obj = out;
    c.where = where;
    lock();
    rc = open_object(s, name, &obj, err);
    if (rc == CK_OK &&
        H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, NULL, attr_cb, &c) < 0)
        rc = h5_fail(err, CK_EFORMAT, "%s: cannot read attributes", where);
    if (obj >= 0)
        H5Oclose(obj);
    unlock();
    if (rc == CK_OK && !(text = cJSON_PrintUnformatted(out)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    cJSON_Delete(out);
    if (rc == CK_OK)
        *json = text;
    return rc;
}

/* A number in JSON, or zarr's spelling of a non-finite float. */
static int json_num(const cJSON *v, double *out)
{
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return 1;
    }
    if (cJSON_IsString(v)) {
        if (strcmp(v->valuestring, "NaN") == 0)
            *out = NAN;
        else if (strcmp(v->valuestring, "Infinity") == 0)
            *out = INFINITY;
        else if (strcmp(v->valuestring, "-Infinity") == 0)
            *out = -INFINITY;
        else
            return 0;
        return 1;
    }
    return 0;
}

static int integral(double v)
{
    return isfinite(v) && v == floor(v) && fabs(v) < 9.2e18;
}

/* Writes one attribute; returns 0 when the value has no HDF5 form (the
 * caller notes it), -1 on an HDF5 failure. */
static int write_attr_nd(hid_t obj, const char *name, const cJSON *v, int nd,
                         const hsize_t *dims);

/* Shape of a rectangular nested JSON array into dims; 0 if ragged or
 * deeper than CK_MAX_DIMS. */
static int json_shape(const cJSON *v, int d, hsize_t *dims, int *nd)
{
    const cJSON *e;

    if (!cJSON_IsArray(v))
        return d == *nd;
    if (d >= CK_MAX_DIMS)
        return 0;
    if (d >= *nd) {
        *nd = d + 1;
        dims[d] = (hsize_t)cJSON_GetArraySize(v);
    } else if (dims[d] != (hsize_t)cJSON_GetArraySize(v)) {
        return 0;
    }
    cJSON_ArrayForEach(e, v)
    {
        if (!json_shape(e, d + 1, dims, nd))
            return 0;
    }
    return 1;
}

static void flatten(const cJSON *v, cJSON *flat)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, v)
    {
        if (cJSON_IsArray(e))
            flatten(e, flat);
        else
            cJSON_AddItemToArray(flat, cJSON_Duplicate(e, 1));
    }
}

static int write_attr(hid_t obj, const char *name, const cJSON *v)
{
    hsize_t dims[CK_MAX_DIMS];
    int nd = 0, r;
    cJSON *flat;

    if (!cJSON_IsArray(v) || !v->child || !cJSON_IsArray(v->child))
        return write_attr_nd(obj, name, v, cJSON_IsArray(v), NULL);
    if (!json_shape(v, 0, dims, &nd) || nd < 2)
        return 0;
    if (!(flat = cJSON_CreateArray()))
        return -1;
    flatten(v, flat);
    r = write_attr_nd(obj, name, flat, nd, dims);
    cJSON_Delete(flat);
    return r;
}

/* Writes a scalar (nd 0) or a flat array holding an N-d attribute of shape
 * dims (NULL: 1-D of its length). */
static int write_attr_nd(hid_t obj, const char *name, const cJSON *v, int nd,
                         const hsize_t *dims)
{
    int isarr = cJSON_IsArray(v), n = isarr ? cJSON_GetArraySize(v) : 1;
    int nnum = 0, nstr = 0, nbool = 0, nreal = 0, ok = -1;
    const cJSON *e;
    hid_t type = -1, space = -1, attr = -1;
    hsize_t dim = (hsize_t)n;
    void *buf = NULL;
    double d;

    if (isarr) {
        cJSON_ArrayForEach(e, v)
        {
            if (cJSON_IsNumber(e))
                nreal++;
            nnum += json_num(e, &d);
            nstr += cJSON_IsString(e);
            nbool += cJSON_IsBool(e);
        }
    } else {
        nreal = cJSON_IsNumber(v);
        nnum = nreal;
        nstr = cJSON_IsString(v);
        nbool = cJSON_IsBool(v);
    }
    /* "NaN" alone is a string; among numbers it is a float. */
    if (nnum == n && (nreal > 0 || n == 0)) {
        int allint = 1;
        size_t k = 0;
        if (!(buf = calloc((size_t)(n ? n : 1), 8)))
            return -1;
        if (isarr) {
            cJSON_ArrayForEach(e, v)
            {
                json_num(e, &d);
                ((double *)buf)[k++] = d;
                allint &= integral(d);
            }
        } else {
            d = v->valuedouble;
            ((double *)buf)[0] = d;
            allint = integral(d);
        }
        if (allint && n > 0) {
            for (int i = 0; i < n; i++)
                ((int64_t *)buf)[i] = (int64_t)((double *)buf)[i];
            type = H5Tcopy(H5T_NATIVE_INT64);
        } else {
            type = H5Tcopy(H5T_NATIVE_DOUBLE);
        }
    } else if (nstr == n && n > 0) {
        size_t k = 0;
        if (!(buf = calloc((size_t)n, sizeof(char *))))
            return -1;
        if (isarr) {
            cJSON_ArrayForEach(e, v)((const char **)buf)[k++] = e->valuestring;
        } else {
            ((const char **)buf)[0] = v->valuestring;
        }
        type = H5Tcopy(H5T_C_S1);
        if (type >= 0 && (H5Tset_size(type, H5T_VARIABLE) < 0 ||
                          H5Tset_cset(type, H5T_CSET_UTF8) < 0))
            goto out;
    } else if (nbool == n && n > 0) {
        size_t k = 0;
        if (!(buf = calloc((size_t)n, 1)))
            return -1;
        if (isarr) {
            cJSON_ArrayForEach(e, v)((int8_t *)buf)[k++] =
                (int8_t)cJSON_IsTrue(e);
        } else {
            ((int8_t *)buf)[0] = (int8_t)cJSON_IsTrue(v);
        }
        type = make_type(CK_BOOL, 0);
    } else {
        return 0;
    }
    if (type < 0)
        goto out;
    space = !isarr ? H5Screate(H5S_SCALAR)
            : dims ? H5Screate_simple(nd, dims, NULL)
                   : H5Screate_simple(1, &dim, NULL);
    if (space < 0)
        goto out;
    if (H5Aexists(obj, name) > 0 && H5Adelete(obj, name) < 0)
        goto out;
    if ((attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT)) <
            0 ||
        H5Awrite(attr, type, buf) < 0)
        goto out;
    ok = 1;
out:
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    free(buf);
    return ok;
}

static ck_code h5_set_attrs(ck_store *s, const char *name, const char *json,
                            ck_err *err)
{
    cJSON *root = cJSON_Parse(json), *v;
    char where[PATH_MAX + 520];
    hid_t obj = -1;
    ck_code rc;

    snprintf(where, sizeof where, "%s:%s", s->path, name ? name : "/");
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ck_err_set(err, CK_EUSAGE,
                          "%s: attributes must be a JSON object", where);
    }
    lock();
    rc = open_object(s, name, &obj, err);
    for (v = root->child; rc == CK_OK && v; v = v->next) {
        int r = write_attr(obj, v->string, v);
        if (r < 0)
            rc = h5_fail(err, CK_EIO, "%s: cannot write attribute '%s'", where,
                         v->string);
        else if (r == 0)
            ck_log(CK_LOG_NOTE,
                   "%s: attribute '%s' skipped (HDF5 holds no such value)",
                   where, v->string);
    }
    if (obj >= 0)
        H5Oclose(obj);
    unlock();
    cJSON_Delete(root);
    return rc;
}

/* ---- one typed attribute (ck_store_set_attr, ck_store_get_attr) ---- */

/* Writes a scalar attribute.  Strings are variable-length UTF-8, what h5py
 * writes for a Python str and hands back as one (fixed-length ASCII comes
 * back as bytes in h5py 3).  Numbers are stored little-endian whatever the
 * host, as h5py does on the machines it runs on. */
static ck_code h5_set_attr(ck_store *s, const char *name, const char *key,
                           const ck_attr *v, ck_err *err)
{
    hid_t obj = -1, ftype = -1, mtype = -1, space = -1, attr = -1;
    const char *str = v->str;
    const void *buf = &str;
    htri_t ex;
    ck_code rc;

    lock();
    if ((rc = open_object(s, name, &obj, err)) != CK_OK)
        goto out;
    if (v->kind == CK_ATTR_STR) {
        ftype = H5Tcopy(H5T_C_S1);
        if (ftype >= 0 && (H5Tset_size(ftype, H5T_VARIABLE) < 0 ||
                           H5Tset_cset(ftype, H5T_CSET_UTF8) < 0)) {
            H5Tclose(ftype);
            ftype = -1;
        }
        mtype = ftype >= 0 ? H5Tcopy(ftype) : -1;
    } else if (v->kind == CK_ATTR_F64) {
        ftype = H5Tcopy(H5T_IEEE_F64LE);
        mtype = H5Tcopy(H5T_NATIVE_DOUBLE);
        buf = &v->f64;
    } else {
        ftype = H5Tcopy(H5T_STD_I64LE);
        mtype = H5Tcopy(H5T_NATIVE_INT64);
        buf = &v->i64;
    }
    /* A key that exists is replaced, even with another type: HDF5 cannot
     * change the type of an attribute in place. */
    if (ftype < 0 || mtype < 0 || (space = H5Screate(H5S_SCALAR)) < 0 ||
        (ex = H5Aexists(obj, key)) < 0 || (ex > 0 && H5Adelete(obj, key) < 0))
        goto fail;
    attr = H5Acreate2(obj, key, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, mtype, buf) < 0)
        goto fail;
    goto out;
fail:
    rc = h5_fail(err, CK_EIO, "%s:%s: cannot write attribute '%s'", s->path,
                 name, key);
out:
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (mtype >= 0)
        H5Tclose(mtype);
    if (ftype >= 0)
        H5Tclose(ftype);
    if (obj >= 0)
        H5Oclose(obj);
    unlock();
    return rc;
}

/* Reads a string attribute of file type 'type' into v->str.  Called with
 * h5_mutex held. */
static ck_code read_str_attr(hid_t attr, hid_t type, hid_t space,
                             const char *label, const char *key, ck_attr *v,
                             ck_err *err)
{
    int vlen = H5Tis_variable_str(type) > 0;
    hid_t mt = H5Tcopy(vlen ? H5T_C_S1 : type);
    size_t esz = vlen ? sizeof(char *) : H5Tget_size(type), len;
    char *buf = NULL, *p;
    ck_code rc = CK_OK;

    /* A variable-length string is read as one in the file's character set
     * (HDF5 converts none); a fixed-length one as its own bytes. */
    if (mt < 0 || esz == 0 ||
        (vlen && (H5Tset_size(mt, H5T_VARIABLE) < 0 ||
                  H5Tset_cset(mt, H5Tget_cset(type)) < 0))) {
        rc = h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'", label,
                     key);
        goto out;
    }
    if (!(buf = calloc(1, esz + 1))) {
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        goto out;
    }
    if (H5Aread(attr, mt, buf) < 0) {
        rc = h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'", label,
                     key);
        free(buf);
        buf = NULL;
        goto out;
    }
    if (vlen) {
        p = *(char **)buf;
        len = p ? strlen(p) : 0;
    } else {
        p = buf;
        len = strnlen(p, esz);
        if (H5Tget_strpad(type) == H5T_STR_SPACEPAD)
            while (len > 0 && p[len - 1] == ' ')
                len--;
    }
    if (len >= sizeof v->str)
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s: attribute '%s': string of %zu bytes (at most "
                        "%zu)",
                        label, key, len, sizeof v->str - 1);
    else {
        v->kind = CK_ATTR_STR;
        if (len)
            memcpy(v->str, p, len);
        v->str[len] = '\0';
    }
    if (vlen)
        H5Dvlen_reclaim(mt, space, H5P_DEFAULT, buf);
out:
    free(buf);
    if (mt >= 0)
        H5Tclose(mt);
    return rc;
}

/* Reads one value of an integer, float or h5py-bool attribute, converted
 * by HDF5 to int64 or double.  Called with h5_mutex held. */
static ck_code read_num_attr(hid_t attr, hid_t type, const char *label,
                             const char *key, ck_attr *v, ck_err *err)
{
    H5T_class_t cls = H5Tget_class(type);
    int isuns = cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_NONE;
    hid_t mt = cls == H5T_FLOAT  ? H5Tcopy(H5T_NATIVE_DOUBLE)
               : cls == H5T_ENUM ? make_type(CK_BOOL, 0)
               : isuns           ? H5Tcopy(H5T_NATIVE_UINT64)
                                 : H5Tcopy(H5T_NATIVE_INT64);
    union {
        double f;
        int64_t i;
        uint64_t u;
        int8_t b;
    } buf;
    ck_code rc = CK_OK;

    memset(&buf, 0, sizeof buf);
    if (mt < 0 || H5Aread(attr, mt, &buf) < 0) {
        rc = h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'", label,
                     key);
    } else if (cls == H5T_FLOAT) {
        v->kind = CK_ATTR_F64;
        v->f64 = buf.f;
    } else if (cls == H5T_ENUM) {
        v->kind = CK_ATTR_I64;
        v->i64 = buf.b != 0;
    } else if (isuns && buf.u > INT64_MAX) {
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s: attribute '%s': %llu does not fit int64", label,
                        key, (unsigned long long)buf.u);
    } else {
        v->kind = CK_ATTR_I64;
        v->i64 = isuns ? (int64_t)buf.u : buf.i;
    }
    if (mt >= 0)
        H5Tclose(mt);
    return rc;
}

static ck_code h5_get_attr(ck_store *s, const char *name, const char *key,
                           ck_attr *v, ck_err *err)
{
    char label[PATH_MAX + 520];
    hid_t obj = -1, attr = -1, type = -1, space = -1;
    H5T_class_t cls;
    hssize_t n;
    htri_t ex;
    ck_code rc;

    snprintf(label, sizeof label, "%s:%s", s->path, name);
    lock();
    if ((rc = open_object(s, name, &obj, err)) != CK_OK)
        goto out;
    if ((ex = H5Aexists(obj, key)) < 0) {
        rc = h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'", label,
                     key);
        goto out;
    }
    if (!ex) {
        rc = ck_err_set(err, CK_EFORMAT, "%s: no attribute '%s'", label, key);
        goto out;
    }
    if ((attr = H5Aopen(obj, key, H5P_DEFAULT)) < 0 ||
        (type = H5Aget_type(attr)) < 0 || (space = H5Aget_space(attr)) < 0 ||
        (n = H5Sget_simple_extent_npoints(space)) < 0) {
        rc = h5_fail(err, CK_EFORMAT, "%s: cannot read attribute '%s'", label,
                     key);
        goto out;
    }
    /* netCDF and MATLAB write a number as an array of one element: that is
     * one value too. */
    if (n != 1) {
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s: attribute '%s' holds %lld values, not one", label,
                        key, (long long)n);
        goto out;
    }
    cls = H5Tget_class(type);
    if (cls == H5T_STRING)
        rc = read_str_attr(attr, type, space, label, key, v, err);
    else if (cls == H5T_INTEGER || cls == H5T_FLOAT ||
             (cls == H5T_ENUM && is_bool_enum(type)))
        rc = read_num_attr(attr, type, label, key, v, err);
    else
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s: attribute '%s': HDF5 type class %s (only "
                        "strings and numbers are read)",
                        label, key, class_name(cls));
out:
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (attr >= 0)
        H5Aclose(attr);
    if (obj >= 0)
        H5Oclose(obj);
    unlock();
    return rc;
}

const ck_store_ops ck_h5_ops = {
    .name = "hdf5",
    .open = h5_open,
    .close = h5_close,
    .list = h5_list,
    .array_open = h5_array_open,
    .array_close = h5_array_close,
    .scratch_bytes = h5_scratch_bytes,
    .read_chunk = h5_read_chunk,
    .view_chunk = h5_view_chunk,
    .raw = h5_raw,
    .read_bytes = h5_read_bytes,
    .create = h5_create,
    .array_create = h5_array_create,
    .write_chunk = h5_write_chunk,
    .get_attrs = h5_get_attrs,
    .set_attrs = h5_set_attrs,
    .set_attr = h5_set_attr,
    .get_attr = h5_get_attr,
    .flush = h5_flush,
};
