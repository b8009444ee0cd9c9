/*
 * cuda_internal.h - the CUDA backend's state, shared by its files: cuda.c (the driver of
 * the GPU core, device images, copies, graphs) and cuda_ops.c (the device passes of
 * global operators). Nothing outside src/runtime/cuda includes it.
 */
#ifndef PXL_CUDA_INTERNAL_H
#define PXL_CUDA_INTERNAL_H

#include "runtime/cache.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/gpu/gpu_core.h"

/* A pipeline run seen before: its recording, or that it cannot be recorded. */
typedef struct CuGraph CuGraph;
struct CuGraph {
  CuGraph *next;
  uint64_t key;
  CUgraphExec exec; /* NULL: seen once (record at the next run) */
  bool never;       /* recording failed: always run as usual */
};
#define MAX_GRAPHS 64 /* runs remembered; the oldest is dropped */

/* The device passes' modules (cuda_ops.c): one per variant of ops.cu, loaded at first use:
 * 0-6 distances into each pixel type, 7-13 labels of maps of each pixel type. */
#define CUDA_OPS_VARIANTS 14

typedef struct {
  GpuCore g;       /* first: kernels, reductions, histograms (gpu_core.h) */
  const CudaApi *api;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  int ordinal, cc; /* compute capability, e.g. 90 */
  size_t pitch_align; /* row pitch of device images: a multiple of this (what cuMemAllocPitch picks) */
  int nvrtc;       /* NVRTC version, major * 100 + minor */
  char name[128], describe[180];
  Cache *cache;    /* NULL: no disk cache (runtime/cache.h) */
  bool no_pools;     /* the device lacks stream-ordered allocation: plain cuMemAlloc */
  CUevent test_event; /* the mark of an until test in flight (cuda_mark), made at the first */
  CUmemoryPool pool; /* pxl's own pool, keeping freed memory for reuse; NULL: the default */
  CuGraph *graphs;   /* recorded pipeline runs, newest first */
  bool no_graphs;    /* PXL_CUDA_GRAPHS=0 */
  unsigned faults;   /* FAULT_* injected by the tests (PXL_FAULT_INJECT) */
  CUmodule ops[CUDA_OPS_VARIANTS]; /* cuda_ops.c's modules, NULL until used */
} Cuda;

/* PXL_EFAULT "CUDA <what> failed on <device>: <the driver's message>". */
int cu_fail(const Cuda *cu, CUresult r, const char *what, Err *err);
/* PTX for CUDA source src (len bytes): from the disk cache (runtime/cache.h: verified
 * entry cuda-smNN-nvrtcNN-KEY.ptx), else NVRTC (then stored); *ptx is freed with PXL_FREE. */
int cuda_get_ptx(Cuda *cu, const char *src, size_t len, char **ptx, Err *err);

/* Backend.global (backend.h): global operator `op` (a GlobalOp) on the device. */
int cuda_global(Backend *be, int op, const struct pxl_image *const *maps, struct pxl_image *out, bool *done,
                Err *err);
/* The CUDA source of variant v (< CUDA_OPS_VARIANTS): its element types' definitions,
 * then ops.cu; *len bytes, NUL-terminated, freed with PXL_FREE. NULL: out of memory. */
char *cuda_ops_source(int v, size_t *len);
/* Unloads cuda_ops.c's modules (the backend's free). */
void cuda_ops_free(Cuda *cu);

#endif
