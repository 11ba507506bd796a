/*
 * cli/cmd_run.c - chunkctl run PIPELINE.json
 */
#include <stdio.h>
#include <string.h>

#include "base/ck_thread.h"
#include "cli/cli.h"
#include "pipelines/exec.h"
#include "pipelines/plan.h"

static const char help[] =
    "usage: chunkctl run [OPTIONS] PIPELINE.json\n\n"
    "Run a pipeline (see chunkctl-pipeline(5)) out of core on all cores.\n"
    "Outputs appear only when the whole run succeeds.\n\n"
    "  --backend NAME     auto, cpu or cuda (default: the pipeline's\n"
    "                     \"backend\", else auto: cuda when a GPU is "
    "there)\n" CLI_HELP_GPU_MEMORY
    "  --verbose          say which backend runs each step\n"
    "  --json             print the \"print\" steps' results as "
    "JSON\n"
    "  --compress SPEC    compression of the outputs that set no "
    "\"compress\"\n"
    "                     (as copy's --compress; default: none)\n" CLI_HELP_ZARR
        CLI_HELP_RAW
    "  --memory SIZE      peak memory bound, e.g. 512M (default: 1/4 of "
    "RAM)\n"
    "  --threads N        worker threads (default: all cores)\n"
    "  --force            replace outputs that exist\n" CLI_HELP_RESUME
    "  --quiet            no progress bar or notes\n"
    "  --help             this text\n";

typedef struct run_cli {
    int json;
    int has_codec;
    ck_codec_spec codec;
} run_cli;

static ck_code run_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    run_cli *o = ctx;

    if (opt == 'z') {
        o->has_codec = 1;
        return ck_codec_parse(arg, &o->codec, err);
    }
    o->json = 1; /* 'j' */
    return CK_OK;
}

ck_code cmd_run(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {
        {"json", no_argument, 0, 'j'},
        {"compress", required_argument, 0, 'z'},
        {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {"run", help,    NULL,
                                      longs, run_opt, .computes = 1};
    run_cli rc_opts = {0};
    ck_exec_opts o = {0};
    ck_plan *p = NULL;
    ck_code rc;
    int first;

    if ((rc = cli_getopt(&opts, &rc_opts, argc, argv, c, &first, err)) !=
            CK_OK ||
        !first)
        return rc;
    if (first != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "run: expected one PIPELINE.json (see chunkctl run "
                          "--help)");
    CK_TRY(ck_plan_load(argv[first], c->raw ? CK_PLAN_RAW : 0, c->memory, &p,
                        err));
    o.backend = c->backend; /* NULL: the pipeline's */
    o.memory = c->memory;
    o.threads = c->threads;
    o.gpu_memory = c->gpu_memory;
    o.force = c->force;
    o.resume = c->resume;
    o.zarr_format = c->zarr_format;
    o.has_codec = rc_opts.has_codec;
    o.codec = rc_opts.codec;
    o.cmdline = c->cmdline;
    o.shards_ndim = c->shards_ndim;
    memcpy(o.shards, c->shards, sizeof o.shards);
    cli_progress_begin(c, "run");
    o.progress = c->progress;
    ck_results res = {0};
    rc = ck_exec_run(p, &o, &res, err);
    cli_progress_end(c);
    if (rc == CK_OK)
        cli_print_results(&res, rc_opts.json);
    ck_results_release(&res);
    ck_plan_free(p);
    return rc;
}
