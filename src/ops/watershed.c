/*
 * watershed.c - marker-based watershed by priority flooding (ops_watershed), and the
 * watershed from the regional minima (ops_watershed_minima), which numbers the minima as
 * markers and floods from them.
 *
 * The rule, the same for both algorithms, so that ties give the same labels:
 *   - every marker pixel (nonzero marker value), in raster order, takes its label (the
 *     marker value converted to out's type as lane_convert converts) and enters a priority
 *     queue with key (its relief value, sequence number = order of entry, from 0);
 *   - repeatedly the entry of smallest key leaves the queue: smallest relief value first;
 *     among equal values the smallest sequence number (first in, first out). Values compare
 *     in the relief's type (i16, i32 signed); floats as numbers, with -0.0 equal to +0.0,
 *     and every NaN above every number and equal to every other NaN;
 *   - each conn-neighbour of the pixel that left, in the fixed order (dx, dy) = (0,-1),
 *     (-1,0), (1,0), (0,1) for conn 4 and (-1,-1), (0,-1), (1,-1), (-1,0), (1,0), (-1,1),
 *     (0,1), (1,1) for conn 8 (raster order), that has no label yet takes the label of the
 *     pixel that left and enters the queue with key (its relief value, next sequence number);
 *   - pixels never reached (there is no marker) keep 0.
 * With watershed lines (ops_watershed_lines), a pixel other than a marker is labelled when
 * it leaves the queue instead: it enters unlabelled (once, when a labelled pixel that left
 * reaches it); when it leaves, its conn-neighbours that are labelled decide - one label
 * among them: it takes it; two or more: it is a line pixel, 0, and floods no further; only
 * a labelled pixel that left enters its neighbours (in the order above). This one rule has
 * one algorithm (the reference's heap), which every backend runs.
 * A pixel is labelled when it enters the queue, so it enters once; a neighbour lower than
 * the pixel that left is taken before anything else still queued (which is no lower than
 * that pixel): flooding runs down into a pit it meets before it goes on.
 *
 * Reference: a binary heap of (value as a double, which every pixel type converts to
 * exactly, sequence number, pixel) ordered exactly as the rule says.
 *
 * Fast: the pixel arrays get a pad column on each side and a pad row above and below,
 * labelled from the start, so neighbours need no bounds checks. The flood leaps about the
 * image and waits on memory more than it computes, so a pixel's data are packed into one
 * 64-bit cell where they fit, and the queues keep their entries in chunks read in order.
 * For u8, i16 and u16 relief, a bucket queue: a FIFO per level (relief key less the image's
 * smallest), the lowest non-empty level found from a bitmap with a summary word per 4096
 * levels. Taking from the lowest level's FIFO is the rule's order: within a level the FIFO
 * is in sequence order. Other types: a binary heap of entries that compare as integers,
 * the value's order key (the sign bit flipped for i32; floats: sign-magnitude made
 * monotone, -0.0 as +0.0, NaN as the largest key) then the sequence number; only the
 * entries of the lowest key ranges ("tiers") are in the heap, the others wait in lists (see
 * Tiers). Flooding is sequential in nature (every step depends on all earlier ones), so the
 * fast algorithm runs on one thread.
 */
#include "ops/morph.h"

#include <string.h>

#include "interp/interp.h"
#include "util/alloc.h"

#define INLINE static inline __attribute__((always_inline))
#define NONE UINT32_MAX /* no pixel, chunk or level */

/* The label that marker pixel (x, y) gives, or false where there is no marker. */
static bool marker_label(const struct pxl_image *markers, int x, int y, pxl_type out, uint32_t *label) {
  Lane v = interp_load(markers, x, y, 0);
  Scalar s = scalar_of_pxl(markers->type);
  if (scalar_is_float(s) ? v.f == 0 : v.i == 0) return false;
  *label = (uint32_t)lane_convert(v, s, scalar_of_pxl(out)).i;
  return true;
}

/* The labels lab (stride `stride`, pixel (0, 0) at lab[0]) into out's rows. */
static void write_labels(struct pxl_image *out, const uint32_t *lab, size_t stride) {
  for (int y = 0; y < out->height; y++)
    memcpy(image_row(out, y), lab + (size_t)y * stride, (size_t)out->width * sizeof *lab);
}

/* ---- reference ---- */

typedef struct {
  double v;     /* relief value */
  uint64_t seq; /* order of entry */
  uint32_t p;   /* pixel index y * w + x */
} Entry;

/* Whether a leaves the queue before b. */
static bool before(const Entry *a, const Entry *b) {
  bool an = a->v != a->v, bn = b->v != b->v;
  if (an != bn) return bn; /* numbers before NaN */
  if (!an && a->v != b->v) return a->v < b->v;
  return a->seq < b->seq;
}

