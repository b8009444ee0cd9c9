/*
 * choose.c - which format multiplies a matrix fastest here: predicted, then measured.
 *
 * The prediction is the bytes a product moves (sparse.h sparse_bytes, from the entries
 * each format would store: sparse_stored_for), with every format's padding limited to
 * SP_CHOOSE_FILL times the nonzeros; formats predicted to move more than
 * SP_CHOOSE_MARGIN times the fewest bytes are not tried. The rest are built and timed
 * (the best of a few products on the threads given) and the fastest wins. Measuring is
 * what decides because the bytes alone miss what differs between machines: gathers of x
 * that the cache holds or not, vector units that take ELL's column-major rows and not
 * CSR's, threads that COO balances better. The caller keeps the answer (src/api/sparse.c
 * caches it per structure and device), so a matrix's structure is measured once.
 */
#include "sparse/sparse.h"

#include <string.h>
#include <time.h>

#include "util/alloc.h"

#define SP_CHOOSE_FILL 3.0
#define SP_CHOOSE_MARGIN 2.0
#define MEASURE_MS 20.0 /* each candidate is run until this long has passed, 3 to 20 times */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The bytes a product in format f would move (as sparse_bytes on the built matrix). */
static double predicted_bytes(const SpMat *A, SpFormat f, const SpOpts *o, int64_t stored) {
  SpMat shape = *A;
  shape.format = f;
  shape.stored = stored;
  shape.k = f == SP_DIA ? (A->rows ? stored / A->rows : 0) : f == SP_BCSR ? stored / (o->br * o->bc) : 0;
  int64_t c = sparse_sell_height(A, o->sell_c);
  shape.nparts = f == SP_SELL ? (A->rows + c - 1) / c : f == SP_BCSR ? (A->rows + o->br - 1) / o->br : 0;
  return (double)sparse_bytes(&shape);
}

int sparse_choose(const SpMat *A, int nthreads, SpChoice *c, Err *err) {
  if (A->format != SP_CSR) return err_set(err, PXL_EARG, "the choice of a format starts from CSR");
  memset(c, 0, sizeof *c);
  SpOpts def = {32, 1024, 4, 4, 0};
  double bytes[SP_NFORMATS], fewest = -1;
  for (int f = 0; f < SP_NFORMATS; f++) {
    c->ms[f] = -1;
    int64_t stored = sparse_stored_for(A, (SpFormat)f, &def);
    bool fits = stored >= 0 && stored <= SP_MAX_STORED && (double)stored <= SP_CHOOSE_FILL * (double)(A->nnz + 1);
    bytes[f] = fits ? predicted_bytes(A, (SpFormat)f, &def, stored) : -1;
    if (bytes[f] >= 0 && (fewest < 0 || bytes[f] < fewest)) fewest = bytes[f];
  }
  size_t es = A->type == PXL_F32 ? 4 : 8;
  void *x = PXL_CALLOC(A->cols + 1, es), *y = x ? PXL_MALLOC((size_t)(A->rows + 1) * es) : NULL;
  if (!y) {
    PXL_FREE(x);
    return err_set(err, PXL_ENOMEM, "out of memory choosing a sparse format");
  }
  /* x: ones, so that no product meets a denormal or an overflow that would slow one */
  for (int64_t j = 0; j < A->cols; j++)
    if (A->type == PXL_F32)
      ((float *)x)[j] = 1;
    else
      ((double *)x)[j] = 1;
  int rc = PXL_OK;
  c->format = SP_CSR;
  c->opts = def;
  double best = -1;
  for (int f = 0; f < SP_NFORMATS && !rc; f++) {
    if (bytes[f] < 0 || bytes[f] > SP_CHOOSE_MARGIN * fewest) continue;
    SpMat *M = NULL;
    int crc = f == SP_CSR ? PXL_OK : sparse_convert(A, (SpFormat)f, &def, &M, err);
    if (crc == PXL_ENOMEM) {
      rc = crc;
      break;
    }
    if (crc) continue; /* a limit passed after all: not a candidate */
    const SpMat *use = M ? M : A;
    double t_best = -1, start = now_ms();
    for (int rep = 0; rep < 20 && !rc; rep++) {
      double t0 = now_ms();
      rc = sparse_spmv(use, x, y, nthreads, false, err);
      double t = now_ms() - t0;
      if (t_best < 0 || t < t_best) t_best = t;
      if (rep >= 2 && now_ms() - start > MEASURE_MS) break;
    }
    sparse_free(M);
    c->ms[f] = t_best;
    c->measured++;
    if (!rc && (best < 0 || t_best < best)) {
      best = t_best;
      c->format = (SpFormat)f;
    }
  }
  PXL_FREE(x);
  PXL_FREE(y);
  return rc;
}
