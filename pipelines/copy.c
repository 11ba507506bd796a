/*
 * pipelines/copy.c - chunkctl copy: one array or a whole store, into a new
 * store of either kind, with new chunking, compression or dtype.
 * Each output chunk is produced from the source region it covers; when the
 * chunkings agree and the dtype is kept that is one chunk read straight into
 * the write buffer.  Rechunking reads every source chunk an output chunk
 * overlaps (a source chunk shared by several output chunks is decoded once
 * for each of them).
 */
#include "pipelines/copy.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "base/ck_log.h"
#include "io/attrs_json.h"
#include "io/cache.h"
#include "pipelines/cf.h"
#include "pipelines/stream.h"

typedef struct copy_ctx {
    ck_array *src, *dst;
    const ck_grid *sg, *dg;
    ck_dtype to;
    ck_scalar fill;        /* in dst dtype's kind */
    int aligned;           /* same chunk shape and dtype */
    ck_chunk_cache *cache; /* decoded source chunks, when rechunking */
} copy_ctx;

static int is_edge(const ck_grid *g, const ck_chunk *c)
{
    for (int d = 0; d < g->ndim; d++)
        if (c->shape[d] != g->chunk[d])
            return 1;
    return 0;
}

static ck_code produce(void *vctx, const ck_chunk *c, void *buf,
                       ck_arena *scratch, ck_err *err)
{
    copy_ctx *x = vctx;
    const ck_grid *g = x->dg;
    int64_t stop[CK_MAX_DIMS];
    size_t esz = ck_dtype_size(x->to);
    int edge = is_edge(g, c);
    unsigned char fill[8];

    if (edge)
        ck_dtype_fill(x->to, fill, x->fill, 1);
    if (x->aligned) {
        /* The source chunk is the output chunk: read it in place and give
         * an edge chunk's padding the fill value, as h5py and zarr-python
         * write it. */
        CK_TRY(ck_array_read_chunk(x->src, c->coords, buf, scratch, err));
        if (edge)
            ck_box_pad(g->ndim, esz, buf, g->chunk, c->shape, fill);
        return CK_OK;
    }
    for (int d = 0; d < g->ndim; d++)
        stop[d] = c->start[d] + c->shape[d];
    CK_TRY(ck_array_read_region(x->src, c->start, stop, NULL, x->to, buf,
                                x->cache, scratch, err));
    if (edge) { /* read dense at buf's start */
        ck_box_spread(g->ndim, esz, buf, g->chunk, c->shape);
        ck_box_pad(g->ndim, esz, buf, g->chunk, c->shape, fill);
    }
    return CK_OK;
}

/* Raw runs shorter than this many bytes read through the cache. */
#define RAW_RUN_MIN 4096
/* The cache's slots at most (a row of source chunks per worker). */
#define CACHE_SLOTS_MAX (1 << 22)

/* A raw source's regions are read from the file, a run of the last axis
 * a read: 1 when those runs are short ((1000, 1) chunks to (1, 1000): a
 * read per value), where decoding each chunk once, through the cache, is
 * faster. */
static int raw_runs_short(const copy_ctx *x)
{
    const ck_grid *sg = x->sg, *dg = x->dg;
    size_t esz = ck_dtype_size(ck_array_info_of(x->src)->dtype);
    int last = sg->ndim - 1;

    if (sg->ndim == 0 || !ck_array_raw(x->src))
        return 0;
    int64_t run =
        sg->chunk[last] < dg->chunk[last] ? sg->chunk[last] : dg->chunk[last];
    return (size_t)run * esz < RAW_RUN_MIN;
}

/* ceil(a / b) source chunks per output chunk, plus one when misaligned,
 * at most the n there are. */
static int64_t per_out(int64_t a, int64_t b, int64_t n)
{
    int64_t k = (a + b - 1) / b + 1;
    return k < n ? k : n;
}

/* Cache slots a worker needs when output chunks are handed out with axis
 * k innermost: the source chunks under one output chunk and the next one
 * along k.  Along k they serve src/out consecutive outputs; along another
 * axis d with src > out they serve outputs a whole line apart, which this
 * cache does not hold: those chunks decode again, 'again' times. */
static int64_t walk_need(const ck_grid *sg, const ck_grid *dg, int k,
                         int64_t *again)
{
    int64_t need = 1;

    *again = 1;
    for (int d = 0; d < sg->ndim; d++) {
        if (d == k) {
            need *= per_out(2 * dg->chunk[d], sg->chunk[d], sg->nchunks[d]);
            continue;
        }
        need *= per_out(dg->chunk[d], sg->chunk[d], sg->nchunks[d]);
        *again *= (sg->chunk[d] + dg->chunk[d] - 1) / dg->chunk[d];
    }
    return need;
}

