/*
 * sparse.c - sparse matrices built from entries, and converted between formats.
 *
 * Every format is made from CSR by walking its rows once (DIA and BCSR twice: first the
 * diagonals or blocks present, then the values), and made back into CSR the same way;
 * the layouts are the ones sparse.h describes.
 */
#include "sparse/sparse.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

static const char *const FORMAT_NAMES[SP_NFORMATS] = {"csr", "coo", "ell", "sell", "dia", "bcsr"};

const char *sparse_format_name(SpFormat f) { return f >= 0 && f < SP_NFORMATS ? FORMAT_NAMES[f] : "?"; }

int sparse_format_parse(const char *name) {
  for (int f = 0; f < SP_NFORMATS; f++)
    if (name && !strcmp(name, FORMAT_NAMES[f])) return f;
  return -1;
}

static size_t elem_size(pxl_type t) { return t == PXL_F32 ? sizeof(float) : sizeof(double); }

void sparse_free(SpMat *A) {
  if (!A) return;
  PXL_FREE(A->val);
  PXL_FREE(A->ptr);
  PXL_FREE(A->col);
  PXL_FREE(A->row);
  PXL_FREE(A->perm);
  PXL_FREE(A->width);
  PXL_FREE(A->len);
  PXL_FREE(A->off);
  PXL_FREE(A);
}

/* A matrix of A's shape and type in format f, with nothing allocated. */
static SpMat *shell(const SpMat *like, SpFormat f, Err *err) {
  SpMat *M = PXL_CALLOC(1, sizeof *M);
  if (!M) {
    err_set(err, PXL_ENOMEM, "out of memory for a sparse matrix");
    return NULL;
  }
  M->format = f;
  M->type = like->type;
  M->rows = like->rows;
  M->cols = like->cols;
  M->nnz = like->nnz;
  return M;
}

/* n elements of `size` bytes, zeroed; on failure sets err and returns NULL. */
static void *zalloc(int64_t n, size_t size, Err *err) {
  void *p = PXL_CALLOC(n > 0 ? (size_t)n : 1, size);
  if (!p) err_set(err, PXL_ENOMEM, "out of memory for a sparse matrix (%lld entries)", (long long)n);
  return p;
}

/* Value e of A as double, and stores. */
static double get(const SpMat *A, int64_t e) {
  return A->type == PXL_F32 ? (double)((const float *)A->val)[e] : ((const double *)A->val)[e];
}
static void put(SpMat *A, int64_t e, double v) {
  if (A->type == PXL_F32)
    ((float *)A->val)[e] = (float)v;
  else
    ((double *)A->val)[e] = v;
}

/* ---- building from entries ---- */

typedef struct {
  int32_t col;
  int64_t pos; /* the entry's place in the input: ties keep input order */
} Slot;

static int slot_cmp(const void *a, const void *b) {
  const Slot *p = a, *q = b;
  if (p->col != q->col) return p->col < q->col ? -1 : 1;
  return p->pos < q->pos ? -1 : p->pos > q->pos;
}

