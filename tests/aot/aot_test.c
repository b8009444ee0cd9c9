/*
 * aot_test.c - `pxl compile` output against the reference interpreter.
 *
 * The build runs `pxl compile` on examples/edges.pxl (a five-stage pipeline with two
 * inputs per stage in places) and links the generated C into this program, which calls
 * the generated pipeline (edges_aot_edges: the base name, then the entry) directly - no
 * pxl at run time - on random images of awkward sizes and compares it with the
 * interpreter run through libpxl: bit for bit. tests/aot/aot_safe.sh checks hostile
 * paths and names, warnings, and two generated files in one program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edges_aot.h"

#include "aot_common.h"
#include "pxl/pxl.h"

static int failed, passed;

static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok" : "FAIL", what);
  if (ok) passed++;
  else failed++;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  pxl_context *ctx = aot_context();
  pxl_program *prog = aot_program(ctx, argv[1]);
  if (!prog) return 1;
  const int sizes[][2] = {{1, 1}, {3, 5}, {64, 33}, {257, 129}};
  unsigned seed = 12345;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    int w = sizes[s][0], h = sizes[s][1];
    pxl_image *in, *ref_out, *aot_out;
    pxl_image_create(ctx, w, h, PXL_U8, 1, &in);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        seed = seed * 1103515245u + 12345u;
        ((unsigned char *)pxl_image_data(in))[(size_t)y * pxl_image_pitch(in) + x] = (unsigned char)(seed >> 16);
      }
    /* the interpreter, through libpxl */
    pxl_args *args = pxl_args_new(ctx);
    pxl_args_image(args, "in", in);
    pxl_args_scalar(args, "t", 30);
    pxl_run_result *res;
    ref_out = aot_reference(ctx, prog, "edges", args, &res);
    if (!ref_out) return 1;
    /* the generated C, directly */
    pxlc_image cin = as_c(in);
    pxlc_scalar sc[1];
    sc[0].i = 30;
    pxlc_image size = {NULL, 0, 0, 0};
    int rc = edges_aot_edges(&cin, sc, &size, 0); /* out->data NULL: the size */
    int32_t ow = size.width, oh = size.height;
    pxl_image_create(ctx, ow, oh, PXL_U8, 1, &aot_out);
    pxlc_image cout = as_c(aot_out);
    rc |= edges_aot_edges(&cin, sc, &cout, 0);
    int same = rc == 0 && ow == pxl_image_width(ref_out) && oh == pxl_image_height(ref_out) &&
               aot_images_equal(ref_out, aot_out, (size_t)ow, oh);
    char what[128];
    snprintf(what, sizeof what, "edges %dx%d: generated C == interpreter", w, h);
    check(same, what);
    pxl_result_free(res);
    pxl_args_free(args);
    pxl_image_free(in);
    pxl_image_free(aot_out);
  }
  pxl_program_free(prog);
  pxl_context_free(ctx);
  return aot_summary(passed, failed);
}
