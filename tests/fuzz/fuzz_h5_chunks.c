/*
 * tests/fuzz/fuzz_h5_chunks.c - damaged chunks in a small HDF5 file, read
 * through the store as `chunkctl copy` reads them (io/store.h:
 * ck_store_open, ck_array_open, ck_array_read_chunk): the path that
 * pread()s a chunk at its indexed address and decodes it itself
 * (io/hdf5/h5_read.c: read_raw_chunk, checking the stored size first).
 *
 * Each input makes a new file: byte 0 picks the dataset (DATASETS
 * below: 12 x 10 in chunks of 5 x 4, so 9 chunks, the edge ones partial),
 * then each chunk in C order is a 2-byte little-endian length, a filter
 * mask byte and that many stored bytes, written with H5Dwrite_chunk as
 * another writer might have written them; chunks the input does not
 * reach are never written.  HDF5's own metadata (headers, B-trees) comes
 * from the library and is not mutated: parsing it is HDF5's business,
 * not chunkctl's.  Nor are pipelines chunkctl leaves to H5Dread: HDF5
 * 1.10 reads a whole chunk from whatever its filters return, however
 * short (README.md, "HDF5 files").
 */
#include "io/hdf5/h5_impl.h"
#include "io/hdf5/zstd_filter.h"
#include "io/store.h"
#include "tests/fuzz/fuzz.h"

enum { F_SHUF = 1, F_DEFLATE = 2, F_ZSTD = 4, F_BLOSC = 8 };

/* name, type, filters (HDF5's order); all 12 x 10 in chunks of 5 x 4 */
static const struct {
    const char *name;
    ck_dtype dt;
    int filters;
} DATASETS[] = {
    {"/shuf_zstd", CK_F32, F_SHUF | F_ZSTD},
    {"/shuf_deflate", CK_I16, F_SHUF | F_DEFLATE},
    {"/blosc", CK_F64, F_BLOSC},
    {"/plain", CK_U16, 0},
};
#define NSETS (sizeof DATASETS / sizeof DATASETS[0])

static hid_t mem_type(ck_dtype t)
{
    switch (t) {
    case CK_I16:
        return H5T_NATIVE_INT16;
    case CK_U16:
        return H5T_NATIVE_UINT16;
    case CK_I32:
        return H5T_NATIVE_INT32;
    case CK_F32:
        return H5T_NATIVE_FLOAT;
    default:
        return H5T_NATIVE_DOUBLE;
    }
}

/* Writes dataset k of a new file at path, its chunks from the input.
 * Under chunkctl's lock, which also registers its zstd and blosc
 * filters; 0 when HDF5 refuses (then nothing is read). */
static int make_file(const char *path, size_t k, fz_in *in)
{
    hsize_t dims[2] = {12, 10}, cdims[2] = {5, 4};
    int fl = DATASETS[k].filters, ok;
    size_t es = ck_dtype_size(DATASETS[k].dt);
    unsigned zcd[1] = {3};
    unsigned bcd[7] = {
        BLOSC_FILTER_REV, 2, (unsigned)es, (unsigned)(20 * es), 5, 1, 0};
    hid_t f, space, dcpl, d = -1;

    ck_h5_lock();
    f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    space = H5Screate_simple(2, dims, NULL);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    ok = f >= 0 && space >= 0 && dcpl >= 0 &&
         H5Pset_chunk(dcpl, 2, cdims) >= 0 &&
         !(fl & F_SHUF && H5Pset_shuffle(dcpl) < 0) &&
         !(fl & F_DEFLATE && H5Pset_deflate(dcpl, 4) < 0) &&
         !(fl & F_ZSTD && H5Pset_filter(dcpl, CK_H5Z_FILTER_ZSTD,
                                        H5Z_FLAG_OPTIONAL, 1, zcd) < 0) &&
         !(fl & F_BLOSC && H5Pset_filter(dcpl, H5Z_FILTER_BLOSC_ID,
                                         H5Z_FLAG_OPTIONAL, 7, bcd) < 0) &&
         (d = H5Dcreate2(f, DATASETS[k].name, mem_type(DATASETS[k].dt), space,
                         H5P_DEFAULT, dcpl, H5P_DEFAULT)) >= 0;
    if (!ok) {
        fprintf(stderr, "fuzz_h5_chunks: cannot create %s\n", path);
        abort();
    }
    for (int i = 0; i < 9 && in->n >= 3; i++) {
        hsize_t off[2] = {(hsize_t)(i / 3 * 5), (hsize_t)(i % 3 * 4)};
        size_t n = fz_u16(in);
        uint32_t mask = fz_byte(in);
        n = n < in->n ? n : in->n;
        /* HDF5 refuses an empty chunk; such an input ends here */
        if (n == 0 || H5Dwrite_chunk(d, H5P_DEFAULT, mask, off, n, in->p) < 0)
            break;
        in->p += n;
        in->n -= n;
    }
    H5Eclear2(H5E_DEFAULT);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
    ok = H5Fclose(f) >= 0;
    ck_h5_unlock();
    return ok;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    fz_tmpdir("h5-chunks");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    size_t k = fz_byte(&in) % NSETS;
    const char *path = fz_at("a.h5");
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_arena ar = CK_ARENA_INIT;
    ck_err err = {0};
    void *dst = NULL;

    if (!make_file(path, k, &in))
        return 0;
    if (ck_store_open(path, &s, &err) != CK_OK ||
        ck_array_open(s, DATASETS[k].name, &a, &err) != CK_OK) {
        fprintf(stderr, "%s\n", err.msg);
        abort(); /* the metadata is HDF5's own */
    }
    const ck_grid *g = ck_array_grid(a);
    if (!(dst = malloc((size_t)g->chunk_nelem *
                       ck_dtype_size(ck_array_info_of(a)->dtype))))
        abort();
    if (ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(a), "fuzz", &err) !=
        CK_OK)
        abort();
    for (int64_t i = 0; i < g->total_chunks; i++) {
        ck_chunk c;
        ck_grid_chunk(g, i, &c);
        fz_note("chunk", ck_array_read_chunk(a, c.coords, dst, &ar, &err),
                &err);
        err = (ck_err){0};
        ck_arena_reset(&ar);
    }
    ck_arena_release(&ar);
    free(dst);
    ck_array_close(a);
    ck_store_close(s);
    return 0;
}
