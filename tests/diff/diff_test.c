/*
 * diff_test.c - differential tests: every backend against the reference interpreter.
 *
 * For every entry point of the given .pxl files, every border mode and a set of awkward
 * image sizes, runs the entry on random images with the interpreter ("ref") and with the
 * backend under test, and compares: bit for bit for integer results, kernel outputs and
 * histogram bins (float kernels too on the CPU: the generated code does the same
 * single-precision operations in the same order; float-weighted bins too: every backend
 * adds them in the interpreter's row-major order), and with the tolerances of compare.h
 * for float pixels on GPUs and float reductions. Pipelines whose source contains the
 * word BORDER are run once per border mode with BORDER replaced.
 *
 * Then photo-like inputs (photo_cases): a crop of the sample photographs (--samples DIR:
 * shapes.png for one channel, scene.jpg for more), smooth gradients, large flat areas,
 * few distinct values, at the sizes of real images and small odd ones, each border mode
 * in turn. Each of these runs PHOTO_RUNS times on the backend, every run compared with
 * the one interpreter result: random bytes spread every count over all bins and every
 * value over the range, while photographs pile thousands of pixels into a few bins and
 * rows, which is where races and lost updates show (hist256 on a GPU once came out
 * wrong, differently in every run, on photographs only).
 *
 * DEVICE "ref-fused" runs the interpreter on pipelines' fused kernels (analysis/fuse.c;
 * every other device runs them by default), against the interpreter on the stages as
 * written.
 *
 * DEVICE "cuda-resident" ("opencl-resident") runs on CUDA (OpenCL) with every input in device memory (uploaded into
 * a view of a wider device image, every other case at x offset 1 so that rows start
 * unaligned) and the result left there (compared after pxl_image_to_host).
 *
 * GPU devices skip (exit 77) only when the backend reports the device absent when it is
 * created (tests/common/gpu_device.h); a backend that opens but fails (a probe kernel
 * that does not build, load or launch) fails the test.
 *
 * usage: diff_test DEVICE [--quick] [--no-large] [--verbose] [--shard I/N] [--modes N]
 *                  [--inputs random|photo|all] [--samples DIR] FILE.pxl...
 * (PXL_TEST_QUICK=1 also means --quick; --shard runs the border modes b with b % N == I,
 * pipelines of the source in shard 0: N tests together cover the file; --inputs: only
 * the random or only the photo-like cases; --samples: where shapes.png and scene.jpg
 * are, by default the source tree's samples/; --no-large: no random case over
 * BIG_PIXELS and no photo-like case marked large; --verbose names each case before it runs;
 * a FILE containing the line `// diff_test: quick` always runs the quick cases: its
 * pipelines iterate over the image hundreds of times in the interpreter; one containing
 * `// diff_test: short` the quick cases with 257x72 for 257x129 (sizes_short);
 * PXL_TEST_FULL=1: every entry in every border mode, where by default each entry takes
 * --modes N of the six (default 2), entry_mode(); PXL_TEST_REF_CACHE=DIR keeps the
 * interpreter's results in DIR for the other tests, ref_cache.h). A case's inputs depend only on the case (file, entry, border, size,
 * input kind), never on which cases ran before it.
 * Prints one line per failure, the largest float deviation accepted, and a summary
 * "N passed, M failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "common/gpu_device.h"
#include "common/read_file.h"
#include "diff/compare.h"
#include "diff/ref_cache.h"
#include "image/image.h"
#include "ir/value.h"
#include "pxl/pxl.h"

static const char *const borders[] = {"clamp", "mirror", "mirror101", "wrap", "constant(7)", "none"};
enum { NBORDERS = sizeof borders / sizeof *borders };

typedef struct {
  int w, h;
} Size;

static const Size sizes_full[] = {{1, 1}, {1, 17}, {17, 1}, {3, 5}, {64, 64}, {257, 129}, {1023, 767}};
/* A random case larger than this runs in one border mode per entry (the entry's index
 * modulo the number of modes, so that a file's entries share the modes out): at 1023x767
 * it is 95% of the interpreter's work, and the border code it runs is the same as at
 * 257x129, which runs in every mode. */
enum { BIG_PIXELS = 100000 };
static const Size sizes_quick[] = {{1, 1}, {3, 5}, {257, 129}};
/* `// diff_test: short` (boxwin.pxl: 961 interpreted reads per pixel): the quick sizes,
 * the largest cut to 72 rows - still two strips of 256 columns, bands of 32 rows, a
 * 64-row block (8 rows x 8 threads) and the rows after it, and rows beyond a 31-row
 * window's reach from both edges. */
