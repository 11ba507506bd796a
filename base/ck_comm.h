/*
 * base/ck_comm.h - the processes of one run: rank, size, and the few
 * messages chunkctl sends between them.
 * One process by itself, or MPI: base/ck_comm.c loads the module
 * libchunkctl-mpi.so (base/ck_comm_mpi.c, built when CHUNKCTL_MPI finds
 * MPI) only when an MPI launcher (mpirun, srun) started the process, so a
 * build with MPI starts and behaves exactly as one without unless
 * launched.  Only the main thread calls these functions
 * (MPI_THREAD_FUNNELED); worker threads inside a rank work as everywhere
 * else.  What is computed, and in which order partial results are
 * combined, is not decided here: see base/ck_tree.h.
 *
 * Failures: a message that fails (CK_EIO, naming the call and the peer;
 * ck_comm_broken() is then 1) leaves the ranks unable to agree on
 * anything: the caller reports it and calls ck_comm_abort().  A peer that
 * dies ends the whole job through the launcher.  Errors that are only
 * local (bad input, a damaged chunk) go through ck_comm_agree instead.
 */
#ifndef CK_COMM_H
#define CK_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_err.h"

/* Joins the run.  Under a launcher (OMPI_COMM_WORLD_SIZE, PMIX_RANK or
 * PMI_SIZE in the environment) it loads the MPI module from the
 * executable's directory (or CHUNKCTL_MODULE_DIR) and calls
 * MPI_Init_thread (FUNNELED), which may take MPI's own arguments out of
 * argc/argv; otherwise nothing is loaded and the process is rank 0 of 1.
 * Without the module (a build without MPI), a launcher of more than one
 * process is refused with CK_ENOTSUP (every process would compute and write
 * everything); a module that does not load (no MPI library here) is CK_EIO.
 * Call once, before any thread is started; calling it again does
 * nothing. */
ck_code ck_comm_init(int *argc, char ***argv, ck_err *err);

/* Leaves the run (MPI_Finalize when ck_comm_init initialized MPI).  Every
 * rank calls it, after its last message; safe when init was not called or
 * failed, and when called twice. */
void ck_comm_finalize(void);

/* This process's rank, 0 .. ck_comm_size() - 1; 0 and 1 outside MPI. */
int ck_comm_rank(void);
int ck_comm_size(void);

/* This process's place among the ranks on its own host (those that
 * share its memory, MPI_COMM_TYPE_SHARED): *rank of *size; where MPI
 * cannot say, every rank counts as on this host (the cautious guess for
 * sharing a device); 0 of 1 outside MPI. */
void ck_comm_host(int *rank, int *size);

/* 1 when this process runs under MPI (an MPI build started by a launcher,
 * including mpirun -n 1), 0 otherwise. */
int ck_comm_active(void);

/* The resident bytes a process grew by while it joined the run (the MPI
 * module and library, their transports' buffers and shared segments),
 * measured around ck_comm_init, the most of any rank (so that all ranks
 * charge the same); 0 outside MPI.  --memory bounds the whole
 * process, so this is charged beside chunkctl's own (pipelines/stream.h,
 * ck_base_overhead). */
int64_t ck_comm_start_bytes(void);

/* The items rank 'rank' of 'size' owns: [*lo, *hi) of 0 .. n - 1, contiguous
 * and in rank order, sizes differing by at most one (the first n % size
 * ranks get one more).  When n < size the last ranks own none (*lo ==
 * *hi).  Pure; the same on every rank.  n >= 0, 0 <= rank < size. */
void ck_comm_split(int64_t n, int rank, int size, int64_t *lo, int64_t *hi);

/* Collective: returns when every rank has called it. */
ck_code ck_comm_barrier(ck_err *err);

/* Collective: copies root's n bytes at buf into every rank's buf.  Every
 * rank passes the same n and root.  Any n (sent in pieces of at most 1 GiB
 * when large). */
ck_code ck_comm_bcast(void *buf, size_t n, int root, ck_err *err);

/* Point to point: n bytes to rank 'to' with tag 'tag' (0 .. 32767), which
 * must call ck_comm_recv with the same n and tag.  Blocks until buf may be
 * reused.  Any n (sent in pieces of at most 1 GiB).  Messages between two
 * ranks with one tag arrive in the order sent. */
ck_code ck_comm_send(const void *buf, size_t n, int to, int tag, ck_err *err);
/* Receives n bytes from rank 'from' with tag 'tag' into buf.  CK_EIO if the
 * message is not n bytes long. */
ck_code ck_comm_recv(void *buf, size_t n, int from, int tag, ck_err *err);

/* Collective: every rank gives one record of rec_bytes (the same on all
 * ranks, at most INT_MAX) and gets all of them, rank r's at
 * all + r * rec_bytes ('mine' not inside 'all'). */
ck_code ck_comm_allgather(const void *mine, size_t rec_bytes, void *all,
                          ck_err *err);

