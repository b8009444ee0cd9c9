/*
 * distance.c - the distance transform (ops_distance): for every pixel, the distance to the
 * nearest nonzero pixel of a u8 feature image, in the L2, L1 or LINF metric.
 *
 * Reference: L1 and LINF are one breadth-first search from all features at once over 4-
 * resp. 8-neighbours (the depth at which the search reaches a pixel is its distance); L2
 * takes, for every pixel, the minimum over all rows of (the horizontal distance to that
 * row's nearest feature)^2 + (the row offset)^2, which is O(W*H^2) and plainly right.
 *
 * Fast: Meijster, Roerdink and Hesselink's separable algorithm (2000). Phase 1 gives every
 * pixel g, the distance to the nearest feature in its column, by a sweep down and a sweep
 * up over whole rows, so that a row's columns are one vectorised loop (threads own blocks
 * of columns); g is u16, kept in the output's rows when its elements have room. Phase 2
 * takes each row on its own (threads own strips of rows): the distance of (x, y) is the
 * minimum over the columns i of f(x, i) = metric(x - i, g(i)). That is the lower envelope
 * of one function per column, built left to right on a stack in linear time (a column is
 * pushed from where it starts to beat the one below it: Meijster's Sep + 1), then read
 * back. Columns without a feature take no part, nor those that a neighbour beats on both
 * sides; when the image has no feature at all every distance is +infinity. Squared L2
 * distances reach 2 * 65534^2 > 2^32 and are held in 64 bits; only Sep's division, the
 * slowest step, is done in 32 bits where the image is small enough for it.
 *
 * Both algorithms produce the exact distance (integers; squared distances for L2, whose
 * sqrt is then taken in double) and convert it exactly as lane_convert converts an f64 to
 * the output type: the reference through lane_convert itself, the fast one through typed
 * row loops that the tests hold to the same bits.
 */
#include "ops/ops.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "interp/interp.h"
#include "util/alloc.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- storing a value as lane_convert would ---- */

/* Stores v into pixel (x, y) of out through lane_convert: the definition of the result. */
static void put(struct pxl_image *out, int x, int y, double v) { ops_put(out, x, y, (Lane){.f = v}, T_F64); }

/* Square roots of v[0..n) in place. sqrt() in a loop is not vectorised while it may set
 * errno (the library is not built with -fno-math-errno), so SSE2's sqrtpd is spelt out;
 * both are IEEE's correctly rounded square root, so the bits are those of sqrt(). */
static void sqrt_row(double *v, int n) {
  int x = 0;
#if defined(__SSE2__)
  for (; x + 2 <= n; x += 2) _mm_storeu_pd(v + x, _mm_sqrt_pd(_mm_loadu_pd(v + x)));
#endif
  for (; x < n; x++) v[x] = sqrt(v[x]);
}

/* Rounds a value in [0, 2^52) or +inf to the nearest integer, ties to even, as nearbyint
 * does in the default rounding mode: at 2^52 the spacing of doubles is 1, so the addition
 * rounds and the subtraction is exact. A plain expression, so the loops below vectorise. */
static inline double round_even(double v) { return (v + 0x1p52) - 0x1p52; }

/* Stores row y of out from the exact distances v[0..w) (non-negative, or +inf), taking
 * their square roots first when `root` (v then holds squared L2 distances; v is clobbered).
 * Typed loops for the usual types follow lane_convert (f2uN: round to nearest even, then
 * saturate); the rest go through put(). */
static void store_row(struct pxl_image *out, int y, double *v, int w, bool root) {
  if (root) sqrt_row(v, w);
  void *row = image_row(out, y);
  switch (out->type) {
  case PXL_F64: memcpy(row, v, (size_t)w * sizeof *v); break;
  case PXL_F32:
    for (int x = 0; x < w; x++) ((float *)row)[x] = (float)v[x];
    break;
  case PXL_U8:
    for (int x = 0; x < w; x++) {
      double r = round_even(v[x]);
      ((uint8_t *)row)[x] = r >= 255.0 ? 255 : (uint8_t)r;
    }
    break;
  case PXL_U16:
    for (int x = 0; x < w; x++) {
      double r = round_even(v[x]);
      ((uint16_t *)row)[x] = r >= 65535.0 ? 65535 : (uint16_t)r;
    }
    break;
  case PXL_I32:
    for (int x = 0; x < w; x++) {
      double r = round_even(v[x]);
      ((int32_t *)row)[x] = r >= 2147483647.0 ? INT32_MAX : (int32_t)r;
    }
    break;
  case PXL_U32:
    for (int x = 0; x < w; x++) {
      double r = round_even(v[x]);
      ((uint32_t *)row)[x] = r >= 4294967295.0 ? UINT32_MAX : (uint32_t)r;
    }
    break;
  default:
    for (int x = 0; x < w; x++) put(out, x, y, v[x]);
    break;
  }
}