/* The most workers, up to threads, whose buffers and a cache of 'need'
 * slots each fit in what is left of the budget (0: not one). */
static int workers_for(const ck_budget *budget, size_t cb, size_t worker,
                       int64_t need, int threads)
{
    for (int t = threads; t >= 1; t--) {
        int64_t left =
            budget->limit - budget->used - (int64_t)t * (int64_t)worker;
        if (left > 0 && left / (int64_t)cb >= need * t)
            return t;
    }
    return 0;
}

/* A rechunking copy decodes each source chunk once for every output chunk
 * it overlaps, unless the chunks stay decoded while the neighbours are
 * made.  Workers take output chunks in C order, so what must stay is one
 * row of output chunks' worth of source chunks per worker.  The cache gets
 * that many slots.  But when output chunks along some axis share source
 * chunks (src larger than out there: (1000, 1) chunks to (1, 1000)), the
 * workers rather walk that axis innermost (job->order), and two output
 * chunks' worth per worker serve (a tenth of the row there: faster, and
 * it fits where the row does not).  A cache short of what a worker needs
 * hits almost never (the access is cyclic), so it trades workers for
 * slots; with none left every overlap decodes again, slower but within
 * --memory. */
static ck_code make_cache(copy_ctx *x, ck_stream_job *job, ck_budget *budget,
                          ck_chunk_cache **out, ck_err *err)
{
    const ck_grid *sg = x->sg, *dg = x->dg;
    size_t cb = ck_chunk_cache_slot_bytes(x->src);
    int64_t need = 1, slots = 0, again = 1, best = 1;
    size_t worker;
    int threads, k = -1;

    *out = NULL;
    if (sg->total_chunks == 0 || sg->ndim == 0)
        return CK_OK;
    if (ck_array_raw(x->src) && !raw_runs_short(x))
        return CK_OK;
    need = dg->chunk[0] / sg->chunk[0] + 2; /* source chunk rows per row */
    for (int d = 1; d < sg->ndim; d++)
        need *= sg->nchunks[d];
    ck_stream_plan(job, &threads, &worker);
    /* the axis whose source chunks serve the most consecutive outputs;
     * not for a sharded output, whose shards fill in C order */
    for (int d = 0; d < sg->ndim && !ck_array_info_of(x->dst)->shards[0]; d++) {
        int64_t serve = sg->chunk[d] / dg->chunk[d];
        if (serve >= 2 && serve >= best) {
            best = serve;
            k = d;
        }
    }
    int64_t kneed = k >= 0 ? walk_need(sg, dg, k, &again) : 0;
    int walk, t;
    /* a walk that decodes each chunk once, when it needs less than a row;
     * else the row; else a walk that decodes chunks again (still better
     * than none); each on as many workers as fit */
    if (k >= 0 && again == 1 && kneed <= need &&
        (t = workers_for(budget, cb, worker, kneed, threads)))
        walk = 1;
    else if ((t = workers_for(budget, cb, worker, need, threads)))
        walk = 0;
    else
        walk = k >= 0 && (t = workers_for(budget, cb, worker, kneed, threads));
    if (!t) {
        int64_t least = k >= 0 && kneed < need ? kneed : need;
        char lim[32], want[32];
        ck_log(CK_LOG_NOTE,
               "--memory %s leaves no room to keep decoded source chunks: "
               "each output chunk reads its own again, which is slow (%s "
               "would keep them)",
               ck_size_str((double)budget->limit, lim, sizeof lim),
               ck_need_str((double)budget->used + (double)worker +
                               (double)least * (double)cb,
                           want, sizeof want));
        return CK_OK;
    }
    slots = (walk ? kneed : need) * t;
    /* the engine starts as many workers as the budget left holds, which
     * can be more than the cache is made for */
    if (t < threads)
        job->threads = t;
    if (walk) {
        job->reorder = 1;
        for (int d = 0, i = 0; d < sg->ndim; d++)
            if (d != k)
                job->order[i++] = d;
        job->order[sg->ndim - 1] = k;
    }
    if (slots > sg->total_chunks)
        slots = sg->total_chunks;
    if (slots > CACHE_SLOTS_MAX)
        slots = CACHE_SLOTS_MAX;
    char sz[32];
    ck_log(CK_LOG_DEBUG,
           "rechunking through a cache of %lld source chunks (%s), output "
           "chunks walked %s%d innermost",
           (long long)slots,
           ck_size_str((double)slots * (double)cb, sz, sizeof sz),
           walk ? "with axis " : "in C order, axis ", walk ? k : sg->ndim - 1);
    return ck_chunk_cache_new(x->src, (int)slots, budget, out, err);
}

