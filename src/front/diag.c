/*
 * diag.c - diagnostics of the front end: "file:line:col: error: msg", then the source
 * line and a caret under the column, accumulated in one text buffer so the API can hand
 * all of them to the user at once (pxl_errmsg).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "front/front.h"
#include "util/alloc.h"
#include "util/hash.h"

void diag_init(Diag *d, const char *filename, const char *source) {
  memset(d, 0, sizeof *d);
  d->filename = filename;
  d->source = source;
}

void diag_free(Diag *d) {
  PXL_FREE(d->text);
  d->text = NULL;
  d->len = d->cap = 0;
}

static void append(Diag *d, const char *s, size_t n) {
  if (d->oom) return;
  if (d->len + n + 1 > d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 1024;
    while (cap < d->len + n + 1) cap *= 2;
    char *t = PXL_REALLOC(d->text, cap);
    if (!t) {
      d->oom = true;
      return;
    }
    d->text = t;
    d->cap = cap;
  }
  memcpy(d->text + d->len, s, n);
  d->len += n;
  d->text[d->len] = 0;
}

/* Appends the source line `line` and a caret under column `col`. */
static void show_line(Diag *d, int line, int col) {
  const char *s = d->source;
  if (!s) return;
  for (int l = 1; l < line && *s; s++)
    if (*s == '\n') l++;
  const char *e = s;
  while (*e && *e != '\n') e++;
  size_t n = (size_t)(e - s);
  if (n > 400) n = 400;
  append(d, "  ", 2);
  append(d, s, n);
  append(d, "\n  ", 3);
  for (int i = 1; i < col && (size_t)i <= n; i++) append(d, s[i - 1] == '\t' ? "\t" : " ", 1);
  append(d, "^\n", 2);
}

/* Whether an error of an instance of a generic declaration (d->context set) is one an
 * earlier instance made at the same place with the same words: remembered, not shown
 * again. */
static bool seen_before(Diag *d, Loc loc, const char *msg) {
  if (!d->context) return false;
  const int at[2] = {loc.line, loc.col};
  uint64_t h = hash_str(hash_bytes(HASH_INIT, at, sizeof at), msg);
  int n = d->nseen < (int)(sizeof d->seen / sizeof d->seen[0]) ? d->nseen : (int)(sizeof d->seen / sizeof d->seen[0]);
  for (int i = 0; i < n; i++)
    if (d->seen[i] == h) return true;
  d->seen[d->nseen++ % (int)(sizeof d->seen / sizeof d->seen[0])] = h;
  return false;
}

void diag_error(Diag *d, Loc loc, const char *fmt, ...) {
  d->nerrors++;
  /* "expected ..." or "... nested too deeply" where the previous error was reported is a
   * consequence of that error (the parser unwinding without having consumed the token):
   * not shown. */
  if (d->nshown > 0 && loc.line == d->last.line && loc.col == d->last.col &&
      (!strncmp(fmt, "expected", 8) || strstr(fmt, "nested too deeply")))
    return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (seen_before(d, loc, msg)) return;
  d->last = loc;
  d->nshown++;
  if (d->nshown == DIAG_MAX_ERRORS + 1) {
    static const char more[] = "note: too many errors; stopping here\n";
    append(d, more, sizeof more - 1);
  }
  if (d->nshown > DIAG_MAX_ERRORS) return;
  char head[1500];
  int n = snprintf(head, sizeof head, "%s:%d:%d: error: %s%s%s%s\n", d->filename ? d->filename : "<input>",
                   loc.line, loc.col, msg, d->context ? " [" : "", d->context ? d->context : "", d->context ? "]" : "");
  append(d, head, (size_t)(n < (int)sizeof head ? n : (int)sizeof head - 1));
  if (loc.line > 0) show_line(d, loc.line, loc.col);
}
