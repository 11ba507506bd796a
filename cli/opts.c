/*
 * cli/opts.c - the option loop every command shares: getopt_long over the
 * command's own options and the common ones (--memory, --threads, --quiet,
 * --force, --help; --backend and --verbose for a command that computes), so a
 * cmd_*.c file lists and handles only its own. Applying the common options is
 * main.c's cli_common_opt(); what a command's options mean is the command's.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* Long options every command accepts, after its own. */
static const struct option common[] = {
    {"memory", required_argument, 0, 'M'},
    {"threads", required_argument, 0, 'T'},
    {"quiet", no_argument, 0, 'q'},
    {"force", no_argument, 0, 'f'},
    {"help", no_argument, 0, 'h'},
    /* a command that computes also takes these */
    {"backend", required_argument, 0, 'B'},
    {"gpu-memory", required_argument, 0, CLI_OPT_GPU_MEMORY},
    {"verbose", no_argument, 0, 'v'},
    {"zarr-format", required_argument, 0, CLI_OPT_ZARR_FORMAT},
    {"shards", required_argument, 0, CLI_OPT_SHARDS},
    {"raw", no_argument, 0, CLI_OPT_RAW},
    {"resume", no_argument, 0, CLI_OPT_RESUME},
};

enum {
    NCOMMON = sizeof common / sizeof common[0],
    NCOMPUTE = 7, /* the last NCOMPUTE of common[] */
    MAX_LONGS = 32
};

ck_code cli_getopt(const cli_cmd_opts *o, void *ctx, int argc, char **argv,
                   cli_common *c, int *first, ck_err *err)
{
    /* the tables are the program's own, so fixed sizes suffice */
    struct option all[MAX_LONGS + NCOMMON + 1];
    char shorts[32] = ":h"; /* ':' - a missing value is reported as such */
    size_t n = 0, ncommon;
    ck_code rc = CK_OK;
    int opt;

    for (; o->longs && o->longs[n].name; n++) {
        assert(n < MAX_LONGS);
        all[n] = o->longs[n];
    }
    ncommon = o->computes ? NCOMMON : NCOMMON - NCOMPUTE;
    memcpy(all + n, common, ncommon * sizeof common[0]);
    memset(all + n + ncommon, 0, sizeof all[0]);
    if (o->shorts) {
        assert(strlen(o->shorts) + 3 <= sizeof shorts);
        strcat(shorts, o->shorts);
    }
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
        if (opt == 'h') {
            fputs(o->help, stdout);
            *first = 0;
            return CK_OK;
        }
        if (opt == '?' || opt == ':')
            return ck_err_set(err, CK_EUSAGE,
                              "%s: unknown or incomplete option '%.*s%s' "
                              "(see chunkctl %s --help)",
                              o->name, CLI_SHOW(argv[optind - 1]), o->name);
        if (!cli_common_opt(opt, optarg, c, &rc, err))
            rc = o->on(ctx, opt, optarg, err);
        if (rc != CK_OK)
            return rc;
    }
    *first = optind;
    return CK_OK;
}

ck_code cli_set_output(const char **dst, const char *arg, const char *cmd,
                       ck_err *err)
{
    if (*dst)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: -o given twice ('%s' and '%s'); give one output",
                          cmd, *dst, arg);
    *dst = arg;
    return CK_OK;
}
