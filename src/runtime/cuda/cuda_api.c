/*
 * cuda_api.c - loading the CUDA driver and NVRTC with dlopen (see cuda_api.h).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtime/cuda/cuda_api.h"
#include "runtime/gpu/fault.h"
#include "util/alloc.h"

static CudaApi api;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool tried_nvrtc, tried_driver;
static char nvrtc_why[512], driver_why[512];

static void *open_first(const char *const *names, char *why, size_t n) {
  for (int i = 0; names[i]; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h) return h;
  }
  snprintf(why, n, "%s not found (%s)", names[0], dlerror());
  return NULL;
}

static void load_nvrtc_locked(void) {
  if (tried_nvrtc) return;
  tried_nvrtc = true;
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                      "/usr/local/cuda/lib64/libnvrtc.so", NULL};
  void *h = open_first(names, nvrtc_why, sizeof nvrtc_why);
  if (!h) return;
#define X(name, ret, params)                                                                 \
  api.name = (ret(*) params)dlsym(h, #name);                                               \
  if (!api.name) {                                                                         \
    snprintf(nvrtc_why, sizeof nvrtc_why, "NVRTC lacks %s", #name);                        \
    return;                                                                                \
  }
  PXL_NVRTC_FNS(X)
#undef X
  api.have_nvrtc = true;
}

/* A CUDA that cannot be used is absent unless an NVIDIA driver's devices are there. */
static int absent_or_fault(void) { return fault_nvidia_present() ? PXL_EFAULT : PXL_EDEVICE; }

int cuda_load_nvrtc(const CudaApi **out, Err *err) {
  pthread_mutex_lock(&lock);
  load_nvrtc_locked();
  pthread_mutex_unlock(&lock);
  if (!api.have_nvrtc) return err_set(err, absent_or_fault(), "CUDA is not available: %s", nvrtc_why);
  *out = &api;
  return PXL_OK;
}

int cuda_load(const CudaApi **out, Err *err) {
  if (fault_injected() & FAULT_NOLIB)
    return err_set(err, absent_or_fault(), "CUDA is not available: libcuda.so.1 does not load (PXL_FAULT_INJECT)");
  pthread_mutex_lock(&lock);
  if (!tried_driver) {
    tried_driver = true;
    static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
    void *h = open_first(names, driver_why, sizeof driver_why);
    bool ok = h != NULL;
#define X(name, ret, params)                                                                 \
  if (ok) {                                                                                \
    api.name = (ret(*) params)dlsym(h, #name);                                             \
    if (!api.name) {                                                                       \
      snprintf(driver_why, sizeof driver_why, "the CUDA driver lacks %s", #name);          \
      ok = false;                                                                          \
    }                                                                                      \
  }
    PXL_CUDA_DRIVER_FNS(X)
#undef X
    if (ok) {
      CUresult r = api.cuInit(0);
      int n = 0;
      if (r == 0) r = api.cuDeviceGetCount(&n);
      if (r != 0 || n == 0) {
        snprintf(driver_why, sizeof driver_why, "no CUDA device (cuInit/cuDeviceGetCount: error %d, %d devices)", r, n);
        ok = false;
      }
    }
    api.have_driver = ok;
  }
  /* NVRTC (tens of megabytes: 5 ms to map when cached, 150 ms from disk) only beside a
   * device: --device auto on a machine without one pays for the driver's absence alone */
  if (api.have_driver) load_nvrtc_locked();
  pthread_mutex_unlock(&lock);
  if (!api.have_driver) return err_set(err, absent_or_fault(), "CUDA is not available: %s", driver_why);
  if (!api.have_nvrtc) return err_set(err, absent_or_fault(), "CUDA is not available: %s", nvrtc_why);
  *out = &api;
  return PXL_OK;
}

int cuda_compile_ptx(const CudaApi *a, const char *src, int cc, char **ptx, Err *err) {
  nvrtcProgram prog;
  nvrtcResult r = a->nvrtcCreateProgram(&prog, src, "pxl_stage.cu", 0, NULL, NULL);
  if (r) return err_set(err, PXL_EBACKEND, "NVRTC: %s", a->nvrtcGetErrorString(r));
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d", cc);
  const char *opts[] = {arch, "-fmad=false", "--std=c++17", "-default-device", "-w"};
  r = a->nvrtcCompileProgram(prog, 5, opts);
  if (r) {
    size_t n = 0;
    a->nvrtcGetProgramLogSize(prog, &n);
    char log[1500] = "";
    char *full = PXL_MALLOC(n + 1);
    if (full) {
      a->nvrtcGetProgramLog(prog, full);
      snprintf(log, sizeof log, "%s", full);
      PXL_FREE(full);
    }
    a->nvrtcDestroyProgram(&prog);
    return err_set(err, PXL_EBACKEND, "NVRTC failed on generated CUDA (%s):\n%s", a->nvrtcGetErrorString(r), log);
  }
  size_t n = 0;
  a->nvrtcGetPTXSize(prog, &n);
  char *p = PXL_MALLOC(n + 1);
  if (!p) {
    a->nvrtcDestroyProgram(&prog);
    return err_set(err, PXL_ENOMEM, "out of memory");
  }
  a->nvrtcGetPTX(prog, p);
  p[n] = 0;
  a->nvrtcDestroyProgram(&prog);
  *ptx = p;
  return PXL_OK;
}
