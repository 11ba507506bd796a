/*
 * pipelines/linalg.c - the executor's linear algebra and models: matmul
 * boxes, the out-of-core SVD (exact TSQR and randomized), glm_fit and
 * glm_predict.  The arithmetic on blocks is ops/linalg.h's and ops/glm.h's;
 * what is here is how the data streams: row blocks of an operand are read
 * (decoded in parallel) by a reader thread while the calling thread
 * computes on the previous block with BLAS on every core.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_comm.h"
#include "base/ck_log.h"
#include "base/ck_thread.h"
#include "base/ck_tree.h"
#include "ops/glm.h"
#include "ops/linalg.h"
#include "pipelines/devla.h"
#include "pipelines/exec_impl.h"
#include "pipelines/gen.h"
#include "pipelines/rowtasks.h"

#define al ck_exec_al
#define nelem ck_exec_nelem
#define no_room ck_exec_no_room
#define eval ck_exec_eval
#define eval_bytes ck_exec_eval_bytes

/* Index of the first of x[0..n) that is inf or nan, or -1.  A block of 64
 * is judged by summing x * 0 in 8 independent lanes (0 for finite
 * values, nan otherwise), which the compiler keeps in vector registers:
 * ~4x faster than isfinite on each value. */
static int64_t first_nonfinite(const double *x, int64_t n)
{
    int64_t i = 0;

    for (; i + 64 <= n; i += 64) {
        double acc[8] = {0};
        for (int k = 0; k < 64; k += 8)
            for (int l = 0; l < 8; l++)
                acc[l] += x[i + k + l] * 0.0;
        double s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                   ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        if (s != 0 || s != s)
            break;
    }
    for (; i < n; i++)
        if (!isfinite(x[i]))
            return i;
    return -1;
}

/* CK_EFORMAT: A's singular values are beyond the largest double (values
 * near 1e308: the largest singular value is at least the largest |value|
 * and at most sqrt(m n) times it); NumPy gives inf for them, LAPACK's
 * bidiagonal SVD fails on their R. */
static ck_code svd_overflows(const xrun *r, const ck_node *nd, ck_err *err)
{
    const ck_node *an = &r->p->node[nd->arg[0]];
    while (an->kind == CK_NODE_CF)
        an = &r->p->node[an->arg[0]];
    return ck_err_set(err, CK_EFORMAT,
                      "%s: its singular values overflow the doubles (values "
                      "near 1e308): scale it down first",
                      ck_node_label(an));
}

/* CK_EFORMAT (bad data: exit 1) when rows [lo, lo + h) of L (row-major, n
 * columns; L = A or A^T) hold a NaN or an infinity, naming its place in A (the
 * input's file and dataset, or the step that makes A): an SVD of them is
 * undefined (NumPy's raises LinAlgError). */
static ck_code svd_finite(const xrun *r, const ck_node *nd, int transpose,
                          const double *x, int64_t lo, int64_t h, int64_t n,
                          ck_err *err)
{
    int64_t at = first_nonfinite(x, h * n);

    if (at < 0)
        return CK_OK;
    const ck_node *an = &r->p->node[nd->arg[0]];
    while (an->kind == CK_NODE_CF)
        an = &r->p->node[an->arg[0]];
    int64_t i = lo + at / n, j = at % n;
    return ck_err_set(err, CK_EFORMAT,
                      "%s[%lld, %lld] is %g: the SVD needs finite values",
                      ck_node_label(an), (long long)(transpose ? j : i),
                      (long long)(transpose ? i : j), x[at]);
}

/* matmul's k blocking: gemm runs at full speed from k = 256 or so, and
 * small k blocks keep the operand boxes small next to the result tile. */
enum { MM_KB = 512 };

static size_t factor_bytes(const xrun *r, const ck_node *s, int tall,
                           int64_t lines);

/* GLM tasks (at most CK_GLM_SLICE rows each) summed at once. */
enum { GLM_GROUP = 8 };

/* Rows of the sample that starts newton and lbfgs on data read from disk
 * (glm_sample_start): 50000 rows put the start ~5e-3 from the optimum (in
 * the gradient's largest entry) on 1e6 x 100 logistic data, where a fit
 * from 0 begins ~1e-1 away; newton then takes 3 steps instead of 5. */
enum { GLM_SAMPLE = 50000 };

/* U's chunks (ck_exec_run_svd): cut to no fewer rows than U_MIN_ROWS so
 * that every worker can write one, and to no more than U_MAX_BYTES. */
enum { U_MIN_ROWS = 4096, U_MAX_BYTES = 16 << 20 };
/* Most lines of a streamed svd factor made by one gemm (factor_group). */
enum { FACTOR_GROUP = 256 };

/* A pass's row blocks (rows_init): about this many bytes each. */
#define BLOCK_BYTES ((int64_t)64 << 20)

#define GLM_SLICE CK_GLM_SLICE
#define RS_PANEL CK_RS_PANEL

/* ---- row tasks (pipelines/rowtasks.h) ---- */

typedef ck_rowtasks rtasks;
#define rtask_rows ck_rowtask_rows
#define rtasks_of ck_rowtasks_of

static void rtasks_mine(const rtasks *k, int64_t *t0, int64_t *t1)
{
    rtasks_of(k, ck_comm_rank(), ck_comm_size(), t0, t1);
}

/* Collective: y (m x l, row-major) on every rank gets each rank's rows,
 * those of its tasks, from that rank. */
static ck_code share_rows(const rtasks *k, double *y, int64_t l, ck_err *err)
{
    int size = ck_comm_size();

    for (int q = 0; q < size && size > 1; q++) {
        int64_t t0, t1, lo, hi, x;
        rtasks_of(k, q, size, &t0, &t1);
        if (t1 <= t0)
            continue;
        rtask_rows(k, t0, &lo, &x);
        rtask_rows(k, t1 - 1, &x, &hi);
        CK_TRY(ck_comm_bcast(y + lo * l, (size_t)((hi - lo) * l) * 8, q, err));
    }
    return CK_OK;
}

/* The tree's part combination for parts that are sums of doubles:
 * left += right, *(int64_t *)ctx doubles. */
static void sum_merge(void *left, const void *right, void *ctx)
{
    double *l = left;
    const double *rt = right;
    int64_t n = *(const int64_t *)ctx;

    for (int64_t i = 0; i < n; i++)
        l[i] += rt[i];
}

/* ---- row blocks ----
 * A pass walks this rank's tasks of L, which is a 2-D node A or its
 * transpose, in blocks of whole tasks (at most nr rows), as float64
 * row-major; with a 1-D node y beside it (rows of y match rows of L).
 * Blocks come in order to fn on the calling thread, with their tasks;
 * the next block is read meanwhile. */

typedef ck_code (*block_fn)(void *ctx, int64_t r0, int64_t nr, int64_t ta,
                            int64_t tb, const double *blk, const double *y,
                            ck_err *err);

typedef struct rows {
    xrun *r;
    int a, y;       /* nodes; y -1 for none */
    int transpose;  /* L = A^T */
    int64_t m, n;   /* L's shape */
    rtasks tk;      /* L's tasks */
    int64_t t0, t1; /* the tasks this pass reads (this rank's) */
    int64_t lo, hi; /* and their rows */
    int64_t tpb;    /* tasks per block */
    int64_t nr;     /* rows per block, at most */
    int64_t unit;   /* A's chunk extent along L's rows */
    int64_t sub;    /* A rows per read task */
    int nbuf;       /* 2: the next block is read while one is computed */
    int threads;
    /* blocks are A's chunks seen in place (ck_array_view_chunk), one per
     * slot, instead of copies: A is an input of float64 chunks that span
     * its rows whole, stored raw */
    int view;
    ck_chunk_view vw[2];
    ck_arena arena[64];
    size_t arena_bytes;
    /* the block buffers, kept across passes: memory freed to the system
     * and touched again costs page faults on every pass */
    double *blk[2], *yv[2];
    int64_t charged;
} rows;

static int64_t rows_nblocks(const rows *w)
{
    return (w->t1 - w->t0 + w->tpb - 1) / w->tpb;
}

/* Block b's rows [*r0, *r0 + *nr) and tasks [*ta, *tb). */
static void rows_block(const rows *w, int64_t b, int64_t *r0, int64_t *nr,
                       int64_t *ta, int64_t *tb)
{
    int64_t lo, hi;

    *ta = w->t0 + b * w->tpb;
    *tb = *ta + w->tpb < w->t1 ? *ta + w->tpb : w->t1;
    rtask_rows(&w->tk, *ta, r0, &hi);
    rtask_rows(&w->tk, *tb - 1, &lo, &hi);
    *nr = hi - *r0;
}

/* One read task: a piece of block b, evaluated and placed as float64. */
typedef struct fill {
    rows *w;
    int64_t r0, nr; /* the block's L rows */
    double *blk, *y;
    int64_t ntasks, next;
} fill;

static ck_code fill_task(fill *f, int64_t t, ck_arena *a, ck_err *err)
{
    rows *w = f->w;
    const ck_node *an = &w->r->p->node[w->a];
    int64_t st[2], sh[2];
    void *tmp;

    if (t == f->ntasks - 1 && w->y >= 0) {
        const ck_node *yn = &w->r->p->node[w->y];
        int64_t ys = f->r0, yh = f->nr;
        if (!(tmp = ck_arena_alloc(a, (size_t)yh * ck_dtype_size(yn->dtype))))
            return no_room(err);
        CK_TRY(eval(w->r, w->y, &ys, &yh, tmp, a, err));
        ck_dtype_convert(CK_F64, f->y, yn->dtype, tmp, (size_t)yh);
        return CK_OK;
    }
    if (!w->transpose) {
        /* rows r0 + t*sub .. of A, whole: float64 lands in place */
        st[0] = f->r0 + t * w->sub;
        sh[0] = f->nr - t * w->sub < w->sub ? f->nr - t * w->sub : w->sub;
        st[1] = 0;
        sh[1] = w->n;
        double *to = f->blk + (size_t)(st[0] - f->r0) * (size_t)w->n;
        if (an->dtype == CK_F64)
            return eval(w->r, w->a, st, sh, to, a, err);
        if (!(tmp = ck_arena_alloc(a, (size_t)(sh[0] * sh[1]) *
                                          ck_dtype_size(an->dtype))))
            return no_room(err);
        CK_TRY(eval(w->r, w->a, st, sh, tmp, a, err));
        ck_dtype_convert(CK_F64, to, an->dtype, tmp, (size_t)(sh[0] * sh[1]));
        return CK_OK;
    }
    /* L rows r0.. are A columns r0..: read A rows t*sub.. of those
     * columns and place them transposed */
    st[0] = t * w->sub;
    sh[0] = w->n - st[0] < w->sub ? w->n - st[0] : w->sub;
    st[1] = f->r0;
    sh[1] = f->nr;
    size_t cnt = (size_t)(sh[0] * sh[1]);
    double *d = ck_arena_alloc(a, cnt * 8);
    if (!d || !(tmp = ck_arena_alloc(a, cnt * ck_dtype_size(an->dtype))))
        return no_room(err);
    CK_TRY(eval(w->r, w->a, st, sh, tmp, a, err));
    ck_dtype_convert(CK_F64, d, an->dtype, tmp, cnt);
    for (int64_t i = 0; i < sh[0]; i++)
        for (int64_t j = 0; j < sh[1]; j++)
            f->blk[j * w->n + st[0] + i] = d[i * sh[1] + j];
    return CK_OK;
}

static ck_code fill_worker(void *ctx, int id, ck_par *par, ck_err *err)
{
    fill *f = ctx;
    ck_code rc = CK_OK;

    while (rc == CK_OK && !ck_par_stopped(par)) {
        int64_t t = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED);
        if (t >= f->ntasks)
            break;
        ck_arena_reset(&f->w->arena[id]);
        rc = fill_task(f, t, &f->w->arena[id], err);
    }
    return rc;
}

/* Block b into slot s: *blk is set to the block's rows, a view of A's
 * chunk where w->view and the chunk can be seen in place, else the slot's
 * buffer, filled. */
