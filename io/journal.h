/*
 * io/journal.h - the record of a run's written chunks that lets a later
 * run resume it (--resume).  A journal is a small text file inside the
 * temporary output: a header naming what the run was (chunkctl's version,
 * a hash of its pipeline or command, its inputs' path, size and time), then
 * one line per unit of stored output (a chunk, or a whole shard of a
 * sharded Zarr array): the array, the unit's number, and the length and
 * checksum of its stored bytes.  Lines are appended and fsync'd a batch
 * at a time, each with a CRC of its own, so a line cut short by a kill is
 * dropped, and the stored bytes' checksum is what a resuming run checks
 * before it keeps a unit.  Nothing here knows where units are stored: the
 * store kinds read and move them (io/store.c).
 */
#ifndef CK_JOURNAL_H
#define CK_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_err.h"

/* What a run is, as lines "FIELD VALUE\n": compared field by field when a
 * run asks to resume, so a refusal can name what differs. */
typedef struct ck_journal_key {
    char text[8192];
    size_t len;
    int overflow; /* too many inputs to record: never resumable */
} ck_journal_key;

/* Starts a key with this chunkctl's version. */
void ck_journal_key_init(ck_journal_key *k);
/* Adds "command HASH": a 64-bit hash of the bytes that decide the output
 * (a pipeline's JSON text, the options that change bytes). */
void ck_journal_key_command(ck_journal_key *k, const void *bytes, size_t n);
/* Adds "input PATH SIZE MTIME" for an input path (as stat gives them; for
 * a Zarr store, also a sum over every file and folder below it). */
void ck_journal_key_input(ck_journal_key *k, const char *path);

/* 64-bit FNV-1a, to fold option bytes into a command hash. */
uint64_t ck_journal_hash(uint64_t h, const void *p, size_t n);
#define CK_JOURNAL_HASH_INIT 0xcbf29ce484222325ull

typedef struct ck_journal ck_journal;

typedef struct ck_journal_entry {
    int64_t unit; /* chunk (or shard) number, C order */
    uint64_t len; /* stored bytes */
    uint64_t sum; /* their checksum (see ck_journal_sum_*) */
    uint64_t off; /* where they start in their file (HDF5; 0 for Zarr) */
    int array;    /* index into the journal's array names (reading) */
} ck_journal_entry;

/* Creates a new journal at path holding key (fsync'd before it returns)
 * for the output 'target', which its messages name. */
ck_code ck_journal_create(const char *path, const ck_journal_key *key,
                          const char *target, ck_journal **out, ck_err *err);

/* Reads the journal at path, left by a killed run of 'target'.  *out NULL
 * when there is none or its header is cut short (nothing to resume).
 * CK_EUSAGE naming the first field that differs when its key is not key:
 * "TARGET: cannot resume: the killed run used INPUT of another size or
 * time (run without --resume to start afresh)".  Entries after a damaged
 * line are dropped. */
ck_code ck_journal_read(const char *path, const ck_journal_key *key,
                        const char *target, ck_journal **out, ck_err *err);

/* Entries read (ck_journal_read), and the array name of entry i. */
int64_t ck_journal_count(const ck_journal *j);
const ck_journal_entry *ck_journal_at(const ck_journal *j, int64_t i);
const char *ck_journal_array(const ck_journal *j, const ck_journal_entry *e);

/* Appends n entries of array 'array' and fsyncs them; safe from several
 * threads at once. */
ck_code ck_journal_append(ck_journal *j, const char *array,
                          const ck_journal_entry *e, int n, ck_err *err);

/* The key a journal was created with (ck_journal_create). */
const ck_journal_key *ck_journal_key_of(const ck_journal *j);

/* The path a journal was opened at. */
const char *ck_journal_path(const ck_journal *j);

void ck_journal_close(ck_journal *j);

/* The checksum of stored bytes: CRC-32C of each 1 MiB block folded with
 * FNV-1a's multiply, so a large shard can be summed a block at a time. */
enum { CK_JOURNAL_BLOCK = 1 << 20 };
typedef struct ck_journal_sum {
    uint64_t h, len;
} ck_journal_sum;
void ck_journal_sum_init(ck_journal_sum *s);
/* Adds one block: CK_JOURNAL_BLOCK bytes, or fewer for the last. */
void ck_journal_sum_block(ck_journal_sum *s, const void *p, size_t n);
/* Length and checksum of the n bytes of fd from off (to the end of the
 * file when fewer are left; UINT64_MAX: all of it).  -1 with errno on a
 * read error. */
int ck_journal_sum_fd(int fd, uint64_t off, uint64_t n, uint64_t *len,
                      uint64_t *sum);
/* The checksum of n bytes in memory, as ck_journal_sum_fd gives it for
 * the same bytes in a file. */
uint64_t ck_journal_sum_mem(const void *p, size_t n);

#endif
