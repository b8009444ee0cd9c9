/*
 * opencl.c - the OpenCL backend (see backend.h): the OpenCL driver of the GPU core
 * (runtime/gpu/gpu_core.h, which runs kernels, reductions and histograms, as for CUDA)
 * and the rest of the backend. Stage instances are generated as OpenCL C 1.2
 * (codegen/gpu, dialect GPU_OPENCL), built by the device's driver and run on one
 * in-order command queue; what differs from CUDA is how memory is named.
 *
 * Memory: OpenCL kernel arguments cannot hold pointers, so a device image is a cl_mem
 * (struct pxl_image `buffer`) and its `data` is the byte offset of pixel (0, 0) in it (0
 * for a whole image; a view adds its offset). Rows are padded to 256 bytes, or to the
 * device's base-address alignment when that is larger. The generated kernel takes the
 * eight input buffers, the output buffer, the auxiliary buffer and the result buffer as
 * arguments 0..11 (a small dummy buffer where there is none) and pxl_kargs, with the
 * offsets, as argument 11 (gen_gpu.h). Kernels return without waiting; reductions and
 * histograms read their result back with a blocking read.
 *
 * Compiled code: an instance (program, entry, borders, size class) is remembered in
 * memory; the program binary is cached on disk under the key of the generated source,
 * the device and platform names, the driver version and the build options
 * (opencl-KEY.bin, verified before the driver sees it: runtime/cache.h), so a second
 * process skips the driver's compiler. A binary the driver refuses is rebuilt from source.
 *
 * Optional extensions: a device without cl_khr_fp64 builds with -DPXR_NO_F64 (the
 * prelude then has no double; f32 scalars and f32 reduction values travel as floats) and
 * runs every stage whose own code has no double; one without cl_khr_int64_base_atomics
 * builds with -DPXR_NO_INT64_ATOMICS and runs everything but the histograms. The others
 * are PXL_EDEVICE naming the stage and the extension, before any build.
 *
 * Profiling: with PXL_OPENCL_PROFILE=FILE the queue is a profiling one and each kernel
 * launch and result read-back appends a line with its device time to FILE (see
 * profile_line); without it no events are created.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/c/emit.h"
#include "codegen/c/gen_c.h"
#include "codegen/gpu/gen_gpu.h"
#include "runtime/backend.h"
#include "runtime/cache.h"
#include "runtime/gpu/fault.h"
#include "runtime/gpu/gpu_core.h"
#include "runtime/opencl/ocl_api.h"
#include "util/alloc.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/strbuf.h"

/* A profiled command whose times are not read yet (they are once the queue has run it). */
typedef struct {
  cl_event ev;
  const char *kind;        /* as in GpuArgs */
  char name[64];           /* a copy: the program may be freed before the queue runs */
  size_t global[2], local[2];
} Pending;

#define MAX_PENDING 256 /* then wait for them: the profile costs memory, not a stall per launch */

typedef struct {
  GpuCore g;             /* first: kernels, reductions, histograms (gpu_core.h) */
  const OclApi *api;
  cl_platform_id platform;
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue queue;
  int platform_index, device_index;
  char name[128], platform_name[128], driver[128], describe[320];
  size_t max_group;      /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
  cl_ulong local_mem;    /* CL_DEVICE_LOCAL_MEM_SIZE, bytes */
  bool fp64;             /* cl_khr_fp64 (PXL_OPENCL_NO_FP64: as if not) */
  bool int64_atomics;    /* cl_khr_int64_base_atomics (PXL_OPENCL_NO_INT64_ATOMICS: as if not) */
  bool can_profile;      /* CL_QUEUE_PROFILING_ENABLE is supported */
  size_t pitch_align;    /* row pitch of device images: a multiple of this */
  char options[256];     /* clBuildProgram options */
  unsigned faults;       /* FAULT_* injected by the tests (PXL_FAULT_INJECT) */
  Cache *cache;          /* NULL: no disk cache (runtime/cache.h) */
  cl_mem dummy;          /* bound to the buffer arguments a stage does not use */
  /* the core's autotuner choices (gpu_cache.h) are kept in cache_dir/opencl-tune-HASH.txt
   * (HASH: of the device name); PXL_OPENCL_TILE_ROWS / _BYTES force a shape. Timing is
   * wall time around clFinish, which every implementation has (profiling queues are
   * optional). */
  FILE *profile;         /* PXL_OPENCL_PROFILE, or NULL: no events */
  Pending pending[MAX_PENDING];
  int npending;
} Ocl;

static int cl_fail(const Ocl *cl, cl_int rc, const char *what, Err *err) {
  char s[32];
  return err_set(err, PXL_EFAULT, "OpenCL %s failed on %s: %s", what, cl->name, ocl_error_name(rc, s, sizeof s));
}

/* A string property of device d, or of platform p when d is NULL (heap, PXL_FREE; "" when
 * it cannot be read, trailing blanks removed). NULL on out-of-memory. */
static char *info_str(const OclApi *api, cl_platform_id p, cl_device_id d, cl_uint what) {
  size_t n = 0;
  cl_int rc = d ? api->clGetDeviceInfo(d, what, 0, NULL, &n) : api->clGetPlatformInfo(p, what, 0, NULL, &n);
  char *s = PXL_MALLOC(n + 1);
  if (!s) return NULL;
  if (!rc && n) rc = d ? api->clGetDeviceInfo(d, what, n, s, NULL) : api->clGetPlatformInfo(p, what, n, s, NULL);
  s[rc ? 0 : n] = 0;
  for (size_t k = strlen(s); k > 0 && s[k - 1] == ' '; k--) s[k - 1] = 0;
  return s;
}