/* ---- reference ---- */

/* L1 (4-neighbour) or LINF (8-neighbour) distances by breadth-first search from every
 * feature at once: a pixel's first visit comes from a neighbour one step nearer. */
static int reference_bfs(const struct pxl_image *feat, int metric, struct pxl_image *out, Err *err) {
  int w = feat->width, h = feat->height;
  size_t n = (size_t)w * (size_t)h;
  int32_t *dist = PXL_MALLOC(n * sizeof *dist); /* -1: not reached yet */
  uint32_t *queue = PXL_MALLOC(n * sizeof *queue);
  if (!dist || !queue) {
    PXL_FREE(dist), PXL_FREE(queue);
    return err_set(err, PXL_ENOMEM, "out of memory for a %dx%d distance transform", w, h);
  }
  size_t head = 0, tail = 0;
  for (int y = 0; y < h; y++) {
    const uint8_t *f = image_row(feat, y);
    for (int x = 0; x < w; x++) {
      size_t p = (size_t)y * w + x;
      dist[p] = f[x] ? 0 : -1;
      if (f[x]) queue[tail++] = (uint32_t)p;
    }
  }
  static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
  int nn = metric == OPS_L1 ? 4 : 8;
  while (head < tail) {
    size_t p = queue[head++];
    int x = (int)(p % w), y = (int)(p / w);
    for (int k = 0; k < nn; k++) {
      int nx = x + dx[k], ny = y + dy[k];
      if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
      size_t q = (size_t)ny * w + nx;
      if (dist[q] >= 0) continue;
      dist[q] = dist[p] + 1;
      queue[tail++] = (uint32_t)q;
    }
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int32_t d = dist[(size_t)y * w + x];
      put(out, x, y, d < 0 ? INFINITY : (double)d);
    }
  PXL_FREE(dist), PXL_FREE(queue);
  return PXL_OK;
}

/* L2 distances: first, per row, every pixel's horizontal distance to the nearest feature of
 * its row (-1: none); then the nearest feature of (x, y) lies in some row y', where it is
 * that row's nearest to column x, so the squared distance is the minimum over y' of
 * hd(x, y')^2 + (y - y')^2. */
static int reference_l2(const struct pxl_image *feat, struct pxl_image *out, Err *err) {
  int w = feat->width, h = feat->height;
  int32_t *hd = PXL_MALLOC((size_t)w * (size_t)h * sizeof *hd);
  if (!hd) return err_set(err, PXL_ENOMEM, "out of memory for a %dx%d distance transform", w, h);
  for (int y = 0; y < h; y++) {
    const uint8_t *f = image_row(feat, y);
    int32_t *r = hd + (size_t)y * w;
    int last = -1; /* column of the nearest feature at or left of x */
    for (int x = 0; x < w; x++) {
      if (f[x]) last = x;
      r[x] = last < 0 ? -1 : x - last;
    }
    last = -1; /* at or right of x */
    for (int x = w - 1; x >= 0; x--) {
      if (f[x]) last = x;
      if (last >= 0 && (r[x] < 0 || last - x < r[x])) r[x] = last - x;
    }
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int64_t best = -1;
      for (int yy = 0; yy < h; yy++) {
        int64_t d = hd[(size_t)yy * w + x];
        if (d < 0) continue;
        int64_t d2 = d * d + (int64_t)(y - yy) * (y - yy);
        if (best < 0 || d2 < best) best = d2;
      }
      put(out, x, y, best < 0 ? INFINITY : sqrt((double)best));
    }
  PXL_FREE(hd);
  return PXL_OK;
}

