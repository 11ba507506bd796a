/*
 * io/oserr.c - errno in chunkctl's words (see io/oserr.h).
 */
#include "io/oserr.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

ck_code ck_os_fail(ck_err *err, ck_code code, int errnum, const char *fmt, ...)
{
    char head[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    if (code == CK_OK)
        code = errnum == ENOMEM ? CK_ENOMEM : CK_EIO;
    return ck_err_set(err, code, "%s: %s", head, strerror(errnum));
}
