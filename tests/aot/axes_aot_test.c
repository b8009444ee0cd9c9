/*
 * axes_aot_test.c - the axis values' 4-byte loads stay inside the image (codegen/c/axes.c).
 *
 * The build runs `pxl compile` on examples/warp.pxl and links the generated C here. Its
 * resizes read u8 pixels through tables and, on rows where it is safe, with 4-byte loads
 * (the pixel in the low byte): 3 bytes past a row's last pixel are the next row's, but
 * the last row has none after it. Here every input is a malloc of exactly width x height
 * bytes (pitch = width), so a load past the end is a heap overflow that the sanitizer
 * build (tools/test.sh's second suite) reports; each output, from 1 and 3 threads, is
 * compared with the interpreter through libpxl: bit for bit. Sizes from 1 x 1 up,
 * enlarging and shrinking.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxl/pxl.h"
#include "warp_aot.h"

#include "aot_common.h"

typedef int (*ResizeFn)(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads);

static const struct {
  const char *name;
  ResizeFn fn;
} resizes[] = {
    {"resize_linear", warp_aot_resize_linear},
    {"resize_bilinear", warp_aot_resize_bilinear},
    {"resize_cubic", warp_aot_resize_cubic},
};

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  pxl_context *ctx = aot_context();
  pxl_program *prog = aot_program(ctx, argv[1]);
  if (!prog) return 1;
  /* w, h in; ow, oh out */
  const int sizes[][4] = {{1, 1, 3, 3}, {2, 1, 5, 4}, {3, 2, 1, 1}, {5, 3, 7, 2},
                          {4, 4, 2, 2}, {9, 7, 4, 11}, {17, 5, 13, 9}, {64, 33, 48, 25}};
  unsigned seed = 777;
  int passed = 0, failed = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    int w = sizes[s][0], h = sizes[s][1], ow = sizes[s][2], oh = sizes[s][3];
    unsigned char *px = malloc((size_t)w * h), *got = malloc((size_t)ow * oh);
    if (!px || !got) return 1;
    for (int i = 0; i < w * h; i++) {
      seed = seed * 1103515245u + 12345u;
      px[i] = (unsigned char)(seed >> 16);
    }
    pxl_image *in;
    if (pxl_image_wrap(ctx, px, w, h, PXL_U8, 1, (size_t)w, &in)) {
      fprintf(stderr, "%s\n", pxl_errmsg(ctx));
      return 1;
    }
    for (size_t k = 0; k < sizeof resizes / sizeof *resizes; k++) {
      pxl_args *args = pxl_args_new(ctx);
      pxl_args_image(args, "in", in);
      pxl_args_scalar(args, "ow", ow);
      pxl_args_scalar(args, "oh", oh);
      pxl_run_result *res;
      pxl_image *ref = aot_reference(ctx, prog, resizes[k].name, args, &res);
      if (!ref) return 1;
      for (int nt = 1; nt <= 3; nt += 2) {
        pxlc_image cin = {px, w, h, w}, cout = {got, ow, oh, ow};
        pxlc_scalar sc[2];
        sc[0].i = ow;
        sc[1].i = oh;
        memset(got, 0, (size_t)ow * oh);
        int same = resizes[k].fn(&cin, sc, &cout, nt) == 0 &&
                   aot_rows_equal(pxl_image_data(ref), pxl_image_pitch(ref), got, (size_t)ow, (size_t)ow, oh);
        printf("%s %s %dx%d -> %dx%d, %d thread%s: generated C == interpreter\n", same ? "ok" : "FAIL", resizes[k].name, w,
               h, ow, oh, nt, nt == 1 ? "" : "s");
        if (same) passed++;
        else failed++;
      }
      pxl_result_free(res);
      pxl_args_free(args);
    }
    pxl_image_free(in);
    free(px);
    free(got);
  }
  pxl_program_free(prog);
  pxl_context_free(ctx);
  return aot_summary(passed, failed);
}