static void info_copy(const OclApi *api, cl_platform_id p, cl_device_id d, cl_uint what, char *buf, size_t n) {
  char *s = info_str(api, p, d, what);
  snprintf(buf, n, "%s", s && *s ? s : "?");
  PXL_FREE(s);
}

/* Whether the blank-separated list holds word w. */
static bool has_word(const char *list, const char *w) {
  size_t n = strlen(w);
  for (const char *p = list; (p = strstr(p, w)); p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return true;
  return false;
}

static bool is_gpu(const OclApi *api, cl_device_id d) {
  cl_bitfield type = 0;
  return !api->clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL) && (type & CL_DEVICE_TYPE_GPU);
}

#define MAX_IDS 64

/* Device `device` of platform `platform`; for (-1, -1) the first GPU of any platform,
 * else the first device of any platform. *pi, *di get the numbers of the one found. */
static int pick_device(const OclApi *api, int platform, int device, cl_platform_id *pp, cl_device_id *dp, int *pi,
                       int *di, Err *err) {
  cl_platform_id plats[MAX_IDS];
  cl_uint np = 0;
  char s[32];
  cl_int rc = api->clGetPlatformIDs(MAX_IDS, plats, &np);
  if (rc)
    return err_set(err, PXL_EDEVICE, "OpenCL is not available: no platform (%s)", ocl_error_name(rc, s, sizeof s));
  if (np > MAX_IDS) np = MAX_IDS;
  if (platform >= (int)np)
    return err_set(err, PXL_EDEVICE, "no OpenCL platform %d (this machine has %u)", platform, (unsigned)np);
  for (int pass = platform < 0 ? 0 : 1; pass < 2; pass++) /* 0: GPUs only, 1: any device */
    for (int p = platform < 0 ? 0 : platform; p < (platform < 0 ? (int)np : platform + 1); p++) {
      cl_device_id devs[MAX_IDS];
      cl_uint nd = 0;
      if (api->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_IDS, devs, &nd)) nd = 0; /* CL_DEVICE_NOT_FOUND */
      if (nd > MAX_IDS) nd = MAX_IDS;
      if (device >= (int)nd) {
        char name[128];
        info_copy(api, plats[p], NULL, CL_PLATFORM_NAME, name, sizeof name);
        return err_set(err, PXL_EDEVICE, "no OpenCL device %d on platform %d (%s has %u)", device, p, name,
                       (unsigned)nd);
      }
      for (int d = device < 0 ? 0 : device; d < (int)nd; d++) {
        if (pass == 0 && !is_gpu(api, devs[d])) continue;
        *pp = plats[p];
        *dp = devs[d];
        *pi = p;
        *di = d;
        return PXL_OK;
      }
    }
  return err_set(err, PXL_EDEVICE, "OpenCL is not available: no device on its %u platform%s", (unsigned)np,
                 np == 1 ? "" : "s");
}

/* ---- building programs ---- */

static const char *stage_kind(const Decl *D) {
  return D->kind == D_REDUCE ? "reduction" : D->kind == D_HISTOGRAM ? "histogram" : "kernel";
}

/* Put before every generated program. OpenCL C contracts a * b + c into a fused
 * multiply-add by default (FP_CONTRACT is ON, and no build option turns it off, unlike
 * NVRTC's -fmad=false), which changes float results: PoCL fuses them. */
static const char prologue[] = "#pragma OPENCL FP_CONTRACT OFF\n";
#define PROLOGUE_LINES 1

/* The line of text that starts at p, at most max bytes, into buf. */
static void line_at(const char *p, char *buf, size_t max) {
  size_t n = strcspn(p, "\n");
  snprintf(buf, max, "%.*s", (int)(n < max ? n : max - 1), p);
}

/* The line of the compiled text a compiler message points at: "FILE:LINE:COL" (clang,
 * PoCL, NVIDIA, Intel) or "line LINE" (AMD); 0 when none, or when FILE is a header (the
 * implementation's own, e.g. broken by a -D in PXL_OPENCL_OPTIONS). */
static int message_line(const char *msg) {
  for (const char *p = strchr(msg, ':'); p; p = strchr(p + 1, ':')) {
    char *end;
    long n = strtol(p + 1, &end, 10);
    if (end > p + 1 && *end == ':' && p[1] >= '0' && p[1] <= '9' && n > 0 && n < 1000000)
      return p - msg >= 2 && p[-2] == '.' && p[-1] == 'h' ? 0 : (int)n;
  }
  const char *l = strstr(msg, "line ");
  return l ? atoi(l + 5) : 0;
}

/* The .pxl line that generated line k of src came from: the nearest line marker above it
 * (gen_c.c: PXL_LINE_MARK) within the same function; 0 when there is none. */
