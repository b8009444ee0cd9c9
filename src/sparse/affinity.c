/*
 * affinity.c - the image affinity matrix of normalized cuts, built as diagonals.
 *
 * Pixel p = y * w + x of an h x w one-channel image is joined to every pixel q within
 * distance r (dx^2 + dy^2 <= r^2, q itself included) with the weight
 *
 *     W[p][q] = exp(-(I_p - I_q)^2 / sigma_i^2) * exp(-(dx^2 + dy^2) / sigma_x^2)
 *               [* exp(-E_pq^2 / sigma_e^2)]
 *
 * (Shi and Malik's brightness and proximity cues), where with an edge image E_pq is the
 * largest edge value on the straight segment from p to q (the intervening-contour cue:
 * points p + k (q - p) / n for k = 0..n, n = max(|dx|, |dy|), each rounded to the
 * nearest pixel, halves away from zero). Each term is computed in double and the product
 * rounded once to the matrix's type. The offsets (dx, dy) of the disk are the diagonals
 * dy * w + dx, so the matrix is DIA with no column indices at all: an r = 5 disk gives
 * the 81 diagonals of the seed's configuration. Where q falls outside the image (off the
 * top or bottom, or off a side, where the offset would wrap to the next row) the
 * diagonal holds 0, padding.
 */
#include "sparse/sparse.h"

#include <math.h>
#include <stdlib.h>

#include "util/alloc.h"

/* The pixel nearest to a point k/n of the way along (dx, dy) from the origin: rounded
 * half away from zero, exactly (integers only). */
static int along(int d, int k, int n) {
  int num = 2 * d * k, den = 2 * n;
  int q = (abs(num) + n) / den; /* round(|num| / den) with halves up */
  return num < 0 ? -q : q;
}

int sparse_affinity(const float *img, const float *edge, int w, int h, int r, double sigma_i, double sigma_x,
                    double sigma_e, pxl_type type, SpMat **out, Err *err) {
  *out = NULL;
  if (type != PXL_F32 && type != PXL_F64) return err_set(err, PXL_EARG, "affinities are f32 or f64");
  if (w <= 0 || h <= 0 || (int64_t)w * h > SP_MAX_DIM)
    return err_set(err, PXL_ETOOBIG, "an affinity of a %d x %d image: at most %d pixels", w, h, SP_MAX_DIM);
  if (r < 0 || r > 64) return err_set(err, PXL_EARG, "radius %d: the affinity takes 0 to 64", r);
  if (!(sigma_i > 0) || !(sigma_x > 0) || (edge && !(sigma_e > 0)))
    return err_set(err, PXL_EARG, "the affinity's sigmas must be positive numbers");
  int64_t n = (int64_t)w * h, nd = 0;
  for (int dy = -r; dy <= r; dy++)
    for (int dx = -r; dx <= r; dx++) nd += dx * dx + dy * dy <= r * r;
  if (nd * n > SP_MAX_STORED) return err_set(err, PXL_ETOOBIG, "the affinity would store over 2^40 entries");
  SpMat *A = PXL_CALLOC(1, sizeof *A);
  if (!A) return err_set(err, PXL_ENOMEM, "out of memory for an affinity matrix");
  A->format = SP_DIA;
  A->type = type;
  A->rows = A->cols = n;
  A->k = nd;
  A->stored = nd * n;
  A->off = PXL_MALLOC((size_t)nd * sizeof *A->off);
  A->val = A->off ? PXL_CALLOC((size_t)A->stored, type == PXL_F32 ? 4 : 8) : NULL;
  if (!A->val) {
    sparse_free(A);
    return err_set(err, PXL_ENOMEM, "out of memory for an affinity matrix (%lld entries)", (long long)nd * n);
  }
  /* the disk's offsets dy * w + dx, which increase with (dy, dx) where w > 2r; sorted to
   * be sure, and a narrow image that gives two disk points one offset is refused */
  int64_t d = 0;
  int *ddx = PXL_MALLOC((size_t)nd * sizeof *ddx), *ddy = PXL_MALLOC((size_t)nd * sizeof *ddy);
  if (!ddx || !ddy) {
    PXL_FREE(ddx), PXL_FREE(ddy);
    sparse_free(A);
    return err_set(err, PXL_ENOMEM, "out of memory for an affinity matrix");
  }
  for (int dy = -r; dy <= r; dy++)
    for (int dx = -r; dx <= r; dx++)
      if (dx * dx + dy * dy <= r * r) ddx[d] = dx, ddy[d] = dy, A->off[d++] = (int64_t)dy * w + dx;
  for (int64_t a = 1; a < nd; a++)
    for (int64_t b = a; b > 0 && A->off[b - 1] > A->off[b]; b--) {
      int64_t t = A->off[b]; A->off[b] = A->off[b - 1]; A->off[b - 1] = t;
      int u = ddx[b]; ddx[b] = ddx[b - 1]; ddx[b - 1] = u;
      u = ddy[b]; ddy[b] = ddy[b - 1]; ddy[b - 1] = u;
    }
  for (int64_t a = 1; a < nd; a++)
    if (A->off[a] == A->off[a - 1]) {
      PXL_FREE(ddx), PXL_FREE(ddy);
      sparse_free(A);
      return err_set(err, PXL_EARG, "a radius of %d needs an image wider than %d pixels (this one is %d)", r, 2 * r,
                     w);
    }
  int64_t nnz = 0;
#pragma omp parallel for schedule(static) reduction(+ : nnz)
  for (int64_t p = 0; p < n; p++) {
    int x = (int)(p % w), y = (int)(p / w);
    for (int64_t k = 0; k < nd; k++) {
      int dx = ddx[k], dy = ddy[k], qx = x + dx, qy = y + dy;
      if (qx < 0 || qx >= w || qy < 0 || qy >= h) continue;
      double di = (double)img[p] - (double)img[(int64_t)qy * w + qx];
      double v = exp(-di * di / (sigma_i * sigma_i)) * exp(-(double)(dx * dx + dy * dy) / (sigma_x * sigma_x));
      if (edge) {
        int m = abs(dx) > abs(dy) ? abs(dx) : abs(dy);
        double e = 0;
        for (int s = 0; s <= m; s++) {
          int ex = x + (m ? along(dx, s, m) : 0), ey = y + (m ? along(dy, s, m) : 0);
          double ev = edge[(int64_t)ey * w + ex];
          if (ev > e) e = ev;
        }
        v *= exp(-e * e / (sigma_e * sigma_e));
      }
      if (type == PXL_F32)
        ((float *)A->val)[k * n + p] = (float)v;
      else
        ((double *)A->val)[k * n + p] = v;
      nnz += v != 0; /* an underflowed weight is padding, as CSR would drop it */
    }
  }
  A->nnz = nnz;
  PXL_FREE(ddx), PXL_FREE(ddy);
  *out = A;
  return PXL_OK;
}
