/*
 * label.c - connected-component labelling (ops_label): neighbouring pixels of equal nonzero
 * value are one component; components are numbered in raster order of their first pixel.
 *
 * Reference: scan the pixels in raster order; an unlabelled foreground pixel is the first
 * pixel of a new component, whose pixels a breadth-first flood fill labels at once.
 *
 * Fast: runs and union-find. A run is a maximal horizontal stretch of one nonzero value (a
 * NaN is a run of its own: it equals nothing). Runs are named by ids that grow in raster
 * order: a strip of rows numbers its runs from its first row times `stride`, and has fewer
 * runs than pixels, so strips never share an id. Union-find over the ids links the larger
 * root under the smaller, so a set's root is its smallest id: the run that holds the
 * component's first pixel. The union-find array (the "slots") is the output's own memory
 * where it may be (ids are then element offsets into it, and a run's slot lies in its own
 * row or one above, within its strip), else a temporary: a buffer the size of the image
 * costs as much to touch for the first time as the whole scan.
 *   1. Each thread scans a strip of rows: it finds a row's runs and unites each with the
 *      equal-valued runs of the row above that touch it (overlap, or for 8-connectivity meet
 *      at a corner), then points every run of the strip straight at the strip's root of its
 *      set, and counts those roots.
 *   2. One thread unites the runs across each strip boundary (a row pair per boundary),
 *      root under root without shortening paths; a root that goes under another leaves its
 *      strip's count. Then each root it put under another is pointed at the final root.
 *   3. An exclusive prefix over the strips' counts gives each strip its first label; each
 *      thread numbers its strip's final roots in id order, which is raster order, writing
 *      the number with LABELLED set into the root's slot.
 *   4. Each thread gives every run of its strip its label, in id order: a run points at its
 *      strip's root, labelled just before it, or (a root put under another in pass 2) at a
 *      final root, labelled in pass 3.
 *   5. Each thread writes its strip's pixels, bottom row first: a row's labels are read
 *      before its pixels are written, and its pixels hold the slots of runs in that row or
 *      below, done with by then.
 * Between passes a barrier; a pass writes only its own strip's slots and reads other
 * strips' slots only where no thread writes in that pass (the final roots, after pass 3).
 */
#include "ops/ops.h"

#include <omp.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util/alloc.h"

/* ---- the map's values: zero, and equality, in the map's type ---- */

/* How values compare. Integer types compare by their bits (i16 as u16, i32 as u32); the
 * float types compare as floats: -0.0 == 0, and NaN equals nothing. */
enum { K_U8, K_U16, K_U32, K_F32, K_F64 };

static int kind_of(pxl_type t) {
  switch (t) {
  case PXL_U8: return K_U8;
  case PXL_I16:
  case PXL_U16: return K_U16;
  case PXL_I32:
  case PXL_U32: return K_U32;
  case PXL_F32: return K_F32;
  default: return K_F64;
  }
}

/* Whether element x of row r is foreground (nonzero). */
static inline bool is_fg(int kind, const void *r, int x) {
  switch (kind) {
  case K_U8: return ((const uint8_t *)r)[x] != 0;
  case K_U16: return ((const uint16_t *)r)[x] != 0;
  case K_U32: return ((const uint32_t *)r)[x] != 0;
  case K_F32: return ((const float *)r)[x] != 0;
  default: return ((const double *)r)[x] != 0;
  }
}

/* Whether element x of row r equals element y of row s. */
static inline bool same(int kind, const void *r, int x, const void *s, int y) {
  switch (kind) {
  case K_U8: return ((const uint8_t *)r)[x] == ((const uint8_t *)s)[y];
  case K_U16: return ((const uint16_t *)r)[x] == ((const uint16_t *)s)[y];
  case K_U32: return ((const uint32_t *)r)[x] == ((const uint32_t *)s)[y];
  case K_F32: return ((const float *)r)[x] == ((const float *)s)[y];
  default: return ((const double *)r)[x] == ((const double *)s)[y];
  }
}

