/*
 * cli/cmd_verify.c - chunkctl verify PATH[:DATASET]
 */
#include <stdio.h>
#include <time.h>

#include "base/ck_mem.h"
#include "cli/cli.h"
#include "pipelines/verify.h"

static const char help[] =
    "usage: chunkctl verify [OPTIONS] PATH[:DATASET]\n\n"
    "Read and decode every chunk of every array (or the one named) on all\n"
    "cores, and report the chunks that do not decode, and the names the\n"
    "metadata gives that lead to no array.  Nothing is written.\n"
    "Exit status 1 when any chunk is damaged or any name leads nowhere.\n\n"
    "  --memory SIZE, --threads N, --quiet, --help\n";

ck_code cmd_verify(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const cli_cmd_opts opts = {"verify", help, NULL, NULL, NULL, 0};
    ck_verify_opts o = {0};
    ck_verify_report rep;
    ck_code rc;
    struct timespec t0, t1;
    char sz[32];
    int first;

    if ((rc = cli_getopt(&opts, NULL, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        return rc;
    if (first != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "verify: expected one PATH[:DATASET] (see "
                          "chunkctl verify --help)");
    o.target = argv[first];
    o.memory = c->memory;
    o.threads = c->threads;
    cli_progress_begin(c, "verify");
    o.progress = c->progress;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = ck_verify(&o, &rep, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cli_progress_end(c);
    if (rc != CK_OK)
        return rc;
    for (int i = 0; i < rep.nmsg; i++)
        printf("damaged: %s\n", rep.msg[i]);
    if (rep.missing + rep.bad > rep.nmsg)
        printf("damaged: ... and %lld more\n",
               (long long)(rep.missing + rep.bad - rep.nmsg));
    double secs = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("%s: %d array%s, %lld chunks, %s decoded in %.2f s (%.2f GB/s), "
           "%lld damaged",
           o.target, rep.arrays, rep.arrays == 1 ? "" : "s",
           (long long)rep.chunks, ck_size_str((double)rep.bytes, sz, sizeof sz),
           secs, secs > 0 ? (double)rep.bytes / secs / 1e9 : 0.0,
           (long long)rep.bad);
    if (rep.missing)
        printf(", %lld named but missing", (long long)rep.missing);
    putchar('\n');
    if (rep.missing && rep.bad)
        return ck_err_set(err, CK_ECORRUPT,
                          "%s: %lld of %lld chunks damaged, and %lld "
                          "name%s lead%s nowhere",
                          o.target, (long long)rep.bad, (long long)rep.chunks,
                          (long long)rep.missing, rep.missing == 1 ? "" : "s",
                          rep.missing == 1 ? "s" : "");
    if (rep.missing)
        return ck_err_set(err, CK_ECORRUPT, "%s: %lld name%s lead%s nowhere",
                          o.target, (long long)rep.missing,
                          rep.missing == 1 ? "" : "s",
                          rep.missing == 1 ? "s" : "");
    if (rep.bad)
        return ck_err_set(err, CK_ECORRUPT, "%s: %lld of %lld chunks damaged",
                          o.target, (long long)rep.bad, (long long)rep.chunks);
    return CK_OK;
}
