/*
 * sparse_test.c - sparse matrices (src/sparse): building, every format's conversion and
 * product, against checks that share no code with them.
 *
 * Matrices of many structures (empty, one entry, empty rows, a dense row among short
 * ones, bands, blocks, random, power-law row lengths, sizes that do not fit a SELL slice
 * or a BCSR block) are made from entries the test also keeps as a dense table of its own
 * (duplicates summed there in input order). Each is converted to every format with
 * several options (SELL slices of 1, 3, 32 and 64 rows, sorting windows of 1, 8 and all;
 * BCSR blocks of 1x1, 2x3, 4x4 and 8x8), back to CSR (entry for entry; DIA and BCSR with
 * stored zeros dropped), and multiplied with a vector on 1, 2 and 3 threads: every
 * product must have the bits of the definition computed here from the dense table (a
 * row's stored entries in column order, each product rounded, then added, from +0). Then
 * the refusals (entries outside the matrix, a fill over max_fill, a reference product of
 * a non-CSR matrix) and every allocation failing in turn.
 *
 * Built with -ffp-contract=off, as the library's product is: a fused multiply-add here
 * would make the check round differently from the definition.
 *
 * Prints one line per group and "ok" or the failures; returns nonzero on any failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse.h"
#include "util/alloc.h"

static int failures;

#define CHECK(cond, ...)                  \
  do {                                    \
    if (!(cond)) {                        \
      failures++;                         \
      if (failures < 40) {                \
        printf("  FAIL %s:%d: ", __FILE__, __LINE__); \
        printf(__VA_ARGS__);              \
        printf("\n");                     \
      }                                   \
    }                                     \
  } while (0)

static uint64_t rng_state = 12345;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static int64_t below(int64_t n) { return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0; }

/* A test matrix: its entries as given, and the dense table they sum to. */
typedef struct {
  int64_t rows, cols, n;
  int64_t *i, *j;
  double *v;
  double *dense;  /* rows x cols, summed in the value type */
  char *present;  /* rows x cols: an entry was given there */
} Case;

static void add(Case *c, int64_t i, int64_t j, double v) {
  c->i[c->n] = i;
  c->j[c->n] = j;
  c->v[c->n] = v;
  c->n++;
}

static double value(void) {
  /* values with many bits, both signs, some exact zeros */
  int64_t k = below(20);
  if (k == 0) return 0.0;
  return ((double)(int64_t)(rnd() >> 11) / 9007199254740992.0 - 0.5) * pow(10.0, (double)below(7) - 3);
}

enum { K_EMPTY, K_ONE, K_RANDOM, K_BAND, K_BLOCKS, K_POWER, K_DENSE_ROW, K_DUPS, K_KINDS };
static const char *const KIND_NAMES[] = {"empty", "one", "random", "band", "blocks", "power-law", "dense row", "dups"};

static Case make(int kind, int64_t rows, int64_t cols) {
  Case c = {rows, cols, 0, NULL, NULL, NULL, NULL, NULL};
  int64_t cap = rows * cols * 3 + 16;
  c.i = malloc((size_t)cap * sizeof *c.i);
  c.j = malloc((size_t)cap * sizeof *c.j);
  c.v = malloc((size_t)cap * sizeof *c.v);
  if (rows == 0 || cols == 0) return c;
  switch (kind) {
  case K_EMPTY: break;
  case K_ONE: add(&c, below(rows), below(cols), 2.5); break;
  case K_RANDOM:
    for (int64_t k = 0; k < rows * cols / 7 + 1; k++) add(&c, below(rows), below(cols), value());
    break;
  case K_BAND:
    for (int64_t r = 0; r < rows; r++)
      for (int64_t d = -3; d <= 3; d++)
        if (r + d * 2 >= 0 && r + d * 2 < cols && d != 1) add(&c, r, r + d * 2, value());
    break;
  case K_BLOCKS:
    for (int64_t r0 = 0; r0 < rows; r0 += 5)
      for (int64_t c0 = below(cols); c0 < cols; c0 += 7 + below(20))
        for (int64_t r = r0; r < r0 + 3 && r < rows; r++)
          for (int64_t q = c0; q < c0 + 4 && q < cols; q++) add(&c, r, q, value());
    break;
  case K_POWER:
    for (int64_t r = 0; r < rows; r++) {
      int64_t len = cols / (1 + below(r + 1) * below(8)) / 2;
      for (int64_t k = 0; k < len; k++) add(&c, r, below(cols), value());
    }
    break;
  case K_DENSE_ROW:
    for (int64_t q = 0; q < cols; q++) add(&c, rows / 2, q, value());
    for (int64_t r = 0; r < rows; r += 3) add(&c, r, below(cols), value());
    break;
  case K_DUPS:
    for (int64_t k = 0; k < rows * 3; k++) add(&c, below(rows), below(cols < 4 ? cols : 4), value());
    break;
  default: break;
  }
  /* shuffle the entries: the input order is arbitrary */
  for (int64_t k = c.n - 1; k > 0; k--) {
    int64_t m = below(k + 1), ti = c.i[k], tj = c.j[k];
    double tv = c.v[k];
    c.i[k] = c.i[m], c.j[k] = c.j[m], c.v[k] = c.v[m];
    c.i[m] = ti, c.j[m] = tj, c.v[m] = tv;
  }
  return c;
}

