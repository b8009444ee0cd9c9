/*
 * label.c - connected-component labelling (ops_label): neighbouring pixels of equal nonzero
 * value are one component; components are numbered in raster order of their first pixel.
 *
 * Reference: scan the pixels in raster order; an unlabelled foreground pixel is the first
 * pixel of a new component, whose pixels a breadth-first flood fill labels at once.
 *
 * Fast: units and union-find. A unit is a run - a maximal horizontal stretch of one nonzero
 * value (a NaN is a run of its own: it equals nothing) - or, in an 8-connected u8 map whose
 * nonzero pixels all hold one value (a binary map), a run of a pair of rows: see "lines and
 * units" below, half the units or fewer. Units are named by ids that grow in raster order
 * of their first pixel: a strip of rows numbers its units from its first row times
 * `stride`, and has fewer units than pixels, so strips never share an id. Union-find over
 * the ids links the larger root under the smaller, so a set's root is its smallest id: the
 * unit that holds the component's first pixel. The union-find array (the "slots") is the
 * output's own memory where it may be (ids are then element offsets into it, and a unit's
 * slot lies in its own rows or above, within its strip), else a temporary: a buffer the
 * size of the image costs as much to touch for the first time as the whole scan.
 * Rows are handled as bits, 64 pixels a word: where units start and end, and where a row
 * joins the row above (equal nonzero pixels straight above or, for 8-connectivity, at a
 * corner). A unit's index in its line is a count of the starts up to it, so finding which
 * units touch costs per touching stretch, with no branch on the map's pixels.
 *   1. Each thread scans a strip of rows: it finds a line's units and unites each with the
 *      units of the line above that it touches, then points every unit of the strip
 *      straight at the strip's root of its set, and counts those roots. Pairs are tried
 *      where the map may be binary; a second nonzero value in a strip, or strips of two
 *      values, and pass 1 runs again by rows.
 *   2. One thread unites the units across each strip boundary, root under root; a root
 *      that goes under another leaves its strip's count. Then each root it put under
 *      another is pointed at the final root.
 *   3. An exclusive prefix over the strips' counts gives each strip its first label; each
 *      thread numbers its strip's final roots in id order, which is raster order, writing
 *      the number with LABELLED set into the root's slot.
 *   4. One thread gives each root put under another in pass 2 its final root's label.
 *   5. Each thread writes its strip's pixels, bottom line first: a unit's label is in its
 *      slot (a root) or in that of the root it points at (its strip's, ids below, not yet
 *      overwritten). A line's labels are read before its pixels are written, and its pixels
 *      hold the slots of units in that line or below, done with by then. The rows go out
 *      past the caches (written once, not read here).
 * Between passes a barrier; a pass writes only its own strip's slots and reads other
 * strips' slots only where no thread writes in that pass.
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

/* ---- fast: units, bits and union-find ---- */

#define PARALLEL_MIN 16384   /* fewer pixels run on one thread (the same strips, in turn) */
#define LABELLED 0x80000000u /* slot bit: the rest is a label, not an id (ids, labels < 2^31) */

/* A line's bits, 64 pixels a word, bits past the width 0. */
typedef struct {
  uint64_t *st, *en;   /* a unit starts / ends at the pixel */
  uint64_t *top, *bot; /* the foreground of the line's first row (rows: the row), of its last (pairs) */
  uint64_t *ub;        /* pairs: the pixel is in a unit with no pixel in the top row */
  uint32_t *rank;      /* per word: the units with a top-row pixel that start before it */
  uint32_t *rankb;     /* pairs, per word: the other units that start before it */
  uint32_t nt;         /* the units with a top-row pixel */
} Bits;

typedef struct {
  Bits line[2];           /* the line scanned and the one above it */
  uint64_t *o0, *d1, *d3; /* where the two join (join_bits) */
  uint32_t *label;        /* pass 5: a line's labels */
  uint32_t *row[2];       /* pass 5: a line's rows as built, before they go out */
} Scratch;

typedef struct {
  const struct pxl_image *map; /* the values */
  struct pxl_image *out;       /* the labels */
  int conn;                    /* 4 or 8 */
  int kind;                    /* K_* of the map */
  int nw;                      /* words of bits per row */
  bool pairs;                  /* lines are pairs of rows (8-connected, one nonzero value, u8) */
  uint32_t *slot;              /* union-find: per id its parent (a root its own), later its label */
  size_t stride;               /* strip k's ids start at its first row times this */
  uint32_t *first;             /* per line, at its first row: the id of its first unit */
  uint32_t *count;             /* per line: its units */
  uint32_t *ntop;              /* per line: its units with a pixel in its first row */
} Label;

/* ---- bits of u8 rows, 64 pixels at a time ---- */

/* The 64 pixels of row r (w wide) from x, at an address p with p[-1] and p[64] readable:
 * the row itself, or at its ends a copy into pad with 0 outside the row. */
static inline const uint8_t *chunk_u8(const uint8_t *r, int w, int x, uint8_t pad[66]) {
  if (x > 0 && x + 65 <= w) return r + x;
  int len = w - x < 64 ? w - x : 64;
  memset(pad, 0, 66);
  memcpy(pad + 1, r + x, (size_t)len + (x + len < w));
  if (x > 0) pad[0] = r[x - 1];
  return pad + 1;
}

#if defined(__SSE2__)
/* Bit i: byte i of the 64 at p equals the one of q (q: p shifted by -1, 0 or 1). */
static inline uint64_t eq64(const uint8_t *p, const uint8_t *q) {
  uint64_t m = 0;
  for (int k = 0; k < 4; k++)
    m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * k)),
                                                              _mm_loadu_si128((const __m128i *)(q + 16 * k))))
         << 16 * k;
  return m;
}

