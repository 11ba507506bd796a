/*
 * ops/glm.c - the GLM solvers of ops/glm.h and the per-block sums they run
 * on.  The solvers never see rows: every look at the data is one call of
 * the caller's pass function, so what is counted (and kept small) is the
 * number of passes.  All dense algebra (X w, X^T r, the Hessian's syrk,
 * the Newton systems) goes through the backend wrappers of ops/linalg.h.
 *
 * Notation below: S(b) is the mean loss the pass returns, R(b) = lambda *
 * P(w) the penalty, lam1 and lam2 the weights of |w|_1 and |w|^2 / 2 in R
 * (l1: lambda, 0; l2: 0, lambda; elastic_net: lambda * l1_ratio,
 * lambda * (1 - l1_ratio)).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/glm.h"
#include "ops/linalg.h"

/* ---- names ---- */

static const char *const family_names[] = {
    [CK_GLM_NORMAL] = "normal",
    [CK_GLM_LOGISTIC] = "logistic",
    [CK_GLM_POISSON] = "poisson",
};
static const char *const solver_names[] = {
    [CK_GLM_NEWTON] = "newton",
    [CK_GLM_LBFGS] = "lbfgs",
    [CK_GLM_GRADIENT_DESCENT] = "gradient_descent",
    [CK_GLM_PROXIMAL_GRAD] = "proximal_grad",
    [CK_GLM_ADMM] = "admm",
};
static const char *const reg_names[] = {
    [CK_GLM_REG_NONE] = "none",
    [CK_GLM_REG_L1] = "l1",
    [CK_GLM_REG_L2] = "l2",
    [CK_GLM_REG_ELASTIC_NET] = "elastic_net",
};

#define N_FAMILIES (sizeof family_names / sizeof family_names[0])
#define N_SOLVERS (sizeof solver_names / sizeof solver_names[0])
#define N_REGS (sizeof reg_names / sizeof reg_names[0])

static const char *name_of(const char *const *names, size_t n, unsigned i)
{
    return i < n ? names[i] : "unknown";
}

static int lookup(const char *const *names, size_t n, const char *name,
                  unsigned *out)
{
    if (!name)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], name) == 0) {
            *out = (unsigned)i;
            return 1;
        }
    }
    return 0;
}

const char *ck_glm_family_name(ck_glm_family f)
{
    return name_of(family_names, N_FAMILIES, (unsigned)f);
}

const char *ck_glm_solver_name(ck_glm_solver s)
{
    return name_of(solver_names, N_SOLVERS, (unsigned)s);
}

const char *ck_glm_reg_name(ck_glm_reg r)
{
    return name_of(reg_names, N_REGS, (unsigned)r);
}

int ck_glm_family_lookup(const char *name, ck_glm_family *f)
{
    unsigned i;

    if (!lookup(family_names, N_FAMILIES, name, &i))
        return 0;
    *f = (ck_glm_family)i;
    return 1;
}

int ck_glm_solver_lookup(const char *name, ck_glm_solver *s)
{
    unsigned i;

    if (!lookup(solver_names, N_SOLVERS, name, &i))
        return 0;
    *s = (ck_glm_solver)i;
    return 1;
}

int ck_glm_reg_lookup(const char *name, ck_glm_reg *r)
{
    unsigned i;

    if (!lookup(reg_names, N_REGS, name, &i))
        return 0;
    *r = (ck_glm_reg)i;
    return 1;
}

/* ---- options ---- */

static int smooth_only(ck_glm_solver s)
{
    return s == CK_GLM_NEWTON || s == CK_GLM_LBFGS ||
           s == CK_GLM_GRADIENT_DESCENT;
}

ck_code ck_glm_check(const ck_glm_opts *o, ck_err *err)
{
    if ((unsigned)o->family >= N_FAMILIES)
        return ck_err_set(err, CK_EUSAGE, "glm: unknown family %d",
                          (int)o->family);
    if ((unsigned)o->solver >= N_SOLVERS)
        return ck_err_set(err, CK_EUSAGE, "glm: unknown solver %d",
                          (int)o->solver);
    if ((unsigned)o->reg >= N_REGS)
        return ck_err_set(err, CK_EUSAGE, "glm: unknown regularizer %d",
                          (int)o->reg);
    if (!(o->lambda >= 0) || !isfinite(o->lambda))
        return ck_err_set(err, CK_EUSAGE,
                          "glm: lambda must be a finite number >= 0, got %g",
                          o->lambda);
    if (!(o->l1_ratio >= 0 && o->l1_ratio <= 1))
        return ck_err_set(err, CK_EUSAGE,
                          "glm: l1_ratio must be in [0, 1], got %g",
                          o->l1_ratio);
    if (o->max_iter < 0)
        return ck_err_set(err, CK_EUSAGE,
                          "glm: max_iter must be >= 0 (0: the solver's "
                          "default), got %d",
                          o->max_iter);
    if (!(o->tol >= 0) || !isfinite(o->tol))
        return ck_err_set(err, CK_EUSAGE,
                          "glm: tol must be a finite number >= 0 (0: the "
                          "default), got %g",
                          o->tol);
    /* Dask-GLM lets lbfgs run on an l1 penalty and fails at beta = 0,
     * where |w|_1 has no gradient; refusing is clearer than a wrong fit. */
    if (smooth_only(o->solver) && o->reg == CK_GLM_REG_L1)
        return ck_err_set(err, CK_EUSAGE,
                          "glm: solver %s needs a smooth objective, but the "
                          "l1 penalty is not differentiable at 0: use "
                          "proximal_grad or admm",
                          ck_glm_solver_name(o->solver));
    if (smooth_only(o->solver) && o->reg == CK_GLM_REG_ELASTIC_NET &&
        o->l1_ratio > 0)
        return ck_err_set(err, CK_EUSAGE,
                          "glm: solver %s needs a smooth objective, but "
                          "elastic_net with l1_ratio %g > 0 is not "
                          "differentiable at 0: use proximal_grad or admm",
                          ck_glm_solver_name(o->solver), o->l1_ratio);
    if (o->std_errors && o->lambda > 0 && o->reg != CK_GLM_REG_NONE)
        return ck_err_set(err, CK_EUSAGE,
                          "glm: standard errors are the maximum-likelihood "
                          "fit's: they need no penalty (regularizer none, or "
                          "lambda 0)");
    return CK_OK;
}

/* ---- one block of rows ---- */

/* Rows per tile: a block is worked through in tiles small enough to stay
 * in the core's cache (512 rows of 100 features: 400 KB) between the
 * products that read it, so each pass reads x from memory once. */
enum { GLM_TILE = 512 };

/* Rows per tile: GLM_TILE on the CPU; the whole block where gemm runs on
 * a device, whose calls cost a round trip each. */
static int64_t tile_rows(const ck_be *be, int64_t rows)
{
    int64_t t = ck_be_gemm_on_device(be) ? rows : GLM_TILE;
    return rows < t ? rows : t;
}

size_t ck_glm_block_scratch(const ck_be *be, int64_t rows, int64_t p)
{
    /* per tile: eta (then mu - y), the variance weights, the rows
     * scaled by sqrt(w) for the Hessian's syrk (then X^T w), and the
     * rows less the center */
    if (rows < 0 || p < 0)
        return 0;
    return (size_t)tile_rows(be, rows) * (size_t)(2 * p + 3);
}

/* out = op(x) v + beta out for rows x p row-major x (key: its operand
 * key): x v (rows values) or, with trans, x^T v (p values). */
static ck_code xv(const ck_be *be, int trans, const double *x, int64_t rows,
                  int64_t p, uint64_t key, const double *v, double beta,
                  double *out, ck_err *err)
{
    if ((trans ? p : rows) == 0) /* nothing out; k = 0 gives beta out */
        return CK_OK;
    ck_gemm_args g = {.dtype = CK_F64,
                      .trans_a = trans,
                      .m = trans ? p : rows,
                      .n = 1,
                      .k = trans ? rows : p,
                      .alpha = 1,
                      .beta = beta,
                      .a = x,
                      .lda = p,
                      .b = v,
                      .ldb = 1,
                      .c = out,
                      .ldc = 1,
                      .a_key = key};
    return ck_op_gemm(be, &g, err);
}

/* eta = x w + c for rows x p row-major x. */
static ck_code linear(const ck_be *be, const double *x, int64_t rows, int64_t p,
                      uint64_t key, const double *w, double c, double *eta,
                      ck_err *err)
{
    for (int64_t i = 0; i < rows; i++)
        eta[i] = c;
    return xv(be, 0, x, rows, p, key, w, 1, eta, err);
}

/* The three families' loss, mean and variance weight at eta. */
static void unit(ck_glm_family f, double eta, double y, double *loss,
                 double *mu, double *w)
{
    switch (f) {
    case CK_GLM_NORMAL:
        *loss = 0.5 * (y - eta) * (y - eta);
        *mu = eta;
        *w = 1;
        break;
    case CK_GLM_LOGISTIC: {
        /* log(1 + exp(eta)) = log1p(exp(-|eta|)) + max(eta, 0): no
         * overflow for large |eta|, no cancellation for small */
        double e = exp(-fabs(eta));
        *loss = log1p(e) + (eta > 0 ? eta : 0) - y * eta;
        *mu = eta >= 0 ? 1 / (1 + e) : e / (1 + e);
        *w = e / ((1 + e) * (1 + e));
        break;
    }
    case CK_GLM_POISSON:
        /* exp may overflow to inf: the loss is then inf, and the
         * solvers' line searches reject the step */
        *mu = exp(eta);
        *loss = *mu - y * eta;
        *w = *mu;
        break;
    }
}

