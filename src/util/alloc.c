/*
 * alloc.c - heap allocation with a fault-injection hook for tests (see alloc.h).
 */
#include "util/alloc.h"

#include <stdlib.h>

static long fail_after = -1; /* allocations left before injected failure; -1 = never */

static int should_fail(void) {
  if (fail_after < 0) return 0;
  if (fail_after == 0) return 1;
  fail_after--;
  return 0;
}

void pxl_test_fail_alloc_after(long n) { fail_after = n; }

void *pxl_malloc(size_t n) { return should_fail() ? NULL : malloc(n ? n : 1); }

void *pxl_calloc(size_t n, size_t size) { return should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1); }

void *pxl_realloc(void *p, size_t n) { return should_fail() ? NULL : realloc(p, n ? n : 1); }

void pxl_free_mem(void *p) { free(p); }
