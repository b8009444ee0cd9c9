/*
 * exec.c - runs an entry point on a backend (see backend.h).
 *
 * Everything that is the same for every backend lives here: output sizes (size()
 * evaluated by the interpreter's host evaluator), allocation of outputs and pipeline
 * intermediates, scalar arguments of pipeline calls, freeing each intermediate after its
 * last use, and where pixels live: a backend with device memory (image_new != NULL) sees
 * device images only - host inputs are copied in once per run, outputs and intermediates
 * are allocated on the device, and the result is copied back when the caller gave host
 * images. Pipeline runs on device images only (a given output included) may be recorded
 * and replayed by the backend (backend.h: replay): a run's key covers everything its
 * launches depend on. One-channel entries given 3- or 4-channel images run per channel
 * (channels.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/specialise.h"
#include "interp/interp.h"
#include "ops/global.h"
#include "runtime/backend.h"
#include "util/alloc.h"
#include "util/hash.h"

/* A new image in the backend's memory. */
static int alloc_image(Backend *be, int w, int h, pxl_type t, int channels, struct pxl_image **out, Err *err) {
  return be->image_new ? be->image_new(be, w, h, t, channels, false, out, err) : image_new(w, h, t, channels, out, err);
}

/* ---- intermediates kept between runs (Backend.spares) ---- */

static size_t image_bytes(const struct pxl_image *img) { return img->pitch * (size_t)img->height; }

int exec_take_spare(Backend *be, int w, int h, pxl_type t, int channels, struct pxl_image **out, Err *err) {
  if (be->image_new) return alloc_image(be, w, h, t, channels, out, err); /* the device's pool */
  for (int i = be->nspares - 1; i >= 0; i--) {
    struct pxl_image *img = be->spares[i];
    if (img->width != w || img->height != h || img->type != t || img->channels != channels) continue;
    be->spares[i] = be->spares[--be->nspares];
    *out = img;
    return PXL_OK;
  }
  return image_new(w, h, t, channels, out, err);
}

void exec_give_spare(Backend *be, struct pxl_image *img) {
  if (!img || be->image_new || img->release || image_bytes(img) > EXEC_SPARE_BYTES) {
    image_free(img);
    return;
  }
  size_t held = image_bytes(img);
  for (int i = 0; i < be->nspares; i++) held += image_bytes(be->spares[i]);
  while (be->nspares && (be->nspares == EXEC_SPARES || held > EXEC_SPARE_BYTES)) {
    held -= image_bytes(be->spares[0]);
    image_free(be->spares[0]);
    memmove(be->spares, be->spares + 1, sizeof *be->spares * (size_t)--be->nspares);
  }
  be->spares[be->nspares++] = img;
}

void exec_spares_free(Backend *be) {
  for (int i = 0; i < be->nspares; i++) image_free(be->spares[i]);
  be->nspares = 0;
}

int exec_prepare_output(Backend *be, const char *name, Type t, int w, int h, const ImgArg *imgs, int nimgs,
                          struct pxl_image *given, struct pxl_image **out, bool *owned, Err *err) {
  if (given) {
    if (given->width != w || given->height != h || given->type != pxl_of_scalar(t.s) || given->channels != t.lanes)
      return err_set(err, PXL_EARG, "output image of %s must be %dx%d %s with %d channel%s, got %dx%d %s with %d channel%s",
                     name, w, h, scalar_name(t.s), t.lanes, t.lanes == 1 ? "" : "s", given->width, given->height,
                     pxl_type_name(given->type), given->channels, given->channels == 1 ? "" : "s");
    for (int i = 0; i < nimgs; i++)
      if (image_overlap(given, imgs[i].img))
        return err_set(err, PXL_EARG, "the output image of %s overlaps an input image; use a separate buffer", name);
    *out = given;
    *owned = false;
    return PXL_OK;
  }
  *owned = true;
  return alloc_image(be, w, h, pxl_of_scalar(t.s), t.lanes, out, err);
}

struct pxl_image *exec_arg_image(const Decl *P, const PipeValue *pv, int a, struct pxl_image *const *vals) {
  int s = pv->args[a].source;
  for (int guard = 0; s >= 0 && P->values[s].fused && guard < P->nvalues; guard++) s = pipe_first_image(&P->values[s]);
  return s >= 0 ? vals[s] : NULL;
}

