/*
 * pipelines/verify.h - read and decode every chunk of a file or store and
 * report the damaged ones (chunkctl verify).  It is also the plain
 * measure of how fast chunkctl reads: nothing is written.
 */
#ifndef CK_VERIFY_H
#define CK_VERIFY_H

#include <stdint.h>

#include "base/ck_err.h"
#include "base/ck_progress.h"

enum { CK_VERIFY_MAX_REPORT = 20 };

typedef struct ck_verify_opts {
    const char *target; /* PATH[:DATASET]; PATH alone checks every array */
    int64_t memory;
    int threads;
    ck_progress *progress;
} ck_verify_opts;

typedef struct ck_verify_report {
    int arrays;
    int64_t chunks;  /* chunks read (missing ones read as fill) */
    int64_t bytes;   /* decoded bytes */
    int64_t bad;     /* chunks that did not decode */
    int64_t missing; /* names the metadata gives that lead nowhere
                        (ck_store_dangling): damage too */
    int nmsg;        /* messages kept: the missing names, then the first
                        damaged chunks in array and chunk order, at most
                        CK_VERIFY_MAX_REPORT */
    char msg[CK_VERIFY_MAX_REPORT][512];
    int64_t where[CK_VERIFY_MAX_REPORT]; /* sort key of msg[i] */
} ck_verify_report;

/* Reads every chunk.  Damaged chunks (CK_ECORRUPT) are counted and the
 * first CK_VERIFY_MAX_REPORT described in *rep; the run goes on.  With no
 * DATASET, names that lead to no array (ck_store_dangling) are counted
 * and described too.  Any other error stops it and is returned. */
ck_code ck_verify(const ck_verify_opts *o, ck_verify_report *rep, ck_err *err);

#endif
