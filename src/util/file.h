/*
 * file.h - small file helpers of the compiled-kernel caches: make a directory path,
 * write a file atomically (temporary name + rename, so a reader never sees half a file),
 * read a whole file.
 */
#ifndef PXL_FILE_H
#define PXL_FILE_H

#include <stddef.h>

#include "util/err.h"

/* mkdir -p dir. PXL_EIO with the failing component. */
int file_make_dirs(const char *dir, Err *err);
/* Writes n bytes to path through "<path>.tmp<pid>" and a rename. PXL_EIO on failure,
 * nothing left behind. */
int file_write_atomic(const char *path, const void *data, size_t n, Err *err);
/* Reads path into a NUL-terminated heap buffer (PXL_FREE); *n gets its length (may be
 * NULL). NULL when the file is missing or unreadable. */
char *file_read_all(const char *path, size_t *n);

#endif