/* The name an array gets in the destination. */
static void dst_name(const char *given, const char *src_name,
                     ck_store_kind kind, int many, char *out, size_t n)
{
    if (given[0])
        snprintf(out, n, "%s", given);
    else if (many)
        snprintf(out, n, "%s", src_name);
    else if (kind == CK_KIND_ZARR)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%s", strcmp(src_name, "/") ? src_name : "/data");
}

/* The Zarr format and shards of a Zarr output: --zarr-format, else the
 * source's format; --shards, else the source's shards while the chunks
 * are kept. */
static ck_code zarr_layout(const ck_copy_opts *o, const ck_array_info *si,
                           ck_store *out, ck_array_spec *spec, ck_err *err)
{
    int same_chunks = memcmp(spec->chunks, si->chunks,
                             sizeof(int64_t) * (size_t)si->ndim) == 0;

    if (ck_store_kind_of(out) != CK_KIND_ZARR) {
        if (o->zarr_format || o->shards_ndim)
            return ck_err_set(err, CK_EUSAGE,
                              "%s: --zarr-format and --shards are for zarr "
                              "outputs",
                              ck_store_path(out));
        return CK_OK;
    }
    spec->zarr_format = o->zarr_format    ? o->zarr_format
                        : si->zarr_format ? si->zarr_format
                                          : 2;
    if (o->shards_ndim) {
        if (o->shards_ndim != si->ndim)
            return ck_err_set(err, CK_EUSAGE,
                              "--shards has %d values but %s has %d "
                              "dimensions",
                              o->shards_ndim, si->name, si->ndim);
        memcpy(spec->shards, o->shards, sizeof spec->shards);
    } else if (spec->zarr_format == 3 && si->shards[0] && same_chunks) {
        memcpy(spec->shards, si->shards, sizeof spec->shards);
    }
    if (spec->shards[0] && spec->zarr_format != 3)
        return ck_err_set(err, CK_EUSAGE,
                          "--shards needs a zarr v3 output (--zarr-format 3)");
    return CK_OK;
}

/* 1 when number v is exactly a value of dtype t: an integer type takes
 * only whole numbers in its range (not NaN), a float one any number that
 * does not overflow to infinity, as the HDF5 writer types _FillValue. */
static int number_fits(const ck_attrs_num *v, ck_dtype t)
{
    unsigned char buf[8];

    if (ck_dtype_is_float(t)) {
        double back;
        ck_dtype_convert(t, buf, CK_F64, &v->f, 1);
        ck_dtype_convert(CK_F64, &back, t, buf, 1);
        return !isfinite(v->f) || isfinite(back);
    }
    if (v->integer && v->fits && v->neg) {
        int64_t i = (int64_t)(0 - v->mag), back;
        ck_dtype_convert(t, buf, CK_I64, &i, 1);
        ck_dtype_convert(CK_I64, &back, t, buf, 1);
        return back == i;
    }
    if (v->integer && v->fits) {
        uint64_t u = v->mag, back;
        ck_dtype_convert(t, buf, CK_U64, &u, 1);
        ck_dtype_convert(CK_U64, &back, t, buf, 1);
        return back == u;
    }
    double back;
    ck_dtype_convert(t, buf, CK_F64, &v->f, 1);
    ck_dtype_convert(CK_F64, &back, t, buf, 1);
    return back == v->f; /* NaN, a fraction, out of range: no */
}

/* --dtype t: netCDF wants _FillValue (and CF missing_value) in the
 * variable's type, and a value that type cannot hold (NaN in an integer
 * type, -999.5, 1e20 in int16) would mark nothing, or the wrong values,
 * after the conversion: refused, as the typed attribute writers refuse
 * one (CK_EUSAGE), before the array is written. */
