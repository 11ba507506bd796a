/*
 * base/ck_err.h - the one error vocabulary of chunkctl.
 * A fallible function returns ck_code and takes 'ck_err *err' last; the
 * message is set where the facts are known and names the file, dataset or
 * chunk.  Only cli/ prints it.
 */
#ifndef CK_ERR_H
#define CK_ERR_H

typedef enum ck_code {
    CK_OK = 0,
    CK_EUSAGE,   /* bad option or pipeline: exit 2 */
    CK_EIO,      /* open/read/write/rename failed */
    CK_EFORMAT,  /* not a store, bad .zarray, unknown dtype */
    CK_ECORRUPT, /* chunk does not decode, or has the wrong size */
    CK_ENOMEM,   /* allocation failed or --memory budget exceeded */
    CK_ENOTSUP,  /* valid, but this codec/op/backend lacks it */
    CK_EDEVICE,  /* CUDA runtime or library failure */
    CK_EEXIST,   /* output exists and --force was not given */
} ck_code;

typedef struct ck_err {
    ck_code code;
    char msg[512]; /* one line, lower case */
} ck_err;

/* Records code and message in *e (e may be NULL) and returns code, so callers
 * can 'return ck_err_set(...)'.  The first error wins: a message already set
 * is kept, since it was set closest to the cause. */
ck_code ck_err_set(ck_err *e, ck_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes an existing message with context ("copy x.h5: ..."). */
void ck_err_prefix(ck_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Short name of a code, for logs and tests ("corrupt"). */
const char *ck_code_name(ck_code code);

#define CK_TRY(expr)                                                           \
    do {                                                                       \
        ck_code ck_rc_ = (expr);                                               \
        if (ck_rc_ != CK_OK)                                                   \
            return ck_rc_;                                                     \
    } while (0)

#endif
