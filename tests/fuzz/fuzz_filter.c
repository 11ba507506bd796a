/*
 * tests/fuzz/fuzz_filter.c - the Zarr filters (io/filter.h): a chain of
 * one to three stages built from header bytes and checked by
 * ck_filter_chain_init, as io/zarr/meta.c hands it the configurations
 * it reads, then ck_filter_chain_decode of the rest of the input, and
 * ck_filter_chain_encode of what that decoded (any values: NaN, huge
 * ones) when no stage is decode-only.
 *
 * Input: byte 0: the data's dtype (bits 0-3), the number of stages
 * (bits 4-6) and whether the stored bytes go in as they are (bit 7;
 * else cut or zero-padded to the size the chain expects); byte 1: the
 * element count (at most 255); per stage 8 bytes (id, dtype,
 * astype, elementsize, digits, keepbits, offset, scale); the rest is the
 * stored bytes.
 */
#include "io/filter.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    return 0;
}

static ck_dtype dtype_of(unsigned b)
{
    return (ck_dtype)(b % CK_DT_COUNT); /* 0: CK_DT_INVALID, "follow" */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    unsigned b0 = fz_byte(&in);
    ck_dtype dt = (ck_dtype)(1 + (b0 & 15) % (CK_DT_COUNT - 1));
    int exact = b0 >> 7;
    size_t ne = fz_byte(&in);
    int nf = 1 + (int)(b0 >> 4 & 7) % 3;
    ck_filter f[3];
    ck_filter_chain ch;
    ck_arena a = CK_ARENA_INIT;
    ck_err err = {0};

    memset(f, 0, sizeof f);
    for (int i = 0; i < nf; i++) {
        f[i].id = (ck_filter_id)(1 + fz_byte(&in) % 8);
        f[i].dtype = dtype_of(fz_byte(&in));
        f[i].astype = dtype_of(fz_byte(&in));
        f[i].elementsize = (int)fz_byte(&in) % 17;
        f[i].digits = (int)(int8_t)fz_byte(&in);
        f[i].keepbits = (int)fz_byte(&in) % 64;
        f[i].offset = (double)(int8_t)fz_byte(&in);
        f[i].scale = (double)(int8_t)fz_byte(&in) / 4;
        f[i].nlabels = f[i].elementsize % (CK_CATEGORIES_MAX + 1);
        for (int l = 0; l < f[i].nlabels; l++)
            f[i].labels[l] = l * 1.5 - 3;
    }
    if (fz_note(
            "chain",
            ck_filter_chain_init(&ch, f, nf, dt, ne * ck_dtype_size(dt), &err),
            &err) != CK_OK)
        return 0;

    size_t want = ch.size[ch.n], n = exact ? in.n : want;
    char *src = malloc(n ? n : 1), *dst = malloc(ch.size[0] ? ch.size[0] : 1);
    int decode_only = 0;
    if (!src || !dst)
        abort();
    memset(src, 0, n);
    memcpy(src, in.p, in.n < n ? in.n : n);
    for (int i = 0; i < ch.n; i++)
        decode_only |= ch.f[i].id == CK_FILTER_CATEGORIZE;
    if (ck_arena_reserve(&a, NULL, ck_filter_chain_scratch(&ch) + 64, "fuzz",
                         &err) == CK_OK &&
        fz_note("decode", ck_filter_chain_decode(&ch, src, n, dst, &a, &err),
                &err) == CK_OK &&
        !decode_only) {
        const void *out;
        ck_arena_reset(&a);
        ck_filter_chain_encode(&ch, dst, &a, &out, &err);
    }
    ck_arena_release(&a);
    free(src);
    free(dst);
    return 0;
}
