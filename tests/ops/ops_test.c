/*
 * ops_test.c - the global operators (src/ops) against checks that share no code with them.
 *
 * Distance transform: on small images, both algorithms against a brute force that takes,
 * for every pixel, the minimum of the metric over every feature pixel, stored through
 * lane_convert (the contract's conversion), for each metric and output type; images from
 * 1x1 to 100x37, no feature (+inf), one, 1%, 30% and all; long thin images whose distances
 * pass 255 (u8 saturates) and 65535-long ones whose squared distances pass 2^32. On larger
 * images (a spiral maze, a feature in a corner, random) the fast algorithm against the
 * reference with 1, 2 and 3 threads.
 *
 * Nearest features (ops_nearest): both algorithms against a brute force of the rule (of the
 * features at the smallest squared distance, the smallest x, then the smallest y) on the
 * same small images, u32 and i32, and on grids of features where most pixels are ties; on
 * the larger images the fast one against the reference, 1 to 3 threads, also into a view.
 *
 * Labelling: both algorithms checked against what characterises the result without
 * computing it: a pixel is 0 iff its value is; neighbours (for the connectivity) share a
 * label iff their nonzero values are equal; labels first appear in raster order as
 * 1, 2, 3, ...; every label's pixels are one connected set (a flood fill over neighbours of
 * that label from its first pixel reaches them all); the count is the largest label.
 * Binary maps at three densities, grey maps of 2 to 4 values in six types (f32 with -0.0
 * and NaN), checkerboards, spirals, stripes, combs whose teeth meet in the last rows; 1, 2,
 * 3 and 5 threads, and images with fewer rows than threads.
 *
 * Outputs are packed (no slack after a row for a stray write to hide in) and start as
 * garbage (a pixel left unwritten shows), or owned images whose row padding must stay 0,
 * or views into larger images whose pixels around the view must survive (the fast
 * algorithms keep their scratch data in the output), or, for labels, rows 4 GiB apart.
 * Then the argument guards and every allocation failing in turn.
 *
 * Prints one line per group and "ok" or the failures; returns nonzero on any failure.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS and MAP_NORESERVE under -std=c11 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/check.h"
#include "pixels.h"
#include "interp/interp.h"
#include "ops/ops.h"
#include "util/alloc.h"

static const pxl_type DIST_TYPES[] = {PXL_F32, PXL_F64, PXL_U8, PXL_U16, PXL_U32, PXL_I32, PXL_I16};
#define NDIST_TYPES (int)(sizeof DIST_TYPES / sizeof DIST_TYPES[0])
static const char *METRIC_NAME[] = {"L2", "L1", "LINF"};

static struct pxl_image *new_image(int w, int h, pxl_type t) {
  struct pxl_image *img = NULL;
  Err err;
  if (image_new(w, h, t, 1, &img, &err) != PXL_OK) {
    printf("FAIL: cannot allocate a %dx%d image: %s\n", w, h, err.msg);
    exit(1);
  }
  return img;
}

/* An output image whose rows are packed (pitch = width * element size, no slack after the
 * last pixel for a stray write to land in unseen) and whose pixels start as garbage, so
 * that a pixel left unwritten shows. */
static struct pxl_image *new_output(int w, int h, pxl_type t) {
  struct pxl_image *img = PXL_CALLOC(1, sizeof *img);
  size_t pitch = (size_t)w * (size_t)pxl_type_size(t);
  img->data = img->alloc = PXL_MALLOC(pitch * (size_t)h);
  if (!img->data) {
    printf("FAIL: cannot allocate a %dx%d output\n", w, h);
    exit(1);
  }
  memset(img->data, 0xA5, pitch * (size_t)h);
  img->width = w, img->height = h, img->channels = 1, img->type = t, img->pitch = pitch;
  return img;
}

/* Whether two lanes of an image of type t hold the same value (floats: the same double,
 * which for stored f32 values is the same float). */
static bool lane_same(Lane a, Lane b, pxl_type t) {
  if (t == PXL_F32 || t == PXL_F64) return a.f == b.f || (a.f != a.f && b.f != b.f);
  return a.i == b.i;
}

/* ---- distance ---- */

/* Feature images. */
enum { F_NONE, F_ONE, F_1PCT, F_30PCT, F_ALL };

static void fill_features(struct pxl_image *f, int kind, uint64_t seed) {
  rng = seed;
  int w = f->width, h = f->height;
  for (int y = 0; y < h; y++) memset(image_row(f, y), kind == F_ALL, (size_t)w);
  if (kind == F_ONE) {
    int x = (int)(random_u64() % (uint64_t)w), y = (int)(random_u64() % (uint64_t)h);
    ((uint8_t *)image_row(f, y))[x] = 1 + (uint8_t)(random_u64() % 255);
  } else if (kind == F_1PCT || kind == F_30PCT) {
    int per_mille = kind == F_1PCT ? 10 : 300;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        if ((int)(random_u64() % 1000) < per_mille) ((uint8_t *)image_row(f, y))[x] = (uint8_t)(1 + random_u64() % 255);
  }
}

/* The exact distance of every pixel to the nearest feature, straight from the definition:
 * the minimum over all feature pixels. +inf without features. */