/* The dense table of c in type t: duplicates summed in input order, each rounded first. */
static void densify(Case *c, pxl_type t) {
  free(c->dense);
  free(c->present);
  c->dense = calloc((size_t)(c->rows * c->cols + 1), sizeof *c->dense);
  c->present = calloc((size_t)(c->rows * c->cols + 1), 1);
  for (int64_t k = 0; k < c->n; k++) {
    int64_t at = c->i[k] * c->cols + c->j[k];
    if (t == PXL_F32)
      c->dense[at] = c->present[at] ? (double)((float)c->dense[at] + (float)c->v[k]) : (double)(float)c->v[k];
    else
      c->dense[at] = c->present[at] ? c->dense[at] + c->v[k] : c->v[k];
    c->present[at] = 1;
  }
}

static void drop(Case *c) {
  free(c->i), free(c->j), free(c->v), free(c->dense), free(c->present);
}

/* The CSR form of A must be c's table: `zeros` false where stored zeros may be missing. */
static void check_csr(const Case *c, const SpMat *A, bool zeros, const char *what) {
  CHECK(A->format == SP_CSR && A->rows == c->rows && A->cols == c->cols, "%s: shape", what);
  int64_t e = 0;
  bool ok = true;
  for (int64_t r = 0; r < c->rows && ok; r++) {
    ok = A->ptr[r] == e;
    for (int64_t q = 0; q < c->cols && ok; q++) {
      int64_t at = r * c->cols + q;
      if (!c->present[at] || (!zeros && c->dense[at] == 0)) continue;
      double v = A->type == PXL_F32 ? ((const float *)A->val)[e] : ((const double *)A->val)[e];
      ok = e < A->ptr[r + 1] && A->col[e] == q && memcmp(&v, &c->dense[at], sizeof v) == 0;
      e++;
    }
  }
  ok = ok && A->ptr[c->rows] == e && A->nnz == e;
  CHECK(ok, "%s: the CSR form differs from the test's table", what);
}

/* y = A x by the definition, from the dense table, into y (type t). */
static void product(const Case *c, pxl_type t, const double *x, double *y) {
  for (int64_t r = 0; r < c->rows; r++) {
    if (t == PXL_F32) {
      float s = 0;
      for (int64_t q = 0; q < c->cols; q++)
        if (c->present[r * c->cols + q]) s += (float)c->dense[r * c->cols + q] * (float)x[q];
      y[r] = s;
    } else {
      double s = 0;
      for (int64_t q = 0; q < c->cols; q++)
        if (c->present[r * c->cols + q]) s += c->dense[r * c->cols + q] * x[q];
      y[r] = s;
    }
  }
}

static SpOpts OPTIONS[] = {
    {0, 0, 0, 0, 0},  {1, 1, 0, 0, 0}, {3, 8, 0, 0, 0}, {64, 1 << 30, 0, 0, 0},
    {0, 0, 1, 1, 0},  {0, 0, 2, 3, 0}, {0, 0, 8, 8, 0},
};