static int pxl_line_of(const char *src, int k) {
  int found = 0;
  const char *p = src;
  for (int i = 1; p && *p && i <= k; i++) {
    const char *t = p + strspn(p, " ");
    if (!strncmp(t, "PXR_FN", 6) || !strncmp(t, "__kernel", 8)) found = 0; /* a new function */
    const char *m = strstr(t, "/* " PXL_LINE_MARK);
    const char *nl = strchr(p, '\n');
    if (m && (!nl || m < nl)) found = atoi(m + 3 + strlen(PXL_LINE_MARK));
    p = nl ? nl + 1 : NULL;
  }
  return found;
}

/* PXL_EBACKEND for D's unit src (the generated text, without the prologue): the build
 * log's first error that points into src, with the generated line it points at (else
 * the log's first error), then the log. The generated code carries no .pxl lines. */
static int build_failure(Ocl *cl, const Decl *D, cl_program prog, cl_int rc, const char *src, Err *err) {
  char s[32], first[400] = "", line[300] = "";
  char *log = NULL;
  size_t n = 0;
  if (!cl->api->clGetProgramBuildInfo(prog, cl->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) && (log = PXL_MALLOC(n + 1))) {
    if (cl->api->clGetProgramBuildInfo(prog, cl->dev, CL_PROGRAM_BUILD_LOG, n, log, NULL)) n = 0;
    log[n] = 0;
  }
  int k = 0;
  for (const char *e = log ? strstr(log, "error") : NULL; e && k <= 0; e = strstr(e, "error")) {
    const char *b = e;
    while (b > log && b[-1] != '\n') b--;
    char msg[400];
    line_at(b, msg, sizeof msg);
    k = message_line(msg) - PROLOGUE_LINES;
    if (!*first || k > 0) memcpy(first, msg, sizeof first);
    e += strcspn(e, "\n"); /* the next line */
  }
  const char *p = src;
  for (int i = 1; p && i < k; i++)
    if ((p = strchr(p, '\n'))) p++;
  if (k > 0 && p && *p) {
    char text[240], from[64] = "";
    line_at(p, text, sizeof text);
    int pl = pxl_line_of(src, k);
    if (pl) snprintf(from, sizeof from, ", from line %d of the .pxl source", pl);
    snprintf(line, sizeof line, "\n  generated line %d (the compiler's %d%s): %s", k, k + PROLOGUE_LINES, from, text);
  }
  rc = err_set(err, PXL_EBACKEND,
               "the OpenCL compiler of %s rejected the generated code of %s '%s' (%s)%s%s%s\n%.1500s%s", cl->name,
               stage_kind(D), D->name, ocl_error_name(rc, s, sizeof s), *first ? ":\n  " : "", first, line,
               log ? log : "(no build log)", log && strlen(log) > 1500 ? "\n[log truncated]" : "");
  PXL_FREE(log);
  return rc;
}

/* The program's binary in the disk cache (a cache: failures only cost a rebuild). */
static void store_binary(Ocl *cl, cl_program prog, const char *name, CacheId id) {
  size_t n = 0;
  if (cl->api->clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) || !n) return;
  unsigned char *bin = PXL_MALLOC(n);
  unsigned char *bins[1] = {bin};
  if (bin && !cl->api->clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL))
    cache_put(cl->cache, name, id, bin, n);
  PXL_FREE(bin);
}

/* A built program for src: from the cached binary (entry opencl-KEY.bin, verified before
 * the driver sees it: runtime/cache.h), else from source (then cached). */
static int build(Ocl *cl, const Decl *D, const char *src, size_t len, cl_program *out, Err *err) {
  const OclApi *api = cl->api;
  if (cl->faults & FAULT_BUILD)
    return err_set(err, PXL_EBACKEND, "OpenCL build of %s failed on %s (PXL_FAULT_INJECT)", D->name, cl->name);
  char name[64] = "";
  cl_int rc = CL_SUCCESS;
  CacheId id = {0, hash_bytes(HASH_INIT, src, len)};
  if (cl->cache) {
    id.key = hash_bytes(hash_str(HASH_INIT, CACHE_FORMAT), &id.source, sizeof id.source);
    id.key = hash_str(hash_str(hash_str(hash_str(id.key, prologue), cl->name), cl->platform_name), cl->driver);
    id.key = hash_str(id.key, cl->options);
    snprintf(name, sizeof name, "opencl-%016llx.bin", (unsigned long long)id.key);
    size_t n = 0;
    char *text = NULL;
    if (cache_get(cl->cache, name, id, &text, &n)) {
      unsigned char *bin = (unsigned char *)text; /* n: binaries hold NULs */
      cl_int status = 0;
      cl_program prog = api->clCreateProgramWithBinary(cl->ctx, 1, &cl->dev, &n, (const unsigned char **)&bin,
                                                       &status, &rc);
      PXL_FREE(text);
      if (prog && !rc && !status && !api->clBuildProgram(prog, 1, &cl->dev, cl->options, NULL, NULL)) {
        *out = prog;
        return PXL_OK;
      }
      if (prog) api->clReleaseProgram(prog);
      cache_drop(cl->cache, name, "the OpenCL driver refused the binary"); /* rebuilt from source */
    }
  }
  const char *texts[2] = {prologue, src};
  size_t lens[2] = {sizeof prologue - 1, len};
  cl_program prog = api->clCreateProgramWithSource(cl->ctx, 2, texts, lens, &rc);
  if (!prog || rc) return cl_fail(cl, rc, "clCreateProgramWithSource", err);
  rc = api->clBuildProgram(prog, 1, &cl->dev, cl->options, NULL, NULL);
  if (rc) {
    int code = build_failure(cl, D, prog, rc, src, err);
    api->clReleaseProgram(prog);
    return code;
  }
  if (name[0]) store_binary(cl, prog, name, id);
  *out = prog;
  return PXL_OK;
}

