/*
 * tests/base/test_comm.c - the Criterion suite "comm": base/ck_comm.h in
 * one process (no launcher, or no MPI module), in either build.  What needs
 * several ranks is checked by tests/base/mpi_check.c under mpirun (label mpi).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_comm.h"
#include "base/ck_comm_impl.h"

TestSuite(comm, .description = "base/ck_comm.h: ranks and messages, alone");

#ifdef NDEBUG
#define INTERNAL_SIGNAL 0
#else
#define INTERNAL_SIGNAL SIGABRT
#endif

/* Criterion's workers must not look started by a launcher. */
static void no_launcher(void)
{
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_SIZE");
    unsetenv("PMIX_RANK");
}

Test(comm, split_is_contiguous_balanced_and_complete)
{
    for (int64_t n = 0; n <= 40; n++)
        for (int size = 1; size <= 12; size++) {
            int64_t prev = 0, lo, hi;
            for (int r = 0; r < size; r++) {
                ck_comm_split(n, r, size, &lo, &hi);
                cr_assert_eq(lo, prev, "n %lld size %d rank %d", (long long)n,
                             size, r);
                cr_assert_geq(hi, lo);
                /* the first n % size ranks own one more */
                cr_assert_eq(hi - lo, n / size + (r < n % size));
                prev = hi;
            }
            cr_assert_eq(prev, n);
        }
}

Test(comm, split_with_fewer_items_than_ranks)
{
    int64_t lo, hi;

    ck_comm_split(2, 3, 4, &lo, &hi);
    cr_expect_eq(lo, 2);
    cr_expect_eq(hi, 2);
    ck_comm_split(2, 1, 4, &lo, &hi);
    cr_expect_eq(lo, 1);
    cr_expect_eq(hi, 2);
}

Test(comm, split_of_huge_counts)
{
    int64_t lo, hi, n = (int64_t)1 << 62;

    ck_comm_split(n + 3, 1023, 1024, &lo, &hi);
    cr_expect_eq(hi, n + 3);
    cr_expect_eq(hi - lo, n / 1024);
}

Test(comm, alone_is_rank_0_of_1, .init = no_launcher)
{
    ck_err err = {0};
    int argc = 1;
    char *args[] = {"test", NULL}, **argv = args;

    cr_assert_eq(ck_comm_init(&argc, &argv, &err), CK_OK, "%s", err.msg);
    cr_expect_eq(ck_comm_init(&argc, &argv, &err), CK_OK); /* again */
    cr_expect_eq(argc, 1);
    cr_expect_eq(ck_comm_rank(), 0);
    cr_expect_eq(ck_comm_size(), 1);
    cr_expect_eq(ck_comm_active(), 0);
    cr_expect_eq(ck_comm_broken(), 0);
    cr_expect_eq(ck_comm_barrier(&err), CK_OK);
    ck_comm_finalize();
    ck_comm_finalize();
}

Test(comm, collectives_alone, .init = no_launcher)
{
    ck_err err = {0};
    char buf[4] = "abc", all[4] = "";

    cr_assert_eq(ck_comm_init(NULL, NULL, &err), CK_OK, "%s", err.msg);
    cr_expect_eq(ck_comm_bcast(buf, sizeof buf, 0, &err), CK_OK);
    cr_expect_str_eq(buf, "abc");
    cr_expect_eq(ck_comm_allgather(buf, sizeof buf, all, &err), CK_OK);
    cr_expect_str_eq(all, "abc");
    ck_comm_finalize();
}

Test(comm, agree_alone_keeps_the_message, .init = no_launcher)
{
    ck_err err = {0};

    cr_assert_eq(ck_comm_init(NULL, NULL, &err), CK_OK, "%s", err.msg);
    cr_expect_eq(ck_comm_agree(CK_OK, &err), CK_OK);
    ck_err_set(&err, CK_ECORRUPT, "a.zarr: chunk 1.2: bad");
    cr_expect_eq(ck_comm_agree(CK_ECORRUPT, &err), CK_ECORRUPT);
    cr_expect_eq(err.code, CK_ECORRUPT);
    cr_expect_str_eq(err.msg, "a.zarr: chunk 1.2: bad");
    ck_comm_finalize();
}

