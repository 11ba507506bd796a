/*
 * pipelines/op_kernel.c - the kernel op: the user's C function applied to
 * each chunk of the result, as dask's map_blocks applies a function (or a
 * CuPy RawKernel) block by block.
 *
 * Arguments are aligned with the result chunk by chunk, broadcasting from
 * the last axis: an axis of an argument is either the result's (the same
 * length: the chunk's range of it) or of length 1 (its one element), so a
 * 1-D y of length N beside an M x N x gets the part of y under the
 * chunk's columns.  Numbers among the args are the kernel's parameters.
 * The source is compiled when the pipeline is planned (ops/kernel.h), so
 * a kernel that does not compile stops the run before any data is read.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/ck_log.h"
#include "ops/kernel.h"
#include "pipelines/exec_impl.h"
#include "pipelines/optab.h"
#include "pipelines/plan_impl.h"
#include "pipelines/stream.h"

/* A file named in a step: relative to the pipeline file's folder (or the
 * working directory for a one-step command, whose 'path' is no file). */
static void resolve(const char *path, const char *where, const char *f,
                    char *out, size_t n)
{
    const char *slash = strrchr(path, '/');

    if (f[0] == '/' || !where[0] || !slash)
        /* "./" before a bare name: dlopen would look "k.so" up on the
         * library path, not in the pipeline's folder */
        snprintf(out, n, "%s%s", strchr(f, '/') ? "" : "./", f);
    else
        snprintf(out, n, "%.*s/%s", (int)(slash - path), path, f);
}

/* Whether file f is CUDA C (by its name: .cu). */
static int is_cuda(const char *f)
{
    size_t n = strlen(f);
    return n > 3 && strcmp(f + n - 3, ".cu") == 0;
}

/* "source": a file or a list of them, at most one C (or "library") and
 * one CUDA C (.cu); *c and *cu get theirs (NULL: none). */
static ck_code sources(const char *path, const char *where, const cJSON *src,
                       const cJSON *lib, const char **c, const char **cu,
                       ck_err *err)
{
    const cJSON *one;

    *c = cJSON_IsString(lib) ? lib->valuestring : NULL;
    *cu = NULL;
    if (lib && !cJSON_IsString(lib))
        return ck_plan_bad(err, path, where,
                           "library: expected a shared object's path");
    if (src && !cJSON_IsString(src) && !cJSON_IsArray(src))
        return ck_plan_bad(err, path, where,
                           "source: expected a file or a list of files");
    for (int k = 0;
         src && k < (cJSON_IsArray(src) ? cJSON_GetArraySize(src) : 1); k++) {
        one = cJSON_IsArray(src) ? cJSON_GetArrayItem(src, k) : src;
        if (!cJSON_IsString(one) || !one->valuestring[0])
            return ck_plan_bad(err, path, where,
                               "source[%d]: expected a file's path", k);
        const char **slot = is_cuda(one->valuestring) ? cu : c;
        if (slot == c && *c && cJSON_IsString(lib))
            return ck_plan_bad(err, path, where,
                               "give a C \"source\" or a \"library\" (a "
                               "shared object), one of them");
        if (*slot)
            return ck_plan_bad(
                err, path, where,
                "source: two %s versions (%s and %s); give one C (or "
                "\"library\") and one CUDA C (.cu)",
                slot == cu ? "CUDA C" : "C", *slot, one->valuestring);
        *slot = one->valuestring;
    }
    if (!*c && !*cu)
        return ck_plan_bad(err, path, where,
                           "give \"source\" (C source, or CUDA C in a .cu "
                           "file, or a list of both) or \"library\" (a "
                           "shared object)");
    return CK_OK;
}

