/*
 * api_test.c - the public API's device choice and fallbacks: device strings parsed by the
 * backend table, "auto" moving a run it cannot do to the next backend with a warning,
 * explicit devices reporting the failure instead, and absent versus failing devices;
 * and the CPU's direct transpose and streamed tables on large images.
 *
 * Usage: api_test DIR (the examples folder). Runs everywhere; the CUDA cases need a CUDA
 * device and are left out (saying so) where there is none.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"
#include "pxl/pxl.h"

static char path[4096];

static const char *example(const char *dir, const char *name) {
  snprintf(path, sizeof path, "%s/%s.pxl", dir, name);
  return path;
}

/* A 37x23 gray image of random bytes. */
static pxl_image *random_image(pxl_context *ctx) {
  pxl_image *img;
  if (pxl_image_create(ctx, 37, 23, PXL_U8, 1, &img)) return NULL;
  for (int y = 0; y < 23; y++)
    for (int x = 0; x < 37; x++) ((uint8_t *)pxl_image_data(img) + y * pxl_image_pitch(img))[x] = (uint8_t)random_u64();
  return img;
}

/* Runs blur3 on img with ctx's device: status, and the output in *out (caller frees). */
static int run_blur(pxl_context *ctx, pxl_program *prog, pxl_image *img, pxl_image **out, char *device, size_t n) {
  pxl_args *args = pxl_args_new(ctx);
  pxl_args_image(args, "in", img);
  pxl_run_result *res = NULL;
  int rc = pxl_run(ctx, prog, "blur3", args, &res);
  *out = rc ? NULL : pxl_result_take_image(res);
  if (!rc) snprintf(device, n, "%s", pxl_result_device(res));
  pxl_result_free(res);
  pxl_args_free(args);
  return rc;
}

/* True when a CUDA device works here. */
static int have_cuda(void) {
  pxl_context *probe = pxl_context_new();
  pxl_set_device(probe, "cuda");
  int have = strstr(pxl_device_name(probe), "unavailable") == NULL;
  pxl_context_free(probe);
  return have;
}

static int same_pixels(pxl_image *a, pxl_image *b) {
  for (int y = 0; y < pxl_image_height(a); y++)
    if (memcmp((uint8_t *)pxl_image_data(a) + y * pxl_image_pitch(a),
               (uint8_t *)pxl_image_data(b) + y * pxl_image_pitch(b), (size_t)pxl_image_width(a)))
      return 0;
  return 1;
}

static void device_strings(void) {
  pxl_context *ctx = pxl_context_new();
  static const char *const good[] = {"auto", "cpu", "ref", "cuda", "cuda:0", "cuda:12", "opencl", "opencl:0:1"};
  static const char *const bad[] = {"", "gpu", "cpu:1", "ref:0", "cuda:", "cuda:x", "cuda:1:2", "cuda:-1",
                                    "opencl:1", "opencl:0:", "opencl:0:1:2", "cudax", "auto:1", "opencl::"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    CHECK(pxl_set_device(ctx, good[i]) == PXL_OK, "'%s' refused: %s", good[i], pxl_errmsg(ctx));
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int rc = pxl_set_device(ctx, bad[i]);
    CHECK(rc == PXL_EARG, "'%s' gave %s, not PXL_EARG", bad[i], pxl_status_name(rc));
    CHECK(strstr(pxl_errmsg(ctx), "device"), "'%s': message '%s' names no device", bad[i], pxl_errmsg(ctx));
  }
  CHECK(pxl_set_device(ctx, NULL) == PXL_EARG, "NULL device accepted");
  /* the fusion modes (pxl_set_fusion): the three names, nothing else */
  CHECK(pxl_set_fusion(ctx, PXL_FUSE_OFF) == PXL_OK && pxl_set_fusion(ctx, PXL_FUSE_ALL) == PXL_OK &&
            pxl_set_fusion(ctx, PXL_FUSE_AUTO) == PXL_OK, "a fusion mode refused: %s", pxl_errmsg(ctx));
  CHECK(pxl_set_fusion(ctx, 3) == PXL_EARG && strstr(pxl_errmsg(ctx), "fusion mode 3"), "fusion mode 3: '%s'",
        pxl_errmsg(ctx));
  CHECK(pxl_set_fusion(ctx, -1) == PXL_EARG, "fusion mode -1 accepted");
  /* stages kept unfused (pxl_set_fusion_keep): names and commas only */
  CHECK(pxl_set_fusion_keep(ctx, "smooth,gx") == PXL_OK && pxl_set_fusion_keep(ctx, NULL) == PXL_OK &&
            pxl_set_fusion_keep(ctx, "") == PXL_OK, "a stage list refused: %s", pxl_errmsg(ctx));
  const char *bad_lists[] = {"a,", ",a", "a,,b", "a b", "a;b", "1a", "a\n"};
  for (size_t i = 0; i < sizeof bad_lists / sizeof *bad_lists; i++)
    CHECK(pxl_set_fusion_keep(ctx, bad_lists[i]) == PXL_EARG, "stage list '%s' accepted", bad_lists[i]);
  pxl_context_free(ctx);
}

