/*
 * queue_test.c - runs in flight (pxl_queue) through the public API, on one device.
 *
 * Every result popped must equal pxl_run's of the same arguments on the same device (an
 * independent run, in turn), in the order of the pushes, for depths 1, 2, 3 and the
 * device's choice: frames of a tiler (the downscaler's horizontal filter, an output of
 * another size), a pipeline bound to pinned outputs, a reduction per frame, a kernel
 * with a scalar that changes per frame; on pinned images (pxl_image_create_pinned: on
 * CUDA page-locked) and plain ones. A run that fails in the middle reports its own
 * message at its pop and the runs after it still come back; a full queue, an empty pop,
 * device images, a bad depth and an unknown entry are refused; a queue freed with runs
 * in flight waits for them (the test's images are freed after).
 *
 * Usage: queue_test DEVICE CACHE_DIR, DEVICE ref, cpu, opencl or cuda. GPU devices skip
 * (77) only when absent (tests/common/gpu_device.h).
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
    "const int H0[3] = {0, 2, 5};\n"
    "kernel u8 down_h(image u8 in) tile(3, 1) paving(8, 1) {\n"
    "  int s[3];\n"
    "  for (int k = 0; k < 3; k++) { s[k] = 0; for (int i = 0; i < 6; i++) s[k] += in(H0[k] + i, 0); }\n"
    "  return ((s[0] + 3) / 6, (s[1] + 3) / 6, (s[2] + 3) / 6);\n"
    "}\n"
    "kernel u8 box3(image u8 in) {\n"
    "  int s = 0;\n"
    "  for (int dy = -1; dy <= 1; dy++) for (int dx = -1; dx <= 1; dx++) s += in(dx, dy);\n"
    "  return (s + 4) / 9;\n"
    "}\n"
    "kernel u8 thresh(image u8 in, int t) { return in(0, 0) > t ? 255 : 0; }\n"
    "pipeline edges(image u8 in, int t) -> image u8 { return thresh(box3(in : mirror101), t); }\n"
    "reduce u64 total(image u8 in) = sum(in(0, 0));\n"
    "kernel u8 picky(image u8 in, int t) { return 300 / (t - 7) + in(0, 0); }\n"; /* a scalar per frame */

enum { W = 83, H = 37, FRAMES = 11 };

static pxl_image *frame_image(pxl_context *ctx, bool pinned, int w, int h) {
  pxl_image *img = NULL;
  int st = pinned ? pxl_image_create_pinned(ctx, w, h, PXL_U8, 1, &img) : pxl_image_create(ctx, w, h, PXL_U8, 1, &img);
  if (st) {
    printf("FAIL: an image: %s\n", pxl_errmsg(ctx));
    exit(1);
  }
  for (int y = 0; y < h; y++) {
    uint8_t *row = (uint8_t *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img);
    for (int x = 0; x < w; x++) row[x] = (uint8_t)random_u64();
  }
  return img;
}

static bool same_image(pxl_image *a, pxl_image *b) {
  if (!a || !b || pxl_image_width(a) != pxl_image_width(b) || pxl_image_height(a) != pxl_image_height(b)) return false;
  for (int y = 0; y < pxl_image_height(a); y++)
    if (memcmp((uint8_t *)pxl_image_data(a) + (size_t)y * pxl_image_pitch(a),
               (uint8_t *)pxl_image_data(b) + (size_t)y * pxl_image_pitch(b), (size_t)pxl_image_width(a)))
      return false;
  return true;
}

static pxl_args *frame_args(pxl_context *ctx, pxl_image *in, int t, pxl_image *out) {
  pxl_args *a = pxl_args_new(ctx);
  CHECK(a && !pxl_args_image(a, "in", in), "binding in: %s", pxl_errmsg(ctx));
  if (t >= 0) CHECK(!pxl_args_scalar(a, "t", t), "binding t: %s", pxl_errmsg(ctx));
  if (out) CHECK(!pxl_args_output(a, out), "binding the output: %s", pxl_errmsg(ctx));
  return a;
}