CK_PLAN_PARSE_FN(kernel)
{
    const cJSON *src = cJSON_GetObjectItem(step, "source");
    const cJSON *lib = cJSON_GetObjectItem(step, "library");
    const cJSON *entry = cJSON_GetObjectItem(step, "entry");
    const cJSON *dt = cJSON_GetObjectItem(step, "dtype");
    const cJSON *shape = cJSON_GetObjectItem(step, "shape");
    const cJSON *chunks = cJSON_GetObjectItem(step, "chunks");
    const cJSON *block = cJSON_GetObjectItem(step, "block");
    const ck_node *first = NULL;
    const char *c_file, *cu_file;
    char file[PATH_MAX], what[600], a[128], b[128];
    int nd;

    (void)sub;
    for (int k = 0; k < n->nargs && !first; k++)
        first = ck_plan_array_arg(p, n, k);
    if (!first)
        return ck_plan_bad(err, path, where, "needs at least one array");
    if (!cJSON_IsString(entry) || !entry->valuestring[0])
        return ck_plan_bad(err, path, where,
                           "needs \"entry\", the kernel function's name");
    CK_TRY(sources(path, where, src, lib, &c_file, &cu_file, err));
    if (strlen(entry->valuestring) >= sizeof n->entry)
        return ck_plan_bad(err, path, where, "entry: at most %d characters",
                           (int)sizeof n->entry - 1);
    snprintf(n->entry, sizeof n->entry, "%s", entry->valuestring);
    n->block = 256;
    if (block &&
        (!cJSON_IsNumber(block) || block->valuedouble < 32 ||
         block->valuedouble > 1024 || (int)block->valuedouble % 32 != 0))
        return ck_plan_bad(err, path, where,
                           "block: expected threads per block, a multiple "
                           "of 32 from 32 to 1024");
    if (block)
        n->block = (int)block->valuedouble;
    /* the result: the first array's shape and chunks unless given */
    n->dtype = first->dtype;
    if (dt && (!cJSON_IsString(dt) ||
               ck_dtype_parse(dt->valuestring, &n->dtype, NULL) != CK_OK))
        return ck_plan_bad(err, path, where, "dtype: expected a dtype name");
    n->ndim = first->ndim;
    memcpy(n->shape, first->shape, sizeof n->shape);
    memcpy(n->chunks, first->chunks, sizeof n->chunks);
    if (shape) {
        CK_TRY(ck_plan_int_list(path, where, "shape", shape, n->shape, &n->ndim,
                                0, err));
        ck_plan_first_chunks(p, n);
    }
    if (chunks) {
        CK_TRY(ck_plan_int_list(path, where, "chunks", chunks, n->chunks, &nd,
                                0, err));
        if (nd != n->ndim)
            return ck_plan_bad(err, path, where,
                               "chunks has %d values for a %d-D result", nd,
                               n->ndim);
        for (int d = 0; d < nd; d++) /* as rechunk's */
            if (n->chunks[d] < 1)
                return ck_plan_bad(err, path, where, "chunks[%d]: must be >= 1",
                                   d);
    }
    for (int d = 0; d < n->ndim; d++)
        if (n->chunks[d] < 1)
            n->chunks[d] = 1;
    for (int k = 0; k < n->nargs; k++) {
        const ck_node *m = ck_plan_array_arg(p, n, k);
        int lead = n->ndim - (m ? m->ndim : 0), ok = lead >= 0;
        for (int d = 0; m && ok && d < m->ndim; d++)
            ok = m->shape[d] == 1 || m->shape[d] == n->shape[lead + d];
        if (m && !ok)
            return ck_plan_bad(
                err, path, where,
                "args[%d]: shape %s cannot be aligned chunk by chunk with the "
                "result's %s (each axis the result's length or 1, counted "
                "from the last)",
                k, ck_plan_shape_str(m->ndim, m->shape, a, sizeof a),
                ck_plan_shape_str(n->ndim, n->shape, b, sizeof b));
    }
    if (where[0])
        snprintf(what, sizeof what, "%s: %s", path, where);
    else
        snprintf(what, sizeof what, "%s", path);
    /* the CUDA C version is compiled when the device is known (its
     * architecture), before any data is read; the C one now */
    n->source[0] = '\0';
    if (cu_file) {
        resolve(path, where, cu_file, n->source, sizeof n->source);
        if (access(n->source, R_OK) != 0)
            return ck_plan_bad(err, path, where, "source %s: %s", n->source,
                               strerror(errno));
    }
    if (!c_file)
        return CK_OK;
    resolve(path, where, c_file, file, sizeof file);
    return ck_kernel_open(what, lib ? NULL : file, lib ? file : NULL,
                          entry->valuestring, &n->kernel, err);
}

