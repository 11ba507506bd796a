/*
 * base/ck_thread.h - run one function on N worker threads and join them.
 * Workers share the work through the context (an atomic chunk counter, say);
 * the first error stops the rest and is the one reported.
 */
#ifndef CK_THREAD_H
#define CK_THREAD_H

#include "base/ck_err.h"

typedef struct ck_par ck_par;

/* A worker: returns CK_OK or sets its own err.  It should poll
 * ck_par_stopped() between chunks and return CK_OK early when it is set. */
typedef ck_code (*ck_par_fn)(void *ctx, int worker, ck_par *par, ck_err *err);

/* Runs fn on nthreads threads (1: on the calling thread) and returns the
 * first error any of them reported, with its message in *err. */
ck_code ck_par_run(int nthreads, ck_par_fn fn, void *ctx, ck_err *err);

/* True once some worker has failed, another MPI rank has
 * (ck_comm_stopping), or the process was interrupted (ck_interrupt);
 * ck_par_run then fails with CK_ESTOPPED. */
int ck_par_stopped(const ck_par *par);

/* Asks every job to stop at its next chunk, as a failure would, so that
 * the run unwinds and removes its temporary outputs itself (a Ctrl-C:
 * cli/main.c), and returns 1; returns 0, asking nothing, once the run
 * has claimed its end (ck_finish): its outputs are in place then, and
 * stay.  Async-signal-safe. */
int ck_interrupt(void);
int ck_interrupted(void);
/* Claims the end of the run for its outputs, renamed into place: 1 when
 * no interrupt came first (later ones are refused), 0 when one did (the
 * caller takes the outputs back).  Exactly one of ck_finish and
 * ck_interrupt wins. */
int ck_finish(void);

/* Online processors, at least 1. */
int ck_ncpus(void);

#endif
