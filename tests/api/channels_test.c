/*
 * channels_test.c - one-channel entries run per channel (src/runtime/channels.c) through
 * the public API: a kernel or pipeline whose images are one channel, run on 3- and
 * 4-channel images, must equal the same entry run on each channel's plane separately on
 * the same device, interleaved by hand. Kernels with one and two images and a scalar
 * (u8, u16, f32 elements), every border mode, odd sizes, a view at an odd offset as
 * input, a bound output; the edges pipeline (i16 intermediates). Then what is refused,
 * each PXL_EARG with a message naming the parameter, the expected and the given type:
 * channel counts that differ, another element type, reductions and histograms, a kernel
 * with a vector output, mixed one- and three-channel parameters, a wrong bound output,
 * 2-channel images (refused when created), device images.
 *
 * Usage: channels_test DEVICE EXAMPLES_DIR CACHE_DIR, DEVICE ref, cpu, opencl or cuda.
 * GPU devices skip (77) only when absent (tests/common/gpu_device.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/gpu_device.h"
#include "pxl/pxl.h"

static const char *device;
static int runs; /* per-channel runs compared */

static const char KERNELS[] =
    "kernel u8 blur3(image u8 in) {\n"
    "  int s = 0;\n"
    "  for (int dy = -1; dy <= 1; dy++)\n"
    "    for (int dx = -1; dx <= 1; dx++) s += in(dx, dy);\n"
    "  return (s + 4) / 9;\n"
    "}\n"
    "kernel u8 blend(image u8 a, image u8 b, u8 w) { return (a(0, 0) * w + b(1, -1) * (255 - w) + 127) / 255; }\n"
    "kernel u16 grad16(image u16 in) { return abs(in(1, 0) - in(-1, 0)) + in(0, 2) / 2; }\n"
    "kernel f32 scale(image f32 in, f32 k) { return in(-1, 0) * k + in(0, 1); }\n"
    "kernel u8 shrink(image u8 in) size(in.width / 2 + 1, in.height) { return in.at(2 * x, y); }\n"
    "kernel u8x3 tint(image u8 in) { return u8x3(in(0, 0)); }\n"
    "kernel u8 mixed(image u8 a, image u8x3 b) { return a(0, 0) / 2 + b(0, 0).g / 2; }\n"
    "reduce u64 total(image u8 in) = sum(in(0, 0));\n"
    "histogram[256] hist(image u8 in) { bin(in(0, 0)); }\n";

/* A w x h image of c channels of t, random elements (floats: -100..100 in steps). */
static pxl_image *random_image(pxl_context *ctx, int w, int h, pxl_type t, int c) {
  pxl_image *img = NULL;
  if (pxl_image_create(ctx, w, h, t, c, &img)) return NULL;
  for (int y = 0; y < h; y++) {
    char *row = (char *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img);
    for (int i = 0; i < w * c; i++) {
      uint64_t r = random_u64();
      if (t == PXL_U8) ((uint8_t *)row)[i] = (uint8_t)r;
      else if (t == PXL_U16) ((uint16_t *)row)[i] = (uint16_t)r;
      else ((float *)row)[i] = (float)((int)(r % 2001) - 1000) / 10.0f;
    }
  }
  return img;
}

static size_t elem_size(pxl_type t) { return t == PXL_U8 ? 1 : t == PXL_U16 ? 2 : 4; }

/* Channel k of img as a new one-channel image. */
static pxl_image *plane(pxl_context *ctx, pxl_image *img, int k) {
  int w = pxl_image_width(img), h = pxl_image_height(img), c = pxl_image_channels(img);
  pxl_type t = pxl_image_type(img);
  size_t sz = elem_size(t);
  pxl_image *p = NULL;
  if (pxl_image_create(ctx, w, h, t, 1, &p)) return NULL;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      memcpy((char *)pxl_image_data(p) + (size_t)y * pxl_image_pitch(p) + (size_t)x * sz,
             (char *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img) + ((size_t)x * (size_t)c + (size_t)k) * sz,
             sz);
  return p;
}