/* One tile of rows (at most GLM_TILE): sums into loss, grad, hess. */
static ck_code tile(const ck_be *be, const ck_glm_opts *o, const double *x,
                    const double *y, int64_t rows, int64_t p, uint64_t key,
                    const double *b, const double *center, double *loss,
                    double *grad, double *hess, double *scratch, ck_err *err)
{
    int fi = o->fit_intercept != 0;
    int64_t d = p + fi;
    double *r = scratch, *wt = scratch + rows, *xs = wt + rows;
    double lsum = 0, rsum = 0;

    if (center) {
        /* the products on x less the center: sums of the centered
         * columns' products, not differences of the raw ones' */
        double *xc = xs + rows * p;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < p; j++)
                xc[i * p + j] = x[i * p + j] - center[j];
        x = xc;
        key = 0;
    }

    CK_TRY(linear(be, x, rows, p, key, b, fi ? b[p] : 0, r, err));
    for (int64_t i = 0; i < rows; i++) {
        double l, mu, w;
        unit(o->family, r[i], y[i], &l, &mu, &w);
        lsum += l;
        r[i] = mu - y[i];
        rsum += r[i];
        wt[i] = w;
    }
    if (loss)
        *loss += lsum;
    if (grad)
        CK_TRY(xv(be, 1, x, rows, p, key, r, 1, grad, err));
    if (grad && fi)
        grad[p] += rsum;
    if (!hess)
        return CK_OK;
    /* X^T W X (the backend scales X's rows, which a device may hold
     * already), then the intercept's row and column: X^T w, sum w */
    ck_syrk_args sy = {.n = p,
                       .k = rows,
                       .alpha = 1,
                       .beta = 1,
                       .a = x,
                       .lda = p,
                       .c = hess,
                       .ldc = d,
                       .w = wt,
                       .work = xs,
                       .a_key = key};
    if (p > 0)
        CK_TRY(ck_op_syrk(be, &sy, err));
    if (!fi)
        return CK_OK;
    double wsum = 0;
    for (int64_t i = 0; i < rows; i++)
        wsum += wt[i];
    CK_TRY(xv(be, 1, x, rows, p, key, wt, 0, xs, err));
    for (int64_t j = 0; j < p; j++) {
        hess[j * d + p] += xs[j];
        hess[p * d + j] += xs[j];
    }
    hess[p * d + p] += wsum;
    return CK_OK;
}

ck_code ck_glm_block(const ck_be *be, const ck_glm_opts *o, const double *x,
                     const double *y, int64_t rows, int64_t p, uint64_t key,
                     const double *b, const double *center, double *loss,
                     double *grad, double *hess, double *scratch, ck_err *err)
{
    if ((unsigned)o->family >= N_FAMILIES)
        return ck_err_set(err, CK_EUSAGE, "glm: unknown family %d",
                          (int)o->family);
    if (rows < 0 || p < 0)
        return ck_err_set(err, CK_EUSAGE,
                          "glm: block of %lld rows x %lld features",
                          (long long)rows, (long long)p);
    int64_t tr = tile_rows(be, rows);
    for (int64_t i = 0; i < rows; i += tr) {
        int64_t t = rows - i < tr ? rows - i : tr;
        CK_TRY(tile(be, o, x + i * p, y + i, t, p, ck_be_key_add(key, i), b,
                    center, loss, grad, hess, scratch, err));
    }
    return CK_OK;
}

/* ---- predictions and responses ---- */

void ck_glm_col_moments(const double *x, int64_t rows, int64_t p,
                        const double *center, double *sq)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < p; j++) {
            double v = x[i * p + j] - (center ? center[j] : 0);
            sq[j] += v;
            sq[p + j] += v * v;
        }
}

int64_t ck_glm_bad_y(ck_glm_family f, const double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double v = y[i];
        if (!isfinite(v))
            return i;
        if (f == CK_GLM_LOGISTIC && v != 0 && v != 1)
            return i;
        if (f == CK_GLM_POISSON && v < 0)
            return i;
    }
    return -1;
}

ck_code ck_glm_predict(const ck_be *be, ck_glm_family f, const double *x,
                       int64_t rows, int64_t p, const double *w, double c,
                       double *out, ck_err *err)
{
    if ((unsigned)f >= N_FAMILIES)
        return ck_err_set(err, CK_EUSAGE, "glm: unknown family %d", (int)f);
    if (rows < 0 || p < 0)
        return ck_err_set(err, CK_EUSAGE,
                          "glm: predict on %lld rows x %lld features",
                          (long long)rows, (long long)p);
    CK_TRY(linear(be, x, rows, p, 0, w, c, out, err));
    for (int64_t i = 0; i < rows; i++) {
        double l, mu, wv;
        unit(f, out[i], 0, &l, &mu, &wv);
        out[i] = mu;
    }
    return CK_OK;
}

/* ---- the solvers' shared machinery ---- */

enum {
    LBFGS_MEM = 10,      /* (s, y) pairs kept */
    MAX_HALVINGS = 60,   /* a line search gives up after 2^-60 */
    ADMM_SUB_NEWTON = 20 /* Newton steps per ADMM b-update, at most */
};

/* Steps of gradient descent and proximal_grad start each iteration at the
 * last accepted step times GROW, so a step cut short by a bad region grows
 * back where the curvature is milder. */
static const double GROW = 1.25;

/* A cap on those steps: where the loss is nearly linear (separable
 * classes) the accepted step keeps growing, and an infinite one would
 * turn b into nan. */
static const double MAX_STEP = 1e20;

/* Two objective values closer than NOISE * (1 + |f|) are not told apart:
 * a mean over many rows is only that accurate, and near the optimum the
 * decrease a line search looks for is far below it.  There the step is
 * judged by the directional derivative at the trial point instead, which
 * has no such cancellation (Hager and Zhang's approximate Wolfe test). */
static const double NOISE = 1e-10;

/* The solvers work on x's columns scaled to unit mean square, so that
 * nothing they do (the convergence test above all) depends on the units
 * of x: a column of values near 1e-8 whose coefficient is near 1e8 is
 * fitted as a column near 1 with a coefficient near 1.  With s_j the
 * root mean square of column j (1 for the intercept, and for a column
 * whose mean square is 0 or not finite), the solvers' parameters are
 * b'_j = s_j b_j, their gradient g_j / s_j and their Hessian
 * h_ij / (s_i s_j); the penalty stays the user's, lam1 |b'_j| / s_j and
 * lam2 (b'_j / s_j)^2 / 2.  The mean squares come with the first pass
 * (start), so scaling costs no pass. */
typedef struct colscale {
    int known;
    double *s, *is; /* d: s_j and 1 / s_j */
    /* p: the columns' means, where the first pass found a column whose
     * mean is large beside its spread (CENTER_AT), with an intercept; else
     * NULL.  The solvers' intercept is then c' = c + m.w, the passes are
     * on x - m, and s_j is the root mean square of x_j - m_j (its
     * standard deviation) */
    double *m;
    /* the convergence test's scale (tolerance): tol times this */
    double gs;
    double *ub;   /* 2 d: a pass's parameters in the user's units */
    double *mbuf; /* p: m's room */
} colscale;

typedef struct glm {
    const ck_be *be;
    ck_glm_pass_fn pass;
    void *ctx;
    int64_t p, d;
    int fi;
    double lam1, lam2;
    double tol;
    int max_iter;
    /* newton, lbfgs: the start's Hessian estimate, or NULL (the user's
     * units: scaled where it is used; a copy, moved to the fit's center
     * by its first pass), and the center its maker's fit used, or NULL */
    double *h0;
    const double *h0_center;
    colscale *sc;
} glm;

/* A smooth objective built on S: S(b) + l2 |w|^2 / 2 + rho |b - v|^2 / 2.
 * The smooth-only solvers carry the l2 penalty in it; ADMM's b-update the
 * proximal term. */
typedef struct smooth {
    double l2;
    double rho;
    const double *v;
} smooth;

/* What one pass returned at b: the mean loss, its gradient, its Hessian
 * (h NULL where the solver needs none). */
typedef struct point {
    double *b, *g, *h;
    double loss;
} point;

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* The largest |v_i|; NaN if any entry is NaN, so that it never passes for
 * convergence. */
static double inf_norm(const double *v, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = fabs(v[i]);
        if (!(a <= m))
            m = a;
    }
    return m;
}

/* The convergence tolerance, in the gradient's units: tol times gs, the
 * gradient's largest entry at the start times GS_REL, at least 1.  The
 * gradient scales with y (normal's residuals, poisson's counts), and a
 * mean over many rows is accurate only to rounding at y's size, so a tol
 * absolute in y's units cannot be met where y is large (1e10): there the
 * test is relative to the start, asking tol * GS_REL (1e-12 by default)
 * of the start's gradient, well above the sums' rounding (~1e-15) and as
 * tight as the absolute test was where the two meet.  Where the start's
 * gradient is below 1 / GS_REL (logistic always, y of moderate size) it
 * is tol, as before. */
static const double GS_REL = 1e-4;

static double tolerance(const glm *G)
{
    return G->tol * G->sc->gs;
}