static const Size sizes_short[] = {{1, 1}, {3, 5}, {257, 72}};
enum {
  NFULL = sizeof sizes_full / sizeof *sizes_full,
  NQUICK = sizeof sizes_quick / sizeof *sizes_quick,
  NSHORT = sizeof sizes_short / sizeof *sizes_short
};

/* Input images: random bits, or one of the photo-like patterns. */
typedef enum { IN_RANDOM, IN_SAMPLE, IN_GRADIENT, IN_FLAT, IN_LEVELS } Input;
static const char *const input_names[] = {"random", "sample photo", "gradient", "flat areas", "few levels"};

/* The photo-like cases: each runs with border mode borders[index % NBORDERS]. Quick
 * mode (the sanitizer builds, device images) keeps the ones marked quick; --no-large
 * (the CPU and PoCL in CI, where the interpreter's reference is most of the suite's
 * time) leaves out the ones marked large, which the GPU machines run. 1023x767 once, for
 * the photograph: the random cases have that size in every border mode already; 640x480
 * is the photograph's own size. */
typedef struct {
  Input in;
  Size s;
  bool quick, large;
} PhotoCase;
static const PhotoCase photo_cases[] = {
    {IN_SAMPLE, {384, 303}, true, false},   {IN_GRADIENT, {1, 1}, true, false},
    {IN_FLAT, {7, 5}, true, false},         {IN_LEVELS, {512, 512}, false, true},
    {IN_SAMPLE, {512, 512}, false, true},   {IN_GRADIENT, {384, 303}, false, false},
    {IN_FLAT, {384, 303}, false, false},    {IN_LEVELS, {7, 5}, false, false},
    {IN_GRADIENT, {512, 512}, false, true}, {IN_FLAT, {512, 512}, false, true},
    {IN_LEVELS, {384, 303}, false, false},  {IN_SAMPLE, {1023, 767}, false, true},
    {IN_SAMPLE, {640, 480}, false, false},
};
enum { NPHOTO = sizeof photo_cases / sizeof *photo_cases, PHOTO_RUNS = 3 };

static int passed, failed;
static double worst_pixel, worst_f32_sum, worst_f64_sum; /* largest float deviations accepted */

static const char *device;
static bool resident; /* inputs and outputs in device memory */
static bool quick;
static bool no_large; /* --no-large: no random case over BIG_PIXELS, no large photo case */
static bool verbose; /* --verbose: each case named before it runs (which one crashed) */
static bool pipelines_only; /* ref-fused: fusion changes pipelines only */
static int shard, nshards = 1; /* --shard I/N: only border modes b with b % N == I */
static pxl_image *sample_gray, *sample_rgb; /* --samples: shapes.png, scene.jpg */

static bool in_shard(int b) { return b % nshards == shard; }
/* PXL_TEST_FULL=1 (tools/device/gpu-tests.sh, `tools/test.sh --full`): every entry in
 * every border mode. Otherwise (CI: the 2-core machine must finish the suite well inside
 * 20 minutes, and most of its time is compiling one module per entry and border mode)
 * the modes are shared out: each entry runs `--modes N` of the six (N = 1, 2 or 3;
 * default 2), those b with b = d + salt (mod 6 / N) for entry d - with 2: clamp and wrap,
 * mirror and constant(7), or mirror101 and none - so that any 6 / N consecutive entries
 * of a file cover all six, and the salt (from the file's name) gives the files of one
 * entry different modes. */
static unsigned mode_groups = 3; /* 6 / N; 1 with PXL_TEST_FULL=1 (every mode) */
static unsigned file_salt;
static bool entry_mode(int d, int b) { return (unsigned)b % mode_groups == ((unsigned)d + file_salt) % mode_groups; }
/* Whether entry d runs the random case over BIG_PIXELS (in one mode, big_border): every
 * entry with PXL_TEST_FULL=1, otherwise those with (d + salt) / 6 even - blocks of six
 * consecutive entries, whose large cases take the six modes, alternate (a file of one
 * entry keeps its large case): the large cases are most of the interpreter's work. */
static bool big_entry(int d) { return mode_groups == 1 || ((unsigned)d + file_salt) / NBORDERS % 2 == 0; }
static const char *case_src; /* the source text of the program being run (the cache key) */
static int cases;     /* run so far (alternates the offset of resident inputs) */

/* A device copy of img inside a device image one pixel wider, at x offset 0 or 1; the
 * wider image in *base (free after the view). */
