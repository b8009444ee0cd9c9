/*
 * sparse.c - the public API of sparse matrices and vectors (pxl.h), over src/sparse.
 *
 * Products run on the host: "ref" runs the definition, "cpu" and "auto" the formats' own
 * loops on the context's threads; a GPU device is refused until one has a product.
 * The choice of "auto" is cached per structure and device: an entry
 * sparse-KEY.choice in the kernel cache (runtime/cache.h checks it like any entry),
 * KEY a hash of the matrix's shape, value type, row pointers and columns, the threads
 * and the cores, holding one line "format=NAME".
 */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "api/handles.h"
#include "image/image.h"
#include "io/formats.h"
#include "io/imageio.h"
#include "ops/ops.h"
#include "runtime/cache.h"
#include "sparse/sparse.h"
#include "util/alloc.h"
#include "util/file.h"
#include "util/hash.h"

struct pxl_sparse {
  SpMat *m;
};

#define VECTOR_FILE_LIMIT (IO_FILE_LIMIT * 4) /* 2^29 doubles */
/* A format may store at most this many times the matrix's entries (padding included):
 * past it (a dense row in ELL, scattered diagonals in DIA) it would be slower than CSR
 * anyway, and asking for terabytes would only fail later. */
#define SPARSE_MAX_FILL 16

static int wrap(pxl_context *ctx, SpMat *m, pxl_sparse **out) {
  *out = PXL_CALLOC(1, sizeof **out);
  if (!*out) {
    sparse_free(m);
    return api_fail(ctx, PXL_ENOMEM, "out of memory for a sparse matrix");
  }
  (*out)->m = m;
  return PXL_OK;
}

static bool value_type(pxl_type t) { return t == PXL_F32 || t == PXL_F64; }

/* Where products run for ctx: the reference (ref) or the CPU; a GPU is refused. */
static int host_device(pxl_context *ctx, bool *reference) {
  const char *name = ctx->kind >= 0 ? backend_kinds[ctx->kind].name : "auto";
  *reference = !strcmp(name, "ref");
  if (!*reference && strcmp(name, "cpu") && strcmp(name, "auto"))
    return api_fail(ctx, PXL_EDEVICE, "sparse products run on cpu and ref; %s has none yet", name);
  return PXL_OK;
}

int pxl_sparse_load(pxl_context *ctx, const char *path, pxl_type type, pxl_sparse **out) {
  api_clear(ctx);
  if (!out) return api_fail(ctx, PXL_EARG, "no place for the matrix");
  *out = NULL;
  if (!path) return api_fail(ctx, PXL_EARG, "no file name");
  if (!value_type(type)) return api_fail(ctx, PXL_EARG, "sparse matrices hold f32 or f64 values");
  Err e = {0};
  SpMat *m;
  if (sparse_read_mtx(path, type, &m, &e)) return api_fail_err(ctx, &e);
  return wrap(ctx, m, out);
}