void exec_stage_args(const Decl *P, const PipeValue *pv, struct pxl_image *const *vals, const ImgArg *imgs,
                     const Lane *scalars, const Lane *pvals, ImgArg *kimgs, Lane *ks) {
  const Decl *K = pv->callee;
  for (int a = 0; a < pv->nargs; a++) {
    const Param *kp = K->params[a];
    if (kp->is_image) {
      kimgs[kp->img_index].img = exec_arg_image(P, pv, a, vals);
      kimgs[kp->img_index].border = pv->args[a].border;
    } else if (kp->len) { /* an array parameter: a histogram's bins or a kernel's table */
      ks[kp->scalar_index].arr = pvals[pv->args[a].source].arr;
    } else {
      ks[kp->scalar_index] = interp_pipe_expr(pv->args[a].expr, P, imgs, scalars, pvals);
    }
  }
}

/* ---- global operators (Decl.global): the maps on the backend, then the pass: the
 * backend's device pass where it has one (Backend.global), else the host's (src/ops) ---- */

/* PXL_DEVICE_PASSES=0 turns the device passes off (the host pass runs on copies). */
static bool device_passes(void) {
  const char *v = getenv("PXL_DEVICE_PASSES");
  return !v || strcmp(v, "0") != 0;
}

int exec_kernel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out, Err *err) {
  if (!D->global) return be->kernel(be, D, imgs, scalars, out, err);
  GlobalOp g = (GlobalOp)(D->global - 1);
  int n = global_arity(g), rc = PXL_OK;
  struct pxl_image *map[PXL_MAX_GMAPS] = {0}, *hmap[PXL_MAX_GMAPS] = {0}, *hout = NULL;
  const struct pxl_image *maps[PXL_MAX_GMAPS];
  for (int k = 0; k < n && !rc; k++) {
    const Decl *M = D->gmap[k];
    rc = exec_take_spare(be, out->width, out->height, pxl_of_scalar(M->type.s), 1, &map[k], err);
    if (!rc) rc = be->kernel(be, spec_for(M, scalars), imgs, scalars, map[k], err);
    maps[k] = map[k];
  }
  bool done = false; /* the backend's device pass ran (Backend.global) */
  if (!rc && be->global && !be->reference && device_passes()) rc = be->global(be, (int)g, maps, out, &done, err);
  if (!rc && !done && be->image_new)
    for (int k = 0; k < n && !rc; k++) { /* a device without a device pass: the host pass on copies */
      rc = image_new(out->width, out->height, map[k]->type, 1, &hmap[k], err);
      if (!rc) rc = be->copy(be, hmap[k], map[k], err);
      maps[k] = hmap[k];
    }
  if (!rc && !done && be->image_new) rc = image_new(out->width, out->height, out->type, 1, &hout, err);
  OpsRun run = {.nthreads = be->nthreads, .reference = be->reference};
  if (!rc && !done) rc = ops_global(g, maps, &run, hout ? hout : out, err);
  if (!rc && hout) rc = be->copy(be, out, hout, err);
  image_free(hout);
  for (int k = 0; k < n; k++) {
    image_free(hmap[k]);
    if (map[k]) exec_give_spare(be, map[k]);
  }
  return rc;
}

/* Which image of pipeline P's result value v is: 0 .. (one for -> image T), or -1. */
int exec_result_index(const Decl *P, int v) {
  if (!P->results) return v == P->result ? 0 : -1;
  for (int k = 0; k < P->nouts; k++)
    if (P->results[k] == v) return k;
  return -1;
}

/* Frees the intermediates of pipeline P whose last reader, value v, just ran (host
 * backends keep them for the next run). */
static void free_inputs(Backend *be, const Decl *P, int v, const int *last_use, struct pxl_image **vals, bool *owned) {
  const PipeValue *pv = &P->values[v];
  for (int a = 0; a < pv->nargs; a++) {
    int s = pv->args[a].source;
    if (s >= 0 && last_use[s] == v && owned[s] && exec_result_index(P, s) < 0) {
      exec_give_spare(be, vals[s]);
      vals[s] = NULL;
      owned[s] = false;
    }
  }
}