/* Bit i: byte i of the 64 at p is 0. */
static inline uint64_t zero64(const uint8_t *p) {
  uint64_t m = 0;
  for (int k = 0; k < 4; k++)
    m |= (uint64_t)(uint16_t)_mm_movemask_epi8(
             _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * k)), _mm_setzero_si128()))
         << 16 * k;
  return m;
}
#else
static inline uint64_t eq64(const uint8_t *p, const uint8_t *q) {
  uint64_t m = 0;
  for (int i = 0; i < 64; i++) m |= (uint64_t)(p[i] == q[i]) << i;
  return m;
}

static inline uint64_t zero64(const uint8_t *p) {
  uint64_t m = 0;
  for (int i = 0; i < 64; i++) m |= (uint64_t)(p[i] == 0) << i;
  return m;
}
#endif

/* ---- a row's runs and where two rows join, in any type ---- */

/* Per word of row `row` (w pixels of type T): st, en (bit per pixel that starts / ends a
 * run: a maximal stretch of one nonzero value; a NaN equals nothing, a run of its own),
 * fg (nonzero). */
#define ROW_BITS(T)                                                                  \
  do {                                                                               \
    const T *r_ = row;                                                               \
    for (int i_ = 0; i_ < nw; i_++) {                                                \
      uint64_t s_ = 0, e_ = 0, f_ = 0;                                               \
      for (int b_ = 0, x_ = 64 * i_; b_ < 64 && x_ < w; b_++, x_++) {                \
        T v_ = r_[x_];                                                               \
        f_ |= (uint64_t)(v_ != 0) << b_;                                             \
        s_ |= (uint64_t)(v_ != 0 && (x_ == 0 || r_[x_ - 1] != v_)) << b_;            \
        e_ |= (uint64_t)(v_ != 0 && (x_ == w - 1 || r_[x_ + 1] != v_)) << b_;        \
      }                                                                              \
      st[i_] = s_, en[i_] = e_, fg[i_] = f_;                                         \
    }                                                                                \
  } while (0)

/* The run starts and ends and the foreground of row y as bits. */
static void row_bits(const Label *L, int y, uint64_t *st, uint64_t *en, uint64_t *fg) {
  const void *row = image_row(L->map, y);
  int w = L->map->width, nw = L->nw;
  switch (L->kind) {
  case K_U8:
    for (int i = 0; i < nw; i++) {
      uint8_t pad[66];
      const uint8_t *p = chunk_u8(row, w, 64 * i, pad);
      uint64_t nz = ~zero64(p);
      st[i] = nz & ~eq64(p, p - 1), en[i] = nz & ~eq64(p, p + 1), fg[i] = nz;
    }
    break;
  case K_U16: ROW_BITS(uint16_t); break;
  case K_U32: ROW_BITS(uint32_t); break;
  case K_F32: ROW_BITS(float); break;
  default: ROW_BITS(double); break;
  }
}

/* Per word, where pixels of row `cur` equal nonzero pixels of row `up` above: o0 straight
 * above, d1 above-left, d3 above-right (d1, d3 for 8-connectivity only). */
#define JOIN_BITS(T)                                                                 \
  do {                                                                               \
    const T *c_ = cur, *u_ = up;                                                     \
    for (int i_ = 0; i_ < nw; i_++) {                                                \
      uint64_t o_ = 0, l_ = 0, r_ = 0;                                               \
      for (int b_ = 0, x_ = 64 * i_; b_ < 64 && x_ < w; b_++, x_++) {                \
        T v_ = c_[x_];                                                               \
        o_ |= (uint64_t)(v_ != 0 && u_[x_] == v_) << b_;                             \
        if (eight) {                                                                 \
          l_ |= (uint64_t)(v_ != 0 && x_ > 0 && u_[x_ - 1] == v_) << b_;             \
          r_ |= (uint64_t)(v_ != 0 && x_ < w - 1 && u_[x_ + 1] == v_) << b_;         \
        }                                                                            \
      }                                                                              \
      o0[i_] = o_, d1[i_] = l_, d3[i_] = r_;                                         \
    }                                                                                \
  } while (0)

/* Where row y joins row y - 1, as bits (JOIN_BITS). */
static void join_bits(const Label *L, int y, uint64_t *o0, uint64_t *d1, uint64_t *d3) {
  const void *cur = image_row(L->map, y), *up = image_row(L->map, y - 1);
  int w = L->map->width, nw = L->nw;
  bool eight = L->conn == 8;
  switch (L->kind) {
  case K_U8:
    for (int i = 0; i < nw; i++) {
      uint8_t pc[66], pu[66];
      const uint8_t *c = chunk_u8(cur, w, 64 * i, pc), *u = chunk_u8(up, w, 64 * i, pu);
      uint64_t nz = ~zero64(c); /* and outside the row the copies hold 0 */
      o0[i] = nz & eq64(c, u);
      d1[i] = eight ? nz & eq64(c, u - 1) : 0;
      d3[i] = eight ? nz & eq64(c, u + 1) : 0;
    }
    break;
  case K_U16: JOIN_BITS(uint16_t); break;
  case K_U32: JOIN_BITS(uint32_t); break;
  case K_F32: JOIN_BITS(float); break;
  default: JOIN_BITS(double); break;
  }
}

/* The foreground (nonzero pixels) of u8 row y as bits. With `value` (pass 1), pixels are
 * checked to hold *value where nonzero: 0 at first, the first nonzero pixel's value, -1
 * once another value shows. */
static void fg_bits(const Label *L, int y, uint64_t *fg, int *value) {
  const uint8_t *row = image_row(L->map, y);
  int w = L->map->width;
  uint8_t v[64]; /* *value 64 times, once known */
  if (value && *value > 0) memset(v, *value, sizeof v);
  for (int i = 0; i < L->nw; i++) {
    uint8_t pad[66];
    const uint8_t *p = chunk_u8(row, w, 64 * i, pad);
    fg[i] = ~zero64(p);
    if (!value || !fg[i] || *value < 0) continue;
    if (!*value) *value = p[__builtin_ctzll(fg[i])], memset(v, *value, sizeof v);
    if (fg[i] & ~eq64(p, v)) *value = -1;
  }
}

