/*
 * morph_test.c - the morphology operators (src/ops/morph.h) against checks that share no
 * code with them.
 *
 * Reconstruction: the reference and the fast algorithm (1, 2 and 3 threads) give the same
 * bits, by dilation and by erosion, conn 4 and 8, in every pixel type. The reference's
 * result is checked against threshold decomposition, a different characterisation: the
 * pixels whose reconstruction by dilation is at least t are the conn-components of
 * {mask >= t} that hold a pixel with start >= t, so the result at p is the largest such t
 * (erosion: mirrored); and against the fixed-point property r == min(dilate(r), mask), with
 * the language's pxr_min and pxr_max. Outputs of another type hold lane_convert's values.
 * Cases random images hardly reach: -0.0 below +0.0, and NaN results (the mask's bits).
 * Hole filling: on 0/255 images, against a flood of the background from the border; on grey
 * images the two algorithms agree.
 * Regional extrema: against a brute force that uses another characterisation (p is in a
 * regional minimum iff the conn-component of {v <= v(p)} holding p has no value but v(p));
 * both algorithms, 1 and 0 converted into several output types.
 * Watershed: the reference against a simulation of the contract's rule with a linear search
 * for the next pixel, on small images; the fast algorithm against the reference, with ties
 * (few levels), NaN and -0.0 reliefs; on all images the invariants (markers keep their
 * labels, every pixel labelled, each label's regions connected and holding a marker of that
 * label); a marker whose label converts to 0 still floods. Watershed from the minima
 * against the brute-force minima numbered in raster order and the simulation.
 * Images: 1x1, 1x9, 9x1, 7x5, 31x17, 64x64, larger ones (several strips really running in
 * parallel) where the fast algorithm with 2 and 3 threads must match it with 1; random with
 * few and many levels, a maze of concentric rings (long geodesic paths crossing every strip
 * boundary many times), stripes, a ramp, 0/255 images, floats with NaN and -0.0; and three
 * strips whose edge rows all rise in one round (the queue grows while it wraps). Inputs
 * have rows with slack after them; outputs start as garbage. Then the argument guards and
 * every allocation failing in turn.
 *
 * Prints one line per group and "ok" or the failures; returns nonzero on any failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "pixels.h"
#include "interp/interp.h"
#include "ir/prelude.h"
#include "ops/morph.h"
#include "util/alloc.h"

static const pxl_type TYPES[] = {PXL_U8, PXL_I16, PXL_U16, PXL_I32, PXL_U32, PXL_F32, PXL_F64};
#define NTYPES (int)(sizeof TYPES / sizeof TYPES[0])
static const int SIZES[][2] = {{1, 1}, {1, 9}, {9, 1}, {7, 5}, {31, 17}, {64, 64}};
#define NSIZES (int)(sizeof SIZES / sizeof SIZES[0])
/* The types that the larger images are tried in (they take most of the time). */
#define LARGE_TYPE(t) ((t) == PXL_U8 || (t) == PXL_I16 || (t) == PXL_F32)
/* The reference reconstruction takes a pass per step of the longest path: 64x64 images are
 * tried in those types only, the maze in u8 and f32. */
#define SLOW_REFERENCE(s, p, t) ((s) == NSIZES - 1 && (!LARGE_TYPE(t) || ((p) == P_MAZE && (t) == PXL_I16)))
static const OpsRun REF = {.reference = true};
static const OpsRun FAST[3] = {{.nthreads = 1}, {.nthreads = 2}, {.nthreads = 3}};

/* ---- images ---- */

/* An image whose rows have `slack` elements after them, its pixels garbage. */
static struct pxl_image *new_img(int w, int h, pxl_type t, int slack) {
  struct pxl_image *img = PXL_CALLOC(1, sizeof *img);
  size_t pitch = ((size_t)w + (size_t)slack) * (size_t)pxl_type_size(t);
  img->data = img->alloc = PXL_MALLOC(pitch * (size_t)h);
  if (!img->data) {
    printf("FAIL: cannot allocate a %dx%d image\n", w, h);
    exit(1);
  }
  memset(img->data, 0xA5, pitch * (size_t)h);
  img->width = w, img->height = h, img->channels = 1, img->type = t, img->pitch = pitch;
  return img;
}

/* The bytes of pixel (x, y). */
static const void *px_at(const struct pxl_image *img, int x, int y) {
  return (const char *)image_row(img, y) + (size_t)x * (size_t)pxl_type_size(img->type);
}

/* Whether a and b hold the same pixel bytes. */
static bool same_bits(const struct pxl_image *a, const struct pxl_image *b) {
  for (int y = 0; y < a->height; y++)
    if (memcmp(image_row(a, y), image_row(b, y), (size_t)a->width * (size_t)pxl_type_size(a->type))) return false;
  return true;
}

/* The same number, or both NaN (-0.0 == +0.0). */
static bool same_value(double a, double b) { return a == b || (a != a && b != b); }

enum { P_FEW, P_MANY, P_MAZE, P_STRIPES, P_RAMP, P_BINARY, P_NAN, P_COUNT };
static const char *PATTERN[] = {"few levels", "many levels", "maze", "stripes", "ramp", "0/255", "NaN"};

/* Level v (0..255) in type t: an increasing map, with negative values for the signed types;
 * floats: v = 8 is zero, -0.0 when `neg`. */
static double level(pxl_type t, int v, bool neg) {
  switch (t) {
  case PXL_U8: return v;
  case PXL_I16: return v * 3 - 100;
  case PXL_U16: return v * 250;
  case PXL_I32: return v * 1000003.0 - 5e8;
  case PXL_U32: return v * 16000000.0;
  case PXL_F32: return v == 8 && neg ? -0.0 : v * 0.25 - 2;
  default: return v == 8 && neg ? -0.0 : v * 0.5 - 4;
  }
}

/* Fills img with pattern p of seed `seed`. P_NAN: few levels around 8 (zeros of both signs)
 * with 15% NaN (floats; other types get few levels). */