int pxl_sparse_save(pxl_context *ctx, const pxl_sparse *A, const char *path) {
  api_clear(ctx);
  if (!A || !path) return api_fail(ctx, PXL_EARG, "no matrix or no file name");
  Err e = {0};
  return sparse_write_mtx(A->m, path, &e) ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_sparse_from_triplets(pxl_context *ctx, int64_t rows, int64_t cols, pxl_type type, int64_t n,
                             const int64_t *i, const int64_t *j, const double *v, pxl_sparse **out) {
  api_clear(ctx);
  if (!out) return api_fail(ctx, PXL_EARG, "no place for the matrix");
  *out = NULL;
  if (n > 0 && (!i || !j || !v)) return api_fail(ctx, PXL_EARG, "%lld entries but no arrays", (long long)n);
  Err e = {0};
  SpMat *m;
  if (sparse_from_triplets(rows, cols, type, n, i, j, v, &m, &e)) return api_fail_err(ctx, &e);
  return wrap(ctx, m, out);
}

/* The cache key of A's structure on this device (threads and cores). */
static uint64_t structure_key(pxl_context *ctx, const SpMat *A) {
  int64_t head[6] = {A->rows, A->cols, A->nnz, A->type, ctx->nthreads, omp_get_num_procs()};
  uint64_t h = hash_str(HASH_INIT, CACHE_FORMAT " sparse-choice-1");
  h = hash_bytes(h, head, sizeof head);
  h = hash_bytes(h, A->ptr, (size_t)(A->rows + 1) * sizeof *A->ptr);
  return hash_bytes(h, A->col, (size_t)A->nnz * sizeof *A->col);
}

/* The cached choice for key, or -1. */
static int cached_choice(Cache *c, const char *name, CacheId id) {
  char *data;
  size_t n;
  if (!c || !cache_get(c, name, id, &data, &n)) return -1;
  char fmt[16] = "";
  int f = -1;
  if (n < 40 && sscanf(data, "format=%15[a-z]\n", fmt) == 1) f = sparse_format_parse(fmt);
  PXL_FREE(data);
  if (f < 0) cache_drop(c, name, "not a sparse format choice");
  return f;
}

/* The format "auto" takes for CSR matrix A: cached, or chosen now (and cached), with
 * what was measured in report. */
static int choose(pxl_context *ctx, const SpMat *A, int *format, char *report, size_t rn) {
  if (report && rn) report[0] = 0;
  Err e = {0};
  Cache *c = NULL;
  if (cache_open(ctx->cache_dir, &ctx->warn, &c, &e)) c = NULL; /* only slower: measure */
  uint64_t key = structure_key(ctx, A);
  char name[64];
  snprintf(name, sizeof name, "sparse-%016llx.choice", (unsigned long long)key);
  CacheId id = {key, key};
  *format = cached_choice(c, name, id);
  if (*format >= 0) {
    if (report && rn) snprintf(report, rn, "%s (cached)", sparse_format_name(*format));
    cache_free(c);
    return PXL_OK;
  }
  SpChoice ch;
  int rc = sparse_choose(A, ctx->nthreads, &ch, &e);
  if (rc) {
    cache_free(c);
    return api_fail_err(ctx, &e);
  }
  *format = ch.format;
  if (report && rn) {
    size_t len = (size_t)snprintf(report, rn, "%s:", sparse_format_name(ch.format));
    const char *sep = " ";
    for (int f = 0; f < SP_NFORMATS && len < rn; f++)
      if (ch.ms[f] >= 0) {
        len += (size_t)snprintf(report + len, rn - len, "%s%s %.3f ms", sep, sparse_format_name(f), ch.ms[f]);
        sep = ", ";
      }
  }
  char line[32];
  int n = snprintf(line, sizeof line, "format=%s\n", sparse_format_name(ch.format));
  if (c) cache_put(c, name, id, line, (size_t)n);
  cache_free(c);
  return PXL_OK;
}

/* A's CSR form: A itself, or a fresh copy in *tmp. */
static int csr_of(pxl_context *ctx, const SpMat *A, const SpMat **csr, SpMat **tmp) {
  *tmp = NULL;
  *csr = A;
  if (A->format == SP_CSR) return PXL_OK;
  Err e = {0};
  if (sparse_convert(A, SP_CSR, NULL, tmp, &e)) return api_fail_err(ctx, &e);
  *csr = *tmp;
  return PXL_OK;
}

int pxl_sparse_choose(pxl_context *ctx, const pxl_sparse *A, const char **format, char *report, size_t n) {
  api_clear(ctx);
  if (!A) return api_fail(ctx, PXL_EARG, "no matrix");
  bool ref;
  int rc = host_device(ctx, &ref);
  const SpMat *csr;
  SpMat *tmp = NULL;
  int f = SP_CSR;
  if (!rc) rc = csr_of(ctx, A->m, &csr, &tmp);
  if (!rc) rc = ref ? PXL_OK : choose(ctx, csr, &f, report, n);
  if (!rc && ref && report && n) snprintf(report, n, "csr (ref runs the definition, on CSR)");
  sparse_free(tmp);
  if (!rc && format) *format = sparse_format_name(f);
  return rc;
}

int pxl_sparse_convert(pxl_context *ctx, const pxl_sparse *A, const char *format, pxl_sparse **out) {
  api_clear(ctx);
  if (!out) return api_fail(ctx, PXL_EARG, "no place for the matrix");
  *out = NULL;
  if (!A || !format) return api_fail(ctx, PXL_EARG, "no matrix or no format");
  bool automatic = !strcmp(format, "auto");
  int f = automatic ? SP_CSR : sparse_format_parse(format);
  if (f < 0)
    return api_fail(ctx, PXL_EARG, "unknown sparse format '%s' (csr, coo, ell, sell, dia, bcsr or auto)", format);
  const SpMat *csr;
  SpMat *tmp = NULL, *m = NULL;
  int rc = PXL_OK;
  bool ref = false;
  if (automatic) rc = host_device(ctx, &ref);
  if (!rc && (f != SP_CSR || automatic)) rc = csr_of(ctx, A->m, &csr, &tmp);
  else csr = A->m;
  if (!rc && automatic && !ref) rc = choose(ctx, csr, &f, NULL, 0);
  Err e = {0};
  SpOpts lim = {.max_fill = SPARSE_MAX_FILL};
  if (!rc && sparse_convert(csr, (SpFormat)f, &lim, &m, &e)) rc = api_fail_err(ctx, &e);
  sparse_free(tmp);
  return rc ? rc : wrap(ctx, m, out);
}

int pxl_sparse_stored_as(pxl_context *ctx, const pxl_sparse *A, const char *format, int64_t *stored) {
  api_clear(ctx);
  if (!A || !format || !stored) return api_fail(ctx, PXL_EARG, "no matrix, format or place for the count");
  int f = sparse_format_parse(format);
  if (f < 0) return api_fail(ctx, PXL_EARG, "unknown sparse format '%s' (csr, coo, ell, sell, dia or bcsr)", format);
  const SpMat *csr;
  SpMat *tmp = NULL;
  int rc = csr_of(ctx, A->m, &csr, &tmp);
  if (!rc) {
    *stored = sparse_stored_for(csr, (SpFormat)f, NULL);
    if (*stored < 0)
      rc = api_fail(ctx, PXL_ENOMEM, "out of memory counting the entries of %s", format);
    else if ((double)*stored > SPARSE_MAX_FILL * (double)(csr->nnz > 0 ? csr->nnz : 1))
      rc = api_fail(ctx, PXL_ETOOBIG, "%s would store %lld entries for %lld nonzeros (more than %d times)", format,
                    (long long)*stored, (long long)csr->nnz, SPARSE_MAX_FILL);
  }
  sparse_free(tmp);
  return rc;
}

int pxl_sparse_spmv(pxl_context *ctx, const pxl_sparse *A, const void *x, int64_t nx, void *y, int64_t ny) {
  api_clear(ctx);
  if (!A || (!x && nx) || (!y && ny)) return api_fail(ctx, PXL_EARG, "no matrix or no vector");
  const SpMat *M = A->m;
  if (nx != M->cols || ny != M->rows)
    return api_fail(ctx, PXL_EARG, "a %lld x %lld matrix multiplies %lld elements into %lld, not %lld into %lld",
                    (long long)M->rows, (long long)M->cols, (long long)M->cols, (long long)M->rows, (long long)nx,
                    (long long)ny);
  size_t es = M->type == PXL_F32 ? 4 : 8;
  const char *xb = x, *yb = y;
  if (nx && ny && xb < yb + (size_t)ny * es && yb < xb + (size_t)nx * es)
    return api_fail(ctx, PXL_EARG, "y overlaps x: the product needs separate vectors");
  bool ref;
  int rc = host_device(ctx, &ref);
  const SpMat *use = M;
  SpMat *tmp = NULL;
  if (!rc && ref) rc = csr_of(ctx, M, &use, &tmp);
  Err e = {0};
  if (!rc && sparse_spmv(use, x, y, ctx->nthreads, ref, &e)) rc = api_fail_err(ctx, &e);
  sparse_free(tmp);
  return rc;
}

void pxl_sparse_free(pxl_sparse *A) {
  if (!A) return;
  sparse_free(A->m);
  PXL_FREE(A);
}

const char *pxl_sparse_format(const pxl_sparse *A) { return A ? sparse_format_name(A->m->format) : NULL; }
pxl_type pxl_sparse_type(const pxl_sparse *A) { return A ? A->m->type : PXL_F64; }
int64_t pxl_sparse_rows(const pxl_sparse *A) { return A ? A->m->rows : -1; }
int64_t pxl_sparse_cols(const pxl_sparse *A) { return A ? A->m->cols : -1; }
int64_t pxl_sparse_nnz(const pxl_sparse *A) { return A ? A->m->nnz : -1; }
int64_t pxl_sparse_stored(const pxl_sparse *A) { return A ? A->m->stored : -1; }

int pxl_vector_load(pxl_context *ctx, const char *path, pxl_type type, void **data, int64_t *n) {
  api_clear(ctx);
  if (!data || !n) return api_fail(ctx, PXL_EARG, "no place for the vector");
  *data = NULL;
  *n = 0;
  if (!path) return api_fail(ctx, PXL_EARG, "no file name");
  if (!value_type(type)) return api_fail(ctx, PXL_EARG, "vectors are f32 or f64");
  Err e = {0};
  char *buf;
  size_t len;
  if (file_read_all(path, VECTOR_FILE_LIMIT, &buf, &len, &e)) return api_fail_err(ctx, &e);
  int rc = io_npy_load_vector((const uint8_t *)buf, len, path, type, data, n, &e);
  PXL_FREE(buf);
  return rc ? api_fail_err(ctx, &e) : PXL_OK;
}

/* n elements, or n rows of cols (> 0) */
static int save_array(pxl_context *ctx, const char *path, const void *data, int64_t n, int64_t cols, pxl_type type) {
  api_clear(ctx);
  if (!path || (!data && n) || n < 0 || cols < 0) return api_fail(ctx, PXL_EARG, "no file name or no vector");
  if (!value_type(type)) return api_fail(ctx, PXL_EARG, "vectors are f32 or f64");
  Err e = {0};
  AtomicFile af;
  if (file_atomic_open(&af, path, FILE_SHARED, &e)) return api_fail_err(ctx, &e);
  if (io_npy_save_vector(af.f, data, n * (cols > 0 ? cols : 1), cols, type, path, &e)) {
    file_atomic_abort(&af);
    return api_fail_err(ctx, &e);
  }
  return file_atomic_commit(&af, &e) ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_vector_save(pxl_context *ctx, const char *path, const void *data, int64_t n, pxl_type type) {
  return save_array(ctx, path, data, n, 0, type);
}

int pxl_array_save(pxl_context *ctx, const char *path, const void *data, int64_t rows, int64_t cols, pxl_type type) {
  if (cols < 1) {
    api_clear(ctx);
    return api_fail(ctx, PXL_EARG, "an array of %lld columns", (long long)cols);
  }
  return save_array(ctx, path, data, rows, cols, type);
}

void pxl_vector_free(void *data) { PXL_FREE(data); }

/* ---- normalized cuts ---- */

/* img's first channel as floats, integer types scaled to [0, 1] by their maximum. */
static float *image_floats(pxl_context *ctx, const pxl_image *img, const char *what) {
  if (!img || img->device) {
    api_fail(ctx, PXL_EARG, "the %s must be a host image", what);
    return NULL;
  }
  float *f = PXL_MALLOC((size_t)img->width * (size_t)img->height * sizeof *f);
  if (!f) {
    api_fail(ctx, PXL_ENOMEM, "out of memory for the %s", what);
    return NULL;
  }
  /* integer types scaled by their maximum; ops_value reads element x * channels of a row:
   * the first channel's */
  double top = img->type == PXL_U8    ? 255.0
               : img->type == PXL_U16 ? 65535.0
               : img->type == PXL_I16 ? 32767.0
               : img->type == PXL_I32 ? 2147483647.0
               : img->type == PXL_U32 ? 4294967295.0
                                      : 1.0;
  for (int y = 0; y < img->height; y++)
    for (int x = 0; x < img->width; x++)
      f[(size_t)y * img->width + x] = (float)(ops_value(img, x * img->channels, y) / top);
  return f;
}

int pxl_sparse_affinity(pxl_context *ctx, const pxl_image *img, const pxl_image *edges, int radius, double sigma_i,
                        double sigma_x, double sigma_e, pxl_type type, pxl_sparse **out) {
  api_clear(ctx);
  if (!out) return api_fail(ctx, PXL_EARG, "no place for the matrix");
  *out = NULL;
  if (!img) return api_fail(ctx, PXL_EARG, "no image");
  if (edges && (edges->width != img->width || edges->height != img->height))
    return api_fail(ctx, PXL_EARG, "the edge image is %dx%d, the image %dx%d", edges->width, edges->height,
                    img->width, img->height);
  float *f = image_floats(ctx, img, "image"), *e = f && edges ? image_floats(ctx, edges, "edge image") : NULL;
  if (!f || (edges && !e)) {
    PXL_FREE(f);
    return ctx->err.code;
  }
  Err er = {0};
  SpMat *m;
  int rc = sparse_affinity(f, e, img->width, img->height, radius, sigma_i, sigma_x, sigma_e, type, &m, &er);
  PXL_FREE(f), PXL_FREE(e);
  return rc ? api_fail_err(ctx, &er) : wrap(ctx, m, out);
}

int pxl_sparse_eigsh(pxl_context *ctx, const pxl_sparse *A, int k, int largest, double tol, double *vals,
                     double *vecs) {
  api_clear(ctx);
  if (!A || !vals || !vecs) return api_fail(ctx, PXL_EARG, "no matrix or no place for the eigenpairs");
  bool ref;
  int rc = host_device(ctx, &ref);
  if (rc) return rc;
  SpEigOpts o = {.tol = tol, .nthreads = ref ? 1 : ctx->nthreads};
  Err e = {0};
  return sparse_eigsh(A->m, k, largest != 0, &o, vals, vecs, NULL, &e) ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_sparse_ncuts(pxl_context *ctx, const pxl_sparse *W, int regions, pxl_image *labels, double *vals) {
  api_clear(ctx);
  if (!W || !labels || !vals) return api_fail(ctx, PXL_EARG, "no affinity, no label image or no place for values");
  if (labels->device || labels->channels != 1 || (labels->type != PXL_U8 && labels->type != PXL_U16) ||
      (int64_t)labels->width * labels->height != W->m->rows)
    return api_fail(ctx, PXL_EARG, "the labels need a host u8 or u16 image of one channel and %lld pixels",
                    (long long)W->m->rows);
  bool ref;
  int rc = host_device(ctx, &ref);
  if (rc) return rc;
  int32_t *lab = PXL_MALLOC((size_t)W->m->rows * sizeof *lab + 1);
  if (!lab) return api_fail(ctx, PXL_ENOMEM, "out of memory for labels");
  SpEigOpts o = {.nthreads = ref ? 1 : ctx->nthreads};
  Err e = {0};
  const SpMat *use = W->m;
  SpMat *tmp = NULL;
  if (use->format != SP_CSR && use->format != SP_DIA) rc = csr_of(ctx, W->m, &use, &tmp);
  if (!rc && sparse_ncuts(use, regions, &o, lab, vals, &e)) rc = api_fail_err(ctx, &e);
  for (int y = 0; !rc && y < labels->height; y++)
    for (int x = 0; x < labels->width; x++) {
      int32_t l = lab[(int64_t)y * labels->width + x];
      if (labels->type == PXL_U8) ((uint8_t *)image_row(labels, y))[x] = (uint8_t)l;
      else ((uint16_t *)image_row(labels, y))[x] = (uint16_t)l;
    }
  sparse_free(tmp);
  PXL_FREE(lab);
  return rc;
}
