/*
 * extrema.c - regional minima and maxima (ops_regional): the plateaus (maximal conn-connected
 * sets of pixels of one value) that no pixel of a strictly lower (maxima: higher) value
 * touches. Below, "better" means strictly lower for minima and strictly higher for maxima.
 *
 * Values compare in the image's type (i16 and i32 signed); floats as C compares them: -0.0
 * equals +0.0, so they share a plateau, and a NaN equals nothing and is neither lower nor
 * higher than anything. So a NaN pixel is a plateau of its own, which the operation makes 0
 * (a NaN is no extremum), and it disqualifies none of its neighbours.
 *
 * Reference: for each pixel not yet visited, a breadth-first search of its plateau that
 * notes whether some plateau pixel has a better neighbour; the plateau gets 0 if so, else 1.
 *
 * Fast: a pixel is in no extremum iff it is NaN, or has a better neighbour, or is equal and
 * conn-adjacent to a pixel in no extremum: a mark that spreads over plateaus. Threads own
 * strips of rows. Each marks its rows' pixels that are NaN or have a better neighbour (one
 * branch-free pass that vectorises; the input rows around the strip are read, never
 * written), then spreads the marks within its strip as Vincent's hybrid reconstruction
 * does: a forward raster scan (an unmarked pixel takes the mark of an equal neighbour
 * already scanned), a backward scan the same way round that stacks the pixels it marks,
 * and the stack spread until empty. One thread then marks, across each boundary between
 * strips, the unmarked one of each pair of equal neighbours whose other one is marked, and
 * spreads from those anywhere in the image: only plateaus that straddle a boundary have
 * work left. The result is the unmarked pixels. These scans touch a byte a pixel;
 * labelling the plateaus with union-find instead needs an image-sized array of indices and
 * took five times as long (and ops_label cannot label them: it makes 0 pixels background).
 */
#include "ops/morph.h"

#include <omp.h>

#include "util/alloc.h"

#define PARALLEL_MIN 16384 /* fewer pixels run on one thread (the same strips, in turn) */

#define INLINE static inline __attribute__((always_inline))

/* ---- reference ---- */

static int reference(const struct pxl_image *in, bool maxima, int conn, struct pxl_image *out, Err *err) {
  int w = in->width, h = in->height;
  size_t n = (size_t)w * (size_t)h;
  bool *seen = PXL_CALLOC(n, sizeof *seen);
  uint32_t *plateau = PXL_MALLOC(n * sizeof *plateau); /* the search's queue: the plateau's pixels */
  if (!seen || !plateau) {
    PXL_FREE(seen), PXL_FREE(plateau);
    return err_set(err, PXL_ENOMEM, "out of memory for the extrema of a %dx%d image", w, h);
  }
  static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      size_t p = (size_t)y * w + x;
      if (seen[p]) continue;
      seen[p] = true;
      double v = ops_value(in, x, y);
      size_t head = 0, tail = 0;
      plateau[tail++] = (uint32_t)p;
      bool beaten = v != v; /* NaN: no extremum */
      while (head < tail) {
        size_t q = plateau[head++];
        int qx = (int)(q % w), qy = (int)(q / w);
        for (int k = 0; k < conn; k++) {
          int nx = qx + dx[k], ny = qy + dy[k];
          if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
          double u = ops_value(in, nx, ny);
          size_t r = (size_t)ny * w + nx;
          if (u == v && !seen[r]) {
            seen[r] = true;
            plateau[tail++] = (uint32_t)r;
          }
          if (maxima ? u > v : u < v) beaten = true;
        }
      }
      for (size_t i = 0; i < tail; i++)
        ops_put(out, (int)(plateau[i] % w), (int)(plateau[i] / w), (Lane){.i = !beaten}, T_I32);
    }
  PXL_FREE(seen), PXL_FREE(plateau);
  return PXL_OK;
}

/* ---- fast: marks spread over plateaus by scans ---- */

/* Pixels (y << 16 | x: coordinates are below 65535) whose mark is new and has yet to
 * spread to their neighbours; the order they are taken in does not matter. */
typedef struct {
  uint32_t *v;
  size_t n, cap;
  bool oom; /* a push found no memory: the result is wrong, the call fails */
} Stack;

static void stack_push_slow(Stack *s, uint32_t e) {
  size_t cap = s->cap ? 2 * s->cap : 1024;
  uint32_t *v = PXL_REALLOC(s->v, cap * sizeof *v);
  if (!v) {
    s->oom = true;
    return;
  }
  s->v = v, s->cap = cap;
  s->v[s->n++] = e;
}

