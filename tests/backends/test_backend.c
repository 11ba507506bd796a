/*
 * tests/backends/test_backend.c - the Criterion suite "backend":
 * backends/backend.h's table and the ck_be_* layer around it.  The
 * set_threads slot is checked through a stand-in table that records its
 * calls, since the CPU backend's effect (OpenBLAS's pool) is not visible
 * from here.
 */
#include <criterion/criterion.h>

#include "backends/backend.h"

TestSuite(backend, .description = "backends/backend.h: the table and ck_be");

static int calls, last_n;
static ck_be_ctx *last_ctx;

static void record_threads(ck_be_ctx *ctx, int n)
{
    calls++;
    last_n = n;
    last_ctx = ctx;
}

static const ck_backend recorder = {
    .name = "recorder",
    .abi = CK_BACKEND_ABI,
    .set_threads = record_threads,
};
static const ck_backend no_slot = {.name = "none", .abi = CK_BACKEND_ABI};

Test(backend, cpu_fills_set_threads)
{
    cr_assert_not_null(ck_backend_cpu.set_threads);
    cr_assert_eq(ck_backend_cpu.abi, CK_BACKEND_ABI);
}

Test(backend, set_threads_reaches_the_context)
{
    static int mem;
    ck_be_ctx *ctx = (ck_be_ctx *)&mem;
    ck_be be = {.table = &recorder, .ctx = ctx, .cpu_ctx = ctx};

    calls = 0;
    ck_be_set_threads(&be, 1);
    cr_expect_eq(calls, 1);
    cr_expect_eq(last_n, 1);
    cr_expect_eq(last_ctx, ctx);
    ck_be_set_threads(&be, 0);
    cr_expect_eq(calls, 2);
    cr_expect_eq(last_n, 0);
}

/* Another backend's NULL slots fall back to the CPU context: it is told
 * too, and a NULL slot of its own is no error. */
Test(backend, set_threads_tells_the_cpu_fallback)
{
    ck_be_opts o = {.threads = 2};
    ck_be be = {.table = &no_slot};

    cr_assert_eq(ck_backend_cpu.open(&o, &be.cpu_ctx, NULL), CK_OK);
    be.ctx = NULL;
    ck_be_set_threads(&be, 1);
    ck_be_set_threads(&be, 0);
    ck_backend_cpu.close(be.cpu_ctx);
}

Test(backend, set_threads_on_a_zeroed_be_does_nothing)
{
    ck_be be = {0};

    ck_be_set_threads(&be, 1);
    ck_be_close(&be);
}

Test(backend, open_cpu_and_set_threads)
{
    ck_be_opts o = {.threads = 0};
    ck_be be = {0};
    ck_err err = {0};

    cr_assert_eq(ck_be_open("cpu", &o, &be, &err), CK_OK, "%s", err.msg);
    cr_expect_eq(be.ctx, be.cpu_ctx);
    ck_be_set_threads(&be, 1);
    ck_be_set_threads(&be, 0);
    ck_be_set_threads(&be, 2);
    ck_be_close(&be);
}
