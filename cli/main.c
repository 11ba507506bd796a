/*
 * cli/main.c - argv -> command table -> one call into pipelines/.
 * The only place that prints errors and calls exit: 0 for success, 1 for a
 * runtime or data error, 2 for a usage error, 3 for an internal fault.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/ck_comm.h"
#include "base/ck_config.h"
#include "base/ck_log.h"
#include "base/ck_mem.h"
#include "base/ck_thread.h"
#include "cli/cli.h"
#include "pipelines/exec.h"
#include "pipelines/plan.h"
#include "pipelines/stream.h"

struct cmd {
    const char *name;
    ck_code (*run)(int argc, char **argv, cli_common *c, ck_err *err);
    const char *summary;
};

static const struct cmd commands[] = {
    {"info", cmd_info, "list the arrays in an HDF5 file or Zarr store"},
    {"copy", cmd_copy, "convert HDF5 <-> Zarr, rechunk, recompress, retype"},
    {"gen", cmd_gen, "write a reproducible random array"},
    {"verify", cmd_verify, "read every chunk and report damaged ones"},
    {"run", cmd_run, "run a JSON pipeline out of core"},
    {"plan", cmd_plan, "validate a pipeline and show its plan"},
    {"reduce", cmd_reduce, "one reduction (sum, mean, std, ...) of an array"},
    {"histogram", cmd_histogram, "numpy.histogram of an array"},
    {"svd", cmd_svd, "SVD of a 2-D array: exact (TSQR) or randomized"},
    {"matmul", cmd_op, "a @ b of 2-D arrays out of core (BLAS tiles)"},
    {"glm-fit", cmd_glm_fit, "fit a GLM (logistic, normal, poisson)"},
    {"glm-predict", cmd_glm_predict, "predictions of a fitted GLM"},
    {"devices", cmd_devices, "list the GPUs the CUDA backend can use"},
};

/* 0, or 1 with a line when what went to standard output was not written
 * (a full disk, a closed pipe's reader): as every command's output. */
static int stdout_done(void)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return 0;
    fprintf(stderr, "chunkctl: writing to standard output: %s\n",
            strerror(errno));
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: chunkctl [--version] [--help] COMMAND [ARGS]\n\n"
               "Batch work on chunked arrays in HDF5 files and Zarr stores, "
               "out of core.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\npipeline ops (chunkctl-pipeline(5)), each also a command, "
               "chunkctl OP ARGS...:\n");
    ck_plan_ops_help(f);
    fprintf(f, "\nArrays are named PATH[:DATASET], e.g. data.h5:/group/x, "
               "store.zarr.\n"
               "Run 'chunkctl add --help' for how an op's args and keys are "
               "given as a command.\n"
               "Run 'chunkctl COMMAND --help' or 'man chunkctl-COMMAND' for "
               "details.\n"
               "Exit status: 0 success, 1 runtime or data error, 2 usage "
               "error,\n3 internal fault (a bug in chunkctl).\n");
}

int cli_common_opt(int opt, const char *arg, cli_common *c, ck_code *rc,
                   ck_err *err)
{
    char *end;
    long v;

    switch (opt) {
    case 'M':
        if ((*rc = ck_parse_size(arg, &c->memory, err)) != CK_OK)
            ck_err_prefix(err, "--memory");
        else if (c->memory < ((int64_t)32 << 20))
            *rc = ck_err_set(err, CK_EUSAGE,
                             "--memory %s: at least 32M is needed", arg);
        return 1;
    case 'T':
        errno = 0;
        v = strtol(arg, &end, 10);
        if (errno || end == arg || *end || v < 0 || v > 256)
            *rc = ck_err_set(err, CK_EUSAGE,
                             "--threads '%s': expected 0 (all cores) to 256",
                             arg);
        else
            c->threads = (int)v;
        return 1;
    case 'q':
        c->quiet = 1;
        ck_log_set_level(CK_LOG_WARN);
        return 1;
    case 'f':
        c->force = 1;
        return 1;
    case 'B':
        c->backend = arg;
        return 1;
    case 'v': /* the log level is the whole of it */
        ck_log_set_level(CK_LOG_DEBUG);
        return 1;
    case CLI_OPT_ZARR_FORMAT:
        if (strcmp(arg, "2") == 0 || strcmp(arg, "3") == 0)
            c->zarr_format = arg[0] - '0';
        else
            *rc = ck_err_set(err, CK_EUSAGE,
                             "--zarr-format '%.*s%s': expected 2 or 3",
                             CLI_SHOW(arg));
        return 1;
    case CLI_OPT_RAW:
        c->raw = 1;
        return 1;
    case CLI_OPT_RESUME:
        c->resume = 1;
        return 1;
    case CLI_OPT_GPU_MEMORY:
        if ((*rc = ck_parse_size(arg, &c->gpu_memory, err)) != CK_OK)
            ck_err_prefix(err, "--gpu-memory");
        else if (c->gpu_memory < 1)
            *rc = ck_err_set(err, CK_EUSAGE,
                             "--gpu-memory '%s': expected a size above 0", arg);
        return 1;
    case CLI_OPT_SHARDS:
        *rc = ck_parse_ints(arg, "--shards", c->shards, CK_MAX_DIMS,
                            &c->shards_ndim, err);
        return 1;
    default:
        return 0;
    }
}