/* The cost model through the API (pxl_program_entry_predict) and the forms it predicts:
 * edges.pxl fused is predicted faster than as written on both classes, keeping a stage
 * unfused lands in between, a bigger image takes longer; bad arguments are refused. The
 * numbers themselves are the model's (docs/PERFORMANCE.md validates them against runs). */
static void predictions(const char *dir) {
  pxl_context *ctx = pxl_context_new();
  pxl_program *prog;
  CHECK(pxl_program_from_file(ctx, example(dir, "edges"), &prog) == PXL_OK, "%s", pxl_errmsg(ctx));
  int e = pxl_program_entry_find(prog, "edges");
  const char *classes[] = {"cpu", "gpu"};
  for (int c = 0; c < 2; c++) {
    double fused, written, kept, big;
    pxl_set_fusion(ctx, PXL_FUSE_AUTO);
    CHECK(pxl_program_entry_predict(ctx, prog, e, classes[c], 2048, 2048, &fused) == PXL_OK, "%s", pxl_errmsg(ctx));
    CHECK(pxl_program_entry_predict(ctx, prog, e, classes[c], 4096, 4096, &big) == PXL_OK, "%s", pxl_errmsg(ctx));
    pxl_set_fusion_keep(ctx, "mag");
    CHECK(pxl_program_entry_predict(ctx, prog, e, classes[c], 2048, 2048, &kept) == PXL_OK, "%s", pxl_errmsg(ctx));
    pxl_set_fusion_keep(ctx, NULL);
    pxl_set_fusion(ctx, PXL_FUSE_OFF);
    CHECK(pxl_program_entry_predict(ctx, prog, e, classes[c], 2048, 2048, &written) == PXL_OK, "%s", pxl_errmsg(ctx));
    CHECK(fused > 0 && fused < kept && kept < written && big > 3 * fused, "%s: fused %g, mag kept %g, written %g, 4096^2 %g",
          classes[c], fused, kept, written, big);
  }
  double t;
  pxl_set_fusion(ctx, PXL_FUSE_AUTO);
  CHECK(pxl_program_entry_predict(ctx, prog, e, "tpu", 64, 64, &t) == PXL_EARG && strstr(pxl_errmsg(ctx), "tpu"),
        "class tpu: %s", pxl_errmsg(ctx));
  CHECK(pxl_program_entry_predict(ctx, prog, e, "cpu", 0, 64, &t) == PXL_EARG, "size 0x64 accepted");
  CHECK(pxl_program_entry_predict(ctx, prog, 99, "cpu", 64, 64, &t) == PXL_EARG, "entry 99 accepted");
  pxl_set_fusion_keep(ctx, "nosuch");
  CHECK(pxl_program_entry_predict(ctx, prog, e, "cpu", 64, 64, &t) == PXL_EARG && strstr(pxl_errmsg(ctx), "nosuch"),
        "a kept stage the pipeline lacks: %s", pxl_errmsg(ctx));
  pxl_program_free(prog);
  pxl_context_free(ctx);
}

