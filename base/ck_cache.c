/*
 * base/ck_cache.c - the run-time compilation cache's directory.
 */
#include "base/ck_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int ck_cache_dir(const char *sub, char *dir, size_t n)
{
    const char *d = getenv("CHUNKCTL_CACHE_DIR"), *x, *home;
    const char *sep = sub ? "/" : "", *tail = sub ? sub : "";
    int k;

    if (n > 0) /* nothing tried yet */
        dir[0] = '\0';
    if (d && *d)
        k = snprintf(dir, n, "%s%s%s", d, sep, tail);
    else if ((x = getenv("XDG_CACHE_HOME")) && *x)
        k = snprintf(dir, n, "%s/chunkctl/kernels%s%s", x, sep, tail);
    else if ((home = getenv("HOME")) && *home)
        k = snprintf(dir, n, "%s/.cache/chunkctl/kernels%s%s", home, sep, tail);
    else
        return 0;
    if (k < 0 || (size_t)k >= n)
        return 0;
    /* make each level; an existing one is fine */
    for (char *s = dir + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(dir, 0755);
            *s = '/';
        }
    return mkdir(dir, 0755) == 0 || errno == EEXIST;
}
