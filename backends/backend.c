/*
 * backends/backend.c - backend lookup.  The CUDA module arrives with the
 * GPU issue; until then "cpu" is the only name.
 */
#include "backends/backend.h"

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
