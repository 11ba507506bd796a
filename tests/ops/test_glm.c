/*
 * tests/ops/test_glm.c - the Criterion suite "glm": ops/glm.h's solvers,
 * block sums and helpers against optima computed by statsmodels, scipy,
 * sklearn and NumPy (tests/data/ops/glm_cases.txt, made by gen_glm.py
 * beside it; see the README there).  The data go to the solvers through
 * an in-memory pass that feeds ck_glm_block blocks of BLOCK rows, as
 * pipelines/ does with blocks read from disk.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/glm.h"

TestSuite(glm, .description = "ops/glm.h: GLM solvers against statsmodels, "
                              "scipy, sklearn and NumPy");

#define BLOCK 64
#define MAX_D 8
#define MAX_CASES 64
#define MAX_RECORDS 16

static const ck_glm_solver SOLVERS[] = {CK_GLM_NEWTON, CK_GLM_LBFGS,
                                        CK_GLM_GRADIENT_DESCENT,
                                        CK_GLM_PROXIMAL_GRAD, CK_GLM_ADMM};
static const ck_glm_family FAMILIES[] = {CK_GLM_NORMAL, CK_GLM_LOGISTIC,
                                         CK_GLM_POISSON};

/* ---- glm_cases.txt ---- */

typedef struct dataset {
    int64_t n, p;
    double *x;    /* n x p row-major */
    double *y[3]; /* indexed by ck_glm_family */
} dataset;

typedef struct gcase {
    int dup; /* data "dup": main with column 0 repeated as column p */
    ck_glm_family fam;
    ck_glm_reg reg;
    double lambda, l1_ratio;
    int fi;
    int64_t d;
    double b[MAX_D];
} gcase;

typedef struct tables {
    dataset main, dup;
    gcase cases[MAX_CASES];
    int ncases;
    char *pass[MAX_RECORDS], *block[MAX_RECORDS], *predict[MAX_RECORDS];
    int npass, nblock, npredict;
} tables;

static tables T;

static char *data_path(const char *name)
{
    const char *dir = getenv("CK_TEST_DATA");
    static char path[4096];

    snprintf(path, sizeof path, "%s/ops/%s", dir ? dir : "tests/data", name);
    return path;
}

static char *tok(char **save)
{
    char *t = strtok_r(NULL, " \n", save);
    cr_assert(t, "glm_cases.txt: short line");
    return t;
}

static double num(char **save)
{
    return strtod(tok(save), NULL);
}

static void nums(char **save, double *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = num(save);
}

static ck_glm_family family(const char *s)
{
    ck_glm_family f;
    cr_assert(ck_glm_family_lookup(s, &f), "unknown family %s", s);
    return f;
}

static void load(void)
{
    FILE *fp = fopen(data_path("glm_cases.txt"), "r");
    char line[1 << 16];
    int64_t row = 0;

    if (T.main.x)
        return;
    cr_assert(fp, "cannot open %s (set CK_TEST_DATA)",
              data_path("glm_cases.txt"));
    while (fgets(line, sizeof line, fp)) {
        char *save = NULL, *kind = strtok_r(line, " \n", &save);
        if (!kind || kind[0] == '#')
            continue;
        if (strcmp(kind, "data") == 0) {
            tok(&save);
            T.main.n = (int64_t)num(&save);
            T.main.p = (int64_t)num(&save);
            T.main.x = malloc((size_t)(T.main.n * T.main.p) * sizeof(double));
            for (int f = 0; f < 3; f++)
                T.main.y[f] = malloc((size_t)T.main.n * sizeof(double));
        } else if (strcmp(kind, "row") == 0) {
            cr_assert(row < T.main.n);
            nums(&save, T.main.x + row * T.main.p, T.main.p);
            for (int f = 0; f < 3; f++)
                T.main.y[f][row] = num(&save);
            row++;
        } else if (strcmp(kind, "case") == 0) {
            gcase *c = &T.cases[T.ncases++];
            cr_assert(T.ncases <= MAX_CASES);
            c->dup = strcmp(tok(&save), "dup") == 0;
            c->fam = family(tok(&save));
            cr_assert(ck_glm_reg_lookup(tok(&save), &c->reg));
            c->lambda = num(&save);
            c->l1_ratio = num(&save);
            c->fi = (int)num(&save);
            c->d = (int64_t)num(&save);
            cr_assert(c->d <= MAX_D);
            nums(&save, c->b, c->d);
        } else {
            /* the rest is parsed by the tests that use it */
            char *copy = malloc(strlen(save) + 1);
            memcpy(copy, save, strlen(save) + 1);
            if (strcmp(kind, "pass") == 0)
                T.pass[T.npass++] = copy;
            else if (strcmp(kind, "block") == 0)
                T.block[T.nblock++] = copy;
            else if (strcmp(kind, "predict") == 0)
                T.predict[T.npredict++] = copy;
            else
                cr_assert_fail("glm_cases.txt: unknown record %s", kind);
            cr_assert(T.npass < MAX_RECORDS && T.nblock < MAX_RECORDS &&
                      T.npredict < MAX_RECORDS);
        }
    }
    fclose(fp);
    cr_assert_eq(row, T.main.n);

    /* dup: column 0 again as column p, so x is rank deficient */
    int64_t n = T.main.n, p = T.main.p + 1;
    T.dup = (dataset){.n = n, .p = p};
    T.dup.x = malloc((size_t)(n * p) * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        memcpy(T.dup.x + i * p, T.main.x + i * T.main.p,
               (size_t)T.main.p * sizeof(double));
        T.dup.x[i * p + p - 1] = T.main.x[i * T.main.p];
    }
    for (int f = 0; f < 3; f++)
        T.dup.y[f] = T.main.y[f];
}

/* ---- the data, streamed in blocks ---- */

typedef struct passctx {
    const ck_be *be;
    const ck_glm_opts *o;
    const double *x, *y;
    int64_t n, p, block;
    double *scratch; /* exactly ck_glm_block_scratch(NULL, block, p) doubles */
    int npass;
} passctx;

