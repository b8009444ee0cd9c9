/*
 * reconstruct.c - morphological reconstruction (ops_reconstruct) and the hole filling built
 * on it (ops_fill).
 *
 * Both algorithms work on order keys rather than values: unsigned integers of the pixel
 * type's width whose order is the values' order (i16, i32: the sign bit flipped; floats:
 * the IEEE total order, by flipping the sign bit of positives and every bit of negatives).
 * Reconstruction by erosion is reconstruction by dilation of the complemented keys, so only
 * dilation is written. The min and max are the language's (prelude.h: a NaN operand gives
 * the other operand) with one refinement: -0.0 is below +0.0. pxr_max(-0.0, +0.0) returns
 * its first operand, so a maximum over a neighbourhood would depend on the order it is taken
 * in, and the two algorithms take it in different orders; with the total order the result
 * is a function of the values (and is what pxr_max gives for one of the orders). NaN gets
 * the two keys no number has: in the result it is key 0, below everything, so a dilation
 * passes it by; in the mask it is the top key, so it bounds nothing. The start, min(marker,
 * mask), is a NaN marker's mask and a NaN mask's marker, as pxr_min gives; so the result can
 * be NaN only where the mask is NaN and no number reaches the pixel, and it is then the
 * mask's NaN (bits and all), as pxr_min(dilate(r), mask) gives when both are NaN. Every
 * other result is a marker or mask value, its bits unchanged.
 *
 * Reference: the definition. r = min(dilate(r), mask) over the whole image into a second
 * buffer, repeated until a pass changes nothing (64-bit keys, bounds checked everywhere).
 *
 * Fast: Vincent's hybrid algorithm (IEEE Trans. Image Processing, 1993), on keys of the
 * type's width in arrays with a pad column on each side and a pad row above and below
 * (key 0 in both arrays: a pad pixel never rises and never raises a neighbour, so the loops
 * have no bounds checks). A forward raster scan and a backward anti-raster scan each take,
 * in place, the maximum over the half of the neighbourhood already scanned, bounded by the
 * mask; the backward scan queues every pixel that could still raise a neighbour it has
 * passed; then a FIFO propagates until the queue runs dry. Threads own strips of rows and
 * run the hybrid on their strip alone (a strip's first row does not look up, its last row
 * does not look down, propagation stays inside). Then rounds across the strip boundaries:
 * every strip copies its first and last row aside; then every strip raises its own first
 * and last rows from its neighbours' copies and propagates what rose; until a round raises
 * nothing. Each step only ever sets a pixel to min(a neighbour's value, its mask), which
 * never passes the reconstruction, and the end is a fixed point above the start: the least
 * one, the reconstruction, whatever the order of the steps and the number of strips.
 */
#include "ops/morph.h"

#include <omp.h>
#include <string.h>

#include "interp/interp.h"
#include "util/alloc.h"

#define PARALLEL_MIN 16384 /* fewer pixels run on one thread (the same strips, in turn) */

#define INLINE static inline __attribute__((always_inline))


/* ---- order keys ---- */

/* The largest key of type t's width (the complement of 0 in that width). */
static uint64_t key_top(pxl_type t) {
  int bits = 8 * pxl_type_size(t);
  return bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
}

/* Bytes of an element of type t: pxl_type_size, but folded where t is a constant. */
INLINE size_t type_bytes(pxl_type t) {
  switch (t) {
  case PXL_U8: return 1;
  case PXL_I16:
  case PXL_U16: return 2;
  case PXL_F64: return 8;
  default: return 4;
  }
}

/* The order key of element x of `row` (type t); *nan set for a NaN (left alone otherwise). */
INLINE uint64_t order_key(pxl_type t, const void *row, int x, bool *nan) {
  const char *e = (const char *)row + (size_t)x * type_bytes(t);
  switch (t) {
  case PXL_U8: return *(const uint8_t *)e;
  case PXL_I16: return (uint16_t)(*(const uint16_t *)e ^ 0x8000u);
  case PXL_U16: return *(const uint16_t *)e;
  case PXL_I32: return *(const uint32_t *)e ^ 0x80000000u;
  case PXL_U32: return *(const uint32_t *)e;
  case PXL_F32: {
    uint32_t b;
    memcpy(&b, e, sizeof b);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) *nan = true;
    return b >> 31 ? (uint32_t)~b : b | 0x80000000u;
  }
  default: {
    uint64_t b;
    memcpy(&b, e, sizeof b);
    if ((b & ~(1ull << 63)) > 0x7FF0000000000000ull) *nan = true;
    return b >> 63 ? ~b : b | 1ull << 63;
  }
  }
}