/* ---- reference ---- */

/* The reference: a flood fill from each component's first pixel, met in raster order. */
static int reference(const struct pxl_image *map, int conn, struct pxl_image *out, int64_t *count, Err *err) {
  int w = map->width, h = map->height, kind = kind_of(map->type);
  size_t n = (size_t)w * (size_t)h;
  uint32_t *lab = PXL_CALLOC(n, sizeof *lab); /* 0: background or not reached yet */
  uint32_t *queue = PXL_MALLOC(n * sizeof *queue);
  if (!lab || !queue) {
    PXL_FREE(lab), PXL_FREE(queue);
    return err_set(err, PXL_ENOMEM, "out of memory for labelling a %dx%d image", w, h);
  }
  static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
  uint32_t next = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      size_t p = (size_t)y * w + x;
      if (lab[p] || !is_fg(kind, image_row(map, y), x)) continue;
      lab[p] = ++next;
      size_t head = 0, tail = 0;
      queue[tail++] = (uint32_t)p;
      while (head < tail) {
        size_t q = queue[head++];
        int qx = (int)(q % w), qy = (int)(q / w);
        for (int k = 0; k < conn; k++) {
          int nx = qx + dx[k], ny = qy + dy[k];
          if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
          size_t r = (size_t)ny * w + nx;
          if (lab[r] || !same(kind, image_row(map, qy), qx, image_row(map, ny), nx)) continue;
          lab[r] = next;
          queue[tail++] = (uint32_t)r;
        }
      }
    }
  for (int y = 0; y < h; y++) memcpy(image_row(out, y), lab + (size_t)y * w, (size_t)w * sizeof *lab);
  if (count) *count = next;
  PXL_FREE(lab), PXL_FREE(queue);
  return PXL_OK;
}

/* ---- fast: runs and union-find ---- */

#define PARALLEL_MIN 16384  /* fewer pixels run on one thread (the same strips, in turn) */
#define LABELLED 0x80000000u /* slot bit: the rest is a label, not an id (ids, labels < 2^31) */

typedef struct {
  const struct pxl_image *map; /* the values */
  struct pxl_image *out;       /* the labels */
  int conn;                    /* 4 or 8 */
  int kind;                    /* K_* of the map */
  uint32_t *slot;              /* union-find: per run id its parent (a root its own), later its label */
  size_t stride;               /* strip k's ids start at its first row times this */
  uint32_t *first;             /* per row: the id of its first run */
  uint32_t *end;               /* per row: one past the id of its last run */
} Label;

/* A run: first column | last column << 16 (columns < 65535). */
static inline int span_a(uint32_t s) { return (int)(s & 0xFFFF); }
static inline int span_b(uint32_t s) { return (int)(s >> 16); }

/* Bit i of *st / *en: pixel i of the 64 at p starts / ends a run; p[-1] and p[64] must be
 * readable (the neighbours of the first and last). */
static inline void run_bits_u8(const uint8_t *p, uint64_t *st, uint64_t *en) {
#if defined(__SSE2__)
  uint64_t zero = 0, prev = 0, next = 0;
  for (int k = 0; k < 4; k++) {
    __m128i c = _mm_loadu_si128((const __m128i *)(p + 16 * k));
    __m128i l = _mm_loadu_si128((const __m128i *)(p + 16 * k - 1));
    __m128i r = _mm_loadu_si128((const __m128i *)(p + 16 * k + 1));
    zero |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(c, _mm_setzero_si128())) << 16 * k;
    prev |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(c, l)) << 16 * k;
    next |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(c, r)) << 16 * k;
  }
  *st = ~zero & ~prev;
  *en = ~zero & ~next;
#else
  uint64_t s = 0, e = 0;
  for (int i = 0; i < 64; i++) {
    s |= (uint64_t)(p[i] && p[i] != p[i - 1]) << i;
    e |= (uint64_t)(p[i] && p[i] != p[i + 1]) << i;
  }
  *st = s, *en = e;
