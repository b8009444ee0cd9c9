/*
 * cuda.c - the CUDA backend (see backend.h): stage instances generated as CUDA
 * (codegen/cuda), compiled with NVRTC to PTX for the device's compute capability, loaded
 * with the driver API, run on device copies of the images.
 *
 * This first version moves every input to the device and the output back on each stage
 * run, and keeps compiled modules in memory only. Keeping pipeline intermediates on the
 * device, pitched allocations, streams, graphs and an on-disk PTX cache come with the
 * performance work of the CUDA issue; correctness is checked today by the differential
 * tests (--device cuda against the interpreter).
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/gen_cuda.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/host/backend.h"
#include "util/alloc.h"
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
  KImage in[PXL_CUDA_MAX_IMAGES];
  KScalar sc[PXL_CUDA_MAX_SCALARS];
  KImage out;
  void *aux;
  int64_t n;
} KArgs;

typedef struct CuModule CuModule;
struct CuModule {
  CuModule *next;
  uint64_t key;
  CUmodule mod;
  CUfunction stage, final;
};

typedef struct {
  Backend base;
  const CudaApi *api;
  CUdevice dev;
  CUcontext ctx;
  int cc;           /* compute capability, e.g. 90 */
  char name[128];
  CuModule *mods;
} Cuda;

static int cu_fail(const Cuda *cu, CUresult r, const char *what, Err *err) {
  const char *s = NULL;
  if (cu->api->cuGetErrorString) cu->api->cuGetErrorString(r, &s);
  return err_set(err, PXL_EDEVICE, "CUDA %s failed on %s: %s (%d)", what, cu->name, s ? s : "unknown error", r);
}

static int get_module(Cuda *cu, const Decl *D, const ImgArg *imgs, CuModule **out, Err *err) {
  Border borders[PXL_CUDA_MAX_IMAGES];
  if (D->nimages > PXL_CUDA_MAX_IMAGES)
    return err_set(err, PXL_EARG, "%s: the CUDA backend takes at most %d images", D->name, PXL_CUDA_MAX_IMAGES);
  for (int i = 0; i < D->nimages; i++) borders[i] = imgs[i].border;
  StrBuf src = {0};
  int rc = gen_cuda_stage(&src, D, borders, err);
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
  rc = cuda_compile_ptx(cu->api, src.s, cu->cc, &ptx, err);
  sb_free(&src);
  if (rc) return rc;
  CuModule *m = PXL_CALLOC(1, sizeof *m);
  if (!m) {
    PXL_FREE(ptx);
    return err_set(err, PXL_ENOMEM, "out of memory");
  }
  CUresult r = cu->api->cuModuleLoadData(&m->mod, ptx);
  PXL_FREE(ptx);
  if (!r) r = cu->api->cuModuleGetFunction(&m->stage, m->mod, "pxl_stage");
  if (!r && D->kind == D_REDUCE) r = cu->api->cuModuleGetFunction(&m->final, m->mod, "pxl_final");
  if (r) {
    if (m->mod) cu->api->cuModuleUnload(m->mod);
    PXL_FREE(m);
    return cu_fail(cu, r, "module load", err);
  }
  m->key = key;
  m->next = cu->mods;
  cu->mods = m;
  *out = m;
  return PXL_OK;
}

static size_t image_bytes(const struct pxl_image *img) {
  return (size_t)(img->height - 1) * img->pitch + (size_t)img->width * img->channels * pxl_type_size(img->type);
}