/* ---- devices without double precision or 64-bit atomics ---- */

/* Without fp64 the float member of the generated code's scalar slot is a float
 * (prelude.h: PXR_SCALAR_FLOAT under PXR_NO_F64): f32 scalars are then passed as floats
 * (gpu_core.c, with GpuCore.f32_float set), f32 reductions publish floats (widened by
 * the core) - the same values, since the kernel converted them to and from float anyway. */

static bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether text holds the identifier w (not as part of a longer one). */
static bool has_ident(const char *text, const char *w) {
  size_t n = strlen(w);
  for (const char *p = text; (p = strstr(p, w)); p += n)
    if ((p == text || !ident_char(p[-1])) && !ident_char(p[n])) return true;
  return false;
}

/* PXL_EDEVICE when D needs an extension the device lacks. Histograms count in 64-bit
 * atomics (global bins: atom_inc / atom_add on longs, PXR_BIN_INC / PXR_BIN_ADD_I64 and
 * gen_gpu's PXG_ATOMIC_ADD_U64; minima and maxima: atom_cmpxchg, PXR_BIN_MAX_U64), except
 * float sums, whose f64 bins need fp64.
 * Without fp64 the unit src must not mention double after
 * the prelude: the prelude has none under PXR_NO_F64, so one there is the stage's own
 * f64 (values, literals' conversions, f64 bins). */
static int check_extensions(const Ocl *cl, const Decl *D, const char *src, Err *err) {
  if (!cl->int64_atomics && D->kind == D_HISTOGRAM && !hist_double_sums(D))
    return err_set(err, PXL_EDEVICE,
                   "histogram '%s' counts with 64-bit atomics, which the OpenCL device %s lacks "
                   "(no cl_khr_int64_base_atomics)", D->name, cl->name);
  if (cl->fp64) return PXL_OK;
  const char *code = strstr(src, pxl_prelude_text);
  code = code ? code + strlen(pxl_prelude_text) : src;
  if (has_ident(code, "double"))
    return err_set(err, PXL_EDEVICE,
                   "%s '%s' needs double precision (f64%s), which the OpenCL device %s lacks (no cl_khr_fp64)",
                   stage_kind(D), D->name, D->kind == D_HISTOGRAM && D->weighted_float ? " bins" : "", cl->name);
  return PXL_OK;
}

/* ---- profiling (PXL_OPENCL_PROFILE) ---- */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* One line of the profile for a finished command: "KIND NAME SIZE device_us=D
 * queued_us=Q[ host_us=H]". KIND is kernel, reduce, histogram or tune (a launch:
 * SIZE is global=GXxGY local=LXxLY) or read (a blocking result read-back: SIZE is
 * bytes=N; host_us is the wall time of the blocking call, which includes waiting for the
 * kernel before it). device_us is END - START of the command; queued_us START - QUEUED,
 * the time it waited in the queue. "?" where the implementation gives no time. */
static void profile_line(Ocl *cl, cl_event ev, const char *kind, const char *name, const char *size, double host_ms) {
  cl_ulong t[3] = {0, 0, 0}; /* queued, start, end (ns) */
  static const cl_uint what[3] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
  cl_int r = CL_SUCCESS;
  for (int i = 0; i < 3 && !r; i++) r = cl->api->clGetEventProfilingInfo(ev, what[i], sizeof t[i], &t[i], NULL);
  char dev[32] = "?", queued[32] = "?", host[48] = "";
  if (!r) {
    snprintf(dev, sizeof dev, "%.3f", (double)(t[2] - t[1]) * 1e-3);
    snprintf(queued, sizeof queued, "%.3f", (double)(t[1] - t[0]) * 1e-3);
  }
  if (host_ms >= 0) snprintf(host, sizeof host, " host_us=%.3f", host_ms * 1e3);
  fprintf(cl->profile, "%s %s %s device_us=%s queued_us=%s%s\n", kind, name, size, dev, queued, host);
}

/* Writes the lines of the pending launches, which the queue has run (after clFinish or
 * a blocking command: the queue is in order), and releases their events. */
static void profile_flush(Ocl *cl) {
  for (int i = 0; i < cl->npending; i++) {
    Pending *p = &cl->pending[i];
    char size[96];
    snprintf(size, sizeof size, "global=%zux%zu local=%zux%zu", p->global[0], p->global[1], p->local[0], p->local[1]);
    profile_line(cl, p->ev, p->kind, p->name, size, -1);
    cl->api->clReleaseEvent(p->ev);
  }
  cl->npending = 0;
  if (cl->profile) fflush(cl->profile);
}

/* Keeps a launch's event until its times can be read. */
static void profile_launch(Ocl *cl, cl_event ev, const GpuArgs *c, const size_t global[2], const size_t local[2]) {
  if (cl->npending == MAX_PENDING) { /* wait for the oldest ones rather than grow */
    cl_event evs[MAX_PENDING];
    for (int i = 0; i < cl->npending; i++) evs[i] = cl->pending[i].ev;
    cl->api->clWaitForEvents((cl_uint)cl->npending, evs);
    profile_flush(cl);
  }
  Pending *p = &cl->pending[cl->npending++];
  p->ev = ev;
  p->kind = c->kind ? c->kind : "kernel";
  snprintf(p->name, sizeof p->name, "%s", c->name ? c->name : "?");
  memcpy(p->global, global, sizeof p->global);
  memcpy(p->local, local, sizeof p->local);
}

