/*
 * base/ck_dtype.h - element types and conversion between them.
 * Names follow NumPy ("float64", "uint8", "bool").  Blocks in memory are
 * always in native byte order; byte swapping happens once, in io/.
 */
#ifndef CK_DTYPE_H
#define CK_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_err.h"

typedef enum ck_dtype {
    CK_DT_INVALID = 0,
    CK_BOOL,
    CK_I8,
    CK_I16,
    CK_I32,
    CK_I64,
    CK_U8,
    CK_U16,
    CK_U32,
    CK_U64,
    CK_F32,
    CK_F64,
    CK_DT_COUNT
} ck_dtype;

/* One value of any dtype, for fill values and scalars. */
typedef union ck_scalar {
    int64_t i;
    uint64_t u;
    double f;
} ck_scalar;

size_t ck_dtype_size(ck_dtype t);
const char *ck_dtype_name(ck_dtype t); /* "float64"; "invalid" */
int ck_dtype_is_float(ck_dtype t);
int ck_dtype_is_signed(ck_dtype t); /* signed integers only */

/* Parses a NumPy name ("float32", "f4", "int16", "bool", "u8").  CK_EUSAGE
 * with the list of known names otherwise. */
ck_code ck_dtype_parse(const char *s, ck_dtype *out, ck_err *err);

/* Converts n elements.  src and dst are native order and may not overlap
 * unless they are the same pointer with the same element size.  Follows
 * NumPy's astype() where it is defined; where C leaves it undefined it
 * chooses: NaN to integer gives 0, out-of-range floats saturate to the
 * integer range, and any nonzero value (NaN too) is true as bool. */
void ck_dtype_convert(ck_dtype dst_t, void *dst, ck_dtype src_t,
                      const void *src, size_t n);

/* Writes n copies of the scalar v (read as dtype t's kind: .i for signed
 * and bool, .u for unsigned, .f for floats) into dst. */
void ck_dtype_fill(ck_dtype t, void *dst, ck_scalar v, size_t n);

/* Element i of an array of dtype t, as a double (bool: 0 or 1; NaN for an
 * invalid dtype).  For per-element loops that mix dtypes, such as
 * histogram weights; whole runs convert faster with ck_dtype_convert. */
double ck_dtype_load_f64(ck_dtype t, const void *p, size_t i);

/* Reverses the bytes of n elements of 'size' bytes in place. */
void ck_byteswap(void *p, size_t size, size_t n);

/* netCDF's default fill value for type t (netcdf.h NC_FILL_BYTE ...
 * NC_FILL_UINT64; bool as netCDF's byte) into *out, in t's kind. */
void ck_dtype_nc_fill(ck_dtype t, ck_scalar *out);

/* Converts a scalar of kind src_t to the scalar of kind dst_t (as
 * ck_dtype_convert would convert one element). */
ck_scalar ck_scalar_convert(ck_dtype dst_t, ck_dtype src_t, ck_scalar v);

#endif
