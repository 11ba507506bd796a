/*
 * io/store.h - one dataset abstraction over HDF5 files and Zarr v2 stores.
 * Arrays are addressed as PATH[:DATASET] ("data.h5:/g/x", "s.zarr",
 * "s.zarr:/g/x").  Chunks move between disk and memory whole, decoded, in
 * native byte order and C order; region reads and dtype conversion are
 * built on that.  Stores are opened read-only; new stores are written under
 * a temporary name beside the target and renamed by ck_store_commit, so an
 * output appears only complete.  Every function here may be called from
 * several threads at once on the same array (HDF5 calls are serialised
 * inside io/hdf5, Zarr chunks are independent files).  Nothing here knows
 * about compute.  The types that describe an array (ck_array_info,
 * ck_array_spec, ck_attr, ...) are io/array.h's; this header is the
 * dispatcher that picks a store kind and calls it.
 */
#ifndef CK_STORE_H
#define CK_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_err.h"
#include "base/ck_grid.h"
#include "base/ck_mem.h"
#include "io/array.h"

/* Splits "PATH[:DATASET]": a target that exists as given is a path
 * ("a:b.h5"); otherwise at the ':' after the longest prefix that exists
 * (so "f.h5:/a:b" names dataset "/a:b", and "a:b.h5:/x" file "a:b.h5"),
 * or where none does (a new output), after the first prefix with a
 * store's extension (.h5, .zarr, ...), or else at the last ':'.  *dataset
 * is "" when absent.  path and dataset are written into caller buffers of
 * pathn and datasetn bytes.  CK_EUSAGE when they do not fit, and for
 * "PATH:" (nothing after the ':') that does not exist. */
ck_code ck_target_split(const char *target, char *path, size_t pathn,
                        char *dataset, size_t datasetn, ck_err *err);

/* The kind of store at path: by content when it exists, else by name
 * (.zarr -> Zarr; .h5 .hdf5 .he5 .hdf .nc -> HDF5).  CK_KIND_NONE if
 * neither. */
ck_store_kind ck_store_kind_guess(const char *path);

/* Opens an existing store read-only.  CK_EIO when path is missing,
 * CK_EFORMAT when it is neither an HDF5 file nor a Zarr store. */
ck_code ck_store_open(const char *path, ck_store **out, ck_err *err);
/* Closes a store; a store being written that was not committed is deleted
 * with its temporary files.  Accepts NULL.  Arrays must be closed first. */
void ck_store_close(ck_store *s);
ck_store_kind ck_store_kind_of(const ck_store *s);
const char *ck_store_path(const ck_store *s);

/* CK_EUSAGE (where: the message's prefix) when writing output store 'out'
 * would touch input store 'in': the same file or folder, 'out' inside
 * the folder 'in' (a Zarr store), or 'in' inside 'out' (which --force
 * would delete).  Paths are compared after resolving links; an output
 * whose folder does not exist yet touches nothing. */
ck_code ck_store_check_apart(const char *in, const char *out, const char *where,
                             ck_err *err);

/* Names of all arrays in the store, depth first, sorted within a group. */
ck_code ck_store_list(ck_store *s, ck_names *out, ck_err *err);
/* The names of all groups but the root, sorted (a group before what it
 * holds), empty ones and those holding only attributes included. */
ck_code ck_store_list_groups(ck_store *s, ck_names *out, ck_err *err);

/* Appends to *out one message ("s.zarr:/g/x: .zmetadata lists it, but
 * g/x/.zarray is missing") for each name the store's metadata gives that
 * leads nowhere: what zarr.open_consolidated or h5py's f[name] would name
 * but cannot (or can only half) read.  Such names are in no listing. */
ck_code ck_store_dangling(ck_store *s, ck_names *out, ck_err *err);

/* The arrays of ck_store_list that chunkctl can read: those whose open
 * says CK_ENOTSUP (a type or a layout it does not hold: float16, strings,
 * compound types, a null dataspace) are left out, each with a warning
 * naming it and why when 'warn'.  Any other failure to open one fails. */
ck_code ck_store_list_readable(ck_store *s, int warn, ck_names *out,
                               ck_err *err);

/* Opens array 'name' ("" or NULL: the only array).  CK_EUSAGE listing the
 * arrays when name is "" and there are several, or when name is not one of
 * them (naming a dataset that is not there is the caller's mistake, like an
 * unknown option); CK_EFORMAT when the store holds no arrays. */
ck_code ck_array_open(ck_store *s, const char *name, ck_array **out,
                      ck_err *err);
void ck_array_close(ck_array *a);
const ck_array_info *ck_array_info_of(const ck_array *a);
/* The store an array belongs to. */
ck_store *ck_array_store(const ck_array *a);
/* The chunk grid of an opened array (shape, chunks). */
const ck_grid *ck_array_grid(const ck_array *a);

/* Scratch bytes one caller needs in its arena for one read_chunk or
 * write_chunk on this array (ck_arena_reset between calls). */
size_t ck_array_scratch_bytes(const ck_array *a);