static void run_case(const Case *c0, pxl_type t, const char *name) {
  Case c = *c0;
  c.dense = NULL, c.present = NULL;
  densify(&c, t);
  Err err = {0};
  SpMat *A;
  int rc = sparse_from_triplets(c.rows, c.cols, t, c.n, c.i, c.j, c.v, &A, &err);
  CHECK(rc == PXL_OK, "%s: from_triplets: %s", name, err.msg);
  if (rc) return;
  check_csr(&c, A, true, name);
  double *x = malloc((size_t)(c.cols + 1) * sizeof *x), *want = malloc((size_t)(c.rows + 1) * sizeof *want);
  for (int64_t q = 0; q < c.cols; q++) x[q] = t == PXL_F32 ? (double)(float)value() : value();
  product(&c, t, x, want);
  size_t es = t == PXL_F32 ? 4 : 8;
  void *xt = malloc((size_t)(c.cols + 1) * es), *y = malloc((size_t)(c.rows + 1) * es);
  void *wt = malloc((size_t)(c.rows + 1) * es);
  for (int64_t q = 0; q < c.cols; q++)
    if (t == PXL_F32)
      ((float *)xt)[q] = (float)x[q];
    else
      ((double *)xt)[q] = x[q];
  for (int64_t r = 0; r < c.rows; r++)
    if (t == PXL_F32)
      ((float *)wt)[r] = (float)want[r];
    else
      ((double *)wt)[r] = want[r];
  rc = sparse_spmv(A, xt, y, 1, true, &err);
  CHECK(rc == PXL_OK && !memcmp(y, wt, (size_t)c.rows * es), "%s: the reference product", name);
  for (int f = 0; f < SP_NFORMATS; f++)
    for (size_t o = 0; o < sizeof OPTIONS / sizeof *OPTIONS; o++) {
      if ((o > 0 && o < 4 && f != SP_SELL) || (o >= 4 && f != SP_BCSR)) continue;
      char what[160];
      snprintf(what, sizeof what, "%s %s %s opts %zu", name, t == PXL_F32 ? "f32" : "f64", sparse_format_name(f), o);
      SpMat *M, *back;
      rc = sparse_convert(A, f, &OPTIONS[o], &M, &err);
      CHECK(rc == PXL_OK, "%s: convert: %s", what, err.msg);
      if (rc) continue;
      CHECK(M->stored == sparse_stored_for(A, f, &OPTIONS[o]), "%s: stored %lld, predicted %lld", what,
            (long long)M->stored, (long long)sparse_stored_for(A, f, &OPTIONS[o]));
      for (int threads = 1; threads <= 3; threads++) {
        memset(y, 0xa5, (size_t)(c.rows + 1) * es);
        rc = sparse_spmv(M, xt, y, threads, false, &err);
        CHECK(rc == PXL_OK && !memcmp(y, wt, (size_t)c.rows * es), "%s: product on %d threads", what, threads);
      }
      rc = sparse_convert(M, SP_CSR, NULL, &back, &err);
      CHECK(rc == PXL_OK, "%s: back to CSR: %s", what, err.msg);
      if (!rc) check_csr(&c, back, f != SP_DIA && f != SP_BCSR, what);
      sparse_free(back);
      SpMat *again;
      rc = sparse_convert(M, (SpFormat)f, NULL, &again, &err);
      CHECK(rc == PXL_OK && again->stored == M->stored, "%s: a copy in its own format", what);
      sparse_free(again);
      sparse_free(M);
    }
  sparse_free(A);
  free(x), free(want), free(xt), free(y), free(wt), free(c.dense), free(c.present);
}

static void structures(void) {
  printf("structures x formats x threads ...");
  int64_t shapes[][2] = {{0, 0}, {0, 5}, {5, 0}, {1, 1}, {1, 9}, {9, 1}, {7, 7}, {33, 20}, {65, 130}, {200, 150}};
  int before = failures;
  for (int k = 0; k < K_KINDS; k++)
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
      Case c = make(k, shapes[s][0], shapes[s][1]);
      char name[80];
      snprintf(name, sizeof name, "%s %lldx%lld", KIND_NAMES[k], (long long)c.rows, (long long)c.cols);
      run_case(&c, PXL_F64, name);
      run_case(&c, PXL_F32, name);
      drop(&c);
    }
  printf(" %s\n", failures == before ? "ok" : "FAILED");
}

/* Large enough for the threaded path (PARALLEL_MIN stored entries). */
static void threaded(void) {
  printf("threaded products (a 3000 x 2500 power-law and a band) ...");
  int before = failures;
  Case c = make(K_POWER, 3000, 2500);
  run_case(&c, PXL_F64, "power 3000x2500");
  drop(&c);
  c = make(K_BAND, 3000, 3000);
  run_case(&c, PXL_F32, "band 3000x3000");
  drop(&c);
  printf(" %s\n", failures == before ? "ok" : "FAILED");
}

