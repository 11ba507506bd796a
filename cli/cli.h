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
    const char *backend;   /* --backend, NULL: the pipeline's, or auto */
    ck_progress *progress; /* NULL unless stderr is a terminal */
    int zarr_format;       /* --zarr-format; 0: the default */
    int raw;               /* --raw: no CF decoding */
    const char *cmdline;   /* the command line, for outputs' history */
    int shards_ndim;       /* --shards */
    int64_t shards[32];
    int resume;         /* --resume */
    int64_t gpu_memory; /* --gpu-memory, bytes; 0: the device's */
} cli_common;

/* Option values of --zarr-format and --shards, which every command that
 * writes takes (those that compute through the common table, copy and gen
 * in their own); cli_common_opt stores them. */
enum {
    CLI_OPT_ZARR_FORMAT = 0x200,
    CLI_OPT_SHARDS = 0x201,
    CLI_OPT_RAW = 0x202,
    CLI_OPT_RESUME = 0x203,
    CLI_OPT_GPU_MEMORY = 0x204
};

/* The help line of --gpu-memory, which commands that compute take. */
#define CLI_HELP_GPU_MEMORY                                                    \
    "  --gpu-memory SIZE  under --backend cuda: the most device memory to\n"   \
    "                     hold at once (default: 90% of what is free)\n"

/* The help line of --resume (commands that write outputs). */
#define CLI_HELP_RESUME                                                        \
    "  --resume           go on with a run of the same command that was\n"     \
    "                     killed: keep the chunks it wrote, compute the\n"     \
    "                     rest (see chunkctl(1), RESUMING)\n"

/* The help line of --raw, which commands that compute take. */
#define CLI_HELP_RAW                                                           \
    "  --raw              no CF decoding of inputs (_FillValue,\n"             \
    "                     missing_value, scale_factor, add_offset); see\n"     \
    "                     chunkctl-pipeline(5)\n"

/* The help lines of --zarr-format and --shards. */
#define CLI_HELP_ZARR                                                          \
    "  --zarr-format 2|3  the Zarr version of a new Zarr output (default: "    \
    "2)\n"                                                                     \
    "  --shards N,N,...   zarr v3: chunks stored in shards of this shape (a\n" \
    "                     multiple of the chunk shape), one file per shard\n"

/* A command's options, for cli_getopt.  Its own option values (the 'val'
 * of each struct option, and its short letters) must not be M, T, q, f,
 * h, B or v: those are the common options'. */
typedef struct cli_cmd_opts {
    const char *name;           /* the command, for messages */
    const char *help;           /* what --help and -h print */
    const char *shorts;         /* its own short options ("o:k:"), or NULL */
    const struct option *longs; /* its own long options, {0} ended, or NULL */
    /* Called with each of its own options; a code other than CK_OK ends
     * the parse with that code. */
    ck_code (*on)(void *ctx, int opt, const char *arg, ck_err *err);
    /* 1 for a command that computes: it takes --backend and --verbose
     * too (common options, B and v) */
    int computes;
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

/* Sets *dst to -o's arg; CK_EUSAGE naming both when -o came before (a
 * script's second -o would otherwise win silently). */
ck_code cli_set_output(const char **dst, const char *arg, const char *cmd,
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
/* An array step's values as NumPy's str() prints them (cli/ndprint.c). */
struct ck_result;
void cli_print_ndarray(const struct ck_result *r);
/* A printed result's number of elements. */
int64_t cli_result_count(const struct ck_result *r);

/* printf arguments for "%.*s%s" that show what a user typed in a message
 * of ck_err's bounded length: at most CLI_SHOW_MAX bytes of s (cut at a
 * UTF-8 character's start), then "..." when there is more. */
enum { CLI_SHOW_MAX = 64 };
#define CLI_SHOW(s) cli_show_len(s), (s), cli_show_more(s)
int cli_show_len(const char *s);
const char *cli_show_more(const char *s);

/* Writes s to stdout as a JSON string. */
void cli_print_json_str(const char *s);

/* A one-step pipeline (what reduce, histogram, svd, glm-fit, glm-predict
 * and every op as a command run), built as a cJSON tree for
 * ck_plan_build, never as text:
 *   {"inputs": {NAME: TARGET, ...},
 *    "steps": [{"name": ..., "op": ..., "args": [...], KEY: VALUE, ...}],
 *    "outputs": {RESULT: TARGET, ...}, "print": [RESULT, ...]}
 * The cli_step_* calls that add to it cannot fail: an allocation that
 * does is remembered and reported by cli_step_run as CK_ENOMEM. */
struct cJSON;
typedef struct cli_step {
    struct cJSON *doc, *inputs, *step, *args, *outputs, *print;
    int oom; /* an addition failed for want of memory */
} cli_step;

/* Starts {"inputs": {}, "steps": [{"name": name, "op": op, "args": []}],
 * "outputs": {}}.  cli_step_release(s) after, whatever this returns. */
ck_code cli_step_init(cli_step *s, const char *name, const char *op,
                      ck_err *err);
void cli_step_release(cli_step *s);
/* Adds the input name: target and, when arg, name to the step's args. */
void cli_step_input(cli_step *s, const char *name, const char *target, int arg);
/* Appends the number written as text to the step's args (a float to
 * NumPy's promotion when written with a fraction or exponent). */
void cli_step_arg_num(cli_step *s, const char *text);
/* Sets the step's key to item, which it takes (NULL: out of memory),
 * replacing an earlier value: the option given last counts.  Not for
 * "name", "op" or "args", which the calls above own. */
void cli_step_key(cli_step *s, const char *key, struct cJSON *item);
/* 1 if the step has the key already. */
int cli_step_has_key(const cli_step *s, const char *key);
/* Writes the step's result (its name, or "name.part") to target. */
void cli_step_output(cli_step *s, const char *result, const char *target);
/* Hands the step's result back to be printed. */
void cli_step_print(cli_step *s, const char *result);

/* Plans s with CK_PLAN_ONESTEP (errors name label, the command, and no
 * place in a file) and runs it; results of its "print" list go to *res
 * (the caller releases them). */
ck_code cli_step_run(cli_step *s, const char *label, cli_common *c,
                     struct ck_results *res, ck_err *err);

/* Writes result to out (refused as "label: -o: a path of ..." when too
 * long), or prints it when out is NULL (as JSON with print_json), running
 * s as cli_step_run does. */
ck_code cli_run_onestep(cli_step *s, const char *label, const char *result,
                        const char *out, cli_common *c, int print_json,
                        ck_err *err);

/* CK_EUSAGE "label: what: a path of N bytes (at most M)" when path is too
 * long for a plan to hold, naming what the user gave ("SRC", "-o"). */
ck_code cli_check_path(const char *label, const char *what, const char *path,
                       ck_err *err);

/* ck_target_split into buffers sized from target (*path and *dataset are
 * malloc'd; the caller frees them, also on error). */
ck_code cli_target_split(const char *target, char **path, char **dataset,
                         ck_err *err);

/* "path:dataset/leaf", malloc'd, or NULL when out of memory. */
char *cli_target_join(const char *path, const char *dataset, const char *leaf);

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
ck_code cmd_devices(int argc, char **argv, cli_common *c, ck_err *err);
/* Any pipeline op as a command (argv[0] is the op's name). */
ck_code cmd_op(int argc, char **argv, cli_common *c, ck_err *err);

#endif