static void heap_push(Entry *heap, size_t *n, Entry e) {
  size_t i = (*n)++;
  while (i > 0 && before(&e, &heap[(i - 1) / 2])) {
    heap[i] = heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  heap[i] = e;
}

static Entry heap_pop(Entry *heap, size_t *n) {
  Entry top = heap[0], last = heap[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && before(&heap[c + 1], &heap[c])) c++;
    if (!before(&heap[c], &last)) break;
    heap[i] = heap[c];
    i = c;
  }
  if (*n > 0) heap[i] = last;
  return top;
}

static const int DX4[4] = {0, -1, 1, 0}, DY4[4] = {-1, 0, 0, 1};
static const int DX8[8] = {-1, 0, 1, -1, 1, -1, 0, 1}, DY8[8] = {-1, -1, -1, 0, 0, 1, 1, 1};

/* A heap flood's state: per pixel its label and state bits, the heap, the order of entry. */
typedef struct {
  uint32_t *lab;
  uint8_t *state; /* 0: not reached; the flood's bits otherwise */
  Entry *heap;
  size_t nheap;
  uint64_t seq;
} Flood;

static void flood_free(Flood *F) { PXL_FREE(F->lab), PXL_FREE(F->state), PXL_FREE(F->heap); }

/* Allocates F for relief's pixels and enters every marker pixel, in raster order, with its
 * label and state `mark`. */
static int flood_start(Flood *F, const struct pxl_image *relief, const struct pxl_image *markers, pxl_type ot,
                       uint8_t mark, Err *err) {
  int w = relief->width, h = relief->height;
  size_t n = (size_t)w * (size_t)h;
  *F = (Flood){PXL_CALLOC(n, sizeof *F->lab), PXL_CALLOC(n, 1), PXL_MALLOC(n * sizeof *F->heap), 0, 0};
  if (!F->lab || !F->state || !F->heap) {
    flood_free(F);
    return err_set(err, PXL_ENOMEM, "out of memory for the watershed of a %dx%d image", w, h);
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      size_t p = (size_t)y * w + x;
      if (!marker_label(markers, x, y, ot, &F->lab[p])) continue;
      F->state[p] = mark;
      heap_push(F->heap, &F->nheap, (Entry){ops_value(relief, x, y), F->seq++, (uint32_t)p});
    }
  return PXL_OK;
}

static int reference(const struct pxl_image *relief, const struct pxl_image *markers, int conn, struct pxl_image *out,
                     Err *err) {
  int w = relief->width, h = relief->height;
  Flood F;
  int rc = flood_start(&F, relief, markers, out->type, 1, err); /* state 1: labelled (maybe 0, a marker's) */
  if (rc) return rc;
  uint32_t *lab = F.lab;
  uint8_t *done = F.state;
  Entry *heap = F.heap;
  size_t nheap = F.nheap;
  uint64_t seq = F.seq;
  const int *dx = conn == 4 ? DX4 : DX8, *dy = conn == 4 ? DY4 : DY8;
  while (nheap > 0) {
    Entry e = heap_pop(heap, &nheap);
    int x = (int)(e.p % w), y = (int)(e.p / w);
    for (int k = 0; k < conn; k++) {
      int nx = x + dx[k], ny = y + dy[k];
      if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
      size_t q = (size_t)ny * w + nx;
      if (done[q]) continue;
      done[q] = 1;
      lab[q] = lab[e.p];
      heap_push(heap, &nheap, (Entry){ops_value(relief, nx, ny), seq++, (uint32_t)q});
    }
  }
  write_labels(out, lab, (size_t)w);
  flood_free(&F);
  return PXL_OK;
}

/* Watershed lines: the rule at the top, pixels labelled as they leave (one algorithm). */
static int flood_lines(const struct pxl_image *relief, const struct pxl_image *markers, int conn,
                       struct pxl_image *out, Err *err) {
  enum { QUEUED = 1, LABELLED = 2 }; /* entered; has its label (maybe 0, a marker's) */
  int w = relief->width, h = relief->height;
  Flood F;
  int rc = flood_start(&F, relief, markers, out->type, QUEUED | LABELLED, err);
  if (rc) return rc;
  uint32_t *lab = F.lab;
  uint8_t *state = F.state;
  Entry *heap = F.heap;
  size_t nheap = F.nheap;
  uint64_t seq = F.seq;
  const int *dx = conn == 4 ? DX4 : DX8, *dy = conn == 4 ? DY4 : DY8;
  while (nheap > 0) {
    Entry e = heap_pop(heap, &nheap);
    int x = (int)(e.p % w), y = (int)(e.p / w);
    if (!(state[e.p] & LABELLED)) { /* the labelled neighbours decide */
      int found = 0; /* 0: none yet, 1: one label, 2: two or more */
      uint32_t label = 0;
      for (int k = 0; k < conn && found < 2; k++) {
        int nx = x + dx[k], ny = y + dy[k];
        if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
        size_t q = (size_t)ny * w + nx;
        if (!(state[q] & LABELLED)) continue;
        if (!found) found = 1, label = lab[q];
        else if (lab[q] != label) found = 2;
      }
      if (found != 1) continue; /* a line pixel: 0 */
      lab[e.p] = label;
      state[e.p] |= LABELLED;
    }
    for (int k = 0; k < conn; k++) {
      int nx = x + dx[k], ny = y + dy[k];
      if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
      size_t q = (size_t)ny * w + nx;
      if (state[q]) continue;
      state[q] = QUEUED;
      heap_push(heap, &nheap, (Entry){ops_value(relief, nx, ny), seq++, (uint32_t)q});
    }
  }
  write_labels(out, lab, (size_t)w);
  flood_free(&F);
  return PXL_OK;
}

