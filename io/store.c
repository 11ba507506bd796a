/*
 * io/store.c - the store-kind-independent half of io/store.h.
 * Resolves PATH[:DATASET], picks the store kind, names and commits
 * temporary outputs, and builds region reads and attribute copies on the
 * kinds' whole-chunk primitives.  Byte-level work on chunks is the kinds'
 * job (io/hdf5, io/zarr); codecs are io/codec.c's.
 */
#define _XOPEN_SOURCE 700
#include "io/store.h"
#include "io/oserr.h"
#include "io/store_impl.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "base/ck_comm.h"
#include "base/ck_log.h"
#include "base/ck_thread.h"
#include "io/cache.h"
#include "io/journal.h"

static int has_suffix(const char *s, const char *suf);
static int store_suffix(const char *path);

/* The ':' of target to split at (see ck_target_split), or NULL. */
static const char *split_colon(const char *target)
{
    const char *last = strrchr(target, ':'), *named = NULL, *found = NULL;
    char pre[PATH_MAX];
    struct stat st;

    if (!last || lstat(target, &st) == 0)
        return NULL;
    for (const char *c = strchr(target, ':'); c; c = strchr(c + 1, ':')) {
        size_t k = (size_t)(c - target);
        if (k == 0 || k >= sizeof pre)
            continue;
        memcpy(pre, target, k);
        pre[k] = '\0';
        if (stat(pre, &st) == 0)
            found = c;
        else if (!named && store_suffix(pre))
            named = c;
    }
    /* a new output named c:d.h5 (no part of it before a ':' exists or
     * names a store, the whole does) is that file */
    return found ? found : named ? named : store_suffix(target) ? NULL : last;
}

ck_code ck_target_split(const char *target, char *path, size_t pathn,
                        char *dataset, size_t datasetn, ck_err *err)
{
    const char *colon = split_colon(target);
    size_t plen;

    if (colon && colon[1] == '\0' && colon > target)
        return ck_err_set(err, CK_EUSAGE,
                          "'%s': no dataset name after ':' (name one, as in "
                          "%.*s:/data, or leave the ':' out)",
                          target, (int)(colon - target), target);
    plen = colon ? (size_t)(colon - target) : strlen(target);
    if (plen == 0)
        return ck_err_set(err, CK_EUSAGE, "'%s': no file name", target);
    /* (the dataset gains at most a leading '/') */
    if (plen >= pathn || (colon && strlen(colon) + 1 >= datasetn))
        return ck_err_set(err, CK_EUSAGE, "'%.*s%s': name too long", 200,
                          target, strlen(target) > 200 ? "..." : "");
    memcpy(path, target, plen);
    path[plen] = '\0';
    dataset[0] = '\0';
    if (colon) {
        /* Normalise to "/a/b": a leading '/', no trailing one. */
        snprintf(dataset, datasetn, "%s%s", colon[1] == '/' ? "" : "/",
                 colon + 1);
        size_t dl = strlen(dataset);
        while (dl > 1 && dataset[dl - 1] == '/')
            dataset[--dl] = '\0';
    }
    return CK_OK;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcasecmp(s + a - b, suf) == 0;
}

/* The kind a path's extension names (trailing '/' aside), or NONE. */
static ck_store_kind suffix_kind(const char *path)
{
    static const char *const h5[] = {".h5", ".hdf5", ".he5", ".hdf", ".nc"};
    char trimmed[PATH_MAX];
    size_t n;

    snprintf(trimmed, sizeof trimmed, "%s", path);
    n = strlen(trimmed);
    while (n > 1 && trimmed[n - 1] == '/')
        trimmed[--n] = '\0';
    if (has_suffix(trimmed, ".zarr"))
        return CK_KIND_ZARR;
    for (size_t i = 0; i < sizeof h5 / sizeof h5[0]; i++)
        if (has_suffix(trimmed, h5[i]))
            return CK_KIND_HDF5;
    return CK_KIND_NONE;
}

static int store_suffix(const char *path)
{
    return suffix_kind(path) != CK_KIND_NONE;
}

ck_store_kind ck_store_kind_guess(const char *path)
{
    if (ck_zarr_sniff(path))
        return CK_KIND_ZARR;
    if (ck_h5_sniff(path))
        return CK_KIND_HDF5;
    return suffix_kind(path);
}

static const ck_store_ops *ops_of(ck_store_kind k)
{
    return k == CK_KIND_HDF5 ? &ck_h5_ops : &ck_zarr_ops;
}