/* Stores index v (a raster index y * w + x, or -1 for none) into pixel (x, y) of out, a u32
 * or i32 image: -1 is all ones in u32 (4294967295, never an index: 65535^2 - 1 is less). */
static inline void put_index(struct pxl_image *out, int x, int y, int64_t v) {
  void *row = image_row(out, y);
  if (out->type == PXL_U32)
    ((uint32_t *)row)[x] = (uint32_t)v;
  else
    ((int32_t *)row)[x] = (int32_t)v;
}

/* The nearest feature of every pixel by the rule itself: per column, every pixel's vertical
 * distance to the column's nearest feature, the one above on a tie (-1: none); then the
 * columns in turn from the left, a column replacing the best so far only when strictly
 * nearer. So among the nearest features the one with the smallest x wins, and of those the
 * one with the smallest y (the first in column-major order, MATLAB's index order). */
static int reference_nearest(const struct pxl_image *feat, struct pxl_image *out, Err *err) {
  int w = feat->width, h = feat->height;
  int32_t *row = PXL_MALLOC((size_t)w * (size_t)h * sizeof *row); /* row[x * h + y] */
  if (!row) return err_set(err, PXL_ENOMEM, "out of memory for a %dx%d distance transform", w, h);
  for (int x = 0; x < w; x++) { /* the row of each pixel's nearest feature in its column, -1: none */
    int32_t *c = row + (size_t)x * h;
    int last = -1; /* at or above y */
    for (int y = 0; y < h; y++) {
      if (((const uint8_t *)image_row(feat, y))[x]) last = y;
      c[y] = last;
    }
    last = -1; /* at or below: taken only when strictly nearer */
    for (int y = h - 1; y >= 0; y--) {
      if (((const uint8_t *)image_row(feat, y))[x]) last = y;
      if (last >= 0 && (c[y] < 0 || last - y < y - c[y])) c[y] = last;
    }
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int64_t best = -1, at = -1;
      for (int xx = 0; xx < w; xx++) {
        int64_t yy = row[(size_t)xx * h + y];
        if (yy < 0) continue;
        int64_t d2 = (yy - y) * (yy - y) + (int64_t)(x - xx) * (x - xx);
        if (best < 0 || d2 < best) best = d2, at = yy * w + xx;
      }
      put_index(out, x, y, at);
    }
  PXL_FREE(row);
  return PXL_OK;
}

/* ---- fast: Meijster, Roerdink and Hesselink ---- */

#define PARALLEL_MIN 16384 /* fewer pixels run on one thread (the same parts, in turn) */
#define G_NONE 0xFFFF /* g of a column with no feature on the side swept so far */
#define G_ALIGN 32    /* column blocks and g's row stride in elements: 64 bytes of u16 */

/* The part [*a, *b) of [0, n) that is part k of `parts`, cut at multiples of `align`. */
static void split(int n, int parts, int k, int align, int *a, int *b) {
  int64_t chunk = ((int64_t)n + parts - 1) / parts;
  chunk = (chunk + align - 1) / align * align;
  int64_t lo = chunk * k, hi = lo + chunk;
  *a = (int)(lo < n ? lo : n);
  *b = (int)(hi < n ? hi : n);
}

/* Phase 1 on columns [x0, x1): g(x, y) = the distance from (x, y) to the nearest feature in
 * column x, G_NONE when the column has none. A real distance is at most h - 1 <= 65534, so
 * the saturating step (G_NONE stays G_NONE) never mistakes one for G_NONE. u16 keeps g's
 * traffic at two bytes a pixel and the loops sixteen pixels a vector. */
static void column_pass(const struct pxl_image *feat, uint16_t *g, size_t gs, int x0, int x1) {
  int h = feat->height;
  const uint8_t *f = image_row(feat, 0);
  for (int x = x0; x < x1; x++) g[x] = f[x] ? 0 : G_NONE;
  for (int y = 1; y < h; y++) { /* down: the nearest feature at or above */
    const uint16_t *up = g + (size_t)(y - 1) * gs;
    uint16_t *r = g + (size_t)y * gs;
    f = image_row(feat, y);
    for (int x = x0; x < x1; x++) {
      uint16_t n = (uint16_t)(up[x] + (up[x] != G_NONE));
      r[x] = f[x] ? 0 : n;
    }
  }
  for (int y = h - 2; y >= 0; y--) { /* up: or below */
    const uint16_t *dn = g + (size_t)(y + 1) * gs;
    uint16_t *r = g + (size_t)y * gs;
    for (int x = x0; x < x1; x++) {
      uint16_t n = (uint16_t)(dn[x] + (dn[x] != G_NONE));
      r[x] = n < r[x] ? n : r[x];
    }
  }
}