/* Computes pipeline value pv - a reduction's result, a histogram's bins (N + 1 Lanes, the
 * last 0, heap: out->arr) - through the backend's reduce or histogram entry. On a GPU
 * that is one launch and one read-back of the result (16 bytes, or the bins); a kernel
 * that takes the bins uploads them again with its arguments (gpu_core.c: pack_arrays).
 * keep: the bins may stay on the device (keep_bins), where the backend can keep them:
 * nothing waits, and out->arr only stands for them. */
static int run_table_value(Backend *be, const PipeValue *pv, const ImgArg *kimgs, const Lane *ks, Lane *out,
                           Err *err);

static int run_value(Backend *be, const PipeValue *pv, const ImgArg *kimgs, const Lane *ks, bool keep, Lane *out,
                     Err *err) {
  const Decl *K = pv->callee;
  if (K->kind == D_KERNEL) return run_table_value(be, pv, kimgs, ks, out, err);
  if (pv->kind == PV_SCALAR) {
    RedResult r;
    int rc = be->reduce(be, spec_for(K, ks), kimgs, ks, &r, err);
    if (!rc) *out = r.value;
    return rc;
  }
  Lane *bins = PXL_CALLOC((size_t)K->nbins + 1, sizeof *bins);
  if (!bins) return err_set(err, PXL_ENOMEM, "out of memory");
  bool kept = false;
  int rc = keep ? be->histogram_keep(be, spec_for(K, ks), kimgs, ks, bins, &kept, err) : PXL_OK;
  if (!rc && !kept) rc = be->histogram(be, spec_for(K, ks), kimgs, ks, bins, err);
  if (rc) PXL_FREE(bins);
  else out->arr = bins;
  return rc;
}

/* An array value made of a kernel's pixels (`f32 w[256] = weights(s);`): the kernel runs
 * into an image of exactly pv->len pixels (a run-time error otherwise), which is read back
 * (a device image: copied to the host, which waits for it) into len + 1 Lanes, the last
 * 0, row by row. */
static int run_table_value(Backend *be, const PipeValue *pv, const ImgArg *kimgs, const Lane *ks, Lane *out,
                           Err *err) {
  const Decl *K = pv->callee;
  int w, h;
  int rc = interp_output_size(K, kimgs, ks, &w, &h, err);
  if (rc) return rc;
  if ((long)w * h != pv->len)
    return err_set(err, PXL_EARG, "'%s' made %dx%d = %ld pixels, but '%s' holds %d", K->name, w, h, (long)w * h,
                   pv->name ? pv->name : "the array", pv->len);
  pxl_type t = pxl_of_scalar(K->type.s);
  struct pxl_image *img = NULL, *host = NULL;
  rc = alloc_image(be, w, h, t, 1, &img, err);
  if (!rc) rc = exec_kernel(be, spec_for(K, ks), kimgs, ks, img, err);
  if (!rc && be->image_new) { /* a device image */
    rc = image_new(w, h, t, 1, &host, err);
    if (!rc) rc = be->copy(be, host, img, err);
  }
  Lane *arr = rc ? NULL : PXL_CALLOC((size_t)pv->len + 1, sizeof *arr);
  if (!rc && !arr) rc = err_set(err, PXL_ENOMEM, "out of memory");
  const struct pxl_image *src = host ? host : img;
  for (int y = 0; !rc && y < h; y++)
    for (int x = 0; x < w; x++) arr[(size_t)y * w + x] = interp_load(src, x, y, 0);
  image_free(host);
  image_free(img);
  if (rc) PXL_FREE(arr);
  else out->arr = arr;
  return rc;
}

/* Frees an array value's bins (and forgets them on the device that kept them). */
static void value_free(Backend *be, Lane *val) {
  if (be->array_forget && val->arr) be->array_forget(be, val->arr);
  PXL_FREE((void *)val->arr);
  val->arr = NULL;
}

/* Whether histogram value v of pipeline P may stay on the device (Backend.histogram_keep):
 * every stage that reads it takes it as an integer array parameter of its size, so the
 * host never needs its values (pipeline expressions take scalar values only). */
