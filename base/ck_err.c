/*
 * base/ck_err.c - setting and decorating ck_err messages.
 */
#include "base/ck_err.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/ck_log.h"

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

/* The source file as the tree names it ("pipelines/exec.c"): __FILE__ is
 * whatever path the build passed the compiler. */
static const char *tree_path(const char *file)
{
    static const char *const rooms[] = {"/base/",     "/io/",        "/ops/",
                                        "/backends/", "/pipelines/", "/cli/",
                                        "/tests/"};
    const char *best = NULL, *slash = strrchr(file, '/');

    for (size_t i = 0; i < sizeof rooms / sizeof rooms[0]; i++) {
        const char *at = file;
        while ((at = strstr(at, rooms[i])) != NULL) {
            if (!best || at > best)
                best = at;
            at++;
        }
    }
    return best ? best + 1 : slash ? slash + 1 : file;
}

ck_code ck_err_internal_at(ck_err *e, const char *file, int line,
                           const char *fmt, ...)
{
    char what[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    ck_err_set(e, CK_EINTERNAL, "%s (internal fault at %s:%d)", what,
               tree_path(file), line);
#ifndef NDEBUG
    ck_log(CK_LOG_WARN, "internal fault: %s (at %s:%d)", what, tree_path(file),
           line);
    assert(!"internal fault: a bug in chunkctl");
#endif
    return CK_EINTERNAL;
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
        [CK_EINTERNAL] = "internal",
        [CK_ESTOPPED] = "stopped",
    };
    if ((unsigned)code < sizeof names / sizeof names[0] && names[code])
        return names[code];
    return "unknown";
}
