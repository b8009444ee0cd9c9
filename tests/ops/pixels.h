/*
 * pixels.h - reading and writing one pixel of a one-channel host image as a double, for
 * the operator library's tests (ops_test.c, morph_test.c). Written here rather than taken
 * from src/ops (ops_value, ops_put), so the tests do not check the library with itself.
 */
#ifndef PXL_TEST_OPS_PIXELS_H
#define PXL_TEST_OPS_PIXELS_H

#include <stdint.h>

#include "image/image.h"

/* Pixel (x, y) as a double (every pixel type converts exactly). */
static inline double px(const struct pxl_image *img, int x, int y) {
  const void *r = image_row(img, y);
  switch (img->type) {
  case PXL_U8: return ((const uint8_t *)r)[x];
  case PXL_I16: return ((const int16_t *)r)[x];
  case PXL_U16: return ((const uint16_t *)r)[x];
  case PXL_I32: return ((const int32_t *)r)[x];
  case PXL_U32: return ((const uint32_t *)r)[x];
  case PXL_F32: return ((const float *)r)[x];
  default: return ((const double *)r)[x];
  }
}

/* Stores v (representable in the type) into pixel (x, y). */
static inline void set_px(struct pxl_image *img, int x, int y, double v) {
  void *r = image_row(img, y);
  switch (img->type) {
  case PXL_U8: ((uint8_t *)r)[x] = (uint8_t)v; break;
  case PXL_I16: ((int16_t *)r)[x] = (int16_t)v; break;
  case PXL_U16: ((uint16_t *)r)[x] = (uint16_t)v; break;
  case PXL_I32: ((int32_t *)r)[x] = (int32_t)v; break;
  case PXL_U32: ((uint32_t *)r)[x] = (uint32_t)v; break;
  case PXL_F32: ((float *)r)[x] = (float)v; break;
  default: ((double *)r)[x] = v; break;
  }
}

#endif