/* A C compiler that fails: "auto" runs on the interpreter with a warning naming the
 * failure; "cpu" reports PXL_EBACKEND. The fake compiler is the shell's `false`. */
static void compiler_failure(const char *dir, const char *cache) {
  setenv("PXL_CC", "false", 1);
  pxl_context *ctx = pxl_context_new();
  pxl_set_cache_dir(ctx, cache);
  pxl_program *prog;
  CHECK(pxl_program_from_file(ctx, example(dir, "blur3"), &prog) == PXL_OK, "%s", pxl_errmsg(ctx));
  pxl_image *img = random_image(ctx), *want = NULL, *got = NULL;
  char dev[256];
  pxl_set_device(ctx, "ref");
  CHECK(run_blur(ctx, prog, img, &want, dev, sizeof dev) == PXL_OK, "ref: %s", pxl_errmsg(ctx));
  pxl_take_warnings(ctx);
  pxl_set_device(ctx, "cpu");
  int rc = run_blur(ctx, prog, img, &got, dev, sizeof dev);
  CHECK(rc == PXL_EBACKEND, "cpu with a failing compiler gave %s: %s", pxl_status_name(rc), pxl_errmsg(ctx));
  CHECK(!*pxl_take_warnings(ctx), "an explicit device warned");
  pxl_image_free(got);
  got = NULL;
  if (!have_cuda()) { /* else auto picks CUDA, which needs no C compiler */
    pxl_set_device(ctx, "auto");
    rc = run_blur(ctx, prog, img, &got, dev, sizeof dev);
    const char *w = pxl_take_warnings(ctx);
    CHECK(rc == PXL_OK, "auto with a failing compiler: %s", pxl_errmsg(ctx));
    CHECK(rc || same_pixels(got, want), "auto's fallback result differs from the interpreter's");
    CHECK(!strcmp(dev, "ref"), "auto's result says it ran on '%s', not ref", dev);
    CHECK(strstr(w, "cpu could not run 'blur3'") && strstr(w, "ran it on ref"), "warning was '%s'", w);
  }
  pxl_image_free(got);
  pxl_image_free(want);
  pxl_image_free(img);
  pxl_program_free(prog);
  pxl_context_free(ctx);
  unsetenv("PXL_CC");
}

/* With a CUDA device: a failing launch is PXL_EFAULT on "cuda" and a warning plus the CPU
 * on "auto"; a CUDA device that is there but whose library does not load is PXL_EFAULT
 * too (never "absent"). */
static void cuda_faults(const char *dir, const char *cache) {
  if (!have_cuda()) {
    printf("cuda cases left out: no CUDA device\n");
    return;
  }
  setenv("PXL_FAULT_INJECT", "launch", 1);
  pxl_context *ctx = pxl_context_new();
  pxl_set_cache_dir(ctx, cache);
  pxl_program *prog;
  pxl_program_from_file(ctx, example(dir, "blur3"), &prog);
  pxl_image *img = random_image(ctx), *got = NULL;
  char dev[256];
  pxl_set_device(ctx, "cuda");
  int rc = run_blur(ctx, prog, img, &got, dev, sizeof dev);
  CHECK(rc == PXL_EFAULT, "cuda with failing launches gave %s: %s", pxl_status_name(rc), pxl_errmsg(ctx));
  pxl_image_free(got);
  pxl_set_device(ctx, "auto");
  rc = run_blur(ctx, prog, img, &got, dev, sizeof dev);
  const char *w = pxl_take_warnings(ctx);
  CHECK(rc == PXL_OK && !strcmp(dev, "cpu"), "auto with failing CUDA launches: %s, ran on %s", pxl_errmsg(ctx), dev);
  CHECK(strstr(w, "could not run 'blur3'") && strstr(w, "ran it on cpu"), "warning was '%s'", w);
  pxl_image_free(got);
  pxl_image_free(img);
  pxl_program_free(prog);
  pxl_context_free(ctx);
  setenv("PXL_FAULT_INJECT", "nolib", 1);
  ctx = pxl_context_new();
  pxl_set_device(ctx, "cuda");
  pxl_device_name(ctx);
  CHECK(strstr(pxl_errmsg(ctx), "does not load"), "nolib: '%s'", pxl_errmsg(ctx));
  CHECK(ctx && pxl_sync(ctx) == PXL_OK, "sync");
  pxl_image *x;
  rc = pxl_image_create_device(ctx, 4, 4, PXL_U8, 1, &x);
  CHECK(rc == PXL_EFAULT, "a CUDA device whose driver does not load gave %s, not PXL_EFAULT", pxl_status_name(rc));
  pxl_context_free(ctx);
  unsetenv("PXL_FAULT_INJECT");
}

