/*
 * tests/fuzz/fuzz_zarr_store.c - chunk files read through the store, as
 * `chunkctl copy` reads them (io/store.h: ck_store_open, ck_array_open,
 * ck_array_read_chunk): above all a Zarr v3 shard, whose index
 * (io/zarr/zarr.c: load_index, static) is decoded and checked (crc32c,
 * every entry inside the shard, none overlapping) before any inner chunk
 * is read; also a v2 chunk with filters and F order.
 *
 * Small arrays are made once in the fuzzer's temporary directory
 * (STORES below); byte 0 of the input picks one, and the rest becomes
 * the bytes of its first shard (or chunk) file, whose chunks are then all
 * read.  Shards hold a few chunks of a few dozen bytes.
 */
#include "io/store.h"
#include "tests/fuzz/fuzz.h"

#define INNER                                                                  \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": "              \
    "{\"chunk_shape\": [4, 6]}}, \"chunk_key_encoding\": {\"name\": "          \
    "\"default\"}, \"fill_value\": 7, \"codecs\": [{\"name\": "                \
    "\"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], "

/* name, metadata file, its text, the first chunk file */
static const char *const STORES[][4] = {
    /* zarr-python 3's default: index at the end, crc32c'd */
    {"end_crc.zarr", "zarr.json",
     "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [7, 6], "
     "\"data_type\": \"uint16\", " INNER
     "\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
     "\"little\"}}], \"index_codecs\": [{\"name\": \"bytes\", "
     "\"configuration\": {\"endian\": \"little\"}}, {\"name\": "
     "\"crc32c\"}], \"index_location\": \"end\"}}]}",
     "c/0/0"},
    /* index at the start, big-endian, no checksum: every byte counts */
    {"start_be.zarr", "zarr.json",
     "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4, 6], "
     "\"data_type\": \"int8\", " INNER
     "\"codecs\": [{\"name\": \"bytes\"}], \"index_codecs\": [{\"name\": "
     "\"bytes\", \"configuration\": {\"endian\": \"big\"}}], "
     "\"index_location\": \"start\"}}]}",
     "c/0/0"},
    /* compressed inner chunks with their own checksum */
    {"gzip.zarr", "zarr.json",
     "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [8, 12], "
     "\"data_type\": \"float32\", " INNER
     "\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
     "\"little\"}}, {\"name\": \"gzip\", \"configuration\": {\"level\": "
     "1}}, {\"name\": \"crc32c\"}], \"index_codecs\": [{\"name\": "
     "\"bytes\", \"configuration\": {\"endian\": \"little\"}}], "
     "\"index_location\": \"end\"}}]}",
     "c/0/0"},
    /* v2: delta filter, zlib, F order */
    {"v2.zarr", ".zarray",
     "{\"zarr_format\": 2, \"shape\": [5, 7], \"chunks\": [3, 4], "
     "\"dtype\": \"<i4\", \"compressor\": {\"id\": \"zlib\", \"level\": 1}, "
     "\"fill_value\": -1, \"order\": \"F\", \"filters\": [{\"id\": "
     "\"delta\", \"dtype\": \"<i4\", \"astype\": \"<i2\"}]}",
     "0.0"},
    /* v2: zstd and a shuffle filter (folded into the compressor) */
    {"v2_shuf.zarr", ".zarray",
     "{\"zarr_format\": 2, \"shape\": [6], \"chunks\": [6], "
     "\"dtype\": \">f8\", \"compressor\": {\"id\": \"zstd\", \"level\": 1}, "
     "\"fill_value\": \"NaN\", \"order\": \"C\", \"filters\": [{\"id\": "
     "\"shuffle\", \"elementsize\": 8}]}",
     "0"},
};
#define NSTORES (sizeof STORES / sizeof STORES[0])

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    fz_tmpdir("zarr-store");
    for (size_t i = 0; i < NSTORES; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", fz_dir, STORES[i][0]);
        mkdir(p, 0755);
        if (strchr(STORES[i][3], '/')) { /* v3: c/0/0 */
            snprintf(p, sizeof p, "%s/%s/c", fz_dir, STORES[i][0]);
            mkdir(p, 0755);
            snprintf(p, sizeof p, "%s/%s/c/0", fz_dir, STORES[i][0]);
            mkdir(p, 0755);
        }
        snprintf(p, sizeof p, "%s/%s/%s", fz_dir, STORES[i][0], STORES[i][1]);
        fz_write(p, STORES[i][2], strlen(STORES[i][2]));
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    const char *const *st = STORES[fz_byte(&in) % NSTORES];
    char path[512], file[600];
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_arena ar = CK_ARENA_INIT;
    ck_err err = {0};
    void *dst = NULL;

    snprintf(path, sizeof path, "%s/%s", fz_dir, st[0]);
    snprintf(file, sizeof file, "%s/%s", path, st[3]);
    fz_write(file, in.p, in.n);
    if (ck_store_open(path, &s, &err) != CK_OK) {
        fprintf(stderr, "%s\n", err.msg);
        abort(); /* the metadata is ours and valid */
    }
    if (ck_array_open(s, "", &a, &err) != CK_OK) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    const ck_array_info *info = ck_array_info_of(a);
    const ck_grid *g = ck_array_grid(a);
    size_t cb = ck_dtype_size(info->dtype);
    for (int d = 0; d < info->ndim; d++)
        cb *= (size_t)info->chunks[d];
    if (!(dst = malloc(cb)))
        abort();
    if (ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(a), "fuzz", &err) !=
        CK_OK)
        abort();
    /* every chunk: those of the first shard (or the one chunk file) come
     * from the input, the others are missing (the fill value) */
    int64_t c[CK_MAX_DIMS] = {0};
    for (int64_t k = 0; k < g->total_chunks; k++) {
        int64_t r = k;
        for (int d = info->ndim - 1; d >= 0; d--) {
            c[d] = r % g->nchunks[d];
            r /= g->nchunks[d];
        }
        fz_note("chunk", ck_array_read_chunk(a, c, dst, &ar, &err), &err);
        ck_arena_reset(&ar);
    }
    ck_arena_release(&ar);
    free(dst);
    ck_array_close(a);
    ck_store_close(s);
    return 0;
}