static ck_code rows_fill(rows *w, int64_t b, int s, const double **blk,
                         ck_err *err)
{
    fill f = {0};
    size_t bb = (size_t)(w->nr * w->n) * 8;
    int64_t ta, tb;

    f.w = w;
    rows_block(w, b, &f.r0, &f.nr, &ta, &tb);
    f.y = w->yv[s];
    ck_chunk_view_release(&w->vw[s]);
    if (w->view &&
        ck_array_view_chunk(w->r->x[w->a].arr, (int64_t[2]){f.r0 / w->unit, 0},
                            &w->vw[s])) {
        /* only y (if any) is left to read */
        *blk = w->vw[s].data;
        f.ntasks = w->y >= 0 ? 1 : 0;
        return f.ntasks ? ck_par_run(1, fill_worker, &f, err) : CK_OK;
    }
    /* a chunk that cannot be seen in place is read: the slot's buffer,
     * charged with the pass, is made on first use */
    if (!w->blk[s] && !(w->blk[s] = ck_alloc_large(bb)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    f.blk = w->blk[s];
    *blk = f.blk;
    f.ntasks = ((w->transpose ? w->n : f.nr) + w->sub - 1) / w->sub +
               (w->y >= 0 ? 1 : 0);
    return ck_par_run(w->threads < f.ntasks ? w->threads : (int)f.ntasks,
                      fill_worker, &f, err);
}

/* Arena bytes of one reader for blocks of nr rows. */
static size_t rows_arena(const rows *w, int64_t nr)
{
    const xrun *r = w->r;
    const ck_node *an = &r->p->node[w->a];
    size_t esz = ck_dtype_size(an->dtype), b;

    if (!w->transpose) {
        int64_t sub = nr < w->unit ? nr : w->unit;
        size_t task = (size_t)(sub * w->n);
        /* A task of whole chunks of an input, all columns in one chunk,
         * in float64, is read in place: no chunk buffer. */
        int whole = an->kind == CK_NODE_INPUT && an->dtype == CK_F64 &&
                    an->chunks[1] >= w->n && nr % w->unit == 0 &&
                    w->m % w->unit == 0;
        b = whole ? ck_array_scratch_bytes(r->x[w->a].arr) + 256
                  : eval_bytes(r, w->a, task);
        if (an->dtype != CK_F64)
            b += al(task * esz);
    } else {
        size_t task = (size_t)(w->sub * nr);
        b = eval_bytes(r, w->a, task) + al(task * esz) + al(task * 8);
    }
    if (w->y >= 0) {
        const ck_node *yn = &r->p->node[w->y];
        size_t yb = al((size_t)nr * ck_dtype_size(yn->dtype)) +
                    eval_bytes(r, w->y, (size_t)nr) + 256;
        if (yb > b)
            b = yb;
    }
    return b + 256;
}

/* Bytes a pass with blocks of nr rows holds: its block buffers, the
 * readers' arenas, and per_row bytes for each row of a block that the
 * caller keeps beside them. */
static int64_t rows_need(const rows *w, int nbuf, int threads, int64_t nr,
                         int64_t per_row)
{
    int64_t row = w->n * 8 + (w->y >= 0 ? 8 : 0);
    return nbuf * nr * row + nr * per_row +
           threads * (int64_t)rows_arena(w, nr);
}

/* Sizes a pass over this rank's tasks of node a (transposed or not; with
 * y, or -1), its tasks tk (rowtasks.h), to what is left of the
 * budget after 'fixed' bytes, the caller keeping per_row bytes for each
 * row of a block.  A block holds at least one task.  Prefers blocks of
 * whole chunks, read by several readers while the previous block is
 * computed on; falls back to one buffer, one reader, and blocks smaller
 * than a chunk.  Reserves the readers' arenas. */
static ck_code rows_init(rows *w, xrun *r, int a, int transpose, int y,
                         const rtasks *tk, int64_t per_row, int64_t fixed,
                         const char *what, ck_err *err)
{
    const ck_node *an = &r->p->node[a];
    int64_t left = r->budget.limit - r->budget.used - fixed;
    int tmax = r->o->threads > 0 ? r->o->threads : ck_ncpus();
    int64_t minrows, maxrows, span, cap;
    ck_code rc = CK_OK;

    memset(w, 0, sizeof *w);
    w->r = r;
    w->a = a;
    w->y = y;
    w->transpose = transpose;
    w->m = transpose ? an->shape[1] : an->shape[0];
    w->n = transpose ? an->shape[0] : an->shape[1];
    w->unit =
        an->chunks[transpose ? 1 : 0] > 0 ? an->chunks[transpose ? 1 : 0] : 1;
    if (w->unit > w->m)
        w->unit = w->m > 0 ? w->m : 1;
    w->sub = transpose ? (an->chunks[0] > 0 ? an->chunks[0] : 1) : w->unit;
    w->tk = *tk;
    rtasks_mine(&w->tk, &w->t0, &w->t1);
    if (w->t1 > w->t0) {
        int64_t h;
        rtask_rows(&w->tk, w->t0, &w->lo, &h);
        rtask_rows(&w->tk, w->t1 - 1, &h, &w->hi);
    }
    span = maxrows = w->hi - w->lo > 0 ? w->hi - w->lo : 1;
    minrows = w->tk.sub < maxrows ? w->tk.sub : maxrows;
    if (tmax > 64)
        tmax = 64;
    /* Blocks of about BLOCK_BYTES, in whole chunks (at least one), with
     * four tasks for each thread at least: larger ones only cost memory
     * and page faults on first touch (a block of all of a rank's rows made
     * a compressed 1.6 GB input's SVD hold 1.6 GB, a third of its time in
     * the kernel), and leave no next block to read meanwhile. */
    cap = BLOCK_BYTES / (w->n * 8 + (w->y >= 0 ? 8 : 0));
    if (cap < 4 * tmax * w->tk.sub)
        cap = 4 * tmax * w->tk.sub;
    cap = (cap + w->unit - 1) / w->unit * w->unit;
    if (maxrows > cap)
        maxrows = cap;
    /* whole-chunk blocks, largest first; the next block read meanwhile
     * (by a thread of its own) only when --threads allows more than one */
    for (int nbuf = tmax > 1 ? 2 : 1; nbuf >= 1 && !w->nr; nbuf--)
        for (int t = tmax; t >= 1 && !w->nr; t--)
            for (int64_t k = maxrows / w->unit; k >= 1 && !w->nr; k--) {
                int64_t nr = k == maxrows / w->unit && maxrows == span
                                 ? span
                                 : k * w->unit;
                if (nr >= minrows &&
                    rows_need(w, nbuf, t, nr, per_row) <= left) {
                    w->nr = nr;
                    w->nbuf = nbuf;
                    w->threads = t;
                }
                if (k > 64) /* coarse steps for many chunks */
                    k -= k / 64;
            }
    /* else blocks smaller than a chunk, down to a task */
    for (int64_t nr = w->unit / 2; !w->nr && nr >= 1; nr /= 2) {
        if (nr < minrows)
            nr = minrows;
        if (rows_need(w, 1, 1, nr, per_row) <= left) {
            w->nr = nr;
            w->nbuf = 1;
            w->threads = 1;
        }
        if (nr == minrows)
            break;
    }
    if (!w->nr) {
        char have[32], need[32];
        return ck_err_set(
            err, CK_ENOMEM,
            "--memory %s is too small for %s: blocks of %lld rows of "
            "'%s' need %s (raise --memory)",
            ck_size_str((double)r->budget.limit, have, sizeof have), what,
            (long long)minrows, an->name,
            ck_need_str((double)(rows_need(w, 1, 1, minrows, per_row) + fixed +
                                 r->budget.used),
                        need, sizeof need));
    }
    if (!transpose && w->sub > w->nr)
        w->sub = w->nr;
    /* an input stored raw as float64 in chunks that span the columns is
     * seen in place, no copy, a chunk a block, where a group is a chunk, a
     * chunk fits, and a chunk holds a task for each thread or no two
     * chunks fit (a block's tasks are what the threads share; larger
     * blocks only cost memory otherwise; the probe maps chunk 0's first
     * bytes) */
    int nt = r->o->threads > 0 ? r->o->threads : ck_ncpus();
    if (!transpose && an->kind == CK_NODE_INPUT && an->dtype == CK_F64 &&
        w->tk.G == w->unit && (w->tk.q >= nt || w->nr < 2 * w->unit)) {
        const ck_grid *g = ck_array_grid(r->x[a].arr);
        ck_chunk_view probe = {0};
        if (ck_array_info_of(r->x[a].arr)->dtype == CK_F64 && g->ndim == 2 &&
            g->chunk[1] == w->n &&
            (g->chunk[0] == w->unit || g->chunk[0] >= w->m) &&
            w->nr >= w->unit &&
            ck_array_view_chunk_bytes(r->x[a].arr, (int64_t[2]){0, 0}, 0, 8,
                                      &probe)) {
            w->view = 1;
            w->nr = w->sub = w->unit;
            ck_chunk_view_release(&probe);
        }
    }
    /* whole groups a block where a group fits, else whole tasks */
    if (w->nr >= w->tk.G)
        w->tpb = w->tk.q * (w->nr / w->tk.G);
    else
        w->tpb = w->nr / w->tk.sub > 0 ? w->nr / w->tk.sub : 1;
    w->arena_bytes = rows_arena(w, w->nr);
    for (int t = 0; rc == CK_OK && t < w->threads; t++)
        rc = ck_arena_reserve(&w->arena[t], &r->budget, w->arena_bytes,
                              "reading row blocks", err);
    return rc;
}

static void rows_release(rows *w)
{
    for (int t = 0; t < 64; t++)
        ck_arena_release(&w->arena[t]);
    for (int s = 0; s < 2; s++) {
        ck_chunk_view_release(&w->vw[s]);
        free(w->blk[s]);
        free(w->yv[s]);
        w->blk[s] = w->yv[s] = NULL;
    }
    if (w->r)
        ck_budget_release(&w->r->budget, w->charged);
    w->charged = 0;
}

/* The reader thread of a pass and the consumer share two slots. */
typedef struct pass {
    rows *w;
    const double *blk[2]; /* the slots' blocks: views or buffers */
    int64_t nblocks;
    int full[2];
    int stop;
    ck_code rc;
    ck_err err;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} pass;

static void *reader(void *arg)
{
    pass *p = arg;

    for (int64_t b = 0; b < p->nblocks; b++) {
        int s = (int)(b & 1);
        pthread_mutex_lock(&p->mu);
        while (p->full[s] && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        ck_code rc = rows_fill(p->w, b, s, &p->blk[s], &p->err);
        pthread_mutex_lock(&p->mu);
        if (rc != CK_OK) {
            p->rc = rc;
            p->stop = 1;
        }
        p->full[s] = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (rc != CK_OK)
            break;
    }
    return NULL;
}

/* Runs fn over every block of w in order.  Two blocks' bytes are charged
 * to the budget for the duration, whether they are buffers or views
 * (mapped pages count as the process's memory too). */
static ck_code rows_run(rows *w, block_fn fn, void *ctx, ck_err *err)
{
    pass p;
    size_t bb = (size_t)(w->nr * w->n) * 8, yb = (size_t)w->nr * 8;
    int nb = rows_nblocks(w) > 1 ? w->nbuf : 1;
    pthread_t th;
    ck_code rc = CK_OK;

    memset(&p, 0, sizeof p);
    p.w = w;
    p.nblocks = rows_nblocks(w);
    if (!w->charged) {
        int64_t charge = (int64_t)(bb + (w->y >= 0 ? yb : 0)) * nb;
        CK_TRY(ck_budget_charge(&w->r->budget, charge, "row blocks", err));
        w->charged = charge;
        for (int s = 0; s < nb; s++) {
            if (!w->view && !(w->blk[s] = ck_alloc_large(bb)))
                return ck_err_set(err, CK_ENOMEM, "out of memory");
            if (w->y >= 0 && !(w->yv[s] = malloc(yb ? yb : 1)))
                return ck_err_set(err, CK_ENOMEM, "out of memory");
        }
    }
    /* the bar counts blocks; passes that follow one another (a solver's
     * iterations) add theirs as they start */
    ck_progress *bar = w->r->o->progress;
    if (bar)
        __atomic_add_fetch(&bar->total, p.nblocks, __ATOMIC_RELAXED);
    if (nb == 1) {
        /* one buffer: read, then compute */
        for (int64_t b = 0; rc == CK_OK && b < p.nblocks; b++) {
            int64_t r0, n, ta, tb;
            rows_block(w, b, &r0, &n, &ta, &tb);
            rc = rows_fill(w, b, 0, &p.blk[0], err);
            if (rc == CK_OK)
                rc = fn(ctx, r0, n, ta, tb, p.blk[0], w->yv[0], err);
            ck_progress_add(bar, n * w->n * 8);
        }
    } else {
        pthread_mutex_init(&p.mu, NULL);
        pthread_cond_init(&p.cv, NULL);
        if (pthread_create(&th, NULL, reader, &p) != 0) {
            rc = ck_err_set(err, CK_ENOMEM, "cannot start a reader thread");
        } else {
            for (int64_t b = 0; b < p.nblocks && rc == CK_OK; b++) {
                int s = (int)(b & 1);
                pthread_mutex_lock(&p.mu);
                while (!p.full[s] && !p.stop)
                    pthread_cond_wait(&p.cv, &p.mu);
                int ok = p.full[s] && p.rc == CK_OK;
                pthread_mutex_unlock(&p.mu);
                if (!ok)
                    break;
                int64_t r0, n, ta, tb;
                rows_block(w, b, &r0, &n, &ta, &tb);
                rc = fn(ctx, r0, n, ta, tb, p.blk[s], w->yv[s], err);
                ck_progress_add(bar, n * w->n * 8);
                pthread_mutex_lock(&p.mu);
                p.full[s] = 0;
                if (rc != CK_OK)
                    p.stop = 1;
                pthread_cond_broadcast(&p.cv);
                pthread_mutex_unlock(&p.mu);
            }
            pthread_mutex_lock(&p.mu);
            p.stop = 1;
            pthread_cond_broadcast(&p.cv);
            pthread_mutex_unlock(&p.mu);
            pthread_join(th, NULL);
            if (rc == CK_OK && p.rc != CK_OK) {
                rc = p.rc;
                *err = p.err;
            }
        }
        pthread_cond_destroy(&p.cv);
        pthread_mutex_destroy(&p.mu);
    }
    /* the views go with the pass: the page cache keeps the data */
    for (int s = 0; s < 2; s++)
        ck_chunk_view_release(&w->vw[s]);
    return rc;
}

/* ---- small dense helpers ---- */

/* ka, kb: the operands' keys (backends/backend.h, ck_be_key), or 0 */
static ck_code gemm(xrun *r, int ta, int tb, int64_t m, int64_t n, int64_t k,
                    const double *a, int64_t lda, const double *b, int64_t ldb,
                    double beta, double *c, int64_t ldc, uint64_t ka,
                    uint64_t kb, ck_err *err)
{
    ck_gemm_args g = {.dtype = CK_F64,
                      .trans_a = ta,
                      .trans_b = tb,
                      .m = m,
                      .n = n,
                      .k = k,
                      .alpha = 1,
                      .beta = beta,
                      .a = a,
                      .lda = lda,
                      .b = b,
                      .ldb = ldb,
                      .c = c,
                      .ldc = ldc,
                      .a_key = ka,
                      .b_key = kb};
    return ck_op_gemm(&r->be, &g, err);
}

/* Row-major x (m x n, m >= n) replaced by an orthonormal basis of its
 * columns (thin Q, row-major).  col: m*n doubles of scratch. */
static ck_code orth(xrun *r, double *x, int64_t m, int64_t n, double *col,
                    double *rr, ck_err *err)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            col[j * m + i] = x[i * n + j];
    ck_qr_args q = {
        .m = m, .n = n, .a = col, .lda = m, .r = rr, .ldr = n, .want_q = 1};
    CK_TRY(ck_op_qr(&r->be, &q, err));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            x[i * n + j] = col[j * m + i];
    return CK_OK;
}

static ck_code charge(xrun *r, int64_t bytes, const ck_node *nd,
                      const char *what, ck_err *err)
{
    char w[160];

    snprintf(w, sizeof w, "%s (%s)", nd->where, what);
    return ck_budget_charge(&r->budget, bytes, w, err);
}

/* ---- svd ---- */

/* A pass of tasks over the row blocks (the svd's TSQR, randomized and
 * Gram passes): a block's tasks [ta, tb), up to 'wave' at a time computed
 * side by side on the threads, each by fn into its own part of plen
 * doubles, then pushed into the tree in task order.  fn gets the task's
 * rows [lo, hi) of L at x (row-major). */
typedef ck_code (*task_fn)(void *ctx, int id, int64_t lo, int64_t hi,
                           const double *x, double *part, ck_err *err);

typedef struct tpass {
    task_fn fn;
    void *ctx;
    const rtasks *tk;
    ck_tree *tree;
    double *parts; /* wave x plen */
    int64_t plen;
    int64_t cols; /* L's columns */
    int wave;
    /* the block's */
    const double *blk;
    int64_t r0, ta, tn, next;
} tpass;

static ck_code tpass_worker(void *ctx, int id, ck_par *par, ck_err *err)
{
    tpass *v = ctx;

    while (!ck_par_stopped(par)) {
        int64_t k = __atomic_fetch_add(&v->next, 1, __ATOMIC_RELAXED), lo, hi;
        if (k >= v->tn)
            break;
        rtask_rows(v->tk, v->ta + k, &lo, &hi);
        CK_TRY(v->fn(v->ctx, id, lo, hi, v->blk + (lo - v->r0) * v->cols,
                     v->parts + k * v->plen, err));
    }
    return CK_OK;
}

static ck_code tpass_block(void *ctx, int64_t r0, int64_t nr, int64_t ta,
                           int64_t tb, const double *blk, const double *y,
                           ck_err *err)
{
    tpass *v = ctx;
    int wave = v->wave;

    (void)nr;
    (void)y;
    v->blk = blk;
    v->r0 = r0;
    for (v->ta = ta; v->ta < tb; v->ta += wave) {
        v->tn = tb - v->ta < wave ? tb - v->ta : wave;
        v->next = 0;
        CK_TRY(
            ck_par_run(v->tn < wave ? (int)v->tn : wave, tpass_worker, v, err));
        for (int64_t k = 0; k < v->tn; k++)
            CK_TRY(
                ck_tree_push(v->tree, v->ta + k, v->parts + k * v->plen, err));
    }
    return CK_OK;
}

/* Runs fn over w's tasks into tree; parts: room for wave x plen. */
static ck_code tpass_run(rows *w, task_fn fn, void *ctx, ck_tree *tree,
                         double *parts, int64_t plen, int wave, ck_err *err)
{
    tpass v = {.fn = fn,
               .ctx = ctx,
               .tk = &w->tk,
               .tree = tree,
               .parts = parts,
               .plen = plen,
               .cols = w->n,
               .wave = wave};

    return rows_run(w, tpass_block, &v, err);
}

/* Threads a pass's tasks run on: --threads, at most 64. */
static int pass_threads(const xrun *r)
{
    int t = r->o->threads > 0 ? r->o->threads : ck_ncpus();
    return t < 64 ? t : 64;
}

/* TSQR: each task's rows are factored by one QR into its R (n x n,
 * column-major, upper triangular), and two neighbours' R factors are
 * merged by the QR of the one stacked on the other (dtpqrt), along the
 * tree (tasks: ck_rowtasks_of_node).  A task with fewer than n rows is
 * factored below n rows of zeros.  For a wide array (L = A^T) a part
 * carries L's column sums too (for the signs). */

typedef struct tsqr {
    xrun *r;
    const ck_node *nd; /* the svd step */
    int64_t n, plen;   /* a part: R (n x n), then n column sums or none */
    int colsums;
    double *stack[64]; /* per thread: (max(task rows, 2n)) x n col-major */
    double *mstack;    /* a merge's: 2n x n */
    ck_code mrc;       /* the first merge that failed, and why */
    ck_err merr;
} tsqr;

/* Rows [top, top + h) of column-major st (leading dimension ld) <- the h
 * rows of row-major x (n columns), in 16 x 16 tiles: column by column
 * the reads stride through x a line each (19.5 ms for 2500 x 1000, 6.6
 * ms in tiles). */
static void rows_to_cols(double *st, int64_t ld, int64_t top, const double *x,
                         int64_t h, int64_t n)
{
    enum { T = 16 };

    for (int64_t i0 = 0; i0 < h; i0 += T) {
        int64_t ih = h - i0 < T ? h - i0 : T;
        for (int64_t j = 0; j < n; j++) {
            double *c = st + j * ld + top + i0;
            const double *s = x + i0 * n + j;
            for (int64_t i = 0; i < ih; i++)
                c[i] = s[i * n];
        }
    }
}

static ck_code tsqr_task(void *ctx, int id, int64_t lo, int64_t hi,
                         const double *x, double *part, ck_err *err)
{
    tsqr *t = ctx;
    int64_t n = t->n, h = hi - lo, top = h < n ? n : 0, ld = top + h;
    double *st = t->stack[id];

    CK_TRY(svd_finite(t->r, t->nd, t->colsums, x, lo, h, n, err));
    for (int64_t j = 0; j < n; j++)
        memset(st + j * ld, 0, (size_t)top * 8);
    rows_to_cols(st, ld, top, x, h, n);
    if (t->colsums) {
        double *cs = part + n * n;
        memset(cs, 0, (size_t)n * 8);
        for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < n; j++)
                cs[j] += x[i * n + j];
    }
    ck_qr_args q = {.m = ld, .n = n, .a = st, .lda = ld, .r = part, .ldr = n};
    return ck_op_qr(&t->r->be, &q, err);
}

static void tsqr_merge(void *left, const void *right, void *ctx)
{
    tsqr *t = ctx;
    int64_t n = t->n;
    double *l = left, *st = t->mstack;
    const double *rt = right;
    ck_err e = {0};

    for (int64_t j = 0; j < n; j++) {
        memcpy(st + j * 2 * n, l + j * n, (size_t)n * 8);
        memcpy(st + j * 2 * n + n, rt + j * n, (size_t)n * 8);
    }
    ck_qr_args q = {.m = 2 * n,
                    .n = n,
                    .a = st,
                    .lda = 2 * n,
                    .r = l,
                    .ldr = n,
                    .two_r = 1};
    ck_code rc = ck_op_qr(&t->r->be, &q, &e);
    if (rc != CK_OK && t->mrc == CK_OK) {
        t->mrc = rc;
        t->merr = e;
    }
    for (int64_t j = 0; t->colsums && j < n; j++)
        l[n * n + j] += rt[n * n + j];
}

/* Randomized passes: z = L^T (L p) over the tasks, and with y, L p kept
 * too (m x l).  p and z are held transposed (l x n), so both products
 * take the panel's rows along their long side (the small-matrix kernels
 * are fastest so).  A task's part is its rows' z^T, the panels' products
 * summed in order. */
typedef struct rpass {
    xrun *r;
    int node, pass; /* the svd step, the pass: the operands' keys */
    int transpose;  /* L = A^T */
    int64_t n, l;
    const double *pt; /* l x n */
    double *y;        /* m x l, or NULL */
    int64_t panel;    /* rows per product (rpass_panel) */
    double *yb;       /* per thread: panel x l scratch */
    /* Scaling of values far from 1 (svd_randomized): the first pass
     * notes each thread's largest |value| in amax; f (a power of two,
     * 1/that, or 1) scales p and each panel's y, so that y = L p f and
     * z = L^T y f stay near 1 instead of squaring the data's magnitude
     * (1e155 overflowed, 1e-200 underflowed to singular values of 0). */
    double *amax;
    double f;
} rpass;

static ck_code rpass_task(void *ctx, int id, int64_t lo, int64_t hi,
                          const double *x, double *part, ck_err *err)
{
    rpass *q = ctx;
    int64_t l = q->l, n = q->n;
    double *yt = q->yb + (size_t)id * q->panel * l; /* l x h */

    memset(part, 0, (size_t)(l * n) * 8);
    /* y_i^T = p^T L_i^T, then z^T += y_i^T L_i, a panel of rows at a time
     * so the panel is still in cache for the second product */
    for (int64_t i = lo; i < hi; i += q->panel) {
        int64_t h = hi - i < q->panel ? hi - i : q->panel;
        const double *li = x + (i - lo) * n;
        if (q->pass == 0) { /* the first pass sees every value */
            CK_TRY(svd_finite(q->r, &q->r->p->node[q->node], q->transpose, li,
                              i, h, n, err));
            double m = q->amax[id];
            for (int64_t t = 0; t < h * n; t++)
                m = fabs(li[t]) > m ? fabs(li[t]) : m;
            q->amax[id] = m;
        }
        /* a device may keep the panel for the next passes, and the
         * pass's p for the other panels */
        uint64_t kl = ck_be_key(q->node, 0, i, 0);
        CK_TRY(gemm(q->r, 0, 1, l, h, n, q->pt, n, li, n, 0, yt, h,
                    ck_be_key(q->node, 1, q->f != 1, q->pass), kl, err));
        for (int64_t t = 0; q->y && t < h; t++)
            for (int64_t j = 0; j < l; j++)
                q->y[(i + t) * l + j] = yt[j * h + t];
        for (int64_t t = 0; q->f != 1 && t < l * h; t++)
            yt[t] *= q->f;
        CK_TRY(gemm(q->r, 0, 0, l, n, h, yt, h, li, n, 1, part, n, 0, kl, err));
    }
    return CK_OK;
}

/* Rows per pair of products: on the CPU a panel that stays in cache
 * between them; where gemm runs on a device, a whole task, so that z's
 * part crosses the bus once a task, not once a panel. */
static int64_t rpass_panel(const xrun *r, const rtasks *tk)
{
    if (ck_be_gemm_on_device(&r->be))
        return tk->sub > RS_PANEL ? tk->sub : RS_PANEL;
    return RS_PANEL;
}

/* dask's convention: each row of Vt has a non-negative sum (a zero sum
 * keeps its sign); U's columns follow.  sums[j]: row j's sum. */
static void signs(const double *sums, int64_t k, double *sg)
{
    for (int64_t j = 0; j < k; j++)
        sg[j] = sums[j] < 0 ? -1.0 : 1.0;
}

/* ---- the streamed factor made orthonormal again ----
 * U = L W (W = V S^-1) has column j off by about eps * S[0] / S[j]: for a
 * rank-deficient or ill-conditioned L it is far from orthonormal, and a
 * column of S[j] = 0 is zero.  Where any S[j] < S[0] * SVD_ILL, columns
 * of S[j] <= max(m, n) * eps * S[0] (NumPy's matrix_rank tolerance) are
 * null: their W columns are dropped for random ones E, a function of
 * the line, the column and SVD_FILL_SEED alone, and all k columns of
 * Z = L W + E are made orthonormal by Cholesky QR twice (two passes over
 * L): U = Z T1 T2, T = L^-T of each pass's Gram matrix.  T is upper
 * triangular, so each column keeps the span of those before it: a good
 * column moves by its own error only, and the random ones become an
 * orthonormal completion, as LAPACK's are.
 *
 * Z's rounding is eps * S[0] / S[j] in column j, new each time Z is
 * computed another way: the second pass and the streamed factor make Z's
 * lines by z_lines, whose bits for a line do not depend on where it is
 * (a gemm's do), so that T2 is the one for the very Z T1 that U is made
 * from; the rest (Z T, small numbers) rounds to eps. */

/* eps * 1e4 = 2.2e-12: above it U is orthonormal to ~1e-12 as it is, and
 * nothing changes (no pass, the same bits). */
#define SVD_ILL 1e-4
#define SVD_FILL_SEED UINT64_C(0x5eed0f5d)
/* Rows of a Gram pass's products at a time. */
enum { GRAM_PANEL = 256 };

/* Upper triangular t (k x k, row-major) <- L^-T, where g = L L^T (g's
 * lower triangle read; g's lower triangle overwritten by L).  Plain C, so
 * that every rank and thread count gets the same bits.  -1 where g is
 * not numerically positive definite. */
static int chol_inv(double *g, int64_t k, double *t)
{
    for (int64_t j = 0; j < k; j++) {
        double d = g[j * k + j];
        for (int64_t p = 0; p < j; p++)
            d -= g[j * k + p] * g[j * k + p];
        if (!(d > 0) || !isfinite(d))
            return -1;
        d = sqrt(d);
        g[j * k + j] = d;
        for (int64_t i = j + 1; i < k; i++) {
            double v = g[i * k + j];
            for (int64_t p = 0; p < j; p++)
                v -= g[i * k + p] * g[j * k + p];
            g[i * k + j] = v / d;
        }
    }
    /* L^-1 (lower) column by column, by forward substitution */
    memset(t, 0, (size_t)(k * k) * 8);
    for (int64_t c = 0; c < k; c++)
        for (int64_t i = c; i < k; i++) {
            double v = i == c ? 1 : 0;
            for (int64_t p = c; p < i; p++)
                v -= g[i * k + p] * t[p * k + c];
            t[i * k + c] = v / g[i * k + i];
        }
    /* and transposed in place */
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < i; j++) {
            t[j * k + i] = t[i * k + j];
            t[i * k + j] = 0;
        }
    return 0;
}

