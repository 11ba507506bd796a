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
    "a DATASET, every array of SRC is copied, keeping names and attributes.\n"
    "DST appears only when complete and is never overwritten without\n"
    "--force.\n\n"
    "  --chunks N,N,...     chunk shape of the output (default: the input's)\n"
    "  --compress SPEC      none, zstd[:LEVEL], gzip[:LEVEL], zlib[:LEVEL]\n"
    "                       (HDF5: add :shuffle), blosc[:CNAME[:LEVEL"
    "[:SHUFFLE]]]\n"
    "                       (default: the input's compression)\n"
    "  --dtype TYPE         convert to bool, int8..int64, uint8..uint64,\n"
    "                       float32 or float64 (default: keep)\n"
    "  --memory SIZE        peak memory bound, e.g. 512M (default: 1/4 of "
    "RAM)\n"
    "  --threads N          worker threads (default: all cores)\n"
    "  --force              replace DST if it exists\n"
    "  --quiet              no progress bar or notes\n"
    "  --help               this text\n\n"
    "example: chunkctl copy data.h5:/x x.zarr --chunks 1000,1000 "
    "--compress blosc:lz4:5\n";

ck_code cmd_copy(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option opts[] = {
        {"chunks", required_argument, 0, 'c'},
        {"compress", required_argument, 0, 'z'},
        {"dtype", required_argument, 0, 'd'},
        CLI_COMMON_OPTS,
        {0, 0, 0, 0}};
    ck_copy_opts o;
    ck_code rc = CK_OK;
    int opt;

    memset(&o, 0, sizeof o);
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(help, stdout);
            return CK_OK;
        case 'c':
            rc = ck_parse_ints(optarg, "--chunks", o.chunks, CK_MAX_DIMS,
                               &o.chunks_ndim, err);
            break;
        case 'z':
            rc = ck_codec_parse(optarg, &o.codec, err);
            o.has_codec = 1;
            break;
        case 'd':
            rc = ck_dtype_parse(optarg, &o.dtype, err);
            break;
        default:
            if (!cli_common_opt(opt, optarg, c, &rc, err))
                return ck_err_set(err, CK_EUSAGE,
                                  "copy: unknown or incomplete option '%s' "
                                  "(see chunkctl copy --help)",
                                  argv[optind - 1]);
        }
        if (rc != CK_OK)
            return rc;
    }
    if (optind != argc - 2)
        return ck_err_set(err, CK_EUSAGE,
                          "copy: expected SRC and DST (see chunkctl copy "
                          "--help)");
    o.src = argv[optind];
    o.dst = argv[optind + 1];
    o.force = c->force;
    o.memory = c->memory;
    o.threads = c->threads;
    cli_progress_begin(c, "copy");
    o.progress = c->progress;
    return ck_copy(&o, err);
}