static bool keep_bins(const Backend *be, const Decl *P, int v) {
  const PipeValue *pv = &P->values[v];
  if (!be->histogram_keep || pv->kind != PV_ARRAY || pv->callee->kind != D_HISTOGRAM) return false;
  bool read = false;
  for (int w = v + 1; w < P->nvalues; w++)
    for (int a = 0; a < P->values[w].nargs && !P->values[w].fused; a++) {
      if (P->values[w].args[a].source != v) continue;
      const Param *kp = P->values[w].callee->params[a];
      if (kp->len != pv->callee->nbins || scalar_is_float(kp->type.s)) return false;
      read = true;
    }
  return read;
}

int exec_value(Backend *be, const Decl *P, int v, struct pxl_image *const *vals, const ImgArg *imgs,
               const Lane *scalars, Lane *pvals, Err *err) {
  const PipeValue *pv = &P->values[v];
  ImgArg kimgs[64];
  Lane ks[32];
  exec_stage_args(P, pv, vals, imgs, scalars, pvals, kimgs, ks);
  Lane got = {0};
  int rc = run_value(be, pv, kimgs, ks, keep_bins(be, P, v), &got, err);
  if (rc) return rc;
  if (pv->kind == PV_ARRAY) value_free(be, &pvals[v]); /* the last iteration's */
  pvals[v] = got;
  return PXL_OK;
}

void exec_values_free(Backend *be, const Decl *P, Lane *pvals) {
  for (int v = 0; pvals && v < P->nvalues; v++)
    if (P->values[v].kind == PV_ARRAY) value_free(be, &pvals[v]);
  PXL_FREE(pvals);
}

static int run_pipeline(Backend *be, const Decl *P, const ImgArg *imgs, const Lane *scalars, struct pxl_image *given,
                        ExecResult *res, Err *err) {
  if (P->nloops) return exec_pipeline_loops(be, P, imgs, scalars, given, res, err);
  int n = P->nvalues;
  struct pxl_image **vals = PXL_CALLOC((size_t)n, sizeof *vals);
  bool *owned = PXL_CALLOC((size_t)n, sizeof *owned);
  int *last_use = PXL_CALLOC((size_t)n, sizeof *last_use);
  Lane *pvals = PXL_CALLOC((size_t)n, sizeof *pvals); /* scalar values; arrays' bins in .arr */
  int rc = PXL_OK;
  if (!vals || !owned || !last_use || !pvals) {
    rc = err_set(err, PXL_ENOMEM, "out of memory");
    goto done;
  }
  for (int v = 0; v < n; v++)
    for (int a = 0; a < P->values[v].nargs && !P->values[v].fused; a++)
      if (P->values[v].args[a].source >= 0) last_use[P->values[v].args[a].source] = v;
  for (int v = 0; v < n && !rc; v++) {
    const PipeValue *pv = &P->values[v];
    if (pv->fused) continue; /* computed inside its consumer's kernel */
    if (!pv->callee) {
      vals[v] = (struct pxl_image *)imgs[pv->param->img_index].img;
      continue;
    }
    if (pv->kind != PV_IMAGE) {
      rc = exec_value(be, P, v, vals, imgs, scalars, pvals, err);
      if (!rc) free_inputs(be, P, v, last_use, vals, owned);
      continue;
    }
    const Decl *K = pv->callee;
    ImgArg kimgs[64];
    Lane ks[32];
    exec_stage_args(P, pv, vals, imgs, scalars, pvals, kimgs, ks);
    int w, h;
    rc = interp_output_size(K, kimgs, ks, &w, &h, err);
    if (rc) break;
    bool last = exec_result_index(P, v) == 0; /* the caller's output is image 0 */
    if (exec_result_index(P, v) < 0) { /* an intermediate */
      rc = exec_take_spare(be, w, h, pxl_of_scalar(K->type.s), K->type.lanes, &vals[v], err);
      owned[v] = !rc;
    } else {
      rc = exec_prepare_output(be, P->name, K->type, w, h, kimgs, K->nimages, last ? given : NULL, &vals[v], &owned[v],
                               err);
    }
    if (rc) break;
    rc = exec_kernel(be, spec_for(K, ks), kimgs, ks, vals[v], err);
    if (!rc) free_inputs(be, P, v, last_use, vals, owned); /* intermediates whose last reader just ran */
  }
  if (!rc) {
    res->kind = PXL_RESULT_IMAGE;
    res->image = vals[P->result];
    res->image_owned = owned[P->result];
    owned[P->result] = false;
    for (int k = 1; k < P->nouts; k++) { /* -> (image T1, image T2, ...): allocated by the run */
      res->more[k - 1] = vals[P->results[k]];
      owned[P->results[k]] = false;
    }
    res->nimages = P->nouts ? P->nouts : 1;
  }
done:
  if (vals && owned)
    for (int v = 0; v < n; v++)
      if (owned[v]) exec_result_index(P, v) < 0 ? exec_give_spare(be, vals[v]) : image_free(vals[v]);
  exec_values_free(be, P, pvals);
  PXL_FREE(vals);
  PXL_FREE(owned);
  PXL_FREE(last_use);
  return rc;
}

