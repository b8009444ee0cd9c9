/*
 * alloc.h - the one place pxl allocates heap memory.
 *
 * Every allocation goes through these macros so that tests can inject out-of-memory
 * failures (pxl_test_fail_alloc_after) and embedders can see one seam.
 */
#ifndef PXL_ALLOC_H
#define PXL_ALLOC_H

#include <stddef.h>

void *pxl_malloc(size_t n);              /* NULL on failure (or injected failure) */
void *pxl_calloc(size_t n, size_t size); /* zeroed; NULL on failure */
void *pxl_realloc(void *p, size_t n);    /* NULL on failure, p untouched */
void pxl_free_mem(void *p);              /* NULL is a no-op */

/* Tests only: make the allocation after `n` more succeed... fail (n < 0 disables). */
void pxl_test_fail_alloc_after(long n);

#define PXL_MALLOC(n) pxl_malloc(n)
#define PXL_CALLOC(n, s) pxl_calloc((n), (s))
#define PXL_REALLOC(p, n) pxl_realloc((p), (n))
#define PXL_FREE(p) pxl_free_mem(p)

#endif