/* A blocking read of n result bytes of buffer m (profiled as a "read" of stage name). */
static int read_result(Ocl *cl, cl_mem m, size_t n, void *dst, const char *name, Err *err) {
  cl_event ev = NULL;
  double t0 = cl->profile ? now_ms() : 0;
  cl_int r = cl->api->clEnqueueReadBuffer(cl->queue, m, CL_TRUE, 0, n, dst, 0, NULL, cl->profile ? &ev : NULL);
  if (ev) {
    double host = now_ms() - t0;
    char size[32];
    snprintf(size, sizeof size, "bytes=%zu", n);
    profile_flush(cl); /* the launches before it have run */
    profile_line(cl, ev, "read", name, size, host);
    fflush(cl->profile);
    cl->api->clReleaseEvent(ev);
  }
  return r ? cl_fail(cl, r, "run", err) : PXL_OK;
}

static int finish(Ocl *cl, Err *err) {
  cl_int r = cl->api->clFinish(cl->queue);
  if (cl->npending) profile_flush(cl);
  return r ? cl_fail(cl, r, "run", err) : PXL_OK;
}

/* ---- the driver of the GPU core (gpu_core.h) ---- */

static int ocl_check(GpuCore *g, const Decl *D, const char *src, Err *err) {
  return check_extensions((const Ocl *)g, D, src, err);
}

/* A program for src (build: the binary cache, else the driver's compiler) and its
 * kernel pxl_stage. */
static int ocl_load_module(GpuCore *g, const Decl *D, const char *src, size_t len, void **prog_out, void **fn, Err *err) {
  Ocl *cl = (Ocl *)g;
  cl_program prog = NULL;
  int rc = build(cl, D, src, len, &prog, err);
  if (rc) return rc;
  cl_int r;
  cl_kernel stage = NULL;
  if (cl->faults & FAULT_LOAD) r = CL_INVALID_PROGRAM_EXECUTABLE;
  else stage = cl->api->clCreateKernel(prog, "pxl_stage", &r);
  if (!stage || r) {
    if (stage) cl->api->clReleaseKernel(stage);
    cl->api->clReleaseProgram(prog);
    return cl_fail(cl, r, "clCreateKernel", err);
  }
  *prog_out = prog;
  *fn = stage;
  return PXL_OK;
}

static void ocl_unload(GpuCore *g, void *prog, void *fn) {
  Ocl *cl = (Ocl *)g;
  cl->api->clReleaseKernel(fn);
  cl->api->clReleaseProgram(prog);
}

/* Enqueues m's kernel over gx x gy work-groups of bx x by: the buffers as arguments
 * 0..11 (the dummy where there is none), pxl_kargs as 12. */
static int ocl_launch(GpuCore *g, const GpuModule *m, size_t gx, size_t gy, const GpuArgs *c, Err *err) {
  Ocl *cl = (Ocl *)g;
  const GpuLaunch *L = &m->launch;
  size_t bx = L->bx, by = L->by ? L->by : 1;
  if (bx * by > cl->max_group)
    return err_set(err, PXL_EDEVICE, "work-groups of %zux%zu exceed the %zu work-items of %s", bx, by, cl->max_group,
                   cl->name);
  cl_int r = CL_SUCCESS;
  for (int i = 0; i < GPU_NBUFFERS && !r; i++)
    r = cl->api->clSetKernelArg(m->fn, (cl_uint)i, sizeof(cl_mem), c->buf[i] ? (const void *)&c->buf[i] : &cl->dummy);
  if (!r) r = cl->api->clSetKernelArg(m->fn, GPU_ARG_KARGS, sizeof c->a, &c->a);
  if (r) return cl_fail(cl, r, "clSetKernelArg", err);
  size_t global[2] = {gx * bx, gy * by}, local[2] = {bx, by};
  cl_event ev = NULL;
  r = cl->faults & FAULT_LAUNCH ? CL_INVALID_KERNEL
                                : cl->api->clEnqueueNDRangeKernel(cl->queue, m->fn, 2, NULL, global, local, 0, NULL,
                                                                  cl->profile ? &ev : NULL);
  if (ev) profile_launch(cl, ev, c, global, local);
  return r ? cl_fail(cl, r, "kernel launch", err) : PXL_OK;
}

/* Aux and result buffers alike: device buffers, zero-filled. */
static int ocl_alloc(GpuCore *g, GpuBuf *b, size_t n, Err *err) {
  Ocl *cl = (Ocl *)g;
  if (b->p) cl->api->clReleaseMemObject(b->p); /* freed when queued kernels are done */
  b->size = 0;
  cl_int r;
  cl_mem m = cl->api->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE, n, NULL, &r);
  b->p = m;
  static const unsigned char zero = 0;
  if (m && !r) r = cl->api->clEnqueueFillBuffer(cl->queue, m, &zero, 1, 0, n, 0, NULL, NULL);
  if (r || !m) return cl_fail(cl, r, "allocation", err);
  b->size = n;
  return PXL_OK;
}