int64_t cli_default_memory(void)
{
    int64_t m = ck_phys_mem() / 4;
    return m < ((int64_t)256 << 20) ? (int64_t)256 << 20 : m;
}

/* Ctrl-C or a kill: every job stops at its next chunk and the run unwinds,
 * closing its outputs, which removes their temporaries once no worker
 * writes into them; main() then dies of the same signal, so the caller
 * sees how we ended.  Whatever does not unwind within UNWIND_S seconds (a
 * long library call), or a second signal, gets the old way: the
 * temporaries removed from the handler, and death at once.  Outputs never
 * appear under their final name before they are complete, so this only
 * tidies up. */
enum { UNWIND_S = 3 };
static volatile sig_atomic_t caught;
/* Under mpirun the ranks would wait for each other's messages instead of
 * unwinding (the launcher signals them all, or kills one): they take the
 * old way at once. */
static volatile sig_atomic_t ranks = 1;

static void die_of(int sig)
{
    ck_stream_abandon();
    signal(sig, SIG_DFL);
    raise(sig);
}

static volatile sig_atomic_t late; /* signals after the run's end */

static void on_signal(int sig)
{
    if (sig != SIGALRM && !caught && ranks == 1) {
        /* The outputs in place (ck_finish): the run is over but for
         * closing; a second signal ends it at once */
        if (!ck_interrupt()) {
            if (late++)
                die_of(sig);
            return;
        }
        caught = sig;
        alarm(UNWIND_S);
        return;
    }
    die_of(caught ? caught : sig);
}

/* Stops the run cleanly on sig, unless sig was ignored when chunkctl
 * started: nohup's SIGHUP, a background job's SIGINT stay ignored, as the
 * shell meant. */
static void catch_signal(int sig)
{
    struct sigaction old;

    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
        return;
    signal(sig, on_signal);
}

/* Starts this program again with env (NULL: the current environment).
 * By its own path, not /proc/self/exe: the process's name (ps, pkill,
 * top) is the file name exec is given.  Returns only when it failed. */
static void exec_self(char **argv, char **env)
{
    static char self[4096]; /* static: usable before the allocator is */
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

    if (n <= 0 || (size_t)n >= sizeof self - 1)
        return;
    self[n] = '\0';
    if (env)
        execve(self, argv, env);
    else
        execv(self, argv);
}

/* glibc's malloc keeps, in each thread's cache (tcache), the small
 * remainders that posix_memalign splits off a block, and such a remainder
 * keeps the block from merging when it is freed.  c-blosc allocates and
 * frees a two-block buffer that way on every decode, so each decoding
 * thread's heap grew by about seven of them (14 MiB for zarr-python's
 * 1 MiB blocks) that --memory did not see: svd of a blosc Zarr store
 * peaked at 61.6 MB under --memory 48M, and 41.6 MB with the cache off, at
 * the same speed.  glibc reads that setting only when a process starts, so
 * chunkctl starts again with it, once, before any library has loaded its
 * state (.preinit_array runs before their constructors).  A user's own
 * glibc.malloc.tcache_count is kept.  Sanitizer builds bring their own
 * allocator. */
#if defined(__SANITIZE_ADDRESS__)
#define CK_GLIBC_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CK_GLIBC_MALLOC 0
#endif
#endif
#ifndef CK_GLIBC_MALLOC
#define CK_GLIBC_MALLOC 1
#endif

#if CK_GLIBC_MALLOC
#define TUNABLES "GLIBC_TUNABLES="
static void restart_malloc_tuned(int argc, char **argv, char **envp)
{
    /* static: no allocator is used before the exec */
    static char tun[4096];
    static char *env[8192];
    const char *old = NULL;
    size_t n = 0, at = 0;

    if (argc < 2 || strcmp(argv[1], "--version") == 0 ||
        strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0)
        return; /* prints and exits: not worth a second start (~25 ms) */
    for (; envp && envp[n]; n++)
        if (strncmp(envp[n], TUNABLES, sizeof TUNABLES - 1) == 0) {
            old = envp[n] + sizeof TUNABLES - 1;
            at = n + 1;
        }
    if ((old && strstr(old, "glibc.malloc.tcache_count")) ||
        n + 2 > sizeof env / sizeof env[0] ||
        (size_t)snprintf(tun, sizeof tun,
                         TUNABLES "%s%sglibc.malloc.tcache_count=0",
                         old ? old : "", old && *old ? ":" : "") >= sizeof tun)
        return;
    memcpy(env, envp, n * sizeof *env);
    if (at)
        env[at - 1] = tun;
    else
        env[n++] = tun;
    env[n] = NULL;
    exec_self(argv, env);
    /* exec failed: carry on as we are */
}
__attribute__((section(".preinit_array"), used)) static void (*preinit_malloc)(
    int, char **, char **) = restart_malloc_tuned;
