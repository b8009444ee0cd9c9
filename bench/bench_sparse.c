/*
 * bench_sparse.c - sparse products (src/sparse) in every format on generated matrices.
 *
 *   bench_sparse DIR [--threads 1,2] [--reps N] [--scale S]
 *
 * Makes three matrices (no matrix collection is reachable here, so they are generated,
 * deterministically):
 *   affinity  the normalized-cuts affinity of a (512 S) x (512 S) image: every pixel
 *             joined to the pixels within radius 5 (81 diagonals), weights
 *             exp(-(I_i - I_j)^2 / 0.01) exp(-d^2 / 16) of a smooth random image
 *   powerlaw  (10^6 S^2) rows whose lengths follow a power law (1 to 2000, mean about 8),
 *             columns random
 *   blocks    (2.5 10^5 S^2) rows of 4 x 4 dense blocks, 4 blocks a block row, block
 *             columns within 4096 of the diagonal
 * and times y = A x in each format (and the automatic choice) on each thread count: the
 * best of N products after a warm-up. Each matrix's CSR arrays, x and pxl's y go to DIR
 * as .npy files (NAME_indptr.npy, NAME_indices.npy, NAME_data.npy, NAME_x.npy and
 * NAME_y_FORMAT.npy, on the first thread count) for bench/bench_sparse.py, which times
 * SciPy's CSR product on the same data and checks y; the table lines are "MATRIX FORMAT
 * THREADS MS GB/s".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pxl/pxl.h"
#include "sparse/sparse.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static uint64_t state = 88172645463325252ull;
static uint64_t rnd(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}
static double uniform(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

typedef struct {
  int64_t n, cap, *i, *j;
  double *v;
} Entries;

static void add(Entries *e, int64_t i, int64_t j, double v) {
  if (e->n == e->cap) {
    e->cap = e->cap ? e->cap * 2 : 1 << 20;
    e->i = realloc(e->i, (size_t)e->cap * sizeof *e->i);
    e->j = realloc(e->j, (size_t)e->cap * sizeof *e->j);
    e->v = realloc(e->v, (size_t)e->cap * sizeof *e->v);
    if (!e->i || !e->j || !e->v) {
      fprintf(stderr, "bench_sparse: out of memory\n");
      exit(1);
    }
  }
  e->i[e->n] = i, e->j[e->n] = j, e->v[e->n] = v, e->n++;
}

static int64_t affinity(Entries *e, int side) {
  int w = side, h = side, r = 5;
  float *img = malloc((size_t)w * h * sizeof *img);
  /* a smooth image: a sum of a few waves plus a little noise */
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      img[y * w + x] = (float)(0.5 + 0.2 * sin(x * 0.05) * cos(y * 0.031) + 0.05 * uniform());
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {
          int yy = y + dy, xx = x + dx;
          if (dx * dx + dy * dy > r * r || yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
          double d = img[y * w + x] - img[yy * w + xx];
          add(e, (int64_t)y * w + x, (int64_t)yy * w + xx, exp(-d * d / 0.01) * exp(-(dx * dx + dy * dy) / 16.0));
        }
  free(img);
  return (int64_t)w * h;
}

static int64_t powerlaw(Entries *e, int64_t rows) {
  for (int64_t r = 0; r < rows; r++) {
    double u = uniform();
    int64_t len = (int64_t)(1.0 / pow(1.0 - u * 0.9995, 1.0 / 1.1));
    if (len > 2000) len = 2000;
    for (int64_t k = 0; k < len; k++) add(e, r, (int64_t)(rnd() % (uint64_t)rows), uniform() - 0.5);
  }
  return rows;
}

static int64_t blocks(Entries *e, int64_t rows) {
  int64_t nb = rows / 4;
  for (int64_t b = 0; b < nb; b++)
    for (int k = 0; k < 4; k++) {
      int64_t c = b + (int64_t)(rnd() % 2048) - 1024;
      if (c < 0) c = -c;
      if (c >= nb) c = nb - 1 - c % nb;
      for (int dr = 0; dr < 4; dr++)
        for (int dc = 0; dc < 4; dc++) add(e, b * 4 + dr, c * 4 + dc, uniform() - 0.5);
    }
  return rows;
}

/* Saves n int64 or int32 or double elements as a .npy vector of doubles (exact for
 * indices below 2^53). */