static ck_code check_fill_fits(ck_store *in, const ck_array_info *si,
                               ck_dtype t, ck_err *err)
{
    static const char *const keys[] = {"_FillValue", "missing_value"};
    char *json = NULL;
    cJSON *root, *v, *e;
    ck_code rc = CK_OK;

    if (t == si->dtype || t == CK_BOOL)
        return CK_OK;
    CK_TRY(ck_store_get_attrs(in, si->name, &json, err));
    root = json ? ck_attrs_parse(json, strlen(json)) : NULL;
    free(json);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0] && rc == CK_OK; k++) {
        v = cJSON_GetObjectItemCaseSensitive(root, keys[k]);
        for (e = cJSON_IsArray(v) ? v->child : v; e && rc == CK_OK;
             e = cJSON_IsArray(v) ? e->next : NULL) {
            ck_attrs_num num;
            if (!ck_attrs_number(e, &num) || number_fits(&num, t))
                continue;
            rc = ck_err_set(err, CK_EUSAGE,
                            "%s:%s: %s %.17g cannot be represented in %s "
                            "(--dtype); netCDF needs it in the variable's "
                            "type (chunkctl astype decodes the values and "
                            "writes none)",
                            ck_store_path(in), si->name, keys[k], num.f,
                            ck_dtype_name(t));
        }
    }
    cJSON_Delete(root);
    return rc;
}

/* The source's CF fill (ck_cf_fill_of), where the output as written does
 * not say it (a Zarr v2 array's fill_value or a netCDF variable's default
 * fill is not the output's: an .h5 or Zarr v3 output, a netCDF default
 * fill that a non-default fill_value replaced): a _FillValue attribute.
 * One that the output says without it (netCDF's default fill in a .nc
 * output, which netCDF4 masks, and masks default fills only so) gets
 * none: a variable that had none gets none back, coordinates too. */
static ck_code keep_cf_fill(ck_store *in, const ck_array_info *si,
                            ck_store *out, const char *oname,
                            const ck_array_spec *spec, ck_err *err)
{
    double want, got;
    ck_array *d = NULL;
    ck_err e = {0};
    ck_attr f;
    int says = 0;

    if (ck_cf_fill_of(in, si->name, si, &want, si->name, &e) != 1)
        return CK_OK;
    want = ck_scalar_convert(
               CK_F64, spec->dtype,
               ck_scalar_convert(spec->dtype, CK_F64, (ck_scalar){.f = want}))
               .f;
    if (ck_array_open(out, oname, &d, &e) == CK_OK) {
        const ck_array_info *di = ck_array_info_of(d);
        ck_scalar nf;
        ck_dtype_nc_fill(spec->dtype, &nf);
        says = ck_cf_fill_of(out, oname, di, &got, oname, &e) == 1 &&
               (got == want || (isnan(got) && isnan(want)));
        /* (an integer's too, which chunkctl leaves unmasked) */
        says |= di->nc_fill == CK_NC_FILL_DEFAULT &&
                want == ck_scalar_convert(CK_F64, spec->dtype, nf).f;
    }
    ck_array_close(d);
    if (says)
        return CK_OK;
    /* an integer exactly (want is a double): a Zarr v2 fill_value is the
     * output's fill, converted; a _FillValue attribute was copied */
    if (ck_dtype_is_float(spec->dtype))
        f = (ck_attr){.kind = CK_ATTR_F64, .f64 = want};
    else if (ck_dtype_is_signed(spec->dtype))
        f = (ck_attr){.kind = CK_ATTR_I64,
                      .i64 = si->zarr_format == 2 && si->has_fill
                                 ? spec->fill.i
                                 : (int64_t)want};
    else if (si->zarr_format == 2 && si->has_fill &&
             spec->fill.u <= (uint64_t)INT64_MAX)
        f = (ck_attr){.kind = CK_ATTR_I64, .i64 = (int64_t)spec->fill.u};
    else
        f = (ck_attr){.kind = CK_ATTR_F64, .f64 = want};
    return ck_store_set_attr(out, oname, "_FillValue", &f, err);
}

