/*
 * cuda.c - the CUDA backend (see backend.h): the CUDA driver of the GPU core
 * (runtime/gpu/gpu_core.h, which runs kernels, reductions and histograms) and the rest
 * of the backend. Stage instances are generated as CUDA (codegen/gpu), compiled with
 * NVRTC to PTX for the device's compute capability, loaded with the driver API and
 * launched on the backend's stream.
 *
 * Memory: images live in pitched device allocations (cuMemAllocPitch: rows padded to
 * what the device prefers); exec.c copies host images in and results out, so the stage
 * functions here only ever see device images, and kernels return without waiting.
 * Reductions and histograms are one launch each whose kernel writes the result straight
 * into a pinned host buffer, the core's result buffer (then one stream synchronisation).
 *
 * Pipelines on device images are recorded as CUDA graphs (stream capture) at their
 * second run with the same key (exec.c: run_key) and replayed from the third: one graph
 * launch instead of a launch per stage (PXL_CUDA_GRAPHS=0 turns this off).
 *
 * Compiled code: an instance (program, entry, borders) is remembered in memory; its
 * PTX is cached on disk per device architecture and NVRTC version, under the key of the
 * generated source (cuda-smNN-nvrtcNN-KEY.ptx, verified before use: runtime/cache.h), so
 * a second process skips NVRTC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/cuda_internal.h"
#include "runtime/gpu/fault.h"
#include "runtime/gpu/gpu_core.h"
#include "runtime/backend.h"
#include "util/alloc.h"
#include "util/file.h"
#include "util/hash.h"

int cu_fail(const Cuda *cu, CUresult r, const char *what, Err *err) {
  const char *s = NULL;
  if (cu->api->cuGetErrorString) cu->api->cuGetErrorString(r, &s);
  return err_set(err, PXL_EFAULT, "CUDA %s failed on %s: %s (%d)", what, cu->name, s ? s : "unknown error", r);
}

/* The key covers the source, the architecture and NVRTC's version, which is all PTX
 * depends on (the driver compiles PTX to machine code at load time, with a cache of its
 * own). */
int cuda_get_ptx(Cuda *cu, const char *src, size_t len, char **ptx, Err *err) {
  if (cu->faults & FAULT_BUILD) /* before the cache: a build that fails fails every time */
    return err_set(err, PXL_EBACKEND, "NVRTC failed on generated CUDA (PXL_FAULT_INJECT)");
  CacheId id = {0, hash_bytes(HASH_INIT, src, len)};
  id.key = hash_bytes(hash_str(HASH_INIT, CACHE_FORMAT), &id.source, sizeof id.source);
  id.key = hash_bytes(hash_bytes(id.key, &cu->cc, sizeof cu->cc), &cu->nvrtc, sizeof cu->nvrtc);
  char name[96];
  snprintf(name, sizeof name, "cuda-sm%d-nvrtc%d-%016llx.ptx", cu->cc, cu->nvrtc, (unsigned long long)id.key);
  size_t n = 0;
  if (cu->cache && cache_get(cu->cache, name, id, ptx, &n)) return PXL_OK; /* NUL-terminated */
  int rc = cuda_compile_ptx(cu->api, src, cu->cc, ptx, err);
  if (!rc && cu->cache) cache_put(cu->cache, name, id, *ptx, strlen(*ptx)); /* a failed write only costs time */
  return rc;
}

/* ---- the driver of the GPU core (gpu_core.h) ---- */

static void cuda_enter(GpuCore *g) {
  Cuda *cu = (Cuda *)g;
  cu->api->cuCtxSetCurrent(cu->ctx);
}

/* PTX for src (get_ptx), loaded as a module with its entry point pxl_stage. */
static int cuda_load_module(GpuCore *g, const Decl *D, const char *src, size_t len, void **prog, void **fn,
                            Err *err) {
  Cuda *cu = (Cuda *)g;
  (void)D;
  char *ptx = NULL;
  int rc = cuda_get_ptx(cu, src, len, &ptx, err);
  if (rc) return rc;
  CUmodule mod = NULL;
  CUfunction stage = NULL;
  CUresult r = cu->faults & FAULT_LOAD ? 200 /* CUDA_ERROR_INVALID_IMAGE */ : cu->api->cuModuleLoadData(&mod, ptx);
  PXL_FREE(ptx);
  if (!r) r = cu->api->cuModuleGetFunction(&stage, mod, "pxl_stage");
  if (r) {
    if (mod) cu->api->cuModuleUnload(mod);
    return cu_fail(cu, r, "module load", err);
  }
  *prog = mod;
  *fn = stage;
  return PXL_OK;
}

