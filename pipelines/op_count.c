/*
 * pipelines/op_count.c - unique and bincount: 1-D results whose length is
 * known only after the run (as a mask's), held in memory.
 *
 * unique (numpy.unique of the flattened array, return_counts through the
 * result "u.counts"): workers sort each chunk's values (as 64-bit keys in
 * the values' order) into runs of distinct values with counts, and merge
 * runs of like size as they go; the runs of all workers are merged at the
 * end.  A sorted set with integer counts is the same whatever the order
 * of the merges, so the result does not depend on threads.  NaNs collapse
 * into one (NumPy 1.24's equal_nan); -0.0 and 0.0 are one value, 0.0 when
 * both occur.  The runs are charged to --memory.
 *
 * bincount (numpy.bincount of the flattened array): workers read boxes in
 * parallel and add them to the bins in C order of the array, one box after
 * the other, so weighted sums are NumPy's own sequential sums, bit for
 * bit, for any thread count.  The bins grow to the largest value seen,
 * charged to --memory.
 *
 * Under MPI each rank reads a contiguous range of the chunks: unique's
 * runs meet up a binary tree of ranks and rank 0 broadcasts the set;
 * bincount's counts are summed over the ranks (ck_tree_sum_u64).  Both
 * are exact, so the result is one process's.  A weighted bincount's float
 * sums are NumPy's only when they are added in C order, so its ranks add
 * in turn: each reads its own range of boxes at once, all ranks side by
 * side, holding what it read in memory (up to half of what --memory has
 * left) until the rank before it has added its range and passed it the
 * bins; it adds its boxes (reading those it could not hold) and passes
 * the bins on; the last rank's go to every rank.  The reading is divided;
 * the adding, which is cheap, is in turn.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/ck_comm.h"
#include "base/ck_log.h"
#include "base/ck_thread.h"
#include "base/ck_tree.h"
#include "pipelines/exec_impl.h"
#include "pipelines/gen.h"
#include "pipelines/optab.h"
#include "pipelines/plan_impl.h"

enum {
    LEN_CHUNK = 1 << 20,
    MAXW = 64,
    MAXSTACK = 80,
    U_TAG = 2032,  /* unique's runs between ranks (ck_tree's is 2030) */
    BW_TAG = 2033, /* a weighted bincount's bins, rank to rank */
};

static int find_node(const ck_plan *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->node[i].name, name) == 0)
            return i;
    return -1;
}

CK_PLAN_PARSE_FN(count)
{
    const cJSON *w = cJSON_GetObjectItem(step, "weights");
    const ck_node *m;
    int self = (int)(n - p->node);
    int64_t v;

    CK_TRY(ck_plan_one_array(p, path, where, n, &m, err));
    n->ndim = 1;
    n->shape[0] = -1; /* known after the run */
    n->chunks[0] = LEN_CHUNK;
    if (sub == CK_COUNT_UNIQUE) {
        if (cJSON_GetObjectItem(step, "minlength") || w)
            return ck_plan_bad(err, path, where,
                               "%s: unique takes no such key (it is "
                               "bincount's)",
                               w ? "weights" : "minlength");
        n->dtype = m->dtype;
        return ck_plan_add_part(p, path, where, self, "counts", CK_PART_COUNTS,
                                CK_I64, 1, n->shape, n->chunks, err);
    }
    if (ck_dtype_is_float(m->dtype))
        return ck_plan_bad(err, path, where,
                           "args[0]: bincount counts integers (or bools), "
                           "not %s",
                           ck_dtype_name(m->dtype));
    CK_TRY(ck_plan_opt_int(path, where, step, "minlength", 0, (int64_t)1 << 50,
                           0, &v, err));
    n->minlength = v;
    if (w && !cJSON_IsNull(w)) {
        char a[128], b[128];
        if (!cJSON_IsString(w) ||
            (n->weights = find_node(p, w->valuestring)) < 0)
            return ck_plan_bad(err, path, where,
                               "weights: no input or step named '%s'",
                               cJSON_IsString(w) ? w->valuestring : "?");
        const ck_node *wn = &p->node[n->weights];
        if ((wn->ndim == 1 && wn->shape[0] < 0) ||
            (m->ndim == 1 && m->shape[0] < 0))
            return ck_plan_bad(err, path, where,
                               "weights: the length of '%s' is known only "
                               "after the run, so it cannot be checked "
                               "against the weights'",
                               wn->shape[0] < 0 ? wn->name : m->name);
        if (wn->ndim != m->ndim ||
            memcmp(wn->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim))
            return ck_plan_bad(
                err, path, where,
                "weights: shape %s is not the shape %s of args[0]",
                ck_plan_shape_str(wn->ndim, wn->shape, a, sizeof a),
                ck_plan_shape_str(m->ndim, m->shape, b, sizeof b));
    }
    n->dtype = n->weights >= 0 ? CK_F64 : CK_I64;
    return CK_OK;
}

/* Sets the length of node i, known now. */
static void set_length(xrun *r, int i, int64_t len)
{
    ck_node *nd = &r->p->node[i];

    nd->shape[0] = len;
    nd->chunks[0] = len < LEN_CHUNK ? (len > 0 ? len : 1) : LEN_CHUNK;
}

/* Reserves up to r's thread count of worker arenas of 'bytes' each (at
 * most nbox, and no more than half of what the budget has left, so that
 * what the pass holds has room); at least one, or CK_ENOMEM. */
