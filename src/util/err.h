/*
 * err.h - an error slot for internal layers that have no pxl_context.
 *
 * Internal functions return a PXL_* status and, on failure, leave the message in an Err
 * the caller passed; the API layer copies it into the context (pxl_errmsg).
 */
#ifndef PXL_ERR_H
#define PXL_ERR_H

#include <stddef.h>

typedef struct {
  int code;       /* PXL_* status of the failure, PXL_OK when none */
  char msg[2048]; /* human-readable message, no trailing newline */
} Err;

/* Records code and the formatted message in e (if non-NULL); returns code. */
int err_set(Err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Warnings: things that went wrong but were worked around (a cache directory that could
 * not be used, a GPU that failed and a run that moved to the CPU). Lines separated by
 * '\n'; a line already held is not added again; lines past the buffer are dropped. The
 * API hands them to the caller (pxl_take_warnings); the library never prints them. */
typedef struct {
  size_t len;
  char text[4096];
} Warn;

/* Adds a warning line to w (if non-NULL). */
void warn_add(Warn *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
