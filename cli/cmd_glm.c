/*
 * cli/cmd_glm.c - chunkctl glm-fit X Y and chunkctl glm-predict MODEL X:
 * one-step pipelines with a glm_fit or glm_predict step.  glm-fit prints
 * the fit as JSON and, with -o, writes /coef and /intercept (the model's
 * description in /coef's attributes), which glm-predict reads back.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "pipelines/exec.h"

static const char fit_help[] =
    "usage: chunkctl glm-fit [OPTIONS] X[:DATASET] Y[:DATASET]\n\n"
    "Fits a generalised linear model to the rows of X (n x p) and y (n),\n"
    "out of core: each solver iteration is a pass over the data (X is\n"
    "kept in memory when it fits under --memory).  Minimises\n"
    "  (1/n) sum loss(y_i, x_i.w + c) + lambda * penalty(w)\n"
    "(chunkctl-glm-fit(1) gives the exact losses and penalties).  Prints\n"
    "the fit as JSON; -o also writes it as a model for glm-predict.\n\n"
    "  --family F         logistic (default), normal, poisson\n"
    "  --solver S         newton (default), lbfgs, gradient_descent,\n"
    "                     proximal_grad, admm\n"
    "  --regularizer R    none (default), l1, l2, elastic_net\n"
    "  --lambda L         penalty weight (needed with a regularizer)\n"
    "  --l1-ratio A       elastic_net's l1 share in [0, 1] (default 0.5)\n"
    "  --no-intercept     fit without an intercept\n"
    "  --max-iter N       iteration limit (default: the solver's)\n"
    "  --tol T            optimality tolerance, on the gradient with X's\n"
    "                     columns scaled to unit mean square (default 1e-8)\n"
    "  --std-errors       also the standard errors (as statsmodels' bse)\n"
    "                     of an unpenalised fit: one pass more at most\n"
    "  -o, --output DST   write /coef and /intercept to DST\n"
    "  --backend NAME     auto, cpu or cuda (default: "
    "auto)\n" CLI_HELP_GPU_MEMORY CLI_HELP_ZARR CLI_HELP_RAW
    "  --verbose          say which backend runs each step\n"
    "  --memory SIZE      memory cap (default a quarter of RAM)\n"
    "  --threads N        threads, 0 = all cores (default 0)\n"
    "  --force            overwrite DST\n"
    "  --resume           go on with a killed run of the same command\n"
    "  --quiet            no progress bar\n"
    "  --help             this text\n\n"
    "example:\n"
    "  chunkctl glm-fit data.h5:/X data.h5:/y --family logistic "
    "--solver lbfgs -o model.h5\n";

static const char predict_help[] =
    "usage: chunkctl glm-predict [OPTIONS] MODEL X[:DATASET] -o DST\n\n"
    "The mean response of a model written by glm-fit -o for every row of X,\n"
    "out of core: x.w + c (normal), 1/(1 + exp(-(x.w + c))) (logistic,\n"
    "a probability), exp(x.w + c) (poisson).  MODEL is the file glm-fit\n"
    "wrote (its /coef), or PATH:DATASET of the coefficients.\n\n"
    "  -o, --output DST   where the predictions go (required)\n"
    "  --backend NAME     auto, cpu or cuda (default: "
    "auto)\n" CLI_HELP_GPU_MEMORY CLI_HELP_ZARR CLI_HELP_RAW
    "  --verbose          say which backend runs each step\n"
    "  --memory SIZE      memory cap (default a quarter of RAM)\n"
    "  --threads N        threads, 0 = all cores (default 0)\n"
    "  --force            overwrite DST\n"
    "  --resume           go on with a killed run of the same command\n"
    "  --quiet            no progress bar\n"
    "  --help             this text\n\n"
    "example:\n"
    "  chunkctl glm-predict model.h5 new.h5:/X -o pred.h5\n";

/* A number as JSON: NaN and the infinities have no JSON spelling. */
static void num(double v)
{
    if (isfinite(v))
        printf("%.17g", v);
    else
        printf("null");
}

typedef struct fit_opts {
    cli_step *s;
    const char *dst;
} fit_opts;

static ck_code fit_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    fit_opts *o = ctx;
    const char *key = NULL, *flag = NULL;
    char *end;
    double v;

    switch (opt) {
    case 'o':
        return cli_set_output(&o->dst, arg, "glm-fit", err);
    case 'F':
        cli_step_key(o->s, "family", cJSON_CreateString(arg));
        return CK_OK;
    case 'S':
        cli_step_key(o->s, "solver", cJSON_CreateString(arg));
        return CK_OK;
    case 'R':
        cli_step_key(o->s, "regularizer", cJSON_CreateString(arg));
        return CK_OK;
    case 'I':
        cli_step_key(o->s, "fit_intercept", cJSON_CreateFalse());
        return CK_OK;
    case 'E':
        cli_step_key(o->s, "std_errors", cJSON_CreateTrue());
        return CK_OK;
    case 'L':
        key = "lambda";
        break;
    case 'A':
        key = "l1_ratio", flag = "l1-ratio";
        break;
    case 'N':
        key = "max_iter", flag = "max-iter";
        break;
    default: /* 't' */
        key = "tol";
        break;
    }
    v = strtod(arg, &end);
    if (end == arg || *end || !isfinite(v))
        return ck_err_set(err, CK_EUSAGE,
                          "glm-fit: --%s '%.*s%s': expected a number",
                          flag ? flag : key, CLI_SHOW(arg));
    cli_step_key(o->s, key, cJSON_CreateNumber(v));
    return CK_OK;
}