/* The random columns [jn, k) of lines [lo, lo + h) of an m x k array
 * into e (h x (k - jn)): uniform in +-sqrt(3 / m) (columns of about unit
 * norm, as Z's good ones are), each a hash (splitmix64's) of its line, its
 * column and SVD_FILL_SEED alone.  Any generic columns serve, Cholesky QR
 * makes them orthonormal; a hash is some 10 times cheaper than Gaussian
 * draws, and this runs once per pass and once for the factor. */
static void fill_null(int64_t m, int64_t k, int64_t jn, int64_t lo, int64_t h,
                      double *e)
{
    double s = sqrt(3.0 / (double)m);
    int64_t nc = k - jn;

    for (int64_t i = 0; i < h; i++)
        for (int64_t j = jn; j < k; j++) {
            uint64_t x = SVD_FILL_SEED +
                         ((uint64_t)(lo + i) * (uint64_t)k + (uint64_t)j + 1) *
                             UINT64_C(0x9e3779b97f4a7c15);
            x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
            x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
            x ^= x >> 31;
            e[i * nc + (j - jn)] = ((double)(x >> 11) * 0x1p-52 - 1) * s;
        }
}

/* Z's lines [lo, lo + h) into z (h x k): L's, element (i, c) at x[i * rs +
 * c * cs], times w (n x k), then E in columns [jn, k) (e: h x (k - jn)
 * and a row of scratch).  A line's bits are the same for any h, strides
 * and place: each is the same sums in the same order. */
static void z_lines(const double *x, int64_t rs, int64_t cs, int64_t lo,
                    int64_t h, int64_t m, int64_t n, const double *w, int64_t k,
                    int64_t jn, double *restrict z, double *e)
{
    int64_t nc = k - jn, i = 0;

    memset(z, 0, (size_t)(h * k) * 8);
    /* four lines at a time, each w row read once for them: the same sums
     * in the same order for every element as one line at a time */
    for (; i + 4 <= h; i += 4) {
        double *restrict z0 = z + i * k, *restrict z1 = z0 + k;
        double *restrict z2 = z1 + k, *restrict z3 = z2 + k;
        for (int64_t c = 0; c < n; c++) {
            const double *xc = x + i * rs + c * cs;
            double v0 = xc[0], v1 = xc[rs], v2 = xc[2 * rs], v3 = xc[3 * rs];
            const double *restrict wc = w + c * k;
            for (int64_t j = 0; j < jn; j++) {
                z0[j] += v0 * wc[j];
                z1[j] += v1 * wc[j];
                z2[j] += v2 * wc[j];
                z3[j] += v3 * wc[j];
            }
        }
    }
    for (; i < h; i++) {
        double *restrict zi = z + i * k;
        for (int64_t c = 0; c < n; c++) {
            double v = x[i * rs + c * cs];
            const double *restrict wc = w + c * k;
            for (int64_t j = 0; j < jn; j++)
                zi[j] += v * wc[j];
        }
    }
    if (nc > 0) {
        fill_null(m, k, jn, lo, h, e);
        for (i = 0; i < h; i++)
            memcpy(z + i * k + jn, e + i * nc, (size_t)nc * 8);
    }
}

