/*
 * cuda_api.h - the CUDA driver API and NVRTC entry points pxl uses, loaded with dlopen on
 * first use (Halide-runtime style): one build runs with or without CUDA, and a missing
 * library is a status, not a crash. Only the declarations pxl needs are written here,
 * as an X-macro list; types are the ABI's (handles are pointers, CUdeviceptr 64-bit).
 */
#ifndef PXL_CUDA_API_H
#define PXL_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pxl/pxl.h"
#include "util/err.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUgraph;
typedef void *CUmemoryPool;
typedef void *CUgraphExec;
typedef uint64_t CUdeviceptr;
typedef int nvrtcResult;
typedef void *nvrtcProgram;

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_STREAM_NON_BLOCKING 1
#define CU_STREAM_CAPTURE_MODE_RELAXED 2
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define CU_EVENT_DISABLE_TIMING 2

/* CUmemPoolProps of the driver API (cuda.h): allocation type, handle types, location
 * (type, id), then fields this code leaves zero. */
typedef struct {
  int allocType;      /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
  int handleTypes;    /* 0: none */
  int locType, locId; /* CU_MEM_LOCATION_TYPE_DEVICE = 1, the device ordinal */
  void *win32SecurityAttributes;
  unsigned char rest[64];
} CudaMemPoolProps;
#define CU_MEMORYTYPE_HOST 1
#define CU_MEMORYTYPE_DEVICE 2

/* CUDA_MEMCPY2D of the driver API (cuda.h), field for field. */
typedef struct {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} CudaMemcpy2D;

/* name in the library, return, parameters */
#define PXL_CUDA_DRIVER_FNS(X)                                                                    \
  X(cuInit, CUresult, (unsigned flags))                                                         \
  X(cuDeviceGetCount, CUresult, (int *count))                                                   \
  X(cuDeviceGet, CUresult, (CUdevice *dev, int ordinal))                                        \
  X(cuDeviceGetName, CUresult, (char *name, int len, CUdevice dev))                             \
  X(cuDeviceGetAttribute, CUresult, (int *value, int attrib, CUdevice dev))                     \
  X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext * ctx, CUdevice dev))                        \
  X(cuDevicePrimaryCtxRelease_v2, CUresult, (CUdevice dev))                                     \
  X(cuCtxSetCurrent, CUresult, (CUcontext ctx))                                                 \
  X(cuCtxSynchronize, CUresult, (void))                                                         \
  X(cuModuleLoadData, CUresult, (CUmodule * mod, const void *image))                            \
  X(cuModuleGetFunction, CUresult, (CUfunction * fn, CUmodule mod, const char *name))           \
  X(cuModuleUnload, CUresult, (CUmodule mod))                                                   \
  X(cuMemAlloc_v2, CUresult, (CUdeviceptr * p, size_t bytes))                                   \
  X(cuMemFree_v2, CUresult, (CUdeviceptr p))                                                    \
  X(cuMemcpyHtoD_v2, CUresult, (CUdeviceptr dst, const void *src, size_t bytes))                \
  X(cuMemcpyDtoH_v2, CUresult, (void *dst, CUdeviceptr src, size_t bytes))                      \
  X(cuMemsetD8_v2, CUresult, (CUdeviceptr dst, unsigned char v, size_t n))                      \
  X(cuMemsetD8Async, CUresult, (CUdeviceptr dst, unsigned char v, size_t n, CUstream s))        \
  X(cuMemAllocPitch_v2, CUresult,                                                               \
    (CUdeviceptr * p, size_t *pitch, size_t width_bytes, size_t height, unsigned elem_bytes))   \
  X(cuMemcpy2DAsync_v2, CUresult, (const CudaMemcpy2D *copy, CUstream s))                       \
  X(cuMemcpyHtoDAsync_v2, CUresult, (CUdeviceptr dst, const void *src, size_t bytes, CUstream s))     \
  X(cuMemcpyDtoHAsync_v2, CUresult, (void *dst, CUdeviceptr src, size_t bytes, CUstream s))     \
  X(cuMemcpyDtoDAsync_v2, CUresult, (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s)) \
  X(cuMemAllocHost_v2, CUresult, (void **p, size_t bytes))                                      \
  X(cuMemAllocAsync, CUresult, (CUdeviceptr * p, size_t bytes, CUstream s))                     \
  X(cuMemFreeAsync, CUresult, (CUdeviceptr p, CUstream s))                                      \
  X(cuMemPoolCreate, CUresult, (CUmemoryPool * pool, const CudaMemPoolProps *props))            \
  X(cuMemPoolDestroy, CUresult, (CUmemoryPool pool))                                            \
  X(cuMemPoolSetAttribute, CUresult, (CUmemoryPool pool, int attr, void *value))                \
  X(cuMemPoolTrimTo, CUresult, (CUmemoryPool pool, size_t keep))                                \
  X(cuMemAllocFromPoolAsync, CUresult, (CUdeviceptr * p, size_t bytes, CUmemoryPool pool, CUstream s))\
  X(cuMemFreeHost, CUresult, (void *p))                                                         \
  X(cuStreamCreate, CUresult, (CUstream * s, unsigned flags))                                   \
  X(cuStreamDestroy_v2, CUresult, (CUstream s))                                                 \
  X(cuStreamSynchronize, CUresult, (CUstream s))                                                \
  X(cuEventCreate, CUresult, (CUevent * e, unsigned flags))                                     \
  X(cuEventRecord, CUresult, (CUevent e, CUstream s))                                           \
  X(cuEventSynchronize, CUresult, (CUevent e))                                                  \
  X(cuEventElapsedTime, CUresult, (float *ms, CUevent start, CUevent end))                      \
  X(cuEventDestroy_v2, CUresult, (CUevent e))                                                   \
  X(cuStreamBeginCapture_v2, CUresult, (CUstream s, int mode))                                  \
  X(cuStreamEndCapture, CUresult, (CUstream s, CUgraph *graph))                                 \
  X(cuGraphInstantiateWithFlags, CUresult, (CUgraphExec * exec, CUgraph graph, unsigned long long flags)) \
  X(cuGraphLaunch, CUresult, (CUgraphExec exec, CUstream s))                                    \
  X(cuGraphDestroy, CUresult, (CUgraph graph))                                                  \
  X(cuGraphExecDestroy, CUresult, (CUgraphExec exec))                                           \
  X(cuLaunchKernel, CUresult,                                                                   \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
     unsigned shmem, CUstream stream, void **params, void **extra))                             \
  X(cuGetErrorString, CUresult, (CUresult err, const char **str))

