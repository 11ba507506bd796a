/*
 * base/ck_mem.c - budget accounting, the bump arena, size parsing.
 */
#include "base/ck_mem.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Large blocks are aligned to 2 MiB and marked for transparent huge pages
 * (where the system leaves that to madvise): first touching a 80 MB buffer
 * then costs 40 faults instead of 20000. */
enum { HUGE_FROM = 4 << 20, HUGE_PAGE = 2 << 20 };

void *ck_alloc_large(size_t n)
{
    void *p = NULL;

    if (n < HUGE_FROM)
        return malloc(n ? n : 1);
    if (posix_memalign(&p, HUGE_PAGE, n) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n & ~(size_t)(HUGE_PAGE - 1), MADV_HUGEPAGE);
#endif
    return p;
}

ck_code ck_budget_charge(ck_budget *b, int64_t n, const char *what, ck_err *err)
{
    char lim[32], need[32], used[32], all[32];
    int64_t now;

    if (!b)
        return CK_OK;
    now = __atomic_add_fetch(&b->used, n, __ATOMIC_RELAXED);
    if (now <= b->limit)
        return CK_OK;
    now = __atomic_sub_fetch(&b->used, n, __ATOMIC_RELAXED);
    return ck_err_set(err, CK_ENOMEM,
                      "--memory %s is too small: %s needs %s, with %s in use "
                      "already (raise --memory to %s)",
                      ck_size_str((double)b->limit, lim, sizeof lim), what,
                      ck_need_str((double)n, need, sizeof need),
                      ck_size_str((double)now, used, sizeof used),
                      ck_need_str((double)(now + n), all, sizeof all));
}

void ck_budget_release(ck_budget *b, int64_t n)
{
    if (b)
        __atomic_sub_fetch(&b->used, n, __ATOMIC_RELAXED);
}

ck_code ck_arena_reserve(ck_arena *a, ck_budget *budget, size_t bytes,
                         const char *what, ck_err *err)
{
    CK_TRY(ck_budget_charge(budget, (int64_t)bytes, what, err));
    a->base = ck_alloc_large(bytes);
    if (!a->base) {
        ck_budget_release(budget, (int64_t)bytes);
        return ck_err_set(err, CK_ENOMEM,
                          "out of memory reserving %zu bytes "
                          "for %s",
                          bytes, what);
    }
    a->budget = budget;
    a->cap = bytes;
    a->used = 0;
    return CK_OK;
}

void *ck_arena_alloc(ck_arena *a, size_t n)
{
    size_t at = (a->used + 63) & ~(size_t)63;

    if (at > a->cap || n > a->cap - at)
        return NULL;
    a->used = at + n;
    return a->base + at;
}

void ck_arena_reset(ck_arena *a)
{
    a->used = 0;
}

void ck_arena_release(ck_arena *a)
{
    if (!a || !a->base)
        return;
    free(a->base);
    ck_budget_release(a->budget, (int64_t)a->cap);
    a->base = NULL;
    a->cap = a->used = 0;
}

ck_code ck_parse_size(const char *s, int64_t *out, ck_err *err)
{
    char *end;
    double v, mult = 1;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || !isfinite(v))
        goto bad;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'M':
        mult = 1024.0 * 1024;
        end++;
        break;
    case 'G':
        mult = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'T':
        mult = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    default:
        break;
    }
    if (toupper((unsigned char)end[0]) == 'I' &&
        toupper((unsigned char)end[1]) == 'B')
        end += 2;
    else if (toupper((unsigned char)end[0]) == 'B')
        end++;
    if (*end || v * mult >= 9.2e18)
        goto bad;
    *out = (int64_t)(v * mult);
    return CK_OK;
bad:
    return ck_err_set(err, CK_EUSAGE,
                      "'%s' is not a size (use e.g. 512M, 2G, 65536)", s);
}

static const char *size_str(double bytes, int up, char *buf, size_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;

    while (bytes >= 1024 && u < 5) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%.0f B", up ? ceil(bytes) : bytes);
    else
        snprintf(buf, n, "%.1f %s", up ? ceil(bytes * 10 - 1e-9) / 10 : bytes,
                 unit[u]);
    return buf;
}

const char *ck_size_str(double bytes, char *buf, size_t n)
{
    return size_str(bytes, 0, buf, n);
}

const char *ck_need_str(double bytes, char *buf, size_t n)
{
    return size_str(bytes, 1, buf, n);
}

int64_t ck_phys_mem(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

    return pages > 0 && psz > 0 ? (int64_t)pages * psz : 0;
}

ck_code ck_parse_ints(const char *s, const char *what, int64_t *out, int max,
                      int *n, ck_err *err)
{
    const char *p = s;
    int k = 0;

    if (!*p)
        goto bad;
    while (*p) {
        char *end;
        long long v;
        errno = 0;
        if (!isdigit((unsigned char)*p))
            goto bad;
        v = strtoll(p, &end, 10);
        if (errno || v < 1 || k == max)
            goto bad;
        out[k++] = v;
        p = end;
        if (*p == ',') {
            p++;
            if (!*p)
                goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    *n = k;
    return CK_OK;
bad:
    return ck_err_set(err, CK_EUSAGE,
                      "%s: '%s' is not a list of positive integers like "
                      "1000,1000",
                      what, s);
}
