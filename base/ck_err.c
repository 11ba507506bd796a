/*
 * base/ck_err.c - setting and decorating ck_err messages.
 */
#include "base/ck_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Keeps a message on one line: a newline in a foreign library's text would
 * break the "chunkctl: <msg>" contract. */
static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t')
            *s = ' ';
}

ck_code ck_err_set(ck_err *e, ck_code code, const char *fmt, ...)
{
    va_list ap;

    if (!e || e->code != CK_OK)
        return code;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    one_line(e->msg);
    return code;
}

void ck_err_prefix(ck_err *e, const char *fmt, ...)
{
    char head[256], old[sizeof e->msg];
    va_list ap;

    if (!e)
        return;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    snprintf(e->msg, sizeof e->msg, "%s: %s", head, old);
    one_line(e->msg);
}

const char *ck_code_name(ck_code code)
{
    static const char *const names[] = {
        [CK_OK] = "ok",
        [CK_EUSAGE] = "usage",
        [CK_EIO] = "io",
        [CK_EFORMAT] = "format",
        [CK_ECORRUPT] = "corrupt",
        [CK_ENOMEM] = "nomem",
        [CK_ENOTSUP] = "notsup",
        [CK_EDEVICE] = "device",
        [CK_EEXIST] = "exists",
    };
    if ((unsigned)code < sizeof names / sizeof names[0] && names[code])
        return names[code];
    return "unknown";
}
