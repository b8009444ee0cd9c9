/*
 * mtx.c - Matrix Market files (sparse_read_mtx, sparse_write_mtx; sparse.h).
 *
 * The format is NIST's ("The Matrix Market Exchange Formats: Initial Design", Boisvert,
 * Pozo and Remington, 1996): a banner line `%%MatrixMarket matrix FORMAT FIELD SYMMETRY`,
 * whose words are case-insensitive; comment lines (a '%' first) and blank lines; a size
 * line; then the entries, one a line. Read here:
 *
 *   coordinate  size line `rows cols nnz`, then nnz lines `i j v` (`i j` for pattern),
 *               1-based, in any order; duplicates are summed in file order (by
 *               sparse_from_triplets) and explicit zeros kept, as SciPy does; nnz may
 *               not pass rows * cols (nor the triangle's places for a symmetric file),
 *               so a file repeats places only within that
 *   array       size line `rows cols`, then rows * cols lines of one value each, column
 *               by column (column-major, as the specification says); entries equal to
 *               zero (+0 and -0) are not stored: an array is a dense layout without a
 *               structure of its own, and its sparse matrix is its nonzeros (what
 *               scipy.sparse.csr_matrix(scipy.io.mmread(...)) gives)
 *   fields      real (strtod), integer (strtoll, then converted to double: beyond 2^53
 *               to the nearest double), pattern (every value 1); complex is refused
 *   symmetry    general; symmetric (square, the file holds the lower triangle i >= j,
 *               each entry off the diagonal followed by its mirror (j, i) of the same
 *               value); skew-symmetric (square, strictly lower i > j, mirror -v);
 *               hermitian is refused (complex), as are symmetric or skew-symmetric
 *               arrays and skew-symmetric patterns (the specification has neither)
 *
 * The file is hostile. It is read line by line through a buffer of its own (the largest
 * file holds one line at a time in memory, besides the entries), every line at most
 * MTX_MAX_LINE bytes; a NUL byte, a word too many or too few, a number that is not a
 * whole token, an index outside the matrix, an entry above the diagonal of a symmetric
 * matrix, a count that cannot be (nnz above rows * cols, or than the triangle holds) or
 * that the entries do not meet are PXL_EFORMAT, with the path and the 1-based line. The
 * size line's count is not trusted for memory: the entries' arrays start at no more than
 * MTX_RESERVE entries and grow (doubling) as the entries come.
 *
 * Values: strtod's whole grammar, so "nan", "inf", "infinity" (any case, signed) and hex
 * floats are accepted, and a decimal beyond the double range is what strtod makes of it
 * (+-inf above, a subnormal or zero below; ERANGE is not an error: that is the correctly
 * rounded value). Written values use "%.17g" (doubles) or "%.9g" (floats), the digits
 * that read back to the same bits for every finite value, -0 included; an infinity is
 * written "inf" or "-inf" and a NaN "nan" or "-nan" (its sign kept, its payload not:
 * it reads back as the default quiet NaN of that sign). Numbers use the C locale's
 * decimal point, as the rest of pxl does (the library never calls setlocale).
 */
#include "sparse/sparse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"
#include "util/file.h"

#define MTX_MAX_LINE ((size_t)1 << 20) /* bytes in a line, its newline not counted */
#define MTX_FREE_ROWS (1 << 22)  /* rows any coordinate file may have, entries or not */
#define MTX_ROWS_PER_ENTRY 16     /* and more rows only this many an entry */
#define MTX_CHUNK ((size_t)1 << 16)    /* the line buffer's first size */
#define MTX_RESERVE ((int64_t)1 << 20) /* entries reserved before any has been read */
#define MTX_MAX_TOKENS 5               /* the banner's words; every other line has fewer */

/* ---- reading lines ---- */

typedef struct {
  FILE *f;
  const char *path;
  char *buf;      /* [pos, end) read from the file and not yet handed out; cap + 1 bytes */
  size_t cap, pos, end;
  bool eof;       /* fread has reported the end (or an error) */
  long long line; /* the number of the line last handed out, 1-based */
  Err *err;
} Reader;

