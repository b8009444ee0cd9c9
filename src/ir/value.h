/*
 * value.h - run-time values shared by the interpreter, the runtime and the backends.
 *
 * A Lane holds one element of any scalar type: integers in i (u64 as its bit pattern),
 * floats in f (an f32 is stored as the double of its exact value). A Val holds up to
 * four lanes (a pixel of 1, 3 or 4 channels).
 */
#ifndef PXL_VALUE_H
#define PXL_VALUE_H

#include <stdint.h>

#include "image/image.h"
#include "ir/ir.h"

typedef union {
  int64_t i;
  double f;
} Lane;

typedef struct {
  Lane l[4];
} Val;

/* One image argument of a stage: the image and the border mode of this use. */
typedef struct {
  const struct pxl_image *img;
  Border border;
} ImgArg;

/* Result of a reduction. */
typedef struct {
  Lane value;      /* in the reduction's type */
  Scalar type;
  int x, y;        /* argmin/argmax position, else -1 */
} RedResult;

/* Element type of the IR for a pixel type of the API. */
static inline Scalar scalar_of_pxl(pxl_type t) {
  static const Scalar map[] = {T_U8, T_I16, T_U16, T_I32, T_U32, T_F32, T_F64};
  return map[t];
}

/* API pixel type of an IR element type (pixel types only). */
static inline pxl_type pxl_of_scalar(Scalar s) {
  switch (s) {
  case T_U8: return PXL_U8;
  case T_I16: return PXL_I16;
  case T_U16: return PXL_U16;
  case T_I32: return PXL_I32;
  case T_U32: return PXL_U32;
  case T_F32: return PXL_F32;
  default: return PXL_F64;
  }
}

#endif