/* ---- fast ---- */

/* Index of pixel (x, y) in arrays of w + 2 columns with a pad row above. */
INLINE size_t cell_at(size_t s, int x, int y) { return (size_t)(y + 1) * s + (size_t)x + 1; }

/* ---- chunks: where the queues keep their lists ---- */

#define CHUNK 128 /* entries in a chunk */

/* A pool of chunks of CHUNK entries of esize bytes, each with a link to the next chunk of
 * its list (or of the free list). Lists of chunks read memory in order, where a list
 * linked through the pixels costs a cache miss for every entry taken, and the flood's time
 * goes into waiting for memory. */
typedef struct {
  char *data;       /* chunk c's entries from data + c * CHUNK * esize */
  uint32_t *link;   /* per chunk: the next of its list */
  size_t esize;     /* bytes of an entry */
  uint32_t nchunks; /* chunks in the pool */
  uint32_t used;    /* chunks handed out so far (the rest never were) */
  uint32_t free;    /* the first chunk given back (NONE: none) */
  bool oom;         /* the pool could not grow: the call fails */
} Pool;

/* Starts a pool small (it grows as needed: the chunks in use are about the entries queued
 * at once); false when there is no memory. */
static bool pool_init(Pool *P, size_t esize) {
  P->esize = esize, P->nchunks = 16, P->used = 0, P->free = NONE, P->oom = false;
  P->data = PXL_MALLOC(P->nchunks * CHUNK * esize);
  P->link = PXL_MALLOC(P->nchunks * sizeof *P->link);
  return P->data && P->link;
}

static void pool_free(Pool *P) { PXL_FREE(P->data), PXL_FREE(P->link); }

/* Doubles the pool; false when there is no memory for it. */
static bool pool_grow(Pool *P) {
  if (P->nchunks > UINT32_MAX / 2 / CHUNK) return false;
  char *data = PXL_REALLOC(P->data, (size_t)P->nchunks * 2 * CHUNK * P->esize);
  if (!data) return false;
  P->data = data;
  uint32_t *link = PXL_REALLOC(P->link, (size_t)P->nchunks * 2 * sizeof *link);
  if (!link) return false;
  P->link = link;
  P->nchunks *= 2;
  return true;
}

/* A chunk to fill, its link NONE, or NONE (oom set) when the pool cannot grow. */
INLINE uint32_t chunk_new(Pool *P) {
  uint32_t c = P->free;
  if (c != NONE) {
    P->free = P->link[c];
  } else if (P->used < P->nchunks || pool_grow(P)) {
    c = P->used++;
  } else {
    P->oom = true;
    return NONE;
  }
  P->link[c] = NONE;
  return c;
}

INLINE void chunk_free(Pool *P, uint32_t c) {
  P->link[c] = P->free;
  P->free = c;
}

/* ---- a set of levels (up to 65536): a bitmap and a summary word per 4096 levels ---- */

typedef struct {
  uint64_t *bits;       /* bit l: level l is in */
  uint64_t summary[16]; /* bit i: bits[i] is not 0 */
  uint32_t nwords;      /* words of bits: levels / 64 */
} LevelSet;

INLINE void set_add(LevelSet *S, uint32_t l) {
  S->bits[l >> 6] |= 1ull << (l & 63);
  S->summary[l >> 12] |= 1ull << ((l >> 6) & 63);
}

INLINE void set_remove(LevelSet *S, uint32_t l) {
  S->bits[l >> 6] &= ~(1ull << (l & 63));
  if (!S->bits[l >> 6]) S->summary[l >> 12] &= ~(1ull << ((l >> 6) & 63));
}

/* The smallest level at or above l in the set, or NONE. */
INLINE uint32_t set_next(const LevelSet *S, uint32_t l) {
  uint32_t i = l >> 6, nsum = (S->nwords + 63) / 64;
  if (i >= S->nwords) return NONE;
  uint64_t word = S->bits[i] & (~0ull << (l & 63));
  if (!word) { /* a later word: the first the summary names */
    if (++i >= S->nwords) return NONE;
    uint32_t j = i >> 6;
    uint64_t sum = S->summary[j] & (~0ull << (i & 63));
    while (!sum) {
      if (++j >= nsum) return NONE;
      sum = S->summary[j];
    }
    i = j * 64 + (uint32_t)__builtin_ctzll(sum);
    word = S->bits[i];
  }
  return i * 64 + (uint32_t)__builtin_ctzll(word);
}