/* Collective: every rank's piece of a result to every rank, for results
 * that ranks compute in disjoint parts (a scan's carries by block, a
 * quantile's output elements by block).  piece(ctx, q, buf, dir) speaks
 * for rank q's piece: with dir 0 it returns its bytes (the same answer on
 * every rank, buf NULL); dir > 0 packs it from the caller's result into
 * buf, dir < 0 unpacks buf into the result.  Each rank packs its own, and
 * broadcasts it, and the others unpack it: the caller's result is then
 * whole everywhere.  The buffer (the largest piece) is charged to budget
 * while held.  rc is this rank's outcome so far, agreed first (as
 * ck_comm_agree). */
typedef size_t (*ck_comm_piece_fn)(void *ctx, int q, void *buf, int dir);
struct ck_budget;
ck_code ck_comm_share(ck_comm_piece_fn piece, void *ctx,
                      struct ck_budget *budget, ck_code rc, ck_err *err);

/* Collective error agreement: every rank passes its own outcome (rc, and
 * its message in *err when rc != CK_OK).  Returns CK_OK on every rank when
 * all passed CK_OK.  Otherwise every rank returns the code of the lowest
 * failing rank, and *err becomes that rank's code and message (all of
 * ck_err's message buffer is carried), prefixed "rank N: " when
 * ck_comm_size() > 1 (the prefix may cut the message's last bytes at
 * ck_err's 512; a failure without a message gets the code's name), so rank
 * 0 alone can print the one line.  With one rank (MPI or not) it returns rc
 * and leaves *err alone.
 *
 * A failure agreed on is final: every later ck_comm_agree returns it at
 * once, without communicating.  So the ranks need not fail at the same
 * place: a rank that fails goes to its next agreement, the others meet it
 * at theirs, and from then on each returns through its own error path,
 * whose agreements (and nothing else collective: callers agree before
 * every other collective call) cost nothing. */
ck_code ck_comm_agree(ck_code rc, ck_err *err);
/* Stopping promptly.  A rank that passes a failure to ck_comm_agree first
 * tells every other rank, without waiting (a few bytes each, on a
 * communicator of their own); ck_comm_agree then collects those words, so
 * none is left in flight.  The others look for that word between chunks:
 * ck_comm_stopping() returns 1 once some rank has failed (0 outside MPI).
 * It asks MPI at most every few milliseconds and only on the thread that
 * called ck_comm_init; on other threads (and in between) it reads the
 * answer last seen, so it is cheap enough for every chunk.  ck_par_run
 * polls it (base/ck_thread.h), and a job it stops fails with CK_ESTOPPED,
 * which ck_comm_agree ranks below every real failure: rank 0 prints the
 * failing rank's message, never "stopped". */
int ck_comm_stopping(void);

/* Tells the other ranks now that this one failed with rc (nothing for
 * CK_OK or CK_ESTOPPED, or once told): what ck_comm_agree does on entry,
 * for a rank about to wait in another collective first (ck_tree_finish
 * waits for its children's stacks before it agrees). */
void ck_comm_stop_others(ck_code rc);

/* Forgets an agreed failure, so the next ck_comm_agree communicates
 * again: for tests that agree on several failures in turn. */
void ck_comm_agree_forget(void);

/* 1 once a ck_comm call has failed to communicate (see above), 0 otherwise
 * (always 0 outside MPI). */
int ck_comm_broken(void);

/* Ends every rank of the run with exit status 'code' (MPI_Abort under MPI;
 * exit() in one process).  For when the ranks can no longer agree: a failed
 * ck_comm call, or a rank that cannot reach the next agreement.  Does not
 * return. */
void ck_comm_abort(int code) __attribute__((noreturn));

/* What this rank sent and received, by kind of call, since the start or the
 * last ck_comm_stats_reset(): payload bytes as the caller sees them, not
 * what the network carried (a bcast counts n sent at the root and n
 * received at every other rank; an allgather rec_bytes sent and
 * (size - 1) * rec_bytes received; an agreement 4 bytes each way, and the
 * 516-byte error as received when there was one).  With one rank nothing
 * is counted but calls. */
typedef enum ck_comm_op {
    CK_COMM_BARRIER,
    CK_COMM_BCAST,
    CK_COMM_P2P, /* ck_comm_send counts sent, ck_comm_recv received */
    CK_COMM_ALLGATHER,
    CK_COMM_AGREE,
    CK_COMM_NOPS
} ck_comm_op;

typedef struct ck_comm_count {
    uint64_t calls, sent, recvd;
} ck_comm_count;

typedef struct ck_comm_stats {
    ck_comm_count op[CK_COMM_NOPS];
} ck_comm_stats;

void ck_comm_stats_get(ck_comm_stats *out);
void ck_comm_stats_reset(void);
/* "barrier", "bcast", "p2p", "allgather", "agree"; "?" for others. */
const char *ck_comm_op_name(ck_comm_op op);

#endif