/* ---- lines and units ----
 * A line is a row, or with `pairs` two rows (the strip's first and second, third and
 * fourth...; its last row may be alone). A unit is a run of a row, or of a pair: a maximal
 * stretch of columns that hold a nonzero pixel in either row. With 8-connectivity and one
 * nonzero value a pair's unit is connected: pixels in one column or in neighbouring columns
 * of two rows touch. A pair has at most half as many units as its rows have runs, and in a
 * pair of spiral rows whose arms run down every other column, half.
 * A line's units are indexed in raster order of their first pixel, so that a set's
 * smallest id holds the component's first pixel: in a pair, the units with a pixel in the
 * top row left to right, then the others left to right. */

/* The units of the line at row y (`rows` rows) as bits: st, en, top; with pairs bot, ub.
 * value: as fg_bits'. */
static void line_bits(const Label *L, int y, int rows, Bits *b, int *value) {
  if (!L->pairs) {
    row_bits(L, y, b->st, b->en, b->top);
    return;
  }
  fg_bits(L, y, b->top, value);
  if (rows == 2) fg_bits(L, y + 1, b->bot, value);
  else memcpy(b->bot, b->top, (size_t)L->nw * sizeof *b->bot);
  int nw = L->nw;
  uint64_t carry = 0, any = 0;
  for (int i = 0; i < nw; i++) {
    uint64_t u = b->top[i] | b->bot[i];
    uint64_t left = i > 0 ? (b->top[i - 1] | b->bot[i - 1]) >> 63 : 0;
    uint64_t right = i + 1 < nw ? (b->top[i + 1] | b->bot[i + 1]) << 63 : 0;
    b->st[i] = u & ~(u << 1 | left), b->en[i] = u & ~(u >> 1 | right);
    /* Adding each unit's start to its pixels outside the top row carries up to the first
     * top-row pixel, or through a unit that has none: the pixels the carry clears (k) are
     * such a unit whole, else the part before its first top-row pixel. Kept in ub. */
    uint64_t v = u & ~b->top[i], sum = v + b->st[i], c1 = sum < v, k;
    k = sum + carry, carry = c1 | (k < sum);
    b->ub[i] = v & ~k, any |= b->ub[i] & b->en[i];
  }
  /* The units with no top-row pixel: the cleared stretches that reach the unit's end,
   * filled down from it (right to left, so within a word in 6 doubling steps); none where
   * no stretch reaches an end. */
  if (!any) {
    memset(b->ub, 0, (size_t)nw * sizeof *b->ub);
    return;
  }
  uint64_t from_above = 0;
  for (int i = nw - 1; i >= 0; i--) {
    uint64_t p = b->ub[i], g = p & (b->en[i] | from_above << 63);
    for (int d = 1; d < 64; d *= 2) g |= p & g >> d, p &= p >> d;
    b->ub[i] = g, from_above = g & 1;
  }
}

/* b->rank (and with pairs b->rankb) from b->st; returns the line's number of units.
 * Inline: it counts bits, which the callers may compile for POPCNT. */
static inline __attribute__((always_inline)) uint32_t line_rank(const Label *L, Bits *b) {
  uint32_t n = 0, nb = 0;
  for (int i = 0; i < L->nw; i++) {
    uint64_t ub = L->pairs ? b->ub[i] : 0;
    b->rank[i] = n, b->rankb[i] = nb;
    n += (uint32_t)__builtin_popcountll(b->st[i] & ~ub), nb += (uint32_t)__builtin_popcountll(b->st[i] & ub);
  }
  b->nt = n;
  return n + nb;
}

/* Where the line at row y joins the line above it (whose last row is y - 1), as bits
 * (JOIN_BITS); `up`, `cur`: their bits (line_bits). */
static void line_join(const Label *L, int y, const Bits *up, const Bits *cur, Scratch *s) {
  if (!L->pairs) {
    join_bits(L, y, s->o0, s->d1, s->d3);
    return;
  }
  int nw = L->nw;
  for (int i = 0; i < nw; i++) {
    uint64_t a = cur->top[i], b = up->bot[i];
    uint64_t left = i > 0 ? up->bot[i - 1] >> 63 : 0, right = i + 1 < nw ? up->bot[i + 1] << 63 : 0;
    s->o0[i] = a & b, s->d1[i] = a & (b << 1 | left), s->d3[i] = a & (b >> 1 | right);
  }
}

/* ---- union-find ---- */

/* The root of id's set: two steps, or on along a longer path (rare: only after its root
 * went under another), which then points id at the root. */
static inline uint32_t find(uint32_t *slot, uint32_t id) {
  uint32_t a = slot[id], b = slot[a];
  if (a == b) return a;
  while (slot[b] != b) b = slot[b];
  slot[id] = b;
  return b;
}

/* The root of id's set in pass 2: one step to its strip's root (pass 1 pointed every unit
 * there), then along the roots that pass 2 put under others, halving that path. Only those
 * roots are written: a unit keeps pointing at its strip's root, where pass 5 looks for its
 * label, and a chain of roots left unshortened grows with every union across a boundary (a
 * spiral crosses it thousands of times), each walked again by the next union. */
static inline uint32_t find_across(uint32_t *slot, uint32_t id) {
  uint32_t r = slot[id];
  while (slot[r] != r) {
    slot[r] = slot[slot[r]];
    r = slot[r];
  }
  return r;
}

