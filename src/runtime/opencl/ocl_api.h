/*
 * ocl_api.h - the OpenCL 1.2 entry points pxl uses, loaded from the ICD loader
 * (libOpenCL.so.1) with dlopen on first use, like cuda_api.h: one build runs with or
 * without OpenCL, and a missing loader, platform or device is a status, not a crash.
 *
 * CL/cl.h is not needed to build pxl: only the declarations used are written here, as an
 * X-macro list, with the ABI's types (handles are pointers, bitfields 64-bit) and the
 * official values of the constants (Khronos cl.h).
 */
#ifndef PXL_OCL_API_H
#define PXL_OCL_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pxl/pxl.h"
#include "util/err.h"

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield; /* device types, memory flags, queue properties, fp configs */
typedef intptr_t cl_context_properties;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

#define CL_SUCCESS 0
#define CL_FALSE 0
#define CL_TRUE 1
#define CL_PLATFORM_NAME 0x0902
#define CL_DEVICE_TYPE 0x1000
#define CL_DEVICE_TYPE_GPU (1 << 2)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_MEM_BASE_ADDR_ALIGN 0x1019 /* cl_uint, in bits */
#define CL_DEVICE_SINGLE_FP_CONFIG 0x101B
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_DEVICE_QUEUE_PROPERTIES 0x102A /* cl_bitfield */
#define CL_DEVICE_NAME 0x102B
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_EXTENSIONS 0x1030
#define CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (1 << 7)
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_QUEUE_PROFILING_ENABLE (1 << 1)
#define CL_PROFILING_COMMAND_QUEUED 0x1280 /* cl_ulong, nanoseconds */
#define CL_PROFILING_COMMAND_START 0x1282
#define CL_PROFILING_COMMAND_END 0x1283
#define CL_PROGRAM_BINARY_SIZES 0x1165
#define CL_PROGRAM_BINARIES 0x1166
#define CL_PROGRAM_BUILD_LOG 0x1183

/* The status codes pxl names in messages: name, value. */
#define PXL_CL_ERRORS(X)                                                                       \
  X(CL_DEVICE_NOT_FOUND, -1)                                                                   \
  X(CL_DEVICE_NOT_AVAILABLE, -2)                                                               \
  X(CL_COMPILER_NOT_AVAILABLE, -3)                                                             \
  X(CL_MEM_OBJECT_ALLOCATION_FAILURE, -4)                                                      \
  X(CL_OUT_OF_RESOURCES, -5)                                                                   \
  X(CL_OUT_OF_HOST_MEMORY, -6)                                                                 \
  X(CL_PROFILING_INFO_NOT_AVAILABLE, -7)                                                       \
  X(CL_MEM_COPY_OVERLAP, -8)                                                                   \
  X(CL_BUILD_PROGRAM_FAILURE, -11)                                                             \
  X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, -14)                                         \
  X(CL_INVALID_VALUE, -30)                                                                     \
  X(CL_INVALID_DEVICE_TYPE, -31)                                                               \
  X(CL_INVALID_PLATFORM, -32)                                                                  \
  X(CL_INVALID_DEVICE, -33)                                                                    \
  X(CL_INVALID_CONTEXT, -34)                                                                   \
  X(CL_INVALID_QUEUE_PROPERTIES, -35)                                                          \
  X(CL_INVALID_COMMAND_QUEUE, -36)                                                             \
  X(CL_INVALID_MEM_OBJECT, -38)                                                                \
  X(CL_INVALID_BINARY, -42)                                                                    \
  X(CL_INVALID_BUILD_OPTIONS, -43)                                                             \
  X(CL_INVALID_PROGRAM, -44)                                                                   \
  X(CL_INVALID_PROGRAM_EXECUTABLE, -45)                                                        \
  X(CL_INVALID_KERNEL_NAME, -46)                                                               \
  X(CL_INVALID_KERNEL, -48)                                                                    \
  X(CL_INVALID_ARG_INDEX, -49)                                                                 \
  X(CL_INVALID_ARG_VALUE, -50)                                                                 \
  X(CL_INVALID_ARG_SIZE, -51)                                                                  \
  X(CL_INVALID_KERNEL_ARGS, -52)                                                               \
  X(CL_INVALID_WORK_DIMENSION, -53)                                                            \
  X(CL_INVALID_WORK_GROUP_SIZE, -54)                                                           \
  X(CL_INVALID_WORK_ITEM_SIZE, -55)                                                            \
  X(CL_INVALID_EVENT_WAIT_LIST, -57)                                                           \
  X(CL_INVALID_OPERATION, -59)                                                                 \
  X(CL_INVALID_BUFFER_SIZE, -61)                                                               \
  X(CL_INVALID_GLOBAL_WORK_SIZE, -63)                                                          \
  X(CL_PLATFORM_NOT_FOUND_KHR, -1001)

enum {
#define X(name, value) name = value,
  PXL_CL_ERRORS(X)
#undef X
};