/* Argument m's block under the result's box: its axes of length 1 whole,
 * the others the box's range. */
static void aligned(const ck_node *nd, const ck_node *m, const int64_t *start,
                    const int64_t *shape, int64_t *ast, int64_t *ash)
{
    int lead = nd->ndim - m->ndim;

    for (int d = 0; d < m->ndim; d++) {
        int one = m->shape[d] == 1 && nd->shape[lead + d] != 1;
        ast[d] = one ? 0 : start[lead + d];
        ash[d] = one ? 1 : shape[lead + d];
    }
}

/* A C kernel writes its result into a block of the arena with a guard
 * zone of KGUARD bytes of KGUARD_BYTE on each side, checked after each
 * call: a write just before the block (z[-1]) or a little past its end
 * corrupted the heap, and glibc aborted later in free(), outside the
 * guarded call, with no word of the kernel and the temporaries left. */
enum { KGUARD = 4096, KGUARD_BYTE = 0xa5 };

/* Each array argument's block (at most the box's elements) and, one at a
 * time, its own scratch; the result's block between its guards. */
size_t ck_exec_kernel_bytes(const xrun *r, int i, size_t n, int known,
                            int aligned_)
{
    const ck_node *nd = &r->p->node[i];
    size_t b = ck_exec_al(2 * (size_t)KGUARD + n * ck_dtype_size(nd->dtype));
    size_t most = 0;

    (void)known, (void)aligned_;
    for (int k = 0; k < nd->nargs; k++) {
        if (nd->arg[k] < 0)
            continue;
        size_t e = ck_exec_eval_bytes(r, nd->arg[k], n);
        b += ck_exec_al(n * ck_dtype_size(r->p->node[nd->arg[k]].dtype));
        most = e > most ? e : most;
    }
    return b + most + 256;
}

/* Whether the n bytes at p all still hold the guard pattern. */
static int intact(const unsigned char *p, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (p[k] != KGUARD_BYTE)
            return 0;
    return 1;
}

static void describe(ck_kernel_array *v, void *data, ck_dtype t, int ndim,
                     const int64_t *start, const int64_t *shape,
                     const int64_t *full)
{
    int64_t s = 1;

    memset(v, 0, sizeof *v);
    v->data = data;
    v->dtype = (int)t;
    v->ndim = ndim;
    for (int d = ndim - 1; d >= 0; d--) {
        v->shape[d] = shape[d];
        v->origin[d] = start[d];
        v->full_shape[d] = full[d];
        v->strides[d] = s;
        s *= shape[d];
    }
}

/* A kernel's CUDA C text (at most 16 MiB; freed by the caller). */
static ck_code slurp(const char *step, const char *path, char **out,
                     ck_err *err)
{
    FILE *f;
    long n = -1;
    char *text = NULL;
    int e;

    errno = 0; /* a short read sets none */
    if ((f = fopen(path, "rb")) && fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n > (16 << 20)) {
        fclose(f);
        return ck_err_set(err, CK_EUSAGE, "kernel step '%s': %s is over 16 MiB",
                          step, path);
    }
    if (f && n >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)n + 1)) &&
        fread(text, 1, (size_t)n, f) == (size_t)n) {
        text[n] = '\0';
        fclose(f);
        *out = text;
        return CK_OK;
    }
    e = errno;
    free(text);
    if (f)
        fclose(f);
    return ck_err_set(err, CK_EIO, "kernel step '%s': cannot read %s: %s", step,
                      path, e ? strerror(e) : "short read");
}

