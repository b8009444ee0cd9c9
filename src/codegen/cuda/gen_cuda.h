/*
 * gen_cuda.h - the CUDA code generator: a stage instance as CUDA C++ for NVRTC.
 *
 * The pixel functions come from the shared C-family emitter (codegen/c/emit.h); this
 * file writes the entry points - how pixels map to threads, per skeleton class:
 *   extern "C" __global__ void pxl_stage(pxl_kargs a)   kernels, histograms, reductions
 * pxl_kargs is passed by value: images (device pointers), scalars, output, an auxiliary
 * device buffer (reduction partials, histogram bins), pinned host memory for results and
 * a count. How to launch them is returned in a CudaLaunch.
 *
 * Reductions: aux holds PXL_CUDA_CHUNKS partial values (8 bytes each), their positions
 * (2 x int32 each) and a zero-initialised counter (PXL_CUDA_AUX_REDUCE bytes in all); the
 * value lands in res[0..8), its position in res[8..16). Counting histograms (to_host):
 * aux holds the int64 bins, zero, then a zero counter; the bins land in res.
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
#define PXL_CUDA_AUX_REDUCE (PXL_CUDA_CHUNKS * 16 + 16)

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
  bool to_host;     /* histograms: the kernel writes the bins to res and resets aux itself */
  bool tiled;       /* the `tile` argument of gen_cuda_stage shapes this entry: tunable */
} CudaLaunch;

/* The shape of a thread's work in the tiled kernel entry (N2P and the like): `rows`
 * output rows (1..8, default 4) of `bytes` bytes of output (4 or 8, default 4; at least
 * one pixel). The runtime's autotuner picks it per kernel, device and image size. */
typedef struct {
  int rows, bytes;
} CudaTile;

/* Appends the CUDA translation unit of instance (D, borders); *launch says how to run it.
 * tile NULL: the default shape. */
int gen_cuda_stage(StrBuf *out, const Decl *D, const Border *borders, const CudaTile *tile, CudaLaunch *launch,
                   Err *err);

#endif
