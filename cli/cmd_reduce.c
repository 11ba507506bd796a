/*
 * cli/cmd_reduce.c - chunkctl reduce OP SRC and chunkctl histogram SRC:
 * one-step pipelines.  Each builds the pipeline a user would write (so
 * the two can never disagree), runs it, and prints small results when no
 * -o is given.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"

/* "1,-2" -> the list [1, -2] in *out (NULL when absent), after checking
 * that s is a list of integers (ints) or finite numbers; CK_EUSAGE "label:
 * opt 's': expected what" when it is not. */
static ck_code num_list(const char *label, const char *opt, const char *s,
                        int ints, const char *what, cJSON **out, ck_err *err)
{
    const char *p = s;
    cJSON *l = cJSON_CreateArray();

    if (!l)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    while (*p) {
        char *end;
        double v;
        cJSON *item;
        errno = 0;
        v = ints ? (double)strtoll(p, &end, 10) : strtod(p, &end);
        if (ints == 2 && end == p) {
            /* an axis named by its dimension: up to the next comma */
            size_t k = strcspn(p, ",");
            char name[128];
            if (k == 0 || k >= sizeof name || (p[k] == ',' && !p[k + 1]))
                break;
            memcpy(name, p, k);
            name[k] = '\0';
            end = (char *)p + k;
            item = cJSON_CreateString(name);
        } else {
            if (end == p || errno || !isfinite(v) || (*end && *end != ',') ||
                (*end == ',' && !end[1]))
                break;
            item = cJSON_CreateNumber(v);
        }
        if (!item || !cJSON_AddItemToArray(l, item)) {
            cJSON_Delete(item);
            cJSON_Delete(l);
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        }
        p = *end ? end + 1 : end;
    }
    if (!*s || *p) {
        cJSON_Delete(l);
        return ck_err_set(err, CK_EUSAGE, "%s: %s '%.*s%s': expected %s", label,
                          opt, CLI_SHOW(s), what);
    }
    cJSON_Delete(*out);
    *out = l;
    return CK_OK;
}

/* Each value option is given once, as a one-step op's keys are (chunkctl
 * add --axis 0 --axis 1 is refused): the last one silently winning hides
 * a typo in a script. */
static ck_code once(unsigned *seen, unsigned bit, const char *label,
                    const char *opt, ck_err *err)
{
    if (*seen & bit)
        return ck_err_set(err, CK_EUSAGE, "%s: %s given twice; give it once",
                          label, opt);
    *seen |= bit;
    return CK_OK;
}

static const char reduce_help[] =
    "usage: chunkctl reduce [OPTIONS] OP SRC[:DATASET]\n\n"
    "One reduction of an array, out of core on all cores, NumPy semantics.\n"
    "OP: sum prod min max mean var std argmin argmax count_nonzero any all\n"
    "    nansum nanmean nanmin nanmax nanvar nanstd nanprod nanargmin\n"
    "    nanargmax nancount_nonzero\n"
    "Without -o the result is printed (one value per line, C order).\n\n"
    "  --axis A[,B...]    axes to reduce, by number or dimension name\n"
    "                     (default: all; negative from the end)\n"
    "  --keepdims         keep reduced axes with length 1\n"
    "  --ddof N           delta degrees of freedom for var and std\n"
    "  -o, --output DST   write the result to DST[:DATASET] instead\n"
    "  --json             print the result as JSON\n"
    "  --backend NAME     auto, cpu or cuda (default: "
    "auto)\n" CLI_HELP_GPU_MEMORY CLI_HELP_ZARR CLI_HELP_RAW CLI_HELP_RESUME
    "  --memory SIZE, --threads N, --force, --quiet, --verbose, --help\n\n"
    "example: chunkctl reduce mean data.h5:/x --axis 0 -o out.h5:/m\n";

typedef struct reduce_opts {
    cJSON *axis; /* NULL: all axes */
    int keep, pj;
    int has_ddof;
    double ddof;
    const char *out;
    unsigned seen; /* options given (once) */
} reduce_opts;

