/*
 * aot_common.h - what the ahead-of-time tests share: the reference interpreter to compare
 * with and its runs, a libpxl image seen as the generated code's pxlc_image, rows
 * compared, and the summary line. Include it after the generated header (which declares pxlc_image).
 */
#ifndef PXL_TESTS_AOT_COMMON_H
#define PXL_TESTS_AOT_COMMON_H

#include <stdio.h>
#include <string.h>

#include "pxl/pxl.h"

/* A context whose runs go to the reference interpreter. */
static inline pxl_context *aot_context(void) {
  pxl_context *ctx = pxl_context_new();
  pxl_set_device(ctx, "ref");
  return ctx;
}

/* The program in the file at `path`, or NULL after printing why not. */
static inline pxl_program *aot_program(pxl_context *ctx, const char *path) {
  pxl_program *prog;
  if (pxl_program_from_file(ctx, path, &prog)) {
    fprintf(stderr, "%s\n", pxl_errmsg(ctx));
    return NULL;
  }
  return prog;
}

/* The interpreter's run of `entry` on args: its (first) image, *res to be freed; NULL
 * after printing why not. */
static inline pxl_image *aot_reference(pxl_context *ctx, pxl_program *prog, const char *entry, pxl_args *args,
                                       pxl_run_result **res) {
  if (pxl_run(ctx, prog, entry, args, res)) {
    fprintf(stderr, "%s\n", pxl_errmsg(ctx));
    return NULL;
  }
  pxl_image *img = pxl_result_image(*res);
  if (!img) fprintf(stderr, "%s: no image\n", entry);
  return img;
}

static inline pxlc_image as_c(pxl_image *img) {
  pxlc_image c = {pxl_image_data(img), pxl_image_width(img), pxl_image_height(img), (int64_t)pxl_image_pitch(img)};
  return c;
}

/* Whether the first `row` bytes of h rows agree: a's rows pa bytes apart, b's pb. */
static inline int aot_rows_equal(const void *a, size_t pa, const void *b, size_t pb, size_t row, int h) {
  for (int y = 0; y < h; y++)
    if (memcmp((const char *)a + (size_t)y * pa, (const char *)b + (size_t)y * pb, row)) return 0;
  return 1;
}

/* The same, for two libpxl images. */
static inline int aot_images_equal(pxl_image *a, pxl_image *b, size_t row, int h) {
  return aot_rows_equal(pxl_image_data(a), pxl_image_pitch(a), pxl_image_data(b), pxl_image_pitch(b), row, h);
}

/* Prints the summary line; the test's exit status. */
static inline int aot_summary(int passed, int failed) {
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}

#endif