int sparse_from_triplets(int64_t rows, int64_t cols, pxl_type type, int64_t n, const int64_t *i,
                         const int64_t *j, const double *v, SpMat **out, Err *err) {
  *out = NULL;
  if (type != PXL_F32 && type != PXL_F64)
    return err_set(err, PXL_EARG, "sparse matrices hold f32 or f64 values");
  if (rows < 0 || cols < 0 || rows > SP_MAX_DIM || cols > SP_MAX_DIM)
    return err_set(err, PXL_ETOOBIG, "a sparse matrix of %lld x %lld: each side must lie in [0, %d]",
                   (long long)rows, (long long)cols, SP_MAX_DIM);
  if (n < 0 || n > SP_MAX_STORED)
    return err_set(err, PXL_ETOOBIG, "%lld entries: a sparse matrix holds at most %lld", (long long)n,
                   (long long)SP_MAX_STORED);
  for (int64_t e = 0; e < n; e++)
    if (i[e] < 0 || i[e] >= rows || j[e] < 0 || j[e] >= cols)
      return err_set(err, PXL_EARG, "entry %lld at (%lld, %lld) lies outside the %lld x %lld matrix",
                     (long long)e, (long long)i[e], (long long)j[e], (long long)rows, (long long)cols);
  SpMat like = {.type = type, .rows = rows, .cols = cols};
  SpMat *A = shell(&like, SP_CSR, err);
  /* ptr first holds where each row's entries start among the slots, `next` the next free
   * slot of each row (two arrays of rows + 1: a matrix of many empty rows costs these) */
  if (A) A->ptr = zalloc(rows + 1, sizeof *A->ptr, err);
  int64_t *next = A && A->ptr ? zalloc(rows + 1, sizeof *next, err) : NULL;
  Slot *slots = next ? zalloc(n, sizeof *slots, err) : NULL;
  if (!slots) {
    PXL_FREE(next);
    sparse_free(A);
    return err->code;
  }
  /* bucket the entries by row, in input order (a counting sort), then sort each row's
   * bucket by column; a row given in order (the usual case) is only checked */
  for (int64_t e = 0; e < n; e++) A->ptr[i[e] + 1]++;
  for (int64_t r = 0; r < rows; r++) A->ptr[r + 1] += A->ptr[r];
  memcpy(next, A->ptr, (size_t)(rows + 1) * sizeof *next);
  for (int64_t e = 0; e < n; e++) {
    int64_t s = next[i[e]]++;
    slots[s].col = (int32_t)j[e];
    slots[s].pos = e;
  }
  PXL_FREE(next);
  int64_t unique = 0;
  for (int64_t r = 0; r < rows; r++) {
    Slot *b = slots + A->ptr[r];
    int64_t m = A->ptr[r + 1] - A->ptr[r];
    bool sorted = true;
    for (int64_t k = 1; k < m && sorted; k++) sorted = b[k - 1].col < b[k].col;
    if (!sorted) qsort(b, (size_t)m, sizeof *b, slot_cmp);
    for (int64_t k = 0; k < m; k++) unique += k == 0 || b[k].col != b[k - 1].col;
  }
  A->nnz = A->stored = unique;
  A->col = zalloc(unique, sizeof *A->col, err);
  A->val = A->col ? zalloc(unique, elem_size(type), err) : NULL;
  if (!A->val) {
    PXL_FREE(slots);
    sparse_free(A);
    return err->code;
  }
  /* each row's slots, duplicates summed, into its place: ptr[r] becomes the row's first
   * entry (never past its first slot, so ptr[r + 1] still bounds the slots when read) */
  int64_t e = 0, first = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t end = A->ptr[r + 1];
    A->ptr[r] = e;
    for (int64_t k = first; k < end; k++) {
      bool dup = k > first && slots[k].col == slots[k - 1].col;
      double x = v[slots[k].pos];
      if (type == PXL_F32) {
        float *f = A->val;
        f[dup ? e - 1 : e] = dup ? f[e - 1] + (float)x : (float)x;
      } else {
        double *d = A->val;
        d[dup ? e - 1 : e] = dup ? d[e - 1] + x : x;
      }
      if (!dup) A->col[e++] = slots[k].col;
    }
    first = end;
  }
  A->ptr[rows] = e;
  PXL_FREE(slots);
  *out = A;
  return PXL_OK;
}

/* ---- what each format stores ---- */

static SpOpts defaults(const SpOpts *o) {
  SpOpts d = o ? *o : (SpOpts){0};
  if (d.sell_c <= 0) d.sell_c = 32;
  if (d.sell_sigma <= 0) d.sell_sigma = 1024;
  if (d.br <= 0) d.br = 4;
  if (d.bc <= 0) d.bc = 4;
  return d;
}

static int64_t row_len(const SpMat *A, int64_t r) { return A->ptr[r + 1] - A->ptr[r]; }

static int64_t longest_row(const SpMat *A) {
  int64_t k = 0;
  for (int64_t r = 0; r < A->rows; r++)
    if (row_len(A, r) > k) k = row_len(A, r);
  return k;
}

/* SELL's sorted order: within each window of sigma rows, by length, longest first, ties
 * in row order (a stable sort: counting by length would need the longest row's room). */
typedef struct {
  int64_t len;
  int32_t row;
} RowLen;

static int rowlen_cmp(const void *a, const void *b) {
  const RowLen *p = a, *q = b;
  if (p->len != q->len) return p->len > q->len ? -1 : 1;
  return p->row < q->row ? -1 : p->row > q->row;
}