static pxl_image *device_copy(pxl_context *dev, pxl_image *img, pxl_image **base, char *why, size_t n) {
  int w = pxl_image_width(img), h = pxl_image_height(img), off = cases % 2;
  pxl_image *view = NULL;
  int rc = pxl_image_create_device(dev, w + 1, h, pxl_image_type(img), pxl_image_channels(img), base);
  if (!rc) rc = pxl_image_view(dev, *base, off, 0, w, h, &view);
  if (!rc) rc = pxl_image_copy(dev, img, view);
  if (rc) {
    snprintf(why, n, "device copy (%s): %s", pxl_status_name(rc), pxl_errmsg(dev));
    pxl_image_free(view);
    return NULL;
  }
  return view;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Random pixels over the whole range, small values often (they exercise edges of the
 * arithmetic), and for floats values in [-300, 300]. */
static void fill_random(pxl_image *img) {
  int w = pxl_image_width(img), h = pxl_image_height(img), c = pxl_image_channels(img);
  pxl_type t = pxl_image_type(img);
  for (int y = 0; y < h; y++) {
    char *row = (char *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img);
    for (int i = 0; i < w * c; i++) {
      uint64_t r = next();
      switch (t) {
      case PXL_U8: ((uint8_t *)row)[i] = (uint8_t)r; break;
      case PXL_I16: ((int16_t *)row)[i] = (int16_t)(r & 1 ? (int16_t)r : (int16_t)(r % 512) - 256); break;
      case PXL_U16: ((uint16_t *)row)[i] = (uint16_t)r; break;
      case PXL_I32: ((int32_t *)row)[i] = (int32_t)(r & 1 ? (int32_t)r : (int32_t)(r % 2000) - 1000); break;
      case PXL_U32: ((uint32_t *)row)[i] = (uint32_t)r; break;
      case PXL_F32: ((float *)row)[i] = (float)((double)(r % 600001) / 1000.0 - 300.0); break;
      default: ((double *)row)[i] = (double)(r % 600001) / 1000.0 - 300.0; break;
      }
    }
  }
}

/* Mirror-tiles coordinate v over n (0 1 .. n-1 n-1 .. 0 0 1 ..): a photograph larger
 * than the sample stays continuous. */
static int mirror_tile(int v, int n) {
  v %= 2 * n;
  return v < n ? v : 2 * n - 1 - v;
}

/* The 0..255 level of pattern `in` at (x, y), channel ch, of a w x h image with c
 * channels; `k` (the image's parameter index) shifts the pattern so that two inputs
 * differ. */
static int pattern_level(Input in, int x, int y, int ch, int c, int w, int h, int k) {
  switch (in) {
  case IN_SAMPLE: {
    const pxl_image *s = c == 1 ? sample_gray : sample_rgb;
    int sc = pxl_image_channels(s);
    int sx = mirror_tile(x + 37 * k, pxl_image_width(s)), sy = mirror_tile(y + 11 * k, pxl_image_height(s));
    const uint8_t *row = (const uint8_t *)pxl_image_data((pxl_image *)s) + (size_t)sy * pxl_image_pitch(s);
    return ch < sc ? row[(size_t)sx * sc + ch] : 255; /* alpha: opaque */
  }
  case IN_GRADIENT: /* smooth ramps, one direction per channel */
    return ch % 2 ? (y + k) * 255 / (h > 1 ? h - 1 : 1) % 256 : (x * 3 + y + k * 40) * 255 / (3 * w + h) % 256;
  case IN_FLAT: { /* a few large regions of one value each: thousands of equal pixels */
    int v = 128 + ch + k;
    if (x < w / 2 && y < h / 2) v = 0;
    else if (x >= w / 2 && y < h / 3) v = 255;
    long dx = 4L * x - 3L * w, dy = 4L * y - 3L * h, r = (w < h ? w : h);
    if (dx * dx + dy * dy < r * r) v = 17;
    return v;
  }
  default: /* IN_LEVELS: a posterised ramp of four values */
    return (((x * 4) / (w > 0 ? w : 1) + (y * 4) / (h > 0 ? h : 1) + ch + k) % 4) * 85;
  }
}

/* Fills img with a photo-like pattern, levels mapped onto the pixel type's range as a
 * camera's would be (floats keep 0..255). */
static void fill_pattern(pxl_image *img, Input in, int k) {
  int w = pxl_image_width(img), h = pxl_image_height(img), c = pxl_image_channels(img);
  pxl_type t = pxl_image_type(img);
  for (int y = 0; y < h; y++) {
    char *row = (char *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img);
    for (int x = 0; x < w; x++)
      for (int ch = 0; ch < c; ch++) {
        int v = pattern_level(in, x, y, ch, c, w, h, k), i = x * c + ch;
        switch (t) {
        case PXL_U8: ((uint8_t *)row)[i] = (uint8_t)v; break;
        case PXL_I16: ((int16_t *)row)[i] = (int16_t)(v * 128 - 16384); break;
        case PXL_U16: ((uint16_t *)row)[i] = (uint16_t)(v * 257); break;
        case PXL_I32: ((int32_t *)row)[i] = v * 8421504 - 1073741824; break;
        case PXL_U32: ((uint32_t *)row)[i] = (uint32_t)v * 16843009u; break;
        case PXL_F32: ((float *)row)[i] = (float)v; break;
        default: ((double *)row)[i] = v; break;
        }
      }
  }
}

/* Bit for bit, except float pixels on devices whose math library is not glibc's (GPU
 * sin/exp/log/pow/atan2 differ from the CPU's in the last bits): there, each element
 * close_enough within PIXEL_TOLERANCE (documented in docs/LANGUAGE.md). */
static bool images_equal(const pxl_image *a, const pxl_image *b, char *why, size_t n) {
  if (pxl_image_width(a) != pxl_image_width(b) || pxl_image_height(a) != pxl_image_height(b)) {
    snprintf(why, n, "sizes differ");
    return false;
  }
  pxl_type t = pxl_image_type(a);
  bool loose = strcmp(device, "cpu") && (t == PXL_F32 || t == PXL_F64);
  size_t elems = (size_t)pxl_image_width(a) * pxl_image_channels(a);
  size_t row = elems * pxl_type_size(t);
  for (int y = 0; y < pxl_image_height(a); y++) {
    const char *ra = (const char *)pxl_image_data((pxl_image *)a) + (size_t)y * pxl_image_pitch(a);
    const char *rb = (const char *)pxl_image_data((pxl_image *)b) + (size_t)y * pxl_image_pitch(b);
    if (!memcmp(ra, rb, row)) continue;
    if (loose) {
      for (size_t i = 0; i < elems; i++) {
        double va = t == PXL_F32 ? ((const float *)ra)[i] : ((const double *)ra)[i];
        double vb = t == PXL_F32 ? ((const float *)rb)[i] : ((const double *)rb)[i];
        if (!close_enough(va, vb, PIXEL_TOLERANCE)) {
          snprintf(why, n, "row %d, element %zu: ref %.9g, device %.9g", y, i, va, vb);
          return false;
        }
        worst_pixel = fmax(worst_pixel, deviation(va, vb));
      }
      continue;
    }
    size_t i = 0;
    while (ra[i] == rb[i]) i++;
    snprintf(why, n, "first difference in row %d, byte %zu", y, i);
    return false;
  }
  return true;
}

/* Scalar argument values: by parameter name where examples need a meaningful one. */
static double scalar_value(const Param *p) {
  if (!strcmp(p->name, "t")) return scalar_is_float(p->type.s) ? 60 : 40;
  if (!strcmp(p->name, "levels")) return 6;
  uint64_t r = next();
  if (!strcmp(p->name, "r")) return (double)(1 + r % 3); /* a radius: each value is a specialisation to build */
  if (scalar_is_float(p->type.s)) return (double)(r % 2001) / 1000.0;
  return (double)(r % 11);
}

/* An element of an array parameter: floats in -1..1 in steps of 1/1000, integers in
 * -128..383 (converted with saturation, so the ends of u8 and i8-like ranges show). */
static double array_value(const Param *p) {
  uint64_t r = next();
  if (scalar_is_float(p->type.s)) return (double)(r % 2001) / 1000.0 - 1;
  return (double)(r % 512) - 128;
}

/* Counts a case; prints a failure with what identifies it. */
static void report(bool ok, const char *file, const char *entry, const char *border, Size s, Input in, int run,
                   int runs, const char *why) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  char runs_text[32] = "";
  if (runs > 1) snprintf(runs_text, sizeof runs_text, " run %d/%d", run + 1, runs);
  printf("FAIL %s %s border=%s size=%dx%d input=%s%s device=%s: %s\n", file, entry, border, s.w, s.h,
         input_names[in], runs_text, device, why);
  fflush(stdout);
}

