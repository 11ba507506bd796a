/*
 * pipelines/op_contract.c - tensordot and einsum of two arrays: sums of
 * products over paired axes, mapped onto the BLAS tiles matmul uses.
 *
 * With the paired ("contracted") axes of a and b, einsum's batch axes
 * (in both and in the result) and the free ones left, the result t has
 * the batch axes, a's free axes, then b's; einsum then orders t's axes as
 * its output subscripts ask (perm).  Each batch index is its own gemm.  A box
 * of t is one gemm: a's values over the box's free extent and all of the
 * contracted axes, laid out as an Ma x K matrix (contracted axes last, in pair
 * order), times b's as a K x Nb matrix (contracted axes first); t's box in C
 * order is exactly that Ma x Nb product.  Chunks are capped so both blocks stay
 * about BLOCK_ELEMS, so memory is bounded whatever the contracted size. As for
 * matmul, float32 with float32 runs in sgemm and everything else in float64
 * (NumPy keeps integers integral; documented).
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "base/ck_grid.h"
#include "ops/linalg.h"
#include "pipelines/exec_impl.h"
#include "pipelines/optab.h"
#include "pipelines/plan_impl.h"

/* Elements of either operand's block for one box, at most (unless one
 * row of the contraction is larger).  A contraction longer than K_CAP is
 * summed in pieces along its longest axis, each operand block about
 * PIECE_ELEMS, the products added up (gemm's beta 1): the free axes'
 * chunks are then capped as for K_CAP, not crushed to one row (X^T X of
 * a 2e6 x 50 X was 2500 boxes each reading all of X). */
enum { BLOCK_ELEMS = 1 << 22, K_CAP = 1 << 16, PIECE_ELEMS = 1 << 19 };

/* Free axes of operand 'side' (0: a, 1: b) of nd axes: neither summed
 * nor batch axes. */
static int free_axes(const ck_node *n, int side, int nd, int *fr)
{
    const int *con = side ? n->con_b : n->con_a;
    const int *bat = side ? n->bat_b : n->bat_a;
    int k = 0;

    for (int d = 0; d < nd; d++) {
        int c = 0;
        for (int j = 0; j < n->ncon; j++)
            c |= con[j] == d;
        for (int j = 0; j < n->nbat; j++)
            c |= bat[j] == d;
        if (!c)
            fr[k++] = d;
    }
    return k;
}

/* tensordot's "axes": N (a's last N with b's first N, the default 2) or
 * [[a axes], [b axes]]. */
static ck_code tensordot_axes(const char *path, const char *where,
                              const cJSON *ax, const ck_node *a,
                              const ck_node *b, ck_node *n, ck_err *err)
{
    if (!ax || cJSON_IsNumber(ax)) {
        int k = ax ? ax->valueint : 2;
        if (ax && (!ck_plan_is_int(ax) || ax->valuedouble < 0 || k > a->ndim ||
                   k > b->ndim))
            return ck_plan_bad(err, path, where,
                               "axes: %g is more than the arrays' %d and "
                               "%d axes",
                               ax->valuedouble, a->ndim, b->ndim);
        if (!ax && (k > a->ndim || k > b->ndim))
            return ck_plan_bad(err, path, where,
                               "axes: the default 2 needs two axes in each "
                               "array; give \"axes\"");
        for (int j = 0; j < k; j++) {
            n->con_a[j] = a->ndim - k + j;
            n->con_b[j] = j;
        }
        n->ncon = k;
        return CK_OK;
    }
    if (!cJSON_IsArray(ax) || cJSON_GetArraySize(ax) != 2)
        return ck_plan_bad(err, path, where,
                           "axes: expected an integer or [[a axes], [b "
                           "axes]]");
    for (int s = 0; s < 2; s++) {
        const cJSON *l = cJSON_GetArrayItem(ax, s), *e;
        const ck_node *m = s ? b : a;
        int *out = s ? n->con_b : n->con_a, k = 0;
        if (cJSON_IsNumber(l)) {
            l = NULL; /* one axis each: handled below as a list of one */
            e = cJSON_GetArrayItem(ax, s);
            int v = ck_plan_is_int(e) ? e->valueint : -99;
            if (v < -m->ndim || v >= m->ndim)
                return ck_plan_bad(err, path, where,
                                   "axes[%d]: axis out of range", s);
            out[k++] = v < 0 ? v + m->ndim : v;
        } else if (cJSON_IsArray(l)) {
            cJSON_ArrayForEach(e, l)
            {
                int v = ck_plan_is_int(e) ? e->valueint : -99;
                if (k == CK_MAX_DIMS || v < -m->ndim || v >= m->ndim)
                    return ck_plan_bad(err, path, where,
                                       "axes[%d][%d]: axis out of range for "
                                       "a %d-D array",
                                       s, k, m->ndim);
                v = v < 0 ? v + m->ndim : v;
                for (int j = 0; j < k; j++)
                    if (out[j] == v)
                        return ck_plan_bad(err, path, where,
                                           "axes[%d]: axis %d repeated", s, v);
                out[k++] = v;
            }
        } else {
            return ck_plan_bad(err, path, where,
                               "axes[%d]: expected a list of axes", s);
        }
        if (s == 0)
            n->ncon = k;
        else if (k != n->ncon)
            return ck_plan_bad(err, path, where,
                               "axes: %d axes of a but %d of b", n->ncon, k);
    }
    return CK_OK;
}