/* ---- the bucket queue (u8, i16, u16 relief) ---- */

/* One level: a FIFO of pixels in chunks, linked first to last. */
typedef struct {
  uint32_t first, last; /* the first and last chunk (first NONE: the level is empty) */
  uint32_t head, tail;  /* the next pixel to take in `first`; the next free place in `last` */
} Level;

typedef struct {
  Level *level;
  LevelSet set;     /* the levels that are not empty */
  Pool pool;        /* chunks of pixels (uint32_t) */
  uint32_t cur;     /* no level below cur is non-empty */
  uint32_t nlevels; /* a power of two, 64 to 65536: the image's range of keys */
} Buckets;

INLINE void bucket_push(Buckets *B, uint32_t p, uint32_t l) {
  Level *L = &B->level[l];
  if (L->first == NONE || L->tail == CHUNK) {
    uint32_t c = chunk_new(&B->pool);
    if (c == NONE) return;
    if (L->first == NONE) {
      L->first = c, L->head = 0;
      set_add(&B->set, l);
    } else {
      B->pool.link[L->last] = c;
    }
    L->last = c, L->tail = 0;
  }
  ((uint32_t *)B->pool.data)[(size_t)L->last * CHUNK + L->tail++] = p;
  if (l < B->cur) B->cur = l;
}

/* The first pixel of the lowest non-empty level, taken off, or NONE when all are empty. */
INLINE uint32_t bucket_pop(Buckets *B) {
  uint32_t l = B->cur;
  if (l >= B->nlevels) return NONE;
  Level *L = &B->level[l];
  if (L->first == NONE) {
    l = set_next(&B->set, l);
    if (l == NONE) return NONE;
    B->cur = l, L = &B->level[l];
  }
  uint32_t p = ((const uint32_t *)B->pool.data)[(size_t)L->first * CHUNK + L->head++];
  if (L->first == L->last && L->head == L->tail) { /* the level is empty now */
    chunk_free(&B->pool, L->first);
    L->first = NONE;
    set_remove(&B->set, l);
  } else if (L->head == CHUNK) {
    uint32_t c = L->first;
    L->first = B->pool.link[c], L->head = 0;
    chunk_free(&B->pool, c);
  }
  return p;
}

/* ---- the tiered heap (i32, u32, f32, f64 relief) ---- */

/* A heap entry: hi, then lo, compared as integers: (key << 32 | sequence, pixel) for
 * 32-bit keys, (key, sequence << 32 | pixel) for 64-bit ones. */
typedef struct {
  uint64_t hi, lo;
} HEntry;

INLINE bool hless(HEntry a, HEntry b) { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); }

/* Puts e at place i of the heap heap[0..n) whose children of i are heaps, sifting it down. */
INLINE void sift_down(HEntry *heap, size_t n, size_t i, HEntry e) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && hless(heap[c + 1], heap[c])) c++;
    if (!hless(heap[c], e)) break;
    heap[i] = heap[c];
    i = c;
  }
  heap[i] = e;
}

/* A binary heap alone keeps the whole front of the flood, too big for the caches: each
 * entry taken cost a miss per level of the heap. So the keys are cut into tiers (up to
 * 65536 ranges of keys, from the image's smallest key to its largest; the largest key,
 * NaN's, a tier of its own), and only the tiers up to a fence are in the heap; the entries
 * of the tiers above it wait unordered in a list per tier, and a tier's list goes into the
 * heap (then empty) when the fence moves up to it. A key in the heap is below every key in
 * the lists, so the heap's least entry is the queue's. */

typedef struct {
  uint32_t first, last, tail; /* its chunks (first NONE: empty) and the entries in the last */
} List;

typedef struct {
  HEntry *heap;
  size_t n, cap;
  List *list;      /* per tier above the fence: its entries */
  LevelSet set;    /* the tiers whose list is not empty */
  Pool pool;       /* chunks of HEntry */
  uint32_t ntiers; /* a power of two, 64 to 65536: fewer for small images */
  uint32_t fence;  /* the heap holds the entries of tiers 0 .. fence */
  uint64_t kmin;   /* the smallest key but `ktop` */
  int shift;       /* tier of a key k but ktop: (k - kmin) >> shift, ntiers - 2 at most */
  uint64_t ktop;   /* the largest key of the type (NaN, or the largest integer) */
  bool oom;        /* the heap could not grow: the call fails */
} Tiers;

INLINE uint32_t tier_of(const Tiers *T, uint64_t k) {
  if (k == T->ktop) return T->ntiers - 1;
  uint64_t t = (k - T->kmin) >> T->shift;
  return t < T->ntiers - 2 ? (uint32_t)t : T->ntiers - 2;
}