/* Compares the device's result rd with the interpreter's rr; the reason in why. */
static bool results_equal(pxl_context *dev, const Decl *D, const RefOut *rr, pxl_run_result *rd, char *why,
                          size_t n) {
  if (rr->kind != pxl_result_kind_of(rd)) {
    snprintf(why, n, "the results are of different kinds");
    return false;
  }
  bool ok = true;
  switch (rr->kind) {
  case PXL_RESULT_IMAGE: { /* every image: one per output of a kernel with several */
    int count = pxl_result_image_count(rd);
    if (count != rr->nimg) {
      snprintf(why, n, "ref has %d images, device %d", rr->nimg, count);
      return false;
    }
    for (int i = 0; ok && i < count; i++) {
      pxl_image *got = pxl_result_image_at(rd, i), *back = NULL;
      if (resident && D->nimages && !pxl_image_on_device(got)) { /* no images: a host result (exec.c) */
        snprintf(why, n, "the result of a run on device images is not in device memory");
        return false;
      }
      int rc = resident ? pxl_image_to_host(dev, got, &back) : PXL_OK;
      if (rc) {
        snprintf(why, n, "download (%s): %s", pxl_status_name(rc), pxl_errmsg(dev));
        return false;
      }
      ok = images_equal(rr->img[i], resident ? back : got, why, n);
      pxl_image_free(back);
      if (!ok && count > 1) {
        size_t l = strlen(why);
        snprintf(why + l, n - l, " (image %d of %d)", i + 1, count);
      }
    }
    break;
  }
  case PXL_RESULT_SCALAR: {
    pxl_scalar_result a = rr->scalar, b;
    pxl_result_scalar(rd, &b);
    bool f32 = D->type.s == T_F32;
    double tol = f32 ? REDUCTION_TOLERANCE_F32 : REDUCTION_TOLERANCE_F64;
    ok = a.is_float == b.is_float && (a.is_float ? close_enough(a.value, b.value, tol) : a.ivalue == b.ivalue);
    ok = ok && a.x == b.x && a.y == b.y;
    double *worst = f32 ? &worst_f32_sum : &worst_f64_sum;
    if (ok && a.is_float) *worst = fmax(*worst, deviation(a.value, b.value));
    if (!ok)
      snprintf(why, n, "ref %.17g (%lld) at (%d,%d), device %.17g (%lld) at (%d,%d)", a.value, (long long)a.ivalue,
               a.x, a.y, b.value, (long long)b.ivalue, b.x, b.y);
    break;
  }
  case PXL_RESULT_HISTOGRAM: {
    int na = rr->nbins, nb, fa = rr->float_bins, fb;
    const double *ba = rr->bins, *bb = pxl_result_bins(rd, &nb, &fb);
    ok = na == nb && fa == fb;
    if (!ok) snprintf(why, n, "ref has %d %s bins, device %d %s bins", na, fa ? "float" : "count", nb,
                      fb ? "float" : "count");
    /* float-weighted bins too bit for bit: every backend adds in row-major order */
    for (int i = 0; ok && i < na; i++) {
      ok = same_value(ba[i], bb[i]);
      if (!ok) snprintf(why, n, "bin %d: ref %.17g, device %.17g", i, ba[i], bb[i]);
    }
    break;
  }
  }
  return ok;
}

