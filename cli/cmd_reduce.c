/*
 * cli/cmd_reduce.c - chunkctl reduce OP SRC and chunkctl histogram SRC:
 * one-step pipelines.  Each builds the pipeline a user would write (so
 * the two can never disagree), runs it, and prints small results when no
 * -o is given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "pipelines/exec.h"
#include "pipelines/plan.h"

/* "1,-2" -> "[1,-2]" after checking it is a list of numbers; 0 if not. */
static int num_list(const char *s, int ints, char *out, size_t n)
{
    const char *p = s;
    size_t u = 1;

    if (!*s || strlen(s) + 3 > n)
        return 0;
    out[0] = '[';
    while (*p) {
        char *end;
        errno = 0;
        if (ints)
            (void)strtoll(p, &end, 10);
        else
            (void)strtod(p, &end);
        if (end == p || errno || (*end && *end != ','))
            return 0;
        memcpy(out + u, p, (size_t)(end - p));
        u += (size_t)(end - p);
        p = end;
        if (*p == ',') {
            out[u++] = ',';
            if (!*++p)
                return 0;
        }
    }
    out[u++] = ']';
    out[u] = '\0';
    return 1;
}

static const char reduce_help[] =
    "usage: chunkctl reduce [OPTIONS] OP SRC[:DATASET]\n\n"
    "One reduction of an array, out of core on all cores, NumPy semantics.\n"
    "OP: sum prod min max mean var std argmin argmax count_nonzero any all\n"
    "    nansum nanmean nanmin nanmax nanvar nanstd\n"
    "Without -o the result is printed (one value per line, C order).\n\n"
    "  --axis A[,B...]    axes to reduce (default: all; negative from the "
    "end)\n"
    "  --keepdims         keep reduced axes with length 1\n"
    "  --ddof N           delta degrees of freedom for var and std\n"
    "  -o, --output DST   write the result to DST[:DATASET] instead\n"
    "  --json             print the result as JSON\n"
    "  --memory SIZE, --threads N, --force, --quiet, --help\n\n"
    "example: chunkctl reduce mean data.h5:/x --axis 0 -o out.h5:/m\n";

ck_code cmd_reduce(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option opts[] = {{"axis", required_argument, 0, 'a'},
                                         {"keepdims", no_argument, 0, 'k'},
                                         {"ddof", required_argument, 0, 'd'},
                                         {"output", required_argument, 0, 'o'},
                                         {"json", no_argument, 0, 'j'},
                                         CLI_COMMON_OPTS,
                                         {0, 0, 0, 0}};
    char json[16384] = "", axis[512] = "", *end;
    const char *out = NULL, *ddof = NULL;
    int opt, keep = 0, pj = 0;
    ck_code rc = CK_OK;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(reduce_help, stdout);
            return CK_OK;
        case 'a':
            if (!num_list(optarg, 1, axis, sizeof axis))
                return ck_err_set(err, CK_EUSAGE,
                                  "--axis '%s': expected integers like 0 or "
                                  "0,-1",
                                  optarg);
            break;
        case 'k':
            keep = 1;
            break;
        case 'd':
            ddof = optarg;
            if (strtod(ddof, &end) < 0 || end == ddof || *end)
                return ck_err_set(err, CK_EUSAGE,
                                  "--ddof '%s': expected a number >= 0", ddof);
            break;
        case 'o':
            out = optarg;
            break;
        case 'j':
            pj = 1;
            break;
        default:
            if (!cli_common_opt(opt, optarg, c, &rc, err))
                return ck_err_set(err, CK_EUSAGE,
                                  "reduce: unknown or incomplete option '%s' "
                                  "(see chunkctl reduce --help)",
                                  argv[optind - 1]);
        }
        if (rc != CK_OK)
            return rc;
    }
    if (optind != argc - 2)
        return ck_err_set(err, CK_EUSAGE,
                          "reduce: expected OP and SRC (see chunkctl reduce "
                          "--help)");
    strcat(json, "{\"inputs\": {\"x\": ");
    cli_json_str(json, sizeof json, argv[optind + 1]);
    strcat(json, "}, \"steps\": [{\"name\": \"result\", \"op\": ");
    cli_json_str(json, sizeof json, argv[optind]);
    strcat(json, ", \"args\": [\"x\"]");
    if (axis[0])
        snprintf(json + strlen(json), sizeof json - strlen(json),
                 ", \"axis\": %s", axis);
    if (keep)
        strcat(json, ", \"keepdims\": true");
    if (ddof)
        snprintf(json + strlen(json), sizeof json - strlen(json),
                 ", \"ddof\": %s", ddof);
    strcat(json, "}]");
    return cli_run_onestep("reduce", "result", json, out, c, pj, err);
}