/* One thread's stack for the lower envelope of a row: the columns s[0..q] whose functions
 * make up the envelope left to right, column s[k] the lowest from t[k] to t[k + 1] - 1. */
typedef struct {
  int32_t *s;  /* column of each part */
  int32_t *t;  /* first x of each part (t[0] = 0) */
  int64_t *gg; /* L2: g(s[k])^2; L1, LINF: g(s[k]) */
  int32_t *cols; /* the columns that take part */
  double *v;     /* the row's exact distances (L2: squared) before they are stored */
  int32_t *owner; /* or NULL; else the column of each x's nearest feature (the leftmost of
                   * the nearest: the envelope keeps a column on a tie) */
} Envelope;

/* f(x, i) = the distance from (x, y) to the nearest feature in column i, whose g is gi (its
 * square for L2: then f is the squared distance). At most 2 * 65534^2 < 2^33. */
static inline int64_t f_at(int metric, int64_t x, int64_t i, int64_t gi) {
  int64_t d = x > i ? x - i : i - x;
  if (metric == OPS_L2) return d * d + gi;
  if (metric == OPS_L1) return d + gi;
  return d > gi ? d : gi;
}

/* Sep + 1 of Meijster et al.: the first x from which column u (> i) is strictly nearer than
 * column i; every x after it too (for these metrics, u's lead over i does not shrink as x
 * grows). Called only where u is not strictly nearer at some x >= 0 (the stack's t), so
 * the result is positive and the L2 division's numerator is not negative: truncation is
 * floor. Ties stay with i; either is the same distance. The L2 numerator is below
 * w^2 + h^2: with `wide` false (w, h <= 32767) it fits 31 bits, and a 32-bit division,
 * the slowest step of a row, is half the time of a 64-bit one. */
static inline int64_t start_of(int metric, bool wide, int64_t i, int64_t gi, int64_t u, int64_t gu) {
  if (metric == OPS_L2 && wide) return (u * u - i * i + gu - gi) / (2 * (u - i)) + 1;
  if (metric == OPS_L2) return (int32_t)(u * u - i * i + gu - gi) / (int32_t)(2 * (u - i)) + 1;
  if (metric == OPS_L1) {
    if (gu - gi >= u - i) return INT64_MAX;                    /* never nearer */
    if (gi - gu > u - i) return 0;                             /* nearer everywhere: not met here */
    return (u + i + gu - gi) / 2 + 1;                          /* within (i, u] */
  }
  if (gi <= gu) return (gu + i > (i + u) / 2 ? gu + i : (i + u) / 2) + 1;
  return (u - gi < (i + u) / 2 ? u - gi : (i + u) / 2) + 1;
}

/* Phase 2 on one row: the exact distances of row g (phase 1's) into e->v. Inlined into one
 * copy per metric (and width of L2's division) so that f_at and start_of lose their
 * branches on it. */
