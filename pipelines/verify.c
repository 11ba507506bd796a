/*
 * pipelines/verify.c - every chunk read and decoded on all cores, damaged
 * ones collected instead of stopping the run.  Under MPI each rank reads a
 * contiguous range of each array's chunks and the ranks' findings are
 * combined (counts summed, the first damaged chunks kept in order), so
 * every rank holds the one-process report.
 */
#include "pipelines/verify.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_comm.h"
#include "pipelines/stream.h"

typedef struct verify_ctx {
    ck_array *a;
    int64_t base; /* sort key of this array's chunk 0 */
    ck_verify_report *rep;
    pthread_mutex_t lock;
} verify_ctx;

/* Keeps the report's messages the first damaged chunks in order, whatever
 * order the threads found them in, so the output is deterministic. */
static void keep(ck_verify_report *r, int64_t key, const char *msg)
{
    int at = r->nmsg;

    if (r->nmsg == CK_VERIFY_MAX_REPORT) {
        if (key > r->where[r->nmsg - 1])
            return;
        at = --r->nmsg; /* drop the last */
    }
    while (at > 0 && r->where[at - 1] > key) {
        r->where[at] = r->where[at - 1];
        memcpy(r->msg[at], r->msg[at - 1], sizeof r->msg[at]);
        at--;
    }
    r->where[at] = key;
    snprintf(r->msg[at], sizeof r->msg[at], "%s", msg);
    r->nmsg++;
}

static ck_code produce(void *vctx, const ck_chunk *c, void *buf,
                       ck_arena *scratch, ck_err *err)
{
    verify_ctx *x = vctx;
    ck_err local = {0};
    ck_code rc = ck_array_read_chunk(x->a, c->coords, buf, scratch, &local);

    if (rc == CK_OK || rc == CK_ECORRUPT) {
        pthread_mutex_lock(&x->lock);
        x->rep->chunks++;
        if (rc == CK_OK) {
            x->rep->bytes +=
                (int64_t)ck_chunk_nelem(ck_array_grid(x->a), c) *
                (int64_t)ck_dtype_size(ck_array_info_of(x->a)->dtype);
        } else {
            x->rep->bad++;
            keep(x->rep, x->base + c->index, local.msg);
        }
        pthread_mutex_unlock(&x->lock);
        return CK_OK;
    }
    return ck_err_set(err, local.code, "%s", local.msg);
}

/* Adds one array's findings (on this rank, or another's) to the report. */
static void add_report(ck_verify_report *rep, const ck_verify_report *one)
{
    rep->chunks += one->chunks;
    rep->bytes += one->bytes;
    rep->bad += one->bad;
    for (int k = 0; k < one->nmsg; k++)
        keep(rep, one->where[k], one->msg[k]);
}

/* Collective: every rank's findings on one array, added to *rep in rank
 * order (a damaged chunk's key places it whatever the rank). */
static ck_code add_ranks(ck_verify_report *rep, const ck_verify_report *mine,
                         ck_err *err)
{
    int size = ck_comm_size();
    ck_verify_report *all = malloc(sizeof *all * (size_t)size);
    ck_code rc = all ? CK_OK : ck_err_set(err, CK_ENOMEM, "out of memory");

    if ((rc = ck_comm_agree(rc, err)) == CK_OK)
        rc = ck_comm_allgather(mine, sizeof *mine, all, err);
    for (int k = 0; rc == CK_OK && k < size; k++)
        add_report(rep, &all[k]);
    free(all);
    return rc;
}

static ck_code verify_one(const ck_verify_opts *o, ck_store *s,
                          const char *name, ck_budget *budget,
                          ck_verify_report *rep, ck_err *err)
{
    ck_array *a = NULL;
    ck_verify_report *mine = calloc(1, sizeof *mine);
    verify_ctx x;
    ck_code rc;

    if (!mine)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    if ((rc = ck_array_open(s, name, &a, err)) != CK_OK) {
        free(mine);
        return rc;
    }
    /* a Zarr array's attributes are read too: info and copy refuse one
     * whose .zattrs is not JSON, so verify must not call it sound */
    char *attrs = NULL;
    if (ck_store_kind_of(s) == CK_KIND_ZARR &&
        (rc = ck_store_get_attrs(s, name, &attrs, err)) != CK_OK) {
        ck_array_close(a);
        free(mine);
        return rc;
    }
    free(attrs);
    x.a = a;
    x.base = rep->chunks;
    x.rep = mine;
    pthread_mutex_init(&x.lock, NULL);
    ck_stream_job job = {
        .grid = ck_array_grid(a),
        .buf_bytes = (size_t)ck_array_grid(a)->chunk_nelem *
                     ck_dtype_size(ck_array_info_of(a)->dtype),
        .produce = produce,
        .ctx = &x,
        .scratch = ck_array_scratch_bytes(a),
        .budget = budget,
        .threads = o->threads,
        .progress = o->progress,
        .divide = 1,
    };
    rc = ck_stream_run(&job, err); /* agreed under MPI */
    pthread_mutex_destroy(&x.lock);
    if (rc == CK_OK && ck_comm_size() > 1)
        rc = add_ranks(rep, mine, err);
    else if (rc == CK_OK)
        add_report(rep, mine);
    rep->arrays++;
    ck_array_close(a);
    free(mine);
    return rc;
}

ck_code ck_verify(const ck_verify_opts *o, ck_verify_report *rep, ck_err *err)
{
    char path[PATH_MAX], name[512];
    ck_store *s = NULL;
    ck_names names = {0};
    ck_budget budget = CK_BUDGET_INIT(o->memory);
    ck_code rc;

    memset(rep, 0, sizeof *rep);
    CK_TRY(
        ck_target_split(o->target, path, sizeof path, name, sizeof name, err));
    CK_TRY(
        ck_budget_charge(&budget, ck_base_overhead(), "chunkctl itself", err));
    CK_TRY(ck_store_open(path, &s, err));
    rc = name[0] ? ck_names_push(&names, name, err)
                 : ck_store_list_readable(s, 1, &names, err);
    /* Names that lead nowhere come first, keyed before every chunk (whose
     * keys are >= 0); every rank finds the same ones. */
    ck_names lost = {0};
    if (rc == CK_OK && !name[0])
        rc = ck_store_dangling(s, &lost, err);
    for (int i = 0; i < lost.n && rc == CK_OK; i++)
        keep(rep, INT64_MIN + i, lost.v[i]);
    rep->missing = lost.n;
    ck_names_release(&lost);
    for (int i = 0; i < names.n && rc == CK_OK; i++) {
        if (o->progress) /* one bar per array */
            o->progress->done = o->progress->bytes = 0;
        rc = verify_one(o, s, names.v[i], &budget, rep, err);
    }
    ck_names_release(&names);
    ck_store_close(s);
    return rc;
}
