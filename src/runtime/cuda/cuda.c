/*
 * cuda.c - the CUDA backend (see backend.h): stage instances generated as CUDA
 * (codegen/cuda), compiled with NVRTC to PTX for the device's compute capability, loaded
 * with the driver API and launched on the backend's stream.
 *
 * Memory: images live in pitched device allocations (cuMemAllocPitch: rows padded to
 * what the device prefers); exec.c copies host images in and results out, so the stage
 * functions here only ever see device images, and kernels return without waiting.
 * Reductions and histograms are one launch each whose kernel writes the result straight
 * into a pinned host buffer (then one stream synchronisation).
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

#include "codegen/gpu/gen_gpu.h"
#include "runtime/cache.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/gpu/fault.h"
#include "runtime/gpu/gpu_cache.h"
#include "runtime/backend.h"
#include "util/alloc.h"
#include "util/file.h"
#include "util/hash.h"

/* pxl_kargs of the generated code, byte for byte. */
typedef struct {
  void *data;
  int32_t width, height;
  int64_t pitch;
} KImage;
typedef union {
  int64_t i;
  double f;
} KScalar;
typedef struct {
  KImage in[PXL_GPU_MAX_IMAGES];
  KScalar sc[PXL_GPU_MAX_SCALARS];
  KImage out;
  void *aux;
  void *res;
  int64_t n;
} KArgs;

typedef struct CuModule CuModule;
struct CuModule {
  CuModule *next;
  uint64_t key;
  CUmodule mod;
  CUfunction stage;
  GpuLaunch launch;
};

/* A pipeline run seen before: its recording, or that it cannot be recorded. */
typedef struct CuGraph CuGraph;
struct CuGraph {
  CuGraph *next;
  uint64_t key;
  CUgraphExec exec; /* NULL: seen once (record at the next run) */
  bool never;       /* recording failed: always run as usual */
};
#define MAX_GRAPHS 64 /* runs remembered; the oldest is dropped */

/* A zero-initialised device buffer that kernels leave zero again (gen_gpu.h), and
 * pinned host memory for what the kernels hand back. */
typedef struct {
  CUdeviceptr p;
  size_t size;
} Aux;

typedef struct {
  Backend base;
  const CudaApi *api;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  int ordinal, cc; /* compute capability, e.g. 90 */
  size_t pitch_align; /* row pitch of device images: a multiple of this (what cuMemAllocPitch picks) */
  int nvrtc;       /* NVRTC version, major * 100 + minor */
  char name[128], describe[180];
  Cache *cache;    /* NULL: no disk cache (runtime/cache.h) */
  CuModule *mods;
  GpuInstance *instances;
  Aux red, hist;     /* reduction partials, histogram bins */
  void *pinned;      /* results written by kernels */
  size_t pinned_size;
  bool no_pools;     /* the device lacks stream-ordered allocation: plain cuMemAlloc */
  CUmemoryPool pool; /* pxl's own pool, keeping freed memory for reuse; NULL: the default */
  GpuTuner tuner;    /* autotuner choices (gpu_cache.h), PXL_CUDA_TILE_ROWS / _BYTES */
  CuGraph *graphs;   /* recorded pipeline runs, newest first */
  bool no_graphs;    /* PXL_CUDA_GRAPHS=0 */
  unsigned faults;   /* FAULT_* injected by the tests (PXL_FAULT_INJECT) */
} Cuda;

static int cu_fail(const Cuda *cu, CUresult r, const char *what, Err *err) {
  const char *s = NULL;
  if (cu->api->cuGetErrorString) cu->api->cuGetErrorString(r, &s);
  return err_set(err, PXL_EFAULT, "CUDA %s failed on %s: %s (%d)", what, cu->name, s ? s : "unknown error", r);
}

/* PTX for src: from the disk cache (runtime/cache.h: verified entry
 * cuda-smNN-nvrtcNN-KEY.ptx), else NVRTC (then stored). The key covers the source, the
 * architecture and NVRTC's version, which is all PTX depends on (the driver compiles PTX
 * to machine code at load time, with a cache of its own). */
