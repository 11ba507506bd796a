/*
 * cli/cmd_devices.c - chunkctl devices [--json]: the GPUs the CUDA backend
 * can use, their memory and the driver and runtime versions.
 */
#include <stdio.h>

#include "backends/backend.h"
#include "base/ck_mem.h"
#include "cli/cli.h"

static const char help[] =
    "usage: chunkctl devices [--json]\n\n"
    "List the GPUs the CUDA backend (--backend cuda) can use: name, compute\n"
    "capability, memory and free memory, and the CUDA driver and runtime\n"
    "versions.  Exit status 1, with the driver's reason, when there are\n"
    "none.\n\n"
    "  --json     one JSON object on stdout, for scripts\n"
    "  --help     this text\n";

static ck_code devices_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    (void)opt; /* 'j', the only one */
    (void)arg;
    (void)err;
    *(int *)ctx = 1;
    return CK_OK;
}

static void version(char *buf, size_t n, int v)
{
    snprintf(buf, n, "%d.%d", v / 1000, v % 1000 / 10);
}

ck_code cmd_devices(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {{"json", no_argument, 0, 'j'},
                                          {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {"devices", help,        NULL,
                                      longs,     devices_opt, 0};
    ck_be_devices d;
    char drv[16], rt[16], mem[32], fr[32];
    int json = 0, first;
    ck_code rc;

    if ((rc = cli_getopt(&opts, &json, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        return rc;
    if (first != argc)
        return ck_err_set(err, CK_EUSAGE,
                          "devices: takes no operands (see chunkctl devices "
                          "--help)");
    if ((rc = ck_be_list_devices(&d, err)) != CK_OK) {
        ck_err_prefix(err, "devices");
        return rc;
    }
    version(drv, sizeof drv, d.driver);
    version(rt, sizeof rt, d.runtime);
    if (json) {
        printf("{\"driver\": \"%s\", \"runtime\": \"%s\", \"devices\": [", drv,
               rt);
        for (int i = 0; i < d.n; i++) {
            printf("%s\n  {\"index\": %d, \"name\": ", i ? "," : "", i);
            cli_print_json_str(d.dev[i].name);
            printf(", \"compute_capability\": \"%d.%d\", \"memory\": %lld, "
                   "\"free_memory\": %lld}",
                   d.dev[i].major, d.dev[i].minor, (long long)d.dev[i].memory,
                   (long long)d.dev[i].free_memory);
        }
        printf("\n]}\n");
        return CK_OK;
    }
    printf("CUDA driver %s, runtime %s, %d device%s\n", drv, rt, d.n,
           d.n == 1 ? "" : "s");
    for (int i = 0; i < d.n; i++)
        printf("  %d  %s  (compute %d.%d)  %s, %s free\n", i, d.dev[i].name,
               d.dev[i].major, d.dev[i].minor,
               ck_size_str((double)d.dev[i].memory, mem, sizeof mem),
               d.dev[i].free_memory < 0
                   ? "?"
                   : ck_size_str((double)d.dev[i].free_memory, fr, sizeof fr));
    return CK_OK;
}