/* A blocking write: the host copy may go once it returns; the in-order queue runs it
 * after the kernels queued before it. */
static int ocl_upload(GpuCore *g, GpuBuf *b, const void *src, size_t n, Err *err) {
  Ocl *cl = (Ocl *)g;
  cl_int r = cl->api->clEnqueueWriteBuffer(cl->queue, b->p, CL_TRUE, 0, n, src, 0, NULL, NULL);
  return r ? cl_fail(cl, r, "copy", err) : PXL_OK;
}

/* Queued; the in-order queue runs it after the histogram that wrote src. */
static int ocl_copy_buf(GpuCore *g, GpuBuf *dst, size_t at, const GpuBuf *src, size_t n, Err *err) {
  Ocl *cl = (Ocl *)g;
  cl_int r = cl->api->clEnqueueCopyBuffer(cl->queue, src->p, dst->p, 0, at, n, 0, NULL, NULL);
  return r ? cl_fail(cl, r, "copy", err) : PXL_OK;
}

static void ocl_release(GpuCore *g, GpuBuf *b) { ((Ocl *)g)->api->clReleaseMemObject(b->p); }

/* One blocking read (the in-order queue has then run the kernels before it); bins
 * handed back in aux are zeroed by a fill queued after it. */
static int ocl_fetch(GpuCore *g, GpuBuf *b, size_t n, bool rezero, void *dst, const char *name, Err *err) {
  Ocl *cl = (Ocl *)g;
  int rc = read_result(cl, b->p, n, dst, name, err);
  if (!rezero) return rc;
  static const unsigned char zero = 0;
  cl_int r = rc ? CL_SUCCESS : cl->api->clEnqueueFillBuffer(cl->queue, b->p, &zero, 1, 0, n, 0, NULL, NULL);
  return r ? cl_fail(cl, r, "run", err) : rc;
}

/* gpu_instance_tune's timing: 3 launches after a warm-up, wall time around clFinish. */
static int ocl_time(GpuCore *g, const GpuModule *m, int w, int h, const GpuArgs *c, double *ms, Err *err) {
  Ocl *cl = (Ocl *)g;
  int rc = gpu_core_launch(g, m, w, h, c, err);
  if (!rc) rc = finish(cl, err);
  double t0 = now_ms();
  for (int i = 0; i < 3 && !rc; i++) rc = gpu_core_launch(g, m, w, h, c, err);
  if (!rc) rc = finish(cl, err);
  *ms = now_ms() - t0;
  return rc;
}

static const GpuDriver ocl_driver = {
    .name = "OpenCL",
    .dialect = GPU_OPENCL,
    .check = ocl_check,
    .load = ocl_load_module,
    .unload = ocl_unload,
    .launch = ocl_launch,
    .alloc = ocl_alloc,
    .release = ocl_release,
    .fetch = ocl_fetch,
    .upload = ocl_upload,
    .copy_buf = ocl_copy_buf,
    .time = ocl_time,
};

/* ---- device images ---- */

/* OpenCL frees a released buffer once the queued commands that use it are done, so an
 * intermediate freed behind a running kernel stays valid. */
static void release_image(struct pxl_image *img) {
  Ocl *cl = img->device;
  cl->api->clReleaseMemObject((cl_mem)img->alloc);
}

static int ocl_image_new(Backend *be, int w, int h, pxl_type t, int channels, bool zero, struct pxl_image **out,
                         Err *err) {
  Ocl *cl = (Ocl *)be;
  *out = NULL;
  int rc = image_check_dims(w, h, t, channels, err);
  if (rc) return rc;
  struct pxl_image *img = PXL_CALLOC(1, sizeof *img);
  if (!img) return err_set(err, PXL_ENOMEM, "out of memory");
  *img = (struct pxl_image){.width = w, .height = h, .channels = channels, .type = t};
  size_t pitch = (image_row_bytes(img) + cl->pitch_align - 1) / cl->pitch_align * cl->pitch_align;
  cl_int r;
  cl_mem m = cl->api->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE, pitch * (size_t)h, NULL, &r);
  static const uint32_t zeros = 0; /* the size is a multiple of 256 */
  if (m && !r && zero)
    r = cl->api->clEnqueueFillBuffer(cl->queue, m, &zeros, sizeof zeros, 0, pitch * (size_t)h, 0, NULL, NULL);
  if (!m || r) {
    if (m) cl->api->clReleaseMemObject(m);
    PXL_FREE(img);
    if (r == CL_MEM_OBJECT_ALLOCATION_FAILURE || r == CL_OUT_OF_RESOURCES || r == CL_OUT_OF_HOST_MEMORY ||
        r == CL_INVALID_BUFFER_SIZE)
      return err_set(err, PXL_ENOMEM, "out of device memory for a %dx%d %s image on %s", w, h, pxl_type_name(t),
                     cl->name);
    return cl_fail(cl, r, "allocation", err);
  }
  img->pitch = pitch;
  img->buffer = img->alloc = m;
  img->data = (void *)(uintptr_t)0; /* the byte offset of pixel (0, 0) in the buffer */
  img->device = cl;
  img->release = release_image;
  *out = img;
  return PXL_OK;
}

/* A rectangle's origin (bytes, rows, 0) in a buffer of the given pitch, from the byte
 * offset of its first pixel. */
