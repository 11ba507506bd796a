/*
 * pipelines/stream.c - the chunk engine behind copy, gen and verify.
 * Workers take small batches of consecutive chunk indices from one atomic
 * counter: consecutive chunks keep a worker's reads local, and small
 * batches keep both cores busy to the end.  Consecutive means in C order,
 * or in the order of axes the job gives.  An output written under a
 * journal (ck_store_create_resumable) records its units as they are
 * written whole, a batch at a time, and a resumed run skips the units it
 * took over from the killed one (see io/journal.h).
 *
 * Under MPI (base/ck_comm.h) each rank takes a contiguous range of the
 * units in the order they are handed out and writes them into a temporary of
 * its own; rank 0 then takes the other ranks' units into its output by their
 * journals, as a resumed run takes a killed one's, and only rank 0 commits. The
 * bytes of every unit are those one process writes.  A job with no output
 * divides its chunks the same way when it asks to (ck_stream_job.divide:
 * verify, whose ranks' findings are combined after), else runs whole on
 * every rank.
 */
#include "pipelines/stream.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_comm.h"
#include "base/ck_log.h"
#include "base/ck_thread.h"

typedef struct run {
    const ck_stream_job *j;
    const ck_grid *g;
    size_t chunk_bytes, arena_bytes;
    int64_t next; /* next chunk index to hand out; atomic */
    int64_t end;  /* and the one after this rank's last */
    int64_t batch;
    /* journaled output (units: chunks, or shards of a sharded array) */
    int journaled, sharded;
    ck_grid units;
    unsigned char *kept; /* per unit: taken over from a killed run */
    int64_t *done;       /* sharded: inner chunks written per shard; atomic */
    int64_t charged;     /* kept and done, charged to the budget */
} run;

/* The unit chunk c belongs to, and for a shard the chunks it holds. */
static int64_t unit_of(const run *r, const ck_chunk *c, int64_t *inner)
{
    const ck_grid *u = &r->units, *g = r->g;
    int64_t id = 0;

    *inner = 1;
    if (!r->sharded)
        return c->index;
    for (int d = 0; d < g->ndim; d++) {
        int64_t per = u->chunk[d] / g->chunk[d], sc = c->coords[d] / per;
        int64_t left = g->nchunks[d] - sc * per;
        id = id * u->nchunks[d] + sc;
        *inner *= left < per ? left : per;
    }
    return id;
}

/* The chunk handed out t-th: chunk t in C order, or in the job's order. */
static void chunk_at(const run *r, int64_t t, ck_chunk *c)
{
    const ck_grid *g = r->g;
    int64_t coords[CK_MAX_DIMS];

    if (!r->j->reorder) {
        ck_grid_chunk(g, t, c);
        return;
    }
    for (int i = g->ndim - 1; i >= 0; i--) {
        int d = r->j->order[i];
        coords[d] = t % g->nchunks[d];
        t /= g->nchunks[d];
    }
    ck_grid_chunk(g, ck_grid_index(g, coords), c);
}

