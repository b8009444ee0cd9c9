/*
 * outputs_test.c - kernels with several outputs through the public API, on one device.
 *
 * A run of `kernel (...) k(...)` gives one image per output (pxl_result_image_count,
 * pxl_result_image_at, pxl_result_take_image_at): each must equal the same expression
 * written as a kernel of its own (an independent single-output computation on the same
 * device), in the declared order, with its own type and channels; a bound output is
 * image 0; one-channel outputs run per channel on colour images (equal to per-plane
 * runs); the entry's outputs are known before a run (pxl_program_entry_output_count,
 * _at, the signature); out-of-range indices, a second take and taking a bound output
 * give NULL. On GPUs also device images in, device images out.
 *
 * Usage: outputs_test DEVICE CACHE_DIR, DEVICE ref, cpu, opencl or cuda. GPU devices
 * skip (77) only when absent (tests/common/gpu_device.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/gpu_device.h"
#include "pxl/pxl.h"

static const char SOURCE[] =
    "kernel (i16 gx, u8 mean, f32x3 rgb) three(image u8 in, f32 k) {\n"
    "  int s = 0;\n"
    "  for (int dy = -1; dy <= 1; dy++)\n"
    "    for (int dx = -1; dx <= 1; dx++) s += in(dx, dy);\n"
    "  if (in(0, 0) > 200) return (in(1, 0) - in(-1, 0), 255, f32x3(k));\n"
    "  return (in(1, 0) - in(-1, 0), (s + 4) / 9, f32x3(in(0, 0), s, k * in(0, 1)));\n"
    "}\n"
    "kernel i16 gx(image u8 in) { return in(1, 0) - in(-1, 0); }\n"
    "kernel u8 mean(image u8 in) {\n"
    "  int s = 0;\n"
    "  for (int dy = -1; dy <= 1; dy++)\n"
    "    for (int dx = -1; dx <= 1; dx++) s += in(dx, dy);\n"
    "  return in(0, 0) > 200 ? 255 : (s + 4) / 9;\n"
    "}\n"
    "kernel f32x3 rgb(image u8 in, f32 k) {\n"
    "  int s = 0;\n"
    "  for (int dy = -1; dy <= 1; dy++)\n"
    "    for (int dx = -1; dx <= 1; dx++) s += in(dx, dy);\n"
    "  return in(0, 0) > 200 ? f32x3(k) : f32x3(in(0, 0), s, k * in(0, 1));\n"
    "}\n"
    "kernel (u8 lo, u16 hi) pair(image u8 in) size(in.width - 1, in.height) {\n"
    "  return (in(0, 0) / 2, in(0, 0) * 300 + in(1, 0));\n"
    "}\n"
    "kernel u8 lo(image u8 in) size(in.width - 1, in.height) { return in(0, 0) / 2; }\n"
    "kernel u16 hi(image u8 in) size(in.width - 1, in.height) { return in(0, 0) * 300 + in(1, 0); }\n"
    "pipeline both(image u8 in) -> (image u16, image u8) {\n"
    "  (image u8 a, image u16 b) = pair(in : wrap);\n"
    "  return (b, a);\n"
    "}\n";

static int compared;

static pxl_image *random_image(pxl_context *ctx, int w, int h, int channels) {
  pxl_image *img = NULL;
  if (pxl_image_create(ctx, w, h, PXL_U8, channels, &img)) return NULL;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w * channels; x++)
      ((uint8_t *)pxl_image_data(img))[(size_t)y * pxl_image_pitch(img) + x] = (uint8_t)(random_u64() >> 32);
  return img;
}

/* Host copies of a and b have the same shape and bytes. */
static bool same_image(pxl_context *ctx, pxl_image *a, pxl_image *b) {
  pxl_image *ha = NULL, *hb = NULL;
  if (pxl_image_on_device(a) && pxl_image_to_host(ctx, a, &ha)) return false;
  if (pxl_image_on_device(b) && pxl_image_to_host(ctx, b, &hb)) {
    pxl_image_free(ha);
    return false;
  }
  pxl_image *x = ha ? ha : a, *y = hb ? hb : b;
  bool ok = pxl_image_width(x) == pxl_image_width(y) && pxl_image_height(x) == pxl_image_height(y) &&
            pxl_image_type(x) == pxl_image_type(y) && pxl_image_channels(x) == pxl_image_channels(y);
  size_t row = ok ? (size_t)pxl_image_width(x) * pxl_image_channels(x) * pxl_type_size(pxl_image_type(x)) : 0;
  for (int r = 0; ok && r < pxl_image_height(x); r++)
    ok = !memcmp((char *)pxl_image_data(x) + (size_t)r * pxl_image_pitch(x),
                 (char *)pxl_image_data(y) + (size_t)r * pxl_image_pitch(y), row);
  pxl_image_free(ha);
  pxl_image_free(hb);
  return ok;
}