static void fill(struct pxl_image *img, int p, uint64_t seed) {
  rng = seed * 0x9E3779B97F4A7C15u + 1;
  int w = img->width, h = img->height;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int v = 0;
      bool nan = false;
      switch (p) {
      case P_FEW: v = (int)(random_u64() % 4); break;
      case P_MANY: v = (int)(random_u64() % 256); break;
      case P_MAZE: { /* rings of corridor (200) and wall (10), each wall open at one end */
        int d = x < y ? x : y;
        d = d < w - 1 - x ? d : w - 1 - x;
        d = d < h - 1 - y ? d : h - 1 - y;
        v = d % 2 ? 10 : 200;
        if (d % 2 && x == w / 2 && y == ((d / 2) % 2 ? d : h - 1 - d)) v = 200;
        break;
      }
      case P_STRIPES: v = ((x + 2 * y) / 3) % 4 * 30; break;
      case P_RAMP: v = (x + y) % 256; break;
      case P_BINARY: v = random_u64() % 100 < 45 ? 255 : 0; break;
      default:
        v = 6 + (int)(random_u64() % 4);
        nan = random_u64() % 100 < 15;
        break;
      }
      double val = level(img->type, v, random_u64() % 2);
      if (p == P_BINARY && img->type == PXL_U8) val = v;
      if (nan && (img->type == PXL_F32 || img->type == PXL_F64)) val = NAN;
      set_px(img, x, y, val);
    }
}

static const int DX[8] = {1, -1, 0, 0, 1, 1, -1, -1}, DY[8] = {0, 0, 1, -1, 1, -1, 1, -1};

/* Flood fill: from the pixels with seed[p], through pixels with pass[p]; reached[p] set. */
static void flood(int w, int h, int conn, const bool *seed, const bool *pass, bool *reached, uint32_t *queue) {
  size_t n = (size_t)w * h, head = 0, tail = 0;
  for (size_t p = 0; p < n; p++) {
    reached[p] = seed[p];
    if (seed[p]) queue[tail++] = (uint32_t)p;
  }
  while (head < tail) {
    size_t p = queue[head++];
    int x = (int)(p % w), y = (int)(p / w);
    for (int k = 0; k < conn; k++) {
      int nx = x + DX[k], ny = y + DY[k];
      if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
      size_t q = (size_t)ny * w + nx;
      if (reached[q] || !pass[q]) continue;
      reached[q] = true;
      queue[tail++] = (uint32_t)q;
    }
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ---- reconstruction ---- */

/* Checks r, the reconstruction of (marker, mask), by threshold decomposition (skipped where
 * it would take too long) and as a fixed point; returns 0 if it failed, else 2 if the
 * decomposition was checked, 1 if not. */
static int check_reconstruction(const struct pxl_image *marker, const struct pxl_image *mask, bool erode, int conn,
                                const struct pxl_image *r, const char *what) {
  int w = mask->width, h = mask->height;
  size_t n = (size_t)w * h;
  double *start = malloc(n * sizeof *start), *want = malloc(n * sizeof *want), *lv = malloc(2 * n * sizeof *lv);
  double *mv = malloc(n * sizeof *mv); /* the mask's values */
  bool *seed = malloc(n), *pass = malloc(n), *reached = malloc(n);
  uint32_t *queue = malloc(n * sizeof *queue);
  size_t nl = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      double a = px(marker, x, y), b = px(mask, x, y);
      size_t p = (size_t)y * w + x;
      mv[p] = b;
      start[p] = a != a ? b : b != b ? a : erode ? (a > b ? a : b) : (a < b ? a : b);
      want[p] = NAN;
      if (start[p] == start[p]) lv[nl++] = start[p];
      if (b == b) lv[nl++] = b;
    }
  qsort(lv, nl, sizeof *lv, cmp_double);
  size_t nu = 0;
  for (size_t i = 0; i < nl; i++)
    if (nu == 0 || lv[i] != lv[nu - 1]) lv[nu++] = lv[i];
  bool ok = true, levels = nu * n <= 3000000;
  if (levels) {
    for (size_t i = 0; i < nu; i++) {
      double t = lv[erode ? nu - 1 - i : i]; /* dilation: rising levels, so the last reach is the highest */
      for (size_t p = 0; p < n; p++) {
        double m = mv[p];
        seed[p] = start[p] == start[p] && (erode ? start[p] <= t : start[p] >= t);
        pass[p] = m != m || (erode ? m <= t : m >= t);
      }
      flood(w, h, conn, seed, pass, reached, queue);
      for (size_t p = 0; p < n; p++)
        if (reached[p]) want[p] = t;
    }
    for (int y = 0; y < h && ok; y++)
      for (int x = 0; x < w && ok; x++) {
        double got = px(r, x, y), e = want[(size_t)y * w + x];
        bool same = same_value(got, e);
        if (same && e != e) same = !memcmp(px_at(r, x, y), px_at(mask, x, y), (size_t)pxl_type_size(r->type));
        if (!same) {
          CHECK(0, "%s: levels say %g at (%d, %d), the reconstruction %g", what, e, x, y, got);
          ok = false;
        }
      }
  }
  for (int y = 0; y < h && ok; y++)
    for (int x = 0; x < w && ok; x++) {
      double v = px(r, x, y);
      for (int k = 0; k < conn; k++) {
        int nx = x + DX[k], ny = y + DY[k];
        if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
        v = erode ? pxr_min_f64(v, px(r, nx, ny)) : pxr_max_f64(v, px(r, nx, ny));
      }
      v = erode ? pxr_max_f64(v, px(mask, x, y)) : pxr_min_f64(v, px(mask, x, y));
      if (!same_value(v, px(r, x, y))) {
        CHECK(0, "%s: not a fixed point at (%d, %d): %g, a step gives %g", what, x, y, px(r, x, y), v);
        ok = false;
      }
    }
  free(start), free(want), free(lv), free(mv), free(seed), free(pass), free(reached), free(queue);
  return ok ? 1 + levels : 0;
}

/* Runs the reconstruction of (marker, mask) into a new image of type t. */
static struct pxl_image *reconstruct(const struct pxl_image *marker, const struct pxl_image *mask, bool erode, int conn,
                                     const OpsRun *run, pxl_type t) {
  struct pxl_image *out = new_img(mask->width, mask->height, t, 0);
  Err err = {0};
  int rc = ops_reconstruct(marker, mask, erode, conn, run, out, &err);
  CHECK(rc == PXL_OK, "reconstruct failed: %s", err.msg);
  return out;
}

/* Whether out (any type) holds lane_convert's conversion of ref (the maps' type). */
static bool converted(const struct pxl_image *ref, const struct pxl_image *out) {
  for (int y = 0; y < ref->height; y++)
    for (int x = 0; x < ref->width; x++) {
      Lane e = lane_convert(interp_load(ref, x, y, 0), scalar_of_pxl(ref->type), scalar_of_pxl(out->type));
      double want = scalar_is_float(scalar_of_pxl(out->type)) ? e.f : (double)e.i;
      if (out->type == PXL_F32) want = (float)want;
      if (!same_value(px(out, x, y), want)) return false;
    }
  return true;
}

static void test_reconstruct(void) {
  int before = failed, runs = 0, checked = 0;
  for (int s = 0; s < NSIZES; s++)
    for (int ti = 0; ti < NTYPES; ti++)
      for (int p = 0; p < P_COUNT; p++) {
        pxl_type t = TYPES[ti];
        if (SLOW_REFERENCE(s, p, t)) continue;
        int w = SIZES[s][0], h = SIZES[s][1];
        struct pxl_image *mask = new_img(w, h, t, 3), *marker = new_img(w, h, t, 1);
        fill(mask, p, (uint64_t)(s * 100 + ti * 10 + p));
        /* Markers: a few levels (a NaN pattern's for floats), so that both the marker and
         * the mask bound the start; for the maze, one high pixel at the centre. */
        fill(marker, p == P_NAN ? P_NAN : P_FEW, (uint64_t)(s * 100 + ti * 10 + p + 7));
        if (p == P_MAZE) {
          for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) set_px(marker, x, y, level(t, x == w / 2 && y == h / 2 ? 255 : 0, false));
        }
        for (int conn = 4; conn <= 8; conn += 4)
          for (int erode = 0; erode < 2; erode++) {
            char what[128];
            snprintf(what, sizeof what, "reconstruct %s %dx%d %s conn %d %s", erode ? "erosion" : "dilation", w, h,
                     pxl_type_name(t), conn, PATTERN[p]);
            const struct pxl_image *mk = marker, *ms = mask;
            struct pxl_image *ref = reconstruct(mk, ms, erode, conn, &REF, t);
            checked += check_reconstruction(mk, ms, erode, conn, ref, what) == 2;
            for (int k = 0; k < 3; k++) {
              struct pxl_image *fast = reconstruct(mk, ms, erode, conn, &FAST[k], t);
              CHECK(same_bits(ref, fast), "%s: fast (%d threads) differs from the reference", what, k + 1);
              image_free(fast);
              runs++;
            }
            pxl_type other = t == PXL_F32 ? PXL_U8 : t == PXL_U8 ? PXL_F64 : PXL_F32;
            struct pxl_image *conv = reconstruct(mk, ms, erode, conn, &FAST[1], other);
            CHECK(converted(ref, conv), "%s: the %s output is not lane_convert's", what, pxl_type_name(other));
            image_free(conv);
            if (w * h <= 1000) {
              conv = reconstruct(mk, ms, erode, conn, &REF, other);
              CHECK(converted(ref, conv), "%s: the reference's %s output is not lane_convert's", what,
                    pxl_type_name(other));
              image_free(conv);
            }
            image_free(ref);
            runs += 3;
          }
        image_free(mask), image_free(marker);
      }
  printf("reconstruct: reference as a fixed point and (%d maps) by levels, fast with 1-3 threads the same, %d "
         "runs: %s\n",
         checked, runs, failed == before ? "ok" : "FAIL");
}

