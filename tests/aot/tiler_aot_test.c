/*
 * tiler_aot_test.c - tilers' generated C reads and writes inside its images.
 *
 * The build runs `pxl compile` on tests/diff/tilers.pxl and links the generated C here.
 * Its separable tilers (t_sep2, t_sepcols: a column pass into a per-thread buffer of the
 * columns a row of repetitions needs, a row pass stepping through it by the paving) and
 * the runs of other tilers (t_overlap, t_gap_up, t_half) read their input through
 * checked and direct paths. Every input here is a malloc of exactly width x height
 * pixels (pitch = the row), every output of exactly its size, so a read or write past
 * either is a heap overflow that the sanitizer build (tools/test.sh's second suite)
 * reports; each output, from 1 and 3 threads, is compared with the interpreter through
 * libpxl: bit for bit. Sizes from 1 x 1 up, not multiples of the pavings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxl/pxl.h"
#include "tilers_aot.h"

#include "aot_common.h"

typedef int (*TilerFn)(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads);

static const struct {
  const char *name;
  TilerFn fn;
  pxl_type in;   /* one-channel input */
  size_t in_sz;  /* its bytes per pixel */
  size_t out_sz; /* the output's */
} tilers[] = {
    {"t_sep2", tilers_aot_t_sep2, PXL_U8, 1, 4},       {"t_sepcols", tilers_aot_t_sepcols, PXL_I16, 2, 2},
    {"t_overlap", tilers_aot_t_overlap, PXL_U8, 1, 1}, {"t_gap_up", tilers_aot_t_gap_up, PXL_U8, 1, 1},
    {"t_half", tilers_aot_t_half, PXL_U8, 1, 1},
};

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  pxl_context *ctx = aot_context();
  pxl_program *prog = aot_program(ctx, argv[1]);
  if (!prog) return 1;
  const int sizes[][2] = {{1, 1}, {2, 1}, {1, 3}, {3, 2}, {5, 7}, {8, 8}, {17, 5}, {64, 33}, {131, 70}};
  unsigned seed = 4242;
  int passed = 0, failed = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    int w = sizes[s][0], h = sizes[s][1];
    for (size_t k = 0; k < sizeof tilers / sizeof *tilers; k++) {
      size_t row = (size_t)w * tilers[k].in_sz;
      unsigned char *px = malloc(row * (size_t)h);
      if (!px) return 1;
      for (size_t i = 0; i < row * (size_t)h; i++) {
        seed = seed * 1103515245u + 12345u;
        px[i] = (unsigned char)(seed >> 16);
      }
      pxl_image *in;
      if (pxl_image_wrap(ctx, px, w, h, tilers[k].in, 1, row, &in)) {
        fprintf(stderr, "%s\n", pxl_errmsg(ctx));
        return 1;
      }
      pxl_args *args = pxl_args_new(ctx);
      pxl_args_image(args, "in", in);
      pxl_run_result *res;
      pxl_image *ref = aot_reference(ctx, prog, tilers[k].name, args, &res);
      if (!ref) return 1;
      pxlc_image cin = {px, w, h, (int64_t)row}, size = {NULL, 0, 0, 0};
      tilers[k].fn(&cin, NULL, &size, 1); /* no data: the output's size */
      int ow = size.width, oh = size.height;
      size_t orow = (size_t)ow * tilers[k].out_sz;
      unsigned char *got = malloc(orow * (size_t)oh);
      if (!got) return 1;
      for (int nt = 1; nt <= 3; nt += 2) {
        pxlc_image cout = {got, ow, oh, (int64_t)orow};
        memset(got, 0, orow * (size_t)oh);
        int same = ow == pxl_image_width(ref) && oh == pxl_image_height(ref) &&
                   tilers[k].fn(&cin, NULL, &cout, nt) == 0 &&
                   aot_rows_equal(pxl_image_data(ref), pxl_image_pitch(ref), got, orow, orow, oh);
        printf("%s %s %dx%d -> %dx%d, %d thread%s: generated C == interpreter\n", same ? "ok" : "FAIL",
               tilers[k].name, w, h, ow, oh, nt, nt == 1 ? "" : "s");
        if (same) passed++;
        else failed++;
      }
      free(got);
      pxl_result_free(res);
      pxl_args_free(args);
      pxl_image_free(in);
      free(px);
    }
  }
  pxl_program_free(prog);
  pxl_context_free(ctx);
  return aot_summary(passed, failed);
}
