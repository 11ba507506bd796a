/*
 * base/ck_mem.h - the --memory budget and the per-worker arena charged to it.
 * Memory is a contract: every large buffer chunkctl holds is charged to one
 * ck_budget before it is allocated, so a run that would exceed --memory
 * fails up front with CK_ENOMEM instead of growing.  Per-chunk scratch comes
 * from a ck_arena reserved once per worker and reset after each chunk, so
 * per-chunk loops never call malloc.
 */
#ifndef CK_MEM_H
#define CK_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_err.h"

typedef struct ck_budget {
    int64_t limit; /* bytes */
    int64_t used;  /* charged so far; updated atomically */
} ck_budget;

#define CK_BUDGET_INIT(limit)                                                  \
    {                                                                          \
        (limit), 0                                                             \
    }

/* Charges n bytes for 'what'.  CK_ENOMEM naming the budget and 'what' if
 * the limit would be exceeded; nothing is charged then. */
ck_code ck_budget_charge(ck_budget *b, int64_t n, const char *what,
                         ck_err *err);
void ck_budget_release(ck_budget *b, int64_t n);

typedef struct ck_arena {
    ck_budget *budget;
    char *base;
    size_t cap, used;
} ck_arena;

#define CK_ARENA_INIT                                                          \
    {                                                                          \
        0, 0, 0, 0                                                             \
    }

/* Reserves one block of 'bytes' charged to budget (NULL: uncharged). */
/* malloc, except that blocks of 4 MiB or more are 2 MiB aligned and
 * advised to use transparent huge pages.  Free with free(). */
void *ck_alloc_large(size_t n);

ck_code ck_arena_reserve(ck_arena *a, ck_budget *budget, size_t bytes,
                         const char *what, ck_err *err);
/* Bump-allocates n bytes aligned to 64; NULL when the block is spent
 * (a sizing bug in the caller, not an input error). */
void *ck_arena_alloc(ck_arena *a, size_t n);
void ck_arena_reset(ck_arena *a);
/* Frees the block and returns its charge; accepts a zeroed arena. */
void ck_arena_release(ck_arena *a);

/* Parses "256M", "1.5G", "64k", "1024" (bytes; K/M/G/T are powers of 1024,
 * an optional trailing B or iB is allowed).  CK_EUSAGE otherwise. */
ck_code ck_parse_size(const char *s, int64_t *out, ck_err *err);

/* Formats a byte count as "3.8 MiB" into buf. */
const char *ck_size_str(double bytes, char *buf, size_t n);
/* The same, rounded up to the digit shown: for a need, which a --memory
 * of what it says must meet ("56.0 MiB" for 56.02 MiB was refused). */
const char *ck_need_str(double bytes, char *buf, size_t n);

/* Physical memory of this machine in bytes, or 0 if unknown. */
int64_t ck_phys_mem(void);

/* Parses a comma-separated list of positive integers "1000,1000" into
 * out[max]; *n gets the count.  CK_EUSAGE naming 'what' otherwise. */
ck_code ck_parse_ints(const char *s, const char *what, int64_t *out, int max,
                      int *n, ck_err *err);

#endif