/* The float cases the random images hardly reach: -0.0 below +0.0 (the order that makes a
 * maximum independent of the order it is taken in), and NaN results, which only a mask and a
 * marker NaN where no number reaches can give, carrying the mask's bits. */
static void test_reconstruct_floats(void) {
  int before = failed;
  for (int f64 = 0; f64 < 2; f64++) {
    pxl_type t = f64 ? PXL_F64 : PXL_F32;
    int w = 5, h = 3;
    struct pxl_image *mask = new_img(w, h, t, 0), *marker = new_img(w, h, t, 0);
    static const struct {
      bool erode;
      double mask, marker, spot; /* spot: the marker at (2, 1) */
      double want;
    } cases[] = {
        {false, 0.0, -0.0, -0.0, -0.0}, {false, 0.0, -0.0, 0.0, 0.0}, {true, -0.0, 0.0, 0.0, 0.0},
        {true, -0.0, 0.0, -0.0, -0.0},  {false, NAN, NAN, 3.0, 3.0},  {true, NAN, NAN, 3.0, 3.0},
        {false, NAN, NAN, NAN, NAN},    {true, NAN, NAN, NAN, NAN},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          set_px(mask, x, y, cases[c].mask), set_px(marker, x, y, x == 2 && y == 1 ? cases[c].spot : cases[c].marker);
          if (cases[c].mask != cases[c].mask) { /* NaNs of different bits: the result's must be the mask's */
            if (f64)
              ((uint64_t *)image_row(mask, y))[x] = 0x7FF8000000000000ull + 3 * x + y;
            else
              ((uint32_t *)image_row(mask, y))[x] = 0x7FC00000u + 3 * x + y;
          }
        }
      for (int k = -1; k < 3; k++) {
        struct pxl_image *r = reconstruct(marker, mask, cases[c].erode, 8, k < 0 ? &REF : &FAST[k], t);
        bool ok = true;
        for (int y = 0; y < h; y++)
          for (int x = 0; x < w; x++) {
            double v = px(r, x, y), e = cases[c].want;
            if (e != e)
              ok &= !memcmp(px_at(r, x, y), px_at(mask, x, y), (size_t)pxl_type_size(t));
            else
              ok &= v == e && signbit(v) == signbit(e);
          }
        CHECK(ok, "reconstruct %s case %zu (%s): not %g everywhere", pxl_type_name(t), c, k < 0 ? "reference" : "fast",
              cases[c].want);
        image_free(r);
      }
    }
    image_free(mask), image_free(marker);
  }
  printf("reconstruct: -0.0 below +0.0, NaN results with the mask's bits: %s\n", failed == before ? "ok" : "FAIL");
}

/* Larger images: strips really in parallel, and many rounds across their boundaries (the
 * maze): the fast algorithm with 2 and 3 threads against itself with 1. */