/* Runs `entry` on in (scalar k when k >= 0), border `border`; NULL on failure. */
static pxl_run_result *run(pxl_context *ctx, pxl_program *prog, const char *entry, pxl_image *in, double k,
                           const char *border, pxl_image *bound) {
  pxl_args *args = pxl_args_new(ctx);
  pxl_args_image(args, "in", in);
  if (k >= 0) pxl_args_scalar(args, "k", k);
  if (border) pxl_args_border(args, "in", border);
  if (bound) pxl_args_output(args, bound);
  pxl_run_result *res = NULL;
  int rc = pxl_run(ctx, prog, entry, args, &res);
  pxl_args_free(args);
  CHECK(rc == PXL_OK, "%s: %s", entry, pxl_errmsg(ctx));
  return rc ? NULL : res;
}

/* Each output of `multi` against the kernel of its own name, on in. */
static void compare_outputs(pxl_context *ctx, pxl_program *prog, const char *multi, const char *const *singles,
                            int n, pxl_image *in, double k, const char *border) {
  pxl_run_result *rm = run(ctx, prog, multi, in, k, border, NULL);
  if (!rm) return;
  CHECK(pxl_result_image_count(rm) == n, "%s gave %d images, not %d", multi, pxl_result_image_count(rm), n);
  for (int i = 0; i < n && i < pxl_result_image_count(rm); i++) {
    pxl_run_result *rs = run(ctx, prog, singles[i], in, !strcmp(singles[i], "rgb") ? k : -1, border, NULL);
    if (!rs) continue;
    CHECK(same_image(ctx, pxl_result_image_at(rm, i), pxl_result_image(rs)),
          "%s output %d (%dx%d, %d channels, border %s) differs from %s", multi, i, pxl_image_width(pxl_result_image(rs)),
          pxl_image_height(pxl_result_image(rs)), pxl_image_channels(in), border ? border : "-",
          singles[i]);
    compared++;
    pxl_result_free(rs);
  }
  pxl_result_free(rm);
}

/* What the program says about its entries' outputs before any run. */
static void entry_outputs(pxl_program *prog) {
  int e = pxl_program_entry_find(prog, "three");
  pxl_type t;
  int ch = 0;
  const char *name = NULL;
  CHECK(pxl_program_entry_output_count(prog, e) == 3, "three: %d outputs", pxl_program_entry_output_count(prog, e));
  CHECK(pxl_program_entry_output_at(prog, e, 2, &t, &ch, &name) && t == PXL_F32 && ch == 3 && !strcmp(name, "rgb"),
        "three output 2: %d %d %s", (int)t, ch, name ? name : "(null)");
  CHECK(pxl_program_entry_output_at(prog, e, 0, &t, &ch, &name) && t == PXL_I16 && ch == 1 && !strcmp(name, "gx"),
        "three output 0");
  CHECK(!pxl_program_entry_output_at(prog, e, 3, &t, &ch, &name), "output 3 of three exists");
  CHECK(!pxl_program_entry_output_at(prog, e, -1, &t, &ch, &name), "output -1 of three exists");
  CHECK(pxl_program_entry_output(prog, e, &t, &ch) && t == PXL_I16 && ch == 1, "entry_output is not output 0");
  const char *sig = pxl_program_entry_signature(prog, e);
  CHECK(sig && !strcmp(sig, "kernel (i16 gx, u8 mean, f32x3 rgb) three(image u8 in, f32 k)"), "signature '%s'",
        sig ? sig : "(null)");
  int g = pxl_program_entry_find(prog, "gx");
  CHECK(pxl_program_entry_output_count(prog, g) == 1, "gx: %d outputs", pxl_program_entry_output_count(prog, g));
  CHECK(pxl_program_entry_output_at(prog, g, 0, &t, &ch, &name) && !strcmp(name, ""), "gx output 0");
}