static double noise(double f)
{
    return NOISE * (1 + fabs(f));
}

/* h (d x d) = D h D, D = diag(v): the Hessian between the units. */
static void scale_h(int64_t d, const double *v, double *h)
{
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j < d; j++)
            h[i * d + j] *= v[i] * v[j];
}

/* One pass at b (scaled), its results scaled. */
static ck_code look(const glm *G, const double *b, double *loss, double *grad,
                    double *hess, ck_err *err)
{
    const colscale *sc = G->sc;

    for (int64_t j = 0; j < G->d; j++)
        sc->ub[j] = b[j] * sc->is[j];
    CK_TRY(G->pass(G->ctx, sc->ub, sc->m, loss, grad, hess, NULL, err));
    for (int64_t j = 0; grad && j < G->d; j++)
        grad[j] *= sc->is[j];
    if (hess)
        scale_h(G->d, sc->is, hess);
    return CK_OK;
}

static ck_code eval(const glm *G, point *pt, ck_err *err)
{
    return look(G, pt->b, &pt->loss, pt->g, pt->h, err);
}

/* The penalty's weights on b'_j: lam1 and lam2 times these. */
static double w1(const glm *G, int64_t j)
{
    return G->sc->is[j];
}

static double w2(const glm *G, int64_t j)
{
    return G->sc->is[j] * G->sc->is[j];
}

static double penalty(const glm *G, const double *b)
{
    double a = 0, q = 0;
    for (int64_t j = 0; j < G->p; j++) {
        a += fabs(b[j]) * w1(G, j);
        q += b[j] * b[j] * w2(G, j);
    }
    return G->lam1 * a + 0.5 * G->lam2 * q;
}

/* g = the gradient of the smooth objective q at pt; returns its value. */
static double compose(const glm *G, const smooth *q, const point *pt, double *g)
{
    double f = pt->loss, ww = 0, r2 = 0;

    memcpy(g, pt->g, (size_t)G->d * sizeof *g);
    if (q->l2 != 0) {
        for (int64_t j = 0; j < G->p; j++) {
            ww += pt->b[j] * pt->b[j] * w2(G, j);
            g[j] += q->l2 * pt->b[j] * w2(G, j);
        }
        f += 0.5 * q->l2 * ww;
    }
    if (q->rho != 0) {
        for (int64_t i = 0; i < G->d; i++) {
            double e = pt->b[i] - q->v[i];
            r2 += e * e;
            g[i] += q->rho * e;
        }
        f += 0.5 * q->rho * r2;
    }
    return f;
}

/* The optimality measure of ops/glm.h at b, given the loss gradient gl
 * there (both scaled): the largest entry of the subdifferential's element
 * of least norm.  For a coefficient at 0 that is max(|g_j| - lam1, 0);
 * elsewhere |g_j + lam1 sign(w_j)|, lam1 with coefficient j's weight; the
 * intercept is not penalised.  With lam1 = 0 it is the gradient's largest
 * entry. */
static double opt_measure(const glm *G, const double *b, const double *gl)
{
    double m = 0;

    for (int64_t j = 0; j < G->d; j++) {
        double g = gl[j];
        if (j < G->p) {
            double l1 = G->lam1 * w1(G, j);
            g += G->lam2 * w2(G, j) * b[j];
            if (b[j] > 0)
                g += l1;
            else if (b[j] < 0)
                g -= l1;
            else
                g = fabs(g) > l1 ? fabs(g) - l1 : 0;
        }
        if (!(fabs(g) <= m))
            m = fabs(g);
    }
    return m;
}

/* The proximal operator of t * R, in place: soft-threshold by t * lam1,
 * then shrink by 1 / (1 + t * lam2), each with coefficient j's weights
 * (w1, w2: R is the user's penalty, in the scaled parameters).
 * (Dask-GLM's elastic-net prox returns beta unchanged; this one is the
 * prox of the sum, which for these two separable terms is the
 * composition above.)  The intercept is left alone. */
static void prox(const glm *G, double t, double *b)
{
    for (int64_t j = 0; j < G->p; j++) {
        double a = t * G->lam1 * w1(G, j);
        double s = 1 / (1 + t * G->lam2 * w2(G, j));
        double v = b[j];
        v = v > a ? v - a : v < -a ? v + a : 0;
        b[j] = v * s;
    }
}

/* Armijo's sufficient decrease f(a) <= f0 + c a g0.dir, or, where the
 * values are within noise of each other, the directional derivative at
 * the trial point no larger than (1 - 2c) times the decrease rate at 0
 * (for a quadratic the two tests accept the same steps).  dec = a g0.dir
 * (< 0), dnew = a g(a).dir. */
static int accept_step(double f0, double ft, double dec, double dnew, double c)
{
    if (!isfinite(ft) || !isfinite(dnew))
        return 0;
    if (ft <= f0 + c * dec)
        return 1;
    return ft <= f0 + noise(f0) && dnew <= (1 - 2 * c) * -dec;
}

/* Backtracking line search for the smooth objective q from cur (value f0,
 * gradient g0) along dir, first step a, halving until accept_step.  On
 * success *ok = 1, tr holds the pass at the accepted point, *ft and gt
 * the objective and gradient there, *astep the step.  *ok = 0 when dir
 * does not descend or no step changed b before MAX_HALVINGS. */
static ck_code search(const glm *G, const smooth *q, const point *cur,
                      double f0, const double *g0, const double *dir, double a,
                      double c, point *tr, double *ft, double *gt,
                      double *astep, int *ok, ck_err *err)
{
    double slope = dot(g0, dir, G->d);

    *ok = 0;
    if (!(slope < 0))
        return CK_OK;
    for (int k = 0; k < MAX_HALVINGS; k++, a *= 0.5) {
        int moved = 0;
        for (int64_t i = 0; i < G->d; i++) {
            tr->b[i] = cur->b[i] + a * dir[i];
            moved |= tr->b[i] != cur->b[i];
        }
        if (!moved)
            return CK_OK;
        CK_TRY(eval(G, tr, err));
        if (!isfinite(tr->loss))
            continue;
        *ft = compose(G, q, tr, gt);
        if (accept_step(f0, *ft, a * slope, a * dot(gt, dir, G->d), c)) {
            *ok = 1;
            *astep = a;
            return CK_OK;
        }
    }
    return CK_OK;
}

static void swap_points(point *a, point *b)
{
    point t = *a;
    *a = *b;
    *b = t;
}

static void swap_vecs(double **a, double **b)
{
    double *t = *a;
    *a = *b;
    *b = t;
}

/* dir = -(h + l2 I_w + rho I)^-1 g by Cholesky (posv); a is d x d
 * scratch.  *not_pd as posv reports it. */
static ck_code newton_dir(const glm *G, const smooth *q, const double *h,
                          const double *g, double *a, double *dir, int *not_pd,
                          ck_err *err)
{
    int64_t d = G->d;

    /* h is symmetric, so row-major is column-major */
    memcpy(a, h, (size_t)(d * d) * sizeof *a);
    for (int64_t i = 0; i < d; i++) {
        a[i * d + i] += q->rho;
        if (i < G->p)
            a[i * d + i] += q->l2 * w2(G, i);
        dir[i] = -g[i];
    }
    ck_posv_args pa = {.n = d, .nrhs = 1, .a = a, .b = dir};
    CK_TRY(ck_op_posv(G->be, &pa, err));
    *not_pd = pa.not_pd;
    return CK_OK;
}

static ck_code singular(ck_err *err)
{
    return ck_err_set(err, CK_ENOTSUP,
                      "glm: newton: x is rank deficient, so the hessian is "
                      "singular (add an l2 penalty or drop collinear "
                      "columns)");
}

/* Is h (d x d) numerically singular?  Cholesky can succeed on an
 * exactly singular matrix with a pivot of rounding size, so h is judged
 * by its singular values after scaling to unit diagonal (so that column
 * scale does not count): smallest <= d * 64 * eps * largest,
 * numpy.linalg.matrix_rank's rule with some headroom; a diagonal entry
 * that is not positive is singular too.  a, u, vt (d x d) and s (d) are
 * scratch; vt may be h itself, which is not read past the scaling. */
static ck_code rank_deficient(const ck_be *be, int64_t d, const double *h,
                              double *a, double *s, double *u, double *vt,
                              int *def, ck_err *err)
{
    *def = 1;
    for (int64_t i = 0; i < d * d; i++)
        if (!isfinite(h[i]))
            return ck_err_set(err, CK_EFORMAT,
                              "glm: the hessian is not finite: x's values "
                              "are too large (their squares overflow); "
                              "rescale x");
    for (int64_t i = 0; i < d; i++)
        if (!(h[i * d + i] > 0))
            return CK_OK;
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j < d; j++)
            a[i * d + j] = h[i * d + j] / sqrt(h[i * d + i] * h[j * d + j]);
    ck_svd_args sa = {.m = d,
                      .n = d,
                      .a = a,
                      .lda = d,
                      .s = s,
                      .u = u,
                      .ldu = d,
                      .vt = vt,
                      .ldvt = d};
    CK_TRY(ck_op_svd(be, &sa, err));
    *def = s[d - 1] <= s[0] * (double)d * 64 * DBL_EPSILON;
    return CK_OK;
}

/* newton's first Hessian: at the start the variance weights are constant
 * across rows (mu is the same for every row), so its rank is that of the
 * columns of x.  h is overwritten; s (d) and u (d x d) are scratch. */
