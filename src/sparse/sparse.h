/*
 * sparse.h - sparse matrices: the second kind of data pxl holds beside images.
 *
 * A matrix has one storage format at a time (SpFormat) and values of one type (PXL_F32
 * or PXL_F64). Every format is made from CSR (sparse_convert) and gives it back, entry
 * for entry; the formats differ only in layout, so that SpMV (y = A x) can be fast on a
 * given machine for a given structure:
 *
 *   CSR   rowptr[rows + 1] (int64), col[nnz] (int32), val[nnz]; each row's columns
 *         strictly increasing (duplicates are summed when a matrix is built)
 *   COO   row[nnz], col[nnz] (int32), val[nnz], in row-major order
 *   ELL   width k = the longest row; col[k * rows], val[k * rows], entry j of row i at
 *         j * rows + i (column-major, so that neighbouring rows are neighbours in memory);
 *         a row shorter than k is padded with its last column (0 for an empty row) and
 *         the value 0
 *   SELL  SELL-C-sigma: rows sorted by length, longest first, within windows of sigma
 *         rows (perm[r]: the row at sorted position r); slices of C sorted rows, each an
 *         ELL block as wide as its longest row: slice s starts at slice_ptr[s] (int64,
 *         nslices + 1 of them), width slice_w[s], entry j of its row t at
 *         slice_ptr[s] + j * C + t; padding as ELL's; the last slice padded with empty
 *         rows
 *   DIA   ndiag diagonals, offsets off[d] = column - row, strictly increasing; val[d *
 *         rows + i] = A(i, i + off[d]), 0 where the diagonal leaves the matrix or holds
 *         no entry
 *   BCSR  blocks of br x bc (sparse_convert's opts): block rows of br rows, browptr
 *         [nbrows + 1] (int64), bcol[nblocks] (int32, the block's first column / bc,
 *         increasing), val[nblocks * br * bc], each block row-major; entries absent
 *         from a block, and the block's part beyond the matrix, are 0
 *
 * The product (one definition, every format and backend): y[i] is the sum over row i's
 * stored entries, in increasing column order, of val * x[column], starting from +0.0,
 * each product rounded to the value type and then added (no fused multiply-add), in the
 * value type. The padded zeros of ELL, SELL, DIA and BCSR add 0 * x[j]: +-0, which
 * changes nothing where x[j] is finite, so every format gives CSR's bits for a finite x
 * (an infinite or NaN x[j] next to padding gives NaN where CSR may not; sparse_spmv's
 * comment). This is SciPy's CSR product (csr_matvec) for float32 and float64 on x86-64.
 *
 * Sizes: rows and columns up to 2^31 - 1; stored entries (padding included) up to 2^40.
 * Functions return PXL_OK or a PXL_* status with err set; they never print or exit.
 */
#ifndef PXL_SPARSE_H
#define PXL_SPARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "pxl/pxl.h"
#include "util/err.h"

typedef enum { SP_CSR, SP_COO, SP_ELL, SP_SELL, SP_DIA, SP_BCSR, SP_NFORMATS } SpFormat;

#define SP_MAX_DIM INT32_MAX
#define SP_MAX_STORED ((int64_t)1 << 40)

typedef struct {
  SpFormat format;
  pxl_type type; /* PXL_F32 or PXL_F64 */
  int64_t rows, cols;
  int64_t nnz;    /* entries of the CSR form (structural entries, padding not counted) */
  int64_t stored; /* entries the format stores, padding counted (val's length) */
  void *val;      /* float or double, `stored` of them */
  int64_t *ptr;   /* CSR rowptr, SELL slice_ptr, BCSR browptr */
  int32_t *col;   /* CSR, COO, ELL, SELL columns; BCSR block columns */
  int32_t *row;   /* COO rows */
  int32_t *perm;  /* SELL: the row at each sorted position (rows of them) */
  int32_t *width; /* SELL: each slice's width */
  int32_t *len;   /* ELL, SELL: each row's entries (padding not counted), for the way back
                     to CSR; the product never reads it */
  int64_t *off;   /* DIA offsets */
  int64_t k;      /* ELL width; SELL C; DIA ndiag; BCSR nblocks */
  int64_t nparts; /* SELL slices; BCSR block rows */
  int sigma;      /* SELL sorting window */
  int br, bc;     /* BCSR block shape */
} SpMat;

/* The options of a conversion; zero fields take the defaults. */
typedef struct {
  int sell_c;       /* SELL slice height (default 32: a warp) */
  int sell_sigma;   /* SELL sorting window (default 1024 rows); 1: no sorting */
  int br, bc;       /* BCSR block (default 4 x 4) */
  double max_fill;  /* refuse (PXL_ETOOBIG, saying so) a padded format storing more than
                       max_fill * nnz entries (default 0: no limit beyond SP_MAX_STORED) */
} SpOpts;

/* SELL's slice height for A with slices of c rows asked: c, or A's rows where it has
 * fewer (a slice of 32 for a row vector would store 32 times its entries). */
int sparse_sell_height(const SpMat *A, int c);

/* SplitMix64: the next draw from state *s (Lanczos' start vector, the k-means seeding of
 * normalized cuts: runs repeat exactly for a seed). */
static inline uint64_t sparse_splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The format's name ("csr", "coo", "ell", "sell", "dia", "bcsr") and back (-1: none). */
const char *sparse_format_name(SpFormat f);
int sparse_format_parse(const char *name);