/* Whether channel k of img equals the one-channel image p. */
static int channel_equals(pxl_image *img, int k, pxl_image *p) {
  int w = pxl_image_width(img), h = pxl_image_height(img), c = pxl_image_channels(img);
  if (pxl_image_width(p) != w || pxl_image_height(p) != h || pxl_image_type(p) != pxl_image_type(img)) return 0;
  size_t sz = elem_size(pxl_image_type(img));
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      if (memcmp((char *)pxl_image_data(p) + (size_t)y * pxl_image_pitch(p) + (size_t)x * sz,
                 (char *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img) + ((size_t)x * (size_t)c + (size_t)k) * sz,
                 sz))
        return 0;
  return 1;
}

typedef struct {
  const char *name[2]; /* image parameters */
  pxl_image *img[2];
  int nimg;
  const char *scalar; /* name=value text, or NULL */
  const char *border; /* for the first image, or NULL */
  pxl_image *output;  /* bound output, or NULL */
} Call;

/* Runs entry with call's arguments: status; the image in *out (caller frees). */
static int run(pxl_context *ctx, pxl_program *prog, const char *entry, const Call *call, pxl_image **out) {
  pxl_args *args = pxl_args_new(ctx);
  for (int i = 0; i < call->nimg; i++) pxl_args_image(args, call->name[i], call->img[i]);
  if (call->scalar) {
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(call->scalar, "="), call->scalar);
    pxl_args_scalar_text(args, name, strchr(call->scalar, '=') + 1);
  }
  if (call->border) pxl_args_border(args, call->name[0], call->border);
  if (call->output) pxl_args_output(args, call->output);
  pxl_run_result *res = NULL;
  int rc = pxl_run(ctx, prog, entry, args, &res);
  pxl_args_free(args);
  if (out) *out = NULL;
  if (!rc && out) *out = call->output ? NULL : pxl_result_take_image(res);
  pxl_result_free(res);
  return rc;
}

/* Runs entry per channel on call's images and compares it with runs on each plane. */
static void per_channel(pxl_context *ctx, pxl_program *prog, const char *entry, Call call, const char *what) {
  pxl_image *got = NULL;
  int rc = run(ctx, prog, entry, &call, &got);
  CHECK(rc == PXL_OK, "%s %s on %s: %s", entry, what, device, pxl_errmsg(ctx));
  if (rc) return;
  if (call.output) got = call.output;
  int c = pxl_image_channels(call.img[0]);
  CHECK(pxl_image_channels(got) == c, "%s %s: %d channels, not %d", entry, what, pxl_image_channels(got), c);
  for (int k = 0; k < c; k++) {
    Call pc = call;
    pc.output = NULL;
    for (int i = 0; i < call.nimg; i++) pc.img[i] = plane(ctx, call.img[i], k);
    pxl_image *want = NULL;
    rc = run(ctx, prog, entry, &pc, &want);
    CHECK(rc == PXL_OK, "%s %s plane %d: %s", entry, what, k, pxl_errmsg(ctx));
    if (!rc) CHECK(channel_equals(got, k, want), "%s %s on %s: channel %d differs from the plane's run", entry, what,
                   device, k);
    pxl_image_free(want);
    for (int i = 0; i < call.nimg; i++) pxl_image_free(pc.img[i]);
  }
  runs++;
  if (got != call.output) pxl_image_free(got);
}

/* A refused run: PXL_EARG whose message holds every string of `needles` (NULL-ended). */
static void refused(pxl_context *ctx, pxl_program *prog, const char *entry, Call call, const char *const *needles) {
  int rc = run(ctx, prog, entry, &call, NULL);
  CHECK(rc == PXL_EARG, "%s: %s, not PXL_EARG (%s)", entry, pxl_status_name(rc), pxl_errmsg(ctx));
  for (int i = 0; needles[i]; i++)
    CHECK(strstr(pxl_errmsg(ctx), needles[i]), "%s: message '%s' lacks '%s'", entry, pxl_errmsg(ctx), needles[i]);
}

