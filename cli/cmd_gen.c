/*
 * cli/cmd_gen.c - chunkctl gen DST --shape ... [--dist ...]
 */
#include <errno.h>
#include <math.h>
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
    "  --shape N,N,...    array shape (required)\n"
    "  --chunks N,N,...   chunk shape (default: about 8 MiB per chunk)\n"
    "  --dist NAME        uniform (default), normal or integers\n"
    "  --low A --high B   uniform / integers range [A, B) (default 0, 1;\n"
    "                     integers: 0, 100)\n"
    "  --mean A --std B   normal parameters (default 0, 1)\n"
    "  --seed N           64-bit seed (default 0)\n"
    "  --dtype TYPE       element type (default float64)\n"
    "  --compress SPEC    as for copy (default zstd:3)\n" CLI_HELP_ZARR
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

typedef struct gen_cli {
    ck_gen_opts o;
    int have_shape, have_a, have_b;
} gen_cli;

static ck_code gen_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    gen_cli *g = ctx;
    ck_gen_opts *o = &g->o;
    char *end;

    switch (opt) {
    case 's':
        g->have_shape = 1;
        return ck_parse_ints(arg, "--shape", o->shape, CK_MAX_DIMS, &o->ndim,
                             err);
    case 'c':
        return ck_parse_ints(arg, "--chunks", o->chunks, CK_MAX_DIMS,
                             &o->chunks_ndim, err);
    case 'D':
        if (strcmp(arg, "uniform") == 0)
            o->dist = CK_DIST_UNIFORM;
        else if (strcmp(arg, "normal") == 0)
            o->dist = CK_DIST_NORMAL;
        else if (strcmp(arg, "integers") == 0)
            o->dist = CK_DIST_INTEGERS;
        else
            return ck_err_set(err, CK_EUSAGE,
                              "--dist '%s': expected uniform, normal or "
                              "integers",
                              arg);
        return CK_OK;
    case 'a':
        g->have_a = 1;
        return parse_double(arg, "--low/--mean", &o->a, err);
    case 'b':
        g->have_b = 1;
        return parse_double(arg, "--high/--std", &o->b, err);
    case 'S':
        errno = 0;
        o->seed = strtoull(arg, &end, 0);
        if (errno || end == arg || *end || arg[0] == '-')
            return ck_err_set(err, CK_EUSAGE,
                              "--seed '%s': expected a non-negative "
                              "integer",
                              arg);
        return CK_OK;
    case 'd':
        return ck_dtype_parse(arg, &o->dtype, err);
    default: /* 'z' */
        return ck_codec_parse(arg, &o->codec, err);
    }
}

/* --dist integers: whole bounds within the dtype (ck_gen_integers_fit). */
static ck_code integers_fit(const ck_gen_opts *o, ck_err *err)
{
    double tlo, thi;
    int bad = ck_gen_integers_fit(o->dtype, o->a, o->b, &tlo, &thi);

    if (bad == 1)
        return ck_err_set(err, CK_EUSAGE,
                          "gen: --dist integers needs whole --low and --high "
                          "(got %g and %g)",
                          o->a, o->b);
    if (bad == 2)
        return ck_err_set(err, CK_EUSAGE,
                          "gen: --low %g, --high %g: outside %s's range "
                          "[%.0f, %.0f] (--high is excluded)",
                          o->a, o->b, ck_dtype_name(o->dtype), tlo, thi);
    return CK_OK;
}

ck_code cmd_gen(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {
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
        {"zarr-format", required_argument, 0, CLI_OPT_ZARR_FORMAT},
        {"shards", required_argument, 0, CLI_OPT_SHARDS},
        {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {"gen", help, NULL, longs, gen_opt, 0};
    gen_cli g;
    ck_gen_opts *o = &g.o;
    ck_code rc;
    int first;

    memset(&g, 0, sizeof g);
    o->dtype = CK_F64;
    o->codec.id = CK_CODEC_ZSTD;
    o->codec.level = 3;
    if ((rc = cli_getopt(&opts, &g, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        return rc;
    if (!g.have_shape)
        return ck_err_set(err, CK_EUSAGE, "gen: --shape is required");
    if (first != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "gen: expected one DST (see chunkctl gen --help)");
    if (!g.have_a)
        o->a = 0;
    if (!g.have_b)
        o->b = o->dist == CK_DIST_INTEGERS ? 100 : 1;
    if (o->dist != CK_DIST_NORMAL && !(o->b > o->a))
        return ck_err_set(err, CK_EUSAGE, "gen: --high must exceed --low");
    if (o->dist == CK_DIST_NORMAL && !(o->b >= 0))
        return ck_err_set(err, CK_EUSAGE, "gen: --std must be >= 0");
    if (o->dist == CK_DIST_INTEGERS)
        CK_TRY(integers_fit(o, err));
    if (o->dist == CK_DIST_UNIFORM && !ck_gen_uniform_fits(o->a, o->b))
        return ck_err_set(err, CK_EUSAGE,
                          "gen: --low %g, --high %g: high - low is past the "
                          "largest double, as NumPy refuses",
                          o->a, o->b);
    o->dst = argv[first];
    {
        /* The limits (chunkctl(1), LIMITS) as usage errors, before the
         * store is touched. */
        int64_t one[CK_MAX_DIMS];
        ck_grid gr;
        ck_err e = {0};
        for (int d = 0; d < CK_MAX_DIMS; d++)
            one[d] = 1;
        if (ck_grid_init(&gr, o->ndim, o->shape, one, ck_dtype_size(o->dtype),
                         &e) != CK_OK)
            return ck_err_set(err, CK_EUSAGE, "gen %s: --shape: %s", o->dst,
                              e.msg);
        if (ck_chunk_bytes_check(o->chunks_ndim, o->chunks,
                                 ck_dtype_size(o->dtype), &e) != CK_OK)
            return ck_err_set(err, CK_EUSAGE, "gen %s: --chunks: %s", o->dst,
                              e.msg);
    }
    o->force = c->force;
    o->zarr_format = c->zarr_format;
    o->shards_ndim = c->shards_ndim;
    memcpy(o->shards, c->shards, sizeof o->shards);
    o->memory = c->memory;
    o->threads = c->threads;
    cli_progress_begin(c, "gen");
    o->progress = c->progress;
    return ck_gen(o, err);
}