/* Indices out of range, taking twice, a bound output as image 0. */
static void result_access(pxl_context *ctx, pxl_program *prog) {
  pxl_image *in = random_image(ctx, 19, 7, 1);
  pxl_run_result *r = run(ctx, prog, "pair", in, -1, NULL, NULL);
  if (r) {
    CHECK(pxl_result_image_at(r, 2) == NULL && pxl_result_image_at(r, -1) == NULL, "out-of-range image");
    CHECK(pxl_result_image(r) == pxl_result_image_at(r, 0), "pxl_result_image is not image 0");
    pxl_image *hi = pxl_result_take_image_at(r, 1);
    CHECK(hi && pxl_image_width(hi) == 18 && pxl_image_type(hi) == PXL_U16, "took image 1");
    CHECK(pxl_result_take_image_at(r, 1) == NULL && pxl_result_image_at(r, 1) == NULL, "image 1 taken twice");
    CHECK(pxl_result_take_image_at(r, 7) == NULL, "took image 7");
    pxl_result_free(r); /* hi is the caller's now */
    pxl_image_free(hi);
  }
  pxl_image *bound = NULL;
  pxl_image_create(ctx, 18, 7, PXL_U8, 1, &bound);
  r = run(ctx, prog, "pair", in, -1, NULL, bound);
  if (r) {
    CHECK(pxl_result_image_at(r, 0) == bound, "a bound output is not image 0");
    CHECK(pxl_result_take_image_at(r, 0) == NULL, "took the caller's bound output");
    pxl_run_result *lo = run(ctx, prog, "lo", in, -1, NULL, NULL);
    CHECK(lo && same_image(ctx, bound, pxl_result_image(lo)), "the bound output holds other pixels than lo");
    pxl_result_free(lo);
    pxl_result_free(r);
  }
  pxl_image_free(bound);
  /* reductions have no images */
  pxl_image_free(in);
}

/* Border none leaves 0 where the kernel's window (all its outputs' reads) leaves the
 * image, in every output: pair reads in(0, 0) and in(1, 0), so its output lo, which reads
 * only in(0, 0), is 0 in the last column, where the kernel lo alone is not. */