static void kernels(pxl_context *ctx, pxl_program *prog) {
  static const char *const modes[] = {"clamp", "mirror", "mirror101", "wrap", "constant(7)", "none"};
  static const int sizes[][2] = {{37, 23}, {7, 5}, {1, 1}, {64, 3}};
  for (int c = 3; c <= 4; c++)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      int w = sizes[s][0], h = sizes[s][1];
      char what[96];
      pxl_image *a = random_image(ctx, w, h, PXL_U8, c), *b = random_image(ctx, w, h, PXL_U8, c);
      for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        snprintf(what, sizeof what, "%dx%dx%d %s", w, h, c, modes[m]);
        per_channel(ctx, prog, "blur3", (Call){{"in"}, {a}, 1, NULL, modes[m], NULL}, what);
        per_channel(ctx, prog, "blend", (Call){{"a", "b"}, {a, b}, 2, "w=77", modes[m], NULL}, what);
      }
      snprintf(what, sizeof what, "%dx%dx%d", w, h, c);
      per_channel(ctx, prog, "shrink", (Call){{"in"}, {a}, 1, NULL, NULL, NULL}, what);
      pxl_image *u = random_image(ctx, w, h, PXL_U16, c), *f = random_image(ctx, w, h, PXL_F32, c);
      per_channel(ctx, prog, "grad16", (Call){{"in"}, {u}, 1, NULL, "mirror", NULL}, what);
      per_channel(ctx, prog, "scale", (Call){{"in"}, {f}, 1, "k=-1.5", "wrap", NULL}, what);
      pxl_image_free(u);
      pxl_image_free(f);
      pxl_image_free(a);
      pxl_image_free(b);
    }
  /* a view at an odd offset (its pitch is the parent's) and a bound output */
  pxl_image *big = random_image(ctx, 41, 29, PXL_U8, 3), *view = NULL, *out = NULL;
  CHECK(pxl_image_view(ctx, big, 3, 5, 31, 17, &view) == PXL_OK, "view: %s", pxl_errmsg(ctx));
  pxl_image_create(ctx, 31, 17, PXL_U8, 3, &out);
  per_channel(ctx, prog, "blur3", (Call){{"in"}, {view}, 1, NULL, "mirror101", out}, "view into a bound output");
  pxl_image_free(out);
  /* a bound output of the wrong shape or channel count */
  static const int bad_out[][3] = {{31, 17, 1}, {31, 17, 4}, {30, 17, 3}};
  for (int i = 0; i < 3; i++) {
    pxl_image_create(ctx, bad_out[i][0], bad_out[i][1], PXL_U8, bad_out[i][2], &out);
    refused(ctx, prog, "blur3", (Call){{"in"}, {view}, 1, NULL, NULL, out},
            (const char *const[]){"output image of blur3", "31x17 u8 with 3 channels", NULL});
    pxl_image_free(out);
  }
  pxl_image_free(view);
  pxl_image_free(big);
}

static void pipeline(pxl_context *ctx, const char *examples) {
  char path[4096];
  snprintf(path, sizeof path, "%s/edges.pxl", examples);
  pxl_program *prog = NULL;
  CHECK(pxl_program_from_file(ctx, path, &prog) == PXL_OK, "%s", pxl_errmsg(ctx));
  for (int c = 3; c <= 4; c++) {
    pxl_image *a = random_image(ctx, 45, 31, PXL_U8, c);
    char what[32];
    snprintf(what, sizeof what, "45x31x%d", c);
    per_channel(ctx, prog, "edges", (Call){{"in"}, {a}, 1, "t=40", NULL, NULL}, what);
    per_channel(ctx, prog, "gauss3", (Call){{"in"}, {a}, 1, NULL, "wrap", NULL}, what);
    pxl_image_free(a);
  }
  pxl_program_free(prog);
}