static ck_code copy_one(const ck_copy_opts *o, ck_store *in, const char *name,
                        ck_store *out, const char *oname, ck_budget *budget,
                        ck_err *err)
{
    ck_array *src = NULL, *dst = NULL;
    ck_array_spec spec;
    const ck_array_info *si;
    copy_ctx x = {0};
    ck_code rc;

    if ((rc = ck_array_open(in, name, &src, err)) != CK_OK)
        return rc;
    si = ck_array_info_of(src);
    memset(&spec, 0, sizeof spec);
    spec.name = oname;
    spec.ndim = si->ndim;
    memcpy(spec.shape, si->shape, sizeof spec.shape);
    memcpy(spec.chunks, si->chunks, sizeof spec.chunks);
    spec.unlimited = si->unlimited; /* a netCDF record dimension stays one */
    if (o->chunks_ndim) {
        if (o->chunks_ndim != si->ndim) {
            rc = ck_err_set(err, CK_EUSAGE,
                            "--chunks has %d values but %s:%s has %d "
                            "dimensions",
                            o->chunks_ndim, ck_store_path(in), si->name,
                            si->ndim);
            goto out;
        }
        memcpy(spec.chunks, o->chunks, sizeof spec.chunks);
    }
    spec.dtype = o->dtype != CK_DT_INVALID ? o->dtype : si->dtype;
    if ((rc = check_fill_fits(in, si, spec.dtype, err)) != CK_OK)
        goto out;
    spec.codec = o->has_codec ? o->codec : si->codec;
    spec.codec.nfilters = 0;
    memset(spec.codec.filters, 0, sizeof spec.codec.filters);
    if (o->has_filters) {
        spec.codec.nfilters = o->nfilters;
        memcpy(spec.codec.filters, o->filters,
               sizeof(ck_filter) * (size_t)o->nfilters);
    } else if (si->codec.nfilters > 0) {
        /* The source's filters name its element types and HDF5 has none
         * of them: they carry over only to a Zarr output of the same
         * dtype.  The data itself is copied decoded either way. */
        char f[64];
        if (ck_store_kind_of(out) == CK_KIND_ZARR && spec.dtype == si->dtype) {
            spec.codec.nfilters = si->codec.nfilters;
            memcpy(spec.codec.filters, si->codec.filters,
                   sizeof spec.codec.filters);
        } else {
            ck_log(CK_LOG_NOTE, "%s: writing without its zarr filter %s%s (%s)",
                   si->name, ck_filter_str(&si->codec.filters[0], f, sizeof f),
                   si->codec.nfilters > 1 ? " and the rest" : "",
                   ck_store_kind_of(out) == CK_KIND_ZARR
                       ? "the dtype changes; --filters sets new ones"
                       : "hdf5 has no such filter");
        }
    }
    /* A trailing byte shuffle before zstd/gzip/zlib is one thing in both
     * formats: HDF5's shuffle filter, numcodecs' Shuffle. */
    ck_codec_fold_shuffle(&spec.codec, spec.dtype);
    /* The input's compression, by default, where the output can hold it:
     * HDF5 has no lz4, lzma or bz2 filter, so gzip (which every HDF5
     * reader has) takes their place. */
    if (!o->has_codec && ck_store_kind_of(out) == CK_KIND_HDF5 &&
        (spec.codec.id == CK_CODEC_LZ4 || spec.codec.id == CK_CODEC_LZMA ||
         spec.codec.id == CK_CODEC_BZ2)) {
        ck_log(CK_LOG_NOTE,
               "%s:%s: written with gzip (hdf5 has no %s filter; --compress "
               "chooses another)",
               ck_store_path(in), si->name,
               spec.codec.id == CK_CODEC_LZ4    ? "lz4"
               : spec.codec.id == CK_CODEC_LZMA ? "lzma"
                                                : "bz2");
        ck_codec_spec gz = {0};
        ck_codec_parse("gzip", &gz, NULL);
        gz.shuffle = spec.codec.shuffle;
        gz.nfilters = spec.codec.nfilters;
        memcpy(gz.filters, spec.codec.filters, sizeof gz.filters);
        spec.codec = gz;
    }
    spec.has_fill = si->has_fill;
    spec.fill = ck_scalar_convert(spec.dtype, si->dtype, si->fill);
    /* A netCDF variable without _FillValue: its HDF5 fill value is 0 when
     * it was written without fill, but what netCDF4 masks is the type's
     * default fill, or nothing for such a byte variable.  A v2 fill_value
     * is what xarray masks (and chunkctl, pipelines/cf.c), so it says
     * that, not 0: zeros are data. */
    if (ck_store_kind_of(out) == CK_KIND_ZARR &&
        si->nc_fill == CK_NC_FILL_DEFAULT) {
        ck_scalar nf;
        ck_dtype_nc_fill(si->dtype, &nf);
        spec.has_fill = 1;
        spec.fill = ck_scalar_convert(spec.dtype, si->dtype, nf);
    } else if (ck_store_kind_of(out) == CK_KIND_ZARR &&
               si->nc_fill == CK_NC_FILL_NONE) {
        spec.has_fill = 0;
    }
    spec.has_dims = si->has_dims;
    memcpy(spec.dims, si->dims, sizeof spec.dims);
    if ((rc = zarr_layout(o, si, out, &spec, err)) != CK_OK)
        goto out;
    /* Chunks (and shards) longer than the array are cut to it only now:
     * the shards are checked against the chunks the user gave, not cut
     * ones (audit B #8: --chunks 20,20 --shards 20,20 on 13x7). */
    if ((rc = ck_array_spec_fit(&spec, err)) != CK_OK) {
        ck_err_prefix(err, "%s:%s", ck_store_path(out), oname);
        goto out;
    }
    /* The value the source's readers take as missing (CF decoding, as
     * chunkctl reads it: ck_cf_fill_of) is what the output must say, and
     * nothing else (a malformed _FillValue is copied as it is) */
    double cfv = 0;
    ck_err ce = {0};
    int hcf = si->dtype == CK_BOOL || spec.dtype == CK_BOOL
                  ? 0
                  : ck_cf_fill_of(in, si->name, si, &cfv, si->name, &ce);
    hcf = hcf > 0;
    /* A v2 array that names its dimensions says what is missing in its
     * fill_value: an array with none (an HDF5 array with dimension scales
     * but no _FillValue, a v3 array's fill_value 0) gets a null one, or
     * its zeros would read as missing. */
    if (spec.zarr_format == 2 && spec.has_dims && !hcf &&
        si->nc_fill != CK_NC_FILL_DEFAULT &&
        !(si->has_fill && ck_dtype_is_float(si->dtype) && isnan(si->fill.f)))
        spec.has_fill = 0;
    /* A v2 output says what is missing in its fill_value alone (the
     * writer drops a _FillValue attribute beside it, io/zarr): a source's
     * _FillValue other than its fill_value (an HDF5 or v3 array's) goes
     * there.  Every chunk is written, so the fill fills no data. */
    ck_attr fv;
    ck_err fe = {0};
    if (spec.zarr_format == 2 && spec.dtype != CK_BOOL &&
        ck_store_get_attr(in, si->name, "_FillValue", &fv, &fe) == CK_OK) {
        ck_scalar f;
        if (fv.kind == CK_ATTR_I64) {
            f.i = fv.i64;
            f = ck_scalar_convert(spec.dtype, CK_I64, f);
        } else { /* a number, or a string CF reads as one ("NaN") */
            f.f = fv.kind == CK_ATTR_STR ? cfv : fv.f64;
            f = ck_scalar_convert(spec.dtype, CK_F64, f);
        }
        if (fv.kind != CK_ATTR_STR || hcf) {
            spec.has_fill = 1;
            spec.fill = f;
        }
    }
    if ((rc = ck_array_create(out, &spec, &dst, err)) != CK_OK)
        goto out;
    x.src = src;
    x.dst = dst;
    x.sg = ck_array_grid(src);
    x.dg = ck_array_grid(dst);
    x.to = spec.dtype;
    x.fill = spec.fill;
    x.aligned = spec.dtype == si->dtype &&
                memcmp(x.sg->chunk, x.dg->chunk,
                       sizeof(int64_t) * (size_t)spec.ndim) == 0;
    ck_stream_job job = {
        .dst = dst,
        .produce = produce,
        .ctx = &x,
        /* a region's scratch; through the cache (raw_runs_short), a
         * chunk and its decode's */
        .scratch = x.aligned ? ck_array_scratch_bytes(src)
                   : raw_runs_short(&x)
                       ? (size_t)x.sg->chunk_nelem * ck_dtype_size(si->dtype) +
                             ck_array_scratch_bytes(src) + 256
                       : ck_array_region_scratch_bytes(src) + 128,
        .budget = budget,
        .threads = o->threads,
        .progress = o->progress,
        .chunks_opt = 1,
    };
    if (!x.aligned &&
        (rc = make_cache(&x, &job, budget, &x.cache, err)) != CK_OK)
        goto out;
    if ((rc = ck_stream_run(&job, err)) != CK_OK)
        goto out;
    if (x.cache) {
        int64_t hits, misses;
        ck_chunk_cache_stats(x.cache, &hits, &misses);
        ck_log(CK_LOG_DEBUG,
               "%lld source chunks decoded for %lld in the source (%lld "
               "cache hits)",
               (long long)misses, (long long)x.sg->total_chunks,
               (long long)hits);
    }
    rc = ck_store_copy_attrs(in, si->name, out, oname, err);
    if (rc == CK_OK && hcf)
        rc = keep_cf_fill(in, si, out, oname, &spec, err);
out:
    ck_chunk_cache_free(x.cache);
    ck_array_close(dst);
    ck_array_close(src);
    return rc;
}