static void refusals(void) {
  printf("refusals ...");
  int before = failures;
  Err err = {0};
  SpMat *A = NULL, *M = NULL;
  int64_t i[] = {0, 3}, j[] = {1, 0};
  double v[] = {1, 2};
  CHECK(sparse_from_triplets(3, 3, PXL_F64, 2, i, j, v, &A, &err) == PXL_EARG && !A && strstr(err.msg, "entry 1"),
        "a row outside the matrix: %s", err.msg);
  CHECK(sparse_from_triplets(3, 3, PXL_U8, 0, i, j, v, &A, &err) == PXL_EARG, "u8 values");
  CHECK(sparse_from_triplets(-1, 3, PXL_F64, 0, i, j, v, &A, &err) == PXL_ETOOBIG, "negative rows");
  CHECK(sparse_from_triplets((int64_t)1 << 31, 3, PXL_F64, 0, i, j, v, &A, &err) == PXL_ETOOBIG, "2^31 rows");
  /* a dense row among empty ones: ELL stores rows x 100 */
  Case c = make(K_DENSE_ROW, 100, 100);
  CHECK(sparse_from_triplets(c.rows, c.cols, PXL_F64, c.n, c.i, c.j, c.v, &A, &err) == PXL_OK, "dense row");
  SpOpts tight = {.max_fill = 2};
  CHECK(sparse_convert(A, SP_ELL, &tight, &M, &err) == PXL_ETOOBIG && !M && strstr(err.msg, "ell"), "ELL fill: %s",
        err.msg);
  CHECK(sparse_convert(A, SP_DIA, &tight, &M, &err) == PXL_ETOOBIG && !M, "DIA fill: %s", err.msg);
  SpOpts rows1 = {.sell_c = 1, .max_fill = 2};
  CHECK(sparse_convert(A, SP_SELL, &rows1, &M, &err) == PXL_OK, "SELL-1 stores no padding: %s", err.msg);
  double x[100] = {0}, y[100];
  CHECK(sparse_spmv(M, x, y, 1, true, &err) == PXL_EARG, "a reference product of SELL");
  SpMat *N = NULL;
  CHECK(sparse_convert(M, SP_ELL, NULL, &N, &err) == PXL_EARG && !N, "SELL to ELL without CSR");
  SpOpts big = {.sell_c = 2048};
  CHECK(sparse_convert(A, SP_SELL, &big, &N, &err) == PXL_EARG && !N, "slices of 2048");
  SpOpts blk = {.br = 65, .bc = 2};
  CHECK(sparse_convert(A, SP_BCSR, &blk, &N, &err) == PXL_EARG && !N, "65-row blocks");
  sparse_free(M);
  sparse_free(A);
  drop(&c);
  printf(" %s\n", failures == before ? "ok" : "FAILED");
}

static void allocation_failures(void) {
  printf("every allocation failing in turn ...");
  int before = failures;
  Case c = make(K_BLOCKS, 40, 50);
  for (int f = 0; f < SP_NFORMATS; f++) {
    int rc = PXL_ENOMEM;
    for (long n = 0; rc == PXL_ENOMEM && n < 200; n++) {
      Err err = {0};
      SpMat *A = NULL, *M = NULL;
      pxl_test_fail_alloc_after(n);
      rc = sparse_from_triplets(c.rows, c.cols, PXL_F64, c.n, c.i, c.j, c.v, &A, &err);
      if (!rc) rc = sparse_convert(A, (SpFormat)f, NULL, &M, &err);
      pxl_test_fail_alloc_after(-1);
      CHECK(rc == PXL_OK || rc == PXL_ENOMEM, "%s: status %d after %ld allocations", sparse_format_name(f), rc, n);
      CHECK(rc == PXL_OK || !M, "%s: a matrix on failure", sparse_format_name(f));
      sparse_free(M);
      sparse_free(A);
    }
    CHECK(rc == PXL_OK, "%s never succeeded", sparse_format_name(f));
  }
  drop(&c);
  printf(" %s\n", failures == before ? "ok" : "FAILED");
}

int main(void) {
  structures();
  threaded();
  refusals();
  allocation_failures();
  if (failures) printf("%d failures\n", failures);
  return failures != 0;
}
