/*
 * cli/cmd_plan.c - chunkctl plan PIPELINE.json [--dot] [--gpu-memory SIZE]
 * [--ranks N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "base/ck_comm.h"
#include "base/ck_mem.h"
#include "base/ck_thread.h"
#include "cli/cli.h"
#include "pipelines/devla.h"
#include "pipelines/exec.h"
#include "pipelines/fuse.h"
#include "pipelines/plan.h"

static const char help[] =
    "usage: chunkctl plan [--dot] [--gpu-memory SIZE] [--ranks N] "
    "PIPELINE.json\n\n"
    "Validate a pipeline and show, without reading any data, each step's\n"
    "shape, dtype, chunks, chunk tasks, bytes read and written, and the\n"
    "estimated peak memory.\n\n"
    "  --dot              print the step graph in Graphviz dot instead\n"
    "  --backend NAME     auto, cpu or cuda: where the steps would run\n"
    "                     (default: the pipeline's \"backend\", else auto)\n"
    "  --threads N        workers to estimate memory for (default: all\n"
    "                     cores)\n"
    "  --memory SIZE      the budget: fewer workers when it holds fewer, as\n"
    "                     chunkctl run does (default: a quarter of RAM)\n"
    "  --gpu-memory SIZE  under --backend cuda: the device memory to plan\n"
    "                     for, as the run would take it (default: 90% of\n"
    "                     the first device's free memory)\n"
    "  --ranks N          show how N MPI ranks would split the outputs'\n"
    "                     chunks (under mpirun: the ranks it started)\n"
    "  --quiet, --force, --verbose  accepted as by chunkctl run; plan\n"
    "                     writes nothing\n"
    "  --help             this text\n";

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

/* Under cuda: the device memory the steps would take (--gpu-memory, or
 * most of what the first device has free), and how the fused elementwise
 * chains and the linear algebra would use it; a step that cannot fit
 * stops the plan as it would stop the run. */
static ck_code print_device(const ck_plan *p, int64_t budget, ck_err *err)
{
    ck_fusion *fz;
    char sz[32], pk[32];
    int64_t ew;
    ck_err e = {0};

    if (!budget) {
        ck_be_devices d;
        if (ck_be_list_devices(&d, &e) != CK_OK) {
            char *advice = strstr(e.msg, "; use --backend cpu");
            if (advice)
                *advice = '\0';
            printf("device memory: unknown (%s); give --gpu-memory SIZE to "
                   "plan for a device\n",
                   e.msg);
            return CK_OK;
        }
        budget = d.dev[0].free_memory > 0 ? d.dev[0].free_memory / 10 * 9
                                          : d.dev[0].memory / 10 * 9;
    }
    printf("device memory: %s; the steps would use it as follows (the CUDA "
           "backend runs them on the CPU until its device code is verified "
           "on a GPU)\n",
           ck_size_str((double)budget, sz, sizeof sz));
    if (!(fz = malloc(sizeof *fz)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    ck_fuse_plan(p, fz);
    ew = ck_fuse_device_bytes(p, fz);
    if (fz->n > 0)
        printf("device elementwise: %d fused program%s, device peak %s\n",
               fz->n, fz->n == 1 ? "" : "s",
               ck_size_str((double)ew, pk, sizeof pk));
    free(fz);
    ck_devla_print(p, budget, stdout);
    if (ew > budget)
        return ck_err_set(err, CK_ENOMEM,
                          "the fused elementwise chains need %s of device "
                          "memory for two chunks in flight, --gpu-memory "
                          "gives %s (use smaller chunks)",
                          ck_need_str((double)ew, pk, sizeof pk),
                          ck_size_str((double)budget, sz, sizeof sz));
    return ck_devla_check(p, budget, err);
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
    CK_TRY(ck_plan_load(argv[first], c->raw ? CK_PLAN_RAW : 0, c->memory, &p,
                        err));
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
            if (strcmp(on, "cuda") == 0)
                rc = print_device(p, c->gpu_memory, err);
            if (rc == CK_OK && a.ranks > 1)
                ck_plan_print_ranks(p, a.ranks, stdout);
        }
    }
    ck_plan_free(p);
    return rc;
}
