/*
 * lanczos.c - a few extreme eigenpairs of a symmetric sparse matrix: thick-restart
 * Lanczos with full reorthogonalisation.
 *
 * A basis V of m + 1 orthonormal vectors grows by one product a step; each new vector
 * is made orthogonal to all the others twice (classical Gram-Schmidt, then again), which
 * keeps V orthonormal to rounding where plain Lanczos loses it as Ritz values converge,
 * and fills T = V^T A V (m x m) with the projections themselves. T's eigenpairs (cyclic
 * Jacobi: m is small) give Ritz pairs; a pair's residual ||A x - theta x|| is
 * |beta s_m|, beta the last vector's norm before it was normalised and s_m the last
 * component of T's eigenvector. When the k wanted pairs are not all within tol, the
 * basis restarts thick: the best p = k + (m - k) / 2 Ritz vectors are kept, the last
 * basis vector follows them, and T becomes their Ritz values with the residual couplings
 * in its row p (Wu and Simon's thick restart; with full reorthogonalisation the next
 * projections give the same numbers).
 *
 * Vectors are double whatever A's type (an f32 matrix multiplies f32 copies: its
 * products are single precision, the rest double). Dot products and norms add fixed
 * blocks of 4096 elements, each block's sum then the blocks in order, so the result does
 * not depend on the threads; the vector loops run a block of rows at a time through all
 * the basis vectors they need. The start vector is SplitMix64 draws from opts->seed.
 */
#include "sparse/sparse.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "util/alloc.h"

#define DOT_BLOCK 4096

typedef struct {
  const SpMat *A;
  int64_t n;
  int nthreads;
  double *partial; /* one sum a block */
  void *xs, *ys;   /* f32 matrices: the product's vectors in f32 */
  int64_t products;
} Work;

/* g[c] = <V_c, v> for c < j: per block of DOT_BLOCK elements each column's sum, then the
 * blocks in order (a single dot product is the case j = 1 with V = a) */
static void dots(Work *w, const double *V, int j, const double *v, double *g) {
  int64_t nb = (w->n + DOT_BLOCK - 1) / DOT_BLOCK;
#pragma omp parallel for num_threads(w->nthreads) schedule(static) if (w->n > 65536)
  for (int64_t k = 0; k < nb; k++) {
    int64_t e = (k + 1) * DOT_BLOCK < w->n ? (k + 1) * DOT_BLOCK : w->n;
    for (int c = 0; c < j; c++) {
      const double *a = V + (int64_t)c * w->n;
      double s = 0;
      for (int64_t i = k * DOT_BLOCK; i < e; i++) s += a[i] * v[i];
      w->partial[(int64_t)c * nb + k] = s;
    }
  }
  for (int c = 0; c < j; c++) {
    double s = 0;
    for (int64_t k = 0; k < nb; k++) s += w->partial[(int64_t)c * nb + k];
    g[c] = s;
  }
}

static double dot(Work *w, const double *a, const double *b) {
  double g;
  dots(w, a, 1, b, &g);
  return g;
}

/* y -= sum_c h[c] * V_c for c < j, each element's terms in order of c, a block of rows
 * at a time (so that the j columns stream through the cache together) */
static void subtract(Work *w, double *y, const double *V, const double *h, int j) {
  int64_t nb = (w->n + DOT_BLOCK - 1) / DOT_BLOCK;
#pragma omp parallel for num_threads(w->nthreads) schedule(static) if (w->n > 65536)
  for (int64_t k = 0; k < nb; k++) {
    int64_t e = (k + 1) * DOT_BLOCK < w->n ? (k + 1) * DOT_BLOCK : w->n;
    for (int c = 0; c < j; c++) {
      const double *a = V + (int64_t)c * w->n;
      for (int64_t i = k * DOT_BLOCK; i < e; i++) y[i] -= h[c] * a[i];
    }
  }
}

static void scale(Work *w, double *y, double f) {
#pragma omp parallel for num_threads(w->nthreads) schedule(static) if (w->n > 65536)
  for (int64_t i = 0; i < w->n; i++) y[i] *= f;
}

