/*
 * aot_loops_test.c - `pxl compile` output of pipelines with loops against the reference
 * interpreter: examples/distance.pxl (taxicab, chessboard: u16 images carried) and
 * examples/reconstruct.pxl (reconstruct with two inputs, fill_holes), generated at build
 * time and linked here, called directly on random images of awkward sizes with caps that
 * stop the loop early (0, 1, 3) and that let it reach its fixed point; bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distance_aot.h"
#include "pxl/pxl.h"
#include "reconstruct_aot.h"

#include "aot_common.h"

typedef int (*Entry)(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads);
static int failed, passed;

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  pxl_context *ctx = aot_context();
  pxl_program *dist = aot_program(ctx, argv[1]), *rec = dist ? aot_program(ctx, argv[2]) : NULL;
  if (!rec) {
    return 1;
  }
  struct {
    pxl_program *prog;
    const char *entry;
    Entry fn;
    int nimg;
    pxl_type out;
  } cases[] = {{dist, "taxicab", distance_aot_taxicab, 1, PXL_U16},
               {dist, "chessboard", distance_aot_chessboard, 1, PXL_U16},
               {rec, "reconstruct", reconstruct_aot_reconstruct, 2, PXL_U8},
               {rec, "fill_holes", reconstruct_aot_fill_holes, 1, PXL_U8}};
  const int sizes[][2] = {{1, 1}, {3, 5}, {64, 33}, {157, 129}};
  const int caps[] = {0, 1, 3, 100000};
  unsigned seed = 12345;
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
      for (size_t k = 0; k < sizeof caps / sizeof *caps; k++) {
        int w = sizes[s][0], h = sizes[s][1];
        pxl_image *in[2], *aot_out;
        pxl_args *args = pxl_args_new(ctx);
        static const char *const names[2][2] = {{"in", NULL}, {"seed", "mask"}};
        for (int i = 0; i < cases[c].nimg; i++) {
          pxl_image_create(ctx, w, h, PXL_U8, 1, &in[i]);
          for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
              seed = seed * 1103515245u + 12345u;
              unsigned v = seed >> 16;
              ((unsigned char *)pxl_image_data(in[i]))[(size_t)y * pxl_image_pitch(in[i]) + x] =
                  (unsigned char)(cases[c].out == PXL_U16 ? (v % 13 ? 255 : 0) : v);
            }
          pxl_args_image(args, names[cases[c].nimg - 1][i], in[i]);
        }
        pxl_args_scalar(args, "cap", caps[k]);
        pxl_run_result *res;
        pxl_image *ref_out = aot_reference(ctx, cases[c].prog, cases[c].entry, args, &res);
        if (!ref_out) return 1;
        pxlc_image cin[2] = {as_c(in[0]), cases[c].nimg > 1 ? as_c(in[1]) : as_c(in[0])};
        pxlc_scalar sc[1];
        sc[0].i = caps[k];
        pxlc_image size = {NULL, 0, 0, 0};
        int rc = cases[c].fn(cin, sc, &size, 0);
        pxl_image_create(ctx, size.width, size.height, cases[c].out, 1, &aot_out);
        pxlc_image cout = as_c(aot_out);
        rc |= cases[c].fn(cin, sc, &cout, 0);
        size_t row = (size_t)w * (cases[c].out == PXL_U16 ? 2 : 1);
        int same = rc == 0 && size.width == pxl_image_width(ref_out) && size.height == pxl_image_height(ref_out) &&
                   aot_images_equal(ref_out, aot_out, row, h);
        printf("%s %s %dx%d cap %d: generated C == interpreter\n", same ? "ok" : "FAIL", cases[c].entry, w, h,
               caps[k]);
        if (same) passed++;
        else failed++;
        pxl_result_free(res);
        pxl_args_free(args);
        for (int i = 0; i < cases[c].nimg; i++) pxl_image_free(in[i]);
        pxl_image_free(aot_out);
      }
  pxl_program_free(dist);
  pxl_program_free(rec);
  pxl_context_free(ctx);
  return aot_summary(passed, failed);
}