/* Kernel a(0,0)/2 + b(0,0)/2 where b is smaller than the output: b is read outside itself
 * (relative reads use the output's coordinates), so its border mode matters even though
 * it is read only at (0, 0). Every border mode on every backend here must equal the
 * interpreter (the CPU backend clamped: it gave every mode one module). */
static void smaller_second_image(const char *cache) {
  static const char *const modes[] = {"clamp", "mirror", "mirror101", "wrap", "constant(200)"};
  static const char *const devices[] = {"cpu", "opencl", "cuda"};
  pxl_context *ctx = pxl_context_new();
  pxl_set_cache_dir(ctx, cache);
  pxl_program *prog;
  int rc = pxl_program_from_string(ctx, "add2.pxl",
                                   "kernel u8 add2(image u8 a, image u8 b) { return a(0, 0) / 2 + b(0, 0) / 2; }\n",
                                   &prog);
  CHECK(rc == PXL_OK, "%s", pxl_errmsg(ctx));
  pxl_image *a, *b;
  pxl_image_create(ctx, 9, 8, PXL_U8, 1, &a);
  pxl_image_create(ctx, 4, 3, PXL_U8, 1, &b);
  for (int y = 0; y < 8; y++)
    for (int x = 0; x < 9; x++) ((uint8_t *)pxl_image_data(a) + y * pxl_image_pitch(a))[x] = (uint8_t)random_u64();
  for (int y = 0; y < 3; y++)
    for (int x = 0; x < 4; x++) ((uint8_t *)pxl_image_data(b) + y * pxl_image_pitch(b))[x] = (uint8_t)random_u64();
  for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
    pxl_image *want = NULL;
    for (int d = -1; d < (int)(sizeof devices / sizeof *devices); d++) {
      pxl_set_device(ctx, d < 0 ? "ref" : devices[d]);
      pxl_args *args = pxl_args_new(ctx);
      pxl_args_image(args, "a", a);
      pxl_args_image(args, "b", b);
      pxl_args_border(args, "b", modes[m]);
      pxl_run_result *res = NULL;
      rc = pxl_run(ctx, prog, "add2", args, &res);
      pxl_args_free(args);
      if (rc == PXL_EDEVICE && d >= 0 && strcmp(devices[d], "cpu")) { /* absent GPU */
        pxl_result_free(res);
        continue;
      }
      CHECK(rc == PXL_OK, "%s on %s: %s", modes[m], d < 0 ? "ref" : devices[d], pxl_errmsg(ctx));
      if (rc == PXL_OK && d < 0) want = pxl_result_take_image(res);
      else if (rc == PXL_OK && want)
        CHECK(same_pixels(pxl_result_image(res), want), "border %s of a smaller image: %s differs from ref", modes[m],
              devices[d]);
      pxl_result_free(res);
    }
    pxl_image_free(want);
  }
  pxl_image_free(a);
  pxl_image_free(b);
  pxl_program_free(prog);
  pxl_context_free(ctx);
}