INLINE void stack_push(Stack *s, uint32_t e) {
  if (s->n < s->cap)
    s->v[s->n++] = e;
  else
    stack_push_slow(s, e);
}

typedef struct {
  const struct pxl_image *in;
  bool maxima;
  int conn;
  uint8_t *mark; /* per pixel (y * w + x): in no extremum, as far as is known yet */
} Ext;

/* Element x of row a equals element y of row b, in type t. */
INLINE bool eq(pxl_type t, const void *a, int x, const void *b, int y) {
  switch (t) {
  case PXL_U8: return ((const uint8_t *)a)[x] == ((const uint8_t *)b)[y];
  case PXL_I16:
  case PXL_U16: return ((const uint16_t *)a)[x] == ((const uint16_t *)b)[y];
  case PXL_I32:
  case PXL_U32: return ((const uint32_t *)a)[x] == ((const uint32_t *)b)[y];
  case PXL_F32: return ((const float *)a)[x] == ((const float *)b)[y];
  default: return ((const double *)a)[x] == ((const double *)b)[y];
  }
}

/* Element x of row a is strictly below element y of row b, in type t. */
INLINE bool lt(pxl_type t, const void *a, int x, const void *b, int y) {
  switch (t) {
  case PXL_U8: return ((const uint8_t *)a)[x] < ((const uint8_t *)b)[y];
  case PXL_I16: return ((const int16_t *)a)[x] < ((const int16_t *)b)[y];
  case PXL_U16: return ((const uint16_t *)a)[x] < ((const uint16_t *)b)[y];
  case PXL_I32: return ((const int32_t *)a)[x] < ((const int32_t *)b)[y];
  case PXL_U32: return ((const uint32_t *)a)[x] < ((const uint32_t *)b)[y];
  case PXL_F32: return ((const float *)a)[x] < ((const float *)b)[y];
  default: return ((const double *)a)[x] < ((const double *)b)[y];
  }
}

/* Element x of row a is better than element y of row c. */
INLINE bool better(pxl_type t, bool maxima, const void *a, int x, const void *c, int y) {
  return maxima ? lt(t, c, y, a, x) : lt(t, a, x, c, y);
}

/* Whether pixel x of row c (its neighbours at l and r, rows u and d) has a better
 * neighbour or is NaN. Every comparison is made (`|=`, not `||`), so that the row's loop
 * has no branch and vectorises. */
INLINE bool marked(pxl_type t, bool maxima, int conn, const void *u, const void *c, const void *d, int l, int x,
                   int r) {
  int m = !eq(t, c, x, c, x);
  m |= better(t, maxima, c, l, c, x);
  m |= better(t, maxima, c, r, c, x);
  m |= better(t, maxima, u, x, c, x);
  m |= better(t, maxima, d, x, c, x);
  if (conn == 8) {
    m |= better(t, maxima, u, l, c, x);
    m |= better(t, maxima, u, r, c, x);
    m |= better(t, maxima, d, l, c, x);
    m |= better(t, maxima, d, r, c, x);
  }
  return m;
}

/* The first marks of a row (c; u and d the rows around it, or c itself where there is
 * none: a pixel is never better than itself, nor than one it is compared with anyway). */
INLINE void mark_row(pxl_type t, bool maxima, int conn, const void *u, const void *c, const void *d, int w,
                     uint8_t *m) {
  m[0] = marked(t, maxima, conn, u, c, d, 0, 0, w > 1);
  for (int x = 1; x < w - 1; x++) m[x] = marked(t, maxima, conn, u, c, d, x - 1, x, x + 1);
  if (w > 1) m[w - 1] = marked(t, maxima, conn, u, c, d, w - 2, w - 1, w - 1);
}

/* Spreads the marks of the stacked pixels to their unmarked equal neighbours in rows
 * [y0, y1), and theirs, until the stack is empty. */
INLINE void spread(pxl_type t, const Ext *E, int y0, int y1, Stack *st) {
  static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
  int w = E->in->width;
  while (st->n > 0) {
    uint32_t e = st->v[--st->n];
    int x = (int)(e & 0xFFFF), y = (int)(e >> 16);
    const void *c = image_row(E->in, y);
    for (int k = 0; k < E->conn; k++) {
      int nx = x + dx[k], ny = y + dy[k];
      if (nx < 0 || nx >= w || ny < y0 || ny >= y1) continue;
      uint8_t *m = &E->mark[(size_t)ny * w + nx];
      if (*m || !eq(t, image_row(E->in, ny), nx, c, x)) continue;
      *m = 1;
      stack_push(st, (uint32_t)ny << 16 | (uint32_t)nx);
    }
  }
}