Test(comm, stats_count_calls, .init = no_launcher)
{
    ck_err err = {0};
    ck_comm_stats st;
    char b[8] = {0};

    cr_assert_eq(ck_comm_init(NULL, NULL, &err), CK_OK, "%s", err.msg);
    ck_comm_stats_reset();
    ck_comm_barrier(&err);
    ck_comm_barrier(&err);
    ck_comm_bcast(b, sizeof b, 0, &err);
    ck_comm_agree(CK_OK, &err);
    ck_comm_stats_get(&st);
    cr_expect_eq(st.op[CK_COMM_BARRIER].calls, 2);
    cr_expect_eq(st.op[CK_COMM_BCAST].calls, 1);
    cr_expect_eq(st.op[CK_COMM_BCAST].sent, 0); /* nothing travels */
    cr_expect_eq(st.op[CK_COMM_AGREE].calls, 1);
    cr_expect_eq(st.op[CK_COMM_P2P].calls, 0);
    ck_comm_stats_reset();
    ck_comm_stats_get(&st);
    cr_expect_eq(st.op[CK_COMM_BARRIER].calls, 0);
    ck_comm_finalize();
}

Test(comm, op_names)
{
    cr_expect_str_eq(ck_comm_op_name(CK_COMM_BARRIER), "barrier");
    cr_expect_str_eq(ck_comm_op_name(CK_COMM_P2P), "p2p");
    cr_expect_str_eq(ck_comm_op_name(CK_COMM_AGREE), "agree");
    cr_expect_str_eq(ck_comm_op_name(CK_COMM_NOPS), "?");
}

Test(comm, launcher_from_the_environment, .init = no_launcher)
{
    cr_expect_eq(ck_comm_launcher_size(), 0);
    setenv("PMIX_RANK", "0", 1);
    cr_expect_eq(ck_comm_launcher_size(), 1);
    setenv("PMI_SIZE", "3", 1);
    cr_expect_eq(ck_comm_launcher_size(), 3);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    cr_expect_eq(ck_comm_launcher_size(), 4);
    setenv("OMPI_COMM_WORLD_SIZE", "x", 1);
    cr_expect_eq(ck_comm_launcher_size(), 3);
}

/* Where no module is (a build without MPI, or a test binary that is not
 * told where the module is), a launcher of several processes is refused
 * and one of one process is simply one process. */
static void no_module(void)
{
    no_launcher();
    setenv("CHUNKCTL_MODULE_DIR", "/nonexistent", 1);
}

Test(comm, without_the_module_a_launcher_is_refused, .init = no_module)
{
    ck_err err = {0};

    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    cr_expect_eq(ck_comm_init(NULL, NULL, &err), CK_ENOTSUP);
    cr_expect_str_eq(err.msg,
                     "started by an MPI launcher with 4 processes: this "
                     "chunkctl was built without MPI (no libchunkctl-mpi.so "
                     "beside it; CHUNKCTL_MPI=OFF)");
    cr_expect_eq(ck_comm_active(), 0);
}

Test(comm, without_the_module_a_launcher_of_one_is_alone, .init = no_module)
{
    ck_err err = {0};

    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    cr_expect_eq(ck_comm_init(NULL, NULL, &err), CK_OK, "%s", err.msg);
    cr_expect_eq(err.code, CK_OK);
    cr_expect_eq(ck_comm_size(), 1);
    cr_expect_eq(ck_comm_active(), 0);
}

Test(comm, no_peer_alone, .init = no_launcher, .signal = INTERNAL_SIGNAL)
{
    ck_err err = {0};
    char b = 0;

    cr_assert_eq(ck_comm_init(NULL, NULL, &err), CK_OK, "%s", err.msg);
    cr_expect_eq(ck_comm_send(&b, 1, 1, 0, &err), CK_EINTERNAL);
}