static bool heap_grow(Tiers *T, size_t need) {
  size_t cap = T->cap ? T->cap : 1024;
  while (cap < need) cap *= 2;
  HEntry *h = PXL_REALLOC(T->heap, cap * sizeof *h);
  if (!h) {
    T->oom = true;
    return false;
  }
  T->heap = h, T->cap = cap;
  return true;
}

INLINE void tiers_push(Tiers *T, HEntry e, uint64_t k) {
  uint32_t t = tier_of(T, k);
  if (t <= T->fence) {
    if (T->n == T->cap && !heap_grow(T, T->n + 1)) return;
    size_t i = T->n++;
    while (i > 0 && hless(e, T->heap[(i - 1) / 2])) {
      T->heap[i] = T->heap[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    T->heap[i] = e;
    return;
  }
  List *L = &T->list[t];
  if (L->first == NONE || L->tail == CHUNK) {
    uint32_t c = chunk_new(&T->pool);
    if (c == NONE) return;
    if (L->first == NONE) {
      L->first = c;
      set_add(&T->set, t);
    } else {
      T->pool.link[L->last] = c;
    }
    L->last = c, L->tail = 0;
  }
  ((HEntry *)T->pool.data)[(size_t)L->last * CHUNK + L->tail++] = e;
}

/* The least entry, taken off into *e; false when the queue is empty. */
INLINE bool tiers_pop(Tiers *T, HEntry *e) {
  if (T->n == 0) { /* the fence moves up to the next tier with entries, which go into the heap */
    uint32_t t = T->fence + 1 < T->ntiers ? set_next(&T->set, T->fence + 1) : NONE;
    if (t == NONE) return false;
    T->fence = t;
    List *L = &T->list[t];
    for (uint32_t c = L->first; c != NONE;) {
      uint32_t m = c == L->last ? L->tail : CHUNK, next = T->pool.link[c];
      if (T->n + m > T->cap && !heap_grow(T, T->n + m)) return false;
      memcpy(T->heap + T->n, (HEntry *)T->pool.data + (size_t)c * CHUNK, m * sizeof(HEntry));
      T->n += m;
      chunk_free(&T->pool, c);
      c = next;
    }
    L->first = NONE;
    set_remove(&T->set, t);
    for (size_t i = T->n / 2; i-- > 0;) sift_down(T->heap, T->n, i, T->heap[i]);
  }
  *e = T->heap[0];
  T->n--;
  if (T->n > 0) sift_down(T->heap, T->n, 0, T->heap[T->n]);
  return true;
}

/* The flood with the bucket queue. Every pixel is one 64-bit cell, so that looking at a
 * neighbour is one memory access (the flood leaps about the image with the level, and its
 * time goes into waiting for memory): its label in the upper half, DONE once it has one
 * (pads: from the start), its order key in the lower 16 bits. */
#define DONE (1ull << 31)
#define AHEAD 8 /* pixels between the one taken and the one whose cells are prefetched */

INLINE void flood_buckets(int conn, size_t s, uint64_t *cell, Buckets *B) {
  const ptrdiff_t d4[4] = {-(ptrdiff_t)s, -1, 1, (ptrdiff_t)s};
  const ptrdiff_t d8[8] = {-(ptrdiff_t)s - 1, -(ptrdiff_t)s, -(ptrdiff_t)s + 1, -1, 1,
                           (ptrdiff_t)s - 1,  (ptrdiff_t)s,  (ptrdiff_t)s + 1};
  const ptrdiff_t *d = conn == 4 ? d4 : d8;
  for (uint32_t p; (p = bucket_pop(B)) != NONE;) {
    /* The pixel AHEAD places further in this level's FIFO is most likely taken AHEAD pops
     * from now: its cells are fetched while this one's are worked on. */
    const Level *L = &B->level[B->cur];
    uint32_t i = L->head + AHEAD - 1;
    if (L->first != NONE && i < (L->first == L->last ? L->tail : CHUNK)) {
      const uint64_t *a = cell + ((const uint32_t *)B->pool.data)[(size_t)L->first * CHUNK + i];
      __builtin_prefetch(a - s, 1), __builtin_prefetch(a, 1), __builtin_prefetch(a + s, 1);
    }
    uint64_t lab = (cell[p] & ~0xFFFFFFFFull) | DONE;
    for (int k = 0; k < conn; k++) {
      uint32_t q = (uint32_t)(p + d[k]);
      uint64_t c = cell[q];
      if (c & DONE) continue;
      cell[q] = c | lab;
      bucket_push(B, q, (uint32_t)(c & 0xFFFF));
    }
  }
}

/* The heap entry of pixel p with key k (ks bytes) and sequence number seq. */
INLINE HEntry entry(int ks, uint64_t k, uint64_t seq, uint32_t p) {
  return ks == 4 ? (HEntry){k << 32 | seq, p} : (HEntry){k, seq << 32 | p};
}

/* The flood with the tiered heap. Its order is the values', which scatters it over the
 * image, so a pixel's data are packed where they can be: for 4-byte keys one 64-bit cell,
 * the key below its label; for 8-byte keys the key in `cell`, the label in `lab`. Whether
 * a pixel is labelled is a bit of `done` (pads: from the start): a bitmap small enough for
 * the caches. The next entry's cells are fetched while this one's are worked on. seq: the
 * next sequence number (the markers are queued). */
INLINE void flood_tiers(int ks, int conn, size_t s, uint64_t *cell, uint32_t *lab, uint64_t *done, Tiers *T,
                        uint64_t seq) {
  const ptrdiff_t d4[4] = {-(ptrdiff_t)s, -1, 1, (ptrdiff_t)s};
  const ptrdiff_t d8[8] = {-(ptrdiff_t)s - 1, -(ptrdiff_t)s, -(ptrdiff_t)s + 1, -1, 1,
                           (ptrdiff_t)s - 1,  (ptrdiff_t)s,  (ptrdiff_t)s + 1};
  const ptrdiff_t *d = conn == 4 ? d4 : d8;
  for (HEntry e; tiers_pop(T, &e);) {
    if (T->n > 0) {
      const uint64_t *a = cell + (uint32_t)T->heap[0].lo;
      __builtin_prefetch(a - s, 1), __builtin_prefetch(a, 1), __builtin_prefetch(a + s, 1);
    }
    uint32_t p = (uint32_t)e.lo;
    uint64_t l = ks == 4 ? cell[p] >> 32 : lab[p];
    for (int k = 0; k < conn; k++) {
      uint32_t q = (uint32_t)(p + d[k]);
      if (done[q >> 6] >> (q & 63) & 1) continue;
      done[q >> 6] |= 1ull << (q & 63);
      uint64_t c = cell[q], kq = ks == 4 ? c & 0xFFFFFFFFu : c;
      if (ks == 4)
        cell[q] = c | l << 32;
      else
        lab[q] = (uint32_t)l;
      tiers_push(T, entry(ks, kq, seq++, q), kq);
    }
  }
}

/* One copy of each flood per key size and connectivity. */
static void buckets_4(size_t s, uint64_t *c, Buckets *B) { flood_buckets(4, s, c, B); }
static void buckets_8(size_t s, uint64_t *c, Buckets *B) { flood_buckets(8, s, c, B); }
#define TIERS_VARIANT(ks, conn)                                                                                        \
  static void tiers_##ks##_##conn(size_t s, uint64_t *cell, uint32_t *lab, uint64_t *done, Tiers *T, uint64_t n) {     \
    flood_tiers(ks, conn, s, cell, lab, done, T, n);                                                                   \
  }
TIERS_VARIANT(4, 4)
TIERS_VARIANT(4, 8)
TIERS_VARIANT(8, 4)
TIERS_VARIANT(8, 8)
#undef TIERS_VARIANT

/* The order key of pixel x of `row` (type t) for the rule's order: i16, i32 with the sign
 * bit flipped; floats with -0.0 as +0.0, NaN as the largest key, and the rest sign-magnitude
 * made monotone (positives: sign bit set; negatives: every bit flipped). */
static uint64_t flood_key(pxl_type t, const void *row, int x) {
  switch (t) {
  case PXL_U8: return ((const uint8_t *)row)[x];
  case PXL_I16: return ((const uint16_t *)row)[x] ^ 0x8000u;
  case PXL_U16: return ((const uint16_t *)row)[x];
  case PXL_I32: return ((const uint32_t *)row)[x] ^ 0x80000000u;
  case PXL_U32: return ((const uint32_t *)row)[x];
  case PXL_F32: {
    float f = ((const float *)row)[x];
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    if (f != f) return UINT32_MAX;
    if (f == 0) return 0x80000000u;
    return b >> 31 ? (uint32_t)~b : b | 0x80000000u;
  }
  default: {
    double f = ((const double *)row)[x];
    uint64_t b;
    memcpy(&b, &f, sizeof b);
    if (f != f) return UINT64_MAX;
    if (f == 0) return 1ull << 63;
    return b >> 63 ? ~b : b | 1ull << 63;
  }
  }
}

/* The bucket queue's flood (u8, i16, u16 relief). A level is a key less the image's
 * smallest, so that an image of few values has few levels to set up. */
static int fast_buckets(const struct pxl_image *relief, const struct pxl_image *markers, int conn,
                        struct pxl_image *out, Err *err) {
  int w = relief->width, h = relief->height;
  size_t s = (size_t)w + 2, cells = s * ((size_t)h + 2);
  Buckets B = {0};
  uint64_t *cell = PXL_MALLOC(cells * sizeof *cell);
  bool pool = pool_init(&B.pool, sizeof(uint32_t));
  int rc = PXL_OK;
  if (!cell || !pool) goto oom;
  for (size_t i = 0; i < s; i++) cell[i] = cell[cells - 1 - i] = DONE;
  uint64_t kmin = UINT64_MAX, kmax = 0;
  for (int y = 0; y < h; y++) {
    size_t b = cell_at(s, 0, y);
    cell[b - 1] = cell[b + w] = DONE;
    const void *row = image_row(relief, y);
    for (int x = 0; x < w; x++) {
      uint64_t k = flood_key(relief->type, row, x);
      cell[b + x] = k;
      kmin = k < kmin ? k : kmin, kmax = k > kmax ? k : kmax;
    }
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) cell[cell_at(s, x, y)] -= kmin;
  for (B.nlevels = 64; B.nlevels <= kmax - kmin;) B.nlevels *= 2;
  B.set.nwords = B.nlevels / 64;
  B.level = PXL_MALLOC(B.nlevels * sizeof *B.level);
  B.set.bits = PXL_CALLOC(B.set.nwords, sizeof *B.set.bits);
  if (!B.level || !B.set.bits) goto oom;
  B.cur = B.nlevels;
  for (uint32_t l = 0; l < B.nlevels; l++) B.level[l].first = NONE;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      size_t p = cell_at(s, x, y);
      uint32_t label;
      if (!marker_label(markers, x, y, out->type, &label)) continue;
      cell[p] |= (uint64_t)label << 32 | DONE;
      bucket_push(&B, (uint32_t)p, (uint32_t)(cell[p] & 0xFFFF));
    }
  (conn == 4 ? buckets_4 : buckets_8)(s, cell, &B);
  if (B.pool.oom) goto oom;
  for (int y = 0; y < h; y++) {
    uint32_t *o = image_row(out, y);
    const uint64_t *c = cell + cell_at(s, 0, y);
    for (int x = 0; x < w; x++) o[x] = (uint32_t)(c[x] >> 32);
  }
  goto done;
oom:
  rc = err_set(err, PXL_ENOMEM, "out of memory for the watershed of a %dx%d image", w, h);
done:
  PXL_FREE(cell), PXL_FREE(B.level), PXL_FREE(B.set.bits);
  pool_free(&B.pool);
  return rc;
}

