/*
 * base/ck_comm.c - base/ck_comm.h: one process by itself, or MPI through
 * the module libchunkctl-mpi.so (base/ck_comm_mpi.c), loaded with dlopen
 * from the executable's directory only when a launcher started this
 * process.  A run without a launcher never loads MPI, so a build with MPI
 * starts and behaves exactly as one without.  The split of items, the byte
 * counters and the argument checks that need no MPI are here.
 */
#include "base/ck_comm.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/ck_comm_impl.h"
#include "base/ck_mem.h"

/* Main thread only (FUNNELED), so plain statics. */
static const ck_comm_ops *mpi; /* the module, once it initialized MPI */
static int initialized;
static ck_comm_stats stats;
/* ck_comm_stopping: the thread that may call MPI, when it next asks, and
 * whether a stop word has arrived (read by every worker: atomic). */
static pthread_t main_thread;
static int64_t next_probe_ns;
static int stop_seen;
static int64_t start_bytes;

static void count(ck_comm_op op, uint64_t sent, uint64_t recvd)
{
    stats.op[op].calls++;
    stats.op[op].sent += sent;
    stats.op[op].recvd += recvd;
}

/* A positive decimal from the environment, or 0. */
static int env_int(const char *name)
{
    const char *s = getenv(name);
    char *end;
    long v;

    if (!s || !*s)
        return 0;
    v = strtol(s, &end, 10);
    return *end == '\0' && v > 0 && v < (1L << 30) ? (int)v : 0;
}

int ck_comm_launcher_size(void)
{
    int n = env_int("OMPI_COMM_WORLD_SIZE");

    if (n == 0)
        n = env_int("PMI_SIZE");
    if (n == 0 && getenv("PMIX_RANK"))
        n = 1; /* PMIx alone does not say how many; MPI will */
    return n;
}

/* dir of /proc/self/exe + "/libchunkctl-mpi.so", or CHUNKCTL_MODULE_DIR's
 * (a test pointing at a build tree), as for the CUDA backend.  CK_ENOTSUP
 * when there is no module (a build without MPI); CK_EIO when it does not
 * load (no MPI library on this host). */
static ck_code load_module(const ck_comm_ops **out, ck_err *err)
{
    static const char file[] = "libchunkctl-mpi.so";
    char path[PATH_MAX + sizeof file];
    const char *dir = getenv("CHUNKCTL_MODULE_DIR");
    ck_comm_module_fn entry;
    const ck_comm_ops *ops;
    void *h;
    ssize_t n;

    if (dir) {
        n = snprintf(path, sizeof path, "%s/", dir);
    } else {
        n = readlink("/proc/self/exe", path, PATH_MAX);
        while (n > 0 && path[n - 1] != '/')
            n--;
    }
    if (n <= 0 || (size_t)n >= PATH_MAX)
        return ck_err_set(err, CK_EIO,
                          "mpi: cannot find the directory chunkctl runs from");
    memcpy(path + n, file, sizeof file);
    if (access(path, F_OK) != 0)
        return ck_err_set(err, CK_ENOTSUP,
                          "this chunkctl was built without MPI (no %s beside "
                          "it; CHUNKCTL_MPI=OFF)",
                          file);
    /* RTLD_GLOBAL: Open MPI's own plugins resolve symbols of libmpi. */
    if (!(h = dlopen(path, RTLD_NOW | RTLD_GLOBAL)))
        return ck_err_set(err, CK_EIO, "mpi: %s", dlerror());
    *(void **)&entry = dlsym(h, CK_COMM_MODULE_ENTRY);
    ops = entry ? entry() : NULL;
    if (!ops || ops->abi != CK_COMM_ABI) {
        ck_code rc = ck_err_set(err, CK_EIO,
                                "mpi: %s has ABI %d, this chunkctl %d "
                                "(install the two together)",
                                path, ops ? ops->abi : -1, CK_COMM_ABI);
        dlclose(h);
        return rc;
    }
    *out = ops; /* stays loaded until exit */
    return CK_OK;
}

/* This process's resident bytes now (0 when /proc cannot say). */
static int64_t resident(void)
{
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%*s %ld", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (int64_t)pages * sysconf(_SC_PAGESIZE);
}

/* start_bytes: the most any rank grew by, so that every rank charges the
 * same and budget-driven choices (worker counts, a quantile's way) come
 * out alike on all of them.  Not counted in the statistics. */
