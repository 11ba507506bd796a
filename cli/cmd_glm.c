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

#include "cli/cli.h"
#include "io/store.h"
#include "ops/glm.h"
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
    "  --tol T            optimality tolerance (default 1e-8)\n"
    "  -o, --output DST   write /coef and /intercept to DST\n"
    "  --memory SIZE      memory cap (default a quarter of RAM)\n"
    "  --threads N        threads, 0 = all cores (default 0)\n"
    "  --force            overwrite DST\n"
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
    "  --memory SIZE      memory cap (default a quarter of RAM)\n"
    "  --threads N        threads, 0 = all cores (default 0)\n"
    "  --force            overwrite DST\n"
    "  --quiet            no progress bar\n"
    "  --help             this text\n\n"
    "example:\n"
    "  chunkctl glm-predict model.h5 new.h5:/X -o pred.h5\n";

static void num(char *buf, size_t n, double v)
{
    size_t u = strlen(buf);
    if (isfinite(v))
        snprintf(buf + u, n - u, "%.17g", v);
    else
        snprintf(buf + u, n - u, "null");
}

ck_code cmd_glm_fit(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option opts[] = {
        {"family", required_argument, 0, 'F'},
        {"solver", required_argument, 0, 'S'},
        {"regularizer", required_argument, 0, 'R'},
        {"lambda", required_argument, 0, 'L'},
        {"l1-ratio", required_argument, 0, 'A'},
        {"no-intercept", no_argument, 0, 'I'},
        {"max-iter", required_argument, 0, 'N'},
        {"tol", required_argument, 0, 't'},
        {"output", required_argument, 0, 'o'},
        CLI_COMMON_OPTS,
        {0, 0, 0, 0}};
    char keys[2048] = "", doc[16384];
    const char *dst = NULL;
    ck_results res = {0};
    ck_code rc = CK_OK;
    int opt;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        size_t u = strlen(keys);
        const char *key = NULL, *flag = NULL;
        int str = 0;
        switch (opt) {
        case 'o':
            dst = optarg;
            continue;
        case 'F':
            key = "family", str = 1;
            break;
        case 'S':
            key = "solver", str = 1;
            break;
        case 'R':
            key = "regularizer", str = 1;
            break;
        case 'L':
            key = "lambda";
            break;
        case 'A':
            key = "l1_ratio", flag = "l1-ratio";
            break;
        case 'N':
            key = "max_iter", flag = "max-iter";
            break;
        case 't':
            key = "tol";
            break;
        case 'I':
            snprintf(keys + u, sizeof keys - u, ", \"fit_intercept\": false");
            continue;
        case 'h':
            fputs(fit_help, stdout);
            return CK_OK;
        case '?':
            return ck_err_set(err, CK_EUSAGE,
                              "glm-fit: unknown or incomplete option '%s' "
                              "(run 'chunkctl glm-fit --help')",
                              argv[optind - 1]);
        default:
            if (!cli_common_opt(opt, optarg, c, &rc, err))
                return ck_err_set(err, CK_EUSAGE, "glm-fit: bad option");
            if (rc != CK_OK)
                return rc;
            continue;
        }
        snprintf(keys + u, sizeof keys - u, ", \"%s\": ", key);
        if (str) {
            cli_json_str(keys, sizeof keys, optarg);
        } else {
            char *end;
            double v = strtod(optarg, &end);
            if (end == optarg || *end || !isfinite(v))
                return ck_err_set(err, CK_EUSAGE,
                                  "glm-fit: --%s '%s': expected a number",
                                  flag ? flag : key, optarg);
            u = strlen(keys);
            snprintf(keys + u, sizeof keys - u, "%s", optarg);
        }
    }
    if (optind != argc - 2)
        return ck_err_set(err, CK_EUSAGE,
                          "glm-fit: expected X and Y (run 'chunkctl glm-fit "
                          "--help')");
    snprintf(doc, sizeof doc, "{\"inputs\": {\"X\": ");
    cli_json_str(doc, sizeof doc, argv[optind]);
    strcat(doc, ", \"y\": ");
    cli_json_str(doc, sizeof doc, argv[optind + 1]);
    size_t u = strlen(doc);
    snprintf(doc + u, sizeof doc - u,
             "}, \"steps\": [{\"name\": \"m\", \"op\": \"glm_fit\", "
             "\"args\": [\"X\", \"y\"]%s}], \"outputs\": {",
             keys);
    if (dst) {
        char dp[4096], dn[512], t[4700];
        CK_TRY(ck_target_split(dst, dp, dn, sizeof dp, err));
        size_t dl = strlen(dn);
        while (dl > 0 && dn[dl - 1] == '/')
            dn[--dl] = '\0';
        snprintf(t, sizeof t, "%s:%s/coef", dp, dn);
        strcat(doc, "\"m.coef\": ");
        cli_json_str(doc, sizeof doc, t);
        snprintf(t, sizeof t, "%s:%s/intercept", dp, dn);
        strcat(doc, ", \"m.intercept\": ");
        cli_json_str(doc, sizeof doc, t);
    }
    strcat(doc, "}, \"print\": [\"m.coef\", \"m.intercept\"]}");
    rc = cli_run_doc("glm-fit", doc, c, &res, err);
    if (rc == CK_OK && res.n == 2 && res.v[0].has_fit) {
        static char out[1 << 20];
        const double *w = res.v[0].data, *ic = res.v[1].data;
        out[0] = '\0';
        strcat(out, "{\"coef\": [");
        for (int64_t j = 0; j < res.v[0].shape[0]; j++) {
            if (j)
                strcat(out, ", ");
            num(out, sizeof out, w[j]);
            if (strlen(out) > sizeof out - 64)
                break;
        }
        strcat(out, "], \"intercept\": ");
        num(out, sizeof out, ic[0]);
        size_t o = strlen(out);
        snprintf(out + o, sizeof out - o,
                 ", \"iterations\": %d, \"converged\": %s, \"objective\": ",
                 (int)res.v[0].fit[0], res.v[0].fit[1] ? "true" : "false");
        num(out, sizeof out, res.v[0].fit[2]);
        strcat(out, "}");
        puts(out);
    }
    ck_results_release(&res);
    return rc;
}