static void test_reconstruct_large(void) {
  int before = failed;
  static const int sizes[][2] = {{300, 200}, {129, 517}, {1000, 40}};
  for (int s = 0; s < 3; s++)
    for (int p = 0; p < P_COUNT; p++) {
      int w = sizes[s][0], h = sizes[s][1];
      pxl_type t = p == P_NAN ? PXL_F32 : p == P_MANY ? PXL_U16 : PXL_U8;
      struct pxl_image *mask = new_img(w, h, t, 0), *marker = new_img(w, h, t, 0);
      fill(mask, p, (uint64_t)(s * 10 + p + 5000));
      fill(marker, p == P_NAN ? P_NAN : P_FEW, (uint64_t)(s * 10 + p + 6000));
      if (p == P_MAZE)
        for (int y = 0; y < h; y++)
          for (int x = 0; x < w; x++) set_px(marker, x, y, x == w / 2 && y == h / 2 ? 255 : 0);
      for (int conn = 4; conn <= 8; conn += 4)
        for (int erode = 0; erode < 2; erode++) {
          struct pxl_image *one = reconstruct(marker, mask, erode, conn, &FAST[0], t);
          for (int k = 1; k < 3; k++) {
            struct pxl_image *more = reconstruct(marker, mask, erode, conn, &FAST[k], t);
            CHECK(same_bits(one, more), "reconstruct %dx%d %s conn %d %s: %d threads differ from 1", w, h, PATTERN[p],
                  conn, erode ? "erosion" : "dilation", k + 1);
            image_free(more);
          }
          if (p == P_MAZE && s == 0) {
            char what[64];
            snprintf(what, sizeof what, "reconstruct maze %dx%d conn %d", w, h, conn);
            check_reconstruction(marker, mask, erode, conn, one, what);
          }
          image_free(one);
        }
      image_free(mask), image_free(marker);
    }
  /* Three strips of 10 rows, the outer ones high, the middle one low but for a spot (its
   * queue has moved on): the first round raises both of its edge rows at once, twice what
   * its queue held, so that the queue grows while its entries wrap around its end. */
  struct pxl_image *mask = new_img(1000, 30, PXL_U8, 0), *marker = new_img(1000, 30, PXL_U8, 0);
  for (int y = 0; y < 30; y++)
    for (int x = 0; x < 1000; x++) {
      set_px(mask, x, y, (x * 7 + y * 3) % 11 ? 200 : 120);
      set_px(marker, x, y, y < 10 || y >= 20 ? 150 : abs(x - 500) + abs(y - 15) < 9 ? 100 : 0);
    }
  for (int conn = 4; conn <= 8; conn += 4) {
    struct pxl_image *ref = reconstruct(marker, mask, false, conn, &REF, PXL_U8);
    struct pxl_image *fast = reconstruct(marker, mask, false, conn, &FAST[2], PXL_U8);
    CHECK(same_bits(ref, fast), "reconstruct: three strips rising at once (conn %d) differ from the reference", conn);
    image_free(ref), image_free(fast);
  }
  image_free(mask), image_free(marker);
  printf("reconstruct: large images, 2 and 3 threads against 1 (maze checked as a fixed point): %s\n",
         failed == before ? "ok" : "FAIL");
}

/* ---- hole filling ---- */

static void test_fill(void) {
  int before = failed, images = 0;
  for (int s = 0; s < NSIZES + 2; s++)
    for (int seed = 0; seed < 6; seed++) {
      static const int large[2][2] = {{200, 150}, {200, 3}};
      const int *size = s < NSIZES ? SIZES[s] : large[s - NSIZES];
      int w = size[0], h = size[1];
      struct pxl_image *in = new_img(w, h, PXL_U8, 2);
      fill(in, P_BINARY, (uint64_t)(s * 10 + seed + 300));
      if (seed >= 3) /* hollow squares: certain holes, nested */
        for (int y = 0; y < h; y++)
          for (int x = 0; x < w; x++) {
            int d = abs(x - w / 2) > abs(y - h / 2) ? abs(x - w / 2) : abs(y - h / 2);
            if (d % 4 == 1) set_px(in, x, y, 255);
            if (d % 4 == 3 && seed == 4) set_px(in, x, y, 0);
          }
      images++;
      size_t n = (size_t)w * h;
      bool *seedp = malloc(n), *pass = malloc(n), *reached = malloc(n);
      uint32_t *queue = malloc(n * sizeof *queue);
      for (int conn = 4; conn <= 8; conn += 4) {
        for (int y = 0; y < h; y++)
          for (int x = 0; x < w; x++) {
            size_t p = (size_t)y * w + x;
            pass[p] = px(in, x, y) == 0;
            seedp[p] = pass[p] && (x == 0 || y == 0 || x == w - 1 || y == h - 1);
          }
        flood(w, h, conn, seedp, pass, reached, queue);
        for (int k = s < NSIZES ? -1 : 0; k < 3; k++) { /* the reference takes a pass per step: small images */
          struct pxl_image *out = new_img(w, h, PXL_U8, 0);
          Err err = {0};
          CHECK(ops_fill(in, conn, k < 0 ? &REF : &FAST[k], out, &err) == PXL_OK, "fill failed: %s", err.msg);
          int bad = 0;
          for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
              double want = reached[(size_t)y * w + x] ? 0 : 255;
              if (px(out, x, y) != want && bad++ == 0)
                CHECK(0, "fill %dx%d seed %d conn %d %s: (%d, %d) is %g, the flood says %g", w, h, seed, conn,
                      k < 0 ? "reference" : "fast", x, y, px(out, x, y), want);
            }
          image_free(out);
        }
      }
      free(seedp), free(pass), free(reached), free(queue);
      image_free(in);
    }
  /* Grey images: the two algorithms agree. */
  for (int s = 0; s < NSIZES; s++)
    for (int ti = 0; ti < NTYPES; ti++)
      for (int p = 0; p < P_COUNT; p++) {
        if (TYPES[ti] == PXL_U16 || TYPES[ti] == PXL_I32 || TYPES[ti] == PXL_U32) continue; /* as u8 */
        if (SLOW_REFERENCE(s, p, TYPES[ti])) continue;
        struct pxl_image *in = new_img(SIZES[s][0], SIZES[s][1], TYPES[ti], 1);
        fill(in, p, (uint64_t)(s * 100 + ti * 10 + p + 900));
        for (int conn = 4; conn <= 8; conn += 4) {
          struct pxl_image *ref = new_img(in->width, in->height, TYPES[ti], 0);
          Err err = {0};
          CHECK(ops_fill(in, conn, &REF, ref, &err) == PXL_OK, "fill failed: %s", err.msg);
          for (int k = 0; k < 3; k++) {
            struct pxl_image *out = new_img(in->width, in->height, TYPES[ti], 0);
            CHECK(ops_fill(in, conn, &FAST[k], out, &err) == PXL_OK, "fill failed: %s", err.msg);
            CHECK(same_bits(ref, out), "fill %dx%d %s %s conn %d: fast (%d threads) differs from the reference",
                  in->width, in->height, pxl_type_name(TYPES[ti]), PATTERN[p], conn, k + 1);
            image_free(out);
          }
          image_free(ref);
        }
        image_free(in);
      }
  printf("fill: 0/255 images (%d) against a flood of the background from the border, grey images reference == "
         "fast: %s\n",
         images, failed == before ? "ok" : "FAIL");
}