/* Runs D on images that are all in be's memory. */
static int run_here(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                    ExecResult *res, Err *err) {
  switch (D->kind) {
  case D_PIPELINE:
    return run_pipeline(be, D, imgs, scalars, out, res, err);
  case D_KERNEL: {
    int w, h;
    int rc = interp_output_size(D, imgs, scalars, &w, &h, err);
    if (rc) return rc;
    rc = exec_prepare_output(be, D->name, D->type, w, h, imgs, D->nimages, out, &res->image, &res->image_owned, err);
    if (rc) return rc;
    rc = exec_kernel(be, spec_for(D, scalars), imgs, scalars, res->image, err);
    if (rc && res->image_owned) {
      image_free(res->image);
      res->image = NULL;
    }
    res->kind = PXL_RESULT_IMAGE;
    return rc;
  }
  case D_REDUCE:
    res->kind = PXL_RESULT_SCALAR;
    return be->reduce(be, spec_for(D, scalars), imgs, scalars, &res->red, err);
  case D_HISTOGRAM: {
    res->kind = PXL_RESULT_HISTOGRAM;
    res->bins = PXL_CALLOC((size_t)D->nbins, sizeof(Lane));
    if (!res->bins) return err_set(err, PXL_ENOMEM, "out of memory");
    res->nbins = D->nbins;
    res->bins_float = D->weighted_float;
    res->bins_op = D->binop;
    int rc = be->histogram(be, spec_for(D, scalars), imgs, scalars, res->bins, err);
    if (rc) {
      PXL_FREE(res->bins);
      res->bins = NULL;
    }
    return rc;
  }
  case D_FUNC: /* never an entry point */
    break;
  }
  return err_set(err, PXL_ERROR, "internal: unknown declaration kind");
}

static const char *image_param_name(const Decl *D, int k) {
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->is_image && D->params[i]->img_index == k) return D->params[i]->name;
  return "?";
}

/* Every image must be in host memory (host backends) or host / this backend's memory. */
static int check_memory(Backend *be, const Decl *D, const ImgArg *imgs, const struct pxl_image *out, Err *err) {
  for (int i = 0; i <= D->nimages; i++) {
    const struct pxl_image *img = i < D->nimages ? imgs[i].img : out;
    if (!img || !img->device || img->device == (void *)be) continue;
    const char *what = i < D->nimages ? "the image for parameter" : "the output image";
    const char *name = i < D->nimages ? image_param_name(D, i) : "";
    if (!be->image_new)
      return err_set(err, PXL_EARG, "%s: %s%s%s%s is in device memory but the %s backend runs on the host; copy it "
                     "with pxl_image_to_host or select its device", D->name, what, *name ? " '" : "", name,
                     *name ? "'" : "", be->name);
    return err_set(err, PXL_EARG, "%s: %s%s%s%s is in the memory of another device", D->name, what,
                   *name ? " '" : "", name, *name ? "'" : "");
  }
  return PXL_OK;
}

uint64_t exec_hash_image(uint64_t h, const struct pxl_image *img) {
  if (!img) return hash_bytes(h, "", 1);
  int dims[4] = {img->width, img->height, (int)img->type, img->channels};
  uintptr_t at[2] = {(uintptr_t)img->buffer, (uintptr_t)img->data};
  h = hash_bytes(h, dims, sizeof dims);
  h = hash_bytes(h, at, sizeof at);
  return hash_bytes(h, &img->pitch, sizeof img->pitch);
}

