/*
 * morph.h - the grey-level morphology of the operator library: reconstruction and hole
 * filling (reconstruct.c), regional minima and maxima (extrema.c) and marker-based
 * watershed (watershed.c). Like the operations of ops.h, each has a reference algorithm
 * and a fast one that give the same bits for every input (OpsRun picks one), works on host
 * images of one channel, and returns PXL_OK or a PXL_* code with err set.
 *
 * Neighbourhoods: conn 4 (the edge neighbours) or 8 (and the diagonal ones). Pixels outside
 * the image do not exist: they are never neighbours (no border value is assumed).
 *
 * Floats: the min and max of reconstruction are the language's (prelude.h pxr_min /
 * pxr_max: a NaN operand yields the other operand), with -0.0 ordered below +0.0 so that a
 * minimum or maximum over a set does not depend on the order in which it is taken. Plateaus
 * and watershed priorities compare numbers as C does (-0.0 == +0.0); what NaN does is said
 * at each operation.
 *
 * Example: the basins of a relief, flooded from its regional minima, as u32 labels:
 *
 *   OpsRun run = {0};
 *   struct pxl_image *basins;
 *   if (image_new(relief->width, relief->height, PXL_U32, 1, &basins, &err) == PXL_OK &&
 *       ops_watershed_minima(relief, 8, false, &run, basins, &err) == PXL_OK) ...
 */
#ifndef PXL_OPS_MORPH_H
#define PXL_OPS_MORPH_H

#include "ir/value.h"
#include "ops/ops.h"

/* Morphological reconstruction. marker and mask: host images of one size and one pixel type
 * (any), 1 channel. By dilation (erode false): the result starts as min(marker, mask) and grows
 * by geodesic dilation (max over the pixel and its conn-neighbours, conn 4 or 8) under mask until
 * nothing changes: r = min(dilate(r), mask), repeated. By erosion: starts as max(marker, mask);
 * r = max(erode(r), mask). This equals skimage.morphology.reconstruction(seed, mask, method) for
 * seed <= mask (dilation) / seed >= mask (erosion) with footprint 3x3 (conn 8) or the cross
 * (conn 4). out: same size, any pixel type: each value converted from the maps' type as
 * lane_convert does (the maps' own type: the bits of the value). Floats: a NaN in mask does
 * not bound the result there (min(x, NaN) = x); a NaN in the result is possible only where
 * mask is NaN and nothing but NaN reaches the pixel, and it is mask's NaN. */
int ops_reconstruct(const struct pxl_image *marker, const struct pxl_image *mask, bool erode, int conn,
                    const OpsRun *run, struct pxl_image *out, Err *err);

/* Hole filling (MATLAB imfill(I, conn, 'holes') on grey and binary images): reconstruction by
 * erosion of `in` from a marker equal to `in` on the image's border pixels and to the type's
 * largest value (floats: +infinity) elsewhere. The flooding from the border goes through
 * conn-neighbours: on a 0/255 image, a hole is a region of 0 that no conn-path of 0 links to
 * the border, and it becomes 255; conn 4 is scipy.ndimage.binary_fill_holes (whose default
 * structure floods the background through edge neighbours), conn 8 fills fewer holes. out:
 * any pixel type, converted as above. */
int ops_fill(const struct pxl_image *in, int conn, const OpsRun *run, struct pxl_image *out, Err *err);

/* Regional minima (maxima: true for maxima): 1 at every pixel of a plateau (a conn-connected set
 * of pixels of equal value, maximal) none of whose pixels has a conn-neighbour of strictly smaller
 * (maxima: larger) value; 0 elsewhere. Equal to skimage.morphology.local_minima(in, connectivity=
 * 1 or 2, allow_borders=True) and MATLAB imregionalmin. Floats: -0.0 and +0.0 are equal (one
 * plateau); a NaN pixel is 0 (it equals nothing, so it is a plateau of its own, and it is
 * no extremum) and is neither smaller nor larger than its neighbours, so it disqualifies
 * none of them. out: any pixel type (1 and 0 converted). */
int ops_regional(const struct pxl_image *in, bool maxima, int conn, const OpsRun *run, struct pxl_image *out, Err *err);

/* Marker-based watershed (priority flooding, as skimage.segmentation.watershed(relief, markers,
 * connectivity) without compactness or mask): relief any pixel type; markers any pixel type, of
 * relief's size (0: no marker; a nonzero value, NaN included, is the label of its basin,
 * converted to out's type as lane_convert does: a marker whose label converts to 0 still
 * floods, with label 0). out: PXL_U32 or PXL_I32. The order of the flooding is spelt out at the
 * top of watershed.c; every pixel that a conn-path links to a marker gets a label (without a
 * mask that is every pixel, when there is a marker), the others 0. No watershed lines. The
 * labels are skimage's where no two queued pixels tie; on ties they may differ (skimage's
 * markers all enter with one age, so its heap's layout orders them). */
int ops_watershed(const struct pxl_image *relief, const struct pxl_image *markers, int conn, const OpsRun *run,
                  struct pxl_image *out, Err *err);

/* ops_watershed with watershed lines (skimage's watershed_line=True, MATLAB's ridge lines):
 * a pixel is labelled when it leaves the queue, with the one label of its labelled
 * neighbours, or is a line pixel (0, flooding no further) when they carry two or more
 * (watershed.c). One algorithm, run.reference or not. */
int ops_watershed_lines(const struct pxl_image *relief, const struct pxl_image *markers, int conn, const OpsRun *run,
                        struct pxl_image *out, Err *err);

/* Watershed from the regional minima (MATLAB watershed(relief, conn); its ridge lines with
 * `lines`): the markers are the regional minima of relief (ops_regional, same conn),
 * numbered 1, 2, ... in raster order of each minimum's first pixel (as ops_label numbers
 * components); then ops_watershed or ops_watershed_lines. out: PXL_U32 or PXL_I32. */
int ops_watershed_minima(const struct pxl_image *relief, int conn, bool lines, const OpsRun *run,
                         struct pxl_image *out, Err *err);

#endif
