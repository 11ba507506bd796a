/*
 * pipelines/fuse.c - elementwise chains into programs (pipelines/fuse.h).
 * Each program mirrors the CPU executor's elementwise evaluation
 * (exec.c: ck_exec_ew_eval, ck_exec_astype_eval) step by step: operands
 * converted to the step's compute dtype (a where's condition to bool),
 * numbers converted from the float64 or int64 the file gave, the op in
 * the compute dtype giving the step's dtype.
 */
#include "pipelines/fuse.h"

#include <string.h>

static int fusable(const ck_node *n)
{
    return n->kind == CK_NODE_EW || n->kind == CK_NODE_ASTYPE;
}

/* One program being built: which steps are loaded as operands ('cut':
 * steps that are programs of their own), and each step's instruction. */
typedef struct builder {
    const ck_plan *p;
    const unsigned char *cut;
    int root;
    int at[CK_MAX_NODES]; /* step -> instruction, -1 before it is made */
    unsigned char inner[CK_MAX_NODES]; /* steps folded in */
    ck_fused *f;
    int over; /* too long for one program */
} builder;

static int add(builder *b, ck_ewp_ins in)
{
    ck_ew_prog *g = &b->f->prog;

    if (g->n >= CK_EWP_MAX_INS) {
        b->over = 1;
        return 0;
    }
    g->ins[g->n] = in;
    return g->n++;
}

static int cast(builder *b, int v, ck_dtype to)
{
    if (b->over || b->f->prog.ins[v].dtype == to)
        return v;
    return add(b, (ck_ewp_ins){.kind = CK_EWP_CAST, .dtype = to, .arg = {v}});
}

static int load(builder *b, int i)
{
    ck_ew_prog *g = &b->f->prog;
    const ck_node *m = &b->p->node[i];
    const ck_node *r = &b->p->node[b->root];

    if (g->nin >= CK_EWP_MAX_IN) {
        b->over = 1;
        return 0;
    }
    b->f->in_node[g->nin] = i;
    g->in[g->nin] = m->dtype;
    g->contiguous[g->nin] =
        m->ndim == r->ndim &&
        memcmp(m->shape, r->shape, sizeof(int64_t) * (size_t)r->ndim) == 0;
    return add(b, (ck_ewp_ins){.kind = CK_EWP_LOAD,
                               .dtype = m->dtype,
                               .input = g->nin++});
}

static int emit(builder *b, int i)
{
    const ck_node *n = &b->p->node[i];
    int v[3] = {0, 0, 0};

    if (b->over)
        return 0;
    if (b->at[i] >= 0)
        return b->at[i];
    if (!fusable(n) || (i != b->root && b->cut[i]))
        return b->at[i] = load(b, i);
    b->inner[i] = 1;
    if (n->kind == CK_NODE_ASTYPE)
        return b->at[i] = cast(b, emit(b, n->arg[0]), n->dtype);
    for (int k = 0; k < n->nargs && k < 3; k++) {
        ck_dtype want = n->ew == CK_EW_WHERE && k == 0 ? CK_BOOL : n->compute;
        if (n->arg[k] >= 0) {
            v[k] = cast(b, emit(b, n->arg[k]), want);
        } else {
            int c =
                add(b, (ck_ewp_ins){.kind = CK_EWP_CONST,
                                    .dtype = n->scalar_t[k] == CK_F64 ? CK_F64
                                                                      : CK_I64,
                                    .value = n->scalar[k]});
            v[k] = cast(b, c, want);
        }
    }
    return b->at[i] = add(b, (ck_ewp_ins){.kind = CK_EWP_OP,
                                          .dtype = n->dtype,
                                          .op = n->ew,
                                          .compute = n->compute,
                                          .arg = {v[0], v[1], v[2]}});
}

/* Builds the program rooted at 'root' into *f: 0, or 1 when it is too
 * long for one program.  *b keeps which steps it folded in. */