/* What a union does: in pass 1 within a strip, in pass 2 across a boundary. */
typedef struct {
  bool across;         /* pass 2 */
  int64_t *roots;      /* pass 2: per strip, the roots */
  const int *strip_y0; /* pass 2: the strips' first rows */
  int nstrips;         /* pass 2 */
  uint32_t *moved;     /* pass 2: the roots put under others */
  size_t *nmoved;      /* pass 2 */
} Union;

/* The strip (of those starting at rows strip_y0[0..nstrips)) that holds id. */
static int strip_of(const Label *L, const int *strip_y0, int nstrips, uint32_t id) {
  int k = nstrips - 1;
  while ((uint64_t)strip_y0[k] * L->stride > id) k--;
  return k;
}

/* Units c and p become one set, under the smaller root. Pass 1 does not branch on the
 * outcome (in a noisy map a coin toss) and stores once, into the larger root's slot (its
 * own id when the two were one set already): a store into the smaller root's slot, even
 * of what it held, would hold up the next union that reads it (in a spiral, every one)
 * until the store has gone through. Pass 2 records the root it moved. */
static inline __attribute__((always_inline)) int unite(const Label *L, const Union *u, uint32_t c, uint32_t p) {
  uint32_t *slot = L->slot;
  if (!u->across) { /* returns the roots it took away (a count kept in a register by the caller) */
    uint32_t rc = find(slot, c), rp = find(slot, p), lo = rc < rp ? rc : rp;
    slot[rc ^ rp ^ lo] = lo, slot[c] = lo, slot[p] = lo;
    return rc != rp;
  }
  uint32_t rc = find_across(slot, c), rp = find_across(slot, p);
  if (rc == rp) return 0;
  uint32_t lo = rc < rp ? rc : rp, hi = rc < rp ? rp : rc;
  slot[hi] = lo;
  u->roots[strip_of(L, u->strip_y0, u->nstrips, hi)]--;
  u->moved[(*u->nmoved)++] = hi;
  return 0;
}

/* One word of a line's bits with what its units' ids take, read once for all the joins
 * in it (the ranks are uint32_t like the slots: read through pointers, they would be read
 * again after every union). */
typedef struct {
  uint64_t st, ub;      /* the word's starts, and (pairs) its pixels of units without a top-row pixel */
  uint32_t top, bottom; /* the ids before those of its first unit with a top-row pixel, and without */
} Word;

/* Word i of the line with bits b whose ids start at id. */
static inline Word word_of(const Label *L, const Bits *b, int i, uint32_t id) {
  Word w = {b->st[i], 0, id + b->rank[i] - 1, 0};
  if (L->pairs) w.ub = b->ub[i], w.bottom = id + b->nt + b->rankb[i] - 1;
  return w;
}

/* The id of the unit that holds pixel k of the word (a pixel of one): the units with a
 * top-row pixel, or the others, that start up to it. Inline: it counts bits, which the
 * callers may compile for POPCNT. */
static inline __attribute__((always_inline)) uint32_t unit_in(Word w, int k) {
  uint64_t upto = (2ull << k) - 1; /* bits 0..k */
  bool bottom = w.ub >> k & 1;
  return (bottom ? w.bottom : w.top) + (uint32_t)__builtin_popcountll(w.st & (bottom ? w.ub : ~w.ub) & upto);
}

/* The id of the unit of the line above (word p, word i of bits b) that holds pixel k + d
 * of the word, d = -1, 0, 1 (a pixel of one): at the word's ends in the word beside. */
static inline __attribute__((always_inline)) uint32_t unit_beside(const Label *L, const Bits *b, int i, uint32_t id,
                                                                  Word p, int k, int d) {
  k += d;
  if (k >= 0 && k < 64) return unit_in(p, k);
  return unit_in(word_of(L, b, i + d, id), k & 63);
}

/* Unites every unit of the line `cur` (ids from cid) with the units of the line `up` above
 * it (ids from pid) that it touches, given where they join (s->o0, d1, d3); returns the
 * roots that went. A pair of units that touches along a stretch is united once, at the
 * stretch's first pixel: o0 starts a stretch where the pixel to its left joins nothing
 * above or starts another run (rows of several values); a diagonal matters only where no
 * straight join beside it already unites the same two units.
 * In pass 1 a unit's first join comes before its others: the unit is then alone in its set
 * (until then no union touches it), unite's quick case, with no test. Where a unit's first
 * join is: adding the unit's start to its pixels that join nothing carries up to it. */