static ck_code worker(void *ctx, int id, ck_par *par, ck_err *err)
{
    run *r = ctx;
    const ck_stream_job *j = r->j;
    ck_arena a = CK_ARENA_INIT;
    ck_code rc = CK_OK;
    char what[64];

    snprintf(what, sizeof what, "worker %d's chunk buffers", id);
    if ((rc = ck_arena_reserve(&a, j->budget, r->arena_bytes, what, err)) !=
        CK_OK)
        return rc;
    while (!ck_par_stopped(par)) {
        int64_t first =
            __atomic_fetch_add(&r->next, r->batch, __ATOMIC_RELAXED);
        if (first >= r->end)
            break;
        int64_t last = first + r->batch > r->end ? r->end : first + r->batch;
        ck_chunk c;
        int64_t whole[64]; /* units written whole in this batch */
        int nwhole = 0;
        /* a failure elsewhere (another worker, another MPI rank) stops
         * the batch at the next chunk, not at its end */
        for (int64_t t = first; rc == CK_OK && !ck_par_stopped(par) && t < last;
             t++) {
            void *buf;
            chunk_at(r, t, &c);
            int64_t inner = 1, u = r->journaled ? unit_of(r, &c, &inner) : -1;
            if (u >= 0 && r->kept[u]) {
                ck_progress_add(j->progress, (int64_t)r->chunk_bytes);
                continue;
            }
            ck_arena_reset(&a);
            buf = ck_arena_alloc(&a, r->chunk_bytes);
            rc = j->produce(j->ctx, &c, buf, &a, err);
            if (rc == CK_OK && j->dst)
                rc = ck_array_write_chunk(j->dst, c.coords, buf, &a, err);
            if (rc == CK_OK)
                ck_progress_add(j->progress, (int64_t)r->chunk_bytes);
            /* A shard is whole once its last chunk's write has returned:
             * the store finishes it (its index) inside that write. */
            if (rc == CK_OK && u >= 0 &&
                (!r->sharded ||
                 __atomic_add_fetch(&r->done[u], 1, __ATOMIC_ACQ_REL) == inner))
                whole[nwhole++] = u;
        }
        if (rc == CK_OK && nwhole > 0)
            rc = ck_array_record(j->dst, &r->units, whole, nwhole, err);
        if (rc != CK_OK)
            break;
    }
    ck_arena_release(&a);
    return rc;
}

static const ck_grid *job_grid(const ck_stream_job *j)
{
    return j->dst ? ck_array_grid(j->dst) : j->grid;
}

static size_t job_buf_bytes(const ck_stream_job *j)
{
    if (!j->dst)
        return j->buf_bytes;
    return (size_t)ck_array_grid(j->dst)->chunk_nelem *
           ck_dtype_size(ck_array_info_of(j->dst)->dtype);
}

static size_t arena_bytes(const ck_stream_job *j)
{
    /* Three 64-byte alignment pads besides the three buffers. */
    return job_buf_bytes(j) + j->scratch +
           (j->dst ? ck_array_scratch_bytes(j->dst) : 0) + 3 * 64;
}

void ck_stream_plan(const ck_stream_job *j, int *threads, size_t *worker_bytes)
{
    const ck_grid *g = job_grid(j);
    int64_t left = j->budget->limit - j->budget->used;
    int t = j->threads > 0 ? j->threads : ck_ncpus();

    *worker_bytes = arena_bytes(j);
    if (t > g->total_chunks)
        t = g->total_chunks > 0 ? (int)g->total_chunks : 1;
    if ((int64_t)t * (int64_t)*worker_bytes > left)
        t = (int)(left / (int64_t)*worker_bytes);
    *threads = t > 0 ? t : 1;
}

/* Under MPI, after every rank wrote its units: rank 0 takes the others'
 * parts into j->dst.  Collective; rc is this rank's status so far. */
static ck_code take_parts(const run *r, ck_code rc, ck_err *err)
{
    const ck_stream_job *j = r->j;
    char part[2][PATH_MAX];
    int64_t n;

    if (rc == CK_OK && ck_comm_rank() != 0)
        rc = ck_array_part(j->dst, part[0], part[1], err);
    CK_TRY(ck_comm_agree(rc, err));
    /* Rank 0 hears from every rank even after a failed take, so that
     * none is left waiting to send. */
    for (int k = 1; k < ck_comm_size(); k++) {
        ck_code t = CK_OK;
        if (ck_comm_rank() == k)
            t = ck_comm_send(part, sizeof part, 0, 1, err);
        else if (ck_comm_rank() == 0 &&
                 (t = ck_comm_recv(part, sizeof part, k, 1, err)) == CK_OK &&
                 rc == CK_OK)
            rc = ck_array_take_part(j->dst, &r->units, part[0], part[1], &n,
                                    err);
        if (t != CK_OK)
            return t; /* the ranks can no longer talk: ck_comm_broken() */
    }
    return ck_comm_agree(rc, err);
}

