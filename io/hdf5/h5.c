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
 *
 * This file holds what the others share: the lock, the in-process blosc
 * filter, HDF5's error stack read into a ck_err, files opened, created,
 * flushed and listed, arrays opened and closed, and the ops table.  Types
 * and dataset descriptions are in h5_types.c, chunk reads in h5_read.c,
 * writes in h5_write.c, attributes in h5_attrs.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blosc.h>

#include "base/ck_log.h"
#include "io/hdf5/h5_impl.h"
#include "io/hdf5/zstd_filter.h"
#include "io/oserr.h"

static pthread_mutex_t h5_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t h5_once = PTHREAD_ONCE_INIT;
static int h5_filters_ok;

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

/* ---- the ck_h5_lock ---- */

/* Runs once, under h5_mutex (ck_h5_lock() calls it). */
static void h5_init(void)
{
    /* No H5_term_library at exit: when H5Fclose fails (a full disk while
     * the metadata is flushed), HDF5 1.10 frees the file but keeps its id,
     * and the teardown at exit then crashes on it.  Every file chunkctl
     * opens is closed by then, and the process's end frees the rest. */
    H5dont_atexit();
    H5open();
    h5_filters_ok =
        ck_h5_zstd_register() >= 0 && H5Zregister(&blosc_class) >= 0;
}

/* Takes h5_mutex.  HDF5's error stack and its automatic printing are per
 * thread in a thread-safe build, so each thread silences it once. */
void ck_h5_lock(void)
{
    static _Thread_local int silenced;

    pthread_mutex_lock(&h5_mutex);
    /* h5_init first: it must run before any call that starts HDF5. */
    pthread_once(&h5_once, h5_init);
    if (!silenced) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        silenced = 1;
    }
}

void ck_h5_unlock(void)
{
    pthread_mutex_unlock(&h5_mutex);
}

/* ---- errors ---- */

typedef struct h5_why {
    char desc[200]; /* the innermost message: closest to the cause */
    int pline;      /* some entry came from the filter pipeline */
    int missing;    /* a filter is not available */
    int errnum;     /* the errno a file driver reported, 0 if none */
    int show;       /* --verbose: log each entry (ck_log's debug level) */
} h5_why;

/* The errno in a file driver's message: HDF5's sec2 and core drivers
 * write "..., errno = 28, error message = 'No space left on device', ..."
 * into the entry of the system call that failed. */
static int errno_of(const char *desc)
{
    const char *p = desc ? strstr(desc, "errno = ") : NULL;
    long v;

    if (!p)
        return 0;
    v = strtol(p + 8, NULL, 10);
    return v > 0 && v < 4096 ? (int)v : 0;
}

static herr_t why_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    h5_why *w = data;

    if (w->show) {
        /* One line per entry: the sec2 driver's text holds a ctime()
         * with its newline. */
        char line[600];
        snprintf(line, sizeof line, "%s", e->desc ? e->desc : "");
        for (char *c = line; *c; c++)
            if ((unsigned char)*c < ' ')
                *c = ' ';
        ck_log(CK_LOG_DEBUG, "hdf5 error #%03u: %s line %u in %s(): %s", n,
               e->file_name ? e->file_name : "?", e->line,
               e->func_name ? e->func_name : "?", line);
    }
    /* The innermost entry, past the plugin search's own complaints ("can't
     * open directory"), which only say where HDF5 looked. */
    if (!w->desc[0] && e->desc && e->maj_num != H5E_PLUGIN)
        snprintf(w->desc, sizeof w->desc, "%s", e->desc);
    if (!w->errnum)
        w->errnum = errno_of(e->desc);
    if (e->maj_num == H5E_PLINE) {
        w->pline = 1;
        if (e->min_num == H5E_NOTFOUND || e->min_num == H5E_CANTLOAD ||
            (e->desc && strstr(e->desc, "not registered")))
            w->missing = 1;
    }
    return 0;
}

