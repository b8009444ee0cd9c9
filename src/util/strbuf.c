/*
 * strbuf.c - growable string (see strbuf.h).
 */
#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"

void sb_append(StrBuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *t = PXL_REALLOC(b->s, cap);
    if (!t) {
      b->oom = true;
      return;
    }
    b->s = t;
    b->cap = cap;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void sb_printf(StrBuf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    sb_append(b, tmp, (size_t)n);
    return;
  }
  char *big = PXL_MALLOC((size_t)n + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb_append(b, big, (size_t)n);
  PXL_FREE(big);
}

void sb_free(StrBuf *b) {
  PXL_FREE(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
  b->oom = false;
}