ck_code ck_store_open(const char *path, ck_store **out, ck_err *err)
{
    struct stat st;
    ck_store *s;
    ck_store_kind kind;
    ck_code rc;

    if (stat(path, &st) != 0)
        return ck_os_fail(err, CK_EIO, errno, "%s", path);
    /* Every directory goes to the Zarr reader, which says why one is not
     * a store it can read (no .zarray, or a Zarr v3 zarr.json). */
    if (S_ISDIR(st.st_mode))
        kind = CK_KIND_ZARR;
    else if (access(path, R_OK) != 0) /* unreadable is not "not HDF5" */
        return ck_os_fail(err, CK_EIO, errno, "%s", path);
    else if (ck_h5_sniff(path))
        kind = CK_KIND_HDF5;
    else
        return ck_err_set(err, CK_EFORMAT, "%s: not an HDF5 file or zarr store",
                          path);
    if (strlen(path) >= PATH_MAX)
        return ck_err_set(err, CK_EUSAGE, "%s: path too long", path);
    if (!(s = calloc(1, sizeof *s)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    s->kind = kind;
    s->ops = ops_of(kind);
    s->sync_fd = -1;
    snprintf(s->path, sizeof s->path, "%s", path);
    if ((rc = s->ops->open(s, err)) != CK_OK) {
        free(s);
        return rc;
    }
    *out = s;
    return CK_OK;
}

static int rm_entry(const char *p, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

/* Removes a file or a whole directory tree, not following links. */
static int remove_tree(const char *path)
{
    struct stat st;

    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- durability ----
 *
 * ck_store_commit fsyncs the temporary (an HDF5 file; a Zarr directory:
 * each file and each directory in it) before the rename, and the parent
 * directory after it, so that a committed output survives a power cut
 * whole: without it, a rename can reach the disk before the data it
 * names.  Cost measured on bench/copy_bench's 1 GiB copy: about 10% (see
 * tests/fault/README.md). */

static _Thread_local int sync_errno;
static _Thread_local char sync_path[PATH_MAX];

static int sync_one(const char *p, int dir)
{
    int fd = open(p, O_RDONLY | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
    int e;

    if (fd < 0 || fsync(fd) != 0) {
        e = errno;
        if (fd >= 0)
            close(fd);
        snprintf(sync_path, sizeof sync_path, "%s", p);
        sync_errno = e;
        return -1;
    }
    close(fd);
    return 0;
}

static int sync_entry(const char *p, const struct stat *sb, int flag,
                      struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_F || flag == FTW_DP)
        return sync_one(p, flag == FTW_DP);
    return 0; /* a link: not followed, nothing of ours */
}

/* Starts the write-back of a file without waiting for it: a hint, so its
 * errors are fsync's to report. */
static int start_entry(const char *p, const struct stat *sb, int flag,
                       struct FTW *ftw)
{
    int fd;

    (void)sb;
    (void)ftw;
    if (flag == FTW_F &&
        (fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) >= 0) {
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        close(fd);
    }
    return 0;
}

/* Whether syncfs on fd reports the write-back errors of its file system:
 * Linux 5.8 and later do (before, it returned 0 whatever happened), and
 * not through FUSE, whose file systems are not asked to flush each file. */
static int syncfs_reports(int fd)
{
    struct utsname u;
    struct statfs fs;
    int major = 0, minor = 0;

    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2 ||
        fstatfs(fd, &fs) != 0)
        return 0;
    return (major > 5 || (major == 5 && minor >= 8)) &&
           fs.f_type != 0x65735546; /* FUSE_SUPER_MAGIC */
}

/* Counts the files of a tree, up to SYNC_EACH_MAX + 1. */
enum { SYNC_EACH_MAX = 256 };
static _Thread_local int tree_files;

static int count_entry(const char *p, const struct stat *sb, int flag,
                       struct FTW *ftw)
{
    (void)p;
    (void)sb;
    (void)ftw;
    return flag == FTW_F && ++tree_files > SYNC_EACH_MAX;
}

/* fsyncs a file, or a directory tree.  A tree of few files: each file,
 * then its directory, with every file's write-back started first
 * (fsync'ing 128 chunk files of 8 MiB one after the other took 1.0-1.2 s,
 * this 0.55-0.97 s).  More than SYNC_EACH_MAX: one syncfs on fd (opened
 * on the tree before it was written, so that it reports every write-back
 * error since, Linux 5.8+), as a file's fsync costs about 0.5 ms however
 * small it is (25000 files of 8 KB: 12 s, syncfs 0.36 s), while syncfs
 * also waits for what other writers of the file system left dirty.
 * Where syncfs would not report errors (syncfs_reports), each file. */
static ck_code sync_tree(const char *path, int fd, ck_err *err)
{
    struct stat st;
    int r;

    sync_errno = 0;
    if (lstat(path, &st) != 0)
        return ck_os_fail(err, CK_EIO, errno, "%s", path);
    tree_files = 0;
    if (S_ISDIR(st.st_mode) && fd >= 0 && syncfs_reports(fd) &&
        nftw(path, count_entry, 16, FTW_PHYS) > 0) {
        if (syncfs(fd) != 0)
            return ck_os_fail(err, CK_EIO, errno,
                              "%s: cannot sync its file system (a write "
                              "to it failed since this run began, maybe "
                              "another program's)",
                              path);
        return CK_OK;
    }
    if (S_ISDIR(st.st_mode))
        (void)nftw(path, start_entry, 16, FTW_PHYS);
    r = S_ISDIR(st.st_mode) ? nftw(path, sync_entry, 16, FTW_DEPTH | FTW_PHYS)
                            : sync_one(path, 0);
    if (r != 0)
        return ck_os_fail(err, CK_EIO, sync_errno ? sync_errno : errno,
                          "%s: cannot sync", sync_errno ? sync_path : path);
    return CK_OK;
}

/* fsyncs the directory that holds path, so a rename there is on disk. */
static int sync_parent(const char *path)
{
    char dir[PATH_MAX];

    snprintf(dir, sizeof dir, "%s", path);
    return sync_one(dirname(dir), 1);
}

/* ---- temporary names and their owners ----
 *
 * A store being written lives at ".BASE.ck-tmp-PID-START@HOST" beside
 * the target: the writer's process id, its start time (field 22 of
 * /proc/PID/stat, clock ticks since boot) and its host name.  A kill -9
 * leaves it behind; a later run to the same target reads the owner back
 * from the name and removes the temporary once that owner is gone (same
 * host, and no process PID or one started at another time, so a reused
 * pid is not taken for the owner).  One on another host, or whose owner
 * cannot be told dead, is left alone.  The name alone carries it, so an
 * HDF5 file and a Zarr directory are handled alike, and there is no
 * window in which a temporary exists without its owner. */

/* The start time of process pid in clock ticks after boot, 0 if unknown
 * (no /proc).  The command name (field 2) may hold spaces and ')': the
 * fields are counted from the last ')'. */
static unsigned long long proc_start(long pid)
{
    char path[64], buf[1024];
    unsigned long long v = 0;
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    /* after ')': field 3 (state) is the 1st, field 22 the 20th */
    for (int f = 3; p && f <= 22; f++) {
        while (*p && *p != ' ')
            p++;
        while (*p == ' ')
            p++;
        if (!*p)
            return 0;
        if (f == 22)
            v = strtoull(p, NULL, 10);
    }
    return v;
}

/* This host's name as temporary names carry it: characters other than
 * letters, digits, '.', '-' and '_' become '_' (never a '/'). */
static void host_name(char *buf, size_t n)
{
    if (gethostname(buf, n) != 0 || !buf[0])
        snprintf(buf, n, "localhost");
    buf[n - 1] = '\0';
    for (char *c = buf; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr(".-_", *c))
            *c = '_';
}

typedef struct tmp_owner {
    long pid;
    unsigned long long start; /* 0: not recorded (an older chunkctl) */
    char host[256];           /* "" when not recorded */
    int old;                  /* an output moved aside by a commit */
    int jnl;                  /* the journal beside an HDF5 temporary */
} tmp_owner;

/* What may follow a temporary's name: the old output a commit moved
 * aside, and an HDF5 temporary's resume journal (a Zarr temporary holds
 * its own).  Both the same length, which tmp_leaf leaves room for. */
#define OLD_SUFFIX ".ck-old"
#define JNL_SUFFIX ".ck-jnl"
enum { SUFFIX_LEN = sizeof OLD_SUFFIX - 1 };

/* Reads the owner from what follows ".BASE.ck-tmp-" in a directory
 * entry: "PID-START@HOST", or "PID" as earlier chunkctl named them,
 * either with OLD_SUFFIX or JNL_SUFFIX after it.  0 if the entry is not
 * one of ours. */
static int parse_owner(const char *s, tmp_owner *o)
{
    char *end;
    size_t n = strlen(s);

    memset(o, 0, sizeof *o);
    if (n > SUFFIX_LEN && strcmp(s + n - SUFFIX_LEN, OLD_SUFFIX) == 0)
        o->old = 1;
    else if (n > SUFFIX_LEN && strcmp(s + n - SUFFIX_LEN, JNL_SUFFIX) == 0)
        o->jnl = 1;
    if (o->old || o->jnl)
        n -= SUFFIX_LEN;
    if (!isdigit((unsigned char)s[0]))
        return 0;
    errno = 0;
    o->pid = strtol(s, &end, 10);
    if (errno || o->pid <= 0 || o->pid > INT_MAX) /* not a pid_t */
        return 0;
    if ((size_t)(end - s) == n) /* the older form: a pid alone */
        return 1;
    if (*end != '-' || !isdigit((unsigned char)end[1]))
        return 0;
    o->start = strtoull(end + 1, &end, 10);
    if (*end != '@' || end[1] == '\0' || (size_t)(end + 1 - s) >= n)
        return 0;
    size_t hl = n - (size_t)(end + 1 - s);
    if (hl >= sizeof o->host)
        return 0;
    memcpy(o->host, end + 1, hl);
    o->host[hl] = '\0';
    return 1;
}

/* 1 when the owner is certainly gone: no process pid, or one that started
 * at another time than the name says. */
static int owner_gone(const tmp_owner *o)
{
    unsigned long long now;

    if (kill((pid_t)o->pid, 0) != 0 && errno == ESRCH)
        return 1;
    if (!o->start)
        return 0; /* alive as far as we can tell */
    now = proc_start(o->pid);
    return now != 0 && now != o->start;
}

/* "2024-05-01 12:00:03" for a start time in ticks after boot (btime in
 * /proc/stat), or "at tick N" when the boot time is not known. */
static void start_str(unsigned long long ticks, char *buf, size_t n)
{
    char line[256];
    long long btime = -1;
    long hz = sysconf(_SC_CLK_TCK);
    FILE *f = fopen("/proc/stat", "re");

    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lld", &btime) == 1)
            break;
    if (f)
        fclose(f);
    struct tm tm;
    time_t t = (time_t)(btime + (long long)(ticks / (hz > 0 ? hz : 100)));
    if (btime < 0 || !localtime_r(&t, &tm) ||
        !strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, n, "at tick %llu", ticks);
}

/* The leaf of a temporary's name, ".BASE.ck-tmp-PID-START@HOST", into
 * buf (NAME_MAX + 1 long).  The host is cut short when the whole would
 * leave no room for a suffix (OLD_SUFFIX, JNL_SUFFIX); -1 when even one
 * character of it does not fit. */
static int tmp_leaf(char *buf, const char *base, long pid,
                    unsigned long long start, const char *host)
{
    enum { ROOM = NAME_MAX - SUFFIX_LEN };
    int head =
        snprintf(buf, NAME_MAX + 1, ".%s.ck-tmp-%ld-%llu@", base, pid, start);

    if (head < 0 || head + 1 > ROOM)
        return -1;
    snprintf(buf + head, (size_t)(ROOM - head) + 1, "%s", host);
    return 0;
}

/* rename(from, to) that fails with EEXIST instead of replacing an
 * existing 'to': renameat2's RENAME_NOREPLACE, or where the file system
 * lacks it (NFS: EINVAL), link() for a file and, for a directory, an
 * empty directory claimed with mkdir() and then replaced. */
static int rename_new(const char *from, const char *to)
{
    struct stat st;
    int e;

    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if ((errno != EINVAL && errno != ENOSYS) || lstat(from, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        if (link(from, to) != 0)
            return -1;
        (void)unlink(from);
        return 0;
    }
    if (mkdir(to, 0700) != 0)
        return -1;
    if (rename(from, to) == 0)
        return 0;
    e = errno;
    (void)rmdir(to);
    errno = e;
    return -1;
}

/* Removes the temporaries of target dir/base whose owner is gone, each
 * with one line on stderr, and puts back an output that a killed run had
 * moved aside to replace (so that the target reads as if the killed run
 * never touched it).  What it cannot remove is left as it is: this run's
 * temporary has a name of its own. */
static void remove_stale(const char *dir, const char *base, const char *skip)
{
    char prefix[NAME_MAX + 16], host[256], full[PATH_MAX], target[PATH_MAX],
        mine[NAME_MAX + 1];
    size_t np;
    int here;
    struct dirent *e;
    struct stat st;
    DIR *d;

    if (snprintf(prefix, sizeof prefix, ".%s.ck-tmp-", base) >=
            (int)sizeof prefix ||
        !(d = opendir(dir)))
        return;
    np = strlen(prefix);
    here = strcmp(dir, ".") == 0; /* names as the user gave them */
    host_name(host, sizeof host);
    snprintf(target, sizeof target, "%s%s%s", here ? "" : dir, here ? "" : "/",
             base);
    while ((e = readdir(d)) != NULL) {
        size_t ns = skip ? strlen(skip) : 0;
        tmp_owner o;
        char when[64];
        if (strncmp(e->d_name, prefix, np) != 0 ||
            (skip && strncmp(e->d_name, skip, ns) == 0 &&
             (e->d_name[ns] == '\0' ||
              strcmp(e->d_name + ns, JNL_SUFFIX) == 0)) ||
            !parse_owner(e->d_name + np, &o) ||
            snprintf(full, sizeof full, "%s%s%s", here ? "" : dir,
                     here ? "" : "/", e->d_name) >= (int)sizeof full)
            continue;
        if (!o.host[0]) {
            /* An older chunkctl's: it may be another machine's. */
            if (kill((pid_t)o.pid, 0) != 0 && errno == ESRCH)
                ck_log(CK_LOG_NOTE,
                       "%s looks like the temporary of a killed chunkctl "
                       "(pid %ld); remove it if no chunkctl on another "
                       "machine is writing %s",
                       full, o.pid, target);
            continue;
        }
        /* Same host: the name this host would give the owner is the
         * entry's (so a host cut short in a long name still matches). */
        size_t nl = strlen(e->d_name) - (o.old || o.jnl ? SUFFIX_LEN : 0);
        if (tmp_leaf(mine, base, o.pid, o.start, host) != 0 ||
            strlen(mine) != nl || strncmp(mine, e->d_name, nl) != 0 ||
            !owner_gone(&o))
            continue;
        if (o.jnl) { /* goes with its temporary, without a word */
            unlink(full);
            continue;
        }
        start_str(o.start, when, sizeof when);
        if (o.old && lstat(target, &st) != 0 && errno == ENOENT) {
            if (rename_new(full, target) == 0)
                ck_log(CK_LOG_NOTE,
                       "put back %s, which a killed run (pid %ld on %s, "
                       "started %s) had moved aside to replace it",
                       target, o.pid, o.host, when);
            continue;
        }
        if (remove_tree(full) == 0)
            ck_log(CK_LOG_NOTE,
                   "removed a stale temporary %s (pid %ld on %s, started %s, "
                   "is gone)",
                   full, o.pid, o.host, when);
    }
    closedir(d);
}

/* Temporary outputs in progress, for ck_store_abandon_all().  A slot holds
 * a pointer to a ck_store's tmp name while the store is being written. */
enum { MAX_PENDING = 64 };
static const char *volatile pending[MAX_PENDING];

static void pending_add(const char *tmp)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        const char *expected = NULL;
        if (__atomic_compare_exchange_n(&pending[i], &expected, tmp, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return;
    }
}

static void pending_drop(const char *tmp)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        const char *expected = tmp;
        __atomic_compare_exchange_n(&pending[i], &expected, NULL, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
}

void ck_store_abandon_all(void)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        const char *p = __atomic_load_n(&pending[i], __ATOMIC_SEQ_CST);
        if (p)
            remove_tree(p);
    }
}

void ck_store_close(ck_store *s)
{
    if (!s)
        return;
    if (s->writing)
        pending_drop(s->tmp);
    if (s->impl)
        s->ops->close(s);
    if (s->writing && !s->committed && s->tmp[0])
        remove_tree(s->tmp);
    if (s->jtmp[0]) {
        pending_drop(s->jtmp);
        if (!s->committed)
            unlink(s->jtmp);
    }
    ck_journal_close(s->journal);
    ck_journal_close(s->kept);
    if (s->sync_fd >= 0)
        close(s->sync_fd);
    free(s);
}

ck_store_kind ck_store_kind_of(const ck_store *s)
{
    return s->kind;
}

const char *ck_store_path(const ck_store *s)
{
    return s->path;
}

/* path resolved (links, "..") as far as it exists, the parts that do not
 * exist yet appended as written (the output may not exist).  0 when it
 * cannot be resolved or is too long. */
static int resolve_existing(const char *path, char *out)
{
    char p[PATH_MAX], rest[PATH_MAX] = "", r[PATH_MAX];
    size_t n = strlen(path);

    if (n == 0 || n >= PATH_MAX)
        return 0;
    memcpy(p, path, n + 1);
    for (;;) {
        while (n > 1 && p[n - 1] == '/') /* "out.zarr/" */
            p[--n] = '\0';
        if (realpath(p, r))
            break;
        char *slash = strrchr(p, '/');
        const char *last = slash ? slash + 1 : p;
        if (strcmp(last, "..") == 0 || strcmp(last, ".") == 0)
            return 0; /* under a folder that does not exist */
        char t[PATH_MAX];
        if (snprintf(t, sizeof t, "/%s%s", last, rest) >= (int)sizeof t)
            return 0;
        memcpy(rest, t, strlen(t) + 1);
        if (!slash) {
            if (!getcwd(r, sizeof r))
                return 0;
            break;
        }
        if (slash == p) { /* "/x": the root */
            snprintf(r, sizeof r, "/");
            break;
        }
        *slash = '\0';
        n = (size_t)(slash - p);
    }
    return snprintf(out, PATH_MAX, "%s%s", strcmp(r, "/") ? r : "", rest) <
           PATH_MAX;
}

/* Whether 'inner' lies in folder 'outer' (both resolved). */
static int under(const char *inner, const char *outer)
{
    size_t n = strlen(outer);
    return strncmp(inner, outer, n) == 0 && inner[n] == '/';
}

ck_code ck_store_check_apart(const char *in, const char *out, const char *where,
                             ck_err *err)
{
    char ri[PATH_MAX], ro[PATH_MAX];
    struct stat si, so;

    if (stat(in, &si) == 0 && stat(out, &so) == 0 && si.st_dev == so.st_dev &&
        si.st_ino == so.st_ino)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: the output is the input; chunkctl never "
                          "writes into its input",
                          where);
    /* the output itself may be a link: where it points is what --force
     * replaces */
    if (!realpath(in, ri) || !resolve_existing(out, ro))
        return CK_OK;
    if (under(ro, ri))
        return ck_err_set(err, CK_EUSAGE,
                          "%s: the output is inside the input %s; chunkctl "
                          "never writes into its input",
                          where, in);
    if (under(ri, ro))
        return ck_err_set(err, CK_EUSAGE,
                          "%s: the input %s is inside the output, which "
                          "would replace it",
                          where, in);
    return CK_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static ck_code list_sorted(ck_store *s, int groups, ck_names *out, ck_err *err)
{
    ck_names l = {0};
    ck_code rc = s->ops->list(s, groups, &l, err);

    if (rc != CK_OK) {
        ck_names_release(&l);
        return rc;
    }
    if (l.n > 1)
        qsort(l.v, (size_t)l.n, sizeof *l.v, cmp_names);
    *out = l;
    return CK_OK;
}

ck_code ck_store_list(ck_store *s, ck_names *out, ck_err *err)
{
    return list_sorted(s, 0, out, err);
}

ck_code ck_store_list_groups(ck_store *s, ck_names *out, ck_err *err)
{
    return list_sorted(s, 1, out, err);
}

ck_code ck_store_dangling(ck_store *s, ck_names *out, ck_err *err)
{
    return s->ops->dangling ? s->ops->dangling(s, out, err) : CK_OK;
}

ck_code ck_store_list_readable(ck_store *s, int warn, ck_names *out,
                               ck_err *err)
{
    ck_names all = {0}, keep = {0}, why = {0};
    ck_err first = {0};
    ck_code rc = ck_store_list(s, &all, err);

    for (int i = 0; i < all.n && rc == CK_OK; i++) {
        ck_array *a = NULL;
        ck_err e = {0};
        rc = ck_array_open(s, all.v[i], &a, &e);
        if (rc == CK_OK) {
            ck_array_close(a);
            rc = ck_names_push(&keep, all.v[i], err);
        } else if (rc == CK_ENOTSUP) {
            if (first.code == CK_OK)
                first = e;
            rc = ck_names_push(&why, e.msg, err);
        } else if (err) {
            *err = e;
        }
    }
    /* nothing readable: why the first one is not is the answer */
    if (rc == CK_OK && keep.n == 0 && first.code != CK_OK) {
        if (err)
            *err = first;
        rc = first.code;
    }
    for (int i = 0; rc == CK_OK && warn && i < why.n; i++)
        ck_log(CK_LOG_WARN, "%s; skipped", why.v[i]);
    ck_names_release(&all);
    ck_names_release(&why);
    if (rc != CK_OK)
        ck_names_release(&keep);
    *out = keep;
    return rc;
}

/* "/a, /b, /c" (at most ~400 characters) for error messages. */
static void join_names(const ck_names *l, char *buf, size_t n)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < l->n && used + 8 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", l->v[i]);
        if (w < 0 || (size_t)w >= n - used) {
            snprintf(buf + used, n - used, ", ...");
            break;
        }
        used += (size_t)w;
    }
}

