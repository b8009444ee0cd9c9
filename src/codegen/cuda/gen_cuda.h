/*
 * gen_cuda.h - the CUDA code generator: a stage instance as CUDA C++ for NVRTC.
 *
 * The pixel functions come from the shared C-family emitter (codegen/c/emit.h); this
 * file writes the entry points - how pixels map to threads, per skeleton class:
 *   extern "C" __global__ void pxl_stage(pxl_kargs a)   kernels, histograms, reductions
 *   extern "C" __global__ void pxl_final(pxl_kargs a)   reductions: the ordered combine
 * pxl_kargs is passed by value: images (device pointers), scalars, output, an auxiliary
 * device buffer (reduction partials, histogram bins) and a count. How to launch them is
 * returned in a CudaLaunch.
 */
#ifndef PXL_GEN_CUDA_H
#define PXL_GEN_CUDA_H

#include "ir/ir.h"
#include "util/err.h"
#include "util/strbuf.h"

#define PXL_CUDA_MAX_IMAGES 8
#define PXL_CUDA_MAX_SCALARS 16
#define PXL_CUDA_CHUNKS 1024  /* reduction row chunks (at most): fixed per height, so results are deterministic */
#define PXL_CUDA_BLOCK 256    /* threads per reduction and histogram block */
#define PXL_CUDA_HIST_BLOCKS 512 /* blocks of a counting histogram (at most) */

typedef enum {
  CUDA_GRID_TILES,  /* grid over the output: a block covers bx*px x by*py pixels */
  CUDA_GRID_ROWS,   /* min(H, chunks) blocks of bx threads, each a set of rows */
  CUDA_GRID_ONE     /* one thread */
} CudaGrid;

typedef struct {
  CudaGrid grid;
  unsigned bx, by;  /* threads per block */
  int px, py;       /* CUDA_GRID_TILES: output pixels per thread along x and y */
  int chunks;       /* CUDA_GRID_ROWS: the most blocks */
  unsigned smem;    /* dynamic shared memory in bytes */
  bool final;       /* reductions: pxl_final runs after pxl_stage, on one block of bx threads */
} CudaLaunch;

/* Appends the CUDA translation unit of instance (D, borders); *launch says how to run it. */
int gen_cuda_stage(StrBuf *out, const Decl *D, const Border *borders, CudaLaunch *launch, Err *err);

#endif
