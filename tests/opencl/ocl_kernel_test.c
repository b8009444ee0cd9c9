/*
 * ocl_kernel_test.c - what the OpenCL backend does around kernels: devices without
 * optional extensions, build failures and the profile. Through the public API, on any
 * OpenCL device (PoCL in CI); each mode is one ctest test.
 *
 *   no-fp64 EXAMPLES  as on a device without cl_khr_fp64 (PXL_OPENCL_NO_FP64=1): blur3
 *                     (EXAMPLES/blur3.pxl), f32 -> u8/i32/u32/i64/u64 conversions of ties,
 *                     saturating values, NaNs, infinities and random bit patterns times an
 *                     f32 scalar, an f32 argmax and a counting histogram give exactly the
 *                     interpreter's results; an f64 kernel and a float-weighted histogram
 *                     are PXL_EDEVICE naming the stage and cl_khr_fp64. Without
 *                     cl_khr_int64_base_atomics (PXL_OPENCL_NO_INT64_ATOMICS=1) a
 *                     histogram is PXL_EDEVICE naming it and that extension.
 *   build-error       a build option that breaks the generated entry point
 *                     (-Dpxl_stage=1): PXL_EBACKEND, twice (nothing cached, no crash), with
 *                     a message naming the kernel, the compiler's error and the generated
 *                     line it points at, with its text; then one that breaks the code of
 *                     the kernel's line 2 (-Dv0=1): the message names that .pxl line.
 *   profile FILE      PXL_OPENCL_PROFILE=FILE: a line per kernel launch (name, global
 *                     size, device time) and per reduction read-back.
 *   borders DIR       images read only at (0, 0) that cover the output share one module
 *                     across border modes (runtime/instance.c: stage_borders): five
 *                     modes, one program binary in the fresh cache directory DIR, each
 *                     result the interpreter's; an image smaller than the output keeps
 *                     its mode (constant(200) and mirror read outside it), as the
 *                     interpreter says.
 *
 * Kernels build with -cl-opt-disable unless PXL_OPENCL_OPTIONS says otherwise (PoCL
 * compiles faster; the results must not change). Prints "skipped: no OpenCL device
 * (REASON)" and exits 77 only when the backend reports the device absent
 * (tests/common/gpu_device.h); any other failure to open it fails.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/gpu_device.h"
#include "pxl/pxl.h"

static uint32_t random_u32(void) { return (uint32_t)(random_u64() >> 16); }

enum { W = 61, H = 7 }; /* odd sizes: partial work-groups */

/* A context on "opencl", or NULL after printing the skip line (*skip set: the backend
 * reported the device absent when it was created) or a failure (counted: a device that
 * opens and then cannot hold an image is broken, not absent). */
static pxl_context *opencl_context(int *skip) {
  int st = gpu_device_check("opencl");
  if (st == GPU_SKIP) *skip = 1;
  if (st == GPU_BROKEN) failed++;
  if (st) return NULL;
  pxl_context *ctx = pxl_context_new();
  pxl_image *probe = NULL;
  st = ctx ? pxl_set_device(ctx, "opencl") : PXL_ENOMEM;
  if (!st) st = pxl_image_create_device(ctx, 1, 1, PXL_U8, 1, &probe);
  pxl_image_free(probe);
  if (!st) return ctx;
  printf("FAIL: opencl context (%s): %s\n", pxl_status_name(st), ctx ? pxl_errmsg(ctx) : "out of memory");
  failed++;
  pxl_context_free(ctx);
  return NULL;
}

static pxl_program *compile(pxl_context *ctx, const char *src) {
  pxl_program *prog = NULL;
  int st = pxl_program_from_string(ctx, "test.pxl", src, &prog);
  CHECK(!st, "compile: %s", pxl_errmsg(ctx));
  return st ? NULL : prog;
}

/* Runs entry of prog on ctx with image parameter `in` (and scalar `gain` when >= 0):
 * the status; the result in *res. */
static int run(pxl_context *ctx, pxl_program *prog, const char *entry, pxl_image *in, double gain,
               pxl_run_result **res) {
  pxl_args *args = pxl_args_new(ctx);
  int st = args ? pxl_args_image(args, "in", in) : PXL_ENOMEM;
  if (!st && gain >= 0) st = pxl_args_scalar(args, "gain", gain);
  *res = NULL;
  if (!st) st = pxl_run(ctx, prog, entry, args, res);
  pxl_args_free(args);
  return st;
}

