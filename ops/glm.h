/*
 * ops/glm.h - generalised linear models, the Dask-GLM feature set: three
 * families, five solvers, four regularisers.  The solvers see the data only
 * through a pass function that the caller (pipelines/, streaming row blocks
 * from disk or from memory) supplies; ck_glm_block is what such a pass runs
 * on each block of rows.  The objective, documented in chunkctl-glm-fit(1):
 *
 *   f(b) = (1/n) sum_i loss(y_i, x_i . w + c) + lambda * P(w)
 *
 *   loss: normal    (y - eta)^2 / 2
 *         logistic  log(1 + exp(eta)) - y * eta          (y in {0, 1})
 *         poisson   exp(eta) - y * eta                   (y >= 0; the
 *                   log(y!) constant is left out)
 *   P:    none 0;  l2 |w|^2 / 2;  l1 |w|_1;
 *         elastic_net  l1_ratio * |w|_1 + (1 - l1_ratio) * |w|^2 / 2
 *
 * w are the p coefficients, c the intercept (when fit_intercept; never
 * penalised).  A parameter vector b has d = p + fit_intercept entries:
 * the coefficients, then the intercept.
 */
#ifndef CK_OPS_GLM_H
#define CK_OPS_GLM_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "base/ck_err.h"

typedef enum ck_glm_family {
    CK_GLM_NORMAL,
    CK_GLM_LOGISTIC,
    CK_GLM_POISSON,
} ck_glm_family;

/* The solvers, with their max_iter defaults (an iteration is one step; what
 * it costs in passes over the data is in parentheses).  All start at b = 0.
 *
 *   newton            50     damped Newton: Cholesky (posv) of the Hessian,
 *                            Armijo backtracking on f (~1 pass, Hessian)
 *   lbfgs             500    L-BFGS, 10 pairs, backtracking (~1 pass)
 *   gradient_descent  10000  backtracking from the last step times 1.25,
 *                            so the step grows back (~1.3 passes)
 *   proximal_grad     10000  FISTA with backtracking and adaptive restart;
 *                            the prox is exact for every penalty (~2)
 *   admm              1000   b = z splitting: b-update by Newton steps on
 *                            the loss + rho/2 |b - z + u|^2, z-update the
 *                            penalty's prox; rho balanced against the
 *                            residuals (~1-3 passes, Hessian)
 *
 * newton, lbfgs and gradient_descent need a smooth objective: reg none,
 * l2, or elastic_net with l1_ratio 0.  proximal_grad and admm take all. */
typedef enum ck_glm_solver {
    CK_GLM_NEWTON,
    CK_GLM_LBFGS,
    CK_GLM_GRADIENT_DESCENT,
    CK_GLM_PROXIMAL_GRAD,
    CK_GLM_ADMM,
} ck_glm_solver;

typedef enum ck_glm_reg {
    CK_GLM_REG_NONE,
    CK_GLM_REG_L1,
    CK_GLM_REG_L2,
    CK_GLM_REG_ELASTIC_NET,
} ck_glm_reg;

typedef struct ck_glm_opts {
    ck_glm_family family;
    ck_glm_solver solver;
    ck_glm_reg reg;
    double lambda;   /* >= 0 */
    double l1_ratio; /* elastic_net: in [0, 1] */
    int fit_intercept;
    int max_iter; /* 0: the solver's default (above) */
    double tol;   /* 0: 1e-8; see ck_glm_fit */
    /* the caller wants standard errors (ck_glm_std_errors): the fit
     * returns the Hessian at its b (one pass more at most); unpenalised
     * fits only */
    int std_errors;
} ck_glm_opts;

/* Names as the CLI and pipelines spell them ("logistic", "lbfgs",
 * "elastic_net"); lookups return 0 for an unknown name. */
const char *ck_glm_family_name(ck_glm_family f);
const char *ck_glm_solver_name(ck_glm_solver s);
const char *ck_glm_reg_name(ck_glm_reg r);
int ck_glm_family_lookup(const char *name, ck_glm_family *f);
int ck_glm_solver_lookup(const char *name, ck_glm_solver *s);
int ck_glm_reg_lookup(const char *name, ck_glm_reg *r);

/* CK_EUSAGE, with a message saying what to use instead, for a
 * combination chunkctl does not solve (newton, lbfgs or gradient_descent
 * with l1, or with elastic_net and l1_ratio > 0: "use proximal_grad or
 * admm"), a negative or non-finite lambda, an l1_ratio outside [0, 1]
 * (whatever the regulariser), a negative max_iter or tol, an unknown
 * enum value, std_errors with a penalty (lambda > 0). */