static double *brute_distance(const struct pxl_image *f, int metric) {
  int w = f->width, h = f->height, nf = 0;
  int *fx = malloc(sizeof(int) * (size_t)w * h), *fy = malloc(sizeof(int) * (size_t)w * h);
  double *d = malloc(sizeof(double) * (size_t)w * h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      if (((uint8_t *)image_row(f, y))[x]) fx[nf] = x, fy[nf] = y, nf++;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int64_t best = -1;
      for (int k = 0; k < nf; k++) {
        int64_t dx = llabs((long long)x - fx[k]), dy = llabs((long long)y - fy[k]);
        int64_t v = metric == OPS_L2 ? dx * dx + dy * dy : metric == OPS_L1 ? dx + dy : dx > dy ? dx : dy;
        if (best < 0 || v < best) best = v;
      }
      d[(size_t)y * w + x] = best < 0 ? INFINITY : metric == OPS_L2 ? sqrt((double)best) : (double)best;
    }
  free(fx), free(fy);
  return d;
}

/* Runs ops_distance and compares every pixel with the exact distances converted by
 * lane_convert; returns the number of mismatching pixels (the first few printed). */
static int check_distance(const struct pxl_image *f, int metric, pxl_type t, OpsRun run, const double *want,
                          const char *what) {
  struct pxl_image *out = new_output(f->width, f->height, t);
  Err err = {0};
  int rc = ops_distance(f, metric, &run, out, &err);
  int bad = 0;
  if (rc != PXL_OK) {
    CHECK(0, "%s: ops_distance failed: %s", what, err.msg);
    image_free(out);
    return 1;
  }
  for (int y = 0; y < f->height; y++)
    for (int x = 0; x < f->width; x++) {
      Lane e = lane_convert((Lane){.f = want[(size_t)y * f->width + x]}, T_F64, scalar_of_pxl(t));
      Lane g = interp_load(out, x, y, 0);
      if (lane_same(e, g, t)) continue;
      if (bad++ < 3)
        CHECK(0, "%s %s %s %s threads %d at (%d, %d): got %g/%lld, want %g/%lld", what, METRIC_NAME[metric],
              pxl_type_name(t), run.reference ? "reference" : "fast", run.nthreads, x, y, g.f, (long long)g.i, e.f,
              (long long)e.i);
      else
        failed++;
    }
  image_free(out);
  return bad;
}

/* Both algorithms against the brute force on small images. */
static void test_distance_small(void) {
  static const int sizes[][2] = {{1, 1}, {1, 9}, {9, 1}, {2, 2}, {7, 5}, {31, 17}, {64, 64}, {100, 37}, {3, 50},
                                 {33, 2}};
  int before = failed, images = 0, runs = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int kind = F_NONE; kind <= F_ALL; kind++) {
      struct pxl_image *f = new_image(sizes[s][0], sizes[s][1], PXL_U8);
      fill_features(f, kind, 1000 + s * 10 + kind);
      images++;
      char what[64];
      snprintf(what, sizeof what, "%dx%d features %d", f->width, f->height, kind);
      for (int m = 0; m < 3; m++) {
        double *want = brute_distance(f, m);
        for (int t = 0; t < NDIST_TYPES; t++) {
          check_distance(f, m, DIST_TYPES[t], (OpsRun){.reference = true}, want, what);
          for (int nt = 1; nt <= 3; nt++) check_distance(f, m, DIST_TYPES[t], (OpsRun){.nthreads = nt}, want, what);
          runs += 4;
        }
        free(want);
      }
      image_free(f);
    }
  printf("distance: reference and fast (1-3 threads) against brute force, %d small images, %d runs: %s\n", images,
         runs, failed == before ? "ok" : "FAIL");
}

/* Sizes at the extremes: distances over 255 (u8 saturates, u16 does not), over 65535 in
 * L1, and squared L2 distances over 2^32 (65535 wide or tall, features at the far ends). */
static void test_distance_extent(void) {
  static const struct {
    int w, h;
    int fx[3], fy[3], nf;
  } cases[] = {
      {300, 1, {0}, {0}, 1},
      {1, 300, {0}, {299}, 1},
      {400, 3, {399, 5}, {1, 2}, 1},
      {65535, 1, {0}, {0}, 1},
      {1, 65535, {0}, {65534}, 1},
      {65535, 2, {0, 65534, 30000}, {0, 1, 1}, 3},
      {2, 65535, {1, 0}, {0, 65534}, 2},
      {40000, 3, {17, 39999}, {2, 0}, 2},
  };
  int before = failed, runs = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    struct pxl_image *f = new_image(cases[c].w, cases[c].h, PXL_U8);
    for (int k = 0; k < cases[c].nf; k++) ((uint8_t *)image_row(f, cases[c].fy[k]))[cases[c].fx[k]] = 1;
    char what[64];
    snprintf(what, sizeof what, "%dx%d", f->width, f->height);
    for (int m = 0; m < 3; m++) {
      double *want = brute_distance(f, m);
      /* The L2 reference is O(W*H^2): tall images are for the fast algorithm's columns.
       * u8 and u16 saturate, f64 is the exact value, f32 rounds it. */
      bool ref = m != OPS_L2 || (int64_t)f->width * f->height * f->height < 100000000;
      static const pxl_type types[] = {PXL_F64, PXL_F32, PXL_U8, PXL_U16};
      for (int t = 0; t < 4; t++) {
        if (ref) check_distance(f, m, types[t], (OpsRun){.reference = true}, want, what);
        check_distance(f, m, types[t], (OpsRun){.nthreads = 2}, want, what);
        runs += 1 + ref;
      }
      free(want);
    }
    image_free(f);
  }
  printf("distance: long and wide images (u8 saturation, squared distances over 2^32), %d runs: %s\n", runs,
         failed == before ? "ok" : "FAIL");
}