static ck_code pass_fn(void *vc, const double *b, const double *center,
                       double *loss, double *grad, double *hess, double *sq,
                       ck_err *err)
{
    passctx *c = vc;
    int64_t d = c->p + (c->o->fit_intercept != 0);

    *loss = 0;
    if (sq) {
        memset(sq, 0, (size_t)(2 * c->p) * sizeof *sq);
        ck_glm_col_moments(c->x, c->n, c->p, center, sq);
        for (int64_t j = 0; j < 2 * c->p; j++)
            sq[j] /= (double)c->n;
    }
    if (grad)
        memset(grad, 0, (size_t)d * sizeof *grad);
    if (hess)
        memset(hess, 0, (size_t)(d * d) * sizeof *hess);
    for (int64_t r0 = 0; r0 < c->n; r0 += c->block) {
        int64_t rows = c->n - r0 < c->block ? c->n - r0 : c->block;
        CK_TRY(ck_glm_block(c->be, c->o, c->x ? c->x + r0 * c->p : NULL,
                            c->y + r0, rows, c->p, 0, b, center, loss, grad,
                            hess, c->scratch, err));
    }
    *loss /= (double)c->n;
    for (int64_t i = 0; grad && i < d; i++)
        grad[i] /= (double)c->n;
    for (int64_t i = 0; hess && i < d * d; i++)
        hess[i] /= (double)c->n;
    c->npass++;
    return CK_OK;
}

static passctx mkpass(const ck_be *be, const ck_glm_opts *o, const double *x,
                      const double *y, int64_t n, int64_t p, int64_t block)
{
    passctx c = {.be = be, .o = o, .x = x, .y = y, .n = n, .p = p};
    c.block = block;
    c.scratch = malloc(ck_glm_block_scratch(NULL, block, p) * sizeof(double));
    return c;
}

static ck_be be_open(void)
{
    ck_be be = {0};
    ck_err err = {0};
    cr_assert_eq(ck_be_open("cpu", &(ck_be_opts){0}, &be, &err), CK_OK, "%s",
                 err.msg);
    return be;
}

static const dataset *data_of(const gcase *c)
{
    return c->dup ? &T.dup : &T.main;
}

static ck_glm_opts opts_of(const gcase *c, ck_glm_solver s)
{
    return (ck_glm_opts){.family = c->fam,
                         .solver = s,
                         .reg = c->reg,
                         .lambda = c->lambda,
                         .l1_ratio = c->l1_ratio,
                         .fit_intercept = c->fi};
}

/* The optimality measure of ops/glm.h, written out again here: the
 * largest entry of the least-norm subgradient of f at b. */
/* The optimality measure as ck_glm_fit takes it, each entry over its
 * column's root mean square rms[j] (NULL: all 1). */
static double kkt_rms(const ck_glm_opts *o, int64_t p, const double *b,
                      const double *g, const double *rms)
{
    double l1 = 0, l2 = 0, m = 0;
    int64_t d = p + (o->fit_intercept != 0);

    if (o->reg == CK_GLM_REG_L1)
        l1 = o->lambda;
    if (o->reg == CK_GLM_REG_L2)
        l2 = o->lambda;
    if (o->reg == CK_GLM_REG_ELASTIC_NET) {
        l1 = o->lambda * o->l1_ratio;
        l2 = o->lambda * (1 - o->l1_ratio);
    }
    for (int64_t j = 0; j < d; j++) {
        double v = g[j];
        if (j < p) {
            v += l2 * b[j];
            if (b[j] != 0)
                v += b[j] > 0 ? l1 : -l1;
            else
                v = fmax(fabs(v) - l1, 0);
            if (rms)
                v /= rms[j];
        }
        m = fmax(m, fabs(v));
    }
    return m;
}

static double kkt(const ck_glm_opts *o, int64_t p, const double *b,
                  const double *g)
{
    return kkt_rms(o, p, b, g, NULL);
}

/* The root mean square of each of x's p columns (n rows). */
static void col_rms(const double *x, int64_t n, int64_t p, double *rms)
{
    for (int64_t j = 0; j < p; j++) {
        double s = 0;
        for (int64_t i = 0; i < n; i++)
            s += x[i * p + j] * x[i * p + j];
        rms[j] = sqrt(s / (double)n);
    }
}

static double penalty(const ck_glm_opts *o, int64_t p, const double *b)
{
    double a = 0, q = 0;
    for (int64_t j = 0; j < p; j++) {
        a += fabs(b[j]);
        q += b[j] * b[j];
    }
    switch (o->reg) {
    case CK_GLM_REG_L1:
        return o->lambda * a;
    case CK_GLM_REG_L2:
        return o->lambda * q / 2;
    case CK_GLM_REG_ELASTIC_NET:
        return o->lambda * (o->l1_ratio * a + (1 - o->l1_ratio) * q / 2);
    default:
        return 0;
    }
}

static int smooth_only(ck_glm_solver s)
{
    return s == CK_GLM_NEWTON || s == CK_GLM_LBFGS ||
           s == CK_GLM_GRADIENT_DESCENT;
}

static int nonsmooth(const gcase *c)
{
    return c->reg == CK_GLM_REG_L1 ||
           (c->reg == CK_GLM_REG_ELASTIC_NET && c->l1_ratio > 0);
}

/* ---- every accepted solver x family x regulariser ---- */

