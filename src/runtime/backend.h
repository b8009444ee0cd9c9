/*
 * backend.h - what a backend must provide to the runtime: run one stage instance.
 *
 * A backend is a struct of function pointers (QBE style); the runtime (exec.c) does
 * everything else - binding, output sizes, pipelines, intermediates - once for all
 * backends. The reference backend wraps the interpreter; the CPU backend JIT-compiles
 * generated C. Which backends exist, how their device strings read and how they are
 * opened is one table (backends.c): a new backend is a folder under src/runtime plus a
 * row there.
 */
#ifndef PXL_BACKEND_H
#define PXL_BACKEND_H

#include "ir/value.h"
#include "util/err.h"

typedef struct Backend Backend;
enum { EXEC_SPARES = 8 };                  /* host intermediates kept between runs, at most */
#define EXEC_SPARE_BYTES ((size_t)512 << 20) /* and at most these bytes of them */
struct Backend {
  const char *name;
  /* Runs kernel D into out (sized already). */
  int (*kernel)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out, Err *err);
  /* Runs kernel D with several outputs (D->nouts) into outs[0..nouts), sized already, in
   * one pass; optional (NULL: exec.c runs each output's projection, D->outs[k], through
   * `kernel`). Host images only. */
  int (*kernel_outs)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars,
                     struct pxl_image *const *outs, Err *err);
  /* Runs reduction D. */
  int (*reduce)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, RedResult *res, Err *err);
  /* Runs histogram D into bins (D->nbins Lanes). */
  int (*histogram)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, Lane *bins, Err *err);
  /* Frees the backend. */
  void (*free)(Backend *be);
  /* Histograms that stay on the device, optional (NULL: none). histogram_keep queues
   * histogram D as `histogram` would run it, but its bins stay in device memory, held
   * for `bins` - the host array (D->nbins + 1 Lanes) that stands for them in the
   * pipeline, which it does not write: a later kernel given `bins` as an array
   * parameter's value (Lane.arr) reads the device copy, and nothing on the host may read
   * bins. *kept false: nothing ran (not a counting histogram, or no room); run
   * `histogram` instead. array_forget(bins) once no later stage reads them, before bins
   * is freed. exec.c keeps a histogram only for integer array parameters of its size. */
  int (*histogram_keep)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, const Lane *bins,
                        bool *kept, Err *err);
  void (*array_forget)(Backend *be, const Lane *bins);

  /* Device memory, for backends that have their own (NULL for host backends). The
   * runtime then hands kernel/reduce/histogram device images only (exec.c copies host
   * images in and results out), and runs may return before their work is done. */
  /* A new device image (padded pitch; zero-filled when `zero`), freed by image_free.
   * Allocation and filling are queued: sync before other streams use it. */
  int (*image_new)(Backend *be, int w, int h, pxl_type t, int channels, bool zero, struct pxl_image **out, Err *err);
  /* Copies pixels between images of equal size and layout, each host or device; waits
   * when the destination is host memory. */
  int (*copy)(Backend *be, struct pxl_image *dst, const struct pxl_image *src, Err *err);
  /* Waits for all queued work; reports its failure. */
  int (*sync)(Backend *be, Err *err);
  /* Optional: a host image in memory the device copies from and to fastest (CUDA:
   * page-locked, copied by DMA without a staging copy), freed by image_free before the
   * backend; NULL: plain host memory serves. */
  int (*host_new)(Backend *be, int w, int h, pxl_type t, int channels, struct pxl_image **out, Err *err);
  /* Optional: copies page-locked host image src (host_new's) into device image dst
   * without waiting: queued before the work queued after it, so src must stay unchanged
   * until the backend's next sync (exec_entry syncs before it returns). NULL: copy. */
  int (*upload)(Backend *be, struct pxl_image *dst, const struct pxl_image *src, Err *err);
  /* Optional: an entry's run starts (exec_entry); what the backend varies between the
   * launches of a run starts again, so a run's launches are the same every time. */
  void (*run_begin)(Backend *be);

  /* Recorded runs (CUDA graphs), optional (NULL: none). Before a pipeline run whose
   * images are all device images, exec.c asks replay() with a key of the run (pipeline,
   * image addresses and shapes, scalars): *state GRAPH_REPLAYED - a recording of the
   * same run has been queued, nothing else to do; GRAPH_RECORD - the backend is recording
   * its queued work: exec.c runs the pipeline (ok: without failing), then calls
   * record_end, which keeps the recording and queues it (recorded work does not run) and
   * returns true, or false when the recording failed and nothing ran (then the backend
   * runs that key as usual from now on); GRAPH_NONE - run as usual. */
  int (*replay)(Backend *be, uint64_t key, int *state, Err *err);
  bool (*record_end)(Backend *be, uint64_t key, bool ok);
  /* Until tests that leave the queue running (loops.c), optional (NULL: `reduce`, which
   * waits for everything queued). test_queue queues reduction D, whose value is a u32,
   * and returns (a launch that may be recorded, as a stage's); test_mark marks the queue
   * after it (never recorded); test_end waits for that mark only - what was queued after
   * it keeps running - and gives the value. One test at a time: test_queue, test_mark,
   * then test_end. */
  int (*test_queue)(Backend *be, const Decl *D, const ImgArg *imgs, Err *err);
  int (*test_mark)(Backend *be, Err *err);
  int (*test_end)(Backend *be, uint64_t *value, Err *err);
  /* Iterated stencils (loops.c), optional (NULL: none). steps_max: how many iterations
   * of a loop whose body is kernel D, reading the last iteration's result as its image
   * parameter `carried` (img_index), one kernel_steps call can run (0: none; imgs as
   * they will be, for their sizes and borders). kernel_steps runs `steps` of them (1 ..
   * steps_max) from imgs into out, which is not imgs[carried]; with `test`, whether the
   * last step changed a pixel is then a test in flight, whose test_end gives 1 if so. */
  int (*steps_max)(Backend *be, const Decl *D, const ImgArg *imgs, int carried);
  int (*kernel_steps)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, int carried, int steps,
                      bool test, struct pxl_image *out, Err *err);
  /* Until tests computed by the loop's kernel (loops.c), optional (NULL: none).
   * test_kernel_ok: whether kernel D can say, as it computes its result, whether that
   * differs from its image parameter `carried` (img_index; imgs as they will be).
   * kernel_test runs D into out (not imgs[carried]) as `kernel` does; with `test`, whether
   * a pixel of out differs from imgs[carried]'s is then a test in flight (as test_queue
   * and test_mark leave one): test_end gives 1 if so, 0 if not. */
  bool (*test_kernel_ok)(Backend *be, const Decl *D, const ImgArg *imgs, int carried);
  int (*kernel_test)(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, int carried, bool test,
                     struct pxl_image *out, Err *err);
  /* How many pipeline runs the backend holds recorded (for tests); optional. */
  int (*recorded)(const Backend *be);

  /* Device images are a buffer object plus a byte offset (OpenCL's cl_mem): the data
   * pxl_image_wrap_device is given is the buffer. Else it is the first pixel's address. */
  bool buffer_images;

  /* Global operators (exec_kernel, src/ops): the library's reference algorithms (the
   * interpreter's backend) instead of its fast ones, and the host threads those use
   * (0: all cores). */
  bool reference;
  int nthreads;
  /* Optional (NULL: none): global operator `op` (a GlobalOp, ir.h) on the device, the same
   * bits as ops_global: maps[0 .. global_arity(op)) and out are device images (the maps
   * one channel of their kernels' types, out sized). *done false: the backend has no
   * device pass for this operator or these types or sizes, nothing ran, and exec.c runs
   * the host pass. Queued like a kernel. */
  int (*global)(Backend *be, int op, const struct pxl_image *const *maps, struct pxl_image *out, bool *done,
                Err *err);

  /* The device as users read it, e.g. "cuda:0 (NVIDIA H200)"; NULL: `name`. */
  const char *(*describe)(Backend *be);

  /* Host backends: pipeline intermediates that earlier runs freed, kept by exec.c for
   * the next run's intermediates of the same shape (a repeated run then allocates and
   * faults in no new pages); exec_spares_free frees them, before `free`. Zero-initialised
   * with the backend. Device backends keep theirs in their allocators' pools. */
  struct pxl_image *spares[EXEC_SPARES];
  int nspares;
};
enum { GRAPH_NONE, GRAPH_REPLAYED, GRAPH_RECORD };

