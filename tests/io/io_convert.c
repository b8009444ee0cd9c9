/*
 * io_convert.c - `io_convert IN OUT`: loads IN and saves it as OUT through the public API
 * (pxl_image_load, pxl_image_save), printing "WxH CHANNELS TYPE" of the image. The
 * interoperability test (interop.py) drives it against numpy and tifffile.
 */
#include <stdio.h>

#include "pxl/pxl.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: io_convert IN OUT\n");
    return 2;
  }
  pxl_context *ctx = pxl_context_new();
  pxl_image *img = NULL;
  int st = ctx ? pxl_image_load(ctx, argv[1], &img) : PXL_ENOMEM;
  if (st == PXL_OK) {
    printf("%dx%d %d %s\n", pxl_image_width(img), pxl_image_height(img), pxl_image_channels(img),
           pxl_type_name(pxl_image_type(img)));
    st = pxl_image_save(ctx, img, argv[2]);
  }
  if (st != PXL_OK) fprintf(stderr, "io_convert: %s\n", ctx ? pxl_errmsg(ctx) : "out of memory");
  pxl_image_free(img);
  pxl_context_free(ctx);
  return st == PXL_OK ? 0 : 1;
}