/* Host images: whether a and b hold the same bytes. */
static int same_image(pxl_image *a, pxl_image *b) {
  if (!a || !b || pxl_image_width(a) != pxl_image_width(b) || pxl_image_height(a) != pxl_image_height(b) ||
      pxl_image_type(a) != pxl_image_type(b) || pxl_image_channels(a) != pxl_image_channels(b))
    return 0;
  pxl_type t = pxl_image_type(a);
  size_t row = (size_t)pxl_image_width(a) * (size_t)pxl_image_channels(a) *
               (t == PXL_U8 ? 1 : t == PXL_F64 ? 8 : t <= PXL_U16 ? 2 : 4);
  for (int y = 0; y < pxl_image_height(a); y++)
    if (memcmp((char *)pxl_image_data(a) + (size_t)y * pxl_image_pitch(a),
               (char *)pxl_image_data(b) + (size_t)y * pxl_image_pitch(b), row))
      return 0;
  return 1;
}

/* Runs entry on both contexts (the same source) and checks that the results are equal:
 * images byte for byte, values, positions and bins exactly. */
static void same_result(pxl_context *dev, pxl_program *pd, pxl_context *ref, pxl_program *pr, const char *entry,
                        pxl_image *in, double gain) {
  pxl_run_result *rd = NULL, *rr = NULL;
  int sd = run(dev, pd, entry, in, gain, &rd);
  CHECK(!sd, "%s (gain %g) on OpenCL: %s", entry, gain, pxl_errmsg(dev));
  int sr = run(ref, pr, entry, in, gain, &rr);
  CHECK(!sr, "%s (gain %g) on ref: %s", entry, gain, pxl_errmsg(ref));
  if (!sd && !sr) {
    pxl_result_kind k = pxl_result_kind_of(rr);
    if (k == PXL_RESULT_IMAGE) {
      CHECK(same_image(pxl_result_image(rd), pxl_result_image(rr)), "%s (gain %g): the images differ", entry, gain);
    } else if (k == PXL_RESULT_SCALAR) {
      pxl_scalar_result a, b;
      pxl_result_scalar(rd, &a);
      pxl_result_scalar(rr, &b);
      CHECK(a.value == b.value && a.x == b.x && a.y == b.y, "%s: %.9g at (%d, %d), want %.9g at (%d, %d)", entry,
            a.value, a.x, a.y, b.value, b.x, b.y);
    } else {
      int na = 0, nb = 0, fa, fb;
      const double *ba = pxl_result_bins(rd, &na, &fa), *bb = pxl_result_bins(rr, &nb, &fb);
      CHECK(na == nb && !memcmp(ba, bb, (size_t)na * sizeof *ba), "%s: the bins differ", entry);
    }
  }
  pxl_result_free(rd);
  pxl_result_free(rr);
}

/* PXL_EDEVICE for entry, with a message holding `stage` and `ext`. */
static void refused(pxl_context *ctx, pxl_program *prog, const char *entry, pxl_image *in, const char *stage,
                    const char *ext) {
  pxl_run_result *res = NULL;
  int st = run(ctx, prog, entry, in, -1, &res);
  const char *msg = pxl_errmsg(ctx);
  CHECK(st == PXL_EDEVICE && strstr(msg, stage) && strstr(msg, ext),
        "%s: want PXL_EDEVICE naming %s and %s, got %s: %s", entry, stage, ext, pxl_status_name(st), msg);
  pxl_result_free(res);
}

static pxl_image *image(pxl_context *ctx, pxl_type t) {
  pxl_image *img = NULL;
  if (pxl_image_create(ctx, W, H, t, 1, &img)) return NULL;
  for (int y = 0; y < H; y++) {
    char *row = (char *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img);
    for (int x = 0; x < W; x++)
      if (t == PXL_U8) row[x] = (char)random_u32();
      else ((float *)(void *)row)[x] = (float)((int)(random_u32() % 2000000) - 1000000) / 1000.0f;
  }
  return img;
}

/* Values where float -> integer conversions round (ties) or saturate, then random bits
 * (NaNs with payloads and huge values among them) and random values up to 3e9. */