/* name in the library, return, parameters */
#define PXL_CL_FNS(X)                                                                          \
  X(clGetPlatformIDs, cl_int, (cl_uint n, cl_platform_id * platforms, cl_uint * count))       \
  X(clGetPlatformInfo, cl_int, (cl_platform_id p, cl_uint what, size_t size, void *value, size_t *size_ret)) \
  X(clGetDeviceIDs, cl_int,                                                                   \
    (cl_platform_id p, cl_bitfield type, cl_uint n, cl_device_id * devices, cl_uint * count))  \
  X(clGetDeviceInfo, cl_int, (cl_device_id d, cl_uint what, size_t size, void *value, size_t *size_ret)) \
  X(clCreateContext, cl_context,                                                              \
    (const cl_context_properties *props, cl_uint n, const cl_device_id *devices,             \
     void (*notify)(const char *info, const void *priv, size_t cb, void *user), void *user, cl_int *rc)) \
  X(clReleaseContext, cl_int, (cl_context c))                                                 \
  X(clCreateCommandQueue, cl_command_queue, (cl_context c, cl_device_id d, cl_bitfield props, cl_int *rc)) \
  X(clReleaseCommandQueue, cl_int, (cl_command_queue q))                                      \
  X(clCreateBuffer, cl_mem, (cl_context c, cl_bitfield flags, size_t size, void *host, cl_int *rc)) \
  X(clReleaseMemObject, cl_int, (cl_mem m))                                                   \
  X(clEnqueueFillBuffer, cl_int,                                                              \
    (cl_command_queue q, cl_mem m, const void *pattern, size_t pattern_size, size_t offset, size_t size, \
     cl_uint nwait, const cl_event *wait, cl_event *ev))                                      \
  X(clEnqueueReadBuffer, cl_int,                                                              \
    (cl_command_queue q, cl_mem m, cl_bool blocking, size_t offset, size_t size, void *dst, cl_uint nwait, \
     const cl_event *wait, cl_event *ev))                                                     \
  X(clEnqueueWriteBuffer, cl_int,                                                             \
    (cl_command_queue q, cl_mem m, cl_bool blocking, size_t offset, size_t size, const void *src, cl_uint nwait, \
     const cl_event *wait, cl_event *ev))                                                     \
  X(clEnqueueReadBufferRect, cl_int,                                                          \
    (cl_command_queue q, cl_mem m, cl_bool blocking, const size_t *buf_origin, const size_t *host_origin, \
     const size_t *region, size_t buf_row_pitch, size_t buf_slice_pitch, size_t host_row_pitch,             \
     size_t host_slice_pitch, void *dst, cl_uint nwait, const cl_event *wait, cl_event *ev))                 \
  X(clEnqueueWriteBufferRect, cl_int,                                                         \
    (cl_command_queue q, cl_mem m, cl_bool blocking, const size_t *buf_origin, const size_t *host_origin, \
     const size_t *region, size_t buf_row_pitch, size_t buf_slice_pitch, size_t host_row_pitch,             \
     size_t host_slice_pitch, const void *src, cl_uint nwait, const cl_event *wait, cl_event *ev))           \
  X(clEnqueueCopyBuffer, cl_int,                                                              \
    (cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset, size_t dst_offset, size_t size, \
     cl_uint nwait, const cl_event *wait, cl_event *ev))                                      \
  X(clEnqueueCopyBufferRect, cl_int,                                                          \
    (cl_command_queue q, cl_mem src, cl_mem dst, const size_t *src_origin, const size_t *dst_origin,       \
     const size_t *region, size_t src_row_pitch, size_t src_slice_pitch, size_t dst_row_pitch,             \
     size_t dst_slice_pitch, cl_uint nwait, const cl_event *wait, cl_event *ev))                             \
  X(clCreateProgramWithSource, cl_program,                                                    \
    (cl_context c, cl_uint n, const char **strings, const size_t *lengths, cl_int *rc))      \
  X(clCreateProgramWithBinary, cl_program,                                                    \
    (cl_context c, cl_uint n, const cl_device_id *devices, const size_t *lengths,            \
     const unsigned char **binaries, cl_int *status, cl_int *rc))                             \
  X(clBuildProgram, cl_int,                                                                   \
    (cl_program p, cl_uint n, const cl_device_id *devices, const char *options,              \
     void (*notify)(cl_program p, void *user), void *user))                                   \
  X(clGetProgramInfo, cl_int, (cl_program p, cl_uint what, size_t size, void *value, size_t *size_ret)) \
  X(clGetProgramBuildInfo, cl_int,                                                            \
    (cl_program p, cl_device_id d, cl_uint what, size_t size, void *value, size_t *size_ret)) \
  X(clReleaseProgram, cl_int, (cl_program p))                                                 \
  X(clCreateKernel, cl_kernel, (cl_program p, const char *name, cl_int *rc))                  \
  X(clReleaseKernel, cl_int, (cl_kernel k))                                                   \
  X(clSetKernelArg, cl_int, (cl_kernel k, cl_uint index, size_t size, const void *value))     \
  X(clEnqueueNDRangeKernel, cl_int,                                                           \
    (cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *offset, const size_t *global, \
     const size_t *local, cl_uint nwait, const cl_event *wait, cl_event *ev))                 \
  X(clWaitForEvents, cl_int, (cl_uint n, const cl_event *events))                             \
  X(clGetEventProfilingInfo, cl_int, (cl_event e, cl_uint what, size_t size, void *value, size_t *size_ret)) \
  X(clReleaseEvent, cl_int, (cl_event e))                                                     \
  X(clFinish, cl_int, (cl_command_queue q))

typedef struct {
#define X(name, ret, params) ret(*name) params;
  PXL_CL_FNS(X)
#undef X
  bool loaded;
} OclApi;

/* Loads the ICD loader (libOpenCL.so.1, else libOpenCL.so) and checks that it knows at
 * least one platform. PXL_EDEVICE with the reason otherwise. Thread-safe; the first call
 * loads. */
int ocl_load(const OclApi **api, Err *err);

/* "CL_OUT_OF_RESOURCES" for -5; "error N" for a code not in PXL_CL_ERRORS. s is only
 * used for the latter (at least 24 bytes). */
const char *ocl_error_name(cl_int rc, char *s, size_t n);

#endif
