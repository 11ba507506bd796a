/*
 * io/hdf5/h5_types.c - what an HDF5 dataset is, in chunkctl's terms.
 * Maps HDF5 datatypes to dtypes and back (h5py's bool enum included),
 * reads a dataset's shape, layout, filter pipeline and fill value into a
 * ck_array_info, and picks the read path the dataset allows.  It reads no
 * chunk and writes nothing; callers hold the lock.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <blosc.h>

#include "io/hdf5/h5_impl.h"
#include "io/hdf5/zstd_filter.h"

/* Contiguous datasets are read in virtual chunks of at most this many
 * bytes (or one element, if that is larger). */
#define VCHUNK_BYTES ((int64_t)4 << 20)

static int host_big_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 0;
}

/* ---- types ---- */

/* A new memory or file type for dtype t (caller closes it).  Files get
 * our own byte order; bool is h5py's enum {FALSE=0, TRUE=1} of int8. */
hid_t ck_h5_make_type(ck_dtype t, int file)
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
int ck_h5_is_bool_enum(hid_t t)
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

const char *ck_h5_class_name(H5T_class_t c)
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
ck_dtype ck_h5_map_type(hid_t t, int *big_endian, int *exact, char *why,
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
    } else if (cls == H5T_ENUM && ck_h5_is_bool_enum(t)) {
        dt = CK_BOOL;
        *exact = 1;
        *big_endian = 0;
    }
    if (dt == CK_DT_INVALID) {
        if (cls == H5T_INTEGER || cls == H5T_FLOAT)
            snprintf(why, n, "a %zu-byte %s type", size, ck_h5_class_name(cls));
        else
            snprintf(why, n, "a%s %s type",
                     cls == H5T_INTEGER || cls == H5T_OPAQUE ||
                             cls == H5T_ENUM || cls == H5T_ARRAY
                         ? "n"
                         : "",
                     ck_h5_class_name(cls));
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
/* Whether dset lives in a file other than 'file' (reached through an
 * external link); 1 when HDF5 cannot tell, which only costs the raw
 * reads. */
static int in_other_file(hid_t file, hid_t dset)
{
    H5O_info_t d, f;

    if (H5Oget_info2(dset, &d, H5O_INFO_BASIC) < 0 ||
        H5Oget_info_by_name2(file, "/", &f, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        return 1;
    return d.fileno != f.fileno;
}

/* What marks the missing values of a netCDF-4 variable without a
 * _FillValue attribute, by netCDF's rules as netCDF4-python applies them
 * (Variable._toma): the type's default fill value, except for a byte
 * variable written without fill (HDF5 fill time "never", as netCDF-C
 * writes NC_NOFILL), where nothing does. */
static ck_nc_fill nc_fill_of(ck_store *s, hid_t dset, hid_t dcpl,
                             const ck_array_info *info)
{
    h5_store *hs = s->impl;
    size_t n = strlen(s->path);
    H5D_fill_time_t ft = H5D_FILL_TIME_IFSET;
    int netcdf = n >= 3 && strcasecmp(s->path + n - 3, ".nc") == 0;

    if (info->dtype == CK_BOOL)
        return CK_NC_FILL_ATTR;
    if (!netcdf &&
        H5Aexists_by_name(hs->file, "/", "_NCProperties", H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return CK_NC_FILL_ATTR;
    }
    if (H5Aexists(dset, "_FillValue") != 0 || ck_h5_is_nc_dim_only(dset)) {
        H5Eclear2(H5E_DEFAULT);
        return CK_NC_FILL_ATTR;
    }
    if ((info->dtype == CK_I8 || info->dtype == CK_U8) &&
        H5Pget_fill_time(dcpl, &ft) >= 0 && ft == H5D_FILL_TIME_NEVER)
        return CK_NC_FILL_NONE;
    return CK_NC_FILL_DEFAULT;
}

ck_code ck_h5_describe(ck_store *s, const char *name, hid_t dset, ck_array *a,
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
    ha->foreign = hs->file >= 0 && in_other_file(hs->file, dset);
    if (ha->foreign) {
        char file[PATH_MAX], obj[512];
        if (H5Fget_name(dset, file, sizeof file) > 0 &&
            H5Iget_name(dset, obj, sizeof obj) > 0)
            snprintf(ha->origin, sizeof ha->origin, "%s:%s", file, obj);
        H5Eclear2(H5E_DEFAULT);
    }
    if ((type = H5Dget_type(dset)) < 0 || (space = H5Dget_space(dset)) < 0 ||
        (dcpl = H5Dget_create_plist(dset)) < 0) {
        rc = ck_h5_fail(err, CK_EFORMAT, "%s:%s: cannot read dataset header",
                        s->path, name);
        goto out;
    }
    info->dtype =
        ck_h5_map_type(type, &info->big_endian, &exact, why, sizeof why);
    if (info->dtype == CK_DT_INVALID) {
        rc = ck_err_set(err, CK_ENOTSUP,
                        "%s:%s: %s is not supported (numbers and bool only)",
                        s->path, name, why);
        goto out;
    }
    ha->esize = ck_dtype_size(info->dtype);
    ha->swap = exact && ha->esize > 1 && info->big_endian != host_big_endian();
    if ((ha->mtype = ck_h5_make_type(info->dtype, 0)) < 0) {
        rc = ck_h5_fail(err, CK_EIO, "%s:%s: cannot make a memory type",
                        s->path, name);
        goto out;
    }

    scls = H5Sget_simple_extent_type(space);
    if (scls == H5S_SIMPLE) {
        hsize_t maxd[H5S_MAX_RANK];
        int nd = H5Sget_simple_extent_dims(space, dims, maxd);
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
            if (maxd[d] == H5S_UNLIMITED)
                info->unlimited |= 1u << d;
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
            rc = ck_h5_fail(err, CK_EFORMAT, "%s:%s: bad chunk shape", s->path,
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
            hs->fd >= 0 && !ha->foreign && H5Pget_external_count(dcpl) == 0) {
            /* Counted from the start of the file, user block included. */
            ha->contig_addr = H5Dget_offset(dset);
            if (ha->contig_addr != HADDR_UNDEF)
                ha->path = PATH_RAW_CONTIG;
        }
    }
    if (layout == H5D_CHUNKED &&
        (rc = ck_chunk_bytes_check(info->ndim, info->chunks, ha->esize, err)) !=
            CK_OK) {
        ck_err_prefix(err, "%s:%s", s->path, name);
        goto out;
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
    ck_h5_read_dims(dset, name, info);
    info->nc_fill = nc_fill_of(s, dset, dcpl, info);
out:
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    return rc;
}