static int get_ptx(Cuda *cu, const char *src, size_t len, char **ptx, Err *err) {
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

static int load_module(Cuda *cu, const Decl *D, const Border *borders, const GpuTile *tile, CuModule **out,
                       Err *err) {
  StrBuf src = {0};
  GpuLaunch launch;
  int rc = gen_gpu_stage(&src, D, borders, GPU_CUDA, tile, &launch, err);
  if (rc) {
    sb_free(&src);
    return rc;
  }
  uint64_t key = hash_bytes(HASH_INIT, src.s, src.len);
  for (CuModule *m = cu->mods; m; m = m->next)
    if (m->key == key) {
      sb_free(&src);
      *out = m;
      return PXL_OK;
    }
  char *ptx = NULL;
  rc = get_ptx(cu, src.s, src.len, &ptx, err);
  sb_free(&src);
  if (rc) return rc;
  CuModule *m = PXL_CALLOC(1, sizeof *m);
  if (!m) {
    PXL_FREE(ptx);
    return err_set(err, PXL_ENOMEM, "out of memory");
  }
  CUresult r = cu->faults & FAULT_LOAD ? 200 /* CUDA_ERROR_INVALID_IMAGE */ : cu->api->cuModuleLoadData(&m->mod, ptx);
  PXL_FREE(ptx);
  if (!r) r = cu->api->cuModuleGetFunction(&m->stage, m->mod, "pxl_stage");
  if (r) {
    if (m->mod) cu->api->cuModuleUnload(m->mod);
    PXL_FREE(m);
    return cu_fail(cu, r, "module load", err);
  }
  m->key = key;
  m->launch = launch;
  m->next = cu->mods;
  cu->mods = m;
  *out = m;
  return PXL_OK;
}

static int load_cb(void *be, const Decl *D, const Border *borders, const GpuTile *tile, GpuLoaded *out, Err *err) {
  CuModule *m = NULL;
  int rc = load_module(be, D, borders, tile, &m, err);
  if (!rc) *out = (GpuLoaded){m, m->key, m->launch.tiled};
  return rc;
}

static int get_instance(Cuda *cu, const Decl *D, const ImgArg *imgs, int w, int h, GpuInstance **out, Err *err) {
  return gpu_instance_get(&cu->instances, &cu->tuner, "CUDA", D, imgs, w, h, load_cb, cu, out, err);
}

/* The scalars and images of a stage in KArgs. */
static void kargs(const Decl *D, const ImgArg *imgs, const Lane *scalars, KArgs *a) {
  memset(a, 0, sizeof *a);
  for (int i = 0; i < D->nimages; i++) {
    const struct pxl_image *img = imgs[i].img;
    a->in[i] = (KImage){img->data, img->width, img->height, (int64_t)img->pitch};
  }
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image) continue;
    if (scalar_is_float(p->type.s)) a->sc[p->scalar_index].f = scalars[p->scalar_index].f;
    else a->sc[p->scalar_index].i = scalars[p->scalar_index].i;
  }
}

static unsigned ceil_div(int64_t a, int64_t b) { return (unsigned)((a + b - 1) / b); }

/* Launches f over a w x h image as L says. */
static int launch(Cuda *cu, CUfunction f, const GpuLaunch *L, int w, int h, KArgs *a, Err *err) {
  unsigned gx = 1, gy = 1;
  if (L->grid == GPU_GRID_TILES) {
    gx = ceil_div(w, (int64_t)L->bx * L->px);
    gy = ceil_div(h, (int64_t)L->by * L->py);
  } else if (L->grid == GPU_GRID_ROWS) {
    gx = (unsigned)(h < L->chunks ? h : L->chunks);
  }
  void *params[] = {a};
  CUresult r = cu->faults & FAULT_LAUNCH ? 719 /* CUDA_ERROR_LAUNCH_FAILED */
                                         : cu->api->cuLaunchKernel(f, gx, gy, 1, L->bx, L->by ? L->by : 1, 1, 0,
                                                                   cu->stream, params, NULL);
  return r ? cu_fail(cu, r, "kernel launch", err) : PXL_OK;
}