ck_code cmd_glm_predict(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, CLI_COMMON_OPTS, {0, 0, 0, 0}};
    const char *dst = NULL;
    char doc[16384];
    ck_results res = {0};
    ck_code rc = CK_OK;
    int opt;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        if (opt == 'o') {
            dst = optarg;
        } else if (opt == 'h') {
            fputs(predict_help, stdout);
            return CK_OK;
        } else if (opt == '?') {
            return ck_err_set(err, CK_EUSAGE,
                              "glm-predict: unknown or incomplete option '%s' "
                              "(run 'chunkctl glm-predict --help')",
                              argv[optind - 1]);
        } else if (!cli_common_opt(opt, optarg, c, &rc, err)) {
            return ck_err_set(err, CK_EUSAGE, "glm-predict: bad option");
        } else if (rc != CK_OK) {
            return rc;
        }
    }
    if (optind != argc - 2)
        return ck_err_set(err, CK_EUSAGE,
                          "glm-predict: expected MODEL and X (run 'chunkctl "
                          "glm-predict --help')");
    if (!dst)
        return ck_err_set(err, CK_EUSAGE,
                          "glm-predict: give -o DST[:DATASET] for the "
                          "predictions");
    snprintf(doc, sizeof doc, "{\"inputs\": {\"X\": ");
    cli_json_str(doc, sizeof doc, argv[optind + 1]);
    strcat(doc, "}, \"steps\": [{\"name\": \"pred\", \"op\": \"glm_predict\", "
                "\"args\": [\"X\"], \"model\": ");
    cli_json_str(doc, sizeof doc, argv[optind]);
    strcat(doc, "}], \"outputs\": {\"pred\": ");
    cli_json_str(doc, sizeof doc, dst);
    strcat(doc, "}}");
    rc = cli_run_doc("glm-predict", doc, c, &res, err);
    ck_results_release(&res);
    return rc;
}