static void solve_all(ck_glm_solver s)
{
    ck_be be = be_open();
    double worst_b = 0, worst_kkt = 0;
    int tried = 0, passes = 0;

    load();
    for (int k = 0; k < T.ncases; k++) {
        const gcase *c = &T.cases[k];
        const dataset *ds = data_of(c);
        ck_glm_opts o = opts_of(c, s);
        ck_glm_result res = {0};
        ck_err err = {0};
        char what[160];

        snprintf(what, sizeof what, "%s %s %s lambda %g l1_ratio %g%s%s",
                 ck_glm_solver_name(s), ck_glm_family_name(c->fam),
                 ck_glm_reg_name(c->reg), c->lambda, c->l1_ratio,
                 c->fi ? "" : " no intercept", c->dup ? " (dup)" : "");
        if (smooth_only(s) && nonsmooth(c)) {
            cr_assert_eq(ck_glm_check(&o, &err), CK_EUSAGE, "%s", what);
            continue;
        }
        passctx pc = mkpass(&be, &o, ds->x, ds->y[c->fam], ds->n, ds->p, BLOCK);
        cr_assert_eq(ck_glm_fit(&be, &o, ds->p, pass_fn, &pc, NULL, &res, &err),
                     CK_OK, "%s: %s", what, err.msg);
        cr_assert_eq(res.d, c->d, "%s", what);
        cr_assert(res.converged, "%s: not converged after %d iterations", what,
                  res.iterations);

        double berr = 0;
        for (int64_t j = 0; j < c->d; j++)
            berr = fmax(berr, fabs(res.b[j] - c->b[j]));
        /* smooth problems: 1e-6 of the optimum; l1 and elastic net:
         * 1e-5 of the reference and the subgradient conditions to 1e-6 */
        cr_assert(berr <= (nonsmooth(c) ? 1e-5 : 1e-6),
                  "%s: coefficients off by %.3g", what, berr);
        worst_b = fmax(worst_b, berr);

        double loss, g[MAX_D];
        cr_assert_eq(pass_fn(&pc, res.b, NULL, &loss, g, NULL, NULL, &err),
                     CK_OK);
        double m = kkt(&o, ds->p, res.b, g);
        cr_assert(m <= 1e-6, "%s: subgradient residual %.3g", what, m);
        worst_kkt = fmax(worst_kkt, m);
        double f = loss + penalty(&o, ds->p, res.b);
        cr_assert(fabs(res.objective - f) <= 1e-12 * (1 + fabs(f)),
                  "%s: objective %.17g, recomputed %.17g", what, res.objective,
                  f);
        passes += pc.npass;
        tried++;
        free(pc.scratch);
        ck_glm_result_release(&res);
    }
    cr_assert(tried > 0);
    cr_log_info("%s: %d problems, %d passes, max |b - ref| %.3g, max "
                "subgradient residual %.3g",
                ck_glm_solver_name(s), tried, passes, worst_b, worst_kkt);
    ck_be_close(&be);
}

Test(glm, newton_matches_references)
{
    solve_all(CK_GLM_NEWTON);
}

Test(glm, lbfgs_matches_references)
{
    solve_all(CK_GLM_LBFGS);
}

Test(glm, gradient_descent_matches_references)
{
    solve_all(CK_GLM_GRADIENT_DESCENT);
}

Test(glm, proximal_grad_matches_references)
{
    solve_all(CK_GLM_PROXIMAL_GRAD);
}

Test(glm, admm_matches_references)
{
    solve_all(CK_GLM_ADMM);
}

/* ---- which combinations are refused ---- */

Test(glm, smooth_solvers_refuse_l1_and_elastic_net)
{
    static const struct {
        ck_glm_reg reg;
        double l1_ratio;
    } bad[] = {{CK_GLM_REG_L1, 0},
               {CK_GLM_REG_ELASTIC_NET, 0.5},
               {CK_GLM_REG_ELASTIC_NET, 1},
               {CK_GLM_REG_ELASTIC_NET, 1e-9}};

    for (size_t s = 0; s < 3; s++) {
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            ck_glm_opts o = {.family = CK_GLM_LOGISTIC,
                             .solver = SOLVERS[s],
                             .reg = bad[k].reg,
                             .lambda = 0.1,
                             .l1_ratio = bad[k].l1_ratio,
                             .fit_intercept = 1};
            ck_err err = {0};
            cr_assert_eq(ck_glm_check(&o, &err), CK_EUSAGE);
            cr_assert(strstr(err.msg, "use proximal_grad or admm"), "%s",
                      err.msg);
            cr_assert(strstr(err.msg, ck_glm_solver_name(SOLVERS[s])), "%s",
                      err.msg);
            for (const char *c = err.msg; *c; c++)
                cr_assert(!(*c >= 'A' && *c <= 'Z') && *c != '\n', "%s",
                          err.msg);

            /* ck_glm_fit refuses the same, before any pass, and leaves
             * the result alone */
            ck_glm_result res = {.d = 42};
            ck_err err2 = {0};
            cr_assert_eq(
                ck_glm_fit(NULL, &o, 3, pass_fn, NULL, NULL, &res, &err2),
                CK_EUSAGE);
            cr_assert_str_eq(err2.msg, err.msg);
            cr_assert_eq(res.d, 42);
            cr_assert_null(res.b);
        }
    }
}

Test(glm, accepted_combinations)
{
    for (size_t s = 0; s < 5; s++) {
        for (int r = 0; r < 4; r++) {
            for (int k = 0; k < 3; k++) {
                double ratio = k * 0.5;
                ck_glm_opts o = {.family = CK_GLM_POISSON,
                                 .solver = SOLVERS[s],
                                 .reg = (ck_glm_reg)r,
                                 .lambda = 0.1,
                                 .l1_ratio = ratio};
                ck_err err = {0};
                int refused = smooth_only(SOLVERS[s]) &&
                              (r == CK_GLM_REG_L1 ||
                               (r == CK_GLM_REG_ELASTIC_NET && ratio > 0));
                cr_assert_eq(ck_glm_check(&o, &err),
                             refused ? CK_EUSAGE : CK_OK, "%s %s %g: %s",
                             ck_glm_solver_name(SOLVERS[s]),
                             ck_glm_reg_name((ck_glm_reg)r), ratio, err.msg);
            }
        }
    }
}

Test(glm, check_rejects_bad_numbers)
{
    static const struct {
        double lambda, l1_ratio, tol;
        int max_iter;
        const char *msg;
    } bad[] = {
        {-0.1, 0.5, 0, 0, "lambda must be a finite number >= 0"},
        {NAN, 0.5, 0, 0, "lambda"},
        {INFINITY, 0.5, 0, 0, "lambda"},
        {0.1, -0.1, 0, 0, "l1_ratio must be in [0, 1]"},
        {0.1, 1.5, 0, 0, "l1_ratio must be in [0, 1]"},
        {0.1, NAN, 0, 0, "l1_ratio"},
        {0.1, 0.5, -1e-3, 0, "tol must be"},
        {0.1, 0.5, NAN, 0, "tol must be"},
        {0.1, 0.5, 0, -1, "max_iter must be >= 0"},
    };

    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ck_glm_opts o = {.family = CK_GLM_NORMAL,
                         .solver = CK_GLM_ADMM,
                         .reg = CK_GLM_REG_ELASTIC_NET,
                         .lambda = bad[k].lambda,
                         .l1_ratio = bad[k].l1_ratio,
                         .tol = bad[k].tol,
                         .max_iter = bad[k].max_iter};
        ck_err err = {0};
        cr_assert_eq(ck_glm_check(&o, &err), CK_EUSAGE, "case %zu", k);
        cr_assert(strstr(err.msg, bad[k].msg), "%s", err.msg);
    }

    ck_glm_opts o = {.family = (ck_glm_family)7};
    ck_err err = {0};
    cr_assert_eq(ck_glm_check(&o, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "unknown family"), "%s", err.msg);
}