static ck_code rank_check(const glm *G, double *h, double *a, double *s,
                          double *u, ck_err *err)
{
    int def;

    CK_TRY(rank_deficient(G->be, G->d, h, a, s, u, h, &def, err));
    return def ? singular(err) : CK_OK;
}

/* Quasi-complete separation: a direction u along which the mean loss f
 * never rises, because every row it moves is fitted ever better (the
 * classes separated there) while the other rows do not move: the
 * coefficients grow along u without bound, the gradient underflows, and
 * a solver stops "converged" (or newton meets a singular Hessian).
 * h (the Hessian at b or near it) is nearly singular along such a u:
 *  - where h's smallest singular value predicts a clear rise in every
 *    direction (0.5 s_min |b|^2 above f / 1000, s_min above 1e-6 s_max:
 *    the usual case) there is no u;
 *  - else, with G = X^T X / n (the Hessian at b = 0 over its constant
 *    weight, 1/4 for logistic and 1 for poisson; one pass) and D its
 *    diagonal's inverse square root (the columns' scales), u is D times
 *    the smallest singular vector of D h D, and u h u over u G u is the
 *    mean variance weight of the rows u moves: near 0 where they are all
 *    saturated (logistic: 4 p (1 - p) below 1e-5, past a margin of ~13;
 *    poisson: mu below 1e-5 of the rows' mean), the usual weight where u
 *    is merely weak (nearly collinear columns, whose optimum can lie far
 *    out but is finite); u G u itself (D G D has a unit diagonal) near 0
 *    is x's columns dependent along u, which then moves no row;
 *  - and the loss, probed at b +- |D^-1 b| u, does not rise on one side
 *    (within rounding).
 * *lead gets the largest entry of u's scaled form. */
static ck_code recession(const glm *G, ck_glm_family fam, const double *b,
                         double f, const double *h, int *found, int64_t *lead,
                         ck_err *err)
{
    int64_t d = G->d;
    size_t mn = (size_t)(d * d);
    double *a = calloc(4 * mn + 4 * (size_t)d, sizeof *a);
    ck_code rc = CK_OK;

    *found = 0;
    if (!a)
        return ck_err_set(err, CK_ENOMEM, "glm: out of memory");
    double *vt = a + mn, *us = vt + mn, *g0 = us + mn, *s = g0 + mn;
    double *bp = s + d, *u = bp + d, *dsc = u + d, f0;
    ck_svd_args sa = {.m = d,
                      .n = d,
                      .a = a,
                      .lda = d,
                      .s = s,
                      .u = us,
                      .ldu = d,
                      .vt = vt,
                      .ldvt = d,
                      .no_u = 1};
    double sc = sqrt(dot(b, b, d));
    sc = sc > 1 ? sc : 1;
    memcpy(a, h, mn * sizeof *a);
    if ((rc = ck_op_svd(G->be, &sa, err)) != CK_OK ||
        (0.5 * s[d - 1] * sc * sc > 1e-3 * f && s[d - 1] > 1e-6 * s[0]))
        goto out;
    /* bp is all zeros here: the Hessian at 0, and the columns' scales */
    if ((rc = look(G, bp, &f0, NULL, g0, err)) != CK_OK)
        goto out;
    for (int64_t i = 0; i < d; i++)
        dsc[i] = g0[i * d + i] > 0 ? 1 / sqrt(g0[i * d + i]) : 1;
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j < d; j++)
            a[i * d + j] = dsc[i] * h[i * d + j] * dsc[j];
    if ((rc = ck_op_svd(G->be, &sa, err)) != CK_OK)
        goto out;
    /* vt is column-major: its last row is the smallest value's vector */
    *lead = 0;
    sc = 0;
    for (int64_t j = 0; j < d; j++) {
        u[j] = dsc[j] * vt[(d - 1) + j * d];
        if (fabs(vt[(d - 1) + j * d]) > fabs(vt[(d - 1) + *lead * d]))
            *lead = j;
        sc += b[j] / dsc[j] * (b[j] / dsc[j]);
    }
    sc = sqrt(sc) > 1 ? sqrt(sc) : 1;
    double uhu = 0, ugu = 0;
    for (int64_t i = 0; i < d; i++) {
        double hu = 0, gu = 0;
        for (int64_t j = 0; j < d; j++) {
            hu += h[i * d + j] * u[j];
            gu += g0[i * d + j] * u[j];
        }
        uhu += u[i] * hu;
        ugu += u[i] * gu;
    }
    /* the rows' mean weight, over G's: with an intercept its own entry */
    double w_all = G->fi ? h[mn - 1] / g0[mn - 1] : 1;
    /* u G u is below 1 by little where u moves rows; near 0 where x's
     * columns are dependent along u, which moves no row: not separation
     * (rank deficiency, a fault of its own) */
    if (!(ugu > 1e-8))
        goto out;
    double w_u = uhu / ugu;
    if (!(fam == CK_GLM_LOGISTIC || !G->fi ? w_u < 1e-5 : w_u < 1e-5 * w_all))
        goto out;
    for (int side = -1; side <= 1 && !*found && rc == CK_OK; side += 2) {
        double fp;
        for (int64_t j = 0; j < d; j++)
            bp[j] = b[j] + side * sc * u[j];
        if ((rc = look(G, bp, &fp, NULL, NULL, err)) == CK_OK)
            *found = fp <= f + 1e-10 * f;
    }
out:
    free(a);
    return rc;
}

/* The solvers' common result: the iterate, and the objective there. */
typedef struct outcome {
    int iterations, converged;
    double objective;
    double *h;     /* newton: the last Hessian, malloc'd */
    int h_exact;   /* ... computed at the b returned */
    int bad_start; /* the loss was not finite at the start */
    int not_pd_it; /* newton: the Hessian was singular at this iteration */
} outcome;

static double *take(double **ws, size_t n)
{
    double *r = *ws;
    *ws += n;
    return r;
}

/* The first pass centers x's columns (colscale.m) where a column's mean
 * square is above CENTER_AT times its variance (its mean above about 4
 * standard deviations): the Hessian's sums of raw products then differ
 * from the centered ones by a term (CENTER_AT - 1 times or more) larger
 * than them, and cancel as the solvers work.  At an offset of 1e6 on a
 * spread of 1 (a year, a timestamp) twelve digits of sixteen are lost,
 * newton finds the Hessian singular and the first-order solvers stall
 * far from the optimum.  Centering costs one pass, at the start, and
 * only there. */
static const double CENTER_AT = 16;

/* H (d x d, in w and the intercept c_a = c + a.w) in w and c_b = c + b.w
 * instead, where delta = a - b (p entries, d = p + 1): c_a = c_b +
 * delta.w, so H is taken through J = [I 0; delta' 1], J' H J. */
static void recenter_h(int64_t p, const double *delta, double *h)
{
    int64_t d = p + 1;
    double hc = h[p * d + p];

    for (int64_t i = 0; i < p; i++)
        for (int64_t j = 0; j < p; j++)
            h[i * d + j] += delta[i] * h[p * d + j] + h[i * d + p] * delta[j] +
                            hc * delta[i] * delta[j];
    for (int64_t i = 0; i < p; i++) {
        h[i * d + p] += hc * delta[i];
        h[p * d + i] = h[i * d + p];
    }
}

/* The start's Hessian estimate, from its maker's center to this fit's
 * (either may be none: 0). */
static void h0_recenter(const glm *G)
{
    const double *a = G->h0_center, *m = G->sc->m;
    double *delta = G->sc->ub;

    if (!G->h0 || !G->fi || (!a && !m))
        return;
    for (int64_t j = 0; j < G->p; j++)
        delta[j] = (a ? a[j] : 0) - (m ? m[j] : 0);
    recenter_h(G->p, delta, G->h0);
}

/* Evaluates the starting point pt->b, given in the user's units, and
 * leaves it in the scaled ones.  The fit's first pass also sums the
 * columns and their squares, which set the center (CENTER_AT) and the
 * scale (struct colscale); a centered fit evaluates its start again, on
 * x less the center.  A loss that is not finite there is the data's
 * fault (inf or nan in x, or y outside the family's domain) or, from a
 * given start, a start too far out (poisson's exp overflowing). */