#define PXL_NVRTC_FNS(X)                                                                          \
  X(nvrtcCreateProgram, nvrtcResult,                                                            \
    (nvrtcProgram * prog, const char *src, const char *name, int nheaders, const char *const *headers, \
     const char *const *include_names))                                                         \
  X(nvrtcCompileProgram, nvrtcResult, (nvrtcProgram prog, int nopts, const char *const *opts))  \
  X(nvrtcGetPTXSize, nvrtcResult, (nvrtcProgram prog, size_t *size))                            \
  X(nvrtcGetPTX, nvrtcResult, (nvrtcProgram prog, char *ptx))                                   \
  X(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram prog, size_t *size))                     \
  X(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram prog, char *log))                            \
  X(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram * prog))                                    \
  X(nvrtcGetErrorString, const char *, (nvrtcResult r))                                         \
  X(nvrtcVersion, nvrtcResult, (int *major, int *minor))

typedef struct {
#define X(name, ret, params) ret(*name) params;
  PXL_CUDA_DRIVER_FNS(X)
  PXL_NVRTC_FNS(X)
#undef X
  bool have_driver, have_nvrtc;
} CudaApi;

/* Loads NVRTC (libnvrtc.so.13/.12/.so, also from /usr/local/cuda/lib64). PXL_EDEVICE with
 * a message when it is not there. Thread-safe; the first call loads. */
int cuda_load_nvrtc(const CudaApi **api, Err *err);
/* Loads NVRTC and the driver (libcuda.so.1) and initialises the driver. */
int cuda_load(const CudaApi **api, Err *err);

/* Compiles CUDA source to PTX for compute capability cc (e.g. 90) with the options pxl
 * uses (-fmad=false: float results equal the interpreter's). *ptx is heap (PXL_FREE). */
int cuda_compile_ptx(const CudaApi *api, const char *src, int cc, char **ptx, Err *err);

#endif
