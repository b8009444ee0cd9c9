/*
 * cache.h - the on-disk cache of compiled kernels, one for the three compiling backends
 * (CPU modules pxl-KEY.so, CUDA PTX cuda-smNN-nvrtcNN-KEY.ptx, OpenCL program binaries
 * opencl-KEY.bin): where it lives, whom it must belong to, and how an entry is written
 * and checked before anything loads it.
 *
 * Directory: the one pxl_set_cache_dir named, else $PXL_CACHE_DIR, else
 * $XDG_CACHE_HOME/pxl, else ~/.cache/pxl, created mode 0700. It is used only when it is
 * a real directory (not a symbolic link) owned by the effective user and not writable by
 * its group or others; otherwise, or when it cannot be created or later written (read
 * only, full), the backend works in a fresh private directory (mkdtemp under $TMPDIR or
 * /tmp, 0700), with a warning naming the directory and the reason, and removes it when
 * it is freed. With none of the variables set (no HOME), that private directory is the
 * cache, without a warning: never a predictable shared name.
 *
 * Entries: NAME holds the bytes the backend loads; NAME.sum, written after NAME (both
 * with file_write_atomic: fsync'ed, renamed into place), one line
 *     pxl-cache 1 key=KEY source=SRC size=N sum=SUM
 * with the entry's key (its name holds it too), a hash of the generated source it was
 * built from, its size and a 64-bit FNV-1a hash of its bytes. cache_get reads the entry
 * once, through a descriptor opened without following links whose owner and mode are
 * checked with fstat, and hands back exactly the bytes it verified. An entry that fails
 * (missing or damaged sum, other bytes, built for another key or another source) is
 * removed with a warning and the caller rebuilds it; an entry owned by another user or
 * writable by others makes the whole directory untrusted (the private fallback, as
 * above). FNV-1a is not cryptographic: it is there against damage (truncation, flipped
 * bits, a file copied to the wrong name), not against an attacker, whom the ownership
 * rules keep out (only this user can write the directory and its entries).
 */
#ifndef PXL_CACHE_H
#define PXL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Folded into every backend's keys: a new entry format or key recipe gives new names,
 * so entries of older pxl versions are never looked up. */
#define CACHE_FORMAT "pxl-cache-1"

typedef struct Cache Cache;

/* What an entry was built from, as recorded in its sum file. */
typedef struct {
  uint64_t key;    /* the entry's key (hash of source, tools, device, options) */
  uint64_t source; /* hash of the generated source alone */
} CacheId;

/* Opens the cache directory for a backend: explicit_dir, or with NULL or "" the
 * default (see above). A directory that cannot be created or is refused is replaced by a
 * private temporary one, with a warning in w (kept: later warnings go there too). Fails
 * (PXL_EIO naming both) only when no directory at all can be had; PXL_ENOMEM. Free
 * *out with cache_free. */
int cache_open(const char *explicit_dir, Warn *w, Cache **out, Err *err);
/* Frees c (NULL: no-op); a private temporary directory is removed with its files. */
void cache_free(Cache *c);
/* The directory in use (the cache, or the private one after a fallback). */
const char *cache_dir_in_use(const Cache *c);

/* Entry `name` (e.g. "pxl-KEY.so") when it is present and sound for id: true with its
 * bytes in *data (PXL_FREE; NUL-terminated after *n bytes). False when missing; a bad
 * entry is removed (warning naming it and why). */
bool cache_get(Cache *c, const char *name, CacheId id, char **data, size_t *n);
/* Stores n bytes as entry `name` built from id, then its sum file. A cache that cannot
 * be written is only slower: the failure moves c to a private directory (warning). */
void cache_put(Cache *c, const char *name, CacheId id, const void *data, size_t n);
/* Removes entry `name` and its sum file, with a warning saying why (e.g. a binary its
 * driver refused though its sum matched). */
void cache_drop(Cache *c, const char *name, const char *why);

/* Writes n bytes to a file `name` of the directory in use (file_write_atomic, 0600).
 * When that fails in the cache directory, moves to the private one (warning naming the
 * cache directory and the reason) and writes there; PXL_EIO when that fails too. */
int cache_write(Cache *c, const char *name, const void *data, size_t n, Err *err);
/* Writes n bytes (0: none) to a new file of this process only (O_EXCL, 0600) named
 * NAME.XXXXXX in the directory in use, falling back as cache_write does; its path in
 * path[size]. Nothing else writes there: what is dlopened from it is what was written. */
int cache_temp_file(Cache *c, const char *name, const void *data, size_t n, char *path, size_t size, Err *err);

#endif