/* A w x h u8 image of random bytes in *in, and example `name` run on it with ctx (on the
 * CPU) with u8 scalar `scalar` (NULL: none) set to v: the result, or NULL after a failed
 * check. */
static pxl_image *cpu_example(pxl_context *ctx, const char *dir, const char *cache, const char *name, int w, int h,
                              const char *scalar, int v, pxl_image **in) {
  pxl_set_cache_dir(ctx, cache);
  pxl_set_device(ctx, "cpu");
  pxl_program *prog = NULL;
  pxl_image *out = NULL;
  int rc = pxl_program_from_file(ctx, example(dir, name), &prog);
  CHECK(rc == PXL_OK, "%s", pxl_errmsg(ctx));
  *in = NULL;
  CHECK(pxl_image_create(ctx, w, h, PXL_U8, 1, in) == PXL_OK, "create %dx%d", w, h);
  if (!rc && *in) {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) ((uint8_t *)pxl_image_data(*in) + (size_t)y * pxl_image_pitch(*in))[x] = (uint8_t)random_u64();
    pxl_args *args = pxl_args_new(ctx);
    pxl_args_image(args, "in", *in);
    if (scalar) pxl_args_scalar(args, scalar, v);
    pxl_run_result *res = NULL;
    rc = pxl_run(ctx, prog, name, args, &res);
    CHECK(rc == PXL_OK, "%s %dx%d: %s", name, w, h, pxl_errmsg(ctx));
    out = rc ? NULL : pxl_result_take_image(res);
    pxl_result_free(res);
    pxl_args_free(args);
  }
  pxl_program_free(prog);
  return out;
}

/* examples/transpose.pxl on the CPU over an image larger than the generated C's direct
 * transpose threshold (gen_c.c pure_transpose: 2048 x 2048 pixels), odd sizes so that
 * edge tiles take the buffered path beside the direct one, against a transpose written
 * here. */
static void large_transpose(const char *dir, const char *cache) {
  const int w = 2113, h = 2003;
  pxl_context *ctx = pxl_context_new();
  pxl_image *in, *out = cpu_example(ctx, dir, cache, "transpose", w, h, NULL, 0, &in);
  CHECK(!out || (pxl_image_width(out) == h && pxl_image_height(out) == w), "transpose: output size");
  long bad = 0;
  for (int y = 0; out && y < w && pxl_image_width(out) == h; y++)
    for (int x = 0; x < h; x++)
      bad += ((const uint8_t *)pxl_image_data(out) + (size_t)y * pxl_image_pitch(out))[x] !=
             ((const uint8_t *)pxl_image_data(in) + (size_t)x * pxl_image_pitch(in))[y];
  CHECK(bad == 0, "transpose %dx%d on the CPU: %ld pixels differ from in(y, x)", w, h, bad);
  pxl_image_free(out);
  pxl_image_free(in);
  pxl_context_free(ctx);
}

/* examples/binarize.pxl (a kernel the CPU runs as a table) on the CPU over an image
 * larger than the threshold above which the generated C streams its rows out
 * (LUT_STREAM_PIXELS: 4096 x 4096), 4099 pixels wide so that rows start at every
 * alignment (the unaligned head of each row is written plainly), against the threshold
 * computed here. */
static void large_table(const char *dir, const char *cache) {
  const int w = 4099, h = 4097, t = 77;
  pxl_context *ctx = pxl_context_new();
  pxl_image *in, *out = cpu_example(ctx, dir, cache, "binarize", w, h, "t", t, &in);
  long bad = 0;
  for (int y = 0; out && y < h; y++)
    for (int x = 0; x < w; x++) {
      uint8_t v = ((const uint8_t *)pxl_image_data(in) + (size_t)y * pxl_image_pitch(in))[x];
      bad += ((const uint8_t *)pxl_image_data(out) + (size_t)y * pxl_image_pitch(out))[x] != (v > t ? 255 : 0);
    }
  CHECK(bad == 0, "binarize %dx%d on the CPU: %ld pixels differ", w, h, bad);
  pxl_image_free(out);
  pxl_image_free(in);
  pxl_context_free(ctx);
}