/* What opening a backend gets from the context that opens it. */
typedef struct {
  const char *cache_dir; /* the compiled-kernel cache directory, "" for the default (runtime/cache.h checks it) */
  int nthreads;          /* CPU threads, 0 = all cores */
  Warn *warn;            /* where problems that were worked around are reported */
} BackendEnv;

/* A kind of backend: one row of the table in backends.c. */
typedef struct {
  const char *name;  /* the first word of its device strings: "cuda" */
  const char *forms; /* the device strings it takes, for messages: "cuda or cuda:N" */
  int nnums;         /* numbers after the name (":N", ":P:D"): 0, 1 or 2 */
  int dflt[2];       /* the numbers of the bare name ("opencl": -1 -1, any device) */
  int auto_rank;     /* order in which "auto" tries it (1 first), 0: never */
  /* Opens the backend for device numbers nums: PXL_EDEVICE when the device is absent,
   * PXL_EFAULT when it is there but fails. */
  int (*open)(const int *nums, const BackendEnv *env, Backend **out, Err *err);
} BackendKind;

/* The backends, in the order `--help` lists them. */
extern const BackendKind backend_kinds[];
extern const int backend_nkinds;
/* Parses a device string ("cpu", "cuda:1", "opencl:0:2") into its row and numbers.
 * PXL_EARG with the forms every row accepts when it is none of them. "auto" is not a
 * row: callers handle it. */