/* Device copies of the inputs, the scalars, in KArgs; *bufs gets the allocations. */
static int upload(Cuda *cu, const Decl *D, const ImgArg *imgs, const Lane *scalars, KArgs *a, CUdeviceptr *bufs,
                  Err *err) {
  memset(a, 0, sizeof *a);
  for (int i = 0; i < D->nimages; i++) {
    const struct pxl_image *img = imgs[i].img;
    size_t n = image_bytes(img);
    CUresult r = cu->api->cuMemAlloc_v2(&bufs[i], n);
    if (!r) r = cu->api->cuMemcpyHtoD_v2(bufs[i], img->data, n);
    if (r) return cu_fail(cu, r, "upload", err);
    a->in[i] = (KImage){(void *)(uintptr_t)bufs[i], img->width, img->height, (int64_t)img->pitch};
  }
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image) continue;
    if (scalar_is_float(p->type.s)) a->sc[p->scalar_index].f = scalars[p->scalar_index].f;
    else a->sc[p->scalar_index].i = scalars[p->scalar_index].i;
  }
  return PXL_OK;
}

static void release(Cuda *cu, CUdeviceptr *bufs, int n) {
  for (int i = 0; i < n; i++)
    if (bufs[i]) cu->api->cuMemFree_v2(bufs[i]);
}

static int launch(Cuda *cu, CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned by, KArgs *a, Err *err) {
  void *params[] = {a};
  CUresult r = cu->api->cuLaunchKernel(f, gx ? gx : 1, gy ? gy : 1, 1, bx, by, 1, 0, NULL, params, NULL);
  if (!r) r = cu->api->cuCtxSynchronize();
  return r ? cu_fail(cu, r, "kernel launch", err) : PXL_OK;
}

/* Everything a stage run needs before its launches: the module, device copies of the
 * inputs and the scalars in *a, and one more device buffer of `extra` bytes (the output,
 * or the partials or bins) in bufs[D->nimages]. On failure nothing stays allocated. */
static int prepare(Cuda *cu, const Decl *D, const ImgArg *imgs, const Lane *scalars, size_t extra, CuModule **m,
                   KArgs *a, CUdeviceptr *bufs, Err *err) {
  cu->api->cuCtxSetCurrent(cu->ctx);
  int rc = get_module(cu, D, imgs, m, err);
  if (!rc) rc = upload(cu, D, imgs, scalars, a, bufs, err);
  CUresult r;
  if (!rc && (r = cu->api->cuMemAlloc_v2(&bufs[D->nimages], extra))) rc = cu_fail(cu, r, "allocation", err);
  if (rc) release(cu, bufs, D->nimages + 1);
  return rc;
}

static int cuda_kernel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                       Err *err) {
  Cuda *cu = (Cuda *)be;
  CuModule *m;
  CUdeviceptr bufs[PXL_CUDA_MAX_IMAGES + 1] = {0};
  KArgs a;
  size_t n = image_bytes(out);
  int rc = prepare(cu, D, imgs, scalars, n, &m, &a, bufs, err);
  if (rc) return rc;
  a.out = (KImage){(void *)(uintptr_t)bufs[D->nimages], out->width, out->height, (int64_t)out->pitch};
  rc = launch(cu, m->stage, (unsigned)(out->width + 31) / 32, (unsigned)(out->height + 7) / 8, 32, 8, &a, err);
  CUresult r;
  if (!rc && (r = cu->api->cuMemcpyDtoH_v2(out->data, bufs[D->nimages], n))) rc = cu_fail(cu, r, "download", err);
  release(cu, bufs, D->nimages + 1);
  return rc;
}