ck_code ck_exec_kernels_load(xrun *r, ck_err *err)
{
    const ck_backend *t = r->be.table;

    if (!t->kernel_load)
        return CK_OK;
    for (int i = 0; i < r->p->n; i++) {
        const ck_node *nd = &r->p->node[i];
        char what[CK_NAME_MAX + 32], *src = NULL;
        ck_code rc;
        if (nd->kind != CK_NODE_KERNEL || !nd->source[0])
            continue;
        snprintf(what, sizeof what, "kernel step '%s'", nd->name);
        CK_TRY(slurp(nd->name, nd->source, &src, err));
        ck_kernel_src ks = {what, nd->source, src, ck_kernel_contract(),
                            nd->entry};
        rc = t->kernel_load(r->be.ctx, &ks, &r->x[i].dev_kernel, err);
        free(src);
        CK_TRY(rc);
        ck_log(CK_LOG_DEBUG, "kernel step '%s' runs %s on the %s device",
               nd->name,
               strrchr(nd->source, '/') ? strrchr(nd->source, '/') + 1
                                        : nd->source,
               t->name);
    }
    return CK_OK;
}

void ck_exec_kernels_free(xrun *r)
{
    for (int i = 0; i < r->p->n; i++)
        if (r->x[i].dev_kernel && r->be.table->kernel_free)
            r->be.table->kernel_free(r->be.ctx, r->x[i].dev_kernel);
}

/* ---- a C kernel that crashes ----
 * A fault inside a user's kernel (a wild pointer: SIGSEGV, SIGBUS; a
 * trap, SIGILL; SIGFPE; abort() or a failed assert, SIGABRT) on a worker
 * thread that is calling one is named on one line with the step and the
 * chunk, the run's temporaries are removed (as for an interrupt), and
 * chunkctl dies of the signal; a fault anywhere else goes to the handler
 * there was before (the default, or a sanitizer's).  A kernel that calls
 * exit() is named the same way, and chunkctl exits 1: it ended with 0 and
 * its temporary left behind. */
static _Thread_local const char *guard_msg; /* armed while calling */
enum { NGUARD = 5 };
static struct sigaction guard_old[NGUARD];
static const int guard_sig[NGUARD] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void say(const char *s)
{
    ssize_t w = write(2, s, strlen(s));
    (void)w;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    int k = 0;

    (void)uc;
    while (k < NGUARD - 1 && guard_sig[k] != sig)
        k++;
    /* sent by another process (kill): not the kernel's doing */
    int sent = si->si_code <= 0 && si->si_pid != getpid();
    if (!guard_msg || sent) { /* not ours: as it would have been */
        sigaction(sig, &guard_old[k], NULL);
        if (si->si_code <= 0) /* sent (kill, raise, abort): again */
            raise(sig);
        return; /* a fault: again, on the faulting instruction */
    }
    say(guard_msg);
    say(sig == SIGSEGV  ? "SIGSEGV, a bad memory access"
        : sig == SIGBUS ? "SIGBUS, a bad memory access"
        : sig == SIGILL ? "SIGILL, an illegal instruction or a trap"
        : sig == SIGFPE ? "SIGFPE, an arithmetic fault"
                        : "SIGABRT, abort() or a failed assert");
    say("); no output is written\n");
    ck_stream_abandon();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Kernel calls under way, in all threads. */
static int armed;

/* exit() runs this in the thread that called it */
static void on_exit_call(void)
{
    if (!guard_msg)
        return;
    say(guard_msg);
    say("it called exit()); no output is written\n");
    ck_stream_abandon();
    _exit(1);
}

/* Run after on_exit_call: exit() takes its handlers one at a time, so a
 * second thread whose kernel called exit() too went on through the rest
 * and ended the process with its status (0) while the first was still
 * cleaning up.  It waits for the first's _exit instead. */
static void exit_gate(void)
{
    if (__atomic_load_n(&armed, __ATOMIC_SEQ_CST) > 0)
        for (;;)
            pause();
}

static void guard_install(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int k = 0; k < NGUARD; k++)
        sigaction(guard_sig[k], &sa, &guard_old[k]);
    atexit(exit_gate);
    atexit(on_exit_call);
}

