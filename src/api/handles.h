/*
 * handles.h - inside the API layer: what the public handles hold, and the helpers the
 * API's files share (context.c, program.c, image.c, run.c).
 *
 * The API is the only layer that knows every other one. It is split by concern: the
 * context (errors, warnings, device choice, opening backends), programs (compiling,
 * entry points, `pxl compile`), images (host and device memory, files) and runs
 * (arguments, binding, running, results). Messages of every failure end up on the
 * context (pxl_errmsg); nothing here prints or exits.
 */
#ifndef PXL_HANDLES_H
#define PXL_HANDLES_H

#include <stdbool.h>

#include "ir/ir.h"
#include "pxl/pxl.h"
#include "runtime/backend.h"
#include "util/err.h"

#define MAX_BACKENDS 8 /* rows of the backend table a context can hold open */

struct pxl_context {
  Err err;                       /* last failure */
  char *long_msg;                /* diagnostics longer than err.msg (heap), or NULL */
  Warn warn;                     /* warnings not yet taken */
  char warn_out[sizeof(Warn)];   /* the last ones taken */
  int kind;                      /* the device's row in backend_kinds, -1 for "auto" */
  int nums[2];                   /* its numbers (cuda:N, opencl:P:D) */
  char *cache_dir;               /* explicit cache directory, or NULL for the default */
  int nthreads;
  int fusion;                    /* PXL_FUSE_AUTO, _OFF or _ALL (pxl_set_fusion) */
  char *fuse_keep;               /* stage names kept unfused (pxl_set_fusion_keep), or NULL */
  Backend *open[MAX_BACKENDS];   /* opened backends, by row */
  int open_nums[MAX_BACKENDS][2];/* the numbers each was opened with */
  bool refused[MAX_BACKENDS];    /* "auto" found the row unusable: not tried again */
  char device_name[64];          /* pxl_device_name's text when the device is unavailable */
};

typedef struct FusedForm FusedForm;

struct pxl_program {
  pxl_context *ctx;
  Program *prog;
  char *source;
  FusedForm *forms; /* pipelines' forms other than Decl.fused, made on first use (fusion.c) */
};

/* Records a failure on ctx (message formatted); returns code. */
int api_fail(pxl_context *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Takes over an internal Err as the context's failure; returns its code. */
int api_fail_err(pxl_context *ctx, const Err *e);
/* Forgets the last failure (every public call that can fail starts with it). */
void api_clear(pxl_context *ctx);
/* The entry pxl_run runs by default: the last pipeline, else the last entry (-1: none). */
int api_default_entry(const Program *p);
/* The instance of generic entry D (Decl.inst_first) a run with args takes: the first whose
 * image parameters have the element types of the images given; D when not generic or
 * when none fits (binding then reports the mismatch). */
Decl *api_entry_instance(Decl *D, const pxl_args *args);
/* The backend runs on ctx use now: the device's row, or for "auto" the first row in
 * auto order that opens (an absent device silently, a failing one with a warning). */
int api_backend(pxl_context *ctx, Backend **be, Err *e);
/* For "auto": the next backend in auto order after `failed`, which could not run what it
 * was given (a warning says so); NULL when there is none or the device is not "auto". */
Backend *api_backend_after(pxl_context *ctx, Backend *failed, const char *what, const Err *why);

/* fusion.c: the device class (analysis/cost.h) whose fusion decisions backend be takes:
 * COST_GPU for backends with device memory, COST_CPU for the other compiled ones, -1 for
 * the interpreter (the oracle: pipelines as written unless PXL_FUSE_ALL). */
int api_device_class(const Backend *be);
/* The form of entry D a run on device class cls takes (*out): a pipeline's fused form for
 * cls unless fusion is off or cls is -1 and not PXL_FUSE_ALL; with PXL_FUSE_ALL or kept
 * stages a form made on first use. PXL_EARG for a kept name that is not a stage of D,
 * PXL_ENOMEM. */
int api_runnable(pxl_context *ctx, pxl_program *prog, int cls, const Decl *D, const Decl **out);
/* Image i of args (its images in the order bound, then the bound output), NULL after the
 * last. */
const pxl_image *api_args_image_at(const pxl_args *args, int i);
/* Frees the forms api_runnable made for prog. */
void api_forms_free(pxl_program *prog);

#endif
