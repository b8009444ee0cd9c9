/*
 * context.c - the context: failures and warnings, the device, the cache directory and
 * thread count, and the backends opened for them (see handles.h).
 *
 * Backends are rows of the table in runtime/backends.c; a context opens a row the first
 * time a run needs it and keeps it until the context is freed or the choice that opened
 * it changes. "auto" tries the rows that have an auto rank in that order: a device that
 * is absent is passed over silently, one that is there but fails with a warning.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "api/handles.h"
#include "util/alloc.h"

/* ---- failures and warnings ---- */

int api_fail(pxl_context *ctx, int code, const char *fmt, ...) {
  if (!ctx) return code;
  PXL_FREE(ctx->long_msg);
  ctx->long_msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->err.msg, sizeof ctx->err.msg, fmt, ap);
  va_end(ap);
  ctx->err.code = code;
  return code;
}

int api_fail_err(pxl_context *ctx, const Err *e) { return api_fail(ctx, e->code ? e->code : PXL_ERROR, "%s", e->msg); }

void api_clear(pxl_context *ctx) {
  PXL_FREE(ctx->long_msg);
  ctx->long_msg = NULL;
  ctx->err.msg[0] = 0;
  ctx->err.code = PXL_OK;
}

const char *pxl_status_name(int status) {
  switch (status) {
#define X(name, value, text) \
  case value:                \
    return #name;
    PXL_STATUSES(X)
#undef X
  }
  return "PXL_?";
}

const char *pxl_errmsg(const pxl_context *ctx) {
  if (!ctx) return "no context (out of memory?)";
  return ctx->long_msg ? ctx->long_msg : ctx->err.msg;
}

const char *pxl_take_warnings(pxl_context *ctx) {
  if (!ctx) return "";
  memcpy(ctx->warn_out, ctx->warn.text, ctx->warn.len);
  ctx->warn_out[ctx->warn.len] = 0;
  ctx->warn.len = 0;
  ctx->warn.text[0] = 0;
  return ctx->warn_out;
}

/* ---- the context ---- */

pxl_context *pxl_context_new(void) {
  pxl_context *ctx = PXL_CALLOC(1, sizeof *ctx);
  if (ctx) ctx->kind = -1; /* auto */
  return ctx;
}

/* Closes row k's backend (its device images must be gone). */
static void close_row(pxl_context *ctx, int k) {
  if (ctx->open[k]) exec_spares_free(ctx->open[k]), ctx->open[k]->free(ctx->open[k]);
  ctx->open[k] = NULL;
}

/* Closes the backends without device memory of their own: they are opened again, with
 * the new cache directory or thread count, by the next run; GPU backends keep their
 * device images. */
static void close_host_rows(pxl_context *ctx) {
  for (int k = 0; k < backend_nkinds; k++)
    if (ctx->open[k] && !ctx->open[k]->image_new) close_row(ctx, k);
}

void pxl_context_free(pxl_context *ctx) {
  if (!ctx) return;
  for (int k = 0; k < backend_nkinds; k++) close_row(ctx, k);
  PXL_FREE(ctx->long_msg);
  PXL_FREE(ctx->cache_dir);
  PXL_FREE(ctx->fuse_keep);
  PXL_FREE(ctx);
}

int pxl_set_device(pxl_context *ctx, const char *device) {
  int kind, nums[2];
  Err e = {0};
  if (device && !strcmp(device, "auto")) {
    ctx->kind = -1;
    return PXL_OK;
  }
  if (backend_parse(device, &kind, nums, &e)) return api_fail_err(ctx, &e);
  if (ctx->open[kind] && (nums[0] != ctx->open_nums[kind][0] || nums[1] != ctx->open_nums[kind][1]))
    close_row(ctx, kind); /* another device of the same kind */
  ctx->kind = kind;
  ctx->nums[0] = nums[0];
  ctx->nums[1] = nums[1];
  return PXL_OK;
}

int pxl_set_cache_dir(pxl_context *ctx, const char *dir) {
  if (!dir || !*dir) return api_fail(ctx, PXL_EARG, "empty cache directory");
  size_t n = strlen(dir) + 1;
  char *d = PXL_MALLOC(n);
  if (!d) return api_fail(ctx, PXL_ENOMEM, "out of memory");
  memcpy(d, dir, n);
  PXL_FREE(ctx->cache_dir);
  ctx->cache_dir = d;
  close_host_rows(ctx); /* modules already loaded stay valid; new ones go to the new directory */
  return PXL_OK;
}