static void origin(const struct pxl_image *img, size_t o[3]) {
  size_t off = (size_t)(uintptr_t)img->data;
  o[0] = off % img->pitch;
  o[1] = off / img->pitch;
  o[2] = 0;
}

/* Device to device; through a temporary buffer when the rectangles overlap (OpenCL
 * refuses overlapping copies; memmove semantics like the host's). */
static int copy_on_device(Ocl *cl, struct pxl_image *dst, const struct pxl_image *src, Err *err) {
  size_t so[3], d_o[3], region[3] = {image_row_bytes(src), (size_t)src->height, 1};
  origin(src, so);
  origin(dst, d_o);
  cl_int r;
  if (!image_overlap(dst, src))
    r = cl->api->clEnqueueCopyBufferRect(cl->queue, src->buffer, dst->buffer, so, d_o, region, src->pitch, 0,
                                         dst->pitch, 0, 0, NULL, NULL);
  else {
    size_t zero[3] = {0, 0, 0};
    cl_mem tmp = cl->api->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE, region[0] * region[1], NULL, &r);
    if (tmp && !r)
      r = cl->api->clEnqueueCopyBufferRect(cl->queue, src->buffer, tmp, so, zero, region, src->pitch, 0, region[0],
                                           0, 0, NULL, NULL);
    if (tmp && !r)
      r = cl->api->clEnqueueCopyBufferRect(cl->queue, tmp, dst->buffer, zero, d_o, region, region[0], 0, dst->pitch,
                                           0, 0, NULL, NULL);
    if (tmp) cl->api->clReleaseMemObject(tmp);
  }
  return r ? cl_fail(cl, r, "copy", err) : PXL_OK;
}

static int ocl_copy(Backend *be, struct pxl_image *dst, const struct pxl_image *src, Err *err) {
  Ocl *cl = (Ocl *)be;
  size_t o[3], host[3] = {0, 0, 0}, region[3] = {image_row_bytes(src), (size_t)src->height, 1};
  cl_int r;
  if (src->device && dst->device) return copy_on_device(cl, dst, src, err);
  if (dst->device) { /* blocking: a host source may be freed when we return */
    origin(dst, o);
    r = cl->api->clEnqueueWriteBufferRect(cl->queue, dst->buffer, CL_TRUE, o, host, region, dst->pitch, 0, src->pitch,
                                          0, src->data, 0, NULL, NULL);
  } else if (src->device) { /* blocking: the host destination is read when we return */
    origin(src, o);
    r = cl->api->clEnqueueReadBufferRect(cl->queue, src->buffer, CL_TRUE, o, host, region, src->pitch, 0, dst->pitch,
                                         0, dst->data, 0, NULL, NULL);
  } else {
    for (int y = 0; y < src->height; y++) memmove(image_row(dst, y), image_row(src, y), region[0]);
    return PXL_OK;
  }
  return r ? cl_fail(cl, r, "copy", err) : PXL_OK;
}

static int ocl_sync(Backend *be, Err *err) { return finish((Ocl *)be, err); }

static void ocl_free(Backend *be) {
  Ocl *cl = (Ocl *)be;
  const OclApi *api = cl->api;
  if (cl->queue) api->clFinish(cl->queue);
  profile_flush(cl);
  if (cl->profile) fclose(cl->profile);
  gpu_core_free(&cl->g); /* modules, instances, tuner, aux and result buffers */
  if (cl->dummy) api->clReleaseMemObject(cl->dummy);
  if (cl->queue) api->clReleaseCommandQueue(cl->queue);
  if (cl->ctx) api->clReleaseContext(cl->ctx);
  cache_free(cl->cache);
  PXL_FREE(cl);
}

static const char *ocl_describe(Backend *be) { return ((Ocl *)be)->describe; }

/* Whether environment variable `name` is set to something other than "" or "0". */
static bool env_flag(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0");
}

