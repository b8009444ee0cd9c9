/*
 * ncuts.c - normalized cuts (Shi and Malik): the normalized affinity, and regions from
 * its leading eigenvectors.
 *
 * Normalized cuts solve (D - W) y = lambda D y for the smallest lambda, D the diagonal of
 * W's row sums. With z = D^(1/2) y that is the symmetric problem
 * D^(-1/2) (D - W) D^(-1/2) z = lambda z, whose smallest lambda are 1 - mu for the
 * largest mu of N = D^(-1/2) W D^(-1/2): the end of the spectrum Lanczos finds fastest.
 * sparse_normalize makes N; sparse_ncuts then takes the k largest eigenpairs of N, the
 * embedding y = D^(-1/2) z of each pixel (without the first vector, which is constant
 * up to D: every pixel the same), each pixel's row scaled to unit length, and groups the
 * rows into k regions by k-means (k-means++ seeding from SplitMix64 draws, then Lloyd's
 * iterations until no label changes, at most 300), the spectral clustering of Ng, Jordan
 * and Weiss on the normalized-cut eigenvectors.
 */
#include "sparse/sparse.h"

#include <math.h>
#include <string.h>

#include "util/alloc.h"

int sparse_normalize(const SpMat *W, SpMat **out, double *d, Err *err) {
  *out = NULL;
  if (W->rows != W->cols) return err_set(err, PXL_EARG, "a normalized affinity needs a square matrix");
  if (W->format != SP_CSR && W->format != SP_DIA)
    return err_set(err, PXL_EARG, "sparse_normalize takes CSR or DIA, not %s", sparse_format_name(W->format));
  int64_t n = W->rows;
  bool f32 = W->type == PXL_F32;
  /* row sums in double, in column order (DIA's diagonals are in column order too) */
  for (int64_t i = 0; i < n; i++) d[i] = 0;
  if (W->format == SP_CSR) {
    for (int64_t i = 0; i < n; i++)
      for (int64_t e = W->ptr[i]; e < W->ptr[i + 1]; e++)
        d[i] += f32 ? ((const float *)W->val)[e] : ((const double *)W->val)[e];
  } else {
    for (int64_t i = 0; i < n; i++)
      for (int64_t k = 0; k < W->k; k++) {
        int64_t j = i + W->off[k];
        if (j >= 0 && j < n) d[i] += f32 ? ((const float *)W->val)[k * n + i] : ((const double *)W->val)[k * n + i];
      }
  }
  for (int64_t i = 0; i < n; i++)
    if (!(d[i] > 0))
      return err_set(err, PXL_EARG, "row %lld of the affinity sums to %g: every row needs a positive sum",
                     (long long)i, d[i]);
  int rc = sparse_convert(W, W->format, NULL, out, err);
  if (rc) return rc;
  SpMat *N = *out;
  for (int64_t i = 0; i < n; i++) {
    double si = sqrt(d[i]);
    if (N->format == SP_CSR) {
      for (int64_t e = N->ptr[i]; e < N->ptr[i + 1]; e++) {
        double v = f32 ? ((float *)N->val)[e] : ((double *)N->val)[e], r = v / (si * sqrt(d[N->col[e]]));
        if (f32) ((float *)N->val)[e] = (float)r;
        else ((double *)N->val)[e] = r;
      }
    } else {
      for (int64_t k = 0; k < N->k; k++) {
        int64_t j = i + N->off[k];
        if (j < 0 || j >= n) continue;
        double v = f32 ? ((float *)N->val)[k * n + i] : ((double *)N->val)[k * n + i], r = v / (si * sqrt(d[j]));
        if (f32) ((float *)N->val)[k * n + i] = (float)r;
        else ((double *)N->val)[k * n + i] = r;
      }
    }
  }
  return PXL_OK;
}

static double dist2(const double *a, const double *b, int dim) {
  double s = 0;
  for (int c = 0; c < dim; c++) s += (a[c] - b[c]) * (a[c] - b[c]);
  return s;
}