/* A maze of one spiral wall in a u8 image: a turtle draws it inwards from (0, 0), right,
 * down, left, up, each side 2 shorter than the last of its direction, so a corridor one
 * pixel wide winds between the turns. */
static void fill_spiral(struct pxl_image *img) {
  int w = img->width, h = img->height, x = 0, y = 0;
  static const int dx[4] = {1, 0, -1, 0}, dy[4] = {0, 1, 0, -1};
  for (int r = 0; r < h; r++) memset(image_row(img, r), 0, (size_t)w);
  ((uint8_t *)image_row(img, 0))[0] = 1;
  for (int k = 0;; k++) {
    int len = k == 0 ? w - 1 : (k % 2 ? h : w) - 1 - 2 * ((k - 1) / 2);
    if (len < 1) break;
    for (int i = 0; i < len; i++) {
      x += dx[k % 4], y += dy[k % 4];
      ((uint8_t *)image_row(img, y))[x] = 1;
    }
  }
}

/* The fast algorithm against the reference on larger images, 1, 2 and 3 threads. */
static void test_distance_large(void) {
  int before = failed, runs = 0;
  for (int c = 0; c < 6; c++) {
    struct pxl_image *f;
    const char *name;
    switch (c) {
    case 0: f = new_image(300, 200, PXL_U8), fill_features(f, F_1PCT, 7), name = "300x200 1%"; break;
    case 1: f = new_image(513, 257, PXL_U8), fill_features(f, F_30PCT, 8), name = "513x257 30%"; break;
    case 2: f = new_image(257, 257, PXL_U8), fill_spiral(f), name = "257x257 spiral maze"; break;
    case 3:
      f = new_image(200, 300, PXL_U8), fill_features(f, F_NONE, 0), name = "200x300 top-left corner";
      ((uint8_t *)image_row(f, 0))[0] = 1;
      break;
    case 4:
      f = new_image(301, 199, PXL_U8), fill_features(f, F_NONE, 0), name = "301x199 bottom-right corner";
      ((uint8_t *)image_row(f, 198))[300] = 1;
      break;
    default: f = new_image(129, 65, PXL_U8), fill_features(f, F_NONE, 0), name = "129x65 no feature"; break;
    }
    for (int m = 0; m < 3; m++) {
      /* The reference's exact values (f64), then the fast algorithm in f64 with 1 to 3
       * threads, and in f32 and u8, against them converted. */
      struct pxl_image *ref = new_image(f->width, f->height, PXL_F64);
      Err err = {0};
      CHECK(ops_distance(f, m, &(OpsRun){.reference = true}, ref, &err) == PXL_OK, "%s: %s", name, err.msg);
      double *want = malloc(sizeof(double) * (size_t)f->width * f->height);
      for (int y = 0; y < f->height; y++) memcpy(want + (size_t)y * f->width, image_row(ref, y), image_row_bytes(ref));
      for (int nt = 1; nt <= 3; nt++) check_distance(f, m, PXL_F64, (OpsRun){.nthreads = nt}, want, name);
      check_distance(f, m, PXL_F32, (OpsRun){.nthreads = 2}, want, name);
      check_distance(f, m, PXL_U8, (OpsRun){.nthreads = 3}, want, name);
      runs += 5;
      free(want);
      image_free(ref);
    }
    image_free(f);
  }
  printf("distance: fast against reference on larger images (spiral, corners, random), %d runs: %s\n", runs,
         failed == before ? "ok" : "FAIL");
}

/* An output that is a view in the middle of a larger image (the fast transform keeps its
 * column distances in the output's rows): the view equals the reference, the pixels
 * around it stay as they were. */