#endif
}

/* The runs of a u8 row into span[], their number returned: starts and ends found 64 pixels
 * at a time as bit masks, then visited bit by bit, so that the work is per run and no
 * branch depends on a pixel. The blocks at the row's ends go through a copy padded with
 * zeros (pixels -1 and w are 0). */
static int row_runs_u8(const uint8_t *r, int w, uint32_t *span) {
  int n = 0, ne = 0;
  for (int x = 0; x < w; x += 64) {
    uint8_t pad[66];
    const uint8_t *p = r + x;
    if (x == 0 || x + 65 > w) {
      int len = w - x < 64 ? w - x : 64;
      memset(pad, 0, sizeof pad);
      memcpy(pad + 1, r + x, (size_t)len + (x + len < w));
      if (x > 0) pad[0] = r[x - 1];
      p = pad + 1;
    }
    uint64_t st, en;
    run_bits_u8(p, &st, &en);
    for (; st; st &= st - 1) span[n++] = (uint32_t)(x + __builtin_ctzll(st));
    for (; en; en &= en - 1) span[ne++] |= (uint32_t)(x + __builtin_ctzll(en)) << 16;
  }
  return n;
}

/* The runs of row y into span[] (at most w of them), their number returned. */
static inline __attribute__((always_inline)) int row_runs(int kind, const struct pxl_image *map, int y,
                                                          uint32_t *span) {
  const void *r = image_row(map, y);
  int w = map->width, n = 0;
  if (kind == K_U8) return row_runs_u8(r, w, span);
  for (int x = 0; x < w;) {
    if (!is_fg(kind, r, x)) {
      x++;
      continue;
    }
    int a = x++;
    while (x < w && same(kind, r, x, r, a)) x++;
    span[n++] = (uint32_t)a | (uint32_t)(x - 1) << 16;
  }
  return n;
}

/* The root of id's set, halving the path on the way. */
static inline uint32_t find(uint32_t *slot, uint32_t id) {
  while (slot[id] != id) {
    slot[id] = slot[slot[id]];
    id = slot[id];
  }
  return id;
}

/* The root of id's set, writing nothing: pass 2 keeps the strips' paths as pass 1 left them. */
static inline uint32_t find_ro(const uint32_t *slot, uint32_t id) {
  while (slot[id] != id) id = slot[id];
  return id;
}

/* Calls visit(L, c, p, first) for every run c (ids cid, cid + 1, ...; spans cur[0..nc)) of
 * row y and run p (ids pid, ...; spans up[0..np)) of row y - 1 that touch and hold equal
 * values; `first`: p is the first such run for c. The runs of a row are sorted and
 * disjoint, so one pointer walks the row above. */
#define JOIN_ROWS(L, y, up, np, pid, cur, nc, cid, visit)                                  \
  do {                                                                                   \
    const void *ur_ = image_row((L)->map, (y) - 1), *cr_ = image_row((L)->map, (y));     \
    int reach_ = (L)->conn == 8, j_ = 0;                                                 \
    for (int c_ = 0; c_ < (nc); c_++) {                                                  \
      int a_ = span_a((cur)[c_]), b_ = span_b((cur)[c_]);                                \
      bool first_ = true;                                                                \
      while (j_ < (np) && span_b((up)[j_]) + reach_ < a_) j_++;                          \
      for (int k_ = j_; k_ < (np) && span_a((up)[k_]) <= b_ + reach_; k_++)              \
        if (same(kind, ur_, span_a((up)[k_]), cr_, a_)) {                                \
          visit((L), (cid) + c_, (pid) + k_, first_);                                    \
          first_ = false;                                                                \
        }                                                                                \
    }                                                                                    \
  } while (0)

/* Pass 1's union: c's set and p's set become one; a root fewer when they were two. Until
 * its first union c is a set of its own, the largest id yet: it goes under p's root. */