ck_code ck_glm_check(const ck_glm_opts *o, ck_err *err);

/* One pass over all n rows at parameters b (d entries): *loss gets the
 * mean loss (unpenalised); grad (d entries) its gradient, hess (d x d,
 * row-major) its Hessian and sq (2 p entries) the mean of each of x's
 * columns then the mean square of each (ck_glm_col_moments, summed over
 * the rows, over n), each when not NULL.  center (p entries, or NULL for
 * none): the pass is on x's columns less these, x_ij - center_j, in the
 * blocks (ck_glm_block) and in sq; the model is then eta = (x - center) w
 * + c', whose intercept c' is the user's c + center.w.  Supplied by the
 * caller.  ck_glm_fit asks for sq on its first pass or two only. */
typedef ck_code (*ck_glm_pass_fn)(void *ctx, const double *b,
                                  const double *center, double *loss,
                                  double *grad, double *hess, double *sq,
                                  ck_err *err);

typedef struct ck_glm_result {
    double *b; /* d entries, owned: ck_glm_result_release */
    int64_t d;
    int iterations; /* solver iterations (passes over the data may be more) */
    int converged;
    /* not converged, and stopped before max_iter: no step lowered the
     * objective (the gradient is at the rounding floor of the data's
     * sums, above tol) */
    int stalled;
    /* the convergence test's scale, tol's factor (see ck_glm_fit, 1 or
     * more), for ck_glm_start */
    double gscale;
    /* no maximum-likelihood fit exists: unpenalised logistic or poisson
     * whose mean loss is small (<= 1e-4) and falls by half or more when b
     * doubles, so it falls on as b grows, towards 0, which it reaches only
     * where the fitted means equal y on every row (the classes separated
     * by a hyperplane, or y all 0 or all 1): the coefficients grow without
     * bound, converged is 0 (statsmodels raises PerfectSeparationError).
     * One pass more, only when the loss is that small.  2: the same
     * for some rows only (quasi-complete separation): along a direction
     * u (lead: its largest entry, a column of x or p for the intercept)
     * the loss does not rise, while the other rows pin the rest of b
     * (unpenalised logistic or poisson, converged; the smallest singular
     * vector of the Hessian, then two passes where it is nearly
     * singular).  3: a penalised fit with an intercept whose loss
     * falls as the intercept alone doubles: y all 0 or all 1 (the
     * intercept is not penalised). */
    int no_mle;
    int64_t lead;
    double objective; /* f(b), penalty included */
    double loss;      /* the mean loss at b: f(b) without the penalty */
    /* newton: the last Hessian of the mean loss it computed (d x d), at
     * b or at an iterate near it, owned; NULL for the other solvers, and
     * when newton stopped before its first step.  With std_errors, when
     * the fit converged to a maximum-likelihood fit, any solver's: the
     * Hessian at b itself, and h_exact is 1. */
    double *h;
    int h_exact;
    /* NULL, or (p entries, owned) the column means the fit centered x's
     * columns on: h is then the Hessian in w and c' = c + center.w, the
     * intercept at x's means, whose conditioning does not depend on how
     * far x's columns sit from 0 (b is the user's w and c either way) */
    double *center;
} ck_glm_result;

/* Where newton and lbfgs begin (the other solvers ignore it): b (d
 * entries) instead of 0, and h, an estimate of the mean loss's Hessian
 * near b (d x d, symmetric positive definite; NULL for none).  newton
 * takes its first step with h (the start's pass then computes no
 * Hessian, and the rank check is left to whoever made h); lbfgs takes h
 * as its initial model of the curvature in place of a scaled identity.
 * A newton fit on a sample of the rows gives both (see
 * chunkctl-glm-fit(1)); they change the path, not the optimum the solver
 * converges to.  A start where the loss is not finite (poisson's exp
 * overflowing on rows its maker did not see) is dropped for 0. */
typedef struct ck_glm_start {
    const double *b;
    const double *h;
    const double *center; /* h's: its maker's ck_glm_result.center */
    double gscale;        /* its maker's ck_glm_result.gscale; 0: none */
} ck_glm_start;