/* The bits of the value whose order key (type t) is k: order_key's inverse. */
INLINE uint64_t key_bits(pxl_type t, uint64_t k) {
  switch (t) {
  case PXL_I16: return k ^ 0x8000u;
  case PXL_I32: return k ^ 0x80000000u;
  case PXL_F32: return k >> 31 ? k & 0x7FFFFFFFu : (uint32_t)~k;
  case PXL_F64: return k >> 63 ? k & ~(1ull << 63) : ~k;
  default: return k;
  }
}

/* The keys of pixel x of the rows mk (marker) and ms (mask), in dilation's terms (erosion:
 * complemented): *r the start, pxr_min(marker, mask) (erosion: pxr_max) with NaN as key 0,
 * *m the bound, NaN as `top`. */
INLINE void start_keys(pxl_type t, bool erode, uint64_t top, const void *mk, const void *ms, int x, uint64_t *r,
                       uint64_t *m) {
  bool nk = false, nm = false;
  uint64_t a = order_key(t, mk, x, &nk), b = order_key(t, ms, x, &nm);
  if (erode) a ^= top, b ^= top;
  *r = nk && nm ? 0 : nk ? b : nm ? a : a < b ? a : b;
  *m = nm ? top : b;
}

/* Stores the result whose key (in start_keys' terms) is k into pixel (x, y) of out: the
 * value's bits when out has the maps' type t, else converted through ops_put. Key 0 of a
 * float type is NaN, which the pixel of mask gives. */
INLINE void store_key(struct pxl_image *out, int x, int y, uint64_t k, pxl_type t, bool erode, uint64_t top,
                      const struct pxl_image *mask) {
  uint64_t bits;
  if ((t == PXL_F32 || t == PXL_F64) && k == 0) {
    const char *e = (const char *)image_row(mask, y) + (size_t)x * type_bytes(t);
    uint32_t b32;
    if (t == PXL_F32)
      memcpy(&b32, e, sizeof b32), bits = b32;
    else
      memcpy(&bits, e, sizeof bits);
  } else {
    bits = key_bits(t, erode ? k ^ top : k);
  }
  if (out->type == t) {
    void *o = image_row(out, y);
    switch (type_bytes(t)) {
    case 1: ((uint8_t *)o)[x] = (uint8_t)bits; break;
    case 2: ((uint16_t *)o)[x] = (uint16_t)bits; break;
    case 4: ((uint32_t *)o)[x] = (uint32_t)bits; break;
    default: ((uint64_t *)o)[x] = bits; break;
    }
    return;
  }
  Lane v;
  switch (t) {
  case PXL_U8: v.i = (uint8_t)bits; break;
  case PXL_I16: v.i = (int16_t)bits; break;
  case PXL_U16: v.i = (uint16_t)bits; break;
  case PXL_I32: v.i = (int32_t)bits; break;
  case PXL_U32: v.i = (uint32_t)bits; break;
  case PXL_F32: {
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, sizeof f);
    v.f = f;
    break;
  }
  default: memcpy(&v.f, &bits, sizeof v.f); break;
  }
  ops_put(out, x, y, v, scalar_of_pxl(t));
}

/* ---- reference ---- */

