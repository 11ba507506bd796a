/*
 * pipelines/verify.c - every chunk read and decoded on all cores, damaged
 * ones collected instead of stopping the run.
 */
#include "pipelines/verify.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

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

static ck_code verify_one(const ck_verify_opts *o, ck_store *s,
                          const char *name, ck_budget *budget,
                          ck_verify_report *rep, ck_err *err)
{
    ck_array *a = NULL;
    verify_ctx x;
    ck_code rc;

    CK_TRY(ck_array_open(s, name, &a, err));
    x.a = a;
    x.base = rep->chunks;
    x.rep = rep;
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
    };
    rc = ck_stream_run(&job, err);
    pthread_mutex_destroy(&x.lock);
    rep->arrays++;
    ck_array_close(a);
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
    CK_TRY(ck_target_split(o->target, path, name, sizeof path, err));
    CK_TRY(ck_budget_charge(&budget, CK_BASE_OVERHEAD, "chunkctl itself", err));
    CK_TRY(ck_store_open(path, &s, err));
    rc = name[0] ? ck_names_push(&names, name, err)
                 : ck_store_list(s, &names, err);
    for (int i = 0; i < names.n && rc == CK_OK; i++) {
        if (o->progress) /* one bar per array */
            o->progress->done = o->progress->bytes = 0;
        rc = verify_one(o, s, names.v[i], &budget, rep, err);
    }
    ck_names_release(&names);
    ck_store_close(s);
    return rc;
}