static RowLen *sell_order(const SpMat *A, int sigma, Err *err) {
  RowLen *o = zalloc(A->rows, sizeof *o, err);
  if (!o) return NULL;
  for (int64_t r = 0; r < A->rows; r++) o[r] = (RowLen){row_len(A, r), (int32_t)r};
  if (sigma > 1)
    for (int64_t r0 = 0; r0 < A->rows; r0 += sigma) {
      int64_t m = A->rows - r0 < sigma ? A->rows - r0 : sigma;
      qsort(o + r0, (size_t)m, sizeof *o, rowlen_cmp);
    }
  return o;
}

int sparse_sell_height(const SpMat *A, int c) { return A->rows < c ? (A->rows > 0 ? (int)A->rows : 1) : c; }

static int64_t sell_stored(const RowLen *o, int64_t rows, int c) {
  int64_t s = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += c) {
    int64_t w = 0;
    for (int64_t t = r0; t < rows && t < r0 + c; t++)
      if (o[t].len > w) w = o[t].len;
    s += w * c;
  }
  return s;
}

/* The distinct diagonals (column - row) of A, increasing, in *off (PXL_FREE), their
 * number returned; stops counting (returns limit + 1, *off NULL) past `limit`. A
 * mark per diagonal: rows + cols - 1 bits. */
static int64_t diagonals(const SpMat *A, int64_t limit, int64_t **off, Err *err) {
  *off = NULL;
  int64_t span = A->rows + A->cols - 1;
  if (span <= 0) return 0;
  uint64_t *seen = zalloc((span + 63) / 64, sizeof *seen, err);
  if (!seen) return -1;
  int64_t nd = 0;
  for (int64_t r = 0; r < A->rows && nd <= limit; r++)
    for (int64_t e = A->ptr[r]; e < A->ptr[r + 1]; e++) {
      int64_t d = A->col[e] - r + A->rows - 1;
      if (!(seen[d / 64] >> (d % 64) & 1)) {
        seen[d / 64] |= (uint64_t)1 << (d % 64);
        if (++nd > limit) break;
      }
    }
  if (nd <= limit) {
    *off = zalloc(nd, sizeof **off, err);
    if (!*off) nd = -1;
    for (int64_t d = 0, k = 0; *off && d < span; d++)
      if (seen[d / 64] >> (d % 64) & 1) (*off)[k++] = d - (A->rows - 1);
  }
  PXL_FREE(seen);
  return nd;
}

/* The blocks of block row b: the distinct block columns of its rows, increasing, into
 * cols (room for every entry of the block row); returns their number. */
static int64_t block_cols(const SpMat *A, int br, int bc, int64_t b, int32_t *cols) {
  int64_t n = 0, r1 = (b + 1) * br < A->rows ? (b + 1) * br : A->rows;
  for (int64_t r = b * br; r < r1; r++)
    for (int64_t e = A->ptr[r]; e < A->ptr[r + 1]; e++) cols[n++] = A->col[e] / bc;
  /* an insertion sort: a block row's rows each give increasing block columns, so the
   * merged list is nearly sorted */
  for (int64_t k = 1; k < n; k++) {
    int32_t c = cols[k];
    int64_t m = k;
    for (; m > 0 && cols[m - 1] > c; m--) cols[m] = cols[m - 1];
    cols[m] = c;
  }
  int64_t u = 0;
  for (int64_t k = 0; k < n; k++)
    if (!u || cols[k] != cols[u - 1]) cols[u++] = cols[k];
  return u;
}

static int64_t longest_block_row(const SpMat *A, int br) {
  int64_t m = 0;
  for (int64_t r0 = 0; r0 < A->rows; r0 += br) {
    int64_t r1 = r0 + br < A->rows ? r0 + br : A->rows;
    if (A->ptr[r1] - A->ptr[r0] > m) m = A->ptr[r1] - A->ptr[r0];
  }
  return m;
}