static ck_code finish_open(ck_array *a, ck_err *err)
{
    ck_code rc =
        ck_grid_init(&a->grid, a->info.ndim, a->info.shape, a->info.chunks,
                     ck_dtype_size(a->info.dtype), err);
    if (rc != CK_OK)
        ck_err_prefix(err, "%s:%s", a->store->path, a->info.name);
    return rc;
}

ck_code ck_array_open(ck_store *s, const char *name, ck_array **out,
                      ck_err *err)
{
    ck_names l = {0};
    char listed[400], norm[512];
    ck_array *a = NULL;
    ck_err local = {0};
    ck_code rc;

    if (!name || !*name) {
        CK_TRY(ck_store_list(s, &l, err));
        if (l.n > 1) { /* the only one chunkctl can read is meant */
            ck_names r = {0};
            rc = ck_store_list_readable(s, 0, &r, err);
            if (rc != CK_OK) {
                ck_names_release(&l);
                return rc;
            }
            if (r.n == 1) {
                ck_names_release(&l);
                l = r;
            } else {
                ck_names_release(&r);
            }
        }
        if (l.n != 1) {
            join_names(&l, listed, sizeof listed);
            rc = l.n == 0
                     ? ck_err_set(err, CK_EFORMAT, "%s: holds no arrays",
                                  s->path)
                     : ck_err_set(err, CK_EUSAGE,
                                  "%s holds %d arrays; name one as %s:NAME "
                                  "(arrays: %s)",
                                  s->path, l.n, s->path, listed);
            ck_names_release(&l);
            return rc;
        }
        snprintf(norm, sizeof norm, "%s", l.v[0]);
        ck_names_release(&l);
    } else {
        snprintf(norm, sizeof norm, "%s%s", name[0] == '/' ? "" : "/", name);
    }
    if (!(a = calloc(1, sizeof *a)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    a->store = s;
    rc = s->ops->array_open(s, norm, a, &local);
    if (rc == CK_EFORMAT && ck_store_list(s, &l, NULL) == CK_OK) {
        int known = 0;
        for (int i = 0; i < l.n; i++)
            known |= strcmp(l.v[i], norm) == 0;
        if (!known) {
            join_names(&l, listed, sizeof listed);
            ck_names_release(&l);
            free(a);
            return ck_err_set(err, CK_EUSAGE, "%s: no array '%s' (arrays: %s)",
                              s->path, norm,
                              l.n || listed[0] ? listed : "none");
        }
    }
    ck_names_release(&l);
    if (rc != CK_OK) {
        ck_err_set(err, local.code, "%s", local.msg);
        free(a);
        return rc;
    }
    snprintf(a->info.name, sizeof a->info.name, "%s", norm);
    if ((rc = finish_open(a, err)) != CK_OK) {
        ck_array_close(a);
        return rc;
    }
    *out = a;
    return CK_OK;
}

void ck_array_close(ck_array *a)
{
    if (!a)
        return;
    if (a->impl)
        a->store->ops->array_close(a);
    free(a);
}

const ck_array_info *ck_array_info_of(const ck_array *a)
{
    return &a->info;
}

ck_store *ck_array_store(const ck_array *a)
{
    return a->store;
}

const ck_grid *ck_array_grid(const ck_array *a)
{
    return &a->grid;
}

size_t ck_array_scratch_bytes(const ck_array *a)
{
    return a->store->ops->scratch_bytes(a);
}

ck_code ck_array_read_chunk(ck_array *a, const int64_t *coords, void *dst,
                            ck_arena *scratch, ck_err *err)
{
    return a->store->ops->read_chunk(a, coords, dst, scratch, err);
}

int ck_array_view_chunk(ck_array *a, const int64_t *coords, ck_chunk_view *v)
{
    return ck_array_view_chunk_bytes(
        a, coords, 0,
        (size_t)a->grid.chunk_nelem * ck_dtype_size(a->info.dtype), v);
}

int ck_array_view_chunk_bytes(ck_array *a, const int64_t *coords, size_t off,
                              size_t len, ck_chunk_view *v)
{
    size_t whole = (size_t)a->grid.chunk_nelem * ck_dtype_size(a->info.dtype);

    for (int d = 0; d < a->grid.ndim; d++)
        if (coords[d] < 0 || coords[d] >= a->grid.nchunks[d])
            return 0;
    if (off > whole || len > whole - off || len == 0)
        return 0;
    return a->store->ops->view_chunk &&
           a->store->ops->view_chunk(a, coords, off, len, v);
}

void ck_chunk_view_release(ck_chunk_view *v)
{
    if (v && v->base)
        munmap(v->base, v->len);
    if (v)
        *v = (ck_chunk_view){0};
}

/* Rounds up to the arena's 64-byte alignment. */
static size_t al64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

int ck_array_raw(ck_array *a)
{
    return a->grid.ndim > 0 && a->store->ops->raw && a->store->ops->raw(a);
}

/* A raw array's region is read through a bounce buffer when its values are
 * converted or strided, or its runs are short: whole outer rows of a
 * chunk, at least RAW_BOUNCE bytes of them per read (one row of a
 * small-rowed chunk is a few bytes).  Runs of RAW_RUN bytes or more are
 * read straight into the result, one pread each: a column of a (10^6, 2)
 * chunk would otherwise take 10^6 of them. */
enum { RAW_BOUNCE = 64 << 10, RAW_RUN = 2048 };

/* Outer rows of a chunk one bounce read covers. */
static int64_t bounce_rows(const ck_array *a)
{
    const ck_grid *g = &a->grid;
    size_t row =
        (size_t)(g->chunk_nelem / g->chunk[0]) * ck_dtype_size(a->info.dtype);
    int64_t n = row >= RAW_BOUNCE ? 1 : (int64_t)(RAW_BOUNCE / row);
    return n < g->chunk[0] ? n : g->chunk[0];
}

/* A region read's buffer: a chunk, or a raw array's bounce rows. */
static size_t region_buf_bytes(const ck_array *a, int raw)
{
    const ck_grid *g = &a->grid;
    int64_t n =
        raw ? bounce_rows(a) * (g->chunk_nelem / g->chunk[0]) : g->chunk_nelem;

    return (size_t)n * ck_dtype_size(a->info.dtype);
}

size_t ck_array_region_scratch_bytes(ck_array *a)
{
    return al64(region_buf_bytes(a, ck_array_raw(a))) +
           al64(ck_array_scratch_bytes(a)) + 128;
}

/* The part of a raw array's region in chunk cc: box elements from soff
 * (steps st) to doff of dst (shape dsh).  Long runs contiguous on both
 * sides are read straight into dst; converted or strided values and short
 * runs go through bounce, a group of outer rows at a time. */
static ck_code raw_box(ck_array *a, const int64_t *cc, ck_dtype to, void *dst,
                       const int64_t *dsh, const int64_t *doff,
                       const int64_t *soff, const int64_t *st,
                       const int64_t *box, void *bounce, ck_err *err)
{
    const ck_grid *g = &a->grid;
    int nd = g->ndim, last = nd - 1;
    ck_dtype from = a->info.dtype;
    size_t isz = ck_dtype_size(from), osz = ck_dtype_size(to);
    int64_t cs[CK_MAX_DIMS], ds[CK_MAX_DIMS], k[CK_MAX_DIMS] = {0};
    int direct = to == from && st[last] == 1, m = last;

    cs[last] = ds[last] = 1;
    for (int d = last - 1; d >= 0; d--) {
        cs[d] = cs[d + 1] * g->chunk[d + 1];
        ds[d] = ds[d + 1] * dsh[d + 1];
    }
    for (int d = 1; d < nd; d++)
        direct &= st[d] == 1;
    /* dims m.. are one run: full in the chunk and in dst below m */
    while (direct && m > 0 && box[m] == g->chunk[m] && box[m] == dsh[m] &&
           st[m - 1] == 1)
        m--;
    size_t run = (size_t)(box[m] * cs[m]) * isz;
    if (!direct || run < RAW_RUN) {
        int64_t cap = bounce_rows(a), tail = 0;
        for (int d = 1; d < nd; d++)
            tail += (soff[d] + (box[d] - 1) * st[d]) * cs[d];
        for (int64_t k0 = 0; k0 < box[0];) {
            int64_t k1 = k0 + 1 + (cap - 1) / st[0];
            k1 = k1 < box[0] ? k1 : box[0];
            int64_t r0 = soff[0] + k0 * st[0], nr = (k1 - 1 - k0) * st[0] + 1;
            int64_t bsh[CK_MAX_DIMS], bof[CK_MAX_DIMS], bbox[CK_MAX_DIMS],
                dof[CK_MAX_DIMS];
            memcpy(bsh, g->chunk, sizeof bsh);
            memcpy(bof, soff, sizeof bof);
            memcpy(bbox, box, sizeof bbox);
            memcpy(dof, doff, sizeof dof);
            bsh[0] = nr;
            bof[0] = 0;
            bbox[0] = k1 - k0;
            dof[0] = doff[0] + k0;
            CK_TRY(a->store->ops->read_bytes(
                a, cc, (size_t)(r0 * cs[0]) * isz,
                (size_t)((nr - 1) * cs[0] + tail + 1) * isz, bounce, err));
            ck_box_convert(nd, to, dst, dsh, dof, from, bounce, bsh, bof, st,
                           bbox);
            k0 = k1;
        }
        return CK_OK;
    }
    for (;;) {
        int64_t so = 0, dof = 0;
        for (int d = 0; d < nd; d++) {
            so += (soff[d] + (d < m ? k[d] * st[d] : 0)) * cs[d];
            dof += (doff[d] + (d < m ? k[d] : 0)) * ds[d];
        }
        CK_TRY(a->store->ops->read_bytes(a, cc, (size_t)so * isz, run,
                                         (char *)dst + (size_t)dof * osz, err));
        int d = m - 1;
        for (; d >= 0; d--) {
            if (++k[d] < box[d])
                break;
            k[d] = 0;
        }
        if (d < 0)
            return CK_OK;
    }
}

/* Where chunk cc meets the selection start:stop:st: its box (soff in
 * the chunk, doff in the selection, box elements); 0 when it holds none
 * of the selected elements. */
static int chunk_box(const ck_grid *g, const int64_t *cc, const int64_t *start,
                     const int64_t *stop, const int64_t *st, int64_t *soff,
                     int64_t *doff, int64_t *box)
{
    for (int d = 0; d < g->ndim; d++) {
        int64_t cs = cc[d] * g->chunk[d];
        int64_t ce = cs + g->chunk[d] < stop[d] ? cs + g->chunk[d] : stop[d];
        int64_t k0 = cs > start[d] ? (cs - start[d] + st[d] - 1) / st[d] : 0;
        int64_t i0 = start[d] + k0 * st[d];
        if (i0 >= ce)
            return 0;
        soff[d] = i0 - cs;
        doff[d] = k0;
        box[d] = (ce - 1 - i0) / st[d] + 1;
    }
    return 1;
}

/* The next chunk coordinates of the odometer over c0..c1; 0 past them. */
static int next_chunk(int nd, int64_t *cc, const int64_t *c0, const int64_t *c1)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++cc[d] <= c1[d])
            return 1;
        cc[d] = c0[d];
    }
    return 0;
}