/* Prints the fit as one JSON object. */
static void print_fit(const ck_results *res)
{
    const double *w = res->v[0].data, *ic = res->v[1].data;

    printf("{\"coef\": [");
    for (int64_t j = 0; j < res->v[0].shape[0]; j++) {
        if (j)
            printf(", ");
        num(w[j]);
    }
    printf("], \"intercept\": ");
    num(ic[0]);
    printf(", \"iterations\": %d, \"converged\": %s, \"objective\": ",
           (int)res->v[0].fit[0], res->v[0].fit[1] ? "true" : "false");
    num(res->v[0].fit[2]);
    printf(", \"deviance\": ");
    num(res->v[0].fit[3]);
    printf(", \"llf\": ");
    num(res->v[0].fit[4]);
    printf(", \"aic\": ");
    num(res->v[0].fit[5]);
    if (res->v[0].se) { /* coefficients', then the intercept's */
        int64_t p = res->v[0].shape[0];
        printf(", \"stderr\": [");
        for (int64_t j = 0; j < p; j++) {
            if (j)
                printf(", ");
            num(res->v[0].se[j]);
        }
        printf("]");
        if (res->v[0].nse > p) {
            printf(", \"intercept_stderr\": ");
            num(res->v[0].se[p]);
        }
    }
    printf("}\n");
}

ck_code cmd_glm_fit(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {
        {"family", required_argument, 0, 'F'},
        {"solver", required_argument, 0, 'S'},
        {"regularizer", required_argument, 0, 'R'},
        {"lambda", required_argument, 0, 'L'},
        {"l1-ratio", required_argument, 0, 'A'},
        {"no-intercept", no_argument, 0, 'I'},
        {"std-errors", no_argument, 0, 'E'},
        {"max-iter", required_argument, 0, 'N'},
        {"tol", required_argument, 0, 't'},
        {"output", required_argument, 0, 'o'},
        {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {
        "glm-fit", fit_help, "o:", longs, fit_opt, .computes = 1};
    static const char *const parts[] = {"coef", "intercept"};
    cli_step s;
    fit_opts o = {&s, NULL};
    char *dp = NULL, *dn = NULL;
    ck_results res = {0};
    ck_code rc;
    int first;

    /* the options set the step's keys as they come */
    if ((rc = cli_step_init(&s, "m", "glm_fit", err)) != CK_OK ||
        (rc = cli_getopt(&opts, &o, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        goto out;
    if (first != argc - 2) {
        rc = ck_err_set(err, CK_EUSAGE,
                        "glm-fit: expected X and Y (run 'chunkctl glm-fit "
                        "--help')");
        goto out;
    }
    if ((rc = cli_check_path("glm-fit", "X", argv[first], err)) != CK_OK ||
        (rc = cli_check_path("glm-fit", "Y", argv[first + 1], err)) != CK_OK)
        goto out;
    cli_step_input(&s, "X", argv[first], 1);
    cli_step_input(&s, "y", argv[first + 1], 1);
    if (o.dst) {
        if ((rc = cli_check_path("glm-fit", "-o", o.dst, err)) != CK_OK ||
            (rc = cli_target_split(o.dst, &dp, &dn, err)) != CK_OK)
            goto out;
        size_t dl = strlen(dn);
        while (dl > 0 && dn[dl - 1] == '/')
            dn[--dl] = '\0';
        for (int k = 0; k < 2; k++) {
            char *t = cli_target_join(dp, dn, parts[k]);
            char result[16];
            snprintf(result, sizeof result, "m.%s", parts[k]);
            if (t)
                cli_step_output(&s, result, t);
            else
                s.oom = 1;
            free(t);
        }
    }
    cli_step_print(&s, "m.coef");
    cli_step_print(&s, "m.intercept");
    rc = cli_step_run(&s, "glm-fit", c, &res, err);
    if (rc == CK_OK && res.n == 2 && res.v[0].has_fit)
        print_fit(&res);
out:
    ck_results_release(&res);
    cli_step_release(&s);
    free(dp);
    free(dn);
    return rc;
}

typedef struct predict_opts {
    const char *dst;
} predict_opts;

static ck_code predict_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    (void)opt; /* 'o', the only one */
    return cli_set_output(&((predict_opts *)ctx)->dst, arg, "glm-predict", err);
}

ck_code cmd_glm_predict(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {{"output", required_argument, 0, 'o'},
                                          {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {"glm-predict", predict_help, "o:", longs,
                                      predict_opt,   .computes = 1};
    predict_opts o = {NULL};
    cli_step s = {0};
    ck_results res = {0};
    ck_code rc;
    int first;

    if ((rc = cli_getopt(&opts, &o, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        return rc;
    if (first != argc - 2)
        return ck_err_set(err, CK_EUSAGE,
                          "glm-predict: expected MODEL and X (run 'chunkctl "
                          "glm-predict --help')");
    if (!o.dst)
        return ck_err_set(err, CK_EUSAGE,
                          "glm-predict: give -o DST[:DATASET] for the "
                          "predictions");
    if ((rc = cli_check_path("glm-predict", "MODEL", argv[first], err)) !=
            CK_OK ||
        (rc = cli_check_path("glm-predict", "X", argv[first + 1], err)) !=
            CK_OK ||
        (rc = cli_check_path("glm-predict", "-o", o.dst, err)) != CK_OK ||
        (rc = cli_step_init(&s, "pred", "glm_predict", err)) != CK_OK)
        goto out;
    cli_step_input(&s, "X", argv[first + 1], 1);
    cli_step_key(&s, "model", cJSON_CreateString(argv[first]));
    cli_step_output(&s, "pred", o.dst);
    rc = cli_step_run(&s, "glm-predict", c, &res, err);
out:
    ck_results_release(&res);
    cli_step_release(&s);
    return rc;
}