int64_t sparse_stored_for(const SpMat *A, SpFormat f, const SpOpts *opts) {
  SpOpts o = defaults(opts);
  Err ignored;
  switch (f) {
  case SP_CSR:
  case SP_COO: return A->nnz;
  case SP_ELL: return longest_row(A) * A->rows;
  case SP_SELL: {
    RowLen *ord = sell_order(A, o.sell_sigma, &ignored);
    int64_t s = ord ? sell_stored(ord, A->rows, sparse_sell_height(A, o.sell_c)) : -1;
    PXL_FREE(ord);
    return s;
  }
  case SP_DIA: {
    int64_t *off, nd = diagonals(A, SP_MAX_STORED / (A->rows > 0 ? A->rows : 1), &off, &ignored);
    PXL_FREE(off);
    return nd < 0 ? -1 : nd * A->rows;
  }
  case SP_BCSR: {
    int32_t *cols = zalloc(longest_block_row(A, o.br), sizeof *cols, &ignored);
    if (!cols) return -1;
    int64_t blocks = 0;
    for (int64_t b = 0; b * o.br < A->rows; b++) blocks += block_cols(A, o.br, o.bc, b, cols);
    PXL_FREE(cols);
    return blocks * o.br * o.bc;
  }
  default: return -1;
  }
}

int64_t sparse_bytes(const SpMat *A) {
  int64_t v = (int64_t)elem_size(A->type), idx = 0;
  switch (A->format) {
  case SP_CSR: idx = 8 * (A->rows + 1) + 4 * A->stored; break;
  case SP_COO: idx = 8 * A->stored; break;
  case SP_ELL: idx = 4 * A->stored; break;
  case SP_SELL: idx = 4 * A->stored + 8 * (A->nparts + 1) + 4 * A->nparts + 4 * A->rows; break;
  case SP_DIA: idx = 8 * A->k; break;
  case SP_BCSR: idx = 8 * (A->nparts + 1) + 4 * A->k; break;
  default: break;
  }
  return idx + v * (A->stored + A->rows + A->cols);
}

/* ---- from CSR ---- */

/* Refuses a format storing `stored` entries where opts or the limit do not allow it. */
static int fill_ok(const SpMat *A, SpFormat f, int64_t stored, const SpOpts *o, Err *err) {
  if (stored < 0 || stored > SP_MAX_STORED)
    return err_set(err, PXL_ETOOBIG, "%s would store more than %lld entries for this matrix",
                   sparse_format_name(f), (long long)SP_MAX_STORED);
  if (o->max_fill > 0 && (double)stored > o->max_fill * (double)(A->nnz > 0 ? A->nnz : 1))
    return err_set(err, PXL_ETOOBIG, "%s would store %lld entries for %lld nonzeros (more than %g times)",
                   sparse_format_name(f), (long long)stored, (long long)A->nnz, o->max_fill);
  return PXL_OK;
}

static int to_coo(const SpMat *A, SpMat *M, Err *err) {
  M->stored = A->nnz;
  M->row = zalloc(A->nnz, sizeof *M->row, err);
  M->col = M->row ? zalloc(A->nnz, sizeof *M->col, err) : NULL;
  M->val = M->col ? zalloc(A->nnz, elem_size(A->type), err) : NULL;
  if (!M->val) return err->code;
  for (int64_t r = 0; r < A->rows; r++)
    for (int64_t e = A->ptr[r]; e < A->ptr[r + 1]; e++) M->row[e] = (int32_t)r;
  memcpy(M->col, A->col, (size_t)A->nnz * sizeof *M->col);
  memcpy(M->val, A->val, (size_t)A->nnz * elem_size(A->type));
  return PXL_OK;
}

/* Row r of A into the ELL-like layout at base, entry j at base + j * step, padded to w
 * entries with its last column and 0. */
static void put_row(const SpMat *A, int64_t r, SpMat *M, int64_t base, int64_t step, int64_t w) {
  int32_t last = 0;
  int64_t j = 0;
  for (int64_t e = A->ptr[r]; e < A->ptr[r + 1]; e++, j++) {
    M->col[base + j * step] = last = A->col[e];
    put(M, base + j * step, get(A, e));
  }
  for (; j < w; j++) M->col[base + j * step] = last; /* the value stays 0 */
}

static int alloc_padded(const SpMat *A, SpMat *M, int64_t stored, Err *err) {
  M->stored = stored;
  M->col = zalloc(stored, sizeof *M->col, err);
  M->val = M->col ? zalloc(stored, elem_size(A->type), err) : NULL;
  M->len = M->val ? zalloc(A->rows, sizeof *M->len, err) : NULL;
  if (!M->len) return err->code;
  for (int64_t r = 0; r < A->rows; r++) M->len[r] = (int32_t)row_len(A, r);
  return PXL_OK;
}