ck_code ck_stream_fits(const ck_stream_job *j, ck_err *err)
{
    size_t worker;
    int threads;
    char need[32], have[32];

    if (job_grid(j)->total_chunks == 0)
        return CK_OK;
    ck_stream_plan(j, &threads, &worker);
    if (j->budget->limit - j->budget->used >= (int64_t)worker)
        return CK_OK;
    /* most of it to read the input's chunks: smaller output chunks would
     * not help (a (3000, 3000) chunk copied to (100, 100)) */
    size_t writing =
        job_buf_bytes(j) + (j->dst ? ck_array_scratch_bytes(j->dst) : 0);
    if (j->dst && j->chunks_opt && j->scratch > writing) {
        char rd[32];
        return ck_err_set(
            err, CK_ENOMEM,
            "--memory %s is too small: one worker needs %s, %s of it to "
            "read the input's chunks for %s:%s (raise --memory)",
            ck_size_str((double)j->budget->limit, have, sizeof have),
            ck_need_str((double)worker + (double)j->budget->used, need,
                        sizeof need),
            ck_size_str((double)j->scratch, rd, sizeof rd),
            ck_store_path(ck_array_store(j->dst)),
            ck_array_info_of(j->dst)->name);
    }
    return ck_err_set(
        err, CK_ENOMEM,
        "--memory %s is too small: one worker needs %s for chunks of "
        "%s%s%s (raise --memory%s)",
        ck_size_str((double)j->budget->limit, have, sizeof have),
        ck_need_str((double)worker + (double)j->budget->used, need,
                    sizeof need),
        j->dst ? ck_store_path(ck_array_store(j->dst)) : "the input",
        j->dst ? ":" : "", j->dst ? ck_array_info_of(j->dst)->name : "",
        j->chunks_opt ? " or use smaller --chunks" : " to that");
}