static void border_none(pxl_context *ctx, pxl_program *prog) {
  pxl_image *in = random_image(ctx, 23, 9, 1);
  pxl_run_result *rm = run(ctx, prog, "pair", in, -1, "none", NULL);
  pxl_run_result *rs = run(ctx, prog, "lo", in, -1, "none", NULL);
  pxl_image *a = NULL, *b = NULL;
  if (rm && rs && !pxl_image_to_host(ctx, pxl_result_image_at(rm, 0), &a) &&
      !pxl_image_to_host(ctx, pxl_result_image(rs), &b)) {
    bool ok = true;
    int w = pxl_image_width(a), last_nonzero = 0;
    for (int y = 0; y < pxl_image_height(a); y++) {
      const uint8_t *ra = (const uint8_t *)pxl_image_data(a) + (size_t)y * pxl_image_pitch(a);
      const uint8_t *rb = (const uint8_t *)pxl_image_data(b) + (size_t)y * pxl_image_pitch(b);
      ok = ok && !memcmp(ra, rb, (size_t)w - 1) && ra[w - 1] == 0;
      last_nonzero |= rb[w - 1];
    }
    CHECK(ok, "pair output lo with border none: not lo's pixels with its last column 0");
    CHECK(last_nonzero, "the test image gives lo no nonzero pixel in the last column");
    compared++;
  }
  pxl_image_free(a);
  pxl_image_free(b);
  pxl_result_free(rm);
  pxl_result_free(rs);
  pxl_image_free(in);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: outputs_test DEVICE CACHE_DIR\n");
    return 2;
  }
  const char *device = argv[1];
  bool gpu = !strcmp(device, "cuda") || !strcmp(device, "opencl");
  if (gpu) {
    int g = gpu_device_check(device);
    if (g != GPU_OPEN) return g;
  }
  pxl_context *ctx = pxl_context_new();
  pxl_set_cache_dir(ctx, argv[2]);
  if (pxl_set_device(ctx, device)) {
    printf("FAIL: device '%s': %s\n", device, pxl_errmsg(ctx));
    return 1;
  }
  pxl_program *prog = NULL;
  if (pxl_program_from_string(ctx, "outputs.pxl", SOURCE, &prog)) {
    printf("FAIL: %s\n", pxl_errmsg(ctx));
    return 1;
  }
  entry_outputs(prog);
  static const char *const three[] = {"gx", "mean", "rgb"}, *const pair[] = {"lo", "hi"};
  static const char *const borders[] = {"clamp", "mirror101", "wrap", "constant(9)"};
  const int sizes[][2] = {{1, 1}, {2, 5}, {33, 17}, {130, 67}};
  border_none(ctx, prog);
  for (int s = 0; s < 4; s++)
    for (int b = 0; b < 4; b++) {
      pxl_image *in = random_image(ctx, sizes[s][0], sizes[s][1], 1);
      compare_outputs(ctx, prog, "three", three, 3, in, 0.75, borders[b]);
      if (sizes[s][0] > 1) compare_outputs(ctx, prog, "pair", pair, 2, in, -1, borders[b]);
      pxl_image_free(in);
    }
  /* one-channel outputs run per channel on colour images */
  pxl_image *rgb = random_image(ctx, 37, 11, 3);
  compare_outputs(ctx, prog, "pair", pair, 2, rgb, -1, "wrap");
  /* a vector output does not run per channel */
  pxl_args *args = pxl_args_new(ctx);
  pxl_args_image(args, "in", rgb);
  pxl_args_scalar(args, "k", 1);
  pxl_run_result *res = NULL;
  int rc = pxl_run(ctx, prog, "three", args, &res);
  CHECK(rc == PXL_EARG && strstr(pxl_errmsg(ctx), "in output rgb"), "three per channel: %s: %s", pxl_status_name(rc),
        pxl_errmsg(ctx));
  pxl_result_free(res);
  pxl_args_free(args);
  pxl_image_free(rgb);
  result_access(ctx, prog);
  /* a pipeline returning several images: pair's, swapped; per channel too; a bound
   * output is image 0 */
  static const char *const swapped[] = {"hi", "lo"};
  for (int c = 1; c <= 3; c += 2) {
    pxl_image *in = random_image(ctx, 41, 13, c);
    compare_outputs(ctx, prog, "both", swapped, 2, in, -1, NULL);
    pxl_image_free(in);
  }
  {
    pxl_image *in = random_image(ctx, 41, 13, 1), *bound = NULL;
    pxl_image_create(ctx, 40, 13, PXL_U16, 1, &bound);
    pxl_args *ba = pxl_args_new(ctx);
    pxl_args_image(ba, "in", in);
    pxl_args_output(ba, bound);
    pxl_run_result *rb = NULL;
    CHECK(pxl_run(ctx, prog, "both", ba, &rb) == PXL_OK && pxl_result_image_at(rb, 0) == bound &&
              pxl_result_image_count(rb) == 2 && pxl_image_type(pxl_result_image_at(rb, 1)) == PXL_U8,
          "both with a bound output: %s", pxl_errmsg(ctx));
    pxl_result_free(rb);
    pxl_args_free(ba);
    pxl_image_free(bound);
    pxl_image_free(in);
    int e = pxl_program_entry_find(prog, "both");
    const char *sig = pxl_program_entry_signature(prog, e);
    CHECK(sig && !strcmp(sig, "pipeline both(image u8 in) -> (image u16, image u8)"), "signature '%s'", sig ? sig : "");
    pxl_type t;
    CHECK(pxl_program_entry_output_count(prog, e) == 2 && pxl_program_entry_output_at(prog, e, 1, &t, NULL, NULL) &&
              t == PXL_U8, "both's outputs");
  }
  if (gpu) { /* device images in, device images out */
    pxl_image *in = random_image(ctx, 45, 23, 1), *din = NULL;
    CHECK(pxl_image_to_device(ctx, in, &din) == PXL_OK, "to device: %s", pxl_errmsg(ctx));
    pxl_run_result *rd = din ? run(ctx, prog, "three", din, 2, "mirror", NULL) : NULL;
    pxl_run_result *rh = run(ctx, prog, "three", in, 2, "mirror", NULL);
    for (int i = 0; rd && rh && i < 3; i++) {
      CHECK(pxl_image_on_device(pxl_result_image_at(rd, i)), "output %d of a device run is on the host", i);
      CHECK(same_image(ctx, pxl_result_image_at(rd, i), pxl_result_image_at(rh, i)), "device output %d differs", i);
      compared++;
    }
    pxl_result_free(rd);
    pxl_result_free(rh);
    pxl_image_free(din);
    pxl_image_free(in);
  }
  pxl_program_free(prog);
  pxl_context_free(ctx);
  printf("%s on %s: %d outputs compared\n", failed ? "outputs_test: FAILED" : "outputs_test: passed", device, compared);
  return failed != 0;
}
