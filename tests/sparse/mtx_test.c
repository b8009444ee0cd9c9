/*
 * mtx_test.c - Matrix Market files (src/sparse/mtx.c) against matrices written out by hand.
 *
 * Small .mtx files, written into a fresh temporary directory, are read and their CSR
 * arrays compared with the ones the file means, bit for bit: every banner the reader
 * takes (coordinate real, integer and pattern, general, symmetric and skew-symmetric;
 * array real and integer; words in any case; CRLF line ends, tabs, no final newline);
 * the mirrors of symmetric (same value, the diagonal once) and skew-symmetric (-v)
 * files; duplicates summed in file order (1e20 + 1 - 1e20 is 0, in another order 1);
 * pattern values 1; arrays in column-major order with zeros left out; comments and
 * blank lines anywhere after the banner. Matrices written by sparse_write_mtx (from CSR,
 * and from COO, ELL and SELL: the same bytes) read back with the same bits in f64 and
 * f32: 0.1, 1e-300, -0, the smallest and largest subnormals, 1e308, the largest finite
 * value, +-inf, NaN of either sign (the sign kept) and a thousand random bit patterns.
 * Seventy hostile files are each refused with PXL_EFORMAT and a message naming the
 * path and the line at fault (and never an allocation sized by a header's count: a file
 * claiming 10^12 entries that holds one fails at its end). Then every allocation
 * failing in turn, reading (a file whose lines straddle the reader's buffer and one of
 * 2^20 + 3 entries, past the first reservation) and writing (from ELL), must give
 * PXL_ENOMEM, leave nothing at the written path and leak nothing (the sanitizer build);
 * a write into a missing directory is PXL_EIO and leaves nothing either.
 *
 * `mtx_test --roundtrip IN OUT f64|f32` reads IN and writes OUT (for mtx_oracle.py).
 *
 * Prints one line per group and "ok" or the failures; returns nonzero on any failure.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "sparse/sparse.h"
#include "util/alloc.h"

static char dir[4096];   /* the temporary directory */
static char where[4400]; /* the last path made by path_of */

static const char *path_of(const char *name) {
  snprintf(where, sizeof where, "%s/%s", dir, name);
  return where;
}

/* Writes n bytes to dir/name; returns the path (path_of's buffer). */
static const char *put_file(const char *name, const char *data, size_t n) {
  const char *p = path_of(name);
  FILE *f = fopen(p, "wb");
  if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
    printf("FAIL: cannot write %s\n", p);
    exit(1);
  }
  return p;
}

static const char *put_text(const char *name, const char *text) { return put_file(name, text, strlen(text)); }

static bool exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

/* Whether dir holds a name containing ".tmp" (a temporary file of the atomic writer). */
static bool temporaries_left(void) {
  DIR *d = opendir(dir);
  bool any = false;
  for (struct dirent *e; d && (e = readdir(d));) any |= strstr(e->d_name, ".tmp") != NULL;
  if (d) closedir(d);
  return any;
}