ck_code ck_stream_run(const ck_stream_job *j, ck_err *err)
{
    run r = {0};
    int threads;

    r.j = j;
    r.g = job_grid(j);
    r.chunk_bytes = job_buf_bytes(j);
    r.end = r.g->total_chunks;
    if (r.g->total_chunks == 0)
        return CK_OK;
    CK_TRY(ck_stream_fits(j, err));
    ck_stream_plan(j, &threads, &r.arena_bytes);
    r.batch = r.g->total_chunks / (threads * 16);
    if (r.batch < 1)
        r.batch = 1;
    if (r.batch > 64)
        r.batch = 64;
    if (j->progress)
        j->progress->total = r.g->total_chunks;
    ck_code rc = CK_OK;
    if (j->dst && ck_array_units(j->dst, &r.units)) {
        int64_t nkept = 0;
        r.journaled = 1;
        r.sharded = r.units.total_chunks != r.g->total_chunks ||
                    ck_array_info_of(j->dst)->shards[0] > 0;
        /* a byte a unit (and a count for shards), under --memory: a
         * tiny file may declare billions of chunks */
        int64_t units = r.units.total_chunks;
        int64_t rec =
            units > INT64_MAX / 9 ? INT64_MAX : units * (r.sharded ? 9 : 1);
        if (ck_budget_charge(j->budget, rec, "", NULL) == CK_OK) {
            r.charged = rec;
        } else {
            char lim[32];
            rc = ck_err_set(
                err, CK_ENOMEM,
                "%s:%s: %lld %s are more than --memory %s can keep "
                "track of (%s each); use larger --chunks",
                ck_store_path(ck_array_store(j->dst)),
                ck_array_info_of(j->dst)->name, (long long)units,
                r.sharded ? "shards" : "chunks",
                ck_size_str((double)j->budget->limit, lim, sizeof lim),
                r.sharded ? "9 bytes" : "a byte");
        }
        if (rc == CK_OK) {
            r.kept = calloc((size_t)units, 1);
            r.done = r.sharded ? calloc((size_t)units, sizeof *r.done) : NULL;
            if (!r.kept || (r.sharded && !r.done))
                rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        }
        if (rc == CK_OK)
            rc = ck_array_resume(j->dst, &r.units, r.kept, &nkept, err);
        if (rc == CK_OK && nkept >= 0)
            ck_log(CK_LOG_NOTE,
                   "%s:%s: %lld of %lld %s kept from the killed run, the "
                   "rest computed",
                   ck_store_path(ck_array_store(j->dst)),
                   ck_array_info_of(j->dst)->name, (long long)nkept,
                   (long long)r.units.total_chunks,
                   r.sharded ? "shards" : "chunks");
    }
    /* This rank's units: a range of chunks, or of shards (whose chunks
     * are not consecutive: the others are skipped as if kept). */
    int parts = ck_comm_size() > 1;
    if (rc == CK_OK && parts) {
        int64_t lo, hi;
        if (j->dst && !r.journaled)
            rc = ck_err_set(err, CK_ENOTSUP,
                            "%s: this output cannot be written in parts by "
                            "several MPI ranks",
                            ck_store_path(ck_array_store(j->dst)));
        else if (j->dst) {
            ck_comm_split(r.units.total_chunks, ck_comm_rank(), ck_comm_size(),
                          &lo, &hi);
            if (r.sharded)
                for (int64_t u = 0; u < r.units.total_chunks; u++)
                    r.kept[u] |= u < lo || u >= hi;
            else {
                r.next = lo;
                r.end = hi;
            }
        }
        /* A job with no output runs whole on every rank unless it
         * divides (verify: the ranks' findings are combined after). */
        else if (j->divide) {
            ck_comm_split(r.g->total_chunks, ck_comm_rank(), ck_comm_size(),
                          &lo, &hi);
            r.next = lo;
            r.end = hi;
        }
    }
    if (rc == CK_OK && r.next < r.end)
        rc = ck_par_run(threads, worker, &r, err);
    if (parts && j->dst && !ck_comm_broken())
        rc = take_parts(&r, rc, err);
    else if (parts)
        rc = ck_comm_agree(rc, err);
    free(r.kept);
    free(r.done);
    ck_budget_release(j->budget, r.charged);
    return rc;
}

#define HASH(h, x) ck_journal_hash((h), &(x), sizeof(x))

uint64_t ck_stream_hash_codec(uint64_t h, const ck_codec_spec *c)
{
    h = HASH(h, c->id);
    h = HASH(h, c->level);
    h = HASH(h, c->shuffle);
    h = ck_journal_hash(h, c->cname, strnlen(c->cname, sizeof c->cname));
    h = HASH(h, c->format);
    h = HASH(h, c->check);
    h = HASH(h, c->lzfilter);
    h = HASH(h, c->checksum);
    h = HASH(h, c->nfilters);
    for (int i = 0; i < c->nfilters && i < CK_FILTERS_MAX; i++) {
        const ck_filter *f = &c->filters[i];
        h = HASH(h, f->id);
        h = HASH(h, f->dtype);
        h = HASH(h, f->astype);
        h = HASH(h, f->elementsize);
        h = HASH(h, f->digits);
        h = HASH(h, f->keepbits);
        h = HASH(h, f->offset);
        h = HASH(h, f->scale);
        h = HASH(h, f->nlabels);
        for (int k = 0; k < f->nlabels && k < CK_CATEGORIES_MAX; k++)
            h = HASH(h, f->labels[k]);
    }
    return h;
}

void ck_stream_abandon(void)
{
    ck_store_abandon_all();
}

int64_t ck_base_overhead(void)
{
    int64_t mib = (int64_t)1 << 20, mpi = ck_comm_start_bytes();

    return CK_BASE_OVERHEAD + (mpi + mib - 1) / mib * mib;
}