/* ---- names ---- */

Test(glm, names_round_trip)
{
    for (int i = 0; i < 3; i++) {
        ck_glm_family f = (ck_glm_family)-1;
        cr_assert(ck_glm_family_lookup(ck_glm_family_name(FAMILIES[i]), &f));
        cr_assert_eq(f, FAMILIES[i]);
    }
    for (int i = 0; i < 5; i++) {
        ck_glm_solver s = (ck_glm_solver)-1;
        cr_assert(ck_glm_solver_lookup(ck_glm_solver_name(SOLVERS[i]), &s));
        cr_assert_eq(s, SOLVERS[i]);
    }
    for (int i = 0; i < 4; i++) {
        ck_glm_reg r = (ck_glm_reg)-1;
        cr_assert(ck_glm_reg_lookup(ck_glm_reg_name((ck_glm_reg)i), &r));
        cr_assert_eq(r, (ck_glm_reg)i);
    }
    cr_assert_str_eq(ck_glm_family_name(CK_GLM_LOGISTIC), "logistic");
    cr_assert_str_eq(ck_glm_solver_name(CK_GLM_LBFGS), "lbfgs");
    cr_assert_str_eq(ck_glm_solver_name(CK_GLM_GRADIENT_DESCENT),
                     "gradient_descent");
    cr_assert_str_eq(ck_glm_solver_name(CK_GLM_PROXIMAL_GRAD), "proximal_grad");
    cr_assert_str_eq(ck_glm_reg_name(CK_GLM_REG_ELASTIC_NET), "elastic_net");

    ck_glm_family f = CK_GLM_POISSON;
    ck_glm_solver s = CK_GLM_ADMM;
    ck_glm_reg r = CK_GLM_REG_L2;
    cr_assert_not(ck_glm_family_lookup("gaussian", &f));
    cr_assert_not(ck_glm_solver_lookup("Newton", &s));
    cr_assert_not(ck_glm_reg_lookup("", &r));
    cr_assert_not(ck_glm_reg_lookup(NULL, &r));
    cr_assert_eq(f, CK_GLM_POISSON, "a failed lookup writes nothing");
    cr_assert_eq(s, CK_GLM_ADMM);
    cr_assert_eq(r, CK_GLM_REG_L2);
}

/* ---- one block ---- */

static void assert_close(const char *what, const double *got,
                         const double *want, int64_t n, double rtol)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= rtol * (1 + fabs(want[i])),
                  "%s[%lld]: %.17g, numpy %.17g", what, (long long)i, got[i],
                  want[i]);
}

Test(glm, pass_matches_numpy_for_any_blocking)
{
    static const int64_t blocks[] = {BLOCK, 400, 7, 1};
    ck_be be = be_open();

    load();
    cr_assert(T.npass >= 6);
    for (int k = 0; k < T.npass; k++) {
        char *line = strdup(T.pass[k]), *save = NULL;
        strtok_r(line, " \n", &save); /* data main */
        ck_glm_opts o = {.family = family(tok(&save))};
        o.fit_intercept = (int)num(&save);
        int64_t d = (int64_t)num(&save);
        double b[MAX_D], loss, g[MAX_D], h[MAX_D * MAX_D];
        double gl, gg[MAX_D], gh[MAX_D * MAX_D];
        nums(&save, b, d);
        loss = num(&save);
        nums(&save, g, d);
        nums(&save, h, d * d);
        for (size_t m = 0; m < sizeof blocks / sizeof blocks[0]; m++) {
            ck_err err = {0};
            passctx pc = mkpass(&be, &o, T.main.x, T.main.y[o.family], T.main.n,
                                T.main.p, blocks[m]);
            cr_assert_eq(pass_fn(&pc, b, NULL, &gl, gg, gh, NULL, &err), CK_OK,
                         "%s", err.msg);
            assert_close("loss", &gl, &loss, 1, 1e-13);
            assert_close("grad", gg, g, d, 1e-13);
            assert_close("hess", gh, h, d * d, 1e-13);
            for (int64_t i = 0; i < d; i++)
                for (int64_t j = 0; j < d; j++)
                    cr_assert_eq(gh[i * d + j], gh[j * d + i],
                                 "hessian not symmetric");
            /* loss alone: grad and hess may be NULL */
            cr_assert_eq(pass_fn(&pc, b, NULL, &gl, NULL, NULL, NULL, &err),
                         CK_OK);
            assert_close("loss alone", &gl, &loss, 1, 1e-13);
            free(pc.scratch);
        }
        free(line);
    }
    ck_be_close(&be);
}

Test(glm, block_is_stable_for_extreme_eta)
{
    ck_be be = be_open();

    load();
    cr_assert(T.nblock >= 4);
    for (int k = 0; k < T.nblock; k++) {
        char *line = strdup(T.block[k]), *save = NULL;
        ck_glm_opts o = {.family = family(strtok_r(line, " \n", &save))};
        o.fit_intercept = (int)num(&save);
        int64_t rows = (int64_t)num(&save), p = (int64_t)num(&save);
        int64_t d = p + o.fit_intercept;
        double b[MAX_D], x[64], y[32], loss, g[MAX_D], h[MAX_D * MAX_D];
        nums(&save, b, d);
        nums(&save, x, rows * p);
        nums(&save, y, rows);
        loss = num(&save);
        nums(&save, g, d);
        nums(&save, h, d * d);

        /* sums are added to what is there */
        double gl = 1, gg[MAX_D], gh[MAX_D * MAX_D];
        for (int64_t i = 0; i < d; i++)
            gg[i] = 1;
        for (int64_t i = 0; i < d * d; i++)
            gh[i] = 1;
        double *scratch =
            malloc(ck_glm_block_scratch(NULL, rows, p) * sizeof *scratch);
        ck_err err = {0};
        cr_assert_eq(ck_glm_block(&be, &o, x, y, rows, p, 0, b, NULL, &gl, gg,
                                  gh, scratch, &err),
                     CK_OK, "%s", err.msg);
        gl -= 1;
        for (int64_t i = 0; i < d; i++)
            gg[i] -= 1;
        for (int64_t i = 0; i < d * d; i++)
            gh[i] -= 1;
        cr_assert(isfinite(gl), "%s: loss %g", ck_glm_family_name(o.family),
                  gl);
        assert_close("block loss", &gl, &loss, 1, 1e-12);
        assert_close("block grad", gg, g, d, 1e-12);
        assert_close("block hess", gh, h, d * d, 1e-12);
        free(scratch);
        free(line);
    }
    ck_be_close(&be);
}