static inline __attribute__((always_inline)) int64_t join_lines(const Label *L, const Union *u, const Bits *up,
                                                                uint32_t pid, const Bits *cur, uint32_t cid,
                                                                const Scratch *s) {
  int nw = L->nw;
  int64_t gone = 0;
  uint64_t carry = 0; /* out of the word before */
  for (int i = 0; i < nw; i++) {
    uint64_t o = s->o0[i], left = i > 0 ? s->o0[i - 1] >> 63 : 0, right = i + 1 < nw ? s->o0[i + 1] << 63 : 0;
    uint64_t e0 = o & (~(o << 1 | left) | cur->st[i]), e1 = 0, e3 = 0, f = 0;
    if (L->conn == 8) e1 = s->d1[i] & ~(o | o << 1 | left), e3 = s->d3[i] & ~(o | o >> 1 | right);
    uint64_t e = e0 | e1 | e3;
    if (!u->across) {
      uint64_t st = cur->st[i], next = i + 1 < nw ? cur->st[i + 1] << 63 : 0;
      uint64_t unit = L->pairs ? cur->top[i] | cur->bot[i] : cur->top[i];
      /* Not through a pixel before another unit's start (runs of two values may touch). */
      uint64_t m = unit & ~e & ~(st >> 1 | next), sum = m + st, c1 = sum < m, k = sum + carry;
      carry = c1 | (k < sum);
      f = k & e;
    }
    if (!e) continue;
    Word c = word_of(L, cur, i, cid), p = word_of(L, up, i, pid);
    /* The first joins (unite's quick case), then the others: at a pixel of f one fewer. */
    uint64_t f0 = f & e0, f1 = f & ~e0 & e1, f3 = f & ~e0 & ~e1;
    gone += __builtin_popcountll(f);
    for (; f0; f0 &= f0 - 1) {
      int k = __builtin_ctzll(f0);
      L->slot[unit_in(c, k)] = L->slot[unit_in(p, k)];
    }
    for (; f1; f1 &= f1 - 1) {
      int k = __builtin_ctzll(f1);
      L->slot[unit_in(c, k)] = L->slot[unit_beside(L, up, i, pid, p, k, -1)];
    }
    for (; f3; f3 &= f3 - 1) {
      int k = __builtin_ctzll(f3);
      L->slot[unit_in(c, k)] = L->slot[unit_beside(L, up, i, pid, p, k, 1)];
    }
    e3 &= ~(f & ~e0 & ~e1), e1 &= ~(f & ~e0), e0 &= ~f;
    for (; e0; e0 &= e0 - 1) {
      int k = __builtin_ctzll(e0);
      gone += unite(L, u, unit_in(c, k), unit_in(p, k));
    }
    for (; e1; e1 &= e1 - 1) {
      int k = __builtin_ctzll(e1);
      gone += unite(L, u, unit_in(c, k), unit_beside(L, up, i, pid, p, k, -1));
    }
    for (; e3; e3 &= e3 - 1) {
      int k = __builtin_ctzll(e3);
      gone += unite(L, u, unit_in(c, k), unit_beside(L, up, i, pid, p, k, 1));
    }
  }
  return gone;
}

/* ---- the passes ---- */

/* The first row of the line that ends strip [y0, y1). */
static int last_line(const Label *L, int y0, int y1) { return L->pairs ? y0 + (y1 - 1 - y0) / 2 * 2 : y1 - 1; }

/* Pass 1 on rows [y0, y1), whose ids start at y0 * stride: returns the number of roots and
 * in *stop one past the strip's last id. Every unit then points at its strip's root. With
 * pairs, *value: the strip's nonzero value (fg_bits), and at -1 the scan stops there. */
static inline __attribute__((always_inline)) int64_t scan_strip(Label *L, int y0, int y1, Scratch *s,
                                                                uint32_t *stop, int *value) {
  uint32_t base = (uint32_t)(y0 * L->stride), id = base;
  int64_t roots = 0;
  Union u = {.across = false};
  int step = L->pairs ? 2 : 1;
  *value = 0;
  for (int y = y0, k = 0; y < y1; y += step, k ^= 1) {
    Bits *cur = &s->line[k], *up = &s->line[k ^ 1];
    line_bits(L, y, y1 - y < step ? 1 : step, cur, value);
    if (*value < 0) break;
    uint32_t n = line_rank(L, cur);
    L->first[y] = id, L->count[y] = n, L->ntop[y] = cur->nt;
    for (uint32_t i = 0; i < n; i++) L->slot[id + i] = id + i;
    roots += n;
    if (y > y0) {
      line_join(L, y, up, cur, s);
      roots -= join_lines(L, &u, up, L->first[y - step], cur, id, s);
    }
    id += n;
  }
  /* Parents are smaller ids of the strip, so in id order a parent is a root already. */
  for (uint32_t i = base; i < id; i++) L->slot[i] = L->slot[L->slot[i]];
  *stop = id;
  return roots;
}

/* Pass 2 at the boundary above row y, the first of a strip whose neighbour above starts at
 * row yu. */
static inline __attribute__((always_inline)) void join_boundary(Label *L, int yu, int y, int y1, const Union *u,
                                                                Scratch *s) {
  int step = L->pairs ? 2 : 1, top = last_line(L, yu, y);
  Bits *up = &s->line[0], *cur = &s->line[1];
  line_bits(L, top, y - top, up, NULL);
  line_rank(L, up);
  line_bits(L, y, y1 - y < step ? 1 : step, cur, NULL);
  line_rank(L, cur);
  line_join(L, y, up, cur, s);
  join_lines(L, u, up, L->first[top], cur, L->first[y], s);
}

/* Passes 1 and 2 are the ones that count bits: where the compiler's target may lack
 * POPCNT but the machine has it, a copy built for it (count_bits picks). */
static int64_t scan_plain(Label *L, int y0, int y1, Scratch *s, uint32_t *stop, int *value) {
  return scan_strip(L, y0, y1, s, stop, value);
}
static void boundary_plain(Label *L, int yu, int y, int y1, const Union *u, Scratch *s) {
  join_boundary(L, yu, y, y1, u, s);
}
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && !defined(__POPCNT__)
__attribute__((target("popcnt"))) static int64_t scan_popcnt(Label *L, int y0, int y1, Scratch *s, uint32_t *stop,
                                                            int *value) {
  return scan_strip(L, y0, y1, s, stop, value);
}
__attribute__((target("popcnt"))) static void boundary_popcnt(Label *L, int yu, int y, int y1, const Union *u,
                                                              Scratch *s) {
  join_boundary(L, yu, y, y1, u, s);
}
static bool count_bits(void) { return __builtin_cpu_supports("popcnt"); }
#else
#define scan_popcnt scan_plain
#define boundary_popcnt boundary_plain
static bool count_bits(void) { return false; }
#endif

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

/* Stores at o the 8 pixels of u8 map m: v where m is nonzero, else 0. */
static inline void store8_masked(uint32_t *o, uint32_t v, const uint8_t *m) {
#if defined(__SSE2__)
  __m128i z = _mm_cmpeq_epi8(_mm_loadl_epi64((const __m128i *)m), _mm_setzero_si128());
  __m128i z16 = _mm_unpacklo_epi8(z, z), q = _mm_set1_epi32((int)v);
  _mm_storeu_si128((__m128i *)o, _mm_andnot_si128(_mm_unpacklo_epi16(z16, z16), q));
  _mm_storeu_si128((__m128i *)(o + 4), _mm_andnot_si128(_mm_unpackhi_epi16(z16, z16), q));
#else
  for (int i = 0; i < 8; i++) o[i] = m[i] ? v : 0;
#endif
}