/* The tiered heap's flood (i32, u32, f32, f64 relief). */
static int fast_tiers(const struct pxl_image *relief, const struct pxl_image *markers, int conn, struct pxl_image *out,
                      Err *err) {
  int w = relief->width, h = relief->height, ks = pxl_type_size(relief->type);
  size_t s = (size_t)w + 2, cells = s * ((size_t)h + 2);
  Tiers T = {0};
  for (T.ntiers = 64; T.ntiers < 65536 && T.ntiers < (size_t)w * h / 64;) T.ntiers *= 2; /* ~64 pixels a tier */
  T.set.nwords = T.ntiers / 64;
  T.ktop = ks == 4 ? UINT32_MAX : UINT64_MAX;
  uint64_t *cell = PXL_MALLOC(cells * sizeof *cell), *done = PXL_CALLOC((cells + 63) / 64, sizeof *done);
  uint32_t *lab = ks == 8 ? PXL_MALLOC(cells * sizeof *lab) : NULL;
  T.list = PXL_MALLOC(T.ntiers * sizeof *T.list);
  T.set.bits = PXL_CALLOC(T.set.nwords, sizeof *T.set.bits);
  bool pool = pool_init(&T.pool, sizeof(HEntry));
  int rc = PXL_OK;
  if (!cell || !done || (ks == 8 && !lab) || !T.list || !T.set.bits || !pool || !heap_grow(&T, 1024)) {
    rc = err_set(err, PXL_ENOMEM, "out of memory for the watershed of a %dx%d image", w, h);
    goto done;
  }
  for (uint32_t t = 0; t < T.ntiers; t++) T.list[t].first = NONE;
  for (size_t i = 0; i < s; i++) { /* the pads are labelled */
    done[i >> 6] |= 1ull << (i & 63);
    done[(cells - 1 - i) >> 6] |= 1ull << ((cells - 1 - i) & 63);
  }
  uint64_t kmin = UINT64_MAX, kmax = 0;
  for (int y = 0; y < h; y++) {
    size_t b = cell_at(s, 0, y);
    done[(b - 1) >> 6] |= 1ull << ((b - 1) & 63);
    done[(b + w) >> 6] |= 1ull << ((b + w) & 63);
    const void *row = image_row(relief, y);
    for (int x = 0; x < w; x++) {
      uint64_t k = flood_key(relief->type, row, x);
      cell[b + x] = k;
      if (k != T.ktop) kmin = k < kmin ? k : kmin, kmax = k > kmax ? k : kmax;
    }
  }
  T.kmin = kmin <= kmax ? kmin : 0;
  while (kmin <= kmax && ((kmax - kmin) >> T.shift) > T.ntiers - 2) T.shift++;
  uint64_t seq = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      size_t p = cell_at(s, x, y);
      uint32_t label;
      if (!marker_label(markers, x, y, out->type, &label)) continue;
      done[p >> 6] |= 1ull << (p & 63);
      uint64_t k = cell[p];
      if (ks == 4)
        cell[p] |= (uint64_t)label << 32;
      else
        lab[p] = label;
      tiers_push(&T, entry(ks, k, seq++, (uint32_t)p), k);
    }
  static void (*const FLOOD[4])(size_t, uint64_t *, uint32_t *, uint64_t *, Tiers *, uint64_t) = {tiers_4_4, tiers_4_8,
                                                                                                  tiers_8_4, tiers_8_8};
  FLOOD[(ks == 8) * 2 + (conn == 8)](s, cell, lab, done, &T, seq);
  if (T.oom || T.pool.oom) {
    rc = err_set(err, PXL_ENOMEM, "out of memory for the watershed of a %dx%d image", w, h);
    goto done;
  }
  for (int y = 0; y < h; y++) { /* unlabelled pixels: 0 (their cells hold only the key) */
    uint32_t *o = image_row(out, y);
    size_t b = cell_at(s, 0, y);
    for (int x = 0; x < w; x++) {
      bool labelled = done[(b + x) >> 6] >> ((b + x) & 63) & 1;
      o[x] = !labelled ? 0 : ks == 4 ? (uint32_t)(cell[b + x] >> 32) : lab[b + x];
    }
  }