/* y = A x */
static int product(Work *w, const double *x, double *y, Err *err) {
  w->products++;
  if (w->A->type == PXL_F64) return sparse_spmv(w->A, x, y, w->nthreads, false, err);
  float *xs = w->xs, *ys = w->ys;
  for (int64_t i = 0; i < w->A->cols; i++) xs[i] = (float)x[i];
  int rc = sparse_spmv(w->A, xs, ys, w->nthreads, false, err);
  for (int64_t i = 0; i < w->n; i++) y[i] = ys[i];
  return rc;
}

/* v: orthogonal to V_0..V_{j-1} (twice), projections added to h[0..j); returns its norm */
static double orthogonalise(Work *w, const double *V, int j, double *v, double *h, double *g) {
  for (int pass = 0; pass < 2; pass++) {
    dots(w, V, j, v, g);
    subtract(w, v, V, g, j);
    for (int c = 0; c < j; c++) h[c] = pass ? h[c] + g[c] : g[c];
  }
  return sqrt(dot(w, v, v));
}

static void random_vector(double *v, int64_t n, uint64_t *seed) {
  for (int64_t i = 0; i < n; i++) v[i] = (double)(sparse_splitmix(seed) >> 11) / 9007199254740992.0 - 0.5;
}

/* The eigenpairs of symmetric T (m x m, row-major; destroyed): values in theta, vectors
 * as the columns of S (row-major m x m). Cyclic Jacobi rotations until the off-diagonal
 * part is below 1e-17 of the whole. */
static void jacobi(double *T, int m, double *theta, double *S) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++) S[i * m + j] = i == j;
  for (int sweep = 0; sweep < 100; sweep++) {
    double off = 0, all = 0;
    for (int i = 0; i < m; i++)
      for (int j = 0; j < m; j++) {
        all += T[i * m + j] * T[i * m + j];
        if (i != j) off += T[i * m + j] * T[i * m + j];
      }
    if (off <= 1e-30 * all || off == 0) break;
    for (int p = 0; p < m; p++)
      for (int q = p + 1; q < m; q++) {
        double apq = T[p * m + q];
        if (apq == 0) continue;
        double app = T[p * m + p], aqq = T[q * m + q];
        double tau = (aqq - app) / (2 * apq);
        double t = (tau >= 0 ? 1 : -1) / (fabs(tau) + sqrt(1 + tau * tau));
        double c = 1 / sqrt(1 + t * t), s = t * c;
        for (int k = 0; k < m; k++) { /* columns p and q */
          double kp = T[k * m + p], kq = T[k * m + q];
          T[k * m + p] = c * kp - s * kq;
          T[k * m + q] = s * kp + c * kq;
        }
        for (int k = 0; k < m; k++) { /* rows p and q */
          double pk = T[p * m + k], qk = T[q * m + k];
          T[p * m + k] = c * pk - s * qk;
          T[q * m + k] = s * pk + c * qk;
        }
        for (int k = 0; k < m; k++) {
          double kp = S[k * m + p], kq = S[k * m + q];
          S[k * m + p] = c * kp - s * kq;
          S[k * m + q] = s * kp + c * kq;
        }
      }
  }
  for (int i = 0; i < m; i++) theta[i] = T[i * m + i];
}

