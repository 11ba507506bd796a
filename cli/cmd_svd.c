/*
 * cli/cmd_svd.c - chunkctl svd SRC: the one-step pipeline with an svd step
 * whose U, S and Vt go to DST (by default SRC's name with .svd before the
 * extension, beside it), printing the leading singular values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "pipelines/exec.h"

static const char svd_help[] =
    "usage: chunkctl svd [OPTIONS] SRC[:DATASET]\n\n"
    "Singular value decomposition of a 2-D array, out of core: SRC = U S Vt.\n"
    "Exact by default (a streaming QR of row blocks, then the SVD of R;\n"
    "wide arrays go through the transpose); --randomized for the top k of\n"
    "arrays large in both dimensions.  Writes /U, /S and /Vt to DST and\n"
    "prints the leading singular values.  Signs: each row of Vt sums to\n"
    ">= 0, U's columns follow.\n\n"
    "  -o, --output DST   where U, S, Vt go (default: SRC with .svd before\n"
    "                     its extension, e.g. data.h5 -> data.svd.h5)\n"
    "  -k, --k K          keep the top K (default: all, min(m, n))\n"
    "  --randomized       randomized SVD (needs --k)\n"
    "  --oversample P     extra columns of the random range (default 10)\n"
    "  --power-iters Q    power iterations (default 2)\n"
    "  --seed S           seed of the random test matrix (default 0)\n"
    "  --no-u             do not write U\n"
    "  --json             print all singular values as JSON\n"
    "  --backend NAME     auto, cpu or cuda (default: "
    "auto)\n" CLI_HELP_GPU_MEMORY CLI_HELP_ZARR CLI_HELP_RAW
    "  --verbose          say which backend runs each step\n"
    "  --memory SIZE      memory cap (default a quarter of RAM)\n"
    "  --threads N        threads, 0 = all cores (default 0)\n"
    "  --force            overwrite DST\n"
    "  --resume           go on with a killed run of the same command\n"
    "  --quiet            no progress bar\n"
    "  --help             this text\n\n"
    "examples:\n"
    "  chunkctl svd data.h5\n"
    "  chunkctl svd big.h5:/x --k 10 --randomized -o x.svd.h5 --memory 256M\n";

/* data.h5 -> data.svd.h5; store.zarr -> store.svd.zarr; x -> x.svd.h5
 * (malloc'd, or NULL when out of memory) */
static char *default_dst(const char *src)
{
    char *path = NULL, *ds = NULL, *out = NULL;
    const char *dot, *slash;
    size_t len, n;

    if (cli_target_split(src, &path, &ds, NULL) != CK_OK && path)
        strcpy(path, src); /* sized strlen(src) + 2 */
    if (!path)
        goto done;
    len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        path[--len] = '\0';
    dot = strrchr(path, '.');
    slash = strrchr(path, '/');
    n = len + sizeof ".svd.h5";
    if (!(out = malloc(n)))
        goto done;
    if (dot && (!slash || dot > slash + 1))
        snprintf(out, n, "%.*s.svd%s", (int)(dot - path), path, dot);
    else
        snprintf(out, n, "%s.svd.h5", path);
done:
    free(path);
    free(ds);
    return out;
}

typedef struct svd_opts {
    cli_step *s;
    const char *dst;
    const char *rnd_only; /* a randomized svd's option given, or NULL */
    int no_u, json, randomized;
} svd_opts;

static ck_code svd_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    svd_opts *o = ctx;
    const char *key = NULL, *flag = NULL;
    char *end;
    double v;

    switch (opt) {
    case 'o':
        return cli_set_output(&o->dst, arg, "svd", err);
    case 'k':
        key = "k";
        break;
    case 'O':
        key = o->rnd_only = "oversample";
        break;
    case 'P':
        key = "power_iters", flag = o->rnd_only = "power-iters";
        break;
    case 'S':
        key = o->rnd_only = "seed";
        break;
    case 'r':
        o->randomized = 1;
        cli_step_key(o->s, "method", cJSON_CreateString("randomized"));
        return CK_OK;
    case 'U':
        o->no_u = 1;
        return CK_OK;
    default: /* 'j' */
        o->json = 1;
        return CK_OK;
    }
    /* k counts singular values: at least one (0 is not "all") */
    int lo = opt == 'k';
    v = strtod(arg, &end);
    if (end == arg || *end || !(v >= lo) || v > 9.2e18 ||
        v != (double)(long long)v)
        return ck_err_set(err, CK_EUSAGE,
                          "svd: --%s '%.*s%s': expected an integer >= %d",
                          flag ? flag : key, CLI_SHOW(arg), lo);
    cli_step_key(o->s, key, cJSON_CreateNumber(v));
    return CK_OK;
}