static int reference(const struct pxl_image *marker, const struct pxl_image *mask, bool erode, int conn,
                     struct pxl_image *out, Err *err) {
  int w = mask->width, h = mask->height;
  pxl_type t = mask->type;
  uint64_t top = key_top(t);
  size_t n = (size_t)w * (size_t)h;
  uint64_t *r = PXL_MALLOC(n * sizeof *r), *next = PXL_MALLOC(n * sizeof *next), *m = PXL_MALLOC(n * sizeof *m);
  if (!r || !next || !m) {
    PXL_FREE(r), PXL_FREE(next), PXL_FREE(m);
    return err_set(err, PXL_ENOMEM, "out of memory for a %dx%d reconstruction", w, h);
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      size_t p = (size_t)y * w + x;
      start_keys(t, erode, top, image_row(marker, y), image_row(mask, y), x, &r[p], &m[p]);
    }
  static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
  for (bool changed = true; changed;) {
    changed = false;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        size_t p = (size_t)y * w + x;
        uint64_t v = r[p];
        for (int k = 0; k < conn; k++) {
          int nx = x + dx[k], ny = y + dy[k];
          if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
          uint64_t q = r[(size_t)ny * w + nx];
          v = q > v ? q : v;
        }
        v = v < m[p] ? v : m[p];
        changed |= v != r[p];
        next[p] = v;
      }
    uint64_t *s = r;
    r = next, next = s;
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) store_key(out, x, y, r[(size_t)y * w + x], t, erode, top, mask);
  PXL_FREE(r), PXL_FREE(next), PXL_FREE(m);
  return PXL_OK;
}

/* ---- fast: Vincent's hybrid algorithm, in strips ---- */

typedef struct {
  const struct pxl_image *marker, *mask;
  bool erode;
  uint64_t top; /* the largest key of the maps' type */
  int w, h;
  size_t s;    /* elements between rows of r and m: w + 2 (a pad column each side) */
  void *r, *m; /* keys of the result so far and of the bound; pixel (x, y) at (y + 1) * s + x + 1 */
} Rec;

/* A FIFO of pixel indices in a ring of a power-of-two size that doubles when full. */
typedef struct {
  uint32_t *q;
  size_t cap, head, n;
  bool oom; /* a push found no memory: the result is wrong, the call fails */
} Fifo;

/* A push onto a full ring: the entries move, in order, to the start of a ring twice the size. */
static void fifo_push_slow(Fifo *f, uint32_t p) {
  uint32_t *q = PXL_MALLOC(2 * f->cap * sizeof *q);
  if (!q) {
    f->oom = true;
    return;
  }
  for (size_t i = 0; i < f->n; i++) q[i] = f->q[(f->head + i) & (f->cap - 1)];
  PXL_FREE(f->q);
  f->q = q, f->cap *= 2, f->head = 0;
  f->q[f->n++] = p;
}

INLINE void fifo_push(Fifo *f, uint32_t p) {
  if (f->n < f->cap)
    f->q[(f->head + f->n++) & (f->cap - 1)] = p;
  else
    fifo_push_slow(f, p);
}

INLINE uint32_t fifo_pop(Fifo *f) {
  uint32_t p = f->q[f->head];
  f->head = (f->head + 1) & (f->cap - 1), f->n--;
  return p;
}

/* Element i of a key array of ks-byte keys. */
INLINE uint64_t ld(int ks, const void *a, size_t i) {
  switch (ks) {
  case 1: return ((const uint8_t *)a)[i];
  case 2: return ((const uint16_t *)a)[i];
  case 4: return ((const uint32_t *)a)[i];
  default: return ((const uint64_t *)a)[i];
  }
}

INLINE void st(int ks, void *a, size_t i, uint64_t v) {
  switch (ks) {
  case 1: ((uint8_t *)a)[i] = (uint8_t)v; break;
  case 2: ((uint16_t *)a)[i] = (uint16_t)v; break;
  case 4: ((uint32_t *)a)[i] = (uint32_t)v; break;
  default: ((uint64_t *)a)[i] = v; break;
  }
}

