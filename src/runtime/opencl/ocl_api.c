/*
 * ocl_api.c - loading the OpenCL ICD loader with dlopen (see ocl_api.h).
 *
 * The loader is the vendor-neutral libOpenCL that dispatches to the drivers registered
 * in /etc/OpenCL/vendors (NVIDIA, PoCL, ...); a loader with no driver behind it has no
 * platform, which is reported here so that every caller gets the same reason.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "runtime/opencl/ocl_api.h"
#include "runtime/gpu/fault.h"

static OclApi api;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool tried;
static char why[512];

static void load_locked(void) {
  if (tried) return;
  tried = true;
  static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so", NULL};
  void *h = NULL;
  for (int i = 0; names[i] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    snprintf(why, sizeof why, "the OpenCL ICD loader libOpenCL.so.1 is not installed (%s)", dlerror());
    return;
  }
#define X(name, ret, params)                                                                 \
  api.name = (ret(*) params)dlsym(h, #name);                                               \
  if (!api.name) {                                                                         \
    snprintf(why, sizeof why, "the OpenCL loader lacks %s (OpenCL 1.2 is needed)", #name); \
    return;                                                                                \
  }
  PXL_CL_FNS(X)
#undef X
  cl_uint n = 0;
  cl_int rc = api.clGetPlatformIDs(0, NULL, &n);
  if (rc != CL_SUCCESS || n == 0) {
    char s[32];
    snprintf(why, sizeof why, "no platform (no driver is registered with the loader, see /etc/OpenCL/vendors; %s)",
             rc ? ocl_error_name(rc, s, sizeof s) : "0 platforms");
    return;
  }
  api.loaded = true;
}

int ocl_load(const OclApi **out, Err *err) {
  /* absent, unless a driver is registered for a loader that then does not work */
  int absent = fault_opencl_registered() ? PXL_EFAULT : PXL_EDEVICE;
  if (fault_injected() & FAULT_NOLIB)
    return err_set(err, absent, "OpenCL is not available: libOpenCL.so.1 does not load (PXL_FAULT_INJECT)");
  pthread_mutex_lock(&lock);
  load_locked();
  pthread_mutex_unlock(&lock);
  if (!api.loaded) return err_set(err, absent, "OpenCL is not available: %s", why);
  *out = &api;
  return PXL_OK;
}

const char *ocl_error_name(cl_int rc, char *s, size_t n) {
  switch (rc) {
#define X(name, value) \
  case value:          \
    return #name;
    PXL_CL_ERRORS(X)
#undef X
  }
  snprintf(s, n, "error %d", (int)rc);
  return s;
}
