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
    "  --backend NAME     compute backend (default: cpu)\n"
    "  --json             print the \"print\" steps' results as JSON\n"
    "  --memory SIZE      peak memory bound, e.g. 512M (default: 1/4 of "
    "RAM)\n"
    "  --threads N        worker threads (default: all cores)\n"
    "  --force            replace outputs that exist\n"
    "  --quiet            no progress bar or notes\n"
    "  --help             this text\n";

ck_code cmd_run(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option opts[] = {{"backend", required_argument, 0, 'B'},
                                         {"json", no_argument, 0, 'j'},
                                         CLI_COMMON_OPTS,
                                         {0, 0, 0, 0}};
    ck_exec_opts o = {0};
    ck_plan *p = NULL;
    ck_code rc = CK_OK;
    int opt, json = 0;

    o.backend = "cpu";
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(help, stdout);
            return CK_OK;
        } else if (opt == 'B') {
            o.backend = optarg;
        } else if (opt == 'j') {
            json = 1;
        } else if (!cli_common_opt(opt, optarg, c, &rc, err)) {
            return ck_err_set(err, CK_EUSAGE,
                              "run: unknown or incomplete option '%s' (see "
                              "chunkctl run --help)",
                              argv[optind - 1]);
        }
        if (rc != CK_OK)
            return rc;
    }
    if (optind != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "run: expected one PIPELINE.json (see chunkctl run "
                          "--help)");
    CK_TRY(ck_plan_load(argv[optind], &p, err));
    o.memory = c->memory;
    o.threads = c->threads;
    o.force = c->force;
    cli_progress_begin(c, "run");
    o.progress = c->progress;
    ck_results res = {0};
    rc = ck_exec_run(p, &o, &res, err);
    cli_progress_end(c);
    if (rc == CK_OK)
        cli_print_results(&res, json);
    ck_results_release(&res);
    ck_plan_free(p);
    return rc;
}