/* Copies the attributes of the root and every group of the input, and
 * the groups themselves: those that hold only attributes, or nothing,
 * too (h5py's metadata groups). */
static ck_code copy_groups(ck_store *in, ck_store *out, ck_err *err)
{
    ck_names groups = {0};
    ck_code rc = ck_store_copy_attrs(in, "/", out, "/", err);

    if (rc == CK_OK)
        rc = ck_store_list_groups(in, &groups, err);
    for (int i = 0; i < groups.n && rc == CK_OK; i++) {
        char *json = NULL;
        rc = ck_store_get_attrs(in, groups.v[i], &json, err);
        /* set_attrs makes a group even when it has none to set; copy_attrs
         * keeps the attributes' types where both stores are HDF5 */
        if (rc == CK_OK && strcmp(json, "{}") == 0)
            rc = ck_store_set_attrs(out, groups.v[i], json, err);
        else if (rc == CK_OK)
            rc = ck_store_copy_attrs(in, groups.v[i], out, groups.v[i], err);
        free(json);
    }
    ck_names_release(&groups);
    return rc;
}

/* *keep = 1 if a group of the input holds attributes, or does not hold
 * array 'only' (the input's one array), or the root holds attributes
 * (a netCDF file's global ones) besides the history, which the output
 * carries on anyway (ck_cf_history). */