/* ---- regional extrema ---- */

/* 1 where the pixel is in a regional minimum (maximum): the conn-component of
 * {v <= v(p)} (maxima: >=) holding p has no other value than v(p). NaN: 0. Every pixel of
 * value v(p) in that component has the same component, so they are decided together. */
static uint8_t *brute_regional(const struct pxl_image *in, bool maxima, int conn) {
  int w = in->width, h = in->height;
  size_t n = (size_t)w * h;
  uint8_t *res = calloc(n, 1);
  bool *decided = calloc(n, 1), *in_comp = calloc(n, 1);
  uint32_t *queue = malloc(n * sizeof *queue);
  for (size_t p0 = 0; p0 < n; p0++) {
    if (decided[p0]) continue;
    double v = px(in, (int)(p0 % w), (int)(p0 / w));
    decided[p0] = true;
    if (v != v) continue;
    size_t head = 0, tail = 0;
    queue[tail++] = (uint32_t)p0;
    in_comp[p0] = true;
    bool flat = true;
    while (head < tail) {
      size_t p = queue[head++];
      int x = (int)(p % w), y = (int)(p / w);
      for (int k = 0; k < conn; k++) {
        int nx = x + DX[k], ny = y + DY[k];
        if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
        size_t q = (size_t)ny * w + nx;
        double u = px(in, nx, ny);
        if (in_comp[q] || !(maxima ? u >= v : u <= v)) continue;
        in_comp[q] = true;
        queue[tail++] = (uint32_t)q;
        if (u != v) flat = false;
      }
    }
    for (size_t i = 0; i < tail; i++) {
      size_t q = queue[i];
      in_comp[q] = false;
      if (px(in, (int)(q % w), (int)(q / w)) == v) decided[q] = true, res[q] = flat;
    }
  }
  free(decided), free(in_comp), free(queue);
  return res;
}

static void test_regional(void) {
  int before = failed, runs = 0;
  static const pxl_type outs[] = {PXL_U8, PXL_F32, PXL_I16};
  for (int s = 0; s < NSIZES + 2; s++)
    for (int ti = 0; ti < NTYPES; ti++)
      for (int p = 0; p < P_COUNT; p++) {
        if (s >= NSIZES && (!LARGE_TYPE(TYPES[ti]) || p == P_MANY || p == P_BINARY)) continue;
        static const int large[2][2] = {{300, 70}, {90, 400}};
        const int *size = s < NSIZES ? SIZES[s] : large[s - NSIZES];
        int w = size[0], h = size[1];
        pxl_type t = TYPES[ti];
        struct pxl_image *in = new_img(w, h, t, 2);
        fill(in, p, (uint64_t)(s * 100 + ti * 10 + p + 1300));
        for (int conn = 4; conn <= 8; conn += 4)
          for (int maxima = 0; maxima < 2; maxima++) {
            /* The brute force on the small images, and on 64x64 in two types (it takes long
             * there); elsewhere the reference's result is the one to match. */
            bool brute = s < NSIZES && (w * h <= 1000 || t == PXL_U8 || t == PXL_F32);
            uint8_t *want = brute ? brute_regional(in, maxima, conn) : NULL;
            for (int k = -1; k < 3; k++) {
              pxl_type ot = outs[(k + 1 + ti) % 3];
              struct pxl_image *out = new_img(w, h, ot, 0);
              Err err = {0};
              CHECK(ops_regional(in, maxima, conn, k < 0 ? &REF : &FAST[k], out, &err) == PXL_OK, "regional failed: %s",
                    err.msg);
              if (!want) {
                want = malloc((size_t)w * h);
                for (int y = 0; y < h; y++)
                  for (int x = 0; x < w; x++) want[(size_t)y * w + x] = (uint8_t)px(out, x, y);
              }
              int bad = 0;
              for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                  if (px(out, x, y) != want[(size_t)y * w + x] && bad++ == 0)
                    CHECK(0, "regional %s %dx%d %s %s conn %d %s: (%d, %d) is %g, expected %d",
                          maxima ? "maxima" : "minima", w, h, pxl_type_name(t), PATTERN[p], conn,
                          k < 0 ? "reference" : "fast", x, y, px(out, x, y), want[(size_t)y * w + x]);
              image_free(out);
              runs++;
            }
            free(want);
          }
        image_free(in);
      }
  printf("regional: minima and maxima, reference and fast (1-3 threads) against brute force, %d runs: %s\n", runs,
         failed == before ? "ok" : "FAIL");
}

/* ---- watershed ---- */

/* The contract's rule, with a linear search for the next entry: labels into lab (w * h). */
static void brute_watershed(const struct pxl_image *relief, const struct pxl_image *markers, int conn, pxl_type ot,
                            uint32_t *lab) {
  static const int dx4[4] = {0, -1, 1, 0}, dy4[4] = {-1, 0, 0, 1};
  static const int dx8[8] = {-1, 0, 1, -1, 1, -1, 0, 1}, dy8[8] = {-1, -1, -1, 0, 0, 1, 1, 1};
  int w = relief->width, h = relief->height;
  size_t n = (size_t)w * h, ne = 0;
  bool *done = calloc(n, 1), *alive = calloc(n, 1);
  uint32_t *pix = malloc(n * sizeof *pix); /* entry i (its sequence number): its pixel */
  for (size_t p = 0; p < n; p++) {
    int x = (int)(p % w), y = (int)(p / w);
    lab[p] = 0;
    double m = px(markers, x, y);
    if (m == 0) continue;
    Lane l = lane_convert(interp_load(markers, x, y, 0), scalar_of_pxl(markers->type), scalar_of_pxl(ot));
    lab[p] = (uint32_t)l.i, done[p] = true, alive[ne] = true, pix[ne++] = (uint32_t)p;
  }
  for (;;) {
    size_t best = n; /* the entry that leaves: smallest value (NaN above all), then sequence */
    double bv = 0;
    for (size_t i = 0; i < ne; i++) {
      if (!alive[i]) continue;
      double v = px(relief, (int)(pix[i] % w), (int)(pix[i] / w));
      bool better = best == n || (v == v && (bv != bv || v < bv));
      if (better) best = i, bv = v;
    }
    if (best == n) break;
    alive[best] = false;
    size_t p = pix[best];
    int x = (int)(p % w), y = (int)(p / w);
    for (int k = 0; k < conn; k++) {
      int nx = x + (conn == 4 ? dx4 : dx8)[k], ny = y + (conn == 4 ? dy4 : dy8)[k];
      if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
      size_t q = (size_t)ny * w + nx;
      if (done[q]) continue;
      done[q] = true, lab[q] = lab[p], alive[ne] = true, pix[ne++] = (uint32_t)q;
    }
  }
  free(done), free(alive), free(pix);
}

