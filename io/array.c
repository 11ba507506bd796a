/*
 * io/array.c - the little io/array.h implements: lists of array names,
 * which store kinds fill while listing, and the fitting of a new array's
 * chunks and shards to its shape.  Nothing here opens a store.
 */
#include "io/array.h"

#include <stdlib.h>
#include <string.h>

ck_code ck_names_push(ck_names *l, const char *s, ck_err *err)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v)
            return ck_err_set(err, CK_ENOMEM, "out of memory listing arrays");
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(s)))
        return ck_err_set(err, CK_ENOMEM, "out of memory listing arrays");
    l->n++;
    return CK_OK;
}

void ck_names_release(ck_names *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

ck_code ck_array_spec_fit(ck_array_spec *spec, ck_err *err)
{
    int sharded = spec->shards[0] != 0;

    for (int d = 0; sharded && d < spec->ndim; d++)
        if (spec->shards[d] < 1 || spec->chunks[d] < 1 ||
            spec->shards[d] % spec->chunks[d] != 0)
            return ck_err_set(err, CK_EUSAGE,
                              "the shard shape must be a multiple of the "
                              "chunk shape (axis %d: shards %lld, chunks "
                              "%lld)",
                              d, (long long)spec->shards[d],
                              (long long)spec->chunks[d]);
    for (int d = 0; d < spec->ndim; d++) {
        int64_t n = spec->shape[d], c;
        if (n <= 0)
            continue;
        c = spec->chunks[d] = spec->chunks[d] > n ? n : spec->chunks[d];
        if (sharded && spec->shards[d] > n) {
            int64_t cover = (n + c - 1) / c * c; /* <= n + c - 1 */
            if (cover < spec->shards[d])
                spec->shards[d] = cover;
        }
    }
    return CK_OK;
}