/* 1 when a's chunks are stored raw where the store can find them without
 * a lookup (HDF5 datasets with no filters and indexed chunk locations,
 * see io/hdf5/h5_read.c): ck_array_read_region then reads a region's bytes
 * straight from the file, and needs no chunk buffer. */
int ck_array_raw(ck_array *a);

/* Scratch bytes for one ck_array_read_region: a chunk, or for a raw array
 * a few of its rows. */
size_t ck_array_region_scratch_bytes(ck_array *a);

/* Reads chunk 'coords' into caller-owned dst, which holds a full chunk
 * (info.chunks elements of info.dtype), decoded, native byte order, C
 * order.  Parts past the array edge are unspecified.  A chunk missing on
 * disk reads as the fill value (0 when there is none).  CK_ECORRUPT naming
 * the chunk when it does not decode to exactly a chunk's bytes. */
ck_code ck_array_read_chunk(ck_array *a, const int64_t *coords, void *dst,
                            ck_arena *scratch, ck_err *err);

/* 1 with v set when chunk 'coords' can be seen in place: it is stored
 * whole, raw (no filters) in this machine's byte order, at an address
 * aligned for its elements, inside the file (HDF5 datasets whose chunk
 * locations are indexed; see io/hdf5/h5_read.c).  0 otherwise, or when the
 * mapping fails: then read it with ck_array_read_chunk, which reports
 * what is wrong.  Release the view with ck_chunk_view_release. */
int ck_array_view_chunk(ck_array *a, const int64_t *coords, ck_chunk_view *v);
/* The same for bytes [off, off + len) of the chunk only (v->data points at
 * byte off; only those pages are mapped): a few rows of a large chunk. */
int ck_array_view_chunk_bytes(ck_array *a, const int64_t *coords, size_t off,
                              size_t len, ck_chunk_view *v);
void ck_chunk_view_release(ck_chunk_view *v);

/* Reads the region start[d] <= i < stop[d] taking every step[d]-th element
 * (step NULL: 1) into dst, C order, converted to dtype 'to'.  Chunks come
 * through cache when it is not NULL (a ck_chunk_cache of this array, see
 * io/cache.h) and the array is not raw.  scratch must hold
 * ck_array_region_scratch_bytes(a). */
struct ck_chunk_cache;
ck_code ck_array_read_region(ck_array *a, const int64_t *start,
                             const int64_t *stop, const int64_t *step,
                             ck_dtype to, void *dst,
                             struct ck_chunk_cache *cache, ck_arena *scratch,
                             ck_err *err);

/* Creates a new store of 'kind' that will appear at path on commit.
 * CK_EEXIST when path exists and force is 0.  The store is written under
 * a temporary name in the same directory that names its owner
 * (".BASE.ck-tmp-PID-START@HOST"); temporaries of path whose owner is
 * gone (this host, no such process or one started at another time) are
 * removed first, with a note each. */
ck_code ck_store_create(const char *path, ck_store_kind kind, int force,
                        ck_store **out, ck_err *err);
/* ck_store_create for an output a later run may resume (--resume; see
 * io/journal.h): the temporary keeps a journal of its written units
 * under key, the identity of this run.  With resume, a temporary of path
 * left by a killed run (owner gone, as above) whose journal has this key
 * is not removed: the units it recorded are taken over, each when its
 * stored bytes still check (ck_array_resume), and it is removed once
 * this run commits.  CK_EUSAGE, naming what differs, when its journal
 * has another key; the temporary is then left as it is.  Nothing to
 * resume: a note, and the run goes on as ck_store_create. */
struct ck_journal_key;
ck_code ck_store_create_resumable(const char *path, ck_store_kind kind,
                                  int force, const struct ck_journal_key *key,
                                  int resume, ck_store **out, ck_err *err);

/* The unit grid of an array written under a journal: its chunk grid, or
 * for a sharded Zarr array the grid of its shards.  0 when a is not
 * journaled (ck_store_create). */
int ck_array_units(const ck_array *a, ck_grid *units);
/* Takes over the units of a that the killed run recorded and whose stored
 * bytes check: kept[u] set to 1 for each (kept holds units->total_chunks
 * bytes, zeroed), *nkept their count (-1 when this run resumes none);
 * they are recorded in this run's journal too. */
ck_code ck_array_resume(ck_array *a, const ck_grid *units, unsigned char *kept,
                        int64_t *nkept, ck_err *err);
/* Where another process writing the same output under the same key
 * (an MPI rank) keeps its part: its temporary and journal (PATH_MAX
 * each).  CK_ENOTSUP when a is not journaled. */
ck_code ck_array_part(const ck_array *a, char *tmp, char *journal, ck_err *err);
/* Takes into a every unit of the same array that the part at tmp (with
 * its journal, as ck_array_part gives them) recorded, each when its
 * stored bytes check; *n their count.  CK_ECORRUPT naming the unit when
 * one does not check: the part was written by a live run and must be
 * whole. */