static ck_code agree_start_bytes(int64_t mine, ck_err *err)
{
    int n = mpi->size();
    int64_t *all = malloc(sizeof *all * (size_t)n);

    if (!all)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    mine = mine > 0 ? mine : 0;
    ck_code rc = n > 1 ? mpi->allgather(&mine, sizeof mine, all, err) : CK_OK;
    start_bytes = mine;
    for (int k = 0; rc == CK_OK && n > 1 && k < n; k++)
        start_bytes = all[k] > start_bytes ? all[k] : start_bytes;
    free(all);
    return rc;
}

ck_code ck_comm_init(int *argc, char ***argv, ck_err *err)
{
    const ck_comm_ops *ops = NULL;
    int64_t before = resident();
    int n;
    ck_code rc;

    if (initialized)
        return CK_OK;
    n = ck_comm_launcher_size();
    if (n > 0 && (rc = load_module(&ops, err)) != CK_OK) {
        if (rc != CK_ENOTSUP || n > 1) {
            if (rc == CK_ENOTSUP)
                ck_err_prefix(err,
                              "started by an MPI launcher with %d "
                              "processes",
                              n);
            return rc;
        }
        /* mpirun -n 1 of a build without MPI: simply one process */
        memset(err, 0, sizeof *err);
        ops = NULL;
    }
    if (ops) {
        CK_TRY(ops->init(argc, argv, err));
        mpi = ops;
        CK_TRY(agree_start_bytes(resident() - before, err));
    }
    main_thread = pthread_self();
    initialized = 1;
    return CK_OK;
}

void ck_comm_finalize(void)
{
    if (mpi)
        mpi->finalize();
    mpi = NULL;
    initialized = 0;
}

int ck_comm_rank(void)
{
    return mpi ? mpi->rank() : 0;
}

int ck_comm_size(void)
{
    return mpi ? mpi->size() : 1;
}

void ck_comm_host(int *rank, int *size)
{
    *rank = 0;
    *size = 1;
    if (mpi)
        mpi->host(rank, size);
}

int64_t ck_comm_start_bytes(void)
{
    return mpi ? start_bytes : 0;
}

int ck_comm_active(void)
{
    return mpi != NULL;
}

int ck_comm_broken(void)
{
    return mpi ? mpi->broken() : 0;
}

void ck_comm_split(int64_t n, int rank, int size, int64_t *lo, int64_t *hi)
{
    int64_t q = n / size, r = n % size;

    /* Ranks below r own q + 1 items, the others q. */
    *lo = rank * q + (rank < r ? rank : r);
    *hi = *lo + q + (rank < r);
}

ck_code ck_comm_barrier(ck_err *err)
{
    count(CK_COMM_BARRIER, 0, 0);
    return mpi ? mpi->barrier(err) : CK_OK;
}

ck_code ck_comm_bcast(void *buf, size_t n, int root, ck_err *err)
{
    int rank = ck_comm_rank(), size = ck_comm_size();

    if (root < 0 || root >= size)
        return ck_err_internal(err, "bcast from rank %d of %d", root, size);
    count(CK_COMM_BCAST, size > 1 && rank == root ? n : 0,
          size > 1 && rank != root ? n : 0);
    return mpi && size > 1 ? mpi->bcast(buf, n, root, err) : CK_OK;
}

/* Peers and tags are chunkctl's own choice: a bad one is a bug. */
static ck_code check_peer(int peer, int tag, const char *what, ck_err *err)
{
    int rank = ck_comm_rank(), size = ck_comm_size();

    if (peer < 0 || peer >= size || peer == rank)
        return ck_err_internal(err, "%s rank %d (rank %d of %d)", what, peer,
                               rank, size);
    if (tag < 0 || tag > 32767)
        return ck_err_internal(err, "%s rank %d: tag %d", what, peer, tag);
    return CK_OK;
}

ck_code ck_comm_send(const void *buf, size_t n, int to, int tag, ck_err *err)
{
    CK_TRY(check_peer(to, tag, "send to", err));
    count(CK_COMM_P2P, n, 0);
    return mpi->send(buf, n, to, tag, err);
}

ck_code ck_comm_recv(void *buf, size_t n, int from, int tag, ck_err *err)
{
    CK_TRY(check_peer(from, tag, "receive from", err));
    count(CK_COMM_P2P, 0, n);
    return mpi->recv(buf, n, from, tag, err);
}