static void cuda_unload(GpuCore *g, void *prog, void *fn) {
  (void)fn;
  ((Cuda *)g)->api->cuModuleUnload(prog);
}

static int cuda_launch(GpuCore *g, const GpuModule *m, size_t gx, size_t gy, const GpuArgs *a, Err *err) {
  Cuda *cu = (Cuda *)g;
  const GpuLaunch *L = &m->launch;
  void *params[] = {(void *)&a->a};
  CUresult r = cu->faults & FAULT_LAUNCH ? 719 /* CUDA_ERROR_LAUNCH_FAILED */
                                         : cu->api->cuLaunchKernel(m->fn, (unsigned)gx, (unsigned)gy, 1, L->bx,
                                                                   L->by ? L->by : 1, 1, 0, cu->stream, params, NULL);
  return r ? cu_fail(cu, r, "kernel launch", err) : PXL_OK;
}

/* Aux buffers (and the array parameters' buffer): device memory, zero-filled; the result
 * buffer: pinned host memory that the kernels write directly. */
static int cuda_alloc(GpuCore *g, GpuBuf *b, size_t n, Err *err) {
  Cuda *cu = (Cuda *)g;
  CUresult r;
  if (b->result) {
    if (b->p) cu->api->cuMemFreeHost(b->p);
    b->p = NULL;
    b->size = 0;
    r = cu->api->cuMemAllocHost_v2(&b->p, n);
  } else {
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)b->p;
    if (p) cu->api->cuMemFree_v2(p);
    b->p = NULL;
    b->size = 0;
    p = 0;
    r = cu->api->cuMemAlloc_v2(&p, n);
    b->p = (void *)(uintptr_t)p;
    /* zeroed on the backend's stream, so before the launches and uploads queued after it
     * (the legacy stream's cuMemsetD8 is not ordered with a non-blocking stream) */
    if (!r) r = cu->api->cuMemsetD8Async(p, 0, n, cu->stream);
  }
  if (r) return cu_fail(cu, r, "allocation", err);
  b->size = n;
  return PXL_OK;
}

static void cuda_release(GpuCore *g, GpuBuf *b) {
  Cuda *cu = (Cuda *)g;
  if (b->result) cu->api->cuMemFreeHost(b->p);
  else cu->api->cuMemFree_v2((CUdeviceptr)(uintptr_t)b->p);
}

/* Waits for the stream: the kernels' results are then in the pinned buffer. */
static int wait(Cuda *cu, Err *err) {
  CUresult r = cu->api->cuStreamSynchronize(cu->stream);
  return r ? cu_fail(cu, r, "run", err) : PXL_OK;
}

/* Bins in an aux buffer come back through the pinned result buffer (the core made it at
 * least n bytes), queued before the one wait. */
static int cuda_fetch(GpuCore *g, GpuBuf *b, size_t n, bool rezero, void *dst, const char *name, Err *err) {
  Cuda *cu = (Cuda *)g;
  (void)name;
  if (!b->result) {
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)b->p;
    CUresult r = cu->api->cuMemcpyDtoHAsync_v2(g->res.p, p, n, cu->stream);
    if (!r && rezero) r = cu->api->cuMemsetD8Async(p, 0, n, cu->stream);
    if (r) return cu_fail(cu, r, "copy", err);
  }
  int rc = wait(cu, err);
  if (!rc) memcpy(dst, g->res.p, n);
  return rc;
}

/* Queued on the backend's stream, so after the kernels that read the previous values.
 * src is pageable memory: the driver stages it before the call returns (CUDA's API
 * synchronisation rules for pageable host-to-device copies), so it may be freed then. */
static int cuda_upload(GpuCore *g, GpuBuf *b, const void *src, size_t n, Err *err) {
  Cuda *cu = (Cuda *)g;
  CUresult r = cu->api->cuMemcpyHtoDAsync_v2((CUdeviceptr)(uintptr_t)b->p, src, n, cu->stream);
  return r ? cu_fail(cu, r, "copy", err) : PXL_OK;
}

static int cuda_copy_buf(GpuCore *g, GpuBuf *dst, size_t at, const GpuBuf *src, size_t n, Err *err) {
  Cuda *cu = (Cuda *)g;
  CUresult r = cu->api->cuMemcpyDtoDAsync_v2((CUdeviceptr)(uintptr_t)dst->p + at, (CUdeviceptr)(uintptr_t)src->p, n,
                                             cu->stream);
  return r ? cu_fail(cu, r, "copy", err) : PXL_OK;
}