/* A Gram pass: each task's Z = L W + E (pass 1, by gemm), or Z T1 (pass
 * 2, Z by z_lines), and its part: their Gram matrix (k x k) and column
 * sums (k), summed along the tree. */
typedef struct gram {
    xrun *r;
    int64_t m, n, k, jn, plen;
    const rtasks *tk;
    const double *w;  /* n x k: W, its null columns 0 */
    const double *t1; /* pass 2: T1; pass 1: NULL */
    double *z[64];    /* per thread: a panel's Z, and Z T1 (2 x PANEL x k) */
    double *e[64];    /* per thread: its E (PANEL x (k - jn)), a row */
} gram;

static ck_code gram_task(void *ctx, int id, int64_t lo, int64_t hi,
                         const double *xs, double *part, ck_err *err)
{
    gram *q = ctx;
    int64_t k = q->k, n = q->n, jn = q->jn;
    double *z = q->z[id], *zt = z + GRAM_PANEL * k, *cs = part + k * k;

    memset(part, 0, (size_t)q->plen * 8);
    for (int64_t i = lo; i < hi; i += GRAM_PANEL) {
        int64_t h = hi - i < GRAM_PANEL ? hi - i : GRAM_PANEL;
        const double *x = xs + (i - lo) * n, *y = z;
        if (!q->t1) {
            CK_TRY(
                gemm(q->r, 0, 0, h, k, n, x, n, q->w, k, 0, z, k, 0, 0, err));
            if (jn < k) {
                int64_t nc = k - jn;
                fill_null(q->m, k, jn, i, h, q->e[id]);
                for (int64_t t = 0; t < h; t++)
                    memcpy(z + t * k + jn, q->e[id] + t * nc, (size_t)nc * 8);
            }
        } else {
            z_lines(x, n, 1, i, h, q->m, n, q->w, k, jn, z, q->e[id]);
            CK_TRY(
                gemm(q->r, 0, 0, h, k, k, z, k, q->t1, k, 0, zt, k, 0, 0, err));
            y = zt;
        }
        CK_TRY(gemm(q->r, 1, 0, k, k, h, y, k, y, k, 1, part, k, 0, 0, err));
        for (int64_t t = 0; t < h; t++)
            for (int64_t j = 0; j < k; j++)
                cs[j] += y[t * k + j];
    }
    return CK_OK;
}

/* One Gram pass over w (the tree's sum into res: plen doubles). */
static ck_code gram_run(rows *w, gram *g, double *parts, double *res, int nt,
                        ck_err *err)
{
    ck_tree tree;
    ck_code rc;

    CK_TRY(ck_tree_init(&tree, g->tk->n, (size_t)g->plen * 8, sum_merge,
                        &g->plen, err));
    rc = tpass_run(w, gram_task, g, &tree, parts, g->plen, nt, err);
    rc = ck_tree_finish(&tree, rc, res, err);
    ck_tree_release(&tree);
    return rc;
}

/* The streamed factor of svd step i made orthonormal (see above): wm (n x
 * k, W with its null columns [jn, k) zero) stays; *tout (k x k) is T =
 * T1 T2, the factor being Z T.  For a wide A (transpose), a completed
 * column whose Vt row sums below 0 is flipped, with vm's (A's U) column,
 * as signs() wants.  w is released and sized again beside the passes' own
 * memory, which is charged while they run (T's with the factors). */