INLINE uint64_t kmax(uint64_t a, uint64_t b) { return a > b ? a : b; }
INLINE uint64_t kmin(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Index of the pad pixel left of row y: the strip [y0, y1)'s elements are [row0(y0), row0(y1)). */
INLINE size_t row0(const Rec *R, int y) { return (size_t)(y + 1) * R->s; }

/* Row y of the maps into keys (type t), its pad columns 0. */
INLINE void load_row_t(pxl_type t, int ks, Rec *R, int y) {
  const void *mk = image_row(R->marker, y), *ms = image_row(R->mask, y);
  size_t b = row0(R, y);
  st(ks, R->r, b, 0), st(ks, R->m, b, 0);
  st(ks, R->r, b + R->w + 1, 0), st(ks, R->m, b + R->w + 1, 0);
  for (int x = 0; x < R->w; x++) {
    uint64_t r, m;
    start_keys(t, R->erode, R->top, mk, ms, x, &r, &m);
    st(ks, R->r, b + 1 + x, r), st(ks, R->m, b + 1 + x, m);
  }
}

/* Row y of the result (keys of ks bytes) into out. */
INLINE void store_row_t(pxl_type t, int ks, const Rec *R, struct pxl_image *out, int y) {
  size_t b = row0(R, y) + 1;
  for (int x = 0; x < R->w; x++) store_key(out, x, y, ld(ks, R->r, b + x), t, R->erode, R->top, R->mask);
}

/* load_row_t and store_row_t for the maps' type, one of those of ks bytes: ks is a
 * constant in each copy of the passes, so only its types' loops are compiled in. */
INLINE void load_row(int ks, Rec *R, int y) {
  pxl_type t = R->mask->type;
  if (ks == 1)
    load_row_t(PXL_U8, 1, R, y);
  else if (ks == 2 && t == PXL_I16)
    load_row_t(PXL_I16, 2, R, y);
  else if (ks == 2)
    load_row_t(PXL_U16, 2, R, y);
  else if (ks == 4 && t == PXL_F32)
    load_row_t(PXL_F32, 4, R, y);
  else if (ks == 4 && t == PXL_I32)
    load_row_t(PXL_I32, 4, R, y);
  else if (ks == 4)
    load_row_t(PXL_U32, 4, R, y);
  else
    load_row_t(PXL_F64, 8, R, y);
}

INLINE void store_row(int ks, const Rec *R, struct pxl_image *out, int y) {
  pxl_type t = R->mask->type;
  if (ks == 1)
    store_row_t(PXL_U8, 1, R, out, y);
  else if (ks == 2 && t == PXL_I16)
    store_row_t(PXL_I16, 2, R, out, y);
  else if (ks == 2)
    store_row_t(PXL_U16, 2, R, out, y);
  else if (ks == 4 && t == PXL_F32)
    store_row_t(PXL_F32, 4, R, out, y);
  else if (ks == 4 && t == PXL_I32)
    store_row_t(PXL_I32, 4, R, out, y);
  else if (ks == 4)
    store_row_t(PXL_U32, 4, R, out, y);
  else
    store_row_t(PXL_F64, 8, R, out, y);
}

/* Rows [y0, y1) of the maps into keys, and the pad rows for the strips at the image's top
 * and bottom. */
INLINE void load_rows(int ks, Rec *R, int y0, int y1) {
  size_t pad = R->s * ks;
  if (y0 == 0) memset(R->r, 0, pad), memset(R->m, 0, pad);
  if (y1 == R->h) memset((char *)R->r + row0(R, y1) * ks, 0, pad), memset((char *)R->m + row0(R, y1) * ks, 0, pad);
  for (int y = y0; y < y1; y++) load_row(ks, R, y);
}

/* The forward scan of row y: each pixel rises to the maximum over itself, its left
 * neighbour and (`up`) the row above, bounded by its mask. */
INLINE void forward_row(int ks, int conn, Rec *R, int y, bool up) {
  void *r = R->r;
  const void *m = R->m;
  size_t s = R->s, b = row0(R, y) + 1;
  uint64_t left = ld(ks, r, b - 1);
  for (size_t p = b; p < b + (size_t)R->w; p++) {
    uint64_t v = kmax(ld(ks, r, p), left);
    if (up) {
      v = kmax(v, ld(ks, r, p - s));
      if (conn == 8) v = kmax(v, kmax(ld(ks, r, p - s - 1), ld(ks, r, p - s + 1)));
    }
    left = kmin(v, ld(ks, m, p));
    st(ks, r, p, left);
  }
}

/* Whether q, already scanned, can still be raised by value v: it is below v and its mask. */
INLINE bool raisable(int ks, const Rec *R, size_t q, uint64_t v) {
  uint64_t rq = ld(ks, R->r, q);
  return rq < v && rq < ld(ks, R->m, q);
}

/* The backward scan of row y (right to left; `down`: with the row below), queueing every
 * pixel that could raise a neighbour the scan has passed. */
INLINE void backward_row(int ks, int conn, Rec *R, int y, bool down, Fifo *f) {
  void *r = R->r;
  const void *m = R->m;
  size_t s = R->s, b = row0(R, y) + 1;
  for (size_t p = b + (size_t)R->w; p-- > b;) {
    uint64_t v = kmax(ld(ks, r, p), ld(ks, r, p + 1));
    if (down) {
      v = kmax(v, ld(ks, r, p + s));
      if (conn == 8) v = kmax(v, kmax(ld(ks, r, p + s - 1), ld(ks, r, p + s + 1)));
    }
    v = kmin(v, ld(ks, m, p));
    st(ks, r, p, v);
    bool seed = raisable(ks, R, p + 1, v);
    if (down) {
      seed |= raisable(ks, R, p + s, v);
      if (conn == 8) seed = seed || raisable(ks, R, p + s - 1, v) || raisable(ks, R, p + s + 1, v);
    }
    if (seed) fifo_push(f, (uint32_t)p);
  }
}

/* Empties the queue: each pixel taken raises its neighbours within the strip whose
 * elements are [lo, hi) to min(its value, their mask), queueing those that rose. */
INLINE void propagate(int ks, int conn, Rec *R, Fifo *f, size_t lo, size_t hi) {
  ptrdiff_t s = (ptrdiff_t)R->s;
  const ptrdiff_t d[8] = {-s, -1, 1, s, -s - 1, -s + 1, s - 1, s + 1};
  while (f->n) {
    size_t p = fifo_pop(f);
    uint64_t v = ld(ks, R->r, p);
    for (int k = 0; k < conn; k++) {
      size_t q = p + d[k];
      if (q - lo >= hi - lo) continue; /* another strip's, or a pad row */
      uint64_t rq = ld(ks, R->r, q);
      if (rq >= v) continue;
      uint64_t mq = ld(ks, R->m, q);
      if (rq == mq) continue;
      st(ks, R->r, q, kmin(v, mq));
      fifo_push(f, (uint32_t)q);
    }
  }
}

/* The hybrid algorithm on the strip of rows [y0, y1) alone, keys loaded first. */
INLINE void strip_hybrid(int ks, int conn, Rec *R, int y0, int y1, Fifo *f) {
  load_rows(ks, R, y0, y1);
  for (int y = y0; y < y1; y++) {
    if (y > y0)
      forward_row(ks, conn, R, y, true);
    else
      forward_row(ks, conn, R, y, false);
  }
  for (int y = y1 - 1; y >= y0; y--) {
    if (y < y1 - 1)
      backward_row(ks, conn, R, y, true, f);
    else
      backward_row(ks, conn, R, y, false, f);
  }
  propagate(ks, conn, R, f, row0(R, y0), row0(R, y1));
}

/* Raises row y of the strip [y0, y1) from `near`, a copy of the next row of the strip above
 * or below (with its pad columns), queueing what rose; whether anything did. */
INLINE bool pull_row(int ks, int conn, Rec *R, int y, const void *near, Fifo *f) {
  bool rose = false;
  size_t b = row0(R, y);
  for (int x = 1; x <= R->w; x++) {
    uint64_t v = ld(ks, near, x);
    if (conn == 8) v = kmax(v, kmax(ld(ks, near, x - 1), ld(ks, near, x + 1)));
    uint64_t rp = ld(ks, R->r, b + x), mp = ld(ks, R->m, b + x);
    if (v > rp && rp < mp) {
      st(ks, R->r, b + x, kmin(v, mp));
      fifo_push(f, (uint32_t)(b + x));
      rose = true;
    }
  }
  return rose;
}

/* One round on the strip [y0, y1): its first row from `above` (NULL at the top), its last
 * from `below` (NULL at the bottom), then propagation; whether anything rose. */
INLINE bool strip_round(int ks, int conn, Rec *R, int y0, int y1, const void *above, const void *below, Fifo *f) {
  bool rose = false;
  if (above) rose |= pull_row(ks, conn, R, y0, above, f);
  if (below) rose |= pull_row(ks, conn, R, y1 - 1, below, f);
  propagate(ks, conn, R, f, row0(R, y0), row0(R, y1));
  return rose;
}

/* One copy of the strip passes per key size and connectivity, and of the store per key size. */
typedef void (*HybridFn)(Rec *, int, int, Fifo *);
typedef bool (*RoundFn)(Rec *, int, int, const void *, const void *, Fifo *);
typedef void (*StoreFn)(const Rec *, struct pxl_image *, int, int);
#define VARIANT(ks, conn)                                                                                              \
  static void hybrid_##ks##_##conn(Rec *R, int y0, int y1, Fifo *f) { strip_hybrid(ks, conn, R, y0, y1, f); }          \
  static bool round_##ks##_##conn(Rec *R, int y0, int y1, const void *a, const void *b, Fifo *f) {                     \
    return strip_round(ks, conn, R, y0, y1, a, b, f);                                                                  \
  }
