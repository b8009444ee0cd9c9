/*
 * loops_test.c - pipelines with loops (src/runtime/loops.c) through the public API, on
 * one device against the reference interpreter: what the differential tests do not
 * reach. A bound host output for a result that is a carried image (copied out of the
 * loop's buffers) and for one computed after the loop; a carried input with no
 * iteration (the result is a copy of the input, which stays as it was) and with some;
 * nested loops; 3-channel inputs run per channel; on GPUs the same with device inputs and
 * a bound device output, run three times (CUDA records such runs from the second on:
 * pipelines with loops must not be recorded, and every run must be right); a loop whose
 * carried image changes size is PXL_EARG naming the image and both sizes.
 *
 * Usage: loops_test DEVICE CACHE_DIR, DEVICE ref, cpu, opencl or cuda. GPU devices skip
 * (77) only when absent (tests/common/gpu_device.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/gpu_device.h"
#include "pxl/pxl.h"

static const char SOURCE[] =
    "kernel u8 darker(image u8 a) { return a(0, 0) / 3; }\n"
    "kernel u8 grow(image u8 m, image u8 mask) {\n"
    "  u8 v = max(m(0, 0), max(m(-1, 0), max(m(1, 0), max(m(0, -1), m(0, 1)))));\n"
    "  return min(v, mask(0, 0));\n"
    "}\n"
    "kernel u8 smooth(image u8 a) { return (a(-1, 0) + 2 * a(0, 0) + a(1, 0) + 2) / 4; }\n"
    "kernel u8 add(image u8 a, image u8 b) { return a(0, 0) + b(0, 0) / 8; }\n"
    "kernel u8 half(image u8 a) size(a.width / 2 + 1, a.height) { return a.at(2 * x, y); }\n"
    "pipeline fill(image u8 in, u32 n) -> image u8 {\n"
    "  image u8 m = darker(in);\n"
    "  loop (n) until unchanged(m) { m = grow(m, in); }\n"
    "  return m;\n"
    "}\n"
    "pipeline after(image u8 in, u32 n) -> image u8 {\n"
    "  image u8 m = darker(in);\n"
    "  loop (n) until unchanged(m) { m = grow(m, in); }\n"
    "  return add(m, in);\n"
    "}\n"
    "pipeline carry_in(image u8 in, u32 n) -> image u8 {\n"
    "  loop (n) { in = smooth(in); }\n"
    "  return in;\n"
    "}\n"
    "pipeline nested(image u8 in, u32 n) -> image u8 {\n"
    "  image u8 a = darker(in);\n"
    "  image u8 b = smooth(in);\n"
    "  loop (n) { loop (2) until unchanged(a) { a = grow(a, b); } b = add(b, a); a = darker(b); }\n"
    "  return add(a, b);\n"
    "}\n"
    "pipeline shrink(image u8 in, u32 n) -> image u8 {\n"
    "  loop (n) { in = half(in); }\n"
    "  return in;\n"
    "}\n";

static const char *device;
static int compared;

static pxl_image *random_image(pxl_context *ctx, int w, int h, int c) {
  pxl_image *img = NULL;
  if (pxl_image_create(ctx, w, h, PXL_U8, c, &img)) return NULL;
  for (int y = 0; y < h; y++)
    for (int i = 0; i < w * c; i++) ((uint8_t *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img))[i] =
        (uint8_t)random_u64();
  return img;
}

static int same(pxl_image *a, pxl_image *b) {
  int w = pxl_image_width(a), h = pxl_image_height(a), c = pxl_image_channels(a);
  if (!b || pxl_image_width(b) != w || pxl_image_height(b) != h || pxl_image_channels(b) != c) return 0;
  for (int y = 0; y < h; y++)
    if (memcmp((char *)pxl_image_data(a) + (size_t)y * pxl_image_pitch(a),
               (char *)pxl_image_data(b) + (size_t)y * pxl_image_pitch(b), (size_t)w * (size_t)c))
      return 0;
  return 1;
}

/* Runs entry(in, n) into out (bound when given): status; the result in *res. */
static int run(pxl_context *ctx, pxl_program *prog, const char *entry, pxl_image *in, int n, pxl_image *out,
               pxl_image **res) {
  pxl_args *args = pxl_args_new(ctx);
  pxl_args_image(args, "in", in);
  pxl_args_scalar(args, "n", n);
  if (out) pxl_args_output(args, out);
  pxl_run_result *r = NULL;
  int rc = pxl_run(ctx, prog, entry, args, &r);
  *res = rc ? NULL : pxl_result_take_image(r);
  pxl_result_free(r);
  pxl_args_free(args);
  return rc;
}

