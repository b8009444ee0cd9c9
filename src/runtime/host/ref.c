/*
 * ref.c - the reference interpreter as a backend (see backend.h).
 */
#include "interp/interp.h"
#include "runtime/backend.h"
#include "util/alloc.h"

static int ref_kernel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                      Err *err) {
  return interp_kernel(D, imgs, scalars, out, err);
}

static int ref_kernel_outs(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars,
                           struct pxl_image *const *outs, Err *err) {
  return interp_kernel_outs(D, imgs, scalars, outs, err);
}

static int ref_reduce(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, RedResult *res, Err *err) {
  return interp_reduce(D, imgs, scalars, res, err);
}

static int ref_histogram(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, Lane *bins, Err *err) {
  return interp_histogram(D, imgs, scalars, bins, err);
}

static void ref_free(Backend *be) { PXL_FREE(be); }

Backend *backend_ref_new(void) {
  Backend *be = PXL_CALLOC(1, sizeof *be);
  if (!be) return NULL;
  be->name = "ref";
  be->kernel = ref_kernel;
  be->kernel_outs = ref_kernel_outs;
  be->reduce = ref_reduce;
  be->histogram = ref_histogram;
  be->free = ref_free;
  return be;
}
