/*
 * err.c - error slot (see err.h).
 */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(Err *e, int code, const char *fmt, ...) {
  if (!e) return code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  e->code = code;
  return code;
}

void warn_add(Warn *w, const char *fmt, ...) {
  if (!w) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  for (char *p = line; *p; p++)
    if (*p == '\n') *p = ' '; /* one warning, one line */
  size_t n = strlen(line);
  for (const char *p = w->text; p < w->text + w->len;) { /* already held? */
    const char *e = strchr(p, '\n');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && !memcmp(p, line, n)) return;
    p += l + 1;
  }
  if (w->len + n + 2 > sizeof w->text) return;
  memcpy(w->text + w->len, line, n);
  w->len += n;
  w->text[w->len++] = '\n';
  w->text[w->len] = 0;
}
