/*
 * scan_aot_test.c - `pxl compile` output of scans against the reference interpreter.
 *
 * The build runs `pxl compile` on tests/diff/scans.pxl and links the generated C here;
 * the scans of one u8 image (a 2-D sum, sums along x in i32 and f32, running minima
 * and maxima) run directly, with 1 and 4 threads, on random images of awkward sizes
 * (1x1, 1xN, Nx1, odd) and are compared with the interpreter run through libpxl: bit
 * for bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxl/pxl.h"
#include "scans_aot.h"

#include "aot_common.h"

typedef int (*ScanFn)(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads);

static const struct {
  const char *name;
  ScanFn fn;
  pxl_type type;
  size_t size; /* bytes per pixel */
} scans[] = {
    {"integral", scans_aot_integral, PXL_I32, 4}, {"rowsum", scans_aot_rowsum, PXL_I32, 4},
    {"fsumx", scans_aot_fsumx, PXL_F32, 4},       {"runmin", scans_aot_runmin, PXL_U8, 1},
    {"runmax", scans_aot_runmax, PXL_U8, 1},
};

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  pxl_context *ctx = aot_context();
  pxl_program *prog = aot_program(ctx, argv[1]);
  if (!prog) return 1;
  const int sizes[][2] = {{1, 1}, {1, 17}, {17, 1}, {3, 5}, {257, 129}, {600, 300}};
  unsigned seed = 4321;
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
    for (size_t k = 0; k < sizeof scans / sizeof *scans; k++) {
      pxl_args *args = pxl_args_new(ctx);
      pxl_args_image(args, "in", in);
      pxl_run_result *res;
      pxl_image *ref_out = aot_reference(ctx, prog, scans[k].name, args, &res);
      if (!ref_out) return 1;
      for (int nt = 1; nt <= 4; nt += 3) {
        pxl_image *aot_out;
        pxl_image_create(ctx, w, h, scans[k].type, 1, &aot_out);
        pxlc_image cin = as_c(in), cout = as_c(aot_out);
        int same = scans[k].fn(&cin, NULL, &cout, nt) == 0 && aot_images_equal(ref_out, aot_out, (size_t)w * scans[k].size, h);
        printf("%s %s %dx%d, %d thread%s: generated C == interpreter\n", same ? "ok" : "FAIL", scans[k].name, w, h,
               nt, nt == 1 ? "" : "s");
        if (same) passed++;
        else failed++;
        pxl_image_free(aot_out);
      }
      pxl_result_free(res);
      pxl_args_free(args);
    }
    pxl_image_free(in);
  }
  pxl_program_free(prog);
  pxl_context_free(ctx);
  return aot_summary(passed, failed);
}