static ck_code reserve_workers(xrun *r, int64_t nbox, size_t bytes,
                               const char *what, ck_arena *arena, int *nt,
                               ck_err *err)
{
    int t = r->o->threads > 0 ? r->o->threads : ck_ncpus();
    int64_t left = r->budget.limit - r->budget.used;
    int k;

    if (t > MAXW)
        t = MAXW;
    if (t > nbox)
        t = nbox > 0 ? (int)nbox : 1;
    while (t > 1 && (int64_t)bytes * t > left / 2)
        t--;
    for (k = 0; k < t; k++) {
        ck_err local = {0};
        ck_code rc = ck_arena_reserve(&arena[k], &r->budget, bytes, what,
                                      k ? &local : err);
        if (rc != CK_OK) {
            if (k == 0)
                return rc;
            break;
        }
    }
    *nt = k;
    return CK_OK;
}

/* ---- unique ---- */

/* Values as 64-bit keys whose unsigned order is the values' order: ints
 * offset to unsigned, floats (as float64) by their sign and bits, every
 * NaN one key above +inf. */
static const uint64_t SIGN = (uint64_t)1 << 63;

static uint64_t key_of_f64(double v)
{
    uint64_t b;

    if (isnan(v))
        v = NAN;
    memcpy(&b, &v, sizeof b);
    return (b & SIGN) ? ~b : b | SIGN;
}

static double f64_of_key(uint64_t k)
{
    uint64_t b = (k & SIGN) ? k & ~SIGN : ~k;
    double v;

    memcpy(&v, &b, sizeof v);
    return v;
}

static void encode(ck_dtype t, const void *src, size_t n, uint64_t *key)
{
    switch (t) {
    case CK_BOOL:
    case CK_U8:
        for (size_t j = 0; j < n; j++)
            key[j] = ((const uint8_t *)src)[j];
        break;
    case CK_U16:
        for (size_t j = 0; j < n; j++)
            key[j] = ((const uint16_t *)src)[j];
        break;
    case CK_U32:
        for (size_t j = 0; j < n; j++)
            key[j] = ((const uint32_t *)src)[j];
        break;
    case CK_U64:
        memcpy(key, src, n * 8);
        break;
    case CK_I8:
        for (size_t j = 0; j < n; j++)
            key[j] = (uint64_t)(int64_t)((const int8_t *)src)[j] ^ SIGN;
        break;
    case CK_I16:
        for (size_t j = 0; j < n; j++)
            key[j] = (uint64_t)(int64_t)((const int16_t *)src)[j] ^ SIGN;
        break;
    case CK_I32:
        for (size_t j = 0; j < n; j++)
            key[j] = (uint64_t)(int64_t)((const int32_t *)src)[j] ^ SIGN;
        break;
    case CK_I64:
        for (size_t j = 0; j < n; j++)
            key[j] = (uint64_t)((const int64_t *)src)[j] ^ SIGN;
        break;
    case CK_F32:
        for (size_t j = 0; j < n; j++)
            key[j] = key_of_f64((double)((const float *)src)[j]);
        break;
    default:
        for (size_t j = 0; j < n; j++)
            key[j] = key_of_f64(((const double *)src)[j]);
    }
}

/* Writes n keys as values of dtype t into dst, which may be the keys
 * themselves (values are never wider than keys). */
static void decode(ck_dtype t, const uint64_t *key, size_t n, void *dst)
{
    for (size_t j = 0; j < n; j++) {
        uint64_t k = key[j];
        int64_t s = (int64_t)(k ^ SIGN);
        switch (t) {
        case CK_BOOL:
        case CK_U8:
            ((uint8_t *)dst)[j] = (uint8_t)k;
            break;
        case CK_U16:
            ((uint16_t *)dst)[j] = (uint16_t)k;
            break;
        case CK_U32:
            ((uint32_t *)dst)[j] = (uint32_t)k;
            break;
        case CK_U64:
            ((uint64_t *)dst)[j] = k;
            break;
        case CK_I8:
            ((int8_t *)dst)[j] = (int8_t)s;
            break;
        case CK_I16:
            ((int16_t *)dst)[j] = (int16_t)s;
            break;
        case CK_I32:
            ((int32_t *)dst)[j] = (int32_t)s;
            break;
        case CK_I64:
            ((int64_t *)dst)[j] = s;
            break;
        case CK_F32:
            ((float *)dst)[j] = (float)f64_of_key(k);
            break;
        default:
            ((double *)dst)[j] = f64_of_key(k);
        }
    }
}

/* LSD radix sort of a[n] with b[n] as scratch, one byte a pass, passes
 * whose byte is the same in every key skipped; h is scratch for the
 * histograms (HIST_BYTES).  Returns a or b, whichever holds the sorted
 * keys. */
enum { HIST_BYTES = 8 * 256 * sizeof(size_t) };