static void test_distance_view(void) {
  int before = failed, w = 190, h = 130, pw = 2 * w + 9;
  struct pxl_image *f = new_image(w, h, PXL_U8);
  fill_features(f, F_1PCT, 12);
  for (int m = 0; m < 3; m++) {
    static const pxl_type types[] = {PXL_U16, PXL_F32};
    for (int t = 0; t < 2; t++) {
      int sz = pxl_type_size(types[t]);
      struct pxl_image *ref = new_image(w, h, types[t]), *parent = new_output(pw, h, types[t]), view = *parent;
      view.data = (char *)parent->data + 7 * sz, view.alloc = NULL, view.width = w;
      Err err = {0};
      CHECK(ops_distance(f, m, &(OpsRun){.reference = true}, ref, &err) == PXL_OK, "%s", err.msg);
      CHECK(ops_distance(f, m, &(OpsRun){.nthreads = 2}, &view, &err) == PXL_OK, "%s", err.msg);
      bool same = true, kept = true;
      for (int y = 0; y < h; y++) {
        same &= memcmp(image_row(ref, y), image_row(&view, y), (size_t)w * sz) == 0;
        const uint8_t *r = image_row(parent, y);
        for (int b = 0; b < pw * sz; b++) kept &= (b >= 7 * sz && b < (7 + w) * sz) || r[b] == 0xA5;
      }
      CHECK(same, "%s %s: a view differs from the reference", METRIC_NAME[m], pxl_type_name(types[t]));
      CHECK(kept, "%s %s: the transform changed pixels around its view", METRIC_NAME[m], pxl_type_name(types[t]));
      image_free(ref), image_free(parent);
    }
  }
  image_free(f);
  /* In place: the u8 features overwritten by their u8 distances, and by u16 ones in the
   * same memory (the u8 image wraps the u16 output's bytes). */
  for (int m = 0; m < 3; m++) {
    struct pxl_image *fi = new_image(w, h, PXL_U8), *ref = new_image(w, h, PXL_U8);
    fill_features(fi, F_1PCT, 13);
    Err err = {0};
    CHECK(ops_distance(fi, m, &(OpsRun){.reference = true}, ref, &err) == PXL_OK, "%s", err.msg);
    CHECK(ops_distance(fi, m, &(OpsRun){.nthreads = 2}, fi, &err) == PXL_OK, "%s", err.msg);
    bool same = true;
    for (int y = 0; y < h; y++) same &= memcmp(image_row(ref, y), image_row(fi, y), (size_t)w) == 0;
    CHECK(same, "%s: the transform in place differs from the reference", METRIC_NAME[m]);
    struct pxl_image *o16 = new_image(w, h, PXL_U16), *r16 = new_image(w, h, PXL_U16), f8 = *o16;
    f8.type = PXL_U8, f8.alloc = NULL;
    fill_features(&f8, F_1PCT, 14);
    CHECK(ops_distance(&f8, m, &(OpsRun){.reference = true}, r16, &err) == PXL_OK, "%s", err.msg);
    CHECK(ops_distance(&f8, m, &(OpsRun){.nthreads = 2}, o16, &err) == PXL_OK, "%s", err.msg);
    same = true;
    for (int y = 0; y < h; y++) same &= memcmp(image_row(r16, y), image_row(o16, y), (size_t)w * 2) == 0;
    CHECK(same, "%s: u16 distances over their own features differ from the reference", METRIC_NAME[m]);
    image_free(fi), image_free(ref), image_free(o16), image_free(r16);
  }
  printf("distance: an output that is a view of a larger image, or the features themselves: %s\n",
         failed == before ? "ok" : "FAIL");
}

/* ---- nearest features ---- */

/* The raster index of every pixel's nearest feature by the rule, straight from it: over
 * the features in column-major order (x, then y), the first at the smallest squared
 * distance. -1 without features. */
static int64_t *brute_nearest(const struct pxl_image *f) {
  int w = f->width, h = f->height;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)w * h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int64_t best = -1, at = -1;
      for (int fx = 0; fx < w; fx++)
        for (int fy = 0; fy < h; fy++) {
          if (!((uint8_t *)image_row(f, fy))[fx]) continue;
          int64_t d = (int64_t)(x - fx) * (x - fx) + (int64_t)(y - fy) * (y - fy);
          if (best < 0 || d < best) best = d, at = (int64_t)fy * w + fx;
        }
      idx[(size_t)y * w + x] = at;
    }
  return idx;
}

/* Runs ops_nearest into a packed garbage output (or `view`) and compares with want;
 * returns the number of mismatching pixels. */
static int check_nearest(const struct pxl_image *f, pxl_type t, OpsRun run, const int64_t *want, const char *what,
                         struct pxl_image *view) {
  struct pxl_image *out = view ? view : new_output(f->width, f->height, t);
  Err err = {0};
  int rc = ops_nearest(f, &run, out, &err), bad = 0;
  CHECK(rc == PXL_OK, "%s: ops_nearest failed: %s", what, err.msg);
  for (int y = 0; rc == PXL_OK && y < f->height; y++)
    for (int x = 0; x < f->width; x++) {
      int64_t e = want[(size_t)y * f->width + x], g = interp_load(out, x, y, 0).i;
      if (t == PXL_U32 && e < 0) e = UINT32_MAX;
      if (g != e && bad++ < 3)
        CHECK(0, "%s %s %s threads %d at (%d, %d): got %lld, want %lld", what, pxl_type_name(t),
              run.reference ? "reference" : "fast", run.nthreads, x, y, (long long)g, (long long)e);
    }
  if (!view) image_free(out);
  return bad;
}