/* Runs one entry on the interpreter once and on the device `runs` times, and compares
 * every device run with the interpreter's result. */
static void run_case(pxl_context *ref, pxl_context *dev, pxl_program *pr, pxl_program *pd, const Decl *D,
                     const char *file, const char *border, Size s, Input in, int runs) {
  pxl_image *imgs[16] = {0}, *dimgs[16] = {0}, *dbase[16] = {0};
  pxl_args *ar = pxl_args_new(ref), *ad = pxl_args_new(dev);
  const char *shown = border ? border : "(source)";
  cases++;
  /* the inputs of a case depend on the case alone, whichever others ran before it (a
   * shard, another test): so its interpreter result can come from the cache */
  RefKey seed = key_new();
  key_str(&seed, file), key_str(&seed, D->name), key_str(&seed, shown);
  key_int(&seed, s.w), key_int(&seed, s.h), key_int(&seed, in);
  rng = seed.a | 1;
  RefKey key = key_new();
  key_str(&key, case_src), key_str(&key, D->name), key_str(&key, border);
  key_int(&key, s.w), key_int(&key, s.h), key_int(&key, in);
  if (verbose) {
    printf("case %s %s border=%s size=%dx%d input=%s\n", file, D->name, shown, s.w, s.h, input_names[in]);
    fflush(stdout);
  }
  char why[600] = "";
  bool ok = true;
  for (int i = 0; i < D->nparams && ok; i++) {
    const Param *p = D->params[i];
    if (p->is_image) {
      pxl_image *img;
      if (pxl_image_create(ref, s.w, s.h, pxl_of_scalar(p->type.s), p->type.lanes, &img)) {
        snprintf(why, sizeof why, "create: %s", pxl_errmsg(ref));
        ok = false;
        break;
      }
      if (in == IN_RANDOM) fill_random(img);
      else fill_pattern(img, in, p->img_index);
      imgs[p->img_index] = img;
      key_str(&key, p->name), key_image(&key, img);
      pxl_args_image(ar, p->name, img);
      if (resident && !(dimgs[p->img_index] = device_copy(dev, img, &dbase[p->img_index], why, sizeof why))) {
        ok = false;
        break;
      }
      pxl_args_image(ad, p->name, resident ? dimgs[p->img_index] : img);
      if (border && D->kind != D_PIPELINE) {
        pxl_args_border(ar, p->name, border);
        pxl_args_border(ad, p->name, border);
      }
    } else if (p->len) { /* an array parameter: random values, sometimes fewer (the rest 0) */
      double v[4096];
      int n = p->len - (int)(next() % 2);
      for (int k = 0; k < n; k++) v[k] = array_value(p);
      key_str(&key, p->name), key_int(&key, n), key_bytes(&key, v, sizeof *v * (size_t)n);
      pxl_args_array(ar, p->name, v, n);
      pxl_args_array(ad, p->name, v, n);
    } else {
      double v = scalar_value(p);
      key_str(&key, p->name), key_f64(&key, v);
      pxl_args_scalar(ar, p->name, v);
      pxl_args_scalar(ad, p->name, v);
    }
  }
  pxl_run_result *rr = NULL;
  RefOut ro = {0};
  if (ok && !ref_cache_get(key, ref, &ro)) {
    int rc = pxl_run(ref, pr, D->name, ar, &rr);
    refout_from_run(&ro, ref, rc, rr);
    ref_cache_put(key, &ro);
  }
  if (!ok) report(false, file, D->name, shown, s, in, 0, 1, why);
  for (int run = 0; ok && run < runs; run++) {
    pxl_run_result *rd = NULL;
    int rc = pxl_run(dev, pd, D->name, ad, &rd);
    bool same;
    if (ro.rc) { /* an invalid size (size() of a tiny image) must fail on both */
      same = rc != PXL_OK;
      if (!same) snprintf(why, sizeof why, "ref failed (%s) but the device succeeded", ro.msg);
    } else if (rc) {
      same = false;
      snprintf(why, sizeof why, "device failed (%s): %s", pxl_status_name(rc), pxl_errmsg(dev));
    } else {
      same = results_equal(dev, D, &ro, rd, why, sizeof why);
    }
    report(same, file, D->name, shown, s, in, run, runs, why);
    pxl_result_free(rd);
  }
  refout_free(&ro);
  pxl_result_free(rr);
  pxl_args_free(ar);
  pxl_args_free(ad);
  for (int i = 0; i < 16; i++) {
    pxl_image_free(imgs[i]);
    pxl_image_free(dimgs[i]);
    pxl_image_free(dbase[i]);
  }
}