done:
  PXL_FREE(cell), PXL_FREE(done), PXL_FREE(lab), PXL_FREE(T.heap), PXL_FREE(T.list), PXL_FREE(T.set.bits);
  pool_free(&T.pool);
  return rc;
}

static int fast(const struct pxl_image *relief, const struct pxl_image *markers, int conn, struct pxl_image *out,
                Err *err) {
  size_t cells = ((size_t)relief->width + 2) * ((size_t)relief->height + 2);
  if (cells >= NONE) return err_set(err, PXL_ETOOBIG, "watershed: %dx%d is too large", relief->width, relief->height);
  if (pxl_type_size(relief->type) <= 2) return fast_buckets(relief, markers, conn, out, err);
  return fast_tiers(relief, markers, conn, out, err);
}

/* ops_watershed's and ops_watershed_lines's checks of their arguments. */
static int check_args(const struct pxl_image *relief, const struct pxl_image *markers, int conn,
                      const struct pxl_image *out, Err *err) {
  if (relief->channels != 1 || markers->channels != 1 || markers->width != relief->width ||
      markers->height != relief->height)
    return err_set(err, PXL_EARG, "watershed: relief and markers must have one size and one channel");
  if (out->width != relief->width || out->height != relief->height || out->channels != 1 ||
      (out->type != PXL_U32 && out->type != PXL_I32))
    return err_set(err, PXL_EARG, "watershed: the output must be %dx%d, u32 or i32, one channel", relief->width,
                   relief->height);
  if (conn != 4 && conn != 8) return err_set(err, PXL_EARG, "watershed: connectivity %d (must be 4 or 8)", conn);
  return PXL_OK;
}