/* FRAMES runs of `entry` through a queue of `depth`, each compared with pxl_run's. */
static void frames(pxl_context *ctx, pxl_program *prog, const char *entry, int depth, bool pinned, bool scalar_t,
                   bool bind_out) {
  pxl_image *ins[FRAMES], *outs[FRAMES] = {0};
  pxl_run_result *want[FRAMES];
  for (int f = 0; f < FRAMES; f++) {
    ins[f] = frame_image(ctx, pinned, W + f % 2, H);
    pxl_args *a = frame_args(ctx, ins[f], scalar_t ? 40 + 17 * f : -1, NULL);
    CHECK(!pxl_run(ctx, prog, entry, a, &want[f]), "pxl_run %s: %s", entry, pxl_errmsg(ctx));
    pxl_args_free(a);
    if (bind_out) {
      const pxl_image *w = pxl_result_image(want[f]);
      outs[f] = frame_image(ctx, pinned, pxl_image_width(w), pxl_image_height(w));
    }
  }
  pxl_queue *q = NULL;
  if (pxl_queue_new(ctx, prog, entry, depth, &q)) {
    printf("FAIL: pxl_queue_new(%s, %d): %s\n", entry, depth, pxl_errmsg(ctx));
    failed++;
    return;
  }
  CHECK(pxl_queue_depth(q) >= 1 && pxl_queue_depth(q) <= 16 && (!depth || pxl_queue_depth(q) == depth),
        "depth %d for %d", pxl_queue_depth(q), depth);
  int pushed = 0, popped = 0;
  while (popped < FRAMES) {
    if (pushed < FRAMES && pxl_queue_pending(q) < pxl_queue_depth(q)) {
      CHECK(!pxl_queue_push(q, frame_args(ctx, ins[pushed], scalar_t ? 40 + 17 * pushed : -1, outs[pushed])),
            "push %d: %s", pushed, pxl_errmsg(ctx));
      pushed++;
      continue;
    }
    if (pushed < FRAMES) { /* full: one more is refused */
      CHECK(pxl_queue_push(q, frame_args(ctx, ins[pushed], scalar_t ? 1 : -1, NULL)) == PXL_EARG,
            "a push to a full queue");
    }
    pxl_run_result *res = NULL;
    int st = pxl_queue_pop(q, &res);
    CHECK(!st && res, "pop %d of %s (depth %d): %s", popped, entry, depth, pxl_errmsg(ctx));
    if (!st && res) {
      if (pxl_result_image(want[popped])) {
        CHECK(same_image(pxl_result_image(res), pxl_result_image(want[popped])),
              "%s frame %d (depth %d%s): not pxl_run's image", entry, popped, depth, pinned ? ", pinned" : "");
        if (bind_out) CHECK(pxl_result_image(res) == outs[popped], "the bound output is the result's image");
      } else {
        pxl_scalar_result a, b;
        CHECK(!pxl_result_scalar(res, &a) && !pxl_result_scalar(want[popped], &b) && a.ivalue == b.ivalue,
              "%s frame %d: not pxl_run's value", entry, popped);
      }
    }
    pxl_result_free(res);
    popped++;
  }
  pxl_run_result *none = NULL;
  CHECK(pxl_queue_pop(q, &none) == PXL_EARG && !none, "a pop with nothing pending");
  pxl_queue_free(q);
  for (int f = 0; f < FRAMES; f++) {
    pxl_result_free(want[f]);
    pxl_image_free(ins[f]);
    pxl_image_free(outs[f]);
  }
}

/* A run that fails in the middle (its image bound to a name box3 lacks, none to "in"),
 * then runs that succeed. */
