/*
 * store.c - pixels in and out of the operator library's host images: every operation
 * stores its exact result converted to the output's type as the language converts
 * (lane_convert), and reads a map's pixels exactly, whatever their type.
 */
#include "interp/interp.h"
#include "ops/ops.h"

/* The language's conversion (lane_convert) is the definition; this is its one copy here. */
void ops_put(struct pxl_image *out, int x, int y, Lane v, Scalar from) {
  Lane l = lane_convert(v, from, scalar_of_pxl(out->type));
  void *row = image_row(out, y);
  switch (out->type) {
  case PXL_U8: ((uint8_t *)row)[x] = (uint8_t)l.i; break;
  case PXL_I16: ((int16_t *)row)[x] = (int16_t)l.i; break;
  case PXL_U16: ((uint16_t *)row)[x] = (uint16_t)l.i; break;
  case PXL_I32: ((int32_t *)row)[x] = (int32_t)l.i; break;
  case PXL_U32: ((uint32_t *)row)[x] = (uint32_t)l.i; break;
  case PXL_F32: ((float *)row)[x] = (float)l.f; break;
  default: ((double *)row)[x] = l.f; break;
  }
}

/* Every pixel type converts to a double exactly (u32 and i32 included). */
double ops_value(const struct pxl_image *img, int x, int y) {
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