Test(glm, block_of_no_rows_adds_nothing)
{
    ck_be be = be_open();
    ck_glm_opts o = {.family = CK_GLM_LOGISTIC, .fit_intercept = 1};
    double b[3] = {1, 2, 3}, loss = 5, g[3] = {1, 1, 1}, h[9] = {0};
    ck_err err = {0};

    cr_assert_eq(ck_glm_block(&be, &o, NULL, NULL, 0, 2, 0, b, NULL, &loss, g,
                              h, NULL, &err),
                 CK_OK);
    cr_assert_eq(loss, 5);
    cr_assert_eq(g[2], 1);
    ck_be_close(&be);
}

/* A Poisson loss that overflows is inf, not an error: the solvers' line
 * searches reject such steps. */
Test(glm, poisson_overflow_is_inf)
{
    ck_be be = be_open();
    ck_glm_opts o = {.family = CK_GLM_POISSON, .fit_intercept = 1};
    double x[2] = {1, 2}, y[2] = {0, 3}, b[2] = {500, 0}, loss = 0;
    double scratch[16];
    ck_err err = {0};

    cr_assert_leq(ck_glm_block_scratch(NULL, 2, 1), 16);
    cr_assert_eq(ck_glm_block(&be, &o, x, y, 2, 1, 0, b, NULL, &loss, NULL,
                              NULL, scratch, &err),
                 CK_OK);
    cr_assert(isinf(loss) && loss > 0);
    ck_be_close(&be);
}

/* ---- solver behaviour ---- */

Test(glm, newton_refuses_rank_deficient_x)
{
    ck_be be = be_open();

    load();
    for (int f = 0; f < 3; f++) {
        ck_glm_opts o = {
            .family = FAMILIES[f], .solver = CK_GLM_NEWTON, .fit_intercept = 1};
        passctx pc =
            mkpass(&be, &o, T.dup.x, T.dup.y[f], T.dup.n, T.dup.p, BLOCK);
        ck_glm_result res = {.d = 42};
        ck_err err = {0};
        cr_assert_eq(
            ck_glm_fit(&be, &o, T.dup.p, pass_fn, &pc, NULL, &res, &err),
            CK_ENOTSUP, "%s", ck_glm_family_name(FAMILIES[f]));
        cr_assert(strstr(err.msg, "x is rank deficient") &&
                      strstr(err.msg, "hessian is singular") &&
                      strstr(err.msg, "add an l2 penalty"),
                  "%s", err.msg);
        cr_assert_eq(res.d, 42, "no result on failure");
        cr_assert_null(res.b);
        free(pc.scratch);
    }
    ck_be_close(&be);
}

Test(glm, max_iter_reached_is_not_an_error)
{
    ck_be be = be_open();

    load();
    for (int s = 0; s < 5; s++) {
        for (int l1 = 0; l1 < 2; l1++) {
            if (l1 && smooth_only(SOLVERS[s]))
                continue;
            ck_glm_opts o = {.family = CK_GLM_LOGISTIC,
                             .solver = SOLVERS[s],
                             .reg = l1 ? CK_GLM_REG_L1 : CK_GLM_REG_NONE,
                             .lambda = l1 ? 0.02 : 0,
                             .fit_intercept = 1,
                             .max_iter = 1};
            passctx pc = mkpass(&be, &o, T.main.x, T.main.y[CK_GLM_LOGISTIC],
                                T.main.n, T.main.p, BLOCK);
            ck_glm_result res = {0};
            ck_err err = {0};
            cr_assert_eq(
                ck_glm_fit(&be, &o, T.main.p, pass_fn, &pc, NULL, &res, &err),
                CK_OK, "%s", err.msg);
            cr_assert_eq(res.converged, 0, "%s",
                         ck_glm_solver_name(SOLVERS[s]));
            cr_assert_eq(res.iterations, 1, "%s: %d iterations",
                         ck_glm_solver_name(SOLVERS[s]), res.iterations);
            cr_assert_eq(res.d, T.main.p + 1);
            for (int64_t j = 0; j < res.d; j++)
                cr_assert(isfinite(res.b[j]));
            /* the last iterate, with its objective */
            double loss;
            cr_assert_eq(
                pass_fn(&pc, res.b, NULL, &loss, NULL, NULL, NULL, &err),
                CK_OK);
            double f = loss + penalty(&o, T.main.p, res.b);
            cr_assert(fabs(res.objective - f) <= 1e-12 * (1 + f));
            cr_assert_lt(res.objective, log(2.0), "moved downhill from 0");
            ck_glm_result_release(&res);
            free(pc.scratch);
        }
    }
    ck_be_close(&be);
}

Test(glm, tol_is_honoured)
{
    ck_be be = be_open();

    load();
    for (int s = 0; s < 5; s++) {
        ck_glm_opts o = {.family = CK_GLM_POISSON,
                         .solver = SOLVERS[s],
                         .reg = CK_GLM_REG_L2,
                         .lambda = 0.05,
                         .fit_intercept = 1,
                         .tol = 1e-3};
        passctx pc = mkpass(&be, &o, T.main.x, T.main.y[CK_GLM_POISSON],
                            T.main.n, T.main.p, BLOCK);
        ck_glm_result loose = {0}, tight = {0};
        ck_err err = {0};
        cr_assert_eq(
            ck_glm_fit(&be, &o, T.main.p, pass_fn, &pc, NULL, &loose, &err),
            CK_OK);
        o.tol = 0;
        cr_assert_eq(
            ck_glm_fit(&be, &o, T.main.p, pass_fn, &pc, NULL, &tight, &err),
            CK_OK);
        cr_assert(loose.converged && tight.converged);
        cr_assert_lt(loose.iterations, tight.iterations, "%s",
                     ck_glm_solver_name(SOLVERS[s]));
        double loss, g[MAX_D];
        cr_assert_eq(pass_fn(&pc, loose.b, NULL, &loss, g, NULL, NULL, &err),
                     CK_OK);
        cr_assert_leq(kkt(&o, T.main.p, loose.b, g), 1e-3);
        ck_glm_result_release(&loose);
        ck_glm_result_release(&tight);
        free(pc.scratch);
    }
    ck_be_close(&be);
}