/* Aux buffer x of at least n bytes, zero-filled when (re)allocated. */
static int need_aux(Cuda *cu, Aux *x, size_t n, Err *err) {
  if (x->size >= n) return PXL_OK;
  if (x->p) cu->api->cuMemFree_v2(x->p);
  x->p = 0;
  x->size = 0;
  CUresult r = cu->api->cuMemAlloc_v2(&x->p, n);
  if (!r) r = cu->api->cuMemsetD8_v2(x->p, 0, n);
  if (r) return cu_fail(cu, r, "allocation", err);
  x->size = n;
  return PXL_OK;
}

/* The pinned result buffer, at least n bytes. */
static int need_pinned(Cuda *cu, size_t n, Err *err) {
  if (cu->pinned_size >= n) return PXL_OK;
  if (cu->pinned) cu->api->cuMemFreeHost(cu->pinned);
  cu->pinned = NULL;
  cu->pinned_size = 0;
  CUresult r = cu->api->cuMemAllocHost_v2(&cu->pinned, n);
  if (r) return cu_fail(cu, r, "allocation", err);
  cu->pinned_size = n;
  return PXL_OK;
}

/* Waits for the stream: the kernels' results are then in the pinned buffer. */
static int wait(Cuda *cu, Err *err) {
  CUresult r = cu->api->cuStreamSynchronize(cu->stream);
  return r ? cu_fail(cu, r, "run", err) : PXL_OK;
}

/* A kernel run's arguments, for timing candidates. */
typedef struct {
  KArgs *a;
  int w, h;
} Run;

/* gpu_instance_tune's timing: 3 launches after a warm-up, between two events. */
static int time_candidate(void *be, void *module, void *run, double *ms, Err *err) {
  Cuda *cu = be;
  CuModule *m = module;
  Run *k = run;
  CUevent e0 = NULL, e1 = NULL;
  float f = 0;
  CUresult r = cu->api->cuEventCreate(&e0, 0);
  if (!r) r = cu->api->cuEventCreate(&e1, 0);
  int rc = r ? cu_fail(cu, r, "event", err) : launch(cu, m->stage, &m->launch, k->w, k->h, k->a, err);
  if (!rc && (r = cu->api->cuEventRecord(e0, cu->stream))) rc = cu_fail(cu, r, "event", err);
  for (int i = 0; i < 3 && !rc; i++) rc = launch(cu, m->stage, &m->launch, k->w, k->h, k->a, err);
  if (!rc && (r = cu->api->cuEventRecord(e1, cu->stream))) rc = cu_fail(cu, r, "event", err);
  if (!rc && (r = cu->api->cuEventSynchronize(e1))) rc = cu_fail(cu, r, "run", err);
  if (!rc && (r = cu->api->cuEventElapsedTime(&f, e0, e1))) rc = cu_fail(cu, r, "event", err);
  if (e0) cu->api->cuEventDestroy_v2(e0);
  if (e1) cu->api->cuEventDestroy_v2(e1);
  *ms = f;
  return rc;
}

static int cuda_kernel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                       Err *err) {
  Cuda *cu = (Cuda *)be;
  cu->api->cuCtxSetCurrent(cu->ctx);
  GpuInstance *in;
  int rc = get_instance(cu, D, imgs, out->width, out->height, &in, err);
  if (rc) return rc;
  KArgs a;
  kargs(D, imgs, scalars, &a);
  a.out = (KImage){out->data, out->width, out->height, (int64_t)out->pitch};
  Run run = {&a, out->width, out->height};
  if (in->tune && (rc = gpu_instance_tune(&cu->tuner, in, D, load_cb, time_candidate, cu, &run, err))) return rc;
  CuModule *m = in->module;
  return launch(cu, m->stage, &m->launch, out->width, out->height, &a, err);
}