static ck_code groups_to_keep(ck_store *in, const char *only, int *keep,
                              ck_err *err)
{
    ck_names groups = {0};
    char *root = NULL;
    ck_code rc = strcmp(only, "/") == 0
                     ? CK_OK /* a root array: its attributes are its own */
                     : ck_store_get_attrs(in, "/", &root, err);

    *keep = 0;
    if (rc == CK_OK && root) {
        cJSON *o = ck_attrs_parse(root, strlen(root)), *a;
        for (a = o ? o->child : NULL; a && !*keep; a = a->next)
            *keep = strcmp(a->string, "history") != 0;
        cJSON_Delete(o);
    }
    free(root);
    if (rc == CK_OK)
        rc = ck_store_list_groups(in, &groups, err);
    for (int i = 0; i < groups.n && rc == CK_OK && !*keep; i++) {
        size_t n = strlen(groups.v[i]);
        char *json = NULL;
        *keep = strncmp(only, groups.v[i], n) != 0 || only[n] != '/';
        if (!*keep &&
            (rc = ck_store_get_attrs(in, groups.v[i], &json, err)) == CK_OK)
            *keep = strcmp(json, "{}") != 0;
        free(json);
    }
    ck_names_release(&groups);
    return rc;
}

#define HASH(h, x) ck_journal_hash((h), &(x), sizeof(x))

/* What a resumed copy must share with the killed one: the version, every
 * option that changes the output's bytes (not --threads, --memory or
 * --force), and the source's identity. */
static void copy_key(const ck_copy_opts *o, const char *spath,
                     ck_journal_key *k)
{
    uint64_t h = CK_JOURNAL_HASH_INIT;

    h = ck_journal_hash(h, o->src, strlen(o->src) + 1);
    h = ck_journal_hash(h, o->dst, strlen(o->dst) + 1);
    h = HASH(h, o->chunks_ndim);
    for (int d = 0; d < o->chunks_ndim && d < CK_MAX_DIMS; d++)
        h = HASH(h, o->chunks[d]);
    h = HASH(h, o->has_codec);
    if (o->has_codec)
        h = ck_stream_hash_codec(h, &o->codec);
    h = HASH(h, o->has_filters);
    h = HASH(h, o->nfilters);
    if (o->has_filters) {
        ck_codec_spec f = {0};
        f.nfilters = o->nfilters;
        memcpy(f.filters, o->filters, sizeof(ck_filter) * (size_t)o->nfilters);
        h = ck_stream_hash_codec(h, &f);
    }
    h = HASH(h, o->dtype);
    h = HASH(h, o->zarr_format);
    h = HASH(h, o->shards_ndim);
    for (int d = 0; d < o->shards_ndim && d < CK_MAX_DIMS; d++)
        h = HASH(h, o->shards[d]);
    ck_journal_key_init(k);
    ck_journal_key_command(k, &h, sizeof h);
    ck_journal_key_input(k, spath);
}

/* "/g" for "/g/x", "" for "/x". */
static size_t group_len(const char *name)
{
    const char *slash = strrchr(name, '/');
    return slash ? (size_t)(slash - name) : 0;
}

/* xarray opens a Zarr group only when each dimension has one length in
 * it ("conflicting sizes for dimension"), but netCDF lets the variables
 * of an unlimited dimension end at different lengths (the dimension is
 * the longest).  Such a file is refused for a Zarr output, naming the
 * variables, rather than written as a store xarray cannot open. */