/* Counts in the thousands: from b = 0 the first full Newton or gradient
 * step puts the intercept near 1000, where exp overflows; the line
 * searches must back off rather than fail.  With no features the answer
 * is log(mean y). */
Test(glm, poisson_large_counts_intercept_only)
{
    double y[50], sum = 0;
    ck_be be = be_open();

    for (int i = 0; i < 50; i++) {
        y[i] = 900 + 4 * i;
        sum += y[i];
    }
    for (int s = 0; s < 5; s++) {
        ck_glm_opts o = {
            .family = CK_GLM_POISSON, .solver = SOLVERS[s], .fit_intercept = 1};
        passctx pc = mkpass(&be, &o, NULL, y, 50, 0, 16);
        ck_glm_result res = {0};
        ck_err err = {0};
        cr_assert_eq(ck_glm_fit(&be, &o, 0, pass_fn, &pc, NULL, &res, &err),
                     CK_OK, "%s: %s", ck_glm_solver_name(SOLVERS[s]), err.msg);
        cr_assert(res.converged, "%s", ck_glm_solver_name(SOLVERS[s]));
        cr_assert_eq(res.d, 1);
        cr_assert(fabs(res.b[0] - log(sum / 50)) <= 1e-9, "%s: %.17g",
                  ck_glm_solver_name(SOLVERS[s]), res.b[0]);
        ck_glm_result_release(&res);
        free(pc.scratch);
    }
    ck_be_close(&be);
}

static ck_code failing_pass(void *ctx, const double *b, const double *center,
                            double *loss, double *grad, double *hess,
                            double *sq, ck_err *err)
{
    int *left = ctx;
    (void)b;
    (void)center;
    (void)grad;
    (void)hess;
    (void)sq;
    *loss = 1;
    if ((*left)-- > 0)
        return CK_OK;
    return ck_err_set(err, CK_EIO, "x.h5: read failed");
}

Test(glm, pass_errors_are_returned)
{
    for (int s = 0; s < 5; s++) {
        int left = 0;
        ck_glm_opts o = {.family = CK_GLM_NORMAL, .solver = SOLVERS[s]};
        ck_glm_result res = {.d = 42};
        ck_err err = {0};
        cr_assert_eq(
            ck_glm_fit(NULL, &o, 2, failing_pass, &left, NULL, &res, &err),
            CK_EIO);
        cr_assert_str_eq(err.msg, "x.h5: read failed");
        cr_assert_eq(res.d, 42);
    }
}

Test(glm, bad_start_and_empty_model)
{
    ck_be be = be_open();
    double x[4] = {1, NAN, 2, 3}, y[2] = {1, 2};
    ck_glm_opts o = {
        .family = CK_GLM_NORMAL, .solver = CK_GLM_LBFGS, .fit_intercept = 1};
    passctx pc = mkpass(&be, &o, x, y, 2, 2, 2);
    ck_glm_result res = {0};
    ck_err err = {0};

    cr_assert_eq(ck_glm_fit(&be, &o, 2, pass_fn, &pc, NULL, &res, &err),
                 CK_EUSAGE);
    cr_assert(strstr(err.msg, "not finite"), "%s", err.msg);
    free(pc.scratch);

    o.fit_intercept = 0;
    ck_err err2 = {0};
    cr_assert_eq(ck_glm_fit(&be, &o, 0, pass_fn, NULL, NULL, &res, &err2),
                 CK_EUSAGE);
    cr_assert(strstr(err2.msg, "nothing to fit"), "%s", err2.msg);
    ck_be_close(&be);
}

/* ---- responses and predictions ---- */

Test(glm, bad_y)
{
    double ok[] = {0, 1, 1, 0, -0.0};
    double half[] = {0, 1, 0.5};
    double two[] = {1, 2};
    double neg[] = {0, 3.5, 1e300, -1};
    double nan[] = {1, 0, NAN};
    double inf[] = {1, INFINITY};

    cr_assert_eq(ck_glm_bad_y(CK_GLM_LOGISTIC, ok, 5), -1);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_LOGISTIC, half, 3), 2);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_LOGISTIC, two, 2), 1);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_LOGISTIC, nan, 3), 2);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_POISSON, ok, 5), -1);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_POISSON, neg, 4), 3);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_POISSON, neg, 3), -1);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_POISSON, inf, 2), 1);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_NORMAL, neg, 4), -1);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_NORMAL, nan, 3), 2);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_NORMAL, inf, 2), 1);
    cr_assert_eq(ck_glm_bad_y(CK_GLM_NORMAL, NULL, 0), -1);
}

Test(glm, predict_matches_numpy)
{
    ck_be be = be_open();

    load();
    cr_assert(T.npredict >= 4);
    for (int k = 0; k < T.npredict; k++) {
        char *line = strdup(T.predict[k]), *save = NULL;
        ck_glm_family f = family(strtok_r(line, " \n", &save));
        int64_t rows = (int64_t)num(&save), p = (int64_t)num(&save);
        double c = num(&save), w[MAX_D], x[64], want[32], got[32];
        nums(&save, w, p);
        nums(&save, x, rows * p);
        nums(&save, want, rows);
        ck_err err = {0};
        cr_assert_eq(ck_glm_predict(&be, f, x, rows, p, w, c, got, &err), CK_OK,
                     "%s", err.msg);
        for (int64_t i = 0; i < rows; i++)
            cr_assert(fabs(got[i] - want[i]) <= 1e-13 * fabs(want[i]) + 1e-300,
                      "%s row %lld: %.17g, numpy %.17g", ck_glm_family_name(f),
                      (long long)i, got[i], want[i]);
        free(line);
    }

    /* no features: the intercept's mean for every row */
    double out[3];
    ck_err err = {0};
    cr_assert_eq(
        ck_glm_predict(&be, CK_GLM_POISSON, NULL, 3, 0, NULL, 0, out, &err),
        CK_OK);
    cr_assert_eq(out[2], 1.0);
    ck_be_close(&be);
}