/* Replaces every BORDER in src by mode (new heap string). */
static char *substitute(const char *src, const char *mode) {
  size_t n = strlen(src), m = strlen(mode), k = 0;
  char *out = malloc(n * (m + 1) + 1);
  for (const char *p = src; *p;) {
    if (!strncmp(p, "BORDER", 6)) {
      memcpy(out + k, mode, m);
      k += m;
      p += 6;
    } else {
      out[k++] = *p++;
    }
  }
  out[k] = 0;
  return out;
}

static void run_program(pxl_context *ref, pxl_context *dev, const char *file, const char *src, const char *mode,
                        const Size *sizes, int nsizes, bool photos) {
  char name[512];
  snprintf(name, sizeof name, "%s%s%s", file, mode ? ":" : "", mode ? mode : "");
  pxl_program *pr, *pd;
  case_src = src;
  if (pxl_program_from_string(ref, name, src, &pr)) {
    printf("FAIL %s: does not compile:\n%s\n", name, pxl_errmsg(ref));
    failed++;
    return;
  }
  if (pxl_program_from_string(dev, name, src, &pd)) {
    printf("FAIL %s: does not compile on the device context: %s\n", name, pxl_errmsg(dev));
    failed++;
    pxl_program_free(pr);
    return;
  }
  const Program *P = pxl_program_ir(pr);
  int mode_index = -1;
  for (int b = 0; mode && b < NBORDERS; b++)
    if (!strcmp(mode, borders[b])) mode_index = b;
  for (int d = 0; d < P->ndecls; d++) {
    const Decl *D = P->decls[d];
    if (pipelines_only && D->kind != D_PIPELINE) continue;
    /* the one border mode of this entry's large random case (one of its shared-out modes) */
    int big_border = (int)((d + file_salt) % NBORDERS);
    for (int si = 0; si < nsizes; si++) {
      bool big = (long)sizes[si].w * sizes[si].h > BIG_PIXELS;
      if (big && (no_large || !big_entry(d))) continue;
      if (D->kind == D_PIPELINE || mode) {
        if (D->kind == D_PIPELINE && (mode ? (!big || mode_index == big_border) && entry_mode(d, mode_index) : in_shard(0)))
          run_case(ref, dev, pr, pd, D, file, mode, sizes[si], IN_RANDOM, 1);
        continue;
      }
      for (int b = 0; b < NBORDERS; b++)
        if (in_shard(b) && entry_mode(d, b) && (!big || b == big_border))
          run_case(ref, dev, pr, pd, D, file, borders[b], sizes[si], IN_RANDOM, 1);
    }
    for (int i = 0; photos && i < NPHOTO; i++) {
      const PhotoCase *c = &photo_cases[i];
      const char *border = borders[i % NBORDERS];
      if ((quick && !c->quick) || (no_large && c->large) || !entry_mode(d, i % NBORDERS)) continue;
      if (D->kind == D_PIPELINE) { /* a BORDER pipeline in the program of its border mode */
        if (mode ? !strcmp(mode, border) : in_shard(0)) run_case(ref, dev, pr, pd, D, file, mode, c->s, c->in, PHOTO_RUNS);
      } else if (!mode && in_shard(i % NBORDERS)) {
        run_case(ref, dev, pr, pd, D, file, border, c->s, c->in, PHOTO_RUNS);
      }
    }
  }
  pxl_program_free(pr);
  pxl_program_free(pd);
}

