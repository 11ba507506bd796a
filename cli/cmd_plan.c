/*
 * cli/cmd_plan.c - chunkctl plan PIPELINE.json [--dot] [--ranks N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_comm.h"
#include "base/ck_thread.h"
#include "cli/cli.h"
#include "pipelines/exec.h"
#include "pipelines/plan.h"

static const char help[] =
    "usage: chunkctl plan [--dot] [--ranks N] PIPELINE.json\n\n"
    "Validate a pipeline and show, without reading any data, each step's\n"
    "shape, dtype, chunks, chunk tasks, bytes read and written, and the\n"
    "estimated peak memory.\n\n"
    "  --dot        print the step graph in Graphviz dot instead\n"
    "  --backend NAME  auto, cpu or cuda: where the steps would run\n"
    "               (default: the pipeline's \"backend\", else auto)\n"
    "  --threads N  workers to estimate memory for (default: all cores)\n"
    "  --memory SIZE  the budget: fewer workers when it holds fewer, as\n"
    "               chunkctl run does (default: a quarter of RAM)\n"
    "  --ranks N    show how N MPI ranks would split the outputs' chunks\n"
    "               (under mpirun: the ranks it started)\n"
    "  --help       this text\n";

typedef struct plan_args {
    int dot;
    int ranks; /* --ranks, or the launcher's */
} plan_args;

static ck_code plan_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    plan_args *a = ctx;
    char *end;
    long v;

    if (opt == 'D') {
        a->dot = 1;
        return CK_OK;
    }
    v = strtol(arg, &end, 10);
    if (end == arg || *end || v < 1 || v > 1 << 20)
        return ck_err_set(err, CK_EUSAGE,
                          "--ranks '%s': expected 1 to 1048576 ranks", arg);
    a->ranks = (int)v;
    return CK_OK;
}

ck_code cmd_plan(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {{"dot", no_argument, 0, 'D'},
                                          {"ranks", required_argument, 0, 'R'},
                                          {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {"plan", help,     NULL,
                                      longs,  plan_opt, .computes = 1};
    ck_plan *p = NULL;
    ck_code rc;
    int first;
    plan_args a = {0, ck_comm_size()};

    if ((rc = cli_getopt(&opts, &a, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        return rc;
    if (first != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "plan: expected one PIPELINE.json (see chunkctl "
                          "plan --help)");
    CK_TRY(ck_plan_load(argv[first], c->raw ? CK_PLAN_RAW : 0, &p, err));
    if (a.dot) {
        ck_plan_dot(p, stdout);
    } else {
        const char *want = c->backend ? c->backend : p->backend, *on;
        char why[256];
        if ((rc = ck_exec_backend(p, want, &on, why, sizeof why, err)) ==
            CK_OK) {
            printf("backend: %s", on);
            if (strcmp(want, "auto") == 0)
                printf(" (auto%s%s)", why[0] ? ": " : "", why);
            printf("\n");
            ck_plan_print(p, c->threads > 0 ? c->threads : ck_ncpus(),
                          c->memory, on, stdout);
            if (a.ranks > 1)
                ck_plan_print_ranks(p, a.ranks, stdout);
        }
    }
    ck_plan_free(p);
    return rc;
}
