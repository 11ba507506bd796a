/*
 * base/ck_log.c - leveled messages to stderr, one line each.
 */
#include "base/ck_log.h"

#include <stdarg.h>
#include <stdio.h>

static ck_log_level max_level = CK_LOG_NOTE;
static int muted;

void ck_log_mute(int mute)
{
    muted = mute;
}

void ck_log_set_level(ck_log_level level)
{
    max_level = level;
}

ck_log_level ck_log_get_level(void)
{
    return max_level;
}

void ck_log(ck_log_level level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (level > max_level || muted)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One fputs so lines from several threads do not interleave. */
    fprintf(stderr, "chunkctl: %s%s\n", level == CK_LOG_WARN ? "warning: " : "",
            line);
}
