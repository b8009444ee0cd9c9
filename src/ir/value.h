/*
 * value.h - run-time values shared by the interpreter, the runtime and the backends.
 *
 * A Lane holds one element of any scalar type: integers in i (u64 as its bit pattern),
 * floats in f (an f32 is stored as the double of its exact value); the value of an array
 * parameter is arr, its elements as Lanes of its element type followed by one zero Lane
 * (generated code reads it as pxlc_scalar[len + 1], the same layout). A Val holds up to
 * four lanes (a pixel of 1, 3 or 4 channels).
 */
#ifndef PXL_VALUE_H
#define PXL_VALUE_H

#include <stdint.h>

#include "image/image.h"
#include "ir/ir.h"

typedef union Lane {
  int64_t i;
  double f;
  const union Lane *arr; /* an array parameter's value: len + 1 elements, the last 0 */
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

/* Element type of the IR for a pixel type of the API (T_VOID for none). */
static inline Scalar scalar_of_pxl(pxl_type t) {
#define X(e, name, size, pixel) \
  if ((pixel) != PXL_NOT_PIXEL && (int)t == (pixel)) return e;
  PXL_ELEM_TYPES(X)
#undef X
  return T_VOID;
}

/* API pixel type of an IR element type (pixel types only; PXL_F64 for others). */
static inline pxl_type pxl_of_scalar(Scalar s) {
#define X(e, name, size, pixel) \
  if ((pixel) != PXL_NOT_PIXEL && s == (e)) return (pxl_type)(pixel);
  PXL_ELEM_TYPES(X)
#undef X
  return PXL_F64;
}

#endif
