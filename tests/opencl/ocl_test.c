/*
 * ocl_test.c - the OpenCL runtime without kernels: device selection, device names, and
 * device images (create, to device, device-to-device copies into views, to host).
 *
 * Round trips of random u8 gray, u16 RGB and f32 RGBA images (float bit patterns
 * included, NaNs too) of awkward sizes must be bit-exact: whole images, copies into a
 * view one pixel to the right (column 0 must stay zero) and one pixel right and down,
 * host-to-view copies and an overlapping copy within one buffer (memmove semantics).
 * Malformed device names are PXL_EARG, missing platforms and devices PXL_EDEVICE, each
 * with a message. Runs on any OpenCL device (PoCL in CI); prints "skipped: no OpenCL
 * device (REASON)" and exits 77 only when the backend reports the device absent
 * (tests/common/gpu_device.h); any other failure to open it fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/gpu_device.h"
#include "pxl/pxl.h"

static unsigned char random_byte(void) { return (unsigned char)(random_u64() >> 24); }

/* Bytes of a row of the test's images (u8, u16 or f32). */
static size_t row_bytes(const pxl_image *img) {
  pxl_type t = pxl_image_type(img);
  return (size_t)pxl_image_width(img) * (size_t)pxl_image_channels(img) * (t == PXL_U8 ? 1 : t == PXL_U16 ? 2 : 4);
}

/* Whether host image a equals the columns [x0, x0 + width of a) of host image b from row
 * y0, byte for byte. */
static int same_pixels(pxl_image *a, pxl_image *b, int x0, int y0) {
  size_t row = row_bytes(a), px = row / (size_t)pxl_image_width(a);
  for (int y = 0; y < pxl_image_height(a); y++) {
    const char *pa = (char *)pxl_image_data(a) + (size_t)y * pxl_image_pitch(a);
    const char *pb = (char *)pxl_image_data(b) + (size_t)(y + y0) * pxl_image_pitch(b) + (size_t)x0 * px;
    if (memcmp(pa, pb, row)) return 0;
  }
  return 1;
}

/* Whether the first `cols` pixels of every row of host image b (from row y0) are zero,
 * and rows [0, y0) are. */
static int zero_margin(pxl_image *b, int cols, int y0) {
  size_t px = row_bytes(b) / (size_t)pxl_image_width(b);
  for (int y = 0; y < pxl_image_height(b); y++) {
    const unsigned char *p = (unsigned char *)pxl_image_data(b) + (size_t)y * pxl_image_pitch(b);
    size_t n = y < y0 ? row_bytes(b) : (size_t)cols * px;
    for (size_t i = 0; i < n; i++)
      if (p[i]) return 0;
  }
  return 1;
}

/* to_host(img) compared with the host image `want` at (x0, y0), or -1 on failure. */
static int check_device(pxl_context *ctx, const pxl_image *img, pxl_image *want, int x0, int y0, int cols, int rows,
                        const char *what) {
  pxl_image *h = NULL;
  int st = pxl_image_to_host(ctx, img, &h);
  CHECK(!st, "%s: to_host: %s", what, pxl_errmsg(ctx));
  if (st) return -1;
  CHECK(!pxl_image_on_device(h), "%s: to_host gave a device image", what);
  CHECK(same_pixels(want, h, x0, y0), "%s: pixels differ", what);
  if (cols || rows) CHECK(zero_margin(h, cols, rows), "%s: the margin of the zero-filled image is not zero", what);
  pxl_image_free(h);
  return 0;
}

static void round_trips(pxl_context *ctx, int w, int h, pxl_type t, int channels) {
  char what[96];
  snprintf(what, sizeof what, "%dx%d %s x%d", w, h, pxl_type_name(t), channels);
  pxl_image *host = NULL, *d1 = NULL, *d2 = NULL, *v2 = NULL, *d3 = NULL, *v3 = NULL, *a = NULL, *b = NULL;
  int st = pxl_image_create(ctx, w, h, t, channels, &host);
  CHECK(!st, "%s: create: %s", what, pxl_errmsg(ctx));
  if (st) return;
  for (int y = 0; y < h; y++) {
    unsigned char *p = (unsigned char *)pxl_image_data(host) + (size_t)y * pxl_image_pitch(host);
    for (size_t i = 0; i < row_bytes(host); i++) p[i] = random_byte();
  }
  /* host -> device -> host */
  st = pxl_image_to_device(ctx, host, &d1);
  CHECK(!st && pxl_image_on_device(d1), "%s: to_device: %s", what, pxl_errmsg(ctx));
  if (!st) check_device(ctx, d1, host, 0, 0, 0, 0, what);
  /* device -> a view at x = 1 of a zero-filled device image */
  st = pxl_image_create_device(ctx, w + 1, h, t, channels, &d2);
  CHECK(!st, "%s: create_device: %s", what, pxl_errmsg(ctx));
  if (!st) st = pxl_image_view(ctx, d2, 1, 0, w, h, &v2);
  CHECK(!st && pxl_image_on_device(v2), "%s: view: %s", what, pxl_errmsg(ctx));
  if (!st && d1) {
    st = pxl_image_copy(ctx, d1, v2);
    CHECK(!st, "%s: device-to-device copy into a view: %s", what, pxl_errmsg(ctx));
    if (!st) check_device(ctx, v2, host, 0, 0, 0, 0, what);
    if (!st) check_device(ctx, d2, host, 1, 0, 1, 0, what);
  }
  /* host -> a view at (1, 1); then that view -> a view at (0, 0) of the same buffer,
   * which overlaps it */
  st = pxl_image_create_device(ctx, w + 1, h + 1, t, channels, &d3);
  if (!st) st = pxl_image_view(ctx, d3, 1, 1, w, h, &v3);
  CHECK(!st, "%s: create_device/view: %s", what, pxl_errmsg(ctx));
  if (!st) {
    st = pxl_image_copy(ctx, host, v3);
    CHECK(!st, "%s: host-to-view copy: %s", what, pxl_errmsg(ctx));
    if (!st) check_device(ctx, d3, host, 1, 1, 1, 1, what);
    if (!st) st = pxl_image_view(ctx, d3, 0, 0, w, h, &a);
    if (!st) st = pxl_image_copy(ctx, v3, a);
    CHECK(!st, "%s: overlapping copy: %s", what, pxl_errmsg(ctx));
    if (!st) check_device(ctx, a, host, 0, 0, 0, 0, what);
    /* and a plain device-to-host copy into a host view */
    pxl_image *big = NULL;
    if (!st) st = pxl_image_create(ctx, w + 2, h, t, channels, &big);
    if (!st) st = pxl_image_view(ctx, big, 2, 0, w, h, &b);
    if (!st) st = pxl_image_copy(ctx, d1, b);
    CHECK(!st && same_pixels(host, big, 2, 0), "%s: device-to-host-view copy: %s", what, pxl_errmsg(ctx));
    pxl_image_free(b);
    pxl_image_free(big);
  }
  CHECK(!pxl_sync(ctx), "%s: sync: %s", what, pxl_errmsg(ctx));
  pxl_image_free(a);
  pxl_image_free(v3);
  pxl_image_free(d3);
  pxl_image_free(v2);
  pxl_image_free(d2);
  pxl_image_free(d1);
  pxl_image_free(host);
}