int sparse_eigsh(const SpMat *A, int k, bool largest, const SpEigOpts *opts, double *vals, double *vecs,
                 SpEigInfo *info, Err *err) {
  SpEigOpts o = opts ? *opts : (SpEigOpts){0};
  int64_t n = A->rows;
  if (A->rows != A->cols) return err_set(err, PXL_EARG, "eigenpairs need a square matrix, not %lld x %lld",
                                         (long long)A->rows, (long long)A->cols);
  if (k < 1 || k > n) return err_set(err, PXL_EARG, "%d eigenpairs of a %lld x %lld matrix", k, (long long)n,
                                     (long long)n);
  /* the default basis: 40 vectors, or 3k + 10 for more pairs - normalized cuts' 9
   * clustered pairs of a 321 x 481 affinity took 3812 products with ARPACK's 2k + 1 = 20,
   * 1176 with 40 (24 s against 55 on the 2-core VM), 980 with 80 (40 s: the
   * reorthogonalisation grows as the square) */
  int m = o.ncv > 0 ? o.ncv : (3 * k + 10 > 40 ? 3 * k + 10 : 40);
  if (m > n) m = (int)n;
  if (m < k || m > 4096) return err_set(err, PXL_EARG, "a basis of %d vectors for %d eigenpairs", m, k);
  /* f32 products round to about 6e-8 of |A|: residuals below that never come */
  double tol = o.tol > 0 ? o.tol : A->type == PXL_F32 ? 1e-5 : 1e-10;
  int maxit = o.maxit > 0 ? o.maxit : 1000;
  uint64_t seed = o.seed ? o.seed : 1;
  Work w = {A, n, o.nthreads > 0 ? o.nthreads : omp_get_num_procs(), NULL, NULL, NULL, 0};
  size_t mm = (size_t)m * (size_t)m;
  double *V = PXL_MALLOC((size_t)(m + 1) * (size_t)n * sizeof *V);
  double *keep = V ? PXL_MALLOC((size_t)m * (size_t)n * sizeof *keep) : NULL;
  double *T = keep ? PXL_CALLOC(mm, sizeof *T) : NULL, *Tc = T ? PXL_MALLOC(mm * sizeof *Tc) : NULL;
  double *S = Tc ? PXL_MALLOC(mm * sizeof *S) : NULL, *theta = S ? PXL_MALLOC((size_t)m * sizeof *theta) : NULL;
  double *h = theta ? PXL_MALLOC((size_t)(m + 1) * 3 * sizeof *h) : NULL; /* h, g, discarded */
  int *order = h ? PXL_MALLOC((size_t)m * sizeof *order) : NULL;
  size_t nparts = (size_t)((n + DOT_BLOCK - 1) / DOT_BLOCK + 1) * (size_t)(m + 1); /* a sum a block and column */
  w.partial = order ? PXL_MALLOC(nparts * sizeof *w.partial) : NULL;
  if (w.partial && A->type == PXL_F32) {
    w.xs = PXL_MALLOC((size_t)n * 4 + 4);
    w.ys = w.xs ? PXL_MALLOC((size_t)n * 4 + 4) : NULL;
  }
  int rc = w.partial && (A->type == PXL_F64 || w.ys)
               ? PXL_OK
               : err_set(err, PXL_ENOMEM, "out of memory for a Lanczos basis of %d x %lld", m + 1, (long long)n);
  double beta = 0, *g = h ? h + m + 1 : NULL, *junk = h ? h + 2 * (m + 1) : NULL;
  int p = 0, it = 0, conv = 0;
  if (!rc) {
    random_vector(V, n, &seed);
    double nv = sqrt(dot(&w, V, V));
    scale(&w, V, 1 / nv);
  }
  for (it = 0; !rc && it < maxit; it++) {
    for (int j = p; j < m && !rc; j++) {
      double *vj = V + (int64_t)j * n, *next = V + (int64_t)(j + 1) * n;
      rc = product(&w, vj, next, err);
      if (rc) break;
      beta = orthogonalise(&w, V, j + 1, next, h, g);
      for (int c = 0; c <= j; c++) T[c * m + j] = T[j * m + c] = h[c];
      /* an invariant subspace: go on from a fresh random direction orthogonal to the
       * basis, coupled by 0 (none is left when the basis spans everything: then this
       * is the last step and the vector is never used) */
      double scale_T = fabs(T[j * m + j]) + (j > 0 ? fabs(T[(j - 1) * m + j]) : 0) + 1e-300;
      if (beta <= 1e-12 * scale_T) {
        double kept = 0;
        for (int tries = 0; tries < 5 && !(kept > 1e-6) && j + 1 < n; tries++) {
          random_vector(next, n, &seed);
          double n0 = sqrt(dot(&w, next, next));
          kept = orthogonalise(&w, V, j + 1, next, junk, g) / n0;
        }
        if (kept > 1e-6)
          scale(&w, next, 1 / sqrt(dot(&w, next, next)));
        else
          memset(next, 0, (size_t)n * sizeof *next);
        beta = 0;
      } else {
        scale(&w, next, 1 / beta);
      }
    }
    if (rc) break;
    memcpy(Tc, T, mm * sizeof *T);
    jacobi(Tc, m, theta, S);
    for (int i = 0; i < m; i++) order[i] = i;
    for (int a = 1; a < m; a++) /* wanted first: largest or smallest values */
      for (int b = a; b > 0 && (largest ? theta[order[b]] > theta[order[b - 1]]
                                         : theta[order[b]] < theta[order[b - 1]]);
           b--) {
        int t = order[b]; order[b] = order[b - 1]; order[b - 1] = t;
      }
    double big = 0;
    for (int i = 0; i < m; i++) big = fabs(theta[i]) > big ? fabs(theta[i]) : big;
    conv = 0;
    while (conv < k) {
      double th = theta[order[conv]], res = fabs(beta * S[(m - 1) * m + order[conv]]);
      if (res > tol * (fabs(th) > big * 1e-8 ? fabs(th) : big * 1e-8)) break;
      conv++;
    }
    int last = conv == k || it == maxit - 1 || m == n;
    int keepn = last ? k : (k + (m - k) / 2 < m - 1 ? k + (m - k) / 2 : m - 1);
    if (keepn < 1) keepn = 1;
    /* the kept Ritz vectors V S_i into keep, then back into V */
    int64_t nb = (n + DOT_BLOCK - 1) / DOT_BLOCK;
#pragma omp parallel for num_threads(w.nthreads) schedule(static) if (n > 65536)
    for (int64_t b = 0; b < nb; b++) {
      int64_t r0 = b * DOT_BLOCK, r1 = r0 + DOT_BLOCK < n ? r0 + DOT_BLOCK : n;
      for (int c = 0; c < keepn; c++) memset(keep + (int64_t)c * n + r0, 0, (size_t)(r1 - r0) * sizeof *keep);
      for (int q = 0; q < m; q++) {
        const double *vq = V + (int64_t)q * n;
        for (int c = 0; c < keepn; c++) {
          double sq = S[q * m + order[c]], *kc = keep + (int64_t)c * n;
          for (int64_t r = r0; r < r1; r++) kc[r] += vq[r] * sq;
        }
      }
    }
    if (last) break;
    memcpy(V + (int64_t)keepn * n, V + (int64_t)m * n, (size_t)n * sizeof *V);
    memcpy(V, keep, (size_t)keepn * (size_t)n * sizeof *V);
    memset(T, 0, mm * sizeof *T);
    for (int c = 0; c < keepn; c++) {
      T[c * m + c] = theta[order[c]];
      T[c * m + keepn] = T[keepn * m + c] = beta * S[(m - 1) * m + order[c]];
    }
    p = keepn;
  }
  if (!rc) {
    for (int c = 0; c < k; c++) {
      vals[c] = theta[order[c]];
      double *x = keep + (int64_t)c * n, best = 0, nx = sqrt(dot(&w, x, x));
      for (int64_t r = 0; r < n; r++) best = fabs(x[r]) > fabs(best) ? x[r] : best;
      double f = (best < 0 ? -1 : 1) / (nx > 0 ? nx : 1);
      for (int64_t r = 0; r < n; r++) vecs[(int64_t)c * n + r] = x[r] * f;
    }
    if (info) {
      info->restarts = it;
      info->products = w.products;
      info->converged = conv;
    }
    if (conv < k && !o.allow_unconverged)
      rc = err_set(err, PXL_ERROR, "Lanczos: %d of %d eigenpairs converged to %g after %d restarts (%lld products)",
                   conv, k, tol, it, (long long)w.products);
  }
  PXL_FREE(V), PXL_FREE(keep), PXL_FREE(T), PXL_FREE(Tc), PXL_FREE(S), PXL_FREE(theta), PXL_FREE(h);
  PXL_FREE(order), PXL_FREE(w.partial), PXL_FREE(w.xs), PXL_FREE(w.ys);
  return rc;
}