static void refusals(pxl_context *ctx, pxl_program *prog) {
  pxl_image *rgb = random_image(ctx, 9, 7, PXL_U8, 3), *rgba = random_image(ctx, 9, 7, PXL_U8, 4);
  pxl_image *gray = random_image(ctx, 9, 7, PXL_U8, 1), *rgb16 = random_image(ctx, 9, 7, PXL_U16, 3);
  refused(ctx, prog, "blend", (Call){{"a", "b"}, {rgb, rgba}, 2, "w=1", NULL, NULL},
          (const char *const[]){"parameter 'b'", "u8x4 (4 channels)", "'a' is u8x3 (3 channels)", NULL});
  refused(ctx, prog, "blend", (Call){{"a", "b"}, {rgb, gray}, 2, "w=1", NULL, NULL},
          (const char *const[]){"parameter 'b'", "u8 (1 channel)", "u8x3 (3 channels)", NULL});
  refused(ctx, prog, "blend", (Call){{"a", "b"}, {gray, rgb}, 2, "w=1", NULL, NULL},
          (const char *const[]){"parameter 'a'", "u8 (1 channel)", "'b' is u8x3 (3 channels)", NULL});
  refused(ctx, prog, "blur3", (Call){{"in"}, {rgb16}, 1, NULL, NULL, NULL},
          (const char *const[]){"parameter 'in'", "must be u8 (1 channel)", "got u16x3 (3 channels)", NULL});
  refused(ctx, prog, "total", (Call){{"in"}, {rgb}, 1, NULL, NULL, NULL},
          (const char *const[]){"parameter 'in'", "must be u8 (1 channel)", "got u8x3", "reduction", NULL});
  refused(ctx, prog, "hist", (Call){{"in"}, {rgba}, 1, NULL, NULL, NULL},
          (const char *const[]){"parameter 'in'", "must be u8 (1 channel)", "got u8x4", "histogram", NULL});
  refused(ctx, prog, "tint", (Call){{"in"}, {rgb}, 1, NULL, NULL, NULL},
          (const char *const[]){"parameter 'in'", "must be u8 (1 channel)", "makes u8x3", NULL});
  refused(ctx, prog, "mixed", (Call){{"a", "b"}, {rgb, rgb}, 2, NULL, NULL, NULL},
          (const char *const[]){"parameter 'a'", "must be u8 (1 channel)", "'b' is u8x3", NULL});
  pxl_image *two = NULL;
  CHECK(pxl_image_create(ctx, 9, 7, PXL_U8, 2, &two) == PXL_EARG, "a 2-channel image was created");
  pxl_image_free(two);
  pxl_image_free(rgb);
  pxl_image_free(rgba);
  pxl_image_free(gray);
  pxl_image_free(rgb16);
}

/* Device images are refused, naming the parameter (no split on the device). */
static void device_images(pxl_context *ctx, pxl_program *prog) {
  pxl_image *rgb = random_image(ctx, 9, 7, PXL_U8, 3), *d = NULL, *dout = NULL;
  int rc = pxl_image_to_device(ctx, rgb, &d);
  CHECK(rc == PXL_OK, "device copy on %s: %s", device, pxl_errmsg(ctx));
  if (!rc) {
    refused(ctx, prog, "blur3", (Call){{"in"}, {d}, 1, NULL, NULL, NULL},
            (const char *const[]){"parameter 'in'", "device memory", "pxl_image_to_host", NULL});
    CHECK(pxl_image_create_device(ctx, 9, 7, PXL_U8, 3, &dout) == PXL_OK, "%s", pxl_errmsg(ctx));
    refused(ctx, prog, "blur3", (Call){{"in"}, {rgb}, 1, NULL, NULL, dout},
            (const char *const[]){"output image", "device memory", NULL});
  }
  pxl_image_free(dout);
  pxl_image_free(d);
  pxl_image_free(rgb);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: channels_test DEVICE EXAMPLES_DIR CACHE_DIR\n");
    return 2;
  }
  device = argv[1];
  bool gpu = !strcmp(device, "cuda") || !strcmp(device, "opencl");
  if (gpu) {
    int g = gpu_device_check(device);
    if (g != GPU_OPEN) return g;
  }
  pxl_context *ctx = pxl_context_new();
  pxl_set_cache_dir(ctx, argv[3]);
  if (pxl_set_device(ctx, device)) {
    printf("FAIL: device '%s': %s\n", device, pxl_errmsg(ctx));
    return 1;
  }
  pxl_program *prog = NULL;
  if (pxl_program_from_string(ctx, "channels.pxl", KERNELS, &prog)) {
    printf("FAIL: %s\n", pxl_errmsg(ctx));
    return 1;
  }
  kernels(ctx, prog);
  pipeline(ctx, argv[2]);
  refusals(ctx, prog);
  if (gpu) device_images(ctx, prog);
  pxl_program_free(prog);
  pxl_context_free(ctx);
  printf("%s on %s: %d per-channel runs compared\n", failed ? "channels_test: FAILED" : "channels_test: passed",
         device, runs);
  return failed != 0;
}