/* A host copy of img (device or host), or img's own copy. */
static pxl_image *host(pxl_context *ctx, pxl_image *img) {
  pxl_image *h = NULL;
  if (img) pxl_image_to_host(ctx, img, &h);
  return h;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: loops_test DEVICE CACHE_DIR\n");
    return 2;
  }
  device = argv[1];
  bool gpu = !strcmp(device, "cuda") || !strcmp(device, "opencl");
  if (gpu) {
    int g = gpu_device_check(device);
    if (g != GPU_OPEN) return g;
  }
  pxl_context *ctx = pxl_context_new(), *ref = pxl_context_new();
  pxl_set_cache_dir(ctx, argv[2]);
  pxl_program *prog = NULL, *rprog = NULL;
  if (pxl_set_device(ctx, device) || pxl_set_device(ref, "ref") ||
      pxl_program_from_string(ctx, "loops.pxl", SOURCE, &prog) ||
      pxl_program_from_string(ref, "loops.pxl", SOURCE, &rprog)) {
    printf("FAIL: %s %s\n", pxl_errmsg(ctx), pxl_errmsg(ref));
    return 1;
  }
  static const char *const entries[] = {"fill", "after", "carry_in", "nested"};
  /* 12: on GPUs a loop that short runs untested (loops.c), and CUDA records its runs */
  static const int counts[] = {0, 1, 7, 12, 200};
  static const int sizes[][2] = {{1, 1}, {13, 7}, {64, 48}};
  for (size_t e = 0; e < 4; e++)
    for (size_t k = 0; k < 5; k++)
      for (size_t s = 0; s < 3; s++)
        for (int c = 1; c <= 3; c += 2) {
          int w = sizes[s][0], h = sizes[s][1], n = counts[k];
          const char *entry = entries[e];
          pxl_image *in = random_image(ctx, w, h, c), *keep = host(ctx, in), *want = NULL, *got = NULL;
          int rc = run(ref, rprog, entry, in, n, NULL, &want);
          CHECK(!rc, "%s n=%d on ref: %s", entry, n, pxl_errmsg(ref));
          /* no output bound, then a bound host output */
          rc = run(ctx, prog, entry, in, n, NULL, &got);
          CHECK(!rc && same(want, got), "%s n=%d %dx%dx%d on %s: %s", entry, n, w, h, c, device,
                rc ? pxl_errmsg(ctx) : "differs from the interpreter");
          pxl_image_free(got);
          pxl_image *out = NULL;
          pxl_image_create(ctx, w, h, PXL_U8, c, &out);
          rc = run(ctx, prog, entry, in, n, out, &got);
          CHECK(!rc && same(want, out), "%s n=%d %dx%dx%d on %s into a bound output: %s", entry, n, w, h, c, device,
                rc ? pxl_errmsg(ctx) : "differs from the interpreter");
          CHECK(same(keep, in), "%s n=%d changed its input", entry, n);
          pxl_image_free(got);
          pxl_image_free(out);
          compared += 2;
          if (gpu && c == 1) { /* device images, a bound device output, three runs */
            pxl_image *din = NULL, *dout = NULL;
            pxl_image_to_device(ctx, in, &din);
            pxl_image_create_device(ctx, w, h, PXL_U8, 1, &dout);
            for (int r = 0; r < 3; r++) {
              rc = run(ctx, prog, entry, din, n, dout, &got);
              pxl_image *hout = host(ctx, dout), *hin = host(ctx, din);
              CHECK(!rc && same(want, hout) && same(keep, hin), "%s n=%d %dx%d on %s, device images, run %d: %s",
                    entry, n, w, h, device, r + 1, rc ? pxl_errmsg(ctx) : "differs from the interpreter");
              pxl_image_free(hout);
              pxl_image_free(hin);
              pxl_image_free(got);
              compared++;
            }
            pxl_image_free(din);
            pxl_image_free(dout);
          }
          pxl_image_free(in);
          pxl_image_free(keep);
          pxl_image_free(want);
        }
  /* a carried image may not change size */
  pxl_image *in = random_image(ctx, 20, 10, 1), *got = NULL;
  int rc = run(ctx, prog, "shrink", in, 2, NULL, &got);
  CHECK(rc == PXL_EARG && strstr(pxl_errmsg(ctx), "image 'in' is 20x10 before the loop of line") &&
            strstr(pxl_errmsg(ctx), "but 11x10 after an iteration"),
        "shrink: status %d: %s", rc, pxl_errmsg(ctx));
  pxl_image_free(got);
  rc = run(ctx, prog, "shrink", in, 0, NULL, &got);
  CHECK(!rc && same(in, got), "shrink with no iteration: %s", pxl_errmsg(ctx));
  pxl_image_free(got);
  pxl_image_free(in);
  pxl_program_free(prog);
  pxl_program_free(rprog);
  pxl_context_free(ctx);
  pxl_context_free(ref);
  printf("%s on %s: %d results compared\n", failed ? "loops_test: FAILED" : "loops_test: passed", device, compared);
  return failed != 0;
}