/* Records a PXL_EFORMAT for line `line` of the file: "PATH: line N: what". */
static int bad_at(const Reader *r, long long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad_at(const Reader *r, long long line, const char *fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return err_set(r->err, PXL_EFORMAT, "%.900s: line %lld: %s", r->path, line, what);
}

/* The same for the line last handed out. */
#define BAD(r, ...) bad_at((r), (r)->line, __VA_ARGS__)

/* The next line, NUL-terminated in place of its newline, in *line (NULL at the end of the
 * file), its length without the newline in *len. A line may end the file without a
 * newline. The buffer is read in large pieces and lines are handed out where they lie,
 * so a line is copied only when it straddles two pieces (moved to the buffer's start). */
static int next_line(Reader *r, char **line, size_t *len) {
  size_t from = r->pos; /* the bytes before `from` hold no newline */
  for (;;) {
    char *nl = memchr(r->buf + from, '\n', r->end - from);
    size_t have = (nl ? (size_t)(nl - r->buf) : r->end) - r->pos;
    if (have > MTX_MAX_LINE)
      return bad_at(r, r->line + 1, "longer than %zu bytes, the limit of a line", MTX_MAX_LINE);
    if (nl || (r->eof && have)) {
      *line = r->buf + r->pos;
      *len = have;
      (*line)[have] = 0; /* the newline, or (at the end) a byte kept free for it below */
      r->pos += have + (nl != NULL);
      r->line++;
      return PXL_OK;
    }
    if (r->eof) {
      *line = NULL;
      *len = 0;
      return PXL_OK;
    }
    if (r->pos) { /* the partial line to the front, for room after it */
      memmove(r->buf, r->buf + r->pos, have);
      r->pos = 0, r->end = have;
    }
    if (r->end == r->cap) { /* a line longer than the buffer: at most the limit plus its newline */
      size_t ncap = r->cap * 2 < MTX_MAX_LINE + 1 ? r->cap * 2 : MTX_MAX_LINE + 1;
      char *nb = PXL_REALLOC(r->buf, ncap + 1); /* +1: the last line's NUL, if it has no newline */
      if (!nb)
        return err_set(r->err, PXL_ENOMEM, "%.900s: out of memory for line %lld", r->path, r->line + 1);
      r->buf = nb, r->cap = ncap;
    }
    from = r->end;
    size_t got = fread(r->buf + r->end, 1, r->cap - r->end, r->f);
    r->end += got;
    if (got == 0) {
      if (ferror(r->f))
        return err_set(r->err, PXL_EIO, "%.900s: read error after line %lld: %s", r->path, r->line,
                       strerror(errno ? errno : EIO));
      r->eof = true;
    }
  }
}

/* Matrix Market's blanks between words. A '\r' counts, so that files with CRLF line ends
 * read as they do elsewhere. */
static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Splits s into words, NUL-terminated in place, at most `max` into tok; returns how many
 * words s has, or max + 1 when it has more. */
static int split(char *s, char **tok, int max) {
  int n = 0;
  for (;;) {
    while (is_blank(*s)) s++;
    if (!*s) return n;
    if (n == max) return max + 1;
    tok[n++] = s;
    while (*s && !is_blank(*s)) s++;
    if (*s) *s++ = 0;
  }
}

/* The next line that is not a comment nor blank, split into words (*n of them, or max + 1
 * for more than max); *n = -1 at the end of the file. A NUL byte is refused wherever it
 * lies: it would hide the rest of the line from the checks. */
static int next_words(Reader *r, char **tok, int max, int *n) {
  for (;;) {
    char *line;
    size_t len;
    int rc = next_line(r, &line, &len);
    if (rc != PXL_OK) return rc;
    if (!line) {
      *n = -1;
      return PXL_OK;
    }
    const char *nul = memchr(line, 0, len);
    if (nul) return BAD(r, "a NUL byte at column %zu", (size_t)(nul - line) + 1);
    const char *p = line;
    while (is_blank(*p)) p++;
    if (*p == '%' || !*p) continue;
    *n = split(line, tok, max);
    return PXL_OK;
  }
}

/* ---- numbers ---- */

/* A decimal integer filling all of s (strtoll's grammar: an optional sign, digits). */
static bool parse_int(const char *s, long long *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (end == s || *end || errno == ERANGE) return false;
  *v = x;
  return true;
}

/* A number filling all of s (strtod's grammar; out-of-range decimals become +-inf or a
 * subnormal, the correctly rounded value, not an error). */
static bool parse_real(const char *s, double *v) {
  char *end;
  double x = strtod(s, &end);
  if (end == s || *end) return false;
  *v = x;
  return true;
}

/* Puts "PATH: " before the message of a failure of a function that does not know the
 * path (sparse_from_triplets, sparse_convert), so that every message names the file. */
static int name_failure(Err *err, int rc, const char *path) {
  if (rc == PXL_OK) return rc;
  char msg[sizeof err->msg];
  memcpy(msg, err->msg, sizeof msg);
  return err_set(err, rc, "%.900s: %s", path, msg);
}

/* ---- the header ---- */

enum { F_REAL, F_INTEGER, F_PATTERN };
enum { S_GENERAL, S_SYMMETRIC, S_SKEW };

typedef struct {
  bool array;
  int field, symmetry;
  int64_t rows, cols;
  int64_t count; /* lines of entries the file must hold */
  int64_t bound; /* entries they can make (mirrors included): the arrays never grow past it */
} Header;

static int parse_banner(Reader *r, Header *h) {
  char *line, *tok[MTX_MAX_TOKENS + 1];
  size_t len;
  int rc = next_line(r, &line, &len);
  if (rc != PXL_OK) return rc;
  if (!line) return bad_at(r, 1, "empty file: no %%%%MatrixMarket banner");
  if (memchr(line, 0, len)) return BAD(r, "a NUL byte in the banner");
  static const char usage[] = "(expected '%%MatrixMarket matrix coordinate|array real|integer|pattern "
                              "general|symmetric|skew-symmetric')";
  if (line[0] != '%' || line[1] != '%') return BAD(r, "no %%%%MatrixMarket banner %s", usage);
  int n = split(line, tok, MTX_MAX_TOKENS);
  if (strcasecmp(tok[0], "%%MatrixMarket") != 0)
    return BAD(r, "the banner starts '%.40s', not '%%%%MatrixMarket' %s", tok[0], usage);
  if (n > 5) return BAD(r, "the banner has more than 5 words %s", usage);
  if (n < 5) return BAD(r, "the banner has %d words, not 5 %s", n, usage);
  if (strcasecmp(tok[1], "matrix") != 0)
    return BAD(r, "object '%.40s' is not supported (only 'matrix')", tok[1]);
  if (strcasecmp(tok[2], "coordinate") == 0)
    h->array = false;
  else if (strcasecmp(tok[2], "array") == 0)
    h->array = true;
  else
    return BAD(r, "unknown format '%.40s' (expected coordinate or array)", tok[2]);
  if (strcasecmp(tok[3], "real") == 0)
    h->field = F_REAL;
  else if (strcasecmp(tok[3], "integer") == 0)
    h->field = F_INTEGER;
  else if (strcasecmp(tok[3], "pattern") == 0)
    h->field = F_PATTERN;
  else if (strcasecmp(tok[3], "complex") == 0)
    return BAD(r, "complex matrices are not supported (pxl's matrices hold real values)");
  else
    return BAD(r, "unknown field '%.40s' (expected real, integer or pattern)", tok[3]);
  if (strcasecmp(tok[4], "general") == 0)
    h->symmetry = S_GENERAL;
  else if (strcasecmp(tok[4], "symmetric") == 0)
    h->symmetry = S_SYMMETRIC;
  else if (strcasecmp(tok[4], "skew-symmetric") == 0)
    h->symmetry = S_SKEW;
  else if (strcasecmp(tok[4], "hermitian") == 0)
    return BAD(r, "hermitian matrices are not supported (they are complex)");
  else
    return BAD(r, "unknown symmetry '%.40s' (expected general, symmetric or skew-symmetric)", tok[4]);
  if (h->array && h->field == F_PATTERN) return BAD(r, "an array cannot be a pattern (it has no indices)");
  if (h->array && h->symmetry != S_GENERAL)
    return BAD(r, "%s arrays are not supported (only general ones)",
               h->symmetry == S_SKEW ? "skew-symmetric" : "symmetric");
  if (h->field == F_PATTERN && h->symmetry == S_SKEW)
    return BAD(r, "a pattern cannot be skew-symmetric (it has no values to negate)");
  return PXL_OK;
}

/* One of the size line's numbers: a whole decimal in [0, limit]. */
static int size_number(Reader *r, const char *tok, const char *what, int64_t limit, int64_t *v) {
  long long x;
  if (!parse_int(tok, &x)) {
    const char *p = tok + (*tok == '-' || *tok == '+');
    bool digits = *p && strspn(p, "0123456789") == strlen(p);
    if (digits && *tok != '-')
      return BAD(r, "%s %.40s is more than %lld, pxl's limit", what, tok, (long long)limit);
    if (!digits) return BAD(r, "%s '%.40s' is not a whole number", what, tok);
    return BAD(r, "%s %.40s is negative", what, tok);
  }
  if (x < 0) return BAD(r, "%s %lld is negative", what, x);
  if (x > limit) return BAD(r, "%s %lld is more than %lld, pxl's limit", what, x, (long long)limit);
  *v = x;
  return PXL_OK;
}

static int parse_size(Reader *r, Header *h) {
  char *tok[4];
  int want = h->array ? 2 : 3, n, rc = next_words(r, tok, 3, &n);
  if (rc != PXL_OK) return rc;
  if (n < 0) return bad_at(r, r->line + 1, "end of file before the size line");
  const char *form = h->array ? "(rows columns)" : "(rows columns entries)";
  if (n > want) return BAD(r, "the size line has more than %d words %s", want, form);
  if (n < want) return BAD(r, "the size line has %d word%s, not %d %s", n, n > 1 ? "s" : "", want, form);
  if ((rc = size_number(r, tok[0], "rows", SP_MAX_DIM, &h->rows)) != PXL_OK ||
      (rc = size_number(r, tok[1], "columns", SP_MAX_DIM, &h->cols)) != PXL_OK)
    return rc;
  int64_t cells = h->rows * h->cols; /* < 2^62 */
  if (h->array) {
    if (cells > SP_MAX_STORED)
      return BAD(r, "a %lld x %lld array has more than %lld entries, pxl's limit", (long long)h->rows,
                 (long long)h->cols, (long long)SP_MAX_STORED);
    h->count = h->bound = cells;
    return PXL_OK;
  }
  if ((rc = size_number(r, tok[2], "the entry count", SP_MAX_STORED, &h->count)) != PXL_OK) return rc;
  if (h->symmetry != S_GENERAL && h->rows != h->cols)
    return BAD(r, "a %s matrix must be square, not %lld x %lld",
               h->symmetry == S_SKEW ? "skew-symmetric" : "symmetric", (long long)h->rows,
               (long long)h->cols);
  /* the most distinct places the file may name: all of them, the lower triangle with or
   * without the diagonal */
  int64_t places = h->symmetry == S_GENERAL     ? cells
                   : h->symmetry == S_SYMMETRIC ? h->rows * (h->rows + 1) / 2
                                                : h->rows * (h->rows - 1) / 2;
  if (h->count > places)
    return BAD(r, "%lld entries do not fit a %lld x %lld %smatrix (at most %lld)", (long long)h->count,
               (long long)h->rows, (long long)h->cols,
               h->symmetry == S_GENERAL ? "" : h->symmetry == S_SYMMETRIC ? "symmetric " : "skew-symmetric ",
               (long long)places);
  /* A short file must not make a huge matrix: its row pointers (8 bytes a row) are
   * allocated once the entries are read, so rows are limited by the entries the file
   * holds - a 50-byte file declaring 2^31 rows would otherwise take 16 GB */
  if (h->rows > MTX_FREE_ROWS + MTX_ROWS_PER_ENTRY * h->count)
    return BAD(r, "%lld rows for %lld entries: pxl reads at most %d rows an entry beyond the first %d rows",
               (long long)h->rows, (long long)h->count, MTX_ROWS_PER_ENTRY, MTX_FREE_ROWS);
  h->bound = h->symmetry == S_GENERAL ? h->count : 2 * h->count;
  return PXL_OK;
}

/* ---- the entries ---- */

typedef struct {
  int64_t *i, *j;
  double *v;
  int64_t n, cap;
} Triplets;

static void triplets_free(Triplets *t) { PXL_FREE(t->i), PXL_FREE(t->j), PXL_FREE(t->v); }

/* Room for `more` entries past t->n; the capacity doubles, up to `bound`. */
static int triplets_reserve(Triplets *t, int64_t more, int64_t bound, Reader *r) {
  if (t->n + more <= t->cap) return PXL_OK;
  int64_t ncap = t->cap ? 2 * t->cap : (bound < MTX_RESERVE ? bound : MTX_RESERVE);
  if (ncap > bound) ncap = bound;
  if (ncap < t->n + more) ncap = t->n + more; /* bound holds every entry: not reached past it */
  size_t bytes = (size_t)ncap * sizeof(int64_t);
  int64_t *ni = PXL_REALLOC(t->i, bytes);
  if (ni) t->i = ni;
  int64_t *nj = ni ? PXL_REALLOC(t->j, bytes) : NULL;
  if (nj) t->j = nj;
  double *nv = nj ? PXL_REALLOC(t->v, (size_t)ncap * sizeof(double)) : NULL;
  if (!nv)
    return err_set(r->err, PXL_ENOMEM, "%.900s: out of memory for %lld entries (line %lld)", r->path,
                   (long long)ncap, r->line);
  t->v = nv;
  t->cap = ncap;
  return PXL_OK;
}

static void push(Triplets *t, int64_t i, int64_t j, double v) {
  t->i[t->n] = i, t->j[t->n] = j, t->v[t->n] = v;
  t->n++;
}

/* An index word: a whole decimal in [1, n]; *v gets it 0-based. */
static int index_word(Reader *r, const char *tok, const char *what, int64_t n, int64_t *v) {
  long long x;
  if (!parse_int(tok, &x)) return BAD(r, "%s index '%.40s' is not a whole number", what, tok);
  if (x < 1 || x > n) return BAD(r, "%s index %lld is outside 1..%lld", what, x, (long long)n);
  *v = x - 1;
  return PXL_OK;
}

/* A value word of the field (not pattern). */
static int value_word(Reader *r, const char *tok, int field, double *v) {
  if (field == F_INTEGER) {
    long long x;
    if (!parse_int(tok, &x)) return BAD(r, "value '%.40s' is not an integer (the field is integer)", tok);
    *v = (double)x;
    return PXL_OK;
  }
  if (!parse_real(tok, v)) return BAD(r, "value '%.40s' is not a number", tok);
  return PXL_OK;
}

/* Reads the h->count entries and checks that nothing but comments and blank lines follow. */
static int read_entries(Reader *r, const Header *h, Triplets *t) {
  static const char *const forms[] = {"row column value", "row column value", "row column"};
  int want = h->array ? 1 : h->field == F_PATTERN ? 2 : 3;
  char *tok[4];
  for (int64_t e = 0; e < h->count; e++) {
    int n, rc = next_words(r, tok, 3, &n);
    if (rc != PXL_OK) return rc;
    if (n < 0)
      return bad_at(r, r->line + 1, "end of file after %lld of the %lld entries the size line gives",
                    (long long)e, (long long)h->count);
    if (n != want) {
      const char *form = h->array ? "one value" : forms[h->field];
      if (n > want) return BAD(r, "an entry has more than %d word%s (%s)", want, want > 1 ? "s" : "", form);
      return BAD(r, "an entry has %d word%s, not %d (%s)", n, n > 1 ? "s" : "", want, form);
    }
    int64_t i = 0, j = 0;
    double v = 1.0;
    if (h->array) {
      if ((rc = value_word(r, tok[0], h->field, &v)) != PXL_OK) return rc;
      if (v == 0) continue; /* not stored: the header's comment */
      i = h->rows ? e % h->rows : 0, j = h->rows ? e / h->rows : 0;
    } else {
      if ((rc = index_word(r, tok[0], "row", h->rows, &i)) != PXL_OK ||
          (rc = index_word(r, tok[1], "column", h->cols, &j)) != PXL_OK)
        return rc;
      if (h->field != F_PATTERN && (rc = value_word(r, tok[2], h->field, &v)) != PXL_OK) return rc;
      if (h->symmetry == S_SYMMETRIC && i < j)
        return BAD(r, "entry (%lld, %lld) lies above the diagonal of a symmetric matrix (the file holds "
                   "the lower triangle, row >= column)", (long long)i + 1, (long long)j + 1);
      if (h->symmetry == S_SKEW && i <= j)
        return BAD(r, "entry (%lld, %lld) lies %s the diagonal of a skew-symmetric matrix (the file holds "
                   "the strict lower triangle, row > column)", (long long)i + 1, (long long)j + 1,
                   i == j ? "on" : "above");
    }
    bool mirror = h->symmetry != S_GENERAL && i != j;
    if (t->n + 1 + mirror > SP_MAX_STORED) /* 2^40 lines: only a symmetric file's mirrors get here */
      return BAD(r, "more than %lld entries with the mirrored ones, pxl's limit", (long long)SP_MAX_STORED);
    if ((rc = triplets_reserve(t, 1 + mirror, h->bound, r)) != PXL_OK) return rc;
    push(t, i, j, v);
    if (mirror) push(t, j, i, h->symmetry == S_SKEW ? -v : v);
  }
  int n, rc = next_words(r, tok, 3, &n);
  if (rc != PXL_OK) return rc;
  if (n >= 0) return BAD(r, "more entries than the %lld the size line gives", (long long)h->count);
  return PXL_OK;
}

int sparse_read_mtx(const char *path, pxl_type type, SpMat **out, Err *err) {
  Err spare; /* for a caller that passes none: the functions called here write theirs */
  if (!err) err = &spare;
  if (out) *out = NULL;
  if (!path || !out) return err_set(err, PXL_EARG, "sparse_read_mtx: no path or no result");
  if (type != PXL_F32 && type != PXL_F64)
    return err_set(err, PXL_EARG, "%.900s: a matrix holds f32 or f64 values, not %s", path,
                   pxl_type_name(type));
  Reader r = {.path = path, .err = err, .cap = MTX_CHUNK};
  Triplets t = {0};
  Header h = {0};
  r.f = fopen(path, "rb");
  if (!r.f) return err_set(err, PXL_EIO, "%.900s: %s", path, strerror(errno));
  int rc = PXL_OK;
  r.buf = PXL_MALLOC(r.cap + 1);
  if (!r.buf) rc = err_set(err, PXL_ENOMEM, "%.900s: out of memory for its line buffer", path);
  if (rc == PXL_OK) rc = parse_banner(&r, &h);
  if (rc == PXL_OK) rc = parse_size(&r, &h);
  /* at least one entry's room, so that sparse_from_triplets never sees NULL arrays */
  if (rc == PXL_OK) rc = triplets_reserve(&t, 1, h.bound > 1 ? h.bound : 1, &r);
  if (rc == PXL_OK) rc = read_entries(&r, &h, &t);
  fclose(r.f);
  PXL_FREE(r.buf);
  if (rc == PXL_OK) {
    rc = sparse_from_triplets(h.rows, h.cols, type, t.n, t.i, t.j, t.v, out, err);
    name_failure(err, rc, path);
  }
  triplets_free(&t);
  return rc;
}

/* ---- writing ---- */

int sparse_write_mtx(const SpMat *A, const char *path, Err *err) {
  Err spare;
  if (!err) err = &spare;
  if (!A || !path) return err_set(err, PXL_EARG, "sparse_write_mtx: no matrix or no path");
  if (A->type != PXL_F32 && A->type != PXL_F64)
    return err_set(err, PXL_EARG, "%.900s: a matrix of %s values cannot be written", path,
                   pxl_type_name(A->type));
  SpMat *tmp = NULL;
  if (A->format != SP_CSR) {
    int rc = sparse_convert(A, SP_CSR, NULL, &tmp, err);
    if (rc != PXL_OK) return name_failure(err, rc, path);
    A = tmp;
  }
  AtomicFile af;
  int rc = file_atomic_open(&af, path, FILE_SHARED, err);
  if (rc != PXL_OK) {
    sparse_free(tmp);
    return rc;
  }
  /* A failed write (a full disk) leaves the stream's error flag set: the loop stops at it
   * and file_atomic_commit reports it, removing the temporary file. */
  bool ok = fprintf(af.f, "%%%%MatrixMarket matrix coordinate real general\n%lld %lld %lld\n",
                    (long long)A->rows, (long long)A->cols, (long long)A->nnz) > 0;
  bool f64 = A->type == PXL_F64;
  for (int64_t i = 0; ok && i < A->rows; i++)
    for (int64_t e = A->ptr[i]; ok && e < A->ptr[i + 1]; e++) {
      long long r = (long long)i + 1, c = (long long)A->col[e] + 1;
      ok = (f64 ? fprintf(af.f, "%lld %lld %.17g\n", r, c, ((const double *)A->val)[e])
                : fprintf(af.f, "%lld %lld %.9g\n", r, c, (double)((const float *)A->val)[e])) > 0;
    }
  sparse_free(tmp);
  return file_atomic_commit(&af, err);
}
