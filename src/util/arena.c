/*
 * arena.c - bump allocator for one compilation (see arena.h).
 */
#include "util/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

struct ArenaBlock {
  ArenaBlock *prev;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

Arena *arena_new(void) {
  Arena *a = PXL_CALLOC(1, sizeof *a);
  return a;
}

void arena_free(Arena *a) {
  if (!a) return;
  ArenaBlock *b = a->head;
  while (b) {
    ArenaBlock *p = b->prev;
    PXL_FREE(b);
    b = p;
  }
  PXL_FREE(a);
}

void *arena_alloc(Arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  ArenaBlock *b = a->head;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    ArenaBlock *nb = PXL_MALLOC(sizeof *nb + cap);
    if (!nb) {
      a->failed = true;
      return NULL;
    }
    nb->prev = b;
    nb->used = 0;
    nb->cap = cap;
    a->head = b = nb;
  }
  void *p = b->data + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *p = arena_alloc(a, (size_t)n + 1);
  if (!p) return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}
