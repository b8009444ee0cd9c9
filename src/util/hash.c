/*
 * hash.c - 64-bit FNV-1a (see hash.h).
 */
#include "util/hash.h"

#include <string.h>

uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

uint64_t hash_str(uint64_t h, const char *s) { return hash_bytes(h, s, strlen(s) + 1); }
