/*
 * tests/fuzz/fuzz_h5_filters.c - the HDF5 filter pipeline on raw chunk
 * bytes, as chunkctl undoes it itself after pread()ing a chunk
 * (io/hdf5/h5_read.c: ck_h5_unfilter): deflate, shuffle, zstd (32015)
 * and blosc (32001) stacked in any order, with a chunk filter mask.
 *
 * Input: byte 0: the number of filters (0-3) and the element size of a
 * shuffle; bytes 1-2: the chunk's decoded size (at most 64 KiB); byte
 * 3: the filter mask; a byte per filter picking it; the rest is the
 * stored chunk.
 */
#include "io/hdf5/h5_impl.h"
#include "io/hdf5/zstd_filter.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    return 0;
}

static const H5Z_filter_t FILTERS[] = {H5Z_FILTER_DEFLATE, H5Z_FILTER_SHUFFLE,
                                       CK_H5Z_FILTER_ZSTD, H5Z_FILTER_BLOSC_ID};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    unsigned b0 = fz_byte(&in);
    h5_array ha;
    ck_arena a = CK_ARENA_INIT;
    ck_err err = {0};
    uint32_t mask;
    char *src, *dst;

    memset(&ha, 0, sizeof ha);
    ha.nfilt = (int)(b0 & 3);
    ha.chunk_bytes = fz_u16(&in);
    mask = fz_byte(&in);
    for (int i = 0; i < ha.nfilt; i++) {
        ha.filt[i] = FILTERS[fz_byte(&in) % 4];
        ha.shuf_size[i] = 1 + (b0 >> 2) % 16;
    }
    src = fz_dup(in.p, in.n);
    dst = malloc(ha.chunk_bytes ? ha.chunk_bytes : 1);
    if (!dst)
        abort();
    /* what read_raw_chunk's scratch holds beside the raw bytes */
    if (ck_arena_reserve(&a, NULL, ha.chunk_bytes + 64, "fuzz", &err) == CK_OK)
        fz_note("unfilter", ck_h5_unfilter(&ha, mask, src, in.n, dst, &a, &err),
                &err);
    ck_arena_release(&a);
    free(src);
    free(dst);
    return 0;
}