/* Markers: k random pixels with labels 1..k (k may be 0), some of them neighbours. */
static void fill_markers(struct pxl_image *m, int k, uint64_t seed) {
  rng = seed * 0x9E3779B97F4A7C15u + 3;
  for (int y = 0; y < m->height; y++)
    for (int x = 0; x < m->width; x++) set_px(m, x, y, 0);
  for (int i = 1; i <= k; i++) {
    int x = (int)(random_u64() % (uint64_t)m->width), y = (int)(random_u64() % (uint64_t)m->height);
    set_px(m, x, y, i);
    if (i % 3 == 0 && x + 1 < m->width) set_px(m, x + 1, y, i);
  }
}

/* The invariants of a watershed with positive integer markers: markers keep their labels,
 * every pixel is labelled (when there is a marker), and each label's conn-regions hold a
 * marker of that label. Returns whether they hold. */
static bool watershed_invariants(const struct pxl_image *markers, int conn, const struct pxl_image *out,
                                 const char *what) {
  int w = out->width, h = out->height;
  size_t n = (size_t)w * h;
  bool any = false, ok = true;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) any |= px(markers, x, y) != 0;
  bool *seen = calloc(n, 1);
  uint32_t *queue = malloc(n * sizeof *queue);
  for (int y = 0; y < h && ok; y++)
    for (int x = 0; x < w && ok; x++) {
      double m = px(markers, x, y), l = px(out, x, y);
      CHECK(m == 0 || l == m, "%s: marker %g at (%d, %d) got label %g", what, m, x, y, l);
      CHECK(any || l == 0, "%s: no markers, yet (%d, %d) is %g", what, x, y, l);
      CHECK(!any || l != 0, "%s: (%d, %d) is not labelled", what, x, y);
      ok = (m == 0 || l == m) && (any || l == 0) && (!any || l != 0);
      size_t p0 = (size_t)y * w + x;
      if (seen[p0] || !ok) continue;
      size_t head = 0, tail = 0;
      bool marked = false;
      queue[tail++] = (uint32_t)p0, seen[p0] = true;
      while (head < tail) {
        size_t p = queue[head++];
        int qx = (int)(p % w), qy = (int)(p / w);
        marked |= px(markers, qx, qy) == l;
        for (int k = 0; k < conn; k++) {
          int nx = qx + DX[k], ny = qy + DY[k];
          if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
          size_t q = (size_t)ny * w + nx;
          if (seen[q] || px(out, nx, ny) != l) continue;
          seen[q] = true, queue[tail++] = (uint32_t)q;
        }
      }
      CHECK(marked || !any, "%s: a region of label %g at (%d, %d) has no marker of it", what, l, x, y);
      ok = marked || !any;
    }
  free(seen), free(queue);
  return ok;
}

static struct pxl_image *watershed(const struct pxl_image *relief, const struct pxl_image *markers, int conn,
                                   const OpsRun *run, pxl_type ot) {
  struct pxl_image *out = new_img(relief->width, relief->height, ot, 0);
  Err err = {0};
  CHECK(ops_watershed(relief, markers, conn, run, out, &err) == PXL_OK, "watershed failed: %s", err.msg);
  return out;
}

static void test_watershed(void) {
  int before = failed, runs = 0, brute = 0;
  static const pxl_type mtypes[] = {PXL_U8, PXL_U32, PXL_F32, PXL_I16};
  for (int s = 0; s < NSIZES + 2; s++)
    for (int ti = 0; ti < NTYPES; ti++)
      for (int p = 0; p < P_COUNT; p++) {
        if (s >= NSIZES && !LARGE_TYPE(TYPES[ti])) continue;
        static const int large[2][2] = {{300, 90}, {77, 260}};
        const int *size = s < NSIZES ? SIZES[s] : large[s - NSIZES];
        int w = size[0], h = size[1];
        pxl_type t = TYPES[ti], mt = mtypes[(p + ti) % 4];
        size_t n = (size_t)w * h;
        struct pxl_image *relief = new_img(w, h, t, 1), *markers = new_img(w, h, mt, 2);
        fill(relief, p, (uint64_t)(s * 100 + ti * 10 + p + 2000));
        int k = (int)(p % 3 == 0 ? n / 20 : p % 3 == 1 ? 3 : n / 5 + 1);
        if (p == P_RAMP && s % 2) k = 0;
        fill_markers(markers, k > 250 ? 250 : k, (uint64_t)(s * 100 + ti * 10 + p + 2100));
        for (int conn = 4; conn <= 8; conn += 4) {
          char what[128];
          snprintf(what, sizeof what, "watershed %dx%d %s %s conn %d", w, h, pxl_type_name(t), PATTERN[p], conn);
          pxl_type ot = (p + conn / 4) % 2 ? PXL_U32 : PXL_I32;
          struct pxl_image *ref = watershed(relief, markers, conn, &REF, ot);
          watershed_invariants(markers, conn, ref, what);
          if (n <= 2000) {
            uint32_t *lab = malloc(n * sizeof *lab);
            brute_watershed(relief, markers, conn, ot, lab);
            bool same = true;
            for (int y = 0; y < h; y++) same &= !memcmp(image_row(ref, y), lab + (size_t)y * w, (size_t)w * 4);
            CHECK(same, "%s: the reference is not the rule's flooding", what);
            free(lab);
            brute++;
          }
          for (int j = 0; j < 3; j += 2) { /* one thread and three: the flooding is sequential */
            struct pxl_image *fast = watershed(relief, markers, conn, &FAST[j], ot);
            CHECK(same_bits(ref, fast), "%s: fast differs from the reference", what);
            image_free(fast);
            runs++;
          }
          image_free(ref);
          runs++;
        }
        image_free(relief), image_free(markers);
      }
  /* A marker that converts to label 0 still floods (i32 markers, u32 output: -5 -> 0). */
  struct pxl_image *relief = new_img(9, 1, PXL_U8, 0), *markers = new_img(9, 1, PXL_I32, 0);
  for (int x = 0; x < 9; x++) set_px(relief, x, 0, x), set_px(markers, x, 0, x == 0 ? -5 : x == 8 ? 7 : 0);
  struct pxl_image *ref = watershed(relief, markers, 4, &REF, PXL_U32),
                   *fast = watershed(relief, markers, 4, &FAST[0], PXL_U32);
  uint32_t want[9] = {0, 0, 0, 0, 0, 0, 0, 0, 7};
  CHECK(!memcmp(image_row(ref, 0), want, sizeof want) && same_bits(ref, fast), "a marker of label 0 does not flood");
  image_free(relief), image_free(markers), image_free(ref), image_free(fast);
  printf("watershed: reference against the rule (%d images), fast against the reference, invariants, %d runs: %s\n",
         brute, runs, failed == before ? "ok" : "FAIL");
}

