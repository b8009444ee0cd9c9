/*
 * arena.h - bump allocator for one compilation.
 *
 * The compiler allocates every token, node and string of a Program from one Arena and
 * frees it in one call (arena_free). Allocation never fails silently: on out-of-memory
 * arena_alloc returns NULL and sets Arena.failed, which callers turn into an error.
 */
#ifndef PXL_ARENA_H
#define PXL_ARENA_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ArenaBlock ArenaBlock;

typedef struct Arena {
  ArenaBlock *head; /* newest block */
  bool failed;      /* an allocation failed */
} Arena;

Arena *arena_new(void);                          /* NULL on out-of-memory; free with arena_free */
void arena_free(Arena *a);                       /* frees every allocation; NULL is a no-op */
void *arena_alloc(Arena *a, size_t n);           /* zeroed, 16-byte aligned; NULL on OOM */
char *arena_strndup(Arena *a, const char *s, size_t n); /* NUL-terminated copy */
char *arena_printf(Arena *a, const char *fmt, ...);     /* formatted string in the arena */

#endif