static void fill_conversions(pxl_image *img) {
  static const float special[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 254.5f, 255.5f, 256.0f, -1.0f, -0.0f,
                                  0.49999997f, 8388609.0f, 2147483520.0f, 2147483648.0f, -2147483648.0f,
                                  -2147483904.0f, 4294967040.0f, 4294967296.0f, 3e9f, -3e9f, 1e19f,
                                  9223371487098961920.0f, 9223372036854775808.0f, -9223372036854775808.0f,
                                  18446742974197923840.0f, 18446744073709551616.0f, 1e30f, -1e30f, INFINITY,
                                  -INFINITY, NAN};
  size_t n = sizeof special / sizeof *special, i = 0;
  for (int y = 0; y < H; y++) {
    float *row = (float *)(void *)((char *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img));
    for (int x = 0; x < W; x++, i++) {
      uint32_t bits = random_u32();
      if (i < n) row[x] = special[i];
      else if (i % 2) memcpy(&row[x], &bits, sizeof bits);
      else row[x] = ((float)bits - 2147483648.0f) * 1.5f;
    }
  }
}

static const char no_fp64_src[] =
    "kernel i32x4 conv(image f32 in, f32 gain) {\n"
    "    f32 v = in(0, 0) * gain;\n"
    "    return i32x4(u8(v), i32(v), i32(u32(v) >> 1), i32(i64(v) >> 33) + i32(u64(v) >> 42));\n"
    "}\n"
    "reduce f32 top(image f32 in) = argmax(in(0, 0));\n"
    "histogram[16] h16(image u8 in) { bin(in(0, 0) / 16); }\n"
    "kernel f64 d(image f32 in) { return f64(in(0, 0)) * 0.1; }\n"
    "histogram[4] hw(image f32 in) { bin(0, in(0, 0)); }\n";

static int no_fp64(const char *examples) {
  setenv("PXL_OPENCL_NO_FP64", "1", 1);
  int skip = 0;
  pxl_context *dev = opencl_context(&skip), *ref = pxl_context_new();
  if (!dev) {
    pxl_context_free(ref);
    return skip ? 77 : 1;
  }
  CHECK(!pxl_set_device(ref, "ref"), "ref: %s", pxl_errmsg(ref));
  char path[4096];
  snprintf(path, sizeof path, "%s/blur3.pxl", examples);
  pxl_program *blur_d = NULL, *blur_r = NULL;
  CHECK(!pxl_program_from_file(dev, path, &blur_d) && !pxl_program_from_file(ref, path, &blur_r), "%s: %s", path,
        pxl_errmsg(dev));
  pxl_program *pd = compile(dev, no_fp64_src), *pr = compile(ref, no_fp64_src);
  pxl_image *u8 = image(ref, PXL_U8), *f32 = image(ref, PXL_F32), *conv = image(ref, PXL_F32);
  if (blur_d && blur_r && pd && pr && u8 && f32 && conv) {
    fill_conversions(conv);
    same_result(dev, blur_d, ref, blur_r, "blur3", u8, -1);
    same_result(dev, pd, ref, pr, "conv", conv, 1.0);
    same_result(dev, pd, ref, pr, "conv", conv, 0.1); /* not a float: the scalar rounds */
    same_result(dev, pd, ref, pr, "top", f32, -1);
    same_result(dev, pd, ref, pr, "h16", u8, -1);
    refused(dev, pd, "d", f32, "'d'", "cl_khr_fp64");
    refused(dev, pd, "hw", f32, "'hw'", "cl_khr_fp64");
  }
  pxl_program_free(blur_d);
  pxl_program_free(blur_r);
  pxl_program_free(pd);
  pxl_context_free(dev);
  unsetenv("PXL_OPENCL_NO_FP64");
  /* no 64-bit atomics: histograms are refused before anything is built */
  setenv("PXL_OPENCL_NO_INT64_ATOMICS", "1", 1);
  if ((dev = opencl_context(&skip))) {
    pxl_program *p = compile(dev, no_fp64_src);
    if (p && u8) refused(dev, p, "h16", u8, "'h16'", "cl_khr_int64_base_atomics");
    pxl_program_free(p);
    pxl_context_free(dev);
  }
  unsetenv("PXL_OPENCL_NO_INT64_ATOMICS");
  pxl_image_free(u8);
  pxl_image_free(f32);
  pxl_image_free(conv);
  pxl_program_free(pr);
  pxl_context_free(ref);
  return 0;
}