static void test_nearest(void) {
  static const int sizes[][2] = {{1, 1}, {1, 9}, {9, 1}, {2, 2}, {7, 5}, {31, 17}, {64, 64}, {3, 50}, {33, 2}};
  int before = failed, runs = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int kind = F_NONE; kind <= F_ALL + 2; kind++) {
      struct pxl_image *f = new_image(sizes[s][0], sizes[s][1], PXL_U8);
      fill_features(f, kind > F_ALL ? F_NONE : kind, 2000 + s * 10 + kind);
      /* grids: every 4th column of every 6th row, or every other pixel of every other row
       * (a pixel between features ties with two or four of them) */
      int gx = kind == F_ALL + 1 ? 4 : 2, gy = kind == F_ALL + 1 ? 6 : 2;
      if (kind > F_ALL)
        for (int y = 0; y < f->height; y += gy)
          for (int x = 0; x < f->width; x += gx) ((uint8_t *)image_row(f, y))[x] = 1;
      char what[64];
      snprintf(what, sizeof what, "nearest %dx%d features %d", f->width, f->height, kind);
      int64_t *want = brute_nearest(f);
      for (int t = 0; t < 2; t++) {
        pxl_type type = t ? PXL_I32 : PXL_U32;
        check_nearest(f, type, (OpsRun){.reference = true}, want, what, NULL);
        for (int nt = 1; nt <= 3; nt++) check_nearest(f, type, (OpsRun){.nthreads = nt}, want, what, NULL);
        runs += 4;
      }
      free(want), image_free(f);
    }
  for (int c = 0; c < 3; c++) {
    int w = c == 2 ? 257 : 300, h = c == 2 ? 257 : 200;
    struct pxl_image *f = new_image(w, h, PXL_U8), *ref = new_image(w, h, PXL_I32);
    if (c == 2)
      fill_spiral(f);
    else
      fill_features(f, c ? F_30PCT : F_1PCT, 70 + c);
    Err err = {0};
    CHECK(ops_nearest(f, &(OpsRun){.reference = true}, ref, &err) == PXL_OK, "%s", err.msg);
    int64_t *want = malloc(sizeof(int64_t) * (size_t)w * h);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) want[(size_t)y * w + x] = ((int32_t *)image_row(ref, y))[x];
    for (int nt = 1; nt <= 3; nt++) check_nearest(f, PXL_U32, (OpsRun){.nthreads = nt}, want, "nearest large", NULL);
    /* into a view of a larger image (phase 1 keeps g in the output's rows): the pixels
     * around it stay as they were */
    struct pxl_image *parent = new_output(2 * w + 9, h, PXL_U32), view = *parent;
    view.data = (char *)parent->data + 7 * 4, view.alloc = NULL, view.width = w;
    check_nearest(f, PXL_U32, (OpsRun){.nthreads = 2}, want, "nearest view", &view);
    bool kept = true;
    for (int y = 0; y < h; y++)
      for (int b = 0; b < (2 * w + 9) * 4; b++)
        kept &= (b >= 7 * 4 && b < (7 + w) * 4) || ((uint8_t *)image_row(parent, y))[b] == 0xA5;
    CHECK(kept, "nearest: pixels around a view were overwritten");
    runs += 5;
    free(want), image_free(f), image_free(ref), image_free(parent);
  }
  printf("nearest: reference and fast against brute force of the rule (ties: grids), fast against reference on "
         "larger images and a view, %d runs: %s\n",
         runs, failed == before ? "ok" : "FAIL");
}

/* ---- labels ---- */

/* Background: the value is zero (-0.0 too; NaN is not). */
static bool background(const struct pxl_image *m, int x, int y) { return px(m, x, y) == 0; }

/* Whether two pixels are joined: both nonzero and equal (NaN equals nothing). Every value
 * of the types used here is exact as a double. */
static bool joined(const struct pxl_image *m, int x, int y, int u, int v) {
  return !background(m, x, y) && px(m, x, y) == px(m, u, v);
}

static uint32_t label_at(const struct pxl_image *out, int x, int y) {
  return ((const uint32_t *)image_row(out, y))[x];
}

/* Checks a labelling against the characterisation in the file's comment; returns whether it
 * holds (the first failures printed). */
static bool check_labels(const struct pxl_image *m, int conn, const struct pxl_image *out, int64_t count,
                         const char *what) {
  int w = m->width, h = m->height, errors = 0;
#define LFAIL(...)                                                            \
  do {                                                                        \
    if (errors++ < 3) CHECK(0, __VA_ARGS__);                                  \
    else failed++;                                                            \
  } while (0)
  /* Forward neighbours: right, down, and for 8: down-right, down-left. */
  static const int fdx[4] = {1, 0, 1, -1}, fdy[4] = {0, 1, 1, 1};
  uint32_t max = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      uint32_t l = label_at(out, x, y);
      if ((l == 0) != background(m, x, y)) LFAIL("%s: (%d, %d) label %u, value %g", what, x, y, l, px(m, x, y));
      if (l > max + 1) LFAIL("%s: (%d, %d) label %u appears before %u", what, x, y, l, max + 1);
      if (l > max) max = l;
      for (int k = 0; k < conn / 2; k++) {
        int u = x + fdx[k], v = y + fdy[k];
        if (u < 0 || u >= w || v >= h) continue;
        bool j = joined(m, x, y, u, v), s = l != 0 && l == label_at(out, u, v);
        if (j != s) LFAIL("%s: (%d, %d) and (%d, %d): values %g %g, labels %u %u", what, x, y, u, v, px(m, x, y),
                          px(m, u, v), l, label_at(out, u, v));
      }
    }
  if (count != (int64_t)max) LFAIL("%s: count %lld, largest label %u", what, (long long)count, max);
  /* Each label's pixels are connected: a flood fill from its first pixel reaches them all. */
  size_t n = (size_t)w * h;
  uint64_t *size = calloc((size_t)max + 1, sizeof *size);
  uint32_t *queue = malloc(n * sizeof *queue);
  bool *seen = calloc(n, 1);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) size[label_at(out, x, y)]++;
  for (int y = 0; y < h && errors == 0; y++)
    for (int x = 0; x < w; x++) {
      uint32_t l = label_at(out, x, y);
      size_t p = (size_t)y * w + x;
      if (l == 0 || seen[p]) continue;
      size_t head = 0, tail = 0;
      queue[tail++] = (uint32_t)p, seen[p] = true;
      while (head < tail) {
        int qx = (int)(queue[head] % w), qy = (int)(queue[head] / w);
        head++;
        for (int dy = -1; dy <= 1; dy++)
          for (int dx = -1; dx <= 1; dx++) {
            int u = qx + dx, v = qy + dy;
            if ((dx == 0) == (dy == 0) && (conn == 4 || (dx == 0 && dy == 0))) continue;
            if (u < 0 || u >= w || v < 0 || v >= h || seen[(size_t)v * w + u] || label_at(out, u, v) != l) continue;
            seen[(size_t)v * w + u] = true;
            queue[tail++] = (uint32_t)((size_t)v * w + u);
          }
      }
      if (tail != size[l]) LFAIL("%s: label %u has %llu pixels, %zu connected to its first", what, l,
                                 (unsigned long long)size[l], tail);
    }
  free(size), free(queue), free(seen);
  return errors == 0;