/* k-means of n rows of dim values (row-major) into labels; centres: k x dim scratch. */
static void kmeans(const double *X, int64_t n, int dim, int k, uint64_t seed, int32_t *labels, double *centres,
                   double *near) {
  /* k-means++: the first centre a uniform draw, each next one drawn with probability
   * proportional to the squared distance to the nearest centre so far */
  memcpy(centres, X + (int64_t)(sparse_splitmix(&seed) % (uint64_t)n) * dim, (size_t)dim * sizeof *X);
  for (int64_t i = 0; i < n; i++) near[i] = dist2(X + i * dim, centres, dim);
  for (int c = 1; c < k; c++) {
    double total = 0;
    for (int64_t i = 0; i < n; i++) total += near[i];
    double u = (double)(sparse_splitmix(&seed) >> 11) / 9007199254740992.0 * total, acc = 0;
    int64_t pick = n - 1;
    for (int64_t i = 0; i < n; i++)
      if ((acc += near[i]) > u) {
        pick = i;
        break;
      }
    memcpy(centres + (int64_t)c * dim, X + pick * dim, (size_t)dim * sizeof *X);
    for (int64_t i = 0; i < n; i++) {
      double t = dist2(X + i * dim, centres + (int64_t)c * dim, dim);
      if (t < near[i]) near[i] = t;
    }
  }
  for (int64_t i = 0; i < n; i++) labels[i] = -1;
  for (int iter = 0; iter < 300; iter++) {
    int64_t changed = 0;
#pragma omp parallel for schedule(static) reduction(+ : changed)
    for (int64_t i = 0; i < n; i++) {
      int best = 0;
      double bd = dist2(X + i * dim, centres, dim);
      for (int c = 1; c < k; c++) {
        double t = dist2(X + i * dim, centres + (int64_t)c * dim, dim);
        if (t < bd) bd = t, best = c;
      }
      changed += labels[i] != best;
      labels[i] = best;
    }
    if (!changed) break;
    /* the means, in row order; an empty cluster keeps its centre */
    for (int c = 0; c < k; c++) {
      double *m = centres + (int64_t)c * dim;
      int64_t cnt = 0;
      double sum[64] = {0};
      for (int64_t i = 0; i < n; i++)
        if (labels[i] == c) {
          cnt++;
          for (int q = 0; q < dim; q++) sum[q] += X[i * dim + q];
        }
      if (cnt)
        for (int q = 0; q < dim; q++) m[q] = sum[q] / (double)cnt;
    }
  }
}

int sparse_ncuts(const SpMat *W, int k, const SpEigOpts *opts, int32_t *labels, double *vals, Err *err) {
  int64_t n = W->rows;
  if (k < 2 || k > 64 || k > n) return err_set(err, PXL_EARG, "%d regions: normalized cuts make 2 to 64", k);
  double *d = PXL_MALLOC((size_t)n * sizeof *d), *z = d ? PXL_MALLOC((size_t)n * k * sizeof *z) : NULL;
  double *X = z ? PXL_MALLOC((size_t)n * (k - 1) * sizeof *X) : NULL, *cent = X ? PXL_MALLOC(64 * 64 * 8) : NULL;
  double *near = cent ? PXL_MALLOC((size_t)n * sizeof *near) : NULL;
  int rc = near ? PXL_OK : err_set(err, PXL_ENOMEM, "out of memory for normalized cuts of %lld pixels", (long long)n);
  SpMat *N = NULL;
  if (!rc) rc = sparse_normalize(W, &N, d, err);
  if (!rc) rc = sparse_eigsh(N, k, true, opts, vals, z, NULL, err);
  if (!rc) {
    for (int c = 0; c < k; c++) vals[c] = 1 - vals[c]; /* the generalized problem's lambda */
    for (int64_t i = 0; i < n; i++) {
      double len = 0, s = 1 / sqrt(d[i]);
      for (int c = 1; c < k; c++) {
        double y = z[(int64_t)c * n + i] * s;
        X[i * (k - 1) + c - 1] = y;
        len += y * y;
      }
      len = sqrt(len);
      for (int c = 0; c < k - 1 && len > 0; c++) X[i * (k - 1) + c] /= len;
    }
    kmeans(X, n, k - 1, k, opts && opts->seed ? opts->seed : 1, labels, cent, near);
  }
  sparse_free(N);
  PXL_FREE(d), PXL_FREE(z), PXL_FREE(X), PXL_FREE(cent), PXL_FREE(near);
  return rc;
}