static ck_code start(const glm *G, point *pt, outcome *out, ck_err *err)
{
    colscale *sc = G->sc;
    int64_t big = -1, p = G->p; /* big: a column whose squares overflowed */

    if (!sc->known) {
        double *mo = sc->ub; /* the p means, then the p mean squares */
        int centre = 0;
        CK_TRY(G->pass(G->ctx, pt->b, NULL, &pt->loss, pt->g, pt->h, mo, err));
        for (int64_t j = 0; G->fi && j < p; j++) {
            double var = mo[p + j] - mo[j] * mo[j];
            if (isfinite(mo[j]) && isfinite(mo[p + j]) &&
                mo[p + j] > CENTER_AT * var)
                centre = 1;
        }
        if (centre && isfinite(pt->loss)) {
            sc->m = sc->mbuf;
            memcpy(sc->m, mo, (size_t)p * sizeof *mo);
            pt->b[p] += dot(sc->m, pt->b, p);
            CK_TRY(G->pass(G->ctx, pt->b, sc->m, &pt->loss, pt->g, pt->h, mo,
                           err));
        }
        for (int64_t j = 0; j < G->d; j++) {
            double r = j < p ? sqrt(mo[p + j]) : 1;
            /* where x is finite (the loss at the start is: checked
             * first, below), an infinite mean square is a sum of squares
             * that overflowed: the Hessian's sums (the same squares,
             * weighted) overflow with it, and no fit can be computed in
             * these units */
            if (isinf(r) && big < 0)
                big = j;
            /* an empty, underflowing or non-finite column keeps its
             * units, as does a centered one whose spread is at the
             * rounding of its mean (a constant column: x - m is a few
             * ulps of m, the same on every row, not data to scale up) */
            if (!(r > 0 && isfinite(r) && isfinite(1 / r)) ||
                (sc->m && j < p && r <= 1e-13 * fabs(sc->m[j])))
                r = 1;
            sc->s[j] = r;
            sc->is[j] = 1 / r;
        }
        sc->known = 1;
        h0_recenter(G);
        for (int64_t j = 0; j < G->d; j++) {
            pt->b[j] *= sc->s[j];
            pt->g[j] *= sc->is[j];
        }
        if (!(sc->gs > 0)) {
            double gn = inf_norm(pt->g, G->d);
            sc->gs = GS_REL * gn > 1 && isfinite(gn) ? GS_REL * gn : 1;
        }
        if (pt->h)
            scale_h(G->d, sc->is, pt->h);
    } else {
        if (sc->m)
            pt->b[p] += dot(sc->m, pt->b, p);
        for (int64_t j = 0; j < G->d; j++)
            pt->b[j] *= sc->s[j];
        CK_TRY(eval(G, pt, err));
    }
    out->bad_start = !isfinite(pt->loss) || !isfinite(inf_norm(pt->g, G->d));
    if (out->bad_start)
        return ck_err_set(err, CK_EUSAGE,
                          "glm: the loss is not finite at the starting "
                          "point (x holds inf or nan, or y is outside the "
                          "family's domain)");
    if (big >= 0)
        return ck_err_set(err, CK_EFORMAT,
                          "glm: x column %lld is too large: the sum of its "
                          "squares overflows (values near 1e154 or above); "
                          "rescale the column",
                          (long long)big);
    return CK_OK;
}

/* ---- newton: damped, backtracking on the objective ----
 * A trial point's pass also gives its Hessian, for the step from it,
 * except near the optimum: there the gradient falls quadratically, |g'| ~
 * rho |g|^2 (rho from the step before), and from a step whose predicted
 * gradient is below sqrt(tol) on the Hessian in hand is kept (a chord
 * step: it differs from the point's own by O(|g|), so such steps still
 * cut the gradient by a large factor, and the optimum is the same, the
 * gradient being exact).  A kept Hessian whose step cut the gradient less
 * than tenfold is replaced by the point's own, by a pass of its own. */

static ck_code fit_newton(const glm *G, double *b, outcome *out, ck_err *err)
{
    size_t vn = (size_t)G->d, mn = vn * vn;
    double *ws = malloc((7 * vn + 3 * mn) * sizeof *ws), *w = ws;
    smooth q = {.l2 = G->lam2};
    point cur, tr;
    double *g, *gt, *dir, *a, *hb[2], f, ft, astep, rho = -1, gn;
    ck_code rc;
    int it, ok, not_pd, ci = 0, lazy, kept = G->h0 != NULL, h_ok = 1;

    if (!ws)
        return ck_err_set(err, CK_ENOMEM, "glm: newton: out of memory");
    cur.b = take(&w, vn);
    cur.g = take(&w, vn);
    hb[0] = take(&w, mn);
    tr.b = take(&w, vn);
    tr.g = take(&w, vn);
    hb[1] = take(&w, mn);
    g = take(&w, vn);
    gt = take(&w, vn);
    dir = take(&w, vn);
    a = take(&w, mn);
    /* from a start with a Hessian estimate, the first step is taken
     * with it: the start's pass needs no Hessian (and the rank check was
     * the estimate's maker's) */
    cur.h = G->h0 ? NULL : hb[0];
    tr.h = hb[1];
    memcpy(cur.b, b, vn * sizeof *b);
    if ((rc = start(G, &cur, out, err)) != CK_OK)
        goto out;
    if (G->h0) {
        memcpy(hb[0], G->h0, mn * sizeof *hb[0]);
        scale_h(G->d, G->sc->is, hb[0]);
    }
    cur.h = hb[0];
    f = compose(G, &q, &cur, g);
    gn = inf_norm(g, G->d);
    for (it = 0;; it++) {
        if (gn <= tolerance(G)) {
            out->converged = 1;
            break;
        }
        if (it == G->max_iter)
            break;
        rc = newton_dir(G, &q, cur.h, g, a, dir, &not_pd, err);
        if (rc != CK_OK)
            goto out;
        if (not_pd && it == 0) {
            rc = singular(err);
            goto out;
        }
        if (not_pd) {
            /* rank was checked at the start: the weights of some rows
             * underflowed, which ck_glm_fit looks into at b */
            out->not_pd_it = it;
            break;
        }
        /* with an l2 term the Hessian is positive definite whatever x.
         * dir is solved, and the search needs neither a, cur.h nor the
         * trial buffers' old contents: they are the SVD's scratch */
        if (it == 0 && q.l2 == 0 && !G->h0) {
            /* it overwrites cur.h, no longer needed: dir is solved */
            h_ok = 0;
            if ((rc = rank_check(G, cur.h, a, gt, hb[1 - ci], err)) != CK_OK)
                goto out;
        }
        lazy = rho >= 0 && rho * gn * gn <= sqrt(G->tol) * G->sc->gs;
        tr.h = lazy ? NULL : hb[1 - ci];
        rc = search(G, &q, &cur, f, g, dir, 1, 1e-4, &tr, &ft, gt, &astep, &ok,
                    err);
        if (rc != CK_OK)
            goto out;
        if (!ok)
            break; /* no step improves on b: as close as it gets */
        swap_points(&cur, &tr);
        swap_vecs(&g, &gt);
        f = ft;
        if (!lazy) {
            ci = 1 - ci;
            h_ok = 1;
        }
        double gn1 = inf_norm(g, G->d);
        int weak = kept && gn1 > 0.1 * gn; /* a kept Hessian's poor step */
        rho = gn > 0 ? gn1 / (gn * gn) : -1;
        gn = gn1;
        kept = lazy;
        if (lazy && weak && gn > tolerance(G) && it + 1 < G->max_iter) {
            /* this point's Hessian after all */
            cur.h = hb[ci];
            if ((rc = eval(G, &cur, err)) != CK_OK)
                goto out;
            f = compose(G, &q, &cur, g);
            gn = inf_norm(g, G->d);
            kept = 0;
        }
        cur.h = hb[ci];
    }
    memcpy(b, cur.b, vn * sizeof *b);
    out->iterations = it;
    out->objective = f;
    /* the last Hessian computed (at b or an iterate near it), unless the
     * rank check used its buffer and no step followed */
    if (h_ok) {
        if ((out->h = malloc(mn * sizeof *out->h)) == NULL) {
            rc = ck_err_set(err, CK_ENOMEM, "glm: newton: out of memory");
            goto out;
        }
        memcpy(out->h, hb[ci], mn * sizeof *out->h);
        /* not a kept one (nor the start's estimate, kept at it 0) */
        out->h_exact = !kept;
    }
out:
    free(ws);
    return rc;
}

/* ---- lbfgs: two-loop recursion, backtracking (the objective is convex,
 * so s.y > 0 holds without a Wolfe curvature test; pairs where rounding
 * breaks it are skipped) ---- */

/* The initial model's step: dir = (h0 + l2 I_w)^-1 dir by Cholesky; a
 * (d x d) is scratch.  *not_pd as posv reports it. */
static ck_code h0_solve(const glm *G, const smooth *q, double *a, double *dir,
                        int *not_pd, ck_err *err)
{
    int64_t d = G->d;

    memcpy(a, G->h0, (size_t)(d * d) * sizeof *a);
    scale_h(d, G->sc->is, a);
    for (int64_t i = 0; i < G->p; i++)
        a[i * d + i] += q->l2 * w2(G, i);
    ck_posv_args pa = {.n = d, .nrhs = 1, .a = a, .b = dir};
    CK_TRY(ck_op_posv(G->be, &pa, err));
    *not_pd = pa.not_pd;
    return CK_OK;
}

/* dir = -H g by the two-loop recursion; H's initial model is h0's
 * inverse when the start gave one (a scratch d x d), else the usual
 * scaled identity.  *not_pd: h0 failed its Cholesky. */
static ck_code lbfgs_dir(const glm *G, const smooth *q, const double *S,
                         const double *Y, const double *rho, double *alpha,
                         int k, int head, const double *g, double *a,
                         double *dir, int *not_pd, ck_err *err)
{
    int64_t d = G->d;

    *not_pd = 0;
    memcpy(dir, g, (size_t)d * sizeof *dir);
    for (int i = 0; i < k; i++) {
        int j = (head - 1 - i + LBFGS_MEM) % LBFGS_MEM;
        alpha[j] = rho[j] * dot(S + j * d, dir, d);
        for (int64_t e = 0; e < d; e++)
            dir[e] -= alpha[j] * Y[j * d + e];
    }
    if (G->h0) {
        CK_TRY(h0_solve(G, q, a, dir, not_pd, err));
        if (*not_pd)
            return CK_OK;
    } else if (k > 0) {
        int j = (head - 1 + LBFGS_MEM) % LBFGS_MEM;
        double gamma = 1 / (rho[j] * dot(Y + j * d, Y + j * d, d));
        for (int64_t e = 0; e < d; e++)
            dir[e] *= gamma;
    }
    for (int i = k - 1; i >= 0; i--) {
        int j = (head - 1 - i + LBFGS_MEM) % LBFGS_MEM;
        double beta = rho[j] * dot(Y + j * d, dir, d);
        for (int64_t e = 0; e < d; e++)
            dir[e] += (alpha[j] - beta) * S[j * d + e];
    }
    for (int64_t e = 0; e < d; e++)
        dir[e] = -dir[e];
    return CK_OK;
}