/* gpu_instance_tune's timing: 3 launches after a warm-up, between two events. */
static int cuda_time(GpuCore *g, const GpuModule *m, int w, int h, const GpuArgs *a, double *ms, Err *err) {
  Cuda *cu = (Cuda *)g;
  CUevent e0 = NULL, e1 = NULL;
  float f = 0;
  CUresult r = cu->api->cuEventCreate(&e0, 0);
  if (!r) r = cu->api->cuEventCreate(&e1, 0);
  int rc = r ? cu_fail(cu, r, "event", err) : gpu_core_launch(g, m, w, h, a, err);
  if (!rc && (r = cu->api->cuEventRecord(e0, cu->stream))) rc = cu_fail(cu, r, "event", err);
  for (int i = 0; i < 3 && !rc; i++) rc = gpu_core_launch(g, m, w, h, a, err);
  if (!rc && (r = cu->api->cuEventRecord(e1, cu->stream))) rc = cu_fail(cu, r, "event", err);
  if (!rc && (r = cu->api->cuEventSynchronize(e1))) rc = cu_fail(cu, r, "run", err);
  if (!rc && (r = cu->api->cuEventElapsedTime(&f, e0, e1))) rc = cu_fail(cu, r, "event", err);
  if (e0) cu->api->cuEventDestroy_v2(e0);
  if (e1) cu->api->cuEventDestroy_v2(e1);
  *ms = f;
  return rc;
}

/* The mark of an until test in flight: an event recorded on the stream. */
static int cuda_mark(GpuCore *g, Err *err) {
  Cuda *cu = (Cuda *)g;
  CUresult r = cu->test_event ? 0 : cu->api->cuEventCreate(&cu->test_event, CU_EVENT_DISABLE_TIMING);
  if (!r) r = cu->api->cuEventRecord(cu->test_event, cu->stream);
  return r ? cu_fail(cu, r, "event", err) : PXL_OK;
}

static int cuda_wait_mark(GpuCore *g, Err *err) {
  Cuda *cu = (Cuda *)g;
  CUresult r = cu->api->cuEventSynchronize(cu->test_event);
  return r ? cu_fail(cu, r, "run", err) : PXL_OK;
}

static const GpuDriver cuda_driver = {
    .name = "CUDA",
    .dialect = GPU_CUDA,
    .enter = cuda_enter,
    .load = cuda_load_module,
    .unload = cuda_unload,
    .launch = cuda_launch,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .fetch = cuda_fetch,
    .upload = cuda_upload,
    .copy_buf = cuda_copy_buf,
    .time = cuda_time,
    .mark = cuda_mark,
    .wait_mark = cuda_wait_mark,
};

/* ---- recorded pipeline runs (backend.h: replay) ---- */

static void graph_free(Cuda *cu, CuGraph *g) {
  if (g->exec) cu->api->cuGraphExecDestroy(g->exec);
  PXL_FREE(g);
}

static CuGraph *graph_find(Cuda *cu, uint64_t key) {
  for (CuGraph *g = cu->graphs; g; g = g->next)
    if (g->key == key) return g;
  return NULL;
}

static int cuda_replay(Backend *be, uint64_t key, int *state, Err *err) {
  Cuda *cu = (Cuda *)be;
  *state = GRAPH_NONE;
  if (cu->no_graphs) return PXL_OK;
  cu->api->cuCtxSetCurrent(cu->ctx);
  CuGraph *g = graph_find(cu, key);
  if (!g) { /* first run: as usual (compiles, tunes); remembered */
    int n = 0;
    for (CuGraph **p = &cu->graphs; *p; p = &(*p)->next)
      if (++n == MAX_GRAPHS) {
        graph_free(cu, *p);
        *p = NULL;
        break;
      }
    if (!(g = PXL_CALLOC(1, sizeof *g))) return PXL_OK; /* out of memory: just not recorded */
    *g = (CuGraph){cu->graphs, key, NULL, false};
    cu->graphs = g;
    return PXL_OK;
  }
  if (g->never) return PXL_OK;
  if (g->exec) {
    CUresult r = cu->api->cuGraphLaunch(g->exec, cu->stream);
    if (r) return cu_fail(cu, r, "graph launch", err);
    *state = GRAPH_REPLAYED;
    return PXL_OK;
  }
  if (cu->api->cuStreamBeginCapture_v2(cu->stream, CU_STREAM_CAPTURE_MODE_RELAXED)) g->never = true;
  else *state = GRAPH_RECORD;
  return PXL_OK;
}

