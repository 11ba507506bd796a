/*
 * cli/cmd_plan.c - chunkctl plan PIPELINE.json [--dot]
 */
#include <stdio.h>

#include "base/ck_thread.h"
#include "cli/cli.h"
#include "pipelines/plan.h"

static const char help[] =
    "usage: chunkctl plan [--dot] PIPELINE.json\n\n"
    "Validate a pipeline and show, without reading any data, each step's\n"
    "shape, dtype, chunks, chunk tasks, bytes read and written, and the\n"
    "estimated peak memory.\n\n"
    "  --dot        print the step graph in Graphviz dot instead\n"
    "  --threads N  workers to estimate memory for (default: all cores)\n"
    "  --memory SIZE  the budget: fewer workers when it holds fewer, as\n"
    "               chunkctl run does (default: a quarter of RAM)\n"
    "  --help       this text\n";

ck_code cmd_plan(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option opts[] = {
        {"dot", no_argument, 0, 'D'}, CLI_COMMON_OPTS, {0, 0, 0, 0}};
    ck_plan *p = NULL;
    ck_code rc = CK_OK;
    int opt, dot = 0;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(help, stdout);
            return CK_OK;
        } else if (opt == 'D') {
            dot = 1;
        } else if (!cli_common_opt(opt, optarg, c, &rc, err)) {
            return ck_err_set(err, CK_EUSAGE,
                              "plan: unknown or incomplete option '%s' (see "
                              "chunkctl plan --help)",
                              argv[optind - 1]);
        }
        if (rc != CK_OK)
            return rc;
    }
    if (optind != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "plan: expected one PIPELINE.json (see chunkctl "
                          "plan --help)");
    CK_TRY(ck_plan_load(argv[optind], &p, err));
    if (dot)
        ck_plan_dot(p, stdout);
    else
        ck_plan_print(p, c->threads > 0 ? c->threads : ck_ncpus(), c->memory,
                      stdout);
    ck_plan_free(p);
    return CK_OK;
}
