/*
 * file.h - the one place pxl reads and writes whole files: image files, `pxl compile`
 * outputs, CSV results and the compiled-kernel caches all go through these.
 *
 * Writes are atomic: the bytes go to a temporary file in the target's directory
 * ("PATH.tmpXXXXXX"), which is flushed, fsync'ed and renamed over PATH, so a reader
 * never sees half a file and a failure (a full disk, say) leaves PATH as it was and no
 * temporary file behind. While a write is in progress its temporary name is recorded, so
 * that a signal handler can remove it (file_remove_partial) before the process dies.
 */
#ifndef PXL_FILE_H
#define PXL_FILE_H

#include <stdio.h>
#include <stddef.h>

#include "util/err.h"

/* Who may read a written file. */
typedef enum {
  FILE_SHARED,  /* the permissions of the file it replaces, else 0666 less the umask */
  FILE_PRIVATE  /* 0600: cache entries and other files only this user should read */
} FileMode;

/* A file being written atomically (file_atomic_open .. commit or abort). */
typedef struct {
  FILE *f;          /* write here */
  int slot;         /* index in the table of temporary files in progress, or -1 */
  char tmp[4400];   /* the temporary file */
  char path[4200];  /* the final name */
} AtomicFile;

/* Starts writing path: creates its temporary file with mode's permissions. PXL_EIO
 * naming path and the reason. */
int file_atomic_open(AtomicFile *af, const char *path, FileMode mode, Err *err);
/* Flushes, fsyncs and closes the temporary file and renames it to the final name. On
 * any failure (a write that failed earlier included) removes the temporary file and
 * returns PXL_EIO naming the final path and the reason ("No space left on device"). */
int file_atomic_commit(AtomicFile *af, Err *err);
/* Closes and removes the temporary file; the final name is untouched. */
void file_atomic_abort(AtomicFile *af);
/* Writes n bytes to path atomically (open, write, commit). */
int file_write_atomic(const char *path, const void *data, size_t n, FileMode mode, Err *err);

/* Removes the temporary files of the writes in progress and ends the child processes
 * that produce files (registered below). Async-signal-safe: for a SIGINT/SIGTERM handler,
 * which then re-raises the signal. */
void file_remove_partial(void);
/* Registers a temporary file written outside the atomic writer (a compiler's output) for
 * file_remove_partial; returns a slot for file_partial_forget, or -1 when the table is
 * full (the file is then only not removed by a signal). */
int file_partial_add(const char *path);
void file_partial_forget(int slot);
/* Registers a child process group (a C compiler started in its own group, which a
 * terminal's Ctrl-C does not reach) for file_remove_partial to kill; -1 when full. */
int file_child_add(int pgid);
void file_child_forget(int slot);

/* Reads path into a NUL-terminated heap buffer *out (PXL_FREE) of *n bytes (n may be
 * NULL). PXL_EIO when missing, unreadable or a directory; PXL_ETOOBIG naming the limit
 * when it holds more than cap bytes (so /dev/zero and other endless files stop there). */
int file_read_all(const char *path, size_t cap, char **out, size_t *n, Err *err);

/* mkdir -p dir, creating missing components with the given mode (0700 for caches). PXL_EIO
 * naming the failing component. */
int file_make_dirs(const char *dir, int mode, Err *err);

#endif