/* Runs a 1x1 copy kernel on the device: any failure of a backend that opened (the
 * build, the module load, the launch, the read-back) fails the test. 0 when it ran. */
static int probe_device(pxl_context *dev) {
  pxl_program *probe = NULL;
  pxl_image *img = NULL;
  pxl_args *args = pxl_args_new(dev);
  pxl_run_result *res = NULL;
  int rc = args ? PXL_OK : PXL_ENOMEM;
  if (!rc) rc = pxl_program_from_string(dev, "probe", "kernel u8 k(image u8 in) { return in(0, 0) + 1; }", &probe);
  if (!rc) rc = pxl_image_create(dev, 1, 1, PXL_U8, 1, &img);
  if (!rc) {
    *(uint8_t *)pxl_image_data(img) = 41;
    pxl_args_image(args, "in", img);
    rc = pxl_run(dev, probe, NULL, args, &res);
  }
  if (rc) {
    printf("FAIL: the device opened but a probe kernel did not run (%s): %s\n", pxl_status_name(rc), pxl_errmsg(dev));
  } else if (*(uint8_t *)pxl_image_data(pxl_result_image(res)) != 42) {
    printf("FAIL: the probe kernel gave %d instead of 42\n", *(uint8_t *)pxl_image_data(pxl_result_image(res)));
    rc = PXL_ERROR;
  }
  pxl_result_free(res);
  pxl_image_free(img);
  pxl_program_free(probe);
  pxl_args_free(args);
  return rc;
}

/* Loads the sample photographs (gray shapes.png, RGB scene.jpg) from dir. */
static bool load_samples(pxl_context *ctx, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/shapes.png", dir);
  int rc = pxl_image_load(ctx, path, &sample_gray);
  if (!rc && (pxl_image_type(sample_gray) != PXL_U8 || pxl_image_channels(sample_gray) != 1))
    snprintf(path, sizeof path, "%s/shapes.png is not a u8 gray image", dir), rc = PXL_EFORMAT;
  if (!rc) snprintf(path, sizeof path, "%s/scene.jpg", dir), rc = pxl_image_load(ctx, path, &sample_rgb);
  if (!rc && (pxl_image_type(sample_rgb) != PXL_U8 || pxl_image_channels(sample_rgb) != 3))
    snprintf(path, sizeof path, "%s/scene.jpg is not a u8 RGB image", dir), rc = PXL_EFORMAT;
  if (rc) printf("FAIL: sample photographs: %s: %s\n", path, pxl_errmsg(ctx));
  return !rc;
}

static int usage(void) {
  fprintf(stderr, "usage: diff_test DEVICE [--quick] [--no-large] [--verbose] [--shard I/N] [--modes N] [--inputs random|photo|all] "
                  "[--samples DIR] FILE.pxl...\n");
  return 2;
}

/* Whether s ends with suffix, which is then cut off. */
static bool strip_suffix(char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  if (n < k || strcmp(s + n - k, suffix)) return false;
  s[n - k] = 0;
  return true;
}