uint64_t exec_run_key(const Decl *D, const ImgArg *imgs, const Lane *scalars, const struct pxl_image *out) {
  uint64_t h = hash_bytes(HASH_INIT, &D, sizeof D);
  h = hash_bytes(h, &D->serial, sizeof D->serial);
  for (int i = 0; i < D->nimages; i++) {
    h = exec_hash_image(h, imgs[i].img);
    h = hash_bytes(h, &imgs[i].border.kind, sizeof imgs[i].border.kind);
    h = hash_bytes(h, &imgs[i].border.value, sizeof imgs[i].border.value);
  }
  for (int i = 0; i < D->nscalars; i++) h = hash_bytes(h, &scalars[i].i, sizeof scalars[i].i);
  return exec_hash_image(h, out);
}

/* A pipeline run on device images into the device image out: replayed or recorded where
 * the backend can (the first run of a key runs as usual, and compiles and tunes). */
static int run_pipeline_recorded(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars,
                                 struct pxl_image *out, ExecResult *res, Err *err) {
  uint64_t key = exec_run_key(D, imgs, scalars, out);
  int state = GRAPH_NONE;
  int rc = be->replay(be, key, &state, err);
  if (rc) return rc;
  if (state == GRAPH_REPLAYED) {
    res->kind = PXL_RESULT_IMAGE;
    res->image = out;
    return PXL_OK;
  }
  rc = run_pipeline(be, D, imgs, scalars, out, res, err);
  if (state != GRAPH_RECORD || be->record_end(be, key, rc == PXL_OK)) return rc;
  /* nothing ran: once more, as usual (the backend does not record this key again) */
  if (!rc && res->image_owned) image_free(res->image);
  memset(res, 0, sizeof *res);
  return run_pipeline(be, D, imgs, scalars, out, res, err);
}

/* Whether pipeline D computes reductions, histograms or global operators: their results
 * come back to the host during the run (and array arguments are uploaded from there; a
 * global operator's pass runs there), which a recording cannot hold. */
static bool has_values(const Decl *D) {
  for (int v = 0; v < D->nvalues; v++)
    if (D->values[v].kind != PV_IMAGE || (D->values[v].callee && D->values[v].callee->global)) return true;
  return false;
}

bool exec_recordable_run(const Backend *be, const Decl *D, const ImgArg *imgs, const struct pxl_image *out) {
  if (!be->replay || has_values(D) || (out && !out->device)) return false;
  for (int i = 0; i < D->nimages; i++)
    if (!imgs[i].img->device) return false;
  return true;
}

/* Whether a run may be recorded: a pipeline that computes its result into the caller's
 * device image, from device images, without reductions or histograms, nor loops whose
 * until test runs in this run (exec_loops_untested). Loops are recorded whole (their
 * counts come from scalars and sizes of the run key): every iteration's launches, and
 * the buffers they take and give back, in one graph, so that a replay costs one launch
 * whatever the count. */
static bool recordable(const Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars,
                       const struct pxl_image *out) {
  const PipeValue *r = &D->values[D->result]; /* a stage, or a loop's carried image (not an input) */
  if (D->kind != D_PIPELINE || !out || (!r->callee && r->carried < 0) || D->nouts ||
      !exec_recordable_run(be, D, imgs, out))
    return false;
  return exec_loops_untested(be, D, imgs, scalars);
}

void exec_result_free(ExecResult *res) {
  if (res->image_owned) image_free(res->image);
  res->image = NULL;
  res->image_owned = false;
  for (int k = 0; k < PXL_MAX_OUTS - 1; k++) {
    image_free(res->more[k]);
    res->more[k] = NULL;
  }
  res->nimages = 0;
}

/* Kernel D with several outputs: in one pass where the backend can (the interpreter, on
 * images of the kernel's own channels), else output by output, each output's projection
 * run as an entry of its own (device copies, per-channel runs and all). */