#define STORE_VARIANT(ks)                                                                                              \
  static void store_##ks(const Rec *R, struct pxl_image *out, int y0, int y1) {                                        \
    for (int y = y0; y < y1; y++) store_row(ks, R, out, y);                                                            \
  }
STORE_VARIANT(1)
STORE_VARIANT(2)
STORE_VARIANT(4)
STORE_VARIANT(8)
#undef STORE_VARIANT
VARIANT(1, 4)
VARIANT(1, 8)
VARIANT(2, 4)
VARIANT(2, 8)
VARIANT(4, 4)
VARIANT(4, 8)
VARIANT(8, 4)
VARIANT(8, 8)
#undef VARIANT

static int fast(const struct pxl_image *marker, const struct pxl_image *mask, bool erode, int conn, int nthreads,
                struct pxl_image *out, Err *err) {
  int w = mask->width, h = mask->height, ks = pxl_type_size(mask->type);
  size_t s = (size_t)w + 2, cells = s * ((size_t)h + 2);
  if (cells > UINT32_MAX) return err_set(err, PXL_ETOOBIG, "reconstruct: %dx%d is too large", w, h);
  int nstrips = nthreads < h ? nthreads : h;
  Rec R = {marker, mask, erode, 0, w, h, s, NULL, NULL};
  R.top = key_top(mask->type);
  R.r = PXL_MALLOC(cells * ks);
  R.m = PXL_MALLOC(cells * ks);
  char *copies = PXL_MALLOC((size_t)nstrips * 2 * s * ks); /* per strip: its first and last row */
  int *y0 = PXL_MALLOC(((size_t)nstrips + 1) * sizeof *y0);
  bool *rose = PXL_MALLOC((size_t)nstrips * sizeof *rose);
  Fifo *fifo = PXL_CALLOC((size_t)nstrips, sizeof *fifo);
  size_t cap = 16; /* a row's worth to start with: the queue rarely holds more, and grows */
  while (cap < s) cap *= 2;
  bool ok = R.r && R.m && copies && y0 && rose && fifo;
  for (int k = 0; ok && k < nstrips; k++) {
    fifo[k].cap = cap;
    ok = (fifo[k].q = PXL_MALLOC(cap * sizeof *fifo[k].q)) != NULL;
  }
  int rc = PXL_OK;
  if (!ok) {
    rc = err_set(err, PXL_ENOMEM, "out of memory for a %dx%d reconstruction", w, h);
    goto done;
  }
  for (int k = 0; k <= nstrips; k++) y0[k] = (int)((int64_t)h * k / nstrips);
  int v = (ks == 1 ? 0 : ks == 2 ? 1 : ks == 4 ? 2 : 3) * 2 + (conn == 8);
  static const HybridFn HYBRID[8] = {hybrid_1_4, hybrid_1_8, hybrid_2_4, hybrid_2_8,
                                     hybrid_4_4, hybrid_4_8, hybrid_8_4, hybrid_8_8};
  static const RoundFn ROUND[8] = {round_1_4, round_1_8, round_2_4, round_2_8,
                                   round_4_4, round_4_8, round_8_4, round_8_8};
  HybridFn hybrid = HYBRID[v];
  RoundFn round = ROUND[v];
  static const StoreFn STORE[4] = {store_1, store_2, store_4, store_8};
  StoreFn store = STORE[v / 2];
  bool any = nstrips > 1;
#pragma omp parallel num_threads(nstrips) if ((int64_t)w * h >= PARALLEL_MIN)
  {
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++) hybrid(&R, y0[k], y0[k + 1], &fifo[k]);
    while (any) {
#pragma omp for schedule(static, 1)
      for (int k = 0; k < nstrips; k++) {
        char *c = copies + (size_t)k * 2 * s * ks;
        memcpy(c, (char *)R.r + row0(&R, y0[k]) * ks, s * ks);
        memcpy(c + s * ks, (char *)R.r + row0(&R, y0[k + 1] - 1) * ks, s * ks);
      }
#pragma omp for schedule(static, 1)
      for (int k = 0; k < nstrips; k++) {
        const char *above = k > 0 ? copies + ((size_t)(k - 1) * 2 + 1) * s * ks : NULL;
        const char *below = k + 1 < nstrips ? copies + (size_t)(k + 1) * 2 * s * ks : NULL;
        rose[k] = round(&R, y0[k], y0[k + 1], above, below, &fifo[k]);
      }
#pragma omp single
      { /* another round while something rose, unless memory ran out (the call fails) */
        bool oom = false;
        any = false;
        for (int k = 0; k < nstrips; k++) any |= rose[k], oom |= fifo[k].oom;
        any &= !oom;
      }
    }
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++) store(&R, out, y0[k], y0[k + 1]);
  }
  for (int k = 0; k < nstrips; k++)
    if (fifo[k].oom) rc = err_set(err, PXL_ENOMEM, "out of memory for a %dx%d reconstruction", w, h);