static void failure(pxl_context *ctx, pxl_program *prog) {
  pxl_queue *q = NULL;
  if (pxl_queue_new(ctx, prog, "box3", 2, &q)) {
    printf("FAIL: pxl_queue_new: %s\n", pxl_errmsg(ctx));
    failed++;
    return;
  }
  pxl_image *img = frame_image(ctx, false, 9, 9);
  pxl_args *bad = pxl_args_new(ctx);
  pxl_args_image(bad, "nosuch", img);
  CHECK(!pxl_queue_push(q, frame_args(ctx, img, -1, NULL)), "push 0");
  CHECK(!pxl_queue_push(q, bad), "push 1 (fails when run)");
  pxl_run_result *res = NULL;
  CHECK(!pxl_queue_pop(q, &res) && res, "pop 0: %s", pxl_errmsg(ctx));
  pxl_result_free(res);
  CHECK(!pxl_queue_push(q, frame_args(ctx, img, -1, NULL)), "push 2");
  int st = pxl_queue_pop(q, &res);
  CHECK(st == PXL_EARG && !res && strstr(pxl_errmsg(ctx), "needs an image for parameter 'in'"), "pop 1: status %d, '%s'",
        st, pxl_errmsg(ctx));
  CHECK(!pxl_queue_pop(q, &res) && res, "pop 2 after a failure: %s", pxl_errmsg(ctx));
  pxl_result_free(res);
  /* freed with runs in flight: it waits for them */
  CHECK(!pxl_queue_push(q, frame_args(ctx, img, -1, NULL)), "push 3");
  CHECK(!pxl_queue_push(q, frame_args(ctx, img, -1, NULL)), "push 4");
  pxl_queue_free(q);
  pxl_image_free(img);
}

static void refusals(pxl_context *ctx, pxl_program *prog, bool gpu) {
  pxl_queue *q = NULL;
  CHECK(pxl_queue_new(ctx, prog, "box3", 17, &q) == PXL_EARG && !q, "depth 17");
  CHECK(pxl_queue_new(ctx, prog, "box3", -1, &q) == PXL_EARG && !q, "depth -1");
  CHECK(pxl_queue_new(ctx, prog, "nosuch", 1, &q) == PXL_ENOTFOUND && !q, "an unknown entry");
  CHECK(pxl_queue_new(ctx, NULL, "box3", 1, &q) == PXL_EARG && !q, "no program");
  CHECK(!pxl_queue_new(ctx, prog, "box3", 1, &q), "depth 1: %s", pxl_errmsg(ctx));
  CHECK(pxl_queue_push(q, NULL) == PXL_EARG, "no arguments");
  if (gpu) {
    pxl_image *dev = NULL;
    CHECK(!pxl_image_create_device(ctx, 8, 8, PXL_U8, 1, &dev), "a device image: %s", pxl_errmsg(ctx));
    CHECK(pxl_queue_push(q, frame_args(ctx, dev, -1, NULL)) == PXL_EARG && strstr(pxl_errmsg(ctx), "host images"),
          "a device image pushed: '%s'", pxl_errmsg(ctx));
    pxl_image_free(dev);
  }
  CHECK(pxl_queue_pending(q) == 0, "pending after refusals");
  pxl_queue_free(q);
  pxl_queue_free(NULL);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: queue_test DEVICE CACHE_DIR\n");
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
  if (pxl_program_from_string(ctx, "queue.pxl", SOURCE, &prog)) {
    printf("FAIL: %s\n", pxl_errmsg(ctx));
    return 1;
  }
  static const int depths[] = {1, 2, 3, 0};
  for (int d = 0; d < 4; d++) {
    frames(ctx, prog, "down_h", depths[d], d % 2 == 0, false, false);
    frames(ctx, prog, "edges", depths[d], true, true, d >= 2);
    frames(ctx, prog, "total", depths[d], d % 2 == 1, false, false);
  }
  frames(ctx, prog, "picky", 2, false, true, false);
  failure(ctx, prog);
  refusals(ctx, prog, gpu);
  pxl_program_free(prog);
  pxl_context_free(ctx);
  printf("queue_test on %s: %s\n", device, failed ? "FAILED" : "passed");
  return failed != 0;
}