#define UNITE_IN_STRIP(L, c, p, first)                          \
  do {                                                          \
    uint32_t rp_ = find((L)->slot, p);                          \
    uint32_t rc_ = (first) ? (uint32_t)(c) : find((L)->slot, c); \
    if (rc_ != rp_) {                                           \
      if (rc_ < rp_) (L)->slot[rp_] = rc_;                      \
      else (L)->slot[rc_] = rp_;                                \
      roots--;                                                  \
    }                                                           \
  } while (0)

/* Pass 1 on rows [y0, y1), whose ids start at y0 * stride; returns the number of roots.
 * spans: two rows' worth of runs. One copy per kind of map. */
static inline __attribute__((always_inline)) int64_t scan_strip(int kind, Label *L, int y0, int y1,
                                                                uint32_t *spans) {
  uint32_t base = (uint32_t)(y0 * L->stride), id = base;
  uint32_t *up = spans, *cur = spans + L->map->width;
  int np = 0;
  int64_t roots = 0;
  for (int y = y0; y < y1; y++) {
    int nc = row_runs(kind, L->map, y, cur);
    L->first[y] = id;
    for (int c = 0; c < nc; c++) L->slot[id + c] = id + c;
    roots += nc;
    if (y > y0) JOIN_ROWS(L, y, up, np, L->first[y - 1], cur, nc, id, UNITE_IN_STRIP);
    id += nc;
    L->end[y] = id;
    uint32_t *t = up;
    up = cur, cur = t, np = nc;
  }
  /* Parents are smaller ids of the strip, so in id order a parent is a root already. */
  for (uint32_t i = base; i < id; i++) L->slot[i] = L->slot[L->slot[i]];
  return roots;
}

static int64_t scan_u8(Label *L, int y0, int y1, uint32_t *s) { return scan_strip(K_U8, L, y0, y1, s); }
static int64_t scan_u16(Label *L, int y0, int y1, uint32_t *s) { return scan_strip(K_U16, L, y0, y1, s); }
static int64_t scan_u32(Label *L, int y0, int y1, uint32_t *s) { return scan_strip(K_U32, L, y0, y1, s); }
static int64_t scan_f32(Label *L, int y0, int y1, uint32_t *s) { return scan_strip(K_F32, L, y0, y1, s); }
static int64_t scan_f64(Label *L, int y0, int y1, uint32_t *s) { return scan_strip(K_F64, L, y0, y1, s); }

/* The strip (of those starting at rows strip_y0[0..nstrips)) that holds id. */
static int strip_of(const Label *L, const int *strip_y0, int nstrips, uint32_t id) {
  int k = nstrips - 1;
  while ((uint64_t)strip_y0[k] * L->stride > id) k--;
  return k;
}

/* Pass 2's union: root under root, recorded in moved[] (*nmoved of them). */
#define UNITE_ACROSS(L, c, p, first)                                        \
  do {                                                                      \
    (void)(first);                                                          \
    uint32_t rc_ = find_ro((L)->slot, c), rp_ = find_ro((L)->slot, p);      \
    if (rc_ != rp_) {                                                       \
      uint32_t lo_ = rc_ < rp_ ? rc_ : rp_, hi_ = rc_ < rp_ ? rp_ : rc_;    \
      (L)->slot[hi_] = lo_;                                                 \
      roots[strip_of(L, strip_y0, nstrips, hi_)]--;                         \
      moved[(*nmoved)++] = hi_;                                             \
    }                                                                       \
  } while (0)

/* Pass 2 at the boundary above row y. spans: two rows' worth of runs; moved: room for the
 * runs of rows y - 1 and y (each union puts one set's root under another). */
static void join_boundary(Label *L, int y, const int *strip_y0, int nstrips, int64_t *roots, uint32_t *spans,
                          uint32_t *moved, size_t *nmoved) {
  int kind = L->kind;
  uint32_t *up = spans, *cur = spans + L->map->width;
  int np = row_runs(kind, L->map, y - 1, up), nc = row_runs(kind, L->map, y, cur);
  JOIN_ROWS(L, y, up, np, L->first[y - 1], cur, nc, L->first[y], UNITE_ACROSS);
}

