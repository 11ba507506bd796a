/*
 * cli/cmd_svd.c - chunkctl svd SRC: the one-step pipeline with an svd step
 * whose U, S and Vt go to DST (by default SRC's name with .svd before the
 * extension, beside it), printing the leading singular values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "io/store.h"
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
    "  --memory SIZE      memory cap (default a quarter of RAM)\n"
    "  --threads N        threads, 0 = all cores (default 0)\n"
    "  --force            overwrite DST\n"
    "  --quiet            no progress bar\n"
    "  --help             this text\n\n"
    "examples:\n"
    "  chunkctl svd data.h5\n"
    "  chunkctl svd big.h5:/x --k 10 --randomized -o x.svd.h5 --memory 256M\n";

/* data.h5 -> data.svd.h5; store.zarr -> store.svd.zarr; x -> x.svd.h5 */
static void default_dst(const char *src, char *out, size_t n)
{
    char path[4096], ds[512];
    const char *dot, *slash;

    if (ck_target_split(src, path, ds, sizeof path, NULL) != CK_OK)
        snprintf(path, sizeof path, "%s", src);
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        path[--len] = '\0';
    dot = strrchr(path, '.');
    slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash + 1))
        snprintf(out, n, "%.*s.svd%s", (int)(dot - path), path, dot);
    else
        snprintf(out, n, "%s.svd.h5", path);
}

ck_code cmd_svd(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},
        {"k", required_argument, 0, 'k'},
        {"randomized", no_argument, 0, 'r'},
        {"oversample", required_argument, 0, 'O'},
        {"power-iters", required_argument, 0, 'P'},
        {"seed", required_argument, 0, 'S'},
        {"no-u", no_argument, 0, 'U'},
        {"json", no_argument, 0, 'j'},
        CLI_COMMON_OPTS,
        {0, 0, 0, 0}};
    const char *dst = NULL;
    char keys[512] = "", dflt[4200], doc[16384];
    int no_u = 0, json = 0, opt;
    ck_results res = {0};
    ck_code rc = CK_OK;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "o:k:", opts, NULL)) != -1) {
        size_t u = strlen(keys);
        const char *key = NULL, *flag = NULL;
        switch (opt) {
        case 'o':
            dst = optarg;
            continue;
        case 'k':
            key = "k";
            break;
        case 'O':
            key = "oversample";
            break;
        case 'P':
            key = "power_iters", flag = "power-iters";
            break;
        case 'S':
            key = "seed";
            break;
        case 'r':
            snprintf(keys + u, sizeof keys - u, ", \"method\": \"randomized\"");
            continue;
        case 'U':
            no_u = 1;
            continue;
        case 'j':
            json = 1;
            continue;
        case 'h':
            fputs(svd_help, stdout);
            return CK_OK;
        case '?':
            return ck_err_set(err, CK_EUSAGE,
                              "svd: unknown or incomplete option '%s' (run "
                              "'chunkctl svd --help')",
                              argv[optind - 1]);
        default:
            if (!cli_common_opt(opt, optarg, c, &rc, err))
                return ck_err_set(err, CK_EUSAGE, "svd: bad option");
            if (rc != CK_OK)
                return rc;
            continue;
        }
        char *end;
        double v = strtod(optarg, &end);
        if (end == optarg || *end || v < 0 || v != (double)(long long)v)
            return ck_err_set(err, CK_EUSAGE,
                              "svd: --%s '%s': expected an integer >= 0",
                              flag ? flag : key, optarg);
        snprintf(keys + u, sizeof keys - u, ", \"%s\": %s", key, optarg);
    }
    if (optind != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "svd: expected one SRC[:DATASET] (run 'chunkctl svd "
                          "--help')");
    if (!dst) {
        default_dst(argv[optind], dflt, sizeof dflt);
        dst = dflt;
    }
    /* the outputs' datasets: DST:/U etc., or under DST's group */
    char dp[4096], dn[512];
    CK_TRY(ck_target_split(dst, dp, dn, sizeof dp, err));
    size_t dl = strlen(dn);
    while (dl > 0 && dn[dl - 1] == '/')
        dn[--dl] = '\0';
    snprintf(doc, sizeof doc, "{\"inputs\": {\"a\": ");
    cli_json_str(doc, sizeof doc, argv[optind]);
    size_t u = strlen(doc);
    snprintf(doc + u, sizeof doc - u,
             "}, \"steps\": [{\"name\": \"svd\", \"op\": \"svd\", "
             "\"args\": [\"a\"]%s}], \"outputs\": {",
             keys);
    static const char *const parts[] = {"U", "S", "Vt"};
    for (int k = no_u ? 1 : 0; k < 3; k++) {
        char t[4700];
        snprintf(t, sizeof t, "%s:%s/%s", dp, dn, parts[k]);
        u = strlen(doc);
        snprintf(doc + u, sizeof doc - u,
                 "%s\"svd.%s\": ", k > (no_u ? 1 : 0) ? ", " : "", parts[k]);
        cli_json_str(doc, sizeof doc, t);
    }
    u = strlen(doc);
    snprintf(doc + u, sizeof doc - u, "}, \"print\": [\"svd.S\"]}");
    rc = cli_run_doc("svd", doc, c, &res, err);
    if (rc == CK_OK && res.n == 1) {
        const double *s = res.v[0].data;
        int64_t k = res.v[0].shape[0];
        if (json) {
            printf("{\"output\": ");
            char q[4200] = "";
            cli_json_str(q, sizeof q, dp);
            printf("%s, \"S\": [", q);
            for (int64_t j = 0; j < k; j++)
                printf("%s%.17g", j ? ", " : "", s[j]);
            printf("]}\n");
        } else {
            printf("wrote %s: U, S, Vt%s\n", dp, no_u ? " (no U)" : "");
            printf("singular values (%lld):\n", (long long)k);
            for (int64_t j = 0; j < k && j < 10; j++)
                printf("  %3lld  %.10g\n", (long long)j, s[j]);
            if (k > 10)
                printf("  ... %lld more in %s:S\n", (long long)(k - 10), dp);
        }
    }
    ck_results_release(&res);
    return rc;
}
