/*
 * io/hdf5/zstd_plugin.c - exports the zstd filter as an HDF5 dynamic plugin.
 * Built with zstd_filter.c into libh5zstd.so; HDF5 finds it through
 * HDF5_PLUGIN_PATH, so h5dump, h5py and other HDF5 programs read the zstd
 * chunks chunkctl writes.  chunkctl itself registers the class in-process
 * and never loads this.
 */
#include <hdf5.h>
#include <H5PLextern.h>

#include "io/hdf5/zstd_filter.h"

H5PL_type_t H5PLget_plugin_type(void)
{
    return H5PL_TYPE_FILTER;
}

const void *H5PLget_plugin_info(void)
{
    return ck_h5_zstd_class;
}