static ck_code reduce_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    reduce_opts *o = ctx;
    char *end;

    switch (opt) {
    case 'a':
        if (o->axis) /* --axis 0 --axis 1 may mean the list 0,1 */
            return ck_err_set(err, CK_EUSAGE,
                              "reduce: --axis given twice; give the axes as "
                              "one list (--axis 0,1)");
        return num_list("reduce", "--axis", arg, 2, "axes like 0, 0,-1 or time",
                        &o->axis, err);
    case 'k':
        o->keep = 1;
        return CK_OK;
    case 'd':
        CK_TRY(once(&o->seen, 1, "reduce", "--ddof", err));
        errno = 0;
        o->ddof = strtod(arg, &end);
        if (errno || end == arg || *end || !(o->ddof >= 0) ||
            !isfinite(o->ddof))
            return ck_err_set(err, CK_EUSAGE,
                              "reduce: --ddof '%.*s%s': expected a number >= 0",
                              CLI_SHOW(arg));
        o->has_ddof = 1;
        return CK_OK;
    case 'o':
        return cli_set_output(&o->out, arg, "reduce", err);
    default: /* 'j' */
        o->pj = 1;
        return CK_OK;
    }
}

ck_code cmd_reduce(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {{"axis", required_argument, 0, 'a'},
                                          {"keepdims", no_argument, 0, 'k'},
                                          {"ddof", required_argument, 0, 'd'},
                                          {"output", required_argument, 0, 'o'},
                                          {"json", no_argument, 0, 'j'},
                                          {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {
        "reduce", reduce_help, "o:", longs, reduce_opt, .computes = 1};
    reduce_opts o = {0};
    cli_step s = {0};
    ck_code rc;
    int first;

    if ((rc = cli_getopt(&opts, &o, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        goto out;
    if (first != argc - 2) {
        rc = ck_err_set(err, CK_EUSAGE,
                        "reduce: expected OP and SRC (see chunkctl reduce "
                        "--help)");
        goto out;
    }
    if ((rc = cli_check_path("reduce", "SRC", argv[first + 1], err)) != CK_OK ||
        (rc = cli_step_init(&s, "result", argv[first], err)) != CK_OK)
        goto out;
    cli_step_input(&s, "x", argv[first + 1], 1);
    if (o.axis) {
        cli_step_key(&s, "axis", o.axis);
        o.axis = NULL; /* taken */
    }
    if (o.keep)
        cli_step_key(&s, "keepdims", cJSON_CreateTrue());
    if (o.has_ddof)
        cli_step_key(&s, "ddof", cJSON_CreateNumber(o.ddof));
    rc = cli_run_onestep(&s, "reduce", "result", o.out, c, o.pj, err);
out:
    cJSON_Delete(o.axis);
    cli_step_release(&s);
    return rc;
}

static const char hist_help[] =
    "usage: chunkctl histogram [OPTIONS] SRC[:DATASET]\n\n"
    "numpy.histogram of an array, out of core on all cores.  Without -o the\n"
    "bins are printed as a table (bin_low, bin_high, count).\n\n"
    "  --bins N|RULE      number of bins (default 10), or NumPy's rule by\n"
    "                     name: auto, fd, scott, rice, sturges, sqrt (from\n"
    "                     a statistics pass; NaN ignored)\n"
    "  --range LO,HI      the bins' range (default: the data's minimum and\n"
    "                     maximum, NaN ignored, from a first pass)\n"
    "  --edges E,E,...    explicit increasing bin edges instead\n"
    "  --density          a density instead of counts\n"
    "  --weights W        an array of SRC's shape, PATH[:DATASET]\n"
    "  -o, --output DST   write the counts to DST[:DATASET] instead\n"
    "  --json             print edges and counts as JSON\n"
    "  --backend NAME     auto, cpu or cuda (default: "
    "auto)\n" CLI_HELP_GPU_MEMORY CLI_HELP_ZARR CLI_HELP_RAW CLI_HELP_RESUME
    "  --memory SIZE, --threads N, --force, --quiet, --verbose, --help\n\n"
    "example: chunkctl histogram data.h5:/x --bins 100 --range -9,11\n";

typedef struct hist_opts {
    long bins;        /* 0: the op's default */
    const char *rule; /* bins by name */
    cJSON *range, *edges;
    int density, pj;
    const char *weights, *out;
    unsigned seen; /* options given (once) */
} hist_opts;

static ck_code hist_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    hist_opts *o = ctx;
    char *end;

    switch (opt) {
    case 'b':
        CK_TRY(once(&o->seen, 1, "histogram", "--bins", err));
        if (*arg && !isdigit((unsigned char)*arg) && *arg != '-' &&
            *arg != '+') {
            o->rule = arg;
            o->bins = 0;
            return CK_OK;
        }
        o->rule = NULL;
        errno = 0;
        o->bins = strtol(arg, &end, 10);
        if (errno || end == arg || *end || o->bins < 1 || o->bins > 100000000)
            return ck_err_set(err, CK_EUSAGE,
                              "histogram: --bins '%.*s%s': expected a "
                              "positive integer or a rule (auto, fd, ...)",
                              CLI_SHOW(arg));
        return CK_OK;
    case 'r':
        CK_TRY(once(&o->seen, 2, "histogram", "--range", err));
        return num_list("histogram", "--range", arg, 0, "LO,HI", &o->range,
                        err);
    case 'e':
        CK_TRY(once(&o->seen, 4, "histogram", "--edges", err));
        return num_list("histogram", "--edges", arg, 0, "numbers like 0,1,2.5",
                        &o->edges, err);
    case 'D':
        o->density = 1;
        return CK_OK;
    case 'w':
        CK_TRY(once(&o->seen, 8, "histogram", "--weights", err));
        o->weights = arg;
        return CK_OK;
    case 'o':
        return cli_set_output(&o->out, arg, "histogram", err);
    default: /* 'j' */
        o->pj = 1;
        return CK_OK;
    }
}

ck_code cmd_histogram(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {
        {"bins", required_argument, 0, 'b'},
        {"range", required_argument, 0, 'r'},
        {"edges", required_argument, 0, 'e'},
        {"density", no_argument, 0, 'D'},
        {"weights", required_argument, 0, 'w'},
        {"output", required_argument, 0, 'o'},
        {"json", no_argument, 0, 'j'},
        {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {
        "histogram", hist_help, "o:", longs, hist_opt, .computes = 1};
    hist_opts o = {0};
    cli_step s = {0};
    ck_code rc;
    int first;

    if ((rc = cli_getopt(&opts, &o, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        goto out;
    if (first != argc - 1) {
        rc = ck_err_set(err, CK_EUSAGE,
                        "histogram: expected one SRC (see chunkctl "
                        "histogram --help)");
        goto out;
    }
    if ((rc = cli_check_path("histogram", "SRC", argv[first], err)) != CK_OK ||
        (o.weights && (rc = cli_check_path("histogram", "--weights", o.weights,
                                           err)) != CK_OK) ||
        (rc = cli_step_init(&s, "histogram", "histogram", err)) != CK_OK)
        goto out;
    cli_step_input(&s, "x", argv[first], 1);
    if (o.weights)
        cli_step_input(&s, "w", o.weights, 0);
    if (o.bins)
        cli_step_key(&s, "bins", cJSON_CreateNumber((double)o.bins));
    if (o.rule)
        cli_step_key(&s, "bins", cJSON_CreateString(o.rule));
    if (o.range)
        cli_step_key(&s, "range", o.range);
    if (o.edges)
        cli_step_key(&s, "edges", o.edges);
    o.range = o.edges = NULL; /* taken */
    if (o.density)
        cli_step_key(&s, "density", cJSON_CreateTrue());
    if (o.weights)
        cli_step_key(&s, "weights", cJSON_CreateString("w"));
    rc = cli_run_onestep(&s, "histogram", "histogram", o.out, c, o.pj, err);
out:
    cJSON_Delete(o.range);
    cJSON_Delete(o.edges);
    cli_step_release(&s);
    return rc;
}