ck_code ck_h5_fail(ck_err *err, ck_code code, const char *fmt, ...)
{
    h5_why w = {"", 0, 0, 0, ck_log_get_level() >= CK_LOG_DEBUG};
    char head[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, why_cb, &w);
    H5Eclear2(H5E_DEFAULT); /* see ck_h5_chunk_not_allocated() */
    /* A system call failed under HDF5: its errno is the cause, in the
     * words every other failed system call in io/ uses, not the driver's
     * dump of file descriptors and offsets. */
    if (w.errnum)
        return ck_os_fail(err, code, w.errnum, "%s", head);
    if (code == CK_OK)
        code = w.missing ? CK_ENOTSUP : w.pline ? CK_ECORRUPT : CK_EIO;
    if (w.desc[0])
        return ck_err_set(err, code, "%s: %s", head, w.desc);
    return ck_err_set(err, code, "%s", head);
}

const char *ck_h5_chunk_str(const ck_array *a, const int64_t *coords, char *buf,
                            size_t n)
{
    const h5_array *ha = a->impl;
    size_t used;

    ck_coords_str(a->info.ndim, coords, buf, n);
    used = strlen(buf);
    if (ha && ha->origin[0] && used < n)
        snprintf(buf + used, n - used, " in %s", ha->origin);
    return buf;
}

/* 1 if the call that just failed did so because the chunk was never
 * written: HDF5 1.10 reports that as an error of H5Dget_chunk_storage_size
 * (later releases return a size of 0). */
int ck_h5_chunk_not_allocated(void)
{
    h5_why w = {"", 0, 0, 0, 0};

    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, why_cb, &w);
    /* An error stack left standing leaks its strings in HDF5 1.10 (LSan
     * sees them at exit): clear it once read. */
    H5Eclear2(H5E_DEFAULT);
    return strcmp(w.desc, "chunk storage is not allocated") == 0;
}

/* ---- store open/close ---- */

int ck_h5_sniff(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'H',  'D',  'F',
                                         '\r', '\n', 0x1a, '\n'};
    unsigned char buf[8];
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), found = 0;

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

/* HDF5's metadata cache grows to 32 MiB a file by default, counted as the
 * bytes on disk: the index nodes of a 160000-chunk file, each held in
 * memory at ten times its size, took a copy to 147 MB (69 MB under
 * --memory 64M, sum 53 MB under 40M).  Held to MDC_MAX, starting at a
 * quarter, they stay within what ck_base_overhead() charges for the
 * process (the same copy: 26 MB; gen, sum and copy of that file took the
 * same times as with the default, within this machine's noise). */
#define MDC_MAX ((size_t)1 << 20)

/* A file access plist whose H5Fclose also closes every object still open
 * in the file, so flush() can hand back a closed file, and whose metadata
 * cache is held to MDC_MAX. */
