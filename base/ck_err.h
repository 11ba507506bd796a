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
    CK_EUSAGE,    /* bad option or pipeline: exit 2 */
    CK_EIO,       /* open/read/write/rename failed */
    CK_EFORMAT,   /* not a store, bad .zarray, unknown dtype */
    CK_ECORRUPT,  /* chunk does not decode, or has the wrong size */
    CK_ENOMEM,    /* allocation failed or --memory budget exceeded */
    CK_ENOTSUP,   /* valid, but this codec/op/backend lacks it */
    CK_EDEVICE,   /* CUDA runtime or library failure */
    CK_EEXIST,    /* output exists and --force was not given */
    CK_EINTERNAL, /* an impossible state: a bug in chunkctl, exit 3 */
    CK_ESTOPPED,  /* another MPI rank failed, so this one stopped early */
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

/* Records an internal fault: a state chunkctl's own invariants rule out
 * (a scratch estimate the evaluation outgrew, LAPACK rejecting an argument
 * chunkctl built), never bad input or a failing system or library.  The
 * message gets where it was raised: "<msg> (internal fault at
 * pipelines/exec.c:255)".  Returns CK_EINTERNAL.  In debug builds (NDEBUG
 * not defined) it logs the message and asserts, so a debug run (the
 * sanitizer suites among them) stops at the fault; a test that raises
 * one on purpose expects SIGABRT there. */
#define ck_err_internal(e, ...)                                                \
    ck_err_internal_at((e), __FILE__, __LINE__, __VA_ARGS__)
ck_code ck_err_internal_at(ck_err *e, const char *file, int line,
                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The exit status cli/ maps a code to (man/chunkctl.1, EXIT STATUS): 0 for
 * success, 2 for a usage error, 3 for an internal fault, 1 for any other
 * error. */
static inline int ck_exit_status(ck_code code)
{
    switch (code) {
    case CK_OK:
        return 0;
    case CK_EUSAGE:
        return 2;
    case CK_EINTERNAL:
        return 3;
    default:
        return 1;
    }
}

/* Short name of a code, for logs and tests ("corrupt"). */
const char *ck_code_name(ck_code code);

#define CK_TRY(expr)                                                           \
    do {                                                                       \
        ck_code ck_rc_ = (expr);                                               \
        if (ck_rc_ != CK_OK)                                                   \
            return ck_rc_;                                                     \
    } while (0)

#endif
