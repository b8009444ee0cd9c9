/*
 * hash.h - 64-bit FNV-1a, for cache keys of generated code.
 */
#ifndef PXL_HASH_H
#define PXL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_INIT UINT64_C(0xcbf29ce484222325)

/* Continues hash h over n bytes of p. */
uint64_t hash_bytes(uint64_t h, const void *p, size_t n);
/* Continues hash h over a NUL-terminated string (terminator included). */
uint64_t hash_str(uint64_t h, const char *s);

#endif
