/*
 * ops.h - the global operators: whole-image algorithms the kernel language cannot express
 * (a pixel's result depends on pixels arbitrarily far away, found by a search rather than
 * a window). One operation family per file: distance.c, label.c.
 *
 * Every operation has two algorithms that give the same bits for every input:
 *   - the reference (OpsRun.reference): simple, single-threaded, obviously correct; the
 *     reference interpreter runs it and the tests trust it as the oracle;
 *   - the fast one: multithreaded with OpenMP, for the CPU backend (GPU backends run it on
 *     host copies).
 * Images are host images; only their first channel's layout is used (1 channel expected).
 * Functions return PXL_OK or a PXL_* code with err set; they never print or exit.
 *
 * Example: the Euclidean distance of every pixel to the nearest nonzero pixel of `mask`,
 * as f32, on all cores:
 *
 *   OpsRun run = {0};
 *   struct pxl_image *dist;
 *   if (image_new(mask->width, mask->height, PXL_F32, 1, &dist, &err) == PXL_OK &&
 *       ops_distance(mask, OPS_L2, &run, dist, &err) == PXL_OK) ...
 */
#ifndef PXL_OPS_H
#define PXL_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "image/image.h"
#include "ir/value.h"
#include "util/err.h"

typedef struct {
  int nthreads;   /* threads of the fast algorithms; 0: all cores (omp_get_num_procs) */
  bool reference; /* run the reference algorithm instead */
} OpsRun;

enum { OPS_L2, OPS_L1, OPS_LINF }; /* metrics of ops_distance */

/* Distance transform: for every pixel, the distance to the nearest pixel of `feat` that is
 * nonzero (MATLAB bwdist: features are the nonzero pixels). feat: host image, PXL_U8, 1
 * channel. out: host image of the same size, 1 channel, ANY pixel type (pxl_type: u8 i16
 * u16 i32 u32 f32 f64). The exact value: L1 |dx|+|dy|, LINF max(|dx|,|dy|) (integers), L2
 * sqrt(dx^2+dy^2) computed as sqrt() in double of the exact integer squared distance (held in
 * 64 bits: an image may be 65535 wide, so dx^2+dy^2 can exceed 2^32). No feature pixel in the
 * image: the value is +infinity. The value is then stored into out converted exactly as
 * lane_convert (src/interp/interp.h, interp.c) converts an f64 Lane to out's type
 * (saturating; +inf -> the type's max for integer types; f32: (float)double). */
int ops_distance(const struct pxl_image *feat, int metric, const OpsRun *run, struct pxl_image *out, Err *err);

/* The nearest feature pixel of every pixel in the Euclidean metric (MATLAB bwdist's second
 * result): its raster index y' * width + x' in out (host image of feat's size, 1 channel,
 * PXL_U32 or PXL_I32; i32 only where every index fits). Among equally near features the
 * one with the smallest x', then the smallest y' (the first in column-major order). No
 * feature in the image: -1 (u32: 4294967295). */
int ops_nearest(const struct pxl_image *feat, const OpsRun *run, struct pxl_image *out, Err *err);

/* Connected-component labelling: pixels of `map` (host image, 1 channel, ANY pixel type) with
 * value 0 are background (label 0); two neighbouring pixels (conn 4: edge neighbours; 8: and
 * diagonal) belong to one component when their map values are EQUAL (compare in the map's
 * type; floats: ==, so -0.0 is background and a NaN pixel equals nothing, it is a component
 * of its own). Components are numbered 1, 2, ... in raster order (row by row, left to right)
 * of their first pixel. out: host image, same size, 1 channel, PXL_U32 or PXL_I32. *count (if
 * not NULL): the number of components. */
int ops_label(const struct pxl_image *map, int conn, const OpsRun *run, struct pxl_image *out, int64_t *count,
              Err *err);

/* Stores v, a value of type `from`, into pixel (x, y) of host image out (one channel),
 * converted to out's type as lane_convert converts (store.c). */
void ops_put(struct pxl_image *out, int x, int y, Lane v, Scalar from);
/* Pixel (x, y) of host image img (one channel) as a double: exact for every pixel type. */
double ops_value(const struct pxl_image *img, int x, int y);

#endif