/* Chunks a region read looks up in the cache at a time. */
enum { REGION_BATCH = 128 };

ck_code ck_array_read_region(ck_array *a, const int64_t *start,
                             const int64_t *stop, const int64_t *step,
                             ck_dtype to, void *dst, ck_chunk_cache *cache,
                             ck_arena *scratch, ck_err *err)
{
    const ck_grid *g = &a->grid;
    /* a raw array's regions come from the file, unless a cache of its
     * decoded chunks is given */
    int nd = g->ndim, raw = ck_array_raw(a) && !cache, more = 1;
    int64_t st[CK_MAX_DIMS], nsel[CK_MAX_DIMS], c0[CK_MAX_DIMS],
        c1[CK_MAX_DIMS], cc[CK_MAX_DIMS];
    void *chunk;
    size_t mark;
    ck_code rc = CK_OK;

    for (int d = 0; d < nd; d++) {
        st[d] = step ? step[d] : 1;
        if (st[d] < 1 || start[d] < 0 || stop[d] > g->shape[d])
            return ck_err_set(err, CK_EUSAGE,
                              "%s:%s: region outside the array on axis %d",
                              a->store->path, a->info.name, d);
        nsel[d] = stop[d] > start[d] ? (stop[d] - start[d] - 1) / st[d] + 1 : 0;
        if (nsel[d] == 0)
            return CK_OK;
        c0[d] = start[d] / g->chunk[d];
        c1[d] = (start[d] + (nsel[d] - 1) * st[d]) / g->chunk[d];
        cc[d] = c0[d];
    }
    /* A region that is exactly one whole chunk, in the array's dtype, is
     * that chunk: read it in place (no copy, no chunk buffer). */
    int whole = to == a->info.dtype && !cache;
    for (int d = 0; d < nd && whole; d++)
        whole = st[d] == 1 && start[d] % g->chunk[d] == 0 &&
                stop[d] - start[d] == g->chunk[d];
    if (whole)
        return ck_array_read_chunk(a, c0, dst, scratch, err);
    chunk = ck_arena_alloc(scratch, region_buf_bytes(a, raw));
    if (!chunk)
        return ck_err_set(err, CK_ENOMEM,
                          "region read: scratch arena too small");
    mark = scratch->used;
    /* Batches of REGION_BATCH chunks: with a cache, those it holds are
     * pinned under one lock first (a (1, 1000) output chunk of a (1000, 1)
     * source meets a thousand chunks), the rest got one by one. */
    while (more && rc == CK_OK) {
        int64_t soff[CK_MAX_DIMS], doff[CK_MAX_DIMS], box[CK_MAX_DIMS];
        int64_t keys[REGION_BATCH];
        int slots[REGION_BATCH], nb = 0, j = 0;
        const void *ready[REGION_BATCH];
        if (cache) {
            int64_t t[CK_MAX_DIMS];
            memcpy(t, cc, (size_t)nd * sizeof *t);
            for (int k = 0; k < REGION_BATCH; k++) {
                if (chunk_box(g, t, start, stop, st, soff, doff, box))
                    keys[nb++] = ck_grid_index(g, t);
                if (!next_chunk(nd, t, c0, c1))
                    break;
            }
            ck_chunk_cache_get_ready(cache, keys, nb, slots, ready);
        }
        for (int k = 0; k < REGION_BATCH && more && rc == CK_OK; k++) {
            if (!chunk_box(g, cc, start, stop, st, soff, doff, box)) {
                /* holds none of the selection */
            } else if (raw) {
                rc = raw_box(a, cc, to, dst, nsel, doff, soff, st, box, chunk,
                             err);
            } else {
                const void *data = chunk;
                int slot = -1;
                scratch->used = mark;
                if (cache && slots[j] >= 0) {
                    data = ready[j];
                    slot = slots[j];
                } else if (cache) {
                    rc = ck_chunk_cache_get(cache, cc, chunk, scratch, &data,
                                            &slot, err);
                } else {
                    rc = ck_array_read_chunk(a, cc, chunk, scratch, err);
                }
                j++;
                if (rc == CK_OK)
                    ck_box_convert(nd, to, dst, nsel, doff, a->info.dtype, data,
                                   g->chunk, soff, st, box);
                ck_chunk_cache_put(cache, slot);
            }
            more = next_chunk(nd, cc, c0, c1);
        }
        /* a failure leaves the batch's other pins to drop */
        for (; cache && j < nb; j++)
            ck_chunk_cache_put(cache, slots[j]);
    }
    scratch->used = mark;
    return rc;
}