/* einsum's "subscripts": "ij,jk->ik" (or implicit, "ij,jk": the letters
 * that appear once, sorted).  Contractions only: every letter once per
 * operand, a summed letter in both operands; a letter in both operands
 * and the output is a batch axis. */
static ck_code einsum_axes(const char *path, const char *where, const cJSON *sj,
                           const ck_node *a, const ck_node *b, ck_node *n,
                           char *outs, ck_err *err)
{
    const char *s = cJSON_IsString(sj) ? sj->valuestring : NULL;
    char in[2][CK_MAX_DIMS + 1] = {{0}};
    const ck_node *op[2] = {a, b};
    const char *arrow, *comma;
    int k = 0;

    outs[0] = '\0';
    if (!s)
        return ck_plan_bad(err, path, where,
                           "needs \"subscripts\", e.g. \"ij,jk->ik\"");
    if (strstr(s, "..."))
        return ck_plan_bad(err, path, where,
                           "subscripts: '...' is not supported; name every "
                           "axis");
    comma = strchr(s, ',');
    arrow = strstr(s, "->");
    if (!comma || (arrow && arrow < comma) || strchr(comma + 1, ','))
        return ck_plan_bad(err, path, where,
                           "subscripts '%s': expected two operands, "
                           "\"ij,jk->ik\"",
                           s);
    for (int o = 0; o < 2; o++) {
        const char *p0 = o ? comma + 1 : s;
        const char *p1 = o ? (arrow ? arrow : s + strlen(s)) : comma;
        int len = 0;
        for (const char *c = p0; c < p1; c++) {
            if (*c == ' ')
                continue;
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
                return ck_plan_bad(err, path, where,
                                   "subscripts '%s': '%c' is not a letter", s,
                                   *c);
            if (len == CK_MAX_DIMS || strchr(in[o], *c))
                return ck_plan_bad(err, path, where,
                                   "subscripts '%s': '%c' repeated in "
                                   "operand %d (diagonals are not "
                                   "supported)",
                                   s, *c, o);
            in[o][len++] = *c;
        }
        if (len != op[o]->ndim)
            return ck_plan_bad(err, path, where,
                               "subscripts '%s': operand %d has %d letters "
                               "for %d axes",
                               s, o, len, op[o]->ndim);
    }
    if (arrow) {
        for (const char *c = arrow + 2; *c; c++) {
            if (*c == ' ')
                continue;
            if (k == CK_MAX_DIMS || strchr(outs, *c) ||
                (!strchr(in[0], *c) && !strchr(in[1], *c)))
                return ck_plan_bad(err, path, where,
                                   "subscripts '%s': output letter '%c' is "
                                   "repeated or in no operand",
                                   s, *c);
            outs[k++] = *c;
            outs[k] = '\0';
        }
    } else { /* implicit: letters that appear once, in alphabetical order */
        for (int c = 'A'; c <= 'z'; c++)
            if ((strchr(in[0], c) != NULL) + (strchr(in[1], c) != NULL) == 1 &&
                c != 0 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
                outs[k++] = (char)c;
    }
    outs[k] = '\0';
    n->ncon = n->nbat = 0;
    for (int d = 0; d < a->ndim; d++) {
        char c = in[0][d];
        const char *inb = strchr(in[1], c);
        int out = strchr(outs, c) != NULL;
        if (inb && out) {
            n->bat_a[n->nbat] = d;
            n->bat_b[n->nbat++] = (int)(inb - in[1]);
            continue;
        }
        if (!inb && !out)
            return ck_plan_bad(err, path, where,
                               "subscripts '%s': '%c' is summed in one "
                               "operand only: sum it first",
                               s, c);
        if (inb) {
            n->con_a[n->ncon] = d;
            n->con_b[n->ncon++] = (int)(inb - in[1]);
        }
    }
    for (int d = 0; d < b->ndim; d++)
        if (!strchr(in[0], in[1][d]) && !strchr(outs, in[1][d]))
            return ck_plan_bad(err, path, where,
                               "subscripts '%s': '%c' is summed in one "
                               "operand only: sum it first",
                               s, in[1][d]);
    /* outs as letters of t's axes: the batch letters, a's free letters,
     * then b's */
    {
        char t[3 * CK_MAX_DIMS + 1];
        int nt = 0;
        for (int j = 0; j < n->nbat; j++)
            t[nt++] = in[0][n->bat_a[j]];
        for (int d = 0; d < a->ndim; d++)
            if (!strchr(in[1], in[0][d]))
                t[nt++] = in[0][d];
        for (int d = 0; d < b->ndim; d++)
            if (!strchr(in[0], in[1][d]))
                t[nt++] = in[1][d];
        t[nt] = '\0';
        if (nt != k)
            return ck_plan_bad(err, path, where,
                               "subscripts '%s': the output must name every "
                               "axis that is not summed",
                               s);
        for (int j = 0; j < k; j++)
            n->perm[j] = (int)(strchr(t, outs[j]) - t);
    }
    return CK_OK;
}

/* Halves the largest of the axes axes[0..na-1] of ch until the product of
 * their chunk sizes times 'other' is at most BLOCK_ELEMS (or all are 1). */
static void cap_chunks(int64_t *ch, const int *axes, int na, int64_t other)
{
    for (;;) {
        int64_t prod = other > 0 ? other : 1;
        int big = -1;
        for (int j = 0; j < na; j++) {
            prod *= ch[axes[j]];
            if (big < 0 || ch[axes[j]] > ch[axes[big]])
                big = j;
        }
        if (prod <= BLOCK_ELEMS || big < 0 || ch[axes[big]] == 1)
            return;
        ch[axes[big]] = (ch[axes[big]] + 1) / 2;
    }
}

CK_PLAN_PARSE_FN(contract)
{
    const ck_node *a = ck_plan_array_arg(p, n, 0),
                  *b = ck_plan_array_arg(p, n, 1);
    int fa[CK_MAX_DIMS], fb[CK_MAX_DIMS], na, nb;
    int64_t tsh[2 * CK_MAX_DIMS], tch[2 * CK_MAX_DIMS], k = 1;
    char outs[CK_MAX_DIMS + 1];

    if (!a || !b)
        return ck_plan_bad(err, path, where, "takes two arrays");
    for (int d = 0; d < CK_MAX_DIMS; d++)
        n->perm[d] = d;
    if (sub)
        CK_TRY(einsum_axes(path, where, cJSON_GetObjectItem(step, "subscripts"),
                           a, b, n, outs, err));
    else
        CK_TRY(tensordot_axes(path, where, cJSON_GetObjectItem(step, "axes"), a,
                              b, n, err));
    for (int j = 0; j < n->ncon; j++) {
        if (a->shape[n->con_a[j]] != b->shape[n->con_b[j]])
            return ck_plan_bad(err, path, where,
                               "axis %d of a (length %lld) and axis %d of b "
                               "(length %lld) are summed together but differ",
                               n->con_a[j], (long long)a->shape[n->con_a[j]],
                               n->con_b[j], (long long)b->shape[n->con_b[j]]);
        k *= a->shape[n->con_a[j]];
    }
    for (int j = 0; j < n->nbat; j++)
        if (a->shape[n->bat_a[j]] != b->shape[n->bat_b[j]])
            return ck_plan_bad(err, path, where,
                               "batch axis %d of a (length %lld) and axis %d "
                               "of b (length %lld) differ",
                               n->bat_a[j], (long long)a->shape[n->bat_a[j]],
                               n->bat_b[j], (long long)b->shape[n->bat_b[j]]);
    na = free_axes(n, 0, a->ndim, fa);
    nb = free_axes(n, 1, b->ndim, fb);
    int nt = n->nbat, ia[2 * CK_MAX_DIMS], ib[2 * CK_MAX_DIMS];
    if (nt + na + nb > CK_MAX_DIMS)
        return ck_plan_bad(err, path, where, "the result has more than %d axes",
                           CK_MAX_DIMS);
    for (int j = 0; j < n->nbat; j++) {
        tsh[j] = a->shape[n->bat_a[j]];
        tch[j] = a->chunks[n->bat_a[j]];
        ia[j] = ib[j] = j;
    }
    for (int j = 0; j < na; j++) {
        tsh[nt] = a->shape[fa[j]];
        tch[nt] = a->chunks[fa[j]];
        ia[n->nbat + j] = nt++;
    }
    for (int j = 0; j < nb; j++) {
        tsh[nt] = b->shape[fb[j]];
        tch[nt] = b->chunks[fb[j]];
        ib[n->nbat + j] = nt++;
    }
    cap_chunks(tch, ia, n->nbat + na, k < K_CAP ? k : K_CAP);
    cap_chunks(tch, ib, n->nbat + nb, k < K_CAP ? k : K_CAP);
    n->dtype = a->dtype == CK_F32 && b->dtype == CK_F32 ? CK_F32 : CK_F64;
    n->ndim = nt;
    for (int d = 0; d < n->ndim; d++) {
        n->shape[d] = tsh[n->perm[d]];
        n->chunks[d] = tch[n->perm[d]];
        if (n->chunks[d] < 1)
            n->chunks[d] = 1;
    }
    return CK_OK;
}

/* The boxes of a and b (their own axes) that t's box start/shape needs,
 * and the permutations that lay them out as matrices. */
typedef struct blocks {
    int64_t ast[CK_MAX_DIMS], ash[CK_MAX_DIMS], bst[CK_MAX_DIMS],
        bsh[CK_MAX_DIMS];
    int64_t am[CK_MAX_DIMS], bm[CK_MAX_DIMS]; /* the permuted shapes */
    int aperm[CK_MAX_DIMS], bperm[CK_MAX_DIMS];
    int64_t m, n, k;
    int64_t nb; /* batch indices in the box */
} blocks;

static void make_blocks(const xrun *r, const ck_node *nd, const int64_t *tst,
                        const int64_t *tsh, blocks *bl)
{
    const ck_node *a = &r->p->node[nd->arg[0]], *b = &r->p->node[nd->arg[1]];
    int fa[CK_MAX_DIMS], fb[CK_MAX_DIMS], nt = nd->nbat;
    int na = free_axes(nd, 0, a->ndim, fa);
    int nb = free_axes(nd, 1, b->ndim, fb);

    bl->m = bl->n = bl->k = bl->nb = 1;
    for (int d = 0; d < a->ndim; d++) {
        bl->ast[d] = 0;
        bl->ash[d] = a->shape[d];
    }
    for (int d = 0; d < b->ndim; d++) {
        bl->bst[d] = 0;
        bl->bsh[d] = b->shape[d];
    }
    /* a as (batch, free, summed), b as (batch, summed, free) */
    for (int j = 0; j < nt; j++) {
        bl->ast[nd->bat_a[j]] = bl->bst[nd->bat_b[j]] = tst[j];
        bl->ash[nd->bat_a[j]] = bl->bsh[nd->bat_b[j]] = tsh[j];
        bl->aperm[j] = nd->bat_a[j];
        bl->bperm[j] = nd->bat_b[j];
        bl->nb *= tsh[j];
    }
    for (int j = 0; j < na; j++) {
        bl->ast[fa[j]] = tst[nt + j];
        bl->ash[fa[j]] = tsh[nt + j];
        bl->aperm[nt + j] = fa[j];
        bl->m *= tsh[nt + j];
    }
    for (int j = 0; j < nd->ncon; j++) {
        bl->aperm[nt + na + j] = nd->con_a[j];
        bl->bperm[nt + j] = nd->con_b[j];
        bl->k *= a->shape[nd->con_a[j]];
    }
    for (int j = 0; j < nb; j++) {
        bl->bst[fb[j]] = tst[nt + na + j];
        bl->bsh[fb[j]] = tsh[nt + na + j];
        bl->bperm[nt + nd->ncon + j] = fb[j];
        bl->n *= tsh[nt + na + j];
    }
    for (int d = 0; d < a->ndim; d++)
        bl->am[d] = bl->ash[bl->aperm[d]];
    for (int d = 0; d < b->ndim; d++)
        bl->bm[d] = bl->bsh[bl->bperm[d]];
}

/* t's box of the result's box start/shape (t axis perm[d] is axis d). */
static void t_box(const ck_node *nd, const int64_t *start, const int64_t *shape,
                  int64_t *tst, int64_t *tsh)
{
    for (int d = 0; d < nd->ndim; d++) {
        tst[nd->perm[d]] = start[d];
        tsh[nd->perm[d]] = shape[d];
    }
}

/* The contracted pair summed in pieces (the longest) and the piece's
 * length along it, from the node's chunk so every box sums alike. */
static int split_pair(const xrun *r, const ck_node *nd, int64_t *piece)
{
    const ck_node *a = &r->p->node[nd->arg[0]];
    int64_t zero[CK_MAX_DIMS] = {0}, tst[CK_MAX_DIMS] = {0},
            tsh[CK_MAX_DIMS] = {0};
    int sp = 0;
    blocks bl;

    for (int j = 1; j < nd->ncon; j++)
        if (a->shape[nd->con_a[j]] > a->shape[nd->con_a[sp]])
            sp = j;
    t_box(nd, zero, nd->chunks, tst, tsh);
    make_blocks(r, nd, tst, tsh, &bl);
    int64_t len = nd->ncon ? a->shape[nd->con_a[sp]] : 1;
    int64_t rest = len > 0 ? bl.k / len : 1, side = bl.m > bl.n ? bl.m : bl.n;
    *piece = len;
    if (bl.k > K_CAP && len > 1) {
        int64_t per = bl.nb * side * rest;
        *piece = per > 0 && PIECE_ELEMS / per > 1 ? PIECE_ELEMS / per : 1;
        if (*piece > len)
            *piece = len;
    }
    return sp;
}

/* bl cut to the piece [k0, k0 + len) of contracted pair sp. */
static void cut_piece(const xrun *r, const ck_node *nd, int sp, int64_t k0,
                      int64_t len, int64_t full, blocks *bl)
{
    if (nd->ncon == 0)
        return;
    bl->ast[nd->con_a[sp]] = bl->bst[nd->con_b[sp]] = k0;
    bl->ash[nd->con_a[sp]] = bl->bsh[nd->con_b[sp]] = len;
    bl->k = bl->k / full * len;
    for (int d = 0; d < r->p->node[nd->arg[0]].ndim; d++)
        bl->am[d] = bl->ash[bl->aperm[d]];
    for (int d = 0; d < r->p->node[nd->arg[1]].ndim; d++)
        bl->bm[d] = bl->bsh[bl->bperm[d]];
}

/* Bytes for the largest box (the node's chunk): each operand's block in
 * its dtype, permuted and converted, the product, and the operands' own
 * scratch one at a time. */
size_t ck_exec_contract_bytes(const xrun *r, int i, size_t n, int known,
                              int aligned)
{
    const ck_node *nd = &r->p->node[i];
    const ck_node *a = &r->p->node[nd->arg[0]], *b = &r->p->node[nd->arg[1]];
    int64_t zero[CK_MAX_DIMS] = {0}, tst[CK_MAX_DIMS] = {0},
            tsh[CK_MAX_DIMS] = {0};
    size_t cs = ck_dtype_size(nd->dtype), ea, eb, sa, sb;
    blocks bl;

    (void)n, (void)known, (void)aligned;
    t_box(nd, zero, nd->chunks, tst, tsh);
    make_blocks(r, nd, tst, tsh, &bl);
    if (nd->ncon > 0) {
        int64_t piece;
        int sp = split_pair(r, nd, &piece);
        cut_piece(r, nd, sp, 0, piece, a->shape[nd->con_a[sp]], &bl);
    }
    sa = (size_t)(bl.nb * bl.m * bl.k);
    sb = (size_t)(bl.nb * bl.k * bl.n);
    ea = ck_exec_eval_bytes(r, nd->arg[0], sa);
    eb = ck_exec_eval_bytes(r, nd->arg[1], sb);
    return 2 * ck_exec_al(sa * ck_dtype_size(a->dtype)) + ck_exec_al(sa * cs) +
           2 * ck_exec_al(sb * ck_dtype_size(b->dtype)) + ck_exec_al(sb * cs) +
           ck_exec_al((size_t)(bl.nb * bl.m * bl.n) * cs) +
           (ea > eb ? ea : eb) + 512;
}

/* One operand's block: evaluated, permuted to a matrix, converted. */
static ck_code operand_matrix(xrun *r, int arg, const int64_t *st,
                              const int64_t *sh, const int64_t *msh,
                              const int *perm, ck_dtype ct, void **out,
                              ck_arena *a, ck_err *err)
{
    const ck_node *m = &r->p->node[arg];
    size_t cnt = (size_t)ck_exec_nelem(m->ndim, sh),
           esz = ck_dtype_size(m->dtype);
    void *v = ck_arena_alloc(a, cnt * esz), *pv = ck_arena_alloc(a, cnt * esz);
    void *cv = m->dtype == ct ? pv : ck_arena_alloc(a, cnt * ck_dtype_size(ct));
    size_t mark;

    if (!v || !pv || !cv)
        return ck_exec_no_room(err);
    mark = a->used;
    CK_TRY(ck_exec_eval(r, arg, st, sh, v, a, err));
    a->used = mark;
    ck_exec_permute(m->ndim, esz, pv, msh, v, sh, perm);
    if (cv != pv)
        ck_dtype_convert(ct, cv, m->dtype, pv, cnt);
    *out = cv;
    return CK_OK;
}

ck_code ck_exec_contract_eval(xrun *r, int i, const int64_t *start,
                              const int64_t *shape, void *dst, ck_arena *a,
                              const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    int64_t tst[CK_MAX_DIMS] = {0}, tsh[CK_MAX_DIMS] = {0};
    size_t cs = ck_dtype_size(nd->dtype);
    int ident = 1;
    void *am, *bm, *c = dst;
    blocks bl;

    (void)mm;
    t_box(nd, start, shape, tst, tsh);
    make_blocks(r, nd, tst, tsh, &bl);
    if (bl.nb * bl.m * bl.n == 0)
        return CK_OK;
    for (int d = 0; d < nd->ndim; d++)
        ident &= nd->perm[d] == d;
    if (!ident && !(c = ck_arena_alloc(a, (size_t)(bl.nb * bl.m * bl.n) * cs)))
        return ck_exec_no_room(err);
    if (bl.k == 0) {
        memset(dst, 0, (size_t)(bl.nb * bl.m * bl.n) * cs);
        return CK_OK;
    }
    int64_t piece, full;
    int sp = split_pair(r, nd, &piece);
    full = nd->ncon ? r->p->node[nd->arg[0]].shape[nd->con_a[sp]] : 1;
    for (int64_t k0 = 0; k0 < full; k0 += piece) {
        blocks pb = bl;
        size_t mark = a->used;
        cut_piece(r, nd, sp, k0, full - k0 < piece ? full - k0 : piece, full,
                  &pb);
        CK_TRY(operand_matrix(r, nd->arg[0], pb.ast, pb.ash, pb.am, pb.aperm,
                              nd->dtype, &am, a, err));
        CK_TRY(operand_matrix(r, nd->arg[1], pb.bst, pb.bsh, pb.bm, pb.bperm,
                              nd->dtype, &bm, a, err));
        /* one gemm per batch index: the box's t values are (batch, free
         * a, free b) in C order; later pieces add to the first's */
        for (int64_t q = 0; q < pb.nb; q++) {
            ck_gemm_args g = {
                .dtype = nd->dtype,
                .m = pb.m,
                .n = pb.n,
                .k = pb.k,
                .alpha = 1,
                .beta = k0 == 0 ? 0 : 1,
                .a = (const char *)am + (size_t)(q * pb.m * pb.k) * cs,
                .lda = pb.k,
                .b = (const char *)bm + (size_t)(q * pb.k * pb.n) * cs,
                .ldb = pb.n,
                .c = (char *)c + (size_t)(q * pb.m * pb.n) * cs,
                .ldc = pb.n};
            CK_TRY(ck_op_gemm(&r->be, &g, err));
        }
        a->used = mark;
    }
    if (!ident)
        ck_exec_permute(nd->ndim, cs, dst, shape, c, tsh, nd->perm);
    return CK_OK;
}
