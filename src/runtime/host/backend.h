/*
 * backend.h - what a backend must provide to the runtime: run one stage instance.
 *
 * A backend is a struct of function pointers (QBE style); the runtime (exec.c) does
 * everything else - binding, output sizes, pipelines, intermediates - once for all
 * backends. The reference backend wraps the interpreter; the CPU backend JIT-compiles
 * generated C.
 */
#ifndef PXL_BACKEND_H
#define PXL_BACKEND_H

#include "ir/value.h"
#include "util/err.h"

typedef struct Backend Backend;
struct Backend {
  const char *name;
  /* Runs kernel D into out (sized already). */
  int (*kernel)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out, Err *err);
  /* Runs reduction D. */
  int (*reduce)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, RedResult *res, Err *err);
  /* Runs histogram D into bins (D->nbins Lanes). */
  int (*histogram)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, Lane *bins, Err *err);
  /* Frees the backend. */
  void (*free)(Backend *be);
};

/* The reference interpreter as a backend. Never fails except out-of-memory (NULL). */
Backend *backend_ref_new(void);

/* The CPU backend: JIT compiles generated C with the system C compiler (PXL_CC, else the
 * compiler pxl was built with, else cc), caches modules in cache_dir (created if needed)
 * and in memory. nthreads 0 = all cores. NULL on out-of-memory. */
Backend *backend_cpu_new(const char *cache_dir, int nthreads);

/* The CUDA backend on device `ordinal` (src/runtime/cuda): PXL_EDEVICE with the reason
 * when the driver, NVRTC or the device is missing. */
int backend_cuda_new(int ordinal, Backend **out, Err *err);

/* Result of running an entry point. */
typedef struct {
  int kind;                 /* PXL_RESULT_IMAGE / _SCALAR / _HISTOGRAM */
  struct pxl_image *image;  /* output image */
  bool image_owned;         /* allocated by the run (else the caller's bound output) */
  RedResult red;
  Lane *bins;               /* heap, nbins */
  int nbins;
  bool bins_float;
} ExecResult;

/* Runs entry D (kernel, reduce, histogram or pipeline) with bound arguments: imgs and
 * scalars follow D's image and scalar parameters (borders of kernel runs included);
 * out is the caller's output image or NULL. */
int exec_entry(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
               ExecResult *res, Err *err);

#endif