static int to_ell(const SpMat *A, SpMat *M, const SpOpts *o, Err *err) {
  M->k = longest_row(A);
  int rc = fill_ok(A, SP_ELL, M->k * A->rows, o, err);
  if (rc || (rc = alloc_padded(A, M, M->k * A->rows, err))) return rc;
  for (int64_t r = 0; r < A->rows; r++) put_row(A, r, M, r, A->rows, M->k);
  return PXL_OK;
}

static int to_sell(const SpMat *A, SpMat *M, const SpOpts *o, Err *err) {
  if (o->sell_c > 1024) return err_set(err, PXL_EARG, "SELL slices of %d rows: at most 1024", o->sell_c);
  int c = sparse_sell_height(A, o->sell_c);
  RowLen *ord = sell_order(A, o->sell_sigma, err);
  if (!ord) return err->code;
  int64_t stored = sell_stored(ord, A->rows, c);
  int rc = fill_ok(A, SP_SELL, stored, o, err);
  M->k = c;
  M->sigma = o->sell_sigma;
  M->nparts = (A->rows + c - 1) / c;
  if (!rc) rc = alloc_padded(A, M, stored, err);
  if (!rc) {
    M->perm = zalloc(A->rows, sizeof *M->perm, err);
    M->width = M->perm ? zalloc(M->nparts, sizeof *M->width, err) : NULL;
    M->ptr = M->width ? zalloc(M->nparts + 1, sizeof *M->ptr, err) : NULL;
    rc = M->ptr ? PXL_OK : err->code;
  }
  for (int64_t s = 0, base = 0; !rc && s < M->nparts; s++) {
    int64_t w = 0;
    for (int64_t t = s * c; t < A->rows && t < (s + 1) * c; t++)
      if (ord[t].len > w) w = ord[t].len;
    M->ptr[s] = base;
    M->width[s] = (int32_t)w;
    for (int64_t t = s * c; t < A->rows && t < (s + 1) * c; t++) {
      M->perm[t] = ord[t].row;
      put_row(A, ord[t].row, M, base + (t - s * c), c, w);
    }
    base += w * c;
    M->ptr[s + 1] = base;
  }
  if (!rc && !M->nparts) M->ptr[0] = 0;
  PXL_FREE(ord);
  return rc;
}

static int to_dia(const SpMat *A, SpMat *M, const SpOpts *o, Err *err) {
  int64_t rows = A->rows > 0 ? A->rows : 1;
  int64_t limit = SP_MAX_STORED / rows;
  if (o->max_fill > 0 && o->max_fill * (double)(A->nnz > 0 ? A->nnz : 1) / (double)rows < (double)limit)
    limit = (int64_t)(o->max_fill * (double)(A->nnz > 0 ? A->nnz : 1) / (double)rows);
  int64_t *off, nd = diagonals(A, limit, &off, err);
  if (nd < 0) return err->code;
  if (nd > limit) {
    if (limit < SP_MAX_STORED / rows)
      return err_set(err, PXL_ETOOBIG, "dia would store more than %g times the %lld nonzeros (over %lld diagonals)",
                     o->max_fill, (long long)A->nnz, (long long)limit);
    return err_set(err, PXL_ETOOBIG, "dia would store more than %lld entries for this matrix",
                   (long long)SP_MAX_STORED);
  }
  M->k = nd;
  M->off = off;
  M->stored = nd * A->rows;
  M->val = zalloc(M->stored, elem_size(A->type), err);
  if (!M->val) return err->code;
  for (int64_t r = 0; r < A->rows; r++) {
    int64_t d = 0;
    for (int64_t e = A->ptr[r]; e < A->ptr[r + 1]; e++) {
      while (off[d] != A->col[e] - r) d++; /* the row's diagonals increase with its columns */
      put(M, d * A->rows + r, get(A, e));
    }
  }
  return PXL_OK;
}