static int cuda_reduce(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, RedResult *res,
                       Err *err) {
  Cuda *cu = (Cuda *)be;
  CuModule *m;
  CUdeviceptr bufs[PXL_CUDA_MAX_IMAGES + 1] = {0};
  KArgs a;
  /* partials: (CHUNKS + 1) values, then (CHUNKS + 1) positions */
  size_t n = (PXL_CUDA_CHUNKS + 1) * (sizeof(KScalar) + 2 * sizeof(int32_t));
  int rc = prepare(cu, D, imgs, scalars, n, &m, &a, bufs, err);
  if (rc) return rc;
  CUresult r;
  int h = imgs[0].img->height;
  a.aux = (void *)(uintptr_t)bufs[D->nimages];
  a.n = h < PXL_CUDA_CHUNKS ? h : PXL_CUDA_CHUNKS;
  rc = launch(cu, m->stage, (unsigned)a.n, 1, PXL_CUDA_BLOCK, 1, &a, err);
  if (!rc) rc = launch(cu, m->final, 1, 1, 1, 1, &a, err);
  unsigned char host[(PXL_CUDA_CHUNKS + 1) * (sizeof(KScalar) + 2 * sizeof(int32_t))];
  if (!rc && (r = cu->api->cuMemcpyDtoH_v2(host, bufs[D->nimages], n))) rc = cu_fail(cu, r, "download", err);
  if (!rc) {
    KScalar v;
    int32_t pos[2];
    memcpy(&v, host + PXL_CUDA_CHUNKS * sizeof(KScalar), sizeof v);
    memcpy(pos, host + (PXL_CUDA_CHUNKS + 1) * sizeof(KScalar) + 2 * PXL_CUDA_CHUNKS * sizeof(int32_t), sizeof pos);
    res->type = D->type.s;
    if (scalar_is_float(D->type.s)) res->value.f = v.f;
    else res->value.i = v.i;
    res->x = pos[0];
    res->y = pos[1];
  }
  release(cu, bufs, D->nimages + 1);
  return rc;
}

static int cuda_histogram(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, Lane *bins,
                          Err *err) {
  Cuda *cu = (Cuda *)be;
  CuModule *m;
  CUdeviceptr bufs[PXL_CUDA_MAX_IMAGES + 1] = {0};
  KArgs a;
  size_t n = (size_t)D->nbins * sizeof(Lane);
  int rc = prepare(cu, D, imgs, scalars, n, &m, &a, bufs, err);
  if (rc) return rc;
  CUresult r;
  if ((r = cu->api->cuMemsetD8_v2(bufs[D->nimages], 0, n))) rc = cu_fail(cu, r, "memset", err);
  a.aux = (void *)(uintptr_t)bufs[D->nimages];
  int w = imgs[0].img->width, h = imgs[0].img->height;
  if (!rc) {
    if (D->weighted_float) rc = launch(cu, m->stage, 1, 1, 1, 1, &a, err);
    else rc = launch(cu, m->stage, (unsigned)(w + 31) / 32, (unsigned)(h + 7) / 8, 32, 8, &a, err);
  }
  if (!rc && (r = cu->api->cuMemcpyDtoH_v2(bins, bufs[D->nimages], n))) rc = cu_fail(cu, r, "download", err);
  release(cu, bufs, D->nimages + 1);
  return rc;
}

static void cuda_free(Backend *be) {
  Cuda *cu = (Cuda *)be;
  cu->api->cuCtxSetCurrent(cu->ctx);
  for (CuModule *m = cu->mods, *n; m; m = n) {
    n = m->next;
    cu->api->cuModuleUnload(m->mod);
    PXL_FREE(m);
  }
  cu->api->cuDevicePrimaryCtxRelease_v2(cu->dev);
  PXL_FREE(cu);
}

int backend_cuda_new(int ordinal, Backend **out, Err *err) {
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
  int major = 0, minor = 0;
  CUresult r = api->cuDeviceGet(&cu->dev, ordinal);
  if (!r) r = api->cuDeviceGetName(cu->name, sizeof cu->name, cu->dev);
  if (!r) r = api->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->dev);
  if (!r) r = api->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu->dev);
  if (!r) r = api->cuDevicePrimaryCtxRetain(&cu->ctx, cu->dev);
  if (!r) r = api->cuCtxSetCurrent(cu->ctx);
  if (r) {
    snprintf(cu->name, sizeof cu->name, "device %d", ordinal);
    rc = cu_fail(cu, r, "initialisation", err);
    PXL_FREE(cu);
    return rc;
  }
  cu->cc = major * 10 + minor;
  cu->base.name = "cuda";
  cu->base.kernel = cuda_kernel;
  cu->base.reduce = cuda_reduce;
  cu->base.histogram = cuda_histogram;
  cu->base.free = cuda_free;
  *out = &cu->base;
  return PXL_OK;
}
