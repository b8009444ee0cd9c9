/*
 * api_sparse_test.c - the public sparse API (include/pxl/pxl.h, "sparse matrices and
 * vectors") at its edges: every missing argument, mismatched size, overlapping vector,
 * unknown format, bad type and refused device is an error with a message, never a
 * crash; a failed call leaves *out NULL; results of the calls that succeed are checked
 * against values computed here by hand (a 3 x 4 matrix whose product is known).
 *
 * Prints one line per group and "ok" or the failures; returns nonzero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pxl/pxl.h"

static int failures;

#define CHECK(cond, ...)                                \
  do {                                                  \
    if (!(cond)) {                                      \
      failures++;                                       \
      printf("  FAIL %s:%d: ", __FILE__, __LINE__);     \
      printf(__VA_ARGS__);                              \
      printf("\n");                                     \
    }                                                   \
  } while (0)

/* The call failed with status st and left a message. */
#define REFUSED(ctx, call, st) \
  CHECK((call) == (st) && *pxl_errmsg(ctx), "%s: want %s, message '%s'", #call, #st, pxl_errmsg(ctx))

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  pxl_context *ctx = pxl_context_new();
  if (!ctx) return 1;
  pxl_set_cache_dir(ctx, dir);
  /* [[1 0 2 0] [0 0 0 0] [0 3 0 4]] with the 2 given as 1.5 + 0.5 (a duplicate) */
  int64_t i[] = {0, 0, 2, 2, 0}, j[] = {0, 2, 1, 3, 2};
  double v[] = {1, 1.5, 3, 4, 0.5}, x[4] = {1, 10, 100, 1000}, y[3], want[3] = {201, 0, 4030};
  pxl_sparse *A = NULL, *B = (pxl_sparse *)&failures;

  printf("building and products ...");
  int before = failures;
  CHECK(pxl_sparse_from_triplets(ctx, 3, 4, PXL_F64, 5, i, j, v, &A) == PXL_OK, "triplets: %s", pxl_errmsg(ctx));
  CHECK(pxl_sparse_rows(A) == 3 && pxl_sparse_cols(A) == 4 && pxl_sparse_nnz(A) == 4 && pxl_sparse_type(A) == PXL_F64 &&
            !strcmp(pxl_sparse_format(A), "csr"),
        "shape, entries, type or format");
  static const char *const formats[] = {"csr", "coo", "ell", "sell", "dia", "bcsr", "auto"};
  for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
    B = NULL;
    CHECK(pxl_sparse_convert(ctx, A, formats[f], &B) == PXL_OK, "convert to %s: %s", formats[f], pxl_errmsg(ctx));
    memset(y, 0xff, sizeof y);
    CHECK(pxl_sparse_spmv(ctx, B, x, 4, y, 3) == PXL_OK && !memcmp(y, want, sizeof y), "%s product", formats[f]);
    pxl_sparse_free(B);
  }
  const char *chosen = NULL;
  char report[256];
  CHECK(pxl_sparse_choose(ctx, A, &chosen, report, sizeof report) == PXL_OK && chosen, "choose: %s", pxl_errmsg(ctx));
  CHECK(pxl_sparse_choose(ctx, A, &chosen, report, sizeof report) == PXL_OK && strstr(report, "(cached)"),
        "the second choice is not cached: %s", report);
  printf(" %s\n", failures == before ? "ok" : "FAILED");

  printf("refusals ...");
  before = failures;
  B = (pxl_sparse *)&failures;
  REFUSED(ctx, pxl_sparse_from_triplets(ctx, 3, 4, PXL_U8, 5, i, j, v, &B), PXL_EARG);
  CHECK(B == NULL, "*out set on failure");
  REFUSED(ctx, pxl_sparse_from_triplets(ctx, 3, 4, PXL_F64, 5, NULL, j, v, &B), PXL_EARG);
  REFUSED(ctx, pxl_sparse_from_triplets(ctx, 2, 4, PXL_F64, 5, i, j, v, &B), PXL_EARG);
  REFUSED(ctx, pxl_sparse_from_triplets(ctx, 3, 4, PXL_F64, 5, i, j, v, NULL), PXL_EARG);
  REFUSED(ctx, pxl_sparse_convert(ctx, A, "diagonal", &B), PXL_EARG);
  REFUSED(ctx, pxl_sparse_convert(ctx, NULL, "csr", &B), PXL_EARG);
  REFUSED(ctx, pxl_sparse_convert(ctx, A, NULL, &B), PXL_EARG);
  REFUSED(ctx, pxl_sparse_spmv(ctx, A, x, 3, y, 3), PXL_EARG);
  REFUSED(ctx, pxl_sparse_spmv(ctx, A, x, 4, y, 4), PXL_EARG);
  REFUSED(ctx, pxl_sparse_spmv(ctx, A, NULL, 4, y, 3), PXL_EARG);
  REFUSED(ctx, pxl_sparse_spmv(ctx, NULL, x, 4, y, 3), PXL_EARG);
  double both[8] = {1, 10, 100, 1000};
  REFUSED(ctx, pxl_sparse_spmv(ctx, A, both, 4, both + 2, 3), PXL_EARG); /* y overlaps x */
  REFUSED(ctx, pxl_sparse_load(ctx, NULL, PXL_F64, &B), PXL_EARG);
  REFUSED(ctx, pxl_sparse_load(ctx, "/nonexistent/a.mtx", PXL_F64, &B), PXL_EIO);
  REFUSED(ctx, pxl_sparse_load(ctx, "/nonexistent/a.mtx", PXL_I32, &B), PXL_EARG);
  REFUSED(ctx, pxl_sparse_save(ctx, NULL, "x.mtx"), PXL_EARG);
  REFUSED(ctx, pxl_sparse_save(ctx, A, "/nonexistent/dir/a.mtx"), PXL_EIO);
  double vals[2], vecs[8];
  REFUSED(ctx, pxl_sparse_eigsh(ctx, A, 1, 1, 0, vals, vecs), PXL_EARG); /* not square */
  REFUSED(ctx, pxl_sparse_eigsh(ctx, A, 1, 1, 0, NULL, vecs), PXL_EARG);
  void *data = (void *)&failures;
  int64_t n = 7;
  REFUSED(ctx, pxl_vector_load(ctx, "/nonexistent/x.npy", PXL_F64, &data, &n), PXL_EIO);
  CHECK(data == NULL && n == 0, "vector_load's outputs on failure");
  REFUSED(ctx, pxl_vector_load(ctx, "x.npy", PXL_U16, &data, &n), PXL_EARG);
  REFUSED(ctx, pxl_vector_save(ctx, "x.npy", x, 4, PXL_U8), PXL_EARG);
  REFUSED(ctx, pxl_array_save(ctx, "x.npy", x, 2, 0, PXL_F64), PXL_EARG);
  /* a GPU has no product: refused where the device exists; absent devices fail earlier */
  if (pxl_set_device(ctx, "opencl") == PXL_OK) REFUSED(ctx, pxl_sparse_spmv(ctx, A, x, 4, y, 3), PXL_EDEVICE);
  printf(" %s\n", failures == before ? "ok" : "FAILED");

  printf("vectors round trip ...");
  before = failures;
  char path[4096];
  snprintf(path, sizeof path, "%s/api_sparse_x.npy", dir);
  float xf[3] = {0.1f, -2.5f, 1e-30f};
  CHECK(pxl_vector_save(ctx, path, xf, 3, PXL_F32) == PXL_OK, "save: %s", pxl_errmsg(ctx));
  CHECK(pxl_vector_load(ctx, path, PXL_F64, &data, &n) == PXL_OK && n == 3 && ((double *)data)[0] == (double)0.1f &&
            ((double *)data)[1] == -2.5 && ((double *)data)[2] == (double)1e-30f,
        "f32 read back as f64");
  pxl_vector_free(data);
  unlink(path);
  printf(" %s\n", failures == before ? "ok" : "FAILED");

  pxl_sparse_free(A);
  pxl_sparse_free(NULL);
  pxl_context_free(ctx);
  if (failures) printf("%d failures\n", failures);
  return failures != 0;
}