done:
  for (int k = 0; fifo && k < nstrips; k++) PXL_FREE(fifo[k].q);
  PXL_FREE(R.r), PXL_FREE(R.m), PXL_FREE(copies), PXL_FREE(y0), PXL_FREE(rose), PXL_FREE(fifo);
  return rc;
}

int ops_reconstruct(const struct pxl_image *marker, const struct pxl_image *mask, bool erode, int conn,
                    const OpsRun *run, struct pxl_image *out, Err *err) {
  if (!image_same_layout(marker, mask) || mask->channels != 1)
    return err_set(err, PXL_EARG, "reconstruct: marker and mask must have one size, one type and one channel");
  if (out->width != mask->width || out->height != mask->height || out->channels != 1)
    return err_set(err, PXL_EARG, "reconstruct: the output must be %dx%d with one channel", mask->width, mask->height);
  if (conn != 4 && conn != 8) return err_set(err, PXL_EARG, "reconstruct: connectivity %d (must be 4 or 8)", conn);
  if (run->reference) return reference(marker, mask, erode, conn, out, err);
  int nthreads = run->nthreads > 0 ? run->nthreads : omp_get_num_procs();
  return fast(marker, mask, erode, conn, nthreads, out, err);
}

/* ---- hole filling ---- */

int ops_fill(const struct pxl_image *in, int conn, const OpsRun *run, struct pxl_image *out, Err *err) {
  if (in->channels != 1) return err_set(err, PXL_EARG, "fill: the image must have one channel");
  struct pxl_image *marker;
  int rc = image_new(in->width, in->height, in->type, 1, &marker, err);
  if (rc != PXL_OK) return rc;
  /* The type's largest value (+inf for floats, else the largest key's bits) along the
   * first interior row, copied to the others; the border pixels from `in`. */
  uint64_t most = in->type == PXL_F32   ? 0x7F800000u
                  : in->type == PXL_F64 ? 0x7FF0000000000000ull
                                        : key_bits(in->type, key_top(in->type));
  int w = in->width, h = in->height;
  size_t size = type_bytes(in->type), row = (size_t)w * size;
  char *first = image_row(marker, h > 1 ? 1 : 0);
  for (int x = 0; x < w; x++) memcpy(first + x * size, &most, size); /* little-endian: the value's bytes first */
  for (int y = 0; y < h; y++) {
    char *mr = image_row(marker, y);
    const char *ir = image_row(in, y);
    if (y == 0 || y == h - 1) {
      memcpy(mr, ir, row);
      continue;
    }
    if (y > 1) memcpy(mr, first, row);
    memcpy(mr, ir, size);
    memcpy(mr + row - size, ir + row - size, size);
  }
  rc = ops_reconstruct(marker, in, true, conn, run, out, err);
  image_free(marker);
  return rc;
}