/* Files in directory dir (the cache), to see whether a run compiled a new module. */
static int count_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* Runs lut4 (m[in & 3]) on img with values v[0..n) for m: the status, the output's first
 * row in row (-1s on failure). */
static int run_lut4(pxl_context *ctx, pxl_program *prog, pxl_image *img, const double *v, int n, int row[4]) {
  pxl_args *args = pxl_args_new(ctx);
  double copy[8];
  memcpy(copy, v, sizeof(double) * (size_t)n);
  pxl_args_image(args, "in", img);
  int rc = pxl_args_array(args, "m", copy, n);
  for (int i = 0; i < n; i++) copy[i] = -7; /* copied by pxl_args_array: no effect */
  pxl_run_result *res = NULL;
  if (!rc) rc = pxl_run(ctx, prog, "lut4", args, &res);
  for (int x = 0; x < 4; x++) row[x] = rc ? -1 : ((const uint8_t *)pxl_image_data(pxl_result_image(res)))[x];
  pxl_result_free(res);
  pxl_args_free(args);
  return rc;
}

/* pxl_args_array and pxl_args_array_text: values copied, converted, the rest 0, the
 * refusals; every backend here equal to the hand-computed results; a second run with
 * other values compiles nothing new (the values are no part of a cache key). */
static void array_params(const char *cache) {
  static const char *const devices[] = {"ref", "cpu", "opencl", "cuda"};
  pxl_context *ctx = pxl_context_new();
  pxl_set_cache_dir(ctx, cache);
  pxl_program *prog;
  int rc = pxl_program_from_string(ctx, "arrays.pxl",
                                   "kernel u8 lut4(image u8 in, i32 m[4]) { return m[in(0, 0) & 3]; }\n"
                                   "reduce i64 wsum(image u8 in, i64 w[3]) = sum(w[in(0, 0) % 3]);\n"
                                   "kernel u8 thr(image u8 in, u8 t) { return in(0, 0) > t; }\n",
                                   &prog);
  CHECK(rc == PXL_OK, "%s", pxl_errmsg(ctx));
  pxl_image *img;
  pxl_image_create(ctx, 4, 1, PXL_U8, 1, &img);
  for (int x = 0; x < 4; x++) ((uint8_t *)pxl_image_data(img))[x] = (uint8_t)(x + 4); /* & 3: 0 1 2 3 */
  for (size_t d = 0; d < sizeof devices / sizeof *devices; d++) {
    if (pxl_set_device(ctx, devices[d])) continue;
    int row[4];
    rc = run_lut4(ctx, prog, img, (const double[]){9, 8, 7, 6}, 4, row);
    if (rc == PXL_EDEVICE && d >= 2) continue; /* absent GPU */
    CHECK(row[0] == 9 && row[1] == 8 && row[2] == 7 && row[3] == 6, "%s: lut4 gave %d %d %d %d (%s)", devices[d],
          row[0], row[1], row[2], row[3], pxl_errmsg(ctx));
    int files = count_files(cache);
    run_lut4(ctx, prog, img, (const double[]){300, -2, 2.5}, 3, row); /* saturated, ties to even, the rest 0 */
    CHECK(row[0] == 255 && row[1] == 0 && row[2] == 2 && row[3] == 0, "%s: lut4 gave %d %d %d %d (%s)",
          devices[d], row[0], row[1], row[2], row[3], pxl_errmsg(ctx));
    CHECK(count_files(cache) == files, "%s: other values added cache files (%d, then %d)", devices[d], files,
          count_files(cache));
    pxl_args *args = pxl_args_new(ctx);
    pxl_args_image(args, "in", img);
    CHECK(pxl_args_array_text(args, "w", " 1, 10\n100 ") == PXL_OK, "%s", pxl_errmsg(ctx));
    pxl_run_result *res = NULL;
    rc = pxl_run(ctx, prog, "wsum", args, &res);
    pxl_scalar_result sr = {0};
    if (!rc) pxl_result_scalar(res, &sr);
    CHECK(rc == PXL_OK && sr.ivalue == 10 + 100 + 1 + 10, "%s: wsum gave %lld (%s)", devices[d],
          (long long)sr.ivalue, pxl_errmsg(ctx)); /* pixels 4 5 6 7: w[1] w[2] w[0] w[1] */
    pxl_result_free(res);
    pxl_args_free(args);
  }
  pxl_set_device(ctx, "ref");
  int row[4];
  run_lut4(ctx, prog, img, (const double[]){1, 2, 3, 4, 5}, 5, row);
  CHECK(row[0] == -1 && strstr(pxl_errmsg(ctx), "has 4 elements"), "5 values for m[4]: %s", pxl_errmsg(ctx));
  pxl_args *args = pxl_args_new(ctx);
  CHECK(pxl_args_array(args, "m", NULL, 2) == PXL_EARG, "NULL values accepted");
  CHECK(pxl_args_array(args, "m", (const double[]){1}, -1) == PXL_EARG, "n = -1 accepted");
  CHECK(pxl_args_array(args, "m", (const double[]){1}, PXL_MAX_ARRAY + 1) == PXL_EARG, "n too large accepted");
  CHECK(pxl_args_array_text(args, "m", "1,2,") == PXL_OK, "a trailing comma: %s", pxl_errmsg(ctx));
  pxl_args_free(args);
  static const char *const bad[] = {"", " ", "1,,2", ",1", "1,x", "1e999999x", "nan(", "1;2"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    args = pxl_args_new(ctx);
    CHECK(pxl_args_array_text(args, "m", bad[i]) == PXL_EARG, "'%s' accepted", bad[i]);
    pxl_args_free(args);
  }
  args = pxl_args_new(ctx); /* an array for a scalar parameter; a scalar for an array */
  pxl_args_image(args, "in", img);
  pxl_args_array(args, "t", (const double[]){1}, 1);
  pxl_run_result *res = NULL;
  CHECK(pxl_run(ctx, prog, "thr", args, &res) == PXL_EARG && strstr(pxl_errmsg(ctx), "'t' of kernel 'thr' is one u8 value, not an array"),
        "an array for scalar t: %s", pxl_errmsg(ctx));
  pxl_args_free(args);
  args = pxl_args_new(ctx);
  pxl_args_image(args, "in", img);
  pxl_args_scalar(args, "m", 5);
  rc = pxl_run(ctx, prog, "lut4", args, &res);
  CHECK(rc == PXL_OK && ((const uint8_t *)pxl_image_data(pxl_result_image(res)))[0] == 5 &&
        ((const uint8_t *)pxl_image_data(pxl_result_image(res)))[1] == 0,
        "one value for m: %s", pxl_errmsg(ctx));
  pxl_result_free(res);
  pxl_args_free(args);
  pxl_image_free(img);
  pxl_program_free(prog);
  pxl_context_free(ctx);
}

