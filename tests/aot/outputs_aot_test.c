/*
 * outputs_aot_test.c - `pxl compile` output of a kernel with several outputs against the
 * reference interpreter.
 *
 * The build runs `pxl compile` on examples/sobel_xy.pxl and links the generated C here.
 * sobel_xy (two i16 outputs, written into out[0] and out[1]) and the pipeline edges that
 * reads both run on random images of awkward sizes (1x1, 1xN, Nx1, odd) with 1 and 4
 * threads and are compared with the interpreter run through libpxl, which runs the body
 * once per pixel: bit for bit, every output. The size query (out[0].data NULL) must give
 * every output the input's size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxl/pxl.h"
#include "sobel_xy_aot.h"

#include "aot_common.h"

static int same_pixels(pxl_image *a, pxl_image *b, size_t bpp) {
  return pxl_image_width(a) == pxl_image_width(b) && pxl_image_height(a) == pxl_image_height(b) &&
         aot_images_equal(a, b, (size_t)pxl_image_width(a) * bpp, pxl_image_height(a));
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  pxl_context *ctx = aot_context();
  pxl_program *prog = aot_program(ctx, argv[1]);
  if (!prog) return 1;
  const int sizes[][2] = {{1, 1}, {1, 17}, {17, 1}, {3, 5}, {257, 129}, {600, 300}};
  unsigned seed = 977;
  int passed = 0, failed = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    int w = sizes[s][0], h = sizes[s][1];
    pxl_image *in;
    pxl_image_create(ctx, w, h, PXL_U8, 1, &in);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        seed = seed * 1103515245u + 12345u;
        ((unsigned char *)pxl_image_data(in))[(size_t)y * pxl_image_pitch(in) + x] = (unsigned char)(seed >> 16);
      }
    pxl_args *args = pxl_args_new(ctx);
    pxl_args_image(args, "in", in);
    pxl_run_result *rk, *rp;
    if (pxl_run(ctx, prog, "sobel_xy", args, &rk) || pxl_run(ctx, prog, "edges", args, &rp)) {
      fprintf(stderr, "%s\n", pxl_errmsg(ctx));
      return 1;
    }
    if (pxl_result_image_count(rk) != 2) {
      printf("FAIL sobel_xy: the interpreter gave %d images, not 2\n", pxl_result_image_count(rk));
      return 1;
    }
    for (int nt = 1; nt <= 4; nt += 3) {
      pxlc_image cin = as_c(in), q[2] = {{0}};
      int ok = sobel_xy_aot_sobel_xy(&cin, NULL, q, nt) == 0 && q[0].width == w && q[0].height == h &&
               q[1].width == w && q[1].height == h;
      pxl_image *gx, *gy, *mag;
      pxl_image_create(ctx, w, h, PXL_I16, 1, &gx);
      pxl_image_create(ctx, w, h, PXL_I16, 1, &gy);
      pxl_image_create(ctx, w, h, PXL_U8, 1, &mag);
      pxlc_image outs[2] = {as_c(gx), as_c(gy)}, cmag = as_c(mag);
      ok = ok && sobel_xy_aot_sobel_xy(&cin, NULL, outs, nt) == 0;
      ok = ok && same_pixels(pxl_result_image_at(rk, 0), gx, 2) && same_pixels(pxl_result_image_at(rk, 1), gy, 2);
      printf("%s sobel_xy %dx%d, %d thread%s: both outputs of the generated C == interpreter\n", ok ? "ok" : "FAIL",
             w, h, nt, nt == 1 ? "" : "s");
      ok ? passed++ : failed++;
      ok = sobel_xy_aot_edges(&cin, NULL, &cmag, nt) == 0 && same_pixels(pxl_result_image(rp), mag, 1);
      printf("%s edges %dx%d, %d thread%s: generated C == interpreter\n", ok ? "ok" : "FAIL", w, h, nt,
             nt == 1 ? "" : "s");
      ok ? passed++ : failed++;
      pxl_image_free(gx);
      pxl_image_free(gy);
      pxl_image_free(mag);
    }
    pxl_result_free(rk);
    pxl_result_free(rp);
    pxl_args_free(args);
    pxl_image_free(in);
  }
  pxl_program_free(prog);
  pxl_context_free(ctx);
  return aot_summary(passed, failed);
}