static int to_bcsr(const SpMat *A, SpMat *M, const SpOpts *o, Err *err) {
  int br = o->br, bc = o->bc;
  if (br > 64 || bc > 64) return err_set(err, PXL_EARG, "BCSR blocks of %d x %d: at most 64 x 64", br, bc);
  M->br = br;
  M->bc = bc;
  M->nparts = (A->rows + br - 1) / br;
  int32_t *cols = zalloc(longest_block_row(A, br), sizeof *cols, err);
  M->ptr = cols ? zalloc(M->nparts + 1, sizeof *M->ptr, err) : NULL;
  if (!M->ptr) {
    PXL_FREE(cols);
    return err->code;
  }
  for (int64_t b = 0; b < M->nparts; b++) M->ptr[b + 1] = M->ptr[b] + block_cols(A, br, bc, b, cols);
  M->k = M->ptr[M->nparts];
  int rc = M->k > SP_MAX_STORED / (br * bc) ? fill_ok(A, SP_BCSR, SP_MAX_STORED + 1, o, err)
                                             : fill_ok(A, SP_BCSR, M->k * br * bc, o, err);
  if (!rc) {
    M->stored = M->k * br * bc;
    M->col = zalloc(M->k, sizeof *M->col, err);
    M->val = M->col ? zalloc(M->stored, elem_size(A->type), err) : NULL;
    rc = M->val ? PXL_OK : err->code;
  }
  for (int64_t b = 0; !rc && b < M->nparts; b++) {
    int64_t n = block_cols(A, br, bc, b, cols), first = M->ptr[b];
    memcpy(M->col + first, cols, (size_t)n * sizeof *cols);
    for (int64_t r = b * br; r < A->rows && r < (b + 1) * br; r++) {
      int64_t k = 0;
      for (int64_t e = A->ptr[r]; e < A->ptr[r + 1]; e++) {
        while (cols[k] != A->col[e] / bc) k++;
        put(M, ((first + k) * br + (r - b * br)) * bc + A->col[e] % bc, get(A, e));
      }
    }
  }
  PXL_FREE(cols);
  return rc;
}

/* ---- back to CSR ---- */

/* Appends entry (c, v) to row r of the CSR matrix being built (counting pass: col NULL). */
typedef struct {
  SpMat *M;
  int64_t n;
} Builder;

static void emit(Builder *b, int32_t c, double v) {
  if (b->M->col) {
    b->M->col[b->n] = c;
    put(b->M, b->n, v);
  }
  b->n++;
}

/* Row r of a format as CSR entries, in column order: every stored entry where the format
 * knows its rows' lengths, the nonzero ones in DIA and BCSR. slot: COO's row starts,
 * SELL's sorted positions. */
static void row_entries(const SpMat *A, int64_t r, Builder *b, const int64_t *slot) {
  switch (A->format) {
  case SP_CSR:
    for (int64_t e = A->ptr[r]; e < A->ptr[r + 1]; e++) emit(b, A->col[e], get(A, e));
    break;
  case SP_COO:
    for (int64_t e = slot[r]; e < slot[r + 1]; e++) emit(b, A->col[e], get(A, e));
    break;
  case SP_ELL:
    for (int64_t j = 0; j < A->len[r]; j++) emit(b, A->col[j * A->rows + r], get(A, j * A->rows + r));
    break;
  case SP_SELL: {
    int64_t t = slot[r], s = t / A->k, base = A->ptr[s] + t % A->k;
    for (int64_t j = 0; j < A->len[r]; j++) emit(b, A->col[base + j * A->k], get(A, base + j * A->k));
    break;
  }
  case SP_DIA:
    for (int64_t d = 0; d < A->k; d++) {
      int64_t c = r + A->off[d];
      double v = c >= 0 && c < A->cols ? get(A, d * A->rows + r) : 0;
      if (v != 0) emit(b, (int32_t)c, v);
    }
    break;
  case SP_BCSR: {
    int64_t blk = r / A->br, dr = r % A->br;
    for (int64_t k = A->ptr[blk]; k < A->ptr[blk + 1]; k++)
      for (int64_t dc = 0; dc < A->bc; dc++) {
        int64_t c = (int64_t)A->col[k] * A->bc + dc;
        double v = c < A->cols ? get(A, (k * A->br + dr) * A->bc + dc) : 0;
        if (v != 0) emit(b, (int32_t)c, v);
      }
    break;
  }
  default: break;
  }
}

