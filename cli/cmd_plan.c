/*
 * cli/cmd_plan.c - chunkctl plan PIPELINE.json [--dot]
 */
#include <stdio.h>
#include <string.h>

#include "base/ck_thread.h"
#include "cli/cli.h"
#include "pipelines/exec.h"
#include "pipelines/plan.h"

static const char help[] =
    "usage: chunkctl plan [--dot] PIPELINE.json\n\n"
    "Validate a pipeline and show, without reading any data, each step's\n"
    "shape, dtype, chunks, chunk tasks, bytes read and written, and the\n"
    "estimated peak memory.\n\n"
    "  --dot        print the step graph in Graphviz dot instead\n"
    "  --backend NAME  auto, cpu or cuda: where the steps would run\n"
    "               (default: the pipeline's \"backend\", else auto)\n"
    "  --threads N  workers to estimate memory for (default: all cores)\n"
    "  --memory SIZE  the budget: fewer workers when it holds fewer, as\n"
    "               chunkctl run does (default: a quarter of RAM)\n"
    "  --help       this text\n";

static ck_code plan_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    (void)opt; /* 'D', the only one */
    (void)arg;
    (void)err;
    *(int *)ctx = 1;
    return CK_OK;
}

ck_code cmd_plan(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {{"dot", no_argument, 0, 'D'},
                                          {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {"plan", help,     NULL,
                                      longs,  plan_opt, .computes = 1};
    ck_plan *p = NULL;
    ck_code rc;
    int first, dot = 0;

    if ((rc = cli_getopt(&opts, &dot, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        return rc;
    if (first != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "plan: expected one PIPELINE.json (see chunkctl "
                          "plan --help)");
    CK_TRY(ck_plan_load(argv[first], c->raw ? CK_PLAN_RAW : 0, &p, err));
    if (dot) {
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
        }
    }
    ck_plan_free(p);
    return rc;
}