static ck_code fit_lbfgs(const glm *G, double *b, outcome *out, ck_err *err)
{
    int64_t d = G->d;
    size_t vn = (size_t)d, mv = LBFGS_MEM * vn, an = G->h0 ? vn * vn : 0;
    double *ws = malloc((7 * vn + 2 * mv + 2 * LBFGS_MEM + an) * sizeof *ws);
    double *w = ws, *g, *gt, *dir, *S, *Y, *rho, *alpha, *a, f, ft, astep;
    smooth q = {.l2 = G->lam2};
    point cur = {0}, tr = {0};
    int it, ok, k = 0, head = 0, not_pd;
    ck_code rc;

    if (!ws)
        return ck_err_set(err, CK_ENOMEM, "glm: lbfgs: out of memory");
    cur.b = take(&w, vn);
    cur.g = take(&w, vn);
    tr.b = take(&w, vn);
    tr.g = take(&w, vn);
    g = take(&w, vn);
    gt = take(&w, vn);
    dir = take(&w, vn);
    S = take(&w, mv);
    Y = take(&w, mv);
    rho = take(&w, LBFGS_MEM);
    alpha = take(&w, LBFGS_MEM);
    a = take(&w, an);
    memcpy(cur.b, b, vn * sizeof *b);
    if ((rc = start(G, &cur, out, err)) != CK_OK)
        goto out;
    f = compose(G, &q, &cur, g);
    for (it = 0;; it++) {
        if (inf_norm(g, d) <= tolerance(G)) {
            out->converged = 1;
            break;
        }
        if (it == G->max_iter)
            break;
        ok = 0;
        while (!ok) {
            /* without curvature pairs or h0: a gradient step no longer
             * than 1 */
            double a0 = 1, gn = sqrt(dot(g, g, d));
            if (k == 0 && !G->h0 && gn > 1)
                a0 = 1 / gn;
            rc = lbfgs_dir(G, &q, S, Y, rho, alpha, k, head, g, a, dir, &not_pd,
                           err);
            if (rc != CK_OK)
                goto out;
            if (not_pd) {
                rc = ck_err_set(err, CK_EUSAGE,
                                "glm: lbfgs: the start's Hessian is not "
                                "positive definite");
                goto out;
            }
            rc = search(G, &q, &cur, f, g, dir, a0, 1e-4, &tr, &ft, gt, &astep,
                        &ok, err);
            if (rc != CK_OK)
                goto out;
            if (ok || k == 0)
                break;
            k = 0; /* a stale model: retry from a gradient step */
        }
        if (!ok)
            break;
        double *s = S + head * d, *y = Y + head * d;
        for (int64_t e = 0; e < d; e++) {
            s[e] = tr.b[e] - cur.b[e];
            y[e] = gt[e] - g[e];
        }
        double sy = dot(s, y, d), ss = dot(s, s, d), yy = dot(y, y, d);
        if (sy > DBL_EPSILON * sqrt(ss * yy) && yy > 0) {
            rho[head] = 1 / sy;
            head = (head + 1) % LBFGS_MEM;
            if (k < LBFGS_MEM)
                k++;
        }
        swap_points(&cur, &tr);
        swap_vecs(&g, &gt);
        f = ft;
    }
    memcpy(b, cur.b, vn * sizeof *b);
    out->iterations = it;
    out->objective = f;
out:
    free(ws);
    return rc;
}

/* ---- gradient descent: backtracking, with a step that grows back ---- */

static ck_code fit_gd(const glm *G, double *b, outcome *out, ck_err *err)
{
    int64_t d = G->d;
    size_t vn = (size_t)d;
    double *ws = malloc(7 * vn * sizeof *ws), *w = ws;
    double *g, *gt, *dir, f, ft, t = 1, astep;
    smooth q = {.l2 = G->lam2};
    point cur = {0}, tr = {0};
    int it, ok;
    ck_code rc;

    if (!ws)
        return ck_err_set(err, CK_ENOMEM,
                          "glm: gradient_descent: out of memory");
    cur.b = take(&w, vn);
    cur.g = take(&w, vn);
    tr.b = take(&w, vn);
    tr.g = take(&w, vn);
    g = take(&w, vn);
    gt = take(&w, vn);
    dir = take(&w, vn);
    memcpy(cur.b, b, vn * sizeof *b);
    if ((rc = start(G, &cur, out, err)) != CK_OK)
        goto out;
    f = compose(G, &q, &cur, g);
    for (it = 0;; it++) {
        if (inf_norm(g, d) <= tolerance(G)) {
            out->converged = 1;
            break;
        }
        if (it == G->max_iter)
            break;
        for (int64_t e = 0; e < d; e++)
            dir[e] = -g[e];
        /* c = 1/2: f(b - t g) <= f(b) - t |g|^2 / 2 holds for t <= 1/L,
         * so the accepted steps track the local curvature */
        rc = search(G, &q, &cur, f, g, dir, t * GROW, 0.5, &tr, &ft, gt, &astep,
                    &ok, err);
        if (rc != CK_OK)
            goto out;
        if (!ok)
            break;
        t = fmin(astep, MAX_STEP);
        swap_points(&cur, &tr);
        swap_vecs(&g, &gt);
        f = ft;
    }
    memcpy(b, cur.b, vn * sizeof *b);
    out->iterations = it;
    out->objective = f;
out:
    free(ws);
    return rc;
}

/* ---- proximal_grad: FISTA with backtracking and adaptive restart ----
 * Beck and Teboulle's accelerated proximal gradient on S + R, where the
 * prox (above) carries all of R.  The step is found by backtracking on
 * the quadratic upper bound at the extrapolated point y, starting from
 * the last step times GROW; momentum restarts (O'Donoghue and Candes)
 * when the objective goes up, whereupon the step is redone from x, or the
 * step points against the momentum.  Each iteration costs two passes
 * (at y and at the new x), one after a restart. */

static ck_code fit_proximal(const glm *G, double *b, outcome *out, ck_err *err)
{
    int64_t d = G->d;
    size_t vn = (size_t)d;
    double *ws = malloc(7 * vn * sizeof *ws), *w = ws, *xprev;
    double Fx, Fz, mom = 1, t = 1;
    point px = {0}, py = {0}, pz = {0};
    int it;
    ck_code rc;

    if (!ws)
        return ck_err_set(err, CK_ENOMEM, "glm: proximal_grad: out of memory");
    px.b = take(&w, vn);
    px.g = take(&w, vn);
    py.b = take(&w, vn);
    py.g = take(&w, vn);
    pz.b = take(&w, vn);
    pz.g = take(&w, vn);
    xprev = take(&w, vn);
    memcpy(px.b, b, vn * sizeof *b);
    if ((rc = start(G, &px, out, err)) != CK_OK)
        goto out;
    Fx = px.loss + penalty(G, px.b);
    memcpy(xprev, px.b, vn * sizeof *b);
    for (it = 0;; it++) {
        if (opt_measure(G, px.b, px.g) <= tolerance(G)) {
            out->converged = 1;
            break;
        }
        if (it == G->max_iter)
            break;
        double mom_n = (1 + sqrt(1 + 4 * mom * mom)) / 2;
        double beta = (mom - 1) / mom_n;
        const point *base = &px;
        if (beta > 0) {
            for (int64_t e = 0; e < d; e++)
                py.b[e] = px.b[e] + beta * (px.b[e] - xprev[e]);
            if ((rc = eval(G, &py, err)) != CK_OK)
                goto out;
            if (isfinite(py.loss))
                base = &py;
            else
                mom = mom_n = 1; /* extrapolated too far: plain step */
        }
        double a = t * GROW;
        int ok = 0, moved = 0;
        for (int k = 0; k < MAX_HALVINGS && !ok; k++, a *= 0.5) {
            for (int64_t e = 0; e < d; e++)
                pz.b[e] = base->b[e] - a * base->g[e];
            prox(G, a, pz.b);
            moved = 0;
            for (int64_t e = 0; e < d; e++)
                moved |= pz.b[e] != base->b[e];
            if (!moved) {
                ok = 1; /* base is a fixed point: take it as it is */
                pz.loss = base->loss;
                memcpy(pz.g, base->g, vn * sizeof *b);
                break;
            }
            if ((rc = eval(G, &pz, err)) != CK_OK)
                goto out;
            if (!isfinite(pz.loss))
                continue;
            double dd = 0, gd = 0, dg = 0;
            for (int64_t e = 0; e < d; e++) {
                double dl = pz.b[e] - base->b[e];
                dd += dl * dl;
                gd += base->g[e] * dl;
                dg += (pz.g[e] - base->g[e]) * dl;
            }
            /* S(z) <= S(y) + g(y).(z - y) + |z - y|^2 / (2a); within
             * noise, the same bound read off the gradients */
            double bound = base->loss + gd + dd / (2 * a);
            ok = pz.loss <= bound ||
                 (pz.loss <= bound + noise(base->loss) && dg <= dd / a);
            if (ok)
                break;
        }
        if (!ok || (!moved && base == &px)) {
            if (base == &px)
                break; /* no step improves on x: as close as it gets */
            mom = 1;   /* retry from x without momentum */
            memcpy(xprev, px.b, vn * sizeof *b);
            continue;
        }
        t = fmin(a, MAX_STEP);
        Fz = pz.loss + penalty(G, pz.b);
        if (base != &px && Fz > Fx + noise(Fx)) {
            mom = 1; /* the objective went up: redo the step from x */
            memcpy(xprev, px.b, vn * sizeof *b);
            continue;
        }
        double against = 0;
        for (int64_t e = 0; e < d; e++)
            against += (base->b[e] - pz.b[e]) * (pz.b[e] - px.b[e]);
        memcpy(xprev, px.b, vn * sizeof *b);
        swap_points(&px, &pz);
        Fx = Fz;
        mom = against > 0 ? 1 : mom_n;
    }
    memcpy(b, px.b, vn * sizeof *b);
    out->iterations = it;
    out->objective = Fx;
out:
    free(ws);
    return rc;
}