/* Whether pixel x of row c (marks m) has an equal marked neighbour in row a (marks ma):
 * a == c: the one at x + dir; else those at x - 1 .. x + 1 (conn 4: x). */
INLINE bool takes(pxl_type t, int conn, int w, const void *c, const uint8_t *m, const void *a, const uint8_t *ma, int x,
                  int dir) {
  if (a == c) return x + dir >= 0 && x + dir < w && m[x + dir] && eq(t, c, x + dir, c, x);
  bool b = ma[x] && eq(t, a, x, c, x);
  if (conn == 8)
    b = b || (x > 0 && ma[x - 1] && eq(t, a, x - 1, c, x)) || (x + 1 < w && ma[x + 1] && eq(t, a, x + 1, c, x));
  return b;
}

/* The strip of rows [y0, y1) on its own: first marks, then Vincent's scheme for a binary
 * reconstruction: a forward scan in which an unmarked pixel takes the mark of an equal
 * neighbour scanned before it (left; above, within the strip), a backward scan the same
 * way round, stacking the pixels marked there (their neighbours after them are passed),
 * and the stack spread. Then no unmarked pixel of the strip has an equal marked
 * neighbour in the strip. */
INLINE void scan_strip(pxl_type t, Ext *E, int y0, int y1, Stack *st) {
  int w = E->in->width, h = E->in->height, conn = E->conn;
  for (int y = y0; y < y1; y++) {
    const void *c = image_row(E->in, y), *u = y > 0 ? image_row(E->in, y - 1) : c;
    const void *d = y + 1 < h ? image_row(E->in, y + 1) : c;
    if (E->maxima)
      mark_row(t, true, conn, u, c, d, w, E->mark + (size_t)y * w);
    else
      mark_row(t, false, conn, u, c, d, w, E->mark + (size_t)y * w);
  }
  for (int y = y0; y < y1; y++) {
    const void *c = image_row(E->in, y);
    uint8_t *m = E->mark + (size_t)y * w;
    for (int x = 0; x < w; x++)
      if (!m[x])
        m[x] = takes(t, conn, w, c, m, c, m, x, -1) ||
               (y > y0 && takes(t, conn, w, c, m, image_row(E->in, y - 1), m - w, x, 0));
  }
  for (int y = y1 - 1; y >= y0; y--) {
    const void *c = image_row(E->in, y);
    uint8_t *m = E->mark + (size_t)y * w;
    for (int x = w - 1; x >= 0; x--)
      if (!m[x] && (takes(t, conn, w, c, m, c, m, x, 1) ||
                    (y + 1 < y1 && takes(t, conn, w, c, m, image_row(E->in, y + 1), m + w, x, 0)))) {
        m[x] = 1;
        stack_push(st, (uint32_t)y << 16 | (uint32_t)x);
      }
  }
  spread(t, E, y0, y1, st);
}

/* Across the strips' boundaries: each pair of equal neighbours on either side of one, one
 * marked and one not, marks the other, whose mark then spreads anywhere. */
INLINE void join_strips(pxl_type t, Ext *E, const int *y0, int nstrips, Stack *st) {
  int w = E->in->width;
  for (int k = 1; k < nstrips; k++) {
    int y = y0[k];
    const void *c = image_row(E->in, y), *u = image_row(E->in, y - 1);
    uint8_t *m = E->mark + (size_t)y * w, *mu = m - w;
    for (int x = 0; x < w; x++)
      for (int i = E->conn == 8 ? x - 1 : x; i <= (E->conn == 8 ? x + 1 : x); i++) {
        if (i < 0 || i >= w || m[x] == mu[i] || !eq(t, u, i, c, x)) continue;
        if (m[x])
          mu[i] = 1, stack_push(st, (uint32_t)(y - 1) << 16 | (uint32_t)i);
        else
          m[x] = 1, stack_push(st, (uint32_t)y << 16 | (uint32_t)x);
      }
  }
  spread(t, E, 0, E->in->height, st);
}

/* One copy of the scans per pixel type. */
#define TYPE_VARIANT(sfx, T)                                                                                           \
  static void scan_##sfx(Ext *E, int y0, int y1, Stack *st) { scan_strip(T, E, y0, y1, st); }                          \
  static void join_##sfx(Ext *E, const int *y0, int n, Stack *st) { join_strips(T, E, y0, n, st); }