/* A unit's label: in its slot (a root), else in its root's (a root moved in pass 2
 * too). Read without a branch: in a noisy map whether a unit is a root is a coin toss. */
static inline uint32_t label_of(const uint32_t *slot, uint32_t id) {
  uint32_t v = slot[id], labelled = -(v >> 31);
  return slot[(id & labelled) | (v & ~labelled)] & ~LABELLED;
}

/* A line's units in column order: a cursor over its start and end bits. */
typedef struct {
  const uint64_t *st, *en;
  int is, ie;      /* the words the next start and end are in */
  uint64_t ws, we; /* what is left of them */
} Cursor;

/* The next unit: columns [*a, *e). */
static inline void next_unit(Cursor *c, int *a, int *e) {
  while (!c->ws) c->ws = c->st[++c->is];
  while (!c->we) c->we = c->en[++c->ie];
  *a = 64 * c->is + __builtin_ctzll(c->ws), *e = 64 * c->ie + __builtin_ctzll(c->we) + 1;
  c->ws &= c->ws - 1, c->we &= c->we - 1;
}

/* The labels of the line at row y into label[], in id order; returns whether they are
 * all one (then only label[0] may be set). First whether all its units point at one root
 * (a loop compilers vectorize): in a spiral every line's do. */
static bool line_labels(const Label *L, int y, uint32_t *label) {
  const uint32_t *slot = L->slot + L->first[y];
  uint32_t n = L->count[y], differ = 0;
  for (uint32_t k = 0; k < n; k++) differ |= slot[k] ^ slot[0];
  if (!differ) {
    if (n) label[0] = label_of(L->slot, L->first[y]);
    return true;
  }
  differ = 0;
  for (uint32_t k = 0; k < n; k++) label[k] = label_of(L->slot, L->first[y] + k), differ |= label[k] ^ label[0];
  return !differ;
}

/* Writes the runs of a row (general lines) into o (w pixels and 8 to spare): n runs with
 * labels label[]. Runs and gaps are mostly short in noisy maps, where a loop per run costs
 * a mispredicted exit each: so each gap and run gets 8 stores whatever its length (the
 * next one overwrites the excess), and a loop only beyond that. */
static void write_runs(uint32_t *o, int w, const Bits *b, uint32_t n, const uint32_t *label) {
  Cursor c = {b->st, b->en, 0, 0, b->st[0], b->en[0]};
  int x = 0, a, e;
  for (uint32_t k = 0; k < n; k++) {
    next_unit(&c, &a, &e);
    uint32_t l = label[k];
    store8(o + x, 0);
    if (a - x > 8)
      for (int p = x + 8; p < a; p += 8) store8(o + p, 0);
    store8(o + a, l);
    if (e - a > 8)
      for (int p = a + 8; p < e; p += 8) store8(o + p, l);
    x = e;
  }
  for (; x < w; x += 8) store8(o + x, 0);
}

/* Stores [x, a) of rows o0, o1 (map rows m0, m1) as label l where the map is nonzero, else
 * 0, 8 pixels at a time: the last store may pass a (not the row's end), for the next
 * stretch to overwrite. */
static inline void stretch(uint32_t *o0, uint32_t *o1, const uint8_t *m0, const uint8_t *m1, int w, int x, int a,
                           uint32_t l) {
  for (int end = a + 7 <= w ? a : w - 7; x < end; x += 8)
    store8_masked(o0 + x, l, m0 + x), store8_masked(o1 + x, l, m1 + x);
  for (; x < a; x++) o0[x] = m0[x] ? l : 0, o1[x] = m1[x] ? l : 0;
}

/* Writes the units of a pair (or of its last row alone: o1 == o0) into rows o0, o1 whose
 * map rows are m0, m1, with labels label[] in id order: those with a top-row pixel first
 * (nt of them), then the others. A unit also covers background pixels, so the stores take
 * the map's pixels as a mask; then units in a row with one label (a component's, often
 * all of a row's) are written as one stretch, the gaps between them with it (masked to
 * 0): a row costs per 8 pixels and per change of label. */
static void write_pairs(uint32_t *o0, uint32_t *o1, const uint8_t *m0, const uint8_t *m1, int w, const Bits *b,
                        const uint32_t *label, uint32_t nt) {
  uint32_t k = 0, kb = 0, l = 0; /* l: the label of the stretch from x */
  int x = 0;
  for (int i = 0; i < (w + 63) / 64; i++)
    for (uint64_t m = b->st[i]; m; m &= m - 1, k++) {
      uint32_t bottom = (uint32_t)(b->ub[i] >> __builtin_ctzll(m) & 1), lk = label[bottom ? nt + kb : k - kb];
      kb += bottom;
      if (lk == l) continue;
      int a = 64 * i + __builtin_ctzll(m);
      stretch(o0, o1, m0, m1, w, x, a, l);
      x = a, l = lk;
    }
  stretch(o0, o1, m0, m1, w, x, w, l);
}

/* Copies n u32 from src to dst past the caches where it can (SSE2: 16-byte aligned
 * streaming stores): a row written once and not read again here needs no read of what it
 * held, which ordinary stores cost, half the memory traffic of the pass. */
static void put_row(uint32_t *dst, const uint32_t *src, size_t n) {
  size_t i = 0;
#if defined(__SSE2__)
  for (; i < n && (uintptr_t)(dst + i) % 16; i++) dst[i] = src[i];
  for (; i + 4 <= n; i += 4) _mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
#endif
  for (; i < n; i++) dst[i] = src[i];
}

