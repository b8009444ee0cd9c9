/*
 * fault.h - telling a device that is absent from one that is failing, and injecting
 * failures for the tests.
 *
 * A GPU backend reports PXL_EDEVICE only when the device is truly absent (no driver, no
 * device); everything that goes wrong with a device that is there - a driver library that
 * does not load beside an NVIDIA device node, a launch or module load that fails - is
 * PXL_EFAULT, and a build of generated code that fails is PXL_EBACKEND. The tests skip on
 * PXL_EDEVICE alone, so a broken backend fails them; PXL_FAULT_INJECT proves it.
 */
#ifndef PXL_FAULT_H
#define PXL_FAULT_H

#include <stdbool.h>

/* Faults PXL_FAULT_INJECT (a comma-separated list of these words) asks for. */
enum {
  FAULT_LAUNCH = 1, /* "launch": every kernel launch fails */
  FAULT_BUILD = 2,  /* "build": every build of generated GPU code fails (NVRTC, OpenCL) */
  FAULT_LOAD = 4,   /* "load": every module or program load fails */
  FAULT_NOLIB = 8   /* "nolib": the driver library (libcuda, the OpenCL loader) does not load */
};

/* The FAULT_* flags requested by the environment now (0 without PXL_FAULT_INJECT). */
unsigned fault_injected(void);
/* True when an NVIDIA driver's device nodes are there (/dev/nvidiactl or
 * /proc/driver/nvidia): then a CUDA that cannot be used is a fault, not an absence. */
bool fault_nvidia_present(void);
/* True when an OpenCL driver is registered for the ICD loader ($OCL_ICD_VENDORS, or an
 * .icd file in /etc/OpenCL/vendors): then a loader that cannot be loaded is a fault. */
bool fault_opencl_registered(void);

#endif
