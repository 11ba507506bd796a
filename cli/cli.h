/*
 * cli/cli.h - what the command files share: the options every command
 * takes, and the progress bar.  Private to cli/.
 */
#ifndef CK_CLI_H
#define CK_CLI_H

#include <getopt.h>
#include <stdint.h>

#include "base/ck_err.h"
#include "base/ck_progress.h"

/* Options main() applies the same way for every command. */
typedef struct cli_common {
    int64_t memory;        /* --memory, bytes */
    int threads;           /* --threads, 0 = all cores */
    int quiet;             /* --quiet */
    int force;             /* --force */
    ck_progress *progress; /* NULL unless stderr is a terminal */
} cli_common;

/* Long options every command accepts, to append to its own table. */
#define CLI_COMMON_OPTS                                                        \
    {"memory", required_argument, 0, 'M'},                                     \
        {"threads", required_argument, 0, 'T'},                                \
        {"quiet", no_argument, 0, 'q'}, {"force", no_argument, 0, 'f'},        \
    {                                                                          \
        "help", no_argument, 0, 'h'                                            \
    }

/* A command's options, for cli_getopt.  Its own option values (the 'val'
 * of each struct option, and its short letters) must not be M, T, q, f or
 * h: those are the common options'. */
typedef struct cli_cmd_opts {
    const char *name;           /* the command, for messages */
    const char *help;           /* what --help and -h print */
    const char *shorts;         /* its own short options ("o:k:"), or NULL */
    const struct option *longs; /* its own long options, {0} ended, or NULL */
    /* Called with each of its own options; a code other than CK_OK ends
     * the parse with that code. */
    ck_code (*on)(void *ctx, int opt, const char *arg, ck_err *err);
} cli_cmd_opts;

/* Parses argv (argv[0] is the command) with getopt_long: the command's
 * own options go to o->on with ctx, the common ones (--memory, --threads,
 * --quiet, --force) to *c; -h or --help prints o->help.  On CK_OK *first
 * is the index of the first operand, or 0 when the help was printed (the
 * command then has nothing more to do).  CK_EUSAGE names an unknown
 * option or one missing its value. */
ck_code cli_getopt(const cli_cmd_opts *o, void *ctx, int argc, char **argv,
                   cli_common *c, int *first, ck_err *err);

/* Handles one of the common options; returns 1 if opt was one of them.
 * On a bad value sets *rc to CK_EUSAGE. */
int cli_common_opt(int opt, const char *arg, cli_common *c, ck_code *rc,
                   ck_err *err);

/* The default --memory: a quarter of physical memory, at least 256 MiB. */
int64_t cli_default_memory(void);

/* Starts/stops the progress bar for one job (no-op when quiet or when
 * stderr is not a terminal). */
void cli_progress_begin(cli_common *c, const char *label);
void cli_progress_end(cli_common *c);

/* Prints the results a pipeline handed back (see pipelines/exec.h). */
struct ck_results;
void cli_print_results(const struct ck_results *res, int json);

/* Appends s to buf (n bytes) as a JSON string. */
void cli_json_str(char *buf, size_t n, const char *s);

/* Completes json (the text of a pipeline up to and including its "steps"
 * list, without the closing brace) with outputs - step 'step' to out, or
 * printed when out is NULL - then runs it and prints what it prints.
 * Errors name the command (label), not the generated file. */
ck_code cli_run_onestep(const char *label, const char *step, const char *json,
                        const char *out, cli_common *c, int print_json,
                        ck_err *err);

/* Parses pipeline text doc and runs it; results of its "print" list go
 * to *res (the caller releases them).  Errors name label. */
ck_code cli_run_doc(const char *label, const char *doc, cli_common *c,
                    struct ck_results *res, ck_err *err);

/* Prints usage text for a command to stdout. */
typedef struct cmd_help {
    const char *usage;
    const char *text;
} cmd_help;

ck_code cmd_info(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_copy(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_gen(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_verify(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_run(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_plan(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_reduce(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_histogram(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_svd(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_glm_fit(int argc, char **argv, cli_common *c, ck_err *err);
ck_code cmd_glm_predict(int argc, char **argv, cli_common *c, ck_err *err);
/* Any pipeline op as a command (argv[0] is the op's name). */
ck_code cmd_op(int argc, char **argv, cli_common *c, ck_err *err);

#endif