/* A generic entry: each instance listed with its concrete types; a run with a u16 or f32
 * image takes that instance (its output has the image's type, and its pixels are the
 * 3x3 mean computed by hand here); an i16 image, which no instance takes, is refused
 * naming the types there are. */
static void generic_entries(const char *cache) {
  pxl_context *ctx = pxl_context_new();
  pxl_set_cache_dir(ctx, cache);
  pxl_set_device(ctx, "ref");
  pxl_program *prog = NULL;
  int rc = pxl_program_from_string(ctx, "generic", "kernel<T: u8 | u16 | f32> T mean3(image T in) {\n"
                                   "  f64 s = 0;\n  for (int dy = -1; dy <= 1; dy++)\n"
                                   "    for (int dx = -1; dx <= 1; dx++) s += in(dx, dy);\n"
                                   "  return s / 9;\n}\n", &prog);
  CHECK(rc == PXL_OK, "generic kernel: %s", pxl_errmsg(ctx));
  if (rc) return;
  CHECK(pxl_program_entry_count(prog) == 3, "3 instances, got %d", pxl_program_entry_count(prog));
  CHECK(!strcmp(pxl_program_entry_signature(prog, 1), "kernel u16 mean3(image u16 in)"), "signature '%s'",
        pxl_program_entry_signature(prog, 1));
  const pxl_type types[] = {PXL_U16, PXL_F32};
  for (int t = 0; t < 2; t++) {
    pxl_image *img;
    pxl_image_create(ctx, 5, 4, types[t], 1, &img);
    for (int y = 0; y < 4; y++)
      for (int x = 0; x < 5; x++) {
        char *row = (char *)pxl_image_data(img) + y * pxl_image_pitch(img);
        if (types[t] == PXL_U16) ((uint16_t *)row)[x] = (uint16_t)(1000 * x + 7 * y);
        else ((float *)row)[x] = 0.5f * (float)x - (float)y;
      }
    pxl_args *args = pxl_args_new(ctx);
    pxl_args_image(args, "in", img);
    int want = t + 1, got = pxl_program_entry_for_args(prog, pxl_program_entry_find(prog, "mean3"), args);
    CHECK(got == want && pxl_program_entry_is_generic(prog, got), "instance for %s: %d, want %d",
          pxl_type_name(types[t]), got, want);
    pxl_run_result *res = NULL;
    rc = pxl_run(ctx, prog, "mean3", args, &res);
    CHECK(rc == PXL_OK, "mean3 on %s: %s", pxl_type_name(types[t]), pxl_errmsg(ctx));
    pxl_image *o = rc ? NULL : pxl_result_image(res);
    CHECK(o && pxl_image_type(o) == types[t], "mean3 on %s: output type", pxl_type_name(types[t]));
    if (o) { /* pixel (2, 1): the window lies inside; the mean of x = 1..3, y = 0..2 */
      const char *row = (const char *)pxl_image_data(o) + 1 * pxl_image_pitch(o);
      double v = types[t] == PXL_U16 ? ((const uint16_t *)row)[2] : ((const float *)row)[2];
      double want_v = types[t] == PXL_U16 ? 2000 + 7 : 0.5 * 2 - 1; /* 9 * (1000 * 2 + 7 * 1) / 9 */
      CHECK(v == want_v, "mean3 on %s: pixel (2, 1) is %g, want %g", pxl_type_name(types[t]), v, want_v);
    }
    pxl_result_free(res);
    pxl_args_free(args);
    pxl_image_free(img);
  }
  pxl_image *i16;
  pxl_image_create(ctx, 5, 4, PXL_I16, 1, &i16);
  pxl_args *args = pxl_args_new(ctx);
  pxl_args_image(args, NULL, i16);
  pxl_run_result *res = NULL;
  rc = pxl_run(ctx, prog, "mean3", args, &res);
  CHECK(rc == PXL_EARG && strstr(pxl_errmsg(ctx), "u8, u16, f32") && strstr(pxl_errmsg(ctx), "i16"),
        "i16 refused naming the instances: %d '%s'", rc, pxl_errmsg(ctx));
  pxl_result_free(res);
  pxl_args_free(args);
  pxl_image_free(i16);
  pxl_program_free(prog);
  pxl_context_free(ctx);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: api_test EXAMPLES_DIR CACHE_DIR\n");
    return 2;
  }
  device_strings();
  predictions(argv[1]);
  compiler_failure(argv[1], argv[2]);
  cuda_faults(argv[1], argv[2]);
  smaller_second_image(argv[2]);
  array_params(argv[2]);
  generic_entries(argv[2]);
  large_transpose(argv[1], argv[2]);
  large_table(argv[1], argv[2]);
  printf("%s\n", failed ? "api_test: FAILED" : "api_test: passed");
  return failed != 0;
}