int pxl_set_threads(pxl_context *ctx, int nthreads) {
  if (nthreads < 0 || nthreads > 4096)
    return api_fail(ctx, PXL_EARG, "thread count %d out of range (0..4096)", nthreads);
  ctx->nthreads = nthreads;
  close_host_rows(ctx);
  return PXL_OK;
}

/* ---- opening backends ---- */

/* Row k's backend for device numbers nums, opened now if it is not yet. */
static int open_row(pxl_context *ctx, int k, const int *nums, Backend **be, Err *e) {
  if (!ctx->open[k]) {
    BackendEnv env = {ctx->cache_dir ? ctx->cache_dir : "", ctx->nthreads, &ctx->warn};
    int rc = backend_kinds[k].open(nums, &env, &ctx->open[k], e);
    if (rc) {
      ctx->open[k] = NULL;
      return rc;
    }
    ctx->open_nums[k][0] = nums[0];
    ctx->open_nums[k][1] = nums[1];
  }
  *be = ctx->open[k];
  return PXL_OK;
}

/* The row of rank r in auto order, or -1. */
static int auto_row(int r) {
  for (int k = 0; k < backend_nkinds; k++)
    if (backend_kinds[k].auto_rank == r) return k;
  return -1;
}

/* The first line of a message, for a warning. */
static int first_line(const char *msg) { return (int)strcspn(msg, "\n"); }

/* For "auto": the first usable backend of rank `from` or later. */
static Backend *auto_from(pxl_context *ctx, int from, Err *e) {
  for (int r = from, k; (k = auto_row(r)) >= 0; r++) {
    if (ctx->refused[k]) continue;
    Backend *be;
    Err why = {0};
    int rc = open_row(ctx, k, backend_kinds[k].dflt, &be, &why);
    if (!rc) return be;
    ctx->refused[k] = true; /* not asked again on this context */
    if (rc != PXL_EDEVICE) /* there but failing: say so */
      warn_add(&ctx->warn, "%s: %.*s; \"auto\" uses the next device", backend_kinds[k].name, first_line(why.msg),
               why.msg);
    if (rc == PXL_ENOMEM) *e = why;
  }
  if (!e->code) err_set(e, PXL_EDEVICE, "no device can run this");
  return NULL;
}

int api_backend(pxl_context *ctx, Backend **be, Err *e) {
  if (ctx->kind >= 0) return open_row(ctx, ctx->kind, ctx->nums, be, e);
  *be = auto_from(ctx, 1, e);
  return *be ? PXL_OK : e->code;
}

Backend *api_backend_after(pxl_context *ctx, Backend *failed, const char *what, const Err *why) {
  if (ctx->kind >= 0) return NULL;
  for (int k = 0; k < backend_nkinds; k++) {
    if (ctx->open[k] != failed || !backend_kinds[k].auto_rank) continue;
    Err e = {0};
    Backend *next = auto_from(ctx, backend_kinds[k].auto_rank + 1, &e);
    if (next)
      warn_add(&ctx->warn, "%s could not run %s (%.*s); ran it on %s", backend_describe(failed), what,
               first_line(why->msg), why->msg, backend_describe(next));
    return next;
  }
  return NULL;
}

const char *pxl_device_name(pxl_context *ctx) {
  Backend *be;
  Err e = {0};
  if (api_backend(ctx, &be, &e)) {
    api_fail_err(ctx, &e);
    snprintf(ctx->device_name, sizeof ctx->device_name, "%s (unavailable)",
             ctx->kind >= 0 ? backend_kinds[ctx->kind].name : "auto");
    return ctx->device_name;
  }
  return backend_describe(be);
}

int pxl_sync(pxl_context *ctx) {
  api_clear(ctx);
  Err e = {0};
  for (int k = 0; k < backend_nkinds; k++)
    if (ctx->open[k] && ctx->open[k]->sync && ctx->open[k]->sync(ctx->open[k], &e)) return api_fail_err(ctx, &e);
  return PXL_OK;
}

int pxl_context_cuda_graphs(const pxl_context *ctx) {
  int n = 0;
  for (int k = 0; ctx && k < backend_nkinds; k++)
    if (ctx->open[k] && ctx->open[k]->recorded) n += ctx->open[k]->recorded(ctx->open[k]);
  return n;
}