int main(int argc, char **argv) {
  if (argc < 3) return usage();
  device = argv[1];
  char base_device[64];
  snprintf(base_device, sizeof base_device, "%s", device);
  resident = strip_suffix(base_device, "-resident");
  bool fused = strip_suffix(base_device, "-fused"); /* ref-fused: the interpreter runs the fused kernels */
  pipelines_only = fused;
  const char *q = getenv("PXL_TEST_QUICK"), *inputs = "all", *samples = PXL_SAMPLES_DIR;
  quick = q && *q && strcmp(q, "0");
  const char *fl = getenv("PXL_TEST_FULL");
  const bool full = fl && *fl && strcmp(fl, "0");
  int first = 2;
  for (; first < argc && !strncmp(argv[first], "--", 2); first++) {
    const char *opt = argv[first], *val = first + 1 < argc ? argv[first + 1] : NULL;
    if (!strcmp(opt, "--quick") || !strcmp(opt, "--verbose") || !strcmp(opt, "--no-large")) {
      *(opt[2] == 'q' ? &quick : opt[2] == 'v' ? &verbose : &no_large) = true;
      continue;
    }
    if (!val) return usage();
    first++;
    if (!strcmp(opt, "--modes")) { /* border modes per entry, without PXL_TEST_FULL */
      int n = atoi(val);
      if (n != 1 && n != 2 && n != 3) {
        fprintf(stderr, "diff_test: bad --modes '%s' (1, 2 or 3)\n", val);
        return 2;
      }
      mode_groups = (unsigned)(NBORDERS / n);
    } else if (!strcmp(opt, "--shard")) { /* split a slow file over ctest jobs */
      if (sscanf(val, "%d/%d", &shard, &nshards) != 2 || nshards < 1 || shard < 0 || shard >= nshards) {
        fprintf(stderr, "diff_test: bad --shard '%s' (I/N)\n", val);
        return 2;
      }
    } else if (!strcmp(opt, "--inputs") && (!strcmp(val, "random") || !strcmp(val, "photo") || !strcmp(val, "all"))) {
      inputs = val;
    } else if (!strcmp(opt, "--samples")) {
      samples = val;
    } else {
      return usage();
    }
  }
  if (first >= argc) return usage();
  if (full) mode_groups = 1;
  const bool all_quick = quick;
  const Size *sizes;
  int nsizes;
  bool photos = strcmp(inputs, "random");
  pxl_context *ref = pxl_context_new(), *dev = pxl_context_new();
  if (!ref || !dev || pxl_set_device(ref, "ref") || pxl_set_device(dev, base_device) ||
      pxl_set_fusion(ref, PXL_FUSE_OFF) || pxl_set_fusion(dev, fused ? PXL_FUSE_ALL : PXL_FUSE_AUTO)) {
    fprintf(stderr, "diff_test: %s\n", dev ? pxl_errmsg(dev) : "out of memory");
    return 2;
  }
  int rc = PXL_OK;
  if (!strncmp(device, "cuda", 4) || !strncmp(device, "opencl", 6)) {
    rc = gpu_device_check(base_device); /* skipped only where the device is absent */
    if (rc == GPU_OPEN) rc = probe_device(dev) ? 1 : 0;
  }
  if (!rc && photos && !load_samples(ref, samples)) rc = 1;
  ref_cache_open();
  if (rc) {
    pxl_image_free(sample_gray);
    pxl_image_free(sample_rgb);
    pxl_context_free(ref);
    pxl_context_free(dev);
    return rc == GPU_SKIP ? 77 : 1;
  }
  for (int i = first; i < argc; i++) {
    char *src = read_file(argv[i]);
    if (!src) {
      printf("FAIL %s: cannot read\n", argv[i]);
      failed++;
      continue;
    }
    const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
    file_salt = 0;
    for (const char *c = base; *c; c++) file_salt = file_salt * 31u + (unsigned char)*c;
    file_salt = mode_groups > 1 ? file_salt % NBORDERS : 0; /* 0: the whole matrix as before */
    /* a file whose pipelines iterate over the image many times asks for the quick cases */
    bool shortened = strstr(src, "// diff_test: short") != NULL;
    quick = all_quick || shortened || strstr(src, "// diff_test: quick");
    sizes = shortened ? sizes_short : quick ? sizes_quick : sizes_full;
    nsizes = !strcmp(inputs, "photo") ? 0 : shortened ? NSHORT : quick ? NQUICK : NFULL;
    if (strstr(src, "BORDER")) {
      for (int b = 0; b < NBORDERS; b++) {
        if (!in_shard(b)) continue;
        char *s = substitute(src, borders[b]);
        run_program(ref, dev, base, s, borders[b], sizes, nsizes, photos);
        free(s);
      }
      /* the kernels of such a file also run with every border directly */
      char *s = substitute(src, "clamp");
      run_program(ref, dev, base, s, NULL, sizes, nsizes, photos);
      free(s);
    } else {
      run_program(ref, dev, base, src, NULL, sizes, nsizes, photos);
    }
    free(src);
  }
  pxl_image_free(sample_gray);
  pxl_image_free(sample_rgb);
  pxl_context_free(ref);
  pxl_context_free(dev);
  printf("largest float deviations accepted: pixels %.3g (tolerance %g), f32 reductions %.3g (%g), f64 "
         "reductions %.3g (%g)\n",
         worst_pixel, PIXEL_TOLERANCE, worst_f32_sum, REDUCTION_TOLERANCE_F32, worst_f64_sum, REDUCTION_TOLERANCE_F64);
  if (!passed && !failed) { /* a test that checks nothing must not pass */
    printf("FAIL: no case ran\n");
    failed++;
  }
  if (ref_dir) printf("interpreter results: %d from the cache, %d computed\n", ref_hits, ref_misses);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