ck_code ck_array_take_part(ck_array *a, const ck_grid *units, const char *tmp,
                           const char *journal, int64_t *n, ck_err *err);
/* Records units u[0..n) of a (linear numbers in units), written whole,
 * in the journal, with their stored bytes' checksums. */
ck_code ck_array_record(ck_array *a, const ck_grid *units, const int64_t *u,
                        int n, ck_err *err);

/* Creates an array (and its parent groups) in a store being written. */
ck_code ck_array_create(ck_store *s, const ck_array_spec *spec, ck_array **out,
                        ck_err *err);
/* Encodes and writes one full chunk (chunk shape, C order, native order,
 * the array's dtype; pad edge chunks with the fill value). */
ck_code ck_array_write_chunk(ck_array *a, const int64_t *coords,
                             const void *src, ck_arena *scratch, ck_err *err);
/* Copies the attributes of src_name in src onto dst_name in dst (groups
 * and arrays alike; "/" is the root).  Values that the destination cannot
 * hold are skipped with a note. */
ck_code ck_store_copy_attrs(ck_store *src, const char *src_name, ck_store *dst,
                            const char *dst_name, ck_err *err);

/* All attributes of object 'name' ("/" the root) as the text of one JSON
 * object (malloc'd, the caller frees; "{}" when there are none), and
 * setting them from such a text (members are added or replaced; a Zarr
 * store rewrites the object's attributes whole).  The text is Python's
 * JSON, numbers kept exactly as written, bare NaN and Infinity included
 * (io/attrs_json.h reads it).  Values JSON cannot hold the way the store
 * does (HDF5 references, compounds) are left out when reading, with a
 * note. */
ck_code ck_store_get_attrs(ck_store *s, const char *name, char **json,
                           ck_err *err);
ck_code ck_store_set_attrs(ck_store *s, const char *name, const char *json,
                           ck_err *err);

/* Sets attribute 'key' of object 'name' ("/" or "" the root group, or a
 * group or array such as "/coef") in a store being written, before
 * ck_store_commit; an existing 'key' is replaced, whatever its type.
 * HDF5: a scalar attribute, STR a variable-length UTF-8 string (h5py reads
 * str), F64 little-endian float64, I64 little-endian int64.  Zarr: one
 * member of that object's .zattrs (created if absent), other members kept
 * as they are written; STR a JSON string in ASCII (\u escapes: zarr-python
 * 2 reads .zattrs as ASCII), I64 an integer literal, F64 a literal with a
 * '.' or an exponent ("1.0", so Python reads a float) or, as zarr-python
 * writes them, NaN, Infinity, -Infinity.  CK_EUSAGE for a
 * store opened read-only or committed, an empty key, key or string not
 * valid UTF-8, or a string not NUL-terminated within str[]; CK_EFORMAT
 * when 'name' is not there. */
ck_code ck_store_set_attr(ck_store *s, const char *name, const char *key,
                          const ck_attr *v, ck_err *err);

/* Reads attribute 'key' of object 'name' into *v (opened stores and stores
 * being written alike).  CK_EFORMAT "PATH:NAME: no attribute 'key'" when
 * it is absent, and naming the object when that is absent.  HDF5: one
 * value (scalar, or an array of one element); integers (signed, or
 * unsigned up to INT64_MAX) and h5py's bool read as I64, floats as F64,
 * strings of any length, padding and character set as STR.  Zarr (JSON):
 * an integer literal is I64, a literal with a fraction or exponent and
 * NaN/Infinity/-Infinity are F64, true/false I64 1/0, a string STR.
 * CK_ENOTSUP for other values (arrays, objects, null, compounds), integers
 * outside int64 and strings longer than 255 bytes. */
ck_code ck_store_get_attr(ck_store *s, const char *name, const char *key,
                          ck_attr *v, ck_err *err);

/* Removes the temporary files of every store still being written.  For a
 * signal handler on SIGINT/SIGTERM, just before the process dies: the lists
 * it walks are fixed arrays, it takes no lock and allocates nothing
 * (removing a Zarr directory tree uses nftw, which may). */
void ck_store_abandon_all(void);

/* Flushes and renames the temporary store over path.  After it the store
 * may only be closed.  Under MPI a collective: rank 0 commits (its
 * temporary holds every rank's units by then) and all ranks return how
 * that went; the other ranks' temporaries are removed when they close. */
ck_code ck_store_commit(ck_store *s, ck_err *err);

/* Commits the run's n outputs, all or none: a failed commit takes back
 * the ones before it, and so does a signal that came before the run
 * claimed its end (ck_finish; CK_ESTOPPED), so that a run that dies of
 * a signal leaves no output and one that did not leaves all of them.
 * What the run's commands use. */
ck_code ck_store_commit_all(ck_store **s, int n, ck_err *err);

/* Undoes a ck_store_commit of this run: the output goes back to its
 * temporary name, so ck_store_close drops it.  For a run with several
 * outputs whose later commit failed: none of them is left.  An older
 * output that the commit replaced (--force) is gone already. */
void ck_store_uncommit(ck_store *s);

#endif