static uint64_t *radix_sort(uint64_t *a, uint64_t *b, size_t n,
                            size_t (*h)[256])
{
    memset(h, 0, HIST_BYTES);
    for (size_t j = 0; j < n; j++)
        for (int d = 0; d < 8; d++)
            h[d][(a[j] >> (8 * d)) & 255]++;
    for (int d = 0; d < 8 && n > 1; d++) {
        size_t pos = 0;
        if (h[d][(a[0] >> (8 * d)) & 255] == n)
            continue;
        for (int v = 0; v < 256; v++) {
            size_t c = h[d][v];
            h[d][v] = pos;
            pos += c;
        }
        for (size_t j = 0; j < n; j++)
            b[h[d][(a[j] >> (8 * d)) & 255]++] = a[j];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    return a;
}

/* A sorted run of distinct keys and their counts, in one block charged
 * to the budget. */
typedef struct urun {
    uint64_t *key; /* the block; counts follow the len keys */
    int64_t *cnt;
    int64_t len;
} urun;

typedef struct uctx {
    xrun *r;
    int i, op;
    ck_grid g;
    int64_t next, end; /* this rank's chunks: [next, end) */
    int nt;
    ck_arena arena[MAXW];
    urun stk[MAXW][MAXSTACK];
    int nstk[MAXW];
} uctx;

static ck_code too_many(const uctx *u, int64_t len, ck_err *err)
{
    const ck_node *nd = &u->r->p->node[u->i];
    char lim[32];

    return ck_err_set(err, CK_ENOMEM,
                      "%s: the distinct values of '%s' (%" PRId64
                      " or more) do not fit in --memory %s (unique holds "
                      "them in memory, 16 bytes each while it runs)",
                      nd->where, ck_node_label(&u->r->p->node[u->op]), len,
                      ck_size_str((double)u->r->budget.limit, lim, sizeof lim));
}

static ck_code run_new(const uctx *u, int64_t len, urun *out, ck_err *err)
{
    size_t bytes = (size_t)len * 16;

    if (ck_budget_charge(&u->r->budget, (int64_t)bytes, "unique", NULL) !=
        CK_OK)
        return too_many(u, len, err);
    out->key = malloc(bytes ? bytes : 1);
    if (!out->key) {
        ck_budget_release(&u->r->budget, (int64_t)bytes);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    out->cnt = (int64_t *)(void *)(out->key + len);
    out->len = len;
    return CK_OK;
}

static void run_free(xrun *r, urun *x)
{
    if (x->key) {
        free(x->key);
        ck_budget_release(&r->budget, x->len * 16);
    }
    memset(x, 0, sizeof *x);
}

/* *a = the merge of *a and *b; both are freed. */
static ck_code run_merge(uctx *u, urun *a, urun *b, ck_err *err)
{
    int64_t i = 0, j = 0, n = 0;
    urun m;

    while (i < a->len && j < b->len) {
        uint64_t x = a->key[i], y = b->key[j];
        i += x <= y;
        j += y <= x;
        n++;
    }
    n += (a->len - i) + (b->len - j);
    CK_TRY(run_new(u, n, &m, err));
    i = j = n = 0;
    while (i < a->len || j < b->len) {
        if (j == b->len || (i < a->len && a->key[i] < b->key[j])) {
            m.key[n] = a->key[i];
            m.cnt[n++] = a->cnt[i++];
        } else if (i == a->len || b->key[j] < a->key[i]) {
            m.key[n] = b->key[j];
            m.cnt[n++] = b->cnt[j++];
        } else {
            m.key[n] = a->key[i];
            m.cnt[n++] = a->cnt[i++] + b->cnt[j++];
        }
    }
    run_free(u->r, a);
    run_free(u->r, b);
    *a = m;
    return CK_OK;
}

/* Pushes run x on worker w's stack, merging runs of like size. */
static ck_code run_push(uctx *u, int w, urun *x, ck_err *err)
{
    urun *s = u->stk[w];
    int *n = &u->nstk[w];

    s[(*n)++] = *x;
    memset(x, 0, sizeof *x);
    while (*n >= 2 && s[*n - 2].len <= 2 * s[*n - 1].len) {
        CK_TRY(run_merge(u, &s[*n - 2], &s[*n - 1], err));
        (*n)--;
    }
    return CK_OK;
}

static size_t unique_bytes(const xrun *r, int op, size_t n)
{
    return ck_exec_bytes(r, op, n, -1, 1) +
           ck_exec_al(n * ck_dtype_size(r->p->node[op].dtype)) +
           3 * ck_exec_al(n * 8) + ck_exec_al(HIST_BYTES);
}

static ck_code unique_worker(void *ctx, int w, ck_par *par, ck_err *err)
{
    uctx *u = ctx;
    const ck_node *m = &u->r->p->node[u->op];
    ck_arena *a = &u->arena[w];

    while (!ck_par_stopped(par)) {
        int64_t k = __atomic_fetch_add(&u->next, 1, __ATOMIC_RELAXED);
        ck_chunk c;
        urun x;
        if (k >= u->end)
            break;
        ck_grid_chunk(&u->g, k, &c);
        size_t n = (size_t)ck_chunk_nelem(&u->g, &c), len = 0;
        ck_arena_reset(a);
        void *vals = ck_arena_alloc(a, n * ck_dtype_size(m->dtype));
        uint64_t *key = ck_arena_alloc(a, n * 8);
        uint64_t *tmp = ck_arena_alloc(a, n * 8);
        int64_t *cnt = ck_arena_alloc(a, n * 8);
        size_t(*h)[256] = ck_arena_alloc(a, HIST_BYTES);
        if (!vals || !key || !tmp || !cnt || !h)
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(u->r, u->op, c.start, c.shape, vals, a, err));
        encode(m->dtype, vals, n, key);
        key = radix_sort(key, tmp, n, h);
        for (size_t j = 0; j < n; j++) {
            if (len && key[len - 1] == key[j]) {
                cnt[len - 1]++;
            } else {
                key[len] = key[j];
                cnt[len++] = 1;
            }
        }
        CK_TRY(run_new(u, (int64_t)len, &x, err));
        memcpy(x.key, key, len * 8);
        memcpy(x.cnt, cnt, len * 8);
        CK_TRY(run_push(u, w, &x, err));
    }
    return CK_OK;
}

/* The runs of all workers merged into u->stk[0][0]. */
static ck_code merge_all(uctx *u, urun *all, ck_err *err)
{
    int n = 0;

    for (int w = 0; w < u->nt; w++)
        for (int s = 0; s < u->nstk[w]; s++) {
            all[n++] = u->stk[w][s];
            memset(&u->stk[w][s], 0, sizeof(urun));
        }
    if (n == 0)
        return run_new(u, 0, &all[n++], err);
    while (n > 1) {
        int k = 0;
        for (int s = 0; s < n; s += 2) {
            urun t;
            if (s + 1 < n)
                CK_TRY(run_merge(u, &all[s], &all[s + 1], err));
            t = all[s];
            memset(&all[s], 0, sizeof(urun));
            all[k++] = t;
        }
        n = k;
    }
    return CK_OK;
}

/* Collective: every rank's run *x merged up a binary tree of ranks (rank
 * r + s sends to rank r), then rank 0's broadcast, so each rank ends with
 * the whole set.  The sender first asks whether the receiver could make
 * room: a receiver that could not (too many values for --memory) answers
 * no and goes on with what it has, so the exchange always completes and
 * the agreement after it reports the failure. */
static ck_code unique_over_ranks(uctx *u, urun *x, ck_code rc, ck_err *err)
{
    int rank = ck_comm_rank(), size = ck_comm_size();
    int64_t len;
    char ok;

    if ((rc = ck_comm_agree(rc, err)) != CK_OK)
        return rc;
    for (int step = 1; step < size; step *= 2) {
        if (rank % (2 * step) == step) {
            len = x->len;
            CK_TRY(ck_comm_send(&len, sizeof len, rank - step, U_TAG, err));
            CK_TRY(ck_comm_recv(&ok, 1, rank - step, U_TAG, err));
            if (ok)
                CK_TRY(ck_comm_send(x->key, (size_t)len * 16, rank - step,
                                    U_TAG, err));
            break;
        }
        if (rank + step < size) {
            urun y = {0};
            CK_TRY(ck_comm_recv(&len, sizeof len, rank + step, U_TAG, err));
            if (rc == CK_OK)
                rc = run_new(u, len, &y, err);
            ok = rc == CK_OK;
            CK_TRY(ck_comm_send(&ok, 1, rank + step, U_TAG, err));
            if (ok) {
                rc = ck_comm_recv(y.key, (size_t)len * 16, rank + step, U_TAG,
                                  err);
                if (rc != CK_OK) {
                    run_free(u->r, &y);
                    return rc;
                }
                rc = run_merge(u, x, &y, err);
            }
        }
    }
    if ((rc = ck_comm_agree(rc, err)) != CK_OK)
        return rc;
    len = x->len;
    CK_TRY(ck_comm_bcast(&len, sizeof len, 0, err));
    if (rank != 0) {
        run_free(u->r, x);
        rc = run_new(u, len, x, err);
    }
    if ((rc = ck_comm_agree(rc, err)) != CK_OK)
        return rc;
    return ck_comm_bcast(x->key, (size_t)len * 16, 0, err);
}

/* -0.0 and 0.0 are one value: their keys are neighbours. */
static void merge_zeros(urun *x)
{
    const uint64_t neg = key_of_f64(-0.0), pos = key_of_f64(0.0);

    for (int64_t j = 0; j + 1 < x->len; j++)
        if (x->key[j] == neg && x->key[j + 1] == pos) {
            x->cnt[j + 1] += x->cnt[j];
            memmove(&x->key[j], &x->key[j + 1],
                    (size_t)(x->len - j - 1) * sizeof(uint64_t));
            memmove(&x->cnt[j], &x->cnt[j + 1],
                    (size_t)(x->len - j - 1) * sizeof(int64_t));
            x->len--;
            return;
        }
}

static ck_code run_unique(xrun *r, int i, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    size_t esz = ck_dtype_size(nd->dtype);
    int part = -1;
    urun *all = NULL;
    uctx *u = calloc(1, sizeof *u);
    ck_code rc;

    for (int j = 0; j < r->p->n; j++)
        if (r->p->node[j].kind == CK_NODE_PART && r->p->node[j].arg[0] == i &&
            r->p->node[j].part == CK_PART_COUNTS)
            part = j;
    if (!u)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    u->r = r;
    u->i = i;
    u->op = nd->arg[0];
    rc = ck_grid_init(&u->g, m->ndim, m->shape, m->chunks,
                      ck_dtype_size(m->dtype), err);
    if (rc == CK_OK)
        ck_comm_split(u->g.total_chunks, ck_comm_rank(), ck_comm_size(),
                      &u->next, &u->end);
    if (rc == CK_OK)
        rc = reserve_workers(r, u->end - u->next,
                             unique_bytes(r, u->op, (size_t)u->g.chunk_nelem),
                             nd->name, u->arena, &u->nt, err);
    if (rc == CK_OK)
        rc = ck_par_run(u->nt, unique_worker, u, err);
    for (int w = 0; w < u->nt; w++)
        ck_arena_release(&u->arena[w]);
    if (rc == CK_OK && !(all = calloc((size_t)MAXW * MAXSTACK, sizeof *all)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    if (rc == CK_OK)
        rc = merge_all(u, all, err);
    if (ck_comm_size() > 1) {
        urun none = {0};
        rc = unique_over_ranks(u, all ? &all[0] : &none, rc, err);
        run_free(r, &none);
    }
    if (rc == CK_OK) {
        urun *x = &all[0];
        int64_t held = x->len * 16, len, *counts = NULL;
        if (ck_dtype_is_float(m->dtype))
            merge_zeros(x);
        len = x->len;
        /* the counts to a block of their own; the values over the keys */
        if (ck_budget_charge(&r->budget, len * 8, nd->name, NULL) != CK_OK)
            rc = too_many(u, len, err);
        else if (!(counts = malloc(len ? (size_t)len * 8 : 1))) {
            ck_budget_release(&r->budget, len * 8);
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        }
        if (rc == CK_OK) {
            memcpy(counts, x->cnt, (size_t)len * 8);
            decode(nd->dtype, x->key, (size_t)len, x->key);
            void *vals = realloc(x->key, len ? (size_t)len * esz : 1);
            r->x[i].mem = vals ? vals : x->key;
            ck_budget_release(&r->budget, held - len * (int64_t)esz);
            memset(x, 0, sizeof *x);
            if (part >= 0) {
                r->x[part].mem = counts;
                set_length(r, part, len);
            } else {
                free(counts);
                ck_budget_release(&r->budget, len * 8);
            }
            set_length(r, i, len);
        }
    }
    for (int w = 0; w < MAXW; w++)
        for (int s = 0; s < MAXSTACK; s++)
            run_free(r, &u->stk[w][s]);
    for (int s = 0; all && s < MAXW * MAXSTACK; s++)
        run_free(r, &all[s]);
    free(all);
    free(u);
    return rc;
}

/* ---- bincount ---- */

/* A box read ahead, held until its turn: values, then weights. */
typedef struct hbox {
    size_t n;
    int64_t lo, hi, bytes;
    int64_t *x;
    double *w;
} hbox;

typedef struct bctx {
    xrun *r;
    int i, op, w; /* w: the weights, or -1 */
    ck_grid g;
    int64_t first; /* this rank's boxes are [first, end) */
    int64_t next;  /* the next box to take */
    int64_t end;
    hbox **held;       /* [end - first], under mu: boxes read ahead */
    int64_t hold_left; /* bytes that more boxes may hold */
    int full;          /* no more boxes are read ahead */
    int64_t dropped;   /* held boxes freed for the bins' room */
    int nt;
    ck_arena arena[MAXW];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t turn; /* the box whose turn it is to be added */
    int stop;
    void *bins; /* int64 counts, or float64 sums with weights */
    int64_t len, cap;
} bctx;

static size_t bincount_bytes(const bctx *b, size_t n)
{
    const xrun *r = b->r;
    size_t s = ck_exec_bytes(r, b->op, n, -1, b->w < 0) +
               ck_exec_al(n * ck_dtype_size(r->p->node[b->op].dtype)) +
               ck_exec_al(n * 8);

    if (b->w >= 0)
        s += ck_exec_bytes(r, b->w, n, -1, 0) +
             ck_exec_al(n * ck_dtype_size(r->p->node[b->w].dtype)) +
             ck_exec_al(n * 8);
    return s;
}

/* n values of dtype t as int64 into x, with their least and largest;
 * 0 if an unsigned value is beyond int64 (*big). */
static int to_i64(ck_dtype t, const void *src, size_t n, int64_t *x,
                  int64_t *lo, int64_t *hi, uint64_t *big)
{
    if (t == CK_U64) {
        for (size_t j = 0; j < n; j++) {
            uint64_t v = ((const uint64_t *)src)[j];
            if (v > (uint64_t)INT64_MAX) {
                *big = v;
                return 0;
            }
            x[j] = (int64_t)v;
        }
    } else {
        ck_dtype_convert(CK_I64, x, t, src, n);
    }
    for (size_t j = 0; j < n; j++) {
        *lo = x[j] < *lo ? x[j] : *lo;
        *hi = x[j] > *hi ? x[j] : *hi;
    }
    return 1;
}

static void hbox_free(bctx *b, hbox *h)
{
    if (h) {
        ck_budget_release(&b->r->budget, h->bytes);
        free(h);
    }
}

/* Frees the last box still held (it is read again in its turn): when the
 * bins need its room.  0 when none is held.  Under mu, or with no worker
 * running. */
static int drop_last(bctx *b)
{
    for (int64_t k = b->end - b->first - 1; b->held && k >= 0; k--)
        if (b->held[k]) {
            hbox_free(b, b->held[k]);
            b->held[k] = NULL;
            b->dropped++;
            return 1;
        }
    return 0;
}

/* Charges n bytes of bins, making room by dropping held boxes, the last
 * ones first. */
static ck_code charge_bins(bctx *b, int64_t n)
{
    const char *what = b->r->p->node[b->i].name;

    while (ck_budget_charge(&b->r->budget, n, what, NULL) != CK_OK)
        if (!drop_last(b))
            return CK_ENOMEM;
    return CK_OK;
}

/* Grows the bins to hold index hi: the largest value seen, or the last
 * bin minlength asks for (by_minlength), as the refusal says. */
static ck_code grow_to(bctx *b, int64_t hi, int by_minlength, ck_err *err)
{
    const ck_node *nd = &b->r->p->node[b->i];
    /* (hi can be INT64_MAX: need is then past any budget, not hi + 1) */
    int64_t need = hi < INT64_MAX / 16 ? hi + 1 : INT64_MAX / 16 + 1;
    int64_t cap = b->cap + b->cap / 2;
    char lim[32];
    void *g;

    if (need <= b->cap) {
        b->len = need > b->len ? need : b->len;
        return CK_OK;
    }
    if (cap < need || cap > INT64_MAX / 16)
        cap = need;
    if (need > INT64_MAX / 16 || charge_bins(b, (cap - b->cap) * 8) != CK_OK) {
        cap = need;
        if (need > INT64_MAX / 16 ||
            charge_bins(b, (cap - b->cap) * 8) != CK_OK) {
            char why[CK_NAME_MAX + 64];
            if (by_minlength)
                snprintf(why, sizeof why, "minlength %" PRIu64,
                         (uint64_t)hi + 1);
            else
                snprintf(why, sizeof why,
                         "the largest value of '%s' is %" PRId64,
                         ck_node_label(&b->r->p->node[b->op]), hi);
            return ck_err_set(
                err, CK_ENOMEM,
                "%s: bincount needs %" PRIu64 " bins (%s), more than "
                "--memory %s holds (the bins are held in memory, 8 bytes "
                "each)",
                nd->where, (uint64_t)hi + 1, why,
                ck_size_str((double)b->r->budget.limit, lim, sizeof lim));
        }
    }
    if (!(g = realloc(b->bins, (size_t)cap * 8))) {
        ck_budget_release(&b->r->budget, (cap - b->cap) * 8);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    memset((char *)g + b->cap * 8, 0, (size_t)(cap - b->cap) * 8);
    b->bins = g;
    b->cap = cap;
    b->len = need;
    return CK_OK;
}

static ck_code grow(bctx *b, int64_t hi, ck_err *err)
{
    return grow_to(b, hi, 0, err);
}

/* Adds box k's values (x, and weights wv or NULL) to the bins: called in
 * box order, under the lock. */
static ck_code add_box(bctx *b, const int64_t *x, const double *wv, size_t n,
                       int64_t lo, int64_t hi, ck_err *err)
{
    const ck_node *nd = &b->r->p->node[b->i];

    if (n == 0)
        return CK_OK;
    if (lo < 0)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: '%s' holds the negative value %" PRId64
                          "; bincount counts non-negative integers only",
                          nd->where, ck_node_label(&b->r->p->node[b->op]), lo);
    CK_TRY(grow(b, hi, err));
    if (wv) {
        double *bins = b->bins;
        for (size_t j = 0; j < n; j++)
            bins[x[j]] += wv[j];
    } else {
        int64_t *bins = b->bins;
        for (size_t j = 0; j < n; j++)
            bins[x[j]]++;
    }
    return CK_OK;
}

/* Reads box k into int64 values (and float64 weights). */
static ck_code read_box(bctx *b, ck_arena *a, const ck_chunk *c, size_t n,
                        int64_t **xo, double **wo, int64_t *lo, int64_t *hi,
                        ck_err *err)
{
    const ck_node *nd = &b->r->p->node[b->i];
    const ck_node *m = &b->r->p->node[b->op];
    void *vals = ck_arena_alloc(a, n * ck_dtype_size(m->dtype));
    int64_t *x = ck_arena_alloc(a, n * 8);
    uint64_t big = 0;

    if (!vals || !x)
        return ck_exec_no_room(err);
    CK_TRY(ck_exec_eval(b->r, b->op, c->start, c->shape, vals, a, err));
    if (!to_i64(m->dtype, vals, n, x, lo, hi, &big))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: '%s' holds %" PRIu64 ", too large a value to "
                          "count (bincount makes a bin for each value up to "
                          "the largest)",
                          nd->where, ck_node_label(m), big);
    *xo = x;
    *wo = NULL;
    if (b->w >= 0) {
        const ck_node *wn = &b->r->p->node[b->w];
        void *wr = ck_arena_alloc(a, n * ck_dtype_size(wn->dtype));
        double *wv = ck_arena_alloc(a, n * 8);
        if (!wr || !wv)
            return ck_exec_no_room(err);
        CK_TRY(ck_exec_eval(b->r, b->w, c->start, c->shape, wr, a, err));
        ck_dtype_convert(CK_F64, wv, wn->dtype, wr, n);
        *wo = wv;
    }
    return CK_OK;
}

static ck_code bincount_worker(void *ctx, int w, ck_par *par, ck_err *err)
{
    bctx *b = ctx;
    ck_arena *a = &b->arena[w];

    while (!ck_par_stopped(par)) {
        int64_t k = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
        int64_t lo = INT64_MAX, hi = -1, *x = NULL;
        double *wv = NULL;
        int stopped = 0;
        hbox *h = NULL;
        ck_chunk c;
        ck_code rc = CK_OK;
        if (k >= b->end)
            break;
        ck_grid_chunk(&b->g, k, &c);
        size_t n = (size_t)ck_chunk_nelem(&b->g, &c);
        if (b->held) {
            pthread_mutex_lock(&b->mu);
            h = b->held[k - b->first];
            b->held[k - b->first] = NULL;
            pthread_mutex_unlock(&b->mu);
        }
        if (h) {
            x = h->x, wv = h->w, lo = h->lo, hi = h->hi;
        } else {
            ck_arena_reset(a);
            rc = read_box(b, a, &c, n, &x, &wv, &lo, &hi, err);
        }
        pthread_mutex_lock(&b->mu);
        while (rc == CK_OK && b->turn != k && !b->stop)
            pthread_cond_wait(&b->cv, &b->mu);
        stopped = rc == CK_OK && b->stop;
        if (rc == CK_OK && !stopped)
            rc = add_box(b, x, wv, n, lo, hi, err);
        if (rc != CK_OK)
            b->stop = 1;
        else if (!stopped)
            b->turn++;
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
        hbox_free(b, h);
        if (rc != CK_OK || stopped)
            return rc;
    }
    return CK_OK;
}

/* Reads this rank's boxes ahead of its turn and holds them, while
 * hold_left lasts; the first that does not fit ends the reading ahead
 * (it and the rest are read in their turn). */
static ck_code hold_worker(void *ctx, int w, ck_par *par, ck_err *err)
{
    bctx *b = ctx;
    ck_arena *a = &b->arena[w];
    const char *what = b->r->p->node[b->i].name;

    while (!ck_par_stopped(par) &&
           !__atomic_load_n(&b->full, __ATOMIC_RELAXED)) {
        int64_t k = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
        int64_t lo = INT64_MAX, hi = -1, *x = NULL, bytes;
        double *wv = NULL;
        hbox *h;
        ck_chunk c;
        if (k >= b->end)
            break;
        ck_grid_chunk(&b->g, k, &c);
        size_t n = (size_t)ck_chunk_nelem(&b->g, &c);
        bytes = (int64_t)(sizeof *h + n * 16);
        if (__atomic_sub_fetch(&b->hold_left, bytes, __ATOMIC_RELAXED) < 0 ||
            ck_budget_charge(&b->r->budget, bytes, what, NULL) != CK_OK) {
            __atomic_store_n(&b->full, 1, __ATOMIC_RELAXED);
            break;
        }
        if (!(h = malloc((size_t)bytes))) {
            ck_budget_release(&b->r->budget, bytes);
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        }
        h->bytes = bytes;
        ck_arena_reset(a);
        ck_code rc = read_box(b, a, &c, n, &x, &wv, &lo, &hi, err);
        if (rc != CK_OK) {
            hbox_free(b, h);
            return rc;
        }
        h->n = n, h->lo = lo, h->hi = hi;
        h->x = (int64_t *)(h + 1);
        h->w = (double *)(h->x + n);
        memcpy(h->x, x, n * 8);
        memcpy(h->w, wv, n * 8);
        pthread_mutex_lock(&b->mu);
        b->held[k - b->first] = h;
        pthread_mutex_unlock(&b->mu);
    }
    return CK_OK;
}

/* Collective, for --verbose: each rank's boxes, those it read ahead of its
 * turn, and those it dropped again to make room for the bins. */
static ck_code log_turns(bctx *b, int64_t own, int64_t ahead, ck_err *err)
{
    int size = ck_comm_size();
    int64_t mine[3] = {own, ahead, b->dropped}, *all;
    char line[3][160];
    ck_code rc;

    if (!(all = malloc(sizeof mine * (size_t)size)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    rc = ck_comm_allgather(mine, sizeof mine, all, err);
    for (int k = 0; rc == CK_OK && k < 3; k++) {
        size_t at = 0;
        line[k][0] = 0;
        for (int q = 0; q < size && q < 16; q++)
            at += (size_t)snprintf(line[k] + at, sizeof line[k] - at,
                                   "%s%" PRId64, q ? "/" : "", all[3 * q + k]);
        if (size > 16)
            snprintf(line[k] + at, sizeof line[k] - at, "/...");
    }
    if (rc == CK_OK)
        ck_log(CK_LOG_DEBUG,
               "%s: %d ranks added in turn: boxes %s, read ahead of their "
               "turn %s, dropped again for the bins' room %s",
               b->r->p->node[b->i].where, size, line[0], line[1], line[2]);
    free(all);
    return rc;
}

/* Collective, for a weighted bincount: the ranks add in turn (the file's
 * comment), rank s's bins passed to rank s + 1, the last rank's to all.
 * Every step is agreed first, so a failure anywhere ends every rank's
 * turn-taking at the same step. */
static ck_code bincount_in_turn(bctx *b, ck_err *err)
{
    int me = ck_comm_rank(), size = ck_comm_size();
    int64_t own = b->end - b->first, ahead = 0;
    int64_t list = own * (int64_t)sizeof *b->held;
    ck_code rc = CK_OK;

    if (own > 0 &&
        (rc = ck_budget_charge(&b->r->budget, list, b->r->p->node[b->i].name,
                               err)) == CK_OK &&
        !(b->held = calloc((size_t)own, sizeof *b->held))) {
        ck_budget_release(&b->r->budget, list);
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    if (rc == CK_OK && me > 0 && own > 0) {
        b->hold_left = (b->r->budget.limit - b->r->budget.used) / 2;
        rc = ck_par_run(b->nt, hold_worker, b, err);
        for (int64_t k = 0; k < own; k++)
            ahead += b->held[k] != NULL;
        b->next = b->first;
    }
    for (int s = 0; s < size; s++) {
        int64_t len;
        int last = s == size - 1;
        if (s == me && rc == CK_OK && own > 0)
            rc = ck_par_run(b->nt, bincount_worker, b, err);
        if ((rc = ck_comm_agree(rc, err)) != CK_OK)
            break;
        /* the bins to rank s + 1 (after the last: to all), room first */
        len = b->len;
        if ((rc = ck_comm_bcast(&len, sizeof len, s, err)) != CK_OK)
            break;
        if ((last ? me != s : me == s + 1) && len > 0)
            rc = grow(b, len - 1, err);
        if ((rc = ck_comm_agree(rc, err)) != CK_OK)
            break;
        if (len == 0)
            continue;
        if (last)
            rc = ck_comm_bcast(b->bins, (size_t)len * 8, s, err);
        else if (me == s)
            rc = ck_comm_send(b->bins, (size_t)len * 8, s + 1, BW_TAG, err);
        else if (me == s + 1)
            rc = ck_comm_recv(b->bins, (size_t)len * 8, s, BW_TAG, err);
        if (rc != CK_OK)
            break;
    }
    for (int64_t k = 0; k < own && b->held; k++)
        hbox_free(b, b->held[k]); /* none left unless it failed */
    if (b->held)
        ck_budget_release(&b->r->budget, list);
    free(b->held);
    b->held = NULL;
    if (rc == CK_OK && ck_log_get_level() >= CK_LOG_DEBUG)
        rc = log_turns(b, own, ahead, err);
    return rc;
}

/* Collective: every rank's counts, grown to the longest, summed over the
 * ranks. */
static ck_code bincount_over_ranks(bctx *b, ck_code rc, ck_err *err)
{
    int size = ck_comm_size();
    int64_t *lens = NULL, most = 0;

    if (rc == CK_OK && !(lens = malloc(sizeof *lens * (size_t)size)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    if ((rc = ck_comm_agree(rc, err)) == CK_OK)
        rc = ck_comm_allgather(&b->len, sizeof b->len, lens, err);
    for (int k = 0; rc == CK_OK && k < size; k++)
        most = lens[k] > most ? lens[k] : most;
    free(lens);
    if (rc != CK_OK)
        return rc;
    if (most > 0)
        rc = grow(b, most - 1, err);
    return ck_tree_sum_u64(b->bins, most, &b->r->budget, rc, err);
}

void ck_count_boxes(const ck_node *m, int weighted, int64_t *ch)
{
    size_t esz = ck_dtype_size(m->dtype);

    memcpy(ch, m->chunks, sizeof(int64_t) * CK_MAX_DIMS);
    if (weighted && m->ndim > 1) {
        int64_t bytes = (int64_t)esz;
        for (int d = 0; d < m->ndim; d++)
            bytes *= m->chunks[d] < m->shape[d] ? m->chunks[d] : m->shape[d];
        ck_auto_chunks(m->ndim, m->shape, esz,
                       (size_t)(bytes > (1 << 20) ? bytes : 1 << 20), ch);
    }
}

static ck_code run_bincount(xrun *r, int i, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *m = &r->p->node[nd->arg[0]];
    bctx *b = calloc(1, sizeof *b);
    int64_t ch[CK_MAX_DIMS];
    size_t esz = ck_dtype_size(m->dtype);
    ck_code rc;

    if (!b)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    b->r = r;
    b->i = i;
    b->op = nd->arg[0];
    b->w = nd->weights;
    ck_count_boxes(m, b->w >= 0, ch);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    rc = ck_grid_init(&b->g, m->ndim, m->shape, ch, esz, err);
    /* each rank its own range of boxes */
    ck_comm_split(rc == CK_OK ? b->g.total_chunks : 0, ck_comm_rank(),
                  ck_comm_size(), &b->first, &b->end);
    b->next = b->turn = b->first;
    if (rc == CK_OK)
        rc = reserve_workers(r, b->end - b->next,
                             bincount_bytes(b, (size_t)b->g.chunk_nelem),
                             nd->name, b->arena, &b->nt, err);
    if (b->w >= 0 && ck_comm_size() > 1) {
        if ((rc = ck_comm_agree(rc, err)) == CK_OK)
            rc = bincount_in_turn(b, err);
    } else if (rc == CK_OK) {
        rc = ck_par_run(b->nt, bincount_worker, b, err);
    }
    for (int w = 0; w < b->nt; w++)
        ck_arena_release(&b->arena[w]);
    if (b->w < 0 && ck_comm_size() > 1)
        rc = bincount_over_ranks(b, rc, err);
    /* minlength, and the bins cut to their length */
    if (rc == CK_OK && nd->minlength > b->len)
        rc = grow_to(b, nd->minlength - 1, 1, err);
    if (rc == CK_OK) {
        void *g = b->len ? realloc(b->bins, (size_t)b->len * 8) : NULL;
        if (b->len && g)
            b->bins = g;
        if (!b->len) {
            free(b->bins);
            b->bins = malloc(1);
        }
        ck_budget_release(&r->budget, (b->cap - b->len) * 8);
        b->cap = b->len;
        if (!b->bins)
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    if (rc == CK_OK) {
        r->x[i].mem = b->bins;
        set_length(r, i, b->len);
    } else {
        free(b->bins);
        ck_budget_release(&r->budget, b->cap * 8);
    }
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
    return rc;
}

ck_code ck_exec_run_count(xrun *r, int i, ck_err *err)
{
    return r->p->node[i].sub == CK_COUNT_UNIQUE ? run_unique(r, i, err)
                                                : run_bincount(r, i, err);
}