static void save(pxl_context *ctx, const char *dir, const char *name, const char *what, const void *p, int64_t n,
                 int kind) {
  double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
  for (int64_t k = 0; k < n; k++)
    d[k] = kind == 0 ? (double)((const int64_t *)p)[k] : kind == 1 ? (double)((const int32_t *)p)[k]
                                                                   : ((const double *)p)[k];
  char path[4096];
  snprintf(path, sizeof path, "%s/%s_%s.npy", dir, name, what);
  if (pxl_vector_save(ctx, path, d, n, PXL_F64)) {
    fprintf(stderr, "bench_sparse: %s\n", pxl_errmsg(ctx));
    exit(1);
  }
  free(d);
}

static double best_of(const SpMat *A, const double *x, double *y, int threads, int reps) {
  Err err = {0};
  double best = INFINITY;
  for (int r = 0; r <= reps; r++) {
    double t0 = now_ms();
    if (sparse_spmv(A, x, y, threads, false, &err)) {
      fprintf(stderr, "bench_sparse: %s\n", err.msg);
      exit(1);
    }
    double t = now_ms() - t0;
    if (r > 0 && t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: bench_sparse DIR [--threads 1,2] [--reps N] [--scale S]\n");
    return 2;
  }
  const char *dir = argv[1];
  int threads[8] = {1, 0}, nthreads = 2, reps = 10;
  double scale = 1;
  for (int a = 2; a + 1 < argc; a += 2) {
    if (!strcmp(argv[a], "--reps")) reps = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "--scale")) scale = atof(argv[a + 1]);
    else if (!strcmp(argv[a], "--threads")) {
      nthreads = 0;
      for (char *s = argv[a + 1]; *s && nthreads < 8; s += strspn(s, ","))
        threads[nthreads++] = (int)strtol(s, &s, 10);
    } else {
      fprintf(stderr, "bench_sparse: unknown option %s\n", argv[a]);
      return 2;
    }
  }
  pxl_context *ctx = pxl_context_new();
  const char *names[] = {"affinity", "powerlaw", "blocks"};
  printf("matrix format threads ms GB/s\n");
  for (int m = 0; m < 3; m++) {
    Entries e = {0};
    int64_t n = m == 0 ? affinity(&e, (int)(512 * scale)) : m == 1 ? powerlaw(&e, (int64_t)(1e6 * scale * scale))
                                                                  : blocks(&e, (int64_t)(2.5e5 * scale * scale));
    Err err = {0};
    SpMat *A;
    if (sparse_from_triplets(n, n, PXL_F64, e.n, e.i, e.j, e.v, &A, &err)) {
      fprintf(stderr, "bench_sparse: %s\n", err.msg);
      return 1;
    }
    free(e.i), free(e.j), free(e.v);
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    for (int64_t k = 0; k < n; k++) x[k] = uniform();
    save(ctx, dir, names[m], "indptr", A->ptr, A->rows + 1, 0);
    save(ctx, dir, names[m], "indices", A->col, A->nnz, 1);
    save(ctx, dir, names[m], "data", A->val, A->nnz, 2);
    save(ctx, dir, names[m], "x", x, n, 2);
    fprintf(stderr, "%s: %lld rows, %lld entries\n", names[m], (long long)n, (long long)A->nnz);
    for (int t = 0; t < nthreads; t++) {
      SpChoice ch;
      if (sparse_choose(A, threads[t], &ch, &err)) {
        fprintf(stderr, "bench_sparse: %s\n", err.msg);
        return 1;
      }
      for (int f = 0; f < SP_NFORMATS; f++) {
        SpMat *M = NULL;
        SpOpts lim = {.max_fill = 4}; /* a format storing over 4x the entries is left out */
        if (f != SP_CSR && sparse_convert(A, (SpFormat)f, &lim, &M, &err)) {
          printf("%s %s %d - (%s)\n", names[m], sparse_format_name(f), threads[t], err.msg);
          continue;
        }
        const SpMat *use = M ? M : A;
        double ms = best_of(use, x, y, threads[t], reps);
        printf("%s %s %d %.3f %.2f%s\n", names[m], sparse_format_name(f), threads[t], ms,
               (double)sparse_bytes(use) / ms / 1e6, f == (int)ch.format ? " auto" : "");
        fflush(stdout);
        if (t == 0) {
          char what[16];
          snprintf(what, sizeof what, "y_%s", sparse_format_name(f));
          save(ctx, dir, names[m], what, y, n, 2);
        }
        sparse_free(M);
      }
    }
    sparse_free(A);
    free(x), free(y);
  }
  pxl_context_free(ctx);
  return 0;
}