ck_code ck_comm_allgather(const void *mine, size_t rec_bytes, void *all,
                          ck_err *err)
{
    int size = ck_comm_size();

    if (rec_bytes > INT_MAX)
        return ck_err_internal(err, "allgather of %zu-byte records", rec_bytes);
    count(CK_COMM_ALLGATHER, size > 1 ? rec_bytes : 0,
          (uint64_t)rec_bytes * (uint64_t)(size - 1));
    if (mpi && size > 1)
        return mpi->allgather(mine, rec_bytes, all, err);
    if (rec_bytes > 0 && all != mine)
        memmove(all, mine, rec_bytes);
    return CK_OK;
}

/* The first failure the ranks agreed on: every later agreement returns
 * it at once, without a word to the others (see ck_comm_agree). */
static ck_code failed_rc = CK_OK;
static ck_err failed_err;

/* Every 5 ms: a chunk takes longer than that, and an MPI_Iprobe costs a
 * microsecond or two. */
#define PROBE_EVERY_NS 5000000

int ck_comm_stopping(void)
{
    struct timespec ts;
    int64_t now;

    if (!mpi)
        return 0;
    if (__atomic_load_n(&stop_seen, __ATOMIC_ACQUIRE))
        return 1;
    if (!pthread_equal(pthread_self(), main_thread) || mpi->size() == 1)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (now < next_probe_ns)
        return 0;
    next_probe_ns = now + PROBE_EVERY_NS;
    if (!mpi->stop_probe())
        return 0;
    __atomic_store_n(&stop_seen, 1, __ATOMIC_RELEASE);
    return 1;
}

void ck_comm_stop_others(ck_code rc)
{
    if (!mpi || mpi->size() == 1 || failed_rc != CK_OK || rc == CK_OK ||
        rc == CK_ESTOPPED)
        return;
    mpi->stop_tell(); /* once: the module ignores a second call */
}

ck_code ck_comm_agree(ck_code rc, ck_err *err)
{
    int size = ck_comm_size();

    if (!mpi || size == 1) {
        count(CK_COMM_AGREE, 0, 0);
        return rc;
    }
    if (failed_rc != CK_OK) {
        if (err)
            *err = failed_err;
        return failed_rc;
    }
    /* the others may be deep in a long pass: tell them now, not when they
     * reach this agreement */
    ck_comm_stop_others(rc);
    rc = mpi->agree(rc, err);
    /* the lowest failing rank, 4 bytes each way; then its error */
    count(CK_COMM_AGREE, sizeof(int),
          sizeof(int) + (rc != CK_OK ? sizeof(int) + sizeof err->msg : 0));
    if (rc != CK_OK && err) {
        failed_rc = rc;
        failed_err = *err;
    }
    return rc;
}

ck_code ck_comm_share(ck_comm_piece_fn piece, void *ctx, ck_budget *budget,
                      ck_code rc, ck_err *err)
{
    int size = ck_comm_size(), me = ck_comm_rank(), charged;
    size_t most = 0;
    void *buf = NULL;

    for (int q = 0; q < size; q++) {
        size_t n = piece(ctx, q, NULL, 0);
        most = n > most ? n : most;
    }
    if (rc == CK_OK)
        rc =
            ck_budget_charge(budget, (int64_t)most, "a share of a result", err);
    charged = rc == CK_OK;
    if (rc == CK_OK && most && !(buf = ck_alloc_large(most)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    rc = ck_comm_agree(rc, err);
    for (int q = 0; rc == CK_OK && q < size; q++) {
        size_t n = piece(ctx, q, NULL, 0);
        if (n == 0)
            continue;
        if (q == me)
            piece(ctx, q, buf, 1);
        rc = ck_comm_bcast(buf, n, q, err);
        if (rc == CK_OK && q != me)
            piece(ctx, q, buf, -1);
    }
    free(buf);
    if (charged)
        ck_budget_release(budget, (int64_t)most);
    return rc;
}

void ck_comm_agree_forget(void)
{
    failed_rc = CK_OK;
    __atomic_store_n(&stop_seen, 0, __ATOMIC_RELEASE);
}

void ck_comm_abort(int code)
{
    if (mpi)
        mpi->abort(code);
    exit(code);
}

void ck_comm_stats_get(ck_comm_stats *out)
{
    *out = stats;
}

void ck_comm_stats_reset(void)
{
    stats = (ck_comm_stats){0};
}

const char *ck_comm_op_name(ck_comm_op op)
{
    static const char *const names[] = {
        [CK_COMM_BARRIER] = "barrier", [CK_COMM_BCAST] = "bcast",
        [CK_COMM_P2P] = "p2p",         [CK_COMM_ALLGATHER] = "allgather",
        [CK_COMM_AGREE] = "agree",
    };
    if ((unsigned)op < CK_COMM_NOPS)
        return names[op];
    return "?";
}