static bool cuda_record_end(Backend *be, uint64_t key, bool ok) {
  Cuda *cu = (Cuda *)be;
  cu->api->cuCtxSetCurrent(cu->ctx);
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  CuGraph *g = graph_find(cu, key);
  CUresult r = cu->api->cuStreamEndCapture(cu->stream, &graph);
  if (!r && ok && graph) r = cu->api->cuGraphInstantiateWithFlags(&exec, graph, 0);
  if (graph) cu->api->cuGraphDestroy(graph);
  if (!r && exec && g) r = cu->api->cuGraphLaunch(exec, cu->stream);
  if (r || !ok || !exec || !g) { /* e.g. a stage that synchronises: run as usual from now on */
    if (exec) cu->api->cuGraphExecDestroy(exec);
    if (g) g->never = true;
    return false; /* the usual run that follows reports a real failure */
  }
  g->exec = exec;
  return true;
}

/* ---- device images ---- */

/* Device memory is stream-ordered (cuMemAllocFromPoolAsync / cuMemFreeAsync on the
 * backend's stream): an intermediate freed while a queued kernel still reads it stays
 * valid until that kernel is done. The pool is pxl's own and keeps what is freed (the
 * default pool gives memory back at every synchronisation, and mapping it again cost a
 * five-stage pipeline at 8192 x 8192 more than its kernels); it is trimmed when an
 * allocation fails, and destroyed with the backend. */
static void release_image(struct pxl_image *img) {
  Cuda *cu = img->device;
  cu->api->cuCtxSetCurrent(cu->ctx);
  CUdeviceptr p = (CUdeviceptr)(uintptr_t)img->alloc;
  if (cu->no_pools) { /* queued kernels may still read it */
    cu->api->cuStreamSynchronize(cu->stream);
    cu->api->cuMemFree_v2(p);
  } else {
    cu->api->cuMemFreeAsync(p, cu->stream);
  }
}

static int cuda_image_new(Backend *be, int w, int h, pxl_type t, int channels, bool zero, struct pxl_image **out,
                          Err *err) {
  Cuda *cu = (Cuda *)be;
  *out = NULL;
  int rc = image_check_dims(w, h, t, channels, err);
  if (rc) return rc;
  cu->api->cuCtxSetCurrent(cu->ctx);
  struct pxl_image *img = PXL_CALLOC(1, sizeof *img);
  if (!img) return err_set(err, PXL_ENOMEM, "out of memory");
  *img = (struct pxl_image){.width = w, .height = h, .channels = channels, .type = t};
  size_t pitch = (image_row_bytes(img) + cu->pitch_align - 1) / cu->pitch_align * cu->pitch_align;
  CUdeviceptr p = 0;
  CUresult r = 801; /* CUDA_ERROR_NOT_SUPPORTED */
  size_t bytes = pitch * (size_t)h;
  if (cu->pool) {
    r = cu->api->cuMemAllocFromPoolAsync(&p, bytes, cu->pool, cu->stream);
    if (r == 2) { /* out of memory: give the pool's free memory back, once */
      cu->api->cuStreamSynchronize(cu->stream);
      cu->api->cuMemPoolTrimTo(cu->pool, 0);
      r = cu->api->cuMemAllocFromPoolAsync(&p, bytes, cu->pool, cu->stream);
    }
  } else if (!cu->no_pools && (r = cu->api->cuMemAllocAsync(&p, bytes, cu->stream)) == 801) {
    cu->no_pools = true;
  }
  if (cu->no_pools) r = cu->api->cuMemAlloc_v2(&p, bytes);
  if (!r && zero) r = cu->api->cuMemsetD8Async(p, 0, bytes, cu->stream);
  if (r) {
    if (p && cu->no_pools) cu->api->cuMemFree_v2(p);
    else if (p) cu->api->cuMemFreeAsync(p, cu->stream);
    PXL_FREE(img);
    return r == 2 ? err_set(err, PXL_ENOMEM, "out of device memory for a %dx%d %s image on %s", w, h,
                            pxl_type_name(t), cu->name)
                  : cu_fail(cu, r, "allocation", err);
  }
  img->pitch = pitch;
  img->data = img->alloc = (void *)(uintptr_t)p;
  img->device = cu;
  img->release = release_image;
  *out = img;
  return PXL_OK;
}

