/*
 * tests/fuzz/fuzz_codec.c - each compressor's decode (io/codec.h):
 * ck_codec_decode for zstd, zlib, gzip, blosc, lz4, lzma and bz2,
 * ck_codec_decode_spec for lzma's other framings, and ck_unshuffle.
 * What decodes must encode (ck_codec_encode) to bytes that decode to it
 * again.
 *
 * Input: byte 0 picks the codec (below); bytes 1-3 are the decoded size
 * the chunk must have (little-endian, at most CAP, so no input makes the
 * target allocate more); lzma's spec takes byte 4, unshuffle's element
 * size byte 1; the rest is the stored chunk.  The output buffer is
 * exactly the decoded size, so ASan sees a decoder writing past it.
 */
#include "io/codec.h"
#include "tests/fuzz/fuzz.h"

#define CAP ((size_t)1 << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    return 0;
}

enum {
    K_NONE,
    K_ZSTD,
    K_ZLIB,
    K_GZIP,
    K_BLOSC,
    K_LZ4,
    K_LZMA,
    K_LZMA_SPEC,
    K_BZ2,
    K_UNSHUFFLE,
    K_COUNT
};

static const ck_codec_id ids[] = {
    [K_NONE] = CK_CODEC_NONE,   [K_ZSTD] = CK_CODEC_ZSTD,
    [K_ZLIB] = CK_CODEC_ZLIB,   [K_GZIP] = CK_CODEC_GZIP,
    [K_BLOSC] = CK_CODEC_BLOSC, [K_LZ4] = CK_CODEC_LZ4,
    [K_LZMA] = CK_CODEC_LZMA,   [K_BZ2] = CK_CODEC_BZ2,
};

/* What decoded encodes (with c, where chunkctl encodes that codec) to
 * bytes that decode to it again. */
static void round_trip(ck_codec_spec *c, const void *x, size_t n)
{
    size_t cap, en = 0;
    char *enc, *again;
    ck_err err = {0};

    if (c->id != CK_CODEC_LZMA || c->format == CK_LZMA_AUTO) {
        c->level = 1;
        c->format = CK_LZMA_XZ;
    }
    snprintf(c->cname, sizeof c->cname, "lz4");
    cap = ck_codec_bound(c, n);
    enc = malloc(cap ? cap : 1);
    again = malloc(n ? n : 1);
    if (!enc || !again)
        abort();
    if (ck_codec_encode(c, 4, x, n, enc, cap, &en, &err) == CK_OK &&
        (ck_codec_decode_spec(c, enc, en, again, n, &err) != CK_OK ||
         memcmp(again, x, n) != 0)) {
        fprintf(stderr, "codec %d round trip: %s\n", (int)c->id, err.msg);
        abort();
    }
    free(enc);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    unsigned k = fz_byte(&in) % K_COUNT;
    ck_err err = {0};
    char *src, *dst;

    if (k == K_UNSHUFFLE) {
        size_t ts = fz_byte(&in) % 17;
        src = fz_dup(in.p, in.n);
        dst = malloc(in.n ? in.n : 1);
        if (!dst)
            abort();
        ck_unshuffle(ts, src, dst, in.n);
        ck_shuffle(ts, dst, src, in.n);
        /* shuffle undoes unshuffle exactly */
        if (in.n && memcmp(src, in.p, in.n) != 0)
            abort();
        free(src);
        free(dst);
        return 0;
    }
    size_t want = fz_u16(&in);
    want |= (size_t)fz_byte(&in) << 16;
    if (want > CAP)
        want = CAP;
    ck_codec_spec c = {.id = ids[k], .level = -1, .check = -1};
    if (k == K_LZMA_SPEC) {
        unsigned b = fz_byte(&in);
        c.id = CK_CODEC_LZMA;
        c.format = (int)(b & 3);
        c.lzfilter = (int)(b >> 2 & 3) % 3;
        c.level = (int)(b >> 4) % 10;
    }
    src = fz_dup(in.p, in.n);
    dst = malloc(want ? want : 1);
    if (!dst)
        abort();
    if (fz_note("decode",
                k == K_LZMA_SPEC
                    ? ck_codec_decode_spec(&c, src, in.n, dst, want, &err)
                    : ck_codec_decode(c.id, src, in.n, dst, want, &err),
                &err) == CK_OK)
        round_trip(&c, dst, want);
    free(src);
    free(dst);
    return 0;
}
