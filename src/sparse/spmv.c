/*
 * spmv.c - y = A x in every format (sparse.h gives the one definition of the sum).
 *
 * The fast loops split the format's parts (rows; SELL slices; BCSR block rows) into
 * chunks of about equal stored entries, several per thread (OpenMP, dynamic), so that a
 * few long rows do not leave threads idle. A part's rows are summed in column order, so
 * threads and chunking never change a bit. Built with -ffp-contract=off (CMakeLists.txt):
 * a fused multiply-add would round differently from the definition.
 */
#include "sparse/sparse.h"

#include <omp.h>

#define T float
#define SFX _f32
#include "sparse/spmv_t.h"
#undef T
#undef SFX
#define T double
#define SFX _f64
#include "sparse/spmv_t.h"
#undef T
#undef SFX

#define PARALLEL_MIN 32768 /* fewer stored entries run on one thread */
#define CHUNKS_PER_THREAD 8

/* The format's parts, and the stored entries before part p where the format says
 * (NULL: parts of equal weight). */
static int64_t parts_of(const SpMat *A, const int64_t **prefix) {
  *prefix = NULL;
  switch (A->format) {
  case SP_CSR: *prefix = A->ptr; return A->rows;
  case SP_SELL: *prefix = A->ptr; return A->nparts;
  case SP_BCSR: *prefix = A->ptr; return A->nparts;
  default: return A->rows;
  }
}

/* The first part of chunk c of n: where the prefix reaches c / n of the total. */
static int64_t chunk_start(const int64_t *prefix, int64_t parts, int64_t c, int64_t n) {
  if (!prefix) return parts * c / n;
  if (c >= n) return parts;
  int64_t goal = (int64_t)((double)prefix[parts] * (double)c / (double)n), lo = 0, hi = parts;
  while (lo < hi) {
    int64_t m = lo + (hi - lo) / 2;
    if (prefix[m] < goal)
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}

static void part(const SpMat *A, const void *x, void *y, int64_t p0, int64_t p1) {
  if (A->type == PXL_F32)
    spmv_part_f32(A, x, y, p0, p1);
  else
    spmv_part_f64(A, x, y, p0, p1);
}

int sparse_spmv(const SpMat *A, const void *x, void *y, int nthreads, bool reference, Err *err) {
  if (A->type != PXL_F32 && A->type != PXL_F64) return err_set(err, PXL_EARG, "sparse values must be f32 or f64");
  if (reference) {
    if (A->format != SP_CSR)
      return err_set(err, PXL_EARG, "the reference product takes CSR, not %s", sparse_format_name(A->format));
    /* the definition: CSR rows in turn on one thread */
    part(A, x, y, 0, A->rows);
    return PXL_OK;
  }
  const int64_t *prefix;
  int64_t parts = parts_of(A, &prefix);
  int nt = nthreads > 0 ? nthreads : omp_get_num_procs();
  if (nt == 1 || A->stored < PARALLEL_MIN || parts < 2) {
    part(A, x, y, 0, parts);
    return PXL_OK;
  }
  int64_t chunks = (int64_t)nt * CHUNKS_PER_THREAD;
  if (chunks > parts) chunks = parts;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; c++)
    part(A, x, y, chunk_start(prefix, parts, c, chunks), chunk_start(prefix, parts, c + 1, chunks));
  return PXL_OK;
}