/* Puts out row o of n pixels, the first w label l where u8 map row m is nonzero, else 0
 * (as put_row, past the caches). */
static void put_masked(uint32_t *o, const uint8_t *m, int w, size_t n, uint32_t l) {
  size_t x = 0;
#if defined(__SSE2__)
  for (; x < (size_t)w && (uintptr_t)(o + x) % 16; x++) o[x] = m[x] ? l : 0;
  __m128i q = _mm_set1_epi32((int)l), z = _mm_setzero_si128();
  for (; x + 16 <= (size_t)w; x += 16) {
    __m128i b = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(m + x)), z);
    __m128i lo = _mm_unpacklo_epi8(b, b), hi = _mm_unpackhi_epi8(b, b);
    _mm_stream_si128((__m128i *)(o + x), _mm_andnot_si128(_mm_unpacklo_epi16(lo, lo), q));
    _mm_stream_si128((__m128i *)(o + x + 4), _mm_andnot_si128(_mm_unpackhi_epi16(lo, lo), q));
    _mm_stream_si128((__m128i *)(o + x + 8), _mm_andnot_si128(_mm_unpacklo_epi16(hi, hi), q));
    _mm_stream_si128((__m128i *)(o + x + 12), _mm_andnot_si128(_mm_unpackhi_epi16(hi, hi), q));
  }
#endif
  for (; x < (size_t)w; x++) o[x] = m[x] ? l : 0;
  for (; x < n; x++) o[x] = 0;
}

/* Pass 5 on the line at row y (`rows` rows): its units' labels into its pixels. The labels
 * are read first: a line's slots may lie in its own rows (a strip's first lines, dense
 * maps). A line of one label (a spiral's, nearly every one) goes straight out; others are
 * built in s->row, then put out whole. */
static void write_line(const Label *L, int y, int rows, Scratch *s) {
  Bits *b = &s->line[0];
  bool one = line_labels(L, y, s->label);
  int w = L->map->width;
  /* Where the slots were the output's own, the padding after a row held some: it goes
   * out as 0 with the row. */
  size_t n = L->slot == (uint32_t *)L->out->data ? L->stride : (size_t)w;
  /* One label (or none) in a u8 map: every nonzero pixel of the line has it, so no need of
   * the units, nor of a row to build. */
  if (one && L->kind == K_U8) {
    for (int r = rows - 1; r >= 0; r--)
      put_masked(image_row(L->out, y + r), image_row(L->map, y + r), w, n, L->count[y] ? s->label[0] : 0);
    return;
  }
  if (one)
    for (uint32_t k = 1; k < L->count[y]; k++) s->label[k] = s->label[0];
  uint32_t *r0 = s->row[0], *r1 = rows == 2 ? s->row[1] : r0;
  line_bits(L, y, rows, b, NULL);
  if (L->pairs)
    write_pairs(r0, r1, image_row(L->map, y), image_row(L->map, y + rows - 1), w, b, s->label, L->ntop[y]);
  else
    write_runs(r0, w, b, L->count[y], s->label);
  for (int r = 0; r < rows; r++) {
    for (size_t x = (size_t)w; x < n; x++) s->row[r][x] = 0;
    put_row(image_row(L->out, y + r), s->row[r], n);
  }
}

/* Pass 3 on the ids [id, stop) of a strip with `count` roots: numbers the roots l + 1, l + 2,
 * ... in id order, LABELLED in their slots. Where roots are few (under one id in 8) ids are
 * compared with their slots four at a time, a root handled when found; else each id
 * without a branch (masks: compilers make branches of ?:), as in a noisy map whether a
 * unit is a root is a coin toss. */
static void number_roots(uint32_t *slot, uint32_t id, uint32_t stop, uint32_t l, uint32_t count) {
  if ((uint64_t)count * 8 < stop - id) {
#if defined(__SSE2__)
    __m128i ids = _mm_setr_epi32((int)id, (int)id + 1, (int)id + 2, (int)id + 3), four = _mm_set1_epi32(4);
    for (; id + 4 <= stop; id += 4, ids = _mm_add_epi32(ids, four))
      if (_mm_movemask_epi8(_mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(slot + id)), ids)))
        for (uint32_t i = id; i < id + 4; i++)
          if (slot[i] == i) slot[i] = LABELLED | ++l;
#endif
    for (; id < stop; id++)
      if (slot[id] == id) slot[id] = LABELLED | ++l;
    return;
  }
  for (; id < stop; id++) {
    uint32_t v = slot[id], root = -(uint32_t)(v == id);
    l -= root;
    slot[id] = ((LABELLED | l) & root) | (v & ~root);
  }
}

