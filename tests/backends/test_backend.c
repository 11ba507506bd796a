/*
 * tests/backends/test_backend.c - the Criterion suite "backend":
 * backends/backend.h's table and the ck_be_* layer around it.  The
 * set_threads slot is checked through a stand-in table that records its
 * calls, since the CPU backend's effect (OpenBLAS's pool) is not visible
 * from here.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

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

/* The CPU backend names OpenBLAS's variable and a kernel set, or nothing;
 * which depends on the machine. */
Test(backend, cpu_restart_env_names_a_kernel_set)
{
    const char *name = NULL, *value = NULL;

    cr_assert_not_null(ck_backend_cpu.restart_env);
    if (!ck_backend_cpu.restart_env(&name, &value))
        return;
    cr_expect_str_eq(name, "OPENBLAS_CORETYPE");
    cr_expect(strcmp(value, "SkylakeX") == 0 || strcmp(value, "Haswell") == 0,
              "%s", value);
}

/* The user's setting wins, and so a restarted process is not restarted
 * again. */
Test(backend, restart_env_leaves_a_user_setting_alone)
{
    const char *name = "unset", *value = "unset";

    cr_assert_eq(setenv("OPENBLAS_CORETYPE", "Prescott", 1), 0);
    cr_expect_eq(ck_be_restart_env(&name, &value), 0);
    cr_expect_str_eq(name, "unset", "out-parameters are written only on 1");
    cr_expect_str_eq(value, "unset");
}

Test(backend, restart_env_agrees_with_the_cpu_slot)
{
    const char *n1, *v1, *n2, *v2;
    int want;

    cr_assert_eq(unsetenv("OPENBLAS_CORETYPE"), 0);
    want = ck_backend_cpu.restart_env(&n1, &v1);
    cr_assert_eq(ck_be_restart_env(&n2, &v2), want);
    if (want) {
        cr_expect_str_eq(n2, n1);
        cr_expect_str_eq(v2, v1);
    }
}

/* Operand keys: one per step, operand and block; 0 (keep nothing) where
 * the fields do not fit; ck_be_key_add moves along i only. */
Test(backend, operand_keys)
{
    uint64_t k = ck_be_key(3, 1, 4096, 7);

    cr_assert_neq(k, 0);
    cr_assert_neq(k, ck_be_key(4, 1, 4096, 7));
    cr_assert_neq(k, ck_be_key(3, 0, 4096, 7));
    cr_assert_neq(k, ck_be_key(3, 1, 4097, 7));
    cr_assert_neq(k, ck_be_key(3, 1, 4096, 6));
    cr_assert_neq(ck_be_key(0, 0, 0, 0), 0);
    cr_assert_eq(ck_be_key(4094, 3, ((int64_t)1 << 34) - 1, 16383) >> 52, 4095);
    cr_assert_eq(ck_be_key(4095, 0, 0, 0), 0);
    cr_assert_eq(ck_be_key(-1, 0, 0, 0), 0);
    cr_assert_eq(ck_be_key(0, 4, 0, 0), 0);
    cr_assert_eq(ck_be_key(0, 0, (int64_t)1 << 34, 0), 0);
    cr_assert_eq(ck_be_key(0, 0, 0, 1 << 14), 0);
    cr_assert_eq(ck_be_key_add(k, 512), ck_be_key(3, 1, 4096 + 512, 7));
    cr_assert_eq(ck_be_key_add(k, 0), k);
    cr_assert_eq(ck_be_key_add(0, 512), 0);
    cr_assert_eq(ck_be_key_add(k, ((int64_t)1 << 34) - 4096), 0);
}