int ops_watershed(const struct pxl_image *relief, const struct pxl_image *markers, int conn, const OpsRun *run,
                  struct pxl_image *out, Err *err) {
  int rc = check_args(relief, markers, conn, out, err);
  if (rc) return rc;
  if (run->reference) return reference(relief, markers, conn, out, err);
  return fast(relief, markers, conn, out, err);
}

int ops_watershed_lines(const struct pxl_image *relief, const struct pxl_image *markers, int conn, const OpsRun *run,
                        struct pxl_image *out, Err *err) {
  (void)run;
  int rc = check_args(relief, markers, conn, out, err);
  return rc ? rc : flood_lines(relief, markers, conn, out, err);
}

int ops_watershed_minima(const struct pxl_image *relief, int conn, bool lines, const OpsRun *run,
                         struct pxl_image *out, Err *err) {
  if (out->type != PXL_U32 && out->type != PXL_I32)
    return err_set(err, PXL_EARG, "watershed: the output must be u32 or i32");
  struct pxl_image *minima = NULL, *labels = NULL;
  int rc = image_new(relief->width, relief->height, PXL_U8, 1, &minima, err);
  if (rc == PXL_OK) rc = image_new(relief->width, relief->height, PXL_U32, 1, &labels, err);
  /* Two minima never touch (the higher would not be one), so the minima's components are
   * the minima. */
  if (rc == PXL_OK) rc = ops_regional(relief, false, conn, run, minima, err);
  if (rc == PXL_OK) rc = ops_label(minima, conn, run, labels, NULL, err);
  if (rc == PXL_OK)
    rc = lines ? ops_watershed_lines(relief, labels, conn, run, out, err) : ops_watershed(relief, labels, conn, run, out, err);
  image_free(minima), image_free(labels);
  return rc;
}