static ck_code check_zarr_dims(ck_store *in, const ck_names *names, ck_err *err)
{
    ck_array_info *v = calloc((size_t)names->n + 1, sizeof *v);
    ck_code rc = v ? CK_OK : ck_err_set(err, CK_ENOMEM, "out of memory");

    for (int i = 0; i < names->n && rc == CK_OK; i++) {
        ck_array *a = NULL;
        if ((rc = ck_array_open(in, names->v[i], &a, err)) == CK_OK)
            v[i] = *ck_array_info_of(a);
        ck_array_close(a);
        for (int j = 0; j < i && rc == CK_OK; j++) {
            size_t gl = group_len(v[i].name);
            if (!v[i].has_dims || !v[j].has_dims ||
                gl != group_len(v[j].name) ||
                strncmp(v[i].name, v[j].name, gl) != 0)
                continue;
            for (int d = 0; d < v[i].ndim && rc == CK_OK; d++)
                for (int k = 0; k < v[j].ndim && rc == CK_OK; k++)
                    if (v[i].dims[d][0] &&
                        strcmp(v[i].dims[d], v[j].dims[k]) == 0 &&
                        v[i].shape[d] != v[j].shape[k])
                        rc = ck_err_set(
                            err, CK_ENOTSUP,
                            "%s:%s: dimension '%s' is %lld long here but "
                            "%lld in %s; a zarr store (xarray) needs one "
                            "length per dimension: copy to netCDF, or "
                            "each variable to a store of its own",
                            ck_store_path(in), v[i].name, v[i].dims[d],
                            (long long)v[i].shape[d], (long long)v[j].shape[k],
                            v[j].name);
        }
    }
    free(v);
    return rc;
}

ck_code ck_copy(const ck_copy_opts *o, ck_err *err)
{
    char spath[PATH_MAX], sname[512], dpath[PATH_MAX], dname[512], oname[512];
    ck_store *in = NULL, *out = NULL;
    ck_names names = {0};
    ck_budget budget = CK_BUDGET_INIT(o->memory);
    ck_store_kind kind;
    ck_code rc;

    CK_TRY(
        ck_target_split(o->src, spath, sizeof spath, sname, sizeof sname, err));
    CK_TRY(
        ck_target_split(o->dst, dpath, sizeof dpath, dname, sizeof dname, err));
    CK_TRY(ck_store_check_apart(spath, dpath, dpath, err));
    kind = ck_store_kind_guess(dpath);
    if (kind == CK_KIND_NONE)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: cannot tell the output format; name it "
                          "*.h5 or *.zarr",
                          dpath);
    CK_TRY(
        ck_budget_charge(&budget, ck_base_overhead(), "chunkctl itself", err));
    if ((rc = ck_store_open(spath, &in, err)) != CK_OK)
        goto out;
    if (sname[0]) {
        rc = ck_names_push(&names, sname, err);
    } else {
        rc = ck_store_list_readable(in, 1, &names, err);
        if (rc == CK_OK && names.n == 0)
            rc = ck_err_set(err, CK_EFORMAT, "%s: holds no arrays", spath);
    }
    if (rc != CK_OK)
        goto out;
    if (names.n > 1 && dname[0]) {
        rc = ck_err_set(err, CK_EUSAGE,
                        "%s holds %d arrays: copy them to a whole store, "
                        "or name one as %s:NAME",
                        spath, names.n, spath);
        goto out;
    }
    /* a whole store of one array with a group that would be lost (one
     * with attributes, or without that array) is copied as a store: the
     * array keeps its name rather than become a Zarr root array, which
     * would leave the groups no place */
    int many = names.n > 1;
    if (!many && !sname[0] && !dname[0])
        rc = groups_to_keep(in, names.v[0], &many, err);
    if (rc == CK_OK && kind == CK_KIND_ZARR && many)
        rc = check_zarr_dims(in, &names, err);
    if (rc != CK_OK)
        goto out;
    ck_journal_key key;
    copy_key(o, spath, &key);
    if ((rc = ck_store_create_resumable(dpath, kind, o->force, &key, o->resume,
                                        &out, err)) != CK_OK)
        goto out;
    for (int i = 0; i < names.n && rc == CK_OK; i++) {
        dst_name(dname, names.v[i], kind, many, oname, sizeof oname);
        rc = copy_one(o, in, names.v[i], out, oname, &budget, err);
    }
    if (rc == CK_OK && many)
        rc = copy_groups(in, out, err);
    if (rc == CK_OK)
        rc = ck_cf_history(out, in, o->cmdline ? o->cmdline : "chunkctl copy",
                           err);
    if (rc == CK_OK)
        rc = ck_store_commit_all(&out, 1, err);
out:
    ck_names_release(&names);
    ck_store_close(out);
    ck_store_close(in);
    return rc;
}