Test(glm, result_release_accepts_zeroed_and_twice)
{
    ck_glm_result res = {0};

    ck_glm_result_release(&res);
    res.b = malloc(3 * sizeof *res.b);
    res.d = 3;
    ck_glm_result_release(&res);
    cr_assert_null(res.b);
    cr_assert_eq(res.d, 0);
    ck_glm_result_release(&res);
    ck_glm_result_release(NULL);
}

/* Columns scaled by 1/4 .. 4: the Hessian's condition number grows by
 * 256, to some 1e3.  The first-order solvers must still reach tol within
 * their default max_iter.  The unpenalised optimum rescales exactly (w_j
 * / s_j); the l1 one does not, so there the subgradient conditions,
 * computed here (each entry over its column's root mean square, as
 * ck_glm_fit measures them), are the check.  Coefficients are held to
 * 1e-5 only: with the gradient below tol = 1e-8 they are within tol /
 * (smallest Hessian eigenvalue, here ~5e-3) of the optimum. */
Test(glm, moderately_conditioned_data)
{
    static const double sc[5] = {1, 4, 0.25, 2, 1};
    double rms[MAX_D];
    ck_be be = be_open();

    load();
    int64_t n = T.main.n, p = T.main.p;
    double *xs = malloc((size_t)(n * p) * sizeof *xs);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < p; j++)
            xs[i * p + j] = T.main.x[i * p + j] * sc[j];
    col_rms(xs, n, p, rms);
    for (int k = 0; k < T.ncases; k++) {
        const gcase *c = &T.cases[k];
        if (c->dup || !c->fi ||
            (c->reg != CK_GLM_REG_NONE && c->reg != CK_GLM_REG_L1))
            continue;
        for (int s = 0; s < 5; s++) {
            if (c->reg == CK_GLM_REG_L1 && smooth_only(SOLVERS[s]))
                continue;
            ck_glm_opts o = opts_of(c, SOLVERS[s]);
            passctx pc = mkpass(&be, &o, xs, T.main.y[c->fam], n, p, BLOCK);
            ck_glm_result res = {0};
            ck_err err = {0};
            const char *what = ck_glm_solver_name(SOLVERS[s]);
            cr_assert_eq(ck_glm_fit(&be, &o, p, pass_fn, &pc, NULL, &res, &err),
                         CK_OK, "%s: %s", what, err.msg);
            cr_assert(res.converged, "%s %s %s: not converged in %d", what,
                      ck_glm_family_name(c->fam), ck_glm_reg_name(c->reg),
                      res.iterations);
            double loss, g[MAX_D];
            cr_assert_eq(pass_fn(&pc, res.b, NULL, &loss, g, NULL, NULL, &err),
                         CK_OK);
            cr_assert_leq(kkt_rms(&o, p, res.b, g, rms), 1e-8, "%s", what);
            for (int64_t j = 0; c->reg == CK_GLM_REG_NONE && j < c->d; j++)
                cr_assert(fabs(res.b[j] - c->b[j] / (j < p ? sc[j] : 1)) <=
                              1e-5,
                          "%s %s: b[%lld] = %.17g", what,
                          ck_glm_family_name(c->fam), (long long)j, res.b[j]);
            ck_glm_result_release(&res);
            free(pc.scratch);
        }
    }
    free(xs);
    ck_be_close(&be);
}

/* ck_glm_fit's measure is taken, and its solvers work, with x's columns
 * scaled to unit mean square, so x's units do not matter: with a column
 * in units of 1e-8 (the gradient's entry 1e-8 times smaller, below tol
 * at the start) and one in 1e10 (rounding alone keeps the entry above
 * tol), every solver converges to the unpenalised optimum over those
 * units, as on moderately conditioned data, from 0 and (newton, lbfgs)
 * from a start whose point and Hessian are in the same units; the
 * Hessian newton hands back is in them too. */
Test(glm, column_units_do_not_matter)
{
    ck_be be = be_open();

    load();
    int64_t n = T.main.n, p = T.main.p;
    double u[MAX_D], *xs = malloc((size_t)(n * p) * sizeof *xs);
    for (int64_t j = 0; j < MAX_D; j++)
        u[j] = j == 0 ? 1e-8 : j == 1 ? 1e10 : 1;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < p; j++)
            xs[i * p + j] = T.main.x[i * p + j] * u[j];
    for (int k = 0; k < T.ncases; k++) {
        const gcase *c = &T.cases[k];
        if (c->dup || c->reg != CK_GLM_REG_NONE)
            continue;
        ck_glm_opts o = opts_of(c, CK_GLM_NEWTON);
        ck_err err = {0};
        ck_glm_result half = {0};
        passctx ph = mkpass(&be, &o, xs, T.main.y[c->fam], n / 2, p, BLOCK);
        cr_assert_eq(ck_glm_fit(&be, &o, p, pass_fn, &ph, NULL, &half, &err),
                     CK_OK, "%s", err.msg);
        cr_assert(half.converged && half.h);
        double loss, g[MAX_D], h[MAX_D * MAX_D];
        cr_assert_eq(pass_fn(&ph, half.b, NULL, &loss, g, h, NULL, &err),
                     CK_OK);
        for (int64_t i = 0; i < c->d; i++)
            for (int64_t j = 0; j < c->d; j++) {
                double si = i < p ? u[i] : 1, sj = j < p ? u[j] : 1;
                double a = half.h[i * c->d + j] / (si * sj);
                double e = h[i * c->d + j] / (si * sj);
                cr_assert(fabs(a - e) <= 3e-2 * (1 + fabs(e)),
                          "newton's Hessian [%lld, %lld]: %g, at b %g",
                          (long long)i, (long long)j, a, e);
            }
        ck_glm_start st = {.b = half.b, .h = half.h};
        for (int s = 0; s < 7; s++) {
            const ck_glm_start *from = s < 5 ? NULL : &st;
            o.solver = s < 5    ? SOLVERS[s]
                       : s == 5 ? CK_GLM_NEWTON
                                : CK_GLM_LBFGS;
            const char *what = ck_glm_solver_name(o.solver);
            passctx pc = mkpass(&be, &o, xs, T.main.y[c->fam], n, p, BLOCK);
            ck_glm_result res = {0};
            cr_assert_eq(ck_glm_fit(&be, &o, p, pass_fn, &pc, from, &res, &err),
                         CK_OK, "%s: %s", what, err.msg);
            cr_assert(res.converged, "%s %s: not converged in %d", what,
                      ck_glm_family_name(c->fam), res.iterations);
            for (int64_t j = 0; j < c->d; j++)
                cr_assert(fabs(res.b[j] * (j < p ? u[j] : 1) - c->b[j]) <= 1e-5,
                          "%s %s%s: b[%lld] = %.17g", what,
                          ck_glm_family_name(c->fam), from ? " (start)" : "",
                          (long long)j, res.b[j]);
            ck_glm_result_release(&res);
            free(pc.scratch);
        }
        ck_glm_result_release(&half);
        free(ph.scratch);
    }
    free(xs);
    ck_be_close(&be);
}

