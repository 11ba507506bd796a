/*
 * io/hdf5/zstd_filter.c - the Zstandard HDF5 filter (id 32015).
 * Each chunk is one zstd frame; cd_values[0] is the compression level (read
 * as a signed int, so negative "fast" levels round-trip).  Decoding sizes
 * its output from the frame header, so it reads what hdf5plugin, the HDF
 * Group's plugin and chunkctl write.  Buffers belong to HDF5 and are
 * allocated with H5allocate_memory.  This file is linked both into ck_io
 * and into the libh5zstd.so plugin, so it uses nothing of chunkctl.
 */
#include <stdint.h>

#include <hdf5.h>
#include <zstd.h>

#include "io/hdf5/zstd_filter.h"

/* HDF5 chunks are smaller than 4 GiB, so a frame that claims more is
 * damaged; refusing it keeps a hostile header from sizing an allocation. */
#define CHUNK_MAX ((unsigned long long)UINT32_MAX)

static void push_err(const char *func, int line, const char *msg)
{
    H5Epush2(H5E_DEFAULT, __FILE__, func, (unsigned)line, H5E_ERR_CLS,
             H5E_PLINE, H5E_CANTFILTER, "%s", msg);
}

/* A frame without a content size (written by a streaming encoder): grow the
 * output until the frame ends. */
static size_t decode_stream(size_t nbytes, size_t *buf_size, void **buf)
{
    ZSTD_DStream *ds = ZSTD_createDStream();
    size_t cap = nbytes * 4 > 4096 ? nbytes * 4 : 4096;
    void *out = NULL;
    ZSTD_inBuffer in = {*buf, nbytes, 0};
    ZSTD_outBuffer ob = {NULL, 0, 0};
    size_t r = 1;

    if (ds == NULL)
        goto fail;
    if ((out = H5allocate_memory(cap, 0)) == NULL)
        goto fail;
    ob.dst = out;
    ob.size = cap;
    while (r != 0) {
        if (ob.pos == ob.size) {
            void *grown;
            if (cap >= CHUNK_MAX)
                goto fail;
            cap = cap * 2 > CHUNK_MAX ? CHUNK_MAX : cap * 2;
            if ((grown = H5resize_memory(out, cap)) == NULL)
                goto fail;
            out = grown;
            ob.dst = out;
            ob.size = cap;
        }
        r = ZSTD_decompressStream(ds, &ob, &in);
        if (ZSTD_isError(r))
            goto fail;
        if (r != 0 && in.pos == in.size && ob.pos < ob.size)
            goto fail; /* the input ends inside a frame */
    }
    ZSTD_freeDStream(ds);
    if (ob.pos == 0)
        goto fail_freed;
    H5free_memory(*buf);
    *buf = out;
    *buf_size = cap;
    return ob.pos;
fail:
    ZSTD_freeDStream(ds);
fail_freed:
    H5free_memory(out);
    push_err(__func__, __LINE__, "zstd frame does not decode");
    return 0;
}

static size_t decode(size_t nbytes, size_t *buf_size, void **buf)
{
    unsigned long long n = ZSTD_getFrameContentSize(*buf, nbytes);
    void *out;
    size_t r;

    if (n == ZSTD_CONTENTSIZE_UNKNOWN)
        return decode_stream(nbytes, buf_size, buf);
    if (n == ZSTD_CONTENTSIZE_ERROR || n == 0 || n > CHUNK_MAX) {
        push_err(__func__, __LINE__, "not a zstd frame, or a bad size");
        return 0;
    }
    if ((out = H5allocate_memory((size_t)n, 0)) == NULL) {
        push_err(__func__, __LINE__, "out of memory");
        return 0;
    }
    r = ZSTD_decompress(out, (size_t)n, *buf, nbytes);
    if (ZSTD_isError(r) || r != n) {
        H5free_memory(out);
        push_err(__func__, __LINE__, "zstd frame does not decode");
        return 0;
    }
    H5free_memory(*buf);
    *buf = out;
    *buf_size = (size_t)n;
    return (size_t)n;
}

static size_t encode(size_t cd_nelmts, const unsigned cd_values[],
                     size_t nbytes, size_t *buf_size, void **buf)
{
    int level = cd_nelmts > 0 ? (int)cd_values[0] : ZSTD_CLEVEL_DEFAULT;
    size_t cap = ZSTD_compressBound(nbytes);
    void *out;
    size_t r;

    if (level > ZSTD_maxCLevel())
        level = ZSTD_maxCLevel();
    if (level < ZSTD_minCLevel())
        level = ZSTD_minCLevel();
    if ((out = H5allocate_memory(cap, 0)) == NULL) {
        push_err(__func__, __LINE__, "out of memory");
        return 0;
    }
    r = ZSTD_compress(out, cap, *buf, nbytes, level);
    if (ZSTD_isError(r)) {
        H5free_memory(out);
        push_err(__func__, __LINE__, ZSTD_getErrorName(r));
        return 0;
    }
    H5free_memory(*buf);
    *buf = out;
    *buf_size = cap;
    return r;
}

/* The H5Z_func_t: returns the size of the data now in *buf, 0 on failure
 * (HDF5 then skips an optional filter on write, fails a read). */
static size_t zstd_filter(unsigned flags, size_t cd_nelmts,
                          const unsigned cd_values[], size_t nbytes,
                          size_t *buf_size, void **buf)
{
    if (flags & H5Z_FLAG_REVERSE)
        return decode(nbytes, buf_size, buf);
    return encode(cd_nelmts, cd_values, nbytes, buf_size, buf);
}

static const H5Z_class2_t zstd_class = {
    .version = H5Z_CLASS_T_VERS,
    .id = CK_H5Z_FILTER_ZSTD,
    .encoder_present = 1,
    .decoder_present = 1,
    .name = "Zstandard compression: http://www.zstd.net",
    .can_apply = NULL,
    .set_local = NULL,
    .filter = zstd_filter,
};

const void *const ck_h5_zstd_class = &zstd_class;

int ck_h5_zstd_register(void)
{
    return (int)H5Zregister(&zstd_class);
}