/* ck_store_create, leaving the stale temporary 'skip' (a leaf in the
 * target's directory, or NULL) where it is: a resumed run takes its
 * units. */
/* --force replaces a file, or a directory that is empty or holds a Zarr
 * store's metadata at its top (for a Zarr output), nothing else:
 * someone's directory named *.zarr or *.h5 would be dropped whole. */
static ck_code replaceable(const char *path, ck_store_kind kind,
                           const struct stat *st, ck_err *err)
{
    static const char *const meta[] = {".zarray", ".zgroup", ".zattrs",
                                       "zarr.json"};
    char p[PATH_MAX + 16];
    struct stat m;
    int store = 0;
    DIR *dir;

    if (kind != CK_KIND_ZARR) {
        if (S_ISDIR(st->st_mode))
            return ck_err_set(err, CK_EEXIST,
                              "%s is a directory, not an HDF5 file: --force "
                              "does not replace it",
                              path);
        return CK_OK;
    }
    if (!S_ISDIR(st->st_mode)) /* a file: replaced, as cp -f would */
        return CK_OK;
    for (size_t i = 0; i < sizeof meta / sizeof meta[0] && !store; i++) {
        snprintf(p, sizeof p, "%s/%s", path, meta[i]);
        store = stat(p, &m) == 0 && S_ISREG(m.st_mode);
    }
    if (store)
        return CK_OK;
    if ((dir = opendir(path)) != NULL) { /* an empty directory will do */
        struct dirent *e;
        store = 1;
        while (store && (e = readdir(dir)) != NULL)
            store = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
        closedir(dir);
    }
    return store ? CK_OK
                 : ck_err_set(err, CK_EEXIST,
                              "%s is a directory but not a Zarr store (no "
                              ".zgroup, .zarray or zarr.json): --force does "
                              "not replace it",
                              path);
}

