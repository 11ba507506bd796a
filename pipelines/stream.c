/*
 * pipelines/stream.c - the chunk engine behind copy, gen and verify.
 * Workers take small batches of consecutive chunk indices from one atomic
 * counter: consecutive chunks keep a worker's reads local, and small
 * batches keep both cores busy to the end.
 */
#include "pipelines/stream.h"

#include <stdio.h>

#include "base/ck_thread.h"

typedef struct run {
    const ck_stream_job *j;
    const ck_grid *g;
    size_t chunk_bytes, arena_bytes;
    int64_t next; /* next chunk index to hand out; atomic */
    int64_t batch;
} run;

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
        if (first >= r->g->total_chunks)
            break;
        ck_iter it = ck_iter_range(r->g, first, r->batch);
        ck_chunk c;
        while (rc == CK_OK && ck_iter_next(&it, &c)) {
            void *buf;
            ck_arena_reset(&a);
            buf = ck_arena_alloc(&a, r->chunk_bytes);
            rc = j->produce(j->ctx, &c, buf, &a, err);
            if (rc == CK_OK && j->dst)
                rc = ck_array_write_chunk(j->dst, c.coords, buf, &a, err);
            if (rc == CK_OK)
                ck_progress_add(j->progress, (int64_t)r->chunk_bytes);
        }
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

ck_code ck_stream_run(const ck_stream_job *j, ck_err *err)
{
    run r = {0};
    int64_t left;
    int threads;
    char need[32], have[32];

    r.j = j;
    r.g = job_grid(j);
    r.chunk_bytes = job_buf_bytes(j);
    if (r.g->total_chunks == 0)
        return CK_OK;
    ck_stream_plan(j, &threads, &r.arena_bytes);
    left = j->budget->limit - j->budget->used;
    if (left < (int64_t)r.arena_bytes)
        return ck_err_set(
            err, CK_ENOMEM,
            "--memory %s is too small: one worker needs %s for chunks of "
            "%s%s%s (raise --memory or use smaller --chunks)",
            ck_size_str((double)j->budget->limit, have, sizeof have),
            ck_size_str((double)r.arena_bytes + (double)j->budget->used, need,
                        sizeof need),
            j->dst ? ck_store_path(ck_array_store(j->dst)) : "the input",
            j->dst ? ":" : "", j->dst ? ck_array_info_of(j->dst)->name : "");
    r.batch = r.g->total_chunks / (threads * 16);
    if (r.batch < 1)
        r.batch = 1;
    if (r.batch > 64)
        r.batch = 64;
    if (j->progress)
        j->progress->total = r.g->total_chunks;
    return ck_par_run(threads, worker, &r, err);
}

void ck_stream_abandon(void)
{
    ck_store_abandon_all();
}