/* Fits the model with p features.  Converged means the solver's optimality
 * measure (for smooth problems the gradient's largest entry, for l1 and
 * elastic net the distance to the subdifferential's zero, largest entry)
 * fell below tol (default 1e-8), or where the measure's value at the
 * start (at b = 0, or the start's gscale) times 1e-4 is above 1, below
 * tol times that (so that the test is relative in y's units where y is
 * large), within max_iter; otherwise converged = 0
 * and the last iterate is returned, CK_OK (the caller warns).  The
 * measure is scale-free: entry j is taken with x's column j scaled to
 * unit mean square, i.e. divided by the column's root mean square (the
 * first pass's sq; 1 for the intercept, and for a column whose mean
 * square is 0; one whose sum of squares overflows is CK_EFORMAT), and
 * the solvers work in those units
 * throughout, so that the fit does not depend on the units of x's
 * columns; the penalty is on the coefficients as given.  With an
 * intercept, where a column's mean is large beside its spread the first
 * pass's means center x's columns (one pass more), and a centered
 * column's scale is its standard deviation (ck_glm_result.center).  The scaled
 * coefficients are then within about tol / (the smallest eigenvalue of
 * the scaled Hessian of f) of the optimum.  admm returns z, the prox's side of
 * the split, so l1 zeros are exact zeros.  CK_ENOTSUP with a clear message when
 * the Hessian is singular (rank-deficient X under newton with no l2 term);
 * CK_EUSAGE as ck_glm_check, when p + fit_intercept is 0, or when the loss is
 * not finite at the start (inf or nan in x); a pass's error is returned as it
 * is.  *res is written only on success.  Besides what the passes use, the
 * solver allocates at most 5 d^2 + 37 d doubles, once (newton's include the
 * Hessian it returns). */
ck_code ck_glm_fit(const ck_be *be, const ck_glm_opts *o, int64_t p,
                   ck_glm_pass_fn pass, void *ctx, const ck_glm_start *start,
                   ck_glm_result *res, ck_err *err);
void ck_glm_result_release(ck_glm_result *res);

/* The standard errors of the maximum-likelihood estimates (d = p +
 * fit_intercept of them, coefficients then intercept), as statsmodels'
 * GLM reports them (bse): the square roots of the diagonal of the
 * inverse of the observed information n h, h being the mean loss's
 * Hessian at the optimum (ck_glm_result.h with h_exact), times the scale:
 * 1 for logistic and poisson, and for normal the residual variance, the
 * sum of squared residuals (2 n mean_loss) over n - d.  se gets NaN
 * throughout when h is not positive definite (x rank deficient), or
 * for normal when n <= d.  center: the result's (h in w and c' =
 * c + center.w; the intercept's error is then c''s carried back to c).
 * Allocates 4 d^2 doubles. */
ck_code ck_glm_std_errors(const ck_be *be, ck_glm_family f, int64_t n,
                          int64_t d, const double *h, const double *center,
                          double mean_loss, double *se, ck_err *err);

/* Adds one block of rows to a pass's sums (not means: the caller divides
 * by n once at the end): x is rows x p row-major, y rows values, b the d
 * parameters.  *loss += sum of losses; grad (d) and hess (d x d row-major,
 * symmetric before and after) are added to when not NULL.  scratch holds
 * ck_glm_block_scratch(be, rows, p) doubles; nothing is allocated.  A Poisson
 * loss whose exp overflows is +inf, not an error: the solvers' line
 * searches reject such steps.  y is not checked (ck_glm_bad_y).  key: 0,
 * or x's operand key (backends/backend.h, ck_be_key) when later passes
 * hand the same rows over again, with one key per row along its i.
 * center: as ck_glm_pass_fn's (each tile is copied less center into
 * scratch, and its products take no key). */
size_t ck_glm_block_scratch(const ck_be *be, int64_t rows, int64_t p);
ck_code ck_glm_block(const ck_be *be, const ck_glm_opts *o, const double *x,
                     const double *y, int64_t rows, int64_t p, uint64_t key,
                     const double *b, const double *center, double *loss,
                     double *grad, double *hess, double *scratch, ck_err *err);

/* Adds x's entries less center (rows x p row-major; center p entries or
 * NULL for 0) to sq[0..p), column by column, and their squares to
 * sq[p..2p): what a pass sums for its sq. */
void ck_glm_col_moments(const double *x, int64_t rows, int64_t p,
                        const double *center, double *sq);

/* Index of the first y outside the family's domain (logistic: 0 or 1;
 * poisson: >= 0; any family: finite), or -1. */
int64_t ck_glm_bad_y(ck_glm_family f, const double *y, int64_t n);

/* out[i] = the mean response for row i of x (rows x p): eta for normal,
 * 1/(1+exp(-eta)) for logistic, exp(eta) for poisson; eta = x_i.w + c
 * (c = 0 without an intercept). */
ck_code ck_glm_predict(const ck_be *be, ck_glm_family f, const double *x,
                       int64_t rows, int64_t p, const double *w, double c,
                       double *out, ck_err *err);

#endif
