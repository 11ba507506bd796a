/*
 * pipelines/info.h - what is in a file or store (chunkctl info).
 */
#ifndef CK_INFO_H
#define CK_INFO_H

#include "base/ck_err.h"
#include "io/store.h"

typedef struct ck_info_list {
    ck_store_kind kind;
    int n;
    ck_array_info *v; /* n entries, sorted by name */
    int64_t *nchunks; /* grid chunks of each array */
} ck_info_list;

/* Describes the arrays at target (PATH: all; PATH:DATASET: that one). */
ck_code ck_info_collect(const char *target, ck_info_list *out, ck_err *err);
void ck_info_release(ck_info_list *l);

#endif
