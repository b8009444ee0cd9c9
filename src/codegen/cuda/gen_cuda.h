/*
 * gen_cuda.h - the CUDA code generator: a stage instance as CUDA C++ for NVRTC.
 *
 * The pixel functions come from the shared C-family emitter (codegen/c/emit.h); this
 * file writes the entry points, one thread per output pixel:
 *   extern "C" __global__ void pxl_stage(pxl_kargs a)   kernels, histograms, reductions
 *   extern "C" __global__ void pxl_final(pxl_kargs a)   reductions: the ordered combine
 * pxl_kargs is passed by value: images (device pointers), scalars, output, an auxiliary
 * device buffer (reduction partials, histogram bins) and a count.
 */
#ifndef PXL_GEN_CUDA_H
#define PXL_GEN_CUDA_H

#include "ir/ir.h"
#include "util/err.h"
#include "util/strbuf.h"

#define PXL_CUDA_MAX_IMAGES 8
#define PXL_CUDA_MAX_SCALARS 16
#define PXL_CUDA_CHUNKS 256   /* reduction row chunks: fixed, so results are deterministic */
#define PXL_CUDA_BLOCK 256    /* threads per reduction block */

/* Appends the CUDA translation unit of instance (D, borders). */
int gen_cuda_stage(StrBuf *out, const Decl *D, const Border *borders, Err *err);

#endif