/* What the backend keeps of the device: names, limits, extensions, build options. */
static int query_device(Ocl *cl, Err *err) {
  const OclApi *api = cl->api;
  info_copy(api, NULL, cl->dev, CL_DEVICE_NAME, cl->name, sizeof cl->name);
  info_copy(api, NULL, cl->dev, CL_DRIVER_VERSION, cl->driver, sizeof cl->driver);
  info_copy(api, cl->platform, NULL, CL_PLATFORM_NAME, cl->platform_name, sizeof cl->platform_name);
  char *ext = info_str(api, NULL, cl->dev, CL_DEVICE_EXTENSIONS);
  if (!ext) return err_set(err, PXL_ENOMEM, "out of memory");
  /* PXL_OPENCL_NO_FP64 / _NO_INT64_ATOMICS: behave as if the device lacked them (tests
   * run what such devices build - no fp64 on many integrated GPUs - on PoCL) */
  cl->fp64 = has_word(ext, "cl_khr_fp64") && !env_flag("PXL_OPENCL_NO_FP64");
  cl->int64_atomics = has_word(ext, "cl_khr_int64_base_atomics") && !env_flag("PXL_OPENCL_NO_INT64_ATOMICS");
  PXL_FREE(ext);
  cl_uint align_bits = 0;
  cl_bitfield fp = 0, queue_props = 0;
  cl_int r = api->clGetDeviceInfo(cl->dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof cl->max_group, &cl->max_group, NULL);
  if (!r) r = api->clGetDeviceInfo(cl->dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof cl->local_mem, &cl->local_mem, NULL);
  if (!r) r = api->clGetDeviceInfo(cl->dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
  if (!r) r = api->clGetDeviceInfo(cl->dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
  if (!r) r = api->clGetDeviceInfo(cl->dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof queue_props, &queue_props, NULL);
  if (r) return cl_fail(cl, r, "clGetDeviceInfo", err);
  cl->can_profile = queue_props & CL_QUEUE_PROFILING_ENABLE;
  cl->pitch_align = 256;
  if (align_bits / 8 > cl->pitch_align && !(align_bits & (align_bits - 1))) cl->pitch_align = align_bits / 8;
  /* no fast-math options: float results must equal the interpreter's. -w: some drivers
   * (PoCL) echo warnings to stderr, and the library never prints */
  /* PXL_OPENCL_OPTIONS adds options (the tests use -cl-opt-disable: PoCL compiles
   * unoptimised kernels several times faster, and the results must not change) */
  /* NVIDIA's OpenCL compiler takes inline PTX: byte permutes become one instruction
   * (gen_gpu.c: PXG_NV_PTX) */
  const char *extra = getenv("PXL_OPENCL_OPTIONS");
  snprintf(cl->options, sizeof cl->options, "-cl-std=CL1.2 -w%s%s%s%s%s%.120s",
           fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
           cl->fp64 ? "" : " -DPXR_NO_F64", cl->int64_atomics ? "" : " -DPXR_NO_INT64_ATOMICS",
           strstr(cl->platform_name, "NVIDIA") ? " -DPXG_NV_PTX" : "", extra && *extra ? " " : "", extra ? extra : "");
  return PXL_OK;
}

/* PXL_OPENCL_PROFILE=FILE: the profile (profile_line) is appended to FILE, after a
 * "#" line naming the device and the process. A device that cannot profile gets only
 * that line, saying so. */
static int open_profile(Ocl *cl, Err *err) {
  const char *path = getenv("PXL_OPENCL_PROFILE");
  if (!path || !*path) return PXL_OK;
  FILE *f = fopen(path, "a");
  if (!f)
    return err_set(err, PXL_EIO, "cannot open the OpenCL profile %s (PXL_OPENCL_PROFILE): %s", path, strerror(errno));
  fprintf(f, "# pxl OpenCL profile: opencl:%d:%d (%s, %s), process %ld%s\n", cl->platform_index, cl->device_index,
          cl->name, cl->platform_name, (long)getpid(),
          cl->can_profile ? "" : ": the device has no profiling queues (CL_QUEUE_PROFILING_ENABLE), no times");
  if (!cl->can_profile) {
    fclose(f);
    return PXL_OK;
  }
  fflush(f);
  cl->profile = f;
  return PXL_OK;
}

int backend_opencl_new(int platform, int device, const char *cache_dir, Warn *warn, Backend **out, Err *err) {
  const OclApi *api;
  *out = NULL;
  int rc = ocl_load(&api, err);
  if (rc) return rc;
  Ocl *cl = PXL_CALLOC(1, sizeof *cl);
  if (!cl) return err_set(err, PXL_ENOMEM, "out of memory");
  gpu_core_init(&cl->g, &ocl_driver);
  cl->api = api;
  snprintf(cl->name, sizeof cl->name, "the OpenCL device");
  rc = pick_device(api, platform, device, &cl->platform, &cl->dev, &cl->platform_index, &cl->device_index, err);
  if (!rc) rc = query_device(cl, err);
  cl->g.f32_float = !cl->fp64;
  if (!rc) rc = open_profile(cl, err);
  cl_int r = CL_SUCCESS;
  if (!rc) cl->ctx = api->clCreateContext(NULL, 1, &cl->dev, NULL, NULL, &r);
  if (!rc && !r)
    cl->queue = api->clCreateCommandQueue(cl->ctx, cl->dev, cl->profile ? CL_QUEUE_PROFILING_ENABLE : 0, &r);
  if (!rc && !r) cl->dummy = api->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE, 256, NULL, &r);
  if (!rc && (r || !cl->ctx || !cl->queue || !cl->dummy)) rc = cl_fail(cl, r, "initialisation", err);
  if (rc) {
    ocl_free(&cl->g.base);
    return rc;
  }
  snprintf(cl->describe, sizeof cl->describe, "opencl:%d:%d (%s, %s)", cl->platform_index, cl->device_index, cl->name,
           cl->platform_name);
  Err no_cache = {0};
  if (cache_open(cache_dir, warn, &cl->cache, &no_cache))
    warn_add(warn, "OpenCL kernels are not cached: %s", no_cache.msg);
  char tunes[4400];
  snprintf(tunes, sizeof tunes, "%s/opencl-tune-%016llx.txt", cl->cache ? cache_dir_in_use(cl->cache) : "",
           (unsigned long long)hash_str(HASH_INIT, cl->name));
  gpu_tuner_init(&cl->g.tuner, cl->cache ? tunes : NULL, "PXL_OPENCL_TILE_");
  cl->g.base.name = "opencl";
  cl->faults = fault_injected();
  cl->g.base.describe = ocl_describe;
  cl->g.base.buffer_images = true;
  cl->g.base.free = ocl_free;
  cl->g.base.image_new = ocl_image_new;
  cl->g.base.copy = ocl_copy;
  cl->g.base.sync = ocl_sync;
  *out = &cl->g.base;
  return PXL_OK;
}
