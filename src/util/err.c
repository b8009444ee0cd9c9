/*
 * err.c - error slot (see err.h).
 */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>

int err_set(Err *e, int code, const char *fmt, ...) {
  if (!e) return code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  e->code = code;
  return code;
}
