/*
 * tests/fuzz/fuzz_z3_chain.c - one Zarr v3 chunk through its codec chain
 * (io/zarr/chain3.h: ck_z3_decode), for chains parsed from zarr.json
 * texts: transpose, bytes in either byte order, gzip, zstd, blosc,
 * numcodecs.* compressors, numcodecs.shuffle and crc32c, alone and
 * stacked; a chunk that decodes must encode (ck_z3_encode) to bytes
 * that decode to it again.  Byte 0 picks the chain (CHAINS below); the
 * rest is the stored chunk.  Chunks are a few hundred bytes, so nothing
 * allocates more.
 */
#include "io/zarr/chain3.h"
#include "tests/fuzz/fuzz.h"

#define BYTES_LE                                                               \
    "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define BYTES_BE                                                               \
    "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}"
#define CRC "{\"name\": \"crc32c\"}"
#define T10 "{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}"
#define T201                                                                   \
    "{\"name\": \"transpose\", \"configuration\": {\"order\": [2, 0, 1]}}"
#define SHUF(n)                                                                \
    "{\"name\": \"numcodecs.shuffle\", \"configuration\": "                    \
    "{\"elementsize\": " #n "}}"
#define GZIP "{\"name\": \"gzip\", \"configuration\": {\"level\": 1}}"
#define ZSTD                                                                   \
    "{\"name\": \"zstd\", \"configuration\": {\"level\": 0, \"checksum\": "    \
    "true}}"
#define BLOSC                                                                  \
    "{\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", "           \
    "\"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 4, "               \
    "\"blocksize\": 0}}"
#define NC(id) "{\"name\": \"numcodecs." id "\"}"

/* data_type, shape (= the chunk shape), codecs */
static const char *const CHAINS[][3] = {
    {"uint16", "[4, 6]", BYTES_LE},
    {"float64", "[3, 5]", BYTES_BE "," CRC},
    {"int32", "[4, 6]", T10 "," BYTES_LE "," ZSTD},
    {"float32", "[5, 3]", T10 "," BYTES_BE "," GZIP "," CRC},
    {"float32", "[8, 8]", BYTES_LE "," BLOSC},
    {"int16", "[2, 3, 4]", T201 "," BYTES_BE "," SHUF(2) "," NC("zlib")},
    {"uint8", "[64]", BYTES_LE "," NC("lz4")},
    {"int64", "[3, 4]", BYTES_LE "," NC("lzma") "," CRC},
    {"float64", "[3, 4]", BYTES_LE "," NC("bz2")},
    {"uint32", "[6, 2]", BYTES_LE "," SHUF(4)},
    {"bool", "[5, 7]", T10 "," BYTES_LE "," CRC "," SHUF(1)},
    {"int8", "[9]", BYTES_LE "," NC("gzip") "," CRC "," CRC},
    {"uint16", "[3, 5]", BYTES_LE "," CRC "," SHUF(2)},
    {"float32", "[4, 2]", BYTES_LE "," CRC "," NC("zstd")},
};
#define NCHAINS (sizeof CHAINS / sizeof CHAINS[0])

static ck_zarr_meta metas[NCHAINS];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    for (size_t i = 0; i < NCHAINS; i++) {
        char t[2048];
        ck_err err = {0};
        snprintf(t, sizeof t,
                 "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": "
                 "%s, \"data_type\": \"%s\", \"chunk_grid\": {\"name\": "
                 "\"regular\", \"configuration\": {\"chunk_shape\": %s}}, "
                 "\"chunk_key_encoding\": {\"name\": \"default\"}, "
                 "\"fill_value\": 0, \"codecs\": [%s]}",
                 CHAINS[i][1], CHAINS[i][0], CHAINS[i][1], CHAINS[i][2]);
        if (ck_zarr3_meta_parse(t, strlen(t), "fuzz", &metas[i], &err) !=
            CK_OK) {
            fprintf(stderr, "chain %zu: %s\n", i, err.msg);
            exit(1);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    const ck_zarr_meta *m = &metas[fz_byte(&in) % NCHAINS];
    size_t cb = ck_dtype_size(m->dtype);
    ck_arena a = CK_ARENA_INIT, b = CK_ARENA_INIT;
    ck_err err = {0};
    char *src, *dst;

    for (int d = 0; d < m->ndim; d++)
        cb *= (size_t)m->chunks[d];
    src = fz_dup(in.p, in.n);
    dst = malloc(cb);
    if (!dst)
        abort();
    if (ck_arena_reserve(&a, NULL, ck_z3_scratch(&m->chain, cb), "fuzz",
                         &err) == CK_OK &&
        ck_arena_reserve(&b, NULL, ck_z3_scratch(&m->chain, cb), "fuzz",
                         &err) == CK_OK &&
        fz_note("decode",
                ck_z3_decode(&m->chain, m->ndim, m->chunks, m->dtype, src, in.n,
                             dst, &a, &err),
                &err) == CK_OK) {
        /* What decoded encodes to bytes that decode to it again. */
        const void *enc;
        size_t en;
        char *again = malloc(cb);
        ck_arena_reset(&a);
        if (!again ||
            ck_z3_encode(&m->chain, m->ndim, m->chunks, m->dtype, dst, &a, &enc,
                         &en, &err) != CK_OK ||
            ck_z3_decode(&m->chain, m->ndim, m->chunks, m->dtype, enc, en,
                         again, &b, &err) != CK_OK ||
            memcmp(again, dst, cb) != 0) {
            fprintf(stderr, "chain round trip: %s\n", err.msg);
            abort();
        }
        free(again);
    }
    ck_arena_release(&b);
    ck_arena_release(&a);
    free(src);
    free(dst);
    return 0;
}
