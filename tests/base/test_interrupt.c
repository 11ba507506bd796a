/*
 * tests/base/test_interrupt.c - the Criterion suite "interrupt": a signal
 * (ck_interrupt) and the run's end (ck_finish) exclude each other, and
 * ck_store_commit_all leaves every output or none accordingly.  A SIGTERM
 * that came after the outputs' renames but before the run claimed its end
 * made chunkctl die of it with the output in place (tests/cli/
 * interrupt_cleans_up.sh caught it now and then).  Criterion runs each
 * test in a process of its own, so each starts running.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/ck_thread.h"
#include "io/store.h"

TestSuite(interrupt, .description = "base/ck_thread.h: interrupt or finish");

Test(interrupt, a_signal_first_refuses_the_end)
{
    cr_assert_eq(ck_interrupted(), 0);
    cr_assert_eq(ck_interrupt(), 1);
    cr_assert_eq(ck_interrupted(), 1);
    cr_assert_eq(ck_interrupt(), 1, "a second signal is still one");
    cr_assert_eq(ck_finish(), 0, "the outputs must be taken back");
    cr_assert_eq(ck_interrupted(), 1);
}

Test(interrupt, the_end_first_refuses_a_signal)
{
    cr_assert_eq(ck_finish(), 1);
    cr_assert_eq(ck_finish(), 1);
    cr_assert_eq(ck_interrupt(), 0, "the outputs stand: nothing to stop");
    cr_assert_eq(ck_interrupted(), 0, "workers must not stop now");
}

/* A Zarr store with one small array, written under its temporary name. */
static ck_store *one_store(const char *path)
{
    ck_store *w = NULL;
    ck_array *a = NULL;
    ck_array_spec spec = {.name = "/x", .ndim = 1, .dtype = CK_F64};
    double v[4] = {1, 2, 3, 4};
    int64_t at[1] = {0};

    spec.shape[0] = spec.chunks[0] = 4;
    cr_assert_eq(ck_store_create(path, CK_KIND_ZARR, 0, &w, NULL), CK_OK);
    cr_assert_eq(ck_array_create(w, &spec, &a, NULL), CK_OK);
    cr_assert_eq(ck_array_write_chunk(a, at, v, NULL, NULL), CK_OK);
    ck_array_close(a);
    return w;
}

static void two_outputs(int interrupt_first)
{
    char dir[64], p[2][128];
    ck_store *s[2];
    ck_err err = {0};
    struct stat st;

    snprintf(dir, sizeof dir, "/tmp/ck-interrupt-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    for (int k = 0; k < 2; k++) {
        snprintf(p[k], sizeof p[k], "%s/o%d.zarr", dir, k);
        s[k] = one_store(p[k]);
    }
    if (interrupt_first)
        cr_assert_eq(ck_interrupt(), 1);
    ck_code rc = ck_store_commit_all(s, 2, &err);
    for (int k = 0; k < 2; k++)
        ck_store_close(s[k]);
    for (int k = 0; k < 2; k++)
        cr_assert_eq(stat(p[k], &st) == 0, !interrupt_first, "%s", p[k]);
    cr_assert_eq(rc, interrupt_first ? CK_ESTOPPED : CK_OK, "%s", err.msg);
    cr_assert_eq(ck_interrupt(), interrupt_first,
                 "after a commit a signal stops nothing");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(interrupt, commit_all_leaves_every_output)
{
    two_outputs(0);
}

Test(interrupt, commit_all_after_a_signal_leaves_none)
{
    two_outputs(1);
}