TYPE_VARIANT(u8, PXL_U8)
TYPE_VARIANT(i16, PXL_I16)
TYPE_VARIANT(u16, PXL_U16)
TYPE_VARIANT(i32, PXL_I32)
TYPE_VARIANT(u32, PXL_U32)
TYPE_VARIANT(f32, PXL_F32)
TYPE_VARIANT(f64, PXL_F64)
#undef TYPE_VARIANT

/* Row y of out from the marks: 1 where there is none (1 and 0 in out's type are what
 * lane_convert makes of them). */
static void write_row(struct pxl_image *out, int y, const uint8_t *m) {
  int w = out->width;
  void *o = image_row(out, y);
  switch (out->type) {
  case PXL_U8:
    for (int x = 0; x < w; x++) ((uint8_t *)o)[x] = !m[x];
    break;
  case PXL_I16:
  case PXL_U16:
    for (int x = 0; x < w; x++) ((uint16_t *)o)[x] = !m[x];
    break;
  case PXL_I32:
  case PXL_U32:
    for (int x = 0; x < w; x++) ((uint32_t *)o)[x] = !m[x];
    break;
  case PXL_F32:
    for (int x = 0; x < w; x++) ((float *)o)[x] = !m[x];
    break;
  default:
    for (int x = 0; x < w; x++) ((double *)o)[x] = !m[x];
    break;
  }
}

static int fast(const struct pxl_image *in, bool maxima, int conn, int nthreads, struct pxl_image *out, Err *err) {
  int w = in->width, h = in->height;
  int nstrips = nthreads < h ? nthreads : h;
  Ext E = {in, maxima, conn, PXL_MALLOC((size_t)w * (size_t)h)};
  int *y0 = PXL_MALLOC(((size_t)nstrips + 1) * sizeof *y0);
  Stack *st = PXL_CALLOC((size_t)nstrips, sizeof *st);
  int rc = PXL_OK;
  if (!E.mark || !y0 || !st) {
    rc = err_set(err, PXL_ENOMEM, "out of memory for the extrema of a %dx%d image", w, h);
    goto done;
  }
  for (int k = 0; k <= nstrips; k++) y0[k] = (int)((int64_t)h * k / nstrips);
  void (*scan)(Ext *, int, int, Stack *) = scan_f64;
  void (*join)(Ext *, const int *, int, Stack *) = join_f64;
  switch (in->type) {
  case PXL_U8: scan = scan_u8, join = join_u8; break;
  case PXL_I16: scan = scan_i16, join = join_i16; break;
  case PXL_U16: scan = scan_u16, join = join_u16; break;
  case PXL_I32: scan = scan_i32, join = join_i32; break;
  case PXL_U32: scan = scan_u32, join = join_u32; break;
  case PXL_F32: scan = scan_f32, join = join_f32; break;
  default: break;
  }
#pragma omp parallel num_threads(nstrips) if ((int64_t)w * h >= PARALLEL_MIN)
  {
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++) scan(&E, y0[k], y0[k + 1], &st[k]);
#pragma omp single
    join(&E, y0, nstrips, &st[0]);
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++)
      for (int y = y0[k]; y < y0[k + 1]; y++) write_row(out, y, E.mark + (size_t)y * w);
  }
  for (int k = 0; k < nstrips; k++)
    if (st[k].oom) rc = err_set(err, PXL_ENOMEM, "out of memory for the extrema of a %dx%d image", w, h);
done:
  for (int k = 0; st && k < nstrips; k++) PXL_FREE(st[k].v);
  PXL_FREE(E.mark), PXL_FREE(y0), PXL_FREE(st);
  return rc;
}

int ops_regional(const struct pxl_image *in, bool maxima, int conn, const OpsRun *run, struct pxl_image *out,
                 Err *err) {
  if (in->channels != 1) return err_set(err, PXL_EARG, "regional extrema: the image must have one channel");
  if (out->width != in->width || out->height != in->height || out->channels != 1)
    return err_set(err, PXL_EARG, "regional extrema: the output must be %dx%d with one channel", in->width, in->height);
  if (conn != 4 && conn != 8) return err_set(err, PXL_EARG, "regional extrema: connectivity %d (must be 4 or 8)", conn);
  if (run->reference) return reference(in, maxima, conn, out, err);
  int nthreads = run->nthreads > 0 ? run->nthreads : omp_get_num_procs();
  return fast(in, maxima, conn, nthreads, out, err);
}
