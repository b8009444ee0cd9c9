/*
 * spmv_t.h - the product loops of spmv.c for one value type, included once per type with
 * T (float or double) and SFX (the functions' suffix) defined. Each loop takes a range of
 * its format's rows (or slices, block rows) and keeps every row's sum in column order
 * (sparse.h): the vectorised loops run across rows, never along one.
 */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)

/* rows [r0, r1) of CSR */
static void FN(csr_rows)(const SpMat *A, const T *x, T *y, int64_t r0, int64_t r1) {
  const T *v = A->val;
  const int32_t *col = A->col;
  for (int64_t r = r0; r < r1; r++) {
    T s = 0;
    for (int64_t e = A->ptr[r]; e < A->ptr[r + 1]; e++) s += v[e] * x[col[e]];
    y[r] = s;
  }
}

/* rows [r0, r1) of COO: entries from the first of row r0 (rows sorted) */
static void FN(coo_rows)(const SpMat *A, const T *x, T *y, int64_t r0, int64_t r1) {
  const T *v = A->val;
  int64_t lo = 0, hi = A->stored;
  while (lo < hi) {
    int64_t m = lo + (hi - lo) / 2;
    if (A->row[m] < r0)
      lo = m + 1;
    else
      hi = m;
  }
  for (int64_t r = r0; r < r1; r++) y[r] = 0;
  for (int64_t e = lo; e < A->stored && A->row[e] < r1;) {
    int32_t r = A->row[e];
    T s = 0;
    for (; e < A->stored && A->row[e] == r; e++) s += v[e] * x[A->col[e]];
    y[r] = s;
  }
}

/* ELL and DIA take rows in blocks: a block's sums stay in L1 while each column (ELL) or
 * diagonal (DIA) streams through it, and a block of 1024 rows makes each stream 4 or 8
 * KiB long - blocks of 64 rows left 81 short streams that the prefetchers did not follow
 * (DIA on an 81-diagonal matrix took twice CSR's time) */
#define ROW_BLOCK 1024

/* rows [r0, r1) of ELL, ROW_BLOCK rows at a time */
static void FN(ell_rows)(const SpMat *A, const T *x, T *y, int64_t r0, int64_t r1) {
  const T *v = A->val;
  for (int64_t i0 = r0; i0 < r1; i0 += ROW_BLOCK) {
    int64_t n = r1 - i0 < ROW_BLOCK ? r1 - i0 : ROW_BLOCK;
    T s[ROW_BLOCK] = {0};
    for (int64_t j = 0; j < A->k; j++) {
      const T *vj = v + j * A->rows + i0;
      const int32_t *cj = A->col + j * A->rows + i0;
      for (int64_t t = 0; t < n; t++) s[t] += vj[t] * x[cj[t]];
    }
    for (int64_t t = 0; t < n; t++) y[i0 + t] = s[t];
  }
}

/* slices [s0, s1) of SELL */
static void FN(sell_slices)(const SpMat *A, const T *x, T *y, int64_t s0, int64_t s1) {
  const T *v = A->val;
  int64_t c = A->k;
  T s[1024];
  for (int64_t sl = s0; sl < s1; sl++) {
    for (int64_t t = 0; t < c; t++) s[t] = 0;
    for (int64_t j = 0; j < A->width[sl]; j++) {
      const T *vj = v + A->ptr[sl] + j * c;
      const int32_t *cj = A->col + A->ptr[sl] + j * c;
      for (int64_t t = 0; t < c; t++) s[t] += vj[t] * x[cj[t]];
    }
    for (int64_t t = 0; t < c && sl * c + t < A->rows; t++) y[A->perm[sl * c + t]] = s[t];
  }
}

/* rows [r0, r1) of DIA, ROW_BLOCK rows at a time, each diagonal where it lies in the
 * matrix */
static void FN(dia_rows)(const SpMat *A, const T *x, T *y, int64_t r0, int64_t r1) {
  const T *v = A->val;
  enum { B = ROW_BLOCK };
  for (int64_t i0 = r0; i0 < r1; i0 += B) {
    int64_t i1 = r1 - i0 < B ? r1 : i0 + B;
    T s[B] = {0};
    for (int64_t d = 0; d < A->k; d++) {
      int64_t off = A->off[d];
      int64_t lo = i0 > -off ? i0 : -off, hi = i1 < A->cols - off ? i1 : A->cols - off;
      const T *vd = v + d * A->rows;
      for (int64_t i = lo; i < hi; i++) s[i - i0] += vd[i] * x[i + off];
    }
    for (int64_t i = i0; i < i1; i++) y[i] = s[i - i0];
  }
}

/* block rows [b0, b1) of BCSR */
static void FN(bcsr_rows)(const SpMat *A, const T *x, T *y, int64_t b0, int64_t b1) {
  const T *v = A->val;
  int br = A->br, bc = A->bc;
  for (int64_t b = b0; b < b1; b++) {
    T s[64] = {0};
    for (int64_t k = A->ptr[b]; k < A->ptr[b + 1]; k++) {
      int64_t c0 = (int64_t)A->col[k] * bc, n = A->cols - c0 < bc ? A->cols - c0 : bc;
      const T *vk = v + k * br * bc;
      for (int dr = 0; dr < br; dr++)
        for (int64_t dc = 0; dc < n; dc++) s[dr] += vk[dr * bc + dc] * x[c0 + dc];
    }
    for (int dr = 0; dr < br && b * br + dr < A->rows; dr++) y[b * br + dr] = s[dr];
  }
}

/* parts [p0, p1) of A's format (rows, slices or block rows) */
static void FN(spmv_part)(const SpMat *A, const T *x, T *y, int64_t p0, int64_t p1) {
  switch (A->format) {
  case SP_CSR: FN(csr_rows)(A, x, y, p0, p1); break;
  case SP_COO: FN(coo_rows)(A, x, y, p0, p1); break;
  case SP_ELL: FN(ell_rows)(A, x, y, p0, p1); break;
  case SP_SELL: FN(sell_slices)(A, x, y, p0, p1); break;
  case SP_DIA: FN(dia_rows)(A, x, y, p0, p1); break;
  default: FN(bcsr_rows)(A, x, y, p0, p1); break;
  }
}

#undef FN
#undef CAT
#undef CAT_