static int run_outputs(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                       ExecResult *res, Err *err) {
  int rc = PXL_OK;
  res->kind = PXL_RESULT_IMAGE;
  if (be->kernel_outs && !be->image_new && exec_channels(D, imgs) == 1) {
    rc = check_memory(be, D, imgs, out, err);
    int w, h;
    if (!rc) rc = interp_output_size(D, imgs, scalars, &w, &h, err);
    struct pxl_image *outs[PXL_MAX_OUTS] = {0};
    bool owned = true;
    for (int k = 0; k < D->nouts && !rc; k++)
      rc = exec_prepare_output(be, D->name, D->out_types[k], w, h, imgs, D->nimages, k ? NULL : out, &outs[k],
                               k ? &(bool){true} : &owned, err);
    if (!rc) rc = be->kernel_outs(be, spec_for(D, scalars), imgs, scalars, outs, err);
    res->image = outs[0];
    res->image_owned = owned && outs[0];
    for (int k = 1; k < D->nouts; k++) res->more[k - 1] = outs[k];
    res->nimages = D->nouts;
  } else {
    for (int k = 0; k < D->nouts && !rc; k++) {
      ExecResult r;
      rc = exec_entry(be, D->outs[k], imgs, scalars, k ? NULL : out, &r, err);
      if (rc) break;
      if (k == 0) {
        res->image = r.image;
        res->image_owned = r.image_owned;
      } else {
        res->more[k - 1] = r.image;
      }
      res->nimages = k + 1;
    }
  }
  if (rc) exec_result_free(res);
  res->kind = PXL_RESULT_IMAGE;
  return rc;
}

int exec_entry(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
               ExecResult *res, Err *err) {
  memset(res, 0, sizeof *res);
  if (be->run_begin) be->run_begin(be);
  if (D->kind == D_KERNEL && D->nouts) return run_outputs(be, D, imgs, scalars, out, res, err);
  if (exec_channels(D, imgs) > 1) return exec_per_channel(be, D, imgs, scalars, out, res, err);
  int rc = check_memory(be, D, imgs, out, err);
  if (rc || !be->image_new) return rc ? rc : run_here(be, D, imgs, scalars, out, res, err);
  if (recordable(be, D, imgs, scalars, out)) return run_pipeline_recorded(be, D, imgs, scalars, out, res, err);
  /* a device backend: copy host inputs in (once, also for a pipeline input read twice) */
  ImgArg dimgs[64];
  struct pxl_image *tmp[64] = {0};
  bool any_device = false, queued = false; /* queued: an upload from page-locked memory not waited for */
  for (int i = 0; i < D->nimages && !rc; i++) {
    const struct pxl_image *img = imgs[i].img;
    dimgs[i] = imgs[i];
    if (img->device) {
      any_device = true;
      continue;
    }
    rc = be->image_new(be, img->width, img->height, img->type, img->channels, false, &tmp[i], err);
    if (!rc && img->pinned && be->upload) rc = be->upload(be, tmp[i], img, err), queued = true;
    else if (!rc) rc = be->copy(be, tmp[i], img, err);
    dimgs[i].img = tmp[i];
  }
  bool host_result = out ? !out->device : !any_device;
  if (!rc) rc = run_here(be, D, dimgs, scalars, out && out->device ? out : NULL, res, err);
  if (!rc && res->kind == PXL_RESULT_IMAGE && host_result) { /* copy the result back */
    struct pxl_image *h = out;
    if (!h) rc = image_new(res->image->width, res->image->height, res->image->type, res->image->channels, &h, err);
    if (!rc) rc = be->copy(be, h, res->image, err);
    image_free(res->image);
    res->image = rc ? NULL : h;
    res->image_owned = !rc && !out;
    if (rc && h != out) image_free(h);
    for (int k = 0; k < PXL_MAX_OUTS - 1; k++) { /* a pipeline's further images */
      struct pxl_image *d = res->more[k], *hk = NULL;
      if (!d) continue;
      if (!rc) rc = image_new(d->width, d->height, d->type, d->channels, &hk, err);
      if (!rc) rc = be->copy(be, hk, d, err);
      image_free(d);
      res->more[k] = rc ? NULL : hk;
      if (rc) image_free(hk);
    }
    if (rc) exec_result_free(res);
  }
  if (queued && (rc || !host_result)) { /* the caller may change the inputs once we return */
    Err e2 = {0};
    int rs = be->sync(be, &e2);
    if (!rc && rs) rc = rs, *err = e2;
  }
  for (int i = 0; i < D->nimages; i++) image_free(tmp[i]);
  return rc;
}