static int build_error(void) {
  setenv("PXL_OPENCL_OPTIONS", "-cl-opt-disable -Dpxl_stage=1", 1); /* "__kernel void 1(" */
  int skip = 0;
  pxl_context *dev = opencl_context(&skip);
  if (!dev) return skip ? 77 : 1;
  pxl_program *p = compile(dev, "kernel u8 inv(image u8 in) { return 255 - in(0, 0); }\n");
  pxl_image *u8 = image(dev, PXL_U8);
  for (int i = 0; i < 2 && p && u8; i++) {
    pxl_run_result *res = NULL;
    int st = run(dev, p, "inv", u8, -1, &res);
    const char *msg = pxl_errmsg(dev), *line = strstr(msg, "generated line ");
    if (!i) printf("%s\n", msg);
    CHECK(st == PXL_EBACKEND, "run %d: want PXL_EBACKEND, got %s: %s", i, pxl_status_name(st), msg);
    CHECK(strstr(msg, "kernel 'inv'") && strstr(msg, "rejected the generated code") && strstr(msg, "error"),
          "run %d: the message does not name the kernel and the compiler's error: %s", i, msg);
    const char *text = line ? strstr(line, "): ") : NULL;
    CHECK(text && !strncmp(text + 3, "__kernel void pxl_stage(", 24),
          "run %d: the message does not point at the generated entry line: %s", i, msg);
    pxl_result_free(res);
  }
  pxl_image_free(u8);
  pxl_program_free(p);
  pxl_context_free(dev);
  /* an error inside the kernel's own code: the message leads back to its .pxl line (the
   * local v is the generated v0; "int32_t 1 = ..." does not compile) */
  setenv("PXL_OPENCL_OPTIONS", "-cl-opt-disable -Dv0=1", 1);
  if (!(dev = opencl_context(&skip))) return skip ? 77 : 1;
  p = compile(dev, "kernel u8 inv2(image u8 in) {\n    int v = in(0, 0);\n    return 255 - v;\n}\n");
  u8 = image(dev, PXL_U8);
  if (p && u8) {
    pxl_run_result *res = NULL;
    int st = run(dev, p, "inv2", u8, -1, &res);
    const char *msg = pxl_errmsg(dev);
    printf("%s\n", msg);
    CHECK(st == PXL_EBACKEND && strstr(msg, "kernel 'inv2'"), "want PXL_EBACKEND naming inv2, got %s: %s",
          pxl_status_name(st), msg);
    CHECK(strstr(msg, "from line 2 of the .pxl source") && strstr(msg, "int32_t v0 = "),
          "the message does not lead to .pxl line 2 (int v = in(0, 0)) and its generated text: %s", msg);
    pxl_result_free(res);
  }
  pxl_image_free(u8);
  pxl_program_free(p);
  pxl_context_free(dev);
  return 0;
}

/* Whether the profile text has a line starting with `start` that holds `also` and a
 * numeric device time. */
static int has_line(const char *text, const char *start, const char *also) {
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    size_t n = strcspn(p, "\n");
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
    const char *t = strstr(line, "device_us=");
    if (!strncmp(line, start, strlen(start)) && strstr(line, also) && t && t[10] >= '0' && t[10] <= '9') return 1;
  }
  return 0;
}

static int profile(const char *file) {
  remove(file);
  setenv("PXL_OPENCL_PROFILE", file, 1);
  int skip = 0;
  pxl_context *dev = opencl_context(&skip);
  if (!dev) return skip ? 77 : 1;
  pxl_program *p = compile(dev, "kernel u8 inv(image u8 in) { return 255 - in(0, 0); }\n"
                                "reduce u8 mx(image u8 in) = max(in(0, 0));\n");
  pxl_image *u8 = image(dev, PXL_U8);
  pxl_run_result *res = NULL;
  if (p && u8) {
    CHECK(!run(dev, p, "inv", u8, -1, &res), "inv: %s", pxl_errmsg(dev));
    pxl_result_free(res);
    CHECK(!run(dev, p, "mx", u8, -1, &res), "mx: %s", pxl_errmsg(dev));
    pxl_result_free(res);
  }
  pxl_image_free(u8);
  pxl_program_free(p);
  pxl_context_free(dev); /* writes what is pending */
  unsetenv("PXL_OPENCL_PROFILE");
  FILE *f = fopen(file, "r");
  char text[8192] = "";
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  text[n] = 0;
  if (f) fclose(f);
  printf("%s", text);
  CHECK(!strncmp(text, "# pxl OpenCL profile: opencl:", 29), "no profile header in %s", file);
  if (strstr(text, "no profiling queues")) return 0; /* the device cannot: only the header */
  CHECK(has_line(text, "kernel inv ", "global="), "no line for the launch of inv");
  CHECK(has_line(text, "reduce mx ", "global="), "no line for the launch of mx");
  CHECK(has_line(text, "read mx ", "bytes=16"), "no line for the read-back of mx");
  return 0;
}