/* ---- admm: b = z splitting (Boyd et al. 2011, section 6) ----
 * b-update: a few damped Newton steps on S(b) + rho/2 |b - z + u|^2,
 * warm-started, solved to a tolerance that tightens with the residuals;
 * z-update: the prox of R / rho (the intercept passes through);
 * u += b - z.  It stops when the primal residual |b - z| and the dual
 * residual rho |z - z_prev| are below tol and the optimality measure at z
 * (which they bound, up to the b-update's error and L |b - z|) is too;
 * z, exactly sparse, is the answer.  rho starts at the Hessian's mean
 * diagonal and is balanced against the residuals (section 3.4.1). */

static ck_code fit_admm(const glm *G, double *b, outcome *out, ck_err *err)
{
    int64_t d = G->d;
    size_t vn = (size_t)d, mn = vn * vn;
    double *ws = malloc((12 * vn + 3 * mn) * sizeof *ws), *w = ws;
    double *gphi, *gt, *dir, *zold, *u, *v, *a;
    double rho, rho0 = 0, prev = INFINITY, f, ft, astep;
    point cur, tr, pz = {0};
    int it, have_z = 0, ok, not_pd;
    ck_code rc;

    if (!ws)
        return ck_err_set(err, CK_ENOMEM, "glm: admm: out of memory");
    cur.b = take(&w, vn);
    cur.g = take(&w, vn);
    cur.h = take(&w, mn);
    tr.b = take(&w, vn);
    tr.g = take(&w, vn);
    tr.h = take(&w, mn);
    pz.b = take(&w, vn);
    pz.g = take(&w, vn);
    gphi = take(&w, vn);
    gt = take(&w, vn);
    dir = take(&w, vn);
    zold = take(&w, vn);
    u = take(&w, vn);
    v = take(&w, vn);
    a = take(&w, mn);
    memcpy(cur.b, b, vn * sizeof *b);
    memset(u, 0, vn * sizeof *u);
    if ((rc = start(G, &cur, out, err)) != CK_OK)
        goto out;
    memcpy(pz.b, cur.b, vn * sizeof *b);
    for (int64_t e = 0; e < d; e++)
        rho0 += cur.h[e * d + e] / (double)d;
    if (!(rho0 > 0 && isfinite(rho0)))
        rho0 = 1;
    rho = rho0;
    for (it = 0; it < G->max_iter;) {
        smooth q = {.rho = rho, .v = v};
        double sub_tol = fmax(0.1 * tolerance(G), fmin(1e-2, 1e-2 * prev));
        for (int64_t e = 0; e < d; e++)
            v[e] = pz.b[e] - u[e];
        f = compose(G, &q, &cur, gphi);
        for (int k = 0; k < ADMM_SUB_NEWTON; k++) {
            if (inf_norm(gphi, d) <= sub_tol)
                break;
            rc = newton_dir(G, &q, cur.h, gphi, a, dir, &not_pd, err);
            if (rc != CK_OK)
                goto out;
            if (not_pd) {
                rc = ck_err_set(err, CK_ENOTSUP,
                                "glm: admm: the b-update's hessian is not "
                                "positive definite (nan in the data?)");
                goto out;
            }
            rc = search(G, &q, &cur, f, gphi, dir, 1, 1e-4, &tr, &ft, gt,
                        &astep, &ok, err);
            if (rc != CK_OK)
                goto out;
            if (!ok)
                break;
            swap_points(&cur, &tr);
            swap_vecs(&gphi, &gt);
            f = ft;
        }
        memcpy(zold, pz.b, vn * sizeof *zold);
        for (int64_t e = 0; e < d; e++)
            pz.b[e] = cur.b[e] + u[e];
        prox(G, 1 / rho, pz.b);
        double r = 0, s = 0;
        for (int64_t e = 0; e < d; e++) {
            u[e] += cur.b[e] - pz.b[e];
            r = fmax(r, fabs(cur.b[e] - pz.b[e]));
            s = fmax(s, rho * fabs(pz.b[e] - zold[e]));
        }
        it++;
        have_z = 0;
        if (r <= tolerance(G) && s <= tolerance(G)) {
            if ((rc = eval(G, &pz, err)) != CK_OK)
                goto out;
            have_z = 1;
            if (isfinite(pz.loss) &&
                opt_measure(G, pz.b, pz.g) <= tolerance(G)) {
                out->converged = 1;
                break;
            }
        }
        prev = fmax(r, s);
        /* keep the residuals within a factor 10 of each other; u is
         * scaled by 1/rho, so it rescales with it */
        double scale = 1;
        if (r > 10 * s && rho < rho0 * 1e6)
            scale = 2;
        else if (s > 10 * r && rho > rho0 * 1e-6)
            scale = 0.5;
        rho *= scale;
        for (int64_t e = 0; e < d; e++)
            u[e] /= scale;
    }
    if (!have_z && (rc = eval(G, &pz, err)) != CK_OK)
        goto out;
    memcpy(b, pz.b, vn * sizeof *b);
    out->iterations = it;
    out->objective = pz.loss + penalty(G, pz.b);
out:
    free(ws);
    return rc;
}

/* ---- the driver ---- */

/* Iteration limits, as documented in ops/glm.h: Newton converges in tens
 * of steps or not at all; the first-order methods need thousands on
 * moderately conditioned data to reach 1e-8. */
static int default_max_iter(ck_glm_solver s)
{
    switch (s) {
    case CK_GLM_NEWTON:
        return 50;
    case CK_GLM_LBFGS:
        return 500;
    case CK_GLM_GRADIENT_DESCENT:
    case CK_GLM_PROXIMAL_GRAD:
        return 10000;
    case CK_GLM_ADMM:
        return 1000;
    }
    return 1000;
}

/* ck_glm_fit, once G is set up: the solver, then the looks at its result
 * (all in the scaled parameters), then res in the user's units. */
