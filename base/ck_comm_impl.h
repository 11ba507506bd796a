/*
 * base/ck_comm_impl.h - the table between base/ck_comm.c and the MPI
 * module (base/ck_comm_mpi.c, built as libchunkctl-mpi.so when CHUNKCTL_MPI
 * finds MPI).  ck_comm.c loads the module with dlopen only when a launcher
 * started the process, so chunkctl itself needs no MPI library and starts
 * as fast as a build without MPI.  Not for use outside base/ck_comm*.c and
 * their tests.
 */
#ifndef CK_COMM_IMPL_H
#define CK_COMM_IMPL_H

#include <stddef.h>

#include "base/ck_comm.h"

#define CK_COMM_ABI 3 /* bump when the table changes */

/* Each slot has the contract of the ck_comm.h function of the same name,
 * under MPI; ck_comm.c counts the bytes and checks the arguments that do
 * not need MPI. */
typedef struct ck_comm_ops {
    int abi;
    ck_code (*init)(int *argc, char ***argv, ck_err *err);
    void (*finalize)(void);
    int (*rank)(void);
    int (*size)(void);
    void (*host)(int *rank, int *size);
    int (*broken)(void);
    ck_code (*barrier)(ck_err *err);
    ck_code (*bcast)(void *buf, size_t n, int root, ck_err *err);
    ck_code (*send)(const void *buf, size_t n, int to, int tag, ck_err *err);
    ck_code (*recv)(void *buf, size_t n, int from, int tag, ck_err *err);
    ck_code (*allgather)(const void *mine, size_t rec_bytes, void *all,
                         ck_err *err);
    /* rc CK_ESTOPPED ranks below every other failure; a rank passing
     * another failure has called stop_tell() first, and the agreement
     * receives every stop word sent to this rank before it returns. */
    ck_code (*agree)(ck_code rc, ck_err *err);
    /* Tells every other rank, without waiting, that this one failed. */
    void (*stop_tell)(void);
    /* 1 when a stop word from another rank has arrived (not received). */
    int (*stop_probe)(void);
    void (*abort)(int code);
} ck_comm_ops;

/* The one symbol the module exports. */
#define CK_COMM_MODULE_ENTRY "ck_comm_module"
typedef const ck_comm_ops *(*ck_comm_module_fn)(void);

/* The launcher's process count from the environment (OpenMPI's
 * OMPI_COMM_WORLD_SIZE, PMI_SIZE, or 1 for PMIX_RANK alone); 0 when no
 * launcher started this process. */
int ck_comm_launcher_size(void);

#endif
