/*
 * pipelines/gen.c - chunkctl gen: random arrays from a counter-based
 * generator.  Element i is a hash of (seed, i) (splitmix64's finaliser), so
 * any chunk can be generated on its own, in any order, on any thread.
 */
#include "pipelines/gen.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/journal.h"
#include "pipelines/stream.h"

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A double in [0, 1) from draw k of element i. */
static double unit(uint64_t seed, uint64_t i, uint64_t k)
{
    uint64_t h = mix(mix(seed + 0x9e3779b97f4a7c15ULL) ^ (2 * i + k));
    return (double)(h >> 11) * 0x1.0p-53;
}

double ck_gen_value(ck_dist dist, double a, double b, uint64_t seed, uint64_t i)
{
    switch (dist) {
    case CK_DIST_NORMAL: {
        /* Box-Muller; 1 - u is in (0, 1], so the log is finite. */
        double u1 = 1.0 - unit(seed, i, 0), u2 = unit(seed, i, 1);
        return a + b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    }
    case CK_DIST_INTEGERS:
        return floor(a + unit(seed, i, 0) * (b - a));
    default:
        return a + unit(seed, i, 0) * (b - a);
    }
}

void ck_auto_chunks(int ndim, const int64_t *shape, size_t elem, size_t target,
                    int64_t *chunks)
{
    uint64_t per = elem ? elem : 1;
    int d = ndim - 1;

    for (; d >= 0; d--) {
        uint64_t n = shape[d] > 0 ? (uint64_t)shape[d] : 1;
        if (per * n > target)
            break;
        chunks[d] = (int64_t)n;
        per *= n;
    }
    if (d >= 0) {
        uint64_t k = target / per;
        chunks[d] = k < 1 ? 1 : (int64_t)k;
        for (d--; d >= 0; d--)
            chunks[d] = 1;
    }
}

/* A double below b can round up to b in float32: keep [a, b) half-open. */
static void keep_below(float *v, int64_t n, double b)
{
    float top = nextafterf((float)b, -INFINITY);

    for (int64_t i = 0; i < n; i++)
        if ((double)v[i] >= b)
            v[i] = top;
}

typedef struct gen_ctx {
    const ck_gen_opts *o;
    const ck_grid *g;
} gen_ctx;

