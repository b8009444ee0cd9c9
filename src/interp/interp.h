/*
 * interp.h - the reference interpreter: executes checked IR sequentially, one output
 * element at a time, with the language's exact semantics (src/ir/prelude.h). It is the
 * oracle every backend is tested against, so it favours obviousness over speed.
 */
#ifndef PXL_INTERP_H
#define PXL_INTERP_H

#include "ir/value.h"
#include "util/err.h"

/* Output size of kernel D for these arguments (size() evaluated, else the first image's). */
int interp_output_size(const Decl *D, const ImgArg *imgs, const Lane *scalars, int *w, int *h, Err *err);

/* Evaluates an expression that reads no pixels (size(), pipeline scalar arguments). */
Lane interp_host_expr(const Node *n, const Decl *D, const ImgArg *imgs, const Lane *scalars);
/* The same for a scalar argument of pipeline P that may read its scalar values:
 * pvals[i] is the value of P->values[i] (a reduction's result) once computed. */
Lane interp_pipe_expr(const Node *n, const Decl *P, const ImgArg *imgs, const Lane *scalars, const Lane *pvals);

/* Runs kernel D into out (already of the output size and type). scalars[i] holds scalar
 * parameter i converted to its type. */
int interp_kernel(const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out, Err *err);
/* Runs kernel D with several outputs (D->nouts, or one: interp_kernel) into outs[0..nouts),
 * sized already, each of its output's type: the body once per pixel, every value stored. */
int interp_kernel_outs(const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *const *outs,
                       Err *err);
/* Runs reduction D over the first image's pixels in row-major order. */
int interp_reduce(const Decl *D, const ImgArg *imgs, const Lane *scalars, RedResult *res, Err *err);
/* Runs histogram D; bins has D->nbins Lanes (i64 counts, or f64 when D->weighted_float). */
int interp_histogram(const Decl *D, const ImgArg *imgs, const Lane *scalars, Lane *bins, Err *err);

/* The rectangle [x0, x1) x [y0, y1) a kernel computes: all of the output, less the margins
 * where a border-`none` input's window would leave the image. */
void stage_region(const Decl *D, const ImgArg *imgs, int w, int h, int *x0, int *y0, int *x1, int *y1);

/* Element c of pixel (x, y) of a host image, as a Lane (integers in .i, floats in .f). */
Lane interp_load(const struct pxl_image *img, int x, int y, int c);

/* Converts a lane of type `from` to type `to` with the language's rules. */
Lane lane_convert(Lane v, Scalar from, Scalar to);

#endif
