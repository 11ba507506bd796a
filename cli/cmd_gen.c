/*
 * cli/cmd_gen.c - chunkctl gen DST --shape ... [--dist ...]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_mem.h"
#include "cli/cli.h"
#include "pipelines/gen.h"

static const char help[] =
    "usage: chunkctl gen [OPTIONS] --shape N,N,... DST[:DATASET]\n\n"
    "Write a reproducible random array.  Element i depends only on --seed,\n"
    "the distribution and i, never on chunking or threads.\n\n"
    "  --shape N,N,...      array shape (required)\n"
    "  --chunks N,N,...     chunk shape (default: about 8 MiB per chunk)\n"
    "  --dist NAME          uniform (default), normal or integers\n"
    "  --low A --high B     uniform / integers range [A, B) (default 0, 1;\n"
    "                       integers: 0, 100)\n"
    "  --mean A --std B     normal parameters (default 0, 1)\n"
    "  --seed N             64-bit seed (default 0)\n"
    "  --dtype TYPE         element type (default float64)\n"
    "  --compress SPEC      as for copy (default zstd:3)\n"
    "  --memory SIZE, --threads N, --force, --quiet, --help\n\n"
    "example: chunkctl gen big.h5:/x --shape 20000,5000 --dist normal "
    "--seed 7\n";

static ck_code parse_double(const char *s, const char *what, double *out,
                            ck_err *err)
{
    char *end;

    errno = 0;
    *out = strtod(s, &end);
    if (errno || end == s || *end)
        return ck_err_set(err, CK_EUSAGE, "%s '%s': not a number", what, s);
    return CK_OK;
}

ck_code cmd_gen(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option opts[] = {
        {"shape", required_argument, 0, 's'},
        {"chunks", required_argument, 0, 'c'},
        {"dist", required_argument, 0, 'D'},
        {"low", required_argument, 0, 'a'},
        {"mean", required_argument, 0, 'a'},
        {"high", required_argument, 0, 'b'},
        {"std", required_argument, 0, 'b'},
        {"seed", required_argument, 0, 'S'},
        {"dtype", required_argument, 0, 'd'},
        {"compress", required_argument, 0, 'z'},
        CLI_COMMON_OPTS,
        {0, 0, 0, 0}};
    ck_gen_opts o;
    ck_code rc = CK_OK;
    int opt, have_shape = 0, have_a = 0, have_b = 0;
    char *end;

    memset(&o, 0, sizeof o);
    o.dtype = CK_F64;
    o.codec.id = CK_CODEC_ZSTD;
    o.codec.level = 3;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(help, stdout);
            return CK_OK;
        case 's':
            rc = ck_parse_ints(optarg, "--shape", o.shape, CK_MAX_DIMS, &o.ndim,
                               err);
            have_shape = 1;
            break;
        case 'c':
            rc = ck_parse_ints(optarg, "--chunks", o.chunks, CK_MAX_DIMS,
                               &o.chunks_ndim, err);
            break;
        case 'D':
            if (strcmp(optarg, "uniform") == 0)
                o.dist = CK_DIST_UNIFORM;
            else if (strcmp(optarg, "normal") == 0)
                o.dist = CK_DIST_NORMAL;
            else if (strcmp(optarg, "integers") == 0)
                o.dist = CK_DIST_INTEGERS;
            else
                rc = ck_err_set(err, CK_EUSAGE,
                                "--dist '%s': expected uniform, normal or "
                                "integers",
                                optarg);
            break;
        case 'a':
            rc = parse_double(optarg, "--low/--mean", &o.a, err);
            have_a = 1;
            break;
        case 'b':
            rc = parse_double(optarg, "--high/--std", &o.b, err);
            have_b = 1;
            break;
        case 'S':
            errno = 0;
            o.seed = strtoull(optarg, &end, 0);
            if (errno || end == optarg || *end || optarg[0] == '-')
                rc = ck_err_set(err, CK_EUSAGE,
                                "--seed '%s': expected a non-negative "
                                "integer",
                                optarg);
            break;
        case 'd':
            rc = ck_dtype_parse(optarg, &o.dtype, err);
            break;
        case 'z':
            rc = ck_codec_parse(optarg, &o.codec, err);
            break;
        default:
            if (!cli_common_opt(opt, optarg, c, &rc, err))
                return ck_err_set(err, CK_EUSAGE,
                                  "gen: unknown or incomplete option '%s' "
                                  "(see chunkctl gen --help)",
                                  argv[optind - 1]);
        }
        if (rc != CK_OK)
            return rc;
    }
    if (!have_shape)
        return ck_err_set(err, CK_EUSAGE, "gen: --shape is required");
    if (optind != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "gen: expected one DST (see chunkctl gen --help)");
    if (!have_a)
        o.a = 0;
    if (!have_b)
        o.b = o.dist == CK_DIST_INTEGERS ? 100 : 1;
    if (o.dist != CK_DIST_NORMAL && !(o.b > o.a))
        return ck_err_set(err, CK_EUSAGE, "gen: --high must exceed --low");
    if (o.dist == CK_DIST_NORMAL && !(o.b >= 0))
        return ck_err_set(err, CK_EUSAGE, "gen: --std must be >= 0");
    o.dst = argv[optind];
    o.force = c->force;
    o.memory = c->memory;
    o.threads = c->threads;
    cli_progress_begin(c, "gen");
    o.progress = c->progress;
    return ck_gen(&o, err);
}