static void test_watershed_minima(void) {
  int before = failed, runs = 0;
  for (int s = 0; s < NSIZES; s++)
    for (int ti = 0; ti < NTYPES; ti++)
      for (int p = 0; p < P_COUNT; p++) {
        int w = SIZES[s][0], h = SIZES[s][1];
        size_t n = (size_t)w * h;
        if (n > 2000) continue;
        struct pxl_image *relief = new_img(w, h, TYPES[ti], 1);
        fill(relief, p, (uint64_t)(s * 100 + ti * 10 + p + 4000));
        for (int conn = 4; conn <= 8; conn += 4) {
          /* The minima, numbered in raster order of their first pixels, as markers. */
          uint8_t *minima = brute_regional(relief, false, conn);
          struct pxl_image *markers = new_img(w, h, PXL_U32, 0);
          for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) set_px(markers, x, y, 0);
          bool *seed = calloc(n, 1), *reached = calloc(n, 1), *pass = malloc(n);
          uint32_t *queue = malloc(n * sizeof *queue), next = 0;
          for (size_t q = 0; q < n; q++) pass[q] = minima[q];
          for (size_t q = 0; q < n; q++) {
            if (!minima[q] || px(markers, (int)(q % w), (int)(q / w))) continue;
            memset(seed, 0, n);
            seed[q] = true;
            flood(w, h, conn, seed, pass, reached, queue);
            next++;
            for (size_t r = 0; r < n; r++)
              if (reached[r]) set_px(markers, (int)(r % w), (int)(r / w), next);
          }
          uint32_t *lab = malloc(n * sizeof *lab);
          brute_watershed(relief, markers, conn, PXL_U32, lab);
          for (int k = -1; k < 3; k += 2) {
            struct pxl_image *out = new_img(w, h, PXL_U32, 0);
            Err err = {0};
            CHECK(ops_watershed_minima(relief, conn, false, k < 0 ? &REF : &FAST[k], out, &err) == PXL_OK,
                  "watershed_minima failed: %s", err.msg);
            bool same = true;
            for (int y = 0; y < h; y++) same &= !memcmp(image_row(out, y), lab + (size_t)y * w, (size_t)w * 4);
            CHECK(same, "watershed_minima %dx%d %s %s conn %d %s: not the minima's flooding", w, h,
                  pxl_type_name(TYPES[ti]), PATTERN[p], conn, k < 0 ? "reference" : "fast");
            image_free(out);
            runs++;
          }
          free(minima), free(seed), free(reached), free(pass), free(queue), free(lab);
          image_free(markers);
        }
        image_free(relief);
      }
  printf("watershed_minima: against brute-force minima numbered in raster order and the rule, %d runs: %s\n", runs,
         failed == before ? "ok" : "FAIL");
}

/* Watershed lines: two hand-flooded cases, then on random reliefs what the rule implies -
 * a line pixel touches two labels, a labelled pixel other than a marker touches its own
 * label, and the marker-free, line-free rest is 0 only where no marker reaches. */
static void test_watershed_lines(void) {
  int before = failed, runs = 0;
  /* 5x1 [0 5 9 5 0], markers 1 and 2 at the ends: the 9 meets both floods */
  static const double ridge[5] = {0, 5, 9, 5, 0};
  static const uint32_t want1[5] = {1, 1, 0, 2, 2};
  /* 5x5 whose columns are 0 5 9 5 0, markers 1 at (0, 2) and 2 at (4, 2): the middle column is the line */
  for (int conn = 4; conn <= 8; conn += 4)
    for (int rows = 1; rows <= 5; rows += 4) {
      struct pxl_image *relief = new_img(5, rows, PXL_U8, 1), *markers = new_img(5, rows, PXL_U8, 0);
      struct pxl_image *out = new_img(5, rows, PXL_U32, 0);
      for (int y = 0; y < rows; y++)
        for (int x = 0; x < 5; x++) set_px(relief, x, y, ridge[x]), set_px(markers, x, y, 0);
      set_px(markers, 0, rows / 2, 1), set_px(markers, 4, rows / 2, 2);
      Err err = {0};
      CHECK(ops_watershed_lines(relief, markers, conn, &FAST[0], out, &err) == PXL_OK, "lines failed: %s", err.msg);
      for (int y = 0; y < rows; y++)
        for (int x = 0; x < 5; x++)
          CHECK(px(out, x, y) == want1[x], "lines 5x%d conn %d: (%d, %d) is %g, expected %u", rows, conn, x, y,
                px(out, x, y), want1[x]);
      image_free(relief), image_free(markers), image_free(out);
      runs++;
    }
  for (int s = 0; s < NSIZES; s++)
    for (int p = 0; p < P_COUNT; p++) {
      int w = SIZES[s][0], h = SIZES[s][1];
      if ((size_t)w * h > 5000) continue;
      struct pxl_image *relief = new_img(w, h, PXL_F32, 1), *markers = new_img(w, h, PXL_U32, 0);
      fill(relief, p, (uint64_t)(s * 100 + p + 6000));
      uint64_t r = (uint64_t)s * 7919 + (uint64_t)p + 1;
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          r = r * 6364136223846793005ull + 1442695040888963407ull;
          set_px(markers, x, y, (r >> 33) % 23 == 0 ? (double)((r >> 40) % 5 + 1) : 0);
        }
      for (int conn = 4; conn <= 8; conn += 4) {
        struct pxl_image *out = new_img(w, h, PXL_U32, 0), *ref = new_img(w, h, PXL_U32, 0);
        Err err = {0};
        CHECK(ops_watershed_lines(relief, markers, conn, &FAST[1], out, &err) == PXL_OK, "lines failed: %s", err.msg);
        CHECK(ops_watershed_lines(relief, markers, conn, &REF, ref, &err) == PXL_OK, "lines failed: %s", err.msg);
        CHECK(same_bits(out, ref), "lines %dx%d %s conn %d: reference and fast differ", w, h, PATTERN[p], conn);
        for (int y = 0; y < h; y++)
          for (int x = 0; x < w; x++) {
            uint32_t l = (uint32_t)px(out, x, y), first = 0;
            bool two = false, own = false;
            for (int dy = -1; dy <= 1; dy++)
              for (int dx = -1; dx <= 1; dx++) {
                int nx = x + dx, ny = y + dy;
                if ((!dx && !dy) || nx < 0 || ny < 0 || nx >= w || ny >= h || (conn == 4 && dx && dy)) continue;
                uint32_t m = (uint32_t)px(out, nx, ny);
                own |= m == l;
                if (m && first && m != first) two = true;
                if (m && !first) first = m;
              }
            bool marker = px(markers, x, y) != 0;
            if (marker) CHECK(l == (uint32_t)px(markers, x, y), "lines: marker (%d, %d) relabelled", x, y);
            else if (l) CHECK(own, "lines %dx%d %s conn %d: (%d, %d) labelled %u, no neighbour of its label", w, h,
                              PATTERN[p], conn, x, y, l);
            else CHECK(two || !first, "lines %dx%d %s conn %d: 0 at (%d, %d) touches one label only", w, h,
                       PATTERN[p], conn, x, y);
          }
        image_free(out), image_free(ref);
        runs++;
      }
      image_free(relief), image_free(markers);
    }
  printf("watershed lines: hand-flooded cases and the rule's invariants, %d runs: %s\n", runs,
         failed == before ? "ok" : "FAIL");
}

