/*
 * io/hdf5/zstd_filter.h - the Zstandard HDF5 filter (registered id 32015).
 * The common format of hdf5plugin and the HDF Group's registered zstd
 * filter: each chunk is one zstd frame, cd_values[0] is the compression
 * level.  Built into ck_io for in-process use and, with zstd_plugin.c, into
 * libh5zstd.so for h5dump and h5py (HDF5_PLUGIN_PATH).  Knows nothing of
 * chunkctl's stores.
 */
#ifndef CK_H5_ZSTD_FILTER_H
#define CK_H5_ZSTD_FILTER_H

#define CK_H5Z_FILTER_ZSTD 32015

/* The filter class, a H5Z_class2_t (void here so that this header needs no
 * hdf5.h). */
extern const void *const ck_h5_zstd_class;

/* Registers the filter with the HDF5 library of this process.  Returns the
 * herr_t of H5Zregister (negative on failure).  Not thread-safe: call it
 * where HDF5 calls are serialised. */
int ck_h5_zstd_register(void);

#endif
