/*
 * io/oserr.h - the operating system's errors (errno) in chunkctl's words.
 * Used wherever a system call in io/ fails; knows nothing of HDF5 or the
 * codecs, which have their own translations (io/hdf5/h5.c, io/codec.c).
 */
#ifndef CK_OSERR_H
#define CK_OSERR_H

#include "base/ck_err.h"

/* Sets err to "<context>: <strerror(errnum)>" ("out.h5: cannot create
 * .out.h5.tmp: No space left on device") and returns the code: 'code'
 * when it is not CK_OK, else CK_ENOMEM for ENOMEM and CK_EIO for the
 * rest.  The context names the file (and the dataset and chunk when
 * there is one).  Reads errnum, never errno, so the caller may save
 * errno before cleaning up. */
ck_code ck_os_fail(ck_err *err, ck_code code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