static hid_t make_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5AC_cache_config_t mdc = {.version = H5AC__CURR_CACHE_CONFIG_VERSION};

    if (fapl < 0)
        return -1;
    if (H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 ||
        H5Pget_mdc_config(fapl, &mdc) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    mdc.set_initial_size = 1;
    mdc.initial_size = MDC_MAX / 4;
    mdc.min_size = MDC_MAX / 4;
    mdc.max_size = MDC_MAX;
    if (H5Pset_mdc_config(fapl, &mdc) < 0) {
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
    hs->rfd = hs->from_fd = -1;
    hs->fd = open(s->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (hs->fd < 0) {
        rc = ck_os_fail(err, CK_EIO, errno, "%s", s->path);
        free(hs);
        return rc;
    }
    {
        struct stat st;
        if (fstat(hs->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(hs->fd);
            free(hs);
            return ck_err_set(err, CK_EFORMAT, "%s: not a regular file",
                              s->path);
        }
        hs->size = (uint64_t)st.st_size;
    }
    ck_h5_lock();
    if (!h5_filters_ok)
        ck_log(CK_LOG_WARN, "could not register the zstd and blosc filters");
    if ((fapl = make_fapl()) < 0) {
        rc = ck_h5_fail(err, CK_EIO, "%s: cannot set up HDF5", s->path);
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
    ck_h5_unlock();
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
        ck_h5_lock();
        H5Fclose(hs->file);
        ck_h5_unlock();
    }
    if (hs->fd >= 0)
        close(hs->fd);
    if (hs->rfd >= 0)
        close(hs->rfd);
    if (hs->from_fd >= 0)
        close(hs->from_fd);
    free(hs->from);
    free(hs->dimreq);
    free(hs);
    s->impl = NULL;
}

/* 1 when path names a netCDF file (*.nc, any case). */
static int is_netcdf_name(const char *path)
{
    size_t n = strlen(path);
    return n >= 3 && strcasecmp(path + n - 3, ".nc") == 0;
}

/* The file creation plist: netCDF-4 files track the creation order of
 * links and attributes (netCDF-C refuses to open for writing a file
 * whose groups do not, and lists variables and attributes in that
 * order); others keep HDF5's defaults. */
static hid_t make_fcpl(int netcdf)
{
    hid_t fcpl;
    unsigned order = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;

    if (!netcdf)
        return H5P_DEFAULT;
    if ((fcpl = H5Pcreate(H5P_FILE_CREATE)) < 0)
        return -1;
    if (H5Pset_link_creation_order(fcpl, order) < 0 ||
        H5Pset_attr_creation_order(fcpl, order) < 0) {
        H5Pclose(fcpl);
        return -1;
    }
    return fcpl;
}

static ck_code h5_create(ck_store *s, ck_err *err)
{
    h5_store *hs = calloc(1, sizeof *hs);
    hid_t fapl, fcpl = -1;
    ck_code rc = CK_OK;

    if (!hs)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    hs->fd = -1; /* written chunks may sit in HDF5's caches: no raw reads */
    hs->file = -1;
    hs->rfd = hs->from_fd = -1;
    hs->netcdf = is_netcdf_name(s->path);
    ck_h5_lock();
    /* Default library version bounds, so that older HDF5 reads the file.
     * No small-data block: each chunk then goes where the file's end of
     * allocation was, which is where the resume journal looks for it
     * first (h5_write.c: h5_cand); chunks under 2 KiB were suballocated
     * from such blocks, in the same order, at the same end of the file. */
    if ((fapl = make_fapl()) < 0 || H5Pset_small_data_block_size(fapl, 0) < 0 ||
        (fcpl = make_fcpl(hs->netcdf)) < 0 ||
        (hs->file = H5Fcreate(s->tmp, H5F_ACC_EXCL, fcpl, fapl)) < 0)
        rc = ck_h5_fail(err, CK_EIO, "%s: cannot create %s", s->path, s->tmp);
    if (fapl >= 0)
        H5Pclose(fapl);
    if (fcpl >= 0 && fcpl != H5P_DEFAULT)
        H5Pclose(fcpl);
    ck_h5_unlock();
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
    ck_h5_lock();
    /* Scales are attached last, when every array and coordinate variable
     * exists, whatever order they were created in. */
    if (s->writing)
        rc = ck_h5_write_dims(s, err);
    if (H5Fclose(hs->file) < 0 && rc == CK_OK)
        rc = ck_h5_fail(err, CK_EIO, "%s: cannot close %s", s->path, s->tmp);
    hs->file = -1;
    ck_h5_unlock();
    return rc;
}

/* ---- listing ---- */

typedef struct list_ctx {
    ck_store *s;
    ck_names *out;
    ck_err *err;
    ck_code rc;
    int groups; /* list groups, not datasets */
} list_ctx;

/* Every dataset, whatever its type (ck_store_list_readable leaves out
 * those chunkctl cannot hold, saying why), reached by a hard link or an
 * external one (its data is read from its own file); soft links are other
 * names of datasets listed under their own. */
static herr_t list_cb(hid_t group, const char *name, const H5L_info_t *li,
                      void *data)
{
    list_ctx *c = data;
    char full[1024];
    hid_t obj;

    if (li->type != H5L_TYPE_HARD && li->type != H5L_TYPE_EXTERNAL)
        return 0;
    if ((obj = H5Oopen(group, name, H5P_DEFAULT)) < 0) {
        H5Eclear2(H5E_DEFAULT); /* a dangling external link */
        ck_log(CK_LOG_DEBUG, "%s:/%s: skipped (cannot be opened)", c->s->path,
               name);
        return 0;
    }
    if (c->groups || H5Iget_type(obj) != H5I_DATASET) {
        int grp = c->groups && li->type == H5L_TYPE_HARD &&
                  H5Iget_type(obj) == H5I_GROUP;
        H5Oclose(obj);
        if (!grp)
            return 0;
        snprintf(full, sizeof full, "/%s", name);
        c->rc = ck_names_push(c->out, full, c->err);
        return c->rc == CK_OK ? 0 : -1;
    }
    /* netCDF-4's dimensions without a variable are datasets that hold no
     * data; netCDF tools do not show them as variables either. */
    if (ck_h5_is_nc_dim_only(obj)) {
        ck_log(CK_LOG_DEBUG, "%s:/%s: skipped (a netCDF dimension, no data)",
               c->s->path, name);
        H5Oclose(obj);
        return 0;
    }
    H5Oclose(obj);
    snprintf(full, sizeof full, "/%s", name);
    c->rc = ck_names_push(c->out, full, c->err);
    return c->rc == CK_OK ? 0 : -1;
}

static ck_code h5_list(ck_store *s, int groups, ck_names *out, ck_err *err)
{
    h5_store *hs = s->impl;
    list_ctx c = {s, out, err, CK_OK, groups};
    herr_t r;

    ck_h5_lock();
    r = H5Lvisit(hs->file, H5_INDEX_NAME, H5_ITER_INC, list_cb, &c);
    if (r < 0 && c.rc == CK_OK)
        c.rc = ck_h5_fail(err, CK_EFORMAT, "%s: cannot list datasets", s->path);
    ck_h5_unlock();
    return c.rc;
}

/* ---- arrays ---- */

/* The dataset access plist: a tiny chunk cache, since every chunk is read
 * once and whole, so --memory holds however many datasets are open. */
hid_t ck_h5_make_dapl(void)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);

    if (dapl >= 0 && H5Pset_chunk_cache(dapl, 1, 0, 1.0) < 0) {
        H5Pclose(dapl);
        return -1;
    }
    return dapl;
}

void ck_h5_array_free(h5_array *ha)
{
    if (!ha)
        return;
    if (ha->dset >= 0 && ha->hs->file >= 0)
        H5Dclose(ha->dset); /* else flush() closed it with the file */
    if (ha->mtype >= 0)
        H5Tclose(ha->mtype);
    free(ha->index);
    free(ha->cand);
    free(ha);
}

h5_array *ck_h5_array_new(h5_store *hs)
{
    h5_array *ha = calloc(1, sizeof *ha);

    if (ha) {
        ha->hs = hs;
        ha->dset = -1;
        ha->mtype = -1;
    }
    return ha;
}

/* Why name does not open: a link whose target is missing (which list
 * leaves out) is named as such; CK_EFORMAT "no dataset" otherwise. */
static ck_code broken_link(ck_store *s, const char *name, ck_err *err)
{
    h5_store *hs = s->impl;
    H5L_info_t li;
    char val[1024] = "";
    const char *file = NULL, *obj = NULL;

    H5Eclear2(H5E_DEFAULT);
    if (H5Lexists(hs->file, name, H5P_DEFAULT) <= 0 ||
        H5Lget_info(hs->file, name, &li, H5P_DEFAULT) < 0 ||
        (li.type != H5L_TYPE_SOFT && li.type != H5L_TYPE_EXTERNAL) ||
        li.u.val_size > sizeof val ||
        H5Lget_val(hs->file, name, val, sizeof val, H5P_DEFAULT) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return ck_err_set(err, CK_EFORMAT, "%s: no dataset '%s'", s->path,
                          name);
    }
    val[sizeof val - 1] = '\0';
    if (li.type == H5L_TYPE_SOFT)
        return ck_err_set(err, CK_EIO,
                          "%s: '%s' is a soft link to '%.400s', which does "
                          "not exist",
                          s->path, name, val);
    if (H5Lunpack_elink_val(val, li.u.val_size, NULL, &file, &obj) < 0) {
        H5Eclear2(H5E_DEFAULT);
        file = obj = "?";
    }
    return ck_err_set(err, CK_EIO,
                      "%s: '%s' is an external link to %.300s:%.300s, which "
                      "cannot be opened",
                      s->path, name, file, obj);
}

/* Soft and external links whose target is not there, each named as
 * opening it says (broken_link): h5py's f[name] raises KeyError for them,
 * and h5py's visititems, as chunkctl's listing, passes them by silently. */
static herr_t dangling_cb(hid_t group, const char *name, const H5L_info_t *li,
                          void *data)
{
    list_ctx *c = data;
    char full[1024];
    ck_err e = {0};
    htri_t there;

    if (li->type != H5L_TYPE_SOFT && li->type != H5L_TYPE_EXTERNAL)
        return 0;
    /* false for a missing last component, an error for an earlier one or
     * an external file that does not open: both lead nowhere */
    there = H5Oexists_by_name(group, name, H5P_DEFAULT);
    H5Eclear2(H5E_DEFAULT);
    if (there > 0)
        return 0;
    snprintf(full, sizeof full, "/%s", name);
    broken_link(c->s, full, &e);
    c->rc = ck_names_push(c->out, e.msg, c->err);
    return c->rc == CK_OK ? 0 : -1;
}

static ck_code h5_dangling(ck_store *s, ck_names *out, ck_err *err)
{
    h5_store *hs = s->impl;
    list_ctx c = {s, out, err, CK_OK, 0};
    herr_t r;

    ck_h5_lock();
    r = H5Lvisit(hs->file, H5_INDEX_NAME, H5_ITER_INC, dangling_cb, &c);
    if (r < 0 && c.rc == CK_OK)
        c.rc = ck_h5_fail(err, CK_EFORMAT, "%s: cannot list links", s->path);
    ck_h5_unlock();
    return c.rc;
}

static ck_code h5_array_open(ck_store *s, const char *name, ck_array *a,
                             ck_err *err)
{
    h5_store *hs = s->impl;
    h5_array *ha = ck_h5_array_new(hs);
    hid_t obj, dapl = -1;
    ck_code rc = CK_OK;

    if (!ha)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    ck_h5_lock();
    /* H5Oopen first: it tells a group from a missing name. */
    obj = H5Oopen(hs->file, name, H5P_DEFAULT);
    if (obj < 0) {
        rc = broken_link(s, name, err);
        goto out;
    }
    if (H5Iget_type(obj) != H5I_DATASET) {
        rc = ck_err_set(
            err, CK_EFORMAT, "%s: '%s' is %s, not a dataset", s->path, name,
            H5Iget_type(obj) == H5I_GROUP ? "a group" : "a named type");
        H5Oclose(obj);
        goto out;
    }
    /* Not an array, as ncdump shows no variable: a dimension's length is
     * all it holds. */
    if (ck_h5_is_nc_dim_only(obj)) {
        rc = ck_err_set(err, CK_EFORMAT,
                        "%s: '%s' is a netCDF dimension without data", s->path,
                        name);
        H5Oclose(obj);
        goto out;
    }
    H5Oclose(obj);
    if ((dapl = ck_h5_make_dapl()) < 0 ||
        (ha->dset = H5Dopen2(hs->file, name, dapl)) < 0) {
        rc = ck_h5_fail(err, CK_EFORMAT, "%s: cannot open dataset '%s'",
                        s->path, name);
        goto out;
    }
    rc = ck_h5_describe(s, name, ha->dset, a, ha, err);
out:
    if (dapl >= 0)
        H5Pclose(dapl);
    if (rc != CK_OK)
        ck_h5_array_free(ha);
    ck_h5_unlock();
    if (rc == CK_OK)
        a->impl = ha;
    return rc;
}

static void h5_array_close(ck_array *a)
{
    ck_h5_lock();
    ck_h5_array_free(a->impl);
    ck_h5_unlock();
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

const ck_store_ops ck_h5_ops = {
    .name = "hdf5",
    .open = h5_open,
    .close = h5_close,
    .list = h5_list,
    .dangling = h5_dangling,
    .array_open = h5_array_open,
    .array_close = h5_array_close,
    .scratch_bytes = h5_scratch_bytes,
    .read_chunk = ck_h5_read_chunk,
    .view_chunk = ck_h5_view_chunk,
    .raw = ck_h5_raw,
    .read_bytes = ck_h5_read_bytes,
    .create = h5_create,
    .array_create = ck_h5_array_create,
    .write_chunk = ck_h5_write_chunk,
    .unit_sum = ck_h5_unit_sum,
    .take_unit = ck_h5_take_unit,
    .get_attrs = ck_h5_get_attrs,
    .set_attrs = ck_h5_set_attrs,
    .set_attr = ck_h5_set_attr,
    .get_attr = ck_h5_get_attr,
    .keep_attr_types = ck_h5_keep_attr_types,
    .flush = h5_flush,
};