/* A CSR matrix from entries (i[e], j[e], v[e]) for e < n, in any order, duplicates summed
 * in the order given (the first plus the second, plus the third, ...), entries whose sum
 * is zero kept (as SciPy keeps explicit zeros); v as double, rounded to type once per
 * entry, then summed in type. Indices must lie in [0, rows) and [0, cols) (PXL_EARG
 * naming the entry). Free *out with sparse_free. */
int sparse_from_triplets(int64_t rows, int64_t cols, pxl_type type, int64_t n, const int64_t *i,
                         const int64_t *j, const double *v, SpMat **out, Err *err);
/* A fresh matrix holding A in format f (a copy when A is already in f). A must be CSR
 * unless f is CSR (any format converts back to CSR: entry for entry from CSR, COO, ELL
 * and SELL; from DIA and BCSR, which cannot tell a stored zero from padding, every
 * nonzero, stored zeros dropped). PXL_ETOOBIG where opts refuse the
 * fill or a size limit is passed; PXL_EARG for a bad option. */
int sparse_convert(const SpMat *A, SpFormat f, const SpOpts *opts, SpMat **out, Err *err);
void sparse_free(SpMat *A);

/* How many entries format f would store for CSR matrix A under opts (for the choice of a
 * format without building it). */
int64_t sparse_stored_for(const SpMat *A, SpFormat f, const SpOpts *opts);
/* The bytes SpMV moves at least (the format's arrays once, x once, y once). */
int64_t sparse_bytes(const SpMat *A);

/* y = A x: y has A->rows elements, x A->cols, both of A's value type (float or double);
 * y must not overlap x. reference: the CSR definition above on one thread (A in CSR);
 * else the format's own loop on nthreads threads (0: all cores). The result is the
 * definition's bits wherever x is finite (tests/sparse). */
int sparse_spmv(const SpMat *A, const void *x, void *y, int nthreads, bool reference, Err *err);

/* The format a product of CSR matrix A on nthreads threads (0: all cores) is fastest in
 * here (choose.c: formats predicted to move few bytes, built and timed): c->format with
 * c->opts, and each format's best time in c->ms (-1: not tried). */
typedef struct {
  SpFormat format;
  SpOpts opts;
  double ms[SP_NFORMATS];
  int measured;
} SpChoice;
int sparse_choose(const SpMat *A, int nthreads, SpChoice *c, Err *err);

/* The normalized-cuts affinity of an h x w image (affinity.c gives the weights): a DIA
 * matrix of w * h rows, one diagonal per offset of the disk of radius r (0 to 64; r = 5:
 * 81). img: w * h values, row-major; edge: NULL, or an edge-strength image of the same
 * size for the intervening-contour cue with sigma_e. */
int sparse_affinity(const float *img, const float *edge, int w, int h, int r, double sigma_i, double sigma_x,
                    double sigma_e, pxl_type type, SpMat **out, Err *err);

/* Eigenpairs of a symmetric matrix (lanczos.c): thick-restart Lanczos with full
 * reorthogonalisation. */
typedef struct {
  int ncv;                /* basis vectors (default max(3k + 10, 40), at most the rows) */
  int maxit;              /* restarts (default 1000) */
  double tol;             /* a pair converges when ||A x - theta x|| <= tol * |theta| (default 1e-10;
                             f32 matrices 1e-5: their products round) */
  int nthreads;           /* 0: all cores */
  uint64_t seed;          /* the start vector's draws (0: 1) */
  bool allow_unconverged; /* return what there is instead of failing */
} SpEigOpts;
typedef struct {
  int restarts, converged;
  int64_t products;
} SpEigInfo;
/* The k largest (or smallest) eigenvalues of symmetric A in vals (largest first, or
 * smallest first) and their unit eigenvectors as the columns of vecs (rows x k,
 * column-major), each signed so that its component of largest magnitude (the first
 * such) is positive. Fails (PXL_ERROR, saying how many converged) when fewer than k
 * converge within maxit restarts, unless allow_unconverged. A's symmetry is not
 * checked. */
int sparse_eigsh(const SpMat *A, int k, bool largest, const SpEigOpts *opts, double *vals, double *vecs,
                 SpEigInfo *info, Err *err);

/* Normalized cuts (ncuts.c). sparse_normalize: N = D^(-1/2) W D^(-1/2) of square W (CSR
 * or DIA; N in W's format), D's diagonal (W's row sums, in double) into d (rows of
 * them); PXL_EARG when a row's sum is not positive. sparse_ncuts: k regions (2 to 64) of
 * W's pixels into labels (0 to k - 1, rows of them) from the k largest eigenpairs of N
 * (opts as sparse_eigsh's), and the generalized problem's k smallest eigenvalues
 * (1 - mu) into vals. */
int sparse_normalize(const SpMat *W, SpMat **out, double *d, Err *err);
int sparse_ncuts(const SpMat *W, int k, const SpEigOpts *opts, int32_t *labels, double *vals, Err *err);

/* Matrix Market: reads a `coordinate` (real, integer or pattern; general, symmetric or
 * skew-symmetric) or `array` (real or integer; general) matrix into CSR of type `type`
 * (PXL_F64 or PXL_F32; values parsed as double, then sparse_from_triplets). Symmetric
 * files give both triangles (the mirror entry after its original); pattern entries are
 * 1. The file is hostile: every line, count and index is checked (PXL_EFORMAT naming the
 * path and line). */
int sparse_read_mtx(const char *path, pxl_type type, SpMat **out, Err *err);
/* Writes A (any format: written from its CSR form) as `coordinate real general`, one
 * entry a line in CSR order, values with the digits that read back to the same float
 * or double; atomically (nothing is left at path on failure). */
int sparse_write_mtx(const SpMat *A, const char *path, Err *err);

#endif