/* Stores 8 copies of v at o (SSE2: two unaligned 16-byte stores). */
static inline void store8(uint32_t *o, uint32_t v) {
#if defined(__SSE2__)
  __m128i q = _mm_set1_epi32((int)v);
  _mm_storeu_si128((__m128i *)o, q);
  _mm_storeu_si128((__m128i *)(o + 4), q);
#else
  for (int i = 0; i < 8; i++) o[i] = v;
#endif
}

/* Pass 5 on row y: every run gets its label (runs: room for the row's runs; labels: as
 * many), the pixels between runs 0. Runs and gaps are mostly short in noisy maps, where a
 * loop per run costs a mispredicted exit each: so each gap and run first gets 8 stores
 * whatever its length (the next one overwrites the excess), and a loop only beyond that;
 * the last few pixels of the row are written exactly. */
static void write_row(const Label *L, int y, uint32_t *runs, uint32_t *labels) {
  int n = row_runs(L->kind, L->map, y, runs), w = L->map->width;
  for (int k = 0; k < n; k++) labels[k] = L->slot[L->first[y] + k] & ~LABELLED;
  uint32_t *o = image_row(L->out, y);
  int x = 0;
  for (int k = 0; k < n; k++) {
    int a = span_a(runs[k]), b = span_b(runs[k]) + 1;
    uint32_t l = labels[k];
    if (b + 7 <= w) { /* every store starts at or before a, or before b: none passes b + 7 */
      store8(o + x, 0);
      for (x += 8; x < a; x += 8) store8(o + x, 0);
      store8(o + a, l);
      for (x = a + 8; x < b; x += 8) store8(o + x, l);
    } else {
      for (; x < a; x++) o[x] = 0;
      for (x = a; x < b; x++) o[x] = l;
    }
    x = b;
  }
  for (; x < w; x++) o[x] = 0;
  if (L->slot == (uint32_t *)L->out->data) /* the padding after the row held slots */
    for (x = w; (size_t)x < L->stride; x++) o[x] = 0;
}