/* A malformed name is PXL_EARG at once; a well-formed one for a missing device is
 * PXL_EDEVICE at first use. Either way with a message naming it. */
static void bad_devices(void) {
  static const char *const malformed[] = {"opencl:0", "opencl:x:0", "opencl:0:x", "opencl:",   "opencl:-1:0",
                                          "opencl:0:0:0", "openclx", "opencl:0:",  "opencl: 0:0", "opencl:+0:0"};
  for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++) {
    pxl_context *ctx = pxl_context_new();
    int st = pxl_set_device(ctx, malformed[i]);
    CHECK(st == PXL_EARG && strstr(pxl_errmsg(ctx), malformed[i]), "'%s': want PXL_EARG naming it, got %s: %s",
          malformed[i], pxl_status_name(st), pxl_errmsg(ctx));
    pxl_context_free(ctx);
  }
  static const char *const missing[] = {"opencl:99:0", "opencl:0:99"};
  for (size_t i = 0; i < sizeof missing / sizeof *missing; i++) {
    pxl_context *ctx = pxl_context_new();
    int st = pxl_set_device(ctx, missing[i]);
    CHECK(!st, "'%s': set_device: %s", missing[i], pxl_errmsg(ctx));
    pxl_image *img = NULL;
    st = pxl_image_create_device(ctx, 4, 4, PXL_U8, 1, &img);
    CHECK(st == PXL_EDEVICE && strstr(pxl_errmsg(ctx), "99") && !img, "'%s': want PXL_EDEVICE naming 99, got %s: %s",
          missing[i], pxl_status_name(st), pxl_errmsg(ctx));
    CHECK(strstr(pxl_device_name(ctx), "unavailable"), "'%s': device name %s", missing[i], pxl_device_name(ctx));
    pxl_context_free(ctx);
  }
}

int main(void) {
  int st = gpu_device_check("opencl"); /* skipped only where the device is absent */
  if (st) return st;
  pxl_context *ctx = pxl_context_new();
  if (!ctx || pxl_set_device(ctx, "opencl")) {
    printf("FAIL: set_device(\"opencl\"): %s\n", pxl_errmsg(ctx));
    return 1;
  }
  pxl_image *probe = NULL;
  st = pxl_image_create_device(ctx, 1, 1, PXL_U8, 1, &probe);
  CHECK(!st, "create_device (%s): %s", pxl_status_name(st), pxl_errmsg(ctx));
  pxl_image_free(probe);
  const char *name = pxl_device_name(ctx);
  printf("device: %s\n", name);
  CHECK(!strncmp(name, "opencl:", 7) && strchr(name, '('), "device name '%s'", name);

  static const int sizes[][2] = {{1, 1}, {17, 3}, {257, 129}};
  static const struct {
    pxl_type t;
    int channels;
  } kinds[] = {{PXL_U8, 1}, {PXL_U16, 3}, {PXL_F32, 1}, {PXL_F32, 4}};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
      round_trips(ctx, sizes[s][0], sizes[s][1], kinds[k].t, kinds[k].channels);

  /* the device is named by its numbers: opencl:P:D selects the same one */
  char again[64];
  int p = -1, d = -1;
  if (sscanf(name, "opencl:%d:%d", &p, &d) == 2) {
    snprintf(again, sizeof again, "opencl:%d:%d", p, d);
    pxl_context *c2 = pxl_context_new();
    CHECK(!pxl_set_device(c2, again) && !strcmp(pxl_device_name(c2), name), "%s names %s", again,
          pxl_device_name(c2));
    pxl_context_free(c2);
  }
  pxl_context_free(ctx);
  bad_devices();
  printf("%s\n", failed ? "FAILED" : "ok");
  return failed ? 1 : 0;
}