#undef LFAIL
}

/* Map patterns. */
enum { M_BINARY, M_GREY, M_CHECKER, M_CHECKER2, M_SPIRAL, M_HSTRIPES, M_VSTRIPES, M_COMB, M_SOLID };

/* Fills map m with a pattern; `param` is the density in percent (binary) or the number of
 * values (grey, 2..4, value 0 among them). Float grey maps draw -0.0 and NaN too. */
static void fill_map(struct pxl_image *m, int pattern, int param, uint64_t seed) {
  rng = seed;
  int w = m->width, h = m->height;
  bool fl = m->type == PXL_F32 || m->type == PXL_F64;
  /* Grey values: 0 and a few others, negative where the type has them. */
  double values[] = {0, m->type == PXL_I16 || m->type == PXL_I32 || fl ? -3 : 3, 200, 70000};
  if (m->type == PXL_U8) values[3] = 9;
  if (m->type == PXL_I16 || m->type == PXL_U16) values[3] = 30000;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      double v = 0;
      switch (pattern) {
      case M_BINARY: v = (int)(random_u64() % 100) < param; break;
      case M_GREY:
        v = values[random_u64() % (uint64_t)param];
        if (fl && random_u64() % 16 == 0) v = random_u64() % 2 ? -0.0 : NAN;
        break;
      case M_CHECKER: v = (x + y) % 2; break;
      case M_CHECKER2: v = 1 + (x + y) % 2; break;
      case M_HSTRIPES: v = y % 3 == 2 ? 0 : 1 + y % 2; break;
      case M_VSTRIPES: v = x % 2; break;
      case M_COMB: v = y >= h - 2 || x % 3 == 0; break; /* teeth joined by the bottom rows */
      case M_SOLID: v = 5; break;
      default: break;
      }
      set_px(m, x, y, v);
    }
  if (pattern == M_SPIRAL) {
    struct pxl_image *u8 = new_image(w, h, PXL_U8);
    fill_spiral(u8);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) set_px(m, x, y, ((uint8_t *)image_row(u8, y))[x]);
    image_free(u8);
  }
}

static void test_labels(void) {
  static const int sizes[][2] = {{1, 1}, {1, 13}, {13, 1}, {2, 2}, {3, 2}, {5, 4}, {17, 3}, {40, 25}, {65, 7},
                                 {129, 5}, {64, 61}, {160, 120}};
  static const struct {
    int pattern, param;
    pxl_type type;
  } maps[] = {
      {M_BINARY, 10, PXL_U8},  {M_BINARY, 50, PXL_U8},  {M_BINARY, 90, PXL_U8},   {M_BINARY, 50, PXL_F32},
      {M_GREY, 2, PXL_U8},     {M_GREY, 3, PXL_U8},     {M_GREY, 4, PXL_U8},      {M_GREY, 3, PXL_U16},
      {M_GREY, 4, PXL_I16},    {M_GREY, 4, PXL_I32},    {M_GREY, 4, PXL_U32},     {M_GREY, 3, PXL_F32},
      {M_GREY, 4, PXL_F64},    {M_CHECKER, 0, PXL_U8},  {M_CHECKER2, 0, PXL_U16}, {M_SPIRAL, 0, PXL_U8},
      {M_HSTRIPES, 0, PXL_U8}, {M_VSTRIPES, 0, PXL_U8}, {M_COMB, 0, PXL_U8},      {M_SOLID, 0, PXL_F64},
  };
  static const int threads[] = {1, 2, 3, 5};
  int before = failed, runs = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t p = 0; p < sizeof maps / sizeof maps[0]; p++) {
      int w = sizes[s][0], h = sizes[s][1];
      struct pxl_image *m = new_image(w, h, maps[p].type);
      fill_map(m, maps[p].pattern, maps[p].param, 77 + s * 100 + p);
      struct pxl_image *ref = new_output(w, h, PXL_U32), *out = new_output(w, h, PXL_U32);
      struct pxl_image *owned = new_image(w, h, PXL_I32);
      for (int conn = 4; conn <= 8; conn += 4) {
        char what[96];
        snprintf(what, sizeof what, "%dx%d %s map %d/%d conn %d", w, h, pxl_type_name(maps[p].type),
                 maps[p].pattern, maps[p].param, conn);
        Err err = {0};
        int64_t count = -1;
        CHECK(ops_label(m, conn, &(OpsRun){.reference = true}, ref, &count, &err) == PXL_OK, "%s: %s", what, err.msg);
        char rwhat[128];
        snprintf(rwhat, sizeof rwhat, "%s reference", what);
        check_labels(m, conn, ref, count, rwhat);
        runs++;
        /* Known counts of the regular patterns. */
        if (maps[p].pattern == M_CHECKER && w * h > 1)
          CHECK(count == (conn == 8 && w > 1 && h > 1 ? 1 : (int64_t)w * h / 2), "%s: checkerboard count %lld", what,
                (long long)count);
        if (maps[p].pattern == M_CHECKER2)
          CHECK(count == (conn == 8 && w > 1 && h > 1 ? 2 : (int64_t)w * h), "%s: two-value checkerboard count %lld",
                what, (long long)count);
        /* Packed u32 outputs and owned, padded i32 ones (whose padding must stay 0). */
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
          struct pxl_image *o = t % 2 ? owned : out;
          for (int y = 0; y < h; y++) memset(image_row(o, y), 0xA5, (size_t)w * 4);
          int64_t c2 = -1;
          CHECK(ops_label(m, conn, &(OpsRun){.nthreads = threads[t]}, o, &c2, &err) == PXL_OK, "%s: %s", what,
                err.msg);
          snprintf(rwhat, sizeof rwhat, "%s fast threads %d %s", what, threads[t], pxl_type_name(o->type));
          check_labels(m, conn, o, c2, rwhat);
          runs++;
          bool same = c2 == count, padding = true;
          for (int y = 0; y < h && same; y++) same = memcmp(image_row(ref, y), image_row(o, y), (size_t)w * 4) == 0;
          for (int y = 0; y < h; y++)
            for (size_t b = (size_t)w * 4; b < o->pitch; b++) padding &= ((uint8_t *)image_row(o, y))[b] == 0;
          CHECK(same, "%s: fast with %d threads differs from the reference", what, threads[t]);
          CHECK(padding, "%s: fast with %d threads left the row padding nonzero", what, threads[t]);
        }
      }
      image_free(m), image_free(ref), image_free(out), image_free(owned);
    }
  printf("label: reference and fast (1, 2, 3, 5 threads) checked, %d runs: %s\n", runs,
         failed == before ? "ok" : "FAIL");
}