ck_code cmd_svd(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {
        {"output", required_argument, 0, 'o'},
        {"k", required_argument, 0, 'k'},
        {"randomized", no_argument, 0, 'r'},
        {"oversample", required_argument, 0, 'O'},
        {"power-iters", required_argument, 0, 'P'},
        {"seed", required_argument, 0, 'S'},
        {"no-u", no_argument, 0, 'U'},
        {"json", no_argument, 0, 'j'},
        {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {
        "svd", svd_help, "o:k:", longs, svd_opt, .computes = 1};
    static const char *const parts[] = {"U", "S", "Vt"};
    cli_step s;
    svd_opts o = {&s, NULL, NULL, 0, 0, 0};
    char *dflt = NULL, *dp = NULL, *dn = NULL;
    ck_results res = {0};
    ck_code rc;
    int first;

    /* the options set the step's keys as they come */
    if ((rc = cli_step_init(&s, "svd", "svd", err)) != CK_OK ||
        (rc = cli_getopt(&opts, &o, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        goto out;
    if (first != argc - 1) {
        rc = ck_err_set(err, CK_EUSAGE,
                        "svd: expected one SRC[:DATASET] (run 'chunkctl svd "
                        "--help')");
        goto out;
    }
    if (o.rnd_only && !o.randomized) {
        rc = ck_err_set(err, CK_EUSAGE,
                        "svd: --%s applies only with --randomized", o.rnd_only);
        goto out;
    }
    if ((rc = cli_check_path("svd", "SRC", argv[first], err)) != CK_OK)
        goto out;
    if (!o.dst && !(o.dst = dflt = default_dst(argv[first]))) {
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        goto out;
    }
    /* the outputs' datasets: DST:/U etc., or under DST's group */
    if ((rc = cli_check_path("svd", "-o", o.dst, err)) != CK_OK ||
        (rc = cli_target_split(o.dst, &dp, &dn, err)) != CK_OK)
        goto out;
    size_t dl = strlen(dn);
    while (dl > 0 && dn[dl - 1] == '/')
        dn[--dl] = '\0';
    cli_step_input(&s, "a", argv[first], 1);
    for (int k = o.no_u ? 1 : 0; k < 3; k++) {
        char *t = cli_target_join(dp, dn, parts[k]);
        char result[8];
        snprintf(result, sizeof result, "svd.%s", parts[k]);
        if (t)
            cli_step_output(&s, result, t);
        else
            s.oom = 1;
        free(t);
    }
    cli_step_print(&s, "svd.S");
    rc = cli_step_run(&s, "svd", c, &res, err);
    if (rc == CK_OK && res.n == 1) {
        const double *sv = res.v[0].data;
        int64_t k = res.v[0].shape[0];
        if (o.json) {
            printf("{\"output\": ");
            cli_print_json_str(dp);
            printf(", \"S\": [");
            for (int64_t j = 0; j < k; j++)
                printf("%s%.17g", j ? ", " : "", sv[j]);
            printf("]}\n");
        } else {
            printf("wrote %s: %s\n", dp, o.no_u ? "S, Vt" : "U, S, Vt");
            printf("singular values (%lld):\n", (long long)k);
            for (int64_t j = 0; j < k && j < 10; j++)
                printf("  %3lld  %.10g\n", (long long)j, sv[j]);
            if (k > 10)
                printf("  ... %lld more in %s:S\n", (long long)(k - 10), dp);
        }
    }
out:
    ck_results_release(&res);
    cli_step_release(&s);
    free(dflt);
    free(dp);
    free(dn);
    return rc;
}
