/*
 * backends/backend.c - backend lookup.  The CUDA module arrives with the
 * GPU issue; until then "cpu" is the only name.
 */
#include "backends/backend.h"

#include <stdlib.h>
#include <string.h>

ck_code ck_be_find(const char *name, const ck_backend **out, ck_err *err)
{
    if (strcmp(name, ck_backend_cpu.name) == 0) {
        *out = &ck_backend_cpu;
        return CK_OK;
    }
    return ck_err_set(err, CK_EUSAGE, "unknown backend '%s' (known: cpu)",
                      name);
}

ck_code ck_be_open(const char *name, const ck_be_opts *o, ck_be *be,
                   ck_err *err)
{
    ck_be b = {0};
    ck_code rc;

    CK_TRY(ck_be_find(name, &b.table, err));
    CK_TRY(ck_backend_cpu.open(o, &b.cpu_ctx, err));
    if (b.table == &ck_backend_cpu) {
        b.ctx = b.cpu_ctx;
    } else if ((rc = b.table->open(o, &b.ctx, err)) != CK_OK) {
        ck_backend_cpu.close(b.cpu_ctx);
        return rc;
    }
    *be = b;
    return CK_OK;
}

void ck_be_close(ck_be *be)
{
    if (!be || !be->table)
        return;
    if (be->ctx && be->ctx != be->cpu_ctx)
        be->table->close(be->ctx);
    if (be->cpu_ctx)
        ck_backend_cpu.close(be->cpu_ctx);
    be->ctx = be->cpu_ctx = NULL;
}

void ck_be_set_threads(const ck_be *be, int n)
{
    if (!be->table)
        return;
    if (be->table->set_threads && be->ctx)
        be->table->set_threads(be->ctx, n);
    if (be->cpu_ctx && be->cpu_ctx != be->ctx && ck_backend_cpu.set_threads)
        ck_backend_cpu.set_threads(be->cpu_ctx, n);
}

int ck_be_restart_env(const char **name, const char **value)
{
    const char *n, *v;

    if (!ck_backend_cpu.restart_env || !ck_backend_cpu.restart_env(&n, &v) ||
        getenv(n))
        return 0;
    *name = n;
    *value = v;
    return 1;
}
