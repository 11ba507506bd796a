/*
 * pipelines/info.c - collect ck_array_info for chunkctl info.
 */
#include "pipelines/info.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_log.h"

ck_code ck_info_collect(const char *target, ck_info_list *out, ck_err *err)
{
    char path[PATH_MAX], name[512];
    ck_store *s = NULL;
    ck_names names = {0};
    ck_info_list l = {0};
    ck_code rc;

    CK_TRY(ck_target_split(target, path, sizeof path, name, sizeof name, err));
    CK_TRY(ck_store_open(path, &s, err));
    l.kind = ck_store_kind_of(s);
    rc = name[0] ? ck_names_push(&names, name, err)
                 : ck_store_list_readable(s, 1, &names, err);
    /* Names that lead to no array are in no listing: a warning each, so
     * a listing does not hide them (verify counts them as damage). */
    if (rc == CK_OK && !name[0]) {
        ck_names lost = {0};
        rc = ck_store_dangling(s, &lost, err);
        for (int i = 0; i < lost.n && rc == CK_OK; i++)
            ck_log(CK_LOG_WARN, "%s", lost.v[i]);
        ck_names_release(&lost);
    }
    if (rc == CK_OK && names.n > 0) {
        l.v = calloc((size_t)names.n, sizeof *l.v);
        l.nchunks = calloc((size_t)names.n, sizeof *l.nchunks);
        if (!l.v || !l.nchunks)
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    for (int i = 0; i < names.n && rc == CK_OK; i++) {
        ck_array *a;
        if ((rc = ck_array_open(s, names.v[i], &a, err)) != CK_OK)
            break;
        l.v[i] = *ck_array_info_of(a);
        l.nchunks[i] = ck_array_grid(a)->total_chunks;
        l.n++;
        ck_array_close(a);
    }
    ck_names_release(&names);
    ck_store_close(s);
    if (rc != CK_OK) {
        ck_info_release(&l);
        return rc;
    }
    *out = l;
    return CK_OK;
}

void ck_info_release(ck_info_list *l)
{
    if (!l)
        return;
    free(l->v);
    free(l->nchunks);
    memset(l, 0, sizeof *l);
}