int backend_parse(const char *device, int *kind, int nums[2], Err *err);
/* The device strings every row accepts, "auto" first, for messages. */
const char *backend_forms(void);
/* be's describe(), or its name. */
const char *backend_describe(Backend *be);

/* The reference interpreter as a backend. Never fails except out-of-memory (NULL). */
Backend *backend_ref_new(void);

/* The CPU backend: JIT compiles generated C with the system C compiler (PXL_CC, else the
 * compiler pxl was built with, else cc), caches modules in memory and in cache_dir (NULL:
 * the default; runtime/cache.h), warning in `warn` about a directory or entry it
 * refused. nthreads 0 = all cores. NULL on out-of-memory. */
Backend *backend_cpu_new(const char *cache_dir, int nthreads, Warn *warn);

/* The CUDA backend on device `ordinal` (src/runtime/cuda): PXL_EDEVICE with the reason
 * when the driver, NVRTC or the device is missing. cache_dir and warn: as for the CPU. */
int backend_cuda_new(int ordinal, const char *cache_dir, Warn *warn, Backend **out, Err *err);

/* The OpenCL backend (src/runtime/opencl) on device `device` of platform `platform`;
 * (-1, -1): the first GPU of any platform, else the first device of any platform.
 * PXL_EDEVICE with the reason when the loader, a platform or the device is missing.
 * cache_dir and warn: as for the CPU. */
int backend_opencl_new(int platform, int device, const char *cache_dir, Warn *warn, Backend **out, Err *err);

/* Result of running an entry point. */
typedef struct {
  int kind;                 /* PXL_RESULT_IMAGE / _SCALAR / _HISTOGRAM */
  struct pxl_image *image;  /* output image (a kernel with several outputs: output 0) */
  bool image_owned;         /* allocated by the run (else the caller's bound output) */
  int nimages;              /* image results: 1, or a kernel's outputs (D->nouts) */
  struct pxl_image *more[PXL_MAX_OUTS - 1]; /* outputs 1 .. nimages - 1, owned by the result */
  RedResult red;
  Lane *bins;               /* heap, nbins */
  int nbins;
  bool bins_float;
  int bins_op;              /* BIN_SUM, BIN_MIN or BIN_MAX (ir.h) */
} ExecResult;

/* Runs entry D (kernel, reduce, histogram or pipeline) with bound arguments: imgs and
 * scalars follow D's image and scalar parameters (borders of kernel runs included);
 * out is the caller's output image or NULL (a kernel with several outputs: output 0; the
 * others are allocated, res->more). On failure res holds no image. exec_result_free
 * frees what res owns. Images have their parameters' types, or
 * (exec_channels > 1) all C channels of one-channel parameters: then it runs per
 * channel (exec_per_channel). */
int exec_entry(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
               ExecResult *res, Err *err);

/* Intermediates kept between runs (Backend.spares). exec_take_spare: an image of this
 * shape in be's memory - on a host backend one that an earlier run gave back, else a new
 * one - whose pixels are whatever that run left (every kernel writes each pixel of its
 * output). exec_give_spare: gives an
 * intermediate back (a device image or one not pxl's own is freed); the oldest go when
 * more than EXEC_SPARES images or EXEC_SPARE_BYTES would be kept. exec_spares_free:
 * frees them all. */
int exec_take_spare(Backend *be, int w, int h, pxl_type t, int channels, struct pxl_image **out, Err *err);
/* Runs kernel D into out (sized already) as be->kernel does, a global operator (Decl.global)
 * included: its map through be->kernel, then the operator's pass (src/ops) on the host
 * (device images are copied there and back). Every stage of the runtime runs through it. */