/* ---- errors ---- */

static void test_errors(void) {
  int before = failed;
  int w = 64, h = 48;
  struct pxl_image *a = new_img(w, h, PXL_U8, 0), *b = new_img(w, h, PXL_U8, 0), *f = new_img(w, h, PXL_F32, 0);
  struct pxl_image *small = new_img(w - 1, h, PXL_U8, 0), *l = new_img(w, h, PXL_U32, 0);
  struct pxl_image *mk = new_img(w, h, PXL_U8, 0);
  fill(a, P_MANY, 1), fill(b, P_FEW, 2), fill(f, P_NAN, 3), fill_markers(mk, 30, 4);
  Err err = {0};
  OpsRun fast = {.nthreads = 2};
  struct pxl_image three = *a;
  three.channels = 3;
  CHECK(ops_reconstruct(a, f, false, 8, &fast, b, &err) == PXL_EARG, "maps of two types accepted");
  CHECK(ops_reconstruct(a, small, false, 8, &fast, b, &err) == PXL_EARG, "maps of two sizes accepted");
  CHECK(ops_reconstruct(a, b, false, 8, &fast, small, &err) == PXL_EARG, "a smaller output accepted");
  CHECK(ops_reconstruct(&three, &three, false, 8, &fast, b, &err) == PXL_EARG, "three channels accepted");
  CHECK(ops_reconstruct(a, b, false, 6, &fast, b, &err) == PXL_EARG, "connectivity 6 accepted");
  CHECK(ops_fill(a, 5, &fast, b, &err) == PXL_EARG, "fill: connectivity 5 accepted");
  CHECK(ops_regional(a, false, 8, &fast, small, &err) == PXL_EARG, "regional: a smaller output accepted");
  CHECK(ops_regional(a, false, 0, &fast, b, &err) == PXL_EARG, "regional: connectivity 0 accepted");
  CHECK(ops_watershed(a, mk, 8, &fast, b, &err) == PXL_EARG, "watershed: a u8 output accepted");
  CHECK(ops_watershed(a, small, 8, &fast, l, &err) == PXL_EARG, "watershed: markers of another size accepted");
  CHECK(ops_watershed(a, mk, 3, &fast, l, &err) == PXL_EARG, "watershed: connectivity 3 accepted");
  CHECK(ops_watershed_minima(a, 8, false, &fast, f, &err) == PXL_EARG, "watershed_minima: an f32 output accepted");
  CHECK(ops_watershed_lines(a, mk, 8, &fast, b, &err) == PXL_EARG, "watershed_lines: a u8 output accepted");
  CHECK(ops_watershed_lines(a, mk, 6, &fast, l, &err) == PXL_EARG, "watershed_lines: connectivity 6 accepted");
  for (int op = 0; op < 7; op++)
    for (int r = 0; r < 2; r++) {
      const OpsRun *run = r ? &REF : &fast;
      bool done = false;
      for (long k = 0; k < 200 && !done; k++) {
        pxl_test_fail_alloc_after(k);
        int rc = op == 0   ? ops_reconstruct(b, a, false, 8, run, f, &err)
                 : op == 1 ? ops_fill(f, 4, run, b, &err)
                 : op == 2 ? ops_regional(f, true, 8, run, b, &err)
                 : op == 3 ? ops_watershed(f, mk, 8, run, l, &err)
                 : op == 4 ? ops_watershed_minima(a, 4, false, run, l, &err)
                 : op == 5 ? ops_watershed_lines(f, mk, 8, run, l, &err)
                           : ops_watershed_minima(a, 8, true, run, l, &err);
        pxl_test_fail_alloc_after(-1);
        done = rc == PXL_OK;
        CHECK(rc == PXL_OK || (rc == PXL_ENOMEM && err.code == PXL_ENOMEM), "op %d, allocation %ld failing: status %d",
              op, k, rc);
      }
      CHECK(done, "op %d never succeeded", op);
    }
  image_free(a), image_free(b), image_free(f), image_free(small), image_free(l), image_free(mk);
  printf("errors: argument guards, every allocation failing in turn: %s\n", failed == before ? "ok" : "FAIL");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines as they come, also into a pipe */
  test_reconstruct();
  test_reconstruct_floats();
  test_reconstruct_large();
  test_fill();
  test_regional();
  test_watershed();
  test_watershed_minima();
  test_watershed_lines();
  test_errors();
  printf("%s\n", failed ? "FAIL" : "ok");
  return failed != 0;
}