static ck_code create_in(const char *path, ck_store_kind kind, int force,
                         const char *skip, ck_store **out, ck_err *err)
{
    struct stat st;
    char dir[PATH_MAX], base[PATH_MAX], tmp[PATH_MAX + 64], host[256],
        leaf[NAME_MAX + 1];
    const char *d, *b;
    ck_store *s;
    ck_code rc;
    size_t n = strlen(path);

    if (n == 0 || n >= PATH_MAX - 64)
        return ck_err_set(err, CK_EUSAGE, "'%s': bad output name", path);
    snprintf(dir, sizeof dir, "%s", path);
    snprintf(base, sizeof base, "%s", path);
    while (n > 1 && base[n - 1] == '/') {
        n--;
        base[n] = dir[n] = '\0';
    }
    d = dirname(dir);
    b = basename(base);
    /* Before the existence check: a killed run may have moved the
     * target aside, and this puts it back. */
    remove_stale(d, b, skip);
    if (lstat(path, &st) == 0 && !force)
        return ck_err_set(err, CK_EEXIST,
                          "%s exists (use --force to overwrite it)", path);
    if (stat(path, &st) == 0)
        CK_TRY(replaceable(path, kind, &st, err));
    /* said of the output, not of the temporary beside it */
    if (stat(d, &st) != 0)
        return ck_err_set(err, CK_EIO, "%s: cannot write it: %s: %s", path, d,
                          strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return ck_err_set(err, CK_EIO,
                          "%s: cannot write it: %s is not a "
                          "directory",
                          path, d);
    host_name(host, sizeof host);
    if (tmp_leaf(leaf, b, (long)getpid(), proc_start((long)getpid()), host) !=
            0 ||
        snprintf(tmp, sizeof tmp, "%s/%s", d, leaf) >= PATH_MAX)
        return ck_err_set(err, CK_EUSAGE, "'%s': name too long", path);
    if (!(s = calloc(1, sizeof *s)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    s->kind = kind;
    s->ops = ops_of(kind);
    s->writing = 1;
    s->force = force;
    snprintf(s->path, sizeof s->path, "%s", path);
    memcpy(s->tmp, tmp, strlen(tmp) + 1); /* fits: checked above */
    pending_add(s->tmp);
    s->sync_fd = -1;
    if ((rc = s->ops->create(s, err)) != CK_OK) {
        ck_store_close(s);
        return rc;
    }
    if (kind == CK_KIND_ZARR)
        s->sync_fd = open(s->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *out = s;
    return CK_OK;
}

ck_code ck_array_create(ck_store *s, const ck_array_spec *spec, ck_array **out,
                        ck_err *err)
{
    ck_array *a;
    ck_code rc;

    if (!(a = calloc(1, sizeof *a)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    a->store = s;
    if ((rc = s->ops->array_create(s, spec, a, err)) != CK_OK) {
        ck_array_close(a);
        return rc;
    }
    snprintf(a->info.name, sizeof a->info.name, "%s", spec->name);
    if ((rc = finish_open(a, err)) != CK_OK) {
        ck_array_close(a);
        return rc;
    }
    *out = a;
    return CK_OK;
}

ck_code ck_array_write_chunk(ck_array *a, const int64_t *coords,
                             const void *src, ck_arena *scratch, ck_err *err)
{
    return a->store->ops->write_chunk(a, coords, src, scratch, err);
}

ck_code ck_store_get_attrs(ck_store *s, const char *name, char **json,
                           ck_err *err)
{
    *json = NULL;
    return s->ops->get_attrs(s, name && *name ? name : "/", json, err);
}

ck_code ck_store_set_attrs(ck_store *s, const char *name, const char *json,
                           ck_err *err)
{
    if (!s->writing || s->committed)
        return ck_err_set(err, CK_EUSAGE, "%s: not open for writing", s->path);
    return s->ops->set_attrs(s, name && *name ? name : "/", json, err);
}

ck_code ck_store_copy_attrs(ck_store *src, const char *src_name, ck_store *dst,
                            const char *dst_name, ck_err *err)
{
    char *json = NULL;
    ck_code rc = src->ops->get_attrs(src, src_name, &json, err);

    if (rc == CK_OK && json && strcmp(json, "{}") != 0) {
        rc = dst->ops->set_attrs(dst, dst_name, json, err);
        if (rc == CK_OK && src->ops == dst->ops && dst->ops->keep_attr_types)
            rc = dst->ops->keep_attr_types(dst, dst_name, src, src_name, err);
    }
    free(json);
    return rc;
}

/* 1 if s is well-formed UTF-8 (no overlongs, surrogates or code points
 * past U+10FFFF): h5py and Python's json decode attribute names and
 * strings as UTF-8 and fail on anything else. */
static int utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    while (*p) {
        unsigned c = *p++, n, cp;
        if (c < 0x80)
            continue;
        if (c >= 0xc2 && c <= 0xdf)
            n = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            n = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            n = 3, cp = c & 0x07;
        else
            return 0;
        for (unsigned i = 0; i < n; i++, p++) {
            if ((*p & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (*p & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
    }
    return 1;
}

/* Checks what set_attr and get_attr share and normalises name into norm
 * ("/", "/g/x": a leading '/', no trailing one), as ck_array_open does. */
static ck_code attr_args(ck_store *s, const char *name, const char *key,
                         char *norm, size_t n, ck_err *err)
{
    size_t len;

    if (s->committed)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: attributes after commit (only close is left)",
                          s->path);
    if (!key || !*key || !utf8_ok(key))
        return ck_err_set(err, CK_EUSAGE,
                          "%s: attribute name empty or not UTF-8", s->path);
    if (!name || !*name)
        name = "/";
    if (snprintf(norm, n, "%s%s", name[0] == '/' ? "" : "/", name) >= (int)n)
        return ck_err_set(err, CK_EUSAGE, "%s: object name too long: '%s'",
                          s->path, name);
    len = strlen(norm);
    while (len > 1 && norm[len - 1] == '/')
        norm[--len] = '\0';
    return CK_OK;
}

ck_code ck_store_set_attr(ck_store *s, const char *name, const char *key,
                          const ck_attr *v, ck_err *err)
{
    char norm[512];

    CK_TRY(attr_args(s, name, key, norm, sizeof norm, err));
    if (!s->writing)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: opened read-only; attributes are set on a "
                          "store being written",
                          s->path);
    switch (v->kind) {
    case CK_ATTR_STR:
        if (memchr(v->str, '\0', sizeof v->str) == NULL)
            return ck_err_set(err, CK_EUSAGE,
                              "%s:%s: attribute '%s': string longer than "
                              "%zu bytes",
                              s->path, norm, key, sizeof v->str - 1);
        if (!utf8_ok(v->str))
            return ck_err_set(err, CK_EUSAGE,
                              "%s:%s: attribute '%s': string is not UTF-8",
                              s->path, norm, key);
        break;
    case CK_ATTR_F64:
    case CK_ATTR_I64:
        break;
    default:
        return ck_err_set(err, CK_EUSAGE,
                          "%s:%s: attribute '%s': unknown kind %d", s->path,
                          norm, key, (int)v->kind);
    }
    return s->ops->set_attr(s, norm, key, v, err);
}

ck_code ck_store_get_attr(ck_store *s, const char *name, const char *key,
                          ck_attr *v, ck_err *err)
{
    char norm[512];
    ck_attr got;

    CK_TRY(attr_args(s, name, key, norm, sizeof norm, err));
    memset(&got, 0, sizeof got);
    CK_TRY(s->ops->get_attr(s, norm, key, &got, err));
    *v = got;
    return CK_OK;
}

/* ck_store_commit in this process. */
static ck_code commit_here(ck_store *s, ck_err *err)
{
    char old[PATH_MAX + 32];
    struct stat st;
    int replaced = 0, e = 0;

    CK_TRY(s->ops->flush(s, err));
    CK_TRY(sync_tree(s->tmp, s->sync_fd, err));
    /* a Ctrl-C during the last steps: the user wants no output */
    if (ck_interrupted())
        return ck_err_set(err, CK_ESTOPPED, "interrupted");
    /* The journal is the run's, not the output's. */
    if (s->journal) {
        char jp[PATH_MAX];
        snprintf(jp, sizeof jp, "%s", ck_journal_path(s->journal));
        ck_journal_close(s->journal);
        s->journal = NULL;
        if (unlink(jp) != 0 && errno != ENOENT)
            return ck_os_fail(err, CK_EIO, errno, "%s: cannot remove %s",
                              s->path, jp);
    }
    /* Another process may have created the target since create_in()
     * looked: the rename never replaces what this run did not move aside
     * itself (RENAME_NOREPLACE), so the target is always one run's whole
     * output.  Without --force a target that appeared meanwhile fails the
     * run; with it, whatever is there is moved aside (rename() cannot
     * replace a directory, a Zarr store, nor change a file into one) and
     * dropped once the new output is in place; should yet another run
     * commit in between, it is moved aside in turn: the last one wins.
     * ".ck-old" after the temporary's name: owned by this run, as
     * remove_stale() reads it should the run die here. */
    snprintf(old, sizeof old, "%s.ck-old", s->tmp);
    for (int tries = 0;; tries++) {
        if (s->force && lstat(s->path, &st) == 0) {
            /* An older output moved aside before: superseded. */
            if (replaced && remove_tree(old) != 0)
                return ck_os_fail(err, CK_EIO, errno, "%s: cannot remove %s",
                                  s->path, old);
            replaced = 0;
            if (rename(s->path, old) != 0) {
                e = errno;
                if (e == ENOENT && tries < 16)
                    continue; /* moved away meanwhile: look again */
                return ck_os_fail(err, CK_EIO, e, "%s: cannot replace",
                                  s->path);
            }
            replaced = 1;
        }
        if (rename_new(s->tmp, s->path) == 0) {
            e = 0;
            break;
        }
        e = errno;
        if (!(e == EEXIST && s->force && tries < 16))
            break;
    }
    if (e != 0) {
        /* Put the old output back, unless another run's new one has
         * taken its place meanwhile. */
        if (replaced && rename_new(old, s->path) != 0 && errno == EEXIST)
            (void)remove_tree(old);
        if (e == EEXIST)
            return ck_err_set(err, CK_EEXIST,
                              "%s was created meanwhile by another process "
                              "(use --force to overwrite it)",
                              s->path);
        return ck_os_fail(err, CK_EIO, e, "%s: cannot rename from %s", s->path,
                          s->tmp);
    }
    /* The rename is durable only once its directory is: if that fails,
     * take it back (ck_store_close then drops the temporary). */
    if (sync_parent(s->path) != 0) {
        e = sync_errno;
        if (rename(s->path, s->tmp) == 0 && replaced)
            (void)rename_new(old, s->path);
        return ck_os_fail(err, CK_EIO, e, "%s: cannot sync its directory",
                          s->path);
    }
    s->committed = 1;
    /* What the killed run left that this one did not take is stale. */
    if (s->from[0] && remove_tree(s->from) != 0)
        ck_log(CK_LOG_WARN, "could not remove %s, the killed run's temporary",
               s->from);
    if (s->from[0] && s->kind != CK_KIND_ZARR) {
        char fj[PATH_MAX + 16];
        snprintf(fj, sizeof fj, "%s" JNL_SUFFIX, s->from);
        unlink(fj);
    }
    if (replaced && remove_tree(old) != 0)
        ck_log(CK_LOG_WARN, "could not remove the old %s (left as %s)", s->path,
               old);
    return CK_OK;
}

ck_code ck_store_commit(ck_store *s, ck_err *err)
{
    /* Under MPI every rank writes a temporary of its own and rank 0 takes
     * the others' parts into its own (pipelines/stream.c): only rank 0
     * commits, and every rank learns how that went.  The others'
     * temporaries go when they close. */
    if (ck_comm_size() > 1)
        return ck_comm_agree(ck_comm_rank() == 0 ? commit_here(s, err) : CK_OK,
                             err);
    return commit_here(s, err);
}

ck_code ck_store_commit_all(ck_store **s, int n, ck_err *err)
{
    ck_code rc = CK_OK;

    for (int k = 0; rc == CK_OK && k < n; k++)
        rc = ck_store_commit(s[k], err);
    /* A signal during the renames takes them back: a run that dies of
     * one leaves no output (chunkctl(1), Temporaries) */
    if (rc == CK_OK && !ck_finish())
        rc = ck_err_set(err, CK_ESTOPPED, "interrupted");
    /* all outputs or none (the fault walk, tests/fault, left s.h5 and
     * m.zarr behind when a third one's rename failed) */
    for (int k = 0; rc != CK_OK && k < n; k++)
        ck_store_uncommit(s[k]);
    return rc;
}

void ck_store_uncommit(ck_store *s)
{
    if (s && s->committed && rename(s->path, s->tmp) == 0)
        s->committed = 0;
}

ck_code ck_store_create(const char *path, ck_store_kind kind, int force,
                        ck_store **out, ck_err *err)
{
    return create_in(path, kind, force, NULL, out, err);
}

/* ---- resuming (see io/journal.h) ----
 *
 * A Zarr output's temporary holds JOURNAL, the record of its units that
 * are written whole.  A resumed run creates a temporary of its own as
 * any run does, and moves into it each unit the killed run recorded whose
 * stored bytes still check, so that what it takes over is its own (and
 * recorded in its own journal) before anything else happens: killed
 * again, it can be resumed again.  The killed run's temporary is removed
 * when the resumed run commits. */
#define JOURNAL ".ck-journal"

/* The dead owner's temporary of dir/base that holds the longest journal:
 * its leaf into leaf (NAME_MAX + 1), its owner into *who; 0 when there
 * is none. */
static int find_resumable(const char *dir, const char *base, ck_store_kind kind,
                          char *leaf, tmp_owner *who)
{
    char prefix[NAME_MAX + 16], host[256], mine[NAME_MAX + 1],
        jp[PATH_MAX + NAME_MAX + 32];
    off_t best = -1;
    struct dirent *e;
    DIR *d;

    if (snprintf(prefix, sizeof prefix, ".%s.ck-tmp-", base) >=
            (int)sizeof prefix ||
        !(d = opendir(dir)))
        return 0;
    host_name(host, sizeof host);
    while ((e = readdir(d)) != NULL) {
        size_t np = strlen(prefix);
        struct stat st;
        tmp_owner o;
        if (strncmp(e->d_name, prefix, np) != 0 ||
            !parse_owner(e->d_name + np, &o) || o.old || o.jnl || !o.host[0] ||
            tmp_leaf(mine, base, o.pid, o.start, host) != 0 ||
            strcmp(mine, e->d_name) != 0 || !owner_gone(&o))
            continue;
        snprintf(jp, sizeof jp, "%s/%s%s", dir, e->d_name,
                 kind == CK_KIND_ZARR ? "/" JOURNAL : JNL_SUFFIX);
        if (lstat(jp, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= best)
            continue;
        best = st.st_size;
        snprintf(leaf, NAME_MAX + 1, "%s", e->d_name);
        *who = o;
    }
    closedir(d);
    return best >= 0;
}

ck_code ck_store_create_resumable(const char *path, ck_store_kind kind,
                                  int force, const ck_journal_key *key,
                                  int resume, ck_store **out, ck_err *err)
{
    char dir[PATH_MAX], base[PATH_MAX], leaf[NAME_MAX + 1], from[PATH_MAX],
        jp[PATH_MAX + 32], when[64];
    ck_journal *kept = NULL;
    ck_store *s = NULL;
    tmp_owner who;
    int found = 0;
    size_t n = strlen(path);
    ck_code rc;

    if (resume && ck_comm_size() > 1)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: --resume is not supported under MPI yet (run "
                          "again without it)",
                          path);
    if (key->overflow) {
        if (resume)
            ck_log(CK_LOG_NOTE,
                   "%s: runs of this many inputs are not resumed; starting "
                   "afresh",
                   path);
        return ck_store_create(path, kind, force, out, err);
    }
    if (n == 0 || n >= PATH_MAX - 64)
        return ck_err_set(err, CK_EUSAGE, "'%s': bad output name", path);
    snprintf(dir, sizeof dir, "%s", path);
    snprintf(base, sizeof base, "%s", path);
    while (n > 1 && base[n - 1] == '/') {
        n--;
        base[n] = dir[n] = '\0';
    }
    const char *d = dirname(dir), *b = basename(base);
    if (resume && (found = find_resumable(d, b, kind, leaf, &who))) {
        int here = strcmp(d, ".") == 0;
        snprintf(from, sizeof from, "%s%s%s", here ? "" : d, here ? "" : "/",
                 leaf);
        snprintf(jp, sizeof jp, "%s%s", from,
                 kind == CK_KIND_ZARR ? "/" JOURNAL : JNL_SUFFIX);
        CK_TRY(ck_journal_read(jp, key, path, &kept, err));
        found = kept != NULL;
    }
    if ((rc = create_in(path, kind, force, found ? leaf : NULL, &s, err)) !=
        CK_OK) {
        ck_journal_close(kept);
        return rc;
    }
    /* after create_in: an output that exists is the one thing to say */
    if (resume && !found)
        ck_log(CK_LOG_NOTE, "%s: nothing to resume; starting afresh", path);
    /* A Zarr temporary holds its journal; an HDF5 file has it beside. */
    if (kind == CK_KIND_ZARR) {
        snprintf(jp, sizeof jp, "%s/" JOURNAL, s->tmp);
    } else {
        snprintf(s->jtmp, sizeof s->jtmp, "%s" JNL_SUFFIX, s->tmp);
        snprintf(jp, sizeof jp, "%s", s->jtmp);
        pending_add(s->jtmp);
    }
    if ((rc = ck_journal_create(jp, key, path, &s->journal, err)) != CK_OK) {
        ck_journal_close(kept);
        ck_store_close(s);
        return rc;
    }
    if (found) {
        s->kept = kept;
        snprintf(s->from, sizeof s->from, "%s", from);
        start_str(who.start, when, sizeof when);
        ck_log(CK_LOG_NOTE,
               "%s: resuming the run killed as pid %ld (started %s): %lld "
               "units recorded in %s",
               path, who.pid, when, (long long)ck_journal_count(kept), from);
    }
    *out = s;
    return CK_OK;
}

int ck_array_units(const ck_array *a, ck_grid *units)
{
    const ck_store *s = a->store;
    ck_err e;

    if (!s->journal || !s->ops->unit_sum || !s->ops->take_unit)
        return 0;
    if (a->info.ndim > 0 && a->info.shards[0] > 0)
        return ck_grid_init(units, a->info.ndim, a->info.shape, a->info.shards,
                            1, &e) == CK_OK;
    *units = a->grid;
    return 1;
}

enum { REC_BATCH = 64 };

/* Takes from the store tree at 'from' the units of a that journal j
 * recorded and that kept (if any) does not mark yet; each taken unit is
 * marked in kept, counted in *n and recorded in a's journal.  strict: a
 * unit that does not check is an error, not one to compute again. */
static ck_code take_units(ck_array *a, const ck_grid *units, const char *from,
                          const ck_journal *j, unsigned char *kept, int strict,
                          int64_t *n, ck_err *err)
{
    ck_store *s = a->store;
    ck_journal_entry rec[REC_BATCH];
    int nrec = 0;

    *n = 0;
    for (int64_t i = 0; i < ck_journal_count(j); i++) {
        const ck_journal_entry *e = ck_journal_at(j, i);
        ck_chunk c;
        int taken = 0;
        if (e->unit >= units->total_chunks || (kept && kept[e->unit]) ||
            strcmp(ck_journal_array(j, e), a->info.name) != 0)
            continue;
        ck_grid_chunk(units, e->unit, &c);
        CK_TRY(s->ops->take_unit(a, from, c.coords, e->off, e->len, e->sum,
                                 &taken, err));
        if (!taken && strict)
            return ck_err_set(err, CK_ECORRUPT,
                              "%s:%s: unit %lld written by another rank in "
                              "%s does not check",
                              s->path, a->info.name, (long long)e->unit, from);
        if (!taken)
            continue;
        if (kept)
            kept[e->unit] = 1;
        ++*n;
        /* A unit inside a file (HDF5: off > 0) is written anew, at an
         * offset of this file's: record where, as unit_sum finds it, or a
         * resume of this run would look for it at the old one (and
         * recompute it).  A unit that is a file of its own moved whole. */
        ck_journal_entry ne = *e;
        if (e->off != 0 && s->ops->unit_sum) {
            int found = 0;
            CK_TRY(s->ops->unit_sum(a, c.coords, &found, &ne.off, &ne.len,
                                    &ne.sum, err));
            if (!found)
                continue; /* kept, not recorded: a resume writes it again */
        }
        rec[nrec++] = ne;
        if (nrec == REC_BATCH) {
            CK_TRY(ck_journal_append(s->journal, a->info.name, rec, nrec, err));
            nrec = 0;
        }
    }
    return ck_journal_append(s->journal, a->info.name, rec, nrec, err);
}

ck_code ck_array_resume(ck_array *a, const ck_grid *units, unsigned char *kept,
                        int64_t *nkept, ck_err *err)
{
    ck_store *s = a->store;

    *nkept = -1;
    if (!s->kept || !s->from[0])
        return CK_OK;
    *nkept = 0;
    return take_units(a, units, s->from, s->kept, kept, 0, nkept, err);
}

ck_code ck_array_part(const ck_array *a, char *tmp, char *journal, ck_err *err)
{
    const ck_store *s = a->store;

    if (!s->journal)
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: not journaled, so not written in parts",
                          s->path);
    snprintf(tmp, PATH_MAX, "%s", s->tmp);
    snprintf(journal, PATH_MAX, "%s", ck_journal_path(s->journal));
    return CK_OK;
}

ck_code ck_array_take_part(ck_array *a, const ck_grid *units, const char *tmp,
                           const char *journal, int64_t *n, ck_err *err)
{
    ck_store *s = a->store;
    ck_journal *j = NULL;
    ck_code rc;

    *n = 0;
    if (!s->journal)
        return ck_err_set(err, CK_ENOTSUP, "%s: not journaled", s->path);
    CK_TRY(ck_journal_read(journal, ck_journal_key_of(s->journal), s->path, &j,
                           err));
    if (!j)
        return ck_err_set(err, CK_ECORRUPT, "%s: the part in %s has no journal",
                          s->path, tmp);
    rc = take_units(a, units, tmp, j, NULL, 1, n, err);
    ck_journal_close(j);
    return rc;
}

ck_code ck_array_record(ck_array *a, const ck_grid *units, const int64_t *u,
                        int n, ck_err *err)
{
    ck_store *s = a->store;
    ck_journal_entry rec[REC_BATCH];
    int nrec = 0;

    for (int i = 0; i < n; i++) {
        ck_chunk c;
        int found = 0;
        ck_grid_chunk(units, u[i], &c);
        rec[nrec] = (ck_journal_entry){.unit = u[i]};
        CK_TRY(s->ops->unit_sum(a, c.coords, &found, &rec[nrec].off,
                                &rec[nrec].len, &rec[nrec].sum, err));
        if (found && ++nrec == REC_BATCH) {
            CK_TRY(ck_journal_append(s->journal, a->info.name, rec, nrec, err));
            nrec = 0;
        }
    }
    return ck_journal_append(s->journal, a->info.name, rec, nrec, err);
}