static ck_code orthonormalize(xrun *r, int i, int transpose, rows *w,
                              const rtasks *tk, int64_t jn, const double *wm,
                              double *vm, double **tout, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    int a = nd->arg[0];
    const ck_node *an = &r->p->node[a];
    int64_t n = transpose ? an->shape[0] : an->shape[1];
    int64_t m = transpose ? an->shape[1] : an->shape[0], k = nd->k;
    int64_t nc = k - jn, kk = k * k;
    int nt = pass_threads(r);
    gram g = {.r = r, .m = m, .n = n, .k = k, .jn = jn, .tk = tk, .w = wm};
    double *parts = NULL, *res = NULL, *t1 = NULL, *t2 = NULL, *tt = NULL;
    int64_t ch = 0;
    ck_code rc;

    g.plen = kk + k;
    /* per thread a panel's Z, Z T1 and E; a wave's parts, the tree's, the
     * sum; T1, T2 and T (kept for the factor) */
    int64_t own = (nt * (2 * GRAM_PANEL * k + GRAM_PANEL * nc + nc) +
                   (nt + ck_tree_max_parts(tk->n) + 1) * g.plen + 3 * kk) *
                  8;
    rows_release(w);
    rc = charge(r, own, nd, "orthonormalizing its factor", err);
    if (rc == CK_OK) {
        ch = own;
        rc = rows_init(w, r, a, transpose, -1, tk, 0, 0,
                       "svd (orthonormalizing its factor)", err);
    }
    if (rc == CK_OK) {
        for (int q = 0; q < nt && rc == CK_OK; q++)
            if (!(g.z[q] = malloc((size_t)(2 * GRAM_PANEL * k) * 8 + 8)) ||
                !(g.e[q] = malloc((size_t)(GRAM_PANEL * nc + nc) * 8 + 8)))
                rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        parts = malloc((size_t)(nt * g.plen) * 8);
        res = malloc((size_t)g.plen * 8);
        t1 = malloc((size_t)kk * 8);
        t2 = malloc((size_t)kk * 8);
        tt = malloc((size_t)kk * 8);
        if (rc == CK_OK && (!parts || !res || !t1 || !t2 || !tt))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    /* every rank ready before the trees' messages */
    if ((rc = ck_comm_agree(rc, err)) != CK_OK)
        goto out;
    /* pass 1: Z = L W + E; G1 = Z^T Z = L1 L1^T; T1 = L1^-T */
    if ((rc = gram_run(w, &g, parts, res, nt, err)) != CK_OK)
        goto out;
    if (chol_inv(res, k, t1) != 0)
        goto singular;
    /* pass 2: G2 of Z T1, Z as the factor makes it */
    g.t1 = t1;
    if ((rc = gram_run(w, &g, parts, res, nt, err)) != CK_OK)
        goto out;
    if (chol_inv(res, k, t2) != 0)
        goto singular;
    if ((rc = gemm(r, 0, 0, k, k, k, t1, k, t2, k, 0, tt, k, 0, 0, err)) !=
        CK_OK)
        goto out;
    if (transpose) {
        /* the factor's column sums: pass 2's (of Z T1) times T2 */
        const double *cs = res + kk;
        for (int64_t j = jn; j < k; j++) {
            double sum = 0;
            for (int64_t p = 0; p <= j; p++)
                sum += cs[p] * t2[p * k + j];
            if (sum >= 0)
                continue;
            for (int64_t p = 0; p < k; p++)
                tt[p * k + j] = -tt[p * k + j];
            for (int64_t c = 0; c < n; c++)
                vm[c * k + j] = -vm[c * k + j];
        }
    }
    *tout = tt;
    tt = NULL;
    goto out;
singular:
    rc = ck_err_set(err, CK_ENOTSUP,
                    "%s: cannot make %s orthonormal (its Gram matrix is not "
                    "positive definite)",
                    ck_exec_who(r, nd), transpose ? "Vt" : "U");
out:
    for (int q = 0; q < nt; q++) {
        free(g.z[q]);
        free(g.e[q]);
    }
    free(parts);
    free(res);
    free(t1);
    free(t2);
    free(tt);
    /* T's room goes over to the factors' charge */
    ck_budget_release(&r->budget, ch - (rc == CK_OK ? kk * 8 : 0));
    return rc;
}

static ck_code svd_exact(xrun *r, int i, int transpose, ck_err *err)
{
    ck_node *nd = &r->p->node[i];
    int a = nd->arg[0];
    const ck_node *an = &r->p->node[a];
    int64_t n = transpose ? an->shape[0] : an->shape[1], k = nd->k;
    tsqr t = {0};
    rtasks tk;
    ck_tree tree = {0};
    rows w = {0};
    double *u = NULL, *s = NULL, *vt = NULL, *sg = NULL, *sum = NULL;
    double *parts = NULL, *res = NULL;
    int nt = pass_threads(r);
    int64_t ch = 0;
    ck_code rc;

    ck_rowtasks_of_node(r->p, nd, &tk, NULL);
    t.r = r;
    t.nd = nd;
    t.n = n;
    t.colsums = transpose;
    t.plen = n * n + (transpose ? n : 0);
    /* per thread a task's stack; a wave's parts, the tree's, the result;
     * a merge's stack, the small SVD's u and vt, vectors */
    int64_t stk = (tk.sub > 2 * n ? tk.sub : 2 * n) * n;
    int64_t own = (nt * stk + (nt + ck_tree_max_parts(tk.n) + 1) * t.plen +
                   4 * n * n + 6 * n) *
                  8;
    if ((rc = charge(r, own, nd, "the R factors", err)) == CK_OK) {
        ch = own;
        for (int q = 0; q < nt && rc == CK_OK; q++)
            if (!(t.stack[q] = ck_alloc_large((size_t)stk * 8)))
                rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        t.mstack = malloc((size_t)(2 * n * n) * 8);
        parts = malloc((size_t)(nt * t.plen) * 8);
        res = malloc((size_t)t.plen * 8);
        u = malloc((size_t)(n * n) * 8);
        vt = malloc((size_t)(n * n) * 8);
        s = malloc((size_t)n * 8);
        sg = malloc((size_t)n * 8);
        sum = calloc((size_t)n + 1, 8);
        if (rc == CK_OK &&
            (!t.mstack || !parts || !res || !u || !vt || !s || !sg || !sum))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    /* room for the factors, charged after the pass, is left beside it */
    if (rc == CK_OK)
        rc = rows_init(&w, r, a, transpose, -1, &tk, 0, (2 * n * k + k) * 8,
                       "svd", err);
    if (rc == CK_OK)
        rc = ck_tree_init(&tree, tk.n, (size_t)t.plen * 8, tsqr_merge, &t, err);
    /* every rank ready before the tree's messages */
    if ((rc = ck_comm_agree(rc, err)) != CK_OK)
        goto out;
    /* One BLAS thread: the tasks' QRs run side by side, and the dense
     * steps after the tree (R's SVD) must give the same bits on a rank
     * that mpirun bound to one core as in a process with all of them
     * (threaded LAPACK does not). */
    ck_be_set_threads(&r->be, 1);
    rc = tpass_run(&w, tsqr_task, &t, &tree, parts, t.plen, nt, err);
    if (rc == CK_OK && t.mrc != CK_OK) {
        rc = t.mrc;
        *err = t.merr;
    }
    rc = ck_tree_finish(&tree, rc, res, err);
    /* a merge on the way up may have failed too */
    if (rc == CK_OK) {
        if (t.mrc != CK_OK)
            *err = t.merr;
        rc = ck_comm_agree(t.mrc, err);
    }
    if (rc != CK_OK)
        goto out;
    double *colsum = res + n * n;
    /* R = U_R S V^T; L = (Q U_R) S V^T */
    ck_svd_args sv = {.m = n,
                      .n = n,
                      .a = res,
                      .lda = n,
                      .s = s,
                      .u = u,
                      .ldu = n,
                      .vt = vt,
                      .ldvt = n,
                      .no_u = 1};
    /* finite values whose column norms overflow made R's inf; an R near
     * the largest doubles overflows inside LAPACK's bidiagonal SVD (dbdsdc
     * fails) though S may be representable: it is scaled by a power of
     * two, 2^900 at most (bits unchanged below), and S back (S overflowing
     * then is refused) */
    double ramax = 0, f = 1;
    for (int64_t e = 0; e < n * n; e++)
        ramax = fabs(res[e]) > ramax ? fabs(res[e]) : ramax;
    int ex = 0;
    frexp(ramax, &ex);
    if (isfinite(ramax) && ex > 900) {
        f = ldexp(1, 900 - ex);
        for (int64_t e = 0; e < n * n; e++)
            res[e] *= f;
    }
    if (!isfinite(ramax)) {
        rc = svd_overflows(r, nd, err);
        goto out;
    }
    if ((rc = ck_op_svd(&r->be, &sv, err)) != CK_OK)
        goto out;
    for (int64_t j = 0; f != 1 && j < n; j++)
        s[j] /= f;
    if (!isfinite(s[0])) {
        rc = svd_overflows(r, nd, err);
        goto out;
    }
    /* Values near the smallest doubles (1e-300) lose U's orthogonality and
     * subnormal ones give NaN in it: the largest singular value is at
     * least the largest |value|, and below 2^-900 (1e-271) it is refused
     * with what to do (every rank holds the same s) */
    if (s[0] > 0 && s[0] < 0x1p-900) {
        const ck_node *src = &r->p->node[nd->arg[0]];
        while (src->kind == CK_NODE_CF)
            src = &r->p->node[src->arg[0]];
        rc = ck_err_set(err, CK_EFORMAT,
                        "%s: its largest singular value is %g, too close to "
                        "the smallest doubles for an SVD (scale it up first)",
                        ck_node_label(src), s[0]);
        goto out;
    }
    /* V[c][j] = vt[j + c*n] (col-major) */
    if (!transpose) {
        for (int64_t j = 0; j < k; j++)
            for (int64_t c = 0; c < n; c++)
                sum[j] += vt[j + c * n];
    } else {
        /* A = V S (Q U_R)^T: A's Vt rows are S^-1 V^T A, whose sums are
         * S^-1 V^T (row sums of A) = S^-1 V^T colsum(L) */
        for (int64_t j = 0; j < k; j++)
            for (int64_t c = 0; c < n; c++)
                sum[j] += vt[j + c * n] * colsum[c];
    }
    signs(sum, k, sg);
    /* the streamed factor is made orthonormal again (orthonormalize)
     * where a singular value is below S[0] * SVD_ILL; its columns from jn
     * on are null */
    int64_t m = transpose ? an->shape[1] : an->shape[0], jn = k;
    int ill = 0;
    for (int64_t j = 0; j < k; j++)
        ill |= s[j] == 0 || s[j] < s[0] * SVD_ILL;
    /* (nothing to make where the streamed factor is not asked for) */
    ill &= ck_devla_part_used(r->p, i, transpose ? CK_PART_VT : CK_PART_U);
    double tol = s[0] * (double)(m > n ? m : n) * DBL_EPSILON;
    for (int64_t j = 0; ill && j < k && jn == k; j++)
        if (s[j] <= tol)
            jn = j;
    if (jn < k)
        ck_log(CK_LOG_WARN,
               "%s: the array is rank deficient (rank %lld): its %lld "
               "singular values of 0 (to rounding) have columns of %s that "
               "are an orthonormal completion (as LAPACK's)",
               ck_exec_who(r, nd), (long long)jn, (long long)(k - jn),
               transpose ? "Vt" : "U");
    /* the in-memory factor V (k columns), signed, and the matrix that
     * makes the streamed one from L's rows: W = V S^-1 */
    int part_v = i + (transpose ? 1 : 3); /* "d.U" or "d.Vt" */
    int64_t vbytes = n * k * 8;
    if ((rc = charge(r, 2 * vbytes + k * 8, nd, "its factors", err)) != CK_OK)
        goto out;
    double *vm = malloc((size_t)vbytes), *wm = malloc((size_t)vbytes);
    double *sm = malloc((size_t)k * 8);
    if (!vm || !wm || !sm) {
        free(vm);
        free(wm);
        free(sm);
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        goto out;
    }
    for (int64_t c = 0; c < n; c++)
        for (int64_t j = 0; j < k; j++) {
            double v = sg[j] * vt[j + c * n];
            if (transpose)
                vm[c * k + j] = v; /* U of A: n x k */
            else
                vm[j * n + c] = v; /* Vt of A: k x n */
            wm[c * k + j] = j < jn && s[j] > 0 ? v / s[j] : 0;
        }
    double *tf = NULL;
    if (ill) {
        /* the tree is done with: its memory makes room for the passes */
        int64_t done = (nt * stk + (nt + ck_tree_max_parts(tk.n) + 1) * t.plen +
                        2 * n * n) *
                       8;
        for (int q = 0; q < nt; q++) {
            free(t.stack[q]);
            t.stack[q] = NULL;
        }
        free(t.mstack);
        free(parts);
        free(res);
        t.mstack = parts = res = NULL;
        ck_tree_release(&tree);
        ck_budget_release(&r->budget, done);
        ch -= done;
    }
    if (ill && (rc = orthonormalize(r, i, transpose, &w, &tk, jn, wm, vm, &tf,
                                    err)) != CK_OK) {
        free(vm);
        free(wm);
        free(sm);
        goto out;
    }
    memcpy(sm, s, (size_t)k * 8);
    r->x[part_v].mem = vm;
    r->x[i + 2].mem = sm; /* "d.S" */
    r->x[i].mem = wm;
    r->x[i].svd_t = tf;
    r->x[i].svd_null = jn;
out:
    ck_be_set_threads(&r->be, 0);
    rows_release(&w);
    ck_tree_release(&tree);
    ck_budget_release(&r->budget, ch);
    for (int q = 0; q < nt; q++)
        free(t.stack[q]);
    free(t.mstack);
    free(parts);
    free(res);
    free(u);
    free(vt);
    free(s);
    free(sg);
    free(sum);
    return rc;
}

/* The largest of the threads' n entries of m, over every rank too. */
static ck_code largest(const double *m, int n, double *out, ck_err *err)
{
    int size = ck_comm_size();
    double mine = 0, *all;

    for (int t = 0; t < n; t++)
        mine = m[t] > mine ? m[t] : mine;
    *out = mine;
    if (size == 1)
        return CK_OK;
    if (!(all = malloc(sizeof *all * (size_t)size)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    ck_code rc = ck_comm_allgather(&mine, sizeof mine, all, err);
    for (int k = 0; rc == CK_OK && k < size; k++)
        *out = all[k] > *out ? all[k] : *out;
    free(all);
    return rc;
}

static ck_code svd_randomized(xrun *r, int i, int transpose, ck_err *err)
{
    ck_node *nd = &r->p->node[i];
    int a = nd->arg[0];
    const ck_node *an = &r->p->node[a];
    int64_t n = transpose ? an->shape[0] : an->shape[1];
    int64_t m = transpose ? an->shape[1] : an->shape[0], k = nd->k;
    int64_t l = k + nd->oversample < n ? k + nd->oversample : n;
    double *p = NULL, *z = NULL, *pt = NULL, *zt = NULL, *parts = NULL;
    double *y = NULL, *yb = NULL;
    double *col = NULL, *rr = NULL, *u = NULL, *s = NULL, *vt = NULL;
    double *sum = NULL, *amax = NULL, f = 1;
    int64_t fixed, ch = 0, ln = l * n;
    int nt = pass_threads(r);
    rtasks tk;
    rows w = {0};
    ck_code rc;

    ck_rowtasks_of_node(r->p, nd, &tk, NULL);
    int64_t panel = rpass_panel(r, &tk);
    /* in memory: y (m x l), p, z, p's transpose (n x l), QR scratch (the
     * larger of m and n, x l), the small SVDs; the tasks' z (a wave's,
     * the tree's, the sum) and the threads' panels */
    fixed = (m * l * 2 + n * l * 3 + 4 * l * l + 4 * l +
             (nt + ck_tree_max_parts(tk.n) + 1) * ln + nt * panel * l) *
            8;
    /* the passes' row blocks sized first, beside all of that and the room
     * for the factors (charged after the passes): a refusal then names
     * the whole need, not the range's alone and then, raised to that,
     * the blocks' */
    rc = rows_init(&w, r, a, transpose, -1, &tk, 0, fixed + (m + n + 1) * k * 8,
                   "a randomized svd", err);
    if (rc == CK_OK &&
        (rc = charge(r, fixed, nd,
                     "the randomized range: (rows + columns) x (k + "
                     "oversample) values",
                     err)) == CK_OK) {
        ch = fixed;
        p = malloc((size_t)ln * 8);
        z = malloc((size_t)ln * 8);
        pt = malloc((size_t)ln * 8);
        zt = malloc((size_t)ln * 8);
        parts = malloc((size_t)(nt * ln) * 8);
        y = malloc((size_t)(m * l) * 8);
        yb = malloc((size_t)(nt * panel * l) * 8);
        col = malloc((size_t)((m > n ? m : n) * l) * 8);
        rr = malloc((size_t)(l * l) * 8);
        u = malloc((size_t)(l * l) * 8);
        vt = malloc((size_t)(l * l) * 8);
        s = malloc((size_t)l * 8);
        sum = calloc((size_t)l, 8);
        amax = calloc((size_t)nt, 8);
        if (!p || !z || !pt || !zt || !parts || !y || !yb || !col || !rr ||
            !u || !vt || !s || !sum || !amax)
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    /* every rank ready before the passes' messages */
    if ((rc = ck_comm_agree(rc, err)) != CK_OK)
        goto out;
    {
        /* a Gaussian test matrix, the same for any chunking and threads */
        int64_t sh[2] = {n, l}, st[2] = {0, 0};
        ck_gen_box(CK_DIST_NORMAL, 0, 1, nd->seed, CK_F64, 2, sh, st, sh, sh, p,
                   z);
    }
    /* power_iters + 1 passes of y = L p, z = L^T y, p = orth(z) (so p
     * spans (L^T L)^i applied to the test matrix), the last keeping y =
     * L (L^T L)^q Omega: dask's svd_compressed range, Q = orth(y), with
     * its B = Q^T L = (L^T Q)^T read off the same pass's z (below).  Each
     * pass's z is its tasks' sum along the tree; the last pass's rows of
     * y are then shared, so that every rank holds all of y. */
    /* one BLAS thread: the passes' small gemms run one a thread, and the
     * dense steps after the passes must give the same bits on a rank that
     * mpirun bound to one core as in a process with all of them */
    ck_be_set_threads(&r->be, 1);
    for (int it = 0; rc == CK_OK && it <= nd->power_iters; it++) {
        int last = it == nd->power_iters;
        ck_tree tree;
        rpass q = {.r = r,
                   .node = i,
                   .pass = it,
                   .transpose = transpose,
                   .n = n,
                   .l = l,
                   .pt = pt,
                   .y = last ? y : NULL,
                   .panel = panel,
                   .yb = yb,
                   .amax = amax,
                   .f = f};
        for (int64_t c = 0; c < n; c++)
            for (int64_t j = 0; j < l; j++)
                pt[j * n + c] = p[c * l + j] * f;
        memset(zt, 0, (size_t)ln * 8);
        /* (init fails only on a few hundred bytes, as the process does) */
        if ((rc = ck_tree_init(&tree, tk.n, (size_t)ln * 8, sum_merge, &ln,
                               err)) != CK_OK)
            break;
        rc = tpass_run(&w, rpass_task, &q, &tree, parts, ln, nt, err);
        rc = ck_tree_finish(&tree, rc, zt, err);
        ck_tree_release(&tree);
        double big = 1;
        if (rc == CK_OK && it == 0 && f == 1)
            rc = largest(amax, nt, &big, err);
        if (rc == CK_OK && big > 0 && big < 0x1p-960)
            rc = ck_err_set(err, CK_EFORMAT,
                            "%s: its largest |value| is %g, too close to "
                            "the smallest doubles for an SVD (scale it up "
                            "first)",
                            ck_node_label(an), big);
        if (rc == CK_OK && (big > 0x1p200 || (big > 0 && big < 0x1p-200))) {
            /* far from 1: the first pass again, scaled (a power of two,
             * so the scaling itself rounds nothing) */
            int e;
            frexp(big, &e);
            f = ldexp(1, -e);
            int64_t sh[2] = {n, l}, st[2] = {0, 0};
            ck_gen_box(CK_DIST_NORMAL, 0, 1, nd->seed, CK_F64, 2, sh, st, sh,
                       sh, p, z);
            it = -1;
            continue;
        }
        if (rc == CK_OK && last)
            rc = share_rows(&tk, y, l, err);
        for (int64_t j = 0; rc == CK_OK && j < l; j++)
            for (int64_t c = 0; c < n; c++)
                z[c * l + j] = zt[j * n + c];
        if (rc == CK_OK && !last) {
            memcpy(p, z, (size_t)ln * 8);
            rc = orth(r, p, n, l, col, rr, err);
        }
    }
    if (rc != CK_OK)
        goto out;
    /* y = U_y S_y W^T (y row-major is y^T column-major: its SVD's V^T is
     * U_y row-major, in col; its U is W, in u).  Q = U_y, and B = Q^T L =
     * S_y^-1 W^T y^T L = S_y^-1 W^T z^T, so B^T = z W S_y^-1 (into p).
     * Directions of y below sqrt(eps) of its largest are dropped: their
     * rounding would swamp B (the power passes do not resolve singular
     * values that small either). */
    {
        ck_svd_args sy = {.m = l,
                          .n = m,
                          .a = y,
                          .lda = l,
                          .s = s,
                          .u = u,
                          .ldu = l,
                          .vt = col,
                          .ldvt = l};
        if ((rc = ck_op_svd(&r->be, &sy, err)) != CK_OK ||
            (rc = gemm(r, 0, 1, n, l, l, z, l, u, l, 0, p, l, 0, 0, err)) !=
                CK_OK)
            goto out;
        for (int64_t j = 0; j < l; j++) {
            double inv = s[j] > s[0] * sqrt(DBL_EPSILON) ? 1 / s[j] : 0;
            for (int64_t c = 0; c < n; c++)
                p[c * l + j] *= inv;
        }
        /* B = U_b S W_b^T (B is p column-major, l x n): U_b into vt, W_b
         * row-major into z.  L ~ Q B = (U_y U_b) S W_b^T. */
        ck_svd_args sb = {.m = l,
                          .n = n,
                          .a = p,
                          .lda = l,
                          .s = s,
                          .u = vt,
                          .ldu = l,
                          .vt = z,
                          .ldvt = l};
        if ((rc = ck_op_svd(&r->be, &sb, err)) != CK_OK)
            goto out;
    }
    /* uf = U_y U_b (m x k, row-major): col is U_y row-major, vt (U_b
     * column-major) is U_b^T row-major, its first k rows the first k
     * columns of U_b; vf = W_b's first k columns (n x k, row-major). */
    double *uf = malloc((size_t)(m * k) * 8), *vf = malloc((size_t)(n * k) * 8);
    double *sm = malloc((size_t)k * 8);
    if (!uf || !vf || !sm) {
        free(uf);
        free(vf);
        free(sm);
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = gemm(r, 0, 1, m, k, l, col, l, vt, l, 0, uf, k, 0, 0, err)) !=
        CK_OK) {
        free(uf);
        free(vf);
        free(sm);
        goto out;
    }
    for (int64_t c = 0; c < n; c++)
        for (int64_t j = 0; j < k; j++)
            vf[c * k + j] = z[c * l + j];
    /* signs: A's Vt rows sum to >= 0 */
    double *sg = z; /* free now */
    for (int64_t j = 0; j < k; j++) {
        double acc = 0;
        if (!transpose)
            for (int64_t c = 0; c < n; c++)
                acc += vf[c * k + j];
        else
            for (int64_t ii = 0; ii < m; ii++)
                acc += uf[ii * k + j];
        sum[j] = acc;
    }
    signs(sum, k, sg);
    for (int64_t ii = 0; ii < m; ii++)
        for (int64_t j = 0; j < k; j++)
            uf[ii * k + j] *= sg[j];
    for (int64_t c = 0; c < n; c++)
        for (int64_t j = 0; j < k; j++)
            vf[c * k + j] *= sg[j];
    /* (the passes' scaling undone; -0 made 0, as LAPACK's are) */
    for (int64_t j = 0; j < k; j++)
        sm[j] = s[j] == 0 ? 0 : s[j] / f;
    if (!isfinite(sm[0])) {
        free(uf);
        free(vf);
        free(sm);
        rc = svd_overflows(r, nd, err);
        goto out;
    }
    /* A = L (tall): U = uf, Vt = vf^T.  A = L^T: U = vf, Vt = uf^T. */
    double *ua = transpose ? vf : uf, *va = transpose ? uf : vf;
    int64_t um = transpose ? n : m, vn = transpose ? m : n;
    double *vta = malloc((size_t)(k * vn) * 8);
    if ((rc = charge(r, (um + vn + 1) * k * 8, nd, "its factors", err)) !=
            CK_OK ||
        !vta) {
        free(uf);
        free(vf);
        free(sm);
        free(vta);
        if (rc == CK_OK)
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        goto out;
    }
    for (int64_t c = 0; c < vn; c++)
        for (int64_t j = 0; j < k; j++)
            vta[j * vn + c] = va[c * k + j];
    free(va);
    r->x[i + 1].mem = ua;  /* "d.U" */
    r->x[i + 2].mem = sm;  /* "d.S" */
    r->x[i + 3].mem = vta; /* "d.Vt" */
out:
    ck_be_set_threads(&r->be, 0);
    rows_release(&w);
    ck_budget_release(&r->budget, ch);
    free(p);
    free(z);
    free(pt);
    free(zt);
    free(parts);
    free(y);
    free(yb);
    free(col);
    free(rr);
    free(u);
    free(vt);
    free(s);
    free(sum);
    free(amax);
    return rc;
}

/* One writer's share of U in chunks of 'lines' rows (ck_exec_run_svd). */
static int64_t u_share(const xrun *r, const ck_node *nd, int64_t lines)
{
    return 4 * lines * nd->k * 8 + (int64_t)factor_bytes(r, nd, 1, lines);
}

ck_code ck_exec_run_svd(xrun *r, int i, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *an = &r->p->node[nd->arg[0]];
    int transpose = an->shape[0] < an->shape[1];
    ck_code rc;

    rc = nd->randomized ? svd_randomized(r, i, transpose, err)
                        : svd_exact(r, i, transpose, err);
    if (rc != CK_OK) {
        ck_err_prefix(err, "%s", nd->where);
        return rc;
    }
    if (!nd->randomized && !transpose && an->kind == CK_NODE_INPUT) {
        /* U's chunks: whole chunks of A when every worker's share fits
         * what is left (each chunk of A is then read once, in place), else
         * the plan's, halved until every worker's share fits (down to
         * U_MIN_ROWS rows; below that, one worker's).  The share: the
         * chunk, its copy for the writer and the writer's encoding scratch
         * (at most a chunk's bound, counted as two), and reading A's rows */
        ck_node *u = &r->p->node[i + 1];
        int64_t crows = an->chunks[0], left = r->budget.limit - r->budget.used;
        int t = r->o->threads > 0 ? r->o->threads : ck_ncpus();
        if (crows > u->chunks[0] && crows <= an->shape[0] &&
            an->shape[0] % crows == 0 && t * u_share(r, nd, crows) <= left)
            u->chunks[0] = crows;
        while (u->chunks[0] > U_MIN_ROWS &&
               t * u_share(r, nd, u->chunks[0]) > left)
            u->chunks[0] = (u->chunks[0] + 1) / 2;
        /* and no larger than U_MAX_BYTES: larger chunks are no faster to
         * write, and each worker holds a few of them and their rows of A */
        while (u->chunks[0] > 1 && u->chunks[0] * nd->k * 8 > U_MAX_BYTES)
            u->chunks[0] = (u->chunks[0] + 1) / 2;
        while (u->chunks[0] > 1 && u_share(r, nd, u->chunks[0]) > left)
            u->chunks[0] = (u->chunks[0] + 1) / 2;
    }
    return CK_OK;
}

/* ---- glm_fit ---- */

/* Collective: *flag becomes 1 on every rank when it is 1 on any; 'all'
 * holds ck_comm_size() ints (allocated before the ranks last agreed, so
 * that no rank can fail here alone). */
static ck_code any_rank(int *flag, int *all, ck_err *err)
{
    if (ck_comm_size() == 1)
        return CK_OK;
    CK_TRY(ck_comm_allgather(flag, sizeof *flag, all, err));
    for (int k = 0; k < ck_comm_size(); k++)
        *flag |= all[k];
    return CK_OK;
}

typedef struct gfit {
    xrun *r;
    const ck_node *nd;
    rows w;
    int64_t n, p;
    rtasks tk;      /* the rows' tasks (w.tk, or the sample's) */
    int64_t t0, t1; /* this rank's */
    int local;      /* all tasks here, no other rank: the sample */
    int fits;       /* all of X and y fit the budget (on any rank) */
    double *x, *y;  /* this rank's rows (from row lo), when in memory */
    int64_t lo;
    double *scratch; /* nt kernel scratches of scratch_n doubles */
    size_t scratch_n;
    int nt;         /* threads folding tasks */
    double *part;   /* GLM_GROUP tasks' partial loss, grad, hess */
    int64_t ta, tn; /* the group's first task and count */
    int64_t base;   /* the row at gx, gy */
    const double *gx, *gy;
    int64_t next; /* atomic: next task of the group */
    int checking; /* the first pass: check the data, fill x and y */
    int sample;   /* the rows are glm_sample_start's, not X's own */
    /* checking: each task's first value of X (as an offset) and of y
     * that glm_fit refuses, or -1 */
    int64_t bad_x[GLM_GROUP], bad_y[GLM_GROUP];
    const double *b;      /* the pass's parameters */
    const double *center; /* and center (ck_glm_pass_fn) */
    /* doubles of the pass's parts: loss[, grad[, hess]], then from sq_off
     * the columns' sums, then their sums of squares (sq) */
    int64_t plen, sq_off;
    /* poisson's first pass: at ys_off (0: none) the sum over y of
     * log(y!) - (y log y - y), for llf (per row: each a few units, where
     * the two terms are ~1e8 for counts ~1e7) */
    int64_t ys_off;
    double ylfact;
    /* poisson's deviance pass: the loss slot gets the sum of the unit
     * deviances y log(y / mu) - (y - mu) at b, in place of the loss: per
     * row, they are small where mu fits y, while the loss's sum is a
     * difference of sums of ~y log y that cancels to a few digits */
    int devpass;
    ck_tree tree; /* the pass's */
    double *grad, *hess, *sq;
} gfit;

/* Doubles of one task's partial sums at most: loss, grad (d), hess (d x
 * d), the columns' sums and squares (2 p), poisson's sum over y. */
static int64_t part_len(const gfit *g)
{
    int64_t d = g->p + (g->nd->glm.fit_intercept ? 1 : 0);
    return 1 + d + d * d + 2 * g->p + 1;
}

/* A worker: takes tasks of the group in turn and sums each into its own
 * partial (so the sums do not depend on which thread took which). */
static ck_code glm_task_worker(void *ctx, int id, ck_par *par, ck_err *err)
{
    gfit *g = ctx;
    int64_t d = g->p + (g->nd->glm.fit_intercept ? 1 : 0), len = part_len(g);
    double *scratch = g->scratch + (size_t)id * g->scratch_n;

    while (!ck_par_stopped(par)) {
        int64_t k = __atomic_fetch_add(&g->next, 1, __ATOMIC_RELAXED), lo, hi;
        if (k >= g->tn)
            break;
        rtask_rows(&g->tk, g->ta + k, &lo, &hi);
        int64_t i = lo - g->base, m = hi - lo;
        double *pt = g->part + k * len;
        memset(pt, 0, (size_t)g->plen * 8);
        if (g->checking) {
            /* on the threads, and the task's rows are then in cache for
             * the sums */
            g->bad_x[k] = first_nonfinite(g->gx + i * g->p, m * g->p);
            g->bad_y[k] = ck_glm_bad_y(g->nd->glm.family, g->gy + i, m);
            if (g->bad_x[k] >= 0 || g->bad_y[k] >= 0)
                continue;
            for (int64_t t = 0; g->ys_off && t < m; t++) {
                double v = g->gy[i + t];
                int sg;
                pt[g->ys_off] +=
                    lgamma_r(v + 1, &sg) - ((v > 0 ? v * log(v) : 0) - v);
            }
        }
        if (g->devpass) {
            const double *w = g->b, *xr = g->gx + i * g->p;
            for (int64_t t = 0; t < m; t++, xr += g->p) {
                double eta = d > g->p ? w[g->p] : 0, v = g->gy[i + t], mu;
                for (int64_t j = 0; j < g->p; j++)
                    eta += xr[j] * w[j];
                mu = exp(eta);
                pt[0] += v > 0 ? v * log(v / mu) - (v - mu) : mu;
            }
            continue;
        }
        /* the rows' key: the device may keep them for the next passes
         * (a sample's rows are not X's rows lo..hi: none) */
        uint64_t key =
            g->sample ? 0 : ck_be_key((int)(g->nd - g->r->p->node), 0, lo, 0);
        CK_TRY(ck_glm_block(&g->r->be, &g->nd->glm, g->gx + i * g->p, g->gy + i,
                            m, g->p, key, g->b, g->center, pt,
                            g->grad ? pt + 1 : NULL,
                            g->hess ? pt + 1 + d : NULL, scratch, err));
        if (g->sq)
            ck_glm_col_moments(g->gx + i * g->p, m, g->p, g->center,
                               pt + g->sq_off);
    }
    return CK_OK;
}

/* Adds tasks [ta, tb), whose rows are at x and y from row 'base', to the
 * pass's tree: GLM_GROUP tasks at once on the pass's threads, their
 * partial sums then pushed in task order. */
static ck_code glm_sums(gfit *g, int64_t base, int64_t ta, int64_t tb,
                        const double *x, const double *y, ck_err *err)
{
    int64_t len = part_len(g);

    g->gx = x;
    g->gy = y;
    g->base = base;
    for (g->ta = ta; g->ta < tb; g->ta += GLM_GROUP) {
        g->tn = tb - g->ta < GLM_GROUP ? tb - g->ta : GLM_GROUP;
        g->next = 0;
        CK_TRY(ck_par_run(g->nt < g->tn ? g->nt : (int)g->tn, glm_task_worker,
                          g, err));
        for (int64_t k = 0; g->checking && k < g->tn; k++) {
            int64_t at, hi, bx = g->bad_x[k], by = g->bad_y[k];
            rtask_rows(&g->tk, g->ta + k, &at, &hi);
            const double *ys = y + (at - base);
            if (bx >= 0)
                return ck_err_set(
                    err, CK_EFORMAT,
                    "X ('%s') row %lld column %lld is %g: glm_fit needs "
                    "finite values",
                    ck_node_label(&g->r->p->node[g->nd->arg[0]]),
                    (long long)(at + bx / g->p), (long long)(bx % g->p),
                    x[(at - base) * g->p + bx]);
            if (by >= 0)
                return ck_err_set(err, CK_EFORMAT,
                                  "y ('%s') row %lld is %g: %s",
                                  ck_node_label(&g->r->p->node[g->nd->arg[1]]),
                                  (long long)(at + by), ys[by],
                                  !isfinite(ys[by]) ? "values must be finite"
                                  : g->nd->glm.family == CK_GLM_LOGISTIC
                                      ? "logistic needs 0 or 1"
                                      : "poisson needs y >= 0");
        }
        for (int64_t k = 0; k < g->tn; k++)
            CK_TRY(ck_tree_push(&g->tree, g->ta + k, g->part + k * len, err));
    }
    return CK_OK;
}

/* A block of rows from the stores; in the first pass (checking) it is
 * also kept when X is held in memory. */
static ck_code glm_block_fn(void *ctx, int64_t r0, int64_t nr, int64_t ta,
                            int64_t tb, const double *blk, const double *y,
                            ck_err *err)
{
    gfit *g = ctx;

    if (g->checking && g->x) {
        memcpy(g->x + (r0 - g->lo) * g->p, blk, (size_t)(nr * g->p) * 8);
        memcpy(g->y + (r0 - g->lo), y, (size_t)nr * 8);
    }
    return glm_sums(g, r0, ta, tb, blk, y, err);
}

/* One pass of the solver: the mean loss, gradient and Hessian over all
 * rows, the tasks' sums combined along the tree (under MPI, every rank's:
 * each gets the same bits). */
static ck_code glm_pass(void *ctx, const double *b, const double *center,
                        double *loss, double *grad, double *hess, double *sq,
                        ck_err *err)
{
    gfit *g = ctx;
    int64_t d = g->p + (g->nd->glm.fit_intercept ? 1 : 0);
    double *acc = g->part + GLM_GROUP * part_len(g); /* the result */
    ck_code rc;

    g->b = b;
    g->center = center;
    g->grad = grad;
    g->hess = hess;
    g->sq = sq;
    g->sq_off = hess ? 1 + d + d * d : grad ? 1 + d : 1;
    g->plen = g->sq_off + (sq ? 2 * g->p : 0);
    g->ys_off = 0;
    if (g->checking && g->nd->glm.family == CK_GLM_POISSON) {
        g->ys_off = g->plen;
        g->plen += 1;
    }
    memset(acc, 0, (size_t)g->plen * 8);
    /* (its stack is allocated as it grows: init fails only on a few
     * hundred bytes, as the whole process does) */
    CK_TRY(ck_tree_init(&g->tree, g->tk.n, (size_t)g->plen * 8, sum_merge,
                        &g->plen, err));
    /* the first pass reads the data from its stores, checking it (and
     * keeping it, when it is held in memory) as it goes */
    if (g->x && !g->checking) {
        rc = glm_sums(g, g->lo, g->t0, g->t1, g->x, g->y, err);
    } else {
        rc = rows_run(&g->w, glm_block_fn, g, err);
        g->checking = 0;
    }
    if (g->local)
        rc = rc == CK_OK ? ck_tree_result(&g->tree, acc, err) : rc;
    else
        rc = ck_tree_finish(&g->tree, rc, acc, err);
    ck_tree_release(&g->tree);
    CK_TRY(rc);
    *loss = acc[0] / (double)g->n;
    for (int64_t j = 0; grad && j < d; j++)
        grad[j] = acc[1 + j] / (double)g->n;
    for (int64_t j = 0; hess && j < d * d; j++)
        hess[j] = acc[1 + d + j] / (double)g->n;
    for (int64_t j = 0; sq && j < 2 * g->p; j++)
        sq[j] = acc[g->sq_off + j] / (double)g->n;
    if (g->ys_off)
        g->ylfact = acc[g->ys_off];
    return CK_OK;
}

/* newton's and lbfgs' start when X is read from its store on every pass:
 * a newton fit on a sample of the rows held in memory (the first rows of
 * each of X's chunks, GLM_SAMPLE rows at most, an eighth of X at most),
 * whose point and Hessian start the full fit a few passes from its optimum
 * (a sample's optimum is within its statistical error of the full one).
 * 0 with *sres set when there is a start; otherwise (a sample too small
 * for the model, no room, data the full pass will refuse, a sample fit
 * that fails) 1: the full fit starts from 0, as it would have.  Runs
 * before the pass's blocks are charged, holding the sample and one
 * reader's scratch. */
static int glm_sample_start(gfit *g, ck_glm_result *sres)
{
    xrun *r = g->r;
    const ck_node *nd = g->nd, *xn = &r->p->node[nd->arg[0]];
    const ck_node *yn = &r->p->node[nd->arg[1]];
    int64_t p = g->p, d = p + (nd->glm.fit_intercept ? 1 : 0);
    int64_t S = g->n / 8 < GLM_SAMPLE ? g->n / 8 : GLM_SAMPLE;
    int64_t unit =
        xn->chunks[0] > 0 && xn->chunks[0] < g->n ? xn->chunks[0] : g->n;
    int64_t nch = unit > 0 ? (g->n + unit - 1) / unit : 1, have = 0;
    int64_t per = (S + nch - 1) / nch, bytes = S * (p + 1) * 8;
    size_t ex = ck_dtype_size(xn->dtype), ey = ck_dtype_size(yn->dtype);
    ck_arena sa = {0};
    ck_err err = {0};
    int bad = 1;

    per = per < unit ? per : unit;
    if ((nd->glm.solver != CK_GLM_NEWTON && nd->glm.solver != CK_GLM_LBFGS) ||
        g->fits || S < 20 * d)
        return 1;
    /* the sample, and a reader's scratch for a piece of it */
    size_t sab = al((size_t)(per * p) * ex) +
                 eval_bytes(r, nd->arg[0], (size_t)(per * p)) +
                 al((size_t)per * ey) + eval_bytes(r, nd->arg[1], (size_t)per) +
                 1024;
    if (ck_budget_charge(&r->budget, bytes, "a sample of X", NULL) != CK_OK)
        return 1;
    if (ck_arena_reserve(&sa, &r->budget, sab, "reading a sample of X", NULL) !=
        CK_OK) {
        ck_budget_release(&r->budget, bytes);
        return 1;
    }
    gfit h = *g;
    h.x = malloc((size_t)(S * p) * 8);
    h.y = malloc((size_t)S * 8);
    for (int64_t c = 0; h.x && h.y && c < nch && have < S; c++) {
        int64_t st[2] = {c * unit, 0}, sh[2] = {per, p};
        sh[0] = sh[0] < g->n - st[0] ? sh[0] : g->n - st[0];
        sh[0] = sh[0] < S - have ? sh[0] : S - have;
        ck_arena_reset(&sa);
        void *tx = xn->dtype == CK_F64
                       ? (void *)(h.x + have * p)
                       : ck_arena_alloc(&sa, (size_t)(sh[0] * p) * ex);
        if (!tx || eval(r, nd->arg[0], st, sh, tx, &sa, &err) != CK_OK)
            goto out;
        if (xn->dtype != CK_F64)
            ck_dtype_convert(CK_F64, h.x + have * p, xn->dtype, tx,
                             (size_t)(sh[0] * p));
        ck_arena_reset(&sa);
        void *ty = ck_arena_alloc(&sa, (size_t)sh[0] * ey);
        if (!ty || eval(r, nd->arg[1], st, sh, ty, &sa, &err) != CK_OK)
            goto out;
        ck_dtype_convert(CK_F64, h.y + have, yn->dtype, ty, (size_t)sh[0]);
        have += sh[0];
    }
    if (!h.x || !h.y || have < 20 * d ||
        ck_glm_bad_y(nd->glm.family, h.y, have) >= 0 ||
        first_nonfinite(h.x, have * p) >= 0)
        goto out;
    h.n = have;
    h.checking = 0;
    h.sample = 1;
    h.local = 1; /* every rank fits the same sample */
    h.lo = 0;
    ck_rowtasks_init(&h.tk, have, have, GLM_SLICE);
    h.t0 = 0;
    h.t1 = h.tk.n;
    ck_glm_opts o = nd->glm;
    o.solver = CK_GLM_NEWTON;
    o.std_errors = 0; /* the same path with or without them */
    o.tol = 1e-6;
    o.max_iter = 20;
    bad = ck_glm_fit(&r->be, &o, p, glm_pass, &h, NULL, sres, &err) != CK_OK ||
          !sres->converged || !sres->h;
    if (bad)
        ck_glm_result_release(sres);
out:
    free(h.x);
    free(h.y);
    ck_arena_release(&sa);
    ck_budget_release(&r->budget, bytes);
    return bad;
}

/* The fit's deviance, log-likelihood and AIC at its coefficients, as
 * statsmodels' GLM results report them (deviance, llf, aic: -2 llf + 2 d),
 * from the mean loss: the normal family's llf takes the residual variance
 * as SSR / n.  poisson's deviance is a pass of its own (devpass), and its
 * llf -deviance / 2 less the first pass's sum over y. */
static ck_code glm_stats(gfit *g, const ck_glm_result *res, int64_t d,
                         double *out, ck_err *err)
{
    double n = (double)g->n, sum = res->loss * n, dev, llf;
    ck_code rc_;

    switch (g->nd->glm.family) {
    case CK_GLM_NORMAL: /* loss (y - eta)^2 / 2 */
        dev = 2 * sum;
        llf = -n / 2 * (log(2 * M_PI * dev / n) + 1);
        break;
    case CK_GLM_LOGISTIC: /* the negative log-likelihood */
        dev = 2 * sum;
        llf = -sum;
        break;
    default: /* poisson */
        g->devpass = 1;
        rc_ = glm_pass(g, res->b, NULL, &dev, NULL, NULL, NULL, err);
        g->devpass = 0;
        CK_TRY(rc_);
        dev *= 2 * n;
        llf = -dev / 2 - g->ylfact;
        break;
    }
    out[0] = dev;
    out[1] = llf;
    out[2] = -2 * llf + 2 * (double)d;
    return CK_OK;
}

ck_code ck_exec_run_glm(xrun *r, int i, ck_err *err)
{
    ck_node *nd = &r->p->node[i];
    const ck_node *xn = &r->p->node[nd->arg[0]];
    gfit g;
    ck_glm_result res = {0}, sres = {0};
    ck_glm_start st = {0};
    int64_t n = xn->shape[0], p = xn->shape[1], ch = 0, nr;
    int64_t d = p + (nd->glm.fit_intercept ? 1 : 0), data = (n * p + n) * 8;
    int *ranks = NULL;
    ck_code rc;

    memset(&g, 0, sizeof g);
    g.r = r;
    g.nd = nd;
    g.n = n;
    g.p = p;
    /* the rows' tasks, and this rank's */
    ck_rowtasks_of_node(r->p, nd, &g.tk, NULL);
    rtasks_mine(&g.tk, &g.t0, &g.t1);
    int64_t hi = 0, mine;
    if (g.t1 > g.t0) {
        rtask_rows(&g.tk, g.t0, &g.lo, &hi);
        rtask_rows(&g.tk, g.t1 - 1, &nr, &hi);
    }
    mine = hi - g.lo;
    /* the solver's own state: a few d x d matrices and d vectors (its
     * own, ck_glm_fit's 5 d^2 + 37 d, and a sample start's point and
     * Hessian); a kernel scratch per thread, the tasks' partial sums and
     * the pass's result, the tree's parts */
    int64_t fixed = (6 * d * d + 80 * d) * 8;
    g.nt = r->o->threads > 0 ? r->o->threads : ck_ncpus();
    g.nt = g.nt < GLM_GROUP ? g.nt : GLM_GROUP;
    g.scratch_n = ck_glm_block_scratch(&r->be, GLM_SLICE, p);
    int64_t own =
        fixed + (int64_t)g.scratch_n * 8 * g.nt +
        (GLM_GROUP + 1 + ck_tree_max_parts(g.tk.n)) * part_len(&g) * 8;
    if ((rc = charge(r, own, nd, "the solver's state", err)) == CK_OK) {
        ch = own;
        g.scratch = malloc(g.scratch_n * 8 * (size_t)g.nt + 8);
        g.part = malloc((size_t)((GLM_GROUP + 1) * part_len(&g)) * 8);
        ranks = malloc((size_t)ck_comm_size() * sizeof *ranks);
        if (!g.scratch || !g.part || !ranks)
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    /* X and y are held in memory when they fit with room for one small
     * block beside them (then the first pass is the only read), else
     * read on every pass.  Whether all of them would fit (not this rank's
     * rows) decides whether newton and lbfgs start from a sample: the
     * same choice, and the same bits, for any number of ranks. */
    nr = xn->chunks[0] < n ? xn->chunks[0] : n;
    g.fits = r->budget.limit - r->budget.used > data + 2 * nr * (p + 1) * 8;
    data = (mine * p + mine) * 8;
    if (rc == CK_OK &&
        r->budget.limit - r->budget.used > data + 2 * nr * (p + 1) * 8 &&
        ck_budget_charge(&r->budget, data, "X held in memory", NULL) == CK_OK) {
        ch += data;
        g.x = malloc((size_t)(mine * p) * 8 + 8);
        g.y = malloc((size_t)mine * 8 + 8);
        if (!g.x || !g.y)
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    /* the kernel's BLAS calls are small (GLM_SLICE rows): one BLAS thread
     * computes while the readers read, instead of BLAS threads spinning.
     * The sample comes first, with the whole budget to read it. */
    ck_be_set_threads(&r->be, 1);
    int nosample = 1;
    if (rc == CK_OK)
        nosample = glm_sample_start(&g, &sres);
    if (rc == CK_OK)
        rc = rows_init(&g.w, r, nd->arg[0], 0, nd->arg[1], &g.tk, 0, 0,
                       "glm_fit", err);
    /* every rank ready, and starting from the same point, before the
     * passes' collectives */
    if ((rc = ck_comm_agree(rc, err)) == CK_OK)
        rc = any_rank(&nosample, ranks, err);
    if (rc == CK_OK) {
        if (!nosample) {
            st.b = sres.b;
            st.h = sres.h;
            st.center = sres.center;
            st.gscale = sres.gscale;
        }
        g.checking = 1;
        rc = ck_glm_fit(&r->be, &nd->glm, p, glm_pass, &g, st.b ? &st : NULL,
                        &res, err);
    }
    ck_be_set_threads(&r->be, 0);
    if (rc != CK_OK)
        goto out_rows;
    /* warnings name the step, or a one-step command ("glm-fit") */
    const char *who = ck_exec_who(r, nd);
    if (res.no_mle == 2) {
        char col[32];
        if (res.lead < p)
            snprintf(col, sizeof col, "column %lld", (long long)res.lead);
        else
            snprintf(col, sizeof col, "the intercept");
        ck_log(CK_LOG_WARN,
               "%s: no maximum-likelihood fit exists: some rows are "
               "separated (quasi-complete separation: the loss falls or "
               "stays as the coefficients move along a direction led by "
               "%s), and they grow without bound; fit with a penalty (l2 "
               "and a lambda)",
               who, col);
    } else if (res.no_mle == 3)
        ck_log(CK_LOG_WARN,
               "%s: no fit exists: y is all %s, so the intercept (which is "
               "not penalised) grows without bound; there is nothing to "
               "fit",
               who, nd->glm.family == CK_GLM_POISSON ? "0" : "0 or all 1");
    else if (res.no_mle)
        ck_log(CK_LOG_WARN,
               "%s: no maximum-likelihood fit exists: the fitted means "
               "approach y on every row (mean loss %.3g; %s), and the "
               "coefficients grow without bound; fit with a penalty (l2 "
               "and a lambda)",
               who, res.objective,
               nd->glm.family == CK_GLM_POISSON
                   ? "y is all 0"
                   : "the classes are separated, or y is all 0 or all 1");
    else if (res.stalled)
        ck_log(CK_LOG_WARN,
               "%s: %s stopped after %d iterations short of tol (objective "
               "%.10g): no step lowers the objective further, the gradient "
               "being at the rounding floor of the data's sums; raise tol",
               who, ck_glm_solver_name(nd->glm.solver), res.iterations,
               res.objective);
    else if (!res.converged)
        ck_log(CK_LOG_WARN,
               "%s: %s did not converge in %d iterations (objective %.10g); "
               "raise max_iter or tol",
               who, ck_glm_solver_name(nd->glm.solver), res.iterations,
               res.objective);
    if (nd->glm.std_errors && !res.converged && !res.no_mle)
        ck_log(CK_LOG_WARN, "%s: no standard errors: the fit did not converge",
               who);
    {
        /* results: coef, intercept, and [iterations, converged, objective,
         * deviance, llf, aic, then with std_errors the d standard errors
         * (NaN: none)] on the node itself */
        double *coef = malloc((size_t)p * 8), *ic = malloc(8);
        double *info =
            malloc((size_t)(CK_GLM_INFO + (nd->glm.std_errors ? d : 0)) * 8);
        if (!coef || !ic || !info) {
            free(coef);
            free(ic);
            free(info);
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
            goto out_rows;
        }
        memcpy(coef, res.b, (size_t)p * 8);
        ic[0] = nd->glm.fit_intercept ? res.b[p] : 0.0;
        info[0] = res.iterations;
        info[1] = res.converged;
        info[2] = res.objective;
        rc = glm_stats(&g, &res, d, info + 3, err);
        for (int64_t j = 0; nd->glm.std_errors && j < d; j++)
            info[CK_GLM_INFO + j] = NAN;
        if (rc == CK_OK && nd->glm.std_errors && res.converged && res.h_exact)
            rc = ck_glm_std_errors(&r->be, nd->glm.family, n, d, res.h,
                                   res.center, res.objective,
                                   info + CK_GLM_INFO, err);
        if (rc == CK_OK && nd->glm.std_errors && res.converged &&
            isnan(info[CK_GLM_INFO])) {
            if (nd->glm.family == CK_GLM_NORMAL && n <= d)
                ck_log(CK_LOG_WARN,
                       "%s: no standard errors: no residual degrees of "
                       "freedom (%lld rows for %lld parameters)",
                       who, (long long)n, (long long)d);
            else
                ck_log(CK_LOG_WARN,
                       "%s: no standard errors: the information matrix is "
                       "singular (X is rank deficient)",
                       who);
        }
        r->x[i + 1].mem = coef;
        r->x[i + 2].mem = ic;
        r->x[i].mem = info;
    }
out_rows:
    rows_release(&g.w);
    ck_glm_result_release(&res);
    ck_glm_result_release(&sres);
    ck_budget_release(&r->budget, ch);
    free(g.scratch);
    free(g.part);
    free(g.x);
    free(g.y);
    free(ranks);
    if (rc != CK_OK)
        ck_err_prefix(err, "%s", nd->where);
    return rc;
}

/* ---- boxes ---- */

/* matmul's k blocking for a box of nd's chunk shape: MM_KB on the CPU.
 * Where gemm runs on a device, each block's product adds to C there and
 * C crosses the bus both ways (MM_KB of k: ~1 ms of a GPU's DGEMM, and
 * ~10 ms to move a 4000 x 4000 C), so k goes in as few blocks as a
 * quarter of --memory per thread holds, in multiples of MM_KB. */
static int64_t mm_kb(const xrun *r, const ck_node *nd)
{
    int64_t kk = r->p->node[nd->arg[0]].shape[1];
    int64_t kb = kk < MM_KB ? kk : MM_KB;

    if (kk > MM_KB && ck_be_gemm_on_device(&r->be)) {
        /* an element of each block: as read and as converted (8 bytes
         * each at most) */
        int64_t per = (nd->chunks[0] + nd->chunks[1]) * 16 * MM_KB;
        int64_t nb = r->budget.limit / 4 / pass_threads(r) / per;
        if (nb > 1)
            kb = nb * MM_KB < kk ? nb * MM_KB : kk;
    }
    return kb;
}

/* The two blocks (converted to the result's dtype if they differ), then
 * the operands' scratch one at a time, and 512 bytes for gemm's packed
 * argument records. */
size_t ck_exec_matmul_bytes(const xrun *r, int i, size_t n, int known,
                            int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *a = &r->p->node[nd->arg[0]];
    const ck_node *b = &r->p->node[nd->arg[1]];
    size_t nr = (size_t)nd->chunks[0], cols = (size_t)nd->chunks[1];
    size_t kb = (size_t)mm_kb(r, nd);
    size_t cs = ck_dtype_size(nd->dtype);
    size_t ea = eval_bytes(r, nd->arg[0], nr * kb);
    size_t eb = eval_bytes(r, nd->arg[1], kb * cols);

    (void)n, (void)known, (void)aligned;
    return al(nr * kb * ck_dtype_size(a->dtype)) +
           (a->dtype != nd->dtype ? al(nr * kb * cs) : 0) +
           al(kb * cols * ck_dtype_size(b->dtype)) +
           (b->dtype != nd->dtype ? al(kb * cols * cs) : 0) +
           (ea > eb ? ea : eb) + 512;
}

/* An exact svd's streamed factor (U of a tall A, Vt of a wide one) is made
 * by gemms over groups of lines (U's rows, Vt's columns) at fixed places:
 * multiples of factor_group() lines, a number that depends on A's shape
 * alone.  OpenBLAS's bits for a row depend on the shape of the gemm it is
 * in, so every line then has the same bits whichever box asks for it
 * (the writer's chunks follow --memory; a matmul or a print reads other
 * boxes).  A piece is read from A at a time: the factor's chunk rounded
 * down to whole groups, at least one group. */
static int64_t factor_group(const ck_node *an, int tall)
{
    int64_t len = an->shape[tall ? 1 : 0];
    int64_t g = ((int64_t)1 << 22) / (len > 0 ? len : 1); /* 32 MiB */

    return g < 1 ? 1 : g > FACTOR_GROUP ? FACTOR_GROUP : g;
}

static int64_t factor_piece(const ck_node *nd, const ck_node *an, int tall)
{
    int64_t g = factor_group(an, tall), p = nd->chunks[tall ? 0 : 1] / g * g;

    return p > g ? p : g;
}

/* A result held in memory needs nothing; a streamed factor needs a piece
 * of A's lines and the piece of the factor they make. */
size_t ck_exec_part_bytes(const xrun *r, int i, size_t n, int known,
                          int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *s = &r->p->node[nd->arg[0]];

    (void)n, (void)known, (void)aligned;
    if (s->kind != CK_NODE_SVD || s->randomized)
        return 0;
    const ck_node *a = &r->p->node[s->arg[0]];
    int tall = a->shape[0] >= a->shape[1];
    if ((tall && nd->part != CK_PART_U) || (!tall && nd->part != CK_PART_VT))
        return 0;
    int64_t lines = factor_piece(nd, a, tall);
    /* and, where it is made orthonormal (orthonormalize), a group's Z
     * and random columns */
    size_t extra =
        r->x[nd->arg[0]].svd_t
            ? 2 * al((size_t)((factor_group(a, tall) + 1) * s->k) * 8)
            : 0;
    return factor_bytes(r, s, tall, lines) + al((size_t)(lines * s->k) * 8) +
           extra;
}

/* X's rows and their float64 copy, the coefficients, the intercept. */
size_t ck_exec_predict_bytes(const xrun *r, int i, size_t n, int known,
                             int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *x = &r->p->node[nd->arg[0]];
    size_t box = (size_t)nd->chunks[0] * (size_t)x->shape[1];
    size_t p = (size_t)x->shape[1];

    (void)n, (void)known, (void)aligned;
    return al(box * ck_dtype_size(x->dtype)) + al(box * 8) +
           eval_bytes(r, nd->arg[0], box) + 2 * al(p * 8) +
           eval_bytes(r, nd->arg[1], p) +
           (nd->arg[2] >= 0 ? eval_bytes(r, nd->arg[2], 1) + 64 : 0) + 512;
}

/* Arena bytes of a box of 'lines' rows (tall) or columns of svd s's
 * streamed factor: those rows (columns) of A, as float64.  Whole chunks of
 * a float64 input spanning all columns are read in place. */
static size_t factor_bytes(const xrun *r, const ck_node *s, int tall,
                           int64_t lines)
{
    const ck_node *a = &r->p->node[s->arg[0]];
    size_t box = (size_t)lines * (size_t)(tall ? a->shape[1] : a->shape[0]);
    int whole = tall && a->kind == CK_NODE_INPUT && a->dtype == CK_F64 &&
                a->chunks[1] >= a->shape[1] && lines == a->chunks[0] &&
                a->shape[0] % lines == 0;

    return al(box * ck_dtype_size(a->dtype)) +
           (a->dtype == CK_F64 ? 0 : al(box * 8)) +
           (whole ? ck_array_scratch_bytes(r->x[s->arg[0]].arr)
                  : eval_bytes(r, s->arg[0], box)) +
           256;
}

/* Node j's box start/shape (2-D) into float64, with scratch from a. */
static ck_code eval_f64(xrun *r, int j, const int64_t *start,
                        const int64_t *shape, double **out, ck_arena *a,
                        ck_err *err)
{
    const ck_node *m = &r->p->node[j];
    size_t cnt = (size_t)nelem(m->ndim, shape);
    void *raw = ck_arena_alloc(a, cnt * ck_dtype_size(m->dtype));

    if (!raw)
        return no_room(err);
    CK_TRY(eval(r, j, start, shape, raw, a, err));
    if (m->dtype == CK_F64) {
        *out = raw;
        return CK_OK;
    }
    if (!(*out = ck_arena_alloc(a, cnt * 8)))
        return no_room(err);
    ck_dtype_convert(CK_F64, *out, m->dtype, raw, cnt);
    return CK_OK;
}

static ck_code eval_matmul(xrun *r, const ck_node *nd, const int64_t *start,
                           const int64_t *shape, void *dst, ck_arena *a,
                           ck_err *err)
{
    const ck_node *an = &r->p->node[nd->arg[0]];
    const ck_node *bn = &r->p->node[nd->arg[1]];
    ck_dtype ct = nd->dtype;
    size_t cs = ck_dtype_size(ct), mark = a->used;
    int64_t kk = an->shape[1], kb0 = mm_kb(r, nd);
    size_t na = (size_t)(shape[0] * kb0), nb = (size_t)(kb0 * shape[1]);
    void *av = ck_arena_alloc(a, na * ck_dtype_size(an->dtype));
    void *bv = ck_arena_alloc(a, nb * ck_dtype_size(bn->dtype));
    void *ac = an->dtype == ct ? av : ck_arena_alloc(a, na * cs);
    void *bc = bn->dtype == ct ? bv : ck_arena_alloc(a, nb * cs);
    ck_code rc = CK_OK;

    if (!av || !bv || !ac || !bc)
        return no_room(err);
    if (kk == 0)
        memset(dst, 0, (size_t)(shape[0] * shape[1]) * cs);
    /* the operands' own scratch is used and freed one at a time */
    size_t work = a->used;
    for (int64_t k0 = 0; rc == CK_OK && k0 < kk; k0 += kb0) {
        int64_t kb = kk - k0 < kb0 ? kk - k0 : kb0;
        int64_t as[2] = {start[0], k0}, ash[2] = {shape[0], kb};
        int64_t bs[2] = {k0, start[1]}, bsh[2] = {kb, shape[1]};
        rc = eval(r, nd->arg[0], as, ash, av, a, err);
        a->used = work;
        if (rc == CK_OK)
            rc = eval(r, nd->arg[1], bs, bsh, bv, a, err);
        a->used = work;
        if (rc != CK_OK)
            break;
        if (ac != av)
            ck_dtype_convert(ct, ac, an->dtype, av, (size_t)(shape[0] * kb));
        if (bc != bv)
            ck_dtype_convert(ct, bc, bn->dtype, bv, (size_t)(kb * shape[1]));
        ck_gemm_args g = {
            .dtype = ct,
            .m = shape[0],
            .n = shape[1],
            .k = kb,
            .alpha = 1,
            .beta = k0 ? 1 : 0,
            .a = ac,
            .lda = kb,
            .b = bc,
            .ldb = shape[1],
            .c = dst,
            .ldc = shape[1],
            /* a box's operand blocks come back for the
               boxes beside it: the device may keep them */
            .a_key = ck_be_key((int)(nd - r->p->node), 0, start[0], k0 / MM_KB),
            .b_key =
                ck_be_key((int)(nd - r->p->node), 1, start[1], k0 / MM_KB)};
        rc = ck_op_gemm(&r->be, &g, err);
    }
    a->used = mark;
    return rc;
}

ck_code ck_exec_matmul_eval(xrun *r, int i, const int64_t *start,
                            const int64_t *shape, void *dst, ck_arena *a,
                            const memo *mm, ck_err *err)
{
    (void)mm;
    return eval_matmul(r, &r->p->node[i], start, shape, dst, a, err);
}

ck_code ck_exec_predict_eval(xrun *r, int i, const int64_t *start,
                             const int64_t *shape, void *dst, ck_arena *a,
                             const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *xn = &r->p->node[nd->arg[0]];
    int64_t p = xn->shape[1], xs[2] = {start[0], 0}, xsh[2] = {shape[0], p};
    int64_t z = 0, one = 1;
    double *x, *w, c = nd->scalar[2];

    (void)mm;
    CK_TRY(eval_f64(r, nd->arg[0], xs, xsh, &x, a, err));
    CK_TRY(eval_f64(r, nd->arg[1], &z, &p, &w, a, err));
    if (nd->arg[2] >= 0) {
        double *cv;
        const ck_node *cn = &r->p->node[nd->arg[2]];
        CK_TRY(eval_f64(r, nd->arg[2], &z, cn->ndim ? &one : &z, &cv, a, err));
        c = cv[0];
    }
    return ck_glm_predict(&r->be, nd->glm.family, x, shape[0], p, w, c, dst,
                          err);
}

ck_code ck_exec_part_eval(xrun *r, int i, const int64_t *start,
                          const int64_t *shape, void *dst, ck_arena *a,
                          const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];

    (void)mm;
    /* a part: held in memory, or the streamed factor of an exact svd */
    if (r->x[i].mem) {
        int64_t zero[CK_MAX_DIMS] = {0};
        ck_box_copy(nd->ndim, ck_dtype_size(nd->dtype), dst, shape, zero,
                    r->x[i].mem, nd->shape, start, NULL, shape);
        return CK_OK;
    }
    const ck_node *s = &r->p->node[nd->arg[0]];
    const ck_node *an = &r->p->node[s->arg[0]];
    const double *wm = r->x[nd->arg[0]].mem;
    int tall = nd->part == CK_PART_U, ax = tall ? 0 : 1;
    int64_t k = s->k, len = an->shape[1 - ax], all = an->shape[ax];
    int64_t g = factor_group(an, tall), pc = factor_piece(nd, an, tall);
    int64_t end = start[ax] + shape[ax];
    /* made orthonormal (orthonormalize): Z T, Z's null columns [jn, k)
     * random */
    const double *tf = r->x[nd->arg[0]].svd_t;
    int64_t jn = r->x[nd->arg[0]].svd_null;
    size_t mark = a->used;
    double *x, *blk = ck_arena_alloc(a, (size_t)(pc * k) * 8);
    double *z = tf ? ck_arena_alloc(a, (size_t)((g + 1) * k) * 8) : NULL;
    double *e = tf ? ck_arena_alloc(a, (size_t)((g + 1) * k) * 8) : NULL;

    if (!wm)
        return ck_err_set(err, CK_ENOTSUP, "run: %s evaluated before its svd",
                          nd->name);
    if (!blk || (tf && (!z || !e)))
        return no_room(err);
    size_t work = a->used;
    /* the pieces that hold the box, whole (all k components; see
     * factor_group) */
    for (int64_t p0 = start[ax] / g * g; p0 < end; p0 += pc) {
        int64_t pn = all - p0 < pc ? all - p0 : pc;
        int64_t as[2], ash[2], bsh[2], boff[2], doff[2], cnt[2];
        int64_t lo = p0 > start[ax] ? p0 : start[ax];
        int64_t hi = p0 + pn < end ? p0 + pn : end;
        a->used = work;
        as[ax] = p0, ash[ax] = pn, as[1 - ax] = 0, ash[1 - ax] = len;
        CK_TRY(eval_f64(r, s->arg[0], as, ash, &x, a, err));
        for (int64_t q = 0; q < pn; q += g) {
            int64_t gb = pn - q < g ? pn - q : g;
            if (tf) {
                /* Z's lines (z_lines: their bits wherever they are), then
                 * U = Z T */
                if (tall) {
                    z_lines(x + q * len, len, 1, p0 + q, gb, all, len, wm, k,
                            jn, z, e);
                    CK_TRY(gemm(r, 0, 0, gb, k, k, z, k, tf, k, 0, blk + q * k,
                                k, 0, 0, err));
                } else {
                    z_lines(x + q, 1, pn, p0 + q, gb, all, len, wm, k, jn, z,
                            e);
                    CK_TRY(gemm(r, 1, 1, k, gb, k, tf, k, z, k, 0, blk + q, pn,
                                0, 0, err));
                }
                continue;
            }
            if (tall) /* U rows = A rows W, W = V S^-1 (n x k) */
                CK_TRY(gemm(r, 0, 0, gb, k, len, x + q * len, len, wm, k, 0,
                            blk + q * k, k, 0, ck_be_key(nd->arg[0], 2, 0, 0),
                            err));
            else /* Vt columns = W^T A columns, W = U S^-1 (m x k) */
                CK_TRY(gemm(r, 1, 0, k, gb, len, wm, k, x + q, pn, 0, blk + q,
                            pn, ck_be_key(nd->arg[0], 2, 0, 0), 0, err));
        }
        bsh[ax] = pn, bsh[1 - ax] = k;
        boff[ax] = lo - p0, boff[1 - ax] = start[1 - ax];
        doff[ax] = lo - start[ax], doff[1 - ax] = 0;
        cnt[ax] = hi - lo, cnt[1 - ax] = shape[1 - ax];
        ck_box_copy(2, 8, dst, shape, doff, blk, bsh, boff, NULL, cnt);
    }
    a->used = mark;
    return CK_OK;
}