/* The fast labelling keeps its union-find in the output image unless the output is a view
 * (the memory between its rows is other pixels') or its ids would not fit 31 bits
 * (h * pitch / 4 >= 2^31): then in a temporary. A view in the middle of a larger image,
 * whose pixels around it must stay as they were, and an output of two rows 4 GiB apart
 * (reserved, not committed). */
static void test_label_views(void) {
  int before = failed;
  {
    int w = 150, h = 120, pw = 2 * w + 7; /* the view: columns [5, 5 + w) of a pw-wide image */
    struct pxl_image *m = new_image(w, h, PXL_U8), *ref = new_image(w, h, PXL_U32);
    struct pxl_image *parent = new_output(pw, h, PXL_U32), view = *parent;
    view.data = (uint32_t *)parent->data + 5, view.alloc = NULL, view.width = w;
    fill_map(m, M_BINARY, 50, 98);
    Err err = {0};
    int64_t c1 = -1, c2 = -2;
    CHECK(ops_label(m, 8, &(OpsRun){.reference = true}, ref, &c1, &err) == PXL_OK, "%s", err.msg);
    CHECK(ops_label(m, 8, &(OpsRun){.nthreads = 2}, &view, &c2, &err) == PXL_OK, "%s", err.msg);
    bool same = c1 == c2, kept = true;
    for (int y = 0; y < h; y++) {
      same &= memcmp(image_row(ref, y), image_row(&view, y), (size_t)w * 4) == 0;
      const uint32_t *r = image_row(parent, y);
      for (int x = 0; x < pw; x++) kept &= (x >= 5 && x < 5 + w) || r[x] == 0xA5A5A5A5u;
    }
    CHECK(same, "labels in a view differ from the reference");
    CHECK(kept, "labelling a view changed pixels around it");
    image_free(m), image_free(ref), image_free(parent);
  }
  /* In place: a u32 map labelled into itself, both algorithms. */
  for (int conn = 4; conn <= 8; conn += 4) {
    int w = 140, h = 150;
    struct pxl_image *m = new_image(w, h, PXL_U32), *ref = new_image(w, h, PXL_U32);
    fill_map(m, M_GREY, 3, 97);
    Err err = {0};
    int64_t c1 = -1, c2 = -2;
    CHECK(ops_label(m, conn, &(OpsRun){.reference = true}, ref, &c1, &err) == PXL_OK, "%s", err.msg);
    struct pxl_image *m2 = new_image(w, h, PXL_U32);
    for (int y = 0; y < h; y++) memcpy(image_row(m2, y), image_row(m, y), (size_t)w * 4);
    CHECK(ops_label(m, conn, &(OpsRun){.nthreads = 2}, m, &c2, &err) == PXL_OK, "%s", err.msg);
    bool same = c1 == c2;
    for (int y = 0; y < h; y++) same &= memcmp(image_row(ref, y), image_row(m, y), (size_t)w * 4) == 0;
    CHECK(same, "conn %d: fast labelling in place differs from the reference", conn);
    CHECK(ops_label(m2, conn, &(OpsRun){.reference = true}, m2, &c2, &err) == PXL_OK, "%s", err.msg);
    same = c1 == c2;
    for (int y = 0; y < h; y++) same &= memcmp(image_row(ref, y), image_row(m2, y), (size_t)w * 4) == 0;
    CHECK(same, "conn %d: reference labelling in place differs from the reference", conn);
    image_free(m), image_free(m2), image_free(ref);
  }
  int w = 300, h = 2;
  size_t pitch = (size_t)1 << 32;
  void *mem = mmap(NULL, pitch + (size_t)w * 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (mem == MAP_FAILED) {
    printf("label: outputs that are a view or the map: %s; rows 4 GiB apart: skipped (no address space)\n",
           failed == before ? "ok" : "FAIL");
    return;
  }
  struct pxl_image *m = new_image(w, h, PXL_U8), *ref = new_image(w, h, PXL_U32);
  struct pxl_image view = *ref;
  view.data = mem, view.pitch = pitch, view.alloc = NULL;
  fill_map(m, M_BINARY, 50, 99);
  for (int conn = 4; conn <= 8; conn += 4) {
    Err err = {0};
    int64_t c1 = -1, c2 = -2;
    CHECK(ops_label(m, conn, &(OpsRun){.reference = true}, ref, &c1, &err) == PXL_OK, "%s", err.msg);
    CHECK(ops_label(m, conn, &(OpsRun){.nthreads = 2}, &view, &c2, &err) == PXL_OK, "%s", err.msg);
    bool same = c1 == c2;
    for (int y = 0; y < h && same; y++) same = memcmp(image_row(ref, y), image_row(&view, y), (size_t)w * 4) == 0;
    CHECK(same, "conn %d: labels in an output with a 4 GiB pitch differ from the reference", conn);
  }
  munmap(mem, pitch + (size_t)w * 4);
  image_free(m), image_free(ref);
  printf("label: outputs that are a view, the map, or rows 4 GiB apart (union-find in a temporary): %s\n",
         failed == before ? "ok" : "FAIL");
}

/* The argument guards, and every allocation failing in turn (ASan finds leaks). */
static void test_errors(void) {
  int before = failed;
  struct pxl_image *f = new_image(40, 30, PXL_U8), *m = new_image(40, 30, PXL_U8);
  struct pxl_image *d = new_image(40, 30, PXL_F32), *l = new_image(40, 30, PXL_U32);
  struct pxl_image *small = new_image(39, 30, PXL_U32);
  fill_features(f, F_30PCT, 5), fill_map(m, M_BINARY, 50, 6);
  Err err = {0};
  OpsRun fast = {.nthreads = 2}, ref = {.reference = true};
  CHECK(ops_distance(d, OPS_L2, &fast, d, &err) == PXL_EARG, "f32 features accepted");
  CHECK(ops_distance(f, 7, &fast, d, &err) == PXL_EARG, "metric 7 accepted");
  CHECK(ops_distance(f, OPS_L2, &fast, small, &err) == PXL_EARG, "a smaller output accepted");
  CHECK(ops_label(m, 6, &fast, l, NULL, &err) == PXL_EARG, "connectivity 6 accepted");
  CHECK(ops_nearest(f, &fast, d, &err) == PXL_EARG, "an f32 nearest output accepted");
  CHECK(ops_nearest(f, &fast, small, &err) == PXL_EARG, "a smaller nearest output accepted");
  {
    /* i32 cannot index 46341^2 pixels; a header without pixels is enough to be refused */
    struct pxl_image huge_f = {.width = 46341, .height = 46341, .channels = 1, .type = PXL_U8, .pitch = 46341};
    struct pxl_image huge_o = {.width = 46341, .height = 46341, .channels = 1, .type = PXL_I32, .pitch = 4 * 46341};
    CHECK(ops_nearest(&huge_f, &fast, &huge_o, &err) == PXL_EARG && strstr(err.msg, "u32"),
          "i32 indices of 46341^2 pixels accepted: %s", err.msg);
  }
  CHECK(ops_label(m, 8, &fast, d, NULL, &err) == PXL_EARG, "an f32 label output accepted");
  for (int which = 0; which < 6; which++) {
    const OpsRun *run = which % 2 ? &ref : &fast;
    bool done = false;
    for (long k = 0; k < 100 && !done; k++) {
      pxl_test_fail_alloc_after(k);
      int rc = which < 2   ? ops_distance(f, OPS_L2, run, d, &err)
               : which < 4 ? ops_label(m, 8, run, l, NULL, &err)
                           : ops_nearest(f, run, l, &err);
      pxl_test_fail_alloc_after(-1);
      done = rc == PXL_OK;
      CHECK(rc == PXL_OK || (rc == PXL_ENOMEM && err.code == PXL_ENOMEM), "allocation %ld failing: status %d", k,
            rc);
    }
    CHECK(done, "%s never succeeded", which < 2 ? "distance" : which < 4 ? "label" : "nearest");
  }
  image_free(f), image_free(m), image_free(d), image_free(l), image_free(small);
  printf("errors: argument guards, every allocation failing in turn: %s\n", failed == before ? "ok" : "FAIL");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines as they come, also into a pipe */
  test_distance_small();
  test_distance_extent();
  test_distance_large();
  test_distance_view();
  test_nearest();
  test_labels();
  test_label_views();
  test_errors();
  printf("%s\n", failed ? "FAIL" : "ok");
  return failed != 0;
}
