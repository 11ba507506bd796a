/*
 * tests/base/test_err.c - the Criterion suite "err": base/ck_err.h's
 * codes, names, messages and exit statuses.  ck_err_internal asserts in
 * debug builds (NDEBUG not defined), so its tests expect SIGABRT there and
 * check the message where it returns.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/ck_err.h"

TestSuite(err, .description = "base/ck_err.h: codes, messages, exit status");

#ifdef NDEBUG
#define INTERNAL_SIGNAL 0
#else
#define INTERNAL_SIGNAL SIGABRT
#endif

Test(err, code_names)
{
    cr_expect_str_eq(ck_code_name(CK_OK), "ok");
    cr_expect_str_eq(ck_code_name(CK_ENOMEM), "nomem");
    cr_expect_str_eq(ck_code_name(CK_EINTERNAL), "internal");
    cr_expect_str_eq(ck_code_name((ck_code)999), "unknown");
}

Test(err, set_keeps_the_first_error)
{
    ck_err err = {0};

    cr_expect_eq(ck_err_set(&err, CK_EIO, "a %d", 1), CK_EIO);
    cr_expect_eq(ck_err_set(&err, CK_ENOMEM, "b"), CK_ENOMEM);
    cr_expect_eq(err.code, CK_EIO);
    cr_expect_str_eq(err.msg, "a 1");
}

Test(err, exit_status)
{
    cr_expect_eq(ck_exit_status(CK_OK), 0);
    cr_expect_eq(ck_exit_status(CK_EUSAGE), 2);
    cr_expect_eq(ck_exit_status(CK_EINTERNAL), 3);
    cr_expect_eq(ck_exit_status(CK_EIO), 1);
    cr_expect_eq(ck_exit_status(CK_EFORMAT), 1);
    cr_expect_eq(ck_exit_status(CK_ECORRUPT), 1);
    cr_expect_eq(ck_exit_status(CK_ENOMEM), 1);
    cr_expect_eq(ck_exit_status(CK_ENOTSUP), 1);
    cr_expect_eq(ck_exit_status(CK_EDEVICE), 1);
    cr_expect_eq(ck_exit_status(CK_EEXIST), 1);
}

/* The message names the fault and where the tree raised it, whatever
 * path the build gave the compiler. */
Test(err, internal_names_the_place, .signal = INTERNAL_SIGNAL)
{
    ck_err err = {0};

    cr_expect_eq(ck_err_internal_at(&err, "/src/chunkctl/pipelines/exec.c", 255,
                                    "run: scratch arena too small by %d", 8),
                 CK_EINTERNAL);
    cr_expect_eq(err.code, CK_EINTERNAL);
    cr_expect_str_eq(err.msg, "run: scratch arena too small by 8 (internal "
                              "fault at pipelines/exec.c:255)");
}

Test(err, internal_path_without_a_room, .signal = INTERNAL_SIGNAL)
{
    ck_err err = {0};

    ck_err_internal_at(&err, "/tmp/x.c", 7, "odd");
    cr_expect_str_eq(err.msg, "odd (internal fault at x.c:7)");
}

Test(err, internal_macro_captures_this_line, .signal = INTERNAL_SIGNAL)
{
    ck_err err = {0};
    int line = __LINE__ + 1;
    ck_code rc = ck_err_internal(&err, "here");
    char want[128];

    snprintf(want, sizeof want, "here (internal fault at base/test_err.c:%d)",
             line);
    cr_expect_eq(rc, CK_EINTERNAL);
    cr_expect_str_eq(err.msg, want);
}

Test(err, internal_accepts_a_null_err, .signal = INTERNAL_SIGNAL)
{
    cr_expect_eq(ck_err_internal(NULL, "no err"), CK_EINTERNAL);
}
