/*
 * diff_test.c - differential tests: every backend against the reference interpreter.
 *
 * For every entry point of the given .pxl files, every border mode and a set of awkward
 * image sizes, runs the entry on random images with the interpreter ("ref") and with the
 * backend under test, and compares: bit for bit for integer results and kernel outputs
 * (float kernels too: the generated code does the same single-precision operations in
 * the same order), within a relative 1e-4 for floating-point reductions, whose partial
 * sums are combined in a different order. Pipelines whose source contains the word
 * BORDER are run once per border mode with BORDER replaced.
 *
 * DEVICE "cuda-resident" ("opencl-resident") runs on CUDA (OpenCL) with every input in device memory (uploaded into
 * a view of a wider device image, every other case at x offset 1 so that rows start
 * unaligned) and the result left there (compared after pxl_image_to_host).
 *
 * usage: diff_test DEVICE [--quick] [--shard I/N] FILE.pxl...   (PXL_TEST_QUICK=1 also means
 * --quick; --shard runs the border modes b with b % N == I, pipelines of the source in
 * shard 0: N tests together cover the file)
 * Prints one line per failure and a summary "N passed, M failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "ir/value.h"
#include "image/image.h"
#include "pxl/pxl.h"
#include "common/read_file.h"

static const char *const borders[] = {"clamp", "mirror", "mirror101", "wrap", "constant(7)", "none"};
enum { NBORDERS = sizeof borders / sizeof *borders };

typedef struct {
  int w, h;
} Size;

static const Size sizes_full[] = {{1, 1}, {1, 17}, {17, 1}, {3, 5}, {64, 64}, {257, 129}, {1023, 767}};
static const Size sizes_quick[] = {{1, 1}, {3, 5}, {257, 129}};

static int passed, failed;

static const char *device;
static bool resident; /* inputs and outputs in device memory */
static int shard, nshards = 1; /* --shard I/N: only border modes b with b % N == I */

static bool in_shard(int b) { return b % nshards == shard; }
static int cases;     /* run so far (alternates the offset of resident inputs) */

/* A device copy of img inside a device image one pixel wider, at x offset 0 or 1; the
 * wider image in *base (free after the view). */