static uint64_t bits64(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

static uint32_t bits32(float v) {
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

static double from_bits64(uint64_t b) {
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

static float from_bits32(uint32_t b) {
  float v;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* Value e of A as double. */
static double value(const SpMat *A, int64_t e) {
  return A->type == PXL_F32 ? (double)((const float *)A->val)[e] : ((const double *)A->val)[e];
}

/* Whether two stored values are the same: the same bits, but for NaNs, which need only
 * agree in sign (a NaN's payload is not written). */
static bool same_value(pxl_type t, double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) && !signbit(a) == !signbit(b);
  return t == PXL_F32 ? bits32((float)a) == bits32((float)b) : bits64(a) == bits64(b);
}

/* Checks that A is the CSR matrix rows x cols with row pointers ptr, columns col and
 * values val (taken as exact: for f32 they are floats); returns whether it is. */
static bool is_csr(const SpMat *A, int64_t rows, int64_t cols, int64_t nnz, const int64_t *ptr,
                   const int32_t *col, const double *val, const char *what) {
  int before = failed;
  CHECK(A && A->format == SP_CSR, "%s: no CSR matrix", what);
  if (!A || A->format != SP_CSR) return false;
  CHECK(A->rows == rows && A->cols == cols && A->nnz == nnz,
        "%s: %lld x %lld with %lld entries, want %lld x %lld with %lld", what, (long long)A->rows,
        (long long)A->cols, (long long)A->nnz, (long long)rows, (long long)cols, (long long)nnz);
  if (failed != before) return false;
  for (int64_t r = 0; r <= rows; r++)
    CHECK(A->ptr[r] == ptr[r], "%s: ptr[%lld] = %lld, want %lld", what, (long long)r, (long long)A->ptr[r],
          (long long)ptr[r]);
  if (failed != before) return false;
  for (int64_t e = 0; e < nnz; e++) {
    CHECK(A->col[e] == col[e], "%s: entry %lld in column %d, want %d", what, (long long)e, A->col[e], col[e]);
    CHECK(same_value(A->type, value(A, e), val[e]), "%s: entry %lld is %.17g (%016llx), want %.17g (%016llx)",
          what, (long long)e, value(A, e), (unsigned long long)bits64(value(A, e)), val[e],
          (unsigned long long)bits64(val[e]));
  }
  return failed == before;
}

#define N(a) (int64_t)(sizeof(a) / sizeof(a)[0])

/* Reads text (as file `name`) in type t; NULL (after a failure counted) if it is refused. */
static SpMat *read_text(const char *name, const char *text, pxl_type t) {
  const char *p = put_text(name, text);
  SpMat *A = NULL;
  Err err = {0};
  int rc = sparse_read_mtx(p, t, &A, &err);
  CHECK(rc == PXL_OK && A, "%s refused: %s", name, err.msg);
  return rc == PXL_OK ? A : NULL;
}

/* ---- what files mean ---- */

/* A 3 x 4 general matrix in each field and in banners of any case, with the line ends
 * and blanks files have in the wild. */
static void test_headers(void) {
  int before = failed;
  static const int64_t ptr[] = {0, 2, 2, 4};
  static const int32_t col[] = {0, 3, 1, 2};
  static const double real[] = {1.5, -2, 3.25, 1e-3}, ints[] = {7, -9, 123456789012, 0},
                      ones[] = {1, 1, 1, 1};
  static const struct {
    const char *name, *text;
    const double *val;
  } cases[] = {
      {"real.mtx",
       "%%MatrixMarket matrix coordinate real general\n3 4 4\n1 1 1.5\n1 4 -2\n3 2 3.25\n3 3 1e-3\n", real},
      {"upper.mtx",
       "%%MATRIXMARKET MATRIX COORDINATE REAL GENERAL\n3 4 4\n3 3 1e-3\n1 4 -2\n3 2 3.25\n1 1 1.5\n", real},
      {"mixed.mtx",
       "%%MatrixMarket Matrix Coordinate Real General\n3 4 4\n1 1 1.5\n1 4 -2\n3 2 3.25\n3 3 1e-3", real},
      {"crlf.mtx",
       "%%MatrixMarket matrix coordinate real general\r\n% made on Windows\r\n3 4 4\r\n1 1 1.5\r\n"
       "1 4 -2\r\n3 2 3.25\r\n3 3 1e-3\r\n",
       real},
      {"blanks.mtx",
       "%%MatrixMarket\tmatrix  coordinate real\tgeneral  \n  3\t4 4  \n\t1 1\t+1.5\n1  4 -2.0\n"
       "3 2 325e-2 \n03 003 0.001\n",
       real},
      {"integer.mtx",
       "%%MatrixMarket matrix coordinate integer general\n3 4 4\n1 1 7\n1 4 -9\n3 2 123456789012\n"
       "3 3 -0\n",
       ints},
      {"pattern.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 4 4\n1 1\n1 4\n3 2\n3 3\n", ones},
      {"patternuc.mtx", "%%MatrixMarket matrix coordinate PATTERN general\n3 4 4\n3 3\n3 2\n1 4\n1 1\n",
       ones},
  };
  for (int k = 0; k < (int)N(cases); k++)
    for (int t = 0; t < 2; t++) {
      SpMat *A = read_text(cases[k].name, cases[k].text, t ? PXL_F32 : PXL_F64);
      if (!A) continue;
      CHECK(A->type == (t ? PXL_F32 : PXL_F64), "%s: type %d", cases[k].name, (int)A->type);
      char what[128];
      snprintf(what, sizeof what, "%s %s", cases[k].name, t ? "f32" : "f64");
      double want[4];
      for (int e = 0; e < 4; e++) want[e] = t ? (double)(float)cases[k].val[e] : cases[k].val[e];
      is_csr(A, 3, 4, 4, ptr, col, want, what);
      sparse_free(A);
    }
  { /* an integer beyond 2^53 is the nearest double (2^53 + 1 rounds to even) */
    SpMat *A =
        read_text("big.mtx",
                  "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 9007199254740993\n", PXL_F64);
    static const int64_t p1[] = {0, 1};
    static const int32_t c1[] = {0};
    static const double v1[] = {9007199254740992.0};
    is_csr(A, 1, 1, 1, p1, c1, v1, "integer 2^53 + 1");
    sparse_free(A);
  }
  { /* the last column there can be */
    SpMat *A = read_text("wide.mtx",
                         "%%MatrixMarket matrix coordinate real general\n1 2147483647 2\n"
                         "1 2147483647 -1\n1 1 2\n",
                         PXL_F64);
    static const int64_t p1[] = {0, 2};
    static const int32_t c1[] = {0, INT32_MAX - 1};
    static const double v1[] = {2, -1};
    is_csr(A, 1, INT32_MAX, 2, p1, c1, v1, "column 2^31 - 1");
    sparse_free(A);
  }
  { /* empty matrices: no rows, no columns, no entries */
    static const char *const texts[] = {"%%MatrixMarket matrix coordinate real general\n0 0 0\n",
                                        "%%MatrixMarket matrix coordinate real general\n5 0 0\n",
                                        "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 0\n",
                                        "%%MatrixMarket matrix array real general\n0 3\n",
                                        "%%MatrixMarket matrix array real general\n2 0\n"};
    static const int64_t shape[][2] = {{0, 0}, {5, 0}, {4, 4}, {0, 3}, {2, 0}};
    static const int64_t zeros[6] = {0};
    for (int k = 0; k < (int)N(texts); k++) {
      SpMat *A = read_text("empty.mtx", texts[k], PXL_F64);
      char what[64];
      snprintf(what, sizeof what, "empty matrix %d", k);
      is_csr(A, shape[k][0], shape[k][1], 0, zeros, NULL, NULL, what);
      sparse_free(A);
    }
  }
  printf("headers: every field and symmetry, any case, CRLF, blanks, no final newline: %s\n",
         failed == before ? "ok" : "FAIL");
}

/* Symmetric and skew-symmetric files give both triangles; the diagonal once. */
static void test_symmetry(void) {
  int before = failed;
  /* [ 1  2  0 ]   lower triangle in the file: (1,1) 1, (2,1) 2, (3,2) 5, (3,3) 6
   * [ 2  0  5 ]
   * [ 0  5  6 ] */
  SpMat *A = read_text("sym.mtx",
                       "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n3 2 5\n1 1 1\n2 1 2\n"
                       "3 3 6\n",
                       PXL_F64);
  static const int64_t sp[] = {0, 2, 4, 6};
  static const int32_t sc[] = {0, 1, 0, 2, 1, 2};
  static const double sv[] = {1, 2, 2, 5, 5, 6};
  is_csr(A, 3, 3, 6, sp, sc, sv, "symmetric");
  sparse_free(A);
  A = read_text("symp.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 4\n3 2\n1 1\n2 1\n3 3\n",
                PXL_F32);
  static const double ones[] = {1, 1, 1, 1, 1, 1};
  is_csr(A, 3, 3, 6, sp, sc, ones, "symmetric pattern");
  sparse_free(A);
  A = read_text("symi.mtx",
                "%%MatrixMarket matrix coordinate integer symmetric\n3 3 4\n3 2 5\n1 1 1\n2 1 2\n"
                "3 3 6\n",
                PXL_F32);
  is_csr(A, 3, 3, 6, sp, sc, sv, "symmetric integer");
  sparse_free(A);
  /* [ 0 -2  0 ]   strict lower triangle: (2,1) 2, (3,1) -0.5, (3,2) 7
   * [ 2  0 -7 ]
   * [-.5 7  0 ] */
  A = read_text("skew.mtx",
                "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 3\n2 1 2\n3 2 7\n3 1 -0.5\n",
                PXL_F64);
  static const int64_t kp[] = {0, 2, 4, 6};
  static const int32_t kc[] = {1, 2, 0, 2, 0, 1};
  static const double kv[] = {-2, 0.5, 2, -7, -0.5, 7};
  is_csr(A, 3, 3, 6, kp, kc, kv, "skew-symmetric");
  sparse_free(A);
  /* a skew mirror of 0 is -0, of NaN a NaN */
  A = read_text("skew0.mtx", "%%MatrixMarket Matrix Coordinate Integer Skew-Symmetric\n2 2 1\n2 1 0\n",
                PXL_F64);
  static const int64_t zp[] = {0, 1, 2};
  static const int32_t zc[] = {1, 0};
  static const double zv[] = {-0.0, 0.0};
  is_csr(A, 2, 2, 2, zp, zc, zv, "skew-symmetric zero");
  sparse_free(A);
  printf("symmetry: symmetric mirrors (diagonal once), skew-symmetric -v, pattern and integer: %s\n",
         failed == before ? "ok" : "FAIL");
}

/* Duplicates summed in the order of the file: (1e20 + 1) - 1e20 = 0, where any other
 * order gives 1 or 0 by another path; explicit zeros kept. */
static void test_duplicates(void) {
  int before = failed;
  static const char text[] = "%%MatrixMarket matrix coordinate real general\n3 3 7\n"
                             "1 2 1e20\n2 1 0\n1 2 1\n2 3 1\n1 2 -1e20\n2 3 1e20\n2 3 -1e20\n";
  static const int64_t p[] = {0, 1, 3, 3};
  static const int32_t c[] = {1, 0, 2};
  static const double v[] = {0, 0, 0};
  for (int t = 0; t < 2; t++) {
    SpMat *A = read_text("dup.mtx", text, t ? PXL_F32 : PXL_F64);
    is_csr(A, 3, 3, 3, p, c, v, t ? "duplicates f32" : "duplicates f64");
    sparse_free(A);
  }
  /* the other order of the same three values at one place: 1e20 - 1e20 + 1 = 1 */
  SpMat *A = read_text("dup2.mtx",
                       "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1e20\n1 1 -1e20\n"
                       "1 1 1\n",
                       PXL_F64);
  static const int64_t p1[] = {0, 1, 1};
  static const int32_t c1[] = {0};
  static const double v1[] = {1};
  is_csr(A, 2, 2, 1, p1, c1, v1, "duplicates in another order");
  sparse_free(A);
  /* symmetric: the mirrors of duplicates sum in the same order */
  A = read_text("dupsym.mtx",
                "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n2 1 1e20\n2 1 1\n2 1 -1e20\n",
                PXL_F64);
  static const int64_t p2[] = {0, 1, 2};
  static const int32_t c2[] = {1, 0};
  static const double v2[] = {0, 0};
  is_csr(A, 2, 2, 2, p2, c2, v2, "symmetric duplicates");
  sparse_free(A);
  printf("duplicates: summed in file order, explicit zeros kept: %s\n", failed == before ? "ok" : "FAIL");
}

/* Arrays: rows * cols values, column by column; zeros (+0 and -0) not stored. */
static void test_array(void) {
  int before = failed;
  /* [ 1  0  4 ]
   * [ 2 -0  5 ]
   * (column-major: 1 2 0 -0 4 5) */
  SpMat *A = read_text("array.mtx",
                       "%%MatrixMarket matrix array real general\n% a comment\n2 3\n1\n2\n\n0\n-0\n"
                       "% another\n4\n5e0\n",
                       PXL_F64);
  static const int64_t p[] = {0, 2, 4};
  static const int32_t c[] = {0, 2, 0, 2};
  static const double v[] = {1, 4, 2, 5};
  is_csr(A, 2, 3, 4, p, c, v, "array");
  sparse_free(A);
  A = read_text("arrayi.mtx", "%%MatrixMarket matrix ARRAY integer GENERAL\n2 3\n1\n2\n0\n-0\n4\n5\n",
                PXL_F32);
  is_csr(A, 2, 3, 4, p, c, v, "integer array");
  sparse_free(A);
  A = read_text("column.mtx", "%%MatrixMarket matrix array real general\n3 1\nnan\n0\n-inf\n", PXL_F64);
  static const int64_t p3[] = {0, 1, 1, 2};
  static const int32_t c3[] = {0, 0};
  const double v3[] = {NAN, -INFINITY};
  is_csr(A, 3, 1, 2, p3, c3, v3, "array column with NaN");
  sparse_free(A);
  printf("array: column-major, zeros left out, integer values: %s\n", failed == before ? "ok" : "FAIL");
}

/* Comments and blank lines between the banner and the size line, among the entries and
 * after them; a '%' after blanks is a comment too. */
static void test_comments(void) {
  int before = failed;
  SpMat *A = read_text("comments.mtx",
                       "%%MatrixMarket matrix coordinate real general\n%\n% size follows\n\n"
                       "   \n\t% indented comment\n2 2 2\n% between\n\n1 1 1\n   \n%%\n% 9 9 9\n"
                       "2 2 2\n\n% the end\n\n",
                       PXL_F64);
  static const int64_t p[] = {0, 1, 2};
  static const int32_t c[] = {0, 1};
  static const double v[] = {1, 2};
  is_csr(A, 2, 2, 2, p, c, v, "comments");
  sparse_free(A);
  printf("comments and blank lines: before the size line, among and after the entries: %s\n",
         failed == before ? "ok" : "FAIL");
}

/* Numbers strtod reads beyond plain decimals: nan, inf, infinity, hex floats, decimals
 * past the range (inf; subnormal or zero), leading '+'. */
static void test_numbers(void) {
  int before = failed;
  SpMat *A = read_text("numbers.mtx",
                       "%%MatrixMarket matrix coordinate real general\n1 9 9\n1 1 nan\n1 2 -INF\n"
                       "1 3 Infinity\n1 4 0x1.8p1\n1 5 1e400\n1 6 -1e-400\n1 7 4.9e-324\n1 8 +.5\n"
                       "1 9 -NaN\n",
                       PXL_F64);
  static const int64_t p[] = {0, 9};
  static const int32_t c[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  const double v[] = {NAN, -INFINITY, INFINITY, 3.0, INFINITY, -0.0, 4.9406564584124654e-324, 0.5, -NAN};
  is_csr(A, 1, 9, 9, p, c, v, "numbers");
  sparse_free(A);
  printf("numbers: nan, inf, hex floats, out-of-range decimals: %s\n", failed == before ? "ok" : "FAIL");
}

/* ---- writing and reading back ---- */

/* A matrix of type t from the entries; exits on failure (not what is tested here). */
static SpMat *build(int64_t rows, int64_t cols, pxl_type t, int64_t n, const int64_t *i, const int64_t *j,
                    const double *v) {
  SpMat *A = NULL;
  Err err = {0};
  if (sparse_from_triplets(rows, cols, t, n, i, j, v, &A, &err) != PXL_OK) {
    printf("FAIL: sparse_from_triplets: %s\n", err.msg);
    exit(1);
  }
  return A;
}

static char *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)len + 1);
  *n = fread(s, 1, (size_t)len, f);
  s[*n] = 0;
  fclose(f);
  return s;
}

/* Writes A, reads it back in A's type and checks every array; returns the file's text
 * (malloc'd) for the caller to look at. */
static char *round_trip(const SpMat *A, const SpMat *csr, const char *what) {
  const char *p = path_of("rt.mtx");
  Err err = {0};
  int rc = sparse_write_mtx(A, p, &err);
  CHECK(rc == PXL_OK, "%s: write failed: %s", what, err.msg);
  if (rc != PXL_OK) return NULL;
  CHECK(!temporaries_left(), "%s: a temporary file left", what);
  SpMat *B = NULL;
  rc = sparse_read_mtx(p, A->type, &B, &err);
  CHECK(rc == PXL_OK, "%s: reading back failed: %s", what, err.msg);
  if (rc == PXL_OK) {
    double *val = malloc(sizeof(double) * (size_t)(csr->nnz + 1));
    for (int64_t e = 0; e < csr->nnz; e++) val[e] = value(csr, e);
    is_csr(B, csr->rows, csr->cols, csr->nnz, csr->ptr, csr->col, val, what);
    free(val);
  }
  sparse_free(B);
  size_t n;
  return slurp(p, &n);
}

static void test_round_trip(void) {
  int before = failed;
  const double special[] = {0.1,
                            1e-300,
                            -0.0,
                            0.0,
                            4.9406564584124654e-324,
                            2.2250738585072009e-308,
                            2.2250738585072014e-308,
                            1e308,
                            DBL_MAX,
                            -DBL_MAX,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            -NAN,
                            1.0 / 3.0,
                            3.141592653589793,
                            -123456789.125,
                            (double)FLT_MIN / 3,
                            (double)FLT_TRUE_MIN,
                            (double)FLT_MAX,
                            (double)0.1f,
                            1e-30,
                            16777217.0};
  enum { NRANDOM = 1000 };
  int64_t n = N(special) + NRANDOM, rows = 37, cols = 41;
  int64_t *i = malloc(sizeof(int64_t) * (size_t)n), *j = malloc(sizeof(int64_t) * (size_t)n);
  double *v = malloc(sizeof(double) * (size_t)n);
  for (int t = 0; t < 2; t++) {
    pxl_type type = t ? PXL_F32 : PXL_F64;
    rng = 0x1234567 + (uint64_t)t;
    for (int64_t e = 0; e < n; e++) {
      i[e] = e % rows,
      j[e] = (e * 7 + e / rows) % cols; /* distinct places: e mod rows and e / rows fix them */
      if (e < N(special)) {
        v[e] = special[e];
        continue;
      }
      do /* random bits, NaNs left to the special values */
        v[e] = t ? (double)from_bits32((uint32_t)random_u64()) : from_bits64(random_u64());
      while (isnan(v[e]));
    }
    SpMat *A = build(rows, cols, type, n, i, j, v);
    char what[64];
    snprintf(what, sizeof what, "round trip %s", t ? "f32" : "f64");
    char *text = round_trip(A, A, what);
    if (text) {
      char head[128];
      snprintf(head, sizeof head, "%%%%MatrixMarket matrix coordinate real general\n%d %d %lld\n1 1 ",
               (int)rows, (int)cols, (long long)A->nnz);
      CHECK(strncmp(text, head, strlen(head)) == 0, "%s: the file starts '%.60s'", what, text);
    }
    /* the same bytes from the other formats that keep every entry */
    static const SpFormat formats[] = {SP_COO, SP_ELL, SP_SELL};
    for (int f = 0; f < (int)N(formats); f++) {
      SpMat *B = NULL;
      Err err = {0};
      if (sparse_convert(A, formats[f], NULL, &B, &err) != PXL_OK) {
        CHECK(0, "%s: conversion to %s failed: %s", what, sparse_format_name(formats[f]), err.msg);
        continue;
      }
      char fwhat[96];
      snprintf(fwhat, sizeof fwhat, "%s from %s", what, sparse_format_name(formats[f]));
      char *other = round_trip(B, A, fwhat);
      CHECK(text && other && strcmp(text, other) == 0, "%s: another file than from CSR", fwhat);
      free(other);
      sparse_free(B);
    }
    free(text);
    sparse_free(A);
  }
  { /* the digits: %.17g and %.9g, 1-based, CSR order */
    static const int64_t ii[] = {1, 0, 1}, jj[] = {2, 1, 0};
    static const double vv[] = {0.1, -0.0, 1e-300};
    SpMat *A = build(2, 3, PXL_F64, 3, ii, jj, vv);
    char *text = round_trip(A, A, "digits f64");
    CHECK(text && !strcmp(text, "%%MatrixMarket matrix coordinate real general\n2 3 3\n1 2 -0\n"
                                "2 1 1e-300\n2 3 0.10000000000000001\n"),
          "f64 text: %s", text ? text : "(none)");
    free(text);
    sparse_free(A);
    A = build(2, 3, PXL_F32, 3, ii, jj, vv);
    text = round_trip(A, A, "digits f32");
    CHECK(text && !strcmp(text, "%%MatrixMarket matrix coordinate real general\n2 3 3\n1 2 -0\n2 1 0\n"
                                "2 3 0.100000001\n"),
          "f32 text: %s", text ? text : "(none)");
    free(text);
    sparse_free(A);
  }
  { /* empty ones */
    static const int64_t shape[][2] = {{0, 0}, {3, 0}, {0, 4}, {5, 6}};
    for (int k = 0; k < (int)N(shape); k++) {
      SpMat *A = build(shape[k][0], shape[k][1], PXL_F64, 0, i, j, v);
      free(round_trip(A, A, "empty"));
      sparse_free(A);
    }
  }
  free(i), free(j), free(v);
  printf("round trip: f64 and f32 bits (specials, subnormals, random), from CSR, COO, ELL, SELL: %s\n",
         failed == before ? "ok" : "FAIL");
}

/* ---- hostile files ---- */

static void test_hostile(void) {
  int before = failed;
  static const char B[] = "%%MatrixMarket matrix coordinate real general\n";
  static const struct {
    const char *name, *text;
    long line;
    const char *says; /* a word of the message */
  } cases[] = {
      {"empty", "", 1, "empty"},
      {"banner-3-words", "%%MatrixMarket matrix coordinate real\n2 2 1\n1 1 1\n", 1, "4 words"},
      {"banner-6-words", "%%MatrixMarket matrix coordinate real general extra\n2 2 1\n1 1 1\n", 1,
       "more than 5"},
      {"banner-not-first", "% comment\n%%MatrixMarket matrix coordinate real general\n1 1 0\n", 1, "banner"},
      {"banner-indented", " %%MatrixMarket matrix coordinate real general\n1 1 0\n", 1, "banner"},
      {"banner-word", "%%MatrixMarketX matrix coordinate real general\n1 1 0\n", 1, "MatrixMarketX"},
      {"banner-only-percent", "%%\n1 1 0\n", 1, "banner"},
      {"vector", "%%MatrixMarket vector coordinate real general\n1 1 0\n", 1, "vector"},
      {"format", "%%MatrixMarket matrix sparse real general\n1 1 0\n", 1, "sparse"},
      {"complex", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n", 1, "complex"},
      {"hermitian", "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1, "hermitian"},
      {"field", "%%MatrixMarket matrix coordinate double general\n1 1 0\n", 1, "double"},
      {"symmetry", "%%MatrixMarket matrix coordinate real upper\n1 1 0\n", 1, "upper"},
      {"array-pattern", "%%MatrixMarket matrix array pattern general\n1 1\n1\n", 1, "pattern"},
      {"array-symmetric", "%%MatrixMarket matrix array real symmetric\n1 1\n1\n", 1, "symmetric"},
      {"pattern-skew", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n", 1, "skew"},
      {"banner-nul", "%%MatrixMarket matrix coordinate real general\0\n1 1 0\n", 1, "NUL"},
      {"no-size-line", "%%MatrixMarket matrix coordinate real general\n% only a comment\n", 3, "size line"},
      {"size-negative", "%%MatrixMarket matrix coordinate real general\n-2 2 1\n1 1 1\n", 2, "negative"},
      {"size-negative-count", "%%MatrixMarket matrix coordinate real general\n2 2 -1\n", 2, "negative"},
      {"size-too-big", "%%MatrixMarket matrix coordinate real general\n2147483648 1 0\n", 2, "limit"},
      {"size-huge", "%%MatrixMarket matrix coordinate real general\n1 99999999999999999999999 0\n", 2,
       "limit"},
      {"size-words", "%%MatrixMarket matrix coordinate real general\n2 2\n1 1 1\n", 2, "2 words"},
      {"size-more-words", "%%MatrixMarket matrix coordinate real general\n2 2 1 1\n1 1 1\n", 2, "more than"},
      {"size-garbage", "%%MatrixMarket matrix coordinate real general\n2 x 1\n1 1 1\n", 2, "whole number"},
      {"size-real", "%%MatrixMarket matrix coordinate real general\n2 2.0 1\n1 1 1\n", 2, "whole number"},
      {"array-size-words", "%%MatrixMarket matrix array real general\n2 2 4\n1\n2\n3\n4\n", 2, "more than"},
      {"nnz-over-cells",
       "%%MatrixMarket matrix coordinate real general\n2 2 5\n1 1 1\n1 2 1\n2 1 1\n2 2 1\n1 1 1\n", 2, "fit"},
      {"nnz-over-triangle",
       "%%MatrixMarket matrix coordinate real symmetric\n2 2 4\n1 1 1\n2 1 1\n2 2 1\n1 1 1\n", 2, "fit"},
      {"nnz-over-strict-triangle",
       "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 2\n2 1 1\n2 1 1\n", 2, "fit"},
      {"symmetric-not-square", "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n", 2,
       "square"},
      {"index-0", "%%MatrixMarket matrix coordinate real general\n2 2 1\n0 1 1\n", 3, "outside"},
      {"row-over", "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n", 3, "outside"},
      {"column-over", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n% x\n2 3 1\n", 5,
       "column"},
      {"index-negative", "%%MatrixMarket matrix coordinate real general\n2 2 1\n-1 1 1\n", 3, "outside"},
      {"index-real", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1.0 1 1\n", 3, "whole number"},
      {"index-hex", "%%MatrixMarket matrix coordinate real general\n2 2 1\n0x1 1 1\n", 3, "whole number"},
      {"index-exponent", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1e0 1\n", 3,
       "whole number"},
      {"too-few", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n", 4, "end of file"},
      {"too-few-comment", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n% 2 2 2\n\n", 6,
       "end of file"},
      {"too-many", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 2\n", 4, "more entries"},
      {"too-many-after-comment", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n%\n\n2 2 2\n",
       6, "more entries"},
      {"garbage-value", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 abc\n", 3, "not a number"},
      {"value-suffix", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.5x\n", 3, "not a number"},
      {"value-fortran", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0D+00\n", 3,
       "not a number"},
      {"value-comma", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1,5\n", 3, "not a number"},
      {"trailing-token", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1 7\n", 3, "more than 3"},
      {"trailing-comment", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1 % one\n", 3,
       "more than 3"},
      {"value-missing", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2\n", 4, "2 words"},
      {"index-only", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1\n", 3, "1 word"},
      {"pattern-value", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1\n", 3, "more than 2"},
      {"integer-real", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n", 3, "integer"},
      {"integer-overflow",
       "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 99999999999999999999\n", 3, "integer"},
      {"integer-nan", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 nan\n", 3, "integer"},
      {"above-diagonal", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 1\n1 2 1\n", 4,
       "above"},
      {"skew-diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n", 4,
       "on the"},
      {"skew-above", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n1 3 1\n", 3, "above"},
      {"nul-entry", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\0 1\n", 3, "NUL"},
      {"nul-comment", "%%MatrixMarket matrix coordinate real general\n% \0\n2 2 1\n1 1 1\n", 2, "NUL"},
      {"array-too-few", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 6, "end of file"},
      {"array-too-many", "%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n", 5, "more entries"},
      {"array-two-per-line", "%%MatrixMarket matrix array real general\n2 1\n1 2\n", 3, "more than 1"},
      {"array-integer", "%%MatrixMarket matrix array integer general\n2 1\n1\n2.5\n", 4, "integer"},
      /* a header's count is no licence for its memory: 10^12 claimed, one given */
      {"claims-huge",
       "%%MatrixMarket matrix coordinate real general\n2147483647 2147483647 1000000000000\n1 1 1\n", 4,
       "end of file"},
      {"claims-huge-array", "%%MatrixMarket matrix array real general\n1000000 1000000\n1\n", 4,
       "end of file"},
      {"claims-over-limit",
       "%%MatrixMarket matrix coordinate real general\n2147483647 2147483647 1099511627777\n", 2, "limit"},
      {"array-over-limit", "%%MatrixMarket matrix array real general\n2147483647 2147483647\n", 2, "limit"},
      {"cr-only", "%%MatrixMarket matrix coordinate real general\r2 2 1\r1 1 1\r", 1, "more than 5"},
  };
  char name[64];
  for (int k = 0; k < (int)N(cases); k++) {
    snprintf(name, sizeof name, "%s.mtx", cases[k].name);
    /* the *nul* texts hold a NUL: their length runs past it to the literal's end */
    size_t n = strlen(cases[k].text);
    if (strstr(cases[k].name, "nul")) n += 1 + strlen(cases[k].text + n + 1);
    const char *p = put_file(name, cases[k].text, n);
    for (int t = 0; t < 2; t++) {
      SpMat *A = (SpMat *)&A; /* not NULL: the reader must clear it */
      Err err = {0};
      int rc = sparse_read_mtx(p, t ? PXL_F32 : PXL_F64, &A, &err);
      char at[64];
      snprintf(at, sizeof at, ": line %ld: ", cases[k].line);
      CHECK(rc == PXL_EFORMAT && err.code == PXL_EFORMAT, "%s: status %d (%s)", cases[k].name, rc, err.msg);
      CHECK(A == NULL, "%s: a matrix with the failure", cases[k].name);
      CHECK(strncmp(err.msg, p, strlen(p)) == 0 && strstr(err.msg, at),
            "%s: message '%s' does not say '%s%s'", cases[k].name, err.msg, p, at);
      CHECK(strstr(err.msg, cases[k].says), "%s: message '%s' does not say '%s'", cases[k].name, err.msg,
            cases[k].says);
      if (rc == PXL_OK && A) sparse_free(A);
    }
  }
  { /* a line over the limit, 1 MiB, and one just at it (accepted) */
    size_t pad = (size_t)1 << 20, head = strlen(B) + strlen("1 1 1\n");
    char *text = malloc(head + pad + 64);
    sprintf(text, "%s1 1 1\n", B);
    memset(text + head, ' ', pad + 1);
    strcpy(text + head + pad + 1, "1 1 1\n");
    /* the entry line: pad + 1 blanks, then "1 1 1": longer than the limit */
    const char *p = put_file("long.mtx", text, strlen(text));
    SpMat *A = NULL;
    Err err = {0};
    int rc = sparse_read_mtx(p, PXL_F64, &A, &err);
    CHECK(rc == PXL_EFORMAT && strstr(err.msg, ": line 3: ") && strstr(err.msg, "longer"), "long line: %d %s",
          rc, err.msg);
    /* banner, size line, then a comment of exactly the limit: read */
    int h = sprintf(text, "%s1 1 1\n%%", B);
    memset(text + h, 'x', pad - 1);
    strcpy(text + h + pad - 1, "\n1 1 1\n");
    p = put_file("limit.mtx", text, strlen(text));
    rc = sparse_read_mtx(p, PXL_F64, &A, &err);
    CHECK(rc == PXL_OK, "a line at the limit refused: %s", err.msg);
    sparse_free(A);
    A = NULL;
    /* one byte more: refused, the line named */
    h = sprintf(text, "%s1 1 1\n%%", B);
    memset(text + h, 'x', pad);
    strcpy(text + h + pad, "\n1 1 1\n");
    p = put_file("over.mtx", text, strlen(text));
    rc = sparse_read_mtx(p, PXL_F64, &A, &err);
    CHECK(rc == PXL_EFORMAT && strstr(err.msg, ": line 3: ") && strstr(err.msg, "longer"),
          "line over the limit: %d %s", rc, err.msg);
    /* a last line over the limit without a newline */
    h = sprintf(text, "%s1 1 1\n1 1 1\n%%", B);
    memset(text + h, 'x', pad + 5);
    text[h + pad + 5] = 0;
    p = put_file("overlast.mtx", text, strlen(text));
    rc = sparse_read_mtx(p, PXL_F64, &A, &err);
    CHECK(rc == PXL_EFORMAT && strstr(err.msg, ": line 4: ") && strstr(err.msg, "longer"),
          "last line over the limit: %d %s", rc, err.msg);
    free(text);
  }
  { /* what cannot be opened or read: PXL_EIO; a bad type: PXL_EARG */
    SpMat *A = NULL;
    Err err = {0};
    int rc = sparse_read_mtx(path_of("missing.mtx"), PXL_F64, &A, &err);
    CHECK(rc == PXL_EIO && strstr(err.msg, "missing.mtx"), "a missing file: %d %s", rc, err.msg);
    rc = sparse_read_mtx(dir, PXL_F64, &A, &err);
    CHECK(rc == PXL_EIO && A == NULL, "a directory: %d %s", rc, err.msg);
    rc = sparse_read_mtx(put_text("ok.mtx", "%%MatrixMarket matrix coordinate real general\n1 1 0\n"), PXL_U8,
                         &A, &err);
    CHECK(rc == PXL_EARG && A == NULL, "a u8 matrix: %d %s", rc, err.msg);
  }
  printf("hostile: %d files refused with PXL_EFORMAT naming the line, long lines, EIO: %s\n",
         (int)N(cases) + 3, failed == before ? "ok" : "FAIL");
}

/* ---- out of memory, and writes that fail ---- */

/* Reads p with every allocation failing in turn until it succeeds; returns the matrix. */
static SpMat *read_failing(const char *p, pxl_type t, const char *what) {
  for (long k = 0; k < 10000; k++) {
    SpMat *A = (SpMat *)&A;
    Err err = {0};
    pxl_test_fail_alloc_after(k);
    int rc = sparse_read_mtx(p, t, &A, &err);
    pxl_test_fail_alloc_after(-1);
    if (rc == PXL_OK) return A;
    CHECK(rc == PXL_ENOMEM && err.code == PXL_ENOMEM && A == NULL,
          "%s, allocation %ld failing: status %d (%s)", what, k, rc, err.msg);
    if (rc != PXL_ENOMEM) return NULL;
  }
  CHECK(0, "%s never succeeded", what);
  return NULL;
}

static void test_out_of_memory(void) {
  int before = failed;
  /* a symmetric file whose comment (100 KB) outgrows the reader's first buffer */
  size_t big = 100000;
  char *text = malloc(big + 512);
  int h = sprintf(text, "%%%%MatrixMarket matrix coordinate real symmetric\n%%");
  memset(text + h, 'c', big);
  strcpy(text + h + big, "\n4 4 5\n1 1 1\n3 1 2\n% x\n4 2 3\n4 4 4\n4 2 0.5\n");
  SpMat *A = read_failing(put_text("oom.mtx", text), PXL_F64, "symmetric file");
  static const int64_t p[] = {0, 2, 3, 4, 6};
  static const int32_t c[] = {0, 2, 3, 0, 1, 3};
  static const double v[] = {1, 2, 3.5, 2, 3.5, 4};
  is_csr(A, 4, 4, 6, p, c, v, "symmetric file after the failures");
  free(text);
  /* 2^20 + 3 entries: past the first reservation, so that the arrays grow */
  int64_t n = ((int64_t)1 << 20) + 3, rows = 1 << 12;
  text = malloc((size_t)n * 24 + 128);
  char *q = text + sprintf(text, "%%%%MatrixMarket matrix coordinate integer general\n%lld %lld %lld\n",
                           (long long)rows, (long long)rows, (long long)n);
  for (long long e = 0; e < n; e++)
    q += sprintf(q, "%lld %lld %lld\n", e % rows + 1, e / rows + 1, e % 1000 - 500);
  SpMat *B = read_failing(put_file("grow.mtx", text, (size_t)(q - text)), PXL_F32, "2^20 + 3 entries");
  CHECK(B && B->nnz == n && B->ptr[1] == (n + rows - 1) / rows, "2^20 + 3 entries: %lld read",
        B ? (long long)B->nnz : -1LL);
  bool right = B != NULL;
  for (int64_t r = 0; right && r < rows; r++)
    for (int64_t e = B->ptr[r]; right && e < B->ptr[r + 1]; e++) {
      int64_t k = (int64_t)B->col[e] * rows + r; /* the file's entry */
      right = ((const float *)B->val)[e] == (float)(k % 1000 - 500);
    }
  CHECK(right, "2^20 + 3 entries: a wrong value");
  sparse_free(B);
  free(text);
  /* writing from ELL (a conversion to CSR first): nothing at the path after a failure */
  SpMat *E = NULL;
  Err err = {0};
  CHECK(A && sparse_convert(A, SP_ELL, NULL, &E, &err) == PXL_OK, "to ELL: %s", err.msg);
  const char *out = path_of("written.mtx");
  bool done = false;
  for (long k = 0; E && k < 1000 && !done; k++) {
    pxl_test_fail_alloc_after(k);
    int rc = sparse_write_mtx(E, out, &err);
    pxl_test_fail_alloc_after(-1);
    done = rc == PXL_OK;
    CHECK(done || (rc == PXL_ENOMEM && err.code == PXL_ENOMEM),
          "writing, allocation %ld failing: status %d (%s)", k, rc, err.msg);
    CHECK(done || !exists(out), "writing, allocation %ld failing: a file left", k);
    CHECK(!temporaries_left(), "writing, allocation %ld failing: a temporary file left", k);
  }
  CHECK(done, "writing never succeeded");
  sparse_free(E);
  /* a missing directory: PXL_EIO, nothing made */
  char missing[4300];
  snprintf(missing, sizeof missing, "%s/no/such/dir/m.mtx", dir);
  int rc = A ? sparse_write_mtx(A, missing, &err) : PXL_OK;
  CHECK(rc == PXL_EIO && err.code == PXL_EIO && strstr(err.msg, missing), "a missing directory: %d %s", rc,
        err.msg);
  snprintf(missing, sizeof missing, "%s/no", dir);
  CHECK(!exists(missing), "a missing directory: something made");
  /* a path that is a directory: the rename fails, the temporary file goes */
  mkdir(path_of("adir"), 0700);
  rc = A ? sparse_write_mtx(A, path_of("adir"), &err) : PXL_OK;
  CHECK(rc == PXL_EIO, "writing over a directory: %d %s", rc, err.msg);
  CHECK(!temporaries_left(), "writing over a directory: a temporary file left");
  rmdir(path_of("adir"));
  sparse_free(A);
  printf("out of memory: every allocation failing in turn, reading and writing; failed writes: %s\n",
         failed == before ? "ok" : "FAIL");
}

/* ---- the oracle's helper ---- */

static int round_trip_files(const char *in, const char *out, const char *type) {
  pxl_type t = !strcmp(type, "f32") ? PXL_F32 : PXL_F64;
  if (strcmp(type, "f32") && strcmp(type, "f64")) {
    fprintf(stderr, "mtx_test: type %s: f32 or f64\n", type);
    return 2;
  }
  SpMat *A = NULL;
  Err err = {0};
  if (sparse_read_mtx(in, t, &A, &err) != PXL_OK || sparse_write_mtx(A, out, &err) != PXL_OK) {
    fprintf(stderr, "mtx_test: %s\n", err.msg);
    sparse_free(A);
    return 1;
  }
  sparse_free(A);
  return 0;
}

/* Removes dir and the files in it. */
static void remove_dir(void) {
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(path_of(e->d_name));
  if (d) closedir(d);
  rmdir(dir);
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--roundtrip")) return round_trip_files(argv[2], argv[3], argv[4]);
  if (argc != 1) {
    fprintf(stderr, "usage: mtx_test [--roundtrip IN OUT f64|f32]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/pxl_mtx_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    printf("FAIL: cannot make a temporary directory %s\n", dir);
    return 1;
  }
  test_headers();
  test_symmetry();
  test_duplicates();
  test_array();
  test_comments();
  test_numbers();
  test_round_trip();
  test_hostile();
  test_out_of_memory();
  remove_dir();
  printf("%s\n", failed ? "FAIL" : "ok");
  return failed != 0;
}