static ck_code fit(const glm *Gp, const ck_glm_opts *o,
                   const ck_glm_start *start, ck_glm_result *res, ck_err *err)
{
    glm G = *Gp;
    outcome oc = {0};
    double *b;
    ck_code rc;

    if (!(b = calloc((size_t)G.d, sizeof *b)))
        return ck_err_set(err, CK_ENOMEM, "glm: out of memory");
    if (start && start->b &&
        (o->solver == CK_GLM_NEWTON || o->solver == CK_GLM_LBFGS))
        memcpy(b, start->b, (size_t)G.d * sizeof *b);
    /* the start's maker's scale, from its own start (ck_glm_start) */
    if (start && start->gscale > 0)
        G.sc->gs = start->gscale;
    for (;;) {
        switch (o->solver) {
        case CK_GLM_NEWTON:
            rc = fit_newton(&G, b, &oc, err);
            break;
        case CK_GLM_LBFGS:
            rc = fit_lbfgs(&G, b, &oc, err);
            break;
        case CK_GLM_GRADIENT_DESCENT:
            rc = fit_gd(&G, b, &oc, err);
            break;
        case CK_GLM_PROXIMAL_GRAD:
            rc = fit_proximal(&G, b, &oc, err);
            break;
        case CK_GLM_ADMM:
        default:
            rc = fit_admm(&G, b, &oc, err);
            break;
        }
        /* a given start can be too far out for poisson's exp on rows the
         * start's maker did not see: start again from 0, as without it */
        if (rc == CK_OK || !oc.bad_start || !start || !start->b ||
            (o->solver != CK_GLM_NEWTON && o->solver != CK_GLM_LBFGS))
            break;
        memset(b, 0, (size_t)G.d * sizeof *b);
        G.h0 = NULL;
        start = NULL;
        free(oc.h);
        oc = (outcome){0};
    }
    if (rc != CK_OK) {
        free(b);
        free(oc.h);
        return rc;
    }
    int no_mle = 0, pen = G.lam1 != 0 || G.lam2 != 0;
    double loss = oc.objective;
    if ((!pen || G.fi) && o->family != CK_GLM_NORMAL && oc.objective >= 0 &&
        oc.objective <= 1e-4) {
        /* Logistic and poisson losses are >= 0 where y is 0 or 1 (all 0
         * for poisson), and 0 only in the limit: a small mean loss (it is
         * log 2 and 1 at b = 0) that doubling b cuts by half or more means
         * the loss keeps falling as b grows, where from a minimum the
         * convex loss could only rise (within tol |b|).  A penalty bounds
         * w, not the intercept: there only the intercept is doubled (y
         * all 0 or all 1, whose fit is an intercept growing without
         * bound). */
        double *b2 = malloc((size_t)G.d * sizeof *b2), f2;
        if (!b2)
            rc = ck_err_set(err, CK_ENOMEM, "glm: out of memory");
        for (int64_t j = 0; b2 && j < G.d; j++)
            b2[j] = pen && j < G.p ? b[j] : 2 * b[j];
        /* (the loss without the penalty, which is as small) */
        if (b2 && pen)
            rc = look(&G, b, &loss, NULL, NULL, err);
        if (b2 && rc == CK_OK &&
            (rc = look(&G, b2, &f2, NULL, NULL, err)) == CK_OK &&
            f2 <= 0.5 * loss)
            no_mle = pen ? 3 : 1;
        free(b2);
        if (rc != CK_OK) {
            free(b);
            free(oc.h);
            return rc;
        }
    }
    if (G.lam1 == 0 && G.lam2 == 0 && o->family != CK_GLM_NORMAL && !no_mle) {
        /* the Hessian in hand, or one pass for it at b (which the
         * standard errors then use) */
        if (!oc.h) {
            double f;
            if (!(oc.h = malloc((size_t)(G.d * G.d) * sizeof *oc.h)))
                rc = ck_err_set(err, CK_ENOMEM, "glm: out of memory");
            if (rc == CK_OK && (rc = look(&G, b, &f, NULL, oc.h, err)) == CK_OK)
                oc.h_exact = 1;
        }
        int found = 0;
        if (rc == CK_OK &&
            (rc = recession(&G, o->family, b, oc.objective, oc.h, &found,
                            &res->lead, err)) == CK_OK &&
            found)
            no_mle = 2;
        if (rc != CK_OK) {
            free(b);
            free(oc.h);
            return rc;
        }
    }
    if (oc.not_pd_it && !no_mle) {
        free(b);
        free(oc.h);
        return ck_err_set(err, CK_ENOTSUP,
                          "glm: newton: the hessian is not positive "
                          "definite at iteration %d (x nearly rank "
                          "deficient): add an l2 penalty",
                          oc.not_pd_it);
    }
    res->b = b;
    res->d = G.d;
    res->iterations = oc.iterations;
    res->converged = oc.converged;
    res->no_mle = no_mle;
    res->stalled = !oc.converged && oc.iterations < G.max_iter;
    res->gscale = G.sc->gs;
    if (no_mle)
        res->converged = 0;
    res->objective = oc.objective;
    res->loss = oc.objective - penalty(&G, b);
    res->h = oc.h;
    res->h_exact = oc.h != NULL && oc.h_exact;
    if (o->std_errors && res->converged && !res->h_exact) {
        /* the Hessian at b, for the standard errors: one pass */
        size_t mn = (size_t)(G.d * G.d);
        double f;
        if (!res->h && !(res->h = malloc(mn * sizeof *res->h)))
            rc = ck_err_set(err, CK_ENOMEM, "glm: out of memory");
        if (rc == CK_OK && (rc = look(&G, b, &f, NULL, res->h, err)) == CK_OK)
            res->h_exact = 1;
        if (rc != CK_OK) {
            ck_glm_result_release(res);
            return rc;
        }
    }
    for (int64_t j = 0; j < G.d; j++)
        b[j] *= G.sc->is[j];
    if (G.sc->m) {
        /* c = c' - m.w; h stays in c' (ck_glm_result.center) */
        b[G.p] -= dot(G.sc->m, b, G.p);
        if (!(res->center = malloc((size_t)G.p * sizeof *res->center))) {
            ck_glm_result_release(res);
            return ck_err_set(err, CK_ENOMEM, "glm: out of memory");
        }
        memcpy(res->center, G.sc->m, (size_t)G.p * sizeof *res->center);
    }
    if (res->h)
        scale_h(G.d, G.sc->s, res->h);
    return CK_OK;
}

ck_code ck_glm_fit(const ck_be *be, const ck_glm_opts *o, int64_t p,
                   ck_glm_pass_fn pass, void *ctx, const ck_glm_start *start,
                   ck_glm_result *res, ck_err *err)
{
    glm G = {.be = be, .pass = pass, .ctx = ctx, .p = p};
    colscale sc = {0};
    ck_code rc;

    CK_TRY(ck_glm_check(o, err));
    if (p < 0)
        return ck_err_set(err, CK_EUSAGE, "glm: %lld features", (long long)p);
    G.fi = o->fit_intercept != 0;
    G.d = p + G.fi;
    if (G.d == 0)
        return ck_err_set(err, CK_EUSAGE,
                          "glm: nothing to fit: no features and no "
                          "intercept");
    /* d x d Hessians (several of them) must be addressable */
    if ((uint64_t)G.d > ((uint64_t)1 << 26) ||
        (size_t)G.d > SIZE_MAX / sizeof(double) / 16 / (size_t)G.d)
        return ck_err_set(err, CK_ENOMEM, "glm: %lld parameters is too many",
                          (long long)G.d);
    switch (o->reg) {
    case CK_GLM_REG_NONE:
        break;
    case CK_GLM_REG_L1:
        G.lam1 = o->lambda;
        break;
    case CK_GLM_REG_L2:
        G.lam2 = o->lambda;
        break;
    case CK_GLM_REG_ELASTIC_NET:
        G.lam1 = o->lambda * o->l1_ratio;
        G.lam2 = o->lambda * (1 - o->l1_ratio);
        break;
    }
    G.tol = o->tol > 0 ? o->tol : 1e-8;
    G.max_iter = o->max_iter > 0 ? o->max_iter : default_max_iter(o->solver);
    if (!(sc.s = malloc(5 * (size_t)G.d * sizeof *sc.s)))
        return ck_err_set(err, CK_ENOMEM, "glm: out of memory");
    sc.is = sc.s + G.d;
    sc.ub = sc.is + G.d;
    sc.mbuf = sc.ub + 2 * G.d;
    G.sc = &sc;
    if (start && start->h &&
        (o->solver == CK_GLM_NEWTON || o->solver == CK_GLM_LBFGS)) {
        /* a copy: the first pass moves it to this fit's center */
        size_t mn = (size_t)(G.d * G.d);
        if (!(G.h0 = malloc(mn * sizeof *G.h0))) {
            free(sc.s);
            return ck_err_set(err, CK_ENOMEM, "glm: out of memory");
        }
        memcpy(G.h0, start->h, mn * sizeof *G.h0);
        G.h0_center = start->center;
    }
    rc = fit(&G, o, start, res, err);
    free(G.h0);
    free(sc.s);
    return rc;
}
ck_code ck_glm_std_errors(const ck_be *be, ck_glm_family f, int64_t n,
                          int64_t d, const double *h, const double *center,
                          double mean_loss, double *se, ck_err *err)
{
    size_t mn = (size_t)(d * d);
    double *a = malloc(4 * mn * sizeof *a + 8), *inv = a + mn, scale = 1;

    if (!a)
        return ck_err_set(err, CK_ENOMEM, "glm: out of memory");
    if (f == CK_GLM_NORMAL) /* the residual variance, statsmodels' scale */
        scale = n > d ? 2 * (double)n * mean_loss / (double)(n - d) : NAN;
    /* a rank-deficient h has no inverse, though Cholesky may find one of
     * rounding-size pivots (huge "standard errors", solver-dependent) */
    int def;
    ck_code rc =
        rank_deficient(be, d, h, a, inv, inv + mn, inv + 2 * mn, &def, err);
    if (rc != CK_OK || def) {
        for (int64_t i = 0; i < d; i++)
            se[i] = NAN;
        free(a);
        return rc;
    }
    /* inv = h^-1 by Cholesky: h is symmetric, row-major is column-major */
    memcpy(a, h, mn * sizeof *a);
    memset(inv, 0, mn * sizeof *inv);
    for (int64_t i = 0; i < d; i++)
        inv[i * d + i] = 1;
    ck_posv_args pa = {.n = d, .nrhs = d, .a = a, .b = inv};
    rc = ck_op_posv(be, &pa, err);
    if (rc == CK_OK && center) {
        /* c = c' - center.w: var c = a' inv a, a = (-center, 1) */
        int64_t p = d - 1;
        double v = 0;
        for (int64_t i = 0; i < d; i++) {
            double ai = i < p ? -center[i] : 1, row = 0;
            for (int64_t j = 0; j < d; j++)
                row += inv[i * d + j] * (j < p ? -center[j] : 1);
            v += ai * row;
        }
        inv[p * d + p] = v;
    }
    for (int64_t i = 0; rc == CK_OK && i < d; i++) {
        double v = inv[i * d + i] * scale / (double)n;
        se[i] = !pa.not_pd && v >= 0 ? sqrt(v) : NAN;
    }
    free(a);
    return rc;
}

void ck_glm_result_release(ck_glm_result *res)
{
    if (!res)
        return;
    free(res->b);
    free(res->h);
    free(res->center);
    memset(res, 0, sizeof *res);
}