/* A penalty past lambda_max = max |grad_w S(0, c*)| zeroes every
 * coefficient; the unpenalised intercept is then the family's link of
 * mean(y). */
Test(glm, large_l1_penalty_zeroes_all_coefficients)
{
    ck_be be = be_open();

    load();
    for (int f = 0; f < 3; f++) {
        double ybar = 0;
        for (int64_t i = 0; i < T.main.n; i++)
            ybar += T.main.y[f][i];
        ybar /= (double)T.main.n;
        double want = FAMILIES[f] == CK_GLM_NORMAL     ? ybar
                      : FAMILIES[f] == CK_GLM_LOGISTIC ? log(ybar / (1 - ybar))
                                                       : log(ybar);
        for (int s = 3; s < 5; s++) {
            for (int en = 0; en < 2; en++) {
                ck_glm_opts o = {.family = FAMILIES[f],
                                 .solver = SOLVERS[s],
                                 .reg = en ? CK_GLM_REG_ELASTIC_NET
                                           : CK_GLM_REG_L1,
                                 .lambda = 10,
                                 .l1_ratio = 0.5,
                                 .fit_intercept = 1};
                passctx pc = mkpass(&be, &o, T.main.x, T.main.y[f], T.main.n,
                                    T.main.p, BLOCK);
                ck_glm_result res = {0};
                ck_err err = {0};
                cr_assert_eq(ck_glm_fit(&be, &o, T.main.p, pass_fn, &pc, NULL,
                                        &res, &err),
                             CK_OK, "%s", err.msg);
                cr_assert(res.converged);
                for (int64_t j = 0; j < T.main.p; j++)
                    cr_assert_eq(res.b[j], 0.0, "%s %s: b[%lld] = %g",
                                 ck_glm_solver_name(SOLVERS[s]),
                                 ck_glm_family_name(FAMILIES[f]), (long long)j,
                                 res.b[j]);
                cr_assert(fabs(res.b[T.main.p] - want) <= 1e-7,
                          "%s %s: intercept %.17g, want %.17g",
                          ck_glm_solver_name(SOLVERS[s]),
                          ck_glm_family_name(FAMILIES[f]), res.b[T.main.p],
                          want);
                ck_glm_result_release(&res);
                free(pc.scratch);
            }
        }
    }
    ck_be_close(&be);
}

/* A start (a point and, for lbfgs, a Hessian estimate) taken from a fit
 * on half of the rows, as pipelines/ makes one from a sample: newton and
 * lbfgs still converge to the full data's optimum (the references), and
 * newton hands back the last Hessian it computed, at its result or at an
 * iterate near it (newton keeps a Hessian for its last steps), within a
 * few percent of the Hessian at the result. */
Test(glm, a_sample_start_changes_the_path_not_the_optimum)
{
    ck_be be = be_open();
    int tried = 0;

    load();
    for (int k = 0; k < T.ncases; k++) {
        const gcase *c = &T.cases[k];
        const dataset *ds = data_of(c);
        if (nonsmooth(c) || c->dup)
            continue;
        ck_glm_opts o = opts_of(c, CK_GLM_NEWTON);
        ck_glm_result half = {0};
        ck_err err = {0};
        passctx ph =
            mkpass(&be, &o, ds->x, ds->y[c->fam], ds->n / 2, ds->p, BLOCK);
        cr_assert_eq(
            ck_glm_fit(&be, &o, ds->p, pass_fn, &ph, NULL, &half, &err), CK_OK,
            "%s", err.msg);
        cr_assert(half.converged && half.h);
        double loss, g[MAX_D], h[MAX_D * MAX_D];
        cr_assert_eq(pass_fn(&ph, half.b, NULL, &loss, g, h, NULL, &err),
                     CK_OK);
        for (int64_t j = 0; j < c->d * c->d; j++)
            cr_assert(fabs(half.h[j] - h[j]) <= 3e-2 * (1 + fabs(h[j])),
                      "newton's Hessian [%lld]: %g, at b %g", (long long)j,
                      half.h[j], h[j]);
        ck_glm_start st = {.b = half.b, .h = half.h};
        for (int s = 0; s < 2; s++) {
            o.solver = s ? CK_GLM_LBFGS : CK_GLM_NEWTON;
            passctx pc =
                mkpass(&be, &o, ds->x, ds->y[c->fam], ds->n, ds->p, BLOCK);
            ck_glm_result res = {0};
            cr_assert_eq(
                ck_glm_fit(&be, &o, ds->p, pass_fn, &pc, &st, &res, &err),
                CK_OK, "%s", err.msg);
            cr_assert(res.converged);
            for (int64_t j = 0; j < c->d; j++)
                cr_assert(fabs(res.b[j] - c->b[j]) <= 1e-6,
                          "%s %s %s from a half-sample start: b[%lld] %.10g, "
                          "reference %.10g",
                          ck_glm_solver_name(o.solver),
                          ck_glm_family_name(c->fam), ck_glm_reg_name(c->reg),
                          (long long)j, res.b[j], c->b[j]);
            ck_glm_result_release(&res);
            free(pc.scratch);
            tried++;
        }
        ck_glm_result_release(&half);
        free(ph.scratch);
    }
    cr_assert_geq(tried, 6);
    ck_be_close(&be);
}
