/*
 * gpu_device.h - for GPU test programs: the one rule for skipping. A test may skip
 * (exit 77, "skipped: no CUDA device (REASON)") only when the backend reports the device
 * absent when it is created - PXL_EDEVICE from its row of the backend table: no
 * driver, library or device. Every other status there (PXL_EFAULT: a device that is
 * present but failing, a broken driver, PXL_ENOMEM, ...), and every failure after the
 * backend was created (a launch, a module load, a kernel build, a download), is a
 * failure of the test, never a skip: otherwise a broken GPU reads as "no GPU" and the
 * suite passes.
 *
 * Needs the include path of src/ (the backends' constructors are internal).
 */
#ifndef PXL_TESTS_GPU_DEVICE_H
#define PXL_TESTS_GPU_DEVICE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxl/pxl.h"
#include "runtime/backend.h"

enum { GPU_OPEN = 0, GPU_BROKEN = 1, GPU_SKIP = 77 };

/* Opens the backend of `device` ("cuda", "cuda:N", "opencl", or these with a suffix
 * such as "-resident") on its own, as a context would at its first run, and closes it:
 * GPU_OPEN when it opened; GPU_SKIP after printing "skipped: no CUDA device (REASON)"
 * ("OpenCL") when it reported the device absent; GPU_BROKEN after printing
 * "FAIL: ... STATUS: REASON" for any other failure. */
static int gpu_device_check(const char *device) {
  bool cuda = !strncmp(device, "cuda", 4);
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)strcspn(device, "-"), device); /* "cuda-resident" -> "cuda" */
  int kind_row, nums[2];
  Backend *be = NULL;
  Err e = {0};
  int rc = backend_parse(name, &kind_row, nums, &e);
  if (!rc) {
    BackendEnv env = {"", 0, NULL};
    rc = backend_kinds[kind_row].open(nums, &env, &be, &e);
  }
  if (!rc) {
    be->free(be);
    return GPU_OPEN;
  }
  const char *kind = cuda ? "CUDA" : "OpenCL";
  if (rc == PXL_EDEVICE) {
    printf("skipped: no %s device (%s)\n", kind, e.msg);
    return GPU_SKIP;
  }
  printf("FAIL: the %s backend did not open (%s, not a missing device): %s\n", kind, pxl_status_name(rc), e.msg);
  return GPU_BROKEN;
}

#endif
