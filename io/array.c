/*
 * io/array.c - the little io/array.h implements: lists of array names.
 * Store kinds fill them while listing; nothing here opens a store.
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
