/*
 * backends.c - the table of backends: their device strings and how each is opened.
 *
 * The API knows backends only through this table (see backend.h): it parses a device
 * string into a row and its numbers, opens rows on demand, and for "auto" tries the rows
 * with an auto_rank in that order. Adding a backend is a folder under src/runtime (its
 * Backend implementation) plus one row here.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "pxl/pxl.h"
#include "runtime/backend.h"

/* The host threads of the global operators' passes (Backend.nthreads), for every backend. */
static int opened(int rc, const BackendEnv *env, Backend **out) {
  if (!rc && *out) (*out)->nthreads = env->nthreads;
  return rc;
}

static int open_ref(const int *nums, const BackendEnv *env, Backend **out, Err *err) {
  *out = backend_ref_new();
  if (*out) (*out)->reference = true;
  return *out ? PXL_OK : err_set(err, PXL_ENOMEM, "out of memory");
}

static int open_cpu(const int *nums, const BackendEnv *env, Backend **out, Err *err) {
  *out = backend_cpu_new(env->cache_dir, env->nthreads, env->warn);
  return *out ? opened(PXL_OK, env, out) : err_set(err, PXL_ENOMEM, "out of memory");
}

static int open_cuda(const int *nums, const BackendEnv *env, Backend **out, Err *err) {
  return opened(backend_cuda_new(nums[0], env->cache_dir, env->warn, out, err), env, out);
}

static int open_opencl(const int *nums, const BackendEnv *env, Backend **out, Err *err) {
  return opened(backend_opencl_new(nums[0], nums[1], env->cache_dir, env->warn, out, err), env, out);
}

const BackendKind backend_kinds[] = {
    /* name     forms                          nums  defaults  auto  open */
    {"cpu", "cpu", 0, {0, 0}, 2, open_cpu},
    {"ref", "ref", 0, {0, 0}, 3, open_ref},
    {"cuda", "cuda or cuda:N", 1, {0, 0}, 1, open_cuda},
    {"opencl", "opencl or opencl:P:D", 2, {-1, -1}, 0, open_opencl},
};
const int backend_nkinds = (int)(sizeof backend_kinds / sizeof *backend_kinds);

const char *backend_forms(void) {
  static char forms[256];
  if (!forms[0]) {
    size_t n = (size_t)snprintf(forms, sizeof forms, "auto");
    for (int k = 0; k < backend_nkinds && n < sizeof forms; k++)
      n += (size_t)snprintf(forms + n, sizeof forms - n, ", %s", backend_kinds[k].forms);
  }
  return forms;
}

/* Reads a device number (decimal digits only, at most 1000000) at *p and moves past it. */
static int device_number(const char **p, int *n) {
  if (!isdigit((unsigned char)**p)) return 0;
  long v = 0;
  for (; isdigit((unsigned char)**p); (*p)++)
    if ((v = v * 10 + (**p - '0')) > 1000000) return 0;
  *n = (int)v;
  return 1;
}

int backend_parse(const char *device, int *kind, int nums[2], Err *err) {
  if (!device) return err_set(err, PXL_EARG, "no device name given");
  for (int k = 0; k < backend_nkinds; k++) {
    const BackendKind *b = &backend_kinds[k];
    size_t l = strlen(b->name);
    if (strncmp(device, b->name, l) || (device[l] && device[l] != ':')) continue;
    const char *p = device + l;
    nums[0] = b->dflt[0];
    nums[1] = b->dflt[1];
    if (*p) /* the numbers, all of them */
      for (int i = 0; i < b->nnums || *p; i++)
        if (i >= b->nnums || *p++ != ':' || !device_number(&p, &nums[i]))
          return err_set(err, PXL_EARG, "bad device '%s' (use %s)", device, b->forms);
    *kind = k;
    return PXL_OK;
  }
  return err_set(err, PXL_EARG, "unknown device '%s' (use %s)", device, backend_forms());
}

const char *backend_describe(Backend *be) { return be->describe ? be->describe(be) : be->name; }
