/*
 * cli/cmd_copy.c - chunkctl copy SRC DST [--chunks] [--compress] [--dtype]
 */
#include <stdio.h>
#include <string.h>

#include "base/ck_mem.h"
#include "cli/cli.h"
#include "pipelines/copy.h"

static const char help[] =
    "usage: chunkctl copy [OPTIONS] SRC[:DATASET] DST[:DATASET]\n\n"
    "Copy arrays between HDF5 files (*.h5) and Zarr stores (*.zarr):\n"
    "convert, rechunk, recompress and change dtype, out of core.  Without\n"
    "a DATASET, every array of SRC is copied, keeping names and attributes\n"
    "(arrays of types chunkctl does not hold, such as float16, complex or\n"
    "strings, are left out with a warning each).  DST appears only when\n"
    "complete and is never overwritten without --force.\n\n"
    "  --chunks N,N,...   chunk shape of the output (default: the input's)\n"
    "  --compress SPEC    none, zstd[:LEVEL], gzip[:LEVEL], zlib[:LEVEL]\n"
    "                     (each may add :shuffle), blosc[:CNAME[:LEVEL"
    "[:SHUFFLE]]],\n"
    "                     and for Zarr lz4[:ACCEL], lzma[:PRESET], "
    "bz2[:LEVEL]\n"
    "                     (default: the input's compression)\n"
    "  --filters LIST     Zarr filters before the compressor, in order:\n"
    "                     delta[:ASTYPE], shuffle[:SIZE],\n"
    "                     fixedscaleoffset:OFFSET:SCALE[:ASTYPE],\n"
    "                     quantize:DIGITS[:ASTYPE], bitround:KEEPBITS,\n"
    "                     astype:TYPE, packbits; or none (default: the\n"
    "                     input's, while the dtype is kept)\n"
    "  --zarr-format 2|3  the Zarr version of a new Zarr output (default:\n"
    "                     the input's when it is Zarr, else 2)\n"
    "  --shards N,N,...   zarr v3: chunks stored in shards of this shape (a\n"
    "                     multiple of the chunk shape), one file per shard\n"
    "                     (default: the input's while its chunks are kept)\n"
    "  --dtype TYPE       convert to bool, int8..int64, uint8..uint64,\n"
    "                     float32 or float64 (default: keep)\n"
    "  --memory SIZE      peak memory bound, e.g. 512M (default: 1/4 of "
    "RAM)\n"
    "  --threads N        worker threads (default: all cores)\n"
    "  --force            replace DST if it exists\n" CLI_HELP_RESUME
    "  --quiet            no progress bar or notes\n"
    "  --verbose          also how a rechunk reads the source (its cache\n"
    "                     of decoded chunks, how many were decoded)\n"
    "  --help             this text\n\n"
    "example: chunkctl copy data.h5:/x x.zarr --chunks 1000,1000 "
    "--compress blosc:lz4:5\n"
    "         chunkctl copy data.h5:/t t.zarr --filters delta,shuffle "
    "--compress lz4\n"
    "         chunkctl copy data.h5:/x x.zarr --zarr-format 3 --chunks "
    "100,100 --shards 1000,1000\n";

static ck_code copy_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    ck_copy_opts *o = ctx;

    switch (opt) {
    case 'c':
        return ck_parse_ints(arg, "--chunks", o->chunks, CK_MAX_DIMS,
                             &o->chunks_ndim, err);
    case 'z':
        o->has_codec = 1;
        return ck_codec_parse(arg, &o->codec, err);
    case 'L':
        o->has_filters = 1;
        return ck_filter_parse_list(arg, o->filters, CK_FILTERS_MAX,
                                    &o->nfilters, err);
    default: /* 'd' */
        return ck_dtype_parse(arg, &o->dtype, err);
    }
}

ck_code cmd_copy(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {
        {"chunks", required_argument, 0, 'c'},
        {"compress", required_argument, 0, 'z'},
        {"filters", required_argument, 0, 'L'},
        {"dtype", required_argument, 0, 'd'},
        {"zarr-format", required_argument, 0, CLI_OPT_ZARR_FORMAT},
        {"shards", required_argument, 0, CLI_OPT_SHARDS},
        {"resume", no_argument, 0, CLI_OPT_RESUME},
        {"verbose", no_argument, 0, 'v'},
        {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {"copy", help, NULL, longs, copy_opt, 0};
    ck_copy_opts o;
    ck_code rc;
    int first;

    memset(&o, 0, sizeof o);
    if ((rc = cli_getopt(&opts, &o, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        return rc;
    if (first != argc - 2)
        return ck_err_set(err, CK_EUSAGE,
                          "copy: expected SRC and DST (see chunkctl copy "
                          "--help)");
    o.src = argv[first];
    o.dst = argv[first + 1];
    o.force = c->force;
    o.resume = c->resume;
    o.zarr_format = c->zarr_format;
    o.cmdline = c->cmdline;
    o.shards_ndim = c->shards_ndim;
    memcpy(o.shards, c->shards, sizeof o.shards);
    o.memory = c->memory;
    o.threads = c->threads;
    cli_progress_begin(c, "copy");
    o.progress = c->progress;
    return ck_copy(&o, err);
}