static int fast(const struct pxl_image *map, int conn, int nthreads, struct pxl_image *out, int64_t *count,
                Err *err) {
  int w = map->width, h = map->height;
  int nstrips = nthreads < h ? nthreads : h;
  Label L = {map, out, conn, kind_of(map->type), NULL, 0, NULL, NULL};
  /* The output's memory serves as the slots where it is aligned u32s, every id (below
   * h * stride) leaves room for LABELLED, and the elements between rows (ids use them too)
   * are the output's own: its rows are packed or it owns its memory (its padding is put
   * back to 0 in pass 5); a view's rows are separated by other pixels. Nor where it holds
   * the map (labelled in place): the map is read until pass 5, which reads a row before
   * writing it. Else a temporary with stride w. */
  size_t ostride = out->pitch / sizeof(uint32_t);
  uint32_t *tmp = NULL;
  if (out->pitch % sizeof(uint32_t) == 0 && (uintptr_t)out->data % sizeof(uint32_t) == 0 &&
      (uint64_t)h * ostride < LABELLED && (ostride == (size_t)w || out->alloc) && !image_overlap(map, out)) {
    L.slot = out->data, L.stride = ostride;
  } else if ((uint64_t)h * (uint64_t)w < LABELLED) {
    L.slot = tmp = PXL_MALLOC((size_t)w * (size_t)h * sizeof *tmp), L.stride = (size_t)w;
  } else {
    return err_set(err, PXL_ETOOBIG, "label: %dx%d is too large to label", w, h);
  }
  L.first = PXL_MALLOC((size_t)h * sizeof *L.first);
  L.end = PXL_MALLOC((size_t)h * sizeof *L.end);
  int *strip_y0 = PXL_MALLOC(((size_t)nstrips + 1) * sizeof *strip_y0);
  int64_t *roots = PXL_MALLOC((size_t)nstrips * sizeof *roots);
  uint32_t *rowbuf = PXL_MALLOC((size_t)nstrips * 2 * (size_t)w * sizeof *rowbuf); /* per strip: 2 rows of runs */
  uint32_t *moved = PXL_MALLOC(((size_t)nstrips - 1) * 2 * (size_t)w * sizeof *moved + 1);
  int rc = PXL_OK;
  if (!L.slot || !L.first || !L.end || !strip_y0 || !roots || !rowbuf || !moved) {
    rc = err_set(err, PXL_ENOMEM, "out of memory for labelling a %dx%d image", w, h);
    goto done;
  }
  for (int k = 0; k <= nstrips; k++) strip_y0[k] = (int)((int64_t)h * k / nstrips);
  int64_t (*scan)(Label *, int, int, uint32_t *) = scan_f64;
  switch (L.kind) {
  case K_U8: scan = scan_u8; break;
  case K_U16: scan = scan_u16; break;
  case K_U32: scan = scan_u32; break;
  case K_F32: scan = scan_f32; break;
  }
  int64_t total = 0;
#pragma omp parallel num_threads(nstrips) if ((int64_t)w * h >= PARALLEL_MIN)
  {
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++)
      roots[k] = scan(&L, strip_y0[k], strip_y0[k + 1], rowbuf + (size_t)k * 2 * w);
#pragma omp single
    {
      size_t nmoved = 0;
      for (int k = 1; k < nstrips; k++) join_boundary(&L, strip_y0[k], strip_y0, nstrips, roots, rowbuf, moved, &nmoved);
      for (size_t i = 0; i < nmoved; i++) L.slot[moved[i]] = find_ro(L.slot, moved[i]);
      for (int k = 0; k < nstrips; k++) { /* roots[k] becomes the strip's first label - 1 */
        int64_t c = roots[k];
        roots[k] = total;
        total += c;
      }
    }
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++) { /* pass 3 */
      uint32_t l = (uint32_t)roots[k];
      for (uint32_t id = L.first[strip_y0[k]]; id < L.end[strip_y0[k + 1] - 1]; id++)
        if (L.slot[id] == id) L.slot[id] = LABELLED | ++l;
    }
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++) /* pass 4 */
      for (uint32_t id = L.first[strip_y0[k]]; id < L.end[strip_y0[k + 1] - 1]; id++)
        if (!(L.slot[id] & LABELLED)) L.slot[id] = L.slot[L.slot[id]];
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++) /* pass 5 */
      for (int y = strip_y0[k + 1] - 1; y >= strip_y0[k]; y--)
        write_row(&L, y, rowbuf + (size_t)k * 2 * w, rowbuf + (size_t)k * 2 * w + w);
  }
  if (count) *count = total;
done:
  PXL_FREE(tmp), PXL_FREE(L.first), PXL_FREE(L.end), PXL_FREE(strip_y0), PXL_FREE(roots);
  PXL_FREE(rowbuf), PXL_FREE(moved);
  return rc;
}

int ops_label(const struct pxl_image *map, int conn, const OpsRun *run, struct pxl_image *out, int64_t *count,
              Err *err) {
  if (map->channels != 1)
    return err_set(err, PXL_EARG, "label: the map must have one channel");
  if (out->width != map->width || out->height != map->height || out->channels != 1 ||
      (out->type != PXL_U32 && out->type != PXL_I32))
    return err_set(err, PXL_EARG, "label: the output must be %dx%d, u32 or i32, one channel", map->width,
                   map->height);
  if (conn != 4 && conn != 8) return err_set(err, PXL_EARG, "label: connectivity %d (must be 4 or 8)", conn);
  if (run->reference) return reference(map, conn, out, count, err);
  int nthreads = run->nthreads > 0 ? run->nthreads : omp_get_num_procs();
  return fast(map, conn, nthreads, out, count, err);
}