/* Page-locked host images: the driver's API table is the process's (loaded once, never
 * unloaded), so the release needs nothing of the backend. */
static const CudaApi *host_api;

static void release_host(struct pxl_image *img) { host_api->cuMemFreeHost(img->alloc); }

static int cuda_host_new(Backend *be, int w, int h, pxl_type t, int channels, struct pxl_image **out, Err *err) {
  Cuda *cu = (Cuda *)be;
  *out = NULL;
  int rc = image_check_dims(w, h, t, channels, err);
  if (rc) return rc;
  cu->api->cuCtxSetCurrent(cu->ctx);
  struct pxl_image *img = PXL_CALLOC(1, sizeof *img);
  if (!img) return err_set(err, PXL_ENOMEM, "out of memory");
  *img = (struct pxl_image){.width = w, .height = h, .channels = channels, .type = t};
  size_t pitch = (image_row_bytes(img) + 63) / 64 * 64;
  void *p = NULL;
  CUresult r = cu->api->cuMemAllocHost_v2(&p, pitch * (size_t)h);
  if (r) {
    PXL_FREE(img);
    return r == 2 ? err_set(err, PXL_ENOMEM, "out of page-locked host memory for a %dx%d %s image", w, h,
                            pxl_type_name(t))
                  : cu_fail(cu, r, "page-locked allocation", err);
  }
  memset(p, 0, pitch * (size_t)h);
  host_api = cu->api;
  img->pitch = pitch;
  img->data = img->alloc = p;
  img->release = release_host;
  img->pinned = true;
  *out = img;
  return PXL_OK;
}

static int copy_2d(Cuda *cu, struct pxl_image *dst, const struct pxl_image *src, bool wait, Err *err);

static int cuda_copy(Backend *be, struct pxl_image *dst, const struct pxl_image *src, Err *err) {
  /* a host destination is read as soon as we return; a host source may be freed */
  return copy_2d((Cuda *)be, dst, src, !dst->device || !src->device, err);
}

static int cuda_upload_image(Backend *be, struct pxl_image *dst, const struct pxl_image *src, Err *err) {
  if (!src->pinned || src->device || !dst->device) return cuda_copy(be, dst, src, err);
  return copy_2d((Cuda *)be, dst, src, false, err); /* DMA from page-locked memory, queued */
}

static int copy_2d(Cuda *cu, struct pxl_image *dst, const struct pxl_image *src, bool wait, Err *err) {
  cu->api->cuCtxSetCurrent(cu->ctx);
  CudaMemcpy2D c = {0};
  c.srcMemoryType = src->device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  c.srcHost = src->data;
  c.srcDevice = (CUdeviceptr)(uintptr_t)src->data;
  c.srcPitch = src->pitch;
  c.dstMemoryType = dst->device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  c.dstHost = dst->data;
  c.dstDevice = (CUdeviceptr)(uintptr_t)dst->data;
  c.dstPitch = dst->pitch;
  c.WidthInBytes = image_row_bytes(src);
  c.Height = (size_t)src->height;
  CUresult r = cu->api->cuMemcpy2DAsync_v2(&c, cu->stream);
  if (!r && wait) r = cu->api->cuStreamSynchronize(cu->stream);
  return r ? cu_fail(cu, r, "copy", err) : PXL_OK;
}

static int cuda_sync(Backend *be, Err *err) {
  Cuda *cu = (Cuda *)be;
  cu->api->cuCtxSetCurrent(cu->ctx);
  CUresult r = cu->api->cuStreamSynchronize(cu->stream);
  return r ? cu_fail(cu, r, "run", err) : PXL_OK;
}

static void cuda_free(Backend *be) {
  Cuda *cu = (Cuda *)be;
  cu->api->cuCtxSetCurrent(cu->ctx);
  cu->api->cuStreamSynchronize(cu->stream);
  for (CuGraph *g = cu->graphs, *n; g; g = n) {
    n = g->next;
    graph_free(cu, g);
  }
  gpu_core_free(&cu->g); /* modules, instances, tuner, aux and result buffers */
  cuda_ops_free(cu);
  if (cu->test_event) cu->api->cuEventDestroy_v2(cu->test_event);
  cu->api->cuStreamDestroy_v2(cu->stream);
  if (cu->pool) cu->api->cuMemPoolDestroy(cu->pool); /* after the stream: its frees are done */
  cu->api->cuDevicePrimaryCtxRelease_v2(cu->dev);
  cache_free(cu->cache);
  PXL_FREE(cu);
}