ck_code ck_exec_kernel_eval(xrun *r, int i, const int64_t *start,
                            const int64_t *shape, void *dst, ck_arena *a,
                            const memo *mm, ck_err *err)
{
    const ck_node *nd = &r->p->node[i];
    ck_kernel_array out, args[CK_MAX_ARGS];
    double params[CK_MAX_ARGS];
    int na = 0, np = 0, rc;
    char at[160];

    (void)mm;
    if (ck_exec_nelem(nd->ndim, shape) == 0)
        return CK_OK;
    for (int k = 0; k < nd->nargs; k++) {
        if (nd->arg[k] < 0) {
            params[np++] = nd->scalar[k];
            continue;
        }
        const ck_node *m = &r->p->node[nd->arg[k]];
        int64_t ast[CK_MAX_DIMS], ash[CK_MAX_DIMS];
        aligned(nd, m, start, shape, ast, ash);
        void *v = ck_arena_alloc(a, (size_t)ck_exec_nelem(m->ndim, ash) *
                                        ck_dtype_size(m->dtype));
        if (!v)
            return ck_exec_no_room(err);
        size_t mark = a->used;
        CK_TRY(ck_exec_eval(r, nd->arg[k], ast, ash, v, a, err));
        a->used = mark;
        describe(&args[na++], v, m->dtype, m->ndim, ast, ash, m->shape);
    }
    describe(&out, dst, nd->dtype, nd->ndim, start, shape, nd->shape);
    if (r->x[i].dev_kernel) {
        ck_coords_str(nd->ndim, start, at, sizeof at);
        ck_kernel_run_args ka = {
            r->x[i].dev_kernel, &out,     args, na, params, np,
            nd->block,          nd->name, at};
        return r->be.table->kernel_run(r->be.ctx, &ka, err);
    }
    /* the block between its guards, zeroed: an element the kernel leaves
     * alone is 0, not what the arena held before (the contract says so) */
    size_t ob =
        (size_t)ck_exec_nelem(nd->ndim, shape) * ck_dtype_size(nd->dtype);
    unsigned char *g = ck_arena_alloc(a, 2 * (size_t)KGUARD + ob);
    if (!g)
        return ck_exec_no_room(err);
    memset(g, KGUARD_BYTE, KGUARD);
    memset(g + KGUARD, 0, ob);
    memset(g + KGUARD + ob, KGUARD_BYTE, KGUARD);
    out.data = g + KGUARD;
    char msg[CK_NAME_MAX + 240];
    ck_coords_str(nd->ndim, start, at, sizeof at);
    snprintf(msg, sizeof msg,
             "chunkctl: kernel step '%s' crashed on the chunk at %s (",
             nd->name, at);
    pthread_once(&guard_once, guard_install);
    guard_msg = msg;
    __atomic_add_fetch(&armed, 1, __ATOMIC_SEQ_CST);
    rc = ck_kernel_call(nd->kernel, &out, args, na, params, np);
    __atomic_sub_fetch(&armed, 1, __ATOMIC_SEQ_CST);
    guard_msg = NULL;
    /* checked here, on the calling thread, before the arena is reused or
     * anything is freed */
    int before = !intact(g, KGUARD), past = !intact(g + KGUARD + ob, KGUARD);
    if (before || past)
        return ck_err_set(err, CK_EFORMAT,
                          "kernel step '%s': the kernel wrote outside its "
                          "output block (%s) for the chunk at %s",
                          nd->name,
                          before && past ? "before it and past its end"
                          : before       ? "before it"
                                         : "past its end",
                          at);
    if (rc != 0) {
        return ck_err_set(err, CK_EFORMAT,
                          "%s: the kernel returned %d for the chunk at %s",
                          nd->name, rc, at);
    }
    memcpy(dst, g + KGUARD, ob);
    return CK_OK;
}
