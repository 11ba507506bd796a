/*
 * tests/fuzz/fuzz.h - what the libFuzzer targets of tests/fuzz/ share:
 * a private temporary directory (made once, removed at exit), whole-file
 * writes into it, a copy of the input that ends exactly where the input
 * does (so ASan sees any read past it), and a small reader of header
 * bytes.  Each target is one file, fuzz_<surface>.c, and calls the same
 * entry point chunkctl itself does.
 */
#ifndef CK_FUZZ_H
#define CK_FUZZ_H

#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/ck_err.h"
#include "base/ck_log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fuzzer's own directory under $TMPDIR (or /tmp). */
static char fz_dir[256];

static inline int fz_rm(const char *p, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static inline void fz_cleanup(void)
{
    if (fz_dir[0])
        nftw(fz_dir, fz_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Makes fz_dir; exits (this is a test driver, not library code) when it
 * cannot. */
static inline void fz_tmpdir(const char *name)
{
    const char *t = getenv("TMPDIR");

    snprintf(fz_dir, sizeof fz_dir, "%s/ck-fuzz-%s-XXXXXX",
             t && t[0] ? t : "/tmp", name);
    if (!mkdtemp(fz_dir)) {
        perror(fz_dir);
        exit(1);
    }
    atexit(fz_cleanup);
}

/* fz_dir/rel, in one of four rotating buffers. */
static inline const char *fz_at(const char *rel)
{
    static char buf[4][512];
    static int k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", fz_dir, rel);
    return buf[k];
}

/* Writes n bytes to path, replacing it; exits on failure. */
static inline void fz_write(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n) || close(fd) != 0) {
        perror(path);
        exit(1);
    }
}

/* A malloc'd copy of the n bytes at p, with no NUL after them (1 byte
 * for n 0, so the pointer is never NULL). */
static inline char *fz_dup(const uint8_t *p, size_t n)
{
    char *c = malloc(n ? n : 1);

    if (!c)
        abort();
    if (n)
        memcpy(c, p, n);
    return c;
}

/* The same with a NUL after the n bytes (for C-string parsers). */
static inline char *fz_str(const uint8_t *p, size_t n)
{
    char *c = malloc(n + 1);

    if (!c)
        abort();
    if (n)
        memcpy(c, p, n);
    c[n] = 0;
    return c;
}

/* Header bytes read off the front of an input: 0 once it is used up. */
typedef struct fz_in {
    const uint8_t *p;
    size_t n;
} fz_in;

static inline unsigned fz_byte(fz_in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static inline unsigned fz_u16(fz_in *in)
{
    unsigned lo = fz_byte(in);
    return lo | fz_byte(in) << 8;
}

/* With CK_FUZZ_VERBOSE set, says what a call made of the input: "what:
 * ok" or its error message; how the seeds are checked to be valid
 * (README.md).  Returns rc. */
static inline ck_code fz_note(const char *what, ck_code rc, const ck_err *err)
{
    static int verbose = -1;

    if (verbose < 0)
        verbose = getenv("CK_FUZZ_VERBOSE") != NULL;
    if (verbose)
        fprintf(stderr, "%s: %s\n", what, rc == CK_OK ? "ok" : err->msg);
    return rc;
}

/* Silences chunkctl's notes, which would flood the fuzzer's output. */
static inline void fz_quiet(void)
{
    ck_log_set_level(CK_LOG_WARN);
}

#endif