void ck_gen_box(ck_dist dist, double a, double b, uint64_t seed, ck_dtype t,
                int nd, const int64_t *shape, const int64_t *start,
                const int64_t *box, const int64_t *dst_shape, void *dst,
                double *row)
{
    int last = nd - 1;
    size_t esz = ck_dtype_size(t);
    int64_t row_len = nd ? box[last] : 1;
    int64_t idx[CK_MAX_DIMS] = {0};

    for (;;) {
        /* Linear index of this row's first element in the array, and its
         * offset in dst. */
        uint64_t lin = 0;
        int64_t off = 0;
        for (int d = 0; d < nd; d++) {
            lin = lin * (uint64_t)shape[d] + (uint64_t)(start[d] + idx[d]);
            off = off * dst_shape[d] + idx[d];
        }
        for (int64_t k = 0; k < row_len; k++)
            row[k] = ck_gen_value(dist, a, b, seed, lin + (uint64_t)k);
        ck_dtype_convert(t, (char *)dst + (size_t)off * esz, CK_F64, row,
                         (size_t)row_len);
        if (t == CK_F32 && dist == CK_DIST_UNIFORM)
            keep_below((float *)dst + off, row_len, b);
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

static ck_code produce(void *vctx, const ck_chunk *c, void *buf,
                       ck_arena *scratch, ck_err *err)
{
    gen_ctx *x = vctx;
    const ck_gen_opts *o = x->o;
    const ck_grid *g = x->g;
    int64_t row_len = g->ndim ? c->shape[g->ndim - 1] : 1;
    double *row = ck_arena_alloc(scratch, sizeof(double) * (size_t)row_len);
    ck_scalar zero = {0};

    if (!row)
        return ck_err_internal(err, "gen: scratch arena too small");
    ck_dtype_fill(o->dtype, buf, zero, (size_t)g->chunk_nelem);
    ck_gen_box(o->dist, o->a, o->b, o->seed, o->dtype, g->ndim, g->shape,
               c->start, c->shape, g->chunk, buf, row);
    return CK_OK;
}

ck_code ck_gen(const ck_gen_opts *o, ck_err *err)
{
    char path[PATH_MAX], name[512];
    ck_store *out = NULL;
    ck_array *dst = NULL;
    ck_array_spec spec;
    ck_budget budget = CK_BUDGET_INIT(o->memory);
    ck_store_kind kind;
    ck_code rc;

    CK_TRY(ck_target_split(o->dst, path, sizeof path, name, sizeof name, err));
    kind = ck_store_kind_guess(path);
    if (kind == CK_KIND_NONE)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: cannot tell the output format; name it "
                          "*.h5 or *.zarr",
                          path);
    memset(&spec, 0, sizeof spec);
    spec.name = name[0] ? name : (kind == CK_KIND_ZARR ? "/" : "/data");
    spec.ndim = o->ndim;
    memcpy(spec.shape, o->shape, sizeof spec.shape);
    if (o->chunks_ndim) {
        if (o->chunks_ndim != o->ndim)
            return ck_err_set(err, CK_EUSAGE,
                              "--chunks has %d values, --shape %d",
                              o->chunks_ndim, o->ndim);
        memcpy(spec.chunks, o->chunks, sizeof spec.chunks);
    } else {
        ck_auto_chunks(o->ndim, o->shape, ck_dtype_size(o->dtype), 8 << 20,
                       spec.chunks);
    }
    spec.dtype = o->dtype;
    spec.codec = o->codec;
    spec.has_fill = 1;
    if (o->shards_ndim && o->shards_ndim != o->ndim)
        return ck_err_set(err, CK_EUSAGE, "--shards has %d values, --shape %d",
                          o->shards_ndim, o->ndim);
    if ((o->zarr_format || o->shards_ndim) && kind != CK_KIND_ZARR)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: --zarr-format and --shards are for zarr "
                          "outputs",
                          path);
    spec.zarr_format = o->zarr_format;
    memcpy(spec.shards, o->shards, sizeof spec.shards);
    CK_TRY(ck_array_spec_fit(&spec, err)); /* chunks, shards cut to shape */
    CK_TRY(
        ck_budget_charge(&budget, ck_base_overhead(), "chunkctl itself", err));
    /* Journaled as every output is (under MPI each rank's part is taken
     * into rank 0's output through it); gen has no --resume. */
    ck_journal_key key;
    uint64_t h = CK_JOURNAL_HASH_INIT;
    h = ck_journal_hash(h, o->dst, strlen(o->dst) + 1);
    h = ck_journal_hash(h, spec.shape, sizeof spec.shape);
    h = ck_journal_hash(h, spec.chunks, sizeof spec.chunks);
    h = ck_journal_hash(h, &spec.dtype, sizeof spec.dtype);
    h = ck_stream_hash_codec(h, &spec.codec);
    h = ck_journal_hash(h, &spec.zarr_format, sizeof spec.zarr_format);
    h = ck_journal_hash(h, spec.shards, sizeof spec.shards);
    h = ck_journal_hash(h, &o->dist, sizeof o->dist);
    h = ck_journal_hash(h, &o->a, sizeof o->a);
    h = ck_journal_hash(h, &o->b, sizeof o->b);
    h = ck_journal_hash(h, &o->seed, sizeof o->seed);
    ck_journal_key_init(&key);
    ck_journal_key_command(&key, &h, sizeof h);
    if ((rc = ck_store_create_resumable(path, kind, o->force, &key, 0, &out,
                                        err)) != CK_OK ||
        (rc = ck_array_create(out, &spec, &dst, err)) != CK_OK)
        goto out;
    gen_ctx x = {o, ck_array_grid(dst)};
    ck_stream_job job = {
        .dst = dst,
        .produce = produce,
        .ctx = &x,
        .scratch = sizeof(double) *
                       (size_t)(spec.ndim ? spec.chunks[spec.ndim - 1] : 1) +
                   64,
        .budget = &budget,
        .threads = o->threads,
        .progress = o->progress,
        .chunks_opt = 1,
    };
    if ((rc = ck_stream_run(&job, err)) != CK_OK)
        goto out;
    ck_array_close(dst);
    dst = NULL;
    rc = ck_store_commit_all(&out, 1, err);
out:
    ck_array_close(dst);
    ck_store_close(out);
    return rc;
}

int ck_gen_integers_fit(ck_dtype t, double lo, double hi, double *tlo,
                        double *thi)
{
    static const struct {
        ck_dtype t;
        double lo, hi; /* the dtype's values, as doubles */
    } r[] = {
        {CK_I8, -128.0, 127.0},
        {CK_I16, -32768.0, 32767.0},
        {CK_I32, -2147483648.0, 2147483647.0},
        {CK_I64, -9223372036854775808.0, 9223372036854775807.0},
        {CK_U8, 0, 255.0},
        {CK_U16, 0, 65535.0},
        {CK_U32, 0, 4294967295.0},
        {CK_U64, 0, 18446744073709551615.0},
        {CK_BOOL, 0, 1},
    };

    if (floor(lo) != lo || floor(hi) != hi)
        return 1;
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (r[i].t == t && (lo < r[i].lo || hi - 1 > r[i].hi)) {
            *tlo = r[i].lo;
            *thi = r[i].hi;
            return 2;
        }
    return 0;
}

int ck_gen_uniform_fits(double lo, double hi)
{
    return isfinite(hi - lo);
}
