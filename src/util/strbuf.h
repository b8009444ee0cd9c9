/*
 * strbuf.h - a growable string for generated code and reports.
 *
 * Out-of-memory is sticky: after a failed growth every append is ignored and `oom` stays
 * set, so long emitters check once at the end instead of after each append.
 */
#ifndef PXL_STRBUF_H
#define PXL_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  char *s;    /* NUL-terminated text (heap), or NULL before the first append */
  size_t len, cap;
  bool oom;   /* an append failed */
} StrBuf;

/* Appends formatted text. */
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends n bytes of s. */
void sb_append(StrBuf *b, const char *s, size_t n);
/* Frees the text; the buffer can be reused. */
void sb_free(StrBuf *b);

#endif