static int to_csr(const SpMat *A, SpMat *M, Err *err) {
  /* COO: each row's first entry; SELL: each row's sorted position */
  int64_t *slot = NULL;
  if (A->format == SP_COO || A->format == SP_SELL) {
    slot = zalloc(A->rows + 1, sizeof *slot, err);
    if (!slot) return err->code;
    if (A->format == SP_COO) {
      for (int64_t e = 0; e < A->stored; e++) slot[A->row[e] + 1]++;
      for (int64_t r = 0; r < A->rows; r++) slot[r + 1] += slot[r];
    } else {
      for (int64_t t = 0; t < A->rows; t++) slot[A->perm[t]] = t;
    }
  }
  M->ptr = zalloc(A->rows + 1, sizeof *M->ptr, err);
  int rc = M->ptr ? PXL_OK : err->code;
  Builder b = {M, 0};
  for (int64_t r = 0; !rc && r < A->rows; r++) {
    row_entries(A, r, &b, slot);
    M->ptr[r + 1] = b.n;
  }
  if (!rc) {
    M->nnz = M->stored = b.n;
    M->col = zalloc(b.n, sizeof *M->col, err);
    M->val = M->col ? zalloc(b.n, elem_size(A->type), err) : NULL;
    rc = M->val ? PXL_OK : err->code;
  }
  b.n = 0;
  for (int64_t r = 0; !rc && r < A->rows; r++) row_entries(A, r, &b, slot);
  PXL_FREE(slot);
  return rc;
}

/* A copy of the n elements of `size` bytes at src (NULL: NULL); *rc PXL_ENOMEM on
 * failure (and stays so: the copies are made in a row). */
static void *dup(const void *src, int64_t n, size_t size, int *rc, Err *err) {
  if (!src || *rc) return NULL;
  void *d = zalloc(n, size, err);
  if (!d) *rc = err->code;
  else memcpy(d, src, (size_t)n * size);
  return d;
}

/* A copy of A in its own format, array for array. */
static int clone(const SpMat *A, SpMat **out, Err *err) {
  SpMat *M = shell(A, A->format, err);
  if (!M) return err->code;
  *M = *A;
  int rc = PXL_OK;
  int64_t nptr = A->format == SP_CSR ? A->rows + 1 : A->nparts + 1, ncol = A->format == SP_BCSR ? A->k : A->stored;
  M->val = dup(A->val, A->stored, elem_size(A->type), &rc, err);
  M->ptr = dup(A->ptr, nptr, sizeof *A->ptr, &rc, err);
  M->col = dup(A->col, ncol, sizeof *A->col, &rc, err);
  M->row = dup(A->row, A->stored, sizeof *A->row, &rc, err);
  M->perm = dup(A->perm, A->rows, sizeof *A->perm, &rc, err);
  M->width = dup(A->width, A->nparts, sizeof *A->width, &rc, err);
  M->len = dup(A->len, A->rows, sizeof *A->len, &rc, err);
  M->off = dup(A->off, A->k, sizeof *A->off, &rc, err);
  if (rc) {
    sparse_free(M);
    return rc;
  }
  *out = M;
  return PXL_OK;
}

int sparse_convert(const SpMat *A, SpFormat f, const SpOpts *opts, SpMat **out, Err *err) {
  *out = NULL;
  if (f < 0 || f >= SP_NFORMATS) return err_set(err, PXL_EARG, "no sparse format %d", (int)f);
  if (f != SP_CSR && A->format != SP_CSR && A->format != f)
    return err_set(err, PXL_EARG, "a %s matrix converts to CSR only (then to %s)", sparse_format_name(A->format),
                   sparse_format_name(f));
  if (A->format == f) return clone(A, out, err);
  SpOpts o = defaults(opts);
  SpMat *M = shell(A, f, err);
  if (!M) return err->code;
  int rc;
  switch (f) {
  case SP_CSR: rc = to_csr(A, M, err); break;
  case SP_COO: rc = to_coo(A, M, err); break;
  case SP_ELL: rc = to_ell(A, M, &o, err); break;
  case SP_SELL: rc = to_sell(A, M, &o, err); break;
  case SP_DIA: rc = to_dia(A, M, &o, err); break;
  default: rc = to_bcsr(A, M, &o, err); break;
  }
  if (rc) {
    sparse_free(M);
    return rc;
  }
  *out = M;
  return PXL_OK;
}