static int fast(const struct pxl_image *map, int conn, int nthreads, struct pxl_image *out, int64_t *count,
                Err *err) {
  int w = map->width, h = map->height;
  int nstrips = nthreads < h ? nthreads : h, nw = (w + 63) / 64;
  Label L = {map, out, conn, kind_of(map->type), nw, false, NULL, 0, NULL, NULL, NULL};
  /* The output's memory serves as the slots where it is aligned u32s, every id (below
   * h * stride) leaves room for LABELLED, and the elements between rows (ids use them too)
   * are the output's own: its rows are packed or it owns its memory (its padding is put
   * back to 0 in pass 5); a view's rows are separated by other pixels. Nor where it holds
   * the map (labelled in place): the map is read until pass 5, which reads a line before
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
  L.count = PXL_MALLOC((size_t)h * sizeof *L.count);
  L.ntop = PXL_MALLOC((size_t)h * sizeof *L.ntop);
  int *strip_y0 = PXL_MALLOC(((size_t)nstrips + 1) * sizeof *strip_y0);
  int *value = PXL_MALLOC((size_t)nstrips * sizeof *value);
  int64_t *roots = PXL_MALLOC((size_t)nstrips * sizeof *roots);
  uint32_t *stop = PXL_MALLOC((size_t)nstrips * sizeof *stop);
  /* Per strip: 13 rows of bits, 4 of ranks, one of labels, two rows of the output (with 8
   * to spare, and with the padding after them when it held slots) 64-byte aligned. */
  size_t orow = ((size_t)(L.slot == out->data ? L.stride : (size_t)w) + 8 + 15) / 16 * 16;
  size_t per = 13 * (size_t)nw * sizeof(uint64_t) + 4 * (size_t)nw * sizeof(uint32_t) +
               ((size_t)w + 1 + 15) / 16 * 16 * sizeof(uint32_t) + 2 * orow * sizeof(uint32_t) + 64;
  uint64_t *scratch = PXL_MALLOC((size_t)nstrips * per);
  Scratch *sc = PXL_MALLOC((size_t)nstrips * sizeof *sc);
  uint32_t *moved = PXL_MALLOC(((size_t)nstrips - 1) * 2 * (size_t)w * sizeof *moved + 1);
  int rc = PXL_OK;
  if (!L.slot || !L.first || !L.count || !L.ntop || !strip_y0 || !value || !roots || !stop || !scratch || !sc ||
      !moved) {
    rc = err_set(err, PXL_ENOMEM, "out of memory for labelling a %dx%d image", w, h);
    goto done;
  }
  for (int k = 0; k < nstrips; k++) {
    uint64_t *p = (uint64_t *)((char *)scratch + (size_t)k * per);
    for (int j = 0; j < 2; j++) {
      Bits *b = &sc[k].line[j];
      b->st = p, b->en = p + nw, b->top = p + 2 * nw, b->bot = p + 3 * nw, b->ub = p + 4 * nw;
      p += 5 * nw;
    }
    sc[k].o0 = p, sc[k].d1 = p + nw, sc[k].d3 = p + 2 * nw;
    uint32_t *q = (uint32_t *)(p + 3 * nw);
    sc[k].line[0].rank = q, sc[k].line[0].rankb = q + nw, sc[k].line[1].rank = q + 2 * nw;
    sc[k].line[1].rankb = q + 3 * nw;
    sc[k].label = q + 4 * nw;
    uintptr_t r = (uintptr_t)(sc[k].label + ((size_t)w + 1 + 15) / 16 * 16);
    sc[k].row[0] = (uint32_t *)((r + 63) / 64 * 64), sc[k].row[1] = sc[k].row[0] + orow;
  }
  for (int k = 0; k <= nstrips; k++) strip_y0[k] = (int)((int64_t)h * k / nstrips);
  bool popcnt = count_bits(), again = false;
  int64_t total = 0;
  size_t nmoved = 0;
  const bool tried = L.pairs = conn == 8 && L.kind == K_U8; /* until a second nonzero value shows */
#pragma omp parallel num_threads(nstrips) if ((int64_t)w * h >= PARALLEL_MIN)
  {
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++) /* pass 1 */
      roots[k] = (popcnt ? scan_popcnt : scan_plain)(&L, strip_y0[k], strip_y0[k + 1], &sc[k], &stop[k],
                                                     &value[k]);
    if (tried) { /* pairs only where every nonzero pixel holds one value: else pass 1 again, by rows */
#pragma omp single
      {
        int v = 0;
        for (int k = 0; k < nstrips && v >= 0; k++)
          if (value[k]) v = v && v != value[k] ? -1 : value[k];
        again = v < 0, L.pairs = !again;
      }
      if (again) {
#pragma omp for schedule(static, 1)
        for (int k = 0; k < nstrips; k++)
          roots[k] = (popcnt ? scan_popcnt : scan_plain)(&L, strip_y0[k], strip_y0[k + 1], &sc[k], &stop[k],
                                                         &value[k]);
      }
    }
#pragma omp single
    {
      Union u = {true, roots, strip_y0, nstrips, moved, &nmoved};
      for (int k = 1; k < nstrips; k++) /* pass 2 */
        (popcnt ? boundary_popcnt : boundary_plain)(&L, strip_y0[k - 1], strip_y0[k], strip_y0[k + 1], &u, &sc[0]);
      for (size_t i = 0; i < nmoved; i++) L.slot[moved[i]] = find_across(L.slot, moved[i]);
      for (int k = 0; k < nstrips; k++) { /* roots[k] becomes the strip's first label - 1 */
        int64_t c = roots[k];
        roots[k] = total;
        total += c;
      }
    }
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++) /* pass 3 */
      number_roots(L.slot, (uint32_t)(strip_y0[k] * L.stride), stop[k], (uint32_t)roots[k],
                   (uint32_t)((k + 1 < nstrips ? roots[k + 1] : total) - roots[k]));
#pragma omp single
    for (size_t i = 0; i < nmoved; i++) L.slot[moved[i]] = L.slot[L.slot[moved[i]]]; /* pass 4 */
#pragma omp for schedule(static, 1)
    for (int k = 0; k < nstrips; k++) { /* pass 5 */
      int y0 = strip_y0[k], y1 = strip_y0[k + 1], step = L.pairs ? 2 : 1;
      for (int y = last_line(&L, y0, y1); y >= y0; y -= step) write_line(&L, y, y1 - y < step ? 1 : step, &sc[k]);
#if defined(__SSE2__)
      _mm_sfence(); /* the streaming stores (put_row, put_masked) done before anyone reads the labels */
#endif
    }
  }
  if (count) *count = total;
done:
  PXL_FREE(tmp), PXL_FREE(L.first), PXL_FREE(L.count), PXL_FREE(L.ntop), PXL_FREE(strip_y0), PXL_FREE(value);
  PXL_FREE(roots), PXL_FREE(stop), PXL_FREE(scratch), PXL_FREE(sc), PXL_FREE(moved);
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