static inline __attribute__((always_inline)) void envelope_row(int metric, bool wide, const uint16_t *g, int w,
                                                              Envelope *e) {
  int32_t *s = e->s, *t = e->t, *cols = e->cols;
  int64_t *gg = e->gg;
  /* The columns that can be nearest somewhere: those with a feature, less the strict local
   * maxima of g, one of whose neighbours is at least as near on each side (u's lead over a
   * column to its left does not shrink as x grows), a third of the columns in busy images.
   * Gathered without a branch per column. A row's end has no neighbour beyond it, nor
   * pixels to be nearer to; a single column has none at all and stays. Where the owners
   * are wanted the row's ends stay: column 0 with g 1 ties with column 1 with g 0 at x = 0,
   * and the leftmost of the nearest is the one wanted (an inner local maximum that ties
   * at its own x ties with its left neighbour too, so it may still go). */
  int n = 0, none = w > 1 && !e->owner ? -1 : G_NONE + 1;
  for (int u = 0; u < w; u++) {
    int l = u > 0 ? g[u - 1] : none, r = u + 1 < w ? g[u + 1] : none;
    cols[n] = u;
    n += g[u] != G_NONE && !(g[u] > l && g[u] > r);
  }
  int q = -1;
  for (int k = 0; k < n; k++) {
    int u = cols[k];
    int64_t gu = metric == OPS_L2 ? (int64_t)g[u] * g[u] : g[u];
    while (q >= 0 && f_at(metric, t[q], u, gu) < f_at(metric, t[q], s[q], gg[q])) q--;
    if (q < 0) {
      q = 0, s[0] = u, t[0] = 0, gg[0] = gu;
      continue;
    }
    int64_t x = start_of(metric, wide, s[q], gg[q], u, gu);
    if (x < w) q++, s[q] = u, t[q] = (int32_t)x, gg[q] = gu;
  }
  for (int end = w; q >= 0; end = t[q--]) {
    for (int x = t[q]; x < end; x++) e->v[x] = (double)f_at(metric, x, s[q], gg[q]);
    if (e->owner)
      for (int x = t[q]; x < end; x++) e->owner[x] = s[q];
  }
}

static void envelope_l2(const uint16_t *g, int w, Envelope *e) { envelope_row(OPS_L2, false, g, w, e); }
static void envelope_l2_wide(const uint16_t *g, int w, Envelope *e) { envelope_row(OPS_L2, true, g, w, e); }
static void envelope_l1(const uint16_t *g, int w, Envelope *e) { envelope_row(OPS_L1, false, g, w, e); }
static void envelope_linf(const uint16_t *g, int w, Envelope *e) { envelope_row(OPS_LINF, false, g, w, e); }

/* Row y of the nearest-feature image from the owners of the row's envelope (e->owner) and
 * phase 1's g: in column c the nearest feature is g(c, y) rows above, or below where the
 * row above is no feature (the one above wins a tie: the smaller y). */
static void store_index_row(const struct pxl_image *feat, struct pxl_image *out, int y, const uint16_t *g,
                            const int32_t *owner, bool any) {
  int w = feat->width;
  if (!any) {
    for (int x = 0; x < w; x++) put_index(out, x, y, -1);
    return;
  }
  for (int x = 0; x < w; x++) {
    int c = owner[x], d = g[c];
    int yy = y - d >= 0 && ((const uint8_t *)image_row(feat, y - d))[c] ? y - d : y + d;
    put_index(out, x, y, (int64_t)yy * w + c);
  }
}

