/*
 * tests/io/test_h5_errors.c - the Criterion suite "h5_errors": HDF5's
 * error stack read by ck_h5_fail (io/hdf5/h5_impl.h) into one line in
 * chunkctl's words, and HDF5's own printing of it kept off.
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/hdf5/h5_impl.h"
#include "io/store.h"

static char dir[64];

static int rm_cb(const char *p, const struct stat *sb, int flag,
                 struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ck_h5e_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    chmod(dir, 0700);
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(h5_errors, .init = setup, .fini = teardown,
          .description = "io/hdf5: HDF5's errors in chunkctl's words");

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

/* A write that fails with ENOSPC reads "No space left on device", not the
 * sec2 driver's text (which holds a ctime() with its newline, the file
 * descriptor and the buffer's address).  /dev/full fails every write with
 * ENOSPC: HDF5 1.10 fails in H5Fcreate already, flushing the superblock;
 * a release that defers that fails writing the dataset. */
Test(h5_errors, enospc_reads_no_space_left_on_device)
{
    hsize_t n = 1 << 16;
    static double buf[1 << 16];
    hid_t f, sp = -1, d = -1;
    herr_t r = -1;
    ck_err err = {0};
    ck_code rc;

    if (access("/dev/full", W_OK) != 0)
        cr_skip_test("no writable /dev/full");
    ck_h5_lock();
    f = H5Fcreate("/dev/full", H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f >= 0) {
        sp = H5Screate_simple(1, &n, NULL);
        d = H5Dcreate2(f, "x", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT,
                       H5P_DEFAULT);
        r = H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        if (r >= 0)
            r = H5Fflush(f, H5F_SCOPE_GLOBAL);
    }
    rc = r < 0 ? ck_h5_fail(&err, CK_OK, "%s:%s: chunk %s: cannot write",
                            "full.h5", "/x", "(0)")
               : CK_OK;
    if (d >= 0)
        H5Dclose(d);
    if (sp >= 0)
        H5Sclose(sp);
    if (f >= 0)
        H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);
    ck_h5_unlock();
    cr_assert_eq(rc, CK_EIO, "a write to /dev/full succeeded");
    cr_assert_str_eq(err.msg, "full.h5:/x: chunk (0): cannot write: No space "
                              "left on device");
}

/* Creating an HDF5 store in a directory we cannot write names the cause
 * in the OS's words. */
Test(h5_errors, unwritable_directory_reads_permission_denied)
{
    char path[128];
    ck_store *s = NULL;
    ck_err err = {0};

    if (geteuid() == 0)
        cr_skip_test("running as root: permissions are moot");
    snprintf(path, sizeof path, "%s/ro/out.h5", dir);
    *strrchr(path, '/') = '\0';
    cr_assert_eq(mkdir(path, 0500), 0);
    path[strlen(path)] = '/';
    cr_assert_neq(ck_store_create(path, CK_KIND_HDF5, 0, &s, &err), CK_OK);
    cr_assert_null(s);
    cr_assert_eq(err.code, CK_EIO, "%s", err.msg);
    cr_assert(ends_with(err.msg, ": Permission denied"), "%s", err.msg);
    cr_assert_null(strstr(err.msg, "errno"), "%s", err.msg);
}

/* A failed open() under HDF5 reads in the OS's words; without an errno
 * on the stack ck_h5_fail keeps HDF5's innermost message.  Either way the
 * stack is left empty. */
Test(h5_errors, no_errno_keeps_hdf5s_message)
{
    ck_err err = {0};
    hid_t f;
    ssize_t left;

    ck_h5_lock();
    f = H5Fopen("/nonexistent/dir/x.h5", H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_lt(f, 0);
    ck_h5_fail(&err, CK_EIO, "%s: cannot open", "x.h5");
    left = H5Eget_num(H5E_DEFAULT);
    ck_h5_unlock();
    /* sec2 reports the failed open() with its errno: ENOENT. */
    cr_assert_str_eq(err.msg, "x.h5: cannot open: No such file or directory");
    cr_assert_eq(left, 0);

    /* No system call failed: HDF5's own innermost message. */
    memset(&err, 0, sizeof err);
    ck_h5_lock();
    cr_assert_lt(H5Tcopy(-1), 0);
    cr_assert_eq(ck_h5_fail(&err, CK_EFORMAT, "%s: cannot copy", "y.h5"),
                 CK_EFORMAT);
    ck_h5_unlock();
    cr_assert(strncmp(err.msg, "y.h5: cannot copy: ", 19) == 0, "%s", err.msg);
    cr_assert_gt(strlen(err.msg), 19, "%s", err.msg);
}

Test(h5_errors, automatic_printing_is_off)
{
    H5E_auto2_t fn = NULL;
    void *data = NULL;

    ck_h5_lock();
    cr_assert_geq(H5Eget_auto2(H5E_DEFAULT, &fn, &data), 0);
    ck_h5_unlock();
    cr_assert_null(fn, "HDF5 would print its error stack to stderr");
}