int exec_kernel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out, Err *err);
void exec_give_spare(Backend *be, struct pxl_image *img);
void exec_spares_free(Backend *be);

/* Which image of pipeline P's result value v is (0 for the only or first), -1: none. */
int exec_result_index(const Decl *P, int v);
/* Frees the images res owns (the output when image_owned, and the further outputs). */
void exec_result_free(ExecResult *res);

/* The image bound to argument a (an image) of pipeline value pv, from the values' images
 * vals: its source's; for the tile parameter of a rule C kernel (Decl.stage: its source
 * is fused away, never stored) the image the producer reads first, which has the tile's
 * size (a fused producer has no size()) and is never read through this parameter. */
struct pxl_image *exec_arg_image(const Decl *P, const PipeValue *pv, int a, struct pxl_image *const *vals);
/* exec.c, for the pipeline runners: binds the arguments of call pv of pipeline P - images
 * from vals (by value index), scalars evaluated from the pipeline's imgs and scalars and
 * its values pvals (by value index: reductions' results; arrays' bins in .arr) - to the
 * callee's image, scalar and array parameters. */
void exec_stage_args(const Decl *P, const PipeValue *pv, struct pxl_image *const *vals, const ImgArg *imgs,
                     const Lane *scalars, const Lane *pvals, ImgArg *kimgs, Lane *ks);
/* exec.c: computes value v of P (a reduction, a histogram or a kernel's table) into
 * pvals[v], freeing the bins it held before (a value in a loop body, computed again each
 * iteration). Counting bins that only later stages' arrays read may stay on the device. */
int exec_value(Backend *be, const Decl *P, int v, struct pxl_image *const *vals, const ImgArg *imgs,
               const Lane *scalars, Lane *pvals, Err *err);
/* exec.c: frees pvals (P->nvalues of them) and the bins of its arrays. */
void exec_values_free(Backend *be, const Decl *P, Lane *pvals);
/* Checks a caller's output image `given` (size, type, no overlap with the nimgs inputs),
 * or allocates one in be's memory (*owned), for an output of name of w x h of type t. */
int exec_prepare_output(Backend *be, const char *name, Type t, int w, int h, const ImgArg *imgs, int nimgs,
                        struct pxl_image *given, struct pxl_image **out, bool *owned, Err *err);
/* exec.c, for recordings (Backend.replay): the key of a run of pipeline D - the
 * pipeline, where its images (out: NULL or the caller's) are and their shapes, the
 * borders and the scalars, what a recording of its launches bakes in; one image hashed
 * into h (NULL too); whether launches of a run of D may be recorded at all - a backend
 * that records, device images (out: NULL or the caller's), and no reductions or
 * histograms, whose results come back to the host during the run. */
uint64_t exec_run_key(const Decl *D, const ImgArg *imgs, const Lane *scalars, const struct pxl_image *out);
uint64_t exec_hash_image(uint64_t h, const struct pxl_image *img);
bool exec_recordable_run(const Backend *be, const Decl *D, const ImgArg *imgs, const struct pxl_image *out);
/* loops.c: the pxl source of the reductions that test `until unchanged` on device images
 * (ne8, ne16, ne32: max(u32(a(0, 0) != b(0, 0))) over u8, u16, u32 views of the rows). */
extern const char exec_loop_compare_source[];
/* loops.c: whether a run of pipeline P on be with these arguments tests no `until`
 * (each loop with one ends at its count first): then nothing comes back to the host
 * during the run, which may be recorded. */
bool exec_loops_untested(const Backend *be, const Decl *P, const ImgArg *imgs, const Lane *scalars);
/* loops.c: runs pipeline P, which has loops (exec_entry's contract for pipelines). */
int exec_pipeline_loops(Backend *be, const Decl *P, const ImgArg *imgs, const Lane *scalars,
                        struct pxl_image *given, ExecResult *res, Err *err);

/* channels.c: the number of channels a run of D on imgs computes one by one - C when D
 * is a kernel or pipeline whose image parameters and output are one channel and its
 * images have C channels (the binding checked they all do), else 1. */
int exec_channels(const Decl *D, const ImgArg *imgs);
/* Runs one-channel entry D on host images of C = exec_channels channels: D runs on each
 * channel's plane of every input (through exec_entry), and the results are interleaved
 * into a C-channel output (out, checked, or a new host image). PXL_EARG for device
 * images. */
int exec_per_channel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                     ExecResult *res, Err *err);

#endif