static const char *cuda_describe(Backend *be) { return ((Cuda *)be)->describe; }

static int cuda_recorded(const Backend *be) {
  int n = 0;
  for (const CuGraph *g = ((const Cuda *)be)->graphs; g; g = g->next) n += g->exec != NULL;
  return n;
}

int backend_cuda_new(int ordinal, const char *cache_dir, Warn *warn, Backend **out, Err *err) {
  const CudaApi *api;
  int rc = cuda_load(&api, err);
  if (rc) return rc;
  int count = 0;
  api->cuDeviceGetCount(&count);
  if (ordinal < 0 || ordinal >= count)
    return err_set(err, PXL_EDEVICE, "no CUDA device %d (this machine has %d)", ordinal, count);
  Cuda *cu = PXL_CALLOC(1, sizeof *cu);
  if (!cu) return err_set(err, PXL_ENOMEM, "out of memory");
  cu->api = api;
  cu->ordinal = ordinal;
  snprintf(cu->name, sizeof cu->name, "device %d", ordinal);
  int major = 0, minor = 0, vmaj = 0, vmin = 0;
  CUresult r = api->cuDeviceGet(&cu->dev, ordinal);
  if (!r) r = api->cuDeviceGetName(cu->name, sizeof cu->name, cu->dev);
  if (!r) r = api->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->dev);
  if (!r) r = api->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu->dev);
  if (!r) r = api->cuDevicePrimaryCtxRetain(&cu->ctx, cu->dev);
  if (!r) r = api->cuCtxSetCurrent(cu->ctx);
  if (!r) r = api->cuStreamCreate(&cu->stream, CU_STREAM_NON_BLOCKING);
  if (r) {
    rc = cu_fail(cu, r, "initialisation", err);
    if (cu->ctx) api->cuDevicePrimaryCtxRelease_v2(cu->dev);
    PXL_FREE(cu);
    return rc;
  }
  /* the pitch the driver prefers: that of a one-byte-wide pitched allocation */
  CUdeviceptr probe = 0;
  if (!api->cuMemAllocPitch_v2(&probe, &cu->pitch_align, 1, 2, 16)) api->cuMemFree_v2(probe);
  if (cu->pitch_align < 16 || (cu->pitch_align & (cu->pitch_align - 1))) cu->pitch_align = 512;
  /* a pool of our own that keeps freed memory (else the default pool, or none) */
  CudaMemPoolProps props = {.allocType = 1, .locType = 1, .locId = ordinal};
  uint64_t keep_all = UINT64_MAX;
  if (api->cuMemPoolCreate(&cu->pool, &props)) {
    cu->pool = NULL;
  } else if (api->cuMemPoolSetAttribute(cu->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all)) {
    api->cuMemPoolDestroy(cu->pool);
    cu->pool = NULL;
  }
  api->nvrtcVersion(&vmaj, &vmin);
  cu->nvrtc = vmaj * 100 + vmin;
  cu->cc = major * 10 + minor;
  snprintf(cu->describe, sizeof cu->describe, "cuda:%d (%s)", ordinal, cu->name);
  Err no_cache = {0};
  if (cache_open(cache_dir, warn, &cu->cache, &no_cache))
    warn_add(warn, "CUDA kernels are not cached: %s", no_cache.msg);
  char tunes[4400];
  snprintf(tunes, sizeof tunes, "%s/cuda-tune-sm%d.txt", cu->cache ? cache_dir_in_use(cu->cache) : "", cu->cc);
  gpu_tuner_init(&cu->g.tuner, cu->cache ? tunes : NULL, "PXL_CUDA_TILE_");
  gpu_core_init(&cu->g, &cuda_driver);
  cu->g.base.name = "cuda";
  cu->g.base.free = cuda_free;
  cu->g.base.image_new = cuda_image_new;
  cu->g.base.host_new = cuda_host_new;
  cu->g.base.upload = cuda_upload_image;
  cu->g.base.copy = cuda_copy;
  cu->g.base.sync = cuda_sync;
  cu->g.base.replay = cuda_replay;
  cu->g.base.record_end = cuda_record_end;
  cu->g.base.recorded = cuda_recorded;
  cu->g.base.describe = cuda_describe;
  cu->g.base.global = cuda_global;
  const char *graphs = getenv("PXL_CUDA_GRAPHS");
  cu->no_graphs = graphs && !strcmp(graphs, "0");
  cu->faults = fault_injected();
  *out = &cu->g.base;
  return PXL_OK;
}