static const char hist_help[] =
    "usage: chunkctl histogram [OPTIONS] SRC[:DATASET]\n\n"
    "numpy.histogram of an array, out of core on all cores.  Without -o the\n"
    "bins are printed as a table (bin_low, bin_high, count).\n\n"
    "  --bins N           number of bins (default 10)\n"
    "  --range LO,HI      the bins' range (required unless --edges)\n"
    "  --edges E,E,...    explicit increasing bin edges instead\n"
    "  --density          a density instead of counts\n"
    "  --weights W        an array of SRC's shape, PATH[:DATASET]\n"
    "  -o, --output DST   write the counts to DST[:DATASET] instead\n"
    "  --json             print edges and counts as JSON\n"
    "  --memory SIZE, --threads N, --force, --quiet, --help\n\n"
    "example: chunkctl histogram data.h5:/x --bins 100 --range -9,11\n";

ck_code cmd_histogram(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option opts[] = {{"bins", required_argument, 0, 'b'},
                                         {"range", required_argument, 0, 'r'},
                                         {"edges", required_argument, 0, 'e'},
                                         {"density", no_argument, 0, 'D'},
                                         {"weights", required_argument, 0, 'w'},
                                         {"output", required_argument, 0, 'o'},
                                         {"json", no_argument, 0, 'j'},
                                         CLI_COMMON_OPTS,
                                         {0, 0, 0, 0}};
    static char json[1 << 20];
    static char edges[1 << 19];
    char range[256] = "", bins[32] = "", *end;
    const char *out = NULL, *w = NULL;
    int opt, dens = 0, pj = 0;
    ck_code rc = CK_OK;

    json[0] = edges[0] = '\0';
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(hist_help, stdout);
            return CK_OK;
        case 'b': {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 100000000)
                return ck_err_set(err, CK_EUSAGE,
                                  "--bins '%s': expected a positive integer",
                                  optarg);
            snprintf(bins, sizeof bins, "%ld", v);
            break;
        }
        case 'r':
            if (!num_list(optarg, 0, range, sizeof range))
                return ck_err_set(err, CK_EUSAGE,
                                  "--range '%s': expected LO,HI", optarg);
            break;
        case 'e':
            if (!num_list(optarg, 0, edges, sizeof edges))
                return ck_err_set(err, CK_EUSAGE,
                                  "--edges '%s': expected numbers like "
                                  "0,1,2.5",
                                  optarg);
            break;
        case 'D':
            dens = 1;
            break;
        case 'w':
            w = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'j':
            pj = 1;
            break;
        default:
            if (!cli_common_opt(opt, optarg, c, &rc, err))
                return ck_err_set(err, CK_EUSAGE,
                                  "histogram: unknown or incomplete option "
                                  "'%s' (see chunkctl histogram --help)",
                                  argv[optind - 1]);
        }
        if (rc != CK_OK)
            return rc;
    }
    if (optind != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "histogram: expected one SRC (see chunkctl "
                          "histogram --help)");
    if (!edges[0] && !range[0])
        return ck_err_set(err, CK_EUSAGE,
                          "histogram: give --range LO,HI or --edges");
    strcat(json, "{\"inputs\": {\"x\": ");
    cli_json_str(json, sizeof json, argv[optind]);
    if (w) {
        strcat(json, ", \"w\": ");
        cli_json_str(json, sizeof json, w);
    }
    strcat(json, "}, \"steps\": [{\"name\": \"histogram\", \"op\": "
                 "\"histogram\", \"args\": [\"x\"]");
    if (bins[0])
        snprintf(json + strlen(json), sizeof json - strlen(json),
                 ", \"bins\": %s", bins);
    if (range[0])
        snprintf(json + strlen(json), sizeof json - strlen(json),
                 ", \"range\": %s", range);
    if (edges[0])
        snprintf(json + strlen(json), sizeof json - strlen(json),
                 ", \"edges\": %s", edges);
    if (dens)
        strcat(json, ", \"density\": true");
    if (w)
        strcat(json, ", \"weights\": \"w\"");
    strcat(json, "}]");
    return cli_run_onestep("histogram", "histogram", json, out, c, pj, err);
}