static int cuda_reduce(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, RedResult *res,
                       Err *err) {
  Cuda *cu = (Cuda *)be;
  cu->api->cuCtxSetCurrent(cu->ctx);
  GpuInstance *in;
  int rc = get_instance(cu, D, imgs, imgs[0].img->width, imgs[0].img->height, &in, err);
  CuModule *m = rc ? NULL : in->module;
  if (!rc) rc = need_aux(cu, &cu->red, PXL_GPU_AUX_REDUCE, err);
  if (!rc) rc = need_pinned(cu, 16, err);
  if (rc) return rc;
  KArgs a;
  kargs(D, imgs, scalars, &a);
  a.aux = (void *)(uintptr_t)cu->red.p;
  a.res = cu->pinned;
  rc = launch(cu, m->stage, &m->launch, imgs[0].img->width, imgs[0].img->height, &a, err);
  if (!rc) rc = wait(cu, err);
  if (rc) return rc;
  gpu_reduce_result(cu->pinned, D->type.s, res);
  return PXL_OK;
}

static int cuda_histogram(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, Lane *bins,
                          Err *err) {
  Cuda *cu = (Cuda *)be;
  cu->api->cuCtxSetCurrent(cu->ctx);
  GpuInstance *in;
  size_t n = (size_t)D->nbins * sizeof(Lane);
  int rc = get_instance(cu, D, imgs, imgs[0].img->width, imgs[0].img->height, &in, err);
  CuModule *m = rc ? NULL : in->module;
  if (!rc) rc = need_aux(cu, &cu->hist, n + 16, err);
  if (!rc) rc = need_pinned(cu, n, err);
  if (rc) return rc;
  KArgs a;
  kargs(D, imgs, scalars, &a);
  a.aux = (void *)(uintptr_t)cu->hist.p;
  a.res = cu->pinned;
  rc = launch(cu, m->stage, &m->launch, imgs[0].img->width, imgs[0].img->height, &a, err);
  if (!rc && !m->launch.to_host) { /* bring the bins back, leave them zero */
    CUresult r = cu->api->cuMemcpyDtoHAsync_v2(cu->pinned, cu->hist.p, n, cu->stream);
    if (!r) r = cu->api->cuMemsetD8Async(cu->hist.p, 0, n, cu->stream);
    if (r) rc = cu_fail(cu, r, "copy", err);
  }
  if (!rc) rc = wait(cu, err);
  if (!rc) memcpy(bins, cu->pinned, n);
  return rc;
}

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

static int cuda_copy(Backend *be, struct pxl_image *dst, const struct pxl_image *src, Err *err) {
  Cuda *cu = (Cuda *)be;
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
  /* a host destination is read as soon as we return; a host source may be freed */
  if (!r && (!dst->device || !src->device)) r = cu->api->cuStreamSynchronize(cu->stream);
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
  for (CuModule *m = cu->mods, *n; m; m = n) {
    n = m->next;
    cu->api->cuModuleUnload(m->mod);
    PXL_FREE(m);
  }
  gpu_instances_free(cu->instances);
  gpu_tuner_free(&cu->tuner);
  if (cu->red.p) cu->api->cuMemFree_v2(cu->red.p);
  if (cu->hist.p) cu->api->cuMemFree_v2(cu->hist.p);
  if (cu->pinned) cu->api->cuMemFreeHost(cu->pinned);
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
  gpu_tuner_init(&cu->tuner, cu->cache ? tunes : NULL, "PXL_CUDA_TILE_");
  cu->base.name = "cuda";
  cu->base.kernel = cuda_kernel;
  cu->base.reduce = cuda_reduce;
  cu->base.histogram = cuda_histogram;
  cu->base.free = cuda_free;
  cu->base.image_new = cuda_image_new;
  cu->base.copy = cuda_copy;
  cu->base.sync = cuda_sync;
  cu->base.replay = cuda_replay;
  cu->base.record_end = cuda_record_end;
  cu->base.recorded = cuda_recorded;
  cu->base.describe = cuda_describe;
  const char *graphs = getenv("PXL_CUDA_GRAPHS");
  cu->no_graphs = graphs && !strcmp(graphs, "0");
  cu->faults = fault_injected();
  *out = &cu->base;
  return PXL_OK;
}