static int build(const ck_plan *p, const unsigned char *cut, int root,
                 ck_fused *f, builder *b)
{
    memset(b, 0, sizeof *b);
    memset(f, 0, sizeof *f);
    memset(b->at, -1, sizeof b->at);
    b->p = p;
    b->cut = cut;
    b->root = root;
    b->f = f;
    f->root = root;
    f->prog.ndim = p->node[root].ndim;
    f->prog.result = emit(b, root);
    for (int i = 0; i < p->n; i++)
        f->nsteps += b->inner[i];
    return b->over;
}

/* 1 if step i's values leave elementwise code (pipelines/fuse.h). */
static int is_root(const ck_plan *p, int i)
{
    int used = 0;

    if (!fusable(&p->node[i]))
        return 0;
    for (int k = 0; k < p->nout; k++)
        if (p->out[k].node == i)
            return 1;
    for (int k = 0; k < p->nprint; k++)
        if (p->print[k] == i)
            return 1;
    for (int j = 0; j < p->n; j++) {
        const ck_node *n = &p->node[j];
        int uses = n->kind == CK_NODE_HIST || n->kind == CK_NODE_HIST2D
                       ? n->weights == i
                       : 0;
        for (int k = 0; k < n->nargs; k++)
            uses |= n->arg[k] == i;
        if (uses && !fusable(n))
            return 1;
        used |= uses;
    }
    return !used;
}

void ck_fuse_plan(const ck_plan *p, ck_fusion *out)
{
    unsigned char cut[CK_MAX_NODES] = {0};
    static const ck_fused zero;
    builder b;

    for (int i = 0; i < p->n; i++)
        cut[i] = (unsigned char)is_root(p, i);
    /* Cut chains too long for one program until every one fits: each
     * round makes one more step a program of its own, and a single step
     * (at most three operands) always fits. */
    for (int again = 1; again;) {
        again = 0;
        for (int i = 0; i < p->n && !again; i++) {
            ck_fused f, g;
            builder bg;
            int best = -1, most = -1;
            if (!cut[i] || !build(p, cut, i, &f, &b))
                continue;
            for (int j = 0; j < p->n; j++) {
                if (j == i || !b.inner[j] || cut[j])
                    continue;
                int len =
                    build(p, cut, j, &g, &bg) ? CK_EWP_MAX_INS + 1 : g.prog.n;
                if (len > most) {
                    most = len;
                    best = j;
                }
            }
            if (best < 0)
                break; /* not reached: a lone step fits */
            cut[best] = 1;
            again = 1;
        }
    }
    out->n = 0;
    for (int i = 0; i < p->n; i++) {
        out->chain[i] = -1;
        if (!cut[i])
            continue;
        out->f[out->n] = zero;
        if (build(p, cut, i, &out->f[out->n], &b))
            continue; /* not reached: the loop above cut it to fit */
        out->chain[i] = out->n++;
    }
}

int64_t ck_fuse_device_bytes(const ck_plan *p, const ck_fusion *fz)
{
    int64_t most = 0;

    for (int k = 0; k < fz->n; k++) {
        const ck_fused *f = &fz->f[k];
        const ck_node *r = &p->node[f->root];
        int64_t box[CK_MAX_DIMS], n = 1, bytes;
        for (int d = 0; d < r->ndim; d++) {
            box[d] = r->chunks[d] < r->shape[d] ? r->chunks[d] : r->shape[d];
            n *= box[d];
        }
        bytes = n * (int64_t)ck_dtype_size(r->dtype);
        for (int j = 0; j < f->prog.nin; j++) {
            const ck_node *m = &p->node[f->in_node[j]];
            int off = r->ndim - m->ndim;
            int64_t mn = 1;
            for (int d = 0; d < m->ndim; d++)
                mn *= m->shape[d] == 1 ? 1 : box[d + off];
            bytes += mn * (int64_t)ck_dtype_size(m->dtype);
        }
        if (2 * bytes > most)
            most = 2 * bytes;
    }
    return most;
}