static pxl_image *device_copy(pxl_context *dev, pxl_image *img, pxl_image **base, char *why, size_t n) {
  int w = pxl_image_width(img), h = pxl_image_height(img), off = cases % 2;
  pxl_image *view = NULL;
  if (pxl_image_create_device(dev, w + 1, h, pxl_image_type(img), pxl_image_channels(img), base) ||
      pxl_image_view(dev, *base, off, 0, w, h, &view) || pxl_image_copy(dev, img, view)) {
    snprintf(why, n, "device copy: %s", pxl_errmsg(dev));
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

static bool close_enough(double a, double b);

/* Bit for bit, except float pixels on devices whose math library is not glibc's (GPU
 * sin/exp/log/pow/atan2 differ from the CPU's in the last bits): there, each element
 * within a relative 1e-5 (documented in docs/LANGUAGE.md). */
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
        if (!close_enough(va, vb) && fabs(va - vb) > 1e-5 * fmax(1, fmax(fabs(va), fabs(vb)))) {
          snprintf(why, n, "row %d, element %zu: ref %.9g, device %.9g", y, i, va, vb);
          return false;
        }
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

static bool close_enough(double a, double b) {
  if (isnan(a) && isnan(b)) return true;
  if (a == b) return true;
  return fabs(a - b) <= 1e-4 * fmax(fabs(a), fabs(b));
}

/* Scalar argument values: by parameter name where examples need a meaningful one. */
static double scalar_value(const Param *p) {
  if (!strcmp(p->name, "t")) return scalar_is_float(p->type.s) ? 60 : 40;
  if (!strcmp(p->name, "levels")) return 6;
  uint64_t r = next();
  if (scalar_is_float(p->type.s)) return (double)(r % 2001) / 1000.0;
  return (double)(r % 11);
}

static void report(bool ok, const char *file, const char *entry, const char *border, Size s, const char *why) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL %s %s border=%s size=%dx%d device=%s: %s\n", file, entry, border, s.w, s.h, device, why);
  fflush(stdout);
}

/* Runs one entry with both devices and compares. */
static void run_case(pxl_context *ref, pxl_context *dev, pxl_program *pr, pxl_program *pd, const Decl *D,
                     const char *file, const char *border, Size s) {
  pxl_image *imgs[16] = {0}, *dimgs[16] = {0}, *dbase[16] = {0}, *back = NULL;
  pxl_args *ar = pxl_args_new(ref), *ad = pxl_args_new(dev);
  cases++;
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
      fill_random(img);
      imgs[p->img_index] = img;
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
    } else {
      double v = scalar_value(p);
      pxl_args_scalar(ar, p->name, v);
      pxl_args_scalar(ad, p->name, v);
    }
  }
  pxl_run_result *rr = NULL, *rd = NULL;
  if (ok && pxl_run(ref, pr, D->name, ar, &rr)) {
    /* an invalid size (size() of a tiny image) must fail the same way on both */
    int rc = pxl_run(dev, pd, D->name, ad, &rd);
    if (!rc) snprintf(why, sizeof why, "ref failed (%s) but the device succeeded", pxl_errmsg(ref));
    ok = rc != 0;
    rr = NULL;
  } else if (ok && pxl_run(dev, pd, D->name, ad, &rd)) {
    snprintf(why, sizeof why, "device failed: %s", pxl_errmsg(dev));
    ok = false;
  } else if (ok) {
    switch (pxl_result_kind_of(rr)) {
    case PXL_RESULT_IMAGE: {
      pxl_image *got = pxl_result_image(rd);
      if (resident && !pxl_image_on_device(got)) {
        snprintf(why, sizeof why, "the result of a run on device images is not in device memory");
        ok = false;
        break;
      }
      if (resident && pxl_image_to_host(dev, got, &back)) {
        snprintf(why, sizeof why, "download: %s", pxl_errmsg(dev));
        ok = false;
        break;
      }
      ok = images_equal(pxl_result_image(rr), resident ? back : got, why, sizeof why);
      break;
    }
    case PXL_RESULT_SCALAR: {
      pxl_scalar_result a, b;
      pxl_result_scalar(rr, &a);
      pxl_result_scalar(rd, &b);
      ok = a.is_float ? close_enough(a.value, b.value) : a.ivalue == b.ivalue;
      ok = ok && a.x == b.x && a.y == b.y;
      if (!ok)
        snprintf(why, sizeof why, "ref %.17g (%lld) at (%d,%d), device %.17g (%lld) at (%d,%d)", a.value,
                 (long long)a.ivalue, a.x, a.y, b.value, (long long)b.ivalue, b.x, b.y);
      break;
    }
    case PXL_RESULT_HISTOGRAM: {
      int na, nb, fa, fb;
      const double *ba = pxl_result_bins(rr, &na, &fa), *bb = pxl_result_bins(rd, &nb, &fb);
      ok = na == nb;
      for (int i = 0; ok && i < na; i++) {
        ok = fa ? close_enough(ba[i], bb[i]) : ba[i] == bb[i];
        if (!ok) snprintf(why, sizeof why, "bin %d: ref %.17g, device %.17g", i, ba[i], bb[i]);
      }
      break;
    }
    }
  }
  report(ok, file, D->name, border ? border : "(source)", s, why);
  pxl_result_free(rr);
  pxl_result_free(rd);
  pxl_args_free(ar);
  pxl_args_free(ad);
  pxl_image_free(back);
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
                        const Size *sizes, int nsizes) {
  char name[512];
  snprintf(name, sizeof name, "%s%s%s", file, mode ? ":" : "", mode ? mode : "");
  pxl_program *pr, *pd;
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
  for (int d = 0; d < P->ndecls; d++) {
    const Decl *D = P->decls[d];
    for (int si = 0; si < nsizes; si++) {
      if (D->kind == D_PIPELINE || mode) {
        if (D->kind == D_PIPELINE && (mode || in_shard(0))) run_case(ref, dev, pr, pd, D, file, mode, sizes[si]);
        continue;
      }
      for (int b = 0; b < NBORDERS; b++)
        if (in_shard(b)) run_case(ref, dev, pr, pd, D, file, borders[b], sizes[si]);
    }
  }
  pxl_program_free(pr);
  pxl_program_free(pd);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: diff_test DEVICE [--quick] [--shard I/N] FILE.pxl...\n");
    return 2;
  }
  device = argv[1];
  char base_device[64];
  snprintf(base_device, sizeof base_device, "%s", device);
  char *dash = strstr(base_device, "-resident");
  resident = dash && !dash[9];
  if (resident) *dash = 0;
  int first = 2;
  const Size *sizes = sizes_full;
  int nsizes = sizeof sizes_full / sizeof *sizes_full;
  const char *q = getenv("PXL_TEST_QUICK");
  if (!strcmp(argv[2], "--quick") || (q && *q && strcmp(q, "0"))) {
    sizes = sizes_quick;
    nsizes = sizeof sizes_quick / sizeof *sizes_quick;
    if (!strcmp(argv[2], "--quick")) first = 3;
  }
  if (first < argc - 1 && !strcmp(argv[first], "--shard")) { /* split a slow file over ctest jobs */
    if (sscanf(argv[first + 1], "%d/%d", &shard, &nshards) != 2 || nshards < 1 || shard < 0 || shard >= nshards) {
      fprintf(stderr, "diff_test: bad --shard '%s' (I/N)\n", argv[first + 1]);
      return 2;
    }
    first += 2;
  }
  pxl_context *ref = pxl_context_new(), *dev = pxl_context_new();
  if (pxl_set_device(ref, "ref") || pxl_set_device(dev, base_device)) {
    fprintf(stderr, "diff_test: %s\n", pxl_errmsg(dev));
    return 2;
  }
  bool opencl = !strncmp(device, "opencl", 6);
  if (!strncmp(device, "cuda", 4) || opencl) { /* GPU tests say so when they cannot run */
    pxl_program *probe;
    pxl_image *img;
    pxl_args *args = pxl_args_new(dev);
    pxl_run_result *res = NULL;
    int rc = pxl_program_from_string(dev, "probe", "kernel u8 k(image u8 in) { return in(0, 0); }", &probe);
    if (!rc) rc = pxl_image_create(dev, 1, 1, PXL_U8, 1, &img);
    if (!rc) {
      pxl_args_image(args, "in", img);
      rc = pxl_run(dev, probe, NULL, args, &res);
      pxl_result_free(res);
      pxl_image_free(img);
      pxl_program_free(probe);
    }
    pxl_args_free(args);
    if (rc == PXL_EDEVICE) {
      printf("skipped: no %s device (%s)\n", opencl ? "OpenCL" : "CUDA", pxl_errmsg(dev));
      pxl_context_free(ref);
      pxl_context_free(dev);
      return 77;
    }
  }
  for (int i = first; i < argc; i++) {
    char *src = read_file(argv[i]);
    if (!src) {
      printf("FAIL %s: cannot read\n", argv[i]);
      failed++;
      continue;
    }
    const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
    if (strstr(src, "BORDER")) {
      for (int b = 0; b < NBORDERS; b++) {
        if (!in_shard(b)) continue;
        char *s = substitute(src, borders[b]);
        run_program(ref, dev, base, s, borders[b], sizes, nsizes);
        free(s);
      }
      /* the kernels of such a file also run with every border directly */
      char *s = substitute(src, "clamp");
      run_program(ref, dev, base, s, NULL, sizes, nsizes);
      free(s);
    } else {
      run_program(ref, dev, base, src, NULL, sizes, nsizes);
    }
    free(src);
  }
  pxl_context_free(ref);
  pxl_context_free(dev);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