#endif

/* A compute library may read a variable only when it loads (OpenBLAS its
 * kernel set): when it would do better with one set and the user set
 * none, set it and start again (once: it is set then). */
static void tune_blas(char **argv)
{
    const char *name, *value;

    if (!ck_exec_restart_env(&name, &value) || setenv(name, value, 1) != 0)
        return;
    exec_self(argv, NULL);
    unsetenv(name); /* exec failed: carry on as we are */
}

/* The command line as a shell would take it back, for outputs' history
 * attribute: "chunkctl" and each argument, quoted when it needs to be.
 * NULL when out of memory (the history then says "chunkctl run"). */
static char *cmdline(int argc, char **argv)
{
    size_t n = 16;
    char *s, *o;

    for (int i = 1; i < argc; i++)
        n += 4 * strlen(argv[i]) + 3;
    if (!(s = o = malloc(n)))
        return NULL;
    o += sprintf(o, "chunkctl");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int plain = *a != '\0';
        for (const char *c = a; *c && plain; c++)
            plain =
                strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789_-+=.,:/@%^",
                       *c) != NULL;
        *o++ = ' ';
        if (plain) {
            o += sprintf(o, "%s", a);
            continue;
        }
        *o++ = '\'';
        for (const char *c = a; *c; c++) {
            if (*c == '\'') {
                memcpy(o, "'\\''", 4);
                o += 4;
            } else {
                *o++ = *c;
            }
        }
        *o++ = '\'';
    }
    *o = '\0';
    return s;
}

int main(int argc, char **argv)
{
    cli_common common = {0};
    ck_err err = {0};
    ck_code rc;
    const struct cmd *cmd = NULL;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("chunkctl %s\n", CK_VERSION);
        return stdout_done();
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return stdout_done();
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            cmd = &commands[i];
    if (!cmd && ck_plan_op_known(argv[1])) {
        static const struct cmd op_cmd = {"op", cmd_op, ""};
        cmd = &op_cmd;
    }
    if (!cmd) {
        fprintf(stderr,
                "chunkctl: unknown command '%s' (run 'chunkctl --help')\n",
                argv[1]);
        return 2;
    }
    tune_blas(argv);
    catch_signal(SIGINT);
    catch_signal(SIGTERM);
    catch_signal(SIGHUP);
    signal(SIGALRM, on_signal);
    common.memory = cli_default_memory();
    /* Under mpirun every rank runs the command on its share; rank 0 alone
     * speaks, for all of them (base/ck_comm.h). */
    rc = ck_comm_init(&argc, &argv, &err);
    ranks = ck_comm_size();
    if (rc == CK_OK && ck_comm_rank() != 0) {
        ck_log_mute(1);
        if (!freopen("/dev/null", "w", stdout))
            rc = ck_err_set(&err, CK_EIO, "rank %d: /dev/null: %s",
                            ck_comm_rank(), strerror(errno));
    }
    char *line = cmdline(argc, argv);
    common.cmdline = line;
    if (rc == CK_OK)
        rc = cmd->run(argc - 1, argv + 1, &common, &err);
    free(line);
    cli_progress_end(&common);
    if (caught) { /* the run has unwound: its temporaries are gone */
        alarm(0);
        die_of(caught);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (rc == CK_OK)
            rc = ck_err_set(&err, CK_EIO, "writing to standard output: %s",
                            strerror(errno));
    }
    if (ck_comm_size() > 1 && !ck_comm_broken())
        rc = ck_comm_agree(rc, &err);
    if (ck_comm_broken()) {
        fprintf(stderr, "chunkctl: rank %d: %s\n", ck_comm_rank(),
                err.msg[0] ? err.msg : ck_code_name(rc));
        ck_comm_abort(ck_exit_status(rc));
    }
    int rank = ck_comm_rank(), size = ck_comm_size();
    if (rc != CK_OK && rank == 0) {
        fprintf(stderr, "chunkctl: %s\n",
                err.msg[0] ? err.msg : ck_code_name(rc));
        if (rc == CK_EINTERNAL)
            fprintf(stderr,
                    "chunkctl: this is a bug in chunkctl; please report it "
                    "with the command line (chunkctl --version: %s)\n",
                    CK_VERSION);
    }
    /* Under MPI rank 0 speaks and exits for every rank: the others wait
     * until its line is out and exit 0, as a launcher ends the whole job
     * (rank 0 among it) as soon as one rank exits non-zero. */
    if (size > 1) {
        ck_err ignored = {0};
        (void)ck_comm_barrier(&ignored);
    }
    ck_comm_finalize();
    if (rank != 0)
        return 0;
    return rc != CK_OK ? ck_exit_status(rc) : 0;
}