/* The transform (index false) or the nearest features' indices (index true, L2 only). */
static int fast(const struct pxl_image *feat, int metric, bool index, int nthreads, struct pxl_image *out,
                Err *err) {
  int w = feat->width, h = feat->height;
  /* g lives in the output's rows where its elements are 2 bytes or more: a row's g is read
   * (into `grow`) before the row's distances overwrite it, and no other row needs it. That
   * spares an image-sized temporary, whose first touch costs a sixth of the transform. Not
   * where the output holds the features (a transform in place), which phase 1 reads. */
  bool in_out = pxl_type_size(out->type) >= 2 && out->pitch % 2 == 0 && (uintptr_t)out->data % 2 == 0 &&
                !image_overlap(feat, out);
  size_t gs = in_out ? out->pitch / 2 : ((size_t)w + G_ALIGN - 1) / G_ALIGN * G_ALIGN;
  /* Per thread: gg and v (8 bytes an entry), s, t, cols and owner (4), a row of g (2), in
   * that order so that each is aligned; threads 64 bytes apart. */
  size_t per_thread = ((size_t)w * (2 * 8 + 4 * 4 + 2) + 63) / 64 * 64;
  uint16_t *tmp = in_out ? NULL : PXL_MALLOC(gs * (size_t)h * sizeof *tmp), *g = in_out ? out->data : tmp;
  char *stacks = PXL_MALLOC(per_thread * (size_t)nthreads);
  if (!g || !stacks) {
    PXL_FREE(tmp), PXL_FREE(stacks);
    return err_set(err, PXL_ENOMEM, "out of memory for a %dx%d distance transform", w, h);
  }
  void (*envelope)(const uint16_t *, int, Envelope *) = metric == OPS_L1     ? envelope_l1
                                                        : metric == OPS_LINF ? envelope_linf
                                                        : w > 32767 || h > 32767 ? envelope_l2_wide
                                                                                 : envelope_l2;
  bool any = false; /* a feature anywhere: some column's g is not G_NONE */
#pragma omp parallel num_threads(nthreads) if ((int64_t)w * h >= PARALLEL_MIN)
  {
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nthreads; k++) {
      int x0, x1;
      split(w, nthreads, k, G_ALIGN, &x0, &x1);
      if (x0 < x1) column_pass(feat, g, gs, x0, x1);
    }
#pragma omp single
    for (int x = 0; x < w && !any; x++) any = g[x] != G_NONE;
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nthreads; k++) {
      int64_t *m8 = (int64_t *)(stacks + per_thread * (size_t)k);
      int32_t *m4 = (int32_t *)(m8 + 2 * (size_t)w);
      Envelope e = {m4, m4 + w, m8, m4 + 2 * (size_t)w, (double *)(m8 + w), index ? m4 + 3 * (size_t)w : NULL};
      uint16_t *grow = (uint16_t *)(m4 + 4 * (size_t)w);
      int y0, y1;
      split(h, nthreads, k, 1, &y0, &y1);
      for (int y = y0; y < y1; y++) {
        const uint16_t *gy = g + (size_t)y * gs;
        if (in_out) gy = memcpy(grow, gy, (size_t)w * sizeof *grow);
        if (any)
          envelope(gy, w, &e);
        else
          for (int x = 0; x < w; x++) e.v[x] = INFINITY;
        if (index)
          store_index_row(feat, out, y, gy, e.owner, any);
        else
          store_row(out, y, e.v, w, metric == OPS_L2);
      }
    }
  }
  PXL_FREE(tmp), PXL_FREE(stacks);
  return PXL_OK;
}

/* The guards both operations share: a u8 feature image, an output of its size, one channel. */
static int check_args(const char *what, const struct pxl_image *feat, const struct pxl_image *out, Err *err) {
  if (feat->type != PXL_U8 || feat->channels != 1)
    return err_set(err, PXL_EARG, "%s: the feature image must be u8 with one channel", what);
  if (out->width != feat->width || out->height != feat->height || out->channels != 1)
    return err_set(err, PXL_EARG, "%s: the output must be %dx%d with one channel", what, feat->width, feat->height);
  return PXL_OK;
}

int ops_distance(const struct pxl_image *feat, int metric, const OpsRun *run, struct pxl_image *out, Err *err) {
  int rc = check_args("distance", feat, out, err);
  if (rc) return rc;
  if (metric != OPS_L2 && metric != OPS_L1 && metric != OPS_LINF)
    return err_set(err, PXL_EARG, "distance: unknown metric %d", metric);
  if (run->reference) return metric == OPS_L2 ? reference_l2(feat, out, err) : reference_bfs(feat, metric, out, err);
  int nthreads = run->nthreads > 0 ? run->nthreads : omp_get_num_procs();
  return fast(feat, metric, false, nthreads, out, err);
}

int ops_nearest(const struct pxl_image *feat, const OpsRun *run, struct pxl_image *out, Err *err) {
  int rc = check_args("nearest", feat, out, err);
  if (rc) return rc;
  if (out->type != PXL_U32 && out->type != PXL_I32)
    return err_set(err, PXL_EARG, "nearest: the output must be u32 or i32");
  if (out->type == PXL_I32 && (int64_t)feat->width * feat->height - 1 > INT32_MAX)
    return err_set(err, PXL_EARG,
                   "nearest: a %dx%d image has indices beyond i32's range: make the output u32 (index "
                   "up to 65535 x 65535)",
                   feat->width, feat->height);
  if (run->reference) return reference_nearest(feat, out, err);
  int nthreads = run->nthreads > 0 ? run->nthreads : omp_get_num_procs();
  return fast(feat, OPS_L2, true, nthreads, out, err);
}