/* Files named opencl-*.bin in dir (program binaries: one per module built). */
static int count_binaries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    n += !strncmp(e->d_name, "opencl-", 7) && len > 4 && !strcmp(e->d_name + len - 4, ".bin");
  }
  if (d) closedir(d);
  return n;
}

/* add2 with images a and b, b read with border `mode`, on dev and on ref: equal images. */
static void same_add2(pxl_context *dev, pxl_program *pd, pxl_context *ref, pxl_program *pr, pxl_image *a,
                      pxl_image *b, const char *mode) {
  pxl_run_result *res[2] = {NULL, NULL};
  pxl_context *ctx[2] = {dev, ref};
  pxl_program *prog[2] = {pd, pr};
  for (int k = 0; k < 2; k++) {
    pxl_args *args = pxl_args_new(ctx[k]);
    int st = args ? pxl_args_image(args, "a", a) : PXL_ENOMEM;
    if (!st) st = pxl_args_image(args, "b", b);
    if (!st) st = pxl_args_border(args, "b", mode);
    if (!st) st = pxl_run(ctx[k], prog[k], "add2", args, &res[k]);
    CHECK(!st, "add2, b %dx%d : %s on %s: %s", pxl_image_width(b), pxl_image_height(b), mode, k ? "ref" : "OpenCL",
          pxl_errmsg(ctx[k]));
    pxl_args_free(args);
  }
  if (res[0] && res[1])
    CHECK(same_image(pxl_result_image(res[0]), pxl_result_image(res[1])), "add2, b %dx%d : %s: the images differ",
          pxl_image_width(b), pxl_image_height(b), mode);
  pxl_result_free(res[0]);
  pxl_result_free(res[1]);
}

static int borders(const char *dir) {
  static const char src[] = "kernel u8 add2(image u8 a, image u8 b) { return a(0, 0) / 2 + b(0, 0) / 2; }\n";
  static const char *modes[] = {"clamp", "mirror", "wrap", "constant(200)", "none"};
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) return 1;
  int skip = 0;
  pxl_context *probe = opencl_context(&skip);
  if (!probe) return skip ? 77 : 1;
  pxl_context_free(probe);
  pxl_context *dev = pxl_context_new(), *ref = pxl_context_new();
  CHECK(dev && ref && !pxl_set_cache_dir(dev, dir) && !pxl_set_device(dev, "opencl") && !pxl_set_device(ref, "ref"),
        "contexts: %s", dev ? pxl_errmsg(dev) : "out of memory");
  pxl_program *pd = compile(dev, src), *pr = compile(ref, src);
  pxl_image *a = image(ref, PXL_U8), *b = image(ref, PXL_U8), *small = NULL;
  if (pxl_image_create(ref, W - 5, H - 2, PXL_U8, 1, &small)) small = NULL;
  for (int y = 0; small && y < H - 2; y++)
    for (int x = 0; x < W - 5; x++) ((unsigned char *)pxl_image_data(small))[(size_t)y * pxl_image_pitch(small) + x] =
        (unsigned char)random_u32();
  if (pd && pr && a && b && small) {
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) same_add2(dev, pd, ref, pr, a, b, modes[i]);
    int n = count_binaries(dir);
    CHECK(n == 1, "add2 on images that cover the output in 5 border modes: %d program binaries in %s, want 1", n, dir);
    same_add2(dev, pd, ref, pr, a, small, "constant(200)");
    same_add2(dev, pd, ref, pr, a, small, "mirror");
  }
  pxl_image_free(a);
  pxl_image_free(b);
  pxl_image_free(small);
  pxl_program_free(pd);
  pxl_program_free(pr);
  pxl_context_free(dev);
  pxl_context_free(ref);
  return 0;
}

int main(int argc, char **argv) {
  setenv("PXL_OPENCL_OPTIONS", "-cl-opt-disable", 0);
  int rc = 2;
  if (argc == 3 && !strcmp(argv[1], "no-fp64")) rc = no_fp64(argv[2]);
  else if (argc == 2 && !strcmp(argv[1], "build-error")) rc = build_error();
  else if (argc == 3 && !strcmp(argv[1], "profile")) rc = profile(argv[2]);
  else if (argc == 3 && !strcmp(argv[1], "borders")) rc = borders(argv[2]);
  else printf("usage: ocl_kernel_test no-fp64 EXAMPLES_DIR | build-error | profile FILE | borders DIR\n");
  if (rc) return rc;
  printf("%s\n", failed ? "FAILED" : "ok");
  return failed ? 1 : 0;
}
